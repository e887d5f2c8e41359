/* distribution.c: the clt_distribution handle (torch.distributions of
 * PyTorch 1.13): constructors with torch's parameter handling and
 * constraint checks, the shape properties, the support checks of values,
 * and sampling. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "distributions/distributions.h"

static const char *const names[] = {
    [CLT__DIST_NORMAL] = "Normal",
    [CLT__DIST_UNIFORM] = "Uniform",
    [CLT__DIST_BERNOULLI] = "Bernoulli",
    [CLT__DIST_CATEGORICAL] = "Categorical",
    [CLT__DIST_ONE_HOT] = "OneHotCategorical",
    [CLT__DIST_EXPONENTIAL] = "Exponential",
    [CLT__DIST_LAPLACE] = "Laplace",
    [CLT__DIST_MVN] = "MultivariateNormal",
    [CLT__DIST_INDEPENDENT] = "Independent",
    [CLT__DIST_GAMMA] = "Gamma",
    [CLT__DIST_CHI2] = "Chi2",
    [CLT__DIST_BETA] = "Beta",
    [CLT__DIST_DIRICHLET] = "Dirichlet",
    [CLT__DIST_STUDENT_T] = "StudentT",
    [CLT__DIST_FISHER_SNEDECOR] = "FisherSnedecor",
    [CLT__DIST_LOG_NORMAL] = "LogNormal",
    [CLT__DIST_GUMBEL] = "Gumbel",
    [CLT__DIST_CAUCHY] = "Cauchy",
    [CLT__DIST_HALF_NORMAL] = "HalfNormal",
    [CLT__DIST_HALF_CAUCHY] = "HalfCauchy",
    [CLT__DIST_PARETO] = "Pareto",
    [CLT__DIST_WEIBULL] = "Weibull",
    [CLT__DIST_POISSON] = "Poisson",
    [CLT__DIST_GEOMETRIC] = "Geometric",
    [CLT__DIST_NEGATIVE_BINOMIAL] = "NegativeBinomial",
    [CLT__DIST_KUMARASWAMY] = "Kumaraswamy",
    [CLT__DIST_RELAXED_BERNOULLI] = "RelaxedBernoulli",
    [CLT__DIST_BINOMIAL] = "Binomial",
    [CLT__DIST_MULTINOMIAL] = "Multinomial",
    [CLT__DIST_CONTINUOUS_BERNOULLI] = "ContinuousBernoulli",
    [CLT__DIST_VON_MISES] = "VonMises",
    [CLT__DIST_RELAXED_ONE_HOT] = "RelaxedOneHotCategorical",
    [CLT__DIST_MIXTURE] = "MixtureSameFamily",
    [CLT__DIST_LOWRANK_MVN] = "LowRankMultivariateNormal",
    [CLT__DIST_TRANSFORMED] = "TransformedDistribution",
    [CLT__DIST_LOGISTIC_NORMAL] = "LogisticNormal",
    [CLT__DIST_WISHART] = "Wishart",
    [CLT__DIST_LKJ_CHOLESKY] = "LKJCholesky",
};

/* ---- constraints ----------------------------------------------------------
 * Each is checked on the device as torch's constraint.check, reduced to one
 * flag that is read back. */

typedef enum constraint {
    C_REAL,
    C_POSITIVE,
    C_NONNEGATIVE,
    C_UNIT_INTERVAL,
    C_BOOLEAN,
    C_SIMPLEX,
    C_REAL_VECTOR,
    C_INTEGER_INTERVAL, /* 0 .. the last size of d->p[0] minus 1 */
    C_ONE_HOT,
    C_LOWER_CHOLESKY,
    C_SYMMETRIC,
    C_INTERVAL, /* d->p[0] .. d->p[1] */
    C_POSITIVE_VECTOR,
    C_NONNEGATIVE_INTEGER,
    C_GE_P0, /* d->p[0] and above (Pareto's support) */
    C_COUNT, /* >= 0, torch's greater_than_eq(0) of an integer bound */
    C_HALF_OPEN_UNIT,
    C_BINOMIAL,   /* the integers 0 .. d->p[0] */
    C_MULTINOMIAL, /* >= 0 along the last dim, summing to at most d->total_count */
    C_REAL_MATRIX,
    C_CORR_CHOLESKY /* lower Cholesky factors of correlation matrices (unit rows) */
} constraint;

static const char *constraint_name(constraint c, const clt_distribution *d, char *buf, size_t n)
{
    switch (c) {
    case C_REAL: return "Real()";
    case C_POSITIVE: return "GreaterThan(lower_bound=0.0)";
    case C_NONNEGATIVE: return "GreaterThanEq(lower_bound=0.0)";
    case C_UNIT_INTERVAL: return "Interval(lower_bound=0.0, upper_bound=1.0)";
    case C_BOOLEAN: return "Boolean()";
    case C_SIMPLEX: return "Simplex()";
    case C_REAL_VECTOR: return "IndependentConstraint(Real(), 1)";
    case C_INTEGER_INTERVAL:
        snprintf(buf, n, "IntegerInterval(lower_bound=0, upper_bound=%lld)",
                 (long long)(d->p[0]->shape[d->p[0]->ndim - 1] - 1));
        return buf;
    case C_ONE_HOT: return "OneHot()";
    case C_LOWER_CHOLESKY: return "LowerCholesky()";
    case C_SYMMETRIC: return "PositiveDefinite()";
    case C_INTERVAL: return "Interval(lower_bound=low, upper_bound=high)";
    case C_POSITIVE_VECTOR: return "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)";
    case C_NONNEGATIVE_INTEGER: return "IntegerGreaterThan(lower_bound=0)";
    case C_GE_P0: return "GreaterThanEq(lower_bound=scale)";
    case C_COUNT: return "GreaterThanEq(lower_bound=0)";
    case C_HALF_OPEN_UNIT: return "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)";
    case C_BINOMIAL: return "IntegerInterval(lower_bound=0, upper_bound=total_count)";
    case C_MULTINOMIAL:
        snprintf(buf, n, "Multinomial(upper_bound=%lld)", (long long)d->total_count);
        return buf;
    case C_REAL_MATRIX: return "IndependentConstraint(Real(), 2)";
    case C_CORR_CHOLESKY: return "CorrCholesky()";
    }
    return "?";
}

/* ok: a bool tensor made in the caller's scope; *pass whether it is all
 * true. */
static clt_status all_true(const clt_tensor *ok, bool *pass)
{
    clt_tensor *all = NULL;
    double v = 0;
    clt_status st = clt_all(ok, &all);
    if (st == CLT_OK)
        st = clt_tensor_item(all, &v);
    *pass = v != 0;
    return st;
}

/* Whether every element of v satisfies c, computed with autograd off in a
 * scope of its own. */
static clt_status satisfies(constraint c, const clt_tensor *v, const clt_distribution *d,
                            bool *pass)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int was = clt_set_grad_enabled(0);
    clt_tensor *a, *b, *ok = NULL;
    int last = v->ndim - 1;
    switch (c) {
    case C_REAL: CLT__TRY(clt_eq(v, v, &ok)); break;
    case C_POSITIVE: CLT__TRY(clt_gt_scalar(v, 0, &ok)); break;
    case C_NONNEGATIVE: CLT__TRY(clt_ge_scalar(v, 0, &ok)); break;
    case C_UNIT_INTERVAL:
        CLT__TRY(clt_ge_scalar(v, 0, &a));
        CLT__TRY(clt_le_scalar(v, 1, &b));
        CLT__TRY(clt_logical_and(a, b, &ok));
        break;
    case C_BOOLEAN:
    case C_ONE_HOT:
        CLT__TRY(clt_eq_scalar(v, 0, &a));
        CLT__TRY(clt_eq_scalar(v, 1, &b));
        CLT__TRY(clt_logical_or(a, b, &ok));
        if (c == C_ONE_HOT) {
            clt_tensor *s, *one;
            CLT__TRY(clt_sum_dim(v, last, 0, &s));
            CLT__TRY(clt_eq_scalar(s, 1, &one));
            CLT__TRY(all_true(one, pass));
            if (!*pass)
                goto done;
        }
        break;
    case C_SIMPLEX: {
        clt_tensor *s, *dev, *ad;
        CLT__TRY(clt_ge_scalar(v, 0, &a));
        CLT__TRY(clt_sum_dim(v, last, 0, &s));
        CLT__TRY(clt_sub_scalar(s, 1, &dev));
        CLT__TRY(clt_abs(dev, &ad));
        CLT__TRY(clt_lt_scalar(ad, 1e-6, &b));
        CLT__TRY(all_true(b, pass));
        if (!*pass)
            goto done;
        ok = a;
        break;
    }
    case C_REAL_VECTOR:
    case C_REAL_MATRIX: CLT__TRY(clt_eq(v, v, &ok)); break;
    case C_INTEGER_INTERVAL: {
        clt_tensor *r, *z;
        int64_t k = d->p[0]->shape[d->p[0]->ndim - 1];
        CLT__TRY(clt_remainder_scalar(v, 1, &r));
        CLT__TRY(clt_eq_scalar(r, 0, &z));
        CLT__TRY(clt_ge_scalar(v, 0, &a));
        CLT__TRY(clt_le_scalar(v, (double)(k - 1), &b));
        CLT__TRY(clt_logical_and(a, b, &r));
        CLT__TRY(clt_logical_and(r, z, &ok));
        break;
    }
    case C_CORR_CHOLESKY: { /* lower Cholesky, rows of norm 1 within 10 eps dim */
        clt_tensor *nrm, *dev;
        double tol = (v->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON) * 10 *
                     (double)v->shape[last];
        CLT__TRY(clt_vector_norm_dim(v, 2, last, 0, &nrm));
        CLT__TRY(clt_sub_scalar(nrm, 1, &dev));
        CLT__TRY(clt_abs(dev, &dev));
        CLT__TRY(clt_le_scalar(dev, tol, &a));
        CLT__TRY(all_true(a, pass));
        if (!*pass)
            goto done;
    }
        /* fall through */
    case C_LOWER_CHOLESKY: {
        clt_tensor *tr, *diag;
        CLT__TRY(clt_tril(v, 0, &tr));
        CLT__TRY(clt_eq(tr, v, &a));
        CLT__TRY(all_true(a, pass));
        if (!*pass)
            goto done;
        CLT__TRY(clt_diagonal(v, 0, -2, -1, &diag));
        CLT__TRY(clt_gt_scalar(diag, 0, &ok));
        break;
    }
    case C_SYMMETRIC: { /* torch's positive_definite: symmetric, then cholesky_ex's info 0 */
        clt_tensor *t, *l, *info;
        CLT__TRY(clt_transpose(v, -2, -1, &t));
        CLT__TRY(clt_isclose(v, t, 1e-5, 1e-6, 0, &a));
        CLT__TRY(all_true(a, pass));
        if (!*pass)
            goto done;
        CLT__TRY(clt_linalg_cholesky_ex(v, 0, &l, &info));
        CLT__TRY(clt_eq_scalar(info, 0, &ok));
        break;
    }
    case C_INTERVAL:
        CLT__TRY(clt_ge(v, d->p[0], &a));
        CLT__TRY(clt_le(v, d->p[1], &b));
        CLT__TRY(clt_logical_and(a, b, &ok));
        break;
    case C_POSITIVE_VECTOR: CLT__TRY(clt_gt_scalar(v, 0, &ok)); break;
    case C_NONNEGATIVE_INTEGER: {
        clt_tensor *r;
        CLT__TRY(clt_remainder_scalar(v, 1, &r));
        CLT__TRY(clt_eq_scalar(r, 0, &a));
        CLT__TRY(clt_ge_scalar(v, 0, &b));
        CLT__TRY(clt_logical_and(a, b, &ok));
        break;
    }
    case C_GE_P0: CLT__TRY(clt_ge(v, d->p[0], &ok)); break;
    case C_COUNT: CLT__TRY(clt_ge_scalar(v, 0, &ok)); break;
    case C_HALF_OPEN_UNIT:
        CLT__TRY(clt_ge_scalar(v, 0, &a));
        CLT__TRY(clt_lt_scalar(v, 1, &b));
        CLT__TRY(clt_logical_and(a, b, &ok));
        break;
    case C_BINOMIAL: {
        clt_tensor *r;
        CLT__TRY(clt_remainder_scalar(v, 1, &r));
        CLT__TRY(clt_eq_scalar(r, 0, &r));
        CLT__TRY(clt_ge_scalar(v, 0, &a));
        CLT__TRY(clt_le(v, d->p[0], &b));
        CLT__TRY(clt_logical_and(a, b, &a));
        CLT__TRY(clt_logical_and(a, r, &ok));
        break;
    }
    case C_MULTINOMIAL: {
        clt_tensor *s;
        CLT__TRY(clt_sum_dim(v, last, 0, &s));
        CLT__TRY(clt_le_scalar(s, (double)d->total_count, &b));
        CLT__TRY(all_true(b, pass));
        if (!*pass)
            goto done;
        CLT__TRY(clt_ge_scalar(v, 0, &ok));
        break;
    }
    }
    CLT__TRY(all_true(ok, pass));
done:
    clt_set_grad_enabled(was);
    clt_scope_end();
    return st;
}

/* torch's parameter check in Distribution.__init__. */
static clt_status check_param(const char *fn, const clt_distribution *d, const char *what,
                              const clt_tensor *v, constraint c)
{
    bool pass = false;
    clt_status st = satisfies(c, v, d, &pass);
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    if (pass)
        return CLT_OK;
    char cb[96], sb[128];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: Expected parameter %s (Tensor of shape %s) of distribution %s to "
                      "satisfy the constraint %s, but found invalid values",
                      fn, what, clt__shape_str(sb, sizeof sb, v->ndim, v->shape),
                      names[d->kind], constraint_name(c, d, cb, sizeof cb));
}

static constraint support(const clt_distribution *d)
{
    switch (d->kind) {
    case CLT__DIST_UNIFORM: return C_INTERVAL;
    case CLT__DIST_BERNOULLI: return C_BOOLEAN;
    case CLT__DIST_CATEGORICAL: return C_INTEGER_INTERVAL;
    case CLT__DIST_ONE_HOT: return C_ONE_HOT;
    case CLT__DIST_EXPONENTIAL: return C_NONNEGATIVE;
    case CLT__DIST_MVN:
    case CLT__DIST_LOWRANK_MVN: return C_REAL_VECTOR;
    case CLT__DIST_WISHART: return C_SYMMETRIC;
    case CLT__DIST_LKJ_CHOLESKY: return C_CORR_CHOLESKY;
    case CLT__DIST_INDEPENDENT:
    case CLT__DIST_MIXTURE: return support(d->base);
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2:
    case CLT__DIST_HALF_NORMAL:
    case CLT__DIST_HALF_CAUCHY: return C_NONNEGATIVE;
    case CLT__DIST_BETA:
    case CLT__DIST_KUMARASWAMY:
    case CLT__DIST_CONTINUOUS_BERNOULLI:
    case CLT__DIST_RELAXED_BERNOULLI: return C_UNIT_INTERVAL;
    case CLT__DIST_BINOMIAL: return C_BINOMIAL;
    case CLT__DIST_MULTINOMIAL: return C_MULTINOMIAL;
    case CLT__DIST_DIRICHLET:
    case CLT__DIST_RELAXED_ONE_HOT: return C_SIMPLEX;
    case CLT__DIST_FISHER_SNEDECOR:
    case CLT__DIST_LOG_NORMAL:
    case CLT__DIST_WEIBULL: return C_POSITIVE;
    case CLT__DIST_PARETO: return C_GE_P0;
    case CLT__DIST_POISSON:
    case CLT__DIST_GEOMETRIC:
    case CLT__DIST_NEGATIVE_BINOMIAL: return C_NONNEGATIVE_INTEGER;
    default: return C_REAL;
    }
}

clt_status clt__dist_check_value(const char *fn, const clt_distribution *d,
                                 const clt_tensor *value)
{
    if (!d->validate)
        return CLT_OK;
    char s1[128], s2[128];
    int en = d->event_ndim, vn = value->ndim;
    bool event_ok = vn >= en;
    for (int k = 0; event_ok && k < en; k++)
        event_ok = value->shape[vn - en + k] == d->event_shape[k];
    if (!event_ok)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: The right-most size of value must match event_shape: %s vs %s.", fn,
                          clt__shape_str(s1, sizeof s1, vn < en ? vn : en,
                                         value->shape + (vn < en ? 0 : vn - en)),
                          clt__shape_str(s2, sizeof s2, en, d->event_shape));
    int64_t full[2 * CLT_MAX_DIMS];
    int fn_ = d->batch_ndim + en;
    memcpy(full, d->batch_shape, (size_t)d->batch_ndim * sizeof *full);
    memcpy(full + d->batch_ndim, d->event_shape, (size_t)en * sizeof *full);
    for (int i = vn - 1, j = fn_ - 1; i >= 0 && j >= 0; i--, j--)
        if (value->shape[i] != 1 && full[j] != 1 && value->shape[i] != full[j])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Value is not broadcastable with batch_shape+event_shape: %s "
                              "vs %s.",
                              fn, clt__shape_str(s1, sizeof s1, vn, value->shape),
                              clt__shape_str(s2, sizeof s2, fn_, full));
    const clt_distribution *own = d;
    while (own->kind == CLT__DIST_INDEPENDENT || own->kind == CLT__DIST_MIXTURE)
        own = own->base;
    constraint c = support(own);
    bool pass = false;
    clt_status st;
    if (d->kind == CLT__DIST_MIXTURE && vn < CLT_MAX_DIMS) {
        /* the components' support (its parameters [..., k]) checked at the
         * value with a dim of 1 before its event dims, as log_prob reads it */
        clt_tensor *pv = NULL;
        if ((st = clt_scope_begin()) != CLT_OK)
            return st;
        int was = clt_set_grad_enabled(0);
        st = clt_unsqueeze(value, vn - en, &pv);
        if (st == CLT_OK)
            st = satisfies(c, pv, own, &pass);
        clt_set_grad_enabled(was);
        clt_scope_end();
    } else {
        st = satisfies(c, value, own, &pass);
    }
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    if (pass)
        return CLT_OK;
    char cb[96];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: Expected value argument (Tensor of shape %s) to be within the support "
                      "(%s) of the distribution %s, but found invalid values",
                      fn, clt__shape_str(s1, sizeof s1, vn, value->shape),
                      constraint_name(c, own, cb, sizeof cb), clt_distribution_name(d));
}

/* ---- construction ---------------------------------------------------------- */

static clt_status alloc(clt__dist_kind kind, int validate, clt_distribution **out)
{
    clt_distribution *d = clt__calloc(1, sizeof *d);
    if (!d)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory for a distribution");
    d->kind = kind;
    d->refs = 1;
    d->validate = validate != 0;
    *out = d;
    return CLT_OK;
}

void clt_distribution_free(clt_distribution *d)
{
    if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (int k = 0; k < 3; k++)
        clt_tensor_free(d->p[k]);
    clt_distribution_free(d->base);
    clt_distribution_free(d->mix);
    clt_transform_free(d->tf);
    free(d);
}

/* Keeps t (made in the constructor's scope) as parameter k of d. */
static void keep(clt_distribution *d, int k, clt_tensor *t)
{
    clt__scope_disown(t);
    d->p[k] = t;
}

static void set_batch(clt_distribution *d, int ndim, const int64_t *shape)
{
    d->batch_ndim = ndim;
    memcpy(d->batch_shape, shape, (size_t)ndim * sizeof *shape);
}

/* torch's broadcast_all of n floating parameters: each converted to their
 * promoted dtype and expanded to their broadcast shape, recorded, into
 * out[] (in the caller's scope); the shape becomes d's batch shape. */
static clt_status broadcast_all(const char *fn, clt_distribution *d, int n,
                                const clt_tensor *const *t, const char *const *what,
                                clt_tensor **out)
{
    clt_status st;
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_dtype dt = t[0]->dtype;
    for (int k = 0; k < n; k++) {
        if ((st = clt__check_floating(t[k], what[k], fn)) != CLT_OK)
            return st;
        if (k > 0 && (st = clt__same_device(t[0], t[k], fn)) != CLT_OK)
            return st;
        dt = clt_promote_types(dt, t[k]->dtype);
        int64_t prev[CLT_MAX_DIMS];
        memcpy(prev, shape, (size_t)nd * sizeof *prev);
        if ((st = clt__broadcast_shapes(nd, prev, t[k]->ndim, t[k]->shape, &nd, shape, fn)) !=
            CLT_OK)
            return st;
    }
    for (int k = 0; k < n; k++) {
        clt_tensor *c = NULL;
        if (t[k]->dtype != dt && (st = clt__to_dtype_rec(fn, t[k], dt, &c)) != CLT_OK)
            return st;
        if ((st = clt__expand_rec(fn, c ? c : t[k], nd, shape, &out[k])) != CLT_OK)
            return st;
    }
    d->dtype = dt;
    set_batch(d, nd, shape);
    return CLT_OK;
}

/* Ends a constructor: closes its scope, and hands d out or releases it. */
static clt_status finish(const char *fn, clt_status st, clt_distribution *d,
                         clt_distribution **out)
{
    clt_scope_end();
    if (st != CLT_OK) {
        clt_distribution_free(d);
        return clt__error_as(st, fn);
    }
    *out = d;
    return clt__ok();
}

/* The common start: out cleared, the scope opened, d allocated. */
static clt_status start(const char *fn, clt__dist_kind kind, int validate,
                        clt_distribution **d, clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    *d = NULL;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    if ((st = alloc(kind, validate, d)) != CLT_OK)
        clt_scope_end();
    return st;
}

/* Normal, Laplace, Uniform and Exponential: one or two real parameters. */
static clt_status two_params(const char *fn, clt__dist_kind kind, const clt_tensor *a,
                             const clt_tensor *b, const char *const *what, constraint cb,
                             int validate, clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (a == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, what[0]);
    if (b == NULL && what[1])
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, what[1]);
    clt_distribution *d = NULL;
    clt_status st = start(fn, kind, validate, &d, out);
    if (st != CLT_OK)
        return st;
    int n = what[1] ? 2 : 1;
    clt_tensor *p[2] = {NULL, NULL};
    CLT__TRY(broadcast_all(fn, d, n, (const clt_tensor *[]){a, b}, what, p));
    for (int k = 0; k < n; k++)
        keep(d, k, p[k]);
    if (d->validate) {
        if (kind == CLT__DIST_UNIFORM) {
            clt_tensor *lt;
            bool pass = false;
            int was = clt_set_grad_enabled(0);
            st = clt_lt(d->p[0], d->p[1], &lt);
            clt_set_grad_enabled(was);
            CLT__TRY(st);
            CLT__TRY(all_true(lt, &pass));
            if (!pass) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: Uniform is not defined when low>= high", fn);
                goto done;
            }
        } else {
            if (n == 2)
                CLT__TRY(check_param(fn, d, what[0], d->p[0], C_REAL));
            CLT__TRY(check_param(fn, d, what[n - 1], d->p[n - 1], cb));
        }
    }
done:
    return finish(fn, st, d, out);
}

/* The families of up to three parameters broadcast together (torch's
 * broadcast_all), each kept and checked against its constraint. */
static clt_status params(const char *fn, clt__dist_kind kind, int n, const clt_tensor *const *t,
                         const char *const *what, const constraint *c, int validate,
                         clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    for (int k = 0; k < n; k++)
        CLT__REQUIRE_ARG(t[k], fn);
    clt_distribution *d = NULL;
    clt_status st = start(fn, kind, validate, &d, out);
    if (st != CLT_OK)
        return st;
    clt_tensor *p[3] = {NULL, NULL, NULL};
    CLT__TRY(broadcast_all(fn, d, n, t, what, p));
    for (int k = 0; k < n; k++)
        keep(d, k, p[k]);
    for (int k = 0; d->validate && k < n; k++)
        CLT__TRY(check_param(fn, d, what[k], d->p[k], c[k]));
done:
    return finish(fn, st, d, out);
}

clt_status clt_normal_dist(const clt_tensor *loc, const clt_tensor *scale, int validate_args,
                           clt_distribution **out)
{
    return two_params("clt_normal_dist", CLT__DIST_NORMAL, loc, scale,
                      (const char *[]){"loc", "scale"}, C_POSITIVE, validate_args, out);
}

clt_status clt_laplace_dist(const clt_tensor *loc, const clt_tensor *scale, int validate_args,
                            clt_distribution **out)
{
    return two_params("clt_laplace_dist", CLT__DIST_LAPLACE, loc, scale,
                      (const char *[]){"loc", "scale"}, C_POSITIVE, validate_args, out);
}

clt_status clt_uniform_dist(const clt_tensor *low, const clt_tensor *high, int validate_args,
                            clt_distribution **out)
{
    return two_params("clt_uniform_dist", CLT__DIST_UNIFORM, low, high,
                      (const char *[]){"low", "high"}, C_REAL, validate_args, out);
}

clt_status clt_exponential_dist(const clt_tensor *rate, int validate_args, clt_distribution **out)
{
    return two_params("clt_exponential_dist", CLT__DIST_EXPONENTIAL, rate, NULL,
                      (const char *[]){"rate", NULL}, C_POSITIVE, validate_args, out);
}

/* probs clamped to [eps, 1 - eps] of its dtype (torch's clamp_probs). */
static clt_status clamp_probs(const char *fn, const clt_tensor *p, clt_tensor **out)
{
    double eps = p->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON, hi = 1 - eps;
    return clt__clamp_rec(fn, p, &eps, &hi, out);
}

/* Bernoulli, Categorical and OneHotCategorical: probs or logits, both kept
 * as torch's lazy properties give them. */
static clt_status probs_or_logits(const char *fn, clt__dist_kind kind, const clt_tensor *probs,
                                  const clt_tensor *logits, int validate, clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if ((probs == NULL) == (logits == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Either `probs` or `logits` must be specified, but not both.", fn);
    const clt_tensor *given = probs ? probs : logits;
    const char *what = probs ? "probs" : "logits";
    bool binary = kind == CLT__DIST_BERNOULLI || kind == CLT__DIST_GEOMETRIC ||
                  kind == CLT__DIST_RELAXED_BERNOULLI || kind == CLT__DIST_CONTINUOUS_BERNOULLI;
    clt_status st = clt__check_floating(given, what, fn);
    if (st != CLT_OK)
        return st;
    if (!binary && given->ndim < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: `%s` parameter must be at least one-dimensional.", fn, what);
    clt_distribution *d = NULL;
    if ((st = start(fn, kind, validate, &d, out)) != CLT_OK)
        return st;
    d->dtype = given->dtype;
    int last = given->ndim - 1;
    clt_tensor *p, *l, *c, *a, *b;
    if (binary) {
        set_batch(d, given->ndim, given->shape);
        if (probs) {
            CLT__TRY(clt__expand_rec(fn, probs, probs->ndim, probs->shape, &p));
            CLT__TRY(clamp_probs(fn, probs, &c));
            CLT__TRY(clt__log_rec(fn, c, &a));
            CLT__TRY(clt__neg_rec(fn, c, &b));
            CLT__TRY(clt__log1p_rec(fn, b, &b));
            CLT__TRY(clt__sub_rec(fn, a, b, &l));
        } else {
            CLT__TRY(clt__expand_rec(fn, logits, logits->ndim, logits->shape, &l));
            CLT__TRY(clt__sigmoid_rec(fn, logits, &p));
        }
    } else {
        set_batch(d, last, given->shape);
        if (probs) {
            CLT__TRY(clt__sum_dim_rec(fn, probs, last, 1, &a));
            CLT__TRY(clt__div_rec(fn, probs, a, &p));
            CLT__TRY(clamp_probs(fn, p, &c));
            CLT__TRY(clt__log_rec(fn, c, &l));
        } else {
            st = clt_logsumexp(logits, last, 1, &a);
            CLT__TRY(clt__error_as(st, fn));
            CLT__TRY(clt__sub_rec(fn, logits, a, &l));
            CLT__TRY(clt__softmax_rec(fn, l, last, &p));
        }
        if (kind == CLT__DIST_ONE_HOT) {
            d->event_ndim = 1;
            d->event_shape[0] = given->shape[last];
        }
    }
    keep(d, 0, p);
    keep(d, 1, l);
    if (d->validate)
        CLT__TRY(probs ? check_param(fn, d, "probs", p, binary ? C_UNIT_INTERVAL : C_SIMPLEX)
                       : check_param(fn, d, "logits", logits, binary ? C_REAL : C_REAL_VECTOR));
    if (d->validate && probs && kind == CLT__DIST_GEOMETRIC) {
        bool pass = false;
        CLT__TRY(satisfies(C_POSITIVE, p, d, &pass));
        if (!pass) {
            char sb[128];
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Expected parameter probs (Tensor of shape %s) of distribution "
                            "Geometric to be positive but found invalid values",
                            fn, clt__shape_str(sb, sizeof sb, p->ndim, p->shape));
        }
    }
done:
    return finish(fn, st, d, out);
}

clt_status clt_bernoulli_dist(const clt_tensor *probs, const clt_tensor *logits,
                              int validate_args, clt_distribution **out)
{
    return probs_or_logits("clt_bernoulli_dist", CLT__DIST_BERNOULLI, probs, logits,
                           validate_args, out);
}

clt_status clt_categorical_dist(const clt_tensor *probs, const clt_tensor *logits,
                                int validate_args, clt_distribution **out)
{
    return probs_or_logits("clt_categorical_dist", CLT__DIST_CATEGORICAL, probs, logits,
                           validate_args, out);
}

clt_status clt_one_hot_categorical_dist(const clt_tensor *probs, const clt_tensor *logits,
                                        int validate_args, clt_distribution **out)
{
    return probs_or_logits("clt_one_hot_categorical_dist", CLT__DIST_ONE_HOT, probs, logits,
                           validate_args, out);
}

/* torch's _precision_to_scale_tril of P [..., n, n], recorded: Lf the
 * Cholesky factor of P flipped in both dims, L_inv = flip(Lf)^T, and L the
 * solution of L_inv L = I. */
static clt_status precision_to_scale_tril(const char *fn, const clt_tensor *p, clt_tensor **out)
{
    clt_tensor *f, *lf, *li, *id;
    const int dims[2] = {p->ndim - 2, p->ndim - 1};
    clt_status st;
    CLT__TRY(clt_flip(p, dims, 2, &f));
    CLT__TRY(clt_linalg_cholesky(f, 0, &lf));
    CLT__TRY(clt_flip(lf, dims, 2, &f));
    CLT__TRY(clt_transpose(f, -2, -1, &li));
    CLT__TRY(clt_eye(p->dev, p->dtype, p->shape[p->ndim - 1], p->shape[p->ndim - 1], &id));
    return clt_linalg_solve_triangular(li, id, 0, 1, 0, out);
done:
    return st;
}

/* The one matrix of covariance_matrix, precision_matrix and scale_tril
 * given (the others NULL) into *m, named in *what, floating and on the
 * device of p (loc, df: named pname). */
static clt_status one_matrix(const char *fn, const clt_tensor *p, const char *pname,
                             const clt_tensor *cov, const clt_tensor *prec,
                             const clt_tensor *scale_tril, const clt_tensor **m,
                             const char **what)
{
    if ((cov != NULL) + (prec != NULL) + (scale_tril != NULL) != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Exactly one of covariance_matrix or precision_matrix or "
                          "scale_tril may be specified.",
                          fn);
    *m = cov ? cov : prec ? prec : scale_tril;
    *what = cov ? "covariance_matrix" : prec ? "precision_matrix" : "scale_tril";
    clt_status st;
    if ((st = clt__check_floating(p, pname, fn)) != CLT_OK ||
        (st = clt__check_floating(*m, *what, fn)) != CLT_OK)
        return st;
    return clt__same_device(p, *m, fn);
}

/* MultivariateNormal from one of covariance_matrix, precision_matrix and
 * scale_tril (the others NULL). */
static clt_status mvn(const char *fn, const clt_tensor *loc, const clt_tensor *cov,
                      const clt_tensor *prec, const clt_tensor *scale_tril, int validate_args,
                      clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(loc, fn);
    const clt_tensor *m;
    const char *what;
    clt_status st = one_matrix(fn, loc, "loc", cov, prec, scale_tril, &m, &what);
    if (st != CLT_OK)
        return st;
    if (loc->ndim < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: loc must be at least one-dimensional.",
                          fn);
    if (m->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s must be at least two-dimensional, with optional leading "
                          "batch dimensions",
                          fn, what);
    int64_t n = loc->shape[loc->ndim - 1];
    if (m->shape[m->ndim - 1] != n || m->shape[m->ndim - 2] != n) {
        char s1[128], s2[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s of shape %s does not fit loc of shape %s", fn, what,
                          clt__shape_str(s1, sizeof s1, m->ndim, m->shape),
                          clt__shape_str(s2, sizeof s2, loc->ndim, loc->shape));
    }
    int nb = 0;
    int64_t batch[CLT_MAX_DIMS + 1];
    if ((st = clt__broadcast_shapes(m->ndim - 2, m->shape, loc->ndim - 1, loc->shape, &nb, batch,
                                    fn)) != CLT_OK)
        return st;
    if (nb + 1 + (prec != NULL) > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    clt_distribution *d = NULL;
    if ((st = start(fn, CLT__DIST_MVN, validate_args, &d, out)) != CLT_OK)
        return st;
    clt_dtype dt = clt_promote_types(loc->dtype, m->dtype);
    d->dtype = dt;
    set_batch(d, nb, batch);
    d->event_ndim = 1;
    d->event_shape[0] = n;
    clt_tensor *lc = NULL, *mc = NULL, *e, *l;
    if (loc->dtype != dt)
        CLT__TRY(clt__to_dtype_rec(fn, loc, dt, &lc));
    if (m->dtype != dt)
        CLT__TRY(clt__to_dtype_rec(fn, m, dt, &mc));
    batch[nb] = n;
    CLT__TRY(clt__expand_rec(fn, lc ? lc : loc, nb + 1, batch, &e));
    keep(d, 0, e);
    if (d->validate)
        CLT__TRY(check_param(fn, d, "loc", e, C_REAL_VECTOR));
    if (scale_tril) {
        CLT__TRY(clt__expand_rec(fn, mc ? mc : m, m->ndim, m->shape, &l));
        keep(d, 1, l);
        if (d->validate)
            CLT__TRY(check_param(fn, d, what, l, C_LOWER_CHOLESKY));
    } else {
        if (d->validate)
            CLT__TRY(check_param(fn, d, what, mc ? mc : m, C_SYMMETRIC));
        st = prec ? precision_to_scale_tril(fn, mc ? mc : m, &l)
                  : clt_linalg_cholesky(mc ? mc : m, 0, &l);
        if (st == CLT_ERR_INVALID_ARGUMENT && d->validate) {
            char sb[128];
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Expected parameter %s (Tensor of shape %s) of distribution %s "
                            "to satisfy the constraint PositiveDefinite(), but found invalid "
                            "values",
                            fn, what, clt__shape_str(sb, sizeof sb, m->ndim, m->shape),
                            names[d->kind]);
        }
        CLT__TRY(clt__error_as(st, fn));
        keep(d, 1, l);
        if (prec) { /* kept as torch keeps it, expanded to batch + [n, n] */
            clt_tensor *pe;
            batch[nb + 1] = n;
            CLT__TRY(clt__expand_rec(fn, mc ? mc : m, nb + 2, batch, &pe));
            keep(d, 2, pe);
        }
    }
done:
    return finish(fn, st, d, out);
}

clt_status clt_one_hot_categorical_straight_through_dist(const clt_tensor *probs,
                                                         const clt_tensor *logits,
                                                         int validate_args, clt_distribution **out)
{
    clt_status st = probs_or_logits("clt_one_hot_categorical_straight_through_dist",
                                    CLT__DIST_ONE_HOT, probs, logits, validate_args, out);
    if (st == CLT_OK)
        (*out)->straight_through = true;
    return st;
}

clt_status clt_multivariate_normal_dist(const clt_tensor *loc, const clt_tensor *cov,
                                        const clt_tensor *scale_tril, int validate_args,
                                        clt_distribution **out)
{
    return mvn("clt_multivariate_normal_dist", loc, cov, NULL, scale_tril, validate_args, out);
}

clt_status clt_multivariate_normal_precision_dist(const clt_tensor *loc,
                                                  const clt_tensor *precision_matrix,
                                                  int validate_args, clt_distribution **out)
{
    const char *fn = "clt_multivariate_normal_precision_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(precision_matrix, fn);
    return mvn(fn, loc, NULL, precision_matrix, NULL, validate_args, out);
}

clt_status clt_wishart_dist(const clt_tensor *df, const clt_tensor *cov, const clt_tensor *prec,
                            const clt_tensor *scale_tril, int validate_args, clt_distribution **out)
{
    const char *fn = "clt_wishart_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(df, fn);
    const clt_tensor *m;
    const char *what;
    clt_status st = one_matrix(fn, df, "df", cov, prec, scale_tril, &m, &what);
    if (st != CLT_OK)
        return st;
    if (m->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: scale_tril must be at least two-dimensional, with optional "
                          "leading batch dimensions",
                          fn);
    int64_t n = m->shape[m->ndim - 1];
    if (m->shape[m->ndim - 2] != n) {
        char s1[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s of shape %s is not square", fn, what,
                          clt__shape_str(s1, sizeof s1, m->ndim, m->shape));
    }
    int nb = 0;
    int64_t batch[CLT_MAX_DIMS + 2];
    if ((st = clt__broadcast_shapes(m->ndim - 2, m->shape, df->ndim, df->shape, &nb, batch,
                                    fn)) != CLT_OK)
        return st;
    if (nb + 2 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    clt_distribution *d = NULL;
    if ((st = start(fn, CLT__DIST_WISHART, validate_args, &d, out)) != CLT_OK)
        return st;
    clt_dtype dt = clt_promote_types(df->dtype, m->dtype);
    d->dtype = dt;
    set_batch(d, nb, batch);
    d->event_ndim = 2;
    d->event_shape[0] = d->event_shape[1] = n;
    clt_tensor *dc = NULL, *mc = NULL, *e, *l, *k;
    if (df->dtype != dt)
        CLT__TRY(clt__to_dtype_rec(fn, df, dt, &dc));
    if (m->dtype != dt)
        CLT__TRY(clt__to_dtype_rec(fn, m, dt, &mc));
    CLT__TRY(clt__expand_rec(fn, dc ? dc : df, nb, batch, &e));
    keep(d, 0, e);
    { /* torch's ValueError, validating or not: df > n - 1 everywhere (reads it back) */
        bool pass = false;
        int was = clt_set_grad_enabled(0);
        st = clt_le_scalar(e, (double)(n - 1), &k);
        if (st == CLT_OK)
            st = clt_any(k, &k);
        if (st == CLT_OK)
            st = clt_logical_not(k, &k);
        clt_set_grad_enabled(was);
        CLT__TRY(st);
        CLT__TRY(all_true(k, &pass));
        if (!pass) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Value of df expected to be greater than ndim - 1 = %lld.", fn,
                            (long long)(n - 1));
            goto done;
        }
        if (d->validate) {
            char sb[128];
            was = clt_set_grad_enabled(0);
            st = clt_gt_scalar(e, (double)(n - 1), &k);
            clt_set_grad_enabled(was);
            CLT__TRY(st);
            CLT__TRY(all_true(k, &pass));
            if (!pass) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: Expected parameter df (Tensor of shape %s) of distribution "
                                "Wishart to satisfy the constraint GreaterThan(lower_bound=%lld), "
                                "but found invalid values",
                                fn, clt__shape_str(sb, sizeof sb, e->ndim, e->shape),
                                (long long)(n - 1));
                goto done;
            }
        }
    }
    if (scale_tril) {
        CLT__TRY(clt__expand_rec(fn, mc ? mc : m, m->ndim, m->shape, &l));
        if (d->validate)
            CLT__TRY(check_param(fn, d, what, l, C_LOWER_CHOLESKY));
    } else {
        if (d->validate)
            CLT__TRY(check_param(fn, d, what, mc ? mc : m, C_SYMMETRIC));
        st = prec ? precision_to_scale_tril(fn, mc ? mc : m, &l)
                  : clt_linalg_cholesky(mc ? mc : m, 0, &l);
        CLT__TRY(clt__error_as(st, fn));
        if (cov) { /* kept, as torch's covariance_matrix */
            clt_tensor *ce;
            batch[nb] = batch[nb + 1] = n;
            CLT__TRY(clt__expand_rec(fn, mc ? mc : m, nb + 2, batch, &ce));
            keep(d, 2, ce);
        }
    }
    keep(d, 1, l);
done:
    return finish(fn, st, d, out);
}

clt_status clt_lkj_cholesky_dist(int64_t dim, const clt_tensor *concentration, int validate_args,
                                 clt_distribution **out)
{
    const char *fn = "clt_lkj_cholesky_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (dim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected dim to be an integer greater than or equal to 2. Found "
                          "dim=%lld.",
                          fn, (long long)dim);
    CLT__REQUIRE_ARG(concentration, fn);
    if (concentration->ndim + 2 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    clt_status st = params(fn, CLT__DIST_LKJ_CHOLESKY, 1, &concentration,
                           (const char *[]){"concentration"}, (const constraint[]){C_POSITIVE},
                           validate_args, out);
    if (st != CLT_OK)
        return st;
    (*out)->total_count = dim;
    (*out)->event_ndim = 2;
    (*out)->event_shape[0] = (*out)->event_shape[1] = dim;
    return CLT_OK;
}

clt_status clt_lowrank_multivariate_normal_dist(const clt_tensor *loc, const clt_tensor *cov_factor,
                                                const clt_tensor *cov_diag, int validate_args,
                                                clt_distribution **out)
{
    const char *fn = "clt_lowrank_multivariate_normal_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(loc, fn);
    CLT__REQUIRE_ARG(cov_factor, fn);
    CLT__REQUIRE_ARG(cov_diag, fn);
    const clt_tensor *w = cov_factor, *dg = cov_diag;
    clt_status st;
    if ((st = clt__check_floating(loc, "loc", fn)) != CLT_OK ||
        (st = clt__check_floating(w, "cov_factor", fn)) != CLT_OK ||
        (st = clt__check_floating(dg, "cov_diag", fn)) != CLT_OK ||
        (st = clt__same_device(loc, w, fn)) != CLT_OK ||
        (st = clt__same_device(loc, dg, fn)) != CLT_OK)
        return st;
    if (loc->ndim < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: loc must be at least one-dimensional.",
                          fn);
    int64_t n = loc->shape[loc->ndim - 1];
    if (w->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cov_factor must be at least two-dimensional, with optional "
                          "leading batch dimensions",
                          fn);
    if (w->shape[w->ndim - 2] != n)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: cov_factor must be a batch of matrices with shape %lld x m", fn,
                          (long long)n);
    if (dg->ndim < 1 || dg->shape[dg->ndim - 1] != n)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: cov_diag must be a batch of vectors with shape [%lld]", fn,
                          (long long)n);
    int nb = 0, nb2 = 0;
    int64_t b1[CLT_MAX_DIMS + 2], batch[CLT_MAX_DIMS + 2];
    st = clt__broadcast_shapes(loc->ndim - 1, loc->shape, w->ndim - 2, w->shape, &nb2, b1, fn);
    if (st == CLT_OK)
        st = clt__broadcast_shapes(nb2, b1, dg->ndim - 1, dg->shape, &nb, batch, fn);
    if (st != CLT_OK) {
        char s1[128], s2[128], s3[128];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Incompatible batch shapes: loc %s, cov_factor %s, cov_diag %s", fn,
                          clt__shape_str(s1, sizeof s1, loc->ndim, loc->shape),
                          clt__shape_str(s2, sizeof s2, w->ndim, w->shape),
                          clt__shape_str(s3, sizeof s3, dg->ndim, dg->shape));
    }
    if (nb + 2 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    clt_distribution *d = NULL;
    if ((st = start(fn, CLT__DIST_LOWRANK_MVN, validate_args, &d, out)) != CLT_OK)
        return st;
    clt_dtype dt = clt_promote_types(clt_promote_types(loc->dtype, w->dtype), dg->dtype);
    d->dtype = dt;
    set_batch(d, nb, batch);
    d->event_ndim = 1;
    d->event_shape[0] = n;
    const clt_tensor *src[3] = {loc, w, dg};
    clt_tensor *t[3];
    for (int k = 0; k < 3; k++) {
        if (src[k]->dtype != dt)
            CLT__TRY(clt__to_dtype_rec(fn, src[k], dt, &t[k]));
        else
            CLT__TRY(clt__expand_rec(fn, src[k], src[k]->ndim, src[k]->shape, &t[k]));
    }
    batch[nb] = n;
    CLT__TRY(clt__expand_rec(fn, t[0], nb + 1, batch, &t[0]));
    keep(d, 0, t[0]);
    keep(d, 1, t[1]);
    keep(d, 2, t[2]);
    if (d->validate) { /* torch checks the broadcast parameters */
        clt_tensor *e;
        CLT__TRY(check_param(fn, d, "loc", d->p[0], C_REAL_VECTOR));
        batch[nb + 1] = w->shape[w->ndim - 1];
        CLT__TRY(clt__expand_rec(fn, d->p[1], nb + 2, batch, &e));
        CLT__TRY(check_param(fn, d, "cov_factor", e, C_REAL_MATRIX));
        CLT__TRY(clt__expand_rec(fn, d->p[2], nb + 1, batch, &e));
        CLT__TRY(check_param(fn, d, "cov_diag", e, C_POSITIVE_VECTOR));
    }
done:
    return finish(fn, st, d, out);
}

clt_status clt_independent_dist(clt_distribution *base, int reinterpreted_batch_ndims,
                                int validate_args, clt_distribution **out)
{
    const char *fn = "clt_independent_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(base, fn);
    int r = reinterpreted_batch_ndims;
    if (r < 0 || r > base->batch_ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected reinterpreted_batch_ndims <= "
                          "len(base_distribution.batch_shape), actual %d vs %d",
                          fn, r, base->batch_ndim);
    clt_distribution *d = NULL;
    clt_status st = alloc(CLT__DIST_INDEPENDENT, validate_args, &d);
    if (st != CLT_OK)
        return st;
    __atomic_add_fetch(&base->refs, 1, __ATOMIC_ACQ_REL);
    d->base = base;
    d->reinterpreted = r;
    d->dtype = base->dtype;
    set_batch(d, base->batch_ndim - r, base->batch_shape);
    d->event_ndim = r + base->event_ndim;
    memcpy(d->event_shape, base->batch_shape + base->batch_ndim - r, (size_t)r * sizeof(int64_t));
    memcpy(d->event_shape + r, base->event_shape, (size_t)base->event_ndim * sizeof(int64_t));
    *out = d;
    return clt__ok();
}

/* ---- properties ------------------------------------------------------------- */

const char *clt_distribution_name(const clt_distribution *d)
{
    if (d && d->straight_through)
        return "OneHotCategoricalStraightThrough";
    return d ? names[d->kind] : NULL;
}

int clt_distribution_batch_ndim(const clt_distribution *d)
{
    return d ? d->batch_ndim : 0;
}

const int64_t *clt_distribution_batch_shape(const clt_distribution *d)
{
    return d ? d->batch_shape : NULL;
}

int clt_distribution_event_ndim(const clt_distribution *d)
{
    return d ? d->event_ndim : 0;
}

const int64_t *clt_distribution_event_shape(const clt_distribution *d)
{
    return d ? d->event_shape : NULL;
}

static bool has_rsample(const clt_distribution *d)
{
    switch (d->kind) {
    case CLT__DIST_BERNOULLI:
    case CLT__DIST_CATEGORICAL:
    case CLT__DIST_ONE_HOT: return d->straight_through;
    case CLT__DIST_LKJ_CHOLESKY:
    case CLT__DIST_POISSON:
    case CLT__DIST_GEOMETRIC:
    case CLT__DIST_BINOMIAL:
    case CLT__DIST_MULTINOMIAL:
    case CLT__DIST_VON_MISES:
    case CLT__DIST_NEGATIVE_BINOMIAL:
    case CLT__DIST_MIXTURE: return false;
    case CLT__DIST_INDEPENDENT:
    case CLT__DIST_TRANSFORMED:
    case CLT__DIST_LOGISTIC_NORMAL: return has_rsample(d->base);
    default: return true;
    }
}

int clt_distribution_has_rsample(const clt_distribution *d)
{
    return d ? has_rsample(d) : -1;
}

/* ---- sampling ------------------------------------------------------------------ */

/* sample_shape + batch_shape + event_shape into ext (at most CLT_MAX_DIMS). */
static clt_status extended(const char *fn, const clt_distribution *d, int ndim,
                           const int64_t *shape, int *n, int64_t *ext)
{
    if (ndim < 0 || (ndim > 0 && shape == NULL))
        return clt__error(ndim < 0 ? CLT_ERR_INVALID_ARGUMENT : CLT_ERR_NULL_ARGUMENT,
                          "%s: sample_shape of %d dims%s", fn, ndim, ndim < 0 ? "" : " is NULL");
    *n = ndim + d->batch_ndim + d->event_ndim;
    if (*n > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: sample_shape + batch_shape + event_shape has %d dimensions; at "
                          "most %d are supported",
                          fn, *n, CLT_MAX_DIMS);
    for (int k = 0; k < ndim; k++)
        if (shape[k] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: negative sample size %lld", fn,
                              (long long)shape[k]);
    /* (an empty shape may come as NULL: memcpy must not see it) */
    if (ndim > 0)
        memcpy(ext, shape, (size_t)ndim * sizeof *ext);
    if (d->batch_ndim > 0)
        memcpy(ext + ndim, d->batch_shape, (size_t)d->batch_ndim * sizeof *ext);
    if (d->event_ndim > 0)
        memcpy(ext + ndim + d->batch_ndim, d->event_shape, (size_t)d->event_ndim * sizeof *ext);
    return CLT_OK;
}

/* The reparameterised families: a standard draw of the extended shape,
 * moved and scaled by the parameters (recorded). */
static clt_status rsample(const char *fn, const clt_distribution *d, clt_generator *gen, int n,
                          const int64_t *ext, clt_tensor **out)
{
    clt_device *dev = d->p[0]->dev;
    clt_tensor *e, *a, *b, *c;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_NORMAL: /* loc + eps scale */
        CLT__TRY(clt_randn(gen, dev, d->dtype, n, ext, &e));
        CLT__TRY(clt__mul_rec(fn, e, d->p[1], &a));
        return clt__add_rec(fn, d->p[0], a, out);
    case CLT__DIST_UNIFORM: /* low + u (high - low) */
        CLT__TRY(clt_rand(gen, dev, d->dtype, n, ext, &e));
        CLT__TRY(clt__sub_rec(fn, d->p[1], d->p[0], &a));
        CLT__TRY(clt__mul_rec(fn, e, a, &b));
        return clt__add_rec(fn, d->p[0], b, out);
    case CLT__DIST_EXPONENTIAL: /* rate.new(shape).exponential_() / rate */
        CLT__TRY(clt_empty(dev, d->dtype, n, ext, &e));
        CLT__TRY(clt_exponential_(e, gen, 1.0));
        return clt__div_rec(fn, e, d->p[0], out);
    case CLT__DIST_LAPLACE: { /* loc - scale sign(u) log1p(-|u|), u in [eps - 1, 1) */
        double eps = d->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
        CLT__TRY(clt_empty(dev, d->dtype, n, ext, &e));
        CLT__TRY(clt_uniform_(e, gen, eps - 1, 1));
        CLT__TRY(clt__abs_rec(fn, e, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__sign_rec(fn, e, &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &c));
        CLT__TRY(clt__mul_rec(fn, d->p[1], c, &c));
        return clt__sub_rec(fn, d->p[0], c, out);
    }
    case CLT__DIST_LOWRANK_MVN: return clt__dist_lowrank_rsample(fn, d, gen, n, ext, out);
    case CLT__DIST_WISHART: return clt__dist_wishart_rsample(fn, d, gen, n, ext, out);
    case CLT__DIST_MVN: /* loc + L eps */
        CLT__TRY(clt_randn(gen, dev, d->dtype, n, ext, &e));
        CLT__TRY(clt__unsqueeze_rec(fn, e, n, &a));
        CLT__TRY(clt__matmul_rec(fn, d->p[1], a, &b));
        CLT__TRY(clt__squeeze_rec(fn, b, n, &c));
        return clt__add_rec(fn, d->p[0], c, out);
    default:
        return clt__error(CLT_ERR_INTERNAL, "%s: %s has no rsample", fn, names[d->kind]);
    }
done:
    return clt__error_as(st, fn);
}

/* Categorical's draw: multinomial with replacement over the rows of probs,
 * transposed to sample_shape + batch_shape (int64). */
static clt_status categorical(const char *fn, const clt_distribution *d, clt_generator *gen,
                              int nb, const int64_t *ext, clt_tensor **out)
{
    const clt_tensor *p = d->p[0];
    int64_t k = p->shape[p->ndim - 1], rows = 1, draws = 1;
    for (int i = 0; i < d->batch_ndim; i++)
        rows *= d->batch_shape[i];
    for (int i = 0; i < nb; i++)
        draws *= ext[i];
    clt_status st;
    clt_tensor *p2, *s, *t;
    if (rows * draws == 0)
        return clt_zeros(p->dev, CLT_INT64, nb + d->batch_ndim, ext, out);
    CLT__TRY(clt__reshape_rec(fn, p, 2, (int64_t[]){rows, k}, &p2));
    CLT__TRY(clt_multinomial(gen, p2, draws, 1, &s));
    CLT__TRY(clt_transpose(s, 0, 1, &t));
    return clt__reshape_rec(fn, t, nb + d->batch_ndim, ext, out);
done:
    return clt__error_as(st, fn);
}

/* A draw of d for sample_shape + batch + event shape ext (n dims), in the
 * caller's scope. */
static clt_status draw(const char *fn, const clt_distribution *d, clt_generator *gen, int n,
                       const int64_t *ext, clt_tensor **out)
{
    clt_status st;
    clt_tensor *p, *c, *s;
    switch (d->kind) {
    case CLT__DIST_INDEPENDENT: return draw(fn, d->base, gen, n, ext, out);
    case CLT__DIST_BERNOULLI:
        CLT__TRY(clt__expand_rec(fn, d->p[0], n, ext, &p));
        CLT__TRY(clt_contiguous(p, &c));
        CLT__TRY(clt_bernoulli(gen, c, out));
        return CLT_OK;
    case CLT__DIST_CATEGORICAL: return categorical(fn, d, gen, n - d->batch_ndim, ext, out);
    case CLT__DIST_MIXTURE: return clt__dist_mixture_sample(fn, d, gen, n, ext, out);
    case CLT__DIST_TRANSFORMED:
    case CLT__DIST_LOGISTIC_NORMAL: return clt__dist_transformed_sample(fn, d, gen, n, ext, out);
    case CLT__DIST_LKJ_CHOLESKY: return clt__dist_lkj_sample(fn, d, gen, n, ext, out);
    case CLT__DIST_ONE_HOT:
        CLT__TRY(categorical(fn, d, gen, n - d->batch_ndim - 1, ext, &s));
        CLT__TRY(clt_one_hot(s, ext[n - 1], &c));
        if (!d->straight_through) {
            CLT__TRY(clt_to_dtype(c, d->dtype, out));
            return CLT_OK;
        }
        /* sample + (probs - probs.detach()): the sample's values, probs' gradient */
        CLT__TRY(clt_to_dtype(c, d->dtype, &c));
        CLT__TRY(clt_detach(d->p[0], &p));
        CLT__TRY(clt__sub_rec(fn, d->p[0], p, &p));
        return clt__add_rec(fn, c, p, out);
    default:
        if (CLT__DIST_IS2(d->kind))
            return clt__dist2_sample(fn, d, gen, n, ext, out);
        return rsample(fn, d, gen, n, ext, out);
    }
done:
    return clt__error_as(st, fn);
}

static clt_status sample_common(const char *fn, const clt_distribution *d, clt_generator *gen,
                                int ndim, const int64_t *sample_shape, bool reparam,
                                clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    if (reparam && !has_rsample(d))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement rsample", fn,
                          names[d->kind]);
    int n = 0;
    int64_t ext[CLT_MAX_DIMS];
    clt_status st = extended(fn, d, ndim, sample_shape, &n, ext);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    int was = reparam ? 1 : clt_set_grad_enabled(0);
    st = draw(fn, d, gen, n, ext, out);
    if (!reparam)
        clt_set_grad_enabled(was);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_distribution_sample(const clt_distribution *d, clt_generator *gen, int ndim,
                                   const int64_t *sample_shape, clt_tensor **out)
{
    return sample_common("clt_distribution_sample", d, gen, ndim, sample_shape, false, out);
}

clt_status clt_distribution_rsample(const clt_distribution *d, clt_generator *gen, int ndim,
                                    const int64_t *sample_shape, clt_tensor **out)
{
    return sample_common("clt_distribution_rsample", d, gen, ndim, sample_shape, true, out);
}

/* ---- the families of density2.c ---------------------------------------------- */

clt_status clt_gamma_dist(const clt_tensor *concentration, const clt_tensor *rate,
                          int validate_args, clt_distribution **out)
{
    return params("clt_gamma_dist", CLT__DIST_GAMMA, 2,
                  (const clt_tensor *[]){concentration, rate},
                  (const char *[]){"concentration", "rate"},
                  (const constraint[]){C_POSITIVE, C_POSITIVE}, validate_args, out);
}

clt_status clt_chi2_dist(const clt_tensor *df, int validate_args, clt_distribution **out)
{
    const char *fn = "clt_chi2_dist";
    clt_status st = params(fn, CLT__DIST_CHI2, 1, &df, (const char *[]){"df"},
                           (const constraint[]){C_POSITIVE}, validate_args, out);
    if (st != CLT_OK)
        return st;
    /* Gamma(df / 2, 1/2), df kept as the third */
    clt_distribution *d = *out; /* finish hands it out again */
    *out = NULL;
    clt_tensor *c = NULL, *r = NULL;
    if ((st = clt_scope_begin()) != CLT_OK) {
        clt_distribution_free(d);
        return st;
    }
    st = clt__mul_scalar_rec(fn, d->p[0], 0.5, &c);
    if (st == CLT_OK)
        st = clt__error_as(clt_full(d->p[0]->dev, d->dtype, d->batch_ndim, d->batch_shape, 0.5,
                                    &r),
                           fn);
    if (st == CLT_OK) {
        d->p[2] = d->p[0];
        keep(d, 0, c);
        keep(d, 1, r);
    }
    return finish(fn, st, d, out);
}

clt_status clt_beta_dist(const clt_tensor *concentration1, const clt_tensor *concentration0,
                         int validate_args, clt_distribution **out)
{
    return params("clt_beta_dist", CLT__DIST_BETA, 2,
                  (const clt_tensor *[]){concentration1, concentration0},
                  (const char *[]){"concentration1", "concentration0"},
                  (const constraint[]){C_POSITIVE, C_POSITIVE}, validate_args, out);
}

clt_status clt_dirichlet_dist(const clt_tensor *concentration, int validate_args,
                              clt_distribution **out)
{
    const char *fn = "clt_dirichlet_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(concentration, fn);
    clt_status st = clt__check_floating(concentration, "concentration", fn);
    if (st != CLT_OK)
        return st;
    if (concentration->ndim < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: `concentration` parameter must be at least one-dimensional.", fn);
    clt_distribution *d = NULL;
    if ((st = start(fn, CLT__DIST_DIRICHLET, validate_args, &d, out)) != CLT_OK)
        return st;
    clt_tensor *c;
    int last = concentration->ndim - 1;
    d->dtype = concentration->dtype;
    set_batch(d, last, concentration->shape);
    d->event_ndim = 1;
    d->event_shape[0] = concentration->shape[last];
    CLT__TRY(clt__expand_rec(fn, concentration, concentration->ndim, concentration->shape, &c));
    keep(d, 0, c);
    if (d->validate)
        CLT__TRY(check_param(fn, d, "concentration", c, C_POSITIVE_VECTOR));
done:
    return finish(fn, st, d, out);
}

clt_status clt_student_t_dist(const clt_tensor *df, const clt_tensor *loc,
                              const clt_tensor *scale, int validate_args, clt_distribution **out)
{
    const char *fn = "clt_student_t_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(df, fn);
    clt_status st = clt__check_floating(df, "df", fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    /* torch's defaults loc = 0. and scale = 1., numbers of df's dtype */
    clt_tensor *l = NULL, *s = NULL;
    if (!loc)
        st = clt_full(df->dev, df->dtype, 0, NULL, 0.0, &l);
    if (st == CLT_OK && !scale)
        st = clt_full(df->dev, df->dtype, 0, NULL, 1.0, &s);
    if (st == CLT_OK)
        st = params(fn, CLT__DIST_STUDENT_T, 3,
                    (const clt_tensor *[]){df, loc ? loc : l, scale ? scale : s},
                    (const char *[]){"df", "loc", "scale"},
                    (const constraint[]){C_POSITIVE, C_REAL, C_POSITIVE}, validate_args, out);
    clt_scope_end();
    return st == CLT_OK ? clt__ok() : clt__error_as(st, fn);
}

clt_status clt_fisher_snedecor_dist(const clt_tensor *df1, const clt_tensor *df2,
                                    int validate_args, clt_distribution **out)
{
    return params("clt_fisher_snedecor_dist", CLT__DIST_FISHER_SNEDECOR, 2,
                  (const clt_tensor *[]){df1, df2}, (const char *[]){"df1", "df2"},
                  (const constraint[]){C_POSITIVE, C_POSITIVE}, validate_args, out);
}

#define LOC_SCALE(name, kind)                                                              \
    clt_status clt_##name##_dist(const clt_tensor *loc, const clt_tensor *scale,           \
                                 int validate_args, clt_distribution **out)                \
    {                                                                                      \
        return params("clt_" #name "_dist", kind, 2, (const clt_tensor *[]){loc, scale},    \
                      (const char *[]){"loc", "scale"},                                    \
                      (const constraint[]){C_REAL, C_POSITIVE}, validate_args, out);       \
    }
LOC_SCALE(log_normal, CLT__DIST_LOG_NORMAL)
LOC_SCALE(gumbel, CLT__DIST_GUMBEL)
LOC_SCALE(cauchy, CLT__DIST_CAUCHY)

clt_status clt_half_normal_dist(const clt_tensor *scale, int validate_args,
                                clt_distribution **out)
{
    return params("clt_half_normal_dist", CLT__DIST_HALF_NORMAL, 1, &scale,
                  (const char *[]){"scale"}, (const constraint[]){C_POSITIVE}, validate_args,
                  out);
}

clt_status clt_half_cauchy_dist(const clt_tensor *scale, int validate_args,
                                clt_distribution **out)
{
    return params("clt_half_cauchy_dist", CLT__DIST_HALF_CAUCHY, 1, &scale,
                  (const char *[]){"scale"}, (const constraint[]){C_POSITIVE}, validate_args,
                  out);
}

clt_status clt_pareto_dist(const clt_tensor *scale, const clt_tensor *alpha, int validate_args,
                           clt_distribution **out)
{
    return params("clt_pareto_dist", CLT__DIST_PARETO, 2, (const clt_tensor *[]){scale, alpha},
                  (const char *[]){"scale", "alpha"},
                  (const constraint[]){C_POSITIVE, C_POSITIVE}, validate_args, out);
}

clt_status clt_weibull_dist(const clt_tensor *scale, const clt_tensor *concentration,
                            int validate_args, clt_distribution **out)
{
    return params("clt_weibull_dist", CLT__DIST_WEIBULL, 2,
                  (const clt_tensor *[]){scale, concentration},
                  (const char *[]){"scale", "concentration"},
                  (const constraint[]){C_POSITIVE, C_POSITIVE}, validate_args, out);
}

clt_status clt_poisson_dist(const clt_tensor *rate, int validate_args, clt_distribution **out)
{
    return params("clt_poisson_dist", CLT__DIST_POISSON, 1, &rate, (const char *[]){"rate"},
                  (const constraint[]){C_NONNEGATIVE}, validate_args, out);
}

clt_status clt_geometric_dist(const clt_tensor *probs, const clt_tensor *logits,
                              int validate_args, clt_distribution **out)
{
    return probs_or_logits("clt_geometric_dist", CLT__DIST_GEOMETRIC, probs, logits,
                           validate_args, out);
}

clt_status clt_kumaraswamy_dist(const clt_tensor *concentration1,
                                const clt_tensor *concentration0, int validate_args,
                                clt_distribution **out)
{
    return params("clt_kumaraswamy_dist", CLT__DIST_KUMARASWAMY, 2,
                  (const clt_tensor *[]){concentration1, concentration0},
                  (const char *[]){"concentration1", "concentration0"},
                  (const constraint[]){C_POSITIVE, C_POSITIVE}, validate_args, out);
}

/* A family of a count and probs or logits (NegativeBinomial, Binomial):
 * the two broadcast, logits from probs as torch's probs_to_logits (or
 * probs from logits), kept as p[0] (the count), p[1] (probs) and p[2]
 * (logits); validation of the count and the probs with the family's
 * constraints. */
static clt_status count_probs_dist(const char *fn, clt__dist_kind kind,
                                   const clt_tensor *total_count, const clt_tensor *probs,
                                   const clt_tensor *logits,
                                   constraint count_c, constraint probs_c, int validate_args,
                                   clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(total_count, fn);
    if ((probs == NULL) == (logits == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Either `probs` or `logits` must be specified, but not both.", fn);
    const clt_tensor *given = probs ? probs : logits;
    const char *what[2] = {"total_count", probs ? "probs" : "logits"};
    clt_distribution *d = NULL;
    clt_status st = start(fn, kind, validate_args, &d, out);
    if (st != CLT_OK)
        return st;
    clt_tensor *t[2] = {NULL, NULL}, *p, *l, *c, *a, *b;
    CLT__TRY(broadcast_all(fn, d, 2, (const clt_tensor *[]){total_count, given}, what, t));
    if (probs) { /* logits = log(p) - log1p(-p) of p clamped, torch's probs_to_logits */
        p = t[1];
        CLT__TRY(clamp_probs(fn, p, &c));
        CLT__TRY(clt__log_rec(fn, c, &a));
        CLT__TRY(clt__neg_rec(fn, c, &b));
        CLT__TRY(clt__log1p_rec(fn, b, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &l));
    } else {
        l = t[1];
        CLT__TRY(clt__sigmoid_rec(fn, l, &p));
    }
    keep(d, 0, t[0]);
    keep(d, 1, p);
    keep(d, 2, l);
    if (d->validate) {
        CLT__TRY(check_param(fn, d, "total_count", d->p[0], count_c));
        CLT__TRY(probs ? check_param(fn, d, "probs", p, probs_c)
                       : check_param(fn, d, "logits", l, C_REAL));
    }
done:
    return finish(fn, st, d, out);
}

clt_status clt_negative_binomial_dist(const clt_tensor *total_count, const clt_tensor *probs,
                                      const clt_tensor *logits, int validate_args,
                                      clt_distribution **out)
{
    return count_probs_dist("clt_negative_binomial_dist", CLT__DIST_NEGATIVE_BINOMIAL,
                            total_count, probs, logits, C_COUNT, C_HALF_OPEN_UNIT,
                            validate_args, out);
}

/* RelaxedBernoulli's and RelaxedOneHotCategorical's temperature, kept as
 * it is (torch neither broadcasts nor checks it) in the parameters' dtype
 * as d->p[2]; its shape must broadcast to the batch shape
 * (CLT_ERR_SHAPE_MISMATCH otherwise).  On failure d is released and *out
 * cleared. */
static clt_status keep_temperature(const char *fn, clt_distribution *d,
                                   const clt_tensor *temperature, clt_distribution **out)
{
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *t = NULL;
    bool fits = true;
    clt_status st = clt__same_device(d->p[0], temperature, fn);
    if (st == CLT_OK)
        st = clt__broadcast_shapes(d->batch_ndim, d->batch_shape, temperature->ndim,
                                   temperature->shape, &nd, shape, fn);
    if (st == CLT_OK) {
        fits = nd == d->batch_ndim;
        for (int k = 0; fits && k < nd; k++)
            fits = shape[k] == d->batch_shape[k];
        if (!fits) {
            char s1[128], s2[128];
            st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "%s: temperature of shape %s does not broadcast to the batch shape %s",
                            fn, clt__shape_str(s1, sizeof s1, temperature->ndim, temperature->shape),
                            clt__shape_str(s2, sizeof s2, d->batch_ndim, d->batch_shape));
        }
    }
    if (st == CLT_OK && (st = clt_scope_begin()) == CLT_OK) {
        if (temperature->dtype != d->dtype)
            st = clt__to_dtype_rec(fn, temperature, d->dtype, &t);
        else
            st = clt__expand_rec(fn, temperature, temperature->ndim, temperature->shape, &t);
        if (st == CLT_OK)
            keep(d, 2, t);
        clt_scope_end();
    }
    if (st == CLT_OK)
        return clt__ok();
    clt_distribution_free(d);
    *out = NULL;
    return st;
}

clt_status clt_relaxed_bernoulli_dist(const clt_tensor *temperature, const clt_tensor *probs,
                                      const clt_tensor *logits, int validate_args,
                                      clt_distribution **out)
{
    const char *fn = "clt_relaxed_bernoulli_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(temperature, fn);
    clt_status st = clt__check_floating(temperature, "temperature", fn);
    if (st != CLT_OK)
        return st;
    if ((st = probs_or_logits(fn, CLT__DIST_RELAXED_BERNOULLI, probs, logits, validate_args,
                              out)) != CLT_OK)
        return st;
    return keep_temperature(fn, *out, temperature, out);
}

/* ---- the families of density3.c ---------------------------------------------- */

clt_status clt_binomial_dist(const clt_tensor *total_count, const clt_tensor *probs,
                             const clt_tensor *logits, int validate_args, clt_distribution **out)
{
    return count_probs_dist("clt_binomial_dist", CLT__DIST_BINOMIAL, total_count, probs, logits,
                            C_NONNEGATIVE_INTEGER, C_UNIT_INTERVAL, validate_args, out);
}

clt_status clt_multinomial_dist(int64_t total_count, const clt_tensor *probs,
                                const clt_tensor *logits, int validate_args,
                                clt_distribution **out)
{
    const char *fn = "clt_multinomial_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (total_count < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: total_count must be non-negative, got %lld", fn,
                          (long long)total_count);
    clt_status st = probs_or_logits(fn, CLT__DIST_CATEGORICAL, probs, logits, validate_args, out);
    if (st != CLT_OK)
        return st;
    clt_distribution *d = *out;
    d->kind = CLT__DIST_MULTINOMIAL;
    d->total_count = total_count;
    d->event_ndim = 1;
    d->event_shape[0] = d->p[0]->shape[d->p[0]->ndim - 1];
    return CLT_OK;
}

clt_status clt_continuous_bernoulli_dist(const clt_tensor *probs, const clt_tensor *logits,
                                         int validate_args, clt_distribution **out)
{
    const char *fn = "clt_continuous_bernoulli_dist";
    /* Bernoulli's handling; the probs then clamped to [eps, 1 - eps], as
     * torch's (given logits: clamp_probs(sigmoid(logits))) */
    clt_status st = probs_or_logits(fn, CLT__DIST_CONTINUOUS_BERNOULLI, probs, logits,
                                    validate_args, out);
    if (st != CLT_OK)
        return st;
    clt_distribution *d = *out; /* finish hands it out again */
    *out = NULL;
    clt_tensor *c = NULL;
    if ((st = clt_scope_begin()) != CLT_OK) {
        clt_distribution_free(d);
        return st;
    }
    st = clamp_probs(fn, d->p[0], &c);
    if (st == CLT_OK) {
        clt_tensor_free(d->p[0]);
        keep(d, 0, c);
    }
    return finish(fn, st, d, out);
}

clt_status clt_von_mises_dist(const clt_tensor *loc, const clt_tensor *concentration,
                              int validate_args, clt_distribution **out)
{
    return params("clt_von_mises_dist", CLT__DIST_VON_MISES, 2,
                  (const clt_tensor *[]){loc, concentration},
                  (const char *[]){"loc", "concentration"},
                  (const constraint[]){C_REAL, C_POSITIVE}, validate_args, out);
}

clt_status clt_relaxed_one_hot_categorical_dist(const clt_tensor *temperature,
                                                const clt_tensor *probs, const clt_tensor *logits,
                                                int validate_args, clt_distribution **out)
{
    const char *fn = "clt_relaxed_one_hot_categorical_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(temperature, fn);
    clt_status st = clt__check_floating(temperature, "temperature", fn);
    if (st != CLT_OK)
        return st;
    if ((st = probs_or_logits(fn, CLT__DIST_CATEGORICAL, probs, logits, validate_args, out)) !=
        CLT_OK)
        return st;
    clt_distribution *d = *out;
    d->kind = CLT__DIST_RELAXED_ONE_HOT;
    d->event_ndim = 1;
    d->event_shape[0] = d->p[0]->shape[d->p[0]->ndim - 1];
    return keep_temperature(fn, d, temperature, out);
}
