/* linalg3.c: torch.linalg.ldl_factor(_ex), ldl_solve, torch.geqrf, orgqr
 * and ormqr (src/ops/linalg_ldl.c, src/ops/linalg_qr.c), which torch 1.13
 * cannot differentiate (their nodes refuse backward, as torch's), and
 * torch.linalg.eig and eigvals (src/ops/linalg_geev.c) with torch's
 * linalg_eig_backward, computed on the host in complex double. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

static const char bw_fn[] = "clt_backward";

/* ---- nodes that refuse to be differentiated ------------------------------------ */

/* n->i[0] names the op, as torch's message does. */
static const char *const refused_ops[] = {"aten::linalg_ldl_factor_ex", "geqrf", "ormqr"};

static clt_status bw_refuse(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: the derivative for '%s' is not implemented, as in PyTorch 1.13", bw_fn,
                      refused_ops[n->i[0]]);
}

/* Records on *out (a fresh floating result) a node `name` whose backward
 * fails, when an input requires grad; on failure releases *out. */
static clt_status record_refusal(clt_tensor **out, const char *name, int op, int nin,
                                 const clt_tensor *const *in)
{
    clt__node *n = NULL;
    clt_status st = clt__record(CLT_OK, out, name, bw_refuse, nin, in, 0, NULL, &n);
    if (n)
        n->i[0] = op;
    return st;
}

/* ---- LDL^T ------------------------------------------------------------------------ */

static clt_status ldl_outs(clt_tensor **ld, clt_tensor **pivots, const char *fn)
{
    if (ld)
        *ld = NULL;
    if (pivots)
        *pivots = NULL;
    CLT__REQUIRE_ARG(ld, fn);
    CLT__REQUIRE_ARG(pivots, fn);
    return CLT_OK;
}

static clt_status ldl_factor(const clt_tensor *a, clt_tensor **ld, clt_tensor **pivots,
                             clt_tensor **info, const char *fn)
{
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__linalg_ldl_factor(a, ld, pivots, info, fn);
    if (st == CLT_OK)
        st = record_refusal(ld, "NotImplemented", 0, 1, &a);
    if (st != CLT_OK) {
        clt_tensor_free(*ld);
        clt_tensor_free(*pivots);
        clt_tensor_free(*info);
        *ld = *pivots = *info = NULL;
    }
    return st;
}

clt_status clt_linalg_ldl_factor_ex(const clt_tensor *a, int hermitian, clt_tensor **ld,
                                    clt_tensor **pivots, clt_tensor **info)
{
    static const char fn[] = "clt_linalg_ldl_factor_ex";
    (void)hermitian; /* real matrices only: symmetric is hermitian */
    if (info)
        *info = NULL;
    clt_status st = ldl_outs(ld, pivots, fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(info, fn);
    return ldl_factor(a, ld, pivots, info, fn);
}

clt_status clt_linalg_ldl_factor(const clt_tensor *a, int hermitian, clt_tensor **ld,
                                 clt_tensor **pivots)
{
    static const char fn[] = "clt_linalg_ldl_factor";
    (void)hermitian;
    clt_status st = ldl_outs(ld, pivots, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *info = NULL;
    double *iv = NULL;
    CLT__TRY(ldl_factor(a, ld, pivots, &info, fn));
    CLT__TRY(clt__read_doubles(fn, info, &iv));
    for (int64_t b = 0; b < info->numel; b++)
        if (iv[b] != 0) {
            char batch[48] = "";
            if (a->ndim > 2)
                snprintf(batch, sizeof batch, "(Batch element %lld): ", (long long)b);
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: %sD[%lld,%lld] is exactly zero: the matrix is singular and "
                            "ldl_solve with it would divide by zero (torch.linalg.ldl_factor "
                            "fails here; clt_linalg_ldl_factor_ex reports it in info)",
                            fn, batch, (long long)iv[b], (long long)iv[b]);
            goto done;
        }
done:
    if (st != CLT_OK) {
        clt_tensor_free(*ld);
        clt_tensor_free(*pivots);
        *ld = *pivots = NULL;
    }
    clt_tensor_free(info);
    free(iv);
    return st;
}

clt_status clt_linalg_ldl_solve(const clt_tensor *ld, const clt_tensor *pivots,
                                const clt_tensor *b, int hermitian, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_ldl_solve";
    (void)hermitian;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(ld, fn);
    CLT__REQUIRE_ARG(pivots, fn);
    CLT__REQUIRE_ARG(b, fn);
    const clt_tensor *in[2] = {ld, b};
    clt_status st = clt__linalg_ldl_solve(ld, pivots, b, out, fn);
    if (st == CLT_OK)
        st = record_refusal(out, "NotImplemented", 0, 2, in);
    return st;
}

/* ---- geqrf, orgqr, ormqr ------------------------------------------------------------ */

clt_status clt_geqrf(const clt_tensor *a, clt_tensor **f, clt_tensor **tau)
{
    static const char fn[] = "clt_geqrf";
    if (f)
        *f = NULL;
    if (tau)
        *tau = NULL;
    CLT__REQUIRE_ARG(f, fn);
    CLT__REQUIRE_ARG(tau, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = clt__geqrf(a, f, tau, fn);
    if (st == CLT_OK)
        st = record_refusal(f, "GeqrfBackward0", 1, 1, &a);
    if (st == CLT_OK)
        st = record_refusal(tau, "GeqrfBackward0", 1, 1, &a);
    if (st != CLT_OK) {
        clt_tensor_free(*f);
        clt_tensor_free(*tau);
        *f = *tau = NULL;
    }
    return st;
}

clt_status clt_orgqr(const clt_tensor *a, const clt_tensor *tau, clt_tensor **out)
{
    return clt_linalg_householder_product(a, tau, out);
}

clt_status clt_ormqr(const clt_tensor *a, const clt_tensor *tau, const clt_tensor *c, int left,
                     int transpose, clt_tensor **out)
{
    static const char fn[] = "clt_ormqr";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(tau, fn);
    CLT__REQUIRE_ARG(c, fn);
    const clt_tensor *in[3] = {a, tau, c};
    clt_status st = clt__ormqr(a, tau, c, left != 0, transpose != 0, out, fn);
    if (st == CLT_OK)
        st = record_refusal(out, "OrmqrBackward0", 2, 3, in);
    return st;
}

/* ---- eig and eigvals with torch's linalg_eig_backward ------------------------------- */

/* t (complex) as complex doubles in a new array (release with free). */
static clt_status read_cplx(const clt_tensor *t, double complex **out)
{
    *out = NULL;
    clt_tensor *c = NULL, *r = NULL;
    double *d = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__contiguous(t, &c));
    CLT__TRY(clt__view_as_real(c, &r, bw_fn));
    CLT__TRY(clt__read_doubles(bw_fn, r, &d));
    double complex *z = clt__calloc((size_t)t->numel + 1, sizeof *z);
    if (z == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", bw_fn);
        goto done;
    }
    for (int64_t i = 0; i < t->numel; i++)
        z[i] = CMPLX(d[2 * i], d[2 * i + 1]);
    *out = z;
done:
    clt_tensor_free(c);
    clt_tensor_free(r);
    free(d);
    return st;
}

/* x := a^{-1} x for the n x n a (destroyed) and n x n x, by Gaussian
 * elimination with partial pivoting; false when a is singular. */
static bool csolve(int64_t n, double complex *a, double complex *x)
{
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; i++)
            if (cabs(a[i * n + k]) > cabs(a[p * n + k]))
                p = i;
        if (a[p * n + k] == 0)
            return false;
        if (p != k)
            for (int64_t j = 0; j < n; j++) {
                double complex t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
                t = x[k * n + j];
                x[k * n + j] = x[p * n + j];
                x[p * n + j] = t;
            }
        for (int64_t i = k + 1; i < n; i++) {
            double complex f = a[i * n + k] / a[k * n + k];
            if (f == 0)
                continue;
            for (int64_t j = k; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
            for (int64_t j = 0; j < n; j++)
                x[i * n + j] -= f * x[k * n + j];
        }
    }
    for (int64_t k = n - 1; k >= 0; k--)
        for (int64_t j = 0; j < n; j++) {
            double complex s = x[k * n + j];
            for (int64_t i = k + 1; i < n; i++)
                s -= a[k * n + i] * x[i * n + j];
            x[k * n + j] = s / a[k * n + k];
        }
    return true;
}

/* The formula of one matrix: m (n x n) := V^{-H} M V^H, M = diag(gl) from
 * the values' node (gl non-NULL), else from the vectors' gv: (V^H gV -
 * V^H V diag(re diag(V^H gV))) / conj(E) with E[i][j] = L[j] - L[i] off
 * the diagonal, 1 on it (torch's; the diagonal of M keeps i imag(diag(V^H
 * gV)), which torch's check bounds by 1e-2).  w: 2 n^2 of scratch.
 * Returns 0, 1 for the phase check's refusal, 2 for a singular V. */
static int eig_formula(int64_t n, const double complex *l, const double complex *v,
                       const double complex *gl, const double complex *gv, double complex *m,
                       double complex *w)
{
    double complex *vh = w, *y = w + n * n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            vh[i * n + j] = conj(v[j * n + i]);
    if (gl) {
        for (int64_t i = 0; i < n * n; i++)
            m[i] = 0;
        for (int64_t i = 0; i < n; i++)
            m[i * n + i] = gl[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double complex s = 0;
                for (int64_t r = 0; r < n; r++)
                    s += vh[i * n + r] * gv[r * n + j];
                m[i * n + j] = s;
            }
        for (int64_t j = 0; j < n; j++)
            if (!(fabs(cimag(m[j * n + j])) <= 1e-2))
                return 1;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double complex s = 0;
                for (int64_t r = 0; r < n; r++)
                    s += vh[i * n + r] * v[r * n + j];
                y[i * n + j] = s * creal(m[j * n + j]);
            }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double complex e = i == j ? 1 : conj(l[j]) - conj(l[i]);
                m[i * n + j] = (m[i * n + j] - y[i * n + j]) / e;
            }
    }
    /* y = M V^H, then V^H X = y */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double complex s = 0;
            for (int64_t r = 0; r < n; r++)
                s += m[i * n + r] * vh[r * n + j];
            y[i * n + j] = s;
        }
    if (!csolve(n, vh, y))
        return 2;
    memcpy(m, y, (size_t)(n * n) * sizeof *m);
    return 0;
}

/* saved: L [..., n], V [..., n, n]; i[0]: 0 the values' node (g is gL),
 * 1 the vectors' (g is gV).  The two add up to torch's one node. */
static clt_status bw_eig(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt_tensor *L = n->saved[0], *V = n->saved[1];
    bool vecs = n->i[0] == 1;
    int64_t k = L->shape[L->ndim - 1], batch = clt__linalg_count(L->ndim - 1, L->shape);
    size_t kk = (size_t)(k * k);
    double complex *l = NULL, *v = NULL, *gg = NULL, *m = NULL, *w = NULL;
    double *o = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(read_cplx(L, &l));
    CLT__TRY(read_cplx(V, &v));
    CLT__TRY(read_cplx(g, &gg));
    m = clt__calloc(kk * (size_t)batch + 1, sizeof *m);
    w = clt__calloc(2 * kk + 1, sizeof *w);
    o = clt__calloc(2 * kk * (size_t)batch + 1, sizeof *o);
    if (!m || !w || !o) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", bw_fn);
        goto done;
    }
    for (int64_t b = 0; b < batch; b++) {
        int r = eig_formula(k, l + b * k, v + (size_t)b * kk, vecs ? NULL : gg + b * k,
                            vecs ? gg + (size_t)b * kk : NULL, m + (size_t)b * kk, w);
        if (r == 1) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: linalg_eig_backward: The eigenvectors in the complex case are "
                            "specified up to multiplication by e^{i phi}. The specified loss "
                            "function depends on this quantity, so it is ill-defined.",
                            bw_fn);
            goto done;
        }
        if (r == 2) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: linalg_eig_backward: (Batch element %lld): the eigenvector "
                            "matrix is singular (A is not diagonalizable)",
                            bw_fn, (long long)b);
            goto done;
        }
    }
    for (size_t i = 0; i < kk * (size_t)batch; i++) {
        o[2 * i] = creal(m[i]);
        o[2 * i + 1] = cimag(m[i]);
    }
    {
        clt_tensor *re = NULL;
        int64_t shape[CLT_MAX_DIMS + 1];
        memcpy(shape, V->shape, sizeof(int64_t) * (size_t)V->ndim);
        shape[V->ndim] = 2;
        clt_dtype part = V->dtype == CLT_COMPLEX128 ? CLT_FLOAT64 : CLT_FLOAT32;
        CLT__TRY(clt__result_new(bw_fn, V->dev, part, V->ndim + 1, shape, &re));
        if (re->numel > 0)
            st = clt__write_doubles(bw_fn, re, o);
        if (st == CLT_OK)
            st = clt__view_as_complex(re, &gin[0], bw_fn);
        clt_tensor_free(re);
    }
done:
    free(l);
    free(v);
    free(gg);
    free(m);
    free(w);
    free(o);
    return st;
}

/* Records the node of L (which 0) or V (1) of eig(a); on failure releases
 * *out. */
static clt_status record_eig(const clt_tensor *a, clt_tensor **out, int which,
                             const clt_tensor *l, const clt_tensor *v)
{
    const clt_tensor *saved[2] = {l, v};
    clt__node *n = NULL;
    clt_status st = clt__record(CLT_OK, out, "LinalgEigBackward0", bw_eig, 1, &a, 2, saved, &n);
    if (n)
        n->i[0] = which;
    return st;
}

static clt_status eig(const clt_tensor *a, clt_tensor **w, clt_tensor **v, const char *fn)
{
    CLT__REQUIRE_ARG(w, fn);
    *w = NULL;
    if (v)
        *v = NULL;
    CLT__REQUIRE_ARG(a, fn);
    bool grad = clt__grad_needed(1, &a);
    clt_tensor *vv = NULL, *lk = NULL, *vk = NULL;
    clt_status st = clt__linalg_eig(a, v != NULL || grad, w, &vv, fn);
    if (st != CLT_OK || !grad) {
        if (v)
            *v = vv;
        else
            clt_tensor_free(vv);
        return st;
    }
    /* the nodes save handles of their own on the values, taken before
     * they carry autograd state */
    CLT__TRY(clt__alias(*w, &lk));
    CLT__TRY(clt__alias(vv, &vk));
    CLT__TRY(record_eig(a, w, 0, lk, vk));
    if (v)
        CLT__TRY(record_eig(a, &vv, 1, lk, vk));
    if (v) {
        *v = vv;
        vv = NULL;
    }
done:
    if (st != CLT_OK) {
        clt_tensor_free(*w);
        *w = NULL;
    }
    clt_tensor_free(vv);
    clt_tensor_free(lk);
    clt_tensor_free(vk);
    return st;
}

clt_status clt_linalg_eig(const clt_tensor *a, clt_tensor **eigenvalues,
                          clt_tensor **eigenvectors)
{
    static const char fn[] = "clt_linalg_eig";
    if (eigenvalues)
        *eigenvalues = NULL;
    CLT__REQUIRE_ARG(eigenvectors, fn);
    *eigenvectors = NULL;
    return eig(a, eigenvalues, eigenvectors, fn);
}

clt_status clt_linalg_eigvals(const clt_tensor *a, clt_tensor **out)
{
    return eig(a, out, NULL, "clt_linalg_eigvals");
}
