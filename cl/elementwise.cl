/* elementwise.cl: elementwise kernels for compute dtype T and output dtype O,
 * in four variants chosen by the host per device: for GPUs _s (strided) and
 * _c (contiguous), one element per work-item; for CPUs _t (strided) and _k
 * (contiguous with 16-wide vectors), one chunk of elements per work-item.
 * EW_BIN, EW_CMP or EW_UN selects the group of ops a program holds. */

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define TV CAT(T_C, 16)
#define OV CAT(O_C, 16)
#define CVT_OV CAT(convert_, OV)

/* Constants in the compute type without double literals on fp32 devices. */
#if T_ID == 1
#define K(x) x
#else
#define K(x) CAT(x, f)
#endif

#if T_ID == 2
#define T_VLOAD(p, i) vload_half16(0, (p) + (i))
#elif T_ID == 5 || T_ID == 6
#define T_VLOAD(p, i) convert_uint16(vload16(0, (p) + (i)))
#else
#define T_VLOAD(p, i) vload16(0, (p) + (i))
#endif

#if O_ID == 2
#define O_VSTORE(p, i, v) vstore_half16_rte((v), 0, (p) + (i))
#elif O_ID == 5
#define O_VSTORE(p, i, v) vstore16(convert_uchar16(v), 0, (p) + (i))
#elif O_ID == 6
#define O_VSTORE(p, i, v) vstore16(convert_uchar16((v) != (OV)0) & (uchar16)1, 0, (p) + (i))
#else
#define O_VSTORE(p, i, v) vstore16((v), 0, (p) + (i))
#endif

/* maximum/minimum propagate NaN as torch.maximum does; fmax would not. */
#if T_IS_FLOAT
#define MAXIMUM(a, b) ((isnan(a) | isnan(b)) ? (a) + (b) : fmax(a, b))
#define MINIMUM(a, b) ((isnan(a) | isnan(b)) ? (a) + (b) : fmin(a, b))
/* clamp keeps x when it equals a bound, so -0.0 clamped at 0.0 stays -0.0
 * as in torch.clamp (std::min(std::max(x, lo), hi)). */
#define CLAMP_LO(x, lo) ((isnan(x) | isnan(lo)) ? (x) + (lo) : ((x) < (lo) ? (lo) : (x)))
#define CLAMP_HI(x, hi) ((isnan(x) | isnan(hi)) ? (x) + (hi) : ((x) > (hi) ? (hi) : (x)))
#define ABS(x) fabs(x)
#define POW_S(a, b) pow(a, b)
#define POW_V(a, b) pow(a, b)
#define POW_VEC 1
#else
#define MAXIMUM(a, b) max(a, b)
#define MINIMUM(a, b) min(a, b)
#define CLAMP_LO(x, lo) max(x, lo)
#define CLAMP_HI(x, hi) min(x, hi)
#if T_IS_UNSIGNED
#define ABS(x) (x)
#else
#define ABS(x) ((x) < zero ? -(x) : (x))
#endif
#define POW_S(a, b) ipow(a, b)
#define POW_V(a, b) (a)
#define POW_VEC 0

/* Integer powers by squaring; negative exponents as PyTorch's CPU kernel. */
T_C ipow(T_C a, T_C b)
{
#if !T_IS_UNSIGNED
    if (b < 0)
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
#endif
    T_C r = 1;
    while (b) {
        if (b & 1)
            r *= a;
        a *= a;
        b >>= 1;
    }
    return r;
}
#endif

/* relu keeps NaN (torch.relu(nan) is nan). */
#if T_IS_UNSIGNED
#define RELU(x) (x)
#else
#define RELU(x) ((x) < zero ? zero : (x))
#endif

#define CHUNK_RANGE_C                                                          \
    ulong start_ = get_global_id(0) * L.chunk;                                 \
    ulong end_ = min(start_ + L.chunk, L.n);                                   \
    ulong i = start_;

#define SCALAR_CONSTS                                                          \
    typedef T_C TY;                                                            \
    const TY zero = (TY)0, one = (TY)1;                                        \
    (void)zero;                                                                \
    (void)one;

#define VECTOR_CONSTS                                                          \
    typedef TV TY;                                                             \
    const TY zero = (TY)0, one = (TY)1;                                        \
    (void)zero;                                                                \
    (void)one;

#define WG1 __attribute__((reqd_work_group_size(1, 1, 1)))

/* A chunk of a strided walk: element i of the output (row-major over
 * L.shape) reads operand j at o_j + k * s_j inside a run along the last
 * dimension; the index is carried to the outer dimensions between runs, so
 * no division happens per element.  The host makes 0-d layouts 1-d. */
#define STRIDED_BEGIN                                                          \
    ulong i = get_global_id(0) * chunk;                                        \
    ulong end_ = min(i + chunk, n);                                            \
    int last_ = L.ndim - 1;                                                    \
    long idx_[CLT_MAX_DIMS];                                                   \
    long o0 = L.off0, o1 = L.off1, o2 = L.off2, rem_ = (long)i;                \
    for (int d_ = last_; d_ >= 0; d_--) {                                      \
        idx_[d_] = rem_ % L.shape[d_];                                         \
        rem_ /= L.shape[d_];                                                   \
        o0 += idx_[d_] * L.s0[d_];                                             \
        o1 += idx_[d_] * L.s1[d_];                                             \
        o2 += idx_[d_] * L.s2[d_];                                             \
    }                                                                          \
    while (i < end_) {                                                         \
        long run_ = min(L.shape[last_] - idx_[last_], (long)(end_ - i));       \
        long s0 = L.s0[last_], s1 = L.s1[last_], s2 = L.s2[last_];             \
        for (long k = 0; k < run_; k++) {

#define STRIDED_END                                                            \
        }                                                                      \
        i += run_;                                                             \
        o0 += run_ * s0;                                                       \
        o1 += run_ * s1;                                                       \
        o2 += run_ * s2;                                                       \
        idx_[last_] += run_;                                                   \
        for (int d_ = last_; d_ > 0 && idx_[d_] == L.shape[d_]; d_--) {        \
            o0 += L.s0[d_ - 1] - L.shape[d_] * L.s0[d_];                       \
            o1 += L.s1[d_ - 1] - L.shape[d_] * L.s1[d_];                       \
            o2 += L.s2[d_ - 1] - L.shape[d_] * L.s2[d_];                       \
            idx_[d_] = 0;                                                      \
            idx_[d_ - 1]++;                                                    \
        }                                                                      \
    }

/* ---- binary: tensor with tensor, tensor with scalar -------------------------- */

#define DEF_BINARY(name, sexpr, vexpr, vec)                                    \
    __kernel void name##_tt_s(__global O *out, __global const T *pa,           \
                              __global const T *pb, ulong n, ulong chunk,      \
                              clt_layout L)                                    \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= n)                                                            \
            return;                                                            \
        long oa, ob, oc_;                                                      \
        CLT_UNRAVEL3(&L, i, oa, ob, oc_);                                      \
        SCALAR_CONSTS                                                          \
        TY a = T_LOAD(pa, oa), b = T_LOAD(pb, ob);                             \
        O_STORE(out, i, (O_C)(sexpr));                                         \
    }                                                                          \
    __kernel void name##_tt_c(__global O *out, __global const T *pa,           \
                              __global const T *pb, clt_offsets L)             \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= L.n)                                                          \
            return;                                                            \
        SCALAR_CONSTS                                                          \
        TY a = T_LOAD(pa, L.off0 + i), b = T_LOAD(pb, L.off1 + i);             \
        O_STORE(out, i, (O_C)(sexpr));                                         \
    }                                                                          \
    __kernel WG1 void name##_tt_k(__global O *out, __global const T *pa,       \
                                  __global const T *pb, clt_offsets L)         \
    {                                                                          \
        CHUNK_RANGE_C                                                          \
        __global const T *qa = pa + L.off0, *qb = pb + L.off1;                 \
        if (vec) {                                                             \
            VECTOR_CONSTS                                                      \
            for (; i + 16 <= end_; i += 16) {                                  \
                TY a = T_VLOAD(qa, i), b = T_VLOAD(qb, i);                     \
                O_VSTORE(out, i, CVT_OV(vexpr));                               \
            }                                                                  \
        }                                                                      \
        SCALAR_CONSTS                                                          \
        for (; i < end_; i++) {                                                \
            TY a = T_LOAD(qa, i), b = T_LOAD(qb, i);                           \
            O_STORE(out, i, (O_C)(sexpr));                                     \
        }                                                                      \
    }                                                                          \
    __kernel WG1 void name##_tt_t(__global O *out, __global const T *pa,       \
                                  __global const T *pb, ulong n, ulong chunk,  \
                                  clt_layout L)                                \
    {                                                                          \
        SCALAR_CONSTS                                                          \
        STRIDED_BEGIN                                                          \
        TY a = T_LOAD(pa, o0 + k * s0), b = T_LOAD(pb, o1 + k * s1);           \
        O_STORE(out, i + k, (O_C)(sexpr));                                     \
        STRIDED_END                                                            \
    }                                                                          \
    __kernel void name##_ts_s(__global O *out, __global const T *pa, T_C s,    \
                              int reversed, ulong n, ulong chunk,              \
                              clt_layout L)                                    \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= n)                                                            \
            return;                                                            \
        long oa, ob_, oc_;                                                     \
        CLT_UNRAVEL3(&L, i, oa, ob_, oc_);                                     \
        SCALAR_CONSTS                                                          \
        TY x = T_LOAD(pa, oa);                                                 \
        TY a = reversed ? s : x, b = reversed ? x : s;                         \
        O_STORE(out, i, (O_C)(sexpr));                                         \
    }                                                                          \
    __kernel void name##_ts_c(__global O *out, __global const T *pa, T_C s,    \
                              int reversed, clt_offsets L)                     \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= L.n)                                                          \
            return;                                                            \
        SCALAR_CONSTS                                                          \
        TY x = T_LOAD(pa, L.off0 + i);                                         \
        TY a = reversed ? s : x, b = reversed ? x : s;                         \
        O_STORE(out, i, (O_C)(sexpr));                                         \
    }                                                                          \
    __kernel WG1 void name##_ts_k(__global O *out, __global const T *pa,       \
                                  T_C s, int reversed, clt_offsets L)          \
    {                                                                          \
        CHUNK_RANGE_C                                                          \
        __global const T *qa = pa + L.off0;                                    \
        if (vec) {                                                             \
            VECTOR_CONSTS                                                      \
            TY sv = (TY)s;                                                     \
            for (; i + 16 <= end_; i += 16) {                                  \
                TY x = T_VLOAD(qa, i);                                         \
                TY a = reversed ? sv : x, b = reversed ? x : sv;               \
                O_VSTORE(out, i, CVT_OV(vexpr));                               \
            }                                                                  \
        }                                                                      \
        SCALAR_CONSTS                                                          \
        for (; i < end_; i++) {                                                \
            TY x = T_LOAD(qa, i);                                              \
            TY a = reversed ? s : x, b = reversed ? x : s;                     \
            O_STORE(out, i, (O_C)(sexpr));                                     \
        }                                                                      \
    }                                                                          \
    __kernel WG1 void name##_ts_t(__global O *out, __global const T *pa,       \
                                  T_C s, int reversed, ulong n, ulong chunk,   \
                                  clt_layout L)                                \
    {                                                                          \
        SCALAR_CONSTS                                                          \
        STRIDED_BEGIN                                                          \
        TY x = T_LOAD(pa, o0 + k * s0);                                        \
        TY a = reversed ? s : x, b = reversed ? x : s;                         \
        O_STORE(out, i + k, (O_C)(sexpr));                                     \
        STRIDED_END                                                            \
    }

/* ---- unary --------------------------------------------------------------------- */

#define DEF_UNARY(name, expr)                                                  \
    __kernel void name##_s(__global O *out, __global const T *pa, ulong n,     \
                           ulong chunk, clt_layout L)                          \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= n)                                                            \
            return;                                                            \
        long oa, ob_, oc_;                                                     \
        CLT_UNRAVEL3(&L, i, oa, ob_, oc_);                                     \
        SCALAR_CONSTS                                                          \
        TY x = T_LOAD(pa, oa);                                                 \
        O_STORE(out, i, (O_C)(expr));                                          \
    }                                                                          \
    __kernel void name##_c(__global O *out, __global const T *pa,              \
                           clt_offsets L)                                      \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= L.n)                                                          \
            return;                                                            \
        SCALAR_CONSTS                                                          \
        TY x = T_LOAD(pa, L.off0 + i);                                         \
        O_STORE(out, i, (O_C)(expr));                                          \
    }                                                                          \
    __kernel WG1 void name##_k(__global O *out, __global const T *pa,          \
                               clt_offsets L)                                  \
    {                                                                          \
        CHUNK_RANGE_C                                                          \
        __global const T *qa = pa + L.off0;                                    \
        {                                                                      \
            VECTOR_CONSTS                                                      \
            for (; i + 16 <= end_; i += 16) {                                  \
                TY x = T_VLOAD(qa, i);                                         \
                O_VSTORE(out, i, CVT_OV(expr));                                \
            }                                                                  \
        }                                                                      \
        SCALAR_CONSTS                                                          \
        for (; i < end_; i++) {                                                \
            TY x = T_LOAD(qa, i);                                              \
            O_STORE(out, i, (O_C)(expr));                                      \
        }                                                                      \
    }                                                                          \
    __kernel WG1 void name##_t(__global O *out, __global const T *pa, ulong n, \
                               ulong chunk, clt_layout L)                      \
    {                                                                          \
        SCALAR_CONSTS                                                          \
        STRIDED_BEGIN                                                          \
        TY x = T_LOAD(pa, o0 + k * s0);                                        \
        O_STORE(out, i + k, (O_C)(expr));                                      \
        STRIDED_END                                                            \
    }

/* ---- the op lists -------------------------------------------------------------- */

#ifdef EW_BIN
#define BINARY_OPS(X)                                                          \
    X(add, a + b, a + b, 1)                                                    \
    X(sub, a - b, a - b, 1)                                                    \
    X(mul, a * b, a * b, 1)                                                    \
    X(div, a / b, a / b, 1)                                                    \
    X(pow, POW_S(a, b), POW_V(a, b), POW_VEC)                                  \
    X(maximum, MAXIMUM(a, b), MAXIMUM(a, b), 1)                                \
    X(minimum, MINIMUM(a, b), MINIMUM(a, b), 1)
BINARY_OPS(DEF_BINARY)

/* clamp(x, lo, hi) = minimum(maximum(x, lo), hi): NaN in x or in a bound
 * propagates, and lo > hi gives hi, as torch.clamp does. */
#define CLAMP(x)                                                               \
    (has_hi ? CLAMP_HI(has_lo ? CLAMP_LO(x, (TY)lo) : (x), (TY)hi)             \
            : has_lo ? CLAMP_LO(x, (TY)lo) : (x))

__kernel void clamp_s(__global O *out, __global const T *pa, T_C lo, T_C hi, int has_lo,
                      int has_hi, ulong n, ulong chunk, clt_layout L)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    long oa, ob_, oc_;
    CLT_UNRAVEL3(&L, i, oa, ob_, oc_);
    SCALAR_CONSTS
    TY x = T_LOAD(pa, oa);
    O_STORE(out, i, (O_C)CLAMP(x));
}

__kernel void clamp_c(__global O *out, __global const T *pa, T_C lo, T_C hi, int has_lo,
                      int has_hi, clt_offsets L)
{
    size_t i = get_global_id(0);
    if (i >= L.n)
        return;
    SCALAR_CONSTS
    TY x = T_LOAD(pa, L.off0 + i);
    O_STORE(out, i, (O_C)CLAMP(x));
}

__kernel WG1 void clamp_k(__global O *out, __global const T *pa, T_C lo, T_C hi, int has_lo,
                          int has_hi, clt_offsets L)
{
    CHUNK_RANGE_C
    __global const T *qa = pa + L.off0;
    {
        VECTOR_CONSTS
        for (; i + 16 <= end_; i += 16) {
            TY x = T_VLOAD(qa, i);
            O_VSTORE(out, i, CVT_OV(CLAMP(x)));
        }
    }
    SCALAR_CONSTS
    for (; i < end_; i++) {
        TY x = T_LOAD(qa, i);
        O_STORE(out, i, (O_C)CLAMP(x));
    }
}

__kernel WG1 void clamp_t(__global O *out, __global const T *pa, T_C lo, T_C hi, int has_lo,
                          int has_hi, ulong n, ulong chunk, clt_layout L)
{
    SCALAR_CONSTS
    STRIDED_BEGIN
    TY x = T_LOAD(pa, o0 + k * s0);
    O_STORE(out, i + k, (O_C)CLAMP(x));
    STRIDED_END
}

/* where(cond, a, b): cond is bool storage (uchar), read through L.s0; a and
 * b through L.s1 and L.s2. */
__kernel void where_s(__global O *out, __global const uchar *pc, __global const T *pa,
                      __global const T *pb, ulong n, ulong chunk, clt_layout L)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    long oc, oa, ob;
    CLT_UNRAVEL3(&L, i, oc, oa, ob);
    O_STORE(out, i, (O_C)(pc[oc] ? T_LOAD(pa, oa) : T_LOAD(pb, ob)));
}

__kernel void where_c(__global O *out, __global const uchar *pc, __global const T *pa,
                      __global const T *pb, clt_offsets L)
{
    size_t i = get_global_id(0);
    if (i >= L.n)
        return;
    O_STORE(out, i,
            (O_C)(pc[L.off0 + i] ? T_LOAD(pa, L.off1 + i) : T_LOAD(pb, L.off2 + i)));
}

__kernel WG1 void where_k(__global O *out, __global const uchar *pc, __global const T *pa,
                          __global const T *pb, clt_offsets L)
{
    CHUNK_RANGE_C
    __global const uchar *qc = pc + L.off0;
    __global const T *qa = pa + L.off1, *qb = pb + L.off2;
    for (; i < end_; i++)
        O_STORE(out, i, (O_C)(qc[i] ? T_LOAD(qa, i) : T_LOAD(qb, i)));
}

__kernel WG1 void where_t(__global O *out, __global const uchar *pc, __global const T *pa,
                          __global const T *pb, ulong n, ulong chunk, clt_layout L)
{
    STRIDED_BEGIN
    O_STORE(out, i + k,
            (O_C)(pc[o0 + k * s0] ? T_LOAD(pa, o1 + k * s1) : T_LOAD(pb, o2 + k * s2)));
    STRIDED_END
}
#endif

#ifdef EW_CMP
#define COMPARE_OPS(X)                                                         \
    X(eq, a == b, a == b, 1)                                                   \
    X(ne, a != b, a != b, 1)                                                   \
    X(lt, a < b, a < b, 1)                                                     \
    X(le, a <= b, a <= b, 1)                                                   \
    X(gt, a > b, a > b, 1)                                                     \
    X(ge, a >= b, a >= b, 1)
COMPARE_OPS(DEF_BINARY)
DEF_UNARY(logical_not, x == zero)
#endif

#ifdef EW_UN
#define UNARY_OPS(X)                                                           \
    X(neg, -x)                                                                 \
    X(abs, ABS(x))                                                             \
    X(relu, RELU(x))
UNARY_OPS(DEF_UNARY)

#if T_IS_FLOAT
#define FLOAT_UNARY_OPS(X)                                                     \
    X(exp, exp(x))                                                             \
    X(log, log(x))                                                             \
    X(sqrt, sqrt(x))                                                           \
    X(rsqrt, rsqrt(x))                                                         \
    X(sin, sin(x))                                                             \
    X(cos, cos(x))                                                             \
    X(tanh, tanh(x))                                                           \
    X(sigmoid, one / (one + exp(-x)))                                          \
    X(gelu, K(0.5) * x * (one + erf(x * K(0.70710678118654752440))))
FLOAT_UNARY_OPS(DEF_UNARY)
#endif
#endif
