/* grad_linalg.c: matmul, softmax and log_softmax, and the factorisations
 * inv, solve, det, slogdet and cholesky (linalg.h), with their backward
 * formulas. */
#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* The last two dims of t swapped (a view; recorded in a pass that creates
 * a graph, as every op of the formulas that clt__twice marks here). */
static clt_status mT(const clt_tensor *t, clt_tensor **out)
{
    return clt__transpose_rec("clt_backward", t, -2, -1, out);
}

/* Whether t's last two dims are stored column-major (a transpose of a
 * contiguous matrix), and its batch dims, if any, broadcast. */
static bool transposed(const clt_tensor *t)
{
    int n = t->ndim;
    if (t->shape[n - 1] <= 1 || t->shape[n - 2] <= 1)
        return false;
    for (int d = 0; d < n - 2; d++)
        if (t->shape[d] != 1 && t->strides[d] != 0)
            return false;
    return t->strides[n - 2] == 1 && t->strides[n - 1] == t->shape[n - 2];
}

/* With 1-D operands made 2-D (a as a row, b as a column) and
 * g given their size-1 dims back: da = g @ b^T and db = a^T @ g, then the
 * added dims dropped; the engine sums broadcast batch dims away (see
 * autograd.h). */
clt_status clt__matmul_grad(const clt_tensor *a, const clt_tensor *b, const clt_tensor *g,
                            bool need_a, bool need_b, clt_tensor **ga, clt_tensor **gb)
{
    clt_status st = CLT_OK;
    bool a1 = a->ndim == 1, b1 = b->ndim == 1;
    clt_tensor *A = NULL, *B = NULL, *G = NULL, *T = NULL, *R = NULL;
    int64_t gs[CLT_MAX_DIMS + 2];
    int gn = 0;
    for (int d = 0; d < g->ndim; d++)
        gs[gn++] = g->shape[d];
    if (a1) { /* the row dim goes before the column dim (or last) */
        int at = b1 ? gn : gn - 1;
        for (int d = gn; d > at; d--)
            gs[d] = gs[d - 1];
        gs[at] = 1;
        gn++;
    }
    if (b1)
        gs[gn++] = 1;
    CLT__TRY(clt__reshape_rec("clt_backward", g, gn, gs, &G));
    CLT__TRY(a1 ? clt__unsqueeze_rec("clt_backward", a, 0, &A) : clt__alias_grad(a, &A));
    CLT__TRY(b1 ? clt__unsqueeze_rec("clt_backward", b, 1, &B) : clt__alias_grad(b, &B));
    if (need_a) {
        CLT__TRY(mT(B, &T));
        CLT__TRY(clt__matmul_rec("clt_backward", G, T, &R));
        CLT__TRY(a1 ? clt__squeeze_rec("clt_backward", R, -2, ga) : clt__alias_grad(R, ga));
        clt_tensor_free(T);
        clt_tensor_free(R);
        T = R = NULL;
    }
    if (need_b) {
        if (!b1 && transposed(b)) {
            /* b is a transposed view (x @ W.T, a linear layer): compute
             * db^T = G^T @ A in W's own layout, so that the gradient reaches
             * W contiguous, with no copy. */
            clt_tensor *gt = NULL;
            CLT__TRY(mT(G, &gt));
            st = clt__matmul_rec("clt_backward", gt, A, &R);
            clt_tensor_free(gt);
            CLT__TRY(st);
            CLT__TRY(mT(R, gb));
        } else {
            CLT__TRY(mT(A, &T));
            CLT__TRY(clt__matmul_rec("clt_backward", T, G, &R));
            CLT__TRY(b1 ? clt__squeeze_rec("clt_backward", R, -1, gb) : clt__alias_grad(R, gb));
        }
    }
done:
    clt_tensor_free(A);
    clt_tensor_free(B);
    clt_tensor_free(G);
    clt_tensor_free(T);
    clt_tensor_free(R);
    return st;
}

static clt_status bw_matmul(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__matmul_grad(S(0), S(1), g, CLT__NEED(n, 0), CLT__NEED(n, 1), &gin[0], &gin[1]);
}

clt_status clt__matmul_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                           clt_tensor **out)
{
    if (a && b && out && (clt__dtype_is_complex(a->dtype) || clt__dtype_is_complex(b->dtype))) {
        clt_status st = clt__complex_matmul_rec(fn, a, b, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    const clt_tensor *in[2] = {a, b};
    clt__node *n = NULL;
    clt_status st = clt__record(clt__matmul(a, b, out, fn), out, "MmBackward0", bw_matmul, 2, in,
                                2, in, &n);
    clt__twice(n);
    return st;
}

clt_status clt_matmul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    CLT__AUTOCAST("clt_matmul", CLT__AC_BOTH(CLT__AC_LOWER), 2, (a, b),
                  clt_matmul(CLT__AC(0), CLT__AC(1), out));
    return clt__matmul_rec("clt_matmul", a, b, out);
}

/* Whether t is a row-major 2-D matrix (any offset). */
static bool rows_contiguous(const clt_tensor *t)
{
    return t->ndim == 2 && (t->shape[1] <= 1 || t->strides[1] == 1) &&
           (t->shape[0] <= 1 || t->strides[0] == t->shape[1]);
}

/* saved: x [B, in], w [out, in].  For y = x @ w^T + b: gx = g @ w,
 * gw = g^T @ x and gb = the sum of g's rows.  When the small-product
 * kernel takes gw, it writes gb in the same launch (each row of g^T summed
 * as it goes by); otherwise gb is a reduction of its own. */
static clt_status bw_linear(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    const clt_tensor *x = S(0), *w = S(1);
    clt_tensor *gt = NULL;
    int64_t B = x->shape[0], in = x->shape[1], out = w->shape[0];
    if (CLT__NEED(n, 0))
        CLT__TRY(clt__matmul_rec(fn, g, w, &gin[0]));
    bool nw = CLT__NEED(n, 1), nb = CLT__NEED(n, 2);
    if (nw && nb && !clt__creating_graph() && g->dtype == CLT_FLOAT32 && x->dtype == CLT_FLOAT32 &&
        rows_contiguous(g) && rows_contiguous(x) &&
        clt__mm_small_fits(g->dev, false, (size_t)out, (size_t)in, (size_t)B)) {
        CLT__TRY(clt__result_new(fn, g->dev, CLT_FLOAT32, 2, w->shape, &gin[1]));
        CLT__TRY(clt__result_new(fn, g->dev, CLT_FLOAT32, 1, &out, &gin[2]));
        CLT__TRY(clt__mm_small_f32(g->dev, true, (size_t)out, (size_t)in, (size_t)B,
                                   clt__mem(g), (size_t)g->offset, (size_t)out, 0, clt__mem(x),
                                   (size_t)x->offset, (size_t)in, 0, clt__mem(gin[1]), 0,
                                   (size_t)in, 0, 1, clt__mem(gin[2]), 0));
        goto done;
    }
    if (nw) {
        CLT__TRY(mT(g, &gt));
        CLT__TRY(clt__matmul_rec(fn, gt, x, &gin[1]));
    }
    if (nb)
        CLT__TRY(clt__sum_dim_rec(fn, g, 0, 0, &gin[2]));
done:
    clt_tensor_free(gt);
    return st;
}

clt_status clt__linear(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                       clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_tensor *wt = NULL, *y = NULL;
    if (b == NULL || x->ndim != 2) { /* the general composition */
        clt_status st = clt__transpose_rec(fn, w, 0, 1, &wt);
        if (st == CLT_OK)
            st = clt__matmul_rec(fn, x, wt, &y);
        if (st == CLT_OK && b)
            st = clt__add_rec(fn, y, b, out);
        else if (st == CLT_OK)
            *out = y, y = NULL;
        clt_tensor_free(wt);
        clt_tensor_free(y);
        return clt__error_in(st, fn);
    }
    clt_status st = CLT_OK;
    int64_t B = x->shape[0], I = x->shape[1], O = w->shape[0];
    if (x->dtype == CLT_FLOAT32 && w->dtype == CLT_FLOAT32 && b->dtype == CLT_FLOAT32 &&
        x->dev == w->dev && x->dev == b->dev && w->ndim == 2 && w->shape[1] == I &&
        b->ndim == 1 && b->shape[0] == O && b->strides[0] == 1 && rows_contiguous(x) &&
        rows_contiguous(w) && clt__mm_dot_fits(x->dev, (size_t)B, (size_t)O, (size_t)I)) {
        /* small: the product and the bias in one launch */
        st = clt__result_new(fn, x->dev, CLT_FLOAT32, 2, (int64_t[]){B, O}, out);
        if (st == CLT_OK)
            st = clt__mm_dot_f32(x->dev, (size_t)B, (size_t)O, (size_t)I, clt__mem(x),
                                 (size_t)x->offset, (size_t)I, clt__mem(w), (size_t)w->offset,
                                 (size_t)I, clt__mem(*out), 0, (size_t)O, clt__mem(b),
                                 (size_t)b->offset);
    } else {
        st = clt__transpose(w, 0, 1, &wt, fn);
        if (st == CLT_OK)
            st = clt__matmul(x, wt, &y, fn);
        if (st == CLT_OK)
            st = clt__add_in(fn, y, b, out);
    }
    if (st != CLT_OK) {
        clt__error_in(st, fn);
        clt_tensor_free(*out);
        *out = NULL;
    }
    clt_tensor_free(wt);
    clt_tensor_free(y);
    const clt_tensor *in[3] = {x, w, b};
    clt__node *n = NULL;
    st = clt__record(st, out, "AddmmBackward0", bw_linear, 3, in, 2, in, &n);
    clt__twice(n);
    return st;
}

/* saved: out.  softmax: out * (g - sum(g * out, dim)); log_softmax:
 * g - exp(out) * sum(g, dim).  i[0] is the dim, i[1] 1 for log_softmax. */
static clt_status bw_softmax(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt_tensor *y = S(0);
    int dim = (int)n->i[0];
    clt_tensor *t = NULL, *s = NULL, *u = NULL;
    if (n->i[1]) {
        CLT__TRY(clt__sum_dim_rec("clt_backward", g, dim, 1, &s));
        CLT__TRY(clt__exp_rec("clt_backward", y, &t));
        CLT__TRY(clt__mul_rec("clt_backward", t, s, &u));
        CLT__TRY(clt__sub_rec("clt_backward", g, u, &gin[0]));
    } else {
        CLT__TRY(clt__mul_rec("clt_backward", g, y, &t));
        CLT__TRY(clt__sum_dim_rec("clt_backward", t, dim, 1, &s));
        CLT__TRY(clt__sub_rec("clt_backward", g, s, &u));
        CLT__TRY(clt__mul_rec("clt_backward", y, u, &gin[0]));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(s);
    clt_tensor_free(u);
    return st;
}

static clt_status softmax(const char *fn, bool logmode, const clt_tensor *a, int dim,
                          clt_tensor **out)
{
    clt_status st = clt__softmax_in(fn, a, dim, logmode, CLT__SOFTMAX_AUTO, out);
    if (st != CLT_OK)
        return st;
    clt__node *n = NULL;
    const clt_tensor *y = *out;
    st = clt__record(st, out, logmode ? "LogSoftmaxBackward0" : "SoftmaxBackward0", bw_softmax,
                     1, &a, 1, &y, &n);
    if (n) {
        n->i[0] = a->ndim == 0 ? 0 : dim < 0 ? dim + a->ndim : dim;
        n->i[1] = logmode;
    }
    clt__twice(n);
    return st;
}

clt_status clt__softmax_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out)
{
    return softmax(fn, false, a, dim, out);
}

clt_status clt_softmax(const clt_tensor *a, int dim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_softmax", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_softmax(CLT__AC(0), dim, out));
    return softmax("clt_softmax", false, a, dim, out);
}

clt_status clt_log_softmax(const clt_tensor *a, int dim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_log_softmax", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_log_softmax(CLT__AC(0), dim, out));
    return softmax("clt_log_softmax", true, a, dim, out);
}

clt_status clt__log_softmax_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out)
{
    return softmax(fn, true, a, dim, out);
}

/* ---- linalg.h's factorisations (src/ops/linalg.c) ------------------------ */

/* saved: the inverse.  gA = -inv^T g inv^T, recorded in a pass that
 * creates a graph (clt__twice), as the formulas below. */
static clt_status bw_inv(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *u = NULL, *v = NULL;
    CLT__TRY(mT(S(0), &t));
    CLT__TRY(clt__matmul_rec(fn, t, g, &u));
    CLT__TRY(clt__matmul_rec(fn, u, t, &v));
    CLT__TRY(clt__neg_rec(fn, v, &gin[0]));
done:
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(v);
    return st;
}

clt_status clt_linalg_inv(const clt_tensor *a, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_inv", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_inv(CLT__AC(0), out));
    return clt__linalg_inv_rec("clt_linalg_inv", a, out);
}

clt_status clt__linalg_inv_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_inv(a, out, fn);
    const clt_tensor *y = *out;
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgInvExBackward0", bw_inv, 1, &a, 1, &y, &n);
    clt__twice(n);
    return st;
}

/* saved: A, X; i[0] 1 when B was a vector (X then lacks the last dim).
 * gB = solve(A^T, g) and gA = -gB X^T (the engine sums broadcast batch
 * dims away). */
static clt_status bw_solve(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    bool vec = n->i[0];
    clt_tensor *G = NULL, *X = NULL, *at = NULL, *gb = NULL, *xt = NULL, *p = NULL;
    CLT__TRY(vec ? clt__unsqueeze_rec(fn, g, -1, &G) : clt__alias_grad(g, &G));
    CLT__TRY(mT(S(0), &at));
    CLT__TRY(clt__linalg_solve_rec(fn, at, G, &gb));
    if (CLT__NEED(n, 1))
        CLT__TRY(vec ? clt__squeeze_rec(fn, gb, -1, &gin[1]) : clt__alias_grad(gb, &gin[1]));
    if (CLT__NEED(n, 0)) {
        CLT__TRY(vec ? clt__unsqueeze_rec(fn, S(1), -1, &X) : clt__alias_grad(S(1), &X));
        CLT__TRY(mT(X, &xt));
        CLT__TRY(clt__matmul_rec(fn, gb, xt, &p));
        CLT__TRY(clt__neg_rec(fn, p, &gin[0]));
    }
done:
    clt_tensor_free(G);
    clt_tensor_free(X);
    clt_tensor_free(at);
    clt_tensor_free(gb);
    clt_tensor_free(xt);
    clt_tensor_free(p);
    return st;
}

clt_status clt_linalg_solve(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_solve", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, b),
                  clt_linalg_solve(CLT__AC(0), CLT__AC(1), out));
    return clt__linalg_solve_rec("clt_linalg_solve", a, b, out);
}

clt_status clt__linalg_solve_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                 clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__linalg_solve(a, b, out, fn);
    const clt_tensor *in[2] = {a, b}, *saved[2] = {a, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgSolveExBackward0", bw_solve, 2, in, 2, saved, &n);
    if (n)
        n->i[0] = clt__linalg_vector_rhs(a, b);
    clt__twice(n);
    return st;
}

/* The cofactor matrices of the nb matrices A [nb, m, m] (m >= 2), all
 * singular, times g [nb]: torch's formula for a singular matrix, through
 * the SVD A = U diag(s) Vh, U diag(g det(U) det(Vh) prod_{j != i} s_j) Vh
 * (clt__prod_others keeps the zero singular values safe), recorded in a
 * pass that creates a graph. */
static clt_status det_cofactors_svd(const clt_tensor *A, const clt_tensor *g, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    int64_t nb = A->shape[0], m = A->shape[1];
    clt_tensor *u = NULL, *sv = NULL, *vh = NULL, *du = NULL, *dv = NULL, *al = NULL,
               *ga = NULL, *g2 = NULL, *d = NULL, *d3 = NULL, *ud = NULL;
    CLT__TRY(clt_linalg_svd(A, 0, &u, &sv, &vh));
    CLT__TRY(clt_linalg_det(u, &du));
    CLT__TRY(clt_linalg_det(vh, &dv));
    CLT__TRY(clt__mul_rec(fn, du, dv, &al));
    CLT__TRY(clt__mul_rec(fn, g, al, &ga));
    CLT__TRY(clt__reshape_rec(fn, ga, 2, (int64_t[]){nb, 1}, &g2));
    CLT__TRY(clt__prod_others(g2, sv, 1, &d));
    CLT__TRY(clt__reshape_rec(fn, d, 3, (int64_t[]){nb, 1, m}, &d3));
    CLT__TRY(clt__mul_rec(fn, u, d3, &ud));
    CLT__TRY(clt__matmul_rec(fn, ud, vh, out));
done:;
    clt_tensor *all[] = {u, sv, vh, du, dv, al, ga, g2, d, d3, ud};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

/* g det inv(A)^T for A [..., m, m] (every matrix invertible) and g, det
 * [...]. */
static clt_status det_grad_inv(const clt_tensor *A, const clt_tensor *g, const clt_tensor *det,
                               clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *inv = NULL, *it = NULL, *s = NULL, *s2 = NULL;
    int64_t shape[CLT_MAX_DIMS];
    CLT__TRY(clt__linalg_inv_rec(fn, A, &inv));
    CLT__TRY(mT(inv, &it));
    CLT__TRY(det ? clt__mul_rec(fn, g, det, &s) : clt__alias_grad(g, &s));
    for (int d = 0; d < s->ndim; d++)
        shape[d] = s->shape[d];
    shape[s->ndim] = shape[s->ndim + 1] = 1;
    CLT__TRY(clt__reshape_rec(fn, s, s->ndim + 2, shape, &s2));
    CLT__TRY(clt__mul_rec(fn, s2, it, out));
done:
    clt_tensor_free(inv);
    clt_tensor_free(it);
    clt_tensor_free(s);
    clt_tensor_free(s2);
    return st;
}

/* det's gradient for A [..., m, m] of which some matrices are singular
 * (sing[b] nonzero for matrix b of the nb flattened ones): the singular
 * ones' cofactors (a 1 x 1 matrix's is 1; det_cofactors_svd otherwise),
 * the others' det_grad_inv; the batch flattened, split into the two sets
 * by index_select and put back in its order by one index_select of their
 * cat, all recorded in a pass that creates a graph. */
static clt_status det_grad_singular(const clt_tensor *a, const clt_tensor *g,
                                    const clt_tensor *det, const unsigned char *sing, int64_t nb,
                                    clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    int64_t m = a->shape[a->ndim - 1], k = 0;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(2 * nb)), *back = idx + nb;
    clt_tensor *A = NULL, *g1 = NULL, *d1 = NULL, *is = NULL, *in = NULL, *ib = NULL, *As = NULL,
               *gs = NULL, *rs = NULL, *An = NULL, *gn = NULL, *dn = NULL, *rn = NULL,
               *r = NULL, *rp = NULL;
    if (idx == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (int64_t b = 0; b < nb; b++) /* the singular ones first, then the others */
        if (sing[b])
            back[b] = k, idx[k++] = b;
    for (int64_t b = 0, j = k; b < nb; b++)
        if (!sing[b])
            back[b] = j, idx[j++] = b;
    CLT__TRY(clt__reshape_rec(fn, a, 3, (int64_t[]){nb, m, m}, &A));
    CLT__TRY(clt__reshape_rec(fn, g, 1, &nb, &g1));
    CLT__TRY(clt__tensor_from_host_in(fn, a->dev, CLT_INT64, 1, &k, idx, &is));
    CLT__TRY(clt__index_select_rec(fn, g1, 0, is, &gs));
    if (m == 1) {
        CLT__TRY(clt__reshape_rec(fn, gs, 3, (int64_t[]){k, 1, 1}, &rs));
    } else {
        CLT__TRY(clt__index_select_rec(fn, A, 0, is, &As));
        CLT__TRY(det_cofactors_svd(As, gs, &rs));
    }
    if (k == nb) {
        r = rs;
        rs = NULL;
    } else {
        int64_t nn = nb - k;
        CLT__TRY(clt__reshape_rec(fn, det, 1, &nb, &d1));
        CLT__TRY(clt__tensor_from_host_in(fn, a->dev, CLT_INT64, 1, &nn, idx + k, &in));
        CLT__TRY(clt__index_select_rec(fn, A, 0, in, &An));
        CLT__TRY(clt__index_select_rec(fn, g1, 0, in, &gn));
        CLT__TRY(clt__index_select_rec(fn, d1, 0, in, &dn));
        CLT__TRY(det_grad_inv(An, gn, dn, &rn));
        CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){rs, rn}, 2, 0, &rp));
        CLT__TRY(clt__tensor_from_host_in(fn, a->dev, CLT_INT64, 1, &nb, back, &ib));
        CLT__TRY(clt__index_select_rec(fn, rp, 0, ib, &r));
    }
    CLT__TRY(clt__reshape_rec(fn, r, a->ndim, a->shape, out));
done:;
    clt_tensor *all[] = {A, g1, d1, is, in, ib, As, gs, rs, An, gn, dn, rn, r, rp};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
    free(idx);
    return st;
}

/* det (i[0] 0; saved: A, det): gA = g det inv(A)^T where A is invertible;
 * where a matrix is singular (det exactly 0: inv(A) does not exist) its
 * cofactors times g, as torch's formula of grad mode computes them
 * (det_grad_singular; finding them reads the dets back).  slogdet's
 * log|det| (i[0] 1; saved: A): gA = g inv(A)^T, refused for a singular
 * matrix (the gradient is infinite there; torch gives infinities). */
static clt_status bw_det(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *z = NULL, *any = NULL;
    unsigned char one = 0, *sing = NULL;
    const clt_tensor *det = n->i[0] ? NULL : S(1);
    if (det != NULL && det->numel > 0) {
        CLT__TRY(clt__eq_scalar_in(fn, det, 0.0, &z));
        CLT__TRY(clt__any(z, &any, fn));
        CLT__TRY(clt__tensor_read_at(any, &one, 1, fn, __builtin_return_address(0)));
    }
    if (!one) {
        st = det_grad_inv(S(0), g, det, &gin[0]);
        goto done;
    }
    sing = malloc((size_t)det->numel);
    if (sing == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    CLT__TRY(clt__tensor_read_at(z, sing, (size_t)det->numel, fn, __builtin_return_address(0)));
    CLT__TRY(det_grad_singular(S(0), g, det, sing, det->numel, &gin[0]));
done:
    clt_tensor_free(z);
    clt_tensor_free(any);
    free(sing);
    return st;
}

clt_status clt_linalg_det(const clt_tensor *a, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_det";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_det(a, false, out, NULL, fn);
    const clt_tensor *saved[2] = {a, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgDetBackward0", bw_det, 1, &a, 2, saved, &n);
    clt__twice(n);
    return st;
}

clt_status clt_linalg_slogdet(const clt_tensor *a, clt_tensor **sign, clt_tensor **logabsdet)
{
    static const char fn[] = "clt_linalg_slogdet";
    /* both outputs are NULL on every failure, a NULL pointer for the
     * other one included */
    if (sign)
        *sign = NULL;
    if (logabsdet)
        *logabsdet = NULL;
    CLT__REQUIRE_ARG(sign, fn);
    CLT__REQUIRE_ARG(logabsdet, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_det(a, true, sign, logabsdet, fn);
    clt__node *n = NULL;
    st = clt__record(st, logabsdet, "LinalgSlogdetBackward0", bw_det, 1, &a, 1, &a, &n);
    if (n)
        n->i[0] = 1;
    clt__twice(n);
    if (st != CLT_OK) {
        clt_tensor_free(*sign);
        *sign = NULL;
    }
    return st;
}

/* saved: L (U with i[0] 1).  gA = L^-T phi(L^T gL) L^-1, phi(M) = (tril(M)
 * + tril(M, -1)^T) / 2 (with upper, L = U^T and gL = gU^T): the kernels of
 * clt__cholesky_grad, and in a pass that creates a graph the same formula
 * in recorded ops (clt__twice). */
static clt_status bw_cholesky(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    if (!clt__creating_graph())
        return clt__cholesky_grad(S(0), g, n->i[0] != 0, &gin[0], fn);
    clt_status st = CLT_OK;
    bool upper = n->i[0] != 0;
    clt_tensor *t[10] = {NULL};
    CLT__TRY(upper ? mT(S(0), &t[0]) : clt__alias_grad(S(0), &t[0]));
    CLT__TRY(upper ? mT(g, &t[1]) : clt__alias_grad(g, &t[1]));
    CLT__TRY(mT(t[0], &t[2]));
    CLT__TRY(clt__matmul_rec(fn, t[2], t[1], &t[3]));
    CLT__TRY(clt_tril(t[3], 0, &t[4]));
    CLT__TRY(clt_tril(t[3], -1, &t[5]));
    CLT__TRY(mT(t[5], &t[6]));
    CLT__TRY(clt__add_rec(fn, t[4], t[6], &t[7]));
    CLT__TRY(clt__mul_scalar_rec(fn, t[7], 0.5, &t[8]));
    CLT__TRY(clt_linalg_solve_triangular(t[2], t[8], 1, 1, 0, &t[9]));
    CLT__TRY(clt_linalg_solve_triangular(t[0], t[9], 0, 0, 0, &gin[0]));
done:
    for (int k = 0; k < 10; k++)
        clt_tensor_free(t[k]);
    return st;
}

clt_status clt_linalg_cholesky(const clt_tensor *a, int upper, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_cholesky", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_cholesky(CLT__AC(0), upper, out));
    static const char fn[] = "clt_linalg_cholesky";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_cholesky(a, upper != 0, out, fn);
    const clt_tensor *y = *out;
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgCholeskyExBackward0", bw_cholesky, 1, &a, 1, &y, &n);
    if (n)
        n->i[0] = upper != 0;
    clt__twice(n);
    return st;
}

/* ---- the _ex forms: the reports instead of the checks -------------------- */

/* Frees *a and *b (set NULL) when st failed: a pair of outputs. */
static clt_status pair_done(clt_status st, clt_tensor **a, clt_tensor **b)
{
    if (st != CLT_OK) {
        clt_tensor_free(*a);
        clt_tensor_free(*b);
        *a = *b = NULL;
    }
    return st;
}

clt_status clt_linalg_inv_ex(const clt_tensor *a, clt_tensor **inverse, clt_tensor **info)
{
    CLT__AUTOCAST("clt_linalg_inv_ex", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_inv_ex(CLT__AC(0), inverse, info));
    return clt__linalg_inv_ex_rec("clt_linalg_inv_ex", a, inverse, info);
}

clt_status clt__linalg_inv_ex_rec(const char *fn, const clt_tensor *a, clt_tensor **inverse,
                                  clt_tensor **info)
{
    if (inverse)
        *inverse = NULL;
    if (info)
        *info = NULL;
    CLT__REQUIRE_ARG(inverse, fn);
    CLT__REQUIRE_ARG(info, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_inv_ex(a, inverse, info, fn);
    const clt_tensor *y = *inverse;
    clt__node *n = NULL;
    st = clt__record(st, inverse, "LinalgInvExBackward0", bw_inv, 1, &a, 1, &y, &n);
    clt__twice(n);
    return pair_done(st, inverse, info);
}

clt_status clt_linalg_solve_ex(const clt_tensor *a, const clt_tensor *b, clt_tensor **result,
                               clt_tensor **info)
{
    static const char fn[] = "clt_linalg_solve_ex";
    if (result)
        *result = NULL;
    if (info)
        *info = NULL;
    CLT__REQUIRE_ARG(result, fn);
    CLT__REQUIRE_ARG(info, fn);
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__linalg_solve_ex(a, b, result, info, fn);
    const clt_tensor *in[2] = {a, b}, *saved[2] = {a, *result};
    clt__node *n = NULL;
    st = clt__record(st, result, "LinalgSolveExBackward0", bw_solve, 2, in, 2, saved, &n);
    if (n)
        n->i[0] = clt__linalg_vector_rhs(a, b);
    clt__twice(n);
    return pair_done(st, result, info);
}

clt_status clt_linalg_cholesky_ex(const clt_tensor *a, int upper, clt_tensor **l,
                                  clt_tensor **info)
{
    CLT__AUTOCAST("clt_linalg_cholesky_ex", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_cholesky_ex(CLT__AC(0), upper, l, info));
    static const char fn[] = "clt_linalg_cholesky_ex";
    if (l)
        *l = NULL;
    if (info)
        *info = NULL;
    CLT__REQUIRE_ARG(l, fn);
    CLT__REQUIRE_ARG(info, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_cholesky_ex(a, upper != 0, l, info, fn);
    const clt_tensor *y = *l;
    clt__node *n = NULL;
    st = clt__record(st, l, "LinalgCholeskyExBackward0", bw_cholesky, 1, &a, 1, &y, &n);
    if (n)
        n->i[0] = upper != 0;
    clt__twice(n);
    return pair_done(st, l, info);
}
