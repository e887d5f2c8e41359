/* linalg_eig.c: eigh and the SVD of batches of float32 or float64 matrices
 * by Jacobi's methods (cl/eig.cl), without autograd; their public entries,
 * the ops composed of them (pinv, matrix_rank, cond) and the backward
 * formulas are in src/autograd/grad_linalg_eig.c. */
#include <float.h>
#include <math.h>

#include "internal.h"

/* Jacobi's tolerance for couplings summed over n elements: the dtype's
 * epsilon times sqrt(n), as LAPACK's gesvj, so that a coupling rounding
 * alone makes does not keep a sweep going. */
static float tolerance(clt_dtype dt, int64_t n)
{
    double eps = dt == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
    return (float)(eps * sqrt((double)(n > 1 ? n : 1)));
}

/* shape's first nd sizes, then x and (when y >= 0) y, into s; the count
 * of dims. */
static int shape_with(int nd, const int64_t *shape, int64_t x, int64_t y, int64_t *s)
{
    for (int d = 0; d < nd; d++)
        s[d] = shape[d];
    s[nd] = x;
    if (y < 0)
        return nd + 1;
    s[nd + 1] = y;
    return nd + 2;
}

clt_status clt__linalg_eigh(const clt_tensor *a, bool upper, bool vectors, clt_tensor **w,
                            clt_tensor **v, const char *fn)
{
    *w = NULL;
    if (v)
        *v = NULL;
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t n = a->shape[nd + 1], batch = clt__linalg_count(nd, a->shape), s[CLT_MAX_DIMS];
    clt_tensor *rw = NULL, *rv = NULL, *t = NULL, *src = NULL, *work = NULL, *vt = NULL;
    clt_tensor *cs = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, shape_with(nd, a->shape, n, -1, s), s, &rw));
    if (vectors)
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &rv));
    if (batch > 0 && n > 0) {
        const char *opts = clt__linalg_options(a->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        /* the kernel reads the lower triangle, which for "U" is A^T's */
        CLT__TRY(upper ? clt__transpose(a, -2, -1, &t, fn)
                       : clt__tensor_view(a, a->ndim, a->shape, a->strides, a->offset, &t));
        CLT__TRY(clt__copy_as(fn, t, a->dtype, &src));
        int64_t ws[3] = {batch, n, n}, cshape[2] = {batch, 2 * n + 1};
        CLT__TRY(clt__temp_new(fn, "the work matrices", a->dev, a->dtype, 3, ws, &work));
        if (!vectors) /* the values need them too */
            CLT__TRY(clt__temp_new(fn, "the eigenvectors", a->dev, a->dtype, 3, ws, &vt));
        CLT__TRY(clt__temp_new(fn, "the rotations", a->dev, a->dtype, 2, cshape, &cs));
        size_t lws = clt__linalg_group_size(a->dev, n, 64), gws = (size_t)batch * lws;
        cl_mem msrc = clt__mem(src), ma = clt__mem(work), mw = clt__mem(rw);
        cl_mem mv = clt__mem(rv ? rv : vt), mc = clt__mem(cs);
        cl_ulong nn = (cl_ulong)n;
        cl_int vec = vectors;
        cl_float tol = tolerance(a->dtype, n);
        clt__arg args[] = {CLT__ARG(msrc), CLT__ARG(ma),  CLT__ARG(mv),
                           CLT__ARG(mw),   CLT__ARG(mc),  CLT__ARG(nn),
                           CLT__ARG(vec),  CLT__ARG(tol), CLT__LOCAL(sizeof(cl_int))};
        CLT__TRY(clt__error_in(
            clt__launch(a->dev, "eig", opts, "eigh_jacobi", 1, &gws, &lws, 9, args), fn));
    }
    *w = rw;
    rw = NULL;
    if (v) {
        *v = rv;
        rv = NULL;
    }
done:
    clt_tensor_free(rw);
    clt_tensor_free(rv);
    clt_tensor_free(t);
    clt_tensor_free(src);
    clt_tensor_free(work);
    clt_tensor_free(vt);
    clt_tensor_free(cs);
    return st == CLT_OK ? clt__ok() : st;
}

/* torch's refusal of a matrix with inf or NaN for the SVD (LAPACK's
 * gesdd fails on them): reads one flag back, a synchronisation. */
static clt_status check_finite(const clt_tensor *a, const char *fn)
{
    clt_tensor *f = NULL, *all = NULL;
    unsigned char ok = 1;
    clt_status st = clt__isfinite_in(fn, a, &f);
    if (st == CLT_OK)
        st = clt__all(f, &all, fn);
    if (st == CLT_OK)
        st = clt__tensor_read_at(all, &ok, 1, fn, __builtin_return_address(0));
    clt_tensor_free(f);
    clt_tensor_free(all);
    if (st == CLT_OK && !ok)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: The algorithm failed to converge because the input matrix "
                        "contained non-finite values.",
                        fn);
    return st;
}

clt_status clt__linalg_svd(const clt_tensor *a, bool full, bool vectors, clt_tensor **u,
                           clt_tensor **s, clt_tensor **vh, const char *fn)
{
    *s = NULL;
    if (u)
        *u = NULL;
    if (vh)
        *vh = NULL;
    clt_status st = clt__linalg_check(a, "A", false, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t m = a->shape[nd], n = a->shape[nd + 1], batch = clt__linalg_count(nd, a->shape);
    bool trans = m < n;
    int64_t k = trans ? m : n, M = trans ? n : m, R = vectors && full ? M : k;
    int64_t sh[CLT_MAX_DIMS];
    clt_tensor *rs = NULL, *ru = NULL, *rv = NULL, *t = NULL, *src = NULL, *g = NULL;
    clt_tensor *q = NULL, *cs = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, shape_with(nd, a->shape, k, -1, sh), sh, &rs));
    if (vectors) {
        int64_t uc = full ? m : k, vr = full ? n : k;
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, shape_with(nd, a->shape, m, uc, sh), sh,
                                 &ru));
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, shape_with(nd, a->shape, vr, n, sh), sh,
                                 &rv));
    }
    /* with k = 0 there is no value, but a full U or Vh is the identity,
     * which the kernel's completion writes */
    if (batch > 0 && k > 0)
        CLT__TRY(check_finite(a, fn));
    if (batch > 0 && (k > 0 || (vectors && full && M > 0))) {
        const char *opts = clt__linalg_options(a->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        /* src: the columns of B = A (or A^T when A is wide) as rows */
        CLT__TRY(trans ? clt__tensor_view(a, a->ndim, a->shape, a->strides, a->offset, &t)
                       : clt__transpose(a, -2, -1, &t, fn));
        CLT__TRY(clt__copy_as(fn, t, a->dtype, &src));
        int64_t gs[3] = {batch, R, M}, qs[3] = {batch, k, k}, css[2] = {batch, k + 1 + 2 * R};
        CLT__TRY(clt__temp_new(fn, "the columns", a->dev, a->dtype, 3, gs, &g));
        CLT__TRY(clt__temp_new(fn, "the rotations", a->dev, a->dtype, 3, qs, &q));
        CLT__TRY(clt__temp_new(fn, "the rotations", a->dev, a->dtype, 2, css, &cs));
        size_t lws = clt__linalg_group_size(a->dev, M, 64);
        size_t gws = (size_t)batch * lws;
        cl_mem msrc = clt__mem(src), mg = clt__mem(g), ms = clt__mem(rs), mc = clt__mem(cs);
        cl_mem mq = clt__mem(q), mu = ru ? clt__mem(ru) : mg;
        cl_mem mv = rv ? clt__mem(rv) : mg;
        cl_ulong MM = (cl_ulong)M, NN = (cl_ulong)k, RR = (cl_ulong)R;
        cl_int vec = vectors, tr = trans;
        cl_float tol = tolerance(a->dtype, M);
        clt__arg args[] = {CLT__ARG(msrc), CLT__ARG(mg), CLT__ARG(mq),  CLT__ARG(ms),
                           CLT__ARG(mc),   CLT__ARG(mu), CLT__ARG(mv),  CLT__ARG(MM),
                           CLT__ARG(NN),   CLT__ARG(RR), CLT__ARG(vec), CLT__ARG(tr),
                           CLT__ARG(tol),  CLT__LOCAL(sizeof(cl_int))};
        CLT__TRY(clt__error_in(
            clt__launch(a->dev, "eig", opts, "svd_jacobi", 1, &gws, &lws, 14, args), fn));
    }
    *s = rs;
    rs = NULL;
    if (u) {
        *u = ru;
        ru = NULL;
    }
    if (vh) {
        *vh = rv;
        rv = NULL;
    }
done:
    clt_tensor_free(rs);
    clt_tensor_free(ru);
    clt_tensor_free(rv);
    clt_tensor_free(t);
    clt_tensor_free(src);
    clt_tensor_free(g);
    clt_tensor_free(q);
    clt_tensor_free(cs);
    return st == CLT_OK ? clt__ok() : st;
}
