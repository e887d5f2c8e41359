/* cltensor/data.h: a data loader, like torch.utils.data.DataLoader over a
 * TensorDataset (or a map-style dataset given as a callback), that feeds
 * batches to a device.
 *
 * Each call of clt_dataloader_next hands out the current batch as new
 * tensors on the loader's device and enqueues the upload of the next one
 * right away (non-blocking writes from host memory the loader owns), so a
 * training loop never waits on the host for its data: only reading a value
 * back waits.  Staging memory is recycled once the device has consumed it
 * (checked without waiting) and otherwise grows, so a loop that runs far
 * ahead of the device still never blocks.
 *
 * Shuffling is a permutation made on the host from (seed, epoch), the same
 * on every device and run, and so are weighted draws (the samplers of
 * torch.utils.data are options of clt_loader_opts).  Samples are rows of C-order arrays: the first
 * dimension counts them.
 */
#ifndef CLTENSOR_DATA_H
#define CLTENSOR_DATA_H

#include <cltensor/conv.h>
#include <cltensor/random.h>
#include <cltensor/tensor.h>
#include <cltensor/view.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_dataloader clt_dataloader;

/* A transform of each batch (clt_loader_opts.transform): called on the
 * thread that calls clt_dataloader_next, with the batch's x [batch, ...]
 * on the device (borrowed; labels are not transformed); sets *out to a new tensor that
 * is handed out in x's place (it may be clt_tensor_retain(x)).  It
 * composes clt_tf_* calls (below) as torchvision's Compose does, each
 * sample with random parameters of its own.  A status other than CLT_OK
 * fails that clt_dataloader_next call, which keeps the batch: the next
 * call hands it out (transformed again). */
typedef clt_status (*clt_batch_transform)(void *transform_user, const clt_tensor *x,
                                          clt_tensor **out);

typedef struct clt_loader_opts {
    int64_t batch_size; /* samples per batch, >= 1 */
    int shuffle;        /* a new permutation every epoch */
    uint64_t seed;      /* of the permutations */
    int drop_last;      /* drop a last, smaller batch */
    /* DistributedSampler: the share of replica `rank` (0 .. num_replicas-1)
     * of each epoch's order (the same on every rank for the same seed):
     * the order padded to ceil(N / num_replicas) * num_replicas samples by
     * repeating its first ones, then every num_replicas-th from `rank`
     * (torch's indices[rank::num_replicas], drop_last=False).  0 and 0:
     * every sample, no sharding. */
    int num_replicas;
    int rank;
    /* A Subset: the epoch's order is over indices[0 .. num_indices) (each
     * in [0, N); repeats allowed) instead of every sample: in this order
     * without shuffle (SequentialSampler over Subset(dataset, indices)),
     * permuted every epoch with it (SubsetRandomSampler(indices)), and
     * sharded over replicas as above (DistributedSampler over the Subset).
     * NULL and 0: every sample.  A non-NULL list of 0 is an empty epoch.
     * Read during the constructor call only (copied). */
    const int64_t *indices;
    int64_t num_indices;
    /* WeightedRandomSampler(weights, num_samples, replacement): each epoch
     * draws num_samples (>= 1) sample indices, index i with probability
     * weights[i] / sum(weights), from the seeded stream of (seed, epoch):
     * the same on every run and device.  weights has one entry per sample
     * (N), each finite and >= 0 with a positive sum; read during the
     * constructor call only (copied).  Without replacement (0), num_samples
     * distinct indices, at most the count of nonzero weights (torch 1.13
     * would hand out zero-weight ones past it; refused here).  replacement
     * is 1 in CLT_LOADER_DEFAULTS, torch's default; an initialiser that
     * stops before it leaves it 0.  NULL weights: num_samples must be 0.
     * Weights exclude shuffle (torch's "sampler option is mutually
     * exclusive with shuffle"), indices and sharding. */
    const double *weights;
    int64_t num_samples;
    int replacement;
    /* Workers (DataLoader's num_workers, prefetch_factor, worker_init_fn,
     * with persistent_workers=True): num_workers >= 1 threads gather the
     * batches on the host (the fill callback, or the copies out of the
     * arrays), batch b of an epoch on worker b % num_workers, at most
     * num_workers * prefetch_factor batches ahead of the one due; the
     * batches still come out in the epoch's order, exactly those of
     * num_workers 0 (the main thread) for the same seed.  0: no threads.
     * prefetch_factor >= 1, batches ahead per worker; 0 means torch's 2,
     * and with num_workers 0 it must be 0 or 2 (torch: "prefetch_factor
     * option could only be specified in multiprocessing").  The threads
     * start with the loader; each calls worker_init_fn (when not NULL)
     * once, before its first batch, with worker_user, its id and its seed
     * (base_seed + id as torch's, base_seed made from seed: the same every
     * run).  A status other than CLT_OK from it fails each batch of that
     * worker as a failed fill does; it runs on the worker's thread, under
     * the fill's obligations (see clt_batch_fill).  At most 1024 workers
     * and 4096 batches ahead (CLT_ERR_INVALID_ARGUMENT, as for a negative
     * count).  clt_dataloader_worker_info tells a callback which worker
     * runs it. */
    int num_workers;
    int prefetch_factor;
    clt_status (*worker_init_fn)(void *worker_user, int worker_id, uint64_t seed);
    void *worker_user;
    /* A transform of every batch on the device (a torchvision Compose
     * given to the dataset; see clt_batch_transform), or NULL. */
    clt_batch_transform transform;
    void *transform_user;
} clt_loader_opts;
/* An initialiser that stops early leaves the fields after it 0 or NULL:
 * replacement 0, no workers, prefetch_factor 0 (2), no transform. */
#define CLT_LOADER_DEFAULTS {1, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 2, NULL, NULL, NULL, NULL}

/* torch.utils.data.get_worker_info for a fill callback or worker_init_fn:
 * in a loader's worker thread, returns 1 and sets *id, *num_workers and
 * *seed (each may be NULL) to the worker's; elsewhere (num_workers 0, the
 * main thread) returns 0 and sets nothing. */
CLT_API int clt_dataloader_worker_info(int *id, int *num_workers, uint64_t *seed);

/* A host array: `data` (C order) of `dtype` with `ndim` dims `shape`.  For
 * a dataset the first dimension counts the samples; for a callback loader
 * `data` is NULL and `shape` is one sample's.  clt_load_npy_host (io.h)
 * reads a NumPy .npy file into one. */
typedef struct clt_array_spec {
    const void *data;
    clt_dtype dtype;
    int ndim;
    const int64_t *shape;
} clt_array_spec;

/* Batches of the samples of x (and y, the labels, or NULL), uploaded to
 * dev.  The arrays are borrowed: they must outlive the loader.  x and y
 * must count the same samples.  New loader: release with
 * clt_dataloader_free. */
CLT_API clt_status clt_dataloader_arrays(clt_device *dev, const clt_array_spec *x,
                                         const clt_array_spec *y, const clt_loader_opts *opts,
                                         clt_dataloader **out);

/* torch.utils.data.ConcatDataset of k >= 1 array datasets: samples
 * 0 .. len(xs[0]) - 1 are xs[0]'s, the next ones xs[1]'s, and so on; ys
 * (k label arrays, each counting its x's samples) or NULL.  Every xs[i]
 * has xs[0]'s dtype and sample shape (CLT_ERR_SHAPE_MISMATCH otherwise),
 * and so has every ys[i] ys[0]'s.  The arrays are borrowed (they must
 * outlive the loader); the two lists are read during the call only.  The
 * options as for clt_dataloader_arrays.  New loader: release with
 * clt_dataloader_free. */
CLT_API clt_status clt_dataloader_concat(clt_device *dev, const clt_array_spec *xs,
                                         const clt_array_spec *ys, int k,
                                         const clt_loader_opts *opts, clt_dataloader **out);

/* Fills one batch on the host: the samples `indices[0..count)` into x (and
 * y, NULL when the loader has no labels), C order, in the dtypes and sample
 * shapes the loader was made with.  A status other than CLT_OK stops the
 * epoch and is returned by clt_dataloader_next, whose message names it and
 * keeps the message of a cltensor call the callback made that failed.
 * Thread safety: with num_workers 0 it runs on the thread that calls
 * clt_dataloader_next; with workers it runs on the workers' threads, up to
 * num_workers calls at once (each on its own indices, x and y), while the
 * caller's thread goes on: whatever it reads through `user` must be safe
 * to read from several threads, and whatever it changes must be per
 * worker (clt_dataloader_worker_info) or guarded.  Tensors it makes on a
 * worker belong to that thread's scopes; it must free them before it
 * returns. */
typedef clt_status (*clt_batch_fill)(void *user, const int64_t *indices, int64_t count, void *x,
                                     void *y);

/* Batches of num_samples samples made by `fill`; x_sample (and y_sample,
 * or NULL) give the dtype and shape of one sample (data NULL).  New loader:
 * release with clt_dataloader_free. */
CLT_API clt_status clt_dataloader_callback(clt_device *dev, int64_t num_samples,
                                           const clt_array_spec *x_sample,
                                           const clt_array_spec *y_sample, clt_batch_fill fill,
                                           void *user, const clt_loader_opts *opts,
                                           clt_dataloader **out);

/* The next batch of the epoch: *x [batch, ...] (and *y, when the loader has
 * labels; pass NULL otherwise) as new tensors on the loader's device
 * (release with clt_tensor_free), and *got = 1.  At the end of the epoch
 * *got = 0 and *x, *y are NULL; the call after that starts the next epoch
 * (reshuffled).  Never waits, but for the batch due when a worker still
 * gathers it (num_workers > 0) and for what the transform option waits
 * for (the random transforms read their draws back).  A failure (out of
 * device memory, the fill callback's status, the transform's) hands out
 * nothing and loses nothing: the same call made again returns the batch
 * that was due.  The upload of the batch after the one handed out is a
 * head start only: when it fails, the call still succeeds and the next one
 * prepares that batch again (a worker's fill that failed is gathered
 * again, unreported). */
CLT_API clt_status clt_dataloader_next(clt_dataloader *dl, clt_tensor **x, clt_tensor **y,
                                       int *got);

/* Batches per epoch (len(loader)). */
CLT_API int64_t clt_dataloader_len(const clt_dataloader *dl);

/* torch.utils.data.random_split over n samples: a random permutation of
 * 0 .. n-1 cut into k consecutive splits.  lengths[0 .. k) are either
 * whole numbers of samples summing to n, or fractions in [0, 1] summing to
 * 1 (as torch 1.13: within 1e-9 and not above), each split then
 * floor(n * fraction) long and the remainder added one by one to the
 * splits from the first, round-robin.  split_lengths[0 .. k) (the
 * caller's) receives each split's length, on success only.  The
 * permutation comes from seed alone, the same on every run: it is the
 * first epoch's order of a shuffling loader of n samples with that seed.
 * *out_indices: a new array of n indices, split i starting after the
 * lengths before it; release with clt_free.  Errors (torch's words): a
 * fraction outside [0, 1], a length that is negative or not whole, lengths
 * whose sum is not n, a NULL array with k > 0. */
CLT_API clt_status clt_random_split(int64_t n, const double *lengths, int k, uint64_t seed,
                                    int64_t *split_lengths, int64_t **out_indices);

/* Reads an IDX file (the format of MNIST and Fashion-MNIST:
 * train-images-idx3-ubyte and the like), plain or gzip'd (.gz, read by
 * zlib), into host memory for clt_dataloader_arrays, as clt_load_npy_host
 * does a .npy file.  Element types, as torchvision reads them: unsigned
 * byte (uint8), signed byte (int8), short (int16), int (int32), float
 * (float32), double (float64), big-endian in the file, this machine's
 * order in *out; 1 to
 * CLT_MAX_DIMS dimensions (MNIST images [N, 28, 28] uint8, labels [N]
 * uint8).  *out is one block: the description, its shape and the values
 * (C order, at a 64-byte boundary); release it with one clt_free, after
 * any loader that borrows it.  Errors: CLT_ERR_IO for a file that cannot
 * be opened, is no IDX file (a magic number not 0, 0, type, ndim; an
 * unknown type), is truncated or has bytes after its values, or whose
 * dimensions announce more values than a plain file holds after its
 * header or than host memory can address (refused before anything is
 * allocated; the message names the file, the first dimension past the
 * limit, the dimensions and the sizes; a dimension of 0 makes the array
 * empty however large the others); CLT_ERR_OUT_OF_HOST_MEMORY. */
CLT_API clt_status clt_load_idx(const char *path, clt_array_spec **out);

/* ---- transforms (torchvision.transforms v0.14 on device tensors) -------
 * Images are tensors [..., H, W] (and [..., C, H, W] where channels
 * matter), any leading dimensions a batch.  Each call hands out a new
 * tensor (release with clt_tensor_free; the crops and flips within the
 * image may be views of x) and leaves x unchanged.  The random ones take
 * x [N, ..., H, W] as N samples and draw each sample's parameters of its
 * own, as a transform inside a Dataset does per sample: from `gen` (NULL:
 * the default generator), with one clt_rand on x's device read back (one
 * wait), the same for the same generator state on every device.  Not
 * differentiable as transforms (the ops they are made of record what they
 * record). */

/* F.normalize: (x - mean[c]) / std[c] per channel (dim -3) of a floating
 * x [..., C, H, W], the statistics converted to x's dtype first; c is C
 * or 1.  A zero std: CLT_ERR_INVALID_ARGUMENT ("std evaluated to zero").
 * Non-floating x: CLT_ERR_DTYPE_UNSUPPORTED. */
CLT_API clt_status clt_tf_normalize(const clt_tensor *x, const double *mean, const double *std,
                                    int c, clt_tensor **out);
/* F.hflip (the last dimension reversed) and F.vflip (dim -2). */
CLT_API clt_status clt_tf_hflip(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_tf_vflip(const clt_tensor *x, clt_tensor **out);
/* F.crop(x, top, left, height, width): rows top .. top + height - 1,
 * columns left .. left + width - 1; where the box passes the image its
 * places are zero, as torchvision pads.  height, width >= 1. */
CLT_API clt_status clt_tf_crop(const clt_tensor *x, int64_t top, int64_t left, int64_t height,
                               int64_t width, clt_tensor **out);
/* F.center_crop: the box at Python's round((H - height) / 2) and
 * round((W - width) / 2) (halves to even); an image smaller than the box
 * is padded with zeros first, (d // 2) before and ((d + 1) // 2) after. */
CLT_API clt_status clt_tf_center_crop(const clt_tensor *x, int64_t height, int64_t width,
                                      clt_tensor **out);
/* F.pad(x, padding, fill, padding_mode): n = 1 (all sides), 2 (left and
 * right, top and bottom) or 4 (left, top, right, bottom) sizes; mode
 * CLT_PAD_CONSTANT (with fill), CLT_PAD_REPLICATE ("edge") or
 * CLT_PAD_REFLECT (float32 and float64, as clt_pad); fill must be 0 for
 * the others.  "symmetric" is not offered. */
CLT_API clt_status clt_tf_pad(const clt_tensor *x, const int64_t *padding, int n,
                              clt_pad_mode mode, double fill, clt_tensor **out);
/* F.resize (antialias off) of a float32 or float64 x [..., C, H, W]
 * through clt_interpolate_nd (align_corners 0): nsize 2 gives (height,
 * width); nsize 1 the smaller edge's size, the other int(size * long /
 * short).  mode: nearest, nearest-exact, bilinear or bicubic. */
CLT_API clt_status clt_tf_resize(const clt_tensor *x, const int64_t *size, int nsize,
                                 clt_interp_mode mode, clt_tensor **out);
/* F.convert_image_dtype (torchvision 0.14) between integer images
 * (uint8, int8, int16, int32, int64: 0 .. their largest value, max) and
 * floating ones (0 .. 1): an integer to a float is x.to(dtype) / max (the
 * division in the result dtype); a float to an integer (x * (max + 1 -
 * 1e-3)) in the source dtype, truncated as clt_to_dtype casts; an integer
 * to an integer shifts by the difference of the value bits, down as a
 * floor division by 2^k then the cast, up as the cast then a product by
 * 2^k (values outside 0 .. max wrap as the casts and products wrap:
 * int8 -1 to uint8 is 254, as in torchvision); floats convert; the same
 * dtype copies (torchvision returns the image itself).  float32 to int32
 * or int64 and float64 to int64 are refused as torchvision refuses them
 * (CLT_ERR_DTYPE_UNSUPPORTED, "The cast from float32 to int32 cannot be
 * performed safely."); so are bool, the complex dtypes and unknown ones.
 * float16 is multiplied and divided by its scalar rounded to float16, as
 * torch's scalar ops do, where int32's and int64's largest values are inf:
 * int32 and int64 to float16 give 0 and NaN, float16 to int32 and int64
 * casts out of range, as torchvision's.  New tensor (release with clt_tensor_free). */
CLT_API clt_status clt_tf_convert_image_dtype(const clt_tensor *x, clt_dtype dtype,
                                              clt_tensor **out);
/* F.to_tensor of uint8 images [..., H, W, C] (as a loader holds decoded
 * images): float32 [..., C, H, W] divided by 255. */
CLT_API clt_status clt_tf_to_tensor(const clt_tensor *x, clt_tensor **out);

/* RandomHorizontalFlip(p): each sample flipped when its draw u < p. */
CLT_API clt_status clt_tf_random_horizontal_flip(clt_generator *gen, const clt_tensor *x,
                                                 double p, clt_tensor **out);
/* RandomCrop(size, padding, pad_if_needed, fill, padding_mode): x padded
 * by clt_tf_pad(padding, npadding, mode, fill) first when npadding > 0
 * (padding may be NULL for 0), then, with pad_if_needed, on both sides of
 * a width or height below the crop's by the shortfall; each sample's box
 * at top randint(0, H - height + 1), left randint(0, W - width + 1).  An
 * image still smaller than the box: CLT_ERR_INVALID_ARGUMENT ("Required
 * crop size ... is larger than input image size"). */
CLT_API clt_status clt_tf_random_crop(clt_generator *gen, const clt_tensor *x, int64_t height,
                                      int64_t width, const int64_t *padding, int npadding,
                                      int pad_if_needed, double fill, clt_pad_mode mode,
                                      clt_tensor **out);
/* RandomResizedCrop(size, scale, ratio, interpolation) of a float32 or
 * float64 x [N, C, H, W]: per sample torchvision's get_params (up to 10
 * tries of an area fraction uniform in scale and a log-uniform aspect
 * ratio, w = round(sqrt(area * ratio)), h = round(sqrt(area / ratio));
 * else the central crop clamped to ratio), that box resized to (height,
 * width).  scale NULL: (0.08, 1); ratio NULL: (3/4, 4/3). */
CLT_API clt_status clt_tf_random_resized_crop(clt_generator *gen, const clt_tensor *x,
                                              int64_t height, int64_t width,
                                              const double scale[2], const double ratio[2],
                                              clt_interp_mode mode, clt_tensor **out);
/* RandomErasing(p, scale, ratio, value) of x [N, ..., H, W]: each sample
 * erased with probability p, in a box of get_params' tries (h < H and
 * w < W, else the sample is left whole), every channel set to value.
 * scale NULL: (0.02, 0.33); ratio NULL: (0.3, 3.3).  value as clt_full's
 * for x's dtype ("random" normal values are not offered). */
CLT_API clt_status clt_tf_random_erasing(clt_generator *gen, const clt_tensor *x, double p,
                                         const double scale[2], const double ratio[2],
                                         double value, clt_tensor **out);

/* Releases the loader (stopping its workers, each after the batch it
 * gathers, then waiting for its uploads in flight, which read its memory).
 * NULL does nothing. */
CLT_API void clt_dataloader_free(clt_dataloader *dl);

#ifdef __cplusplus
}
#endif

#endif
