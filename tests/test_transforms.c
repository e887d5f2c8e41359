/* test_transforms.c: torch.distributions.transforms and
 * TransformedDistribution: each transform's values against host formulas
 * in double, round trips inverse(forward(x)) == x, log_abs_det_jacobian
 * against the log |det| of a Jacobian taken by central differences of
 * the host forward map, the event dims, shapes and signs as torch's, the
 * refusals; TransformedDistribution's and LogisticNormal's densities
 * against change-of-variables on the host; float64 gradchecks through
 * forward, log_abs_det_jacobian and log_prob. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

static void expect_values(clt_tensor *t, const double *want, size_t n, double rtol, double atol,
                          const char *what)
{
    cr_assert_not_null(t, "%s: no tensor", what);
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld elements, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol), "%s[%zu]: got %.15g, want %.15g",
                  what, i, got[i], want[i]);
    free(got);
    clt_tensor_free(t);
}

/* log |det a| of an n x n matrix (Gaussian elimination with pivoting). */
static double host_logabsdet(double *a, int n)
{
    double s = 0;
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
                p = r;
        for (int k = 0; k < n; k++) {
            double t = a[c * n + k];
            a[c * n + k] = a[p * n + k];
            a[p * n + k] = t;
        }
        s += log(fabs(a[c * n + c]));
        for (int r = c + 1; r < n; r++) {
            double f = a[r * n + c] / a[c * n + c];
            for (int k = c; k < n; k++)
                a[r * n + k] -= f * a[c * n + k];
        }
    }
    return s;
}

/* A host map of n inputs; writes its outputs. */
typedef void (*host_map)(const double *x, int n, double *y);

/* log |det J| of the first m outputs of f at x (n inputs, m = n), by
 * central differences. */
static double fd_logdet(host_map f, const double *x, int n, int ny, const int *pick)
{
    double *j = calloc((size_t)(n * n), sizeof *j), *xp = malloc(n * sizeof *xp);
    double *y1 = malloc(ny * sizeof *y1), *y2 = malloc(ny * sizeof *y2);
    const double h = 1e-6;
    for (int c = 0; c < n; c++) {
        memcpy(xp, x, n * sizeof *xp);
        xp[c] = x[c] + h;
        f(xp, n, y1);
        xp[c] = x[c] - h;
        f(xp, n, y2);
        for (int r = 0; r < n; r++)
            j[r * n + c] = (y1[pick ? pick[r] : r] - y2[pick ? pick[r] : r]) / (2 * h);
    }
    double s = host_logabsdet(j, n);
    free(j);
    free(xp);
    free(y1);
    free(y2);
    return s;
}

/* torch's StickBreakingTransform on K inputs (K + 1 outputs). */
static void host_stick(const double *x, int k, double *y)
{
    double rest = 1;
    for (int i = 0; i < k; i++) {
        double z = 1 / (1 + exp(-(x[i] - log((double)(k - i)))));
        y[i] = z * rest;
        rest *= 1 - z;
    }
    y[k] = rest;
}

/* torch's CorrCholeskyTransform of N = D (D - 1) / 2 inputs, D x D out. */
static int corr_d(int n)
{
    return (int)lround(sqrt(0.25 + 2.0 * n) + 0.5);
}

static void host_corr(const double *x, int n, double *y)
{
    int d = corr_d(n), k = 0;
    for (int i = 0; i < d; i++) {
        double rest = 1;
        for (int j = 0; j < d; j++) {
            if (j < i) {
                double r = tanh(x[k++]);
                y[i * d + j] = r * sqrt(rest);
                rest -= r * r * rest;
            } else {
                y[i * d + j] = j == i ? sqrt(rest) : 0;
            }
        }
    }
}

/* The transform a constructor call just wrote to *t (read after the call:
 * the order in which arguments are evaluated is unspecified). */
static clt_transform *mk(clt_status st, clt_transform **t)
{
    cr_assert_eq(st, CLT_OK, "%s", clt_last_error());
    return *t;
}

static clt_tensor *fwd(const clt_transform *t, const clt_tensor *x)
{
    clt_tensor *y = NULL;
    CHECK(clt_transform_forward(t, x, &y));
    return y;
}

static clt_tensor *inv(const clt_transform *t, const clt_tensor *y)
{
    clt_tensor *x = NULL;
    CHECK(clt_transform_inverse(t, y, &x));
    return x;
}

static clt_tensor *ladj(const clt_transform *t, const clt_tensor *x, const clt_tensor *y)
{
    clt_tensor *j = NULL;
    CHECK(clt_transform_log_abs_det_jacobian(t, x, y, &j));
    return j;
}

static const double X6[6] = {-2.5, -0.7, 0.0, 0.3, 1.1, 3.2};
static const int64_t SH23[2] = {2, 3}, SH6[1] = {6};

/* The elementwise transforms: forward, inverse and log|dy/dx| against the
 * host. */
Test(transforms, elementwise_against_host)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *x = f64(dev, 2, SH23, X6);
    const double ex[3] = {0.5, 2.0, 1.5}, loc[3] = {1.0, -2.0, 0.5}, sc[3] = {2.0, -0.5, 3.0};
    clt_tensor *e = f64(dev, 1, (int64_t[]){3}, ex), *l = f64(dev, 1, (int64_t[]){3}, loc),
               *s = f64(dev, 1, (int64_t[]){3}, sc);
    clt_transform *t;
    enum { EXP, POWER, SIGMOID, TANH, SOFTPLUS, AFFINE };
    for (int kind = EXP; kind <= AFFINE; kind++) {
        clt_status st = kind == EXP       ? clt_exp_transform(&t)
                        : kind == POWER   ? clt_power_transform(e, &t)
                        : kind == SIGMOID ? clt_sigmoid_transform(&t)
                        : kind == TANH    ? clt_tanh_transform(&t)
                        : kind == SOFTPLUS ? clt_softplus_transform(&t)
                                          : clt_affine_transform(l, s, 0, &t);
        CHECK(st);
        double in[6], want[6], wj[6];
        for (int i = 0; i < 6; i++) {
            double v = kind == POWER ? fabs(X6[i]) + 0.2 : X6[i], p = ex[i % 3], h = 1e-6;
            in[i] = v;
            double y, yp, ym;
#define MAP(u) (kind == EXP       ? exp(u)                                                      \
                : kind == POWER   ? pow((u), p)                                                 \
                : kind == SIGMOID ? 1 / (1 + exp(-(u)))                                         \
                : kind == TANH    ? tanh(u)                                                     \
                : kind == SOFTPLUS ? log1p(exp(u))                                              \
                                  : loc[i % 3] + sc[i % 3] * (u))
            y = MAP(v);
            yp = MAP(v + h);
            ym = MAP(v - h);
#undef MAP
            want[i] = y;
            wj[i] = log(fabs((yp - ym) / (2 * h)));
        }
        clt_tensor *xi = f64(dev, 2, SH23, in);
        clt_tensor *y = fwd(t, xi);
        clt_tensor *back = inv(t, y);
        expect_values(ladj(t, xi, y), wj, 6, 1e-6, 1e-8, clt_transform_name(t));
        expect_values(y, want, 6, 1e-12, 1e-14, clt_transform_name(t));
        expect_values(back, in, 6, 1e-9, 1e-12, "round trip");
        cr_assert_eq(clt_transform_bijective(t), 1);
        cr_assert_eq(clt_transform_domain_event_dim(t), 0);
        cr_assert_eq(clt_transform_codomain_event_dim(t), 0);
        clt_transform_free(t);
        clt_tensor_free(xi);
    }
    clt_tensor_free(x);
    clt_tensor_free(e);
    clt_tensor_free(l);
    clt_tensor_free(s);
}

/* torch's numerics: Sigmoid clamps to [tiny, 1 - eps]; Tanh's log-det is
 * finite far out. */
Test(transforms, sigmoid_clamp_and_tanh_tail)
{
    clt_device *dev = get_device("cpu:0");
    const double big[2] = {-800, 40};
    clt_tensor *x = f64(dev, 1, (int64_t[]){2}, big);
    clt_transform *sg = mk(clt_sigmoid_transform(&sg), &sg), *th = mk(clt_tanh_transform(&th), &th);
    expect_values(fwd(sg, x), (double[]){DBL_MIN, 1 - DBL_EPSILON}, 2, 0, 0, "clipped sigmoid");
    clt_tensor *y = fwd(th, x);
    /* 2 (log 2 - x - softplus(-2 x)) */
    expect_values(ladj(th, x, y), (double[]){2 * (log(2.0) - 800), 2 * (log(2.0) - 40)}, 2, 1e-12,
                  0, "tanh log-det");
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_transform_free(sg);
    clt_transform_free(th);
}

Test(transforms, affine_event_dims_and_sign)
{
    clt_device *dev = get_device("cpu:0");
    const double loc[3] = {1, 2, 3}, sc[3] = {2, -0.5, 4};
    clt_tensor *l = f64(dev, 1, (int64_t[]){3}, loc), *s = f64(dev, 1, (int64_t[]){3}, sc);
    clt_tensor *x = f64(dev, 2, SH23, X6);
    clt_transform *t = mk(clt_affine_transform(l, s, 1, &t), &t);
    cr_assert_eq(clt_transform_domain_event_dim(t), 1);
    clt_tensor *y = fwd(t, x);
    double sum = log(2.0) + log(0.5) + log(4.0);
    clt_tensor *j = ladj(t, x, y);
    assert_shape(j, 1, (int64_t[]){2});
    expect_values(j, (double[]){sum, sum}, 2, 1e-12, 0, "affine ev1");
    int sign = 7;
    clt_tensor *sg = NULL;
    CHECK(clt_transform_sign(t, &sign, &sg));
    cr_assert_eq(sign, 0);
    expect_values(sg, (double[]){1, -1, 1}, 3, 0, 0, "sign(scale)");
    /* Compose of a tensor sign and a number sign */
    clt_transform *ex = mk(clt_exp_transform(&ex), &ex);
    clt_transform *parts[2] = {ex, t}, *c = mk(clt_compose_transform(parts, 2, &c), &c);
    CHECK(clt_transform_sign(c, &sign, &sg));
    expect_values(sg, (double[]){1, -1, 1}, 3, 0, 0, "compose sign");
    CHECK(clt_transform_sign(ex, &sign, &sg));
    cr_assert_eq(sign, 1);
    cr_assert_null(sg);
    clt_transform *ab = mk(clt_abs_transform(&ab), &ab);
    sign = 5;
    assert_error(clt_transform_sign(ab, &sign, &sg), CLT_ERR_INVALID_ARGUMENT,
                 "AbsTransform does not implement sign");
    cr_assert_null(sg);
    assert_error(clt_transform_log_abs_det_jacobian(ab, x, x, &sg), CLT_ERR_INVALID_ARGUMENT,
                 "log_abs_det_jacobian");
    cr_assert_eq(clt_transform_bijective(ab), 0);
    clt_transform_free(ab);
    clt_transform_free(c);
    clt_transform_free(ex);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(l);
    clt_tensor_free(s);
    clt_transform_free(t);
}

Test(transforms, stick_breaking_against_host)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *x = f64(dev, 2, SH23, X6);
    clt_transform *t = mk(clt_stick_breaking_transform(&t), &t);
    double want[8], wj[2];
    for (int r = 0; r < 2; r++) {
        host_stick(X6 + 3 * r, 3, want + 4 * r);
        wj[r] = fd_logdet(host_stick, X6 + 3 * r, 3, 4, NULL);
    }
    clt_tensor *y = fwd(t, x);
    assert_shape(y, 2, (int64_t[]){2, 4});
    clt_tensor *back = inv(t, y);
    expect_values(ladj(t, x, y), wj, 2, 1e-6, 1e-8, "stick-breaking log-det");
    expect_values(y, want, 8, 1e-12, 1e-15, "stick-breaking");
    expect_values(back, X6, 6, 1e-9, 1e-12, "stick-breaking round trip");
    int n = 0;
    int64_t out[CLT_MAX_DIMS];
    CHECK(clt_transform_forward_shape(t, 2, (int64_t[]){5, 3}, &n, out));
    cr_assert(n == 2 && out[0] == 5 && out[1] == 4);
    CHECK(clt_transform_inverse_shape(t, 2, (int64_t[]){5, 3}, &n, out));
    cr_assert(n == 2 && out[1] == 2);
    assert_error(clt_transform_forward_shape(t, 0, NULL, &n, out), CLT_ERR_SHAPE_MISMATCH,
                 "Too few dimensions on input");
    cr_assert_eq(n, 0);
    clt_tensor_free(x);
    clt_transform_free(t);
}

Test(transforms, corr_cholesky_against_host)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *x = f64(dev, 1, SH6, X6);
    clt_transform *t = mk(clt_corr_cholesky_transform(&t), &t);
    cr_assert_eq(clt_transform_domain_event_dim(t), 1);
    cr_assert_eq(clt_transform_codomain_event_dim(t), 2);
    double want[16];
    host_corr(X6, 6, want);
    /* the strict lower triangle of y, in row order */
    const int pick[6] = {4, 8, 9, 12, 13, 14};
    double wj = fd_logdet(host_corr, X6, 6, 16, pick);
    clt_tensor *y = fwd(t, x);
    assert_shape(y, 2, (int64_t[]){4, 4});
    clt_tensor *back = inv(t, y);
    expect_values(ladj(t, x, y), &wj, 1, 1e-6, 1e-8, "corr-cholesky log-det");
    double *yv = read_as_f64(y);
    for (int i = 0; i < 4; i++) { /* rows of unit norm */
        double s = 0;
        for (int j = 0; j < 4; j++)
            s += yv[i * 4 + j] * yv[i * 4 + j];
        cr_assert(fabs(s - 1) < 1e-12, "row %d norm %g", i, s);
    }
    free(yv);
    expect_values(y, want, 16, 1e-12, 1e-15, "corr-cholesky");
    expect_values(back, X6, 6, 1e-8, 1e-10, "corr-cholesky round trip");
    clt_tensor *x4 = f64(dev, 1, (int64_t[]){4}, X6), *bad = NULL;
    assert_error(clt_transform_forward(t, x4, &bad), CLT_ERR_SHAPE_MISMATCH,
                 "Input is not a flattend lower-diagonal number");
    cr_assert_null(bad);
    clt_tensor_free(x4);
    clt_tensor_free(x);
    clt_transform_free(t);
}

Test(transforms, lower_cholesky_softmax_reshape)
{
    clt_device *dev = get_device("cpu:0");
    const double m[4] = {0.5, 7, -1, 0.2};
    clt_tensor *x = f64(dev, 2, (int64_t[]){2, 2}, m);
    clt_transform *lc = mk(clt_lower_cholesky_transform(&lc), &lc);
    clt_tensor *y = fwd(lc, x);
    clt_tensor *back = inv(lc, y);
    expect_values(y, (double[]){exp(0.5), 0, -1, exp(0.2)}, 4, 1e-14, 0, "lower cholesky");
    expect_values(back, (double[]){0.5, 0, -1, 0.2}, 4, 1e-14, 1e-15, "lower cholesky back");
    clt_transform *sm = mk(clt_softmax_transform(&sm), &sm);
    y = fwd(sm, x);
    double z0 = exp(0.5) + exp(7), z1 = exp(-1) + exp(0.2);
    clt_tensor *lg = inv(sm, y);
    expect_values(y, (double[]){exp(0.5) / z0, exp(7) / z0, exp(-1) / z1, exp(0.2) / z1}, 4,
                  1e-13, 0, "softmax");
    expect_values(lg, (double[]){0.5 - log(z0), 7 - log(z0), -1 - log(z1), 0.2 - log(z1)}, 4,
                  1e-12, 1e-14, "softmax inverse");
    clt_transform *rs = mk(clt_reshape_transform(1, (int64_t[]){2}, 2, (int64_t[]){1, 2}, &rs), &rs);
    y = fwd(rs, x);
    assert_shape(y, 3, (int64_t[]){2, 1, 2});
    clt_tensor *j = ladj(rs, x, y);
    assert_shape(j, 1, (int64_t[]){2});
    expect_values(j, (double[]){0, 0}, 2, 0, 0, "reshape log-det");
    clt_tensor_free(y);
    clt_transform *bad = NULL;
    assert_error(clt_reshape_transform(1, (int64_t[]){3}, 1, (int64_t[]){2}, &bad),
                 CLT_ERR_SHAPE_MISMATCH, "in_shape, out_shape have different numbers of elements");
    cr_assert_null(bad);
    clt_tensor_free(x);
    clt_transform_free(lc);
    clt_transform_free(sm);
    clt_transform_free(rs);
}

/* Compose, its inverse, Independent, Cat and Stack against the parts. */
Test(transforms, composites)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *x = f64(dev, 2, SH23, X6);
    const double two = 2, half = 0.5;
    clt_tensor *l = f64(dev, 0, NULL, &two), *s = f64(dev, 0, NULL, &half);
    clt_transform *ex = mk(clt_exp_transform(&ex), &ex), *af = mk(clt_affine_transform(l, s, 0, &af), &af);
    clt_transform *parts[2] = {af, ex}, *c = mk(clt_compose_transform(parts, 2, &c), &c);
    double want[6], wj[6];
    for (int i = 0; i < 6; i++) {
        want[i] = exp(2 + 0.5 * X6[i]);
        wj[i] = log(0.5) + 2 + 0.5 * X6[i];
    }
    clt_tensor *y = fwd(c, x);
    clt_transform *ci = mk(clt_transform_inv(c, &ci), &ci);
    cr_assert_str_eq(clt_transform_name(ci), "ComposeTransform");
    clt_tensor *back = fwd(ci, y);
    expect_values(ladj(c, x, y), wj, 6, 1e-12, 1e-14, "compose log-det");
    double neg[6];
    for (int i = 0; i < 6; i++)
        neg[i] = -wj[i];
    expect_values(ladj(ci, y, x), neg, 6, 1e-12, 1e-14, "inverse log-det");
    expect_values(back, X6, 6, 1e-12, 1e-14, "compose round trip");
    /* the inverse of the inverse is the original */
    clt_transform *ei = mk(clt_transform_inv(ex, &ei), &ei), *eii = mk(clt_transform_inv(ei, &eii), &eii);
    cr_assert_eq(eii, ex);
    cr_assert_str_eq(clt_transform_name(ei), "_InverseTransform");
    clt_transform_free(eii);
    clt_transform_free(ei);
    /* Independent sums the log-det over one more dim */
    clt_transform *id = mk(clt_independent_transform(c, 1, &id), &id);
    cr_assert_eq(clt_transform_domain_event_dim(id), 1);
    expect_values(ladj(id, x, y), (double[]){wj[0] + wj[1] + wj[2], wj[3] + wj[4] + wj[5]}, 2,
                  1e-12, 1e-14, "independent log-det");
    expect_values(y, want, 6, 1e-12, 0, "compose");
    /* Cat: exp on the first two columns, the affine on the last */
    clt_transform *cp[2] = {ex, af}, *cat = mk(clt_cat_transform(cp, 2, 1, (int64_t[]){2, 1}, &cat), &cat);
    y = fwd(cat, x);
    expect_values(ladj(cat, x, y),
                  (double[]){X6[0], X6[1], log(0.5), X6[3], X6[4], log(0.5)}, 6, 1e-12, 1e-14,
                  "cat log-det");
    expect_values(y, (double[]){exp(X6[0]), exp(X6[1]), 2 + 0.5 * X6[2], exp(X6[3]), exp(X6[4]),
                                2 + 0.5 * X6[5]},
                  6, 1e-12, 0, "cat");
    /* Stack along dim 0 of size 2: exp then the affine */
    clt_transform *st = mk(clt_stack_transform(cp, 2, 0, &st), &st);
    y = fwd(st, x);
    back = inv(st, y);
    expect_values(y, (double[]){exp(X6[0]), exp(X6[1]), exp(X6[2]), 2 + 0.5 * X6[3],
                                2 + 0.5 * X6[4], 2 + 0.5 * X6[5]},
                  6, 1e-12, 0, "stack");
    expect_values(back, X6, 6, 1e-12, 1e-14, "stack round trip");
    clt_tensor *x3 = f64(dev, 2, (int64_t[]){3, 2}, X6), *bad = NULL;
    assert_error(clt_transform_forward(st, x3, &bad), CLT_ERR_SHAPE_MISMATCH, "expected 2");
    cr_assert_null(bad);
    clt_tensor_free(x3);
    clt_transform_free(st);
    clt_transform_free(cat);
    clt_transform_free(id);
    clt_transform_free(ci);
    clt_transform_free(c);
    clt_transform_free(ex);
    clt_transform_free(af);
    clt_tensor_free(l);
    clt_tensor_free(s);
    clt_tensor_free(x);
}

static double phi(double z)
{
    return 0.5 * erfc(-z / sqrt(2.0));
}

static double normal_lp(double v, double m, double s)
{
    return -0.5 * ((v - m) / s) * ((v - m) / s) - log(s) - 0.5 * log(2 * M_PI);
}

/* TransformedDistribution(Normal, [Exp]) is LogNormal; with a negative
 * Affine its cdf flips; CumulativeDistribution's values are Normal's. */
Test(transforms, transformed_distribution_values)
{
    clt_device *dev = get_device("cpu:0");
    const double m[3] = {0.1, -0.4, 1.0}, sd[3] = {0.5, 1.2, 2.0}, v[3] = {0.3, 1.7, 4.0};
    clt_tensor *loc = f64(dev, 1, (int64_t[]){3}, m), *scale = f64(dev, 1, (int64_t[]){3}, sd);
    clt_tensor *val = f64(dev, 1, (int64_t[]){3}, v);
    clt_distribution *n = NULL, *d = NULL;
    CHECK(clt_normal_dist(loc, scale, 1, &n));
    clt_transform *ex = mk(clt_exp_transform(&ex), &ex);
    CHECK(clt_transformed_dist(n, &ex, 1, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "TransformedDistribution");
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_ndim(d), 0);
    cr_assert_eq(clt_distribution_has_rsample(d), 1);
    clt_tensor *lp = NULL, *cdf = NULL, *q = NULL;
    CHECK(clt_distribution_log_prob(d, val, &lp));
    CHECK(clt_distribution_cdf(d, val, &cdf));
    double wl[3], wc[3];
    for (int i = 0; i < 3; i++) {
        wl[i] = normal_lp(log(v[i]), m[i], sd[i]) - log(v[i]);
        wc[i] = phi((log(v[i]) - m[i]) / sd[i]);
    }
    CHECK(clt_distribution_icdf(d, cdf, &q));
    expect_values(lp, wl, 3, 1e-12, 1e-14, "lognormal log_prob");
    expect_values(cdf, wc, 3, 1e-12, 1e-14, "lognormal cdf");
    expect_values(q, v, 3, 1e-8, 1e-10, "icdf(cdf(v))");
    /* a value outside the support */
    const double neg = -1;
    clt_tensor *bad = f64(dev, 0, NULL, &neg);
    assert_error(clt_distribution_log_prob(d, bad, &lp), CLT_ERR_INVALID_ARGUMENT,
                 "GreaterThan(lower_bound=0.0)");
    cr_assert_null(lp);
    assert_error(clt_distribution_entropy(d, &lp), CLT_ERR_INVALID_ARGUMENT, "entropy");
    assert_error(clt_distribution_mean(d, &lp), CLT_ERR_INVALID_ARGUMENT, "mean");
    clt_tensor_free(bad);
    clt_distribution_free(d);
    /* negative scale: cdf is 1 - Phi */
    const double mone = -1, zero = 0;
    clt_tensor *z = f64(dev, 0, NULL, &zero), *mo = f64(dev, 0, NULL, &mone);
    clt_transform *flip = mk(clt_affine_transform(z, mo, 0, &flip), &flip);
    CHECK(clt_transformed_dist(n, &flip, 1, 1, &d));
    CHECK(clt_distribution_cdf(d, val, &cdf));
    for (int i = 0; i < 3; i++)
        wc[i] = 1 - phi((-v[i] - m[i]) / sd[i]);
    expect_values(cdf, wc, 3, 1e-12, 1e-14, "flipped cdf");
    clt_distribution_free(d);
    /* Normal(0, 1) of no batch dims through Affine(loc, scale) of [3] */
    clt_distribution *std = NULL;
    const double one = 1;
    clt_tensor *o1 = f64(dev, 0, NULL, &one);
    CHECK(clt_normal_dist(z, o1, 1, &std));
    clt_transform *ls = mk(clt_affine_transform(loc, scale, 0, &ls), &ls);
    CHECK(clt_transformed_dist(std, &ls, 1, 1, &d));
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    CHECK(clt_distribution_log_prob(d, val, &lp));
    for (int i = 0; i < 3; i++)
        wl[i] = normal_lp(v[i], m[i], sd[i]);
    expect_values(lp, wl, 3, 1e-12, 1e-14, "widened base log_prob");
    clt_distribution_free(d);
    clt_distribution_free(std);
    clt_transform_free(ls);
    clt_tensor_free(o1);
    /* CumulativeDistributionTransform(Normal) */
    clt_transform *cd = mk(clt_cumulative_distribution_transform(n, &cd), &cd);
    clt_tensor *y = fwd(cd, val);
    clt_tensor *j = ladj(cd, val, y);
    for (int i = 0; i < 3; i++) {
        wc[i] = phi((v[i] - m[i]) / sd[i]);
        wl[i] = normal_lp(v[i], m[i], sd[i]);
    }
    expect_values(y, wc, 3, 1e-12, 1e-14, "cdf transform");
    expect_values(j, wl, 3, 1e-12, 1e-14, "cdf transform log-det");
    clt_transform_free(cd);
    clt_transform_free(flip);
    clt_transform_free(ex);
    clt_distribution_free(n);
    clt_tensor_free(z);
    clt_tensor_free(mo);
    clt_tensor_free(loc);
    clt_tensor_free(scale);
    clt_tensor_free(val);
}

/* LogisticNormal: shapes, draws on the simplex, and log_prob by change of
 * variables with the host Jacobian. */
Test(transforms, logistic_normal)
{
    clt_device *dev = get_device("cpu:0");
    const double m[3] = {0.2, -0.5, 0.9}, sd[3] = {0.7, 1.3, 0.4};
    clt_tensor *loc = f64(dev, 1, (int64_t[]){3}, m), *scale = f64(dev, 1, (int64_t[]){3}, sd);
    clt_distribution *d = NULL;
    CHECK(clt_logistic_normal_dist(loc, scale, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "LogisticNormal");
    cr_assert_eq(clt_distribution_batch_ndim(d), 0);
    cr_assert_eq(clt_distribution_event_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_shape(d)[0], 4);
    clt_generator *g = NULL;
    CHECK(clt_generator_new(7, &g));
    clt_tensor *smp = NULL, *lp = NULL;
    CHECK(clt_distribution_sample(d, g, 1, (int64_t[]){5}, &smp));
    assert_shape(smp, 2, (int64_t[]){5, 4});
    double *sv = read_as_f64(smp);
    for (int r = 0; r < 5; r++) {
        double s = 0;
        for (int k = 0; k < 4; k++) {
            cr_assert(sv[r * 4 + k] > 0);
            s += sv[r * 4 + k];
        }
        cr_assert(fabs(s - 1) < 1e-12, "row %d sums to %.17g", r, s);
    }
    CHECK(clt_distribution_log_prob(d, smp, &lp));
    assert_shape(lp, 1, (int64_t[]){5});
    /* the host: x from the inverse stick-breaking, then Normal's density
     * less log |det| of the forward Jacobian (finite differences) */
    double want[5];
    for (int r = 0; r < 5; r++) {
        const double *y = sv + r * 4;
        double x[3], cum = 0;
        for (int k = 0; k < 3; k++) {
            cum += y[k];
            x[k] = log(y[k]) - log(1 - cum) + log(3.0 - k);
        }
        want[r] = -fd_logdet(host_stick, x, 3, 4, NULL);
        for (int k = 0; k < 3; k++)
            want[r] += normal_lp(x[k], m[k], sd[k]);
    }
    expect_values(lp, want, 5, 1e-6, 1e-7, "logistic normal log_prob");
    const double off[4] = {0.5, 0.5, 0.5, 0.5};
    clt_tensor *v = f64(dev, 1, (int64_t[]){4}, off);
    assert_error(clt_distribution_log_prob(d, v, &lp), CLT_ERR_INVALID_ARGUMENT, "Simplex()");
    cr_assert_null(lp);
    clt_tensor_free(v);
    free(sv);
    clt_tensor_free(smp);
    clt_generator_free(g);
    clt_distribution_free(d);
    clt_tensor_free(loc);
    clt_tensor_free(scale);
}

/* Shapes as torch computes them, and the refusals. */
Test(transforms, transformed_shapes_and_refusals)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *loc = f64(dev, 2, SH23, X6), *scale = NULL;
    CHECK(clt_ones_like(loc, &scale));
    clt_distribution *n = NULL, *d = NULL;
    CHECK(clt_normal_dist(loc, scale, 1, &n));
    clt_transform *sb = mk(clt_stick_breaking_transform(&sb), &sb);
    CHECK(clt_transformed_dist(n, &sb, 1, 1, &d));
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    cr_assert_eq(clt_distribution_batch_shape(d)[0], 2);
    cr_assert_eq(clt_distribution_event_shape(d)[0], 4);
    clt_tensor *r = NULL;
    CHECK(clt_distribution_rsample(d, NULL, 1, (int64_t[]){3}, &r));
    assert_shape(r, 3, (int64_t[]){3, 2, 4});
    clt_tensor_free(r);
    clt_distribution_free(d);
    /* a parameter that widens the base by a leading dim: drawn as a sample dim */
    double w[24] = {0};
    clt_tensor *wide = f64(dev, 3, (int64_t[]){4, 2, 3}, w);
    clt_transform *af = mk(clt_affine_transform(wide, scale, 0, &af), &af);
    CHECK(clt_transformed_dist(n, &af, 1, 1, &d));
    cr_assert_eq(clt_distribution_batch_ndim(d), 3);
    cr_assert_eq(clt_distribution_batch_shape(d)[0], 4);
    CHECK(clt_distribution_sample(d, NULL, 1, (int64_t[]){5}, &r));
    assert_shape(r, 4, (int64_t[]){5, 4, 2, 3});
    clt_tensor_free(r);
    clt_distribution_free(d);
    /* one that grows a size-1 dim of the base: refused */
    clt_tensor *loc1 = f64(dev, 2, (int64_t[]){1, 3}, X6);
    clt_distribution *n1 = NULL;
    CHECK(clt_normal_dist(loc1, loc1, 0, &n1));
    assert_error(clt_transformed_dist(n1, &af, 1, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "not supported");
    cr_assert_null(d);
    clt_distribution_free(n1);
    clt_tensor_free(loc1);
    /* a base of too few dims */
    const double zero = 0, one = 1;
    clt_tensor *z = f64(dev, 0, NULL, &zero), *o = f64(dev, 0, NULL, &one);
    clt_distribution *n0 = NULL;
    CHECK(clt_normal_dist(z, o, 1, &n0));
    assert_error(clt_transformed_dist(n0, &sb, 1, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "base_distribution needs to have shape with size at least 1");
    clt_transform *nul = NULL;
    assert_error(clt_transformed_dist(n0, &nul, 1, 1, &d), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_transformed_dist(n0, NULL, 0, 1, &d), CLT_OK, NULL);
    cr_assert_eq(clt_distribution_batch_ndim(d), 0);
    clt_distribution_free(d);
    clt_distribution_free(n0);
    clt_tensor_free(z);
    clt_tensor_free(o);
    clt_transform_free(af);
    clt_tensor_free(wide);
    clt_transform_free(sb);
    clt_distribution_free(n);
    clt_tensor_free(loc);
    clt_tensor_free(scale);
}

/* Inputs of too few dims for a part, or of the wrong shape, are refused
 * (never read out of bounds). */
Test(transforms, parts_see_too_few_dims)
{
    clt_device *dev = get_device("cpu:0");
    clt_transform *sb = mk(clt_stick_breaking_transform(&sb), &sb);
    clt_transform *st = mk(clt_stack_transform(&sb, 1, 0, &st), &st);
    cr_assert_eq(clt_transform_domain_event_dim(st), 1);
    const double one = 0.5;
    clt_tensor *x = f64(dev, 1, (int64_t[]){1}, &one), *y = NULL;
    assert_error(clt_transform_forward(st, x, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Too few dimensions on input");
    cr_assert_null(y);
    clt_transform *cc = mk(clt_corr_cholesky_transform(&cc), &cc);
    clt_tensor *v3 = f64(dev, 1, (int64_t[]){3}, X6), *m = f64(dev, 2, SH23, X6);
    assert_error(clt_transform_log_abs_det_jacobian(cc, v3, m, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Input is not square");
    assert_error(clt_transform_inverse(cc, m, &y), CLT_ERR_SHAPE_MISMATCH, "Input is not square");
    cr_assert_null(y);
    /* a failure inside names the call made: here the Normal's value check
     * in CumulativeDistribution's log-det (x of another size) */
    clt_distribution *n = NULL;
    clt_tensor *sc = NULL;
    CHECK(clt_ones_like(v3, &sc));
    CHECK(clt_normal_dist(v3, sc, 1, &n));
    clt_transform *cd = mk(clt_cumulative_distribution_transform(n, &cd), &cd);
    clt_distribution_free(n); /* the transform holds its own reference */
    clt_tensor *x2 = f64(dev, 1, (int64_t[]){2}, X6);
    assert_error(clt_transform_log_abs_det_jacobian(cd, x2, x2, &y), CLT_ERR_SHAPE_MISMATCH,
                 NULL);
    names_only("clt_transform_log_abs_det_jacobian");
    clt_tensor_free(x2);
    clt_transform_free(cd);
    clt_tensor_free(sc);
    clt_tensor_free(v3);
    clt_tensor_free(m);
    clt_tensor_free(x);
    clt_transform_free(cc);
    clt_transform_free(st);
    clt_transform_free(sb);
}

/* ---- gradients ---------------------------------------------------------- */

static clt_status g_compose(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_transform *af = NULL, *sg = NULL, *c = NULL;
    clt_status st = clt_affine_transform(in[1], in[2], 0, &af);
    if (st == CLT_OK)
        st = clt_sigmoid_transform(&sg);
    clt_transform *parts[2] = {af, sg};
    if (st == CLT_OK)
        st = clt_compose_transform(parts, 2, &c);
    if (st == CLT_OK)
        st = clt_transform_forward(c, in[0], out);
    clt_transform_free(af);
    clt_transform_free(sg);
    clt_transform_free(c);
    return st;
}

Test(transforms, gradcheck_forward)
{
    clt_device *dev = get_device("cpu:0");
    const double l[3] = {0.3, -0.2, 0.1}, s[3] = {1.5, -0.7, 0.4};
    gc_in ins[3] = {{2, {2, 3}, X6, 1}, {1, {3}, l, 1}, {1, {3}, s, 1}};
    gradcheck(dev, g_compose, NULL, 3, ins);
}

static clt_status g_ladj(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_transform *t = NULL;
    clt_status st = *(const int *)ctx ? clt_corr_cholesky_transform(&t)
                                      : clt_stick_breaking_transform(&t);
    clt_tensor *y = NULL, *j = NULL;
    if (st == CLT_OK)
        st = clt_transform_forward(t, in[0], &y);
    if (st == CLT_OK)
        st = clt_transform_log_abs_det_jacobian(t, in[0], y, &j);
    /* the forward values and the log-det, both differentiated */
    clt_tensor *ys = NULL;
    if (st == CLT_OK)
        st = clt_sum(y, &ys);
    if (st == CLT_OK)
        st = clt_add(j, ys, out);
    clt_tensor_free(y);
    clt_tensor_free(j);
    clt_tensor_free(ys);
    clt_transform_free(t);
    return st;
}

Test(transforms, gradcheck_log_det)
{
    clt_device *dev = get_device("cpu:0");
    const double x[6] = {0.4, -0.3, 0.8, -1.1, 0.2, 0.5};
    gc_in ins[1] = {{2, {2, 3}, x, 1}};
    int corr = 0;
    gradcheck(dev, g_ladj, &corr, 1, ins);
    corr = 1;
    gc_in one[1] = {{1, {6}, x, 1}};
    gradcheck(dev, g_ladj, &corr, 1, one);
}

static clt_status g_logistic(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_distribution *d = NULL;
    clt_status st = clt_logistic_normal_dist(in[0], in[1], 0, &d);
    if (st == CLT_OK)
        st = clt_distribution_log_prob(d, in[2], out);
    clt_distribution_free(d);
    return st;
}

Test(transforms, gradcheck_log_prob)
{
    clt_device *dev = get_device("cpu:0");
    const double l[2] = {0.3, -0.2}, s[2] = {0.8, 1.4}, v[6] = {0.2, 0.3, 0.5, 0.6, 0.1, 0.3};
    gc_in ins[3] = {{1, {2}, l, 1}, {1, {2}, s, 1}, {2, {2, 3}, v, 1}};
    gradcheck(dev, g_logistic, NULL, 3, ins);
}
