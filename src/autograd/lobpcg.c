/* lobpcg.c: torch.lobpcg (torch 1.13's _lobpcg.py, methods "ortho" and
 * "basic") composed of the library's ops, and its backward (torch's
 * _symeig_backward for a part of the eigenspace) as recorded ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

/* Never-converging runs with niter < 1 stop here with an error rather
 * than loop for ever, as torch's would. */
#define LOBPCG_UNLIMITED 10000

/* torch.Generator()'s default seed, for U_ortho's draws in the backward. */
#define LOBPCG_BW_SEED 67280421310721ULL

/* A or B of the iteration: a dense matrix d, a sparse one s (with st, its
 * transpose: the product is then (s x + st x) / 2, torch's symmetrised A
 * of a sparse A that requires grad), or neither (the identity). */
typedef struct lob_mat {
    const clt_tensor *d;
    const clt_sparse *s, *st;
} lob_mat;

typedef struct lob {
    const char *fn;
    clt_device *dev;
    lob_mat A, B; /* [m, m]; B may be the identity */
    const clt_tensor *iK; /* [m, m] or NULL */
    int64_t m, n, k, niter;
    double tol;
    bool largest, ortho;
    int64_t i_max, j_max;
    double otol, otol_drop, otol_replace;
    bool use_drop;
    double A_norm, B_norm;
    clt_tensor *X, *E, *S; /* iteration state, E [n], X [m, n], S [m, ns] */
    int64_t nc, ns, istep;
} lob;

/* ---- small helpers (grad mode is off in the forward) ------------------------- */

static clt_status mT(const clt_tensor *t, clt_tensor **out)
{
    return clt_transpose(t, -2, -1, out);
}

static clt_status cols(const clt_tensor *t, int64_t start, int64_t len, clt_tensor **out)
{
    return clt_narrow(t, t->ndim - 1, start, len, out);
}

/* M S (S itself, a new handle, when M is the identity). */
static clt_status mm_opt(const lob_mat *m, const clt_tensor *s, clt_tensor **out)
{
    if (m->d)
        return clt_matmul(m->d, s, out);
    if (!m->s)
        return clt_detach(s, out);
    if (!m->st)
        return clt_sparse_mm(m->s, s, out);
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt_sparse_mm(m->s, s, &a));
    CLT__TRY(clt_sparse_mm(m->st, s, &b));
    CLT__TRY(clt_add(a, b, &c));
    CLT__TRY(clt_mul_scalar(c, 0.5, out));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    return st;
}

/* A dense matrix (NULL: the identity) as a lob_mat. */
#define DENSE(t) (&(lob_mat){(t), NULL, NULL})

/* S^T M S. */
static clt_status qform(const lob_mat *m, const clt_tensor *s, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *ms = NULL, *t = NULL;
    CLT__TRY(mm_opt(m, s, &ms));
    CLT__TRY(mT(s, &t));
    CLT__TRY(clt_matmul(t, ms, out));
done:
    clt_tensor_free(ms);
    clt_tensor_free(t);
    return st;
}

/* The Frobenius norm of t, read back. */
static clt_status norm_all(const clt_tensor *t, double *v)
{
    clt_tensor *r = NULL;
    clt_status st = clt_linalg_vector_norm(t, 2.0, NULL, 0, 0, &r);
    if (st == CLT_OK)
        st = clt_tensor_item(r, v);
    clt_tensor_free(r);
    return st;
}

/* torch's _utils.symeig: eigh of the upper triangle, descending when
 * largest. */
static clt_status symeig(const lob *w, const clt_tensor *a, bool largest, clt_tensor **e,
                         clt_tensor **z)
{
    clt_tensor *e0 = NULL, *z0 = NULL;
    clt_status st = clt__linalg_eigh(a, true, true, &e0, &z0, w->fn);
    if (st != CLT_OK || !largest) {
        *e = e0;
        *z = z0;
        return st;
    }
    int d = -1;
    st = clt_flip(e0, &d, 1, e);
    if (st == CLT_OK)
        st = clt_flip(z0, &d, 1, z);
    clt_tensor_free(e0);
    clt_tensor_free(z0);
    return st;
}

/* cat of the pieces with columns along the last dim (empty ones left out). */
static clt_status cat_cols(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    const clt_tensor *keep[4];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ts[i] && ts[i]->shape[ts[i]->ndim - 1] > 0)
            keep[k++] = ts[i];
    if (k == 0)
        return clt_detach(ts[0], out);
    return clt_cat(keep, k, -1, out);
}

/* ---- torch's LOBPCG worker ----------------------------------------------------- */

/* _get_rayleigh_ritz_transform: Ri = D R^{-1}, R^T R = cholesky of S^T B S
 * scaled by d = diag(S^T B S)^{-1/2} on both sides. */
static clt_status rr_transform(const lob *w, const clt_tensor *s, clt_tensor **ri)
{
    clt_status st = CLT_OK;
    clt_tensor *sbs = NULL, *d = NULL, *drow = NULL, *dcol = NULL, *t = NULL, *u = NULL,
               *r = NULL, *dd = NULL;
    CLT__TRY(qform(&w->B, s, &sbs));
    CLT__TRY(clt_diagonal(sbs, 0, -2, -1, &d));
    CLT__TRY(clt_rsqrt(d, &drow));
    CLT__TRY(clt_unsqueeze(drow, -1, &dcol));
    CLT__TRY(clt_mul(sbs, drow, &t));
    CLT__TRY(clt_mul(t, dcol, &u));
    CLT__TRY(clt__linalg_cholesky(u, true, &r, w->fn));
    CLT__TRY(clt_diag_embed(drow, 0, -2, -1, &dd));
    CLT__TRY(clt__linalg_solve_triangular(r, dd, true, false, false, ri, w->fn));
done:
    clt_tensor_free(sbs);
    clt_tensor_free(d);
    clt_tensor_free(drow);
    clt_tensor_free(dcol);
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(r);
    clt_tensor_free(dd);
    return st;
}

/* An int64 index tensor of the positions where keep[] holds. */
static clt_status index_of(const lob *w, const bool *keep, int64_t n, clt_tensor **out)
{
    int64_t *ix = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix);
    if (!ix)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", w->fn);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (keep[i])
            ix[k++] = i;
    clt_status st = clt_tensor_from_host(w->dev, CLT_INT64, 1, &k, ix, out);
    free(ix);
    return st;
}

/* _get_svqb: U made B-orthonormal (columns dropped where drop). */
static clt_status svqb(const lob *w, const clt_tensor *u0, bool drop, double tau,
                       clt_tensor **out)
{
    int64_t c = u0->shape[1];
    if (c == 0)
        return clt_detach(u0, out);
    clt_status st = CLT_OK;
    double *hd = NULL, *he = NULL;
    bool *keep = NULL;
    clt_tensor *u = NULL, *ubu = NULL, *d = NULL, *ix = NULL, *dr = NULL, *dc = NULL, *t = NULL,
               *x = NULL, *e = NULL, *z = NULL, *ut = NULL, *zs = NULL, *ei = NULL;
    keep = malloc((size_t)c * sizeof *keep);
    if (!keep)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", w->fn);
    CLT__TRY(qform(&w->B, u0, &ubu));
    CLT__TRY(clt_diagonal(ubu, 0, -2, -1, &d));
    CLT__TRY(clt__read_doubles(w->fn, d, &hd));
    int64_t nz = 0;
    for (int64_t i = 0; i < c; i++)
        nz += (keep[i] = hd[i] != 0.0);
    if (nz < c) {
        /* exact zero columns go first, as torch drops them */
        CLT__TRY(index_of(w, keep, c, &ix));
        CLT__TRY(clt_index_select(u0, 1, ix, &u));
        clt_tensor_free(ix);
        ix = NULL;
        if (nz == 0) {
            *out = u;
            u = NULL;
            goto done;
        }
        clt_tensor_free(ubu);
        clt_tensor_free(d);
        ubu = d = NULL;
        CLT__TRY(qform(&w->B, u, &ubu));
        CLT__TRY(clt_diagonal(ubu, 0, -2, -1, &d));
    } else {
        CLT__TRY(clt_detach(u0, &u));
    }
    CLT__TRY(clt_rsqrt(d, &dr));
    CLT__TRY(clt_unsqueeze(dr, -1, &dc));
    CLT__TRY(clt_mul(ubu, dc, &t));
    CLT__TRY(clt_mul(t, dr, &x));
    CLT__TRY(symeig(w, x, false, &e, &z));
    CLT__TRY(clt__read_doubles(w->fn, e, &he));
    double emax = 0.0;
    for (int64_t i = 0; i < nz; i++)
        if (fabs(he[i]) > emax || isnan(he[i]))
            emax = isnan(emax) ? emax : fabs(he[i]);
    double thr = tau * emax;
    clt_tensor_free(t);
    t = NULL;
    if (drop) {
        for (int64_t i = 0; i < nz; i++)
            keep[i] = he[i] > thr;
        CLT__TRY(index_of(w, keep, nz, &ix));
        CLT__TRY(clt_index_select(e, 0, ix, &t));
        clt_tensor_free(e);
        e = t;
        t = NULL;
        CLT__TRY(clt_index_select(z, 1, ix, &t));
        clt_tensor_free(z);
        z = t;
        t = NULL;
        CLT__TRY(clt_index_select(dr, 0, ix, &t));
        clt_tensor_free(dr);
        dr = t;
        t = NULL;
    } else {
        /* E[E < t] = t */
        CLT__TRY(clt_clamp(e, &thr, NULL, &t));
        clt_tensor_free(e);
        e = t;
        t = NULL;
    }
    CLT__TRY(clt_mul(u, dr, &ut));
    CLT__TRY(clt_rsqrt(e, &ei));
    CLT__TRY(clt_mul(z, ei, &zs));
    CLT__TRY(clt_matmul(ut, zs, out));
done:
    free(hd);
    free(he);
    free(keep);
    clt_tensor_free(u);
    clt_tensor_free(ubu);
    clt_tensor_free(d);
    clt_tensor_free(ix);
    clt_tensor_free(dr);
    clt_tensor_free(dc);
    clt_tensor_free(t);
    clt_tensor_free(x);
    clt_tensor_free(e);
    clt_tensor_free(z);
    clt_tensor_free(ut);
    clt_tensor_free(zs);
    clt_tensor_free(ei);
    return st;
}

/* _get_ortho: U made B-orthonormal and B-orthogonal to V (Algorithm 3 of
 * Duersch's thesis, or 6 with use_drop).  Runs in a scope. */
static clt_status get_ortho(const lob *w, const clt_tensor *u0, const clt_tensor *v,
                            clt_tensor **out)
{
    if (u0->shape[1] == 0)
        return clt_detach(u0, out);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *u = (clt_tensor *)u0, *bv, *bu, *vt, *vbu, *t, *ut, *ubu, *eye, *r;
    double bv_norm, u_norm, bu_norm, r_norm, vbu_norm;
    CLT__TRY(mm_opt(&w->B, v, &bv));
    CLT__TRY(norm_all(bv, &bv_norm));
    CLT__TRY(mm_opt(&w->B, u, &bu));
    CLT__TRY(mT(v, &vt));
    CLT__TRY(clt_matmul(vt, bu, &vbu));
    for (int64_t i = 0; i < w->i_max; i++) {
        CLT__TRY(clt_matmul(v, vbu, &t));
        CLT__TRY(clt_sub(u, t, &u));
        bool drop = false;
        double tau_svqb = w->otol_drop;
        for (int64_t j = 0; j < w->j_max; j++) {
            if (w->use_drop) {
                CLT__TRY(svqb(w, u, drop, tau_svqb, &u));
                drop = true;
                tau_svqb = w->otol_replace;
            } else {
                CLT__TRY(svqb(w, u, false, w->otol_replace, &u));
            }
            if (u->shape[1] == 0) /* every column of U B-collinear to V */
                goto done;
            CLT__TRY(mm_opt(&w->B, u, &bu));
            CLT__TRY(mT(u, &ut));
            CLT__TRY(clt_matmul(ut, bu, &ubu));
            CLT__TRY(norm_all(u, &u_norm));
            CLT__TRY(norm_all(bu, &bu_norm));
            CLT__TRY(clt_eye(u->dev, u->dtype, ubu->shape[0], ubu->shape[0], &eye));
            CLT__TRY(clt_sub(ubu, eye, &r));
            CLT__TRY(norm_all(r, &r_norm));
            if (r_norm / (bu_norm * u_norm) < w->otol)
                break;
        }
        CLT__TRY(clt_matmul(vt, bu, &vbu));
        CLT__TRY(norm_all(vbu, &vbu_norm));
        CLT__TRY(norm_all(u, &u_norm));
        if (vbu_norm / (bv_norm * u_norm) < w->otol)
            break;
        if (w->m < u->shape[1] + v->shape[1]) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Overdetermined shape of U: #B-cols(=%lld) >= #U-cols(=%lld) + "
                            "#V-cols(=%lld) must hold",
                            w->fn, (long long)w->m, (long long)u->shape[1],
                            (long long)v->shape[1]);
            goto done;
        }
    }
done:
    if (st == CLT_OK && u == u0)
        st = clt_detach(u0, &u);
    if (st == CLT_OK)
        *out = u;
    return clt__scope_finish(st, out);
}

/* R = A X - (B X) diag(E). */
static clt_status residual(const lob *w, clt_tensor **r)
{
    clt_status st = CLT_OK;
    clt_tensor *ax = NULL, *bx = NULL, *bxe = NULL;
    CLT__TRY(mm_opt(&w->A, w->X, &ax));
    CLT__TRY(mm_opt(&w->B, w->X, &bx));
    CLT__TRY(clt_mul(bx, w->E, &bxe));
    CLT__TRY(clt_sub(ax, bxe, r));
done:
    clt_tensor_free(ax);
    clt_tensor_free(bx);
    clt_tensor_free(bxe);
    return st;
}

/* update_converged_count: the leading pairs whose backward error
 * |R_j| / (|X_j| (A_norm + E_j B_norm)) is below tol. */
static clt_status converged(lob *w, const clt_tensor *r)
{
    clt_status st = CLT_OK;
    clt_tensor *rn = NULL, *xn = NULL;
    double *hr = NULL, *hx = NULL, *he = NULL;
    int d0 = 0;
    CLT__TRY(clt_linalg_vector_norm(r, 2.0, &d0, 1, 0, &rn));
    CLT__TRY(clt_linalg_vector_norm(w->X, 2.0, &d0, 1, 0, &xn));
    CLT__TRY(clt__read_doubles(w->fn, rn, &hr));
    CLT__TRY(clt__read_doubles(w->fn, xn, &hx));
    CLT__TRY(clt__read_doubles(w->fn, w->E, &he));
    int64_t count = 0;
    bool nan = false;
    for (int64_t j = 0; j < w->n; j++) {
        double rerr = hr[j] / (hx[j] * (w->A_norm + he[j] * w->B_norm));
        nan |= isnan(rerr);
        if (count == j && rerr < w->tol)
            count++;
    }
    if (nan) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the residual is not finite (inf or NaN in A, B, X or iK?)", w->fn);
        goto done;
    }
    if (count < w->nc) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the number of converged eigenpairs (was %lld, got %lld) cannot "
                        "decrease",
                        w->fn, (long long)w->nc, (long long)count);
        goto done;
    }
    w->nc = count;
done:
    clt_tensor_free(rn);
    clt_tensor_free(xn);
    free(hr);
    free(hx);
    free(he);
    return st;
}

/* Replaces *slot by t (kept out of the iteration's scope). */
static clt_status put(clt_tensor **slot, clt_tensor *t)
{
    clt_status st = clt_scope_keep(t);
    if (st != CLT_OK)
        return st;
    clt_tensor_free(*slot);
    *slot = t;
    return CLT_OK;
}

/* _update_ortho and _update_basic: one step, in a scope of its own. */
static clt_status update(lob *w)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int64_t n = w->n, nc = w->nc, ns = w->ns;
    clt_tensor *ri = NULL, *m1, *m2, *e, *z, *x, *r, *p = NULL, *wm, *s, *t, *xp, *rc;
    if (w->istep == 0) {
        double xn, an, bn = 1.0;
        CLT__TRY(norm_all(w->X, &xn));
        CLT__TRY(mm_opt(&w->A, w->X, &t));
        CLT__TRY(norm_all(t, &an));
        if (w->B.d || w->B.s) {
            CLT__TRY(mm_opt(&w->B, w->X, &t));
            CLT__TRY(norm_all(t, &bn));
            bn /= xn;
        }
        w->A_norm = an / xn;
        w->B_norm = bn;
        w->nc = nc = 0;
        CLT__TRY(rr_transform(w, w->X, &ri));
        CLT__TRY(qform(&w->A, w->X, &m1));
        CLT__TRY(qform(DENSE(m1), ri, &m2));
        CLT__TRY(symeig(w, m2, w->largest, &e, &z));
        CLT__TRY(clt_matmul(ri, z, &t));
        CLT__TRY(clt_matmul(w->X, t, &x));
        CLT__TRY(put(&w->X, x));
        /* torch's "ortho" leaves E at zeros in its first step */
        if (!w->ortho)
            CLT__TRY(put(&w->E, e));
        CLT__TRY(residual(w, &r));
        CLT__TRY(converged(w, r));
        if (w->ortho)
            CLT__TRY(get_ortho(w, r, w->X, &wm));
        else
            CLT__TRY(mm_opt(DENSE(w->iK), r, &wm));
        w->ns = n + wm->shape[1];
        const clt_tensor *parts[2] = {w->X, wm};
        CLT__TRY(cat_cols(parts, 2, &s));
        CLT__TRY(put(&w->S, s));
        goto done;
    }
    clt_tensor *s_, *zx, *ex, *xkeep, *ekeep;
    int64_t zc;
    CLT__TRY(cols(w->S, nc, ns - nc, &s_));
    if (w->ortho) {
        CLT__TRY(qform(&w->A, s_, &m1));
        CLT__TRY(symeig(w, m1, w->largest, &e, &z));
        CLT__TRY(cols(z, 0, n - nc, &zx));
        CLT__TRY(clt_matmul(s_, zx, &x));
        zc = z->shape[1];
        if (zc > n - nc) {
            clt_tensor *zr, *zrt, *zq, *zrr, *zp;
            CLT__TRY(cols(z, n - nc, zc - (n - nc), &zr));
            CLT__TRY(clt_narrow(zr, 0, 0, n - nc, &zrt));
            CLT__TRY(mT(zrt, &t));
            CLT__TRY(clt__linalg_qr(t, CLT__QR_REDUCED, &zq, &zrr, w->fn));
            CLT__TRY(clt_matmul(zr, zq, &zp));
            CLT__TRY(clt_matmul(s_, zp, &p));
        }
    } else {
        CLT__TRY(rr_transform(w, s_, &ri));
        CLT__TRY(qform(&w->A, s_, &m1));
        CLT__TRY(qform(DENSE(m1), ri, &m2));
        CLT__TRY(symeig(w, m2, w->largest, &e, &z));
        CLT__TRY(clt_matmul(s_, ri, &t));
        CLT__TRY(cols(z, 0, n - nc, &zx));
        CLT__TRY(clt_matmul(t, zx, &x));
        zc = z->shape[1];
        int64_t hi = 2 * n - nc < zc ? 2 * n - nc : zc;
        if (hi > n) {
            clt_tensor *zp;
            CLT__TRY(cols(z, n, hi - n, &zp));
            CLT__TRY(clt_matmul(t, zp, &p));
        }
    }
    /* X[:, nc:] and E[nc:] take the new pairs; the converged stay */
    CLT__TRY(clt_narrow(e, 0, 0, n - nc, &ex));
    CLT__TRY(cols(w->X, 0, nc, &xkeep));
    CLT__TRY(clt_narrow(w->E, 0, 0, nc, &ekeep));
    {
        const clt_tensor *xs[2] = {xkeep, x}, *es[2] = {ekeep, ex};
        clt_tensor *nx, *ne;
        CLT__TRY(cat_cols(xs, 2, &nx));
        CLT__TRY(cat_cols(es, 2, &ne));
        CLT__TRY(put(&w->X, nx));
        CLT__TRY(put(&w->E, ne));
    }
    CLT__TRY(residual(w, &r));
    CLT__TRY(converged(w, r));
    nc = w->nc;
    {
        const clt_tensor *xs[2] = {w->X, p};
        CLT__TRY(cat_cols(xs, 2, &xp));
    }
    CLT__TRY(cols(r, nc, n - nc, &rc));
    if (w->ortho)
        CLT__TRY(get_ortho(w, rc, xp, &wm));
    else
        CLT__TRY(mm_opt(DENSE(w->iK), rc, &wm));
    w->ns = n + (p ? p->shape[1] : 0) + wm->shape[1];
    {
        const clt_tensor *parts[2] = {xp, wm};
        CLT__TRY(cat_cols(parts, 2, &s));
        CLT__TRY(put(&w->S, s));
    }
done:
    clt_scope_end();
    return st;
}

/* LOBPCG.run on one matrix: *e [k] and *x [m, k] (new tensors). */
static clt_status run(lob *w, const clt_tensor *x0, clt_tensor **e, clt_tensor **x)
{
    clt_status st = CLT_OK;
    w->X = w->E = w->S = NULL;
    w->nc = w->ns = w->istep = 0;
    CLT__TRY(clt_detach(x0, &w->X));
    CLT__TRY(clt_zeros(x0->dev, x0->dtype, 1, &w->n, &w->E));
    int64_t left = w->niter > 0 ? w->niter : -1;
    int64_t cap = LOBPCG_UNLIMITED;
    for (;;) {
        CLT__TRY(update(w));
        w->istep++;
        left--;
        if (left == 0 || w->nc >= w->k)
            break;
        if (left < 0 && w->istep >= cap) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: no convergence to tol=%g within %d iterations (niter=%lld)",
                            w->fn, w->tol, LOBPCG_UNLIMITED, (long long)w->niter);
            goto done;
        }
    }
    CLT__TRY(clt_narrow(w->E, 0, 0, w->k, e));
    CLT__TRY(cols(w->X, 0, w->k, x));
done:
    clt_tensor_free(w->X);
    clt_tensor_free(w->E);
    clt_tensor_free(w->S);
    w->X = w->E = w->S = NULL;
    return st;
}

/* ---- the backward: torch's _symeig_backward_partial_eigenspace ---------------- */

static const char bw_fn[] = "clt_backward";

/* The coefficients a_0 .. a_k (a_k = 1) of prod_j (x - d_j), [..., k + 1]. */
static clt_status char_poly(const clt_tensor *d, clt_tensor **out)
{
    clt_status st = CLT_OK;
    int nd = d->ndim;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, d->shape, (size_t)nd * sizeof *shape);
    shape[nd - 1] = 1;
    clt_tensor *c, *zero, *r, *lo, *hi, *t;
    CLT__TRY(clt_ones(d->dev, d->dtype, nd, shape, &c));
    CLT__TRY(clt_zeros(d->dev, d->dtype, nd, shape, &zero));
    for (int64_t j = 0; j < d->shape[nd - 1]; j++) {
        /* times (x - d_j): new[i] = c[i - 1] - d_j c[i] */
        const clt_tensor *a[2] = {zero, c}, *b[2] = {c, zero};
        CLT__TRY(clt_narrow(d, -1, j, 1, &r));
        CLT__TRY(clt_cat(a, 2, -1, &lo));
        CLT__TRY(clt_cat(b, 2, -1, &hi));
        CLT__TRY(clt_mul(r, hi, &t));
        CLT__TRY(clt_sub(lo, t, &c));
    }
    *out = c;
done:
    return st;
}

/* saved: A (symmetrised), D, U; i[0] largest, i[1] whether B was given. */
static clt_status bw_lobpcg(clt__node *nd, const clt_tensor *g, clt_tensor **gin)
{
    (void)g; /* read with the other output's below */
    if (nd->i[1])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: lobpcg.backward does not support backward with B != I yet.",
                          bw_fn);
    const clt_tensor *A = nd->saved[0], *D = nd->saved[1], *U = nd->saved[2];
    const clt_tensor *gD = clt__node_grad(nd, 0), *gU = clt__node_grad(nd, 1);
    bool largest = nd->i[0] != 0;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_generator *gen = NULL;
    int na = A->ndim;
    int64_t m = A->shape[na - 1], k = D->shape[D->ndim - 1];
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *ut, *eye, *t, *proj, *rnd, *uo, *uot, *c, *acc = NULL, *ugp, *pd, *ci, *chr, *mo,
               *l, *f, *eyek, *row, *col, *res, *sol;
    if (!gD) {
        CLT__TRY(clt_zeros(D->dev, D->dtype, D->ndim, D->shape, &t));
        gD = t;
    }
    if (!gU) {
        CLT__TRY(clt_zeros(U->dev, U->dtype, U->ndim, U->shape, &t));
        gU = t;
    }
    CLT__TRY(mT(U, &ut));
    CLT__TRY(clt_eye(A->dev, A->dtype, m, m, &eye));
    /* U_ortho: (I - U U^T) R for R [..., m, m - k] standard normal spans the
     * orthogonal complement of U; the result does not depend on R */
    CLT__TRY(clt_matmul(U, ut, &t));
    CLT__TRY(clt_sub(eye, t, &proj));
    memcpy(shape, A->shape, (size_t)na * sizeof *shape);
    shape[na - 1] = m - k;
    CLT__TRY(clt_generator_new(LOBPCG_BW_SEED, &gen));
    CLT__TRY(clt_randn(gen, A->dev, A->dtype, na, shape, &rnd));
    CLT__TRY(clt_matmul(proj, rnd, &uo));
    CLT__TRY(mT(uo, &uot));
    CLT__TRY(char_poly(D, &c));
    /* series_acc = sum_kk A^(kk-1) gU * p_kk(D), p_kk the coefficients from kk */
    ugp = (clt_tensor *)gU;
    for (int64_t kk = 1; kk <= k; kk++) {
        CLT__TRY(clt_ones(D->dev, D->dtype, D->ndim, D->shape, &pd));
        for (int64_t idx = k - kk - 1; idx >= 0; idx--) {
            CLT__TRY(clt_mul(D, pd, &t));
            CLT__TRY(clt_narrow(c, -1, kk + idx, 1, &ci));
            CLT__TRY(clt_add(t, ci, &pd));
        }
        CLT__TRY(clt_unsqueeze(pd, -2, &t));
        CLT__TRY(clt_mul(ugp, t, &t));
        if (acc)
            CLT__TRY(clt_add(acc, t, &acc));
        else
            acc = t;
        CLT__TRY(clt_matmul(A, ugp, &ugp));
    }
    /* the characteristic polynomial of D at A, by Horner's rule */
    chr = eye;
    for (int64_t idx = k - 1; idx >= 0; idx--) {
        CLT__TRY(clt_matmul(A, chr, &t));
        CLT__TRY(clt_narrow(c, -1, idx, 1, &ci));
        CLT__TRY(clt_unsqueeze(ci, -1, &ci));
        CLT__TRY(clt_mul(ci, eye, &ci));
        CLT__TRY(clt_add(t, ci, &chr));
    }
    CLT__TRY(clt_matmul(chr, uo, &t));
    CLT__TRY(clt_matmul(uot, t, &mo));
    /* definite: positive, negative for the largest k with k odd */
    double sign = (largest && k % 2 == 1) ? -1.0 : 1.0;
    CLT__TRY(clt_mul_scalar(mo, sign, &t));
    CLT__TRY(clt_linalg_cholesky(t, 0, &l));
    /* the part in span(U): U (diag(gD) + (U^T gU) * F) U^T, F_ij =
     * 1 / (d_j - d_i), F_ii = 0 */
    CLT__TRY(clt_eye(D->dev, D->dtype, k, k, &eyek));
    CLT__TRY(clt_unsqueeze(D, -2, &row));
    CLT__TRY(clt_unsqueeze(D, -1, &col));
    CLT__TRY(clt_sub(row, col, &t));
    CLT__TRY(clt_add(t, eyek, &t));
    CLT__TRY(clt_reciprocal(t, &f));
    CLT__TRY(clt_mul(f, eyek, &t));
    CLT__TRY(clt_sub(f, t, &f));
    CLT__TRY(clt_matmul(ut, gU, &t));
    CLT__TRY(clt_mul(t, f, &f));
    CLT__TRY(clt_diag_embed(gD, 0, -2, -1, &t));
    CLT__TRY(clt_add(t, f, &f));
    CLT__TRY(clt_matmul(f, ut, &t));
    CLT__TRY(clt_matmul(U, t, &res));
    /* the Sylvester equation's solution, in span(U_ortho) */
    CLT__TRY(clt_matmul(uot, acc, &t));
    CLT__TRY(clt_cholesky_solve(t, l, 0, &sol));
    CLT__TRY(clt_mul_scalar(sol, sign, &sol));
    CLT__TRY(clt_matmul(uo, sol, &t));
    CLT__TRY(clt_matmul(t, ut, &t));
    CLT__TRY(clt_sub(res, t, &gin[0]));
done:
    clt_generator_free(gen);
    return clt__scope_finish(st, &gin[0]);
}

/* ---- clt_lobpcg ------------------------------------------------------------------ */

static clt_status check_operand(const clt_tensor *a, const clt_tensor *t, const char *what,
                                const char *fn)
{
    if (!t)
        return CLT_OK;
    clt_status st = clt__same_device(a, t, fn);
    if (st != CLT_OK)
        return st;
    if (t->dtype != a->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s is %s but A is %s", fn, what,
                          clt_dtype_name(t->dtype), clt_dtype_name(a->dtype));
    return CLT_OK;
}

/* a: A, or the values of a sparse A, for its device and dtype; nd and
 * shape: A's (B's bnd and bshape). */
static clt_status check_args(const char *fn, const clt_tensor *a, int nd, const int64_t *shape,
                             const clt_tensor *b, int bnd, const int64_t *bshape,
                             const clt_tensor *x, const clt_tensor *ik)
{
    clt_status st = CLT_OK;
    if ((st = check_operand(a, b, "B", fn)) != CLT_OK ||
        (st = check_operand(a, x, "X", fn)) != CLT_OK ||
        (st = check_operand(a, ik, "iK", fn)) != CLT_OK)
        return st;
    if (a->dtype != CLT_FLOAT32 && a->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: expected a float32 or float64 tensor A, got %s", fn,
                          clt_dtype_name(a->dtype));
    if (nd < 2 || shape[nd - 1] != shape[nd - 2])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: A must be a (batch of) square matrices [..., m, m], got %d dims "
                          "ending in %lld",
                          fn, nd, (long long)(nd ? shape[nd - 1] : 0));
    int64_t m = shape[nd - 1];
    if (b) {
        bool same = bnd == nd;
        for (int i = 0; same && i < nd; i++)
            same = bshape[i] == shape[i];
        if (!same)
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: A and B must have the same shapes",
                              fn);
    }
    if (x) {
        bool same = x->ndim == nd && x->shape[nd - 2] == m;
        for (int i = 0; same && i < nd - 2; i++)
            same = x->shape[i] == shape[i];
        if (!same)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: X must be [..., m, n] with A's batch dims and m = %lld", fn,
                              (long long)m);
    }
    if (ik && (ik->ndim != 2 || ik->shape[0] != m || ik->shape[1] != m))
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: iK must be [m, m] with m = %lld", fn,
                          (long long)m);
    return CLT_OK;
}

static clt_status set_params(lob *w, int64_t m, clt_dtype dt, const clt_tensor *x, int64_t k,
                             int64_t n, int64_t niter, const double *tol, int largest,
                             const char *method, const clt_lobpcg_ortho *ortho)
{
    const char *fn = w->fn;
    w->m = m;
    w->k = k > 0 ? k : x ? x->shape[x->ndim - 1] : 1;
    w->n = x ? x->shape[x->ndim - 1] : n > 0 ? n : w->k;
    if (w->m < 3 * w->n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: LPBPCG algorithm is not applicable when the number of A rows "
                          "(=%lld) is smaller than 3 x the number of requested eigenpairs "
                          "(=%lld)",
                          fn, (long long)w->m, (long long)w->n);
    if (w->n < 1 || w->k > w->n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: k(=%lld) must be at least 1 and at most n(=%lld), the columns of "
                          "X",
                          fn, (long long)w->k, (long long)w->n);
    if (method == NULL || strcmp(method, "ortho") == 0)
        w->ortho = true;
    else if (strcmp(method, "basic") == 0)
        w->ortho = false;
    else
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: method must be \"ortho\" or \"basic\", got \"%s\"", fn, method);
    double feps = dt == CLT_FLOAT32 ? 1.2e-07 : 2.23e-16;
    w->tol = tol ? *tol : sqrt(feps);
    if (!(w->tol > 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: tol(=%g) must be positive", fn,
                          w->tol);
    w->niter = niter;
    w->largest = largest != 0;
    w->i_max = ortho && ortho->i_max > 0 ? ortho->i_max : 3;
    w->j_max = ortho && ortho->j_max > 0 ? ortho->j_max : 3;
    w->otol = ortho && ortho->tol > 0 ? ortho->tol : w->tol;
    w->otol_drop = ortho && ortho->tol_drop > 0 ? ortho->tol_drop : w->tol;
    w->otol_replace = ortho && ortho->tol_replace > 0 ? ortho->tol_replace : w->tol;
    w->use_drop = ortho && ortho->use_drop;
    return CLT_OK;
}

/* (t + t^T) / 2, recorded. */
static clt_status symmetrised(const clt_tensor *t, clt_tensor **out)
{
    clt_tensor *tt = NULL, *s = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(mT(t, &tt));
    CLT__TRY(clt_add(t, tt, &s));
    CLT__TRY(clt_mul_scalar(s, 0.5, out));
done:
    clt_tensor_free(tt);
    clt_tensor_free(s);
    return st;
}

/* Matrix i of t viewed as [N, r, c], as [r, c]. */
static clt_status matrix(const clt_tensor *t, int64_t i, clt_tensor **out)
{
    clt_tensor *s = NULL;
    int nd = t->ndim;
    int64_t rows = t->shape[nd - 2], c = t->shape[nd - 1], big = t->numel / (rows * c);
    clt_status st = CLT_OK;
    CLT__TRY(clt_reshape(t, 3, (int64_t[]){big, rows, c}, &s));
    clt_tensor *v = NULL;
    CLT__TRY(clt_narrow(s, 0, i, 1, &v));
    st = clt_reshape(v, 2, (int64_t[]){rows, c}, out);
    clt_tensor_free(v);
done:
    clt_tensor_free(s);
    return st;
}

/* The iteration on each matrix of the batch, grad mode off; *e [..., k],
 * *x [..., m, k]. */
static clt_status batch(lob *w, const clt_tensor *a, const clt_tensor *b, const clt_tensor *x0,
                        clt_generator *gen, clt_tensor **e, clt_tensor **x)
{
    int nd = a->ndim;
    int64_t m = w->m, big = 1, shape[CLT_MAX_DIMS];
    for (int i = 0; i < nd - 2; i++)
        big *= a->shape[i];
    memcpy(shape, a->shape, (size_t)nd * sizeof *shape);
    clt_status st = CLT_OK;
    clt_tensor **es = NULL, **xs = NULL;
    if (big == 0) {
        shape[nd - 2] = w->k;
        CLT__TRY(clt_zeros(a->dev, a->dtype, nd - 1, shape, e));
        shape[nd - 2] = m;
        shape[nd - 1] = w->k;
        CLT__TRY(clt_zeros(a->dev, a->dtype, nd, shape, x));
        return CLT_OK;
    }
    es = calloc((size_t)big, sizeof *es);
    xs = calloc((size_t)big, sizeof *xs);
    if (!es || !xs) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", w->fn);
        goto done;
    }
    for (int64_t i = 0; i < big; i++) {
        clt_tensor *ai, *bi = NULL, *xi;
        CLT__TRY(matrix(a, i, &ai));
        if (b)
            CLT__TRY(matrix(b, i, &bi));
        if (x0)
            CLT__TRY(matrix(x0, i, &xi));
        else
            CLT__TRY(clt_randn(gen, a->dev, a->dtype, 2, (int64_t[]){m, w->n}, &xi));
        w->A.d = ai;
        w->B.d = bi;
        CLT__TRY(run(w, xi, &es[i], &xs[i]));
    }
    clt_tensor *se, *sx;
    CLT__TRY(clt_stack((const clt_tensor *const *)es, (size_t)big, 0, &se));
    CLT__TRY(clt_stack((const clt_tensor *const *)xs, (size_t)big, 0, &sx));
    shape[nd - 2] = w->k;
    CLT__TRY(clt_reshape(se, nd - 1, shape, e));
    shape[nd - 2] = m;
    shape[nd - 1] = w->k;
    CLT__TRY(clt_reshape(sx, nd, shape, x));
done:
    free(es);
    free(xs);
    return st;
}

/* The outputs NULL, the required arguments (a: A, dense or sparse) and
 * w's start for the public function fn. */
static clt_status lob_start(lob *w, const char *fn, const void *a, const clt_tensor *ik,
                            clt_tensor **eigenvalues, clt_tensor **eigenvectors)
{
    if (eigenvalues)
        *eigenvalues = NULL;
    if (eigenvectors)
        *eigenvectors = NULL;
    CLT__REQUIRE_ARG(eigenvalues, fn);
    CLT__REQUIRE_ARG(eigenvectors, fn);
    CLT__REQUIRE_ARG(a, fn);
    memset(w, 0, sizeof *w);
    w->fn = fn;
    w->iK = ik;
    return CLT_OK;
}

clt_status clt_lobpcg(const clt_tensor *a, int64_t k, const clt_tensor *b, const clt_tensor *x,
                      int64_t n, const clt_tensor *ik, int64_t niter, const double *tol,
                      int largest, const char *method, const clt_lobpcg_ortho *ortho,
                      clt_generator *gen, clt_tensor **eigenvalues, clt_tensor **eigenvectors)
{
    static const char fn[] = "clt_lobpcg";
    lob w;
    clt_status st = lob_start(&w, fn, a, ik, eigenvalues, eigenvectors);
    if (st != CLT_OK)
        return st;
    w.dev = a->dev;
    st = check_args(fn, a, a->ndim, a->shape, b, b ? b->ndim : 0, b ? b->shape : NULL,
                               x, ik);
    if (st == CLT_OK)
        st = set_params(&w, a->shape[a->ndim - 1], a->dtype, x, k, n, niter, tol, largest,
                        method, ortho);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {a, b};
    bool grad = clt__grad_needed(b ? 2 : 1, in);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *outs[2] = {NULL, NULL}, *as = NULL, *bs = NULL, *ad = NULL, *bd = NULL,
               *xd = NULL;
    if (grad) {
        /* torch symmetrises A (and B) first, so that A's gradient is symmetric */
        CLT__TRY(symmetrised(a, &as));
        if (b)
            CLT__TRY(symmetrised(b, &bs));
    }
    int was = clt_set_grad_enabled(0);
    st = clt_contiguous(grad ? as : a, &ad);
    if (st == CLT_OK && b)
        st = clt_contiguous(grad ? bs : b, &bd);
    if (st == CLT_OK && x)
        st = clt_detach(x, &xd);
    if (st == CLT_OK)
        st = batch(&w, ad, bd, xd, gen, &outs[0], &outs[1]);
    clt_set_grad_enabled(was);
    if (st != CLT_OK)
        goto done;
    if (grad) {
        clt__node *nd = NULL;
        const clt_tensor *rin[2] = {as, bs}, *saved[3] = {as, outs[0], outs[1]};
        CLT__TRY(clt__record_outputs(outs, 2, "LOBPCGAutogradFunctionBackward", bw_lobpcg,
                                     b ? 2 : 1, rin, NULL, free, &nd));
        if (nd) {
            nd->i[0] = w.largest;
            nd->i[1] = b != NULL;
            CLT__TRY(clt__node_save(nd, 3, saved));
            /* the symmetrised A is input 0: it keeps its history in a pass
             * that creates a graph, for the second derivative */
            nd->saved_from[0] = 1;
            clt__twice(nd);
        }
    }
done:
    st = clt__scope_finish_all(st, outs, 2);
    if (st != CLT_OK)
        return st;
    *eigenvalues = outs[0];
    *eigenvectors = outs[1];
    return CLT_OK;
}

/* ---- clt_lobpcg_sparse ------------------------------------------------------------- */

static clt_status bw_lobpcg_sparse(clt__node *nd, const clt_tensor *g, clt_tensor **gin)
{
    (void)nd;
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: lobpcg.backward does not support sparse input yet. Note that "
                      "lobpcg.forward does though.",
                      bw_fn);
}

/* s as the sparse A or B: a 2-D matrix with 2 sparse dimensions; its values
 * (a new handle) in *v. */
static clt_status sparse_operand(const char *fn, const clt_sparse *s, const char *what,
                                 clt_tensor **v)
{
    *v = NULL;
    if (clt_sparse_ndim(s) != 2 || clt_sparse_sparse_dim(s) != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: a sparse %s must be a matrix [m, m] of 2 sparse dimensions (no "
                          "batch, no dense dimensions, as torch's), got %d dims, %d sparse",
                          fn, what, clt_sparse_ndim(s), clt_sparse_sparse_dim(s));
    clt_status st = clt_sparse_values(s, v);
    return st == CLT_OK ? CLT_OK : clt__error_in(st, fn);
}

clt_status clt_lobpcg_sparse(const clt_sparse *a, int64_t k, const clt_sparse *b,
                             const clt_tensor *x, int64_t n, const clt_tensor *ik, int64_t niter,
                             const double *tol, int largest, const char *method,
                             const clt_lobpcg_ortho *ortho, clt_generator *gen,
                             clt_tensor **eigenvalues, clt_tensor **eigenvectors)
{
    static const char fn[] = "clt_lobpcg_sparse";
    lob w;
    clt_status st = lob_start(&w, fn, a, ik, eigenvalues, eigenvectors);
    if (st != CLT_OK)
        return st;
    clt_tensor *va = NULL, *vb = NULL, *xd = NULL;
    clt_tensor *outs[2] = {NULL, NULL};
    clt_sparse *sat = NULL, *sbt = NULL;
    const int64_t *shape = clt_sparse_shape(a);
    st = sparse_operand(fn, a, "A", &va);
    if (st == CLT_OK && b)
        st = sparse_operand(fn, b, "B", &vb);
    if (st == CLT_OK)
        st = check_args(fn, va, 2, shape, vb, b ? 2 : 0, b ? clt_sparse_shape(b) : NULL, x, ik);
    if (st == CLT_OK)
        st = set_params(&w, shape[1], va->dtype, x, k, n, niter, tol, largest, method, ortho);
    if (st != CLT_OK)
        goto early;
    w.dev = va->dev;
    const clt_tensor *in[2] = {va, vb};
    bool grad = clt__grad_needed(b ? 2 : 1, in);
    w.A.s = a;
    w.B.s = b;
    /* torch runs on (A + A^T) / 2 (and B's) when they require grad */
    if (grad && (st = clt_sparse_transpose(a, 0, 1, &sat)) == CLT_OK && b)
        st = clt_sparse_transpose(b, 0, 1, &sbt);
    if (st != CLT_OK) {
        st = clt__error_in(st, fn);
        goto early;
    }
    w.A.st = sat;
    w.B.st = sbt;
    int was = clt_set_grad_enabled(0);
    if (x)
        st = clt_detach(x, &xd);
    else
        st = clt_randn(gen, w.dev, va->dtype, 2, (int64_t[]){w.m, w.n}, &xd);
    if (st == CLT_OK)
        st = run(&w, xd, &outs[0], &outs[1]);
    clt_set_grad_enabled(was);
    if (st == CLT_OK && grad) {
        clt__node *nd = NULL;
        st = clt__record_outputs(outs, 2, "LOBPCGAutogradFunctionBackward", bw_lobpcg_sparse,
                                 b ? 2 : 1, in, NULL, free, &nd);
    }
    if (st != CLT_OK) {
        clt__error_in(st, fn);
        clt_tensor_free(outs[0]);
        clt_tensor_free(outs[1]);
        outs[0] = outs[1] = NULL;
    }
early:
    clt_tensor_free(va);
    clt_tensor_free(vb);
    clt_tensor_free(xd);
    clt_sparse_free(sat);
    clt_sparse_free(sbt);
    if (st != CLT_OK)
        return st;
    *eigenvalues = outs[0];
    *eigenvectors = outs[1];
    return CLT_OK;
}
