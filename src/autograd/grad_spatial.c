/* grad_spatial.c: interpolate (all modes), grid_sample and affine_grid
 * (conv.h) with their backward formulas, the kernels in src/ops/upsample.c
 * and src/ops/grid_sample.c; and the 3-D pools, adaptive_avg_pool1d and
 * max_unpool3d, composed of the 2-D pools and recorded views. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "ops/conv.h"

/* ---- interpolate -------------------------------------------------------------------- */

/* grad_fn names by mode and spatial rank, as torch 1.13's (the .vec
 * overloads that F.interpolate calls). */
static const char *const interp_names[][3] = {
    {"UpsampleNearest1DBackward1", "UpsampleNearest2DBackward1", "UpsampleNearest3DBackward1"},
    {NULL, "UpsampleBilinear2DBackward1", NULL},
    {"UpsampleNearestExact1DBackward1", "UpsampleNearestExact2DBackward1",
     "UpsampleNearestExact3DBackward1"},
    {"UpsampleLinear1DBackward1", NULL, NULL},
    {NULL, "UpsampleBicubic2DBackward1", NULL},
    {NULL, NULL, "UpsampleTrilinear3DBackward1"},
};

/* Whether u runs on the 4-D nearest and bilinear kernels. */
static bool planar(const clt__interp *u)
{
    return u->nd == 2 && (u->mode == CLT_INTERP_NEAREST || u->mode == CLT_INTERP_BILINEAR);
}

/* The nodes of the adjoints (the backward kernels run as ops), as torch
 * names them: each one's gradient is the forward interpolation. */
static const char *const interp_adjoint_names[][3] = {
    {"UpsampleNearest1DBackwardBackward1", "UpsampleNearest2DBackwardBackward1",
     "UpsampleNearest3DBackwardBackward1"},
    {NULL, "UpsampleBilinear2DBackwardBackward1", NULL},
    {"UpsampleNearestExact1DBackwardBackward1", "UpsampleNearestExact2DBackwardBackward1",
     "UpsampleNearestExact3DBackwardBackward1"},
    {"UpsampleLinear1DBackwardBackward1", NULL, NULL},
    {NULL, "UpsampleBicubic2DBackwardBackward1", NULL},
    {NULL, NULL, "UpsampleTrilinear3DBackwardBackward1"},
};

static clt_status interp_apply(const char *fn, const clt_tensor *x, const clt__interp *u,
                               const int64_t *in_shape, bool adjoint, clt_tensor **out);

/* i[0..2]: mode, align_corners, has_scale; i[3..5] the output's sizes,
 * i[6] nd; s[0..2] the scales.  Nothing saved: the input's shape is its
 * edge's.  The gradient of the interpolation is its adjoint, and the
 * adjoint's the interpolation, each recorded (clt__twice). */
static void interp_of(const clt__node *n, clt__interp *u)
{
    clt__interp v = {(int)n->i[0],        (int)n->i[1],
                     (int)n->i[2],        {n->s[0], n->s[1], n->s[2]},
                     {n->i[3], n->i[4], n->i[5]}, (int)n->i[6]};
    *u = v;
}

static clt_status bw_interp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__interp u;
    interp_of(n, &u);
    return interp_apply("clt_backward", g, &u, n->in[0].shape, true, &gin[0]);
}

static clt_status bw_interp_adjoint(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__interp u;
    interp_of(n, &u);
    return interp_apply("clt_backward", g, &u, NULL, false, &gin[0]);
}

/* x interpolated by u (adjoint false), or the adjoint of that for an
 * input of in_shape (x of the interpolation's output shape), recorded. */
static clt_status interp_apply(const char *fn, const clt_tensor *x, const clt__interp *u,
                               const int64_t *in_shape, bool adjoint, clt_tensor **out)
{
    clt_status st;
    if (adjoint)
        st = planar(u) ? clt__upsample_backward(x, in_shape, u, out)
                       : clt__interp_separable_backward(x, in_shape, u, out);
    else
        st = planar(u) ? clt__upsample(x, u, out, fn) : clt__interp_separable(x, u, out, fn);
    clt__node *n = NULL;
    st = clt__record(st, out,
                     adjoint ? interp_adjoint_names[u->mode][u->nd - 1]
                             : interp_names[u->mode][u->nd - 1],
                     adjoint ? bw_interp_adjoint : bw_interp, 1, &x, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        int64_t v[7] = {u->mode, u->align_corners, u->has_scale, u->size[0],
                        u->size[1], u->size[2],      u->nd};
        for (int k = 0; k < 7; k++)
            n->i[k] = v[k];
        for (int k = 0; k < 3; k++)
            n->s[k] = u->scale[k];
    }
    return st;
}

/* "area": adaptive average pooling to the output size, as torch: 1-D on
 * [N, C, 1, L], 3-D as a pool of the (H, W) planes of [N, C D, H, W]
 * followed by one of [N, C, D, Ho Wo] along D. */
static clt_status interp_area(const char *fn, const clt_tensor *x, const clt__interp *u,
                              clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    const int64_t *s = x->shape;
    if (u->nd == 2)
        return clt__adaptive_avg_pool2d_rec(fn, x, u->size, out);
    if (u->nd == 1) {
        CLT__TRY(clt__unsqueeze_rec(fn, x, 2, &a));
        CLT__TRY(clt__adaptive_avg_pool2d_rec(fn, a, (int64_t[]){1, u->size[0]}, &b));
        CLT__TRY(clt__squeeze_rec(fn, b, 2, out));
    } else {
        int64_t hw = u->size[1] * u->size[2];
        CLT__TRY(clt__reshape_rec(fn, x, 4, (int64_t[]){s[0], s[1] * s[2], s[3], s[4]}, &a));
        CLT__TRY(clt__adaptive_avg_pool2d_rec(fn, a, &u->size[1], &b));
        clt_tensor_free(a);
        a = NULL;
        CLT__TRY(clt__reshape_rec(fn, b, 4, (int64_t[]){s[0], s[1], s[2], hw}, &a));
        CLT__TRY(clt__adaptive_avg_pool2d_rec(fn, a, (int64_t[]){u->size[0], hw}, &c));
        CLT__TRY(clt__reshape_rec(fn, c, 5,
                                  (int64_t[]){s[0], s[1], u->size[0], u->size[1], u->size[2]},
                                  out));
    }
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    return st;
}

clt_status clt__interpolate_nd_rec(const char *fn, const clt_tensor *input, int nd,
                                   const int64_t *size, const double *scale_factor, int mode,
                                   int align_corners, int recompute, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, NULL,
                          clt__interpolate_nd_rec(fn, clt__hx, nd, size, scale_factor, mode,
                                                  align_corners, recompute, &clt__hr));
    clt__interp u;
    clt_status st = clt__interp_check(input, nd, size, scale_factor, mode, align_corners,
                                      recompute, &u, fn);
    if (st != CLT_OK)
        return st;
    if (u.mode == CLT_INTERP_AREA) {
        st = interp_area(fn, input, &u, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    st = interp_apply(fn, input, &u, NULL, false, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__interpolate_rec(const char *fn, const clt_tensor *input, const int64_t *size,
                                const double *scale_factor, int mode, int align_corners,
                                clt_tensor **out)
{
    return clt__interpolate_nd_rec(fn, input, 2, size, scale_factor, mode, align_corners, 0, out);
}

clt_status clt_interpolate(const clt_tensor *input, const int64_t size[2],
                           const double scale_factor[2], clt_interp_mode mode, int align_corners,
                           clt_tensor **out)
{
    return clt__interpolate_rec("clt_interpolate", input, size, scale_factor, (int)mode,
                                align_corners, out);
}

clt_status clt_interpolate_nd(const clt_tensor *input, const int64_t *size,
                              const double *scale_factor, clt_interp_mode mode, int align_corners,
                              int recompute_scale_factor, clt_tensor **out)
{
    return clt__interpolate_nd_rec("clt_interpolate_nd", input, 0, size, scale_factor, (int)mode,
                                   align_corners, recompute_scale_factor, out);
}

/* ---- grid_sample -------------------------------------------------------------------- */

/* saved: the input and the grid; i[0..2] mode, padding, align_corners. */
static clt_status bw_grid_sample(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__grid_sample_backward(g, n->saved[0], n->saved[1], (int)n->i[0], (int)n->i[1],
                                     (int)n->i[2], CLT__NEED(n, 0) ? &gin[0] : NULL,
                                     CLT__NEED(n, 1) ? &gin[1] : NULL);
}

clt_status clt_grid_sample(const clt_tensor *input, const clt_tensor *grid, clt_grid_mode mode,
                           clt_grid_padding padding_mode, int align_corners, clt_tensor **out)
{
    static const char fn[] = "clt_grid_sample";
    CLT__AUTOCAST(fn, CLT__AC_ON(CLT__AC_PROMOTE, CLT__AC_FLOAT32), 2, (input, grid),
                  clt_grid_sample(CLT__AC(0), CLT__AC(1), mode, padding_mode, align_corners,
                                  out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(grid, fn);
    if (clt__dtype_is_half(input->dtype) && grid->dtype == input->dtype) {
        /* in float32 from the widened operands, rounded to half once */
        clt_tensor *xw = NULL, *gw = NULL, *r = NULL;
        clt_status hs = clt__to_dtype_rec(fn, input, CLT_FLOAT32, &xw);
        if (hs == CLT_OK)
            hs = clt__to_dtype_rec(fn, grid, CLT_FLOAT32, &gw);
        if (hs == CLT_OK)
            hs = clt_grid_sample(xw, gw, mode, padding_mode, align_corners, &r);
        clt_tensor_free(gw);
        return clt__half_finish(fn, input->dtype, hs, xw, r, out, NULL);
    }
    clt_status st = clt__grid_sample_check(input, grid, (int)mode, (int)padding_mode, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {input, grid};
    clt__node *n = NULL;
    st = clt__record(clt__grid_sample(input, grid, (int)mode, (int)padding_mode, align_corners,
                                      out, fn),
                     out, input->ndim == 5 ? "GridSampler3DBackward0" : "GridSampler2DBackward0",
                     bw_grid_sample, 2, in, 2, in, &n);
    if (n) {
        n->i[0] = mode;
        n->i[1] = padding_mode;
        n->i[2] = align_corners != 0;
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- affine_grid -------------------------------------------------------------------- */

/* torch's linspace_from_neg_one in float32 (f32) or float64:
 * linspace(-1, 1, n) with the bits of torch 1.13's CPU kernel
 * (clt__linspace_at), then times (n - 1) / n without align_corners; 0 for
 * n = 1.  The last bit decides on which side of a pixel centre grid_sample
 * reads an identity transform's points, and so the grid's gradient there. */
static double linspace_from_neg_one(bool f32, int64_t i, int64_t n, int align_corners)
{
    if (n <= 1)
        return 0;
    double v = clt__linspace_at(f32, -1, 1, n, i);
    if (align_corners)
        return v;
    if (f32) {
        float p = (float)v * (float)(n - 1);
        return p / (float)n;
    }
    return v * (double)(n - 1) / (double)n;
}

/* The base grid [count, k + 1]: for each point (d, h, w) of the output's
 * spatial sizes (k of them) its coordinates x (along w), y, z and 1. */
static clt_status base_grid(const clt_tensor *theta, int k, const int64_t *sp, int align_corners,
                            clt_tensor **out, const char *fn)
{
    int64_t count = 1;
    for (int d = 0; d < k; d++)
        count *= sp[d];
    int64_t shape[2] = {count, k + 1};
    bool f32 = theta->dtype == CLT_FLOAT32;
    uint64_t most = theta->dev->info.max_alloc_bytes;
    if (!most)
        most = SIZE_MAX;
    if ((uint64_t)count > most / clt_dtype_size(theta->dtype) / (uint64_t)(k + 1)) /* no copy */
        return clt__error(CLT_ERR_OUT_OF_DEVICE_MEMORY,
                          "%s: the base grid of %lld points exceeds the largest buffer %s allows",
                          fn, (long long)count, theta->dev->label);
    size_t n = (size_t)count * (size_t)(k + 1);
    double *b = malloc(n * sizeof *b);
    float *bf = f32 ? malloc(n * sizeof *bf) : NULL;
    clt_status st;
    if (!b || (f32 && !bf)) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    } else {
        for (int64_t p = 0; p < count; p++) {
            int64_t rest = p;
            double *row = b + p * (k + 1);
            for (int d = k - 1; d >= 0; d--) { /* the last size is x, the first slot */
                int64_t at = rest % sp[d];
                rest /= sp[d];
                row[k - 1 - d] = linspace_from_neg_one(f32, at, sp[d], align_corners);
            }
            row[k] = 1;
        }
        for (size_t q = 0; f32 && q < n; q++)
            bf[q] = (float)b[q];
        st = clt__tensor_from_host_in(fn, theta->dev, theta->dtype, 2, shape,
                                      f32 ? (const void *)bf : (const void *)b, out);
    }
    free(b);
    free(bf);
    return st;
}

clt_status clt_affine_grid(const clt_tensor *theta, int ndim, const int64_t *size,
                           int align_corners, clt_tensor **out)
{
    static const char fn[] = "clt_affine_grid";
    char s1[160], s2[160];
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(theta, fn);
    CLT__REQUIRE_ARG(size, fn);
    if (ndim != 4 && ndim != 5)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                          "transforms, respectively. Got %d sizes.",
                          fn, ndim);
    CLT__HALF_VIA_FLOAT32(fn, theta, out, NULL,
                          clt_affine_grid(clt__hx, ndim, size, align_corners, &clt__hr));
    clt_status st = clt__check_floating(theta, "theta", fn);
    if (st != CLT_OK)
        return st;
    int k = ndim - 2;
    clt__shape_str(s1, sizeof s1, ndim, size);
    clt__shape_str(s2, sizeof s2, theta->ndim, theta->shape);
    if (theta->ndim != 3 || theta->shape[0] != size[0] || theta->shape[1] != k ||
        theta->shape[2] != k + 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected a batch of %dD affine matrices of shape Nx%dx%d for size "
                          "%s. Got %s.",
                          fn, k, k, k + 1, s1, s2);
    for (int d = 0; d < ndim; d++)
        if (size[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Expected non-zero, positive output size. Got %s.", fn, s1);
    int64_t oshape[5] = {size[0], size[2], size[3], ndim == 5 ? size[4] : k, k};
    if ((st = clt__check_shape(ndim, oshape, fn)) != CLT_OK)
        return st;
    clt_tensor *base = NULL, *tt = NULL, *y = NULL;
    CLT__TRY(base_grid(theta, k, size + 2, align_corners, &base, fn));
    CLT__TRY(clt__transpose_rec(fn, theta, 1, 2, &tt));
    CLT__TRY(clt__matmul_rec(fn, base, tt, &y));
    CLT__TRY(clt__reshape_rec(fn, y, ndim, oshape, out));
done:
    clt_tensor_free(base);
    clt_tensor_free(tt);
    clt_tensor_free(y);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- 3-D pooling ----------------------------------------------------------------------
 * A 3-D window is a box, and a box's maximum (or sum, or count of input
 * elements) is that over D of those over (H, W): each 3-D pool runs as the
 * 2-D pool of grad_conv.c over (H, W) of [N, C D, H, W] and then over D of
 * [N, C, D, Ho Wo] with the window {kD, 1}, recorded views between, so the
 * gradients (double backward included) are the 2-D pools'.  Taking (H, W)
 * first keeps PyTorch's rule for max ties: the first maximum of the first
 * depth that holds one is the first in (d, h, w) order, and the last NaN
 * of the last depth that holds one is the last. */

/* A 3-D pool's settings, defaults resolved, and its output's sizes. */
typedef struct pool3 {
    int64_t k[3], s[3], p[3], d[3], out[3];
    int ceil_mode, count_include_pad;
} pool3;

/* Whether the product of n sizes (>= 0) fits int64. */
static bool product_fits(int n, const int64_t *v)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(p, v[i], &p))
            return false;
    return true;
}

/* Error unless the 5-D shapes a 3-D pool goes through, in (any 5-D sizes
 * with `in`'s batch and channels, and each spatial size the input's or the
 * output's), count their elements in int64. */
static clt_status sizes_fit(const char *fn, const clt_tensor *x, const int64_t *out)
{
    int nd = x->ndim;
    int64_t v[5] = {nd == 5 ? x->shape[0] : 1, x->shape[nd - 4], 0, 0, 0};
    for (int i = 0; i < 3; i++) {
        int64_t in = x->shape[nd - 3 + i];
        v[2 + i] = in > out[i] ? in : out[i];
    }
    if (product_fits(5, v))
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: output size %lld x %lld x %lld: the pooling's sizes pass int64", fn,
                      (long long)out[0], (long long)out[1], (long long)out[2]);
}

/* PyTorch's pooling_output_shape for settings below 2^31 and an input
 * size below 2^61 (no overflow). */
static int64_t pool3_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && o - 1 >= (in + p + s - 1) / s) /* (o - 1) s >= in + p */
        o--;
    return o;
}

/* Resolves and checks a 3-D pool's settings for input x as PyTorch's
 * pool3d_shape_check does (its messages, naming fn), into *q. */
static clt_status pool3_check(const char *fn, bool max, const clt_tensor *x,
                              const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int ceil_mode,
                              int count_include_pad, pool3 *q)
{
    char s1[160];
    bool dflt = !stride || (stride[0] == 0 && stride[1] == 0 && stride[2] == 0);
    for (int i = 0; i < 3; i++) {
        q->k[i] = kernel[i];
        q->s[i] = dflt ? kernel[i] : stride[i];
        q->p[i] = padding ? padding[i] : 0;
        q->d[i] = dilation ? dilation[i] : 1;
    }
    q->ceil_mode = ceil_mode != 0;
    q->count_include_pad = count_include_pad != 0;
    const int64_t *k = q->k, *s = q->s, *p = q->p, *d = q->d;
    if (k[0] <= 0 || k[1] <= 0 || k[2] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kernel size should be greater than zero, but got kT: %lld kH: "
                          "%lld kW: %lld",
                          fn, (long long)k[0], (long long)k[1], (long long)k[2]);
    if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: stride should be greater than zero, but got dT: %lld dH: %lld "
                          "dW: %lld",
                          fn, (long long)s[0], (long long)s[1], (long long)s[2]);
    if (d[0] <= 0 || d[1] <= 0 || d[2] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dilation should be greater than zero, but got dilationT: %lld "
                          "dilationH: %lld dilationW: %lld",
                          fn, (long long)d[0], (long long)d[1], (long long)d[2]);
    for (int i = 0; i < 3; i++)
        if (k[i] > INT32_MAX || s[i] > INT32_MAX || p[i] > INT32_MAX || d[i] > INT32_MAX)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: kernel size %lld, stride %lld, padding %lld and dilation "
                              "%lld of dimension %d: each must fit int32",
                              fn, (long long)k[i], (long long)s[i], (long long)p[i],
                              (long long)d[i], i);
    if (x->ndim != 4 && x->ndim != 5)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: non-empty 4D or 5D (batch mode) tensor expected for input, but "
                          "got input of size: %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    clt_status st;
    if (!max && x->dtype != CLT_FLOAT32 && x->dtype != CLT_FLOAT64 && x->dtype != CLT_INT64)
        st = clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                        "%s: input must be float32, float64 or int64, not %s; convert with "
                        "clt_to_dtype first",
                        fn, clt_dtype_name(x->dtype));
    else if (!max && x->dtype == CLT_INT64)
        st = clt__check_dtype(x->dev, x->dtype, fn);
    else
        st = clt__check_floating(x, "input", fn);
    if (st != CLT_OK)
        return st;
    for (int i = x->ndim - 3; i < x->ndim; i++)
        if (x->shape[i] >= ((int64_t)1 << 61))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: input size %lld of dimension %d is too large", fn,
                              (long long)x->shape[i], i);
    for (int i = x->ndim - 4; i < x->ndim; i++)
        if (x->shape[i] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected input's non-batch dimensions to have positive "
                              "length, but input has a shape of %s and non-batch dimension %d "
                              "has length zero!",
                              fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                              i - (x->ndim - 4));
    if (p[0] < 0 || p[1] < 0 || p[2] < 0 || k[0] / 2 < p[0] || k[1] / 2 < p[1] ||
        k[2] / 2 < p[2])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: pad should be smaller than or equal to half of kernel size, but "
                          "got kT: %lld kW: %lld kH: %lld padT: %lld padW: %lld padH: %lld",
                          fn, (long long)k[0], (long long)k[2], (long long)k[1],
                          (long long)p[0], (long long)p[2], (long long)p[1]);
    const int64_t *in = x->shape + x->ndim - 3;
    if (!max && (in[0] < k[0] || in[1] < k[1] || in[2] < k[2]))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: input image (T: %lld H: %lld W: %lld) smaller than kernel size "
                          "(kT: %lld kH: %lld kW: %lld)",
                          fn, (long long)in[0], (long long)in[1], (long long)in[2],
                          (long long)k[0], (long long)k[1], (long long)k[2]);
    for (int i = 0; i < 3; i++)
        q->out[i] = pool3_size(in[i], k[i], p[i], s[i], d[i], q->ceil_mode);
    if (q->out[0] < 1 || q->out[1] < 1 || q->out[2] < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given input size: (%lldx%lldx%lldx%lld). Calculated output "
                          "size: (%lldx%lldx%lldx%lld). Output size is too small",
                          fn, (long long)x->shape[x->ndim - 4], (long long)in[0],
                          (long long)in[1], (long long)in[2], (long long)x->shape[x->ndim - 4],
                          (long long)q->out[0], (long long)q->out[1], (long long)q->out[2]);
    return sizes_fit(fn, x, q->out);
}

/* The flat (d H + h) W + w of each maximum of a pool over (H, W) and then
 * over D: ihw, the first pool's [N, C D, Ho, Wo] indices (h W + w), and
 * id, the second's [N, C, Do, Ho Wo] (d Ho Wo + j), into the int64
 * [N, C, Do, Ho, Wo] *out. */
static clt_status flat_indices3(const char *fn, const clt_tensor *ihw, const clt_tensor *id,
                                const int64_t *in5, clt_tensor **out)
{
    int64_t N = in5[0], C = in5[1], D = in5[2], HW = in5[3] * in5[4];
    int64_t Ho = ihw->shape[2], Wo = ihw->shape[3], Do = id->shape[2];
    int64_t s1[3] = {N, C, D * Ho * Wo}, s2[3] = {N, C, Do * Ho * Wo};
    int64_t s5[5] = {N, C, Do, Ho, Wo};
    clt_tensor *a = NULL, *b = NULL, *hw = NULL, *dd = NULL, *base = NULL, *r = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape(ihw, 3, s1, &a, fn));
    CLT__TRY(clt__reshape(id, 3, s2, &b, fn));
    CLT__TRY(clt_gather(a, 2, b, &hw));
    CLT__TRY(clt_floor_divide_scalar(b, (double)(Ho * Wo), &dd));
    CLT__TRY(clt_mul_scalar(dd, (double)HW, &base));
    CLT__TRY(clt_add(base, hw, &r));
    CLT__TRY(clt__reshape(r, 5, s5, out, fn));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(hw);
    clt_tensor_free(dd);
    clt_tensor_free(base);
    clt_tensor_free(r);
    return st;
}

/* avg_pool3d of an int64 5-D x as PyTorch 1.13 computes it: each window's
 * exact int64 sum divided by its divisor with truncation (the division
 * does not split over the dims, so neither does the pool).  The sums are
 * differences of cumulative sums over the input padded with zeros, one dim
 * after another; the divisors the product of each dim's. */
static clt_status avg3_int64(const char *fn, const clt_tensor *x, const pool3 *q,
                             clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *cur = NULL, *pd = NULL, *c = NULL, *hi = NULL, *lo = NULL, *dv = NULL;
    clt_tensor *part = NULL, *prod = NULL;
    int64_t *host = NULL;
    for (int i = 0; i < 3; i++) {
        int d = 2 + i, npad = 2 * (5 - d);
        const clt_tensor *in = cur ? cur : x;
        int64_t n = in->shape[d], k = q->k[i], s = q->s[i], p = q->p[i], O = q->out[i];
        int64_t right = (O - 1) * s - p + k - n, pad[6] = {0};
        pad[npad - 2] = 1 + p; /* a zero ahead: the cumulative sums start at 0 */
        pad[npad - 1] = right > 0 ? right : 0;
        CLT__TRY(clt__pad(in, pad, npad, CLT_PAD_CONSTANT, 0.0, &pd, fn));
        CLT__TRY(clt__cumsum(pd, d, false, &c, fn));
        CLT__TRY(clt__slice(c, d, k, k + (O - 1) * s + 1, s, &hi));
        CLT__TRY(clt__slice(c, d, 0, (O - 1) * s + 1, s, &lo));
        clt_tensor_free(cur);
        cur = NULL;
        CLT__TRY(clt__sub_into(NULL, hi, lo, &cur, fn));
        /* this dim's divisors, as a [.., O, ..] of ones elsewhere */
        host = clt__malloc(sizeof *host * (size_t)(O > 0 ? O : 1));
        if (host == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        for (int64_t o = 0; o < O; o++) {
            int64_t a = o * s - p, e = a + k < n + p ? a + k : n + p;
            int64_t a0 = a > 0 ? a : 0, e0 = e < n ? e : n;
            host[o] = q->count_include_pad ? e - a : e0 - a0;
        }
        int64_t dshape[5] = {1, 1, 1, 1, 1};
        dshape[d] = O;
        CLT__TRY(clt__tensor_from_host_in(fn, x->dev, CLT_INT64, 5, dshape, host, &part));
        free(host);
        host = NULL;
        if (dv) {
            CLT__TRY(clt__mul_into(NULL, dv, part, &prod, fn));
            clt_tensor_free(dv);
            dv = prod;
            prod = NULL;
            clt_tensor_free(part);
        } else {
            dv = part;
        }
        part = NULL;
        clt_tensor_free(pd);
        clt_tensor_free(c);
        clt_tensor_free(hi);
        clt_tensor_free(lo);
        pd = c = hi = lo = NULL;
    }
    CLT__TRY(clt_div_rounding(cur, dv, CLT_ROUNDING_TRUNC, out));
done:
    free(host);
    clt_tensor_free(cur);
    clt_tensor_free(pd);
    clt_tensor_free(c);
    clt_tensor_free(hi);
    clt_tensor_free(lo);
    clt_tensor_free(dv);
    clt_tensor_free(part);
    clt_tensor_free(prod);
    return st;
}

/* The 3-D pool of a 5-D x with checked settings q: max (with its flat
 * indices when indices is not NULL) or average. */
static clt_status pool3_run(const char *fn, bool max, const clt_tensor *x, const pool3 *q,
                            clt_tensor **out, clt_tensor **indices)
{
    int64_t N = x->shape[0], C = x->shape[1], D = x->shape[2], H = x->shape[3], W = x->shape[4];
    int64_t Do = q->out[0], Ho = q->out[1], Wo = q->out[2];
    int64_t sa[4] = {N, C * D, H, W}, sc[4] = {N, C, D, Ho * Wo}, s5[5] = {N, C, Do, Ho, Wo};
    const int64_t k2[2] = {q->k[1], q->k[2]}, st2[2] = {q->s[1], q->s[2]},
                  p2[2] = {q->p[1], q->p[2]}, d2[2] = {q->d[1], q->d[2]};
    const int64_t k1[2] = {q->k[0], 1}, st1[2] = {q->s[0], 1}, p1[2] = {q->p[0], 0},
                  d1[2] = {q->d[0], 1};
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *e = NULL, *ib = NULL, *ie = NULL;
    clt_status st = CLT_OK;
    if (!max && x->dtype == CLT_INT64)
        return avg3_int64(fn, x, q, out);
    CLT__TRY(clt__reshape_rec(fn, x, 4, sa, &a));
    if (indices) {
        CLT__TRY(clt_max_pool2d_with_indices(a, k2, st2, p2, d2, q->ceil_mode, &b, &ib));
        CLT__TRY(clt__reshape_rec(fn, b, 4, sc, &c));
        CLT__TRY(clt_max_pool2d_with_indices(c, k1, st1, p1, d1, q->ceil_mode, &e, &ie));
        CLT__TRY(flat_indices3(fn, ib, ie, x->shape, indices));
    } else {
        CLT__TRY(clt__pool2d_rec(fn, max, a, k2, st2, p2, max ? d2 : NULL, q->ceil_mode,
                                 q->count_include_pad, &b));
        CLT__TRY(clt__reshape_rec(fn, b, 4, sc, &c));
        CLT__TRY(clt__pool2d_rec(fn, max, c, k1, st1, p1, max ? d1 : NULL, q->ceil_mode,
                                 q->count_include_pad, &e));
    }
    CLT__TRY(clt__reshape_rec(fn, e, 5, s5, out));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(e);
    clt_tensor_free(ib);
    clt_tensor_free(ie);
    return st;
}

/* Runs a 3-D op on input (4-D or 5-D, checked) as 5-D: an unbatched one
 * through a recorded view [1, C, D, H, W] and back, indices (when wanted)
 * as plain views. */
typedef clt_status (*op5_fn)(const char *fn, const clt_tensor *x5, const void *ctx,
                             clt_tensor **out, clt_tensor **indices);

static clt_status as_batched5(const char *fn, const clt_tensor *input, op5_fn op,
                              const void *ctx, clt_tensor **out, clt_tensor **indices)
{
    if (input->ndim == 5)
        return op(fn, input, ctx, out, indices);
    int64_t s5[5] = {1, input->shape[0], input->shape[1], input->shape[2], input->shape[3]};
    clt_tensor *x5 = NULL, *y5 = NULL, *i5 = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape_rec(fn, input, 5, s5, &x5));
    CLT__TRY(op(fn, x5, ctx, &y5, indices ? &i5 : NULL));
    CLT__TRY(clt__reshape_rec(fn, y5, 4, y5->shape + 1, out));
    if (indices)
        CLT__TRY(clt__reshape(i5, 4, i5->shape + 1, indices, fn));
done:
    clt_tensor_free(x5);
    clt_tensor_free(y5);
    clt_tensor_free(i5);
    return st;
}

/* On failure, releases what an op with indices had made. */
static clt_status drop_both(clt_status st, clt_tensor **out, clt_tensor **indices)
{
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
        if (indices) {
            clt_tensor_free(*indices);
            *indices = NULL;
        }
    }
    return st == CLT_OK ? clt__ok() : st;
}

typedef struct pool3_ctx {
    bool max;
    pool3 q;
} pool3_ctx;

static clt_status pool3_op(const char *fn, const clt_tensor *x5, const void *ctx,
                           clt_tensor **out, clt_tensor **indices)
{
    const pool3_ctx *c = ctx;
    return pool3_run(fn, c->max, x5, &c->q, out, indices);
}

static clt_status pool3d_in(const char *fn, bool max, const clt_tensor *input,
                            const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                            const int64_t *dilation, int ceil_mode, int count_include_pad,
                            clt_tensor **out, clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(kernel, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, indices,
                          pool3d_in(fn, max, clt__hx, kernel, stride, padding, dilation,
                                    ceil_mode, count_include_pad, &clt__hr, indices));
    pool3_ctx c;
    memset(&c, 0, sizeof c);
    c.max = max;
    clt_status st = pool3_check(fn, max, input, kernel, stride, padding, dilation, ceil_mode,
                                count_include_pad, &c.q);
    if (st == CLT_OK)
        st = as_batched5(fn, input, pool3_op, &c, out, indices);
    if (st == CLT_OK)
        st = clt__name_result(max ? "MaxPool3DWithIndicesBackward0" : "AvgPool3DBackward0", out);
    return drop_both(st, out, indices);
}

clt_status clt__pool3d_rec(const char *fn, bool max, const clt_tensor *input,
                           const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation, int ceil_mode, int count_include_pad,
                           clt_tensor **out)
{
    return pool3d_in(fn, max, input, kernel, stride, padding, dilation, ceil_mode,
                     count_include_pad, out, NULL);
}

clt_status clt_max_pool3d(const clt_tensor *input, const int64_t kernel[3],
                          const int64_t stride[3], const int64_t padding[3],
                          const int64_t dilation[3], int ceil_mode, clt_tensor **out)
{
    CLT__AUTOCAST("clt_max_pool3d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
                  clt_max_pool3d(CLT__AC(0), kernel, stride, padding, dilation, ceil_mode, out));
    return pool3d_in("clt_max_pool3d", true, input, kernel, stride, padding, dilation,
                     ceil_mode, 1, out, NULL);
}

clt_status clt_max_pool3d_with_indices(const clt_tensor *input, const int64_t kernel[3],
                                       const int64_t stride[3], const int64_t padding[3],
                                       const int64_t dilation[3], int ceil_mode,
                                       clt_tensor **out, clt_tensor **indices)
{
    static const char fn[] = "clt_max_pool3d_with_indices";
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(indices, fn);
    return pool3d_in(fn, true, input, kernel, stride, padding, dilation, ceil_mode, 1, out,
                     indices);
}

clt_status clt_avg_pool3d(const clt_tensor *input, const int64_t kernel[3],
                          const int64_t stride[3], const int64_t padding[3], int ceil_mode,
                          int count_include_pad, clt_tensor **out)
{
    CLT__AUTOCAST(
        "clt_avg_pool3d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
        clt_avg_pool3d(CLT__AC(0), kernel, stride, padding, ceil_mode, count_include_pad, out));
    return pool3d_in("clt_avg_pool3d", false, input, kernel, stride, padding, NULL, ceil_mode,
                     count_include_pad, out, NULL);
}

/* ---- adaptive pooling: 1-D average, 3-D average and max ------------------------------- */

clt_status clt__adaptive_avg_pool1d_rec(const char *fn, const clt_tensor *input,
                                        int64_t output_size, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    if (input->ndim != 2 && input->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 2 to 3 dimensions, but got %d-dimensional tensor for "
                          "argument #1 'self' (while checking arguments for "
                          "adaptive_avg_pool1d)",
                          fn, input->ndim);
    /* [.., L] as [.., 1, L], as torch's unsqueeze(-2) */
    int d = input->ndim - 1;
    int64_t size[2] = {1, output_size};
    clt_tensor *x4 = NULL, *y4 = NULL;
    clt_status st = clt__unsqueeze_rec(fn, input, d, &x4);
    if (st == CLT_OK)
        st = clt__adaptive_avg_pool2d_rec(fn, x4, size, &y4);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, y4, d, out);
    clt_tensor_free(x4);
    clt_tensor_free(y4);
    return drop_both(st, out, NULL);
}

clt_status clt_adaptive_avg_pool1d(const clt_tensor *input, int64_t output_size,
                                   clt_tensor **out)
{
    return clt__adaptive_avg_pool1d_rec("clt_adaptive_avg_pool1d", input, output_size, out);
}

/* adaptive_avg_pool3d's and adaptive_max_pool3d's checks, PyTorch's words
 * (`op` names the op in them). */
static clt_status adaptive3_check(const char *fn, const char *op, const clt_tensor *x,
                                  const int64_t *size)
{
    char s1[160];
    if (x->ndim != 4 && x->ndim != 5)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s(): Expected 4D or 5D tensor, but got %s",
                          fn, op, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    clt_status st = clt__check_floating(x, "input", fn);
    if (st != CLT_OK)
        return st;
    if (size[0] < 0 || size[1] < 0 || size[2] < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: elements of output_size must be greater than or equal to 0 but "
                          "received {%lld, %lld, %lld}",
                          fn, (long long)size[0], (long long)size[1], (long long)size[2]);
    for (int d = x->ndim - 3; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: %s(): Expected input to have non-zero size for non-batch "
                              "dimensions, but input has sizes %s with dimension %d being empty",
                              fn, op, clt__shape_str(s1, sizeof s1, x->ndim, x->shape), d);
    return sizes_fit(fn, x, size);
}

/* Adaptive average pooling of a 5-D x: over D of [N, C, D, H W] to
 * {Do, H W}, then over (H, W) of [N, C Do, H, W] (this order lets any
 * output size be 0). */
static clt_status adaptive_avg3_op(const char *fn, const clt_tensor *x, const void *ctx,
                                   clt_tensor **out, clt_tensor **indices)
{
    (void)indices;
    const int64_t *size = ctx;
    int64_t N = x->shape[0], C = x->shape[1], D = x->shape[2], H = x->shape[3], W = x->shape[4];
    int64_t sa[4] = {N, C, D, H * W}, s1[2] = {size[0], H * W}, sc[4] = {N, C * size[0], H, W};
    int64_t s5[5] = {N, C, size[0], size[1], size[2]};
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *e = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape_rec(fn, x, 4, sa, &a));
    CLT__TRY(clt__adaptive_avg_pool2d_rec(fn, a, s1, &b));
    CLT__TRY(clt__reshape_rec(fn, b, 4, sc, &c));
    CLT__TRY(clt__adaptive_avg_pool2d_rec(fn, c, size + 1, &e));
    CLT__TRY(clt__reshape_rec(fn, e, 5, s5, out));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(e);
    return st;
}

clt_status clt__adaptive_avg_pool3d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(output_size, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, NULL,
                          clt__adaptive_avg_pool3d_rec(fn, clt__hx, output_size, &clt__hr));
    clt_status st = adaptive3_check(fn, "adaptive_avg_pool3d", input, output_size);
    if (st == CLT_OK)
        st = as_batched5(fn, input, adaptive_avg3_op, output_size, out, NULL);
    if (st == CLT_OK)
        st = clt__name_result("AdaptiveAvgPool3DBackward0", out);
    return drop_both(st, out, NULL);
}

clt_status clt_adaptive_avg_pool3d(const clt_tensor *input, const int64_t output_size[3],
                                   clt_tensor **out)
{
    CLT__AUTOCAST("clt_adaptive_avg_pool3d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
                  clt_adaptive_avg_pool3d(CLT__AC(0), output_size, out));
    return clt__adaptive_avg_pool3d_rec("clt_adaptive_avg_pool3d", input, output_size, out);
}

/* Adaptive max pooling of a 5-D x: over (H, W) of [N, C D, H, W], then
 * over D of [N, C, D, Ho Wo] (max_pool3d's order, for its ties).  An empty
 * output has no maximum to find: it is the average pool's, indices none. */
static clt_status adaptive_max3_op(const char *fn, const clt_tensor *x, const void *ctx,
                                   clt_tensor **out, clt_tensor **indices)
{
    const int64_t *size = ctx;
    int64_t N = x->shape[0], C = x->shape[1], D = x->shape[2], H = x->shape[3], W = x->shape[4];
    int64_t Do = size[0], Ho = size[1], Wo = size[2];
    int64_t sa[4] = {N, C * D, H, W}, sc[4] = {N, C, D, Ho * Wo}, s1[2] = {Do, Ho * Wo};
    int64_t s5[5] = {N, C, Do, Ho, Wo};
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *e = NULL, *ib = NULL, *ie = NULL;
    clt_status st = CLT_OK;
    if (Do == 0 || Ho == 0 || Wo == 0) {
        CLT__TRY(adaptive_avg3_op(fn, x, ctx, out, NULL));
        if (indices)
            CLT__TRY(clt__full(x->dev, CLT_INT64, 5, s5, 0.0, indices));
        return CLT_OK;
    }
    CLT__TRY(clt__reshape_rec(fn, x, 4, sa, &a));
    CLT__TRY(clt__adaptive_max_pool2d_rec(fn, a, size + 1, &b, indices ? &ib : NULL));
    CLT__TRY(clt__reshape_rec(fn, b, 4, sc, &c));
    CLT__TRY(clt__adaptive_max_pool2d_rec(fn, c, s1, &e, indices ? &ie : NULL));
    CLT__TRY(clt__reshape_rec(fn, e, 5, s5, out));
    if (indices)
        CLT__TRY(flat_indices3(fn, ib, ie, x->shape, indices));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(e);
    clt_tensor_free(ib);
    clt_tensor_free(ie);
    return st;
}

clt_status clt__adaptive_max_pool3d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out,
                                        clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(output_size, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, indices,
                          clt__adaptive_max_pool3d_rec(fn, clt__hx, output_size, &clt__hr,
                                                       indices));
    clt_status st = adaptive3_check(fn, "adaptive_max_pool3d", input, output_size);
    if (st == CLT_OK)
        st = as_batched5(fn, input, adaptive_max3_op, output_size, out, indices);
    if (st == CLT_OK)
        st = clt__name_result("AdaptiveMaxPool3DBackward0", out);
    return drop_both(st, out, indices);
}

clt_status clt_adaptive_max_pool3d(const clt_tensor *input, const int64_t output_size[3],
                                   clt_tensor **out, clt_tensor **indices)
{
    CLT__AUTOCAST("clt_adaptive_max_pool3d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
                  clt_adaptive_max_pool3d(CLT__AC(0), output_size, out, indices));
    return clt__adaptive_max_pool3d_rec("clt_adaptive_max_pool3d", input, output_size, out,
                                        indices);
}

/* ---- max unpooling in 3-D ------------------------------------------------------------- */

clt_status clt__max_unpool3d_rec(const char *fn, const clt_tensor *input,
                                 const clt_tensor *indices, const int64_t *kernel,
                                 const int64_t *stride, const int64_t *padding,
                                 const int64_t *output_size, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(indices, fn);
    CLT__REQUIRE_ARG(kernel, fn);
    int64_t size[3];
    clt_status st =
        clt__unpool_size(fn, 3, input, indices, kernel, stride, padding, output_size, size);
    if (st != CLT_OK)
        return st;
    /* each volume's values scattered over zeros at their flat indices (the
     * later of two equal indices wins, as PyTorch's CPU loop) */
    int nd = input->ndim;
    int64_t vin = input->shape[nd - 3] * input->shape[nd - 2] * input->shape[nd - 1];
    int64_t P = input->numel / vin, vout = size[0] * size[1] * size[2];
    int64_t s_in[2] = {P, vin}, s_out[2] = {P, vout}, shape[5];
    memcpy(shape, input->shape, sizeof(int64_t) * (size_t)nd);
    memcpy(shape + nd - 3, size, sizeof size);
    clt_tensor *x2 = NULL, *i2 = NULL, *z = NULL, *r = NULL;
    CLT__TRY(clt__reshape_rec(fn, input, 2, s_in, &x2));
    CLT__TRY(clt__reshape(indices, 2, s_in, &i2, fn));
    CLT__TRY(clt__full(input->dev, input->dtype, 2, s_out, 0.0, &z));
    CLT__TRY(clt_scatter(z, 1, i2, x2, &r));
    CLT__TRY(clt__reshape_rec(fn, r, nd, shape, out));
    CLT__TRY(clt__name_result("MaxUnpool3DBackward0", out));
done:
    clt_tensor_free(x2);
    clt_tensor_free(i2);
    clt_tensor_free(z);
    clt_tensor_free(r);
    return drop_both(st, out, NULL);
}

clt_status clt_max_unpool3d(const clt_tensor *input, const clt_tensor *indices,
                            const int64_t kernel[3], const int64_t stride[3],
                            const int64_t padding[3], const int64_t output_size[3],
                            clt_tensor **out)
{
    CLT__AUTOCAST("clt_max_unpool3d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
                  clt_max_unpool3d(CLT__AC(0), indices, kernel, stride, padding, output_size, out));
    return clt__max_unpool3d_rec("clt_max_unpool3d", input, indices, kernel, stride, padding,
                                 output_size, out);
}
