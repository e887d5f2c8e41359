/* kl2.c: the cross-family pairs of torch 1.13's kl_divergence that have
 * Uniform, Pareto or Bernoulli on one side (Uniform || Beta, Pareto || Gamma,
 * Bernoulli || Poisson, ...), and HalfCauchy || HalfCauchy, composed of
 * recorded ops with its formulas. */
#include <math.h>

#include "distributions/distributions.h"

/* t with inf where mask (broadcast to t's shape, not recorded) holds,
 * recorded (torch's result[mask] = inf). */
static clt_status inf_where(const char *fn, const clt_tensor *t, const clt_tensor *mask,
                            clt_tensor **out)
{
    clt_tensor *m;
    clt_status st = clt__expand_rec(fn, mask, t->ndim, t->shape, &m);
    return st != CLT_OK ? st : clt__masked_fill_rec(fn, t, m, INFINITY, out);
}

/* The masks of torch's support tests: a OP s (a scalar), or either of two,
 * computed with autograd off. */
typedef enum cmp { LT, LE, GT, GE } cmp;

static clt_status compare(const clt_tensor *a, cmp c, double s, clt_tensor **out)
{
    switch (c) {
    case LT: return clt_lt_scalar(a, s, out);
    case LE: return clt_le_scalar(a, s, out);
    case GT: return clt_gt_scalar(a, s, out);
    default: return clt_ge_scalar(a, s, out);
    }
}

static clt_status mask_either(const char *fn, const clt_tensor *a, cmp ca, double sa,
                              const clt_tensor *b, cmp cb, double sb, clt_tensor **out)
{
    clt_tensor *m1, *m2 = NULL;
    int was = clt_set_grad_enabled(0);
    clt_status st = compare(a, ca, sa, &m1);
    if (st == CLT_OK && b)
        st = compare(b, cb, sb, &m2);
    if (st == CLT_OK && m2)
        st = clt_logical_or(m1, m2, out);
    else if (st == CLT_OK)
        *out = m1;
    clt_set_grad_enabled(was);
    return clt__error_as(st, fn);
}

/* x log x, recorded (torch's _x_log_x). */
static clt_status x_log_x(const char *fn, const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *l;
    clt_status st = clt__log_rec(fn, x, &l);
    return st != CLT_OK ? st : clt__mul_rec(fn, x, l, out);
}

/* (x_log_x(high) - x_log_x(low) - (high - low)) / (high - low) of a
 * Uniform p (E_p[log x]), with w = high - low. */
static clt_status uniform_mean_log(const char *fn, const clt_distribution *p,
                                   const clt_tensor *w, clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(x_log_x(fn, p->p[1], &a));
    CLT__TRY(x_log_x(fn, p->p[0], &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__sub_rec(fn, a, w, &a));
    return clt__div_rec(fn, a, w, out);
done:
    return st;
}

/* q.concentration.lgamma() - q.concentration * q.rate.log() of a Gamma q. */
static clt_status gamma_log_norm(const char *fn, const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__error_as(clt_lgamma(q->p[0], &a), fn));
    CLT__TRY(clt__log_rec(fn, q->p[1], &b));
    CLT__TRY(clt__mul_rec(fn, q->p[0], b, &b));
    return clt__sub_rec(fn, a, b, out);
done:
    return st;
}

/* -H(p) - mean_p q.logits - log1p(-q.probs) - q._cont_bern_log_norm(), q a
 * ContinuousBernoulli, given -H(p) and mean_p. */
static clt_status to_continuous_bernoulli(const char *fn, const clt_tensor *neg_h,
                                          const clt_tensor *mean, const clt_distribution *q,
                                          clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__mul_rec(fn, mean, q->p[1], &a));
    CLT__TRY(clt__sub_rec(fn, neg_h, a, &a));
    CLT__TRY(clt__neg_rec(fn, q->p[0], &b));
    CLT__TRY(clt__log1p_rec(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__dist3_cb_log_norm(fn, q, &b));
    return clt__sub_rec(fn, a, b, out);
done:
    return st;
}

/* KL(Uniform || Beta): inf where p.high > 1 or p.low < 0. */
static clt_status kl_uniform_beta(const char *fn, const clt_distribution *p,
                                  const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *w, *t1, *t2, *t3, *t4, *a, *b, *m;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &w));
    CLT__TRY(clt__log_rec(fn, w, &t1));
    CLT__TRY(uniform_mean_log(fn, p, w, &a));
    CLT__TRY(clt__sub_scalar_rec(fn, q->p[0], 1, &b));
    CLT__TRY(clt__mul_rec(fn, b, a, &t2));
    /* (x_log_x(1 - high) - x_log_x(1 - low) + w) / w */
    CLT__TRY(clt__rsub_scalar_rec(fn, p->p[1], 1, &a));
    CLT__TRY(x_log_x(fn, a, &a));
    CLT__TRY(clt__rsub_scalar_rec(fn, p->p[0], 1, &b));
    CLT__TRY(x_log_x(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__add_rec(fn, a, w, &a));
    CLT__TRY(clt__div_rec(fn, a, w, &a));
    CLT__TRY(clt__sub_scalar_rec(fn, q->p[1], 1, &b));
    CLT__TRY(clt__mul_rec(fn, b, a, &t3));
    CLT__TRY(clt__error_as(clt_lgamma(q->p[0], &a), fn));
    CLT__TRY(clt__error_as(clt_lgamma(q->p[1], &b), fn));
    CLT__TRY(clt__add_rec(fn, a, b, &t4));
    CLT__TRY(clt__add_rec(fn, q->p[0], q->p[1], &a));
    CLT__TRY(clt__error_as(clt_lgamma(a, &a), fn));
    CLT__TRY(clt__sub_rec(fn, t4, a, &t4));
    CLT__TRY(clt__add_rec(fn, t3, t4, &a));
    CLT__TRY(clt__sub_rec(fn, a, t1, &a));
    CLT__TRY(clt__sub_rec(fn, a, t2, &a));
    CLT__TRY(mask_either(fn, p->p[1], GT, 1, p->p[0], LT, 0, &m));
    return inf_where(fn, a, m, out);
done:
    return st;
}

/* KL(Uniform || ContinuousBernoulli): inf where p.high >= 1 or p.low <= 0
 * (torch's test, which also takes the ends themselves). */
static clt_status kl_uniform_cb(const char *fn, const clt_distribution *p,
                                const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *h, *mean, *r, *m;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &h));
    CLT__TRY(clt__log_rec(fn, h, &h));
    CLT__TRY(clt__neg_rec(fn, h, &h));
    CLT__TRY(clt__add_rec(fn, p->p[1], p->p[0], &mean));
    CLT__TRY(clt__div_scalar_rec(fn, mean, 2, &mean));
    CLT__TRY(to_continuous_bernoulli(fn, h, mean, q, &r));
    CLT__TRY(mask_either(fn, p->p[1], GE, 1, p->p[0], LE, 0, &m));
    return inf_where(fn, r, m, out);
done:
    return st;
}

/* KL(Uniform || Gamma): inf where p.low < 0. */
static clt_status kl_uniform_gamma(const char *fn, const clt_distribution *p,
                                   const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *w, *t1, *t2, *t3, *t4, *a, *m;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &w));
    CLT__TRY(clt__log_rec(fn, w, &t1));
    CLT__TRY(gamma_log_norm(fn, q, &t2));
    CLT__TRY(uniform_mean_log(fn, p, w, &a));
    CLT__TRY(clt__rsub_scalar_rec(fn, q->p[0], 1, &t3));
    CLT__TRY(clt__mul_rec(fn, t3, a, &t3));
    CLT__TRY(clt__add_rec(fn, p->p[1], p->p[0], &a));
    CLT__TRY(clt__mul_rec(fn, q->p[1], a, &t4));
    CLT__TRY(clt__div_scalar_rec(fn, t4, 2, &t4));
    CLT__TRY(clt__sub_rec(fn, t2, t1, &a));
    CLT__TRY(clt__add_rec(fn, a, t3, &a));
    CLT__TRY(clt__add_rec(fn, a, t4, &a));
    CLT__TRY(mask_either(fn, p->p[0], LT, 0, NULL, LT, 0, &m));
    return inf_where(fn, a, m, out);
done:
    return st;
}

/* KL(Uniform || Gumbel). */
static clt_status kl_uniform_gumbel(const char *fn, const clt_distribution *p,
                                    const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *ct, *hd, *ld, *t1, *t2, *a, *b;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &a));
    CLT__TRY(clt__div_rec(fn, q->p[1], a, &ct));
    CLT__TRY(clt__sub_rec(fn, p->p[1], q->p[0], &hd));
    CLT__TRY(clt__div_rec(fn, hd, q->p[1], &hd));
    CLT__TRY(clt__sub_rec(fn, p->p[0], q->p[0], &ld));
    CLT__TRY(clt__div_rec(fn, ld, q->p[1], &ld));
    CLT__TRY(clt__log_rec(fn, ct, &t1));
    CLT__TRY(clt__add_rec(fn, hd, ld, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 0.5, &a));
    CLT__TRY(clt__add_rec(fn, t1, a, &t1));
    CLT__TRY(clt__neg_rec(fn, hd, &a));
    CLT__TRY(clt__exp_rec(fn, a, &a));
    CLT__TRY(clt__neg_rec(fn, ld, &b));
    CLT__TRY(clt__exp_rec(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_rec(fn, ct, a, &t2));
    return clt__sub_rec(fn, t1, t2, out);
done:
    return st;
}

/* KL(Uniform || Pareto): (alpha + 1) E_p[log x] - log(alpha scale^alpha w),
 * inf where p.low < q.scale. */
static clt_status kl_uniform_pareto(const char *fn, const clt_distribution *p,
                                    const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *w, *t1, *t2, *a, *m;
    clt_status st;
    CLT__TRY(clt__sub_rec(fn, p->p[1], p->p[0], &w));
    /* log(alpha) + alpha log(scale) + log(w) */
    CLT__TRY(clt__log_rec(fn, q->p[1], &t1));
    CLT__TRY(clt__log_rec(fn, q->p[0], &a));
    CLT__TRY(clt__mul_rec(fn, q->p[1], a, &a));
    CLT__TRY(clt__add_rec(fn, t1, a, &t1));
    CLT__TRY(clt__log_rec(fn, w, &a));
    CLT__TRY(clt__add_rec(fn, t1, a, &t1));
    CLT__TRY(uniform_mean_log(fn, p, w, &t2));
    CLT__TRY(clt__add_scalar_rec(fn, q->p[1], 1, &a));
    CLT__TRY(clt__mul_rec(fn, t2, a, &t2));
    CLT__TRY(clt__sub_rec(fn, t2, t1, &t2));
    int was = clt_set_grad_enabled(0);
    st = clt_lt(p->p[0], q->p[0], &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    return inf_where(fn, t2, m, out);
done:
    return st;
}

/* KL(p || Uniform) of a p on [0, 1] (Beta, ContinuousBernoulli): -H(p) +
 * log(q.high - q.low), inf where q's interval does not cover [0, 1]: for
 * Beta where q.low > 0 or q.high < 1, for ContinuousBernoulli where q.low >=
 * 0 or q.high <= 1 (strict: torch's test, finite only where q's interval
 * strictly covers [0, 1]). */
static clt_status kl_unit_uniform(const char *fn, const clt_distribution *p,
                                  const clt_distribution *q, int strict, clt_tensor **out)
{
    clt_tensor *h, *a, *m;
    clt_status st;
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__sub_rec(fn, q->p[1], q->p[0], &a));
    CLT__TRY(clt__log_rec(fn, a, &a));
    CLT__TRY(clt__sub_rec(fn, a, h, &a));
    CLT__TRY(mask_either(fn, q->p[0], strict ? GE : GT, 0, q->p[1], strict ? LE : LT, 1, &m));
    return inf_where(fn, a, m, out);
done:
    return st;
}

/* KL(Beta || ContinuousBernoulli). */
static clt_status kl_beta_cb(const char *fn, const clt_distribution *p,
                             const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *h, *mean;
    clt_status st;
    CLT__TRY(clt__dist2_entropy(fn, p, &h));
    CLT__TRY(clt__neg_rec(fn, h, &h));
    CLT__TRY(clt__dist2_moment(fn, p, 0, &mean));
    return to_continuous_bernoulli(fn, h, mean, q, out);
done:
    return st;
}

/* KL(Gamma || Gumbel). */
static clt_status kl_gamma_gumbel(const char *fn, const clt_distribution *p,
                                  const clt_distribution *q, clt_tensor **out)
{
    const clt_tensor *c = p->p[0];
    clt_tensor *bsp, *lsr, *t1, *t2, *t3, *a, *b;
    clt_status st;
    CLT__TRY(clt__mul_rec(fn, p->p[1], q->p[1], &bsp));
    CLT__TRY(clt__div_rec(fn, q->p[0], q->p[1], &lsr));
    CLT__TRY(clt__sub_scalar_rec(fn, c, 1, &a));
    CLT__TRY(clt__error_as(clt_digamma(c, &b), fn));
    CLT__TRY(clt__mul_rec(fn, a, b, &t1));
    CLT__TRY(clt__error_as(clt_lgamma(c, &a), fn));
    CLT__TRY(clt__sub_rec(fn, t1, a, &t1));
    CLT__TRY(clt__sub_rec(fn, t1, c, &t1));
    CLT__TRY(clt__log_rec(fn, bsp, &t2));
    CLT__TRY(clt__div_rec(fn, c, bsp, &a));
    CLT__TRY(clt__add_rec(fn, t2, a, &t2));
    /* exp(lsr) (1 + 1 / bsp)^-c - lsr, the power as exp(-c log1p(1 / bsp)) */
    CLT__TRY(clt__reciprocal_rec(fn, bsp, &a));
    CLT__TRY(clt__log1p_rec(fn, a, &a));
    CLT__TRY(clt__mul_rec(fn, c, a, &a));
    CLT__TRY(clt__sub_rec(fn, lsr, a, &a));
    CLT__TRY(clt__exp_rec(fn, a, &t3));
    CLT__TRY(clt__sub_rec(fn, t3, lsr, &t3));
    CLT__TRY(clt__add_rec(fn, t1, t2, &t1));
    return clt__add_rec(fn, t1, t3, out);
done:
    return st;
}

/* KL(Pareto || Gamma): inf where alpha <= 1. */
static clt_status kl_pareto_gamma(const char *fn, const clt_distribution *p,
                                  const clt_distribution *q, clt_tensor **out)
{
    const clt_tensor *sc = p->p[0], *al = p->p[1];
    clt_tensor *ct, *t1, *t2, *t3, *t4, *a, *m;
    clt_status st;
    CLT__TRY(clt__log_rec(fn, sc, &ct));
    CLT__TRY(clt__reciprocal_rec(fn, al, &a));
    CLT__TRY(clt__add_rec(fn, ct, a, &ct));
    CLT__TRY(clt__log_rec(fn, al, &t1));
    CLT__TRY(clt__sub_rec(fn, t1, ct, &t1));
    CLT__TRY(gamma_log_norm(fn, q, &t2));
    CLT__TRY(clt__rsub_scalar_rec(fn, q->p[0], 1, &t3));
    CLT__TRY(clt__mul_rec(fn, t3, ct, &t3));
    CLT__TRY(clt__mul_rec(fn, q->p[1], al, &t4));
    CLT__TRY(clt__mul_rec(fn, t4, sc, &t4));
    CLT__TRY(clt__sub_scalar_rec(fn, al, 1, &a));
    CLT__TRY(clt__div_rec(fn, t4, a, &t4));
    CLT__TRY(clt__add_rec(fn, t1, t2, &t1));
    CLT__TRY(clt__add_rec(fn, t1, t3, &t1));
    CLT__TRY(clt__add_rec(fn, t1, t4, &t1));
    CLT__TRY(clt__sub_scalar_rec(fn, t1, 1, &t1));
    CLT__TRY(mask_either(fn, al, LE, 1, NULL, LE, 0, &m));
    return inf_where(fn, t1, m, out);
done:
    return st;
}

/* KL(Pareto || Normal): inf where alpha <= 2. */
static clt_status kl_pareto_normal(const char *fn, const clt_distribution *p,
                                   const clt_distribution *q, clt_tensor **out)
{
    const clt_tensor *sc = p->p[0], *al = p->p[1];
    clt_tensor *vn, *ct, *t1, *t2, *t3, *t4, *a, *m;
    clt_status st;
    CLT__TRY(clt__square_rec(fn, q->p[1], &vn));
    CLT__TRY(clt__mul_scalar_rec(fn, vn, 2, &vn));
    CLT__TRY(clt__sub_scalar_rec(fn, al, 1, &a));
    CLT__TRY(clt__div_rec(fn, sc, a, &ct));
    CLT__TRY(clt__mul_scalar_rec(fn, q->p[1], sqrt(2 * M_PI), &t1));
    CLT__TRY(clt__mul_rec(fn, t1, al, &t1));
    CLT__TRY(clt__div_rec(fn, t1, sc, &t1));
    CLT__TRY(clt__log_rec(fn, t1, &t1));
    CLT__TRY(clt__reciprocal_rec(fn, al, &t2));
    CLT__TRY(clt__square_rec(fn, ct, &a));
    CLT__TRY(clt__mul_rec(fn, al, a, &t3));
    CLT__TRY(clt__sub_scalar_rec(fn, al, 2, &a));
    CLT__TRY(clt__div_rec(fn, t3, a, &t3));
    CLT__TRY(clt__mul_rec(fn, al, ct, &t4));
    CLT__TRY(clt__sub_rec(fn, t4, q->p[0], &t4));
    CLT__TRY(clt__square_rec(fn, t4, &t4));
    CLT__TRY(clt__add_rec(fn, t3, t4, &t3));
    CLT__TRY(clt__div_rec(fn, t3, vn, &t3));
    CLT__TRY(clt__sub_rec(fn, t1, t2, &t1));
    CLT__TRY(clt__add_rec(fn, t1, t3, &t1));
    CLT__TRY(clt__sub_scalar_rec(fn, t1, 1, &t1));
    CLT__TRY(mask_either(fn, al, LE, 2, NULL, LE, 0, &m));
    return inf_where(fn, t1, m, out);
done:
    return st;
}

/* KL(Bernoulli || Poisson): -H(p) - (p.probs log(q.rate) - q.rate). */
static clt_status kl_bernoulli_poisson(const char *fn, const clt_distribution *p,
                                       const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *nh, *a, *b;
    clt_status st;
    /* -H(p) = probs logits + logsigmoid(-logits) */
    CLT__TRY(clt__neg_rec(fn, p->p[1], &a));
    CLT__TRY(clt__error_as(clt_logsigmoid(a, &a), fn));
    CLT__TRY(clt__mul_rec(fn, p->p[1], p->p[0], &b));
    CLT__TRY(clt__add_rec(fn, a, b, &nh));
    CLT__TRY(clt__log_rec(fn, q->p[0], &a));
    CLT__TRY(clt__mul_rec(fn, p->p[0], a, &a));
    CLT__TRY(clt__sub_rec(fn, a, q->p[0], &a));
    return clt__sub_rec(fn, nh, a, out);
done:
    return st;
}

/* HalfCauchy || HalfCauchy: torch's TransformedDistribution pair (the same
 * AbsTransform), the KL of the bases Cauchy(0, s1) || Cauchy(0, s2):
 * log((s1 + s2)^2) - log(4 s1 s2). */
static clt_status kl_half_cauchy(const char *fn, const clt_distribution *p,
                                 const clt_distribution *q, clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__add_rec(fn, p->p[0], q->p[0], &a));
    CLT__TRY(clt__square_rec(fn, a, &a));
    CLT__TRY(clt__log_rec(fn, a, &a));
    CLT__TRY(clt__mul_rec(fn, p->p[0], q->p[0], &b));
    CLT__TRY(clt__mul_scalar_rec(fn, b, 4, &b));
    CLT__TRY(clt__log_rec(fn, b, &b));
    return clt__sub_rec(fn, a, b, out);
done:
    return st;
}

clt_status clt__dist_kl_cross2(const char *fn, const clt_distribution *p,
                               const clt_distribution *q, clt_tensor **out, bool *found)
{
    *found = true;
    /* Chi2 is a Gamma, as torch's subclass */
    clt__dist_kind kp = p->kind == CLT__DIST_CHI2 ? CLT__DIST_GAMMA : p->kind;
    clt__dist_kind kq = q->kind == CLT__DIST_CHI2 ? CLT__DIST_GAMMA : q->kind;
#define PAIR(a, b) ((a) * 64 + (b))
    switch (PAIR(kp, kq)) {
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_BETA): return kl_uniform_beta(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_CONTINUOUS_BERNOULLI):
        return kl_uniform_cb(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_GAMMA): return kl_uniform_gamma(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_GUMBEL): return kl_uniform_gumbel(fn, p, q, out);
    case PAIR(CLT__DIST_UNIFORM, CLT__DIST_PARETO): return kl_uniform_pareto(fn, p, q, out);
    case PAIR(CLT__DIST_BETA, CLT__DIST_UNIFORM): return kl_unit_uniform(fn, p, q, 0, out);
    case PAIR(CLT__DIST_BETA, CLT__DIST_CONTINUOUS_BERNOULLI): return kl_beta_cb(fn, p, q, out);
    case PAIR(CLT__DIST_CONTINUOUS_BERNOULLI, CLT__DIST_UNIFORM):
        return kl_unit_uniform(fn, p, q, 1, out);
    case PAIR(CLT__DIST_GAMMA, CLT__DIST_GUMBEL): return kl_gamma_gumbel(fn, p, q, out);
    case PAIR(CLT__DIST_PARETO, CLT__DIST_GAMMA): return kl_pareto_gamma(fn, p, q, out);
    case PAIR(CLT__DIST_PARETO, CLT__DIST_NORMAL): return kl_pareto_normal(fn, p, q, out);
    case PAIR(CLT__DIST_BERNOULLI, CLT__DIST_POISSON): return kl_bernoulli_poisson(fn, p, q, out);
    case PAIR(CLT__DIST_HALF_CAUCHY, CLT__DIST_HALF_CAUCHY): return kl_half_cauchy(fn, p, q, out);
    }
#undef PAIR
    *found = false;
    return CLT_OK;
}

/* Whether a == b (1/a == 1/b when recip, as torch compares a
 * PowerTransform's exponents) everywhere, broadcast, read back. */
static clt_status all_equal(const char *fn, const clt_tensor *a, const clt_tensor *b, bool recip,
                            bool *eq)
{
    clt_tensor *x = (clt_tensor *)a, *y = (clt_tensor *)b, *e, *all;
    clt_status st;
    double v = 0;
    int was = clt_set_grad_enabled(0);
    if (recip) {
        CLT__TRY(clt__reciprocal_rec(fn, a, &x));
        CLT__TRY(clt__reciprocal_rec(fn, b, &y));
    }
    CLT__TRY(clt__error_as(clt_eq(x, y, &e), fn));
    CLT__TRY(clt__error_as(clt_all(e, &all), fn));
    CLT__TRY(clt__error_as(clt_tensor_item(all, &v), fn));
    *eq = v != 0;
done:
    clt_set_grad_enabled(was);
    return st;
}

clt_status clt__dist_kl_same_transforms(const char *fn, const clt_distribution *p,
                                        const clt_distribution *q, clt_tensor **out)
{
    /* Weibull: PowerTransform(1 / concentration), AffineTransform(0,
     * scale) over Exponential(1); Kumaraswamy: PowerTransform(1 / c0),
     * AffineTransform(1, -1), PowerTransform(1 / c1) over Uniform(0, 1) */
    bool weibull = p->kind == CLT__DIST_WEIBULL, eq = true;
    clt_status st = CLT_OK;
    for (int k = 0; k < 2 && eq && st == CLT_OK; k++)
        st = all_equal(fn, p->p[k], q->p[k], !weibull || k == 1, &eq);
    if (st != CLT_OK)
        return st;
    if (!eq)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: No KL(p || q) is implemented for p type %s and q type %s with "
                          "other parameters (their transforms differ)",
                          fn, clt_distribution_name(p), clt_distribution_name(q));
    int nd;
    int64_t shape[CLT_MAX_DIMS];
    CLT__TRY(clt__broadcast_shapes(p->batch_ndim, p->batch_shape, q->batch_ndim, q->batch_shape,
                                   &nd, shape, fn));
    return clt__error_as(clt_zeros(p->p[0]->dev, p->dtype, nd, shape, out), fn);
done:
    return st;
}
