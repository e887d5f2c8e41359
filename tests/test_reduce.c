/* test_reduce.c: reductions against host references computed in double:
 * every op over all elements and over each dim of 3-D tensors, strided
 * inputs, zero-size and large inputs, NaN, ties, integer dtypes, and
 * bit-identical results across devices and kernel variants. */
#include <stdint.h>
#include <stdio.h>

#include "helpers.h"

typedef enum { SUM, MEAN, PROD, MAX, MIN, ARGMAX, ARGMIN, VAR, STD, NKINDS } rk;
static const char *const rk_names[] = {"sum", "mean", "prod", "max", "min",
                                       "argmax", "argmin", "var", "std"};

static clt_status dev_reduce(rk k, const clt_tensor *a, int all, int dim, int keepdim,
                             clt_tensor **out)
{
    switch (k) {
    case SUM: return all ? clt_sum(a, out) : clt_sum_dim(a, dim, keepdim, out);
    case MEAN: return all ? clt_mean(a, out) : clt_mean_dim(a, dim, keepdim, out);
    case PROD: return all ? clt_prod(a, out) : clt_prod_dim(a, dim, keepdim, out);
    case MAX: return all ? clt_max(a, out) : clt_max_dim(a, dim, keepdim, out, NULL);
    case MIN: return all ? clt_min(a, out) : clt_min_dim(a, dim, keepdim, out, NULL);
    case ARGMAX: return all ? clt_argmax(a, out) : clt_argmax_dim(a, dim, keepdim, out);
    case ARGMIN: return all ? clt_argmin(a, out) : clt_argmin_dim(a, dim, keepdim, out);
    case VAR: return all ? clt_var(a, 1, out) : clt_var_dim(a, dim, 1, keepdim, out);
    case STD: return all ? clt_std(a, 1, out) : clt_std_dim(a, dim, 1, keepdim, out);
    default: return CLT_ERR_INTERNAL;
    }
}

/* Reference over x[(o * R + r) * inner + i] for r < R. */
static double ref(rk k, const double *x, int64_t o, int64_t R, int64_t inner, int64_t i)
{
#define X(r) x[((o) * R + (r)) * inner + i]
    double acc = k == PROD ? 1 : 0;
    int64_t best = 0;
    switch (k) {
    case SUM:
    case MEAN:
        for (int64_t r = 0; r < R; r++)
            acc += X(r);
        return k == MEAN ? acc / (double)R : acc;
    case PROD:
        for (int64_t r = 0; r < R; r++)
            acc *= X(r);
        return acc;
    case MAX:
    case MIN:
    case ARGMAX:
    case ARGMIN:
        for (int64_t r = 1; r < R; r++) {
            double v = X(r), b = X(best);
            if (isnan(b))
                break;
            if (isnan(v) || ((k == MAX || k == ARGMAX) ? v > b : v < b))
                best = r;
        }
        return (k == ARGMAX || k == ARGMIN) ? (double)best : X(best);
    case VAR:
    case STD: {
        double m = 0, s = 0;
        for (int64_t r = 0; r < R; r++)
            m += X(r);
        m /= (double)R;
        for (int64_t r = 0; r < R; r++)
            s += (X(r) - m) * (X(r) - m);
        s /= fmax(0, (double)R - 1);
        return k == STD ? sqrt(s) : s;
    }
    default:
        return 0;
    }
#undef X
}

/* Any tensor's values as doubles; new array. */
static double *read_doubles(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t), es = clt_dtype_size(clt_tensor_dtype(t));
    unsigned char *raw = malloc(n * es + 8);
    double *d = malloc((n + 1) * sizeof *d);
    cr_assert(raw && d);
    CHECK(clt_tensor_read(t, raw, n * es));
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = raw + i * es;
        switch (clt_tensor_dtype(t)) {
        case CLT_FLOAT32: { float v; memcpy(&v, p, 4); d[i] = v; break; }
        case CLT_FLOAT64: { double v; memcpy(&v, p, 8); d[i] = v; break; }
        case CLT_INT32: { int32_t v; memcpy(&v, p, 4); d[i] = v; break; }
        case CLT_INT64: { int64_t v; memcpy(&v, p, 8); d[i] = (double)v; break; }
        case CLT_UINT8:
        case CLT_BOOL: d[i] = *p; break;
        default: cr_assert_fail("unexpected dtype");
        }
    }
    free(raw);
    return d;
}

static double item(const clt_tensor *t)
{
    double v = 0;
    CHECK(clt_tensor_item(t, &v));
    return v;
}

/* Values in [-10, 10], or near 1 for products (so 10^4 of them stay finite). */
static void fill_data(float *h, size_t n, unsigned seed, int for_prod)
{
    fill_random(h, n, seed);
    if (for_prod)
        for (size_t i = 0; i < n; i++)
            h[i] = 1.0f + h[i] / 1000.0f;
}

static double tolerance(rk k, const double *x, int64_t o, int64_t R, int64_t inner, int64_t i)
{
    if (k == MAX || k == MIN || k == ARGMAX || k == ARGMIN)
        return 0;
    double mag = 0;
    for (int64_t r = 0; r < R; r++)
        mag += fabs(x[(o * R + r) * inner + i]);
    if (k == MEAN)
        mag /= (double)R;
    if (k == PROD)
        mag = 1;
    if (k == VAR || k == STD)
        return 0; /* relative only */
    return 1e-6 * mag + 1e-30;
}

/* Checks op k of a float32 host array `h` shaped `shape` (held by tensor a,
 * which may be strided) over all elements and every dim, with and without
 * keepdim. */
static void check_all_dims(rk k, const clt_tensor *a, const double *h, int nd,
                           const int64_t *shape)
{
    int64_t numel = 1;
    for (int d = 0; d < nd; d++)
        numel *= shape[d];
    for (int d = -1; d < nd; d++) {
        for (int keep = 0; keep < 2; keep++) {
            if (d < 0 && keep)
                continue;
            int64_t outer = 1, R = numel, inner = 1;
            if (d >= 0) {
                R = shape[d];
                for (int i = 0; i < d; i++)
                    outer *= shape[i];
                for (int i = d + 1; i < nd; i++)
                    inner *= shape[i];
            }
            clt_tensor *r = NULL;
            /* Negative dims wrap: ask for the last dim as -1. */
            int dim = d == nd - 1 ? -1 : d;
            CHECK(dev_reduce(k, a, d < 0, dim, keep, &r));
            clt_dtype want_dt = (k == ARGMAX || k == ARGMIN) ? CLT_INT64 : CLT_FLOAT32;
            cr_assert_eq(clt_tensor_dtype(r), want_dt, "%s dim %d dtype", rk_names[k], d);
            int want_nd = d < 0 ? 0 : keep ? nd : nd - 1;
            cr_assert_eq(clt_tensor_ndim(r), want_nd, "%s dim %d keep %d ndim", rk_names[k], d,
                         keep);
            if (d >= 0 && keep)
                cr_assert_eq(clt_tensor_shape(r)[d], 1);
            cr_assert_eq(clt_tensor_numel(r), outer * inner);
            double *got = read_doubles(r);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < inner; i++) {
                    double want = ref(k, h, o, R, inner, i);
                    double atol = tolerance(k, h, o, R, inner, i);
                    double rtol = atol == 0 && (k == VAR || k == STD) ? 2e-5 : 1e-5;
                    if (k == MAX || k == MIN || k == ARGMAX || k == ARGMIN)
                        rtol = 0;
                    cr_assert(close_enough(got[o * inner + i], want, rtol, atol),
                              "%s dim %d keep %d shape [%lld, %lld, %lld] at (%lld, %lld): got "
                              "%.9g want %.9g",
                              rk_names[k], d, keep, (long long)shape[0],
                              (long long)(nd > 1 ? shape[1] : 0),
                              (long long)(nd > 2 ? shape[2] : 0), (long long)o, (long long)i,
                              got[o * inner + i], want);
                }
            free(got);
            clt_tensor_free(r);
        }
    }
}

static void check_shape_all_ops(int64_t s0, int64_t s1, int64_t s2)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {s0, s1, s2};
    size_t n = (size_t)(s0 * s1 * s2);
    float *h = malloc(n * sizeof *h);
    double *hd = malloc(n * sizeof *hd);
    for (int k = 0; k < NKINDS; k++) {
        fill_data(h, n, 7u + (unsigned)k, k == PROD);
        for (size_t i = 0; i < n; i++)
            hd[i] = h[i];
        clt_tensor *a = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, shape, h, &a));
        check_all_dims((rk)k, a, hd, 3, shape);
        clt_tensor_free(a);
    }
    free(h);
    free(hd);
}

Test(reduce, every_op_every_dim_small)
{
    check_shape_all_ops(5, 7, 13);
    check_shape_all_ops(1, 1, 1);
    check_shape_all_ops(2, 1, 65);
}

/* Reduced dims longer than one chunk (4096): multi-pass, inner 1 and > 1. */
Test(reduce, every_op_every_dim_long)
{
    check_shape_all_ops(3, 4101, 2);
    check_shape_all_ops(2, 3, 9000);
    check_shape_all_ops(1, 4100, 17);
}

Test(reduce, sum_sizes)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {0, 1, 2, 7, 63, 64, 65, 127, 4095, 4096, 4097, 8193, 100003, 1000001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        float *h = malloc((size_t)(n ? n : 1) * sizeof *h);
        fill_random(h, (size_t)n, (unsigned)s + 1);
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            want += h[i];
            mag += fabs(h[i]);
        }
        clt_tensor *a = NULL, *r = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
        CHECK(clt_sum(a, &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
        double got = item(r);
        cr_assert(close_enough(got, want, 0, 2e-7 * mag + 1e-6), "n %lld: got %.9g want %.9g",
                  (long long)n, got, want);
        clt_tensor_free(r);
        clt_tensor_free(a);
        free(h);
    }
}

/* 2^24 + 3 ones: a running float stops at 2^24; the true sum rounds to the
 * nearest float, and the int32 sum is exact in int64. */
Test(reduce, sum_beyond_float_precision)
{
    clt_device *dev = get_device("cpu");
    int64_t n = (1 << 24) + 3;
    clt_tensor *a = NULL, *r = NULL, *ai = NULL, *ri = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_sum(a, &r));
    float f = 0;
    CHECK(clt_tensor_read(r, &f, sizeof f));
    cr_assert_eq(f, (float)16777219.0, "got %.1f", (double)f);
    cr_assert_neq(f, 16777216.0f);
    CHECK(clt_mean(a, &ri));
    cr_assert_eq(item(ri), 1.0);
    clt_tensor_free(ri);
    CHECK(clt_ones(dev, CLT_INT32, 1, &n, &ai));
    CHECK(clt_sum(ai, &ri));
    cr_assert_eq(clt_tensor_dtype(ri), CLT_INT64);
    int64_t v = 0;
    CHECK(clt_tensor_read(ri, &v, sizeof v));
    cr_assert_eq(v, 16777219);
    clt_tensor_free(a);
    clt_tensor_free(r);
    clt_tensor_free(ai);
    clt_tensor_free(ri);
}

/* A permuted and sliced view: reductions over each dim of the strided
 * tensor match the host reference of its row-major values. */
Test(reduce, strided_input)
{
    clt_device *dev = get_device("cpu");
    int64_t base_shape[3] = {6, 50, 9};
    size_t n = 6 * 50 * 9;
    float *h = malloc(n * sizeof *h);
    fill_random(h, n, 99);
    clt_tensor *base = NULL, *perm = NULL, *sl = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, base_shape, h, &base));
    int dims[3] = {2, 0, 1};
    CHECK(clt_permute(base, 3, dims, &perm));         /* [9, 6, 50] */
    CHECK(clt_slice(perm, 2, 1, INT64_MAX, 2, &sl)); /* [9, 6, 25] */
    cr_assert(!clt_tensor_is_contiguous(sl));
    int64_t shape[3] = {9, 6, 25};
    double *v = malloc(9 * 6 * 25 * sizeof *v);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 6; j++)
            for (int k = 0; k < 25; k++)
                v[(i * 6 + j) * 25 + k] = h[(j * 50 + (1 + 2 * k)) * 9 + i];
    for (int k = 0; k < NKINDS; k++)
        if (k != PROD)
            check_all_dims((rk)k, sl, v, 3, shape);
    free(v);
    free(h);
    clt_tensor_free(sl);
    clt_tensor_free(perm);
    clt_tensor_free(base);
}

Test(reduce, zero_size)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 0;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, NULL, &a));
    CHECK(clt_sum(a, &r));
    cr_assert_eq(item(r), 0.0);
    clt_tensor_free(r);
    CHECK(clt_prod(a, &r));
    cr_assert_eq(item(r), 1.0);
    clt_tensor_free(r);
    CHECK(clt_mean(a, &r));
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    CHECK(clt_var(a, 1, &r));
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_max(a, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "cannot perform reduction function max") != NULL, "%s",
              clt_last_error());
    cr_assert(strstr(clt_last_error(), "does not have an identity") != NULL);
    cr_assert_eq(clt_argmin(a, &r), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_free(a);

    int64_t shape[3] = {4, 0, 3};
    CHECK(clt_empty(dev, CLT_FLOAT32, 3, shape, &a));
    CHECK(clt_sum_dim(a, 1, 0, &r)); /* [4, 3] of zeros */
    cr_assert_eq(clt_tensor_ndim(r), 2);
    cr_assert_eq(clt_tensor_numel(r), 12);
    double *got = read_doubles(r);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(got[i], 0.0);
    free(got);
    clt_tensor_free(r);
    CHECK(clt_prod_dim(a, -2, 1, &r)); /* [4, 1, 3] of ones */
    cr_assert_eq(clt_tensor_shape(r)[1], 1);
    got = read_doubles(r);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(got[i], 1.0);
    free(got);
    clt_tensor_free(r);
    CHECK(clt_max_dim(a, 0, 0, &r, NULL)); /* [0, 3]: nothing to reduce, fine */
    cr_assert_eq(clt_tensor_numel(r), 0);
    clt_tensor_free(r);
    cr_assert_eq(clt_argmax_dim(a, 1, 0, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "[4, 0, 3]") != NULL, "%s", clt_last_error());
    clt_tensor_free(a);
}

Test(reduce, nan_and_inf)
{
    clt_device *dev = get_device("cpu");
    enum { N = 10000 };
    float *h = malloc(N * sizeof *h);
    fill_random(h, N, 3);
    h[5000] = NAN;
    h[6001] = NAN; /* same chunk, lower vector lane, later index */
    h[9000] = NAN;
    h[7000] = INFINITY;
    int64_t n = N;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    CHECK(clt_max(a, &r));
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    CHECK(clt_min(a, &r));
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    CHECK(clt_argmax(a, &r));
    cr_assert_eq(item(r), 5000.0);
    clt_tensor_free(r);
    CHECK(clt_argmin(a, &r));
    cr_assert_eq(item(r), 5000.0);
    clt_tensor_free(r);
    CHECK(clt_sum(a, &r));
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    clt_tensor_free(a);

    h[5000] = 1;
    h[6001] = 2;
    h[9000] = -INFINITY;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    CHECK(clt_max(a, &r));
    cr_assert(isinf(item(r)) && item(r) > 0);
    clt_tensor_free(r);
    CHECK(clt_argmin(a, &r));
    cr_assert_eq(item(r), 9000.0);
    clt_tensor_free(r);
    CHECK(clt_sum(a, &r)); /* inf + -inf */
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(h);
}

/* Ties give the first index, also when the copies sit in different chunks
 * and rows. */
Test(reduce, ties_first_index)
{
    clt_device *dev = get_device("cpu");
    enum { R = 2, C = 9000 };
    float *h = calloc(R * C, sizeof *h);
    h[100] = 5;
    h[3009] = 5; /* same chunk, lower vector lane, later index */
    h[4500] = 5;
    h[8999] = 5;
    h[C + 8000] = -2;
    h[C + 8001] = -2;
    h[C + 3] = -2;
    int64_t shape[2] = {R, C};
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape, h, &a));
    CHECK(clt_argmax_dim(a, 1, 0, &r));
    double *got = read_doubles(r);
    cr_assert_eq(got[0], 100.0);
    cr_assert_eq(got[1], 0.0); /* row 1: zeros everywhere else */
    free(got);
    clt_tensor_free(r);
    CHECK(clt_argmin_dim(a, -1, 1, &r));
    got = read_doubles(r);
    cr_assert_eq(got[0], 0.0);
    cr_assert_eq(got[1], 3.0);
    free(got);
    clt_tensor_free(r);
    CHECK(clt_argmin_dim(a, 0, 0, &r)); /* column ties between rows */
    got = read_doubles(r);
    cr_assert_eq(got[0], 0.0);
    cr_assert_eq(got[3], 1.0);
    cr_assert_eq(got[100], 1.0);
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(h);
}

/* max_dim and min_dim hand out values and indices from one call: checked
 * against the host reference (first of ties, first NaN) for float32,
 * float64 and int32, every dim, keepdim or not, rows long enough to need
 * several passes, and a transposed view. */
static void check_values_indices(const clt_tensor *a, const double *h, int nd,
                                 const int64_t *shape, const char *what)
{
    for (int kind = 0; kind < 2; kind++) {
        rk vk = kind ? MIN : MAX, ik = kind ? ARGMIN : ARGMAX;
        for (int d = -1; d < nd; d++) {
            for (int keep = 0; keep < 2; keep++) {
                int dd = d < 0 ? nd - 1 : d;
                int64_t outer = 1, inner = 1, R = shape[dd];
                for (int j = 0; j < nd; j++) {
                    if (j < dd)
                        outer *= shape[j];
                    else if (j > dd)
                        inner *= shape[j];
                }
                clt_tensor *v = NULL, *ix = NULL;
                CHECK(kind ? clt_min_dim(a, d, keep, &v, &ix) : clt_max_dim(a, d, keep, &v, &ix));
                cr_assert_eq(clt_tensor_dtype(v), clt_tensor_dtype(a));
                cr_assert_eq(clt_tensor_dtype(ix), CLT_INT64);
                cr_assert_eq(clt_tensor_ndim(v), keep ? nd : nd - 1);
                cr_assert_eq(clt_tensor_ndim(ix), clt_tensor_ndim(v));
                cr_assert_eq(clt_tensor_numel(ix), outer * inner);
                double *gv = read_doubles(v), *gi = read_doubles(ix);
                for (int64_t o = 0; o < outer; o++) {
                    for (int64_t i = 0; i < inner; i++) {
                        double wv = ref(vk, h, o, R, inner, i), wi = ref(ik, h, o, R, inner, i);
                        int64_t at = o * inner + i;
                        cr_assert(close_enough(gv[at], wv, 0, 0),
                                  "%s %s d=%d keep=%d [%lld]: value %g, want %g", what,
                                  rk_names[vk], d, keep, (long long)at, gv[at], wv);
                        cr_assert_eq(gi[at], wi, "%s %s d=%d keep=%d [%lld]: index %g, want %g",
                                     what, rk_names[vk], d, keep, (long long)at, gi[at], wi);
                    }
                }
                free(gv);
                free(gi);
                clt_tensor_free(v);
                clt_tensor_free(ix);
            }
        }
    }
}

Test(reduce, max_min_dim_values_and_indices)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32};
    const int64_t small[3] = {3, 5, 4}, longrow[2] = {3, 9000};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        for (int s = 0; s < 2; s++) {
            const int64_t *shape = s ? longrow : small;
            int nd = s ? 2 : 3;
            size_t n = (size_t)(shape[0] * shape[1] * (s ? 1 : shape[2]));
            double *h = malloc(n * sizeof *h);
            unsigned char *raw = malloc(n * 8);
            unsigned seed = 7 + (unsigned)t;
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                h[i] = (double)((seed >> 16) % 4) - 1.0; /* -1..2: many ties */
            }
            if (s) { /* the maxima late in long rows, across chunk boundaries */
                h[4097] = 9;
                h[8999] = 9;
                h[9000 + 5000] = -9;
                h[18000 + 8998] = 9;
            }
            if (dts[t] != CLT_INT32) { /* NaN: the first one wins, max and min alike */
                h[6] = NAN;
                h[n - 2] = NAN;
                h[n / 2] = NAN;
            }
            for (size_t i = 0; i < n; i++) {
                if (dts[t] == CLT_FLOAT32)
                    ((float *)raw)[i] = (float)h[i];
                else if (dts[t] == CLT_FLOAT64)
                    ((double *)raw)[i] = h[i];
                else
                    ((int32_t *)raw)[i] = (int32_t)h[i];
            }
            clt_tensor *a = NULL;
            CHECK(clt_tensor_from_host(dev, dts[t], nd, shape, raw, &a));
            char what[64];
            snprintf(what, sizeof what, "%s %s", clt_dtype_name(dts[t]), s ? "[3, 9000]" : "[3, 5, 4]");
            check_values_indices(a, h, nd, shape, what);
            if (!s) { /* a transposed view: [4, 5, 3] read through strides */
                clt_tensor *tr = NULL;
                CHECK(clt_transpose(a, 0, 2, &tr));
                double *ht = malloc(n * sizeof *ht);
                for (int64_t i = 0; i < 4; i++)
                    for (int64_t j = 0; j < 5; j++)
                        for (int64_t k = 0; k < 3; k++)
                            ht[(i * 5 + j) * 3 + k] = h[(k * 5 + j) * 4 + i];
                check_values_indices(tr, ht, 3, (const int64_t[]){4, 5, 3}, "transposed");
                free(ht);
                clt_tensor_free(tr);
            }
            clt_tensor_free(a);
            free(h);
            free(raw);
        }
    }
    /* A 0-dimensional tensor is its own max, at index 0; indices may be NULL. */
    clt_tensor *z = NULL, *v = NULL, *ix = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 0, NULL, 4.5, &z));
    CHECK(clt_max_dim(z, 0, 0, &v, &ix));
    cr_assert_eq(item(v), 4.5);
    cr_assert_eq(item(ix), 0.0);
    clt_tensor_free(v);
    clt_tensor_free(ix);
    CHECK(clt_min_dim(z, -1, 1, &v, NULL));
    cr_assert_eq(item(v), 4.5);
    clt_tensor_free(v);
    clt_tensor_free(z);
}

Test(reduce, integer_dtypes)
{
    clt_device *dev = get_device("cpu");
    enum { N = 5003 };
    int32_t *hi = malloc(N * sizeof *hi);
    uint8_t *hu = malloc(N);
    int64_t sum_i = 0, sum_u = 0, trues = 0, maxi = INT32_MIN, mini = INT32_MAX, argmin = 0;
    unsigned seed = 11;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        hi[i] = (int32_t)((seed >> 4) % 2000001) - 1000000;
        hu[i] = (uint8_t)(seed >> 20);
        sum_i += hi[i];
        sum_u += hu[i];
        trues += hu[i] & 1;
        if (hi[i] > maxi)
            maxi = hi[i];
        if (hi[i] < mini) {
            mini = hi[i];
            argmin = i;
        }
    }
    int64_t n = N;
    clt_tensor *a = NULL, *u = NULL, *b = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &n, hi, &a));
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, &n, hu, &u));
    for (int i = 0; i < N; i++)
        hu[i] &= 1;
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, &n, hu, &b));

    CHECK(clt_sum(a, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    int64_t v = 0;
    CHECK(clt_tensor_read(r, &v, sizeof v));
    cr_assert_eq(v, sum_i);
    clt_tensor_free(r);
    CHECK(clt_max(a, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    cr_assert_eq(item(r), (double)maxi);
    clt_tensor_free(r);
    CHECK(clt_min(a, &r));
    cr_assert_eq(item(r), (double)mini);
    clt_tensor_free(r);
    CHECK(clt_argmin(a, &r));
    cr_assert_eq(item(r), (double)argmin);
    clt_tensor_free(r);
    CHECK(clt_sum(u, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    cr_assert_eq(item(r), (double)sum_u);
    clt_tensor_free(r);
    CHECK(clt_sum(b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    cr_assert_eq(item(r), (double)trues);
    clt_tensor_free(r);
    CHECK(clt_max(b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
    cr_assert_eq(item(r), 1.0);
    clt_tensor_free(r);

    r = (clt_tensor *)1;
    cr_assert_eq(clt_mean(a, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "int32") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_std_dim(u, 0, 1, 0, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "floating point") != NULL, "%s", clt_last_error());
    clt_tensor_free(a);
    clt_tensor_free(u);
    clt_tensor_free(b);

    /* int64 products are exact beyond 2^53 (no float on the way). */
    int64_t hp[4] = {3, -5, 7, 100000000000007}, shape4 = 4;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &shape4, hp, &a));
    CHECK(clt_prod(a, &r));
    CHECK(clt_tensor_read(r, &v, sizeof v));
    cr_assert_eq(v, (int64_t)3 * -5 * 7 * 100000000000007);
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(hi);
    free(hu);
}

Test(reduce, float64_var_std)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no fp64");
    enum { N = 12345 };
    double *h = malloc(N * sizeof *h);
    double m = 0, s = 0;
    for (int i = 0; i < N; i++) {
        h[i] = 1e6 + sin(i) * 3;
        m += h[i];
    }
    m /= N;
    for (int i = 0; i < N; i++)
        s += (h[i] - m) * (h[i] - m);
    int64_t n = N;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, h, &a));
    CHECK(clt_var(a, 0, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT64);
    cr_assert(close_enough(item(r), s / N, 1e-12, 0), "%.17g vs %.17g", item(r), s / N);
    clt_tensor_free(r);
    CHECK(clt_std(a, 1, &r));
    cr_assert(close_enough(item(r), sqrt(s / (N - 1)), 1e-12, 0));
    clt_tensor_free(r);
    clt_tensor_free(a);
    /* One element: unbiased variance divides by zero, giving NaN like torch. */
    n = 1;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, h, &a));
    CHECK(clt_var(a, 1, &r));
    cr_assert(isnan(item(r)));
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(h);
}

/* float32 var and std of values whose squared deviations overflow float32
 * (beyond 1.8e19): PyTorch accumulates them in double, and so does
 * cltensor where the device has float64; the std of 1e20s and zeros once
 * came out inf.  Reference in double, over every dim and over all. */
Test(reduce, float32_var_std_beyond_float_squares)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no fp64: float32 var accumulates in float32");
    enum { R = 3, C = 2000 };
    float *h = malloc(R * C * sizeof *h);
    for (int i = 0; i < R * C; i++)
        h[i] = (i % 2) ? 0.0f : (float)(1e18 * (1 + i % 7));
    int64_t shape[2] = {R, C};
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape, h, &a));
    for (int row = -1; row < R; row++) {
        const float *x = row < 0 ? h : h + row * C;
        int n = row < 0 ? R * C : C;
        double m = 0, s = 0;
        for (int i = 0; i < n; i++)
            m += x[i];
        m /= n;
        for (int i = 0; i < n; i++)
            s += (x[i] - m) * (x[i] - m);
        double var = s / (n - 1);
        float *v, *sd;
        if (row < 0) {
            CHECK(clt_var(a, 1, &r));
            v = read_f32(r);
            clt_tensor_free(r);
            CHECK(clt_std(a, 1, &r));
        } else {
            CHECK(clt_var_dim(a, 1, 1, 0, &r));
            v = read_f32(r);
            v[0] = v[row];
            clt_tensor_free(r);
            CHECK(clt_std_dim(a, 1, 1, 0, &r));
        }
        sd = read_f32(r);
        if (row >= 0)
            sd[0] = sd[row];
        clt_tensor_free(r);
        cr_assert(isfinite(v[0]) && close_enough(v[0], var, 1e-6, 0), "var %g, want %g", v[0],
                  var);
        cr_assert(close_enough(sd[0], sqrt(var), 1e-6, 0), "std %g, want %g", sd[0], sqrt(var));
        free(v);
        free(sd);
    }
    clt_tensor_free(a);
    free(h);
}

Test(reduce, scalar_input_and_dim_errors)
{
    clt_device *dev = get_device("cpu");
    float x = 2.5f;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 0, NULL, &x, &a));
    CHECK(clt_sum_dim(a, -1, 1, &r));
    cr_assert_eq(clt_tensor_ndim(r), 0);
    cr_assert_eq(item(r), 2.5);
    clt_tensor_free(r);
    CHECK(clt_argmax_dim(a, 0, 0, &r));
    cr_assert_eq(item(r), 0.0);
    clt_tensor_free(r);
    cr_assert_eq(clt_sum_dim(a, 1, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE);
    clt_tensor_free(a);

    int64_t shape[3] = {2, 3, 4};
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, shape, &a));
    r = (clt_tensor *)1;
    cr_assert_eq(clt_mean_dim(a, 3, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "expected to be in range of [-3, 2], but got 3") != NULL,
              "%s", clt_last_error());
    cr_assert_eq(clt_max_dim(a, -4, 0, &r, NULL), CLT_ERR_DIM_OUT_OF_RANGE);
    cr_assert_eq(clt_sum(NULL, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_sum(a, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_var_dim(NULL, 0, 1, 0, &r), CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(a);
}

/* Every float32 result of the sum-like ops as raw bytes. */
static void run_bitwise(clt_device *dev, const float *h, const float *hp, int64_t n,
                        unsigned char *outb, size_t *len)
{
    clt_tensor *a = NULL, *p = NULL, *a2 = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, hp, &p));
    int64_t shape2[2] = {n / 1000, 1000};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape2, h, &a2));
    *len = 0;
    const rk ks[] = {SUM, MEAN, VAR, STD, PROD, ARGMAX, MIN};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        CHECK(dev_reduce(ks[i], ks[i] == PROD ? p : a, 1, 0, 0, &r));
        size_t nb = clt_tensor_nbytes(r);
        CHECK(clt_tensor_read(r, outb + *len, nb));
        *len += nb;
        clt_tensor_free(r);
    }
    for (int d = 0; d < 2; d++) {
        CHECK(clt_sum_dim(a2, d, 0, &r));
        size_t nb = clt_tensor_nbytes(r);
        CHECK(clt_tensor_read(r, outb + *len, nb));
        *len += nb;
        clt_tensor_free(r);
        CHECK(clt_var_dim(a2, d, 1, 0, &r));
        nb = clt_tensor_nbytes(r);
        CHECK(clt_tensor_read(r, outb + *len, nb));
        *len += nb;
        clt_tensor_free(r);
        CHECK(clt_argmin_dim(a2, d, 0, &r));
        nb = clt_tensor_nbytes(r);
        CHECK(clt_tensor_read(r, outb + *len, nb));
        *len += nb;
        clt_tensor_free(r);
    }
    /* Columns of 500 rows: one block per lane, the lanes in registers. */
    int64_t shape4[2] = {500, n / 500};
    clt_tensor *a4 = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape4, h, &a4));
    for (int i = 0; i < 2; i++) {
        CHECK(i == 0 ? clt_sum_dim(a4, 0, 0, &r) : clt_var_dim(a4, 0, 1, 0, &r));
        size_t nb = clt_tensor_nbytes(r);
        CHECK(clt_tensor_read(r, outb + *len, nb));
        *len += nb;
        clt_tensor_free(r);
    }
    clt_tensor_free(a4);
    /* Short rows (20 elements) take their own CPU kernel. */
    int64_t shape3[2] = {n / 20, 20};
    clt_tensor *a3 = NULL, *p3 = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape3, h, &a3));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape3, hp, &p3));
    for (int i = 0; i < 3; i++) {
        CHECK(i == 0 ? clt_sum_dim(a3, 1, 0, &r)
                     : i == 1 ? clt_std_dim(a3, -1, 1, 1, &r) : clt_prod_dim(p3, 1, 0, &r));
        size_t nb = clt_tensor_nbytes(r);
        CHECK(clt_tensor_read(r, outb + *len, nb));
        *len += nb;
        clt_tensor_free(r);
    }
    clt_tensor_free(a3);
    clt_tensor_free(p3);
    clt_tensor_free(a);
    clt_tensor_free(p);
    clt_tensor_free(a2);
}

static void bitwise_inputs(float **h, float **hp, int64_t *n)
{
    *n = 1000 * 1000 + 0; /* 245 chunks: a second pass */
    *h = malloc((size_t)*n * sizeof **h);
    *hp = malloc((size_t)*n * sizeof **hp);
    fill_random(*h, (size_t)*n, 1234);
    fill_data(*hp, (size_t)*n, 4321, 1);
    for (int64_t i = 0; i < *n; i++) /* values with long mantissas: order shows */
        (*h)[i] = (*h)[i] * 1.0001f + 1e-3f;
}

Test(reduce, bit_identical_across_devices)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    float *h, *hp;
    int64_t n;
    bitwise_inputs(&h, &hp, &n);
    size_t cap = 1 << 21, l0 = 0, l1 = 0;
    unsigned char *b0 = malloc(cap), *b1 = malloc(cap);
    run_bitwise(d0, h, hp, n, b0, &l0);
    run_bitwise(d1, h, hp, n, b1, &l1);
    cr_assert_eq(l0, l1);
    cr_assert(memcmp(b0, b1, l0) == 0, "results differ between devices");
    free(b0);
    free(b1);
    free(h);
    free(hp);
}

/* The GPU-style kernels (work-groups, local memory) reproduce the CPU-style
 * order exactly; forced here on the CPU device. */
Test(reduce, bit_identical_across_kernel_variants)
{
    clt_device *dev = get_device("cpu");
    float *h, *hp;
    int64_t n;
    bitwise_inputs(&h, &hp, &n);
    size_t cap = 1 << 21, l0 = 0, l1 = 0;
    unsigned char *b0 = malloc(cap), *b1 = malloc(cap);
    setenv("CLTENSOR_REDUCE_STYLE", "cpu", 1);
    run_bitwise(dev, h, hp, n, b0, &l0);
    setenv("CLTENSOR_REDUCE_STYLE", "gpu", 1);
    run_bitwise(dev, h, hp, n, b1, &l1);
    unsetenv("CLTENSOR_REDUCE_STYLE");
    cr_assert_eq(l0, l1);
    cr_assert(memcmp(b0, b1, l0) == 0, "CPU-style and GPU-style kernels differ");
    free(b0);
    free(b1);
    free(h);
    free(hp);
}

/* argmax and argmin refuse bool tensors, as PyTorch's CPU kernels do
 * ("argmax_cpu" not implemented for 'Bool'); max and min accept them. */
Test(reduce, arg_reductions_refuse_bool)
{
    clt_device *dev = get_device("cpu");
    uint8_t hb[6] = {0, 1, 1, 0, 1, 0};
    int64_t shape[2] = {2, 3};
    clt_tensor *b = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 2, shape, hb, &b));
    r = (clt_tensor *)1;
    cr_assert_eq(clt_argmax(b, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "bool") != NULL, "%s", clt_last_error());
    r = (clt_tensor *)1;
    cr_assert_eq(clt_argmin(b, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_argmax_dim(b, 1, 0, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_argmin_dim(b, -1, 1, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    CHECK(clt_max_dim(b, 1, 0, &r, NULL));
    uint8_t m[2] = {9, 9};
    CHECK(clt_tensor_read(r, m, sizeof m));
    cr_assert(m[0] == (hb[0] | hb[1] | hb[2]) && m[1] == (hb[3] | hb[4] | hb[5]));
    clt_tensor_free(r);
    clt_tensor_free(b);
}

/* Error of got against want in units in the last place of want as a
 * float32 (or float64 when dbl). */
static double ulps_off(double got, long double want, int dbl)
{
    int e = 0;
    frexp((double)want, &e);
    return fabs((double)((long double)got - want)) / ldexp(1.0, e - (dbl ? 53 : 24));
}

/* Long sums of one repeated value end within two units in the last place of
 * the exact sum, in every kernel layout (rows, columns 16 at a time, single
 * columns, work-groups): each lane adds only BLOCK elements plainly, and the
 * block sums are compensated.  Lanes that added their 64 elements of a chunk
 * one after the other were 7 to 10 units off for 0.1 and 1e8 over 15625
 * and 33285 elements (torch's cascade sum: within one). */
static void check_constant_sums(clt_dtype dt, const char *style)
{
    clt_device *dev = get_device("cpu");
    int dbl = dt == CLT_FLOAT64;
    const double vals[] = {0.1, 1e8, 1.0 / 3};
    const int64_t lens[] = {15625, 4096 * 8 + 517, 517};
    const int64_t widths[] = {64, 5};
    if (style)
        setenv("CLTENSOR_REDUCE_STYLE", style, 1);
    for (size_t vi = 0; vi < 3; vi++)
        for (size_t li = 0; li < 3; li++)
            for (size_t wi = 0; wi < 2; wi++) {
                int64_t R = lens[li], W = widths[wi];
                double v = dbl ? vals[vi] : (double)(float)vals[vi];
                long double want = (long double)R * v;
                clt_tensor *cols = NULL, *rows = NULL, *r = NULL;
                CHECK(clt_full(dev, dt, 2, (int64_t[]){R, W}, v, &cols));
                CHECK(clt_full(dev, dt, 2, (int64_t[]){W, R}, v, &rows));
                for (int d = 0; d < 2; d++) {
                    CHECK(clt_sum_dim(d ? rows : cols, d, 0, &r));
                    double *got = read_doubles(r);
                    for (int64_t i = 0; i < W; i++)
                        cr_assert(ulps_off(got[i], want, dbl) <= 2,
                                  "%s sum of %lld x %.9g (dim %d of width %lld, style %s): "
                                  "%.17g, exact %.17Lg (%.1f units off)",
                                  clt_dtype_name(dt), (long long)R, v, d, (long long)W,
                                  style ? style : "default", got[i], want,
                                  ulps_off(got[i], want, dbl));
                    free(got);
                    clt_tensor_free(r);
                }
                clt_tensor_free(cols);
                clt_tensor_free(rows);
            }
    if (style)
        unsetenv("CLTENSOR_REDUCE_STYLE");
}

Test(reduce, long_constant_sums_within_two_ulps)
{
    check_constant_sums(CLT_FLOAT32, NULL);
    check_constant_sums(CLT_FLOAT32, "gpu");
    clt_device *dev = get_device("cpu");
    if (clt_device_supports_dtype(dev, CLT_FLOAT64))
        check_constant_sums(CLT_FLOAT64, NULL);
}

/* The blocks of every lane are the same in each kernel variant, also where
 * the last, partial round of a chunk starts a block (lanes past the end add
 * an empty block): 517 = 8 * 64 + 5 elements, and more chunks after it. */
Test(reduce, bit_identical_block_edges)
{
    clt_device *dev = get_device("cpu");
    const int64_t lens[] = {517, 2 * 4096 + 517, 64 * 8 * 3 + 1, 63};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t n = lens[li], W = 17;
        float *h = malloc((size_t)(n * W) * sizeof *h);
        fill_random(h, (size_t)(n * W), 77u + (unsigned)li);
        for (int64_t i = 0; i < n * W; i++)
            h[i] = h[i] * 1.0001f + 1e-3f;
        float out[2][2 + 2 * 17] = {{0}}, *rows[2] = {malloc((size_t)n * sizeof(float)),
                                                      malloc((size_t)n * sizeof(float))};
        cr_assert(rows[0] && rows[1]);
        for (int s = 0; s < 2; s++) {
            setenv("CLTENSOR_REDUCE_STYLE", s ? "gpu" : "cpu", 1);
            clt_tensor *a = NULL, *m = NULL, *r = NULL;
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){n, W}, h, &m));
            CHECK(clt_sum(a, &r));
            CHECK(clt_tensor_read(r, &out[s][0], sizeof(float)));
            clt_tensor_free(r);
            CHECK(clt_var(a, 1, &r));
            CHECK(clt_tensor_read(r, &out[s][1], sizeof(float)));
            clt_tensor_free(r);
            CHECK(clt_sum_dim(m, 0, 0, &r));
            CHECK(clt_tensor_read(r, &out[s][2], (size_t)W * sizeof(float)));
            clt_tensor_free(r);
            CHECK(clt_var_dim(m, 0, 1, 0, &r));
            CHECK(clt_tensor_read(r, &out[s][2 + W], (size_t)W * sizeof(float)));
            clt_tensor_free(r);
            CHECK(clt_sum_dim(m, 1, 0, &r)); /* rows of 17: the short-row kernel */
            CHECK(clt_tensor_read(r, rows[s], (size_t)n * sizeof(float)));
            clt_tensor_free(r);
            clt_tensor_free(a);
            clt_tensor_free(m);
        }
        unsetenv("CLTENSOR_REDUCE_STYLE");
        cr_assert(memcmp(out[0], out[1], sizeof out[0]) == 0 &&
                      memcmp(rows[0], rows[1], (size_t)n * sizeof(float)) == 0,
                  "n %lld: CPU-style and GPU-style results differ", (long long)n);
        /* and right: the host's sum */
        long double want = 0, mag = 0;
        for (int64_t i = 0; i < n; i++)
            want += h[i], mag += fabsl((long double)h[i]);
        cr_assert(fabsl((long double)out[0][0] - want) <= 1e-6L * mag,
                  "n %lld: sum %.9g, want %.9Lg", (long long)n, out[0][0], want);
        free(h), free(rows[0]), free(rows[1]);
    }
}

/* One infinite element keeps the sum infinite (not NaN: the compensation
 * of an infinite sum is inf - inf), wherever it lies: first or last block
 * of a lane, first or later chunk; in every kernel layout and style. */
Test(reduce, one_inf_sums_to_inf)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3 * 4096 + 517, W = 17;
    const int64_t at[] = {0, 7 * 64 + 3, 4096 + 8 * 64, 3 * 4096 + 512 + 1};
    float *h = malloc((size_t)(n * W) * sizeof *h);
    for (int s = 0; s < 2; s++) {
        setenv("CLTENSOR_REDUCE_STYLE", s ? "gpu" : "cpu", 1);
        for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
            fill_random(h, (size_t)(n * W), 5u + (unsigned)i);
            clt_tensor *a = NULL, *m = NULL, *r = NULL;
            h[at[i]] = INFINITY; /* element at[i] of the flat sum */
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
            h[at[i]] = 1;
            h[at[i] * W + 3] = INFINITY; /* row at[i] of column 3 */
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){n, W}, h, &m));
            CHECK(clt_sum(a, &r));
            double v = item(r);
            cr_assert(isinf(v) && v > 0, "style %d, inf at %lld: sum %g", s, (long long)at[i], v);
            clt_tensor_free(r);
            CHECK(clt_sum_dim(m, 0, 0, &r));
            double *got = read_doubles(r);
            for (int64_t j = 0; j < W; j++)
                cr_assert(j == 3 ? isinf(got[j]) && got[j] > 0 : isfinite(got[j]),
                          "style %d, inf at row %lld: column %lld sums to %g", s,
                          (long long)at[i], (long long)j, got[j]);
            free(got);
            clt_tensor_free(r);
            clt_tensor_free(a);
            clt_tensor_free(m);
        }
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
    free(h);
}

/* Column sums, products and variances (dim 0 of [R, W]) where a chunk has
 * at most one block per lane (R up to 512: lanes in registers, rows read
 * whole) or more, with inner blocks of four, fewer and no full vectors and
 * a chunk after a full one: the host's sums in long double, and the same
 * bits from the CPU-style kernels as from the GPU-style ones (one position
 * a work-item), in float32 and float64. */
static void check_columns(clt_dtype dt)
{
    clt_device *dev = get_device("cpu");
    int dbl = dt == CLT_FLOAT64;
    size_t es = dbl ? 8 : 4;
    const int64_t Rs[] = {1, 7, 64, 65, 200, 512, 513, 4096 + 300};
    const int64_t Ws[] = {16, 100, 200};
    for (size_t ri = 0; ri < sizeof Rs / sizeof Rs[0]; ri++)
        for (size_t wi = 0; wi < sizeof Ws / sizeof Ws[0]; wi++) {
            int64_t R = Rs[ri], W = Ws[wi], n = R * W;
            float *h = malloc((size_t)n * sizeof *h);
            double *hd = malloc((size_t)n * sizeof *hd);
            cr_assert(h && hd);
            fill_random(h, (size_t)n, 31u + (unsigned)(ri * 7 + wi));
            for (int64_t i = 0; i < n; i++) /* long mantissas: the order shows */
                hd[i] = dbl ? (double)h[i] * (1 + 1e-9) + 1e-3 : (double)(h[i] * 1.0001f + 1e-3f);
            unsigned char *out[2];
            for (int s = 0; s < 2; s++) {
                setenv("CLTENSOR_REDUCE_STYLE", s ? "gpu" : "cpu", 1);
                out[s] = malloc((size_t)(3 * W) * es);
                clt_tensor *a = NULL, *pa = NULL, *r = NULL;
                CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){R, W}, hd, &a));
                if (!dbl) {
                    CHECK(clt_to_dtype(a, CLT_FLOAT32, &r));
                    clt_tensor_free(a);
                    a = r;
                }
                /* products of 1 + x / 1000: finite over 4396 rows */
                CHECK(clt_div_scalar(a, 1000.0, &r));
                CHECK(clt_add_scalar(r, 1.0, &pa));
                clt_tensor_free(r);
                for (int k = 0; k < 3; k++) {
                    CHECK(k == 0   ? clt_sum_dim(a, 0, 0, &r)
                          : k == 1 ? clt_prod_dim(pa, 0, 0, &r)
                                   : clt_var_dim(a, 0, 1, 0, &r));
                    CHECK(clt_tensor_read(r, out[s] + (size_t)(k * W) * es, (size_t)W * es));
                    if (s == 0) {
                        double *got = read_doubles(r), *hp = read_doubles(pa);
                        for (int64_t i = 0; i < W; i++) {
                            long double want = k == 1 ? 1 : 0, mag = 0, m = 0;
                            for (int64_t j = 0; j < R; j++)
                                m += hd[j * W + i];
                            m /= R;
                            for (int64_t j = 0; j < R; j++) {
                                long double x = hd[j * W + i];
                                if (!dbl)
                                    x = (float)x;
                                if (k == 1)
                                    want *= hp[j * W + i];
                                else if (k == 0)
                                    want += x, mag += fabsl(x);
                                else
                                    want += (x - m) * (x - m), mag += (x - m) * (x - m);
                            }
                            if (k == 1)
                                mag = want * R;
                            if (k == 2)
                                want = R > 1 ? want / (R - 1) : NAN, mag /= R > 1 ? R - 1 : 1;
                            cr_assert(isnan((double)want)
                                          ? isnan(got[i])
                                          : fabsl(got[i] - want) <= (dbl ? 1e-14L : 1e-6L) * mag,
                                      "%s %s of [%lld, %lld] column %lld: %.17g, want %.17Lg",
                                      clt_dtype_name(dt), k == 0 ? "sum" : k == 1 ? "prod" : "var",
                                      (long long)R, (long long)W, (long long)i, got[i], want);
                        }
                        free(got);
                        free(hp);
                    }
                    clt_tensor_free(r);
                }
                clt_tensor_free(a);
                clt_tensor_free(pa);
            }
            unsetenv("CLTENSOR_REDUCE_STYLE");
            cr_assert(memcmp(out[0], out[1], (size_t)(3 * W) * es) == 0,
                      "%s columns of [%lld, %lld]: CPU-style and GPU-style results differ",
                      clt_dtype_name(dt), (long long)R, (long long)W);
            free(out[0]), free(out[1]), free(h), free(hd);
        }
}

Test(reduce, column_chunks_of_one_block_and_more)
{
    check_columns(CLT_FLOAT32);
    if (clt_device_supports_dtype(get_device("cpu"), CLT_FLOAT64))
        check_columns(CLT_FLOAT64);
}
