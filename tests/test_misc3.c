/* test_misc3.c: Tensor.fill_diagonal_, Tensor.sum_to_size and torch.dist
 * (ops.h, reduce.h) against host loops, their gradients against finite
 * differences, and their errors. */
#include <stdio.h>

#include "gradcheck.h"

static clt_device *dev64(void)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    return dev;
}

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

static void expect(clt_tensor *t, const double *want, size_t n, double tol, const char *what)
{
    assert_tensor_close(t, want, n, tol, tol, what);
    clt_tensor_free(t);
}

/* ---- fill_diagonal_ ------------------------------------------------------------------ */

/* The host reference for a contiguous r x c matrix: (i, i) for i < min(r,
 * c), and with wrap every c + 1 rows again. */
static void host_fill_2d(double *m, int64_t r, int64_t c, double v, bool wrap)
{
    for (int64_t i = 0; i < r; i++) {
        int64_t j = i;
        if (wrap && r > c + 1)
            j = i % (c + 1);
        else if (i >= c)
            continue;
        if (j < c)
            m[i * c + j] = v;
    }
}

Test(misc3, fill_diagonal_values)
{
    clt_device *dev = dev64();
    static const int64_t shapes[][2] = {{3, 3}, {5, 3}, {7, 3}, {9, 2}, {2, 6}, {4, 1}, {0, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        for (int wrap = 0; wrap < 2; wrap++) {
            int64_t r = shapes[s][0], c = shapes[s][1], n = r * c;
            double v[64], want[64];
            for (int64_t i = 0; i < n; i++)
                v[i] = want[i] = 0.5 + (double)i;
            host_fill_2d(want, r, c, -7.25, wrap);
            clt_tensor *t = f64(dev, 2, shapes[s], v);
            CHECK(clt_fill_diagonal_(t, -7.25, wrap));
            char what[64];
            snprintf(what, sizeof what, "fill_diagonal_ %lldx%lld wrap %d", (long long)r,
                     (long long)c, wrap);
            expect(t, want, (size_t)n, 0, what);
        }
    }
    /* 3-D: the elements with three equal indices */
    double v[27], want[27];
    for (int i = 0; i < 27; i++)
        v[i] = want[i] = i;
    for (int i = 0; i < 3; i++)
        want[i * 9 + i * 3 + i] = 2;
    clt_tensor *t = f64(dev, 3, (int64_t[]){3, 3, 3}, v);
    CHECK(clt_fill_diagonal_(t, 2, 1));
    expect(t, want, 27, 0, "fill_diagonal_ 3-D");
    /* a transposed view (8 x 3 of a 3 x 8): torch's positions, which wrap
     * through the view's strides; the base sees them */
    double b[24];
    for (int i = 0; i < 24; i++)
        b[i] = i;
    clt_tensor *base = f64(dev, 2, (int64_t[]){3, 8}, b), *tv = NULL;
    CHECK(clt_transpose(base, 0, 1, &tv));
    CHECK(clt_fill_diagonal_(tv, -1, 1));
    /* view (i, j) is base (j, i); storage positions 0, 9, 18, then from
     * stride0 * 4 = 4 every 9: 4, 13, 22 */
    double wb[24];
    memcpy(wb, b, sizeof b);
    int pos[6] = {0, 9, 18, 4, 13, 22};
    for (int k = 0; k < 6; k++)
        wb[pos[k]] = -1;
    expect(base, wb, 24, 0, "fill_diagonal_ through a transposed view");
    clt_tensor_free(tv);
    /* an int32 tensor takes the value truncated, as fill_ */
    int32_t iv[4] = {5, 6, 7, 8}, ig[4];
    clt_tensor *it = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 2, (int64_t[]){2, 2}, iv, &it));
    CHECK(clt_fill_diagonal_(it, 2.7, 0));
    CHECK(clt_tensor_read(it, ig, sizeof ig));
    cr_assert(ig[0] == 2 && ig[1] == 6 && ig[2] == 7 && ig[3] == 2, "%d %d %d %d", ig[0],
              ig[1], ig[2], ig[3]);
    clt_tensor_free(it);
}

Test(misc3, fill_diagonal_errors)
{
    clt_device *dev = dev64();
    double v[12] = {0};
    clt_tensor *t = f64(dev, 1, (int64_t[]){3}, v);
    cr_assert_eq(clt_fill_diagonal_(t, 1, 0), CLT_ERR_SHAPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "dimensions must larger than 1"), "%s", clt_last_error());
    clt_tensor_free(t);
    t = f64(dev, 3, (int64_t[]){2, 3, 2}, v);
    cr_assert_eq(clt_fill_diagonal_(t, 1, 0), CLT_ERR_SHAPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "all dimensions of input must be of equal length"), "%s",
              clt_last_error());
    /* nothing written */
    expect(t, v, 12, 0, "unchanged");
    cr_assert_eq(clt_fill_diagonal_(NULL, 1, 0), CLT_ERR_NULL_ARGUMENT);
    /* a leaf that requires grad is refused, unchanged */
    t = f64(dev, 2, (int64_t[]){2, 2}, v);
    CHECK(clt_set_requires_grad(t, 1));
    cr_assert_eq(clt_fill_diagonal_(t, 1, 0), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "leaf"), "%s", clt_last_error());
    expect(t, v, 4, 0, "leaf unchanged");
}

/* y = fill_diagonal_(x * 1.5, 3, wrap) (a non-leaf): the gradient is 1.5 g
 * off the filled positions, 0 on them. */
static clt_status g_fill_diag(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_status st = clt_mul_scalar(in[0], 1.5, out);
    if (st == CLT_OK && (st = clt_fill_diagonal_(*out, 3, *(const int *)ctx)) != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

Test(misc3, fill_diagonal_gradient)
{
    clt_device *dev = dev64();
    double x[21];
    for (int i = 0; i < 21; i++)
        x[i] = sin(i * 0.9);
    for (int wrap = 0; wrap < 2; wrap++) {
        gradcheck(dev, g_fill_diag, &wrap, 1, (gc_in[]){{2, {7, 3}, x, 1}});
        gradcheck(dev, g_fill_diag, &wrap, 1, (gc_in[]){{2, {3, 7}, x, 1}});
    }
    /* the exact values: 0 at (0,0), (1,1), (2,2) and, with wrap, (4,0) ... */
    clt_tensor *t = f64(dev, 2, (int64_t[]){7, 3}, x), *y = NULL, *s = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_mul_scalar(t, 1.5, &y));
    CHECK(clt_fill_diagonal_(y, 3, 1));
    cr_assert_str_eq(clt_grad_fn_name(y), "CopySlices"); /* torch 1.13's */
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(t, &g));
    double want[21];
    for (int i = 0; i < 21; i++)
        want[i] = 1.5;
    host_fill_2d(want, 7, 3, 0, true);
    expect(g, want, 21, 0, "fill_diagonal_ gradient");
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(t);
}

/* ---- sum_to_size ------------------------------------------------------------------------ */

Test(misc3, sum_to_size_values)
{
    clt_device *dev = dev64();
    double x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (i % 7) - 2.5 + i * 0.125;
    clt_tensor *t = f64(dev, 3, (int64_t[]){4, 2, 3}, x), *r = NULL;
    /* to [2, 1]: over dim 0 (leading) and dim 2 (size 1) */
    double w[3];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++)
                w[j] += x[i * 6 + j * 3 + k];
    CHECK(clt_sum_to_size(t, 2, (int64_t[]){2, 1}, &r));
    cr_assert_eq(clt_tensor_ndim(r), 2);
    cr_assert(clt_tensor_shape(r)[0] == 2 && clt_tensor_shape(r)[1] == 1);
    expect(r, w, 2, 1e-12, "sum_to_size [2, 1]");
    /* to [1, 3] */
    double w3[3] = {0, 0, 0};
    for (int i = 0; i < 24; i++)
        w3[i % 3] += x[i];
    CHECK(clt_sum_to_size(t, 2, (int64_t[]){1, 3}, &r));
    cr_assert(clt_tensor_ndim(r) == 2 && clt_tensor_shape(r)[0] == 1);
    expect(r, w3, 3, 1e-12, "sum_to_size [1, 3]");
    /* the empty size sums everything */
    double all = 0;
    for (int i = 0; i < 24; i++)
        all += x[i];
    CHECK(clt_sum_to_size(t, 0, NULL, &r));
    cr_assert_eq(clt_tensor_ndim(r), 0);
    expect(r, &all, 1, 1e-12, "sum_to_size []");
    /* the same size: t's values (a view) */
    CHECK(clt_sum_to_size(t, 3, (int64_t[]){4, 2, 3}, &r));
    expect(r, x, 24, 0, "sum_to_size same");
    /* integers give int64 */
    int32_t iv[6] = {1, 2, 3, 4, 5, 6};
    int64_t got[3];
    clt_tensor *it = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 2, (int64_t[]){2, 3}, iv, &it));
    CHECK(clt_sum_to_size(it, 1, (int64_t[]){3}, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    CHECK(clt_tensor_read(r, got, sizeof got));
    cr_assert(got[0] == 5 && got[1] == 7 && got[2] == 9);
    clt_tensor_free(r);
    clt_tensor_free(it);
    clt_tensor_free(t);
}

Test(misc3, sum_to_size_errors)
{
    clt_device *dev = dev64();
    double x[6] = {0};
    clt_tensor *t = f64(dev, 2, (int64_t[]){2, 3}, x), *r = (clt_tensor *)1;
    cr_assert_eq(clt_sum_to_size(t, 1, (int64_t[]){4}, &r), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "size {[4]} is not expandable to size {[2, 3]}."), "%s",
              clt_last_error());
    r = (clt_tensor *)1;
    cr_assert_eq(clt_sum_to_size(t, 3, (int64_t[]){1, 2, 3}, &r), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_sum_to_size(t, 2, (int64_t[]){-1, 3}, &r), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_sum_to_size(t, 1, NULL, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_sum_to_size(NULL, 0, NULL, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(r);
    clt_tensor_free(t);
}

static clt_status g_sum_to(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const int64_t *size = ctx;
    return clt_sum_to_size(in[0], (int)size[0], size + 1, out);
}

Test(misc3, sum_to_size_gradient)
{
    clt_device *dev = dev64();
    double x[24];
    for (int i = 0; i < 24; i++)
        x[i] = cos(i * 0.7);
    static const int64_t sizes[][4] = {{2, 2, 1}, {2, 1, 3}, {1, 3}, {0}, {3, 4, 2, 3}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        gradcheck(dev, g_sum_to, sizes[k], 1, (gc_in[]){{3, {4, 2, 3}, x, 1}});
}

/* ---- dist ---------------------------------------------------------------------------------- */

/* The p-norm of a - b (b broadcast along a's rows), on the host. */
static double host_dist(const double *a, const double *b, int rows, int cols, double p)
{
    double acc = 0, mx = 0, mn = INFINITY;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            double d = fabs(a[i * cols + j] - b[j]);
            mx = fmax(mx, d);
            mn = fmin(mn, d);
            if (p == 0)
                acc += d != 0;
            else if (isfinite(p))
                acc += pow(d, p);
        }
    if (p == INFINITY)
        return mx;
    if (p == -INFINITY)
        return mn;
    if (p == 0)
        return acc;
    return pow(acc, 1 / p);
}

Test(misc3, dist_values)
{
    clt_device *dev = dev64();
    double a[12], b[4];
    for (int i = 0; i < 12; i++)
        a[i] = sin(i * 1.1) * 3;
    for (int j = 0; j < 4; j++)
        b[j] = cos(j * 0.6);
    b[3] = a[3]; /* one zero difference (ord 0 counts it out) */
    clt_tensor *ta = f64(dev, 2, (int64_t[]){3, 4}, a), *tb = f64(dev, 1, (int64_t[]){4}, b);
    double ps[] = {2, 1, 0, 3, 0.5, -1.5, INFINITY, -INFINITY};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        clt_tensor *r = NULL;
        CHECK(clt_dist(ta, tb, ps[k], &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        double want = host_dist(a, b, 3, 4, ps[k]);
        char what[32];
        snprintf(what, sizeof what, "dist p=%g", ps[k]);
        expect(r, &want, 1, 1e-12, what);
    }
    /* an empty difference is 0 for every p, inf too */
    clt_tensor *e = NULL, *r = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){0, 4}, &e));
    CHECK(clt_dist(e, tb, INFINITY, &r));
    expect(r, (double[]){0}, 1, 0, "dist empty inf");
    clt_tensor_free(e);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

Test(misc3, dist_errors)
{
    clt_device *dev = dev64();
    int64_t iv[3] = {1, 2, 3};
    clt_tensor *i1 = NULL, *r = (clt_tensor *)1;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, iv, &i1));
    cr_assert_eq(clt_dist(i1, i1, 2, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "input dtype should be either floating point or complex"),
              "%s", clt_last_error());
    double a[3] = {1, 2, 3};
    clt_tensor *f3 = f64(dev, 1, (int64_t[]){3}, a), *f2 = f64(dev, 1, (int64_t[]){2}, a);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_dist(f3, f2, 2, &r), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_dist(f3, NULL, 2, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(r);
    r = (clt_tensor *)1;
    cr_assert_eq(clt_dist(f3, f3, NAN, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(r);
    clt_tensor_free(i1);
    clt_tensor_free(f3);
    clt_tensor_free(f2);
}

static clt_status g_dist(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_dist(in[0], in[1], *(const double *)ctx, out);
}

Test(misc3, dist_gradient)
{
    clt_device *dev = dev64();
    double a[6] = {0.3, -1.2, 2.0, 0.7, -0.4, 1.1}, b[3] = {0.5, -1.0, 1.5};
    double ps[] = {2, 1, 3, 0.5, INFINITY, -1.5};
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++)
        gradcheck(dev, g_dist, &ps[k], 2, (gc_in[]){{2, {2, 3}, a, 1}, {1, {3}, b, 1}});
}

/* ---- kl_divergence: Wishart, Weibull, Kumaraswamy ------------------------------------------ */

/* digamma on the host: the recurrence up to 6, then the asymptotic series. */
static double host_digamma(double x)
{
    double r = 0;
    while (x < 6) {
        r -= 1 / x;
        x += 1;
    }
    double f = 1 / (x * x);
    return r + log(x) - 0.5 / x -
           f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
}

/* KL(Wishart(n, P) || Wishart(m, Q)) of 2 x 2 matrices, from its textbook
 * form: -m/2 log|Q^-1 P| + n/2 (tr(Q^-1 P) - 2) + log G_2(m/2) - log G_2(n/2)
 * + (n - m)/2 psi_2(n/2), with log G_2(a) = log(pi)/2 + lgamma(a) +
 * lgamma(a - 1/2). */
static double host_wishart_kl(double n, const double *P, double m, const double *Q)
{
    double dq = Q[0] * Q[3] - Q[1] * Q[2];
    double qi[4] = {Q[3] / dq, -Q[1] / dq, -Q[2] / dq, Q[0] / dq};
    double M[4] = {qi[0] * P[0] + qi[1] * P[2], qi[0] * P[1] + qi[1] * P[3],
                   qi[2] * P[0] + qi[3] * P[2], qi[2] * P[1] + qi[3] * P[3]};
    double ld = log(M[0] * M[3] - M[1] * M[2]), tr = M[0] + M[3];
    double lg_m = lgamma(m / 2) + lgamma(m / 2 - 0.5), lg_n = lgamma(n / 2) + lgamma(n / 2 - 0.5);
    double psi = host_digamma(n / 2) + host_digamma(n / 2 - 0.5);
    return -m / 2 * ld + n / 2 * (tr - 2) + lg_m - lg_n + (n - m) / 2 * psi;
}

Test(misc3, kl_wishart_values)
{
    clt_device *dev = dev64();
    /* two batch elements each */
    double dfp[2] = {3.5, 6.0}, dfq[2] = {4.25, 2.5};
    double P[8] = {2.0, 0.3, 0.3, 1.0, 1.5, -0.4, -0.4, 0.8};
    double Q[8] = {1.0, 0.1, 0.1, 1.5, 0.6, 0.2, 0.2, 2.5};
    clt_tensor *np_ = f64(dev, 1, (int64_t[]){2}, dfp), *nq = f64(dev, 1, (int64_t[]){2}, dfq);
    clt_tensor *cp = f64(dev, 3, (int64_t[]){2, 2, 2}, P), *cq = f64(dev, 3, (int64_t[]){2, 2, 2}, Q);
    clt_distribution *p = NULL, *q = NULL;
    CHECK(clt_wishart_dist(np_, cp, NULL, NULL, 1, &p));
    CHECK(clt_wishart_dist(nq, cq, NULL, NULL, 1, &q));
    clt_tensor *r = NULL;
    CHECK(clt_kl_divergence(p, q, &r));
    double want[2] = {host_wishart_kl(dfp[0], P, dfq[0], Q),
                      host_wishart_kl(dfp[1], P + 4, dfq[1], Q + 4)};
    expect(r, want, 2, 1e-10, "KL(Wishart || Wishart)");
    /* with itself: 0 */
    CHECK(clt_kl_divergence(p, p, &r));
    expect(r, (double[]){0, 0}, 2, 1e-12, "KL(p || p)");
    /* other event sizes are refused */
    double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, five = 5;
    clt_tensor *c3 = f64(dev, 2, (int64_t[]){3, 3}, I3), *n5 = f64(dev, 0, NULL, &five);
    clt_distribution *w3 = NULL;
    CHECK(clt_wishart_dist(n5, c3, NULL, NULL, 1, &w3));
    r = (clt_tensor *)1;
    cr_assert_eq(clt_kl_divergence(p, w3, &r), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(r);
    clt_distribution_free(w3);
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(np_);
    clt_tensor_free(nq);
    clt_tensor_free(cp);
    clt_tensor_free(cq);
    clt_tensor_free(c3);
    clt_tensor_free(n5);
}

/* KL(Wishart(in[0], tril(in[1])) || Wishart(in[2], tril(in[3]))) with the
 * scale_trils' diagonals kept positive by the data. */
static clt_status g_kl_wishart(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *lp = NULL, *lq = NULL;
    clt_distribution *p = NULL, *q = NULL;
    clt_status st = clt_tril(in[1], 0, &lp);
    if (st == CLT_OK)
        st = clt_tril(in[3], 0, &lq);
    if (st == CLT_OK)
        st = clt_wishart_dist(in[0], NULL, NULL, lp, 0, &p);
    if (st == CLT_OK)
        st = clt_wishart_dist(in[2], NULL, NULL, lq, 0, &q);
    if (st == CLT_OK)
        st = clt_kl_divergence(p, q, out);
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(lp);
    clt_tensor_free(lq);
    return st;
}

Test(misc3, kl_wishart_gradient)
{
    clt_device *dev = dev64();
    double n[2] = {4.5, 6.25}, m[2] = {3.75, 5.0};
    double lp[18] = {1.2, 0.4, -0.3, 0.5, 0.9, 0.2, -0.2, 0.3, 1.4,
                     0.8, 0.1, 0.6, -0.4, 1.1, -0.5, 0.2, 0.7, 1.3};
    double lq[18] = {1.0, -0.6, 0.2, 0.3, 1.3, 0.4, 0.1, -0.2, 0.9,
                     1.5, 0.2, 0.1, 0.6, 0.7, 0.3, -0.3, 0.4, 1.1};
    gradcheck(dev, g_kl_wishart, NULL, 4,
              (gc_in[]){{1, {2}, n, 1}, {3, {2, 3, 3}, lp, 1}, {1, {2}, m, 1},
                        {3, {2, 3, 3}, lq, 1}});
}

Test(misc3, kl_same_transforms)
{
    clt_device *dev = dev64();
    double a[3] = {0.5, 1.5, 2.0}, b[3] = {1.2, 0.7, 3.0}, b2[3] = {1.2, 0.7, 3.5};
    clt_tensor *ta = f64(dev, 1, (int64_t[]){3}, a), *tb = f64(dev, 1, (int64_t[]){3}, b);
    clt_tensor *tb2 = f64(dev, 1, (int64_t[]){3}, b2);
    for (int fam = 0; fam < 2; fam++) {
        clt_distribution *p = NULL, *q = NULL, *o = NULL;
        if (fam == 0) {
            CHECK(clt_weibull_dist(ta, tb, 1, &p));
            CHECK(clt_weibull_dist(ta, tb, 1, &q));
            CHECK(clt_weibull_dist(ta, tb2, 1, &o));
        } else {
            CHECK(clt_kumaraswamy_dist(ta, tb, 1, &p));
            CHECK(clt_kumaraswamy_dist(ta, tb, 1, &q));
            CHECK(clt_kumaraswamy_dist(tb2, tb, 1, &o));
        }
        clt_tensor *r = NULL;
        CHECK(clt_kl_divergence(p, q, &r));
        cr_assert_eq(clt_requires_grad(r), 0);
        expect(r, (double[]){0, 0, 0}, 3, 0, fam ? "KL(Kumaraswamy)" : "KL(Weibull)");
        r = (clt_tensor *)1;
        cr_assert_eq(clt_kl_divergence(p, o, &r), CLT_ERR_INVALID_ARGUMENT);
        cr_assert_null(r);
        cr_assert(strstr(clt_last_error(), "No KL(p || q) is implemented"), "%s",
                  clt_last_error());
        clt_distribution_free(p);
        clt_distribution_free(q);
        clt_distribution_free(o);
    }
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tb2);
}

/* TransformedDistribution pairs: Normal bases under ExpTransform give the
 * Normals' KL; other Affine parameters are refused. */
Test(misc3, kl_transformed)
{
    clt_device *dev = dev64();
    double m1[2] = {0.3, -1.0}, s1[2] = {1.5, 0.7}, m2[2] = {-0.2, 0.4}, s2[2] = {0.9, 2.0};
    clt_tensor *l1 = f64(dev, 1, (int64_t[]){2}, m1), *c1 = f64(dev, 1, (int64_t[]){2}, s1);
    clt_tensor *l2 = f64(dev, 1, (int64_t[]){2}, m2), *c2 = f64(dev, 1, (int64_t[]){2}, s2);
    clt_distribution *b1 = NULL, *b2 = NULL, *p = NULL, *q = NULL, *pa = NULL, *qa = NULL;
    CHECK(clt_normal_dist(l1, c1, 1, &b1));
    CHECK(clt_normal_dist(l2, c2, 1, &b2));
    clt_transform *e1 = NULL, *e2 = NULL, *a1 = NULL, *a2 = NULL;
    CHECK(clt_exp_transform(&e1));
    CHECK(clt_exp_transform(&e2));
    CHECK(clt_transformed_dist(b1, &e1, 1, 1, &p));
    CHECK(clt_transformed_dist(b2, &e2, 1, 1, &q));
    clt_tensor *r = NULL;
    CHECK(clt_kl_divergence(p, q, &r));
    double want[2];
    for (int i = 0; i < 2; i++) {
        double v = s1[i] / s2[i], t = (m1[i] - m2[i]) / s2[i];
        want[i] = 0.5 * (v * v + t * t - 1) - log(v);
    }
    expect(r, want, 2, 1e-12, "KL of two exp(Normal)");
    /* Affine(loc 0.5, scale s1) against Affine(0.5, s2): unequal */
    double half = 0.5;
    clt_tensor *h = f64(dev, 0, NULL, &half);
    CHECK(clt_affine_transform(h, c1, 0, &a1));
    CHECK(clt_affine_transform(h, c2, 0, &a2));
    CHECK(clt_transformed_dist(b1, &a1, 1, 1, &pa));
    CHECK(clt_transformed_dist(b2, &a2, 1, 1, &qa));
    r = (clt_tensor *)1;
    cr_assert_eq(clt_kl_divergence(pa, qa, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "transforms or event shapes differ"), "%s",
              clt_last_error());
    /* with equal ones: the bases' KL */
    CHECK(clt_kl_divergence(pa, pa, &r));
    expect(r, (double[]){0, 0}, 2, 0, "KL(p || p) of an affine Normal");
    clt_distribution *ds[] = {b1, b2, p, q, pa, qa};
    for (size_t i = 0; i < 6; i++)
        clt_distribution_free(ds[i]);
    clt_transform *ts[] = {e1, e2, a1, a2};
    for (size_t i = 0; i < 4; i++)
        clt_transform_free(ts[i]);
    clt_tensor *tt[] = {l1, c1, l2, c2, h};
    for (size_t i = 0; i < 5; i++)
        clt_tensor_free(tt[i]);
}
