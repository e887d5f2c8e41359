/* gemm_cpu.c: float32 GEMM tuned for CPU OpenCL devices (PoCL): packs op(A)
 * and op(B) into panels and launches the register-tiled kernel of cl/gemm.cl. */
#include <stdint.h>

#include "internal.h"

/* Register tile (GEMM_MR rows x 16 * GEMM_NV columns), K block, K rows per
 * packing work-item, and the row and column panels one work-item takes at
 * most: a GEMM_MPAN x GEMM_KC block of A panels (144 KiB) sits in L2 while
 * the B micro-panels (KC x 32, 64 KiB) pass by, each against every A panel
 * of the block; an A micro-panel (12 x KC, 24 KiB) fits L1.  Measured on
 * PoCL (Zen 4, 2 cores) against the earlier KC 256 / 12 panels: 1024^3
 * about 185 -> 200 GFLOP/s, 2048^3 195 -> 205, [200,1024] @ [1024,1024]
 * 145 -> 185; fewer passes over C and a smaller A block both count.
 * Overridable with -D for tuning. */
#ifndef GEMM_MR
#define GEMM_MR 12
#endif
#ifndef GEMM_NV
#define GEMM_NV 2
#endif
#ifndef GEMM_KC
#define GEMM_KC 512
#endif
#ifndef GEMM_PKC
#define GEMM_PKC 1024
#endif
#ifndef GEMM_MPAN
#define GEMM_MPAN 6
#endif
#ifndef GEMM_NPAN
#define GEMM_NPAN 16
#endif
/* Row panels at or below which all of M stays one block (see choose_blocks). */
#ifndef GEMM_MPAN_WHOLE
#define GEMM_MPAN_WHOLE 12
#endif
#define GEMM_NR (16 * GEMM_NV)
/* Matrix-vector products with column-contiguous W: rows of W per partial sum
 * and columns per work-item (a 4096-float partial row fits a core's L1). */
#ifndef GEMV_KB
#define GEMV_KB 256
#endif
#ifndef GEMV_PB
#define GEMV_PB 4096
#endif
#define GEMM_STR_(x) #x
#define GEMM_STR(x) GEMM_STR_(x)
#define GEMM_OPTIONS                                                         \
    "-DGEMM_MR=" GEMM_STR(GEMM_MR) " -DGEMM_NV=" GEMM_STR(GEMM_NV)             \
    " -DGEMM_KC=" GEMM_STR(GEMM_KC) " -DGEMM_PKC=" GEMM_STR(GEMM_PKC)           \
    " -DGEMV_KB=" GEMM_STR(GEMV_KB) " -DGEMV_PB=" GEMM_STR(GEMV_PB)

/* Most vectors partial_rows serves for few-row products; with more the
 * packed GEMM is faster ([M, 4096] @ [4096, 4096] on PoCL: M = 16 takes
 * about 9 ms either way, M = 32 about 20 ms against 16). */
#ifndef SMALL_PART_MAX
#define SMALL_PART_MAX 16
#endif

/* Packed panels of one batch chunk stay under this many bytes. */
#define GEMM_SCRATCH_LIMIT ((size_t)64 << 20)

/* Without hardware FMA the kernel's fma() would be emulated, slowly. */
bool clt__gemm_cpu_suitable(const clt_device *dev, clt_dtype dtype)
{
    return dev != NULL && dtype == CLT_FLOAT32 && dev->info.type == CLT_DEVICE_TYPE_CPU &&
           dev->fp32_fma;
}

/* Builds the program of cl/gemm.cl for dev ahead of the first product (for
 * clt_warmup). */
clt_status clt__gemm_cpu_warmup(clt_device *dev)
{
    CLT__REQUIRE_ARG(dev, "clt__gemm_cpu_warmup");
    cl_program prog = NULL;
    clt_status st = clt__program_get(dev, "gemm", GEMM_OPTIONS, &prog);
    return st == CLT_OK ? clt__ok() : st;
}

/* Splits the Mp x Np panels into blocks so that there are enough work-groups
 * for every compute unit to stay busy until the end.  Up to GEMM_MPAN_WHOLE
 * row panels (M <= 144) stay one block: split, each block would read all of
 * B again for little work ([96, 1024] @ [1024, 1024] in blocks of 6 and 2
 * panels ran at 0.6x). */
static void choose_blocks(size_t mp, size_t np, size_t batch, unsigned cus, size_t *mpan,
                          size_t *npan)
{
    size_t m = mp <= GEMM_MPAN_WHOLE ? mp : GEMM_MPAN;
    size_t n = np < GEMM_NPAN ? np : GEMM_NPAN;
    size_t want = 4 * (size_t)(cus ? cus : 1);
    for (;;) {
        size_t groups = ((mp + m - 1) / m) * ((np + n - 1) / n) * batch;
        if (groups >= want || (m <= 2 && n <= 1))
            break;
        if (n > 1 && (n >= m || m <= 2))
            n = (n + 1) / 2;
        else
            m = (m + 1) / 2;
    }
    *mpan = m;
    *npan = n;
}

/* Rows of K (*kpi) and column panels (*ppi) per work-item of gemm_pack_b:
 * up to 64 panels (2048 columns) of a row, so that the reads of B as stored
 * run along memory, and K split further (in multiples of 16 rows) until
 * there are about eight work-items per compute unit. */
static void pack_b_blocks(size_t np, size_t K, size_t batch, unsigned cus, cl_ulong *kpi,
                          cl_ulong *ppi)
{
    size_t p = np == 0 ? 1 : np < 64 ? np : 64;
    size_t items = ((np + p - 1) / p) * batch, want = 8 * (size_t)(cus ? cus : 1);
    size_t kgroups = items >= want ? 1 : (want + items - 1) / items;
    size_t k = (K + kgroups - 1) / kgroups;
    k = (k + 15) / 16 * 16;
    *kpi = k ? k : 16;
    *ppi = p;
}

/* Rows of W for each work-item of gemv_dot and gemm_small: a multiple of 4
 * giving about eight work-items per compute unit over all batches. */
static cl_ulong rows_per_item(const clt_device *dev, size_t P, size_t batch)
{
    size_t cu = dev->info.compute_units ? dev->info.compute_units : 1;
    size_t items = 8 * cu / batch ? 8 * cu / batch : 1;
    return ((P + items - 1) / items + 3) / 4 * 4;
}

/* y_r[i] = sum_k W[i, k] x_r[k] for r < R and i < P, where W runs along i
 * (W[woff + i + k * wks]): gemm_small_part reads W straight through, block
 * of GEMV_KB rows by block, into partial rows per vector, and gemv_sum adds
 * the partial rows in order into y_r[i] = C[yoff + r * yrs + i * ys]. */
static clt_status partial_rows(clt_device *dev, cl_mem W, cl_ulong woff, cl_ulong wks,
                               cl_ulong wbs, cl_mem X, cl_ulong xoff, cl_ulong xs, cl_ulong xrs,
                               cl_ulong xbs, cl_mem C, cl_ulong yoff, cl_ulong ys, cl_ulong yrs,
                               cl_ulong ybs, size_t P, size_t R, size_t K, size_t batch)
{
    size_t nq = (K + GEMV_KB - 1) / GEMV_KB, nc = (P + GEMV_PB - 1) / GEMV_PB;
    if (nq > SIZE_MAX / sizeof(float) / P / R / batch)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "matrix product: %zu x %zu partial sums over K = %zu too large", R, P,
                          K);
    size_t bytes = nq * R * P * batch * sizeof(float);
    cl_mem part = NULL;
    clt_status st = clt__buffer_alloc(dev, bytes, &part);
    if (st != CLT_OK)
        return st;
    cl_ulong P_ = P, R_ = R, K_ = K;
    size_t gp[3] = {nq, nc, batch}, lp[3] = {1, 1, 1}, gs[2] = {nc, batch}, ls[2] = {1, 1};
    clt__arg pa[] = {CLT__ARG(W),   CLT__ARG(woff), CLT__ARG(wks), CLT__ARG(wbs),
                     CLT__ARG(X),   CLT__ARG(xoff), CLT__ARG(xs),  CLT__ARG(xrs),
                     CLT__ARG(xbs), CLT__ARG(part), CLT__ARG(P_),  CLT__ARG(R_),
                     CLT__ARG(K_)};
    clt__arg sa[] = {CLT__ARG(part), CLT__ARG(C),   CLT__ARG(yoff), CLT__ARG(ys),
                     CLT__ARG(yrs),  CLT__ARG(ybs), CLT__ARG(P_),   CLT__ARG(R_),
                     CLT__ARG(K_)};
    st = clt__launch(dev, "gemm", GEMM_OPTIONS, "gemm_small_part", 3, gp, lp, 13, pa);
    if (st == CLT_OK)
        st = clt__launch(dev, "gemm", GEMM_OPTIONS, "gemv_sum", 2, gs, ls, 9, sa);
    /* OpenCL keeps the released buffer alive until the kernels finish. */
    clt__buffer_release(dev, part, bytes);
    return st;
}

/* A product with 1 to 64 rows (M) or columns (N), without packing:
 * - gemm_small (gemv_dot for one vector) when the dot products it needs run
 *   along contiguous memory (op(A) rows and op(B) columns contiguous in k),
 *   four rows of the large operand W against four vectors at a time;
 * - partial_rows, for up to SMALL_PART_MAX vectors, when the large operand
 *   is contiguous along the outputs instead.
 * Sets *handled to false, launching nothing, for the other layouts. */
static clt_status gemm_small(clt_device *dev, bool trans_a, bool trans_b, size_t M, size_t N,
                             size_t K, cl_mem A, size_t a_off, size_t lda, size_t stride_a,
                             cl_mem B, size_t b_off, size_t ldb, size_t stride_b, cl_mem C,
                             size_t c_off, size_t ldc, size_t stride_c, size_t batch,
                             bool *handled)
{
    /* op(A)[m, k] = A[a_off + m * a_rs + k * a_cs], op(B)[k, n] likewise. */
    cl_ulong a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
    cl_ulong b_rs = trans_b ? 1 : ldb, b_cs = trans_b ? ldb : 1;
    cl_ulong K_ = K, yoff = c_off, ybs = stride_c;
    *handled = true;
    if (a_cs == 1 && b_rs == 1) {
        cl_mem W, X;
        cl_ulong P, R, woff, wis, wbs, xoff, xrs, xbs, yps, yrs;
        if (M <= N) { /* W: the N columns of op(B); vectors: the M rows of op(A) */
            W = B, P = N, woff = b_off, wis = b_cs, wbs = stride_b;
            X = A, R = M, xoff = a_off, xrs = a_rs, xbs = stride_a, yps = 1, yrs = ldc;
        } else { /* W: the M rows of op(A); vectors: the N columns of op(B) */
            W = A, P = M, woff = a_off, wis = a_rs, wbs = stride_a;
            X = B, R = N, xoff = b_off, xrs = b_cs, xbs = stride_b, yps = ldc, yrs = 1;
        }
        cl_ulong rows = rows_per_item(dev, P, batch);
        size_t gws[2] = {(size_t)((P + rows - 1) / rows), batch}, lws[2] = {1, 1};
        if (R == 1) { /* gemv_dot: gemm_small without three idle vectors */
            clt__arg args[] = {CLT__ARG(W),    CLT__ARG(woff), CLT__ARG(wis), CLT__ARG(wbs),
                               CLT__ARG(X),    CLT__ARG(xoff), CLT__ARG(xbs), CLT__ARG(C),
                               CLT__ARG(yoff), CLT__ARG(yps),  CLT__ARG(ybs), CLT__ARG(P),
                               CLT__ARG(K_),   CLT__ARG(rows)};
            return clt__launch(dev, "gemm", GEMM_OPTIONS, "gemv_dot", 2, gws, lws, 14, args);
        }
        clt__arg args[] = {CLT__ARG(W),   CLT__ARG(woff), CLT__ARG(wis), CLT__ARG(wbs),
                           CLT__ARG(X),   CLT__ARG(xoff), CLT__ARG(xrs), CLT__ARG(xbs),
                           CLT__ARG(C),   CLT__ARG(yoff), CLT__ARG(yps), CLT__ARG(yrs),
                           CLT__ARG(ybs), CLT__ARG(P),    CLT__ARG(R),   CLT__ARG(K_),
                           CLT__ARG(rows)};
        return clt__launch(dev, "gemm", GEMM_OPTIONS, "gemm_small", 2, gws, lws, 17, args);
    }
    /* The large operand contiguous along the outputs: of the orientations
     * that allow it, the one with fewer vectors. */
    bool rows_ok = M <= SMALL_PART_MAX && b_cs == 1; /* W = op(B), vectors: rows of op(A) */
    bool cols_ok = N <= SMALL_PART_MAX && a_rs == 1; /* W = op(A), vectors: columns of op(B) */
    if (rows_ok && (!cols_ok || M <= N))
        return partial_rows(dev, B, b_off, b_rs, stride_b, A, a_off, a_cs, a_rs, stride_a, C,
                            yoff, 1, ldc, ybs, N, M, K, batch);
    if (cols_ok)
        return partial_rows(dev, A, a_off, a_cs, stride_a, B, b_off, b_rs, b_cs, stride_b, C,
                            yoff, ldc, 1, ybs, M, N, K, batch);
    *handled = false;
    return CLT_OK;
}

clt_status clt__gemm_cpu_f32(clt_device *dev, bool trans_a, bool trans_b, size_t M, size_t N,
                             size_t K, cl_mem A, size_t a_off, size_t lda, size_t stride_a,
                             cl_mem B, size_t b_off, size_t ldb, size_t stride_b, cl_mem C,
                             size_t c_off, size_t ldc, size_t stride_c, size_t batch)
{
    static const char *fn = "clt__gemm_cpu_f32";
    CLT__REQUIRE_ARG(dev, fn);
    if (M == 0 || N == 0 || batch == 0)
        return clt__ok();
    CLT__REQUIRE_ARG(C, fn);
    if (K > 0) {
        CLT__REQUIRE_ARG(A, fn);
        CLT__REQUIRE_ARG(B, fn);
    }
    if (ldc < N || (K > 0 && (lda < (trans_a ? M : K) || ldb < (trans_b ? K : N))))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: leading dimensions lda=%zu, ldb=%zu, ldc=%zu too small for "
                          "M=%zu, N=%zu, K=%zu (trans_a=%d, trans_b=%d)",
                          fn, lda, ldb, ldc, M, N, K, (int)trans_a, (int)trans_b);

    if (K > 0 && (M <= 64 || N <= 64)) {
        bool handled = false;
        clt_status st = gemm_small(dev, trans_a, trans_b, M, N, K, A, a_off, lda, stride_a, B,
                                   b_off, ldb, stride_b, C, c_off, ldc, stride_c, batch,
                                   &handled);
        if (st != CLT_OK || handled)
            return st == CLT_OK ? clt__ok() : st;
    }

    size_t mp = (M + GEMM_MR - 1) / GEMM_MR, np = (N + GEMM_NR - 1) / GEMM_NR;
    if (K > SIZE_MAX / 4 / GEMM_MR / mp || K > SIZE_MAX / 4 / GEMM_NR / np)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: sizes M=%zu, N=%zu, K=%zu too large",
                          fn, M, N, K);
    /* Floats of packed panels per batch; an operand with batch stride 0
     * (one matrix for every batch) is packed once. */
    size_t pa = mp * GEMM_MR * K, pb = np * GEMM_NR * K;
    bool a_once = stride_a == 0 || batch == 1, b_once = stride_b == 0 || batch == 1;
    size_t per = ((a_once ? 0 : pa) + (b_once ? 0 : pb)) * sizeof(float);
    size_t chunk = per == 0 ? batch : GEMM_SCRATCH_LIMIT / per;
    if (chunk == 0)
        chunk = 1;
    if (chunk > batch)
        chunk = batch;
    size_t mpan = 0, npan = 0;
    choose_blocks(mp, np, chunk, dev->info.compute_units, &mpan, &npan);

    clt_status st = CLT_OK;
    cl_mem ap = NULL, bp = NULL;
    size_t abytes = pa * (a_once ? 1 : chunk) * sizeof(float);
    size_t bbytes = pb * (b_once ? 1 : chunk) * sizeof(float);
    /* With K == 0 nothing is packed, but the kernel still wants buffers. */
    if (abytes == 0)
        abytes = bbytes = 64;
    CLT__TRY(clt__buffer_alloc(dev, abytes, &ap));
    CLT__TRY(clt__buffer_alloc(dev, bbytes, &bp));

    size_t lwc[3] = {1, 1, 1};
    cl_ulong a_rs = trans_a ? 1 : lda, a_cs = trans_a ? lda : 1;
    cl_ulong b_rs = trans_b ? 1 : ldb, b_cs = trans_b ? ldb : 1;
    cl_ulong sa = stride_a, sb = stride_b, sc = stride_c, ldc_ = ldc;
    cl_ulong m_ = M, n_ = N, k_ = K, mpan_ = mpan, npan_ = npan;
    cl_ulong pa_ = a_once ? 0 : pa, pb_ = b_once ? 0 : pb;
    for (size_t b0 = 0; b0 < batch; b0 += chunk) {
        size_t nb = batch - b0 < chunk ? batch - b0 : chunk;
        size_t kb = (K + GEMM_PKC - 1) / GEMM_PKC;
        if (K > 0 && (b0 == 0 || !a_once)) {
            cl_ulong ao = a_off + b0 * stride_a;
            size_t gwa[3] = {kb, mp, a_once ? 1 : nb};
            clt__arg aa[] = {CLT__ARG(A),  CLT__ARG(ao), CLT__ARG(a_rs), CLT__ARG(a_cs),
                             CLT__ARG(sa), CLT__ARG(m_), CLT__ARG(k_),   CLT__ARG(ap),
                             CLT__ARG(pa_)};
            CLT__TRY(clt__launch(dev, "gemm", GEMM_OPTIONS, "gemm_pack_a", 3, gwa, lwc, 9, aa));
        }
        if (K > 0 && (b0 == 0 || !b_once)) {
            cl_ulong bo = b_off + b0 * stride_b;
            size_t gwb[3], bgroups = b_once ? 1 : nb;
            cl_ulong kpi, ppi;
            pack_b_blocks(np, K, bgroups, dev->info.compute_units, &kpi, &ppi);
            gwb[0] = (K + kpi - 1) / kpi;
            gwb[1] = (np + ppi - 1) / ppi;
            gwb[2] = bgroups;
            clt__arg ba[] = {CLT__ARG(B),  CLT__ARG(bo),  CLT__ARG(b_rs), CLT__ARG(b_cs),
                             CLT__ARG(sb), CLT__ARG(n_),  CLT__ARG(k_),   CLT__ARG(bp),
                             CLT__ARG(pb_), CLT__ARG(kpi), CLT__ARG(ppi)};
            CLT__TRY(clt__launch(dev, "gemm", GEMM_OPTIONS, "gemm_pack_b", 3, gwb, lwc, 11, ba));
        }
        cl_ulong co = c_off + b0 * stride_c;
        size_t gwc[3] = {(np + npan - 1) / npan, (mp + mpan - 1) / mpan, nb};
        clt__arg ca[] = {CLT__ARG(ap),  CLT__ARG(pa_), CLT__ARG(bp), CLT__ARG(pb_),
                         CLT__ARG(C),   CLT__ARG(co),  CLT__ARG(ldc_), CLT__ARG(sc),
                         CLT__ARG(m_),  CLT__ARG(n_),  CLT__ARG(k_), CLT__ARG(mpan_),
                         CLT__ARG(npan_)};
        CLT__TRY(clt__launch(dev, "gemm", GEMM_OPTIONS, "gemm_tile", 3, gwc, lwc, 13, ca));
    }
done:
    /* OpenCL keeps released buffers alive until the queued kernels finish. */
    clt__buffer_release(dev, ap, abytes);
    clt__buffer_release(dev, bp, bbytes);
    return st == CLT_OK ? clt__ok() : st;
}
