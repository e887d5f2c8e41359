/* test_distributions2.c: the families of torch.distributions after
 * Independent (Gamma, Chi2, Beta, Dirichlet, StudentT, FisherSnedecor,
 * LogNormal, Gumbel, Cauchy, HalfNormal, HalfCauchy, Pareto, Weibull,
 * Poisson, Geometric): log_prob, entropy, moments, cdf/icdf and KL against
 * host formulas in double (lgamma from libm, digamma by its series);
 * sample moments from fixed seeds within 5 sigma; Gamma's draws the same
 * on two devices; Gamma's reparameterised gradient against -dF/dalpha / f
 * of the regularised incomplete gamma on the host; the other gradients by
 * float64 finite differences; the validation messages. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"

#define PI 3.14159265358979323846
#define EULER 0.57721566490153286061

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
        if (isnan(want[i]) || isinf(want[i]))
            cr_assert(isnan(want[i]) ? isnan(got[i]) : got[i] == want[i],
                      "%s[%zu]: got %.15g, want %.15g", what, i, got[i], want[i]);
        else
            cr_assert(close_enough(got[i], want[i], rtol, atol),
                      "%s[%zu]: got %.15g, want %.15g", what, i, got[i], want[i]);
    }
    free(got);
    clt_tensor_free(t);
}

/* digamma by the recurrence up to 20 and the asymptotic series. */
static double digamma_h(double x)
{
    double r = 0;
    while (x < 20) {
        r -= 1 / x;
        x += 1;
    }
    double z = 1 / (x * x);
    return r + log(x) - 0.5 / x -
           z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z / 132))));
}

static double lbeta(double a, double b)
{
    return lgamma(a) + lgamma(b) - lgamma(a + b);
}

/* ---- values against host formulas ----------------------------------------------- */

static const int64_t s3[1] = {3};

/* The value of one moment or density of a two-parameter family at (a, b, x). */
typedef struct fam2 {
    const char *name;
    clt_status (*make)(const clt_tensor *, const clt_tensor *, int, clt_distribution **);
    double a[3], b[3], x[3];
    double (*lp)(double a, double b, double x);
    double (*ent)(double a, double b);
    double (*mean)(double a, double b);
    double (*var)(double a, double b);
    double (*cdf)(double a, double b, double x); /* NULL: none */
} fam2;

static double gamma_lp(double c, double r, double x)
{
    return c * log(r) + (c - 1) * log(x) - r * x - lgamma(c);
}
static double gamma_ent(double c, double r)
{
    return c - log(r) + lgamma(c) + (1 - c) * digamma_h(c);
}
static double gamma_mean(double c, double r) { return c / r; }
static double gamma_var(double c, double r) { return c / (r * r); }

static double beta_lp(double a, double b, double x)
{
    return (a - 1) * log(x) + (b - 1) * log1p(-x) - lbeta(a, b);
}
static double beta_ent(double a, double b)
{
    return lbeta(a, b) - (a - 1) * digamma_h(a) - (b - 1) * digamma_h(b) +
           (a + b - 2) * digamma_h(a + b);
}
static double beta_mean(double a, double b) { return a / (a + b); }
static double beta_var(double a, double b) { return a * b / ((a + b) * (a + b) * (a + b + 1)); }

static double fs_lp(double d1, double d2, double x)
{
    return 0.5 * d1 * log(d1) + 0.5 * d2 * log(d2) + (0.5 * d1 - 1) * log(x) -
           0.5 * (d1 + d2) * log(d2 + d1 * x) - lbeta(0.5 * d1, 0.5 * d2);
}
static double fs_mean(double d1, double d2)
{
    (void)d1;
    return d2 > 2 ? d2 / (d2 - 2) : NAN;
}
static double fs_var(double d1, double d2)
{
    return d2 > 4 ? 2 * d2 * d2 * (d1 + d2 - 2) / (d1 * (d2 - 2) * (d2 - 2) * (d2 - 4)) : NAN;
}

static double ln_lp(double m, double s, double x)
{
    double z = (log(x) - m) / s;
    return -0.5 * z * z - log(s) - 0.5 * log(2 * PI) - log(x);
}
static double ln_ent(double m, double s) { return 0.5 + 0.5 * log(2 * PI) + log(s) + m; }
static double ln_mean(double m, double s) { return exp(m + s * s / 2); }
static double ln_var(double m, double s) { return expm1(s * s) * exp(2 * m + s * s); }
static double ln_cdf(double m, double s, double x)
{
    return 0.5 * erfc(-(log(x) - m) / (s * sqrt(2.0)));
}

static double gu_lp(double m, double s, double x)
{
    double z = (x - m) / s;
    return -log(s) - z - exp(-z);
}
static double gu_ent(double m, double s)
{
    (void)m;
    return log(s) + 1 + EULER;
}
static double gu_mean(double m, double s) { return m + s * EULER; }
static double gu_var(double m, double s)
{
    (void)m;
    return PI * PI / 6 * s * s;
}
static double gu_cdf(double m, double s, double x) { return exp(-exp(-(x - m) / s)); }

static double ca_lp(double m, double s, double x)
{
    double z = (x - m) / s;
    return -log(PI * s * (1 + z * z));
}
static double ca_ent(double m, double s)
{
    (void)m;
    return log(4 * PI * s);
}
static double ca_mean(double m, double s)
{
    (void)m, (void)s;
    return NAN;
}
static double ca_var(double m, double s)
{
    (void)m, (void)s;
    return INFINITY;
}
static double ca_cdf(double m, double s, double x) { return atan((x - m) / s) / PI + 0.5; }

static double pa_lp(double s, double a, double x) { return log(a) + a * log(s) - (a + 1) * log(x); }
static double pa_ent(double s, double a) { return log(s / a) + 1 + 1 / a; }
static double pa_mean(double s, double a) { return a <= 1 ? INFINITY : a * s / (a - 1); }
static double pa_var(double s, double a)
{
    return a <= 2 ? INFINITY : s * s * a / ((a - 1) * (a - 1) * (a - 2));
}
static double pa_cdf(double s, double a, double x) { return 1 - pow(s / x, a); }

static double we_lp(double s, double k, double x)
{
    return log(k / s) + (k - 1) * log(x / s) - pow(x / s, k);
}
static double we_ent(double s, double k) { return EULER * (1 - 1 / k) + log(s / k) + 1; }
static double we_mean(double s, double k) { return s * tgamma(1 + 1 / k); }
static double we_var(double s, double k)
{
    double g1 = tgamma(1 + 1 / k);
    return s * s * (tgamma(1 + 2 / k) - g1 * g1);
}
static double we_cdf(double s, double k, double x) { return -expm1(-pow(x / s, k)); }

static double ku_lp(double a, double b, double x)
{
    return log(a * b) + (a - 1) * log(x) + (b - 1) * log1p(-pow(x, a));
}
static double ku_ent(double a, double b)
{
    return (1 - 1 / b) + (1 - 1 / a) * (digamma_h(b + 1) + EULER) - log(a) - log(b);
}
static double ku_raw(double a, double b, double k) { return b * exp(lbeta(1 + k / a, b)); }
static double ku_mean(double a, double b) { return ku_raw(a, b, 1); }
static double ku_var(double a, double b)
{
    double m = ku_raw(a, b, 1);
    return ku_raw(a, b, 2) - m * m;
}
static double ku_cdf(double a, double b, double x) { return 1 - pow(1 - pow(x, a), b); }

static const fam2 fams2[] = {
    {"Gamma", clt_gamma_dist, {0.4, 2.0, 9.5}, {1.5, 0.5, 3.0}, {0.3, 2.2, 3.5}, gamma_lp,
     gamma_ent, gamma_mean, gamma_var, NULL},
    {"Beta", clt_beta_dist, {0.5, 2.0, 7.0}, {1.5, 0.8, 3.0}, {0.1, 0.6, 0.95}, beta_lp,
     beta_ent, beta_mean, beta_var, NULL},
    {"FisherSnedecor", clt_fisher_snedecor_dist, {1.5, 4.0, 10.0}, {1.5, 3.0, 7.0},
     {0.2, 1.0, 2.5}, fs_lp, NULL, fs_mean, fs_var, NULL},
    {"LogNormal", clt_log_normal_dist, {-0.5, 0.0, 1.0}, {0.3, 1.0, 0.7}, {0.4, 1.0, 5.0},
     ln_lp, ln_ent, ln_mean, ln_var, ln_cdf},
    {"Gumbel", clt_gumbel_dist, {-1.0, 0.5, 2.0}, {0.5, 1.0, 2.0}, {-1.5, 0.4, 6.0}, gu_lp,
     gu_ent, gu_mean, gu_var, gu_cdf},
    {"Cauchy", clt_cauchy_dist, {-1.0, 0.5, 2.0}, {0.5, 1.0, 2.0}, {-1.5, 0.4, 9.0}, ca_lp,
     ca_ent, ca_mean, ca_var, ca_cdf},
    {"Pareto", clt_pareto_dist, {0.5, 1.0, 2.0}, {0.7, 1.5, 3.5}, {0.6, 4.0, 2.0}, pa_lp,
     pa_ent, pa_mean, pa_var, pa_cdf},
    {"Weibull", clt_weibull_dist, {0.5, 1.0, 2.0}, {0.7, 1.5, 3.5}, {0.2, 1.5, 2.1}, we_lp,
     we_ent, we_mean, we_var, we_cdf},
    {"Kumaraswamy", clt_kumaraswamy_dist, {0.5, 2.0, 5.0}, {0.7, 1.5, 3.5}, {0.2, 0.5, 0.9},
     ku_lp, ku_ent, ku_mean, ku_var, ku_cdf},
};

Test(distributions2, two_parameter_families_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    for (size_t f = 0; f < sizeof fams2 / sizeof fams2[0]; f++) {
        const fam2 *F = &fams2[f];
        clt_tensor *a = f64(dev, 1, s3, F->a), *b = f64(dev, 1, s3, F->b);
        clt_tensor *x = f64(dev, 1, s3, F->x), *t = NULL;
        clt_distribution *d = NULL;
        CHECK(F->make(a, b, 1, &d));
        cr_assert_str_eq(clt_distribution_name(d), F->name);
        double lp[3], ent[3], mean[3], var[3], sd[3], cdf[3];
        for (int i = 0; i < 3; i++) {
            lp[i] = F->lp(F->a[i], F->b[i], F->x[i]);
            ent[i] = F->ent ? F->ent(F->a[i], F->b[i]) : 0;
            mean[i] = F->mean(F->a[i], F->b[i]);
            var[i] = F->var(F->a[i], F->b[i]);
            sd[i] = sqrt(var[i]);
            cdf[i] = F->cdf ? F->cdf(F->a[i], F->b[i], F->x[i]) : 0;
        }
        char what[64];
        snprintf(what, sizeof what, "%s log_prob", F->name);
        CHECK(clt_distribution_log_prob(d, x, &t));
        expect_values(t, lp, 3, 1e-10, 1e-12, what);
        snprintf(what, sizeof what, "%s entropy", F->name);
        if (F->ent) {
            CHECK(clt_distribution_entropy(d, &t));
            expect_values(t, ent, 3, 1e-10, 1e-12, what);
        } else {
            assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                         "FisherSnedecor does not implement entropy");
            cr_assert_null(t);
        }
        snprintf(what, sizeof what, "%s mean", F->name);
        CHECK(clt_distribution_mean(d, &t));
        expect_values(t, mean, 3, 1e-10, 1e-12, what);
        snprintf(what, sizeof what, "%s variance", F->name);
        CHECK(clt_distribution_variance(d, &t));
        expect_values(t, var, 3, 1e-10, 1e-12, what);
        snprintf(what, sizeof what, "%s stddev", F->name);
        CHECK(clt_distribution_stddev(d, &t));
        expect_values(t, sd, 3, 1e-10, 1e-12, what);
        if (F->cdf) {
            snprintf(what, sizeof what, "%s cdf", F->name);
            CHECK(clt_distribution_cdf(d, x, &t));
            expect_values(t, cdf, 3, 1e-10, 1e-12, what);
            /* icdf inverts it */
            clt_tensor *c = NULL, *back = NULL;
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s3, cdf, &c));
            CHECK(clt_distribution_icdf(d, c, &back));
            snprintf(what, sizeof what, "%s icdf", F->name);
            expect_values(back, F->x, 3, 1e-8, 1e-10, what);
            clt_tensor_free(c);
        } else if (strcmp(F->name, "Gamma") != 0) { /* Gamma's: tests/test_special2.c */
            assert_error(clt_distribution_cdf(d, x, &t), CLT_ERR_INVALID_ARGUMENT,
                         "does not implement cdf");
            cr_assert_null(t);
        }
        clt_distribution_free(d);
        clt_tensor_free(a);
        clt_tensor_free(b);
        clt_tensor_free(x);
    }
}

Test(distributions2, one_parameter_and_vector_families_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double df[3] = {0.8, 3.0, 7.5}, x[3] = {0.2, 2.5, 9.0};
    const double loc[3] = {0.5, -1.0, 2.0}, sc[3] = {1.5, 0.5, 2.0};
    const double rate[3] = {0.5, 3.0, 12.0}, k[3] = {0, 2, 15}, pr[3] = {0.1, 0.5, 1.0};
    clt_tensor *tdf = f64(dev, 1, s3, df), *tx = f64(dev, 1, s3, x), *tl = f64(dev, 1, s3, loc);
    clt_tensor *ts = f64(dev, 1, s3, sc), *tr = f64(dev, 1, s3, rate), *tk = f64(dev, 1, s3, k);
    clt_tensor *tp = f64(dev, 1, s3, pr), *t = NULL;
    clt_distribution *chi = NULL, *st = NULL, *hn = NULL, *hc = NULL, *po = NULL, *ge = NULL;
    CHECK(clt_chi2_dist(tdf, 1, &chi));
    CHECK(clt_student_t_dist(tdf, tl, ts, 1, &st));
    CHECK(clt_half_normal_dist(ts, 1, &hn));
    CHECK(clt_half_cauchy_dist(ts, 1, &hc));
    CHECK(clt_poisson_dist(tr, 1, &po));
    CHECK(clt_geometric_dist(tp, NULL, 1, &ge));
    cr_assert_eq(clt_distribution_has_rsample(po), 0);
    cr_assert_eq(clt_distribution_has_rsample(chi), 1);
    double want[7][3];
    for (int i = 0; i < 3; i++) { /* Chi2 = Gamma(df / 2, 1/2) */
        want[0][i] = gamma_lp(df[i] / 2, 0.5, x[i]);
        want[1][i] = gamma_ent(df[i] / 2, 0.5);
        want[2][i] = df[i];
        want[3][i] = 2 * df[i];
    }
    CHECK(clt_distribution_log_prob(chi, tx, &t));
    expect_values(t, want[0], 3, 1e-10, 1e-12, "Chi2 log_prob");
    CHECK(clt_distribution_entropy(chi, &t));
    expect_values(t, want[1], 3, 1e-10, 1e-12, "Chi2 entropy");
    CHECK(clt_distribution_mean(chi, &t));
    expect_values(t, want[2], 3, 1e-12, 0, "Chi2 mean");
    CHECK(clt_distribution_variance(chi, &t));
    expect_values(t, want[3], 3, 1e-12, 0, "Chi2 variance");
    for (int i = 0; i < 3; i++) { /* StudentT(df, loc, scale) at x */
        double n = df[i], y = (x[i] - loc[i]) / sc[i];
        want[0][i] = lgamma((n + 1) / 2) - lgamma(n / 2) - 0.5 * log(n * PI) - log(sc[i]) -
                     (n + 1) / 2 * log1p(y * y / n);
        want[1][i] = log(sc[i]) + (n + 1) / 2 * (digamma_h((n + 1) / 2) - digamma_h(n / 2)) +
                     0.5 * log(n) + lbeta(n / 2, 0.5);
        want[2][i] = n > 1 ? loc[i] : NAN;
        want[3][i] = n > 2 ? sc[i] * sc[i] * n / (n - 2) : n > 1 ? INFINITY : NAN;
    }
    CHECK(clt_distribution_log_prob(st, tx, &t));
    expect_values(t, want[0], 3, 1e-10, 1e-12, "StudentT log_prob");
    CHECK(clt_distribution_entropy(st, &t));
    expect_values(t, want[1], 3, 1e-10, 1e-12, "StudentT entropy");
    CHECK(clt_distribution_mean(st, &t));
    expect_values(t, want[2], 3, 0, 0, "StudentT mean");
    CHECK(clt_distribution_variance(st, &t));
    expect_values(t, want[3], 3, 1e-12, 0, "StudentT variance");
    for (int i = 0; i < 3; i++) { /* HalfNormal and HalfCauchy(scale) at x */
        double s = sc[i], z = x[i] / s;
        want[0][i] = log(2) - 0.5 * z * z - log(s) - 0.5 * log(2 * PI);
        want[1][i] = 0.5 * log(PI * s * s / 2) + 0.5;
        want[2][i] = s * sqrt(2 / PI);
        want[3][i] = s * s * (1 - 2 / PI);
        want[4][i] = erf(z / sqrt(2.0));
        want[5][i] = log(2 / (PI * s * (1 + z * z)));
        want[6][i] = 2 / PI * atan(z);
    }
    CHECK(clt_distribution_log_prob(hn, tx, &t));
    expect_values(t, want[0], 3, 1e-10, 1e-12, "HalfNormal log_prob");
    CHECK(clt_distribution_entropy(hn, &t));
    expect_values(t, want[1], 3, 1e-10, 1e-12, "HalfNormal entropy");
    CHECK(clt_distribution_mean(hn, &t));
    expect_values(t, want[2], 3, 1e-12, 0, "HalfNormal mean");
    CHECK(clt_distribution_variance(hn, &t));
    expect_values(t, want[3], 3, 1e-12, 0, "HalfNormal variance");
    CHECK(clt_distribution_cdf(hn, tx, &t));
    expect_values(t, want[4], 3, 1e-10, 1e-14, "HalfNormal cdf");
    CHECK(clt_distribution_log_prob(hc, tx, &t));
    expect_values(t, want[5], 3, 1e-10, 1e-12, "HalfCauchy log_prob");
    CHECK(clt_distribution_cdf(hc, tx, &t));
    expect_values(t, want[6], 3, 1e-10, 1e-14, "HalfCauchy cdf");
    for (int i = 0; i < 3; i++) { /* Poisson(rate) and Geometric(probs) at k */
        double r = rate[i], p = pr[i];
        want[0][i] = k[i] * log(r) - r - lgamma(k[i] + 1);
        want[1][i] = p == 1 ? (k[i] == 0 ? 0 : -INFINITY) : k[i] * log1p(-p) + log(p);
        want[2][i] = 1 / p - 1;
        want[3][i] = (1 / p - 1) / p;
        want[4][i] = p == 1 ? 0 : (-(1 - p) * log1p(-p) - p * log(p)) / p;
    }
    CHECK(clt_distribution_log_prob(po, tk, &t));
    expect_values(t, want[0], 3, 1e-10, 1e-12, "Poisson log_prob");
    CHECK(clt_distribution_mean(po, &t));
    expect_values(t, rate, 3, 0, 0, "Poisson mean");
    assert_error(clt_distribution_entropy(po, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Poisson does not implement entropy");
    CHECK(clt_distribution_log_prob(ge, tk, &t));
    expect_values(t, want[1], 3, 1e-10, 1e-12, "Geometric log_prob");
    CHECK(clt_distribution_mean(ge, &t));
    expect_values(t, want[2], 3, 1e-12, 1e-15, "Geometric mean");
    CHECK(clt_distribution_variance(ge, &t));
    expect_values(t, want[3], 3, 1e-12, 1e-15, "Geometric variance");
    CHECK(clt_distribution_entropy(ge, &t));
    expect_values(t, want[4], 3, 1e-6, 1e-6, "Geometric entropy");
    clt_distribution_free(chi);
    clt_distribution_free(st);
    clt_distribution_free(hn);
    clt_distribution_free(hc);
    clt_distribution_free(po);
    clt_distribution_free(ge);
    clt_tensor *all[] = {tdf, tx, tl, ts, tr, tk, tp};
    for (size_t i = 0; i < 7; i++)
        clt_tensor_free(all[i]);
}

Test(distributions2, negative_binomial_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double n[3] = {0.0, 2.5, 10.0}, p[3] = {0.3, 0.0, 0.8}, k[3] = {0, 3, 12};
    clt_tensor *tn = f64(dev, 1, s3, n), *tp = f64(dev, 1, s3, p), *tk = f64(dev, 1, s3, k);
    clt_tensor *t = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_negative_binomial_dist(tn, tp, NULL, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "NegativeBinomial");
    cr_assert_eq(clt_distribution_has_rsample(d), 0);
    double lp[3], mean[3], var[3];
    for (int i = 0; i < 3; i++) {
        /* lgamma(n + k) - lgamma(k + 1) - lgamma(n) + n log(1 - p) + k log(p), the
         * probabilities clamped to [eps, 1 - eps] as torch's logits make them */
        double q = fmin(fmax(p[i], DBL_EPSILON), 1 - DBL_EPSILON);
        double norm = n[i] + k[i] == 0 ? 0 : lgamma(n[i] + k[i]) - lgamma(k[i] + 1) - lgamma(n[i]);
        lp[i] = norm + n[i] * log1p(-q) + k[i] * log(q);
        mean[i] = n[i] * q / (1 - q);
        var[i] = mean[i] / (1 - q);
    }
    CHECK(clt_distribution_log_prob(d, tk, &t));
    expect_values(t, lp, 3, 1e-10, 1e-12, "NegativeBinomial log_prob");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, mean, 3, 1e-10, 1e-15, "NegativeBinomial mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 3, 1e-10, 1e-15, "NegativeBinomial variance");
    assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "NegativeBinomial does not implement entropy");
    clt_distribution_free(d);
    /* samples: mean n p / (1 - p), variance mean / (1 - p) */
    const double n2[3] = {1.5, 4.0, 20.0}, p2[3] = {0.2, 0.5, 0.7};
    clt_tensor *tn2 = f64(dev, 1, s3, n2), *tp2 = f64(dev, 1, s3, p2), *x = NULL;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(8, &g));
    CHECK(clt_negative_binomial_dist(tn2, tp2, NULL, 1, &d));
    const int64_t ns[1] = {20000};
    CHECK(clt_distribution_sample(d, g, 1, ns, &x));
    double *h = read_as_f64(x);
    for (int c = 0; c < 3; c++) {
        double s1 = 0, s2 = 0, m = n2[c] * p2[c] / (1 - p2[c]), v = m / (1 - p2[c]);
        for (int i = 0; i < 20000; i++) {
            cr_assert(h[3 * i + c] >= 0 && h[3 * i + c] == floor(h[3 * i + c]));
            s1 += h[3 * i + c];
        }
        s1 /= 20000;
        for (int i = 0; i < 20000; i++)
            s2 += (h[3 * i + c] - s1) * (h[3 * i + c] - s1);
        s2 /= 19999;
        cr_assert(fabs(s1 - m) <= 5 * sqrt(v / 20000), "NegativeBinomial[%d] mean %g, want %g", c,
                  s1, m);
        cr_assert(fabs(s2 - v) <= 0.1 * v, "NegativeBinomial[%d] variance %g, want %g", c, s2, v);
    }
    free(h);
    clt_tensor_free(x);
    clt_distribution_free(d);
    clt_generator_free(g);
    /* total_count below 0 and probs at 1 are refused as torch refuses them */
    const double one[3] = {1, 1, 1};
    clt_tensor *t1 = f64(dev, 1, s3, one);
    assert_error(clt_negative_binomial_dist(t1, t1, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)");
    clt_tensor *neg = NULL;
    CHECK(clt_neg(t1, &neg));
    assert_error(clt_negative_binomial_dist(neg, NULL, t1, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "GreaterThanEq(lower_bound=0)");
    clt_tensor *all[] = {tn, tp, tk, tn2, tp2, t1, neg};
    for (int i = 0; i < 7; i++)
        clt_tensor_free(all[i]);
}

Test(distributions2, relaxed_bernoulli_against_the_binary_concrete_density)
{
    clt_device *dev = get_device("cpu");
    const double t[3] = {0.3, 1.0, 2.5}, l[6] = {-1.0, 0.0, 2.0, 0.5, -3.0, 1.0};
    const double x[6] = {0.1, 0.5, 0.9, 0.3, 0.05, 0.99};
    const int64_t s23[2] = {2, 3};
    clt_tensor *tt = f64(dev, 1, s3, t), *tl = f64(dev, 2, s23, l), *tx = f64(dev, 2, s23, x);
    clt_tensor *o = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_relaxed_bernoulli_dist(tt, NULL, tl, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "RelaxedBernoulli");
    double lp[6];
    for (int i = 0; i < 6; i++) { /* Maddison et al.'s binary Concrete density */
        double a = exp(l[i]), tau = t[i % 3], v = x[i];
        double den = a * pow(v, -tau) + pow(1 - v, -tau);
        lp[i] = log(tau * a * pow(v, -tau - 1) * pow(1 - v, -tau - 1) / (den * den));
    }
    CHECK(clt_distribution_log_prob(d, tx, &o));
    expect_values(o, lp, 6, 1e-9, 1e-12, "RelaxedBernoulli log_prob");
    assert_error(clt_distribution_mean(d, &o), CLT_ERR_INVALID_ARGUMENT,
                 "RelaxedBernoulli does not implement mean");
    cr_assert_null(o);
    clt_generator *g = NULL;
    CHECK(clt_generator_new(3, &g));
    const int64_t ns[1] = {4000};
    CHECK(clt_distribution_rsample(d, g, 1, ns, &o));
    assert_shape(o, 3, (int64_t[]){4000, 2, 3});
    double *h = read_as_f64(o);
    double above[6] = {0};
    for (int i = 0; i < 4000 * 6; i++) {
        cr_assert(h[i] > 0 && h[i] < 1, "draw %d: %g", i, h[i]);
        above[i % 6] += h[i] > 0.5;
    }
    /* P(X > 1/2) is sigmoid(logits) for every temperature */
    for (int i = 0; i < 6; i++) {
        double q = 1 / (1 + exp(-l[i]));
        cr_assert(fabs(above[i] / 4000 - q) <= 5 * sqrt(q * (1 - q) / 4000),
                  "P(X > 1/2)[%d] %g, want %g", i, above[i] / 4000, q);
    }
    free(h);
    clt_tensor_free(o);
    clt_generator_free(g);
    clt_distribution_free(d);
    /* a temperature that does not broadcast to the batch shape */
    const double t4[4] = {1, 1, 1, 1};
    clt_tensor *bad = f64(dev, 1, (int64_t[]){4}, t4);
    assert_error(clt_relaxed_bernoulli_dist(bad, NULL, tl, 1, &d), CLT_ERR_SHAPE_MISMATCH,
                 "do not broadcast");
    cr_assert_null(d);
    clt_tensor *all[] = {tt, tl, tx, bad};
    for (int i = 0; i < 4; i++)
        clt_tensor_free(all[i]);
}

Test(distributions2, dirichlet_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double a[6] = {0.5, 1.5, 3.0, 2.0, 2.0, 0.7};
    const double x[6] = {0.2, 0.3, 0.5, 0.6, 0.1, 0.3};
    const int64_t s23[2] = {2, 3};
    clt_tensor *ta = f64(dev, 2, s23, a), *tx = f64(dev, 2, s23, x), *t = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_dirichlet_dist(ta, 1, &d));
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_ndim(d), 1);
    cr_assert_eq(clt_distribution_event_shape(d)[0], 3);
    double lp[2], ent[2], mean[6], var[6];
    for (int r = 0; r < 2; r++) {
        const double *c = a + 3 * r, *v = x + 3 * r;
        double a0 = c[0] + c[1] + c[2];
        lp[r] = lgamma(a0);
        ent[r] = -lgamma(a0) - (3 - a0) * digamma_h(a0);
        for (int j = 0; j < 3; j++) {
            lp[r] += (c[j] - 1) * log(v[j]) - lgamma(c[j]);
            ent[r] += lgamma(c[j]) - (c[j] - 1) * digamma_h(c[j]);
            mean[3 * r + j] = c[j] / a0;
            var[3 * r + j] = c[j] * (a0 - c[j]) / (a0 * a0 * (a0 + 1));
        }
    }
    CHECK(clt_distribution_log_prob(d, tx, &t));
    expect_values(t, lp, 2, 1e-10, 1e-12, "Dirichlet log_prob");
    CHECK(clt_distribution_entropy(d, &t));
    expect_values(t, ent, 2, 1e-10, 1e-12, "Dirichlet entropy");
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, mean, 6, 1e-12, 0, "Dirichlet mean");
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, var, 6, 1e-12, 0, "Dirichlet variance");
    clt_distribution_free(d);
    clt_tensor_free(ta);
    clt_tensor_free(tx);
}

Test(distributions2, kl_divergence_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double a[3] = {0.5, 2.0, 4.0}, b[3] = {1.5, 0.7, 3.0};
    const double c[3] = {2.5, 1.0, 0.6}, e[3] = {0.8, 2.2, 1.1};
    clt_tensor *ta = f64(dev, 1, s3, a), *tb = f64(dev, 1, s3, b), *tc = f64(dev, 1, s3, c);
    clt_tensor *te = f64(dev, 1, s3, e), *t = NULL;
    double want[3];
    clt_distribution *p = NULL, *q = NULL;
    /* Gamma(a, b) || Gamma(c, e) */
    CHECK(clt_gamma_dist(ta, tb, 1, &p));
    CHECK(clt_gamma_dist(tc, te, 1, &q));
    for (int i = 0; i < 3; i++)
        want[i] = (a[i] - c[i]) * digamma_h(a[i]) - lgamma(a[i]) + lgamma(c[i]) +
                  c[i] * (log(b[i]) - log(e[i])) + a[i] * (e[i] - b[i]) / b[i];
    CHECK(clt_kl_divergence(p, q, &t));
    expect_values(t, want, 3, 1e-10, 1e-12, "KL Gamma");
    clt_distribution_free(p);
    clt_distribution_free(q);
    /* Beta(a, b) || Beta(c, e) */
    CHECK(clt_beta_dist(ta, tb, 1, &p));
    CHECK(clt_beta_dist(tc, te, 1, &q));
    for (int i = 0; i < 3; i++)
        want[i] = lbeta(c[i], e[i]) - lbeta(a[i], b[i]) + (a[i] - c[i]) * digamma_h(a[i]) +
                  (b[i] - e[i]) * digamma_h(b[i]) +
                  (c[i] - a[i] + e[i] - b[i]) * digamma_h(a[i] + b[i]);
    CHECK(clt_kl_divergence(p, q, &t));
    expect_values(t, want, 3, 1e-10, 1e-12, "KL Beta");
    clt_distribution_free(p);
    clt_distribution_free(q);
    /* Poisson(a) || Poisson(c) */
    CHECK(clt_poisson_dist(ta, 1, &p));
    CHECK(clt_poisson_dist(tc, 1, &q));
    for (int i = 0; i < 3; i++)
        want[i] = a[i] * log(a[i] / c[i]) - a[i] + c[i];
    CHECK(clt_kl_divergence(p, q, &t));
    expect_values(t, want, 3, 1e-12, 1e-14, "KL Poisson");
    /* not a registered pair */
    clt_distribution *g = NULL;
    CHECK(clt_gamma_dist(ta, tb, 1, &g));
    assert_error(clt_kl_divergence(p, g, &t), CLT_ERR_INVALID_ARGUMENT,
                 "No KL(p || q) is implemented for p type Poisson and q type Gamma");
    cr_assert_null(t);
    clt_distribution_free(g);
    clt_distribution_free(p);
    clt_distribution_free(q);
    /* Pareto(a, b) || Pareto(c, e): inf where a < c */
    CHECK(clt_pareto_dist(ta, tb, 1, &p));
    CHECK(clt_pareto_dist(tc, te, 1, &q));
    for (int i = 0; i < 3; i++)
        want[i] = a[i] < c[i] ? INFINITY
                              : e[i] * log(a[i] / c[i]) - log(e[i] / b[i]) + e[i] / b[i] - 1;
    CHECK(clt_kl_divergence(p, q, &t));
    expect_values(t, want, 3, 1e-12, 1e-14, "KL Pareto");
    clt_distribution_free(p);
    clt_distribution_free(q);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tc);
    clt_tensor_free(te);
}

/* ---- samples ------------------------------------------------------------------------ */

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

/* The sample mean within 5 sigma of mu and the sample variance within 5
 * sigma of v (m4 the fourth central moment, or a bound on it). */
static void expect_moments(double mean, double var, double mu, double v, double m4, size_t n,
                           const char *what, size_t c)
{
    double sm = 5 * sqrt(v / (double)n), sv = 5 * sqrt((m4 - v * v) / (double)n);
    cr_assert(fabs(mean - mu) <= sm, "%s[%zu]: sample mean %g, want %g +- %g", what, c, mean, mu,
              sm);
    cr_assert(fabs(var - v) <= sv, "%s[%zu]: sample variance %g, want %g +- %g", what, c, var, v,
              sv);
}

Test(distributions2, sample_moments_within_five_sigma)
{
    clt_device *dev = get_device("cpu");
    const size_t n = 20000;
    const int64_t ns[1] = {(int64_t)n};
    const double a[3] = {0.3, 2.5, 12.0}, b[3] = {2.0, 0.5, 1.5};
    const double df[3] = {9.0, 10.0, 12.0}, pr[3] = {0.2, 0.5, 0.9};
    clt_tensor *ta = f64(dev, 1, s3, a), *tb = f64(dev, 1, s3, b), *tdf = f64(dev, 1, s3, df);
    clt_tensor *tp = f64(dev, 1, s3, pr), *x = NULL;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(4321, &g));
    const char *names[] = {"Gamma", "Chi2",    "Beta",   "StudentT",
                           "Poisson", "Geometric", "Gumbel", "Weibull"};
    for (int fam = 0; fam < 8; fam++) {
        clt_distribution *d = NULL;
        switch (fam) {
        case 0: CHECK(clt_gamma_dist(ta, tb, 1, &d)); break;
        case 1: CHECK(clt_chi2_dist(ta, 1, &d)); break;
        case 2: CHECK(clt_beta_dist(ta, tb, 1, &d)); break;
        case 3: CHECK(clt_student_t_dist(tdf, tb, ta, 1, &d)); break;
        case 4: CHECK(clt_poisson_dist(ta, 1, &d)); break;
        case 5: CHECK(clt_geometric_dist(tp, NULL, 1, &d)); break;
        case 6: CHECK(clt_gumbel_dist(ta, tb, 1, &d)); break;
        default: CHECK(clt_weibull_dist(tb, tdf, 1, &d)); break;
        }
        CHECK(clt_distribution_sample(d, g, 1, ns, &x));
        assert_shape(x, 2, (int64_t[]){(int64_t)n, 3});
        double *h = read_as_f64(x);
        for (size_t c = 0; c < 3; c++) {
            double mean, var, mu, v, m4;
            column_stats(h, n, 3, c, &mean, &var);
            double A = a[c], B = b[c];
            switch (fam) {
            case 0: mu = A / B, v = A / (B * B), m4 = 3 * A * (A + 2) / pow(B, 4); break;
            case 1: /* Gamma(A / 2, 1/2) */
                mu = A, v = 2 * A, m4 = 3 * (A / 2) * (A / 2 + 2) * 16;
                break;
            case 2: mu = A / (A + B), v = beta_var(A, B), m4 = v; break; /* m4 <= v on [0, 1] */
            case 3: { /* StudentT(df, loc B, scale A) */
                double k = df[c];
                mu = B, v = A * A * k / (k - 2);
                m4 = pow(A, 4) * 3 * k * k / ((k - 2) * (k - 4));
                break;
            }
            case 4: mu = A, v = A, m4 = A * (1 + 3 * A); break;
            case 5: {
                double p = pr[c];
                mu = (1 - p) / p, v = (1 - p) / (p * p), m4 = v * v * (9 + p * p / (1 - p));
                break;
            }
            case 6: mu = A + B * EULER, v = PI * PI / 6 * B * B, m4 = 5.4 * v * v; break;
            default: { /* Weibull(scale B, concentration df): m4 from the raw moments */
                A = df[c];
                double g1 = tgamma(1 + 1 / A), g2 = tgamma(1 + 2 / A), g3 = tgamma(1 + 3 / A),
                       g4 = tgamma(1 + 4 / A);
                mu = B * g1, v = B * B * (g2 - g1 * g1);
                m4 = pow(B, 4) * (g4 - 4 * g3 * g1 + 6 * g2 * g1 * g1 - 3 * pow(g1, 4));
            }
            }
            expect_moments(mean, var, mu, v, m4, n, names[fam], c);
        }
        free(h);
        clt_tensor_free(x);
        clt_distribution_free(d);
    }
    /* a Dirichlet's marginals are Betas */
    const double conc[3] = {0.5, 2.0, 4.5};
    clt_tensor *tc = f64(dev, 1, s3, conc);
    clt_distribution *d = NULL;
    CHECK(clt_dirichlet_dist(tc, 1, &d));
    CHECK(clt_distribution_sample(d, g, 1, ns, &x));
    double *h = read_as_f64(x);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(h[3 * i] + h[3 * i + 1] + h[3 * i + 2] - 1) < 1e-12);
    for (size_t c = 0; c < 3; c++) {
        double mean, var, a0 = 7.0, v = beta_var(conc[c], a0 - conc[c]);
        column_stats(h, n, 3, c, &mean, &var);
        expect_moments(mean, var, conc[c] / a0, v, v, n, "Dirichlet", c);
    }
    free(h);
    clt_tensor_free(x);
    clt_distribution_free(d);
    clt_tensor_free(tc);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tdf);
    clt_tensor_free(tp);
    clt_generator_free(g);
}

Test(distributions2, gamma_draws_are_the_same_on_two_devices)
{
    clt_device *d1 = get_device("cpu"), *d2 = second_device(d1);
    const double a[3] = {0.05, 1.0, 30.0}, one[3] = {1, 1, 1};
    const int64_t ns[1] = {500};
    for (int dt = 0; dt < 2; dt++) {
        clt_tensor *x[2];
        for (int k = 0; k < 2; k++) {
            clt_device *dev = k ? d2 : d1;
            clt_tensor *ta = f64(dev, 1, s3, a), *tr = f64(dev, 1, s3, one), *ca, *cr;
            CHECK(clt_to_dtype(ta, dt ? CLT_FLOAT64 : CLT_FLOAT32, &ca));
            CHECK(clt_to_dtype(tr, dt ? CLT_FLOAT64 : CLT_FLOAT32, &cr));
            clt_generator *g = NULL;
            clt_distribution *d = NULL;
            CHECK(clt_generator_new(77, &g));
            CHECK(clt_gamma_dist(ca, cr, 1, &d));
            CHECK(clt_distribution_sample(d, g, 1, ns, &x[k]));
            cr_assert_eq(clt_generator_offset(g), 1500);
            clt_distribution_free(d);
            clt_generator_free(g);
            clt_tensor_free(ta);
            clt_tensor_free(tr);
            clt_tensor_free(ca);
            clt_tensor_free(cr);
        }
        double *h0 = read_as_f64(x[0]), *h1 = read_as_f64(x[1]);
        for (int i = 0; i < 1500; i++) {
            cr_assert(h0[i] == h1[i], "draw %d: %.17g vs %.17g", i, h0[i], h1[i]);
            cr_assert(h0[i] > 0, "draw %d: %g", i, h0[i]);
        }
        free(h0);
        free(h1);
        clt_tensor_free(x[0]);
        clt_tensor_free(x[1]);
    }
}

/* ---- gradients ------------------------------------------------------------------------ */

/* The regularised lower incomplete gamma P(a, x): its series below a + 1,
 * Lentz's continued fraction above. */
static double gamma_p(double a, double x)
{
    double lpre = a * log(x) - x - lgamma(a);
    if (x < a + 1) {
        double term = 1 / a, sum = term;
        for (int n = 1; n < 1000; n++) {
            term *= x / (a + n);
            sum += term;
            if (fabs(term) < fabs(sum) * 1e-17)
                break;
        }
        return sum * exp(lpre);
    }
    double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
    for (int i = 1; i < 1000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300)
            d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300)
            c = 1e-300;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-16)
            break;
    }
    return 1 - exp(lpre) * h;
}

Test(distributions2, gamma_rsample_gradient_is_the_implicit_one)
{
    clt_device *dev = get_device("cpu");
    enum { N = 40 };
    double a[N], r[N], ones[N];
    for (int i = 0; i < N; i++) { /* concentrations across torch's three regimes */
        a[i] = 0.1 * pow(1.16, i);
        r[i] = 0.5 + 0.05 * i;
        ones[i] = 1;
    }
    const int64_t sn[1] = {N};
    clt_tensor *ta = f64(dev, 1, sn, a), *tr = f64(dev, 1, sn, r), *w = f64(dev, 1, sn, ones);
    CHECK(clt_set_requires_grad(ta, 1));
    CHECK(clt_set_requires_grad(tr, 1));
    clt_generator *g = NULL;
    clt_distribution *d = NULL;
    clt_tensor *x = NULL, *ga = NULL, *gr = NULL;
    CHECK(clt_generator_new(5, &g));
    CHECK(clt_gamma_dist(ta, tr, 1, &d));
    CHECK(clt_distribution_rsample(d, g, 0, NULL, &x));
    cr_assert_eq(clt_requires_grad(x), 1);
    CHECK(clt_backward(x, w, 0));
    CHECK(clt_grad(ta, &ga));
    CHECK(clt_grad(tr, &gr));
    double *hx = read_as_f64(x), *hga = read_as_f64(ga), *hgr = read_as_f64(gr);
    for (int i = 0; i < N; i++) {
        /* x = s / r with s ~ Gamma(a, 1): ds/da = -(dP/da)(a, s) / p(a, s) */
        double s = hx[i] * r[i], h = 1e-6 * a[i];
        double dpda = (gamma_p(a[i] + h, s) - gamma_p(a[i] - h, s)) / (2 * h);
        double pdf = exp((a[i] - 1) * log(s) - s - lgamma(a[i]));
        double want = -dpda / pdf / r[i];
        cr_assert(close_enough(hga[i], want, 5e-3, 1e-8), "a %g, x %g: d x / d a %.10g, want %.10g",
                  a[i], hx[i], hga[i], want);
        cr_assert(close_enough(hgr[i], -hx[i] / r[i], 1e-12, 1e-14), "d x / d rate");
    }
    free(hx);
    free(hga);
    free(hgr);
    clt_tensor *all[] = {ta, tr, w, x, ga, gr};
    for (int i = 0; i < 6; i++)
        clt_tensor_free(all[i]);
    clt_distribution_free(d);
    clt_generator_free(g);
}

typedef enum gcase {
    GC_GAMMA_LP, GC_BETA_LP, GC_DIRICHLET_LP, GC_STUDENT_LP, GC_FS_LP, GC_WEIBULL_LP,
    GC_PARETO_LP, GC_GAMMA_ENT, GC_BETA_ENT, GC_STUDENT_ENT, GC_KL_GAMMA, GC_KL_BETA,
    GC_LOGNORMAL_RS, GC_GUMBEL_RS, GC_CAUCHY_RS, GC_HALFNORMAL_RS, GC_PARETO_RS, GC_WEIBULL_RS,
    GC_STUDENT_RS_LOC_SCALE, GC_GEOMETRIC_LP, GC_RELAXED_RS
} gcase;

static clt_status make(gcase c, clt_tensor *const *in, clt_distribution **d)
{
    switch (c) {
    case GC_GAMMA_LP:
    case GC_GAMMA_ENT:
    case GC_KL_GAMMA: return clt_gamma_dist(in[0], in[1], 1, d);
    case GC_BETA_LP:
    case GC_BETA_ENT:
    case GC_KL_BETA: return clt_beta_dist(in[0], in[1], 1, d);
    case GC_DIRICHLET_LP: return clt_dirichlet_dist(in[0], 1, d);
    case GC_STUDENT_LP:
    case GC_STUDENT_ENT: return clt_student_t_dist(in[0], in[1], in[1], 1, d);
    case GC_STUDENT_RS_LOC_SCALE: return clt_student_t_dist(in[2], in[0], in[1], 1, d);
    case GC_FS_LP: return clt_fisher_snedecor_dist(in[0], in[1], 1, d);
    case GC_WEIBULL_LP:
    case GC_WEIBULL_RS: return clt_weibull_dist(in[0], in[1], 1, d);
    case GC_PARETO_LP:
    case GC_PARETO_RS: return clt_pareto_dist(in[0], in[1], 1, d);
    case GC_LOGNORMAL_RS: return clt_log_normal_dist(in[0], in[1], 1, d);
    case GC_GUMBEL_RS: return clt_gumbel_dist(in[0], in[1], 1, d);
    case GC_CAUCHY_RS: return clt_cauchy_dist(in[0], in[1], 1, d);
    case GC_HALFNORMAL_RS: return clt_half_normal_dist(in[1], 1, d);
    case GC_RELAXED_RS: return clt_relaxed_bernoulli_dist(in[1], NULL, in[0], 1, d);
    default: return clt_geometric_dist(NULL, in[0], 1, d);
    }
}

static clt_status gc_dist(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    gcase c = *(const gcase *)ctx;
    clt_distribution *d = NULL, *q = NULL;
    clt_generator *g = NULL;
    const int64_t shape[1] = {4};
    clt_status st = make(c, in, &d);
    if (st != CLT_OK)
        return st;
    switch (c) {
    case GC_GAMMA_ENT:
    case GC_BETA_ENT:
    case GC_STUDENT_ENT: st = clt_distribution_entropy(d, out); break;
    case GC_KL_GAMMA:
    case GC_KL_BETA:
        st = make(c, in + 2, &q);
        if (st == CLT_OK)
            st = clt_kl_divergence(d, q, out);
        break;
    case GC_DIRICHLET_LP:
    case GC_GEOMETRIC_LP: st = clt_distribution_log_prob(d, in[1], out); break;
    case GC_LOGNORMAL_RS:
    case GC_GUMBEL_RS:
    case GC_CAUCHY_RS:
    case GC_HALFNORMAL_RS:
    case GC_PARETO_RS:
    case GC_WEIBULL_RS:
    case GC_STUDENT_RS_LOC_SCALE:
    case GC_RELAXED_RS:
        st = clt_generator_new(99, &g);
        if (st == CLT_OK)
            st = clt_distribution_rsample(d, g, 1, shape, out);
        break;
    default: st = clt_distribution_log_prob(d, in[2], out);
    }
    clt_generator_free(g);
    clt_distribution_free(q);
    clt_distribution_free(d);
    return st;
}

Test(distributions2, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double a[3] = {0.7, 2.0, 4.5}, b[3] = {1.3, 0.6, 2.5}, x[3] = {0.4, 1.7, 3.0};
    const double u[3] = {0.2, 0.55, 0.9}, loc[3] = {0.3, -0.8, 1.2}, df[3] = {3.0, 5.5, 9.0};
    const double c6[6] = {0.5, 1.5, 3.0, 2.0, 2.0, 0.7}, s6[6] = {0.2, 0.3, 0.5, 0.6, 0.1, 0.3};
    const double big[3] = {2.0, 2.5, 5.0}, k[3] = {0, 3, 1};
    struct {
        gcase c;
        int n;
        gc_in in[4];
    } cases[] = {
        {GC_GAMMA_LP, 3, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, x, 1}}},
        {GC_BETA_LP, 3, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, u, 1}}},
        {GC_DIRICHLET_LP, 2, {{2, {2, 3}, c6, 1}, {2, {2, 3}, s6, 0}}},
        {GC_STUDENT_LP, 3, {{1, {3}, df, 1}, {1, {3}, b, 1}, {1, {3}, x, 1}}},
        {GC_FS_LP, 3, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, x, 1}}},
        {GC_WEIBULL_LP, 3, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, x, 1}}},
        {GC_PARETO_LP, 3, {{1, {3}, u, 1}, {1, {3}, b, 1}, {1, {3}, big, 1}}},
        {GC_GAMMA_ENT, 2, {{1, {3}, a, 1}, {1, {3}, b, 1}}},
        {GC_BETA_ENT, 2, {{1, {3}, a, 1}, {1, {3}, b, 1}}},
        {GC_STUDENT_ENT, 2, {{1, {3}, df, 1}, {1, {3}, b, 1}}},
        {GC_KL_GAMMA, 4, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, x, 1}, {1, {3}, df, 1}}},
        {GC_KL_BETA, 4, {{1, {3}, a, 1}, {1, {3}, b, 1}, {1, {3}, x, 1}, {1, {3}, df, 1}}},
        {GC_LOGNORMAL_RS, 2, {{1, {3}, loc, 1}, {1, {3}, b, 1}}},
        {GC_GUMBEL_RS, 2, {{1, {3}, loc, 1}, {1, {3}, b, 1}}},
        {GC_CAUCHY_RS, 2, {{1, {3}, loc, 1}, {1, {3}, b, 1}}},
        {GC_HALFNORMAL_RS, 2, {{1, {3}, loc, 0}, {1, {3}, b, 1}}},
        {GC_PARETO_RS, 2, {{1, {3}, a, 1}, {1, {3}, b, 1}}},
        {GC_WEIBULL_RS, 2, {{1, {3}, a, 1}, {1, {3}, b, 1}}},
        /* df's gradient goes through the implicit Gamma one; loc and scale's here */
        {GC_STUDENT_RS_LOC_SCALE, 3, {{1, {3}, loc, 1}, {1, {3}, b, 1}, {1, {3}, df, 0}}},
        {GC_GEOMETRIC_LP, 2, {{1, {3}, loc, 1}, {1, {3}, k, 0}}},
        {GC_RELAXED_RS, 2, {{1, {3}, loc, 1}, {1, {3}, b, 1}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck_tol(dev, gc_dist, &cases[i].c, cases[i].n, cases[i].in, 1e-6, 1e-5, 1e-7);
}

/* ---- validation --------------------------------------------------------------------------- */

Test(distributions2, validation_messages_as_torch)
{
    clt_device *dev = get_device("cpu");
    const double good[3] = {0.5, 1.0, 2.0}, bad[3] = {0.5, -1.0, 2.0}, zero[3] = {0.5, 0, 1};
    const double frac[3] = {0, 1.5, 2}, low[3] = {0.4, 1.5, 3.0};
    clt_tensor *tg = f64(dev, 1, s3, good), *tb = f64(dev, 1, s3, bad), *tz = f64(dev, 1, s3, zero);
    clt_tensor *tf = f64(dev, 1, s3, frac), *tl = f64(dev, 1, s3, low), *t = NULL;
    clt_distribution *d = (clt_distribution *)1;
    assert_error(clt_gamma_dist(tb, tg, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "clt_gamma_dist: Expected parameter concentration (Tensor of shape [3]) of "
                 "distribution Gamma to satisfy the constraint GreaterThan(lower_bound=0.0), "
                 "but found invalid values");
    cr_assert_null(d);
    assert_error(clt_chi2_dist(tb, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter df (Tensor of shape [3]) of distribution Chi2");
    assert_error(clt_dirichlet_dist(tb, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)");
    assert_error(clt_geometric_dist(tz, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter probs (Tensor of shape [3]) of distribution Geometric to be "
                 "positive but found invalid values");
    assert_error(clt_student_t_dist(tg, NULL, tb, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter scale");
    assert_error(clt_poisson_dist(tb, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "GreaterThanEq(lower_bound=0.0)");
    const double one = 1;
    clt_tensor *s = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 0, NULL, &one, &s));
    assert_error(clt_dirichlet_dist(s, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "`concentration` parameter must be at least one-dimensional.");
    /* values outside the supports */
    CHECK(clt_poisson_dist(tg, 1, &d));
    assert_error(clt_distribution_log_prob(d, tf, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Expected value argument (Tensor of shape [3]) to be within the support "
                 "(IntegerGreaterThan(lower_bound=0)) of the distribution Poisson, but found "
                 "invalid values");
    cr_assert_null(t);
    clt_distribution_free(d);
    CHECK(clt_pareto_dist(tg, tg, 1, &d)); /* support [scale, inf) */
    assert_error(clt_distribution_log_prob(d, tl, &t), CLT_ERR_INVALID_ARGUMENT,
                 "GreaterThanEq(lower_bound=scale)");
    CHECK(clt_distribution_log_prob(d, tg, &t));
    clt_tensor_free(t);
    clt_distribution_free(d);
    CHECK(clt_beta_dist(tg, tg, 1, &d));
    assert_error(clt_distribution_log_prob(d, tf, &t), CLT_ERR_INVALID_ARGUMENT,
                 "Interval(lower_bound=0.0, upper_bound=1.0)");
    clt_distribution_free(d);
    /* without validation, HalfNormal's log_prob below 0 is -inf */
    CHECK(clt_half_normal_dist(tg, 0, &d));
    CHECK(clt_distribution_log_prob(d, tb, &t));
    double *h = read_as_f64(t);
    cr_assert(isinf(h[1]) && h[1] < 0 && isfinite(h[0]));
    free(h);
    clt_tensor_free(t);
    clt_distribution_free(d);
    clt_tensor *all[] = {tg, tb, tz, tf, tl, s};
    for (int i = 0; i < 6; i++)
        clt_tensor_free(all[i]);
}
