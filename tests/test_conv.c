/* test_conv.c: conv2d, max_pool2d, avg_pool2d and adaptive_avg_pool2d
 * against direct host loops in double (strides, padding, dilation, groups,
 * bias, unbatched and non-contiguous inputs, ties, NaN, count_include_pad,
 * ceil_mode, adaptive windows that overlap or repeat), their gradients
 * against finite differences (gradcheck.h), float32 on the CPU GEMM path,
 * errors, bit-identical results on two devices, and the layers (Conv2d,
 * MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, Identity) in small models. */
#include <stdio.h>

#include "gradcheck.h"

/* src/ops/conv.h: the most bytes of patches unfolded at once */
extern size_t clt__conv2d_cols_limit;

/* ---- host references ----------------------------------------------------------------- */

typedef struct cshape {
    int64_t N, C, H, W, O, kh, kw;
} cshape;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

static void ref_conv(const double *x, const double *w, const double *b, cshape s,
                     const clt_conv2d_opts *o, double *y)
{
    int64_t Ho = out_size(s.H, s.kh, o->stride[0], o->padding[0], o->dilation[0]);
    int64_t Wo = out_size(s.W, s.kw, o->stride[1], o->padding[1], o->dilation[1]);
    int64_t Cg = s.C / o->groups, Og = s.O / o->groups;
    for (int64_t n = 0; n < s.N; n++)
        for (int64_t oc = 0; oc < s.O; oc++)
            for (int64_t oh = 0; oh < Ho; oh++)
                for (int64_t ow = 0; ow < Wo; ow++) {
                    double acc = b ? b[oc] : 0.0;
                    int64_t g = oc / Og;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < s.kh; i++)
                            for (int64_t j = 0; j < s.kw; j++) {
                                int64_t ih = oh * o->stride[0] - o->padding[0] + i * o->dilation[0];
                                int64_t iw = ow * o->stride[1] - o->padding[1] + j * o->dilation[1];
                                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W)
                                    continue;
                                acc += x[((n * s.C + g * Cg + c) * s.H + ih) * s.W + iw] *
                                       w[((oc * Cg + c) * s.kh + i) * s.kw + j];
                            }
                    y[((n * s.O + oc) * Ho + oh) * Wo + ow] = acc;
                }
}

static int64_t pool_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t o = num / s + 1;
    if (ceil_mode && (o - 1) * s >= in + p)
        o--;
    return o;
}

typedef struct pset {
    int64_t k[2], s[2], p[2], d[2];
    int ceil_mode, cip;
} pset;

/* Max over each window: first maximum in row-major order, NaN wins; the
 * index of the winner in *arg (h * W + w). */
static void ref_max_pool(const double *x, int64_t NC, int64_t H, int64_t W, const pset *q,
                         double *y, int64_t *arg, int64_t *Ho_, int64_t *Wo_)
{
    int64_t Ho = pool_size(H, q->k[0], q->p[0], q->s[0], q->d[0], q->ceil_mode);
    int64_t Wo = pool_size(W, q->k[1], q->p[1], q->s[1], q->d[1], q->ceil_mode);
    for (int64_t pl = 0; pl < NC; pl++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                double m = -INFINITY;
                int64_t best = -1;
                for (int64_t i = 0; i < q->k[0]; i++)
                    for (int64_t j = 0; j < q->k[1]; j++) {
                        int64_t ih = oh * q->s[0] - q->p[0] + i * q->d[0];
                        int64_t iw = ow * q->s[1] - q->p[1] + j * q->d[1];
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                            continue;
                        double v = x[(pl * H + ih) * W + iw];
                        if (best < 0)
                            best = ih * W + iw; /* the default, as for all -inf */
                        if (v > m || isnan(v)) {
                            m = v;
                            best = ih * W + iw;
                        }
                    }
                y[(pl * Ho + oh) * Wo + ow] = m;
                if (arg)
                    arg[(pl * Ho + oh) * Wo + ow] = best;
            }
    *Ho_ = Ho;
    *Wo_ = Wo;
}

static void ref_avg_pool(const double *x, int64_t NC, int64_t H, int64_t W, const pset *q,
                         double *y, int64_t *Ho_, int64_t *Wo_)
{
    int64_t Ho = pool_size(H, q->k[0], q->p[0], q->s[0], 1, q->ceil_mode);
    int64_t Wo = pool_size(W, q->k[1], q->p[1], q->s[1], 1, q->ceil_mode);
    for (int64_t pl = 0; pl < NC; pl++)
        for (int64_t oh = 0; oh < Ho; oh++)
            for (int64_t ow = 0; ow < Wo; ow++) {
                int64_t h0 = oh * q->s[0] - q->p[0], w0 = ow * q->s[1] - q->p[1];
                int64_t h1 = h0 + q->k[0], w1 = w0 + q->k[1];
                if (h1 > H + q->p[0])
                    h1 = H + q->p[0];
                if (w1 > W + q->p[1])
                    w1 = W + q->p[1];
                int64_t padded = (h1 - h0) * (w1 - w0), count = 0;
                double s = 0;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++)
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                            s += x[(pl * H + ih) * W + iw];
                            count++;
                        }
                y[(pl * Ho + oh) * Wo + ow] = count ? s / (double)(q->cip ? padded : count) : 0;
            }
    *Ho_ = Ho;
    *Wo_ = Wo;
}

static double *random_doubles(size_t n, unsigned seed)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((seed >> 8) % 20001) / 10000.0 - 1.0;
    }
    return v;
}

static double *read_f64(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static clt_tensor *from_f64(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape,
                            const double *v)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    clt_tensor *t = NULL;
    if (dt == CLT_FLOAT64) {
        CHECK(clt_tensor_from_host(dev, dt, ndim, shape, v, &t));
    } else {
        float *f = malloc((n ? n : 1) * sizeof *f);
        for (size_t i = 0; i < n; i++)
            f[i] = (float)v[i];
        CHECK(clt_tensor_from_host(dev, dt, ndim, shape, f, &t));
        free(f);
    }
    return t;
}

/* ---- conv2d forward ------------------------------------------------------------------ */

typedef struct ccase {
    cshape s;
    clt_conv2d_opts o;
    int bias;
} ccase;

static const ccase CASES[] = {
    {{2, 3, 7, 6, 4, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}, 1},
    {{2, 3, 7, 6, 4, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, 0},
    {{1, 2, 9, 8, 3, 3, 2}, {{2, 3}, {1, 2}, {1, 1}, 1}, 1},
    {{2, 2, 9, 9, 2, 3, 3}, {{1, 2}, {2, 1}, {2, 3}, 1}, 1},
    {{2, 4, 6, 5, 6, 3, 1}, {{1, 1}, {1, 0}, {1, 1}, 2}, 1},
    {{1, 6, 5, 5, 6, 2, 2}, {{2, 1}, {1, 1}, {1, 2}, 3}, 0},
    {{3, 1, 8, 8, 5, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}, 1},
    {{1, 2, 4, 4, 3, 4, 4}, {{1, 1}, {0, 0}, {1, 1}, 1}, 1},
    /* padding 2 around a 3x5 image: patch rows wholly in the padding */
    {{2, 2, 3, 5, 3, 3, 3}, {{1, 1}, {2, 2}, {1, 1}, 1}, 1},
};

static void check_conv(clt_device *dev, clt_dtype dt, const ccase *c, double rtol, double atol)
{
    cshape s = c->s;
    int64_t xs[4] = {s.N, s.C, s.H, s.W}, ws[4] = {s.O, s.C / c->o.groups, s.kh, s.kw};
    size_t nx = (size_t)(s.N * s.C * s.H * s.W), nw = (size_t)(ws[0] * ws[1] * s.kh * s.kw);
    double *x = random_doubles(nx, 11), *w = random_doubles(nw, 12);
    double *b = random_doubles((size_t)s.O, 13);
    int64_t Ho = out_size(s.H, s.kh, c->o.stride[0], c->o.padding[0], c->o.dilation[0]);
    int64_t Wo = out_size(s.W, s.kw, c->o.stride[1], c->o.padding[1], c->o.dilation[1]);
    size_t ny = (size_t)(s.N * s.O * Ho * Wo);
    double *want = malloc(ny * sizeof *want);
    ref_conv(x, w, c->bias ? b : NULL, s, &c->o, want);
    clt_tensor *tx = from_f64(dev, dt, 4, xs, x), *tw = from_f64(dev, dt, 4, ws, w);
    clt_tensor *tb = c->bias ? from_f64(dev, dt, 1, &s.O, b) : NULL, *y = NULL;
    CHECK(clt_conv2d(tx, tw, tb, &c->o, &y));
    cr_assert_eq(clt_tensor_ndim(y), 4);
    const int64_t *ys = clt_tensor_shape(y);
    cr_assert(ys[0] == s.N && ys[1] == s.O && ys[2] == Ho && ys[3] == Wo,
              "shape [%lld, %lld, %lld, %lld]", (long long)ys[0], (long long)ys[1],
              (long long)ys[2], (long long)ys[3]);
    double *got;
    if (dt == CLT_FLOAT64) {
        got = read_f64(y);
    } else {
        float *f = read_f32(y);
        got = malloc(ny * sizeof *got);
        for (size_t i = 0; i < ny; i++)
            got[i] = f[i];
        free(f);
    }
    for (size_t i = 0; i < ny; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol), "element %zu: got %.12g, want %.12g",
                  i, got[i], want[i]);
    free(got);
    free(want);
    free(x);
    free(w);
    free(b);
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    clt_tensor_free(y);
}

Test(conv, forward_float64_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        check_conv(dev, CLT_FLOAT64, &CASES[i], 1e-12, 1e-12);
}

Test(conv, forward_float32_cpu_gemm_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        check_conv(dev, CLT_FLOAT32, &CASES[i], 1e-5, 1e-5);
    /* a digits-sized layer, large enough for the packed GEMM */
    ccase big = {{64, 8, 8, 8, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, 1};
    check_conv(dev, CLT_FLOAT32, &big, 1e-5, 1e-5);
}

Test(conv, default_options_and_unbatched_input)
{
    clt_device *dev = get_device("cpu");
    cshape s = {1, 2, 5, 4, 3, 2, 2};
    clt_conv2d_opts o = CLT_CONV2D_DEFAULTS;
    double *x = random_doubles(40, 5), *w = random_doubles(24, 6), want[3 * 4 * 3];
    ref_conv(x, w, NULL, s, &o, want);
    clt_tensor *tx = from_f64(dev, CLT_FLOAT64, 3, (int64_t[]){2, 5, 4}, x);
    clt_tensor *tw = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){3, 2, 2, 2}, w), *y = NULL;
    CHECK(clt_conv2d(tx, tw, NULL, NULL, &y));
    cr_assert_eq(clt_tensor_ndim(y), 3);
    cr_assert_eq(clt_tensor_shape(y)[0], 3);
    cr_assert_eq(clt_tensor_shape(y)[1], 4);
    cr_assert_eq(clt_tensor_shape(y)[2], 3);
    double *got = read_f64(y);
    for (int i = 0; i < 36; i++)
        cr_assert(close_enough(got[i], want[i], 1e-12, 1e-12), "%d: %g vs %g", i, got[i], want[i]);
    free(got);
    free(x);
    free(w);
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(y);
}

Test(conv, non_contiguous_input_and_weight)
{
    clt_device *dev = get_device("cpu");
    cshape s = {2, 3, 5, 6, 4, 3, 2};
    clt_conv2d_opts o = {{1, 2}, {1, 1}, {1, 1}, 1};
    size_t nx = 2 * 3 * 5 * 6;
    /* x stored as [N, C, W, H] and read through a transpose */
    double *xt = random_doubles(nx, 21), *x = malloc(nx * sizeof *x);
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 5; h++)
                for (int w = 0; w < 6; w++)
                    x[((n * 3 + c) * 5 + h) * 6 + w] = xt[((n * 3 + c) * 6 + w) * 5 + h];
    /* the weight as a slice of a larger buffer: every other output channel */
    double *w2 = random_doubles(8 * 3 * 3 * 2, 22), *w = malloc(4 * 18 * sizeof *w);
    for (int oc = 0; oc < 4; oc++)
        memcpy(w + oc * 18, w2 + 2 * oc * 18, 18 * sizeof *w);
    double *b = random_doubles(4, 23), want[2 * 4 * 5 * 4];
    ref_conv(x, w, b, s, &o, want);
    clt_tensor *raw = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 6, 5}, xt), *tx = NULL;
    CHECK(clt_transpose(raw, 2, 3, &tx));
    clt_tensor *wraw = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){8, 3, 3, 2}, w2), *tw = NULL;
    CHECK(clt_slice(wraw, 0, 0, 8, 2, &tw));
    clt_tensor *tb = from_f64(dev, CLT_FLOAT64, 1, (int64_t[]){4}, b), *y = NULL;
    CHECK(clt_conv2d(tx, tw, tb, &o, &y));
    double *got = read_f64(y);
    cr_assert_eq(clt_tensor_numel(y), 2 * 4 * 5 * 4);
    for (int i = 0; i < 2 * 4 * 5 * 4; i++)
        cr_assert(close_enough(got[i], want[i], 1e-12, 1e-12), "%d: %g vs %g", i, got[i], want[i]);
    free(got);
    free(xt);
    free(x);
    free(w2);
    free(w);
    free(b);
    clt_tensor_free(raw);
    clt_tensor_free(tx);
    clt_tensor_free(wraw);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    clt_tensor_free(y);
}

Test(conv, empty_batch)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *w, *b, *y, *l, *p;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){0, 2, 5, 5}, &x));
    CHECK(clt_ones(dev, CLT_FLOAT32, 4, (int64_t[]){3, 2, 3, 3}, &w));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &b));
    CHECK(clt_set_requires_grad(w, 1));
    CHECK(clt_set_requires_grad(b, 1));
    CHECK(clt_conv2d(x, w, b, NULL, &y));
    cr_assert_eq(clt_tensor_numel(y), 0);
    cr_assert_eq(clt_tensor_shape(y)[1], 3);
    int64_t k2[2] = {2, 2};
    CHECK(clt_max_pool2d(y, k2, NULL, NULL, NULL, 0, &p));
    cr_assert_eq(clt_tensor_numel(p), 0);
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    float *gw = read_grad_f32(w);
    for (int i = 0; i < 54; i++)
        cr_assert_eq(gw[i], 0.0f);
    free(gw);
    float *gb = read_grad_f32(b);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(gb[i], 0.0f);
    free(gb);
    clt_tensor *all[] = {x, w, b, y, l, p};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* ---- pooling forward ------------------------------------------------------------------ */

static clt_tensor *run_pool(clt_tensor *x, const pset *q, int max)
{
    clt_tensor *y = NULL;
    if (max)
        CHECK(clt_max_pool2d(x, q->k, q->s, q->p, q->d, q->ceil_mode, &y));
    else
        CHECK(clt_avg_pool2d(x, q->k, q->s, q->p, q->ceil_mode, q->cip, &y));
    return y;
}

static void check_pool(clt_device *dev, const double *x, int64_t N, int64_t C, int64_t H,
                       int64_t W, const pset *q, int max)
{
    int64_t Ho, Wo;
    size_t ncap = (size_t)(N * C * (H + 2) * (W + 2) * 4);
    double *want = malloc(ncap * sizeof *want);
    if (max)
        ref_max_pool(x, N * C, H, W, q, want, NULL, &Ho, &Wo);
    else
        ref_avg_pool(x, N * C, H, W, q, want, &Ho, &Wo);
    clt_tensor *tx = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){N, C, H, W}, x);
    clt_tensor *y = run_pool(tx, q, max);
    const int64_t *ys = clt_tensor_shape(y);
    cr_assert(ys[0] == N && ys[1] == C && ys[2] == Ho && ys[3] == Wo,
              "pool shape [%lld, %lld, %lld, %lld], want %lld x %lld", (long long)ys[0],
              (long long)ys[1], (long long)ys[2], (long long)ys[3], (long long)Ho, (long long)Wo);
    double *got = read_f64(y);
    for (int64_t i = 0; i < N * C * Ho * Wo; i++)
        cr_assert(close_enough(got[i], want[i], 1e-14, 1e-14),
                  "%s pool k %lldx%lld s %lld,%lld p %lld,%lld d %lld,%lld ceil %d cip %d: "
                  "element %lld: got %g, want %g",
                  max ? "max" : "avg", (long long)q->k[0], (long long)q->k[1],
                  (long long)q->s[0], (long long)q->s[1], (long long)q->p[0], (long long)q->p[1],
                  (long long)q->d[0], (long long)q->d[1], q->ceil_mode, q->cip, (long long)i,
                  got[i], want[i]);
    free(got);
    free(want);
    clt_tensor_free(tx);
    clt_tensor_free(y);
}

static const pset POOLS[] = {
    {{2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 1},
    {{2, 2}, {2, 2}, {0, 0}, {1, 1}, 1, 1}, /* a last window cut by the edge */
    {{3, 3}, {1, 1}, {1, 1}, {1, 1}, 0, 1},
    {{3, 3}, {1, 1}, {1, 1}, {1, 1}, 0, 0},
    {{3, 2}, {2, 1}, {1, 0}, {1, 1}, 0, 1},
    {{3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 1},
    {{3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0},
    {{2, 3}, {3, 2}, {0, 1}, {1, 1}, 1, 0},
    {{4, 4}, {3, 3}, {2, 2}, {1, 1}, 1, 1},
};

Test(conv, pools_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    double *x = random_doubles(2 * 3 * 7 * 8, 31);
    for (size_t i = 0; i < sizeof POOLS / sizeof POOLS[0]; i++) {
        check_pool(dev, x, 2, 3, 7, 8, &POOLS[i], 1);
        check_pool(dev, x, 2, 3, 7, 8, &POOLS[i], 0);
    }
    /* dilation (max only) */
    pset dil = {{2, 3}, {1, 2}, {1, 1}, {2, 2}, 0, 1}, dil2 = {{3, 2}, {2, 1}, {1, 1}, {2, 3}, 1, 1};
    check_pool(dev, x, 2, 3, 7, 8, &dil, 1);
    check_pool(dev, x, 2, 3, 7, 8, &dil2, 1);
    free(x);
}

/* The call fails with status and a message containing text. */
#define EXPECT_ERR(call, status, text)                                                    \
    do {                                                                                  \
        clt_tensor *r_ = (clt_tensor *)0x1;                                               \
        clt_status s_ = (call);                                                           \
        (void)r_;                                                                         \
        cr_assert_eq(s_, status, "%s: got %s (%s)", #call, clt_status_name(s_),           \
                     clt_last_error());                                                   \
        cr_assert(strstr(clt_last_error(), text) != NULL, "message '%s' lacks '%s'",      \
                  clt_last_error(), text);                                                \
    } while (0)

/* As torch 1.13, avg_pool2d averages int64 in int64: each window's sum
 * divided with truncation toward zero (-5 / 4 is -1), for every option
 * set; the layer too.  Other integer dtypes are refused, as torch's
 * "not implemented for 'Int'", and max pooling refuses int64 as torch's
 * max_pool2d does. */
Test(conv, avg_pool_int64_truncates)
{
    clt_device *dev = get_device("cpu");
    const int64_t N = 2, C = 3, H = 7, W = 8, n = N * C * H * W;
    int64_t *xi = malloc((size_t)n * sizeof *xi);
    unsigned seed = 7;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        xi[i] = (int64_t)((seed >> 8) % 2001) - 1000;
        if (i % 17 == 0)
            xi[i] = (i % 2 ? INT64_C(1) : INT64_C(-1)) * (INT64_C(1) << 60); /* no overflow in 16 */
    }
    clt_tensor *x;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 4, (int64_t[]){N, C, H, W}, xi, &x));
    for (size_t k = 0; k < sizeof POOLS / sizeof POOLS[0]; k++) {
        const pset *q = &POOLS[k];
        int64_t Ho = pool_size(H, q->k[0], q->p[0], q->s[0], 1, q->ceil_mode);
        int64_t Wo = pool_size(W, q->k[1], q->p[1], q->s[1], 1, q->ceil_mode);
        clt_tensor *y = run_pool(x, q, 0);
        const int64_t *ys = clt_tensor_shape(y);
        cr_assert(ys[2] == Ho && ys[3] == Wo);
        cr_assert_eq(clt_tensor_dtype(y), CLT_INT64);
        int64_t *got = malloc((size_t)(N * C * Ho * Wo) * sizeof *got);
        CHECK(clt_tensor_read(y, got, (size_t)(N * C * Ho * Wo) * sizeof *got));
        for (int64_t i = 0; i < N * C * Ho * Wo; i++) {
            /* exact integer sum and divisor from the same window walk */
            int64_t pl = i / (Ho * Wo), oh = i / Wo % Ho, ow = i % Wo;
            int64_t h0 = oh * q->s[0] - q->p[0], w0 = ow * q->s[1] - q->p[1];
            int64_t h1 = h0 + q->k[0] < H + q->p[0] ? h0 + q->k[0] : H + q->p[0];
            int64_t w1 = w0 + q->k[1] < W + q->p[1] ? w0 + q->k[1] : W + q->p[1];
            int64_t sum = 0, count = 0, padded = (h1 - h0) * (w1 - w0);
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++)
                    if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                        sum += xi[(pl * H + ih) * W + iw];
                        count++;
                    }
            int64_t want = count ? sum / (q->cip ? padded : count) : 0;
            cr_assert_eq(got[i], want, "pool %zu element %lld: got %lld, want %lld", k,
                         (long long)i, (long long)got[i], (long long)want);
        }
        free(got);
        clt_tensor_free(y);
    }
    /* torch's small case: [[-7, 2, 5, 1], [0, 0, 3, 3]] in 2x2 windows */
    int64_t v[8] = {-7, 2, 5, 1, 0, 0, 3, 3}, o[2];
    clt_tensor *small, *y;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 4, (int64_t[]){1, 1, 2, 4}, v, &small));
    clt_module *layer;
    CHECK(clt_avg_pool2d_layer(2, 2, NULL, &layer));
    CHECK(clt_module_forward(layer, small, &y));
    CHECK(clt_tensor_read(y, o, sizeof o));
    cr_assert(o[0] == -1 && o[1] == 3, "%lld %lld", (long long)o[0], (long long)o[1]);
    clt_tensor_free(y);
    clt_module_free(layer);

    int64_t k2[2] = {2, 2};
    y = (clt_tensor *)0x1;
    EXPECT_ERR(clt_max_pool2d(small, k2, NULL, NULL, NULL, 0, &y), CLT_ERR_DTYPE_UNSUPPORTED,
               "clt_max_pool2d: input must be float32 or float64, not int64");
    cr_assert_null(y);
    clt_dtype refused[] = {CLT_INT32, CLT_UINT8, CLT_BOOL};
    for (size_t d = 0; d < sizeof refused / sizeof *refused; d++) {
        clt_tensor *xr;
        CHECK(clt_zeros(dev, refused[d], 4, (int64_t[]){1, 1, 4, 4}, &xr));
        char want[128];
        snprintf(want, sizeof want,
                 "clt_avg_pool2d: input must be float32, float64 or int64, not %s",
                 clt_dtype_name(refused[d]));
        y = (clt_tensor *)0x1;
        EXPECT_ERR(clt_avg_pool2d(xr, k2, NULL, NULL, 0, 1, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                   want);
        cr_assert_null(y);
        clt_tensor_free(xr);
    }
    clt_tensor_free(small);
    clt_tensor_free(x);
    free(xi);
}

Test(conv, max_pool_ties_nan_and_infinities)
{
    clt_device *dev = get_device("cpu");
    /* one 4x4 plane: ties in the first window, NaN in the second, -inf only
     * in the third, two NaNs in the fourth (the later one wins, as in
     * PyTorch's CPU kernel) */
    double x[16] = {1, 3, 2, NAN, 3, 3, 5, 1, -INFINITY, -INFINITY, NAN, 0,
                    -INFINITY, -INFINITY, 0, NAN};
    pset q = {{2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 1};
    check_pool(dev, x, 1, 1, 4, 4, &q, 1);
    /* gradients go to the first maximum (ties) and to the NaN */
    clt_tensor *tx = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){1, 1, 4, 4}, x), *y, *l, *g;
    CHECK(clt_set_requires_grad(tx, 1));
    y = run_pool(tx, &q, 1);
    double w[4] = {1, 2, 4, 8};
    clt_tensor *tw = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){1, 1, 2, 2}, w), *p;
    CHECK(clt_mul(y, tw, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(tx, &g));
    double *gv = read_f64(g);
    double want[16] = {0, 1, 0, 2, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 8};
    for (int i = 0; i < 16; i++)
        cr_assert_eq(gv[i], want[i], "grad %d: %g, want %g", i, gv[i], want[i]);
    free(gv);
    clt_tensor_free(tx);
    clt_tensor_free(y);
    clt_tensor_free(tw);
    clt_tensor_free(p);
    clt_tensor_free(l);
    clt_tensor_free(g);
}

Test(conv, max_pool_overlapping_windows_sum_gradients)
{
    clt_device *dev = get_device("cpu");
    /* one large value wins every 3x3 window around it (stride 1, padding 1) */
    double x[25];
    for (int i = 0; i < 25; i++)
        x[i] = -(double)i * 0.01;
    x[12] = 10;
    clt_tensor *tx = from_f64(dev, CLT_FLOAT64, 3, (int64_t[]){1, 5, 5}, x), *y, *l, *g;
    CHECK(clt_set_requires_grad(tx, 1));
    pset q = {{3, 3}, {1, 1}, {1, 1}, {1, 1}, 0, 1};
    y = run_pool(tx, &q, 1);
    cr_assert_eq(clt_tensor_ndim(y), 3);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(tx, &g));
    double *gv = read_f64(g), total = 0;
    for (int i = 0; i < 25; i++)
        total += gv[i];
    cr_assert_eq(total, 25.0);
    cr_assert_eq(gv[12], 9.0, "the centre wins the 9 windows that hold it: %g", gv[12]);
    free(gv);
    clt_tensor_free(tx);
    clt_tensor_free(y);
    clt_tensor_free(l);
    clt_tensor_free(g);
}

/* ---- gradients ---------------------------------------------------------------------- */

static clt_status call_conv(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ccase *c = ctx;
    return clt_conv2d(in[0], in[1], c->bias ? in[2] : NULL, &c->o, out);
}

Test(conv, conv2d_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const ccase gc[] = {
        {{2, 2, 5, 4, 3, 3, 2}, {{1, 1}, {1, 0}, {1, 1}, 1}, 1},
        {{1, 2, 6, 6, 2, 2, 2}, {{2, 2}, {1, 1}, {2, 1}, 1}, 1},
        {{2, 4, 4, 5, 2, 2, 3}, {{1, 2}, {0, 1}, {1, 1}, 2}, 0},
        {{1, 2, 5, 5, 4, 3, 3}, {{2, 1}, {1, 2}, {1, 2}, 2}, 1},
    };
    for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++) {
        cshape s = gc[i].s;
        size_t nx = (size_t)(s.N * s.C * s.H * s.W);
        size_t nw = (size_t)(s.O * (s.C / gc[i].o.groups) * s.kh * s.kw);
        double *x = random_doubles(nx, 41 + (unsigned)i), *w = random_doubles(nw, 51);
        double *b = random_doubles((size_t)s.O, 61);
        gc_in ins[3] = {{4, {s.N, s.C, s.H, s.W}, x, 1},
                        {4, {s.O, s.C / gc[i].o.groups, s.kh, s.kw}, w, 1},
                        {1, {s.O}, b, 1}};
        gradcheck(dev, call_conv, &gc[i], gc[i].bias ? 3 : 2, ins);
        free(x);
        free(w);
        free(b);
    }
    /* unbatched, and only the weight requiring grad */
    static const ccase ub = {{1, 2, 4, 4, 2, 2, 2}, {{1, 1}, {1, 1}, {1, 1}, 1}, 1};
    double *x = random_doubles(32, 71), *w = random_doubles(16, 72), *b = random_doubles(2, 73);
    gc_in ins[3] = {{3, {2, 4, 4}, x, 1}, {4, {2, 2, 2, 2}, w, 1}, {1, {2}, b, 0}};
    gradcheck(dev, call_conv, &ub, 3, ins);
    ins[0].grad = 0;
    gradcheck(dev, call_conv, &ub, 3, ins);
    free(x);
    free(w);
    free(b);
}

/* Gradients in float32 (the CPU GEMM path on CPU devices) against the same
 * in float64 (clt__matmul's path). */
static void grads_at(clt_device *dev, clt_dtype dt, const ccase *c, double **res, size_t *n)
{
    cshape s = c->s;
    int64_t xs[4] = {s.N, s.C, s.H, s.W}, ws[4] = {s.O, s.C / c->o.groups, s.kh, s.kw};
    size_t nx = (size_t)(s.N * s.C * s.H * s.W), nw = (size_t)(ws[0] * ws[1] * s.kh * s.kw);
    double *x = random_doubles(nx, 81), *w = random_doubles(nw, 82);
    double *b = random_doubles((size_t)s.O, 83);
    clt_tensor *in[3] = {from_f64(dev, dt, 4, xs, x), from_f64(dev, dt, 4, ws, w),
                         from_f64(dev, dt, 1, &s.O, b)};
    clt_tensor *y, *y2, *l, *g, *g64;
    for (int i = 0; i < 3; i++)
        CHECK(clt_set_requires_grad(in[i], 1));
    CHECK(clt_conv2d(in[0], in[1], c->bias ? in[2] : NULL, &c->o, &y));
    CHECK(clt_mul(y, y, &y2));
    CHECK(clt_sum(y2, &l));
    CHECK(clt_backward(l, NULL, 0));
    for (int i = 0; i < 3; i++) {
        res[i] = NULL;
        n[i] = 0;
        if (i == 2 && !c->bias)
            continue;
        CHECK(clt_grad(in[i], &g));
        CHECK(clt_to_dtype(g, CLT_FLOAT64, &g64));
        res[i] = read_f64(g64);
        n[i] = (size_t)clt_tensor_numel(g64);
        clt_tensor_free(g);
        clt_tensor_free(g64);
    }
    for (int i = 0; i < 3; i++)
        clt_tensor_free(in[i]);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_tensor_free(l);
    free(x);
    free(w);
    free(b);
}

Test(conv, float32_gradients_match_float64)
{
    clt_device *dev = get_device("cpu");
    ccase big = {{16, 4, 10, 9, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 2}, 1};
    const ccase *cases[] = {&CASES[0], &CASES[2], &CASES[3], &CASES[4], &CASES[5], &big};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double *r32[3], *r64[3];
        size_t n32[3], n64[3];
        grads_at(dev, CLT_FLOAT32, cases[k], r32, n32);
        grads_at(dev, CLT_FLOAT64, cases[k], r64, n64);
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(n32[i], n64[i]);
            for (size_t j = 0; j < n32[i]; j++)
                cr_assert(close_enough(r32[i][j], r64[i][j], 1e-4, 1e-4),
                          "case %zu input %d element %zu: float32 %.8g, float64 %.8g", k, i, j,
                          r32[i][j], r64[i][j]);
            free(r32[i]);
            free(r64[i]);
        }
    }
}

/* Batches in chunks of images (a patch-matrix limit of one or two images)
 * give the same results as in one piece. */
Test(conv, batches_in_chunks)
{
    clt_device *dev = get_device("cpu");
    static const ccase cc[] = {
        {{5, 4, 6, 5, 6, 3, 1}, {{1, 1}, {1, 0}, {1, 1}, 2}, 1},
        {{3, 2, 9, 9, 2, 3, 3}, {{1, 2}, {2, 1}, {2, 3}, 1}, 1},
    };
    for (int lim = 0; lim < 2; lim++) {
        for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++) {
            const cshape s = cc[i].s;
            int64_t Ho = out_size(s.H, s.kh, cc[i].o.stride[0], cc[i].o.padding[0],
                                  cc[i].o.dilation[0]);
            int64_t Wo = out_size(s.W, s.kw, cc[i].o.stride[1], cc[i].o.padding[1],
                                  cc[i].o.dilation[1]);
            /* float64 patches of one image (lim 0) or two */
            clt__conv2d_cols_limit = (size_t)(s.C * s.kh * s.kw * Ho * Wo * 8 * (lim + 1));
            check_conv(dev, CLT_FLOAT64, &cc[i], 1e-12, 1e-12);
            check_conv(dev, CLT_FLOAT32, &cc[i], 1e-5, 1e-5);
            double *r32[3], *r64[3];
            size_t n32[3], n64[3];
            grads_at(dev, CLT_FLOAT32, &cc[i], r32, n32);
            grads_at(dev, CLT_FLOAT64, &cc[i], r64, n64);
            for (int k = 0; k < 3; k++) {
                for (size_t j = 0; j < n32[k]; j++)
                    cr_assert(close_enough(r32[k][j], r64[k][j], 1e-4, 1e-4),
                              "case %zu input %d element %zu: float32 %.8g, float64 %.8g", i, k,
                              j, r32[k][j], r64[k][j]);
                free(r32[k]);
                free(r64[k]);
            }
        }
    }
    clt__conv2d_cols_limit = 1;
    static const ccase g1 = {{3, 2, 5, 4, 3, 3, 2}, {{1, 1}, {1, 0}, {1, 1}, 1}, 1};
    double *x = random_doubles(120, 93), *w = random_doubles(36, 94), *b = random_doubles(3, 95);
    gc_in ins[3] = {{4, {3, 2, 5, 4}, x, 1}, {4, {3, 2, 3, 2}, w, 1}, {1, {3}, b, 1}};
    gradcheck(dev, call_conv, &g1, 3, ins);
    free(x);
    free(w);
    free(b);
}

static clt_status call_pool(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const struct {
        pset q;
        int max;
    } *c = ctx;
    if (c->max)
        return clt_max_pool2d(in[0], c->q.k, c->q.s, c->q.p, c->q.d, c->q.ceil_mode, out);
    return clt_avg_pool2d(in[0], c->q.k, c->q.s, c->q.p, c->q.ceil_mode, c->q.cip, out);
}

Test(conv, pool_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    /* distinct values (spaced far beyond eps) so that no window ties */
    double x[2 * 2 * 5 * 6];
    for (int i = 0; i < 120; i++)
        x[i] = (double)((i * 37) % 120) * 0.05 - 3.0;
    gc_in ins[1] = {{4, {2, 2, 5, 6}, x, 1}};
    for (size_t i = 0; i < sizeof POOLS / sizeof POOLS[0]; i++) {
        for (int max = 0; max < 2; max++) {
            struct {
                pset q;
                int max;
            } c = {POOLS[i], max};
            gradcheck(dev, call_pool, &c, 1, ins);
        }
    }
    struct {
        pset q;
        int max;
    } dil = {{{2, 2}, {1, 2}, {1, 1}, {2, 2}, 0, 1}, 1};
    gradcheck(dev, call_pool, &dil, 1, ins);
    gc_in unb[1] = {{3, {4, 5, 6}, x, 1}};
    gradcheck(dev, call_pool, &dil, 1, unb);
}

/* ---- errors ----------------------------------------------------------------------------- */


Test(conv, errors_name_shapes)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *w, *b5, *x2, *xd, *y = (clt_tensor *)0x1;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){2, 4, 8, 8}, &x));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){8, 3, 3, 3}, &w));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){5}, &b5));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, &x2));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 8, 8}, &xd));

    EXPECT_ERR(clt_conv2d(x, w, NULL, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
               "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to "
               "have 3 channels, but got 4 channels instead");
    cr_assert_null(y);
    EXPECT_ERR(clt_conv2d(x2, w, NULL, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
               "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
               "size: [2, 3]");
    clt_conv2d_opts g2 = {{1, 1}, {0, 0}, {1, 1}, 3};
    EXPECT_ERR(clt_conv2d(x, w, NULL, &g2, &y), CLT_ERR_SHAPE_MISMATCH,
               "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got "
               "weight of size [8, 3, 3, 3] instead");
    clt_tensor *x3 = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, 8, 8}, &x3));
    EXPECT_ERR(clt_conv2d(x3, w, b5, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
               "expected bias to be 1-dimensional with 8 elements, but got bias of size [5]");
    EXPECT_ERR(clt_conv2d(xd, w, NULL, NULL, &y), CLT_ERR_DTYPE_MISMATCH,
               "Input type (float64), weight type (float32)");
    clt_tensor *small = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){1, 3, 2, 2}, &small));
    EXPECT_ERR(clt_conv2d(small, w, NULL, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
               "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
               "Kernel size can't be greater than actual input size");
    clt_conv2d_opts bad = {{0, 1}, {0, 0}, {1, 1}, 1};
    EXPECT_ERR(clt_conv2d(x3, w, NULL, &bad, &y), CLT_ERR_INVALID_ARGUMENT,
               "non-positive stride is not supported");
    EXPECT_ERR(clt_conv2d(NULL, w, NULL, NULL, &y), CLT_ERR_NULL_ARGUMENT, "input");
    cr_assert_null(y);

    int64_t k2[2] = {2, 2}, p2[2] = {2, 2}, k9[2] = {9, 9};
    EXPECT_ERR(clt_max_pool2d(x, k2, NULL, p2, NULL, 0, &y), CLT_ERR_INVALID_ARGUMENT,
               "pad should be smaller than or equal to half of kernel size");
    EXPECT_ERR(clt_avg_pool2d(small, k9, NULL, NULL, 0, 1, &y), CLT_ERR_SHAPE_MISMATCH,
               "Output size is too small");
    EXPECT_ERR(clt_max_pool2d(x2, k2, NULL, NULL, NULL, 0, &y), CLT_ERR_SHAPE_MISMATCH,
               "3D or 4D (batch mode) tensor expected for input");
    clt_tensor *xi = NULL;
    CHECK(clt_zeros(dev, CLT_INT32, 4, (int64_t[]){1, 1, 4, 4}, &xi));
    EXPECT_ERR(clt_max_pool2d(xi, k2, NULL, NULL, NULL, 0, &y), CLT_ERR_DTYPE_UNSUPPORTED,
               "int32");
    cr_assert_null(y);

    clt_device *d1 = NULL;
    size_t nd = 0;
    if (clt_device_count(&nd) == CLT_OK && nd > 1) {
        d1 = second_device(dev);
        clt_tensor *wo = NULL;
        CHECK(clt_to(w, d1, &wo));
        EXPECT_ERR(clt_conv2d(x3, wo, NULL, NULL, &y), CLT_ERR_DEVICE_MISMATCH,
                   "expected all tensors to be on the same device");
        clt_tensor_free(wo);
    }
    clt_tensor_free(x);
    clt_tensor_free(w);
    clt_tensor_free(b5);
    clt_tensor_free(x2);
    clt_tensor_free(x3);
    clt_tensor_free(xd);
    clt_tensor_free(small);
    clt_tensor_free(xi);
}

/* ---- determinism across devices --------------------------------------------------------- */

/* conv -> relu -> max pool -> avg pool -> adaptive avg pool -> sum, forward
 * and backward, float32;
 * the output and the three gradients as bytes in *res (4 arrays). */
static void run_model(clt_device *dev, float **res, size_t *sizes)
{
    enum { N = 8, C = 3, H = 12, W = 12, O = 16 };
    float *x = malloc(N * C * H * W * sizeof *x), *w = malloc(O * C * 9 * sizeof *w);
    float b[O];
    fill_random(x, N * C * H * W, 5);
    fill_random(w, O * C * 9, 6);
    fill_random(b, O, 7);
    clt_tensor *tx, *tw, *tb, *y, *r, *m, *a, *ad, *l, *g;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){N, C, H, W}, x, &tx));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){O, C, 3, 3}, w, &tw));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){O}, b, &tb));
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_set_requires_grad(tw, 1));
    CHECK(clt_set_requires_grad(tb, 1));
    clt_conv2d_opts o = {{1, 1}, {1, 1}, {1, 1}, 1};
    CHECK(clt_conv2d(tx, tw, tb, &o, &y));
    CHECK(clt_relu(y, &r));
    int64_t k[2] = {2, 2}, k3[2] = {3, 3}, p1[2] = {1, 1};
    CHECK(clt_max_pool2d(r, k, NULL, NULL, NULL, 0, &m));
    CHECK(clt_avg_pool2d(m, k3, (int64_t[]){1, 1}, p1, 0, 0, &a));
    CHECK(clt_adaptive_avg_pool2d(a, (int64_t[]){4, 5}, &ad)); /* overlapping windows */
    CHECK(clt_sum(ad, &l));
    CHECK(clt_backward(l, NULL, 0));
    res[0] = read_f32(y);
    sizes[0] = (size_t)clt_tensor_numel(y);
    clt_tensor *leaves[3] = {tx, tw, tb};
    for (int i = 0; i < 3; i++) {
        CHECK(clt_grad(leaves[i], &g));
        res[i + 1] = read_f32(g);
        sizes[i + 1] = (size_t)clt_tensor_numel(g);
        clt_tensor_free(g);
    }
    clt_tensor *all[] = {tx, tw, tb, y, r, m, a, ad, l};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
    free(x);
    free(w);
}

Test(conv, bit_identical_across_devices_and_runs)
{
    clt_device *d0 = get_device("cpu:0");
    clt_device *d1 = second_device(d0);
    float *r0[4], *r1[4], *r2[4];
    size_t s0[4], s1[4], s2[4];
    run_model(d0, r0, s0);
    run_model(d0, r2, s2);
    run_model(d1, r1, s1);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(s0[i], s1[i]);
        cr_assert(memcmp(r0[i], r2[i], s0[i] * sizeof(float)) == 0, "array %d differs between runs",
                  i);
        cr_assert(memcmp(r0[i], r1[i], s0[i] * sizeof(float)) == 0,
                  "array %d differs between %s and %s", i, clt_device_label(d0),
                  clt_device_label(d1));
        free(r0[i]);
        free(r1[i]);
        free(r2[i]);
    }
}

/* Forward and backward release everything but the leaves and their
 * gradients: live bytes come back to where they started (float32 on the
 * CPU GEMM path and float64 on clt__matmul's, errors included). */
Test(conv, memory_released)
{
    clt_device *dev = get_device("cpu");
    clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        clt_memory_stats before, after;
        CHECK(clt_memory_stats_get(dev, &before));
        double *x = random_doubles(2 * 4 * 6 * 6, 91), *w = random_doubles(4 * 2 * 9, 92);
        clt_tensor *tx = from_f64(dev, dts[k], 4, (int64_t[]){2, 4, 6, 6}, x);
        clt_tensor *tw = from_f64(dev, dts[k], 4, (int64_t[]){4, 2, 3, 3}, w);
        clt_tensor *tb = from_f64(dev, dts[k], 1, (int64_t[]){4}, w);
        clt_tensor *x3 = from_f64(dev, dts[k], 3, (int64_t[]){4, 6, 6}, x);
        clt_tensor *leaves[4] = {tx, tw, tb, x3};
        for (int i = 0; i < 4; i++)
            CHECK(clt_set_requires_grad(leaves[i], 1));
        clt_conv2d_opts o = {{1, 1}, {1, 1}, {1, 1}, 2};
        int64_t k2[2] = {2, 2}, k3[2] = {3, 3}, p1[2] = {1, 1};
        for (int step = 0; step < 2; step++) {
            CHECK(clt_scope_begin());
            clt_tensor *y, *y2, *m, *a, *s1, *s2, *s3, *l, *bad = NULL;
            CHECK(clt_conv2d(tx, tw, step ? tb : NULL, &o, &y));
            CHECK(clt_conv2d(x3, tw, tb, &o, &y2));
            CHECK(clt_max_pool2d(y, k2, NULL, NULL, NULL, 1, &m));
            CHECK(clt_avg_pool2d(y2, k3, (int64_t[]){2, 2}, p1, 0, 0, &a));
            cr_assert_neq(clt_conv2d(a, tw, NULL, NULL, &bad), CLT_OK);
            CHECK(clt_sum(m, &s1));
            CHECK(clt_sum(a, &s2));
            CHECK(clt_add(s1, s2, &s3));
            CHECK(clt_mul_scalar(s3, 0.5, &l));
            CHECK(clt_backward(l, NULL, 0));
            clt_scope_end();
        }
        for (int i = 0; i < 4; i++) {
            CHECK(clt_zero_grad(leaves[i], 1));
            clt_tensor_free(leaves[i]);
        }
        CHECK(clt_memory_stats_get(dev, &after));
        cr_assert_eq(after.requested, before.requested, "%s: %lld bytes left",
                     k ? "float64" : "float32",
                     (long long)(after.requested - before.requested));
        free(x);
        free(w);
    }
}

/* ---- layers ---------------------------------------------------------------------------- */

Test(conv, conv2d_layer_initialisation_and_forward)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_conv2d_opts o = {{1, 1}, {1, 1}, {1, 1}, 2};
    clt_module *m;
    CHECK(clt_conv2d_layer(dev, 4, 6, 3, 2, &o, 1, gen, &m));
    cr_assert_str_eq(clt_module_name(m), "Conv2d");
    cr_assert_eq(clt_module_num_parameters(m), 6 * 2 * 3 * 2 + 6);
    clt_named_tensor *p;
    size_t np;
    CHECK(clt_module_named_parameters(m, &p, &np));
    cr_assert_eq(np, 2);
    cr_assert_str_eq(p[0].name, "weight");
    cr_assert_str_eq(p[1].name, "bias");
    const int64_t *ws = clt_tensor_shape(p[0].tensor);
    cr_assert(ws[0] == 6 && ws[1] == 2 && ws[2] == 3 && ws[3] == 2);
    double bound = 1.0 / sqrt(2.0 * 3 * 2);
    float *w = read_f32(p[0].tensor), *b = read_f32(p[1].tensor);
    float lo = 1, hi = -1;
    for (int i = 0; i < 72; i++) {
        cr_assert(fabsf(w[i]) <= bound, "weight %d = %g beyond %g", i, w[i], bound);
        lo = fminf(lo, w[i]);
        hi = fmaxf(hi, w[i]);
    }
    cr_assert(hi - lo > bound, "weights not spread: %g..%g", lo, hi);
    for (int i = 0; i < 6; i++)
        cr_assert(fabsf(b[i]) <= bound);
    /* the layer is clt_conv2d with its parameters */
    float x[2 * 4 * 5 * 5];
    fill_random(x, 200, 9);
    clt_tensor *tx, *y, *y2;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){2, 4, 5, 5}, x, &tx));
    CHECK(clt_module_forward(m, tx, &y));
    CHECK(clt_conv2d(tx, p[0].tensor, p[1].tensor, &o, &y2));
    float *a = read_f32(y), *c = read_f32(y2);
    cr_assert_eq(clt_tensor_numel(y), 2 * 6 * 5 * 6);
    cr_assert(memcmp(a, c, 360 * sizeof(float)) == 0);
    /* the same seed gives the same layer */
    clt_module *m2;
    clt_manual_seed(gen, 3);
    CHECK(clt_conv2d_layer(dev, 4, 6, 3, 2, &o, 1, gen, &m2));
    clt_named_tensor *p2;
    CHECK(clt_module_named_parameters(m2, &p2, &np));
    float *w2 = read_f32(p2[0].tensor);
    cr_assert(memcmp(w, w2, 72 * sizeof(float)) == 0);
    /* no bias; bad settings */
    clt_module *m3, *bad = (clt_module *)0x1;
    CHECK(clt_conv2d_layer(dev, 3, 8, 3, 3, NULL, 0, gen, &m3));
    cr_assert_eq(clt_module_num_parameters(m3), 8 * 3 * 9);
    cr_assert_eq(clt_conv2d_layer(dev, 3, 8, 3, 3, &o, 1, gen, &bad), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    /* a kernel whose fan_in (C / groups times the kernel's sizes) passes
     * the int64 range is refused by the weight's shape check, before any
     * product of the sizes is taken (the sanitizer build traps that
     * signed overflow) */
    bad = (clt_module *)0x1;
    cr_assert_eq(clt_conv2d_layer(dev, 2, 2, INT64_MAX, 1, NULL, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "too many elements"), "%s", clt_last_error());
    cr_assert_null(bad);
    bad = (clt_module *)0x1;
    cr_assert_eq(clt_conv1d_layer(dev, 2, 2, INT64_MAX, NULL, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    bad = (clt_module *)0x1;
    cr_assert_eq(clt_conv_transpose2d_layer(dev, 2, 4, 1, INT64_MAX, NULL, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    free(w);
    free(b);
    free(a);
    free(c);
    free(w2);
    clt_free(p);
    clt_free(p2);
    clt_tensor_free(tx);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_module_free(m);
    clt_module_free(m2);
    clt_module_free(m3);
    clt_generator_free(gen);
}

Test(conv, small_cnn_trains_and_checks_devices)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(1, &gen));
    clt_conv2d_opts pad1 = {{1, 1}, {1, 1}, {1, 1}, 1};
    clt_module *mods[6];
    CHECK(clt_conv2d_layer(dev, 1, 4, 3, 3, &pad1, 1, gen, &mods[0]));
    CHECK(clt_relu_layer(&mods[1]));
    CHECK(clt_max_pool2d_layer(2, 2, NULL, &mods[2]));
    clt_pool2d_opts po = CLT_POOL2D_DEFAULTS;
    po.padding[0] = po.padding[1] = 1;
    po.stride[0] = po.stride[1] = 2;
    po.count_include_pad = 0;
    CHECK(clt_avg_pool2d_layer(3, 3, &po, &mods[3]));
    CHECK(clt_flatten_layer(1, -1, &mods[4]));
    CHECK(clt_linear(dev, 4 * 2 * 2, 1, 1, gen, &mods[5]));
    cr_assert_str_eq(clt_module_name(mods[2]), "MaxPool2d");
    cr_assert_str_eq(clt_module_name(mods[3]), "AvgPool2d");
    clt_module *net;
    CHECK(clt_sequential(mods, 6, &net));
    float x[4 * 64], t[4];
    fill_random(x, 256, 2);
    for (int i = 0; i < 256; i++)
        x[i] *= 0.1f;
    for (int i = 0; i < 4; i++)
        t[i] = (float)i - 1.5f;
    clt_tensor *tx, *tt;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){4, 1, 8, 8}, x, &tx));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){4, 1}, t, &tt));
    clt_tensor **params;
    size_t np;
    CHECK(clt_module_parameters(net, &params, &np));
    cr_assert_eq(np, 4);
    clt_optimizer *opt;
    clt_sgd_opts so = {0.05, 0.9, 0, 0, 0};
    CHECK(clt_sgd(params, np, &so, &opt));
    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        clt_tensor *y, *d, *sq, *l;
        CHECK(clt_scope_begin());
        CHECK(clt_module_forward(net, tx, &y));
        CHECK(clt_sub(y, tt, &d));
        CHECK(clt_mul(d, d, &sq));
        CHECK(clt_mean(sq, &l));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        double v;
        CHECK(clt_tensor_item(l, &v));
        if (getenv("CONV_DEBUG"))
            fprintf(stderr, "step %d loss %g\n", step, v);
        if (step == 0)
            first = v;
        last = v;
        clt_scope_end();
    }
    cr_assert(last < first * 0.8, "loss %g -> %g", first, last);
    size_t nd = 0;
    if (clt_device_count(&nd) == CLT_OK && nd > 1) {
        clt_tensor *x1, *y = (clt_tensor *)0x1;
        CHECK(clt_to(tx, second_device(dev), &x1));
        cr_assert_eq(clt_module_forward(net, x1, &y), CLT_ERR_DEVICE_MISMATCH);
        cr_assert_null(y);
        cr_assert(strstr(clt_last_error(), "Conv2d") != NULL, "%s", clt_last_error());
        clt_tensor_free(x1);
    }
    clt_optimizer_free(opt);
    clt_free(params);
    clt_tensor_free(tx);
    clt_tensor_free(tt);
    clt_module_free(net);
    clt_generator_free(gen);
}

/* ---- adaptive average pooling ----------------------------------------------------------- */

typedef struct acase {
    int64_t N, C, H, W, Ho, Wo;
} acase;

static const acase ADAPTIVE[] = {
    {2, 3, 8, 6, 4, 3},  /* sizes that divide: AvgPool2d(2) */
    {2, 3, 7, 11, 3, 4}, /* overlapping windows of two sizes */
    {1, 2, 5, 7, 2, 3},
    {2, 2, 3, 4, 5, 7},  /* larger than the input: pixels repeat */
    {2, 3, 6, 5, 1, 1},  /* the global average pool */
    {1, 2, 1, 9, 3, 2},
    {2, 1, 9, 9, 9, 9},  /* the same size: a copy */
};

/* PyTorch's adaptive_avg_pool2d: output (i, j) averages rows
 * floor(i H / Ho) .. ceil((i + 1) H / Ho) - 1, columns likewise (in
 * floating point here, the library computes them in integers). */
static void ref_adaptive(const double *x, const acase *a, double *y)
{
    for (int64_t pl = 0; pl < a->N * a->C; pl++)
        for (int64_t i = 0; i < a->Ho; i++)
            for (int64_t j = 0; j < a->Wo; j++) {
                int64_t h0 = (int64_t)floor((double)(i * a->H) / (double)a->Ho);
                int64_t h1 = (int64_t)ceil((double)((i + 1) * a->H) / (double)a->Ho);
                int64_t w0 = (int64_t)floor((double)(j * a->W) / (double)a->Wo);
                int64_t w1 = (int64_t)ceil((double)((j + 1) * a->W) / (double)a->Wo);
                double s = 0;
                for (int64_t h = h0; h < h1; h++)
                    for (int64_t w = w0; w < w1; w++)
                        s += x[(pl * a->H + h) * a->W + w];
                y[(pl * a->Ho + i) * a->Wo + j] = s / (double)((h1 - h0) * (w1 - w0));
            }
}

/* layout 0: contiguous [N, C, H, W]; 1: the transpose of a contiguous
 * [N, C, W, H]; 2: unbatched [N * C, H, W]. */
static void check_adaptive(clt_device *dev, clt_dtype dt, const acase *a, int layout)
{
    int64_t nx = a->N * a->C * a->H * a->W, ny = a->N * a->C * a->Ho * a->Wo;
    double *x = random_doubles((size_t)nx, 41 + (unsigned)a->H);
    if (dt == CLT_FLOAT32)
        for (int64_t i = 0; i < nx; i++)
            x[i] = (float)x[i]; /* the reference sees the values the device sees */
    double *want = malloc((size_t)ny * sizeof *want);
    ref_adaptive(x, a, want);
    clt_tensor *tx = NULL, *base = NULL, *y = NULL;
    if (layout == 1) {
        double *xt = malloc((size_t)nx * sizeof *xt);
        for (int64_t pl = 0; pl < a->N * a->C; pl++)
            for (int64_t h = 0; h < a->H; h++)
                for (int64_t w = 0; w < a->W; w++)
                    xt[(pl * a->W + w) * a->H + h] = x[(pl * a->H + h) * a->W + w];
        base = from_f64(dev, dt, 4, (int64_t[]){a->N, a->C, a->W, a->H}, xt);
        CHECK(clt_transpose(base, 2, 3, &tx));
        free(xt);
    } else if (layout == 2) {
        tx = from_f64(dev, dt, 3, (int64_t[]){a->N * a->C, a->H, a->W}, x);
    } else {
        tx = from_f64(dev, dt, 4, (int64_t[]){a->N, a->C, a->H, a->W}, x);
    }
    CHECK(clt_adaptive_avg_pool2d(tx, (int64_t[]){a->Ho, a->Wo}, &y));
    const int64_t *ys = clt_tensor_shape(y);
    int nd = clt_tensor_ndim(y);
    cr_assert_eq(nd, layout == 2 ? 3 : 4);
    cr_assert_eq(clt_tensor_dtype(y), dt);
    cr_assert(ys[nd - 2] == a->Ho && ys[nd - 1] == a->Wo &&
                  (layout == 2 ? ys[0] == a->N * a->C : ys[0] == a->N && ys[1] == a->C),
              "shape of %lldx%lld -> %lldx%lld, layout %d", (long long)a->H, (long long)a->W,
              (long long)a->Ho, (long long)a->Wo, layout);
    double *got;
    if (dt == CLT_FLOAT64) {
        got = read_f64(y);
    } else {
        float *f = read_f32(y);
        got = malloc((size_t)ny * sizeof *got);
        for (int64_t i = 0; i < ny; i++)
            got[i] = f[i];
        free(f);
    }
    double tol = dt == CLT_FLOAT64 ? 1e-14 : 2e-6;
    for (int64_t i = 0; i < ny; i++)
        cr_assert(close_enough(got[i], want[i], tol, tol),
                  "%s %lldx%lld -> %lldx%lld layout %d element %lld: got %.17g, want %.17g",
                  clt_dtype_name(dt), (long long)a->H, (long long)a->W, (long long)a->Ho,
                  (long long)a->Wo, layout, (long long)i, got[i], want[i]);
    free(got);
    free(want);
    free(x);
    clt_tensor_free(tx);
    clt_tensor_free(base);
    clt_tensor_free(y);
}

Test(conv, adaptive_avg_pool_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof ADAPTIVE / sizeof *ADAPTIVE; i++)
        for (int layout = 0; layout < 3; layout++) {
            check_adaptive(dev, CLT_FLOAT64, &ADAPTIVE[i], layout);
            check_adaptive(dev, CLT_FLOAT32, &ADAPTIVE[i], layout);
        }
}

/* An output size of 0 gives an empty result whose gradient is zeros; an
 * empty batch (and, in 4-D, no channels) is an empty result too. */
Test(conv, adaptive_avg_pool_empty)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *y, *l, *g;
    CHECK(clt_ones(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 5, 7}, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_adaptive_avg_pool2d(x, (int64_t[]){0, 2}, &y));
    const int64_t *ys = clt_tensor_shape(y);
    cr_assert(ys[0] == 2 && ys[1] == 3 && ys[2] == 0 && ys[3] == 2);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(x, &g));
    double *gv = read_f64(g);
    for (int i = 0; i < 2 * 3 * 5 * 7; i++)
        cr_assert_eq(gv[i], 0.0, "element %d: %g", i, gv[i]);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(y);
    clt_tensor_free(x);
    static const int64_t in[3][4] = {{0, 3, 5, 7}, {2, 0, 5, 7}, {0, 5, 7, 0}};
    static const int64_t want[3][4] = {{0, 3, 2, 3}, {2, 0, 2, 3}, {0, 2, 3, 0}};
    for (int k = 0; k < 3; k++) {
        int nd = k == 2 ? 3 : 4;
        CHECK(clt_zeros(dev, CLT_FLOAT32, nd, in[k], &x));
        CHECK(clt_adaptive_avg_pool2d(x, (int64_t[]){2, 3}, &y));
        cr_assert_eq(clt_tensor_ndim(y), nd);
        for (int d = 0; d < nd; d++)
            cr_assert_eq(clt_tensor_shape(y)[d], want[k][d], "case %d dim %d", k, d);
        clt_tensor_free(y);
        clt_tensor_free(x);
    }
}

static clt_status call_adaptive(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_adaptive_avg_pool2d(in[0], ctx, out);
}

Test(conv, adaptive_avg_pool_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof ADAPTIVE / sizeof *ADAPTIVE; i++) {
        const acase *a = &ADAPTIVE[i];
        double *x = random_doubles((size_t)(a->N * a->C * a->H * a->W), 51 + (unsigned)i);
        int64_t size[2] = {a->Ho, a->Wo};
        gc_in ins[1] = {{4, {a->N, a->C, a->H, a->W}, x, 1}};
        gradcheck(dev, call_adaptive, size, 1, ins);
        gc_in unb[1] = {{3, {a->N * a->C, a->H, a->W}, x, 1}};
        gradcheck(dev, call_adaptive, size, 1, unb);
        free(x);
    }
}

Test(conv, adaptive_avg_pool_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x2, *xi, *e1, *e3, *x, *y = (clt_tensor *)0x1;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){5, 7}, &x2));
    CHECK(clt_zeros(dev, CLT_INT64, 4, (int64_t[]){1, 1, 4, 4}, &xi));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){3, 0, 7}, &e1));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 5, 0}, &e3));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){1, 2, 4, 4}, &x));
    int64_t s22[2] = {2, 2};
    EXPECT_ERR(clt_adaptive_avg_pool2d(x2, s22, &y), CLT_ERR_SHAPE_MISMATCH,
               "clt_adaptive_avg_pool2d: Expected 3D or 4D tensor, but got [5, 7]");
    cr_assert_null(y);
    y = (clt_tensor *)0x1;
    EXPECT_ERR(clt_adaptive_avg_pool2d(xi, s22, &y), CLT_ERR_DTYPE_UNSUPPORTED,
               "clt_adaptive_avg_pool2d: input must be float32 or float64, not int64");
    cr_assert_null(y);
    EXPECT_ERR(clt_adaptive_avg_pool2d(x, (int64_t[]){-1, 2}, &y), CLT_ERR_INVALID_ARGUMENT,
               "elements of output_size must be greater than or equal to 0 but received {-1, 2}");
    EXPECT_ERR(clt_adaptive_avg_pool2d(e1, s22, &y), CLT_ERR_SHAPE_MISMATCH,
               "Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes [3, 0, 7] with dimension 1 being empty");
    EXPECT_ERR(clt_adaptive_avg_pool2d(e3, s22, &y), CLT_ERR_SHAPE_MISMATCH,
               "sizes [2, 3, 5, 0] with dimension 3 being empty");
    EXPECT_ERR(clt_adaptive_avg_pool2d(x, (int64_t[]){INT64_MAX / 4, 1}, &y),
               CLT_ERR_INVALID_ARGUMENT, "product passes int64");
    EXPECT_ERR(clt_adaptive_avg_pool2d(x, NULL, &y), CLT_ERR_NULL_ARGUMENT, "output_size");
    EXPECT_ERR(clt_adaptive_avg_pool2d(NULL, s22, &y), CLT_ERR_NULL_ARGUMENT, "input");
    cr_assert_null(y);

    clt_module *m = (clt_module *)0x1;
    cr_assert_eq(clt_adaptive_avg_pool2d_layer(3, -2, &m), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(m);
    cr_assert(strstr(clt_last_error(), "clt_adaptive_avg_pool2d_layer: elements of output_size "
                                       "must be greater than or equal to 0 but received {3, -2}"),
              "%s", clt_last_error());
    CHECK(clt_adaptive_avg_pool2d_layer(2, 2, &m));
    y = (clt_tensor *)0x1;
    EXPECT_ERR(clt_module_forward(m, x2, &y), CLT_ERR_SHAPE_MISMATCH,
               "AdaptiveAvgPool2d: Expected 3D or 4D tensor, but got [5, 7]");
    cr_assert_null(y);
    clt_module_free(m);
    clt_tensor *all[] = {x2, xi, e1, e3, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_free(all[i]);
}

/* AdaptiveAvgPool2d is the function with the layer's size; Identity hands
 * the input back as a new handle, through which gradients flow; and a
 * ResNet-style head (convolution, global pool, Identity, Linear) trains. */
Test(conv, adaptive_avg_pool_and_identity_layers)
{
    clt_device *dev = get_device("cpu");
    double *xv = random_doubles(2 * 3 * 7 * 5, 61);
    clt_tensor *x = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 7, 5}, xv);
    clt_module *pool, *id;
    CHECK(clt_adaptive_avg_pool2d_layer(3, 2, &pool));
    CHECK(clt_identity_layer(&id));
    cr_assert_str_eq(clt_module_name(pool), "AdaptiveAvgPool2d");
    cr_assert_str_eq(clt_module_name(id), "Identity");
    clt_tensor *y1, *y2, *z;
    CHECK(clt_module_forward(pool, x, &y1));
    CHECK(clt_adaptive_avg_pool2d(x, (int64_t[]){3, 2}, &y2));
    double *a = read_f64(y1), *b = read_f64(y2);
    cr_assert_eq(clt_tensor_numel(y1), 2 * 3 * 3 * 2);
    cr_assert(memcmp(a, b, 36 * sizeof *a) == 0);
    free(a);
    free(b);

    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_module_forward(id, x, &z));
    cr_assert(z != x);
    double *zv = read_f64(z);
    cr_assert(memcmp(zv, xv, 210 * sizeof *zv) == 0);
    free(zv);
    clt_tensor *w, *p, *l, *g;
    double *wv = random_doubles(210, 62);
    w = from_f64(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 7, 5}, wv);
    CHECK(clt_mul(z, w, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(x, &g));
    double *gv = read_f64(g);
    cr_assert(memcmp(gv, wv, 210 * sizeof *gv) == 0, "d sum(identity(x) * w) / dx is not w");
    free(gv);
    free(wv);
    clt_tensor *all[] = {x, y1, y2, z, w, p, l, g};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_free(all[i]);
    clt_module_free(pool);
    clt_module_free(id);
    free(xv);

    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_conv2d_opts pad1 = {{1, 1}, {1, 1}, {1, 1}, 1};
    clt_module *mods[6], *net;
    CHECK(clt_conv2d_layer(dev, 1, 4, 3, 3, &pad1, 1, gen, &mods[0]));
    CHECK(clt_relu_layer(&mods[1]));
    CHECK(clt_adaptive_avg_pool2d_layer(1, 1, &mods[2]));
    CHECK(clt_flatten_layer(1, -1, &mods[3]));
    CHECK(clt_identity_layer(&mods[4]));
    CHECK(clt_linear(dev, 4, 1, 1, gen, &mods[5]));
    CHECK(clt_sequential(mods, 6, &net));
    float xs[4 * 35], t[4];
    fill_random(xs, 140, 8);
    for (int i = 0; i < 140; i++)
        xs[i] *= 0.1f;
    for (int i = 0; i < 4; i++)
        t[i] = (float)i - 1.5f;
    clt_tensor *tx, *tt;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, (int64_t[]){4, 1, 7, 5}, xs, &tx));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){4, 1}, t, &tt));
    clt_tensor **params;
    size_t np;
    CHECK(clt_module_parameters(net, &params, &np));
    cr_assert_eq(np, 4);
    clt_optimizer *opt;
    clt_sgd_opts so = {0.1, 0.9, 0, 0, 0};
    CHECK(clt_sgd(params, np, &so, &opt));
    double first = 0, last = 0;
    for (int step = 0; step < 40; step++) {
        clt_tensor *yo, *d, *sq, *lo;
        CHECK(clt_scope_begin());
        CHECK(clt_module_forward(net, tx, &yo));
        cr_assert(clt_tensor_ndim(yo) == 2 && clt_tensor_shape(yo)[0] == 4 &&
                  clt_tensor_shape(yo)[1] == 1);
        CHECK(clt_sub(yo, tt, &d));
        CHECK(clt_mul(d, d, &sq));
        CHECK(clt_mean(sq, &lo));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_backward(lo, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        double v;
        CHECK(clt_tensor_item(lo, &v));
        if (step == 0)
            first = v;
        last = v;
        clt_scope_end();
    }
    cr_assert(last < first * 0.8, "loss %g -> %g", first, last);
    clt_optimizer_free(opt);
    clt_free(params);
    clt_tensor_free(tx);
    clt_tensor_free(tt);
    clt_module_free(net);
    clt_generator_free(gen);
}
