/* test_linalg.c: clt_linalg_inv, _solve, _det, _slogdet and _cholesky
 * against closed forms and a float64 host LU / Cholesky written here, in
 * batched and broadcast shapes, both dtypes and both factorisation paths
 * (local memory, global memory); the refusals and their messages; and
 * their gradients against finite differences. */
#include "gradcheck.h"

/* ---- host references (float64) ------------------------------------------ */

/* LU with partial pivoting of a (n x n, row-major) in place; piv[k] the row
 * swapped with k; returns the sign of the permutation. */
static int host_lu(double *a, int *piv, int n)
{
    int sign = 1;
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
                p = i;
        piv[k] = p;
        if (p != k) {
            sign = -sign;
            for (int j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
        }
        for (int i = k + 1; i < n; i++) {
            a[i * n + k] /= a[k * n + k];
            for (int j = k + 1; j < n; j++)
                a[i * n + j] -= a[i * n + k] * a[k * n + j];
        }
    }
    return sign;
}

/* x (n x k) = A^-1 b from host_lu's factors. */
static void host_solve(const double *lu, const int *piv, int n, double *x, int k)
{
    for (int i = 0; i < n; i++)
        if (piv[i] != i)
            for (int c = 0; c < k; c++) {
                double t = x[i * k + c];
                x[i * k + c] = x[piv[i] * k + c];
                x[piv[i] * k + c] = t;
            }
    for (int c = 0; c < k; c++) {
        for (int i = 0; i < n; i++)
            for (int r = 0; r < i; r++)
                x[i * k + c] -= lu[i * n + r] * x[r * k + c];
        for (int i = n - 1; i >= 0; i--) {
            for (int r = i + 1; r < n; r++)
                x[i * k + c] -= lu[i * n + r] * x[r * k + c];
            x[i * k + c] /= lu[i * n + i];
        }
    }
}

static double host_det(const double *a, int n)
{
    double *lu = malloc((size_t)(n * n + 1) * sizeof *lu);
    int *piv = malloc((size_t)(n + 1) * sizeof *piv);
    memcpy(lu, a, (size_t)(n * n) * sizeof *lu);
    double d = host_lu(lu, piv, n);
    for (int i = 0; i < n; i++)
        d *= lu[i * n + i];
    free(lu);
    free(piv);
    return d;
}

/* x (n x k) := A^-1 x. */
static void host_solve_a(const double *a, int n, double *x, int k)
{
    double *lu = malloc((size_t)(n * n + 1) * sizeof *lu);
    int *piv = malloc((size_t)(n + 1) * sizeof *piv);
    memcpy(lu, a, (size_t)(n * n) * sizeof *lu);
    host_lu(lu, piv, n);
    host_solve(lu, piv, n, x, k);
    free(lu);
    free(piv);
}

/* The lower Cholesky factor of a's lower triangle. */
static void host_cholesky(const double *a, double *l, int n)
{
    memset(l, 0, (size_t)(n * n) * sizeof *l);
    for (int j = 0; j < n; j++) {
        double s = a[j * n + j];
        for (int r = 0; r < j; r++)
            s -= l[j * n + r] * l[j * n + r];
        l[j * n + j] = sqrt(s);
        for (int i = j + 1; i < n; i++) {
            double t = a[i * n + j];
            for (int r = 0; r < j; r++)
                t -= l[i * n + r] * l[j * n + r];
            l[i * n + j] = t / l[j * n + j];
        }
    }
}

/* batch well-conditioned matrices: a random part scaled by 1/sqrt(n) plus
 * 1.5 I. */
static double *wellcond(int batch, int n, unsigned seed)
{
    double *a = malloc((size_t)(batch * n * n + 1) * sizeof *a);
    srand(seed);
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                a[(b * n + i) * n + j] = ((double)rand() / RAND_MAX - 0.5) * 2 / sqrt(n) +
                                         (i == j ? 1.5 : 0);
    return a;
}

/* ---- device helpers --------------------------------------------------------- */

static clt_tensor *up(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                      const double *v)
{
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    clt_tensor *t = NULL;
    if (dt == CLT_FLOAT64) {
        CHECK(clt_tensor_from_host(dev, dt, nd, shape, v, &t));
    } else {
        float *f = malloc((n ? n : 1) * sizeof *f);
        for (size_t i = 0; i < n; i++)
            f[i] = (float)v[i];
        CHECK(clt_tensor_from_host(dev, dt, nd, shape, f, &t));
        free(f);
    }
    return t;
}

/* t's values as doubles (any layout: a contiguous float64 copy). */
static double *down(const clt_tensor *t)
{
    clt_tensor *c = NULL;
    CHECK(clt_to_dtype(t, CLT_FLOAT64, &c));
    clt_tensor *d = NULL;
    CHECK(clt_contiguous(c, &d));
    size_t n = (size_t)clt_tensor_numel(d);
    double *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(d, h, n * sizeof *h));
    clt_tensor_free(c);
    clt_tensor_free(d);
    return h;
}

/* The n x n identity. */
static clt_status eye(clt_device *dev, clt_dtype dt, int n, clt_tensor **out)
{
    double *h = calloc((size_t)(n * n + 1), sizeof *h);
    for (int i = 0; i < n; i++)
        h[i * n + i] = 1;
    int64_t shape[2] = {n, n};
    *out = up(dev, dt, 2, shape, h);
    free(h);
    return CLT_OK;
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
    return dt == CLT_FLOAT32 ? 2e-5 : 1e-12;
}

/* ---- closed forms -------------------------------------------------------------- */

/* T = tridiag(-1, 2, -1) of size n: det n + 1, (T^-1)[i][j] = min(i, j)
 * (n + 1 - max(i, j)) / (n + 1) (1-based), and its Cholesky factor has
 * L[i][i] = sqrt((i + 2) / (i + 1)), L[i + 1][i] = -sqrt((i + 1) / (i + 2))
 * (0-based).  n = 70 in float64 passes 16 KiB: the global-memory path. */
Test(linalg, tridiagonal_closed_forms)
{
    clt_device *dev = get_device("cpu");
    const int sizes[] = {1, 5, 40, 70};
    for (int dti = 0; dti < 2; dti++) {
        clt_dtype dt = dti ? CLT_FLOAT64 : CLT_FLOAT32;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            int n = sizes[s];
            double *a = calloc((size_t)(n * n), sizeof *a), *inv = malloc((size_t)(n * n) * 8),
                   *l = calloc((size_t)(n * n), sizeof *l);
            for (int i = 0; i < n; i++) {
                a[i * n + i] = 2;
                if (i + 1 < n)
                    a[i * n + i + 1] = a[(i + 1) * n + i] = -1;
                l[i * n + i] = sqrt((i + 2.0) / (i + 1.0));
                if (i + 1 < n)
                    l[(i + 1) * n + i] = -sqrt((i + 1.0) / (i + 2.0));
                for (int j = 0; j < n; j++) {
                    int lo = i < j ? i : j, hi = i < j ? j : i;
                    inv[i * n + j] = (double)(lo + 1) * (n - hi) / (n + 1);
                }
            }
            int64_t shape[2] = {n, n};
            clt_tensor *t = up(dev, dt, 2, shape, a), *r = NULL, *sg = NULL, *la = NULL;
            /* the inverse's entries grow like n / 4: a relative tolerance */
            double tol = tol_of(dt) * (dt == CLT_FLOAT32 ? n : 1);
            CHECK(clt_linalg_inv(t, &r));
            double *h = down(r);
            near(h, inv, (size_t)(n * n), tol, "inv");
            free(h);
            clt_tensor_free(r);
            CHECK(clt_linalg_det(t, &r));
            h = down(r);
            double want = n + 1.0;
            near(h, &want, 1, tol, "det");
            free(h);
            clt_tensor_free(r);
            CHECK(clt_linalg_slogdet(t, &sg, &la));
            double *hs = down(sg), *hl = down(la), one = 1, lw = log(n + 1.0);
            near(hs, &one, 1, 0, "slogdet sign");
            near(hl, &lw, 1, tol, "slogdet log");
            free(hs);
            free(hl);
            clt_tensor_free(sg);
            clt_tensor_free(la);
            CHECK(clt_linalg_cholesky(t, 0, &r));
            h = down(r);
            near(h, l, (size_t)(n * n), tol_of(dt), "cholesky");
            free(h);
            clt_tensor_free(r);
            CHECK(clt_linalg_cholesky(t, 1, &r)); /* U = L^T */
            h = down(r);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    cr_assert(fabs(h[i * n + j] - l[j * n + i]) <= tol_of(dt),
                              "upper [%d, %d]: %g vs %g", i, j, h[i * n + j], l[j * n + i]);
            free(h);
            clt_tensor_free(r);
            clt_tensor_free(t);
            free(a);
            free(inv);
            free(l);
        }
    }
}

/* 2 x 2: inv = [[d, -b], [-c, a]] / (ad - bc), with a row swap. */
Test(linalg, two_by_two)
{
    clt_device *dev = get_device("cpu");
    double a[4] = {1, 2, 3, 4}, want[4] = {-2, 1, 1.5, -0.5}, det = -2;
    int64_t shape[2] = {2, 2};
    clt_tensor *t = up(dev, CLT_FLOAT64, 2, shape, a), *r = NULL, *sg = NULL, *la = NULL;
    CHECK(clt_linalg_inv(t, &r));
    double *h = down(r);
    near(h, want, 4, 1e-15, "inv");
    free(h);
    clt_tensor_free(r);
    CHECK(clt_linalg_det(t, &r));
    h = down(r);
    near(h, &det, 1, 1e-15, "det");
    free(h);
    clt_tensor_free(r);
    CHECK(clt_linalg_slogdet(t, &sg, &la));
    double *hs = down(sg), *hl = down(la), m1 = -1, l2 = log(2.0);
    near(hs, &m1, 1, 0, "sign");
    near(hl, &l2, 1, 1e-15, "logabsdet");
    free(hs);
    free(hl);
    clt_tensor_free(sg);
    clt_tensor_free(la);
    clt_tensor_free(t);
}

/* ---- batches against the host LU --------------------------------------------- */

Test(linalg, batched_against_host_lu)
{
    clt_device *dev = get_device("cpu");
    const int n = 6, B = 6;
    double *a = wellcond(B, n, 11);
    int64_t shape[4] = {3, 2, n, n};
    for (int dti = 0; dti < 2; dti++) {
        clt_dtype dt = dti ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *t = up(dev, dt, 4, shape, a), *inv = NULL, *det = NULL, *sg = NULL,
                   *la = NULL;
        CHECK(clt_linalg_inv(t, &inv));
        CHECK(clt_linalg_det(t, &det));
        CHECK(clt_linalg_slogdet(t, &sg, &la));
        cr_assert_eq(clt_tensor_ndim(det), 2);
        double *hi = down(inv), *hd = down(det), *hs = down(sg), *hl = down(la);
        for (int b = 0; b < B; b++) {
            double *e = calloc((size_t)(n * n), sizeof *e);
            for (int i = 0; i < n; i++)
                e[i * n + i] = 1;
            host_solve_a(a + b * n * n, n, e, n);
            near(hi + b * n * n, e, (size_t)(n * n), tol_of(dt), "inv");
            double d = host_det(a + b * n * n, n), s = d < 0 ? -1 : 1, l = log(fabs(d));
            near(hd + b, &d, 1, tol_of(dt), "det");
            near(hs + b, &s, 1, 0, "sign");
            near(hl + b, &l, 1, tol_of(dt), "logabsdet");
            free(e);
        }
        free(hi);
        free(hd);
        free(hs);
        free(hl);
        clt_tensor_free(t);
        clt_tensor_free(inv);
        clt_tensor_free(det);
        clt_tensor_free(sg);
        clt_tensor_free(la);
    }
    free(a);
}

/* A [3, 1, n, n] and B [2, n, k] broadcast to X [3, 2, n, k]; B [n] and
 * [3, n] (A's shape less its last dim) are vectors. */
Test(linalg, solve_broadcast_and_vectors)
{
    clt_device *dev = get_device("cpu");
    const int n = 5, k = 3;
    double *a = wellcond(3, n, 5), *bm = wellcond(2, n, 6);
    int64_t as[4] = {3, 1, n, n}, bs[3] = {2, n, k};
    for (int dti = 0; dti < 2; dti++) {
        clt_dtype dt = dti ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *ta = up(dev, dt, 4, as, a), *tb = up(dev, dt, 3, bs, bm), *x = NULL;
        CHECK(clt_linalg_solve(ta, tb, &x));
        cr_assert_eq(clt_tensor_ndim(x), 4);
        cr_assert_eq(clt_tensor_shape(x)[0], 3);
        cr_assert_eq(clt_tensor_shape(x)[1], 2);
        cr_assert_eq(clt_tensor_shape(x)[3], k);
        double *h = down(x);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                double w[n * k];
                memcpy(w, bm + j * n * k, sizeof w); /* B[j]: the upload's values */
                host_solve_a(a + i * n * n, n, w, k);
                near(h + (i * 2 + j) * n * k, w, (size_t)(n * k), tol_of(dt), "solve");
            }
        free(h);
        clt_tensor_free(x);
        clt_tensor_free(tb);
        /* vectors: [n] against every A, [3, n] one per A */
        int64_t vs[2] = {3, n};
        tb = up(dev, dt, 1, vs + 1, bm);
        clt_tensor *a3 = NULL;
        CHECK(clt_squeeze(ta, 1, &a3));
        CHECK(clt_linalg_solve(a3, tb, &x));
        cr_assert_eq(clt_tensor_ndim(x), 2);
        h = down(x);
        for (int i = 0; i < 3; i++) {
            double w[n];
            memcpy(w, bm, sizeof w);
            host_solve_a(a + i * n * n, n, w, 1);
            near(h + i * n, w, n, tol_of(dt), "solve vector");
        }
        free(h);
        clt_tensor_free(x);
        clt_tensor_free(tb);
        tb = up(dev, dt, 2, vs, bm);
        CHECK(clt_linalg_solve(a3, tb, &x));
        cr_assert_eq(clt_tensor_ndim(x), 2);
        h = down(x);
        for (int i = 0; i < 3; i++) {
            double w[n];
            memcpy(w, bm + i * n, sizeof w);
            host_solve_a(a + i * n * n, n, w, 1);
            near(h + i * n, w, n, tol_of(dt), "solve batch of vectors");
        }
        free(h);
        clt_tensor_free(x);
        clt_tensor_free(tb);
        clt_tensor_free(a3);
        clt_tensor_free(ta);
    }
    free(a);
    free(bm);
}

Test(linalg, cholesky_against_host)
{
    clt_device *dev = get_device("cpu");
    const int n = 9, B = 4;
    double *x = wellcond(B, n, 3), *a = malloc((size_t)(B * n * n) * sizeof *a);
    for (int b = 0; b < B; b++) /* X X^T + I */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = i == j;
                for (int r = 0; r < n; r++)
                    s += x[(b * n + i) * n + r] * x[(b * n + j) * n + r];
                a[(b * n + i) * n + j] = s;
            }
    int64_t shape[3] = {B, n, n};
    for (int dti = 0; dti < 2; dti++) {
        clt_dtype dt = dti ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *t = up(dev, dt, 3, shape, a), *l = NULL;
        CHECK(clt_linalg_cholesky(t, 0, &l));
        double *h = down(l), w[n * n];
        for (int b = 0; b < B; b++) {
            host_cholesky(a + b * n * n, w, n);
            near(h + b * n * n, w, (size_t)(n * n), tol_of(dt), "cholesky");
        }
        free(h);
        clt_tensor_free(l);
        clt_tensor_free(t);
    }
    free(x);
    free(a);
}

/* ---- edges and refusals ------------------------------------------------------------ */

static void refused(clt_status st, clt_status want, clt_tensor *const *out, const char *msg)
{
    cr_assert_eq(st, want, "status %s: %s", clt_status_name(st), clt_last_error());
    cr_assert_null(*out);
    cr_assert(strstr(clt_last_error(), msg) != NULL, "message '%s' lacks '%s'",
              clt_last_error(), msg);
}

Test(linalg, singular_and_not_positive_definite)
{
    clt_device *dev = get_device("cpu");
    /* the second: its first column eliminates its first row to zeros, so the
     * pivot of step 2 is exactly zero */
    double s[18] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 2, 1, 1, 4, 2, 2, 0, 0, 1};
    int64_t shape[3] = {2, 3, 3};
    clt_tensor *one = up(dev, CLT_FLOAT32, 2, shape + 1, s + 9);
    clt_tensor *two = up(dev, CLT_FLOAT32, 3, shape, s), *out = (clt_tensor *)1, *o2 = NULL;
    refused(clt_linalg_inv(one, &out), CLT_ERR_INVALID_ARGUMENT, &out,
            "clt_linalg_inv: The diagonal element 2 is zero, the inversion could not be "
            "completed because the input matrix is singular.");
    out = (clt_tensor *)1;
    refused(clt_linalg_inv(two, &out), CLT_ERR_INVALID_ARGUMENT, &out,
            "clt_linalg_inv: (Batch element 1): The diagonal element 2 is zero");
    out = (clt_tensor *)1;
    refused(clt_linalg_solve(two, two, &out), CLT_ERR_INVALID_ARGUMENT, &out,
            "clt_linalg_solve: (Batch element 1): The solver failed because the input matrix "
            "is singular.");
    /* det and slogdet: 0 and (0, -inf), no error */
    CHECK(clt_linalg_det(two, &out));
    double *h = down(out);
    cr_assert(h[0] == 1 && h[1] == 0, "det %g %g", h[0], h[1]);
    free(h);
    clt_tensor_free(out);
    CHECK(clt_linalg_slogdet(two, &out, &o2));
    double *hs = down(out), *hl = down(o2);
    cr_assert(hs[0] == 1 && hs[1] == 0 && hl[0] == 0 && isinf(hl[1]) && hl[1] < 0,
              "slogdet (%g, %g) (%g, %g)", hs[0], hl[0], hs[1], hl[1]);
    free(hs);
    free(hl);
    clt_tensor_free(out);
    clt_tensor_free(o2);
    double np[18] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 4, 2, 0, 2, 5, 0, 0, 0, -1};
    clt_tensor *npd = up(dev, CLT_FLOAT64, 3, shape, np);
    out = (clt_tensor *)1;
    refused(clt_linalg_cholesky(npd, 0, &out), CLT_ERR_INVALID_ARGUMENT, &out,
            "clt_linalg_cholesky: (Batch element 1): The factorization could not be completed "
            "because the input is not positive-definite (the leading minor of order 3 is not "
            "positive-definite).");
    clt_tensor_free(one);
    clt_tensor_free(two);
    clt_tensor_free(npd);
}

Test(linalg, dtypes_shapes_and_empty)
{
    clt_device *dev = get_device("cpu");
    int64_t sq[2] = {3, 3}, rect[2] = {3, 4};
    clt_tensor *i = NULL, *r = NULL, *f = NULL, *f64 = NULL, *out = (clt_tensor *)1, *o2 = NULL;
    CHECK(clt_zeros(dev, CLT_INT64, 2, sq, &i));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, rect, &r));
    CHECK(eye(dev, CLT_FLOAT32, 3, &f));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 1, sq, &f64));
    refused(clt_linalg_inv(i, &out), CLT_ERR_DTYPE_UNSUPPORTED, &out,
            "Expected a floating point tensor as input. Got int64");
    out = (clt_tensor *)1;
    refused(clt_linalg_det(r, &out), CLT_ERR_INVALID_ARGUMENT, &out,
            "A must be batches of square matrices, but they are 3 by 4 matrices");
    out = (clt_tensor *)1;
    refused(clt_linalg_solve(f, f64, &out), CLT_ERR_DTYPE_MISMATCH, &out,
            "Expected A and B to have the same dtype");
    out = (clt_tensor *)1;
    clt_tensor *v4 = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, rect + 1, &v4));
    refused(clt_linalg_solve(f, v4, &out), CLT_ERR_SHAPE_MISMATCH, &out, "(3x3 and 4x1)");
    clt_tensor_free(v4);
    clt_tensor_free(f64);
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, sq, &f64));
    clt_tensor *v = NULL;
    CHECK(clt_linalg_solve(f, f64, &v)); /* a vector stays a vector */
    cr_assert_eq(clt_tensor_ndim(v), 1);
    clt_tensor_free(v);
    /* n = 0: det 1, slogdet (1, 0); a 0-size batch: empty */
    int64_t e0[3] = {2, 0, 0}, e1[3] = {0, 3, 3};
    clt_tensor *z = NULL, *zb = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 3, e0, &z));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 3, e1, &zb));
    CHECK(clt_linalg_det(z, &out));
    double *h = down(out);
    cr_assert(clt_tensor_numel(out) == 2 && h[0] == 1 && h[1] == 1);
    free(h);
    clt_tensor_free(out);
    CHECK(clt_linalg_slogdet(z, &out, &o2));
    double *hs = down(out), *hl = down(o2);
    cr_assert(hs[1] == 1 && hl[1] == 0);
    free(hs);
    free(hl);
    clt_tensor_free(out);
    clt_tensor_free(o2);
    CHECK(clt_linalg_inv(z, &out));
    cr_assert_eq(clt_tensor_numel(out), 0);
    cr_assert_eq(clt_tensor_ndim(out), 3);
    clt_tensor_free(out);
    CHECK(clt_linalg_cholesky(zb, 0, &out));
    cr_assert_eq(clt_tensor_numel(out), 0);
    clt_tensor_free(out);
    CHECK(clt_linalg_det(zb, &out));
    cr_assert_eq(clt_tensor_numel(out), 0);
    clt_tensor_free(out);
    clt_tensor_free(z);
    clt_tensor_free(zb);
    clt_tensor_free(i);
    clt_tensor_free(r);
    clt_tensor_free(f);
    clt_tensor_free(f64);
}

/* A NULL out-pointer for one of slogdet's outputs still sets the other
 * to NULL (the fuzz target found *logabsdet left as it was when sign
 * was NULL). */
Test(linalg, slogdet_null_output_clears_the_other)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = NULL;
    CHECK(eye(dev, CLT_FLOAT32, 2, &a));
    clt_tensor *out = (clt_tensor *)1;
    cr_assert_eq(clt_linalg_slogdet(a, NULL, &out), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(out, "*logabsdet left set when sign is NULL");
    cr_assert(clt_last_error()[0]);
    out = (clt_tensor *)1;
    cr_assert_eq(clt_linalg_slogdet(a, &out, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(out, "*sign left set when logabsdet is NULL");
    clt_tensor_free(a);
}

/* ---- gradients ------------------------------------------------------------------------ */

static clt_status f_inv(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_inv(in[0], out);
}

static clt_status f_det(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_det(in[0], out);
}

static clt_status f_logabsdet(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *s = NULL;
    clt_status st = clt_linalg_slogdet(in[0], &s, out);
    clt_tensor_free(s);
    return st;
}

static clt_status f_solve(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_solve(in[0], in[1], out);
}

/* cholesky of X X^T + n I (symmetric, as torch's gradcheck of cholesky
 * takes it); ctx: upper. */
static clt_status f_chol(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *xt = NULL, *p = NULL, *e = NULL, *a = NULL;
    int n = (int)clt_tensor_shape(in[0])[clt_tensor_ndim(in[0]) - 1];
    clt_status st = clt_transpose(in[0], -2, -1, &xt);
    if (st == CLT_OK)
        st = clt_matmul(in[0], xt, &p);
    if (st == CLT_OK)
        st = eye(clt_tensor_device(in[0]), CLT_FLOAT64, n, &e);
    if (st == CLT_OK)
        st = clt_add(p, e, &a);
    if (st == CLT_OK)
        st = clt_linalg_cholesky(a, *(const int *)ctx, out);
    clt_tensor_free(xt);
    clt_tensor_free(p);
    clt_tensor_free(e);
    clt_tensor_free(a);
    return st;
}

Test(linalg, gradients)
{
    clt_device *dev = get_device("cpu");
    double *a = wellcond(2, 4, 21), *b = wellcond(3, 4, 22);
    gc_in one = {3, {2, 4, 4}, a, 1};
    gradcheck(dev, f_inv, NULL, 1, &one);
    gradcheck(dev, f_det, NULL, 1, &one);
    gradcheck(dev, f_logabsdet, NULL, 1, &one);
    gc_in sq = {2, {4, 4}, a, 1};
    gradcheck(dev, f_det, NULL, 1, &sq);
    /* A [2, 4, 4] with B [3, 1, 4, 2] (broadcast), B [4] and B [2, 4] (vectors) */
    gc_in m[2] = {{3, {2, 4, 4}, a, 1}, {4, {3, 1, 4, 2}, b, 1}};
    gradcheck(dev, f_solve, NULL, 2, m);
    gc_in v[2] = {{3, {2, 4, 4}, a, 1}, {1, {4}, b, 1}};
    gradcheck(dev, f_solve, NULL, 2, v);
    gc_in bv[2] = {{3, {2, 4, 4}, a, 1}, {2, {2, 4}, b, 1}};
    gradcheck(dev, f_solve, NULL, 2, bv);
    for (int upper = 0; upper < 2; upper++) {
        gc_in c = {3, {2, 4, 4}, a, 1};
        gradcheck(dev, f_chol, &upper, 1, &c);
    }
    free(a);
    free(b);
}

/* det's gradient at singular matrices (det exactly 0, no inverse): the
 * cofactors times g, which finite differences of the polynomial det find
 * (torch 1.13's first-order formula gives 0 there); a batch mixes them
 * with invertible ones, and a 1 x 1 zero has cofactor 1. */
Test(linalg, det_gradient_at_singular_matrices)
{
    clt_device *dev = get_device("cpu");
    static const double rank2[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
    static const double zero_row[9] = {1, 2, 3, 0, 0, 0, 4, 5, 7};
    static const double zero3[9] = {0};
    static const double mixed[12] = {1, 2, 2, 4, 2, 1, 0.5, 3, 0, 0, 3, 1};
    static const double one_zero[1] = {0};
    gc_in a = {2, {3, 3}, rank2, 1}, b = {2, {3, 3}, zero_row, 1}, z = {2, {3, 3}, zero3, 1};
    gc_in m = {3, {3, 2, 2}, mixed, 1}, o = {2, {1, 1}, one_zero, 1};
    gradcheck(dev, f_det, NULL, 1, &a);
    gradcheck(dev, f_det, NULL, 1, &b);
    gradcheck(dev, f_det, NULL, 1, &z);
    gradcheck(dev, f_det, NULL, 1, &m);
    gradcheck(dev, f_det, NULL, 1, &o);
}

Test(linalg, grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *e = NULL, *r = NULL, *s = NULL;
    CHECK(eye(dev, CLT_FLOAT64, 3, &e));
    CHECK(clt_set_requires_grad(e, 1));
    CHECK(clt_linalg_inv(e, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LinalgInvExBackward0");
    clt_tensor_free(r);
    CHECK(clt_linalg_det(e, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LinalgDetBackward0");
    clt_tensor_free(r);
    CHECK(clt_linalg_slogdet(e, &s, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LinalgSlogdetBackward0");
    clt_tensor_free(r);
    clt_tensor_free(s);
    CHECK(clt_linalg_solve(e, e, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LinalgSolveExBackward0");
    clt_tensor_free(r);
    CHECK(clt_linalg_cholesky(e, 0, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LinalgCholeskyExBackward0");
    clt_tensor_free(r);
    clt_tensor_free(e);
}
