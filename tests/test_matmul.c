/* test_matmul.c: clt_matmul against a double-precision host torch.matmul:
 * 2-D, batched with broadcast, 1-D operands, transposed and other strided
 * views, float64, both GEMM backends, and the error cases. */
#include <stdio.h>

#include "helpers.h"
#include "internal.h"

static int64_t prod(int n, const int64_t *s)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= s[i];
    return p;
}

/* torch.matmul of logical row-major operands, in double.  Fills the result
 * shape and returns the values (malloc'd). */
static double *ref_matmul(int na, const int64_t *sa, const double *A, int nb, const int64_t *sb,
                          const double *B, int *nr, int64_t *sr)
{
    int64_t M = na == 1 ? 1 : sa[na - 2], K = sa[na - 1];
    int64_t N = nb == 1 ? 1 : sb[nb - 1];
    int ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0;
    int nbat = ba > bb ? ba : bb;
    int64_t bs[CLT_MAX_DIMS];
    for (int d = 0; d < nbat; d++) {
        int ia = ba - nbat + d, ib = bb - nbat + d;
        int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
        bs[d] = da == 1 ? db : da;
    }
    int64_t batch = prod(nbat, bs);
    double *C = calloc((size_t)(batch * M * N + 1), sizeof *C);
    for (int64_t q = 0; q < batch; q++) {
        int64_t rem = q, offa = 0, offb = 0, pa = 1, pb = 1;
        for (int d = nbat - 1; d >= 0; d--) {
            int64_t i = rem % bs[d];
            rem /= bs[d];
            int ia = ba - nbat + d, ib = bb - nbat + d;
            if (ia >= 0) {
                offa += (sa[ia] == 1 ? 0 : i) * pa;
                pa *= sa[ia];
            }
            if (ib >= 0) {
                offb += (sb[ib] == 1 ? 0 : i) * pb;
                pb *= sb[ib];
            }
        }
        const double *a = A + offa * M * K, *b = B + offb * K * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += a[i * K + k] * b[k * N + j];
                C[q * M * N + i * N + j] = s;
            }
    }
    *nr = 0;
    for (int d = 0; d < nbat; d++)
        sr[(*nr)++] = bs[d];
    if (na > 1)
        sr[(*nr)++] = M;
    if (nb > 1)
        sr[(*nr)++] = N;
    return C;
}

static double *random_values(int64_t n, unsigned seed)
{
    float *f = malloc((size_t)(n + 1) * sizeof *f);
    double *d = malloc((size_t)(n + 1) * sizeof *d);
    fill_random(f, (size_t)n, seed);
    for (int64_t i = 0; i < n; i++)
        d[i] = f[i] / 4;
    free(f);
    return d;
}

static clt_tensor *upload(clt_device *dev, clt_dtype dt, int n, const int64_t *s, const double *v)
{
    int64_t cnt = prod(n, s);
    void *h = malloc((size_t)(cnt + 1) * 8);
    for (int64_t i = 0; i < cnt; i++) {
        if (dt == CLT_FLOAT64)
            ((double *)h)[i] = v[i];
        else
            ((float *)h)[i] = (float)v[i];
    }
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, dt, n, s, h, &t));
    free(h);
    return t;
}

/* Multiplies a and b (whose logical values are A and B) and checks the
 * result's shape and values against the host. */
static void expect_product(clt_tensor *a, const double *A, clt_tensor *b, const double *B,
                           int backend)
{
    int nr = 0;
    int64_t sr[CLT_MAX_DIMS];
    double *want = ref_matmul(clt_tensor_ndim(a), clt_tensor_shape(a), A, clt_tensor_ndim(b),
                              clt_tensor_shape(b), B, &nr, sr);
    clt_tensor *c = NULL;
    CHECK(clt__matmul_backend(a, b, backend, &c, "clt_matmul"));
    cr_assert_eq(clt_tensor_ndim(c), nr);
    for (int d = 0; d < nr; d++)
        cr_assert_eq(clt_tensor_shape(c)[d], sr[d], "dim %d: %lld != %lld", d,
                     (long long)clt_tensor_shape(c)[d], (long long)sr[d]);
    cr_assert_eq(clt_tensor_dtype(c), clt_tensor_dtype(a));
    int64_t n = prod(nr, sr);
    int64_t K = clt_tensor_shape(a)[clt_tensor_ndim(a) - 1];
    if (clt_tensor_dtype(c) == CLT_FLOAT64) {
        double *got = malloc((size_t)(n + 1) * sizeof *got);
        CHECK(clt_tensor_read(c, got, (size_t)n * sizeof *got));
        ASSERT_ALLCLOSE_F32(got, want, n, 1e-12, 1e-12);
        free(got);
    } else {
        float *got = read_f32(c);
        ASSERT_ALLCLOSE_F32(got, want, n, 1e-5, 1e-5 * (double)K);
        free(got);
    }
    clt_tensor_free(c);
    free(want);
}

/* Contiguous operands of the given shapes through a backend. */
static void check_shapes(clt_dtype dt, int na, const int64_t *sa, int nb, const int64_t *sb,
                         int backend)
{
    clt_device *dev = get_device("cpu");
    double *A = random_values(prod(na, sa), 11), *B = random_values(prod(nb, sb), 12);
    clt_tensor *a = upload(dev, dt, na, sa, A), *b = upload(dev, dt, nb, sb, B);
    expect_product(a, A, b, B, backend);
    clt_tensor_free(a);
    clt_tensor_free(b);
    free(A);
    free(B);
}

#define SHAPE(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

Test(matmul, one_by_one)
{
    check_shapes(CLT_FLOAT32, SHAPE(1, 1), SHAPE(1, 1), CLT__GEMM_AUTO);
}

Test(matmul, small_2d)
{
    check_shapes(CLT_FLOAT32, SHAPE(3, 5), SHAPE(5, 7), CLT__GEMM_AUTO);
}

Test(matmul, sizes_off_every_tile)
{
    check_shapes(CLT_FLOAT32, SHAPE(33, 65), SHAPE(65, 17), CLT__GEMM_AUTO);
}

Test(matmul, batched_with_2d_right)
{
    check_shapes(CLT_FLOAT32, SHAPE(2, 3, 4), SHAPE(4, 5), CLT__GEMM_AUTO);
}

Test(matmul, batched_broadcast)
{
    check_shapes(CLT_FLOAT32, SHAPE(1, 3, 4), SHAPE(2, 4, 5), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT32, SHAPE(2, 1, 3, 4), SHAPE(3, 4, 2), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT32, SHAPE(3, 4), SHAPE(2, 4, 5), CLT__GEMM_AUTO);
}

Test(matmul, one_dimensional)
{
    check_shapes(CLT_FLOAT32, SHAPE(4), SHAPE(4), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT32, SHAPE(4), SHAPE(4, 3), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT32, SHAPE(3, 4), SHAPE(4), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT32, SHAPE(2, 3, 4), SHAPE(4), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT32, SHAPE(3), SHAPE(2, 3, 4), CLT__GEMM_AUTO);
}

Test(matmul, float64)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no fp64 on %s", clt_device_name(dev));
    check_shapes(CLT_FLOAT64, SHAPE(5, 6), SHAPE(6, 3), CLT__GEMM_AUTO);
    check_shapes(CLT_FLOAT64, SHAPE(2, 5, 6), SHAPE(2, 6, 3), CLT__GEMM_AUTO);
}

/* The transpose of a row-major [r, c] buffer S, as a logical [c, r]
 * operand: a view with swapped strides. */
static clt_tensor *transposed_view(clt_device *dev, int64_t r, int64_t c, const double *S,
                                   double **logical)
{
    clt_tensor *s = upload(dev, CLT_FLOAT32, 2, (int64_t[]){r, c}, S), *v = NULL;
    CHECK(clt__tensor_view(s, 2, (int64_t[]){c, r}, (int64_t[]){1, c}, 0, &v));
    clt_tensor_free(s);
    double *L = malloc((size_t)(r * c) * sizeof *L);
    for (int64_t i = 0; i < c; i++)
        for (int64_t j = 0; j < r; j++)
            L[i * r + j] = S[j * c + i];
    *logical = L;
    return v;
}

static uint64_t launches_of(clt_tensor *a, clt_tensor *b, int backend)
{
    clt_stats before, after;
    clt_tensor *c = NULL;
    CHECK(clt__matmul_backend(a, b, backend, &c, "clt_matmul")); /* warm up: builds the kernels */
    clt_tensor_free(c);
    clt_stats_get(&before);
    CHECK(clt__matmul_backend(a, b, backend, &c, "clt_matmul"));
    clt_stats_get(&after);
    clt_tensor_free(c);
    return after.kernel_launches - before.kernel_launches;
}

Test(matmul, transposed_views_are_not_copied)
{
    clt_device *dev = get_device("cpu");
    /* a: logical [70, 9] from a [9, 70] buffer; b: logical [9, 68] from
     * [68, 9].  More than 64 rows and columns and the small-product kernel
     * off: every transpose takes the packed GEMM on CPU devices (smaller
     * products pick their kernel by layout, so their launch counts
     * differ), and the one-launch GEMM off (it reads B's rows in place
     * only). */
    clt__mm_small_limit = 0;
    clt__gemm_direct_bytes = 0;
    double *SA = random_values(630, 3), *SB = random_values(612, 4), *A = NULL, *B = NULL;
    clt_tensor *a = transposed_view(dev, 9, 70, SA, &A);
    clt_tensor *b = transposed_view(dev, 68, 9, SB, &B);
    cr_assert(!clt_tensor_is_contiguous(a));
    clt_tensor *pa = upload(dev, CLT_FLOAT32, 2, (int64_t[]){70, 9}, A);
    clt_tensor *pb = upload(dev, CLT_FLOAT32, 2, (int64_t[]){9, 68}, B);
    for (int backend = CLT__GEMM_AUTO; backend <= CLT__GEMM_CLBLAST; backend++) {
        /* As many launches as for contiguous operands: a copy would add one. */
        uint64_t plain = launches_of(pa, pb, backend), views = launches_of(a, b, backend);
        cr_assert_eq(views, plain, "backend %d: %llu launches with views, %llu without",
                     backend, (unsigned long long)views, (unsigned long long)plain);
        if (backend == CLT__GEMM_CLBLAST)
            cr_assert_eq(views, 1);
        expect_product(a, A, b, B, backend);
        /* One transposed operand against a plain one. */
        expect_product(a, A, pb, B, backend);
        expect_product(pa, A, b, B, backend);
    }
    clt_tensor_free(pa);
    clt_tensor_free(pb);
    clt_tensor_free(a);
    clt_tensor_free(b);
    free(SA), free(SB), free(A), free(B);
    clt__gemm_direct_bytes = -1;
}

Test(matmul, other_strided_views)
{
    clt_device *dev = get_device("cpu");
    /* a: every second column of a [4, 10] buffer, logical [4, 5]. */
    double *S = random_values(40, 5), *A = malloc(20 * sizeof *A), *B = random_values(15, 6);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            A[i * 5 + j] = S[i * 10 + 2 * j];
    clt_tensor *s = upload(dev, CLT_FLOAT32, 2, (int64_t[]){4, 10}, S), *a = NULL;
    CHECK(clt__tensor_view(s, 2, (int64_t[]){4, 5}, (int64_t[]){10, 2}, 0, &a));
    clt_tensor *b = upload(dev, CLT_FLOAT32, 2, (int64_t[]){5, 3}, B);
    expect_product(a, A, b, B, CLT__GEMM_AUTO);

    /* A batch whose dims are swapped ([3, 2] batch over a [2, 3, 2, 5]
     * buffer): no single batch stride walks it. */
    double *S2 = random_values(60, 7), *A2 = malloc(60 * sizeof *A2);
    for (int p = 0; p < 3; p++)
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < 10; i++)
                A2[(p * 2 + q) * 10 + i] = S2[(q * 3 + p) * 10 + i];
    clt_tensor *s2 = upload(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, 2, 5}, S2), *a2 = NULL;
    CHECK(clt__tensor_view(s2, 4, (int64_t[]){3, 2, 2, 5}, (int64_t[]){10, 30, 5, 1}, 0, &a2));
    expect_product(a2, A2, b, B, CLT__GEMM_AUTO);

    clt_tensor_free(s), clt_tensor_free(a), clt_tensor_free(b), clt_tensor_free(s2);
    clt_tensor_free(a2);
    free(S), free(A), free(B), free(S2), free(A2);
}

Test(matmul, clblast_path_directly)
{
    check_shapes(CLT_FLOAT32, SHAPE(7, 5), SHAPE(5, 9), CLT__GEMM_CLBLAST);
    check_shapes(CLT_FLOAT32, SHAPE(2, 7, 5), SHAPE(2, 5, 9), CLT__GEMM_CLBLAST);
    check_shapes(CLT_FLOAT64, SHAPE(2, 7, 5), SHAPE(2, 5, 9), CLT__GEMM_CLBLAST);
}

Test(matmul, cpu_kernel_path_directly)
{
    clt_device *dev = get_device("cpu");
    if (!clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        cr_skip_test("the CPU GEMM kernel does not serve %s", clt_device_name(dev));
    check_shapes(CLT_FLOAT32, SHAPE(33, 65), SHAPE(65, 17), CLT__GEMM_CPU);
    check_shapes(CLT_FLOAT32, SHAPE(1, 3, 4), SHAPE(2, 4, 5), CLT__GEMM_CPU);
    if (clt__gemm_cpu_suitable(dev, CLT_FLOAT64)) {
        check_shapes(CLT_FLOAT64, SHAPE(33, 65), SHAPE(65, 17), CLT__GEMM_CPU);
        check_shapes(CLT_FLOAT64, SHAPE(70, 3, 4), SHAPE(4, 80), CLT__GEMM_CPU);
    }
    double *SA = random_values(54, 3), *SB = random_values(36, 4), *A = NULL, *B = NULL;
    clt_tensor *a = transposed_view(dev, 9, 6, SA, &A);
    clt_tensor *b = transposed_view(dev, 4, 9, SB, &B);
    expect_product(a, A, b, B, CLT__GEMM_CPU);
    clt_tensor_free(a), clt_tensor_free(b);
    free(SA), free(SB), free(A), free(B);
}

Test(matmul, empty_inner_gives_zeros)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, (int64_t[]){2, 0}, &a));
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, (int64_t[]){0, 3}, &b));
    CHECK(clt_matmul(a, b, &c));
    cr_assert_eq(clt_tensor_numel(c), 6);
    float *h = read_f32(c);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(h[i], 0.0f);
    free(h);
    clt_tensor_free(c);
    clt_tensor_free(a);
    clt_tensor_free(b);
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, (int64_t[]){0, 4}, &a));
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, (int64_t[]){4, 3}, &b));
    CHECK(clt_matmul(a, b, &c));
    cr_assert_eq(clt_tensor_ndim(c), 2);
    cr_assert_eq(clt_tensor_shape(c)[0], 0);
    cr_assert_eq(clt_tensor_shape(c)[1], 3);
    clt_tensor_free(c);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

static clt_status try_matmul(clt_device *d1, clt_dtype t1, int na, const int64_t *sa,
                             clt_device *d2, clt_dtype t2, int nb, const int64_t *sb)
{
    clt_tensor *a = NULL, *b = NULL, *c = (clt_tensor *)&c;
    CHECK(clt_zeros(d1, t1, na, sa, &a));
    CHECK(clt_zeros(d2, t2, nb, sb, &b));
    clt_status st = clt_matmul(a, b, &c);
    cr_assert_null(c, "*out must be NULL on failure");
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

Test(matmul, errors)
{
    clt_device *dev = get_device("cpu");
    clt_status st = try_matmul(dev, CLT_FLOAT32, SHAPE(2, 3), dev, CLT_FLOAT32, SHAPE(4, 5));
    cr_assert_eq(st, CLT_ERR_SHAPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
              "%s", clt_last_error());

    st = try_matmul(dev, CLT_FLOAT32, SHAPE(2, 2, 3), dev, CLT_FLOAT32, SHAPE(3, 3, 4));
    cr_assert_eq(st, CLT_ERR_SHAPE_MISMATCH, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "[2, 2, 3]") && strstr(clt_last_error(), "[3, 3, 4]"),
              "%s", clt_last_error());

    st = try_matmul(dev, CLT_FLOAT32, SHAPE(3), dev, CLT_FLOAT32, SHAPE(4));
    cr_assert_eq(st, CLT_ERR_SHAPE_MISMATCH);

    st = try_matmul(dev, CLT_FLOAT32, SHAPE(2, 3), dev, CLT_FLOAT64, SHAPE(3, 4));
    cr_assert_eq(st, CLT_ERR_DTYPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "expected m1 and m2 to have the same dtype") &&
                  strstr(clt_last_error(), "float32") && strstr(clt_last_error(), "float64"),
              "%s", clt_last_error());

    st = try_matmul(dev, CLT_INT32, SHAPE(2, 3), dev, CLT_INT32, SHAPE(3, 4));
    cr_assert_eq(st, CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert(strstr(clt_last_error(), "int32"), "%s", clt_last_error());

    st = try_matmul(dev, CLT_FLOAT32, 0, NULL, dev, CLT_FLOAT32, SHAPE(3));
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "0D and 1D"), "%s", clt_last_error());

    clt_tensor *c = NULL;
    cr_assert_eq(clt_matmul(NULL, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(c);
}

Test(matmul, mixed_devices)
{
    clt_device *dev = get_device("cpu");
    clt_device *other = second_device(dev);
    clt_status st = try_matmul(dev, CLT_FLOAT32, SHAPE(2, 3), other, CLT_FLOAT32, SHAPE(3, 4));
    cr_assert_eq(st, CLT_ERR_DEVICE_MISMATCH);
    cr_assert(strstr(clt_last_error(), clt_device_label(dev)) &&
                  strstr(clt_last_error(), clt_device_label(other)),
              "%s", clt_last_error());
}

/* ---- accuracy of long sums over K --------------------------------------------- */

/* Element i of a float32 matmul result. */
static double element(const clt_tensor *c, int64_t i)
{
    float *got = read_f32(c);
    double v = got[i];
    free(got);
    return v;
}

/* clt_matmul(a, b)[i] against want, relative tolerance rtol. */
static void expect_close(const clt_tensor *a, const clt_tensor *b, int64_t i, double want,
                         double rtol, const char *what)
{
    clt_tensor *c = NULL;
    CHECK(clt_matmul(a, b, &c));
    double got = element(c, i);
    cr_assert(fabs(got - want) <= rtol * fabs(want), "%s: %.9g, want %.9g (relative error %.2e)",
              what, got, want, fabs(got - want) / fabs(want));
    clt_tensor_free(c);
}

/* Long float32 dot products keep their accuracy: K runs in blocks whose
 * sums are added compensated.  One accumulator per lane over all of K used
 * to stall at 2^24 (2^29 ones gave 2^28) and, short of that, drift: 2^22
 * copies of 0.1 summed 2.5e-3 low, a [2, 2^21] @ [2^21, 2] product (the
 * small-product kernel) 1.7e-2.  Every path of a product with one or two
 * rows: gemv_dot, gemm_small, gemm_small_part with gemv_sum. */
Test(matmul, long_sums_keep_float32_accuracy)
{
    clt_device *dev = get_device("cpu");
    const double tenth = (double)0.1f; /* the float32 value every element holds */
    int64_t K = (int64_t)1 << 22, H = K / 2, K4 = K / 4;
    clt_tensor *x = NULL, *ones = NULL, *w = NULL, *a2 = NULL, *b2 = NULL, *bt = NULL;
    clt_tensor *ok = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &K, 0.1, &x));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &K, &ones));
    expect_close(x, ones, 0, (double)K * tenth, 1e-5, "dot [2^22]");
    CHECK(clt_full(dev, CLT_FLOAT32, 2, (int64_t[]){4, K4}, 0.1, &w));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &K4, &ok));
    expect_close(w, ok, 3, (double)K4 * tenth, 1e-5, "[4, 2^20] @ [2^20]");
    CHECK(clt_full(dev, CLT_FLOAT32, 2, (int64_t[]){2, H}, 0.1, &a2));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){H, 2}, &b2));
    expect_close(a2, b2, 3, (double)H * tenth, 1e-5, "[2, 2^21] @ [2^21, 2]");
    clt_tensor *bv = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, H}, &bv));
    CHECK(clt_transpose(bv, 0, 1, &bt));
    expect_close(a2, bt, 3, (double)H * tenth, 1e-5, "[2, 2^21] @ [2, 2^21]^T");
    clt_tensor_free(bv);

    /* random values against a float64 sum on the host */
    float *hx = malloc((size_t)K * sizeof *hx);
    cr_assert(hx);
    fill_random(hx, (size_t)K, 7);
    double want = 0;
    for (int64_t i = 0; i < K; i++) {
        hx[i] = fabsf(hx[i]); /* in [0, 10]: no cancellation */
        want += hx[i];
    }
    clt_tensor *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &K, hx, &r));
    expect_close(r, ones, 0, want, 1e-6, "random dot [2^22]");

    /* an infinite element stays inf through the compensated sums (inf -
     * inf would make NaN), in whichever block it lies */
    int64_t n = 3 * 4096 + 5;
    for (int64_t at = 0; at < n; at += 4099) {
        for (int64_t i = 0; i < n; i++)
            hx[i] = 1.0f;
        hx[at] = INFINITY;
        clt_tensor *v = NULL, *u = NULL, *c = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, hx, &v));
        CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &u));
        CHECK(clt_matmul(v, u, &c));
        double got = element(c, 0);
        cr_assert(isinf(got) && got > 0, "inf at %lld: %g", (long long)at, got);
        clt_tensor_free(c);
        clt_tensor_free(u);
        clt_tensor_free(v);
    }
    free(hx);
    clt_tensor_free(r);
    clt_tensor_free(x);
    clt_tensor_free(ones);
    clt_tensor_free(w);
    clt_tensor_free(ok);
    clt_tensor_free(a2);
    clt_tensor_free(b2);
    clt_tensor_free(bt);
}

/* ---- long dot products: split over K, strides read in place ----------------- */

/* sum_k x[k * xs] w[k * ws] for k < n in long double on the host; *mag
 * gets the sum of the products' magnitudes. */
static double host_dot(const float *x, int64_t xs, const float *w, int64_t ws, int64_t n,
                       double *mag)
{
    long double s = 0, m = 0;
    for (int64_t k = 0; k < n; k++) {
        long double p = (long double)x[k * xs] * (long double)w[k * ws];
        s += p;
        m += fabsl(p);
    }
    *mag = (double)m;
    return (double)s;
}

/* A long dot product, and a few rows against a long vector, are cut along K
 * into slices summed apart: the result is the same on both devices and on
 * every run (the cut depends on the shape only), and as close to the host's
 * as the uncut sum was. */
Test(matmul, long_dot_products_are_deterministic)
{
    clt_device *dev = get_device("cpu"), *other = second_device(dev);
    int64_t K = 3 * 65536 + 77, M = 3;
    float *hx = malloc((size_t)(M * K) * sizeof *hx), *hw = malloc((size_t)K * sizeof *hw);
    cr_assert(hx && hw);
    fill_random(hx, (size_t)(M * K), 21);
    fill_random(hw, (size_t)K, 22);
    float first[2][3] = {{0}};
    for (int d = 0; d < 2; d++) {
        clt_device *on = d ? other : dev;
        clt_tensor *x = NULL, *w = NULL, *dot = NULL, *mv = NULL;
        CHECK(clt_tensor_from_host(on, CLT_FLOAT32, 2, (int64_t[]){M, K}, hx, &x));
        CHECK(clt_tensor_from_host(on, CLT_FLOAT32, 1, &K, hw, &w));
        for (int run = 0; run < 2; run++) {
            clt_tensor *row = NULL;
            CHECK(clt__tensor_view(x, 1, &K, (int64_t[]){1}, 0, &row));
            CHECK(clt_matmul(row, w, &dot));
            CHECK(clt_matmul(x, w, &mv));
            float got[4];
            CHECK(clt_tensor_read(dot, got, sizeof(float)));
            CHECK(clt_tensor_read(mv, got + 1, 3 * sizeof(float)));
            for (int i = 0; i < 3; i++) {
                double mag, want = host_dot(hx + i * K, 1, hw, 1, K, &mag);
                cr_assert(fabs(got[i + 1] - want) <= 1e-6 * mag, "row %d: %.9g, want %.9g", i,
                          got[i + 1], want);
            }
            cr_assert(memcmp(&got[0], &got[1], sizeof(float)) == 0,
                      "dot %.9g, first row of the product %.9g", got[0], got[1]);
            if (d == 0 && run == 0)
                memcpy(first[0], got + 1, sizeof first[0]);
            cr_assert(memcmp(first[0], got + 1, sizeof first[0]) == 0,
                      "device %d run %d: %.9g %.9g %.9g, first %.9g %.9g %.9g", d, run, got[1],
                      got[2], got[3], first[0][0], first[0][1], first[0][2]);
            clt_tensor_free(row), clt_tensor_free(dot), clt_tensor_free(mv);
        }
        clt_tensor_free(x), clt_tensor_free(w);
    }
    free(hx), free(hw);
}

/* Expanded (stride 0) and strided vectors go into the dot product as they
 * are: as many launches as with contiguous vectors (a copy would add one),
 * and the values of the host. */
static void check_strided_dot(clt_device *dev, clt_dtype dt, int64_t K)
{
    int64_t one = 1, K3 = 3 * K, M = 2;
    float *hs = malloc((size_t)K3 * sizeof *hs), *hm = malloc((size_t)(M * K) * sizeof *hm);
    cr_assert(hs && hm);
    fill_random(hs, (size_t)K3, 31);
    fill_random(hm, (size_t)(M * K), 32);
    double *ds = malloc((size_t)K3 * sizeof *ds), *dm = malloc((size_t)(M * K) * sizeof *dm);
    for (int64_t i = 0; i < K3; i++)
        ds[i] = hs[i];
    for (int64_t i = 0; i < M * K; i++)
        dm[i] = hm[i];
    float half = 0.5f;
    clt_tensor *s = upload(dev, dt, 1, &K3, ds), *m = upload(dev, dt, 2, (int64_t[]){M, K}, dm);
    clt_tensor *c = NULL, *e = NULL, *st3 = NULL, *row = NULL, *plain = NULL, *plain2 = NULL;
    CHECK(clt_full(dev, dt, 1, &one, half, &c));
    CHECK(clt_expand(c, 1, &K, &e));
    CHECK(clt__tensor_view(s, 1, &K, (int64_t[]){3}, 1, &st3)); /* s[1], s[4], ... */
    CHECK(clt__tensor_view(m, 1, &K, (int64_t[]){1}, K, &row)); /* the second row */
    CHECK(clt_contiguous(st3, &plain));
    CHECK(clt_contiguous(e, &plain2));
    struct {
        clt_tensor *a, *b, *pa, *pb;
        const float *x, *w;
        int64_t xs, ws;
        int64_t n; /* result elements */
        const char *what;
    } cases[] = {
        {e, e, plain2, plain2, &half, &half, 0, 0, 1, "expanded . expanded"},
        {e, st3, plain2, plain, &half, hs + 1, 0, 3, 1, "expanded . stride 3"},
        {st3, row, plain, row, hs + 1, hm + K, 3, 1, 1, "stride 3 . contiguous"},
        {m, e, m, plain2, hm, &half, 1, 0, M, "[2, K] @ expanded"},
        {m, st3, m, plain, hm, hs + 1, 1, 3, M, "[2, K] @ stride 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t views = launches_of(cases[i].a, cases[i].b, CLT__GEMM_AUTO);
        uint64_t copies = launches_of(cases[i].pa, cases[i].pb, CLT__GEMM_AUTO);
        cr_assert_eq(views, copies, "%s (%s, K %lld): %llu launches, %llu with copies",
                     cases[i].what, clt_dtype_name(dt), (long long)K,
                     (unsigned long long)views, (unsigned long long)copies);
        clt_tensor *r = NULL;
        CHECK(clt_matmul(cases[i].a, cases[i].b, &r));
        double got[2];
        if (dt == CLT_FLOAT64) {
            CHECK(clt_tensor_read(r, got, (size_t)cases[i].n * sizeof(double)));
        } else {
            float g[2];
            CHECK(clt_tensor_read(r, g, (size_t)cases[i].n * sizeof(float)));
            got[0] = g[0], got[1] = g[1];
        }
        for (int64_t j = 0; j < cases[i].n; j++) {
            double mag, want = host_dot(cases[i].x + j * K, cases[i].xs, cases[i].w,
                                        cases[i].ws, K, &mag);
            double tol = (dt == CLT_FLOAT64 ? 1e-14 : 1e-6) * mag;
            cr_assert(fabs(got[j] - want) <= tol, "%s (%s, K %lld) [%lld]: %.17g, want %.17g",
                      cases[i].what,
                      clt_dtype_name(dt), (long long)K, (long long)j, got[j], want);
        }
        clt_tensor_free(r);
    }
    clt_tensor_free(s), clt_tensor_free(m), clt_tensor_free(c), clt_tensor_free(e);
    clt_tensor_free(st3), clt_tensor_free(row), clt_tensor_free(plain), clt_tensor_free(plain2);
    free(hs), free(hm), free(ds), free(dm);
}

Test(matmul, strided_and_expanded_vectors_are_not_copied)
{
    clt_device *dev = get_device("cpu");
    if (!clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        cr_skip_test("the CPU GEMM kernel does not serve %s", clt_device_name(dev));
    /* short (one slice, the tail of K % 16 by elements) and long (sliced) */
    check_strided_dot(dev, CLT_FLOAT32, 1000);
    check_strided_dot(dev, CLT_FLOAT32, 2 * 65536 + 5);
    if (clt__gemm_cpu_suitable(dev, CLT_FLOAT64)) {
        check_strided_dot(dev, CLT_FLOAT64, 1000);
        check_strided_dot(dev, CLT_FLOAT64, 2 * 65536 + 5);
    }
}

/* One operand a [1, c] row expanded to [r, c] (stride 0 down the rows),
 * or with `cols` a [r, 1] column expanded to [r, c] (stride 0 along the
 * rows; B only), the other `other` with the logical values O, on the side
 * `on_a` says: on the CPU kernel it is read in place (as many launches as
 * with a contiguous copy of it, which would add one; a repeated column
 * that mm_small would take is copied), the product has the bits of the
 * product with that copy, and the host's values. */
static void check_expanded(clt_device *dev, clt_dtype dt, bool on_a, bool cols, int64_t r,
                           int64_t c, clt_tensor *other, const double *O, const char *what)
{
    double *row = random_values(cols ? r : c, 41), *E = malloc((size_t)(r * c) * sizeof *E);
    for (int64_t i = 0; i < r * c; i++)
        E[i] = cols ? row[i / c] : row[i % c];
    clt_tensor *t = upload(dev, dt, 2, cols ? (int64_t[]){r, 1} : (int64_t[]){1, c}, row);
    clt_tensor *e = NULL, *plain = NULL;
    CHECK(clt_expand(t, 2, (int64_t[]){r, c}, &e));
    cr_assert_eq(clt_tensor_strides(e)[cols ? 1 : 0], 0);
    CHECK(clt_contiguous(e, &plain));
    clt_tensor *a = on_a ? e : other, *b = on_a ? other : e;
    clt_tensor *pa = on_a ? plain : other, *pb = on_a ? other : plain;
    /* The rows of every batch of a contiguous A: what mm_small is asked. */
    size_t rows = (size_t)(clt_tensor_numel(a) / r);
    uint64_t copied = cols && dt == CLT_FLOAT32 &&
                      clt__mm_small_fits(clt_tensor_device(a), false, rows, (size_t)c, (size_t)r);
    uint64_t views = launches_of(a, b, CLT__GEMM_AUTO), copies = launches_of(pa, pb, CLT__GEMM_AUTO);
    cr_assert_eq(views, copies + copied, "%s: %llu launches, %llu with a contiguous operand",
                 what, (unsigned long long)views, (unsigned long long)copies);
    clt_tensor *rv = NULL, *rc = NULL;
    CHECK(clt_matmul(a, b, &rv));
    CHECK(clt_matmul(pa, pb, &rc));
    int64_t n = clt_tensor_numel(rv);
    size_t bytes = (size_t)n * clt_dtype_size(dt);
    unsigned char *gv = malloc(bytes + 1), *gc = malloc(bytes + 1);
    CHECK(clt_tensor_read(rv, gv, bytes));
    CHECK(clt_tensor_read(rc, gc, bytes));
    for (int64_t i = 0; i < n; i++) {
        size_t es = clt_dtype_size(dt);
        cr_assert(memcmp(gv + (size_t)i * es, gc + (size_t)i * es, es) == 0,
                  "%s (%s): element %lld differs from the product with a copy", what,
                  clt_dtype_name(dt), (long long)i);
    }
    expect_product(a, on_a ? E : O, b, on_a ? O : E, CLT__GEMM_AUTO);
    /* CLBlast takes no leading dimension 0: its copy gives the same values. */
    expect_product(a, on_a ? E : O, b, on_a ? O : E, CLT__GEMM_CLBLAST);
    free(gv), free(gc), free(row), free(E);
    clt_tensor_free(rv), clt_tensor_free(rc), clt_tensor_free(t), clt_tensor_free(e);
    clt_tensor_free(plain);
}

#define check_expanded_rows(dev, dt, on_a, r, c, other, O, what)              \
    check_expanded(dev, dt, on_a, false, r, c, other, O, what)

/* The batched cases of check_expanded_rows_dtype.  With the small-product
 * limit at 0, 6 rows take the few-row kernel (partial sums over blocks of
 * K) and 18, a batch of 3 folded, the packed GEMM. */
static void check_expanded_batches(clt_device *dev, clt_dtype dt)
{
    int64_t M = 6, K = 600, N = 10;
    double *B3 = random_values(3 * K * N, 44), *A3 = random_values(3 * M * K, 45);
    clt_tensor *b3 = upload(dev, dt, 3, (int64_t[]){3, K, N}, B3);
    clt_tensor *a3 = upload(dev, dt, 3, (int64_t[]){3, M, K}, A3);
    check_expanded_rows(dev, dt, true, M, K, b3, B3, "expanded @ [3, K, N]");
    check_expanded_rows(dev, dt, false, K, N, a3, A3, "[3, M, K] @ expanded");
    check_expanded(dev, dt, false, true, K, N, a3, A3, "[3, M, K] @ expanded column");
    /* [1, K, N] repeated over a batch of 3. */
    double *B1 = random_values(K * N, 46), *B1x3 = malloc((size_t)(3 * K * N) * sizeof *B1x3);
    for (int q = 0; q < 3; q++)
        memcpy(B1x3 + q * K * N, B1, (size_t)(K * N) * sizeof *B1);
    clt_tensor *b1 = upload(dev, dt, 3, (int64_t[]){1, K, N}, B1), *b1x3 = NULL;
    CHECK(clt_expand(b1, 3, (int64_t[]){3, K, N}, &b1x3));
    check_expanded_rows(dev, dt, true, M, K, b1x3, B1x3, "expanded @ [1, K, N] expanded to 3");
    clt_tensor_free(b3), clt_tensor_free(a3), clt_tensor_free(b1), clt_tensor_free(b1x3);
    free(B3), free(A3), free(B1), free(B1x3);
}

/* An expanded row on either side, through every CPU kernel that the
 * shapes pick: mm_small (float32), the matrix-vector and few-row kernels,
 * and the packed GEMM (the small-product limit at 0); batched against a
 * 3-D operand, and against one repeated over the batch (stride 0), which
 * a repeated row must not fold into a taller product where its copy would
 * not. */
static void check_expanded_rows_dtype(clt_device *dev, clt_dtype dt)
{
    static const struct {
        int64_t M, K, N;
    } sizes[] = {{3, 5, 7},   {8, 300, 1},   {1, 40, 9},       {100, 40, 3},
                 {70, 9, 68}, {5, 70, 130}, {16, 4096, 512}};
    for (int small = 0; small < 2; small++) {
        clt__mm_small_limit = small ? (size_t)1 << 23 : 0;
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            int64_t M = sizes[i].M, K = sizes[i].K, N = sizes[i].N;
            char what[96];
            double *OB = random_values(K * N, 42), *OA = random_values(M * K, 43);
            clt_tensor *ob = upload(dev, dt, 2, (int64_t[]){K, N}, OB);
            clt_tensor *oa = upload(dev, dt, 2, (int64_t[]){M, K}, OA);
            snprintf(what, sizeof what, "[%lld, %lld] expanded @ [%lld, %lld], limit %zu",
                     (long long)M, (long long)K, (long long)K, (long long)N,
                     clt__mm_small_limit);
            if (M > 1)
                check_expanded_rows(dev, dt, true, M, K, ob, OB, what);
            snprintf(what, sizeof what, "[%lld, %lld] @ [%lld, %lld] expanded, limit %zu",
                     (long long)M, (long long)K, (long long)K, (long long)N,
                     clt__mm_small_limit);
            if (N > 1)
                check_expanded_rows(dev, dt, false, K, N, oa, OA, what);
            snprintf(what, sizeof what, "[%lld, %lld] @ [%lld, 1] expanded to %lld, limit %zu",
                     (long long)M, (long long)K, (long long)K, (long long)N,
                     clt__mm_small_limit);
            if (N > 1 && K > 1)
                check_expanded(dev, dt, false, true, K, N, oa, OA, what);
            clt_tensor_free(ob), clt_tensor_free(oa);
            free(OB), free(OA);
        }
        check_expanded_batches(dev, dt);
        /* A transposed A of 40 rows against 5 columns: the few-row kernel
         * with the columns of B as its vectors. */
        int64_t M = 40, K = 30, N = 5;
        double *AT = random_values(K * M, 47), *OA = malloc((size_t)(M * K) * sizeof *OA);
        for (int64_t i = 0; i < M * K; i++)
            OA[i] = AT[(i % K) * M + i / K];
        clt_tensor *at = upload(dev, dt, 2, (int64_t[]){K, M}, AT), *oa = NULL;
        CHECK(clt_transpose(at, 0, 1, &oa));
        check_expanded(dev, dt, false, true, K, N, oa, OA, "[30, 40] transposed @ expanded column");
        clt_tensor_free(oa), clt_tensor_free(at);
        free(AT), free(OA);
    }
    clt__mm_small_limit = (size_t)1 << 23;
}

Test(matmul, expanded_rows_and_columns_are_read_in_place)
{
    clt_device *dev = get_device("cpu");
    if (!clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        cr_skip_test("the CPU GEMM kernel does not serve %s", clt_device_name(dev));
    check_expanded_rows_dtype(dev, CLT_FLOAT32);
    if (clt__gemm_cpu_suitable(dev, CLT_FLOAT64))
        check_expanded_rows_dtype(dev, CLT_FLOAT64);
}
