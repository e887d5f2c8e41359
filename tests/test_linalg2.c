/* test_linalg2.c: clt_linalg_eig and _eigvals on matrices built with known
 * eigenvalues (P T P with P a Householder reflection and T triangular or
 * with 2 x 2 rotation blocks), real and complex, batched, in both
 * precisions: the values, A V = V diag(w), the vectors' norms and phases,
 * the refusals; clt_isin, clt_put (with its gradient), clt_msort and
 * clt_row_stack against loops written here. */
#include <complex.h>

#include "helpers.h"

typedef double complex cplx;

/* A complex tensor of dt (complex64 or complex128) from n complex values. */
static clt_tensor *complex_of(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                              const cplx *v, size_t n)
{
    double *raw = malloc((2 * n + 1) * sizeof *raw);
    for (size_t i = 0; i < n; i++) {
        raw[2 * i] = creal(v[i]);
        raw[2 * i + 1] = cimag(v[i]);
    }
    clt_tensor *t = NULL, *c = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, nd, shape, raw, &t));
    CHECK(clt_to_dtype(t, dt, &c));
    clt_tensor_free(t);
    free(raw);
    return c;
}

/* A complex tensor's values as complex doubles (a new array). */
static cplx *read_complex(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    cplx *out = malloc((n + 1) * sizeof *out);
    if (clt_tensor_dtype(t) == CLT_COMPLEX128) {
        double *raw = malloc((2 * n + 1) * sizeof *raw);
        CHECK(clt_tensor_read(t, raw, 2 * n * sizeof *raw));
        for (size_t i = 0; i < n; i++)
            out[i] = CMPLX(raw[2 * i], raw[2 * i + 1]);
        free(raw);
    } else {
        cr_assert_eq(clt_tensor_dtype(t), CLT_COMPLEX64);
        float *raw = malloc((2 * n + 1) * sizeof *raw);
        CHECK(clt_tensor_read(t, raw, 2 * n * sizeof *raw));
        for (size_t i = 0; i < n; i++)
            out[i] = CMPLX(raw[2 * i], raw[2 * i + 1]);
        free(raw);
    }
    return out;
}

static double urand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)((*seed >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* a := P t P for P = I - 2 u u^T / u^T u (P = P^-1), n x n. */
static void similar(int n, const cplx *t, cplx *a, unsigned *seed)
{
    double u[16], uu = 0;
    for (int i = 0; i < n; i++) {
        u[i] = urand(seed) + 1.5;
        uu += u[i] * u[i];
    }
    cplx tmp[256];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            cplx s = 0;
            for (int k = 0; k < n; k++)
                s += ((i == k) - 2 * u[i] * u[k] / uu) * t[k * n + j];
            tmp[i * n + j] = s;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            cplx s = 0;
            for (int k = 0; k < n; k++)
                s += tmp[i * n + k] * ((k == j) - 2 * u[k] * u[j] / uu);
            a[i * n + j] = s;
        }
}

/* Each wanted value is matched by a distinct got value within tol. */
static void same_multiset(const cplx *got, const cplx *want, int n, double tol, const char *what)
{
    int used[16] = {0};
    for (int i = 0; i < n; i++) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (!used[j] && (best < 0 || cabs(got[j] - want[i]) < cabs(got[best] - want[i])))
                best = j;
        cr_assert(cabs(got[best] - want[i]) <= tol * (1 + cabs(want[i])),
                  "%s: eigenvalue %g%+gi not found (nearest %g%+gi)", what, creal(want[i]),
                  cimag(want[i]), creal(got[best]), cimag(got[best]));
        used[best] = 1;
    }
}

/* A V = V diag(w), |v| = 1, and each vector's largest component real and
 * positive. */
static void check_vectors(const cplx *a, const cplx *w, const cplx *v, int n, double tol,
                          const char *what)
{
    double an = 0;
    for (int i = 0; i < n * n; i++)
        an = fmax(an, cabs(a[i]));
    for (int k = 0; k < n; k++) {
        double nrm = 0, best = -1;
        int at = 0;
        for (int i = 0; i < n; i++) {
            cplx s = 0;
            for (int j = 0; j < n; j++)
                s += a[i * n + j] * v[j * n + k];
            cr_assert(cabs(s - w[k] * v[i * n + k]) <= tol * (1 + an) * n,
                      "%s: (A v - w v)[%d] of vector %d is %g", what, i, k,
                      cabs(s - w[k] * v[i * n + k]));
            nrm += cabs(v[i * n + k]) * cabs(v[i * n + k]);
            if (cabs(v[i * n + k]) > best + tol) {
                best = cabs(v[i * n + k]);
                at = i;
            }
        }
        cr_assert(fabs(sqrt(nrm) - 1) <= tol * n, "%s: |v_%d| = %g", what, k, sqrt(nrm));
        cr_assert(fabs(cimag(v[at * n + k])) <= tol && creal(v[at * n + k]) > 0,
                  "%s: vector %d's largest component is %g%+gi", what, k, creal(v[at * n + k]),
                  cimag(v[at * n + k]));
    }
}

/* batch matrices P T P with T upper triangular (complex) or, for real,
 * quasi-triangular with rotation blocks [a -b; b a] (values a +- ib). */
static void eig_case(clt_device *dev, clt_dtype dt, int batch, int n, unsigned seed)
{
    bool cx = dt == CLT_COMPLEX64 || dt == CLT_COMPLEX128;
    bool single = dt == CLT_FLOAT32 || dt == CLT_COMPLEX64;
    double tol = single ? 2e-4 : 1e-9;
    size_t nn = (size_t)(n * n);
    cplx *a = malloc((batch * nn + 1) * sizeof *a), *want = malloc((batch * n + 1) * sizeof *want);
    cplx t[256];
    for (int b = 0; b < batch; b++) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                t[i * n + j] = j > i ? CMPLX(urand(&seed), cx ? urand(&seed) : 0) : 0;
        for (int i = 0; i < n; i++) {
            double re = 2 * urand(&seed), im = urand(&seed);
            if (!cx && i + 1 < n && i % 3 == 0) { /* a rotation block */
                t[i * n + i] = t[(i + 1) * n + i + 1] = re;
                t[i * n + i + 1] = -(im + 1.2);
                t[(i + 1) * n + i] = im + 1.2;
                want[b * n + i] = CMPLX(re, im + 1.2);
                want[b * n + i + 1] = CMPLX(re, -(im + 1.2));
                i++;
                continue;
            }
            t[i * n + i] = CMPLX(re + i, cx ? im : 0);
            want[b * n + i] = t[i * n + i];
        }
        similar(n, t, a + b * nn, &seed);
    }
    int64_t shape[3] = {batch, n, n};
    clt_tensor *in = NULL;
    if (cx) {
        in = complex_of(dev, dt, 3, shape, a, batch * nn);
    } else {
        double *re = malloc((batch * nn + 1) * sizeof *re);
        for (size_t i = 0; i < batch * nn; i++)
            re[i] = creal(a[i]);
        in = tensor_of(dev, dt, 3, shape, re);
        free(re);
    }
    clt_tensor *w = NULL, *v = NULL, *w2 = NULL;
    CHECK(clt_linalg_eig(in, &w, &v));
    CHECK(clt_linalg_eigvals(in, &w2));
    clt_dtype odt = single ? CLT_COMPLEX64 : CLT_COMPLEX128;
    cr_assert_eq(clt_tensor_dtype(w), odt);
    cr_assert_eq(clt_tensor_dtype(v), odt);
    assert_shape(w, 2, shape);
    assert_shape(v, 3, shape);
    cplx *gw = read_complex(w), *gv = read_complex(v), *gw2 = read_complex(w2);
    /* the matrix as the device holds it (rounded to float32 for single) */
    cplx *held = read_complex(v); /* same size buffer, overwritten below */
    for (size_t i = 0; i < batch * nn; i++)
        held[i] = single ? CMPLX((float)creal(a[i]), (float)cimag(a[i])) : a[i];
    for (int b = 0; b < batch; b++) {
        same_multiset(gw + b * n, want + b * n, n, tol * 10, "eig");
        check_vectors(held + b * nn, gw + b * n, gv + b * nn, n, tol, "eig vectors");
        for (int i = 0; i < n; i++)
            cr_assert(gw2[b * n + i] == gw[b * n + i], "eigvals differs from eig at %d", i);
    }
    free(a);
    free(want);
    free(gw);
    free(gv);
    free(gw2);
    free(held);
    clt_tensor_free(in);
    clt_tensor_free(w);
    clt_tensor_free(v);
    clt_tensor_free(w2);
}

Test(linalg2, eig_known_values)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[4] = {CLT_FLOAT64, CLT_FLOAT32, CLT_COMPLEX128, CLT_COMPLEX64};
    const int ns[5] = {1, 2, 3, 5, 9};
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < 5; k++)
            eig_case(dev, dts[d], 3, ns[k], 17u + (unsigned)(d * 5 + k));
}

Test(linalg2, eig_defective_and_zero)
{
    clt_device *dev = get_device("cpu");
    /* a Jordan block: one value 2, vector e_0; zeros: values 0, vectors e_k */
    const double j[9] = {2, 1, 0, 0, 2, 1, 0, 0, 2}, z[4] = {0, 0, 0, 0};
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, j), *w = NULL, *v = NULL;
    CHECK(clt_linalg_eig(a, &w, &v));
    cplx *gw = read_complex(w), *gv = read_complex(v);
    for (int i = 0; i < 3; i++) {
        cr_assert(cabs(gw[i] - 2) < 1e-4, "value %d: %g%+gi", i, creal(gw[i]), cimag(gw[i]));
        cr_assert(cabs(gv[i * 3] - (i == 0)) < 1e-4, "first vector, component %d", i);
    }
    free(gw);
    free(gv);
    clt_tensor_free(a);
    clt_tensor_free(w);
    clt_tensor_free(v);
    a = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, z);
    CHECK(clt_linalg_eig(a, &w, &v));
    gw = read_complex(w);
    gv = read_complex(v);
    for (int i = 0; i < 2; i++) {
        cr_assert(gw[i] == 0);
        for (int k = 0; k < 2; k++)
            cr_assert(gv[i * 2 + k] == (i == k), "zero matrix: V[%d, %d]", i, k);
    }
    free(gw);
    free(gv);
    clt_tensor_free(a);
    clt_tensor_free(w);
    clt_tensor_free(v);
}

Test(linalg2, eig_empty_and_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *e = NULL, *w = NULL, *v = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 0, 0}, &e));
    CHECK(clt_linalg_eig(e, &w, &v));
    assert_shape(w, 2, (int64_t[]){2, 0});
    assert_shape(v, 3, (int64_t[]){2, 0, 0});
    cr_assert_eq(clt_tensor_dtype(v), CLT_COMPLEX64);
    clt_tensor_free(e);
    clt_tensor_free(w);
    clt_tensor_free(v);
    clt_tensor *r = NULL, *i = NULL, *nan = NULL, *one = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, &r));
    assert_error(clt_linalg_eig(r, &w, &v), CLT_ERR_INVALID_ARGUMENT, "square");
    cr_assert_null(w);
    cr_assert_null(v);
    CHECK(clt_zeros(dev, CLT_INT32, 2, (int64_t[]){2, 2}, &i));
    assert_error(clt_linalg_eigvals(i, &w), CLT_ERR_DTYPE_UNSUPPORTED, "floating point or complex");
    CHECK(clt_zeros(dev, CLT_FLOAT64, 1, (int64_t[]){3}, &one));
    assert_error(clt_linalg_eigvals(one, &w), CLT_ERR_INVALID_ARGUMENT, "at least 2 dimensions");
    const double bad[4] = {1, NAN, 0, 1};
    nan = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, bad);
    assert_error(clt_linalg_eig(nan, &w, &v), CLT_ERR_INVALID_ARGUMENT, "infs or NaNs");
    names_only("clt_linalg_eig");
    clt_tensor_free(r);
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, &r));
    CHECK(clt_set_requires_grad(r, 1));
    /* recorded now (its gradients are in test_linalg3.c) */
    CHECK(clt_linalg_eig(r, &w, &v));
    cr_assert_str_eq(clt_grad_fn_name(w), "LinalgEigBackward0");
    cr_assert_str_eq(clt_grad_fn_name(v), "LinalgEigBackward0");
    clt_tensor_free(w);
    clt_tensor_free(v);
    int was = clt_set_grad_enabled(0);
    CHECK(clt_linalg_eigvals(r, &w));
    cr_assert_null(clt_grad_fn_name(w));
    clt_set_grad_enabled(was);
    clt_tensor_free(w);
    clt_tensor_free(r);
    clt_tensor_free(i);
    clt_tensor_free(nan);
    clt_tensor_free(one);
}

/* ---- isin, put, msort, row_stack ----------------------------------------------- */

Test(linalg2, isin_against_loop)
{
    clt_device *dev = get_device("cpu");
    const double ev[6] = {1, 2, 3, NAN, -0.0, 7}, tv[4] = {3, 0, NAN, 1};
    clt_tensor *e = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, ev);
    clt_tensor *t = tensor_of(dev, CLT_INT64, 2, (int64_t[]){2, 2}, (double[]){3, 0, 9, 1});
    clt_tensor *tn = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){4}, tv), *empty = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){0}, &empty));
    const clt_tensor *tests[3] = {t, tn, empty};
    const double *tvals[3] = {(double[]){3, 0, 9, 1}, tv, NULL};
    const int tcount[3] = {4, 4, 0};
    for (int k = 0; k < 3; k++)
        for (int inv = 0; inv < 2; inv++) {
            clt_tensor *o = NULL;
            CHECK(clt_isin(e, tests[k], k == 1, inv, &o));
            cr_assert_eq(clt_tensor_dtype(o), CLT_BOOL);
            assert_shape(o, 2, (int64_t[]){2, 3});
            double *g = read_as_f64(o);
            for (int i = 0; i < 6; i++) {
                int in = 0;
                for (int j = 0; j < tcount[k]; j++)
                    in |= ev[i] == tvals[k][j];
                cr_assert_eq(g[i], (double)(in ^ inv), "test %d invert %d element %d", k, inv, i);
            }
            free(g);
            clt_tensor_free(o);
        }
    clt_tensor *b = NULL, *o = NULL;
    CHECK(clt_zeros(dev, CLT_BOOL, 1, (int64_t[]){2}, &b));
    assert_error(clt_isin(b, t, 0, 0, &o), CLT_ERR_DTYPE_UNSUPPORTED, "isin");
    cr_assert_null(o);
    clt_tensor_free(b);
    clt_tensor_free(e);
    clt_tensor_free(t);
    clt_tensor_free(tn);
    clt_tensor_free(empty);
}

Test(linalg2, put_values_and_gradient)
{
    clt_device *dev = get_device("cpu");
    const double tv[6] = {1, 2, 3, 4, 5, 6}, sv[4] = {10, 20, 30, 40};
    const double iv[4] = {0, -1, 0, 2}; /* -1 is element 5; 0 repeats */
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 3}, tv);
    clt_tensor *s = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, sv);
    clt_tensor *ix = tensor_of(dev, CLT_INT64, 1, (int64_t[]){4}, iv);
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_set_requires_grad(s, 1));
    for (int acc = 0; acc < 2; acc++) {
        double want[6];
        memcpy(want, tv, sizeof want);
        for (int k = 0; k < 4; k++) {
            int at = iv[k] < 0 ? (int)iv[k] + 6 : (int)iv[k];
            want[at] = acc ? want[at] + sv[k] : sv[k];
        }
        if (!acc)
            want[0] = sv[2]; /* the last of repeated places wins */
        clt_tensor *o = NULL, *sum = NULL, *gt = NULL, *gs = NULL;
        CHECK(clt_put(t, ix, s, acc, &o));
        assert_shape(o, 2, (int64_t[]){2, 3});
        assert_tensor_close(o, want, 6, 0, 0, "put");
        if (acc) {
            /* d sum(put(t, i, s, accumulate)) = 1 everywhere for t and s */
            CHECK(clt_sum(o, &sum));
            CHECK(clt_backward(sum, NULL, 0));
            CHECK(clt_grad(t, &gt));
            CHECK(clt_grad(s, &gs));
            assert_tensor_close(gt, (double[]){1, 1, 1, 1, 1, 1}, 6, 0, 0, "grad t");
            assert_tensor_close(gs, (double[]){1, 1, 1, 1}, 4, 0, 0, "grad source");
        }
        clt_tensor_free(o);
        clt_tensor_free(sum);
        clt_tensor_free(gt);
        clt_tensor_free(gs);
    }
    clt_tensor *bad = NULL, *o = NULL;
    CHECK(clt_zeros(dev, CLT_INT32, 1, (int64_t[]){4}, &bad));
    assert_error(clt_put(t, bad, s, 0, &o), CLT_ERR_DTYPE_MISMATCH, "long tensor");
    cr_assert_null(o);
    clt_tensor_free(bad);
    CHECK(clt_zeros(dev, CLT_INT64, 1, (int64_t[]){3}, &bad));
    assert_error(clt_put(t, bad, s, 0, &o), CLT_ERR_SHAPE_MISMATCH, "same number of elements");
    clt_tensor_free(bad);
    clt_tensor_free(t);
    clt_tensor_free(s);
    clt_tensor_free(ix);
}

Test(linalg2, msort_and_row_stack)
{
    clt_device *dev = get_device("cpu");
    const double v[12] = {3, -1, 2, 0, 5, 5, -2, 4, 1, 1, 0, 9};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 3}, v), *o = NULL;
    CHECK(clt_msort(t, &o));
    double *g = read_as_f64(o);
    for (int c = 0; c < 3; c++) {
        double col[4];
        for (int r = 0; r < 4; r++)
            col[r] = v[r * 3 + c];
        for (int r = 0; r < 4; r++) /* rank of col[r] among the column */
            for (int q = r + 1; q < 4; q++)
                if (col[q] < col[r]) {
                    double x = col[q];
                    col[q] = col[r];
                    col[r] = x;
                }
        for (int r = 0; r < 4; r++)
            cr_assert_eq(g[r * 3 + c], col[r], "column %d row %d", c, r);
    }
    free(g);
    clt_tensor_free(o);
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){3}, v);
    const clt_tensor *ts[2] = {a, t};
    CHECK(clt_row_stack(ts, 2, &o));
    assert_shape(o, 2, (int64_t[]){5, 3});
    g = read_as_f64(o);
    for (int i = 0; i < 15; i++)
        cr_assert_eq(g[i], i < 3 ? v[i] : v[i - 3]);
    free(g);
    clt_tensor_free(o);
    assert_error(clt_row_stack(ts, 0, &o), CLT_ERR_INVALID_ARGUMENT, "non-empty");
    names_only("clt_row_stack");
    clt_tensor_free(a);
    clt_tensor_free(t);
}

/* ---- svd_lowrank and pca_lowrank ---------------------------------------------------- */

/* The first k columns of the reflection I - 2 u u^T / u^T u (r x r) into
 * out (r x k): orthonormal. */
static void reflector_cols(int r, int k, unsigned *seed, double *out)
{
    double u[16], uu = 0;
    for (int i = 0; i < r; i++) {
        u[i] = urand(seed) + 1.5;
        uu += u[i] * u[i];
    }
    for (int i = 0; i < r; i++)
        for (int j = 0; j < k; j++)
            out[i * k + j] = (i == j) - 2 * u[i] * u[j] / uu;
}

/* u diag(s) v^T against want (batch m x n matrices, k columns). */
static void reconstructs(const clt_tensor *u, const clt_tensor *s, const clt_tensor *v,
                         const double *want, int batch, int m, int n, double tol)
{
    int k = (int)clt_tensor_shape(s)[clt_tensor_ndim(s) - 1];
    double *gu = read_as_f64(u), *gs = read_as_f64(s), *gv = read_as_f64(v);
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double x = 0;
                for (int c = 0; c < k; c++)
                    x += gu[(b * m + i) * k + c] * gs[b * k + c] * gv[(b * n + j) * k + c];
                double w = want[(b * m + i) * n + j];
                cr_assert(fabs(x - w) <= tol * (1 + fabs(w)),
                          "U S V^T [%d, %d, %d] = %g, want %g", b, i, j, x, w);
            }
    free(gu);
    free(gs);
    free(gv);
}

Test(linalg2, svd_lowrank_exact_on_low_rank)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(7, &gen));
    /* rank-2 matrices A = U0 diag(3, 0.5) V0^T, tall and wide, batched */
    const int dims[3][2] = {{7, 4}, {4, 7}, {6, 6}};
    for (int c = 0; c < 3; c++)
        for (int dt = 0; dt < 2; dt++) {
            int m = dims[c][0], n = dims[c][1], batch = 2;
            unsigned seed = 99u + (unsigned)c;
            double *a = malloc(sizeof(double) * (size_t)(batch * m * n)), u0[64], v0[64];
            for (int b = 0; b < batch; b++) {
                reflector_cols(m, 2, &seed, u0);
                reflector_cols(n, 2, &seed, v0);
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++)
                        a[(b * m + i) * n + j] =
                            3 * u0[i * 2] * v0[j * 2] + 0.5 * u0[i * 2 + 1] * v0[j * 2 + 1];
            }
            clt_dtype t = dt ? CLT_FLOAT32 : CLT_FLOAT64;
            double tol = dt ? 1e-4 : 1e-10;
            clt_tensor *in = tensor_of(dev, t, 3, (int64_t[]){batch, m, n}, a);
            clt_tensor *u = NULL, *s = NULL, *v = NULL;
            CHECK(clt_svd_lowrank(in, 3, 2, NULL, gen, &u, &s, &v));
            assert_shape(u, 3, (int64_t[]){batch, m, 3});
            assert_shape(s, 2, (int64_t[]){batch, 3});
            assert_shape(v, 3, (int64_t[]){batch, n, 3});
            double *gs = read_as_f64(s);
            for (int b = 0; b < batch; b++) {
                cr_assert(fabs(gs[b * 3] - 3) < tol * 10, "S[0] = %g", gs[b * 3]);
                cr_assert(fabs(gs[b * 3 + 1] - 0.5) < tol * 10, "S[1] = %g", gs[b * 3 + 1]);
                cr_assert(fabs(gs[b * 3 + 2]) < tol * 10, "S[2] = %g", gs[b * 3 + 2]);
            }
            free(gs);
            reconstructs(u, s, v, a, batch, m, n, tol);
            clt_tensor_free(u);
            clt_tensor_free(s);
            clt_tensor_free(v);
            /* M taken off first: A + 1 with M = 1 gives A's factors */
            double *a1 = malloc(sizeof(double) * (size_t)(batch * m * n));
            for (int i = 0; i < batch * m * n; i++)
                a1[i] = a[i] + 1;
            clt_tensor *in1 = tensor_of(dev, t, 3, (int64_t[]){batch, m, n}, a1), *one = NULL;
            CHECK(clt_full(dev, t, 2, (int64_t[]){1, n}, 1.0, &one));
            CHECK(clt_svd_lowrank(in1, 2, 1, one, gen, &u, &s, &v));
            reconstructs(u, s, v, a, batch, m, n, tol);
            clt_tensor_free(u);
            clt_tensor_free(s);
            clt_tensor_free(v);
            /* pca: the column means go first, so A + 1 also gives A - mean(A) */
            for (int b = 0; b < batch; b++)
                for (int j = 0; j < n; j++) {
                    double mean = 0;
                    for (int i = 0; i < m; i++)
                        mean += a[(b * m + i) * n + j] / m;
                    for (int i = 0; i < m; i++)
                        a1[(b * m + i) * n + j] = a[(b * m + i) * n + j] - mean;
                }
            CHECK(clt_pca_lowrank(in1, -1, 1, 2, gen, &u, &s, &v));
            int k = m < n ? m : n;
            assert_shape(s, 2, (int64_t[]){batch, k < 6 ? k : 6});
            reconstructs(u, s, v, a1, batch, m, n, tol);
            clt_tensor_free(u);
            clt_tensor_free(s);
            clt_tensor_free(v);
            free(a);
            free(a1);
            clt_tensor_free(in);
            clt_tensor_free(in1);
            clt_tensor_free(one);
        }
    clt_tensor *z = NULL, *u = NULL, *s = NULL, *v = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){4, 5}, &z));
    assert_error(clt_pca_lowrank(z, 5, 1, 2, gen, &u, &s, &v), CLT_ERR_INVALID_ARGUMENT,
                 "not greater than min(m, n)=4");
    cr_assert(u == NULL && s == NULL && v == NULL);
    assert_error(clt_svd_lowrank(z, 2, -1, NULL, gen, &u, &s, &v), CLT_ERR_INVALID_ARGUMENT,
                 "niter(=-1)");
    names_only("clt_svd_lowrank");
    clt_tensor_free(z);
    clt_generator_free(gen);
}

/* ---- lu_unpack ------------------------------------------------------------------------ */

Test(linalg2, lu_unpack_rebuilds_a)
{
    clt_device *dev = get_device("cpu");
    const int dims[3][2] = {{4, 4}, {5, 3}, {3, 5}};
    for (int c = 0; c < 3; c++) {
        int m = dims[c][0], n = dims[c][1], k = m < n ? m : n;
        unsigned seed = 5u + (unsigned)c;
        double a[2 * 25];
        for (int i = 0; i < 2 * m * n; i++)
            a[i] = urand(&seed);
        clt_tensor *in = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){2, m, n}, a);
        clt_tensor *lu = NULL, *piv = NULL, *p = NULL, *l = NULL, *u = NULL;
        CHECK(clt_linalg_lu_factor(in, &lu, &piv));
        CHECK(clt_lu_unpack(lu, piv, 1, 1, &p, &l, &u));
        assert_shape(p, 3, (int64_t[]){2, m, m});
        assert_shape(l, 3, (int64_t[]){2, m, k});
        assert_shape(u, 3, (int64_t[]){2, k, n});
        double *gp = read_as_f64(p), *gl = read_as_f64(l), *gu = read_as_f64(u);
        for (int b = 0; b < 2; b++) {
            /* L unit lower, U upper, P a permutation, P L U = A */
            for (int i = 0; i < m; i++)
                for (int j = 0; j < k; j++) {
                    double x = gl[(b * m + i) * k + j];
                    if (j > i)
                        cr_assert_eq(x, 0.0);
                    if (j == i)
                        cr_assert_eq(x, 1.0);
                }
            for (int i = 0; i < k; i++)
                for (int j = 0; j < i && j < n; j++)
                    cr_assert_eq(gu[(b * k + i) * n + j], 0.0);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double x = 0;
                    for (int r = 0; r < m; r++)
                        for (int q = 0; q < k; q++)
                            x += gp[(b * m + i) * m + r] * gl[(b * m + r) * k + q] *
                                 gu[(b * k + q) * n + j];
                    cr_assert(fabs(x - a[(b * m + i) * n + j]) < 1e-12,
                              "P L U [%d, %d, %d] = %g, want %g", b, i, j, x,
                              a[(b * m + i) * n + j]);
                }
        }
        free(gp);
        free(gl);
        free(gu);
        clt_tensor_free(p);
        clt_tensor_free(l);
        clt_tensor_free(u);
        CHECK(clt_lu_unpack(lu, piv, 0, 0, &p, &l, &u));
        assert_shape(p, 1, (int64_t[]){0});
        assert_shape(l, 1, (int64_t[]){0});
        assert_shape(u, 1, (int64_t[]){0});
        clt_tensor_free(p);
        clt_tensor_free(l);
        clt_tensor_free(u);
        clt_tensor_free(in);
        clt_tensor_free(lu);
        clt_tensor_free(piv);
    }
    clt_tensor *lu = NULL, *bad = NULL, *p = NULL, *l = NULL, *u = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){3, 3}, &lu));
    bad = tensor_of(dev, CLT_INT32, 1, (int64_t[]){3}, (double[]){9, 1, 1});
    assert_error(clt_lu_unpack(lu, bad, 1, 1, &p, &l, &u), CLT_ERR_INVALID_ARGUMENT,
                 "between 1 and LU.size(-2)");
    cr_assert(p == NULL && l == NULL && u == NULL);
    names_only("clt_lu_unpack");
    clt_tensor_free(bad);
    bad = tensor_of(dev, CLT_INT64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    assert_error(clt_lu_unpack(lu, bad, 1, 1, &p, &l, &u), CLT_ERR_DTYPE_MISMATCH, "int32");
    clt_tensor_free(bad);
    clt_tensor_free(lu);
}
