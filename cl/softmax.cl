/* softmax.cl: softmax and log_softmax of dtype T over rows of n elements
 * spaced `inner` apart in a contiguous tensor seen as [outer, n, inner]
 * (row g = o * inner + j starts at o * n * inner + j).  Every row is
 * shifted by its maximum first, so large or very negative values give no
 * inf or NaN; log_softmax is (x - max) - log(sum(exp(x - max))), in that
 * order: x - (max + log(sum)) would round the large max + log(sum) first
 * and lose digits.
 * softmax_cpu: one work-item per row, explicit SM_VW-wide vectors (8 or 16)
 * when rows are contiguous, no barriers (what CPU devices run fast).
 * softmax_wg: one work-group per row, reduced in local memory (for GPUs).
 * SM_HALF is set for float16 storage, whose vectors load through
 * vload_halfN; SM_BF16 for bfloat16 storage (ushort), whose vectors load
 * as ushortN shifted into floats and store rounded as STORE_BF16 does. */

#ifndef SM_VW
#define SM_VW 16
#endif
#define V CAT(T_C, SM_VW)

#ifdef SM_HALF
#define VLOADW(i, p) CAT(vload_half, SM_VW)((i), (p))
#define VSTOREW(v, i, p) CAT(CAT(vstore_half, SM_VW), _rte)((v), (i), (p))
#elif defined(SM_BF16)
#define UW CAT(uint, SM_VW)
#define VLOADW(i, p)                                                           \
    CAT(as_float, SM_VW)(CAT(convert_, UW)(CAT(vload, SM_VW)((i), (__global const ushort *)(p))) << 16)
static inline void vstorew_bf16(V v, ulong i, __global clt_bf16 *q)
{
    UW u = CAT(as_, UW)(v);
    UW r = (u + (UW)0x7fffu + ((u >> 16) & (UW)1u)) >> 16;
    __global ushort *p = (__global ushort *)q;
    CAT(vstore, SM_VW)(CAT(convert_ushort, SM_VW)(select(r, (UW)0x7fc0u, CAT(as_, UW)(isnan(v)))), i, p);
}
#define VSTOREW(v, i, p) vstorew_bf16((v), (i), (p))
#else
#define VLOADW(i, p) CAT(vload, SM_VW)((i), (p))
#define VSTOREW(v, i, p) CAT(vstore, SM_VW)((v), (i), (p))
#endif

inline T_C hmax(V v)
{
#if SM_VW == 16
    CAT(T_C, 8) w = fmax(v.lo, v.hi);
#else
    CAT(T_C, 8) w = v;
#endif
    w.s0123 = fmax(w.s0123, w.s4567);
    w.s01 = fmax(w.s01, w.s23);
    return fmax(w.s0, w.s1);
}

inline T_C hsum(V v)
{
#if SM_VW == 16
    CAT(T_C, 8) w = v.lo + v.hi;
#else
    CAT(T_C, 8) w = v;
#endif
    w.s0123 = w.s0123 + w.s4567;
    w.s01 = w.s01 + w.s23;
    return w.s0 + w.s1;
}

/* s = the sum over a row of nv vectors and a tail of exponentials: VEXP
 * gives vector i's (as V e), TEXP element k's (as T_C e), and each may
 * also store it.  Vectors are summed in blocks of SM_BLOCK, whose sums and
 * the tail's are added compensated: one vector of lanes over the whole row
 * drifted (a row of 2^26 random values gave a sum 0.4% off) and stopped
 * growing at 2^24 per lane. */
#define SM_BLOCK 64
#define SM_SUM_EXP(s, nv, n, VEXP, TEXP)                                       \
    do {                                                                       \
        T_C c_ = 0, t_ = 0;                                                    \
        s = 0;                                                                 \
        for (ulong i0 = 0; i0 < (nv); i0 += SM_BLOCK) {                        \
            ulong i1 = min(i0 + SM_BLOCK, (ulong)(nv));                        \
            V sv = (V)(0);                                                     \
            for (ulong i = i0; i < i1; i++) {                                  \
                VEXP;                                                          \
                sv += e;                                                       \
            }                                                                  \
            CLT_ADD_COMPENSATED(T_C, s, c_, hsum(sv));                         \
        }                                                                      \
        for (ulong k = (nv) * SM_VW; k < (n); k++) {                           \
            TEXP;                                                              \
            t_ += e;                                                           \
        }                                                                      \
        CLT_ADD_COMPENSATED(T_C, s, c_, t_);                                   \
    } while (0)

CLT_KERNEL(softmax_cpu)(__global T *out, __global const T *in, ulong in_off, ulong rows,
                        ulong n, ulong inner, int logmode)
{
    size_t g = get_global_id(0);
    if (g >= rows)
        return;
    ulong o = g / inner, j = g % inner;
    ulong base = o * n * inner + j;
    __global const T *x = in + in_off + base;
    __global T *y = out + base;
    T_C m, s;

    if (inner == 1) {
        ulong nv = n / SM_VW;
        V mv = (V)(-INFINITY);
        for (ulong i = 0; i < nv; i++)
            mv = fmax(mv, VLOADW(i, x));
        m = hmax(mv);
        for (ulong k = nv * SM_VW; k < n; k++)
            m = fmax(m, T_LOAD(x, k));
        if (logmode) {
            SM_SUM_EXP(s, nv, n, V e = exp(VLOADW(i, x) - m), T_C e = exp(T_LOAD(x, k) - m));
            T_C ls = log(s);
            for (ulong i = 0; i < nv; i++)
                VSTOREW((VLOADW(i, x) - m) - ls, i, y);
            for (ulong k = nv * SM_VW; k < n; k++)
                T_STORE(y, k, (T_LOAD(x, k) - m) - ls);
            return;
        }
#if defined(SM_HALF) || defined(SM_BF16)
        /* Half storage would round exp() twice: compute it again instead. */
        SM_SUM_EXP(s, nv, n, V e = exp(VLOADW(i, x) - m), T_C e = exp(T_LOAD(x, k) - m));
        T_C inv = (T_C)1 / s;
        for (ulong i = 0; i < nv; i++)
            VSTOREW(exp(VLOADW(i, x) - m) * inv, i, y);
        for (ulong k = nv * SM_VW; k < n; k++)
            T_STORE(y, k, exp(T_LOAD(x, k) - m) * inv);
#else
        /* exp() dominates: keep each value in the output and scale it. */
        SM_SUM_EXP(s, nv, n, V e = exp(VLOADW(i, x) - m); VSTOREW(e, i, y),
                   T_C e = exp(T_LOAD(x, k) - m); T_STORE(y, k, e));
        T_C inv = (T_C)1 / s;
        for (ulong i = 0; i < nv; i++)
            VSTOREW(VLOADW(i, y) * inv, i, y);
        for (ulong k = nv * SM_VW; k < n; k++)
            T_STORE(y, k, T_LOAD(y, k) * inv);
#endif
        return;
    }

    m = -INFINITY;
    for (ulong k = 0; k < n; k++)
        m = fmax(m, T_LOAD(x, k * inner));
    s = 0;
    T_C c = 0;
    for (ulong k = 0; k < n; k++)
        CLT_ADD_COMPENSATED(T_C, s, c, exp(T_LOAD(x, k * inner) - m));
    if (logmode) {
        T_C ls = log(s);
        for (ulong k = 0; k < n; k++)
            T_STORE(y, k * inner, (T_LOAD(x, k * inner) - m) - ls);
    } else {
        T_C inv = (T_C)1 / s;
        for (ulong k = 0; k < n; k++)
            T_STORE(y, k * inner, exp(T_LOAD(x, k * inner) - m) * inv);
    }
}

/* The local size must be a power of two; `scratch` holds one T_C per
 * work-item. */
CLT_KERNEL(softmax_wg)(__global T *out, __global const T *in, ulong in_off, ulong n,
                       ulong inner, int logmode, __local T_C *scratch)
{
    size_t lid = get_local_id(0), lsz = get_local_size(0);
    size_t g = get_global_id(0) / lsz; /* with the offset of a split launch */
    ulong o = g / inner, j = g % inner;
    ulong base = o * n * inner + j;
    __global const T *x = in + in_off + base;
    __global T *y = out + base;

    T_C m = -INFINITY;
    for (ulong k = lid; k < n; k += lsz)
        m = fmax(m, T_LOAD(x, k * inner));
    scratch[lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t h = lsz / 2; h > 0; h /= 2) {
        if (lid < h)
            scratch[lid] = fmax(scratch[lid], scratch[lid + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);

    T_C s = 0;
    for (ulong k = lid; k < n; k += lsz)
        s += exp(T_LOAD(x, k * inner) - m);
    scratch[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t h = lsz / 2; h > 0; h /= 2) {
        if (lid < h)
            scratch[lid] += scratch[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    s = scratch[0];

    if (logmode) {
        T_C ls = log(s);
        for (ulong k = lid; k < n; k += lsz)
            T_STORE(y, k * inner, (T_LOAD(x, k * inner) - m) - ls);
    } else {
        T_C inv = (T_C)1 / s;
        for (ulong k = lid; k < n; k += lsz)
            T_STORE(y, k * inner, exp(T_LOAD(x, k * inner) - m) * inv);
    }
}
