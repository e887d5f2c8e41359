/* test_distributions5.c: mode, perplexity, enumerate_support and expand
 * against host formulas in double, with torch's refusals; MultivariateNormal
 * from a precision matrix against the density written with P itself;
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
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol), "%s[%zu]: got %.15g, want %.15g",
                  what, i, got[i], want[i]);
    free(got);
    clt_tensor_free(t);
}

static clt_tensor *mode_of(clt_distribution *d)
{
    clt_tensor *m = NULL;
    CHECK(clt_distribution_mode(d, &m));
    return m;
}

/* ---- mode ------------------------------------------------------------------ */

Test(distributions5, mode_of_continuous_families)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3}, s4[1] = {4};
    const double loc[3] = {0.5, -1.0, 2.0}, sc[3] = {0.3, 1.2, 2.0};
    const double c[4] = {0.5, 2.0, 3.0, 0.5}, r[4] = {2.0, 0.5, 1.5, 3.0};
    clt_tensor *a = f64(dev, 1, s3, loc), *b = f64(dev, 1, s3, sc);
    clt_tensor *ca = f64(dev, 1, s4, c), *cb = f64(dev, 1, s4, r);
    clt_distribution *d = NULL;
    double want[4];

    CHECK(clt_normal_dist(a, b, 1, &d));
    expect_values(mode_of(d), loc, 3, 0, 0, "Normal");
    clt_distribution_free(d);

    CHECK(clt_log_normal_dist(a, b, 1, &d));
    for (int i = 0; i < 3; i++)
        want[i] = exp(loc[i] - sc[i] * sc[i]);
    expect_values(mode_of(d), want, 3, 1e-12, 0, "LogNormal");
    clt_distribution_free(d);

    CHECK(clt_uniform_dist(a, b, 0, &d)); /* low < high not asked: validate off */
    for (int i = 0; i < 3; i++)
        want[i] = NAN;
    expect_values(mode_of(d), want, 3, 0, 0, "Uniform");
    clt_distribution_free(d);

    CHECK(clt_exponential_dist(b, 1, &d));
    expect_values(mode_of(d), (double[]){0, 0, 0}, 3, 0, 0, "Exponential");
    clt_distribution_free(d);

    CHECK(clt_pareto_dist(b, a, 0, &d));
    expect_values(mode_of(d), sc, 3, 0, 0, "Pareto");
    clt_distribution_free(d);

    CHECK(clt_gamma_dist(ca, cb, 1, &d));
    for (int i = 0; i < 4; i++)
        want[i] = fmax((c[i] - 1) / r[i], 0);
    expect_values(mode_of(d), want, 4, 1e-12, 0, "Gamma");
    clt_distribution_free(d);

    CHECK(clt_chi2_dist(cb, 1, &d)); /* Gamma(df / 2, 1/2) */
    for (int i = 0; i < 4; i++)
        want[i] = fmax(r[i] - 2, 0);
    expect_values(mode_of(d), want, 4, 1e-12, 0, "Chi2");
    clt_distribution_free(d);

    /* Beta: (a - 1) / (a + b - 2) with a, b >= 1; 1 where both are below 1
     * (torch's one-hot of a row of NaNs); 0 or 1 where one is below 1 */
    const double b1[4] = {0.5, 2.0, 3.0, 0.5}, b0[4] = {0.5, 3.0, 0.5, 3.0};
    clt_tensor *ba = f64(dev, 1, s4, b1), *bb = f64(dev, 1, s4, b0);
    CHECK(clt_beta_dist(ba, bb, 1, &d));
    expect_values(mode_of(d), (double[]){1.0, 1.0 / 3.0, 1.0, 0.0}, 4, 1e-12, 0, "Beta");
    clt_distribution_free(d);

    /* Weibull: scale ((k - 1) / k)^(1 / k) */
    CHECK(clt_weibull_dist(ca, cb, 1, &d));
    for (int i = 0; i < 4; i++)
        want[i] = c[i] * pow((r[i] - 1) / r[i], 1 / r[i]);
    want[1] = c[1] * 1.0; /* k = 1/2: (-1)^2 */
    expect_values(mode_of(d), want, 4, 1e-12, 0, "Weibull");
    clt_distribution_free(d);

    /* FisherSnedecor: NaN where df1 <= 2 */
    CHECK(clt_fisher_snedecor_dist(cb, ca, 1, &d));
    for (int i = 0; i < 4; i++)
        want[i] = r[i] <= 2 ? NAN : (r[i] - 2) / r[i] * c[i] / (c[i] + 2);
    expect_values(mode_of(d), want, 4, 1e-12, 0, "FisherSnedecor");
    clt_distribution_free(d);

    /* StudentT: loc */
    CHECK(clt_student_t_dist(b, a, b, 1, &d));
    expect_values(mode_of(d), loc, 3, 0, 0, "StudentT");
    clt_distribution_free(d);

    /* Dirichlet rows: normalised (c - 1)+, the first category where all < 1 */
    const int64_t s23[2] = {3, 3};
    const double dc[9] = {2.0, 3.0, 0.5, 0.5, 0.3, 0.9, 1.0, 0.5, 0.2};
    clt_tensor *dct = f64(dev, 2, s23, dc);
    CHECK(clt_dirichlet_dist(dct, 1, &d));
    expect_values(mode_of(d), (double[]){1.0 / 3, 2.0 / 3, 0, 1, 0, 0, NAN, NAN, NAN}, 9, 1e-12,
                  0, "Dirichlet");
    clt_distribution_free(d);

    clt_tensor_free(dct);
    clt_tensor_free(ba);
    clt_tensor_free(bb);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(ca);
    clt_tensor_free(cb);
}

Test(distributions5, mode_of_discrete_families)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3}, s23[2] = {2, 3};
    const double p[3] = {0.5, 0.7, 0.2}, n[3] = {3, 5, 4}, pb[3] = {0.3, 1.0, 0.5};
    const double rate[3] = {2.5, 0.3, 4.0};
    clt_tensor *pt = f64(dev, 1, s3, p), *nt = f64(dev, 1, s3, n), *pbt = f64(dev, 1, s3, pb);
    clt_tensor *rt = f64(dev, 1, s3, rate), *m = NULL;
    clt_distribution *d = NULL;
    double want[3];

    CHECK(clt_bernoulli_dist(pt, NULL, 1, &d));
    expect_values(mode_of(d), (double[]){NAN, 1, 0}, 3, 0, 0, "Bernoulli");
    clt_distribution_free(d);

    CHECK(clt_binomial_dist(nt, pbt, NULL, 1, &d));
    for (int i = 0; i < 3; i++)
        want[i] = fmin(floor((n[i] + 1) * pb[i]), n[i]);
    expect_values(mode_of(d), want, 3, 0, 0, "Binomial");
    clt_distribution_free(d);

    CHECK(clt_poisson_dist(rt, 1, &d));
    expect_values(mode_of(d), (double[]){2, 0, 4}, 3, 0, 0, "Poisson");
    clt_distribution_free(d);

    CHECK(clt_negative_binomial_dist(nt, pbt, NULL, 0, &d));
    /* floor((n - 1) p / (1 - p)) clamped at 0 (p = 1 gives inf, p = 1/2 n - 1) */
    m = mode_of(d);
    double *got = read_as_f64(m);
    cr_assert_eq(got[0], floor(2 * 0.3 / 0.7));
    cr_assert_eq(got[2], 3);
    free(got);
    clt_tensor_free(m);
    clt_distribution_free(d);

    CHECK(clt_geometric_dist(pbt, NULL, 1, &d));
    expect_values(mode_of(d), (double[]){0, 0, 0}, 3, 0, 0, "Geometric");
    clt_distribution_free(d);

    /* Categorical: the argmax, int64; OneHotCategorical its one-hot rows */
    const double cp[6] = {0.2, 0.5, 0.3, 0.6, 0.1, 0.3};
    clt_tensor *cpt = f64(dev, 2, s23, cp);
    CHECK(clt_categorical_dist(cpt, NULL, 1, &d));
    m = mode_of(d);
    cr_assert_eq(clt_tensor_dtype(m), CLT_INT64);
    expect_values(m, (double[]){1, 0}, 2, 0, 0, "Categorical");
    clt_distribution_free(d);
    CHECK(clt_one_hot_categorical_dist(cpt, NULL, 1, &d));
    m = mode_of(d);
    cr_assert_eq(clt_tensor_dtype(m), CLT_FLOAT64);
    assert_shape(m, 2, s23);
    expect_values(m, (double[]){0, 1, 0, 1, 0, 0}, 6, 0, 0, "OneHotCategorical");
    clt_distribution_free(d);

    /* Independent: its base's */
    clt_distribution *base = NULL;
    CHECK(clt_poisson_dist(rt, 1, &base));
    CHECK(clt_independent_dist(base, 1, 1, &d));
    expect_values(mode_of(d), (double[]){2, 0, 4}, 3, 0, 0, "Independent");
    clt_distribution_free(d);
    clt_distribution_free(base);

    /* torch's NotImplementedError */
    CHECK(clt_multinomial_dist(3, cpt, NULL, 1, &d));
    m = (clt_tensor *)1;
    assert_error(clt_distribution_mode(d, &m), CLT_ERR_INVALID_ARGUMENT,
                 "Multinomial does not implement mode");
    cr_assert_null(m);
    clt_distribution_free(d);
    CHECK(clt_continuous_bernoulli_dist(pbt, NULL, 0, &d));
    assert_error(clt_distribution_mode(d, &m), CLT_ERR_INVALID_ARGUMENT,
                 "ContinuousBernoulli does not implement mode");
    clt_distribution_free(d);
    assert_error(clt_distribution_mode(NULL, &m), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(m);

    clt_tensor_free(cpt);
    clt_tensor_free(pt);
    clt_tensor_free(nt);
    clt_tensor_free(pbt);
    clt_tensor_free(rt);
}

/* ---- perplexity -------------------------------------------------------------- */

Test(distributions5, perplexity_is_exp_entropy)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3};
    const double loc[3] = {0.5, -1.0, 2.0}, sc[3] = {0.3, 1.2, 2.0};
    clt_tensor *a = f64(dev, 1, s3, loc), *b = f64(dev, 1, s3, sc), *t = NULL;
    clt_distribution *d = NULL;
    double want[3];
    CHECK(clt_normal_dist(a, b, 1, &d));
    CHECK(clt_distribution_perplexity(d, &t));
    for (int i = 0; i < 3; i++)
        want[i] = sc[i] * sqrt(2 * PI * exp(1.0));
    expect_values(t, want, 3, 1e-12, 0, "Normal");
    clt_distribution_free(d);
    CHECK(clt_exponential_dist(b, 1, &d));
    CHECK(clt_distribution_perplexity(d, &t));
    for (int i = 0; i < 3; i++)
        want[i] = exp(1 - log(sc[i]));
    expect_values(t, want, 3, 1e-12, 0, "Exponential");
    clt_distribution_free(d);
    /* FisherSnedecor has no entropy */
    CHECK(clt_fisher_snedecor_dist(b, b, 1, &d));
    t = (clt_tensor *)1;
    assert_error(clt_distribution_perplexity(d, &t), CLT_ERR_INVALID_ARGUMENT, "entropy");
    cr_assert_null(t);
    cr_assert(strncmp(clt_last_error(), "clt_distribution_perplexity: ", 29) == 0, "%s",
              clt_last_error());
    clt_distribution_free(d);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* ---- enumerate_support --------------------------------------------------------- */

Test(distributions5, enumerate_support_values_and_shapes)
{
    clt_device *dev = get_device("cpu");
    const int64_t s23[2] = {2, 3};
    const double p[6] = {0.1, 0.5, 0.9, 0.3, 0.4, 0.3};
    clt_tensor *pt = f64(dev, 2, s23, p), *v = NULL;
    clt_distribution *d = NULL;

    CHECK(clt_bernoulli_dist(pt, NULL, 1, &d));
    cr_assert_eq(clt_distribution_has_enumerate_support(d), 1);
    CHECK(clt_distribution_enumerate_support(d, 0, &v));
    assert_shape(v, 3, (int64_t[]){2, 1, 1});
    cr_assert_eq(clt_tensor_dtype(v), CLT_FLOAT64);
    expect_values(v, (double[]){0, 1}, 2, 0, 0, "Bernoulli");
    CHECK(clt_distribution_enumerate_support(d, 1, &v));
    assert_shape(v, 3, (int64_t[]){2, 2, 3});
    expect_values(v, (double[]){0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, 12, 0, 0, "Bernoulli expanded");
    clt_distribution_free(d);

    /* Categorical over 3 categories, batch [2]: int64 0 .. 2 */
    CHECK(clt_categorical_dist(pt, NULL, 1, &d));
    CHECK(clt_distribution_enumerate_support(d, 1, &v));
    assert_shape(v, 2, (int64_t[]){3, 2});
    cr_assert_eq(clt_tensor_dtype(v), CLT_INT64);
    cr_assert(!clt_requires_grad(v));
    expect_values(v, (double[]){0, 0, 1, 1, 2, 2}, 6, 0, 0, "Categorical");
    clt_distribution_free(d);

    /* OneHotCategorical: eye(3) rows, [3, 1, 3] or [3, 2, 3] */
    CHECK(clt_one_hot_categorical_dist(pt, NULL, 1, &d));
    CHECK(clt_distribution_enumerate_support(d, 0, &v));
    assert_shape(v, 3, (int64_t[]){3, 1, 3});
    expect_values(v, (double[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 0, 0, "OneHotCategorical");
    CHECK(clt_distribution_enumerate_support(d, 1, &v));
    assert_shape(v, 3, (int64_t[]){3, 2, 3});
    double want[18];
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 3; j++)
                want[k * 6 + b * 3 + j] = j == k;
    expect_values(v, want, 18, 0, 0, "OneHotCategorical expanded");
    clt_distribution_free(d);

    /* Binomial: 0 .. n when every count is n; refused otherwise */
    const double four[1] = {4}, n2[2] = {4, 5};
    clt_tensor *nt = f64(dev, 0, NULL, four), *n2t = f64(dev, 1, (int64_t[]){2}, n2);
    clt_tensor *pp = NULL;
    CHECK(clt_narrow(pt, 1, 0, 2, &pp));
    CHECK(clt_binomial_dist(nt, pp, NULL, 1, &d));
    CHECK(clt_distribution_enumerate_support(d, 1, &v));
    assert_shape(v, 3, (int64_t[]){5, 2, 2});
    double bw[20];
    for (int i = 0; i < 20; i++)
        bw[i] = i / 4;
    expect_values(v, bw, 20, 0, 0, "Binomial");
    clt_distribution_free(d);
    CHECK(clt_binomial_dist(n2t, pp, NULL, 1, &d));
    cr_assert_eq(clt_distribution_has_enumerate_support(d), 1);
    v = (clt_tensor *)1;
    assert_error(clt_distribution_enumerate_support(d, 1, &v), CLT_ERR_INVALID_ARGUMENT,
                 "Inhomogeneous total count not supported by `enumerate_support`.");
    cr_assert_null(v);
    clt_distribution_free(d);

    /* Independent: only with reinterpreted_batch_ndims 0 */
    clt_distribution *base = NULL;
    CHECK(clt_bernoulli_dist(pt, NULL, 1, &base));
    CHECK(clt_independent_dist(base, 0, 1, &d));
    cr_assert_eq(clt_distribution_has_enumerate_support(d), 1);
    CHECK(clt_distribution_enumerate_support(d, 1, &v));
    assert_shape(v, 3, (int64_t[]){2, 2, 3});
    clt_tensor_free(v);
    clt_distribution_free(d);
    CHECK(clt_independent_dist(base, 1, 1, &d));
    cr_assert_eq(clt_distribution_has_enumerate_support(d), 0);
    assert_error(clt_distribution_enumerate_support(d, 1, &v), CLT_ERR_INVALID_ARGUMENT,
                 "Enumeration over cartesian product is not implemented");
    clt_distribution_free(d);
    clt_distribution_free(base);

    /* the other families */
    CHECK(clt_normal_dist(pt, pt, 1, &d));
    cr_assert_eq(clt_distribution_has_enumerate_support(d), 0);
    assert_error(clt_distribution_enumerate_support(d, 0, &v), CLT_ERR_INVALID_ARGUMENT,
                 "Normal does not implement enumerate_support");
    cr_assert_null(v);
    clt_distribution_free(d);
    cr_assert_eq(clt_distribution_has_enumerate_support(NULL), -1);

    clt_tensor_free(pp);
    clt_tensor_free(nt);
    clt_tensor_free(n2t);
    clt_tensor_free(pt);
}

/* ---- expand -------------------------------------------------------------------- */

Test(distributions5, expand_shapes_values_and_refusals)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3}, s1_3[2] = {1, 3};
    const double loc[3] = {0.5, -1.0, 2.0}, sc[3] = {0.3, 1.2, 2.0};
    clt_tensor *a = f64(dev, 2, s1_3, loc), *b = f64(dev, 1, s3, sc), *t = NULL;
    clt_distribution *d = NULL, *e = NULL;
    CHECK(clt_normal_dist(a, b, 0, &d));
    const int64_t big[3] = {2, 4, 3};
    CHECK(clt_distribution_expand(d, big, 3, &e));
    cr_assert_str_eq(clt_distribution_name(e), "Normal");
    cr_assert_eq(clt_distribution_batch_ndim(e), 3);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(clt_distribution_batch_shape(e)[k], big[k]);
    /* log_prob at x of shape [4, 3] broadcasts to [2, 4, 3] */
    double x[12], want[24];
    for (int i = 0; i < 12; i++)
        x[i] = 0.3 * i - 1.5;
    clt_tensor *xt = f64(dev, 2, (int64_t[]){4, 3}, x);
    CHECK(clt_distribution_log_prob(e, xt, &t));
    assert_shape(t, 3, big);
    for (int i = 0; i < 24; i++) {
        int j = i % 3;
        double z = (x[i % 12] - loc[j]) / sc[j];
        want[i] = -0.5 * z * z - log(sc[j]) - 0.5 * log(2 * PI);
    }
    expect_values(t, want, 24, 1e-12, 1e-14, "expanded log_prob");
    CHECK(clt_distribution_mean(e, &t));
    assert_shape(t, 3, big);
    clt_tensor_free(t);
    clt_distribution_free(e);

    /* refusals: fewer dims, a size that is neither equal nor from 1 */
    e = (clt_distribution *)1;
    assert_error(clt_distribution_expand(d, (int64_t[]){3}, 1, &e), CLT_ERR_SHAPE_MISMATCH,
                 "clt_distribution_expand");
    cr_assert_null(e);
    assert_error(clt_distribution_expand(d, (int64_t[]){2, 4}, 2, &e), CLT_ERR_SHAPE_MISMATCH,
                 "must match the existing size (3)");
    assert_error(clt_distribution_expand(d, (int64_t[]){-1, 3}, 2, &e), CLT_ERR_INVALID_ARGUMENT,
                 NULL);
    assert_error(clt_distribution_expand(d, NULL, 2, &e), CLT_ERR_NULL_ARGUMENT, NULL);
    int64_t many[CLT_MAX_DIMS + 1];
    for (int k = 0; k <= CLT_MAX_DIMS; k++)
        many[k] = k == CLT_MAX_DIMS ? 3 : 1;
    assert_error(clt_distribution_expand(d, many, CLT_MAX_DIMS + 1, &e), CLT_ERR_TOO_MANY_DIMS,
                 NULL);
    cr_assert_null(e);
    clt_distribution_free(d);

    /* Independent(Normal [2, 3], 1) expanded to [4, 2]: event [3] stays */
    double l6[6], s6[6];
    for (int i = 0; i < 6; i++) {
        l6[i] = 0.4 * i - 1;
        s6[i] = 0.5 + 0.25 * i;
    }
    clt_tensor *l6t = f64(dev, 2, (int64_t[]){2, 3}, l6), *s6t = f64(dev, 2, (int64_t[]){2, 3}, s6);
    clt_distribution *base = NULL;
    CHECK(clt_normal_dist(l6t, s6t, 1, &base));
    CHECK(clt_independent_dist(base, 1, 1, &d));
    CHECK(clt_distribution_expand(d, (int64_t[]){4, 2}, 2, &e));
    cr_assert_eq(clt_distribution_event_ndim(e), 1);
    cr_assert_eq(clt_distribution_event_shape(e)[0], 3);
    CHECK(clt_distribution_log_prob(e, l6t, &t));
    assert_shape(t, 2, (int64_t[]){4, 2});
    double iw[8];
    for (int i = 0; i < 8; i++) {
        iw[i] = 0;
        for (int j = 0; j < 3; j++)
            iw[i] += -log(s6[(i % 2) * 3 + j]) - 0.5 * log(2 * PI);
    }
    expect_values(t, iw, 8, 1e-12, 0, "expanded Independent");
    clt_distribution_free(e);
    clt_distribution_free(d);
    clt_distribution_free(base);

    clt_tensor_free(l6t);
    clt_tensor_free(s6t);
    clt_tensor_free(xt);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* The gradient through an expanded distribution reaches the caller's
 * parameters, summed over the expanded dims. */
Test(distributions5, expand_keeps_the_graph)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3};
    const double loc[3] = {0.5, -1.0, 2.0}, sc[3] = {0.3, 1.2, 2.0};
    clt_tensor *a = f64(dev, 1, s3, loc), *b = f64(dev, 1, s3, sc), *t = NULL, *s = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    clt_distribution *d = NULL, *e = NULL;
    CHECK(clt_normal_dist(a, b, 1, &d));
    CHECK(clt_distribution_expand(d, (int64_t[]){5, 3}, 2, &e));
    clt_distribution_free(d); /* e holds what it needs */
    CHECK(clt_distribution_mean(e, &t));
    CHECK(clt_sum(t, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor *g = NULL;
    CHECK(clt_grad(a, &g));
    cr_assert_not_null(g);
    double *gv = read_as_f64(g);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(gv[i], 5.0);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(t);
    clt_tensor_free(s);
    clt_distribution_free(e);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* ---- MultivariateNormal(precision_matrix) --------------------------------------- */

/* log N(x; mu, P^-1) = -1/2 (x - mu)^T P (x - mu) - n/2 log 2 pi + 1/2 log det P,
 * n = 3, det by cofactors. */
static double host_mvn_lp(const double *x, const double *mu, const double *p)
{
    double q = 0, det = p[0] * (p[4] * p[8] - p[5] * p[7]) - p[1] * (p[3] * p[8] - p[5] * p[6]) +
                        p[2] * (p[3] * p[7] - p[4] * p[6]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            q += (x[i] - mu[i]) * p[i * 3 + j] * (x[j] - mu[j]);
    return -0.5 * q - 1.5 * log(2 * PI) + 0.5 * log(det);
}

Test(distributions5, mvn_from_precision_matrix)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[1] = {3}, s33[2] = {3, 3}, s23[2] = {2, 3};
    const double mu[3] = {0.5, -1.0, 2.0};
    const double p[9] = {2.0, 0.4, -0.3, 0.4, 1.5, 0.2, -0.3, 0.2, 1.1};
    const double x[6] = {0.1, 0.2, 0.3, -1.0, 0.5, 2.5};
    clt_tensor *mt = f64(dev, 1, s3, mu), *pt = f64(dev, 2, s33, p), *xt = f64(dev, 2, s23, x);
    clt_tensor *t = NULL, *c = NULL, *prod = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_multivariate_normal_precision_dist(mt, pt, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "MultivariateNormal");
    CHECK(clt_distribution_log_prob(d, xt, &t));
    double want[2] = {host_mvn_lp(x, mu, p), host_mvn_lp(x + 3, mu, p)};
    expect_values(t, want, 2, 1e-12, 0, "log_prob");
    /* covariance_matrix P = I; scale_tril lower with a positive diagonal */
    CHECK(clt_distribution_covariance_matrix(d, &c));
    CHECK(clt_matmul(c, pt, &prod));
    expect_values(prod, (double[]){1, 0, 0, 0, 1, 0, 0, 0, 1}, 9, 0, 1e-12, "cov P");
    clt_tensor_free(c);
    CHECK(clt_distribution_scale_tril(d, &c));
    double *l = read_as_f64(c);
    cr_assert(l[1] == 0 && l[2] == 0 && l[5] == 0 && l[0] > 0 && l[4] > 0 && l[8] > 0);
    free(l);
    clt_tensor_free(c);
    /* precision_matrix: P as given (torch keeps it), also once expanded */
    CHECK(clt_distribution_precision_matrix(d, &c));
    expect_values(c, p, 9, 0, 0, "precision_matrix");
    clt_distribution *e = NULL;
    CHECK(clt_distribution_expand(d, (int64_t[]){2}, 1, &e));
    CHECK(clt_distribution_precision_matrix(e, &c));
    assert_shape(c, 3, (int64_t[]){2, 3, 3});
    double p2[18];
    memcpy(p2, p, sizeof p);
    memcpy(p2 + 9, p, sizeof p);
    expect_values(c, p2, 18, 0, 0, "expanded precision_matrix");
    CHECK(clt_distribution_log_prob(e, xt, &t));
    expect_values(t, (double[]){host_mvn_lp(x, mu, p), host_mvn_lp(x + 3, mu, p)}, 2, 1e-12, 0,
                  "expanded log_prob");
    clt_distribution_free(e);
    /* entropy: n/2 (1 + log 2 pi) - 1/2 log det P */
    double detp = p[0] * (p[4] * p[8] - p[5] * p[7]) - p[1] * (p[3] * p[8] - p[5] * p[6]) +
                  p[2] * (p[3] * p[7] - p[4] * p[6]);
    CHECK(clt_distribution_entropy(d, &t));
    expect_values(t, (double[]){1.5 * (1 + log(2 * PI)) - 0.5 * log(detp)}, 1, 1e-12, 0,
                  "entropy");
    clt_distribution_free(d);

    /* the checks: not symmetric, not positive-definite, neither or NULL */
    double bad[9];
    memcpy(bad, p, sizeof bad);
    bad[1] = 0.9;
    clt_tensor *bt = f64(dev, 2, s33, bad);
    d = (clt_distribution *)1;
    assert_error(clt_multivariate_normal_precision_dist(mt, bt, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected parameter precision_matrix (Tensor of shape [3, 3]) of distribution "
                 "MultivariateNormal to satisfy the constraint PositiveDefinite()");
    cr_assert_null(d);
    clt_tensor_free(bt);
    memcpy(bad, p, sizeof bad);
    bad[8] = -1;
    bt = f64(dev, 2, s33, bad);
    assert_error(clt_multivariate_normal_precision_dist(mt, bt, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "PositiveDefinite()");
    assert_error(clt_multivariate_normal_precision_dist(mt, bt, 0, &d), CLT_ERR_INVALID_ARGUMENT,
                 "clt_multivariate_normal_precision_dist: ");
    cr_assert_null(d);
    clt_tensor_free(bt);
    assert_error(clt_multivariate_normal_precision_dist(mt, NULL, 1, &d), CLT_ERR_NULL_ARGUMENT,
                 NULL);
    assert_error(clt_multivariate_normal_precision_dist(mt, mt, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "precision_matrix must be at least two-dimensional");
    cr_assert_null(d);

    clt_tensor_free(mt);
    clt_tensor_free(pt);
    clt_tensor_free(xt);
}

/* ---- OneHotCategoricalStraightThrough ------------------------------------------------- */

Test(distributions5, one_hot_straight_through)
{
    clt_device *dev = get_device("cpu");
    const int64_t s23[2] = {2, 3};
    const double p[6] = {0.2, 0.5, 0.3, 0.6, 0.1, 0.3}, w[3] = {1.0, -2.0, 0.5};
    clt_tensor *pt = f64(dev, 2, s23, p), *wt = f64(dev, 1, (int64_t[]){3}, w);
    clt_tensor *r = NULL, *rw = NULL, *s = NULL, *g = NULL, *t = NULL;
    CHECK(clt_set_requires_grad(pt, 1));
    clt_distribution *d = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(3, &gen));
    CHECK(clt_one_hot_categorical_straight_through_dist(pt, NULL, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "OneHotCategoricalStraightThrough");
    cr_assert_eq(clt_distribution_has_rsample(d), 1);
    CHECK(clt_distribution_rsample(d, gen, 1, (int64_t[]){4}, &r));
    assert_shape(r, 3, (int64_t[]){4, 2, 3});
    cr_assert(clt_requires_grad(r));
    double *rv = read_as_f64(r);
    for (int i = 0; i < 8; i++) { /* one-hot rows */
        double sum = 0;
        for (int j = 0; j < 3; j++) {
            cr_assert(rv[i * 3 + j] == 0 || rv[i * 3 + j] == 1, "%g", rv[i * 3 + j]);
            sum += rv[i * 3 + j];
        }
        cr_assert_eq(sum, 1);
    }
    free(rv);
    /* d sum(w r) / d probs: 4 (w - sum(w p)) per row (the rows of probs sum to 1) */
    CHECK(clt_mul(r, wt, &rw));
    CHECK(clt_sum(rw, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(pt, &g));
    double want[6];
    for (int i = 0; i < 2; i++) {
        double wp = 0;
        for (int j = 0; j < 3; j++)
            wp += w[j] * p[i * 3 + j];
        for (int j = 0; j < 3; j++)
            want[i * 3 + j] = 4 * (w[j] - wp);
    }
    expect_values(g, want, 6, 1e-12, 1e-12, "gradient");
    /* the rest is OneHotCategorical's: log_prob, mode */
    const double v[6] = {0, 1, 0, 0, 0, 1};
    clt_tensor *vt = f64(dev, 2, s23, v);
    CHECK(clt_distribution_log_prob(d, vt, &t));
    expect_values(t, (double[]){log(0.5), log(0.3)}, 2, 1e-12, 0, "log_prob");
    expect_values(mode_of(d), (double[]){0, 1, 0, 1, 0, 0}, 6, 0, 0, "mode");
    /* sample: no graph */
    CHECK(clt_distribution_sample(d, gen, 0, NULL, &t));
    cr_assert(!clt_requires_grad(t));
    clt_tensor_free(t);
    /* a value off the support names the family */
    const double half[3] = {0.5, 0.5, 0};
    clt_tensor *ht = f64(dev, 1, (int64_t[]){3}, half);
    assert_error(clt_distribution_log_prob(d, ht, &t), CLT_ERR_INVALID_ARGUMENT,
                 "of the distribution OneHotCategoricalStraightThrough");
    clt_tensor_free(ht);
    clt_distribution_free(d);
    clt_generator_free(gen);
    clt_tensor_free(vt);
    clt_tensor_free(r);
    clt_tensor_free(rw);
    clt_tensor_free(s);
    clt_tensor_free(pt);
    clt_tensor_free(wt);
}

/* ---- Wishart ---------------------------------------------------------------------------- */

/* log W(X; nu, S) for p = 2: -nu (log 2 + log|L|) - mvlgamma(nu / 2, 2)
 * + (nu - 3) / 2 log det X - tr(S^-1 X) / 2, S = L L^T. */
static double host_wishart_lp(double nu, const double *l, const double *x)
{
    double s[4] = {l[0] * l[0], l[0] * l[2], l[0] * l[2], l[2] * l[2] + l[3] * l[3]};
    double ds = s[0] * s[3] - s[1] * s[2], dx = x[0] * x[3] - x[1] * x[2];
    double inv[4] = {s[3] / ds, -s[1] / ds, -s[2] / ds, s[0] / ds};
    double tr = inv[0] * x[0] + inv[1] * x[2] + inv[2] * x[1] + inv[3] * x[3];
    double mvlg = 0.5 * log(PI) + lgamma(nu / 2) + lgamma(nu / 2 - 0.5);
    return -nu * (log(2.0) + log(l[0] * l[3])) - mvlg + (nu - 3) / 2 * log(dx) - tr / 2;
}

Test(distributions5, wishart_against_host_formulas)
{
    clt_device *dev = get_device("cpu");
    const double l[4] = {1.2, 0, 0.4, 0.7}, nu[2] = {2.5, 5.0};
    const double x[4] = {2.0, 0.3, 0.3, 1.5};
    clt_tensor *lt = f64(dev, 2, (int64_t[]){2, 2}, l), *nt = f64(dev, 1, (int64_t[]){2}, nu);
    clt_tensor *xt = f64(dev, 2, (int64_t[]){2, 2}, x), *t = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_wishart_dist(nt, NULL, NULL, lt, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "Wishart");
    cr_assert_eq(clt_distribution_event_ndim(d), 2);
    cr_assert_eq(clt_distribution_batch_ndim(d), 1);
    CHECK(clt_distribution_log_prob(d, xt, &t));
    expect_values(t, (double[]){host_wishart_lp(nu[0], l, x), host_wishart_lp(nu[1], l, x)}, 2,
                  1e-12, 0, "log_prob");
    /* mean nu S, mode (nu - 3) S (NaN for nu <= 3) */
    double sv[4] = {l[0] * l[0], l[0] * l[2], l[0] * l[2], l[2] * l[2] + l[3] * l[3]};
    double want[8];
    for (int i = 0; i < 8; i++)
        want[i] = nu[i / 4] * sv[i % 4];
    CHECK(clt_distribution_mean(d, &t));
    expect_values(t, want, 8, 1e-12, 0, "mean");
    for (int i = 0; i < 8; i++)
        want[i] = i < 4 ? NAN : (nu[1] - 3) * sv[i % 4];
    expect_values(mode_of(d), want, 8, 1e-12, 0, "mode");
    /* variance nu (S_ij^2 + S_ii S_jj) */
    for (int i = 0; i < 8; i++) {
        int r = (i % 4) / 2, c = i % 2;
        want[i] = nu[i / 4] * (sv[i % 4] * sv[i % 4] + sv[r * 3] * sv[c * 3]);
    }
    CHECK(clt_distribution_variance(d, &t));
    expect_values(t, want, 8, 1e-12, 0, "variance");

    /* samples: symmetric positive-definite, their mean near nu S */
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(21, &gen));
    CHECK(clt_distribution_rsample(d, gen, 1, (int64_t[]){4000}, &t));
    assert_shape(t, 4, (int64_t[]){4000, 2, 2, 2});
    double *sm = read_as_f64(t), mean[8] = {0};
    for (int k = 0; k < 4000; k++)
        for (int b = 0; b < 2; b++) {
            const double *m = sm + (k * 2 + b) * 4;
            cr_assert(m[1] == m[2] && m[0] > 0 && m[0] * m[3] - m[1] * m[2] > 0);
            for (int i = 0; i < 4; i++)
                mean[b * 4 + i] += m[i] / 4000;
        }
    for (int i = 0; i < 8; i++)
        cr_assert(fabs(mean[i] - nu[i / 4] * sv[i % 4]) < 0.1 * nu[i / 4] * 1.5,
                  "sample mean[%d] %g, want %g", i, mean[i], nu[i / 4] * sv[i % 4]);
    free(sm);
    clt_tensor_free(t);
    clt_generator_free(gen);
    clt_distribution_free(d);

    /* covariance and precision forms give the same density */
    double cov[4] = {sv[0], sv[1], sv[2], sv[3]}, ds = sv[0] * sv[3] - sv[1] * sv[2];
    double prec[4] = {sv[3] / ds, -sv[1] / ds, -sv[2] / ds, sv[0] / ds};
    clt_tensor *ct = f64(dev, 2, (int64_t[]){2, 2}, cov), *pt = f64(dev, 2, (int64_t[]){2, 2}, prec);
    CHECK(clt_wishart_dist(nt, ct, NULL, NULL, 1, &d));
    CHECK(clt_distribution_log_prob(d, xt, &t));
    expect_values(t, (double[]){host_wishart_lp(nu[0], l, x), host_wishart_lp(nu[1], l, x)}, 2,
                  1e-12, 0, "log_prob (covariance)");
    clt_distribution_free(d);
    CHECK(clt_wishart_dist(nt, NULL, pt, NULL, 1, &d));
    CHECK(clt_distribution_log_prob(d, xt, &t));
    expect_values(t, (double[]){host_wishart_lp(nu[0], l, x), host_wishart_lp(nu[1], l, x)}, 2,
                  1e-10, 0, "log_prob (precision)");
    clt_distribution_free(d);

    /* refusals: df <= p - 1, no matrix, two, a value that is not positive-definite */
    const double small[2] = {0.5, 3.0}, bad[4] = {1.0, 2.0, 2.0, 1.0};
    clt_tensor *st_ = f64(dev, 1, (int64_t[]){2}, small), *bt = f64(dev, 2, (int64_t[]){2, 2}, bad);
    d = (clt_distribution *)1;
    assert_error(clt_wishart_dist(st_, NULL, NULL, lt, 0, &d), CLT_ERR_INVALID_ARGUMENT,
                 "expected to be greater than ndim - 1 = 1");
    cr_assert_null(d);
    assert_error(clt_wishart_dist(nt, NULL, NULL, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Exactly one of covariance_matrix or precision_matrix or scale_tril");
    assert_error(clt_wishart_dist(nt, ct, NULL, lt, 1, &d), CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error(clt_wishart_dist(nt, bt, NULL, NULL, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "PositiveDefinite()");
    cr_assert_null(d);
    CHECK(clt_wishart_dist(nt, NULL, NULL, lt, 1, &d));
    assert_error(clt_distribution_log_prob(d, bt, &t), CLT_ERR_INVALID_ARGUMENT,
                 "within the support (PositiveDefinite()) of the distribution Wishart");
    assert_error(clt_distribution_cdf(d, xt, &t), CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert_null(t);
    clt_distribution_free(d);

    clt_tensor_free(st_);
    clt_tensor_free(bt);
    clt_tensor_free(ct);
    clt_tensor_free(pt);
    clt_tensor_free(lt);
    clt_tensor_free(nt);
    clt_tensor_free(xt);
}

/* ---- gradients ---------------------------------------------------------------------- */

typedef enum { G_PREC_LP, G_PREC_ENT, G_PREC_RS, G_GAMMA_MODE, G_LOGNORMAL_MODE, G_WEIBULL_MODE,
               G_BETA_MODE, G_DIRICHLET_MODE, G_PERPLEXITY, G_EXPAND_LP, G_WISHART_LP,
               G_WISHART_ENT, G_WISHART_RS } gcase;

/* P = A A^T + I from A (so that every perturbation keeps P symmetric
 * positive-definite). */
static clt_status spd_of(const clt_tensor *a, clt_tensor **out)
{
    clt_tensor *at = NULL, *aat = NULL, *id = NULL;
    clt_status st = clt_transpose(a, 0, 1, &at);
    if (st == CLT_OK)
        st = clt_matmul(a, at, &aat);
    if (st == CLT_OK)
        st = clt_eye(clt_tensor_device(a), CLT_FLOAT64, 3, 3, &id);
    if (st == CLT_OK)
        st = clt_add(aat, id, out);
    clt_tensor_free(at);
    clt_tensor_free(aat);
    clt_tensor_free(id);
    return st;
}

static clt_status gc_dist5(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    gcase c = *(const gcase *)ctx;
    clt_distribution *d = NULL, *e = NULL;
    clt_tensor *p = NULL;
    clt_generator *g = NULL;
    clt_status st;
    switch (c) {
    case G_PREC_LP:
    case G_PREC_ENT:
    case G_PREC_RS:
        st = spd_of(in[1], &p);
        if (st == CLT_OK)
            st = clt_multivariate_normal_precision_dist(in[0], p, 1, &d);
        if (st == CLT_OK && c == G_PREC_LP)
            st = clt_distribution_log_prob(d, in[2], out);
        if (st == CLT_OK && c == G_PREC_ENT)
            st = clt_distribution_entropy(d, out);
        if (st == CLT_OK && c == G_PREC_RS && (st = clt_generator_new(5, &g)) == CLT_OK)
            st = clt_distribution_rsample(d, g, 1, (int64_t[]){2}, out);
        break;
    case G_GAMMA_MODE:
    case G_WEIBULL_MODE:
    case G_LOGNORMAL_MODE:
    case G_BETA_MODE:
        st = c == G_GAMMA_MODE       ? clt_gamma_dist(in[0], in[1], 1, &d)
             : c == G_WEIBULL_MODE   ? clt_weibull_dist(in[0], in[1], 1, &d)
             : c == G_LOGNORMAL_MODE ? clt_log_normal_dist(in[0], in[1], 1, &d)
                                     : clt_beta_dist(in[0], in[1], 1, &d);
        if (st == CLT_OK)
            st = clt_distribution_mode(d, out);
        break;
    case G_DIRICHLET_MODE:
        st = clt_dirichlet_dist(in[0], 1, &d);
        if (st == CLT_OK)
            st = clt_distribution_mode(d, out);
        break;
    case G_PERPLEXITY:
        st = clt_gamma_dist(in[0], in[1], 1, &d);
        if (st == CLT_OK)
            st = clt_distribution_perplexity(d, out);
        break;
    case G_WISHART_LP:
    case G_WISHART_ENT:
    case G_WISHART_RS: /* tril() of the input, so that its upper zeros stay zeros */
        st = clt_tril(in[1], 0, &p);
        if (st == CLT_OK)
            st = clt_wishart_dist(in[0], NULL, NULL, p, 1, &d);
        if (st == CLT_OK && c == G_WISHART_LP)
            st = clt_distribution_log_prob(d, in[2], out);
        if (st == CLT_OK && c == G_WISHART_ENT)
            st = clt_distribution_entropy(d, out);
        if (st == CLT_OK && c == G_WISHART_RS && (st = clt_generator_new(9, &g)) == CLT_OK)
            st = clt_distribution_rsample(d, g, 1, (int64_t[]){2}, out);
        break;
    default: /* expand then log_prob */
        st = clt_normal_dist(in[0], in[1], 1, &d);
        if (st == CLT_OK)
            st = clt_distribution_expand(d, (int64_t[]){2, 3}, 2, &e);
        if (st == CLT_OK)
            st = clt_distribution_log_prob(e, in[2], out);
        break;
    }
    clt_generator_free(g);
    clt_tensor_free(p);
    clt_distribution_free(e);
    clt_distribution_free(d);
    return st;
}

Test(distributions5, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double mu[3] = {0.5, -1.0, 2.0};
    const double a[9] = {1.0, 0.2, -0.3, 0.4, 0.8, 0.1, -0.5, 0.3, 1.2};
    const double x[6] = {0.1, 0.2, 0.3, -1.0, 0.5, 2.5};
    const double c1[3] = {1.5, 2.5, 4.0}, c2[3] = {0.7, 1.3, 2.2}, k[3] = {1.5, 2.0, 3.5};
    const double dc[6] = {2.0, 3.0, 1.5, 1.2, 4.0, 2.5};
    const double wdf[2] = {2.5, 5.0}, wl[4] = {1.2, 0, 0.4, 0.7}, wx[4] = {2.0, 0.3, 0.3, 1.5};
    struct {
        gcase c;
        int n;
        gc_in in[3];
    } cases[] = {
        {G_PREC_LP, 3, {{1, {3}, mu, 1}, {2, {3, 3}, a, 1}, {2, {2, 3}, x, 1}}},
        {G_PREC_ENT, 2, {{1, {3}, mu, 0}, {2, {3, 3}, a, 1}}},
        {G_PREC_RS, 2, {{1, {3}, mu, 1}, {2, {3, 3}, a, 1}}},
        {G_GAMMA_MODE, 2, {{1, {3}, c1, 1}, {1, {3}, c2, 1}}},
        {G_WEIBULL_MODE, 2, {{1, {3}, c2, 1}, {1, {3}, k, 1}}},
        {G_LOGNORMAL_MODE, 2, {{1, {3}, mu, 1}, {1, {3}, c2, 1}}},
        {G_BETA_MODE, 2, {{1, {3}, c1, 1}, {1, {3}, k, 1}}},
        {G_DIRICHLET_MODE, 1, {{2, {2, 3}, dc, 1}}},
        {G_PERPLEXITY, 2, {{1, {3}, c1, 1}, {1, {3}, c2, 1}}},
        {G_EXPAND_LP, 3, {{1, {3}, mu, 1}, {1, {3}, c2, 1}, {1, {3}, x, 1}}},
        {G_WISHART_LP, 3, {{1, {2}, wdf, 1}, {2, {2, 2}, wl, 1}, {2, {2, 2}, wx, 1}}},
        {G_WISHART_ENT, 2, {{1, {2}, wdf, 1}, {2, {2, 2}, wl, 1}}},
        {G_WISHART_RS, 2, {{1, {2}, wdf, 0}, {2, {2, 2}, wl, 1}}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck_tol(dev, gc_dist5, &cases[i].c, cases[i].n, cases[i].in, 1e-6, 1e-5, 1e-7);
}

/* Wishart's draws (gamma, then normals) are the generator's on every device:
 * two devices give the same samples for one seed (up to the products'
 * rounding). */
Test(distributions5, wishart_samples_alike_on_two_devices)
{
    clt_device *d1 = get_device("cpu"), *d2 = second_device(d1);
    const double l[9] = {1.2, 0, 0, 0.4, 0.7, 0, -0.3, 0.2, 0.9}, nu[1] = {4.5};
    clt_tensor *x[2];
    for (int k = 0; k < 2; k++) {
        clt_device *dev = k ? d2 : d1;
        clt_tensor *lt = f64(dev, 2, (int64_t[]){3, 3}, l), *nt = f64(dev, 1, (int64_t[]){1}, nu);
        clt_distribution *d = NULL;
        clt_generator *g = NULL;
        CHECK(clt_wishart_dist(nt, NULL, NULL, lt, 1, &d));
        CHECK(clt_generator_new(8, &g));
        CHECK(clt_distribution_sample(d, g, 1, (int64_t[]){50}, &x[k]));
        clt_generator_free(g);
        clt_distribution_free(d);
        clt_tensor_free(lt);
        clt_tensor_free(nt);
    }
    double *h0 = read_as_f64(x[0]), *h1 = read_as_f64(x[1]);
    for (int i = 0; i < 450; i++)
        cr_assert(close_enough(h1[i], h0[i], 1e-12, 1e-12), "draw %d: %.17g vs %.17g", i, h0[i],
                  h1[i]);
    free(h0);
    free(h1);
    clt_tensor_free(x[0]);
    clt_tensor_free(x[1]);
}

/* ---- LKJCholesky -------------------------------------------------------------------------- */

Test(distributions5, lkj_cholesky)
{
    clt_device *dev = get_device("cpu");
    const double c[2] = {0.7, 2.5}, r = 0.6, l22 = 0.8; /* rows (1, 0), (0.6, 0.8) */
    const double v[4] = {1, 0, r, l22};
    clt_tensor *ct = f64(dev, 1, (int64_t[]){2}, c), *vt = f64(dev, 2, (int64_t[]){2, 2}, v);
    clt_tensor *t = NULL;
    clt_distribution *d = NULL;
    CHECK(clt_lkj_cholesky_dist(2, ct, 1, &d));
    cr_assert_str_eq(clt_distribution_name(d), "LKJCholesky");
    cr_assert_eq(clt_distribution_has_rsample(d), 0);
    /* dim 2: 2 (c - 1) log L22 - (log(pi) / 2 + lgamma(c) - lgamma(c + 1/2)) */
    double want[2];
    for (int i = 0; i < 2; i++)
        want[i] = 2 * (c[i] - 1) * log(l22) - (0.5 * log(PI) + lgamma(c[i]) - lgamma(c[i] + 0.5));
    CHECK(clt_distribution_log_prob(d, vt, &t));
    expect_values(t, want, 2, 1e-12, 0, "log_prob");
    clt_distribution_free(d);

    /* samples of dim 4: lower, positive diagonal, unit rows */
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(4, &gen));
    CHECK(clt_lkj_cholesky_dist(4, ct, 1, &d));
    CHECK(clt_distribution_sample(d, gen, 1, (int64_t[]){30}, &t));
    assert_shape(t, 4, (int64_t[]){30, 2, 4, 4});
    double *h = read_as_f64(t);
    for (int m = 0; m < 60; m++)
        for (int i = 0; i < 4; i++) {
            double n2 = 0;
            for (int j = 0; j < 4; j++) {
                double x = h[m * 16 + i * 4 + j];
                if (j > i)
                    cr_assert_eq(x, 0);
                n2 += x * x;
            }
            cr_assert(h[m * 16 + i * 5] > 0);
            cr_assert(fabs(n2 - 1) < 1e-12, "row norm^2 %g", n2);
        }
    free(h);
    /* log_prob of its own samples is finite; entropy and rsample refused */
    CHECK(clt_distribution_log_prob(d, t, &vt));
    h = read_as_f64(vt);
    for (int i = 0; i < 60; i++)
        cr_assert(isfinite(h[i]));
    free(h);
    clt_tensor_free(vt);
    clt_tensor_free(t);
    assert_error(clt_distribution_entropy(d, &t), CLT_ERR_INVALID_ARGUMENT,
                 "LKJCholesky does not implement entropy");
    assert_error(clt_distribution_rsample(d, gen, 0, NULL, &t), CLT_ERR_INVALID_ARGUMENT,
                 "rsample");
    cr_assert_null(t);
    clt_distribution_free(d);
    d = (clt_distribution *)1;
    assert_error(clt_lkj_cholesky_dist(1, ct, 1, &d), CLT_ERR_INVALID_ARGUMENT,
                 "Expected dim to be an integer greater than or equal to 2. Found dim=1.");
    cr_assert_null(d);
    clt_generator_free(gen);
    clt_tensor_free(ct);
}

static clt_status gc_lkj(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_distribution *d = NULL;
    clt_status st = clt_lkj_cholesky_dist(3, in[0], 0, &d);
    if (st == CLT_OK)
        st = clt_distribution_log_prob(d, in[1], out);
    clt_distribution_free(d);
    return st;
}

Test(distributions5, lkj_log_prob_gradient)
{
    clt_device *dev = get_device("cpu");
    const double c[2] = {0.7, 2.5};
    const double v[9] = {1, 0, 0, 0.6, 0.8, 0, 0.48, 0.36, 0.8};
    gc_in ins[2] = {{1, {2}, c, 1}, {2, {3, 3}, v, 1}};
    gradcheck_tol(dev, gc_lkj, NULL, 2, ins, 1e-6, 1e-5, 1e-7);
}
