/* hooks.c: a module's forward pre-hooks, forward hooks and full backward
 * hooks (nn.Module.register_*_hook), run around its forward as
 * nn.Module.__call__ runs them. */
#include <stdio.h>
#include <stdlib.h>

#include "nn/nn.h"

enum { HOOK_PRE, HOOK_FWD, HOOK_BWD };

typedef struct mhook {
    int kind;
    clt_hook *h; /* the list's reference; removed by its handle */
    union {
        clt_module_forward_pre_hook_fn pre;
        clt_module_forward_hook_fn fwd;
        clt_module_backward_hook_fn bwd;
    } fn;
    void *user;
} mhook;

struct clt__mhooks {
    mhook *v;
    size_t n, cap;
};

/* The hooks of one kind that a call runs, as they were when it began (each
 * held): hooks registered meanwhile run from the next call, and a module
 * released after its forward leaves its backward hooks callable. */
typedef struct snap {
    size_t n;
    mhook v[];
} snap;

void clt__mhooks_free(clt_module *m)
{
    struct clt__mhooks *H = m->hooks;
    if (H == NULL)
        return;
    for (size_t k = 0; k < H->n; k++)
        clt__hook_release(H->v[k].h);
    free(H->v);
    free(H);
    m->hooks = NULL;
}

/* The hooks of every module (torch's register_module_*_hook), run before
 * each module's own; guarded by global_lock, as any thread may run a
 * module. */
static struct clt__mhooks global;
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;

/* Adds e to the list *list (made when NULL). */
static clt_status add_hook(struct clt__mhooks **list, mhook e, clt_hook **handle,
                           const char *fn)
{
    if (*list == NULL && (*list = clt__calloc(1, sizeof **list)) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    struct clt__mhooks *H = *list;
    /* Drops removed hooks, so that registering and removing every step
     * does not grow the list. */
    size_t kept = 0;
    for (size_t k = 0; k < H->n; k++) {
        if (clt__hook_removed(H->v[k].h))
            clt__hook_release(H->v[k].h);
        else
            H->v[kept++] = H->v[k];
    }
    H->n = kept;
    if (H->n == H->cap) {
        size_t cap = H->cap ? 2 * H->cap : 4;
        mhook *v = clt__realloc(H->v, cap, sizeof *v);
        if (v == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        H->v = v;
        H->cap = cap;
    }
    e.h = clt__hook_handle_new();
    if (e.h == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    H->v[H->n++] = e;
    if (handle)
        *handle = e.h;
    else
        clt__hook_release(e.h); /* no handle: the list's reference alone */
    return clt__ok();
}

#define REGISTER(fname, kind_, member, type)                                                \
    clt_status fname(clt_module *m, type fn, void *user, clt_hook **handle)                 \
    {                                                                                       \
        if (handle)                                                                         \
            *handle = NULL;                                                                 \
        CLT__REQUIRE_ARG(m, #fname);                                                        \
        CLT__REQUIRE_ARG(fn, #fname);                                                       \
        mhook e = {.kind = kind_, .user = user};                                            \
        e.fn.member = fn;                                                                   \
        return add_hook(&m->hooks, e, handle, #fname);                                      \
    }

REGISTER(clt_module_register_forward_pre_hook, HOOK_PRE, pre, clt_module_forward_pre_hook_fn)
REGISTER(clt_module_register_forward_hook, HOOK_FWD, fwd, clt_module_forward_hook_fn)
REGISTER(clt_module_register_full_backward_hook, HOOK_BWD, bwd, clt_module_backward_hook_fn)

#define REGISTER_GLOBAL(fname, kind_, member, type)                                         \
    clt_status fname(type fn, void *user, clt_hook **handle)                                \
    {                                                                                       \
        if (handle)                                                                         \
            *handle = NULL;                                                                 \
        CLT__REQUIRE_ARG(fn, #fname);                                                       \
        mhook e = {.kind = kind_, .user = user};                                            \
        e.fn.member = fn;                                                                   \
        struct clt__mhooks *list = &global;                                                 \
        pthread_mutex_lock(&global_lock);                                                   \
        clt_status st = add_hook(&list, e, handle, #fname);                                 \
        pthread_mutex_unlock(&global_lock);                                                 \
        return st;                                                                          \
    }

REGISTER_GLOBAL(clt_register_module_forward_pre_hook, HOOK_PRE, pre,
                clt_module_forward_pre_hook_fn)
REGISTER_GLOBAL(clt_register_module_forward_hook, HOOK_FWD, fwd, clt_module_forward_hook_fn)
REGISTER_GLOBAL(clt_register_module_full_backward_hook, HOOK_BWD, bwd,
                clt_module_backward_hook_fn)

static void snap_free(snap *s)
{
    for (size_t k = 0; s && k < s->n; k++)
        clt__hook_release(s->v[k].h);
    free(s);
}

static size_t count_kind(const struct clt__mhooks *H, int kind)
{
    size_t n = 0;
    for (size_t k = 0; H && k < H->n; k++)
        n += H->v[k].kind == kind && !clt__hook_removed(H->v[k].h);
    return n;
}

static void take_kind(const struct clt__mhooks *H, int kind, snap *s)
{
    for (size_t k = 0; H && k < H->n; k++)
        if (H->v[k].kind == kind && !clt__hook_removed(H->v[k].h)) {
            clt__hook_retain(H->v[k].h);
            s->v[s->n++] = H->v[k];
        }
}

/* The live hooks of kind that run for m, the global ones first, in *out
 * (NULL when there are none). */
static clt_status snapshot(const clt_module *m, int kind, snap **out)
{
    *out = NULL;
    pthread_mutex_lock(&global_lock);
    size_t n = count_kind(&global, kind) + count_kind(m->hooks, kind);
    snap *s = n ? clt__malloc(sizeof *s + n * sizeof s->v[0]) : NULL;
    if (s != NULL) {
        s->n = 0;
        take_kind(&global, kind, s);
        take_kind(m->hooks, kind, s);
    }
    pthread_mutex_unlock(&global_lock);
    if (n > 0 && s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", m->ops->name);
    *out = s;
    return CLT_OK;
}

static const char *const kind_name[] = {"forward pre-hook", "forward hook",
                                        "full backward hook"};

/* A hook's failure: its message, or one naming the status, after the
 * module's name and the hook's kind. */
static clt_status hook_failed(clt_status st, const char *name, int kind)
{
    if (clt_last_error()[0] == '\0')
        return clt__error(st, "%s: %s failed (%s) without a message", name, kind_name[kind],
                          clt_status_name(st));
    return clt__error_prefix(st, "%s: %s", name, kind_name[kind]);
}

/* Calls the hooks of s (of one kind, m's) in order on *cur (owned when
 * *own), each replacing it when it gives a replacement.  other: the
 * forward hook's input, or the backward hook's grad_output. */
static clt_status run_snap(clt_module *m, const char *name, const snap *s, clt_tensor **cur,
                           bool *own, const clt_tensor *other)
{
    clt_status st = CLT_OK;
    for (size_t k = 0; s && k < s->n && st == CLT_OK; k++) {
        const mhook *e = &s->v[k];
        if (clt__hook_removed(e->h))
            continue;
        clt_tensor *r = NULL;
        clt__ok(); /* so that a hook failing with no message is seen */
        if (e->kind == HOOK_PRE)
            st = e->fn.pre(e->user, m, *cur, &r);
        else if (e->kind == HOOK_FWD)
            st = e->fn.fwd(e->user, m, other, *cur, &r);
        else
            st = e->fn.bwd(e->user, m, *cur, other, &r);
        if (st != CLT_OK) {
            if (r != *cur)
                clt_tensor_free(r);
            return hook_failed(st, name, e->kind);
        }
        if (r == NULL || r == *cur)
            continue;
        if (*cur == NULL) {
            clt_tensor_free(r);
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: %s: Backward hook for Modules where no input requires "
                              "gradient should always return None or None for all gradients",
                              name, kind_name[e->kind]);
        }
        if (*own)
            clt_tensor_free(*cur);
        *cur = r;
        *own = true;
    }
    return st;
}

/* m's hooks of kind, as run_snap, on a snapshot taken now. */
static clt_status run_kind(clt_module *m, int kind, clt_tensor **cur, bool *own,
                           const clt_tensor *other)
{
    snap *s = NULL;
    clt_status st = snapshot(m, kind, &s);
    if (st == CLT_OK)
        st = run_snap(m, m->ops->name, s, cur, own, other);
    snap_free(s);
    return st;
}

/* ---- full backward hooks ------------------------------------------------------------- */

/* What one call of a module with backward hooks leaves for the backward
 * pass: held by the hooks on its input's and output's views. */
typedef struct bwcall {
    int refs; /* atomic */
    clt_module *m; /* passed to the hooks; possibly released since */
    char name[48]; /* its name, for messages */
    snap *hooks;
    bool has_input;
    clt_tensor *grad_output; /* retained while a pass runs from the output to the input */
} bwcall;

static void bwcall_unref(void *p)
{
    bwcall *c = p;
    if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        clt__tensor_unref(c->grad_output);
        snap_free(c->hooks);
        free(c);
    }
}

static clt_status run_backward(bwcall *c, const clt_tensor *grad, clt_tensor **replacement)
{
    clt_tensor *cur = (clt_tensor *)grad;
    bool own = false;
    clt_status st = run_snap(c->m, c->name, c->hooks, &cur, &own, c->grad_output);
    if (st == CLT_OK && own)
        *replacement = cur;
    else if (own)
        clt_tensor_free(cur);
    return st;
}

/* The output view's gradient: grad_output, kept for the input's hook, or
 * the hooks called now when the input needs no gradient. */
static clt_status output_grad(void *user, const clt_tensor *grad, clt_tensor **replacement)
{
    (void)replacement;
    bwcall *c = user;
    clt__tensor_unref(c->grad_output);
    c->grad_output = clt_tensor_retain((clt_tensor *)grad);
    if (c->has_input)
        return CLT_OK;
    clt_status st = run_backward(c, NULL, replacement);
    clt__tensor_unref(c->grad_output);
    c->grad_output = NULL;
    return st;
}

static clt_status input_grad(void *user, const clt_tensor *grad, clt_tensor **replacement)
{
    bwcall *c = user;
    if (c->grad_output == NULL) /* an output that needed no gradient: no call */
        return CLT_OK;
    clt_status st = run_backward(c, grad, replacement);
    clt__tensor_unref(c->grad_output);
    c->grad_output = NULL;
    return st;
}

/* A recorded view of *t (owned when *own), with hook on it holding c. */
static clt_status hooked_view(const char *name, clt_tensor **t, bool *own, clt_tensor_hook_fn hook,
                              bwcall *c)
{
    clt_tensor *v = NULL;
    clt_status st = clt__expand_rec(name, *t, (*t)->ndim, (*t)->shape, &v);
    if (st == CLT_OK)
        st = clt__tensor_register_hook_owned(v, hook, c, bwcall_unref, name);
    if (st != CLT_OK) {
        clt_tensor_free(v);
        return st;
    }
    __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    if (*own)
        clt_tensor_free(*t);
    *t = v;
    *own = true;
    return CLT_OK;
}

/* ---- the call ------------------------------------------------------------------------ */

clt_status clt__module_call(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__module_call_multi(m, x, NULL, NULL, out);
}

clt_status clt__module_call_multi(clt_module *m, const clt_tensor *x, clt__forward_multi_fn fwd,
                                  void *ctx, clt_tensor **out)
{
    const char *name = m->ops->name;
    clt_tensor *in = (clt_tensor *)x, *y = NULL;
    bool own_in = false, own_y = true;
    bwcall *c = NULL;
    snap *bw = NULL;
    clt_status st = run_kind(m, HOOK_PRE, &in, &own_in, NULL);
    if (st == CLT_OK && clt_is_grad_enabled())
        st = snapshot(m, HOOK_BWD, &bw);
    if (bw != NULL) {
        c = clt__calloc(1, sizeof *c);
        if (c == NULL) {
            snap_free(bw);
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
        }
    }
    if (c != NULL) {
        c->m = m;
        snprintf(c->name, sizeof c->name, "%s", name);
        c->hooks = bw;
        c->refs = 1; /* this call's, until it ends */
        c->has_input = clt_requires_grad(in);
        if (c->has_input)
            st = hooked_view(name, &in, &own_in, input_grad, c);
    }
    if (st == CLT_OK)
        st = clt__reparam_compute(m, name);
    if (st == CLT_OK)
        st = fwd ? fwd(m, ctx, in, &y) : m->ops->forward(m, in, &y);
    if (st == CLT_OK)
        st = run_kind(m, HOOK_FWD, &y, &own_y, in);
    if (st == CLT_OK && c != NULL && clt_requires_grad(y))
        st = hooked_view(name, &y, &own_y, output_grad, c);
    if (c != NULL)
        bwcall_unref(c);
    if (own_in)
        clt_tensor_free(in);
    if (st != CLT_OK) {
        clt_tensor_free(y);
        y = NULL;
    }
    *out = y;
    return st;
}
