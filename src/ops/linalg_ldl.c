/* linalg_ldl.c: the Bunch-Kaufman LDL^T factorisation (LAPACK's sytf2),
 * its solve (sytrs) and the product with the Q of a compact QR (ormqr),
 * computed on the host in double arithmetic after a read-back, without
 * autograd; the public entries are in src/autograd/linalg3.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Element (i, j) of the row-major n x n matrix a. */
#define AT(a, n, i, j) (a)[(size_t)(i) * (size_t)(n) + (size_t)(j)]

static clt_status oom(const char *fn)
{
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
}

/* LAPACK's dsytf2 with uplo 'L' on the n x n matrix a (its lower triangle
 * read and overwritten with L below the diagonal and D's blocks on it),
 * 0-based: ipiv gets LAPACK's 1-based pivots (negative for a 2 x 2
 * block); returns info (the 1-based column of the first zero pivot, or 0). */
static int sytf2(int64_t n, double *a, int32_t *ipiv)
{
    const double alpha = (1 + sqrt(17.0)) / 8;
    int info = 0;
    int64_t k = 0;
    while (k < n) {
        int64_t kstep = 1, kp, imax = k;
        double absakk = fabs(AT(a, n, k, k)), colmax = 0;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(AT(a, n, i, k)) > colmax) {
                colmax = fabs(AT(a, n, i, k));
                imax = i;
            }
        if ((absakk > colmax ? absakk : colmax) == 0 || isnan(absakk)) {
            if (info == 0)
                info = (int)(k + 1);
            kp = k;
        } else {
            if (absakk >= alpha * colmax) {
                kp = k;
            } else {
                double rowmax = 0;
                for (int64_t j = k; j < imax; j++)
                    if (fabs(AT(a, n, imax, j)) > rowmax)
                        rowmax = fabs(AT(a, n, imax, j));
                for (int64_t j = imax + 1; j < n; j++)
                    if (fabs(AT(a, n, j, imax)) > rowmax)
                        rowmax = fabs(AT(a, n, j, imax));
                if (absakk >= alpha * colmax * (colmax / rowmax)) {
                    kp = k;
                } else if (fabs(AT(a, n, imax, imax)) >= alpha * rowmax) {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            int64_t kk = k + kstep - 1;
            if (kp != kk) {
                double t;
                for (int64_t i = kp + 1; i < n; i++) {
                    t = AT(a, n, i, kk);
                    AT(a, n, i, kk) = AT(a, n, i, kp);
                    AT(a, n, i, kp) = t;
                }
                for (int64_t j = kk + 1; j < kp; j++) {
                    t = AT(a, n, j, kk);
                    AT(a, n, j, kk) = AT(a, n, kp, j);
                    AT(a, n, kp, j) = t;
                }
                t = AT(a, n, kk, kk);
                AT(a, n, kk, kk) = AT(a, n, kp, kp);
                AT(a, n, kp, kp) = t;
                if (kstep == 2) {
                    t = AT(a, n, k + 1, k);
                    AT(a, n, k + 1, k) = AT(a, n, kp, k);
                    AT(a, n, kp, k) = t;
                }
            }
            if (kstep == 1) {
                double d11 = 1 / AT(a, n, k, k);
                for (int64_t j = k + 1; j < n; j++)
                    for (int64_t i = j; i < n; i++)
                        AT(a, n, i, j) -= d11 * AT(a, n, i, k) * AT(a, n, j, k);
                for (int64_t i = k + 1; i < n; i++)
                    AT(a, n, i, k) *= d11;
            } else if (k < n - 2) {
                double d21 = AT(a, n, k + 1, k);
                double d11 = AT(a, n, k + 1, k + 1) / d21;
                double d22 = AT(a, n, k, k) / d21;
                double t = 1 / (d11 * d22 - 1);
                d21 = t / d21;
                for (int64_t j = k + 2; j < n; j++) {
                    double wk = d21 * (d11 * AT(a, n, j, k) - AT(a, n, j, k + 1));
                    double wkp1 = d21 * (d22 * AT(a, n, j, k + 1) - AT(a, n, j, k));
                    for (int64_t i = j; i < n; i++)
                        AT(a, n, i, j) -= AT(a, n, i, k) * wk + AT(a, n, i, k + 1) * wkp1;
                    AT(a, n, j, k) = wk;
                    AT(a, n, j, k + 1) = wkp1;
                }
            }
        }
        if (kstep == 1) {
            ipiv[k] = (int32_t)(kp + 1);
        } else {
            ipiv[k] = ipiv[k + 1] = (int32_t)-(kp + 1);
        }
        k += kstep;
    }
    /* the strict upper triangle is zero, as torch leaves it */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++)
            AT(a, n, i, j) = 0;
    return info;
}

clt_status clt__linalg_ldl_factor(const clt_tensor *a, clt_tensor **ld, clt_tensor **pivots,
                                  clt_tensor **info, const char *fn)
{
    *ld = *pivots = *info = NULL;
    if (a->ndim >= 1 && (clt__dtype_is_complex(a->dtype)))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: complex matrices are not supported (float32 or float64 only)", fn);
    clt_status st = clt__linalg_check(a, "A", true, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim - 2;
    int64_t n = a->shape[nd], batch = clt__linalg_count(nd, a->shape);
    size_t nn = (size_t)(n * n);
    double *v = NULL;
    int32_t *piv = clt__calloc((size_t)(batch * n) + 1, sizeof *piv);
    int32_t *inf = clt__calloc((size_t)batch + 1, sizeof *inf);
    clt_tensor *l = NULL, *p = NULL, *f = NULL;
    if (piv == NULL || inf == NULL) {
        st = oom(fn);
        goto done;
    }
    CLT__TRY(clt__read_doubles(fn, a, &v));
    for (int64_t b = 0; b < batch; b++)
        inf[b] = sytf2(n, v + (size_t)b * nn, piv + b * n);
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &l));
    if (l->numel > 0)
        CLT__TRY(clt__write_doubles(fn, l, v));
    CLT__TRY(clt__tensor_from_host_in(fn, a->dev, CLT_INT32, nd + 1, a->shape, piv, &p));
    CLT__TRY(clt__tensor_from_host_in(fn, a->dev, CLT_INT32, nd, a->shape, inf, &f));
    *ld = l;
    *pivots = p;
    *info = f;
    l = p = f = NULL;
done:
    clt_tensor_free(l);
    clt_tensor_free(p);
    clt_tensor_free(f);
    free(v);
    free(piv);
    free(inf);
    return st == CLT_OK ? clt__ok() : st;
}

/* LAPACK's dsytrs with uplo 'L': b (n x k, row-major) := A^{-1} b for A =
 * P L D L^T P^T as sytf2 left it in a. */
static void sytrs(int64_t n, int64_t nk, const double *a, const int32_t *ipiv, double *b)
{
#define B(i, j) b[(size_t)(i) * (size_t)nk + (size_t)(j)]
    for (int64_t k = 0; k < n;) {
        if (ipiv[k] > 0) {
            int64_t kp = ipiv[k] - 1;
            if (kp != k)
                for (int64_t j = 0; j < nk; j++) {
                    double t = B(k, j);
                    B(k, j) = B(kp, j);
                    B(kp, j) = t;
                }
            for (int64_t i = k + 1; i < n; i++)
                for (int64_t j = 0; j < nk; j++)
                    B(i, j) -= AT(a, n, i, k) * B(k, j);
            for (int64_t j = 0; j < nk; j++)
                B(k, j) /= AT(a, n, k, k);
            k += 1;
        } else {
            int64_t kp = -ipiv[k] - 1;
            if (kp != k + 1)
                for (int64_t j = 0; j < nk; j++) {
                    double t = B(k + 1, j);
                    B(k + 1, j) = B(kp, j);
                    B(kp, j) = t;
                }
            for (int64_t i = k + 2; i < n; i++)
                for (int64_t j = 0; j < nk; j++)
                    B(i, j) -= AT(a, n, i, k) * B(k, j) + AT(a, n, i, k + 1) * B(k + 1, j);
            double akm1k = AT(a, n, k + 1, k);
            double akm1 = AT(a, n, k, k) / akm1k, ak = AT(a, n, k + 1, k + 1) / akm1k;
            double denom = akm1 * ak - 1;
            for (int64_t j = 0; j < nk; j++) {
                double bkm1 = B(k, j) / akm1k, bk = B(k + 1, j) / akm1k;
                B(k, j) = (ak * bkm1 - bk) / denom;
                B(k + 1, j) = (akm1 * bk - bkm1) / denom;
            }
            k += 2;
        }
    }
    for (int64_t k = n - 1; k >= 0;) {
        int64_t step = ipiv[k] > 0 ? 1 : 2;
        for (int64_t i = k + 1; i < n; i++)
            for (int64_t j = 0; j < nk; j++) {
                B(k, j) -= AT(a, n, i, k) * B(i, j);
                if (step == 2)
                    B(k - 1, j) -= AT(a, n, i, k - 1) * B(i, j);
            }
        int64_t kp = (ipiv[k] > 0 ? ipiv[k] : -ipiv[k]) - 1;
        if (kp != k)
            for (int64_t j = 0; j < nk; j++) {
                double t = B(k, j);
                B(k, j) = B(kp, j);
                B(kp, j) = t;
            }
        k -= step;
    }
#undef B
}

clt_status clt__linalg_ldl_solve(const clt_tensor *ld, const clt_tensor *pivots,
                                 const clt_tensor *b, clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_status st = clt__same_device(ld, pivots, fn);
    if (st == CLT_OK)
        st = clt__same_device(ld, b, fn);
    if (st == CLT_OK)
        st = clt__linalg_check(ld, "LD", true, fn);
    if (st != CLT_OK)
        return st;
    if (b->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The input tensor B must have at least 2 dimensions.", fn);
    if (b->dtype != ld->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected LD and B to have the same dtype, but got %s and %s", fn,
                          clt_dtype_name(ld->dtype), clt_dtype_name(b->dtype));
    if (pivots->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected pivots to be integers. Got %s (int32 as "
                          "clt_linalg_ldl_factor gives them)",
                          fn, clt_dtype_name(pivots->dtype));
    int nd = ld->ndim - 2;
    int64_t n = ld->shape[nd];
    bool fits = pivots->ndim == nd + 1 && pivots->shape[nd] == n;
    for (int d = 0; fits && d < nd; d++)
        fits = pivots->shape[d] == ld->shape[d];
    if (!fits)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected LD.shape[:-1] and pivots.shape to be the same", fn);
    if (b->shape[b->ndim - 2] != n)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Incompatible matrix sizes for torch.linalg.ldl_solve: each A "
                          "matrix is %lld by %lld but each b matrix is %lld by %lld",
                          fn, (long long)n, (long long)n, (long long)b->shape[b->ndim - 2],
                          (long long)b->shape[b->ndim - 1]);
    clt_tensor *le = NULL, *pe = NULL, *be = NULL, *x = NULL;
    double *lv = NULL, *pv = NULL, *bv = NULL;
    int32_t *ip = NULL;
    /* the batch dims broadcast */
    int nb = 0;
    int64_t bs[CLT_MAX_DIMS], s1[CLT_MAX_DIMS], s2[CLT_MAX_DIMS], s3[CLT_MAX_DIMS];
    CLT__TRY(clt__broadcast_shapes(nd, ld->shape, b->ndim - 2, b->shape, &nb, bs, fn));
    int64_t batch = clt__linalg_count(nb, bs), nk = b->shape[b->ndim - 1];
    memcpy(s1, bs, sizeof s1);
    memcpy(s2, bs, sizeof s2);
    memcpy(s3, bs, sizeof s3);
    s1[nb] = s1[nb + 1] = n;
    s2[nb] = n;
    s3[nb] = n;
    s3[nb + 1] = nk;
    CLT__TRY(clt__expand(ld, nb + 2, s1, &le, fn));
    CLT__TRY(clt__expand(pivots, nb + 1, s2, &pe, fn));
    CLT__TRY(clt__expand(b, nb + 2, s3, &be, fn));
    CLT__TRY(clt__read_doubles(fn, le, &lv));
    CLT__TRY(clt__read_doubles(fn, pe, &pv));
    CLT__TRY(clt__read_doubles(fn, be, &bv));
    ip = clt__calloc((size_t)(batch * n) + 1, sizeof *ip);
    if (ip == NULL) {
        st = oom(fn);
        goto done;
    }
    for (int64_t i = 0; i < batch * n; i++) {
        int64_t p = (int64_t)pv[i], r = i % (n ? n : 1);
        /* a pivot that sytrf cannot have given would read out of bounds */
        bool ok = p != 0 && (p > 0 ? p <= n : -p <= n);
        if (ok && p < 0) {
            bool first = r + 1 < n && (int64_t)pv[i + 1] == p;
            bool second = r > 0 && (int64_t)pv[i - 1] == p;
            ok = first || second;
        }
        if (!ok) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: pivots[%lld] = %lld is not a pivot clt_linalg_ldl_factor "
                            "gives (1 to %lld, or a pair of equal negative ones)",
                            fn, (long long)r, (long long)p, (long long)n);
            goto done;
        }
        ip[i] = (int32_t)p;
    }
    for (int64_t bi = 0; bi < batch; bi++) {
        /* negative pairs pair up from the first; a lone one left is refused */
        const int32_t *pp = ip + bi * n;
        for (int64_t k = 0; k < n; k += pp[k] > 0 ? 1 : 2)
            if (pp[k] < 0 && (k + 1 >= n || pp[k + 1] != pp[k])) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: pivots[%lld] = %d starts a 2 x 2 block that pivots[%lld] "
                                "does not close",
                                fn, (long long)k, pp[k], (long long)(k + 1));
                goto done;
            }
        sytrs(n, nk, lv + (size_t)(bi * n * n), pp, bv + (size_t)(bi * n * nk));
    }
    CLT__TRY(clt__result_new(fn, b->dev, b->dtype, nb + 2, s3, &x));
    if (x->numel > 0)
        CLT__TRY(clt__write_doubles(fn, x, bv));
    *out = x;
    x = NULL;
done:
    clt_tensor_free(le);
    clt_tensor_free(pe);
    clt_tensor_free(be);
    clt_tensor_free(x);
    free(lv);
    free(pv);
    free(bv);
    free(ip);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- ormqr --------------------------------------------------------------------- */

clt_status clt__ormqr(const clt_tensor *a, const clt_tensor *tau, const clt_tensor *c, bool left,
                      bool transpose, clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_status st = clt__same_device(a, tau, fn);
    if (st == CLT_OK)
        st = clt__same_device(a, c, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.ormqr: input must have at least 2 dimensions.", fn);
    if (c->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.ormqr: other must have at least 2 dimensions.", fn);
    st = clt__linalg_check(a, "input", false, fn);
    if (st != CLT_OK)
        return st;
    int nd = a->ndim;
    if (tau->ndim != nd - 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.ormqr: Expected tau to have one dimension less than input, "
                          "but got tau.ndim equal to %d and input.ndim is equal to %d",
                          fn, tau->ndim, nd);
    if (c->ndim != nd)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.ormqr: Expected other to have the same number of "
                          "dimensions as input, but got other.ndim equal to %d and input.ndim "
                          "is equal to %d",
                          fn, c->ndim, nd);
    if (tau->dtype != a->dtype || c->dtype != a->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: torch.ormqr: Expected input, tau and other to have the same "
                          "dtype, but got %s, %s and %s",
                          fn, clt_dtype_name(a->dtype), clt_dtype_name(tau->dtype),
                          clt_dtype_name(c->dtype));
    for (int d = 0; d < nd - 2; d++)
        if (tau->shape[d] != a->shape[d] || c->shape[d] != a->shape[d])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: torch.ormqr: Expected batch dimensions of tau and other to be "
                              "equal to input.shape[:-2], but they differ in dim %d",
                              fn, d);
    int64_t mr = a->shape[nd - 2], na = a->shape[nd - 1], k = tau->shape[nd - 2];
    int64_t m = c->shape[nd - 2], n = c->shape[nd - 1];
    if (left ? m != mr : n != mr)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: torch.ormqr: other.shape[%d] must be equal to input.shape[-2]",
                          fn, left ? -2 : -1);
    if (k > na)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.ormqr: tau.shape[-1] must be less than or equal to "
                          "input.shape[-1]",
                          fn);
    if (k > mr)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.ormqr: tau.shape[-1] must be less than or equal to "
                          "input.shape[-2]",
                          fn);
    int64_t batch = clt__linalg_count(nd - 2, a->shape);
    double *av = NULL, *tv = NULL, *cv = NULL;
    clt_tensor *x = NULL;
    CLT__TRY(clt__read_doubles(fn, a, &av));
    CLT__TRY(clt__read_doubles(fn, tau, &tv));
    CLT__TRY(clt__read_doubles(fn, c, &cv));
    /* Q = H_0 ... H_{k-1}, H_i = I - tau_i v_i v_i^T (symmetric): Q C
     * applies H_{k-1} first, Q^T C H_0 first; C Q applies H_0 first, C Q^T
     * H_{k-1} first. */
    for (int64_t bi = 0; bi < batch; bi++) {
        const double *f = av + (size_t)(bi * mr * na), *t = tv + (size_t)(bi * k);
        double *x0 = cv + (size_t)(bi * m * n);
        bool forward = left == transpose;
        for (int64_t s = 0; s < k; s++) {
            int64_t i = forward ? s : k - 1 - s;
            double ti = t[i];
            if (ti == 0)
                continue;
            /* v: 1 at row i, f[r, i] below it, 0 above */
            if (left) {
                for (int64_t j = 0; j < n; j++) {
                    double w = x0[i * n + j];
                    for (int64_t r = i + 1; r < mr; r++)
                        w += f[r * na + i] * x0[r * n + j];
                    w *= ti;
                    x0[i * n + j] -= w;
                    for (int64_t r = i + 1; r < mr; r++)
                        x0[r * n + j] -= w * f[r * na + i];
                }
            } else {
                for (int64_t r0 = 0; r0 < m; r0++) {
                    double *row = x0 + r0 * n;
                    double w = row[i];
                    for (int64_t r = i + 1; r < mr; r++)
                        w += row[r] * f[r * na + i];
                    w *= ti;
                    row[i] -= w;
                    for (int64_t r = i + 1; r < mr; r++)
                        row[r] -= w * f[r * na + i];
                }
            }
        }
    }
    CLT__TRY(clt__result_new(fn, c->dev, c->dtype, c->ndim, c->shape, &x));
    if (x->numel > 0)
        CLT__TRY(clt__write_doubles(fn, x, cv));
    *out = x;
    x = NULL;
done:
    clt_tensor_free(x);
    free(av);
    free(tv);
    free(cv);
    return st == CLT_OK ? clt__ok() : st;
}
