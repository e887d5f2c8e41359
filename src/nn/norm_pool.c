/* norm_pool.c: InstanceNorm1d/2d/3d and clt_instance_norm,
 * LocalResponseNorm, LPPool1d/2d, AdaptiveMaxPool1d/2d, MaxUnpool1d/2d and
 * the channel and alpha dropouts, each a functional op and a layer; the
 * layers MaxPool3d, AvgPool3d, AdaptiveAvgPool1d/3d, AdaptiveMaxPool3d,
 * MaxUnpool3d (their functions in src/autograd/grad_spatial.c) and the
 * padding layers over clt_pad.  All are composed of recorded ops (the
 * fused normalisation, the pools of conv.h), so that autograd gives their
 * backward passes. */
#include <math.h>
#include <string.h>

#include "nn/nn.h"
#include "ops/conv.h"

/* ---- InstanceNorm -------------------------------------------------------------- */

/* F.instance_norm's checks, in torch's words where it has them. */
static clt_status instance_norm_check(const char *fn, const clt_tensor *x, const clt_tensor *rm,
                                      const clt_tensor *rv, const clt_tensor *w,
                                      const clt_tensor *b, bool use_input_stats, double eps)
{
    char s1[160], s2[160];
    clt_status st;
    if (!(eps >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps %g: expected eps >= 0", fn, eps);
    if (x->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected at least 2 dimensions for input tensor but received %d",
                          fn, x->ndim);
    if (!use_input_stats && (rm == NULL || rv == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected running_mean and running_var to be defined when "
                          "use_input_stats is false",
                          fn);
    const clt_tensor *ts[4] = {w, b, rm, rv};
    const char *names[4] = {"weight", "bias", "running_mean", "running_var"};
    for (int k = 0; k < 4; k++) {
        if (ts[k] == NULL)
            continue;
        if ((st = clt__same_device(x, ts[k], fn)) != CLT_OK)
            return st;
        if ((st = clt__module_check_dtype(x, ts[k], names[k], NULL, fn)) != CLT_OK)
            return st;
        if (ts[k]->ndim != 1 || ts[k]->shape[0] != x->shape[1])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected %s to be a vector of size equal to the number of "
                              "channels in input, but got %s of shape %s and input of shape %s",
                              fn, names[k], names[k],
                              clt__shape_str(s1, sizeof s1, ts[k]->ndim, ts[k]->shape),
                              clt__shape_str(s2, sizeof s2, x->ndim, x->shape));
    }
    if ((st = clt__check_floating(x, "the input", fn)) != CLT_OK)
        return st;
    int64_t spatial = 1;
    for (int d = 2; d < x->ndim; d++)
        spatial *= x->shape[d];
    if (use_input_stats && spatial == 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected more than 1 spatial element when training, got input "
                          "size %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    return CLT_OK;
}

/* The new running statistics of an instance norm of x3 [N, C, S] (no
 * graph): torch averages the per-instance means and unbiased variances
 * over the batch, then takes momentum of them. */
static clt_status instance_running_next(const char *fn, const clt_tensor *x3,
                                        const clt_tensor *rm, const clt_tensor *rv,
                                        double momentum, clt_tensor **next)
{
    int was = clt_set_grad_enabled(0);
    clt_tensor *m_nc = NULL, *m_c = NULL, *v_nc = NULL, *v_c = NULL;
    clt_status st = clt__mean_dim(x3, 2, 0, &m_nc, fn);
    if (st == CLT_OK)
        st = clt__mean_dim(m_nc, 0, 0, &m_c, fn);
    if (st == CLT_OK)
        st = clt__var_dim(x3, 2, 1.0, 0, &v_nc, fn);
    if (st == CLT_OK)
        st = clt__mean_dim(v_nc, 0, 0, &v_c, fn);
    if (st == CLT_OK)
        st = clt__running_next(rm, m_c, momentum, &next[0], fn);
    if (st == CLT_OK)
        st = clt__running_next(rv, v_c, momentum, &next[1], fn);
    clt_tensor_free(m_nc);
    clt_tensor_free(m_c);
    clt_tensor_free(v_nc);
    clt_tensor_free(v_c);
    clt_set_grad_enabled(was);
    return st;
}

/* x [N, C, *] seen as [N, C, S]: each (n, c) normalised over its S values
 * with its own statistics (GroupNorm's fused kernel, a group per channel)
 * or with the running ones, then scaled and shifted per channel, and seen
 * back as x's shape (torch's last step is a view too: ViewBackward0).
 * With use_input_stats, running statistics and next not NULL, next[0] and
 * next[1] get their new values (no graph; the caller writes them). */
static clt_status instance_norm_in(const char *fn, const clt_tensor *x, const clt_tensor *rm,
                                   const clt_tensor *rv, const clt_tensor *w, const clt_tensor *b,
                                   bool use_input_stats, double momentum, double eps,
                                   clt_tensor **out, clt_tensor **next)
{
    clt_status st = instance_norm_check(fn, x, rm, rv, w, b, use_input_stats, eps);
    if (st != CLT_OK)
        return st;
    int64_t S = 1;
    for (int d = 2; d < x->ndim; d++)
        S *= x->shape[d];
    int64_t s3[3] = {x->shape[0], x->shape[1], S}, cs[2] = {x->shape[1], 1};
    if (use_input_stats && next && rm && rv) {
        /* outside the scope below, which would release them */
        clt_tensor *xs = NULL;
        st = clt__reshape(x, 3, s3, &xs, fn);
        if (st == CLT_OK)
            st = instance_running_next(fn, xs, rm, rv, momentum, next);
        clt_tensor_free(xs);
    }
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *x3, *y, *t, *r, *ve, *inv, *wc, *bc;
    CLT__TRY(clt__reshape_rec(fn, x, 3, s3, &x3));
    if (use_input_stats) {
        CLT__TRY(clt__native_norm_rec(fn, "NativeGroupNormBackward0", x3, S, NULL, NULL, eps, &y));
    } else {
        CLT__TRY(clt__reshape_rec(fn, rm, 2, cs, &r));
        CLT__TRY(clt__sub_rec(fn, x3, r, &t));
        CLT__TRY(clt__reshape_rec(fn, rv, 2, cs, &r));
        CLT__TRY(clt__add_scalar_rec(fn, r, eps, &ve));
        CLT__TRY(clt__rsqrt_rec(fn, ve, &inv));
        CLT__TRY(clt__mul_rec(fn, t, inv, &y));
    }
    if (w) {
        CLT__TRY(clt__reshape_rec(fn, w, 2, cs, &wc));
        CLT__TRY(clt__mul_rec(fn, y, wc, &t));
        y = t;
    }
    if (b) {
        CLT__TRY(clt__reshape_rec(fn, b, 2, cs, &bc));
        CLT__TRY(clt__add_rec(fn, y, bc, &t));
        y = t;
    }
    CLT__TRY(clt__reshape_rec(fn, y, x->ndim, x->shape, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_instance_norm(const clt_tensor *input, clt_tensor *running_mean,
                             clt_tensor *running_var, const clt_tensor *weight,
                             const clt_tensor *bias, int use_input_stats, double momentum,
                             double eps, clt_tensor **out)
{
    static const char fn[] = "clt_instance_norm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    clt_tensor *next[2] = {NULL, NULL}, *run[2] = {running_mean, running_var};
    clt_status st = instance_norm_in(fn, input, running_mean, running_var, weight, bias,
                                     use_input_stats != 0, momentum, eps, out, next);
    /* the running statistics change once the output is made, in place as
     * torch's */
    for (int k = 0; k < 2 && st == CLT_OK && next[k]; k++) {
        st = clt__copy_into(run[k], next[k], fn);
        if (st == CLT_OK)
            clt__version_bump(run[k]);
    }
    clt_tensor_free(next[0]);
    clt_tensor_free(next[1]);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* i[0] num_features, i[1] the dims of an unbatched input (2 for 1d, 3 for
 * 2d, 4 for 3d), i[2] track_running_stats; f[0] eps, f[1] momentum.  Parameters
 * weight, bias (affine); buffers running_mean, running_var,
 * num_batches_tracked (which InstanceNorm, unlike BatchNorm, leaves at 0). */
static clt_status instance_norm_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    const char *name = m->ops->name;
    clt_status st = clt__module_check_device(m, x, name);
    if (st != CLT_OK)
        return st;
    int nb = (int)m->i[1], fd = x->ndim - nb; /* torch's feature_dim */
    if (x->ndim != nb && x->ndim != nb + 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: expected %dD or %dD input (got %dD input)",
                          name, nb, nb + 1, x->ndim);
    bool affine = m->nparams == 2, track = m->nbufs > 0;
    if (affine && x->shape[fd] != m->i[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected input's size at dim=%d to match num_features (%lld), but "
                          "got: %lld.",
                          name, fd, (long long)m->i[0], (long long)x->shape[fd]);
    clt_tensor *xb = NULL, *yb = NULL, *next[2] = {NULL, NULL};
    if (x->ndim == nb) /* unbatched: as a batch of one */
        st = clt__unsqueeze_rec(name, x, 0, &xb);
    if (st == CLT_OK)
        st = instance_norm_in(name, xb ? xb : x, track ? m->bufs[0] : NULL,
                              track ? m->bufs[1] : NULL, affine ? m->params[0] : NULL,
                              affine ? m->params[1] : NULL, m->training || !track, m->f[1],
                              m->f[0], xb ? &yb : out, m->training && track ? next : NULL);
    if (st == CLT_OK && xb)
        st = clt__squeeze_rec(name, yb, 0, out);
    for (int k = 0; k < 2 && st == CLT_OK && next[k]; k++)
        st = clt__forward_defer_write(m->bufs[k], next[k]);
    clt_tensor_free(xb);
    clt_tensor_free(yb);
    clt_tensor_free(next[0]);
    clt_tensor_free(next[1]);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static const clt__module_ops instance_norm_ops[3] = {
    {"InstanceNorm1d", instance_norm_forward, NULL, NULL},
    {"InstanceNorm2d", instance_norm_forward, NULL, NULL},
    {"InstanceNorm3d", instance_norm_forward, NULL, NULL}};

/* InstanceNorm over k (1 to 3) spatial dims. */
static clt_status instance_norm_layer(int k, clt_device *dev, int64_t features, double eps,
                                      double momentum, int affine, int track, clt_module **out)
{
    static const char *const fns[3] = {"clt_instance_norm1d_layer", "clt_instance_norm2d_layer",
                                       "clt_instance_norm3d_layer"};
    clt_status st = clt__norm_layer_new(&instance_norm_ops[k - 1], dev, features, eps, momentum,
                                        affine, track, fns[k - 1], out);
    if (st == CLT_OK)
        (*out)->i[1] = k + 1;
    return st;
}

clt_status clt_instance_norm1d_layer(clt_device *dev, int64_t num_features, double eps,
                                     double momentum, int affine, int track_running_stats,
                                     clt_module **out)
{
    return instance_norm_layer(1, dev, num_features, eps, momentum, affine,
                               track_running_stats, out);
}

clt_status clt_instance_norm2d_layer(clt_device *dev, int64_t num_features, double eps,
                                     double momentum, int affine, int track_running_stats,
                                     clt_module **out)
{
    return instance_norm_layer(2, dev, num_features, eps, momentum, affine,
                               track_running_stats, out);
}

clt_status clt_instance_norm3d_layer(clt_device *dev, int64_t num_features, double eps,
                                     double momentum, int affine, int track_running_stats,
                                     clt_module **out)
{
    return instance_norm_layer(3, dev, num_features, eps, momentum, affine,
                               track_running_stats, out);
}

/* ---- LocalResponseNorm ------------------------------------------------------------ */

clt_status clt__lrn_check_size(int64_t size, const char *fn)
{
    if (size > 0)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: size %lld: expected a positive size", fn,
                      (long long)size);
}

/* torch's F.local_response_norm: x / (k + alpha * avg)^beta, avg the mean
 * of x^2 over a window of `size` channels from c - size/2 to c + (size -
 * 1)/2, zeros beyond the edges counted (torch pads and average-pools).
 * Here x^2 seen as [N, 1, C, rest] goes through avg_pool2d with kernel
 * {size, 1} and padding size/2 on both sides, which gives the same
 * windows (for an even size one more at the end, cut off). */
static clt_status lrn_in(const char *fn, const clt_tensor *x, int64_t size, double alpha,
                         double beta, double k, clt_tensor **out)
{
    clt_status st = clt__lrn_check_size(size, fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim < 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 3D or higher dimensionality input (got %d dimensions)",
                          fn, x->ndim);
    if (x->numel == 0)
        return clt__expand_rec(fn, x, x->ndim, x->shape, out);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t C = x->shape[1];
    int64_t s4[4] = {x->shape[0], 1, C, x->numel / (x->shape[0] * C)};
    int64_t kernel[2] = {size, 1}, stride[2] = {1, 1}, pad[2] = {size / 2, 0};
    clt_tensor *sq, *sq4, *avg, *avg_c, *div, *t1, *t2, *t3;
    CLT__TRY(clt__mul_rec(fn, x, x, &sq));
    CLT__TRY(clt__reshape_rec(fn, sq, 4, s4, &sq4));
    CLT__TRY(clt__pool2d_rec(fn, false, sq4, kernel, stride, pad, NULL, 0, 1, &avg));
    avg_c = avg;
    if (avg->shape[2] != C)
        CLT__TRY(clt__narrow_rec(fn, avg, 2, 0, C, &avg_c));
    CLT__TRY(clt__reshape_rec(fn, avg_c, x->ndim, x->shape, &div));
    CLT__TRY(clt__mul_scalar_rec(fn, div, alpha, &t1));
    CLT__TRY(clt__add_scalar_rec(fn, t1, k, &t2));
    CLT__TRY(clt__pow_scalar_rec(fn, t2, beta, &t3));
    CLT__TRY(clt__div_rec(fn, x, t3, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_local_response_norm(const clt_tensor *input, int64_t size, double alpha,
                                   double beta, double k, clt_tensor **out)
{
    static const char fn[] = "clt_local_response_norm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    clt_status st = lrn_in(fn, input, size, alpha, beta, k, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* i[0] size; f[0] alpha, f[1] beta, f[2] k. */
static clt_status lrn_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return lrn_in("LocalResponseNorm", x, m->i[0], m->f[0], m->f[1], m->f[2], out);
}

static const clt__module_ops lrn_ops = {"LocalResponseNorm", lrn_forward, NULL, NULL};

clt_status clt__lrn_layer_new(const clt__module_ops *ops, const char *fn, int64_t size,
                              double alpha, double beta, double k, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = clt__lrn_check_size(size, fn);
    if (st == CLT_OK)
        st = clt__module_new(ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = size;
    (*out)->f[0] = alpha;
    (*out)->f[1] = beta;
    (*out)->f[2] = k;
    return clt__ok();
}

clt_status clt_local_response_norm_layer(int64_t size, double alpha, double beta, double k,
                                         clt_module **out)
{
    return clt__lrn_layer_new(&lrn_ops, "clt_local_response_norm_layer", size, alpha, beta, k,
                              out);
}

/* ---- LPPool ------------------------------------------------------------------------ */

/* torch's F.lp_pool1d and lp_pool2d: avg_pool(x^p) without padding, then
 * (sign(avg) * relu(|avg|) * kernel size)^(1 / p), as written (the product
 * is avg itself: a negative one stays negative).
 * k = 1: kernel[0] and stride[0] (0: the kernel) of [N, C, L] or [C, L]. */
static clt_status lp_pool_in(const char *fn, int k, const clt_tensor *x, double norm_type,
                             const int64_t *kernel, const int64_t *stride, int ceil_mode,
                             clt_tensor **out)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *xp, *avg, *sg, *ab, *re, *t, *tk;
    int64_t zero[2] = {0, 0};
    CLT__TRY(clt__pow_scalar_rec(fn, x, norm_type, &xp));
    if (k == 2)
        CLT__TRY(clt__pool2d_rec(fn, false, xp, kernel, stride, zero, NULL, ceil_mode, 1, &avg));
    else
        CLT__TRY(clt__pool1d_rec(fn, false, xp, kernel[0], stride ? stride[0] : 0, 0, 1,
                                 ceil_mode, 1, &avg));
    CLT__TRY(clt__sign_rec(fn, avg, &sg));
    CLT__TRY(clt__abs_rec(fn, avg, &ab));
    CLT__TRY(clt__relu_rec(fn, ab, &re));
    CLT__TRY(clt__mul_rec(fn, sg, re, &t));
    CLT__TRY(clt__mul_scalar_rec(fn, t, (double)(kernel[0] * (k == 2 ? kernel[1] : 1)), &tk));
    CLT__TRY(clt__pow_scalar_rec(fn, tk, 1.0 / norm_type, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_lp_pool2d(const clt_tensor *input, double norm_type, const int64_t kernel[2],
                         const int64_t stride[2], int ceil_mode, clt_tensor **out)
{
    static const char fn[] = "clt_lp_pool2d";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(kernel, fn);
    clt_status st = lp_pool_in(fn, 2, input, norm_type, kernel, stride, ceil_mode, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_lp_pool1d(const clt_tensor *input, double norm_type, int64_t kernel,
                         int64_t stride, int ceil_mode, clt_tensor **out)
{
    static const char fn[] = "clt_lp_pool1d";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    clt_status st = lp_pool_in(fn, 1, input, norm_type, &kernel, &stride, ceil_mode, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* window_layer's settings, i[10] ceil_mode, f[0] norm_type. */
static clt_status lp_pool_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return lp_pool_in(m->ops->name, (int)m->i[0], x, m->f[0], &m->i[1], &m->i[4], (int)m->i[10],
                      out);
}

static const clt__module_ops lp_pool1d_ops = {"LPPool1d", lp_pool_forward, NULL, NULL};
static const clt__module_ops lp_pool2d_ops = {"LPPool2d", lp_pool_forward, NULL, NULL};

/* A new pooling layer of ops over k (1 to 3) dims: i[0] k, i[1..k] kernel
 * (> 0), i[4..] stride (>= 0; NULL or 0: the kernel size), i[7..] padding
 * (>= 0; NULL: 0), checked here for the constructor fn. */
static clt_status window_layer(const clt__module_ops *ops, int k, const int64_t *kernel,
                               const int64_t *stride, const int64_t *padding, const char *fn,
                               clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    for (int d = 0; d < k; d++) {
        int64_t s = stride ? stride[d] : 0, p = padding ? padding[d] : 0;
        if (kernel[d] <= 0 || s < 0 || p < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: kernel_size %lld, stride %lld and padding %lld: expected a "
                              "positive kernel size, a stride >= 0 (0: the kernel size) and "
                              "padding >= 0",
                              fn, (long long)kernel[d], (long long)s, (long long)p);
    }
    clt_status st = clt__module_new(ops, NULL, out);
    if (st != CLT_OK)
        return st;
    clt_module *m = *out;
    m->i[0] = k;
    for (int d = 0; d < k; d++) {
        m->i[1 + d] = kernel[d];
        m->i[4 + d] = stride ? stride[d] : 0;
        m->i[7 + d] = padding ? padding[d] : 0;
    }
    return clt__ok();
}

/* LPPool's: window_layer's, and i[10] ceil_mode, f[0] norm_type. */
static clt_status lp_pool_layer(int k, double norm_type, const int64_t *kernel,
                                const int64_t *stride, int ceil_mode, const char *fn,
                                clt_module **out)
{
    clt_status st = window_layer(k == 2 ? &lp_pool2d_ops : &lp_pool1d_ops, k, kernel, stride,
                                 NULL, fn, out);
    if (st == CLT_OK) {
        (*out)->i[10] = ceil_mode != 0;
        (*out)->f[0] = norm_type;
    }
    return st;
}

clt_status clt_lp_pool1d_layer(double norm_type, int64_t kernel, int64_t stride, int ceil_mode,
                               clt_module **out)
{
    return lp_pool_layer(1, norm_type, &kernel, &stride, ceil_mode, "clt_lp_pool1d_layer", out);
}

clt_status clt_lp_pool2d_layer(double norm_type, int64_t kernel_h, int64_t kernel_w,
                               const int64_t stride[2], int ceil_mode, clt_module **out)
{
    int64_t kernel[2] = {kernel_h, kernel_w};
    return lp_pool_layer(2, norm_type, kernel, stride, ceil_mode, "clt_lp_pool2d_layer", out);
}

/* ---- AdaptiveMaxPool and MaxUnpool -------------------------------------------------- */

/* i[0] the dims (1 or 2), i[1..2] the output size. */
static clt_status adaptive_max_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    if (m->i[0] == 1)
        return clt__adaptive_max_pool1d_rec(m->ops->name, x, m->i[1], out, NULL);
    return clt__adaptive_max_pool2d_rec(m->ops->name, x, &m->i[1], out, NULL);
}

static const clt__module_ops adaptive_max1d_ops = {"AdaptiveMaxPool1d", adaptive_max_forward,
                                                   NULL, NULL};
static const clt__module_ops adaptive_max2d_ops = {"AdaptiveMaxPool2d", adaptive_max_forward,
                                                   NULL, NULL};

static clt_status adaptive_max_layer(int k, const int64_t *size, const char *fn,
                                     clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    int64_t sz[2] = {size[0], k == 2 ? size[1] : 0};
    clt_status st = clt__adaptive_size_check(sz, fn);
    if (st == CLT_OK)
        st = clt__module_new(k == 2 ? &adaptive_max2d_ops : &adaptive_max1d_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = k;
    (*out)->i[1] = sz[0];
    (*out)->i[2] = sz[1];
    return clt__ok();
}

clt_status clt_adaptive_max_pool1d_layer(int64_t output_size, clt_module **out)
{
    return adaptive_max_layer(1, &output_size, "clt_adaptive_max_pool1d_layer", out);
}

clt_status clt_adaptive_max_pool2d_layer(int64_t out_h, int64_t out_w, clt_module **out)
{
    int64_t size[2] = {out_h, out_w};
    return adaptive_max_layer(2, size, "clt_adaptive_max_pool2d_layer", out);
}

/* i[0] the dims (1 or 2), i[1..2] kernel, i[3..4] stride, i[5..6]
 * padding.  Its forward needs the indices: clt_max_unpool_forward. */
static clt_status max_unpool_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    (void)x;
    (void)out;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: the forward takes the indices of the max pooling too: call "
                      "clt_max_unpool_forward",
                      m->ops->name);
}

static const clt__module_ops max_unpool1d_ops = {"MaxUnpool1d", max_unpool_forward, NULL, NULL};
static const clt__module_ops max_unpool2d_ops = {"MaxUnpool2d", max_unpool_forward, NULL, NULL};
static const clt__module_ops max_unpool3d_ops = {"MaxUnpool3d", max_unpool_forward, NULL, NULL};

/* The inputs of clt_max_unpool_forward besides the values, for its run
 * through the module's hooks (which see the values). */
typedef struct unpool_ctx {
    const clt_tensor *indices;
    const int64_t *output_size;
} unpool_ctx;

static clt_status unpool_multi(clt_module *m, void *ctx, const clt_tensor *input,
                               clt_tensor **out)
{
    const unpool_ctx *k = ctx;
    const char *name = m->ops->name;
    CLT__AUTOCAST(name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input), unpool_multi(m, ctx, CLT__AC(0), out));
    if (m->i[0] == 3)
        return clt__max_unpool3d_rec(name, input, k->indices, &m->i[1], &m->i[4], &m->i[7],
                                     k->output_size, out);
    if (m->i[0] == 1)
        return clt__max_unpool1d_rec(name, input, k->indices, m->i[1], m->i[4], m->i[7],
                                     k->output_size, out);
    return clt__max_unpool2d_rec(name, input, k->indices, &m->i[1], &m->i[4], &m->i[7],
                                 k->output_size, out);
}

clt_status clt_max_unpool_forward(clt_module *m, const clt_tensor *input,
                                  const clt_tensor *indices, const int64_t *output_size,
                                  clt_tensor **out)
{
    static const char fn[] = "clt_max_unpool_forward";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    if (m->ops != &max_unpool1d_ops && m->ops != &max_unpool2d_ops &&
        m->ops != &max_unpool3d_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s is not a MaxUnpool1d, MaxUnpool2d or MaxUnpool3d", fn,
                          m->ops->name);
    CLT__REQUIRE_ARG(input, fn);
    unpool_ctx k = {indices, output_size};
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, input, unpool_multi, &k, out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

clt_status clt_max_unpool1d_layer(int64_t kernel, int64_t stride, int64_t padding,
                                  clt_module **out)
{
    return window_layer(&max_unpool1d_ops, 1, &kernel, &stride, &padding,
                        "clt_max_unpool1d_layer", out);
}

clt_status clt_max_unpool2d_layer(int64_t kernel_h, int64_t kernel_w, const int64_t stride[2],
                                  const int64_t padding[2], clt_module **out)
{
    int64_t kernel[2] = {kernel_h, kernel_w};
    return window_layer(&max_unpool2d_ops, 2, kernel, stride, padding,
                        "clt_max_unpool2d_layer", out);
}

clt_status clt_max_unpool3d_layer(const int64_t kernel[3], const int64_t stride[3],
                                  const int64_t padding[3], clt_module **out)
{
    static const char fn[] = "clt_max_unpool3d_layer";
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(kernel, fn);
    return window_layer(&max_unpool3d_ops, 3, kernel, stride, padding, fn, out);
}

/* ---- MaxPool3d, AvgPool3d, AdaptiveAvgPool1d/3d, AdaptiveMaxPool3d -------------------- */

/* i[0..2] kernel, i[3..5] stride, i[6..8] padding, i[9..11] dilation,
 * i[12] ceil_mode, i[13] count_include_pad, i[14] max. */
static clt_status pool3d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    /* max_pool3d and avg_pool3d are on torch's CPU autocast float32 list */
    CLT__AUTOCAST(m->ops->name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x), pool3d_forward(m, CLT__AC(0), out));
    bool max = m->i[14];
    return clt__pool3d_rec(m->ops->name, max, x, &m->i[0], &m->i[3], &m->i[6],
                           max ? &m->i[9] : NULL, (int)m->i[12], (int)m->i[13], out);
}

static const clt__module_ops max_pool3d_ops = {"MaxPool3d", pool3d_forward, NULL, NULL};
static const clt__module_ops avg_pool3d_ops = {"AvgPool3d", pool3d_forward, NULL, NULL};

static clt_status pool3d_layer(bool max, const int64_t *kernel, const clt_pool3d_opts *opts,
                               const char *fn, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(kernel, fn);
    const clt_pool3d_opts defaults = CLT_POOL3D_DEFAULTS;
    const clt_pool3d_opts *o = opts ? opts : &defaults;
    for (int d = 0; d < 3; d++)
        if (kernel[d] <= 0 || o->stride[d] < 0 || o->padding[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: kernel_size %lld, stride %lld and padding %lld: expected a "
                              "positive kernel size, a stride >= 0 (0: the kernel size) and "
                              "padding >= 0",
                              fn, (long long)kernel[d], (long long)o->stride[d],
                              (long long)o->padding[d]);
    clt_status st = clt__module_new(max ? &max_pool3d_ops : &avg_pool3d_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    clt_module *m = *out;
    for (int d = 0; d < 3; d++) {
        m->i[d] = kernel[d];
        m->i[3 + d] = o->stride[d];
        m->i[6 + d] = o->padding[d];
        m->i[9 + d] = o->dilation[d];
    }
    m->i[12] = o->ceil_mode != 0;
    m->i[13] = o->count_include_pad != 0;
    m->i[14] = max;
    return clt__ok();
}

clt_status clt_max_pool3d_layer(const int64_t kernel[3], const clt_pool3d_opts *opts,
                                clt_module **out)
{
    return pool3d_layer(true, kernel, opts, "clt_max_pool3d_layer", out);
}

clt_status clt_avg_pool3d_layer(const int64_t kernel[3], const clt_pool3d_opts *opts,
                                clt_module **out)
{
    return pool3d_layer(false, kernel, opts, "clt_avg_pool3d_layer", out);
}

/* i[0] the dims (1 or 3), i[1..3] the output size, i[4] max. */
static clt_status adaptive_nd_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    /* the 3-D ones are on torch's CPU autocast float32 list */
    if (m->i[0] == 3)
        CLT__AUTOCAST(m->ops->name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x), adaptive_nd_forward(m, CLT__AC(0), out));
    if (m->i[0] == 1)
        return clt__adaptive_avg_pool1d_rec(m->ops->name, x, m->i[1], out);
    if (m->i[4])
        return clt__adaptive_max_pool3d_rec(m->ops->name, x, &m->i[1], out, NULL);
    return clt__adaptive_avg_pool3d_rec(m->ops->name, x, &m->i[1], out);
}

static const clt__module_ops adaptive_avg1d_ops = {"AdaptiveAvgPool1d", adaptive_nd_forward,
                                                   NULL, NULL};
static const clt__module_ops adaptive_avg3d_ops = {"AdaptiveAvgPool3d", adaptive_nd_forward,
                                                   NULL, NULL};
static const clt__module_ops adaptive_max3d_ops = {"AdaptiveMaxPool3d", adaptive_nd_forward,
                                                   NULL, NULL};

static clt_status adaptive_nd_layer(int k, bool max, const int64_t *size, const char *fn,
                                    clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(size, fn);
    for (int d = 0; d < k; d++)
        if (size[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: elements of output_size must be greater than or equal to 0 "
                              "but received %lld",
                              fn, (long long)size[d]);
    const clt__module_ops *ops =
        k == 1 ? &adaptive_avg1d_ops : max ? &adaptive_max3d_ops : &adaptive_avg3d_ops;
    clt_status st = clt__module_new(ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = k;
    for (int d = 0; d < k; d++)
        (*out)->i[1 + d] = size[d];
    (*out)->i[4] = max;
    return clt__ok();
}

clt_status clt_adaptive_avg_pool1d_layer(int64_t output_size, clt_module **out)
{
    return adaptive_nd_layer(1, false, &output_size, "clt_adaptive_avg_pool1d_layer", out);
}

clt_status clt_adaptive_avg_pool3d_layer(const int64_t output_size[3], clt_module **out)
{
    return adaptive_nd_layer(3, false, output_size, "clt_adaptive_avg_pool3d_layer", out);
}

clt_status clt_adaptive_max_pool3d_layer(const int64_t output_size[3], clt_module **out)
{
    return adaptive_nd_layer(3, true, output_size, "clt_adaptive_max_pool3d_layer", out);
}

/* ---- padding layers --------------------------------------------------------------------- */

/* i[0] the number of sizes (2, 4 or 6), i[1..6] the sizes, i[7] the mode;
 * f[0] the value. */
static clt_status pad_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    if (clt__pad_autocast_cpu((clt_pad_mode)m->i[7], (int)m->i[0]))
        CLT__AUTOCAST(m->ops->name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x), pad_forward(m, CLT__AC(0), out));
    return clt__pad_rec(m->ops->name, x, &m->i[1], (int)m->i[0], (clt_pad_mode)m->i[7], m->f[0],
                        out);
}

static const clt__module_ops pad_ops[][3] = {
    {{"ConstantPad1d", pad_forward, NULL, NULL},
     {"ConstantPad2d", pad_forward, NULL, NULL},
     {"ConstantPad3d", pad_forward, NULL, NULL}},
    {{"ReflectionPad1d", pad_forward, NULL, NULL},
     {"ReflectionPad2d", pad_forward, NULL, NULL},
     {"ReflectionPad3d", pad_forward, NULL, NULL}},
    {{"ReplicationPad1d", pad_forward, NULL, NULL},
     {"ReplicationPad2d", pad_forward, NULL, NULL},
     {"ReplicationPad3d", pad_forward, NULL, NULL}},
};
static const clt__module_ops zero_pad2d_ops = {"ZeroPad2d", pad_forward, NULL, NULL};

/* A padding layer over k (1 to 3) dims: row 0 constant, 1 reflect, 2
 * replicate (ops NULL: that row's), 2 k sizes. */
static clt_status pad_layer(int row, const clt__module_ops *ops, int k, const int64_t *padding,
                            double value, const char *fn, clt_module **out)
{
    static const clt_pad_mode modes[3] = {CLT_PAD_CONSTANT, CLT_PAD_REFLECT, CLT_PAD_REPLICATE};
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(padding, fn);
    clt_status st = clt__module_new(ops ? ops : &pad_ops[row][k - 1], NULL, out);
    if (st != CLT_OK)
        return st;
    clt_module *m = *out;
    m->i[0] = 2 * k;
    for (int j = 0; j < 2 * k; j++)
        m->i[1 + j] = padding[j];
    m->i[7] = modes[row];
    m->f[0] = value;
    return clt__ok();
}

clt_status clt_constant_pad1d_layer(const int64_t padding[2], double value, clt_module **out)
{
    return pad_layer(0, NULL, 1, padding, value, "clt_constant_pad1d_layer", out);
}

clt_status clt_constant_pad2d_layer(const int64_t padding[4], double value, clt_module **out)
{
    return pad_layer(0, NULL, 2, padding, value, "clt_constant_pad2d_layer", out);
}

clt_status clt_constant_pad3d_layer(const int64_t padding[6], double value, clt_module **out)
{
    return pad_layer(0, NULL, 3, padding, value, "clt_constant_pad3d_layer", out);
}

clt_status clt_zero_pad2d_layer(const int64_t padding[4], clt_module **out)
{
    return pad_layer(0, &zero_pad2d_ops, 2, padding, 0.0, "clt_zero_pad2d_layer", out);
}

clt_status clt_reflection_pad1d_layer(const int64_t padding[2], clt_module **out)
{
    return pad_layer(1, NULL, 1, padding, 0.0, "clt_reflection_pad1d_layer", out);
}

clt_status clt_reflection_pad2d_layer(const int64_t padding[4], clt_module **out)
{
    return pad_layer(1, NULL, 2, padding, 0.0, "clt_reflection_pad2d_layer", out);
}

clt_status clt_reflection_pad3d_layer(const int64_t padding[6], clt_module **out)
{
    return pad_layer(1, NULL, 3, padding, 0.0, "clt_reflection_pad3d_layer", out);
}

clt_status clt_replication_pad1d_layer(const int64_t padding[2], clt_module **out)
{
    return pad_layer(2, NULL, 1, padding, 0.0, "clt_replication_pad1d_layer", out);
}

clt_status clt_replication_pad2d_layer(const int64_t padding[4], clt_module **out)
{
    return pad_layer(2, NULL, 2, padding, 0.0, "clt_replication_pad2d_layer", out);
}

clt_status clt_replication_pad3d_layer(const int64_t padding[6], clt_module **out)
{
    return pad_layer(2, NULL, 3, padding, 0.0, "clt_replication_pad3d_layer", out);
}

/* ---- channel and alpha dropouts --------------------------------------------------- */

typedef enum drop_kind {
    DROP_1D = 1,
    DROP_2D = 2,
    DROP_3D = 3,
    DROP_ALPHA,
    DROP_FEATURE_ALPHA
} drop_kind;

/* torch's _dropout_impl in train mode for the feature (a mask element per
 * [n, c], over [N, C, 1, ...]) and alpha variants, the mask (u >= p, u as
 * clt_rand draws it in x's dtype and the noise's shape, as Dropout's) from
 * gen: x * mask / (1 - p), or for the alpha ones x * mask * a + b with
 * a = 1 / sqrt((alpha^2 p + 1) (1 - p)) and b = (mask - 1) alpha a +
 * alpha a p, alpha SELU's 1.7580993408473766.  p 0 and empty inputs give
 * x back, p 1 gives x * 0 (Dropout's cases, and its refusal of integers). */
static clt_status noise_dropout(const char *fn, clt_generator *gen, double p, bool feature,
                                bool alpha, const clt_tensor *x, clt_tensor **out)
{
    if (p == 0.0 || x->numel == 0)
        return clt__expand_rec(fn, x, x->ndim, x->shape, out);
    if (feature && x->ndim < 2 && p < 1.0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Feature dropout requires at least 2 dimensions in the input", fn);
    if (p == 1.0 || !clt__dtype_is_float(x->dtype))
        return clt__dropout_rec(fn, gen, p, x, out);
    int64_t ns[CLT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        ns[d] = feature && d >= 2 ? 1 : x->shape[d];
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *u, *keep, *kf, *noise, *y, *b, *t1, *t2;
    CLT__TRY(clt__rand_in(fn, gen, x->dev, x->dtype, x->ndim, ns, &u));
    CLT__TRY(clt__ge_scalar_rec(fn, u, p, &keep));
    CLT__TRY(clt__to_dtype_rec(fn, keep, x->dtype, &kf));
    if (!alpha) {
        CLT__TRY(clt__div_scalar_rec(fn, kf, 1.0 - p, &noise));
        CLT__TRY(clt__mul_rec(fn, x, noise, out));
    } else {
        const double al = 1.7580993408473766;
        double a = 1.0 / sqrt((al * al * p + 1.0) * (1.0 - p));
        CLT__TRY(clt__add_scalar_rec(fn, kf, -1.0, &t1));
        CLT__TRY(clt__mul_scalar_rec(fn, t1, al * a, &t2));
        CLT__TRY(clt__add_scalar_rec(fn, t2, al * a * p, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, kf, a, &noise));
        CLT__TRY(clt__mul_rec(fn, x, noise, &y));
        CLT__TRY(clt__add_rec(fn, y, b, out));
    }
done:
    return clt__scope_finish(st, out);
}

/* F.dropout1d/2d/3d, alpha_dropout and feature_alpha_dropout for the
 * public call or layer fn: their checks, and torch's unbatched handling
 * (dropout1d of a 2-D input and dropout3d of anything but 5-D run on the
 * input with a batch dim of one added, then taken off). */
static clt_status dropout_variant(const char *fn, drop_kind kind, const clt_tensor *x, double p,
                                  bool training, clt_generator *gen, clt_tensor **out)
{
    if (!(p >= 0.0 && p <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dropout probability has to be between 0 and 1, but got %g", fn, p);
    if (kind == DROP_1D && x->ndim != 2 && x->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: dropout1d: Expected 2D or 3D input, but received a %dD input. "
                          "Note that dropout1d exists to provide channel-wise dropout on inputs "
                          "with 1 spatial dimension, a channel dimension, and an optional batch "
                          "dimension (i.e. 2D or 3D inputs).",
                          fn, x->ndim);
    bool unbatched = (kind == DROP_1D && x->ndim == 2) || (kind == DROP_3D && x->ndim != 5);
    bool feature = kind != DROP_ALPHA;
    bool alpha = kind == DROP_ALPHA || kind == DROP_FEATURE_ALPHA;
    double pe = training ? p : 0.0;
    if (!unbatched)
        return noise_dropout(fn, gen, pe, feature, alpha, x, out);
    clt_tensor *xb = NULL, *yb = NULL;
    clt_status st = clt__unsqueeze_rec(fn, x, 0, &xb);
    if (st == CLT_OK)
        st = noise_dropout(fn, gen, pe, feature, alpha, xb, &yb);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, yb, 0, out);
    clt_tensor_free(xb);
    clt_tensor_free(yb);
    return st;
}

static clt_status dropout_public(const char *fn, drop_kind kind, const clt_tensor *input,
                                 double p, int training, clt_generator *gen, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    clt_status st = dropout_variant(fn, kind, input, p, training != 0, gen, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_dropout1d(const clt_tensor *input, double p, int training, clt_generator *gen,
                         clt_tensor **out)
{
    return dropout_public("clt_dropout1d", DROP_1D, input, p, training, gen, out);
}

clt_status clt_dropout2d(const clt_tensor *input, double p, int training, clt_generator *gen,
                         clt_tensor **out)
{
    return dropout_public("clt_dropout2d", DROP_2D, input, p, training, gen, out);
}

clt_status clt_dropout3d(const clt_tensor *input, double p, int training, clt_generator *gen,
                         clt_tensor **out)
{
    return dropout_public("clt_dropout3d", DROP_3D, input, p, training, gen, out);
}

clt_status clt_alpha_dropout(const clt_tensor *input, double p, int training,
                             clt_generator *gen, clt_tensor **out)
{
    return dropout_public("clt_alpha_dropout", DROP_ALPHA, input, p, training, gen, out);
}

clt_status clt_feature_alpha_dropout(const clt_tensor *input, double p, int training,
                                     clt_generator *gen, clt_tensor **out)
{
    return dropout_public("clt_feature_alpha_dropout", DROP_FEATURE_ALPHA, input, p, training,
                          gen, out);
}

/* F.dropout: Dropout's forward (the same mask for the same generator
 * state), run as a forward of its own so that a failure puts gen back. */
clt_status clt_dropout(const clt_tensor *input, double p, int training, clt_generator *gen,
                       clt_tensor **out)
{
    static const char fn[] = "clt_dropout";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    if (!(p >= 0.0 && p <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dropout probability has to be between 0 and 1, but got %g", fn, p);
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__dropout_rec(fn, gen, training ? p : 0.0, input, out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* i[0] the drop_kind; f[0] p; gen borrowed.  The generator's offset is
 * noted for clt_module_forward's undo before anything is drawn. */
static clt_status dropout_variant_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = CLT_OK;
    if (m->training)
        st = clt__forward_note_generator(m->gen);
    if (st == CLT_OK)
        st = dropout_variant(m->ops->name, (drop_kind)m->i[0], x, m->f[0], m->training, m->gen,
                             out);
    return st;
}

static const clt__module_ops dropout_variant_ops[] = {
    {"Dropout1d", dropout_variant_forward, NULL, NULL},
    {"Dropout2d", dropout_variant_forward, NULL, NULL},
    {"Dropout3d", dropout_variant_forward, NULL, NULL},
    {"AlphaDropout", dropout_variant_forward, NULL, NULL},
    {"FeatureAlphaDropout", dropout_variant_forward, NULL, NULL},
};

static clt_status dropout_variant_layer(drop_kind kind, double p, clt_generator *gen,
                                        const char *fn, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (!(p >= 0.0 && p <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dropout probability has to be between 0 and 1, but got %g", fn, p);
    clt_status st = clt__module_new(&dropout_variant_ops[kind - 1], NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = kind;
    (*out)->f[0] = p;
    (*out)->gen = gen;
    return clt__ok();
}

clt_status clt_dropout1d_layer(double p, clt_generator *gen, clt_module **out)
{
    return dropout_variant_layer(DROP_1D, p, gen, "clt_dropout1d_layer", out);
}

clt_status clt_dropout2d_layer(double p, clt_generator *gen, clt_module **out)
{
    return dropout_variant_layer(DROP_2D, p, gen, "clt_dropout2d_layer", out);
}

clt_status clt_dropout3d_layer(double p, clt_generator *gen, clt_module **out)
{
    return dropout_variant_layer(DROP_3D, p, gen, "clt_dropout3d_layer", out);
}

clt_status clt_alpha_dropout_layer(double p, clt_generator *gen, clt_module **out)
{
    return dropout_variant_layer(DROP_ALPHA, p, gen, "clt_alpha_dropout_layer", out);
}

clt_status clt_feature_alpha_dropout_layer(double p, clt_generator *gen, clt_module **out)
{
    return dropout_variant_layer(DROP_FEATURE_ALPHA, p, gen, "clt_feature_alpha_dropout_layer",
                                 out);
}

/* ---- FractionalMaxPool2d and 3d -------------------------------------------------------- */

/* i[0] the dims nd (2 or 3), i[1..3] kernel, i[4] whether an output size
 * is given, i[5..7] the output size, f[0..2] the output ratio; gen
 * (borrowed) draws each forward's samples. */
static clt_status fractional_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    CLT__AUTOCAST(m->ops->name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x), fractional_forward(m, CLT__AC(0), out));
    clt_status st = clt__forward_note_generator(m->gen);
    if (st != CLT_OK)
        return st;
    return clt__fractional_max_pool_rec(m->ops->name, (int)m->i[0], x, &m->i[1],
                                        m->i[4] ? &m->i[5] : NULL, m->i[4] ? NULL : m->f, NULL,
                                        m->gen, out, NULL);
}

static const clt__module_ops fractional2d_ops = {"FractionalMaxPool2d", fractional_forward, NULL,
                                                 NULL};
static const clt__module_ops fractional3d_ops = {"FractionalMaxPool3d", fractional_forward, NULL,
                                                 NULL};

static clt_status fractional_layer(int nd, const int64_t *kernel, const int64_t *output_size,
                                   const double *output_ratio, clt_generator *gen,
                                   const char *fn, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(kernel, fn);
    const char *name = nd == 2 ? "FractionalMaxPool2d" : "FractionalMaxPool3d";
    if (!output_size && !output_ratio)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s requires specifying either an output size, or a pooling ratio",
                          fn, name);
    if (output_size && output_ratio)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: only one of output_size and output_ratio may be specified", fn);
    for (int d = 0; d < nd; d++) {
        if (kernel[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: kernel_size should be greater than zero, but got %lld", fn,
                              (long long)kernel[d]);
        if (output_size && output_size[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: output_size must be >= 0, but got %lld", fn,
                              (long long)output_size[d]);
        if (output_ratio && !(output_ratio[d] > 0.0 && output_ratio[d] < 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: output_ratio must be between 0 and 1 (got %g)", fn,
                              output_ratio[d]);
    }
    clt_status st = clt__module_new(nd == 2 ? &fractional2d_ops : &fractional3d_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    clt_module *m = *out;
    m->i[0] = nd;
    m->i[4] = output_size != NULL;
    for (int d = 0; d < nd; d++) {
        m->i[1 + d] = kernel[d];
        m->i[5 + d] = output_size ? output_size[d] : 0;
        m->f[d] = output_ratio ? output_ratio[d] : 0.0;
    }
    m->gen = gen;
    return clt__ok();
}

clt_status clt_fractional_max_pool2d_layer(const int64_t kernel[2], const int64_t output_size[2],
                                           const double output_ratio[2], clt_generator *gen,
                                           clt_module **out)
{
    return fractional_layer(2, kernel, output_size, output_ratio, gen,
                            "clt_fractional_max_pool2d_layer", out);
}

clt_status clt_fractional_max_pool3d_layer(const int64_t kernel[3], const int64_t output_size[3],
                                           const double output_ratio[3], clt_generator *gen,
                                           clt_module **out)
{
    return fractional_layer(3, kernel, output_size, output_ratio, gen,
                            "clt_fractional_max_pool3d_layer", out);
}
