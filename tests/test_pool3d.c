/* test_pool3d.c: max_pool3d (with indices), avg_pool3d, adaptive_avg_pool1d
 * and 3d, adaptive_max_pool3d, max_unpool3d and their layers, the 3-D
 * norm layers and the padding layers: values against float64 host loops
 * over the whole 3-D window, PyTorch's tie and NaN rules, gradients by
 * finite differences in float64, and torch's errors. */
#include <math.h>
#include <string.h>

#include "gradcheck.h"

/* Values in [-3, 3), distinct (no ties for the maxima). */
static void fill_distinct(double *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (double)((seed >> 8) % 6001) / 1000.0 - 3.0 + (double)i * 1e-7;
    }
}

/* A 3-D pool's settings for the host reference. */
typedef struct ref3 {
    int64_t k[3], s[3], p[3], d[3];
    int ceil_mode, count_include_pad;
} ref3;

static int64_t ref_out(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, int ceil_mode)
{
    int64_t num = in + 2 * p - d * (k - 1) - 1;
    int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p)
        o--;
    return o;
}

/* Max (with the flat index of the first maximum in (d, h, w) order, NaN
 * the maximum) or average over each whole 3-D window of P volumes
 * [D, H, W], the divisor as PyTorch's avg_pool3d. */
static void pool3_ref(bool max, const double *x, int64_t P, const int64_t *in, const ref3 *r,
                      int64_t *o, double *y, int64_t *idx)
{
    for (int i = 0; i < 3; i++)
        o[i] = ref_out(in[i], r->k[i], r->p[i], r->s[i], max ? r->d[i] : 1, r->ceil_mode);
    int64_t V = in[0] * in[1] * in[2], n = 0;
    for (int64_t pl = 0; pl < P; pl++)
        for (int64_t a = 0; a < o[0]; a++)
            for (int64_t b = 0; b < o[1]; b++)
                for (int64_t c = 0; c < o[2]; c++, n++) {
                    int64_t st[3] = {a * r->s[0] - r->p[0], b * r->s[1] - r->p[1],
                                     c * r->s[2] - r->p[2]};
                    double m = -INFINITY, sum = 0;
                    int64_t best = -1, cnt = 0, pool = 1;
                    for (int i = 0; i < 3 && !max; i++) {
                        int64_t e = st[i] + r->k[i];
                        if (e > in[i] + r->p[i])
                            e = in[i] + r->p[i];
                        pool *= e - st[i];
                    }
                    for (int64_t u = 0; u < r->k[0]; u++)
                        for (int64_t v = 0; v < r->k[1]; v++)
                            for (int64_t w = 0; w < r->k[2]; w++) {
                                int64_t dd = st[0] + u * (max ? r->d[0] : 1);
                                int64_t hh = st[1] + v * (max ? r->d[1] : 1);
                                int64_t ww = st[2] + w * (max ? r->d[2] : 1);
                                if (dd < 0 || hh < 0 || ww < 0 || dd >= in[0] || hh >= in[1] ||
                                    ww >= in[2])
                                    continue;
                                int64_t f = (dd * in[1] + hh) * in[2] + ww;
                                double val = x[pl * V + f];
                                if (best < 0)
                                    best = f;
                                if (val > m || isnan(val)) {
                                    m = val;
                                    best = f;
                                }
                                sum += val;
                                cnt++;
                            }
                    y[n] = max ? m : sum / (double)(r->count_include_pad ? pool : cnt);
                    if (idx)
                        idx[n] = best;
                }
}

static void assert_indices(const clt_tensor *t, const int64_t *want, size_t n)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_INT64);
    cr_assert_eq(clt_tensor_numel(t), (int64_t)n);
    int64_t *got = malloc((n ? n : 1) * sizeof *got);
    CHECK(clt_tensor_read(t, got, n * sizeof *got));
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "index %zu: got %lld, want %lld", i, (long long)got[i],
                     (long long)want[i]);
    free(got);
}

static const ref3 cases[] = {
    {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, 0, 1},
    {{3, 2, 3}, {1, 2, 2}, {1, 1, 0}, {1, 1, 1}, 0, 1},
    {{3, 3, 2}, {2, 1, 3}, {1, 0, 1}, {1, 2, 1}, 1, 0},
    {{2, 3, 3}, {3, 2, 1}, {1, 1, 1}, {2, 1, 1}, 1, 1},
    {{1, 2, 3}, {1, 3, 2}, {0, 1, 1}, {1, 1, 2}, 0, 0},
};

Test(pool3d, max_and_avg_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    const int64_t in[3] = {5, 6, 7}, shape[5] = {2, 3, 5, 6, 7}, P = 6;
    size_t n = (size_t)(P * 5 * 6 * 7);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    int64_t *idx = malloc(n * sizeof *idx);
    fill_distinct(x, n, 7);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const ref3 *r = &cases[c];
        for (int dt = 0; dt < 2; dt++) {
            clt_dtype dtype = dt ? CLT_FLOAT64 : CLT_FLOAT32;
            double tol = dt ? 1e-12 : 1e-5;
            clt_tensor *t = tensor_of(dev, dtype, 5, shape, x), *out = NULL, *ix = NULL;
            int64_t o[3];
            pool3_ref(true, x, P, in, r, o, y, idx);
            size_t m = (size_t)(P * o[0] * o[1] * o[2]);
            int64_t want[5] = {2, 3, o[0], o[1], o[2]};
            CHECK(clt_max_pool3d_with_indices(t, r->k, r->s, r->p, r->d, r->ceil_mode, &out,
                                              &ix));
            assert_shape(out, 5, want);
            assert_tensor_close(out, y, m, tol, 0, "max_pool3d");
            assert_indices(ix, idx, m);
            clt_tensor_free(out);
            clt_tensor_free(ix);
            CHECK(clt_max_pool3d(t, r->k, r->s, r->p, r->d, r->ceil_mode, &out));
            assert_tensor_close(out, y, m, tol, 0, "max_pool3d");
            clt_tensor_free(out);
            pool3_ref(false, x, P, in, r, o, y, NULL);
            m = (size_t)(P * o[0] * o[1] * o[2]);
            CHECK(clt_avg_pool3d(t, r->k, r->s, r->p, r->ceil_mode, r->count_include_pad, &out));
            int64_t wa[5] = {2, 3, o[0], o[1], o[2]};
            assert_shape(out, 5, wa);
            assert_tensor_close(out, y, m, tol, tol, "avg_pool3d");
            clt_tensor_free(out);
            clt_tensor_free(t);
        }
    }
    /* int64: each window's sum divided with truncation toward zero, as torch */
    double *xi = malloc(n * sizeof *xi);
    for (size_t i = 0; i < n; i++)
        xi[i] = (double)((int)(i * 7919 % 41) - 20);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const ref3 *r = &cases[c];
        int64_t o[3];
        pool3_ref(false, xi, P, in, r, o, y, NULL);
        size_t m = (size_t)(P * o[0] * o[1] * o[2]);
        for (size_t i = 0; i < m; i++)
            y[i] = trunc(y[i]);
        clt_tensor *t = tensor_of(dev, CLT_INT64, 5, shape, xi), *out = NULL;
        CHECK(clt_avg_pool3d(t, r->k, r->s, r->p, r->ceil_mode, r->count_include_pad, &out));
        cr_assert_eq(clt_tensor_dtype(out), CLT_INT64);
        int64_t want[5] = {2, 3, o[0], o[1], o[2]};
        assert_shape(out, 5, want);
        assert_tensor_close(out, y, m, 0, 0, "avg_pool3d int64");
        clt_tensor_free(out);
        clt_tensor_free(t);
    }
    free(xi);
    /* unbatched [C, D, H, W]: the same volumes */
    const int64_t s4[4] = {6, 5, 6, 7}, k[3] = {2, 3, 2};
    ref3 r = {{2, 3, 2}, {2, 3, 2}, {0, 0, 0}, {1, 1, 1}, 0, 1};
    int64_t o[3];
    pool3_ref(true, x, P, in, &r, o, y, idx);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, s4, x), *out = NULL, *ix = NULL;
    CHECK(clt_max_pool3d_with_indices(t, k, NULL, NULL, NULL, 0, &out, &ix));
    int64_t want[4] = {6, o[0], o[1], o[2]};
    assert_shape(out, 4, want);
    assert_shape(ix, 4, want);
    assert_tensor_close(out, y, (size_t)(P * o[0] * o[1] * o[2]), 0, 0, "unbatched");
    assert_indices(ix, idx, (size_t)(P * o[0] * o[1] * o[2]));
    clt_tensor_free(out);
    clt_tensor_free(ix);
    clt_tensor_free(t);
    free(x);
    free(y);
    free(idx);
}

/* Ties go to the first maximum in (d, h, w) order, NaN wins (the last of
 * several): where the host loop over the whole window puts them. */
Test(pool3d, max_ties_and_nan_as_torch)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[5] = {1, 1, 3, 3, 3}, in[3] = {3, 3, 3};
    double x[27];
    for (int i = 0; i < 27; i++)
        x[i] = 1.0;
    x[(0 * 3 + 2) * 3 + 1] = 5.0; /* d 0, h 2 */
    x[(1 * 3 + 0) * 3 + 0] = 5.0; /* d 1, h 0: later in (d, h, w) order */
    x[(2 * 3 + 1) * 3 + 2] = 5.0;
    ref3 r = {{3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 0, 1};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            x[(0 * 3 + 1) * 3 + 2] = NAN;
            x[(1 * 3 + 0) * 3 + 1] = NAN;
        }
        double y[27];
        int64_t idx[27], o[3];
        pool3_ref(true, x, 1, in, &r, o, y, idx);
        clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 5, shape, x), *out = NULL, *ix = NULL;
        CHECK(clt_max_pool3d_with_indices(t, r.k, r.s, r.p, NULL, 0, &out, &ix));
        assert_indices(ix, idx, 27);
        double *got = read_as_f64(out);
        for (int i = 0; i < 27; i++)
            cr_assert(isnan(y[i]) ? isnan(got[i]) : got[i] == y[i], "element %d", i);
        free(got);
        clt_tensor_free(out);
        clt_tensor_free(ix);
        /* adaptive: the window of output (0, 0, 0) of size 1 is everything */
        int64_t one[3] = {1, 1, 1};
        CHECK(clt_adaptive_max_pool3d(t, one, &out, &ix));
        int64_t best = -1;
        double m = -INFINITY;
        for (int i = 0; i < 27; i++)
            if (x[i] > m || isnan(x[i]))
                m = x[i], best = i;
        assert_indices(ix, &best, 1);
        clt_tensor_free(out);
        clt_tensor_free(ix);
        clt_tensor_free(t);
    }
}

static int64_t win_start(int64_t i, int64_t size, int64_t n)
{
    return i * size / n;
}

static int64_t win_end(int64_t i, int64_t size, int64_t n)
{
    return ((i + 1) * size + n - 1) / n;
}

/* Adaptive average and max pooling of P volumes [D, H, W] to o. */
static void adaptive3_ref(const double *x, int64_t P, const int64_t *in, const int64_t *o,
                          double *avg, double *mx, int64_t *idx)
{
    int64_t V = in[0] * in[1] * in[2], n = 0;
    for (int64_t pl = 0; pl < P; pl++)
        for (int64_t a = 0; a < o[0]; a++)
            for (int64_t b = 0; b < o[1]; b++)
                for (int64_t c = 0; c < o[2]; c++, n++) {
                    double s = 0, m = -INFINITY;
                    int64_t cnt = 0, best = -1;
                    for (int64_t d = win_start(a, in[0], o[0]); d < win_end(a, in[0], o[0]); d++)
                        for (int64_t h = win_start(b, in[1], o[1]); h < win_end(b, in[1], o[1]);
                             h++)
                            for (int64_t w = win_start(c, in[2], o[2]);
                                 w < win_end(c, in[2], o[2]); w++) {
                                int64_t f = (d * in[1] + h) * in[2] + w;
                                double v = x[pl * V + f];
                                s += v;
                                cnt++;
                                if (v > m)
                                    m = v, best = f;
                            }
                    avg[n] = s / (double)cnt;
                    mx[n] = m;
                    idx[n] = best;
                }
}

Test(pool3d, adaptive_pools_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    const int64_t in[3] = {5, 4, 7}, shape[5] = {2, 2, 5, 4, 7}, P = 4;
    const int64_t outs[][3] = {{2, 3, 4}, {5, 4, 7}, {3, 1, 2}, {7, 6, 9}, {1, 1, 1}};
    double x[560], avg[4 * 7 * 6 * 9], mx[4 * 7 * 6 * 9];
    int64_t idx[4 * 7 * 6 * 9];
    fill_distinct(x, 560, 3);
    for (size_t c = 0; c < sizeof outs / sizeof *outs; c++) {
        const int64_t *o = outs[c];
        size_t m = (size_t)(P * o[0] * o[1] * o[2]);
        adaptive3_ref(x, P, in, o, avg, mx, idx);
        for (int dt = 0; dt < 2; dt++) {
            double tol = dt ? 1e-12 : 1e-5;
            clt_tensor *t = tensor_of(dev, dt ? CLT_FLOAT64 : CLT_FLOAT32, 5, shape, x);
            clt_tensor *a = NULL, *b = NULL, *ix = NULL;
            CHECK(clt_adaptive_avg_pool3d(t, o, &a));
            int64_t want[5] = {2, 2, o[0], o[1], o[2]};
            assert_shape(a, 5, want);
            assert_tensor_close(a, avg, m, tol, tol, "adaptive_avg_pool3d");
            CHECK(clt_adaptive_max_pool3d(t, o, &b, &ix));
            assert_shape(b, 5, want);
            assert_tensor_close(b, mx, m, tol, 0, "adaptive_max_pool3d");
            assert_indices(ix, idx, m);
            clt_tensor_free(a);
            clt_tensor_free(b);
            clt_tensor_free(ix);
            clt_tensor_free(t);
        }
    }
    /* an output size of 0 gives an empty result */
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 5, shape, x), *a = NULL, *ix = NULL;
    const int64_t z[3] = {2, 0, 3}, wz[5] = {2, 2, 2, 0, 3};
    CHECK(clt_adaptive_avg_pool3d(t, z, &a));
    assert_shape(a, 5, wz);
    clt_tensor_free(a);
    CHECK(clt_adaptive_max_pool3d(t, z, &a, &ix));
    assert_shape(a, 5, wz);
    assert_shape(ix, 5, wz);
    clt_tensor_free(a);
    clt_tensor_free(ix);
    clt_tensor_free(t);
    /* adaptive_avg_pool1d: [2, 3, 10] to 4, and unbatched [3, 10] */
    const int64_t s3[3] = {2, 3, 10}, s2[2] = {6, 10}, l1[3] = {1, 1, 10}, o1[3] = {1, 1, 4};
    adaptive3_ref(x, 6, l1, o1, avg, mx, idx);
    t = tensor_of(dev, CLT_FLOAT64, 3, s3, x);
    CHECK(clt_adaptive_avg_pool1d(t, 4, &a));
    int64_t w3[3] = {2, 3, 4};
    assert_shape(a, 3, w3);
    assert_tensor_close(a, avg, 24, 1e-12, 1e-12, "adaptive_avg_pool1d");
    clt_tensor_free(a);
    clt_tensor_free(t);
    t = tensor_of(dev, CLT_FLOAT64, 2, s2, x);
    CHECK(clt_adaptive_avg_pool1d(t, 4, &a));
    int64_t w2[2] = {6, 4};
    assert_shape(a, 2, w2);
    assert_tensor_close(a, avg, 24, 1e-12, 1e-12, "adaptive_avg_pool1d unbatched");
    clt_tensor_free(a);
    clt_tensor_free(t);
}

Test(pool3d, unpool_round_trip_and_output_size)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[5] = {1, 2, 4, 4, 6}, k[3] = {2, 2, 2};
    double x[192];
    fill_distinct(x, 192, 11);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 5, shape, x), *y = NULL, *ix = NULL, *u = NULL;
    CHECK(clt_max_pool3d_with_indices(t, k, NULL, NULL, NULL, 0, &y, &ix));
    CHECK(clt_max_unpool3d(y, ix, k, NULL, NULL, NULL, &u));
    assert_shape(u, 5, shape);
    /* each window's maximum stays in place, the rest is zero */
    double want[192];
    for (int64_t p = 0; p < 2; p++)
        for (int64_t f = 0; f < 96; f++) {
            int64_t d = f / 24, h = f / 6 % 4, w = f % 6;
            bool top = true;
            for (int64_t g = 0; g < 96; g++)
                if (g / 24 / 2 == d / 2 && g / 6 % 4 / 2 == h / 2 && g % 6 / 2 == w / 2 &&
                    x[p * 96 + g] > x[p * 96 + f])
                    top = false;
            want[p * 96 + f] = top ? x[p * 96 + f] : 0.0;
        }
    assert_tensor_close(u, want, 192, 0, 0, "max_unpool3d");
    clt_tensor_free(u);
    /* output_size within a stride of the default: one more plane of zeros */
    const int64_t os[3] = {5, 4, 7}, ws[5] = {1, 2, 5, 4, 7};
    CHECK(clt_max_unpool3d(y, ix, k, NULL, NULL, os, &u));
    assert_shape(u, 5, ws);
    clt_tensor_free(u);
    const int64_t bad[3] = {6, 4, 6};
    assert_error(clt_max_unpool3d(y, ix, k, NULL, NULL, bad, &u), CLT_ERR_INVALID_ARGUMENT,
                 "invalid output_size");
    cr_assert_null(u);
    clt_tensor_free(t);
    clt_tensor_free(y);
    clt_tensor_free(ix);
}

Test(pool3d, torchs_errors)
{
    clt_device *dev = get_device("cpu");
    const int64_t s5[5] = {1, 1, 3, 4, 4}, s3[3] = {1, 4, 4}, k[3] = {2, 2, 2};
    double x[48] = {0};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 5, s5, x), *out = NULL, *ix = NULL;
    const int64_t zero[3] = {0, 2, 2}, pad[3] = {2, 0, 0}, big[3] = {4, 2, 2};
    assert_error(clt_max_pool3d(t, zero, NULL, NULL, NULL, 0, &out), CLT_ERR_INVALID_ARGUMENT,
                 "kernel size should be greater than zero");
    names_only("clt_max_pool3d");
    cr_assert_null(out);
    assert_error(clt_avg_pool3d(t, k, NULL, pad, 0, 1, &out), CLT_ERR_INVALID_ARGUMENT,
                 "pad should be smaller than or equal to half of kernel size");
    assert_error(clt_avg_pool3d(t, big, NULL, NULL, 0, 1, &out), CLT_ERR_SHAPE_MISMATCH,
                 "smaller than kernel size");
    assert_error(clt_max_pool3d(t, big, NULL, NULL, NULL, 0, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Output size is too small");
    assert_error(clt_max_pool3d_with_indices(t, k, NULL, NULL, NULL, 0, &out, NULL),
                 CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor *t3 = tensor_of(dev, CLT_FLOAT32, 3, s3, x);
    assert_error(clt_max_pool3d_with_indices(t3, k, NULL, NULL, NULL, 0, &out, &ix),
                 CLT_ERR_SHAPE_MISMATCH, "4D or 5D");
    cr_assert_null(out);
    cr_assert_null(ix);
    const int64_t neg[3] = {1, -1, 2};
    assert_error(clt_adaptive_avg_pool3d(t, neg, &out), CLT_ERR_INVALID_ARGUMENT,
                 "greater than or equal to 0");
    assert_error(clt_adaptive_max_pool3d(t3, k, &out, &ix), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 4D or 5D tensor");
    assert_error(clt_adaptive_avg_pool1d(t, 2, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2 to 3 dimensions");
    clt_tensor *i64 = NULL;
    CHECK(clt_to_dtype(t, CLT_INT64, &i64));
    assert_error(clt_max_pool3d(i64, k, NULL, NULL, NULL, 0, &out), CLT_ERR_DTYPE_UNSUPPORTED,
                 NULL);
    assert_error(clt_max_unpool3d(t, t, k, NULL, NULL, NULL, &out), CLT_ERR_DTYPE_MISMATCH,
                 "should be type int64");
    clt_tensor_free(i64);
    clt_tensor_free(t3);
    clt_tensor_free(t);
}

/* ---- gradients ------------------------------------------------------------------------ */

static clt_status g_max(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ref3 *r = ctx;
    return clt_max_pool3d(in[0], r->k, r->s, r->p, r->d, r->ceil_mode, out);
}

static clt_status g_avg(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ref3 *r = ctx;
    return clt_avg_pool3d(in[0], r->k, r->s, r->p, r->ceil_mode, r->count_include_pad, out);
}

static clt_status g_adaptive_avg(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    const int64_t o[3] = {2, 3, 2};
    return clt_adaptive_avg_pool3d(in[0], o, out);
}

static clt_status g_adaptive_max(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    const int64_t o[3] = {2, 3, 2};
    return clt_adaptive_max_pool3d(in[0], o, out, NULL);
}

static clt_status g_adaptive1d(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_adaptive_avg_pool1d(in[0], 3, out);
}

static clt_status g_unpool(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const int64_t k[3] = {2, 2, 2};
    return clt_max_unpool3d(in[0], (const clt_tensor *)ctx, k, NULL, NULL, NULL, out);
}

Test(pool3d, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double x[240];
    fill_distinct(x, 240, 5);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        gc_in a = {4, {2, 4, 5, 6}, x, 1};
        gradcheck(dev, g_max, &cases[c], 1, &a);
        gradcheck(dev, g_avg, &cases[c], 1, &a);
    }
    gc_in b = {4, {2, 4, 5, 6}, x, 1};
    gradcheck(dev, g_adaptive_avg, NULL, 1, &b);
    gradcheck(dev, g_adaptive_max, NULL, 1, &b);
    gc_in l = {3, {2, 3, 7}, x, 1};
    gradcheck(dev, g_adaptive1d, NULL, 1, &l);
    /* unpool at the indices of a 2x2x2 max pool over [2, 4, 4, 6] */
    const int64_t ps[4] = {2, 4, 4, 6}, k[3] = {2, 2, 2};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, ps, x), *y = NULL, *idx = NULL;
    CHECK(clt_max_pool3d_with_indices(t, k, NULL, NULL, NULL, 0, &y, &idx));
    gc_in u = {4, {2, 2, 2, 3}, x, 1};
    gradcheck(dev, g_unpool, idx, 1, &u);
    clt_tensor_free(t);
    clt_tensor_free(y);
    clt_tensor_free(idx);
}

/* ---- layers ------------------------------------------------------------------------------ */

/* The layer's forward equals the function's result, and its name is torch's. */
static void same_as(clt_module *m, const char *name, const clt_tensor *x, const clt_tensor *want)
{
    cr_assert_str_eq(clt_module_name(m), name);
    clt_tensor *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    assert_shape(y, clt_tensor_ndim(want), clt_tensor_shape(want));
    double *w = read_as_f64(want);
    assert_tensor_close(y, w, (size_t)clt_tensor_numel(want), 0, 0, name);
    free(w);
    clt_tensor_free(y);
    clt_module_free(m);
}

Test(pool3d, pooling_layers_run_their_functions)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[5] = {2, 2, 5, 6, 4}, k[3] = {3, 2, 2}, o[3] = {2, 4, 3};
    double x[480];
    fill_distinct(x, 480, 21);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 5, shape, x), *want = NULL, *ix = NULL;
    clt_pool3d_opts po = {{2, 1, 2}, {1, 1, 0}, {1, 2, 1}, 1, 0};
    clt_module *m = NULL;
    CHECK(clt_max_pool3d(t, k, po.stride, po.padding, po.dilation, 1, &want));
    CHECK(clt_max_pool3d_layer(k, &po, &m));
    same_as(m, "MaxPool3d", t, want);
    clt_tensor_free(want);
    CHECK(clt_avg_pool3d(t, k, po.stride, po.padding, 1, 0, &want));
    CHECK(clt_avg_pool3d_layer(k, &po, &m));
    same_as(m, "AvgPool3d", t, want);
    clt_tensor_free(want);
    CHECK(clt_avg_pool3d(t, k, NULL, NULL, 0, 1, &want));
    CHECK(clt_avg_pool3d_layer(k, NULL, &m));
    same_as(m, "AvgPool3d", t, want);
    clt_tensor_free(want);
    CHECK(clt_adaptive_avg_pool3d(t, o, &want));
    CHECK(clt_adaptive_avg_pool3d_layer(o, &m));
    same_as(m, "AdaptiveAvgPool3d", t, want);
    clt_tensor_free(want);
    CHECK(clt_adaptive_max_pool3d(t, o, &want, NULL));
    CHECK(clt_adaptive_max_pool3d_layer(o, &m));
    same_as(m, "AdaptiveMaxPool3d", t, want);
    clt_tensor_free(want);
    const int64_t s3[3] = {4, 5, 24};
    clt_tensor *t3 = NULL;
    CHECK(clt_reshape(t, 3, s3, &t3));
    CHECK(clt_adaptive_avg_pool1d(t3, 7, &want));
    CHECK(clt_adaptive_avg_pool1d_layer(7, &m));
    same_as(m, "AdaptiveAvgPool1d", t3, want);
    clt_tensor_free(want);
    /* MaxUnpool3d through clt_max_unpool_forward */
    const int64_t k2[3] = {2, 2, 2};
    clt_tensor *y = NULL, *u = NULL;
    CHECK(clt_max_pool3d_with_indices(t, k2, NULL, NULL, NULL, 0, &y, &ix));
    CHECK(clt_max_unpool3d(y, ix, k2, NULL, NULL, NULL, &want));
    CHECK(clt_max_unpool3d_layer(k2, NULL, NULL, &m));
    cr_assert_str_eq(clt_module_name(m), "MaxUnpool3d");
    CHECK(clt_max_unpool_forward(m, y, ix, NULL, &u));
    double *w = read_as_f64(want);
    assert_tensor_close(u, w, (size_t)clt_tensor_numel(want), 0, 0, "MaxUnpool3d");
    free(w);
    assert_error(clt_module_forward(m, y, &u), CLT_ERR_INVALID_ARGUMENT, "clt_max_unpool_forward");
    clt_module_free(m);
    clt_tensor_free(u);
    clt_tensor_free(want);
    clt_tensor_free(y);
    clt_tensor_free(ix);
    /* the constructors' checks */
    const int64_t bad[3] = {2, 0, 2}, neg[3] = {1, -1, 1};
    assert_error(clt_max_pool3d_layer(bad, NULL, &m), CLT_ERR_INVALID_ARGUMENT, "kernel_size");
    cr_assert_null(m);
    assert_error(clt_adaptive_avg_pool3d_layer(neg, &m), CLT_ERR_INVALID_ARGUMENT,
                 "greater than or equal to 0");
    assert_error(clt_max_unpool3d_layer(bad, NULL, NULL, &m), CLT_ERR_INVALID_ARGUMENT, NULL);
    /* a forward's refusal names the layer */
    CHECK(clt_max_pool3d_layer(k, NULL, &m));
    assert_error(clt_module_forward(m, t3, &y), CLT_ERR_SHAPE_MISMATCH, "4D or 5D");
    clt_module_free(m);
    clt_tensor_free(t3);
    clt_tensor_free(t);
}

/* Each channel normalised over (N, D, H, W) (batch) or each (n, c) over
 * (D, H, W) (instance), biased variance, eps 1e-5, weight 1 and bias 0. */
static void norm_ref(const double *x, int64_t N, int64_t C, int64_t S, bool per_instance,
                     double *y)
{
    for (int64_t c = 0; c < C; c++)
        for (int64_t n0 = 0; n0 < (per_instance ? N : 1); n0++) {
            int64_t n1 = per_instance ? n0 + 1 : N;
            double mean = 0, var = 0, cnt = (double)((n1 - n0) * S);
            for (int64_t n = n0; n < n1; n++)
                for (int64_t s = 0; s < S; s++)
                    mean += x[(n * C + c) * S + s];
            mean /= cnt;
            for (int64_t n = n0; n < n1; n++)
                for (int64_t s = 0; s < S; s++)
                    var += pow(x[(n * C + c) * S + s] - mean, 2);
            var /= cnt;
            for (int64_t n = n0; n < n1; n++)
                for (int64_t s = 0; s < S; s++)
                    y[(n * C + c) * S + s] = (x[(n * C + c) * S + s] - mean) / sqrt(var + 1e-5);
        }
}

Test(pool3d, norm3d_layers_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[5] = {2, 3, 2, 3, 4};
    double x[144], y[144];
    fill_distinct(x, 144, 4);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 5, shape, x), *out = NULL;
    for (int inst = 0; inst < 2; inst++) {
        clt_module *m = NULL;
        if (inst)
            CHECK(clt_instance_norm3d_layer(dev, 3, 1e-5, 0.1, 1, 0, &m));
        else
            CHECK(clt_batch_norm3d_layer(dev, 3, 1e-5, 0.1, 1, 1, &m));
        cr_assert_str_eq(clt_module_name(m), inst ? "InstanceNorm3d" : "BatchNorm3d");
        CHECK(clt_module_forward(m, t, &out));
        assert_shape(out, 5, shape);
        norm_ref(x, 2, 3, 24, inst, y);
        assert_tensor_close(out, y, 144, 1e-4, 1e-4, clt_module_name(m));
        clt_tensor_free(out);
        /* the other ranks are refused */
        const int64_t s4[4] = {3, 2, 3, 8};
        clt_tensor *t4 = NULL;
        CHECK(clt_reshape(t, 4, s4, &t4));
        if (inst) { /* unbatched [C, D, H, W] is one instance */
            CHECK(clt_module_forward(m, t4, &out));
            clt_tensor_free(out);
            const int64_t s3[3] = {3, 6, 8};
            clt_tensor *t3 = NULL;
            CHECK(clt_reshape(t, 3, s3, &t3));
            assert_error(clt_module_forward(m, t3, &out), CLT_ERR_SHAPE_MISMATCH,
                         "expected 4D or 5D input");
            clt_tensor_free(t3);
        } else {
            assert_error(clt_module_forward(m, t4, &out), CLT_ERR_SHAPE_MISMATCH,
                         "expected 5D input");
        }
        cr_assert_null(out);
        clt_tensor_free(t4);
        clt_module_free(m);
    }
    clt_tensor_free(t);
}

/* The padding layers against a host loop: constant, mirrored without the
 * edge, or the edge repeated, over the last k dims. */
static double pad_ref_at(const double *x, int k, const int64_t *in, const int64_t *pad,
                         int mode, double value, const int64_t *at)
{
    int64_t f = 0;
    for (int i = 0; i < k; i++) {
        int64_t lo = pad[2 * (k - 1 - i)], j = at[i] - lo, n = in[i];
        if (j < 0 || j >= n) {
            if (mode == 0)
                return value;
            if (mode == 1)
                j = j < 0 ? -j : 2 * (n - 1) - j;
            else
                j = j < 0 ? 0 : n - 1;
        }
        f = f * n + j;
    }
    return x[f];
}

Test(pool3d, padding_layers_against_a_host_loop)
{
    clt_device *dev = get_device("cpu");
    const int64_t in[3] = {3, 4, 5};
    double x[60];
    fill_distinct(x, 60, 13);
    const int64_t pads[6] = {2, 1, 0, 3, 1, 2};
    typedef clt_status (*mk)(const int64_t *, clt_module **);
    const mk makers[2][3] = {
        {clt_reflection_pad1d_layer, clt_reflection_pad2d_layer, clt_reflection_pad3d_layer},
        {clt_replication_pad1d_layer, clt_replication_pad2d_layer, clt_replication_pad3d_layer}};
    const char *names[3][3] = {{"ConstantPad1d", "ConstantPad2d", "ConstantPad3d"},
                               {"ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d"},
                               {"ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d"}};
    for (int k = 1; k <= 3; k++) {
        /* [1, 3, 4, 5] seen as a batch and k dims of (3, 4, 5)'s last */
        int64_t shape[4] = {1, 1, 1, 1}, sz[3], outs[4] = {1, 1, 1, 1};
        int64_t lead = 1;
        for (int i = 0; i < 3; i++) {
            if (i < 3 - k)
                lead *= in[i];
        }
        shape[0] = lead;
        for (int i = 0; i < k; i++)
            sz[i] = shape[1 + i] = in[3 - k + i];
        outs[0] = lead;
        for (int i = 0; i < k; i++)
            outs[1 + i] = sz[i] + pads[2 * (k - 1 - i)] + pads[2 * (k - 1 - i) + 1];
        clt_tensor *t = tensor_of(dev, CLT_FLOAT64, k + 1, shape, x);
        for (int mode = 0; mode < 3; mode++) {
            clt_module *m = NULL;
            if (mode == 0)
                CHECK(k == 1   ? clt_constant_pad1d_layer(pads, 2.5, &m)
                      : k == 2 ? clt_constant_pad2d_layer(pads, 2.5, &m)
                               : clt_constant_pad3d_layer(pads, 2.5, &m));
            else
                CHECK(makers[mode - 1][k - 1](pads, &m));
            cr_assert_str_eq(clt_module_name(m), names[mode][k - 1]);
            clt_tensor *y = NULL;
            CHECK(clt_module_forward(m, t, &y));
            assert_shape(y, k + 1, outs);
            int64_t n = host_numel(k + 1, outs);
            double *want = malloc((size_t)n * sizeof *want);
            for (int64_t e = 0; e < n; e++) {
                int64_t at[4], c[3];
                host_unravel(e, k + 1, outs, at);
                for (int i = 0; i < k; i++)
                    c[i] = at[1 + i];
                want[e] = pad_ref_at(x + at[0] * (host_numel(k, sz)), k, sz, pads, mode, 2.5, c);
            }
            assert_tensor_close(y, want, (size_t)n, 0, 0, names[mode][k - 1]);
            free(want);
            clt_tensor_free(y);
            clt_module_free(m);
        }
        clt_tensor_free(t);
    }
    /* ZeroPad2d pads with 0; a reflection as wide as the input is refused */
    const int64_t s3[3] = {3, 4, 5}, zp[4] = {1, 1, 1, 1}, wide[2] = {5, 0};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, s3, x), *y = NULL;
    clt_module *m = NULL;
    CHECK(clt_zero_pad2d_layer(zp, &m));
    cr_assert_str_eq(clt_module_name(m), "ZeroPad2d");
    CHECK(clt_module_forward(m, t, &y));
    double *got = read_as_f64(y);
    cr_assert_eq(got[0], 0.0);
    cr_assert_eq(got[7 + 1], x[0]);
    free(got);
    clt_tensor_free(y);
    clt_module_free(m);
    CHECK(clt_reflection_pad1d_layer(wide, &m));
    assert_error(clt_module_forward(m, t, &y), CLT_ERR_INVALID_ARGUMENT,
                 "ReflectionPad1d: Padding size should be less than");
    clt_module_free(m);
    clt_tensor_free(t);
}
