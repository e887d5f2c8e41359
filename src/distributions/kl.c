/* kl.c: torch.distributions.kl_divergence for the pairs among these
 * families that torch 1.13 registers (each family with itself, and the
 * pairs of Normal, Laplace, Exponential and Uniform), composed of recorded
 * ops with its formulas. */
#include <math.h>

#include "distributions/transform.h"

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

/* ---- the pairs of density2.c's families ------------------------------------------------ */

static clt_status lgamma_of(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    return clt__error_as(clt_lgamma(a, out), fn);
}

static clt_status digamma_of(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    return clt__error_as(clt_digamma(a, out), fn);
}

/* Gamma (and Chi2, a Gamma): q.c log(p.r / q.r) + lgamma(q.c) - lgamma(p.c)
 * + (p.c - q.c) digamma(p.c) + (q.r - p.r) p.c / p.r. */
static clt_status kl_gamma(const char *fn, const clt_distribution *p, const clt_distribution *q,
                           clt_tensor **out)
{
    clt_tensor *t, *a, *b;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &t));
    CLT__TRY(clt__log_rec(fn, t, &t));
    CLT__TRY(clt__mul_rec(fn, q->p[0], t, &t));
    CLT__TRY(lgamma_of(fn, q->p[0], &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    CLT__TRY(lgamma_of(fn, p->p[0], &a));
    CLT__TRY(clt__sub_rec(fn, t, a, &t));
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &a));
    CLT__TRY(digamma_of(fn, p->p[0], &b));
    CLT__TRY(clt__mul_rec(fn, a, b, &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    CLT__TRY(clt__sub_rec(fn, q->p[1], p->p[1], &a));
    CLT__TRY(clt__div_rec(fn, p->p[0], p->p[1], &b));
    CLT__TRY(clt__mul_rec(fn, a, b, &a));
    return clt__add_rec(fn, t, a, out);
done:
    return st;
}

/* Dirichlet of concentrations a [..., k] (Beta's: the stacks of its two):
 * lgamma(sum a) - lgamma(sum b) - sum (lgamma(a) - lgamma(b))
 * + sum (a - b) (digamma(a) - digamma(sum a)). */
static clt_status kl_dirichlet_of(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                  clt_tensor **out)
{
    int last = a->ndim - 1;
    clt_tensor *sa, *sb, *t, *u, *w;
    clt_status st;
    CLT__TRY(clt__sum_dim_rec(fn, a, last, 0, &sa));
    CLT__TRY(clt__sum_dim_rec(fn, b, b->ndim - 1, 0, &sb));
    CLT__TRY(lgamma_of(fn, sa, &t));
    CLT__TRY(lgamma_of(fn, sb, &u));
    CLT__TRY(clt__sub_rec(fn, t, u, &t));
    CLT__TRY(lgamma_of(fn, a, &u));
    CLT__TRY(lgamma_of(fn, b, &w));
    CLT__TRY(clt__sub_rec(fn, u, w, &u));
    CLT__TRY(clt__sum_dim_rec(fn, u, u->ndim - 1, 0, &u));
    CLT__TRY(clt__sub_rec(fn, t, u, &t));
    CLT__TRY(digamma_of(fn, a, &u));
    CLT__TRY(digamma_of(fn, sa, &w));
    CLT__TRY(clt__unsqueeze_rec(fn, w, w->ndim, &w));
    CLT__TRY(clt__sub_rec(fn, u, w, &u));
    CLT__TRY(clt__sub_rec(fn, a, b, &w));
    CLT__TRY(clt__mul_rec(fn, w, u, &u));
    CLT__TRY(clt__sum_dim_rec(fn, u, u->ndim - 1, 0, &u));
    return clt__add_rec(fn, t, u, out);
done:
    return st;
}

static clt_status kl_beta(const char *fn, const clt_distribution *p, const clt_distribution *q,
                          clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__stack_rec(fn, (const clt_tensor *const[]){p->p[0], p->p[1]}, 2,
                            p->p[0]->ndim, &a));
    CLT__TRY(clt__stack_rec(fn, (const clt_tensor *const[]){q->p[0], q->p[1]}, 2,
                            q->p[0]->ndim, &b));
    return kl_dirichlet_of(fn, a, b, out);
done:
    return st;
}

/* Poisson: p.rate (log(p.rate) - log(q.rate)) - (p.rate - q.rate). */
static clt_status kl_poisson(const char *fn, const clt_distribution *p, const clt_distribution *q,
                             clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__log_rec(fn, p->p[0], &a));
    CLT__TRY(clt__log_rec(fn, q->p[0], &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_rec(fn, p->p[0], a, &a));
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &b));
    return clt__sub_rec(fn, a, b, out);
done:
    return st;
}

/* Gumbel: -log(c1) - c2 + c3 + c1 euler + exp(c2 + lgamma(1 + c1) - c3) - (1 + euler),
 * c1 = p.scale / q.scale, c2 = q.loc / q.scale, c3 = p.loc / q.scale. */
static clt_status kl_gumbel(const char *fn, const clt_distribution *p, const clt_distribution *q,
                            clt_tensor **out)
{
    const double euler = 0.57721566490153286061;
    clt_tensor *c1, *c2, *c3, *t, *a;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &c1));
    CLT__TRY(clt__div_rec(fn, q->p[0], q->p[1], &c2));
    CLT__TRY(clt__div_rec(fn, p->p[0], q->p[1], &c3));
    CLT__TRY(clt__log_rec(fn, c1, &t));
    CLT__TRY(clt__neg_rec(fn, t, &t));
    CLT__TRY(clt__sub_rec(fn, t, c2, &t));
    CLT__TRY(clt__add_rec(fn, t, c3, &t));
    CLT__TRY(clt__mul_scalar_rec(fn, c1, euler, &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    CLT__TRY(clt__add_scalar_rec(fn, c1, 1, &a));
    CLT__TRY(lgamma_of(fn, a, &a));
    CLT__TRY(clt__add_rec(fn, c2, a, &a));
    CLT__TRY(clt__sub_rec(fn, a, c3, &a));
    CLT__TRY(clt__exp_rec(fn, a, &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    return clt__sub_scalar_rec(fn, t, 1 + euler, out);
done:
    return st;
}

/* Cauchy: log((p.scale + q.scale)^2 + (p.loc - q.loc)^2) - log(4 p.scale q.scale). */
static clt_status kl_cauchy(const char *fn, const clt_distribution *p, const clt_distribution *q,
                            clt_tensor **out)
{
    clt_tensor *t, *a;
    clt_status st;
    CLT__TRY(clt__add_rec(fn, p->p[1], q->p[1], &t));
    CLT__TRY(clt__square_rec(fn, t, &t));
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &a));
    CLT__TRY(clt__square_rec(fn, a, &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    CLT__TRY(clt__log_rec(fn, t, &t));
    CLT__TRY(clt__mul_rec(fn, p->p[1], q->p[1], &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 4, &a));
    CLT__TRY(clt__log_rec(fn, a, &a));
    return clt__sub_rec(fn, t, a, out);
done:
    return st;
}

/* HalfNormal: Normal(0, p.scale) || Normal(0, q.scale). */
static clt_status kl_half_normal(const char *fn, const clt_distribution *p,
                                 const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *vr, *lg;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[0], q->p[0], &vr));
    CLT__TRY(clt__square_rec(fn, vr, &vr));
    CLT__TRY(clt__log_rec(fn, vr, &lg));
    CLT__TRY(clt__sub_rec(fn, vr, lg, &vr));
    CLT__TRY(clt__sub_scalar_rec(fn, vr, 1, &vr));
    return clt__mul_scalar_rec(fn, vr, 0.5, out);
done:
    return st;
}

/* Pareto: q.alpha log(p.scale / q.scale) - log(r) + r - 1, r = q.alpha / p.alpha; inf
 * where p.scale < q.scale. */
static clt_status kl_pareto(const char *fn, const clt_distribution *p, const clt_distribution *q,
                            clt_tensor **out)
{
    clt_tensor *t, *r, *a, *m;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[0], q->p[0], &t));
    CLT__TRY(clt__log_rec(fn, t, &t));
    CLT__TRY(clt__mul_rec(fn, q->p[1], t, &t));
    CLT__TRY(clt__div_rec(fn, q->p[1], p->p[1], &r));
    CLT__TRY(clt__log_rec(fn, r, &a));
    CLT__TRY(clt__sub_rec(fn, t, a, &t));
    CLT__TRY(clt__add_rec(fn, t, r, &t));
    CLT__TRY(clt__sub_scalar_rec(fn, t, 1, &t));
    int was = clt_set_grad_enabled(0);
    st = clt_lt(p->p[0], q->p[0], &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    return fill_where(fn, t, m, INFINITY, out);
done:
    return st;
}

/* Geometric: -H(p) - log1p(-q.probs) / p.probs - q.logits. */
static clt_status kl_geometric(const char *fn, const clt_distribution *p,
                               const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *h, *a;
    clt_status st;
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__neg_rec(fn, q->p[0], &a));
    CLT__TRY(clt__log1p_rec(fn, a, &a));
    CLT__TRY(clt__div_rec(fn, a, p->p[0], &a));
    CLT__TRY(clt__add_rec(fn, h, a, &h));
    CLT__TRY(clt__add_rec(fn, h, q->p[1], &h));
    return clt__neg_rec(fn, h, out);
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

/* ---- the pairs of density3.c's families, and more of two families ---------------- */

#define EULER 0.57721566490153286061

/* Binomial: n_p (p_p (l_p - l_q) + log1p(-p_p) - log1p(-p_q)), inf where n_p >
 * n_q; n_p < n_q anywhere is torch's NotImplementedError. */
static clt_status kl_binomial(const char *fn, const clt_distribution *p,
                              const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *a, *b, *m, *any;
    double v = 0;
    clt_status st;
    int was = clt_set_grad_enabled(0);
    st = clt_lt(p->p[0], q->p[0], &m);
    if (st == CLT_OK)
        st = clt_any(m, &any);
    if (st == CLT_OK)
        st = clt_tensor_item(any, &v);
    if (st == CLT_OK)
        st = clt_gt(p->p[0], q->p[0], &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    if (v != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: KL between Binomials where q.total_count > p.total_count is not "
                          "implemented",
                          fn);
    CLT__TRY(clt__sub_rec(fn, p->p[2], q->p[2], &a));
    CLT__TRY(clt__mul_rec(fn, p->p[1], a, &a));
    CLT__TRY(clt__neg_rec(fn, p->p[1], &b));
    CLT__TRY(clt__log1p_rec(fn, b, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    CLT__TRY(clt__neg_rec(fn, q->p[1], &b));
    CLT__TRY(clt__log1p_rec(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_rec(fn, p->p[0], a, &a));
    return fill_where(fn, a, m, INFINITY, out);
done:
    return st;
}

/* mean_p (l_p - l_q) + lognorm_p + log1p(-p_p) - lognorm_q - log1p(-p_q). */
static clt_status kl_continuous_bernoulli(const char *fn, const clt_distribution *p,
                                          const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *a, *b, *c;
    clt_status st;
    CLT__TRY(clt__dist2_moment(fn, p, 0, &a));
    CLT__TRY(clt__sub_rec(fn, p->p[1], q->p[1], &b));
    CLT__TRY(clt__mul_rec(fn, a, b, &a));
    CLT__TRY(clt__dist3_cb_log_norm(fn, p, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    CLT__TRY(clt__neg_rec(fn, p->p[0], &b));
    CLT__TRY(clt__log1p_rec(fn, b, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    CLT__TRY(clt__dist3_cb_log_norm(fn, q, &c));
    CLT__TRY(clt__sub_rec(fn, a, c, &a));
    CLT__TRY(clt__neg_rec(fn, q->p[0], &b));
    CLT__TRY(clt__log1p_rec(fn, b, &b));
    return clt__sub_rec(fn, a, b, out);
done:
    return st;
}

/* -H(p) - log(rate) + rate E_p[x]: p Beta, Gamma or ContinuousBernoulli, q
 * Exponential. */
static clt_status kl_to_exponential(const char *fn, const clt_distribution *p,
                                    const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *h, *a, *m;
    clt_status st;
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__log_rec(fn, q->p[0], &a));
    CLT__TRY(clt__add_rec(fn, h, a, &h));
    CLT__TRY(clt__dist2_moment(fn, p, 0, &m));
    CLT__TRY(clt__mul_rec(fn, q->p[0], m, &a));
    return clt__sub_rec(fn, a, h, out);
done:
    return st;
}

/* KL(Exponential(rate) || Gamma(c, r)). */
static clt_status kl_exponential_gamma(const char *fn, const clt_distribution *p,
                                       const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *ratio, *a, *b;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, q->p[1], p->p[0], &ratio));
    CLT__TRY(clt__log_rec(fn, ratio, &a));
    CLT__TRY(clt__mul_rec(fn, q->p[0], a, &a));
    CLT__TRY(clt__sub_rec(fn, ratio, a, &a));
    CLT__TRY(clt__error_as(clt_lgamma(q->p[0], &b), fn));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, q->p[0], EULER, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    return clt__sub_scalar_rec(fn, a, 1 + EULER, out);
done:
    return st;
}

/* KL(Exponential(rate) || Gumbel(loc, scale)). */
static clt_status kl_exponential_gumbel(const char *fn, const clt_distribution *p,
                                        const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *srp, *lsr, *t1, *t2, *t3;
    clt_status st;
    CLT__TRY(clt__mul_rec(fn, p->p[0], q->p[1], &srp));
    CLT__TRY(clt__div_rec(fn, q->p[0], q->p[1], &lsr));
    CLT__TRY(clt__log_rec(fn, srp, &t1));
    CLT__TRY(clt__sub_scalar_rec(fn, t1, 1, &t1));
    CLT__TRY(clt__exp_rec(fn, lsr, &t2));
    CLT__TRY(clt__mul_rec(fn, t2, srp, &t2));
    CLT__TRY(clt__add_scalar_rec(fn, srp, 1, &t3));
    CLT__TRY(clt__div_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__reciprocal_rec(fn, srp, &t3));
    CLT__TRY(clt__sub_rec(fn, t1, lsr, &t1));
    CLT__TRY(clt__add_rec(fn, t1, t2, &t1));
    return clt__add_rec(fn, t1, t3, out);
done:
    return st;
}

/* KL(Gamma(c, r) || Normal(loc, scale)). */
static clt_status kl_gamma_normal(const char *fn, const clt_distribution *p,
                                  const clt_distribution *q, clt_tensor **out)
{
    const clt_tensor *c = p->p[0], *r = p->p[1];
    clt_tensor *var, *b2, *t1, *t2, *t3, *t4, *a;
    clt_status st;
    CLT__TRY(clt__square_rec(fn, q->p[1], &var));
    CLT__TRY(clt__square_rec(fn, r, &b2));
    CLT__TRY(clt__mul_rec(fn, b2, var, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, t1, 2 * M_PI, &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, t1, 0.5, &t1));
    CLT__TRY(clt__sub_rec(fn, t1, c, &t1));
    CLT__TRY(clt__error_as(clt_lgamma(c, &a), fn));
    CLT__TRY(clt__sub_rec(fn, t1, a, &t1));
    CLT__TRY(clt__square_rec(fn, c, &t2));
    CLT__TRY(clt__add_rec(fn, t2, c, &t2));
    CLT__TRY(clt__div_rec(fn, t2, b2, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, 0.5, &t2));
    CLT__TRY(clt__mul_rec(fn, q->p[0], c, &t3));
    CLT__TRY(clt__div_rec(fn, t3, r, &t3));
    CLT__TRY(clt__square_rec(fn, q->p[0], &t4));
    CLT__TRY(clt__mul_scalar_rec(fn, t4, 0.5, &t4));
    CLT__TRY(clt__sub_rec(fn, t2, t3, &t2));
    CLT__TRY(clt__add_rec(fn, t2, t4, &t2));
    CLT__TRY(clt__div_rec(fn, t2, var, &t2));
    CLT__TRY(clt__sub_scalar_rec(fn, c, 1, &a));
    CLT__TRY(clt__error_as(clt_digamma(c, &t3), fn));
    CLT__TRY(clt__mul_rec(fn, a, t3, &a));
    CLT__TRY(clt__add_rec(fn, t1, a, &t1));
    return clt__add_rec(fn, t1, t2, out);
done:
    return st;
}

/* KL(Gumbel(loc, scale) || Normal(loc, scale)). */
static clt_status kl_gumbel_normal(const char *fn, const clt_distribution *p,
                                   const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *pr, *t1, *t2, *t3;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &pr));
    CLT__TRY(clt__div_scalar_rec(fn, pr, sqrt(2 * M_PI), &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, pr, M_PI * 0.5, &t2));
    CLT__TRY(clt__square_rec(fn, t2, &t2));
    CLT__TRY(clt__div_scalar_rec(fn, t2, 3, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, p->p[1], EULER, &t3));
    CLT__TRY(clt__add_rec(fn, p->p[0], t3, &t3));
    CLT__TRY(clt__sub_rec(fn, t3, q->p[0], &t3));
    CLT__TRY(clt__div_rec(fn, t3, q->p[1], &t3));
    CLT__TRY(clt__square_rec(fn, t3, &t3));
    CLT__TRY(clt__mul_scalar_rec(fn, t3, 0.5, &t3));
    CLT__TRY(clt__sub_rec(fn, t2, t1, &t2));
    CLT__TRY(clt__add_rec(fn, t2, t3, &t2));
    return clt__sub_scalar_rec(fn, t2, EULER + 1, out);
done:
    return st;
}

/* KL(Normal(loc, scale) || Gumbel(loc, scale)). */
static clt_status kl_normal_gumbel(const char *fn, const clt_distribution *p,
                                   const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *msr, *vsr, *lsr, *t1, *t2, *t3;
    clt_status st;
    CLT__TRY(clt__div_rec(fn, p->p[0], q->p[1], &msr));
    CLT__TRY(clt__div_rec(fn, p->p[1], q->p[1], &vsr));
    CLT__TRY(clt__square_rec(fn, vsr, &vsr));
    CLT__TRY(clt__div_rec(fn, q->p[0], q->p[1], &lsr));
    CLT__TRY(clt__log_rec(fn, vsr, &t1));
    CLT__TRY(clt__mul_scalar_rec(fn, t1, 0.5, &t1));
    CLT__TRY(clt__sub_rec(fn, msr, lsr, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, vsr, 0.5, &t3));
    CLT__TRY(clt__sub_rec(fn, t3, msr, &t3));
    CLT__TRY(clt__add_rec(fn, t3, lsr, &t3));
    CLT__TRY(clt__exp_rec(fn, t3, &t3));
    CLT__TRY(clt__sub_rec(fn, t2, t1, &t2));
    CLT__TRY(clt__add_rec(fn, t2, t3, &t2));
    return clt__sub_scalar_rec(fn, t2, 0.5 * (1 + log(2 * M_PI)), out);
done:
    return st;
}

/* KL(Beta(c1, c0) || Normal(loc, scale)). */
static clt_status kl_beta_normal(const char *fn, const clt_distribution *p,
                                 const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *s, *e, *var, *h, *t2, *t3, *a, *t4, *t5;
    clt_status st;
    CLT__TRY(clt__add_rec(fn, p->p[0], p->p[1], &s));
    CLT__TRY(clt__div_rec(fn, p->p[0], s, &e));
    CLT__TRY(clt__square_rec(fn, q->p[1], &var));
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__mul_scalar_rec(fn, var, 2 * M_PI, &t2));
    CLT__TRY(clt__log_rec(fn, t2, &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, 0.5, &t2));
    CLT__TRY(clt__rsub_scalar_rec(fn, e, 1, &a));
    CLT__TRY(clt__mul_rec(fn, e, a, &t3));
    CLT__TRY(clt__add_scalar_rec(fn, s, 1, &a));
    CLT__TRY(clt__div_rec(fn, t3, a, &t3));
    CLT__TRY(clt__square_rec(fn, e, &a));
    CLT__TRY(clt__add_rec(fn, t3, a, &t3));
    CLT__TRY(clt__mul_scalar_rec(fn, t3, 0.5, &t3));
    CLT__TRY(clt__mul_rec(fn, q->p[0], e, &t4));
    CLT__TRY(clt__square_rec(fn, q->p[0], &t5));
    CLT__TRY(clt__mul_scalar_rec(fn, t5, 0.5, &t5));
    CLT__TRY(clt__sub_rec(fn, t3, t4, &t3));
    CLT__TRY(clt__add_rec(fn, t3, t5, &t3));
    CLT__TRY(clt__div_rec(fn, t3, var, &t3));
    CLT__TRY(clt__sub_rec(fn, t2, h, &t2));
    return clt__add_rec(fn, t2, t3, out);
done:
    return st;
}

/* KL(Beta(c1, c0) || Gamma(c, r)). */
static clt_status kl_beta_gamma(const char *fn, const clt_distribution *p,
                                const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *h, *t2, *t3, *t4, *s, *a;
    clt_status st;
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__error_as(clt_lgamma(q->p[0], &t2), fn));
    CLT__TRY(clt__log_rec(fn, q->p[1], &a));
    CLT__TRY(clt__mul_rec(fn, q->p[0], a, &a));
    CLT__TRY(clt__sub_rec(fn, t2, a, &t2));
    CLT__TRY(clt__add_rec(fn, p->p[0], p->p[1], &s));
    CLT__TRY(clt__error_as(clt_digamma(p->p[0], &t3), fn));
    CLT__TRY(clt__error_as(clt_digamma(s, &a), fn));
    CLT__TRY(clt__sub_rec(fn, t3, a, &t3));
    CLT__TRY(clt__sub_scalar_rec(fn, q->p[0], 1, &a));
    CLT__TRY(clt__mul_rec(fn, a, t3, &t3));
    CLT__TRY(clt__mul_rec(fn, q->p[1], p->p[0], &t4));
    CLT__TRY(clt__div_rec(fn, t4, s, &t4));
    CLT__TRY(clt__sub_rec(fn, t2, h, &t2));
    CLT__TRY(clt__sub_rec(fn, t2, t3, &t2));
    return clt__add_rec(fn, t2, t4, out);
done:
    return st;
}

/* KL(ContinuousBernoulli(probs) || Normal(loc, scale)). */
static clt_status kl_cb_normal(const char *fn, const clt_distribution *p,
                               const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *h, *t2, *t3, *m, *v, *a;
    clt_status st;
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__div_rec(fn, q->p[0], q->p[1], &t2));
    CLT__TRY(clt__square_rec(fn, t2, &t2));
    CLT__TRY(clt__add_scalar_rec(fn, t2, log(2 * M_PI), &t2));
    CLT__TRY(clt__mul_scalar_rec(fn, t2, 0.5, &t2));
    CLT__TRY(clt__log_rec(fn, q->p[1], &a));
    CLT__TRY(clt__add_rec(fn, t2, a, &t2));
    CLT__TRY(clt__dist2_moment(fn, p, 0, &m));
    CLT__TRY(clt__dist2_moment(fn, p, 1, &v));
    CLT__TRY(clt__square_rec(fn, m, &a));
    CLT__TRY(clt__add_rec(fn, v, a, &t3));
    CLT__TRY(clt__mul_rec(fn, q->p[0], m, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
    CLT__TRY(clt__sub_rec(fn, t3, a, &t3));
    CLT__TRY(clt__square_rec(fn, q->p[1], &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
    CLT__TRY(clt__div_rec(fn, t3, a, &t3));
    CLT__TRY(clt__sub_rec(fn, t2, h, &t2));
    return clt__add_rec(fn, t2, t3, out);
done:
    return st;
}

/* KL(Pareto(scale, alpha) || Exponential(rate)): inf where alpha <= 1. */
static clt_status kl_pareto_exponential(const char *fn, const clt_distribution *p,
                                        const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *srp, *t1, *t2, *t3, *a, *m;
    clt_status st;
    CLT__TRY(clt__mul_rec(fn, p->p[0], q->p[0], &srp));
    CLT__TRY(clt__div_rec(fn, p->p[1], srp, &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__reciprocal_rec(fn, p->p[1], &t2));
    CLT__TRY(clt__mul_rec(fn, p->p[1], srp, &t3));
    CLT__TRY(clt__sub_scalar_rec(fn, p->p[1], 1, &a));
    CLT__TRY(clt__div_rec(fn, t3, a, &t3));
    CLT__TRY(clt__sub_rec(fn, t1, t2, &t1));
    CLT__TRY(clt__add_rec(fn, t1, t3, &t1));
    CLT__TRY(clt__sub_scalar_rec(fn, t1, 1, &t1));
    int was = clt_set_grad_enabled(0);
    st = clt_le_scalar(p->p[1], 1, &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    return fill_where(fn, t1, m, INFINITY, out);
done:
    return st;
}

/* The pairs whose KL torch gives as inf everywhere (p's support reaches
 * where q has no density), of p's batch shape, not differentiable. */
static bool infinite_pair(clt__dist_kind p, clt__dist_kind q)
{
    switch (p) {
    case CLT__DIST_EXPONENTIAL:
        return q == CLT__DIST_UNIFORM || q == CLT__DIST_BETA ||
               q == CLT__DIST_CONTINUOUS_BERNOULLI || q == CLT__DIST_PARETO;
    case CLT__DIST_LAPLACE:
    case CLT__DIST_NORMAL:
        return q == CLT__DIST_EXPONENTIAL || q == CLT__DIST_UNIFORM || q == CLT__DIST_BETA ||
               q == CLT__DIST_CONTINUOUS_BERNOULLI || q == CLT__DIST_GAMMA ||
               q == CLT__DIST_PARETO;
    case CLT__DIST_GAMMA:
        return q == CLT__DIST_BETA || q == CLT__DIST_CONTINUOUS_BERNOULLI ||
               q == CLT__DIST_PARETO || q == CLT__DIST_UNIFORM;
    case CLT__DIST_GUMBEL:
        return q == CLT__DIST_BETA || q == CLT__DIST_CONTINUOUS_BERNOULLI ||
               q == CLT__DIST_EXPONENTIAL || q == CLT__DIST_GAMMA || q == CLT__DIST_PARETO ||
               q == CLT__DIST_UNIFORM;
    case CLT__DIST_PARETO:
        return q == CLT__DIST_BETA || q == CLT__DIST_CONTINUOUS_BERNOULLI ||
               q == CLT__DIST_UNIFORM;
    case CLT__DIST_BETA:
    case CLT__DIST_CONTINUOUS_BERNOULLI: return q == CLT__DIST_PARETO;
    case CLT__DIST_POISSON: return q == CLT__DIST_BERNOULLI || q == CLT__DIST_BINOMIAL;
    default: return false;
    }
}

/* KL of two families into *out; *found false (and nothing done) where
 * torch registers none for the pair. */
static clt_status kl_cross(const char *fn, const clt_distribution *p, const clt_distribution *q,
                           clt_tensor **out, bool *found)
{
    *found = true;
    /* Chi2 is a Gamma, as torch's subclass */
    clt__dist_kind kp = p->kind == CLT__DIST_CHI2 ? CLT__DIST_GAMMA : p->kind;
    clt__dist_kind kq = q->kind == CLT__DIST_CHI2 ? CLT__DIST_GAMMA : q->kind;
    if (infinite_pair(kp, kq))
        return clt_full(p->p[0]->dev, p->dtype, p->batch_ndim, p->batch_shape, INFINITY, out);
#define PAIR(a, b) ((a) * 64 + (b))
    switch (PAIR(kp, kq)) {
    case PAIR(CLT__DIST_EXPONENTIAL, CLT__DIST_NORMAL): return kl_exponential_normal(fn, p, q, out);
    case PAIR(CLT__DIST_LAPLACE, CLT__DIST_NORMAL): return kl_laplace_normal(fn, p, q, out);
    case PAIR(CLT__DIST_NORMAL, CLT__DIST_LAPLACE): return kl_normal_laplace(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_EXPONENTIAL):
        return kl_uniform_exponential(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_NORMAL): return kl_uniform_normal(fn, p, q, out);
    case PAIR(CLT__DIST_EXPONENTIAL, CLT__DIST_GAMMA): return kl_exponential_gamma(fn, p, q, out);
    case PAIR(CLT__DIST_EXPONENTIAL, CLT__DIST_GUMBEL):
        return kl_exponential_gumbel(fn, p, q, out);
    case PAIR(CLT__DIST_GAMMA, CLT__DIST_EXPONENTIAL):
    case PAIR(CLT__DIST_BETA, CLT__DIST_EXPONENTIAL):
    case PAIR(CLT__DIST_CONTINUOUS_BERNOULLI, CLT__DIST_EXPONENTIAL):
        return kl_to_exponential(fn, p, q, out);
    case PAIR(CLT__DIST_GAMMA, CLT__DIST_NORMAL): return kl_gamma_normal(fn, p, q, out);
    case PAIR(CLT__DIST_GUMBEL, CLT__DIST_NORMAL): return kl_gumbel_normal(fn, p, q, out);
    case PAIR(CLT__DIST_NORMAL, CLT__DIST_GUMBEL): return kl_normal_gumbel(fn, p, q, out);
    case PAIR(CLT__DIST_BETA, CLT__DIST_NORMAL): return kl_beta_normal(fn, p, q, out);
    case PAIR(CLT__DIST_BETA, CLT__DIST_GAMMA): return kl_beta_gamma(fn, p, q, out);
    case PAIR(CLT__DIST_CONTINUOUS_BERNOULLI, CLT__DIST_NORMAL):
        return kl_cb_normal(fn, p, q, out);
    case PAIR(CLT__DIST_PARETO, CLT__DIST_EXPONENTIAL):
        return kl_pareto_exponential(fn, p, q, out);
    }
#undef PAIR
    *found = false;
    return CLT_OK;
}

static clt_status kl(const char *fn, const clt_distribution *p, const clt_distribution *q,
                     clt_tensor **out);

/* TransformedDistribution || TransformedDistribution (LogisticNormal's
 * too): their bases' KL where the transforms (torch's ==) and the event
 * shapes are equal, of the batch shape torch expands the bases to. */
static clt_status kl_transformed(const char *fn, const clt_distribution *p,
                                 const clt_distribution *q, clt_tensor **out)
{
    bool eq = false;
    clt_status st = clt__tf_equal(fn, p->tf, q->tf, &eq);
    if (st != CLT_OK)
        return st;
    if (eq)
        eq = p->event_ndim == q->event_ndim &&
             memcmp(p->event_shape, q->event_shape, (size_t)p->event_ndim * sizeof(int64_t)) == 0;
    if (!eq)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: No KL(p || q) is implemented for p type %s and q type %s whose "
                          "transforms or event shapes differ",
                          fn, clt_distribution_name(p), clt_distribution_name(q));
    clt_tensor *r;
    CLT__TRY(kl(fn, p->base, q->base, &r));
    /* the leading dims the transforms add to a base are batch dims of
     * torch's expanded base */
    int nd = r->ndim;
    int64_t shape[CLT_MAX_DIMS], t[CLT_MAX_DIMS];
    memcpy(shape, r->shape, (size_t)nd * sizeof *shape);
    const clt_distribution *ds[2] = {p, q};
    for (int k = 0; k < 2; k++) {
        int pre = ds[k]->tf->in_ndim, nb = ds[k]->base->batch_ndim;
        if (pre == 0 || pre + nb > CLT_MAX_DIMS)
            continue;
        memcpy(t, ds[k]->tf->in_shape, (size_t)pre * sizeof *t);
        memcpy(t + pre, ds[k]->base->batch_shape, (size_t)nb * sizeof *t);
        CLT__TRY(clt__broadcast_shapes(nd, shape, pre + nb, t, &nd, shape, fn));
    }
    if (nd == r->ndim && memcmp(shape, r->shape, (size_t)nd * sizeof *shape) == 0) {
        *out = r;
        return CLT_OK;
    }
    return clt__expand_rec(fn, r, nd, shape, out);
done:
    return st;
}

/* The registered pairs, in the caller's scope. */
static clt_status kl(const char *fn, const clt_distribution *p, const clt_distribution *q,
                     clt_tensor **out)
{
    const char *np = clt_distribution_name(p), *nq = clt_distribution_name(q);
    /* Chi2 is a Gamma, as torch's subclass */
    if ((p->kind == CLT__DIST_GAMMA || p->kind == CLT__DIST_CHI2) &&
        (q->kind == CLT__DIST_GAMMA || q->kind == CLT__DIST_CHI2))
        return kl_gamma(fn, p, q, out);
    if ((p->kind == CLT__DIST_LOWRANK_MVN || p->kind == CLT__DIST_MVN) &&
        (q->kind == CLT__DIST_LOWRANK_MVN || q->kind == CLT__DIST_MVN) &&
        (p->kind == CLT__DIST_LOWRANK_MVN || q->kind == CLT__DIST_LOWRANK_MVN))
        return clt__dist_lowrank_kl(fn, p, q, out);
    if (CLT__DIST_IS_TF(p->kind) && CLT__DIST_IS_TF(q->kind))
        return kl_transformed(fn, p, q, out);
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
        case CLT__DIST_BETA: return kl_beta(fn, p, q, out);
        case CLT__DIST_DIRICHLET: return kl_dirichlet_of(fn, p->p[0], q->p[0], out);
        case CLT__DIST_POISSON: return kl_poisson(fn, p, q, out);
        case CLT__DIST_GUMBEL: return kl_gumbel(fn, p, q, out);
        case CLT__DIST_CAUCHY: return kl_cauchy(fn, p, q, out);
        case CLT__DIST_HALF_NORMAL: return kl_half_normal(fn, p, q, out);
        case CLT__DIST_PARETO: return kl_pareto(fn, p, q, out);
        case CLT__DIST_GEOMETRIC: return kl_geometric(fn, p, q, out);
        case CLT__DIST_LOG_NORMAL: return kl_normal(fn, p, q, out); /* their bases' */
        case CLT__DIST_BINOMIAL: return kl_binomial(fn, p, q, out);
        case CLT__DIST_CONTINUOUS_BERNOULLI: return kl_continuous_bernoulli(fn, p, q, out);
        case CLT__DIST_WISHART: return clt__dist_wishart_kl(fn, p, q, out);
        case CLT__DIST_WEIBULL:
        case CLT__DIST_KUMARASWAMY: return clt__dist_kl_same_transforms(fn, p, q, out);
        default: break;
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
    if (!found)
        st = clt__dist_kl_cross2(fn, p, q, out, &found);
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
