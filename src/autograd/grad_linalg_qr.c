/* grad_linalg_qr.c: torch.linalg's qr (src/ops/linalg_qr.c) with its
 * backward formula, and what is composed of recorded ops around it: lstsq,
 * the vector, matrix and dispatching norms, matrix_power and multi_dot. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

static const char bw_fn[] = "clt_backward";

/* The last two dims of t swapped (a view; recorded in a pass that creates
 * a graph, as every op of the formulas that clt__twice marks here). */
static clt_status mT(const clt_tensor *t, clt_tensor **out)
{
    return clt__transpose_rec(bw_fn, t, -2, -1, out);
}

/* A handle of our own on t, its autograd state included (clt__alias makes
 * one without it: the graph would stop there).  Not a retained t: freeing
 * that with clt_tensor_free would take the reference of t's scope. */
static clt_status share(const clt_tensor *t, clt_tensor **out)
{
    return clt__alias_history(t, out);
}

/* ---- qr ------------------------------------------------------------------- */

/* gA of A = Q R with R square ([..., k, k], Q [..., m, k], m >= k) from gQ
 * and gR (either may be NULL): torch's linalg_qr_backward,
 * (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T, with syminvadj(X) = X +
 * X^T on the diagonal halved, which on an upper triangle is triu(X) +
 * triu(X, 1)^T.  R^-T is applied as solve(R, .^T)^T (LU on a triangle
 * swaps no rows). */
static clt_status square_grad(const clt_tensor *Q, const clt_tensor *R, const clt_tensor *gQ,
                              const clt_tensor *gR, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *a = NULL, *b = NULL, *mm = NULL, *u = NULL, *l = NULL, *lt = NULL,
               *s = NULL, *x = NULL, *y = NULL, *xt = NULL, *z = NULL;
    if (gR) {
        CLT__TRY(mT(R, &t));
        CLT__TRY(clt__matmul_rec(bw_fn, gR, t, &a));
        clt_tensor_free(t);
        t = NULL;
    }
    if (gQ) {
        CLT__TRY(mT(Q, &t));
        CLT__TRY(clt__matmul_rec(bw_fn, t, gQ, &b));
    }
    CLT__TRY(a && b ? clt__sub_rec(bw_fn, a, b, &mm) : a ? clt__alias_grad(a, &mm)
                                                       : clt__neg_rec(bw_fn, b, &mm));
    CLT__TRY(clt_triu(mm, 0, &u));
    CLT__TRY(clt_triu(mm, 1, &l));
    CLT__TRY(mT(l, &lt));
    CLT__TRY(clt__add_rec(bw_fn, u, lt, &s));
    CLT__TRY(clt__matmul_rec(bw_fn, Q, s, &x));
    if (gQ)
        CLT__TRY(clt__add_rec(bw_fn, x, gQ, &y));
    CLT__TRY(mT(y ? y : x, &xt));
    CLT__TRY(clt__linalg_solve_rec(bw_fn, R, xt, &z));
    CLT__TRY(mT(z, out));
done:
    clt_tensor_free(t);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(mm);
    clt_tensor_free(u);
    clt_tensor_free(l);
    clt_tensor_free(lt);
    clt_tensor_free(s);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(xt);
    clt_tensor_free(z);
    return st;
}

/* The gradient of A for R [..., m, n], m < n, from gQ and gR (either may
 * be NULL): with A = Q (R1 | R2), R1 square, R2 = Q^T A2, so gA2 = Q gR2
 * and Q receives A2 gR2^T more; then A1 = Q R1 is a square QR. */
static clt_status wide_grad(const clt_tensor *Q, const clt_tensor *R, const clt_tensor *gQ,
                            const clt_tensor *gR, clt_tensor **out)
{
    clt_status st = CLT_OK;
    int nd = R->ndim;
    int64_t m = R->shape[nd - 2], n = R->shape[nd - 1], shape[CLT_MAX_DIMS];
    clt_tensor *r1 = NULL, *r2 = NULL, *g1 = NULL, *g2 = NULL, *a2 = NULL, *g2t = NULL,
               *gq = NULL, *gqs = NULL, *ga[2] = {NULL, NULL};
    CLT__TRY(clt__narrow_rec(bw_fn, R, -1, 0, m, &r1));
    if (gR) {
        CLT__TRY(clt__narrow_rec(bw_fn, R, -1, m, n - m, &r2));
        CLT__TRY(clt__narrow_rec(bw_fn, gR, -1, 0, m, &g1));
        CLT__TRY(clt__narrow_rec(bw_fn, gR, -1, m, n - m, &g2));
        CLT__TRY(clt__matmul_rec(bw_fn, Q, g2, &ga[1]));
        CLT__TRY(clt__matmul_rec(bw_fn, Q, r2, &a2));
        CLT__TRY(mT(g2, &g2t));
        CLT__TRY(clt__matmul_rec(bw_fn, a2, g2t, &gq));
        if (gQ)
            CLT__TRY(clt__add_rec(bw_fn, gq, gQ, &gqs));
    } else {
        memcpy(shape, R->shape, sizeof shape);
        shape[nd - 1] = n - m;
        CLT__TRY(clt__full(R->dev, R->dtype, nd, shape, 0.0, &ga[1]));
    }
    CLT__TRY(square_grad(Q, r1, gqs ? gqs : gR ? gq : gQ, g1, &ga[0]));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *const *)ga, 2, -1, out));
done:
    clt_tensor_free(r1);
    clt_tensor_free(r2);
    clt_tensor_free(g1);
    clt_tensor_free(g2);
    clt_tensor_free(a2);
    clt_tensor_free(g2t);
    clt_tensor_free(gq);
    clt_tensor_free(gqs);
    clt_tensor_free(ga[0]);
    clt_tensor_free(ga[1]);
    return st;
}

/* One node of the outputs Q and R; saved: Q, R (in mode r, R's node alone
 * with nothing saved); i[1] the mode.  Recorded in a pass that creates a
 * graph (clt__twice). */
static clt_status bw_qr(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g; /* read with the other output's below */
    if (n->i[1] == CLT__QR_R)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The derivative of linalg.qr depends on Q, which is not computed "
                          "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                          "going to differentiate through linalg.qr.",
                          bw_fn);
    const clt_tensor *Q = S(0), *R = S(1);
    int64_t m = Q->shape[Q->ndim - 2], cols = R->shape[R->ndim - 1];
    if (n->i[1] == CLT__QR_COMPLETE && m > cols)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The QR decomposition is not differentiable when mode='complete' "
                          "and nrows > ncols.",
                          bw_fn);
    const clt_tensor *gQ = clt__node_grad(n, 0), *gR = clt__node_grad(n, 1);
    return m >= cols ? square_grad(Q, R, gQ, gR, &gin[0]) : wide_grad(Q, R, gQ, gR, &gin[0]);
}

static clt_status parse_mode(const char *mode, clt__qr_mode *md, const char *fn)
{
    if (mode == NULL || strcmp(mode, "reduced") == 0)
        *md = CLT__QR_REDUCED;
    else if (strcmp(mode, "complete") == 0)
        *md = CLT__QR_COMPLETE;
    else if (strcmp(mode, "r") == 0)
        *md = CLT__QR_R;
    else
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: qr received unrecognized mode '%s' but expected one of "
                          "'reduced' (default), 'r', or 'complete'",
                          fn, mode);
    return CLT_OK;
}

/* clt_linalg_qr recorded, naming fn; q and r checked. */
static clt_status qr_rec(const char *fn, const clt_tensor *a, clt__qr_mode md, clt_tensor **q,
                         clt_tensor **r)
{
    clt_status st = clt__linalg_qr(a, md, q, r, fn);
    if (st != CLT_OK)
        return st;
    clt__node *n = NULL;
    if (md == CLT__QR_R) {
        st = clt__record(st, r, "LinalgQrBackward0", bw_qr, 1, &a, 0, NULL, &n);
    } else {
        clt_tensor *outs[2] = {*q, *r};
        st = clt__record_outputs(outs, 2, "LinalgQrBackward0", bw_qr, 1, &a, NULL, free, &n);
        if (st == CLT_OK && n)
            st = clt__node_save(n, 2, (const clt_tensor *const *)outs);
        clt__twice(n);
    }
    if (n)
        n->i[1] = md;
    if (st != CLT_OK) {
        clt_tensor_free(*q);
        clt_tensor_free(*r);
        *q = *r = NULL;
    }
    return st;
}

clt_status clt_linalg_qr(const clt_tensor *a, const char *mode, clt_tensor **q, clt_tensor **r)
{
    CLT__AUTOCAST("clt_linalg_qr", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_qr(CLT__AC(0), mode, q, r));
    static const char fn[] = "clt_linalg_qr";
    if (q)
        *q = NULL;
    if (r)
        *r = NULL;
    CLT__REQUIRE_ARG(q, fn);
    CLT__REQUIRE_ARG(r, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt__qr_mode md = CLT__QR_REDUCED;
    clt_status st = parse_mode(mode, &md, fn);
    return st == CLT_OK ? qr_rec(fn, a, md, q, r) : st;
}

/* ---- lstsq ------------------------------------------------------------------ */

/* torch.linalg.lstsq's drivers. */
typedef enum lstsq_driver { GELSY, GELSD, GELSS, GELS } lstsq_driver;

/* The empty [0] tensor of dtype dt that torch hands out for an output its
 * driver does not compute. */
static clt_status empty_of(clt_device *dev, clt_dtype dt, clt_tensor **out, const char *fn)
{
    return clt__error_in(clt__full(dev, dt, 1, (int64_t[]){0}, 0.0, out), fn);
}

/* Whether every value of the int64 tensor r is n (read back: waits). */
static clt_status all_equal(const clt_tensor *r, int64_t n, bool *yes, const char *fn)
{
    clt_tensor *mn = NULL;
    double v = n;
    clt_status st = r->numel == 0 ? CLT_OK : clt__amax(r, NULL, 0, 0, false, &mn, fn);
    if (st == CLT_OK && mn)
        st = clt_tensor_item(mn, &v) == CLT_OK ? CLT_OK
                                                : clt__error(CLT_ERR_INVALID_ARGUMENT,
                                                             "%s: reading the rank back: %s", fn,
                                                             clt_last_error());
    clt_tensor_free(mn);
    *yes = v == (double)n;
    return st;
}

/* torch.linalg.lstsq: the minimum-norm solution pinv(A) B (recorded), and
 * what the driver hands out besides (res, rank, sv may be NULL). */
static clt_status lstsq(const char *fn, const clt_tensor *a, const clt_tensor *b,
                        const double *rcond, const char *driver, clt_tensor **solution,
                        clt_tensor **res, clt_tensor **rank, clt_tensor **sv)
{
    clt_status st = clt__same_device(a, b, fn);
    if (st == CLT_OK)
        st = clt__linalg_check(a, "A", false, fn);
    if (st != CLT_OK)
        return st;
    if (b->dtype != a->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected input and other to have the same dtype, but got "
                          "input's dtype %s and other's dtype %s",
                          fn, clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    int diff = a->ndim - b->ndim;
    if (diff < 0 || diff > 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: input.dim() must be greater or equal to other.dim() and "
                          "(input.dim() - other.dim()) <= 1",
                          fn);
    bool vec = diff == 1;
    int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
    if (b->shape[b->ndim - (vec ? 1 : 2)] != m)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: input.size(-2) should match other.size(%d)",
                          fn, vec ? -1 : -2);
    static const char *const names[] = {"gelsy", "gelsd", "gelss", "gels"};
    lstsq_driver d = GELSY;
    if (driver) {
        while (d <= GELS && strcmp(driver, names[d]) != 0)
            d++;
        if (d > GELS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: parameter `driver` should be one of (gels, gelsy, gelsd, "
                              "gelss)",
                              fn);
    }
    /* torch's default rcond: eps of the dtype times max(m, n); LAPACK takes
     * a negative one as machine precision */
    double eps = a->dtype == CLT_FLOAT32 ? 0x1p-23 : 0x1p-52;
    double rt = rcond == NULL ? eps * (double)(m > n ? m : n) : *rcond < 0 ? eps : *rcond;
    st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *bu, *pinv, *x, *r = NULL, *s = NULL, *ax, *dd, *sq, *e = NULL, *keep[4] = {NULL};
    const clt_tensor *bm = b; /* borrowed: the scope owns what is made here */
    int nk = 0;
    if (vec) {
        CLT__TRY(clt__unsqueeze_rec(fn, b, -1, &bu));
        bm = bu;
    }
    CLT__TRY(clt__linalg_pinv_rec(fn, a, NULL, &rt, false, &pinv));
    CLT__TRY(clt__matmul_rec(fn, pinv, bm, &x));
    if (vec)
        CLT__TRY(clt__squeeze_rec(fn, x, -1, solution));
    else
        *solution = x;
    if (rank)
        CLT__TRY(d == GELS ? empty_of(a->dev, CLT_INT64, &r, fn)
                           : clt__linalg_matrix_rank_in(fn, a, NULL, &rt, false, &r));
    if (sv) {
        if (d == GELSD || d == GELSS)
            CLT__TRY(clt__linalg_svd(a, false, false, NULL, &s, NULL, fn));
        else
            CLT__TRY(empty_of(a->dev, a->dtype, &s, fn));
    }
    if (res) {
        /* the squared residuals where torch's drivers give them: m > n, and
         * for gelsd and gelss every matrix of full rank */
        bool full = d == GELS;
        if (m > n && (d == GELSD || d == GELSS)) {
            clt_tensor *rk = r;
            if (rk == NULL)
                CLT__TRY(clt__linalg_matrix_rank_in(fn, a, NULL, &rt, false, &rk));
            CLT__TRY(all_equal(rk, n, &full, fn));
        }
        if (m > n && full) {
            CLT__TRY(clt__matmul_rec(fn, a, x, &ax));
            CLT__TRY(clt__sub_rec(fn, ax, bm, &dd));
            CLT__TRY(clt__mul_rec(fn, dd, dd, &sq));
            CLT__TRY(clt__sum_dim_rec(fn, sq, -2, 0, &e));
        } else {
            CLT__TRY(empty_of(a->dev, a->dtype, &e, fn));
        }
    }
    if (vec && e && e->ndim > 1) {
        clt_tensor *e1 = e;
        CLT__TRY(clt__squeeze_rec(fn, e1, -1, &e));
    }
    keep[0] = *solution, keep[1] = e, keep[2] = r, keep[3] = s;
    for (; nk < 4 && st == CLT_OK; nk++)
        if (keep[nk])
            st = clt_scope_keep(keep[nk]);
done:
    clt_scope_end();
    if (st != CLT_OK) { /* those kept already are the caller's to release */
        for (int i = 0; i + 1 < nk; i++)
            clt_tensor_free(keep[i]);
        *solution = NULL;
        return st;
    }
    if (res)
        *res = e;
    if (rank)
        *rank = r;
    if (sv)
        *sv = s;
    return clt__ok();
}

clt_status clt_linalg_lstsq(const clt_tensor *a, const clt_tensor *b, clt_tensor **solution)
{
    CLT__AUTOCAST("clt_linalg_lstsq", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, b),
                  clt_linalg_lstsq(CLT__AC(0), CLT__AC(1), solution));
    static const char fn[] = "clt_linalg_lstsq";
    CLT__REQUIRE_ARG(solution, fn);
    *solution = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    return lstsq(fn, a, b, NULL, NULL, solution, NULL, NULL, NULL);
}

clt_status clt_linalg_lstsq_ex(const clt_tensor *a, const clt_tensor *b, const double *rcond,
                               const char *driver, clt_tensor **solution, clt_tensor **residuals,
                               clt_tensor **rank, clt_tensor **singular_values)
{
    CLT__AUTOCAST("clt_linalg_lstsq_ex", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, b),
                  clt_linalg_lstsq_ex(CLT__AC(0), CLT__AC(1), rcond, driver, solution, residuals,
                                      rank, singular_values));
    static const char fn[] = "clt_linalg_lstsq_ex";
    clt_tensor **outs[4] = {solution, residuals, rank, singular_values};
    for (int i = 0; i < 4; i++)
        if (outs[i])
            *outs[i] = NULL;
    CLT__REQUIRE_ARG(solution, fn);
    CLT__REQUIRE_ARG(residuals, fn);
    CLT__REQUIRE_ARG(rank, fn);
    CLT__REQUIRE_ARG(singular_values, fn);
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    return lstsq(fn, a, b, rcond, driver, solution, residuals, rank, singular_values);
}

/* ---- norms ------------------------------------------------------------------ */

/* torch.linalg.vector_norm over the dims of a list (ndims 0: every dim),
 * recorded, naming fn: one dim is the norm along it; several are permuted
 * to the end and merged into one first (a copy unless they are already
 * laid out that way). */
static clt_status vector_norm(const char *fn, const clt_tensor *a, double ord, const int *dims,
                              int ndims, int keepdim, clt_tensor **out)
{
    *out = NULL;
    unsigned mask;
    clt_status st = clt__dims_mask(a, dims, ndims, &mask, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim, nr = __builtin_popcount(mask), perm[CLT_MAX_DIMS], np = 0, kept = 0;
    int64_t shape[CLT_MAX_DIMS], ones[CLT_MAX_DIMS], merged = 1;
    if (nr == 1 && nd > 0)
        return clt__vector_norm_dim_rec(fn, a, ord, __builtin_ctz(mask), keepdim, out);
    for (int d = 0; d < nd; d++) {
        ones[d] = mask & (1u << d) ? 1 : a->shape[d];
        if (!(mask & (1u << d))) {
            perm[np++] = d;
            shape[kept++] = a->shape[d];
        }
    }
    for (int d = 0; d < nd; d++)
        if (mask & (1u << d)) {
            perm[np++] = d;
            merged *= a->shape[d];
        }
    shape[kept] = merged;
    clt_tensor *p = NULL, *flat = NULL, *y = NULL;
    CLT__TRY(clt__permute_rec(fn, a, nd, perm, &p));
    CLT__TRY(clt__reshape_rec(fn, p, kept + 1, shape, &flat));
    CLT__TRY(clt__vector_norm_dim_rec(fn, flat, ord, -1, 0, &y));
    if (keepdim && nd > 0)
        CLT__TRY(clt__reshape_rec(fn, y, nd, ones, out));
    else
        *out = y, y = NULL;
done:
    clt_tensor_free(p);
    clt_tensor_free(flat);
    clt_tensor_free(y);
    return st;
}

clt_status clt_linalg_vector_norm(const clt_tensor *x, double ord, const int *dims, int ndims,
                                  int keepdim, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_vector_norm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    if (clt__dtype_is_complex(x->dtype)) { /* the norm of |x|, as torch */
        clt_tensor *m = NULL;
        clt_status st = clt__complex_abs_rec(x, &m, fn);
        if (st == CLT_OK)
            st = vector_norm(fn, m, ord, dims, ndims, keepdim != 0, out);
        clt_tensor_free(m);
        return st;
    }
    return vector_norm(fn, x, ord, dims, ndims, keepdim != 0, out);
}

/* A norm's order as torch takes it: "fro" and "nuc" (*word 1 and 2), or a
 * number, "inf" and "-inf" included (*word 0). */
static clt_status parse_ord(const char *ord, int *word, double *v, const char *fn)
{
    *word = 0;
    *v = 0;
    if (strcmp(ord, "fro") == 0 || strcmp(ord, "nuc") == 0) {
        *word = ord[0] == 'f' ? 1 : 2;
        return CLT_OK;
    }
    char *end = NULL;
    *v = strtod(ord, &end);
    if (end == ord || *end != 0 || isnan(*v))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: order '%s' is neither 'fro', 'nuc' nor a number", fn, ord);
    return CLT_OK;
}

/* The nuclear norm (which 0) or the largest (1) or smallest (-1) singular
 * value of a's matrices over the distinct dims w0, w1, as torch's: the
 * singular values of a with (w0, w1) moved last, then their sum, amax or
 * amin; with keepdim, size-1 dims put back at w0 and w1. */
static clt_status svd_norm(const char *fn, const clt_tensor *a, int which, int w0, int w1,
                           bool keepdim, clt_tensor **out)
{
    int perm[CLT_MAX_DIMS], k = 0, last = -1;
    for (int d = 0; d < a->ndim; d++)
        if (d != w0 && d != w1)
            perm[k++] = d;
    perm[k++] = w0;
    perm[k++] = w1;
    clt_tensor *p = NULL, *s = NULL, *r = NULL, *u = NULL;
    clt_status st;
    CLT__TRY(clt__permute_rec(fn, a, a->ndim, perm, &p));
    CLT__TRY(clt__linalg_svdvals_rec(fn, p, &s));
    if (which == 0)
        CLT__TRY(clt__error_in(clt_sum_dim(s, -1, 0, &r), fn));
    else
        CLT__TRY(clt__amax_rec(s, &last, 1, 0, which > 0, &r, fn));
    if (keepdim) {
        CLT__TRY(clt__unsqueeze_rec(fn, r, w0 < w1 ? w0 : w1, &u));
        clt_tensor_free(r);
        r = u;
        u = NULL;
        CLT__TRY(clt__unsqueeze_rec(fn, r, w0 < w1 ? w1 : w0, &u));
        clt_tensor_free(r);
        r = u;
        u = NULL;
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(p);
    clt_tensor_free(s);
    clt_tensor_free(r);
    return st;
}

/* torch.linalg.matrix_norm with ord parsed, over dims d0, d1. */
static clt_status matrix_norm(const char *fn, const clt_tensor *a, const char *ord, int word,
                              double v, int d0, int d1, int keepdim, clt_tensor **out)
{
    *out = NULL;
    if (a->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The input tensor A must have at least 2 dimensions.", fn);
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected a floating point tensor as input. Got %s", fn,
                          clt_dtype_name(a->dtype));
    int w0, w1;
    clt_status st = clt__wrap_dim(d0, a->ndim, &w0, fn);
    if (st == CLT_OK)
        st = clt__wrap_dim(d1, a->ndim, &w1, fn);
    if (st != CLT_OK)
        return st;
    if (w0 == w1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: dims must be different. Got (%d, %d)",
                          fn, d0, d1);
    int dd[2] = {w0, w1};
    if (word == 1)
        return vector_norm(fn, a, 2, dd, 2, keepdim, out);
    double av = fabs(v);
    if (word == 2 || av == 2)
        return svd_norm(fn, a, word == 2 ? 0 : v > 0 ? 1 : -1, w0, w1, keepdim, out);
    if (av != 1 && !isinf(av))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Order %s not supported.", fn, ord);
    /* torch's: the 1-norm of each column, then the largest (smallest for
     * a negative ord) of them; inf is 1 on the transpose */
    if (isinf(av)) {
        dd[0] = w1;
        dd[1] = w0;
    }
    if (!keepdim && dd[0] < dd[1])
        dd[1]--;
    clt_tensor *s = NULL;
    st = clt__vector_norm_dim_rec(fn, a, 1, dd[0], keepdim, &s);
    if (st == CLT_OK)
        st = clt__amax_rec(s, &dd[1], 1, keepdim, v > 0, out, fn);
    clt_tensor_free(s);
    return st;
}

clt_status clt__linalg_matrix_norm_rec(const char *fn, const clt_tensor *a, const char *ord,
                                       clt_tensor **out)
{
    *out = NULL;
    int word;
    double v;
    clt_status st = parse_ord(ord, &word, &v, fn);
    return st == CLT_OK ? matrix_norm(fn, a, ord, word, v, -2, -1, false, out) : st;
}

clt_status clt_linalg_matrix_norm(const clt_tensor *a, const char *ord, const int *dims,
                                  int keepdim, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_matrix_norm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(ord, fn);
    int word;
    double v;
    clt_status st = parse_ord(ord, &word, &v, fn);
    if (st != CLT_OK)
        return st;
    return matrix_norm(fn, a, ord, word, v, dims ? dims[0] : -2, dims ? dims[1] : -1,
                       keepdim != 0, out);
}

clt_status clt_linalg_norm(const clt_tensor *a, const char *ord, const int *dims, int ndims,
                           int keepdim, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_norm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (ndims > 0 && dims == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %d dims and the list NULL", fn, ndims);
    if (ndims < 0 || ndims > 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: If dim is specified, it must be of length 1 or 2. Got %d dims", fn,
                          ndims);
    int word = 0;
    double v = 2;
    if (ord) {
        clt_status st = parse_ord(ord, &word, &v, fn);
        if (st != CLT_OK)
            return st;
        if (ndims == 0 && a->ndim != 1 && a->ndim != 2)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: If dim is not specified but ord is, the input must be 1D or "
                              "2D. Got %dD.",
                              fn, a->ndim);
    }
    /* torch's dispatch: a matrix norm for a word, or for a number over two
     * dims (given, or those of a 2-D input); a vector norm otherwise */
    if (word && ndims == 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the '%s' norm needs 2 dims, got 1", fn,
                          ord);
    if (ord && (word || ndims == 2 || (ndims == 0 && a->ndim == 2)))
        return matrix_norm(fn, a, ord, word, v, ndims ? dims[0] : 0, ndims ? dims[1] : 1,
                           keepdim != 0, out);
    return vector_norm(fn, a, v, dims, ndims, keepdim != 0, out);
}

/* ---- matrix_power, multi_dot ---------------------------------------------------- */

/* *acc := *acc @ b, recorded. */
static clt_status times(const char *fn, clt_tensor **acc, const clt_tensor *b)
{
    clt_tensor *t = NULL;
    clt_status st = clt__matmul_rec(fn, *acc, b, &t);
    if (st == CLT_OK) {
        clt_tensor_free(*acc);
        *acc = t;
    }
    return st;
}

clt_status clt_linalg_matrix_power(const clt_tensor *a, int64_t n, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_matrix_power";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *base = NULL, *z = NULL, *res = NULL, *one = NULL;
    if (n == 0) { /* the identity, as torch's, which records no gradient */
        CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 1.0, &one));
        CLT__TRY(clt__diagonal_scatter(one, a->ndim, a->shape, 0, -2, -1, out, fn));
        goto done;
    }
    if (n < 0)
        CLT__TRY(clt_linalg_inv(a, &base));
    else /* a handle of its own, as z's and res's below */
        CLT__TRY(clt__alias_history(a, &base));
    uint64_t k = n < 0 ? -(uint64_t)n : (uint64_t)n;
    if (k == 1) {
        CLT__TRY(clt_clone(base, out));
        goto done;
    }
    /* torch's repeated squaring: z runs through base^(2^i), and res takes
     * the z of each bit of k that is set */
    while (k > 0) {
        bool bit = k & 1;
        k >>= 1;
        /* each a handle of its own (one retained and freed would take the
         * scope's reference of the other) */
        if (z)
            CLT__TRY(times(fn, &z, z));
        else
            CLT__TRY(clt__alias_history(base, &z));
        if (bit && res)
            CLT__TRY(times(fn, &res, z));
        else if (bit)
            CLT__TRY(clt__alias_history(z, &res));
    }
    *out = res;
    res = NULL;
done:
    clt_tensor_free(base);
    clt_tensor_free(z);
    clt_tensor_free(res);
    clt_tensor_free(one);
    return st;
}

/* The product of ms[i..j] in the order the split table s (n x n) gives. */
static clt_status chain(const char *fn, clt_tensor *const *ms, const size_t *s, size_t n, size_t i,
                        size_t j, clt_tensor **out)
{
    if (i == j)
        return share(ms[i], out);
    clt_tensor *l = NULL, *r = NULL;
    size_t k = s[i * n + j];
    clt_status st = chain(fn, ms, s, n, i, k, &l);
    if (st == CLT_OK)
        st = chain(fn, ms, s, n, k + 1, j, &r);
    if (st == CLT_OK)
        st = clt__matmul_rec(fn, l, r, out);
    clt_tensor_free(l);
    clt_tensor_free(r);
    return st;
}

/* torch's matrix_chain_order: the cheapest parenthesisation of the n
 * matrices of sizes p[0] x p[1], p[1] x p[2], ... (the first split of the
 * least cost where several tie), into s. */
static clt_status chain_order(const int64_t *p, size_t n, size_t *s, const char *fn)
{
    double *cost = clt__calloc(n * n, sizeof *cost);
    if (cost == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t len = 1; len < n; len++)
        for (size_t i = 0; i + len < n; i++) {
            size_t j = i + len;
            cost[i * n + j] = INFINITY;
            for (size_t k = i; k < j; k++) {
                double q = cost[i * n + k] + cost[(k + 1) * n + j] +
                           (double)p[i] * (double)p[k + 1] * (double)p[j + 1];
                if (q < cost[i * n + j]) {
                    cost[i * n + j] = q;
                    s[i * n + j] = k;
                }
            }
        }
    if (n == 3) {
        /* torch compares the two orders of three directly, (AB)C on a tie */
        double ab_c = (double)p[0] * p[2] * (p[1] + p[3]);
        double a_bc = (double)p[1] * p[3] * (p[0] + p[2]);
        s[2] = ab_c > a_bc ? 0 : 1;
    }
    free(cost);
    return CLT_OK;
}

clt_status clt_linalg_multi_dot(const clt_tensor *const *tensors, size_t n, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_multi_dot";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__AUTOCAST_LIST(fn, CLT__AC_BOTH(CLT__AC_LOWER), n, tensors,
                       clt_linalg_multi_dot(CLT__ACL, n, out));
    CLT__REQUIRE_ARG(tensors, fn);
    if (n < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: multi_dot(): expected at least 2 tensors but got %zu", fn, n);
    for (size_t i = 0; i < n; i++) {
        CLT__REQUIRE_ARG(tensors[i], fn);
        const clt_tensor *t = tensors[i];
        bool end = i == 0 || i == n - 1;
        if (end && t->ndim != 1 && t->ndim != 2)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: multi_dot(): the %s tensor must be 1D or 2D but got %dD", fn,
                              i == 0 ? "first" : "last", t->ndim);
        if (!end && t->ndim != 2)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: multi_dot(): tensor %zu must be 2D but got %dD", fn, i,
                              t->ndim);
        clt_status st = clt__same_device(tensors[0], t, fn);
        if (st != CLT_OK)
            return st;
        if (t->dtype != tensors[0]->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: multi_dot(): all tensors must have be the same dtype but "
                              "tensor 0 is %s and tensor %zu is %s",
                              fn, clt_dtype_name(tensors[0]->dtype), i,
                              clt_dtype_name(t->dtype));
    }
    clt_status st = CLT_OK;
    clt_tensor **ms = clt__calloc(n, sizeof *ms), *r = NULL;
    int64_t *p = clt__calloc(n + 1, sizeof *p);
    size_t *s = clt__calloc(n * n, sizeof *s);
    bool first1 = tensors[0]->ndim == 1, last1 = tensors[n - 1]->ndim == 1;
    if (ms == NULL || p == NULL || s == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    /* a first vector is a row, a last one a column */
    for (size_t i = 0; i < n; i++)
        if (i == 0 && first1)
            CLT__TRY(clt__unsqueeze_rec(fn, tensors[i], 0, &ms[i]));
        else if (i == n - 1 && last1)
            CLT__TRY(clt__unsqueeze_rec(fn, tensors[i], 1, &ms[i]));
        else
            CLT__TRY(share(tensors[i], &ms[i]));
    p[0] = ms[0]->shape[0];
    for (size_t i = 0; i < n; i++) {
        if (ms[i]->shape[0] != p[i]) {
            char s0[64], s1[64];
            st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "%s: multi_dot(): tensors %zu and %zu with shapes %s and %s cannot "
                            "be multiplied",
                            fn, i - 1, i,
                            clt__shape_str(s0, sizeof s0, ms[i - 1]->ndim, ms[i - 1]->shape),
                            clt__shape_str(s1, sizeof s1, ms[i]->ndim, ms[i]->shape));
            goto done;
        }
        p[i + 1] = ms[i]->shape[1];
    }
    CLT__TRY(chain_order(p, n, s, fn));
    CLT__TRY(chain(fn, ms, s, n, 0, n - 1, &r));
    if (first1 && last1) {
        clt_tensor *t = NULL;
        CLT__TRY(clt__squeeze_rec(fn, r, 0, &t));
        st = clt__squeeze_rec(fn, t, 0, out);
        clt_tensor_free(t);
    } else if (first1 || last1) {
        st = clt__squeeze_rec(fn, r, first1 ? 0 : 1, out);
    } else {
        *out = r;
        r = NULL;
    }
done:
    for (size_t i = 0; ms && i < n; i++)
        clt_tensor_free(ms[i]);
    free(ms);
    free(p);
    free(s);
    clt_tensor_free(r);
    return st;
}

/* ---- vecdot, diag_embed, block_diag ---------------------------------------------- */

clt_status clt_linalg_vecdot(const clt_tensor *x, const clt_tensor *y, int dim, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_vecdot";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(y, fn);
    if (x->dtype != y->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected x and y to have the same dtype, but found x of type %s "
                          "and y of type %s instead",
                          fn, clt_dtype_name(x->dtype), clt_dtype_name(y->dtype));
    if (!clt__dtype_is_float(x->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                          clt_dtype_name(x->dtype));
    clt_tensor *p = NULL;
    clt_status st = clt__mul_rec(fn, x, y, &p);
    if (st == CLT_OK)
        st = clt__sum_dim_rec(fn, p, dim, 0, out);
    clt_tensor_free(p);
    return st;
}

/* saved: nothing; i[0] the offset, i[1] and i[2] the wrapped dims.  The
 * input's gradient is g's diagonal (recorded in a pass that creates a
 * graph: clt__twice). */
static clt_status bw_diag_embed(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt_diagonal(g, n->i[0], (int)n->i[1], (int)n->i[2], &gin[0]);
}

clt_status clt_diag_embed(const clt_tensor *t, int64_t offset, int dim1, int dim2,
                          clt_tensor **out)
{
    static const char fn[] = "clt_diag_embed";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int nd = t->ndim + 1, w1, w2;
    if (nd > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: the result would have %d dimensions, more "
                          "than %d", fn, nd, CLT_MAX_DIMS);
    clt_status st = clt__wrap_dim(dim1, nd, &w1, fn);
    if (st == CLT_OK)
        st = clt__wrap_dim(dim2, nd, &w2, fn);
    if (st == CLT_OK && t->ndim == 0)
        st = clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                        "%s: Dimension out of range (expected to be in range of [-1, 0], but "
                        "got -1): a 0-dim input has no last dimension to embed", fn);
    if (st != CLT_OK)
        return st;
    if (w1 == w2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: diagonal dimensions cannot be identical %d, %d", fn, dim1, dim2);
    int64_t last = t->shape[t->ndim - 1], mag, size, shape[CLT_MAX_DIMS];
    if (offset == INT64_MIN || __builtin_add_overflow(last, mag = offset < 0 ? -offset : offset,
                                                      &size))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: offset %lld is too far out", fn,
                          (long long)offset);
    for (int d = 0, k = 0; d < nd; d++)
        shape[d] = d == w1 || d == w2 ? size : t->shape[k++];
    st = clt__diagonal_scatter(t, nd, shape, offset, w1, w2, out, fn);
    clt__node *n = NULL;
    st = clt__record(st, out, "DiagEmbedBackward0", bw_diag_embed, 1, &t, 0, NULL, &n);
    if (n) {
        n->i[0] = offset;
        n->i[1] = w1;
        n->i[2] = w2;
    }
    clt__twice(n);
    return st;
}

/* A block_diag operand's rows and columns: a 0-dim one is [1, 1], a 1-D
 * one a row. */
static void block_size(int ndim, const int64_t *shape, int64_t *r, int64_t *c)
{
    *r = ndim == 2 ? shape[0] : 1;
    *c = ndim == 0 ? 1 : shape[ndim - 1];
}

/* saved: nothing.  Each input's gradient is its block of g, reshaped to
 * the input's shape (the engine converts the dtype); recorded in a pass
 * that creates a graph (clt__twice). */
static clt_status bw_block_diag(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int64_t r0 = 0, c0 = 0, r, c;
    clt_tensor *rows = NULL, *blk = NULL;
    for (int k = 0; k < n->nin; k++) {
        const clt__edge *e = &n->in[k];
        block_size(e->ndim, e->shape, &r, &c);
        if (CLT__NEED(n, k)) {
            CLT__TRY(clt__narrow_rec(bw_fn, g, 0, r0, r, &rows));
            CLT__TRY(clt__narrow_rec(bw_fn, rows, 1, c0, c, &blk));
            CLT__TRY(clt__reshape_rec(bw_fn, blk, e->ndim, e->shape, &gin[k]));
            clt_tensor_free(rows);
            clt_tensor_free(blk);
            rows = blk = NULL;
        }
        r0 += r;
        c0 += c;
    }
done:
    clt_tensor_free(rows);
    clt_tensor_free(blk);
    return st;
}

clt_status clt_block_diag(const clt_tensor *const *tensors, size_t n, clt_tensor **out)
{
    static const char fn[] = "clt_block_diag";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(tensors, fn);
    if (n == 0 || n > INT_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %zu tensors: at least one is needed (it gives the device), and "
                          "at most %d",
                          fn, n, INT_MAX);
    clt_dtype dt = CLT_BOOL;
    int64_t cols = 0, r, c;
    for (size_t k = 0; k < n; k++) {
        CLT__REQUIRE_ARG(tensors[k], fn);
        const clt_tensor *t = tensors[k];
        if (t->ndim > 2)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: torch.block_diag: Input tensors must have 2 or fewer "
                              "dimensions. Input %zu has %d dimensions",
                              fn, k, t->ndim);
        clt_status st = clt__same_device(tensors[0], t, fn);
        if (st != CLT_OK)
            return st;
        dt = k == 0 ? t->dtype : clt_promote_types(dt, t->dtype);
        block_size(t->ndim, t->shape, &r, &c);
        cols += c;
    }
    clt_status st = CLT_OK;
    clt_tensor **parts = clt__calloc(n, sizeof *parts), *cv = NULL, *m = NULL;
    if (parts == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    /* each block as its rows of the result: converted, made 2-D and padded
     * with zeros left and right */
    int64_t c0 = 0;
    for (size_t k = 0; k < n; k++) {
        const clt_tensor *t = tensors[k];
        block_size(t->ndim, t->shape, &r, &c);
        CLT__TRY(clt__to_dtype(t, dt, &cv, fn));
        CLT__TRY(clt__reshape(cv, 2, (int64_t[]){r, c}, &m, fn));
        CLT__TRY(clt__pad(m, (int64_t[]){c0, cols - c0 - c}, 2, CLT_PAD_CONSTANT, 0.0, &parts[k],
                          fn));
        clt_tensor_free(cv);
        clt_tensor_free(m);
        cv = m = NULL;
        c0 += c;
    }
    CLT__TRY(clt__cat((const clt_tensor *const *)parts, n, 0, out, fn));
    clt__node *node = NULL;
    st = clt__record(st, out, "BlockDiagBackward0", bw_block_diag, (int)n, tensors, 0, NULL,
                     &node);
    clt__twice(node);
done:
    for (size_t k = 0; parts && k < n; k++)
        clt_tensor_free(parts[k]);
    free(parts);
    clt_tensor_free(cv);
    clt_tensor_free(m);
    return st;
}

/* ---- householder_product ---------------------------------------------------------- */

/* torch's checks of householder_product's A and tau. */
static clt_status check_householder(const clt_tensor *a, const clt_tensor *tau, const char *fn)
{
    clt_status st = clt__same_device(a, tau, fn);
    if (st == CLT_OK)
        st = clt__linalg_check(a, "A", false, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim;
    if (tau->dtype != a->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: tau dtype %s does not match input dtype %s",
                          fn, clt_dtype_name(tau->dtype), clt_dtype_name(a->dtype));
    if (a->shape[nd - 2] < a->shape[nd - 1])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: input.shape[-2] must be greater than or equal to input.shape[-1]",
                          fn);
    if (tau->ndim != nd - 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected tau to have one dimension less than input, but got "
                          "tau.ndim equal to %d and input.ndim is equal to %d",
                          fn, tau->ndim, nd);
    for (int d = 0; d < nd - 2; d++)
        if (tau->shape[d] != a->shape[d])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected batch dimensions of tau to be equal to "
                              "input.shape[:-2], but they differ in dim %d (%lld and %lld)",
                              fn, d, (long long)tau->shape[d], (long long)a->shape[d]);
    if (tau->shape[nd - 2] > a->shape[nd - 1])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: input.shape[-1] must be greater than or equal to tau.shape[-1]",
                          fn);
    return CLT_OK;
}

clt_status clt_linalg_householder_product(const clt_tensor *a, const clt_tensor *tau,
                                          clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_householder_product", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, tau),
                  clt_linalg_householder_product(CLT__AC(0), CLT__AC(1), out));
    static const char fn[] = "clt_linalg_householder_product";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(tau, fn);
    clt_status st = check_householder(a, tau, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim;
    int64_t m = a->shape[nd - 2], n = a->shape[nd - 1], k = tau->shape[nd - 2];
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[nd - 1] = m;
    clt_tensor *one = NULL, *ones = NULL, *low = NULL, *eye = NULL, *lv = NULL, *v = NULL,
               *q = NULL, *vk = NULL, *vt = NULL, *tk = NULL, *t2 = NULL, *w = NULL, *u = NULL,
               *p = NULL, *nq = NULL;
    /* V: the reflectors, A's part below the diagonal with 1 on it (I's
     * first n columns), as constants around A */
    CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 1.0, &one));
    CLT__TRY(clt__full(a->dev, a->dtype, 2, (int64_t[]){m, n}, 1.0, &ones));
    CLT__TRY(clt__tri(ones, -1, false, &low, fn));
    CLT__TRY(clt__diagonal_scatter(one, 2, (int64_t[]){m, n}, 0, -2, -1, &eye, fn));
    CLT__TRY(clt__mul_rec(fn, a, low, &lv));
    CLT__TRY(clt__add_rec(fn, lv, eye, &v));
    /* Q = H_0 ... H_{k-1} from the batch of identities, Q := Q - (Q v) tau v^T */
    CLT__TRY(clt__diagonal_scatter(one, nd, shape, 0, -2, -1, &q, fn));
    for (int64_t j = 0; j < k; j++) {
        CLT__TRY(clt__narrow_rec(fn, v, -1, j, 1, &vk));
        CLT__TRY(clt__transpose_rec(fn, vk, -2, -1, &vt));
        CLT__TRY(clt__narrow_rec(fn, tau, -1, j, 1, &tk));
        CLT__TRY(clt__unsqueeze_rec(fn, tk, -1, &t2));
        CLT__TRY(clt__matmul_rec(fn, q, vk, &w));
        CLT__TRY(clt__mul_rec(fn, w, t2, &u));
        CLT__TRY(clt__matmul_rec(fn, u, vt, &p));
        CLT__TRY(clt__sub_rec(fn, q, p, &nq));
        clt_tensor *tmp[] = {q, vk, vt, tk, t2, w, u, p};
        for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
            clt_tensor_free(tmp[i]);
        vk = vt = tk = t2 = w = u = p = NULL;
        q = nq;
        nq = NULL;
    }
    CLT__TRY(clt__narrow_rec(fn, q, -1, 0, n, out));
done:
    {
        clt_tensor *all[] = {one, ones, low, eye, lv, v, q, vk, vt, tk, t2, w, u, p, nq};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            clt_tensor_free(all[i]);
    }
    return st;
}
