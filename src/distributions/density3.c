/* density3.c: Binomial, Multinomial and ContinuousBernoulli: their draws,
 * log-densities, entropies, moments and cdf/icdf, composed of recorded ops
 * with torch 1.13's formulas. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "distributions/distributions.h"

#define LOG2 0.69314718055994530942
#define CB_LO 0.499 /* ContinuousBernoulli's lims, torch's default */
#define CB_HI 0.501

static clt_status lgamma_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    return clt__error_as(clt_lgamma(a, out), fn);
}

static clt_status where_rec(const char *fn, const clt_tensor *c, const clt_tensor *a,
                            const clt_tensor *b, clt_tensor **out)
{
    return clt__error_as(clt_where(c, a, b, out), fn);
}

/* ---- Binomial ------------------------------------------------------------------- */

/* (x.clamp(min=0) + x - x.clamp(max=0)) / 2, torch's _clamp_by_zero (its
 * gradient 1/2 at 0). */
static clt_status clamp_by_zero(const char *fn, const clt_tensor *x, clt_tensor **out)
{
    const double z = 0;
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__clamp_rec(fn, x, &z, NULL, &a));
    CLT__TRY(clt__clamp_rec(fn, x, NULL, &z, &b));
    CLT__TRY(clt__add_rec(fn, a, x, &a));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    return clt__mul_scalar_rec(fn, a, 0.5, out);
done:
    return st;
}

/* Binomial(n, logits l)'s log-pmf at v: v l - lgamma(v + 1) - lgamma(n - v + 1)
 * - (n max(l, 0) + n log1p(exp(-|l|)) - lgamma(n + 1)). */
static clt_status binomial_lp(const char *fn, const clt_tensor *n, const clt_tensor *l,
                              const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *a, *b, *c, *norm;
    clt_status st;
    CLT__TRY(clamp_by_zero(fn, l, &a));
    CLT__TRY(clt__mul_rec(fn, n, a, &a));
    CLT__TRY(clt__abs_rec(fn, l, &b));
    CLT__TRY(clt__neg_rec(fn, b, &b));
    CLT__TRY(clt__exp_rec(fn, b, &b));
    CLT__TRY(clt__log1p_rec(fn, b, &b));
    CLT__TRY(clt__mul_rec(fn, n, b, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &norm));
    CLT__TRY(clt__add_scalar_rec(fn, n, 1, &a));
    CLT__TRY(lgamma_rec(fn, a, &a));
    CLT__TRY(clt__sub_rec(fn, norm, a, &norm));
    CLT__TRY(clt__mul_rec(fn, v, l, &a));
    CLT__TRY(clt__add_scalar_rec(fn, v, 1, &b));
    CLT__TRY(lgamma_rec(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__sub_rec(fn, n, v, &c));
    CLT__TRY(clt__add_scalar_rec(fn, c, 1, &c));
    CLT__TRY(lgamma_rec(fn, c, &c));
    CLT__TRY(clt__sub_rec(fn, a, c, &a));
    return clt__sub_rec(fn, a, norm, out);
done:
    return st;
}

/* 0, 1, ..., top as a column [top + 1, 1, ...] of 1 + nd dims (from first:
 * first .. top). */
static clt_status support_column(const char *fn, const clt_distribution *d, double first,
                                 double top, int nd, clt_tensor **out)
{
    clt_tensor *r;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = clt__error_as(clt_arange(d->p[0]->dev, d->dtype, first, top + 1, 1, &r), fn);
    if (st != CLT_OK)
        return st;
    shape[0] = r->shape[0];
    for (int k = 0; k < nd; k++)
        shape[1 + k] = 1;
    return clt__reshape_rec(fn, r, 1 + nd, shape, out);
}

/* The one total count of a Binomial, read back (torch's entropy needs
 * them all equal). */
static clt_status homogeneous_count(const char *fn, const clt_tensor *n, double *count)
{
    clt_tensor *mx = NULL, *mn = NULL;
    double a = 0, b = 0;
    int was = clt_set_grad_enabled(0);
    clt_status st = clt_max(n, &mx);
    if (st == CLT_OK)
        st = clt_min(n, &mn);
    if (st == CLT_OK)
        st = clt_tensor_item(mx, &a);
    if (st == CLT_OK)
        st = clt_tensor_item(mn, &b);
    clt_set_grad_enabled(was);
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    if (a != b)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Inhomogeneous total count not supported by `entropy`.", fn);
    if (!(a <= 1e7))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a total count of %g is too large to enumerate its support", fn, a);
    *count = a;
    return CLT_OK;
}

/* ---- Multinomial's draw ------------------------------------------------------------ */

/* total_count categorical draws per sample, counted per category: [rows,
 * draws * N] indices, one-hot [rows, draws, N, K], summed over N. */
static clt_status multinomial_draw(const char *fn, const clt_distribution *d, clt_generator *gen,
                                   int n, const int64_t *ext, clt_tensor **out)
{
    const clt_tensor *p = d->p[0];
    int64_t k = p->shape[p->ndim - 1], rows = 1, draws = 1, cnt = d->total_count;
    int nb = n - d->batch_ndim - 1;
    for (int i = 0; i < d->batch_ndim; i++)
        rows *= d->batch_shape[i];
    for (int i = 0; i < nb; i++)
        draws *= ext[i];
    clt_status st;
    clt_tensor *p2, *s, *h, *t;
    if (rows * draws == 0 || cnt == 0)
        return clt__error_as(clt_zeros(p->dev, d->dtype, n, ext, out), fn);
    CLT__TRY(clt__reshape_rec(fn, p, 2, (int64_t[]){rows, k}, &p2));
    CLT__TRY(clt__error_as(clt_multinomial(gen, p2, draws * cnt, 1, &s), fn));
    CLT__TRY(clt__reshape_rec(fn, s, 3, (int64_t[]){rows, draws, cnt}, &s));
    CLT__TRY(clt__error_as(clt_one_hot(s, k, &h), fn));
    CLT__TRY(clt__error_as(clt_sum_dim(h, 2, 0, &h), fn));
    CLT__TRY(clt__error_as(clt_transpose(h, 0, 1, &t), fn));
    CLT__TRY(clt__error_as(clt_to_dtype(t, d->dtype, &t), fn));
    return clt__reshape_rec(fn, t, n, ext, out);
done:
    return st;
}

/* ---- ContinuousBernoulli -------------------------------------------------------------- */

/* probs <= 0.499 or probs > 0.501 (outside torch's unstable region), not
 * recorded. */
static clt_status cb_outside(const char *fn, const clt_tensor *p, clt_tensor **out)
{
    clt_tensor *a, *b;
    int was = clt_set_grad_enabled(0);
    clt_status st = clt_le_scalar(p, CB_LO, &a);
    if (st == CLT_OK)
        st = clt_gt_scalar(p, CB_HI, &b);
    if (st == CLT_OK)
        st = clt_logical_or(a, b, out);
    clt_set_grad_enabled(was);
    return clt__error_as(st, fn);
}

/* torch's _cut_probs: probs outside the region, 0.499 inside. */
static clt_status cb_cut(const char *fn, const clt_tensor *p, const clt_tensor *outside,
                         clt_tensor **out)
{
    clt_tensor *in;
    clt_status st = clt__error_as(clt_logical_not(outside, &in), fn);
    return st != CLT_OK ? st : clt__masked_fill_rec(fn, p, in, CB_LO, out);
}

/* torch's _cont_bern_log_norm. */
static clt_status cb_log_norm(const char *fn, const clt_tensor *p, clt_tensor **out)
{
    clt_tensor *o, *cut, *m, *lo, *hi, *a, *b, *t, *x;
    clt_status st;
    CLT__TRY(cb_outside(fn, p, &o));
    CLT__TRY(cb_cut(fn, p, o, &cut));
    /* log|log1p(-cut) - log(cut)| - (cut <= 1/2 ? log1p(-2 cut) : log(2 cut - 1)) */
    CLT__TRY(clt__neg_rec(fn, cut, &a));
    CLT__TRY(clt__log1p_rec(fn, a, &a));
    CLT__TRY(clt__log_rec(fn, cut, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__abs_rec(fn, a, &a));
    CLT__TRY(clt__log_rec(fn, a, &a));
    int was = clt_set_grad_enabled(0);
    st = clt_gt_scalar(cut, 0.5, &m);
    if (st == CLT_OK)
        st = clt_lt_scalar(cut, 0.5, &hi);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    CLT__TRY(clt__masked_fill_rec(fn, cut, m, 0, &lo));
    CLT__TRY(clt__masked_fill_rec(fn, cut, hi, 1, &hi));
    CLT__TRY(clt__mul_scalar_rec(fn, lo, -2, &lo));
    CLT__TRY(clt__log1p_rec(fn, lo, &lo));
    CLT__TRY(clt__mul_scalar_rec(fn, hi, 2, &hi));
    CLT__TRY(clt__sub_scalar_rec(fn, hi, 1, &hi));
    CLT__TRY(clt__log_rec(fn, hi, &hi));
    CLT__TRY(clt__error_as(clt_logical_not(m, &m), fn));
    CLT__TRY(where_rec(fn, m, lo, hi, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    /* log 2 + (4/3 + 104/45 x) x, x = (probs - 1/2)^2 */
    CLT__TRY(clt__sub_scalar_rec(fn, p, 0.5, &x));
    CLT__TRY(clt__square_rec(fn, x, &x));
    CLT__TRY(clt__mul_scalar_rec(fn, x, 104.0 / 45.0, &t));
    CLT__TRY(clt__add_scalar_rec(fn, t, 4.0 / 3.0, &t));
    CLT__TRY(clt__mul_rec(fn, t, x, &t));
    CLT__TRY(clt__add_scalar_rec(fn, t, LOG2, &t));
    return where_rec(fn, o, a, t, out);
done:
    return st;
}

/* mean (m 0) or variance (m 1) of ContinuousBernoulli(probs p). */
static clt_status cb_moment(const char *fn, const clt_tensor *p, int m, clt_tensor **out)
{
    clt_tensor *o, *cut, *a, *b, *lr, *x, *t;
    clt_status st;
    CLT__TRY(cb_outside(fn, p, &o));
    CLT__TRY(cb_cut(fn, p, o, &cut));
    CLT__TRY(clt__neg_rec(fn, cut, &a));
    CLT__TRY(clt__log1p_rec(fn, a, &a));
    CLT__TRY(clt__log_rec(fn, cut, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &lr)); /* log1p(-cut) - log(cut) */
    CLT__TRY(clt__sub_scalar_rec(fn, p, 0.5, &x));
    if (m == 0) { /* cut / (2 cut - 1) + 1 / lr; 1/2 + (1/3 + 16/45 x^2) x */
        CLT__TRY(clt__mul_scalar_rec(fn, cut, 2, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__div_rec(fn, cut, a, &a));
        CLT__TRY(clt__reciprocal_rec(fn, lr, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__square_rec(fn, x, &t));
        CLT__TRY(clt__mul_scalar_rec(fn, t, 16.0 / 45.0, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, 1.0 / 3.0, &t));
        CLT__TRY(clt__mul_rec(fn, t, x, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, 0.5, &t));
    } else { /* cut (cut - 1) / (1 - 2 cut)^2 + 1 / lr^2; 1/12 - (1/15 - 128/945 x^2) x^2 */
        CLT__TRY(clt__sub_scalar_rec(fn, cut, 1, &a));
        CLT__TRY(clt__mul_rec(fn, cut, a, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, cut, -2, &b));
        CLT__TRY(clt__add_scalar_rec(fn, b, 1, &b));
        CLT__TRY(clt__square_rec(fn, b, &b));
        CLT__TRY(clt__div_rec(fn, a, b, &a));
        CLT__TRY(clt__square_rec(fn, lr, &b));
        CLT__TRY(clt__reciprocal_rec(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__square_rec(fn, x, &x));
        CLT__TRY(clt__mul_scalar_rec(fn, x, 128.0 / 945.0, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0 / 15.0, &t));
        CLT__TRY(clt__mul_rec(fn, t, x, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0 / 12.0, &t));
    }
    return where_rec(fn, o, a, t, out);
done:
    return st;
}

/* (log1p(-cut + v (2 cut - 1)) - log1p(-cut)) / (log(cut) - log1p(-cut))
 * outside the region, v inside. */
static clt_status cb_icdf(const char *fn, const clt_tensor *p, const clt_tensor *v,
                          clt_tensor **out)
{
    clt_tensor *o, *cut, *a, *b, *l1, *ve;
    clt_status st;
    int nd;
    int64_t shape[CLT_MAX_DIMS];
    CLT__TRY(cb_outside(fn, p, &o));
    CLT__TRY(cb_cut(fn, p, o, &cut));
    CLT__TRY(clt__mul_scalar_rec(fn, cut, 2, &a));
    CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &a));
    CLT__TRY(clt__mul_rec(fn, v, a, &a));
    CLT__TRY(clt__sub_rec(fn, a, cut, &a));
    CLT__TRY(clt__log1p_rec(fn, a, &a));
    CLT__TRY(clt__neg_rec(fn, cut, &l1));
    CLT__TRY(clt__log1p_rec(fn, l1, &l1));
    CLT__TRY(clt__sub_rec(fn, a, l1, &a));
    CLT__TRY(clt__log_rec(fn, cut, &b));
    CLT__TRY(clt__sub_rec(fn, b, l1, &b));
    CLT__TRY(clt__div_rec(fn, a, b, &a));
    CLT__TRY(clt__broadcast_shapes(a->ndim, a->shape, v->ndim, v->shape, &nd, shape, fn));
    CLT__TRY(clt__expand_rec(fn, v, nd, shape, &ve));
    return where_rec(fn, o, a, ve, out);
done:
    return st;
}

/* ---- VonMises ---------------------------------------------------------------------------- */

static const double i0_small[] = {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1,
                                  0.45813e-2};
static const double i0_large[] = {0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2,
                                  0.916281e-2, -0.2057706e-1, 0.2635537e-1, -0.1647633e-1,
                                  0.392377e-2};
static const double i1_small[] = {0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1,
                                  0.301532e-2, 0.32411e-3};
static const double i1_large[] = {0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2,
                                  -0.1031555e-1, 0.2282967e-1, -0.2895312e-1, 0.1787654e-1,
                                  -0.420059e-2};

/* c[0] + y (c[1] + y (...)), recorded. */
static clt_status eval_poly(const char *fn, const clt_tensor *y, const double *c, int n,
                            clt_tensor **out)
{
    clt_tensor *r;
    clt_status st;
    CLT__TRY(clt__mul_scalar_rec(fn, y, 0, &r));
    CLT__TRY(clt__add_scalar_rec(fn, r, c[n - 1], &r));
    for (int k = n - 2; k >= 0; k--) {
        CLT__TRY(clt__mul_rec(fn, r, y, &r));
        CLT__TRY(clt__add_scalar_rec(fn, r, c[k], &r));
    }
    return clt__expand_rec(fn, r, r->ndim, r->shape, out);
done:
    return st;
}

/* log I_order(x) for x > 0 by torch's polynomial approximations
 * (_log_modified_bessel_fn). */
static clt_status log_bessel(const char *fn, const clt_tensor *x, int order, clt_tensor **out)
{
    clt_tensor *y, *small, *large, *a, *m;
    clt_status st;
    CLT__TRY(clt__div_scalar_rec(fn, x, 3.75, &y));
    CLT__TRY(clt__square_rec(fn, y, &y));
    CLT__TRY(eval_poly(fn, y, order ? i1_small : i0_small, 7, &small));
    if (order) {
        CLT__TRY(clt__abs_rec(fn, x, &a));
        CLT__TRY(clt__mul_rec(fn, a, small, &small));
    }
    CLT__TRY(clt__log_rec(fn, small, &small));
    CLT__TRY(clt__rdiv_scalar_rec(fn, x, 3.75, &y));
    CLT__TRY(eval_poly(fn, y, order ? i1_large : i0_large, 9, &large));
    CLT__TRY(clt__log_rec(fn, large, &large));
    CLT__TRY(clt__log_rec(fn, x, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, -0.5, &a));
    CLT__TRY(clt__add_rec(fn, x, a, &a));
    CLT__TRY(clt__add_rec(fn, a, large, &large));
    int was = clt_set_grad_enabled(0);
    st = clt_lt_scalar(x, 3.75, &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    return where_rec(fn, m, small, large, out);
done:
    return st;
}

#define VM_MAX_ROUNDS 1000

/* Best and Fisher's rejection sampler as torch's _rejection_sample, in
 * float64 from clt_rand's uniforms (three draws of the extended shape a
 * round), until every element is accepted (at most VM_MAX_ROUNDS rounds:
 * elements of NaN parameters stay NaN); then wrapped to [-pi, pi) around
 * loc. */
static clt_status von_mises_draw(const char *fn, const clt_distribution *d, clt_generator *gen,
                                 int n, const int64_t *ext, clt_tensor **out)
{
    clt_device *dev = d->p[0]->dev;
    clt_tensor *loc, *k, *r, *x, *done, *u1, *u2, *u3, *z, *f, *c, *a, *b, *acc, *nx, *all;
    clt_status st;
    CLT__TRY(clt__expand_rec(fn, d->p[0], n, ext, &loc));
    CLT__TRY(clt__error_as(clt_to_dtype(loc, CLT_FLOAT64, &loc), fn));
    CLT__TRY(clt__expand_rec(fn, d->p[1], n, ext, &k));
    CLT__TRY(clt__error_as(clt_to_dtype(k, CLT_FLOAT64, &k), fn));
    /* proposal_r = (1 + rho^2) / (2 rho), rho = (tau - sqrt(2 tau)) / (2 k),
     * tau = 1 + sqrt(1 + 4 k^2) */
    CLT__TRY(clt__square_rec(fn, k, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 4, &a));
    CLT__TRY(clt__add_scalar_rec(fn, a, 1, &a));
    CLT__TRY(clt__sqrt_rec(fn, a, &a));
    CLT__TRY(clt__add_scalar_rec(fn, a, 1, &a)); /* tau */
    CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &b));
    CLT__TRY(clt__sqrt_rec(fn, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, k, 2, &b));
    CLT__TRY(clt__div_rec(fn, a, b, &a)); /* rho */
    CLT__TRY(clt__square_rec(fn, a, &b));
    CLT__TRY(clt__add_scalar_rec(fn, b, 1, &b));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
    CLT__TRY(clt__div_rec(fn, b, a, &r));
    CLT__TRY(clt__error_as(clt_full(dev, CLT_FLOAT64, n, ext, NAN, &x), fn));
    CLT__TRY(clt__error_as(clt_zeros(dev, CLT_BOOL, n, ext, &done), fn));
    for (int round = 0; round < VM_MAX_ROUNDS; round++) {
        double v = 0;
        CLT__TRY(clt__error_as(clt_all(done, &all), fn));
        CLT__TRY(clt__error_as(clt_tensor_item(all, &v), fn));
        if (v != 0)
            break;
        CLT__TRY(clt__error_as(clt_rand(gen, dev, CLT_FLOAT64, n, ext, &u1), fn));
        CLT__TRY(clt__error_as(clt_rand(gen, dev, CLT_FLOAT64, n, ext, &u2), fn));
        CLT__TRY(clt__error_as(clt_rand(gen, dev, CLT_FLOAT64, n, ext, &u3), fn));
        /* z = cos(pi u1); f = (1 + r z) / (r + z); c = k (r - f) */
        CLT__TRY(clt__mul_scalar_rec(fn, u1, M_PI, &z));
        CLT__TRY(clt__cos_rec(fn, z, &z));
        CLT__TRY(clt__mul_rec(fn, r, z, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__add_rec(fn, r, z, &b));
        CLT__TRY(clt__div_rec(fn, a, b, &f));
        CLT__TRY(clt__sub_rec(fn, r, f, &c));
        CLT__TRY(clt__mul_rec(fn, k, c, &c));
        /* accept: c (2 - c) - u2 > 0, or log(c / u2) + 1 - c >= 0 */
        CLT__TRY(clt__rsub_scalar_rec(fn, c, 2, &a));
        CLT__TRY(clt__mul_rec(fn, c, a, &a));
        CLT__TRY(clt__sub_rec(fn, a, u2, &a));
        CLT__TRY(clt__error_as(clt_gt_scalar(a, 0, &acc), fn));
        CLT__TRY(clt__div_rec(fn, c, u2, &b));
        CLT__TRY(clt__log_rec(fn, b, &b));
        CLT__TRY(clt__rsub_scalar_rec(fn, c, 1, &a));
        CLT__TRY(clt__add_rec(fn, b, a, &b));
        CLT__TRY(clt__error_as(clt_ge_scalar(b, 0, &b), fn));
        CLT__TRY(clt__error_as(clt_logical_or(acc, b, &acc), fn));
        /* x = where(accept, sign(u3 - 1/2) acos(f), x) */
        CLT__TRY(clt__sub_scalar_rec(fn, u3, 0.5, &a));
        CLT__TRY(clt__sign_rec(fn, a, &a));
        CLT__TRY(clt__error_as(clt_acos(f, &b), fn));
        CLT__TRY(clt__mul_rec(fn, a, b, &nx));
        CLT__TRY(where_rec(fn, acc, nx, x, &x));
        CLT__TRY(clt__error_as(clt_logical_or(done, acc, &done), fn));
    }
    /* (x + pi + loc) % 2 pi - pi */
    CLT__TRY(clt__add_scalar_rec(fn, x, M_PI, &x));
    CLT__TRY(clt__add_rec(fn, x, loc, &x));
    CLT__TRY(clt__error_as(clt_remainder_scalar(x, 2 * M_PI, &x), fn));
    CLT__TRY(clt__sub_scalar_rec(fn, x, M_PI, &x));
    return clt__error_as(clt_to_dtype(x, d->dtype, out), fn);
done:
    return st;
}

/* ---- RelaxedOneHotCategorical ----------------------------------------------------------- */

/* The temperature with a trailing dim of 1 (to meet the events' last dim). */
static clt_status temperature_col(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    const clt_tensor *t = d->p[2];
    if (t->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: temperature has too many dims", fn);
    return clt__unsqueeze_rec(fn, t, t->ndim, out);
}

/* exp of ExpRelaxedCategorical's rsample: softmax((logits + g) / t) in
 * logs, g Gumbel from u uniform clamped to [eps, 1 - eps]. */
static clt_status relaxed_one_hot_draw(const char *fn, const clt_distribution *d,
                                       clt_generator *gen, int n, const int64_t *ext,
                                       clt_tensor **out)
{
    double eps = d->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON, hi = 1 - eps;
    clt_tensor *u, *g, *s, *t, *l;
    clt_status st;
    CLT__TRY(clt__error_as(clt_rand(gen, d->p[0]->dev, d->dtype, n, ext, &u), fn));
    CLT__TRY(clt__clamp_rec(fn, u, &eps, &hi, &u));
    CLT__TRY(clt__log_rec(fn, u, &g));
    CLT__TRY(clt__neg_rec(fn, g, &g));
    CLT__TRY(clt__log_rec(fn, g, &g));
    CLT__TRY(clt__neg_rec(fn, g, &g));
    CLT__TRY(clt__add_rec(fn, d->p[1], g, &s));
    CLT__TRY(temperature_col(fn, d, &t));
    CLT__TRY(clt__div_rec(fn, s, t, &s));
    CLT__TRY(clt__error_as(clt_logsumexp(s, n - 1, 1, &l), fn));
    CLT__TRY(clt__sub_rec(fn, s, l, &s));
    return clt__exp_rec(fn, s, out);
done:
    return st;
}

/* ExpRelaxedCategorical's log_prob at y = log(v), less the sum of y (the
 * exp transform's log-Jacobian):
 * sum(score - logsumexp(score)) + lgamma(K) + (K - 1) log t - sum y,
 * score = logits - y t. */
static clt_status relaxed_one_hot_lp(const char *fn, const clt_distribution *d,
                                     const clt_tensor *v, clt_tensor **out)
{
    double k = (double)d->event_shape[0];
    clt_tensor *y, *t, *s, *l, *a, *sy;
    clt_status st;
    CLT__TRY(clt__log_rec(fn, v, &y));
    CLT__TRY(temperature_col(fn, d, &t));
    CLT__TRY(clt__mul_rec(fn, y, t, &s));
    CLT__TRY(clt__sub_rec(fn, d->p[1], s, &s));
    CLT__TRY(clt__error_as(clt_logsumexp(s, s->ndim - 1, 1, &l), fn));
    CLT__TRY(clt__sub_rec(fn, s, l, &s));
    CLT__TRY(clt__sum_dim_rec(fn, s, s->ndim - 1, 0, &s));
    CLT__TRY(clt__log_rec(fn, d->p[2], &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, k - 1, &a));
    CLT__TRY(clt__add_scalar_rec(fn, a, lgamma(k), &a));
    CLT__TRY(clt__add_rec(fn, s, a, &s));
    CLT__TRY(clt__sum_dim_rec(fn, y, y->ndim - 1, 0, &sy));
    return clt__sub_rec(fn, s, sy, out);
done:
    return st;
}

/* ---- the entries ------------------------------------------------------------------------ */

clt_status clt__dist3_sample(const char *fn, const clt_distribution *d, clt_generator *gen, int n,
                             const int64_t *ext, clt_tensor **out)
{
    clt_tensor *a, *b, *u;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_BINOMIAL: /* torch.binomial(total_count, probs), expanded */
        CLT__TRY(clt__expand_rec(fn, d->p[0], n, ext, &a));
        CLT__TRY(clt__expand_rec(fn, d->p[1], n, ext, &b));
        return clt__error_as(clt_binomial(gen, a, b, out), fn);
    case CLT__DIST_MULTINOMIAL: return multinomial_draw(fn, d, gen, n, ext, out);
    case CLT__DIST_VON_MISES: return von_mises_draw(fn, d, gen, n, ext, out);
    case CLT__DIST_RELAXED_ONE_HOT: return relaxed_one_hot_draw(fn, d, gen, n, ext, out);
    case CLT__DIST_CONTINUOUS_BERNOULLI: /* icdf(u), u uniform */
        CLT__TRY(clt__error_as(clt_rand(gen, d->p[0]->dev, d->dtype, n, ext, &u), fn));
        return cb_icdf(fn, d->p[0], u, out);
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: %s has no sampler here", fn,
                      clt_distribution_name(d));
done:
    return st;
}

clt_status clt__dist3_log_prob(const char *fn, const clt_distribution *d, const clt_tensor *v,
                               clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b, *c, *le, *ve, *m;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_BINOMIAL: return binomial_lp(fn, p[0], p[2], v, out);
    case CLT__DIST_RELAXED_ONE_HOT: return relaxed_one_hot_lp(fn, d, v, out);
    case CLT__DIST_VON_MISES: /* k cos(v - loc) - log(2 pi) - log I0(k) */
        CLT__TRY(clt__sub_rec(fn, v, p[0], &a));
        CLT__TRY(clt__cos_rec(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, p[1], a, &a));
        CLT__TRY(clt__sub_scalar_rec(fn, a, log(2 * M_PI), &a));
        CLT__TRY(log_bessel(fn, p[1], 0, &b));
        return clt__sub_rec(fn, a, b, out);
    case CLT__DIST_MULTINOMIAL: {
        /* lgamma(sum v + 1) - sum lgamma(v + 1) + sum (logits v), logits 0 where
         * v == 0 and logits == -inf */
        int nd;
        int64_t shape[CLT_MAX_DIMS];
        CLT__TRY(clt__broadcast_shapes(p[1]->ndim, p[1]->shape, v->ndim, v->shape, &nd, shape,
                                       fn));
        CLT__TRY(clt__expand_rec(fn, p[1], nd, shape, &le));
        CLT__TRY(clt__expand_rec(fn, v, nd, shape, &ve));
        int was = clt_set_grad_enabled(0);
        st = clt_eq_scalar(ve, 0, &a);
        if (st == CLT_OK)
            st = clt_eq_scalar(le, -INFINITY, &b);
        if (st == CLT_OK)
            st = clt_logical_and(a, b, &m);
        clt_set_grad_enabled(was);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__masked_fill_rec(fn, le, m, 0, &le));
        CLT__TRY(clt__mul_rec(fn, le, ve, &c));
        CLT__TRY(clt__sum_dim_rec(fn, c, nd - 1, 0, &c));
        CLT__TRY(clt__sum_dim_rec(fn, ve, nd - 1, 0, &a));
        CLT__TRY(clt__add_scalar_rec(fn, a, 1, &a));
        CLT__TRY(lgamma_rec(fn, a, &a));
        CLT__TRY(clt__add_scalar_rec(fn, ve, 1, &b));
        CLT__TRY(lgamma_rec(fn, b, &b));
        CLT__TRY(clt__sum_dim_rec(fn, b, nd - 1, 0, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        return clt__add_rec(fn, a, c, out);
    }
    case CLT__DIST_CONTINUOUS_BERNOULLI: /* -bce_with_logits(logits, v) + log_norm */
        /* bce_with_logits(l, v) = (1 - v) l + softplus(-l) */
        CLT__TRY(clt__rsub_scalar_rec(fn, v, 1, &a));
        CLT__TRY(clt__mul_rec(fn, a, p[1], &a));
        CLT__TRY(clt__error_as(clt_logsigmoid(p[1], &b), fn));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(cb_log_norm(fn, p[0], &c));
        return clt__sub_rec(fn, c, a, out);
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown distribution", fn);
done:
    return st;
}

clt_status clt__dist3_entropy(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b, *c, *s, *lp;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_BINOMIAL: { /* -(exp(lp) lp).sum(0) over the support 0 .. n */
        double n = 0;
        CLT__TRY(homogeneous_count(fn, p[0], &n));
        CLT__TRY(support_column(fn, d, 0, n, d->batch_ndim, &s));
        CLT__TRY(binomial_lp(fn, p[0], p[2], s, &lp));
        CLT__TRY(clt__exp_rec(fn, lp, &a));
        CLT__TRY(clt__mul_rec(fn, a, lp, &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, 0, 0, &a));
        return clt__neg_rec(fn, a, out);
    }
    case CLT__DIST_MULTINOMIAL: {
        /* n H(Categorical) - lgamma(n + 1) + sum_{k=1..n} sum_i Binom(n, p_i)(k) lgamma(k + 1) */
        double n = (double)d->total_count, lo = d->dtype == CLT_FLOAT64 ? -DBL_MAX : -FLT_MAX;
        double eps = d->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON, hi = 1 - eps;
        clt_tensor *cnt, *lg, *w;
        CLT__TRY(clt__clamp_rec(fn, p[1], &lo, NULL, &a));
        CLT__TRY(clt__mul_rec(fn, a, p[0], &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, -n, &a));
        /* torch takes lgamma of an int64 tensor here: a float32 result */
        CLT__TRY(clt__sub_scalar_rec(fn, a, (double)(float)lgamma(n + 1), &a));
        if (d->total_count == 0)
            return clt__expand_rec(fn, a, a->ndim, a->shape, out);
        /* the Binomial's logits of probs, torch's probs_to_logits(is_binary) */
        CLT__TRY(clt__clamp_rec(fn, p[0], &eps, &hi, &c));
        CLT__TRY(clt__log_rec(fn, c, &b));
        CLT__TRY(clt__neg_rec(fn, c, &c));
        CLT__TRY(clt__log1p_rec(fn, c, &c));
        CLT__TRY(clt__sub_rec(fn, b, c, &lg));
        CLT__TRY(clt__error_as(clt_full(p[0]->dev, d->dtype, 0, NULL, n, &cnt), fn));
        CLT__TRY(support_column(fn, d, 1, n, p[0]->ndim, &s));
        CLT__TRY(binomial_lp(fn, cnt, lg, s, &lp));
        CLT__TRY(clt__exp_rec(fn, lp, &b));
        CLT__TRY(clt__add_scalar_rec(fn, s, 1, &w));
        CLT__TRY(lgamma_rec(fn, w, &w));
        CLT__TRY(clt__mul_rec(fn, b, w, &b));
        CLT__TRY(clt__sum_dim_rec(fn, b, 0, 0, &b));
        CLT__TRY(clt__sum_dim_rec(fn, b, b->ndim - 1, 0, &b));
        return clt__add_rec(fn, a, b, out);
    }
    case CLT__DIST_CONTINUOUS_BERNOULLI: {
        /* mean (log1p(-p) - log p) - log_norm - log1p(-p) */
        clt_tensor *l0;
        CLT__TRY(clt__neg_rec(fn, p[0], &l0));
        CLT__TRY(clt__log1p_rec(fn, l0, &l0));
        CLT__TRY(clt__log_rec(fn, p[0], &a));
        CLT__TRY(clt__sub_rec(fn, l0, a, &a));
        CLT__TRY(cb_moment(fn, p[0], 0, &b));
        CLT__TRY(clt__mul_rec(fn, b, a, &a));
        CLT__TRY(cb_log_norm(fn, p[0], &c));
        CLT__TRY(clt__sub_rec(fn, a, c, &a));
        return clt__sub_rec(fn, a, l0, out);
    }
    case CLT__DIST_VON_MISES:
    case CLT__DIST_RELAXED_ONE_HOT:
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement entropy", fn,
                          clt_distribution_name(d));
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown distribution", fn);
done:
    return st;
}

clt_status clt__dist3_moment(const char *fn, const clt_distribution *d, int m, clt_tensor **out)
{
    clt_tensor *const *p = d->p;
    clt_tensor *a, *b;
    clt_status st;
    switch (d->kind) {
    case CLT__DIST_BINOMIAL: /* n p, n p (1 - p) */
        CLT__TRY(clt__mul_rec(fn, p[0], p[1], &a));
        if (m == 0)
            return clt__expand_rec(fn, a, a->ndim, a->shape, out);
        CLT__TRY(clt__rsub_scalar_rec(fn, p[1], 1, &b));
        return clt__mul_rec(fn, a, b, out);
    case CLT__DIST_MULTINOMIAL: /* n p, n p (1 - p) */
        CLT__TRY(clt__mul_scalar_rec(fn, p[0], (double)d->total_count, &a));
        if (m == 0)
            return clt__expand_rec(fn, a, a->ndim, a->shape, out);
        CLT__TRY(clt__rsub_scalar_rec(fn, p[0], 1, &b));
        return clt__mul_rec(fn, a, b, out);
    case CLT__DIST_CONTINUOUS_BERNOULLI: return cb_moment(fn, p[0], m, out);
    case CLT__DIST_VON_MISES: /* the circular ones: loc, 1 - I1(k) / I0(k) */
        if (m == 0)
            return clt__expand_rec(fn, p[0], p[0]->ndim, p[0]->shape, out);
        CLT__TRY(log_bessel(fn, p[1], 1, &a));
        CLT__TRY(log_bessel(fn, p[1], 0, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(clt__exp_rec(fn, a, &a));
        return clt__rsub_scalar_rec(fn, a, 1, out);
    case CLT__DIST_RELAXED_ONE_HOT: /* a TransformedDistribution: torch has none */
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: RelaxedOneHotCategorical does not implement %s", fn,
                          m == 0 ? "mean" : "variance");
    default: break;
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown distribution", fn);
done:
    return st;
}

bool clt__dist3_has_cdf(const clt_distribution *d)
{
    return d->kind == CLT__DIST_CONTINUOUS_BERNOULLI;
}

clt_status clt__dist3_cdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                          clt_tensor **out)
{
    if (d->kind != CLT__DIST_CONTINUOUS_BERNOULLI)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement cdf", fn,
                          clt_distribution_name(d));
    /* (cut^v (1 - cut)^(1 - v) + cut - 1) / (2 cut - 1) outside the region, v
     * inside; 0 for v <= 0 and 1 for v >= 1 */
    const clt_tensor *p = d->p[0];
    clt_tensor *o, *cut, *a, *b, *ve, *m;
    clt_status st;
    int nd;
    int64_t shape[CLT_MAX_DIMS];
    CLT__TRY(cb_outside(fn, p, &o));
    CLT__TRY(cb_cut(fn, p, o, &cut));
    CLT__TRY(clt__pow_rec(fn, cut, v, &a));
    CLT__TRY(clt__rsub_scalar_rec(fn, cut, 1, &b));
    CLT__TRY(clt__rsub_scalar_rec(fn, v, 1, &ve));
    CLT__TRY(clt__pow_rec(fn, b, ve, &b));
    CLT__TRY(clt__mul_rec(fn, a, b, &a));
    CLT__TRY(clt__add_rec(fn, a, cut, &a));
    CLT__TRY(clt__sub_scalar_rec(fn, a, 1, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, cut, 2, &b));
    CLT__TRY(clt__sub_scalar_rec(fn, b, 1, &b));
    CLT__TRY(clt__div_rec(fn, a, b, &a));
    CLT__TRY(clt__broadcast_shapes(a->ndim, a->shape, v->ndim, v->shape, &nd, shape, fn));
    CLT__TRY(clt__expand_rec(fn, v, nd, shape, &ve));
    CLT__TRY(where_rec(fn, o, a, ve, &a));
    int was = clt_set_grad_enabled(0);
    st = clt_le_scalar(ve, 0, &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    CLT__TRY(clt__expand_rec(fn, m, nd, shape, &m));
    CLT__TRY(clt__masked_fill_rec(fn, a, m, 0, &a));
    was = clt_set_grad_enabled(0);
    st = clt_ge_scalar(ve, 1, &m);
    clt_set_grad_enabled(was);
    CLT__TRY(clt__error_as(st, fn));
    return clt__masked_fill_rec(fn, a, m, 1, out);
done:
    return st;
}

clt_status clt__dist3_icdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                           clt_tensor **out)
{
    if (d->kind != CLT__DIST_CONTINUOUS_BERNOULLI)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement icdf", fn,
                          clt_distribution_name(d));
    return cb_icdf(fn, d->p[0], v, out);
}

/* torch's _cont_bern_log_norm and mean, for kl.c. */
clt_status clt__dist3_cb_log_norm(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    return cb_log_norm(fn, d->p[0], out);
}
