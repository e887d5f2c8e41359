/* test_gemm_cpu.c: the CPU-tuned GEMM (clt__gemm_cpu) called on raw buffers
 * against a host reference accumulated in double: odd sizes, transposes,
 * offsets, leading dimensions, batches, K == 0 and errors, in float32 and
 * float64, with the native tile and every machine class's tile. */
#include <float.h>
#include <limits.h>
#include <stdint.h>

#include "helpers.h"
#include "internal.h"

typedef struct gemm_case {
    bool ta, tb;
    size_t M, N, K;
    size_t a_off, b_off, c_off;    /* elements before the first matrix */
    size_t lda_pad, ldb_pad, ldc_pad; /* leading dimension beyond the width */
    size_t batch;
    size_t sa_pad, sb_pad, sc_pad; /* batch stride beyond one matrix */
    bool a_shared, b_shared;       /* batch stride 0: one matrix for every batch */
    bool exact;                    /* small integers: every sum is exact */
    clt_dtype dtype;               /* float32 (the default) or float64 */
} gemm_case;

static const float SENTINEL = -12345.0f;

/* A tensor of dtype (float32 or float64) holding the n values (at least
 * one) of h. */
static clt_tensor *upload_as(clt_device *dev, clt_dtype dtype, const float *h, size_t n)
{
    int64_t shape[1] = {(int64_t)n};
    clt_tensor *t = NULL;
    if (dtype == CLT_FLOAT32) {
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, h, &t));
        return t;
    }
    double *d = malloc(n * sizeof *d);
    cr_assert_not_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = h[i];
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, shape, d, &t));
    free(d);
    return t;
}

static clt_tensor *upload(clt_device *dev, const float *h, size_t n)
{
    return upload_as(dev, CLT_FLOAT32, h, n);
}

/* The values of a float32 or float64 tensor, as doubles in a new array. */
static double *read_as_double(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *d = malloc((n ? n : 1) * sizeof *d);
    cr_assert_not_null(d);
    if (clt_tensor_dtype(t) == CLT_FLOAT64) {
        CHECK(clt_tensor_read(t, d, n * sizeof *d));
        return d;
    }
    float *f = read_f32(t);
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
    free(f);
    return d;
}

/* Integers in [-3, 3]: float32 sums of up to 2^20 products stay exact. */
static void fill_small_ints(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((int)((seed >> 8) % 7) - 3);
    }
}

static void run_case(clt_device *dev, const gemm_case *g)
{
    size_t M = g->M, N = g->N, K = g->K, batch = g->batch;
    size_t arows = g->ta ? K : M, acols = g->ta ? M : K;
    size_t brows = g->tb ? N : K, bcols = g->tb ? K : N;
    size_t lda = acols + g->lda_pad, ldb = bcols + g->ldb_pad, ldc = N + g->ldc_pad;
    size_t sa = g->a_shared ? 0 : arows * lda + g->sa_pad;
    size_t sb = g->b_shared ? 0 : brows * ldb + g->sb_pad, sc = M * ldc + g->sc_pad;
    size_t na = g->a_off + (g->a_shared ? 1 : batch) * (arows * lda + g->sa_pad) + 1;
    size_t nb = g->b_off + (g->b_shared ? 1 : batch) * (brows * ldb + g->sb_pad) + 1;
    size_t nc = g->c_off + batch * sc + 1;

    float *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    float *hc = malloc(nc * sizeof *hc);
    cr_assert(ha && hb && hc);
    if (g->exact) {
        fill_small_ints(ha, na, 11u + (unsigned)M);
        fill_small_ints(hb, nb, 29u + (unsigned)N);
    } else {
        fill_random(ha, na, 11u + (unsigned)M);
        fill_random(hb, nb, 29u + (unsigned)N);
    }
    for (size_t i = 0; i < nc; i++)
        hc[i] = SENTINEL;

    clt_tensor *ta = upload_as(dev, g->dtype, ha, na), *tb = upload_as(dev, g->dtype, hb, nb);
    clt_tensor *tc = upload_as(dev, g->dtype, hc, nc);
    CHECK(clt__gemm_cpu(dev, g->dtype, g->ta, g->tb, M, N, K, clt__mem(ta), g->a_off, lda, sa,
                        clt__mem(tb), g->b_off, ldb, sb, clt__mem(tc), g->c_off, ldc, sc, batch));
    double *got = read_as_double(tc);
    double eps = g->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;

    /* Every element of C outside the M x N results must keep its value. */
    bool *hit = calloc(nc, sizeof *hit);
    cr_assert_not_null(hit);
    for (size_t b = 0; b < batch; b++) {
        const float *A = ha + g->a_off + b * sa, *B = hb + g->b_off + b * sb;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                double ref = 0, mag = 0;
                for (size_t k = 0; k < K; k++) {
                    double x = g->ta ? A[k * lda + i] : A[i * lda + k];
                    double y = g->tb ? B[j * ldb + k] : B[k * ldb + j];
                    ref += x * y;
                    mag += fabs(x * y);
                }
                size_t at = g->c_off + b * sc + i * ldc + j;
                hit[at] = true;
                /* Summation of K products: |error| <= ~K eps sum|xy|. */
                double tol = g->exact ? 0.0 : (double)(K + 2) * eps * mag;
                cr_assert(fabs(got[at] - ref) <= tol,
                          "%s ta=%d tb=%d %zux%zux%zu batch %zu/%zu C[%zu][%zu]: got %.17g, "
                          "want %.17g (tolerance %.3g)",
                          clt_dtype_name(g->dtype), g->ta, g->tb, M, N, K, b, batch, i, j,
                          got[at], ref, tol);
            }
    }
    for (size_t i = 0; i < nc; i++)
        if (!hit[i])
            cr_assert_eq(got[i], SENTINEL, "%s ta=%d tb=%d %zux%zux%zu: element %zu of C "
                         "outside the result was overwritten with %g", clt_dtype_name(g->dtype),
                         g->ta, g->tb, M, N, K, i, got[i]);
    free(hit);
    free(got);
    free(ha);
    free(hb);
    free(hc);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tc);
}

static void all_transposes(clt_device *dev, gemm_case g)
{
    for (int t = 0; t < 4; t++) {
        g.ta = t & 1;
        g.tb = (t >> 1) & 1;
        run_case(dev, &g);
    }
}

Test(gemm_cpu, odd_sizes_all_transposes)
{
    clt_device *dev = get_device("cpu");
    const size_t sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {65, 33, 129}, {300, 200, 100}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        all_transposes(dev, (gemm_case){.M = sizes[s][0], .N = sizes[s][1], .K = sizes[s][2],
                                        .batch = 1});
}

/* K larger than the kernel's K block: partial sums go through C. */
Test(gemm_cpu, k_spanning_several_blocks)
{
    clt_device *dev = get_device("cpu");
    all_transposes(dev, (gemm_case){.M = 37, .N = 70, .K = 600, .batch = 1});
}

Test(gemm_cpu, offsets_and_leading_dimensions)
{
    clt_device *dev = get_device("cpu");
    all_transposes(dev, (gemm_case){.M = 29, .N = 47, .K = 19, .a_off = 5, .b_off = 17,
                                    .c_off = 3, .lda_pad = 3, .ldb_pad = 9, .ldc_pad = 6,
                                    .batch = 1});
}

Test(gemm_cpu, batches_with_strides)
{
    clt_device *dev = get_device("cpu");
    all_transposes(dev, (gemm_case){.M = 13, .N = 35, .K = 21, .a_off = 2, .b_off = 1,
                                    .c_off = 4, .lda_pad = 1, .ldb_pad = 2, .ldc_pad = 3,
                                    .batch = 3, .sa_pad = 7, .sb_pad = 5, .sc_pad = 11});
}

Test(gemm_cpu, batches_sharing_one_operand)
{
    clt_device *dev = get_device("cpu");
    run_case(dev, &(gemm_case){.M = 20, .N = 40, .K = 33, .batch = 4, .a_shared = true});
    run_case(dev, &(gemm_case){.M = 20, .N = 40, .K = 33, .batch = 4, .b_shared = true,
                               .tb = true, .sc_pad = 3});
}

/* More than 64 column panels (2100 columns: 65 full panels and one of 20
 * columns): gemm_pack takes at most 64 panels per work-item, so B is
 * packed in two column groups, the second starting at panel 64 with a full
 * and a partial panel, and K is split into 16-row blocks and a remainder. */
Test(gemm_cpu, wide_b_packed_in_column_groups)
{
    clt_device *dev = get_device("cpu");
    all_transposes(dev, (gemm_case){.M = 65, .N = 2100, .K = 37, .b_off = 3, .ldb_pad = 5,
                                    .c_off = 1, .batch = 2, .sb_pad = 2});
    run_case(dev, &(gemm_case){.M = 70, .N = 2100, .K = 37, .batch = 2, .b_shared = true});
}

/* Packed panels of one batch beyond the scratch limit (64 MiB): the batches
 * go through in several chunks that reuse the scratch buffers. */
Test(gemm_cpu, batches_in_several_chunks)
{
    clt_device *dev = get_device("cpu");
    run_case(dev, &(gemm_case){.M = 2, .N = 3, .K = 400000, .batch = 3, .ta = true,
                               .exact = true});
    run_case(dev, &(gemm_case){.M = 3, .N = 2, .K = 400000, .batch = 3, .a_shared = true,
                               .exact = true});
}

Test(gemm_cpu, second_device)
{
    clt_device *dev = second_device(get_device("cpu"));
    run_case(dev, &(gemm_case){.M = 50, .N = 70, .K = 90, .ta = true, .c_off = 2, .ldc_pad = 1,
                               .batch = 2});
}

/* An empty sum is zero, as in PyTorch; only the M x N block is written. */
Test(gemm_cpu, k_zero_writes_zeros)
{
    clt_device *dev = get_device("cpu");
    const size_t M = 5, N = 18, ldc = 20, n = M * ldc;
    float h[100];
    for (size_t i = 0; i < n; i++)
        h[i] = SENTINEL;
    clt_tensor *c = upload(dev, h, n);
    CHECK(clt__gemm_cpu(dev, CLT_FLOAT32, false, false, M, N, 0, NULL, 0, 1, 0, NULL, 0, N, 0,
                            clt__mem(c), 0, ldc, 0, 1));
    float *got = read_f32(c);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], i % ldc < N ? 0.0f : SENTINEL, "element %zu: %g", i,
                     (double)got[i]);
    free(got);
    clt_tensor_free(c);
}

/* NaN and infinity reach exactly the elements they touch, although the
 * kernel pads its tiles with zeros. */
Test(gemm_cpu, nan_and_inf_propagate)
{
    clt_device *dev = get_device("cpu");
    enum { M = 3, N = 17, K = 2 };
    float ha[M * K] = {1, 2, NAN, 1, 3, 4};
    float hb[K * N];
    for (int i = 0; i < K * N; i++)
        hb[i] = 1.0f;
    hb[5] = INFINITY; /* B[0][5] */
    float hc[M * N];
    clt_tensor *a = upload(dev, ha, M * K), *b = upload(dev, hb, K * N),
               *c = upload(dev, hc, M * N);
    CHECK(clt__gemm_cpu(dev, CLT_FLOAT32, false, false, M, N, K, clt__mem(a), 0, K, 0, clt__mem(b),
                        0, N, 0, clt__mem(c), 0, N, 0, 1));
    float *got = read_f32(c);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int k = 0; k < K; k++)
                want += (double)ha[i * K + k] * hb[k * N + j];
            cr_assert(close_enough(got[i * N + j], want, 0, 0), "C[%d][%d]: got %g, want %g", i,
                      j, (double)got[i * N + j], want);
        }
    cr_assert(isnan(got[1 * N + 0]) && isinf(got[0 * N + 5]) && got[0 * N + 4] == 3.0f);
    free(got);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

Test(gemm_cpu, empty_is_a_no_op)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt__gemm_cpu(dev, CLT_FLOAT32, false, false, 0, 4, 3, NULL, 0, 3, 0, NULL, 0, 4, 0, NULL,
                        0, 4, 0, 1));
    CHECK(clt__gemm_cpu(dev, CLT_FLOAT32, true, true, 4, 4, 3, NULL, 0, 4, 0, NULL, 0, 3, 0, NULL,
                        0, 4, 0, 0));
}

Test(gemm_cpu, errors)
{
    clt_device *dev = get_device("cpu");
    float h[16] = {0};
    clt_tensor *t = upload(dev, h, 16);
    cl_mem m = clt__mem(t);
    clt_status st = clt__gemm_cpu(dev, CLT_FLOAT32, false, false, 2, 4, 2, m, 0, 2, 0, m, 0, 4, 0,
                                  m, 0, 3, 0, 1);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "ldc=3") != NULL, "%s", clt_last_error());
    st = clt__gemm_cpu(dev, CLT_FLOAT32, true, false, 3, 2, 2, m, 0, 2, 0, m, 0, 2, 0, m, 0, 2, 0,
                       1);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "lda=2 < M=3 with trans_a");
    st = clt__gemm_cpu(dev, CLT_FLOAT32, false, false, 2, 2, 2, NULL, 0, 2, 0, m, 0, 2, 0, m, 0, 2,
                       0, 1);
    cr_assert_eq(st, CLT_ERR_NULL_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "'A'") != NULL, "%s", clt_last_error());
    st = clt__gemm_cpu(NULL, CLT_FLOAT32, false, false, 2, 2, 2, m, 0, 2, 0, m, 0, 2, 0, m, 0, 2, 0,
                       1);
    cr_assert_eq(st, CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(t);
}

clt_status clt__gemm_cpu_warmup(clt_device *dev, clt_dtype dtype);

/* The warm-up builds one program per dtype (clt_warmup asks for float32
 * and, where the device has it, float64), once; products then work. */
Test(gemm_cpu, warmup_builds_the_program)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64};
    for (int i = 0; i < 2; i++) {
        if (!clt__gemm_cpu_suitable(dev, dts[i]))
            continue;
        size_t n0 = clt__programs_count(dev);
        CHECK(clt__gemm_cpu_warmup(dev, dts[i]));
        size_t n1 = clt__programs_count(dev);
        cr_assert_eq(n1, n0 + 1, "%s: %zu programs, then %zu", clt_dtype_name(dts[i]), n0, n1);
        CHECK(clt__gemm_cpu_warmup(dev, dts[i]));
        cr_assert_eq(clt__programs_count(dev), n1, "built again");
        gemm_case g = {.M = 40, .N = 70, .K = 33, .batch = 1, .dtype = dts[i]};
        run_case(dev, &g);
    }
    cr_assert_eq(clt__gemm_cpu_warmup(NULL, CLT_FLOAT32), CLT_ERR_NULL_ARGUMENT);
}

Test(gemm_cpu, suitable_for_cpu_float32_and_float64)
{
    clt_device *dev = get_device("cpu");
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    cr_assert(clt__gemm_cpu_suitable(dev, CLT_FLOAT32));
    /* PoCL's CPU devices have fp64 with hardware FMA. */
    cr_assert_eq(clt__gemm_cpu_suitable(dev, CLT_FLOAT64), info.fp64 != 0);
    cr_assert(!clt__gemm_cpu_suitable(dev, CLT_FLOAT16));
    cr_assert(!clt__gemm_cpu_suitable(dev, CLT_INT32));
    cr_assert(!clt__gemm_cpu_suitable(NULL, CLT_FLOAT32));
}

Test(gemm_cpu, other_dtypes_and_unknown_classes_are_errors)
{
    clt_device *dev = get_device("cpu");
    float h[16] = {0};
    clt_tensor *t = upload(dev, h, 16);
    cl_mem m = clt__mem(t);
    clt_status st = clt__gemm_cpu(dev, CLT_FLOAT16, false, false, 2, 2, 2, m, 0, 2, 0, m, 0, 2,
                                  0, m, 0, 2, 0, 1);
    cr_assert_eq(st, CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert(strstr(clt_last_error(), "float16") != NULL, "%s", clt_last_error());
    setenv("CLTENSOR_GEMM_CLASS", "avx2", 1);
    st = clt__gemm_cpu(dev, CLT_FLOAT32, false, false, 2, 2, 2, m, 0, 2, 0, m, 0, 2, 0, m, 0, 2,
                       0, 1);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "CLTENSOR_GEMM_CLASS is 'avx2'") != NULL, "%s",
              clt_last_error());
    unsetenv("CLTENSOR_GEMM_CLASS");
    clt_tensor_free(t);
}

/* The class follows PoCL's LLVM CPU name where it knows it (PoCL reports
 * 16 floats natively on Zen 4 even when told to target haswell), else the
 * native float vector width; CLTENSOR_GEMM_CLASS decides when set. */
Test(gemm_cpu, class_from_the_device)
{
    cr_assert_eq(clt__gemm_class("pthread-skylake-avx512-AMD EPYC", 16, NULL), 512);
    cr_assert_eq(clt__gemm_class("cpu-znver4-AMD Ryzen 9 7950X", 16, NULL), 512);
    cr_assert_eq(clt__gemm_class("pthread-haswell-AMD EPYC", 16, NULL), 256);
    cr_assert_eq(clt__gemm_class("cpu-znver3-AMD Ryzen 9 5900X 12-Core Processor", 8, NULL),
                 256);
    cr_assert_eq(clt__gemm_class("pthread-skylake-Intel(R) Core(TM) i7-6700", 8, NULL), 256);
    cr_assert_eq(clt__gemm_class("cpu-x86-64-v3-Some CPU", 8, ""), 256);
    cr_assert_eq(clt__gemm_class("cpu-cortex-a72-ARM", 4, NULL), 128);
    cr_assert_eq(clt__gemm_class("pthread-nehalem-Intel", 4, NULL), 128);
    cr_assert_eq(clt__gemm_class("pthread-newcpu-Vendor", 16, NULL), 512);
    cr_assert_eq(clt__gemm_class("pthread-newcpu-Vendor", 8, NULL), 256);
    cr_assert_eq(clt__gemm_class(NULL, 0, NULL), 128);
    cr_assert_eq(clt__gemm_class("pthread-skylake-avx512-AMD EPYC", 16, "128"), 128);
    cr_assert_eq(clt__gemm_class("pthread-haswell-AMD EPYC", 8, "512"), 512);
    cr_assert_eq(clt__gemm_class("pthread-haswell-AMD EPYC", 8, "256"), 256);
    cr_assert_eq(clt__gemm_class("pthread-haswell-AMD EPYC", 8, "1024"), 0);
}

/* Ragged products through every path of one class's tile and dtype: the
 * packed GEMM with edge tiles in both directions, K over several K blocks
 * (512) and the 16-row transposing packs with their remainders; the same
 * through the one-launch GEMM (gemm_tile_direct, B read in place) where
 * B's rows are contiguous; offsets, leading dimensions and batches; the
 * matrix-vector and few-row kernels. */
static void tile_of_class_paths(const char *cls, clt_dtype dtype)
{
    setenv("CLTENSOR_GEMM_CLASS", cls, 1);
    clt_device *dev = get_device("cpu");
    const size_t sizes[][3] = {{7, 13, 5}, {65, 33, 129}, {77, 70, 601}, {130, 97, 40}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        all_transposes(dev, (gemm_case){.M = sizes[s][0], .N = sizes[s][1], .K = sizes[s][2],
                                        .batch = 1, .dtype = dtype});
    all_transposes(dev, (gemm_case){.M = 69, .N = 75, .K = 35, .a_off = 2, .b_off = 1,
                                    .c_off = 4, .lda_pad = 1, .ldb_pad = 2, .ldc_pad = 3,
                                    .batch = 3, .sa_pad = 7, .sb_pad = 5, .sc_pad = 11,
                                    .dtype = dtype});
    run_case(dev, &(gemm_case){.M = 90, .N = 66, .K = 33, .batch = 2, .b_shared = true,
                               .tb = true, .sc_pad = 3, .dtype = dtype});
    run_case(dev, &(gemm_case){.M = 67, .N = 300, .K = 1100, .batch = 1, .exact = true,
                               .dtype = dtype});
    static const size_t smalls[] = {1, 3, 6};
    for (size_t i = 0; i < sizeof smalls / sizeof *smalls; i++) {
        all_transposes(dev, (gemm_case){.M = smalls[i], .N = 71, .K = 37, .batch = 2,
                                        .dtype = dtype});
        all_transposes(dev, (gemm_case){.M = 71, .N = smalls[i], .K = 37, .batch = 2,
                                        .dtype = dtype});
    }
    unsetenv("CLTENSOR_GEMM_CLASS");
}

/* Both GEMM paths, packed and one launch. */
static void tile_of_class(const char *cls, clt_dtype dtype)
{
    for (int direct = 0; direct < 2; direct++) {
        clt__gemm_direct_bytes = direct ? LLONG_MAX : 0;
        clt__gemm_direct_private = direct ? LLONG_MAX : -1;
        tile_of_class_paths(cls, dtype);
    }
    clt__gemm_direct_bytes = -1;
    clt__gemm_direct_private = -1;
}

Test(gemm_cpu, tile_512_float32)
{
    tile_of_class("512", CLT_FLOAT32);
}

Test(gemm_cpu, tile_512_float64)
{
    tile_of_class("512", CLT_FLOAT64);
}

Test(gemm_cpu, tile_256_float32)
{
    tile_of_class("256", CLT_FLOAT32);
}

Test(gemm_cpu, tile_256_float64)
{
    tile_of_class("256", CLT_FLOAT64);
}

Test(gemm_cpu, tile_128_float32)
{
    tile_of_class("128", CLT_FLOAT32);
}

Test(gemm_cpu, tile_128_float64)
{
    tile_of_class("128", CLT_FLOAT64);
}

/* The native tile in float64 on the cases the float32 tests above take. */
Test(gemm_cpu, native_float64)
{
    clt_device *dev = get_device("cpu");
    all_transposes(dev, (gemm_case){.M = 300, .N = 200, .K = 100, .batch = 1,
                                    .dtype = CLT_FLOAT64});
    all_transposes(dev, (gemm_case){.M = 37, .N = 70, .K = 600, .batch = 1,
                                    .dtype = CLT_FLOAT64});
    all_transposes(dev, (gemm_case){.M = 29, .N = 47, .K = 19, .a_off = 5, .b_off = 17,
                                    .c_off = 3, .lda_pad = 3, .ldb_pad = 9, .ldc_pad = 6,
                                    .batch = 2, .dtype = CLT_FLOAT64});
    run_case(dev, &(gemm_case){.M = 1, .N = 4100, .K = 517, .batch = 2, .ldb_pad = 3,
                               .exact = true, .dtype = CLT_FLOAT64});
    run_case(dev, &(gemm_case){.M = 7, .N = 4100, .K = 517, .batch = 1, .ldb_pad = 3,
                               .dtype = CLT_FLOAT64});
}

/* g as small x large and as large x small (once when they are equal), all
 * transposes each. */
static void both_orientations(clt_device *dev, gemm_case g, size_t small, size_t large)
{
    g.M = small;
    g.N = large;
    all_transposes(dev, g);
    if (small == large)
        return;
    g.M = large;
    g.N = small;
    all_transposes(dev, g);
}

/* The same with no operand, A or B shared by every batch (batch stride 0). */
static void every_sharing(clt_device *dev, gemm_case g, size_t small, size_t large)
{
    for (int shared = 0; shared < 3; shared++) {
        g.a_shared = shared == 1;
        g.b_shared = shared == 2;
        both_orientations(dev, g, small, large);
    }
}

/* Matrix-vector products (M == 1 or N == 1) take gemv_dot (rows against x,
 * four at a time) or, with W contiguous along the outputs, partial rows per
 * block of W (gemm_small_part, gemv_sum), and the GEMM for the layouts
 * neither serves.  Sizes straddle the 16-wide vectors and 4-row groups. */
Test(gemm_cpu, matrix_vector_products)
{
    clt_device *dev = get_device("cpu");
    static const size_t ps[] = {1, 3, 4, 5, 63, 64, 65, 130};
    static const size_t ks[] = {1, 15, 16, 17, 100};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++)
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
            gemm_case g = {.M = ps[i], .N = 1, .K = ks[j], .batch = 1};
            all_transposes(dev, g);
            g.M = 1;
            g.N = ps[i];
            all_transposes(dev, g);
        }
}

Test(gemm_cpu, matrix_vector_offsets_strides_batches)
{
    clt_device *dev = get_device("cpu");
    gemm_case base = {.K = 37, .a_off = 3, .b_off = 5, .c_off = 7, .lda_pad = 2, .ldb_pad = 3,
                      .ldc_pad = 4, .batch = 3, .sa_pad = 1, .sb_pad = 2, .sc_pad = 5};
    every_sharing(dev, base, 1, 70);
    every_sharing(dev, base, 1, 1);
    /* Exact sums over a long K: every order of summation gives the same.
     * With W column-contiguous, K spans several 256-row partial sums, and
     * the 4100 outputs two 4096-column blocks. */
    gemm_case e = {.K = 4099, .batch = 2, .exact = true};
    both_orientations(dev, e, 1, 129);
    gemm_case w = {.M = 1, .N = 4100, .K = 517, .batch = 2, .ldb_pad = 3, .exact = true};
    all_transposes(dev, w);
}

/* Products with 2 to 64 rows or columns: gemm_small when op(A) has rows
 * and op(B) columns contiguous along k (A as stored, B transposed), four
 * rows of W against four vectors with the last ones repeated at the edges;
 * gemm_small_part and gemv_sum (2 to 16 vectors) when the matrix that is not
 * small is contiguous along the output (B as stored for few rows, A
 * transposed for few columns); the GEMM otherwise. */
Test(gemm_cpu, few_rows_or_columns)
{
    clt_device *dev = get_device("cpu");
    static const size_t smalls[] = {2, 3, 4, 5, 8, 16, 17, 64};
    static const size_t ks[] = {1, 16, 17, 100};
    for (size_t i = 0; i < sizeof smalls / sizeof *smalls; i++)
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
            both_orientations(dev, (gemm_case){.K = ks[j], .batch = 1}, smalls[i], 67);
    gemm_case o = {.K = 33, .a_off = 3, .b_off = 5, .c_off = 7, .lda_pad = 2, .ldb_pad = 3,
                   .ldc_pad = 4, .batch = 3, .sa_pad = 1, .sb_pad = 2, .sc_pad = 5};
    every_sharing(dev, o, 6, 45);
    gemm_case e = {.M = 7, .N = 301, .K = 2053, .batch = 2, .exact = true};
    all_transposes(dev, e);
    /* Two 4096-column blocks of partial rows, three 256-row blocks. */
    gemm_case w = {.K = 517, .batch = 2, .ldb_pad = 3, .exact = true};
    both_orientations(dev, w, 3, 4100);
    w.M = 7;
    w.N = 4100;
    all_transposes(dev, w);
}

long clt__driver_refuse_at(long pass); /* src/device/fault.c */

/* C of a product through the packed GEMM or the one-launch GEMM (direct
 * and priv: clt__gemm_direct_bytes and clt__gemm_direct_private), and the
 * kernel launches it took; with refuse >= 0, the driver call after the
 * first `refuse` ones in the product is refused (*refused: whether it was). */
static double *product_refusing(clt_device *dev, clt_dtype dtype, bool ta, size_t M, size_t N,
                                size_t K, long long direct, long long priv, long refuse,
                                uint64_t *launches, bool *refused)
{
    size_t na = M * K, nb = K * N;
    float *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    cr_assert(ha && hb);
    fill_random(ha, na, 7u);
    fill_random(hb, nb, 8u);
    float *hc = calloc(M * N, sizeof *hc);
    cr_assert_not_null(hc);
    clt_tensor *a = upload_as(dev, dtype, ha, na), *b = upload_as(dev, dtype, hb, nb);
    clt_tensor *c = upload_as(dev, dtype, hc, M * N);
    clt__gemm_direct_bytes = direct;
    clt__gemm_direct_private = priv;
    clt_stats before, after;
    clt_stats_get(&before);
    clt__driver_refuse_at(refuse);
    clt_status st = clt__gemm_cpu(dev, dtype, ta, false, M, N, K, clt__mem(a), 0, ta ? M : K, 0,
                                  clt__mem(b), 0, N, 0, clt__mem(c), 0, N, 0, 1);
    *refused = clt__driver_refuse_at(-1) == -2;
    CHECK(st);
    cr_assert_str_empty(clt_last_error(), "a message left behind: %s", clt_last_error());
    clt_stats_get(&after);
    clt__gemm_direct_bytes = -1;
    clt__gemm_direct_private = -1;
    *launches = after.kernel_launches - before.kernel_launches;
    double *got = read_as_double(c);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    free(ha);
    free(hb);
    free(hc);
    return got;
}

static double *product_by_path(clt_device *dev, clt_dtype dtype, bool ta, size_t M, size_t N,
                               size_t K, long long direct, uint64_t *launches)
{
    bool refused;
    return product_refusing(dev, dtype, ta, M, N, K, direct, direct ? LLONG_MAX : -1, -1,
                            launches, &refused);
}

/* C (M x N, float64) = op(A) B of product_refusing's operands, on the host. */
static double *product_on_host(bool ta, size_t M, size_t N, size_t K, double **mag)
{
    size_t na = M * K, nb = K * N;
    float *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    double *c = calloc(M * N, sizeof *c);
    *mag = calloc(M * N, sizeof **mag);
    cr_assert(ha && hb && c && *mag);
    fill_random(ha, na, 7u);
    fill_random(hb, nb, 8u);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            for (size_t k = 0; k < K; k++) {
                double p = (double)(ta ? ha[k * M + i] : ha[i * K + k]) * hb[k * N + j];
                c[i * N + j] += p;
                (*mag)[i * N + j] += fabs(p);
            }
    free(ha);
    free(hb);
    return c;
}

/* got within K eps of the host's product, element by element. */
static void check_against_host(const double *got, clt_dtype dtype, bool ta, size_t M, size_t N,
                               size_t K, const char *what)
{
    double *mag = NULL, *ref = product_on_host(ta, M, N, K, &mag);
    double eps = dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
    for (size_t i = 0; i < M * N; i++)
        cr_assert(fabs(got[i] - ref[i]) <= (double)(K + 2) * eps * mag[i],
                  "%s, %s ta=%d C[%zu]: got %.17g, want %.17g", what, clt_dtype_name(dtype),
                  ta, i, got[i], ref[i]);
    free(ref);
    free(mag);
}

/* A one-launch kernel whose private memory does not fit the bound (forced
 * to 0 bytes here) is never launched: the packed path computes the
 * product.  With the default bound (a share of the thread stack the driver
 * runs it on) either path may serve, as the stack allows; the values are
 * checked all the same. */
Test(gemm_cpu, one_launch_path_needs_its_private_memory_to_fit)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        clt_dtype dtype = d ? CLT_FLOAT64 : CLT_FLOAT32;
        for (int ta = 0; ta < 2; ta++) {
            size_t M = 77, N = 70, K = 601;
            uint64_t l = 0;
            bool refused;
            double *got =
                product_refusing(dev, dtype, ta, M, N, K, LLONG_MAX, 0, -1, &l, &refused);
            cr_assert_eq(l, 2, "%s ta=%d: %llu launches, not the packed path's 2",
                         clt_dtype_name(dtype), ta, (unsigned long long)l);
            check_against_host(got, dtype, ta, M, N, K, "bound 0");
            free(got);
            /* The default bound: one path or the other, as the stack allows. */
            got = product_refusing(dev, dtype, ta, M, N, K, LLONG_MAX, -1, -1, &l, &refused);
            check_against_host(got, dtype, ta, M, N, K, "default bound");
            free(got);
        }
    }
}

/* The one-launch path's share of the reported cache is capped at 2 MiB
 * (a VM's 480 MiB "L3" must not send 1024^3 there), and B's rows read in
 * place a multiple of 4 KiB apart go packed past 256 rows of K. */
Test(gemm_cpu, one_launch_path_by_cache_share_and_stride)
{
    const size_t MiB = (size_t)1 << 20;
    cr_assert_eq(clt__gemm_direct_share(32 * (uint64_t)MiB), 2 * MiB);
    cr_assert_eq(clt__gemm_direct_share(16 * (uint64_t)MiB), MiB);
    cr_assert_eq(clt__gemm_direct_share(480 * (uint64_t)MiB), 2 * MiB);
    cr_assert_eq(clt__gemm_direct_share(UINT64_MAX), 2 * MiB);
    cr_assert_eq(clt__gemm_direct_share(0), 0);
    cr_assert(clt__gemm_critical_stride(4096, 384));
    cr_assert(clt__gemm_critical_stride(8192, 257));
    cr_assert(!clt__gemm_critical_stride(4096, 256));
    cr_assert(!clt__gemm_critical_stride(1024, 4096));
    cr_assert(!clt__gemm_critical_stride(2048, 512));
    cr_assert(!clt__gemm_critical_stride(6144, 512));
    cr_assert(!clt__gemm_critical_stride(0, 512));

    /* On the device, with the default share: a product past 2 MiB of
     * operands (600^3 float32, 2.9 MB) and one on the critical stride
     * (N 1024 float32, K 384) take the packed path's two launches whatever
     * the cache; K 256 on the same stride one launch where the share holds
     * its 1.2 MB (a reported cache of 32 MiB or more). */
    clt_device *dev = get_device("cpu");
    cl_ulong cache = 0;
    cr_assert_eq(clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache,
                                 NULL),
                 CL_SUCCESS);
    const size_t shapes[][3] = {{600, 600, 600}, {128, 1024, 384}, {128, 1024, 256}};
    for (size_t s = 0; s < 3; s++) {
        size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        uint64_t l = 0;
        bool refused;
        double *got =
            product_refusing(dev, CLT_FLOAT32, false, M, N, K, -1, LLONG_MAX, -1, &l, &refused);
        /* 1.2 MB with any class's padding: a full 2 MiB share holds it. */
        bool full = clt__gemm_direct_share(cache) == 2 * MiB;
        uint64_t want = s == 2 ? 1 : 2;
        if (s < 2 || full)
            cr_assert_eq(l, want, "%zu x %zu x %zu: %llu launches, not %llu", M, N, K,
                     (unsigned long long)l, (unsigned long long)want);
        if (s > 0)
            check_against_host(got, CLT_FLOAT32, false, M, N, K, "default share");
        free(got);
    }
}

/* A one-launch kernel the driver refuses (CL_OUT_OF_RESOURCES from its
 * launch) gives way to the packed path: the product succeeds, right, with
 * no message left (product_refusing checks), and the device keeps to the
 * packed path after. */
Test(gemm_cpu, refused_one_launch_falls_back_on_the_packed_path)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        clt_dtype dtype = d ? CLT_FLOAT64 : CLT_FLOAT32;
        size_t M = 77, N = 70, K = 601;
        uint64_t l = 0;
        bool refused = false;
        /* Built and run once, so that the refused call is the launch's own. */
        free(product_by_path(dev, dtype, false, M, N, K, LLONG_MAX, &l));
        cr_assert_eq(l, 1);
        double *got =
            product_refusing(dev, dtype, false, M, N, K, LLONG_MAX, LLONG_MAX, 0, &l, &refused);
        cr_assert(refused, "%s: no driver call was refused", clt_dtype_name(dtype));
        cr_assert_eq(l, 2, "%s: %llu launches after the refusal, not the packed path's 2",
                     clt_dtype_name(dtype), (unsigned long long)l);
        check_against_host(got, dtype, false, M, N, K, "refused one launch");
        free(got);
        got = product_by_path(dev, dtype, true, M, N, K, LLONG_MAX, &l);
        cr_assert_eq(l, 2, "%s: %llu launches after a refused one launch",
                     clt_dtype_name(dtype), (unsigned long long)l);
        check_against_host(got, dtype, true, M, N, K, "after the refusal");
        free(got);
    }
}

/* The one-launch GEMM launches once (the packed one twice: pack, tile) and
 * sums in the packed GEMM's order: the same bits, edge tiles and two K
 * blocks included (run_case checks both against the reference). */
Test(gemm_cpu, one_launch_path_matches_the_packed_one)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        clt_dtype dtype = d ? CLT_FLOAT64 : CLT_FLOAT32;
        for (int ta = 0; ta < 2; ta++) {
            size_t M = 77, N = 70, K = 601;
            uint64_t lp = 0, ld = 0;
            double *packed = product_by_path(dev, dtype, ta, M, N, K, 0, &lp);
            double *direct = product_by_path(dev, dtype, ta, M, N, K, LLONG_MAX, &ld);
            cr_assert_eq(lp, 2, "%s ta=%d: packed GEMM took %llu launches",
                         clt_dtype_name(dtype), ta, (unsigned long long)lp);
            cr_assert_eq(ld, 1, "%s ta=%d: one-launch GEMM took %llu launches",
                         clt_dtype_name(dtype), ta, (unsigned long long)ld);
            for (size_t i = 0; i < M * N; i++)
                cr_assert(packed[i] == direct[i], "%s ta=%d C[%zu]: packed %.17g, direct %.17g",
                          clt_dtype_name(dtype), ta, i, packed[i], direct[i]);
            free(packed);
            free(direct);
        }
    }
}
