/* scope.c: scopes (clt_scope_begin/end), which own the first reference of
 * every tensor handle created inside them on their thread, so that an
 * expression of several ops needs no hand-written list of temporaries. */
#include <stdlib.h>

#include "internal.h"

typedef struct clt__scope {
    struct clt__scope *parent;
    clt_tensor **items; /* NULL where a handle was released or kept */
    size_t n, cap;
} clt__scope;

static __thread clt__scope *top;

/* Makes room for one more handle in s. */
static clt_status scope_reserve(clt__scope *s)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        clt_tensor **items = clt__realloc(s->items, cap, sizeof *items);
        if (items == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "scope: out of host memory");
        s->items = items;
        s->cap = cap;
    }
    return CLT_OK;
}

static clt_status scope_push(clt__scope *s, clt_tensor *t)
{
    clt_status st = scope_reserve(s);
    if (st != CLT_OK)
        return st;
    t->scope = s;
    t->scope_slot = s->n;
    s->items[s->n++] = t;
    return CLT_OK;
}

clt_status clt__scope_adopt(clt_tensor *t)
{
    return top ? scope_push(top, t) : CLT_OK;
}

void clt__scope_disown(clt_tensor *t)
{
    if (t && t->scope) {
        t->scope->items[t->scope_slot] = NULL;
        t->scope = NULL;
    }
}

/* A thread that ends with scopes open has them closed as it exits, so that
 * what they hold (device memory too) does not stay allocated for good. */
static void scopes_close(void)
{
    while (top)
        clt_scope_end();
}

clt_status clt_scope_begin(void)
{
    clt__scope *s = clt__calloc(1, sizeof *s);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_scope_begin: out of host memory");
    if (!clt__at_thread_exit(scopes_close)) {
        free(s);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "clt_scope_begin: out of host memory (for the scope's close at the "
                          "thread's exit)");
    }
    s->parent = top;
    top = s;
    return clt__ok();
}

clt_status clt_scope_keep(clt_tensor *t)
{
    CLT__REQUIRE_ARG(t, "clt_scope_keep");
    if (t->scope == NULL)
        return clt__ok(); /* the caller owns it already */
    clt__scope *parent = t->scope->parent;
    /* Room first: a failure leaves t in its scope, released at its end. */
    if (parent) {
        clt_status st = scope_reserve(parent);
        if (st != CLT_OK)
            return st;
    }
    clt__scope_disown(t);
    if (parent)
        scope_push(parent, t); /* cannot fail now */
    return clt__ok();
}

void clt_scope_end(void)
{
    clt__scope *s = top;
    if (s == NULL)
        return;
    top = s->parent;
    /* Newest first, so that outputs go before the inputs they were made of. */
    for (size_t i = s->n; i-- > 0;) {
        clt_tensor *t = s->items[i];
        if (t) {
            t->scope = NULL;
            clt_tensor_free(t);
        }
    }
    free(s->items);
    free(s);
}

clt_status clt__scope_finish_all(clt_status st, clt_tensor **ts, size_t n)
{
    for (size_t k = 0; st == CLT_OK && k < n; k++)
        st = clt_scope_keep(ts[k]);
    if (st != CLT_OK)
        for (size_t k = 0; k < n; k++)
            if (ts[k] && ts[k]->scope == NULL)
                clt_tensor_free(ts[k]);
    clt_scope_end();
    return st;
}

clt_status clt__scope_finish(clt_status st, clt_tensor **out)
{
    if (st == CLT_OK)
        st = clt_scope_keep(*out);
    clt_scope_end();
    if (st != CLT_OK)
        *out = NULL; /* released with the scope */
    return st;
}
