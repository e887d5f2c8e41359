/* test_bfloat16.c: bfloat16 (torch.bfloat16), float32's upper 16 bits, as a
 * storage format: casts round to nearest even (ties, subnormals, overflow,
 * NaN) against a host routine that picks the nearer of the two neighbours
 * in double; every pattern widens exactly; promotion as torch; fills,
 * items and raw reads; elementwise ops, reductions and products computed
 * in float32 (host references in double, rounded by the same routine);
 * softmax; files; a training step under autocast to bfloat16; and the ops
 * that refuse it. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#include <cltensor/dlpack.h>

/* The value of the bfloat16 pattern b, from its fields: sign, 8 exponent
 * bits (float32's bias), 7 fraction bits. */
static double host_b2d(uint16_t b)
{
    int e = (b >> 7) & 0xff, m = b & 0x7f;
    double v = e == 0 ? ldexp((double)m, -133)
               : e == 255 ? (m ? NAN : INFINITY)
                          : ldexp((double)(m | 0x80), e - 134);
    return (b & 0x8000) ? -v : v;
}

/* float32 to bfloat16 as c10::BFloat16: NaN to 0x7fc0; otherwise of the
 * two neighbours (the pattern with the low 16 bits cut off, and the next
 * one away from zero) the nearer in double, a tie to the even pattern. */
static uint16_t host_f2b(float f)
{
    if (isnan(f))
        return 0x7fc0;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t lo = (uint16_t)(x >> 16), hi = (uint16_t)(lo + 1);
    if ((x & 0xffffu) == 0)
        return lo;
    /* past the largest finite value the next one up is 2^128, for rounding */
    double up = (hi & 0x7fff) == 0x7f80 ? 0x1p128 : fabs(host_b2d(hi));
    double v = fabs((double)f), dl = v - fabs(host_b2d(lo)), dh = up - v;
    if (dl < dh || (dl == dh && !(lo & 1)))
        return lo;
    return hi; /* past the largest finite value this is inf (0x7f80) */
}

static double round_b(double v)
{
    return host_b2d(host_f2b((float)v));
}

static uint16_t *read_bits(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    cr_assert_eq(clt_tensor_dtype(t), CLT_BFLOAT16);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static clt_tensor *bf16_of(clt_device *dev, int nd, const int64_t *shape, const float *v)
{
    clt_tensor *f = NULL, *h = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, nd, shape, v, &f));
    CHECK(clt_to_dtype(f, CLT_BFLOAT16, &h));
    clt_tensor_free(f);
    return h;
}

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

Test(bfloat16, names_sizes_and_finfo)
{
    clt_dtype d = CLT_FLOAT32;
    cr_assert_eq((int)CLT_BFLOAT16, 9);
    cr_assert_str_eq(clt_dtype_name(CLT_BFLOAT16), "bfloat16");
    cr_assert_eq(clt_dtype_size(CLT_BFLOAT16), 2);
    CHECK(clt_dtype_parse("bfloat16", &d));
    cr_assert_eq(d, CLT_BFLOAT16);
    d = CLT_FLOAT32;
    CHECK(clt_dtype_parse("bf16", &d));
    cr_assert_eq(d, CLT_BFLOAT16);
    clt_float_info fi;
    CHECK(clt_finfo(CLT_BFLOAT16, &fi));
    cr_assert_eq(fi.bits, 16);
    cr_assert_eq(fi.eps, 0.0078125);
    cr_assert_eq(fi.max, host_b2d(0x7f7f));
    cr_assert_eq(fi.min, -host_b2d(0x7f7f));
    cr_assert_eq(fi.tiny, host_b2d(0x0080));
    cr_assert_eq(fi.resolution, 0.01);
    cr_assert(fabs(fi.max - 3.3895e38) < 1e34 && fabs(fi.tiny - 1.1755e-38) < 1e-42);
}

/* torch.promote_types for every pair with bfloat16. */
Test(bfloat16, promotion)
{
    const struct { clt_dtype other, want; } t[] = {
        {CLT_BFLOAT16, CLT_BFLOAT16}, {CLT_FLOAT16, CLT_FLOAT32},  {CLT_FLOAT32, CLT_FLOAT32},
        {CLT_FLOAT64, CLT_FLOAT64},   {CLT_INT32, CLT_BFLOAT16},   {CLT_INT64, CLT_BFLOAT16},
        {CLT_UINT8, CLT_BFLOAT16},    {CLT_BOOL, CLT_BFLOAT16},    {CLT_COMPLEX64, CLT_COMPLEX64},
        {CLT_COMPLEX128, CLT_COMPLEX128},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_eq(clt_promote_types(CLT_BFLOAT16, t[i].other), t[i].want, "with %s",
                     clt_dtype_name(t[i].other));
        cr_assert_eq(clt_promote_types(t[i].other, CLT_BFLOAT16), t[i].want, "with %s",
                     clt_dtype_name(t[i].other));
    }
    /* tensors: bfloat16 + int32 stays bfloat16, + float16 is float32, and a
     * Python-float scalar keeps bfloat16 */
    clt_device *dev = get_device("cpu:0");
    int64_t n = 3;
    const float fv[3] = {1.0f, 2.0f, 3.0f};
    const int32_t iv[3] = {1, 2, 3};
    clt_tensor *b = bf16_of(dev, 1, &n, fv), *i32, *f32, *h, *r1, *r2, *r3;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &n, iv, &i32));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, fv, &f32));
    CHECK(clt_to_dtype(f32, CLT_FLOAT16, &h));
    CHECK(clt_add(b, i32, &r1));
    CHECK(clt_add(b, h, &r2));
    CHECK(clt_mul_scalar(b, 2.5, &r3));
    cr_assert_eq(clt_tensor_dtype(r1), CLT_BFLOAT16);
    cr_assert_eq(clt_tensor_dtype(r2), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_dtype(r3), CLT_BFLOAT16);
    uint16_t *g = read_bits(r3);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(host_b2d(g[k]), 2.5 * fv[k]);
    free(g);
    clt_tensor *ts[] = {b, i32, f32, h, r1, r2, r3};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* Every float32 pattern class a cast meets: ties at normal and subnormal
 * exponents, the overflow edge (the largest value stays, half an ulp past
 * it goes to inf), float32 subnormals below bfloat16's smallest, NaN
 * (any payload), and random patterns, through the 16-wide vector path and
 * the tail past it. */
Test(bfloat16, float32_to_bfloat16_rounds_to_nearest_even)
{
    clt_device *dev = get_device("cpu:0");
    enum { NR = 6000 };
    static float v[NR + 64];
    size_t n = 0;
    const float fixed[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-23f,
                           257.0f, 259.0f, 0x1.fep127f, 0x1.ff0p127f, -0x1.ff0p127f,
                           0x1.fefffep127f, FLT_MAX, 0x1p-130f, 0x1p-134f, 3 * 0x1p-134f,
                           0x1p-126f - 0x1p-140f, 0x1p-149f, -0x1p-133f, 0.1f, -0.0f, 0.0f,
                           INFINITY, -INFINITY, NAN, -NAN, 1e30f, -1e-30f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        v[n++] = fixed[i];
    uint32_t nanp = 0xff812345u; /* a negative NaN with a payload */
    memcpy(&v[n++], &nanp, sizeof nanp);
    uint32_t s = 11;
    for (int i = 0; i < NR; i++) {
        uint32_t bits = lcg(&s);
        if (i % 3 == 0) /* exact ties: the 16 dropped bits 1000...0 */
            bits = (bits & ~0xffffu) | 0x8000u;
        memcpy(&v[n++], &bits, sizeof bits);
    }
    int64_t len = (int64_t)n;
    clt_tensor *h = bf16_of(dev, 1, &len, v);
    uint16_t *got = read_bits(h);
    for (size_t i = 0; i < n; i++) {
        uint16_t want = host_f2b(v[i]);
        if (isnan(v[i]))
            cr_assert_eq(got[i], 0x7fc0, "NaN became %#x", got[i]);
        else
            cr_assert_eq(got[i], want, "%a (%.9g): bfloat16 %#06x, want %#06x", (double)v[i],
                         (double)v[i], got[i], want);
    }
    /* the same values from float64 go through float32 first, as torch */
    double *dv = malloc(n * sizeof *dv);
    for (size_t i = 0; i < n; i++)
        dv[i] = v[i];
    clt_tensor *d = NULL, *hd = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &len, dv, &d));
    CHECK(clt_to_dtype(d, CLT_BFLOAT16, &hd));
    uint16_t *got2 = read_bits(hd);
    cr_assert(memcmp(got, got2, n * sizeof *got) == 0);
    free(got2);
    free(dv);
    free(got);
    clt_tensor_free(d);
    clt_tensor_free(hd);
    clt_tensor_free(h);
}

/* All 65536 patterns go in raw (clt_tensor_from_host takes the 16 bits)
 * and widen to float32 and float64 exactly. */
Test(bfloat16, every_pattern_widens_exactly)
{
    clt_device *dev = get_device("cpu:0");
    static uint16_t all[65536];
    for (int i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    int64_t n = 65536;
    clt_tensor *h, *f, *d;
    CHECK(clt_tensor_from_host(dev, CLT_BFLOAT16, 1, &n, all, &h));
    uint16_t *back = read_bits(h);
    cr_assert(memcmp(back, all, sizeof all) == 0);
    free(back);
    CHECK(clt_to_dtype(h, CLT_FLOAT32, &f));
    CHECK(clt_to_dtype(h, CLT_FLOAT64, &d));
    float *fv = read_f32(f);
    double *dv = malloc(sizeof(double) * 65536);
    CHECK(clt_tensor_read(d, dv, sizeof(double) * 65536));
    for (int i = 0; i < 65536; i++) {
        double want = host_b2d((uint16_t)i);
        if (isnan(want)) {
            cr_assert(isnan(fv[i]) && isnan(dv[i]), "%#x", i);
            continue;
        }
        cr_assert_eq((double)fv[i], want, "%#x: %a, want %a", i, (double)fv[i], want);
        cr_assert_eq(dv[i], want, "%#x", i);
        cr_assert_eq(signbit(fv[i]) != 0, signbit(want) != 0, "%#x", i);
    }
    free(fv);
    free(dv);
    clt_tensor_free(h);
    clt_tensor_free(f);
    clt_tensor_free(d);
}

/* Integers: 257 is a tie (256 or 258: 256, even), 2^24 + 1 rounds. */
Test(bfloat16, integers_and_back)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t iv[] = {0, 1, -1, 257, 259, 65535, (1 << 24) + 1, -70001, INT64_C(1) << 40};
    int64_t n = sizeof iv / sizeof iv[0];
    clt_tensor *t, *h, *back;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &n, iv, &t));
    CHECK(clt_to_dtype(t, CLT_BFLOAT16, &h));
    uint16_t *g = read_bits(h);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(g[i], host_f2b((float)iv[i]), "%lld", (long long)iv[i]);
    CHECK(clt_to_dtype(h, CLT_INT64, &back));
    int64_t ib[16];
    CHECK(clt_tensor_read(back, ib, (size_t)n * sizeof ib[0]));
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq((double)ib[i], host_b2d(g[i]));
    free(g);
    clt_tensor_free(t);
    clt_tensor_free(h);
    clt_tensor_free(back);
}

/* clt_full rounds its value once (through float32), big fills (the kernel)
 * and small ones (the host pattern) alike; item gives the stored value;
 * arange holds start + i * step rounded; a value past the largest finite
 * one is refused for a fill, as torch's overflow check. */
Test(bfloat16, full_item_arange)
{
    clt_device *dev = get_device("cpu:0");
    const double vals[] = {1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, 3e38, -0.1, 1e-39, NAN, -INFINITY};
    const int64_t sizes[] = {5, 100000};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        for (int k = 0; k < 2; k++) {
            clt_tensor *t;
            CHECK(clt_full(dev, CLT_BFLOAT16, 1, &sizes[k], vals[i], &t));
            uint16_t *g = read_bits(t);
            uint16_t want = host_f2b((float)vals[i]);
            for (int64_t j = 0; j < sizes[k]; j += 997)
                cr_assert_eq(g[j], want, "fill %g (%lld): %#x, want %#x", vals[i],
                             (long long)sizes[k], g[j], want);
            free(g);
            clt_tensor *one;
            CHECK(clt_narrow(t, 0, 0, 1, &one));
            double item = 0;
            CHECK(clt_tensor_item(one, &item));
            if (isnan(vals[i]))
                cr_assert(isnan(item));
            else
                cr_assert_eq(item, host_b2d(want));
            clt_tensor_free(one);
            clt_tensor_free(t);
        }
    clt_tensor *r = (clt_tensor *)0x1;
    int64_t one = 1;
    cr_assert_eq(clt_full(dev, CLT_BFLOAT16, 1, &one, 3.4e38, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "bfloat16") != NULL, "%s", clt_last_error());
    clt_tensor *a;
    CHECK(clt_arange(dev, CLT_BFLOAT16, -3, 300, 1.5, &a));
    cr_assert_eq(clt_tensor_numel(a), 202);
    uint16_t *g = read_bits(a);
    for (int i = 0; i < 202; i++)
        cr_assert_eq(g[i], host_f2b((float)(-3.0 + 1.5 * i)), "arange[%d]", i);
    free(g);
    clt_tensor_free(a);
}

/* Elementwise ops compute in float32 and round once: the host computes in
 * double from the same bfloat16 inputs and rounds (the float32 step
 * between can move a result by one ulp at most). */
Test(bfloat16, elementwise_round_once)
{
    clt_device *dev = get_device("cpu:0");
    enum { N = 1000 };
    static float x[N], y[N];
    uint32_t s = 3;
    for (int i = 0; i < N; i++) {
        x[i] = (float)round_b(((double)(lcg(&s) % 20001) - 10000.0) / 1000.0);
        y[i] = (float)round_b(((double)(lcg(&s) % 20001)) / 4000.0 + 0.25);
    }
    x[0] = NAN;
    x[1] = INFINITY;
    x[2] = 3e38f;
    y[2] = 2.0f;
    int64_t n = N;
    clt_tensor *a = bf16_of(dev, 1, &n, x), *b = bf16_of(dev, 1, &n, y), *r;
    for (int op = 0; op < 4; op++) {
        switch (op) {
        case 0: CHECK(clt_add(a, b, &r)); break;
        case 1: CHECK(clt_mul(a, b, &r)); break;
        case 2: CHECK(clt_div(a, b, &r)); break;
        default: CHECK(clt_exp(b, &r)); break;
        }
        uint16_t *g = read_bits(r);
        for (int i = 0; i < N; i++) {
            double xa = host_b2d(host_f2b(x[i])), yb = host_b2d(host_f2b(y[i]));
            double want = op == 0 ? xa + yb : op == 1 ? xa * yb : op == 2 ? xa / yb : exp(yb);
            double got = host_b2d(g[i]);
            if (isnan(want)) {
                cr_assert(isnan(got), "op %d [%d]", op, i);
                continue;
            }
            uint16_t w = host_f2b((float)want);
            cr_assert(g[i] == w || (isfinite(got) && abs((int)g[i] - (int)w) <= 1),
                      "op %d [%d]: %g, want %g", op, i, got, round_b(want));
        }
        /* 3e38 * 2 overflows to inf, as torch */
        if (op == 1)
            cr_assert(isinf(host_b2d(g[2])));
        free(g);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* Sums accumulate in float32: 4096 ones give 4096 (a bfloat16 running sum
 * would stop at 256); a mean of 1e30s stays 1e30; a product K = 2048 of
 * random values matches the double product rounded. */
Test(bfloat16, reductions_and_products_accumulate_in_float32)
{
    clt_device *dev = get_device("cpu:0");
    enum { N = 4096 };
    static float ones[N];
    for (int i = 0; i < N; i++)
        ones[i] = 1.0f;
    int64_t n = N, sh2[2] = {64, 64};
    clt_tensor *o = bf16_of(dev, 1, &n, ones), *o2, *s, *sd;
    CHECK(clt_sum(o, &s));
    double v = 0;
    CHECK(clt_tensor_item(s, &v));
    cr_assert_eq(clt_tensor_dtype(s), CLT_BFLOAT16);
    cr_assert_eq(v, 4096.0);
    CHECK(clt_view(o, 2, sh2, &o2));
    CHECK(clt_sum_dim(o2, 0, 0, &sd));
    uint16_t *g = read_bits(sd);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(host_b2d(g[i]), 64.0);
    free(g);
    clt_tensor *big, *m;
    CHECK(clt_full(dev, CLT_BFLOAT16, 2, sh2, 1e30, &big));
    CHECK(clt_mean(big, &m));
    CHECK(clt_tensor_item(m, &v));
    cr_assert_eq(v, round_b(1e30));

    enum { M = 5, K = 2048, P = 3 };
    static float av[M * K], bv[K * P];
    uint32_t st = 9;
    for (int i = 0; i < M * K; i++)
        av[i] = (float)round_b(((double)(lcg(&st) % 2001) - 1000.0) / 1000.0);
    for (int i = 0; i < K * P; i++)
        bv[i] = (float)round_b(((double)(lcg(&st) % 2001) - 1000.0) / 1000.0);
    int64_t sa[2] = {M, K}, sb[2] = {K, P};
    clt_tensor *A = bf16_of(dev, 2, sa, av), *B = bf16_of(dev, 2, sb, bv), *C;
    CHECK(clt_matmul(A, B, &C));
    g = read_bits(C);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < P; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                want += (double)av[i * K + k] * bv[k * P + j];
                mag += fabs((double)av[i * K + k] * bv[k * P + j]);
            }
            double got = host_b2d(g[i * P + j]);
            /* one bfloat16 rounding plus float32 accumulation error */
            cr_assert(fabs(got - want) <= 0x1p-8 * fabs(want) + 1e-5 * mag,
                      "C[%d][%d] = %g, want %g", i, j, got, want);
        }
    free(g);
    clt_tensor *ts[] = {o, o2, s, sd, big, m, A, B, C};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* The 16-wide vector paths across inner positions (and their tails): a
 * cumulative sum and a max down the columns of [40, 37], each against the
 * host's float32 running sum rounded per element. */
Test(bfloat16, column_scans_and_max)
{
    clt_device *dev = get_device("cpu:0");
    enum { R = 40, C = 37 };
    static float x[R * C];
    uint32_t s = 17;
    for (int i = 0; i < R * C; i++)
        x[i] = (float)round_b(((double)(lcg(&s) % 2001) - 1000.0) / 100.0);
    int64_t sh[2] = {R, C};
    clt_tensor *a = bf16_of(dev, 2, sh, x), *cs, *mx, *mi;
    CHECK(clt_cumsum(a, 0, &cs));
    CHECK(clt_max_dim(a, 0, 0, &mx, &mi));
    uint16_t *g = read_bits(cs), *gm = read_bits(mx);
    for (int c = 0; c < C; c++) {
        float acc = 0, best = -INFINITY;
        for (int r = 0; r < R; r++) {
            acc += x[r * C + c];
            best = fmaxf(best, x[r * C + c]);
            cr_assert_eq(g[r * C + c], host_f2b(acc), "cumsum[%d][%d] %g, want %g", r, c,
                         host_b2d(g[r * C + c]), round_b(acc));
        }
        cr_assert_eq(host_b2d(gm[c]), (double)best, "max[%d]", c);
    }
    free(g);
    free(gm);
    clt_tensor *ts[] = {a, cs, mx, mi};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* softmax of large logits: shifted by the maximum in float, each row's
 * values the host's rounded, in bfloat16. */
Test(bfloat16, softmax_rows)
{
    clt_device *dev = get_device("cpu:0");
    enum { R = 3, C = 37 };
    static float x[R * C];
    uint32_t s = 5;
    for (int i = 0; i < R * C; i++)
        x[i] = (float)round_b(((double)(lcg(&s) % 2001) - 1000.0) / 50.0);
    int64_t sh[2] = {R, C};
    clt_tensor *a = bf16_of(dev, 2, sh, x), *sm;
    CHECK(clt_softmax(a, 1, &sm));
    uint16_t *g = read_bits(sm);
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < C; c++)
            mx = fmax(mx, x[r * C + c]);
        for (int c = 0; c < C; c++)
            sum += exp(x[r * C + c] - mx);
        for (int c = 0; c < C; c++) {
            double want = exp(x[r * C + c] - mx) / sum, got = host_b2d(g[r * C + c]);
            cr_assert(fabs(got - want) <= 0x1p-8 * want + 1e-30, "[%d][%d] %g, want %g", r, c,
                      got, want);
        }
    }
    free(g);
    clt_tensor_free(a);
    clt_tensor_free(sm);
}

/* Printing as torch: the values bfloat16 holds, in Python's repr. */
Test(bfloat16, format)
{
    clt_device *dev = get_device("cpu:0");
    const float v[4] = {1.0f, 2.5f, 3e38f, NAN};
    int64_t n = 4;
    clt_tensor *t = bf16_of(dev, 1, &n, v);
    char *s = NULL;
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[1.0, 2.5, 3.00405527047391e+38, nan]"); /* torch's tolist() */
    clt_free(s);
    CHECK(clt_tensor_repr(t, &s));
    cr_assert_str_eq(s, "tensor([1.0000e+00, 2.5000e+00, 3.0041e+38,        nan], "
                        "dtype=torch.bfloat16)");
    clt_free(s);
    clt_tensor_free(t);
}

/* safetensors "BF16" and DLPack kDLBfloat keep the bits; .npy refuses. */
Test(bfloat16, files_and_dlpack)
{
    clt_device *dev = get_device("cpu:0");
    const uint16_t bits[5] = {0x3f80, 0x7fc0, 0xff80, 0x0001, 0x7f7f};
    int64_t n = 5;
    clt_tensor *t;
    CHECK(clt_tensor_from_host(dev, CLT_BFLOAT16, 1, &n, bits, &t));
    char path[] = "/tmp/clt_bf16_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    clt_named_tensor nt = {"w", t};
    CHECK(clt_save_safetensors(path, &nt, 1));
    FILE *f = fopen(path, "rb");
    char buf[256] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cr_assert(got > 8 && strstr(buf + 8, "\"BF16\"") != NULL, "%s", buf + 8);
    clt_named_tensor *back = NULL;
    size_t nb = 0;
    CHECK(clt_load_safetensors(path, dev, &back, &nb));
    cr_assert_eq(nb, 1);
    uint16_t *g = read_bits(back[0].tensor);
    cr_assert(memcmp(g, bits, sizeof bits) == 0);
    free(g);
    clt_named_tensors_free(back, nb);

    clt_status st = clt_save_npy(path, t);
    cr_assert_eq(st, CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert(strstr(clt_last_error(), "bfloat16") != NULL, "%s", clt_last_error());
    remove(path);

    DLManagedTensor *dl = NULL;
    CHECK(clt_to_dlpack(t, &dl));
    cr_assert_eq(dl->dl_tensor.dtype.code, kDLBfloat);
    cr_assert_eq(dl->dl_tensor.dtype.bits, 16);
    cr_assert(memcmp(dl->dl_tensor.data, bits, sizeof bits) == 0);
    clt_tensor *t2;
    CHECK(clt_from_dlpack(dev, dl, &t2));
    g = read_bits(t2);
    cr_assert(memcmp(g, bits, sizeof bits) == 0);
    free(g);
    dl->deleter(dl);
    clt_tensor_free(t2);
    clt_tensor_free(t);
}

/* Ops without a bfloat16 path refuse it, with *out NULL and a message
 * naming the dtype, as torch does for low precision in linalg and fft. */
Test(bfloat16, refused_ops)
{
    clt_device *dev = get_device("cpu:0");
    int64_t sh[2] = {3, 3};
    clt_tensor *a, *r = (clt_tensor *)0x1;
    CHECK(clt_full(dev, CLT_BFLOAT16, 2, sh, 1.0, &a));
    cr_assert_eq(clt_linalg_inv(a, &r), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "bfloat16") != NULL, "%s", clt_last_error());
    r = (clt_tensor *)0x1;
    cr_assert_eq(clt_fft_fft(a, -1, -1, NULL, &r), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "bfloat16") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_autocast_enter(dev, CLT_INT32), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "bfloat16") != NULL, "%s", clt_last_error());
    clt_tensor_free(a);
}

/* One training step of a linear layer under autocast to bfloat16, as
 * torch.autocast("cpu", dtype=torch.bfloat16): float32 master weights,
 * the product in bfloat16, the loss 0.5 * sum(y^2) on y widened to
 * float32; the gradient reaches the float32 weight through the recorded
 * casts, equal to the host's x^T-product of the rounded operands; then
 * an SGD step moves the weight by lr times it, and a few steps lower the
 * loss. */
Test(bfloat16, autocast_training_step)
{
    clt_device *dev = get_device("cpu:0");
    enum { B = 8, I = 5, O = 3 };
    static float xv[B * I], wv[O * I];
    uint32_t s = 21;
    for (int i = 0; i < B * I; i++)
        xv[i] = (float)(((double)(lcg(&s) % 2001) - 1000.0) / 1000.0);
    for (int i = 0; i < O * I; i++)
        wv[i] = (float)(((double)(lcg(&s) % 2001) - 1000.0) / 2000.0);
    int64_t sx[2] = {B, I}, sw[2] = {O, I};
    clt_tensor *x, *w;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sx, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sw, wv, &w));
    CHECK(clt_set_requires_grad(w, 1));
    clt_sgd_opts so = {0.05, 0, 0, 0, 0};
    clt_optimizer *opt;
    CHECK(clt_sgd(&w, 1, &so, &opt));
    double first = 0, last = 0;
    for (int step = 0; step < 5; step++) {
        clt_tensor *wt, *y, *y32, *sq, *loss, *half;
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_autocast_enter(dev, CLT_BFLOAT16));
        CHECK(clt_transpose(w, 0, 1, &wt));
        CHECK(clt_matmul(x, wt, &y));
        CHECK(clt_autocast_exit());
        cr_assert_eq(clt_tensor_dtype(y), CLT_BFLOAT16);
        CHECK(clt_to_dtype(y, CLT_FLOAT32, &y32));
        CHECK(clt_mul(y32, y32, &sq));
        CHECK(clt_sum(sq, &loss));
        CHECK(clt_mul_scalar(loss, 0.5, &half));
        double l = 0;
        CHECK(clt_tensor_item(half, &l));
        CHECK(clt_backward(half, NULL, 0));
        clt_tensor *gr = NULL;
        CHECK(clt_grad(w, &gr));
        cr_assert_not_null(gr);
        cr_assert_eq(clt_tensor_dtype(gr), CLT_FLOAT32);
        float gv[O * I], wb[O * I], wa[O * I];
        CHECK(clt_tensor_read(gr, gv, sizeof gv));
        CHECK(clt_tensor_read(w, wb, sizeof wb));
        if (step == 0) {
            /* y = bf16(x_b w_b^T); dW = bf16(y^T x_b) */
            uint16_t *yb = read_bits(y);
            for (int o = 0; o < O; o++)
                for (int i = 0; i < I; i++) {
                    double want = 0;
                    for (int b = 0; b < B; b++)
                        want += host_b2d(yb[b * O + o]) * round_b(xv[b * I + i]);
                    cr_assert(fabs(gv[o * I + i] - want) <= 0x1p-7 * fabs(want) + 1e-3,
                              "dW[%d][%d] = %g, want %g", o, i, gv[o * I + i], want);
                }
            for (int o = 0; o < O; o++)
                for (int b = 0; b < B; b++) {
                    double want = 0;
                    for (int i = 0; i < I; i++)
                        want += round_b(xv[b * I + i]) * round_b(wv[o * I + i]);
                    cr_assert(fabs(host_b2d(yb[b * O + o]) - want) <= 0x1p-8 * fabs(want) + 1e-6,
                              "y[%d][%d]", b, o);
                }
            free(yb);
            first = l;
        }
        last = l;
        CHECK(clt_optimizer_step(opt));
        CHECK(clt_tensor_read(w, wa, sizeof wa));
        for (int k = 0; k < O * I; k++)
            cr_assert(fabsf(wa[k] - (wb[k] - 0.05f * gv[k])) <= 1e-6f, "step %d w[%d]", step, k);
        clt_tensor *ts[] = {wt, y, y32, sq, loss, half, gr};
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
            clt_tensor_free(ts[k]);
    }
    cr_assert(last < 0.8 * first, "loss %g -> %g", first, last);
    clt_optimizer_free(opt);
    clt_tensor_free(x);
    clt_tensor_free(w);
}
