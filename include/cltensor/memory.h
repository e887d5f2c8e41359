/* cltensor/memory.h: the caching device allocator and the kernel cache.
 *
 * Every tensor buffer comes from a per-device cache: a freed buffer is kept
 * and handed out again for a later tensor of the same size class on the same
 * device, as PyTorch's CUDA caching allocator does.  Set CLTENSOR_POOL=0 to
 * release buffers at once instead (for leak checkers).
 *
 * Compiled kernel programs are kept on disk under $CLTENSOR_CACHE_DIR, else
 * $XDG_CACHE_HOME/cltensor, else ~/.cache/cltensor, keyed by device name,
 * driver version, kernel source and build options; CLTENSOR_CACHE=0 turns the
 * disk cache off.  A damaged cache file is rebuilt, never trusted.
 *
 * All functions here are thread-safe.
 */
#ifndef CLTENSOR_MEMORY_H
#define CLTENSOR_MEMORY_H

#include <cltensor/device.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_memory_stats {
    uint64_t allocated;      /* bytes in live tensors, rounded up to size classes */
    uint64_t requested;      /* bytes in live tensors as asked for */
    uint64_t held;           /* bytes cached for reuse, in no tensor */
    uint64_t peak;           /* highest `allocated` since start or clt_memory_reset_peak */
    uint64_t device_limit;   /* the device's global memory (CL_DEVICE_GLOBAL_MEM_SIZE) */
    uint64_t alloc_calls;    /* buffer requests */
    uint64_t cache_hits;     /* requests served from the cache */
    uint64_t device_allocs;  /* buffers created on the device */
    uint64_t device_frees;   /* buffers given back to the device */
    uint64_t retries;        /* requests that succeeded after emptying the cache */
    uint64_t failures;       /* requests that failed */
    uint64_t limit;          /* what `allocated` plus `held` may reach: device_limit, or the
                                smaller cap of clt_memory_set_limit / _set_fraction */
} clt_memory_stats;

/* Copies the device's allocator statistics into *out (zeros for a device
 * that never allocated). */
CLT_API clt_status clt_memory_stats_get(clt_device *dev, clt_memory_stats *out);

/* Gives every cached, unused buffer of the device back to OpenCL (like
 * torch.cuda.empty_cache()).  Buffers of live tensors are not touched. */
CLT_API clt_status clt_memory_empty_cache(clt_device *dev);

/* Sets `peak` to the bytes allocated now. */
CLT_API clt_status clt_memory_reset_peak(clt_device *dev);

/* Limits.  The allocator counts every buffer it holds, in live tensors and
 * in its cache, against the device's global memory
 * (CL_DEVICE_GLOBAL_MEM_SIZE), or against a smaller cap set here.  A
 * request that would pass the limit first empties the cache when that
 * makes room, and otherwise fails with CLT_ERR_OUT_OF_DEVICE_MEMORY, its
 * message naming the op that asked ("clt_softmax: a contiguous copy of an
 * operand: allocating ...") and giving the bytes requested, in use, cached
 * and the limit; so
 * does a request for more than one buffer may hold
 * (CL_DEVICE_MAX_MEM_ALLOC_SIZE).  Nothing is allocated or changed by a
 * refused request.  Buffers wrapped with clt_tensor_from_cl_buffer are the
 * caller's and not counted. */

/* Caps the device's allocator at `bytes` (0 removes the cap).  A cap below
 * what is allocated now is allowed: requests fail until enough tensors are
 * released.  Replaces a cap set before or by CLTENSOR_MEMORY_FRACTION. */
CLT_API clt_status clt_memory_set_limit(clt_device *dev, uint64_t bytes);

/* Like torch.cuda.set_per_process_memory_fraction: the cap as a fraction
 * in (0, 1] of the device's global memory (CLT_ERR_INVALID_ARGUMENT
 * otherwise).  The environment variable CLTENSOR_MEMORY_FRACTION sets the
 * same for every device, read at each device's first allocation; a value
 * that is no such fraction makes allocations fail with
 * CLT_ERR_INVALID_ARGUMENT naming it. */
CLT_API clt_status clt_memory_set_fraction(clt_device *dev, double fraction);

/* Builds ahead of time every kernel program cltensor uses on dev, for all
 * dtypes the device supports, plus every program this machine's cache has
 * seen used, and stores them in the disk cache; with include_blas non-zero
 * also fills CLBlast's cache for the device.  Takes minutes with an empty
 * cache, well under a second with a full one.  `built` (may be NULL)
 * receives the number of programs made ready.  The list of programs seen
 * is shared by every process and cltensor build using the cache directory,
 * each line tagged with the build that noted it (its version and kernel
 * sources).  This build's entries that no longer build (options its
 * kernels no longer take) and damaged lines are removed from it, which is
 * no error; clt_warmup_counts says how many.  Other builds' entries are
 * never removed: they are built where they can be (and then noted as this
 * build's too), and tried again at each warm-up where they cannot.  The
 * list is changed under a file lock, so that no entry noted meanwhile is
 * lost; where the file system has no locks nothing is removed.  Safe to
 * call from several processes at once. */
CLT_API clt_status clt_warmup(clt_device *dev, int include_blas, size_t *built);

/* clt_warmup, and `dropped` (may be NULL) receives the number of entries
 * removed from the list of programs seen because they no longer build or
 * are damaged (repeated lines are removed too, without being counted). */
CLT_API clt_status clt_warmup_counts(clt_device *dev, int include_blas, size_t *built,
                                     size_t *dropped);

#ifdef __cplusplus
}
#endif

#endif
