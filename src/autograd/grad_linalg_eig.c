/* grad_linalg_eig.c: eigh, eigvalsh, svd, svdvals and torch.svd
 * (src/ops/linalg_eig.c) with torch 1.13's backward formulas, and the ops
 * composed of them: pinv (with its own backward, as torch's), matrix_rank
 * and cond.  Formulas run inside a scope (clt_scope_begin), which releases
 * their intermediates. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "autograd/autograd.h"

static const char bw_fn[] = "clt_backward";

/* The last two dims of t swapped (a view; recorded in a pass that creates
 * a graph, as every op of the formulas here, which clt__twice marks). */
static clt_status mT(const clt_tensor *t, clt_tensor **out)
{
    return clt__transpose_rec(bw_fn, t, -2, -1, out);
}

/* x with its last dim repeated as a diagonal, [..., k, k]. */
static clt_status diag_embed(const clt_tensor *x, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *eye = NULL, *col;
    int64_t k = x->shape[x->ndim - 1];
    CLT__TRY(clt_eye(x->dev, x->dtype, k, k, &eye));
    CLT__TRY(clt__unsqueeze_rec(bw_fn, x, -1, &col));
    CLT__TRY(clt__mul_rec(bw_fn, col, eye, out));
done:
    return st;
}

/* torch's E for the vectors' gradients: E[i][j] = x[j] - x[i] off the
 * diagonal, 1 on it, [..., k, k]. */
static clt_status gaps(const clt_tensor *x, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *row, *col, *d, *eye;
    int64_t k = x->shape[x->ndim - 1];
    CLT__TRY(clt__unsqueeze_rec(bw_fn, x, -2, &row));
    CLT__TRY(clt__unsqueeze_rec(bw_fn, x, -1, &col));
    CLT__TRY(clt__sub_rec(bw_fn, row, col, &d));
    CLT__TRY(clt_eye(x->dev, x->dtype, k, k, &eye));
    CLT__TRY(clt__add_rec(bw_fn, d, eye, out));
done:
    return st;
}

/* x - x^T. */
static clt_status skew(const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *t;
    clt_status st = mT(x, &t);
    return st == CLT_OK ? clt__sub_rec(bw_fn, x, t, out) : st;
}

/* ---- eigh ---------------------------------------------------------------- */

/* saved: L, V; the gradients of output 0 (L) and 1 (V), either may be
 * missing.  torch's linalg_eig_backward for a symmetric A:
 * gA = V (diag(gL) + (skew(V^T gV) / 2) / E) V^T. */
static clt_status bw_eigh(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g; /* read with the other output's below */
    const clt_tensor *L = n->saved[0], *V = n->saved[1];
    const clt_tensor *gL = clt__node_grad(n, 0), *gV = clt__node_grad(n, 1);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *vt, *mid = NULL, *t, *u, *e;
    CLT__TRY(mT(V, &vt));
    if (gV) {
        CLT__TRY(clt__matmul_rec(bw_fn, vt, gV, &t));
        CLT__TRY(skew(t, &u));
        CLT__TRY(clt__mul_scalar_rec(bw_fn, u, 0.5, &t));
        CLT__TRY(gaps(L, &e));
        CLT__TRY(clt__div_rec(bw_fn, t, e, &mid));
    }
    if (gL) {
        CLT__TRY(diag_embed(gL, &t));
        if (mid)
            CLT__TRY(clt__add_rec(bw_fn, mid, t, &mid));
        else
            mid = t;
    }
    CLT__TRY(clt__matmul_rec(bw_fn, V, mid, &t));
    CLT__TRY(clt__matmul_rec(bw_fn, t, vt, &gin[0]));
done:
    return clt__scope_finish(st, &gin[0]);
}

/* "L" (or NULL) or "U" into *upper; torch's message otherwise. */
static clt_status parse_uplo(const char *uplo, bool *upper, const char *fn)
{
    if (uplo == NULL || strcmp(uplo, "L") == 0 || strcmp(uplo, "l") == 0)
        *upper = false;
    else if (strcmp(uplo, "U") == 0 || strcmp(uplo, "u") == 0)
        *upper = true;
    else
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected UPLO argument to be 'L' or 'U', but got %s", fn, uplo);
    return CLT_OK;
}

clt_status clt__record_decomposition(const clt_tensor *a, clt_tensor **outs, int nout,
                                     const char *name, clt__backward_fn bw, int nsaved,
                                     const clt_tensor *const *saved, clt__node **node)
{
    clt__node *n = NULL;
    clt_status st = clt__record_outputs(outs, nout, name, bw, 1, &a, NULL, free, &n);
    if (st == CLT_OK && n)
        st = clt__node_save(n, nsaved, saved);
    if (st != CLT_OK) {
        for (int k = 0; k < nout; k++) {
            clt_tensor_free(outs[k]);
            outs[k] = NULL;
        }
        n = NULL;
    }
    if (node)
        *node = n;
    return st;
}

/* eigh (vals_only false) or eigvalsh: with grad needed, both computed and
 * recorded, the vectors released after for eigvalsh. */
static clt_status eigh(const char *fn, const clt_tensor *a, const char *uplo, bool vals_only,
                       clt_tensor **w, clt_tensor **v)
{
    bool upper = false;
    clt_status st = parse_uplo(uplo, &upper, fn);
    if (st != CLT_OK)
        return st;
    bool grad = clt__grad_needed(1, &a);
    clt_tensor *outs[2] = {NULL, NULL};
    st = clt__linalg_eigh(a, upper, !vals_only || grad, &outs[0], &outs[1], fn);
    if (st == CLT_OK && grad) {
        const clt_tensor *saved[2] = {outs[0], outs[1]};
        clt__node *n = NULL;
        st = clt__record_decomposition(a, outs, 2, "LinalgEighBackward0", bw_eigh, 2, saved,
                                       &n);
        clt__twice(n);
    }
    if (st != CLT_OK)
        return st;
    *w = outs[0];
    if (vals_only)
        clt_tensor_free(outs[1]);
    else
        *v = outs[1];
    return CLT_OK;
}

clt_status clt_linalg_eigh(const clt_tensor *a, const char *uplo, clt_tensor **eigenvalues,
                           clt_tensor **eigenvectors)
{
    CLT__AUTOCAST("clt_linalg_eigh", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_eigh(CLT__AC(0), uplo, eigenvalues, eigenvectors));
    static const char fn[] = "clt_linalg_eigh";
    if (eigenvalues)
        *eigenvalues = NULL;
    if (eigenvectors)
        *eigenvectors = NULL;
    CLT__REQUIRE_ARG(eigenvalues, fn);
    CLT__REQUIRE_ARG(eigenvectors, fn);
    CLT__REQUIRE_ARG(a, fn);
    return eigh(fn, a, uplo, false, eigenvalues, eigenvectors);
}

clt_status clt_linalg_eigvalsh(const clt_tensor *a, const char *uplo, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_eigvalsh", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_eigvalsh(CLT__AC(0), uplo, out));
    static const char fn[] = "clt_linalg_eigvalsh";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    return eigh(fn, a, uplo, true, out, NULL);
}

/* ---- svd ----------------------------------------------------------------- */

/* saved: U, S, Vh; i[0] 1 for full_matrices, whose U and Vh are reduced
 * to their first k columns and rows, the gradients of the others dropped,
 * as torch 1.13 does.  torch's svd_backward. */
static clt_status bw_svd(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    const clt_tensor *U = n->saved[0], *S = n->saved[1], *Vh = n->saved[2];
    const clt_tensor *gU = clt__node_grad(n, 0), *gS = clt__node_grad(n, 1);
    const clt_tensor *gVh = clt__node_grad(n, 2);
    clt_tensor *nu, *nv;
    int64_t m = U->shape[U->ndim - 2], nn = Vh->shape[Vh->ndim - 1], k = S->shape[S->ndim - 1];
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *t, *u, *x, *ut, *vht, *row, *col, *ret = NULL, *ga;
    if (n->i[0]) {
        CLT__TRY(clt__narrow_rec(bw_fn, U, -1, 0, k, &nu));
        CLT__TRY(clt__narrow_rec(bw_fn, Vh, -2, 0, k, &nv));
        U = nu;
        Vh = nv;
    }
    if (n->i[0] && gU) {
        CLT__TRY(clt__narrow_rec(bw_fn, gU, -1, 0, k, &nu));
        gU = nu;
    }
    if (n->i[0] && gVh) {
        CLT__TRY(clt__narrow_rec(bw_fn, gVh, -2, 0, k, &nv));
        gVh = nv;
    }
    CLT__TRY(clt__unsqueeze_rec(bw_fn, S, -2, &row));
    CLT__TRY(clt__unsqueeze_rec(bw_fn, S, -1, &col));
    CLT__TRY(mT(U, &ut));
    CLT__TRY(mT(Vh, &vht));
    if (gU == NULL && gVh == NULL) { /* svdvals: U diag(gS) Vh */
        if (m >= nn) {
            CLT__TRY(clt__unsqueeze_rec(bw_fn, gS, -1, &t));
            CLT__TRY(clt__mul_rec(bw_fn, t, Vh, &u));
            CLT__TRY(clt__matmul_rec(bw_fn, U, u, &gin[0]));
        } else {
            CLT__TRY(clt__unsqueeze_rec(bw_fn, gS, -2, &t));
            CLT__TRY(clt__mul_rec(bw_fn, U, t, &u));
            CLT__TRY(clt__matmul_rec(bw_fn, u, Vh, &gin[0]));
        }
        goto done;
    }
    clt_tensor *UhgU = NULL, *VhgV = NULL, *s2, *e;
    if (gU) {
        CLT__TRY(clt__matmul_rec(bw_fn, ut, gU, &t));
        CLT__TRY(skew(t, &UhgU));
    }
    if (gVh) {
        CLT__TRY(mT(gVh, &t));
        CLT__TRY(clt__matmul_rec(bw_fn, Vh, t, &u));
        CLT__TRY(skew(u, &VhgV));
    }
    CLT__TRY(clt__mul_rec(bw_fn, S, S, &s2));
    CLT__TRY(gaps(s2, &e));
    if (gU && gVh) {
        CLT__TRY(clt__mul_rec(bw_fn, UhgU, row, &t));
        CLT__TRY(clt__mul_rec(bw_fn, col, VhgV, &u));
        CLT__TRY(clt__add_rec(bw_fn, t, u, &x));
        CLT__TRY(clt__div_rec(bw_fn, x, e, &ret));
    } else if (gU) {
        CLT__TRY(clt__div_rec(bw_fn, UhgU, e, &t));
        CLT__TRY(clt__mul_rec(bw_fn, t, row, &ret));
    } else {
        CLT__TRY(clt__div_rec(bw_fn, VhgV, e, &t));
        CLT__TRY(clt__mul_rec(bw_fn, col, t, &ret));
    }
    if (gS) {
        CLT__TRY(diag_embed(gS, &t));
        CLT__TRY(clt__add_rec(bw_fn, ret, t, &ret));
    }
    if (m > nn && gU) { /* [U ret + (I - U U^T) gU S^-1] Vh */
        clt_tensor *gus;
        CLT__TRY(clt__matmul_rec(bw_fn, U, ret, &ga));
        CLT__TRY(clt__div_rec(bw_fn, gU, row, &gus));
        CLT__TRY(clt__add_rec(bw_fn, ga, gus, &ga));
        CLT__TRY(clt__matmul_rec(bw_fn, ut, gus, &t));
        CLT__TRY(clt__matmul_rec(bw_fn, U, t, &u));
        CLT__TRY(clt__sub_rec(bw_fn, ga, u, &ga));
        CLT__TRY(clt__matmul_rec(bw_fn, ga, Vh, &gin[0]));
    } else if (m < nn && gVh) { /* U [ret Vh + S^-1 gVh (I - V Vh)] */
        clt_tensor *sgv;
        CLT__TRY(clt__matmul_rec(bw_fn, ret, Vh, &ga));
        CLT__TRY(clt__div_rec(bw_fn, gVh, col, &sgv));
        CLT__TRY(clt__add_rec(bw_fn, ga, sgv, &ga));
        CLT__TRY(clt__matmul_rec(bw_fn, sgv, vht, &t));
        CLT__TRY(clt__matmul_rec(bw_fn, t, Vh, &u));
        CLT__TRY(clt__sub_rec(bw_fn, ga, u, &ga));
        CLT__TRY(clt__matmul_rec(bw_fn, U, ga, &gin[0]));
    } else {
        CLT__TRY(clt__matmul_rec(bw_fn, U, ret, &t));
        CLT__TRY(clt__matmul_rec(bw_fn, t, Vh, &gin[0]));
    }
done:
    return clt__scope_finish(st, &gin[0]);
}

/* svd (vals_only false: *u, *s, *vh) or svdvals (*s only); with grad
 * needed, all three computed and recorded. */
static clt_status svd(const char *fn, const clt_tensor *a, bool full, bool vals_only,
                      clt_tensor **u, clt_tensor **s, clt_tensor **vh)
{
    bool grad = clt__grad_needed(1, &a);
    clt_tensor *outs[3] = {NULL, NULL, NULL};
    clt_status st = clt__linalg_svd(a, full, !vals_only || grad, &outs[0], &outs[1], &outs[2], fn);
    if (st == CLT_OK && grad) {
        const clt_tensor *saved[3] = {outs[0], outs[1], outs[2]};
        clt__node *n = NULL;
        st = clt__record_decomposition(a, outs, 3, "LinalgSvdBackward0", bw_svd, 3, saved,
                                       &n);
        if (n)
            n->i[0] = full;
        clt__twice(n);
    }
    if (st != CLT_OK)
        return st;
    *s = outs[1];
    if (vals_only) {
        clt_tensor_free(outs[0]);
        clt_tensor_free(outs[2]);
    } else {
        *u = outs[0];
        *vh = outs[2];
    }
    return CLT_OK;
}

clt_status clt_linalg_svd(const clt_tensor *a, int full_matrices, clt_tensor **u, clt_tensor **s,
                          clt_tensor **vh)
{
    CLT__AUTOCAST("clt_linalg_svd", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_svd(CLT__AC(0), full_matrices, u, s, vh));
    static const char fn[] = "clt_linalg_svd";
    clt_tensor **outs[3] = {u, s, vh};
    for (int k = 0; k < 3; k++)
        if (outs[k])
            *outs[k] = NULL;
    CLT__REQUIRE_ARG(u, fn);
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(vh, fn);
    CLT__REQUIRE_ARG(a, fn);
    return svd(fn, a, full_matrices != 0, false, u, s, vh);
}

clt_status clt_linalg_svdvals(const clt_tensor *a, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_svdvals", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_svdvals(CLT__AC(0), out));
    static const char fn[] = "clt_linalg_svdvals";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    return svd(fn, a, false, true, NULL, out, NULL);
}

clt_status clt__linalg_svdvals_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    *out = NULL;
    return svd(fn, a, false, true, NULL, out, NULL);
}

clt_status clt_svd(const clt_tensor *a, int some, int compute_uv, clt_tensor **u, clt_tensor **s,
                   clt_tensor **v)
{
    CLT__AUTOCAST("clt_svd", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_svd(CLT__AC(0), some, compute_uv, u, s, v));
    static const char fn[] = "clt_svd";
    clt_tensor **outs[3] = {u, s, v};
    for (int k = 0; k < 3; k++)
        if (outs[k])
            *outs[k] = NULL;
    CLT__REQUIRE_ARG(u, fn);
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(v, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_status st;
    if (!compute_uv) {
        st = svd(fn, a, false, true, NULL, s, NULL);
        if (st == CLT_OK) { /* a has at least 2 dims now */
            int nd = a->ndim;
            int64_t sh[CLT_MAX_DIMS];
            memcpy(sh, a->shape, (size_t)nd * sizeof *sh);
            sh[nd - 1] = a->shape[nd - 2];
            st = clt__full(a->dev, a->dtype, nd, sh, 0.0, u);
            sh[nd - 2] = sh[nd - 1] = a->shape[nd - 1];
            if (st == CLT_OK)
                st = clt__full(a->dev, a->dtype, nd, sh, 0.0, v);
        }
    } else {
        clt_tensor *vh = NULL;
        st = svd(fn, a, !some, false, u, s, &vh);
        if (st == CLT_OK)
            st = clt__transpose_rec(fn, vh, -2, -1, v);
        clt_tensor_free(vh);
    }
    if (st != CLT_OK)
        for (int k = 0; k < 3; k++) {
            clt_tensor_free(*outs[k]);
            *outs[k] = NULL;
        }
    return st;
}

/* ---- pinv, matrix_rank, cond ---------------------------------------------- */

/* torch's tolerances (get_atol_rtol): atol 0 unless given; rtol as given,
 * else eps * max(m, n), or 0 when atol is given and positive. */
static void tolerances(const clt_tensor *a, const double *atol, const double *rtol, double *at,
                       double *rt)
{
    double eps = a->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
    int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
    *at = atol ? *atol : 0.0;
    *rt = rtol ? *rtol : atol && *atol > 0 ? 0.0 : eps * (double)(m > n ? m : n);
}

/* The values the bound keeps: x (S, or the eigenvalues with hermitian,
 * [..., k]) and *keep (bool) where |x| > max(atol, rtol * max |x|), or
 * where x > 0 when there is none.  No autograd. */
static clt_status kept(const char *fn, const clt_tensor *a, const double *atol,
                       const double *rtol, bool hermitian, clt_tensor **x, clt_tensor **vecs_l,
                       clt_tensor **vecs_r, clt_tensor **keep)
{
    double at, rt;
    tolerances(a, atol, rtol, &at, &rt);
    clt_status st = CLT_OK;
    clt_tensor *ab, *mx, *tol, *lo = NULL;
    bool vectors = vecs_l != NULL;
    if (hermitian) {
        CLT__TRY(clt__linalg_eigh(a, false, vectors, x, vectors ? vecs_l : NULL, fn));
        if (vectors)
            CLT__TRY(mT(*vecs_l, vecs_r));
    } else {
        CLT__TRY(clt__linalg_svd(a, false, vectors, vecs_l, x, vecs_r, fn));
    }
    CLT__TRY(clt__abs_in(fn, *x, &ab));
    int last = -1;
    CLT__TRY(clt__amax(ab, &last, 1, 1, true, &mx, fn));
    CLT__TRY(clt__mul_scalar_in(fn, mx, rt, &tol));
    CLT__TRY(clt__clamp(tol, &at, NULL, &lo, fn));
    CLT__TRY(clt__gt_in(fn, ab, lo, keep));
done:
    return st;
}

/* torch's pinv_backward for a wide or square A (m <= n), P = pinv(A):
 * -(P K)^T + K P^T - (A P) K P^T + (P^T P)(g^T - K A), K = g^T P. */
static clt_status pinv_grad(const clt_tensor *A, const clt_tensor *P, const clt_tensor *g,
                            clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *ph, *gh, *K, *kph, *t, *u, *w, *x, *r;
    CLT__TRY(mT(P, &ph));
    CLT__TRY(mT(g, &gh));
    CLT__TRY(clt__matmul_rec(bw_fn, gh, P, &K));
    CLT__TRY(clt__matmul_rec(bw_fn, K, ph, &kph));
    CLT__TRY(clt__matmul_rec(bw_fn, P, K, &t));
    CLT__TRY(mT(t, &u));
    CLT__TRY(clt__sub_rec(bw_fn, kph, u, &r));
    CLT__TRY(clt__matmul_rec(bw_fn, A, P, &t));
    CLT__TRY(clt__matmul_rec(bw_fn, t, kph, &u));
    CLT__TRY(clt__sub_rec(bw_fn, r, u, &r));
    CLT__TRY(clt__matmul_rec(bw_fn, ph, P, &t));
    CLT__TRY(clt__matmul_rec(bw_fn, K, A, &u));
    CLT__TRY(clt__sub_rec(bw_fn, gh, u, &w));
    CLT__TRY(clt__matmul_rec(bw_fn, t, w, &x));
    CLT__TRY(clt__add_rec(bw_fn, r, x, out));
done:
    return st;
}

/* saved: A, pinv(A).  A tall A takes pinv_grad of A^T, whose pseudo-inverse
 * is P^T (torch's second branch, the same products transposed). */
static clt_status bw_pinv(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt_tensor *A = n->saved[0], *P = n->saved[1];
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *at, *pt, *gt, *r;
    if (A->shape[A->ndim - 2] <= A->shape[A->ndim - 1]) {
        CLT__TRY(pinv_grad(A, P, g, &gin[0]));
    } else {
        CLT__TRY(mT(A, &at));
        CLT__TRY(mT(P, &pt));
        CLT__TRY(mT(g, &gt));
        CLT__TRY(pinv_grad(at, pt, gt, &r));
        CLT__TRY(mT(r, &gin[0]));
    }
done:
    return clt__scope_finish(st, &gin[0]);
}

/* The checks pinv, matrix_rank and cond open with, then a scope for their
 * intermediates (closed with clt__scope_finish). */
static clt_status opening(const char *fn, const clt_tensor *a, bool square, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_check(a, "A", square, fn);
    return st == CLT_OK ? clt_scope_begin() : st;
}

clt_status clt_linalg_pinv(const clt_tensor *a, const double *atol, const double *rtol,
                           int hermitian, clt_tensor **out)
{
    return clt__linalg_pinv_rec("clt_linalg_pinv", a, atol, rtol, hermitian != 0, out);
}

clt_status clt__linalg_pinv_rec(const char *fn, const clt_tensor *a, const double *atol,
                                const double *rtol, bool hermitian, clt_tensor **out)
{
    clt_status st = opening(fn, a, hermitian != 0, out);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim;
    int64_t sh[CLT_MAX_DIMS];
    memcpy(sh, a->shape, (size_t)nd * sizeof *sh);
    sh[nd - 2] = a->shape[nd - 1];
    sh[nd - 1] = a->shape[nd - 2];
    clt_tensor *x, *l, *r, *keep, *inv, *zero, *sinv, *row, *t, *p = NULL;
    if (clt__linalg_count(nd, a->shape) == 0) {
        CLT__TRY(clt__full(a->dev, a->dtype, nd, sh, 0.0, &p));
    } else {
        /* V diag(S^-1) U^T over the kept values (U = V for hermitian) */
        CLT__TRY(kept(fn, a, atol, rtol, hermitian != 0, &x, &l, &r, &keep));
        CLT__TRY(clt__reciprocal_in(fn, x, &inv));
        CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 0.0, &zero));
        CLT__TRY(clt__where_in(fn, keep, inv, zero, &sinv));
        CLT__TRY(clt__unsqueeze(sinv, -2, &row, fn));
        if (hermitian) {
            CLT__TRY(clt__mul_in(fn, l, row, &t));
            CLT__TRY(clt__matmul(t, r, &p, fn));
        } else {
            clt_tensor *v, *ut;
            CLT__TRY(mT(r, &v));
            CLT__TRY(mT(l, &ut));
            CLT__TRY(clt__mul_in(fn, v, row, &t));
            CLT__TRY(clt__matmul(t, ut, &p, fn));
        }
    }
    const clt_tensor *saved[2] = {a, p};
    clt__node *n = NULL;
    st = clt__record(st, &p, "LinalgPinvBackward0", bw_pinv, 1, &a, 2, saved, &n);
    clt__twice(n);
    *out = p;
done:
    return clt__scope_finish(st, out);
}

clt_status clt_linalg_matrix_rank(const clt_tensor *a, const double *atol, const double *rtol,
                                  int hermitian, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_matrix_rank", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_matrix_rank(CLT__AC(0), atol, rtol, hermitian, out));
    return clt__linalg_matrix_rank_in("clt_linalg_matrix_rank", a, atol, rtol, hermitian != 0,
                                      out);
}

clt_status clt__linalg_matrix_rank_in(const char *fn, const clt_tensor *a, const double *atol,
                                      const double *rtol, bool hermitian, clt_tensor **out)
{
    clt_status st = opening(fn, a, hermitian != 0, out);
    if (st != CLT_OK)
        return st;
    clt_tensor *x, *keep;
    if (a->shape[a->ndim - 1] == 0 || a->shape[a->ndim - 2] == 0) {
        CLT__TRY(clt__full(a->dev, CLT_INT64, a->ndim - 2, a->shape, 0.0, out));
    } else {
        CLT__TRY(kept(fn, a, atol, rtol, hermitian != 0, &x, NULL, NULL, &keep));
        CLT__TRY(clt__sum_dim(keep, -1, 0, out, fn));
    }
done:
    return clt__scope_finish(st, out);
}

clt_status clt_linalg_cond(const clt_tensor *a, double p, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_cond", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_cond(CLT__AC(0), p, out));
    return clt__linalg_cond_rec("clt_linalg_cond", a, p, out);
}

clt_status clt__linalg_cond_rec(const char *fn, const clt_tensor *a, double p, clt_tensor **out)
{
    if (p == 1 || p == -1 || isinf(p)) {
        CLT__REQUIRE_ARG(out, fn);
        *out = NULL;
        CLT__REQUIRE_ARG(a, fn);
        return clt__linalg_cond_inv(fn, a, p == 1 ? "1" : p == -1 ? "-1" : p > 0 ? "inf" : "-inf",
                                    out);
    }
    clt_status st = opening(fn, a, false, out);
    if (st != CLT_OK)
        return st;
    if (p != 2 && p != -2) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: linalg.cond got an invalid norm type: %g",
                        fn, p);
        goto done;
    }
    clt_tensor *s, *hi, *lo, *q;
    int64_t k = a->shape[a->ndim - 1] < a->shape[a->ndim - 2] ? a->shape[a->ndim - 1]
                                                               : a->shape[a->ndim - 2];
    if (k == 0) { /* torch's 0 */
        st = clt__full(a->dev, a->dtype, a->ndim - 2, a->shape, 0.0, out);
        goto done;
    }
    CLT__TRY(svd(fn, a, false, true, NULL, &s, NULL));
    CLT__TRY(clt__narrow_rec(fn, s, -1, 0, 1, &hi));
    CLT__TRY(clt__narrow_rec(fn, s, -1, k - 1, 1, &lo));
    CLT__TRY(p > 0 ? clt__div_rec(fn, hi, lo, &q) : clt__div_rec(fn, lo, hi, &q));
    CLT__TRY(clt__squeeze_rec(fn, q, -1, out));
done:
    return clt__scope_finish(st, out);
}
