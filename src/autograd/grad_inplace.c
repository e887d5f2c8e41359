/* grad_inplace.c: the public in-place and out= ops (ops.h), host writes
 * (tensor.h) and in-place random fills (random.h): PyTorch's leaf rule,
 * then the op recorded on t's history as torch records it
 * (clt__inplace_rec), or alone when no gradient is needed. */
#include "autograd/autograd.h"

/* ---- recording --------------------------------------------------------------------- */

clt_status clt__inplace_rec(clt_tensor *t, const clt__inplace *op, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_inplace(t, fn);
    if (st != CLT_OK)
        return st;
    clt__node *n = NULL;
    clt_tensor *old = NULL;
    uint64_t before = clt__version(t);
    if (clt__dtype_is_float(t->dtype) || clt__dtype_is_complex(t->dtype))
        st = clt__inplace_node(fn, op->name, op->bw, op->nin, op->in, &n);
    if (st != CLT_OK)
        return st;
    if (n) {
        for (int k = 0; k < 2; k++) {
            n->s[k] = op->s[k];
            n->i[k] = op->i[k];
        }
        /* t's old values, as torch's in-place codegen saves "original
         * self": a copy, which the op leaves alone, with t's old history */
        if (op->old)
            st = clt__copy_as(fn, t, t->dtype, &old);
        if (st == CLT_OK && old) {
            const clt_tensor *sv = old;
            st = clt__node_save(n, 1, &sv);
            n->saved_from[0] = 1;
        }
        for (int k = 0; k < op->nsaved && st == CLT_OK; k++) {
            int at = n->nsaved;
            st = clt__node_save(n, 1, &op->saved[k]);
            for (int j = 0; j < op->nin && st == CLT_OK && n->saved_from[at] == 0; j++)
                if (op->saved[k] == op->in[j])
                    n->saved_from[at] = (signed char)(j + 1);
        }
        clt__twice(n); /* recorded formulas */
    }
    if (st == CLT_OK)
        st = op->run(t, op->ctx, n);
    clt_tensor_free(old);
    if (st != CLT_OK) {
        clt__inplace_drop(n);
        return st;
    }
    clt__inplace_commit(t, n, before);
    return CLT_OK;
}

/* ---- backward formulas ------------------------------------------------------ */

/* n->s[0] is alpha (or the scalar): t's old value gets g, other g * alpha.
 * The formulas record in a pass that creates a graph (clt__twice). */
static clt_status bw_add_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__alias_grad(g, &gin[0]);
    if (st == CLT_OK && n->nin > 1 && CLT__NEED(n, 1))
        st = n->s[0] == 1.0 ? clt__alias_grad(g, &gin[1])
                            : clt__mul_scalar_rec("clt_backward", g, n->s[0], &gin[1]);
    return st;
}

static clt_status bw_mul_s_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__mul_scalar_rec("clt_backward", g, n->s[0], &gin[0]);
}

static clt_status bw_div_s_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__div_scalar_rec("clt_backward", g, n->s[0], &gin[0]);
}

/* saved: t's old values a, other b.  t's gradient g / b, other's
 * -(g / b) * a / b, torch's div_tensor_self_backward and
 * div_tensor_other_backward on the original self. */
static clt_status bw_div_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    clt_tensor *gb = NULL, *u = NULL, *v = NULL;
    clt_status st = clt__div_rec(fn, g, n->saved[1], &gb);
    if (st == CLT_OK && CLT__NEED(n, 1)) {
        st = clt__mul_rec(fn, gb, n->saved[0], &u);
        if (st == CLT_OK)
            st = clt__div_rec(fn, u, n->saved[1], &v);
        if (st == CLT_OK)
            st = clt__neg_rec(fn, v, &gin[1]);
    }
    if (st == CLT_OK && CLT__NEED(n, 0)) {
        gin[0] = gb;
        gb = NULL;
    }
    clt_tensor_free(gb);
    clt_tensor_free(u);
    clt_tensor_free(v);
    return st;
}

/* fill_, zero_ and the random fills: t's old value gets zeros, as
 * torch's zeros_like(grad). */
static clt_status bw_zeros_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return clt__full(g->dev, g->dtype, g->ndim, g->shape, 0.0, &gin[0]);
}

/* copy_: zeros to dst's old value, g to src, brought to src's device (the
 * engine reduces it to src's shape and dtype). */
static clt_status bw_copy_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[1];
    if (CLT__NEED(n, 0))
        st = bw_zeros_(n, g, gin);
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = g->dev == e->dev ? clt__alias_grad(g, &gin[1])
             : clt__creating_graph()
                 ? clt_to(g, e->dev, &gin[1])
                 : clt__to_at(g, e->dev, &gin[1], __builtin_return_address(0), "clt_backward");
    return st;
}

/* ---- helpers ------------------------------------------------------------------- */

/* clt_tensor_write on a tensor that requires grad: torch has no such op. */
static clt_status check_write(const clt_tensor *t, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_inplace(t, fn);
    if (st == CLT_OK && clt__grad_needed(1, &t))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: a host write into a tensor that requires grad is not recorded; "
                        "use clt_copy_ from a clt_tensor_from_host tensor, which records "
                        "CopyBackwards",
                        fn);
    return st;
}

/* The elementwise ops in place: op with other (NULL: the scalar s). */
typedef struct arith_ctx {
    clt__binop op;
    const clt_tensor *other;
    double s;
    const char *fn;
} arith_ctx;

static clt_status run_arith(clt_tensor *t, const void *ctx, clt__node *n)
{
    const arith_ctx *a = ctx;
    (void)n;
    return a->other ? clt__binary_(a->op, t, a->other, a->s, a->fn)
                    : clt__scalar_(a->op, t, a->s, a->fn);
}

/* An op recorded as node `name` with formula bw on t and (optionally)
 * other; s is the op's alpha or scalar, fs the formula's; old: the
 * formula reads t's old values and other (saved[0], saved[1]). */
static clt_status recorded(clt__binop op, bool scalar, clt_tensor *t, const clt_tensor *other,
                           double s, double fs, const char *name, clt__backward_fn bw, bool old,
                           const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    if (!scalar)
        CLT__REQUIRE_ARG(other, fn);
    arith_ctx c = {op, scalar ? NULL : other, s, fn};
    clt__inplace r = {name, bw, scalar ? 1 : 2, {t, other}, old, old ? 1 : 0, {other}, {fs},
                      {0},  run_arith, &c};
    if (old && (clt__dtype_is_complex(t->dtype) || clt__dtype_is_complex(other->dtype))) {
        /* the out-of-place ops' conjugate formulas, on t's old value */
        r.bw = clt__complex_binary_grad;
        r.i[0] = op == CLT__OP_MUL ? 2 : 4;
    }
    return clt__inplace_rec(t, &r, fn);
}

/* ---- in-place arithmetic ---------------------------------------------------------- */

clt_status clt_add_(clt_tensor *t, const clt_tensor *other, double alpha)
{
    return recorded(CLT__OP_ADD, false, t, other, alpha, alpha, "AddBackward0", bw_add_, false,
                    "clt_add_");
}

clt_status clt_sub_(clt_tensor *t, const clt_tensor *other, double alpha)
{
    /* t - alpha * other is t + (-alpha) * other for the formula. */
    return recorded(CLT__OP_SUB, false, t, other, alpha, -alpha, "SubBackward0", bw_add_, false,
                    "clt_sub_");
}

clt_status clt_mul_(clt_tensor *t, const clt_tensor *other)
{
    return recorded(CLT__OP_MUL, false, t, other, 1.0, 1.0, "MulBackward0", clt__mul_grad, true,
                    "clt_mul_");
}

clt_status clt_div_(clt_tensor *t, const clt_tensor *other)
{
    return recorded(CLT__OP_DIV, false, t, other, 1.0, 1.0, "DivBackward0", bw_div_, true,
                    "clt_div_");
}

clt_status clt_add_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_ADD, true, t, NULL, s, s, "AddBackward1", bw_add_, false,
                    "clt_add_scalar_");
}

clt_status clt_sub_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_SUB, true, t, NULL, s, s, "SubBackward1", bw_add_, false,
                    "clt_sub_scalar_");
}

clt_status clt_mul_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_MUL, true, t, NULL, s, s, "MulBackward1", bw_mul_s_, false,
                    "clt_mul_scalar_");
}

clt_status clt_div_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_DIV, true, t, NULL, s, s, "DivBackward1", bw_div_s_, false,
                    "clt_div_scalar_");
}

typedef struct clamp_ctx {
    const double *min, *max;
    const clt_tensor *tmin, *tmax;
    const char *fn;
} clamp_ctx;

static clt_status run_clamp(clt_tensor *t, const void *ctx, clt__node *n)
{
    const clamp_ctx *c = ctx;
    (void)n;
    return c->tmin || c->tmax ? clt__clamp_t_(t, c->tmin, c->tmax, c->fn)
                              : clt__clamp_(t, c->min, c->max, c->fn);
}

/* ClampBackward1 on t's old values (clt_clamp's formula). */
clt_status clt_clamp_(clt_tensor *t, const double *min, const double *max)
{
    clamp_ctx c = {min, max, NULL, NULL, "clt_clamp_"};
    clt__inplace r = {"ClampBackward1", clt__clamp_grad, 1, {t}, true, 0, {NULL},
                      {min ? *min : 0.0, max ? *max : 0.0}, {min != NULL, max != NULL},
                      run_clamp, &c};
    return clt__inplace_rec(t, &r, c.fn);
}

/* The in-place clamps with tensor bounds (ClampBackward0, ...): the
 * formula reads t's old values and the bounds. */
static clt_status clamp_t_(clt_tensor *t, const clt_tensor *min, const clt_tensor *max,
                           const char *fn, const char *name)
{
    clamp_ctx c = {NULL, NULL, min, max, fn};
    int nb = (min != NULL) + (max != NULL);
    clt__inplace r = {name, clt__clamp_t_grad, 1 + nb, {t, min ? min : max, max}, true, nb,
                      {min ? min : max, max}, {0}, {min != NULL, max != NULL}, run_clamp, &c};
    return clt__inplace_rec(t, &r, fn);
}

clt_status clt_clamp_tensor_(clt_tensor *t, const clt_tensor *min, const clt_tensor *max)
{
    return clamp_t_(t, min, max, "clt_clamp_tensor_", "ClampBackward0");
}

clt_status clt_clamp_min_tensor_(clt_tensor *t, const clt_tensor *min)
{
    CLT__REQUIRE_ARG(min, "clt_clamp_min_tensor_");
    return clamp_t_(t, min, NULL, "clt_clamp_min_tensor_", "ClampMinBackward1");
}

clt_status clt_clamp_max_tensor_(clt_tensor *t, const clt_tensor *max)
{
    CLT__REQUIRE_ARG(max, "clt_clamp_max_tensor_");
    return clamp_t_(t, NULL, max, "clt_clamp_max_tensor_", "ClampMaxBackward1");
}

typedef struct fill_ctx {
    double value;
    const char *fn;
} fill_ctx;

static clt_status run_fill(clt_tensor *t, const void *ctx, clt__node *n)
{
    const fill_ctx *c = ctx;
    (void)n;
    return clt__fill_(t, c->value, c->fn);
}

/* fill_ and zero_: zeros to t's old value (torch 1.13 names a scalar
 * fill_ FillBackward2). */
static clt_status fill_rec(clt_tensor *t, double value, const char *name, const char *fn)
{
    fill_ctx c = {value, fn};
    clt__inplace r = {name, bw_zeros_, 1, {t}, false, 0, {NULL}, {0}, {0}, run_fill, &c};
    return clt__inplace_rec(t, &r, fn);
}

clt_status clt_fill_(clt_tensor *t, double value)
{
    return fill_rec(t, value, "FillBackward2", "clt_fill_");
}

clt_status clt_zero_(clt_tensor *t)
{
    return fill_rec(t, 0.0, "ZeroBackward0", "clt_zero_");
}

/* The storage positions fill_diagonal_ writes in a tensor of t's geometry,
 * as torch's two as_strided views: the main diagonal (the sum of the
 * strides apart), then for wrap, below a tall 2-D t's first square, the
 * diagonal again every width + 1 rows. */
typedef struct diag_views {
    int n;
    int64_t size[2], offset[2], stride;
} diag_views;

static diag_views diag_views_of(const clt_tensor *t, bool wrap)
{
    int64_t h = t->shape[0], w = t->shape[1];
    diag_views v = {1, {h < w ? h : w, 0}, {t->offset, 0}, 0};
    for (int d = 0; d < t->ndim; d++)
        v.stride += t->strides[d];
    if (wrap && t->ndim == 2 && h > w + 1) {
        v.n = 2;
        v.size[1] = (t->numel + w) / (w + 1) - v.size[0];
        v.offset[1] = t->offset + t->strides[0] * (w + 1);
    }
    return v;
}

/* value into the positions v of base's storage; the views are all made
 * (and checked against the storage) before anything is written. */
static clt_status fill_views(const clt_tensor *base, const diag_views *v, double value,
                             const char *fn)
{
    clt_tensor *views[2] = {NULL, NULL};
    clt_status st = CLT_OK;
    for (int k = 0; k < v->n && st == CLT_OK; k++)
        st = clt__as_strided(base, 1, &v->size[k], &v->stride, &v->offset[k], &views[k], fn);
    for (int k = 0; k < v->n && st == CLT_OK; k++)
        st = clt__fill_(views[k], value, fn);
    for (int k = 0; k < v->n; k++)
        clt_tensor_free(views[k]);
    return st;
}

/* The bool mask of t's shape that is true where fill_diagonal_ writes: the
 * same views on a scratch storage of t's geometry. */
static clt_status diag_mask(const clt_tensor *t, const diag_views *v, const char *fn,
                            clt_tensor **out)
{
    int64_t len = 0, e;
    if (!clt__strided_extent(t->ndim, t->shape, t->strides, t->offset, &len))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the tensor's extent overflows", fn);
    for (int k = 0; k < v->n; k++) {
        if (!clt__strided_extent(1, &v->size[k], &v->stride, v->offset[k], &e))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the diagonal's extent overflows",
                              fn);
        len = e > len ? e : len;
    }
    clt_tensor *scratch = NULL, *geo = NULL;
    clt_status st = clt__full(t->dev, CLT_BOOL, 1, &len, 0.0, &scratch);
    if (st == CLT_OK)
        st = fill_views(scratch, v, 1.0, fn);
    if (st == CLT_OK)
        st = clt__tensor_view(scratch, t->ndim, t->shape, t->strides, t->offset, &geo);
    if (st == CLT_OK)
        st = clt__clone(geo, out, fn);
    clt_tensor_free(geo);
    clt_tensor_free(scratch);
    return st;
}

/* The filled positions pass no gradient to t's old value. */
static clt_status bw_fill_diagonal_(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__zero_where(n->saved[0], g, &gin[0]);
}

clt_status clt_fill_diagonal_(clt_tensor *t, double value, int wrap)
{
    const char *fn = "clt_fill_diagonal_";
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: dimensions must larger than 1 (got a "
                          "%d-D tensor)", fn, t->ndim);
    for (int d = 1; t->ndim > 2 && d < t->ndim; d++)
        if (t->shape[d] != t->shape[0])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: all dimensions of input must be of equal length", fn);
    clt_status st = clt__check_inplace(t, fn);
    if (st != CLT_OK)
        return st;
    diag_views v = diag_views_of(t, wrap != 0);
    const clt_tensor *in[1] = {t};
    clt__node *n = NULL;
    clt_tensor *mask = NULL;
    uint64_t before = clt__version(t);
    /* torch 1.13 fills as_strided views of t: its node is a CopySlices */
    st = clt__inplace_node(fn, "CopySlices", bw_fill_diagonal_, 1, in, &n);
    if (st != CLT_OK)
        return st;
    if (n) {
        st = diag_mask(t, &v, fn, &mask);
        const clt_tensor *sv[1] = {mask};
        if (st == CLT_OK)
            st = clt__node_save(n, 1, sv);
        clt__twice(n);
    }
    if (st == CLT_OK)
        st = fill_views(t, &v, value, fn);
    clt_tensor_free(mask);
    if (st != CLT_OK) {
        clt__inplace_drop(n);
        return st;
    }
    clt__inplace_commit(t, n, before);
    return CLT_OK;
}

static clt_status run_copy(clt_tensor *t, const void *ctx, clt__node *n)
{
    (void)n;
    return clt__copy_(t, ctx);
}

/* CopyBackwards: zeros to dst's old value, g to src (on src's device). */
clt_status clt_copy_(clt_tensor *dst, const clt_tensor *src)
{
    CLT__REQUIRE_ARG(dst, "clt_copy_");
    CLT__REQUIRE_ARG(src, "clt_copy_");
    clt__inplace r = {"CopyBackwards", bw_copy_, 2, {dst, src}, false, 0, {NULL}, {0}, {0},
                      run_copy, src};
    return clt__inplace_rec(dst, &r, "clt_copy_");
}

/* ---- out= ---------------------------------------------------------------------- */

static clt_status check_out(const clt_tensor *out, const clt_tensor *a, const clt_tensor *b,
                            const char *fn)
{
    const clt_tensor *in[3] = {out, a, b};
    if (clt__grad_needed(3, in))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: functions with out=... arguments don't support automatic "
                          "differentiation, but one of the arguments requires grad",
                          fn);
    return CLT_OK;
}

#define DEF_OUT(name, op)                                                           \
    clt_status clt_##name##_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b) \
    {                                                                               \
        clt_status st = check_out(out, a, b, "clt_" #name "_out");                  \
        return st == CLT_OK ? clt__binary_out(op, out, a, b, "clt_" #name "_out") : st; \
    }

DEF_OUT(add, CLT__OP_ADD)
DEF_OUT(sub, CLT__OP_SUB)
DEF_OUT(mul, CLT__OP_MUL)
DEF_OUT(div, CLT__OP_DIV)

clt_status clt_matmul_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b)
{
    clt_status st = check_out(out, a, b, "clt_matmul_out");
    return st == CLT_OK ? clt__matmul_out(out, a, b) : st;
}

/* ---- host writes ------------------------------------------------------------------ */

clt_status clt_tensor_write_async(clt_tensor *t, const void *src, size_t bytes, clt_event **ev)
{
    const char *fn = "clt_tensor_write_async";
    CLT__REQUIRE_ARG(ev, fn);
    *ev = NULL;
    clt_status st = check_write(t, fn);
    if (st == CLT_OK)
        st = clt__tensor_write(t, src, bytes, ev, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_tensor_write(clt_tensor *t, const void *src, size_t bytes)
{
    const char *fn = "clt_tensor_write";
    clt_event *ev = NULL;
    clt_status st = check_write(t, fn);
    if (st == CLT_OK)
        st = clt__tensor_write(t, src, bytes, &ev, fn);
    if (st == CLT_OK)
        st = clt__event_wait_in(fn, ev, __builtin_return_address(0));
    clt_event_free(ev);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- random fills ----------------------------------------------------------------- */

/* The random fills in place (src/ops/random.c), recorded as torch records
 * them: zeros to t's old value. */
typedef struct sample_ctx {
    int kind; /* a clt__sampler, or -1 uniform_, -2 normal_ */
    clt_generator *gen;
    double a, b;
    const char *fn;
} sample_ctx;

static clt_status run_sample(clt_tensor *t, const void *ctx, clt__node *n)
{
    const sample_ctx *c = ctx;
    (void)n;
    if (c->kind == -1)
        return clt__uniform_(t, c->gen, c->a, c->b);
    if (c->kind == -2)
        return clt__normal_(t, c->gen, c->a, c->b);
    return clt__sample_((clt__sampler)c->kind, t, c->gen, c->a, c->b, c->fn);
}

static clt_status sample_(int kind, clt_tensor *t, clt_generator *gen, double a, double b,
                          const char *fn, const char *name)
{
    sample_ctx c = {kind, gen, a, b, fn};
    clt__inplace r = {name, bw_zeros_, 1, {t}, false, 0, {NULL}, {0}, {0}, run_sample, &c};
    return clt__inplace_rec(t, &r, fn);
}

clt_status clt_uniform_(clt_tensor *t, clt_generator *gen, double low, double high)
{
    return sample_(-1, t, gen, low, high, "clt_uniform_", "UniformBackward0");
}

clt_status clt_normal_(clt_tensor *t, clt_generator *gen, double mean, double std)
{
    return sample_(-2, t, gen, mean, std, "clt_normal_", "NormalBackward0");
}

clt_status clt_exponential_(clt_tensor *t, clt_generator *gen, double lambd)
{
    return sample_(CLT__SAMPLE_EXPONENTIAL, t, gen, lambd, 0.0, "clt_exponential_",
                   "ExponentialBackward0");
}

clt_status clt_geometric_(clt_tensor *t, clt_generator *gen, double p)
{
    return sample_(CLT__SAMPLE_GEOMETRIC, t, gen, p, 0.0, "clt_geometric_",
                   "GeometricBackward0");
}

clt_status clt_log_normal_(clt_tensor *t, clt_generator *gen, double mean, double std)
{
    return sample_(CLT__SAMPLE_LOG_NORMAL, t, gen, mean, std, "clt_log_normal_",
                   "LogNormalBackward0");
}

clt_status clt_cauchy_(clt_tensor *t, clt_generator *gen, double median, double sigma)
{
    return sample_(CLT__SAMPLE_CAUCHY, t, gen, median, sigma, "clt_cauchy_",
                   "CauchyBackward0");
}

clt_status clt_bernoulli_(clt_tensor *t, clt_generator *gen, double p)
{
    return sample_(CLT__SAMPLE_BERNOULLI, t, gen, p, 0.0, "clt_bernoulli_",
                   "BernoulliBackward2");
}

static bool is_std(double v)
{
    return v >= 0.0;
}

/* torch.normal(mean, std): mean + std * z with recorded ops, so that the
 * gradients are torch's (1 and z). */
clt_status clt_normal_tensor(clt_generator *gen, const clt_tensor *mean, const clt_tensor *std,
                             clt_tensor **out)
{
    const char *fn = "clt_normal_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(mean, fn);
    CLT__REQUIRE_ARG(std, fn);
    clt_status st = clt__same_device(mean, std, fn);
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_dtype dt = CLT_FLOAT32;
    if (st == CLT_OK)
        st = clt__broadcast_shapes(mean->ndim, mean->shape, std->ndim, std->shape, &nd, shape,
                                   fn);
    if (st == CLT_OK)
        st = clt_result_type(mean, std, &dt);
    if (st == CLT_OK && !clt__dtype_is_float(dt))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: \"normal_kernel\" not implemented for %s (mean and std must be "
                        "floating)",
                        fn, clt_dtype_name(dt));
    if (st != CLT_OK)
        return st;
    double *v = NULL;
    clt_tensor *z = NULL, *s = NULL;
    uint64_t offset = clt_generator_offset(gen);
    CLT__TRY(clt__read_doubles(fn, std, &v));
    for (int64_t i = 0; i < std->numel; i++)
        if (!is_std(v[i])) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: normal expects all elements of std >= 0.0", fn);
            goto done;
        }
    CLT__TRY(clt__randn_in(fn, gen, mean->dev, dt, nd, shape, &z));
    CLT__TRY(clt_mul(std, z, &s));
    st = clt_add(mean, s, out);
done:
    if (st != CLT_OK && z)
        clt_generator_set_offset(gen, offset);
    clt_tensor_free(z);
    clt_tensor_free(s);
    free(v);
    return st == CLT_OK ? clt__ok() : st;
}
