/* test_reduce_more.c: logsumexp, cumsum, any and all (reduce.h) against
 * host references computed in double: every dim of 3-D tensors, strided
 * inputs, empty dims, slices longer than a work-group, float, integer and
 * bool dtypes, PyTorch 1.13's edge cases (values from torch), gradients
 * against finite differences, bad input, and cumsum's bits across devices. */
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"

static int64_t numel(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    return n;
}

/* [outer, R, inner] around dim d of shape. */
static void split(int nd, const int64_t *shape, int d, int64_t *outer, int64_t *R,
                  int64_t *inner)
{
    *outer = *inner = 1;
    *R = nd ? shape[d] : 1;
    for (int i = 0; i < nd; i++) {
        if (i < d)
            *outer *= shape[i];
        if (i > d)
            *inner *= shape[i];
    }
}

/* Values in [-10, 10] with three decimals (float32 holds them closely),
 * or small integers for the integer dtypes. */
static double *data(size_t n, unsigned seed, int integer)
{
    double *h = malloc((n ? n : 1) * sizeof *h);
    float *f = malloc((n ? n : 1) * sizeof *f);
    cr_assert(h && f);
    fill_random(f, n, seed);
    for (size_t i = 0; i < n; i++)
        h[i] = integer ? (double)((int)f[i] % 4) : (double)f[i];
    free(f);
    return h;
}

/* ---- cumsum ------------------------------------------------------------------------- */

/* The reference: each slice summed in order in double, stored as dt rounds
 * it (float32: the float nearest the double sum, PyTorch's CPU result). */
static void check_cumsum(const clt_tensor *a, const double *h, int nd, const int64_t *shape,
                         int dim, clt_dtype dt)
{
    clt_tensor *r = NULL;
    CHECK(clt_cumsum(a, dim, &r));
    int d = nd ? (dim < 0 ? dim + nd : dim) : 0;
    clt_dtype want_dt = (dt == CLT_FLOAT32 || dt == CLT_FLOAT64) ? dt : CLT_INT64;
    cr_assert_eq(clt_tensor_dtype(r), want_dt, "%s cumsum gives %s", clt_dtype_name(dt),
                 clt_dtype_name(clt_tensor_dtype(r)));
    assert_shape(r, nd, shape);
    double *got = read_as_f64(r);
    int64_t outer, R, inner;
    split(nd, shape, d, &outer, &R, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double s = 0;
            for (int64_t k = 0; k < R; k++) {
                int64_t at = (o * R + k) * inner + i;
                s += h[at];
                double want = dt == CLT_FLOAT32 ? (double)(float)s : s;
                cr_assert(got[at] == want,
                          "%s cumsum dim %d of %lld x %lld x %lld, element %lld: %.17g, want "
                          "%.17g",
                          clt_dtype_name(dt), dim, (long long)outer, (long long)R,
                          (long long)inner, (long long)at, got[at], want);
            }
        }
    free(got);
    clt_tensor_free(r);
}

static void cumsum_every_dim(clt_dtype dt, int nd, const int64_t *shape)
{
    clt_device *dev = get_device("cpu");
    size_t n = (size_t)numel(nd, shape);
    int integer = dt != CLT_FLOAT32 && dt != CLT_FLOAT64;
    double *h = data(n, 17u + (unsigned)n, integer);
    if (dt == CLT_BOOL || dt == CLT_UINT8)
        for (size_t i = 0; i < n; i++)
            h[i] = fabs(h[i]) > 1 ? (dt == CLT_BOOL ? 1 : 200) : 0;
    clt_tensor *a = tensor_of(dev, dt, nd, shape, h);
    for (int dim = -(nd ? nd : 1); dim < (nd ? nd : 1); dim++)
        check_cumsum(a, h, nd, shape, dim, dt);
    clt_tensor_free(a);
    free(h);
}

Test(cumsum, every_dim_every_dtype)
{
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};
    const int64_t s3[3] = {3, 4, 5}, s1[1] = {7};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        cumsum_every_dim(dts[k], 3, s3);
        cumsum_every_dim(dts[k], 1, s1);
        cumsum_every_dim(dts[k], 0, NULL);
    }
}

/* More slices than a work-group takes, slices longer than one, and dims
 * without elements. */
Test(cumsum, sizes_and_empty_dims)
{
    const int64_t shapes[][3] = {{3, 5000, 1}, {5000, 70, 1}, {2, 3000, 33}, {0, 3, 1},
                                 {3, 0, 1},    {4, 3, 0}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        cumsum_every_dim(CLT_FLOAT32, 3, shapes[k]);
        cumsum_every_dim(CLT_INT64, 3, shapes[k]);
    }
}

/* Strided inputs: a permuted and a sliced view against the reference of
 * their contiguous copies. */
Test(cumsum, strided_input)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {4, 6, 5};
    size_t n = 120;
    double *h = data(n, 5, 0);
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 3, shape, h), *v = NULL, *c = NULL;
    int perm[3] = {2, 0, 1};
    for (int w = 0; w < 2; w++) {
        if (w == 0)
            CHECK(clt_permute(a, 3, perm, &v));
        else
            CHECK(clt_slice(a, 1, 1, 6, 2, &v));
        CHECK(clt_contiguous(v, &c));
        double *hc = read_as_f64(c);
        for (int dim = 0; dim < 3; dim++)
            check_cumsum(v, hc, 3, clt_tensor_shape(c), dim, CLT_FLOAT32);
        free(hc);
        clt_tensor_free(v);
        clt_tensor_free(c);
    }
    clt_tensor_free(a);
    free(h);
}

/* 2^20 float32 0.1s: PyTorch's CPU kernel adds float32 in double, and so
 * does cumsum where the device has float64: every element is the float32
 * nearest the float64 running sum, which is exact here (each partial sum
 * needs at most 24 + 20 bits), so within half a float32 ulp of the true
 * value.  A float32 running sum would be off by about 1e3 ulps at the end. */
Test(cumsum, long_float32_within_half_an_ulp)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("the device has no float64");
    int64_t n = 1 << 20;
    float *h = malloc((size_t)n * sizeof *h);
    cr_assert_not_null(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = 0.1f;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    CHECK(clt_cumsum(a, 0, &r));
    float *got = read_f32(r);
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)h[i];
        cr_assert(got[i] == (float)s, "element %lld: %.9g, want %.9g", (long long)i,
                  (double)got[i], (double)(float)s);
        cr_assert(fabs(got[i] - s) <= ldexp(fabs(s), -24));
    }
    free(got);
    free(h);
    clt_tensor_free(a);
    clt_tensor_free(r);
}

/* PyTorch 1.13: inf then -inf gives NaN from there on; a 0-d tensor is its
 * own cumsum over dim 0 or -1. */
Test(cumsum, infinities_and_scalars)
{
    clt_device *dev = get_device("cpu");
    double h[4] = {1, INFINITY, -INFINITY, 2};
    int64_t n = 4;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 1, &n, h), *r = NULL;
    CHECK(clt_cumsum(a, 0, &r));
    double *got = read_as_f64(r);
    cr_assert(got[0] == 1 && got[1] == INFINITY && isnan(got[2]) && isnan(got[3]));
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
    double x = 2.5;
    a = tensor_of(dev, CLT_FLOAT32, 0, NULL, &x);
    for (int dim = -1; dim <= 0; dim++) {
        CHECK(clt_cumsum(a, dim, &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        got = read_as_f64(r);
        cr_assert_eq(got[0], 2.5);
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
}

/* The bytes of cumsum and logsumexp over both dims of one long row, many
 * short ones and columns. */
static void cumsum_bits(clt_device *dev, const float *h, int64_t n, unsigned char *out,
                        size_t *len)
{
    const int64_t shapes[][2] = {{1, n}, {n / 50, 50}, {n / 1000, 1000}};
    *len = 0;
    for (size_t k = 0; k < 3; k++)
        for (int dim = 0; dim < 2; dim++) {
            clt_tensor *a = NULL, *r = NULL;
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shapes[k], h, &a));
            for (int op = 0; op < 2; op++) {
                CHECK(op ? clt_logsumexp(a, dim, 0, &r) : clt_cumsum(a, dim, &r));
                size_t nb = clt_tensor_nbytes(r);
                CHECK(clt_tensor_read(r, out + *len, nb));
                *len += nb;
                clt_tensor_free(r);
            }
            clt_tensor_free(a);
        }
}

Test(cumsum, bit_identical_across_devices_with_logsumexp)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    int64_t n = 200000;
    float *h = malloc((size_t)n * sizeof *h);
    unsigned char *b0 = malloc((size_t)n * 4 * 8), *b1 = malloc((size_t)n * 4 * 8);
    cr_assert(h && b0 && b1);
    fill_random(h, (size_t)n, 99);
    for (int64_t i = 0; i < n; i++) /* long mantissas: the order shows */
        h[i] = h[i] * 1.0001f + 1e-3f;
    size_t l0 = 0, l1 = 0;
    cumsum_bits(d0, h, n, b0, &l0);
    cumsum_bits(d1, h, n, b1, &l1);
    cr_assert_eq(l0, l1);
    cr_assert(memcmp(b0, b1, l0) == 0, "cumsum or logsumexp differs between devices");
    /* the GPU-style kernel (one line a work-item) on the CPU device */
    setenv("CLTENSOR_REDUCE_STYLE", "gpu", 1);
    cumsum_bits(d0, h, n, b1, &l1);
    unsetenv("CLTENSOR_REDUCE_STYLE");
    cr_assert_eq(l0, l1);
    cr_assert(memcmp(b0, b1, l0) == 0, "cumsum or logsumexp differs between kernel styles");
    free(h);
    free(b0);
    free(b1);
}

/* ---- logsumexp ---------------------------------------------------------------------- */

/* log(sum(exp(x - m))) + m in double, m the slice's largest (0 when
 * infinite), as torch computes it. */
static double ref_lse(const double *h, int64_t o, int64_t R, int64_t inner, int64_t i)
{
    double m = -INFINITY;
    int nan = 0;
    for (int64_t k = 0; k < R; k++) {
        double v = h[(o * R + k) * inner + i];
        nan |= isnan(v);
        m = v > m ? v : m;
    }
    if (nan)
        return NAN;
    if (isinf(m))
        m = 0;
    double s = 0;
    for (int64_t k = 0; k < R; k++)
        s += exp(h[(o * R + k) * inner + i] - m);
    return log(s) + m;
}

static void check_lse(const clt_tensor *a, const double *h, int nd, const int64_t *shape,
                      int dim, int keepdim, clt_dtype dt)
{
    clt_tensor *r = NULL;
    CHECK(clt_logsumexp(a, dim, keepdim, &r));
    clt_dtype want_dt = dt == CLT_FLOAT64 ? CLT_FLOAT64 : CLT_FLOAT32;
    cr_assert_eq(clt_tensor_dtype(r), want_dt);
    int d = nd ? (dim < 0 ? dim + nd : dim) : 0;
    int64_t outer, R, inner, oshape[CLT_MAX_DIMS];
    int ond = 0;
    for (int k = 0; k < nd; k++)
        if (k != d || keepdim)
            oshape[ond++] = k == d ? 1 : shape[k];
    assert_shape(r, ond, oshape);
    split(nd, shape, d, &outer, &R, &inner);
    double *got = read_as_f64(r), rtol = want_dt == CLT_FLOAT64 ? 1e-14 : 2e-6;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double want = ref_lse(h, o, R, inner, i);
            cr_assert(close_enough(got[o * inner + i], want, rtol, rtol),
                      "%s logsumexp dim %d of %lld x %lld x %lld at %lld: %.17g, want %.17g",
                      clt_dtype_name(dt), dim, (long long)outer, (long long)R, (long long)inner,
                      (long long)(o * inner + i), got[o * inner + i], want);
        }
    free(got);
    clt_tensor_free(r);
}

static void lse_every_dim(clt_dtype dt, int nd, const int64_t *shape, double scale)
{
    clt_device *dev = get_device("cpu");
    size_t n = (size_t)numel(nd, shape);
    int integer = dt != CLT_FLOAT32 && dt != CLT_FLOAT64;
    double *h = data(n, 3u + (unsigned)n, integer);
    for (size_t i = 0; i < n && !integer; i++)
        h[i] = (double)(float)(h[i] * scale);
    if (dt == CLT_BOOL)
        for (size_t i = 0; i < n; i++)
            h[i] = h[i] != 0;
    clt_tensor *a = tensor_of(dev, dt, nd, shape, h);
    for (int dim = -(nd ? nd : 1); dim < (nd ? nd : 1); dim++)
        for (int keep = 0; keep < 2; keep++)
            check_lse(a, h, nd, shape, dim, keep, dt);
    /* every element */
    clt_tensor *r = NULL;
    CHECK(clt_logsumexp_all(a, &r));
    cr_assert_eq(clt_tensor_ndim(r), 0);
    double *got = read_as_f64(r), want = ref_lse(h, 0, (int64_t)n, 1, 0);
    cr_assert(close_enough(got[0], want, 2e-6, 2e-6), "all: %.17g, want %.17g", got[0], want);
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(h);
}

Test(logsumexp, every_dim_every_dtype)
{
    const int64_t s3[3] = {3, 4, 5}, s1[1] = {9}, big[2] = {3, 5000}, col[2] = {5000, 3};
    const int64_t e0[2] = {0, 3}, e1[2] = {3, 0};
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_BOOL};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        lse_every_dim(dts[k], 3, s3, 1);
        lse_every_dim(dts[k], 1, s1, 1);
        lse_every_dim(dts[k], 0, NULL, 1);
    }
    /* large values: exp alone would overflow */
    lse_every_dim(CLT_FLOAT32, 3, s3, 100);
    lse_every_dim(CLT_FLOAT64, 3, s3, 100);
    lse_every_dim(CLT_FLOAT32, 2, big, 1);
    lse_every_dim(CLT_FLOAT32, 2, col, 1);
    lse_every_dim(CLT_FLOAT32, 2, e0, 1);
    lse_every_dim(CLT_FLOAT32, 2, e1, 1);
}

/* torch.logsumexp(x, 1) of these rows in PyTorch 1.13: [-inf, inf, nan,
 * inf, inf, 1000.6931...]; over dim 0 of [0, 3]: [-inf, -inf, -inf]. */
Test(logsumexp, infinities_nan_and_empty)
{
    clt_device *dev = get_device("cpu");
    double h[12] = {-INFINITY, -INFINITY, INFINITY, 1,        NAN,  1,
                    INFINITY,  -INFINITY, INFINITY, INFINITY, 1000, 1000};
    int64_t shape[2] = {6, 2};
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 2, shape, h), *r = NULL;
    CHECK(clt_logsumexp(a, 1, 0, &r));
    double *got = read_as_f64(r);
    cr_assert(got[0] == -INFINITY && got[1] == INFINITY && isnan(got[2]) &&
              got[3] == INFINITY && got[4] == INFINITY);
    cr_assert(fabs(got[5] - (1000 + log(2.0))) < 1e-4, "%.9g", got[5]);
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
    int64_t es[2] = {0, 3};
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, es, &a));
    CHECK(clt_logsumexp(a, 0, 0, &r));
    got = read_as_f64(r);
    cr_assert_eq(clt_tensor_numel(r), 3);
    for (int k = 0; k < 3; k++)
        cr_assert(got[k] == -INFINITY);
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* ---- any and all -------------------------------------------------------------------- */

static void check_any_all(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                          const double *h)
{
    clt_tensor *a = tensor_of(dev, dt, nd, shape, h), *r = NULL;
    clt_dtype odt = dt == CLT_UINT8 ? CLT_UINT8 : CLT_BOOL;
    size_t n = (size_t)numel(nd, shape);
    for (int which = 0; which < 2; which++) {
        /* every element */
        CHECK(which ? clt_all(a, &r) : clt_any(a, &r));
        cr_assert_eq(clt_tensor_dtype(r), odt);
        cr_assert_eq(clt_tensor_ndim(r), 0);
        int want = which;
        for (size_t i = 0; i < n; i++)
            want = which ? want && h[i] != 0 : want || h[i] != 0;
        double *got = read_as_f64(r);
        cr_assert_eq(got[0], (double)want, "%s %s", clt_dtype_name(dt), which ? "all" : "any");
        free(got);
        clt_tensor_free(r);
        for (int dim = -(nd ? nd : 1); dim < (nd ? nd : 1); dim++)
            for (int keep = 0; keep < 2; keep++) {
                CHECK(which ? clt_all_dim(a, dim, keep, &r) : clt_any_dim(a, dim, keep, &r));
                cr_assert_eq(clt_tensor_dtype(r), odt);
                cr_assert_eq(clt_tensor_ndim(r), nd ? nd - !keep : 0);
                int d = nd ? (dim < 0 ? dim + nd : dim) : 0;
                int64_t outer, R, inner;
                split(nd, shape, d, &outer, &R, &inner);
                got = read_as_f64(r);
                for (int64_t o = 0; o < outer; o++)
                    for (int64_t i = 0; i < inner; i++) {
                        int w = which;
                        for (int64_t k = 0; k < R; k++) {
                            double v = h[(o * R + k) * inner + i];
                            w = which ? w && v != 0 : w || v != 0;
                        }
                        cr_assert_eq(got[o * inner + i], (double)w, "%s %s_dim %d at %lld",
                                     clt_dtype_name(dt), which ? "all" : "any", dim,
                                     (long long)(o * inner + i));
                    }
                free(got);
                clt_tensor_free(r);
            }
    }
    clt_tensor_free(a);
}

Test(any_all, every_dim_every_dtype)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};
    const int64_t s3[3] = {3, 4, 5}, big[2] = {3, 5000}, e0[2] = {0, 3}, e1[2] = {3, 0};
    double h[15000];
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        /* mostly zeros, and rows of all zeros and of no zeros */
        for (int i = 0; i < 60; i++)
            h[i] = (i % 7 == 0 || i >= 40) ? 1 : 0;
        for (int i = 20; i < 40; i++)
            h[i] = 0;
        check_any_all(dev, dts[k], 3, s3, h);
        check_any_all(dev, dts[k], 0, NULL, h + 41);
        check_any_all(dev, dts[k], 0, NULL, h + 21);
        for (int i = 0; i < 15000; i++)
            h[i] = i == 12345 || i < 5000 ? 1 : 0;
        check_any_all(dev, dts[k], 2, big, h);
        check_any_all(dev, dts[k], 2, e0, h);
        check_any_all(dev, dts[k], 2, e1, h);
    }
    /* NaN is not zero; -0.0 is */
    double sp[4] = {NAN, 0, -0.0, 2};
    int64_t s22[2] = {2, 2};
    check_any_all(dev, CLT_FLOAT32, 2, s22, sp);
}

Test(any_all, strided_input)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {4, 6, 5};
    double h[120];
    for (int i = 0; i < 120; i++)
        h[i] = i % 11 == 0 ? 0 : 1;
    clt_tensor *a = tensor_of(dev, CLT_INT32, 3, shape, h), *v = NULL, *c = NULL;
    int perm[3] = {2, 0, 1};
    CHECK(clt_permute(a, 3, perm, &v));
    CHECK(clt_contiguous(v, &c));
    double *hc = read_as_f64(c);
    clt_tensor *r = NULL, *rc = NULL;
    for (int dim = 0; dim < 3; dim++) {
        CHECK(clt_all_dim(v, dim, 0, &r));
        CHECK(clt_all_dim(c, dim, 0, &rc));
        double *g = read_as_f64(r), *gc = read_as_f64(rc);
        int64_t n = clt_tensor_numel(rc), ones = 0;
        for (int64_t i = 0; i < n; i++) {
            cr_assert_eq(g[i], gc[i]);
            ones += gc[i] != 0;
        }
        cr_assert(ones > 0 && ones < n, "a case with both answers");
        free(g);
        free(gc);
        clt_tensor_free(r);
        clt_tensor_free(rc);
    }
    free(hc);
    clt_tensor_free(v);
    clt_tensor_free(c);
    clt_tensor_free(a);
}

/* ---- gradients ---------------------------------------------------------------------- */

typedef struct {
    int op; /* 0 logsumexp, 1 logsumexp_all, 2 cumsum */
    int dim, keep;
} gcase;

static clt_status call_case(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gcase *c = ctx;
    if (c->op == 0)
        return clt_logsumexp(in[0], c->dim, c->keep, out);
    if (c->op == 1)
        return clt_logsumexp_all(in[0], out);
    return clt_cumsum(in[0], c->dim, out);
}

Test(gradients, logsumexp_and_cumsum)
{
    clt_device *dev = get_device("cpu");
    double x[24];
    for (int i = 0; i < 24; i++)
        x[i] = sin(1.7 * i) * 3;
    gc_in in3 = {3, {2, 3, 4}, x, 1}, in0 = {0, {0}, x, 1}, in1 = {1, {5}, x, 1};
    const gcase cases[] = {{0, 0, 0}, {0, 1, 1}, {0, -1, 0}, {1, 0, 0}, {2, 0, 0},
                           {2, 1, 0}, {2, -1, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gradcheck(dev, call_case, &cases[k], 1, &in3);
        if (cases[k].dim == 1)
            continue;
        gradcheck(dev, call_case, &cases[k], 1, &in1);
        gradcheck(dev, call_case, &cases[k], 1, &in0);
    }
}

/* The gradient of cumsum along dim 0 of [40, 37] (blocks of 16 columns
 * and the 5 left over) is the cumulative sum of the weights from the end,
 * added in double here. */
Test(gradients, cumsum_columns_reversed)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {40, 37};
    double *h = data(40 * 37, 8, 0), *w = data(40 * 37, 9, 0);
    clt_tensor *x = NULL, *wt = NULL, *y = NULL, *p = NULL, *l = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, shape, h, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, shape, w, &wt));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_cumsum(x, 0, &y));
    CHECK(clt_mul(y, wt, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(x, &g));
    double *got = read_as_f64(g);
    for (int64_t j = 0; j < 37; j++) {
        double s = 0;
        for (int64_t k = 39; k >= 0; k--) {
            s += w[k * 37 + j];
            cr_assert(got[k * 37 + j] == s, "[%lld, %lld]: %.17g, want %.17g", (long long)k,
                      (long long)j, got[k * 37 + j], s);
        }
    }
    free(got);
    free(h);
    free(w);
    clt_tensor *all[] = {x, wt, y, p, l, g};
    for (size_t k = 0; k < 6; k++)
        clt_tensor_free(all[k]);
}

/* ---- errors ------------------------------------------------------------------------- */

Test(errors, dims_and_null)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 4};
    clt_tensor *a = NULL, *r = (clt_tensor *)1;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, shape, &a));
    assert_error(clt_cumsum(a, 3, &r), CLT_ERR_DIM_OUT_OF_RANGE,
                 "expected to be in range of [-3, 2], but got 3");
    cr_assert_null(r);
    names_only("clt_cumsum");
    r = (clt_tensor *)1;
    assert_error(clt_logsumexp(a, -4, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE, "but got -4");
    cr_assert_null(r);
    names_only("clt_logsumexp");
    r = (clt_tensor *)1;
    assert_error(clt_any_dim(a, 5, 1, &r), CLT_ERR_DIM_OUT_OF_RANGE, "but got 5");
    cr_assert_null(r);
    names_only("clt_any_dim");
    r = (clt_tensor *)1;
    assert_error(clt_all_dim(a, -5, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE, "but got -5");
    cr_assert_null(r);
    names_only("clt_all_dim");
    assert_error(clt_cumsum(NULL, 0, &r), CLT_ERR_NULL_ARGUMENT, "'a' is NULL");
    names_only("clt_cumsum");
    assert_error(clt_logsumexp_all(NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    names_only("clt_logsumexp_all");
    assert_error(clt_any(NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    names_only("clt_any");
    assert_error(clt_all(a, NULL), CLT_ERR_NULL_ARGUMENT, "'out' is NULL");
    names_only("clt_all");
    clt_tensor_free(a);
}
