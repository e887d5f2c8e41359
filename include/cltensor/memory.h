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
} clt_memory_stats;

/* Copies the device's allocator statistics into *out (zeros for a device
 * that never allocated). */
CLT_API clt_status clt_memory_stats_get(clt_device *dev, clt_memory_stats *out);

/* Gives every cached, unused buffer of the device back to OpenCL (like
 * torch.cuda.empty_cache()).  Buffers of live tensors are not touched. */
CLT_API clt_status clt_memory_empty_cache(clt_device *dev);

/* Sets `peak` to the bytes allocated now. */
CLT_API clt_status clt_memory_reset_peak(clt_device *dev);

/* Builds ahead of time every kernel program cltensor uses on dev, for all
 * dtypes the device supports, plus every program this machine's cache has
 * seen used, and stores them in the disk cache; with include_blas non-zero
 * also fills CLBlast's cache for the device.  Takes minutes with an empty
 * cache, well under a second with a full one.  `built` (may be NULL)
 * receives the number of programs made ready. */
CLT_API clt_status clt_warmup(clt_device *dev, int include_blas, size_t *built);

#ifdef __cplusplus
}
#endif

#endif
