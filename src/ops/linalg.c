/* linalg.c: inv, solve, det, slogdet and cholesky of batches of square
 * matrices (cl/linalg.cl), without autograd; their public entries and
 * backward formulas are in src/autograd/grad_linalg.c.  Each op factors a
 * contiguous copy of its input in place; those that can fail (a singular
 * matrix, one not positive-definite) read the kernels' report back at the
 * end, as torch's checks do. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Matrices up to this size are factored in local memory: half of the 32
 * KiB OpenCL guarantees a work-group. */
#define LOCAL_BYTES 16384

const char *clt__linalg_options(clt_dtype dt, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    const char *o = clt__opts_cached(&slots[dt], "T", dt, NULL, dt, "");
    if (o == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return o;
}

clt_status clt__linalg_check(const clt_tensor *a, const char *what, bool square,
                             const char *fn)
{
    if (clt__dtype_is_half(a->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Low precision dtypes not supported. Got %s", fn,
                          clt_dtype_name(a->dtype));
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Expected a floating point tensor as input. Got %s; convert with "
                          "clt_to_dtype first",
                          fn, clt_dtype_name(a->dtype));
    clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The input tensor %s must have at least 2 dimensions.", fn, what);
    if (square && a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s must be batches of square matrices, but they are %lld by %lld "
                          "matrices",
                          fn, what, (long long)a->shape[a->ndim - 2],
                          (long long)a->shape[a->ndim - 1]);
    return CLT_OK;
}

int64_t clt__linalg_count(int nd, const int64_t *shape)
{
    int64_t c = 1;
    for (int d = 0; d < nd; d++)
        c *= shape[d];
    return c;
}

size_t clt__linalg_group_size(const clt_device *dev, int64_t n, size_t cpu_cap)
{
    size_t cap = dev->info.type == CLT_DEVICE_TYPE_CPU ? cpu_cap : 256, l = 1;
    if (cap > dev->info.max_work_group_size)
        cap = dev->info.max_work_group_size;
    while (l * 2 <= cap && (int64_t)(l * 2) <= n)
        l *= 2;
    return l;
}

/* Factors the `batch` m x n matrices of w (contiguous, offset 0; square
 * for chol_factor) in place with `kernel` (lu_factor, which also writes
 * piv, or chol_factor), their reports in info. */
static clt_status factor(const char *fn, const char *kernel, clt_tensor *w, int64_t batch,
                         int64_t m, int64_t n, clt_tensor *piv, clt_tensor *info)
{
    const char *opts = clt__linalg_options(w->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    size_t es = clt_dtype_size(w->dtype), lws = clt__linalg_group_size(w->dev, m, 64);
    size_t gws = (size_t)batch * lws, bytes = (size_t)(m * n) * es;
    cl_int in_local = bytes <= LOCAL_BYTES;
    cl_mem mw = clt__mem(w), mi = clt__mem(info);
    cl_ulong mm = (cl_ulong)m, nn = (cl_ulong)n;
    clt__arg lm = CLT__LOCAL(in_local ? bytes : es);
    if (piv) {
        cl_mem mp = clt__mem(piv);
        clt__arg args[] = {CLT__ARG(mw), CLT__ARG(mp), CLT__ARG(mi),       CLT__ARG(mm),
                           CLT__ARG(nn), lm,           CLT__ARG(in_local), CLT__LOCAL(sizeof(cl_int))};
        return clt__error_in(clt__launch(w->dev, "linalg", opts, kernel, 1, &gws, &lws, 8, args),
                             fn);
    }
    clt__arg args[] = {CLT__ARG(mw), CLT__ARG(mi), CLT__ARG(nn), lm, CLT__ARG(in_local)};
    return clt__error_in(clt__launch(w->dev, "linalg", opts, kernel, 1, &gws, &lws, 5, args), fn);
}

/* lu_subst on x ([batch, n, k], contiguous, offset 0) in place, with the
 * factors f ([batch, n, n], offset 0) and piv (NULL for mode 1). */
static clt_status subst(const char *fn, const clt_tensor *f, const clt_tensor *piv,
                        clt_tensor *x, int64_t batch, int64_t n, int64_t k, int mode)
{
    const char *opts = clt__linalg_options(x->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    size_t l = clt__linalg_group_size(x->dev, k, 64);
    size_t gws[2] = {((size_t)k + l - 1) / l * l, (size_t)batch}, lws[2] = {l, 1};
    cl_mem mf = clt__mem(f), mp = piv ? clt__mem(piv) : mf, mx = clt__mem(x);
    cl_ulong nn = (cl_ulong)n, kk = (cl_ulong)k;
    cl_int md = mode;
    clt__arg args[] = {CLT__ARG(mf), CLT__ARG(mp), CLT__ARG(mx),
                       CLT__ARG(nn), CLT__ARG(kk), CLT__ARG(md)};
    return clt__error_in(clt__launch(x->dev, "linalg", opts, "lu_subst", 2, gws, lws, 6, args),
                         fn);
}

clt_status clt__linalg_first_failure(const char *fn, const clt_tensor *info, int64_t batch,
                                int64_t *bad, int *value)
{
    *bad = -1;
    *value = 0;
    int *host = malloc((size_t)batch * sizeof *host);
    if (host == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory for %lld reports", fn, (long long)batch);
    clt_status st = clt__tensor_read_at(info, host, (size_t)batch * sizeof *host, fn,
                                        __builtin_return_address(0));
    for (int64_t b = 0; st == CLT_OK && b < batch; b++)
        if (host[b] != 0) {
            *bad = b;
            *value = host[b];
            break;
        }
    free(host);
    return st;
}

const char *clt__linalg_batch_prefix(char *buf, size_t n, const clt_tensor *a, int64_t b)
{
    buf[0] = 0;
    if (a->ndim > 2)
        snprintf(buf, n, "(Batch element %lld): ", (long long)b);
    return buf;
}

clt_status clt__linalg_lu(const char *fn, clt_tensor *w, int64_t batch, int64_t m, int64_t n,
                          clt_tensor **piv, clt_tensor **info)
{
    int64_t ps[2] = {batch, m < n ? m : n};
    clt_status st = clt__temp_new(fn, "the pivots", w->dev, CLT_INT32, 2, ps, piv);
    if (st == CLT_OK)
        st = clt__temp_new(fn, "the reports", w->dev, CLT_INT32, 1, &batch, info);
    if (st == CLT_OK && batch > 0 && ps[1] > 0)
        st = factor(fn, "lu_factor", w, batch, m, n, *piv, *info);
    else if (st == CLT_OK && batch > 0)
        st = clt__error_in(clt__fill_value(*info, 0.0), fn);
    return st;
}

/* The reports [batch] of info as a's batch dims ([...]) for the _ex forms,
 * or zeros there when nothing was factored (info NULL). */
static clt_status reports(const char *fn, const clt_tensor *a, const clt_tensor *info,
                          clt_tensor **out)
{
    if (info == NULL)
        return clt__error_in(clt__full(a->dev, CLT_INT32, a->ndim - 2, a->shape, 0.0, out), fn);
    return clt__reshape(info, a->ndim - 2, a->shape, out, fn);
}

clt_status clt__linalg_inv(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    return clt__linalg_inv_ex(a, out, NULL, fn);
}

clt_status clt__linalg_inv_ex(const clt_tensor *a, clt_tensor **out, clt_tensor **ex_info,
                              const char *fn)
{
    *out = NULL;
    if (ex_info)
        *ex_info = NULL;
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    int64_t n = a->shape[a->ndim - 1], batch = clt__linalg_count(a->ndim - 2, a->shape), bad;
    clt_tensor *r = NULL, *w = NULL, *piv = NULL, *info = NULL;
    int v;
    char pre[48];
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &r));
    if (r->numel > 0) {
        CLT__TRY(clt__copy_as(fn, a, a->dtype, &w));
        CLT__TRY(clt__linalg_lu(fn, w, batch, n, n, &piv, &info));
        CLT__TRY(subst(fn, w, piv, r, batch, n, n, 2));
    }
    if (ex_info) {
        CLT__TRY(reports(fn, a, info, ex_info));
    } else if (r->numel > 0) {
        CLT__TRY(clt__linalg_first_failure(fn, info, batch, &bad, &v));
        if (bad >= 0) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: %sThe diagonal element %d is zero, the inversion could not be "
                            "completed because the input matrix is singular.",
                            fn, clt__linalg_batch_prefix(pre, sizeof pre, a, bad), v);
            goto done;
        }
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(w);
    clt_tensor_free(piv);
    clt_tensor_free(info);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__linalg_check_system(const clt_tensor *a, const clt_tensor *b, const char *fn)
{
    clt_status st = clt__same_device(a, b, fn);
    if (st == CLT_OK)
        st = clt__linalg_check(a, "A", true, fn);
    if (st == CLT_OK && b->dtype != a->dtype)
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: Expected A and B to have the same dtype, but found A of type %s "
                        "and B of type %s instead",
                        fn, clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    return st;
}

bool clt__linalg_vector_rhs(const clt_tensor *a, const clt_tensor *b)
{
    if (b->ndim == 1)
        return true;
    if (b->ndim != a->ndim - 1)
        return false;
    for (int d = 0; d < b->ndim; d++)
        if (b->shape[d] != a->shape[d])
            return false;
    return true;
}

clt_status clt__linalg_expanded_copy(const char *fn, const clt_tensor *t, int nb, const int64_t *bs,
                                clt_tensor **out)
{
    int64_t s[CLT_MAX_DIMS];
    for (int d = 0; d < nb; d++)
        s[d] = bs[d];
    s[nb] = t->shape[t->ndim - 2];
    s[nb + 1] = t->shape[t->ndim - 1];
    clt_tensor *e = NULL;
    clt_status st = clt__expand(t, nb + 2, s, &e, fn);
    if (st == CLT_OK)
        st = clt__copy_as(fn, e, t->dtype, out);
    clt_tensor_free(e);
    return st;
}

clt_status clt__linalg_solve(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                             const char *fn)
{
    return clt__linalg_solve_ex(a, b, out, NULL, fn);
}

clt_status clt__linalg_solve_ex(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                                clt_tensor **ex_info, const char *fn)
{
    *out = NULL;
    if (ex_info)
        *ex_info = NULL;
    clt_status st = clt__linalg_check_system(a, b, fn);
    if (st != CLT_OK)
        return st;
    bool vec = clt__linalg_vector_rhs(a, b);
    if (!vec && b->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The input tensor B must have at least 2 dimensions.", fn);
    int64_t n = a->shape[a->ndim - 1], bad;
    clt_tensor *bm = NULL, *w = NULL, *x = NULL, *piv = NULL, *info = NULL;
    int nb, v;
    int64_t bs[CLT_MAX_DIMS];
    char pre[48];
    CLT__TRY(vec ? clt__unsqueeze(b, -1, &bm, fn)
                 : clt__tensor_view(b, b->ndim, b->shape, b->strides, b->offset, &bm));
    int64_t bn = bm->shape[bm->ndim - 2], k = bm->shape[bm->ndim - 1];
    if (bn != n) {
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: Incompatible shapes of A and B for the equation AX = B (%lldx%lld "
                        "and %lldx%lld)",
                        fn, (long long)n, (long long)n, (long long)bn, (long long)k);
        goto done;
    }
    CLT__TRY(clt__broadcast_shapes(a->ndim - 2, a->shape, bm->ndim - 2, bm->shape, &nb, bs, fn));
    if (nb + 2 > CLT_MAX_DIMS) {
        st = clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: the result has more than %d dimensions", fn,
                        CLT_MAX_DIMS);
        goto done;
    }
    CLT__TRY(clt__linalg_expanded_copy(fn, bm, nb, bs, &x));
    int64_t batch = clt__linalg_count(nb, bs);
    if (x->numel > 0) {
        CLT__TRY(clt__linalg_expanded_copy(fn, a, nb, bs, &w));
        CLT__TRY(clt__linalg_lu(fn, w, batch, n, n, &piv, &info));
        CLT__TRY(subst(fn, w, piv, x, batch, n, k, 0));
    }
    if (ex_info) {
        CLT__TRY(x->numel > 0 ? clt__reshape(info, nb, bs, ex_info, fn)
                              : clt__error_in(clt__full(a->dev, CLT_INT32, nb, bs, 0.0, ex_info),
                                              fn));
    } else if (x->numel > 0) {
        CLT__TRY(clt__linalg_first_failure(fn, info, batch, &bad, &v));
        if (bad >= 0) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: %sThe solver failed because the input matrix is singular.", fn,
                            clt__linalg_batch_prefix(pre, sizeof pre, x, bad));
            goto done;
        }
    }
    if (vec)
        CLT__TRY(clt__squeeze(x, -1, out, fn));
    else
        *out = x, x = NULL;
done:
    if (st != CLT_OK && ex_info) {
        clt_tensor_free(*ex_info);
        *ex_info = NULL;
    }
    clt_tensor_free(bm);
    clt_tensor_free(w);
    clt_tensor_free(x);
    clt_tensor_free(piv);
    clt_tensor_free(info);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__linalg_det(const clt_tensor *a, bool logmode, clt_tensor **out0,
                           clt_tensor **out1, const char *fn)
{
    *out0 = NULL;
    if (out1)
        *out1 = NULL;
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t n = a->shape[nd + 1], batch = clt__linalg_count(nd, a->shape);
    clt_tensor *r0 = NULL, *r1 = NULL, *w = NULL, *piv = NULL, *info = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, nd, a->shape, &r0));
    if (logmode)
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, nd, a->shape, &r1));
    if (batch > 0 && n == 0) { /* the empty product */
        CLT__TRY(clt__error_in(clt__fill_value(r0, 1.0), fn));
        if (r1)
            CLT__TRY(clt__error_in(clt__fill_value(r1, 0.0), fn));
    } else if (batch > 0) {
        const char *opts = clt__linalg_options(a->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__copy_as(fn, a, a->dtype, &w));
        CLT__TRY(clt__linalg_lu(fn, w, batch, n, n, &piv, &info));
        cl_mem mw = clt__mem(w), mp = clt__mem(piv), m0 = clt__mem(r0);
        cl_mem m1 = r1 ? clt__mem(r1) : m0;
        cl_ulong nn = (cl_ulong)n, bb = (cl_ulong)batch;
        cl_int lm = logmode;
        size_t gws = (size_t)batch;
        clt__arg args[] = {CLT__ARG(mw), CLT__ARG(mp), CLT__ARG(nn), CLT__ARG(bb),
                           CLT__ARG(m0), CLT__ARG(m1), CLT__ARG(lm)};
        CLT__TRY(clt__error_in(
            clt__launch(a->dev, "linalg", opts, "lu_det", 1, &gws, NULL, 7, args), fn));
    }
    *out0 = r0;
    r0 = NULL;
    if (out1) {
        *out1 = r1;
        r1 = NULL;
    }
done:
    clt_tensor_free(r0);
    clt_tensor_free(r1);
    clt_tensor_free(w);
    clt_tensor_free(piv);
    clt_tensor_free(info);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__linalg_cholesky(const clt_tensor *a, bool upper, clt_tensor **out,
                                const char *fn)
{
    return clt__linalg_cholesky_ex(a, upper, out, NULL, fn);
}

clt_status clt__linalg_cholesky_ex(const clt_tensor *a, bool upper, clt_tensor **out,
                                   clt_tensor **ex_info, const char *fn)
{
    *out = NULL;
    if (ex_info)
        *ex_info = NULL;
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    int64_t n = a->shape[a->ndim - 1], batch = clt__linalg_count(a->ndim - 2, a->shape), bad;
    clt_tensor *t = NULL, *w = NULL, *info = NULL;
    int v;
    char pre[48];
    /* upper: U = L^T for the lower factor L of A^T, whose lower triangle is
     * A's upper one (the triangle torch reads) */
    CLT__TRY(upper ? clt__transpose(a, -2, -1, &t, fn)
                   : clt__tensor_view(a, a->ndim, a->shape, a->strides, a->offset, &t));
    CLT__TRY(clt__copy_as(fn, t, a->dtype, &w));
    if (w->numel > 0) {
        CLT__TRY(clt__temp_new(fn, "the reports", a->dev, CLT_INT32, 1, &batch, &info));
        CLT__TRY(factor(fn, "chol_factor", w, batch, n, n, NULL, info));
    }
    if (ex_info) {
        CLT__TRY(reports(fn, a, info, ex_info));
    } else if (w->numel > 0) {
        CLT__TRY(clt__linalg_first_failure(fn, info, batch, &bad, &v));
        if (bad >= 0) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: %sThe factorization could not be completed because the input "
                            "is not positive-definite (the leading minor of order %d is not "
                            "positive-definite).",
                            fn, clt__linalg_batch_prefix(pre, sizeof pre, a, bad), v);
            goto done;
        }
    }
    if (upper)
        CLT__TRY(clt__transpose(w, -2, -1, out, fn));
    else
        *out = w, w = NULL;
done:
    if (st != CLT_OK && ex_info) {
        clt_tensor_free(*ex_info);
        *ex_info = NULL;
    }
    clt_tensor_free(t);
    clt_tensor_free(w);
    clt_tensor_free(info);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__cholesky_grad(const clt_tensor *L, const clt_tensor *gL, bool upper,
                              clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_status st = CLT_OK;
    int nd = L->ndim;
    int64_t n = L->shape[nd - 1], batch = clt__linalg_count(nd - 2, L->shape);
    clt_tensor *lv = NULL, *gv = NULL, *lt = NULL, *m = NULL, *s = NULL, *lc = NULL;
    clt_tensor *yt = NULL, *y = NULL;
    /* with upper, L = U^T and gL = gU^T */
    CLT__TRY(upper ? clt__transpose(L, -2, -1, &lv, fn)
                   : clt__tensor_view(L, nd, L->shape, L->strides, L->offset, &lv));
    CLT__TRY(upper ? clt__transpose(gL, -2, -1, &gv, fn)
                   : clt__tensor_view(gL, gL->ndim, gL->shape, gL->strides, gL->offset, &gv));
    CLT__TRY(clt__transpose(lv, -2, -1, &lt, fn));
    CLT__TRY(clt__matmul(lt, gv, &m, fn));
    CLT__TRY(clt__result_new(fn, L->dev, L->dtype, nd, L->shape, &s));
    if (s->numel > 0) {
        const char *opts = clt__linalg_options(L->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        clt_tensor *mc = NULL;
        CLT__TRY(clt__contiguous_as(fn, m, L->dtype, &mc));
        clt_tensor_free(m);
        m = mc;
        cl_mem ms = clt__mem(s), mm = clt__mem(m);
        cl_ulong off = (cl_ulong)m->offset, nn = (cl_ulong)n, cnt = (cl_ulong)s->numel;
        size_t gws = (size_t)s->numel;
        clt__arg args[] = {CLT__ARG(ms), CLT__ARG(mm), CLT__ARG(off), CLT__ARG(nn),
                           CLT__ARG(cnt)};
        CLT__TRY(clt__error_in(
            clt__launch(L->dev, "linalg", opts, "chol_phi", 1, &gws, NULL, 5, args), fn));
        /* L^-T S L^-1, symmetric: Y = L^-T S, then L^-T Y^T */
        CLT__TRY(clt__copy_as(fn, lv, L->dtype, &lc));
        CLT__TRY(subst(fn, lc, NULL, s, batch, n, n, 1));
        CLT__TRY(clt__transpose(s, -2, -1, &yt, fn));
        CLT__TRY(clt__copy_as(fn, yt, L->dtype, &y));
        CLT__TRY(subst(fn, lc, NULL, y, batch, n, n, 1));
        CLT__TRY(clt__transpose(y, -2, -1, out, fn));
    } else {
        *out = s;
        s = NULL;
    }
done:
    clt_tensor_free(lv);
    clt_tensor_free(gv);
    clt_tensor_free(lt);
    clt_tensor_free(m);
    clt_tensor_free(s);
    clt_tensor_free(lc);
    clt_tensor_free(yt);
    clt_tensor_free(y);
    return st;
}
