/* linalg_lu.c: LU factors with their pivots, the permutation the pivots
 * make and triangular solves (cl/linalg.cl), without autograd; the public
 * entries, what torch.linalg composes of them and the gradients are in
 * src/autograd/grad_linalg_lu.c. */
#include <math.h>

#include "internal.h"

clt_status clt__linalg_lu_factor(const clt_tensor *a, clt_tensor **lu, clt_tensor **piv,
                                 clt_tensor **info, const char *fn)
{
    *lu = *piv = *info = NULL;
    clt_status st = clt__linalg_check(a, "A", false, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t m = a->shape[nd], n = a->shape[nd + 1], k = m < n ? m : n;
    int64_t batch = clt__linalg_count(nd, a->shape), ps[CLT_MAX_DIMS];
    clt_tensor *w = NULL, *p = NULL, *f = NULL;
    for (int d = 0; d < nd; d++)
        ps[d] = a->shape[d];
    ps[nd] = k;
    CLT__TRY(clt__copy_as(fn, a, a->dtype, &w));
    CLT__TRY(clt__linalg_lu(fn, w, batch, m, n, &p, &f));
    CLT__TRY(clt__scalar_(CLT__OP_ADD, p, 1.0, fn)); /* LAPACK's 1-based rows */
    CLT__TRY(clt__reshape(p, nd + 1, ps, piv, fn));
    CLT__TRY(clt__reshape(f, nd, ps, info, fn));
    *lu = w;
    w = NULL;
done:
    if (st != CLT_OK) {
        clt_tensor_free(*piv);
        *piv = NULL;
    }
    clt_tensor_free(w);
    clt_tensor_free(p);
    clt_tensor_free(f);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__linalg_lu_perm(const clt_tensor *piv, int64_t m, clt_dtype dtype,
                               clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_status st = CLT_OK;
    int nd = piv->ndim - 1;
    int64_t kp = piv->shape[nd], batch = clt__linalg_count(nd, piv->shape), s[CLT_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        s[d] = piv->shape[d];
    s[nd] = s[nd + 1] = m;
    clt_tensor *p = NULL, *pc = NULL, *perm = NULL;
    CLT__TRY(clt__result_new(fn, piv->dev, dtype, nd + 2, s, &p));
    if (p->numel > 0) {
        const char *opts = clt__linalg_options(dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__contiguous_as(fn, piv, CLT_INT32, &pc));
        CLT__TRY(clt__temp_new(fn, "the permutations", piv->dev, CLT_INT32, 2,
                               (int64_t[]){batch, m}, &perm));
        /* an empty pc has no buffer of its own to pass: perm stands in */
        cl_mem mv = pc->numel > 0 ? clt__mem(pc) : clt__mem(perm), mr = clt__mem(perm);
        cl_mem mp = clt__mem(p);
        cl_ulong mm = (cl_ulong)m, kk = (cl_ulong)kp, bb = (cl_ulong)batch,
                 off = (cl_ulong)pc->offset;
        size_t gws = (size_t)batch;
        clt__arg args[] = {CLT__ARG(mv), CLT__ARG(off), CLT__ARG(mr), CLT__ARG(mp),
                           CLT__ARG(mm), CLT__ARG(kk),  CLT__ARG(bb)};
        CLT__TRY(clt__error_in(
            clt__launch(piv->dev, "linalg", opts, "lu_perm", 1, &gws, NULL, 7, args), fn));
    }
    *out = p;
    p = NULL;
done:
    clt_tensor_free(p);
    clt_tensor_free(pc);
    clt_tensor_free(perm);
    return st == CLT_OK ? clt__ok() : st;
}

/* tri_solve on x ([batch, n, k], contiguous, offset 0) in place with the
 * triangles of f ([batch, n, n], contiguous, offset 0). */
static clt_status tri_solve(const char *fn, const clt_tensor *f, clt_tensor *x, int64_t batch,
                            int64_t n, int64_t k, bool upper, bool unit)
{
    const char *opts = clt__linalg_options(x->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    size_t l = clt__linalg_group_size(x->dev, k, 64);
    size_t gws[2] = {((size_t)k + l - 1) / l * l, (size_t)batch}, lws[2] = {l, 1};
    cl_mem mf = clt__mem(f), mx = clt__mem(x);
    cl_ulong nn = (cl_ulong)n, kk = (cl_ulong)k;
    cl_int up = upper, un = unit;
    clt__arg args[] = {CLT__ARG(mf), CLT__ARG(mx), CLT__ARG(nn),
                       CLT__ARG(kk), CLT__ARG(up), CLT__ARG(un)};
    return clt__error_in(clt__launch(x->dev, "linalg", opts, "tri_solve", 2, gws, lws, 6, args),
                         fn);
}

clt_status clt__linalg_solve_triangular(const clt_tensor *a, const clt_tensor *b, bool upper,
                                        bool left, bool unit, clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_status st = clt__linalg_check_system(a, b, fn);
    if (st != CLT_OK)
        return st;
    if (b->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The input tensor B must have at least 2 dimensions.", fn);
    int64_t n = a->shape[a->ndim - 1], br = b->shape[b->ndim - 2], bc = b->shape[b->ndim - 1];
    if ((left ? br : bc) != n)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Incompatible shapes of A and B for the equation %s = B (%lldx%lld "
                          "and %lldx%lld)",
                          fn, left ? "AX" : "XA", (long long)n, (long long)n, (long long)br,
                          (long long)bc);
    int nb;
    int64_t bs[CLT_MAX_DIMS];
    clt_tensor *at = NULL, *bt = NULL, *w = NULL, *x = NULL;
    CLT__TRY(clt__broadcast_shapes(a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nb, bs, fn));
    if (nb + 2 > CLT_MAX_DIMS) {
        st = clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: the result has more than %d dimensions", fn,
                        CLT_MAX_DIMS);
        goto done;
    }
    /* X A = B is A^T X^T = B^T, with the other triangle */
    if (left) {
        CLT__TRY(clt__tensor_view(a, a->ndim, a->shape, a->strides, a->offset, &at));
        CLT__TRY(clt__tensor_view(b, b->ndim, b->shape, b->strides, b->offset, &bt));
    } else {
        CLT__TRY(clt__transpose(a, -2, -1, &at, fn));
        CLT__TRY(clt__transpose(b, -2, -1, &bt, fn));
        upper = !upper;
    }
    CLT__TRY(clt__linalg_expanded_copy(fn, bt, nb, bs, &x));
    if (x->numel > 0) {
        CLT__TRY(clt__linalg_expanded_copy(fn, at, nb, bs, &w));
        CLT__TRY(tri_solve(fn, w, x, clt__linalg_count(nb, bs), n, x->shape[nb + 1], upper, unit));
    }
    if (left)
        *out = x, x = NULL;
    else
        CLT__TRY(clt__transpose(x, -2, -1, out, fn));
done:
    clt_tensor_free(at);
    clt_tensor_free(bt);
    clt_tensor_free(w);
    clt_tensor_free(x);
    return st == CLT_OK ? clt__ok() : st;
}

/* The largest 1-norm (column sum of |A|) of a's matrices, read back. */
static clt_status largest_norm1(const clt_tensor *a, double *out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *ab = NULL, *cs = NULL, *mx = NULL;
    union {
        float f;
        double d;
    } v;
    CLT__TRY(clt__abs_in(fn, a, &ab));
    CLT__TRY(clt__sum_dim(ab, -2, 0, &cs, fn));
    CLT__TRY(clt__max(cs, &mx, fn));
    CLT__TRY(clt__tensor_read_at(mx, &v, clt_dtype_size(mx->dtype), fn,
                                 __builtin_return_address(0)));
    *out = mx->dtype == CLT_FLOAT32 ? (double)v.f : v.d;
done:
    clt_tensor_free(ab);
    clt_tensor_free(cs);
    clt_tensor_free(mx);
    return st;
}

clt_status clt__linalg_matrix_exp(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    if (a->numel == 0) {
        st = clt__copy_as(fn, a, a->dtype, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    int64_t n = a->shape[a->ndim - 1];
    double norm;
    st = largest_norm1(a, &norm, fn);
    if (st != CLT_OK)
        return st;
    /* Scaling and squaring: A / 2^s of 1-norm at most 1, whose Taylor
     * polynomial of degree d leaves a remainder under eps / 20 (torch
     * chooses among optimised Taylor polynomials by the same norm); a
     * non-finite norm gives non-finite results, as torch's. */
    int s = isfinite(norm) && norm > 1 ? (int)ceil(log2(norm)) : 0, d = 1;
    double x = isfinite(norm) ? ldexp(norm, -s) : 1, tol = a->dtype == CLT_FLOAT32 ? 6e-9 : 1.1e-17;
    for (double term = x * x / 2; d < 30 && term > tol; d++)
        term *= x / (d + 2);
    st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *eye, *xs, *t, *p, *q;
    CLT__TRY(clt_eye(a->dev, a->dtype, n, n, &eye));
    CLT__TRY(clt__mul_scalar_in(fn, a, ldexp(1.0, -s), &xs));
    t = eye;
    for (int k = d; k >= 1; k--) { /* Horner: I + X/1 (I + X/2 (... (I + X/d))) */
        CLT__TRY(clt__matmul(xs, t, &p, fn));
        CLT__TRY(clt__mul_scalar_in(fn, p, 1.0 / k, &q));
        CLT__TRY(clt__add_in(fn, q, eye, &t));
    }
    for (int k = 0; k < s; k++, t = p)
        CLT__TRY(clt__matmul(t, t, &p, fn));
    *out = t;
done:
    return clt__scope_finish(st, out);
}
