/* test_scan.c: the cumulative ops of reduce.h (cumsum, cumprod, cummax,
 * cummin, logcumsumexp) against host references in double, each slice in
 * order: every dim, dtypes, strided inputs, ties and NaN, and slices long
 * enough to be cut into chunks (one row, rows along a middle dim, columns);
 * gradients against finite differences in float64; bad input. */
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"

/* Long lines in chunks whatever the machine's compute units (a CPU with
 * fewer than 4 would run them one work-item a line). */
static void chunks(void)
{
    setenv("CLTENSOR_SCAN", "chunks", 1);
}

enum { SUM, PROD, MAX, MIN, LCSE };
static const char *const names[] = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"};

static clt_status scan(int op, const clt_tensor *a, int dim, clt_tensor **out,
                       clt_tensor **idx)
{
    switch (op) {
    case SUM: return clt_cumsum(a, dim, out);
    case PROD: return clt_cumprod(a, dim, out);
    case MAX: return clt_cummax(a, dim, out, idx);
    case MIN: return clt_cummin(a, dim, out, idx);
    default: return clt_logcumsumexp(a, dim, out);
    }
}

/* torch's _log_add_exp_helper(x, acc). */
static double log_add_exp(double x, double acc)
{
    double mn = isnan(acc) ? acc : (acc < x ? acc : x), mx = isnan(acc) ? acc : (x < acc ? acc : x);
    return (mn != mx || isfinite(mn)) ? log1p(exp(mn - mx)) + mx : x;
}

/* One step of op over a slice, in double (int64 products wrap as int64). */
static void step(int op, bool integer, double x, int64_t k, double *acc, int64_t *ai)
{
    switch (op) {
    case SUM: *acc += x; break;
    case PROD:
        *acc = integer ? (double)(int64_t)((uint64_t)(int64_t)*acc * (uint64_t)(int64_t)x)
                       : *acc * x;
        break;
    case MAX:
    case MIN:
        if (*ai < 0 || isnan(x) || (!isnan(*acc) && (op == MAX ? x >= *acc : x <= *acc))) {
            *acc = x;
            *ai = k;
        }
        break;
    default: *acc = log_add_exp(x, *acc);
    }
}

/* op of a (contiguous values h, shape [outer, R, inner] around dim) against
 * the reference; float results within rtol of it (0: the reference rounded
 * to float32 or taken as is, bit for bit). */
static void check_scan(int op, const clt_tensor *a, const double *h, clt_dtype dt, int64_t outer,
                       int64_t R, int64_t inner, int dim, double rtol)
{
    clt_tensor *r = NULL, *ri = NULL;
    CHECK(scan(op, a, dim, &r, op == MAX || op == MIN ? &ri : NULL));
    bool integer = dt != CLT_FLOAT32 && dt != CLT_FLOAT64;
    clt_dtype want_dt = integer && op <= PROD ? CLT_INT64 : dt;
    cr_assert_eq(clt_tensor_dtype(r), want_dt, "%s of %s gives %s", names[op],
                 clt_dtype_name(dt), clt_dtype_name(clt_tensor_dtype(r)));
    cr_assert_eq(clt_tensor_numel(r), outer * R * inner);
    double *got = read_as_f64(r);
    int64_t *gi = NULL;
    if (ri) {
        gi = malloc((size_t)(outer * R * inner + 1) * sizeof *gi);
        CHECK(clt_tensor_read(ri, gi, (size_t)(outer * R * inner) * sizeof *gi));
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = op == SUM ? 0 : op == PROD ? 1 : -INFINITY;
            int64_t ai = -1;
            for (int64_t k = 0; k < R; k++) {
                int64_t at = (o * R + k) * inner + i;
                step(op, integer, h[at], k, &acc, &ai);
                double want = dt == CLT_FLOAT32 ? (double)(float)acc : acc;
                bool ok = rtol > 0 && !integer ? close_enough(got[at], want, rtol, 0)
                                               : got[at] == want || (isnan(got[at]) && isnan(want));
                cr_assert(ok, "%s of %s, dim %d of [%lld, %lld, %lld], element %lld: %.17g, want %.17g",
                          names[op], clt_dtype_name(dt), dim, (long long)outer, (long long)R,
                          (long long)inner, (long long)at, got[at], want);
                if (gi)
                    cr_assert_eq(gi[at], ai, "%s of %s, dim %d, element %lld: index %lld, want %lld",
                                 names[op], clt_dtype_name(dt), dim, (long long)at,
                                 (long long)gi[at], (long long)ai);
            }
        }
    free(got);
    free(gi);
    clt_tensor_free(r);
    clt_tensor_free(ri);
}

/* Values in [-2, 2] with three decimals, or rounded to integers (ties), or
 * near 1 (long products stay finite), each one a float32 holds. */
enum { SPREAD, TIES, NEAR1 };
static double *values(size_t n, unsigned seed, int kind)
{
    double *h = malloc((n ? n : 1) * sizeof *h);
    float *f = malloc((n ? n : 1) * sizeof *f);
    cr_assert(h && f);
    fill_random(f, n, seed);
    for (size_t i = 0; i < n; i++) {
        double x = (double)f[i] / 5;
        h[i] = kind == TIES ? round(x * 2) : kind == NEAR1 ? 1 + x / 4096 : round(x * 1e3) / 1e3;
        h[i] = (double)(float)h[i]; /* what a float32 tensor holds */
    }
    free(f);
    return h;
}

/* Every op over every dim of a tensor of shape (nd dims) and dtype dt. */
static void every_op(clt_dtype dt, int nd, const int64_t *shape, int kind, double rtol)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    double *h = values((size_t)n, 7u + (unsigned)n, kind);
    bool integer = dt != CLT_FLOAT32 && dt != CLT_FLOAT64;
    for (int64_t k = 0; integer && k < n; k++)
        h[k] = dt == CLT_BOOL ? h[k] > 0 : trunc(dt == CLT_UINT8 ? fabs(h[k]) * 3 : h[k] * 3);
    clt_tensor *a = tensor_of(dev, dt, nd, shape, h);
    for (int d = 0; d < (nd ? nd : 1); d++) {
        int64_t outer = 1, inner = 1, R = nd ? shape[d] : 1;
        for (int k = 0; k < nd; k++) {
            outer *= k < d ? shape[k] : 1;
            inner *= k > d ? shape[k] : 1;
        }
        for (int op = SUM; op <= LCSE; op++)
            if (op != LCSE || !integer)
                check_scan(op, a, h, dt, outer, R, inner, d - (d % 2 ? nd : 0), rtol);
    }
    clt_tensor_free(a);
    free(h);
}

Test(scan, every_dim_every_dtype)
{
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};
    const int64_t s3[3] = {3, 4, 5}, s1[1] = {7}, e[2] = {0, 3};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        every_op(dts[k], 3, s3, SPREAD, 1e-6);
        every_op(dts[k], 3, s3, TIES, 1e-6);
        every_op(dts[k], 1, s1, SPREAD, 1e-6);
        every_op(dts[k], 0, NULL, SPREAD, 1e-6);
        every_op(dts[k], 2, e, SPREAD, 1e-6);
    }
}

/* Slices long enough to be cut into chunks: one row, rows along a middle
 * dim, columns; many short rows (one line a work-item).  Integer sums and
 * products exact, cummax and cummin exact with their indices, float sums
 * and products within a few roundings a chunk. */
Test(scan, long_slices_take_the_chunks, .init = chunks)
{
    const int64_t shapes[][3] = {{1, 200000, 1}, {2, 50001, 3}, {1, 30000, 2}, {3000, 7, 1}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        every_op(CLT_FLOAT64, 3, shapes[k], NEAR1, 1e-12);
        every_op(CLT_FLOAT32, 3, shapes[k], NEAR1, 1e-6);
        every_op(CLT_FLOAT32, 3, shapes[k], TIES, 1e-6);
        every_op(CLT_INT64, 3, shapes[k], TIES, 0);
    }
}

/* A float32 cumsum of 2^22 0.1s, cut into chunks: each element still the
 * float32 nearest the double running sum (exact here), torch's CPU bits. */
Test(scan, long_float32_cumsum_keeps_torchs_bits, .init = chunks)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("the device has no float64");
    int64_t n = 1 << 22;
    double *h = malloc((size_t)n * sizeof *h);
    cr_assert_not_null(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = (double)0.1f;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, &n, h);
    check_scan(SUM, a, h, CLT_FLOAT32, 1, n, 1, 0, 0);
    clt_tensor_free(a);
    free(h);
}

/* Strided inputs (permuted, sliced with a step) against their contiguous
 * copies, long enough along the last dim for the chunks. */
Test(scan, strided_input, .init = chunks)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 40000};
    size_t n = 240000;
    double *h = values(n, 5, TIES);
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 3, shape, h), *v = NULL, *c = NULL;
    int perm[3] = {2, 0, 1};
    for (int w = 0; w < 2; w++) {
        if (w == 0)
            CHECK(clt_permute(a, 3, perm, &v));
        else
            CHECK(clt_slice(a, 2, 1, 40000, 3, &v));
        CHECK(clt_contiguous(v, &c));
        double *hc = read_as_f64(c);
        const int64_t *s = clt_tensor_shape(c);
        for (int op = SUM; op <= LCSE; op++) {
            check_scan(op, v, hc, CLT_FLOAT64, 1, s[0], s[1] * s[2], 0, 1e-12);
            check_scan(op, v, hc, CLT_FLOAT64, s[0] * s[1], s[2], 1, 2, 1e-12);
        }
        free(hc);
        clt_tensor_free(v);
        clt_tensor_free(c);
    }
    clt_tensor_free(a);
    free(h);
}

/* torch 1.13's values: the last index of equal maxima, a NaN sticks with
 * the latest NaN's index; logcumsumexp's infinities and NaN. */
Test(scan, ties_nan_and_infinities_as_torch)
{
    clt_device *dev = get_device("cpu");
    double h[7] = {1, 3, 3, NAN, 2, NAN, 5};
    int64_t n = 7;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, &n, h), *v = NULL, *i = NULL;
    CHECK(clt_cummax(a, 0, &v, &i));
    int64_t gi[7], wmax[7] = {0, 1, 2, 3, 3, 5, 5}, wmin[7] = {0, 0, 0, 3, 3, 5, 5};
    CHECK(clt_tensor_read(i, gi, sizeof gi));
    cr_assert(memcmp(gi, wmax, sizeof gi) == 0);
    clt_tensor_free(v);
    clt_tensor_free(i);
    CHECK(clt_cummin(a, 0, NULL, &i));
    CHECK(clt_tensor_read(i, gi, sizeof gi));
    cr_assert(memcmp(gi, wmin, sizeof gi) == 0);
    clt_tensor_free(i);
    clt_tensor_free(a);
    double e[6] = {-INFINITY, -INFINITY, 1, INFINITY, NAN, 3};
    n = 6;
    a = tensor_of(dev, CLT_FLOAT64, 1, &n, e);
    CHECK(clt_logcumsumexp(a, 0, &v));
    double *got = read_as_f64(v);
    cr_assert(got[0] == -INFINITY && got[1] == -INFINITY && got[2] == 1);
    cr_assert(got[3] == INFINITY && isnan(got[4]) && isnan(got[5]));
    free(got);
    clt_tensor_free(v);
    clt_tensor_free(a);
}

/* ---- gradients ------------------------------------------------------------------------ */

typedef struct gctx {
    int op, dim;
} gctx;

static clt_status g_scan(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const gctx *c = p;
    clt_tensor *idx = NULL;
    clt_status st = scan(c->op, in[0], c->dim, out, c->op == MAX || c->op == MIN ? &idx : NULL);
    clt_tensor_free(idx);
    return st;
}

/* gradcheck's comparison at the elements ks only, of one row of n (a
 * finite difference costs two evaluations of the whole row). */
static void sampled_gradcheck(clt_device *dev, int op, int64_t n, double *h, const int64_t *ks,
                              size_t nk)
{
    gctx c = {op, 0};
    gc_in in = {1, {n}, h, 1};
    double *data[1] = {h};
    clt_tensor *leaf = NULL, *g = NULL;
    gc_make(dev, 1, &in, data, &leaf, 1);
    clt_tensor *loss = gc_loss(dev, g_scan, &c, &leaf);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    CHECK(clt_grad(leaf, &g));
    double *an = read_as_f64(g), eps = 1e-4; /* the loss adds up 9000 values */
    int was = clt_set_grad_enabled(0);
    for (size_t j = 0; j < nk; j++) {
        double orig = h[ks[j]], lv[2];
        for (int side = 0; side < 2; side++) {
            clt_tensor *tmp = NULL;
            h[ks[j]] = orig + (side ? -eps : eps);
            gc_make(dev, 1, &in, data, &tmp, 0);
            clt_tensor *l = gc_loss(dev, g_scan, &c, &tmp);
            CHECK(clt_tensor_item(l, &lv[side]));
            clt_tensor_free(l);
            clt_tensor_free(tmp);
        }
        h[ks[j]] = orig;
        double num = (lv[0] - lv[1]) / (2 * eps);
        cr_assert(close_enough(an[ks[j]], num, 1e-5, 1e-5),
                  "%s of %lld, element %lld: autograd %.10g, finite differences %.10g",
                  names[op], (long long)n, (long long)ks[j], an[ks[j]], num);
    }
    clt_set_grad_enabled(was);
    free(an);
    clt_tensor_free(g);
    clt_tensor_free(leaf);
}

Test(scan, gradients_by_finite_differences, .init = chunks)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("the device has no float64");
    /* distinct values (no ties for cummax), a few zeros for cumprod: a
     * slice with one, one with two, one starting with one */
    double x[24];
    for (int k = 0; k < 24; k++)
        x[k] = 0.3 + 0.7 * (double)((k * 7) % 24) / 24.0 * ((k % 5) ? 1 : -1);
    double z[24];
    memcpy(z, x, sizeof z);
    z[1] = 0;
    z[5] = z[7] = 0;
    z[12] = 0;
    z[21] = 0;
    for (int op = SUM; op <= LCSE; op++)
        for (int dim = 0; dim < 3; dim++) {
            gctx c = {op, dim - (dim == 2 ? 3 : 0)};
            gc_in in = {3, {2, 3, 4}, x, 1};
            gradcheck(dev, g_scan, &c, 1, &in);
            if (op == PROD) {
                gc_in zin = {3, {2, 3, 4}, z, 1};
                gradcheck(dev, g_scan, &c, 1, &zin);
            }
        }
    /* one row long enough for the chunks, forward and backward */
    int64_t n = 9000, ks[] = {0, 1, 2, 3999, 4000, 4001, 6000, 8999};
    double *h = values((size_t)n, 3, NEAR1);
    h[4000] = 0;
    for (int op = PROD; op <= LCSE; op += LCSE - PROD)
        sampled_gradcheck(dev, op, n, h, ks, sizeof ks / sizeof ks[0]);
    free(h);
}

/* The node names torch gives, and a 0-d input is its own scan. */
Test(scan, grad_fn_names_and_scalars)
{
    clt_device *dev = get_device("cpu");
    double x = 2.5;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 0, NULL, &x);
    CHECK(clt_set_requires_grad(a, 1));
    const char *want[] = {"CumsumBackward0", "CumprodBackward0", "CummaxBackward0",
                          "CumminBackward0", "LogcumsumexpBackward0"};
    for (int op = SUM; op <= LCSE; op++) {
        clt_tensor *r = NULL, *i = NULL;
        CHECK(scan(op, a, -1, &r, op == MAX || op == MIN ? &i : NULL));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        cr_assert_str_eq(clt_grad_fn_name(r), want[op]);
        double *got = read_as_f64(r);
        cr_assert(op == LCSE ? got[0] == 2.5 : got[0] == 2.5, "%s of a 0-d tensor", names[op]);
        free(got);
        if (i) {
            int64_t gi = -1;
            CHECK(clt_tensor_read(i, &gi, sizeof gi));
            cr_assert_eq(gi, 0);
        }
        clt_tensor_free(r);
        clt_tensor_free(i);
    }
    clt_tensor_free(a);
}

Test(scan, bad_input)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {2, 3};
    double h[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *a = tensor_of(dev, CLT_INT32, 2, s, h), *o = (clt_tensor *)1, *i = (clt_tensor *)1;
    assert_error(clt_logcumsumexp(a, 1, &o), CLT_ERR_DTYPE_MISMATCH, "not implemented for int32");
    cr_assert_null(o);
    names_only("clt_logcumsumexp");
    o = (clt_tensor *)1;
    assert_error(clt_cumprod(a, 2, &o), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert_null(o);
    names_only("clt_cumprod");
    o = (clt_tensor *)1;
    assert_error(clt_cummax(a, -3, &o, &i), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert_null(o);
    cr_assert_null(i);
    assert_error(clt_cummin(a, 0, NULL, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    i = (clt_tensor *)1;
    assert_error(clt_cummin(NULL, 0, NULL, &i), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(i);
    clt_tensor_free(a);
}
