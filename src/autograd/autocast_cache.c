/* autocast_cache.c: autocast's cache of the lower-precision casts of
 * weights (torch's cached_casts), one per thread, emptied when the
 * thread's outermost autocast region closes. */
#include <stdlib.h>

#include "autograd/autograd.h"

/* One cast: src (retained, so that no other tensor takes its address
 * while the entry lives) as cast (the cache's reference) to `to`, made
 * from src's data at storage version `version`, recorded or not (grad
 * mode on or off: a cast made without grad must not stand in for one
 * whose gradient reaches the weight). */
typedef struct entry {
    clt_tensor *src, *cast;
    uint64_t version;
    clt_dtype to;
    bool recorded;
} entry;

static _Thread_local entry *cache;
static _Thread_local size_t ncache, capcache;
static _Thread_local uint64_t hits;

/* torch caches the casts of float32 leaves that require grad (the model's
 * weights): what a region reads again and again.  Activations change with
 * every op and are cast anew. */
static bool cacheable(const clt_tensor *src)
{
    return src != NULL && src->dtype == CLT_FLOAT32 && clt__requires_grad(src) &&
           clt_is_leaf(src);
}

static entry *lookup(const clt_tensor *src, clt_dtype to, bool recorded)
{
    for (size_t i = 0; i < ncache; i++)
        if (cache[i].src == src && cache[i].to == to && cache[i].recorded == recorded)
            return &cache[i];
    return NULL;
}

clt_tensor *clt__autocast_cache_find(const clt_tensor *src, clt_dtype to)
{
    if (!cacheable(src))
        return NULL;
    entry *e = lookup(src, to, clt_is_grad_enabled() != 0);
    /* written in place since (under no_grad): cast again */
    if (e == NULL || e->version != clt__version(src))
        return NULL;
    hits++;
    return e->cast;
}

static void thread_exit(void)
{
    clt__autocast_cache_clear();
}

bool clt__autocast_cache_put(const clt_tensor *src, clt_tensor *cast, clt_dtype to)
{
    if (!cacheable(src) || cast == NULL)
        return false;
    bool recorded = clt_is_grad_enabled() != 0;
    entry *e = lookup(src, to, recorded);
    if (e == NULL) {
        if (ncache == capcache) {
            size_t cap = capcache ? 2 * capcache : 16;
            entry *grown = realloc(cache, cap * sizeof *grown);
            if (grown == NULL)
                return false;
            cache = grown;
            capcache = cap;
        }
        /* a thread that ends inside a region leaves nothing behind */
        if (!clt__at_thread_exit(thread_exit))
            return false;
        e = &cache[ncache++];
        e->src = clt_tensor_retain((clt_tensor *)src);
    } else {
        /* a stale cast (its source changed in place) gives way */
        clt__tensor_unref(e->cast);
    }
    clt__scope_disown(cast);
    e->cast = cast;
    e->version = clt__version(src);
    e->to = to;
    e->recorded = recorded;
    return true;
}

void clt__autocast_cache_clear(void)
{
    /* releasing a cast may free a graph, which touches no autocast state */
    entry *c = cache;
    size_t n = ncache;
    cache = NULL;
    ncache = capcache = 0;
    for (size_t i = 0; i < n; i++) {
        clt__tensor_unref(c[i].cast);
        clt__tensor_unref(c[i].src);
    }
    free(c);
}

void clt__autocast_cache_stats(size_t *entries, uint64_t *nhits)
{
    if (entries)
        *entries = ncache;
    if (nhits)
        *nhits = hits;
}
