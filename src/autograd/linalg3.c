/* linalg3.c: torch.linalg.ldl_factor(_ex), ldl_solve, torch.geqrf, orgqr
 * and ormqr (src/ops/linalg_ldl.c, src/ops/linalg_qr.c), which torch 1.13
 * cannot differentiate (their nodes refuse backward, as torch's), and
 * torch.linalg.eig and eigvals (src/ops/linalg_geev.c) with torch's
 * linalg_eig_backward, computed on the host in complex double, or as
 * recorded complex ops in a pass that creates a graph. */
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
    CLT__AUTOCAST("clt_geqrf", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a), clt_geqrf(CLT__AC(0), f, tau));
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
    CLT__AUTOCAST("clt_ormqr", CLT__AC_CPU(CLT__AC_FLOAT32), 3, (a, tau, c),
                  clt_ormqr(CLT__AC(0), CLT__AC(1), CLT__AC(2), left, transpose, out));
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

/* The formula of one matrix: m (n x n) := V^{-H} M V^H, M = diag(gl) when
 * gv is NULL, else (V^H gV - V^H V diag(re diag(V^H gV))) / conj(E) with
 * E[i][j] = L[j] - L[i] off the diagonal, 1 on it, its diagonal (i
 * imag(diag(V^H gV)), which torch's check bounds by 1e-2) then replaced by
 * gl when gl is given, as torch's.  w: 2 n^2 of scratch.  Returns 0, 1 for
 * the phase check's refusal, 2 for a singular V. */
static int eig_formula(int64_t n, const double complex *l, const double complex *v,
                       const double complex *gl, const double complex *gv, double complex *m,
                       double complex *w)
{
    double complex *vh = w, *y = w + n * n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            vh[i * n + j] = conj(v[j * n + i]);
    if (gv == NULL) {
        for (int64_t i = 0; i < n * n; i++)
            m[i] = 0;
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
    if (gl)
        for (int64_t i = 0; i < n; i++)
            m[i * n + i] = gl[i];
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

/* torch's refusal of a loss that depends on the vectors' phases. */
static clt_status phase_refused(void)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: linalg_eig_backward: The eigenvectors in the complex case are "
                      "specified up to multiplication by e^{i phi}. The specified loss "
                      "function depends on this quantity, so it is ill-defined.",
                      bw_fn);
}

/* The formula on the host in complex double, for a pass that creates no
 * graph: gL, gV (either may be NULL) as eig_formula takes them. */
static clt_status eig_grad_host(const clt_tensor *L, const clt_tensor *V, const clt_tensor *gL,
                                const clt_tensor *gV, clt_tensor **out)
{
    int64_t k = L->shape[L->ndim - 1], batch = clt__linalg_count(L->ndim - 1, L->shape);
    size_t kk = (size_t)(k * k);
    double complex *l = NULL, *v = NULL, *gl = NULL, *gv = NULL, *m = NULL, *w = NULL;
    double *o = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(read_cplx(L, &l));
    CLT__TRY(read_cplx(V, &v));
    if (gL)
        CLT__TRY(read_cplx(gL, &gl));
    if (gV)
        CLT__TRY(read_cplx(gV, &gv));
    m = clt__calloc(kk * (size_t)batch + 1, sizeof *m);
    w = clt__calloc(2 * kk + 1, sizeof *w);
    o = clt__calloc(2 * kk * (size_t)batch + 1, sizeof *o);
    if (!m || !w || !o) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", bw_fn);
        goto done;
    }
    for (int64_t b = 0; b < batch; b++) {
        int r = eig_formula(k, l + b * k, v + (size_t)b * kk, gl ? gl + b * k : NULL,
                            gv ? gv + (size_t)b * kk : NULL, m + (size_t)b * kk, w);
        if (r == 1) {
            st = phase_refused();
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
            st = clt__view_as_complex(re, out, bw_fn);
        clt_tensor_free(re);
    }
done:
    free(l);
    free(v);
    free(gl);
    free(gv);
    free(m);
    free(w);
    free(o);
    return st;
}

/* ---- the same formula as recorded ops, for a pass that creates a graph --------------
 * Each op below records (grad mode is on there); the intermediates live in
 * the formula's scope. */

/* conj(x)^T over the last two dims. */
static clt_status mH(const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *t;
    clt_status st = clt__transpose_rec(bw_fn, x, -2, -1, &t);
    return st == CLT_OK ? clt__error_as(clt_conj(t, out), bw_fn) : st;
}

/* X with A X = B, A [..., n, n] and B [..., n, k] complex of one dtype:
 * clt_linalg_solve has no complex form, so the real system [[Ar, -Ai],
 * [Ai, Ar]] [Xr; Xi] = [Br; Bi] of twice the size, whose gradients (and
 * theirs) are the real solve's. */
static clt_status solve_complex(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *ar, *ai, *br, *bi, *nai, *top, *bot, *m, *rhs, *x, *xr, *xi;
    int64_t n = a->shape[a->ndim - 1];
    CLT__TRY(clt__error_as(clt_real(a, &ar), bw_fn));
    CLT__TRY(clt__error_as(clt_imag(a, &ai), bw_fn));
    CLT__TRY(clt__error_as(clt_real(b, &br), bw_fn));
    CLT__TRY(clt__error_as(clt_imag(b, &bi), bw_fn));
    CLT__TRY(clt__neg_rec(bw_fn, ai, &nai));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){ar, nai}, 2, -1, &top));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){ai, ar}, 2, -1, &bot));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){top, bot}, 2, -2, &m));
    CLT__TRY(clt__cat_rec(bw_fn, (const clt_tensor *[]){br, bi}, 2, -2, &rhs));
    CLT__TRY(clt__linalg_solve_rec(bw_fn, m, rhs, &x));
    CLT__TRY(clt__narrow_rec(bw_fn, x, -2, 0, n, &xr));
    CLT__TRY(clt__narrow_rec(bw_fn, x, -2, n, n, &xi));
    CLT__TRY(clt__error_as(clt_complex(xr, xi, out), bw_fn));
done:
    return st;
}

/* torch's phase check on VhgV = V^H gV: every |imag(diag)| within 1e-2
 * (reads the diagonal back). */
static clt_status phase_check(const clt_tensor *vhgv)
{
    clt_tensor *im = NULL, *d = NULL;
    double *v = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__real_imag(vhgv, 1, &im, bw_fn));
    CLT__TRY(clt__diagonal(im, 0, -2, -1, &d, bw_fn));
    CLT__TRY(clt__read_doubles(bw_fn, d, &v));
    for (int64_t i = 0; i < d->numel; i++)
        if (!(fabs(v[i]) <= 1e-2)) {
            st = phase_refused();
            break;
        }
done:
    clt_tensor_free(im);
    clt_tensor_free(d);
    free(v);
    return st;
}

/* torch's linalg_eig_backward as written there: gA = solve(V^H, gL[..., None]
 * * V^H) without gV; else VhgV = V^H gV - V^H (V * re(diag(V^H gV))[..., None,
 * :]), M = VhgV / conj(E) with its diagonal gL where gL flows (torch's copy_
 * into the diagonal: M * (1 - I) + diag_embed(gL) here), gA = solve(V^H, M
 * V^H).  Complex; the engine takes the real part for a real A. */
static clt_status eig_grad_rec(const clt_tensor *L, const clt_tensor *V, const clt_tensor *gL,
                               const clt_tensor *gV, clt_tensor **out)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *vh, *t, *u, *vhgv, *m, *re, *d, *row, *y, *lc, *c0, *c1, *e, *eye, *rhs;
    int64_t k = L->shape[L->ndim - 1];
    CLT__TRY(mH(V, &vh));
    if (gV == NULL) {
        CLT__TRY(clt__unsqueeze_rec(bw_fn, gL, -1, &t));
        CLT__TRY(clt__complex_binary_rec(2, t, vh, &rhs, bw_fn));
    } else {
        CLT__TRY(clt__complex_matmul_rec(bw_fn, vh, gV, &vhgv));
        CLT__TRY(phase_check(vhgv));
        CLT__TRY(clt__error_as(clt_real(vhgv, &re), bw_fn));
        CLT__TRY(clt__error_as(clt_diagonal(re, 0, -2, -1, &d), bw_fn));
        CLT__TRY(clt__unsqueeze_rec(bw_fn, d, -2, &row));
        CLT__TRY(clt__complex_binary_rec(2, V, row, &t, bw_fn));
        CLT__TRY(clt__complex_matmul_rec(bw_fn, vh, t, &u));
        CLT__TRY(clt__complex_binary_rec(1, vhgv, u, &y, bw_fn));
        /* conj(E): conj(L[j]) - conj(L[i]), 1 on the diagonal (0 + 1) */
        CLT__TRY(clt__error_as(clt_conj(L, &lc), bw_fn));
        CLT__TRY(clt__unsqueeze_rec(bw_fn, lc, -2, &c0));
        CLT__TRY(clt__unsqueeze_rec(bw_fn, lc, -1, &c1));
        CLT__TRY(clt__complex_binary_rec(1, c0, c1, &t, bw_fn));
        CLT__TRY(clt_eye(L->dev, clt__complex_part_dtype(L->dtype), k, k, &eye));
        CLT__TRY(clt__complex_binary_rec(0, t, eye, &e, bw_fn));
        CLT__TRY(clt__complex_binary_rec(3, y, e, &m, bw_fn));
        if (gL) {
            clt_tensor *off, *g;
            CLT__TRY(clt__rsub_scalar_rec(bw_fn, eye, 1.0, &off));
            CLT__TRY(clt__complex_binary_rec(2, m, off, &t, bw_fn));
            CLT__TRY(clt__unsqueeze_rec(bw_fn, gL, -1, &g));
            CLT__TRY(clt__complex_binary_rec(2, g, eye, &u, bw_fn));
            CLT__TRY(clt__complex_binary_rec(0, t, u, &m, bw_fn));
        }
        CLT__TRY(clt__complex_matmul_rec(bw_fn, m, vh, &rhs));
    }
    CLT__TRY(solve_complex(vh, rhs, out));
done:
    return clt__scope_finish(st, out);
}

/* saved: L [..., n], V [..., n, n], the node's outputs 0 and 1, whose
 * gradients gL and gV either may be missing (torch's one node). */
static clt_status bw_eig(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g; /* read with the other output's below */
    const clt_tensor *L = n->saved[0], *V = n->saved[1];
    const clt_tensor *gL = clt__node_grad(n, 0), *gV = clt__node_grad(n, 1);
    if (clt__creating_graph())
        return eig_grad_rec(L, V, gL, gV, &gin[0]);
    return eig_grad_host(L, V, gL, gV, &gin[0]);
}

static clt_status eig(const clt_tensor *a, clt_tensor **w, clt_tensor **v, const char *fn)
{
    CLT__REQUIRE_ARG(w, fn);
    *w = NULL;
    if (v)
        *v = NULL;
    CLT__REQUIRE_ARG(a, fn);
    bool grad = clt__grad_needed(1, &a);
    clt_tensor *outs[2] = {NULL, NULL};
    clt_status st = clt__linalg_eig(a, v != NULL || grad, &outs[0], &outs[1], fn);
    if (st == CLT_OK && grad) {
        const clt_tensor *saved[2] = {outs[0], outs[1]};
        clt__node *n = NULL;
        st = clt__record_decomposition(a, outs, 2, "LinalgEigBackward0", bw_eig, 2, saved, &n);
        clt__twice(n);
    }
    if (st != CLT_OK)
        return st;
    *w = outs[0];
    if (v)
        *v = outs[1];
    else
        clt_tensor_free(outs[1]);
    return CLT_OK;
}

clt_status clt_linalg_eig(const clt_tensor *a, clt_tensor **eigenvalues,
                          clt_tensor **eigenvectors)
{
    CLT__AUTOCAST("clt_linalg_eig", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_eig(CLT__AC(0), eigenvalues, eigenvectors));
    static const char fn[] = "clt_linalg_eig";
    if (eigenvalues)
        *eigenvalues = NULL;
    CLT__REQUIRE_ARG(eigenvectors, fn);
    *eigenvectors = NULL;
    return eig(a, eigenvalues, eigenvectors, fn);
}

clt_status clt_linalg_eigvals(const clt_tensor *a, clt_tensor **out)
{
    CLT__AUTOCAST("clt_linalg_eigvals", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (a),
                  clt_linalg_eigvals(CLT__AC(0), out));
    return eig(a, out, NULL, "clt_linalg_eigvals");
}
