/* pool.c: the caching device allocator.  Buffers are kept per device by size
 * class after release and handed out again to the same device only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Four classes per power of two from 512 bytes: at most 25 % slack. */
#define MIN_CLASS 512u
#define NBINS 256

typedef struct node {
    struct node *next;
    cl_mem mem;
} node;

typedef struct pool {
    pthread_mutex_t lock;
    node *bins[NBINS];
    clt_memory_stats s;
    uint64_t cap;      /* the user's cap in bytes, 0 for none */
    const char *env_error; /* CLTENSOR_MEMORY_FRACTION's value when it is no fraction */
} pool;

static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;
static int inject_failures; /* test hook: the next n device allocations fail */
static long refuse_in = -1;  /* test hook: requests to pass before one is refused */

/* Test hook (tests/test_pool.c): makes the next n buffer creations fail as if
 * the device were out of memory. */
void clt__pool_inject_failures(int n)
{
    __atomic_store_n(&inject_failures, n, __ATOMIC_RELAXED);
}

/* Test hook (the tests of failures half-way through real work): lets `pass`
 * buffer requests through, on any device and cached or not, and refuses the
 * next one as the limit would; a negative `pass` turns it off.  Returns the
 * requests still to pass before the refusal, negative when it has happened
 * or is off. */
long clt__pool_refuse_after(long pass)
{
    return __atomic_exchange_n(&refuse_in, pass, __ATOMIC_RELAXED);
}

static bool refused_by_hook(void)
{
    return __atomic_load_n(&refuse_in, __ATOMIC_RELAXED) >= 0 &&
           __atomic_fetch_sub(&refuse_in, 1, __ATOMIC_RELAXED) == 0;
}

static int log2_floor(uint64_t x) /* x > 0 */
{
    return 63 - __builtin_clzll(x);
}

static uint64_t class_size(size_t bytes, int *bin)
{
    uint64_t b = bytes < MIN_CLASS ? MIN_CLASS : (uint64_t)bytes;
    int e = log2_floor(b);
    uint64_t step = (uint64_t)1 << (e - 2); /* four classes per power of two */
    uint64_t size = (b + step - 1) & ~(step - 1);
    e = log2_floor(size);
    *bin = (e - 9) * 4 + (int)((size >> (e - 2)) - 4);
    return size;
}

static bool caching_enabled(void)
{
    static int enabled = -1;
    int v = __atomic_load_n(&enabled, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *env = getenv("CLTENSOR_POOL");
        v = !(env && strcmp(env, "0") == 0);
        __atomic_store_n(&enabled, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* The bytes a request takes and its bin, or bin -1 for a buffer made to
 * measure and never cached: with caching off, or when rounding up would pass
 * the device's largest buffer. */
static uint64_t effective_size(const clt_device *dev, size_t bytes, int *bin)
{
    uint64_t size = class_size(bytes, bin);
    if (caching_enabled() &&
        (dev->info.max_alloc_bytes == 0 || size <= dev->info.max_alloc_bytes))
        return size;
    *bin = -1;
    return bytes ? bytes : 1;
}

/* A fraction in (0, 1] as a byte count of the device's global memory;
 * false for anything else. */
static bool fraction_bytes(const clt_device *dev, double fraction, uint64_t *bytes)
{
    if (!(fraction > 0 && fraction <= 1))
        return false;
    double b = fraction * (double)dev->info.global_mem_bytes;
    *bytes = b < 1 ? 1 : (uint64_t)b;
    return true;
}

/* The pool's cap from CLTENSOR_MEMORY_FRACTION, read as the pool starts. */
static void cap_from_env(const clt_device *dev, pool *p)
{
    const char *v = getenv("CLTENSOR_MEMORY_FRACTION");
    if (v == NULL || *v == '\0')
        return;
    char *end = NULL;
    double f = strtod(v, &end);
    if (end == v || *end != '\0' || !fraction_bytes(dev, f, &p->cap))
        p->env_error = v;
}

/* The bytes the pool may hold: the device's global memory or the user's
 * smaller cap (0: no limit known). */
static uint64_t limit_of(const clt_device *dev, const pool *p)
{
    uint64_t limit = dev->info.global_mem_bytes;
    return p->cap && (limit == 0 || p->cap < limit) ? p->cap : limit;
}

static pool *get_pool(clt_device *dev, bool create)
{
    pool *p = __atomic_load_n((pool **)&dev->pool, __ATOMIC_ACQUIRE);
    if (p || !create)
        return p;
    pthread_mutex_lock(&create_lock);
    p = dev->pool;
    if (p == NULL && (p = clt__calloc(1, sizeof *p)) != NULL) {
        pthread_mutex_init(&p->lock, NULL);
        cap_from_env(dev, p);
        __atomic_store_n((pool **)&dev->pool, p, __ATOMIC_RELEASE);
        clt__device_release_hook(clt__pool_destroy);
    }
    pthread_mutex_unlock(&create_lock);
    return p;
}

/* Gives the held buffers back to OpenCL; called with p->lock held. */
static void empty_locked(pool *p)
{
    for (int i = 0; i < NBINS; i++) {
        node *n = p->bins[i];
        while (n) {
            node *next = n->next;
            clReleaseMemObject(n->mem);
            clt__mem_released();
            p->s.device_frees++;
            free(n);
            n = next;
        }
        p->bins[i] = NULL;
    }
    p->s.held = 0;
}

static cl_mem create(clt_device *dev, uint64_t size, cl_int *err)
{
    int left = __atomic_load_n(&inject_failures, __ATOMIC_RELAXED);
    while (left > 0) {
        if (__atomic_compare_exchange_n(&inject_failures, &left, left - 1, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
            return NULL;
        }
    }
    return clCreateBuffer(dev->context, CL_MEM_READ_WRITE, (size_t)size, NULL, err);
}

/* The refusal of a request that would pass the limit, or that the device
 * failed (err != CL_SUCCESS), with the sizes involved. */
static clt_status alloc_error(const clt_device *dev, cl_int err, size_t bytes, uint64_t size,
                              uint64_t in_use, uint64_t held, uint64_t limit, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof msg,
             "allocating %zu bytes (size class %llu) on %s (%s): %s; %llu bytes in use, %llu "
             "cached, limit %llu bytes (device memory %llu, at most %llu in one buffer)",
             bytes, (unsigned long long)size, dev->label, dev->info.name, what,
             (unsigned long long)in_use, (unsigned long long)held, (unsigned long long)limit,
             (unsigned long long)dev->info.global_mem_bytes,
             (unsigned long long)dev->info.max_alloc_bytes);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "%s", msg);
    return clt__error(CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", msg);
}

clt_status clt__buffer_alloc(clt_device *dev, size_t bytes, cl_mem *out)
{
    *out = NULL;
    pool *p = get_pool(dev, true);
    if (p == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "allocator of %s: out of host memory",
                          dev->label);
    const char *bad = __atomic_load_n(&p->env_error, __ATOMIC_RELAXED);
    char q[CLT__QUOTE_SIZE];
    if (bad)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "allocator of %s: CLTENSOR_MEMORY_FRACTION=%s is not a fraction in "
                          "(0, 1]",
                          dev->label, CLT__QUOTE(q, bad));
    int bin = 0;
    uint64_t size = effective_size(dev, bytes, &bin);
    if (refused_by_hook()) {
        pthread_mutex_lock(&p->lock);
        p->s.failures++;
        uint64_t in_use = p->s.allocated, held = p->s.held;
        pthread_mutex_unlock(&p->lock);
        return alloc_error(dev, CL_SUCCESS, bytes, size, in_use, held, limit_of(dev, p),
                           "refused by the test hook");
    }

    /* The request is counted as allocated before the device is asked, so
     * that threads allocating together cannot pass the limit between
     * them; a failure gives it back. */
    pthread_mutex_lock(&p->lock);
    p->s.alloc_calls++;
    node *n = bin >= 0 ? p->bins[bin] : NULL;
    bool retried = false;
    uint64_t limit = limit_of(dev, p), held_before = p->s.held;
    if (n) {
        p->bins[bin] = n->next;
        p->s.held -= size;
        p->s.cache_hits++;
        *out = n->mem;
        free(n);
    } else if ((bytes > dev->info.max_alloc_bytes && dev->info.max_alloc_bytes) ||
               (limit && (size > limit || p->s.allocated > limit - size))) {
        p->s.failures++;
        uint64_t in_use = p->s.allocated;
        pthread_mutex_unlock(&p->lock);
        return alloc_error(dev, CL_SUCCESS, bytes, size, in_use, held_before, limit,
                           bytes > dev->info.max_alloc_bytes && dev->info.max_alloc_bytes
                               ? "more than the largest buffer the device allows"
                               : "it would pass the limit");
    } else if (limit && p->s.held > limit - size - p->s.allocated) {
        empty_locked(p); /* what the cache holds makes room */
        retried = true;
    }
    p->s.allocated += size;
    pthread_mutex_unlock(&p->lock);

    cl_int err = CL_SUCCESS;
    if (*out == NULL) {
        cl_mem mem = create(dev, size, &err);
        if (mem == NULL && err != CL_INVALID_BUFFER_SIZE && !retried) {
            pthread_mutex_lock(&p->lock);
            held_before = p->s.held;
            empty_locked(p);
            pthread_mutex_unlock(&p->lock);
            retried = true;
            mem = create(dev, size, &err);
        }
        pthread_mutex_lock(&p->lock);
        if (mem == NULL) {
            p->s.allocated -= size;
            p->s.failures++;
            uint64_t in_use = p->s.allocated;
            pthread_mutex_unlock(&p->lock);
            if (err == CL_SUCCESS)
                err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
            return alloc_error(dev, err, bytes, size, in_use, held_before, limit,
                               retried ? "the device failed it again after the cache was emptied"
                                       : "the device failed it");
        }
        p->s.device_allocs++;
        if (retried)
            p->s.retries++;
        pthread_mutex_unlock(&p->lock);
        *out = mem;
    }
    pthread_mutex_lock(&p->lock);
    p->s.requested += bytes;
    if (p->s.allocated > p->s.peak)
        p->s.peak = p->s.allocated;
    pthread_mutex_unlock(&p->lock);
    return CLT_OK;
}

/* A released buffer may still be read by commands queued on this device's
 * in-order queue; the next user of the buffer is on the same queue, so it
 * runs after them.  That is why buffers never move between devices here,
 * even though the devices of one platform share a context. */
void clt__buffer_release(clt_device *dev, cl_mem mem, size_t bytes)
{
    if (mem == NULL)
        return;
    pool *p = get_pool(dev, false);
    int bin = 0;
    uint64_t size = effective_size(dev, bytes, &bin);
    node *n = bin >= 0 && p ? clt__malloc(sizeof *n) : NULL;
    if (p)
        pthread_mutex_lock(&p->lock);
    if (n) {
        n->mem = mem;
        n->next = p->bins[bin];
        p->bins[bin] = n;
        p->s.held += size;
    } else {
        clReleaseMemObject(mem);
        clt__mem_released();
        if (p)
            p->s.device_frees++;
    }
    if (p) {
        p->s.allocated -= size;
        p->s.requested -= bytes;
        pthread_mutex_unlock(&p->lock);
    }
}

void clt__pool_destroy(clt_device *dev)
{
    pool *p = dev->pool;
    if (p == NULL)
        return;
    empty_locked(p);
    pthread_mutex_destroy(&p->lock);
    free(p);
    dev->pool = NULL;
}

clt_status clt_memory_stats_get(clt_device *dev, clt_memory_stats *out)
{
    CLT__REQUIRE_ARG(dev, "clt_memory_stats_get");
    CLT__REQUIRE_ARG(out, "clt_memory_stats_get");
    memset(out, 0, sizeof *out);
    pool *p = get_pool(dev, false);
    if (p) {
        pthread_mutex_lock(&p->lock);
        *out = p->s;
        pthread_mutex_unlock(&p->lock);
    }
    out->device_limit = dev->info.global_mem_bytes;
    out->limit = p ? limit_of(dev, p) : dev->info.global_mem_bytes;
    return clt__ok();
}

static clt_status set_cap(clt_device *dev, uint64_t bytes, const char *fn)
{
    pool *p = get_pool(dev, true);
    if (p == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    pthread_mutex_lock(&p->lock);
    p->cap = bytes;
    __atomic_store_n(&p->env_error, NULL, __ATOMIC_RELAXED); /* the call decides */
    pthread_mutex_unlock(&p->lock);
    return clt__ok();
}

clt_status clt_memory_set_limit(clt_device *dev, uint64_t bytes)
{
    CLT__REQUIRE_ARG(dev, "clt_memory_set_limit");
    return set_cap(dev, bytes, "clt_memory_set_limit");
}

clt_status clt_memory_set_fraction(clt_device *dev, double fraction)
{
    CLT__REQUIRE_ARG(dev, "clt_memory_set_fraction");
    uint64_t bytes = 0;
    if (!fraction_bytes(dev, fraction, &bytes))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_memory_set_fraction: fraction %g is not in (0, 1]", fraction);
    return set_cap(dev, bytes, "clt_memory_set_fraction");
}

clt_status clt_memory_empty_cache(clt_device *dev)
{
    CLT__REQUIRE_ARG(dev, "clt_memory_empty_cache");
    pool *p = get_pool(dev, false);
    if (p) {
        pthread_mutex_lock(&p->lock);
        empty_locked(p);
        pthread_mutex_unlock(&p->lock);
    }
    return clt__ok();
}

clt_status clt_memory_reset_peak(clt_device *dev)
{
    CLT__REQUIRE_ARG(dev, "clt_memory_reset_peak");
    pool *p = get_pool(dev, false);
    if (p) {
        pthread_mutex_lock(&p->lock);
        p->s.peak = p->s.allocated;
        pthread_mutex_unlock(&p->lock);
    }
    return clt__ok();
}
