/* kl.c: torch.distributions.kl_divergence for the pairs among these
 * families that torch 1.13 registers (each family with itself, and the
 * pairs of Normal, Laplace, Exponential and Uniform), composed of recorded
 * ops with its formulas. */
#include <math.h>

#include "distributions/distributions.h"

/* t with `value` where mask (broadcast to t's shape) holds, recorded
 * (torch's t[mask] = value). */
static clt_status fill_where(const char *fn, const clt_tensor *t, const clt_tensor *mask,
                             double value, clt_tensor **out)
{
    clt_tensor *m;
    clt_status st = clt__expand_rec(fn, mask, t->ndim, t->shape, &m);
    return st != CLT_OK ? st : clt__masked_fill_rec(fn, t, m, value, out);
}

/* mask of x == v, not recorded. */
static clt_status where_eq(const char *fn, const clt_tensor *x, double v, clt_tensor **out)
{
    int was = clt_set_grad_enabled(0);
    clt_status st = clt_eq_scalar(x, v, out);
    clt_set_grad_enabled(was);
    return clt__error_as(st, fn);
}

/* Bernoulli: p log(p / q) + (1 - p) log((1 - p) / (1 - q)) through the
 * logits, with torch's infinities and zeros at the ends. */
static clt_status kl_bernoulli(const char *fn, const clt_distribution *p,
                               const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *a, *b, *t1, *t2, *m;
    clt_status st;
    /* softplus(-x) = -logsigmoid(x), softplus(x) = -logsigmoid(-x) */
    st = clt_logsigmoid(p->p[1], &a);
    if (st == CLT_OK)
        st = clt_logsigmoid(q->p[1], &b);
    CLT__TRY(clt__error_as(st, fn));
    CLT__TRY(clt__sub_rec(fn, a, b, &t1));
    CLT__TRY(clt__mul_rec(fn, p->p[0], t1, &t1));
    CLT__TRY(where_eq(fn, q->p[0], 0, &m));
    CLT__TRY(fill_where(fn, t1, m, INFINITY, &t1));
    CLT__TRY(where_eq(fn, p->p[0], 0, &m));
    CLT__TRY(fill_where(fn, t1, m, 0, &t1));
    CLT__TRY(clt__neg_rec(fn, p->p[1], &a));
    CLT__TRY(clt__neg_rec(fn, q->p[1], &b));
    st = clt_logsigmoid(a, &a);
    if (st == CLT_OK)
        st = clt_logsigmoid(b, &b);
    CLT__TRY(clt__error_as(st, fn));
    CLT__TRY(clt__sub_rec(fn, a, b, &t2));
    CLT__TRY(clt__rsub_scalar_rec(fn, p->p[0], 1, &a));
    CLT__TRY(clt__mul_rec(fn, a, t2, &t2));
    CLT__TRY(where_eq(fn, q->p[0], 1, &m));
    CLT__TRY(fill_where(fn, t2, m, INFINITY, &t2));
    CLT__TRY(where_eq(fn, p->p[0], 1, &m));
    CLT__TRY(fill_where(fn, t2, m, 0, &t2));
    return clt__add_rec(fn, t1, t2, out);
done:
    return st;
}

static clt_status kl_categorical(const char *fn, const clt_distribution *p,
                                 const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *t, *m;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], q->p[1], &t));
    CLT__TRY(clt__mul_rec(fn, p->p[0], t, &t));
    CLT__TRY(where_eq(fn, q->p[0], 0, &m));
    CLT__TRY(fill_where(fn, t, m, INFINITY, &t));
    CLT__TRY(where_eq(fn, p->p[0], 0, &m));
    CLT__TRY(fill_where(fn, t, m, 0, &t));
    return clt__sum_dim_rec(fn, t, t->ndim - 1, 0, out);
done:
    return st;
}

static clt_status kl_normal(const char *fn, const clt_distribution *p, const clt_distribution *q,
                            clt_tensor **out)
{
    clt_tensor *vr, *t1, *lg;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &vr));
    CLT__TRY(clt__pow_scalar_rec(fn, vr, 2, &vr));
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &t1));
    CLT__TRY(clt__div_rec(fn, t1, q->p[1], &t1));
    CLT__TRY(clt__pow_scalar_rec(fn, t1, 2, &t1));
    CLT__TRY(clt__log_rec(fn, vr, &lg));
    CLT__TRY(clt__add_rec(fn, vr, t1, &t1));
    CLT__TRY(clt__sub_scalar_rec(fn, t1, 1, &t1));
    CLT__TRY(clt__sub_rec(fn, t1, lg, &t1));
    return clt__mul_scalar_rec(fn, t1, 0.5, out);
done:
    return st;
}

static clt_status kl_uniform(const char *fn, const clt_distribution *p, const clt_distribution *q,
                             clt_tensor **out)
{
    clt_tensor *a, *b, *r, *m1, *m2;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, q->p[1], q->p[0], &a));
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &b));
    CLT__TRY(clt__div_rec(fn, a, b, &r));
    CLT__TRY(clt__log_rec(fn, r, &r));
    int was = clt_set_grad_enabled(0);
    st = clt_gt(q->p[0], p->p[0], &m1);
    if (st == CLT_OK)
        st = clt_lt(q->p[1], p->p[1], &m2);
    if (st == CLT_OK)
        st = clt_logical_or(m1, m2, &m1);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    return fill_where(fn, r, m1, INFINITY, out);
done:
    return st;
}

static clt_status kl_exponential(const char *fn, const clt_distribution *p,
                                 const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *rr, *t1;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, q->p[0], p->p[0], &rr));
    CLT__TRY(clt__log_rec(fn, rr, &t1));
    CLT__TRY(clt__sub_rec(fn, rr, t1, &t1));
    return clt__sub_scalar_rec(fn, t1, 1, out);
done:
    return st;
}

static clt_status kl_laplace(const char *fn, const clt_distribution *p, const clt_distribution *q,
                             clt_tensor **out)
{
    clt_tensor *sr, *ad, *t1, *t2, *t3;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &sr));
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &ad));
    CLT__TRY(clt__abs_rec(fn, ad, &ad));
    CLT__TRY(clt__log_rec(fn, sr, &t1));
    CLT__TRY(clt__div_rec(fn, ad, q->p[1], &t2));
    CLT__TRY(clt__div_rec(fn, ad, p->p[1], &t3));
    CLT__TRY(clt__neg_rec(fn, t3, &t3));
    CLT__TRY(clt__exp_rec(fn, t3, &t3));
    CLT__TRY(clt__mul_rec(fn, sr, t3, &t3));
    CLT__TRY(clt__sub_rec(fn, t2, t1, &t2));
    CLT__TRY(clt__add_rec(fn, t2, t3, &t2));
    return clt__sub_scalar_rec(fn, t2, 1, out);
done:
    return st;
}

static clt_status kl_mvn(const char *fn, const clt_distribution *p, const clt_distribution *q,
                         clt_tensor **out)
{
    if (p->event_shape[0] != q->event_shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: KL-divergence between two Multivariate Normals with different "
                          "event shapes cannot be computed",
                          fn);
    double n = (double)p->event_shape[0];
    clt_tensor *h1, *h2, *m, *t2, *d, *t3;
    clt_status st;
    CLT__TRY(clt__dist_half_log_det(fn, q->p[1], &h1));
    CLT__TRY(clt__dist_half_log_det(fn, p->p[1], &h2));
    CLT__TRY(clt__sub_rec(fn, h1, h2, &h1));
    /* trace((q_L^-1 p_L)(q_L^-1 p_L)^T), the batch dims broadcast */
    CLT__TRY(clt__linalg_solve_rec(fn, q->p[1], p->p[1], &m));
    CLT__TRY(clt__square_rec(fn, m, &m));
    CLT__TRY(clt__sum_dim_rec(fn, m, m->ndim - 1, 0, &t2));
    CLT__TRY(clt__sum_dim_rec(fn, t2, t2->ndim - 1, 0, &t2));
    CLT__TRY(clt__sub_rec(fn, q->p[0], p->p[0], &d));
    CLT__TRY(clt__dist_mahalanobis(fn, q->p[1], d, &t3));
    CLT__TRY(clt__add_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__sub_scalar_rec(fn, t2, n, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, 0.5, &t2));
    return clt__add_rec(fn, h1, t2, out);
done:
    return st;
}

/* ---- pairs of two families (torch 1.13's formulas) ----------------------------------- */

/* KL(Exponential(rate) || Normal(loc, scale)). */
static clt_status kl_exponential_normal(const char *fn, const clt_distribution *p,
                                        const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *var, *rsq, *t1, *t2, *t3, *t4;
    clt_status st;
    CLT__TRY(clt__pow_scalar_rec(fn, q->p[1], 2, &var));
    CLT__TRY(clt__pow_scalar_rec(fn, p->p[0], 2, &rsq));
    CLT__TRY(clt__mul_rec(fn, rsq, var, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, t1, 2 * M_PI, &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, t1, 0.5, &t1));
    CLT__TRY(clt__reciprocal_rec(fn, rsq, &t2));
    CLT__TRY(clt__div_rec(fn, q->p[0], p->p[0], &t3));
    CLT__TRY(clt__pow_scalar_rec(fn, q->p[0], 2, &t4));
    CLT__TRY(clt__mul_scalar_rec(fn, t4, 0.5, &t4));
    CLT__TRY(clt__sub_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__add_rec(fn, t2, t4, &t2));
    CLT__TRY(clt__div_rec(fn, t2, var, &t2));
    CLT__TRY(clt__sub_scalar_rec(fn, t1, 1, &t1));
    return clt__add_rec(fn, t1, t2, out);
done:
    return st;
}

/* KL(Laplace(loc, scale) || Normal(loc, scale)). */
static clt_status kl_laplace_normal(const char *fn, const clt_distribution *p,
                                    const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *var, *r, *t1, *t2, *t3, *t4;
    clt_status st;
    CLT__TRY(clt__pow_scalar_rec(fn, q->p[1], 2, &var));
    CLT__TRY(clt__pow_scalar_rec(fn, p->p[1], 2, &r));
    CLT__TRY(clt__div_rec(fn, r, var, &r));
    CLT__TRY(clt__mul_scalar_rec(fn, r, 2 / M_PI, &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, t1, 0.5, &t1));
    CLT__TRY(clt__pow_scalar_rec(fn, p->p[0], 2, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, 0.5, &t2));
    CLT__TRY(clt__mul_rec(fn, p->p[0], q->p[0], &t3));
    CLT__TRY(clt__pow_scalar_rec(fn, q->p[0], 2, &t4));
    CLT__TRY(clt__mul_scalar_rec(fn, t4, 0.5, &t4));
    CLT__TRY(clt__sub_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__add_rec(fn, t2, t4, &t2));
    CLT__TRY(clt__div_rec(fn, t2, var, &t2));
    CLT__TRY(clt__sub_rec(fn, r, t1, &r));
    CLT__TRY(clt__add_rec(fn, r, t2, &r));
    return clt__sub_scalar_rec(fn, r, 1, out);
done:
    return st;
}

/* KL(Normal(loc, scale) || Laplace(loc, scale)). */
static clt_status kl_normal_laplace(const char *fn, const clt_distribution *p,
                                    const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *ld, *sr, *lr, *t1, *t2, *t3;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &ld));
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &sr));
    CLT__TRY(clt__div_rec(fn, ld, p->p[1], &lr));
    CLT__TRY(clt__log_rec(fn, sr, &t1));
    CLT__TRY(clt__pow_scalar_rec(fn, lr, 2, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, -0.5, &t2));
    CLT__TRY(clt__exp_rec(fn, t2, &t2));
    CLT__TRY(clt__mul_rec(fn, p->p[1], t2, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, sqrt(2 / M_PI), &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, lr, sqrt(0.5), &t3));
    CLT__TRY(clt__erf_rec(fn, t3, &t3));
    CLT__TRY(clt__mul_rec(fn, ld, t3, &t3));
    CLT__TRY(clt__add_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__div_rec(fn, t2, q->p[1], &t2));
    CLT__TRY(clt__sub_rec(fn, t2, t1, &t2));
    return clt__sub_scalar_rec(fn, t2, 0.5 * (1 + log(0.5 * M_PI)), out);
done:
    return st;
}

/* KL(Uniform(low, high) || Exponential(rate)): inf where low < 0. */
static clt_status kl_uniform_exponential(const char *fn, const clt_distribution *p,
                                         const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *a, *b, *m;
    clt_status st;
    CLT__TRY(clt__add_rec(fn, p->p[1], p->p[0], &a));
    CLT__TRY(clt__mul_rec(fn, q->p[0], a, &a));
    CLT__TRY(clt__div_scalar_rec(fn, a, 2, &a));
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &b));
    CLT__TRY(clt__mul_rec(fn, b, q->p[0], &b));
    CLT__TRY(clt__log_rec(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    int was = clt_set_grad_enabled(0);
    st = clt_lt_scalar(p->p[0], 0, &m);
    clt_set_grad_enabled(was);
    CLT__TRY(st);
    return fill_where(fn, a, m, INFINITY, out);
done:
    return st;
}

/* KL(Uniform(low, high) || Normal(loc, scale)). */
static clt_status kl_uniform_normal(const char *fn, const clt_distribution *p,
                                    const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *w, *t1, *t2, *t3, *var;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &w));
    CLT__TRY(clt__mul_scalar_rec(fn, q->p[1], sqrt(2 * M_PI), &t1));
    CLT__TRY(clt__div_rec(fn, t1, w, &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__pow_scalar_rec(fn, w, 2, &t2));
    CLT__TRY(clt__div_scalar_rec(fn, t2, 12, &t2));
    CLT__TRY(clt__add_rec(fn, p->p[1], p->p[0], &t3));
    CLT__TRY(clt__mul_scalar_rec(fn, q->p[0], 2, &w));
    CLT__TRY(clt__sub_rec(fn, t3, w, &t3));
    CLT__TRY(clt__div_scalar_rec(fn, t3, 2, &t3));
    CLT__TRY(clt__pow_scalar_rec(fn, t3, 2, &t3));
    CLT__TRY(clt__add_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, 0.5, &t2));
    CLT__TRY(clt__pow_scalar_rec(fn, q->p[1], 2, &var));
    CLT__TRY(clt__div_rec(fn, t2, var, &t2));
    return clt__add_rec(fn, t1, t2, out);
done:
    return st;
}

/* The pairs whose KL torch gives as inf everywhere (p's support reaches
 * where q has no density), of p's batch shape, not differentiable. */
static bool infinite_pair(clt__dist_kind p, clt__dist_kind q)
{
    switch (p) {
    case CLT__DIST_EXPONENTIAL: return q == CLT__DIST_UNIFORM;
    case CLT__DIST_LAPLACE:
    case CLT__DIST_NORMAL: return q == CLT__DIST_EXPONENTIAL || q == CLT__DIST_UNIFORM;
    default: return false;
    }
}

/* KL of two families into *out; *found false (and nothing done) where
 * torch registers none for the pair. */
static clt_status kl_cross(const char *fn, const clt_distribution *p, const clt_distribution *q,
                           clt_tensor **out, bool *found)
{
    *found = true;
    if (infinite_pair(p->kind, q->kind))
        return clt_full(p->p[0]->dev, p->dtype, p->batch_ndim, p->batch_shape, INFINITY, out);
#define PAIR(a, b) ((a) * 16 + (b))
    switch (PAIR(p->kind, q->kind)) {
    case PAIR(CLT__DIST_EXPONENTIAL, CLT__DIST_NORMAL): return kl_exponential_normal(fn, p, q, out);
    case PAIR(CLT__DIST_LAPLACE, CLT__DIST_NORMAL): return kl_laplace_normal(fn, p, q, out);
    case PAIR(CLT__DIST_NORMAL, CLT__DIST_LAPLACE): return kl_normal_laplace(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_EXPONENTIAL):
        return kl_uniform_exponential(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_NORMAL): return kl_uniform_normal(fn, p, q, out);
    }
#undef PAIR
    *found = false;
    return CLT_OK;
}

/* The registered pairs, in the caller's scope. */
static clt_status kl(const char *fn, const clt_distribution *p, const clt_distribution *q,
                     clt_tensor **out)
{
    const char *np = clt_distribution_name(p), *nq = clt_distribution_name(q);
    if (p->kind == q->kind) {
        switch (p->kind) {
        case CLT__DIST_NORMAL: return kl_normal(fn, p, q, out);
        case CLT__DIST_UNIFORM: return kl_uniform(fn, p, q, out);
        case CLT__DIST_BERNOULLI: return kl_bernoulli(fn, p, q, out);
        case CLT__DIST_CATEGORICAL:
        case CLT__DIST_ONE_HOT: return kl_categorical(fn, p, q, out);
        case CLT__DIST_EXPONENTIAL: return kl_exponential(fn, p, q, out);
        case CLT__DIST_LAPLACE: return kl_laplace(fn, p, q, out);
        case CLT__DIST_MVN: return kl_mvn(fn, p, q, out);
        case CLT__DIST_INDEPENDENT:
            if (p->reinterpreted != q->reinterpreted)
                break;
            clt_tensor *b;
            clt_status st = kl(fn, p->base, q->base, &b);
            return st != CLT_OK ? st : clt__dist_sum_rightmost(fn, b, p->reinterpreted, out);
        }
    }
    bool found;
    clt_status st = kl_cross(fn, p, q, out, &found);
    if (found)
        return st;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: No KL(p || q) is implemented for p type %s and q type %s", fn, np, nq);
}

clt_status clt_kl_divergence(const clt_distribution *p, const clt_distribution *q,
                             clt_tensor **out)
{
    const char *fn = "clt_kl_divergence";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(p, fn);
    CLT__REQUIRE_ARG(q, fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    st = kl(fn, p, q, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}
