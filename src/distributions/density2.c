/* density2.c: the families after Independent (Gamma and those built on it,
 * the transformed and heavy-tailed ones, Poisson and Geometric): their
 * draws, log-densities, entropies, moments and cdf/icdf, composed of
 * recorded ops with torch 1.13's formulas.  Gamma's draw is torch's
 * _standard_gamma, recorded with its implicit gradient. */
#include <float.h>
#include <math.h>

#include "autograd/autograd.h"
#include "distributions/distributions.h"

#define LOG_SQRT_2PI 0.91893853320467274178 /* log(sqrt(2 pi)) */
#define EULER 0.57721566490153286061
#define PI 3.14159265358979323846
#define LOG2 0.69314718055994530942

/* ---- Gamma's reparameterised draw ---------------------------------------------- */

/* saved: alpha, x.  torch's _standard_gamma_grad. */
static clt_status bw_standard_gamma(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__standard_gamma_grad("clt_backward", g, n->saved[0], n->saved[1], &gin[0]);
}

/* Gamma(conc, 1) draws of shape ext (n dims), recorded: d x / d conc is
 * torch's implicit gradient. */
static clt_status standard_gamma(const char *fn, clt_generator *gen, const clt_tensor *conc,
                                 int n, const int64_t *ext, clt_tensor **out)
{
    clt_tensor *a;
    clt__node *node = NULL;
    clt_status st = clt__expand_rec(fn, conc, n, ext, &a);
    if (st != CLT_OK)
        return st;
    int was = clt_set_grad_enabled(0);
    st = clt__standard_gamma(fn, gen, a, out);
    clt_set_grad_enabled(was);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in = a;
    return clt__record(st, out, "StandardGammaBackward0", bw_standard_gamma, 1, &in, 2,
                       (const clt_tensor *[]){a, *out}, &node);
}

/* A draw of shape ext without grad (the samplers of clt_randn and the
 * in-place ones). */
static clt_status fresh(const char *fn, const clt_distribution *d, int n, const int64_t *ext,
                        clt_tensor **out)
{
    return clt__error_as(clt_empty(d->p[0]->dev, d->dtype, n, ext, out), fn);
}

static double tiny_of(const clt_distribution *d)
{
    return d->dtype == CLT_FLOAT64 ? DBL_MIN : FLT_MIN;
}

static double eps_of(const clt_distribution *d)
{
    return d->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
}

clt_status clt__dist2_sample(const char *fn, const clt_distribution *d, clt_generator *gen, int n,
                             const int64_t *ext, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_device *dev = p[0]->dev;
    clt_tensor *a, *b, *c, *e;
    clt_status st;
    double tiny = tiny_of(d);
    if (CLT__DIST_IS3(d->kind))
        return clt__dist3_sample(fn, d, gen, n, ext, out);
    switch (d->kind) {
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: /* _standard_gamma(conc) / rate */
        CLT__TRY(standard_gamma(fn, gen, p[0], n, ext, &a));
        return clt__div_rec(fn, a, p[1], out);
    case CLT__DIST_BETA: /* g1 / (g1 + g0), the Dirichlet of [c1, c0] */
        CLT__TRY(standard_gamma(fn, gen, p[0], n, ext, &a));
        CLT__TRY(standard_gamma(fn, gen, p[1], n, ext, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &c));
        return clt__div_rec(fn, a, c, out);
    case CLT__DIST_DIRICHLET: /* g / g.sum(-1) */
        CLT__TRY(standard_gamma(fn, gen, p[0], n, ext, &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, n - 1, 1, &b));
        return clt__div_rec(fn, a, b, out);
    case CLT__DIST_STUDENT_T: /* loc + scale X rsqrt(Z / df), Z ~ Chi2(df) */
        CLT__TRY(clt__error_as(clt_randn(gen, dev, d->dtype, n, ext, &e), fn));
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], 0.5, &a));
        CLT__TRY(standard_gamma(fn, gen, a, n, ext, &b));
        CLT__TRY(clt__div_scalar_rec(fn, b, 0.5, &b));
        CLT__TRY(clt__div_rec(fn, b, p[0], &b));
        CLT__TRY(clt__rsqrt_rec(fn, b, &b));
        CLT__TRY(clt__mul_rec(fn, e, b, &c));
        CLT__TRY(clt__mul_rec(fn, p[2], c, &c));
        return clt__add_rec(fn, p[1], c, out);
    case CLT__DIST_FISHER_SNEDECOR: { /* (G(df1/2) / df1) / (G(df2/2) / df2), clamped */
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], 0.5, &a));
        CLT__TRY(standard_gamma(fn, gen, a, n, ext, &a));
        CLT__TRY(clt__div_rec(fn, a, p[0], &a));
        CLT__TRY(clt__mul_scalar_rec(fn, p[1], 0.5, &b));
        CLT__TRY(standard_gamma(fn, gen, b, n, ext, &b));
        CLT__TRY(clt__div_rec(fn, b, p[1], &b));
        CLT__TRY(clt__div_rec(fn, a, b, &c));
        return clt__clamp_rec(fn, c, &tiny, NULL, out);
    }
    case CLT__DIST_LOG_NORMAL: /* exp(loc + eps scale) */
    case CLT__DIST_HALF_NORMAL: /* |eps scale| */
        CLT__TRY(clt__error_as(clt_randn(gen, dev, d->dtype, n, ext, &e), fn));
        if (d->kind == CLT__DIST_HALF_NORMAL) {
            CLT__TRY(clt__mul_rec(fn, e, p[0], &a));
            return clt__abs_rec(fn, a, out);
        }
        CLT__TRY(clt__mul_rec(fn, e, p[1], &a));
        CLT__TRY(clt__add_rec(fn, p[0], a, &a));
        return clt__exp_rec(fn, a, out);
    case CLT__DIST_GUMBEL: { /* loc - scale log(-log(u)), u in [tiny, 1 - eps) */
        CLT__TRY(fresh(fn, d, n, ext, &e));
        CLT__TRY(clt__error_as(clt_uniform_(e, gen, 0, 1), fn));
        CLT__TRY(clt__mul_scalar_rec(fn, e, 1 - eps_of(d) - tiny, &e));
        CLT__TRY(clt__add_scalar_rec(fn, e, tiny, &e));
        CLT__TRY(clt__log_rec(fn, e, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, p[1], a, &a));
        return clt__sub_rec(fn, p[0], a, out);
    }
    case CLT__DIST_CAUCHY: /* loc + eps scale, eps from cauchy_ */
    case CLT__DIST_HALF_CAUCHY: /* |eps scale| */
        CLT__TRY(fresh(fn, d, n, ext, &e));
        CLT__TRY(clt__error_as(clt_cauchy_(e, gen, 0, 1), fn));
        if (d->kind == CLT__DIST_HALF_CAUCHY) {
            CLT__TRY(clt__mul_rec(fn, e, p[0], &a));
            return clt__abs_rec(fn, a, out);
        }
        CLT__TRY(clt__mul_rec(fn, e, p[1], &a));
        return clt__add_rec(fn, p[0], a, out);
    case CLT__DIST_PARETO: /* scale exp(e / alpha) */
    case CLT__DIST_WEIBULL: /* scale e^(1 / concentration) */
        CLT__TRY(fresh(fn, d, n, ext, &e));
        CLT__TRY(clt__error_as(clt_exponential_(e, gen, 1.0), fn));
        if (d->kind == CLT__DIST_PARETO) {
            CLT__TRY(clt__div_rec(fn, e, p[1], &a));
            CLT__TRY(clt__exp_rec(fn, a, &a));
        } else {
            CLT__TRY(clt__reciprocal_rec(fn, p[1], &b));
            CLT__TRY(clt__pow_rec(fn, e, b, &a));
        }
        return clt__mul_rec(fn, p[0], a, out);
    case CLT__DIST_POISSON:
        CLT__TRY(clt__expand_rec(fn, p[0], n, ext, &a));
        return clt__error_as(clt_poisson(gen, a, out), fn);
    case CLT__DIST_GEOMETRIC: /* floor(log(u) / log1p(-probs)), u in [tiny, 1) */
        CLT__TRY(fresh(fn, d, n, ext, &e));
        CLT__TRY(clt__error_as(clt_uniform_(e, gen, tiny, 1), fn));
        CLT__TRY(clt__log_rec(fn, e, &a));
        CLT__TRY(clt__neg_rec(fn, p[0], &b));
        CLT__TRY(clt__log1p_rec(fn, b, &b));
        CLT__TRY(clt__div_rec(fn, a, b, &a));
        return clt__floor_rec(fn, a, out);
    case CLT__DIST_NEGATIVE_BINOMIAL: /* poisson(Gamma(total_count, exp(-logits))) */
        CLT__TRY(standard_gamma(fn, gen, p[0], n, ext, &a));
        CLT__TRY(clt__exp_rec(fn, p[2], &b));
        CLT__TRY(clt__mul_rec(fn, a, b, &a));
        return clt__error_as(clt_poisson(gen, a, out), fn);
    case CLT__DIST_RELAXED_BERNOULLI: {
        /* clipped sigmoid((logit(u) + logit(probs)) / temperature), u and probs clamped
         * to [eps, 1 - eps] */
        double eps = eps_of(d), hi = 1 - eps, top = 1 - eps;
        CLT__TRY(clt__error_as(clt_rand(gen, dev, d->dtype, n, ext, &e), fn));
        CLT__TRY(clt__clamp_rec(fn, e, &eps, &hi, &e));
        CLT__TRY(clt__log_rec(fn, e, &a));
        CLT__TRY(clt__neg_rec(fn, e, &b));
        CLT__TRY(clt__log1p_rec(fn, b, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &e));
        CLT__TRY(clt__expand_rec(fn, p[0], n, ext, &c));
        CLT__TRY(clt__clamp_rec(fn, c, &eps, &hi, &c));
        CLT__TRY(clt__log_rec(fn, c, &a));
        CLT__TRY(clt__neg_rec(fn, c, &b));
        CLT__TRY(clt__log1p_rec(fn, b, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(clt__add_rec(fn, e, a, &a));
        CLT__TRY(clt__div_rec(fn, a, p[2], &a));
        CLT__TRY(clt__sigmoid_rec(fn, a, &a));
        return clt__clamp_rec(fn, a, &tiny, &top, out);
    }
    case CLT__DIST_KUMARASWAMY: /* (1 - u^(1/c0))^(1/c1) */
        CLT__TRY(clt__error_as(clt_rand(gen, dev, d->dtype, n, ext, &e), fn));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &b));
        CLT__TRY(clt__pow_rec(fn, e, b, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[0], &b));
        return clt__pow_rec(fn, a, b, out);
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: %s has no sampler here", fn,
                      clt_distribution_name(d));
done:
    return st;
}

/* ---- log_prob -------------------------------------------------------------------- */

static clt_status lgamma_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    return clt__error_as(clt_lgamma(a, out), fn);
}

static clt_status digamma_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    return clt__error_as(clt_digamma(a, out), fn);
}

/* a mask of x compared with s, not recorded: 0 x <= s, 1 x > s, 2 x == s,
 * 3 x >= s. */
static clt_status mask_of(const char *fn, const clt_tensor *x, int how, double s,
                          clt_tensor **out)
{
    int was = clt_set_grad_enabled(0);
    clt_status st = how == 0   ? clt_le_scalar(x, s, out)
                    : how == 1 ? clt_gt_scalar(x, s, out)
                    : how == 2 ? clt_eq_scalar(x, s, out)
                               : clt_ge_scalar(x, s, out);
    clt_set_grad_enabled(was);
    return clt__error_as(st, fn);
}

/* t with value where mask holds (both broadcast to their common shape),
 * recorded. */
static clt_status fill(const char *fn, const clt_tensor *t, const clt_tensor *mask, double value,
                       clt_tensor **out)
{
    int nd;
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *te, *me;
    clt_status st;
    CLT__TRY(clt__broadcast_shapes(t->ndim, t->shape, mask->ndim, mask->shape, &nd, shape, fn));
    CLT__TRY(clt__expand_rec(fn, t, nd, shape, &te));
    CLT__TRY(clt__expand_rec(fn, mask, nd, shape, &me));
    return clt__masked_fill_rec(fn, te, me, value, out);
done:
    return st;
}

/* Normal(loc, scale)'s log-density at v (loc NULL: 0). */
static clt_status normal_lp(const char *fn, const clt_tensor *loc, const clt_tensor *scale,
                            const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *a, *b, *c;
    clt_status st;
    if (loc)
        CLT__TRY(clt__sub_rec(fn, v, loc, &a));
    else
        CLT__TRY(clt__expand_rec(fn, v, v->ndim, v->shape, &a));
    CLT__TRY(clt__div_rec(fn, a, scale, &a));
    CLT__TRY(clt__square_rec(fn, a, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, -0.5, &a));
    CLT__TRY(clt__log_rec(fn, scale, &c));
    CLT__TRY(clt__sub_rec(fn, a, c, &b));
    return clt__sub_scalar_rec(fn, b, LOG_SQRT_2PI, out);
done:
    return st;
}

/* Cauchy(loc, scale)'s log-density at v (loc NULL: 0). */
static clt_status cauchy_lp(const char *fn, const clt_tensor *loc, const clt_tensor *scale,
                            const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *a, *c;
    clt_status st;
    if (loc)
        CLT__TRY(clt__sub_rec(fn, v, loc, &a));
    else
        CLT__TRY(clt__expand_rec(fn, v, v->ndim, v->shape, &a));
    CLT__TRY(clt__div_rec(fn, a, scale, &a));
    CLT__TRY(clt__square_rec(fn, a, &a));
    CLT__TRY(clt__log1p_rec(fn, a, &a));
    CLT__TRY(clt__log_rec(fn, scale, &c));
    CLT__TRY(clt__add_rec(fn, a, c, &a));
    return clt__rsub_scalar_rec(fn, a, -log(PI), out);
done:
    return st;
}

clt_status clt__dist2_log_prob(const char *fn, const clt_distribution *d, const clt_tensor *value,
                               clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *v, *a, *b, *c, *m;
    clt_status st;
    if (clt__dtype_is_float(value->dtype))
        CLT__TRY(clt__expand_rec(fn, value, value->ndim, value->shape, &v));
    else
        CLT__TRY(clt__to_dtype_rec(fn, value, d->dtype, &v));
    if (CLT__DIST_IS3(d->kind))
        return clt__dist3_log_prob(fn, d, v, out);
    switch (d->kind) {
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: /* xlogy(c, r) + xlogy(c - 1, v) - r v - lgamma(c) */
        CLT__TRY(clt__xlogy_rec(fn, p[0], p[1], &a));
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 1, &b));
        CLT__TRY(clt__xlogy_rec(fn, b, v, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__mul_rec(fn, p[1], v, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(lgamma_rec(fn, p[0], &c));
        return clt__sub_rec(fn, a, c, out);
    case CLT__DIST_BETA: /* xlogy(c1 - 1, v) + xlogy(c0 - 1, 1 - v) + lgamma(c1 + c0)
                          * - lgamma(c1) - lgamma(c0) */
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 1, &a));
        CLT__TRY(clt__xlogy_rec(fn, a, v, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, p[1], 1, &b));
        CLT__TRY(clt__rsub_scalar_rec(fn, v, 1, &c));
        CLT__TRY(clt__xlogy_rec(fn, b, c, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__add_rec(fn, p[0], p[1], &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(lgamma_rec(fn, p[0], &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(lgamma_rec(fn, p[1], &b));
        return clt__sub_rec(fn, a, b, out);
    case CLT__DIST_DIRICHLET: { /* sum xlogy(c - 1, v) + lgamma(sum c) - sum lgamma(c) */
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 1, &a));
        CLT__TRY(clt__xlogy_rec(fn, a, v, &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
        int last = p[0]->ndim - 1;
        CLT__TRY(clt__sum_dim_rec(fn, p[0], last, 0, &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(lgamma_rec(fn, p[0], &b));
        CLT__TRY(clt__sum_dim_rec(fn, b, last, 0, &b));
        return clt__sub_rec(fn, a, b, out);
    }
    case CLT__DIST_STUDENT_T: { /* -(df + 1)/2 log1p(y^2 / df) - Z */
        CLT__TRY(clt__sub_rec(fn, v, p[1], &a));
        CLT__TRY(clt__div_rec(fn, a, p[2], &a));
        CLT__TRY(clt__square_rec(fn, a, &a));
        CLT__TRY(clt__div_rec(fn, a, p[0], &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__add_scalar_rec(fn, p[0], 1, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, -0.5, &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        /* Z = log(scale) + log(df) / 2 + log(pi) / 2 + lgamma(df / 2) - lgamma((df + 1) / 2) */
        CLT__TRY(clt__log_rec(fn, p[2], &c));
        CLT__TRY(clt__log_rec(fn, p[0], &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, 0.5, &b));
        CLT__TRY(clt__add_rec(fn, c, b, &c));
        CLT__TRY(clt__add_scalar_rec(fn, c, 0.5 * log(PI), &c));
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], 0.5, &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, c, b, &c));
        CLT__TRY(clt__add_scalar_rec(fn, p[0], 1, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, 0.5, &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        CLT__TRY(clt__sub_rec(fn, c, b, &c));
        return clt__sub_rec(fn, a, c, out);
    }
    case CLT__DIST_FISHER_SNEDECOR: { /* t1 + t2 + t3 - t4 */
        clt_tensor *c1, *c2, *c3, *t;
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], 0.5, &c1));
        CLT__TRY(clt__mul_scalar_rec(fn, p[1], 0.5, &c2));
        CLT__TRY(clt__add_rec(fn, c1, c2, &c3));
        CLT__TRY(lgamma_rec(fn, c3, &t));
        CLT__TRY(lgamma_rec(fn, c1, &a));
        CLT__TRY(clt__sub_rec(fn, t, a, &t));
        CLT__TRY(lgamma_rec(fn, c2, &a));
        CLT__TRY(clt__sub_rec(fn, t, a, &t));
        CLT__TRY(clt__log_rec(fn, p[0], &a));
        CLT__TRY(clt__mul_rec(fn, c1, a, &a));
        CLT__TRY(clt__add_rec(fn, t, a, &t));
        CLT__TRY(clt__log_rec(fn, p[1], &a));
        CLT__TRY(clt__mul_rec(fn, c2, a, &a));
        CLT__TRY(clt__add_rec(fn, t, a, &t));
        CLT__TRY(clt__sub_scalar_rec(fn, c1, 1, &a));
        CLT__TRY(clt__log_rec(fn, v, &b));
        CLT__TRY(clt__mul_rec(fn, a, b, &a));
        CLT__TRY(clt__add_rec(fn, t, a, &t));
        CLT__TRY(clt__mul_rec(fn, p[0], v, &a));
        CLT__TRY(clt__add_rec(fn, p[1], a, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, c3, a, &a));
        return clt__sub_rec(fn, t, a, out);
    }
    case CLT__DIST_LOG_NORMAL: /* Normal's at log(v), less log(v) */
        CLT__TRY(clt__log_rec(fn, v, &a));
        CLT__TRY(normal_lp(fn, p[0], p[1], a, &b));
        return clt__sub_rec(fn, b, a, out);
    case CLT__DIST_GUMBEL: /* -(log(scale) + z + exp(-z)) */
        CLT__TRY(clt__sub_rec(fn, v, p[0], &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        CLT__TRY(clt__neg_rec(fn, a, &b));
        CLT__TRY(clt__exp_rec(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__log_rec(fn, p[1], &c));
        CLT__TRY(clt__add_rec(fn, c, a, &a));
        return clt__neg_rec(fn, a, out);
    case CLT__DIST_CAUCHY: return cauchy_lp(fn, p[0], p[1], v, out);
    case CLT__DIST_HALF_NORMAL:
    case CLT__DIST_HALF_CAUCHY: /* twice the base's, -inf below 0 */
        if (d->kind == CLT__DIST_HALF_NORMAL)
            CLT__TRY(normal_lp(fn, NULL, p[0], v, &a));
        else
            CLT__TRY(cauchy_lp(fn, NULL, p[0], v, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, LOG2, &a));
        CLT__TRY(mask_of(fn, v, 3, 0, &m));
        CLT__TRY(clt__error_as(clt_logical_not(m, &m), fn));
        return fill(fn, a, m, -INFINITY, out);
    case CLT__DIST_PARETO: /* log(alpha) - (alpha + 1) e - log(scale), e = log(v / scale) */
        CLT__TRY(clt__div_rec(fn, v, p[0], &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__add_scalar_rec(fn, p[1], 1, &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(clt__log_rec(fn, p[1], &b));
        CLT__TRY(clt__sub_rec(fn, b, a, &a));
        CLT__TRY(clt__log_rec(fn, p[0], &b));
        return clt__sub_rec(fn, a, b, out);
    case CLT__DIST_WEIBULL: /* log(c / scale) + (c - 1) log(v / scale) - (v / scale)^c */
        CLT__TRY(clt__div_rec(fn, v, p[0], &a));
        CLT__TRY(clt__pow_rec(fn, a, p[1], &b));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, p[1], 1, &c));
        CLT__TRY(clt__mul_rec(fn, c, a, &a));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(clt__div_rec(fn, p[1], p[0], &c));
        CLT__TRY(clt__log_rec(fn, c, &c));
        return clt__add_rec(fn, c, a, out);
    case CLT__DIST_POISSON: /* xlogy(v, rate) - rate - lgamma(v + 1) */
        CLT__TRY(clt__xlogy_rec(fn, v, p[0], &a));
        CLT__TRY(clt__sub_rec(fn, a, p[0], &a));
        CLT__TRY(clt__add_scalar_rec(fn, v, 1, &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        return clt__sub_rec(fn, a, b, out);
    case CLT__DIST_GEOMETRIC: { /* v log1p(-p') + log(p), p' 0 where p == 1 and v == 0 */
        clt_tensor *m1, *m2;
        CLT__TRY(mask_of(fn, p[0], 2, 1, &m1));
        CLT__TRY(mask_of(fn, v, 2, 0, &m2));
        CLT__TRY(clt__error_as(clt_logical_and(m1, m2, &m), fn));
        CLT__TRY(fill(fn, p[0], m, 0, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, v, a, &a));
        CLT__TRY(clt__log_rec(fn, p[0], &b));
        return clt__add_rec(fn, a, b, out);
    }
    case CLT__DIST_NEGATIVE_BINOMIAL: {
        /* n logsigmoid(-l) + v logsigmoid(l) + lgamma(n + v) - lgamma(1 + v) - lgamma(n),
         * the lgamma terms 0 where n + v == 0 */
        clt_tensor *nv;
        CLT__TRY(clt__neg_rec(fn, p[2], &a));
        CLT__TRY(clt__error_as(clt_logsigmoid(a, &a), fn));
        CLT__TRY(clt__mul_rec(fn, p[0], a, &a));
        CLT__TRY(clt__error_as(clt_logsigmoid(p[2], &b), fn));
        CLT__TRY(clt__mul_rec(fn, v, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__add_rec(fn, p[0], v, &nv));
        CLT__TRY(lgamma_rec(fn, nv, &b));
        CLT__TRY(clt__add_scalar_rec(fn, v, 1, &c));
        CLT__TRY(lgamma_rec(fn, c, &c));
        CLT__TRY(clt__sub_rec(fn, b, c, &b));
        CLT__TRY(lgamma_rec(fn, p[0], &c));
        CLT__TRY(clt__sub_rec(fn, b, c, &b));
        CLT__TRY(mask_of(fn, nv, 2, 0, &m));
        CLT__TRY(fill(fn, b, m, 0, &b));
        return clt__add_rec(fn, a, b, out);
    }
    case CLT__DIST_RELAXED_BERNOULLI: {
        /* LogitRelaxedBernoulli's at y = logit(v clamped to [tiny, 1 - eps]):
         * log(t) + diff - 2 log1p(exp(diff)), diff = logits - y t; plus softplus(-y) +
         * softplus(y), the sigmoid's log-Jacobian */
        double lo = tiny_of(d), hi = 1 - eps_of(d);
        clt_tensor *y, *df;
        CLT__TRY(clt__clamp_rec(fn, v, &lo, &hi, &a));
        CLT__TRY(clt__log_rec(fn, a, &b));
        CLT__TRY(clt__neg_rec(fn, a, &c));
        CLT__TRY(clt__log1p_rec(fn, c, &c));
        CLT__TRY(clt__sub_rec(fn, b, c, &y));
        CLT__TRY(clt__mul_rec(fn, y, p[2], &a));
        CLT__TRY(clt__sub_rec(fn, p[1], a, &df));
        CLT__TRY(clt__exp_rec(fn, df, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
        CLT__TRY(clt__sub_rec(fn, df, a, &a));
        CLT__TRY(clt__log_rec(fn, p[2], &b));
        CLT__TRY(clt__add_rec(fn, b, a, &a));
        CLT__TRY(clt__softplus_rec(fn, y, 1, 20, &b));
        CLT__TRY(clt__neg_rec(fn, y, &c));
        CLT__TRY(clt__softplus_rec(fn, c, 1, 20, &c));
        CLT__TRY(clt__add_rec(fn, b, c, &b));
        return clt__add_rec(fn, a, b, out);
    }
    case CLT__DIST_KUMARASWAMY: /* log(c1 c0) + (c1 - 1) log(v) + (c0 - 1) log1p(-v^c1) */
        CLT__TRY(clt__pow_rec(fn, v, p[0], &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, p[1], 1, &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(clt__log_rec(fn, v, &b));
        CLT__TRY(clt__sub_scalar_rec(fn, p[0], 1, &c));
        CLT__TRY(clt__mul_rec(fn, c, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__mul_rec(fn, p[0], p[1], &c));
        CLT__TRY(clt__log_rec(fn, c, &c));
        return clt__add_rec(fn, c, a, out);
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown distribution", fn);
done:
    return st;
}

/* ---- entropy ---------------------------------------------------------------------- */

static clt_status no_entropy(const char *fn, const clt_distribution *d)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement entropy", fn,
                      clt_distribution_name(d));
}

/* Dirichlet's entropy for concentrations a [..., k] (Beta's: the stack of
 * its two): sum lgamma(a) - lgamma(a0) - (k - a0) digamma(a0)
 * - sum (a - 1) digamma(a). */
static clt_status dirichlet_entropy(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    int last = a->ndim - 1;
    double k = (double)a->shape[last];
    clt_tensor *a0, *t, *u, *w;
    clt_status st;
    CLT__TRY(clt__sum_dim_rec(fn, a, last, 0, &a0));
    CLT__TRY(lgamma_rec(fn, a, &t));
    CLT__TRY(clt__sum_dim_rec(fn, t, last, 0, &t));
    CLT__TRY(lgamma_rec(fn, a0, &u));
    CLT__TRY(clt__sub_rec(fn, t, u, &t));
    CLT__TRY(clt__rsub_scalar_rec(fn, a0, k, &u));
    CLT__TRY(digamma_rec(fn, a0, &w));
    CLT__TRY(clt__mul_rec(fn, u, w, &u));
    CLT__TRY(clt__sub_rec(fn, t, u, &t));
    CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &u));
    CLT__TRY(digamma_rec(fn, a, &w));
    CLT__TRY(clt__mul_rec(fn, u, w, &u));
    CLT__TRY(clt__sum_dim_rec(fn, u, last, 0, &u));
    return clt__sub_rec(fn, t, u, out);
done:
    return st;
}

clt_status clt__dist2_entropy(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b, *c;
    clt_status st;
    if (CLT__DIST_IS3(d->kind))
        return clt__dist3_entropy(fn, d, out);
    switch (d->kind) {
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: /* c - log(r) + lgamma(c) + (1 - c) digamma(c) */
        CLT__TRY(clt__log_rec(fn, p[1], &a));
        CLT__TRY(clt__sub_rec(fn, p[0], a, &a));
        CLT__TRY(lgamma_rec(fn, p[0], &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, p[0], 1, &b));
        CLT__TRY(digamma_rec(fn, p[0], &c));
        CLT__TRY(clt__mul_rec(fn, b, c, &b));
        return clt__add_rec(fn, a, b, out);
    case CLT__DIST_BETA:
        CLT__TRY(clt__stack_rec(fn, (const clt_tensor *const[]){p[0], p[1]}, 2, p[0]->ndim,
                                &a));
        return dirichlet_entropy(fn, a, out);
    case CLT__DIST_DIRICHLET: return dirichlet_entropy(fn, p[0], out);
    case CLT__DIST_STUDENT_T: {
        /* log(scale) + (df + 1)/2 (digamma((df + 1)/2) - digamma(df/2)) + log(df)/2
         * + lgamma(df/2) + lgamma(1/2) - lgamma((df + 1)/2) */
        clt_tensor *h, *h1;
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], 0.5, &h));
        CLT__TRY(clt__add_scalar_rec(fn, p[0], 1, &h1));
        CLT__TRY(clt__mul_scalar_rec(fn, h1, 0.5, &h1));
        CLT__TRY(digamma_rec(fn, h1, &a));
        CLT__TRY(digamma_rec(fn, h, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(clt__mul_rec(fn, h1, a, &a));
        CLT__TRY(clt__log_rec(fn, p[2], &b));
        CLT__TRY(clt__add_rec(fn, b, a, &a));
        CLT__TRY(clt__log_rec(fn, p[0], &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, 0.5, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(lgamma_rec(fn, h, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(lgamma_rec(fn, h1, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        return clt__add_scalar_rec(fn, a, lgamma(0.5), out);
    }
    case CLT__DIST_LOG_NORMAL: /* Normal's + loc */
        CLT__TRY(clt__log_rec(fn, p[1], &a));
        CLT__TRY(clt__add_rec(fn, a, p[0], &a));
        return clt__add_scalar_rec(fn, a, 0.5 + LOG_SQRT_2PI, out);
    case CLT__DIST_GUMBEL:
        CLT__TRY(clt__log_rec(fn, p[1], &a));
        return clt__add_scalar_rec(fn, a, 1 + EULER, out);
    case CLT__DIST_CAUCHY:
    case CLT__DIST_HALF_CAUCHY: {
        const clt_tensor *s = p[d->kind == CLT__DIST_CAUCHY ? 1 : 0];
        CLT__TRY(clt__log_rec(fn, s, &a));
        return clt__add_scalar_rec(fn, a,
                                   log(4 * PI) - (d->kind == CLT__DIST_HALF_CAUCHY ? LOG2 : 0),
                                   out);
    }
    case CLT__DIST_HALF_NORMAL:
        CLT__TRY(clt__log_rec(fn, p[0], &a));
        return clt__add_scalar_rec(fn, a, 0.5 + LOG_SQRT_2PI - LOG2, out);
    case CLT__DIST_PARETO: /* log(scale / alpha) + 1 + 1 / alpha */
        CLT__TRY(clt__div_rec(fn, p[0], p[1], &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        return clt__add_scalar_rec(fn, a, 1, out);
    case CLT__DIST_WEIBULL: /* euler (1 - 1/c) + log(scale / c) + 1 */
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, EULER, &a));
        CLT__TRY(clt__div_rec(fn, p[0], p[1], &b));
        CLT__TRY(clt__log_rec(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        return clt__add_scalar_rec(fn, a, 1, out);
    case CLT__DIST_GEOMETRIC: /* bce_with_logits(logits, probs) / probs */
        CLT__TRY(clt__neg_rec(fn, p[1], &a));
        CLT__TRY(clt__error_as(clt_logsigmoid(a, &a), fn));
        CLT__TRY(clt__mul_rec(fn, p[1], p[0], &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        return clt__div_rec(fn, a, p[0], out);
    case CLT__DIST_KUMARASWAMY:
        /* (1 - 1/c0) + (1 - 1/c1) (digamma(c0 + 1) + euler) - log(c1) - log(c0) */
        CLT__TRY(clt__add_scalar_rec(fn, p[1], 1, &a));
        CLT__TRY(digamma_rec(fn, a, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, EULER, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[0], &b));
        CLT__TRY(clt__rsub_scalar_rec(fn, b, 1, &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &b));
        CLT__TRY(clt__rsub_scalar_rec(fn, b, 1, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__mul_rec(fn, p[0], p[1], &c));
        CLT__TRY(clt__log_rec(fn, c, &c));
        return clt__sub_rec(fn, a, c, out);
    default: return no_entropy(fn, d); /* FisherSnedecor, Poisson, NegativeBinomial */
    }
done:
    return st;
}

/* ---- moments ---------------------------------------------------------------------- */

static clt_status full_like_batch(const char *fn, const clt_distribution *d, double v,
                                  clt_tensor **out)
{
    return clt__error_as(
        clt_full(d->p[0]->dev, d->dtype, d->batch_ndim, d->batch_shape, v, out), fn);
}

/* c0 exp(lgamma(1 + k/c1) + lgamma(c0) - lgamma(1 + k/c1 + c0)), torch's _moments. */
static clt_status kumaraswamy_moment(const char *fn, const clt_tensor *c1, const clt_tensor *c0,
                                     double k, clt_tensor **out)
{
    clt_tensor *a1, *t, *u;
    clt_status st;
    CLT__TRY(clt__rdiv_scalar_rec(fn, c1, k, &a1));
    CLT__TRY(clt__add_scalar_rec(fn, a1, 1, &a1));
    CLT__TRY(lgamma_rec(fn, a1, &t));
    CLT__TRY(lgamma_rec(fn, c0, &u));
    CLT__TRY(clt__add_rec(fn, t, u, &t));
    CLT__TRY(clt__add_rec(fn, a1, c0, &u));
    CLT__TRY(lgamma_rec(fn, u, &u));
    CLT__TRY(clt__sub_rec(fn, t, u, &t));
    CLT__TRY(clt__exp_rec(fn, t, &t));
    return clt__mul_rec(fn, c0, t, out);
done:
    return st;
}

clt_status clt__dist2_moment(const char *fn, const clt_distribution *d, int m, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b, *c, *k;
    clt_status st;
    bool mean = m == 0;
    if (CLT__DIST_IS3(d->kind) && m != 2)
        return clt__dist3_moment(fn, d, m, out);
    if (m == 2) {
        if (d->kind == CLT__DIST_GUMBEL)
            return clt__mul_scalar_rec(fn, p[1], PI / sqrt(6.0), out);
        CLT__TRY(clt__dist2_moment(fn, d, 1, &a));
        return clt__sqrt_rec(fn, a, out);
    }
    switch (d->kind) {
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: /* c / r, c / r^2 */
        if (mean)
            return clt__div_rec(fn, p[0], p[1], out);
        CLT__TRY(clt__square_rec(fn, p[1], &a));
        return clt__div_rec(fn, p[0], a, out);
    case CLT__DIST_BETA:
        CLT__TRY(clt__add_rec(fn, p[0], p[1], &a));
        if (mean)
            return clt__div_rec(fn, p[0], a, out);
        CLT__TRY(clt__mul_rec(fn, p[0], p[1], &b));
        CLT__TRY(clt__square_rec(fn, a, &c));
        CLT__TRY(clt__div_rec(fn, b, c, &b));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &c));
        return clt__div_rec(fn, b, c, out);
    case CLT__DIST_DIRICHLET:
        CLT__TRY(clt__sum_dim_rec(fn, p[0], p[0]->ndim - 1, 1, &a));
        if (mean)
            return clt__div_rec(fn, p[0], a, out);
        CLT__TRY(clt__sub_rec(fn, a, p[0], &b));
        CLT__TRY(clt__mul_rec(fn, p[0], b, &b));
        CLT__TRY(clt__square_rec(fn, a, &c));
        CLT__TRY(clt__div_rec(fn, b, c, &b));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &c));
        return clt__div_rec(fn, b, c, out);
    case CLT__DIST_STUDENT_T:
        CLT__TRY(mask_of(fn, p[0], 0, 1, &k));
        if (mean) /* loc, NaN where df <= 1 */
            return fill(fn, p[1], k, NAN, out);
        /* scale^2 df / (df - 2) where df > 2, inf for 1 < df <= 2, NaN for df <= 1 */
        CLT__TRY(mask_of(fn, p[0], 0, 2, &c));
        CLT__TRY(fill(fn, p[0], c, 3, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 2, &b));
        CLT__TRY(clt__div_rec(fn, a, b, &a));
        CLT__TRY(clt__square_rec(fn, p[2], &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(fill(fn, a, c, INFINITY, &a));
        return fill(fn, a, k, NAN, out);
    case CLT__DIST_FISHER_SNEDECOR:
        if (mean) { /* df2 / (df2 - 2), NaN where df2 <= 2 */
            CLT__TRY(mask_of(fn, p[1], 0, 2, &k));
            CLT__TRY(fill(fn, p[1], k, NAN, &a));
            CLT__TRY(clt__sub_scalar_rec(fn, a, 2, &b));
            return clt__div_rec(fn, a, b, out);
        }
        /* 2 df2^2 (df1 + df2 - 2) / (df1 (df2 - 2)^2 (df2 - 4)), NaN where df2 <= 4 */
        CLT__TRY(mask_of(fn, p[1], 0, 4, &k));
        CLT__TRY(fill(fn, p[1], k, NAN, &a));
        CLT__TRY(clt__square_rec(fn, a, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, 2, &b));
        CLT__TRY(clt__add_rec(fn, p[0], a, &c));
        CLT__TRY(clt__sub_scalar_rec(fn, c, 2, &c));
        CLT__TRY(clt__mul_rec(fn, b, c, &b));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 2, &c));
        CLT__TRY(clt__square_rec(fn, c, &c));
        CLT__TRY(clt__mul_rec(fn, p[0], c, &c));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 4, &a));
        CLT__TRY(clt__mul_rec(fn, c, a, &c));
        return clt__div_rec(fn, b, c, out);
    case CLT__DIST_LOG_NORMAL:
        CLT__TRY(clt__square_rec(fn, p[1], &a));
        if (mean) { /* exp(loc + scale^2 / 2) */
            CLT__TRY(clt__mul_scalar_rec(fn, a, 0.5, &a));
            CLT__TRY(clt__add_rec(fn, p[0], a, &a));
            return clt__exp_rec(fn, a, out);
        }
        /* expm1(scale^2) exp(2 loc + scale^2) */
        CLT__TRY(clt__expm1_rec(fn, a, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], 2, &c));
        CLT__TRY(clt__add_rec(fn, c, a, &c));
        CLT__TRY(clt__exp_rec(fn, c, &c));
        return clt__mul_rec(fn, b, c, out);
    case CLT__DIST_GUMBEL:
        if (mean) {
            CLT__TRY(clt__mul_scalar_rec(fn, p[1], EULER, &a));
            return clt__add_rec(fn, p[0], a, out);
        }
        CLT__TRY(clt__square_rec(fn, p[1], &a));
        return clt__mul_scalar_rec(fn, a, PI * PI / 6, out);
    case CLT__DIST_CAUCHY: return full_like_batch(fn, d, mean ? NAN : INFINITY, out);
    case CLT__DIST_HALF_CAUCHY: return full_like_batch(fn, d, INFINITY, out);
    case CLT__DIST_HALF_NORMAL:
        if (mean)
            return clt__mul_scalar_rec(fn, p[0], sqrt(2 / PI), out);
        CLT__TRY(clt__square_rec(fn, p[0], &a));
        return clt__mul_scalar_rec(fn, a, 1 - 2 / PI, out);
    case CLT__DIST_PARETO: {
        /* a scale / (a - 1), a = alpha.clamp(min=1); scale^2 a / ((a - 1)^2 (a - 2)),
         * a = alpha.clamp(min=2) */
        double lo = mean ? 1 : 2;
        CLT__TRY(clt__clamp_rec(fn, p[1], &lo, NULL, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &b));
        if (mean) {
            CLT__TRY(clt__mul_rec(fn, a, p[0], &c));
            return clt__div_rec(fn, c, b, out);
        }
        CLT__TRY(clt__square_rec(fn, b, &b));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 2, &c));
        CLT__TRY(clt__mul_rec(fn, b, c, &b));
        CLT__TRY(clt__square_rec(fn, p[0], &c));
        CLT__TRY(clt__mul_rec(fn, c, a, &c));
        return clt__div_rec(fn, c, b, out);
    }
    case CLT__DIST_WEIBULL:
        /* scale exp(lgamma(1 + 1/c)); scale^2 (exp(lgamma(1 + 2/c)) - exp(2 lgamma(1 + 1/c))) */
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        if (mean) {
            CLT__TRY(clt__exp_rec(fn, b, &b));
            return clt__mul_rec(fn, p[0], b, out);
        }
        CLT__TRY(clt__mul_scalar_rec(fn, b, 2, &b));
        CLT__TRY(clt__exp_rec(fn, b, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &c));
        CLT__TRY(clt__add_scalar_rec(fn, c, 1, &c));
        CLT__TRY(lgamma_rec(fn, c, &c));
        CLT__TRY(clt__exp_rec(fn, c, &c));
        CLT__TRY(clt__sub_rec(fn, c, b, &c));
        CLT__TRY(clt__square_rec(fn, p[0], &a));
        return clt__mul_rec(fn, a, c, out);
    case CLT__DIST_POISSON: return clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out);
    case CLT__DIST_NEGATIVE_BINOMIAL: /* n exp(logits), that / sigmoid(-logits) */
        CLT__TRY(clt__exp_rec(fn, p[2], &a));
        CLT__TRY(clt__mul_rec(fn, p[0], a, &a));
        if (mean)
            return clt__expand_rec(fn, a, a->ndim, a->shape, out);
        CLT__TRY(clt__neg_rec(fn, p[2], &b));
        CLT__TRY(clt__sigmoid_rec(fn, b, &b));
        return clt__div_rec(fn, a, b, out);
    case CLT__DIST_KUMARASWAMY: /* from _moments(c1, c0, k) = c0 B(1 + k/c1, c0) */
        CLT__TRY(kumaraswamy_moment(fn, p[0], p[1], 1, &a));
        if (mean)
            return clt__expand_rec(fn, a, a->ndim, a->shape, out);
        CLT__TRY(kumaraswamy_moment(fn, p[0], p[1], 2, &b));
        CLT__TRY(clt__square_rec(fn, a, &a));
        return clt__sub_rec(fn, b, a, out);
    case CLT__DIST_GEOMETRIC: /* 1/p - 1, (1/p - 1) / p */
        CLT__TRY(clt__reciprocal_rec(fn, p[0], &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &a));
        return mean ? clt__expand_rec(fn, a, a->ndim, a->shape, out)
                    : clt__div_rec(fn, a, p[0], out);
    case CLT__DIST_RELAXED_BERNOULLI: /* a TransformedDistribution: torch has none */
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: RelaxedBernoulli does not implement %s",
                          fn, m == 0 ? "mean" : "variance");
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown distribution", fn);
done:
    return st;
}

/* ---- cdf and icdf ------------------------------------------------------------------- */

bool clt__dist2_has_cdf(const clt_distribution *d)
{
    if (CLT__DIST_IS3(d->kind))
        return clt__dist3_has_cdf(d);
    switch (d->kind) {
    case CLT__DIST_LOG_NORMAL:
    case CLT__DIST_GUMBEL:
    case CLT__DIST_CAUCHY:
    case CLT__DIST_HALF_NORMAL:
    case CLT__DIST_HALF_CAUCHY:
    case CLT__DIST_PARETO:
    case CLT__DIST_WEIBULL:
    case CLT__DIST_KUMARASWAMY:
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: return true;
    default: return false;
    }
}

/* Normal(loc, scale)'s cdf at v (loc NULL: 0): (1 + erf((v - loc) / scale / sqrt 2)) / 2;
 * Cauchy's: atan((v - loc) / scale) / pi + 1/2. */
static clt_status base_cdf(const char *fn, bool normal, const clt_tensor *loc,
                           const clt_tensor *scale, const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    if (loc)
        CLT__TRY(clt__sub_rec(fn, v, loc, &a));
    else
        CLT__TRY(clt__expand_rec(fn, v, v->ndim, v->shape, &a));
    CLT__TRY(clt__div_rec(fn, a, scale, &a));
    if (normal) {
        CLT__TRY(clt__div_scalar_rec(fn, a, sqrt(2.0), &a));
        CLT__TRY(clt__erf_rec(fn, a, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &a));
        return clt__mul_scalar_rec(fn, a, 0.5, out);
    }
    CLT__TRY(clt__atan_rec(fn, a, &a));
    CLT__TRY(clt__div_scalar_rec(fn, a, PI, &a));
    return clt__add_scalar_rec(fn, a, 0.5, out);
done:
    return st;
}

/* Their icdf: loc + scale erfinv(2 v - 1) sqrt 2; loc + scale tan(pi (v - 1/2)). */
static clt_status base_icdf(const char *fn, bool normal, const clt_tensor *loc,
                            const clt_tensor *scale, const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    if (normal) {
        CLT__TRY(clt__mul_scalar_rec(fn, v, 2, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__erfinv_rec(fn, a, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, sqrt(2.0), &a));
    } else {
        CLT__TRY(clt__sub_scalar_rec(fn, v, 0.5, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, PI, &a));
        CLT__TRY(clt__tan_rec(fn, a, &a));
    }
    CLT__TRY(clt__mul_rec(fn, scale, a, &a));
    if (!loc)
        return clt__expand_rec(fn, a, a->ndim, a->shape, out);
    return clt__add_rec(fn, loc, a, out);
done:
    return st;
}

clt_status clt__dist2_cdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                          clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a;
    clt_status st;
    if (CLT__DIST_IS3(d->kind))
        return clt__dist3_cdf(fn, d, v, out);
    switch (d->kind) {
    case CLT__DIST_LOG_NORMAL: /* Normal's at log(v) */
        CLT__TRY(clt__log_rec(fn, v, &a));
        return base_cdf(fn, true, p[0], p[1], a, out);
    case CLT__DIST_GUMBEL: /* exp(-exp(-(v - loc) / scale)) */
        CLT__TRY(clt__sub_rec(fn, v, p[0], &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__exp_rec(fn, a, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        return clt__exp_rec(fn, a, out);
    case CLT__DIST_CAUCHY: return base_cdf(fn, false, p[0], p[1], v, out);
    case CLT__DIST_HALF_NORMAL:
    case CLT__DIST_HALF_CAUCHY: /* 2 F(v) - 1 */
        CLT__TRY(base_cdf(fn, d->kind == CLT__DIST_HALF_NORMAL, NULL, p[0], v, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
        return clt__sub_scalar_rec(fn, a, 1, out);
    case CLT__DIST_PARETO: /* 1 - (scale / v)^alpha */
        CLT__TRY(clt__div_rec(fn, p[0], v, &a));
        CLT__TRY(clt__pow_rec(fn, a, p[1], &a));
        return clt__rsub_scalar_rec(fn, a, 1, out);
    case CLT__DIST_KUMARASWAMY: /* 1 - (1 - v^c1)^c0 */
        CLT__TRY(clt__pow_rec(fn, v, p[0], &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__pow_rec(fn, a, p[1], &a));
        return clt__rsub_scalar_rec(fn, a, 1, out);
    case CLT__DIST_GAMMA:
    case CLT__DIST_CHI2: /* gammainc(c, r v), torch 2.0's (1.13 has no cdf) */
        CLT__TRY(clt__mul_rec(fn, p[1], v, &a));
        return clt_special_gammainc(p[0], a, out);
    case CLT__DIST_WEIBULL: /* 1 - exp(-(v / scale)^c) */
        CLT__TRY(clt__div_rec(fn, v, p[0], &a));
        CLT__TRY(clt__pow_rec(fn, a, p[1], &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__expm1_rec(fn, a, &a));
        return clt__neg_rec(fn, a, out);
    default: break;
    }
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement cdf", fn,
                      clt_distribution_name(d));
done:
    return st;
}

clt_status clt__dist2_icdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                           clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a;
    clt_status st;
    if (CLT__DIST_IS3(d->kind))
        return clt__dist3_icdf(fn, d, v, out);
    switch (d->kind) {
    case CLT__DIST_LOG_NORMAL:
        CLT__TRY(base_icdf(fn, true, p[0], p[1], v, &a));
        return clt__exp_rec(fn, a, out);
    case CLT__DIST_GUMBEL: /* loc - scale log(-log(v)) */
        CLT__TRY(clt__log_rec(fn, v, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, p[1], a, &a));
        return clt__sub_rec(fn, p[0], a, out);
    case CLT__DIST_CAUCHY: return base_icdf(fn, false, p[0], p[1], v, out);
    case CLT__DIST_HALF_NORMAL:
    case CLT__DIST_HALF_CAUCHY: /* F^-1((v + 1) / 2) */
        CLT__TRY(clt__add_scalar_rec(fn, v, 1, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 0.5, &a));
        return base_icdf(fn, d->kind == CLT__DIST_HALF_NORMAL, NULL, p[0], a, out);
    case CLT__DIST_PARETO: /* scale exp(-log1p(-v) / alpha) */
        CLT__TRY(clt__neg_rec(fn, v, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__div_rec(fn, a, p[1], &a));
        CLT__TRY(clt__exp_rec(fn, a, &a));
        return clt__mul_rec(fn, p[0], a, out);
    case CLT__DIST_KUMARASWAMY: { /* (1 - (1 - v)^(1/c0))^(1/c1) */
        clt_tensor *r;
        CLT__TRY(clt__rsub_scalar_rec(fn, v, 1, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &r));
        CLT__TRY(clt__pow_rec(fn, a, r, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[0], &r));
        return clt__pow_rec(fn, a, r, out);
    }
    case CLT__DIST_WEIBULL: { /* scale (-log1p(-v))^(1/c) */
        clt_tensor *r;
        CLT__TRY(clt__neg_rec(fn, v, &a));
        CLT__TRY(clt__log1p_rec(fn, a, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__reciprocal_rec(fn, p[1], &r));
        CLT__TRY(clt__pow_rec(fn, a, r, &a));
        return clt__mul_rec(fn, p[0], a, out);
    }
    default: break;
    }
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement icdf", fn,
                      clt_distribution_name(d));
done:
    return st;
}
