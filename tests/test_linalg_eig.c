/* test_linalg_eig.c: clt_linalg_eigh / _eigvalsh, _svd / _svdvals, clt_svd,
 * _pinv, _matrix_rank and _cond against a plain cyclic Jacobi in float64
 * written here and closed forms: the values, the reconstructions
 * A = V diag(w) V^T and A = U diag(S) Vh, orthonormality, the sign
 * convention, repeated values, zero and rank-deficient matrices, batches,
 * tall and wide shapes in both dtypes; the refusals; and the gradients of
 * gauge-invariant functions against finite differences. */
#include "gradcheck.h"
#include "host_linalg.h"

/* ---- host references (float64) ------------------------------------------ */

/* batch random m x n matrices in [-1, 1], symmetric when sym. */
static double *random_mats(int batch, int m, int n, unsigned seed, int sym)
{
    size_t cnt = (size_t)(batch * m * n);
    double *a = malloc((cnt + 1) * sizeof *a);
    for (size_t i = 0; i < cnt; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = (double)((seed >> 8) & 0xffff) / 32768.0 - 1.0;
    }
    if (sym)
        for (int b = 0; b < batch; b++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < i; j++)
                    a[(b * n + j) * n + i] = a[(b * n + i) * n + j];
    return a;
}

static clt_tensor *up(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                      const double *v)
{
    return tensor_of(dev, dt, nd, shape, v);
}

static double tol_of(clt_dtype dt)
{
    return dt == CLT_FLOAT32 ? 5e-5 : 1e-11;
}

/* |got - want| <= tol (1 + |want|) element by element. */
static void near(const double *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s: element %zu: got %.12g, want %.12g", what, i, got[i], want[i]);
}

/* The columns of x (r x c, row-major) are orthonormal: x^T x = I. */
static void orthonormal_cols(const double *x, int r, int c, double tol, const char *what)
{
    for (int i = 0; i < c; i++)
        for (int j = 0; j < c; j++) {
            double d = 0;
            for (int k = 0; k < r; k++)
                d += x[k * c + i] * x[k * c + j];
            cr_assert(fabs(d - (i == j)) <= tol, "%s: column %d . column %d = %.12g", what, i, j,
                      d);
        }
}

/* The rows of x (r x c) are orthonormal: x x^T = I. */
static void orthonormal_rows(const double *x, int r, int c, double tol, const char *what)
{
    for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) {
            double d = 0;
            for (int k = 0; k < c; k++)
                d += x[i * c + k] * x[j * c + k];
            cr_assert(fabs(d - (i == j)) <= tol, "%s: row %d . row %d = %.12g", what, i, j, d);
        }
}

/* The largest-magnitude component (the first of equal ones) of each of the
 * first k columns of x (r x c) is positive. */
static void signs(const double *x, int r, int c, int k, const char *what)
{
    for (int j = 0; j < k; j++) {
        int best = 0;
        for (int i = 1; i < r; i++)
            if (fabs(x[i * c + j]) > fabs(x[best * c + j]))
                best = i;
        cr_assert(x[best * c + j] >= 0, "%s: column %d's largest component is %g", what, j,
                  x[best * c + j]);
    }
}

/* ---- eigh ------------------------------------------------------------------ */

/* eigh of batches of random symmetric matrices: the values against the host
 * Jacobi, V diag(w) V^T = A, V^T V = I and the signs; eigvalsh the same
 * values; "U" reads the upper triangle (the lower one is garbage). */
static void eigh_case(clt_device *dev, clt_dtype dt, int batch, int n, unsigned seed)
{
    double *a = random_mats(batch, n, n, seed, 1), tol = tol_of(dt) * (1 + n / 8.0);
    double *w = malloc((size_t)(batch * n + 1) * sizeof *w);
    double *work = malloc((size_t)(n * n + 1) * sizeof *work);
    for (int b = 0; b < batch; b++) {
        memcpy(work, a + (size_t)(b * n * n), (size_t)(n * n) * sizeof *work);
        host_eigvals(work, n, w + b * n);
    }
    int64_t shape[3] = {batch, n, n};
    for (int upper = 0; upper < 2; upper++) {
        /* the triangle not read holds other values */
        double *in = malloc((size_t)(batch * n * n + 1) * sizeof *in);
        memcpy(in, a, (size_t)(batch * n * n) * sizeof *in);
        for (int b = 0; b < batch; b++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    if (upper ? i > j : i < j)
                        in[(b * n + i) * n + j] = 7.0 + i - j;
        clt_tensor *t = up(dev, dt, 3, shape, in), *vals = NULL, *vecs = NULL, *only = NULL;
        const char *uplo = upper ? "U" : "L";
        CHECK(clt_linalg_eigh(t, uplo, &vals, &vecs));
        CHECK(clt_linalg_eigvalsh(t, uplo, &only));
        assert_shape(vals, 2, shape);
        assert_shape(vecs, 3, shape);
        double *gw = read_as_f64(vals), *gv = read_as_f64(vecs), *go = read_as_f64(only);
        near(gw, w, (size_t)(batch * n), tol, "eigenvalues");
        near(go, w, (size_t)(batch * n), tol, "eigvalsh");
        for (int b = 0; b < batch; b++) {
            const double *V = gv + (size_t)(b * n * n), *W = gw + b * n;
            orthonormal_cols(V, n, n, tol, "eigenvectors");
            signs(V, n, n, n, "eigenvectors");
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double r = 0;
                    for (int k = 0; k < n; k++)
                        r += V[i * n + k] * W[k] * V[j * n + k];
                    cr_assert(fabs(r - a[(b * n + i) * n + j]) <= tol * 4,
                              "V diag(w) V^T [%d][%d][%d] = %.12g, A %.12g", b, i, j, r,
                              a[(b * n + i) * n + j]);
                }
        }
        free(gw);
        free(gv);
        free(go);
        free(in);
        clt_tensor_free(t);
        clt_tensor_free(vals);
        clt_tensor_free(vecs);
        clt_tensor_free(only);
    }
    free(a);
    free(w);
    free(work);
}

Test(linalg_eig, eigh_against_host_jacobi)
{
    clt_device *dev = get_device("cpu");
    const int ns[] = {1, 2, 3, 5, 16, 33};
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            eigh_case(dev, d ? CLT_FLOAT64 : CLT_FLOAT32, ns[i] > 16 ? 1 : 3, ns[i],
                      (unsigned)(7 + i));
}

/* tridiag(-1, 2, -1) of size n: eigenvalues 2 - 2 cos(k pi / (n + 1)). */
Test(linalg_eig, eigh_closed_form)
{
    clt_device *dev = get_device("cpu");
    int n = 24;
    double *a = calloc((size_t)(n * n), sizeof *a), *w = malloc((size_t)n * sizeof *w);
    for (int i = 0; i < n; i++) {
        a[i * n + i] = 2;
        if (i + 1 < n)
            a[i * n + i + 1] = a[(i + 1) * n + i] = -1;
        w[i] = 2 - 2 * cos((i + 1) * M_PI / (n + 1));
    }
    int64_t shape[2] = {n, n};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *t = up(dev, dt, 2, shape, a), *vals = NULL;
        CHECK(clt_linalg_eigvalsh(t, NULL, &vals));
        double *g = read_as_f64(vals);
        near(g, w, (size_t)n, tol_of(dt), "tridiagonal");
        free(g);
        clt_tensor_free(vals);
        clt_tensor_free(t);
    }
    free(a);
    free(w);
}

/* Q diag(2, 2, 5, 2) Q^T with Q a Householder reflection (so repeated
 * eigenvalues, whose eigenvectors are any basis of their space), 3 I and
 * the zero matrix: the values, V^T V = I and the reconstruction. */
Test(linalg_eig, repeated_and_zero)
{
    clt_device *dev = get_device("cpu");
    const int n = 4;
    double u[4] = {1, 2, -1, 3}, uu = 15, d[4] = {2, 2, 5, 2}, q[16], a[3][16];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            q[i * n + j] = (i == j) - 2 * u[i] * u[j] / uu;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += q[i * n + k] * d[k] * q[j * n + k];
            a[0][i * n + j] = s;
            a[1][i * n + j] = 3.0 * (i == j);
            a[2][i * n + j] = 0;
        }
    const double want[3][4] = {{2, 2, 2, 5}, {3, 3, 3, 3}, {0, 0, 0, 0}};
    int64_t shape[3] = {3, n, n};
    for (int dd = 0; dd < 2; dd++) {
        clt_dtype dt = dd ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *t = up(dev, dt, 3, shape, &a[0][0]), *vals = NULL, *vecs = NULL;
        CHECK(clt_linalg_eigh(t, NULL, &vals, &vecs));
        double *gw = read_as_f64(vals), *gv = read_as_f64(vecs);
        near(gw, &want[0][0], 12, tol_of(dt), "repeated eigenvalues");
        for (int b = 0; b < 3; b++) {
            const double *V = gv + b * 16;
            orthonormal_cols(V, n, n, tol_of(dt), "repeated eigenvectors");
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double r = 0;
                    for (int k = 0; k < n; k++)
                        r += V[i * n + k] * gw[b * n + k] * V[j * n + k];
                    cr_assert(fabs(r - a[b][i * n + j]) <= 4 * tol_of(dt), "[%d][%d][%d]", b,
                              i, j);
                }
        }
        free(gw);
        free(gv);
        clt_tensor_free(vals);
        clt_tensor_free(vecs);
        clt_tensor_free(t);
    }
}

/* ---- SVD ------------------------------------------------------------------- */

/* svd of batch m x n matrices (full or reduced): S against the host, U
 * diag(S) Vh = A, orthonormal U and Vh (all of them when full), the signs
 * of U's first k columns, svdvals the same S, torch.svd's V = Vh^T. */
static void svd_case(clt_device *dev, clt_dtype dt, int batch, int m, int n, int full,
                     const double *a)
{
    int k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    double tol = tol_of(dt) * (1 + (m + n) / 8.0);
    double *s = malloc((size_t)(batch * k + 1) * sizeof *s);
    for (int b = 0; b < batch; b++)
        host_svdvals(a + (size_t)(b * m * n), m, n, s + b * k);
    int64_t shape[3] = {batch, m, n}, us[3] = {batch, m, uc}, ss[2] = {batch, k},
            vs[3] = {batch, vr, n};
    clt_tensor *t = up(dev, dt, 3, shape, a), *U = NULL, *S = NULL, *Vh = NULL, *sv = NULL;
    CHECK(clt_linalg_svd(t, full, &U, &S, &Vh));
    CHECK(clt_linalg_svdvals(t, &sv));
    assert_shape(U, 3, us);
    assert_shape(S, 2, ss);
    assert_shape(Vh, 3, vs);
    double *gu = read_as_f64(U), *gs = read_as_f64(S), *gv = read_as_f64(Vh);
    double *go = read_as_f64(sv);
    near(gs, s, (size_t)(batch * k), tol, "singular values");
    near(go, s, (size_t)(batch * k), tol, "svdvals");
    for (int b = 0; b < batch; b++) {
        const double *Ub = gu + (size_t)(b * m * uc), *Vb = gv + (size_t)(b * vr * n);
        orthonormal_cols(Ub, m, uc, tol, "U");
        orthonormal_rows(Vb, vr, n, tol, "Vh");
        signs(Ub, m, uc, k, "U");
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double r = 0;
                for (int c = 0; c < k; c++)
                    r += Ub[i * uc + c] * gs[b * k + c] * Vb[c * n + j];
                cr_assert(fabs(r - a[(b * m + i) * n + j]) <= 4 * tol,
                          "U S Vh [%d][%d][%d] = %.12g, A %.12g", b, i, j, r,
                          a[(b * m + i) * n + j]);
            }
    }
    if (!full) {
        clt_tensor *u2 = NULL, *s2 = NULL, *v2 = NULL;
        CHECK(clt_svd(t, 1, 1, &u2, &s2, &v2));
        double *h = read_as_f64(v2);
        for (int b = 0; b < batch; b++)
            for (int i = 0; i < n; i++)
                for (int c = 0; c < k; c++)
                    cr_assert_eq(h[(b * n + i) * k + c], gv[(b * k + c) * n + i]);
        free(h);
        clt_tensor_free(u2);
        clt_tensor_free(s2);
        clt_tensor_free(v2);
    }
    free(gu);
    free(gs);
    free(gv);
    free(go);
    free(s);
    clt_tensor_free(t);
    clt_tensor_free(U);
    clt_tensor_free(S);
    clt_tensor_free(Vh);
    clt_tensor_free(sv);
}

Test(linalg_eig, svd_tall_wide_square)
{
    clt_device *dev = get_device("cpu");
    const int shapes[][2] = {{7, 4}, {4, 7}, {5, 5}, {1, 6}, {6, 1}, {20, 13}};
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
            for (int full = 0; full < 2; full++) {
                int m = shapes[i][0], n = shapes[i][1];
                double *a = random_mats(2, m, n, (unsigned)(31 + i), 0);
                svd_case(dev, d ? CLT_FLOAT64 : CLT_FLOAT32, 2, m, n, full, a);
                free(a);
            }
}

/* A rank-1 outer product, a matrix with a zero column and the zero matrix:
 * zero singular values, whose vectors still complete orthonormal U and Vh. */
Test(linalg_eig, svd_rank_deficient_and_zero)
{
    clt_device *dev = get_device("cpu");
    const int m = 5, n = 4;
    double a[3][20];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            a[0][i * n + j] = (i + 1.0) * (j - 1.5);
            a[1][i * n + j] = j == 2 ? 0 : sin(i * 3.0 + j);
            a[2][i * n + j] = 0;
        }
    for (int d = 0; d < 2; d++)
        for (int full = 0; full < 2; full++)
            svd_case(dev, d ? CLT_FLOAT64 : CLT_FLOAT32, 3, m, n, full, &a[0][0]);
    double at[3][20]; /* the transposes: wide */
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                at[b][j * m + i] = a[b][i * n + j];
    for (int full = 0; full < 2; full++)
        svd_case(dev, CLT_FLOAT64, 3, n, m, full, &at[0][0]);
}

/* float32 values of a 64 x 64 symmetric matrix and of a 64 x 48 one
 * against the float64 host references on the same (float-rounded)
 * entries: within a few sqrt(n) eps |A|, which the rotated diagonal and
 * column norms alone miss by an order of magnitude (the values are
 * recomputed from A and the vectors). */
Test(linalg_eig, float32_accuracy)
{
    clt_device *dev = get_device("cpu");
    const int n = 64, m = 48;
    double *a = random_mats(1, n, n, 99, 1), *b = random_mats(1, n, m, 98, 0);
    double *w = malloc((size_t)n * sizeof *w), *s = malloc((size_t)m * sizeof *s);
    for (int i = 0; i < n * n; i++)
        a[i] = (float)a[i];
    for (int i = 0; i < n * m; i++)
        b[i] = (float)b[i];
    double *work = malloc((size_t)(n * n) * sizeof *work);
    memcpy(work, a, (size_t)(n * n) * sizeof *work);
    host_eigvals(work, n, w);
    host_svdvals(b, n, m, s);
    clt_tensor *ta = up(dev, CLT_FLOAT32, 2, (int64_t[]){n, n}, a),
               *tb = up(dev, CLT_FLOAT32, 2, (int64_t[]){n, m}, b), *vw = NULL, *vs = NULL;
    CHECK(clt_linalg_eigvalsh(ta, NULL, &vw));
    CHECK(clt_linalg_svdvals(tb, &vs));
    double *gw = read_as_f64(vw), *gs = read_as_f64(vs), ew = 0, es = 0;
    for (int i = 0; i < n; i++)
        ew = fmax(ew, fabs(gw[i] - w[i]));
    for (int i = 0; i < m; i++)
        es = fmax(es, fabs(gs[i] - s[i]));
    /* |A| near 9 for both: 1e-5 is about 1.1 sqrt(n) eps |A| */
    cr_assert(ew <= 1e-5, "eigenvalues off by %g", ew);
    cr_assert(es <= 1e-5, "singular values off by %g", es);
    free(gw);
    free(gs);
    free(a);
    free(b);
    free(w);
    free(s);
    free(work);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(vw);
    clt_tensor_free(vs);
}

/* ---- pinv, matrix_rank, cond ------------------------------------------------ */

/* The Moore-Penrose conditions of X = pinv(A) (A m x n): A X A = A,
 * X A X = X, A X and X A symmetric. */
static void penrose(const double *A, const double *X, int m, int n, double tol)
{
    double *ax = calloc((size_t)(m * m), sizeof *ax), *xa = calloc((size_t)(n * n), sizeof *xa);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            for (int k = 0; k < n; k++)
                ax[i * m + j] += A[i * n + k] * X[k * m + j];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < m; k++)
                xa[i * n + j] += X[i * m + k] * A[k * n + j];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            cr_assert(fabs(ax[i * m + j] - ax[j * m + i]) <= tol, "A X not symmetric");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            cr_assert(fabs(xa[i * n + j] - xa[j * n + i]) <= tol, "X A not symmetric");
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double r = 0;
            for (int k = 0; k < m; k++)
                r += ax[i * m + k] * A[k * n + j];
            cr_assert(fabs(r - A[i * n + j]) <= tol, "A X A [%d][%d] = %g, A %g", i, j, r,
                      A[i * n + j]);
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            double r = 0;
            for (int k = 0; k < n; k++)
                r += xa[i * n + k] * X[k * m + j];
            cr_assert(fabs(r - X[i * m + j]) <= tol, "X A X [%d][%d]", i, j);
        }
    free(ax);
    free(xa);
}

Test(linalg_eig, pinv_rank_cond)
{
    clt_device *dev = get_device("cpu");
    const int m = 6, n = 4;
    /* rank 2: the sum of two outer products */
    double a[24], s[4];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            a[i * n + j] = (i + 1.0) * (j - 1.0) + cos(i) * (j * j - 2.0);
    host_svdvals(a, m, n, s);
    int64_t shape[2] = {m, n};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *t = up(dev, dt, 2, shape, a), *p = NULL, *r = NULL, *c = NULL;
        CHECK(clt_linalg_pinv(t, NULL, NULL, 0, &p));
        int64_t ps[2] = {n, m};
        assert_shape(p, 2, ps);
        double *x = read_as_f64(p);
        penrose(a, x, m, n, d ? 1e-9 : 2e-3);
        free(x);
        CHECK(clt_linalg_matrix_rank(t, NULL, NULL, 0, &r));
        int64_t rank = -1;
        cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
        CHECK(clt_tensor_read(r, &rank, sizeof rank));
        cr_assert_eq(rank, 2, "rank %lld", (long long)rank);
        clt_tensor_free(r);
        /* an absolute tolerance above the second singular value: rank 1 */
        double atol = (s[0] + s[1]) / 2;
        CHECK(clt_linalg_matrix_rank(t, &atol, NULL, 0, &r));
        CHECK(clt_tensor_read(r, &rank, sizeof rank));
        cr_assert_eq(rank, 1);
        clt_tensor_free(r);
        /* cond of the full-rank square top: S_max / S_min */
        clt_tensor *sq = NULL, *sv = NULL;
        CHECK(clt_narrow(t, 0, 0, n, &sq));
        CHECK(clt_linalg_cond(sq, 2, &c));
        double sqv[16], ss[4], got[2];
        memcpy(sqv, a, sizeof sqv);
        sqv[0] += 1;
        sqv[15] += 2; /* full rank */
        clt_tensor_free(sq);
        clt_tensor_free(c);
        sq = up(dev, dt, 2, (int64_t[]){n, n}, sqv);
        host_svdvals(sqv, n, n, ss);
        CHECK(clt_linalg_cond(sq, 2, &c));
        got[0] = *read_as_f64(c);
        clt_tensor_free(c);
        CHECK(clt_linalg_cond(sq, -2, &c));
        got[1] = *read_as_f64(c);
        double want[2] = {ss[0] / ss[3], ss[3] / ss[0]};
        near(got, want, 2, tol_of(dt) * 10, "cond");
        clt_tensor_free(c);
        clt_tensor_free(sv);
        clt_tensor_free(sq);
        clt_tensor_free(t);
        clt_tensor_free(p);
    }
}

Test(linalg_eig, pinv_hermitian)
{
    clt_device *dev = get_device("cpu");
    const int n = 5;
    double *a = random_mats(1, n, n, 77, 1);
    /* make it rank 4: a <- a - w0 v0 v0^T is hard on the host; use a
     * symmetric rank-deficient B = C C^T with C 5 x 3 instead */
    double b[25] = {0};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 3; k++)
                b[i * n + j] += a[i * n + k] * a[j * n + k];
    int64_t shape[2] = {n, n};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *t = up(dev, dt, 2, shape, b), *p = NULL, *r = NULL;
        CHECK(clt_linalg_pinv(t, NULL, NULL, 1, &p));
        double *x = read_as_f64(p);
        penrose(b, x, n, n, d ? 1e-9 : 2e-3);
        free(x);
        CHECK(clt_linalg_matrix_rank(t, NULL, NULL, 1, &r));
        int64_t rank = -1;
        CHECK(clt_tensor_read(r, &rank, sizeof rank));
        cr_assert_eq(rank, 3);
        clt_tensor_free(r);
        clt_tensor_free(p);
        clt_tensor_free(t);
    }
    free(a);
}

/* ---- refusals -------------------------------------------------------------- */

Test(linalg_eig, refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *i32 = NULL, *v = NULL, *rect = NULL, *nan = NULL, *o = (clt_tensor *)1,
               *o2 = (clt_tensor *)1, *o3 = (clt_tensor *)1;
    CHECK(clt_zeros(dev, CLT_INT32, 2, (int64_t[]){3, 3}, &i32));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &v));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, &rect));
    double nv[4] = {1, NAN, 0, 1};
    nan = up(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, nv);
    assert_error(clt_linalg_eigh(i32, NULL, &o, &o2), CLT_ERR_DTYPE_UNSUPPORTED,
                 "Expected a floating point tensor");
    cr_assert_null(o);
    cr_assert_null(o2);
    assert_error(clt_linalg_eigvalsh(rect, NULL, &o), CLT_ERR_INVALID_ARGUMENT,
                 "A must be batches of square matrices, but they are 2 by 3 matrices");
    cr_assert_null(o);
    assert_error(clt_linalg_eigvalsh(rect, "X", &o), CLT_ERR_INVALID_ARGUMENT,
                 "Expected UPLO argument to be 'L' or 'U', but got X");
    assert_error(clt_linalg_svd(v, 0, &o, &o2, &o3), CLT_ERR_INVALID_ARGUMENT,
                 "must have at least 2 dimensions");
    cr_assert_null(o);
    cr_assert_null(o2);
    cr_assert_null(o3);
    /* torch.svd without U and V on a vector or a 0-dim tensor: refused
     * before any shape of A is read (UBSan found it reading below shape) */
    clt_tensor *scalar = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 0, NULL, &scalar));
    const clt_tensor *few[] = {v, scalar};
    for (int k = 0; k < 2; k++) {
        o = o2 = o3 = (clt_tensor *)1;
        assert_error(clt_svd(few[k], 1, 0, &o, &o2, &o3), CLT_ERR_INVALID_ARGUMENT,
                     "must have at least 2 dimensions");
        cr_assert(o == NULL && o2 == NULL && o3 == NULL);
    }
    clt_tensor_free(scalar);
    o = o2 = (clt_tensor *)1;
    assert_error(clt_linalg_svd(rect, 0, &o, NULL, &o2), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(o);
    cr_assert_null(o2);
    assert_error(clt_linalg_svdvals(nan, &o), CLT_ERR_INVALID_ARGUMENT,
                 "The algorithm failed to converge because the input matrix contained "
                 "non-finite values.");
    names_only("clt_linalg_svdvals");
    assert_error(clt_linalg_cond(rect, 1, &o), CLT_ERR_INVALID_ARGUMENT,
                 "must be batches of square matrices");
    assert_error(clt_linalg_pinv(i32, NULL, NULL, 0, &o), CLT_ERR_DTYPE_UNSUPPORTED,
                 "clt_linalg_pinv: Expected a floating point tensor");
    assert_error(clt_linalg_matrix_rank(rect, NULL, NULL, 1, &o), CLT_ERR_INVALID_ARGUMENT,
                 "square");
    /* NaN in the triangle eigh reads: NaN values, no error (torch's) */
    CHECK(clt_linalg_eigvalsh(nan, "U", &o));
    double *w = read_as_f64(o);
    cr_assert(isnan(w[0]) && isnan(w[1]));
    free(w);
    clt_tensor_free(o);
    CHECK(clt_linalg_eigvalsh(nan, "L", &o)); /* the NaN is above the diagonal */
    w = read_as_f64(o);
    cr_assert(w[0] == 1 && w[1] == 1, "%g %g", w[0], w[1]);
    free(w);
    clt_tensor_free(o);
    clt_tensor_free(i32);
    clt_tensor_free(v);
    clt_tensor_free(rect);
    clt_tensor_free(nan);
}

Test(linalg_eig, empty)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = NULL, *u = NULL, *s = NULL, *vh = NULL, *w = NULL, *v = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 3, 0}, &a));
    CHECK(clt_linalg_svd(a, 1, &u, &s, &vh));
    assert_shape(u, 3, (int64_t[]){2, 3, 3});
    assert_shape(s, 2, (int64_t[]){2, 0});
    assert_shape(vh, 3, (int64_t[]){2, 0, 0});
    double *h = read_as_f64(u);
    for (int i = 0; i < 18; i++)
        cr_assert_eq(h[i], (i % 9) % 4 == 0 ? 1.0 : 0.0, "U[%d] = %g", i, h[i]);
    free(h);
    clt_tensor_free(a);
    CHECK(clt_zeros(dev, CLT_FLOAT64, 3, (int64_t[]){0, 4, 4}, &a));
    CHECK(clt_linalg_eigh(a, NULL, &w, &v));
    assert_shape(w, 2, (int64_t[]){0, 4});
    assert_shape(v, 3, (int64_t[]){0, 4, 4});
    clt_tensor_free(a);
    clt_tensor_free(u);
    clt_tensor_free(s);
    clt_tensor_free(vh);
    clt_tensor_free(w);
    clt_tensor_free(v);
}

/* ---- gradients ---------------------------------------------------------------- */

/* (X + X^T) / 2: eigh reads one triangle, so its gradient is taken on the
 * symmetric matrices, as torch's gradcheck of eigh takes it. */
static clt_status sym(const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *t = NULL, *s = NULL;
    clt_status st = clt_transpose(x, -2, -1, &t);
    if (st == CLT_OK)
        st = clt_add(x, t, &s);
    if (st == CLT_OK)
        st = clt_mul_scalar(s, 0.5, out);
    clt_tensor_free(t);
    clt_tensor_free(s);
    return st;
}

static clt_status square(clt_tensor *x, clt_tensor **out)
{
    clt_status st = x ? clt_mul(x, x, out) : CLT_ERR_NULL_ARGUMENT;
    clt_tensor_free(x);
    return st;
}

/* ctx: 0 eigenvalues, 1 squared eigenvectors (sign-free), 2 both (their
 * sum after the values are broadcast). */
static clt_status f_eigh(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int what = *(const int *)ctx;
    clt_tensor *s = NULL, *w = NULL, *v = NULL, *v2 = NULL;
    clt_status st = sym(in[0], &s);
    if (st == CLT_OK && what == 0)
        st = clt_linalg_eigvalsh(s, NULL, out);
    else if (st == CLT_OK)
        st = clt_linalg_eigh(s, "U", &w, &v);
    if (st == CLT_OK && what == 1)
        st = square(v, out), v = NULL;
    else if (st == CLT_OK && what == 2) {
        st = square(v, &v2), v = NULL;
        if (st == CLT_OK)
            st = clt_unsqueeze(w, -2, &v);
        if (st == CLT_OK)
            st = clt_add(v2, v, out);
    }
    clt_tensor_free(s);
    clt_tensor_free(w);
    clt_tensor_free(v);
    clt_tensor_free(v2);
    return st;
}

/* ctx: 0 svdvals, 1 U^2, 2 Vh^2, 3 U^2 + S (all three used), 4 the first
 * k columns of a full U, squared, 5 torch.svd's V^2. */
static clt_status f_svd(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int what = *(const int *)ctx;
    if (what == 0)
        return clt_linalg_svdvals(in[0], out);
    clt_tensor *u = NULL, *s = NULL, *vh = NULL, *a = NULL, *b = NULL, *c = NULL;
    clt_status st = what == 5 ? clt_svd(in[0], 1, 1, &u, &s, &vh)
                              : clt_linalg_svd(in[0], what == 4, &u, &s, &vh);
    int64_t k = st == CLT_OK ? clt_tensor_shape(s)[clt_tensor_ndim(s) - 1] : 0;
    if (st == CLT_OK && what == 1)
        st = square(u, out), u = NULL;
    else if (st == CLT_OK && (what == 2 || what == 5))
        st = square(vh, out), vh = NULL;
    else if (st == CLT_OK && what == 3) {
        st = square(u, &a), u = NULL;
        if (st == CLT_OK)
            st = clt_unsqueeze(s, -2, &b);
        if (st == CLT_OK)
            st = clt_add(a, b, &c);
        if (st == CLT_OK)
            st = square(vh, &a), vh = NULL;
        if (st == CLT_OK)
            st = clt_matmul(c, a, out);
    } else if (st == CLT_OK && what == 4) {
        st = clt_narrow(u, -1, 0, k, &a);
        if (st == CLT_OK)
            st = square(a, out), a = NULL;
    }
    clt_tensor_free(u);
    clt_tensor_free(s);
    clt_tensor_free(vh);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    return st;
}

/* ctx: 0 pinv, 1 pinv hermitian of sym(X), 2 cond, 3 cond p = -2. */
static clt_status f_other(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int what = *(const int *)ctx;
    if (what == 0)
        return clt_linalg_pinv(in[0], NULL, NULL, 0, out);
    if (what >= 2)
        return clt_linalg_cond(in[0], what == 2 ? 2 : -2, out);
    clt_tensor *s = NULL;
    clt_status st = sym(in[0], &s);
    if (st == CLT_OK)
        st = clt_linalg_pinv(s, NULL, NULL, 1, out);
    clt_tensor_free(s);
    return st;
}

Test(linalg_eig, gradients)
{
    clt_device *dev = get_device("cpu");
    double *a = random_mats(2, 4, 4, 5, 0), *t = random_mats(2, 5, 3, 9, 0);
    gc_in sq = {3, {2, 4, 4}, a, 1}, tall = {3, {2, 5, 3}, t, 1}, wide = {3, {2, 3, 5}, t, 1};
    for (int what = 0; what < 3; what++)
        gradcheck(dev, f_eigh, &what, 1, &sq);
    for (int what = 0; what < 6; what++) {
        gradcheck(dev, f_svd, &what, 1, &sq);
        gradcheck(dev, f_svd, &what, 1, &tall);
        gradcheck(dev, f_svd, &what, 1, &wide);
    }
    for (int what = 0; what < 4; what++) {
        gradcheck(dev, f_other, &what, 1, &sq);
        if (what != 1) {
            gradcheck(dev, f_other, &what, 1, &tall);
            gradcheck(dev, f_other, &what, 1, &wide);
        }
    }
    free(a);
    free(t);
}

Test(linalg_eig, grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    double h[4] = {2, 1, 1, 3};
    clt_tensor *x = up(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, h), *w = NULL, *v = NULL,
               *u = NULL, *s = NULL, *r = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_linalg_eigh(x, NULL, &w, &v));
    cr_assert_str_eq(clt_grad_fn_name(w), "LinalgEighBackward0");
    cr_assert_str_eq(clt_grad_fn_name(v), "LinalgEighBackward0");
    clt_tensor_free(w);
    clt_tensor_free(v);
    CHECK(clt_linalg_eigvalsh(x, NULL, &w));
    cr_assert_str_eq(clt_grad_fn_name(w), "LinalgEighBackward0");
    clt_tensor_free(w);
    CHECK(clt_linalg_svd(x, 0, &u, &s, &v));
    cr_assert_str_eq(clt_grad_fn_name(u), "LinalgSvdBackward0");
    cr_assert_str_eq(clt_grad_fn_name(s), "LinalgSvdBackward0");
    cr_assert_str_eq(clt_grad_fn_name(v), "LinalgSvdBackward0");
    clt_tensor_free(u);
    clt_tensor_free(s);
    clt_tensor_free(v);
    CHECK(clt_linalg_svdvals(x, &s));
    cr_assert_str_eq(clt_grad_fn_name(s), "LinalgSvdBackward0");
    clt_tensor_free(s);
    CHECK(clt_svd(x, 1, 1, &u, &s, &v));
    cr_assert_str_eq(clt_grad_fn_name(v), "TransposeBackward0");
    clt_tensor_free(u);
    clt_tensor_free(s);
    clt_tensor_free(v);
    CHECK(clt_linalg_pinv(x, NULL, NULL, 0, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LinalgPinvBackward0");
    clt_tensor_free(r);
    CHECK(clt_linalg_cond(x, 2, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "SqueezeBackward1");
    clt_tensor_free(r);
    clt_tensor_free(x);
}
