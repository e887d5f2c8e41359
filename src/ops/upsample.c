/* upsample.c: nearest and bilinear interpolation of 4-D inputs
 * (cl/upsample.cl), as torch.nn.functional.interpolate, and their
 * backward passes. */
#include <math.h>

#include "ops/conv.h"

/* Must match clt_up_geom in cl/upsample.cl. */
typedef struct ugeom {
    int64_t P, H, W, Ho, Wo;
    int64_t off0, align, pad;
} ugeom;

static const char *const mode_names[] = {"nearest", "bilinear"};

clt_status clt__interpolate_check(const clt_tensor *x, const int64_t *size, const double *scale,
                                  int mode, int align_corners, clt__interp *u, const char *fn)
{
    char s1[160];
    clt_status st;
    if (mode != CLT_INTERP_NEAREST && mode != CLT_INTERP_BILINEAR)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: unknown mode %d (CLT_INTERP_NEAREST or CLT_INTERP_BILINEAR)", fn,
                          mode);
    if (mode == CLT_INTERP_NEAREST && align_corners)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: align_corners option can only be set with the interpolating "
                          "modes: linear | bilinear | bicubic | trilinear",
                          fn);
    if (size && scale)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: only one of size or scale_factor should be defined", fn);
    if (!size && !scale)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: either size or scale_factor should be defined", fn);
    if (scale && !(isfinite(scale[0]) && scale[0] > 0 && isfinite(scale[1]) && scale[1] > 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: scale_factor must be finite and positive, but got {%g, %g}", fn,
                          scale[0], scale[1]);
    if (x == NULL) /* the layer's constructor: the settings alone */
        return CLT_OK;
    if (x->ndim != 4)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Got %dD input, but %s mode needs 4D input [N, C, H, W] here, "
                          "input of size %s",
                          fn, x->ndim, mode_names[mode],
                          clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    if ((st = clt__check_floating(x, "input", fn)) != CLT_OK)
        return st;
    *u = (clt__interp){mode, align_corners != 0, scale != NULL, {0, 0}, {0, 0}};
    for (int d = 0; d < 2; d++) {
        int64_t in = x->shape[2 + d];
        if (scale) {
            double o = floor((double)in * scale[d]);
            if (!(o < 0x1p62))
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: input size %lld times scale_factor %g passes int64", fn,
                                  (long long)in, scale[d]);
            u->scale[d] = scale[d];
            u->size[d] = (int64_t)o;
        } else {
            u->size[d] = size[d];
        }
    }
    if (x->shape[2] <= 0 || x->shape[3] <= 0 || u->size[0] <= 0 || u->size[1] <= 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Input and output sizes should be greater than 0, but got input "
                          "(H: %lld, W: %lld) output (H: %lld, W: %lld)",
                          fn, (long long)x->shape[2], (long long)x->shape[3],
                          (long long)u->size[0], (long long)u->size[1]);
    int64_t oshape[4] = {x->shape[0], x->shape[1], u->size[0], u->size[1]};
    return clt__check_shape(4, oshape, fn);
}

/* The source step of dimension d (input size in, output size out) as
 * PyTorch 1.13 computes it: nearest in float always (nearest_idx);
 * bilinear in the dtype (area_pixel_compute_scale). */
static float nearest_scale(const clt__interp *u, int d, int64_t in, int64_t out)
{
    return u->has_scale ? (float)(1.0 / u->scale[d]) : (float)in / (float)out;
}

static double linear_scale(const clt__interp *u, int d, int64_t in, int64_t out, bool f32)
{
    if (u->align_corners)
        return out > 1 ? (f32 ? (double)((float)(in - 1) / (float)(out - 1))
                              : (double)(in - 1) / (double)(out - 1))
                       : 0.0;
    if (u->has_scale)
        return f32 ? (double)(float)(1.0 / u->scale[d]) : 1.0 / u->scale[d];
    return f32 ? (double)((float)in / (float)out) : (double)in / (double)out;
}

/* A new tensor, the interpolation of a contiguous copy of `in` (backward:
 * its gradient, of the input's shape); in_shape is the forward input's
 * 4-D shape.  Bilinear first tabulates each output row's and column's
 * sources and weights (upsample_linear_table), which its kernels read. */
static clt_status up_launch(const clt_tensor *in, const clt__interp *u, const int64_t *in_shape,
                            bool backward, clt_tensor **out, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    static const char *const names[2][2] = {{"upsample_nearest_fwd", "upsample_nearest_bwd"},
                                            {"upsample_bilinear_fwd", "upsample_bilinear_bwd"}};
    ugeom g = {in_shape[0] * in_shape[1], in_shape[2], in_shape[3], u->size[0], u->size[1],
               0, u->align_corners, 0};
    int64_t oshape[4] = {in_shape[0], in_shape[1], u->size[0], u->size[1]};
    clt_status st = CLT_OK;
    clt_tensor *c = NULL, *r = NULL, *idx = NULL, *lam = NULL;
    bool nearest = u->mode == CLT_INTERP_NEAREST, f32 = in->dtype == CLT_FLOAT32;
    CLT__TRY(clt__result_new(fn, in->dev, in->dtype, 4, backward ? in_shape : oshape, &r));
    if (r->numel > 0) {
        const char *opts = clt__opts_cached(&slots[in->dtype], "T", in->dtype, NULL, in->dtype, "");
        if (opts == NULL)
            CLT__TRY(clt_last_status());
        CLT__TRY(clt__contiguous_as(fn, in, in->dtype, &c));
        g.off0 = c->offset;
        cl_mem mi = clt__mem(c), mr = clt__mem(r);
        clt__arg args[5] = {CLT__ARG(mi), CLT__ARG(mr), CLT__ARG(g)};
        float fh, fw;
        cl_mem mx, ml;
        if (nearest) {
            fh = nearest_scale(u, 0, g.H, g.Ho);
            fw = nearest_scale(u, 1, g.W, g.Wo);
            args[3] = CLT__ARG(fh);
            args[4] = CLT__ARG(fw);
        } else {
            double dh = linear_scale(u, 0, g.H, g.Ho, f32), dw = linear_scale(u, 1, g.W, g.Wo, f32);
            fh = (float)dh, fw = (float)dw; /* exact for float32: computed in float */
            int64_t n = 2 * (g.Ho + g.Wo);
            CLT__TRY(clt__temp_new(fn, "the sources' table", in->dev, CLT_INT64, 1, &n, &idx));
            CLT__TRY(clt__temp_new(fn, "the weights' table", in->dev, in->dtype, 1, &n, &lam));
            mx = clt__mem(idx), ml = clt__mem(lam);
            clt__arg targs[5] = {CLT__ARG(mx), CLT__ARG(ml), CLT__ARG(g),
                                 f32 ? CLT__ARG(fh) : CLT__ARG(dh),
                                 f32 ? CLT__ARG(fw) : CLT__ARG(dw)};
            size_t entries = (size_t)(g.Ho + g.Wo);
            CLT__TRY(clt__error_in(clt__launch(in->dev, "upsample", opts, "upsample_linear_table",
                                               1, &entries, NULL, 5, targs),
                                   fn));
            args[3] = CLT__ARG(mx);
            args[4] = CLT__ARG(ml);
        }
        size_t gws = (size_t)(g.P * (backward ? g.H : g.Ho));
        CLT__TRY(clt__error_in(clt__launch(in->dev, "upsample", opts,
                                           names[!nearest][backward], 1, &gws, NULL, 5, args),
                               fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(c);
    clt_tensor_free(r);
    clt_tensor_free(idx);
    clt_tensor_free(lam);
    return st;
}

clt_status clt__upsample(const clt_tensor *x, const clt__interp *u, clt_tensor **out,
                         const char *fn)
{
    return up_launch(x, u, x->shape, false, out, fn);
}

clt_status clt__upsample_backward(const clt_tensor *gout, const int64_t *in_shape,
                                  const clt__interp *u, clt_tensor **out)
{
    return up_launch(gout, u, in_shape, true, out, "clt_backward");
}
