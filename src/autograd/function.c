/* function.c: custom autograd functions, like torch.autograd.Function: a
 * user's forward run without recording, and one node whose backward runs
 * the user's backward callback. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

_Static_assert(CLT_FUNCTION_MAX_SAVED <= CLT__SAVED_MAX,
               "a custom function's saved tensors are its node's");

enum { STAGE_NONE, STAGE_FORWARD, STAGE_BACKWARD };

/* What an output looked like, for the zeros that stand for a gradient
 * that did not reach it. */
typedef struct outinfo {
    clt_device *dev;
    clt_dtype dtype;
    int ndim;
    int64_t shape[CLT_MAX_DIMS];
} outinfo;

/* The node's ctx.  The saved tensors live in the node (clt__node.saved),
 * so that the engine checks their versions and gives them their history in
 * a pass that creates a graph; during forward they wait in `pending`, with
 * a reference on what the callback passed (orig), to tell inputs and
 * outputs among them. */
/* orig holds references taken with clt_tensor_retain and dropped with
 * clt__tensor_unref, which leaves a tensor in its scope (clt_tensor_free
 * would take it out). */
struct clt_function_ctx {
    clt_function_backward_fn backward;
    void *user;
    void (*free_user)(void *);
    const char *name;
    int stage;
    size_t n, nout;
    bool *needs;
    bool nondiff[CLT_FUNCTION_MAX_OUTPUTS];
    int slot[CLT_FUNCTION_MAX_OUTPUTS]; /* the node's output, or -1 */
    outinfo out[CLT_FUNCTION_MAX_OUTPUTS];
    clt_tensor *pending[CLT_FUNCTION_MAX_SAVED], *orig[CLT_FUNCTION_MAX_SAVED];
    size_t npending;
    clt__node *node; /* weak: the node owns the ctx */
};

static void ctx_free(void *p)
{
    clt_function_ctx *c = p;
    if (c == NULL)
        return;
    for (size_t k = 0; k < c->npending; k++) {
        clt_tensor_free(c->pending[k]);
        clt__tensor_unref(c->orig[k]);
    }
    if (c->free_user)
        c->free_user(c->user);
    free(c->needs);
    free(c);
}

/* "<name>Backward", kept for the life of the process as the names of
 * built-in nodes are: a node's name outlives its ctx, and clt_grad_fn_name
 * hands it out as static storage.  A program has few function names. */
typedef struct interned {
    struct interned *next;
    char name[];
} interned;

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static interned *names;

static clt_status intern_name(const char *name, const char **out)
{
    static const char fn[] = "clt_function_apply";
    size_t len = strlen(name);
    bool ok = len > 0 && len <= 64;
    for (size_t k = 0; ok && k < len; k++) {
        char ch = name[k];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_';
    }
    if (!ok)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the function's name \"%.80s\" must be 1 to 64 letters, digits or "
                          "'_'",
                          fn, name);
    clt_status st = CLT_OK;
    pthread_mutex_lock(&names_lock);
    interned *x = names;
    while (x && (strncmp(x->name, name, len) != 0 || strcmp(x->name + len, "Backward") != 0))
        x = x->next;
    if (x == NULL && (x = clt__malloc(sizeof *x + len + sizeof "Backward")) != NULL) {
        memcpy(x->name, name, len);
        memcpy(x->name + len, "Backward", sizeof "Backward");
        x->next = names;
        names = x;
    }
    if (x == NULL)
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    else
        *out = x->name;
    pthread_mutex_unlock(&names_lock);
    return st;
}

/* ---- the node's formula ------------------------------------------------------ */

/* Whether a gradient of shape g sums to an input of shape e (torch's
 * is_expandable_to): e, aligned right, has g's size or 1 in each place. */
static bool sums_to(const clt_tensor *g, const clt__edge *e)
{
    if (g->ndim < e->ndim)
        return false;
    for (int d = 0; d < e->ndim; d++) {
        int64_t want = e->shape[d], got = g->shape[g->ndim - e->ndim + d];
        if (want != got && want != 1)
            return false;
    }
    return true;
}

static clt_status check_gradient(const clt_function_ctx *c, size_t k, const clt_tensor *g,
                                 const clt__edge *e)
{
    char s1[160], s2[160];
    if (!sums_to(g, e))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "Function %s returned an invalid gradient at index %zu - got %s but "
                          "expected shape compatible with %s",
                          c->name, k, clt__shape_str(s1, sizeof s1, g->ndim, g->shape),
                          clt__shape_str(s2, sizeof s2, e->ndim, e->shape));
    if (g->dev != e->dev)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "Function %s returned an invalid gradient at index %zu - expected "
                          "it on the input's device",
                          c->name, k);
    /* torch's validate_outputs: a floating gradient for any input (cast to
     * its dtype), a complex one for a complex input only */
    if (clt__dtype_is_complex(g->dtype) && !clt__dtype_is_complex(e->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "Function %s returned an invalid gradient at index %zu - expected a "
                          "real (floating) gradient for a %s input, got %s",
                          c->name, k, clt_dtype_name(e->dtype), clt_dtype_name(g->dtype));
    if (!clt__dtype_is_float(g->dtype) && !clt__dtype_is_complex(g->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "Function %s returned an invalid gradient at index %zu - expected a "
                          "floating type, got %s",
                          c->name, k, clt_dtype_name(g->dtype));
    return CLT_OK;
}

static clt_status function_backward(clt__node *node, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    clt_function_ctx *c = node->ctx;
    clt_status st = CLT_OK;
    clt_tensor *zeros[CLT_FUNCTION_MAX_OUTPUTS] = {0};
    const clt_tensor *go[CLT_FUNCTION_MAX_OUTPUTS];
    clt_tensor **gi = clt__calloc(c->n ? c->n : 1, sizeof *gi);
    if (gi == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (size_t s = 0; s < c->nout; s++) {
        go[s] = c->slot[s] >= 0 ? clt__node_grad(node, c->slot[s]) : NULL;
        if (go[s] == NULL) {
            const outinfo *o = &c->out[s];
            CLT__TRY(clt__full(o->dev, o->dtype, o->ndim, o->shape, 0.0, &zeros[s]));
            go[s] = zeros[s];
        }
    }
    c->stage = STAGE_BACKWARD;
    clt__ok();
    st = c->backward(c, c->user, go, c->nout, gi, c->n);
    c->stage = STAGE_NONE;
    if (st != CLT_OK) {
        if (clt_last_error()[0] == '\0')
            clt__error(st, "the backward function returned %s", clt_status_name(st));
        goto done;
    }
    for (size_t k = 0; k < c->n; k++) {
        if (gi[k] == NULL)
            continue;
        for (size_t s = 0; s < c->nout; s++) {
            if (gi[k] == go[s]) { /* a gradient passed on as it came: borrowed */
                gi[k] = NULL;
                CLT__TRY(clt__alias_grad(go[s], &gi[k]));
                break;
            }
        }
        clt__scope_disown(gi[k]);
        if (!CLT__NEED(node, k))
            continue;
        CLT__TRY(check_gradient(c, k, gi[k], &node->in[k]));
    }
    for (size_t k = 0; k < c->n; k++) {
        if (CLT__NEED(node, k)) {
            gin[k] = gi[k];
            gi[k] = NULL;
        }
    }
done:
    for (size_t k = 0; k < c->n; k++)
        clt_tensor_free(gi[k]);
    free(gi);
    for (size_t s = 0; s < c->nout; s++)
        clt_tensor_free(zeros[s]);
    return st;
}

/* ---- applying a function --------------------------------------------------------- */

static clt_status check_def(const clt_function *fn, const char *name)
{
    CLT__REQUIRE_ARG(fn, name);
    if (fn->name == NULL || fn->forward == NULL || fn->backward == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT,
                          "%s: the function needs a name, a forward and a backward callback",
                          name);
    return CLT_OK;
}

/* Records the node for the differentiable outputs among mine and hands it
 * the saved tensors, told apart: an input, an output, or a constant. */
/* c is the node's from here (released with it, or at once when nothing
 * is recorded: *nodep NULL). */
static clt_status record(clt_function_ctx *c, const clt_function *fn, clt_tensor *const *inputs,
                         clt_tensor *const *outs, clt_tensor **mine, clt__node **nodep)
{
    clt_tensor *diff[CLT_FUNCTION_MAX_OUTPUTS];
    int nd = 0;
    for (size_t s = 0; s < c->nout; s++) {
        c->slot[s] = -1;
        if (!c->nondiff[s] &&
            (clt__dtype_is_float(mine[s]->dtype) || clt__dtype_is_complex(mine[s]->dtype))) {
            c->slot[s] = nd;
            diff[nd++] = mine[s];
        }
    }
    clt__node *node = NULL;
    clt_status st = clt__record_outputs(diff, nd, c->name, function_backward, (int)c->n,
                                        (const clt_tensor *const *)inputs, c, ctx_free, &node);
    *nodep = node;
    if (st != CLT_OK || node == NULL)
        return st;
    c->node = node;
    if (!fn->once_differentiable)
        clt__twice(node);
    int base = node->nsaved;
    st = clt__node_save(node, (int)c->npending, (const clt_tensor *const *)c->pending);
    for (int j = 0; st == CLT_OK && j < (int)c->npending; j++) {
        const clt_tensor *o = c->orig[j];
        signed char from = 0;
        for (size_t k = 0; k < c->n && from == 0; k++)
            if (o == inputs[k])
                from = (signed char)(k + 1);
        for (size_t s = 0; s < c->nout && from == 0; s++)
            if (o == outs[s] && c->slot[s] >= 0)
                from = (signed char)(-1 - c->slot[s]);
        node->saved_from[base + j] = from;
    }
    return st;
}

clt_status clt_function_apply(const clt_function *fn, void *user, clt_tensor *const *inputs,
                              size_t n, clt_tensor ***outputs, size_t *m)
{
    static const char name[] = "clt_function_apply";
    clt_status st = CLT_OK;
    clt_tensor *outs[CLT_FUNCTION_MAX_OUTPUTS] = {0}, *mine[CLT_FUNCTION_MAX_OUTPUTS] = {0};
    clt_tensor **arr = NULL;
    size_t nout = 0;
    clt_function_ctx *c = NULL;
    void (*free_user)(void *) = fn ? fn->free_user : NULL;
    if (outputs)
        *outputs = NULL;
    if (m)
        *m = 0;
    if (outputs == NULL || m == NULL || check_def(fn, name) != CLT_OK) {
        st = outputs == NULL || m == NULL
                 ? clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", name,
                              outputs == NULL ? "outputs" : "m")
                 : CLT_ERR_NULL_ARGUMENT;
        goto fail_user;
    }
    if (n > 0 && inputs == NULL) {
        st = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'inputs' is NULL", name);
        goto fail_user;
    }
    for (size_t k = 0; k < n; k++)
        if (inputs[k] == NULL) {
            st = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: input %zu is NULL", name, k);
            goto fail_user;
        }
    c = clt__calloc(1, sizeof *c);
    if (c == NULL || (c->needs = clt__calloc(n ? n : 1, sizeof *c->needs)) == NULL) {
        free(c);
        c = NULL;
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
        goto fail_user;
    }
    c->backward = fn->backward;
    c->user = user;
    c->free_user = free_user; /* the ctx owns user from here */
    c->n = n;
    CLT__TRY(intern_name(fn->name, &c->name));
    for (size_t k = 0; k < n; k++)
        c->needs[k] = clt_is_grad_enabled() && clt__requires_grad(inputs[k]);
    c->stage = STAGE_FORWARD;
    int was = clt_set_grad_enabled(0);
    clt__ok();
    st = fn->forward(c, user, inputs, n, outs, &nout);
    clt_set_grad_enabled(was);
    c->stage = STAGE_NONE;
    CLT__TRY(clt__callback_outputs(st, outs, &nout, CLT_FUNCTION_MAX_OUTPUTS, mine, inputs, n));
    c->nout = nout;
    for (size_t s = 0; s < CLT_FUNCTION_MAX_OUTPUTS; s++)
        if (c->nondiff[s] && s >= nout) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: output %zu was marked non-differentiable, but forward gave "
                            "%zu outputs",
                            name, s, nout);
            goto done;
        }
    for (size_t s = 0; s < nout; s++) {
        outinfo *o = &c->out[s];
        o->dev = mine[s]->dev;
        o->dtype = mine[s]->dtype;
        o->ndim = mine[s]->ndim;
        memcpy(o->shape, mine[s]->shape, sizeof o->shape);
    }
    arr = clt__calloc(nout ? nout : 1, sizeof *arr);
    if (arr == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
        goto done;
    }
    clt_function_ctx *owned = c;
    clt__node *node = NULL;
    c = NULL; /* the node's now (or released), failure included */
    st = record(owned, fn, inputs, outs, mine, &node);
    /* The node keeps views of the saved tensors; what forward passed goes. */
    if (st == CLT_OK && node) {
        for (size_t k = 0; k < owned->npending; k++) {
            clt_tensor_free(owned->pending[k]);
            clt__tensor_unref(owned->orig[k]);
        }
        owned->npending = 0;
    }
    if (st != CLT_OK) {
        for (size_t s = 0; s < nout; s++) { /* drop the node from the outputs */
            clt_tensor_free(mine[s]);
            mine[s] = NULL;
        }
        goto done;
    }
    for (size_t s = 0; s < nout; s++) {
        arr[s] = mine[s];
        mine[s] = NULL;
    }
    *outputs = arr;
    arr = NULL;
    *m = nout;
done:
    for (size_t s = 0; s < nout; s++) {
        clt_tensor_free(outs[s]);
        clt_tensor_free(mine[s]);
    }
    free(arr);
    ctx_free(c);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
fail_user:
    if (free_user)
        free_user(user);
    return st;
}

/* ---- the ctx, from the callbacks --------------------------------------------------- */

clt_status clt_function_save_for_backward(clt_function_ctx *ctx, const clt_tensor *const *tensors,
                                          size_t n)
{
    static const char name[] = "clt_function_save_for_backward";
    CLT__REQUIRE_ARG(ctx, name);
    if (n > 0)
        CLT__REQUIRE_ARG(tensors, name);
    if (ctx->stage != STAGE_FORWARD)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: only forward may save tensors", name);
    if (ctx->npending + n > CLT_FUNCTION_MAX_SAVED)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a custom function saves at most %d tensors (%zu saved, %zu more "
                          "asked)",
                          name, CLT_FUNCTION_MAX_SAVED, ctx->npending, n);
    for (size_t k = 0; k < n; k++)
        if (tensors[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu is NULL", name, k);
    for (size_t k = 0; k < n; k++) {
        clt_tensor *a = NULL;
        clt_status st = clt__alias(tensors[k], &a);
        if (st != CLT_OK)
            return clt__error_in(st, name);
        clt__scope_disown(a);
        ctx->pending[ctx->npending] = a;
        ctx->orig[ctx->npending++] = clt_tensor_retain((clt_tensor *)tensors[k]);
    }
    return clt__ok();
}

clt_status clt_function_saved_tensor(clt_function_ctx *ctx, size_t k, const clt_tensor **out)
{
    static const char name[] = "clt_function_saved_tensor";
    CLT__REQUIRE_ARG(out, name);
    *out = NULL;
    CLT__REQUIRE_ARG(ctx, name);
    if (ctx->stage != STAGE_BACKWARD)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the saved tensors are read in backward only", name);
    if (k >= (size_t)ctx->node->nsaved)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: tensor %zu asked for, %d saved", name, k, ctx->node->nsaved);
    *out = ctx->node->saved[k];
    return clt__ok();
}

int clt_function_needs_input_grad(const clt_function_ctx *ctx, size_t k)
{
    return ctx && k < ctx->n && ctx->needs[k];
}

clt_status clt_function_mark_non_differentiable(clt_function_ctx *ctx, size_t k)
{
    static const char name[] = "clt_function_mark_non_differentiable";
    CLT__REQUIRE_ARG(ctx, name);
    if (ctx->stage != STAGE_FORWARD)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: only forward may mark outputs", name);
    if (k >= CLT_FUNCTION_MAX_OUTPUTS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: output %zu: at most %d outputs", name,
                          k, CLT_FUNCTION_MAX_OUTPUTS);
    ctx->nondiff[k] = true;
    return clt__ok();
}
