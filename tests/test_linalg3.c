/* test_linalg3.c: ldl_factor against A rebuilt here from LD and the pivots
 * (the permutations applied and the blocks of D multiplied out in float64),
 * ldl_solve against A X = B, geqrf against Q R = A with Q formed here as
 * the explicit product of the Householder reflectors, ormqr against that Q
 * times C, the refusals of derivatives, and the gradients of eig and
 * eigvals against finite differences. */
#include <math.h>
#include <stdio.h>

#include "gradcheck.h"

static double *randoms(size_t n, unsigned seed)
{
    double *v = malloc(n * sizeof *v);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)rand() / RAND_MAX * 2 - 1;
    return v;
}

/* a random symmetric n x n matrix, its diagonal zeroed with zero_diag
 * (which forces 2 x 2 pivots) */
static void sym(double *a, int n, unsigned seed, int zero_diag)
{
    double *r = randoms((size_t)(n * n), seed);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            a[i * n + j] = (i == j && zero_diag) ? 0 : r[i * n + j] + r[j * n + i];
    free(r);
}

/* A = P L D L^T P^T from LAPACK's lower sytrf output: walking the pivots
 * backwards, as sytrs does, A is U_0 ... U_{s} D ... with U_k = P_k L_k;
 * here A is rebuilt as M D M^T with M = P_0 L_0 P_1 L_1 ..., each P_k the
 * swap of rows k (or k + 1 for a 2 x 2 block) and |pivot| and each L_k the
 * identity with block k's multipliers below it. */
static void rebuild(const double *ld, const int32_t *piv, int n, double *out)
{
    double *m = calloc((size_t)(n * n), sizeof *m), *d = calloc((size_t)(n * n), sizeof *d);
    double *t = calloc((size_t)(n * n), sizeof *t);
    for (int i = 0; i < n; i++)
        m[i * n + i] = 1;
    for (int k = 0; k < n;) {
        int step = piv[k] > 0 ? 1 : 2;
        int kp = (piv[k] > 0 ? piv[k] : -piv[k]) - 1, kk = k + step - 1;
        /* M := M P_k (swap columns kk and kp) */
        for (int i = 0; i < n; i++) {
            double x = m[i * n + kk];
            m[i * n + kk] = m[i * n + kp];
            m[i * n + kp] = x;
        }
        /* M := M L_k: columns k..kk gain the multipliers of the rows below */
        for (int c = k; c <= kk; c++) {
            for (int i = 0; i < n; i++) {
                double s = m[i * n + c];
                for (int r = kk + 1; r < n; r++)
                    s += m[i * n + r] * ld[r * n + c];
                t[i * n + c] = s;
            }
        }
        for (int c = k; c <= kk; c++)
            for (int i = 0; i < n; i++)
                m[i * n + c] = t[i * n + c];
        d[k * n + k] = ld[k * n + k];
        if (step == 2) {
            d[(k + 1) * n + k + 1] = ld[(k + 1) * n + k + 1];
            d[(k + 1) * n + k] = d[k * n + k + 1] = ld[(k + 1) * n + k];
        }
        k += step;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < n; p++)
                for (int q = 0; q < n; q++)
                    s += m[i * n + p] * d[p * n + q] * m[j * n + q];
            out[i * n + j] = s;
        }
    free(m);
    free(d);
    free(t);
}

static void near(const double *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s element %zu: %.12g, want %.12g", what, i, got[i], want[i]);
}

static void ldl_case(clt_device *dev, clt_dtype dt, int batch, int n, int zero_diag,
                     unsigned seed)
{
    size_t nn = (size_t)(n * n);
    double *a = malloc(batch * nn * sizeof *a), *back = malloc(nn * sizeof *back);
    for (int b = 0; b < batch; b++)
        sym(a + b * nn, n, seed + (unsigned)b, zero_diag);
    /* the upper triangle is not read: garbage there changes nothing */
    double *in = malloc(batch * nn * sizeof *in);
    memcpy(in, a, batch * nn * sizeof *in);
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                in[b * nn + (size_t)(i * n + j)] = 1e3;
    clt_tensor *t = tensor_of(dev, dt, 3, (int64_t[]){batch, n, n}, in);
    clt_tensor *ld = NULL, *piv = NULL, *info = NULL, *bt = NULL, *x = NULL;
    CHECK(clt_linalg_ldl_factor_ex(t, 0, &ld, &piv, &info));
    assert_shape(ld, 3, (int64_t[]){batch, n, n});
    assert_shape(piv, 2, (int64_t[]){batch, n});
    cr_assert_eq(clt_tensor_dtype(piv), CLT_INT32);
    cr_assert_eq(clt_tensor_dtype(info), CLT_INT32);
    double *gl = read_as_f64(ld), *gp = read_as_f64(piv), *gi = read_as_f64(info);
    double tol = dt == CLT_FLOAT64 ? 1e-10 : 2e-4;
    int saw_block = 0;
    for (int b = 0; b < batch; b++) {
        cr_assert_eq(gi[b], 0, "info %g", gi[b]);
        int32_t p[64];
        for (int i = 0; i < n; i++) {
            p[i] = (int32_t)gp[b * n + i];
            saw_block |= p[i] < 0;
            for (int j = i + 1; j < n; j++)
                cr_assert_eq(gl[b * nn + (size_t)(i * n + j)], 0, "upper triangle not zero");
        }
        rebuild(gl + b * nn, p, n, back);
        near(back, a + b * nn, nn, tol * 10, "P L D L^T P^T");
    }
    if (zero_diag && n > 1)
        cr_assert(saw_block, "a zero diagonal should need a 2 x 2 block");
    /* A X = B */
    double *bv = randoms((size_t)(batch * n * 2), seed + 99);
    bt = tensor_of(dev, dt, 3, (int64_t[]){batch, n, 2}, bv);
    CHECK(clt_linalg_ldl_solve(ld, piv, bt, 0, &x));
    double *gx = read_as_f64(x);
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < 2; j++) {
                double s = 0;
                for (int r = 0; r < n; r++)
                    s += a[b * nn + (size_t)(i * n + r)] * gx[(b * n + r) * 2 + j];
                double w = bv[(b * n + i) * 2 + j];
                cr_assert(fabs(s - w) <= tol * 100 * (1 + fabs(w)), "A X = B at %d,%d,%d: %g, %g",
                          b, i, j, s, w);
            }
    free(gx);
    free(bv);
    free(gl);
    free(gp);
    free(gi);
    free(a);
    free(in);
    free(back);
    clt_tensor_free(t);
    clt_tensor_free(ld);
    clt_tensor_free(piv);
    clt_tensor_free(info);
    clt_tensor_free(bt);
    clt_tensor_free(x);
}

Test(linalg3, ldl_rebuilds_a_and_solves)
{
    clt_device *dev = get_device("cpu");
    const int sizes[][3] = {{1, 1, 0}, {2, 3, 0}, {1, 5, 1}, {3, 6, 1}, {2, 9, 0}, {1, 17, 1}};
    for (int dti = 0; dti < 2; dti++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            ldl_case(dev, dti ? CLT_FLOAT64 : CLT_FLOAT32, sizes[s][0], sizes[s][1], sizes[s][2],
                     10 + (unsigned)s);
}

/* A 2 x 2 block with LAPACK's pivots known by hand: [[0, 1], [1, 0]] is D
 * itself, pivots (-2, -2) (no swap: row 2 with itself). */
Test(linalg3, ldl_known_block)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){0, 1, 1, 0});
    clt_tensor *ld = NULL, *piv = NULL;
    CHECK(clt_linalg_ldl_factor(t, 1, &ld, &piv));
    double *gl = read_as_f64(ld), *gp = read_as_f64(piv);
    near(gl, (double[]){0, 0, 1, 0}, 4, 0, "LD");
    near(gp, (double[]){-2, -2}, 2, 0, "pivots");
    free(gl);
    free(gp);
    clt_tensor_free(ld);
    clt_tensor_free(piv);
    clt_tensor_free(t);
}

Test(linalg3, ldl_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *ld = (clt_tensor *)1, *piv = (clt_tensor *)1, *info = (clt_tensor *)1;
    clt_tensor *z = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 4});
    /* singular: _ex reports it, ldl_factor refuses */
    CHECK(clt_linalg_ldl_factor_ex(z, 0, &ld, &piv, &info));
    double *gi = read_as_f64(info);
    cr_assert_eq(gi[0], 2, "info %g", gi[0]);
    free(gi);
    clt_tensor_free(ld);
    clt_tensor_free(piv);
    clt_tensor_free(info);
    assert_error(clt_linalg_ldl_factor(z, 0, &ld, &piv), CLT_ERR_INVALID_ARGUMENT,
                 "D[2,2] is exactly zero");
    cr_assert_null(ld);
    cr_assert_null(piv);
    clt_tensor *r = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 3}, (double[6]){0});
    assert_error(clt_linalg_ldl_factor(r, 0, &ld, &piv), CLT_ERR_INVALID_ARGUMENT, "square");
    /* a pivot sytrf cannot give */
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){2, 0, 1, 3});
    clt_tensor *bad = NULL, *b = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 1}, (double[2]){1});
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, (int64_t[]){2}, (int32_t[]){3, 1}, &bad));
    clt_tensor *x = (clt_tensor *)1;
    assert_error(clt_linalg_ldl_solve(a, bad, b, 0, &x), CLT_ERR_INVALID_ARGUMENT, "pivots");
    cr_assert_null(x);
    clt_tensor_free(bad);
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, (int64_t[]){2}, (int32_t[]){-1, 2}, &bad));
    assert_error(clt_linalg_ldl_solve(a, bad, b, 0, &x), CLT_ERR_INVALID_ARGUMENT, "pivots");
    /* no derivative, as torch 1.13: the forward records, backward fails */
    clt_tensor *s = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){2, 1, 1, 3});
    CHECK(clt_set_requires_grad(s, 1));
    CHECK(clt_linalg_ldl_factor(s, 0, &ld, &piv));
    clt_tensor *sum = NULL;
    CHECK(clt_sum(ld, &sum));
    assert_error(clt_backward(sum, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "derivative for 'aten::linalg_ldl_factor_ex' is not implemented");
    clt_tensor_free(sum);
    clt_tensor_free(ld);
    clt_tensor_free(piv);
    clt_tensor_free(s);
    clt_tensor_free(bad);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(r);
    clt_tensor_free(z);
}

/* Q (m x m) = H_0 ... H_{k-1} from geqrf's f (m x n) and tau, explicitly. */
static void host_q(const double *f, const double *tau, int m, int n, int k, double *q)
{
    double *h = malloc((size_t)(m * m) * sizeof *h), *t = malloc((size_t)(m * m) * sizeof *t);
    double *v = malloc((size_t)m * sizeof *v);
    for (int i = 0; i < m * m; i++)
        q[i] = i % (m + 1) == 0;
    for (int j = 0; j < k; j++) {
        for (int i = 0; i < m; i++)
            v[i] = i < j ? 0 : i == j ? 1 : f[i * n + j];
        for (int r = 0; r < m; r++)
            for (int c = 0; c < m; c++)
                h[r * m + c] = (r == c) - tau[j] * v[r] * v[c];
        for (int r = 0; r < m; r++)
            for (int c = 0; c < m; c++) {
                double s = 0;
                for (int l = 0; l < m; l++)
                    s += q[r * m + l] * h[l * m + c];
                t[r * m + c] = s;
            }
        memcpy(q, t, (size_t)(m * m) * sizeof *q);
    }
    free(h);
    free(t);
    free(v);
}

static void geqrf_case(clt_device *dev, clt_dtype dt, int m, int n, unsigned seed)
{
    int k = m < n ? m : n;
    double *a = randoms((size_t)(m * n), seed), *q = malloc((size_t)(m * m) * sizeof *q);
    double tol = dt == CLT_FLOAT64 ? 1e-12 : 1e-5;
    clt_tensor *t = tensor_of(dev, dt, 2, (int64_t[]){m, n}, a), *f = NULL, *tau = NULL;
    CHECK(clt_geqrf(t, &f, &tau));
    assert_shape(f, 2, (int64_t[]){m, n});
    assert_shape(tau, 1, (int64_t[]){k});
    double *gf = read_as_f64(f), *gt = read_as_f64(tau);
    host_q(gf, gt, m, n, k, q);
    /* Q R = A with R the upper triangle of f */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l <= (j < m - 1 ? j : m - 1); l++)
                s += q[i * m + l] * gf[l * n + j];
            cr_assert(fabs(s - a[i * n + j]) <= tol * 10, "Q R = A at %d,%d: %g, %g", i, j, s,
                      a[i * n + j]);
        }
    /* dlarfg's sign: R's diagonal is -sign(a_kk) |column| */
    for (int d = 0; d < k && d < m - 1; d++)
        cr_assert(gt[d] >= 1 && gt[d] <= 2, "tau %d = %g outside [1, 2]", d, gt[d]);
    /* ormqr: Q C, Q^T C, C Q, C Q^T against the explicit Q */
    double *c = randoms((size_t)(m * 3), seed + 1);
    clt_tensor *cl = tensor_of(dev, dt, 2, (int64_t[]){m, 3}, c);
    clt_tensor *cr = tensor_of(dev, dt, 2, (int64_t[]){3, m}, c);
    for (int left = 0; left < 2; left++)
        for (int tr = 0; tr < 2; tr++) {
            clt_tensor *o = NULL;
            CHECK(clt_ormqr(f, tau, left ? cl : cr, left, tr, &o));
            double *go = read_as_f64(o);
            for (int i = 0; i < (left ? m : 3); i++)
                for (int j = 0; j < (left ? 3 : m); j++) {
                    double s = 0;
                    for (int l = 0; l < m; l++) {
                        double ql = left ? (tr ? q[l * m + i] : q[i * m + l])
                                         : (tr ? q[j * m + l] : q[l * m + j]);
                        s += left ? ql * c[l * 3 + j] : c[i * m + l] * ql;
                    }
                    double g = go[i * (left ? 3 : m) + j];
                    cr_assert(fabs(g - s) <= tol * 10, "ormqr left=%d tr=%d at %d,%d: %g, %g",
                              left, tr, i, j, g, s);
                }
            free(go);
            clt_tensor_free(o);
        }
    /* orgqr: Q's first n columns (tall and square only) */
    if (m >= n) {
        clt_tensor *o = NULL;
        CHECK(clt_orgqr(f, tau, &o));
        double *go = read_as_f64(o);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                cr_assert(fabs(go[i * n + j] - q[i * m + j]) <= tol * 10, "orgqr at %d,%d", i, j);
        free(go);
        clt_tensor_free(o);
    }
    free(c);
    free(gf);
    free(gt);
    free(a);
    free(q);
    clt_tensor_free(cl);
    clt_tensor_free(cr);
    clt_tensor_free(t);
    clt_tensor_free(f);
    clt_tensor_free(tau);
}

Test(linalg3, geqrf_ormqr_orgqr_against_explicit_reflectors)
{
    clt_device *dev = get_device("cpu");
    const int sizes[][2] = {{1, 1}, {5, 3}, {4, 4}, {3, 6}, {8, 2}};
    for (int dti = 0; dti < 2; dti++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            geqrf_case(dev, dti ? CLT_FLOAT64 : CLT_FLOAT32, sizes[s][0], sizes[s][1],
                       30 + (unsigned)s);
}

Test(linalg3, geqrf_ormqr_refusals)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(15, 5);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, a), *f = NULL,
               *tau = NULL, *o = (clt_tensor *)1;
    clt_tensor *v = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, a);
    assert_error(clt_geqrf(v, &f, &tau), CLT_ERR_INVALID_ARGUMENT, "at least 2 dimensions");
    cr_assert_null(f);
    cr_assert_null(tau);
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_geqrf(t, &f, &tau));
    clt_tensor *c = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){4, 2}, a);
    assert_error(clt_ormqr(f, tau, c, 1, 0, &o), CLT_ERR_SHAPE_MISMATCH, "other.shape[-2]");
    cr_assert_null(o);
    clt_tensor *s = NULL;
    CHECK(clt_sum(tau, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "derivative for 'geqrf' is not implemented");
    clt_tensor_free(s);
    clt_tensor *c2 = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){5, 2}, a);
    CHECK(clt_set_requires_grad(c2, 1));
    CHECK(clt_ormqr(f, tau, c2, 1, 1, &o));
    CHECK(clt_sum(o, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "derivative for 'ormqr' is not implemented");
    clt_tensor_free(s);
    clt_tensor_free(o);
    clt_tensor_free(c);
    clt_tensor_free(c2);
    clt_tensor_free(f);
    clt_tensor_free(tau);
    clt_tensor_free(t);
    clt_tensor_free(v);
    free(a);
}

/* ---- eig's gradients ------------------------------------------------------------ */

/* 0: view_as_real(eigvals(A)); 1: |V| (invariant to the vectors' phases);
 * 2: view_as_real(L) and |V| both, from one eig */
static clt_status f_eig(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int which = *(const int *)ctx;
    clt_tensor *w = NULL, *v = NULL, *r = NULL, *av = NULL, *fw = NULL, *fv = NULL;
    clt_status st;
    if (which == 0) {
        st = clt_linalg_eigvals(in[0], &w);
        if (st == CLT_OK)
            st = clt_view_as_real(w, out);
        clt_tensor_free(w);
        return st;
    }
    st = clt_linalg_eig(in[0], &w, &v);
    if (st == CLT_OK)
        st = clt_abs(v, &av);
    if (st == CLT_OK && which == 1) {
        *out = av;
        av = NULL;
    } else if (st == CLT_OK) {
        st = clt_view_as_real(w, &r);
        if (st == CLT_OK)
            st = clt_flatten(r, 0, -1, &fw);
        if (st == CLT_OK)
            st = clt_flatten(av, 0, -1, &fv);
        if (st == CLT_OK)
            st = clt_cat((const clt_tensor *[]){fw, fv}, 2, 0, out);
    }
    clt_tensor_free(w);
    clt_tensor_free(v);
    clt_tensor_free(r);
    clt_tensor_free(av);
    clt_tensor_free(fw);
    clt_tensor_free(fv);
    return st;
}

Test(linalg3, eig_gradients)
{
    clt_device *dev = get_device("cpu");
    /* real eigenvalues 1, 2, 4 (A = S diag S^-1), and a matrix with a
     * complex pair */
    const double real3[] = {2.2, 0.3, -0.4, 0.5, 1.9, 0.6, -0.2, 0.7, 2.9};
    const double cplx3[] = {1.0, -2.0, 0.3, 1.5, 0.7, -0.4, 0.2, 0.6, 2.5};
    double *b = randoms(32, 77);
    for (int which = 0; which < 3; which++) {
        gc_in x = {2, {3, 3}, real3, 1}, y = {2, {3, 3}, cplx3, 1}, z = {3, {2, 3, 3}, b, 1};
        gradcheck(dev, f_eig, &which, 1, &x);
        gradcheck(dev, f_eig, &which, 1, &y);
        gradcheck(dev, f_eig, &which, 1, &z);
    }
    free(b);
}

/* A loss that depends on the vectors' phases is refused, as torch, by
 * the host formula and by the recorded one of a pass with create_graph. */
Test(linalg3, eig_phase_dependent_loss_refused)
{
    clt_device *dev = get_device("cpu");
    const double a[] = {1.0, -2.0, 0.3, 1.5, 0.7, -0.4, 0.2, 0.6, 2.5};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, a);
    CHECK(clt_set_requires_grad(t, 1));
    clt_tensor *w = NULL, *v = NULL, *r = NULL, *s = NULL;
    CHECK(clt_linalg_eig(t, &w, &v));
    CHECK(clt_view_as_real(v, &r));
    CHECK(clt_sum(r, &s));
    /* with create_graph too (the recorded formula checks it as well) */
    clt_tensor *g = NULL;
    clt_grad_opts o = {1, 1, 0};
    assert_error(clt_autograd_grad_ex(&s, 1, NULL, &t, 1, &o, &g), CLT_ERR_INVALID_ARGUMENT,
                 "e^{i phi}");
    cr_assert_null(g);
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "e^{i phi}");
    clt_tensor_free(s);
    clt_tensor_free(r);
    clt_tensor_free(w);
    clt_tensor_free(v);
    clt_tensor_free(t);
}
