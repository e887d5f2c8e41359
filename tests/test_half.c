/* test_half.c: float16 as a storage format on every device: casts round to
 * nearest even (subnormals, overflow, NaN) against a host routine,
 * reductions and matrix products accumulate in float32 (host references in
 * double, rounded to half by the same routine), and a mixed-precision
 * training loop (half forward, float32 master weights, GradScaler with
 * torch's defaults) whose scale follows torch's rule step by step. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* float32 to float16 bits, rounding to nearest even, as IEEE 754 and
 * torch's c10::Half: written from the formats, not from the library. */
static uint16_t host_f2h(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0xff)
        return sign | (m ? 0x7e00u : 0x7c00u);
    int ue = (int)e - 127; /* unbiased */
    if (ue > 15)
        return sign | 0x7c00u;
    uint32_t mant = m | (e ? 0x800000u : 0); /* 24 bits with the hidden one */
    int shift;                               /* bits of mant dropped */
    uint32_t he;
    if (ue >= -14) {
        shift = 13;
        he = (uint32_t)(ue + 15);
    } else {
        shift = 13 + (-14 - ue); /* subnormal half */
        he = 0;
        if (shift > 25)
            return sign;
    }
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    /* q holds the significand with its hidden bit (normal) or without
     * (subnormal); a carry out of it moves to the next exponent. */
    uint32_t bits;
    if (he == 0)
        bits = q; /* 0x400 here is the smallest normal, as wanted */
    else
        bits = (he << 10) + (q - 0x400u);
    if (bits >= 0x7c00u)
        return sign | 0x7c00u;
    return (uint16_t)(sign | bits);
}

static float host_h2f(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

/* v rounded to half and back (the value a float16 result should hold). */
static double round_half(double v)
{
    return host_h2f(host_f2h((float)v));
}

static uint16_t *read_bits(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    cr_assert_eq(clt_tensor_dtype(t), CLT_FLOAT16);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static clt_tensor *half_of(clt_device *dev, int nd, const int64_t *shape, const float *v)
{
    clt_tensor *f = NULL, *h = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, nd, shape, v, &f));
    CHECK(clt_to_dtype(f, CLT_FLOAT16, &h));
    clt_tensor_free(f);
    return h;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

/* Every float32 pattern class a cast meets: ties at normal and subnormal
 * exponents, the overflow edge (65519.996 stays, 65520 goes to inf),
 * values below half's smallest subnormal, NaN, and random patterns. */
Test(half, float32_to_half_rounds_to_nearest_even)
{
    clt_device *dev = get_device("cpu:0");
    enum { NR = 6000 };
    static float v[NR + 64];
    size_t n = 0;
    const float fixed[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 65519.99f, 65520.0f,
                           -65520.0f, 0x1p-25f, 3 * 0x1p-26f, 0x1p-24f, 5 * 0x1p-26f, 1e-8f,
                           -0x1p-25f, 0x1p-14f - 0x1p-25f, 0x1p-14f - 0x1p-24f, 2049.0f,
                           2051.0f, 0.1f, -0.0f, 0.0f, INFINITY, -INFINITY, NAN, 1e30f,
                           -1e-30f, 0x1.ffcp-15f, 0x1.ffep-15f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        v[n++] = fixed[i];
    uint32_t s = 7;
    for (int i = 0; i < NR; i++) {
        /* exponents from 2^-30 to 2^17: subnormal halves to overflow */
        uint32_t bits = (lcg(&s) & 0x807fffffu) | ((uint32_t)(97 + lcg(&s) % 48) << 23);
        if (i % 3 == 0) /* exact ties: the 13 dropped bits 1000...0 */
            bits = (bits & ~0x1fffu) | 0x1000u;
        memcpy(&v[n++], &bits, sizeof bits);
    }
    int64_t len = (int64_t)n;
    clt_tensor *h = half_of(dev, 1, &len, v);
    uint16_t *got = read_bits(h);
    for (size_t i = 0; i < n; i++) {
        uint16_t want = host_f2h(v[i]);
        if (isnan(v[i]))
            cr_assert((got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff), "NaN became %#x", got[i]);
        else
            cr_assert_eq(got[i], want, "%a (%.9g): half %#06x, want %#06x", (double)v[i],
                         (double)v[i], got[i], want);
    }
    free(got);
    clt_tensor_free(h);
}

/* All 65536 half patterns widen to float32 and float64 exactly. */
Test(half, every_half_widens_exactly)
{
    clt_device *dev = get_device("cpu:0");
    static uint16_t all[65536];
    for (int i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    int64_t n = 65536;
    clt_tensor *h = NULL, *f = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT16, 1, &n, all, &h));
    CHECK(clt_to_dtype(h, CLT_FLOAT32, &f));
    float *got = read_f32(f);
    double *got64 = read_as_f64(h);
    for (int i = 0; i < 65536; i++) {
        float want = host_h2f((uint16_t)i);
        if (isnan(want)) {
            cr_assert(isnan(got[i]) && isnan(got64[i]), "%#06x: %g", i, (double)got[i]);
            continue;
        }
        cr_assert(memcmp(&got[i], &want, sizeof want) == 0, "%#06x: %a, want %a", i,
                  (double)got[i], (double)want);
        cr_assert_eq(got64[i], (double)want, "%#06x as float64: %a", i, got64[i]);
    }
    free(got);
    free(got64);
    clt_tensor_free(f);
    clt_tensor_free(h);
}

/* Sums whose half partials would stall (2048 + 1 is 2048 in half) or
 * overflow (64 x 3000) come out as the float32 sums rounded once. */
Test(half, reductions_accumulate_in_float32)
{
    clt_device *dev = get_device("cpu:0");
    enum { N = 4096 };
    static float one[N], big[N], mix[N];
    double s_mix = 0, ss_mix = 0, s_big = 0;
    uint32_t s = 11;
    for (int i = 0; i < N; i++) {
        one[i] = 1.0f;
        big[i] = host_h2f(host_f2h(3000.0f + (float)(lcg(&s) % 1000) / 8.0f));
        mix[i] = host_h2f(host_f2h((float)((int)(lcg(&s) % 20001) - 10000) / 1000.0f));
        s_mix += mix[i];
        s_big += big[i];
        ss_mix += (double)mix[i] * mix[i];
    }
    int64_t n = N, sq[2] = {64, 64};
    clt_tensor *ho = half_of(dev, 1, &n, one), *hb = half_of(dev, 1, &n, big),
               *hm = half_of(dev, 1, &n, mix), *ho2 = NULL;
    CHECK(clt_reshape(ho, 2, sq, &ho2));
    clt_tensor *r = NULL;
    double *v;

    CHECK(clt_sum(ho, &r));
    v = read_as_f64(r);
    cr_assert_eq(v[0], 4096.0, "sum of 4096 ones in half: %g", v[0]);
    free(v), clt_tensor_free(r);

    CHECK(clt_sum_dim(ho2, 1, 0, &r));
    v = read_as_f64(r);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(v[i], 64.0);
    free(v), clt_tensor_free(r);

    CHECK(clt_cumsum(ho, 0, &r));
    v = read_as_f64(r);
    for (int i = 0; i < N; i++)
        cr_assert_eq(v[i], round_half(i + 1.0), "cumsum[%d] %g", i, v[i]);
    free(v), clt_tensor_free(r);

    CHECK(clt_mean(hb, &r)); /* the sum, 1.3e7, is far past half's range */
    v = read_as_f64(r);
    cr_assert_eq(v[0], round_half(s_big / N), "mean %g, want %g", v[0], round_half(s_big / N));
    free(v), clt_tensor_free(r);

    CHECK(clt_sum(hm, &r));
    v = read_as_f64(r);
    cr_assert(fabs(v[0] - round_half(s_mix)) <= fabs(round_half(s_mix)) * 0x1p-10,
              "sum %g, want %g", v[0], round_half(s_mix));
    free(v), clt_tensor_free(r);

    CHECK(clt_vector_norm(hm, 2.0, &r)); /* the sum of squares, 1.4e5, overflows half */
    v = read_as_f64(r);
    double want = round_half(sqrt(ss_mix));
    cr_assert(fabs(v[0] - want) <= want * 0x1p-10, "norm %g, want %g", v[0], want);
    free(v), clt_tensor_free(r);

    CHECK(clt_var(hb, 1.0, &r));
    v = read_as_f64(r);
    double mu = s_big / N, var = 0;
    for (int i = 0; i < N; i++)
        var += (big[i] - mu) * (big[i] - mu);
    want = round_half(var / (N - 1));
    cr_assert(fabs(v[0] - want) <= want * 0x1p-10, "var %g, want %g", v[0], want);
    free(v), clt_tensor_free(r);

    clt_tensor_free(ho2);
    clt_tensor_free(ho);
    clt_tensor_free(hb);
    clt_tensor_free(hm);
}

/* matmul and addmm of half: float32 accumulation, one rounding at the end
 * (CLBlast's Hgemm, which summed in half, would give 2048 for K = 4096
 * ones, and addmm rounded the product before adding). */
Test(half, products_accumulate_in_float32)
{
    clt_device *dev = get_device("cpu:0");
    enum { M = 5, K = 4096, N = 3 };
    static float a[M * K], b[K * N], c[N];
    uint32_t s = 3;
    for (int i = 0; i < M * K; i++)
        a[i] = host_h2f(host_f2h((float)((int)(lcg(&s) % 2001) - 1000) / 997.0f));
    for (int i = 0; i < K * N; i++)
        b[i] = host_h2f(host_f2h((float)((int)(lcg(&s) % 2001) - 1000) / 1013.0f));
    for (int j = 0; j < N; j++)
        c[j] = host_h2f(host_f2h(5.0f + j));
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc = N;
    clt_tensor *ha = half_of(dev, 2, sa, a), *hb = half_of(dev, 2, sb, b),
               *hc = half_of(dev, 1, &sc, c), *r = NULL, *r2 = NULL;
    CHECK(clt_matmul(ha, hb, &r));
    CHECK(clt_addmm(hc, ha, hb, 0.5, -2.0, &r2));
    double *v = read_as_f64(r), *v2 = read_as_f64(r2);
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double d = 0;
            for (int k = 0; k < K; k++)
                d += (double)a[i * K + k] * b[k * N + j];
            double want = round_half(d), want2 = round_half(0.5 * c[j] - 2.0 * d);
            cr_assert(fabs(v[i * N + j] - want) <= fabs(want) * 0x1p-10 + 1e-5,
                      "matmul [%d,%d] %g, want %g", i, j, v[i * N + j], want);
            cr_assert(fabs(v2[i * N + j] - want2) <= fabs(want2) * 0x1p-10 + 1e-5,
                      "addmm [%d,%d] %g, want %g", i, j, v2[i * N + j], want2);
        }
    }
    free(v), free(v2);
    clt_tensor_free(r), clt_tensor_free(r2);

    static float ones[M * K];
    for (int i = 0; i < M * K; i++)
        ones[i] = 1.0f;
    clt_tensor *o1 = half_of(dev, 2, sa, ones), *o2 = half_of(dev, 2, sb, ones);
    CHECK(clt_matmul(o1, o2, &r));
    v = read_as_f64(r);
    for (int i = 0; i < M * N; i++)
        cr_assert_eq(v[i], 4096.0, "K = 4096 ones: %g", v[i]);
    free(v), clt_tensor_free(r);
    clt_tensor_free(o1), clt_tensor_free(o2);
    clt_tensor_free(ha), clt_tensor_free(hb), clt_tensor_free(hc);
}

/* torch's _amp_update_scale_ on the host. */
static void host_update(float *scale, int64_t *tracker, bool found)
{
    if (found) {
        *scale = (float)((double)*scale * 0.5);
        *tracker = 0;
    } else if (*tracker + 1 == 2000) {
        float g = (float)((double)*scale * 2.0);
        if (isfinite(g))
            *scale = g;
        *tracker = 0;
    } else {
        ++*tracker;
    }
}

enum { BATCH = 32, IN = 4, HID = 16, CLS = 3 };

/* Linear(IN, HID) + ReLU + Linear(HID, CLS) as autocast runs it: the
 * float32 master weights cast to half (ToCopyBackward0 carries the
 * gradients back to float32), both products in half, cross entropy on the
 * logits widened to float32; the loss scaled by s.  An infinite boost
 * turns the loss infinite, as an overflowing batch would. */
static double forward_backward(clt_grad_scaler *s, clt_tensor **w, const clt_tensor *x,
                               const clt_tensor *y, double boost)
{
    clt_tensor *xh, *wh[4], *t1, *t2, *h, *rl, *lg, *lg32, *loss, *bl, *scaled;
    CHECK(clt_scope_begin());
    CHECK(clt_to_dtype(x, CLT_FLOAT16, &xh));
    for (int i = 0; i < 4; i++)
        CHECK(clt_to_dtype(w[i], CLT_FLOAT16, &wh[i]));
    CHECK(clt_transpose(wh[0], 0, 1, &t1));
    CHECK(clt_addmm(wh[1], xh, t1, 1.0, 1.0, &h));
    CHECK(clt_relu(h, &rl));
    CHECK(clt_transpose(wh[2], 0, 1, &t2));
    CHECK(clt_addmm(wh[3], rl, t2, 1.0, 1.0, &lg));
    cr_assert_eq(clt_tensor_dtype(lg), CLT_FLOAT16);
    CHECK(clt_to_dtype(lg, CLT_FLOAT32, &lg32));
    clt_cross_entropy_opts ce = CLT_CROSS_ENTROPY_DEFAULTS;
    CHECK(clt_cross_entropy(lg32, y, &ce, &loss));
    double l = 0;
    float lf;
    CHECK(clt_tensor_read(loss, &lf, sizeof lf));
    l = lf;
    CHECK(clt_mul_scalar(loss, boost, &bl));
    CHECK(clt_grad_scaler_scale(s, bl, &scaled));
    CHECK(clt_backward(scaled, NULL, 0));
    clt_scope_end();
    return l;
}

/* Three classes by the sign pattern of two inputs; the loss falls from
 * ln 3, steps with an (injected) overflow are skipped with the weights
 * bit for bit kept, and the scale and growth tracker follow torch's
 * GradScaler (65536, growth 2 every 2000 clean steps, backoff 0.5) over
 * the same pattern: growth happens once in the run. */
Test(half, mixed_precision_training_with_grad_scaler, .timeout = 600)
{
    clt_device *dev = get_device("cpu:0");
    static float xs[BATCH * IN];
    static int64_t ys[BATCH];
    uint32_t s = 5;
    for (int i = 0; i < BATCH; i++) {
        for (int k = 0; k < IN; k++)
            xs[i * IN + k] = (float)((int)(lcg(&s) % 2001) - 1000) / 1000.0f;
        ys[i] = xs[i * IN] > 0 ? (xs[i * IN + 1] > 0 ? 0 : 1) : 2;
    }
    int64_t sx[2] = {BATCH, IN}, sy = BATCH;
    clt_tensor *x, *y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sx, xs, &x));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &sy, ys, &y));
    const int64_t shapes[4][2] = {{HID, IN}, {HID, 1}, {CLS, HID}, {CLS, 1}};
    clt_tensor *w[4];
    for (int i = 0; i < 4; i++) {
        int64_t n = shapes[i][0] * shapes[i][1];
        float *v = malloc((size_t)n * sizeof *v);
        for (int64_t k = 0; k < n; k++)
            v[k] = ((float)((int)(lcg(&s) % 2001) - 1000) / 1000.0f) * (i % 2 ? 0.1f : 0.5f);
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, i % 2 ? 1 : 2, shapes[i], v, &w[i]));
        CHECK(clt_set_requires_grad(w[i], 1));
        free(v);
    }
    clt_sgd_opts so = {0.5, 0.9, 0, 0, 0};
    clt_optimizer *opt;
    CHECK(clt_sgd(w, 4, &so, &opt));
    clt_grad_scaler *sc;
    CHECK(clt_grad_scaler_new(NULL, &sc));
    cr_assert_eq(clt_grad_scaler_get_scale(sc), 65536.0);

    enum { STEPS = 2010 };
    float scale = 65536.0f;
    int64_t tracker = 0;
    double first = 0, last = 0;
    int skipped = 0, grew = 0;
    static float before[HID * IN], after[HID * IN];
    for (int t = 0; t < STEPS; t++) {
        bool inject = t == 1 || t == 2 || t == 7 || t == 2009;
        CHECK(clt_optimizer_zero_grad(opt, 1));
        double l = forward_backward(sc, w, x, y, inject ? INFINITY : 1.0);
        if (t == 0)
            first = l;
        last = l;
        CHECK(clt_tensor_read(w[0], before, sizeof before));
        int stepped = -1;
        CHECK(clt_grad_scaler_step(sc, opt, &stepped));
        CHECK(clt_tensor_read(w[0], after, sizeof after));
        cr_assert_eq(stepped, !inject, "step %d: stepped %d", t, stepped);
        if (!stepped) {
            skipped++;
            cr_assert(memcmp(before, after, sizeof before) == 0, "step %d skipped, weights moved",
                      t);
        }
        CHECK(clt_grad_scaler_update(sc, NULL));
        float prev = scale;
        host_update(&scale, &tracker, inject);
        grew += scale > prev;
        cr_assert_eq(clt_grad_scaler_get_scale(sc), (double)scale, "step %d: scale %g, want %g", t,
                     clt_grad_scaler_get_scale(sc), (double)scale);
        cr_assert_eq(clt_grad_scaler_growth_tracker(sc), tracker, "step %d: tracker %lld, want %lld",
                     t, (long long)clt_grad_scaler_growth_tracker(sc), (long long)tracker);
    }
    /* 65536 -> 8192 after three overflows, 16384 after 2000 clean steps (at
     * step 2007), 8192 again after the last overflow */
    cr_assert_eq(skipped, 4);
    cr_assert_eq(grew, 1);
    cr_assert_eq(scale, 8192.0f);
    cr_assert(fabs(first - log(3.0)) < 0.3, "first loss %g", first);
    cr_assert(last < 0.5 * first, "loss %g -> %g did not fall", first, last);
    clt_grad_scaler_free(sc);
    clt_optimizer_free(opt);
    for (int i = 0; i < 4; i++)
        clt_tensor_free(w[i]);
    clt_tensor_free(x);
    clt_tensor_free(y);
}
