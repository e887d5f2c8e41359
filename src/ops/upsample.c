/* upsample.c: interpolation (nearest and bilinear of 4-D inputs, and the
 * separable modes of any spatial rank as passes along each dimension)
 * (cl/upsample.cl), as torch.nn.functional.interpolate, and their
 * backward passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/conv.h"

/* Must match clt_up_geom in cl/upsample.cl. */
typedef struct ugeom {
    int64_t P, H, W, Ho, Wo;
    int64_t off0, align, pad;
} ugeom;

static const char *const mode_names[] = {"nearest", "bilinear", "nearest-exact", "linear",
                                         "bicubic", "trilinear", "area"};
/* The spatial rank each mode takes (0: any of 1 to 3). */
static const int mode_rank[] = {0, 2, 0, 1, 2, 3, 0};

static clt_status sizes_positive(const clt_tensor *x, const clt__interp *u, const char *fn)
{
    static const char *const names[3][3] = {{"W"}, {"H", "W"}, {"D", "H", "W"}};
    bool ok = true;
    for (int d = 0; d < u->nd; d++)
        ok = ok && x->shape[2 + d] > 0 && u->size[d] > 0;
    if (ok)
        return CLT_OK;
    char in[120] = "", out[120] = "";
    size_t li = 0, lo = 0;
    for (int d = 0; d < u->nd; d++) {
        const char *sep = d ? ", " : "";
        li += (size_t)snprintf(in + li, sizeof in - li, "%s%s: %lld", sep, names[u->nd - 1][d],
                               (long long)x->shape[2 + d]);
        lo += (size_t)snprintf(out + lo, sizeof out - lo, "%s%s: %lld", sep, names[u->nd - 1][d],
                               (long long)u->size[d]);
    }
    return clt__error(CLT_ERR_SHAPE_MISMATCH,
                      "%s: Input and output sizes should be greater than 0, but got input (%s) "
                      "output (%s)",
                      fn, in, out);
}

clt_status clt__interp_check(const clt_tensor *x, int nd, const int64_t *size, const double *scale,
                             int mode, int align_corners, int recompute, clt__interp *u,
                             const char *fn)
{
    char s1[160];
    clt_status st;
    if (mode < CLT_INTERP_NEAREST || mode > CLT_INTERP_AREA)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: unknown mode %d (a clt_interp_mode, CLT_INTERP_NEAREST to "
                          "CLT_INTERP_AREA)",
                          fn, mode);
    if ((mode == CLT_INTERP_NEAREST || mode == CLT_INTERP_NEAREST_EXACT ||
         mode == CLT_INTERP_AREA) &&
        align_corners)
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
    if (recompute && size)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: recompute_scale_factor is not meaningful with an explicit size.",
                          fn);
    if (x && nd && x->ndim != nd + 2) /* clt_interpolate, or a layer's sizes */
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Got %dD input, but %s mode needs %dD input here, input of size %s",
                          fn, x->ndim, mode_names[mode], nd + 2,
                          clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    if (x)
        nd = x->ndim - 2;
    /* a layer's own setting is an argument; an input's rank a shape */
    clt_status bad = x ? CLT_ERR_SHAPE_MISMATCH : CLT_ERR_INVALID_ARGUMENT;
    if (nd < 1 || nd > 3 || (mode == CLT_INTERP_BICUBIC && nd != 2))
        return clt__error(bad,
                          "%s: Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) "
                          "for the modes: nearest | linear | bilinear | bicubic | trilinear | "
                          "area | nearest-exact (got %s)",
                          fn, nd + 2, mode_names[mode]);
    if (mode_rank[mode] && mode_rank[mode] != nd)
        return clt__error(bad, "%s: Got %dD input, but %s mode needs %dD input", fn, nd + 2,
                          mode_names[mode], mode_rank[mode] + 2);
    for (int d = 0; scale && d < nd; d++)
        if (!(isfinite(scale[d]) && scale[d] > 0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: scale_factor must be finite and positive, but got %g for "
                              "dimension %d",
                              fn, scale[d], d);
    if (x == NULL) /* a layer's constructor: the settings alone */
        return CLT_OK;
    if ((st = clt__check_floating(x, "input", fn)) != CLT_OK)
        return st;
    *u = (clt__interp){mode, align_corners != 0, scale != NULL && !recompute, {0}, {0}, nd};
    for (int d = 0; d < nd; d++) {
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
    if ((st = sizes_positive(x, u, fn)) != CLT_OK)
        return st;
    int64_t oshape[5] = {x->shape[0], x->shape[1], u->size[0], u->size[1], u->size[2]};
    return clt__check_shape(nd + 2, oshape, fn);
}

clt_status clt__interpolate_check(const clt_tensor *x, const int64_t *size, const double *scale,
                                  int mode, int align_corners, clt__interp *u, const char *fn)
{
    return clt__interp_check(x, 2, size, scale, mode, align_corners, 0, u, fn);
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

/* ---- the separable modes: one pass per spatial dimension ------------------------------ */

/* Must match clt_up_pass in cl/upsample.cl. */
typedef struct upass {
    int64_t outer, L, Lo, inner; /* [outer, L, inner] to [outer, Lo, inner] */
    int64_t taps;                /* sources per output index */
    int64_t off0;                /* element offset of the first buffer */
    int64_t bstart, bent;        /* the backward's table in idx (see sep_upload) */
} upass;

static int64_t mode_taps(int mode)
{
    return mode == CLT_INTERP_BICUBIC ? 4
           : mode == CLT_INTERP_NEAREST || mode == CLT_INTERP_NEAREST_EXACT ? 1
                                                                             : 2;
}

/* torch's cubic convolution kernels (A = -0.75). */
#define CUBIC1(R, A, x) ((((A) + 2) * (x) - ((A) + 3)) * (x) * (x) + 1)
#define CUBIC2(R, A, x) (((((A) * (x)) - 5 * (A)) * (x) + 8 * (A)) * (x) - 4 * (A))

/* The sources idx[j taps + t] and weights w[j taps + t] of each output
 * index j of dimension d (input size in, output size out) as PyTorch
 * 1.13's CPU kernels compute them: nearest's in float whatever the dtype
 * (nearest_idx, nearest_exact_idx), the others in R, the input's dtype
 * (area_pixel_compute_scale and _source_index, then
 * compute_source_index_and_lambda or get_cubic_upsample_coefficients with
 * the taps clamped into the input). */
#define SEP_TABLE(NAME, R)                                                                     \
    static void NAME(const clt__interp *u, int d, int64_t in, int64_t out, int64_t *idx,      \
                     double *w)                                                                \
    {                                                                                          \
        int mode = u->mode;                                                                    \
        if (mode == CLT_INTERP_NEAREST || mode == CLT_INTERP_NEAREST_EXACT) {                  \
            float s = nearest_scale(u, d, in, out);                                            \
            for (int64_t j = 0; j < out; j++) {                                                \
                int64_t i;                                                                     \
                if (mode == CLT_INTERP_NEAREST_EXACT)                                          \
                    i = (int64_t)floorf((float)(((double)j + 0.5) * s));                       \
                else                                                                           \
                    i = out == in       ? j                                                    \
                        : out == 2 * in ? j >> 1                                               \
                                        : (int64_t)floorf((float)j * s);                       \
                idx[j] = i < in - 1 ? i : in - 1;                                              \
                w[j] = 1;                                                                      \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        R scale = u->align_corners ? (out > 1 ? (R)(in - 1) / (R)(out - 1) : (R)0)             \
                  : u->has_scale   ? (R)(1.0 / u->scale[d])                                    \
                                   : (R)in / (R)out;                                           \
        for (int64_t j = 0; j < out; j++) {                                                    \
            R real = u->align_corners ? scale * (R)j                                           \
                                      : (R)((double)scale * ((double)j + 0.5) - 0.5);          \
            if (mode == CLT_INTERP_BICUBIC) {                                                  \
                int64_t i0 = (int64_t)floorf((float)real);                                     \
                R A = (R)-0.75, t = real - (R)i0, t2 = (R)(1.0 - t);                           \
                R c[4] = {CUBIC2(R, A, (R)(t + 1.0)), CUBIC1(R, A, t), CUBIC1(R, A, t2),       \
                          CUBIC2(R, A, (R)(t2 + 1.0))};                                        \
                for (int k = 0; k < 4; k++) {                                                  \
                    int64_t i = i0 - 1 + k;                                                    \
                    idx[4 * j + k] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;                      \
                    w[4 * j + k] = c[k];                                                       \
                }                                                                              \
                continue;                                                                      \
            }                                                                                  \
            if (out == in) {                                                                   \
                idx[2 * j] = idx[2 * j + 1] = j;                                               \
                w[2 * j] = 1;                                                                  \
                w[2 * j + 1] = 0;                                                              \
                continue;                                                                      \
            }                                                                                  \
            if (real < 0)                                                                      \
                real = 0;                                                                      \
            int64_t i0 = (int64_t)real;                                                        \
            R l1 = real - (R)i0;                                                               \
            l1 = l1 < 0 ? 0 : l1 > 1 ? 1 : l1;                                                 \
            idx[2 * j] = i0;                                                                   \
            idx[2 * j + 1] = i0 + (i0 < in - 1 ? 1 : 0);                                       \
            w[2 * j] = (R)1 - l1;                                                              \
            w[2 * j + 1] = l1;                                                                 \
        }                                                                                      \
    }

SEP_TABLE(sep_table_f32, float)
SEP_TABLE(sep_table_f64, double)

/* Uploads dimension d's tables for an input of size L: *idx holds the
 * forward's sources (Lo taps entries), then at p->bstart the backward's
 * per-input start offsets (L + 1) into its entries at p->bent, each the
 * output index that reads it, in increasing output order; *w the
 * forward's weights, then the entries' (at Lo taps). */
static clt_status sep_upload(const clt_tensor *like, const clt__interp *u, int d, int64_t L,
                             upass *p, clt_tensor **idx, clt_tensor **w, const char *fn)
{
    clt_status st = CLT_OK;
    int64_t Lo = u->size[d], taps = mode_taps(u->mode);
    /* tables of a size no memory holds (an output of 2^62 along d and no
     * elements in the others): refused before the counts overflow */
    const int64_t most = (int64_t)1 << 56;
    if (Lo < 0 || L < 0 || Lo > most / taps || L > most)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: the interpolation tables for %lld outputs from %lld inputs do "
                          "not fit in host memory",
                          fn, (long long)Lo, (long long)L);
    int64_t e = Lo * taps, ni = e + L + 1 + e, nw = 2 * e;
    int64_t *ib = malloc((size_t)ni * sizeof *ib);
    double *wb = malloc((size_t)nw * sizeof *wb);
    float *wf = like->dtype == CLT_FLOAT32 ? malloc((size_t)nw * sizeof *wf) : NULL;
    if (!ib || !wb || (like->dtype == CLT_FLOAT32 && !wf))
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    (like->dtype == CLT_FLOAT32 ? sep_table_f32 : sep_table_f64)(u, d, L, Lo, ib, wb);
    int64_t *start = ib + e, *ent = ib + e + L + 1;
    memset(start, 0, (size_t)(L + 1) * sizeof *start);
    for (int64_t k = 0; k < e; k++)
        start[ib[k] + 1]++;
    for (int64_t i = 0; i < L; i++)
        start[i + 1] += start[i];
    for (int64_t k = 0; k < e; k++) { /* a counting sort, stable in k */
        int64_t at = start[ib[k]]++;
        ent[at] = k / taps;
        wb[e + at] = wb[k];
    }
    memmove(start + 1, start, (size_t)L * sizeof *start);
    start[0] = 0;
    *p = (upass){0, L, Lo, 0, taps, 0, e, e + L + 1};
    CLT__TRY(clt__tensor_from_host_in(fn, like->dev, CLT_INT64, 1, &ni, ib, idx));
    if (wf)
        for (int64_t k = 0; k < nw; k++)
            wf[k] = (float)wb[k];
    CLT__TRY(clt__tensor_from_host_in(fn, like->dev, like->dtype, 1, &nw,
                                      wf ? (const void *)wf : (const void *)wb, w));
done:
    free(ib);
    free(wb);
    free(wf);
    return st;
}

/* One pass along spatial dimension d of `in` (its size there L forward,
 * Lo backward): a new tensor with that size made Lo (L backward). */
static clt_status sep_pass(const clt_tensor *in, const clt__interp *u, int d, int64_t L,
                           bool backward, clt_tensor **out, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    clt_status st = CLT_OK;
    clt_tensor *c = NULL, *r = NULL, *idx = NULL, *w = NULL;
    int64_t shape[5];
    memcpy(shape, in->shape, (size_t)in->ndim * sizeof *shape);
    upass p;
    shape[2 + d] = backward ? L : u->size[d];
    CLT__TRY(clt__result_new(fn, in->dev, in->dtype, in->ndim, shape, &r)); /* before the tables */
    CLT__TRY(sep_upload(in, u, d, L, &p, &idx, &w, fn));
    p.outer = 1;
    p.inner = 1;
    for (int k = 0; k < in->ndim; k++)
        if (k < 2 + d)
            p.outer *= shape[k];
        else if (k > 2 + d)
            p.inner *= shape[k];
    if (r->numel > 0) {
        const char *opts = clt__opts_cached(&slots[in->dtype], "T", in->dtype, NULL, in->dtype, "");
        if (opts == NULL)
            CLT__TRY(clt_last_status());
        CLT__TRY(clt__contiguous_as(fn, in, in->dtype, &c));
        p.off0 = c->offset;
        cl_mem mi = clt__mem(c), mr = clt__mem(r), mx = clt__mem(idx), mw = clt__mem(w);
        clt__arg args[5] = {CLT__ARG(mi), CLT__ARG(mr), CLT__ARG(p), CLT__ARG(mx),
                            CLT__ARG(mw)};
        size_t gws = (size_t)r->numel;
        CLT__TRY(clt__error_in(clt__launch(in->dev, "upsample", opts,
                                           backward ? "interp_pass_bwd" : "interp_pass_fwd", 1,
                                           &gws, NULL, 5, args),
                               fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(c);
    clt_tensor_free(r);
    clt_tensor_free(idx);
    clt_tensor_free(w);
    return st;
}

/* Every pass: forward from the last dimension to the first, backward
 * (the transposed passes) from the first to the last. */
static clt_status sep_passes(const clt_tensor *in, const clt__interp *u, const int64_t *in_shape,
                             bool backward, clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *cur = NULL, *next = NULL;
    for (int k = 0; k < u->nd; k++) {
        int d = backward ? k : u->nd - 1 - k;
        CLT__TRY(sep_pass(cur ? cur : in, u, d, in_shape[2 + d], backward, &next, fn));
        clt_tensor_free(cur);
        cur = next;
        next = NULL;
    }
    *out = cur;
    cur = NULL;
done:
    clt_tensor_free(cur);
    return st;
}

clt_status clt__interp_separable(const clt_tensor *x, const clt__interp *u, clt_tensor **out,
                                 const char *fn)
{
    return sep_passes(x, u, x->shape, false, out, fn);
}

clt_status clt__interp_separable_backward(const clt_tensor *g, const int64_t *in_shape,
                                          const clt__interp *u, clt_tensor **out)
{
    return sep_passes(g, u, in_shape, true, out, "clt_backward");
}
