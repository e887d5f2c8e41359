/* reduce.cl: reductions of a contiguous input seen as [outer, R, inner],
 * along R, for input dtype T.  Sum-like ops (sum, prod, sum of squared
 * deviations) accumulate in S and follow one fixed order on every device:
 * R is cut into CHUNK-element chunks; element k of a chunk goes to lane
 * k % LANES (round k / LANES of that lane); each lane adds up its elements
 * in blocks of BLOCK rounds (see LANE_SUM), in order within a block, and
 * the block sums in order into a compensated sum (LANE_END; plain for
 * integers and for float32 in double); the lanes are folded in halves
 * (lane j with lane j + w, w = 32, 16, ..., 1).  Every lane takes part in
 * every block (a block with none of its elements adds the identity).
 * Chunk partials form a new [outer, nchunks, inner] input reduced the same
 * way until one chunk is left.  Every variant realises this order: vectors
 * along rows (inner == 1) or across 16 inner positions on CPUs, one
 * work-group per chunk on GPUs, and a generic one-position kernel.
 *
 * The blocks keep each lane's plain sums short: a float32 lane that added
 * its 64 elements of a chunk one after the other was about ten roundings
 * off on a column of 1e8s (torch's cascade sum: under one); with blocks of
 * 8 and their sums compensated the error stays near one rounding per fold
 * level. */

/* Bit-identical results across variants need every product rounded on its
 * own, never fused into an fma. */
#pragma OPENCL FP_CONTRACT OFF

#define CHUNK 4096
#define LANES 64

/* CLT_ACC_DOUBLE (float32 var and std, see src/ops/reduce.c): S is double. */
#if defined(CLT_ACC_DOUBLE)
#define S double
#elif T_IS_FLOAT
#define S T_C
#else
#define S long
#endif

#define S16 CAT(S, 16)
#define CONVERT_S16 CAT(convert_, S16)

/* S is 64 bits wide: an S16 fills two 512-bit registers. */
#if defined(CLT_ACC_DOUBLE) || T_ID == 1 || !T_IS_FLOAT
#define S_WIDE 1
#else
#define S_WIDE 0
#endif

#define OP_SUM 0
#define OP_PROD 1
#define OP_SUMSQ 2

/* Loads of one element (as S) and of 16 consecutive ones (as S16), from
 * input storage (T) or from partials (S). */
#define LOAD1_T(p, i) ((S)T_LOAD(p, i))
#define LOAD1_S(p, i) ((p)[i])
#if T_ID == 2
#define VLOAD_T(p, i) vload_half16(0, (p) + (i))
#elif T_ID == 9
#define VLOAD_T(p, i) CLT_VLOAD16_BF16((p) + (i))
#else
#define VLOAD_T(p, i) CONVERT_S16(CLT_VLOAD16(T, (p) + (i)))
#endif
#define VLOAD_S(p, i) CLT_VLOAD16(S, (p) + (i))

#if T_IS_FLOAT
#define FINISH(r, div, do_sqrt) ((do_sqrt) ? sqrt((r) / (div)) : (r) / (div))
#else
#define FINISH(r, div, do_sqrt) ((r) / (div))
#endif

#define S8 CAT(S, 8)
#define S4 CAT(S, 4)
#define S2 CAT(S, 2)

#define COMBINE(op, a, b) ((op) == OP_PROD ? (a) * (b) : (a) + (b))

/* Element k of a chunk folded into lane acc. */
#define ACCUM(op, acc, x, m)                                                   \
    do {                                                                       \
        S x_ = (x);                                                            \
        if ((op) == OP_SUMSQ)                                                  \
            x_ = (x_ - (m)) * (x_ - (m));                                      \
        acc = COMBINE(op, acc, x_);                                            \
    } while (0)

/* A lane's blocks: LANE_START gives the block's starting value b, and
 * LANE_END puts the block into the lane's running result s with LANE_SUM,
 * and LANE_VALUE(s, c) is the lane's value at the end.  For floating sums
 * LANE_SUM is an error-free addition (TwoSum: t + e == s + b exactly) whose
 * errors e gather, negated, in c: no operation waits on c, so the running
 * sum is one add per block.  An infinite or NaN sum makes c NaN, and the
 * lane's value is then s alone.  A product (OP_PROD) runs on through the
 * blocks, the lane one product in order, as compensation buys a product
 * nothing (c stays 0). */
#define LANE_START(op, s, id) ((op) == OP_PROD ? (s) : (id))
#if T_IS_FLOAT && !defined(CLT_ACC_DOUBLE)
#define BLOCK 8
#define LANE_SUM(type, s, c, b)                                                \
    do {                                                                       \
        type t_ = (s) + (b), bp_ = t_ - (s);                                   \
        (c) -= ((s) - (t_ - bp_)) + ((b) - bp_);                               \
        (s) = t_;                                                              \
    } while (0)
#define LANE_VALUE(s, c) (isfinite(s) ? (s) - (c) : (s))
#else
/* Integers add exactly, and float32 input in double loses nothing worth a
 * compensation: one block per chunk, each lane's elements in order. */
#define BLOCK (CHUNK / LANES)
#define LANE_SUM(type, s, c, b) ((s) += (b))
#define LANE_VALUE(s, c) (s)
#endif
#define LANE_END(type, op, s, c, b)                                            \
    do {                                                                       \
        if ((op) == OP_PROD)                                                   \
            s = (b);                                                           \
        else                                                                   \
            LANE_SUM(type, s, c, b);                                           \
    } while (0)

/* The 16-lane vectors' loop over the full rounds [k, ke) of a block (k and
 * ke in elements): a0..a3 are lanes 0-15, ..., 48-63.  A whole block runs
 * a loop of constant length, which the compiler unrolls. */
#define VEC_ROUND_STEPS(VLOAD, STEP)                                           \
    if (ke - k == BLOCK * LANES) {                                             \
        _Pragma("unroll") for (int q = 0; q < BLOCK; q++, k += LANES) {        \
            STEP                                                               \
        }                                                                      \
    } else {                                                                   \
        for (; k < ke; k += LANES) {                                           \
            STEP                                                               \
        }                                                                      \
    }
#define VEC_ROUNDS(VLOAD)                                                      \
    if (op == OP_SUM) {                                                        \
        VEC_ROUND_STEPS(VLOAD, a0 += VLOAD(p, k); a1 += VLOAD(p, k + 16);      \
                        a2 += VLOAD(p, k + 32); a3 += VLOAD(p, k + 48);)       \
    } else if (op == OP_PROD) {                                                \
        VEC_ROUND_STEPS(VLOAD, a0 *= VLOAD(p, k); a1 *= VLOAD(p, k + 16);      \
                        a2 *= VLOAD(p, k + 32); a3 *= VLOAD(p, k + 48);)       \
    } else {                                                                   \
        VEC_ROUND_STEPS(VLOAD, S16 d0 = VLOAD(p, k) - m;                       \
                        S16 d1 = VLOAD(p, k + 16) - m;                         \
                        S16 d2 = VLOAD(p, k + 32) - m;                         \
                        S16 d3 = VLOAD(p, k + 48) - m; a0 += d0 * d0;          \
                        a1 += d1 * d1; a2 += d2 * d2; a3 += d3 * d3;)          \
    }

/* CPU style: one work-item per (row, chunk) of a row-contiguous input
 * (inner == 1), four 16-wide vectors = LANES lanes. */
#define DEF_SUM_VEC(name, SRC, LOAD1, VLOAD)                                   \
    CLT_KERNEL(name)(__global const SRC *src, long soff, __global S *dst,      \
                     long total, long R, long nchunks, int op,                 \
                     __global const S *mean, S div, int do_sqrt)               \
    {                                                                          \
        long g = get_global_id(0);                                             \
        if (g >= total)                                                        \
            return;                                                            \
        long o = g / nchunks, c = g - o * nchunks;                             \
        long begin = c * CHUNK;                                                \
        long n = clamp(R - begin, 0L, (long)CHUNK);                            \
        long full = n / LANES * LANES, rounds = (n + LANES - 1) / LANES;       \
        __global const SRC *p = src + soff + o * R + begin;                    \
        S id = op == OP_PROD ? (S)1 : (S)0;                                    \
        S m = op == OP_SUMSQ ? mean[o] : (S)0;                                 \
        S16 s0 = id, s1 = id, s2 = id, s3 = id;                                \
        S16 c0 = 0, c1 = 0, c2 = 0, c3 = 0;                                    \
        for (long r0 = 0; r0 < rounds; r0 += BLOCK) {                          \
            long k = r0 * LANES, ke = min((r0 + BLOCK) * LANES, full);         \
            S16 a0 = LANE_START(op, s0, id), a1 = LANE_START(op, s1, id);      \
            S16 a2 = LANE_START(op, s2, id), a3 = LANE_START(op, s3, id);      \
            VEC_ROUNDS(VLOAD)                                                  \
            if (r0 + BLOCK >= rounds && full < n) {                            \
                S t[LANES];                                                    \
                for (int j = 0; j < LANES; j++) {                              \
                    S x = full + j < n ? LOAD1(p, full + j) : id;              \
                    if (op == OP_SUMSQ)                                        \
                        x = full + j < n ? (x - m) * (x - m) : (S)0;           \
                    t[j] = x;                                                  \
                }                                                              \
                a0 = COMBINE(op, a0, vload16(0, t));                           \
                a1 = COMBINE(op, a1, vload16(1, t));                           \
                a2 = COMBINE(op, a2, vload16(2, t));                           \
                a3 = COMBINE(op, a3, vload16(3, t));                           \
            }                                                                  \
            LANE_END(S16, op, s0, c0, a0);                                     \
            LANE_END(S16, op, s1, c1, a1);                                     \
            LANE_END(S16, op, s2, c2, a2);                                     \
            LANE_END(S16, op, s3, c3, a3);                                     \
        }                                                                      \
        s0 = LANE_VALUE(s0, c0), s1 = LANE_VALUE(s1, c1);                      \
        s2 = LANE_VALUE(s2, c2), s3 = LANE_VALUE(s3, c3);                      \
        S r;                                                                   \
        if (op == OP_PROD) {                                                   \
            S16 v = (s0 * s2) * (s1 * s3);                                     \
            S8 v8 = v.lo * v.hi;                                               \
            S4 v4 = v8.lo * v8.hi;                                             \
            S2 v2 = v4.lo * v4.hi;                                             \
            r = v2.lo * v2.hi;                                                 \
        } else {                                                               \
            S16 v = (s0 + s2) + (s1 + s3);                                     \
            S8 v8 = v.lo + v.hi;                                               \
            S4 v4 = v8.lo + v8.hi;                                             \
            S2 v2 = v4.lo + v4.hi;                                             \
            r = v2.lo + v2.hi;                                                 \
        }                                                                      \
        dst[g] = FINISH(r, div, do_sqrt);                                      \
    }

/* GPU style: one work-group of LANES work-items per (row, chunk) of a
 * row-contiguous input; work-item j is lane j, and the fold runs in local
 * memory.  The group is found from the global id, which counts the offset
 * that clt__launch gives the parts of a split launch (get_group_id does
 * not). */
#define DEF_SUM_WG(name, SRC, LOAD1)                                           \
    CLT_KERNEL_WG(name, LANES, 1, 1)(__global const SRC *src, long soff,       \
                                     __global S *dst, long total, long R,      \
                                     long nchunks, int op,                     \
                                     __global const S *mean, S div,            \
                                     int do_sqrt, __local S *lanes)            \
    {                                                                          \
        long g = get_global_id(0) / LANES;                                     \
        int j = (int)get_local_id(0);                                          \
        long o = g / nchunks, c = g - o * nchunks;                             \
        long begin = c * CHUNK;                                                \
        long n = clamp(R - begin, 0L, (long)CHUNK);                            \
        long rounds = (n + LANES - 1) / LANES;                                 \
        __global const SRC *p = src + soff + o * R + begin;                    \
        S m = op == OP_SUMSQ ? mean[o] : (S)0;                                 \
        S id = op == OP_PROD ? (S)1 : (S)0, acc = id, comp = 0;                \
        for (long r0 = 0; r0 < rounds; r0 += BLOCK) {                          \
            S blk = LANE_START(op, acc, id);                                   \
            long ke = min((r0 + BLOCK) * LANES, n);                            \
            for (long k = r0 * LANES + j; k < ke; k += LANES)                  \
                ACCUM(op, blk, LOAD1(p, k), m);                                \
            LANE_END(S, op, acc, comp, blk);                                   \
        }                                                                      \
        lanes[j] = LANE_VALUE(acc, comp);                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                          \
        for (int w = LANES / 2; w > 0; w >>= 1) {                              \
            if (j < w)                                                         \
                lanes[j] = COMBINE(op, lanes[j], lanes[j + w]);                \
            barrier(CLK_LOCAL_MEM_FENCE);                                      \
        }                                                                      \
        if (j == 0)                                                            \
            dst[g] = FINISH(lanes[0], div, do_sqrt);                           \
    }

/* Any inner size: one work-item per (row, chunk, one of icount inner
 * positions from i_begin on), the lanes in private memory. */
#define DEF_SUM_GEN(name, SRC, LOAD1)                                          \
    CLT_KERNEL(name)(__global const SRC *src, long soff, __global S *dst,      \
                     long inner, long R, long nchunks, int op,                 \
                     __global const S *mean, S div, int do_sqrt,               \
                     long i_begin, long icount, long total)                    \
    {                                                                          \
        long t = get_global_id(0);                                             \
        if (t >= icount * total)                                               \
            return;                                                            \
        long g = t / icount, i = i_begin + (t - g * icount);                   \
        long o = g / nchunks, c = g - o * nchunks;                             \
        long begin = c * CHUNK;                                                \
        long n = clamp(R - begin, 0L, (long)CHUNK);                            \
        long rounds = (n + LANES - 1) / LANES;                                 \
        __global const SRC *p = src + soff + (o * R + begin) * inner + i;      \
        S m = op == OP_SUMSQ ? mean[o * inner + i] : (S)0;                     \
        S id = op == OP_PROD ? (S)1 : (S)0;                                    \
        S acc[LANES], comp[LANES];                                             \
        for (int j = 0; j < LANES; j++)                                        \
            acc[j] = id, comp[j] = 0;                                          \
        for (long r0 = 0; r0 < rounds; r0 += BLOCK) {                          \
            long ke = min((r0 + BLOCK) * LANES, n);                            \
            for (int j = 0; j < LANES; j++) {                                  \
                S blk = LANE_START(op, acc[j], id);                            \
                for (long k = r0 * LANES + j; k < ke; k += LANES)              \
                    ACCUM(op, blk, LOAD1(p, k * inner), m);                    \
                LANE_END(S, op, acc[j], comp[j], blk);                         \
            }                                                                  \
        }                                                                      \
        for (int j = 0; j < LANES; j++)                                        \
            acc[j] = LANE_VALUE(acc[j], comp[j]);                              \
        for (int w = LANES / 2; w > 0; w >>= 1)                                \
            for (int j = 0; j < w; j++)                                        \
                acc[j] = COMBINE(op, acc[j], acc[j + w]);                      \
        dst[g * inner + i] = FINISH(acc[0], div, do_sqrt);                     \
    }


/* The fold of the first nparts lanes (or partials) in acc, vector by
 * vector, and the results stored. */
#define IVEC_FOLD(nparts, NV)                                                  \
    for (int v = 0; v < NV; v++) {                                             \
        for (int w = (nparts) / 2; w > 0; w >>= 1)                             \
            for (int j = 0; j < w; j++)                                        \
                acc[j][v] = COMBINE(op, acc[j][v], acc[j + w][v]);             \
        vstore16(FINISH(acc[0][v], div, do_sqrt), 0,                           \
                 dst + g * inner + i0 + v * 16);                               \
    }

/* CPU style for inner >= 16: one work-item per (row, chunk, block of up to
 * 64 inner positions), each lane up to four 16-wide vectors across the inner
 * positions; wide blocks keep the row-to-row page walks few.  The host
 * leaves the last inner % 16 positions to the generic kernel.
 *
 * PoCL gives every work-item of a group its own copy of the kernel's
 * private arrays, all on the worker thread's stack: one acc and one comp
 * serve every path (64 KiB a work-item for 64-bit sums).
 *
 * A chunk of one block per lane (up to BLOCK * LANES rows) needs no
 * compensation: a lane's one block sum is its value.  Its lanes go four at
 * a time, those the fold meets first (j, j + 16, j + 32, j + 48): their
 * sums stay in registers, each row is read whole (all four vectors), and
 * the four lanes leave folded into acc[j], one of 16 partials.  With a
 * 64-bit S the four lanes' sixteen S16 would fill every register twice
 * over, so they go in two passes of two, (j, j + 32) then (j + 16, j + 48),
 * each row still read whole once; the fold's order is the same. */
#if S_WIDE
#define IVEC_Q 2
#define IVEC_PART(op, a, v) COMBINE(op, a[0][v], a[1][v])
#else
#define IVEC_Q 4
#define IVEC_PART(op, a, v)                                                    \
    COMBINE(op, COMBINE(op, a[0][v], a[2][v]), COMBINE(op, a[1][v], a[3][v]))
#endif
#define IVEC_ONE_BLOCK(VLOAD, STEP, NV)                                        \
    {                                                                          \
        for (int j = 0; j < 16; j++)                                           \
            for (int h = 0; h < 4 / IVEC_Q; h++) {                             \
                S16 a[IVEC_Q][4];                                              \
                _Pragma("unroll") for (int q = 0; q < IVEC_Q; q++)             \
                    _Pragma("unroll") for (int v = 0; v < 4; v++) a[q][v] = id; \
                for (long k0 = 0; k0 < n; k0 += LANES)                         \
                    _Pragma("unroll") for (int q = 0; q < IVEC_Q; q++) {       \
                        long k = k0 + j + 16 * (h + 4 / IVEC_Q * q);           \
                        if (k < n)                                             \
                            _Pragma("unroll") for (int v = 0; v < NV; v++) {   \
                                S16 b = a[q][v];                               \
                                S16 x = VLOAD(p, k * inner + v * 16);          \
                                STEP;                                          \
                                a[q][v] = b;                                   \
                            }                                                  \
                    }                                                          \
                _Pragma("unroll") for (int v = 0; v < NV; v++) acc[j][v] =     \
                    h ? COMBINE(op, acc[j][v], IVEC_PART(op, a, v))            \
                      : IVEC_PART(op, a, v);                                   \
            }                                                                  \
        IVEC_FOLD(16, NV)                                                      \
    }

/* Longer chunks go block by block, lane by lane: the BLOCK rows of a lane's
 * block lie in cache (BLOCK * LANES rows), and only the lanes' compensated
 * sums stay in private memory. */
#define IVEC_BLOCKS(VLOAD, STEP)                                               \
    {                                                                          \
        for (int j = 0; j < LANES; j++)                                        \
            for (int v = 0; v < 4; v++)                                        \
                acc[j][v] = id, comp[j][v] = 0;                                \
        for (long r0 = 0; r0 < rounds; r0 += BLOCK) {                          \
            long ke = min((r0 + BLOCK) * LANES, n);                            \
            for (int j = 0; j < LANES; j++)                                    \
                for (int v = 0; v < nv; v++) {                                 \
                    S16 b = LANE_START(op, acc[j][v], id);                     \
                    for (long k = r0 * LANES + j; k < ke; k += LANES) {        \
                        S16 x = VLOAD(p, k * inner + v * 16);                  \
                        STEP;                                                  \
                    }                                                          \
                    LANE_END(S16, op, acc[j][v], comp[j][v], b);               \
                }                                                              \
        }                                                                      \
        for (int v = 0; v < nv; v++)                                           \
            for (int j = 0; j < LANES; j++)                                    \
                acc[j][v] = LANE_VALUE(acc[j][v], comp[j][v]);                 \
        IVEC_FOLD(LANES, nv)                                                   \
    }

/* A chunk of one block per lane takes four vectors at once (constant loops,
 * which the compiler unrolls), or the last inner block's fewer. */
#define IVEC_WALK(VLOAD, STEP)                                                 \
    if (rounds > BLOCK)                                                        \
        IVEC_BLOCKS(VLOAD, STEP)                                               \
    else if (nv == 4)                                                          \
        IVEC_ONE_BLOCK(VLOAD, STEP, 4)                                         \
    else                                                                       \
        IVEC_ONE_BLOCK(VLOAD, STEP, nv)

/* Work-item w takes the `per` consecutive (row, chunk, block) items from
 * w * per on: the host keeps a group's private arrays small (PoCL puts
 * every work-item's on one thread's stack) and gives each work-item the
 * items a larger group's work-items would have taken, in their order. */
#define DEF_SUM_IVEC(name, SRC, VLOAD)                                         \
    CLT_KERNEL(name)(__global const SRC *src, long soff, __global S *dst,      \
                     long inner, long R, long nchunks, int op,                 \
                     __global const S *mean, S div, int do_sqrt,               \
                     long nblocks, long total, long per)                       \
    {                                                                          \
        long t0 = get_global_id(0) * per;                                      \
        long t1 = min(t0 + per, nblocks * total);                              \
        S16 acc[LANES][4], comp[LANES][4];                                     \
        S id = op == OP_PROD ? (S)1 : (S)0;                                    \
        for (long t = t0; t < t1; t++) {                                       \
            long g = t / nblocks, i0 = (t - g * nblocks) * 64;                 \
            int nv = (int)min(4L, (inner / 16 * 16 - i0) / 16);                \
            long o = g / nchunks, c = g - o * nchunks;                         \
            long begin = c * CHUNK;                                            \
            long n = clamp(R - begin, 0L, (long)CHUNK);                        \
            long rounds = (n + LANES - 1) / LANES;                             \
            __global const SRC *p = src + soff + (o * R + begin) * inner + i0; \
            if (op == OP_SUM) {                                                \
                IVEC_WALK(VLOAD, b += x)                                       \
            } else if (op == OP_PROD) {                                        \
                IVEC_WALK(VLOAD, b *= x)                                       \
            } else {                                                           \
                S16 m[4];                                                      \
                for (int v = 0; v < nv; v++)                                   \
                    m[v] = vload16(v, mean + o * inner + i0);                  \
                IVEC_WALK(VLOAD, S16 d = x - m[v]; b += d * d)                 \
            }                                                                  \
        }                                                                      \
    }

/* CPU style for short rows (inner == 1, 1 <= R < LANES): one work-item
 * per `per` times 16 rows (see DEF_SUM_IVEC), vectors across 16 rows at a
 * time.  Lanes at or beyond R hold the identity, and folding one in
 * changes no bits (an accumulator started at +0 never becomes -0), so the
 * fold skips them. */
CLT_KERNEL(sum_rows)(__global const T *src, long soff, __global S *dst, long outer, long R,
                     int op, __global const S *mean, S div, int do_sqrt, long per)
{
    long wi = get_global_id(0), r_end = min((wi + 1) * per * 16, outer);
    S id = op == OP_PROD ? (S)1 : (S)0;
    S t[16];
    S16 a[LANES];
    for (long r0 = wi * per * 16; r0 < r_end; r0 += 16) {
        int nr = (int)min(16L, outer - r0);
        __global const T *p = src + soff + r0 * R;
        for (int l = 0; l < 16; l++)
            t[l] = op == OP_SUMSQ && l < nr ? mean[r0 + l] : (S)0;
        S16 m = vload16(0, t);
        for (long k = 0; k < R; k++) {
            for (int l = 0; l < 16; l++)
                t[l] = l < nr ? LOAD1_T(p, l * R + k) : (S)0;
            S16 x = vload16(0, t);
            if (op == OP_SUMSQ)
                x = (x - m) * (x - m);
            a[k] = COMBINE(op, (S16)id, x);
        }
        for (int w = LANES / 2; w > 0; w >>= 1)
            for (int j = 0; j < w && j + w < R; j++)
                a[j] = COMBINE(op, a[j], a[j + w]);
        vstore16(FINISH(a[0], div, do_sqrt), 0, t);
        for (int l = 0; l < nr; l++)
            dst[r0 + l] = t[l];
    }
}

DEF_SUM_VEC(sum_vec_t, T, LOAD1_T, VLOAD_T)
DEF_SUM_VEC(sum_vec_s, S, LOAD1_S, VLOAD_S)
DEF_SUM_WG(sum_wg_t, T, LOAD1_T)
DEF_SUM_WG(sum_wg_s, S, LOAD1_S)
DEF_SUM_GEN(sum_gen_t, T, LOAD1_T)
DEF_SUM_GEN(sum_gen_s, S, LOAD1_S)
DEF_SUM_IVEC(sum_ivec_t, T, VLOAD_T)
DEF_SUM_IVEC(sum_ivec_s, S, VLOAD_S)


/* max, min, argmax, argmin keep the first best element (NaN beats
 * everything, ties keep the lower index), so any grouping gives the same
 * answer.  Values are kept in T, indices in long; passes after the first
 * read both back (has_idx).  Generic kernel: one work-item per (row, chunk,
 * one of icount inner positions from i_begin on). */
CLT_KERNEL(select_reduce)(__global const T *src, long soff, __global const long *sidx,
                          int has_idx, __global T *dval, __global long *didx, long inner,
                          long R, long nchunks, int want_max, long i_begin, long icount,
                          long total)
{
    long t = get_global_id(0);
    if (t >= icount * total)
        return;
    long g = t / icount, i = i_begin + (t - g * icount);
    long o = g / nchunks, c = g - o * nchunks;
    long begin = c * CHUNK;
    long n = clamp(R - begin, 0L, (long)CHUNK);
    long base = (o * R + begin) * inner + i;
    T_C best = T_LOAD(src, soff + base);
    long bi = has_idx ? sidx[base] : begin;
    for (long k = 1; k < n; k++) {
        T_C x = T_LOAD(src, soff + base + k * inner);
        bool better = want_max ? x > best : x < best;
        if ((IS_NAN(x) && !IS_NAN(best)) || better) {
            best = x;
            bi = has_idx ? sidx[base + k * inner] : begin + k;
        }
    }
    T_STORE(dval, g * inner + i, best);
    didx[g * inner + i] = bi;
}

#define TC16 CAT(T_C, 16)
#if T_ID == 2
#define VLOAD_TC(p, i) vload_half16(0, (p) + (i))
#elif T_ID == 9
#define VLOAD_TC(p, i) CLT_VLOAD16_BF16((p) + (i))
#else
#define VLOAD_TC(p, i) CAT(convert_, TC16)(CLT_VLOAD16(T, (p) + (i)))
#endif
/* Comparison results of TC16: long16 for 64-bit elements, int16 otherwise. */
#if T_ID == 1 || T_ID == 4
#define MASK16 long16
#else
#define MASK16 int16
#endif
#if T_IS_FLOAT
#define TAKE_V(x, best, want_max)                                              \
    ((isnan(x) & ~isnan(best)) | ((want_max) ? (x) > (best) : (x) < (best)))
#else
#define TAKE_V(x, best, want_max) ((want_max) ? (x) > (best) : (x) < (best))
#endif

/* CPU style, first pass of a row-contiguous input (inner == 1): one
 * work-item per (row, chunk); lane l of a 16-wide vector keeps the first
 * best of elements l, l + 16, ...; the lanes are merged by value, then by
 * index, and the tail is scanned after them. */
CLT_KERNEL(select_vec)(__global const T *src, long soff, __global T *dval,
                       __global long *didx, long total, long R, long nchunks, int want_max)
{
    long g = get_global_id(0);
    if (g >= total)
        return;
    long o = g / nchunks, c = g - o * nchunks;
    long begin = c * CHUNK;
    long n = clamp(R - begin, 0L, (long)CHUNK);
    long full = n / 16 * 16;
    __global const T *p = src + soff + o * R + begin;
    T_C bv = T_LOAD(p, 0);
    long bi = 0, k = 1;
    if (full > 0) {
        long16 iota = (long16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        TC16 best = VLOAD_TC(p, 0);
        long16 idx = iota;
        for (long k0 = 16; k0 < full; k0 += 16) {
            TC16 x = VLOAD_TC(p, k0);
            MASK16 t = TAKE_V(x, best, want_max);
            best = select(best, x, t);
            idx = select(idx, iota + k0, convert_long16(t));
        }
        T_C vals[16];
        long ids[16];
        vstore16(best, 0, vals);
        vstore16(idx, 0, ids);
        bv = vals[0];
        bi = ids[0];
        for (int l = 1; l < 16; l++) {
            T_C v = vals[l];
            bool better = IS_NAN(v) ? (!IS_NAN(bv) || ids[l] < bi)
                                    : (!IS_NAN(bv) && ((want_max ? v > bv : v < bv) ||
                                                       (v == bv && ids[l] < bi)));
            if (better) {
                bv = v;
                bi = ids[l];
            }
        }
        k = full;
    }
    for (; k < n; k++) {
        T_C x = T_LOAD(p, k);
        if ((IS_NAN(x) && !IS_NAN(bv)) || (want_max ? x > bv : x < bv)) {
            bv = x;
            bi = k;
        }
    }
    T_STORE(dval, g, bv);
    didx[g] = begin + bi;
}

/* CPU style for inner >= 16: one work-item per (row, chunk, block of 16
 * inner positions); the host leaves the last inner % 16 positions to
 * select_reduce. */
CLT_KERNEL(select_ivec)(__global const T *src, long soff, __global const long *sidx,
                        int has_idx, __global T *dval, __global long *didx, long inner,
                        long R, long nchunks, int want_max, long nblocks, long total)
{
    long t = get_global_id(0);
    if (t >= nblocks * total)
        return;
    long g = t / nblocks, i0 = (t - g * nblocks) * 16;
    long o = g / nchunks, c = g - o * nchunks;
    long begin = c * CHUNK;
    long n = clamp(R - begin, 0L, (long)CHUNK);
    long base = (o * R + begin) * inner + i0;
    __global const T *p = src + soff;
    TC16 best = VLOAD_TC(p, base);
    long16 idx = has_idx ? vload16(0, sidx + base) : (long16)begin;
    for (long k = 1; k < n; k++) {
        long at = base + k * inner;
        TC16 x = VLOAD_TC(p, at);
        MASK16 t = TAKE_V(x, best, want_max);
        best = select(best, x, t);
        idx = select(idx, has_idx ? vload16(0, sidx + at) : (long16)(begin + k),
                     convert_long16(t));
    }
    T_C vals[16];
    vstore16(best, 0, vals);
    for (int l = 0; l < 16; l++)
        T_STORE(dval, g * inner + i0 + l, vals[l]);
    vstore16(idx, 0, didx + g * inner + i0);
}
