/* scan.cl: cumulative ops (torch.cumsum, cumprod, cummax, cummin and
 * logcumsumexp) of a contiguous input seen as [outer, R, inner], along R.
 * A line is one (outer, inner) position's R elements; `reverse` runs each
 * line from its last element (the gradients).  Each operator is a handful
 * of macros (its accumulator, its step, its store), and DEF_SCAN writes the
 * same kernels for every one of them:
 *   scan_lines_<op>  one work-item per line (those at inner positions
 *                    i_begin to i_begin + icount - 1), its elements in
 *                    order;
 *   scan_total_<op>  one work-item per chunk of L elements of a line: the
 *                    chunk's aggregate, into part (and pidx);
 *   scan_carry_<op>  one work-item per line: its chunks' aggregates turned
 *                    into what comes before each chunk (exclusive scan);
 *   scan_apply_<op>  one work-item per chunk again: the chunk's elements in
 *                    order from that carry.
 * The last three let a few long lines use every compute unit; no kernel
 * has a barrier.  Sums and products accumulate in S (double for float32
 * where the device has it, CLT_ACC_DOUBLE; float for float16; long for
 * integers), as PyTorch's CPU kernels do; cummax and cummin compare in
 * T_C and carry the index of the element they hold. */

/* Every product and sum rounded on its own, as in the sequential order. */
#pragma OPENCL FP_CONTRACT OFF

#if defined(CLT_ACC_DOUBLE)
#define S double
#elif T_IS_FLOAT
#define S T_C
#else
#define S long
#endif
#define S16 CAT(S, 16)

/* Sums and products: floating results keep T, integer and bool ones are
 * long (PyTorch's rule). */
#if T_IS_FLOAT
#define CUM_OUT T
#define CUM_STORE(p, i, v) T_STORE(p, i, (T_C)(v))
#else
#define CUM_OUT long
#define CUM_STORE(p, i, v) ((p)[i] = (v))
#endif
#define SAME_STORE(p, i, v) T_STORE(p, i, (T_C)(v))

/* Each operator's state is (a, c, ai): the accumulator, the compensation
 * of a float sum without double, and the index the accumulator holds
 * (cummax, cummin; -1 before the first element).  STEP folds in the next
 * element x (or the aggregate of the elements that follow) found at xi;
 * VALUE is what is stored. */
#if T_ID == 0 && !defined(CLT_ACC_DOUBLE)
#define sum_STEP(a, c, ai, x, xi) CLT_ADD_COMPENSATED(S, a, c, x)
#define sum_VALUE(a, c) ((a) - (c))
#else
#define sum_STEP(a, c, ai, x, xi) ((a) += (x))
#define sum_VALUE(a, c) (a)
#endif
#define sum_ACC S
#define sum_ID ((S)0)
#define sum_OUT CUM_OUT
#define sum_IDX 0
#define sum_STORE CUM_STORE

#define prod_STEP(a, c, ai, x, xi) ((a) *= (x))
#define prod_VALUE(a, c) (a)
#define prod_ACC S
#define prod_ID ((S)1)
#define prod_OUT CUM_OUT
#define prod_IDX 0
#define prod_STORE CUM_STORE

/* torch's cummax_cummin_helper: a NaN takes over (each later NaN with its
 * index), and an equal value moves the index on (>=, the last of equal
 * maxima). */
#define EXTREME_STEP(CMP, a, c, ai, x, xi)                                     \
    do {                                                                       \
        if ((ai) < 0 || IS_NAN(x) || (!IS_NAN(a) && (x) CMP (a))) {            \
            (a) = (x);                                                         \
            (ai) = (xi);                                                       \
        }                                                                      \
    } while (0)
#define cmax_STEP(a, c, ai, x, xi) EXTREME_STEP(>=, a, c, ai, x, xi)
#define cmax_VALUE(a, c) (a)
#define cmax_ACC T_C
#define cmax_ID ((T_C)0)
#define cmax_OUT T
#define cmax_IDX 1
#define cmax_STORE SAME_STORE

#define cmin_STEP(a, c, ai, x, xi) EXTREME_STEP(<=, a, c, ai, x, xi)
#define cmin_VALUE(a, c) (a)
#define cmin_ACC T_C
#define cmin_ID ((T_C)0)
#define cmin_OUT T
#define cmin_IDX 1
#define cmin_STORE SAME_STORE

/* torch's _log_add_exp_helper(x, a): log1p(exp(min - max)) + max, NaN
 * spreading, and x itself when both are the same infinity. */
#if T_IS_FLOAT
static inline S log_add_exp(S x, S a)
{
    S mn = isnan(a) ? a : (a < x ? a : x), mx = isnan(a) ? a : (x < a ? a : x);
    return (mn != mx || isfinite(mn)) ? log1p(exp(mn - mx)) + mx : x;
}
#endif
#define lcse_STEP(a, c, ai, x, xi) ((a) = log_add_exp((x), (a)))
#define lcse_VALUE(a, c) (a)
#define lcse_ACC S
#define lcse_ID ((S)-INFINITY)
#define lcse_OUT T
#define lcse_IDX 0
#define lcse_STORE SAME_STORE

/* Element k (in scan order) of the line starting at `base`. */
#define AT(base, k) ((base) + (reverse ? R - 1 - (k) : (k)) * inner)

/* The elements k0 to k1 - 1 of the line at base folded into (a, c, ai),
 * each running value stored when STORE_TOO. */
#define WALK(op, STORE_TOO, k0, k1)                                            \
    for (long k = (k0); k < (k1); k++) {                                       \
        long at = AT(base, k);                                                 \
        op##_ACC x = (op##_ACC)T_LOAD(src + soff, at);                         \
        op##_STEP(a, c, ai, x, reverse ? R - 1 - k : k);                       \
        if (STORE_TOO) {                                                       \
            op##_STORE(dst, at, op##_VALUE(a, c));                             \
            if (op##_IDX)                                                      \
                didx[at] = ai;                                                 \
        }                                                                      \
    }

/* Work-item g of outer * nchunk * inner: its line (line = o * inner + i),
 * the line's first element and its chunk c. */
#define CHUNK_ITEM                                                             \
    long g = get_global_id(0);                                                 \
    if (g >= outer * nchunk * inner)                                           \
        return;                                                                \
    long i = g % inner, t = g / inner, ch = t % nchunk, o = t / nchunk;        \
    long line = o * inner + i, base = o * R * inner + i;                       \
    long k0 = ch * L, k1 = min(k0 + L, R);

#define DEF_SCAN(op)                                                           \
    CLT_KERNEL(scan_lines_##op)(__global const T *src, long soff,              \
                                __global op##_OUT *dst, __global long *didx,   \
                                long outer, long R, long inner, long i_begin,  \
                                long icount, int reverse)                      \
    {                                                                          \
        long g = get_global_id(0);                                             \
        if (g >= outer * icount)                                               \
            return;                                                            \
        long o = g / icount, ai = -1;                                          \
        long base = o * R * inner + i_begin + (g - o * icount);                \
        op##_ACC a = op##_ID, c = 0;                                           \
        (void)c;                                                               \
        WALK(op, 1, 0, R)                                                      \
    }                                                                          \
                                                                               \
    CLT_KERNEL(scan_total_##op)(__global const T *src, long soff,              \
                                __global op##_ACC *part, __global long *pidx,  \
                                long outer, long R, long inner, long L,        \
                                long nchunk, int reverse)                      \
    {                                                                          \
        CHUNK_ITEM                                                             \
        op##_ACC a = op##_ID, c = 0;                                           \
        long ai = -1;                                                          \
        (void)c;                                                               \
        __global op##_OUT *dst = 0;                                            \
        __global long *didx = 0;                                               \
        (void)dst, (void)didx;                                                 \
        WALK(op, 0, k0, k1)                                                    \
        part[line * nchunk + ch] = op##_VALUE(a, c);                           \
        pidx[line * nchunk + ch] = ai;                                         \
    }                                                                          \
                                                                               \
    CLT_KERNEL(scan_carry_##op)(__global op##_ACC *part, __global long *pidx,  \
                                long nlines, long nchunk)                      \
    {                                                                          \
        long line = get_global_id(0);                                          \
        if (line >= nlines)                                                    \
            return;                                                            \
        op##_ACC a = op##_ID, c = 0;                                           \
        long ai = -1;                                                          \
        (void)c;                                                               \
        for (long ch = 0; ch < nchunk; ch++) {                                 \
            long at = line * nchunk + ch;                                      \
            op##_ACC x = part[at];                                             \
            long xi = pidx[at];                                                \
            part[at] = op##_VALUE(a, c);                                       \
            pidx[at] = ai;                                                     \
            op##_STEP(a, c, ai, x, xi);                                        \
        }                                                                      \
    }                                                                          \
                                                                               \
    CLT_KERNEL(scan_apply_##op)(__global const T *src, long soff,              \
                                __global op##_OUT *dst, __global long *didx,   \
                                __global const op##_ACC *part,                 \
                                __global const long *pidx, long outer, long R, \
                                long inner, long L, long nchunk, int reverse)  \
    {                                                                          \
        CHUNK_ITEM                                                             \
        op##_ACC a = part[line * nchunk + ch], c = 0;                          \
        long ai = pidx[line * nchunk + ch];                                    \
        (void)c;                                                               \
        WALK(op, 1, k0, k1)                                                    \
    }

DEF_SCAN(sum)
DEF_SCAN(prod)
DEF_SCAN(cmax)
DEF_SCAN(cmin)
#if T_IS_FLOAT
DEF_SCAN(lcse)
#endif

/* CPU style for sums and products of many lines with inner >= 16: one
 * work-item per (outer, block of 16 inner positions), its 16 lines side by
 * side in a vector, each line still in order (the same values as
 * scan_lines), and rows read whole instead of one element per row a line;
 * the host leaves the last inner % 16 positions to scan_lines. */
#if T_ID == 2
#define VLOAD_T(p, i) vload_half16(0, (p) + (i))
#elif T_ID == 9
#define VLOAD_T(p, i) CLT_VLOAD16_BF16((p) + (i))
#else
#define VLOAD_T(p, i) CAT(convert_, S16)(CLT_VLOAD16(T, (p) + (i)))
#endif
#if T_ID == 2
#define CUM_VSTORE(v, p, i) vstore_half16_rte((v), 0, (p) + (i))
#elif T_ID == 9
#define CUM_VSTORE(v, p, i) CLT_VSTORE16_BF16((v), (p) + (i))
#elif T_IS_FLOAT
#define CUM_VSTORE(v, p, i) CLT_VSTORE16(T, CAT(convert_, CAT(T, 16))(v), (p) + (i))
#else
#define CUM_VSTORE(v, p, i) CLT_VSTORE16(long, (v), (p) + (i))
#endif
#if T_ID == 0 && !defined(CLT_ACC_DOUBLE)
#define sum_VSTEP(s, c, x) CLT_ADD_COMPENSATED(S16, s, c, x)
#else
#define sum_VSTEP(s, c, x) ((s) += (x))
#endif
#define prod_VSTEP(s, c, x) ((s) *= (x))

#define DEF_SCAN_IVEC(op)                                                      \
    CLT_KERNEL(scan_ivec_##op)(__global const T *src, long soff,               \
                               __global CUM_OUT *dst, long outer, long R,      \
                               long inner, long nblocks, int reverse)          \
    {                                                                          \
        long g = get_global_id(0);                                             \
        if (g >= outer * nblocks)                                              \
            return;                                                            \
        long o = g / nblocks, i0 = (g - o * nblocks) * 16;                     \
        long at = o * R * inner + i0, step = inner;                            \
        if (reverse) {                                                         \
            at += (R - 1) * inner;                                             \
            step = -inner;                                                     \
        }                                                                      \
        S16 s = op##_ID, c = 0;                                                \
        (void)c;                                                               \
        for (long k = 0; k < R; k++, at += step) {                             \
            op##_VSTEP(s, c, VLOAD_T(src + soff, at));                         \
            CUM_VSTORE(op##_VALUE(s, c), dst, at);                             \
        }                                                                      \
    }

DEF_SCAN_IVEC(sum)
DEF_SCAN_IVEC(prod)
