/* density.c: what a distribution computes from its parameters (log_prob,
 * cdf, icdf, entropy, mean, variance, stddev), composed of recorded ops
 * with torch 1.13's formulas, so that gradients reach the parameters. */
#include <float.h>
#include <math.h>

#include "distributions/distributions.h"

#define LOG_SQRT_2PI 0.91893853320467274178 /* log(sqrt(2 pi)) */

clt_status clt__dist_sum_rightmost(const char *fn, const clt_tensor *x, int r, clt_tensor **out)
{
    if (r == 0)
        return clt__expand_rec(fn, x, x->ndim, x->shape, out);
    int64_t shape[CLT_MAX_DIMS], rest = 1;
    int keep = x->ndim - r;
    memcpy(shape, x->shape, (size_t)keep * sizeof *shape);
    for (int k = keep; k < x->ndim; k++)
        rest *= x->shape[k];
    shape[keep] = rest;
    clt_tensor *flat;
    clt_status st = clt__reshape_rec(fn, x, keep + 1, shape, &flat);
    return st != CLT_OK ? st : clt__sum_dim_rec(fn, flat, keep, 0, out);
}

clt_status clt__dist_half_log_det(const char *fn, const clt_tensor *l, clt_tensor **out)
{
    clt_tensor *diag, *lg;
    clt_status st = clt_diagonal(l, 0, -2, -1, &diag);
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    if ((st = clt__log_rec(fn, diag, &lg)) != CLT_OK)
        return st;
    return clt__sum_dim_rec(fn, lg, lg->ndim - 1, 0, out);
}

clt_status clt__dist_mahalanobis(const char *fn, const clt_tensor *l, const clt_tensor *x,
                                 clt_tensor **out)
{
    clt_tensor *col, *y, *sq, *s;
    clt_status st;
    CLT__TRY(clt__unsqueeze_rec(fn, x, x->ndim, &col));
    CLT__TRY(clt__linalg_solve_rec(fn, l, col, &y));
    CLT__TRY(clt__square_rec(fn, y, &sq));
    CLT__TRY(clt__sum_dim_rec(fn, sq, sq->ndim - 1, 0, &s));
    return clt__sum_dim_rec(fn, s, s->ndim - 1, 0, out);
done:
    return st;
}

/* The checks every entry starts with; opens the scope on success. */
static clt_status begin(const char *fn, const clt_distribution *d, const clt_tensor *value,
                        bool need_value, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    if (need_value)
        CLT__REQUIRE_ARG(value, fn);
    return clt_scope_begin();
}

static clt_status not_implemented(const char *fn, const clt_distribution *d, const char *what)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement %s", fn,
                      clt_distribution_name(d), what);
}

/* v as d's dtype (torch's ops promote an integer or bool value to it). */
static clt_status as_float(const char *fn, const clt_distribution *d, const clt_tensor *v,
                           clt_tensor **out)
{
    if (clt__dtype_is_float(v->dtype))
        return clt__expand_rec(fn, v, v->ndim, v->shape, out);
    return clt__to_dtype_rec(fn, v, d->dtype, out);
}

/* Categorical's log_prob: log_pmf gathered at value's indices, value and
 * the logits broadcast as torch broadcasts them. */
static clt_status categorical_log_prob(const char *fn, const clt_distribution *d,
                                       const clt_tensor *value, clt_tensor **out)
{
    const clt_tensor *lg = d->p[1];
    clt_tensor *vi, *vu, *ve, *vc, *le, *g;
    int nb;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st;
    if (value->dtype == CLT_INT64)
        st = clt__expand_rec(fn, value, value->ndim, value->shape, &vi);
    else
        st = clt_to_dtype(value, CLT_INT64, &vi);
    CLT__TRY(clt__error_as(st, fn));
    if (vi->ndim + 1 > CLT_MAX_DIMS) {
        st = clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: value has too many dimensions", fn);
        goto done;
    }
    CLT__TRY(clt__unsqueeze_rec(fn, vi, vi->ndim, &vu));
    CLT__TRY(clt__broadcast_shapes(vu->ndim, vu->shape, lg->ndim, lg->shape, &nb, shape, fn));
    CLT__TRY(clt__expand_rec(fn, lg, nb, shape, &le));
    shape[nb - 1] = 1;
    CLT__TRY(clt__expand_rec(fn, vu, nb, shape, &ve));
    CLT__TRY(clt_contiguous(ve, &vc));
    st = clt_gather(le, nb - 1, vc, &g);
    CLT__TRY(clt__error_as(st, fn));
    return clt__squeeze_rec(fn, g, nb - 1, out);
done:
    return st;
}

/* log_prob of every family but Independent, in the caller's scope. */
static clt_status log_prob(const char *fn, const clt_distribution *d, const clt_tensor *v,
                           clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b, *c, *x;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_NORMAL: /* -(v - loc)^2 / (2 var) - log(scale) - log(sqrt(2 pi)) */
        CLT__TRY(clt__sub_rec(fn, v, p[0], &a));
        CLT__TRY(clt__square_rec(fn, a, &a));
        CLT__TRY(clt__square_rec(fn, p[1], &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, 2, &b));
        CLT__TRY(clt__div_rec(fn, a, b, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log_rec(fn, p[1], &c));
        CLT__TRY(clt__sub_rec(fn, a, c, &a));
        return clt__sub_scalar_rec(fn, a, LOG_SQRT_2PI, out);
    case CLT__DIST_UNIFORM: { /* log(lb ub) - log(high - low) */
        int was = clt_set_grad_enabled(0);
        st = clt_le(p[0], v, &a);
        if (st == CLT_OK)
            st = clt_gt(p[1], v, &b);
        if (st == CLT_OK)
            st = clt_logical_and(a, b, &c);
        if (st == CLT_OK)
            st = clt_to_dtype(c, d->dtype, &c);
        clt_set_grad_enabled(was);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__log_rec(fn, c, &a));
        CLT__TRY(clt__sub_rec(fn, p[1], p[0], &b));
        CLT__TRY(clt__log_rec(fn, b, &b));
        return clt__sub_rec(fn, a, b, out);
    }
    case CLT__DIST_BERNOULLI: /* -bce_with_logits(logits, v) = v logits + logsigmoid(-logits) */
        CLT__TRY(as_float(fn, d, v, &x));
        CLT__TRY(clt__mul_rec(fn, x, p[1], &a));
        CLT__TRY(clt__neg_rec(fn, p[1], &b));
        st = clt_logsigmoid(b, &b);
        CLT__TRY(clt__error_as(st, fn));
        return clt__add_rec(fn, a, b, out);
    case CLT__DIST_CATEGORICAL: return categorical_log_prob(fn, d, v, out);
    case CLT__DIST_ONE_HOT: /* Categorical's at value.max(-1)[1] */
        st = clt_argmax_dim(v, v->ndim - 1, 0, &a);
        CLT__TRY(clt__error_as(st, fn));
        return categorical_log_prob(fn, d, a, out);
    case CLT__DIST_EXPONENTIAL: /* log(rate) - rate v */
        CLT__TRY(clt__log_rec(fn, p[0], &a));
        CLT__TRY(clt__mul_rec(fn, p[0], v, &b));
        return clt__sub_rec(fn, a, b, out);
    case CLT__DIST_LAPLACE: /* -log(2 scale) - |v - loc| / scale */
        CLT__TRY(clt__mul_scalar_rec(fn, p[1], 2, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__sub_rec(fn, v, p[0], &b));
        CLT__TRY(clt__abs_rec(fn, b, &b));
        CLT__TRY(clt__div_rec(fn, b, p[1], &b));
        CLT__TRY(clt__add_rec(fn, a, b, &c));
        return clt__neg_rec(fn, c, out);
    case CLT__DIST_MVN: { /* -(n log(2 pi) + M) / 2 - half_log_det */
        double n = (double)d->event_shape[0];
        CLT__TRY(clt__sub_rec(fn, v, p[0], &a));
        CLT__TRY(clt__dist_mahalanobis(fn, p[1], a, &b));
        CLT__TRY(clt__add_scalar_rec(fn, b, 2 * n * LOG_SQRT_2PI, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, -0.5, &b));
        CLT__TRY(clt__dist_half_log_det(fn, p[1], &c));
        return clt__sub_rec(fn, b, c, out);
    }
    case CLT__DIST_INDEPENDENT:
        CLT__TRY(log_prob(fn, d->base, v, &a));
        return clt__dist_sum_rightmost(fn, a, d->reinterpreted, out);
    case CLT__DIST_MIXTURE: return clt__dist_mixture_log_prob(fn, d, v, out);
    case CLT__DIST_LOWRANK_MVN: return clt__dist_lowrank_log_prob(fn, d, v, out);
    case CLT__DIST_TRANSFORMED:
    case CLT__DIST_LOGISTIC_NORMAL: return clt__dist_transformed_log_prob(fn, d, v, out);
    case CLT__DIST_WISHART: return clt__dist_wishart_log_prob(fn, d, v, out);
    case CLT__DIST_LKJ_CHOLESKY: return clt__dist_lkj_log_prob(fn, d, v, out);
    default: return clt__dist2_log_prob(fn, d, v, out);
    }
done:
    return st;
}

clt_status clt_distribution_log_prob(const clt_distribution *d, const clt_tensor *value,
                                     clt_tensor **out)
{
    const char *fn = "clt_distribution_log_prob";
    clt_status st = begin(fn, d, value, true, out);
    if (st != CLT_OK)
        return st;
    CLT__TRY(clt__dist_check_value(fn, d, value));
    CLT__TRY(log_prob(fn, d, value, out));
done:
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_distribution_cdf(const clt_distribution *d, const clt_tensor *value,
                                clt_tensor **out)
{
    const char *fn = "clt_distribution_cdf";
    clt_status st = begin(fn, d, value, true, out);
    if (st != CLT_OK)
        return st;
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b;
    const double zero = 0, one = 1;
    switch (d->kind) {
    case CLT__DIST_NORMAL:
    case CLT__DIST_UNIFORM:
    case CLT__DIST_EXPONENTIAL:
    case CLT__DIST_LAPLACE: CLT__TRY(clt__dist_check_value(fn, d, value)); break;
    case CLT__DIST_MIXTURE: /* no check of value, as torch's */
        CLT__TRY(clt__dist_mixture_cdf(fn, d, value, out));
        goto done;
    case CLT__DIST_TRANSFORMED:
    case CLT__DIST_LOGISTIC_NORMAL:
        CLT__TRY(clt__dist_transformed_cdf(fn, d, value, out));
        goto done;
    default:
        if (!CLT__DIST_IS2(d->kind) || !clt__dist2_has_cdf(d)) {
            st = not_implemented(fn, d, "cdf");
            goto done;
        }
        CLT__TRY(clt__dist_check_value(fn, d, value));
        CLT__TRY(clt__dist2_cdf(fn, d, value, out));
        goto done;
    }
    switch (d->kind) {
    case CLT__DIST_NORMAL: /* (1 + erf((v - loc) / scale / sqrt 2)) / 2 */
        CLT__TRY(clt__sub_rec(fn, value, p[0], &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &b));
        CLT__TRY(clt__mul_rec(fn, a, b, &a));
        CLT__TRY(clt__div_scalar_rec(fn, a, sqrt(2.0), &a));
        CLT__TRY(clt__erf_rec(fn, a, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 0.5, out));
        break;
    case CLT__DIST_UNIFORM: /* ((v - low) / (high - low)).clamp(0, 1) */
        CLT__TRY(clt__sub_rec(fn, value, p[0], &a));
        CLT__TRY(clt__sub_rec(fn, p[1], p[0], &b));
        CLT__TRY(clt__div_rec(fn, a, b, &a));
        CLT__TRY(clt__clamp_rec(fn, a, &zero, &one, out));
        break;
    case CLT__DIST_EXPONENTIAL: /* 1 - exp(-rate v) */
        CLT__TRY(clt__neg_rec(fn, p[0], &a));
        CLT__TRY(clt__mul_rec(fn, a, value, &a));
        CLT__TRY(clt__exp_rec(fn, a, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, out));
        break;
    default: /* Laplace: 0.5 - 0.5 sign(v - loc) expm1(-|v - loc| / scale) */
        CLT__TRY(clt__sub_rec(fn, value, p[0], &a));
        CLT__TRY(clt__sign_rec(fn, a, &b));
        CLT__TRY(clt__abs_rec(fn, a, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        CLT__TRY(clt__expm1_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, -0.5, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, 0.5, out));
        break;
    }
done:
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_distribution_icdf(const clt_distribution *d, const clt_tensor *value,
                                 clt_tensor **out)
{
    const char *fn = "clt_distribution_icdf";
    clt_status st = begin(fn, d, value, true, out);
    if (st != CLT_OK)
        return st;
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b;
    switch (d->kind) {
    case CLT__DIST_NORMAL: /* loc + scale erfinv(2 v - 1) sqrt 2 */
        CLT__TRY(clt__mul_scalar_rec(fn, value, 2, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__erfinv_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, p[1], a, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, sqrt(2.0), &a));
        CLT__TRY(clt__add_rec(fn, p[0], a, out));
        break;
    case CLT__DIST_UNIFORM: /* v (high - low) + low */
        CLT__TRY(clt__sub_rec(fn, p[1], p[0], &a));
        CLT__TRY(clt__mul_rec(fn, value, a, &a));
        CLT__TRY(clt__add_rec(fn, a, p[0], out));
        break;
    case CLT__DIST_EXPONENTIAL: /* -log1p(-v) / rate */
        CLT__TRY(clt__neg_rec(fn, value, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__div_rec(fn, a, p[0], out));
        break;
    case CLT__DIST_LAPLACE: /* loc - scale sign(v - 1/2) log1p(-2 |v - 1/2|) */
        CLT__TRY(clt__sub_scalar_rec(fn, value, 0.5, &a));
        CLT__TRY(clt__sign_rec(fn, a, &b));
        CLT__TRY(clt__abs_rec(fn, a, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, -2, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(clt__mul_rec(fn, p[1], a, &a));
        CLT__TRY(clt__sub_rec(fn, p[0], a, out));
        break;
    case CLT__DIST_TRANSFORMED:
    case CLT__DIST_LOGISTIC_NORMAL: st = clt__dist_transformed_icdf(fn, d, value, out); break;
    default:
        if (CLT__DIST_IS2(d->kind))
            st = clt__dist2_icdf(fn, d, value, out);
        else
            st = not_implemented(fn, d, "icdf");
        break;
    }
done:
    return clt__scope_finish(clt__error_as(st, fn), out);
}

/* entropy of every family, in the caller's scope. */
static clt_status entropy(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_NORMAL: /* 1/2 + log(sqrt(2 pi)) + log(scale) */
        CLT__TRY(clt__log_rec(fn, p[1], &a));
        return clt__add_scalar_rec(fn, a, 0.5 + LOG_SQRT_2PI, out);
    case CLT__DIST_UNIFORM:
        CLT__TRY(clt__sub_rec(fn, p[1], p[0], &a));
        return clt__log_rec(fn, a, out);
    case CLT__DIST_BERNOULLI: /* bce_with_logits(logits, probs) */
        CLT__TRY(clt__neg_rec(fn, p[1], &a));
        st = clt_logsigmoid(a, &a);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__mul_rec(fn, p[1], p[0], &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        return clt__neg_rec(fn, a, out);
    case CLT__DIST_CATEGORICAL:
    case CLT__DIST_ONE_HOT: { /* -(logits.clamp(min=finfo.min) probs).sum(-1) */
        double lo = d->dtype == CLT_FLOAT64 ? -DBL_MAX : -FLT_MAX;
        CLT__TRY(clt__clamp_rec(fn, p[1], &lo, NULL, &a));
        CLT__TRY(clt__mul_rec(fn, a, p[0], &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
        return clt__neg_rec(fn, a, out);
    }
    case CLT__DIST_EXPONENTIAL:
        CLT__TRY(clt__log_rec(fn, p[0], &a));
        return clt__rsub_scalar_rec(fn, a, 1, out);
    case CLT__DIST_LAPLACE:
        CLT__TRY(clt__mul_scalar_rec(fn, p[1], 2, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        return clt__add_scalar_rec(fn, a, 1, out);
    case CLT__DIST_MVN: { /* n (1 + log 2 pi) / 2 + half_log_det, expanded */
        double n = (double)d->event_shape[0];
        CLT__TRY(clt__dist_half_log_det(fn, p[1], &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, n * (0.5 + LOG_SQRT_2PI), &a));
        return clt__expand_rec(fn, a, d->batch_ndim, d->batch_shape, out);
    }
    case CLT__DIST_INDEPENDENT:
        CLT__TRY(entropy(fn, d->base, &a));
        return clt__dist_sum_rightmost(fn, a, d->reinterpreted, out);
    case CLT__DIST_MIXTURE:
    case CLT__DIST_TRANSFORMED:
    case CLT__DIST_LOGISTIC_NORMAL: return not_implemented(fn, d, "entropy");
    case CLT__DIST_LOWRANK_MVN: return clt__dist_lowrank_entropy(fn, d, out);
    case CLT__DIST_WISHART: return clt__dist_wishart_entropy(fn, d, out);
    case CLT__DIST_LKJ_CHOLESKY: return not_implemented(fn, d, "entropy");
    default: return clt__dist2_entropy(fn, d, out);
    }
done:
    return st;
}

clt_status clt_distribution_entropy(const clt_distribution *d, clt_tensor **out)
{
    const char *fn = "clt_distribution_entropy";
    clt_status st = begin(fn, d, NULL, false, out);
    if (st != CLT_OK)
        return st;
    st = entropy(fn, d, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

typedef enum moment { MEAN, VARIANCE, STDDEV } moment;

/* mean, variance or stddev of every family, in the caller's scope. */
static clt_status moments(const char *fn, const clt_distribution *d, moment m, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b;
    clt_status st;
    if (d->kind == CLT__DIST_INDEPENDENT)
        return moments(fn, d->base, m, out);
    if (d->kind == CLT__DIST_MIXTURE)
        return clt__dist_mixture_moment(fn, d, (int)m, out);
    if (CLT__DIST_IS_TF(d->kind))
        return not_implemented(fn, d, m == MEAN ? "mean" : m == VARIANCE ? "variance" : "stddev");
    if (d->kind == CLT__DIST_LOWRANK_MVN)
        return clt__dist_lowrank_moment(fn, d, (int)m, out);
    if (d->kind == CLT__DIST_WISHART)
        return clt__dist_wishart_moment(fn, d, (int)m, out);
    if (d->kind == CLT__DIST_LKJ_CHOLESKY)
        return not_implemented(fn, d, m == MEAN ? "mean" : m == VARIANCE ? "variance" : "stddev");
    if (CLT__DIST_IS2(d->kind))
        return clt__dist2_moment(fn, d, (int)m, out);
    if (m == STDDEV) {
        switch (d->kind) {
        case CLT__DIST_NORMAL: return clt__expand_rec(fn, p[1], p[1]->ndim, p[1]->shape, out);
        case CLT__DIST_EXPONENTIAL: return clt__reciprocal_rec(fn, p[0], out);
        case CLT__DIST_LAPLACE: return clt__mul_scalar_rec(fn, p[1], sqrt(2.0), out);
        default:
            CLT__TRY(moments(fn, d, VARIANCE, &a));
            return clt__sqrt_rec(fn, a, out);
        }
    }
    bool mean = m == MEAN;
    switch (d->kind) {
    case CLT__DIST_NORMAL:
        return mean ? clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out)
                    : clt__square_rec(fn, p[1], out);
    case CLT__DIST_UNIFORM:
        if (mean) {
            CLT__TRY(clt__add_rec(fn, p[1], p[0], &a));
            return clt__div_scalar_rec(fn, a, 2, out);
        }
        CLT__TRY(clt__sub_rec(fn, p[1], p[0], &a));
        CLT__TRY(clt__pow_scalar_rec(fn, a, 2, &a));
        return clt__div_scalar_rec(fn, a, 12, out);
    case CLT__DIST_BERNOULLI:
    case CLT__DIST_ONE_HOT:
        if (mean)
            return clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out);
        CLT__TRY(clt__rsub_scalar_rec(fn, p[0], 1, &a));
        return clt__mul_rec(fn, p[0], a, out);
    case CLT__DIST_CATEGORICAL:
        st = clt_full(p[0]->dev, d->dtype, d->batch_ndim, d->batch_shape, NAN, out);
        return clt__error_as(st, fn);
    case CLT__DIST_EXPONENTIAL:
        return mean ? clt__reciprocal_rec(fn, p[0], out) : clt__pow_scalar_rec(fn, p[0], -2, out);
    case CLT__DIST_LAPLACE:
        if (mean)
            return clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out);
        CLT__TRY(clt__pow_scalar_rec(fn, p[1], 2, &a));
        return clt__mul_scalar_rec(fn, a, 2, out);
    case CLT__DIST_MVN: {
        if (mean)
            return clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out);
        int64_t shape[CLT_MAX_DIMS];
        memcpy(shape, d->batch_shape, (size_t)d->batch_ndim * sizeof *shape);
        shape[d->batch_ndim] = d->event_shape[0];
        CLT__TRY(clt__pow_scalar_rec(fn, p[1], 2, &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &b));
        return clt__expand_rec(fn, b, d->batch_ndim + 1, shape, out);
    }
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown distribution", fn);
done:
    return st;
}

static clt_status moment_entry(const char *fn, const clt_distribution *d, moment m,
                               clt_tensor **out)
{
    clt_status st = begin(fn, d, NULL, false, out);
    if (st != CLT_OK)
        return st;
    st = moments(fn, d, m, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_distribution_mean(const clt_distribution *d, clt_tensor **out)
{
    return moment_entry("clt_distribution_mean", d, MEAN, out);
}

clt_status clt_distribution_variance(const clt_distribution *d, clt_tensor **out)
{
    return moment_entry("clt_distribution_variance", d, VARIANCE, out);
}

clt_status clt_distribution_stddev(const clt_distribution *d, clt_tensor **out)
{
    return moment_entry("clt_distribution_stddev", d, STDDEV, out);
}
