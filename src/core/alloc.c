/* alloc.c: the library's host allocations, in one place so that a test can
 * make any of them fail (clt__host_refuse_after). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Host allocations still to succeed before every further one fails: -1 off,
 * -2 once one has been refused (and until the hook is set again); with
 * refuse_one, only that one fails and the state becomes -3 (letting every
 * further one through). */
static long refuse_in = -1;
static bool refuse_one;

static long hook_set(long pass, bool one)
{
    __atomic_store_n(&refuse_one, one, __ATOMIC_RELAXED);
    return __atomic_exchange_n(&refuse_in, pass < 0 ? -1 : pass, __ATOMIC_RELAXED);
}

long clt__host_refuse_after(long pass)
{
    return hook_set(pass, false);
}

long clt__host_refuse_one(long pass)
{
    return hook_set(pass, true);
}

static bool hook_refuses(void)
{
    long n = __atomic_load_n(&refuse_in, __ATOMIC_RELAXED);
    while (n >= 0) {
        long last = __atomic_load_n(&refuse_one, __ATOMIC_RELAXED) ? -3 : -2;
        long next = n > 0 ? n - 1 : last;
        if (__atomic_compare_exchange_n(&refuse_in, &n, next, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return n == 0;
    }
    return n == -2;
}

/* Every host allocation of the calling thread refused while set (autocast's
 * failed casts: the op then fails at once and clears its outputs). */
static _Thread_local bool refuse_here;

void clt__host_refuse_here(bool on)
{
    refuse_here = on;
}

/* A refusal looks like malloc's own failure, errno included. */
static bool refused(void)
{
    if (!refuse_here && !hook_refuses())
        return false;
    errno = ENOMEM;
    return true;
}

void *clt__malloc(size_t bytes)
{
    return refused() ? NULL : malloc(bytes);
}

void *clt__calloc(size_t n, size_t size)
{
    return refused() ? NULL : calloc(n, size); /* calloc checks n * size */
}

void *clt__realloc(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return refused() ? NULL : realloc(p, n * size);
}

char *clt__strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *d = clt__malloc(len);
    return d ? memcpy(d, s, len) : NULL;
}

void *clt__aligned(size_t align, size_t bytes)
{
    void *p = NULL;
    if (refused())
        return NULL;
    int e = posix_memalign(&p, align, bytes);
    if (e != 0) {
        errno = e;
        return NULL;
    }
    return p;
}
