/* linalg_geev.c: eigenvalues and eigenvectors of general square matrices
 * (torch.linalg.eig), computed on the host in complex double arithmetic
 * after one read-back: Householder reduction to Hessenberg form, shifted
 * QR to a Schur form, back substitution for the vectors (LAPACK's geev
 * path, without its balancing).  The public entries are in
 * src/autograd/linalg2.c. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "internal.h"

typedef double complex cplx;

/* Householder reduction of h (n x n, row-major) to upper Hessenberg form,
 * h := P^H h P, with q := q P. */
static void hessenberg(int64_t n, cplx *h, cplx *q, cplx *v)
{
    for (int64_t k = 0; k + 2 < n; k++) {
        double nrm = 0;
        for (int64_t i = k + 1; i < n; i++)
            nrm = hypot(nrm, cabs(h[i * n + k]));
        if (nrm == 0)
            continue;
        cplx x0 = h[(k + 1) * n + k];
        cplx alpha = -(cabs(x0) == 0 ? 1.0 : x0 / cabs(x0)) * nrm;
        double vn = 0;
        for (int64_t i = k + 1; i < n; i++) {
            v[i] = h[i * n + k] - (i == k + 1 ? alpha : 0);
            vn += creal(v[i] * conj(v[i]));
        }
        if (vn == 0)
            continue;
        /* P = I - 2 v v^H / |v|^2, applied from the left, then the right */
        for (int64_t j = 0; j < n; j++) {
            cplx s = 0;
            for (int64_t i = k + 1; i < n; i++)
                s += conj(v[i]) * h[i * n + j];
            s *= 2 / vn;
            for (int64_t i = k + 1; i < n; i++)
                h[i * n + j] -= s * v[i];
        }
        for (int pass = 0; pass < 2; pass++) {
            cplx *m = pass ? q : h;
            for (int64_t i = 0; i < n; i++) {
                cplx s = 0;
                for (int64_t j = k + 1; j < n; j++)
                    s += m[i * n + j] * v[j];
                s *= 2 / vn;
                for (int64_t j = k + 1; j < n; j++)
                    m[i * n + j] -= s * conj(v[j]);
            }
        }
        h[(k + 1) * n + k] = alpha;
        for (int64_t i = k + 2; i < n; i++)
            h[i * n + k] = 0;
    }
}

/* The shift of a QR step: the eigenvalue of the trailing 2 x 2 block
 * [a b; c d] nearer d (Wilkinson's). */
static cplx wilkinson(cplx a, cplx b, cplx c, cplx d)
{
    cplx t = (a - d) / 2, disc = csqrt(t * t + b * c);
    cplx den = cabs(t + disc) >= cabs(t - disc) ? t + disc : t - disc;
    return cabs(den) == 0 ? d : d - b * c / den;
}

/* The Hessenberg h to upper triangular T = Q^H A Q by shifted QR steps of
 * Givens rotations on the unreduced trailing block, with q := q Q; false
 * when an eigenvalue takes more than 30 max(10, n) steps. */
static bool schur(int64_t n, cplx *h, cplx *q, cplx *cs, cplx *sn)
{
    int64_t hi = n - 1, its = 0, limit = 30 * (n > 10 ? n : 10);
    while (hi > 0) {
        int64_t l;
        for (l = hi; l > 0; l--) {
            double sub = cabs(h[l * n + l - 1]);
            double s = cabs(h[(l - 1) * n + l - 1]) + cabs(h[l * n + l]);
            if (sub <= DBL_EPSILON * s || sub < DBL_MIN) {
                h[l * n + l - 1] = 0;
                break;
            }
        }
        if (l == hi) {
            hi--;
            its = 0;
            continue;
        }
        if (++its > limit)
            return false;
        cplx mu;
        if (its % 10 == 0) /* an exceptional shift breaks a cycle */
            mu = h[hi * n + hi] + 0.75 * cabs(h[hi * n + hi - 1]);
        else
            mu = wilkinson(h[(hi - 1) * n + hi - 1], h[(hi - 1) * n + hi], h[hi * n + hi - 1],
                           h[hi * n + hi]);
        for (int64_t i = l; i <= hi; i++)
            h[i * n + i] -= mu;
        /* H - mu I = G R: rotations from the left zero the subdiagonal */
        for (int64_t k = l; k < hi; k++) {
            cplx x = h[k * n + k], y = h[(k + 1) * n + k];
            double r = hypot(cabs(x), cabs(y));
            cs[k] = r == 0 ? 1 : x / r;
            sn[k] = r == 0 ? 0 : y / r;
            for (int64_t j = k; j < n; j++) {
                cplx u = h[k * n + j], w = h[(k + 1) * n + j];
                h[k * n + j] = conj(cs[k]) * u + conj(sn[k]) * w;
                h[(k + 1) * n + j] = -sn[k] * u + cs[k] * w;
            }
        }
        /* then R G + mu I, and Q G */
        for (int64_t k = l; k < hi; k++)
            for (int pass = 0; pass < 2; pass++) {
                cplx *m = pass ? q : h;
                int64_t rows = pass ? n : k + 2;
                for (int64_t i = 0; i < rows; i++) {
                    cplx u = m[i * n + k], w = m[i * n + k + 1];
                    m[i * n + k] = u * cs[k] + w * sn[k];
                    m[i * n + k + 1] = -u * conj(sn[k]) + w * conj(cs[k]);
                }
            }
        for (int64_t i = l; i <= hi; i++)
            h[i * n + i] += mu;
    }
    return true;
}

/* The eigenvectors of A = Q T Q^H into v (columns): x solving (T - t_kk I) x
 * = 0 with x_k = 1 by back substitution (a divisor below eps |T| taken as
 * that, as LAPACK's trevc), v_k = Q x, scaled to norm 1 with its largest
 * component (the first of equal ones) real and positive, as zgeev. */
static void vectors(int64_t n, const cplx *t, const cplx *q, cplx *v, cplx *x)
{
    double tn = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i; j < n; j++)
            tn = fmax(tn, cabs(t[i * n + j]));
    double smin = fmax(DBL_EPSILON * tn, DBL_MIN);
    for (int64_t k = 0; k < n; k++) {
        x[k] = 1;
        for (int64_t j = k - 1; j >= 0; j--) {
            cplx s = 0;
            for (int64_t i = j + 1; i <= k; i++)
                s += t[j * n + i] * x[i];
            cplx d = t[j * n + j] - t[k * n + k];
            if (cabs(d) < smin)
                d = smin;
            x[j] = -s / d;
            double big = cabs(x[j]);
            if (big > 1e100)
                for (int64_t i = j; i <= k; i++)
                    x[i] /= big;
        }
        double nrm = 0, best = -1;
        int64_t at = 0;
        for (int64_t i = 0; i < n; i++) {
            cplx s = 0;
            for (int64_t j = 0; j <= k; j++)
                s += q[i * n + j] * x[j];
            v[i * n + k] = s;
            nrm = hypot(nrm, cabs(s));
            double m = creal(s) * creal(s) + cimag(s) * cimag(s);
            if (m > best) {
                best = m;
                at = i;
            }
        }
        cplx lead = v[at * n + k];
        cplx scale = cabs(lead) == 0 ? 1.0 / nrm : conj(lead) / cabs(lead) / nrm;
        for (int64_t i = 0; i < n; i++)
            v[i * n + k] *= scale;
        v[at * n + k] = creal(v[at * n + k]);
    }
}

/* One matrix: a (n x n complex) to eigenvalues w[n] and, when v is not
 * NULL, eigenvectors v (n x n, columns); false when QR did not converge. */
static bool geev(int64_t n, cplx *a, cplx *w, cplx *v, cplx *work)
{
    cplx *q = work, *x = work + n * n, *cs = x + n, *sn = cs + n;
    for (int64_t i = 0; i < n * n; i++)
        q[i] = i % (n + 1) == 0 ? 1 : 0;
    hessenberg(n, a, q, x);
    if (!schur(n, a, q, cs, sn))
        return false;
    for (int64_t i = 0; i < n; i++)
        w[i] = a[i * n + i];
    if (v)
        vectors(n, a, q, v, x);
    return true;
}

clt_status clt__linalg_eig(const clt_tensor *a, bool want_vectors, clt_tensor **w,
                           clt_tensor **v, const char *fn)
{
    *w = NULL;
    if (v)
        *v = NULL;
    bool cx = clt__dtype_is_complex(a->dtype);
    if (clt__dtype_is_half(a->dtype) || (!cx && !clt__dtype_is_float(a->dtype)))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                          clt_dtype_name(a->dtype));
    clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The input tensor A must have at least 2 dimensions.", fn);
    int nd = a->ndim;
    int64_t n = a->shape[nd - 1];
    if (a->shape[nd - 2] != n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: A must be batches of square matrices, but they are %lld by %lld "
                          "matrices",
                          fn, (long long)a->shape[nd - 2], (long long)n);
    bool dbl = a->dtype == CLT_FLOAT64 || a->dtype == CLT_COMPLEX128;
    clt_dtype odt = dbl ? CLT_COMPLEX128 : CLT_COMPLEX64;
    int64_t batch = clt__linalg_count(nd - 2, a->shape);
    int64_t vshape[CLT_MAX_DIMS];
    memcpy(vshape, a->shape, sizeof vshape);
    clt_tensor *re = NULL, *ws = NULL, *vs = NULL;
    double *in = NULL;
    cplx *mat = NULL, *wv = NULL, *vv = NULL, *work = NULL;
    void *wo = NULL, *vo = NULL;
    if (cx)
        CLT__TRY(clt__view_as_real(a, &re, fn));
    CLT__TRY(clt__read_doubles(fn, cx ? re : a, &in));
    size_t nn = (size_t)(n * n), cnt = (size_t)(batch * n);
    size_t es = clt_dtype_size(odt);
    mat = clt__calloc(nn + 1, sizeof *mat);
    wv = clt__calloc(cnt + 1, sizeof *wv);
    vv = clt__calloc(cnt * (size_t)n + 1, sizeof *vv);
    work = clt__calloc(nn + 3 * (size_t)n + 1, sizeof *work);
    wo = clt__calloc(cnt + 1, es);
    vo = clt__calloc(cnt * (size_t)n + 1, es);
    if (!mat || !wv || !vv || !work || !wo || !vo) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (size_t i = 0; i < cnt * (size_t)n; i++)
        if (!isfinite(in[cx ? 2 * i : i]) || (cx && !isfinite(in[2 * i + 1]))) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: torch.linalg.eig: input tensor should not contain infs or NaNs.",
                            fn);
            goto done;
        }
    for (int64_t b = 0; b < batch; b++) {
        for (size_t i = 0; i < nn; i++) {
            size_t e = (size_t)b * nn + i;
            mat[i] = cx ? CMPLX(in[2 * e], in[2 * e + 1]) : CMPLX(in[e], 0);
        }
        if (!geev(n, mat, wv + b * n, want_vectors ? vv + (size_t)b * nn : NULL, work)) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: (Batch element %lld): The algorithm failed to converge because "
                            "the input matrix is ill-conditioned or has too many repeated "
                            "eigenvalues.",
                            fn, (long long)b);
            goto done;
        }
    }
    for (int k = 0; k < 2; k++) {
        cplx *src = k ? vv : wv;
        void *dst = k ? vo : wo;
        size_t m = k ? cnt * (size_t)n : cnt;
        for (size_t i = 0; i < m; i++) {
            if (dbl) {
                ((double *)dst)[2 * i] = creal(src[i]);
                ((double *)dst)[2 * i + 1] = cimag(src[i]);
            } else {
                ((float *)dst)[2 * i] = (float)creal(src[i]);
                ((float *)dst)[2 * i + 1] = (float)cimag(src[i]);
            }
        }
    }
    CLT__TRY(clt__tensor_from_host_in(fn, a->dev, odt, nd - 1, a->shape, wo, &ws));
    if (want_vectors)
        CLT__TRY(clt__tensor_from_host_in(fn, a->dev, odt, nd, vshape, vo, &vs));
    *w = ws;
    ws = NULL;
    if (v) {
        *v = vs;
        vs = NULL;
    }
done:
    clt_tensor_free(re);
    clt_tensor_free(ws);
    clt_tensor_free(vs);
    free(in);
    free(mat);
    free(wv);
    free(vv);
    free(work);
    free(wo);
    free(vo);
    return st;
}
