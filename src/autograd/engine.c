/* engine.c: reverse-mode autograd: per-tensor state, recording ops into a
 * graph of nodes, and the backward pass that walks it and accumulates
 * gradients into the leaves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

typedef struct clt__meta {
    bool requires_grad;
    bool retains_grad;  /* clt_retain_grad on a non-leaf */
    int slot;           /* which output of grad_fn the tensor is */
    clt_tensor *grad;   /* a leaf's accumulated gradient (owned), or a retained one */
    /* A leaf's sparse COO gradient (Embedding's sparse=True), when it has
     * one instead of grad: int64 rows [1, nnz] and values [nnz, *rest]
     * (owned), duplicates not coalesced, as torch's. */
    clt_tensor *sgrad_idx, *sgrad_val;
    clt__node *grad_fn; /* a non-leaf's node (a reference) */
    clt_hook *hooks;    /* a leaf's hooks, in registration order */
    /* A differentiable view (clt__mark_views): its base (a reference),
     * the storage's version when grad_fn was made, the function of several
     * outputs it is output multi_slot of (or NULL), and whether it was
     * made in no-grad mode.  A view of another dtype than its base
     * (clt_real, clt_imag, clt_view_as_real, clt_view_as_complex, views of
     * those) is one too, found among the base's elements in the storage's
     * real scalars (view_geom).  dtype_view: the view's dtype and its
     * base's are not the real and the complex form of one storage (no view
     * op makes such a pair): it keeps its history as made, and an in-place
     * op on it that would need a gradient is refused (view_check). */
    clt_tensor *base;
    uint64_t version;
    const char *multi;
    int multi_slot;
    bool no_grad_view;
    bool dtype_view;
} clt__meta;

/* A hook, in the list of its leaf's meta or of its tensor's node. */
enum { HOOK_TENSOR, HOOK_POST, HOOK_RETAIN };

struct clt_hook {
    int refs; /* atomic: the list and the handle */
    int kind;
    int slot; /* on a node: which output's gradient */
    bool removed;
    clt_tensor_hook_fn fn;
    clt_post_accumulate_grad_hook_fn post;
    void *user;
    void (*free_user)(void *); /* releases user with the hook (clt__tensor_register_hook_owned) */
    clt_tensor *retainer; /* HOOK_RETAIN: the tensor that keeps the gradient (weak) */
    clt_hook *next;
};

/* clt__observe_begin's list. */
typedef struct observed {
    clt_tensor **v;
    size_t n, cap;
    bool oom;
} observed;

static __thread bool grad_disabled;
static __thread bool creating; /* a pass with create_graph runs on this thread */
static __thread bool passing;  /* a backward pass runs on this thread */
/* torch.autograd.set_detect_anomaly(mode, check_nan): process-wide, as
 * torch 1.13's AnomalyMode (a thread started later sees it too); atomic.
 * The NaN check is stored inverted so that it starts as torch's default
 * check_nan=True. */
static int anomaly, anomaly_nan_off;
static __thread observed *observer;
static uint64_t node_seq;  /* atomic */
static uint64_t pass_seq;  /* atomic */

static clt__meta *meta_of(const clt_tensor *t)
{
    return t ? (clt__meta *)t->meta : NULL;
}

/* Whether view t's grad_fn is to be made again from its base's history:
 * the storage changed since it was made, and t or its base has one. */
static bool stale(const clt_tensor *t, const clt__meta *m)
{
    if (m->base == NULL || m->dtype_view || clt__version(t) == m->version)
        return false;
    const clt__meta *bm = meta_of(m->base);
    return m->grad_fn || (bm && bm->requires_grad);
}

static bool requires_grad(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    if (m && stale(t, m)) {
        const clt__meta *bm = meta_of(m->base);
        return bm && bm->requires_grad;
    }
    return m && m->requires_grad;
}

/* ---- hooks ------------------------------------------------------------------ */

static void hook_destroy(clt_hook *h)
{
    if (h->free_user)
        h->free_user(h->user);
    free(h);
}

static void hook_unref(clt_hook *h)
{
    if (h && __atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) == 0)
        hook_destroy(h);
}

static void hooks_free(clt_hook *h)
{
    while (h) {
        clt_hook *next = h->next;
        h->removed = true;
        hook_unref(h);
        h = next;
    }
}

static void hook_append(clt_hook **list, clt_hook *h)
{
    while (*list)
        list = &(*list)->next;
    h->next = NULL;
    *list = h;
}

/* ---- nodes ------------------------------------------------------------------ */

static void release_saved(clt__node *n)
{
    for (int k = 0; k < n->nsaved; k++) {
        clt_tensor_free(n->saved[k]);
        n->saved[k] = NULL;
    }
}

/* Drops a reference; a node whose last reference goes releases its inputs'
 * nodes in turn, with an explicit stack so that long chains do not recurse. */
static void node_unref(clt__node *n)
{
    clt__node *stack_small[64], **stack = stack_small;
    size_t top = 0, cap = 64;
    if (n == NULL || __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    stack[top++] = n;
    while (top > 0) {
        clt__node *x = stack[--top];
        release_saved(x);
        clt_tensor_free(x->gbuf);
        for (int k = 0; x->gmore && k < x->nout - 1; k++)
            clt_tensor_free(x->gmore[k]);
        free(x->gmore);
        if (x->ctx_free)
            x->ctx_free(x->ctx);
        hooks_free(x->hooks);
        for (int k = -2; k < x->nin; k++) {
            clt__node *c = k == -2 ? x->wrapped : k == -1 ? x->rebase : x->in[k].node;
            if (k >= 0)
                clt__tensor_unref(x->in[k].leaf);
            if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                if (top == cap) {
                    size_t ncap = cap * 2;
                    clt__node **ns = clt__malloc(ncap * sizeof *ns);
                    if (ns == NULL) {
                        /* Out of memory: leaking the rest beats recursing. */
                        continue;
                    }
                    memcpy(ns, stack, top * sizeof *ns);
                    if (stack != stack_small)
                        free(stack);
                    stack = ns;
                    cap = ncap;
                }
                stack[top++] = c;
            }
        }
        free(x);
    }
    if (stack != stack_small)
        free(stack);
}

static void meta_free(clt_tensor *t)
{
    clt__meta *m = t->meta;
    t->meta = NULL;
    t->meta_free = NULL;
    if (m == NULL)
        return;
    if (m->retains_grad && m->grad_fn) {
        /* The node may outlive t: its retain hook forgets t. */
        for (clt_hook *h = m->grad_fn->hooks; h; h = h->next)
            if (h->kind == HOOK_RETAIN && h->retainer == t) {
                h->retainer = NULL;
                h->removed = true;
            }
    }
    clt_tensor_free(m->grad);
    clt_tensor_free(m->sgrad_idx);
    clt_tensor_free(m->sgrad_val);
    node_unref(m->grad_fn);
    hooks_free(m->hooks);
    clt__tensor_unref(m->base);
    free(m);
}

static clt_status refresh(const clt_tensor *t);

/* The node a view made again from its base's history is (refresh). */
static const char as_strided_name[] = "AsStridedBackward0";

/* The name of t's grad_fn, read only: a stale view's is the one refresh
 * would make, without making it, so that getters may run in several
 * threads at once. */
static const char *grad_fn_name(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    if (m && stale(t, m))
        return requires_grad(t) ? as_strided_name : NULL;
    return m && m->grad_fn ? m->grad_fn->name : NULL;
}

/* For clt_tensor_repr's suffixes (registered by meta_get). */
static const char *describe(const clt_tensor *t, int *requires)
{
    *requires = requires_grad(t);
    return grad_fn_name(t);
}

static clt__meta *meta_get(clt_tensor *t)
{
    if (t->meta == NULL) {
        clt__meta *m = clt__calloc(1, sizeof *m);
        if (m == NULL)
            return NULL;
        clt__set_grad_describer(describe);
        t->meta = m;
        t->meta_free = meta_free;
    }
    return t->meta;
}

static void observe(int nin, const clt_tensor *const *in)
{
    observed *o = observer;
    for (int k = 0; k < nin; k++) {
        if (!requires_grad(in[k]))
            continue;
        bool seen = false;
        for (size_t j = 0; j < o->n && !seen; j++)
            seen = o->v[j] == in[k];
        if (seen)
            continue;
        if (o->n == o->cap) {
            size_t cap = o->cap ? 2 * o->cap : 16;
            clt_tensor **v = clt__realloc(o->v, cap, sizeof *v);
            if (v == NULL) {
                o->oom = true;
                return;
            }
            o->v = v;
            o->cap = cap;
        }
        o->v[o->n++] = clt_tensor_retain((clt_tensor *)in[k]);
    }
}

clt_status clt__observe_begin(void **saved)
{
    observed *o = clt__calloc(1, sizeof *o);
    *saved = observer;
    if (o == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    observer = o;
    return CLT_OK;
}

clt_status clt__observe_end(void *saved, clt_tensor ***list, size_t *n)
{
    observed *o = observer;
    observer = saved;
    *list = o->v;
    *n = o->n;
    bool oom = o->oom;
    free(o);
    if (oom) {
        for (size_t k = 0; k < *n; k++)
            clt__tensor_unref((*list)[k]);
        free(*list);
        *list = NULL;
        *n = 0;
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    return CLT_OK;
}

bool clt__grad_needed(int nin, const clt_tensor *const *in)
{
    if (grad_disabled) {
        if (observer)
            observe(nin, in);
        return false;
    }
    for (int k = 0; k < nin; k++)
        if (requires_grad(in[k]))
            return true;
    return false;
}

clt_status clt__alias(const clt_tensor *g, clt_tensor **out)
{
    return clt__tensor_view(g, g->ndim, g->shape, g->strides, g->offset, out);
}

/* A handle on t's data for a backward formula: no autograd state (so an
 * output saving itself makes no cycle) and in no scope. */
static clt_status save_view(const clt_tensor *t, clt_tensor **out)
{
    clt_status st = clt__alias(t, out);
    if (st == CLT_OK)
        clt__scope_disown(*out);
    return st;
}

/* e as the edge of input x, as x is now. */
static void edge_set(clt__edge *e, const clt_tensor *x)
{
    e->dev = x->dev;
    e->dtype = x->dtype;
    e->ndim = x->ndim;
    memcpy(e->shape, x->shape, sizeof e->shape);
    clt__meta *xm = meta_of(x);
    if (xm == NULL || !xm->requires_grad)
        return;
    if (xm->grad_fn) {
        e->node = xm->grad_fn;
        e->slot = xm->slot;
        __atomic_add_fetch(&e->node->refs, 1, __ATOMIC_RELAXED);
    } else {
        /* The graph holds the leaf, as PyTorch's AccumulateGrad does. */
        e->leaf = clt_tensor_retain((clt_tensor *)x);
    }
}

/* A new node with the inputs' edges as they are now and saved views of
 * `saved` (out: the node's output, which saved may hold); NULL when memory
 * runs out. */
/* A node of nin inputs with room for `room` edges, numbered after every
 * node made before it, its edges unset; NULL when memory runs out. */
static clt__node *node_alloc(const char *name, clt__backward_fn bw, int nin, int room)
{
    clt__node *n = clt__calloc(1, sizeof *n + (size_t)room * sizeof n->in[0]);
    if (n == NULL)
        return NULL;
    n->refs = 1;
    n->nout = 1;
    n->seq = __atomic_add_fetch(&node_seq, 1, __ATOMIC_RELAXED);
    n->name = name;
    n->backward = bw;
    n->nin = nin;
    return n;
}

static clt__node *node_new(const char *name, clt__backward_fn bw, int nin,
                           const clt_tensor *const *in, int nsaved,
                           const clt_tensor *const *saved, const clt_tensor *out)
{
    /* A view whose base changed takes its new history first: the saved
     * views below keep the history they are saved with (for a pass that
     * creates a graph). */
    for (int k = 0; k < nin; k++)
        if (refresh(in[k]) != CLT_OK)
            return NULL;
    clt__node *n = node_alloc(name, bw, nin, nin);
    if (n == NULL)
        return NULL;
    for (int k = 0; k < nsaved; k++) {
        if (save_view(saved[k], &n->saved[k]) != CLT_OK) {
            n->nsaved = k;
            node_unref(n);
            return NULL;
        }
        n->saved_version[k] = clt__version(saved[k]);
        n->nsaved = k + 1;
        if (out && saved[k] == out)
            n->saved_from[k] = -1;
        for (int j = 0; j < nin && n->saved_from[k] == 0; j++)
            if (saved[k] == in[j])
                n->saved_from[k] = (signed char)(j + 1);
    }
    for (int k = 0; k < nin; k++)
        edge_set(&n->in[k], in[k]);
    return n;
}

clt_status clt__record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                       int nin, const clt_tensor *const *in, int nsaved,
                       const clt_tensor *const *saved, clt__node **node)
{
    if (node)
        *node = NULL;
    if (st == CLT_OK && nin > 0 && in[0] && (*out)->storage == in[0]->storage &&
        clt__mark_views(in[0], out, 1, NULL) != CLT_OK)
        goto oom;
    if (st != CLT_OK || !clt__grad_needed(nin, in))
        return st;
    /* Complex results are recorded as torch records them: their
     * gradients are complex (dL/dz*, conjugate Wirtinger calculus). */
    if (!clt__dtype_is_float((*out)->dtype) && !clt__dtype_is_complex((*out)->dtype))
        return st;
    clt__meta *m = meta_get(*out);
    clt__node *n = m ? node_new(name, bw, nin, in, nsaved, saved, *out) : NULL;
    if (n == NULL)
        goto oom;
    m->requires_grad = true;
    m->grad_fn = n;
    if (node)
        *node = n;
    return CLT_OK;
oom:
    clt_tensor_free(*out);
    *out = NULL;
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory recording the graph",
                      name);
}

/* ---- views ---------------------------------------------------------------------- */

/* A geometry in its storage, and a view's with its base's: enough to find
 * the view's elements among the base's (AsStridedBackward0, CopySlices). */
typedef struct geom {
    int ndim;
    bool contiguous;
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS], offset, numel;
} geom;

/* A view of another dtype than its base (the real and the complex form of
 * one storage: clt_real, clt_imag, clt_view_as_real, clt_view_as_complex,
 * views of those) is found among its base's elements in the storage's
 * real scalars: pb (pv) is 2 when the base (the view) is the complex one,
 * whose element is then its 2 parts, and 1 otherwise. */
typedef struct view_geom {
    geom base, view;
    clt_dtype base_dtype, view_dtype;
    int pb, pv;
} view_geom;

static void geom_of(geom *g, const clt_tensor *t)
{
    g->ndim = t->ndim;
    memcpy(g->shape, t->shape, sizeof g->shape);
    memcpy(g->strides, t->strides, sizeof g->strides);
    g->offset = t->offset;
    g->numel = t->numel;
    g->contiguous = clt__is_contiguous(t);
}

/* vg for view t of base; false for a pair of dtypes that are not the real
 * and the complex form of one storage (which no view op makes). */
static bool view_geom_of(view_geom *vg, const clt_tensor *base, const clt_tensor *t)
{
    geom_of(&vg->base, base);
    geom_of(&vg->view, t);
    vg->base_dtype = base->dtype;
    vg->view_dtype = t->dtype;
    vg->pb = vg->pv = 1;
    if (base->dtype == t->dtype)
        return true;
    if (clt__dtype_is_complex(base->dtype) && clt__complex_part_dtype(base->dtype) == t->dtype)
        vg->pb = 2;
    else if (clt__dtype_is_complex(t->dtype) && clt__complex_part_dtype(t->dtype) == base->dtype)
        vg->pv = 2;
    else
        return false;
    return true;
}

/* The storage position of element k (row-major) of g. */
static int64_t geom_pos(const geom *g, int64_t k)
{
    int64_t pos = g->offset;
    for (int d = g->ndim - 1; d >= 0; d--) {
        pos += (k % g->shape[d]) * g->strides[d];
        k /= g->shape[d];
    }
    return pos;
}

/* Which element of the base (row-major in its shape) each element of the
 * view is: a new 1-D int64 tensor on dev, in the view's row-major order.
 * A base of any strides is read through the map from its storage
 * positions to its elements.  For a view of another dtype (vg->pb or
 * vg->pv 2) the elements are the storage's real scalars: a complex
 * geometry's element k is scalars 2k and 2k + 1, at storage scalars 2p
 * and 2p + 1 for its position p. */
static clt_status view_index(const view_geom *vg, clt_device *dev, clt_tensor **out)
{
    const geom *b = &vg->base, *v = &vg->view;
    const int pb = vg->pb, pv = vg->pv;
    const int64_t n = v->numel * pv, bn = b->numel * pb, boff = b->offset * pb;
    clt_status st = CLT_OK;
    int64_t span = 0, *map = NULL;
    int64_t *idx = clt__malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    bool direct = b->contiguous;
    if (idx == NULL)
        goto oom;
    if (!direct) {
        if (!clt__strided_extent(b->ndim, b->shape, b->strides, b->offset, &span)) {
            free(idx);
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_backward: a view's base overflows");
        }
        span = (span - b->offset) * pb;
        map = clt__malloc((size_t)(span > 0 ? span : 1) * sizeof *map);
        if (map == NULL)
            goto oom;
        for (int64_t p = 0; p < span; p++)
            map[p] = -1;
        for (int64_t k = 0; k < b->numel; k++)
            for (int j = 0; j < pb; j++)
                map[(geom_pos(b, k) - b->offset) * pb + j] = k * pb + j;
    }
    for (int64_t k = 0; k < v->numel && st == CLT_OK; k++)
        for (int j = 0; j < pv && st == CLT_OK; j++) {
            int64_t p = geom_pos(v, k) * pv + j - boff, *at = &idx[k * pv + j];
            *at = direct ? (p >= 0 && p < bn ? p : -1) : (p >= 0 && p < span ? map[p] : -1);
            if (*at < 0)
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "clt_backward: a view reaches storage outside its base's "
                                "elements; its gradient cannot be written into the base's");
        }
    if (st == CLT_OK)
        st = clt__tensor_from_host_in("clt_backward", dev, CLT_INT64, 1, &n, idx, out);
    free(idx);
    free(map);
    return st;
oom:
    free(idx);
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
}

static clt_status g_reshape(const clt_tensor *g, int ndim, const int64_t *shape, clt_tensor **out)
{
    return creating ? clt__reshape_rec("clt_backward", g, ndim, shape, out)
                    : clt__reshape(g, ndim, shape, out, "clt_backward");
}

/* Whether the view nodes' formulas call the public index ops: they record
 * in a pass that creates a graph, and they alone take complex operands
 * (they record nothing in a pass that creates none: grad mode is off). */
static bool public_index_ops(const clt_tensor *g)
{
    return creating || clt__dtype_is_complex(g->dtype);
}

/* g flattened to the elements view_index counts in: g's own, or, when
 * the view and its base differ in dtype (mixed), the real scalars of a
 * complex g (its view_as_real). */
static clt_status g_elements(const clt_tensor *g, bool mixed, clt_tensor **out)
{
    int64_t n = g->numel;
    if (!mixed || !clt__dtype_is_complex(g->dtype))
        return g_reshape(g, 1, &n, out);
    clt_tensor *f = NULL, *r = NULL;
    clt_status st = g_reshape(g, 1, &n, &f);
    if (st == CLT_OK)
        st = creating ? clt_view_as_real(f, &r) : clt__view_as_real(f, &r, "clt_backward");
    n *= 2;
    if (st == CLT_OK)
        st = g_reshape(r, 1, &n, out);
    clt_tensor_free(f);
    clt_tensor_free(r);
    return st;
}

/* The inverse of g_elements: 1-D e (fresh, contiguous) as a tensor of
 * dtype dt and that shape (view_as_complex of its pairs when dt is
 * complex and e is real). */
static clt_status g_from_elements(const clt_tensor *e, clt_dtype dt, int ndim,
                                  const int64_t *shape, clt_tensor **out)
{
    if (e->dtype == dt)
        return g_reshape(e, ndim, shape, out);
    int64_t pairs[2] = {e->numel / 2, 2};
    clt_tensor *r = NULL, *c = NULL;
    clt_status st = g_reshape(e, 2, pairs, &r);
    if (st == CLT_OK)
        st = creating ? clt_view_as_complex(r, &c) : clt__view_as_complex(r, &c, "clt_backward");
    if (st == CLT_OK)
        st = g_reshape(c, ndim, shape, out);
    clt_tensor_free(r);
    clt_tensor_free(c);
    return st;
}

/* AsStridedBackward0 of a view: g added into zeros of the base's shape at
 * the view's elements (index_add, so that elements a view reaches twice
 * sum).  Records in a pass that creates a graph (clt__twice). */
static clt_status bw_view_as_strided(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const view_geom *vg = n->ctx;
    const bool mixed = vg->pb != vg->pv;
    clt_tensor *idx = NULL, *flat = NULL, *zero = NULL, *sum = NULL;
    clt_status st = view_index(vg, g->dev, &idx);
    if (st == CLT_OK)
        st = g_elements(g, mixed, &flat);
    int64_t bn = vg->base.numel * vg->pb;
    if (st == CLT_OK)
        st = clt__full(g->dev, flat->dtype, 1, &bn, 0.0, &zero);
    if (st == CLT_OK)
        st = public_index_ops(flat) ? clt_index_add(zero, 0, idx, flat, 1.0, &sum)
                                    : clt__index_add(zero, 0, idx, flat, 1.0, &sum, "clt_backward");
    if (st == CLT_OK)
        st = g_from_elements(sum, mixed ? vg->base_dtype : sum->dtype, vg->base.ndim,
                             vg->base.shape, &gin[0]);
    clt_tensor_free(idx);
    clt_tensor_free(flat);
    clt_tensor_free(zero);
    clt_tensor_free(sum);
    return st;
}

static clt_status check_saved(const clt__node *n);
static clt_status backward_creating(clt__node *x, clt_tensor **gin);
static clt_status conform(clt_tensor **g, const clt__edge *e);

/* CopySlices, as torch's: the base's gradient g passes as it is but for the
 * view's elements, which go through the in-place op's formula (n->wrapped):
 * its gradient for the view's old value takes their place, its others go
 * to the op's other inputs (this node's inputs past the first). */
static clt_status bw_copy_slices(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const view_geom *vg = n->ctx;
    clt__node *w = n->wrapped;
    clt_tensor *idx = NULL, *flat = NULL, *part = NULL, *slice = NULL, *r0 = NULL, *r0flat = NULL,
               *res = NULL;
    clt_tensor *wg_small[8] = {0}, **wg = wg_small;
    clt_status st = check_saved(w);
    if (st != CLT_OK)
        return st;
    if (w->nin > 8 && (wg = clt__calloc((size_t)w->nin, sizeof *wg)) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
    const bool mixed = vg->pb != vg->pv;
    CLT__TRY(view_index(vg, g->dev, &idx));
    CLT__TRY(g_elements(g, mixed, &flat));
    CLT__TRY(public_index_ops(flat) ? clt_take(flat, idx, &part)
                                    : clt__take(flat, idx, &part, "clt_backward"));
    CLT__TRY(g_from_elements(part, mixed ? vg->view_dtype : part->dtype, vg->view.ndim,
                             vg->view.shape, &slice));
    if (creating) {
        w->gbuf = slice;
        st = backward_creating(w, wg);
        w->gbuf = NULL;
        CLT__TRY(st);
    } else {
        CLT__TRY(w->backward(w, slice, wg));
    }
    for (int k = 1; k < w->nin; k++) {
        gin[k] = wg[k];
        wg[k] = NULL;
    }
    if (CLT__NEED(n, 0)) {
        r0 = wg[0];
        wg[0] = NULL;
        int64_t vn = vg->view.numel * vg->pv;
        if (r0 == NULL) {
            CLT__TRY(clt__full(g->dev, flat->dtype, 1, &vn, 0.0, &r0flat));
        } else {
            CLT__TRY(conform(&r0, &w->in[0]));
            CLT__TRY(g_elements(r0, mixed, &r0flat));
        }
        CLT__TRY(public_index_ops(flat)
                     ? clt_index_copy(flat, 0, idx, r0flat, &res)
                     : clt__index_copy(flat, 0, idx, r0flat, &res, "clt_backward"));
        CLT__TRY(g_from_elements(res, mixed ? vg->base_dtype : res->dtype, vg->base.ndim,
                                 vg->base.shape, &gin[0]));
    }
done:
    for (int k = 0; k < w->nin; k++)
        clt_tensor_free(wg[k]);
    if (wg != wg_small)
        free(wg);
    clt_tensor_free(idx);
    clt_tensor_free(flat);
    clt_tensor_free(part);
    clt_tensor_free(slice);
    clt_tensor_free(r0);
    clt_tensor_free(r0flat);
    clt_tensor_free(res);
    return st;
}

/* A node without edges yet (the caller sets them), its ctx a copy of vg;
 * NULL when memory runs out. */
static clt__node *view_node(const char *name, clt__backward_fn bw, int nin, const view_geom *vg)
{
    clt__node *n = node_alloc(name, bw, nin, nin);
    view_geom *c = clt__malloc(sizeof *c);
    if (n == NULL || c == NULL) {
        free(n);
        free(c);
        return NULL;
    }
    *c = *vg;
    n->ctx = c;
    n->ctx_free = free;
    n->ctx_kept = true;
    n->twice = true;
    return n;
}

/* Moves t's retain hook from node `from` to node `to` (output 0), as
 * torch moves it to a tensor's new grad_fn. */
static void move_retain_hook(const clt_tensor *t, clt__node *from, clt__node *to)
{
    for (clt_hook **p = from ? &from->hooks : NULL; p && *p; p = &(*p)->next) {
        clt_hook *h = *p;
        if (h->kind == HOOK_RETAIN && h->retainer == t) {
            *p = h->next;
            h->slot = 0;
            hook_append(&to->hooks, h);
            return;
        }
    }
}

/* Makes view t's grad_fn again from its base's history when the storage
 * changed since it was made (torch's AsStridedBackward0 regeneration):
 * before t is read as an op's input, backward's root, or for its grad_fn. */
static clt_status refresh(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    if (m == NULL || m->base == NULL)
        return CLT_OK;
    uint64_t now = clt__version(t);
    if (!stale(t, m)) {
        m->version = now;
        return CLT_OK;
    }
    clt__node *n = NULL;
    if (requires_grad(m->base)) {
        view_geom vg;
        view_geom_of(&vg, m->base, t); /* stale: a pair it takes */
        n = view_node(as_strided_name, bw_view_as_strided, 1, &vg);
        if (n == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        edge_set(&n->in[0], m->base);
        if (m->retains_grad)
            move_retain_hook(t, m->grad_fn, n);
    } else if (m->retains_grad) {
        /* no history to retain a gradient of: the old node forgets t */
        for (clt_hook *h = m->grad_fn ? m->grad_fn->hooks : NULL; h; h = h->next)
            if (h->kind == HOOK_RETAIN && h->retainer == t) {
                h->retainer = NULL;
                h->removed = true;
            }
        m->retains_grad = false;
    }
    clt__node *old = m->grad_fn;
    m->grad_fn = n;
    m->slot = 0;
    m->requires_grad = n != NULL;
    m->version = now;
    node_unref(old);
    return CLT_OK;
}

clt_status clt__mark_views(const clt_tensor *in, clt_tensor *const *outs, int nout,
                           const char *name)
{
    if (in == NULL)
        return CLT_OK;
    clt__meta *src = meta_of(in);
    const clt_tensor *base = src && src->base ? src->base : in;
    /* A pass makes its gradients' views untracked (but those of a tensor
     * that requires grad, when it creates none): a base held by one would
     * keep a leaf's gradient from being its own buffer (exclusive) and so
     * cost a copy.  Views made in the caller's no-grad mode are tracked
     * whatever their base, as torch's (CreationMeta::NO_GRAD_MODE), so that
     * an in-place op on one in grad mode is refused (view_check): the cost
     * is their state's one allocation, as torch's view metadata. */
    if (creating || (passing && !requires_grad(base)))
        return CLT_OK;
    for (int s = 0; s < nout; s++) {
        clt_tensor *o = outs[s];
        if (o == in || o->storage != in->storage || o->storage == NULL ||
            (!clt__dtype_is_float(o->dtype) && !clt__dtype_is_complex(o->dtype)))
            continue;
        clt__meta *m = meta_get(o);
        if (m == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory recording a view");
        if (m->base)
            continue;
        m->base = clt_tensor_retain((clt_tensor *)base);
        m->version = clt__version(o);
        view_geom vg;
        m->dtype_view = !view_geom_of(&vg, base, o);
        /* torch's creation meta: no-grad mode, else several outputs, else
         * the input's (propagate_creation_meta) */
        m->no_grad_view = grad_disabled || (nout == 1 && src && src->no_grad_view);
        m->multi = grad_disabled ? NULL : nout > 1 ? name : src ? src->multi : NULL;
        m->multi_slot = m->multi == NULL ? 0 : nout > 1 ? s : src->multi_slot;
    }
    return CLT_OK;
}

/* torch's refusals of an in-place op on view t in grad mode when the
 * result needs a gradient: t or its base requires grad, or (operand >= 0)
 * an input of the op does: operand k > 0 (counted after t), which the
 * message then names. */
static clt_status view_check(const clt_tensor *t, int operand, const char *fn)
{
    clt__meta *m = meta_of(t);
    if (grad_disabled || m == NULL || m->base == NULL)
        return CLT_OK;
    const clt__meta *bm = meta_of(m->base);
    bool base_rg = bm && bm->requires_grad;
    if (operand < 0 && !base_rg && !requires_grad(t))
        return CLT_OK;
    char why[96] = "";
    if (operand > 0 && !base_rg)
        snprintf(why, sizeof why, " (it is recorded because operand %d of the op requires grad)",
                 operand);
    if (m->multi)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: output %d of %s is a view and is being modified in place%s.  "
                          "This view is the output of a function that returns multiple views; "
                          "such functions do not allow the output views to be modified in "
                          "place.  Replace the in-place operation by an out-of-place one",
                          fn, m->multi_slot, m->multi, why);
    if (m->no_grad_view)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a view was created in no_grad mode and is being modified in "
                          "place with grad mode enabled%s.  Given that this use case is "
                          "ambiguous and error-prone, it is forbidden: make both the view and "
                          "the in-place op with grad mode off (clt_set_grad_enabled(0)) if the "
                          "in-place op is not to be recorded, or both with it on",
                          fn, why);
    /* torch's test: t requires grad and its base is a leaf, whether the
     * base requires grad (since before t was made or since after: torch's
     * view requires grad when its base does) or t became a leaf that does
     * (requires_grad_ on a view of a tensor without grad) or a view of one */
    if ((base_rg || requires_grad(t)) && (bm == NULL || bm->grad_fn == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a view of a leaf Variable that requires grad is being used in an "
                          "in-place operation",
                          fn);
    /* the real and complex forms of one storage are found in its real
     * scalars (view_geom); no view op makes another pair of dtypes */
    if (m->dtype_view)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a view of dtype %s of a base of dtype %s (not the real and the "
                          "complex form of one storage) is being modified in place where a "
                          "gradient is needed%s; its base's history cannot take the op.  Use "
                          "an out-of-place op, or clt_set_grad_enabled(0) if the op is not to "
                          "be recorded",
                          fn, clt_dtype_name(t->dtype), clt_dtype_name(m->base->dtype), why);
    return CLT_OK;
}

/* Prepares the rebase of view t's base for in-place node inner (see
 * clt__inplace_node): the CopySlices node and t's AsStridedBackward0 node,
 * kept in inner->rebase. */
static clt_status prepare_rebase(const clt_tensor *t, clt__node *inner)
{
    clt__meta *m = meta_of(t);
    view_geom vg;
    view_geom_of(&vg, m->base, t); /* view_check refused a pair it does not take */
    if (meta_get(m->base) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    clt__node *cs = view_node("CopySlices", bw_copy_slices, inner->nin, &vg);
    clt__node *as = cs ? view_node(as_strided_name, bw_view_as_strided, 1, &vg) : NULL;
    if (as == NULL) {
        node_unref(cs);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    cs->wrapped = inner;
    __atomic_add_fetch(&inner->refs, 1, __ATOMIC_RELAXED);
    edge_set(&cs->in[0], m->base);
    for (int k = 1; k < inner->nin; k++) {
        cs->in[k] = inner->in[k];
        if (cs->in[k].node)
            __atomic_add_fetch(&cs->in[k].node->refs, 1, __ATOMIC_RELAXED);
        clt_tensor_retain(cs->in[k].leaf);
    }
    const clt_tensor *base = m->base;
    as->in[0] = (clt__edge){.node = cs, .dev = base->dev, .dtype = base->dtype,
                            .ndim = base->ndim};
    memcpy(as->in[0].shape, base->shape, sizeof as->in[0].shape);
    inner->rebase = as; /* as's edge holds cs */
    return CLT_OK;
}

clt_status clt__inplace_node(const char *fn, const char *name, clt__backward_fn bw, int nin,
                             const clt_tensor *const *in, clt__node **node)
{
    *node = NULL;
    for (int k = 0; k < nin; k++)
        if (in[k] && refresh(in[k]) != CLT_OK)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                              "%s: out of host memory recording the graph", fn);
    if (!clt__grad_needed(nin, in))
        return CLT_OK;
    int operand = 1;
    while (operand < nin && !requires_grad(in[operand]))
        operand++;
    clt_status st = view_check(in[0], operand < nin ? operand : 0, fn);
    if (st != CLT_OK)
        return st;
    if (meta_get((clt_tensor *)in[0]) != NULL)
        *node = node_new(name, bw, nin, in, 0, NULL, NULL);
    if (*node == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory recording the graph", fn);
    clt__meta *m = meta_of(in[0]);
    if (m->base && prepare_rebase(in[0], *node) != CLT_OK) {
        node_unref(*node);
        *node = NULL;
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory recording the graph", fn);
    }
    return CLT_OK;
}

void clt__inplace_commit(clt_tensor *t, clt__node *n, uint64_t before)
{
    if (clt__version(t) == before)
        clt__version_bump(t);
    if (n == NULL)
        return;
    clt__meta *m = t->meta; /* made by clt__inplace_node */
    clt__node *old = m->grad_fn;
    if (n->rebase) {
        /* t's base takes the CopySlices, t its AsStridedBackward0 */
        clt__node *as = n->rebase, *cs = as->in[0].node;
        clt__meta *bm = m->base->meta;
        clt__node *bold = bm->grad_fn;
        n->rebase = NULL;
        if (bm->retains_grad)
            move_retain_hook(m->base, bold, cs);
        __atomic_add_fetch(&cs->refs, 1, __ATOMIC_RELAXED);
        bm->grad_fn = cs;
        bm->slot = 0;
        bm->requires_grad = true;
        node_unref(bold); /* cs's first edge holds it */
        node_unref(n);    /* cs holds it */
        n = as;
    }
    if (m->retains_grad && old)
        move_retain_hook(t, old, n); /* as torch moves it */
    m->grad_fn = n;
    m->slot = 0;
    m->requires_grad = true;
    m->version = clt__version(t);
    node_unref(old); /* the new node's first edge holds it */
}

void clt__inplace_drop(clt__node *n)
{
    if (n && n->rebase) {
        clt__node *as = n->rebase;
        n->rebase = NULL;
        node_unref(as);
    }
    node_unref(n);
}

clt_status clt__check_inplace(const clt_tensor *t, const char *fn)
{
    clt__meta *m = meta_of(t);
    if (grad_disabled || m == NULL)
        return CLT_OK;
    clt_status st = refresh(t);
    if (st == CLT_OK)
        st = view_check(t, -1, fn);
    if (st != CLT_OK)
        return st;
    if (m->requires_grad && m->grad_fn == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a leaf tensor that requires grad is being used in an in-place "
                          "operation; use clt_set_grad_enabled(0) around it (torch.no_grad) or "
                          "update a clt_detach view",
                          fn);
    return CLT_OK;
}

/* ---- gradients with a history (create_graph) ------------------------------------- */

bool clt__creating_graph(void)
{
    return creating;
}

void clt__twice(clt__node *n)
{
    if (n)
        n->twice = true;
}

static clt_status bw_alias(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return clt__alias_grad(g, &gin[0]);
}

/* Gives t (fresh, without autograd state) the history of output `slot` of
 * node, or of the leaf through an identity node (a leaf is known by its
 * handle: an alias of it would be another leaf). */
static clt_status give_history(clt_tensor *t, clt__node *node, int slot, clt_tensor *leaf)
{
    clt__meta *m = meta_get(t);
    if (m && leaf) {
        const clt_tensor *in = leaf;
        node = node_new("AliasBackward0", bw_alias, 1, &in, 0, NULL, NULL);
        slot = 0;
        if (node)
            node->twice = true;
    } else if (m) {
        __atomic_add_fetch(&node->refs, 1, __ATOMIC_RELAXED);
    }
    if (m == NULL || node == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
    m->requires_grad = true;
    m->grad_fn = node;
    m->slot = slot;
    return CLT_OK;
}

/* A new handle on g's data with g's history. */
static clt_status history_alias(const clt_tensor *g, clt_tensor **out)
{
    clt_status st = refresh(g);
    if (st != CLT_OK) {
        *out = NULL;
        return st;
    }
    st = clt__alias(g, out);
    clt__meta *m = meta_of(g);
    if (st != CLT_OK || m == NULL || !m->requires_grad)
        return st;
    st = give_history(*out, m->grad_fn, m->slot, m->grad_fn ? NULL : (clt_tensor *)g);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

clt_status clt__alias_history(const clt_tensor *t, clt_tensor **out)
{
    return grad_disabled ? clt__alias(t, out) : history_alias(t, out);
}

clt_status clt__alias_grad(const clt_tensor *g, clt_tensor **out)
{
    if (creating && !grad_disabled)
        return history_alias(g, out);
    return clt__alias(g, out);
}

/* The node of clt__grad_node: the identity for the gradient it wraps
 * (input 0), zeros of their shapes for the tensors the formula read. */
static clt_status bw_grad_node(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__alias_grad(g, &gin[0]);
    for (int k = 1; k < n->nin && st == CLT_OK; k++) {
        const clt__edge *e = &n->in[k];
        if (CLT__NEED(n, k))
            st = clt__full(e->dev, e->dtype, e->ndim, e->shape, 0.0, &gin[k]);
    }
    return st;
}

clt_status clt__grad_node(const char *name, int nsrc, const clt_tensor *const *src,
                          clt_tensor **t)
{
    if (!creating || grad_disabled)
        return CLT_OK;
    const clt_tensor *in[1 + CLT__SAVED_MAX];
    if (nsrc > CLT__SAVED_MAX)
        return clt__error(CLT_ERR_INTERNAL, "clt_backward: %s reads too many tensors", name);
    in[0] = *t;
    for (int k = 0; k < nsrc; k++)
        in[1 + k] = src[k];
    clt_tensor *a = NULL;
    clt__node *n = NULL;
    clt_status st = clt__alias(*t, &a);
    st = clt__record(st, &a, name, bw_grad_node, 1 + nsrc, in, 0, NULL, &n);
    if (st != CLT_OK || n == NULL) {
        clt_tensor_free(a);
        return st;
    }
    n->twice = true;
    clt_tensor_free(*t);
    *t = a;
    return CLT_OK;
}

/* saved[k] of x for a formula run in a pass that creates a graph: the
 * saved data with the history of what it was (x's input, or x's output). */
static clt_status unpack(clt__node *x, int k, clt_tensor **out)
{
    clt_status st = clt__alias(x->saved[k], out);
    if (st != CLT_OK)
        return st;
    clt__scope_disown(*out);
    int from = x->saved_from[k];
    const clt__edge *e = from > 0 ? &x->in[from - 1] : NULL;
    if (from < 0)
        st = give_history(*out, x, -1 - from, NULL);
    else if (e && (e->node || e->leaf))
        st = give_history(*out, e->node, e->slot, e->leaf);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static clt_status bw_not_implemented(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "the derivative for '%s' is not implemented: its gradient was computed "
                      "with create_graph, and double backward through %s is not supported",
                      (const char *)n->ctx, (const char *)n->ctx);
}

/* A gradient *t that x's formula computed without recording, in a pass
 * that creates a graph: it gets a node that depends on everything x's
 * gradient may depend on (x's inputs and g) and refuses to be
 * differentiated, as PyTorch's NotImplemented node does, so that the
 * gradient is right and never silently constant. */
static clt_status refuse_later(clt__node *x, const clt_tensor *g, clt_tensor **t)
{
    clt_tensor *a = NULL;
    clt__node *n = node_alloc("NotImplemented", bw_not_implemented, x->nin, x->nin + 1);
    clt__meta *m = NULL;
    if (n == NULL || clt__alias(*t, &a) != CLT_OK || (m = meta_get(a)) == NULL) {
        free(n);
        clt_tensor_free(a);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
    }
    n->ctx = (void *)x->name;
    n->ctx_kept = true;
    for (int k = 0; k < x->nin; k++) {
        n->in[k] = x->in[k];
        if (n->in[k].node)
            __atomic_add_fetch(&n->in[k].node->refs, 1, __ATOMIC_RELAXED);
        clt_tensor_retain(n->in[k].leaf);
    }
    if (requires_grad(g))
        edge_set(&n->in[n->nin++], g);
    m->requires_grad = true;
    m->grad_fn = n;
    clt_tensor_free(*t);
    *t = a;
    return CLT_OK;
}

/* Runs x's formula in a pass that creates a graph: in grad mode on its
 * saved tensors with their history when x supports it, else plainly, its
 * gradients then refusing to be differentiated. */
static clt_status backward_creating(clt__node *x, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    bool was = grad_disabled;
    if (!x->twice) {
        grad_disabled = true;
        st = x->backward(x, x->gbuf, gin);
        grad_disabled = was;
        for (int k = 0; k < x->nin && st == CLT_OK; k++)
            if (gin[k])
                st = refuse_later(x, x->gbuf, &gin[k]);
        return st;
    }
    clt_tensor *kept[CLT__SAVED_MAX] = {0}, *un[CLT__SAVED_MAX] = {0};
    for (int k = 0; k < x->nsaved && st == CLT_OK; k++)
        st = unpack(x, k, &un[k]);
    if (st == CLT_OK) {
        for (int k = 0; k < x->nsaved; k++) {
            kept[k] = x->saved[k];
            x->saved[k] = un[k];
        }
        grad_disabled = false;
        st = x->backward(x, x->gbuf, gin);
        grad_disabled = was;
        for (int k = 0; k < x->nsaved; k++)
            x->saved[k] = kept[k];
    }
    for (int k = 0; k < x->nsaved; k++)
        clt_tensor_free(un[k]);
    return st;
}

/* ---- public state ------------------------------------------------------------- */

int clt_set_grad_enabled(int enabled)
{
    int was = !grad_disabled;
    grad_disabled = !enabled;
    return was;
}

int clt_is_grad_enabled(void)
{
    return !grad_disabled;
}

void clt_set_detect_anomaly(int enabled, int check_nan)
{
    __atomic_store_n(&anomaly_nan_off, check_nan == 0, __ATOMIC_RELAXED);
    __atomic_store_n(&anomaly, enabled != 0, __ATOMIC_RELAXED);
}

int clt_is_anomaly_enabled(void)
{
    return __atomic_load_n(&anomaly, __ATOMIC_RELAXED);
}

int clt_is_anomaly_check_nan_enabled(void)
{
    return !__atomic_load_n(&anomaly_nan_off, __ATOMIC_RELAXED);
}

clt_status clt_set_requires_grad(clt_tensor *t, int on)
{
    CLT__REQUIRE_ARG(t, "clt_set_requires_grad");
    clt_status rs = refresh(t);
    if (rs != CLT_OK)
        return clt__error_in(rs, "clt_set_requires_grad");
    clt__meta *m = meta_of(t);
    if (m && m->grad_fn) {
        if (on)
            return clt__ok();
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_set_requires_grad: you can only change requires_grad flags of "
                          "leaf tensors; to use a computed tensor without gradients, take "
                          "clt_detach of it");
    }
    if (on && !clt__dtype_is_float(t->dtype) && !clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "clt_set_requires_grad: only tensors of floating point and complex "
                          "dtype can require gradients (this one is %s)",
                          clt_dtype_name(t->dtype));
    if (!on && m == NULL)
        return clt__ok();
    m = meta_get(t);
    if (m == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_set_requires_grad: out of host memory");
    m->requires_grad = on != 0;
    return clt__ok();
}

int clt_requires_grad(const clt_tensor *t)
{
    return requires_grad(t);
}

int clt_is_leaf(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    if (m && stale(t, m))
        return !requires_grad(t);
    return t != NULL && (m == NULL || m->grad_fn == NULL);
}

const char *clt_grad_fn_name(const clt_tensor *t)
{
    return grad_fn_name(t);
}

clt_status clt_grad(const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_grad");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_grad");
    clt__meta *m = meta_of(t);
    if (m && m->grad == NULL && m->sgrad_idx) {
        clt_status st = clt__sparse_grad_dense(t, out);
        return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_grad");
    }
    if (m == NULL || m->grad == NULL)
        return clt__ok();
    clt_status st = history_alias(m->grad, out);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_grad");
}

clt_status clt__sparse_grad_dense(const clt_tensor *t, clt_tensor **out)
{
    *out = NULL;
    clt__meta *m = meta_of(t);
    clt_tensor *z = NULL, *flat = NULL;
    int64_t nnz = m->sgrad_idx->numel;
    clt_status st = clt__full(t->dev, t->dtype, t->ndim, t->shape, 0.0, &z);
    if (st == CLT_OK && nnz == 0) { /* no entries (a zeroed one has no rows) */
        *out = z;
        return CLT_OK;
    }
    if (st == CLT_OK)
        st = clt__reshape(m->sgrad_idx, 1, &nnz, &flat, "clt_grad");
    if (st == CLT_OK)
        st = clt__index_add(z, 0, flat, m->sgrad_val, 1.0, out, "clt_grad");
    clt_tensor_free(z);
    clt_tensor_free(flat);
    return st;
}

bool clt__grad_is_sparse(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    return m && m->grad == NULL && m->sgrad_idx;
}

void clt__sparse_grad_of(const clt_tensor *t, const clt_tensor **rows, const clt_tensor **values)
{
    clt__meta *m = meta_of(t);
    *rows = m ? m->sgrad_idx : NULL;
    *values = m ? m->sgrad_val : NULL;
}

int clt_grad_is_sparse(const clt_tensor *t)
{
    return t && clt__grad_is_sparse(t);
}

clt_status clt_zero_grad(clt_tensor *t, int set_to_none)
{
    CLT__REQUIRE_ARG(t, "clt_zero_grad");
    return clt__zero_grad(t, set_to_none, "clt_zero_grad");
}

clt_status clt__zero_grad(clt_tensor *t, int set_to_none, const char *fn)
{
    clt__meta *m = meta_of(t);
    if (m && m->grad == NULL && m->sgrad_idx) {
        /* torch's zero_() of a sparse gradient (sparse_resize_and_clear_
         * to every dimension sparse): no entries, indices [ndim, 0] and
         * values [0], which the code that reads the entries takes as none */
        clt_tensor *idx = NULL, *val = NULL;
        clt_status st = CLT_OK;
        if (!set_to_none) {
            int64_t ishape[2] = {t->ndim, 0}, vshape[1] = {0};
            st = clt__empty(t->dev, CLT_INT64, 2, ishape, &idx);
            if (st == CLT_OK)
                st = clt__empty(t->dev, t->dtype, 1, vshape, &val);
            if (st != CLT_OK) {
                clt_tensor_free(idx);
                return clt__error_in(st, fn);
            }
            clt__scope_disown(idx);
            clt__scope_disown(val);
        }
        clt_tensor_free(m->sgrad_idx);
        clt_tensor_free(m->sgrad_val);
        m->sgrad_idx = idx;
        m->sgrad_val = val;
        return clt__ok();
    }
    if (m == NULL || m->grad == NULL)
        return clt__ok();
    if (set_to_none) {
        clt_tensor_free(m->grad);
        m->grad = NULL;
        return clt__ok();
    }
    clt_status st = clt__fill_value(m->grad, 0.0);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

const clt_tensor *clt__grad_of(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    return m ? m->grad : NULL;
}

clt_status clt_detach(const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_detach");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_detach");
    clt_status st = clt__alias(t, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- the backward pass ---------------------------------------------------------- */

/* The gradient ops of the engine on complex gradients too: sum_dim (which
 * sums complex tensors), add through the complex kernels, and the casts to
 * an input's dtype that torch makes (a real input takes the real part of a
 * complex gradient). */
static clt_status g_sum_dim(const clt_tensor *g, int d, int keep, clt_tensor **out)
{
    return creating ? clt__sum_dim_rec("clt_backward", g, d, keep, out)
                    : clt__sum_dim(g, d, keep, out, "clt_backward");
}

static clt_status g_add(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    if (clt__dtype_is_complex(a->dtype) || clt__dtype_is_complex(b->dtype))
        return creating ? clt__complex_binary_rec(0, a, b, out, "clt_backward")
                        : clt__complex_binary(0, a, b, out, "clt_backward");
    return creating ? clt__add_rec("clt_backward", a, b, out)
                    : clt__add_into(NULL, a, b, out, "clt_backward");
}

static clt_status g_cast(const clt_tensor *g, clt_dtype dtype, clt_tensor **out)
{
    if (creating)
        return clt__to_dtype_rec("clt_backward", g, dtype, out);
    if (clt__dtype_is_complex(g->dtype) || clt__dtype_is_complex(dtype))
        return clt__complex_to_real(g, dtype, out, "clt_backward");
    return clt__to_dtype(g, dtype, out, "clt_backward");
}

/* Sums g over the dimensions that broadcasting added to a tensor of shape
 * e->shape, and converts it to e's dtype.  Takes g; hands back the result. */
static clt_status conform(clt_tensor **g, const clt__edge *e)
{
    clt_status st = CLT_OK;
    clt_tensor *cur = *g, *next = NULL;
    bool same = cur->ndim == e->ndim;
    for (int d = 0; same && d < e->ndim; d++)
        same = cur->shape[d] == e->shape[d];
    if (!same) {
        int lead = cur->ndim - e->ndim;
        if (lead < 0)
            return clt__error(CLT_ERR_INTERNAL, "autograd: gradient of %d dimensions for an "
                              "input of %d", cur->ndim, e->ndim);
        if (lead > 0) {
            /* Leading dimensions go in one reduction over their product. */
            int64_t shape[CLT_MAX_DIMS + 1];
            shape[0] = 1;
            for (int d = 0; d < lead; d++)
                shape[0] *= cur->shape[d];
            for (int d = lead; d < cur->ndim; d++)
                shape[1 + d - lead] = cur->shape[d];
            CLT__TRY(creating ? clt__reshape_rec("clt_backward", cur, 1 + e->ndim, shape, &next)
                              : clt__reshape(cur, 1 + e->ndim, shape, &next, "clt_backward"));
            clt_tensor_free(cur);
            cur = next;
            CLT__TRY(g_sum_dim(cur, 0, 0, &next));
            clt_tensor_free(cur);
            cur = next;
        }
        for (int d = 0; d < e->ndim; d++) {
            if (e->shape[d] == 1 && cur->shape[d] != 1) {
                CLT__TRY(g_sum_dim(cur, d, 1, &next));
                clt_tensor_free(cur);
                cur = next;
            }
        }
    }
    if (cur->dtype != e->dtype) {
        CLT__TRY(g_cast(cur, e->dtype, &next));
        clt_tensor_free(cur);
        cur = next;
    }
    next = NULL;
done:
    clt_tensor_free(next);
    *g = cur;
    return st;
}

/* True when g is a contiguous tensor alone on its storage, which a leaf may
 * then keep as its gradient without a copy. */
static bool exclusive(const clt_tensor *g)
{
    return g->storage && __atomic_load_n(&g->storage->refs, __ATOMIC_ACQUIRE) == 1 &&
           g->refs == 1 && g->offset == 0 && clt__is_contiguous(g) &&
           g->storage->bytes == (size_t)g->numel * clt_dtype_size(g->dtype);
}

/* Makes *g a tensor a leaf may keep as its gradient: *g itself when it is
 * exclusive, else a copy (the only step of a commit that allocates). */
static clt_status make_keepable(clt_tensor **g)
{
    if (exclusive(*g))
        return CLT_OK;
    clt_tensor *copy = NULL;
    clt_status st = creating ? clt_clone(*g, &copy) : clt__clone(*g, &copy, "clt_backward");
    if (st != CLT_OK)
        return st;
    clt_tensor_free(*g);
    *g = copy;
    return CLT_OK;
}

/* Gives leaf g (taken), made by commit_pending: as its gradient when it
 * has none, else as its gradient's new values (the sum).  The gradient takes
 * them by taking g's buffer, which cannot fail and which every handle on
 * it (from clt_grad) sees; one that cannot (never one autograd made: they
 * are alone in their buffers) is copied into. */
static clt_status commit_leaf(clt_tensor *leaf, clt_tensor *g)
{
    clt__meta *m = meta_of(leaf);
    clt_status st = CLT_OK;
    /* a dense gradient replaces a sparse one (prepare added it in) */
    clt_tensor_free(m->sgrad_idx);
    clt_tensor_free(m->sgrad_val);
    m->sgrad_idx = m->sgrad_val = NULL;
    if (m->grad == NULL) {
        clt__scope_disown(g);
        m->grad = g;
        return CLT_OK;
    }
    if (creating) { /* the sum is a new tensor with its history, as torch's */
        clt__scope_disown(g);
        clt_tensor_free(m->grad);
        m->grad = g;
        return CLT_OK;
    }
    if (!clt__tensor_take_values(m->grad, g)) {
        st = clt__copy_into(m->grad, g, "clt_backward");
        if (st == CLT_OK)
            clt__version_bump(m->grad);
    }
    clt_tensor_free(g);
    return st;
}

/* *sum += g (g is taken); *sum NULL takes g as it is. */
static clt_status accumulate(clt_tensor **sum, clt_tensor *g)
{
    if (*sum == NULL) {
        *sum = g;
        return CLT_OK;
    }
    clt_tensor *next = NULL;
    clt_status st = g_add(*sum, g, &next);
    clt_tensor_free(g);
    if (st != CLT_OK)
        return st;
    clt_tensor_free(*sum);
    *sum = next;
    return CLT_OK;
}

/* The leaves' gradients of one backward pass, summed per leaf and added to
 * their `grad` only once the whole pass has succeeded: a pass that fails
 * half-way (out of device memory, say) changes no gradient, so that
 * running it again does not count a part twice.  The gradients that
 * computed tensors retain (clt_retain_grad) wait in a list of their own,
 * committed with the leaves'. */
typedef struct pending {
    clt_tensor *leaf; /* held by an edge of the graph, or by the entry (owned) */
    clt_tensor *g;    /* owned */
    /* Sparse parts (clt__sparse_grad_put): int64 rows [nnz] and values
     * [nnz, *rest] of the leaf's gradient, concatenated (owned). */
    clt_tensor *si, *sv;
    int deps;         /* edges into the leaf that the pass has yet to run */
    bool owned;       /* the entry holds a reference on leaf */
    bool target;      /* clt_autograd_grad: the leaf is an input */
    bool readied;     /* its hooks ran */
    bool done;        /* committed already (for a post-accumulate hook) */
} pending;

typedef struct pendlist {
    pending *v;
    size_t n, cap;
} pendlist;

static pending *pend_find(const pendlist *l, const clt_tensor *leaf)
{
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k].leaf == leaf)
            return &l->v[k];
    return NULL;
}

/* The entry of leaf, made empty when there is none; NULL when memory runs
 * out.  The pointer is good until the next entry is made. */
static pending *pend_slot(pendlist *l, clt_tensor *leaf)
{
    pending *p = pend_find(l, leaf);
    if (p)
        return p;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        pending *v = clt__realloc(l->v, cap, sizeof *v);
        if (v == NULL)
            return NULL;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = (pending){.leaf = leaf};
    return &l->v[l->n++];
}

/* Adds g (taken) to leaf's entry; own: the entry holds leaf. */
static clt_status pend(pendlist *l, clt_tensor *leaf, clt_tensor *g, bool own)
{
    pending *p = pend_slot(l, leaf);
    if (p == NULL) {
        clt_tensor_free(g);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
    }
    if (own && !p->owned) {
        clt_tensor_retain(leaf);
        p->owned = true;
    }
    return accumulate(&p->g, g);
}

/* Makes p's gradient what its tensor will hold: brought to where the
 * tensor is now, in its dtype now (a leaf moved or converted since the
 * forward pass, by clt_module_to or clt_module_to_dtype), summed with its
 * grad when `sum` and it has one, else a tensor it may keep.  May fail;
 * changes no grad. */
static clt_status prepare(pending *p, bool sum)
{
    clt_status st = CLT_OK;
    if (p->g->dev != p->leaf->dev) {
        clt_tensor *moved = NULL;
        st = creating ? clt_to(p->g, p->leaf->dev, &moved)
                      : clt__to_at(p->g, p->leaf->dev, &moved, __builtin_return_address(0),
                                   "clt_backward");
        if (st != CLT_OK)
            return st;
        clt_tensor_free(p->g);
        p->g = moved;
    }
    if (p->g->dtype != p->leaf->dtype) {
        clt_tensor *conv = NULL;
        st = g_cast(p->g, p->leaf->dtype, &conv);
        if (st != CLT_OK)
            return st;
        clt_tensor_free(p->g);
        p->g = conv;
    }
    clt__meta *m = meta_of(p->leaf);
    if (p->si) { /* the pass's sparse parts join its dense gradient */
        clt_tensor *total = NULL;
        st = clt__index_add(p->g, 0, p->si, p->sv, 1.0, &total, "clt_backward");
        if (st != CLT_OK)
            return st;
        clt_tensor_free(p->g);
        p->g = total;
        clt_tensor_free(p->si);
        clt_tensor_free(p->sv);
        p->si = p->sv = NULL;
    }
    if (sum && m->grad == NULL && m->sgrad_idx && m->sgrad_idx->numel == 0)
        return make_keepable(&p->g); /* dense + no entries */
    if (sum && m->grad == NULL && m->sgrad_idx) { /* dense + sparse is dense, as torch */
        clt_tensor *flat = NULL, *total = NULL;
        int64_t nnz = m->sgrad_idx->numel;
        st = clt__reshape(m->sgrad_idx, 1, &nnz, &flat, "clt_backward");
        if (st == CLT_OK)
            st = clt__index_add(p->g, 0, flat, m->sgrad_val, 1.0, &total, "clt_backward");
        clt_tensor_free(flat);
        if (st != CLT_OK)
            return st;
        clt_tensor_free(p->g);
        p->g = total;
        return CLT_OK;
    }
    const clt_tensor *grad = sum ? m->grad : NULL;
    if (grad == NULL)
        return make_keepable(&p->g);
    clt_tensor *total = NULL;
    st = g_add(grad, p->g, &total);
    if (st == CLT_OK) {
        clt_tensor_free(p->g);
        p->g = total;
    }
    return st;
}

/* Makes the sparse parts of p (which has no dense gradient) what its leaf
 * will hold, as torch's AccumulateGrad: added into the leaf's dense
 * gradient when it has one (p->g then holds the sum), else its rows [1,
 * nnz] and values, after those of the leaf's sparse gradient when it has
 * one (concatenated, not coalesced).  May fail; changes no grad. */
static clt_status prepare_sparse(pending *p)
{
    clt__meta *m = meta_of(p->leaf);
    clt_status st = CLT_OK;
    clt_tensor *idx = NULL, *val = NULL, *row = NULL;
    if (m->grad) {
        st = clt__index_add(m->grad, 0, p->si, p->sv, 1.0, &p->g, "clt_backward");
        if (st == CLT_OK) {
            clt_tensor_free(p->si);
            clt_tensor_free(p->sv);
            p->si = p->sv = NULL;
        }
        return st;
    }
    int64_t nnz = p->si->numel, shape[2] = {1, nnz};
    if (m->sgrad_idx && m->sgrad_idx->numel > 0) {
        int64_t old = m->sgrad_idx->numel;
        const clt_tensor *vs[2] = {m->sgrad_val, p->sv};
        CLT__TRY(clt__reshape(m->sgrad_idx, 1, &old, &row, "clt_backward"));
        const clt_tensor *is[2] = {row, p->si};
        CLT__TRY(clt__cat(is, 2, 0, &idx, "clt_backward"));
        CLT__TRY(clt__cat(vs, 2, 0, &val, "clt_backward"));
        shape[1] = idx->numel;
        clt_tensor_free(row);
        row = NULL;
        CLT__TRY(clt__reshape(idx, 2, shape, &row, "clt_backward"));
    } else { /* copies: the parts may share the caller's indices or gradient */
        CLT__TRY(clt__clone(p->si, &idx, "clt_backward"));
        CLT__TRY(clt__reshape(idx, 2, shape, &row, "clt_backward"));
        CLT__TRY(clt__clone(p->sv, &val, "clt_backward"));
    }
    clt_tensor_free(p->si);
    clt_tensor_free(p->sv);
    p->si = row;
    p->sv = val;
    row = val = NULL;
done:
    clt_tensor_free(idx);
    clt_tensor_free(val);
    clt_tensor_free(row);
    return st;
}

/* Adds the pass's gradients to the leaves and to the retaining tensors:
 * first what each will hold (which may fail and then changes nothing),
 * then every one takes it at once. */
static clt_status commit_pending(pendlist *const *lists, int nlists)
{
    clt_status st = CLT_OK;
    for (int i = 0; i < nlists; i++)
        for (size_t k = 0; k < lists[i]->n && st == CLT_OK; k++) {
            pending *p = &lists[i]->v[k];
            if (p->done)
                continue;
            if (p->g)
                st = prepare(p, true);
            else if (p->si)
                st = prepare_sparse(p);
        }
    for (int i = 0; i < nlists; i++) {
        for (size_t k = 0; k < lists[i]->n && st == CLT_OK; k++) {
            pending *p = &lists[i]->v[k];
            if (p->done)
                continue;
            if (p->g) {
                st = commit_leaf(p->leaf, p->g);
                p->g = NULL;
                p->done = true;
            } else if (p->si) {
                clt__meta *m = meta_of(p->leaf);
                clt__scope_disown(p->si);
                clt__scope_disown(p->sv);
                clt_tensor_free(m->sgrad_idx);
                clt_tensor_free(m->sgrad_val);
                m->sgrad_idx = p->si;
                m->sgrad_val = p->sv;
                p->si = p->sv = NULL;
                p->done = true;
            }
        }
    }
    return st;
}

static void pend_free(pendlist *l)
{
    for (size_t k = 0; k < l->n; k++) {
        clt_tensor_free(l->v[k].g);
        clt_tensor_free(l->v[k].si);
        clt_tensor_free(l->v[k].sv);
        if (l->v[k].owned)
            clt__tensor_unref(l->v[k].leaf);
    }
    free(l->v);
}

/* Messages name clt_backward; run_node adds the node's name. */
static clt_status check_saved(const clt__node *n)
{
    if (n->released)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_backward: trying to backward through the graph a second time "
                          "(the node's saved tensors were freed by the first backward); pass "
                          "retain_graph = 1 to the first clt_backward to keep them");
    for (int k = 0; k < n->nsaved; k++) {
        uint64_t now = clt__version(n->saved[k]);
        if (now != n->saved_version[k]) {
            char s[160];
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "clt_backward: one of the tensors needed for gradient "
                              "computation has been modified by an in-place operation: %s %s, "
                              "saved by the node, is at version %llu; expected version %llu "
                              "instead",
                              clt_dtype_name(n->saved[k]->dtype),
                              clt__shape_str(s, sizeof s, n->saved[k]->ndim,
                                             n->saved[k]->shape),
                              (unsigned long long)now,
                              (unsigned long long)n->saved_version[k]);
        }
    }
    return CLT_OK;
}

typedef struct nodelist {
    clt__node **v;
    size_t n, cap;
} nodelist;

static bool list_push(nodelist *l, clt__node *x)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        clt__node **v = clt__realloc(l->v, cap, sizeof *v);
        if (v == NULL)
            return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return true;
}

/* The state of one pass: clt_backward's, or clt_autograd_grad's, which
 * takes the gradients of its inputs (targets) and commits none to the
 * leaves (only the retained ones, once it has succeeded). */
typedef struct target {
    const clt_tensor *t; /* the input */
    clt__node *node;     /* a computed input's node and output, else NULL */
    int slot;
    clt_tensor *g;       /* its gradient (owned) */
} target;

typedef struct pass {
    const char *fn;
    uint64_t id;
    bool retain;
    target *tg; /* clt_autograd_grad's inputs; NULL for clt_backward */
    size_t ntg;
    nodelist all, ready;
    pendlist leaves, retained;
} pass;

/* The pass running on this thread (for clt__sparse_grad_put). */
static __thread pass *cur_pass;

bool clt__sparse_grad_wanted(const clt__node *n, int k)
{
    const pass *p = cur_pass;
    const clt__edge *e = &n->in[k];
    if (p == NULL || creating || p->tg || e->leaf == NULL)
        return false;
    const clt_tensor *leaf = e->leaf;
    const clt__meta *m = meta_of(leaf);
    /* hooks see dense gradients; a leaf moved or converted since the
     * forward takes its gradient through prepare's conversions */
    if (m == NULL || m->hooks || leaf->dev != e->dev || leaf->dtype != e->dtype ||
        leaf->ndim != e->ndim)
        return false;
    for (int d = 0; d < e->ndim; d++)
        if (leaf->shape[d] != e->shape[d])
            return false;
    return pend_find(&p->leaves, leaf) != NULL;
}

clt_status clt__sparse_grad_put(const clt__node *n, int k, clt_tensor *rows, clt_tensor *values)
{
    pending *q = pend_find(&cur_pass->leaves, n->in[k].leaf);
    if (q->si == NULL) {
        q->si = rows;
        q->sv = values;
        return CLT_OK;
    }
    clt_tensor *ci = NULL, *cv = NULL;
    const clt_tensor *is[2] = {q->si, rows}, *vs[2] = {q->sv, values};
    clt_status st = clt__cat(is, 2, 0, &ci, "clt_backward");
    if (st == CLT_OK)
        st = clt__cat(vs, 2, 0, &cv, "clt_backward");
    clt_tensor_free(rows);
    clt_tensor_free(values);
    if (st != CLT_OK) {
        clt_tensor_free(ci);
        return st;
    }
    clt_tensor_free(q->si);
    clt_tensor_free(q->sv);
    q->si = ci;
    q->sv = cv;
    return CLT_OK;
}

static clt_tensor **gslot(clt__node *n, int s)
{
    return s == 0 ? &n->gbuf : &n->gmore[s - 1];
}

const clt_tensor *clt__node_grad(const clt__node *n, int s)
{
    return s == 0 ? n->gbuf : n->gmore[s - 1];
}

static void free_gradients(clt__node *n)
{
    for (int s = 0; s < n->nout; s++) {
        clt_tensor **g = gslot(n, s);
        clt_tensor_free(*g);
        *g = NULL;
    }
}

static clt_status pass_oom(const pass *p)
{
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", p->fn);
}

/* Every node reachable from the outputs, each once, with deps = the number
 * of edges into it from reachable nodes, and an entry per leaf reached,
 * with deps counted the same way. */
static clt_status collect(pass *p, clt_tensor *const *outs, size_t nouts)
{
    nodelist todo = {0};
    for (size_t i = 0; i < nouts; i++) {
        clt__node *root = meta_of(outs[i])->grad_fn;
        if (root == NULL || root->pass == p->id)
            continue;
        root->pass = p->id;
        root->deps = 0;
        root->needed = root->target = false;
        if (!list_push(&p->all, root) || !list_push(&todo, root))
            goto oom;
    }
    while (todo.n > 0) {
        clt__node *x = todo.v[--todo.n];
        for (int k = 0; k < x->nin; k++) {
            clt__edge *e = &x->in[k];
            if (e->leaf) {
                pending *q = pend_slot(&p->leaves, e->leaf);
                if (q == NULL)
                    goto oom;
                q->deps++;
            }
            clt__node *c = e->node;
            if (c == NULL)
                continue;
            if (c->pass != p->id) {
                c->pass = p->id;
                c->deps = 0;
                c->needed = c->target = false;
                if (!list_push(&p->all, c) || !list_push(&todo, c))
                    goto oom;
            }
            c->deps++;
        }
    }
    free(todo.v);
    return CLT_OK;
oom:
    free(todo.v);
    return pass_oom(p);
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = (*(clt__node *const *)a)->seq, y = (*(clt__node *const *)b)->seq;
    return x < y ? -1 : x > y;
}

/* clt_autograd_grad: marks the inputs among the leaves and nodes reached,
 * then the nodes that lead to one (only those run).  An input's node comes
 * before (has a smaller seq than) every node that consumed it. */
static void mark_targets(pass *p)
{
    for (size_t k = 0; k < p->ntg; k++) {
        target *t = &p->tg[k];
        if (t->node) {
            if (t->node->pass == p->id)
                t->node->target = true;
        } else {
            pending *q = pend_find(&p->leaves, t->t);
            if (q)
                q->target = true;
        }
    }
    if (p->all.n > 1)
        qsort(p->all.v, p->all.n, sizeof *p->all.v, by_seq);
    for (size_t i = 0; i < p->all.n; i++) {
        clt__node *x = p->all.v[i];
        for (int k = 0; k < x->nin && !x->needed; k++) {
            const clt__edge *e = &x->in[k];
            if (e->leaf)
                x->needed = pend_find(&p->leaves, e->leaf)->target;
            else if (e->node)
                x->needed = e->node->needed || e->node->target;
        }
    }
}

/* "hook on the float32 [3] tensor that MulBackward0 computed" */
static clt_status hook_failed(const pass *p, clt_status st, const char *kind,
                              const clt_tensor *g, const clt__node *x)
{
    char s[160];
    if (clt_last_error()[0] == '\0')
        clt__error(st, "the hook returned %s", clt_status_name(st));
    clt__shape_str(s, sizeof s, g->ndim, g->shape);
    if (x)
        return clt__error_prefix(st, "%s: %s on the %s %s tensor that %s computed", p->fn, kind,
                                 clt_dtype_name(g->dtype), s, x->name);
    return clt__error_prefix(st, "%s: %s on the %s %s leaf tensor", p->fn, kind,
                             clt_dtype_name(g->dtype), s);
}

/* Checks a hook's replacement r of g, as torch does ("hook has changed the
 * size of value"). */
static clt_status check_replacement(const clt_tensor *g, const clt_tensor *r)
{
    char s1[160], s2[160];
    bool same = g->ndim == r->ndim;
    for (int d = 0; same && d < g->ndim; d++)
        same = g->shape[d] == r->shape[d];
    if (!same)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "the hook changed the size of the gradient from %s to %s",
                          clt__shape_str(s1, sizeof s1, g->ndim, g->shape),
                          clt__shape_str(s2, sizeof s2, r->ndim, r->shape));
    if (g->dtype != r->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "the hook changed the type of the gradient from %s to %s",
                          clt_dtype_name(g->dtype), clt_dtype_name(r->dtype));
    if (g->dev != r->dev)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "the hook moved the gradient to another device");
    return CLT_OK;
}

/* Runs the tensor hooks and retain hooks of output `slot` of x (x NULL: a
 * leaf's, whose hooks all have slot 0) on *g, in registration order.  Each
 * hook is held while it runs, so that removing it from inside is safe. */
static clt_status run_hooks(pass *p, clt_hook *list, int slot, clt_tensor **g,
                            const clt__node *x)
{
    clt_status st = CLT_OK;
    clt_hook *h = list;
    while (h && st == CLT_OK && *g) {
        if (h->removed || h->slot != slot || h->kind == HOOK_POST) {
            h = h->next;
            continue;
        }
        if (h->kind == HOOK_RETAIN) {
            clt_tensor *a = NULL;
            if (h->retainer) {
                st = clt__alias_grad(*g, &a);
                if (st == CLT_OK)
                    st = pend(&p->retained, h->retainer, a, true);
            }
            h = h->next;
            continue;
        }
        clt_tensor *r = NULL;
        __atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
        clt__ok();
        st = h->fn(h->user, *g, &r);
        if (st == CLT_OK && r != NULL && r != *g)
            st = check_replacement(*g, r);
        if (st != CLT_OK) {
            if (r != *g)
                clt_tensor_free(r);
            st = hook_failed(p, st, "hook", *g, x);
        } else if (r != NULL && r != *g) {
            clt__scope_disown(r);
            clt_tensor_free(*g);
            *g = r;
        }
        clt_hook *next = h->next; /* read while h is held */
        hook_unref(h);
        h = next;
    }
    return st;
}

/* A leaf whose every incoming edge has run: its hooks, then, when it has
 * post-accumulate hooks, its gradient right away and those hooks. */
static clt_status leaf_ready(pass *p, pending *q)
{
    q->readied = true;
    if (p->tg || q->g == NULL)
        return CLT_OK;
    clt__meta *m = meta_of(q->leaf);
    clt_status st = run_hooks(p, m->hooks, 0, &q->g, NULL);
    bool post = false;
    for (clt_hook *h = m->hooks; h && !post; h = h->next)
        post = h->kind == HOOK_POST && !h->removed;
    if (st != CLT_OK || !post || q->g == NULL)
        return st;
    st = prepare(q, true);
    if (st == CLT_OK)
        st = commit_leaf(q->leaf, q->g);
    q->g = NULL;
    q->done = true;
    if (st != CLT_OK)
        return clt__error_in(st, p->fn);
    const clt_tensor *grad = m->grad;
    clt_hook *h = m->hooks;
    while (h && st == CLT_OK) {
        if (h->kind != HOOK_POST || h->removed) {
            h = h->next;
            continue;
        }
        __atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
        clt__ok();
        st = h->post(h->user, q->leaf);
        if (st != CLT_OK)
            st = hook_failed(p, st, "post-accumulate-grad hook", grad, NULL);
        clt_hook *next = h->next;
        hook_unref(h);
        h = next;
    }
    return st;
}

/* clt_autograd_grad: takes the gradients of the inputs that are x's
 * outputs, as they reach x (before x's hooks, as torch 1.13 does). */
static clt_status capture(pass *p, clt__node *x)
{
    for (size_t k = 0; k < p->ntg; k++) {
        target *t = &p->tg[k];
        const clt_tensor *g = t->node == x ? *gslot(x, t->slot) : NULL;
        if (g && t->g == NULL && clt__alias_grad(g, &t->g) != CLT_OK)
            return clt__error_in(CLT_ERR_OUT_OF_HOST_MEMORY, p->fn);
    }
    return CLT_OK;
}

/* Anomaly detection's check of a formula's results: the first gradient
 * (of an input the pass follows) that holds a NaN fails the pass with
 * torch's message.  Reads each back, so it waits for the formula. */
static clt_status check_nan_results(const pass *p, const clt__node *x, clt_tensor *const *gin)
{
    clt_status st = CLT_OK;
    bool was = grad_disabled;
    grad_disabled = true; /* the check records nothing, even under create_graph */
    for (int k = 0; k < x->nin && st == CLT_OK; k++) {
        const clt_tensor *g = gin[k];
        if (g == NULL || !(x->in[k].node || x->in[k].leaf) || !clt__dtype_is_float(g->dtype) ||
            g->numel == 0)
            continue;
        clt_tensor *nan = NULL, *any = NULL;
        double v = 0;
        st = clt_isnan(g, &nan);
        if (st == CLT_OK)
            st = clt_any(nan, &any);
        if (st == CLT_OK)
            st = clt_tensor_item(any, &v);
        clt_tensor_free(any);
        clt_tensor_free(nan);
        if (st != CLT_OK)
            st = clt__error_in_step(st, p->fn, x->name);
        else if (v != 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Function '%s' returned nan values in its %dth output.", p->fn,
                            x->name, k);
    }
    grad_disabled = was;
    return st;
}

/* Runs node x: its hooks, its formula, then hands each input's gradient
 * on. */
static clt_status run_node(pass *p, clt__node *x)
{
    clt_status st = CLT_OK;
    bool own_message = false; /* a hook's failure: named already */
    clt_tensor *gin_small[8], **gin = gin_small;
    if (x->nin > 8) {
        gin = clt__calloc((size_t)x->nin, sizeof *gin);
        if (gin == NULL)
            return pass_oom(p);
    } else {
        memset(gin_small, 0, sizeof gin_small);
    }
    bool any = false;
    for (int s = 0; s < x->nout; s++)
        any = any || *gslot(x, s) != NULL;
    bool run = p->tg == NULL || x->needed;
    if (p->tg && x->target) {
        own_message = true;
        CLT__TRY(capture(p, x));
        own_message = false;
    }
    if (any && run) {
        own_message = true;
        for (int s = 0; s < x->nout; s++)
            CLT__TRY(run_hooks(p, x->hooks, s, gslot(x, s), x));
        own_message = false;
        any = false;
        for (int s = 0; s < x->nout; s++)
            any = any || *gslot(x, s) != NULL;
    }
    if (any && run) {
        CLT__TRY(check_saved(x));
        /* A formula computes with the plain ops under clt_backward's name;
         * the node's name says where they ran (done: below), as it does
         * for the reductions that bring its gradients to its inputs. */
        CLT__TRY(creating ? backward_creating(x, gin) : x->backward(x, x->gbuf, gin));
        if (clt_is_anomaly_enabled() && clt_is_anomaly_check_nan_enabled()) {
            own_message = true;
            CLT__TRY(check_nan_results(p, x, gin));
            own_message = false;
        }
    }
    free_gradients(x);
    if (!p->retain && run) {
        release_saved(x);
        /* sticky: a later pass that reaches x without a gradient (an
         * unused input of the node above) must not forget that the first
         * one freed x's state (a ctx-only node would run on freed state) */
        x->released = x->released || x->nsaved > 0;
        if (x->wrapped) { /* CopySlices: its in-place node's state too */
            release_saved(x->wrapped);
            x->wrapped->released = x->wrapped->released || x->wrapped->nsaved > 0;
        }
        if (x->ctx_free && !x->ctx_kept) {
            x->ctx_free(x->ctx);
            x->ctx = NULL;
            x->ctx_free = NULL;
            x->released = true;
        }
    }
    for (int k = 0; k < x->nin; k++) {
        clt__edge *e = &x->in[k];
        pending *q = e->leaf ? pend_find(&p->leaves, e->leaf) : NULL;
        if (gin[k] != NULL && (e->node || e->leaf)) {
            clt_tensor *g = gin[k];
            gin[k] = NULL;
            st = conform(&g, e);
            if (st != CLT_OK) {
                clt_tensor_free(g); /* conform hands g back when it fails */
                goto done;
            }
            if (q && p->tg && !q->target)
                clt_tensor_free(g);
            else if (q)
                CLT__TRY(accumulate(&q->g, g));
            else
                CLT__TRY(accumulate(gslot(e->node, e->slot), g));
        }
        if (q && --q->deps == 0) {
            own_message = true;
            CLT__TRY(leaf_ready(p, q));
            own_message = false;
        }
        if (e->node && --e->node->deps == 0 && !list_push(&p->ready, e->node)) {
            st = pass_oom(p);
            goto done;
        }
    }
done:
    if (!own_message)
        clt__error_in_step(st, p->fn, x->name);
    for (int k = 0; k < x->nin; k++)
        clt_tensor_free(gin[k]);
    if (gin != gin_small)
        free(gin);
    return st;
}

/* Runs a pass from the outputs with their gradients seeds (taken): every
 * node reached (clt_autograd_grad: those that lead to an input), newest
 * first among those whose consumers are all done, so that the order, and
 * so every sum of gradients, is the same on every run.  clt_backward's pass
 * commits its gradients; clt_autograd_grad's leaves them in its targets,
 * its leaves' entries and its retained list. */
static clt_status run_pass_in(pass *p, clt_tensor *const *outs, clt_tensor **seeds, size_t n);

/* The formulas run in the dtypes their forward recorded: autocast (an
 * open region of this thread) leaves the ops they call alone, as torch's
 * backward runs outside autocast. */
static clt_status run_pass(pass *p, clt_tensor *const *outs, clt_tensor **seeds, size_t n)
{
    clt__autocast_suspend(1);
    pass *outer = cur_pass;
    cur_pass = p;
    clt_status st = run_pass_in(p, outs, seeds, n);
    cur_pass = outer;
    clt__autocast_suspend(0);
    return st;
}

static clt_status run_pass_in(pass *p, clt_tensor *const *outs, clt_tensor **seeds, size_t n)
{
    clt_status st = CLT_OK;
    p->id = __atomic_add_fetch(&pass_seq, 1, __ATOMIC_RELAXED);
    CLT__TRY(collect(p, outs, n));
    for (size_t i = 0; i < n; i++) {
        clt__meta *m = meta_of(outs[i]);
        clt_tensor *g = seeds[i];
        seeds[i] = NULL;
        if (m->grad_fn)
            CLT__TRY(accumulate(gslot(m->grad_fn, m->slot), g));
        else
            CLT__TRY(pend(&p->leaves, outs[i], g, false));
    }
    if (p->tg)
        mark_targets(p);
    for (size_t i = 0; i < p->all.n; i++) {
        clt__node *x = p->all.v[i];
        if (x->deps == 0 && !list_push(&p->ready, x)) {
            st = pass_oom(p);
            goto done;
        }
    }
    while (p->ready.n > 0) {
        size_t best = 0;
        for (size_t k = 1; k < p->ready.n; k++)
            if (p->ready.v[k]->seq > p->ready.v[best]->seq)
                best = k;
        clt__node *x = p->ready.v[best];
        p->ready.v[best] = p->ready.v[--p->ready.n];
        CLT__TRY(run_node(p, x));
    }
    for (size_t k = 0; k < p->leaves.n; k++) /* outputs that are leaves */
        if (!p->leaves.v[k].readied)
            CLT__TRY(leaf_ready(p, &p->leaves.v[k]));
    if (p->tg == NULL) {
        pendlist *lists[2] = {&p->leaves, &p->retained};
        st = commit_pending(lists, 2);
    }
done:
    for (size_t i = 0; i < n; i++) {
        clt_tensor_free(seeds[i]);
        seeds[i] = NULL;
    }
    return st;
}

static void pass_free(pass *p)
{
    pend_free(&p->leaves);
    pend_free(&p->retained);
    for (size_t k = 0; k < p->all.n; k++)
        free_gradients(p->all.v[k]);
    free(p->all.v);
    free(p->ready.v);
}

static clt_status seed_gradient(const clt_tensor *t, const clt_tensor *grad, clt_tensor **out,
                                const char *fn)
{
    *out = NULL;
    if (grad == NULL) {
        if (t->numel != 1) {
            char s[160];
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: grad can be implicitly created only for scalar "
                              "outputs (this output has shape %s); pass the output's gradient",
                              fn, clt__shape_str(s, sizeof s, t->ndim, t->shape));
        }
        if (clt__dtype_is_complex(t->dtype))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: grad can be implicitly created only for real scalar outputs "
                              "but got %s; pass the output's gradient",
                              fn, clt_dtype_name(t->dtype));
        return clt__full(t->dev, t->dtype, t->ndim, t->shape, 1.0, out);
    }
    clt_status st = clt__same_device(t, grad, fn);
    if (st != CLT_OK)
        return st;
    bool same = t->ndim == grad->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->shape[d] == grad->shape[d];
    if (!same) {
        char s1[160], s2[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: mismatch in shape: the gradient has a shape of %s and "
                          "the output a shape of %s",
                          fn, clt__shape_str(s1, sizeof s1, grad->ndim, grad->shape),
                          clt__shape_str(s2, sizeof s2, t->ndim, t->shape));
    }
    if (clt__dtype_is_complex(grad->dtype) && !clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: the gradient of a real output must be real, not %s", fn,
                          clt_dtype_name(grad->dtype));
    if (!clt__dtype_is_float(grad->dtype) && !clt__dtype_is_complex(grad->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: the gradient must be floating point or complex, not %s", fn,
                          clt_dtype_name(grad->dtype));
    if (grad->dtype != t->dtype && clt__dtype_is_complex(t->dtype) && !creating)
        return clt__complex_to_real(grad, t->dtype, out, fn);
    if (grad->dtype != t->dtype)
        return creating ? clt__to_dtype_rec(fn, grad, t->dtype, out)
                        : clt__to_dtype(grad, t->dtype, out, fn);
    return clt__alias_grad(grad, out);
}

/* Holds the outputs' nodes for the pass, so that a hook releasing an
 * output does not free the graph under it. */
static void hold_roots(clt_tensor *const *outs, size_t n, int delta)
{
    for (size_t i = 0; i < n; i++) {
        clt__node *x = meta_of(outs[i])->grad_fn;
        if (x && delta > 0)
            __atomic_add_fetch(&x->refs, 1, __ATOMIC_RELAXED);
    }
    for (size_t i = 0; i < n && delta < 0; i++)
        node_unref(meta_of(outs[i])->grad_fn);
}

/* Whether a pass with these options keeps the graph's saved tensors: as
 * torch, retain_graph defaults to create_graph. */
static bool retains(const clt_grad_opts *o)
{
    return o->retain_graph > 0 || (o->retain_graph == 0 && o->create_graph);
}

clt_status clt_backward(clt_tensor *t, const clt_tensor *grad, int retain_graph)
{
    clt_grad_opts o = {retain_graph ? 1 : -1, 0, 0};
    return clt_backward_ex(t, grad, &o);
}

clt_status clt_backward_ex(clt_tensor *t, const clt_tensor *grad, const clt_grad_opts *opts)
{
    static const clt_grad_opts defaults = {0, 0, 0};
    const clt_grad_opts *o = opts ? opts : &defaults;
    CLT__REQUIRE_ARG(t, "clt_backward");
    clt_status rs = refresh(t);
    if (rs != CLT_OK)
        return clt__error_in(rs, "clt_backward");
    clt__meta *m = meta_of(t);
    if (m == NULL || !m->requires_grad)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_backward: the tensor does not require grad and has no grad_fn "
                          "(call clt_set_requires_grad on the leaves before computing it, and "
                          "compute it with recording on: ops under clt_set_grad_enabled(0) "
                          "record nothing%s)",
                          clt_is_grad_enabled() ? "" : ", and recording is off on this thread now");
    /* Formulas compute with plain ops; nothing they make is recorded,
     * unless the pass creates a graph. */
    bool was_disabled = grad_disabled, was_creating = creating, was_passing = passing;
    grad_disabled = !o->create_graph;
    creating = o->create_graph != 0;
    passing = true;
    clt_tensor *g0 = NULL;
    clt_status st = seed_gradient(t, grad, &g0, "clt_backward");
    pass p = {.fn = "clt_backward", .retain = retains(o)};
    if (st == CLT_OK) {
        hold_roots(&t, 1, 1);
        st = run_pass(&p, &t, &g0, 1);
        pass_free(&p);
        hold_roots(&t, 1, -1);
    }
    grad_disabled = was_disabled;
    creating = was_creating;
    passing = was_passing;
    return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_backward");
}

/* clt_autograd_grad's results: each input's gradient, a tensor of its own. */
static clt_status take_results(pass *p, clt_tensor **grads)
{
    clt_status st = CLT_OK;
    for (size_t k = 0; k < p->ntg && st == CLT_OK; k++) {
        target *t = &p->tg[k];
        size_t j = 0;
        while (j < k && p->tg[j].t != t->t)
            j++;
        if (j < k) { /* the same input twice */
            if (grads[j])
                st = clt__clone(grads[j], &grads[k], p->fn);
            continue;
        }
        if (t->node == NULL) {
            pending *q = pend_find(&p->leaves, t->t);
            if (q && q->g) {
                st = prepare(q, false);
                grads[k] = q->g;
                q->g = NULL;
            }
        } else if (t->g) {
            st = make_keepable(&t->g);
            grads[k] = t->g;
            t->g = NULL;
        }
    }
    return st;
}

clt_status clt_autograd_grad(clt_tensor *const *outputs, size_t noutputs,
                             clt_tensor *const *grad_outputs, clt_tensor *const *inputs,
                             size_t ninputs, int retain_graph, int allow_unused,
                             clt_tensor **grads)
{
    clt_grad_opts o = {retain_graph ? 1 : -1, 0, allow_unused};
    return clt_autograd_grad_ex(outputs, noutputs, grad_outputs, inputs, ninputs, &o, grads);
}

clt_status clt_autograd_grad_ex(clt_tensor *const *outputs, size_t noutputs,
                                clt_tensor *const *grad_outputs, clt_tensor *const *inputs,
                                size_t ninputs, const clt_grad_opts *opts, clt_tensor **grads)
{
    static const clt_grad_opts defaults = {0, 0, 0};
    const clt_grad_opts *o = opts ? opts : &defaults;
    const char *fn = "clt_autograd_grad";
    int allow_unused = o->allow_unused;
    CLT__REQUIRE_ARG(grads, fn);
    for (size_t k = 0; inputs && k < ninputs; k++)
        grads[k] = NULL;
    CLT__REQUIRE_ARG(outputs, fn);
    CLT__REQUIRE_ARG(inputs, fn);
    if (noutputs == 0 || ninputs == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: needs at least one output and one input (got %zu and %zu)", fn,
                          noutputs, ninputs);
    for (size_t i = 0; i < noutputs; i++) {
        if (outputs[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: output %zu is NULL", fn, i);
        if (refresh(outputs[i]) != CLT_OK)
            return clt__error_in(CLT_ERR_OUT_OF_HOST_MEMORY, fn);
        if (!requires_grad(outputs[i]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: element %zu of the outputs does not require grad and has "
                              "no grad_fn",
                              fn, i);
    }
    for (size_t k = 0; k < ninputs; k++) {
        if (inputs[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: input %zu is NULL", fn, k);
        if (refresh(inputs[k]) != CLT_OK)
            return clt__error_in(CLT_ERR_OUT_OF_HOST_MEMORY, fn);
        if (!requires_grad(inputs[k]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: input %zu, one of the differentiated tensors, does not "
                              "require grad",
                              fn, k);
    }
    clt_status st = CLT_OK;
    target *tg = clt__calloc(ninputs, sizeof *tg);
    clt_tensor **seeds = clt__calloc(noutputs, sizeof *seeds);
    pass p = {.fn = fn, .retain = retains(o), .tg = tg, .ntg = ninputs};
    bool was_disabled = grad_disabled, was_creating = creating, was_passing = passing;
    if (tg == NULL || seeds == NULL) {
        st = pass_oom(&p);
        goto done;
    }
    grad_disabled = !o->create_graph;
    creating = o->create_graph != 0;
    passing = true;
    for (size_t i = 0; i < noutputs; i++)
        CLT__TRY(seed_gradient(outputs[i], grad_outputs ? grad_outputs[i] : NULL, &seeds[i], fn));
    for (size_t k = 0; k < ninputs; k++) {
        clt__meta *m = meta_of(inputs[k]);
        tg[k].t = inputs[k];
        tg[k].node = m->grad_fn;
        tg[k].slot = m->slot;
    }
    hold_roots(outputs, noutputs, 1);
    st = run_pass(&p, outputs, seeds, noutputs);
    if (st == CLT_OK)
        st = take_results(&p, grads);
    hold_roots(outputs, noutputs, -1);
    for (size_t k = 0; st == CLT_OK && !allow_unused && k < ninputs; k++) {
        if (grads[k] == NULL) {
            char s[160];
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: input %zu (%s %s), one of the differentiated tensors, appears "
                            "to not have been used in the graph; pass allow_unused = 1 if this "
                            "is the desired behavior",
                            fn, k, clt_dtype_name(inputs[k]->dtype),
                            clt__shape_str(s, sizeof s, inputs[k]->ndim, inputs[k]->shape));
        }
    }
    if (st == CLT_OK) { /* the retained gradients, once nothing can fail but this */
        pendlist *retained = &p.retained;
        st = commit_pending(&retained, 1);
    }
done:
    pass_free(&p);
    grad_disabled = was_disabled;
    creating = was_creating;
    passing = was_passing;
    for (size_t k = 0; tg && k < ninputs; k++)
        clt_tensor_free(tg[k].g);
    for (size_t i = 0; seeds && i < noutputs; i++)
        clt_tensor_free(seeds[i]);
    free(tg);
    free(seeds);
    if (st != CLT_OK) {
        for (size_t k = 0; k < ninputs; k++) {
            clt_tensor_free(grads[k]);
            grads[k] = NULL;
        }
        return clt__error_in(st, fn);
    }
    return clt__ok();
}

/* ---- retain_grad and hooks ------------------------------------------------------- */

static clt_status hook_add(clt_tensor *t, int kind, clt_tensor_hook_fn fn,
                           clt_post_accumulate_grad_hook_fn post, void *user, clt_hook **handle,
                           const char *name)
{
    if (handle)
        *handle = NULL;
    CLT__REQUIRE_ARG(t, name);
    if (kind != HOOK_RETAIN && fn == NULL && post == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'fn' is NULL", name);
    if (refresh(t) != CLT_OK)
        return clt__error_in(CLT_ERR_OUT_OF_HOST_MEMORY, name);
    clt__meta *m = meta_of(t);
    if (!requires_grad(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cannot register a hook on a tensor that does not require "
                          "gradients",
                          name);
    if (kind == HOOK_POST && m->grad_fn)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: post accumulate grad hooks cannot be registered on non-leaf "
                          "tensors (this one was computed by %s)",
                          name, m->grad_fn->name);
    clt_hook *h = clt__calloc(1, sizeof *h);
    if (h == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
    h->refs = handle ? 2 : 1;
    h->kind = kind;
    h->fn = fn;
    h->post = post;
    h->user = user;
    h->slot = m->grad_fn ? m->slot : 0;
    clt_hook **list = m->grad_fn ? &m->grad_fn->hooks : &m->hooks;
    /* Drops the removed hooks that nothing runs now (their list's reference
     * is the last), so that registering and removing every step does not
     * grow the list. */
    for (clt_hook **q = list; *q;) {
        clt_hook *x = *q;
        if (x->removed && __atomic_load_n(&x->refs, __ATOMIC_ACQUIRE) == 1) {
            *q = x->next;
            hook_destroy(x);
        } else {
            q = &x->next;
        }
    }
    if (kind == HOOK_RETAIN)
        h->retainer = t;
    hook_append(list, h);
    if (handle)
        *handle = h;
    return clt__ok();
}

clt_status clt_tensor_register_hook(clt_tensor *t, clt_tensor_hook_fn fn, void *user,
                                    clt_hook **handle)
{
    return hook_add(t, HOOK_TENSOR, fn, NULL, user, handle, "clt_tensor_register_hook");
}

clt_status clt_tensor_register_post_accumulate_grad_hook(clt_tensor *t,
                                                         clt_post_accumulate_grad_hook_fn fn,
                                                         void *user, clt_hook **handle)
{
    return hook_add(t, HOOK_POST, NULL, fn, user, handle,
                    "clt_tensor_register_post_accumulate_grad_hook");
}

clt_status clt__tensor_register_hook_owned(clt_tensor *t, clt_tensor_hook_fn fn, void *user,
                                          void (*free_user)(void *), const char *name)
{
    clt_hook *h = NULL;
    clt_status st = hook_add(t, HOOK_TENSOR, fn, NULL, user, &h, name);
    if (st != CLT_OK)
        return st;
    h->free_user = free_user;
    hook_unref(h); /* the list's reference alone */
    return CLT_OK;
}

clt_hook *clt__hook_handle_new(void)
{
    clt_hook *h = clt__calloc(1, sizeof *h);
    if (h != NULL)
        h->refs = 2;
    return h;
}

bool clt__hook_removed(const clt_hook *h)
{
    return h->removed;
}

void clt__hook_retain(clt_hook *h)
{
    __atomic_add_fetch(&h->refs, 1, __ATOMIC_RELAXED);
}

void clt__hook_release(clt_hook *h)
{
    hook_unref(h);
}

void clt_hook_remove(clt_hook *handle)
{
    if (handle == NULL)
        return;
    handle->removed = true;
    hook_unref(handle);
}

clt_status clt_retain_grad(clt_tensor *t)
{
    CLT__REQUIRE_ARG(t, "clt_retain_grad");
    if (refresh(t) != CLT_OK)
        return clt__error_in(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_retain_grad");
    clt__meta *m = meta_of(t);
    if (!requires_grad(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_retain_grad: can't retain_grad on a tensor that does not "
                          "require grad");
    if (m->grad_fn == NULL || m->retains_grad)
        return clt__ok();
    clt_status st = hook_add(t, HOOK_RETAIN, NULL, NULL, NULL, NULL, "clt_retain_grad");
    if (st == CLT_OK)
        m->retains_grad = true;
    return st;
}

int clt_retains_grad(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    return m && m->retains_grad;
}

/* ---- nodes of several outputs (clt_checkpoint) ----------------------------------- */

static bool differentiable(clt_dtype dt)
{
    return clt__dtype_is_float(dt) || clt__dtype_is_complex(dt);
}

clt_status clt__record_outputs(clt_tensor *const *outs, int nout, const char *name,
                               clt__backward_fn bw, int nin, const clt_tensor *const *in,
                               void *ctx, void (*ctx_free)(void *), clt__node **node)
{
    *node = NULL;
    if (nin > 0 && clt__mark_views(in[0], outs, nout, name) != CLT_OK) {
        ctx_free(ctx);
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    }
    if (!clt__grad_needed(nin, in)) {
        ctx_free(ctx);
        return CLT_OK;
    }
    clt__node *n = node_new(name, bw, nin, in, 0, NULL, NULL);
    if (n == NULL) {
        ctx_free(ctx);
        goto oom;
    }
    n->ctx = ctx;
    n->ctx_free = ctx_free;
    n->nout = nout;
    if (nout > 1 && (n->gmore = clt__calloc((size_t)nout - 1, sizeof *n->gmore)) == NULL) {
        node_unref(n);
        goto oom;
    }
    int attached = 0;
    /* Floating and complex outputs take part, as in clt__record. */
    for (int s = 0; s < nout; s++)
        if (differentiable(outs[s]->dtype) && meta_get(outs[s]) == NULL) {
            node_unref(n);
            goto oom;
        }
    for (int s = 0; s < nout; s++) {
        if (!differentiable(outs[s]->dtype))
            continue;
        clt__meta *m = outs[s]->meta;
        m->requires_grad = true;
        m->grad_fn = n;
        m->slot = s;
        if (attached++ > 0)
            __atomic_add_fetch(&n->refs, 1, __ATOMIC_RELAXED);
    }
    if (attached == 0)
        node_unref(n);
    else
        *node = n;
    return CLT_OK;
oom:
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory recording the graph",
                      name);
}

bool clt__requires_grad(const clt_tensor *t)
{
    return requires_grad(t);
}

clt_status clt__node_save(clt__node *n, int nsaved, const clt_tensor *const *saved)
{
    if (n->nsaved + nsaved > CLT__SAVED_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: saves more than %d tensors", n->name,
                          CLT__SAVED_MAX);
    for (int k = 0; k < nsaved; k++) {
        clt_status st = save_view(saved[k], &n->saved[n->nsaved]);
        if (st != CLT_OK)
            return st;
        /* one of n's outputs keeps its history in a pass that creates a
         * graph (clt__twice), as clt__record's output does */
        const clt__meta *m = meta_of(saved[k]);
        n->saved_from[n->nsaved] = m && m->grad_fn == n ? (signed char)(-1 - m->slot) : 0;
        n->saved_version[n->nsaved++] = clt__version(saved[k]);
    }
    return CLT_OK;
}
