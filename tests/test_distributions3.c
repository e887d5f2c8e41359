/* test_distributions3.c: Binomial, Multinomial, ContinuousBernoulli, VonMises,
 * RelaxedOneHotCategorical, clt_binomial, and the cross-family KL pairs:
 * log_prob, entropy, moments,
 * cdf/icdf against host formulas in double (ContinuousBernoulli's moments,
 * entropy and cdf, and the continuous KLs, by Simpson's rule on the
 * host); sample moments from fixed seeds within 5 sigma; clt_binomial's
 * draws the same on two devices; gradients by float64 finite
 * differences; the validation messages. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"

#define PI 3.14159265358979323846
#define EULER 0.57721566490153286061

static const int64_t s3[1] = {3};

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

/* t (n elements) against want within rtol / atol; t released. */
static void expect_values(clt_tensor *t, const double *want, size_t n, double rtol, double atol,
                          const char *what)
{
    cr_assert_not_null(t, "%s: no tensor", what);
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld elements, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++) {
        if (isinf(want[i]))
            cr_assert(got[i] == want[i], "%s[%zu]: got %.15g, want %.15g", what, i, got[i],
                      want[i]);
        else
            cr_assert(close_enough(got[i], want[i], rtol, atol),
                      "%s[%zu]: got %.15g, want %.15g", what, i, got[i], want[i]);
    }
    free(got);
    clt_tensor_free(t);
}

static double binom_lp(double n, double p, double k)
{
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) + k * log(p) + (n - k) * log1p(-p);
}

/* Simpson's rule of f(x, ctx) over [a, b] with m (even) intervals. */
static double simpson(double (*f)(double, const double *), const double *ctx, double a, double b,
                      int m)
{
    double h = (b - a) / m, s = f(a, ctx) + f(b, ctx);
    for (int i = 1; i < m; i++)
        s += f(a + i * h, ctx) * (i % 2 ? 4 : 2);
    return s * h / 3;
}

/* ContinuousBernoulli(lambda)'s density: C lambda^x (1 - lambda)^(1 - x),
 * C = 2 atanh(1 - 2 lambda) / (1 - 2 lambda) (2 at 1/2). */
static double cb_logc(double l)
{
    return fabs(l - 0.5) < 1e-12 ? log(2.0) : log(2 * atanh(1 - 2 * l) / (1 - 2 * l));
}
static double cb_lp(double x, double l)
{
    return cb_logc(l) + x * log(l) + (1 - x) * log1p(-l);
}
static double cb_pdf_x(double x, const double *c) { return exp(cb_lp(x, c[0])); }
static double cb_x_pdf(double x, const double *c) { return x * exp(cb_lp(x, c[0])); }
static double cb_x2_pdf(double x, const double *c) { return x * x * exp(cb_lp(x, c[0])); }
static double cb_h(double x, const double *c) { return -cb_lp(x, c[0]) * exp(cb_lp(x, c[0])); }
static double cb_kl(double x, const double *c)
{
    double a = cb_lp(x, c[0]);
    return exp(a) * (a - cb_lp(x, c[1]));
}

Test(distributions3, binomial_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double n[3] = {3, 7, 12}, p[3] = {0.3, 0.65, 0.1}, k[3] = {1, 7, 0};
    clt_tensor *tn = f64(dev, 1, s3, n), *tp = f64(dev, 1, s3, p), *tk = f64(dev, 1, s3, k), *t;
    clt_distribution *d = NULL;
    CHECK(clt_binomial_dist(tn, tp, NULL, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "Binomial");
    cr_assert_eq(clt_distribution_has_rsample(d), 0);
    double lp[3], mean[3], var[3];
    for (int i = 0; i < 3; i++) {
        lp[i] = binom_lp(n[i], p[i], k[i]);
        mean[i] = n[i] * p[i];
        var[i] = n[i] * p[i] * (1 - p[i]);
    }
    CHECK(clt_distribution_log_prob(d, tk, &t));
    expect_values(t, lp, 3, 1e-11, 1e-12, "Binomial log_prob");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, mean, 3, 1e-12, 1e-15, "Binomial mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 3, 1e-12, 1e-15, "Binomial variance");
    assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Inhomogeneous total count not supported by `entropy`.");
    const double over[3] = {1, 8, 0};
    clt_tensor *to = f64(dev, 1, s3, over);
    assert_error(clt_distribution_log_prob(d, to, &t), CLT_ERR_INVALID_ARGUMENT,
                 "IntegerInterval(lower_bound=0, upper_bound=total_count)");
    clt_distribution_free(d);
    /* the logits form, and the entropy of one total count: -sum p log p over 0 .. n */
    const double six[3] = {6, 6, 6}, lg[3] = {-1.2, 0.0, 2.5};
    clt_tensor *t6 = f64(dev, 1, s3, six), *tl = f64(dev, 1, s3, lg);
    CHECK(clt_binomial_dist(t6, NULL, tl, 1, &d));
    double ent[3];
    for (int i = 0; i < 3; i++) {
        double q = 1 / (1 + exp(-lg[i])), h = 0;
        for (int j = 0; j <= 6; j++)
            h -= exp(binom_lp(6, q, j)) * binom_lp(6, q, j);
        ent[i] = h;
        lp[i] = binom_lp(6, q, k[i] > 6 ? 6 : k[i]);
    }
    CHECK(clt_distribution_entropy(d, &t));
    expect_values(t, ent, 3, 1e-11, 1e-12, "Binomial entropy");
    const double k6[3] = {1, 6, 0};
    clt_tensor *tk6 = f64(dev, 1, s3, k6);
    CHECK(clt_distribution_log_prob(d, tk6, &t));
    expect_values(t, lp, 3, 1e-11, 1e-12, "Binomial(logits) log_prob");
    clt_distribution_free(d);
    /* refusals: a fractional total count, probs above 1, both or neither */
    const double frac[3] = {1.5, 2, 3}, big[3] = {0.2, 1.2, 0.3};
    clt_tensor *tf = f64(dev, 1, s3, frac), *tb = f64(dev, 1, s3, big);
    d = (clt_distribution *)1;
    assert_error(clt_binomial_dist(tf, tp, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter total_count (Tensor of shape [3]) of distribution Binomial "
                 "to satisfy the constraint IntegerGreaterThan(lower_bound=0)");
    cr_assert_null(d);
    assert_error(clt_binomial_dist(tn, tb, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Interval(lower_bound=0.0, upper_bound=1.0)");
    assert_error(clt_binomial_dist(tn, tp, tp, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Either `probs` or `logits` must be specified, but not both.");
    clt_tensor *all[] = {tn, tp, tk, to, t6, tl, tk6, tf, tb};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_tensor_free(all[i]);
}

/* mean within 5 sigma, variance within 5 sigma of its sampling error. */
static void check_draws(const double *h, size_t n, size_t k, size_t c, double mu, double v,
                        double m4, const char *what)
{
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        s += h[i * k + c];
    double mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (h[i * k + c] - mean) * (h[i * k + c] - mean);
    double var = ss / (double)(n - 1);
    double sm = 5 * sqrt(v / (double)n), sv = 5 * sqrt((m4 - v * v) / (double)n);
    cr_assert(fabs(mean - mu) <= sm, "%s[%zu]: sample mean %g, want %g +- %g", what, c, mean, mu,
              sm);
    cr_assert(fabs(var - v) <= sv, "%s[%zu]: sample variance %g, want %g +- %g", what, c, var, v,
              sv);
}

Test(distributions3, binomial_sampler_moments)
{
    clt_device *dev = get_device("cpu");
    /* inversion (n p < 10), BTRS (n p >= 10), p > 1/2 by 1 - p, the ends */
    const double n[8] = {5, 40, 200, 1000, 60, 9, 0, 30};
    const double p[8] = {0.3, 0.5, 0.07, 0.9, 0.97, 0.4, 0.5, 1.0};
    const int64_t s8[1] = {8};
    const size_t m = 20000;
    for (int dt = 0; dt < 2; dt++) {
        clt_tensor *tn = f64(dev, 1, s8, n), *tp = f64(dev, 1, s8, p), *cn, *cp, *x = NULL,
                   *y = NULL;
        CHECK(clt_to_dtype(tn, dt ? CLT_FLOAT64 : CLT_FLOAT32, &cn));
        CHECK(clt_to_dtype(tp, dt ? CLT_FLOAT64 : CLT_FLOAT32, &cp));
        clt_tensor *en = NULL, *ep = NULL;
        const int64_t shape[2] = {(int64_t)m, 8};
        CHECK(clt_expand(cn, 2, shape, &en));
        CHECK(clt_expand(cp, 2, shape, &ep));
        clt_generator *g = NULL;
        CHECK(clt_generator_new(31 + dt, &g));
        CHECK(clt_binomial(g, en, ep, &x));
        cr_assert_eq(clt_generator_offset(g), m * 8);
        assert_shape(x, 2, shape);
        cr_assert_eq(clt_tensor_dtype(x), dt ? CLT_FLOAT64 : CLT_FLOAT32);
        double *h = read_as_f64(x);
        for (size_t i = 0; i < m * 8; i++) {
            double cnt = floor(n[i % 8]);
            cr_assert(h[i] >= 0 && h[i] <= cnt && h[i] == floor(h[i]), "draw %zu: %g of %g", i,
                      h[i], cnt);
        }
        for (size_t c = 0; c < 8; c++) {
            double cnt = floor(n[c]), v = cnt * p[c] * (1 - p[c]);
            /* the fourth central moment n p q (1 + 3 (n - 2) p q) */
            double m4 = v * (1 + 3 * (cnt - 2) * p[c] * (1 - p[c]));
            if (v == 0) {
                for (size_t i = 0; i < m; i++)
                    cr_assert(h[i * 8 + c] == cnt * p[c]);
                continue;
            }
            check_draws(h, m, 8, c, cnt * p[c], v, m4, "clt_binomial");
        }
        free(h);
        /* a Binomial's samples come from it: its shape, its moments */
        clt_distribution *d = NULL;
        CHECK(clt_binomial_dist(cn, cp, NULL, 1, &d));
        CHECK(clt_distribution_sample(d, g, 1, (int64_t[]){(int64_t)m}, &y));
        assert_shape(y, 2, shape);
        h = read_as_f64(y);
        check_draws(h, m, 8, 2, 14, 14 * 0.93, 14 * 0.93 * (1 + 3 * 198 * 0.07 * 0.93),
                    "Binomial");
        free(h);
        clt_distribution_free(d);
        clt_generator_free(g);
        clt_tensor *all[] = {tn, tp, cn, cp, en, ep, x, y};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            clt_tensor_free(all[i]);
    }
    /* refusals: a negative count, a probability outside [0, 1], integers */
    const double bad[3] = {1, -2, 3}, pr[3] = {0.1, 0.2, 1.5};
    clt_tensor *tb = f64(dev, 1, s3, bad), *tp = f64(dev, 1, s3, pr), *t = (clt_tensor *)1, *ti;
    assert_error(clt_binomial(NULL, tb, tb, &t), CLT_ERR_INVALID_ARGUMENT, "count");
    cr_assert_null(t);
    assert_error(clt_binomial(NULL, tp, tp, &t), CLT_ERR_INVALID_ARGUMENT, "prob");
    CHECK(clt_to_dtype(tp, CLT_INT32, &ti));
    cr_assert_neq(clt_binomial(NULL, ti, tp, &t), CLT_OK);
    cr_assert_null(t);
    clt_tensor_free(tb);
    clt_tensor_free(tp);
    clt_tensor_free(ti);
}

Test(distributions3, binomial_draws_are_the_same_on_two_devices)
{
    clt_device *d1 = get_device("cpu"), *d2 = second_device(d1);
    const double n[3] = {4, 300, 2000}, p[3] = {0.2, 0.45, 0.8};
    for (int dt = 0; dt < 2; dt++) {
        clt_tensor *x[2];
        for (int k = 0; k < 2; k++) {
            clt_device *dev = k ? d2 : d1;
            clt_tensor *tn = f64(dev, 1, s3, n), *tp = f64(dev, 1, s3, p), *cn, *cp, *en, *ep;
            CHECK(clt_to_dtype(tn, dt ? CLT_FLOAT64 : CLT_FLOAT32, &cn));
            CHECK(clt_to_dtype(tp, dt ? CLT_FLOAT64 : CLT_FLOAT32, &cp));
            CHECK(clt_expand(cn, 2, (int64_t[]){400, 3}, &en));
            CHECK(clt_expand(cp, 2, (int64_t[]){400, 3}, &ep));
            clt_generator *g = NULL;
            CHECK(clt_generator_new(5, &g));
            CHECK(clt_binomial(g, en, ep, &x[k]));
            clt_generator_free(g);
            clt_tensor *all[] = {tn, tp, cn, cp, en, ep};
            for (size_t i = 0; i < 6; i++)
                clt_tensor_free(all[i]);
        }
        double *h0 = read_as_f64(x[0]), *h1 = read_as_f64(x[1]);
        for (int i = 0; i < 1200; i++)
            cr_assert(h0[i] == h1[i], "draw %d: %.17g vs %.17g", i, h0[i], h1[i]);
        free(h0);
        free(h1);
        clt_tensor_free(x[0]);
        clt_tensor_free(x[1]);
    }
}

Test(distributions3, multinomial_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double pr[6] = {1, 2, 5, 0.5, 0.25, 0.25}; /* normalised to [1/8, 2/8, 5/8] */
    const double v[6] = {1, 0, 3, 0, 2, 2};
    const int64_t s23[2] = {2, 3};
    clt_tensor *tp = f64(dev, 2, s23, pr), *tv = f64(dev, 2, s23, v), *t;
    clt_distribution *d = NULL;
    CHECK(clt_multinomial_dist(4, tp, NULL, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "Multinomial");
    cr_assert_eq(clt_distribution_event_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_shape(d)[0], 3);
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    double q[6], lp[2], mean[6], var[6], ent[2];
    for (int r = 0; r < 2; r++) {
        double s = pr[3 * r] + pr[3 * r + 1] + pr[3 * r + 2];
        lp[r] = lgamma(5);
        for (int c = 0; c < 3; c++) {
            q[3 * r + c] = pr[3 * r + c] / s;
            lp[r] += v[3 * r + c] * log(q[3 * r + c]) - lgamma(v[3 * r + c] + 1);
            mean[3 * r + c] = 4 * q[3 * r + c];
            var[3 * r + c] = 4 * q[3 * r + c] * (1 - q[3 * r + c]);
        }
        /* -sum over every count vector of 4 of p log p */
        double h = 0;
        for (int a = 0; a <= 4; a++)
            for (int b = 0; a + b <= 4; b++) {
                int c = 4 - a - b;
                double l = lgamma(5) - lgamma(a + 1) - lgamma(b + 1) - lgamma(c + 1) +
                           a * log(q[3 * r]) + b * log(q[3 * r + 1]) + c * log(q[3 * r + 2]);
                h -= exp(l) * l;
            }
        ent[r] = h;
    }
    CHECK(clt_distribution_log_prob(d, tv, &t));
    expect_values(t, lp, 2, 1e-11, 1e-12, "Multinomial log_prob");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, mean, 6, 1e-12, 1e-15, "Multinomial mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 6, 1e-12, 1e-15, "Multinomial variance");
    /* torch's entropy rounds lgamma(n + 1) to float32 */
    CHECK(clt_distribution_entropy(d, &t));
    expect_values(t, ent, 2, 1e-7, 1e-7, "Multinomial entropy");
    /* samples: counts summing to 4, means 4 q */
    clt_generator *g = NULL;
    clt_tensor *x = NULL;
    CHECK(clt_generator_new(3, &g));
    const size_t m = 20000;
    CHECK(clt_distribution_sample(d, g, 1, (int64_t[]){(int64_t)m}, &x));
    assert_shape(x, 3, (int64_t[]){(int64_t)m, 2, 3});
    double *h = read_as_f64(x);
    for (size_t i = 0; i < m * 2; i++)
        cr_assert(h[3 * i] + h[3 * i + 1] + h[3 * i + 2] == 4, "sample %zu sums to %g", i,
                  h[3 * i] + h[3 * i + 1] + h[3 * i + 2]);
    for (size_t c = 0; c < 6; c++)
        check_draws(h, m, 6, c, mean[c], var[c],
                    var[c] * (1 + 3 * 2 * q[c] * (1 - q[c])) /* Binomial(4, q)'s m4 */,
                    "Multinomial");
    free(h);
    clt_tensor_free(x);
    clt_generator_free(g);
    /* a value whose sum exceeds total_count, or negative */
    const double over[6] = {2, 2, 1, 0, 0, 0};
    clt_tensor *to = f64(dev, 2, s23, over);
    assert_error(clt_distribution_log_prob(d, to, &t), CLT_ERR_INVALID_ARGUMENT,
                 "(Multinomial(upper_bound=4)) of the distribution Multinomial");
    clt_distribution_free(d);
    d = (clt_distribution *)1;
    assert_error(clt_multinomial_dist(-1, tp, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "total_count must be non-negative");
    cr_assert_null(d);
    clt_tensor_free(to);
    clt_tensor_free(tp);
    clt_tensor_free(tv);
}

Test(distributions3, continuous_bernoulli_against_numerical_integrals)
{
    clt_device *dev = get_device("cpu");
    /* 0.4995 and 0.5 in torch's Taylor region */
    const double l[6] = {0.05, 0.3, 0.4995, 0.5, 0.72, 0.97}, x[6] = {0.1, 0.9, 0.5, 0.3, 0, 1};
    const int64_t s6[1] = {6};
    clt_tensor *tl = f64(dev, 1, s6, l), *tx = f64(dev, 1, s6, x), *t;
    clt_distribution *d = NULL;
    CHECK(clt_continuous_bernoulli_dist(tl, NULL, 1, &d));
    cr_assert_eq(clt_distribution_has_rsample(d), 1);
    double lp[6], mean[6], var[6], ent[6], cdf[6];
    for (int i = 0; i < 6; i++) {
        const double c[1] = {l[i]};
        lp[i] = cb_lp(x[i], l[i]);
        mean[i] = simpson(cb_x_pdf, c, 0, 1, 2000);
        var[i] = simpson(cb_x2_pdf, c, 0, 1, 2000) - mean[i] * mean[i];
        ent[i] = simpson(cb_h, c, 0, 1, 2000);
        cdf[i] = x[i] == 0 ? 0 : simpson(cb_pdf_x, c, 0, x[i], 2000);
    }
    CHECK(clt_distribution_log_prob(d, tx, &t));
    expect_values(t, lp, 6, 1e-9, 1e-12, "ContinuousBernoulli log_prob");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, mean, 6, 1e-8, 1e-10, "ContinuousBernoulli mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 6, 1e-7, 1e-10, "ContinuousBernoulli variance");
    CHECK(clt_distribution_entropy(d, &t));
    expect_values(t, ent, 6, 1e-8, 1e-10, "ContinuousBernoulli entropy");
    /* torch's cdf in its unstable region is the value itself (within
     * |lambda - 1/2| of the true one) */
    CHECK(clt_distribution_cdf(d, tx, &t));
    double *hc = read_as_f64(t);
    for (int i = 0; i < 6; i++)
        cr_assert(close_enough(hc[i], cdf[i], 0, fabs(l[i] - 0.5) < 0.001 ? 1e-3 : 1e-10),
                  "ContinuousBernoulli cdf[%d]: got %.15g, want %.15g", i, hc[i], cdf[i]);
    free(hc);
    clt_tensor_free(t);
    /* icdf inverts cdf */
    const double u[6] = {0.01, 0.25, 0.5, 0.6, 0.8, 0.99};
    clt_tensor *tu = f64(dev, 1, s6, u), *q = NULL;
    CHECK(clt_distribution_icdf(d, tu, &q));
    CHECK(clt_distribution_cdf(d, q, &t));
    expect_values(t, u, 6, 1e-10, 1e-12, "ContinuousBernoulli cdf(icdf(u))");
    clt_tensor_free(q);
    /* samples: the means */
    clt_generator *g = NULL;
    clt_tensor *s = NULL;
    CHECK(clt_generator_new(9, &g));
    const size_t m = 20000;
    CHECK(clt_distribution_rsample(d, g, 1, (int64_t[]){(int64_t)m}, &s));
    double *h = read_as_f64(s);
    for (size_t c = 0; c < 6; c++)
        check_draws(h, m, 6, c, mean[c], var[c], var[c] /* x in [0, 1]: m4 <= var */,
                    "ContinuousBernoulli");
    free(h);
    clt_tensor_free(s);
    clt_generator_free(g);
    /* a value outside [0, 1], probs outside [0, 1] */
    const double out[6] = {0, 0, 0, 1.5, 0, 0};
    clt_tensor *to = f64(dev, 1, s6, out);
    assert_error(clt_distribution_log_prob(d, to, &t), CLT_ERR_INVALID_ARGUMENT,
                 "within the support (Interval(lower_bound=0.0, upper_bound=1.0)) of the "
                 "distribution ContinuousBernoulli");
    clt_distribution_free(d);
    assert_error(clt_continuous_bernoulli_dist(to, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter probs (Tensor of shape [6]) of distribution "
                 "ContinuousBernoulli");
    clt_tensor_free(to);
    clt_tensor_free(tu);
    clt_tensor_free(tl);
    clt_tensor_free(tx);
}

Test(distributions3, von_mises_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double loc[3] = {0.5, -2.0, 3.0}, k[3] = {0.2, 2.0, 30.0}, x[3] = {1.0, 2.5, -3.0};
    clt_tensor *tl = f64(dev, 1, s3, loc), *tk = f64(dev, 1, s3, k), *tx = f64(dev, 1, s3, x), *t;
    clt_distribution *d = NULL;
    CHECK(clt_von_mises_dist(tl, tk, 1, &d));
    cr_assert_eq(clt_distribution_has_rsample(d), 0);
    /* I0 and I1 by their power series: sum (k/2)^(2j) / (j!)^2, (k/2) sum (k/2)^(2j) /
     * (j! (j + 1)!); torch's polynomial approximations are within 1e-6 of them */
    double lp[3], var[3];
    for (int i = 0; i < 3; i++) {
        double i0 = 0, i1 = 0, term = 1, h = k[i] / 2;
        for (int j = 0; j < 200; j++) {
            i0 += term;
            i1 += term * h / (j + 1);
            term *= h * h / ((j + 1.0) * (j + 1.0));
        }
        lp[i] = k[i] * cos(x[i] - loc[i]) - log(2 * PI) - log(i0);
        var[i] = 1 - i1 / i0;
    }
    CHECK(clt_distribution_log_prob(d, tx, &t));
    expect_values(t, lp, 3, 1e-6, 1e-6, "VonMises log_prob");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 3, 1e-5, 1e-6, "VonMises variance");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, loc, 3, 0, 0, "VonMises mean");
    assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "VonMises does not implement entropy");
    /* samples in [-pi, pi) with E cos(x - loc) = I1 / I0 */
    clt_generator *g = NULL;
    clt_tensor *s = NULL;
    CHECK(clt_generator_new(12, &g));
    const size_t m = 20000;
    CHECK(clt_distribution_sample(d, g, 1, (int64_t[]){(int64_t)m}, &s));
    double *h = read_as_f64(s);
    for (size_t c = 0; c < 3; c++) {
        double sc = 0;
        for (size_t i = 0; i < m; i++) {
            double v = h[3 * i + c];
            cr_assert(v >= -PI && v < PI, "VonMises draw %g", v);
            sc += cos(v - loc[c]);
        }
        /* cos is bounded by 1: 5 sigma of the mean is at most 5 / sqrt(m) */
        cr_assert(fabs(sc / m - (1 - var[c])) <= 5 / sqrt((double)m),
                  "VonMises[%zu] E cos %g, want %g", c, sc / m, 1 - var[c]);
    }
    free(h);
    clt_tensor_free(s);
    clt_generator_free(g);
    clt_distribution_free(d);
    d = (clt_distribution *)1;
    assert_error(clt_von_mises_dist(tl, tx, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter concentration (Tensor of shape [3]) of distribution VonMises "
                 "to satisfy the constraint GreaterThan(lower_bound=0.0)");
    cr_assert_null(d);
    clt_tensor_free(tl);
    clt_tensor_free(tk);
    clt_tensor_free(tx);
}

Test(distributions3, relaxed_one_hot_categorical_against_host_formula)
{
    clt_device *dev = get_device("cpu");
    /* two batch elements of K = 3, one temperature each */
    const double lg[6] = {0.2, -1.0, 1.5, 0.0, 0.3, -0.7}, temp[2] = {0.5, 2.0};
    const double v[6] = {0.2, 0.3, 0.5, 0.6, 0.1, 0.3};
    const int64_t s23[2] = {2, 3}, s2[1] = {2};
    clt_tensor *tl = f64(dev, 2, s23, lg), *tt = f64(dev, 1, s2, temp), *tv = f64(dev, 2, s23, v);
    clt_tensor *t = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_relaxed_one_hot_categorical_dist(tt, NULL, tl, 1, &d));
    cr_assert_eq(clt_distribution_has_rsample(d), 1);
    cr_assert_eq(clt_distribution_event_shape(d)[0], 3);
    /* the Gumbel-softmax density (Maddison et al.):
     * (K - 1)! t^(K - 1) prod(p_i v_i^(-t - 1)) / (sum p_i v_i^(-t))^K */
    double want[2];
    for (int r = 0; r < 2; r++) {
        double z = 0, s = 0, lp = lgamma(3) + 2 * log(temp[r]);
        for (int i = 0; i < 3; i++)
            z += exp(lg[3 * r + i]);
        for (int i = 0; i < 3; i++) {
            double p = exp(lg[3 * r + i]) / z;
            lp += log(p) - (temp[r] + 1) * log(v[3 * r + i]);
            s += p * pow(v[3 * r + i], -temp[r]);
        }
        want[r] = lp - 3 * log(s);
    }
    CHECK(clt_distribution_log_prob(d, tv, &t));
    expect_values(t, want, 2, 1e-10, 1e-12, "RelaxedOneHotCategorical log_prob");
    /* draws lie on the simplex; a low temperature puts them near the corners */
    clt_generator *g = NULL;
    clt_tensor *x = NULL;
    CHECK(clt_generator_new(21, &g));
    CHECK(clt_distribution_rsample(d, g, 1, (int64_t[]){500}, &x));
    assert_shape(x, 3, (int64_t[]){500, 2, 3});
    double *h = read_as_f64(x);
    for (int i = 0; i < 1000; i++) {
        double s = h[3 * i] + h[3 * i + 1] + h[3 * i + 2];
        cr_assert(fabs(s - 1) < 1e-12 && h[3 * i] > 0 && h[3 * i + 1] > 0 && h[3 * i + 2] > 0,
                  "draw %d sums to %.17g", i, s);
    }
    free(h);
    clt_tensor_free(x);
    clt_generator_free(g);
    assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "RelaxedOneHotCategorical does not implement entropy");
    const double off[6] = {0.2, 0.3, 0.6, 0.6, 0.1, 0.3};
    clt_tensor *to = f64(dev, 2, s23, off);
    assert_error(clt_distribution_log_prob(d, to, &t), CLT_ERR_INVALID_ARGUMENT, "Simplex()");
    clt_distribution_free(d);
    const double t3[3] = {1, 1, 1};
    clt_tensor *tt3 = f64(dev, 1, s3, t3);
    d = (clt_distribution *)1;
    assert_error(clt_relaxed_one_hot_categorical_dist(tt3, NULL, tl, 1, &d),
                 CLT_ERR_SHAPE_MISMATCH, "broadcast");
    cr_assert_null(d);
    clt_tensor *all[] = {tl, tt, tv, to, tt3};
    for (int i = 0; i < 5; i++)
        clt_tensor_free(all[i]);
}

/* ---- KL ------------------------------------------------------------------------------- */

typedef double (*lpdf)(double x, const double *par);
static double lp_expo(double x, const double *a) { return log(a[0]) - a[0] * x; }
static double lp_gamma(double x, const double *a)
{
    return a[0] * log(a[1]) + (a[0] - 1) * log(x) - a[1] * x - lgamma(a[0]);
}
static double lp_normal(double x, const double *a)
{
    double z = (x - a[0]) / a[1];
    return -0.5 * z * z - log(a[1]) - 0.5 * log(2 * PI);
}
static double lp_gumbel(double x, const double *a)
{
    double z = (x - a[0]) / a[1];
    return -log(a[1]) - z - exp(-z);
}
static double lp_beta(double x, const double *a)
{
    return (a[0] - 1) * log(x) + (a[1] - 1) * log1p(-x) - lgamma(a[0]) - lgamma(a[1]) +
           lgamma(a[0] + a[1]);
}

/* The integrand p log(p / q) with the two densities and their parameters
 * packed in ctx: lp index, lq index, p's parameters (2), q's (2). */
static const lpdf fams[] = {lp_expo, lp_gamma, lp_normal, lp_gumbel, lp_beta};
static double kl_integrand(double x, const double *c)
{
    double a = fams[(int)c[0]](x, c + 2), b = fams[(int)c[1]](x, c + 4);
    return exp(a) * (a - b);
}

/* The same in t = sqrt(x) (a density's log singularity at 0 made smooth). */
static double kl_integrand_sq(double t, const double *c)
{
    return 2 * t * kl_integrand(t * t, c);
}

static clt_status make_fam(int f, const clt_tensor *a, const clt_tensor *b, clt_distribution **d)
{
    switch (f) {
    case 0: return clt_exponential_dist(a, 1, d);
    case 1: return clt_gamma_dist(a, b, 1, d);
    case 2: return clt_normal_dist(a, b, 1, d);
    case 3: return clt_gumbel_dist(a, b, 1, d);
    default: return clt_beta_dist(a, b, 1, d);
    }
}

Test(distributions3, kl_divergence_against_numerical_integrals)
{
    clt_device *dev = get_device("cpu");
    /* p family, p's parameters, q family, q's, the integration range */
    const struct {
        int fp;
        double pa, pb;
        int fq;
        double qa, qb, lo, hi;
    } pairs[] = {
        {0, 1.5, 0, 1, 2.5, 1.2, 1e-12, 40},     /* Exponential || Gamma */
        {0, 0.8, 0, 3, 0.3, 1.5, 0, 80},         /* Exponential || Gumbel */
        {1, 2.5, 1.5, 0, 0.7, 0, 1e-12, 60},     /* Gamma || Exponential */
        {1, 3.0, 2.0, 2, 1.0, 0.8, 1e-12, 40},   /* Gamma || Normal */
        {3, 0.5, 1.2, 2, -0.3, 2.0, -30, 60},    /* Gumbel || Normal */
        {2, 0.2, 0.7, 3, 0.5, 1.5, -20, 20},     /* Normal || Gumbel */
        {4, 2.0, 3.5, 2, 0.4, 0.6, 1e-12, 1 - 1e-12}, /* Beta || Normal */
        {4, 2.5, 1.5, 1, 2.0, 3.0, 1e-12, 1 - 1e-12}, /* Beta || Gamma */
        {4, 1.5, 2.5, 0, 1.7, 0, 1e-12, 1 - 1e-12}, /* Beta || Exponential */
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        const double c[6] = {pairs[i].fp, pairs[i].fq, pairs[i].pa, pairs[i].pb,
                             pairs[i].qa, pairs[i].qb};
        double want = pairs[i].lo >= 0 ? simpson(kl_integrand_sq, c, sqrt(pairs[i].lo),
                                                 sqrt(pairs[i].hi), 400000)
                                         : simpson(kl_integrand, c, pairs[i].lo, pairs[i].hi,
                                                   400000);
        clt_tensor *ta = f64(dev, 0, NULL, &pairs[i].pa), *tb = f64(dev, 0, NULL, &pairs[i].pb);
        clt_tensor *tc = f64(dev, 0, NULL, &pairs[i].qa), *td = f64(dev, 0, NULL, &pairs[i].qb);
        clt_distribution *p = NULL, *q = NULL;
        clt_tensor *t = NULL;
        CHECK(make_fam(pairs[i].fp, ta, tb, &p));
        CHECK(make_fam(pairs[i].fq, tc, td, &q));
        CHECK(clt_kl_divergence(p, q, &t));
        char what[64];
        snprintf(what, sizeof what, "KL(%s || %s)", clt_distribution_name(p),
                 clt_distribution_name(q));
        expect_values(t, &want, 1, 1e-6, 1e-8, what);
        clt_distribution_free(p);
        clt_distribution_free(q);
        clt_tensor *all[] = {ta, tb, tc, td};
        for (int k = 0; k < 4; k++)
            clt_tensor_free(all[k]);
    }
    /* ContinuousBernoulli pairs, and torch's infinite ones */
    const double l1[3] = {0.2, 0.5, 0.9}, l2[3] = {0.6, 0.3, 0.4999};
    clt_tensor *t1 = f64(dev, 1, s3, l1), *t2 = f64(dev, 1, s3, l2), *t = NULL;
    clt_distribution *p = NULL, *q = NULL;
    CHECK(clt_continuous_bernoulli_dist(t1, NULL, 1, &p));
    CHECK(clt_continuous_bernoulli_dist(t2, NULL, 1, &q));
    double want[3];
    for (int i = 0; i < 3; i++)
        want[i] = simpson(cb_kl, (const double[]){l1[i], l2[i]}, 0, 1, 2000);
    CHECK(clt_kl_divergence(p, q, &t));
    expect_values(t, want, 3, 1e-8, 1e-10, "KL(ContinuousBernoulli || ContinuousBernoulli)");
    clt_distribution *g = NULL;
    CHECK(clt_gamma_dist(t1, t2, 1, &g));
    CHECK(clt_kl_divergence(g, p, &t));
    const double inf3[3] = {INFINITY, INFINITY, INFINITY};
    expect_values(t, inf3, 3, 0, 0, "KL(Gamma || ContinuousBernoulli)");
    clt_distribution_free(g);
    clt_distribution_free(p);
    clt_distribution_free(q);
    /* Binomial pairs: the sum over the support; inf where p's count is larger; refused
     * where q's is */
    const double n1[3] = {4, 6, 9}, n2[3] = {4, 6, 8}, pp[3] = {0.3, 0.5, 0.8};
    clt_tensor *tn1 = f64(dev, 1, s3, n1), *tn2 = f64(dev, 1, s3, n2), *tp = f64(dev, 1, s3, pp);
    CHECK(clt_binomial_dist(tn1, tp, NULL, 1, &p));
    CHECK(clt_binomial_dist(tn2, t1, NULL, 1, &q));
    for (int i = 0; i < 3; i++) {
        double s = 0;
        for (int k = 0; k <= n1[i]; k++) {
            double a = binom_lp(n1[i], pp[i], k);
            s += exp(a) * (a - binom_lp(n1[i], l1[i], k));
        }
        want[i] = n1[i] > n2[i] ? INFINITY : s;
    }
    CHECK(clt_kl_divergence(p, q, &t));
    expect_values(t, want, 3, 1e-10, 1e-12, "KL(Binomial || Binomial)");
    assert_error(clt_kl_divergence(q, p, &t), CLT_ERR_INVALID_ARGUMENT,
                 "KL between Binomials where q.total_count > p.total_count is not implemented");
    cr_assert_null(t);
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor *all[] = {t1, t2, tn1, tn2, tp};
    for (int k = 0; k < 5; k++)
        clt_tensor_free(all[k]);
}

/* ---- gradients ------------------------------------------------------------------------ */

typedef enum gcase {
    GC_BINOM_LP_PROBS,
    GC_BINOM_LP_LOGITS,
    GC_MULTI_LP,
    GC_CB_LP,
    GC_CB_ENT,
    GC_CB_RS,
    GC_CB_CDF,
    GC_KL_CB,
    GC_KL_GAMMA_NORMAL,
    GC_KL_BINOM,
    GC_VM_LP,
    GC_ROH_LP,
    GC_ROH_RS
} gcase;

static clt_status gc_dist(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    gcase c = *(const gcase *)ctx;
    clt_distribution *d = NULL, *q = NULL;
    clt_generator *g = NULL;
    clt_status st;
    switch (c) {
    case GC_BINOM_LP_PROBS:
    case GC_KL_BINOM: st = clt_binomial_dist(in[0], in[1], NULL, 1, &d); break;
    case GC_BINOM_LP_LOGITS: st = clt_binomial_dist(in[0], NULL, in[1], 1, &d); break;
    case GC_MULTI_LP: st = clt_multinomial_dist(5, NULL, in[0], 1, &d); break;
    case GC_KL_GAMMA_NORMAL: st = clt_gamma_dist(in[0], in[1], 1, &d); break;
    case GC_VM_LP: st = clt_von_mises_dist(in[0], in[1], 1, &d); break;
    case GC_ROH_LP:
    case GC_ROH_RS: st = clt_relaxed_one_hot_categorical_dist(in[1], NULL, in[0], 1, &d); break;
    default: st = clt_continuous_bernoulli_dist(in[0], NULL, 1, &d); break;
    }
    if (st != CLT_OK)
        return st;
    switch (c) {
    case GC_BINOM_LP_PROBS:
    case GC_BINOM_LP_LOGITS:
    case GC_ROH_LP:
    case GC_VM_LP: st = clt_distribution_log_prob(d, in[2], out); break;
    case GC_MULTI_LP:
    case GC_CB_LP: st = clt_distribution_log_prob(d, in[1], out); break;
    case GC_CB_CDF: st = clt_distribution_cdf(d, in[1], out); break;
    case GC_CB_ENT: st = clt_distribution_entropy(d, out); break;
    case GC_CB_RS:
    case GC_ROH_RS:
        st = clt_generator_new(17, &g);
        if (st == CLT_OK)
            st = clt_distribution_rsample(d, g, 1, (int64_t[]){4}, out);
        break;
    case GC_KL_CB:
        st = clt_continuous_bernoulli_dist(in[1], NULL, 1, &q);
        if (st == CLT_OK)
            st = clt_kl_divergence(d, q, out);
        break;
    case GC_KL_GAMMA_NORMAL:
        st = clt_normal_dist(in[2], in[3], 1, &q);
        if (st == CLT_OK)
            st = clt_kl_divergence(d, q, out);
        break;
    case GC_KL_BINOM:
        st = clt_binomial_dist(in[0], in[2], NULL, 1, &q);
        if (st == CLT_OK)
            st = clt_kl_divergence(d, q, out);
        break;
    }
    clt_generator_free(g);
    clt_distribution_free(q);
    clt_distribution_free(d);
    return st;
}

Test(distributions3, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double n[3] = {3, 7, 12}, p[3] = {0.3, 0.65, 0.1}, k[3] = {1, 7, 0};
    const double lg[3] = {-0.7, 0.4, 1.9}, a[3] = {0.7, 2.0, 4.5}, b[3] = {1.3, 0.6, 2.5};
    const double lam[3] = {0.15, 0.5, 0.8}, lam2[3] = {0.6, 0.35, 0.45}, x[3] = {0.2, 0.7, 0.95};
    const double lg6[6] = {0.3, -1.0, 0.5, 2.0, 0.1, -0.4}, v6[6] = {1, 2, 2, 0, 5, 0};
    const double loc[3] = {0.3, -0.8, 1.2};
    struct {
        gcase c;
        int n;
        gc_in in[4];
    } cases[] = {
        {GC_BINOM_LP_PROBS, 3, {{1, {3}, n, 0}, {1, {3}, p, 1}, {1, {3}, k, 0}}},
        {GC_BINOM_LP_LOGITS, 3, {{1, {3}, n, 0}, {1, {3}, lg, 1}, {1, {3}, k, 0}}},
        {GC_MULTI_LP, 2, {{2, {2, 3}, lg6, 1}, {2, {2, 3}, v6, 0}}},
        {GC_CB_LP, 2, {{1, {3}, lam, 1}, {1, {3}, x, 0}}},
        {GC_CB_ENT, 1, {{1, {3}, lam, 1}}},
        {GC_CB_RS, 1, {{1, {3}, lam2, 1}}},
        {GC_CB_CDF, 2, {{1, {3}, lam2, 1}, {1, {3}, x, 1}}},
        {GC_KL_CB, 2, {{1, {3}, lam, 1}, {1, {3}, lam2, 1}}},
        {GC_KL_GAMMA_NORMAL, 4, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, loc, 1}, {1, {3}, a, 1}}},
        {GC_KL_BINOM, 3, {{1, {3}, n, 0}, {1, {3}, p, 1}, {1, {3}, lam2, 1}}},
        {GC_ROH_LP, 3, {{2, {2, 3}, lg6, 1}, {1, {2}, (const double[]){0.5, 2.0}, 1},
                        {2, {2, 3}, (const double[]){0.2, 0.3, 0.5, 0.6, 0.1, 0.3}, 0}}},
        {GC_ROH_RS, 2, {{2, {2, 3}, lg6, 1}, {1, {2}, (const double[]){0.5, 2.0}, 1}}},
        {GC_VM_LP, 3, {{1, {3}, loc, 1}, {1, {3}, (const double[]){0.4, 3.0, 7.5}, 1}, {1, {3}, x, 1}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck_tol(dev, gc_dist, &cases[i].c, cases[i].n, cases[i].in, 1e-6, 1e-5, 1e-7);
}
