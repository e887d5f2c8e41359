/* gemm.cl: GEMM for CPU devices, float32 or float64 (T, from the host's
 * dtype options): kernels that pack op(A) and op(B) into zero-padded panels,
 * and a kernel whose work-items each compute a block of C with an MR x
 * (VW * NV) register tile of VW-wide vectors; the same tile in one launch
 * for operands that fit in cache (B read in place, A packed by each
 * work-group); then the matrix-vector and few-row products, on vectors of
 * GEMV_VW elements. */

/* Tile shape, vector widths, K block of the product and K rows per packing
 * work-item come from the host (src/ops/gemm_cpu.c, one tile per machine
 * class and dtype) as -D options: it sizes the packed panels and launches
 * with the same values.  PoCL only emits full-width SIMD code for explicit
 * vector types, hence the vectors. */
#if !defined(GEMM_MR) || !defined(GEMM_NV) || !defined(GEMM_VW) || !defined(GEMM_KC) || \
    !defined(GEMM_PKC) || !defined(GEMV_VW) || !defined(GEMV_KB) || !defined(GEMV_PB) || \
    !defined(GEMV_DB)
#error "the GEMM_ and GEMV_ sizes come from src/ops/gemm_cpu.c"
#endif
#define GEMM_NR (GEMM_VW * GEMM_NV)

/* The tile's vectors, the gemv kernels' vectors and 16-wide vectors of T. */
#define GV CAT(T, GEMM_VW)
#define GV_LOAD CAT(vload, GEMM_VW)
#define GV_STORE CAT(vstore, GEMM_VW)
#define WV CAT(T, GEMV_VW)
#define WV_LOAD CAT(vload, GEMV_VW)
#define WV_STORE CAT(vstore, GEMV_VW)
#define WV_AT(p) WV_LOAD(0, (p))
#define T16 CAT(T, 16)

#if GEMM_MR == 4
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3)
#elif GEMM_MR == 6
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#elif GEMM_MR == 8
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#elif GEMM_MR == 12
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#elif GEMM_MR == 14
#define GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#else
#error "GEMM_MR must be 4, 6, 8, 12 or 14"
#endif

#if GEMM_NV == 1
#define GEMM_VECS(X, r) X(r, 0)
#define GEMM_BVECS(X) X(0)
#elif GEMM_NV == 2
#define GEMM_VECS(X, r) X(r, 0) X(r, 1)
#define GEMM_BVECS(X) X(0) X(1)
#elif GEMM_NV == 3
#define GEMM_VECS(X, r) X(r, 0) X(r, 1) X(r, 2)
#define GEMM_BVECS(X) X(0) X(1) X(2)
#elif GEMM_NV == 4
#define GEMM_VECS(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3)
#define GEMM_BVECS(X) X(0) X(1) X(2) X(3)
#else
#error "GEMM_NV must be 1 to 4"
#endif

/* The pack kernel runs one work-item per work-group, like gemm_tile, so
 * that PoCL compiles it once rather than once per local size it would pick
 * for each new shape.  Where a panel runs across memory rows (A as stored,
 * B transposed) it reads vectors along the rows (B: 16 x 16 blocks,
 * transposed in registers); scalar gathers cost several times more. */

/* Asks for a line of C ahead of its use (for writing).  OpenCL's own
 * prefetch() is empty in PoCL; clang's builtin emits prefetchw.  The C tile
 * is read and written only after the tile's K loop, so its misses (C rows lie
 * ldc apart, beyond what the hardware prefetcher follows) overlap the loop
 * instead of stalling after it: about 5% at N = 2048 on PoCL. */
#if defined(__clang__)
#define GEMM_PREFETCH_W(p) __builtin_prefetch((const void *)(size_t)(p), 1, 3)
#else
#define GEMM_PREFETCH_W(p)
#endif

/* Stores a tile vector at p past the caches where the compiler can: a
 * packed panel is read back much later, and a plain store first reads the
 * line it writes.  p must be aligned to the vector: the packed buffer's base
 * is (OpenCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN is at least 1024 bits) and the
 * callers' offsets are multiples of GEMM_VW elements. */
#if defined(__clang__)
#define GEMM_STORE_NT(x, p) __builtin_nontemporal_store((x), (__global GV *)(p))
#else
#define GEMM_STORE_NT(x, p) GV_STORE((x), 0, (p))
#endif

#if defined(__clang__)
#define GEMM_TRANSPOSE16 1
#define GEMM_S1LO 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define GEMM_S1HI 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#define GEMM_S2LO 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define GEMM_S2HI 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define GEMM_S4LO 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define GEMM_S4HI 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define GEMM_S8LO 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define GEMM_S8HI 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
/* Swaps bit s of the row index with bit s of the lane in rows x and y. */
#define GEMM_TP(x, y, LO, HI)                                                  \
    {                                                                          \
        T16 t_ = __builtin_shufflevector(x, y, LO);                            \
        y = __builtin_shufflevector(x, y, HI);                                 \
        x = t_;                                                                \
    }
#define GEMM_TSTAGE(r, s, a0, a1, a2, a3, a4, a5, a6, a7)                      \
    GEMM_TP(r[a0], r[a0 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a1], r[a1 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a2], r[a2 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a3], r[a3 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a4], r[a4 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a5], r[a5 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a6], r[a6 + s], GEMM_S##s##LO, GEMM_S##s##HI)                   \
    GEMM_TP(r[a7], r[a7 + s], GEMM_S##s##LO, GEMM_S##s##HI)
/* Transposes the 16 x 16 block held in T16 r[16]. */
#define GEMM_TRANSPOSE(r)                                                      \
    GEMM_TSTAGE(r, 1, 0, 2, 4, 6, 8, 10, 12, 14)                               \
    GEMM_TSTAGE(r, 2, 0, 1, 4, 5, 8, 9, 12, 13)                                \
    GEMM_TSTAGE(r, 4, 0, 1, 2, 3, 8, 9, 10, 11)                                \
    GEMM_TSTAGE(r, 8, 0, 1, 2, 3, 4, 5, 6, 7)

/* Vectors of 16, 8 and 4 elements at any address aligned to the element.
 * Plain accesses, not vload16/vstore16: those are calls, and a 16-wide
 * argument changes the calling convention on targets without 512-bit
 * registers (clang warns, and PoCL prints the warning). */
typedef T gemm_u16 __attribute__((ext_vector_type(16), aligned(sizeof(T))));
typedef T gemm_u8 __attribute__((ext_vector_type(8), aligned(sizeof(T))));
typedef T gemm_u4 __attribute__((ext_vector_type(4), aligned(sizeof(T))));

/* Stores the first n (a constant after inlining) lanes of the T16 x at d. */
#define GEMM_STORE_LANES(x, n, d)                                              \
    do {                                                                       \
        if ((n) == 16) {                                                       \
            *(__global gemm_u16 *)(d) = (x);                                   \
        } else if ((n) == 12) {                                                \
            *(__global gemm_u8 *)(d) = (x).lo;                                 \
            *(__global gemm_u4 *)((d) + 8) = (x).s89ab;                        \
        } else if ((n) == 8) {                                                 \
            *(__global gemm_u8 *)(d) = (x).lo;                                 \
        } else if ((n) == 4) {                                                 \
            *(__global gemm_u4 *)(d) = (x).lo.lo;                              \
        } else {                                                               \
            T16 v_ = (x);                                                      \
            for (int i_ = 0; i_ < (n); i_++)                                   \
                (d)[i_] = ((T *)&v_)[i_];                                      \
        }                                                                      \
    } while (0)

/* Packs K rows [k, k + 16) of a panel of `width` lines that each run along
 * K in memory (line c at src + c * stride): dst[(k + q) * width + c], 16
 * lines at a time through the register transpose. */
static void gemm_pack_t16(__global const T *src, ulong stride, int width, __global T *dst,
                          ulong k)
{
    for (int c0 = 0; c0 < width; c0 += 16) {
        T16 r[16];
        for (int c = 0; c < 16; c++)
            r[c] = c0 + c < width ? *(__global const gemm_u16 *)(src + (c0 + c) * stride + k)
                                  : (T16)(0);
        GEMM_TRANSPOSE(r)
        int n = width - c0 < 16 ? width - c0 : 16;
        for (int q = 0; q < 16; q++)
            GEMM_STORE_LANES(r[q], n, dst + (k + q) * width + c0);
    }
}
#else
#define GEMM_TRANSPOSE16 0
#endif

/* Rows of A as stored (cs == 1): a vector of VW elements of K from each of
 * the MR rows, stored element by element across the rows.  The 16 x 16
 * register transpose that gemm_pack_b_panel uses would be 6/16 full for the
 * AVX2 tile's 6 rows, and took twice as long (256 x 256 float32 on PoCL
 * targeting haswell: A and B packed in 60-95 us against 38-42; the same on
 * AVX-512's 12 rows). */
#define GEMM_PACK_LOAD(r) GV x##r = GV_LOAD(0, src + (r) * rs + k);
#define GEMM_PACK_STORE(r) dst[(k - k0 + q) * GEMM_MR + (r)] = ((const T *)&x##r)[q];

/* Packs rows k0..k1 of K of row panel ip of op(A) (M x K, element (i, k)
 * at A[i * rs + k * cs]) into dst[(k - k0) * MR + r] for row ip * MR + r,
 * zero beyond M; defined for a __global dst (gemm_pack) and a __private
 * one (gemm_tile_direct). */
#define GEMM_PACK_A_PANEL(name, AS)                                            \
    static void name(__global const T *A, ulong rs, ulong cs, ulong M,         \
                     AS T *dst, ulong ip, ulong k0, ulong k1)                  \
    {                                                                          \
        ulong i0 = ip * GEMM_MR;                                               \
        int mr = (int)min((ulong)GEMM_MR, M - i0);                             \
        __global const T *src = A + i0 * rs;                                   \
        ulong k = k0;                                                          \
        if (cs == 1 && mr == GEMM_MR) {                                        \
            for (; k + GEMM_VW <= k1; k += GEMM_VW) {                          \
                GEMM_ROWS(GEMM_PACK_LOAD)                                      \
                _Pragma("unroll") for (int q = 0; q < GEMM_VW; q++)            \
                {                                                              \
                    GEMM_ROWS(GEMM_PACK_STORE)                                 \
                }                                                              \
            }                                                                  \
        }                                                                      \
        if (rs == 1 && mr == GEMM_MR) {                                        \
            for (; k < k1; k++)                                                \
                for (int i = 0; i < GEMM_MR; i++)                              \
                    dst[(k - k0) * GEMM_MR + i] = src[i + k * cs];             \
        }                                                                      \
        for (; k < k1; k++)                                                    \
            for (int i = 0; i < GEMM_MR; i++)                                  \
                dst[(k - k0) * GEMM_MR + i] =                                  \
                    i < mr ? src[i * rs + k * cs] : (T)0;                      \
    }
GEMM_PACK_A_PANEL(gemm_pack_a_panel, __global)
GEMM_PACK_A_PANEL(gemm_pack_a_private, __private)

/* Packs column panel jp, rows k0..k1 of op(B) (K x N, element (k, n) at
 * B[k * rs + n * cs]) into P[jp * K * NR + k * NR + c] for column
 * jp * NR + c, zero beyond N. */
static void gemm_pack_b_panel(__global const T *B, ulong rs, ulong cs, ulong N, ulong K,
                              __global T *P, ulong jp, ulong k0, ulong k1)
{
    ulong j0 = jp * GEMM_NR;
    int nr = (int)min((ulong)GEMM_NR, N - j0);
    __global const T *src = B + j0 * cs;
    __global T *dst = P + jp * K * GEMM_NR;
    ulong k = k0;
#if GEMM_TRANSPOSE16
    if (rs == 1 && nr == GEMM_NR)
        for (; k + 16 <= k1; k += 16)
            gemm_pack_t16(src, cs, GEMM_NR, dst, k);
#endif
    for (; k < k1; k++)
        for (int c = 0; c < GEMM_NR; c++)
            dst[k * GEMM_NR + c] = c < nr ? src[k * rs + c * cs] : (T)0;
}

/* Packs rows k0..k1 of column panels jp..jp1 of op(B) (K x N at B) into
 * Bp as gemm_pack_b_panel lays it out.  With rows of B contiguous (cs == 1)
 * the full panels are copied row by row, so that the reads run along memory
 * for (jp1 - jp) * NR columns at a time (whole rows where there are enough
 * work-items): panel by panel, every row of a panel starts a new 128-byte
 * stretch ldb floats away, which took half as long again (4096 x 4096 on
 * PoCL: 11-13 ms against 7-8). */
static void gemm_pack_b_rows(__global const T *src, ulong rs, ulong cs, ulong N, ulong K,
                             __global T *dst, ulong jp, ulong jp1, ulong k0, ulong k1)
{
    if (cs == 1) {
        ulong full = min(jp1, N / GEMM_NR);
        for (ulong k = k0; k < k1 && jp < full; k++)
            for (ulong p = jp; p < full; p++)
                for (int v = 0; v < GEMM_NV; v++)
                    GEMM_STORE_NT(GV_LOAD(v, src + k * rs + p * GEMM_NR),
                                  dst + (p * K + k) * GEMM_NR + v * GEMM_VW);
        jp = max(jp, full);
    }
    for (; jp < jp1; jp++)
        gemm_pack_b_panel(src, rs, cs, N, K, dst, jp, k0, k1);
}

/* Packs op(A) (M x K at A + a_off + b * a_bstride) of each batch b into
 * Ap[b * a_pstride + ...] and op(B) (K x N at B + b_off + b * b_bstride)
 * into Bp[b * b_pstride + ...], in one launch: a launch costs PoCL 10-15 us
 * of device time, as much as packing a 256 x 256 operand.  Work-groups
 * [0, a_items) pack A, one (PKC rows of K, row panel, batch) each, a_kb
 * K chunks by a_mp row panels by the batches; the rest pack B, one (kpi rows
 * of K, ppi column panels, batch) each, b_kb by b_pb by the batches (sizes
 * from the host; a_items or the B items may be none). */
CLT_KERNEL_WG(gemm_pack, 1, 1, 1)(__global const T *A, ulong a_off, ulong a_rs, ulong a_cs,
                                  ulong a_bstride, __global T *Ap, ulong a_pstride, ulong a_kb,
                                  ulong a_mp, ulong a_items, __global const T *B, ulong b_off,
                                  ulong b_rs, ulong b_cs, ulong b_bstride, __global T *Bp,
                                  ulong b_pstride, ulong b_kb, ulong b_pb, ulong kpi, ulong ppi,
                                  ulong M, ulong N, ulong K)
{
    ulong g = get_group_id(0);
    if (g < a_items) {
        ulong kq = g % a_kb, ip = g / a_kb % a_mp, b = g / a_kb / a_mp;
        ulong k0 = kq * GEMM_PKC, k1 = min(k0 + GEMM_PKC, K);
        gemm_pack_a_panel(A + a_off + b * a_bstride, a_rs, a_cs, M,
                          Ap + b * a_pstride + (ip * K + k0) * GEMM_MR, ip, k0, k1);
        return;
    }
    g -= a_items;
    ulong kq = g % b_kb, pq = g / b_kb % b_pb, b = g / b_kb / b_pb;
    ulong k0 = kq * kpi, k1 = min(k0 + kpi, K);
    ulong np = (N + GEMM_NR - 1) / GEMM_NR;
    ulong jp = pq * ppi, jp1 = min(jp + ppi, np);
    gemm_pack_b_rows(B + b_off + b * b_bstride, b_rs, b_cs, N, K, Bp + b * b_pstride, jp, jp1,
                     k0, k1);
}

#define GEMM_DECL_V(r, v) GV c##r##_##v = (GV)(0);
#define GEMM_DECL_R(r) GEMM_VECS(GEMM_DECL_V, r)
#define GEMM_LOADB(v) GV b##v = GV_LOAD(v, bp);
/* fma, not mad: PoCL turns mad into a multiply and an add.  The host only
 * picks this kernel for devices with hardware FMA (CL_FP_FMA). */
#define GEMM_FMA_V(r, v) c##r##_##v = fma(a##r, b##v, c##r##_##v);
#define GEMM_FMA_R(r)                                                          \
    {                                                                          \
        GV a##r = (GV)(ap[r]);                                                 \
        GEMM_VECS(GEMM_FMA_V, r)                                               \
    }

/* Full tile: C row r, vector v, plus what an earlier K block left there. */
#define GEMM_STORE_V(r, v)                                                     \
    {                                                                          \
        __global T *p_ = cp + (r) * ldc + (v) * GEMM_VW;                       \
        GV x_ = c##r##_##v;                                                    \
        if (pc > 0)                                                            \
            x_ += GV_LOAD(0, p_);                                              \
        GV_STORE(x_, 0, p_);                                                   \
    }
#define GEMM_STORE_R(r) GEMM_VECS(GEMM_STORE_V, r)

/* Edge tile: only the mr x nr elements inside C. */
#define GEMM_EDGE_V(r, v)                                                      \
    if ((r) < mr && (v) * GEMM_VW < nr) {                                      \
        GV x_ = c##r##_##v;                                                    \
        const T *t_ = (const T *)&x_;                                          \
        __global T *p_ = cp + (r) * ldc + (v) * GEMM_VW;                       \
        int n_ = nr - (v) * GEMM_VW < GEMM_VW ? nr - (v) * GEMM_VW : GEMM_VW;  \
        for (int q_ = 0; q_ < n_; q_++)                                        \
            p_[q_] = pc > 0 ? p_[q_] + t_[q_] : t_[q_];                        \
    }
#define GEMM_EDGE_R(r) GEMM_VECS(GEMM_EDGE_V, r)

/* One MR x NR tile of C from K rows [pc, pc + kc): A from ap (MR elements
 * per K row), B vectors loaded by LOADB from bp, which moves bstep
 * elements per K row; then C (cp, mr x nr inside it) stored, plus what an
 * earlier K block left there. */
#define GEMM_MICRO(LOADB, bstep)                                               \
    {                                                                          \
        for (int r_ = 0; r_ < mr; r_++)                                        \
            for (int v_ = 0; v_ < GEMM_NR; v_ += 64 / (int)sizeof(T))          \
                GEMM_PREFETCH_W(cp + r_ * ldc + v_);                           \
        GEMM_ROWS(GEMM_DECL_R)                                                 \
        for (uint k = 0; k < kc; k++) {                                        \
            GEMM_BVECS(LOADB)                                                  \
            GEMM_ROWS(GEMM_FMA_R)                                              \
            ap += GEMM_MR;                                                     \
            bp += (bstep);                                                     \
        }                                                                      \
        if (mr == GEMM_MR && nr == GEMM_NR) {                                  \
            GEMM_ROWS(GEMM_STORE_R)                                            \
        } else {                                                               \
            GEMM_ROWS(GEMM_EDGE_R)                                             \
        }                                                                      \
    }

/* C[b] (M x N at C + off + b * bstride, leading dimension ldc) = Ap[b] *
 * Bp[b].  Work-group (n block, m block, b) of one work-item computes mpan
 * row panels by npan column panels, K block by K block: each B micro-panel
 * meets every A panel of the block, which stays in L2 across the column
 * panels (block sizes in src/ops/gemm_cpu.c).  K == 0 makes one pass that
 * writes zeros. */
CLT_KERNEL_WG(gemm_tile, 1, 1, 1)(__global const T *Ap, ulong pa_stride, __global const T *Bp,
                                  ulong pb_stride, __global T *C, ulong off, ulong ldc,
                                  ulong bstride, ulong M, ulong N, ulong K, ulong mpan, ulong npan)
{
    ulong b = get_group_id(2);
    ulong mp = (M + GEMM_MR - 1) / GEMM_MR, np = (N + GEMM_NR - 1) / GEMM_NR;
    ulong ip0 = get_group_id(1) * mpan, jp0 = get_group_id(0) * npan;
    ulong ip1 = min(ip0 + mpan, mp), jp1 = min(jp0 + npan, np);
    __global const T *Ab = Ap + b * pa_stride;
    __global const T *Bb = Bp + b * pb_stride;
    __global T *Cb = C + off + b * bstride;

    for (ulong pc = 0; pc == 0 || pc < K; pc += GEMM_KC) {
        uint kc = (uint)min((ulong)GEMM_KC, K - pc);
        for (ulong jp = jp0; jp < jp1; jp++) {
            __global const T *bpanel = Bb + (jp * K + pc) * GEMM_NR;
            int nr = (int)min((ulong)GEMM_NR, N - jp * GEMM_NR);
            for (ulong ip = ip0; ip < ip1; ip++) {
                __global const T *ap = Ab + (ip * K + pc) * GEMM_MR;
                __global const T *bp = bpanel;
                int mr = (int)min((ulong)GEMM_MR, M - ip * GEMM_MR);
                __global T *cp = Cb + ip * GEMM_MR * ldc + jp * GEMM_NR;
                GEMM_MICRO(GEMM_LOADB, GEMM_NR)
            }
        }
    }
}

/* A B vector past the last column of an edge panel: columns from nr on
 * read as zero, none read past N. */
static GV gemm_load_b_edge(__global const T *bp, int v, int nr)
{
    T t[GEMM_VW];
    for (int q = 0; q < GEMM_VW; q++)
        t[q] = v * GEMM_VW + q < nr ? bp[v * GEMM_VW + q] : (T)0;
    return GV_LOAD(0, t);
}
#define GEMM_LOADB_EDGE(v) GV b##v = gemm_load_b_edge(bp, v, nr);
/* op(B) repeating one column (b_cs 0): each row of it one value. */
#define GEMM_LOADB_REP(v) GV b##v = (GV)(bp[0]);

/* gemm_tile's product with no gemm_pack launch before it, for operands that
 * fit in cache (the host decides): op(B) is read where it lies, its rows
 * contiguous (element (k, n) at B[k * b_rs + n * b_cs], b_cs 1: KC x NR
 * micro-panels of NR contiguous elements per K row; or b_cs 0, a repeated
 * column, read as its row-major copy would be), and each row panel of op(A) (element
 * (i, k) at A[i * a_rs + k * a_cs]) is packed by the work-group itself, one
 * K block at a time, into a private buffer, then met by the group's column
 * panels, whose rows stay in L2.  The sums run in gemm_tile's order, so
 * the two give the same bits. */
CLT_KERNEL_WG(gemm_tile_direct, 1, 1, 1)(__global const T *A, ulong a_off, ulong a_rs,
                                         ulong a_cs, ulong a_bstride, __global const T *B,
                                         ulong b_off, ulong b_rs, ulong b_cs, ulong b_bstride,
                                         __global T *C, ulong off, ulong ldc, ulong bstride,
                                         ulong M, ulong N, ulong K, ulong mpan, ulong npan)
{
    ulong b = get_group_id(2);
    ulong mp = (M + GEMM_MR - 1) / GEMM_MR, np = (N + GEMM_NR - 1) / GEMM_NR;
    ulong ip0 = get_group_id(1) * mpan, jp0 = get_group_id(0) * npan;
    ulong ip1 = min(ip0 + mpan, mp), jp1 = min(jp0 + npan, np);
    __global const T *Ab = A + a_off + b * a_bstride;
    __global const T *Bb = B + b_off + b * b_bstride;
    __global T *Cb = C + off + b * bstride;
    T apanel[GEMM_MR * GEMM_KC];

    for (ulong pc = 0; pc == 0 || pc < K; pc += GEMM_KC) {
        uint kc = (uint)min((ulong)GEMM_KC, K - pc);
        for (ulong ip = ip0; ip < ip1; ip++) {
            gemm_pack_a_private(Ab, a_rs, a_cs, M, apanel, ip, pc, pc + kc);
            int mr = (int)min((ulong)GEMM_MR, M - ip * GEMM_MR);
            for (ulong jp = jp0; jp < jp1; jp++) {
                const T *ap = apanel;
                __global const T *bp = Bb + pc * b_rs + jp * GEMM_NR * b_cs;
                int nr = (int)min((ulong)GEMM_NR, N - jp * GEMM_NR);
                __global T *cp = Cb + ip * GEMM_MR * ldc + jp * GEMM_NR;
                if (b_cs == 0) {
                    GEMM_MICRO(GEMM_LOADB_REP, b_rs)
                } else if (nr == GEMM_NR) {
                    GEMM_MICRO(GEMM_LOADB, b_rs)
                } else {
                    GEMM_MICRO(GEMM_LOADB_EDGE, b_rs)
                }
            }
        }
    }
}

/* ---- matrix-vector products (M == 1 or N == 1) ----------------------------------
 * y[b][i * ys] = sum_k W[b][i * wis + k * wks] * x[b][k * xs] for i < P.  The
 * host maps A x (N == 1) and x B (M == 1) onto W and x.  The packed GEMM
 * would copy all of W into panels and compute 32 columns to keep one; these
 * read W once, straight through. */

/* Sum of the lanes of a gemv vector, halves first.  Only the widths up to
 * GEMV_VW: a wider argument than the target's registers changes the calling
 * convention, and clang warns. */
static T gemv_fold2(CAT(T, 2) v)
{
    return v.x + v.y;
}
#if GEMV_VW >= 4
static T gemv_fold4(CAT(T, 4) v)
{
    return gemv_fold2(v.lo + v.hi);
}
#endif
#if GEMV_VW >= 8
static T gemv_fold8(CAT(T, 8) v)
{
    return gemv_fold4(v.lo + v.hi);
}
#endif
#if GEMV_VW >= 16
static T gemv_fold16(CAT(T, 16) v)
{
    return gemv_fold8(v.lo + v.hi);
}
#endif
#define gemv_fold CAT(gemv_fold, GEMV_VW)

/* GEMV_DB (from the host, which cuts K into slices of whole blocks): K
 * elements per block of gemv_dot and gemm_small.  Within a block each
 * lane adds up GEMV_DB / GEMV_VW products in T; the folded block sums go
 * into a compensated (Kahan) sum, so the error no longer grows with K: a
 * float32 lane that ran through all of K stalled at 2^24 (a dot product of
 * 2^29 ones gave 2^28). */
#define GEMV_ADD(s, c, x) CLT_ADD_COMPENSATED(T, s, c, x)

/* GEMV_VW elements of p from element k on, s apart: one load when they are
 * contiguous, one element repeated when s is 0 (an expanded operand). */
static WV gemv_load(__global const T *p, ulong s, ulong k)
{
    if (s == 1)
        return WV_LOAD(0, p + k);
    if (s == 0)
        return (WV)(p[0]);
    T t[GEMV_VW];
    for (int l = 0; l < GEMV_VW; l++)
        t[l] = p[(k + l) * s];
    return WV_LOAD(0, t);
}

#define GEMV_AT(p, k) WV_LOAD(0, (p) + (k))
#define GEMV_AT_W(p, k) gemv_load((p), wks, (k))
#define GEMV_AT_X(p, k) gemv_load((p), xs, (k))

/* y[b][i * ys] = sum_k W[b][i * wis + k * wks] x[b][k * xs]: each work-item
 * (g, b, q) takes `rows` rows (a multiple of 4), four at a time against one
 * load of x (LX), rows read by LW, over the K slice [q * kslice, (q + 1) *
 * kslice) (kslice a multiple of GEMV_DB), in blocks of GEMV_DB, the last
 * K % GEMV_VW products after them.  One slice (a launch with global size 1
 * along dimension 2) stores y; several store each row's compensated sum
 * (s, c) at part[((b * P + i) * nslices + q) * 2], for gemv_dot_sum.
 * gemv_dot: contiguous rows and x (wks == xs == 1), whole-vector loads;
 * gemv_dot_any: any strides, 0 included. */
#define GEMV_DOT(name, LW, LX)                                                 \
    CLT_KERNEL_WG(name, 1, 1, 1)(__global const T *W, ulong woff, ulong wis,   \
                                 ulong wks, ulong wbs, __global const T *x,    \
                                 ulong xoff, ulong xs, ulong xbs,              \
                                 __global T *y, ulong yoff, ulong ys,          \
                                 ulong ybs, ulong P, ulong K, ulong rows,      \
                                 ulong kslice, __global T *part)               \
    {                                                                          \
        ulong b = get_global_id(1), q = get_global_id(2);                      \
        ulong nsl = get_global_size(2);                                        \
        ulong i0 = get_global_id(0) * rows, i1 = min(i0 + rows, P);            \
        __global const T *xb = x + xoff + b * xbs;                             \
        __global const T *wb = W + woff + b * wbs;                             \
        __global T *yb = y + yoff + b * ybs;                                   \
        ulong kv = K / GEMV_VW * GEMV_VW;                                      \
        ulong k0 = q * kslice, k1 = q + 1 == nsl ? K : min(k0 + kslice, K);    \
        ulong k1v = min(k1, kv);                                               \
        for (ulong i = i0; i < i1; i += 4) {                                   \
            /* Past the last row, repeat it (and drop the result). */          \
            __global const T *w0 = wb + i * wis;                               \
            __global const T *w1 = wb + min(i + 1, P - 1) * wis;               \
            __global const T *w2 = wb + min(i + 2, P - 1) * wis;               \
            __global const T *w3 = wb + min(i + 3, P - 1) * wis;               \
            T s0 = 0, s1 = 0, s2 = 0, s3 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0;  \
            for (ulong kb = k0; kb < k1v; kb += GEMV_DB) {                     \
                ulong ke = min(kb + GEMV_DB, k1v);                             \
                WV a0 = 0, a1 = 0, a2 = 0, a3 = 0;                             \
                for (ulong k = kb; k < ke; k += GEMV_VW) {                     \
                    WV xv = LX(xb, k);                                         \
                    a0 = fma(LW(w0, k), xv, a0);                               \
                    a1 = fma(LW(w1, k), xv, a1);                               \
                    a2 = fma(LW(w2, k), xv, a2);                               \
                    a3 = fma(LW(w3, k), xv, a3);                               \
                }                                                              \
                GEMV_ADD(s0, c0, gemv_fold(a0));                               \
                GEMV_ADD(s1, c1, gemv_fold(a1));                               \
                GEMV_ADD(s2, c2, gemv_fold(a2));                               \
                GEMV_ADD(s3, c3, gemv_fold(a3));                               \
            }                                                                  \
            T t0 = 0, t1 = 0, t2 = 0, t3 = 0;                                  \
            for (ulong k = max(k0, kv); k < k1; k++) {                         \
                T xk = xb[k * xs];                                             \
                t0 = fma(w0[k * wks], xk, t0);                                 \
                t1 = fma(w1[k * wks], xk, t1);                                 \
                t2 = fma(w2[k * wks], xk, t2);                                 \
                t3 = fma(w3[k * wks], xk, t3);                                 \
            }                                                                  \
            GEMV_ADD(s0, c0, t0);                                              \
            GEMV_ADD(s1, c1, t1);                                              \
            GEMV_ADD(s2, c2, t2);                                              \
            GEMV_ADD(s3, c3, t3);                                              \
            if (nsl == 1) {                                                    \
                yb[i * ys] = s0;                                               \
                if (i + 1 < P)                                                 \
                    yb[(i + 1) * ys] = s1;                                     \
                if (i + 2 < P)                                                 \
                    yb[(i + 2) * ys] = s2;                                     \
                if (i + 3 < P)                                                 \
                    yb[(i + 3) * ys] = s3;                                     \
            } else {                                                           \
                T sc[8] = {s0, c0, s1, c1, s2, c2, s3, c3};                    \
                for (ulong u = 0; u < 4 && i + u < P; u++) {                   \
                    __global T *pp = part + ((b * P + i + u) * nsl + q) * 2;   \
                    pp[0] = sc[2 * u];                                         \
                    pp[1] = sc[2 * u + 1];                                     \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }

GEMV_DOT(gemv_dot, GEMV_AT, GEMV_AT)
GEMV_DOT(gemv_dot_any, GEMV_AT_W, GEMV_AT_X)

/* y[b][i * ys] for each (i, b) from gemv_dot's slice sums: their sums s
 * added in order of the slice, compensated, less the lost parts c. */
CLT_KERNEL_WG(gemv_dot_sum, 1, 1, 1)(__global const T *part, ulong nsl, __global T *y,
                                     ulong yoff, ulong ys, ulong ybs, ulong P)
{
    ulong i = get_global_id(0), b = get_global_id(1);
    __global const T *pp = part + (b * P + i) * nsl * 2;
    T s = 0, c = 0, lost = 0;
    for (ulong q = 0; q < nsl; q++) {
        GEMV_ADD(s, c, pp[2 * q]);
        lost += pp[2 * q + 1];
    }
    y[yoff + b * ybs + i * ys] = isfinite(s) ? s - (c + lost) : s;
}

/* Columns of W contiguous (wis == 1), x of any stride: see gemm_small_part
 * (R vectors, here one) and gemv_sum.  Walking W column strip by column
 * strip instead strides through every row and runs at half the speed on
 * PoCL. */

/* y[b][r * yrs + j * ys] = sum over q of part[b][q][r][j] for r < R, in
 * order of q and compensated (GEMV_ADD);
 * work-item (c, b) takes the columns [c * GEMV_PB, (c + 1) * GEMV_PB). */
CLT_KERNEL_WG(gemv_sum, 1, 1, 1)(__global const T *part, __global T *y, ulong yoff, ulong ys,
                                 ulong yrs, ulong ybs, ulong P, ulong R, ulong K)
{
    ulong c = get_global_id(0), b = get_global_id(1);
    ulong nq = (K + GEMV_KB - 1) / GEMV_KB;
    ulong j0 = c * GEMV_PB, j1 = min(j0 + GEMV_PB, P);
    __global T *yb = y + yoff + b * ybs;
    ulong jv = j0 + (j1 - j0) / GEMV_VW * GEMV_VW;
    for (ulong r = 0; r < R; r++) {
        __global const T *pb = part + (b * nq * R + r) * P;
        __global T *yr = yb + r * yrs;
        /* GEMV_VW columns at a time: the compensated sums' dependent
         * operations, one column at a time, took longer than the products */
        for (ulong j = j0; j < jv; j += GEMV_VW) {
            WV s = WV_LOAD(0, pb + j), e = 0;
            for (ulong q = 1; q < nq; q++)
                CLT_ADD_COMPENSATED(WV, s, e, WV_LOAD(0, pb + q * R * P + j));
            T t[GEMV_VW];
            WV_STORE(s, 0, t);
            for (int l = 0; l < GEMV_VW; l++)
                yr[(j + l) * ys] = t[l];
        }
        for (ulong j = jv; j < j1; j++) {
            T s = pb[j], e = 0;
            for (ulong q = 1; q < nq; q++)
                GEMV_ADD(s, e, pb[q * R * P + j]);
            yr[j * ys] = s;
        }
    }
}

/* Partial products for R vectors x_r (xrs apart, elements xs apart) and a
 * W contiguous along its outputs (W[i + k * wks]): work-item (q, c, b)
 * reads rows [q * GEMV_KB, (q + 1) * GEMV_KB) of W straight through and adds
 * them, over the columns [c * GEMV_PB, (c + 1) * GEMV_PB), into its own
 * partial rows part[b][q][r][...] (which stay in cache), four vectors at a
 * time and the last R % 4 one by one (the block of W comes from cache after
 * the first pass); gemv_sum then adds up the partial rows.  With wrep (a
 * constant, so each kernel compiles one branch) W repeats one value along
 * its outputs, W[k * wks] for every i: an operand that repeats one column,
 * read in place, each lane taking the value its copy would hold. */
#define GSP_WV(p, j) (wrep ? (WV)((p)[0]) : WV_LOAD(0, (p) + (j)))
#define GSP_W(p, j) (wrep ? (p)[0] : (p)[j])
#define GEMM_SMALL_PART_PARAMS                                                 \
    __global const T *W, ulong woff, ulong wks, ulong wbs, __global const T *x,  \
        ulong xoff, ulong xs, ulong xrs, ulong xbs, __global T *part, ulong P,   \
        ulong R, ulong K
static inline __attribute__((always_inline)) void
gemm_small_part_body(GEMM_SMALL_PART_PARAMS, const int wrep)
{
    ulong q = get_global_id(0), c = get_global_id(1), b = get_global_id(2);
    ulong nq = (K + GEMV_KB - 1) / GEMV_KB;
    ulong k0 = q * GEMV_KB, k1 = min(k0 + GEMV_KB, K);
    ulong j0 = c * GEMV_PB, j1 = min(j0 + GEMV_PB, P), jv = j0 + (j1 - j0) / GEMV_VW * GEMV_VW;
    __global const T *xb = x + xoff + b * xbs;
    __global const T *wb = W + woff + b * wbs;
    __global T *pq = part + (b * nq + q) * R * P;
    ulong r0 = 0;
    for (; r0 + 4 <= R; r0 += 4) {
        __global T *p0 = pq + r0 * P, *p1 = p0 + P, *p2 = p1 + P, *p3 = p2 + P;
        __global const T *x0 = xb + r0 * xrs, *x1 = x0 + xrs, *x2 = x1 + xrs;
        __global const T *x3 = x2 + xrs;
        for (ulong j = j0; j < j1; j++)
            p0[j] = p1[j] = p2[j] = p3[j] = 0;
        ulong k = k0;
        /* Four rows of W against the four vectors: each partial row is
         * loaded and stored once per four rows. */
        for (; k + 4 <= k1; k += 4) {
            __global const T *w0 = wb + k * wks, *w1 = w0 + wks, *w2 = w1 + wks;
            __global const T *w3 = w2 + wks;
#define GEMM_SMALL_X(v, xv)                                                    \
    T v##0 = xv[k * xs], v##1 = xv[(k + 1) * xs], v##2 = xv[(k + 2) * xs], \
          v##3 = xv[(k + 3) * xs];
            GEMM_SMALL_X(a, x0)
            GEMM_SMALL_X(b, x1)
            GEMM_SMALL_X(c, x2)
            GEMM_SMALL_X(d, x3)
#undef GEMM_SMALL_X
            for (ulong j = j0; j < jv; j += GEMV_VW) {
                WV u0 = GSP_WV(w0, j), u1 = GSP_WV(w1, j);
                WV u2 = GSP_WV(w2, j), u3 = GSP_WV(w3, j);
#define GEMM_SMALL_ACC(pv, v)                                                  \
    WV_STORE(fma(u3, (WV)v##3,                                            \
                 fma(u2, (WV)v##2,                                        \
                     fma(u1, (WV)v##1,                                    \
                         fma(u0, (WV)v##0, WV_LOAD(0, pv + j))))),        \
             0, pv + j);
                GEMM_SMALL_ACC(p0, a)
                GEMM_SMALL_ACC(p1, b)
                GEMM_SMALL_ACC(p2, c)
                GEMM_SMALL_ACC(p3, d)
#undef GEMM_SMALL_ACC
            }
            for (ulong j = jv; j < j1; j++) {
                T e0 = GSP_W(w0, j), e1 = GSP_W(w1, j), e2 = GSP_W(w2, j), e3 = GSP_W(w3, j);
                p0[j] = fma(e3, a3, fma(e2, a2, fma(e1, a1, fma(e0, a0, p0[j]))));
                p1[j] = fma(e3, b3, fma(e2, b2, fma(e1, b1, fma(e0, b0, p1[j]))));
                p2[j] = fma(e3, c3, fma(e2, c2, fma(e1, c1, fma(e0, c0, p2[j]))));
                p3[j] = fma(e3, d3, fma(e2, d2, fma(e1, d1, fma(e0, d0, p3[j]))));
            }
        }
        for (; k < k1; k++) {
            __global const T *w = wb + k * wks;
            T s0 = x0[k * xs], s1 = x1[k * xs], s2 = x2[k * xs], s3 = x3[k * xs];
            for (ulong j = j0; j < jv; j += GEMV_VW) {
                WV wv = GSP_WV(w, j);
                WV_STORE(fma(wv, (WV)s0, WV_LOAD(0, p0 + j)), 0, p0 + j);
                WV_STORE(fma(wv, (WV)s1, WV_LOAD(0, p1 + j)), 0, p1 + j);
                WV_STORE(fma(wv, (WV)s2, WV_LOAD(0, p2 + j)), 0, p2 + j);
                WV_STORE(fma(wv, (WV)s3, WV_LOAD(0, p3 + j)), 0, p3 + j);
            }
            for (ulong j = jv; j < j1; j++) {
                p0[j] = fma(GSP_W(w, j), s0, p0[j]);
                p1[j] = fma(GSP_W(w, j), s1, p1[j]);
                p2[j] = fma(GSP_W(w, j), s2, p2[j]);
                p3[j] = fma(GSP_W(w, j), s3, p3[j]);
            }
        }
    }
    /* The last R % 4 vectors one by one, four rows of W at a time. */
    for (; r0 < R; r0++) {
        __global T *p = pq + r0 * P;
        __global const T *xr = xb + r0 * xrs;
        for (ulong j = j0; j < j1; j++)
            p[j] = 0;
        ulong k = k0;
        for (; k + 4 <= k1; k += 4) {
            __global const T *w0 = wb + k * wks, *w1 = w0 + wks, *w2 = w1 + wks;
            __global const T *w3 = w2 + wks;
            T s0 = xr[k * xs], s1 = xr[(k + 1) * xs], s2 = xr[(k + 2) * xs];
            T s3 = xr[(k + 3) * xs];
            for (ulong j = j0; j < jv; j += GEMV_VW) {
                WV t = WV_LOAD(0, p + j);
                t = fma(GSP_WV(w0, j), (WV)s0, t);
                t = fma(GSP_WV(w1, j), (WV)s1, t);
                t = fma(GSP_WV(w2, j), (WV)s2, t);
                t = fma(GSP_WV(w3, j), (WV)s3, t);
                WV_STORE(t, 0, p + j);
            }
            for (ulong j = jv; j < j1; j++) {
                T e0 = GSP_W(w0, j), e1 = GSP_W(w1, j), e2 = GSP_W(w2, j), e3 = GSP_W(w3, j);
                p[j] = fma(e3, s3, fma(e2, s2, fma(e1, s1, fma(e0, s0, p[j]))));
            }
        }
        for (; k < k1; k++) {
            __global const T *w = wb + k * wks;
            T s0 = xr[k * xs];
            for (ulong j = j0; j < jv; j += GEMV_VW)
                WV_STORE(fma(GSP_WV(w, j), (WV)s0, WV_LOAD(0, p + j)), 0, p + j);
            for (ulong j = jv; j < j1; j++)
                p[j] = fma(GSP_W(w, j), s0, p[j]);
        }
    }
}
#undef GSP_WV
#undef GSP_W

CLT_KERNEL_WG(gemm_small_part, 1, 1, 1)(GEMM_SMALL_PART_PARAMS)
{
    gemm_small_part_body(W, woff, wks, wbs, x, xoff, xs, xrs, xbs, part, P, R, K, 0);
}

/* gemm_small_part for a W that repeats one value along its outputs. */
CLT_KERNEL_WG(gemm_small_part_rep, 1, 1, 1)(GEMM_SMALL_PART_PARAMS)
{
    gemm_small_part_body(W, woff, wks, wbs, x, xoff, xs, xrs, xbs, part, P, R, K, 1);
}

/* A product with few rows or few columns (2 to 64 of them, R): y[r][i] =
 * sum_k W[i, k] x_r[k] for R contiguous vectors x_r (xrs apart) and rows
 * of W contiguous in k, stored at y[r * yrs + i * yps].  Each work-item
 * takes `rows` rows of W (a multiple of 4), four at a time, against the
 * vectors four at a time: W comes from memory once (and from cache for each
 * further four vectors), where the packed GEMM would pad R to 12 and pack
 * all of W first.  K runs in blocks of GEMV_DB, as in gemv_dot. */
CLT_KERNEL_WG(gemm_small, 1, 1, 1)(__global const T *W, ulong woff, ulong wis, ulong wbs,
                                   __global const T *X, ulong xoff, ulong xrs, ulong xbs,
                                   __global T *Y, ulong yoff, ulong yps, ulong yrs, ulong ybs,
                                   ulong P, ulong R, ulong K, ulong rows)
{
    ulong b = get_global_id(1);
    ulong i0 = get_global_id(0) * rows, i1 = min(i0 + rows, P);
    __global const T *xb = X + xoff + b * xbs;
    __global const T *wb = W + woff + b * wbs;
    __global T *yb = Y + yoff + b * ybs;
    ulong kv = K / GEMV_VW * GEMV_VW;
    for (ulong i = i0; i < i1; i += 4) {
        /* Past the last row or vector, repeat it (and drop the result). */
        __global const T *w[4];
        for (int u = 0; u < 4; u++)
            w[u] = wb + min(i + u, P - 1) * wis;
        for (ulong r0 = 0; r0 < R; r0 += 4) {
            __global const T *x[4];
            for (int v = 0; v < 4; v++)
                x[v] = xb + min(r0 + v, R - 1) * xrs;
            T s[4][4] = {{0}}, c[4][4] = {{0}}, t[4][4] = {{0}};
            for (ulong kb = 0; kb < kv; kb += GEMV_DB) {
                ulong ke = min(kb + GEMV_DB, kv);
                CLT_TILE4X4(WV, WV_AT, a, w[0], w[1], w[2], w[3], x[0], x[1], x[2], x[3], kb, ke)
                T f[4][4] = {{gemv_fold(a00), gemv_fold(a01), gemv_fold(a02), gemv_fold(a03)},
                             {gemv_fold(a10), gemv_fold(a11), gemv_fold(a12), gemv_fold(a13)},
                             {gemv_fold(a20), gemv_fold(a21), gemv_fold(a22), gemv_fold(a23)},
                             {gemv_fold(a30), gemv_fold(a31), gemv_fold(a32), gemv_fold(a33)}};
                for (int u = 0; u < 4; u++)
                    for (int v = 0; v < 4; v++)
                        GEMV_ADD(s[u][v], c[u][v], f[u][v]);
            }
            for (ulong k = kv; k < K; k++)
                for (int u = 0; u < 4; u++)
                    for (int v = 0; v < 4; v++)
                        t[u][v] = fma(w[u][k], x[v][k], t[u][v]);
            for (int u = 0; u < 4; u++)
                for (int v = 0; v < 4; v++)
                    GEMV_ADD(s[u][v], c[u][v], t[u][v]);
            for (int u = 0; u < 4; u++)
                for (int v = 0; v < 4; v++)
                    if (i + u < P && r0 + v < R)
                        yb[(r0 + v) * yrs + (i + u) * yps] = s[u][v];
        }
    }
}
