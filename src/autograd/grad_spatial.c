/* grad_spatial.c: interpolate (all modes), grid_sample and affine_grid
 * (conv.h) with their backward formulas; the kernels live in
 * src/ops/upsample.c and src/ops/grid_sample.c. */
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

/* i[0..2]: mode, align_corners, has_scale; i[3..5] the output's sizes,
 * i[6] nd; s[0..2] the scales.  Nothing saved: the input's shape is its
 * edge's. */
static clt_status bw_interp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__interp u = {(int)n->i[0],        (int)n->i[1],
                     (int)n->i[2],        {n->s[0], n->s[1], n->s[2]},
                     {n->i[3], n->i[4], n->i[5]}, (int)n->i[6]};
    if (planar(&u))
        return clt__upsample_backward(g, n->in[0].shape, &u, &gin[0]);
    return clt__interp_separable_backward(g, n->in[0].shape, &u, &gin[0]);
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
    clt__interp u;
    clt_status st = clt__interp_check(input, nd, size, scale_factor, mode, align_corners,
                                      recompute, &u, fn);
    if (st != CLT_OK)
        return st;
    if (u.mode == CLT_INTERP_AREA) {
        st = interp_area(fn, input, &u, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt__node *n = NULL;
    st = clt__record(planar(&u) ? clt__upsample(input, &u, out, fn)
                                : clt__interp_separable(input, &u, out, fn),
                     out, interp_names[u.mode][u.nd - 1], bw_interp, 1, &input, 0, NULL, &n);
    if (n) {
        int64_t v[7] = {u.mode, u.align_corners, u.has_scale, u.size[0],
                        u.size[1], u.size[2],      u.nd};
        for (int k = 0; k < 7; k++)
            n->i[k] = v[k];
        for (int k = 0; k < 3; k++)
            n->s[k] = u.scale[k];
    }
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
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(grid, fn);
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

/* torch's linspace_from_neg_one in the dtype R: linspace(-1, 1, n) (from
 * each end towards the middle, as torch's kernel), times (n - 1) / n
 * without align_corners; 0 for n = 1. */
#define LINSPACE(NAME, R)                                                                      \
    static double NAME(int64_t i, int64_t n, int align_corners)                                \
    {                                                                                          \
        if (n <= 1)                                                                            \
            return 0;                                                                          \
        R step = (R)2 / (R)(n - 1);                                                            \
        R v = i < n / 2 ? (R)-1 + step * (R)i : (R)1 - step * (R)(n - i - 1);                  \
        return align_corners ? v : v * (R)(n - 1) / (R)n;                                      \
    }

LINSPACE(linspace_f32, float)
LINSPACE(linspace_f64, double)

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
                row[k - 1 - d] = (f32 ? linspace_f32 : linspace_f64)(at, sp[d], align_corners);
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
