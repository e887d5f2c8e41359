/* wishart.c: torch 1.13's Wishart(df, covariance_matrix | precision_matrix |
 * scale_tril): log_prob, entropy, the moments and mode, and rsample by
 * Bartlett's decomposition, composed of recorded ops. */
#include <math.h>
#include <stdlib.h>

#include "distributions/distributions.h"

#define LOG_2 0.69314718055994530942

/* x[..., None] - arange(p) / 2 (or - arange(p) with half false), recorded
 * in x. */
static clt_status minus_range(const char *fn, const clt_tensor *x, int64_t p, bool half,
                              clt_tensor **out)
{
    clt_tensor *r, *u;
    clt_status st;
    CLT__TRY(clt__error_as(clt_arange(x->dev, x->dtype, 0, (double)p, 1, &r), fn));
    if (half)
        CLT__TRY(clt__mul_scalar_rec(fn, r, 0.5, &r));
    CLT__TRY(clt__unsqueeze_rec(fn, x, x->ndim, &u));
    return clt__sub_rec(fn, u, r, out);
done:
    return st;
}

/* torch.mvlgamma(x, p) or _mvdigamma (digamma true, without the constant,
 * as torch's), recorded. */
static clt_status mv_gamma(const char *fn, const clt_tensor *x, int64_t p, bool digamma,
                           clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    CLT__TRY(minus_range(fn, x, p, true, &a));
    CLT__TRY(clt__error_as(digamma ? clt_digamma(a, &a) : clt_lgamma(a, &a), fn));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
    if (digamma) {
        *out = a;
        return CLT_OK;
    }
    return clt__add_scalar_rec(fn, a, (double)p * (double)(p - 1) / 4 * log(M_PI), out);
done:
    return st;
}

/* p log 2 / 2 + sum(log diag L) */
static clt_status log_norm_part(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    int64_t p = d->event_shape[0];
    clt_tensor *a;
    clt_status st;
    CLT__TRY(clt__dist_half_log_det(fn, d->p[1], &a));
    return clt__add_scalar_rec(fn, a, (double)p * LOG_2 / 2, out);
done:
    return st;
}

/* V: the covariance_matrix given, or L L^T, expanded to batch + event. */
static clt_status covariance(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *a;
    clt_status st;
    memcpy(shape, d->batch_shape, (size_t)d->batch_ndim * sizeof *shape);
    shape[d->batch_ndim] = shape[d->batch_ndim + 1] = d->event_shape[0];
    if (d->p[2]) /* the covariance_matrix given, as torch keeps it */
        return clt__expand_rec(fn, d->p[2], d->p[2]->ndim, d->p[2]->shape, out);
    CLT__TRY(clt__transpose_rec(fn, d->p[1], -2, -1, &a));
    CLT__TRY(clt__matmul_rec(fn, d->p[1], a, &a));
    return clt__expand_rec(fn, a, d->batch_ndim + 2, shape, out);
done:
    return st;
}

/* df viewed as batch + (1, 1). */
static clt_status df_11(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    CLT__TRY(clt__unsqueeze_rec(fn, d->p[0], d->p[0]->ndim, &a));
    return clt__unsqueeze_rec(fn, a, a->ndim, out);
done:
    return st;
}

clt_status clt__dist_wishart_log_prob(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out)
{
    /* -nu (p log2 / 2 + log|L|) - mvlgamma(nu / 2, p) + (nu - p - 1) / 2 log|det v|
     * - tr(cholesky_solve(v, L)) / 2 */
    int64_t p = d->event_shape[0];
    const clt_tensor *nu = d->p[0];
    clt_tensor *a, *b, *c, *sign = NULL, *lad = NULL, *x;
    clt_status st;
    CLT__TRY(log_norm_part(fn, d, &a));
    CLT__TRY(clt__mul_rec(fn, nu, a, &a));
    CLT__TRY(clt__neg_rec(fn, a, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, nu, 0.5, &b));
    CLT__TRY(mv_gamma(fn, b, p, false, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    if (clt__dtype_is_float(v->dtype))
        x = (clt_tensor *)v;
    else
        CLT__TRY(clt__to_dtype_rec(fn, v, d->dtype, &x));
    CLT__TRY(clt__error_as(clt_linalg_slogdet(x, &sign, &lad), fn));
    CLT__TRY(clt__sub_scalar_rec(fn, nu, (double)(p + 1), &b));
    CLT__TRY(clt__mul_scalar_rec(fn, b, 0.5, &b));
    CLT__TRY(clt__mul_rec(fn, b, lad, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    CLT__TRY(clt__error_as(clt_cholesky_solve(x, d->p[1], 0, &c), fn));
    CLT__TRY(clt__error_as(clt_diagonal(c, 0, -2, -1, &c), fn));
    CLT__TRY(clt__sum_dim_rec(fn, c, c->ndim - 1, 0, &c));
    CLT__TRY(clt__mul_scalar_rec(fn, c, 0.5, &c));
    return clt__sub_rec(fn, a, c, out);
done:
    return st;
}

clt_status clt__dist_wishart_entropy(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    /* (p + 1) (p log2 / 2 + log|L|) + mvlgamma(nu / 2, p)
     * - (nu - p - 1) / 2 mvdigamma(nu / 2, p) + nu p / 2 */
    int64_t p = d->event_shape[0];
    const clt_tensor *nu = d->p[0];
    clt_tensor *a, *b, *h, *c;
    clt_status st;
    CLT__TRY(log_norm_part(fn, d, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, (double)(p + 1), &a));
    CLT__TRY(clt__mul_scalar_rec(fn, nu, 0.5, &h));
    CLT__TRY(mv_gamma(fn, h, p, false, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    CLT__TRY(mv_gamma(fn, h, p, true, &b));
    CLT__TRY(clt__sub_scalar_rec(fn, nu, (double)(p + 1), &c));
    CLT__TRY(clt__mul_scalar_rec(fn, c, 0.5, &c));
    CLT__TRY(clt__mul_rec(fn, c, b, &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, nu, (double)p / 2, &b));
    CLT__TRY(clt__add_rec(fn, a, b, &a));
    return clt__expand_rec(fn, a, d->batch_ndim, d->batch_shape, out);
done:
    return st;
}

clt_status clt__dist_wishart_moment(const char *fn, const clt_distribution *d, int m,
                                    clt_tensor **out)
{
    int64_t p = d->event_shape[0];
    clt_tensor *v, *n, *a, *b;
    clt_status st;
    CLT__TRY(covariance(fn, d, &v));
    CLT__TRY(df_11(fn, d, &n));
    switch (m) {
    case 0: return clt__mul_rec(fn, n, v, out); /* df V */
    case 3: { /* (df - p - 1) V, NaN where df - p - 1 <= 0 */
        clt_tensor *k;
        CLT__TRY(clt__sub_scalar_rec(fn, n, (double)(p + 1), &a));
        int was = clt_set_grad_enabled(0);
        st = clt_le_scalar(a, 0, &k);
        clt_set_grad_enabled(was);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__masked_fill_rec(fn, a, k, NAN, &a));
        return clt__mul_rec(fn, a, v, out);
    }
    default: /* df (V^2 + diag(V) diag(V)^T), stddev its square root */
        CLT__TRY(clt__square_rec(fn, v, &a));
        CLT__TRY(clt__error_as(clt_diagonal(v, 0, -2, -1, &b), fn));
        {
            clt_tensor *r, *c;
            CLT__TRY(clt__unsqueeze_rec(fn, b, b->ndim, &c));
            CLT__TRY(clt__unsqueeze_rec(fn, b, b->ndim - 1, &r));
            CLT__TRY(clt__mul_rec(fn, c, r, &b));
        }
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        CLT__TRY(clt__mul_rec(fn, n, a, &a));
        if (m == 2)
            return clt__sqrt_rec(fn, a, out);
        *out = a;
        return CLT_OK;
    }
done:
    return st;
}

/* Bartlett's decomposition as torch's _bartlett_sampling: A with
 * sqrt(chi2(df - i)) (clamped to eps) on its diagonal and standard normals
 * below it (in torch's tril_indices order, drawn after the chi2), and the
 * sample (L A)(L A)^T. */
clt_status clt__dist_wishart_rsample(const char *fn, const clt_distribution *d,
                                     clt_generator *gen, int n, const int64_t *ext,
                                     clt_tensor **out)
{
    int64_t p = d->event_shape[0], m = p * (p - 1) / 2;
    int nl = n - 2; /* sample_shape + batch_shape */
    int64_t shape[CLT_MAX_DIMS];
    double eps = d->dtype == CLT_FLOAT64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
    clt_tensor *df, *c, *z = NULL, *a, *b, *idx = NULL;
    clt_distribution *chi = NULL;
    int64_t *map = NULL;
    clt_status st;
    CLT__TRY(minus_range(fn, d->p[0], p, false, &df));
    CLT__TRY(clt_chi2_dist(df, 0, &chi));
    CLT__TRY(clt_distribution_rsample(chi, gen, nl - d->batch_ndim, ext, &c));
    CLT__TRY(clt__sqrt_rec(fn, c, &c));
    CLT__TRY(clt__clamp_rec(fn, c, &eps, NULL, &c));
    CLT__TRY(clt__error_as(clt_diag_embed(c, 0, -2, -1, &a), fn));
    if (m > 0) {
        /* the normals placed below the diagonal through an index over [0, z...] */
        memcpy(shape, ext, (size_t)nl * sizeof *shape);
        shape[nl] = m;
        CLT__TRY(clt_randn(gen, d->p[0]->dev, d->dtype, nl + 1, shape, &z));
        map = calloc((size_t)(p * p), sizeof *map);
        if (!map) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        int64_t k = 0;
        for (int64_t i = 0; i < p; i++)
            for (int64_t j = 0; j < i; j++)
                map[i * p + j] = ++k;
        CLT__TRY(clt_tensor_from_host(d->p[0]->dev, CLT_INT64, 1, (int64_t[]){p * p}, map,
                                      &idx));
        shape[nl] = 1;
        CLT__TRY(clt_zeros(d->p[0]->dev, d->dtype, nl + 1, shape, &b));
        CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){b, z}, 2, nl, &b));
        CLT__TRY(clt__index_select_rec(fn, b, nl, idx, &b));
        shape[nl] = p;
        shape[nl + 1] = p;
        CLT__TRY(clt__reshape_rec(fn, b, nl + 2, shape, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
    }
    CLT__TRY(clt__matmul_rec(fn, d->p[1], a, &a));
    CLT__TRY(clt__transpose_rec(fn, a, -2, -1, &b));
    st = clt__matmul_rec(fn, a, b, out);
done:
    free(map);
    clt_distribution_free(chi);
    return st;
}

/* ---- LKJCholesky ------------------------------------------------------------ */

clt_status clt__dist_lkj_log_prob(const char *fn, const clt_distribution *d, const clt_tensor *v,
                                  clt_tensor **out)
{
    /* sum((2 (c - 1) + dim - i) log v_ii, i = 2 .. dim) - (dm1 log(pi) / 2
     * + mvlgamma(alpha - 1/2, dm1) - dm1 lgamma(alpha)), alpha = c + dm1 / 2 */
    int64_t dim = d->total_count, dm1 = dim - 1;
    const clt_tensor *c = d->p[0];
    clt_tensor *x, *g, *o, *r, *a, *b;
    clt_status st;
    if (clt__dtype_is_float(v->dtype))
        x = (clt_tensor *)v;
    else
        CLT__TRY(clt__to_dtype_rec(fn, v, d->dtype, &x));
    CLT__TRY(clt__error_as(clt_diagonal(x, 0, -2, -1, &g), fn));
    CLT__TRY(clt__narrow_rec(fn, g, g->ndim - 1, 1, dm1, &g));
    CLT__TRY(clt__log_rec(fn, g, &g));
    CLT__TRY(clt__sub_scalar_rec(fn, c, 1, &o));
    CLT__TRY(clt__mul_scalar_rec(fn, o, 2, &o));
    CLT__TRY(clt__add_scalar_rec(fn, o, (double)dim, &o));
    CLT__TRY(clt__error_as(clt_arange(c->dev, d->dtype, 2, (double)dim + 1, 1, &r), fn));
    CLT__TRY(clt__unsqueeze_rec(fn, o, o->ndim, &o));
    CLT__TRY(clt__sub_rec(fn, o, r, &o));
    CLT__TRY(clt__mul_rec(fn, o, g, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
    CLT__TRY(clt__add_scalar_rec(fn, c, 0.5 * (double)dm1, &b)); /* alpha */
    CLT__TRY(clt__sub_scalar_rec(fn, b, 0.5, &o));
    CLT__TRY(mv_gamma(fn, o, dm1, false, &o));
    CLT__TRY(clt__error_as(clt_lgamma(b, &b), fn));
    CLT__TRY(clt__mul_scalar_rec(fn, b, (double)dm1, &b));
    CLT__TRY(clt__sub_rec(fn, o, b, &o));
    CLT__TRY(clt__add_scalar_rec(fn, o, 0.5 * (double)dm1 * log(M_PI), &o));
    return clt__sub_rec(fn, a, o, out);
done:
    return st;
}

/* torch's onion method: y ~ Beta(offset + 1/2, c + (dim - 2) / 2 - offset / 2)
 * with offset [0, 0, 1, .., dim - 2], rows of tril(randn, -1) normalised
 * (the first row 0), w = sqrt(y) u, and the diagonal sqrt(1 - |w_i|^2)
 * clamped below at tiny. */
clt_status clt__dist_lkj_sample(const char *fn, const clt_distribution *d, clt_generator *gen,
                                int n, const int64_t *ext, clt_tensor **out)
{
    int64_t dim = d->total_count;
    const clt_tensor *c = d->p[0];
    double tiny = d->dtype == CLT_FLOAT64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
    clt_tensor *off, *z, *c1, *c0, *y, *u, *nrm, *k, *w, *s;
    clt_distribution *beta = NULL;
    clt_status st;
    CLT__TRY(clt__error_as(clt_arange(c->dev, d->dtype, -1, (double)dim - 1, 1, &off), fn));
    CLT__TRY(clt__error_as(clt_clamp_min(off, 0, &off), fn)); /* [0, 0, 1, .., dim - 2] */
    CLT__TRY(clt__add_scalar_rec(fn, off, 0.5, &c1));
    CLT__TRY(clt__add_scalar_rec(fn, c, 0.5 * (double)(dim - 2), &c0));
    CLT__TRY(clt__unsqueeze_rec(fn, c0, c0->ndim, &c0));
    CLT__TRY(clt__mul_scalar_rec(fn, off, 0.5, &z));
    CLT__TRY(clt__sub_rec(fn, c0, z, &c0));
    CLT__TRY(clt_beta_dist(c1, c0, 0, &beta));
    CLT__TRY(clt_distribution_sample(beta, gen, n - 2 - d->batch_ndim, ext, &y));
    CLT__TRY(clt__unsqueeze_rec(fn, y, y->ndim, &y));
    CLT__TRY(clt_randn(gen, c->dev, d->dtype, n, ext, &u));
    CLT__TRY(clt__error_as(clt_tril(u, -1, &u), fn));
    CLT__TRY(clt__vector_norm_dim_rec(fn, u, 2, n - 1, 1, &nrm));
    CLT__TRY(clt__div_rec(fn, u, nrm, &u));
    CLT__TRY(clt__error_as(clt_isnan(u, &k), fn));
    CLT__TRY(clt__masked_fill_rec(fn, u, k, 0, &u));
    CLT__TRY(clt__sqrt_rec(fn, y, &y));
    CLT__TRY(clt__mul_rec(fn, y, u, &w));
    CLT__TRY(clt__square_rec(fn, w, &s));
    CLT__TRY(clt__sum_dim_rec(fn, s, n - 1, 0, &s));
    CLT__TRY(clt__rsub_scalar_rec(fn, s, 1, &s));
    CLT__TRY(clt__clamp_rec(fn, s, &tiny, NULL, &s));
    CLT__TRY(clt__sqrt_rec(fn, s, &s));
    CLT__TRY(clt__error_as(clt_diag_embed(s, 0, -2, -1, &s), fn));
    st = clt__add_rec(fn, w, s, out);
done:
    clt_distribution_free(beta);
    return st;
}

clt_status clt__dist_wishart_kl(const char *fn, const clt_distribution *p,
                                const clt_distribution *q, clt_tensor **out)
{
    /* torch's Bregman divergence of the exponential family (its
     * _kl_expfamily_expfamily) in closed form: with n, m the dfs and
     * M = Lq^-1 Lp, m (log|Lq| - log|Lp|) + n (|M|_F^2 - d) / 2
     * + mvlgamma(m / 2, d) - mvlgamma(n / 2, d) + (n - m) / 2 mvdigamma(n / 2, d) */
    int64_t d = p->event_shape[0];
    if (q->event_shape[0] != d)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: KL(p || q) of two Wisharts of %lld and %lld dimensions", fn,
                          (long long)d, (long long)q->event_shape[0]);
    const clt_tensor *n = p->p[0], *m = q->p[0];
    clt_tensor *a, *b, *t, *hn, *hm;
    clt_status st;
    CLT__TRY(clt__dist_half_log_det(fn, q->p[1], &a));
    CLT__TRY(clt__dist_half_log_det(fn, p->p[1], &b));
    CLT__TRY(clt__sub_rec(fn, a, b, &a));
    CLT__TRY(clt__mul_rec(fn, m, a, &t));
    CLT__TRY(clt__linalg_solve_rec(fn, q->p[1], p->p[1], &a));
    CLT__TRY(clt__square_rec(fn, a, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
    CLT__TRY(clt__sub_scalar_rec(fn, a, (double)d, &a));
    CLT__TRY(clt__mul_rec(fn, n, a, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 0.5, &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    CLT__TRY(clt__mul_scalar_rec(fn, n, 0.5, &hn));
    CLT__TRY(clt__mul_scalar_rec(fn, m, 0.5, &hm));
    CLT__TRY(mv_gamma(fn, hm, d, false, &a));
    CLT__TRY(clt__add_rec(fn, t, a, &t));
    CLT__TRY(mv_gamma(fn, hn, d, false, &a));
    CLT__TRY(clt__sub_rec(fn, t, a, &t));
    CLT__TRY(mv_gamma(fn, hn, d, true, &a));
    CLT__TRY(clt__sub_rec(fn, hn, hm, &b));
    CLT__TRY(clt__mul_rec(fn, b, a, &a));
    return clt__add_rec(fn, t, a, out);
done:
    return st;
}
