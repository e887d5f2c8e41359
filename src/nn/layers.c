/* layers.c: the normalisation, dropout and embedding layers (LayerNorm and
 * clt_layer_norm, GroupNorm and clt_group_norm, BatchNorm1d/2d, Dropout,
 * Embedding): LayerNorm and GroupNorm normalise through the fused recorded
 * op of src/autograd/grad_norm.c, the rest is composed of differentiable
 * ops so that autograd gives their backward passes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* A layer's intermediate tensors live in a scope of their own, which
 * clt__scope_finish closes, handing only the result to the caller's scope. */

/* *p, taken: *p is left NULL. */
static clt_tensor *keep_null(clt_tensor **p)
{
    clt_tensor *t = *p;
    *p = NULL;
    return t;
}

/* ---- LayerNorm ---------------------------------------------------------------- */

/* (x - mean) / sqrt(var + eps) over the last dim of x seen as the nd-dim
 * shape `rows`, composed of recorded ops, its intermediates left in the
 * caller's scope: LayerNorm's path for inputs the fused kernel does not
 * take (float16, and integer or bool ones, which the mean refuses). */
static clt_status normalize_rows(const char *fn, const clt_tensor *x, int nd, const int64_t *rows,
                                 double eps, clt_tensor **out)
{
    clt_status st;
    clt_tensor *xf, *mu, *var, *xc, *ve, *inv, *y;
    CLT__TRY(clt__reshape_rec(fn, x, nd, rows, &xf));
    CLT__TRY(clt__mean_dim_rec(fn, xf, -1, 1, &mu));
    CLT__TRY(clt__var_dim_rec(fn, xf, -1, 0.0, 1, &var));
    CLT__TRY(clt__sub_rec(fn, xf, mu, &xc));
    CLT__TRY(clt__add_scalar_rec(fn, var, eps, &ve));
    CLT__TRY(clt__rsqrt_rec(fn, ve, &inv));
    CLT__TRY(clt__mul_rec(fn, xc, inv, &y));
    CLT__TRY(clt__reshape_rec(fn, y, x->ndim, x->shape, out));
done:
    return st;
}

static bool fused_dtype(clt_dtype dt)
{
    return dt == CLT_FLOAT32 || dt == CLT_FLOAT64;
}

/* Error unless x's last k dims are `shape` (torch's words, opening with
 * `given`: "given" or "Given"). */
static clt_status layer_norm_check_input(const char *fn, const char *given, const clt_tensor *x,
                                         int k, const int64_t *shape)
{
    bool fits = x->ndim >= k;
    for (int d = 0; fits && d < k; d++)
        fits = x->shape[x->ndim - k + d] == shape[d];
    if (fits)
        return CLT_OK;
    char s1[160], s2[160], s3[160];
    return clt__error(CLT_ERR_SHAPE_MISMATCH,
                      "%s: %s normalized_shape=%s, expected input with shape [*, %s, but got "
                      "input of size %s",
                      fn, given, clt__shape_str(s1, sizeof s1, k, shape),
                      clt__shape_str(s3, sizeof s3, k, shape) + 1,
                      clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
}

/* The normalisation over the last k dims of x (checked) with w and b
 * (either may be NULL): one fused recorded op for float32 and float64. */
static clt_status layer_norm_in(const char *fn, const clt_tensor *x, int k, const clt_tensor *w,
                                const clt_tensor *b, double eps, clt_tensor **out)
{
    int nd = x->ndim - k;
    int64_t flat[CLT_MAX_DIMS], inner = 1;
    for (int d = 0; d < nd; d++)
        flat[d] = x->shape[d];
    for (int d = nd; d < x->ndim; d++)
        inner *= x->shape[d];
    flat[nd] = inner;
    if (fused_dtype(x->dtype))
        return clt__native_norm_rec(fn, "NativeLayerNormBackward0", x, inner, w, b, eps, out);
    clt_status st;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *yr, *t;
    CLT__TRY(normalize_rows(fn, x, nd + 1, flat, eps, &yr));
    if (w) {
        CLT__TRY(clt__mul_rec(fn, yr, w, &t));
        yr = t;
    }
    if (b)
        CLT__TRY(clt__add_rec(fn, yr, b, out));
    else
        *out = keep_null(&yr);
done:
    return clt__scope_finish(st, out);
}

/* i[0] the number of normalised (last) dims, i[1..] their sizes; f[0] eps. */
static clt_status layer_norm_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "LayerNorm";
    int k = (int)m->i[0];
    clt_status st = clt__module_check_device(m, x, fn);
    if (st == CLT_OK)
        st = layer_norm_check_input(fn, "given", x, k, m->i + 1);
    if (st == CLT_OK && m->nparams == 2)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, fn);
    if (st != CLT_OK)
        return st;
    bool affine = m->nparams == 2;
    return layer_norm_in(fn, x, k, affine ? m->params[0] : NULL, affine ? m->params[1] : NULL,
                         m->f[0], out);
}

/* A norm of a float16 input (and float16 or no weight and bias): the
 * recorded float32 norm of the widened operands, rounded to half once, as
 * torch's GPU kernels compute in float; gradients come back through the
 * casts. */
static bool half_norm_operands(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b)
{
    return clt__dtype_is_half(x->dtype) && (w == NULL || w->dtype == x->dtype) &&
           (b == NULL || b->dtype == x->dtype);
}

static clt_status half_norm(const char *fn, const clt_tensor *x, const clt_tensor *w,
                            const clt_tensor *b, int ndim, const int64_t *shape, int64_t groups,
                            double eps, clt_tensor **out)
{
    clt_tensor *t[3] = {NULL, NULL, NULL}, *r = NULL;
    const clt_tensor *in[3] = {x, w, b};
    clt_status st = CLT_OK;
    for (int i = 0; i < 3 && st == CLT_OK; i++)
        if (in[i])
            st = clt__to_dtype_rec(fn, in[i], CLT_FLOAT32, &t[i]);
    if (st == CLT_OK)
        st = shape ? clt_layer_norm(t[0], ndim, shape, t[1], t[2], eps, &r)
                   : clt_group_norm(t[0], groups, t[1], t[2], eps, &r);
    if (st == CLT_OK)
        st = clt__to_dtype_rec(fn, r, x->dtype, out);
    for (int i = 0; i < 3; i++)
        clt_tensor_free(t[i]);
    clt_tensor_free(r);
    return st;
}

clt_status clt_layer_norm(const clt_tensor *input, int ndim, const int64_t *normalized_shape,
                          const clt_tensor *weight, const clt_tensor *bias, double eps,
                          clt_tensor **out)
{
    static const char fn[] = "clt_layer_norm";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 3, (input, weight, bias),
                  clt_layer_norm(CLT__AC(0), ndim, normalized_shape, CLT__AC(1), CLT__AC(2), eps,
                                 out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    if (ndim < 1 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected normalized_shape to be at least 1-dimensional and at "
                          "most %d-dimensional, but got %d dims",
                          fn, CLT_MAX_DIMS, ndim);
    CLT__REQUIRE_ARG(normalized_shape, fn);
    clt_status st = clt__check_shape(ndim, normalized_shape, fn);
    if (st != CLT_OK)
        return st;
    if (!(eps >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps %g: expected eps >= 0", fn, eps);
    if (half_norm_operands(input, weight, bias))
        return half_norm(fn, input, weight, bias, ndim, normalized_shape, 0, eps, out);
    const clt_tensor *wb[2] = {weight, bias};
    const char *names[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++) {
        if (wb[k] == NULL)
            continue;
        if ((st = clt__same_device(input, wb[k], fn)) != CLT_OK)
            return st;
        if ((st = clt__module_check_dtype(input, wb[k], names[k], NULL, fn)) != CLT_OK)
            return st;
        bool same = wb[k]->ndim == ndim;
        for (int d = 0; same && d < ndim; d++)
            same = wb[k]->shape[d] == normalized_shape[d];
        if (!same) {
            char s1[160], s2[160];
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected %s to be of same shape as normalized_shape, but got "
                              "%s of shape %s and normalized_shape = %s",
                              fn, names[k], names[k],
                              clt__shape_str(s1, sizeof s1, wb[k]->ndim, wb[k]->shape),
                              clt__shape_str(s2, sizeof s2, ndim, normalized_shape));
        }
    }
    if ((st = clt__check_floating(input, "the input", fn)) != CLT_OK)
        return st;
    if ((st = layer_norm_check_input(fn, "Given", input, ndim, normalized_shape)) != CLT_OK)
        return st;
    st = layer_norm_in(fn, input, ndim, weight, bias, eps, out);
    return st == CLT_OK ? clt__ok() : st;
}

static const clt__module_ops layer_norm_ops = {"LayerNorm", layer_norm_forward, NULL, NULL};

clt_status clt_layer_norm_layer(clt_device *dev, int ndim, const int64_t *normalized_shape,
                                double eps, int elementwise_affine, clt_module **out)
{
    static const char fn[] = "clt_layer_norm_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (ndim < 1 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: normalized_shape has %d dims", fn, ndim);
    clt_status st = clt__check_shape(ndim, normalized_shape, fn);
    if (st != CLT_OK)
        return st;
    if (!(eps >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps %g", fn, eps);
    clt_module *m = NULL;
    clt_tensor *w = NULL, *b = NULL;
    CLT__TRY(clt__module_new(&layer_norm_ops, dev, &m));
    m->i[0] = ndim;
    memcpy(m->i + 1, normalized_shape, sizeof(int64_t) * (size_t)ndim);
    m->f[0] = eps;
    if (elementwise_affine) {
        CLT__TRY(clt__full(dev, CLT_FLOAT32, ndim, normalized_shape, 1.0, &w));
        CLT__TRY(clt__module_param(m, "weight", keep_null(&w)));
        CLT__TRY(clt__full(dev, CLT_FLOAT32, ndim, normalized_shape, 0.0, &b));
        CLT__TRY(clt__module_param(m, "bias", keep_null(&b)));
    }
    *out = m;
    m = NULL;
done:
    clt_tensor_free(w);
    clt_tensor_free(b);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- GroupNorm ---------------------------------------------------------------- */

/* F.group_norm's checks, in torch's words where it has them, for the
 * public call or layer fn. */
static clt_status group_norm_check(const char *fn, const clt_tensor *x, int64_t groups,
                                   const clt_tensor *w, const clt_tensor *b, double eps)
{
    char s1[160], s2[160];
    clt_status st;
    if (groups <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected num groups to be greater than 0, got %lld", fn,
                          (long long)groups);
    if (!(eps >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps %g: expected eps >= 0", fn, eps);
    if (x->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected at least 2 dimensions for input tensor but received %d",
                          fn, x->ndim);
    const clt_tensor *wb[2] = {w, b};
    const char *names[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++) {
        if (wb[k] == NULL)
            continue;
        if ((st = clt__same_device(x, wb[k], fn)) != CLT_OK)
            return st;
        if ((st = clt__module_check_dtype(x, wb[k], names[k], NULL, fn)) != CLT_OK)
            return st;
    }
    if ((st = clt__check_floating(x, "the input", fn)) != CLT_OK)
        return st;
    int64_t C = x->shape[1];
    if (C % groups != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected number of channels in input to be divisible by "
                          "num_groups, but got input of shape %s and num_groups=%lld",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                          (long long)groups);
    for (int k = 0; k < 2; k++)
        if (wb[k] && (wb[k]->ndim != 1 || wb[k]->shape[0] != C))
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected %s to be a vector of size equal to the number of "
                              "channels in input, but got %s of shape %s and input of shape %s",
                              fn, names[k], names[k],
                              clt__shape_str(s1, sizeof s1, wb[k]->ndim, wb[k]->shape),
                              clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
    /* torch 1.13's F.group_norm refuses one sample whose groups hold one
     * value each (its _verify_batch_size, given [N * C / G, G, *]) */
    int64_t spatial = 1;
    for (int d = 2; d < x->ndim; d++)
        spatial *= x->shape[d];
    if (x->shape[0] == 1 && C / groups == 1 && spatial == 1) {
        int64_t sz[CLT_MAX_DIMS];
        memcpy(sz, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        sz[0] = x->shape[0] * C / groups;
        sz[1] = groups;
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected more than 1 value per channel when training, got input "
                          "size %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, sz));
    }
    return CLT_OK;
}

/* F.group_norm for the public call or layer fn: x [N, C, *] seen as
 * [N, G, C / G * prod(*)] and normalised over its last dim (the fused
 * normalisation without affine), then y * weight + bias recorded with both
 * seen as [C, 1, ...]. */
static clt_status group_norm_in(const char *fn, const clt_tensor *x, int64_t groups,
                                const clt_tensor *w, const clt_tensor *b, double eps,
                                clt_tensor **out)
{
    clt_status st = group_norm_check(fn, x, groups, w, b, eps);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t n = x->shape[1] / groups, cshape[CLT_MAX_DIMS];
    for (int d = 2; d < x->ndim; d++)
        n *= x->shape[d];
    cshape[0] = x->shape[1];
    for (int d = 1; d < x->ndim - 1; d++)
        cshape[d] = 1;
    clt_tensor *y, *wc, *yw, *bc;
    CLT__TRY(clt__native_norm_rec(fn, "NativeGroupNormBackward0", x, n, NULL, NULL, eps, &y));
    if (w) {
        CLT__TRY(clt__reshape_rec(fn, w, x->ndim - 1, cshape, &wc));
        CLT__TRY(clt__mul_rec(fn, y, wc, &yw));
        y = yw;
    }
    if (b) {
        CLT__TRY(clt__reshape_rec(fn, b, x->ndim - 1, cshape, &bc));
        CLT__TRY(clt__add_rec(fn, y, bc, out));
    } else {
        *out = y;
    }
done:
    return clt__scope_finish(st, out);
}

clt_status clt_group_norm(const clt_tensor *input, int64_t num_groups, const clt_tensor *weight,
                          const clt_tensor *bias, double eps, clt_tensor **out)
{
    static const char fn[] = "clt_group_norm";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 3, (input, weight, bias),
                  clt_group_norm(CLT__AC(0), num_groups, CLT__AC(1), CLT__AC(2), eps, out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    if (half_norm_operands(input, weight, bias))
        return half_norm(fn, input, weight, bias, 0, NULL, num_groups, eps, out);
    clt_status st = group_norm_in(fn, input, num_groups, weight, bias, eps, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* i[0] num_groups, i[1] num_channels; f[0] eps.  Without affine the
 * channels are not checked against num_channels, as in PyTorch. */
static clt_status group_norm_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "GroupNorm";
    clt_status st = clt__module_check_device(m, x, fn);
    if (st != CLT_OK)
        return st;
    bool affine = m->nparams == 2;
    return group_norm_in(fn, x, m->i[0], affine ? m->params[0] : NULL,
                         affine ? m->params[1] : NULL, m->f[0], out);
}

static const clt__module_ops group_norm_ops = {"GroupNorm", group_norm_forward, NULL, NULL};

clt_status clt_group_norm_layer(clt_device *dev, int64_t num_groups, int64_t num_channels,
                                double eps, int affine, clt_module **out)
{
    static const char fn[] = "clt_group_norm_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (num_groups <= 0 || num_channels < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_groups %lld, num_channels %lld: expected a positive number "
                          "of groups and channels >= 0",
                          fn, (long long)num_groups, (long long)num_channels);
    if (num_channels % num_groups != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_channels must be divisible by num_groups (num_channels "
                          "%lld, num_groups %lld)",
                          fn, (long long)num_channels, (long long)num_groups);
    if (!(eps >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps %g: expected eps >= 0", fn, eps);
    clt_module *m = NULL;
    clt_tensor *t = NULL;
    clt_status st;
    CLT__TRY(clt__module_new(&group_norm_ops, dev, &m));
    m->i[0] = num_groups;
    m->i[1] = num_channels;
    m->f[0] = eps;
    if (affine) {
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &num_channels, 1.0, &t));
        CLT__TRY(clt__module_param(m, "weight", keep_null(&t)));
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &num_channels, 0.0, &t));
        CLT__TRY(clt__module_param(m, "bias", keep_null(&t)));
    }
    *out = m;
    m = NULL;
done:
    clt_tensor_free(t);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- BatchNorm ---------------------------------------------------------------- */

/* i[0] features C, i[1] the input dims it takes (2 or 3 for 1d, 4 for 2d),
 * i[2] track_running_stats; f[0] eps, f[1] momentum.  Buffers:
 * running_mean, running_var, num_batches_tracked (int64). */
static clt_status batch_stat(const clt_tensor *x, bool var, const clt_tensor *mu,
                             clt_tensor **out, const char *fn)
{
    /* the mean over every dim but 1, keepdim: shape [1, C, 1, ...] */
    clt_status st = CLT_OK;
    clt_tensor *cur = NULL, *next = NULL;
    if (var) {
        clt_tensor *d = NULL;
        CLT__TRY(clt__sub_rec(fn, x, mu, &d));
        CLT__TRY(clt__mul_rec(fn, d, d, &cur));
    } else {
        CLT__TRY(clt__expand_rec(fn, x, x->ndim, x->shape, &cur));
    }
    for (int d = 0; d < x->ndim; d++) {
        if (d == 1)
            continue;
        CLT__TRY(clt__mean_dim_rec(fn, cur, d, 1, &next));
        cur = next;
    }
    *out = cur;
done:
    return st;
}

clt_status clt__running_next(const clt_tensor *run, const clt_tensor *stat, double momentum,
                             clt_tensor **next, const char *fn)
{
    clt_tensor *a = NULL, *b = NULL, *flat = NULL;
    clt_status st = clt__mul_scalar_into(NULL, run, 1.0 - momentum, &a, fn);
    if (st == CLT_OK)
        st = clt__reshape(stat, run->ndim, run->shape, &flat, fn);
    if (st == CLT_OK)
        st = clt__mul_scalar_into(NULL, flat, momentum, &b, fn);
    if (st == CLT_OK)
        st = clt__add_into(NULL, a, b, next, fn);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(flat);
    return st;
}

clt_status clt__bn_factor(const clt_module *m, const char *fn, double *factor)
{
    *factor = m->f[1];
    if (m->f[1] != CLT_BN_CUMULATIVE)
        return CLT_OK;
    double n = 0;
    clt_status st = clt_tensor_item(m->bufs[2], &n);
    if (st != CLT_OK)
        return clt__error_prefix(st, "%s: num_batches_tracked", fn);
    *factor = 1.0 / (n + 1.0); /* as torch, a count loaded as -1 gives inf */
    return CLT_OK;
}

static clt_status batch_norm_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    const char *name = m->ops->name;
    clt_status st = clt__module_check_device(m, x, name);
    if (st != CLT_OK)
        return st;
    int want = (int)m->i[1]; /* 4 for 2d, 5 for 3d, 2 for 1d (2D or 3D) */
    if ((want > 2 ? x->ndim != want : (x->ndim != 2 && x->ndim != 3)))
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: expected %s input (got %dD input)", name,
                          want == 5 ? "5D" : want == 4 ? "4D" : "2D or 3D", x->ndim);
    if (x->shape[1] != m->i[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: running_mean should contain %lld elements not %lld", name,
                          (long long)x->shape[1], (long long)m->i[0]);
    /* the parameters' dtype, or else the running statistics': PyTorch
     * refuses either kind of mismatch (only a layer with neither takes
     * float64 and float32 alike) */
    if (m->nparams == 2)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, name);
    else if (m->nbufs > 0)
        st = clt__module_check_dtype(x, m->bufs[0], "running_mean", NULL, name);
    if (st != CLT_OK)
        return st;
    bool use_batch = m->training || !m->i[2];
    int64_t count = x->numel / (x->shape[1] ? x->shape[1] : 1);
    if (use_batch && m->training && count <= 1) {
        char s1[160];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected more than 1 value per channel when training, got input "
                          "size %s",
                          name, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t bshape[CLT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        bshape[d] = d == 1 ? x->shape[1] : 1;
    clt_tensor *mu, *var, *xc, *ve, *inv, *y, *w, *b, *t, *res = NULL;
    /* the new running_mean, running_var and num_batches_tracked, written
     * into the buffers once the whole forward has succeeded */
    clt_tensor *next[3] = {NULL, NULL, NULL};
    /* float16 input: normalised in float32 (recorded casts), rounded to
     * half at the end, as torch's GPU kernels compute in float (squares of
     * deviations past 256 would overflow half) */
    const clt_tensor *xs = x;
    bool half = clt__dtype_is_half(x->dtype);
    if (half) {
        clt_tensor *x32 = NULL;
        CLT__TRY(clt__to_dtype_rec(name, x, CLT_FLOAT32, &x32));
        xs = x32;
    }
    if (use_batch) {
        CLT__TRY(batch_stat(xs, false, NULL, &mu, name));
        CLT__TRY(batch_stat(xs, true, mu, &var, name));
        if (m->training && m->i[2]) {
            int was = clt_set_grad_enabled(0);
            clt_tensor *unb = NULL, *mub = NULL, *unbb = NULL;
            double factor = 0;
            st = clt__bn_factor(m, name, &factor);
            if (st == CLT_OK)
                st = clt__mul_scalar_into(NULL, var, (double)count / (double)(count - 1), &unb,
                                          name);
            /* the statistics in the buffers' dtype */
            if (st == CLT_OK)
                st = clt__to_dtype(mu, m->bufs[0]->dtype, &mub, name);
            if (st == CLT_OK)
                st = clt__to_dtype(unb, m->bufs[1]->dtype, &unbb, name);
            if (st == CLT_OK)
                st = clt__running_next(m->bufs[0], mub, factor, &next[0], name);
            if (st == CLT_OK)
                st = clt__running_next(m->bufs[1], unbb, factor, &next[1], name);
            clt_tensor_free(mub);
            clt_tensor_free(unbb);
            if (st == CLT_OK)
                st = clt__add_scalar_into(NULL, m->bufs[2], 1.0, &next[2], name);
            clt_tensor_free(unb);
            clt_set_grad_enabled(was);
            CLT__TRY(st);
        }
    } else {
        CLT__TRY(clt__reshape_rec(name, m->bufs[0], x->ndim, bshape, &mu));
        CLT__TRY(clt__reshape_rec(name, m->bufs[1], x->ndim, bshape, &var));
    }
    CLT__TRY(clt__sub_rec(name, xs, mu, &xc));
    CLT__TRY(clt__add_scalar_rec(name, var, m->f[0], &ve));
    CLT__TRY(clt__rsqrt_rec(name, ve, &inv));
    CLT__TRY(clt__mul_rec(name, xc, inv, &y));
    if (m->nparams == 2) {
        CLT__TRY(clt__reshape_rec(name, m->params[0], x->ndim, bshape, &w));
        CLT__TRY(clt__reshape_rec(name, m->params[1], x->ndim, bshape, &b));
        CLT__TRY(clt__mul_rec(name, y, w, &t));
        CLT__TRY(clt__add_rec(name, t, b, &res));
    } else {
        res = y;
    }
    if (half)
        CLT__TRY(clt__to_dtype_rec(name, res, x->dtype, out));
    else
        *out = res;
    for (int k = 0; k < 3 && next[k]; k++)
        CLT__TRY(clt__forward_defer_write(m->bufs[k], next[k]));
done:
    return clt__scope_finish(st, out);
}

static const clt__module_ops batch_norm1d_ops = {"BatchNorm1d", batch_norm_forward, NULL, NULL};
static const clt__module_ops batch_norm2d_ops = {"BatchNorm2d", batch_norm_forward, NULL, NULL};
static const clt__module_ops batch_norm3d_ops = {"BatchNorm3d", batch_norm_forward, NULL, NULL};

static bool is_batch_norm(const clt__module_ops *ops)
{
    return ops == &batch_norm1d_ops || ops == &batch_norm2d_ops || ops == &batch_norm3d_ops;
}

/* BatchNorm over k (1 to 3) spatial dims: i[1] the input's rank (2 for 1d:
 * 2 or 3). */
static clt_status batch_norm(int k, clt_device *dev, int64_t features, double eps,
                             double momentum, int affine, int track, clt_module **out)
{
    static const char *const fns[3] = {"clt_batch_norm1d_layer", "clt_batch_norm2d_layer",
                                       "clt_batch_norm3d_layer"};
    static const clt__module_ops *const ops[3] = {&batch_norm1d_ops, &batch_norm2d_ops,
                                                  &batch_norm3d_ops};
    clt_status st = clt__norm_layer_new(ops[k - 1], dev, features, eps, momentum, affine, track,
                                        fns[k - 1], out);
    if (st == CLT_OK)
        (*out)->i[1] = k == 1 ? 2 : k + 2;
    return st;
}

clt_status clt__norm_layer_new(const clt__module_ops *ops, clt_device *dev, int64_t features,
                               double eps, double momentum, int affine, int track,
                               const char *fn, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    bool bn = is_batch_norm(ops);
    if (features <= 0 || !(eps >= 0) ||
        !((momentum >= 0 && momentum <= 1) || (bn && momentum == CLT_BN_CUMULATIVE)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_features %lld, eps %g, momentum %g: expected a positive count, "
                          "eps >= 0 and momentum in [0, 1]%s",
                          fn, (long long)features, eps, momentum,
                          bn ? " or CLT_BN_CUMULATIVE (torch's None)"
                          : momentum == CLT_BN_CUMULATIVE
                              ? " (CLT_BN_CUMULATIVE, torch's None, is BatchNorm's: torch's "
                                "instance_norm refuses a None momentum)"
                              : "");
    clt_module *m = NULL;
    clt_tensor *t = NULL;
    clt_status st;
    CLT__TRY(clt__module_new(ops, dev, &m));
    m->i[0] = features;
    m->i[2] = track != 0;
    m->f[0] = eps;
    m->f[1] = momentum;
    if (affine) {
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &features, 1.0, &t));
        CLT__TRY(clt__module_param(m, "weight", keep_null(&t)));
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &features, 0.0, &t));
        CLT__TRY(clt__module_param(m, "bias", keep_null(&t)));
    }
    if (track) {
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &features, 0.0, &t));
        CLT__TRY(clt__module_buffer(m, "running_mean", keep_null(&t)));
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &features, 1.0, &t));
        CLT__TRY(clt__module_buffer(m, "running_var", keep_null(&t)));
        CLT__TRY(clt__full(dev, CLT_INT64, 0, NULL, 0.0, &t));
        CLT__TRY(clt__module_buffer(m, "num_batches_tracked", keep_null(&t)));
    }
    *out = m;
    m = NULL;
done:
    clt_tensor_free(t);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_batch_norm1d_layer(clt_device *dev, int64_t num_features, double eps,
                                  double momentum, int affine, int track_running_stats,
                                  clt_module **out)
{
    return batch_norm(1, dev, num_features, eps, momentum, affine, track_running_stats, out);
}

clt_status clt_batch_norm2d_layer(clt_device *dev, int64_t num_features, double eps,
                                  double momentum, int affine, int track_running_stats,
                                  clt_module **out)
{
    return batch_norm(2, dev, num_features, eps, momentum, affine, track_running_stats, out);
}

clt_status clt_batch_norm3d_layer(clt_device *dev, int64_t num_features, double eps,
                                  double momentum, int affine, int track_running_stats,
                                  clt_module **out)
{
    return batch_norm(3, dev, num_features, eps, momentum, affine, track_running_stats, out);
}

/* ---- swa_utils.update_bn ------------------------------------------------------------ */

/* The BatchNorm layers with running statistics of m and its descendants,
 * in order, into bn (NULL: counted only) from position k; the count. */
static size_t batch_norms(clt_module *m, clt_module **bn, size_t k)
{
    if (is_batch_norm(m->ops) && m->i[2]) {
        if (bn)
            bn[k] = m;
        k++;
    }
    for (size_t c = 0; c < m->nchildren; c++)
        k = batch_norms(m->children[c], bn, k);
    return k;
}

/* One epoch of loader through model, in no-grad mode, each BatchNorm of
 * bn (n of them, their counts reset) weighing batch k by 1 / k, as torch's
 * momentum=None. */
static clt_status bn_epoch(clt_dataloader *loader, clt_module *model, clt_module **bn, size_t n)
{
    clt_status st = CLT_OK;
    for (size_t j = 0; j < n; j++)
        bn[j]->f[1] = CLT_BN_CUMULATIVE;
    while (st == CLT_OK) {
        clt_tensor *x = NULL, *y = NULL, *out = NULL;
        int got = 0;
        st = clt_dataloader_next(loader, &x, &y, &got);
        clt_tensor_free(y);
        if (st != CLT_OK || !got)
            break;
        int was = clt_set_grad_enabled(0);
        st = clt_module_forward(model, x, &out);
        clt_set_grad_enabled(was);
        clt_tensor_free(x);
        clt_tensor_free(out);
    }
    return st;
}

clt_status clt_update_bn(clt_dataloader *loader, clt_module *model)
{
    static const char fn[] = "clt_update_bn";
    CLT__REQUIRE_ARG(loader, fn);
    CLT__REQUIRE_ARG(model, fn);
    size_t n = batch_norms(model, NULL, 0);
    if (n == 0)
        return clt__ok();
    clt_module **bn = clt__calloc(n, sizeof *bn);
    double *momenta = clt__calloc(n, sizeof *momenta);
    if (bn == NULL || momenta == NULL) {
        free(bn);
        free(momenta);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    batch_norms(model, bn, 0);
    clt_status st = CLT_OK;
    for (size_t j = 0; j < n && st == CLT_OK; j++) {
        momenta[j] = bn[j]->f[1];
        st = clt_fill_(bn[j]->bufs[0], 0.0);
        if (st == CLT_OK)
            st = clt_fill_(bn[j]->bufs[1], 1.0);
        if (st == CLT_OK)
            st = clt_fill_(bn[j]->bufs[2], 0.0);
    }
    int training = clt_module_is_training(model);
    if (st == CLT_OK) {
        clt_module_train(model, 1);
        st = bn_epoch(loader, model, bn, n);
        for (size_t j = 0; j < n; j++)
            bn[j]->f[1] = momenta[j];
        clt_module_train(model, training);
    }
    free(bn);
    free(momenta);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- Dropout ---------------------------------------------------------------------- */

/* f[0] p. */
static clt_status dropout_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__dropout_rec("Dropout", m->gen, m->training ? m->f[0] : 0.0, x, out);
}

/* Training: x * (u >= p) / (1 - p) with u uniform from the generator, so
 * that the masks are the same on every device. */
clt_status clt__dropout_rec(const char *fn, clt_generator *gen, double p, const clt_tensor *x,
                            clt_tensor **out)
{
    if (p == 0.0)
        return clt__expand_rec(fn, x, x->ndim, x->shape, out); /* the identity, recorded */
    if (p == 1.0 && x->dtype != CLT_BOOL)
        return clt__mul_scalar_rec(fn, x, 0.0, out); /* x * 0, as PyTorch: NaN stays */
    if (p == 1.0) { /* bool * 0 is int64; PyTorch's Dropout gives bool false */
        clt_status st = clt__full(x->dev, CLT_BOOL, x->ndim, x->shape, 0.0, out);
        return st == CLT_OK ? st : clt__error_prefix(st, "%s", fn);
    }
    /* scaling by 1 / (1 - p) makes floats, which PyTorch refuses to cast
     * into an integer result; refused here too rather than truncated */
    if (!clt__dtype_is_float(x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: in train mode with 0 < p < 1 the input must be floating point, "
                          "not %s: the scaled values cannot be cast back to it (convert the "
                          "input with clt_to_dtype)",
                          fn, clt_dtype_name(x->dtype));
    return clt__dropout(fn, gen, p, x, out);
}

clt_status clt__dropout(const char *fn, clt_generator *gen, double p, const clt_tensor *x,
                        clt_tensor **out)
{
    if (p == 1.0) /* every element dropped: x * 0, as PyTorch (NaN stays), nothing drawn */
        return clt__mul_scalar_rec(fn, x, 0.0, out);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *u, *keep, *kf, *y;
    CLT__TRY(clt__forward_note_generator(gen));
    CLT__TRY(clt__rand_in(fn, gen, x->dev, x->dtype, x->ndim, x->shape, &u));
    CLT__TRY(clt__ge_scalar_rec(fn, u, p, &keep));
    CLT__TRY(clt__to_dtype_rec(fn, keep, x->dtype, &kf));
    CLT__TRY(clt__mul_rec(fn, x, kf, &y));
    CLT__TRY(clt__mul_scalar_rec(fn, y, 1.0 / (1.0 - p), out));
done:
    return clt__scope_finish(st, out);
}

static const clt__module_ops dropout_ops = {"Dropout", dropout_forward, NULL, NULL};

clt_status clt_dropout_layer(double p, clt_generator *gen, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_dropout_layer");
    *out = NULL;
    if (!(p >= 0.0 && p <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_dropout_layer: dropout probability has to be between 0 and 1, "
                          "but got %g",
                          p);
    clt_status st = clt__module_new(&dropout_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->f[0] = p;
    (*out)->gen = gen;
    return clt__ok();
}

/* ---- Embedding --------------------------------------------------------------------- */

/* i[0] the padding row (wrapped), or -1; i[1] whether max_norm is given,
 * f[0] max_norm, f[1] norm_type; i[2] scale_grad_by_freq; i[3] sparse. */
static clt_status embedding_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, "Embedding");
    if (st != CLT_OK)
        return st;
    clt_embedding_opts o = {m->i[0] >= 0 ? &m->i[0] : NULL, m->i[1] ? &m->f[0] : NULL, m->f[1],
                            (int)m->i[2], (int)m->i[3]};
    return clt__embedding_opts_rec("Embedding", m->params[0], x, &o, out);
}

static const clt__module_ops embedding_ops = {"Embedding", embedding_forward, NULL, NULL};

/* The settings of opts (NULL: the defaults) on m, padding_idx wrapped
 * into pad. */
static void embedding_settings(clt_module *m, int64_t pad, const clt_embedding_opts *o)
{
    m->i[0] = pad;
    m->i[1] = o && o->max_norm;
    m->f[0] = o && o->max_norm ? *o->max_norm : 0.0;
    m->f[1] = o ? o->norm_type : 2.0;
    m->i[2] = o && o->scale_grad_by_freq;
    m->i[3] = o && o->sparse;
}

static clt_status embedding_layer(clt_device *dev, int64_t num_embeddings, int64_t embedding_dim,
                                  const clt_embedding_opts *opts, clt_generator *gen,
                                  clt_module **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    int64_t pad = -1;
    clt_status st = clt__padding_idx(opts ? opts->padding_idx : NULL, num_embeddings, &pad, fn);
    if (st == CLT_OK)
        st = clt__embedding_table(&embedding_ops, dev, num_embeddings, embedding_dim, pad, gen,
                                  out, fn);
    if (st == CLT_OK)
        embedding_settings(*out, pad, opts);
    return st;
}

clt_status clt_embedding_layer(clt_device *dev, int64_t num_embeddings, int64_t embedding_dim,
                               clt_generator *gen, clt_module **out)
{
    return embedding_layer(dev, num_embeddings, embedding_dim, NULL, gen, out,
                           "clt_embedding_layer");
}

clt_status clt_embedding_layer_ex(clt_device *dev, int64_t num_embeddings,
                                  int64_t embedding_dim, const int64_t *padding_idx,
                                  clt_generator *gen, clt_module **out)
{
    clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
    o.padding_idx = padding_idx;
    return embedding_layer(dev, num_embeddings, embedding_dim, &o, gen, out,
                           "clt_embedding_layer_ex");
}

clt_status clt_embedding_layer_with_opts(clt_device *dev, int64_t num_embeddings,
                                         int64_t embedding_dim, const clt_embedding_opts *opts,
                                         clt_generator *gen, clt_module **out)
{
    return embedding_layer(dev, num_embeddings, embedding_dim, opts, gen, out,
                           "clt_embedding_layer_with_opts");
}

clt_status clt_embedding_layer_from_pretrained(const clt_tensor *embeddings, int freeze,
                                               const clt_embedding_opts *opts,
                                               clt_module **out)
{
    static const char fn[] = "clt_embedding_layer_from_pretrained";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_module *m = NULL;
    clt_status st = clt__embedding_pretrained(&embedding_ops, embeddings, freeze, &m, fn);
    if (st != CLT_OK)
        return st;
    int64_t pad = -1;
    CLT__TRY(clt__padding_idx(opts ? opts->padding_idx : NULL, embeddings->shape[0], &pad, fn));
    embedding_settings(m, pad, opts);
    *out = m;
    m = NULL;
done:
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_embedding_layer_padding_idx(const clt_module *m, int *has_padding_idx,
                                           int64_t *padding_idx)
{
    static const char fn[] = "clt_embedding_layer_padding_idx";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(has_padding_idx, fn);
    CLT__REQUIRE_ARG(padding_idx, fn);
    int64_t pad;
    if (m->ops == &embedding_ops)
        pad = m->i[0];
    else if (!clt__embedding_bag_pad(m, &pad))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the module is a %s, not an Embedding or EmbeddingBag", fn,
                          m->ops->name);
    *has_padding_idx = pad >= 0;
    *padding_idx = pad;
    return clt__ok();
}

clt_status clt__embedding_table(const clt__module_ops *ops, clt_device *dev,
                                int64_t num_embeddings, int64_t embedding_dim, int64_t pad,
                                clt_generator *gen, clt_module **out, const char *fn)
{
    if (num_embeddings <= 0 || embedding_dim <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_embeddings (%lld) and embedding_dim (%lld) must be positive",
                          fn, (long long)num_embeddings, (long long)embedding_dim);
    clt_module *m = NULL;
    clt_tensor *w = NULL, *row = NULL;
    clt_status st;
    uint64_t drawn = clt_generator_offset(gen);
    CLT__TRY(clt__module_new(ops, dev, &m));
    int64_t shape[2] = {num_embeddings, embedding_dim};
    CLT__TRY(clt__randn_in(fn, gen, dev, CLT_FLOAT32, 2, shape, &w)); /* N(0, 1), as PyTorch */
    if (pad >= 0) { /* torch's _fill_padding_idx_with_zero */
        CLT__TRY(clt__narrow(w, 0, pad, 1, &row, fn));
        CLT__TRY(clt__fill_(row, 0.0, fn));
    }
    CLT__TRY(clt__module_param(m, "weight", keep_null(&w)));
    *out = m;
    m = NULL;
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, drawn);
    clt_tensor_free(row);
    clt_tensor_free(w);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* The table module of ops (Embedding, EmbeddingBag) from_pretrained makes:
 * embeddings (2-D, floating) itself as its weight, as torch's
 * Parameter(embeddings) (the same storage, the padding row as it is),
 * frozen when freeze.  New module: *out (clt_module_free), NULL on error. */
clt_status clt__embedding_pretrained(const clt__module_ops *ops, const clt_tensor *embeddings,
                                     int freeze, clt_module **out, const char *fn)
{
    *out = NULL;
    CLT__REQUIRE_ARG(embeddings, fn);
    char s1[160];
    if (embeddings->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Embeddings parameter is expected to be 2-dimensional, but has "
                          "shape %s",
                          fn, clt__shape_str(s1, sizeof s1, embeddings->ndim, embeddings->shape));
    clt_status st = clt__check_floating(embeddings, "embeddings", fn);
    if (st != CLT_OK)
        return st;
    clt_module *m = NULL;
    clt_tensor *w = NULL;
    CLT__TRY(clt__module_new(ops, embeddings->dev, &m));
    CLT__TRY(clt__error_in(clt_detach(embeddings, &w), fn));
    CLT__TRY(clt__module_param(m, "weight", keep_null(&w)));
    if (freeze)
        CLT__TRY(clt_set_requires_grad(m->params[0], 0));
    *out = m;
    m = NULL;
done:
    clt_tensor_free(w);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}
