/* test_conv_more.c: conv1d, conv_transpose2d and interpolate (nearest and
 * bilinear) against direct host loops in double (strides, padding,
 * dilation, groups, output_padding, bias, unbatched, non-contiguous and
 * odd sizes, float32 and float64), PyTorch 1.13's values where its rules
 * decide (nearest's floor(i * scale), bilinear's corners), gradients
 * against finite differences (gradcheck.h), max_pool1d and avg_pool1d,
 * errors with their messages, and the layers (Conv1d, ConvTranspose2d,
 * Upsample, MaxPool1d, AvgPool1d): initialisation, forward, dtype
 * conversion, a second device, save and load. */
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

/* src/ops/conv.h: the most bytes of patches unfolded at once */
extern size_t clt__conv2d_cols_limit;

static size_t numel_of(int nd, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    return n;
}

/* ---- conv1d --------------------------------------------------------------------------------- */

typedef struct c1case {
    int64_t N, C, L, O, k; /* N 0: unbatched */
    clt_conv1d_opts o;
    int bias;
} c1case;

static const c1case C1[] = {
    {2, 4, 11, 6, 3, {1, 0, 1, 2}, 1},  {0, 3, 9, 5, 4, {2, 1, 1, 1}, 0},
    {2, 3, 17, 4, 5, {3, 2, 2, 1}, 1},  {1, 6, 7, 6, 3, {1, 1, 1, 6}, 1},
    {3, 2, 1, 3, 1, {1, 0, 1, 1}, 1},   {2, 5, 23, 2, 2, {4, 3, 3, 1}, 0},
};

static void ref_conv1d(const double *x, const double *w, const double *b, const c1case *c,
                       int64_t Lo, double *y)
{
    int64_t N = c->N ? c->N : 1, G = c->o.groups, Cg = c->C / G, Og = c->O / G;
    for (int64_t n = 0; n < N; n++)
        for (int64_t oc = 0; oc < c->O; oc++)
            for (int64_t l = 0; l < Lo; l++) {
                double acc = b ? b[oc] : 0.0;
                for (int64_t ci = 0; ci < Cg; ci++)
                    for (int64_t j = 0; j < c->k; j++) {
                        int64_t il = l * c->o.stride - c->o.padding + j * c->o.dilation;
                        if (il >= 0 && il < c->L)
                            acc += x[(n * c->C + oc / Og * Cg + ci) * c->L + il] *
                                   w[(oc * Cg + ci) * c->k + j];
                    }
                y[(n * c->O + oc) * Lo + l] = acc;
            }
}

static void check_conv1d(clt_device *dev, clt_dtype dt, const c1case *c, double tol)
{
    int64_t Lo = (c->L + 2 * c->o.padding - c->o.dilation * (c->k - 1) - 1) / c->o.stride + 1;
    int64_t xs[3] = {c->N, c->C, c->L}, ws[3] = {c->O, c->C / c->o.groups, c->k};
    int nd = c->N ? 3 : 2;
    const int64_t *xsh = c->N ? xs : xs + 1;
    size_t nx = numel_of(nd, xsh), nw = numel_of(3, ws);
    double *x = spread_doubles(nx, 5), *w = spread_doubles(nw, 6), *b = spread_doubles(c->O, 7);
    size_t ny = (size_t)((c->N ? c->N : 1) * c->O * Lo);
    double *want = malloc(ny * sizeof *want);
    ref_conv1d(x, w, c->bias ? b : NULL, c, Lo, want);
    clt_tensor *tx = tensor_of(dev, dt, nd, xsh, x), *tw = tensor_of(dev, dt, 3, ws, w);
    clt_tensor *tb = c->bias ? tensor_of(dev, dt, 1, &c->O, b) : NULL, *y = NULL;
    CHECK(clt_conv1d(tx, tw, tb, &c->o, &y));
    int64_t ys[3] = {c->N, c->O, Lo};
    assert_shape(y, nd, c->N ? ys : ys + 1);
    cr_assert_eq(clt_tensor_dtype(y), dt);
    assert_tensor_close(y, want, ny, tol, tol, "conv1d");
    free(x);
    free(w);
    free(b);
    free(want);
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    clt_tensor_free(y);
}

Test(conv_more, conv1d_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof C1 / sizeof C1[0]; i++) {
        check_conv1d(dev, CLT_FLOAT64, &C1[i], 1e-12);
        check_conv1d(dev, CLT_FLOAT32, &C1[i], 1e-5);
    }
}

/* conv1d is conv2d on [N, C, 1, L]: the same bits, and NULL options are
 * PyTorch's defaults. */
Test(conv_more, conv1d_is_conv2d_of_a_row)
{
    clt_device *dev = get_device("cpu");
    double *x = spread_doubles(2 * 4 * 13, 21), *w = spread_doubles(6 * 2 * 3, 22);
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 4, 13}, x);
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){6, 2, 3}, w);
    clt_tensor *x4, *w4, *y1, *y2, *y0, *yd;
    CHECK(clt_unsqueeze(tx, 2, &x4));
    CHECK(clt_unsqueeze(tw, 2, &w4));
    clt_conv1d_opts o = {2, 1, 2, 2};
    clt_conv2d_opts o2 = {{1, 2}, {0, 1}, {1, 2}, 2};
    CHECK(clt_conv1d(tx, tw, NULL, &o, &y1));
    CHECK(clt_conv2d(x4, w4, NULL, &o2, &y2));
    float *a = read_f32(y1), *b = read_f32(y2);
    cr_assert_eq(clt_tensor_numel(y1), clt_tensor_numel(y2));
    cr_assert(memcmp(a, b, (size_t)clt_tensor_numel(y1) * sizeof(float)) == 0);
    clt_conv1d_opts d = CLT_CONV1D_DEFAULTS;
    clt_tensor *tw1 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){6, 4, 3}, x);
    CHECK(clt_conv1d(tx, tw1, NULL, NULL, &y0));
    CHECK(clt_conv1d(tx, tw1, NULL, &d, &yd));
    assert_shape(y0, 3, (int64_t[]){2, 6, 11});
    float *c = read_f32(y0), *e = read_f32(yd);
    cr_assert(memcmp(c, e, 2 * 6 * 11 * sizeof(float)) == 0);
    free(a);
    free(b);
    free(c);
    free(e);
    free(x);
    free(w);
    clt_tensor *ts[] = {tx, tw, x4, w4, y1, y2, tw1, y0, yd};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

static clt_status call_conv1d(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const c1case *c = ctx;
    return clt_conv1d(in[0], in[1], c->bias ? in[2] : NULL, &c->o, out);
}

Test(conv_more, conv1d_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const c1case gc[] = {
        {2, 4, 7, 6, 3, {1, 1, 1, 2}, 1},
        {1, 2, 9, 3, 2, {2, 0, 3, 1}, 1},
        {0, 3, 6, 2, 3, {1, 2, 1, 1}, 0},
    };
    for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++) {
        const c1case *c = &gc[i];
        int64_t N = c->N ? c->N : 1;
        double *x = spread_doubles((size_t)(N * c->C * c->L), 31 + (unsigned)i);
        double *w = spread_doubles((size_t)(c->O * c->C / c->o.groups * c->k), 32);
        double *b = spread_doubles((size_t)c->O, 33);
        gc_in ins[3] = {{3, {c->N, c->C, c->L}, x, 1},
                        {3, {c->O, c->C / c->o.groups, c->k}, w, 1},
                        {1, {c->O}, b, 1}};
        if (!c->N)
            ins[0] = (gc_in){2, {c->C, c->L}, x, 1};
        gradcheck(dev, call_conv1d, c, c->bias ? 3 : 2, ins);
        free(x);
        free(w);
        free(b);
    }
}

/* ---- conv_transpose2d ----------------------------------------------------------------------- */

typedef struct ctcase {
    int64_t N, Cin, H, W, Cout, kh, kw; /* N 0: unbatched */
    clt_conv_transpose2d_opts o;
    int bias;
} ctcase;

static const ctcase CT[] = {
    {2, 4, 5, 6, 3, 3, 2, {{1, 1}, {0, 0}, {0, 0}, 1, {1, 1}}, 1},
    {2, 4, 5, 6, 4, 3, 3, {{2, 3}, {1, 2}, {1, 2}, 2, {1, 1}}, 1},
    {0, 3, 4, 5, 2, 2, 4, {{2, 1}, {1, 0}, {0, 0}, 1, {2, 3}}, 0},
    {1, 6, 3, 4, 3, 3, 3, {{3, 2}, {2, 1}, {2, 1}, 3, {2, 2}}, 1},
    /* output_padding at the stride, below the dilation */
    {2, 2, 4, 4, 3, 3, 3, {{1, 1}, {0, 0}, {1, 0}, 1, {2, 1}}, 1},
    {3, 1, 1, 1, 2, 1, 1, {{1, 1}, {0, 0}, {0, 0}, 1, {1, 1}}, 1},
    {1, 2, 7, 3, 5, 4, 1, {{2, 2}, {3, 0}, {1, 1}, 1, {1, 1}}, 1},
};

static void ct_out(const ctcase *c, int64_t *Ho, int64_t *Wo)
{
    const clt_conv_transpose2d_opts *o = &c->o;
    *Ho = (c->H - 1) * o->stride[0] - 2 * o->padding[0] + o->dilation[0] * (c->kh - 1) +
          o->output_padding[0] + 1;
    *Wo = (c->W - 1) * o->stride[1] - 2 * o->padding[1] + o->dilation[1] * (c->kw - 1) +
          o->output_padding[1] + 1;
}

/* The definition: every input pixel scatters itself times the kernel. */
static void ref_conv_transpose2d(const double *x, const double *w, const double *b,
                                 const ctcase *c, double *y)
{
    const clt_conv_transpose2d_opts *o = &c->o;
    int64_t Ho, Wo, N = c->N ? c->N : 1, G = o->groups;
    int64_t Cig = c->Cin / G, Cog = c->Cout / G;
    ct_out(c, &Ho, &Wo);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oc = 0; oc < c->Cout; oc++)
            for (int64_t i = 0; i < Ho * Wo; i++)
                y[(n * c->Cout + oc) * Ho * Wo + i] = b ? b[oc] : 0.0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ic = 0; ic < c->Cin; ic++)
            for (int64_t ih = 0; ih < c->H; ih++)
                for (int64_t iw = 0; iw < c->W; iw++) {
                    double v = x[((n * c->Cin + ic) * c->H + ih) * c->W + iw];
                    int64_t g = ic / Cig;
                    for (int64_t k = 0; k < Cog; k++)
                        for (int64_t ki = 0; ki < c->kh; ki++)
                            for (int64_t kj = 0; kj < c->kw; kj++) {
                                int64_t oh = ih * o->stride[0] - o->padding[0] +
                                             ki * o->dilation[0];
                                int64_t ow = iw * o->stride[1] - o->padding[1] +
                                             kj * o->dilation[1];
                                if (oh < 0 || oh >= Ho || ow < 0 || ow >= Wo)
                                    continue;
                                int64_t oc = g * Cog + k;
                                y[((n * c->Cout + oc) * Ho + oh) * Wo + ow] +=
                                    v * w[((ic * Cog + k) * c->kh + ki) * c->kw + kj];
                            }
                }
}

/* transposed: the input handed over as a transposed view of [.., W, H]
 * (non-contiguous). */
static void check_ct(clt_device *dev, clt_dtype dt, const ctcase *c, double tol, int transposed)
{
    int64_t Ho, Wo, N = c->N ? c->N : 1;
    ct_out(c, &Ho, &Wo);
    int nd = c->N ? 4 : 3;
    int64_t xs[4] = {c->N, c->Cin, c->H, c->W};
    int64_t ws[4] = {c->Cin, c->Cout / c->o.groups, c->kh, c->kw};
    const int64_t *xsh = c->N ? xs : xs + 1;
    size_t nx = numel_of(nd, xsh), nw = numel_of(4, ws), ny = (size_t)(N * c->Cout * Ho * Wo);
    double *x = spread_doubles(nx, 41), *w = spread_doubles(nw, 42);
    double *b = spread_doubles((size_t)c->Cout, 43);
    double *want = malloc(ny * sizeof *want);
    ref_conv_transpose2d(x, w, c->bias ? b : NULL, c, want);
    clt_tensor *tx, *tw = tensor_of(dev, dt, 4, ws, w), *y = NULL;
    clt_tensor *tb = c->bias ? tensor_of(dev, dt, 1, &c->Cout, b) : NULL;
    if (transposed) {
        /* the same values stored as [.., W, H], seen through a transpose */
        double *xt = malloc(nx * sizeof *xt);
        for (size_t p = 0; p < nx / (size_t)(c->H * c->W); p++)
            for (int64_t h = 0; h < c->H; h++)
                for (int64_t v = 0; v < c->W; v++)
                    xt[p * c->H * c->W + v * c->H + h] = x[p * c->H * c->W + h * c->W + v];
        int64_t ts[4];
        memcpy(ts, xsh, nd * sizeof *ts);
        ts[nd - 2] = c->W;
        ts[nd - 1] = c->H;
        clt_tensor *base = tensor_of(dev, dt, nd, ts, xt);
        CHECK(clt_transpose(base, nd - 2, nd - 1, &tx));
        cr_assert(!clt_tensor_is_contiguous(tx) || c->H == 1 || c->W == 1);
        clt_tensor_free(base);
        free(xt);
    } else {
        tx = tensor_of(dev, dt, nd, xsh, x);
    }
    CHECK(clt_conv_transpose2d(tx, tw, tb, &c->o, &y));
    int64_t ys[4] = {c->N, c->Cout, Ho, Wo};
    assert_shape(y, nd, c->N ? ys : ys + 1);
    assert_tensor_close(y, want, ny, tol, tol, "conv_transpose2d");
    free(x);
    free(w);
    free(b);
    free(want);
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    clt_tensor_free(y);
}

Test(conv_more, conv_transpose2d_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof CT / sizeof CT[0]; i++) {
        check_ct(dev, CLT_FLOAT64, &CT[i], 1e-12, 0);
        check_ct(dev, CLT_FLOAT32, &CT[i], 1e-5, 0);
        check_ct(dev, CLT_FLOAT64, &CT[i], 1e-12, 1);
    }
    /* batches in chunks of one image give the same values */
    size_t saved = clt__conv2d_cols_limit;
    clt__conv2d_cols_limit = 1;
    check_ct(dev, CLT_FLOAT64, &CT[0], 1e-12, 0);
    check_ct(dev, CLT_FLOAT64, &CT[1], 1e-12, 0);
    clt__conv2d_cols_limit = saved;
}

/* A hand-checked case: stride 2 spreads the pixels, the kernel fills
 * between them, output_padding adds a last row that only the bias
 * reaches. */
Test(conv_more, conv_transpose2d_small_by_hand)
{
    clt_device *dev = get_device("cpu");
    double x[2] = {1, 2}, w[2] = {10, 1}, b = 0.5;
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 1, 1, 2}, x);
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 1, 1, 2}, w);
    clt_tensor *tb = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &b), *y;
    clt_conv_transpose2d_opts o = {{1, 2}, {0, 0}, {0, 1}, 1, {1, 1}};
    CHECK(clt_conv_transpose2d(tx, tw, tb, &o, &y));
    assert_shape(y, 4, (int64_t[]){1, 1, 1, 5});
    /* [10, 1, 20, 2] + bias, then the output_padding column: bias alone */
    double want[5] = {10.5, 1.5, 20.5, 2.5, 0.5};
    assert_tensor_close(y, want, 5, 0, 0, "by hand");
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    clt_tensor_free(y);
}

static clt_status call_ct(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ctcase *c = ctx;
    return clt_conv_transpose2d(in[0], in[1], c->bias ? in[2] : NULL, &c->o, out);
}

Test(conv_more, conv_transpose2d_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const ctcase gc[] = {
        {2, 2, 3, 4, 3, 3, 2, {{1, 1}, {1, 0}, {0, 0}, 1, {1, 1}}, 1},
        {1, 4, 3, 3, 2, 2, 3, {{2, 3}, {1, 1}, {1, 2}, 2, {1, 1}}, 1},
        {0, 2, 3, 2, 2, 2, 2, {{1, 2}, {0, 1}, {1, 1}, 1, {2, 2}}, 0},
    };
    for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++) {
        const ctcase *c = &gc[i];
        int64_t N = c->N ? c->N : 1, Cog = c->Cout / c->o.groups;
        double *x = spread_doubles((size_t)(N * c->Cin * c->H * c->W), 51 + (unsigned)i);
        double *w = spread_doubles((size_t)(c->Cin * Cog * c->kh * c->kw), 52);
        double *b = spread_doubles((size_t)c->Cout, 53);
        gc_in ins[3] = {{4, {c->N, c->Cin, c->H, c->W}, x, 1},
                        {4, {c->Cin, Cog, c->kh, c->kw}, w, 1},
                        {1, {c->Cout}, b, 1}};
        if (!c->N)
            ins[0] = (gc_in){3, {c->Cin, c->H, c->W}, x, 1};
        gradcheck(dev, call_ct, c, c->bias ? 3 : 2, ins);
        ins[0].grad = 0; /* the weight and bias alone */
        gradcheck(dev, call_ct, c, c->bias ? 3 : 2, ins);
        free(x);
        free(w);
        free(b);
    }
}

/* ---- interpolate ---------------------------------------------------------------------------- */

typedef struct icase {
    int64_t N, C, H, W;
    int64_t size[2];  /* {0, 0}: by scale */
    double scale[2];
} icase;

static const icase IC[] = {
    {2, 3, 4, 5, {8, 10}, {0, 0}},  {1, 2, 3, 3, {5, 7}, {0, 0}},
    {1, 2, 7, 9, {3, 4}, {0, 0}},   {2, 1, 5, 4, {0, 0}, {2.0, 3.0}},
    {1, 2, 5, 7, {0, 0}, {1.7, 0.6}}, {1, 1, 3, 4, {0, 0}, {2.5, 1.3}},
    {1, 2, 1, 6, {4, 1}, {0, 0}},   {2, 2, 6, 6, {6, 6}, {0, 0}},
    {1, 1, 10, 3, {0, 0}, {0.35, 3.3}},
};

/* PyTorch 1.13's nearest source index (UpSample.h): the same size and
 * twice the size exactly, otherwise floor(i * scale) in float, scale
 * 1 / scale_factor when given, else in / out. */
static int64_t ref_nearest(int64_t i, int64_t in, int64_t out, double sf)
{
    if (out == in)
        return i;
    if (out == 2 * in)
        return i / 2;
    float s = sf > 0 ? (float)(1.0 / sf) : (float)in / (float)out;
    int64_t r = (int64_t)floorf((float)i * s);
    return r < in - 1 ? r : in - 1;
}

/* Bilinear source index and weight in double: area_pixel_compute_scale and
 * _source_index. */
static void ref_linear(int64_t i, int64_t in, int64_t out, double sf, int align, int64_t *i0,
                       int64_t *i1, double *l1)
{
    double s = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                     : (sf > 0 ? 1.0 / sf : (double)in / (double)out);
    double real = align ? s * (double)i : s * ((double)i + 0.5) - 0.5;
    if (real < 0)
        real = 0;
    *i0 = (int64_t)real;
    *i1 = *i0 + (*i0 < in - 1);
    *l1 = real - (double)*i0;
}

static void out_hw(const icase *c, int64_t *Ho, int64_t *Wo)
{
    *Ho = c->size[0] ? c->size[0] : (int64_t)floor((double)c->H * c->scale[0]);
    *Wo = c->size[0] ? c->size[1] : (int64_t)floor((double)c->W * c->scale[1]);
}

static void ref_interp(const double *x, const icase *c, int mode, int align, double *y)
{
    int64_t Ho, Wo;
    out_hw(c, &Ho, &Wo);
    double sh = c->size[0] ? 0 : c->scale[0], sw = c->size[0] ? 0 : c->scale[1];
    for (int64_t p = 0; p < c->N * c->C; p++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                const double *src = x + p * c->H * c->W;
                double v;
                if (mode == CLT_INTERP_NEAREST) {
                    v = src[ref_nearest(i, c->H, Ho, sh) * c->W + ref_nearest(j, c->W, Wo, sw)];
                } else {
                    int64_t h0, h1, w0, w1;
                    double a, b;
                    ref_linear(i, c->H, Ho, sh, align, &h0, &h1, &a);
                    ref_linear(j, c->W, Wo, sw, align, &w0, &w1, &b);
                    v = (1 - a) * ((1 - b) * src[h0 * c->W + w0] + b * src[h0 * c->W + w1]) +
                        a * ((1 - b) * src[h1 * c->W + w0] + b * src[h1 * c->W + w1]);
                }
                y[(p * Ho + i) * Wo + j] = v;
            }
}

static clt_tensor *run_interp(const clt_tensor *x, const icase *c, int mode, int align)
{
    clt_tensor *y = NULL;
    CHECK(clt_interpolate(x, c->size[0] ? c->size : NULL, c->size[0] ? NULL : c->scale,
                          (clt_interp_mode)mode, align, &y));
    return y;
}

Test(conv_more, interpolate_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    static const clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (size_t k = 0; k < sizeof IC / sizeof IC[0]; k++) {
        const icase *c = &IC[k];
        int64_t Ho, Wo, xs[4] = {c->N, c->C, c->H, c->W};
        out_hw(c, &Ho, &Wo);
        size_t nx = numel_of(4, xs), ny = (size_t)(c->N * c->C * Ho * Wo);
        double *x = spread_doubles(nx, 61 + (unsigned)k), *want = malloc(ny * sizeof *want);
        for (int d = 0; d < 2; d++) {
            clt_tensor *tx = tensor_of(dev, dts[d], 4, xs, x);
            /* the input as the device holds it (float32 rounds) */
            double *xr = read_as_f64(tx);
            for (int m = 0; m < 3; m++) {
                int mode = m == 0 ? CLT_INTERP_NEAREST : CLT_INTERP_BILINEAR, align = m == 2;
                ref_interp(xr, c, mode, align, want);
                clt_tensor *y = run_interp(tx, c, mode, align);
                assert_shape(y, 4, (int64_t[]){c->N, c->C, Ho, Wo});
                cr_assert_eq(clt_tensor_dtype(y), dts[d]);
                double tol = mode == CLT_INTERP_NEAREST ? 0 : d == 0 ? 1e-6 : 1e-14;
                assert_tensor_close(y, want, ny, tol, tol, m == 0 ? "nearest" : "bilinear");
                clt_tensor_free(y);
            }
            free(xr);
            clt_tensor_free(tx);
        }
        free(x);
        free(want);
    }
}

/* Values fixed by PyTorch 1.13's rules: nearest 3 -> 5 reads rows
 * 0, 0, 1, 1, 2 (floor(i * 0.6); nearest-exact would read 0, 1, 1, 2, 2);
 * a scale factor's own reciprocal decides, not in / out (4 * 1.3 -> 5
 * columns read floor(i / 1.3): 0, 0, 1, 2, 3, where 4 / 5 gives
 * 0, 0, 1, 2, 3 too but 2.5 on 3 rows gives 0, 0, 0, 1, 1, 2, 2);
 * bilinear [1, 2] -> 4 is 1, 1.25, 1.75, 2 with half-pixel centres and
 * 1, 4/3, 5/3, 2 with align_corners. */
Test(conv_more, interpolate_torch_rules)
{
    clt_device *dev = get_device("cpu");
    double col[3] = {0, 1, 2};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 1, 3, 1}, col), *y;
    CHECK(clt_interpolate(x, (int64_t[]){5, 1}, NULL, CLT_INTERP_NEAREST, 0, &y));
    assert_tensor_close(y, (double[]){0, 0, 1, 1, 2}, 5, 0, 0, "nearest 3 -> 5");
    clt_tensor_free(y);
    CHECK(clt_interpolate(x, NULL, (double[]){2.5, 1}, CLT_INTERP_NEAREST, 0, &y));
    assert_tensor_close(y, (double[]){0, 0, 0, 1, 1, 2, 2}, 7, 0, 0, "nearest x2.5");
    clt_tensor_free(y);
    clt_tensor_free(x);
    double row[2] = {1, 2};
    x = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){1, 1, 1, 2}, row);
    CHECK(clt_interpolate(x, (int64_t[]){1, 4}, NULL, CLT_INTERP_BILINEAR, 0, &y));
    assert_tensor_close(y, (double[]){1, 1.25, 1.75, 2}, 4, 1e-15, 0, "bilinear");
    clt_tensor_free(y);
    CHECK(clt_interpolate(x, (int64_t[]){1, 4}, NULL, CLT_INTERP_BILINEAR, 1, &y));
    assert_tensor_close(y, (double[]){1, 4.0 / 3, 5.0 / 3, 2}, 4, 1e-15, 0, "align_corners");
    clt_tensor_free(y);
    /* one output column with align_corners reads the first input column */
    CHECK(clt_interpolate(x, (int64_t[]){1, 1}, NULL, CLT_INTERP_BILINEAR, 1, &y));
    assert_tensor_close(y, (double[]){1}, 1, 0, 0, "align_corners to 1");
    clt_tensor_free(y);
    clt_tensor_free(x);
}

typedef struct ictx {
    const icase *c;
    int mode, align;
} ictx;

static clt_status call_interp(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ictx *t = ctx;
    return clt_interpolate(in[0], t->c->size[0] ? t->c->size : NULL,
                           t->c->size[0] ? NULL : t->c->scale, (clt_interp_mode)t->mode, t->align,
                           out);
}

Test(conv_more, interpolate_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const icase gc[] = {
        {2, 2, 3, 4, {7, 9}, {0, 0}},
        {1, 2, 6, 7, {4, 3}, {0, 0}},
        {1, 1, 3, 4, {0, 0}, {2.5, 1.5}},
        {1, 1, 5, 5, {5, 10}, {0, 0}},
    };
    for (size_t k = 0; k < sizeof gc / sizeof gc[0]; k++) {
        const icase *c = &gc[k];
        double *x = spread_doubles((size_t)(c->N * c->C * c->H * c->W), 71 + (unsigned)k);
        gc_in in = {4, {c->N, c->C, c->H, c->W}, x, 1};
        for (int m = 0; m < 3; m++) {
            ictx t = {c, m == 0 ? CLT_INTERP_NEAREST : CLT_INTERP_BILINEAR, m == 2};
            gradcheck(dev, call_interp, &t, 1, &in);
        }
        free(x);
    }
}

/* ---- 1-D pooling ---------------------------------------------------------------------------- */

typedef struct p1case {
    int64_t N, C, L, k, s, p, d;
    int ceil, cip;
} p1case;

static const p1case P1[] = {
    {2, 3, 11, 3, 2, 1, 1, 0, 1}, {0, 3, 9, 2, 0, 0, 1, 0, 1}, {2, 2, 10, 3, 2, 1, 2, 1, 0},
    {1, 4, 7, 4, 3, 2, 1, 1, 1},  {1, 1, 1, 1, 1, 0, 1, 0, 1},
};

/* The output length; average pooling has no dilation. */
static int64_t p1_out(const p1case *c, int max)
{
    int64_t s = c->s ? c->s : c->k, d = max ? c->d : 1;
    int64_t num = c->L + 2 * c->p - d * (c->k - 1) - 1 + (c->ceil ? s - 1 : 0);
    int64_t o = num / s + 1;
    if (c->ceil && (o - 1) * s >= c->L + c->p)
        o--;
    return o;
}

/* max: the first maximum of each window; avg: the window's sum over its
 * size within the padded input (cip) or over the input elements it
 * covers, the window clipped at the padded end. */
static void ref_pool1d(const double *x, const p1case *c, int max, double *y)
{
    int64_t Lo = p1_out(c, max), s = c->s ? c->s : c->k, P = (c->N ? c->N : 1) * c->C;
    for (int64_t q = 0; q < P; q++)
        for (int64_t o = 0; o < Lo; o++) {
            int64_t start = o * s - c->p;
            double acc = max ? -INFINITY : 0;
            int64_t cnt = 0;
            for (int64_t j = 0; j < c->k; j++) {
                int64_t i = start + j * (max ? c->d : 1);
                if (i < 0 || i >= c->L)
                    continue;
                double v = x[q * c->L + i];
                acc = max ? (v > acc ? v : acc) : acc + v;
                cnt++;
            }
            if (!max) {
                int64_t end = start + c->k < c->L + c->p ? start + c->k : c->L + c->p;
                acc /= c->cip ? (double)(end - start) : (double)cnt;
            }
            y[q * Lo + o] = acc;
        }
}

Test(conv_more, pool1d_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t k = 0; k < sizeof P1 / sizeof P1[0]; k++) {
        const p1case *c = &P1[k];
        int64_t xs[3] = {c->N, c->C, c->L};
        int nd = c->N ? 3 : 2;
        const int64_t *xsh = c->N ? xs : xs + 1;
        size_t nx = numel_of(nd, xsh);
        double *x = spread_doubles(nx, 101 + (unsigned)k), *want = malloc(nx * 4 * sizeof *want);
        for (int d = 0; d < 2; d++) {
            clt_tensor *tx = tensor_of(dev, d ? CLT_FLOAT64 : CLT_FLOAT32, nd, xsh, x), *y;
            double *xr = read_as_f64(tx);
            for (int max = 0; max < 2; max++) {
                int64_t Lo = p1_out(c, max), ys[3] = {c->N, c->C, Lo};
                size_t ny = nx / (size_t)c->L * (size_t)Lo;
                ref_pool1d(xr, c, max, want);
                if (max)
                    CHECK(clt_max_pool1d(tx, c->k, c->s, c->p, c->d, c->ceil, &y));
                else
                    CHECK(clt_avg_pool1d(tx, c->k, c->s, c->p, c->ceil, c->cip, &y));
                assert_shape(y, nd, c->N ? ys : ys + 1);
                assert_tensor_close(y, want, ny, max ? 0 : d ? 1e-14 : 1e-6, max ? 0 : 1e-7,
                             max ? "max_pool1d" : "avg_pool1d");
                clt_tensor_free(y);
            }
            free(xr);
            clt_tensor_free(tx);
        }
        free(x);
        free(want);
    }
}

static clt_status call_pool1d(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const p1case *c = ctx;
    if (c->d == 0) /* average (dilation 0 marks it here) */
        return clt_avg_pool1d(in[0], c->k, c->s, c->p, c->ceil, c->cip, out);
    return clt_max_pool1d(in[0], c->k, c->s, c->p, c->d, c->ceil, out);
}

Test(conv_more, pool1d_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const p1case gc[] = {
        {2, 2, 9, 3, 2, 1, 1, 0, 1}, {1, 2, 8, 2, 1, 0, 2, 1, 1},
        {2, 2, 9, 3, 2, 1, 0, 1, 0}, {0, 3, 7, 4, 3, 2, 0, 1, 1},
    };
    for (size_t k = 0; k < sizeof gc / sizeof gc[0]; k++) {
        const p1case *c = &gc[k];
        double *x = spread_doubles((size_t)((c->N ? c->N : 1) * c->C * c->L), 111 + (unsigned)k);
        gc_in in = {3, {c->N, c->C, c->L}, x, 1};
        if (!c->N)
            in = (gc_in){2, {c->C, c->L}, x, 1};
        gradcheck(dev, call_pool1d, c, 1, &in);
        free(x);
    }
}

Test(conv_more, pool1d_layers_and_errors)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(2 * 3 * 10, 121);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 3, 10}, xv), *y, *y2;
    clt_module *m, *bad = (clt_module *)0x1;
    clt_pool1d_opts o = {3, 1, 1, 1, 1};
    CHECK(clt_max_pool1d_layer(3, &o, &m));
    cr_assert_str_eq(clt_module_name(m), "MaxPool1d");
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_max_pool1d(x, 3, 3, 1, 1, 1, &y2));
    assert_shape(y, 3, (int64_t[]){2, 3, 4});
    float *a = read_f32(y), *b = read_f32(y2);
    cr_assert(memcmp(a, b, 24 * sizeof(float)) == 0);
    free(a);
    free(b);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_module_free(m);
    CHECK(clt_avg_pool1d_layer(4, NULL, &m));
    cr_assert_str_eq(clt_module_name(m), "AvgPool1d");
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_avg_pool1d(x, 4, 0, 0, 0, 1, &y2));
    assert_shape(y, 3, (int64_t[]){2, 3, 2});
    a = read_f32(y);
    b = read_f32(y2);
    cr_assert(memcmp(a, b, 12 * sizeof(float)) == 0);
    free(a);
    free(b);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_module_free(m);
    assert_error(clt_max_pool1d_layer(0, NULL, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "kernel size should be greater than zero, but got 0");
    cr_assert_null(bad);
    clt_tensor *x4;
    CHECK(clt_unsqueeze(x, 0, &x4));
    y = (clt_tensor *)0x1;
    assert_error(clt_max_pool1d(x4, 2, 0, 0, 1, 0, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2D or 3D input tensor, but got [1, 2, 3, 10]");
    cr_assert_null(y);
    names_only("clt_max_pool1d");
    assert_error(clt_avg_pool1d(x, 2, 0, 2, 0, 1, &y), CLT_ERR_INVALID_ARGUMENT,
                 "pad should be smaller than or equal to half of kernel size");
    names_only("clt_avg_pool1d");
    cr_assert_null(y);
    free(xv);
    clt_tensor_free(x);
    clt_tensor_free(x4);
}

/* ---- errors --------------------------------------------------------------------------------- */

Test(conv_more, errors_name_what_is_wrong)
{
    clt_device *dev = get_device("cpu");
    double v[72] = {0}; /* the largest below, w4 */
    clt_tensor *x3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 4, 8}, v);
    clt_tensor *w3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){3, 4, 3}, v);
    clt_tensor *x4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 4, 3, 3}, v);
    clt_tensor *w4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){4, 2, 3, 3}, v);
    clt_tensor *d4 = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){1, 4, 3, 3}, v);
    clt_tensor *i4 = tensor_of(dev, CLT_INT64, 4, (int64_t[]){1, 4, 3, 3}, v);
    clt_tensor *b5 = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){5}, v);
    clt_tensor *out = (clt_tensor *)0x1;
    /* conv1d */
    assert_error(clt_conv1d(x4, w3, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of "
                 "size: [1, 4, 3, 3]");
    cr_assert_null(out);
    names_only("clt_conv1d");
    out = (clt_tensor *)0x1;
    assert_error(clt_conv1d(x3, w4, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected weight to be 3-dimensional");
    cr_assert_null(out);
    assert_error(clt_conv1d(x3, w3, NULL, &(clt_conv1d_opts){1, 0, 1, 2}, &out),
                 CLT_ERR_SHAPE_MISMATCH,
                 "Given groups=2, expected weight to be divisible by 2 at dimension 0");
    clt_tensor *w3c = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, 3}, v);
    assert_error(clt_conv1d(x3, w3c, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected input[2, 4, 1, 8] to have 2 channels, but got 4 channels instead");
    assert_error(clt_conv1d(x3, w3, NULL, &(clt_conv1d_opts){0, 0, 1, 1}, &out),
                 CLT_ERR_INVALID_ARGUMENT, "non-positive stride");
    assert_error(clt_conv1d(x3, w3, b5, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected bias to be 1-dimensional with 3 elements");
    assert_error(clt_conv1d(NULL, w3, NULL, NULL, &out), CLT_ERR_NULL_ARGUMENT, "'input'");
    /* conv_transpose2d */
    out = (clt_tensor *)0x1;
    assert_error(clt_conv_transpose2d(x3, w4, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH, NULL);
    cr_assert_null(out);
    clt_tensor *xs = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 9}, v);
    assert_error(clt_conv_transpose2d(xs, w4, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d");
    names_only("clt_conv_transpose2d");
    clt_tensor *w4b = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){3, 2, 3, 3}, v);
    assert_error(clt_conv_transpose2d(x4, w4b, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 3, 3] "
                 "to have 3 channels, but got 4 channels instead");
    clt_conv_transpose2d_opts o = CLT_CONV_TRANSPOSE2D_DEFAULTS;
    o.groups = 3;
    assert_error(clt_conv_transpose2d(x4, w4, NULL, &o, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Given groups=3, expected weight to be divisible by 3 at dimension 0");
    assert_error(clt_conv_transpose2d(x4, w4, b5, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected bias to be 1-dimensional with 2 elements, but got bias of size [5]");
    o = (clt_conv_transpose2d_opts)CLT_CONV_TRANSPOSE2D_DEFAULTS;
    o.output_padding[1] = 1;
    assert_error(clt_conv_transpose2d(x4, w4, NULL, &o, &out), CLT_ERR_INVALID_ARGUMENT,
                 "output padding must be smaller than either stride or dilation, but got "
                 "output_padding_height: 0 output_padding_width: 1 stride_height: 1 "
                 "stride_width: 1 dilation_height: 1 dilation_width: 1");
    o = (clt_conv_transpose2d_opts)CLT_CONV_TRANSPOSE2D_DEFAULTS;
    o.padding[0] = 3;
    assert_error(clt_conv_transpose2d(x4, w4, NULL, &o, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Given input size per channel: (3 x 3). Calculated output size per channel: "
                 "(-1 x 5). Output size is too small");
    assert_error(clt_conv_transpose2d(d4, w4, NULL, NULL, &out), CLT_ERR_DTYPE_MISMATCH,
                 "Input type (float64), weight type (float32)");
    assert_error(clt_conv_transpose2d(i4, w4, NULL, NULL, &out), CLT_ERR_DTYPE_UNSUPPORTED,
                 NULL);
    cr_assert_null(out);
    /* interpolate */
    out = (clt_tensor *)0x1;
    int64_t sz[2] = {4, 4};
    double sf[2] = {2, 2};
    assert_error(clt_interpolate(x4, sz, sf, CLT_INTERP_NEAREST, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "only one of size or scale_factor should be defined");
    cr_assert_null(out);
    names_only("clt_interpolate");
    assert_error(clt_interpolate(x4, NULL, NULL, CLT_INTERP_NEAREST, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "either size or scale_factor should be defined");
    assert_error(clt_interpolate(x4, sz, NULL, CLT_INTERP_NEAREST, 1, &out),
                 CLT_ERR_INVALID_ARGUMENT,
                 "align_corners option can only be set with the interpolating modes");
    assert_error(clt_interpolate(x4, sz, NULL, (clt_interp_mode)7, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "unknown mode 7");
    assert_error(clt_interpolate(x3, sz, NULL, CLT_INTERP_BILINEAR, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Got 3D input, but bilinear mode needs 4D input");
    assert_error(clt_interpolate(i4, sz, NULL, CLT_INTERP_NEAREST, 0, &out),
                 CLT_ERR_DTYPE_UNSUPPORTED, NULL);
    assert_error(clt_interpolate(x4, (int64_t[]){0, 3}, NULL, CLT_INTERP_NEAREST, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH,
                 "Input and output sizes should be greater than 0, but got input (H: 3, W: 3) "
                 "output (H: 0, W: 3)");
    assert_error(clt_interpolate(x4, NULL, (double[]){0.2, 1}, CLT_INTERP_BILINEAR, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "output (H: 0, W: 3)");
    assert_error(clt_interpolate(x4, NULL, (double[]){NAN, 1}, CLT_INTERP_BILINEAR, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "scale_factor must be finite and positive");
    assert_error(clt_interpolate(x4, NULL, (double[]){1e300, 1}, CLT_INTERP_NEAREST, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "passes int64");
    cr_assert_null(out);
    clt_tensor *ts[] = {x3, w3, w3c, x4, w4, d4, i4, b5, xs, w4b};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* ---- layers --------------------------------------------------------------------------------- */

Test(conv_more, conv1d_layer)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(4, &gen));
    clt_conv1d_opts o = {2, 1, 1, 2};
    clt_module *m, *m2, *bad = (clt_module *)0x1;
    CHECK(clt_conv1d_layer(dev, 4, 6, 3, &o, 1, gen, &m));
    cr_assert_str_eq(clt_module_name(m), "Conv1d");
    clt_named_tensor *p;
    size_t np;
    CHECK(clt_module_named_parameters(m, &p, &np));
    cr_assert_eq(np, 2);
    cr_assert_str_eq(p[0].name, "weight");
    cr_assert_str_eq(p[1].name, "bias");
    assert_shape(p[0].tensor, 3, (int64_t[]){6, 2, 3});
    assert_shape(p[1].tensor, 1, (int64_t[]){6});
    assert_uniform_within(p[0].tensor, 1.0 / sqrt(2.0 * 3), "weight");
    assert_uniform_within(p[1].tensor, 1.0 / sqrt(2.0 * 3), "bias");
    double *xv = spread_doubles(2 * 4 * 9, 81);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 4, 9}, xv), *y, *y2;
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_conv1d(x, p[0].tensor, p[1].tensor, &o, &y2));
    assert_shape(y, 3, (int64_t[]){2, 6, 5});
    float *a = read_f32(y), *b = read_f32(y2);
    cr_assert(memcmp(a, b, 60 * sizeof(float)) == 0);
    /* float64 after clt_module_to_dtype, and a checkpoint round trip */
    CHECK(clt_conv1d_layer(dev, 4, 6, 3, &o, 1, gen, &m2));
    CHECK(clt_module_to_dtype(m2, CLT_FLOAT64));
    assert_state_roundtrip(m, m2);
    clt_tensor *xd, *yd;
    CHECK(clt_to_dtype(x, CLT_FLOAT64, &xd));
    CHECK(clt_module_forward(m2, xd, &yd));
    cr_assert_eq(clt_tensor_dtype(yd), CLT_FLOAT64);
    double af[60];
    for (int i = 0; i < 60; i++)
        af[i] = a[i];
    assert_tensor_close(yd, af, 60, 1e-5, 1e-6, "float64 layer");
    cr_assert_eq(clt_conv1d_layer(dev, 4, 6, 0, NULL, 1, gen, &bad), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    cr_assert_eq(clt_conv1d_layer(dev, 3, 6, 3, &o, 1, gen, &bad), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "in_channels must be divisible by groups"));
    free(xv);
    free(a);
    free(b);
    clt_free(p);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_tensor_free(xd);
    clt_tensor_free(yd);
    clt_module_free(m);
    clt_module_free(m2);
    clt_generator_free(gen);
}

Test(conv_more, conv_transpose2d_layer)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    clt_conv_transpose2d_opts o = {{2, 2}, {1, 0}, {1, 0}, 2, {1, 1}};
    clt_module *m, *m2, *bad = (clt_module *)0x1;
    CHECK(clt_conv_transpose2d_layer(dev, 4, 6, 3, 2, &o, 1, gen, &m));
    cr_assert_str_eq(clt_module_name(m), "ConvTranspose2d");
    cr_assert_eq(clt_module_num_parameters(m), 4 * 3 * 3 * 2 + 6);
    clt_named_tensor *p;
    size_t np;
    CHECK(clt_module_named_parameters(m, &p, &np));
    cr_assert_eq(np, 2);
    cr_assert_str_eq(p[0].name, "weight");
    cr_assert_str_eq(p[1].name, "bias");
    /* PyTorch's layout [in, out / groups, kH, kW], its bias [out], both
     * bounded by 1 / sqrt(weight.size(1) kH kW) */
    assert_shape(p[0].tensor, 4, (int64_t[]){4, 3, 3, 2});
    assert_shape(p[1].tensor, 1, (int64_t[]){6});
    double bound = 1.0 / sqrt(3.0 * 3 * 2);
    assert_uniform_within(p[0].tensor, bound, "weight");
    assert_uniform_within(p[1].tensor, bound, "bias");
    double *xv = spread_doubles(2 * 4 * 3 * 5, 91);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 4, 3, 5}, xv), *y, *y2;
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_conv_transpose2d(x, p[0].tensor, p[1].tensor, &o, &y2));
    /* (3 - 1) 2 - 2 + 2 + 1 + 1 = 6 rows, (5 - 1) 2 + 1 + 1 = 10 columns */
    assert_shape(y, 4, (int64_t[]){2, 6, 6, 10});
    float *a = read_f32(y), *b = read_f32(y2);
    cr_assert(memcmp(a, b, 720 * sizeof(float)) == 0);
    /* gradients reach the parameters */
    clt_tensor *l, *gw;
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(p[0].tensor, &gw));
    cr_assert_not_null(gw);
    assert_shape(gw, 4, (int64_t[]){4, 3, 3, 2});
    /* a second device, float64, and a checkpoint round trip */
    CHECK(clt_conv_transpose2d_layer(dev, 4, 6, 3, 2, &o, 1, gen, &m2));
    clt_device *dev2 = NULL; /* another device when there is one (no skip) */
    size_t ndev = 0;
    CHECK(clt_device_count(&ndev));
    for (size_t i = 0; i < ndev && !dev2; i++) {
        CHECK(clt_device_at(i, &dev2));
        dev2 = dev2 != dev ? dev2 : NULL;
    }
    if (dev2)
        CHECK(clt_module_to(m2, dev2));
    CHECK(clt_module_to_dtype(m2, CLT_FLOAT64));
    assert_state_roundtrip(m, m2);
    clt_tensor *xd, *yd;
    CHECK(clt_to(x, dev2 ? dev2 : dev, &xd));
    clt_tensor *xd64;
    CHECK(clt_to_dtype(xd, CLT_FLOAT64, &xd64));
    CHECK(clt_module_forward(m2, xd64, &yd));
    double *af = malloc(720 * sizeof *af);
    for (int i = 0; i < 720; i++)
        af[i] = a[i];
    assert_tensor_close(yd, af, 720, 1e-5, 1e-6, "float64 layer");
    /* bad settings */
    cr_assert_eq(clt_conv_transpose2d_layer(dev, 4, 5, 3, 3, &o, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "out_channels must be divisible by groups"));
    cr_assert_null(bad);
    clt_conv_transpose2d_opts op = {{1, 1}, {0, 0}, {1, 1}, 1, {1, 1}};
    cr_assert_eq(clt_conv_transpose2d_layer(dev, 4, 6, 3, 3, &op, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "output padding must be smaller than either stride or "
                                       "dilation"));
    cr_assert_null(bad);
    free(xv);
    free(a);
    free(b);
    free(af);
    clt_free(p);
    clt_tensor *ts[] = {x, y, y2, l, gw, xd, xd64, yd};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
    clt_module_free(m);
    clt_module_free(m2);
    clt_generator_free(gen);
}

Test(conv_more, upsample_layer)
{
    clt_device *dev = get_device("cpu");
    clt_module *m, *bad = (clt_module *)0x1;
    double *xv = spread_doubles(2 * 3 * 4 * 5, 95);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, 4, 5}, xv), *y, *y2;
    /* by scale factor, bilinear with align_corners */
    CHECK(clt_upsample_layer(NULL, (double[]){2, 1.5}, CLT_INTERP_BILINEAR, 1, &m));
    cr_assert_str_eq(clt_module_name(m), "Upsample");
    cr_assert_eq(clt_module_num_parameters(m), 0);
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_interpolate(x, NULL, (double[]){2, 1.5}, CLT_INTERP_BILINEAR, 1, &y2));
    assert_shape(y, 4, (int64_t[]){2, 3, 8, 7});
    float *a = read_f32(y), *b = read_f32(y2);
    cr_assert(memcmp(a, b, 2 * 3 * 8 * 7 * sizeof(float)) == 0);
    free(a);
    free(b);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_module_free(m);
    /* by size, nearest; a module without tensors follows the input's dtype */
    CHECK(clt_upsample_layer((int64_t[]){3, 11}, NULL, CLT_INTERP_NEAREST, 0, &m));
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    clt_tensor *xd;
    CHECK(clt_to_dtype(x, CLT_FLOAT64, &xd));
    CHECK(clt_module_forward(m, xd, &y));
    assert_shape(y, 4, (int64_t[]){2, 3, 3, 11});
    cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT64);
    clt_tensor_free(y);
    clt_tensor_free(xd);
    /* a 3-D input is refused at the forward, naming the layer */
    clt_tensor *x3;
    CHECK(clt_reshape(x, 3, (int64_t[]){6, 4, 5}, &x3));
    y = (clt_tensor *)0x1;
    assert_error(clt_module_forward(m, x3, &y), CLT_ERR_SHAPE_MISMATCH, "Upsample: Got 3D input");
    cr_assert_null(y);
    clt_tensor_free(x3);
    clt_module_free(m);
    /* settings checked at construction */
    assert_error(clt_upsample_layer(NULL, NULL, CLT_INTERP_NEAREST, 0, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "either size or scale_factor should be defined");
    cr_assert_null(bad);
    assert_error(clt_upsample_layer((int64_t[]){2, 2}, NULL, CLT_INTERP_NEAREST, 1, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "align_corners option can only be set");
    assert_error(clt_upsample_layer((int64_t[]){0, 2}, NULL, CLT_INTERP_BILINEAR, 0, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "output sizes should be greater than 0");
    assert_error(clt_upsample_layer(NULL, (double[]){-1, 2}, CLT_INTERP_BILINEAR, 0, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "scale_factor must be finite and positive");
    cr_assert_null(bad);
    free(xv);
    clt_tensor_free(x);
}
