/* engine.c: reverse-mode autograd: per-tensor state, recording ops into a
 * graph of nodes, and the backward pass that walks it and accumulates
 * gradients into the leaves. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

typedef struct clt__meta {
    bool requires_grad;
    clt_tensor *grad;   /* a leaf's accumulated gradient (owned) */
    clt__node *grad_fn; /* a non-leaf's node (a reference) */
} clt__meta;

static __thread bool grad_disabled;
static uint64_t node_seq;  /* atomic */
static uint64_t pass_seq;  /* atomic */

static clt__meta *meta_of(const clt_tensor *t)
{
    return t ? (clt__meta *)t->meta : NULL;
}

static bool requires_grad(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    return m && m->requires_grad;
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
        for (int k = 0; k < x->nin; k++) {
            clt__tensor_unref(x->in[k].leaf);
            clt__node *c = x->in[k].node;
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
    clt_tensor_free(m->grad);
    node_unref(m->grad_fn);
    free(m);
}

static clt__meta *meta_get(clt_tensor *t)
{
    if (t->meta == NULL) {
        clt__meta *m = clt__calloc(1, sizeof *m);
        if (m == NULL)
            return NULL;
        t->meta = m;
        t->meta_free = meta_free;
    }
    return t->meta;
}

bool clt__grad_needed(int nin, const clt_tensor *const *in)
{
    if (grad_disabled)
        return false;
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

/* A new node with the inputs' edges as they are now and saved views of
 * `saved`; NULL when memory runs out. */
static clt__node *node_new(const char *name, clt__backward_fn bw, int nin,
                           const clt_tensor *const *in, int nsaved,
                           const clt_tensor *const *saved)
{
    clt__node *n = clt__calloc(1, sizeof *n + (size_t)nin * sizeof n->in[0]);
    if (n == NULL)
        return NULL;
    n->refs = 1;
    n->seq = __atomic_add_fetch(&node_seq, 1, __ATOMIC_RELAXED);
    n->name = name;
    n->backward = bw;
    n->nin = nin;
    for (int k = 0; k < nsaved; k++) {
        if (save_view(saved[k], &n->saved[k]) != CLT_OK) {
            n->nsaved = k;
            node_unref(n);
            return NULL;
        }
        n->saved_version[k] = clt__version(saved[k]);
        n->nsaved = k + 1;
    }
    for (int k = 0; k < nin; k++) {
        const clt_tensor *x = in[k];
        clt__edge *e = &n->in[k];
        e->dev = x->dev;
        e->dtype = x->dtype;
        e->ndim = x->ndim;
        memcpy(e->shape, x->shape, sizeof e->shape);
        clt__meta *xm = meta_of(x);
        if (xm == NULL || !xm->requires_grad)
            continue;
        if (xm->grad_fn) {
            e->node = xm->grad_fn;
            __atomic_add_fetch(&e->node->refs, 1, __ATOMIC_RELAXED);
        } else {
            /* The graph holds the leaf, as PyTorch's AccumulateGrad does. */
            e->leaf = clt_tensor_retain((clt_tensor *)x);
        }
    }
    return n;
}

clt_status clt__record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                       int nin, const clt_tensor *const *in, int nsaved,
                       const clt_tensor *const *saved, clt__node **node)
{
    if (node)
        *node = NULL;
    if (st != CLT_OK || !clt__grad_needed(nin, in) || !clt__dtype_is_float((*out)->dtype))
        return st;
    clt__meta *m = meta_get(*out);
    clt__node *n = m ? node_new(name, bw, nin, in, nsaved, saved) : NULL;
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

clt_status clt__inplace_node(const char *name, clt__backward_fn bw, int nin,
                             const clt_tensor *const *in, clt__node **node)
{
    *node = NULL;
    if (!clt__grad_needed(nin, in))
        return CLT_OK;
    if (meta_get((clt_tensor *)in[0]) != NULL)
        *node = node_new(name, bw, nin, in, 0, NULL);
    if (*node == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory recording the graph", name);
    return CLT_OK;
}

void clt__inplace_commit(clt_tensor *t, clt__node *n)
{
    if (n == NULL)
        return;
    clt__meta *m = t->meta; /* made by clt__inplace_node */
    clt__node *old = m->grad_fn;
    m->grad_fn = n;
    m->requires_grad = true;
    node_unref(old); /* the new node's first edge holds it now */
}

void clt__inplace_drop(clt__node *n)
{
    node_unref(n);
}

clt_status clt__check_inplace(const clt_tensor *t, const char *fn)
{
    clt__meta *m = meta_of(t);
    if (!grad_disabled && m && m->requires_grad && m->grad_fn == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a leaf tensor that requires grad is being used in an in-place "
                          "operation; use clt_set_grad_enabled(0) around it (torch.no_grad) or "
                          "update a clt_detach view",
                          fn);
    return CLT_OK;
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

clt_status clt_set_requires_grad(clt_tensor *t, int on)
{
    CLT__REQUIRE_ARG(t, "clt_set_requires_grad");
    clt__meta *m = meta_of(t);
    if (m && m->grad_fn) {
        if (on)
            return clt__ok();
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_set_requires_grad: you can only change requires_grad flags of "
                          "leaf tensors; to use a computed tensor without gradients, take "
                          "clt_detach of it");
    }
    if (on && !clt__dtype_is_float(t->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "clt_set_requires_grad: only tensors of floating point dtype can "
                          "require gradients (this one is %s)",
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
    return t != NULL && (m == NULL || m->grad_fn == NULL);
}

const char *clt_grad_fn_name(const clt_tensor *t)
{
    clt__meta *m = meta_of(t);
    return m && m->grad_fn ? m->grad_fn->name : NULL;
}

clt_status clt_grad(const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_grad");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_grad");
    clt__meta *m = meta_of(t);
    if (m == NULL || m->grad == NULL)
        return clt__ok();
    clt_status st = clt__alias(m->grad, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_zero_grad(clt_tensor *t, int set_to_none)
{
    CLT__REQUIRE_ARG(t, "clt_zero_grad");
    return clt__zero_grad(t, set_to_none, "clt_zero_grad");
}

clt_status clt__zero_grad(clt_tensor *t, int set_to_none, const char *fn)
{
    clt__meta *m = meta_of(t);
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
            CLT__TRY(clt__reshape(cur, 1 + e->ndim, shape, &next, "clt_backward"));
            clt_tensor_free(cur);
            cur = next;
            CLT__TRY(clt__sum_dim(cur, 0, 0, &next, "clt_backward"));
            clt_tensor_free(cur);
            cur = next;
        }
        for (int d = 0; d < e->ndim; d++) {
            if (e->shape[d] == 1 && cur->shape[d] != 1) {
                CLT__TRY(clt__sum_dim(cur, d, 1, &next, "clt_backward"));
                clt_tensor_free(cur);
                cur = next;
            }
        }
    }
    if (cur->dtype != e->dtype) {
        CLT__TRY(clt__to_dtype(cur, e->dtype, &next, "clt_backward"));
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
    clt_status st = clt__clone(*g, &copy, "clt_backward");
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
    if (m->grad == NULL) {
        clt__scope_disown(g);
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
    clt_status st = clt__add_into(NULL, *sum, g, &next, "clt_backward");
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
 * running it again does not count a part twice. */
typedef struct pending {
    clt_tensor *leaf; /* held by an edge of the graph */
    clt_tensor *g;    /* owned */
} pending;

typedef struct pendlist {
    pending *v;
    size_t n, cap;
} pendlist;

static clt_status pend(pendlist *l, clt_tensor *leaf, clt_tensor *g)
{
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k].leaf == leaf)
            return accumulate(&l->v[k].g, g);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        pending *v = clt__realloc(l->v, cap, sizeof *v);
        if (v == NULL) {
            clt_tensor_free(g);
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (pending){leaf, g};
    return CLT_OK;
}

/* Adds the pass's gradients to the leaves: first what each leaf will
 * hold, its gradient's sum with the pass's or a tensor it may keep (which
 * may fail and then changes nothing), then every leaf takes it at once.  A
 * leaf moved or converted since the forward pass (clt_module_to,
 * clt_module_to_dtype) gets its gradient where it is now, in its dtype
 * now. */
static clt_status commit_pending(pendlist *l)
{
    clt_status st = CLT_OK;
    for (size_t k = 0; k < l->n && st == CLT_OK; k++) {
        pending *p = &l->v[k];
        if (p->g->dev != p->leaf->dev) {
            clt_tensor *moved = NULL;
            st = clt__to_at(p->g, p->leaf->dev, &moved, __builtin_return_address(0),
                            "clt_backward");
            if (st != CLT_OK)
                break;
            clt_tensor_free(p->g);
            p->g = moved;
        }
        if (p->g->dtype != p->leaf->dtype) {
            clt_tensor *conv = NULL;
            st = clt__to_dtype(p->g, p->leaf->dtype, &conv, "clt_backward");
            if (st != CLT_OK)
                break;
            clt_tensor_free(p->g);
            p->g = conv;
        }
        const clt_tensor *grad = meta_of(p->leaf)->grad;
        if (grad == NULL) {
            st = make_keepable(&p->g);
        } else {
            clt_tensor *sum = NULL;
            st = clt__add_into(NULL, grad, p->g, &sum, "clt_backward");
            if (st == CLT_OK) {
                clt_tensor_free(p->g);
                p->g = sum;
            }
        }
    }
    for (size_t k = 0; k < l->n && st == CLT_OK; k++) {
        st = commit_leaf(l->v[k].leaf, l->v[k].g);
        l->v[k].g = NULL;
    }
    return st;
}

static void pend_free(pendlist *l)
{
    for (size_t k = 0; k < l->n; k++)
        clt_tensor_free(l->v[k].g);
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

/* Every node reachable from root, each once, with deps = the number of
 * edges into it from reachable nodes. */
static clt_status collect(clt__node *root, uint64_t pass, nodelist *all)
{
    nodelist todo = {0};
    clt_status st = CLT_OK;
    root->pass = pass;
    root->deps = 0;
    if (!list_push(all, root) || !list_push(&todo, root))
        goto oom;
    while (todo.n > 0) {
        clt__node *x = todo.v[--todo.n];
        for (int k = 0; k < x->nin; k++) {
            clt__node *c = x->in[k].node;
            if (c == NULL)
                continue;
            if (c->pass != pass) {
                c->pass = pass;
                c->deps = 0;
                if (!list_push(all, c) || !list_push(&todo, c))
                    goto oom;
            }
            c->deps++;
        }
    }
    free(todo.v);
    return CLT_OK;
oom:
    free(todo.v);
    st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
    return st;
}

/* Runs node x: its formula, then hands each input's gradient on. */
static clt_status run_node(clt__node *x, nodelist *ready, pendlist *leaves, bool retain)
{
    clt_status st = CLT_OK;
    clt_tensor *gin_small[8], **gin = gin_small;
    if (x->nin > 8) {
        gin = clt__calloc((size_t)x->nin, sizeof *gin);
        if (gin == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
    } else {
        memset(gin_small, 0, sizeof gin_small);
    }
    if (x->gbuf) {
        CLT__TRY(check_saved(x));
        /* A formula computes with the plain ops under clt_backward's name;
         * the node's name says where they ran (done: below), as it does
         * for the reductions that bring its gradients to its inputs. */
        CLT__TRY(x->backward(x, x->gbuf, gin));
    }
    clt_tensor_free(x->gbuf);
    x->gbuf = NULL;
    if (!retain) {
        release_saved(x);
        x->released = x->nsaved > 0;
    }
    for (int k = 0; k < x->nin; k++) {
        clt__edge *e = &x->in[k];
        if (gin[k] != NULL && (e->node || e->leaf)) {
            clt_tensor *g = gin[k];
            gin[k] = NULL;
            st = conform(&g, e);
            if (st != CLT_OK) {
                clt_tensor_free(g); /* conform hands g back when it fails */
                goto done;
            }
            if (e->leaf)
                CLT__TRY(pend(leaves, e->leaf, g));
            else
                CLT__TRY(accumulate(&e->node->gbuf, g));
        }
        if (e->node && --e->node->deps == 0 && !list_push(ready, e->node)) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
            goto done;
        }
    }
done:
    clt__error_in_step(st, "clt_backward", x->name);
    for (int k = 0; k < x->nin; k++)
        clt_tensor_free(gin[k]);
    if (gin != gin_small)
        free(gin);
    return st;
}

static clt_status seed_gradient(const clt_tensor *t, const clt_tensor *grad, clt_tensor **out)
{
    *out = NULL;
    if (grad == NULL) {
        if (t->numel != 1) {
            char s[160];
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "clt_backward: grad can be implicitly created only for scalar "
                              "outputs (this output has shape %s); pass the output's gradient",
                              clt__shape_str(s, sizeof s, t->ndim, t->shape));
        }
        return clt__full(t->dev, t->dtype, t->ndim, t->shape, 1.0, out);
    }
    clt_status st = clt__same_device(t, grad, "clt_backward");
    if (st != CLT_OK)
        return st;
    bool same = t->ndim == grad->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = t->shape[d] == grad->shape[d];
    if (!same) {
        char s1[160], s2[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "clt_backward: mismatch in shape: the gradient has a shape of %s and "
                          "the output a shape of %s",
                          clt__shape_str(s1, sizeof s1, grad->ndim, grad->shape),
                          clt__shape_str(s2, sizeof s2, t->ndim, t->shape));
    }
    if (!clt__dtype_is_float(grad->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "clt_backward: the gradient must be floating point, not %s",
                          clt_dtype_name(grad->dtype));
    if (grad->dtype != t->dtype)
        return clt__to_dtype(grad, t->dtype, out, "clt_backward");
    return clt__alias(grad, out);
}

clt_status clt_backward(clt_tensor *t, const clt_tensor *grad, int retain_graph)
{
    CLT__REQUIRE_ARG(t, "clt_backward");
    clt__meta *m = meta_of(t);
    if (m == NULL || !m->requires_grad)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_backward: the tensor does not require grad and has no grad_fn "
                          "(call clt_set_requires_grad on the leaves before computing it, and "
                          "compute it with recording on: ops under clt_set_grad_enabled(0) "
                          "record nothing%s)",
                          clt_is_grad_enabled() ? "" : ", and recording is off on this thread now");
    clt_tensor *g0 = NULL;
    clt_status st = seed_gradient(t, grad, &g0);
    if (st != CLT_OK)
        return clt__error_in(st, "clt_backward");
    /* Formulas compute with plain ops; nothing they make is recorded. */
    bool was_disabled = grad_disabled;
    grad_disabled = true;
    if (m->grad_fn == NULL) {
        clt__edge e = {.dev = t->dev, .dtype = t->dtype, .ndim = t->ndim};
        memcpy(e.shape, t->shape, sizeof e.shape);
        pendlist one = {0};
        st = conform(&g0, &e);
        if (st == CLT_OK)
            st = pend(&one, t, g0); /* takes g0 */
        else
            clt_tensor_free(g0);
        if (st == CLT_OK)
            st = commit_pending(&one);
        pend_free(&one);
        grad_disabled = was_disabled;
        return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_backward");
    }
    nodelist all = {0}, ready = {0};
    pendlist leaves = {0};
    uint64_t pass = __atomic_add_fetch(&pass_seq, 1, __ATOMIC_RELAXED);
    clt__node *root = m->grad_fn;
    CLT__TRY(collect(root, pass, &all));
    root->gbuf = g0;
    g0 = NULL;
    if (!list_push(&ready, root)) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_backward: out of host memory");
        goto done;
    }
    /* Newest node first among those whose consumers are all done: the
     * order, and so every sum of gradients, is the same on every run. */
    while (ready.n > 0) {
        size_t best = 0;
        for (size_t k = 1; k < ready.n; k++)
            if (ready.v[k]->seq > ready.v[best]->seq)
                best = k;
        clt__node *x = ready.v[best];
        ready.v[best] = ready.v[--ready.n];
        CLT__TRY(run_node(x, &ready, &leaves, retain_graph != 0));
    }
    st = commit_pending(&leaves);
done:
    pend_free(&leaves);
    for (size_t k = 0; k < all.n; k++) {
        clt_tensor_free(all.v[k]->gbuf);
        all.v[k]->gbuf = NULL;
    }
    free(all.v);
    free(ready.v);
    clt_tensor_free(g0);
    grad_disabled = was_disabled;
    return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_backward");
}

bool clt__requires_grad(const clt_tensor *t)
{
    return requires_grad(t);
}
