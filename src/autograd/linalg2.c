/* linalg2.c: what is composed of recorded ops: isin, put, msort,
 * svd_lowrank, pca_lowrank and lu_unpack (torch.linalg.eig and eigvals
 * are in linalg3.c). */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

/* ---- isin ----------------------------------------------------------------------- */

clt_status clt_isin(const clt_tensor *elements, const clt_tensor *test_elements, int assume_unique,
                    int invert, clt_tensor **out)
{
    static const char fn[] = "clt_isin";
    (void)assume_unique; /* a hint only: the result is the same either way */
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(elements, fn);
    CLT__REQUIRE_ARG(test_elements, fn);
    clt_status st = clt__same_device(elements, test_elements, fn);
    if (st != CLT_OK)
        return st;
    if (clt__dtype_is_complex(elements->dtype) || clt__dtype_is_complex(test_elements->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: \"isin\" is not implemented for complex dtypes", fn);
    if (elements->dtype == CLT_BOOL || test_elements->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Unsupported input type encountered for isin(): bool", fn);
    clt_tensor *e = NULL, *t = NULL, *eq = NULL, *any = NULL, *r = NULL;
    int64_t ne = elements->numel, nt = test_elements->numel;
    /* [ne, 1] == [nt]: each element against every test element */
    CLT__TRY(clt__reshape(elements, 2, (int64_t[]){ne, 1}, &e, fn));
    CLT__TRY(clt__reshape(test_elements, 1, &nt, &t, fn));
    CLT__TRY(clt_eq(e, t, &eq));
    CLT__TRY(clt_any_dim(eq, 1, 0, &any));
    CLT__TRY(clt__reshape(any, elements->ndim, elements->shape, invert ? &r : out, fn));
    if (invert)
        CLT__TRY(clt_logical_not(r, out));
done:
    clt_tensor_free(e);
    clt_tensor_free(t);
    clt_tensor_free(eq);
    clt_tensor_free(any);
    clt_tensor_free(r);
    return st;
}

/* ---- put ------------------------------------------------------------------------ */

clt_status clt_put(const clt_tensor *t, const clt_tensor *index, const clt_tensor *source,
                   int accumulate, clt_tensor **out)
{
    static const char fn[] = "clt_put";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    CLT__REQUIRE_ARG(source, fn);
    clt_status st = clt__same_device(t, index, fn);
    if (st == CLT_OK)
        st = clt__same_device(t, source, fn);
    if (st != CLT_OK)
        return st;
    if (index->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: put_(): Expected a long tensor for index, but got %s", fn,
                          clt_dtype_name(index->dtype));
    if (source->dtype != t->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: put_(): self and source expected to have the same dtype, but got "
                          "self.dtype = %s and source.dtype = %s",
                          fn, clt_dtype_name(t->dtype), clt_dtype_name(source->dtype));
    if (source->numel != index->numel)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: put_(): Expected source and index to have the same number of "
                          "elements, but got source.numel() = %lld, index.numel() = %lld",
                          fn, (long long)source->numel, (long long)index->numel);
    if (t->numel == 0 && index->numel > 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: put_(): Tried to put elements into an empty tensor", fn);
    clt_tensor *flat = NULL, *ix = NULL, *src = NULL, *r = NULL;
    int64_t n = t->numel, k = index->numel;
    if (k == 0)
        return clt_clone(t, out);
    CLT__TRY(clt_reshape(t, 1, &n, &flat));
    CLT__TRY(clt__reshape(index, 1, &k, &ix, fn));
    CLT__TRY(clt_reshape(source, 1, &k, &src));
    CLT__TRY(clt_index_put(flat, (const clt_tensor *const *)&ix, 1, src, accumulate, &r));
    CLT__TRY(clt_reshape(r, t->ndim, t->shape, out));
done:
    clt_tensor_free(flat);
    clt_tensor_free(ix);
    clt_tensor_free(src);
    clt_tensor_free(r);
    return st;
}

/* ---- msort ---------------------------------------------------------------------- */

clt_status clt_msort(const clt_tensor *t, clt_tensor **out)
{
    static const char fn[] = "clt_msort";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_tensor *ix = NULL;
    clt_status st = clt_sort(t, 0, 0, out, &ix);
    clt_tensor_free(ix);
    return st;
}

/* ---- svd_lowrank and pca_lowrank --------------------------------------------------- */

/* torch's get_approximate_basis without M: Q [..., r, min(r, q)] with
 * orthonormal columns spanning about the range of a [..., r, c], from
 * Q = qr(A R).Q for R [c, q] standard normal, then niter times Q =
 * qr(A^T Q).Q, Q = qr(A Q).Q. */
static clt_status basis(const clt_tensor *a, int64_t q, int64_t niter, clt_generator *gen,
                        clt_tensor **out)
{
    int nd = a->ndim;
    clt_tensor *r = NULL, *at = NULL, *y = NULL, *qm = NULL, *rr = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt_randn(gen, a->dev, a->dtype, 2, (int64_t[]){a->shape[nd - 1], q}, &r));
    CLT__TRY(clt_transpose(a, -2, -1, &at));
    CLT__TRY(clt_matmul(a, r, &y));
    CLT__TRY(clt_linalg_qr(y, "reduced", &qm, &rr));
    for (int64_t i = 0; i < 2 * niter; i++) {
        clt_tensor_free(y);
        clt_tensor_free(rr);
        y = rr = NULL;
        CLT__TRY(clt_matmul(i % 2 ? a : at, qm, &y));
        clt_tensor_free(qm);
        qm = NULL;
        CLT__TRY(clt_linalg_qr(y, "reduced", &qm, &rr));
    }
    *out = qm;
    qm = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(at);
    clt_tensor_free(y);
    clt_tensor_free(qm);
    clt_tensor_free(rr);
    return st;
}

static clt_status lowrank_check(const clt_tensor *a, int64_t q, int64_t niter, const char *fn)
{
    if (a->dtype != CLT_FLOAT32 && a->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: expected a float32 or float64 tensor, got %s", fn,
                          clt_dtype_name(a->dtype));
    if (a->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the input tensor A must have at least 2 dimensions, got %d", fn,
                          a->ndim);
    if (q < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: q(=%lld) must be non-negative integer",
                          fn, (long long)q);
    if (niter < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: niter(=%lld) must be non-negative integer", fn, (long long)niter);
    return CLT_OK;
}

/* torch's _svd_lowrank on d (A - M already taken). */
static clt_status lowrank(const clt_tensor *d, int64_t q, int64_t niter, clt_generator *gen,
                          clt_tensor **u, clt_tensor **s, clt_tensor **v)
{
    int nd = d->ndim;
    int64_t rows = d->shape[nd - 2], cols = d->shape[nd - 1];
    clt_tensor *dt = NULL, *qm = NULL, *qt = NULL, *b = NULL, *uu = NULL, *vh = NULL, *vv = NULL;
    clt_status st = CLT_OK;
    if (rows < cols || cols > q) {
        /* the SVD of the transpose keeps B and V small */
        CLT__TRY(clt_transpose(d, -2, -1, &dt));
        CLT__TRY(basis(dt, q, niter, gen, &qm));
        CLT__TRY(clt_matmul(d, qm, &b));
        CLT__TRY(clt_linalg_svd(b, 0, u, s, &vh));
        CLT__TRY(clt_transpose(vh, -2, -1, &vv));
        CLT__TRY(clt_matmul(qm, vv, v));
    } else {
        CLT__TRY(basis(d, q, niter, gen, &qm));
        CLT__TRY(clt_transpose(qm, -2, -1, &qt));
        CLT__TRY(clt_matmul(qt, d, &b));
        CLT__TRY(clt_linalg_svd(b, 0, &uu, s, &vh));
        CLT__TRY(clt_transpose(vh, -2, -1, v));
        CLT__TRY(clt_matmul(qm, uu, u));
    }
done:
    if (st != CLT_OK) {
        clt_tensor_free(*u);
        clt_tensor_free(*s);
        clt_tensor_free(*v);
        *u = *s = *v = NULL;
    }
    clt_tensor_free(dt);
    clt_tensor_free(qm);
    clt_tensor_free(qt);
    clt_tensor_free(b);
    clt_tensor_free(uu);
    clt_tensor_free(vh);
    clt_tensor_free(vv);
    return st;
}

static clt_status lowrank_outs(clt_tensor **u, clt_tensor **s, clt_tensor **v, const char *fn)
{
    if (u)
        *u = NULL;
    if (s)
        *s = NULL;
    if (v)
        *v = NULL;
    CLT__REQUIRE_ARG(u, fn);
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(v, fn);
    return CLT_OK;
}

clt_status clt_svd_lowrank(const clt_tensor *a, int64_t q, int64_t niter, const clt_tensor *m,
                           clt_generator *gen, clt_tensor **u, clt_tensor **s, clt_tensor **v)
{
    static const char fn[] = "clt_svd_lowrank";
    clt_status st = lowrank_outs(u, s, v, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(a, fn);
    st = lowrank_check(a, q, niter, fn);
    if (st == CLT_OK && m) {
        st = clt__same_device(a, m, fn);
        if (st == CLT_OK && m->dtype != a->dtype)
            st = clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: M is %s but A is %s", fn,
                            clt_dtype_name(m->dtype), clt_dtype_name(a->dtype));
    }
    if (st != CLT_OK)
        return st;
    clt_tensor *d = NULL;
    if (m) {
        st = clt_sub(a, m, &d);
        if (st == CLT_OK && d->ndim != a->ndim) {
            st = clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: M does not broadcast to A's shape", fn);
        }
        for (int i = 0; st == CLT_OK && i < a->ndim; i++)
            if (d->shape[i] != a->shape[i])
                st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                "%s: M does not broadcast to A's shape (dim %d)", fn, i);
    }
    if (st == CLT_OK)
        st = lowrank(m ? d : a, q, niter, gen, u, s, v);
    clt_tensor_free(d);
    return st;
}

clt_status clt_pca_lowrank(const clt_tensor *a, int64_t q, int center, int64_t niter,
                           clt_generator *gen, clt_tensor **u, clt_tensor **s, clt_tensor **v)
{
    static const char fn[] = "clt_pca_lowrank";
    clt_status st = lowrank_outs(u, s, v, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(a, fn);
    st = lowrank_check(a, q < 0 ? 0 : q, niter, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim;
    int64_t k = a->shape[nd - 2] < a->shape[nd - 1] ? a->shape[nd - 2] : a->shape[nd - 1];
    if (q < 0)
        q = k < 6 ? k : 6;
    else if (q > k)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: q(=%lld) must be non-negative integer and not greater than min(m, "
                          "n)=%lld",
                          fn, (long long)q, (long long)k);
    if (!center)
        return lowrank(a, q, niter, gen, u, s, v);
    clt_tensor *c = NULL, *d = NULL;
    CLT__TRY(clt_mean_dim(a, -2, 1, &c));
    CLT__TRY(clt_sub(a, c, &d));
    st = lowrank(d, q, niter, gen, u, s, v);
done:
    clt_tensor_free(c);
    clt_tensor_free(d);
    return st;
}

/* ---- lu_unpack ------------------------------------------------------------------------ */

clt_status clt_lu_unpack(const clt_tensor *lu, const clt_tensor *pivots, int unpack_data,
                         int unpack_pivots, clt_tensor **p, clt_tensor **l, clt_tensor **u)
{
    static const char fn[] = "clt_lu_unpack";
    clt_status st = lowrank_outs(p, l, u, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(lu, fn);
    CLT__REQUIRE_ARG(pivots, fn);
    st = clt__same_device(lu, pivots, fn);
    if (st == CLT_OK)
        st = clt__linalg_check(lu, "LU_data", false, fn);
    if (st != CLT_OK)
        return st;
    if (pivots->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                          "of torch.int32 dtype.",
                          fn);
    int nd = lu->ndim;
    int64_t m = lu->shape[nd - 2], n = lu->shape[nd - 1], k = m < n ? m : n;
    bool fits = pivots->ndim == nd - 1 && pivots->shape[nd - 2] <= m;
    for (int d = 0; fits && d < nd - 2; d++)
        fits = pivots->shape[d] == lu->shape[d];
    if (!fits)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: LU_pivots must have LU_data's batch dimensions and at most %lld "
                          "pivots",
                          fn, (long long)m);
    clt_tensor *t[4] = {NULL, NULL, NULL, NULL};
    double *pv = NULL;
    if (unpack_pivots) {
        CLT__TRY(clt__read_doubles(fn, pivots, &pv));
        for (int64_t i = 0; i < pivots->numel; i++)
            if (pv[i] < 1 || pv[i] > (double)m) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: pivots passed to lu_unpack must be between 1 and "
                                "LU.size(-2) inclusive.Did you properly pass the result of "
                                "lu_factor?",
                                fn);
                goto done;
            }
        CLT__TRY(clt__linalg_lu_perm(pivots, m, lu->dtype, p, fn));
    } else {
        CLT__TRY(clt_zeros(lu->dev, lu->dtype, 1, (int64_t[]){0}, p));
    }
    if (unpack_data) {
        /* L: the first k columns, unit lower; U: the first k rows, upper */
        CLT__TRY(clt_narrow(lu, -1, 0, k, &t[0]));
        CLT__TRY(clt_tril(t[0], -1, &t[1]));
        CLT__TRY(clt_eye(lu->dev, lu->dtype, m, k, &t[2]));
        CLT__TRY(clt_add(t[1], t[2], l));
        CLT__TRY(clt_narrow(lu, -2, 0, k, &t[3]));
        CLT__TRY(clt_triu(t[3], 0, u));
    } else {
        CLT__TRY(clt_zeros(lu->dev, lu->dtype, 1, (int64_t[]){0}, l));
        CLT__TRY(clt_zeros(lu->dev, lu->dtype, 1, (int64_t[]){0}, u));
    }
done:
    if (st != CLT_OK) {
        clt_tensor_free(*p);
        clt_tensor_free(*l);
        clt_tensor_free(*u);
        *p = *l = *u = NULL;
    }
    for (int i = 0; i < 4; i++)
        clt_tensor_free(t[i]);
    free(pv);
    return st;
}
