/* generic.c: the methods torch's Distribution gives every family beside
 * its densities: mode, perplexity, enumerate_support and expand. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "distributions/distributions.h"

static clt_status refuse(const char *fn, const clt_distribution *d, const char *what)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement %s", fn,
                      clt_distribution_name(d), what);
}

/* t with value where mask holds (mask of t's shape or broadcasting to it),
 * recorded. */
static clt_status fill_where(const char *fn, const clt_tensor *t, const clt_tensor *mask,
                             double value, clt_tensor **out)
{
    clt_tensor *me;
    clt_status st = clt__expand_rec(fn, mask, t->ndim, t->shape, &me);
    if (st != CLT_OK)
        return st;
    return clt__masked_fill_rec(fn, t, me, value, out);
}

/* A bool mask of x compared with s (op: 0 <, 1 <=, 2 ==), never recorded. */
static clt_status compare(const char *fn, const clt_tensor *x, int op, double s, clt_tensor **out)
{
    int was = clt_set_grad_enabled(0);
    clt_status st = op == 0   ? clt_lt_scalar(x, s, out)
                    : op == 1 ? clt_le_scalar(x, s, out)
                              : clt_eq_scalar(x, s, out);
    clt_set_grad_enabled(was);
    return clt__error_as(st, fn);
}

/* Dirichlet's mode over the last dim of c (torch's: (c - 1).clamp(min=0)
 * normalised; where every entry of a row is below 1, the one-hot vector of
 * that row's argmax, which torch takes over a row of NaNs (0 / 0): the
 * first entry). */
static clt_status dirichlet_mode(const char *fn, const clt_tensor *c, clt_tensor **out)
{
    clt_tensor *a, *s, *m, *lt, *all, *idx, *first, *pick;
    double zero = 0;
    int last = c->ndim - 1;
    clt_status st;
    CLT__TRY(clt__sub_scalar_rec(fn, c, 1, &a));
    CLT__TRY(clt__clamp_rec(fn, a, &zero, NULL, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, last, 1, &s));
    CLT__TRY(clt__div_rec(fn, a, s, &m));
    CLT__TRY(compare(fn, c, 0, 1, &lt));
    CLT__TRY(clt__error_as(clt_all_dim(lt, last, 1, &all), fn));
    CLT__TRY(clt__error_as(clt_arange(c->dev, CLT_INT64, 0, (double)c->shape[last], 1, &idx), fn));
    CLT__TRY(compare(fn, idx, 2, 0, &first));
    CLT__TRY(clt__error_as(clt_logical_and(all, first, &pick), fn));
    CLT__TRY(fill_where(fn, m, all, 0, &m));
    CLT__TRY(clt__error_as(clt_to_dtype(pick, c->dtype, &pick), fn));
    return clt__add_rec(fn, m, pick, out);
done:
    return st;
}

/* The mode of every family, in the caller's scope. */
static clt_status mode(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b, *k;
    double zero = 0;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_NORMAL:
    case CLT__DIST_LAPLACE:
    case CLT__DIST_CAUCHY:
    case CLT__DIST_GUMBEL:
    case CLT__DIST_VON_MISES:
    case CLT__DIST_MVN:
    case CLT__DIST_LOWRANK_MVN:
    case CLT__DIST_PARETO: /* loc (Pareto: scale) */
        return clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out);
    case CLT__DIST_STUDENT_T: return clt__expand_rec(fn, p[1], p[1]->ndim, p[1]->shape, out);
    case CLT__DIST_UNIFORM: return clt__mul_scalar_rec(fn, p[1], NAN, out);
    case CLT__DIST_EXPONENTIAL:
    case CLT__DIST_HALF_NORMAL:
    case CLT__DIST_HALF_CAUCHY:
    case CLT__DIST_GEOMETRIC: /* zeros_like, no graph */
        return clt__error_as(clt_zeros(p[0]->dev, d->dtype, d->batch_ndim, d->batch_shape, out),
                             fn);
    case CLT__DIST_LOG_NORMAL: /* exp(loc - scale^2) */
        CLT__TRY(clt__square_rec(fn, p[1], &a));
        CLT__TRY(clt__sub_rec(fn, p[0], a, &a));
        return clt__exp_rec(fn, a, out);
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: /* ((concentration - 1) / rate).clamp(min=0) */
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 1, &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        return clt__clamp_rec(fn, a, &zero, NULL, out);
    case CLT__DIST_BETA: { /* the Dirichlet's of [c1, c0], its first entry */
        clt_tensor *c;
        CLT__TRY(clt__stack_rec(fn, (const clt_tensor *const[]){p[0], p[1]}, 2, p[0]->ndim, &c));
        CLT__TRY(dirichlet_mode(fn, c, &a));
        CLT__TRY(clt__narrow_rec(fn, a, a->ndim - 1, 0, 1, &a));
        return clt__squeeze_rec(fn, a, a->ndim - 1, out);
    }
    case CLT__DIST_DIRICHLET: return dirichlet_mode(fn, p[0], out);
    case CLT__DIST_FISHER_SNEDECOR: /* (df1 - 2) / df1 df2 / (df2 + 2), NaN where df1 <= 2 */
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 2, &a));
        CLT__TRY(clt__div_rec(fn, a, p[0], &a));
        CLT__TRY(clt__add_scalar_rec(fn, p[1], 2, &b));
        CLT__TRY(clt__div_rec(fn, p[1], b, &b));
        CLT__TRY(clt__mul_rec(fn, a, b, &a));
        CLT__TRY(compare(fn, p[0], 1, 2, &k));
        return fill_where(fn, a, k, NAN, out);
    case CLT__DIST_KUMARASWAMY: /* torch's formula: exp(log1p(-c0) / c0 - log1p(-c0 c1)),
                                 * NaN where c0 < 1 or c1 < 1 */
        CLT__TRY(clt__neg_rec(fn, p[1], &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        CLT__TRY(clt__mul_rec(fn, p[0], p[1], &b));
        CLT__TRY(clt__neg_rec(fn, b, &b));
        CLT__TRY(clt__log1p_rec(fn, b, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(compare(fn, p[0], 0, 1, &k));
        CLT__TRY(compare(fn, p[1], 0, 1, &b));
        CLT__TRY(clt__error_as(clt_logical_or(k, b, &k), fn));
        CLT__TRY(fill_where(fn, a, k, NAN, &a));
        return clt__exp_rec(fn, a, out);
    case CLT__DIST_WEIBULL: /* scale ((k - 1) / k) ** (1 / k) */
        CLT__TRY(clt__sub_scalar_rec(fn, p[1], 1, &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &b));
        CLT__TRY(clt__pow_rec(fn, a, b, &a));
        return clt__mul_rec(fn, p[0], a, out);
    case CLT__DIST_POISSON: return clt__floor_rec(fn, p[0], out);
    case CLT__DIST_NEGATIVE_BINOMIAL: /* floor((n - 1) exp(logits)).clamp(min=0) */
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 1, &a));
        CLT__TRY(clt__exp_rec(fn, p[2], &b));
        CLT__TRY(clt__mul_rec(fn, a, b, &a));
        CLT__TRY(clt__floor_rec(fn, a, &a));
        return clt__clamp_rec(fn, a, &zero, NULL, out);
    case CLT__DIST_BINOMIAL: /* floor((n + 1) p).clamp(max=n) */
        CLT__TRY(clt__add_scalar_rec(fn, p[0], 1, &a));
        CLT__TRY(clt__mul_rec(fn, a, p[1], &a));
        CLT__TRY(clt__floor_rec(fn, a, &a));
        return clt__minimum_rec(fn, a, p[0], out);
    case CLT__DIST_BERNOULLI: { /* (probs >= 0.5), NaN where probs == 0.5; no graph */
        int was = clt_set_grad_enabled(0);
        st = clt_ge_scalar(p[0], 0.5, &a);
        if (st == CLT_OK)
            st = clt_to_dtype(a, d->dtype, &a);
        if (st == CLT_OK)
            st = clt_eq_scalar(p[0], 0.5, &k);
        if (st == CLT_OK)
            st = clt_masked_fill(a, k, NAN, out);
        clt_set_grad_enabled(was);
        return clt__error_as(st, fn);
    }
    case CLT__DIST_CATEGORICAL:
        return clt__error_as(clt_argmax_dim(p[0], p[0]->ndim - 1, 0, out), fn);
    case CLT__DIST_ONE_HOT:
        CLT__TRY(clt__error_as(clt_argmax_dim(p[0], p[0]->ndim - 1, 0, &a), fn));
        CLT__TRY(clt__error_as(clt_one_hot(a, d->event_shape[0], &a), fn));
        return clt__error_as(clt_to_dtype(a, d->dtype, out), fn);
    case CLT__DIST_INDEPENDENT: return mode(fn, d->base, out);
    case CLT__DIST_WISHART: return clt__dist_wishart_moment(fn, d, 3, out);
    default: return refuse(fn, d, "mode");
    }
done:
    return st;
}

clt_status clt_distribution_mode(const clt_distribution *d, clt_tensor **out)
{
    const char *fn = "clt_distribution_mode";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    st = mode(fn, d, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_distribution_perplexity(const clt_distribution *d, clt_tensor **out)
{
    const char *fn = "clt_distribution_perplexity";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *h = NULL;
    st = clt_distribution_entropy(d, &h);
    if (st == CLT_OK)
        st = clt__exp_rec(fn, h, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

/* ---- enumerate_support ------------------------------------------------------ */

static bool enumerable(const clt_distribution *d)
{
    switch (d->kind) {
    case CLT__DIST_BERNOULLI:
    case CLT__DIST_CATEGORICAL:
    case CLT__DIST_ONE_HOT:
    case CLT__DIST_BINOMIAL: return true;
    case CLT__DIST_INDEPENDENT: return d->reinterpreted == 0 && enumerable(d->base);
    default: return false;
    }
}

int clt_distribution_has_enumerate_support(const clt_distribution *d)
{
    return d ? enumerable(d) : -1;
}

/* Binomial's total_count when every element holds the same, read back. */
static clt_status homogeneous_count(const char *fn, const clt_tensor *n, double *count)
{
    clt_tensor *lo = NULL, *hi = NULL;
    double a = 0, b = 0;
    if (clt_tensor_numel(n) == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: total_count is empty: no support to enumerate", fn);
    int was = clt_set_grad_enabled(0);
    clt_status st = clt_max(n, &hi);
    if (st == CLT_OK)
        st = clt_min(n, &lo);
    if (st == CLT_OK)
        st = clt_tensor_item(hi, &b);
    if (st == CLT_OK)
        st = clt_tensor_item(lo, &a);
    clt_set_grad_enabled(was);
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    if (a != b)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Inhomogeneous total count not supported by `enumerate_support`.",
                          fn);
    *count = b;
    return CLT_OK;
}

static clt_status enumerate(const char *fn, const clt_distribution *d, bool expand,
                            clt_tensor **out)
{
    if (d->kind == CLT__DIST_INDEPENDENT) {
        if (d->reinterpreted > 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Enumeration over cartesian product is not implemented", fn);
        return enumerate(fn, d->base, expand, out);
    }
    if (!enumerable(d))
        return refuse(fn, d, "enumerate_support");
    const clt_tensor *p = d->p[0];
    int nb = d->batch_ndim;
    int64_t shape[CLT_MAX_DIMS + 2], full[CLT_MAX_DIMS + 2];
    int64_t k;
    double count = 0;
    clt_tensor *v;
    clt_status st;
    if (nb + 1 + d->event_ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    switch (d->kind) {
    case CLT__DIST_BERNOULLI: k = 2; break;
    case CLT__DIST_BINOMIAL:
        if ((st = homogeneous_count(fn, p, &count)) != CLT_OK)
            return st;
        k = (int64_t)count + 1;
        break;
    default: k = p->shape[p->ndim - 1]; break;
    }
    /* values [k, 1 ..., 1] (OneHotCategorical: [k, 1 ..., 1, k]) */
    shape[0] = full[0] = k;
    for (int i = 0; i < nb; i++) {
        shape[1 + i] = 1;
        full[1 + i] = d->batch_shape[i];
    }
    int n = 1 + nb;
    if (d->kind == CLT__DIST_ONE_HOT) {
        CLT__TRY(clt_eye(p->dev, d->dtype, k, k, &v));
        shape[n] = full[n] = k;
        n++;
    } else {
        CLT__TRY(clt_arange(p->dev, d->kind == CLT__DIST_CATEGORICAL ? CLT_INT64 : d->dtype, 0,
                            (double)k, 1, &v));
    }
    CLT__TRY(clt_reshape(v, n, shape, &v));
    if (!expand) {
        *out = v;
        return CLT_OK;
    }
    return clt_expand(v, n, full, out);
done:
    return clt__error_as(st, fn);
}

clt_status clt_distribution_enumerate_support(const clt_distribution *d, int expand,
                                              clt_tensor **out)
{
    const char *fn = "clt_distribution_enumerate_support";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int was = clt_set_grad_enabled(0);
    st = enumerate(fn, d, expand != 0, out);
    clt_set_grad_enabled(was);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

/* ---- expand ----------------------------------------------------------------- */

/* Whether parameter k of d keeps its shape when d is expanded (torch's
 * unbroadcast matrices and the relaxed families' temperature). */
static bool kept_as_is(const clt_distribution *d, int k)
{
    switch (d->kind) {
    case CLT__DIST_MVN:
    case CLT__DIST_WISHART: return k == 1;
    case CLT__DIST_LOWRANK_MVN: return k >= 1;
    case CLT__DIST_RELAXED_BERNOULLI:
    case CLT__DIST_RELAXED_ONE_HOT: return k == 2;
    default: return false;
    }
}

/* d expanded to batch shape (n, shape), already checked, into *out (a new
 * distribution; its parameters made in the caller's scope and disowned). */
static clt_status expand_dist(const char *fn, const clt_distribution *d, int n,
                              const int64_t *shape, clt_distribution **out)
{
    if (CLT__DIST_IS_TF(d->kind))
        return clt__dist_transformed_expand(fn, d, n, shape, out);
    if (n + d->event_ndim + (d->kind == CLT__DIST_MIXTURE) > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: batch_shape + event_shape has more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    clt_distribution *e = clt__calloc(1, sizeof *e);
    if (!e)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    e->kind = d->kind;
    e->refs = 1;
    e->validate = d->validate;
    e->dtype = d->dtype;
    e->reinterpreted = d->reinterpreted;
    e->total_count = d->total_count;
    e->straight_through = d->straight_through;
    e->batch_ndim = n;
    memcpy(e->batch_shape, shape, (size_t)n * sizeof *shape);
    e->event_ndim = d->event_ndim;
    memcpy(e->event_shape, d->event_shape, (size_t)d->event_ndim * sizeof *shape);
    if (d->kind == CLT__DIST_INDEPENDENT) {
        /* base.expand(batch_shape + event_shape[:reinterpreted]) */
        int64_t b[CLT_MAX_DIMS];
        memcpy(b, shape, (size_t)n * sizeof *b);
        memcpy(b + n, d->event_shape, (size_t)d->reinterpreted * sizeof *b);
        CLT__TRY(expand_dist(fn, d->base, n + d->reinterpreted, b, &e->base));
    } else if (d->kind == CLT__DIST_MIXTURE) {
        /* the components to batch_shape + (k,), the Categorical to batch_shape */
        int64_t b[CLT_MAX_DIMS];
        memcpy(b, shape, (size_t)n * sizeof *b);
        b[n] = d->base->batch_shape[d->base->batch_ndim - 1];
        CLT__TRY(expand_dist(fn, d->base, n + 1, b, &e->base));
        CLT__TRY(expand_dist(fn, d->mix, n, shape, &e->mix));
    }
    for (int k = 0; k < 3; k++) {
        const clt_tensor *t = d->p[k];
        if (!t)
            continue;
        clt_tensor *c;
        if (kept_as_is(d, k)) {
            CLT__TRY(clt__expand_rec(fn, t, t->ndim, t->shape, &c));
        } else {
            /* batch + the parameter's own trailing dims */
            int extra = t->ndim - d->batch_ndim, m = n + extra;
            int64_t b[CLT_MAX_DIMS];
            if (m > CLT_MAX_DIMS) {
                st = clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                                CLT_MAX_DIMS);
                goto done;
            }
            memcpy(b, shape, (size_t)n * sizeof *b);
            memcpy(b + n, t->shape + d->batch_ndim, (size_t)extra * sizeof *b);
            CLT__TRY(clt__expand_rec(fn, t, m, b, &c));
        }
        clt__scope_disown(c);
        e->p[k] = c;
    }
    *out = e;
    return CLT_OK;
done:
    clt_distribution_free(e);
    return st;
}

clt_status clt_distribution_expand(const clt_distribution *d, const int64_t *batch_shape, int ndim,
                                   clt_distribution **out)
{
    const char *fn = "clt_distribution_expand";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    if (ndim < 0 || (ndim > 0 && batch_shape == NULL))
        return clt__error(ndim < 0 ? CLT_ERR_INVALID_ARGUMENT : CLT_ERR_NULL_ARGUMENT,
                          "%s: batch_shape of %d dims%s", fn, ndim, ndim < 0 ? "" : " is NULL");
    char s1[128], s2[128];
    for (int i = 0; i < ndim; i++)
        if (batch_shape[i] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: negative size %lld in batch_shape %s",
                              fn, (long long)batch_shape[i],
                              clt__shape_str(s1, sizeof s1, ndim, batch_shape));
    bool fits = ndim >= d->batch_ndim;
    int at = 0;
    for (int i = 1; fits && i <= d->batch_ndim; i++) {
        int64_t have = d->batch_shape[d->batch_ndim - i], want = batch_shape[ndim - i];
        fits = have == want || have == 1;
        at = d->batch_ndim - i;
    }
    if (!fits) {
        if (ndim < d->batch_ndim)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: the number of sizes provided (%d) must be greater or equal "
                              "to the number of dimensions in the batch shape (%d): %s to %s",
                              fn, ndim, d->batch_ndim,
                              clt__shape_str(s1, sizeof s1, d->batch_ndim, d->batch_shape),
                              clt__shape_str(s2, sizeof s2, ndim, batch_shape));
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: The expanded size of the batch shape (%lld) must match the "
                          "existing size (%lld) at non-singleton dimension %d.  Target sizes: "
                          "%s.  Batch shape: %s",
                          fn, (long long)batch_shape[ndim - d->batch_ndim + at],
                          (long long)d->batch_shape[at], at,
                          clt__shape_str(s2, sizeof s2, ndim, batch_shape),
                          clt__shape_str(s1, sizeof s1, d->batch_ndim, d->batch_shape));
    }
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    st = expand_dist(fn, d, ndim, batch_shape, out);
    clt_scope_end();
    return st == CLT_OK ? clt__ok() : clt__error_as(st, fn);
}
