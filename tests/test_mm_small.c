/* test_mm_small.c: the small-product kernel (clt__mm_small_f32, cl/mm_small.cl)
 * on raw buffers against a host reference: the same sums in float (fma
 * chains over blocks of 256 k, the block sums added compensated: the
 * kernel promises those bits) and a double-precision sum within float
 * tolerance; widths around its 16- and 64-column blocks, transposed A,
 * offsets, leading dimensions, batches, the row sums, long K, and the
 * choice clt_matmul makes; and x @ W^T + b (clt__mm_dot_f32) against sums
 * in double. */
#include <float.h>
#include <stdint.h>

#include "helpers.h"
#include "internal.h"

typedef struct mm_case {
    bool ta;
    size_t M, N, K;
    size_t a_off, b_off, c_off, s_off; /* elements before the first matrix */
    size_t lda_pad, ldb_pad, ldc_pad;  /* leading dimension beyond the width */
    size_t batch;
    bool a_shared, b_shared; /* batch stride 0: one matrix for every batch */
    bool sums;
} mm_case;

static const float SENTINEL = -12345.0f;

static clt_tensor *upload(clt_device *dev, const float *h, size_t n)
{
    int64_t shape[1] = {(int64_t)n};
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, h, &t));
    return t;
}

static float *filled(size_t n, float v)
{
    float *h = malloc(n * sizeof *h);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = v;
    return h;
}

/* Runs c on dev; returns C and (with sums) the row sums as read back. */
static void run_on(clt_device *dev, const mm_case *c, const float *ha, size_t na,
                   const float *hb, size_t nb, size_t lda, size_t sa, size_t ldb, size_t sb,
                   size_t ldc, size_t sc, size_t nc, size_t ns, float **gc, float **gs)
{
    float *hc = filled(nc, SENTINEL), *hs = filled(ns, SENTINEL);
    clt_tensor *ta = upload(dev, ha, na), *tb = upload(dev, hb, nb);
    clt_tensor *tc = upload(dev, hc, nc), *ts = upload(dev, hs, ns);
    CHECK(clt__mm_small_f32(dev, c->ta, c->M, c->N, c->K, clt__mem(ta), c->a_off, lda, sa,
                            clt__mem(tb), c->b_off, ldb, sb, clt__mem(tc), c->c_off, ldc, sc,
                            c->batch, c->sums ? clt__mem(ts) : NULL, c->s_off));
    *gc = read_f32(tc);
    *gs = read_f32(ts);
    free(hc);
    free(hs);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tc);
    clt_tensor_free(ts);
}

/* k per block of the kernel's sums (MM_KB in cl/mm_small.cl). */
#define KB 256

/* The kernel's MM_ADD in float: block sum x of block k0 into *s, *e the
 * compensation (CLT_ADD_COMPENSATED); the first block sets *s. */
static void add_compensated(float *s, float *e, float x, size_t k0)
{
    if (k0 == 0) {
        *s = x;
        return;
    }
    float y = x - *e, t = *s + y;
    *e = isfinite(t) ? (t - *s) - y : 0.0f;
    *s = t;
}

static void run_case(clt_device *dev, const mm_case *c)
{
    size_t M = c->M, N = c->N, K = c->K, batch = c->batch;
    size_t arows = c->ta ? K : M, acols = c->ta ? M : K;
    size_t lda = acols + c->lda_pad, ldb = N + c->ldb_pad, ldc = N + c->ldc_pad;
    size_t sa = c->a_shared ? 0 : arows * lda, sb = c->b_shared ? 0 : K * ldb, sc = M * ldc;
    size_t na = c->a_off + (c->a_shared ? 1 : batch) * arows * lda + 1;
    size_t nb = c->b_off + (c->b_shared ? 1 : batch) * K * ldb + 1;
    size_t nc = c->c_off + batch * sc + 1, ns = c->s_off + batch * M + 1;
    float *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    cr_assert(ha && hb);
    fill_random(ha, na, 7u + (unsigned)M);
    fill_random(hb, nb, 13u + (unsigned)N);
    float *got = NULL, *gsum = NULL;
    run_on(dev, c, ha, na, hb, nb, lda, sa, ldb, sb, ldc, sc, nc, ns, &got, &gsum);

    bool *hit = calloc(nc, sizeof *hit), *shit = calloc(ns, sizeof *shit);
    cr_assert(hit && shit);
    for (size_t b = 0; b < batch; b++) {
        const float *A = ha + c->a_off + b * sa, *B = hb + c->b_off + b * sb;
        for (size_t i = 0; i < M; i++) {
            float rs = 0, re = 0, rb = 0;
            for (size_t k = 0; k < K; k++) {
                rb += c->ta ? A[k * lda + i] : A[i * lda + k];
                if ((k + 1) % KB == 0 || k + 1 == K)
                    add_compensated(&rs, &re, rb, k / KB * KB), rb = 0;
            }
            if (c->sums) {
                size_t at = c->s_off + b * M + i;
                shit[at] = true;
                cr_assert_eq(gsum[at], rs, "%zux%zux%zu ta=%d batch %zu: sum of row "
                             "%zu: got %.9g, want %.9g", M, N, K, c->ta, b, i,
                             (double)gsum[at], (double)rs);
            }
            for (size_t j = 0; j < N; j++) {
                float f = 0, fe = 0, fb = 0;
                double ref = 0, mag = 0;
                for (size_t k = 0; k < K; k++) {
                    float x = c->ta ? A[k * lda + i] : A[i * lda + k], y = B[k * ldb + j];
                    fb = fmaf(x, y, fb);
                    if ((k + 1) % KB == 0 || k + 1 == K)
                        add_compensated(&f, &fe, fb, k / KB * KB), fb = 0;
                    ref += (double)x * y;
                    mag += fabs((double)x * y);
                }
                size_t at = c->c_off + b * sc + i * ldc + j;
                hit[at] = true;
                cr_assert_eq(got[at], f,
                             "%zux%zux%zu ta=%d batch %zu/%zu C[%zu][%zu]: got %.9g, want the "
                             "blocked fma chains' %.9g",
                             M, N, K, c->ta, b, batch, i, j, (double)got[at], (double)f);
                cr_assert(fabs(got[at] - ref) <= (double)(KB + 2) * FLT_EPSILON * mag,
                          "C[%zu][%zu]: got %.9g, double reference %.9g", i, j,
                          (double)got[at], ref);
            }
        }
    }
    for (size_t i = 0; i < nc; i++)
        if (!hit[i])
            cr_assert_eq(got[i], SENTINEL, "%zux%zux%zu ta=%d: element %zu of C outside the "
                         "result was overwritten with %g", M, N, K, c->ta, i, (double)got[i]);
    for (size_t i = 0; i < ns; i++)
        if (!shit[i])
            cr_assert_eq(gsum[i], SENTINEL, "%zux%zux%zu: element %zu of the sums outside "
                         "the result was overwritten with %g", M, N, K, i, (double)gsum[i]);
    free(hit);
    free(shit);
    free(got);
    free(gsum);
    free(ha);
    free(hb);
}

Test(mm_small, widths_around_the_vector_blocks)
{
    clt_device *dev = get_device("cpu");
    /* full 64-column blocks, 16-column pieces and single columns, rows not a
     * multiple of the 4-row tile, K from 1 */
    const size_t N[] = {2, 15, 16, 17, 63, 64, 65, 100, 128, 150};
    const size_t MK[][2] = {{2, 1}, {5, 7}, {13, 33}, {64, 10}};
    for (size_t n = 0; n < sizeof N / sizeof N[0]; n++)
        for (size_t m = 0; m < sizeof MK / sizeof MK[0]; m++)
            for (int ta = 0; ta < 2; ta++)
                run_case(dev, &(mm_case){.ta = ta, .M = MK[m][0], .N = N[n], .K = MK[m][1],
                                         .batch = 1, .sums = (n + m) % 2 == 0});
}

Test(mm_small, offsets_leading_dimensions_and_batches)
{
    clt_device *dev = get_device("cpu");
    for (int ta = 0; ta < 2; ta++) {
        run_case(dev, &(mm_case){.ta = ta, .M = 9, .N = 70, .K = 11, .a_off = 3, .b_off = 5,
                                 .c_off = 7, .s_off = 2, .lda_pad = 4, .ldb_pad = 3,
                                 .ldc_pad = 6, .batch = 3, .sums = true});
        run_case(dev, &(mm_case){.ta = ta, .M = 6, .N = 33, .K = 20, .batch = 4,
                                 .a_shared = true, .sums = true});
        run_case(dev, &(mm_case){.ta = ta, .M = 30, .N = 64, .K = 5, .ldc_pad = 1, .batch = 2,
                                 .b_shared = true});
    }
}

/* K past one block of 256, as a weight gradient's K is the batch: the
 * blocks' sums added compensated, on every column path and the row sums,
 * and a long sum of 0.1s within 1e-5 (one chain over 2^17 of them, as the
 * kernel had, is 1e-3 off). */
Test(mm_small, long_k_in_compensated_blocks)
{
    clt_device *dev = get_device("cpu");
    for (int ta = 0; ta < 2; ta++) {
        run_case(dev, &(mm_case){.ta = ta, .M = 6, .N = 83, .K = 3 * KB + 7, .batch = 2,
                                 .sums = true});
        run_case(dev, &(mm_case){.ta = ta, .M = 5, .N = 17, .K = 2 * KB, .batch = 1,
                                 .sums = true});
    }
    size_t K = (size_t)1 << 17;
    float *ha = filled(2 * K, 0.1f), *hb = filled(K * 2, 1.0f);
    mm_case c = {.ta = true, .M = 2, .N = 2, .K = K, .batch = 1, .sums = true};
    float *got, *sums;
    run_on(dev, &c, ha, 2 * K, hb, 2 * K, 2, 0, 2, 0, 2, 0, 4, 2, &got, &sums);
    double want = (double)K * (double)0.1f;
    for (int i = 0; i < 4; i++)
        cr_assert(fabs(got[i] - want) <= 1e-5 * want, "C[%d] = %.9g, want %.9g", i,
                  (double)got[i], want);
    for (int i = 0; i < 2; i++)
        cr_assert(fabs(sums[i] - want) <= 1e-5 * want, "sum %d = %.9g, want %.9g", i,
                  (double)sums[i], want);
    free(got), free(sums), free(ha), free(hb);
}

/* The layer shapes it was made for: many rows per work-item. */
Test(mm_small, network_layer_shapes)
{
    clt_device *dev = get_device("cpu");
    run_case(dev, &(mm_case){.ta = false, .M = 64, .N = 128, .K = 10, .batch = 1});
    run_case(dev, &(mm_case){.ta = true, .M = 128, .N = 64, .K = 64, .batch = 1, .sums = true});
    run_case(dev, &(mm_case){.ta = false, .M = 32, .N = 1024, .K = 144, .batch = 1});
}

/* The same bits on the multi-threaded and the single-threaded device. */
Test(mm_small, same_bits_on_two_devices)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    if (!clt__gemm_cpu_suitable(d1, CLT_FLOAT32))
        cr_skip_test("the second device has no float32 fma");
    mm_case c = {.ta = true, .M = 37, .N = 131, .K = 50, .batch = 2, .sums = true};
    size_t lda = c.M, ldb = c.N, ldc = c.N, sa = c.K * lda, sb = c.K * ldb, sc = c.M * ldc;
    size_t na = 2 * sa, nb = 2 * sb, nc = 2 * sc, ns = 2 * c.M;
    float *ha = malloc(na * sizeof *ha), *hb = malloc(nb * sizeof *hb);
    cr_assert(ha && hb);
    fill_random(ha, na, 3);
    fill_random(hb, nb, 4);
    float *c0, *s0, *c1, *s1;
    run_on(d0, &c, ha, na, hb, nb, lda, sa, ldb, sb, ldc, sc, nc, ns, &c0, &s0);
    run_on(d1, &c, ha, na, hb, nb, lda, sa, ldb, sb, ldc, sc, nc, ns, &c1, &s1);
    cr_assert(memcmp(c0, c1, nc * sizeof *c0) == 0, "products differ between the devices");
    cr_assert(memcmp(s0, s1, ns * sizeof *s0) == 0, "row sums differ between the devices");
    free(c0), free(s0), free(c1), free(s1), free(ha), free(hb);
}

Test(mm_small, which_products_it_takes)
{
    clt_device *dev = get_device("cpu");
    if (!clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        cr_skip_test("no float32 fma on this device");
    cr_assert(clt__mm_small_fits(dev, false, 64, 128, 10));
    cr_assert(clt__mm_small_fits(dev, false, 2, 2, 1));
    cr_assert(!clt__mm_small_fits(dev, true, 64, 128, 10), "op(B) rows must be contiguous");
    cr_assert(!clt__mm_small_fits(dev, false, 1, 128, 10), "one row: the vector kernels'");
    cr_assert(!clt__mm_small_fits(dev, false, 128, 1, 10), "one column: the vector kernels'");
    cr_assert(!clt__mm_small_fits(dev, false, 4, 4, 0));
    cr_assert(!clt__mm_small_fits(dev, false, 1024, 1024, 1024), "large: the packed GEMM's");
    /* a small layer's weight gradient at batch 8192 and 16384 (K) */
    cr_assert(clt__mm_small_fits(dev, false, 32, 32, 8192));
    cr_assert(clt__mm_small_fits(dev, false, 16, 32, 16384));

    /* clt_matmul takes it in one launch, with the product's values. */
    float ha[6 * 5], hb[5 * 7];
    fill_random(ha, 30, 1);
    fill_random(hb, 35, 2);
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){6, 5}, ha, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){5, 7}, hb, &b));
    clt_stats s0, s1;
    clt_stats_get(&s0);
    CHECK(clt_matmul(a, b, &c));
    clt_stats_get(&s1);
    cr_assert_eq(s1.kernel_launches - s0.kernel_launches, 1);
    float *got = read_f32(c);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 7; j++) {
            double ref = 0;
            for (int k = 0; k < 5; k++)
                ref += (double)ha[i * 5 + k] * hb[k * 7 + j];
            cr_assert(fabs(got[i * 7 + j] - ref) <= 1e-4 * (1 + fabs(ref)), "C[%d][%d]: %g, %g",
                      i, j, (double)got[i * 7 + j], ref);
        }
    free(got);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

/* x [M, K] (rows x_rs apart) @ W [N, K]^T (+ b), written into C [M, ldc]. */
static void check_dot(clt_device *dev, size_t M, size_t N, size_t K, bool with_bias)
{
    size_t x_rs = K + 3, w_rs = K + 1, ldc = N + 2, x_off = 5, w_off = 2, b_off = 1;
    size_t nx = x_off + M * x_rs, nw = w_off + N * w_rs, nc = M * ldc, nb = b_off + N;
    float *hx = malloc(nx * sizeof *hx), *hw = malloc(nw * sizeof *hw);
    float *hb = malloc(nb * sizeof *hb), *hc = filled(nc, SENTINEL);
    cr_assert(hx && hw && hb);
    fill_random(hx, nx, 21);
    fill_random(hw, nw, 22);
    fill_random(hb, nb, 23);
    clt_tensor *tx = upload(dev, hx, nx), *tw = upload(dev, hw, nw), *tb = upload(dev, hb, nb);
    clt_tensor *tc = upload(dev, hc, nc);
    cr_assert(clt__mm_dot_fits(dev, M, N, K));
    CHECK(clt__mm_dot_f32(dev, M, N, K, clt__mem(tx), x_off, x_rs, clt__mem(tw), w_off, w_rs,
                          clt__mem(tc), 0, ldc, with_bias ? clt__mem(tb) : NULL, b_off));
    float *got = read_f32(tc);
    for (size_t m = 0; m < M; m++)
        for (size_t j = 0; j < ldc; j++) {
            float v = got[m * ldc + j];
            if (j >= N) {
                cr_assert_eq(v, SENTINEL, "C[%zu][%zu] beyond N overwritten", m, j);
                continue;
            }
            double ref = with_bias ? hb[b_off + j] : 0, mag = fabs(ref);
            for (size_t k = 0; k < K; k++) {
                double p = (double)hx[x_off + m * x_rs + k] * hw[w_off + j * w_rs + k];
                ref += p;
                mag += fabs(p);
            }
            cr_assert(fabs(v - ref) <= (double)(K + 2) * FLT_EPSILON * mag,
                      "%zux%zux%zu bias %d: C[%zu][%zu] = %.9g, want %.9g", M, N, K, with_bias,
                      m, j, (double)v, ref);
        }
    free(got), free(hx), free(hw), free(hb), free(hc);
    clt_tensor_free(tx), clt_tensor_free(tw), clt_tensor_free(tb), clt_tensor_free(tc);
}

Test(mm_small, dot_products_with_bias)
{
    clt_device *dev = get_device("cpu");
    if (!clt__gemm_cpu_suitable(dev, CLT_FLOAT32))
        cr_skip_test("no float32 fma on this device");
    /* rows and columns around the 4 x 4 tile, K below, at and past 16 */
    const size_t MN[][2] = {{1, 1}, {3, 5}, {4, 4}, {9, 10}, {64, 128}};
    const size_t K[] = {1, 15, 16, 17, 64, 100};
    for (size_t i = 0; i < sizeof MN / sizeof MN[0]; i++)
        for (size_t k = 0; k < sizeof K / sizeof K[0]; k++)
            check_dot(dev, MN[i][0], MN[i][1], K[k], (i + k) % 2 == 0);
}
