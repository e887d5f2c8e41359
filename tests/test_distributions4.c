/* test_distributions4.c: MixtureSameFamily and the cross-family KL pairs with
 * Uniform, Pareto or Bernoulli on one side: KLs against numerical integrals
 * of host densities in double (Simpson's rule), with torch's infinite
 * cases; the mixture's log_prob, moments and cdf against host formulas,
 * its sample moments from a fixed seed, its shapes and refusals;
 * gradients by float64 finite differences. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"

#define PI 3.14159265358979323846

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

/* ---- host densities ------------------------------------------------------ */

enum { F_UNIFORM, F_BETA, F_GAMMA, F_GUMBEL, F_PARETO, F_NORMAL, F_CB };

static double cb_logc(double l)
{
    return fabs(l - 0.5) < 1e-12 ? log(2.0) : log(2 * atanh(1 - 2 * l) / (1 - 2 * l));
}

/* log density of family f with parameters a, b at x (-inf outside the support) */
static double host_lp(int f, double a, double b, double x)
{
    switch (f) {
    case F_UNIFORM: return x >= a && x <= b ? -log(b - a) : -INFINITY;
    case F_BETA:
        return (a - 1) * log(x) + (b - 1) * log1p(-x) - (lgamma(a) + lgamma(b) - lgamma(a + b));
    case F_GAMMA: return a * log(b) + (a - 1) * log(x) - b * x - lgamma(a);
    case F_GUMBEL: {
        double z = (x - a) / b;
        return -log(b) - z - exp(-z);
    }
    case F_PARETO: return x >= a ? log(b) + b * log(a) - (b + 1) * log(x) : -INFINITY;
    case F_NORMAL: return -0.5 * ((x - a) / b) * ((x - a) / b) - log(b) - 0.5 * log(2 * PI);
    default: return cb_logc(a) + x * log(a) + (1 - x) * log1p(-a);
    }
}

/* ctx: fp, fq, pa, pb, qa, qb */
static double kl_at(double x, const double *c)
{
    double lp = host_lp((int)c[0], c[2], c[3], x);
    return exp(lp) * (lp - host_lp((int)c[1], c[4], c[5], x));
}

/* Simpson's rule of f over [a, b] with m (even) intervals. */
static double simpson(double (*f)(double, const double *), const double *ctx, double a, double b,
                      int m)
{
    double h = (b - a) / m, s = f(a, ctx) + f(b, ctx);
    for (int i = 1; i < m; i++)
        s += f(a + i * h, ctx) * (i % 2 ? 4 : 2);
    return s * h / 3;
}

/* Pareto p: x = scale u^(-1/alpha) with u = s^2, so E_p[g] = int_0^1 2 s g(x) ds. */
static double pareto_kl_at(double s, const double *c)
{
    if (s == 0)
        return 0;
    double x = c[2] * pow(s * s, -1 / c[3]);
    return 2 * s * (host_lp(F_PARETO, c[2], c[3], x) - host_lp((int)c[1], c[4], c[5], x));
}

/* p on (0, inf): x = t^2. */
static double kl_sq_at(double t, const double *c)
{
    return 2 * t * kl_at(t * t, c);
}

static clt_status make_fam(int f, const clt_tensor *a, const clt_tensor *b, clt_distribution **d)
{
    switch (f) {
    case F_UNIFORM: return clt_uniform_dist(a, b, 1, d);
    case F_BETA: return clt_beta_dist(a, b, 1, d);
    case F_GAMMA: return clt_gamma_dist(a, b, 1, d);
    case F_GUMBEL: return clt_gumbel_dist(a, b, 1, d);
    case F_PARETO: return clt_pareto_dist(a, b, 1, d);
    case F_NORMAL: return clt_normal_dist(a, b, 1, d);
    default: return clt_continuous_bernoulli_dist(a, NULL, 1, d);
    }
}

static double kl_of(int fp, double pa, double pb, int fq, double qa, double qb)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *ta = f64(dev, 0, NULL, &pa), *tb = f64(dev, 0, NULL, &pb);
    clt_tensor *tc = f64(dev, 0, NULL, &qa), *td = f64(dev, 0, NULL, &qb), *t = NULL;
    clt_distribution *p = NULL, *q = NULL;
    CHECK(make_fam(fp, ta, tb, &p));
    CHECK(make_fam(fq, tc, td, &q));
    CHECK(clt_kl_divergence(p, q, &t));
    double v = NAN;
    CHECK(clt_tensor_item(t, &v));
    clt_tensor_free(t);
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor *all[] = {ta, tb, tc, td};
    for (int k = 0; k < 4; k++)
        clt_tensor_free(all[k]);
    return v;
}

Test(distributions4, kl_pairs_against_numerical_integrals)
{
    const struct {
        int fp;
        double pa, pb;
        int fq;
        double qa, qb;
    } pairs[] = {
        {F_UNIFORM, 0.2, 0.7, F_BETA, 2.5, 1.5},
        {F_UNIFORM, 0.1, 0.95, F_CB, 0.3, 0},
        {F_UNIFORM, 0.1, 0.95, F_CB, 0.5, 0},
        {F_UNIFORM, 0.5, 3.0, F_GAMMA, 2.0, 1.3},
        {F_UNIFORM, -1.0, 2.5, F_GUMBEL, 0.4, 1.7},
        {F_UNIFORM, 1.5, 4.0, F_PARETO, 1.2, 2.5},
        {F_BETA, 2.0, 3.5, F_UNIFORM, -0.5, 1.5},
        {F_BETA, 2.5, 1.5, F_CB, 0.7, 0},
        {F_CB, 0.8, 0, F_UNIFORM, -0.2, 1.3},
        {F_CB, 0.5, 0, F_UNIFORM, -1.0, 1.1},
        {F_GAMMA, 2.5, 1.5, F_GUMBEL, 1.0, 0.8},
        {F_PARETO, 1.5, 3.0, F_GAMMA, 2.0, 1.1},
        {F_PARETO, 1.0, 4.5, F_NORMAL, 0.5, 2.0},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        const double c[6] = {pairs[i].fp, pairs[i].fq, pairs[i].pa, pairs[i].pb,
                             pairs[i].qa, pairs[i].qb};
        double want;
        switch (pairs[i].fp) {
        case F_UNIFORM: want = simpson(kl_at, c, pairs[i].pa, pairs[i].pb, 20000); break;
        case F_BETA:
        case F_CB: want = simpson(kl_at, c, 1e-12, 1 - 1e-12, 200000); break;
        case F_GAMMA: want = simpson(kl_sq_at, c, 1e-6, 9, 400000); break;
        default: want = simpson(pareto_kl_at, c, 0, 1, 400000); break;
        }
        double got = kl_of(pairs[i].fp, pairs[i].pa, pairs[i].pb, pairs[i].fq, pairs[i].qa,
                           pairs[i].qb);
        cr_assert(close_enough(got, want, 1e-6, 1e-8), "pair %zu: got %.12g, want %.12g", i, got,
                  want);
    }
}

Test(distributions4, kl_pairs_infinite_where_torch_gives_inf)
{
    /* p's support leaves q's: inf (torch's masks, their ends included where
     * torch includes them) */
    const struct {
        int fp;
        double pa, pb;
        int fq;
        double qa, qb;
    } inf_pairs[] = {
        {F_UNIFORM, -0.1, 0.5, F_BETA, 2, 2},     {F_UNIFORM, 0.2, 1.1, F_BETA, 2, 2},
        {F_UNIFORM, 0.0, 0.5, F_CB, 0.3, 0},      {F_UNIFORM, 0.2, 1.0, F_CB, 0.3, 0},
        {F_UNIFORM, -0.5, 2.0, F_GAMMA, 2, 1},    {F_UNIFORM, 0.9, 2.0, F_PARETO, 1, 2},
        {F_BETA, 2, 2, F_UNIFORM, 0.1, 1.5},      {F_BETA, 2, 2, F_UNIFORM, -1, 0.9},
        {F_CB, 0.3, 0, F_UNIFORM, 0.0, 1.5},      {F_CB, 0.3, 0, F_UNIFORM, -1, 1.0},
        {F_PARETO, 1, 0.9, F_GAMMA, 2, 1},        {F_PARETO, 1, 2.0, F_NORMAL, 0, 1},
    };
    for (size_t i = 0; i < sizeof inf_pairs / sizeof *inf_pairs; i++) {
        double got = kl_of(inf_pairs[i].fp, inf_pairs[i].pa, inf_pairs[i].pb, inf_pairs[i].fq,
                           inf_pairs[i].qa, inf_pairs[i].qb);
        cr_assert(isinf(got) && got > 0, "pair %zu: got %.12g, want inf", i, got);
    }
    /* the ends that stay finite: Uniform [0, 1] against Beta, Beta against
     * Uniform [0, 1] */
    cr_assert(isfinite(kl_of(F_UNIFORM, 0.0 + 1e-9, 1.0 - 1e-9, F_BETA, 2, 2)));
    cr_assert(isfinite(kl_of(F_BETA, 2, 2, F_UNIFORM, 0, 1)));
}

Test(distributions4, kl_bernoulli_poisson_and_shapes)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3}, s23[2] = {2, 3};
    const double pr[3] = {0.0, 0.35, 1.0}, rate[6] = {0.5, 1.0, 2.0, 3.0, 0.2, 1.5};
    clt_tensor *tp = f64(dev, 1, s3, pr), *tr = f64(dev, 2, s23, rate), *t = NULL;
    clt_distribution *p = NULL, *q = NULL;
    CHECK(clt_bernoulli_dist(tp, NULL, 1, &p));
    CHECK(clt_poisson_dist(tr, 1, &q));
    CHECK(clt_kl_divergence(p, q, &t));
    assert_shape(t, 2, s23);
    double want[6];
    for (int i = 0; i < 6; i++) {
        double a = pr[i % 3], l = rate[i], k = 0;
        /* sum over {0, 1} of p(k) log(p(k) / q(k)), 0 log 0 = 0 */
        if (a < 1)
            k += (1 - a) * (log1p(-a) + l);
        if (a > 0)
            k += a * (log(a) - log(l) + l);
        want[i] = k;
    }
    expect_values(t, want, 6, 1e-6, 1e-9, "KL(Bernoulli || Poisson)");
    clt_distribution_free(p);
    clt_distribution_free(q);
    /* Pareto || Gamma broadcasts p's batch [3] against q's [2, 3] */
    const double sc[3] = {1.0, 2.0, 0.5}, al[3] = {3.0, 0.8, 2.0}, c6[6] = {2, 1, 3, 4, 1.5, 2};
    clt_tensor *ts = f64(dev, 1, s3, sc), *ta = f64(dev, 1, s3, al), *tc = f64(dev, 2, s23, c6);
    CHECK(clt_pareto_dist(ts, ta, 1, &p));
    CHECK(clt_gamma_dist(tc, tr, 1, &q));
    CHECK(clt_kl_divergence(p, q, &t));
    assert_shape(t, 2, s23);
    double *g = read_as_f64(t);
    for (int i = 0; i < 6; i++) {
        double w = kl_of(F_PARETO, sc[i % 3], al[i % 3], F_GAMMA, c6[i], rate[i]);
        cr_assert(isinf(w) ? g[i] == w : close_enough(g[i], w, 1e-12, 1e-12), "[%d] %g vs %g",
                  i, g[i], w);
    }
    cr_assert(isinf(g[1]) && isinf(g[4]));
    free(g);
    clt_tensor_free(t);
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor *all[] = {tp, tr, ts, ta, tc};
    for (int k = 0; k < 5; k++)
        clt_tensor_free(all[k]);
}

/* ---- MixtureSameFamily ---------------------------------------------------- */

static double lse(const double *v, int n)
{
    double m = -INFINITY, s = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    for (int i = 0; i < n; i++)
        s += exp(v[i] - m);
    return m + log(s);
}

Test(distributions4, mixture_of_normals_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    /* batch [2], k = 3; one set of mixture logits for both */
    const int64_t s3[1] = {3}, s23[2] = {2, 3}, s42[2] = {4, 2}, s2[1] = {2};
    const double lg[3] = {0.3, -1.2, 0.8};
    const double loc[6] = {-1.0, 0.5, 2.0, 0.0, 3.0, -2.5}, sc[6] = {0.7, 1.3, 0.4, 2.0, 0.5, 1.1};
    const double x[8] = {0.1, -0.4, 1.9, 2.7, -3.0, 0.0, 0.6, 5.0};
    clt_tensor *tl = f64(dev, 1, s3, lg), *tm = f64(dev, 2, s23, loc), *ts = f64(dev, 2, s23, sc);
    clt_tensor *tx = f64(dev, 2, s42, x), *t = NULL;
    clt_distribution *cat = NULL, *comp = NULL, *d = NULL;
    CHECK(clt_categorical_dist(NULL, tl, 1, &cat));
    CHECK(clt_normal_dist(tm, ts, 1, &comp));
    CHECK(clt_mixture_same_family_dist(cat, comp, 1, &d));
    /* the mixture keeps its own references */
    clt_distribution_free(cat);
    clt_distribution_free(comp);
    cr_assert_str_eq(clt_distribution_name(d), "MixtureSameFamily");
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    cr_assert_eq(clt_distribution_batch_shape(d)[0], 2);
    cr_assert_eq(clt_distribution_event_ndim(d), 0);
    cr_assert_eq(clt_distribution_has_rsample(d), 0);
    double lw[3], w[3], l0 = lse(lg, 3);
    for (int k = 0; k < 3; k++) {
        lw[k] = lg[k] - l0;
        w[k] = exp(lw[k]);
    }
    double lp[8], cdf[8], mean[2], var[2];
    for (int i = 0; i < 8; i++) {
        int b = i % 2;
        double terms[3];
        cdf[i] = 0;
        for (int k = 0; k < 3; k++) {
            terms[k] = lw[k] + host_lp(F_NORMAL, loc[b * 3 + k], sc[b * 3 + k], x[i]);
            cdf[i] += w[k] * 0.5 * erfc(-(x[i] - loc[b * 3 + k]) / sc[b * 3 + k] / sqrt(2.0));
        }
        lp[i] = lse(terms, 3);
    }
    for (int b = 0; b < 2; b++) {
        mean[b] = var[b] = 0;
        for (int k = 0; k < 3; k++)
            mean[b] += w[k] * loc[b * 3 + k];
        for (int k = 0; k < 3; k++) {
            double dm = loc[b * 3 + k] - mean[b];
            var[b] += w[k] * (sc[b * 3 + k] * sc[b * 3 + k] + dm * dm);
        }
    }
    CHECK(clt_distribution_log_prob(d, tx, &t));
    assert_shape(t, 2, s42);
    expect_values(t, lp, 8, 1e-12, 1e-12, "mixture log_prob");
    CHECK(clt_distribution_cdf(d, tx, &t));
    expect_values(t, cdf, 8, 1e-12, 1e-14, "mixture cdf");
    CHECK(clt_distribution_mean(d, &t));
    assert_shape(t, 1, s2);
    expect_values(t, mean, 2, 1e-12, 1e-14, "mixture mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 2, 1e-12, 1e-14, "mixture variance");
    double sd[2] = {sqrt(var[0]), sqrt(var[1])};
    CHECK(clt_distribution_stddev(d, &t));
    expect_values(t, sd, 2, 1e-12, 1e-14, "mixture stddev");
    /* sample moments: 40000 draws of each batch element, within 5 sigma
     * of the mean and 10% of the variance */
    clt_generator *g = NULL;
    CHECK(clt_generator_new(1234, &g));
    const int64_t n = 40000;
    CHECK(clt_distribution_sample(d, g, 1, &n, &t));
    const int64_t sn2[2] = {40000, 2};
    assert_shape(t, 2, sn2);
    cr_assert_eq(clt_requires_grad(t), 0);
    double *v = read_as_f64(t);
    for (int b = 0; b < 2; b++) {
        double m = 0, s = 0;
        for (int64_t i = 0; i < n; i++)
            m += v[i * 2 + b];
        m /= (double)n;
        for (int64_t i = 0; i < n; i++)
            s += (v[i * 2 + b] - m) * (v[i * 2 + b] - m);
        s /= (double)(n - 1);
        cr_assert(fabs(m - mean[b]) < 5 * sqrt(var[b] / (double)n), "sample mean %g vs %g", m,
                  mean[b]);
        cr_assert(fabs(s - var[b]) < 0.1 * var[b], "sample variance %g vs %g", s, var[b]);
    }
    free(v);
    clt_tensor_free(t);
    /* the same generator state gives the same draws */
    clt_tensor *a = NULL, *b2 = NULL;
    clt_generator *g1 = NULL, *g2 = NULL;
    CHECK(clt_generator_new(7, &g1));
    CHECK(clt_generator_new(7, &g2));
    CHECK(clt_distribution_sample(d, g1, 1, s3, &a));
    CHECK(clt_distribution_sample(d, g2, 1, s3, &b2));
    double *va = read_as_f64(a), *vb = read_as_f64(b2);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(va[i], vb[i]);
    free(va);
    free(vb);
    clt_tensor_free(a);
    clt_tensor_free(b2);
    /* what torch has not */
    assert_error(clt_distribution_rsample(d, g, 0, NULL, &t), CLT_ERR_INVALID_ARGUMENT,
                 "MixtureSameFamily does not implement rsample");
    assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "MixtureSameFamily does not implement entropy");
    assert_error(clt_distribution_icdf(d, tx, &t), CLT_ERR_INVALID_ARGUMENT,
                 "MixtureSameFamily does not implement icdf");
    cr_assert_null(t);
    clt_generator_free(g);
    clt_generator_free(g1);
    clt_generator_free(g2);
    clt_distribution_free(d);
    clt_tensor *all[] = {tl, tm, ts, tx};
    for (int k = 0; k < 4; k++)
        clt_tensor_free(all[k]);
}

Test(distributions4, mixture_of_independent_normals)
{
    clt_device *dev = get_device("cpu");
    /* k = 3 components of event [2], batch []; probs given */
    const int64_t s3[1] = {3}, s32[2] = {3, 2}, s52[2] = {5, 2}, s2[1] = {2}, s5[1] = {5};
    const double pr[3] = {0.2, 0.5, 0.3};
    const double loc[6] = {-1.0, 0.5, 2.0, 0.0, 3.0, -2.5}, sc[6] = {0.7, 1.3, 0.4, 2.0, 0.5, 1.1};
    const double x[10] = {0.1, -0.4, 1.9, 2.7, -3.0, 0.0, 0.6, 5.0, 2.0, 0.1};
    clt_tensor *tp = f64(dev, 1, s3, pr), *tm = f64(dev, 2, s32, loc), *ts = f64(dev, 2, s32, sc);
    clt_tensor *tx = f64(dev, 2, s52, x), *t = NULL;
    clt_distribution *cat = NULL, *nrm = NULL, *comp = NULL, *d = NULL;
    CHECK(clt_categorical_dist(tp, NULL, 1, &cat));
    CHECK(clt_normal_dist(tm, ts, 1, &nrm));
    CHECK(clt_independent_dist(nrm, 1, 1, &comp));
    CHECK(clt_mixture_same_family_dist(cat, comp, 1, &d));
    cr_assert_eq(clt_distribution_batch_ndim(d), 0);
    cr_assert_eq(clt_distribution_event_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_shape(d)[0], 2);
    double lp[5], mean[2] = {0, 0}, var[2] = {0, 0};
    for (int i = 0; i < 5; i++) {
        double terms[3];
        for (int k = 0; k < 3; k++) {
            terms[k] = log(pr[k]);
            for (int e = 0; e < 2; e++)
                terms[k] += host_lp(F_NORMAL, loc[k * 2 + e], sc[k * 2 + e], x[i * 2 + e]);
        }
        lp[i] = lse(terms, 3);
    }
    for (int e = 0; e < 2; e++) {
        for (int k = 0; k < 3; k++)
            mean[e] += pr[k] * loc[k * 2 + e];
        for (int k = 0; k < 3; k++) {
            double dm = loc[k * 2 + e] - mean[e];
            var[e] += pr[k] * (sc[k * 2 + e] * sc[k * 2 + e] + dm * dm);
        }
    }
    CHECK(clt_distribution_log_prob(d, tx, &t));
    assert_shape(t, 1, s5);
    expect_values(t, lp, 5, 1e-12, 1e-12, "mixture of Independent log_prob");
    CHECK(clt_distribution_mean(d, &t));
    assert_shape(t, 1, s2);
    expect_values(t, mean, 2, 1e-12, 1e-14, "mixture of Independent mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 2, 1e-12, 1e-14, "mixture of Independent variance");
    /* Independent has no cdf, as torch's */
    assert_error(clt_distribution_cdf(d, tx, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Independent does not implement cdf");
    /* the event's size is checked */
    const int64_t s53[2] = {5, 3};
    double x15[15] = {0};
    clt_tensor *bad = f64(dev, 2, s53, x15);
    assert_error(clt_distribution_log_prob(d, bad, &t), CLT_ERR_SHAPE_MISMATCH,
                 "The right-most size of value must match event_shape");
    names_only("clt_distribution_log_prob");
    /* a draw: sample_shape [4] + event [2] */
    clt_generator *g = NULL;
    CHECK(clt_generator_new(3, &g));
    const int64_t four = 4, s42[2] = {4, 2};
    CHECK(clt_distribution_sample(d, g, 1, &four, &t));
    assert_shape(t, 2, s42);
    clt_tensor_free(t);
    clt_generator_free(g);
    clt_distribution *all_d[] = {cat, nrm, comp, d};
    for (int k = 0; k < 4; k++)
        clt_distribution_free(all_d[k]);
    clt_tensor *all[] = {tp, tm, ts, tx, bad};
    for (int k = 0; k < 5; k++)
        clt_tensor_free(all[k]);
}

Test(distributions4, mixture_refusals)
{
    clt_device *dev = get_device("cpu");
    const int64_t s2[1] = {2}, s3[1] = {3}, s23[2] = {2, 3}, s43[2] = {4, 3};
    const double v12[12] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2};
    clt_tensor *l2 = f64(dev, 1, s2, v12), *l3 = f64(dev, 1, s3, v12), *l23 = f64(dev, 2, s23, v12);
    clt_tensor *m43 = f64(dev, 2, s43, v12), *m3 = f64(dev, 1, s3, v12);
    clt_distribution *c2 = NULL, *c3 = NULL, *c23 = NULL, *n43 = NULL, *n3 = NULL, *d = NULL;
    CHECK(clt_categorical_dist(NULL, l2, 1, &c2));
    CHECK(clt_categorical_dist(NULL, l3, 1, &c3));
    CHECK(clt_categorical_dist(NULL, l23, 1, &c23));
    CHECK(clt_normal_dist(m43, m43, 1, &n43));
    CHECK(clt_normal_dist(m3, m3, 1, &n3));
    assert_error(clt_mixture_same_family_dist(n3, n43, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "needs to be an instance of torch.distributions.Categorical");
    cr_assert_null(d);
    assert_error(clt_mixture_same_family_dist(c2, n43, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "`mixture_distribution component` (2) does not equal "
                 "`component_distribution.batch_shape[-1]` (3)");
    assert_error(clt_mixture_same_family_dist(c23, n43, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "`mixture_distribution.batch_shape` ([2]) is not compatible");
    assert_error(clt_mixture_same_family_dist(c3, c3, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "batch dimension of components");
    assert_error(clt_mixture_same_family_dist(NULL, n43, 1, &d), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_mixture_same_family_dist(c3, NULL, 1, &d), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(d);
    /* a value outside the components' support (Exponential's) */
    clt_distribution *e = NULL;
    CHECK(clt_exponential_dist(m43, 1, &e));
    CHECK(clt_mixture_same_family_dist(c3, e, 1, &d));
    const double neg[4] = {0.5, -0.1, 1.0, 2.0};
    clt_tensor *tv = f64(dev, 1, (const int64_t[]){4}, neg), *t = NULL;
    assert_error(clt_distribution_log_prob(d, tv, &t), CLT_ERR_INVALID_ARGUMENT,
                 "GreaterThanEq(lower_bound=0.0)) of the distribution MixtureSameFamily");
    cr_assert_null(t);
    /* no KL (torch registers none) */
    assert_error(clt_kl_divergence(d, d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "No KL(p || q) is implemented for p type MixtureSameFamily");
    clt_distribution *all_d[] = {c2, c3, c23, n43, n3, e, d};
    for (int k = 0; k < 7; k++)
        clt_distribution_free(all_d[k]);
    clt_tensor *all[] = {l2, l3, l23, m43, m3, tv};
    for (int k = 0; k < 6; k++)
        clt_tensor_free(all[k]);
}

/* ---- gradients ------------------------------------------------------------- */

typedef enum gcase {
    GC_KL_UNIFORM_BETA,
    GC_KL_UNIFORM_CB,
    GC_KL_UNIFORM_GAMMA,
    GC_KL_UNIFORM_GUMBEL,
    GC_KL_UNIFORM_PARETO,
    GC_KL_BETA_UNIFORM,
    GC_KL_BETA_CB,
    GC_KL_CB_UNIFORM,
    GC_KL_GAMMA_GUMBEL,
    GC_KL_PARETO_GAMMA,
    GC_KL_PARETO_NORMAL,
    GC_KL_BERNOULLI_POISSON,
    GC_MIX_LP,
    GC_MIX_VAR,
    GC_MIX_CDF
} gcase;

static const struct {
    int fp, fq;
} kl_fams[] = {
    [GC_KL_UNIFORM_BETA] = {F_UNIFORM, F_BETA},     [GC_KL_UNIFORM_CB] = {F_UNIFORM, F_CB},
    [GC_KL_UNIFORM_GAMMA] = {F_UNIFORM, F_GAMMA},   [GC_KL_UNIFORM_GUMBEL] = {F_UNIFORM, F_GUMBEL},
    [GC_KL_UNIFORM_PARETO] = {F_UNIFORM, F_PARETO}, [GC_KL_BETA_UNIFORM] = {F_BETA, F_UNIFORM},
    [GC_KL_BETA_CB] = {F_BETA, F_CB},               [GC_KL_CB_UNIFORM] = {F_CB, F_UNIFORM},
    [GC_KL_GAMMA_GUMBEL] = {F_GAMMA, F_GUMBEL},     [GC_KL_PARETO_GAMMA] = {F_PARETO, F_GAMMA},
    [GC_KL_PARETO_NORMAL] = {F_PARETO, F_NORMAL},
};

static clt_status gc_dist(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    gcase c = *(const gcase *)ctx;
    clt_distribution *p = NULL, *q = NULL, *d = NULL;
    clt_status st;
    if (c == GC_KL_BERNOULLI_POISSON) {
        st = clt_bernoulli_dist(NULL, in[0], 1, &p);
        if (st == CLT_OK)
            st = clt_poisson_dist(in[1], 1, &q);
    } else if (c >= GC_MIX_LP) { /* logits, loc, scale, value */
        st = clt_categorical_dist(NULL, in[0], 1, &p);
        if (st == CLT_OK)
            st = clt_normal_dist(in[1], in[2], 1, &q);
        if (st == CLT_OK)
            st = clt_mixture_same_family_dist(p, q, 1, &d);
        if (st == CLT_OK)
            st = c == GC_MIX_LP    ? clt_distribution_log_prob(d, in[3], out)
                 : c == GC_MIX_CDF ? clt_distribution_cdf(d, in[3], out)
                                   : clt_distribution_variance(d, out);
        clt_distribution_free(d);
        clt_distribution_free(p);
        clt_distribution_free(q);
        return st;
    } else {
        int fp = kl_fams[c].fp, fq = kl_fams[c].fq;
        int np = fp == F_CB ? 1 : 2;
        st = make_fam(fp, in[0], np == 2 ? in[1] : NULL, &p);
        if (st == CLT_OK)
            st = make_fam(fq, in[np], fq == F_CB ? NULL : in[np + 1], &q);
    }
    if (st == CLT_OK)
        st = clt_kl_divergence(p, q, out);
    clt_distribution_free(p);
    clt_distribution_free(q);
    return st;
}

Test(distributions4, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double lo[3] = {0.1, 0.3, 0.05}, hi[3] = {0.6, 0.9, 0.2};
    const double a[3] = {0.7, 2.0, 4.5}, b[3] = {1.3, 0.6, 2.5}, lam[3] = {0.15, 0.45, 0.8};
    const double loc[3] = {0.3, -0.8, 1.2}, glo[3] = {-1.0, 0.2, 1.5}, ghi[3] = {0.5, 2.0, 3.5};
    const double plo[3] = {1.5, 2.0, 3.5}, phi[3] = {2.0, 4.0, 5.0}, psc[3] = {1.0, 1.5, 0.5};
    const double qlo[3] = {-0.5, -1.0, -0.1}, qhi[3] = {1.5, 1.2, 2.0};
    const double al[3] = {2.5, 3.5, 6.0}, lg[3] = {-0.7, 0.4, 1.9};
    const double ml[6] = {-1.0, 0.5, 2.0, 0.0, 3.0, -2.5}, ms[6] = {0.7, 1.3, 0.4, 2.0, 0.5, 1.1};
    const double mx[4] = {0.1, -0.4, 1.9, 2.7};
    struct {
        gcase c;
        int n;
        gc_in in[4];
    } cases[] = {
        {GC_KL_UNIFORM_BETA, 4, {{1, {3}, lo, 1}, {1, {3}, hi, 1}, {1, {3}, a, 1}, {1, {3}, b, 1}}},
        {GC_KL_UNIFORM_CB, 3, {{1, {3}, lo, 1}, {1, {3}, hi, 1}, {1, {3}, lam, 1}}},
        {GC_KL_UNIFORM_GAMMA, 4, {{1, {3}, lo, 1}, {1, {3}, hi, 1}, {1, {3}, a, 1}, {1, {3}, b, 1}}},
        {GC_KL_UNIFORM_GUMBEL, 4,
         {{1, {3}, glo, 1}, {1, {3}, ghi, 1}, {1, {3}, loc, 1}, {1, {3}, b, 1}}},
        {GC_KL_UNIFORM_PARETO, 4,
         {{1, {3}, plo, 1}, {1, {3}, phi, 1}, {1, {3}, psc, 1}, {1, {3}, a, 1}}},
        {GC_KL_BETA_UNIFORM, 4, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, qlo, 1}, {1, {3}, qhi, 1}}},
        {GC_KL_BETA_CB, 3, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, lam, 1}}},
        {GC_KL_CB_UNIFORM, 3, {{1, {3}, lam, 1}, {1, {3}, qlo, 1}, {1, {3}, qhi, 1}}},
        {GC_KL_GAMMA_GUMBEL, 4, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, loc, 1}, {1, {3}, a, 1}}},
        {GC_KL_PARETO_GAMMA, 4, {{1, {3}, psc, 1}, {1, {3}, al, 1}, {1, {3}, a, 1}, {1, {3}, b, 1}}},
        {GC_KL_PARETO_NORMAL, 4,
         {{1, {3}, psc, 1}, {1, {3}, al, 1}, {1, {3}, loc, 1}, {1, {3}, b, 1}}},
        {GC_KL_BERNOULLI_POISSON, 2, {{1, {3}, lg, 1}, {1, {3}, a, 1}}},
        {GC_MIX_LP, 4,
         {{1, {3}, lg, 1}, {2, {2, 3}, ml, 1}, {2, {2, 3}, ms, 1}, {2, {2, 2}, mx, 1}}},
        {GC_MIX_VAR, 3, {{1, {3}, lg, 1}, {2, {2, 3}, ml, 1}, {2, {2, 3}, ms, 1}}},
        {GC_MIX_CDF, 4,
         {{1, {3}, lg, 1}, {2, {2, 3}, ml, 1}, {2, {2, 3}, ms, 1}, {2, {2, 2}, mx, 1}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck_tol(dev, gc_dist, &cases[i].c, cases[i].n, cases[i].in, 1e-6, 1e-5, 1e-7);
}

/* ---- LowRankMultivariateNormal --------------------------------------------- */

/* The n x n covariance W W^T + diag(D) (W n x m), its Cholesky factor, and
 * the log density at x by forward substitution, all in double. */
static void host_cov(int n, int m, const double *w, const double *dg, double *cov)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = i == j ? dg[i] : 0;
            for (int k = 0; k < m; k++)
                s += w[i * m + k] * w[j * m + k];
            cov[i * n + j] = s;
        }
}

static void host_chol(int n, const double *a, double *l)
{
    memset(l, 0, (size_t)(n * n) * sizeof *l);
    for (int j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int k = 0; k < j; k++)
            s -= l[j * n + k] * l[j * n + k];
        l[j * n + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = a[i * n + j];
            for (int k = 0; k < j; k++)
                t -= l[i * n + k] * l[j * n + k];
            l[i * n + j] = t / l[j * n + j];
        }
    }
}

/* log N(x; mu, L L^T) */
static double host_mvn_lp(int n, const double *l, const double *mu, const double *x)
{
    double z[8], q = 0, ld = 0;
    for (int i = 0; i < n; i++) {
        double s = x[i] - mu[i];
        for (int k = 0; k < i; k++)
            s -= l[i * n + k] * z[k];
        z[i] = s / l[i * n + i];
        q += z[i] * z[i];
        ld += log(l[i * n + i]);
    }
    return -0.5 * q - ld - 0.5 * n * log(2 * PI);
}

Test(distributions4, lowrank_mvn_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    enum { N = 3, M = 2 };
    const int64_t sl[1] = {N}, sw[2] = {N, M}, sx[2] = {4, N}, s4[1] = {4}, snn[2] = {N, N};
    const double loc[N] = {0.5, -1.0, 2.0}, w[N * M] = {1.0, 0.5, -0.3, 0.2, 0.0, 1.5};
    const double dg[N] = {0.3, 0.2, 0.6};
    const double x[4 * N] = {0.1, -0.4, 1.9, 2.7, -3.0, 0.0, 0.6, 5.0, 2.0, 0.1, 0.2, 0.3};
    clt_tensor *tl = f64(dev, 1, sl, loc), *tw = f64(dev, 2, sw, w), *td = f64(dev, 1, sl, dg);
    clt_tensor *tx = f64(dev, 2, sx, x), *t = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_lowrank_multivariate_normal_dist(tl, tw, td, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "LowRankMultivariateNormal");
    cr_assert_eq(clt_distribution_batch_ndim(d), 0);
    cr_assert_eq(clt_distribution_event_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_shape(d)[0], N);
    cr_assert_eq(clt_distribution_has_rsample(d), 1);
    double cov[N * N], l[N * N], lp[4], var[N];
    host_cov(N, M, w, dg, cov);
    host_chol(N, cov, l);
    for (int i = 0; i < 4; i++)
        lp[i] = host_mvn_lp(N, l, loc, x + i * N);
    for (int i = 0; i < N; i++)
        var[i] = cov[i * N + i];
    double ent = 0.5 * N * (1 + log(2 * PI));
    for (int i = 0; i < N; i++)
        ent += log(l[i * N + i]);
    CHECK(clt_distribution_log_prob(d, tx, &t));
    assert_shape(t, 1, s4);
    expect_values(t, lp, 4, 1e-12, 1e-12, "LowRankMVN log_prob");
    CHECK(clt_distribution_entropy(d, &t));
    expect_values(t, &ent, 1, 1e-12, 1e-12, "LowRankMVN entropy");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, loc, N, 0, 0, "LowRankMVN mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, N, 1e-14, 1e-14, "LowRankMVN variance");
    CHECK(clt_distribution_covariance_matrix(d, &t));
    assert_shape(t, 2, snn);
    expect_values(t, cov, N * N, 1e-14, 1e-14, "LowRankMVN covariance_matrix");
    CHECK(clt_distribution_scale_tril(d, &t));
    expect_values(t, l, N * N, 1e-12, 1e-12, "LowRankMVN scale_tril");
    /* precision: (L L^T)^-1 by solving column by column */
    double prec[N * N];
    for (int j = 0; j < N; j++) {
        double e[N] = {0}, z[N], y[N];
        e[j] = 1;
        for (int i = 0; i < N; i++) {
            double s = e[i];
            for (int k = 0; k < i; k++)
                s -= l[i * N + k] * z[k];
            z[i] = s / l[i * N + i];
        }
        for (int i = N - 1; i >= 0; i--) {
            double s = z[i];
            for (int k = i + 1; k < N; k++)
                s -= l[k * N + i] * y[k];
            y[i] = s / l[i * N + i];
        }
        for (int i = 0; i < N; i++)
            prec[i * N + j] = y[i];
    }
    CHECK(clt_distribution_precision_matrix(d, &t));
    expect_values(t, prec, N * N, 1e-11, 1e-12, "LowRankMVN precision_matrix");
    /* KL with a MultivariateNormal of the same covariance and another loc:
     * the Mahalanobis term only */
    const double loc2[N] = {0.0, 0.0, 1.0};
    clt_tensor *tl2 = f64(dev, 1, sl, loc2), *tsc = f64(dev, 2, snn, l);
    clt_distribution *q = NULL;
    CHECK(clt_multivariate_normal_dist(tl2, NULL, tsc, 1, &q));
    double diff[N] = {loc2[0] - loc[0], loc2[1] - loc[1], loc2[2] - loc[2]};
    double half_m = -host_mvn_lp(N, l, (const double[]){0, 0, 0}, diff) -
                    (ent - 0.5 * N);
    CHECK(clt_kl_divergence(d, q, &t));
    expect_values(t, &half_m, 1, 1e-10, 1e-12, "KL(LowRankMVN || MVN)");
    CHECK(clt_kl_divergence(q, d, &t));
    expect_values(t, &half_m, 1, 1e-10, 1e-12, "KL(MVN || LowRankMVN)");
    clt_distribution *d2 = NULL;
    CHECK(clt_lowrank_multivariate_normal_dist(tl2, tw, td, 1, &d2));
    CHECK(clt_kl_divergence(d, d2, &t));
    expect_values(t, &half_m, 1, 1e-10, 1e-12, "KL(LowRankMVN || LowRankMVN)");
    CHECK(clt_kl_divergence(d, d, &t));
    expect_values(t, (const double[]){0}, 1, 0, 1e-12, "KL(p || p)");
    /* sample moments: 40000 draws */
    clt_generator *g = NULL;
    CHECK(clt_generator_new(99, &g));
    const int64_t n = 40000;
    CHECK(clt_distribution_sample(d, g, 1, &n, &t));
    double *v = read_as_f64(t);
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= i; j++) {
            double mi = 0, mj = 0, c = 0;
            for (int64_t r = 0; r < n; r++) {
                mi += v[r * N + i];
                mj += v[r * N + j];
            }
            mi /= (double)n;
            mj /= (double)n;
            for (int64_t r = 0; r < n; r++)
                c += (v[r * N + i] - mi) * (v[r * N + j] - mj);
            c /= (double)(n - 1);
            if (i == j)
                cr_assert(fabs(mi - loc[i]) < 5 * sqrt(cov[i * N + i] / (double)n),
                          "sample mean %d: %g vs %g", i, mi, loc[i]);
            cr_assert(fabs(c - cov[i * N + j]) < 0.05 * sqrt(cov[i * N + i] * cov[j * N + j]),
                      "sample covariance %d %d: %g vs %g", i, j, c, cov[i * N + j]);
        }
    free(v);
    clt_tensor_free(t);
    clt_generator_free(g);
    clt_distribution_free(d);
    clt_distribution_free(d2);
    clt_distribution_free(q);
    clt_tensor *all[] = {tl, tw, td, tx, tl2, tsc};
    for (int k = 0; k < 6; k++)
        clt_tensor_free(all[k]);
}

Test(distributions4, lowrank_mvn_draws_are_the_same_on_two_devices)
{
    clt_device *d1 = get_device("cpu"), *d2 = second_device(d1);
    const int64_t sl[1] = {3}, sw[2] = {3, 2}, six = 6;
    const double loc[3] = {0.5, -1.0, 2.0}, w[6] = {1.0, 0.5, -0.3, 0.2, 0.0, 1.5};
    const double dg[3] = {0.3, 0.2, 0.6};
    double *h[2];
    for (int k = 0; k < 2; k++) {
        clt_device *dev = k ? d2 : d1;
        clt_tensor *tl = f64(dev, 1, sl, loc), *tw = f64(dev, 2, sw, w), *td = f64(dev, 1, sl, dg);
        clt_tensor *x = NULL;
        clt_distribution *d = NULL;
        clt_generator *g = NULL;
        CHECK(clt_lowrank_multivariate_normal_dist(tl, tw, td, 1, &d));
        CHECK(clt_generator_new(11, &g));
        CHECK(clt_distribution_rsample(d, g, 1, &six, &x));
        h[k] = read_as_f64(x);
        clt_tensor_free(x);
        clt_generator_free(g);
        clt_distribution_free(d);
        clt_tensor *all[] = {tl, tw, td};
        for (int i = 0; i < 3; i++)
            clt_tensor_free(all[i]);
    }
    /* the same normal draws; the products may round differently */
    for (int i = 0; i < 18; i++)
        cr_assert(close_enough(h[0][i], h[1][i], 1e-13, 1e-13), "draw %d: %.17g vs %.17g", i,
                  h[0][i], h[1][i]);
    free(h[0]);
    free(h[1]);
}

Test(distributions4, kl_half_cauchy)
{
    clt_device *dev = get_device("cpu");
    const int64_t s2[1] = {2};
    const double a[2] = {0.5, 2.0}, b[2] = {1.5, 0.3};
    clt_tensor *ta = f64(dev, 1, s2, a), *tb = f64(dev, 1, s2, b), *t = NULL;
    clt_distribution *p = NULL, *q = NULL;
    CHECK(clt_half_cauchy_dist(ta, 1, &p));
    CHECK(clt_half_cauchy_dist(tb, 1, &q));
    CHECK(clt_kl_divergence(p, q, &t));
    /* integral of 2 f_p(x) log(f_p / f_q) over [0, inf), x = tan(u) */
    double want[2];
    for (int i = 0; i < 2; i++) {
        double s = 0, h = (PI / 2) / 200000;
        for (int j = 0; j <= 200000; j++) {
            double u = j * h, x = tan(u < PI / 2 - 1e-9 ? u : PI / 2 - 1e-9);
            double fp = 2 / (PI * a[i] * (1 + x * x / (a[i] * a[i])));
            double fq = 2 / (PI * b[i] * (1 + x * x / (b[i] * b[i])));
            double dx = 1 + x * x, g = fp * log(fp / fq) * dx;
            s += g * (j == 0 || j == 200000 ? 1 : j % 2 ? 4 : 2);
        }
        want[i] = s * h / 3;
    }
    expect_values(t, want, 2, 1e-6, 1e-8, "KL(HalfCauchy || HalfCauchy)");
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

Test(distributions4, lowrank_mvn_shapes_and_refusals)
{
    clt_device *dev = get_device("cpu");
    const double v[24] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2,
                          1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.2, 2.3, 2.4};
    const int64_t s3[1] = {3}, s23[2] = {2, 3}, s32[2] = {3, 2}, s2[1] = {2}, s41[3] = {4, 3, 1};
    clt_tensor *l3 = f64(dev, 1, s3, v), *l23 = f64(dev, 2, s23, v), *w32 = f64(dev, 2, s32, v);
    clt_tensor *d2 = f64(dev, 1, s2, v), *w41 = f64(dev, 3, s41, v), *w22 = f64(dev, 2, (const int64_t[]){2, 2}, v);
    clt_tensor *neg = NULL, *t = NULL, *zero = f64(dev, 0, NULL, v);
    CHECK(clt_neg(l3, &neg));
    clt_distribution *d = NULL;
    /* batch shapes: loc's [2] and W's [4] do not broadcast */
    assert_error(clt_lowrank_multivariate_normal_dist(l23, w41, l3, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "Incompatible batch shapes: loc [2, 3], cov_factor [4, 3, 1], cov_diag [3]");
    assert_error(clt_lowrank_multivariate_normal_dist(l3, w22, l3, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "cov_factor must be a batch of matrices with shape 3 x m");
    assert_error(clt_lowrank_multivariate_normal_dist(l3, w32, d2, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "cov_diag must be a batch of vectors with shape [3]");
    assert_error(clt_lowrank_multivariate_normal_dist(zero, w32, l3, 1, &d),
                 CLT_ERR_INVALID_ARGUMENT, "loc must be at least one-dimensional.");
    assert_error(clt_lowrank_multivariate_normal_dist(l3, l3, l3, 1, &d),
                 CLT_ERR_INVALID_ARGUMENT, "cov_factor must be at least two-dimensional");
    assert_error(clt_lowrank_multivariate_normal_dist(l3, w32, neg, 1, &d),
                 CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter cov_diag (Tensor of shape [3]) of distribution "
                 "LowRankMultivariateNormal to satisfy the constraint "
                 "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)");
    cr_assert_null(d);
    assert_error(clt_lowrank_multivariate_normal_dist(l3, w32, NULL, 1, &d), CLT_ERR_NULL_ARGUMENT,
                 NULL);
    /* batch [2] from loc; rsample of sample_shape [5] is [5, 2, 3] */
    CHECK(clt_lowrank_multivariate_normal_dist(l23, w32, l3, 1, &d));
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    cr_assert_eq(clt_distribution_batch_shape(d)[0], 2);
    clt_generator *g = NULL;
    CHECK(clt_generator_new(5, &g));
    const int64_t five = 5, s523[3] = {5, 2, 3}, s233[3] = {2, 3, 3};
    CHECK(clt_distribution_rsample(d, g, 1, &five, &t));
    assert_shape(t, 3, s523);
    clt_tensor_free(t);
    CHECK(clt_distribution_entropy(d, &t));
    assert_shape(t, 1, s2);
    clt_tensor_free(t);
    CHECK(clt_distribution_covariance_matrix(d, &t));
    assert_shape(t, 3, s233);
    clt_tensor_free(t);
    assert_error(clt_distribution_cdf(d, l3, &t), CLT_ERR_INVALID_ARGUMENT,
                 "LowRankMultivariateNormal does not implement cdf");
    /* event shapes differ */
    clt_distribution *q = NULL, *nrm = NULL;
    CHECK(clt_lowrank_multivariate_normal_dist(d2, w22, d2, 1, &q));
    assert_error(clt_kl_divergence(d, q, &t), CLT_ERR_SHAPE_MISMATCH,
                 "different event shapes cannot be computed");
    CHECK(clt_normal_dist(l3, l3, 1, &nrm));
    assert_error(clt_distribution_covariance_matrix(nrm, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Normal has no covariance_matrix");
    cr_assert_null(t);
    clt_generator_free(g);
    clt_distribution_free(d);
    clt_distribution_free(q);
    clt_distribution_free(nrm);
    clt_tensor *all[] = {l3, l23, w32, d2, w41, w22, neg, zero};
    for (int k = 0; k < 8; k++)
        clt_tensor_free(all[k]);
}

typedef enum lcase { LC_LP, LC_ENT, LC_RS, LC_KL_LL, LC_KL_LM, LC_KL_ML, LC_PREC, LC_TRIL } lcase;

static clt_status gc_lowrank(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    lcase c = *(const lcase *)ctx;
    clt_distribution *d = NULL, *q = NULL;
    clt_generator *g = NULL;
    clt_status st = clt_lowrank_multivariate_normal_dist(in[0], in[1], in[2], 1, &d);
    if (st != CLT_OK)
        return st;
    switch (c) {
    case LC_LP: st = clt_distribution_log_prob(d, in[3], out); break;
    case LC_ENT: st = clt_distribution_entropy(d, out); break;
    case LC_RS:
        st = clt_generator_new(17, &g);
        if (st == CLT_OK)
            st = clt_distribution_rsample(d, g, 1, (int64_t[]){4}, out);
        break;
    case LC_KL_LL:
        st = clt_lowrank_multivariate_normal_dist(in[3], in[4], in[5], 1, &q);
        if (st == CLT_OK)
            st = clt_kl_divergence(d, q, out);
        break;
    case LC_KL_LM:
    case LC_KL_ML:
    { /* tril() of the input, so that finite differences of its upper zeros stay valid */
        clt_tensor *lt = NULL;
        st = clt_tril(in[4], 0, &lt);
        if (st == CLT_OK)
            st = clt_multivariate_normal_dist(in[3], NULL, lt, 1, &q);
        clt_tensor_free(lt);
        if (st == CLT_OK)
            st = c == LC_KL_LM ? clt_kl_divergence(d, q, out) : clt_kl_divergence(q, d, out);
        break;
    }
    case LC_PREC: st = clt_distribution_precision_matrix(d, out); break;
    default: st = clt_distribution_scale_tril(d, out); break;
    }
    clt_generator_free(g);
    clt_distribution_free(q);
    clt_distribution_free(d);
    return st;
}

Test(distributions4, lowrank_mvn_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double loc[6] = {0.5, -1.0, 2.0, 0.1, 0.0, -0.7};
    const double w[6] = {1.0, 0.5, -0.3, 0.2, 0.0, 1.5}, dg[6] = {0.3, 0.2, 0.6, 0.5, 0.9, 0.4};
    const double x[6] = {0.1, -0.4, 1.9, 2.7, -3.0, 0.0}, w2[3] = {0.4, -0.8, 0.3};
    const double tril[9] = {1.2, 0, 0, 0.3, 0.8, 0, -0.4, 0.5, 1.1};
    struct {
        lcase c;
        int n;
        gc_in in[6];
    } cases[] = {
        {LC_LP, 4, {{2, {2, 3}, loc, 1}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}, {2, {2, 3}, x, 1}}},
        {LC_ENT, 3, {{1, {3}, loc, 0}, {2, {3, 2}, w, 1}, {2, {2, 3}, dg, 1}}},
        {LC_RS, 3, {{1, {3}, loc, 1}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}}},
        {LC_KL_LL, 6,
         {{1, {3}, loc, 1}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}, {2, {2, 3}, x, 1},
          {2, {3, 1}, w2, 1}, {1, {3}, dg + 3, 1}}},
        {LC_KL_LM, 5,
         {{1, {3}, loc, 1}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}, {1, {3}, x, 1},
          {2, {3, 3}, tril, 1}}},
        {LC_KL_ML, 5,
         {{1, {3}, loc, 1}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}, {1, {3}, x, 1},
          {2, {3, 3}, tril, 1}}},
        {LC_PREC, 3, {{1, {3}, loc, 0}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}}},
        {LC_TRIL, 3, {{1, {3}, loc, 0}, {2, {3, 2}, w, 1}, {1, {3}, dg, 1}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck_tol(dev, gc_lowrank, &cases[i].c, cases[i].n, cases[i].in, 1e-6, 1e-5, 1e-7);
}
