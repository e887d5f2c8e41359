/* lowrank.c: LowRankMultivariateNormal (torch.distributions 1.13), covariance
 * W W^T + diag(D), through the capacitance matrix I + W^T D^-1 W (the
 * Woodbury identity and the matrix determinant lemma, torch's formulas);
 * its KL pairs with itself and MultivariateNormal; and the covariance,
 * precision and scale_tril matrices of both families. */
#include <math.h>

#include "distributions/distributions.h"

#define LOG_2PI 1.83787706640934548356

/* W^T / D (D as a row), recorded. */
static clt_status wt_dinv(const char *fn, const clt_tensor *w, const clt_tensor *dg,
                          clt_tensor **out)
{
    clt_tensor *wt, *dr;
    clt_status st;
    CLT__TRY(clt__transpose_rec(fn, w, -2, -1, &wt));
    CLT__TRY(clt__unsqueeze_rec(fn, dg, dg->ndim - 1, &dr));
    return clt__div_rec(fn, wt, dr, out);
done:
    return st;
}

/* a + I (a [..., m, m]), recorded. */
static clt_status plus_eye(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    int64_t m = a->shape[a->ndim - 1];
    clt_tensor *eye;
    clt_status st = clt__error_as(clt_eye(a->dev, a->dtype, m, m, &eye), fn);
    return st != CLT_OK ? st : clt__add_rec(fn, a, eye, out);
}

static clt_status cholesky(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    return clt__error_as(clt_linalg_cholesky(a, 0, out), fn);
}

/* torch's _batch_capacitance_tril: cholesky(I + W^T D^-1 W). */
static clt_status capacitance_tril(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    clt_tensor *a, *k;
    clt_status st;
    CLT__TRY(wt_dinv(fn, d->p[1], d->p[2], &a));
    CLT__TRY(clt__matmul_rec(fn, a, d->p[1], &k));
    CLT__TRY(plus_eye(fn, k, &k));
    return cholesky(fn, k, out);
done:
    return st;
}

/* torch's _batch_lowrank_logdet: 2 sum log diag(C) + sum log D. */
static clt_status lowrank_logdet(const char *fn, const clt_distribution *d, const clt_tensor *c,
                                 clt_tensor **out)
{
    clt_tensor *a, *b;
    clt_status st;
    CLT__TRY(clt__dist_half_log_det(fn, c, &a));
    CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
    CLT__TRY(clt__log_rec(fn, d->p[2], &b));
    CLT__TRY(clt__sum_dim_rec(fn, b, b->ndim - 1, 0, &b));
    return clt__add_rec(fn, a, b, out);
done:
    return st;
}

/* torch's _batch_lowrank_mahalanobis: sum x^2 / D - |C^-1 W^T D^-1 x|^2. */
static clt_status lowrank_mahalanobis(const char *fn, const clt_distribution *d,
                                      const clt_tensor *x, const clt_tensor *c, clt_tensor **out)
{
    clt_tensor *t1, *a, *xc, *y, *t2;
    clt_status st;
    CLT__TRY(clt__square_rec(fn, x, &t1));
    CLT__TRY(clt__div_rec(fn, t1, d->p[2], &t1));
    CLT__TRY(clt__sum_dim_rec(fn, t1, t1->ndim - 1, 0, &t1));
    CLT__TRY(wt_dinv(fn, d->p[1], d->p[2], &a));
    CLT__TRY(clt__unsqueeze_rec(fn, x, x->ndim, &xc));
    CLT__TRY(clt__matmul_rec(fn, a, xc, &y));
    CLT__TRY(clt__squeeze_rec(fn, y, y->ndim - 1, &y));
    CLT__TRY(clt__dist_mahalanobis(fn, c, y, &t2));
    return clt__sub_rec(fn, t1, t2, out);
done:
    return st;
}

clt_status clt__dist_lowrank_log_prob(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out)
{
    double n = (double)d->event_shape[0];
    clt_tensor *c, *x, *m, *ld;
    clt_status st;
    CLT__TRY(capacitance_tril(fn, d, &c));
    CLT__TRY(clt__sub_rec(fn, v, d->p[0], &x));
    CLT__TRY(lowrank_mahalanobis(fn, d, x, c, &m));
    CLT__TRY(lowrank_logdet(fn, d, c, &ld));
    CLT__TRY(clt__add_rec(fn, ld, m, &m));
    CLT__TRY(clt__add_scalar_rec(fn, m, n * LOG_2PI, &m));
    return clt__mul_scalar_rec(fn, m, -0.5, out);
done:
    return st;
}

clt_status clt__dist_lowrank_entropy(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    double n = (double)d->event_shape[0];
    clt_tensor *c, *ld;
    clt_status st;
    CLT__TRY(capacitance_tril(fn, d, &c));
    CLT__TRY(lowrank_logdet(fn, d, c, &ld));
    CLT__TRY(clt__add_scalar_rec(fn, ld, n * (1 + LOG_2PI), &ld));
    CLT__TRY(clt__mul_scalar_rec(fn, ld, 0.5, &ld));
    return clt__expand_rec(fn, ld, d->batch_ndim, d->batch_shape, out);
done:
    return st;
}

clt_status clt__dist_lowrank_moment(const char *fn, const clt_distribution *d, int m,
                                    clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, d->batch_shape, (size_t)d->batch_ndim * sizeof *shape);
    shape[d->batch_ndim] = d->event_shape[0];
    if (m == 0)
        return clt__expand_rec(fn, d->p[0], d->p[0]->ndim, d->p[0]->shape, out);
    CLT__TRY(clt__square_rec(fn, d->p[1], &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
    CLT__TRY(clt__add_rec(fn, a, d->p[2], &a));
    if (m == 2)
        CLT__TRY(clt__sqrt_rec(fn, a, &a));
    return clt__expand_rec(fn, a, d->batch_ndim + 1, shape, out);
done:
    return st;
}

clt_status clt__dist_lowrank_rsample(const char *fn, const clt_distribution *d,
                                     clt_generator *gen, int n, const int64_t *ext,
                                     clt_tensor **out)
{
    int64_t wshape[CLT_MAX_DIMS];
    clt_tensor *ew, *ed, *a, *b;
    clt_status st;
    memcpy(wshape, ext, (size_t)n * sizeof *wshape);
    wshape[n - 1] = d->p[1]->shape[d->p[1]->ndim - 1];
    /* torch's order: eps_W [..., m], then eps_D [..., n] */
    CLT__TRY(clt__error_as(clt_randn(gen, d->p[0]->dev, d->dtype, n, wshape, &ew), fn));
    CLT__TRY(clt__error_as(clt_randn(gen, d->p[0]->dev, d->dtype, n, ext, &ed), fn));
    CLT__TRY(clt__unsqueeze_rec(fn, ew, n, &ew));
    CLT__TRY(clt__matmul_rec(fn, d->p[1], ew, &a));
    CLT__TRY(clt__squeeze_rec(fn, a, a->ndim - 1, &a));
    CLT__TRY(clt__sqrt_rec(fn, d->p[2], &b));
    CLT__TRY(clt__mul_rec(fn, b, ed, &b));
    CLT__TRY(clt__add_rec(fn, d->p[0], a, &a));
    return clt__add_rec(fn, a, b, out);
done:
    return st;
}

/* torch's _batch_trace_XXT: the sum of squares over the last two dims. */
static clt_status trace_xxt(const char *fn, const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    CLT__TRY(clt__square_rec(fn, x, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
    return clt__sum_dim_rec(fn, a, a->ndim - 1, 0, out);
done:
    return st;
}

/* A = C^-1 W^T D^-1 of q (C its capacitance_tril), recorded. */
static clt_status woodbury_a(const char *fn, const clt_distribution *q, const clt_tensor *c,
                             clt_tensor **out)
{
    clt_tensor *a;
    clt_status st;
    CLT__TRY(wt_dinv(fn, q->p[1], q->p[2], &a));
    return clt__error_as(clt_linalg_solve_triangular(c, a, 0, 1, 0, out), fn);
done:
    return st;
}

/* x [..., r, k] and y [..., r', k'] expanded to their broadcast batch dims. */
static clt_status batch_broadcast(const char *fn, const clt_tensor *x, const clt_tensor *y,
                                  clt_tensor **xo, clt_tensor **yo)
{
    int nb = 0;
    int64_t batch[CLT_MAX_DIMS];
    clt_status st = clt__broadcast_shapes(x->ndim - 2, x->shape, y->ndim - 2, y->shape, &nb,
                                          batch, fn);
    if (st != CLT_OK)
        return st;
    if (nb + 2 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: too many dimensions", fn);
    batch[nb] = x->shape[x->ndim - 2];
    batch[nb + 1] = x->shape[x->ndim - 1];
    CLT__TRY(clt__expand_rec(fn, x, nb + 2, batch, xo));
    batch[nb] = y->shape[y->ndim - 2];
    batch[nb + 1] = y->shape[y->ndim - 1];
    return clt__expand_rec(fn, y, nb + 2, batch, yo);
done:
    return st;
}

clt_status clt__dist_lowrank_kl(const char *fn, const clt_distribution *p,
                                const clt_distribution *q, clt_tensor **out)
{
    bool plr = p->kind == CLT__DIST_LOWRANK_MVN, qlr = q->kind == CLT__DIST_LOWRANK_MVN;
    if (p->event_shape[0] != q->event_shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: KL-divergence between two (Low Rank) Multivariate Normals with "
                          "different event shapes cannot be computed",
                          fn);
    double n = (double)p->event_shape[0];
    clt_tensor *pc = NULL, *qc = NULL, *t1, *t2, *t3, *a, *b, *x, *y, *diff;
    clt_status st;
    if (plr)
        CLT__TRY(capacitance_tril(fn, p, &pc));
    if (qlr)
        CLT__TRY(capacitance_tril(fn, q, &qc));
    /* term1: log det q - log det p */
    if (qlr)
        CLT__TRY(lowrank_logdet(fn, q, qc, &a));
    else {
        CLT__TRY(clt__dist_half_log_det(fn, q->p[1], &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 2, &a));
    }
    if (plr)
        CLT__TRY(lowrank_logdet(fn, p, pc, &b));
    else {
        CLT__TRY(clt__dist_half_log_det(fn, p->p[1], &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, 2, &b));
    }
    CLT__TRY(clt__sub_rec(fn, a, b, &t1));
    /* term3: the Mahalanobis distance of q.loc - p.loc under q */
    CLT__TRY(clt__sub_rec(fn, q->p[0], p->p[0], &diff));
    if (qlr)
        CLT__TRY(lowrank_mahalanobis(fn, q, diff, qc, &t3));
    else
        CLT__TRY(clt__dist_mahalanobis(fn, q->p[1], diff, &t3));
    /* term2: trace(inv(q cov) p cov) */
    if (plr && qlr) {
        const clt_tensor *pw = p->p[1], *pd = p->p[2], *qd = q->p[2];
        clt_tensor *aa, *t21, *t22, *t23, *t24;
        CLT__TRY(woodbury_a(fn, q, qc, &aa));
        CLT__TRY(clt__div_rec(fn, pd, qd, &t21));
        CLT__TRY(clt__sum_dim_rec(fn, t21, t21->ndim - 1, 0, &t21));
        CLT__TRY(clt__rsqrt_rec(fn, qd, &a));
        CLT__TRY(clt__unsqueeze_rec(fn, a, a->ndim, &a));
        CLT__TRY(clt__mul_rec(fn, pw, a, &a));
        CLT__TRY(trace_xxt(fn, a, &t22));
        CLT__TRY(clt__sqrt_rec(fn, pd, &a));
        CLT__TRY(clt__unsqueeze_rec(fn, a, a->ndim - 1, &a));
        CLT__TRY(clt__mul_rec(fn, aa, a, &a));
        CLT__TRY(trace_xxt(fn, a, &t23));
        CLT__TRY(clt__matmul_rec(fn, aa, pw, &a));
        CLT__TRY(trace_xxt(fn, a, &t24));
        CLT__TRY(clt__add_rec(fn, t21, t22, &t2));
        CLT__TRY(clt__sub_rec(fn, t2, t23, &t2));
        CLT__TRY(clt__sub_rec(fn, t2, t24, &t2));
    } else if (qlr) { /* MultivariateNormal || LowRank */
        const clt_tensor *pl = p->p[1];
        clt_tensor *aa, *t21, *t22;
        CLT__TRY(woodbury_a(fn, q, qc, &aa));
        CLT__TRY(clt__rsqrt_rec(fn, q->p[2], &a));
        CLT__TRY(clt__unsqueeze_rec(fn, a, a->ndim, &a));
        CLT__TRY(clt__mul_rec(fn, pl, a, &a));
        CLT__TRY(trace_xxt(fn, a, &t21));
        CLT__TRY(clt__matmul_rec(fn, aa, pl, &a));
        CLT__TRY(trace_xxt(fn, a, &t22));
        CLT__TRY(clt__sub_rec(fn, t21, t22, &t2));
    } else { /* LowRank || MultivariateNormal */
        clt_tensor *t21, *t22, *dm;
        CLT__TRY(batch_broadcast(fn, q->p[1], p->p[1], &x, &y));
        CLT__TRY(clt__error_as(clt_linalg_solve_triangular(x, y, 0, 1, 0, &a), fn));
        CLT__TRY(trace_xxt(fn, a, &t21));
        CLT__TRY(clt__sqrt_rec(fn, p->p[2], &dm));
        CLT__TRY(clt__error_as(clt_diag_embed(dm, 0, -2, -1, &dm), fn));
        CLT__TRY(batch_broadcast(fn, q->p[1], dm, &x, &y));
        CLT__TRY(clt__error_as(clt_linalg_solve_triangular(x, y, 0, 1, 0, &a), fn));
        CLT__TRY(trace_xxt(fn, a, &t22));
        CLT__TRY(clt__add_rec(fn, t21, t22, &t2));
    }
    CLT__TRY(clt__add_rec(fn, t1, t2, &a));
    CLT__TRY(clt__add_rec(fn, a, t3, &a));
    CLT__TRY(clt__sub_scalar_rec(fn, a, n, &a));
    return clt__mul_scalar_rec(fn, a, 0.5, out);
done:
    return st;
}

/* ---- the matrices ------------------------------------------------------------ */

typedef enum which { COVARIANCE, PRECISION, SCALE_TRIL } which;

static clt_status matrix(const char *fn, const clt_distribution *d, which w, clt_tensor **out)
{
    clt_tensor *a, *b, *c;
    clt_status st;
    int64_t n = d->event_shape[0], shape[CLT_MAX_DIMS];
    memcpy(shape, d->batch_shape, (size_t)d->batch_ndim * sizeof *shape);
    shape[d->batch_ndim] = shape[d->batch_ndim + 1] = n;
    if (d->kind == CLT__DIST_MVN) {
        const clt_tensor *l = d->p[1];
        switch (w) {
        case COVARIANCE:
            CLT__TRY(clt__transpose_rec(fn, l, -2, -1, &a));
            CLT__TRY(clt__matmul_rec(fn, l, a, &a));
            break;
        case PRECISION: /* the given precision matrix (torch keeps it), or L^-T L^-1 */
            if (d->p[2]) {
                CLT__TRY(clt__expand_rec(fn, d->p[2], d->p[2]->ndim, d->p[2]->shape, &a));
                break;
            }
            CLT__TRY(clt__error_as(clt_eye(l->dev, l->dtype, n, n, &b), fn));
            CLT__TRY(clt__error_as(clt_linalg_solve_triangular(l, b, 0, 1, 0, &b), fn));
            CLT__TRY(clt__transpose_rec(fn, b, -2, -1, &a));
            CLT__TRY(clt__matmul_rec(fn, a, b, &a));
            break;
        default: CLT__TRY(clt__expand_rec(fn, l, l->ndim, l->shape, &a)); break;
        }
        return clt__expand_rec(fn, a, d->batch_ndim + 2, shape, out);
    }
    const clt_tensor *wf = d->p[1], *dg = d->p[2];
    switch (w) {
    case COVARIANCE: /* W W^T + diag(D) */
        CLT__TRY(clt__transpose_rec(fn, wf, -2, -1, &a));
        CLT__TRY(clt__matmul_rec(fn, wf, a, &a));
        CLT__TRY(clt__error_as(clt_diag_embed(dg, 0, -2, -1, &b), fn));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        break;
    case PRECISION: /* diag(1 / D) - A^T A */
        CLT__TRY(capacitance_tril(fn, d, &c));
        CLT__TRY(woodbury_a(fn, d, c, &b));
        CLT__TRY(clt__transpose_rec(fn, b, -2, -1, &a));
        CLT__TRY(clt__matmul_rec(fn, a, b, &a));
        CLT__TRY(clt__reciprocal_rec(fn, dg, &b));
        CLT__TRY(clt__error_as(clt_diag_embed(b, 0, -2, -1, &b), fn));
        CLT__TRY(clt__sub_rec(fn, b, a, &a));
        break;
    default: { /* sqrt(D) cholesky(I + D^-1/2 W W^T D^-1/2), torch's stable form */
        clt_tensor *s;
        CLT__TRY(clt__sqrt_rec(fn, dg, &s));
        CLT__TRY(clt__unsqueeze_rec(fn, s, s->ndim, &s));
        CLT__TRY(clt__div_rec(fn, wf, s, &b));
        CLT__TRY(clt__transpose_rec(fn, b, -2, -1, &a));
        CLT__TRY(clt__matmul_rec(fn, b, a, &a));
        CLT__TRY(plus_eye(fn, a, &a));
        CLT__TRY(cholesky(fn, a, &a));
        CLT__TRY(clt__mul_rec(fn, s, a, &a));
        break;
    }
    }
    return clt__expand_rec(fn, a, d->batch_ndim + 2, shape, out);
done:
    return st;
}

static clt_status matrix_entry(const char *fn, const clt_distribution *d, which w,
                               clt_tensor **out)
{
    static const char *const what[] = {"covariance_matrix", "precision_matrix", "scale_tril"};
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(d, fn);
    if (d->kind != CLT__DIST_MVN && d->kind != CLT__DIST_LOWRANK_MVN)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has no %s", fn,
                          clt_distribution_name(d), what[w]);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    st = matrix(fn, d, w, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_distribution_covariance_matrix(const clt_distribution *d, clt_tensor **out)
{
    return matrix_entry("clt_distribution_covariance_matrix", d, COVARIANCE, out);
}

clt_status clt_distribution_precision_matrix(const clt_distribution *d, clt_tensor **out)
{
    return matrix_entry("clt_distribution_precision_matrix", d, PRECISION, out);
}

clt_status clt_distribution_scale_tril(const clt_distribution *d, clt_tensor **out)
{
    return matrix_entry("clt_distribution_scale_tril", d, SCALE_TRIL, out);
}
