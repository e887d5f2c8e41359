/* test_linalg_qr.c: clt_linalg_qr against a float64 Householder QR written
 * here (geqrf's signs), Q orthonormal and Q R = A, in every mode, batched,
 * both dtypes and both factorisation paths (local memory, global memory);
 * lstsq against the normal equations; the norms against host loops;
 * matrix_power and multi_dot against host products; the refusals; and the
 * gradients against finite differences. */
#include <stdio.h>

#include "gradcheck.h"
#include "host_linalg.h"

/* ---- host references (float64) ------------------------------------------ */

/* Householder QR of a (m x n, row-major): q (m x m, the complete Q) and r
 * (m x n), with LAPACK's dlarfg choice: beta = -sign(alpha) |x|, no
 * reflection where the column is zero below the diagonal. */
static void host_qr(const double *a, int m, int n, double *q, double *r)
{
    double *v = malloc((size_t)(m + 1) * sizeof *v);
    memcpy(r, a, (size_t)(m * n) * sizeof *r);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            q[i * m + j] = i == j;
    for (int k = 0; k < (m < n ? m : n); k++) {
        double s = 0, alpha = r[k * n + k];
        for (int i = k + 1; i < m; i++)
            s += r[i * n + k] * r[i * n + k];
        if (s == 0)
            continue;
        double beta = alpha >= 0 ? -sqrt(alpha * alpha + s) : sqrt(alpha * alpha + s);
        double tau = (beta - alpha) / beta;
        v[k] = 1;
        for (int i = k + 1; i < m; i++)
            v[i] = r[i * n + k] / (alpha - beta);
        for (int j = k; j < n; j++) { /* R := H R */
            double w = 0;
            for (int i = k; i < m; i++)
                w += v[i] * r[i * n + j];
            for (int i = k; i < m; i++)
                r[i * n + j] -= tau * v[i] * w;
        }
        for (int i = 0; i < m; i++) { /* Q := Q H */
            double w = 0;
            for (int l = k; l < m; l++)
                w += q[i * m + l] * v[l];
            for (int l = k; l < m; l++)
                q[i * m + l] -= tau * w * v[l];
        }
        for (int i = k + 1; i < m; i++)
            r[i * n + k] = 0;
    }
    free(v);
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

/* x (n x k) := A^-1 x by Gaussian elimination with partial pivoting (a is
 * n x n and overwritten). */
static void host_solve(double *a, int n, double *x, int k)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(a[i * n + c]) > fabs(a[p * n + c]))
                p = i;
        for (int j = 0; j < n; j++) {
            double t = a[c * n + j];
            a[c * n + j] = a[p * n + j];
            a[p * n + j] = t;
        }
        for (int j = 0; j < k; j++) {
            double t = x[c * k + j];
            x[c * k + j] = x[p * k + j];
            x[p * k + j] = t;
        }
        for (int i = c + 1; i < n; i++) {
            double l = a[i * n + c] / a[c * n + c];
            for (int j = c; j < n; j++)
                a[i * n + j] -= l * a[c * n + j];
            for (int j = 0; j < k; j++)
                x[i * k + j] -= l * x[c * k + j];
        }
    }
    for (int i = n - 1; i >= 0; i--)
        for (int j = 0; j < k; j++) {
            double s = x[i * k + j];
            for (int l = i + 1; l < n; l++)
                s -= a[i * n + l] * x[l * k + j];
            x[i * k + j] = s / a[i * n + i];
        }
}

static double *randoms(size_t n, unsigned seed)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)rand() / RAND_MAX * 2 - 1;
    return v;
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

/* ---- qr ------------------------------------------------------------------------ */

/* One batch of shape [batch, m, n] through every mode against host_qr,
 * with Q^T Q = I and Q R = A checked on the device's own results. */
static void qr_case(clt_device *dev, clt_dtype dt, int batch, int m, int n, unsigned seed)
{
    int k = m < n ? m : n;
    int64_t shape[3] = {batch, m, n};
    double *a = randoms((size_t)(batch * m * n), seed);
    clt_tensor *t = tensor_of(dev, dt, 3, shape, a);
    double *hq = malloc((size_t)(m * m + 1) * sizeof *hq),
           *hr = malloc((size_t)(m * n + 1) * sizeof *hr);
    const char *modes[] = {"reduced", "complete", "r"};
    char what[96];
    for (int md = 0; md < 3; md++) {
        clt_tensor *q = NULL, *r = NULL;
        CHECK(clt_linalg_qr(t, modes[md], &q, &r));
        int qc = md == 1 ? m : k, rr = md == 1 ? m : k;
        if (md == 2) {
            assert_shape(q, 1, (int64_t[]){0});
        } else {
            assert_shape(q, 3, (int64_t[]){batch, m, qc});
        }
        assert_shape(r, 3, (int64_t[]){batch, rr, n});
        double *gq = md == 2 ? NULL : read_as_f64(q), *gr = read_as_f64(r);
        for (int b = 0; b < batch; b++) {
            host_qr(a + (size_t)b * m * n, m, n, hq, hr);
            snprintf(what, sizeof what, "%s %s [%d, %d, %d] R of %d", modes[md],
                     clt_dtype_name(dt), batch, m, n, b);
            near(gr + (size_t)b * rr * n, hr, (size_t)(rr * n), tol_of(dt), what);
            if (gq == NULL)
                continue;
            for (int i = 0; i < m; i++) {
                snprintf(what, sizeof what, "%s %s [%d, %d, %d] Q of %d row %d", modes[md],
                         clt_dtype_name(dt), batch, m, n, b, i);
                double *hrow = malloc((size_t)(qc + 1) * sizeof *hrow);
                for (int j = 0; j < qc; j++)
                    hrow[j] = hq[i * m + j];
                near(gq + ((size_t)b * m + i) * qc, hrow, (size_t)qc, tol_of(dt), what);
                free(hrow);
            }
            /* Q^T Q = I and Q R = A from the device's factors */
            const double *db = gq + (size_t)b * m * qc, *rb = gr + (size_t)b * rr * n;
            for (int i = 0; i < qc; i++)
                for (int j = 0; j < qc; j++) {
                    double s = 0;
                    for (int l = 0; l < m; l++)
                        s += db[l * qc + i] * db[l * qc + j];
                    cr_assert(fabs(s - (i == j)) <= 10 * tol_of(dt), "Q^T Q [%d][%d] = %g", i,
                              j, s);
                }
            double *qr = malloc((size_t)(m * n + 1) * sizeof *qr);
            host_mm(db, rb, qr, m, qc, n);
            snprintf(what, sizeof what, "QR = A, %s [%d, %d]", modes[md], m, n);
            near(qr, a + (size_t)b * m * n, (size_t)(m * n), 10 * tol_of(dt), what);
            free(qr);
        }
        free(gq);
        free(gr);
        clt_tensor_free(q);
        clt_tensor_free(r);
    }
    free(hq);
    free(hr);
    free(a);
    clt_tensor_free(t);
}

/* 70 x 50 float64 is 28 KB, past 16 KiB: the global-memory path. */
Test(linalg_qr, against_host_householder)
{
    clt_device *dev = get_device("cpu");
    const int sizes[][3] = {{1, 1, 1}, {2, 5, 3}, {3, 3, 5}, {1, 4, 4}, {2, 1, 3},
                            {2, 3, 1}, {1, 33, 17}, {1, 70, 50}, {1, 20, 70}};
    for (int dti = 0; dti < 2; dti++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            qr_case(dev, dti ? CLT_FLOAT64 : CLT_FLOAT32, sizes[s][0], sizes[s][1], sizes[s][2],
                    40 + (unsigned)s);
}

/* A column already zero below the diagonal is left alone: its sign stays. */
Test(linalg_qr, triangular_input_keeps_its_signs)
{
    clt_device *dev = get_device("cpu");
    const double a[] = {-2, 1, 3, 0, 4, 1, 0, 0, -5};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, a), *q = NULL, *r = NULL;
    CHECK(clt_linalg_qr(t, NULL, &q, &r));
    double *gq = read_as_f64(q), *gr = read_as_f64(r);
    const double eye[] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    near(gq, eye, 9, 0, "Q");
    near(gr, a, 9, 0, "R");
    free(gq);
    free(gr);
    clt_tensor_free(q);
    clt_tensor_free(r);
    clt_tensor_free(t);
}

Test(linalg_qr, empty_and_refused)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *q = (clt_tensor *)1, *r = (clt_tensor *)1;
    /* [4, 0]: complete Q is the identity, R [4, 0] */
    clt_tensor *e = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 0}, (double[1]){0});
    CHECK(clt_linalg_qr(e, "complete", &q, &r));
    assert_shape(q, 2, (int64_t[]){4, 4});
    assert_shape(r, 2, (int64_t[]){4, 0});
    double *gq = read_as_f64(q);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(gq[i], i % 5 == 0, "identity element %d: %g", i, gq[i]);
    free(gq);
    clt_tensor_free(q);
    clt_tensor_free(r);
    CHECK(clt_linalg_qr(e, "reduced", &q, &r));
    assert_shape(q, 2, (int64_t[]){4, 0});
    assert_shape(r, 2, (int64_t[]){0, 0});
    clt_tensor_free(q);
    clt_tensor_free(r);
    clt_tensor_free(e);

    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 3}, (double[9]){0});
    assert_error(clt_linalg_qr(a, "full", &q, &r), CLT_ERR_INVALID_ARGUMENT,
                 "unrecognized mode 'full'");
    cr_assert_null(q);
    cr_assert_null(r);
    clt_tensor *v = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){3}, (double[3]){0});
    assert_error(clt_linalg_qr(v, NULL, &q, &r), CLT_ERR_INVALID_ARGUMENT,
                 "must have at least 2 dimensions");
    names_only("clt_linalg_qr");
    clt_tensor *i = NULL;
    CHECK(clt_to_dtype(a, CLT_INT64, &i));
    assert_error(clt_linalg_qr(i, NULL, &q, &r), CLT_ERR_DTYPE_UNSUPPORTED,
                 "Expected a floating point tensor");
    cr_assert_null(q);
    cr_assert_null(r);
    clt_tensor_free(a);
    clt_tensor_free(v);
    clt_tensor_free(i);
}

/* ---- lstsq -------------------------------------------------------------------- */

/* X against (A^T A)^-1 A^T B on the host; a vector B and a broadcast batch. */
Test(linalg_qr, lstsq_against_normal_equations)
{
    clt_device *dev = get_device("cpu");
    const int m = 9, n = 4, k = 3;
    for (int dti = 0; dti < 2; dti++) {
        clt_dtype dt = dti ? CLT_FLOAT64 : CLT_FLOAT32;
        double *a = randoms(2 * m * n, 7), *b = randoms(2 * m * k, 8);
        clt_tensor *ta = tensor_of(dev, dt, 3, (int64_t[]){2, m, n}, a);
        clt_tensor *tb = tensor_of(dev, dt, 3, (int64_t[]){2, m, k}, b);
        clt_tensor *x = NULL, *xv = NULL, *bv = NULL;
        CHECK(clt_linalg_lstsq(ta, tb, &x));
        assert_shape(x, 3, (int64_t[]){2, n, k});
        double *gx = read_as_f64(x);
        CHECK(clt_narrow(tb, 2, 0, 1, &bv));
        clt_tensor *bvs = NULL;
        CHECK(clt_squeeze(bv, 2, &bvs));
        CHECK(clt_linalg_lstsq(ta, bvs, &xv));
        assert_shape(xv, 2, (int64_t[]){2, n});
        double *gv = read_as_f64(xv);
        for (int bt = 0; bt < 2; bt++) {
            const double *ab = a + bt * m * n, *bb = b + bt * m * k;
            double ata[16], atb[12];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    ata[i * n + j] = 0;
                    for (int l = 0; l < m; l++)
                        ata[i * n + j] += ab[l * n + i] * ab[l * n + j];
                }
                for (int j = 0; j < k; j++) {
                    atb[i * k + j] = 0;
                    for (int l = 0; l < m; l++)
                        atb[i * k + j] += ab[l * n + i] * bb[l * k + j];
                }
            }
            host_solve(ata, n, atb, k);
            double tol = 20 * tol_of(dt);
            near(gx + bt * n * k, atb, (size_t)(n * k), tol, "lstsq");
            for (int i = 0; i < n; i++)
                cr_assert(close_enough(gv[bt * n + i], atb[i * k], tol, tol),
                          "vector lstsq %d %d: %g, want %g", bt, i, gv[bt * n + i], atb[i * k]);
        }
        free(gx);
        free(gv);
        free(a);
        free(b);
        clt_tensor_free(ta);
        clt_tensor_free(tb);
        clt_tensor_free(x);
        clt_tensor_free(xv);
        clt_tensor_free(bv);
        clt_tensor_free(bvs);
    }
}

Test(linalg_qr, lstsq_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *wide =
        tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, (double[6]){1, 2, 3, 4, 5, 6});
    clt_tensor *b = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 1}, (double[2]){1, 2});
    clt_tensor *x = (clt_tensor *)1;
    /* wide: the minimum-norm solution A^T (A A^T)^-1 b = (-1, 2, 5) / 18 */
    CHECK(clt_linalg_lstsq(wide, b, &x));
    double *gx = read_as_f64(x);
    near(gx, (double[3]){-1.0 / 18, 2.0 / 18, 5.0 / 18}, 3, 1e-5, "wide lstsq");
    free(gx);
    clt_tensor_free(x);
    /* rank-deficient, a zero column: its component 0 */
    clt_tensor *rd = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, (double[4]){1, 0, 2, 0});
    CHECK(clt_linalg_lstsq(rd, b, &x));
    gx = read_as_f64(x);
    near(gx, (double[2]){1, 0}, 2, 1e-5, "rank-deficient lstsq");
    free(gx);
    clt_tensor_free(x);
    x = (clt_tensor *)1;
    clt_tensor *b3 = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 1}, (double[3]){1, 2, 3});
    clt_tensor *sq = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, (double[4]){1, 0, 0, 1});
    assert_error(clt_linalg_lstsq(sq, b3, &x), CLT_ERR_SHAPE_MISMATCH, "other.size(-2)");
    clt_tensor *b64 = NULL;
    CHECK(clt_to_dtype(b, CLT_FLOAT64, &b64));
    assert_error(clt_linalg_lstsq(sq, b64, &x), CLT_ERR_DTYPE_MISMATCH, "same dtype");
    cr_assert_null(x);
    clt_tensor_free(wide);
    clt_tensor_free(b);
    clt_tensor_free(rd);
    clt_tensor_free(b3);
    clt_tensor_free(sq);
    clt_tensor_free(b64);
}

/* ---- norms ------------------------------------------------------------------------ */

/* x [3, 4, 5]: the norms over dims {0, 2} against host loops, keepdim's
 * shape, and matrix_norm's orders over the last two dims. */
Test(linalg_qr, norms_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    double *x = randoms(60, 3);
    x[7] = 0;
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){3, 4, 5}, x);
    const double ords[] = {2, 1, 3, 0.5, INFINITY, -INFINITY, 0};
    for (size_t o = 0; o < sizeof ords / sizeof *ords; o++) {
        double p = ords[o];
        clt_tensor *y = NULL, *yk = NULL;
        CHECK(clt_linalg_vector_norm(t, p, (int[]){2, 0}, 2, 0, &y));
        CHECK(clt_linalg_vector_norm(t, p, (int[]){0, -1}, 2, 1, &yk));
        assert_shape(y, 1, (int64_t[]){4});
        assert_shape(yk, 3, (int64_t[]){1, 4, 1});
        double *g = read_as_f64(y), *gk = read_as_f64(yk);
        for (int j = 0; j < 4; j++) {
            double s = isinf(p) && p > 0 ? 0 : isinf(p) ? INFINITY : 0;
            for (int i = 0; i < 3; i++)
                for (int l = 0; l < 5; l++) {
                    double v = fabs(x[(i * 4 + j) * 5 + l]);
                    if (isinf(p))
                        s = p > 0 ? fmax(s, v) : fmin(s, v);
                    else if (p == 0)
                        s += v != 0;
                    else
                        s += pow(v, p);
                }
            double want = isinf(p) || p == 0 ? s : pow(s, 1 / p);
            cr_assert(fabs(g[j] - want) <= 1e-12 * (1 + want),
                      "ord %g column %d: %.15g, want %.15g", p, j, g[j], want);
            cr_assert_eq(gk[j], g[j]);
        }
        free(g);
        free(gk);
        clt_tensor_free(y);
        clt_tensor_free(yk);
    }
    /* every element (ndims 0) */
    clt_tensor *all = NULL;
    CHECK(clt_linalg_vector_norm(t, 2, NULL, 0, 0, &all));
    double s = 0, got;
    for (int i = 0; i < 60; i++)
        s += x[i] * x[i];
    CHECK(clt_tensor_item(all, &got));
    cr_assert(fabs(got - sqrt(s)) <= 1e-12 * sqrt(s));
    clt_tensor_free(all);
    /* matrix norms of each [4, 5] matrix */
    const char *mords[] = {"fro", "1", "-1", "inf", "-inf"};
    for (size_t o = 0; o < 5; o++) {
        clt_tensor *y = NULL;
        CHECK(clt_linalg_matrix_norm(t, mords[o], NULL, 0, &y));
        assert_shape(y, 1, (int64_t[]){3});
        double *g = read_as_f64(y);
        for (int b = 0; b < 3; b++) {
            const double *mb = x + b * 20;
            double want = 0;
            if (o == 0) {
                for (int e = 0; e < 20; e++)
                    want += mb[e] * mb[e];
                want = sqrt(want);
            } else {
                bool cols = o <= 2, largest = o % 2 == 1;
                int outer = cols ? 5 : 4, inner = cols ? 4 : 5;
                want = largest ? 0 : INFINITY;
                for (int u = 0; u < outer; u++) {
                    double sum = 0;
                    for (int v = 0; v < inner; v++)
                        sum += fabs(cols ? mb[v * 5 + u] : mb[u * 5 + v]);
                    want = largest ? fmax(want, sum) : fmin(want, sum);
                }
            }
            cr_assert(fabs(g[b] - want) <= 1e-12 * (1 + want), "%s of %d: %.15g, want %.15g",
                      mords[o], b, g[b], want);
        }
        free(g);
        clt_tensor_free(y);
    }
    /* nuc, 2 and -2 from the singular values: square roots of the
     * eigenvalues of M M^T (host cyclic Jacobi), over dims (-2, -1) and,
     * with keepdim, over (0, 2) */
    const char *svd[] = {"nuc", "2", "-2"};
    for (int o = 0; o < 3; o++) {
        for (int over02 = 0; over02 < 2; over02++) {
            clt_tensor *y = NULL;
            CHECK(clt_linalg_matrix_norm(t, svd[o], over02 ? (int[]){0, 2} : NULL, over02, &y));
            int nb = over02 ? 4 : 3, rows = over02 ? 3 : 4;
            cr_assert_eq(clt_tensor_ndim(y), over02 ? 3 : 1);
            if (over02)
                cr_assert(clt_tensor_shape(y)[0] == 1 && clt_tensor_shape(y)[1] == 4 &&
                          clt_tensor_shape(y)[2] == 1);
            double *g = read_as_f64(y);
            for (int b = 0; b < nb; b++) {
                double gram[16], ev[4];
                for (int i = 0; i < rows; i++)
                    for (int k = 0; k < rows; k++) {
                        double d = 0;
                        for (int l = 0; l < 5; l++)
                            d += over02 ? x[(i * 4 + b) * 5 + l] * x[(k * 4 + b) * 5 + l]
                                        : x[(b * 4 + i) * 5 + l] * x[(b * 4 + k) * 5 + l];
                        gram[i * rows + k] = d;
                    }
                host_eigvals(gram, rows, ev);
                double want = o == 1 ? 0 : o == 2 ? INFINITY : 0;
                for (int i = 0; i < rows; i++) {
                    double sv = sqrt(fmax(ev[i], 0));
                    want = o == 0 ? want + sv : o == 1 ? fmax(want, sv) : fmin(want, sv);
                }
                cr_assert(fabs(g[b] - want) <= 1e-10 * (1 + want), "%s of %d: %.15g, want %.15g",
                          svd[o], b, g[b], want);
            }
            free(g);
            clt_tensor_free(y);
        }
    }
    clt_tensor *y = (clt_tensor *)1;
    assert_error(clt_linalg_matrix_norm(t, "3", NULL, 0, &y), CLT_ERR_INVALID_ARGUMENT,
                 "Order 3 not supported");
    assert_error(clt_linalg_matrix_norm(t, "x", NULL, 0, &y), CLT_ERR_INVALID_ARGUMENT,
                 "neither");
    assert_error(clt_linalg_vector_norm(t, 2, (int[]){1, -2}, 2, 0, &y),
                 CLT_ERR_INVALID_ARGUMENT, "multiple times");
    assert_error(clt_linalg_norm(t, "2", NULL, 0, 0, &y), CLT_ERR_INVALID_ARGUMENT,
                 "must be 1D or 2D");
    names_only("clt_linalg_norm");
    cr_assert_null(y);
    free(x);
    clt_tensor_free(t);
}

/* ---- matrix_power, multi_dot ---------------------------------------------------- */

Test(linalg_qr, matrix_power_and_multi_dot_against_host)
{
    clt_device *dev = get_device("cpu");
    const int n = 4;
    double *a = randoms(n * n, 11), p[16], t[16], inv[16], e[16];
    for (int i = 0; i < n; i++)
        a[i * n + i] += 2;
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){n, n}, a);
    for (int i = 0; i < 16; i++) {
        e[i] = i % 5 == 0;
        inv[i] = e[i];
    }
    double lu[16];
    memcpy(lu, a, sizeof lu);
    host_solve(lu, n, inv, n);
    for (int k = -3; k <= 7; k++) {
        const double *base = k < 0 ? inv : a;
        memcpy(p, e, sizeof p);
        for (int r = 0; r < abs(k); r++) {
            host_mm(p, base, t, n, n, n);
            memcpy(p, t, sizeof p);
        }
        clt_tensor *y = NULL;
        CHECK(clt_linalg_matrix_power(ta, k, &y));
        double *g = read_as_f64(y);
        char what[32];
        snprintf(what, sizeof what, "matrix_power %d", k);
        near(g, p, 16, 1e-10, what);
        free(g);
        clt_tensor_free(y);
    }
    /* [3] x [3, 5] x [5, 2] x [2]: a 0-dim result */
    double *v0 = randoms(3, 1), *m1 = randoms(15, 2), *m2 = randoms(10, 3), *v3 = randoms(2, 4);
    clt_tensor *ts[4] = {tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, v0),
                         tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 5}, m1),
                         tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){5, 2}, m2),
                         tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){2}, v3)};
    double r1[5], r2[2], want = 0, got;
    host_mm(v0, m1, r1, 1, 3, 5);
    host_mm(r1, m2, r2, 1, 5, 2);
    for (int i = 0; i < 2; i++)
        want += r2[i] * v3[i];
    clt_tensor *y = NULL;
    CHECK(clt_linalg_multi_dot((const clt_tensor *const *)ts, 4, &y));
    cr_assert_eq(clt_tensor_ndim(y), 0);
    CHECK(clt_tensor_item(y, &got));
    cr_assert(fabs(got - want) <= 1e-12 * (1 + fabs(want)), "multi_dot %.15g, want %.15g", got,
              want);
    clt_tensor_free(y);
    y = (clt_tensor *)1;
    assert_error(clt_linalg_multi_dot((const clt_tensor *const *)ts + 1, 1, &y),
                 CLT_ERR_INVALID_ARGUMENT, "at least 2 tensors");
    assert_error(clt_linalg_multi_dot((const clt_tensor *const[]){ts[1], ts[1]}, 2, &y),
                 CLT_ERR_SHAPE_MISMATCH, "cannot be multiplied");
    cr_assert_null(y);
    assert_error(clt_linalg_matrix_power(ts[1], 2, &y), CLT_ERR_INVALID_ARGUMENT,
                 "square matrices");
    for (int i = 0; i < 4; i++)
        clt_tensor_free(ts[i]);
    free(v0);
    free(m1);
    free(m2);
    free(v3);
    free(a);
    clt_tensor_free(ta);
}

/* ---- gradients ------------------------------------------------------------------------ */

/* qr in a mode, handing out Q (which 0), R (1), or both flattened and
 * joined (2: both nodes' parts of the gradient). */
typedef struct qr_ctx {
    const char *mode;
    int which;
} qr_ctx;

static clt_status f_qr(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const qr_ctx *c = ctx;
    clt_tensor *q = NULL, *r = NULL;
    clt_status st = clt_linalg_qr(in[0], c->mode, &q, &r);
    if (st != CLT_OK)
        return st;
    if (c->which == 2) { /* both: Q flattened and R flattened, joined */
        clt_tensor *fq = NULL, *fr = NULL;
        st = clt_flatten(q, 0, -1, &fq);
        if (st == CLT_OK)
            st = clt_flatten(r, 0, -1, &fr);
        if (st == CLT_OK)
            st = clt_cat((const clt_tensor *const[]){fq, fr}, 2, 0, out);
        clt_tensor_free(fq);
        clt_tensor_free(fr);
    } else {
        *out = clt_tensor_retain(c->which ? r : q);
    }
    clt_tensor_free(q);
    clt_tensor_free(r);
    return st;
}

static clt_status f_lstsq(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_lstsq(in[0], in[1], out);
}

static clt_status f_vnorm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_vector_norm(in[0], *(const double *)ctx, (int[]){0, 2}, 2, 1, out);
}

static clt_status f_mnorm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_matrix_norm(in[0], ctx, NULL, 0, out);
}

static clt_status f_power(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_matrix_power(in[0], *(const int *)ctx, out);
}

static clt_status f_multi_dot(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_multi_dot((const clt_tensor *const *)in, 4, out);
}

Test(linalg_qr, gradients)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(64, 21), *b = randoms(64, 22);
    for (int which = 0; which < 3; which++) {
        qr_ctx red = {"reduced", which}, com = {"complete", which};
        gc_in tall = {3, {2, 5, 3}, a, 1}, wide = {2, {3, 5}, a, 1}, sq = {2, {4, 4}, a, 1};
        gradcheck(dev, f_qr, &red, 1, &tall);
        gradcheck(dev, f_qr, &red, 1, &wide);
        gradcheck(dev, f_qr, &com, 1, &wide);
        gradcheck(dev, f_qr, &com, 1, &sq);
    }
    gc_in ls[2] = {{3, {2, 6, 3}, a, 1}, {3, {2, 6, 2}, b, 1}};
    gradcheck(dev, f_lstsq, NULL, 2, ls);
    gc_in lv[2] = {{2, {6, 3}, a, 1}, {1, {6}, b, 1}};
    gradcheck(dev, f_lstsq, NULL, 2, lv);
    const double ords[] = {2, 1, 3, INFINITY};
    for (int o = 0; o < 4; o++) {
        gc_in x = {3, {3, 2, 4}, a, 1};
        gradcheck(dev, f_vnorm, &ords[o], 1, &x);
    }
    const char *mords[] = {"fro", "1", "-inf"};
    for (int o = 0; o < 3; o++) {
        gc_in x = {3, {2, 3, 4}, a, 1};
        gradcheck(dev, f_mnorm, mords[o], 1, &x);
    }
    double c[9];
    for (int i = 0; i < 9; i++)
        c[i] = a[i] / 3 + (i % 4 == 0 ? 1.5 : 0);
    const int powers[] = {-2, 2, 3, 6};
    for (int k = 0; k < 4; k++) {
        gc_in x = {2, {3, 3}, c, 1};
        gradcheck(dev, f_power, &powers[k], 1, &x);
    }
    gc_in md[4] = {{1, {3}, a, 1},
                   {2, {3, 4}, b, 1},
                   {2, {4, 2}, a + 10, 1},
                   {2, {2, 5}, b + 20, 1}};
    gradcheck(dev, f_multi_dot, NULL, 4, md);
    free(a);
    free(b);
}

/* torch's refusals happen in the backward pass. */
Test(linalg_qr, backward_refusals_and_names)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(15, 5);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, a);
    CHECK(clt_set_requires_grad(t, 1));
    clt_tensor *q = NULL, *r = NULL, *s = NULL;
    /* mode r: R's node refuses; complete with 5 > 3: Q's */
    const char *modes[] = {"r", "complete"}, *why[] = {"mode='r'", "nrows > ncols"};
    for (int k = 0; k < 2; k++) {
        CHECK(clt_linalg_qr(t, modes[k], &q, &r));
        clt_tensor *y = k ? q : r;
        cr_assert_str_eq(clt_grad_fn_name(y), "LinalgQrBackward0");
        CHECK(clt_sum(y, &s));
        assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT, why[k]);
        clt_tensor_free(q);
        clt_tensor_free(r);
        clt_tensor_free(s);
    }
    CHECK(clt_linalg_matrix_norm(t, "1", NULL, 0, &s));
    cr_assert_str_eq(clt_grad_fn_name(s), "AmaxBackward0");
    clt_tensor_free(s);
    CHECK(clt_linalg_vector_norm(t, 2, NULL, 0, 0, &s));
    cr_assert_str_eq(clt_grad_fn_name(s), "LinalgVectorNormBackward0");
    clt_tensor_free(s);
    clt_tensor_free(t);
    free(a);
}

/* ---- vecdot, diag_embed, block_diag ------------------------------------------------- */

Test(linalg_qr, vecdot_diag_embed_block_diag_against_host)
{
    clt_device *dev = get_device("cpu");
    double *x = randoms(12, 31), *y = randoms(4, 32);
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 4}, x);
    clt_tensor *ty = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){4}, y), *o = NULL;
    CHECK(clt_linalg_vecdot(tx, ty, -1, &o));
    assert_shape(o, 1, (int64_t[]){3});
    double *g = read_as_f64(o), want[3] = {0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            want[i] += x[i * 4 + j] * y[j];
    near(g, want, 3, 1e-14, "vecdot");
    free(g);
    clt_tensor_free(o);
    /* diag_embed([3, 4], offset 1, dims 0 and 2): [5, 3, 5] with
     * out[j][i][j + 1] = x[i][j] */
    CHECK(clt_diag_embed(tx, 1, 0, 2, &o));
    assert_shape(o, 3, (int64_t[]){5, 3, 5});
    g = read_as_f64(o);
    for (int a = 0; a < 5; a++)
        for (int i = 0; i < 3; i++)
            for (int b = 0; b < 5; b++) {
                double w = b == a + 1 && a < 4 ? x[i * 4 + a] : 0;
                cr_assert_eq(g[(a * 3 + i) * 5 + b], w, "diag_embed [%d][%d][%d]", a, i, b);
            }
    free(g);
    clt_tensor_free(o);
    /* block_diag([3, 4], [4], 0-dim): [5, 9] */
    clt_tensor *s = tensor_of(dev, CLT_FLOAT64, 0, NULL, (double[1]){7});
    CHECK(clt_block_diag((const clt_tensor *const[]){tx, ty, s}, 3, &o));
    assert_shape(o, 2, (int64_t[]){5, 9});
    g = read_as_f64(o);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 9; j++) {
            double w = i < 3 && j < 4 ? x[i * 4 + j] : i == 3 && j >= 4 && j < 8 ? y[j - 4]
                                                     : i == 4 && j == 8          ? 7
                                                                                 : 0;
            cr_assert_eq(g[i * 9 + j], w, "block_diag [%d][%d]", i, j);
        }
    free(g);
    clt_tensor_free(o);
    o = (clt_tensor *)1;
    assert_error(clt_diag_embed(tx, 0, 1, -2, &o), CLT_ERR_INVALID_ARGUMENT, "identical");
    assert_error(clt_block_diag((const clt_tensor *const[]){tx}, 0, &o), CLT_ERR_INVALID_ARGUMENT,
                 "at least one");
    names_only("clt_block_diag");
    cr_assert_null(o);
    clt_tensor_free(tx);
    clt_tensor_free(ty);
    clt_tensor_free(s);
    free(x);
    free(y);
}

static clt_status f_vecdot(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_vecdot(in[0], in[1], 0, out);
}

static clt_status f_diag_embed(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_diag_embed(in[0], -1, 2, 0, out);
}

static clt_status f_block_diag(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_block_diag((const clt_tensor *const *)in, 3, out);
}

Test(linalg_qr, gradients_of_vecdot_diag_embed_block_diag)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(24, 41), *b = randoms(24, 42);
    gc_in v[2] = {{2, {3, 4}, a, 1}, {2, {3, 1}, b, 1}};
    gradcheck(dev, f_vecdot, NULL, 2, v);
    gc_in d = {2, {2, 3}, a, 1};
    gradcheck(dev, f_diag_embed, NULL, 1, &d);
    gc_in bd[3] = {{2, {2, 3}, a, 1}, {0, {0}, b, 1}, {1, {4}, b + 5, 1}};
    gradcheck(dev, f_block_diag, NULL, 3, bd);
    free(a);
    free(b);
}

/* ---- householder_product ------------------------------------------------------------- */

/* The first n columns of H_0 ... H_{k-1} on the host. */
static void host_householder(const double *a, const double *tau, int m, int n, int k, double *q)
{
    double *full = calloc((size_t)(m * m), sizeof *full), *v = malloc((size_t)m * sizeof *v);
    for (int i = 0; i < m; i++)
        full[i * m + i] = 1;
    for (int j = 0; j < k; j++) {
        for (int i = 0; i < m; i++)
            v[i] = i < j ? 0 : i == j ? 1 : a[i * n + j];
        for (int r = 0; r < m; r++) { /* Q := Q (I - tau v v^T) */
            double w = 0;
            for (int l = 0; l < m; l++)
                w += full[r * m + l] * v[l];
            for (int l = 0; l < m; l++)
                full[r * m + l] -= tau[j] * w * v[l];
        }
    }
    for (int r = 0; r < m; r++)
        for (int c = 0; c < n; c++)
            q[r * n + c] = full[r * m + c];
    free(full);
    free(v);
}

Test(linalg_qr, householder_product_against_host)
{
    clt_device *dev = get_device("cpu");
    const int m = 5, n = 3, k = 2;
    double *a = randoms(2 * m * n, 51), *tau = randoms(2 * k, 52), q[15];
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){2, m, n}, a);
    clt_tensor *tt = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, k}, tau), *o = NULL;
    CHECK(clt_linalg_householder_product(ta, tt, &o));
    assert_shape(o, 3, (int64_t[]){2, m, n});
    double *g = read_as_f64(o);
    for (int b = 0; b < 2; b++) {
        host_householder(a + b * m * n, tau + b * k, m, n, k, q);
        near(g + b * m * n, q, (size_t)(m * n), 1e-13, "householder_product");
    }
    free(g);
    clt_tensor_free(o);
    o = (clt_tensor *)1;
    assert_error(clt_linalg_householder_product(tt, ta, &o), CLT_ERR_INVALID_ARGUMENT, NULL);
    names_only("clt_linalg_householder_product");
    cr_assert_null(o);
    clt_tensor_free(ta);
    clt_tensor_free(tt);
    free(a);
    free(tau);
}

static clt_status f_householder(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_householder_product(in[0], in[1], out);
}

Test(linalg_qr, householder_product_gradients)
{
    clt_device *dev = get_device("cpu");
    double *a = randoms(24, 61), *t = randoms(4, 62);
    gc_in in[2] = {{3, {2, 4, 3}, a, 1}, {2, {2, 2}, t, 1}};
    gradcheck(dev, f_householder, NULL, 2, in);
    free(a);
    free(t);
}

/* matrix_power's powers are handles of their own: in a scope, its result
 * and its input are both freed when the scope ends (its result used to
 * leave the scope, a retained handle having been freed in its place). */
Test(linalg_qr, matrix_power_in_a_scope_leaves_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    for (int64_t n = 1; n <= 5; n++) {
        clt_scope_begin();
        const double v[4] = {1, 2, 3, 4};
        clt_tensor *a = NULL, *p = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, v, &a));
        CHECK(clt_set_requires_grad(a, 1));
        CHECK(clt_linalg_matrix_power(a, n, &p));
        /* [[1, 2], [3, 4]]^n by repeated products on the host */
        double want[4] = {1, 0, 0, 1}, got[4];
        for (int64_t k = 0; k < n; k++) {
            double w[4] = {want[0] * 1 + want[1] * 3, want[0] * 2 + want[1] * 4,
                           want[2] * 1 + want[3] * 3, want[2] * 2 + want[3] * 4};
            memcpy(want, w, sizeof w);
        }
        CHECK(clt_tensor_read(p, got, sizeof got));
        for (int k = 0; k < 4; k++)
            cr_assert_float_eq(got[k], want[k], 1e-9, "n %lld element %d", (long long)n, k);
        clt_scope_end();
    }
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%llu bytes left in tensors",
                 (unsigned long long)(after.requested - before.requested));
}

/* multi_dot's operands are handles of its own: in a scope, its inputs and
 * result are all freed when the scope ends (retained inputs freed with
 * clt_tensor_free took the scope's references, and the inputs stayed). */
Test(linalg_qr, multi_dot_in_a_scope_leaves_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    for (int grad = 0; grad < 2; grad++) {
        clt_scope_begin();
        const double a[4] = {1, 2, 3, 4}, b[2] = {5, -1}, c[2] = {0.5, 2};
        clt_tensor *ta = NULL, *tb = NULL, *tc = NULL, *r = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){2}, b, &tb));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, a, &ta));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){2}, c, &tc));
        CHECK(clt_set_requires_grad(ta, grad));
        const clt_tensor *ts[3] = {tb, ta, tc};
        CHECK(clt_linalg_multi_dot(ts, 3, &r));
        /* b^T A c on the host */
        double want = 0, got = 0;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                want += b[i] * a[i * 2 + j] * c[j];
        CHECK(clt_tensor_read(r, &got, sizeof got));
        cr_assert_float_eq(got, want, 1e-12, "grad %d: %g, want %g", grad, got, want);
        clt_scope_end();
    }
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%llu bytes left in tensors",
                 (unsigned long long)(after.requested - before.requested));
}
