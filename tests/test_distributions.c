/* test_distributions.c: torch.distributions (cltensor/distributions.h):
 * log_prob, entropy, cdf, icdf, moments and KL against host formulas in
 * double; gradients of log_prob and rsample by float64 finite
 * differences; sample moments from fixed seeds within 5 sigma bounds
 * computed here; a REINFORCE gradient through Categorical.log_prob; and
 * the validation messages. */
#include "gradcheck.h"

#define LOG_2PI 1.8378770664093454836

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

/* t (float64, n elements) against want within rtol / atol; t released. */
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

/* ---- values against host formulas --------------------------------------- */

static const int64_t s23[2] = {2, 3}, s3[1] = {3}, s21[2] = {2, 1};
static const double loc3[3] = {-1.0, 0.25, 2.0}, scale21[2] = {0.5, 1.75};
static const double val23[6] = {-0.3, 0.9, 1.1, 2.5, -0.7, 0.0};
static const double u23[6] = {0.1, 0.35, 0.5, 0.62, 0.8, 0.97};

typedef enum fam { NORMAL, LAPLACE } fam;

static double host_lp(fam f, double m, double s, double x)
{
    if (f == NORMAL)
        return -(x - m) * (x - m) / (2 * s * s) - log(s) - 0.5 * LOG_2PI;
    return -log(2 * s) - fabs(x - m) / s;
}

static double host_cdf(fam f, double m, double s, double x)
{
    if (f == NORMAL)
        return 0.5 * (1 + erf((x - m) / (s * sqrt(2.0))));
    return x < m ? 0.5 * exp((x - m) / s) : 1 - 0.5 * exp(-(x - m) / s);
}

Test(distributions, normal_and_laplace_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *loc = f64(dev, 1, s3, loc3), *scale = f64(dev, 2, s21, scale21);
    clt_tensor *v = f64(dev, 2, s23, val23), *u = f64(dev, 2, s23, u23);
    for (int k = 0; k < 2; k++) {
        fam f = k ? LAPLACE : NORMAL;
        clt_distribution *d = NULL;
        CHECK(f == NORMAL ? clt_normal_dist(loc, scale, 1, &d)
                          : clt_laplace_dist(loc, scale, 1, &d));
        cr_assert_str_eq(clt_distribution_name(d), f == NORMAL ? "Normal" : "Laplace");
        cr_assert_eq(clt_distribution_batch_ndim(d), 2);
        cr_assert_eq(clt_distribution_batch_shape(d)[0], 2);
        cr_assert_eq(clt_distribution_batch_shape(d)[1], 3);
        cr_assert_eq(clt_distribution_event_ndim(d), 0);
        cr_assert_eq(clt_distribution_has_rsample(d), 1);
        double lp[6], cdf[6], ent[6], mean[6], var[6], sd[6];
        for (int i = 0; i < 6; i++) {
            double m = loc3[i % 3], s = scale21[i / 3];
            lp[i] = host_lp(f, m, s, val23[i]);
            cdf[i] = host_cdf(f, m, s, val23[i]);
            ent[i] = f == NORMAL ? 0.5 + 0.5 * LOG_2PI + log(s) : 1 + log(2 * s);
            mean[i] = m;
            var[i] = f == NORMAL ? s * s : 2 * s * s;
            sd[i] = sqrt(var[i]);
        }
        clt_tensor *t = NULL;
        CHECK(clt_distribution_log_prob(d, v, &t));
        assert_shape(t, 2, s23);
        expect_values(t, lp, 6, 1e-12, 1e-12, "log_prob");
        CHECK(clt_distribution_cdf(d, v, &t));
        expect_values(t, cdf, 6, 1e-12, 1e-14, "cdf");
        CHECK(clt_distribution_entropy(d, &t));
        expect_values(t, ent, 6, 1e-12, 1e-14, "entropy");
        CHECK(clt_distribution_mean(d, &t));
        expect_values(t, mean, 6, 0, 0, "mean");
        CHECK(clt_distribution_variance(d, &t));
        expect_values(t, var, 6, 1e-14, 0, "variance");
        CHECK(clt_distribution_stddev(d, &t));
        expect_values(t, sd, 6, 1e-14, 0, "stddev");
        /* icdf inverts cdf: cdf(icdf(u)) on the host is u */
        CHECK(clt_distribution_icdf(d, u, &t));
        double *x = read_as_f64(t);
        clt_tensor_free(t);
        double back[6];
        for (int i = 0; i < 6; i++)
            back[i] = host_cdf(f, loc3[i % 3], scale21[i / 3], x[i]);
        free(x);
        ASSERT_ALLCLOSE_F32(back, u23, 6, 1e-10, 1e-12);
        clt_distribution_free(d);
    }
    clt_tensor_free(loc);
    clt_tensor_free(scale);
    clt_tensor_free(v);
    clt_tensor_free(u);
}

Test(distributions, uniform_and_exponential_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double lo[3] = {-1, 0, 0.5}, hi[3] = {1, 2.5, 0.75}, rate[3] = {0.5, 2, 7};
    const double v[3] = {0.3, 2.5, 0.6}, u[3] = {0.2, 0.5, 0.9};
    clt_tensor *tl = f64(dev, 1, s3, lo), *th = f64(dev, 1, s3, hi), *tr = f64(dev, 1, s3, rate);
    clt_tensor *tv = f64(dev, 1, s3, v), *tu = f64(dev, 1, s3, u), *t = NULL;
    clt_distribution *un = NULL, *ex = NULL;
    CHECK(clt_uniform_dist(tl, th, 1, &un));
    CHECK(clt_exponential_dist(tr, 1, &ex));
    double lp[3], cdf[3], icdf[3], ent[3], mean[3], var[3];
    for (int i = 0; i < 3; i++) { /* v[1] sits on high: -inf, as torch's high.gt(value) */
        double w = hi[i] - lo[i];
        lp[i] = v[i] >= lo[i] && v[i] < hi[i] ? -log(w) : -INFINITY;
        cdf[i] = fmin(fmax((v[i] - lo[i]) / w, 0), 1);
        icdf[i] = lo[i] + u[i] * w;
        ent[i] = log(w);
        mean[i] = (lo[i] + hi[i]) / 2;
        var[i] = w * w / 12;
    }
    CHECK(clt_distribution_log_prob(un, tv, &t));
    expect_values(t, lp, 3, 1e-14, 0, "uniform log_prob");
    CHECK(clt_distribution_cdf(un, tv, &t));
    expect_values(t, cdf, 3, 1e-14, 0, "uniform cdf");
    CHECK(clt_distribution_icdf(un, tu, &t));
    expect_values(t, icdf, 3, 1e-14, 0, "uniform icdf");
    CHECK(clt_distribution_entropy(un, &t));
    expect_values(t, ent, 3, 1e-14, 0, "uniform entropy");
    CHECK(clt_distribution_mean(un, &t));
    expect_values(t, mean, 3, 1e-14, 0, "uniform mean");
    CHECK(clt_distribution_variance(un, &t));
    expect_values(t, var, 3, 1e-14, 0, "uniform variance");
    for (int i = 0; i < 3; i++) {
        lp[i] = log(rate[i]) - rate[i] * v[i];
        cdf[i] = 1 - exp(-rate[i] * v[i]);
        icdf[i] = -log1p(-u[i]) / rate[i];
        ent[i] = 1 - log(rate[i]);
        mean[i] = 1 / rate[i];
        var[i] = 1 / (rate[i] * rate[i]);
    }
    CHECK(clt_distribution_log_prob(ex, tv, &t));
    expect_values(t, lp, 3, 1e-13, 0, "exponential log_prob");
    CHECK(clt_distribution_cdf(ex, tv, &t));
    expect_values(t, cdf, 3, 1e-13, 0, "exponential cdf");
    CHECK(clt_distribution_icdf(ex, tu, &t));
    expect_values(t, icdf, 3, 1e-13, 0, "exponential icdf");
    CHECK(clt_distribution_entropy(ex, &t));
    expect_values(t, ent, 3, 1e-13, 0, "exponential entropy");
    CHECK(clt_distribution_mean(ex, &t));
    expect_values(t, mean, 3, 1e-14, 0, "exponential mean");
    CHECK(clt_distribution_variance(ex, &t));
    expect_values(t, var, 3, 1e-14, 0, "exponential variance");
    clt_distribution_free(un);
    clt_distribution_free(ex);
    clt_tensor_free(tl);
    clt_tensor_free(th);
    clt_tensor_free(tr);
    clt_tensor_free(tv);
    clt_tensor_free(tu);
}

Test(distributions, bernoulli_probs_and_logits)
{
    clt_device *dev = get_device("cpu");
    const double p[3] = {0.2, 0.5, 0.9}, v[6] = {0, 1, 1, 1, 0, 0};
    double lg[3];
    for (int i = 0; i < 3; i++)
        lg[i] = log(p[i]) - log1p(-p[i]);
    clt_tensor *tp = f64(dev, 1, s3, p), *tl = f64(dev, 1, s3, lg), *tv = f64(dev, 2, s23, v);
    for (int k = 0; k < 2; k++) {
        clt_distribution *d = NULL;
        clt_tensor *t = NULL;
        CHECK(clt_bernoulli_dist(k ? NULL : tp, k ? tl : NULL, 1, &d));
        cr_assert_eq(clt_distribution_has_rsample(d), 0);
        double lp[6], ent[3], var[3];
        for (int i = 0; i < 6; i++)
            lp[i] = v[i] ? log(p[i % 3]) : log1p(-p[i % 3]);
        for (int i = 0; i < 3; i++) {
            ent[i] = -p[i] * log(p[i]) - (1 - p[i]) * log1p(-p[i]);
            var[i] = p[i] * (1 - p[i]);
        }
        CHECK(clt_distribution_log_prob(d, tv, &t));
        assert_shape(t, 2, s23);
        expect_values(t, lp, 6, 1e-12, 1e-14, "bernoulli log_prob");
        CHECK(clt_distribution_entropy(d, &t));
        expect_values(t, ent, 3, 1e-12, 1e-14, "bernoulli entropy");
        CHECK(clt_distribution_mean(d, &t));
        expect_values(t, p, 3, 1e-12, 0, "bernoulli mean");
        CHECK(clt_distribution_variance(d, &t));
        expect_values(t, var, 3, 1e-12, 0, "bernoulli variance");
        clt_distribution_free(d);
    }
    clt_tensor_free(tp);
    clt_tensor_free(tl);
    clt_tensor_free(tv);
}

Test(distributions, categorical_and_one_hot)
{
    clt_device *dev = get_device("cpu");
    /* two rows of unnormalised weights over 4 classes */
    const double w[8] = {1, 2, 3, 4, 0.5, 0.5, 2, 1};
    const int64_t s24[2] = {2, 4}, s32[2] = {3, 2};
    const double idx[6] = {0, 3, 2, 2, 1, 0}; /* [3, 2]: broadcast against batch [2] */
    double pr[8], lw[8];
    for (int r = 0; r < 2; r++) {
        double s = 0;
        for (int k = 0; k < 4; k++)
            s += w[4 * r + k];
        for (int k = 0; k < 4; k++) {
            pr[4 * r + k] = w[4 * r + k] / s;
            lw[4 * r + k] = log(w[4 * r + k]) + 0.75; /* unnormalised logits */
        }
    }
    clt_tensor *tw = f64(dev, 2, s24, w), *tlw = f64(dev, 2, s24, lw), *ti = NULL, *t = NULL;
    clt_tensor *fi = f64(dev, 2, s32, idx);
    CHECK(clt_to_dtype(fi, CLT_INT64, &ti));
    for (int k = 0; k < 2; k++) {
        clt_distribution *d = NULL;
        CHECK(clt_categorical_dist(k ? NULL : tw, k ? tlw : NULL, 1, &d));
        cr_assert_eq(clt_distribution_batch_ndim(d), 1);
        cr_assert_eq(clt_distribution_batch_shape(d)[0], 2);
        double lp[6], ent[2] = {0, 0};
        for (int i = 0; i < 6; i++)
            lp[i] = log(pr[4 * (i % 2) + (int)idx[i]]);
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 4; c++)
                ent[r] -= pr[4 * r + c] * log(pr[4 * r + c]);
        CHECK(clt_distribution_log_prob(d, ti, &t));
        assert_shape(t, 2, s32);
        expect_values(t, lp, 6, 1e-12, 1e-14, "categorical log_prob (int64)");
        CHECK(clt_distribution_log_prob(d, fi, &t));
        expect_values(t, lp, 6, 1e-12, 1e-14, "categorical log_prob (float)");
        CHECK(clt_distribution_entropy(d, &t));
        expect_values(t, ent, 2, 1e-12, 1e-14, "categorical entropy");
        CHECK(clt_distribution_mean(d, &t));
        double *m = read_as_f64(t);
        cr_assert(isnan(m[0]) && isnan(m[1]), "categorical mean is not NaN");
        free(m);
        clt_tensor_free(t);
        clt_distribution_free(d);
        /* OneHotCategorical: log_prob of one-hot rows, entropy, mean */
        CHECK(clt_one_hot_categorical_dist(k ? NULL : tw, k ? tlw : NULL, 1, &d));
        cr_assert_eq(clt_distribution_event_ndim(d), 1);
        cr_assert_eq(clt_distribution_event_shape(d)[0], 4);
        double oh[24] = {0};
        for (int i = 0; i < 6; i++)
            oh[4 * i + (int)idx[i]] = 1;
        clt_tensor *toh = f64(dev, 3, (int64_t[]){3, 2, 4}, oh);
        CHECK(clt_distribution_log_prob(d, toh, &t));
        assert_shape(t, 2, s32);
        expect_values(t, lp, 6, 1e-12, 1e-14, "one-hot log_prob");
        CHECK(clt_distribution_entropy(d, &t));
        expect_values(t, ent, 2, 1e-12, 1e-14, "one-hot entropy");
        CHECK(clt_distribution_mean(d, &t));
        expect_values(t, pr, 8, 1e-12, 0, "one-hot mean");
        clt_tensor_free(toh);
        clt_distribution_free(d);
    }
    clt_tensor_free(tw);
    clt_tensor_free(tlw);
    clt_tensor_free(ti);
    clt_tensor_free(fi);
}

/* ---- multivariate normal ---------------------------------------------------- */

static const double cov3[9] = {2.0, 0.3, -0.4, 0.3, 1.0, 0.2, -0.4, 0.2, 0.5};
static const double mvn_loc[3] = {0.5, -1.0, 0.25};

/* Lower Cholesky factor of a 3x3 SPD matrix, on the host. */
static void host_cholesky(const double *a, double *l)
{
    memset(l, 0, 9 * sizeof *l);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j <= i; j++) {
            double s = a[3 * i + j];
            for (int k = 0; k < j; k++)
                s -= l[3 * i + k] * l[3 * j + k];
            l[3 * i + j] = i == j ? sqrt(s) : s / l[3 * j + j];
        }
}

/* Solves L y = x (forward substitution). */
static void host_lsolve(const double *l, const double *x, double *y)
{
    for (int i = 0; i < 3; i++) {
        double s = x[i];
        for (int k = 0; k < i; k++)
            s -= l[3 * i + k] * y[k];
        y[i] = s / l[3 * i + i];
    }
}

static double host_mvn_lp(const double *l, const double *mu, const double *x)
{
    double d[3], y[3], m = 0, hld = 0;
    for (int i = 0; i < 3; i++)
        d[i] = x[i] - mu[i];
    host_lsolve(l, d, y);
    for (int i = 0; i < 3; i++) {
        m += y[i] * y[i];
        hld += log(l[4 * i]);
    }
    return -0.5 * (3 * LOG_2PI + m) - hld;
}

Test(distributions, multivariate_normal_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const int64_t s33[2] = {3, 3};
    const double x[6] = {0.1, 0.2, 0.3, -1.5, 2.0, 0.0};
    double l[9];
    host_cholesky(cov3, l);
    clt_tensor *loc = f64(dev, 1, s3, mvn_loc), *cov = f64(dev, 2, s33, cov3);
    clt_tensor *tril = f64(dev, 2, s33, l), *tx = f64(dev, 2, s23, x), *t = NULL;
    for (int k = 0; k < 2; k++) {
        clt_distribution *d = NULL;
        CHECK(clt_multivariate_normal_dist(loc, k ? NULL : cov, k ? tril : NULL, 1, &d));
        cr_assert_eq(clt_distribution_batch_ndim(d), 0);
        cr_assert_eq(clt_distribution_event_ndim(d), 1);
        double lp[2] = {host_mvn_lp(l, mvn_loc, x), host_mvn_lp(l, mvn_loc, x + 3)};
        CHECK(clt_distribution_log_prob(d, tx, &t));
        assert_shape(t, 1, (int64_t[]){2});
        expect_values(t, lp, 2, 1e-11, 1e-13, "mvn log_prob");
        double ent = 1.5 * (1 + LOG_2PI) + log(l[0]) + log(l[4]) + log(l[8]);
        CHECK(clt_distribution_entropy(d, &t));
        expect_values(t, &ent, 1, 1e-12, 0, "mvn entropy");
        double var[3] = {cov3[0], cov3[4], cov3[8]};
        CHECK(clt_distribution_variance(d, &t));
        expect_values(t, var, 3, 1e-12, 0, "mvn variance");
        CHECK(clt_distribution_mean(d, &t));
        expect_values(t, mvn_loc, 3, 0, 0, "mvn mean");
        clt_distribution_free(d);
    }
    clt_tensor_free(loc);
    clt_tensor_free(cov);
    clt_tensor_free(tril);
    clt_tensor_free(tx);
}

Test(distributions, independent_sums_the_reinterpreted_dims)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *loc = f64(dev, 1, s3, loc3), *scale = f64(dev, 2, s21, scale21);
    clt_tensor *v = f64(dev, 2, s23, val23), *t = NULL;
    clt_distribution *n = NULL, *ind = NULL;
    CHECK(clt_normal_dist(loc, scale, 1, &n));
    CHECK(clt_independent_dist(n, 1, 1, &ind));
    clt_distribution_free(n); /* ind holds its own reference */
    cr_assert_str_eq(clt_distribution_name(ind), "Independent");
    cr_assert_eq(clt_distribution_batch_ndim(ind), 1);
    cr_assert_eq(clt_distribution_batch_shape(ind)[0], 2);
    cr_assert_eq(clt_distribution_event_ndim(ind), 1);
    cr_assert_eq(clt_distribution_event_shape(ind)[0], 3);
    double lp[2] = {0, 0}, ent[2] = {0, 0};
    for (int i = 0; i < 6; i++) {
        lp[i / 3] += host_lp(NORMAL, loc3[i % 3], scale21[i / 3], val23[i]);
        ent[i / 3] += 0.5 + 0.5 * LOG_2PI + log(scale21[i / 3]);
    }
    CHECK(clt_distribution_log_prob(ind, v, &t));
    assert_shape(t, 1, (int64_t[]){2});
    expect_values(t, lp, 2, 1e-12, 0, "independent log_prob");
    CHECK(clt_distribution_entropy(ind, &t));
    expect_values(t, ent, 2, 1e-12, 0, "independent entropy");
    /* a value whose event size is not 3 */
    clt_tensor *bad = f64(dev, 1, (int64_t[]){2}, val23);
    assert_error(clt_distribution_log_prob(ind, bad, &t), CLT_ERR_SHAPE_MISMATCH,
                 "The right-most size of value must match event_shape: [2] vs [3].");
    cr_assert_null(t);
    clt_tensor_free(bad);
    clt_distribution_free(ind);
    clt_tensor_free(loc);
    clt_tensor_free(scale);
    clt_tensor_free(v);
}

/* ---- KL divergences -------------------------------------------------------------- */

static clt_tensor *kl_of(const clt_distribution *p, const clt_distribution *q)
{
    clt_tensor *t = NULL;
    CHECK(clt_kl_divergence(p, q, &t));
    return t;
}

Test(distributions, kl_divergence_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double m1[3] = {0.0, 1.0, -2.0}, s1[3] = {1.0, 0.5, 2.0};
    const double m2[3] = {0.5, -1.0, -2.0}, s2[3] = {2.0, 0.75, 2.0};
    clt_tensor *a = f64(dev, 1, s3, m1), *b = f64(dev, 1, s3, s1);
    clt_tensor *c = f64(dev, 1, s3, m2), *e = f64(dev, 1, s3, s2);
    clt_distribution *p = NULL, *q = NULL;
    double want[3];

    CHECK(clt_normal_dist(a, b, 1, &p));
    CHECK(clt_normal_dist(c, e, 1, &q));
    for (int i = 0; i < 3; i++) {
        double vr = (s1[i] / s2[i]) * (s1[i] / s2[i]), t1 = (m1[i] - m2[i]) / s2[i];
        want[i] = 0.5 * (vr + t1 * t1 - 1 - log(vr));
    }
    expect_values(kl_of(p, q), want, 3, 1e-12, 1e-15, "KL Normal");
    clt_distribution_free(p);
    clt_distribution_free(q);

    CHECK(clt_laplace_dist(a, b, 1, &p));
    CHECK(clt_laplace_dist(c, e, 1, &q));
    for (int i = 0; i < 3; i++) {
        double sr = s1[i] / s2[i], ad = fabs(m1[i] - m2[i]);
        want[i] = -log(sr) + ad / s2[i] + sr * exp(-ad / s1[i]) - 1;
    }
    expect_values(kl_of(p, q), want, 3, 1e-12, 1e-15, "KL Laplace");
    clt_distribution_free(p);
    clt_distribution_free(q);

    CHECK(clt_exponential_dist(b, 1, &p));
    CHECK(clt_exponential_dist(e, 1, &q));
    for (int i = 0; i < 3; i++)
        want[i] = -log(s2[i] / s1[i]) + s2[i] / s1[i] - 1;
    expect_values(kl_of(p, q), want, 3, 1e-12, 1e-15, "KL Exponential");
    clt_distribution_free(p);
    clt_distribution_free(q);

    /* Uniform: [m1, m1 + s1] inside [m2 - s2, m2 + s2]? inf where not */
    clt_tensor *hi1 = NULL, *lo2 = NULL, *hi2 = NULL;
    CHECK(clt_add(a, b, &hi1));
    CHECK(clt_sub(c, e, &lo2));
    CHECK(clt_add(c, e, &hi2));
    CHECK(clt_uniform_dist(a, hi1, 1, &p));
    CHECK(clt_uniform_dist(lo2, hi2, 1, &q));
    for (int i = 0; i < 3; i++) {
        bool inside = m2[i] - s2[i] <= m1[i] && m1[i] + s1[i] <= m2[i] + s2[i];
        want[i] = inside ? log(2 * s2[i] / s1[i]) : INFINITY;
    }
    cr_assert(isinf(want[1]) && !isinf(want[0]), "the case needs both kinds");
    expect_values(kl_of(p, q), want, 3, 1e-12, 0, "KL Uniform");
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(lo2);
    clt_tensor_free(hi2);

    /* Bernoulli and Categorical, with probabilities of 0 and 1 */
    const double bp[3] = {0.3, 0.0, 1.0}, bq[3] = {0.6, 0.2, 0.0};
    clt_tensor *tbp = f64(dev, 1, s3, bp), *tbq = f64(dev, 1, s3, bq);
    CHECK(clt_bernoulli_dist(tbp, NULL, 1, &p));
    CHECK(clt_bernoulli_dist(tbq, NULL, 1, &q));
    want[0] = 0.3 * log(0.3 / 0.6) + 0.7 * log(0.7 / 0.4);
    want[1] = log(1 / 0.8);
    want[2] = INFINITY;
    expect_values(kl_of(p, q), want, 3, 1e-12, 1e-14, "KL Bernoulli");
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(tbp);
    clt_tensor_free(tbq);

    const double cp[6] = {0.2, 0.3, 0.5, 0.0, 0.5, 0.5}, cq[6] = {0.1, 0.1, 0.8, 0.5, 0.0, 0.5};
    clt_tensor *tcp = f64(dev, 2, s23, cp), *tcq = f64(dev, 2, s23, cq);
    CHECK(clt_categorical_dist(tcp, NULL, 1, &p));
    CHECK(clt_categorical_dist(tcq, NULL, 1, &q));
    double kc[2] = {0.2 * log(2) + 0.3 * log(3) + 0.5 * log(0.5 / 0.8), INFINITY};
    expect_values(kl_of(p, q), kc, 2, 1e-12, 1e-14, "KL Categorical");
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(tcp);
    clt_tensor_free(tcq);

    /* across families: Normal || Laplace (torch's closed form), Normal || Uniform (inf) */
    CHECK(clt_normal_dist(a, b, 1, &p));
    CHECK(clt_laplace_dist(c, e, 1, &q));
    for (int i = 0; i < 3; i++) {
        double ld = m1[i] - m2[i], r = ld / s1[i];
        want[i] = -log(s1[i] / s2[i]) +
                  (sqrt(2 / M_PI) * s1[i] * exp(-0.5 * r * r) + ld * erf(r / sqrt(2.0))) / s2[i] -
                  0.5 * (1 + log(0.5 * M_PI));
    }
    expect_values(kl_of(p, q), want, 3, 1e-12, 1e-15, "KL Normal || Laplace");
    clt_distribution_free(q);
    CHECK(clt_uniform_dist(a, hi1, 1, &q));
    double infs[3] = {INFINITY, INFINITY, INFINITY};
    expect_values(kl_of(p, q), infs, 3, 0, 0, "KL Normal || Uniform");
    clt_distribution_free(p);
    clt_distribution_free(q);

    /* Independent(Normal, 1): the sum of the three */
    clt_distribution *n1 = NULL, *n2 = NULL;
    CHECK(clt_normal_dist(a, b, 1, &n1));
    CHECK(clt_normal_dist(c, e, 1, &n2));
    CHECK(clt_independent_dist(n1, 1, 1, &p));
    CHECK(clt_independent_dist(n2, 1, 1, &q));
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        double vr = (s1[i] / s2[i]) * (s1[i] / s2[i]), t1 = (m1[i] - m2[i]) / s2[i];
        sum += 0.5 * (vr + t1 * t1 - 1 - log(vr));
    }
    expect_values(kl_of(p, q), &sum, 1, 1e-12, 0, "KL Independent");
    clt_tensor *t = NULL;
    assert_error(clt_kl_divergence(n1, p, &t), CLT_ERR_INVALID_ARGUMENT,
                 "No KL(p || q) is implemented for p type Normal and q type Independent");
    cr_assert_null(t);
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_distribution_free(n1);
    clt_distribution_free(n2);
    clt_tensor_free(hi1);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(e);
}

Test(distributions, kl_multivariate_normal)
{
    clt_device *dev = get_device("cpu");
    const int64_t s33[2] = {3, 3};
    const double cov_b[9] = {1.0, 0.1, 0.0, 0.1, 2.0, -0.3, 0.0, -0.3, 0.7};
    const double loc_b[3] = {0.0, 0.5, -0.5};
    double lp[9], lq[9];
    host_cholesky(cov3, lp);
    host_cholesky(cov_b, lq);
    /* host: log(det Lq / det Lp) + (tr(Lq^-1 Lp (Lq^-1 Lp)^T) + |Lq^-1 (mq - mp)|^2 - n) / 2 */
    double t2 = 0, t3 = 0, h = 0, col[3], y[3], dm[3];
    for (int j = 0; j < 3; j++) {
        for (int i = 0; i < 3; i++)
            col[i] = lp[3 * i + j];
        host_lsolve(lq, col, y);
        for (int i = 0; i < 3; i++)
            t2 += y[i] * y[i];
        dm[j] = loc_b[j] - mvn_loc[j];
        h += log(lq[4 * j]) - log(lp[4 * j]);
    }
    host_lsolve(lq, dm, y);
    for (int i = 0; i < 3; i++)
        t3 += y[i] * y[i];
    double want = h + 0.5 * (t2 + t3 - 3);
    clt_tensor *la = f64(dev, 1, s3, mvn_loc), *ca = f64(dev, 2, s33, cov3);
    clt_tensor *lb = f64(dev, 1, s3, loc_b), *cb = f64(dev, 2, s33, cov_b);
    clt_distribution *p = NULL, *q = NULL;
    CHECK(clt_multivariate_normal_dist(la, ca, NULL, 1, &p));
    CHECK(clt_multivariate_normal_dist(lb, cb, NULL, 1, &q));
    expect_values(kl_of(p, q), &want, 1, 1e-11, 0, "KL MultivariateNormal");
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(la);
    clt_tensor_free(ca);
    clt_tensor_free(lb);
    clt_tensor_free(cb);
}

/* ---- gradients by finite differences --------------------------------------------- */

typedef enum gcase {
    GC_NORMAL_LP, GC_LAPLACE_LP, GC_EXP_LP, GC_BERN_LP, GC_CAT_LP, GC_MVN_LP, GC_NORMAL_RS,
    GC_UNIFORM_RS, GC_LAPLACE_RS, GC_EXP_RS, GC_MVN_RS, GC_KL_NORMAL, GC_ENTROPY_CAT
} gcase;

/* The inputs' meaning per case: in[0], in[1] the parameters, in[2] the
 * value where there is one.  Samples come from a generator seeded afresh,
 * so every evaluation sees the same noise. */
static clt_status gc_dist(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    gcase c = *(const gcase *)ctx;
    clt_distribution *d = NULL, *q = NULL;
    clt_generator *g = NULL;
    clt_status st;
    const int64_t shape[1] = {4};
    switch (c) {
    case GC_NORMAL_LP:
    case GC_NORMAL_RS:
    case GC_KL_NORMAL: st = clt_normal_dist(in[0], in[1], 1, &d); break;
    case GC_LAPLACE_LP:
    case GC_LAPLACE_RS: st = clt_laplace_dist(in[0], in[1], 1, &d); break;
    case GC_EXP_LP:
    case GC_EXP_RS: st = clt_exponential_dist(in[0], 1, &d); break;
    case GC_UNIFORM_RS: st = clt_uniform_dist(in[0], in[1], 1, &d); break;
    case GC_BERN_LP: st = clt_bernoulli_dist(NULL, in[0], 1, &d); break;
    case GC_CAT_LP:
    case GC_ENTROPY_CAT: st = clt_categorical_dist(NULL, in[0], 1, &d); break;
    default: { /* MVN: loc and a lower-triangular factor */
        clt_tensor *l = NULL;
        st = clt_tril(in[1], 0, &l);
        if (st == CLT_OK)
            st = clt_multivariate_normal_dist(in[0], NULL, l, 1, &d);
        clt_tensor_free(l);
    }
    }
    if (st != CLT_OK)
        return st;
    switch (c) {
    case GC_NORMAL_LP:
    case GC_LAPLACE_LP:
    case GC_BERN_LP:
    case GC_CAT_LP:
    case GC_MVN_LP: st = clt_distribution_log_prob(d, in[2], out); break;
    case GC_EXP_LP: st = clt_distribution_log_prob(d, in[1], out); break;
    case GC_ENTROPY_CAT: st = clt_distribution_entropy(d, out); break;
    case GC_KL_NORMAL:
        st = clt_normal_dist(in[2], in[1], 1, &q);
        if (st == CLT_OK)
            st = clt_kl_divergence(d, q, out);
        break;
    default:
        st = clt_generator_new(99, &g);
        if (st == CLT_OK)
            st = clt_distribution_rsample(d, g, 1, shape, out);
    }
    clt_generator_free(g);
    clt_distribution_free(q);
    clt_distribution_free(d);
    return st;
}

Test(distributions, gradients_of_log_prob_rsample_entropy_and_kl)
{
    clt_device *dev = get_device("cpu");
    const double loc[3] = {0.3, -0.8, 1.2}, scale[3] = {0.7, 1.3, 0.4}, val[3] = {0.1, 0.5, 2.0};
    const double rate[3] = {0.6, 2.0, 1.1}, hi[3] = {1.5, 0.0, 2.5}, bits[3] = {1, 0, 1};
    const double logits[6] = {0.2, -1.0, 0.7, 1.5, 0.1, -0.4}, cls[2] = {2, 0};
    const double tril9[9] = {1.2, 0.0, 0.0, 0.4, 0.9, 0.0, -0.3, 0.2, 1.5};
    const double mval[6] = {0.2, -0.5, 1.0, 1.5, 0.3, -0.2};
    struct {
        gcase c;
        int n;
        gc_in in[3];
    } cases[] = {
        {GC_NORMAL_LP, 3, {{1, {3}, loc, 1}, {1, {3}, scale, 1}, {1, {3}, val, 1}}},
        {GC_LAPLACE_LP, 3, {{1, {3}, loc, 1}, {1, {3}, scale, 1}, {1, {3}, val, 1}}},
        {GC_EXP_LP, 2, {{1, {3}, rate, 1}, {1, {3}, val, 1}}},
        {GC_BERN_LP, 3, {{1, {3}, loc, 1}, {1, {3}, scale, 0}, {1, {3}, bits, 0}}},
        {GC_CAT_LP, 3, {{2, {2, 3}, logits, 1}, {1, {3}, scale, 0}, {1, {2}, cls, 0}}},
        {GC_ENTROPY_CAT, 1, {{2, {2, 3}, logits, 1}}},
        {GC_MVN_LP, 3, {{1, {3}, loc, 1}, {2, {3, 3}, tril9, 1}, {2, {2, 3}, mval, 1}}},
        {GC_NORMAL_RS, 2, {{1, {3}, loc, 1}, {1, {3}, scale, 1}}},
        {GC_UNIFORM_RS, 2, {{1, {3}, loc, 1}, {1, {3}, hi, 1}}},
        {GC_LAPLACE_RS, 2, {{1, {3}, loc, 1}, {1, {3}, scale, 1}}},
        {GC_EXP_RS, 1, {{1, {3}, rate, 1}}},
        {GC_MVN_RS, 2, {{1, {3}, loc, 1}, {2, {3, 3}, tril9, 1}}},
        {GC_KL_NORMAL, 3, {{1, {3}, loc, 1}, {1, {3}, scale, 1}, {1, {3}, val, 1}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* the categorical class indices must stay integers: no gradient there */
        gradcheck_tol(dev, gc_dist, &cases[i].c, cases[i].n, cases[i].in, 1e-6, 1e-5, 1e-7);
    }
}

/* ---- sample moments from fixed seeds ----------------------------------------------- */

/* mean and variance of column c of a [n, k] sample */
static void column_stats(const double *x, size_t n, size_t k, size_t c, double *mean, double *var)
{
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i * k + c];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (x[i * k + c] - *mean) * (x[i * k + c] - *mean);
    *var = ss / (double)(n - 1);
}

/* The sample mean within 5 sigma of mu (sigma^2 = var / n) and the sample
 * variance within 5 sigma of var (its variance (m4 - var^2) / n, m4 the
 * fourth central moment). */
static void expect_moments(double mean, double var, double mu, double v, double m4, size_t n,
                           const char *what)
{
    double sm = 5 * sqrt(v / (double)n), sv = 5 * sqrt((m4 - v * v) / (double)n);
    cr_assert(fabs(mean - mu) <= sm, "%s: sample mean %g, want %g +- %g", what, mean, mu, sm);
    cr_assert(fabs(var - v) <= sv, "%s: sample variance %g, want %g +- %g", what, var, v, sv);
}

Test(distributions, sample_moments_within_five_sigma)
{
    clt_device *dev = get_device("cpu");
    const size_t n = 20000;
    const int64_t ns[1] = {(int64_t)n};
    const double a[2] = {1.5, -0.5}, b[2] = {0.5, 2.0};
    const int64_t s2[1] = {2};
    clt_tensor *ta = f64(dev, 1, s2, a), *tb = f64(dev, 1, s2, b), *x = NULL, *lo = NULL;
    CHECK(clt_sub(ta, tb, &lo));
    clt_generator *g = NULL;
    CHECK(clt_generator_new(1234, &g));
    for (int fam = 0; fam < 5; fam++) {
        clt_distribution *d = NULL;
        const char *name = fam == 0 ? "Normal" : fam == 1 ? "Laplace" : fam == 2 ? "Uniform"
                         : fam == 3 ? "Exponential" : "Bernoulli";
        clt_tensor *p = NULL;
        switch (fam) {
        case 0: CHECK(clt_normal_dist(ta, tb, 1, &d)); break;
        case 1: CHECK(clt_laplace_dist(ta, tb, 1, &d)); break;
        case 2: CHECK(clt_uniform_dist(lo, ta, 1, &d)); break; /* [a - b, a] */
        case 3: CHECK(clt_exponential_dist(tb, 1, &d)); break;
        default:
            CHECK(clt_sigmoid(ta, &p));
            CHECK(clt_bernoulli_dist(p, NULL, 1, &d));
        }
        CHECK(clt_distribution_sample(d, g, 1, ns, &x));
        assert_shape(x, 2, (int64_t[]){(int64_t)n, 2});
        cr_assert_eq(clt_requires_grad(x), 0);
        double *h = read_as_f64(x);
        for (size_t c = 0; c < 2; c++) {
            double mean, var, mu, v, m4;
            column_stats(h, n, 2, c, &mean, &var);
            switch (fam) {
            case 0: mu = a[c], v = b[c] * b[c], m4 = 3 * v * v; break;
            case 1: mu = a[c], v = 2 * b[c] * b[c], m4 = 24 * pow(b[c], 4); break;
            case 2: mu = a[c] - b[c] / 2, v = b[c] * b[c] / 12, m4 = pow(b[c], 4) / 80; break;
            case 3: mu = 1 / b[c], v = mu * mu, m4 = 9 * v * v; break;
            default: {
                double q = 1 / (1 + exp(-a[c]));
                mu = q, v = q * (1 - q), m4 = v * (1 - 3 * v);
            }
            }
            expect_moments(mean, var, mu, v, m4, n, name);
        }
        free(h);
        clt_tensor_free(x);
        clt_tensor_free(p);
        clt_distribution_free(d);
    }
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(lo);
    clt_generator_free(g);
}

Test(distributions, categorical_and_mvn_samples_within_five_sigma)
{
    clt_device *dev = get_device("cpu");
    const size_t n = 20000;
    const double w[4] = {0.1, 0.2, 0.3, 0.4};
    clt_tensor *tw = f64(dev, 1, (int64_t[]){4}, w), *x = NULL;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(77, &g));
    clt_distribution *d = NULL;
    CHECK(clt_categorical_dist(tw, NULL, 1, &d));
    CHECK(clt_distribution_sample(d, g, 2, (int64_t[]){(int64_t)n / 4, 4}, &x));
    assert_shape(x, 2, (int64_t[]){(int64_t)n / 4, 4});
    cr_assert_eq(clt_tensor_dtype(x), CLT_INT64);
    double *h = read_as_f64(x);
    size_t counts[4] = {0};
    for (size_t i = 0; i < n; i++) {
        cr_assert(h[i] >= 0 && h[i] <= 3);
        counts[(int)h[i]]++;
    }
    for (int k = 0; k < 4; k++) {
        double sd = sqrt(n * w[k] * (1 - w[k]));
        cr_assert(fabs((double)counts[k] - n * w[k]) <= 5 * sd, "class %d: %zu of %zu", k,
                  counts[k], n);
    }
    free(h);
    clt_tensor_free(x);
    clt_distribution_free(d);
    /* OneHotCategorical: rows are one-hot */
    CHECK(clt_one_hot_categorical_dist(tw, NULL, 1, &d));
    CHECK(clt_distribution_sample(d, g, 1, (int64_t[]){100}, &x));
    assert_shape(x, 2, (int64_t[]){100, 4});
    h = read_as_f64(x);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(h[4 * i] + h[4 * i + 1] + h[4 * i + 2] + h[4 * i + 3], 1.0);
    free(h);
    clt_tensor_free(x);
    clt_distribution_free(d);
    clt_tensor_free(tw);

    /* MVN: the sample covariance of each pair within 5 sigma (var of the
     * product of two centred normals: S_ii S_jj + S_ij^2) */
    clt_tensor *loc = f64(dev, 1, s3, mvn_loc), *cov = f64(dev, 2, (int64_t[]){3, 3}, cov3);
    CHECK(clt_multivariate_normal_dist(loc, cov, NULL, 1, &d));
    CHECK(clt_distribution_rsample(d, g, 1, (int64_t[]){(int64_t)n}, &x));
    assert_shape(x, 2, (int64_t[]){(int64_t)n, 3});
    h = read_as_f64(x);
    double mean[3];
    for (int c = 0; c < 3; c++) {
        double var;
        column_stats(h, n, 3, (size_t)c, &mean[c], &var);
        double sm = 5 * sqrt(cov3[4 * c] / n);
        cr_assert(fabs(mean[c] - mvn_loc[c]) <= sm, "mvn mean %d: %g", c, mean[c]);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (size_t r = 0; r < n; r++)
                s += (h[3 * r + i] - mean[i]) * (h[3 * r + j] - mean[j]);
            s /= (double)(n - 1);
            double sij = cov3[3 * i + j];
            double sd = sqrt((cov3[4 * i] * cov3[4 * j] + sij * sij) / n);
            cr_assert(fabs(s - sij) <= 5 * sd, "mvn cov[%d][%d]: %g, want %g +- %g", i, j, s,
                      sij, 5 * sd);
        }
    free(h);
    clt_tensor_free(x);
    clt_distribution_free(d);
    clt_tensor_free(loc);
    clt_tensor_free(cov);
    clt_generator_free(g);
}

/* ---- REINFORCE ----------------------------------------------------------------------- */

Test(distributions, reinforce_gradient_through_categorical_log_prob)
{
    clt_device *dev = get_device("cpu");
    const double lg[3] = {0.5, -0.25, 1.0}, reward[3] = {1.0, -2.0, 0.5};
    const int64_t n = 64;
    clt_tensor *logits = f64(dev, 1, s3, lg), *rw = f64(dev, 1, s3, reward);
    CHECK(clt_set_requires_grad(logits, 1));
    clt_generator *g = NULL;
    CHECK(clt_generator_new(5, &g));
    clt_distribution *d = NULL;
    clt_tensor *a = NULL, *lp = NULL, *r = NULL, *prod = NULL, *loss = NULL;
    CHECK(clt_categorical_dist(NULL, logits, 1, &d));
    CHECK(clt_distribution_sample(d, g, 1, &n, &a));
    CHECK(clt_distribution_log_prob(d, a, &lp));
    CHECK(clt_index_select(rw, 0, a, &r));
    CHECK(clt_mul(lp, r, &prod));
    CHECK(clt_mean(prod, &loss)); /* surrogate objective: mean of log pi(a) R(a) */
    CHECK(clt_backward(loss, NULL, 0));
    /* host: d/dlogits = mean over samples of R(a) (onehot(a) - softmax) */
    double *ha = read_as_f64(a), sm[3], z = 0, want[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        z += exp(lg[k]);
    for (int k = 0; k < 3; k++)
        sm[k] = exp(lg[k]) / z;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            want[k] += reward[(int)ha[i]] * ((k == (int)ha[i]) - sm[k]) / (double)n;
    free(ha);
    clt_tensor *gr = NULL;
    CHECK(clt_grad(logits, &gr));
    expect_values(gr, want, 3, 1e-12, 1e-14, "REINFORCE gradient");
    clt_tensor_free(loss);
    clt_tensor_free(prod);
    clt_tensor_free(r);
    clt_tensor_free(lp);
    clt_tensor_free(a);
    clt_distribution_free(d);
    clt_generator_free(g);
    clt_tensor_free(logits);
    clt_tensor_free(rw);
}

/* ---- validation and refusals ------------------------------------------------------------ */

Test(distributions, validation_messages_as_torch)
{
    clt_device *dev = get_device("cpu");
    const double neg[3] = {1.0, -0.5, 2.0}, v[3] = {0.5, -1.0, 3.0}, p2[3] = {0.5, 1.5, 0.2};
    clt_tensor *tn = f64(dev, 1, s3, neg), *tv = f64(dev, 1, s3, v), *tp = f64(dev, 1, s3, p2);
    clt_tensor *ok = f64(dev, 1, s3, (double[]){0.2, 0.3, 0.5}), *t = NULL;
    clt_tensor *short2 = f64(dev, 1, (int64_t[]){2}, v);
    clt_distribution *d = (clt_distribution *)&d;
    assert_error(clt_normal_dist(tv, tn, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter scale (Tensor of shape [3]) of distribution Normal to "
                 "satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid values");
    cr_assert_null(d);
    names_only("clt_normal_dist");
    /* without validation the same parameters are taken */
    CHECK(clt_normal_dist(tv, tn, 0, &d));
    clt_distribution_free(d);
    assert_error(clt_bernoulli_dist(tp, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "constraint Interval(lower_bound=0.0, upper_bound=1.0)");
    assert_error(clt_bernoulli_dist(tp, tp, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Either `probs` or `logits` must be specified, but not both.");
    assert_error(clt_uniform_dist(tv, tn, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Uniform is not defined when low>= high");
    clt_tensor *tnn = NULL;
    CHECK(clt_abs(tn, &tnn));
    CHECK(clt_exponential_dist(tnn, 1, &d));
    assert_error(clt_distribution_log_prob(d, tv, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Expected value argument (Tensor of shape [3]) to be within the support "
                 "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential, but found "
                 "invalid values");
    cr_assert_null(t);
    names_only("clt_distribution_log_prob");
    assert_error(clt_distribution_log_prob(d, short2, &t),
                 CLT_ERR_SHAPE_MISMATCH,
                 "Value is not broadcastable with batch_shape+event_shape: [2] vs [3].");
    clt_distribution_free(d);
    CHECK(clt_categorical_dist(ok, NULL, 1, &d));
    clt_tensor *three = f64(dev, 1, (int64_t[]){1}, (double[]){3});
    assert_error(clt_distribution_log_prob(d, three, &t), CLT_ERR_INVALID_ARGUMENT,
                 "(IntegerInterval(lower_bound=0, upper_bound=2))");
    assert_error(clt_distribution_cdf(d, three, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Categorical does not implement cdf");
    assert_error(clt_distribution_rsample(d, NULL, 0, NULL, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Categorical does not implement rsample");
    clt_distribution *ind = NULL;
    assert_error(clt_independent_dist(d, 1, 1, &ind), CLT_ERR_INVALID_ARGUMENT,
                 "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                 "actual 1 vs 0");
    cr_assert_null(ind);
    clt_distribution_free(d);
    /* a covariance that is not positive-definite */
    const double bad[4] = {1, 2, 2, 1};
    clt_tensor *tb = f64(dev, 2, (int64_t[]){2, 2}, bad), *l2 = f64(dev, 1, (int64_t[]){2}, v);
    assert_error(clt_multivariate_normal_dist(l2, tb, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "constraint PositiveDefinite()");
    assert_error(clt_multivariate_normal_dist(l2, NULL, tb, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "constraint LowerCholesky()");
    cr_assert_null(d);
    clt_tensor_free(tb);
    clt_tensor_free(l2);
    clt_tensor_free(three);
    clt_tensor_free(tnn);
    clt_tensor_free(tn);
    clt_tensor_free(tv);
    clt_tensor_free(tp);
    clt_tensor_free(ok);
    clt_tensor_free(short2);
}

Test(distributions, messages_name_the_call_made)
{
    clt_device *dev = get_device("cpu"), *dev2 = second_device(dev);
    const double w[3] = {0.2, 0.3, 0.5}, i[2] = {1, 2};
    clt_tensor *tw = f64(dev, 1, s3, w), *ti = NULL, *t = NULL;
    CHECK(clt_tensor_from_host(dev2, CLT_FLOAT64, 1, (int64_t[]){2}, i, &ti));
    clt_distribution *d = NULL;
    CHECK(clt_categorical_dist(tw, NULL, 0, &d));
    clt_status st = clt_distribution_log_prob(d, ti, &t);
    cr_assert_eq(st, CLT_ERR_DEVICE_MISMATCH, "%s", clt_last_error());
    cr_assert_null(t);
    /* the device message suggests clt_to; it names no op the call ran */
    const char *m = clt_last_error();
    cr_assert(strncmp(m, "clt_distribution_log_prob: ", 27) == 0 && !strstr(m, "gather") &&
                  !strstr(m + 27, "clt_distribution_log_prob"),
              "%s", m);
    clt_distribution_free(d);
    /* a covariance that is not positive-definite, not validated: cholesky's refusal */
    const double bad[4] = {1, 2, 2, 1};
    clt_tensor *tb = f64(dev, 2, (int64_t[]){2, 2}, bad), *l2 = f64(dev, 1, (int64_t[]){2}, i);
    assert_error(clt_multivariate_normal_dist(l2, tb, NULL, 0, &d), CLT_ERR_INVALID_ARGUMENT,
                 "not positive-definite");
    names_only("clt_multivariate_normal_dist");
    clt_tensor_free(tb);
    clt_tensor_free(l2);
    clt_tensor_free(tw);
    clt_tensor_free(ti);
}
