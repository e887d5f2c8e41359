/* grad_inplace.c: the public in-place and out= ops (ops.h), host writes
 * (tensor.h) and in-place random fills (random.h): PyTorch's leaf rule, then
 * either the op alone, the op recorded on t's history (add_, sub_ and the
 * scalar forms), or a refusal when a gradient would be needed. */
#include "autograd/autograd.h"

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

/* ---- helpers ------------------------------------------------------------------- */

static clt_status refuse(const char *op, const char *use)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "in-place %s on a tensor that requires grad is not supported; use %s", op,
                      use);
}

/* The leaf rule, then a refusal when grad mode would need a gradient
 * through t or other (other may be NULL). */
static clt_status check_unrecorded(const clt_tensor *t, const clt_tensor *other, const char *fn,
                                   const char *op, const char *use)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_inplace(t, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {t, other};
    if (clt__grad_needed(other ? 2 : 1, in))
        return refuse(op, use);
    return CLT_OK;
}

/* An op recorded as node `name` with formula bw on t and (optionally)
 * other; s is the op's alpha or scalar, fs the formula's. */
static clt_status recorded(clt__binop op, bool scalar, clt_tensor *t, const clt_tensor *other,
                           double s, double fs, const char *name, clt__backward_fn bw,
                           const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    if (!scalar)
        CLT__REQUIRE_ARG(other, fn);
    clt_status st = clt__check_inplace(t, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {t, other};
    clt__node *n = NULL;
    st = clt__inplace_node(name, bw, scalar ? 1 : 2, in, &n);
    if (st != CLT_OK)
        return st;
    if (n)
        n->s[0] = fs;
    clt__twice(n); /* recorded formulas */
    st = scalar ? clt__scalar_(op, t, s, fn) : clt__binary_(op, t, other, s, fn);
    if (st != CLT_OK) {
        clt__inplace_drop(n);
        return st;
    }
    clt__inplace_commit(t, n);
    return CLT_OK;
}

/* ---- in-place arithmetic ---------------------------------------------------------- */

clt_status clt_add_(clt_tensor *t, const clt_tensor *other, double alpha)
{
    return recorded(CLT__OP_ADD, false, t, other, alpha, alpha, "AddBackward0", bw_add_,
                    "clt_add_");
}

clt_status clt_sub_(clt_tensor *t, const clt_tensor *other, double alpha)
{
    /* t - alpha * other is t + (-alpha) * other for the formula. */
    return recorded(CLT__OP_SUB, false, t, other, alpha, -alpha, "SubBackward0", bw_add_,
                    "clt_sub_");
}

clt_status clt_mul_(clt_tensor *t, const clt_tensor *other)
{
    CLT__REQUIRE_ARG(other, "clt_mul_");
    clt_status st = check_unrecorded(t, other, "clt_mul_", "mul_", "clt_mul");
    return st == CLT_OK ? clt__binary_(CLT__OP_MUL, t, other, 1.0, "clt_mul_") : st;
}

clt_status clt_div_(clt_tensor *t, const clt_tensor *other)
{
    CLT__REQUIRE_ARG(other, "clt_div_");
    clt_status st = check_unrecorded(t, other, "clt_div_", "div_", "clt_div");
    return st == CLT_OK ? clt__binary_(CLT__OP_DIV, t, other, 1.0, "clt_div_") : st;
}

clt_status clt_add_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_ADD, true, t, NULL, s, s, "AddBackward1", bw_add_, "clt_add_scalar_");
}

clt_status clt_sub_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_SUB, true, t, NULL, s, s, "SubBackward1", bw_add_, "clt_sub_scalar_");
}

clt_status clt_mul_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_MUL, true, t, NULL, s, s, "MulBackward1", bw_mul_s_,
                    "clt_mul_scalar_");
}

clt_status clt_div_scalar_(clt_tensor *t, double s)
{
    return recorded(CLT__OP_DIV, true, t, NULL, s, s, "DivBackward1", bw_div_s_,
                    "clt_div_scalar_");
}

clt_status clt_clamp_(clt_tensor *t, const double *min, const double *max)
{
    clt_status st = check_unrecorded(t, NULL, "clt_clamp_", "clamp_", "clt_clamp");
    return st == CLT_OK ? clt__clamp_(t, min, max, "clt_clamp_") : st;
}

/* The in-place clamps with tensor bounds, recorded on t's history as
 * torch records them (ClampBackward0, ...): the formula reads t's old
 * values, kept in a copy made before t is overwritten. */
static clt_status clamp_t_(clt_tensor *t, const clt_tensor *min, const clt_tensor *max,
                           const char *fn, const char *name)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_inplace(t, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[3] = {t, min ? min : max, max};
    int nin = 1 + (min != NULL) + (max != NULL);
    clt__node *n = NULL;
    clt_tensor *old = NULL;
    st = clt__inplace_node(name, clt__clamp_t_grad, nin, in, &n);
    if (st != CLT_OK)
        return st;
    if (n) {
        n->i[0] = min != NULL;
        n->i[1] = max != NULL;
        st = clt__copy_as(fn, t, t->dtype, &old);
        const clt_tensor *sv[3] = {old, in[1], in[2]};
        if (st == CLT_OK)
            st = clt__node_save(n, nin, sv);
        clt__twice(n);
    }
    if (st == CLT_OK)
        st = clt__clamp_t_(t, min, max, fn);
    clt_tensor_free(old);
    if (st != CLT_OK) {
        clt__inplace_drop(n);
        return st;
    }
    clt__inplace_commit(t, n);
    return CLT_OK;
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

clt_status clt_fill_(clt_tensor *t, double value)
{
    clt_status st = check_unrecorded(t, NULL, "clt_fill_", "fill_", "clt_full_like");
    return st == CLT_OK ? clt__fill_(t, value, "clt_fill_") : st;
}

clt_status clt_zero_(clt_tensor *t)
{
    clt_status st = check_unrecorded(t, NULL, "clt_zero_", "zero_", "clt_zeros_like");
    return st == CLT_OK ? clt__fill_(t, 0.0, "clt_zero_") : st;
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
    st = clt__inplace_node("FillDiagonalBackward", bw_fill_diagonal_, 1, in, &n);
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
    clt__inplace_commit(t, n);
    return CLT_OK;
}

clt_status clt_copy_(clt_tensor *dst, const clt_tensor *src)
{
    CLT__REQUIRE_ARG(src, "clt_copy_");
    clt_status st =
        check_unrecorded(dst, src, "clt_copy_", "copy_", "clt_clone, or clt_detach the source");
    return st == CLT_OK ? clt__copy_(dst, src) : st;
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
    clt_status st = check_unrecorded(t, NULL, fn, "write", "clt_tensor_from_host");
    if (st == CLT_OK)
        st = clt__tensor_write(t, src, bytes, ev, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_tensor_write(clt_tensor *t, const void *src, size_t bytes)
{
    const char *fn = "clt_tensor_write";
    clt_event *ev = NULL;
    clt_status st = check_unrecorded(t, NULL, fn, "write", "clt_tensor_from_host");
    if (st == CLT_OK)
        st = clt__tensor_write(t, src, bytes, &ev, fn);
    if (st == CLT_OK)
        st = clt__event_wait_in(fn, ev, __builtin_return_address(0));
    clt_event_free(ev);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- random fills ----------------------------------------------------------------- */

clt_status clt_uniform_(clt_tensor *t, clt_generator *gen, double low, double high)
{
    clt_status st = check_unrecorded(t, NULL, "clt_uniform_", "uniform_", "clt_rand");
    return st == CLT_OK ? clt__uniform_(t, gen, low, high) : st;
}

clt_status clt_normal_(clt_tensor *t, clt_generator *gen, double mean, double std)
{
    clt_status st = check_unrecorded(t, NULL, "clt_normal_", "normal_", "clt_randn");
    return st == CLT_OK ? clt__normal_(t, gen, mean, std) : st;
}

/* The samplers in place: autograd's refusals, then src/ops/random.c. */
static clt_status sample_(clt__sampler kind, clt_tensor *t, clt_generator *gen, double a,
                          double b, const char *fn, const char *op, const char *use)
{
    clt_status st = check_unrecorded(t, NULL, fn, op, use);
    return st == CLT_OK ? clt__sample_(kind, t, gen, a, b, fn) : st;
}

clt_status clt_exponential_(clt_tensor *t, clt_generator *gen, double lambd)
{
    return sample_(CLT__SAMPLE_EXPONENTIAL, t, gen, lambd, 0.0, "clt_exponential_",
                   "exponential_", "clt_rand_like");
}

clt_status clt_geometric_(clt_tensor *t, clt_generator *gen, double p)
{
    return sample_(CLT__SAMPLE_GEOMETRIC, t, gen, p, 0.0, "clt_geometric_", "geometric_",
                   "clt_rand_like");
}

clt_status clt_log_normal_(clt_tensor *t, clt_generator *gen, double mean, double std)
{
    return sample_(CLT__SAMPLE_LOG_NORMAL, t, gen, mean, std, "clt_log_normal_", "log_normal_",
                   "clt_randn_like");
}

clt_status clt_cauchy_(clt_tensor *t, clt_generator *gen, double median, double sigma)
{
    return sample_(CLT__SAMPLE_CAUCHY, t, gen, median, sigma, "clt_cauchy_", "cauchy_",
                   "clt_rand_like");
}

clt_status clt_bernoulli_(clt_tensor *t, clt_generator *gen, double p)
{
    return sample_(CLT__SAMPLE_BERNOULLI, t, gen, p, 0.0, "clt_bernoulli_", "bernoulli_",
                   "clt_bernoulli");
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
