/* test_products.c: clt_mm, _bmm, _mv, _dot, _vdot, the add* family,
 * _outer, _kron, _cross / _linalg_cross and _tensordot against host loops
 * in float64; their refusals and messages; alpha and beta's shortcuts;
 * gradients against finite differences and grad_fn names. */
#include "gradcheck.h"

/* 0.1 * (a small pseudo-random integer): exact in float64, varied signs. */
static double *values(size_t n, unsigned seed)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((int)((seed >> 8) % 41) - 20) / 10.0;
    }
    return v;
}

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

/* c[b] = a[b] @ x[b] for B batches of [n, m] @ [m, p] (row-major). */
static void host_bmm(const double *a, const double *x, double *c, int B, int n, int m, int p)
{
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < p; j++) {
                double s = 0;
                for (int k = 0; k < m; k++)
                    s += a[(b * n + i) * m + k] * x[(b * m + k) * p + j];
                c[(b * n + i) * p + j] = s;
            }
}

/* t's values against want (n of them), within rtol. */
static void expect(const clt_tensor *t, const double *want, size_t n, double rtol)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "numel %lld, want %zu",
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, 1e-12), "element %zu: got %.12g, want %.12g",
                  i, got[i], want[i]);
    free(got);
}

Test(products, mm_bmm_mv_dot)
{
    clt_device *dev = get_device("cpu");
    double *a = values(2 * 3 * 4, 1), *b = values(2 * 4 * 5, 2), *want = malloc(30 * sizeof(double));
    clt_tensor *A = f64(dev, 3, (int64_t[]){2, 3, 4}, a), *B = f64(dev, 3, (int64_t[]){2, 4, 5}, b);
    clt_tensor *A2 = f64(dev, 2, (int64_t[]){3, 4}, a), *B2 = f64(dev, 2, (int64_t[]){4, 5}, b);
    clt_tensor *v = f64(dev, 1, (int64_t[]){4}, b), *u = f64(dev, 1, (int64_t[]){4}, a + 4);
    clt_tensor *r = NULL;

    CHECK(clt_bmm(A, B, &r));
    assert_shape(r, 3, (int64_t[]){2, 3, 5});
    host_bmm(a, b, want, 2, 3, 4, 5);
    expect(r, want, 30, 1e-14);
    clt_tensor_free(r);

    CHECK(clt_mm(A2, B2, &r));
    assert_shape(r, 2, (int64_t[]){3, 5});
    host_bmm(a, b, want, 1, 3, 4, 5);
    expect(r, want, 15, 1e-14);
    clt_tensor_free(r);

    /* a transposed view is read as it is */
    clt_tensor *At = NULL, *Bt = NULL;
    CHECK(clt_transpose(B2, 0, 1, &Bt));
    CHECK(clt_transpose(A2, 0, 1, &At));
    CHECK(clt_mm(Bt, At, &r));
    assert_shape(r, 2, (int64_t[]){5, 3});
    host_bmm(a, b, want, 1, 3, 4, 5);
    double *got = read_as_f64(r);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            cr_assert(close_enough(got[i * 3 + j], want[j * 5 + i], 1e-14, 1e-12));
    free(got);
    clt_tensor_free(r);

    CHECK(clt_mv(A2, v, &r));
    assert_shape(r, 1, (int64_t[]){3});
    host_bmm(a, b, want, 1, 3, 4, 1);
    expect(r, want, 3, 1e-14);
    clt_tensor_free(r);

    CHECK(clt_dot(u, v, &r));
    assert_shape(r, 0, NULL);
    host_bmm(a + 4, b, want, 1, 1, 4, 1);
    expect(r, want, 1, 1e-14);
    clt_tensor_free(r);
    CHECK(clt_vdot(u, v, &r));
    expect(r, want, 1, 1e-14);
    clt_tensor_free(r);

    /* float32 and an empty dot */
    clt_tensor *A32 = NULL, *B32 = NULL, *e = NULL;
    CHECK(clt_to_dtype(A2, CLT_FLOAT32, &A32));
    CHECK(clt_to_dtype(B2, CLT_FLOAT32, &B32));
    CHECK(clt_mm(A32, B32, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    host_bmm(a, b, want, 1, 3, 4, 5);
    expect(r, want, 15, 1e-6);
    clt_tensor_free(r);
    CHECK(clt_empty(dev, CLT_FLOAT64, 1, (int64_t[]){0}, &e));
    CHECK(clt_dot(e, e, &r));
    want[0] = 0;
    expect(r, want, 1, 0);
    clt_tensor_free(r);

    clt_tensor *ts[] = {A, B, A2, B2, v, u, At, Bt, A32, B32, e};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
    free(a);
    free(b);
    free(want);
}

/* beta * in + alpha * P where in repeats with period `period` (a broadcast
 * row) over the n elements of P. */
static void host_axpby(const double *in, size_t period, const double *p, double beta,
                       double alpha, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (beta == 0 ? 0 : beta * in[i % period]) + (alpha == 0 ? 0 : alpha * p[i]);
}

Test(products, add_family)
{
    clt_device *dev = get_device("cpu");
    double *a = values(2 * 3 * 4, 3), *b = values(2 * 4 * 5, 4), *c = values(2 * 3 * 5, 5);
    double *p = malloc(30 * sizeof(double)), *want = malloc(30 * sizeof(double));
    clt_tensor *A = f64(dev, 3, (int64_t[]){2, 3, 4}, a), *B = f64(dev, 3, (int64_t[]){2, 4, 5}, b);
    clt_tensor *A2 = f64(dev, 2, (int64_t[]){3, 4}, a), *B2 = f64(dev, 2, (int64_t[]){4, 5}, b);
    clt_tensor *v = f64(dev, 1, (int64_t[]){4}, b), *row = f64(dev, 1, (int64_t[]){5}, c);
    clt_tensor *C = f64(dev, 3, (int64_t[]){2, 3, 5}, c), *C2 = f64(dev, 2, (int64_t[]){3, 5}, c);
    clt_tensor *c3 = f64(dev, 1, (int64_t[]){3}, c), *r = NULL;
    const double ab[][2] = {{1, 1}, {0.5, -2}, {1, -0.5}, {0, 1}, {0, 3}, {2, 0}, {1, 0}, {0, 0}};

    for (size_t k = 0; k < sizeof ab / sizeof ab[0]; k++) {
        double beta = ab[k][0], alpha = ab[k][1];
        host_bmm(a, b, p, 1, 3, 4, 5);
        CHECK(clt_addmm(C2, A2, B2, beta, alpha, &r));
        assert_shape(r, 2, (int64_t[]){3, 5});
        host_axpby(c, 15, p, beta, alpha, want, 15);
        expect(r, want, 15, 1e-14);
        clt_tensor_free(r);
        CHECK(clt_addmm(row, A2, B2, beta, alpha, &r)); /* input broadcast */
        assert_shape(r, 2, (int64_t[]){3, 5});
        host_axpby(c, 5, p, beta, alpha, want, 15);
        expect(r, want, 15, 1e-14);
        clt_tensor_free(r);

        host_bmm(a, b, p, 1, 3, 4, 1);
        CHECK(clt_addmv(c3, A2, v, beta, alpha, &r));
        assert_shape(r, 1, (int64_t[]){3});
        host_axpby(c, 3, p, beta, alpha, want, 3);
        expect(r, want, 3, 1e-14);
        clt_tensor_free(r);

        host_bmm(a, b, p, 2, 3, 4, 5);
        CHECK(clt_baddbmm(C, A, B, beta, alpha, &r));
        assert_shape(r, 3, (int64_t[]){2, 3, 5});
        host_axpby(c, 30, p, beta, alpha, want, 30);
        expect(r, want, 30, 1e-14);
        clt_tensor_free(r);

        for (int i = 0; i < 15; i++)
            p[i] += p[15 + i];
        CHECK(clt_addbmm(C2, A, B, beta, alpha, &r));
        assert_shape(r, 2, (int64_t[]){3, 5});
        host_axpby(c, 15, p, beta, alpha, want, 15);
        expect(r, want, 15, 1e-14);
        clt_tensor_free(r);
    }

    /* beta 0 ignores NaN in input; alpha 0 ignores NaN in the product */
    clt_tensor *nan = NULL, *nanm = NULL;
    CHECK(clt_full(dev, CLT_FLOAT64, 2, (int64_t[]){3, 5}, NAN, &nan));
    CHECK(clt_addmm(nan, A2, B2, 0, 1, &r));
    host_bmm(a, b, want, 1, 3, 4, 5);
    expect(r, want, 15, 1e-14);
    clt_tensor_free(r);
    CHECK(clt_full(dev, CLT_FLOAT64, 2, (int64_t[]){3, 4}, NAN, &nanm));
    CHECK(clt_addmm(C2, nanm, B2, 2, 0, &r));
    host_axpby(c, 15, p, 2, 0, want, 15);
    expect(r, want, 15, 1e-14);
    clt_tensor_free(r);

    /* factors of 1 and 0: the GEMM and at most one more launch */
    uint64_t l0 = launches();
    CHECK(clt_addmm(nan, A2, B2, 0, 1, &r));
    clt_tensor_free(r);
    uint64_t l1 = launches();
    CHECK(clt_addmm(C2, A2, B2, 1, 1, &r));
    clt_tensor_free(r);
    uint64_t l2 = launches();
    cr_assert_leq(l2 - l1, l1 - l0 + 1, "beta 1 took %llu launches, beta 0 %llu",
                  (unsigned long long)(l2 - l1), (unsigned long long)(l1 - l0));

    clt_tensor *ts[] = {A, B, A2, B2, v, row, C, C2, c3, nan, nanm};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
    free(a);
    free(b);
    free(c);
    free(p);
    free(want);
}

Test(products, outer_kron)
{
    clt_device *dev = get_device("cpu");
    double *a = values(6, 7), *b = values(12, 8), want[72];
    clt_tensor *u = f64(dev, 1, (int64_t[]){3}, a), *w = f64(dev, 1, (int64_t[]){4}, b);
    clt_tensor *r = NULL;
    CHECK(clt_outer(u, w, &r));
    assert_shape(r, 2, (int64_t[]){3, 4});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            want[i * 4 + j] = a[i] * b[j];
    expect(r, want, 12, 1e-15);
    clt_tensor_free(r);

    /* [2, 3] kron [3, 4] = [6, 12]; [2, 3] kron [4] = [2, 12] */
    clt_tensor *X = f64(dev, 2, (int64_t[]){2, 3}, a), *Y = f64(dev, 2, (int64_t[]){3, 4}, b);
    CHECK(clt_kron(X, Y, &r));
    assert_shape(r, 2, (int64_t[]){6, 12});
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 12; j++)
            want[i * 12 + j] = a[(i / 3) * 3 + j / 4] * b[(i % 3) * 4 + j % 4];
    expect(r, want, 72, 1e-15);
    clt_tensor_free(r);
    CHECK(clt_kron(X, w, &r));
    assert_shape(r, 2, (int64_t[]){2, 12});
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 12; j++)
            want[i * 12 + j] = a[i * 3 + j / 4] * b[j % 4];
    expect(r, want, 24, 1e-15);
    clt_tensor_free(r);

    clt_tensor_free(u);
    clt_tensor_free(w);
    clt_tensor_free(X);
    clt_tensor_free(Y);
    free(a);
    free(b);
}

Test(products, cross)
{
    clt_device *dev = get_device("cpu");
    double *a = values(12, 9), *b = values(3, 10), want[12];
    /* a [4, 3] x b [1, 3] (broadcast) along dim -1 */
    clt_tensor *A = f64(dev, 2, (int64_t[]){4, 3}, a), *B = f64(dev, 2, (int64_t[]){1, 3}, b);
    clt_tensor *r = NULL;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            want[i * 3 + j] = a[i * 3 + j1] * b[j2] - a[i * 3 + j2] * b[j1];
        }
    CHECK(clt_linalg_cross(A, B, -1, &r));
    assert_shape(r, 2, (int64_t[]){4, 3});
    expect(r, want, 12, 1e-15);
    clt_tensor_free(r);

    /* along dim 0 of the transposes */
    clt_tensor *At = NULL, *Bt = NULL;
    CHECK(clt_transpose(A, 0, 1, &At));
    CHECK(clt_transpose(B, 0, 1, &Bt));
    CHECK(clt_cross(At, Bt, 0, &r));
    assert_shape(r, 2, (int64_t[]){3, 4});
    double *got = read_as_f64(r);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            cr_assert(close_enough(got[j * 4 + i], want[i * 3 + j], 1e-15, 1e-15));
    free(got);
    clt_tensor_free(r);

    /* integers */
    clt_tensor *I = NULL, *J = NULL;
    CHECK(clt_to_dtype(A, CLT_INT32, &I));
    CHECK(clt_to_dtype(B, CLT_INT32, &J));
    CHECK(clt_linalg_cross(I, J, 1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    double ia[12], ib[3];
    for (int i = 0; i < 12; i++)
        ia[i] = trunc(a[i]);
    for (int i = 0; i < 3; i++)
        ib[i] = trunc(b[i]);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            want[i * 3 + j] = ia[i * 3 + j1] * ib[j2] - ia[i * 3 + j2] * ib[j1];
        }
    expect(r, want, 12, 0);
    clt_tensor_free(r);

    clt_tensor *ts[] = {A, B, At, Bt, I, J};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
    free(a);
    free(b);
}

Test(products, tensordot)
{
    clt_device *dev = get_device("cpu");
    /* a [2, 3, 4], b [4, 3, 5]: a's dims (1, 2) with b's (1, 0) give [2, 5] */
    double *a = values(24, 11), *b = values(60, 12), want[40];
    clt_tensor *A = f64(dev, 3, (int64_t[]){2, 3, 4}, a), *B = f64(dev, 3, (int64_t[]){4, 3, 5}, b);
    clt_tensor *r = NULL;
    CHECK(clt_tensordot(A, B, 2, (int[]){1, -1}, (int[]){1, 0}, &r));
    assert_shape(r, 2, (int64_t[]){2, 5});
    for (int i = 0; i < 2; i++)
        for (int l = 0; l < 5; l++) {
            double s = 0;
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++)
                    s += a[(i * 3 + j) * 4 + k] * b[(k * 3 + j) * 5 + l];
            want[i * 5 + l] = s;
        }
    expect(r, want, 10, 1e-14);
    clt_tensor_free(r);

    /* the integer form: the last dim of a with the first of b, [2, 3, 3, 5] */
    CHECK(clt_tensordot(A, B, 1, NULL, NULL, &r));
    assert_shape(r, 4, (int64_t[]){2, 3, 3, 5});
    double *got = read_as_f64(r);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 15; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++)
                s += a[i * 4 + k] * b[k * 15 + j];
            cr_assert(close_enough(got[i * 15 + j], s, 1e-14, 1e-12));
        }
    free(got);
    clt_tensor_free(r);

    /* no contraction: an outer product, [2, 3, 4, 4, 3, 5] */
    CHECK(clt_tensordot(A, B, 0, NULL, NULL, &r));
    assert_shape(r, 6, (int64_t[]){2, 3, 4, 4, 3, 5});
    got = read_as_f64(r);
    for (int i = 0; i < 24; i++)
        for (int j = 0; j < 60; j++)
            cr_assert(close_enough(got[i * 60 + j], a[i] * b[j], 1e-15, 0));
    free(got);
    clt_tensor_free(r);

    clt_tensor_free(A);
    clt_tensor_free(B);
    free(a);
    free(b);
}

Test(products, refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *v3 = NULL, *v4 = NULL, *m33 = NULL, *m34 = NULL, *b234 = NULL, *b334 = NULL,
               *d33 = NULL, *i3 = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &v3));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){4}, &v4));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){3, 3}, &m33));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, &m34));
    CHECK(clt_ones(dev, CLT_FLOAT32, 3, (int64_t[]){2, 3, 4}, &b234));
    CHECK(clt_ones(dev, CLT_FLOAT32, 3, (int64_t[]){3, 3, 4}, &b334));
    CHECK(clt_ones(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, &d33));
    CHECK(clt_ones(dev, CLT_INT32, 2, (int64_t[]){3, 3}, &i3));

    assert_error(clt_mm(v3, m33, &r), CLT_ERR_INVALID_ARGUMENT, "clt_mm: self must be a matrix");
    cr_assert_null(r);
    assert_error(clt_mm(m34, m33, &r), CLT_ERR_SHAPE_MISMATCH,
                 "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x3)");
    names_only("clt_mm");
    assert_error(clt_mm(m33, d33, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_mm(i3, i3, &r), CLT_ERR_DTYPE_UNSUPPORTED, NULL);
    assert_error(clt_bmm(m33, b234, &r), CLT_ERR_INVALID_ARGUMENT, "batch1 must be a 3D tensor");
    assert_error(clt_bmm(b234, b334, &r), CLT_ERR_SHAPE_MISMATCH,
                 "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but "
                 "got: [3, 3].");
    assert_error(clt_mv(v3, v3, &r), CLT_ERR_INVALID_ARGUMENT,
                 "vector + matrix @ vector expected, got 1, 1, 1");
    assert_error(clt_mv(m34, v3, &r), CLT_ERR_SHAPE_MISMATCH, "size mismatch, got 3, 3x4,3");
    assert_error(clt_dot(m33, v3, &r), CLT_ERR_INVALID_ARGUMENT,
                 "1D tensors expected, but got 2D and 1D tensors");
    assert_error(clt_vdot(v3, v4, &r), CLT_ERR_SHAPE_MISMATCH,
                 "inconsistent tensor size, expected tensor [3] and src [4]");
    assert_error(clt_addmm(v3, m33, m34, 1, 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "expanded size of the tensor (4) must match the existing size (3)");
    names_only("clt_addmm");
    assert_error(clt_addmm(d33, m33, m33, 1, 1, &r), CLT_ERR_DTYPE_MISMATCH,
                 "self and mat1 must have the same dtype");
    assert_error(clt_addmm(m33, v3, m33, 1, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "mat1 must be a matrix, got 1-D tensor");
    assert_error(clt_addmv(v4, m34, v4, 1, 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "size mismatch, got 4, 3x4,4");
    assert_error(clt_baddbmm(b234, b234, b234, 1, 1, &r), CLT_ERR_SHAPE_MISMATCH, NULL);
    assert_error(clt_addbmm(m33, b234, b334, 1, 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "batch1 and batch2 must have same number of batches, got 2 and 3");
    assert_error(clt_outer(m33, v3, &r), CLT_ERR_INVALID_ARGUMENT,
                 "Expected 1-D argument self, but got 2-D");
    assert_error(clt_linalg_cross(m34, m34, -1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4");
    assert_error(clt_linalg_cross(v3, m33, -1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "inputs must have the same number of dimensions");
    assert_error(clt_cross(m33, d33, 0, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_cross(m33, m33, 2, &r), CLT_ERR_DIM_OUT_OF_RANGE, "Dimension out of range");
    assert_error(clt_tensordot(m34, m34, 1, NULL, NULL, &r), CLT_ERR_SHAPE_MISMATCH,
                 "contracted dimensions need to match, but first has size 4 in dim -1 and "
                 "second has size 3 in dim 0");
    assert_error(clt_tensordot(m34, m34, -1, NULL, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "tensordot expects dims >= 0, but got dims=-1");
    assert_error(clt_tensordot(m33, m33, 2, (int[]){0, 0}, (int[]){0, 1}, &r),
                 CLT_ERR_INVALID_ARGUMENT, "dim 0 appears multiple times");
    assert_error(clt_tensordot(m33, m33, 3, NULL, NULL, &r), CLT_ERR_DIM_OUT_OF_RANGE,
                 "Dimension out of range");
    assert_error(clt_tensordot(m33, m33, 1, (int[]){0}, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(r);

    clt_tensor *ts[] = {v3, v4, m33, m34, b234, b334, d33, i3};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* ---- gradients ------------------------------------------------------------ */

typedef clt_status (*binop)(const clt_tensor *, const clt_tensor *, clt_tensor **);
typedef clt_status (*addop)(const clt_tensor *, const clt_tensor *, const clt_tensor *, double,
                            double, clt_tensor **);

static clt_status f_bin(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return (*(const binop *)ctx)(in[0], in[1], out);
}

typedef struct addctx {
    addop f;
    double beta, alpha;
} addctx;

static clt_status f_add(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const addctx *c = ctx;
    return c->f(in[0], in[1], in[2], c->beta, c->alpha, out);
}

static clt_status f_cross(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_linalg_cross(in[0], in[1], *(const int *)ctx, out);
}

static clt_status f_tensordot(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_tensordot(in[0], in[1], 2, (int[]){1, 2}, (int[]){1, 0}, out);
}

static void grad2(clt_device *dev, binop f, int na, const int64_t *sa, int nb, const int64_t *sb,
                  const double *a, const double *b)
{
    gc_in in[2] = {{na, {0}, a, 1}, {nb, {0}, b, 1}};
    memcpy(in[0].shape, sa, sizeof(int64_t) * (size_t)na);
    memcpy(in[1].shape, sb, sizeof(int64_t) * (size_t)nb);
    gradcheck(dev, f_bin, &f, 2, in);
}

static void grad3(clt_device *dev, addop f, double beta, double alpha, int ni, const int64_t *si,
                  int na, const int64_t *sa, int nb, const int64_t *sb, const double *c,
                  const double *a, const double *b)
{
    addctx ctx = {f, beta, alpha};
    gc_in in[3] = {{ni, {0}, c, 1}, {na, {0}, a, 1}, {nb, {0}, b, 1}};
    memcpy(in[0].shape, si, sizeof(int64_t) * (size_t)ni);
    memcpy(in[1].shape, sa, sizeof(int64_t) * (size_t)na);
    memcpy(in[2].shape, sb, sizeof(int64_t) * (size_t)nb);
    gradcheck(dev, f_add, &ctx, 3, in);
}

Test(products, gradients)
{
    clt_device *dev = get_device("cpu");
    double *a = values(60, 13), *b = values(60, 14), *c = values(60, 15);
    grad2(dev, clt_mm, 2, (int64_t[]){3, 4}, 2, (int64_t[]){4, 2}, a, b);
    grad2(dev, clt_bmm, 3, (int64_t[]){2, 3, 4}, 3, (int64_t[]){2, 4, 2}, a, b);
    grad2(dev, clt_mv, 2, (int64_t[]){3, 4}, 1, (int64_t[]){4}, a, b);
    grad2(dev, clt_dot, 1, (int64_t[]){4}, 1, (int64_t[]){4}, a, b);
    grad2(dev, clt_vdot, 1, (int64_t[]){4}, 1, (int64_t[]){4}, a, b);
    grad2(dev, clt_outer, 1, (int64_t[]){3}, 1, (int64_t[]){4}, a, b);
    grad2(dev, clt_kron, 2, (int64_t[]){2, 3}, 2, (int64_t[]){2, 2}, a, b);
    grad2(dev, clt_kron, 1, (int64_t[]){3}, 2, (int64_t[]){2, 2}, a, b);
    const double ab[][2] = {{1, 1}, {0.5, -2}, {0, 1.5}};
    for (size_t k = 0; k < sizeof ab / sizeof ab[0]; k++) {
        double be = ab[k][0], al = ab[k][1];
        grad3(dev, clt_addmm, be, al, 1, (int64_t[]){2}, 2, (int64_t[]){3, 4}, 2,
              (int64_t[]){4, 2}, c, a, b);
        grad3(dev, clt_addmv, be, al, 1, (int64_t[]){3}, 2, (int64_t[]){3, 4}, 1,
              (int64_t[]){4}, c, a, b);
        grad3(dev, clt_baddbmm, be, al, 3, (int64_t[]){2, 3, 2}, 3, (int64_t[]){2, 3, 4}, 3,
              (int64_t[]){2, 4, 2}, c, a, b);
        grad3(dev, clt_addbmm, be, al, 2, (int64_t[]){3, 2}, 3, (int64_t[]){2, 3, 4}, 3,
              (int64_t[]){2, 4, 2}, c, a, b);
    }
    int dim = -1;
    gc_in cr[2] = {{2, {4, 3}, a, 1}, {2, {1, 3}, b, 1}};
    gradcheck(dev, f_cross, &dim, 2, cr);
    dim = 0;
    gc_in cr0[2] = {{2, {3, 2}, a, 1}, {2, {3, 2}, b, 1}};
    gradcheck(dev, f_cross, &dim, 2, cr0);
    gc_in td[2] = {{3, {2, 3, 4}, a, 1}, {3, {4, 3, 2}, b, 1}};
    gradcheck(dev, f_tensordot, NULL, 2, td);
    free(a);
    free(b);
    free(c);
}

Test(products, grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *m = NULL, *v = NULL, *b = NULL, *r = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, &m));
    CHECK(clt_ones(dev, CLT_FLOAT64, 1, (int64_t[]){3}, &v));
    CHECK(clt_ones(dev, CLT_FLOAT64, 3, (int64_t[]){2, 3, 3}, &b));
    CHECK(clt_set_requires_grad(m, 1));
    CHECK(clt_set_requires_grad(v, 1));
    CHECK(clt_set_requires_grad(b, 1));
#define NAME(call, want)                                                     \
    do {                                                                     \
        CHECK(call);                                                         \
        cr_assert_str_eq(clt_grad_fn_name(r), want, "%s", #call);            \
        clt_tensor_free(r);                                                  \
    } while (0)
    NAME(clt_mm(m, m, &r), "MmBackward0");
    NAME(clt_bmm(b, b, &r), "BmmBackward0");
    NAME(clt_mv(m, v, &r), "MvBackward0");
    NAME(clt_dot(v, v, &r), "DotBackward0");
    NAME(clt_vdot(v, v, &r), "VdotBackward0");
    NAME(clt_outer(v, v, &r), "MulBackward0");
    NAME(clt_addmm(m, m, m, 1, 1, &r), "AddmmBackward0");
    NAME(clt_addmv(v, m, v, 1, 1, &r), "AddmvBackward0");
    NAME(clt_baddbmm(b, b, b, 1, 1, &r), "BaddbmmBackward0");
    NAME(clt_addbmm(m, b, b, 1, 1, &r), "AddbmmBackward0");
    NAME(clt_linalg_cross(m, m, 0, &r), "LinalgCrossBackward0");
    NAME(clt_cross(m, m, 1, &r), "LinalgCrossBackward0");
#undef NAME
    clt_tensor_free(m);
    clt_tensor_free(v);
    clt_tensor_free(b);
}

/* ---- einsum ----------------------------------------------------------------- */

/* The host reference: eq is explicit ("ab,bc->ac"), letters only; every
 * assignment of the letters is visited and its product added to the
 * output element it names (a size-1 dim broadcasts). */
static void host_einsum(const char *eq, int n, const int64_t (*shape)[4], double *const *x,
                        double *out, size_t nout)
{
    int64_t size[128] = {0};
    const char *terms[8];
    int tl[8], k = 0;
    const char *arrow = strstr(eq, "->");
    terms[0] = eq;
    for (const char *c = eq; c < arrow; c++) {
        if (*c == ',') {
            tl[k] = (int)(c - terms[k]);
            terms[++k] = c + 1;
        }
    }
    tl[k] = (int)(arrow - terms[k]);
    cr_assert_eq(k + 1, n);
    const char *o = arrow + 2;
    int ol = (int)strlen(o);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < tl[i]; j++)
            if (size[(int)terms[i][j]] <= 1)
                size[(int)terms[i][j]] = shape[i][j];
    char letters[64];
    int nl = 0;
    for (int c = 0; c < 128; c++)
        if (size[c] > 0)
            letters[nl++] = (char)c;
    for (size_t i = 0; i < nout; i++)
        out[i] = 0;
    int64_t val[128] = {0};
    for (;;) {
        double prod = 1;
        for (int i = 0; i < n; i++) {
            int64_t idx = 0;
            for (int j = 0; j < tl[i]; j++)
                idx = idx * shape[i][j] + (shape[i][j] == 1 ? 0 : val[(int)terms[i][j]]);
            prod *= x[i][idx];
        }
        int64_t oi = 0;
        for (int j = 0; j < ol; j++)
            oi = oi * size[(int)o[j]] + val[(int)o[j]];
        out[oi] += prod;
        int d = nl - 1;
        while (d >= 0 && ++val[(int)letters[d]] == size[(int)letters[d]])
            val[(int)letters[d--]] = 0;
        if (d < 0)
            break;
    }
}

typedef struct ein_case {
    const char *eq, *ref; /* the equation and its explicit, letters-only twin */
    int n;
    int nd[3];
    int64_t shape[3][4];
} ein_case;

static const ein_case ein_cases[] = {
    {"ij,jk->ik", "ij,jk->ik", 2, {2, 2}, {{3, 4}, {4, 5}}},
    {"bij,bjk->bik", "bij,bjk->bik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}},
    {"ii", "ii->", 1, {2}, {{4, 4}}},
    {"ii->i", "ii->i", 1, {2}, {{4, 4}}},
    {"i,j->ij", "i,j->ij", 2, {1, 1}, {{3}, {4}}},
    {"ij->ji", "ij->ji", 1, {2}, {{3, 4}}},
    {"ba", "ba->ab", 1, {2}, {{3, 4}}},
    {"ij", "ij->ij", 1, {2}, {{3, 4}}},
    {"ij->", "ij->", 1, {2}, {{3, 4}}},
    {"i,i", "i,i->", 2, {1, 1}, {{5}, {5}}},
    {"...ij,...jk", "bij,bjk->bik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}},
    {"...ij,jk->...ik", "bij,jk->bik", 2, {3, 2}, {{2, 3, 4}, {4, 5}}},
    {"i...->...", "iab->ab", 1, {3}, {{3, 2, 2}}},
    {"...ii->...i", "bii->bi", 1, {3}, {{2, 3, 3}}},
    {"iij->j", "iij->j", 1, {3}, {{3, 3, 2}}},
    {"ij,jk,kl->il", "ij,jk,kl->il", 3, {2, 2, 2}, {{2, 3}, {3, 4}, {4, 2}}},
    {"bn,anm,bm->ba", "bn,anm,bm->ba", 3, {2, 3, 2}, {{2, 3}, {4, 3, 5}, {2, 5}}},
    {"i,j,k->ijk", "i,j,k->ijk", 3, {1, 1, 1}, {{2}, {3}, {2}}},
    {"ij,ij->ij", "ij,ij->ij", 2, {2, 2}, {{3, 4}, {1, 4}}},
    {"ijk,kji->", "ijk,kji->", 2, {3, 3}, {{2, 3, 4}, {4, 3, 2}}},
    {"Ab,bc", "Ab,bc->Ac", 2, {2, 2}, {{2, 3}, {3, 4}}},
    {" a b , b c -> c a ", "ab,bc->ca", 2, {2, 2}, {{2, 3}, {3, 4}}},
};

static clt_status f_einsum(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ein_case *c = ctx;
    return clt_einsum(c->eq, (const clt_tensor *const *)in, (size_t)c->n, out);
}

Test(products, einsum_table)
{
    clt_device *dev = get_device("cpu");
    for (size_t t = 0; t < sizeof ein_cases / sizeof ein_cases[0]; t++) {
        const ein_case *c = &ein_cases[t];
        double *x[3];
        clt_tensor *in[3], *r = NULL;
        for (int i = 0; i < c->n; i++) {
            size_t m = 1;
            for (int d = 0; d < c->nd[i]; d++)
                m *= (size_t)c->shape[i][d];
            x[i] = values(m, 20 + (unsigned)(t * 3 + (size_t)i));
            in[i] = f64(dev, c->nd[i], c->shape[i], x[i]);
        }
        CHECK(clt_einsum(c->eq, (const clt_tensor *const *)in, (size_t)c->n, &r));
        size_t m = (size_t)clt_tensor_numel(r);
        double *want = malloc((m ? m : 1) * sizeof *want);
        host_einsum(c->ref, c->n, c->shape, x, want, m);
        cr_assert(m > 0, "%s", c->eq);
        double *got = read_as_f64(r);
        for (size_t i = 0; i < m; i++)
            cr_assert(close_enough(got[i], want[i], 1e-13, 1e-12), "%s element %zu: %.12g, want %.12g",
                      c->eq, i, got[i], want[i]);
        free(got);
        free(want);
        clt_tensor_free(r);
        if (c->n <= 3) {
            gc_in g[3];
            for (int i = 0; i < c->n; i++) {
                g[i].ndim = c->nd[i];
                memcpy(g[i].shape, c->shape[i], sizeof g[i].shape);
                g[i].data = x[i];
                g[i].grad = 1;
            }
            gradcheck(dev, f_einsum, c, c->n, g);
        }
        for (int i = 0; i < c->n; i++) {
            clt_tensor_free(in[i]);
            free(x[i]);
        }
    }
}

Test(products, einsum_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = NULL, *b = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, &a));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){5, 5}, &b));
    const clt_tensor *ab[2] = {a, b}, *aa[2] = {a, a};
    assert_error(clt_einsum("ij,jk", ab, 2, &r), CLT_ERR_SHAPE_MISMATCH,
                 "einsum(): subscript j has size 5 for operand 1 which does not broadcast with "
                 "previously seen size 4");
    cr_assert_null(r);
    names_only("clt_einsum");
    assert_error(clt_einsum("ii", ab, 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "subscript i is repeated for operand 0 but the sizes don't match, 4 != 3");
    assert_error(clt_einsum("ij->k", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "output subscript k does not appear in the equation for any input operand");
    assert_error(clt_einsum("ij->ii", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "output subscript i appears more than once in the output");
    assert_error(clt_einsum("i.j", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "found '.' for operand 0 that is not part of any ellipsis");
    assert_error(clt_einsum("ij,jk->ik", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "fewer operands were provided than specified in the equation");
    assert_error(clt_einsum("ij", aa, 2, &r), CLT_ERR_INVALID_ARGUMENT,
                 "more operands were provided than specified in the equation");
    assert_error(clt_einsum("i$", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "invalid subscript given at index 1");
    assert_error(clt_einsum("ijk", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "the number of subscripts in the equation (3) does not match the number of "
                 "dimensions (2) for operand 0 and no ellipsis was given");
    assert_error(clt_einsum("abcdefghi...", aa, 1, &r), CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error(clt_einsum("ij", aa, 0, &r), CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error(clt_einsum(NULL, aa, 1, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(r);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* einsum's operands are handles of its own: in a scope, its operands and
 * result are all freed when the scope ends (a retained operand freed with
 * clt_tensor_free took the scope's reference, and the operand stayed). */
Test(products, einsum_in_a_scope_leaves_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    for (int grad = 0; grad < 2; grad++) {
        clt_scope_begin();
        const double a[4] = {1, 2, 3, 4}, b[2] = {5, -1};
        clt_tensor *ta = NULL, *tb = NULL, *r = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 2}, a, &ta));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){2}, b, &tb));
        CHECK(clt_set_requires_grad(ta, grad));
        const clt_tensor *ops[2] = {ta, tb};
        CHECK(clt_einsum("ii,i->", ops, 2, &r)); /* trace-weighted: sum_i A_ii b_i */
        double got = 0, want = a[0] * b[0] + a[3] * b[1];
        CHECK(clt_tensor_read(r, &got, sizeof got));
        cr_assert_float_eq(got, want, 1e-12, "grad %d: %g, want %g", grad, got, want);
        clt_scope_end();
    }
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%llu bytes left in tensors",
                 (unsigned long long)(after.requested - before.requested));
}
