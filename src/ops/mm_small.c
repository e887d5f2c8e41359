/* mm_small.c: float32 products too small for the packed GEMM to pay off, in
 * one launch of cl/mm_small.cl on CPU devices (matmul.c decides when), and
 * a linear layer's x @ W^T + b in one launch. */
#include "internal.h"

/* Must match mm_geom in cl/mm_small.cl. */
typedef struct mm_geom {
    cl_ulong a_off, a_rs, a_cs, a_bs;
    cl_ulong b_off, ldb, b_bs;
    cl_ulong c_off, ldc, c_bs;
    cl_ulong M, N, K, rows, s_off, want_sum;
} mm_geom;

/* Rows of a register tile and columns per work-item, as in the kernel. */
#define MM_MR 4
#define MM_NB 64

/* Multiply-adds (M N K per matrix) up to which the kernel serves products
 * (tests lower it to reach the packed GEMM).  On PoCL (Zen 4, 2 cores) it
 * took half the packed GEMM's time or less up to a few million, e.g.
 * [32, 144] @ [144, 1024] (a convolution's patches) 60-90 against 150 us,
 * and about the same at 8M. */
size_t clt__mm_small_limit = (size_t)1 << 23;

/* Longest K mm_dot takes: it adds each result up in 16 float32 chains,
 * with an error that grows with the chain (a [2, 2^21] @ [2^21, 2] product
 * of 0.1s in one chain came out 1.7% low); longer products go to the
 * matrix-vector kernels or the packed GEMM.  mm_rows has no such limit:
 * it adds blocks of 256 k compensated.  (Sending its long K, a weight
 * gradient's batch, to the packed GEMM made gout^T @ x 1.3 to 3.5 times
 * slower at batch 8192 and 16384.) */
#define MM_DOT_K_MAX 4096

bool clt__mm_small_fits(const clt_device *dev, bool trans_b, size_t M, size_t N, size_t K)
{
    /* Rows of op(B) must be contiguous; one row or column is the
     * matrix-vector kernels' (gemm_cpu.c). */
    if (!clt__gemm_cpu_suitable(dev, CLT_FLOAT32) || trans_b || M < 2 || N < 2 || K == 0)
        return false;
    return M <= clt__mm_small_limit / N / K;
}

clt_status clt__mm_small_f32(clt_device *dev, bool trans_a, size_t M, size_t N, size_t K,
                             cl_mem A, size_t a_off, size_t lda, size_t stride_a, cl_mem B,
                             size_t b_off, size_t ldb, size_t stride_b, cl_mem C, size_t c_off,
                             size_t ldc, size_t stride_c, size_t batch, cl_mem sum, size_t s_off)
{
    if (M == 0 || N == 0 || batch == 0)
        return CLT_OK;
    size_t cus = dev->info.compute_units ? dev->info.compute_units : 1;
    size_t ncb = (N + MM_NB - 1) / MM_NB, nmb = (M + MM_MR - 1) / MM_MR;
    /* About eight work-items per compute unit, each a whole number of
     * register tiles. */
    size_t want = 8 * cus / (ncb * batch), per = want ? (nmb + want - 1) / want : nmb;
    mm_geom g = {
        .a_off = a_off,
        .a_rs = trans_a ? 1 : lda,
        .a_cs = trans_a ? lda : 1,
        .a_bs = stride_a,
        .b_off = b_off,
        .ldb = ldb,
        .b_bs = stride_b,
        .c_off = c_off,
        .ldc = ldc,
        .c_bs = stride_c,
        .M = M,
        .N = N,
        .K = K,
        .rows = per * MM_MR,
        .s_off = s_off,
        .want_sum = sum != NULL,
    };
    cl_mem s = sum ? sum : C;
    size_t gws[3] = {ncb, (nmb + per - 1) / per, batch}, lws[3] = {1, 1, 1};
    clt__arg args[] = {CLT__ARG(A), CLT__ARG(B), CLT__ARG(C), CLT__ARG(s), CLT__ARG(g)};
    return clt__launch(dev, "mm_small", "", "mm_rows", 3, gws, lws, 5, args);
}

/* Must match mm_dot_geom in cl/mm_small.cl. */
typedef struct mm_dot_geom {
    cl_ulong x_off, x_rs, w_off, w_rs, c_off, ldc, b_off;
    cl_ulong M, N, K, rows, has_bias;
} mm_dot_geom;

bool clt__mm_dot_fits(const clt_device *dev, size_t M, size_t N, size_t K)
{
    return clt__gemm_cpu_suitable(dev, CLT_FLOAT32) && M > 0 && N > 0 && K > 0 &&
           K <= MM_DOT_K_MAX && M <= clt__mm_small_limit / N / K;
}

clt_status clt__mm_dot_f32(clt_device *dev, size_t M, size_t N, size_t K, cl_mem X,
                           size_t x_off, size_t x_rs, cl_mem W, size_t w_off, size_t w_rs,
                           cl_mem C, size_t c_off, size_t ldc, cl_mem bias, size_t b_off)
{
    size_t cus = dev->info.compute_units ? dev->info.compute_units : 1;
    size_t per = (N + 8 * cus - 1) / (8 * cus);
    per = (per + 3) / 4 * 4;
    mm_dot_geom g = {
        .x_off = x_off,
        .x_rs = x_rs,
        .w_off = w_off,
        .w_rs = w_rs,
        .c_off = c_off,
        .ldc = ldc,
        .b_off = b_off,
        .M = M,
        .N = N,
        .K = K,
        .rows = per,
        .has_bias = bias != NULL,
    };
    cl_mem b = bias ? bias : C;
    size_t gws = (N + per - 1) / per, lws = 1;
    clt__arg args[] = {CLT__ARG(X), CLT__ARG(W), CLT__ARG(C), CLT__ARG(b), CLT__ARG(g)};
    return clt__launch(dev, "mm_small", "", "mm_dot", 1, &gws, &lws, 5, args);
}

clt_status clt__mm_small_warmup(clt_device *dev)
{
    cl_program prog = NULL;
    clt_status st = clt__program_get(dev, "mm_small", "", &prog);
    return st == CLT_OK ? clt__ok() : st;
}
