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

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_dataloader clt_dataloader;

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
} clt_loader_opts;
#define CLT_LOADER_DEFAULTS {1, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1}

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

/* Fills one batch on the host: the samples `indices[0..count)` into x (and
 * y, NULL when the loader has no labels), C order, in the dtypes and sample
 * shapes the loader was made with.  A status other than CLT_OK stops the
 * epoch and is returned by clt_dataloader_next, whose message names it and
 * keeps the message of a cltensor call the callback made that failed. */
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
 * (reshuffled).  Never waits.  A failure (out of device memory, the fill
 * callback's status) hands out nothing and loses nothing: the same call
 * made again returns the batch that was due.  The upload of the batch
 * after the one handed out is a head start only: when it fails, the call
 * still succeeds and the next one prepares that batch again. */
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

/* Releases the loader (waiting for its uploads in flight, which read its
 * memory).  NULL does nothing. */
CLT_API void clt_dataloader_free(clt_dataloader *dl);

#ifdef __cplusplus
}
#endif

#endif
