/* test_linalg_lu.c: lu_factor and lu against a float64 partial-pivoting LU
 * written here (P L U = A, the pivots), solve_triangular, lu_solve,
 * cholesky_solve and cholesky_inverse by their residuals A X - B computed
 * on the host, matrix_exp against a host Taylor series, the _ex forms'
 * reports, tensorinv and tensorsolve, cond through the inverse, the
 * refusals, and the gradients against float64 finite differences. */
#include <stdio.h>

#include "gradcheck.h"

/* ---- host references (float64) ------------------------------------------ */

static double *randoms(size_t n, unsigned seed)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)rand() / RAND_MAX * 2 - 1;
    return v;
}

/* c (m x p) = a (m x k) b (k x p). */
static void host_mm(const double *a, const double *b, double *c, int m, int k, int p)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < p; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += a[i * k + l] * b[l * p + j];
            c[i * p + j] = s;
        }
}

/* getrf's LU of a (m x n, overwritten) with partial pivoting, the first
 * of equal magnitudes taken: piv[k] the 1-based row swapped with row k. */
static void host_lu(double *a, int m, int n, int *piv)
{
    for (int k = 0; k < (m < n ? m : n); k++) {
        int p = k;
        for (int i = k + 1; i < m; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
                p = i;
        piv[k] = p + 1;
        for (int j = 0; j < n; j++) {
            double t = a[k * n + j];
            a[k * n + j] = a[p * n + j];
            a[p * n + j] = t;
        }
        if (a[k * n + k] == 0)
            continue;
        for (int i = k + 1; i < m; i++) {
            double l = a[i * n + k] /= a[k * n + k];
            for (int j = k + 1; j < n; j++)
                a[i * n + j] -= l * a[k * n + j];
        }
    }
}

/* x (n x k) := A^-1 x from host_lu's factors of a (n x n, overwritten). */
static void host_solve_square(double *a, int n, double *x, int k)
{
    int *piv = malloc((size_t)n * sizeof *piv);
    host_lu(a, n, n, piv);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) {
            double t = x[i * k + j];
            x[i * k + j] = x[(piv[i] - 1) * k + j];
            x[(piv[i] - 1) * k + j] = t;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++)
            for (int l = 0; l < i; l++)
                x[i * k + j] -= a[i * n + l] * x[l * k + j];
    for (int i = n - 1; i >= 0; i--)
        for (int j = 0; j < k; j++) {
            for (int l = i + 1; l < n; l++)
                x[i * k + j] -= a[i * n + l] * x[l * k + j];
            x[i * k + j] /= a[i * n + i];
        }
    free(piv);
}

/* The element (i, j) of A's triangle that solve_triangular reads. */
static double tri_at(const double *a, int n, int i, int j, int upper, int unit)
{
    if (i == j)
        return unit ? 1 : a[i * n + j];
    return (upper ? j > i : j < i) ? a[i * n + j] : 0;
}

/* exp(a) (n x n) by its Taylor series in float64 after scaling by 2^s to
 * a 1-norm under 1/2, then squaring. */
static void host_expm(const double *a, int n, double *e)
{
    double norm = 0;
    for (int j = 0; j < n; j++) {
        double c = 0;
        for (int i = 0; i < n; i++)
            c += fabs(a[i * n + j]);
        norm = c > norm ? c : norm;
    }
    int s = 0;
    while (norm > 0.5) {
        norm /= 2;
        s++;
    }
    size_t nn = (size_t)(n * n);
    double *x = malloc(nn * sizeof *x), *term = malloc(nn * sizeof *x), *t = malloc(nn * sizeof *x);
    for (size_t i = 0; i < nn; i++) {
        x[i] = ldexp(a[i], -s);
        term[i] = e[i] = i % (size_t)(n + 1) == 0;
    }
    for (int k = 1; k < 40; k++) {
        host_mm(term, x, t, n, n, n);
        for (size_t i = 0; i < nn; i++) {
            term[i] = t[i] / k;
            e[i] += term[i];
        }
    }
    for (int k = 0; k < s; k++) {
        host_mm(e, e, t, n, n, n);
        memcpy(e, t, nn * sizeof *e);
    }
    free(x);
    free(term);
    free(t);
}

/* |got - want| <= tol (1 + |want|) element by element. */
static void near(const double *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s: element %zu: got %.12g, want %.12g", what, i, got[i], want[i]);
}

static double tol_of(clt_dtype dt)
{
    return dt == CLT_FLOAT32 ? 5e-5 : 1e-11;
}

static const clt_dtype dtypes[2] = {CLT_FLOAT32, CLT_FLOAT64};

/* ---- lu_factor and lu ------------------------------------------------------ */

/* [batch, m, n] through lu_factor_ex (against host_lu: the factors, and
 * the pivots exactly in float64, where the host sees the same values) and
 * lu (P L U = A). */
static void lu_case(clt_device *dev, clt_dtype dt, int batch, int m, int n, unsigned seed)
{
    int k = m < n ? m : n;
    size_t mn = (size_t)(m * n);
    int64_t shape[3] = {batch, m, n};
    double *a = randoms((size_t)batch * mn, seed);
    clt_tensor *t = tensor_of(dev, dt, 3, shape, a), *lu = NULL, *piv = NULL, *info = NULL;
    /* the host works on the values the device holds */
    double *av = read_as_f64(t), *want = malloc(mn * sizeof *want);
    int *hp = malloc((size_t)(k + 1) * sizeof *hp);
    char what[96];
    CHECK(clt_linalg_lu_factor_ex(t, &lu, &piv, &info));
    assert_shape(lu, 3, shape);
    assert_shape(piv, 2, (int64_t[]){batch, k});
    assert_shape(info, 1, (int64_t[]){batch});
    cr_assert_eq(clt_tensor_dtype(piv), CLT_INT32);
    double *glu = read_as_f64(lu), *gp = read_as_f64(piv), *gi = read_as_f64(info);
    for (int b = 0; b < batch; b++) {
        memcpy(want, av + b * mn, mn * sizeof *want);
        host_lu(want, m, n, hp);
        snprintf(what, sizeof what, "LU %s [%d, %d, %d] matrix %d", clt_dtype_name(dt), batch, m,
                 n, b);
        if (dt == CLT_FLOAT64) {
            for (int i = 0; i < k; i++)
                cr_assert_eq(gp[b * k + i], hp[i], "%s: pivot %d: %g, want %d", what, i,
                             gp[b * k + i], hp[i]);
            near(glu + b * mn, want, mn, tol_of(dt), what);
        }
        cr_assert_eq(gi[b], 0, "%s: info %g", what, gi[b]);
    }
    clt_tensor *p = NULL, *l = NULL, *u = NULL;
    CHECK(clt_linalg_lu(t, &p, &l, &u));
    assert_shape(p, 3, (int64_t[]){batch, m, m});
    assert_shape(l, 3, (int64_t[]){batch, m, k});
    assert_shape(u, 3, (int64_t[]){batch, k, n});
    double *gP = read_as_f64(p), *gL = read_as_f64(l), *gU = read_as_f64(u);
    double *lu_h = malloc((mn + 1) * sizeof *lu_h), *plu = malloc((mn + 1) * sizeof *plu);
    for (int b = 0; b < batch; b++) {
        const double *Lb = gL + (size_t)b * m * k, *Ub = gU + (size_t)b * k * n;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < k; j++)
                cr_assert(j > i ? Lb[i * k + j] == 0 : j < i || Lb[i * k + j] == 1,
                          "L is not unit lower at (%d, %d): %g", i, j, Lb[i * k + j]);
        for (int i = 0; i < k; i++)
            for (int j = 0; j < i && j < n; j++)
                cr_assert_eq(Ub[i * n + j], 0, "U is not upper at (%d, %d)", i, j);
        host_mm(Lb, Ub, lu_h, m, k, n);
        host_mm(gP + (size_t)b * m * m, lu_h, plu, m, m, n);
        snprintf(what, sizeof what, "P L U %s [%d, %d, %d] matrix %d", clt_dtype_name(dt), batch,
                 m, n, b);
        near(plu, av + b * mn, mn, tol_of(dt) * 4, what);
    }
    free(a);
    free(av);
    free(want);
    free(hp);
    free(glu);
    free(gp);
    free(gi);
    free(gP);
    free(gL);
    free(gU);
    free(lu_h);
    free(plu);
    clt_tensor *ts[] = {t, lu, piv, info, p, l, u};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        clt_tensor_free(ts[i]);
}

Test(linalg_lu, lu_against_host)
{
    clt_device *dev = get_device("cpu");
    /* 70 x 70 float64 is past the 16 KiB of local memory: the global path */
    const int sizes[][3] = {{1, 1, 1}, {3, 4, 4}, {2, 5, 3}, {2, 3, 5}, {1, 33, 33},
                            {1, 70, 70}, {1, 1, 6}, {2, 6, 1}};
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            lu_case(dev, dtypes[d], sizes[s][0], sizes[s][1], sizes[s][2], 10 + (unsigned)s);
}

/* Singular matrices: lu_factor refuses with torch's message, lu_factor_ex
 * and inv_ex report the first zero pivot, lu still factors. */
Test(linalg_lu, singular_reports_and_refusals)
{
    clt_device *dev = get_device("cpu");
    const double a[] = {1, 0, 0, 1, 1, 2, 2, 4}; /* I, then a matrix of rank 1 */
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){2, 2, 2}, a);
    clt_tensor *lu = (clt_tensor *)1, *piv = (clt_tensor *)1, *info = NULL;
    assert_error(clt_linalg_lu_factor(t, &lu, &piv), CLT_ERR_INVALID_ARGUMENT,
                 "(Batch element 1): U[2,2] is zero and using it on lu_solve would result in a "
                 "division by zero.");
    names_only("clt_linalg_lu_factor");
    cr_assert_null(lu);
    cr_assert_null(piv);
    CHECK(clt_linalg_lu_factor_ex(t, &lu, &piv, &info));
    double *gi = read_as_f64(info), *gp = read_as_f64(piv), *glu = read_as_f64(lu);
    cr_assert_eq(gi[0], 0);
    cr_assert_eq(gi[1], 2, "info %g, want 2", gi[1]);
    const double wp[] = {1, 2, 2, 2}, wlu[] = {2, 4, 0.5, 0};
    near(gp, wp, 4, 0, "pivots");
    near(glu + 4, wlu, 4, 0, "LU");
    free(gi);
    free(gp);
    free(glu);
    clt_tensor_free(info);
    clt_tensor *inv = NULL;
    CHECK(clt_linalg_inv_ex(t, &inv, &info));
    gi = read_as_f64(info);
    cr_assert_eq(gi[0], 0);
    cr_assert_eq(gi[1], 2);
    free(gi);
    clt_tensor_free(info);
    clt_tensor_free(inv);
    clt_tensor *x = NULL, *ones = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 1},
                                            (double[]){1, 1});
    CHECK(clt_linalg_solve_ex(t, ones, &x, &info));
    assert_shape(x, 3, (int64_t[]){2, 2, 1});
    gi = read_as_f64(info);
    cr_assert_eq(gi[0], 0);
    cr_assert_eq(gi[1], 2);
    free(gi);
    clt_tensor_free(info);
    clt_tensor_free(x);
    /* not positive-definite: the order of the first bad minor */
    clt_tensor *l = NULL;
    CHECK(clt_linalg_cholesky_ex(t, 0, &l, &info));
    gi = read_as_f64(info);
    cr_assert_eq(gi[0], 0);
    cr_assert_eq(gi[1], 2, "cholesky_ex info %g, want 2", gi[1]);
    free(gi);
    clt_tensor_free(info);
    clt_tensor_free(l);
    clt_tensor_free(lu);
    clt_tensor_free(piv);
    clt_tensor_free(ones);
    clt_tensor_free(t);
}

/* ---- triangular solves ----------------------------------------------------- */

/* The residual of X from solve_triangular for A [2, n, n] and B [3, 1, n,
 * k] (left) or [3, 1, k, n]: every flag, batch dims broadcast. */
Test(linalg_lu, solve_triangular_residuals)
{
    clt_device *dev = get_device("cpu");
    const int n = 5, k = 3;
    double *a = randoms(2 * n * n, 3), *b = randoms(3 * n * k, 4);
    for (int i = 0; i < 2 * n * n; i++)
        if (i % (n * n) % (n + 1) == 0)
            a[i] += a[i] < 0 ? -2 : 2; /* a diagonal away from 0 */
    for (int d = 0; d < 2; d++)
        for (int flags = 0; flags < 8; flags++) {
            int upper = flags & 1, left = (flags >> 1) & 1, unit = (flags >> 2) & 1;
            int r = left ? n : k, c = left ? k : n;
            clt_tensor *ta = tensor_of(dev, dtypes[d], 3, (int64_t[]){2, n, n}, a);
            clt_tensor *tb = tensor_of(dev, dtypes[d], 4, (int64_t[]){3, 1, r, c}, b), *x = NULL;
            CHECK(clt_linalg_solve_triangular(ta, tb, upper, left, unit, &x));
            assert_shape(x, 4, (int64_t[]){3, 2, r, c});
            double *gx = read_as_f64(x), *av = read_as_f64(ta), *bv = read_as_f64(tb);
            for (int s = 0; s < 3; s++)
                for (int m = 0; m < 2; m++) {
                    const double *xm = gx + (size_t)(s * 2 + m) * r * c, *am = av + m * n * n;
                    for (int i = 0; i < r; i++)
                        for (int j = 0; j < c; j++) {
                            double sum = 0;
                            for (int l = 0; l < n; l++)
                                sum += left ? tri_at(am, n, i, l, upper, unit) * xm[l * c + j]
                                            : xm[i * c + l] * tri_at(am, n, l, j, upper, unit);
                            double want = bv[s * r * c + i * c + j];
                            cr_assert(fabs(sum - want) <= tol_of(dtypes[d]) * 10,
                                      "%s up=%d left=%d unit=%d [%d, %d] (%d, %d): %g, want %g",
                                      clt_dtype_name(dtypes[d]), upper, left, unit, s, m, i, j,
                                      sum, want);
                        }
                }
            free(gx);
            free(av);
            free(bv);
            clt_tensor_free(x);
            clt_tensor_free(ta);
            clt_tensor_free(tb);
        }
    free(a);
    free(b);
}

/* A X against B for lu_solve (every left/adjoint), cholesky_solve and
 * cholesky_inverse (both triangles), on the host. */
Test(linalg_lu, lu_solve_and_cholesky_residuals)
{
    clt_device *dev = get_device("cpu");
    const int n = 6, k = 2;
    double *a = randoms(n * n, 7), *b = randoms(n * k, 8), *spd = malloc(n * n * sizeof *spd);
    for (int i = 0; i < n; i++)
        a[i * n + i] += 3;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = i == j ? n : 0;
            for (int l = 0; l < n; l++)
                s += a[i * n + l] * a[j * n + l];
            spd[i * n + j] = s;
        }
    double *r = malloc(n * n * sizeof *r);
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = dtypes[d];
        double tol = tol_of(dt) * 20;
        clt_tensor *ta = tensor_of(dev, dt, 2, (int64_t[]){n, n}, a), *lu = NULL, *piv = NULL;
        CHECK(clt_linalg_lu_factor(ta, &lu, &piv));
        for (int mode = 0; mode < 4; mode++) {
            int left = mode & 1, adj = mode >> 1, rows = left ? n : k, cols = left ? k : n;
            clt_tensor *tb = tensor_of(dev, dt, 2, (int64_t[]){rows, cols}, b), *x = NULL;
            CHECK(clt_linalg_lu_solve(lu, piv, tb, left, adj, &x));
            double *gx = read_as_f64(x);
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < cols; j++) {
                    double s = 0;
                    for (int l = 0; l < n; l++)
                        s += left ? (adj ? a[l * n + i] : a[i * n + l]) * gx[l * cols + j]
                                  : gx[i * cols + l] * (adj ? a[j * n + l] : a[l * n + j]);
                    cr_assert(fabs(s - b[i * cols + j]) <= tol,
                              "lu_solve %s left=%d adjoint=%d (%d, %d): %g, want %g",
                              clt_dtype_name(dt), left, adj, i, j, s, b[i * cols + j]);
                }
            free(gx);
            clt_tensor_free(x);
            clt_tensor_free(tb);
        }
        clt_tensor *ts = tensor_of(dev, dt, 2, (int64_t[]){n, n}, spd);
        clt_tensor *tb = tensor_of(dev, dt, 2, (int64_t[]){n, k}, b);
        for (int up = 0; up < 2; up++) {
            clt_tensor *l = NULL, *x = NULL, *inv = NULL;
            CHECK(clt_linalg_cholesky(ts, up, &l));
            CHECK(clt_cholesky_solve(tb, l, up, &x));
            double *gx = read_as_f64(x);
            host_mm(spd, gx, r, n, n, k);
            near(r, b, (size_t)(n * k), tol, "cholesky_solve");
            free(gx);
            CHECK(clt_cholesky_inverse(l, up, &inv));
            double *gi = read_as_f64(inv);
            host_mm(spd, gi, r, n, n, n);
            for (int i = 0; i < n * n; i++)
                cr_assert(fabs(r[i] - (i % (n + 1) == 0)) <= tol,
                          "cholesky_inverse %s upper=%d: A inv element %d: %g",
                          clt_dtype_name(dt), up, i, r[i]);
            free(gi);
            clt_tensor_free(l);
            clt_tensor_free(x);
            clt_tensor_free(inv);
        }
        clt_tensor_free(ts);
        clt_tensor_free(tb);
        clt_tensor_free(ta);
        clt_tensor_free(lu);
        clt_tensor_free(piv);
    }
    free(a);
    free(b);
    free(spd);
    free(r);
}

/* ---- matrix_exp ------------------------------------------------------------ */

Test(linalg_lu, matrix_exp_against_taylor)
{
    clt_device *dev = get_device("cpu");
    const int n = 5;
    const double scales[] = {1e-3, 0.3, 1, 4, 12};
    double *a = randoms(3 * n * n, 9), *want = malloc(n * n * sizeof *want);
    double *x = malloc(3 * n * n * sizeof *x);
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 5; s++) {
            for (int i = 0; i < 3 * n * n; i++)
                x[i] = a[i] * scales[s] * (1 + i / (n * n)); /* a batch of three norms */
            clt_tensor *t = tensor_of(dev, dtypes[d], 3, (int64_t[]){3, n, n}, x), *e = NULL;
            CHECK(clt_linalg_matrix_exp(t, &e));
            double *xv = read_as_f64(t), *ge = read_as_f64(e);
            for (int b = 0; b < 3; b++) {
                host_expm(xv + b * n * n, n, want);
                double big = 0;
                for (int i = 0; i < n * n; i++)
                    big = fmax(big, fabs(want[i]));
                /* float32 loses about eps |A| relative to the largest element */
                double tol = (dtypes[d] == CLT_FLOAT32 ? 2e-6 : 1e-13) * (1 + scales[s] * 4) *
                             big;
                for (int i = 0; i < n * n; i++)
                    cr_assert(fabs(ge[b * n * n + i] - want[i]) <= tol,
                              "%s x%g matrix %d element %d: %.12g, want %.12g",
                              clt_dtype_name(dtypes[d]), scales[s], b, i, ge[b * n * n + i],
                              want[i]);
            }
            free(xv);
            free(ge);
            clt_tensor_free(t);
            clt_tensor_free(e);
        }
    free(a);
    free(x);
    free(want);
}

/* ---- tensorinv, tensorsolve and the refusals --------------------------------- */

Test(linalg_lu, tensorinv_and_tensorsolve)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(36, 11), *b = randoms(6, 12), r[36];
    for (int i = 0; i < 6; i++)
        a[i * 6 + i] += 3;
    /* tensorinv of [6, 2, 3] (ind 1): the inverse of the 6 x 6 reshape, as [2, 3, 6] */
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){6, 2, 3}, a), *inv = NULL;
    CHECK(clt_linalg_tensorinv(t, 1, &inv));
    assert_shape(inv, 3, (int64_t[]){2, 3, 6});
    double *gi = read_as_f64(inv);
    host_mm(a, gi, r, 6, 6, 6);
    for (int i = 0; i < 36; i++)
        cr_assert(fabs(r[i] - (i % 7 == 0)) <= 1e-12, "A tensorinv element %d: %g", i, r[i]);
    free(gi);
    /* tensorsolve of [2, 3, 6] and B [2, 3]: X [6] with A X = B flattened */
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){2, 3, 6}, a);
    clt_tensor *tb = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 3}, b), *x = NULL;
    CHECK(clt_linalg_tensorsolve(ta, tb, NULL, 0, &x));
    assert_shape(x, 1, (int64_t[]){6});
    double *gx = read_as_f64(x);
    host_mm(a, gx, r, 6, 6, 1);
    near(r, b, 6, 1e-12, "tensorsolve");
    free(gx);
    clt_tensor_free(x);
    x = (clt_tensor *)1;
    assert_error(clt_linalg_tensorinv(t, 2, &x), CLT_ERR_INVALID_ARGUMENT,
                 "prod(self.shape[ind:]) == prod(self.shape[:ind]), but got 3 != 12");
    cr_assert_null(x);
    x = (clt_tensor *)1;
    assert_error(clt_linalg_tensorinv(ta, 1, &x), CLT_ERR_INVALID_ARGUMENT, "but got 18 != 2");
    names_only("clt_linalg_tensorinv");
    cr_assert_null(x);
    free(a);
    free(b);
    clt_tensor_free(t);
    clt_tensor_free(inv);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

Test(linalg_lu, refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 3},
                              (double[]){2, 0, 0, 1, 2, 0, 1, 1, 2});
    clt_tensor *b = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 1}, (double[]){1, 2, 3, 4});
    clt_tensor *v = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    clt_tensor *x = (clt_tensor *)1, *lu = NULL, *piv = NULL, *d = NULL;
    assert_error(clt_linalg_solve_triangular(a, b, 0, 1, 0, &x), CLT_ERR_SHAPE_MISMATCH,
                 "Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)");
    names_only("clt_linalg_solve_triangular");
    cr_assert_null(x);
    x = (clt_tensor *)1;
    assert_error(clt_linalg_solve_triangular(a, b, 0, 0, 0, &x), CLT_ERR_SHAPE_MISMATCH,
                 "equation XA = B (3x3 and 4x1)");
    cr_assert_null(x);
    assert_error(clt_linalg_solve_triangular(a, v, 0, 1, 0, &x), CLT_ERR_INVALID_ARGUMENT,
                 "The input tensor B must have at least 2 dimensions.");
    CHECK(clt_to_dtype(a, CLT_FLOAT64, &d));
    assert_error(clt_linalg_solve_triangular(d, b, 0, 1, 0, &x), CLT_ERR_DTYPE_MISMATCH,
                 "same dtype");
    CHECK(clt_linalg_lu_factor(a, &lu, &piv));
    clt_tensor *bad = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, (int64_t[]){3}, (int32_t[]){1, 4, 3}, &bad));
    clt_tensor *b3 = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 1}, (double[]){1, 2, 3});
    x = (clt_tensor *)1;
    assert_error(clt_linalg_lu_solve(lu, bad, b3, 1, 0, &x), CLT_ERR_INVALID_ARGUMENT,
                 "pivots[1] = 4 is outside [1, 3]");
    names_only("clt_linalg_lu_solve");
    cr_assert_null(x);
    assert_error(clt_linalg_lu_solve(lu, d, b3, 1, 0, &x), CLT_ERR_DTYPE_MISMATCH, "int32");
    assert_error(clt_linalg_lu_solve(lu, piv, b, 1, 0, &x), CLT_ERR_SHAPE_MISMATCH,
                 "(3x3 and 4x1)");
    names_only("clt_linalg_lu_solve");
    clt_tensor *r = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, (double[6]){0});
    assert_error(clt_linalg_matrix_exp(r, &x), CLT_ERR_INVALID_ARGUMENT,
                 "must be batches of square matrices");
    names_only("clt_linalg_matrix_exp");
    cr_assert_null(x);
    clt_tensor *ts[] = {a, b, v, lu, piv, d, bad, b3, r};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        clt_tensor_free(ts[i]);
}

/* ---- cond through the inverse ------------------------------------------------- */

/* The 'fro' (ord 0), 1 (ord 1) or inf (ord 2) norm of a (n x n). */
static double host_norm(const double *a, int n, int ord)
{
    double r = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++)
            s += ord == 0 ? a[i * n + j] * a[i * n + j] : fabs(ord == 1 ? a[j * n + i]
                                                                        : a[i * n + j]);
        r = ord == 0 ? r + s : fmax(r, s);
    }
    return ord == 0 ? sqrt(r) : r;
}

Test(linalg_lu, cond_against_host)
{
    clt_device *dev = get_device("cpu");
    const int n = 4;
    double *a = randoms(2 * n * n, 13), inv[16], eye[16];
    for (int i = 0; i < n * n; i++) {
        a[i] += i % (n + 1) == 0 ? 2 : 0;
        a[n * n + i] = i / n == 0 ? 0 : a[i]; /* a zero row: singular */
    }
    for (int i = 0; i < n * n; i++)
        eye[i] = i % (n + 1) == 0;
    double w[16];
    memcpy(w, a, sizeof w);
    memcpy(inv, eye, sizeof inv);
    host_solve_square(w, n, inv, n);
    const char *ords[] = {"fro", "1", "inf"};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){2, n, n}, a);
    for (int o = 0; o < 3; o++) {
        clt_tensor *c = NULL;
        CHECK(clt_linalg_cond_ord(t, ords[o], &c));
        assert_shape(c, 1, (int64_t[]){2});
        double *g = read_as_f64(c), want = host_norm(a, n, o) * host_norm(inv, n, o);
        cr_assert(fabs(g[0] - want) <= 1e-12 * want, "cond %s: %.15g, want %.15g", ords[o], g[0],
                  want);
        cr_assert(isinf(g[1]) && g[1] > 0, "cond %s of a singular matrix: %g", ords[o], g[1]);
        free(g);
        clt_tensor_free(c);
    }
    clt_tensor *c = (clt_tensor *)1;
    assert_error(clt_linalg_cond_ord(t, "3", &c), CLT_ERR_INVALID_ARGUMENT,
                 "linalg.cond got an invalid norm type: 3");
    names_only("clt_linalg_cond_ord");
    cr_assert_null(c);
    clt_tensor_free(t);
    free(a);
}

/* ---- lstsq of rank-deficient and wide A ------------------------------------------ */

/* A = Y Z of rank 2 ([6, 2] by [2, 4]): the minimum-norm X satisfies the
 * normal equations A^T (A X - B) = 0 and lies in the row space of A, that
 * of Z (X = Z^T (Z Z^T)^-1 Z X); a wide [3, 5] A of full rank solves A X =
 * B exactly, in A's row space too.  The drivers' other outputs. */
Test(linalg_lu, lstsq_minimum_norm)
{
    clt_device *dev = get_device("cpu");
    const int m = 6, n = 4, k = 2;
    double *y = randoms(m * 2, 17), *z = randoms(2 * n, 18), *b = randoms(m * k, 19);
    double *w = randoms(15, 20);
    double a[24], r[24], ztz[16], p[16];
    host_mm(y, z, a, m, 2, n);
    /* P = Z^T (Z Z^T)^-1 Z, the projection on the row space */
    double zzt[4], zi[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            zzt[i * 2 + j] = 0;
            for (int l = 0; l < n; l++)
                zzt[i * 2 + j] += z[i * n + l] * z[j * n + l];
        }
    memcpy(zi, z, sizeof zi);
    host_solve_square(zzt, 2, zi, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            ztz[i * n + j] = z[i] * zi[j] + z[n + i] * zi[n + j];
    memcpy(p, ztz, sizeof p);
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = dtypes[d];
        double tol = dt == CLT_FLOAT32 ? 2e-4 : 1e-10;
        clt_tensor *ta = tensor_of(dev, dt, 2, (int64_t[]){m, n}, a);
        clt_tensor *tb = tensor_of(dev, dt, 2, (int64_t[]){m, k}, b);
        clt_tensor *x = NULL, *res = NULL, *rank = NULL, *sv = NULL;
        CHECK(clt_linalg_lstsq_ex(ta, tb, NULL, "gelsd", &x, &res, &rank, &sv));
        assert_shape(x, 2, (int64_t[]){n, k});
        assert_shape(res, 1, (int64_t[]){0}); /* rank 2 < n: none */
        assert_shape(rank, 0, NULL);
        assert_shape(sv, 1, (int64_t[]){n});
        cr_assert_eq(clt_tensor_dtype(rank), CLT_INT64);
        double *gx = read_as_f64(x), *gr = read_as_f64(rank), *gs = read_as_f64(sv), px[8];
        cr_assert_eq(gr[0], 2, "rank %g, want 2", gr[0]);
        cr_assert(gs[2] < 1e-5 * gs[0] && gs[1] > 1e-2 * gs[0], "singular values %g %g %g",
                  gs[0], gs[1], gs[2]);
        host_mm(a, gx, r, m, n, k);
        for (int i = 0; i < m * k; i++)
            r[i] -= b[i];
        for (int i = 0; i < n; i++) /* A^T (A X - B) */
            for (int j = 0; j < k; j++) {
                double s = 0;
                for (int l = 0; l < m; l++)
                    s += a[l * n + i] * r[l * k + j];
                cr_assert(fabs(s) <= tol * 10, "%s normal equations (%d, %d): %g",
                          clt_dtype_name(dt), i, j, s);
            }
        host_mm(p, gx, px, n, n, k);
        near(px, gx, (size_t)(n * k), tol, "X in the row space");
        free(gx);
        free(gr);
        free(gs);
        clt_tensor *ts[] = {ta, tb, x, res, rank, sv};
        for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
            clt_tensor_free(ts[i]);
        /* wide, full rank: A X = B exactly */
        ta = tensor_of(dev, dt, 2, (int64_t[]){3, 5}, w);
        tb = tensor_of(dev, dt, 2, (int64_t[]){3, 1}, b);
        CHECK(clt_linalg_lstsq(ta, tb, &x));
        gx = read_as_f64(x);
        double *av = read_as_f64(ta), ax[3];
        host_mm(av, gx, ax, 3, 5, 1);
        near(ax, b, 3, tol, "wide A X = B");
        free(gx);
        free(av);
        clt_tensor_free(x);
        clt_tensor_free(ta);
        clt_tensor_free(tb);
    }
    /* a full-rank tall A with gelsd: the squared residuals */
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, 2}, y);
    clt_tensor *tb = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, k}, b);
    clt_tensor *x = NULL, *res = NULL, *rank = NULL, *sv = NULL;
    CHECK(clt_linalg_lstsq_ex(ta, tb, NULL, "gelsd", &x, &res, &rank, &sv));
    assert_shape(res, 1, (int64_t[]){k});
    double *gx = read_as_f64(x), *ge = read_as_f64(res);
    host_mm(y, gx, r, m, 2, k);
    for (int j = 0; j < k; j++) {
        double e = 0;
        for (int i = 0; i < m; i++)
            e += (r[i * k + j] - b[i * k + j]) * (r[i * k + j] - b[i * k + j]);
        cr_assert(fabs(ge[j] - e) <= 1e-10 * (1 + e), "residual %d: %g, want %g", j, ge[j], e);
    }
    free(gx);
    free(ge);
    clt_tensor *ts[] = {ta, tb, x, res, rank, sv};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        clt_tensor_free(ts[i]);
    x = (clt_tensor *)1;
    ta = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 5}, w);
    tb = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 1}, b);
    assert_error(clt_linalg_lstsq_ex(ta, tb, NULL, "gelsx", &x, &res, &rank, &sv),
                 CLT_ERR_INVALID_ARGUMENT, "should be one of (gels, gelsy, gelsd, gelss)");
    names_only("clt_linalg_lstsq_ex");
    cr_assert_null(x);
    cr_assert_null(res);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    free(y);
    free(z);
    free(b);
    free(w);
}

/* ---- gradients ----------------------------------------------------------------- */

static clt_status f_solve_tri(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int flags = *(const int *)ctx;
    return clt_linalg_solve_triangular(in[0], in[1], flags & 1, (flags >> 1) & 1, flags >> 2,
                                       out);
}

static clt_status f_lu_factor(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *piv = NULL;
    clt_status st = clt_linalg_lu_factor(in[0], out, &piv);
    clt_tensor_free(piv);
    return st;
}

/* L (ctx 1) or U (2) of lu, or their product L U (0). */
static clt_status f_lu(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int which = *(const int *)ctx;
    clt_tensor *p = NULL, *l = NULL, *u = NULL;
    clt_status st = clt_linalg_lu(in[0], &p, &l, &u);
    if (st == CLT_OK)
        st = which == 1 ? (*out = clt_tensor_retain(l), CLT_OK)
             : which == 2 ? (*out = clt_tensor_retain(u), CLT_OK)
                          : clt_matmul(l, u, out);
    clt_tensor_free(p);
    clt_tensor_free(l);
    clt_tensor_free(u);
    return st;
}

/* lu_solve(lu_factor(A), B) with left and adjoint from ctx's bits. */
static clt_status f_lu_solve(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int mode = *(const int *)ctx;
    clt_tensor *lu = NULL, *piv = NULL;
    clt_status st = clt_linalg_lu_factor(in[0], &lu, &piv);
    if (st == CLT_OK)
        st = clt_linalg_lu_solve(lu, piv, in[1], mode & 1, mode >> 1, out);
    clt_tensor_free(lu);
    clt_tensor_free(piv);
    return st;
}

/* cholesky_solve (B given) or cholesky_inverse of the triangle of L that
 * they read: torch's gradient of L (tests/grad_conformance.py compares it)
 * is a full matrix, whose other triangle no finite difference sees. */
static clt_status chol_of_triangle(const clt_tensor *b, const clt_tensor *l, int up,
                                   clt_tensor **out)
{
    clt_tensor *t = NULL;
    clt_status st = up ? clt_triu(l, 0, &t) : clt_tril(l, 0, &t);
    if (st == CLT_OK)
        st = b ? clt_cholesky_solve(b, t, up, out) : clt_cholesky_inverse(t, up, out);
    clt_tensor_free(t);
    return st;
}

static clt_status f_chol_solve(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return chol_of_triangle(in[0], in[1], *(const int *)ctx, out);
}

static clt_status f_chol_inverse(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return chol_of_triangle(NULL, in[0], *(const int *)ctx, out);
}

static clt_status f_expm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_matrix_exp(in[0], out);
}

static clt_status f_tensorinv(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_tensorinv(in[0], 1, out);
}

static clt_status f_cond(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_cond_ord(in[0], ctx, out);
}

Test(linalg_lu, gradients)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(64, 31), *b = randoms(64, 32), c[32], spdl[16];
    for (int i = 0; i < 32; i++)
        c[i] = a[i] / 2 + (i % 16 % 5 == 0 ? (i % 3 ? 2 : -2) : 0); /* two 4 x 4, diagonal 2 */
    for (int flags = 0; flags < 8; flags++) {
        int left = (flags >> 1) & 1;
        gc_in in[2] = {{3, {2, 4, 4}, c, 1},
                       {3, {2, left ? 4 : 3, left ? 3 : 4}, b, 1}};
        gradcheck(dev, f_solve_tri, &flags, 2, in);
    }
    gc_in sq = {3, {2, 4, 4}, c, 1};
    gradcheck(dev, f_lu_factor, NULL, 1, &sq);
    for (int which = 0; which < 3; which++)
        gradcheck(dev, f_lu, &which, 1, &sq);
    /* wide and tall: torch's formulas for rectangular A */
    for (int tall = 0; tall < 2; tall++) {
        gc_in rect = {3, {2, tall ? 5 : 3, tall ? 3 : 5}, a, 1};
        gradcheck(dev, f_lu_factor, NULL, 1, &rect);
        for (int which = 0; which < 3; which++)
            gradcheck(dev, f_lu, &which, 1, &rect);
    }
    for (int mode = 0; mode < 4; mode++) {
        gc_in in[2] = {{3, {2, 4, 4}, c, 1}, {2, {mode & 1 ? 4 : 3, mode & 1 ? 3 : 4}, b, 1}};
        gradcheck(dev, f_lu_solve, &mode, 2, in);
    }
    for (int i = 0; i < 16; i++) /* diagonal away from 0 */
        spdl[i] = i % 5 == 0 ? 1.5 + a[i] / 4 : a[i + 16];
    for (int up = 0; up < 2; up++) {
        gc_in in[2] = {{2, {4, 2}, b, 1}, {2, {4, 4}, spdl, 1}};
        gradcheck(dev, f_chol_solve, &up, 2, in);
        gradcheck(dev, f_chol_inverse, &up, 1, &in[1]);
    }
    double e[16];
    for (int i = 0; i < 16; i++)
        e[i] = a[i] * 1.5;
    gc_in ex = {2, {4, 4}, e, 1}, exb = {3, {2, 4, 4}, c, 1};
    gradcheck(dev, f_expm, NULL, 1, &ex);
    gradcheck(dev, f_expm, NULL, 1, &exb);
    gc_in ti = {3, {4, 2, 2}, c, 1};
    gradcheck(dev, f_tensorinv, NULL, 1, &ti);
    const char *ords[] = {"fro", "nuc", "1", "-inf"};
    for (int o = 0; o < 4; o++)
        gradcheck(dev, f_cond, ords[o], 1, &sq);
    free(a);
    free(b);
}

/* The node names of lu and lu_factor of a rectangular A are torch's, and
 * their gradients are computed (the values: linalg_lu.gradients). */
Test(linalg_lu, backward_names)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(12, 5);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){4, 3}, a);
    CHECK(clt_set_requires_grad(t, 1));
    clt_tensor *p = NULL, *l = NULL, *u = NULL, *s = NULL, *piv = NULL, *info = NULL;
    CHECK(clt_linalg_lu(t, &p, &l, &u));
    cr_assert_str_eq(clt_grad_fn_name(l), "LinalgLuBackward0");
    cr_assert_str_eq(clt_grad_fn_name(u), "LinalgLuBackward0");
    cr_assert_null(clt_grad_fn_name(p));
    CHECK(clt_sum(u, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor_free(s);
    clt_tensor *lu = NULL;
    CHECK(clt_linalg_lu_factor_ex(t, &lu, &piv, &info));
    cr_assert_str_eq(clt_grad_fn_name(lu), "LinalgLuFactorExBackward0");
    cr_assert_null(clt_grad_fn_name(piv));
    clt_tensor *ts[] = {t, p, l, u, lu, piv, info};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        clt_tensor_free(ts[i]);
    free(a);
}
