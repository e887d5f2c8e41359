/* grad_linalg_lu.c: torch.linalg's solve_triangular, lu_factor(_ex), lu,
 * lu_solve, matrix_exp, tensorinv and tensorsolve, and torch's
 * cholesky_solve and cholesky_inverse (linalg.h), with their backward
 * formulas; the kernels' callers are in src/ops/linalg_lu.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

static const char bw_fn[] = "clt_backward";

/* The last two dims of t swapped (a view; recorded in a pass that creates
 * a graph, as every op of the formulas here, which clt__twice marks). */
static clt_status mT(const clt_tensor *t, clt_tensor **out)
{
    return clt__transpose_rec(bw_fn, t, -2, -1, out);
}

/* tril(t, diagonal) or triu, recorded. */
static clt_status tri_rec(const clt_tensor *t, int64_t diagonal, bool upper, clt_tensor **out)
{
    return upper ? clt_triu(t, diagonal, out) : clt_tril(t, diagonal, out);
}

static clt_status solve_triangular_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                       bool upper, bool left, bool unit, clt_tensor **out);

/* Releases the k temporaries of a formula. */
static void free_all(clt_tensor **t, size_t k)
{
    for (size_t i = 0; i < k; i++)
        clt_tensor_free(t[i]);
}

/* ---- solve_triangular ------------------------------------------------------ */

/* saved: A, X; i[0] upper, i[1] left, i[2] unitriangular.  torch's:
 * gB = solve_triangular(A^T, g, !upper, left, unit) and gA = -gB X^T
 * (left) or -X^T gB, in A's triangle (strict with unit). */
static clt_status bw_solve_triangular(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    bool upper = n->i[0], left = n->i[1], unit = n->i[2];
    clt_tensor *t[5] = {NULL};
    CLT__TRY(mT(S(0), &t[0]));
    CLT__TRY(solve_triangular_rec(bw_fn, t[0], g, !upper, left, unit, &t[1]));
    if (CLT__NEED(n, 0)) {
        CLT__TRY(mT(S(1), &t[2]));
        CLT__TRY(left ? clt__matmul_rec(bw_fn, t[1], t[2], &t[3])
                      : clt__matmul_rec(bw_fn, t[2], t[1], &t[3]));
        CLT__TRY(tri_rec(t[3], upper ? unit : -(int64_t)unit, upper, &t[4]));
        CLT__TRY(clt__neg_rec(bw_fn, t[4], &gin[0]));
    }
    if (CLT__NEED(n, 1))
        gin[1] = t[1], t[1] = NULL;
done:
    free_all(t, 5);
    return st;
}

static clt_status solve_triangular_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                       bool upper, bool left, bool unit, clt_tensor **out)
{
    clt_status st = clt__linalg_solve_triangular(a, b, upper, left, unit, out, fn);
    const clt_tensor *in[2] = {a, b}, *saved[2] = {a, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgSolveTriangularBackward0", bw_solve_triangular, 2, in, 2,
                     saved, &n);
    if (n) {
        n->i[0] = upper;
        n->i[1] = left;
        n->i[2] = unit;
    }
    clt__twice(n);
    return st;
}

clt_status clt_linalg_solve_triangular(const clt_tensor *a, const clt_tensor *b, int upper,
                                       int left, int unitriangular, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_solve_triangular";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    return solve_triangular_rec(fn, a, b, upper != 0, left != 0, unitriangular != 0, out);
}

/* ---- LU ------------------------------------------------------------------ */

/* torch's linalg_lu_backward for a square A = P L U: P L^-T phi U^-T with
 * phi = tril(L^T gL, -1) + triu(gU U^T); gL or gU may be NULL. */
static clt_status lu_grad_square(const clt_tensor *P, const clt_tensor *L, const clt_tensor *U,
                                 const clt_tensor *gL, const clt_tensor *gU, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *t[11] = {NULL};
    CLT__TRY(mT(L, &t[0]));
    CLT__TRY(mT(U, &t[1]));
    if (gL) {
        CLT__TRY(clt__matmul_rec(bw_fn, t[0], gL, &t[2]));
        CLT__TRY(tri_rec(t[2], -1, false, &t[3]));
    }
    if (gU) {
        CLT__TRY(clt__matmul_rec(bw_fn, gU, t[1], &t[4]));
        CLT__TRY(tri_rec(t[4], 0, true, &t[5]));
    }
    if (gL && gU)
        CLT__TRY(clt__add_rec(bw_fn, t[3], t[5], &t[6]));
    const clt_tensor *phi = gL && gU ? t[6] : gL ? t[3] : t[5];
    CLT__TRY(solve_triangular_rec(bw_fn, t[0], phi, true, true, true, &t[7]));
    CLT__TRY(solve_triangular_rec(bw_fn, t[1], t[7], false, false, false, &t[8]));
    CLT__TRY(clt__matmul_rec(bw_fn, P, t[8], out));
done:
    free_all(t, 11);
    return st;
}

/* a - b, or -b where a is NULL, or a where b is NULL. */
static clt_status sub_opt(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    if (a && b)
        return clt__sub_rec(bw_fn, a, b, out);
    if (b)
        return clt__neg_rec(bw_fn, b, out);
    return clt__alias_grad(a, out);
}

/* t with zeros appended along dim (-1 or -2) up to `to` there. */
static clt_status pad_zeros(const clt_tensor *t, int dim, int64_t to, clt_tensor **out)
{
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
    shape[t->ndim + dim] = to - t->shape[t->ndim + dim];
    clt_tensor *z = NULL;
    clt_status st = clt__full(t->dev, t->dtype, t->ndim, shape, 0.0, &z);
    if (st == CLT_OK)
        st = clt__cat_rec(bw_fn, (const clt_tensor *[]){t, z}, 2, dim, out);
    clt_tensor_free(z);
    return st;
}

/* torch's linalg_lu_backward for A [m, n] = P L U, L [m, k] unit lower, U
 * [k, n] upper, k = min(m, n); gL or gU may be NULL.  Wide (m < n, U =
 * [U1 U2]): P L^-T [tril(L^T gL - triu(gU) U^T, -1) U1^-T + triu(gU1) |
 * gU2].  Tall (m > n, L = [L1; L2]): P [L1^-T triu(gU U^T - L^T
 * tril(gL, -1)) + tril(gL1, -1); gL2] U^-T.  A missing gU (wide) or gL
 * (tall) gives zeros for the second block. */
static clt_status lu_grad(const clt_tensor *P, const clt_tensor *L, const clt_tensor *U,
                          const clt_tensor *gL, const clt_tensor *gU, clt_tensor **out)
{
    int64_t m = L->shape[L->ndim - 2], n = U->shape[U->ndim - 1];
    if (m == n)
        return lu_grad_square(P, L, U, gL, gU, out);
    clt_status st = CLT_OK;
    clt_tensor *t[18] = {NULL};
    CLT__TRY(mT(L, &t[0]));
    CLT__TRY(mT(U, &t[1]));
    if (m < n) {
        if (gL)
            CLT__TRY(clt__matmul_rec(bw_fn, t[0], gL, &t[2]));
        if (gU) {
            CLT__TRY(tri_rec(gU, 0, true, &t[3]));
            CLT__TRY(clt__matmul_rec(bw_fn, t[3], t[1], &t[4]));
        }
        CLT__TRY(sub_opt(t[2], t[4], &t[5]));
        CLT__TRY(tri_rec(t[5], -1, false, &t[6]));
        CLT__TRY(clt__narrow_rec(bw_fn, t[1], -2, 0, m, &t[7])); /* U1^T */
        CLT__TRY(solve_triangular_rec(bw_fn, t[7], t[6], false, false, false, &t[8]));
        const clt_tensor *y = t[8];
        if (gU) {
            CLT__TRY(clt__narrow_rec(bw_fn, t[3], -1, 0, m, &t[9]));
            CLT__TRY(clt__add_rec(bw_fn, t[8], t[9], &t[10]));
            CLT__TRY(clt__narrow_rec(bw_fn, gU, -1, m, n - m, &t[11]));
            CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){t[10], t[11]}, 2, -1, &t[12]));
            y = t[12];
        }
        CLT__TRY(solve_triangular_rec(bw_fn, t[0], y, true, true, true, &t[13]));
        y = t[13];
        if (!gU) {
            CLT__TRY(pad_zeros(t[13], -1, n, &t[14]));
            y = t[14];
        }
        CLT__TRY(clt__matmul_rec(bw_fn, P, y, out));
    } else {
        if (gU)
            CLT__TRY(clt__matmul_rec(bw_fn, gU, t[1], &t[2]));
        if (gL) {
            CLT__TRY(tri_rec(gL, -1, false, &t[3]));
            CLT__TRY(clt__matmul_rec(bw_fn, t[0], t[3], &t[4]));
        }
        CLT__TRY(sub_opt(t[2], t[4], &t[5]));
        CLT__TRY(tri_rec(t[5], 0, true, &t[6]));
        CLT__TRY(clt__narrow_rec(bw_fn, t[0], -1, 0, n, &t[7])); /* L1^T */
        CLT__TRY(solve_triangular_rec(bw_fn, t[7], t[6], true, true, true, &t[8]));
        const clt_tensor *y = t[8];
        if (gL) {
            CLT__TRY(clt__narrow_rec(bw_fn, t[3], -2, 0, n, &t[9]));
            CLT__TRY(clt__add_rec(bw_fn, t[8], t[9], &t[10]));
            CLT__TRY(clt__narrow_rec(bw_fn, gL, -2, n, m - n, &t[11]));
            CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){t[10], t[11]}, 2, -2, &t[12]));
            y = t[12];
        }
        CLT__TRY(solve_triangular_rec(bw_fn, t[1], y, false, false, false, &t[13]));
        y = t[13];
        if (!gL) {
            CLT__TRY(pad_zeros(t[13], -2, m, &t[14]));
            y = t[14];
        }
        CLT__TRY(clt__matmul_rec(bw_fn, P, y, out));
    }
done:
    free_all(t, 18);
    return st;
}

/* One node of the outputs L and U (P has no gradient, as in torch);
 * saved: P, L, U. */
static clt_status bw_lu(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g; /* read with the other output's below */
    return lu_grad(S(0), S(1), S(2), clt__node_grad(n, 0), clt__node_grad(n, 1), &gin[0]);
}

/* L = tril(LU, -1) + I [m, k] and U = triu(LU) [k, n] of packed factors
 * [m, n], k = min(m, n), recorded. */
static clt_status unpack(const clt_tensor *lu, clt_tensor **L, clt_tensor **U, const char *fn)
{
    clt_status st = CLT_OK;
    int64_t m = lu->shape[lu->ndim - 2], nc = lu->shape[lu->ndim - 1], k = m < nc ? m : nc;
    clt_tensor *c = NULL, *r = NULL, *s = NULL, *eye = NULL;
    CLT__TRY(clt__narrow_rec(fn, lu, -1, 0, k, &c));
    CLT__TRY(tri_rec(c, -1, false, &s));
    CLT__TRY(clt_eye(lu->dev, lu->dtype, m, k, &eye));
    CLT__TRY(clt__add_rec(fn, s, eye, L));
    CLT__TRY(clt__narrow_rec(fn, lu, -2, 0, k, &r));
    CLT__TRY(tri_rec(r, 0, true, U));
done:
    clt_tensor_free(c);
    clt_tensor_free(r);
    clt_tensor_free(s);
    clt_tensor_free(eye);
    return st;
}

/* saved: LU, pivots.  torch's lu_factor_ex_backward: linalg_lu_backward
 * with gL = tril(g, -1) and gU = triu(g). */
static clt_status bw_lu_factor(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int64_t m = S(0)->shape[S(0)->ndim - 2], nc = S(0)->shape[S(0)->ndim - 1];
    int64_t k = m < nc ? m : nc;
    clt_tensor *t[5] = {NULL};
    CLT__TRY(clt__linalg_lu_perm(S(1), m, S(0)->dtype, &t[0], bw_fn));
    CLT__TRY(unpack(S(0), &t[1], &t[2], bw_fn));
    /* gL: g's first k columns, gU: its first k rows (the formulas read
     * their strict lower and upper parts) */
    CLT__TRY(clt__narrow_rec(bw_fn, g, -1, 0, k, &t[3]));
    CLT__TRY(clt__narrow_rec(bw_fn, g, -2, 0, k, &t[4]));
    CLT__TRY(lu_grad(t[0], t[1], t[2], t[3], t[4], &gin[0]));
done:
    free_all(t, 5);
    return st;
}

/* lu_factor_ex recorded; with check, a matrix with a zero pivot refused
 * (the reports read back) and *info NULL. */
static clt_status lu_factor(const char *fn, const clt_tensor *a, bool check, clt_tensor **lu,
                            clt_tensor **pivots, clt_tensor **info)
{
    clt_tensor *f = NULL;
    clt_status st = clt__linalg_lu_factor(a, lu, pivots, &f, fn);
    if (st == CLT_OK && check && f->numel > 0) {
        int64_t bad;
        int v;
        char pre[48];
        st = clt__linalg_first_failure(fn, f, f->numel, &bad, &v);
        if (st == CLT_OK && bad >= 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: %sU[%d,%d] is zero and using it on lu_solve would result in a "
                            "division by zero. If you still want to perform the factorization, "
                            "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, "
                            "pivot)",
                            fn, clt__linalg_batch_prefix(pre, sizeof pre, a, bad), v, v);
    }
    const clt_tensor *saved[2] = {*lu, *pivots};
    clt__node *n = NULL;
    st = clt__record(st, lu, "LinalgLuFactorExBackward0", bw_lu_factor, 1, &a, 2, saved, &n);
    clt__twice(n);
    if (st != CLT_OK) {
        clt_tensor_free(*lu);
        clt_tensor_free(*pivots);
        clt_tensor_free(f);
        *lu = *pivots = f = NULL;
    }
    if (info)
        *info = f;
    else
        clt_tensor_free(f);
    return st;
}

clt_status clt_linalg_lu_factor_ex(const clt_tensor *a, clt_tensor **lu, clt_tensor **pivots,
                                   clt_tensor **info)
{
    static const char fn[] = "clt_linalg_lu_factor_ex";
    if (lu)
        *lu = NULL;
    if (pivots)
        *pivots = NULL;
    if (info)
        *info = NULL;
    CLT__REQUIRE_ARG(lu, fn);
    CLT__REQUIRE_ARG(pivots, fn);
    CLT__REQUIRE_ARG(info, fn);
    CLT__REQUIRE_ARG(a, fn);
    return lu_factor(fn, a, false, lu, pivots, info);
}

clt_status clt_linalg_lu_factor(const clt_tensor *a, clt_tensor **lu, clt_tensor **pivots)
{
    static const char fn[] = "clt_linalg_lu_factor";
    if (lu)
        *lu = NULL;
    if (pivots)
        *pivots = NULL;
    CLT__REQUIRE_ARG(lu, fn);
    CLT__REQUIRE_ARG(pivots, fn);
    CLT__REQUIRE_ARG(a, fn);
    return lu_factor(fn, a, true, lu, pivots, NULL);
}

clt_status clt_linalg_lu(const clt_tensor *a, clt_tensor **p, clt_tensor **l, clt_tensor **u)
{
    static const char fn[] = "clt_linalg_lu";
    clt_tensor **outs[3] = {p, l, u};
    for (int i = 0; i < 3; i++)
        if (outs[i])
            *outs[i] = NULL;
    CLT__REQUIRE_ARG(p, fn);
    CLT__REQUIRE_ARG(l, fn);
    CLT__REQUIRE_ARG(u, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_tensor *f = NULL, *piv = NULL, *info = NULL, *t[3] = {NULL};
    clt_status st = clt__linalg_lu_factor(a, &f, &piv, &info, fn);
    if (st != CLT_OK)
        return st;
    int64_t m = a->shape[a->ndim - 2], nc = a->shape[a->ndim - 1], k = m < nc ? m : nc;
    CLT__TRY(clt__linalg_lu_perm(piv, m, a->dtype, p, fn));
    /* L: the first k columns, unit lower; U: the first k rows, upper */
    CLT__TRY(clt__narrow(f, -1, 0, k, &t[0], fn));
    CLT__TRY(clt__tri(t[0], -1, false, &t[1], fn));
    CLT__TRY(clt_eye(a->dev, a->dtype, m, k, &t[2]));
    CLT__TRY(clt__add_in(fn, t[1], t[2], l));
    clt_tensor_free(t[0]);
    t[0] = NULL;
    CLT__TRY(clt__narrow(f, -2, 0, k, &t[0], fn));
    CLT__TRY(clt__tri(t[0], 0, true, u, fn));
    const clt_tensor *saved[3] = {*p, *l, *u};
    clt_tensor *lu[2] = {*l, *u};
    clt__node *n = NULL;
    CLT__TRY(clt__record_outputs(lu, 2, "LinalgLuBackward0", bw_lu, 1, &a, NULL, free, &n));
    if (n)
        CLT__TRY(clt__node_save(n, 3, saved));
    clt__twice(n);
done:
    if (st != CLT_OK)
        for (int i = 0; i < 3; i++) {
            clt_tensor_free(*outs[i]);
            *outs[i] = NULL;
        }
    clt_tensor_free(f);
    clt_tensor_free(piv);
    clt_tensor_free(info);
    free_all(t, 3);
    return st;
}

/* torch's checks of lu_solve's pivots against LU ([..., n, n]): int32 of
 * LU's batch dims and n, every value in [1, n] (read back). */
static clt_status check_pivots(const char *fn, const clt_tensor *lu, const clt_tensor *piv)
{
    clt_status st = clt__same_device(lu, piv, fn);
    if (st != CLT_OK)
        return st;
    if (piv->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected pivots to be a tensor of type int32, but got %s", fn,
                          clt_dtype_name(piv->dtype));
    int64_t n = lu->shape[lu->ndim - 1];
    bool fits = piv->ndim == lu->ndim - 1 && piv->shape[piv->ndim - 1] == n;
    for (int d = 0; fits && d < piv->ndim - 1; d++)
        fits = piv->shape[d] == lu->shape[d];
    if (!fits)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                          "pivots with %d dims for LU with %d",
                          fn, piv->ndim, lu->ndim);
    if (piv->numel == 0)
        return CLT_OK;
    clt_tensor *pc = NULL;
    int *host = malloc((size_t)piv->numel * sizeof *host);
    if (host == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory for %lld pivots",
                          fn, (long long)piv->numel);
    st = clt__contiguous_as(fn, piv, CLT_INT32, &pc);
    if (st == CLT_OK)
        st = clt__tensor_read_at(pc, host, (size_t)piv->numel * sizeof *host, fn,
                                 __builtin_return_address(0));
    for (int64_t i = 0; st == CLT_OK && i < piv->numel; i++)
        if (host[i] < 1 || host[i] > n)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: pivots[%lld] = %d is outside [1, %lld]", fn, (long long)i,
                            host[i], (long long)n);
    free(host);
    clt_tensor_free(pc);
    return st;
}

/* A X = B (adjoint: A^T X = B) for A = P L U, recorded, in the caller's
 * scope: X = U^-1 L^-1 P^T B, or P L^-T U^-T B. */
static clt_status lu_solve_left(const char *fn, const clt_tensor *lu, const clt_tensor *P,
                                const clt_tensor *b, bool adjoint, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *pt, *y, *z, *lt;
    if (!adjoint) {
        CLT__TRY(clt__transpose_rec(fn, P, -2, -1, &pt));
        CLT__TRY(clt__matmul_rec(fn, pt, b, &y));
        CLT__TRY(solve_triangular_rec(fn, lu, y, false, true, true, &z));
        CLT__TRY(solve_triangular_rec(fn, lu, z, true, true, false, out));
    } else {
        CLT__TRY(clt__transpose_rec(fn, lu, -2, -1, &lt));
        CLT__TRY(solve_triangular_rec(fn, lt, b, false, true, false, &z));
        CLT__TRY(solve_triangular_rec(fn, lt, z, true, true, true, &y));
        CLT__TRY(clt__matmul_rec(fn, P, y, out));
    }
done:
    return st;
}

clt_status clt_linalg_lu_solve(const clt_tensor *lu, const clt_tensor *pivots,
                               const clt_tensor *b, int left, int adjoint, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_lu_solve";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(lu, fn);
    CLT__REQUIRE_ARG(pivots, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__linalg_check(lu, "LU", true, fn);
    if (st == CLT_OK)
        st = check_pivots(fn, lu, pivots);
    /* the shapes and dtypes of B as the solves check them, before anything
     * is computed */
    clt_tensor *probe = NULL;
    if (st == CLT_OK && (b->ndim < 2 || b->dtype != lu->dtype || b->dev != lu->dev ||
                         b->shape[b->ndim - (left ? 2 : 1)] != lu->shape[lu->ndim - 1])) {
        st = clt__linalg_solve_triangular(lu, b, false, left != 0, true, &probe, fn);
        clt_tensor_free(probe);
    }
    if (st == CLT_OK)
        st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *P, *bt, *xt;
    CLT__TRY(clt__linalg_lu_perm(pivots, lu->shape[lu->ndim - 1], lu->dtype, &P, fn));
    if (left) {
        CLT__TRY(lu_solve_left(fn, lu, P, b, adjoint != 0, out));
    } else { /* X A = B: A^T X^T = B^T */
        CLT__TRY(clt__transpose_rec(fn, b, -2, -1, &bt));
        CLT__TRY(lu_solve_left(fn, lu, P, bt, adjoint == 0, &xt));
        CLT__TRY(clt__transpose_rec(fn, xt, -2, -1, out));
    }
done:
    return clt__scope_finish(st, out);
}

/* ---- Cholesky solves ------------------------------------------------------- */

/* A X = B for A = L L^T (upper: U^T U), two triangular solves. */
static clt_status chol_solve(const char *fn, const clt_tensor *b, const clt_tensor *l, bool upper,
                             clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *lt = NULL, *y = NULL;
    CLT__TRY(clt__transpose(l, -2, -1, &lt, fn));
    CLT__TRY(clt__linalg_solve_triangular(upper ? lt : l, b, false, true, false, &y, fn));
    CLT__TRY(clt__linalg_solve_triangular(upper ? l : lt, y, true, true, false, out, fn));
done:
    clt_tensor_free(lt);
    clt_tensor_free(y);
    return st;
}

/* -(L C) (upper) or -(C L): the gradient of L for the symmetric C that
 * torch's cholesky_solve_backward and cholesky_inverse_backward build. */
static clt_status chol_l_grad(const clt_tensor *l, const clt_tensor *c, bool upper,
                              clt_tensor **out)
{
    clt_tensor *p = NULL;
    clt_status st = upper ? clt__matmul_rec(bw_fn, l, c, &p) : clt__matmul_rec(bw_fn, c, l, &p);
    if (st == CLT_OK)
        st = clt__neg_rec(bw_fn, p, out);
    clt_tensor_free(p);
    return st;
}

/* C + C^T, symmetric. */
static clt_status sym(const clt_tensor *c, clt_tensor **out)
{
    clt_tensor *ct = NULL;
    clt_status st = mT(c, &ct);
    if (st == CLT_OK)
        st = clt__add_rec(bw_fn, c, ct, out);
    clt_tensor_free(ct);
    return st;
}

static clt_status cholesky_solve_rec(const char *fn, const clt_tensor *b, const clt_tensor *l,
                                     bool upper, clt_tensor **out);

/* saved: L, X; i[0] upper.  torch's: gB = cholesky_solve(g, L), and gL
 * from C = gB X^T + X gB^T. */
static clt_status bw_cholesky_solve(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    bool upper = n->i[0];
    clt_tensor *t[4] = {NULL};
    CLT__TRY(cholesky_solve_rec(bw_fn, g, S(0), upper, &t[0]));
    if (CLT__NEED(n, 1)) {
        CLT__TRY(mT(S(1), &t[1]));
        CLT__TRY(clt__matmul_rec(bw_fn, t[0], t[1], &t[2]));
        CLT__TRY(sym(t[2], &t[3]));
        CLT__TRY(chol_l_grad(S(0), t[3], upper, &gin[1]));
    }
    if (CLT__NEED(n, 0))
        gin[0] = t[0], t[0] = NULL;
done:
    free_all(t, 4);
    return st;
}

static clt_status cholesky_solve_rec(const char *fn, const clt_tensor *b, const clt_tensor *l,
                                     bool upper, clt_tensor **out)
{
    clt_status st = chol_solve(fn, b, l, upper, out);
    const clt_tensor *in[2] = {b, l}, *saved[2] = {l, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, "CholeskySolveBackward0", bw_cholesky_solve, 2, in, 2, saved, &n);
    if (n)
        n->i[0] = upper;
    clt__twice(n);
    return st;
}

clt_status clt_cholesky_solve(const clt_tensor *b, const clt_tensor *l, int upper,
                              clt_tensor **out)
{
    CLT__AUTOCAST("clt_cholesky_solve", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (b, l),
                  clt_cholesky_solve(CLT__AC(0), CLT__AC(1), upper, out));
    static const char fn[] = "clt_cholesky_solve";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(b, fn);
    CLT__REQUIRE_ARG(l, fn);
    return cholesky_solve_rec(fn, b, l, upper != 0, out);
}

/* saved: L, the inverse; i[0] upper.  torch's: gL from C = inv (g + g^T)
 * inv. */
static clt_status bw_cholesky_inverse(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *t[3] = {NULL};
    CLT__TRY(sym(g, &t[0]));
    CLT__TRY(clt__matmul_rec(bw_fn, t[0], S(1), &t[1]));
    CLT__TRY(clt__matmul_rec(bw_fn, S(1), t[1], &t[2]));
    CLT__TRY(chol_l_grad(S(0), t[2], n->i[0] != 0, &gin[0]));
done:
    free_all(t, 3);
    return st;
}

clt_status clt_cholesky_inverse(const clt_tensor *l, int upper, clt_tensor **out)
{
    CLT__AUTOCAST("clt_cholesky_inverse", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (l),
                  clt_cholesky_inverse(CLT__AC(0), upper, out));
    static const char fn[] = "clt_cholesky_inverse";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(l, fn);
    clt_status st = clt__linalg_check(l, "A", true, fn);
    if (st != CLT_OK)
        return st;
    int64_t k = l->shape[l->ndim - 1];
    clt_tensor *eye = NULL;
    st = clt_eye(l->dev, l->dtype, k, k, &eye);
    if (st == CLT_OK)
        st = chol_solve(fn, eye, l, upper != 0, out);
    clt_tensor_free(eye);
    const clt_tensor *saved[2] = {l, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, "CholeskyInverseBackward0", bw_cholesky_inverse, 1, &l, 2, saved,
                     &n);
    if (n)
        n->i[0] = upper != 0;
    clt__twice(n);
    return st;
}

/* ---- matrix_exp ------------------------------------------------------------ */

static clt_status matrix_exp_rec(const char *fn, const clt_tensor *a, clt_tensor **out);

/* saved: A.  torch's: the upper right block of exp([[A^T, g], [0, A^T]]),
 * whose recorded matrix_exp differentiates it again (clt__twice). */
static clt_status bw_matrix_exp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    const clt_tensor *a = S(0);
    int64_t k = a->shape[a->ndim - 1];
    clt_tensor *at, *z, *top, *bot, *m, *e, *r;
    CLT__TRY(mT(a, &at));
    CLT__TRY(clt__full(a->dev, a->dtype, a->ndim, a->shape, 0.0, &z));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){at, g}, 2, -1, &top));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){z, at}, 2, -1, &bot));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){top, bot}, 2, -2, &m));
    CLT__TRY(matrix_exp_rec(bw_fn, m, &e));
    CLT__TRY(clt__narrow_rec(bw_fn, e, -2, 0, k, &r));
    CLT__TRY(clt__narrow_rec(bw_fn, r, -1, k, k, &gin[0]));
done:
    return clt__scope_finish(st, &gin[0]);
}

static clt_status matrix_exp_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    clt_status st = clt__linalg_matrix_exp(a, out, fn);
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgMatrixExpBackward0", bw_matrix_exp, 1, &a, 1, &a, &n);
    clt__twice(n);
    return st;
}

clt_status clt_linalg_matrix_exp(const clt_tensor *a, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_matrix_exp";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    return matrix_exp_rec(fn, a, out);
}

/* ---- tensorinv and tensorsolve ------------------------------------------- */

/* torch's requirement that the dims of a from `at` on hold as many
 * elements (*p) as `lo`, in torch's words (what: "ind" or "other.ndim"). */
static clt_status products(const char *fn, const clt_tensor *a, int at, int64_t lo,
                           const char *what, int64_t *p)
{
    int64_t hi = 1;
    for (int d = at; d < a->ndim; d++)
        hi *= a->shape[d];
    *p = hi;
    if (lo == hi)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: Expected self to satisfy the requirement prod(self.shape[%s:]) == "
                      "prod(self.shape[:%s]), but got %lld != %lld",
                      fn, what, what, (long long)hi, (long long)lo);
}

clt_status clt_linalg_tensorinv(const clt_tensor *a, int64_t ind, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_tensorinv", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_tensorinv(CLT__AC(0), ind, out));
    static const char fn[] = "clt_linalg_tensorinv";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (ind <= 0 || ind > a->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected a strictly positive integer for 'ind', at most the %d "
                          "dims of A, but got %lld",
                          fn, a->ndim, (long long)ind);
    int64_t p, shape[CLT_MAX_DIMS];
    clt_status st = products(fn, a, (int)ind, clt__linalg_count((int)ind, a->shape), "ind", &p);
    if (st == CLT_OK)
        st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int r = a->ndim - (int)ind;
    for (int d = 0; d < r; d++)
        shape[d] = a->shape[ind + d];
    for (int d = 0; d < ind; d++)
        shape[r + d] = a->shape[d];
    clt_tensor *m, *inv;
    CLT__TRY(clt__reshape_rec(fn, a, 2, (int64_t[]){p, p}, &m));
    CLT__TRY(clt__linalg_inv_rec(fn, m, &inv));
    CLT__TRY(clt__reshape_rec(fn, inv, a->ndim, shape, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_linalg_tensorsolve(const clt_tensor *a, const clt_tensor *b, const int *dims,
                                  int ndims, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_tensorsolve", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, b),
                  clt_linalg_tensorsolve(CLT__AC(0), CLT__AC(1), dims, ndims, out));
    static const char fn[] = "clt_linalg_tensorsolve";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    if (ndims > 0 && dims == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %d dims and the list NULL", fn, ndims);
    if (ndims < 0 || ndims > a->ndim || b->ndim > a->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %d dims to move and B of %d dims for A of %d dims", fn, ndims,
                          b->ndim, a->ndim);
    /* torch's movedim(dims, the last ndims places): the others keep their
     * order in front */
    int perm[CLT_MAX_DIMS], np = 0;
    bool moved[CLT_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++) {
        int d = dims[i] < 0 ? dims[i] + a->ndim : dims[i];
        if (d < 0 || d >= a->ndim)
            return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                              "%s: Dimension out of range (expected to be in range of [%d, %d], "
                              "but got %d)",
                              fn, -a->ndim, a->ndim - 1, dims[i]);
        if (moved[d])
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: movedim: repeated dim in `source`",
                              fn);
        moved[d] = true;
    }
    for (int d = 0; d < a->ndim; d++)
        if (!moved[d])
            perm[np++] = d;
    for (int i = 0; i < ndims; i++)
        perm[np++] = dims[i] < 0 ? dims[i] + a->ndim : dims[i];
    int64_t shape[CLT_MAX_DIMS], p;
    for (int d = 0; d < a->ndim; d++)
        shape[d] = a->shape[perm[d]];
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *ap, *m, *v, *x;
    CLT__TRY(clt__permute_rec(fn, a, a->ndim, perm, &ap));
    CLT__TRY(products(fn, ap, b->ndim, b->numel, "other.ndim", &p));
    CLT__TRY(clt__reshape_rec(fn, ap, 2, (int64_t[]){p, p}, &m));
    CLT__TRY(clt__reshape_rec(fn, b, 1, &p, &v));
    CLT__TRY(clt__linalg_solve_rec(fn, m, v, &x));
    CLT__TRY(clt__reshape_rec(fn, x, a->ndim - b->ndim, shape + b->ndim, out));
done:
    return clt__scope_finish(st, out);
}

/* ---- cond through the inverse ---------------------------------------------- */

clt_status clt__linalg_cond_inv(const char *fn, const clt_tensor *a, const char *ord,
                                clt_tensor **out)
{
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st == CLT_OK)
        st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *inv, *info, *bad, *b1, *b2, *safe, *na, *ni, *p;
    if (a->numel == 0) { /* torch's 0 */
        CLT__TRY(clt__error_in(clt__full(a->dev, a->dtype, a->ndim - 2, a->shape, 0.0, out), fn));
        goto done;
    }
    /* torch's: the inverse's norm, inf where A is singular (its inverse is
     * replaced by zeros first, so that the SVD of 'nuc' sees finite values
     * and the gradient there is zero) */
    CLT__TRY(clt__linalg_inv_ex_rec(fn, a, &inv, &info));
    CLT__TRY(clt__gt_scalar_in(fn, info, 0, &bad));
    CLT__TRY(clt__unsqueeze(bad, -1, &b1, fn));
    CLT__TRY(clt__unsqueeze(b1, -1, &b2, fn));
    CLT__TRY(clt__masked_fill_rec(fn, inv, b2, 0.0, &safe));
    CLT__TRY(clt__linalg_matrix_norm_rec(fn, a, ord, &na));
    CLT__TRY(clt__linalg_matrix_norm_rec(fn, safe, ord, &ni));
    CLT__TRY(clt__mul_rec(fn, na, ni, &p));
    CLT__TRY(clt__masked_fill_rec(fn, p, bad, INFINITY, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_linalg_cond_ord(const clt_tensor *a, const char *ord, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_cond_ord", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_cond_ord(CLT__AC(0), ord, out));
    static const char fn[] = "clt_linalg_cond_ord";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (ord == NULL)
        return clt__linalg_cond_rec(fn, a, 2, out);
    if (strcmp(ord, "fro") == 0 || strcmp(ord, "nuc") == 0)
        return clt__linalg_cond_inv(fn, a, ord, out);
    char *end = NULL;
    double v = strtod(ord, &end);
    if (end == ord || *end != 0 || !(v == 2 || v == -2 || v == 1 || v == -1 || isinf(v)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: linalg.cond got an invalid norm type: %s",
                          fn, ord);
    return clt__linalg_cond_rec(fn, a, v, out);
}
