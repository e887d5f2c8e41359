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
 * on every device and run.  Samples are rows of C-order arrays: the first
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
} clt_loader_opts;
#define CLT_LOADER_DEFAULTS {1, 0, 0, 0, 0, 0}

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

/* Releases the loader (waiting for its uploads in flight, which read its
 * memory).  NULL does nothing. */
CLT_API void clt_dataloader_free(clt_dataloader *dl);

#ifdef __cplusplus
}
#endif

#endif
