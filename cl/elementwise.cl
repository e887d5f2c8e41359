/* elementwise.cl: elementwise kernels for compute dtype T and output dtype O,
 * in four variants chosen by the host per device: for GPUs _s (strided) and
 * _c (contiguous), one element per work-item; for CPUs _t (strided) and _k
 * (contiguous with 16-wide vectors), one chunk of elements per work-item.
 * EW_BIN, EW_CMP or EW_UN selects the group of ops a program holds. */

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
#elif T_ID == 9
#define T_VLOAD(p, i) CLT_VLOAD16_BF16((p) + (i))
#elif T_ID == 5 || T_ID == 6
#define T_VLOAD(p, i) convert_uint16(CLT_VLOAD16(uchar, (p) + (i)))
#elif T_ID == 10 || T_ID == 11
#define T_VLOAD(p, i) convert_int16(CLT_VLOAD16(T, (p) + (i)))
#else
#define T_VLOAD(p, i) CLT_VLOAD16(T, (p) + (i))
#endif

#if O_ID == 2
#define O_VSTORE(p, i, v) vstore_half16_rte((v), 0, (p) + (i))
#elif O_ID == 9
#define O_VSTORE(p, i, v) CLT_VSTORE16_BF16((v), (p) + (i))
#elif O_ID == 5
#define O_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16(v), (p) + (i))
#elif O_ID == 6
#define O_VSTORE(p, i, v) CLT_VSTORE16(uchar, convert_uchar16((v) != (OV)0) & (uchar16)1, (p) + (i))
#elif O_ID == 10 || O_ID == 11
#define O_VSTORE(p, i, v) CLT_VSTORE16(O, CAT(convert_, CAT(O, 16))(v), (p) + (i))
#else
#define O_VSTORE(p, i, v) CLT_VSTORE16(O, (v), (p) + (i))
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
/* PoCL's float tanh stops at 1 - 2^-24 (0.99999994): tanh(inf) was not 1,
 * and the gradient 1 - y*y of a saturated tanh never reached 0.  Beyond
 * |x| = ln(2^26 - 1) / 2 = 9.0109134 the float result rounds to +-1. */
#if T_ID == 1
#define TANH(x) tanh(x)
#else
#define TANH(x) select(tanh(x), copysign(one, x), isgreater(fabs(x), K(9.0109134)))
#endif
/* log1p exact near 0 (1e-10 gives 1e-10); PoCL's log1p gives 0
 * for a denormal x, whose log1p is x. */
#if T_ID == 1
#define LOG1P(x) (fabs(x) < DBL_MIN ? (x) : log1p(x))
#else
#define LOG1P(x) (fabs(x) < FLT_MIN ? (x) : log1p(x))
#endif
#define POW_S(a, b) pow(a, b)
#define POW_VEC 1
#if T_ID == 1
/* PoCL's 16-wide double pow lets a zero, denormal, inf or NaN base in one
 * lane spoil another lane's result (2.5^3 came out 0), and gets a denormal
 * base wrong in its own lane; with every base normal it was right in every
 * case tried.  Vectors holding another base go lane by lane. */
inline double16 pow_lanes(double16 a, double16 b)
{
    if (all(isnormal(a)))
        return pow(a, b);
    double ta[16], tb[16];
    vstore16(a, 0, ta);
    vstore16(b, 0, tb);
    for (int l = 0; l < 16; l++)
        ta[l] = pow(ta[l], tb[l]);
    return vload16(0, ta);
}
#define POW_V(a, b) pow_lanes(a, b)
#else
#define POW_V(a, b) pow(a, b)
#endif
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

/* The three scalars sc0, sc1 and sc2 of the activations' kernels as sc0_,
 * sc1_ and sc2_ in TY, converted by cast ((TY) for vectors, nothing for
 * scalars). */
#define ACT3_SCALARS(cast)                                                     \
    TY sc0_ = cast sc0, sc1_ = cast sc1, sc2_ = cast sc2;                      \
    (void)sc1_;                                                                \
    (void)sc2_;

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

/* ---- the four variants of one kernel -------------------------------------------
 * DEF_FOUR(name_, PARAMS, FETCH, VFETCH, sexpr, vexpr, vec) defines name_s,
 * name_c, name_k and name_t.  Callers paste the underscore onto the name
 * (name##_), so that a name which is also a macro (PoCL defines abs as one)
 * is not expanded on its way in.  PARAMS names a macro with the kernel's
 * own parameters (between out and the count, chunk and layout).  FETCH(o0,
 * o1, o2) declares the operands of one element from its offsets into
 * operands 0, 1 and 2, and the element is sexpr; in name_k's vector loop
 * (when vec) VFETCH declares 16 elements' operands and vexpr computes them. */
#define DEF_FOUR(name_, PARAMS, FETCH, VFETCH, sexpr, vexpr, vec)              \
    CLT_KERNEL(name_##s)(__global O *out, PARAMS, ulong n, ulong chunk,        \
                         clt_layout L)                                         \
    {                                                                          \
        CLT_STRIDED_ITEM(i, n, L, o0_, o1_, o2_);                              \
        SCALAR_CONSTS                                                          \
        FETCH(o0_, o1_, o2_)                                                   \
        O_STORE(out, i, (O_C)(sexpr));                                         \
    }                                                                          \
    CLT_KERNEL(name_##c)(__global O *out, PARAMS, clt_offsets L)               \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= L.n)                                                          \
            return;                                                            \
        SCALAR_CONSTS                                                          \
        FETCH(L.off0 + i, L.off1 + i, L.off2 + i)                              \
        O_STORE(out, i, (O_C)(sexpr));                                         \
    }                                                                          \
    CLT_KERNEL_WG(name_##k, 1, 1, 1)(__global O *out, PARAMS, clt_offsets L)   \
    {                                                                          \
        CHUNK_RANGE_C                                                          \
        if (vec) {                                                             \
            VECTOR_CONSTS                                                      \
            for (; i + 16 <= end_; i += 16) {                                  \
                VFETCH(L.off0 + i, L.off1 + i, L.off2 + i)                     \
                O_VSTORE(out, i, CVT_OV(vexpr));                               \
            }                                                                  \
        }                                                                      \
        SCALAR_CONSTS                                                          \
        for (; i < end_; i++) {                                                \
            FETCH(L.off0 + i, L.off1 + i, L.off2 + i)                          \
            O_STORE(out, i, (O_C)(sexpr));                                     \
        }                                                                      \
    }                                                                          \
    CLT_KERNEL_WG(name_##t, 1, 1, 1)(__global O *out, PARAMS, ulong n,         \
                                     ulong chunk, clt_layout L)                \
    {                                                                          \
        SCALAR_CONSTS                                                          \
        STRIDED_BEGIN                                                          \
        FETCH(o0 + k * s0, o1 + k * s1, o2 + k * s2)                           \
        O_STORE(out, i + k, (O_C)(sexpr));                                     \
        STRIDED_END                                                            \
    }

/* ---- binary: tensor with tensor (a, b), tensor with scalar ------------------------ */

#define PARAMS_TT __global const T *pa, __global const T *pb
#define FETCH_TT(o0, o1, o2) TY a = T_LOAD(pa, o0), b = T_LOAD(pb, o1);
#define VFETCH_TT(o0, o1, o2) TY a = T_VLOAD(pa, o0), b = T_VLOAD(pb, o1);

/* The scalar s is a when reversed (s - x), else b. */
#define PARAMS_TS __global const T *pa, T_C s, int reversed
#define FETCH_TS(o0, o1, o2)                                                   \
    TY x_ = T_LOAD(pa, o0);                                                    \
    TY a = reversed ? s : x_, b = reversed ? x_ : s;
#define VFETCH_TS(o0, o1, o2)                                                  \
    TY x_ = T_VLOAD(pa, o0), s_ = (TY)s;                                       \
    TY a = reversed ? s_ : x_, b = reversed ? x_ : s_;

#define DEF_BINARY(name, sexpr, vexpr, vec)                                    \
    DEF_FOUR(name##_tt_, PARAMS_TT, FETCH_TT, VFETCH_TT, sexpr, vexpr, vec)    \
    DEF_FOUR(name##_ts_, PARAMS_TS, FETCH_TS, VFETCH_TS, sexpr, vexpr, vec)

/* ---- unary (x) -------------------------------------------------------------------- */

#define PARAMS_UN __global const T *pa
#define FETCH_UN(o0, o1, o2) TY x = T_LOAD(pa, o0);
#define VFETCH_UN(o0, o1, o2) TY x = T_VLOAD(pa, o0);

#define DEF_UNARY(name, expr) DEF_FOUR(name##_, PARAMS_UN, FETCH_UN, VFETCH_UN, expr, expr, 1)

/* ---- the op lists -------------------------------------------------------------- */

#ifdef EW_BIN
#define BINARY_OPS(X)                                                          \
    X(add, a + b, a + b, 1)                                                    \
    X(sub, a - b, a - b, 1)                                                    \
    X(mul, a * b, a * b, 1)                                                    \
    X(div, a / b, a / b, 1)                                                    \
    X(maximum, MAXIMUM(a, b), MAXIMUM(a, b), 1)                                \
    X(minimum, MINIMUM(a, b), MINIMUM(a, b), 1)
BINARY_OPS(DEF_BINARY)

/* pow: tensor with tensor, and tensor with a scalar s in one of the forms
 * that the host picks: -1 s^x, 0 x^s, and for float32, float64 and
 * bfloat16 tensors the exponents torch.pow computes otherwise (ATen's PowKernel.cpp):
 * 1 sqrt(x) for s = 0.5, 2 rsqrt(x) for -0.5, 3 1/x for -1, 4 x*x for 2,
 * 5 x*x*x for 3, 6 1/(x*x) for -2.  They differ from pow at the edges:
 * sqrt(-inf) is NaN and sqrt(-0.0) is -0.0 where pow gives inf and 0, and
 * 1/(x*x) is 0 where x*x overflows. */
#define PARAMS_POW_TS __global const T *pa, T_C s, int form
#define FETCH_POW_TS(o0, o1, o2)                                               \
    TY x_ = T_LOAD(pa, o0);                                                    \
    TY a = form < 0 ? s : x_, b = form < 0 ? x_ : s;
#define VFETCH_POW_TS(o0, o1, o2)                                              \
    TY x_ = T_VLOAD(pa, o0), s_ = (TY)s;                                       \
    TY a = form < 0 ? s_ : x_, b = form < 0 ? x_ : s_;
/* bfloat16 takes the forms too, with each product and quotient rounded to
 * bfloat16 as torch's Vectorized<BFloat16> arithmetic rounds them:
 * x*x*x is bf16(bf16(x*x)*x).  R_S and R_V round a float and a float16 to
 * the nearest bfloat16 value. */
#if T_ID == 9
#define R_S(v) as_float((uint)clt_float_to_bf16(v) << 16)
#define R_V(v) as_float16(convert_uint16(clt_float16_to_bf16(v)) << 16)
#else
#define R_S(v) (v)
#define R_V(v) (v)
#endif
#if T_IS_FLOAT
#define POW_FORM(P, R)                                                         \
    (form == 1 ? sqrt(a) : form == 2 ? rsqrt(a) : form == 3 ? one / a          \
     : form == 4 ? a * a : form == 5 ? R(a * a) * a                            \
     : form == 6 ? one / R(a * a) : P(a, b))
#else
#define POW_FORM(P, R) P(a, b)
#endif
DEF_FOUR(pow_tt_, PARAMS_TT, FETCH_TT, VFETCH_TT, POW_S(a, b), POW_V(a, b), POW_VEC)
DEF_FOUR(pow_ts_, PARAMS_POW_TS, FETCH_POW_TS, VFETCH_POW_TS, POW_FORM(POW_S, R_S),
         POW_FORM(POW_V, R_V), POW_VEC)

/* remainder, fmod, floor_divide and trunc_divide, as PyTorch 1.13's CPU kernels
 * (BinaryOpsKernel.cpp).  Floats: remainder is fmod(a, b), plus b where the
 * two differ in sign; floor_divide is (a - fmod(a, b)) / b, less 1 where
 * remainder adds b, rounded to the nearest integer; a zero quotient takes
 * the sign of a / b, and b == 0 gives a / b.  Integers: b == 0 is recorded
 * in the error record (dim -3, the host's ZeroDivisionError) and gives 0;
 * b == -1 gives a remainder of 0 and a quotient of -a, wrapping (INT_MIN
 * stays INT_MIN), where the hardware's division traps (no vector loop). */
#if T_IS_FLOAT
/* fmod(a, b), exact, without PoCL's fmod (a loop, some 50 times slower than
 * a division) where the truncated quotient q is below 2^mantissa and
 * a - q * b comes out below |b|: then it is a multiple of b's last place
 * (or a itself), which fma computes exactly, and q is the true quotient or
 * 1 more (a / b rounded up to an integer), which adding |b| with a's sign
 * mends.  Elsewhere (a NaN, an infinite a, b == 0, a quotient 2 off from a
 * device's inexact division) fmod itself. */
#if T_ID == 1
#define FMOD_EXACT_LIMIT 0x1p53
#else
#define FMOD_EXACT_LIMIT 0x1p24f
#endif
inline T_C fmod_f(T_C a, T_C b)
{
    T_C q = trunc(a / b), r = fma(-q, b, a);
    if (!(fabs(q) < FMOD_EXACT_LIMIT) || !(fabs(r) < fabs(b)))
        return fmod(a, b);
    if (r != 0 && signbit(r) != signbit(a))
        r += copysign(fabs(b), a);
    return r == 0 ? copysign((T_C)0, a) : r;
}

inline T_C remainder_f(T_C a, T_C b)
{
    T_C m = fmod_f(a, b);
    return m != 0 && (b < 0) != (m < 0) ? m + b : m;
}

inline T_C floor_divide_f(T_C a, T_C b)
{
    if (b == 0)
        return a / b;
    T_C m = fmod_f(a, b), d = (a - m) / b;
    if (m != 0 && (b < 0) != (m < 0))
        d -= 1;
    if (d == 0)
        return copysign((T_C)0, a / b);
    T_C f = floor(d);
    return d - f > K(0.5) ? f + 1 : f;
}

/* The same on 16 lanes for name_k's vector loop; a vector with a lane that
 * fmod_f would give to fmod goes lane by lane. */
inline TV fmod_v(TV a, TV b)
{
    TV q = trunc(a / b), r = fma(-q, b, a);
    if (!all(isless(fabs(q), (TV)FMOD_EXACT_LIMIT) & isless(fabs(r), fabs(b)))) {
        T_C ta[16], tb[16];
        vstore16(a, 0, ta);
        vstore16(b, 0, tb);
        for (int l = 0; l < 16; l++)
            ta[l] = fmod_f(ta[l], tb[l]);
        return vload16(0, ta);
    }
    r = select(r, r + copysign(fabs(b), a), (r != (TV)0) & (signbit(r) != signbit(a)));
    return select(r, copysign((TV)0, a), r == (TV)0);
}

inline TV remainder_v(TV a, TV b)
{
    TV m = fmod_v(a, b);
    return select(m, m + b, (m != (TV)0) & ((b < (TV)0) != (m < (TV)0)));
}

inline TV floor_divide_v(TV a, TV b)
{
    TV m = fmod_v(a, b), d = (a - m) / b;
    d = select(d, d - (TV)1, (m != (TV)0) & ((b < (TV)0) != (m < (TV)0)));
    TV f = floor(d);
    f = select(f, f + (TV)1, d - f > (TV)K(0.5));
    f = select(f, copysign((TV)0, a / b), d == (TV)0);
    return select(f, a / b, b == (TV)0);
}

/* torch.div(a, b, rounding_mode='trunc'): trunc of the rounded quotient. */
inline T_C trunc_divide_f(T_C a, T_C b)
{
    return trunc(a / b);
}

inline TV trunc_divide_v(TV a, TV b)
{
    return trunc(a / b);
}

#define PARAMS_MOD_TT PARAMS_TT
#define TRUNC_DIVIDE_(E) trunc_divide_f(a, b)
#define REMAINDER_(E) remainder_f(a, b)
#define FMOD_(E) fmod_f(a, b)
#define FLOOR_DIVIDE_(E) floor_divide_f(a, b)
#define VFETCH_MOD_TT VFETCH_TT
#define VFETCH_MOD_TS VFETCH_TS
#define MOD_VEC(fn) fn(a, b)
#define MOD_HAS_VEC 1
#else
#if T_IS_UNSIGNED
#define NEG_WRAP(x) (-(x))
#elif T_ID == 3 || T_ID == 10 || T_ID == 11
#define NEG_WRAP(x) as_int(-as_uint(x))
#else
#define NEG_WRAP(x) as_long(-as_ulong(x))
#endif

/* err is 0 for a scalar divisor, which the host has checked. */
inline T_C mod_i(T_C a, T_C b, int floored, __global clt_index_error *err, int op)
{
    if (b == 0) {
        if (err)
            clt_report_error(err, op, -3, 0, 0);
        return 0;
    }
#if !T_IS_UNSIGNED
    if (b == -1)
        return 0;
#endif
    T_C r = a % b;
#if !T_IS_UNSIGNED
    if (floored && r != 0 && (r < 0) != (b < 0))
        r += b;
#endif
    return r;
}

inline T_C floor_divide_i(T_C a, T_C b, __global clt_index_error *err, int op)
{
    if (b == 0) {
        if (err)
            clt_report_error(err, op, -3, 0, 0);
        return 0;
    }
#if T_IS_UNSIGNED
    return a / b;
#else
    if (b == -1)
        return NEG_WRAP(a);
    T_C q = a / b, r = a % b;
    return r != 0 && (r < 0) != (b < 0) ? q - 1 : q;
#endif
}

inline T_C trunc_divide_i(T_C a, T_C b, __global clt_index_error *err, int op)
{
    if (b == 0) {
        if (err)
            clt_report_error(err, op, -3, 0, 0);
        return 0;
    }
#if !T_IS_UNSIGNED
    if (b == -1)
        return NEG_WRAP(a);
#endif
    return a / b;
}

#define PARAMS_MOD_TT PARAMS_TT, __global clt_index_error *err, int eop
#define TRUNC_DIVIDE_(E) trunc_divide_i(a, b, E)
#define REMAINDER_(E) mod_i(a, b, 1, E)
#define FMOD_(E) mod_i(a, b, 0, E)
#define FLOOR_DIVIDE_(E) floor_divide_i(a, b, E)
#define VFETCH_MOD_TT(o0, o1, o2)
#define VFETCH_MOD_TS(o0, o1, o2)
#define MOD_VEC(fn) zero
#define MOD_HAS_VEC 0
#endif
#define MOD_ERR_TT err, eop
#define MOD_ERR_TS 0, 0
/* EXPR(errors) is an element's expression, VFN the vector function (its
 * name apart: PoCL defines remainder and fmod as macros). */
#define DEF_MOD(name, EXPR, VFN)                                               \
    DEF_FOUR(name##_tt_, PARAMS_MOD_TT, FETCH_TT, VFETCH_MOD_TT, EXPR(MOD_ERR_TT),          \
             MOD_VEC(VFN), MOD_HAS_VEC)                                        \
    DEF_FOUR(name##_ts_, PARAMS_TS, FETCH_TS, VFETCH_MOD_TS, EXPR(MOD_ERR_TS),              \
             MOD_VEC(VFN), MOD_HAS_VEC)
DEF_MOD(remainder, REMAINDER_, remainder_v)
DEF_MOD(fmod, FMOD_, fmod_v)
DEF_MOD(floor_divide, FLOOR_DIVIDE_, floor_divide_v)
DEF_MOD(trunc_divide, TRUNC_DIVIDE_, trunc_divide_v)

/* axpy: a + alpha * b, for add and sub with alpha; floating types round
 * once (fma), as PyTorch's CPU kernel (vec::fmadd) and CUDA's contraction,
 * except float16: torch 1.13's CPU kernel computes it in c10::Half, whose
 * product rounds to half before the sum does (the host hands alpha
 * rounded to the 16-bit dtype, as torch's alpha.to<scalar_t>()). */
#define PARAMS_AXPY __global const T *pa, __global const T *pb, T_C alpha
#define FETCH_AXPY(o0, o1, o2) FETCH_TT(o0, o1, o2) TY al_ = alpha;
#define VFETCH_AXPY(o0, o1, o2) VFETCH_TT(o0, o1, o2) TY al_ = (TY)alpha;
#if T_ID == 2
static inline float axpy_round_half(float v)
{
    ushort h;
    vstore_half_rte(v, 0, (__private half *)&h);
    return vload_half(0, (__private const half *)&h);
}
static inline float16 axpy_round_half16(float16 v)
{
    ushort16 h;
    vstore_half16_rte(v, 0, (__private half *)&h);
    return vload_half16(0, (__private const half *)&h);
}
#define AXPY (a + axpy_round_half(al_ * b))
#define AXPY_V (a + axpy_round_half16(al_ * b))
#elif T_IS_FLOAT
#define AXPY fma(al_, b, a)
#define AXPY_V AXPY
#else
#define AXPY (a + al_ * b)
#define AXPY_V AXPY
#endif
DEF_FOUR(axpy_tt_, PARAMS_AXPY, FETCH_AXPY, VFETCH_AXPY, AXPY, AXPY_V, 1)

/* clamp(x, lo, hi) = minimum(maximum(x, lo), hi): NaN in x or in a bound
 * propagates, and lo > hi gives hi, as torch.clamp does. */
#define CLAMP(x)                                                               \
    (has_hi ? CLAMP_HI(has_lo ? CLAMP_LO(x, (TY)lo) : (x), (TY)hi)             \
            : has_lo ? CLAMP_LO(x, (TY)lo) : (x))

#define PARAMS_CLAMP __global const T *pa, T_C lo, T_C hi, int has_lo, int has_hi
DEF_FOUR(clamp_, PARAMS_CLAMP, FETCH_UN, VFETCH_UN, CLAMP(x), CLAMP(x), 1)

/* where(cond, a, b): cond is bool storage (uchar), operand 0; a and b are
 * operands 1 and 2, and only the one chosen is read.  No vector loop. */
#define PARAMS_WHERE __global const uchar *pc, __global const T *pa, __global const T *pb
#define FETCH_WHERE(o0, o1, o2) TY w_ = pc[o0] ? T_LOAD(pa, o1) : T_LOAD(pb, o2);
#define VFETCH_NONE(o0, o1, o2) TY w_ = zero;
DEF_FOUR(where_, PARAMS_WHERE, FETCH_WHERE, VFETCH_NONE, w_, w_, 0)

/* Three tensor operands a, b, c (lerp's weight, addcmul's and addcdiv's
 * second factor). */
#define PARAMS_TTT __global const T *pa, __global const T *pb, __global const T *pc
#define FETCH_TTT(o0, o1, o2) FETCH_TT(o0, o1, o2) TY c = T_LOAD(pc, o2);
#define VFETCH_TTT(o0, o1, o2) VFETCH_TT(o0, o1, o2) TY c = T_VLOAD(pc, o2);

/* clamp with tensor bounds: x is operand a, the bounds b (lo) and c (hi);
 * a bound not given is absent (has_lo or has_hi 0) and its operand is x
 * itself.  The scalar clamp's NaN rule and ties. */
#define PARAMS_CLAMP_T PARAMS_TTT, int has_lo, int has_hi
#define CLAMP_T (has_hi ? CLAMP_HI(has_lo ? CLAMP_LO(a, b) : a, c) : CLAMP_LO(a, b))
DEF_FOUR(clamp_ttt_, PARAMS_CLAMP_T, FETCH_TTT, VFETCH_TTT, CLAMP_T, CLAMP_T, 1)

/* atan2, hypot, copysign and xlogy of two floating operands, as PyTorch
 * 1.13's CPU kernels (std::atan2, std::hypot, std::copysign); xlogy is NaN
 * where y is NaN, else 0 where x == 0 (inf and NaN y too), else x * log(y). */
#if T_IS_FLOAT
#define DEF_TT(name, expr, vec) DEF_FOUR(name##_tt_, PARAMS_TT, FETCH_TT, VFETCH_TT, expr, expr, vec)
#define XLOGY (isnan(b) ? b : a == zero ? zero : a * log(b))
DEF_TT(atan2, atan2(a, b), 1)
DEF_TT(hypot, hypot(a, b), 1)
DEF_TT(copysign, copysign(a, b), 1)
DEF_TT(xlogy, XLOGY, 1)

/* lerp(start a, end b, weight w) as PyTorch 1.13's: a + w * (b - a) where
 * w < 0.5 (a negative w too), else b - (b - a) * (1 - w), so that w = 1
 * gives b exactly.  The weight is operand c (lerp_ttt) or the scalar w
 * (lerp_tt). */
#define LERP(w) ((w) < K(0.5) ? a + (w) * (b - a) : b - (b - a) * (one - (w)))
DEF_FOUR(lerp_ttt_, PARAMS_TTT, FETCH_TTT, VFETCH_TTT, LERP(c), LERP(c), 1)
#define PARAMS_LERP_S PARAMS_TT, T_C w
#define FETCH_LERP_S(o0, o1, o2) FETCH_TT(o0, o1, o2) TY w_ = w;
#define VFETCH_LERP_S(o0, o1, o2) VFETCH_TT(o0, o1, o2) TY w_ = (TY)w;
DEF_FOUR(lerp_tt_, PARAMS_LERP_S, FETCH_LERP_S, VFETCH_LERP_S, LERP(w_), LERP(w_), 1)
#endif

/* addcmul and addcdiv: a + v * b * c and a + v * b / c, evaluated left to
 * right as PyTorch's CPU kernels ((v * b) * c, (v * b) / c); any dtype but
 * bool for addcmul (integers wrap), floating for addcdiv (the host
 * refuses the rest). */
#define PARAMS_ADDC PARAMS_TTT, T_C v
#define FETCH_ADDC(o0, o1, o2) FETCH_TTT(o0, o1, o2) TY v_ = v;
#define VFETCH_ADDC(o0, o1, o2) VFETCH_TTT(o0, o1, o2) TY v_ = (TY)v;
DEF_FOUR(addcmul_ttt_, PARAMS_ADDC, FETCH_ADDC, VFETCH_ADDC, a + v_ * b * c, a + v_ * b * c, 1)
#if T_IS_FLOAT
DEF_FOUR(addcdiv_ttt_, PARAMS_ADDC, FETCH_ADDC, VFETCH_ADDC, a + v_ * b / c, a + v_ * b / c, 1)

/* glu of the halves a and b, a * sigmoid(b) as PyTorch's CPU kernel (also
 * the gradient of the first half, g * sigmoid(b)); its gradient of the
 * second half from g = a, the first half b and the second c,
 * (1 - sigmoid(c)) * sigmoid(c) * b * g as PyTorch's glu_backward.  prelu
 * a where a > 0, else b * a with the weight b broadcast; its gradient for
 * the input from g = a, x = b and the weight c: a where x > 0, else c * a. */
#define GLU_SIG(v) (one / (one + exp(-(v))))
#define GLU_BW ((one - GLU_SIG(c)) * GLU_SIG(c) * b * a)
DEF_TT(glu, a * GLU_SIG(b), 1)
DEF_TT(prelu, a > zero ? a : b * a, 1)
DEF_FOUR(glu_bw_ttt_, PARAMS_TTT, FETCH_TTT, VFETCH_TTT, GLU_BW, GLU_BW, 1)
DEF_FOUR(prelu_bw_x_ttt_, PARAMS_TTT, FETCH_TTT, VFETCH_TTT, b > zero ? a : c * a,
         b > zero ? a : c * a, 1)
#endif
#endif

/* Gradients of remainder and fmod with respect to the divisor, as binary
 * ops of the output's gradient a and the true quotient b of the operands:
 * -a * floor(b) and -a * trunc(b), as PyTorch's formulas. */
#if defined(EW_GRAD) && T_IS_FLOAT
DEF_BINARY(remainder_bw, -a * floor(b), -a * floor(b), 1)
DEF_BINARY(fmod_bw, -a * trunc(b), -a * trunc(b), 1)
#endif

/* Gradients of unary ops (src/autograd), as binary ops of the output's
 * gradient a and the op's input or output b, so that a backward step is one
 * launch.  relu's follows PyTorch's threshold_backward on the output (NaN
 * passes the gradient); abs's is a * sgn(x), 0 at 0 with a's sign as in
 * PyTorch (sgn(-0.0) is +0.0 there: sign(b) + zero turns -0.0 into +0.0). */
#if defined(EW_GRAD) && T_IS_FLOAT
#define GELU_BW(a, b)                                                          \
    (a) * (K(0.5) * (one + erf((b) * K(0.70710678118654752440))) +              \
           (b) * exp(K(-0.5) * (b) * (b)) * K(0.39894228040143267794))
#define GRAD_OPS(X)                                                            \
    X(relu_bw, b <= zero ? zero : a, b <= zero ? zero : a, 1)                  \
    X(abs_bw, a * (sign(b) + zero), a * (sign(b) + zero), 1)                   \
    X(tanh_bw, a * (one - b * b), a * (one - b * b), 1)                        \
    X(sigmoid_bw, a * (one - b) * b, a * (one - b) * b, 1)                     \
    X(gelu_bw, GELU_BW(a, b), GELU_BW(a, b), 1)                                \
    X(sin_bw, a * cos(b), a * cos(b), 0)                                       \
    X(cos_bw, -a * sin(b), -a * sin(b), 0)                                     \
    X(sqrt_bw, a / (b + b), a / (b + b), 1)                                    \
    X(rsqrt_bw, K(-0.5) * a * b * b * b, K(-0.5) * a * b * b * b, 1)
GRAD_OPS(DEF_BINARY)

/* reciprocal's from the output, PyTorch's -g * (out * out). */
DEF_BINARY(reciprocal_bw, -a * (b * b), -a * (b * b), 1)

/* log1p's from the input (a / (1 + x)), expm1's and tan's from the output
 * (a * (y + 1), a * (1 + y*y)), silu's from the input as PyTorch's
 * silu_backward, sigmoid(x) * (1 + x * (1 - sigmoid(x))), which is NaN at
 * +-inf as there. */
#define SILU_BW(a, b)                                                          \
    (a) * (one / (one + exp(-(b)))) * (one + (b) * (one - one / (one + exp(-(b)))))
DEF_BINARY(log1p_bw, a / (one + b), a / (one + b), 1)
DEF_BINARY(expm1_bw, a * (b + one), a * (b + one), 1)
DEF_BINARY(tan_bw, a * (one + b * b), a * (one + b * b), 1)
DEF_BINARY(silu_bw, SILU_BW(a, b), SILU_BW(a, b), 1)

/* The gradients of the math functions (a the output's gradient, b the
 * input, or the output where said), PyTorch's formulas:
 * asin g * rsqrt(1 - x^2), acos its negation, atan g / (x^2 + 1), sinh
 * g * cosh(x), cosh g * sinh(x), asinh g * rsqrt(x^2 + 1), acosh
 * g * rsqrt(x^2 - 1), atanh g / (1 - x^2), erf g * 2/sqrt(pi) * exp(-x^2),
 * erfc its negation, erfinv (output) g * sqrt(pi)/2 * exp(y^2), log2
 * g / (x * ln 2), log10 g / (x * ln 10), exp2 (output) g * y * ln 2. */
#define MATH_GRAD_OPS(X)                                                       \
    X(asin_bw, a * rsqrt(one - b * b))                                         \
    X(acos_bw, a * -rsqrt(one - b * b))                                        \
    X(atan_bw, a / (b * b + one))                                              \
    X(sinh_bw, a * cosh(b))                                                    \
    X(cosh_bw, a * sinh(b))                                                    \
    X(asinh_bw, a * rsqrt(b * b + one))                                        \
    X(acosh_bw, a * rsqrt(b * b - one))                                        \
    X(atanh_bw, a * (one / (one - b * b)))                                     \
    X(erf_bw, K(1.12837916709551257390) * exp(-(b * b)) * a)                   \
    X(erfc_bw, K(-1.12837916709551257390) * exp(-(b * b)) * a)                 \
    X(erfinv_bw, K(0.88622692545275801365) * exp(b * b) * a)                   \
    X(log2_bw, a / (b * K(0.69314718055994530942)))                            \
    X(log10_bw, a / (b * K(2.30258509299404568402)))                           \
    X(exp2_bw, a * b * K(0.69314718055994530942))
#define DEF_GRAD_TT(name, expr) DEF_FOUR(name##_tt_, PARAMS_TT, FETCH_TT, VFETCH_TT, expr, expr, 1)
MATH_GRAD_OPS(DEF_GRAD_TT)

/* logit's from the input x = b, as PyTorch's logit_backward in its
 * vectorised loop: a / (x * (1 - x)) inside [lo, hi] = [eps, 1 - eps] and
 * 0 outside it (NaN x, and every x for a NaN eps, too) when has_eps is
 * nonzero; without eps NaN outside [0, 1] (a -0.0 x gives a / -0.0). */
#define PARAMS_LOGIT_BW PARAMS_TT, T_C lo, T_C has_eps
#define FETCH_LOGIT_BW(o0, o1, o2) FETCH_TT(o0, o1, o2) TY lo_ = lo, hi_ = one - lo_;
#define VFETCH_LOGIT_BW(o0, o1, o2) VFETCH_TT(o0, o1, o2) TY lo_ = (TY)lo, hi_ = one - lo_;
#define LOGIT_BW                                                               \
    (has_eps != 0 ? (b >= lo_ && b <= hi_ ? a / (b * (one - b)) : zero)        \
                  : (b < zero || b > one ? (TY)NAN : a / (b * (one - b))))
DEF_FOUR(logit_bw_tt_, PARAMS_LOGIT_BW, FETCH_LOGIT_BW, VFETCH_LOGIT_BW, LOGIT_BW, LOGIT_BW, 1)

/* softplus's from the input x = b: a where beta * x > threshold, else
 * a * sigmoid(beta * x) in a form that overflows nowhere (PyTorch's
 * z / (z + 1) with z = exp(beta * x) is NaN once z overflows, which only a
 * threshold above ~88 in float32 lets happen). */
#define PARAMS_SOFTPLUS_BW PARAMS_TT, T_C beta, T_C threshold
#define FETCH_SOFTPLUS_BW(o0, o1, o2) FETCH_TT(o0, o1, o2) TY be_ = beta, th_ = threshold;
#define VFETCH_SOFTPLUS_BW(o0, o1, o2)                                         \
    VFETCH_TT(o0, o1, o2) TY be_ = (TY)beta, th_ = (TY)threshold;
#define SIGMOID_STABLE(z) (((z) >= zero ? one : exp(-fabs(z))) / (one + exp(-fabs(z))))
#define SOFTPLUS_BW (b * be_ > th_ ? a : a * SIGMOID_STABLE(b * be_))
DEF_FOUR(softplus_bw_tt_, PARAMS_SOFTPLUS_BW, FETCH_SOFTPLUS_BW, VFETCH_SOFTPLUS_BW, SOFTPLUS_BW,
         SOFTPLUS_BW, 1)

/* leaky_relu's from the input x = b, as PyTorch's leaky_relu_backward (a
 * where x > 0, else a * slope: NaN takes the slope). */
#define PARAMS_ACT_BW PARAMS_TT, T_C sc0
#define FETCH_ACT_BW(o0, o1, o2) FETCH_TT(o0, o1, o2) TY sc0_ = sc0;
#define VFETCH_ACT_BW(o0, o1, o2) VFETCH_TT(o0, o1, o2) TY sc0_ = (TY)sc0;
#define LEAKY_RELU_BW (b > zero ? a : a * sc0_)
DEF_FOUR(leaky_relu_bw_tt_, PARAMS_ACT_BW, FETCH_ACT_BW, VFETCH_ACT_BW, LEAKY_RELU_BW,
         LEAKY_RELU_BW, 1)

/* The gradients of the forward kernels of DEF_ACT3, from the input x = b
 * and the same three scalars, as PyTorch's backward kernels:
 * elu_backward a * input_scale * (alpha * scale) * exp(x * input_scale)
 * where x <= 0, else a * scale (NaN takes a * scale); hardtanh_backward
 * and threshold_backward 0 at and beyond the bounds (NaN passes a);
 * hardsigmoid_backward a / 6 strictly inside (-3, 3), else 0 (NaN too);
 * hardswish_backward 0 below -3, a * (x / 3 + 0.5) up to 3, else a (NaN
 * passes a); mish_backward a * (tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2))
 * with sp = softplus(x); the shrinks 0 inside [-lambd, lambd] (NaN passes
 * a); log_sigmoid_backward a * sigmoid(-x) computed from exp(-|x|).
 * softsign's a / (1 + |x|)^2 and tanhshrink's a * tanh(x)^2 are the
 * derivatives of the whole formulas that PyTorch composes (its chain of
 * DivBackward0 and AbsBackward0 gives NaN at +-inf where this gives 0). */
#define PARAMS_ACT3_BW PARAMS_TT, T_C sc0, T_C sc1, T_C sc2
#define FETCH_ACT3_BW(o0, o1, o2) FETCH_TT(o0, o1, o2) ACT3_SCALARS()
#define VFETCH_ACT3_BW(o0, o1, o2) VFETCH_TT(o0, o1, o2) ACT3_SCALARS((TY))
#define DEF_ACT3_BW(name, expr)                                                \
    DEF_FOUR(name##_bw_tt_, PARAMS_ACT3_BW, FETCH_ACT3_BW, VFETCH_ACT3_BW, expr, expr, 1)
#define ELU3_BW (b <= zero ? a * sc2_ * (sc0_ * sc1_) * exp(b * sc2_) : a * sc1_)
#define SIGMOID_OF(x) (one / (one + exp(-(x))))
#define MISH_TSP TANH(fmax(b, zero) + LOG1P(exp(-fabs(b))))
#define MISH_BW a * (MISH_TSP + b * SIGMOID_OF(b) * (one - MISH_TSP * MISH_TSP))
#define SHRINK_BW (((b >= -sc0_) & (b <= sc0_)) ? zero : a)
#define LOGSIGMOID_Z exp(-fabs(b))
#define LOGSIGMOID_BW                                                          \
    (b < zero ? a * (one - LOGSIGMOID_Z / (one + LOGSIGMOID_Z))                \
              : a * (LOGSIGMOID_Z / (one + LOGSIGMOID_Z)))
#define ACT3_BW_OPS(X)                                                         \
    X(elu, ELU3_BW)                                                            \
    X(hardtanh, ((b <= sc0_) | (b >= sc1_)) ? zero : a)                        \
    X(threshold, b <= sc0_ ? zero : a)                                         \
    X(hardsigmoid, ((b > K(-3.0)) & (b < K(3.0))) ? a * (one / K(6.0)) : zero) \
    X(hardswish, b < K(-3.0) ? zero : b <= K(3.0) ? a * (b / K(3.0) + K(0.5)) : a) \
    X(mish, MISH_BW)                                                           \
    X(softsign, a / ((one + fabs(b)) * (one + fabs(b))))                       \
    X(tanhshrink, a * (TANH(b) * TANH(b)))                                     \
    X(hardshrink, SHRINK_BW)                                                   \
    X(softshrink, SHRINK_BW)                                                   \
    X(logsigmoid, LOGSIGMOID_BW)
ACT3_BW_OPS(DEF_ACT3_BW)

/* prelu's gradient for its weight from the input x = b: 0 where x > 0,
 * else x * a, as PyTorch's prelu_backward (summed over the broadcast
 * dimensions by the engine). */
DEF_BINARY(prelu_bw_w, b > zero ? zero : b * a, b > zero ? zero : b * a, 1)
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

/* isnan, isinf and isfinite of any dtype (integers and bool are finite),
 * and logical_and, logical_or and logical_xor of two operands compared in
 * their promoted dtype, nonzero (NaN too) being true, all as torch's. */
#if T_IS_FLOAT
#define ISNAN(x) isnan(x)
#define ISINF(x) isinf(x)
#define ISFINITE(x) isfinite(x)
#else
#define ISNAN(x) ((x) != (x))
#define ISINF(x) ((x) != (x))
#define ISFINITE(x) ((x) == (x))
#endif
#define PREDICATE_OPS(X)                                                       \
    X(isnan, ISNAN(x))                                                         \
    X(isinf, ISINF(x))                                                         \
    X(isfinite, ISFINITE(x))
PREDICATE_OPS(DEF_UNARY)
#define LOGICAL_OPS(X)                                                         \
    X(logical_and, (a != zero) & (b != zero), (a != zero) & (b != zero), 1)   \
    X(logical_or, (a != zero) | (b != zero), (a != zero) | (b != zero), 1)    \
    X(logical_xor, (a != zero) ^ (b != zero), (a != zero) ^ (b != zero), 1)
LOGICAL_OPS(DEF_BINARY)
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
    X(tanh, TANH(x))                                                           \
    X(sigmoid, one / (one + exp(-x)))                                          \
    X(gelu, K(0.5) * x * (one + erf(x * K(0.70710678118654752440))))
FLOAT_UNARY_OPS(DEF_UNARY)
/* PoCL's 16-wide sin, cos and tan give the bits of their scalar forms
 * while all 16 lanes are below 1e4 in magnitude (4M values per range
 * tried, float32 and float64); a float32 value from about 1e7 up, or an
 * inf, lets one lane's range reduction spoil the other lanes (beside an
 * inf sin(1e-30) came out 0.0099, beside 1e30 tan(1e-30) 0.0099).  A vector
 * holding a value of 1e4 or more, an inf or a NaN goes lane by lane. */
#define DEF_LANES(f)                                                           \
    inline TV f##_lanes(TV x)                                                  \
    {                                                                          \
        if (all(isless(fabs(x), (TV)K(1e4))))                                  \
            return f(x);                                                       \
        T_C t[16];                                                             \
        vstore16(x, 0, t);                                                     \
        for (int l = 0; l < 16; l++)                                           \
            t[l] = f(t[l]);                                                    \
        return vload16(0, t);                                                  \
    }                                                                          \
    DEF_FOUR(f##_, PARAMS_UN, FETCH_UN, VFETCH_UN, f(x), f##_lanes(x), 1)
DEF_LANES(sin)
DEF_LANES(cos)

/* log1p and expm1 exact near 0 (1e-10 gives 1e-10): LOG1P above. */
DEF_UNARY(log1p, LOG1P(x))
DEF_UNARY(expm1, expm1(x))
DEF_LANES(tan)


/* silu is x * sigmoid(x) as x / (1 + exp(-x)): -0.0 at -0.0, -0.0 where
 * exp(-x) overflows, NaN at -inf (inf / inf), all as PyTorch's. */
DEF_UNARY(silu, x / (one + exp(-x)))

/* softplus: x where beta * x > threshold, as PyTorch's, else
 * log1p(exp(beta * x)) / beta computed as (max(z, 0) + log1p(exp(-|z|))) /
 * beta with z = beta * x, which overflows for no threshold (PyTorch's
 * exp(z) does past ~88 in float32). */
#define PARAMS_SOFTPLUS PARAMS_UN, T_C beta, T_C threshold
#define FETCH_SOFTPLUS(o0, o1, o2) FETCH_UN(o0, o1, o2) TY be_ = beta, th_ = threshold;
#define VFETCH_SOFTPLUS(o0, o1, o2)                                            \
    VFETCH_UN(o0, o1, o2) TY be_ = (TY)beta, th_ = (TY)threshold;
#define SOFTPLUS                                                               \
    (x * be_ > th_ ? x : (fmax(x * be_, zero) + log1p(exp(-fabs(x * be_)))) / be_)
DEF_FOUR(softplus_, PARAMS_SOFTPLUS, FETCH_SOFTPLUS, VFETCH_SOFTPLUS, SOFTPLUS, SOFTPLUS, 1)

/* leaky_relu: x where x > 0, else x * negative_slope (-0.0 stays -0.0,
 * NaN stays NaN).  The scalar is sc0, in the compute dtype. */
#define PARAMS_ACT PARAMS_UN, T_C sc0
#define FETCH_ACT(o0, o1, o2) FETCH_UN(o0, o1, o2) TY sc0_ = sc0;
#define VFETCH_ACT(o0, o1, o2) VFETCH_UN(o0, o1, o2) TY sc0_ = (TY)sc0;
#define LEAKY_RELU (x > zero ? x : x * sc0_)
DEF_FOUR(leaky_relu_, PARAMS_ACT, FETCH_ACT, VFETCH_ACT, LEAKY_RELU, LEAKY_RELU, 1)
#endif

/* The activations of torch.nn.functional that take up to three scalars
 * sc0, sc1 and sc2 (in the compute dtype; unused ones are 0), all with the
 * same parameters so that the host launches them alike. */
#define PARAMS_ACT3 PARAMS_UN, T_C sc0, T_C sc1, T_C sc2
#define FETCH_ACT3(o0, o1, o2) FETCH_UN(o0, o1, o2) ACT3_SCALARS()
#define VFETCH_ACT3(o0, o1, o2) VFETCH_UN(o0, o1, o2) ACT3_SCALARS((TY))
#define DEF_ACT3(name, expr) DEF_FOUR(name##_, PARAMS_ACT3, FETCH_ACT3, VFETCH_ACT3, expr, expr, 1)

/* hardtanh(min_val sc0, max_val sc1) is torch.clamp's (NaN in x or in a
 * bound propagates; min_val > max_val gives max_val); threshold(threshold
 * sc0, value sc1) is value where x <= threshold, else x (NaN stays NaN), as
 * PyTorch's; both take integer tensors too. */
DEF_ACT3(hardtanh, CLAMP_HI(CLAMP_LO(x, sc0_), sc1_))
DEF_ACT3(threshold, x <= sc0_ ? sc1_ : x)

#if T_IS_FLOAT
/* elu(alpha sc0, scale sc1, input_scale sc2), PyTorch's elu with selu's
 * and celu's constants: x * scale where x > 0, else (exp(x * input_scale)
 * - 1) * (alpha * scale), with expm1, which keeps the digits near 0 that
 * PyTorch's exp(x) - 1 loses (float32 elu(-1e-10) is -1e-10 here, 0
 * there); + 0 gives -0.0 PyTorch's +0.0.
 * hardsigmoid and hardswish as PyTorch's kernels: min(max(x + 3, 0), 6) / 6
 * and x * min(max(x + 3, 0), 6) / 6, with NaN kept (std::max's, not
 * fmax's).  mish is x * tanh(softplus(x)), the softplus in a form that
 * overflows nowhere (max(x, 0) + log1p(exp(-|x|))); mish(-inf) is NaN
 * (-inf * 0) as in PyTorch.  softsign x / (1 + |x|) (NaN at +-inf, inf /
 * inf, as PyTorch's), tanhshrink x - tanh(x).  hardshrink(lambd sc0): 0
 * where -lambd <= x <= lambd, else x; softshrink(lambd sc0): x - lambd
 * above lambd, x + lambd below -lambd, else 0 (NaN gives 0, as PyTorch's
 * CPU kernel).  logsigmoid min(x, 0) - log1p(exp(-|x|)): no overflow for
 * any x (-1e30 gives -1e30, 100 gives -3.8e-44). */
#define HARD6(t) ((t) < zero ? zero : (t) > K(6.0) ? K(6.0) : (t))
#define SOFTPLUS1(x) (fmax(x, zero) + LOG1P(exp(-fabs(x))))
#define ELU3 (x > zero ? x * sc1_ : (expm1(x * sc2_) + zero) * (sc0_ * sc1_))
#define SHRINK_IN(x) (((x) >= -sc0_) & ((x) <= sc0_))
#define ACT3_OPS(X)                                                            \
    X(elu, ELU3)                                                               \
    X(hardsigmoid, HARD6(x + K(3.0)) / K(6.0))                                 \
    X(hardswish, x * HARD6(x + K(3.0)) / K(6.0))                               \
    X(mish, x * TANH(SOFTPLUS1(x)))                                            \
    X(softsign, x / (one + fabs(x)))                                           \
    X(tanhshrink, x - TANH(x))                                                 \
    X(hardshrink, SHRINK_IN(x) ? zero : x)                                     \
    X(softshrink, x > sc0_ ? x - sc0_ : x < -sc0_ ? x + sc0_ : zero)           \
    X(logsigmoid, fmin(x, zero) - LOG1P(exp(-fabs(x))))
ACT3_OPS(DEF_ACT3)
#endif

/* sign keeps the dtype (bool too, unchanged), as torch.sign: NaN gives 0
 * and -0.0 gives +0.0 there, as (x > 0) - (x < 0) does. */
#if T_IS_UNSIGNED
#define SIGN(x) ((x) > zero ? one : zero)
#else
#define SIGN(x) (((x) > zero ? one : zero) - ((x) < zero ? one : zero))
#endif
DEF_UNARY(sign, SIGN(x))

/* floor, ceil, round and trunc keep the dtype, as torch's: integer values
 * come back unchanged.  round is rint, halves to even as torch.round's
 * nearbyint (2.5 gives 2.0, -0.5 gives -0.0). */
#if T_IS_FLOAT
#define FLOOR(x) floor(x)
#define CEIL(x) ceil(x)
#define ROUND(x) rint(x)
#define TRUNC(x) trunc(x)
#else
#define FLOOR(x) (x)
#define CEIL(x) (x)
#define ROUND(x) (x)
#define TRUNC(x) (x)
#endif
#define ROUNDING_OPS(X)                                                        \
    X(floor, FLOOR(x))                                                         \
    X(ceil, CEIL(x))                                                           \
    X(round, ROUND(x))                                                         \
    X(trunc, TRUNC(x))
ROUNDING_OPS(DEF_UNARY)

#if T_IS_FLOAT
/* frac is x - trunc(x), as torch.frac: NaN at +-inf, +0.0 at integers and
 * -0.0.  reciprocal is one division, 1 / -0.0 = -inf. */
DEF_UNARY(frac, x - trunc(x))
DEF_UNARY(reciprocal, one / x)

/* round(x, decimals) as PyTorch 1.13's CPU kernel computes it, in the
 * tensor's dtype: rint(x * p) / p, or rint(x / p) * p for negative
 * decimals, where p is 10^|decimals| computed in double and then converted,
 * as there.  The host passes scale = p, or -p for negative decimals. */
#define PARAMS_ROUND_DEC PARAMS_UN, T_C scale
#define FETCH_ROUND_DEC(o0, o1, o2) FETCH_UN(o0, o1, o2) TY p_ = fabs(scale);
#define VFETCH_ROUND_DEC(o0, o1, o2) VFETCH_UN(o0, o1, o2) TY p_ = (TY)fabs(scale);
#define ROUND_DEC (scale < 0 ? rint(x / p_) * p_ : rint(x * p_) / p_)
DEF_FOUR(round_decimals_, PARAMS_ROUND_DEC, FETCH_ROUND_DEC, VFETCH_ROUND_DEC, ROUND_DEC,
         ROUND_DEC, 1)
#endif

#if T_IS_FLOAT
/* The inverse trigonometric and the hyperbolic functions, erf, erfc,
 * log2, log10 and exp2: the OpenCL builtins.  PoCL's are within 1.5 ulps
 * of the C library in long double over tests/test_math.c's sweeps (AMD
 * EPYC, Zen 5, CPU family 26), and their 16-wide forms keep each lane's
 * result to itself (an inf, a NaN or 3e38 in one lane changes no other);
 * the vector and scalar forms of atan, erf, erfc and exp2 may differ in
 * the last bit. */
#define MATH_UNARY_OPS(X)                                                      \
    X(asin, asin(x))                                                           \
    X(acos, acos(x))                                                           \
    X(atan, atan(x))                                                           \
    X(sinh, sinh(x))                                                           \
    X(cosh, cosh(x))                                                           \
    X(asinh, asinh(x))                                                         \
    X(acosh, acosh(x))                                                         \
    X(atanh, atanh(x))                                                         \
    X(erf, erf(x))                                                             \
    X(erfc, erfc(x))                                                           \
    X(log2, log2(x))                                                           \
    X(log10, log10(x))                                                         \
    X(exp2, exp2(x))
MATH_UNARY_OPS(DEF_UNARY)

/* erfinv as PyTorch's calc_erfinv: a rational first guess (central below
 * 0.7, else in z = sqrt(-log((1 - |y|) / 2))), then Newton steps (two, or
 * three in float64).  Here the steps work on |y| and take the residual
 * from erfc where |y| > 0.5, (1 - |y|) - erfc(x), both exact there, so
 * that near +-1 the result keeps its digits: within 1.2 ulps of erfinv
 * everywhere (PoCL on the CPU above), where PyTorch's erf(x) - y is 127 float32 ulps off beside 1
 * and 4e11 float64 ulps (6e-5 relative at 1 - 2^-53).  Below 2^-40 the
 * series' first term y * sqrt(pi) / 2 is exact to the last bit. */
#if T_ID == 1
#define ERFINV_STEPS 3
#else
#define ERFINV_STEPS 2
#endif
inline T_C erfinv_f(T_C y)
{
    T_C ya = fabs(y), x, z;
    if (!(ya < 1))
        return ya == 1 ? copysign((T_C)INFINITY, y) : (T_C)NAN;
    if (ya < K(0x1p-40))
        return y * K(0.88622692545275801365);
    if (ya <= K(0.7)) {
        z = ya * ya;
        x = ya * (((K(-0.140543331) * z + K(0.914624893)) * z + K(-1.645349621)) * z +
                  K(0.886226899)) /
            ((((K(0.012229801) * z + K(-0.329097515)) * z + K(1.442710462)) * z +
              K(-2.118377725)) * z + 1);
    } else {
        z = sqrt(-log((1 - ya) / 2));
        x = (((K(1.641345311) * z + K(3.429567803)) * z + K(-1.624906493)) * z +
             K(-1.970840454)) /
            ((K(1.6370678) * z + K(3.5438892)) * z + 1);
    }
    for (int k = 0; k < ERFINV_STEPS; k++) {
        T_C r = ya > K(0.5) ? (1 - ya) - erfc(x) : erf(x) - ya;
        x -= r / (K(1.12837916709551257390) * exp(-x * x));
    }
    return copysign(x, y);
}
DEF_FOUR(erfinv_, PARAMS_UN, FETCH_UN, VFETCH_UN, erfinv_f(x), x, 0)

/* logit: log(x / (1 - x)) of x clamped to [lo, hi] = [eps, 1 - eps] (hi
 * computed in the dtype, as PyTorch's) as torch.clamp clamps: NaN stays
 * NaN, and eps > 0.5 (lo > hi) gives hi everywhere, as PyTorch's
 * vectorised loop.  Without eps the host passes lo = -inf (so hi = inf). */
#define PARAMS_LOGIT PARAMS_UN, T_C lo
#define FETCH_LOGIT(o0, o1, o2) FETCH_UN(o0, o1, o2) TY lo_ = lo, hi_ = one - lo_;
#define VFETCH_LOGIT(o0, o1, o2) VFETCH_UN(o0, o1, o2) TY lo_ = (TY)lo, hi_ = one - lo_;
#define LOGIT_X CLAMP_HI(CLAMP_LO(x, lo_), hi_)
#define LOGIT log(LOGIT_X / (one - LOGIT_X))
DEF_FOUR(logit_, PARAMS_LOGIT, FETCH_LOGIT, VFETCH_LOGIT, LOGIT, LOGIT, 1)
#endif

/* square keeps the dtype (the host computes bool in int64, as torch.square
 * does); integers wrap. */
DEF_UNARY(square, x * x)

/* nan_to_num: NaN, +inf and -inf replaced by the scalars the host passes
 * (its defaults the dtype's largest and lowest finite values); integers and
 * bool come back as they are. */
#define PARAMS_NAN_TO_NUM PARAMS_UN, T_C nanv, T_C posv, T_C negv
#define FETCH_NAN_TO_NUM(o0, o1, o2) FETCH_UN(o0, o1, o2) TY n_ = nanv, p_ = posv, m_ = negv;
#define VFETCH_NAN_TO_NUM(o0, o1, o2)                                          \
    VFETCH_UN(o0, o1, o2) TY n_ = (TY)nanv, p_ = (TY)posv, m_ = (TY)negv;
#if T_IS_FLOAT
#define NAN_TO_NUM (isnan(x) ? n_ : isinf(x) ? (x > zero ? p_ : m_) : x)
#else
#define NAN_TO_NUM x
#endif
DEF_FOUR(nan_to_num_, PARAMS_NAN_TO_NUM, FETCH_NAN_TO_NUM, VFETCH_NAN_TO_NUM, NAN_TO_NUM,
         NAN_TO_NUM, 1)
#endif

/* ==== torch's special functions and the rest of its pointwise math ==========
 * The special functions follow the Cephes algorithms that PyTorch 1.13's
 * CPU kernels use (ATen's Math.h), step for step in the compute type, so
 * that float64 results agree to a few ulps; their helpers serve the
 * forward kernels (EW_UN) and the gradients (EW_GRAD) alike.  Products
 * are not fused into fma here, as PyTorch's C++ does not fuse them (an
 * fma gave logaddexp2(-1, -1) -4.8e-17 instead of 0).  Kernels of one
 * element at a time (no vector loop) are defined with: */
#pragma OPENCL FP_CONTRACT OFF
#define DEF_UNARY_SCALAR(name, expr) DEF_FOUR(name##_, PARAMS_UN, FETCH_UN, VFETCH_UN, expr, x, 0)
#define DEF_TT_SCALAR(name, expr) DEF_FOUR(name##_tt_, PARAMS_TT, FETCH_TT, VFETCH_TT, expr, a, 0)

#if T_IS_FLOAT
#define SP_PI K(3.14159265358979323846)

/* The Chebyshev series sum' c[i] T_i(x / 2), coefficients from the highest
 * order down (Cephes chbevl). */
inline T_C sp_cheb(T_C x, __constant const T_C *c, int n)
{
    T_C b0 = c[0], b1 = 0, b2 = 0;
    for (int i = 1; i < n; i++) {
        b2 = b1;
        b1 = b0;
        b0 = x * b1 - b2 + c[i];
    }
    return K(0.5) * (b0 - b2);
}

/* The polynomial c[0] x^(n-1) + ... + c[n-1] (Cephes polevl of degree n-1). */
inline T_C sp_poly(T_C x, __constant const T_C *c, int n)
{
    T_C r = c[0];
    for (int i = 1; i < n; i++)
        r = r * x + c[i];
    return r;
}

/* exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on (8, inf) in 32/x - 2. */
__constant T_C SP_I0_A[30] = {
    K(-4.41534164647933937950E-18), K(3.33079451882223809783E-17),
    K(-2.43127984654795469359E-16), K(1.71539128555513303061E-15),
    K(-1.16853328779934516808E-14), K(7.67618549860493561688E-14),
    K(-4.85644678311192946090E-13), K(2.95505266312963983461E-12),
    K(-1.72682629144155570723E-11), K(9.67580903537323691224E-11),
    K(-5.18979560163526290666E-10), K(2.65982372468238665035E-9),
    K(-1.30002500998624804212E-8),  K(6.04699502254191894932E-8),
    K(-2.67079385394061173391E-7),  K(1.11738753912010371815E-6),
    K(-4.41673835845875056359E-6),  K(1.64484480707288970893E-5),
    K(-5.75419501008210370398E-5),  K(1.88502885095841655729E-4),
    K(-5.76375574538582365885E-4),  K(1.63947561694133579842E-3),
    K(-4.32430999505057594430E-3),  K(1.05464603945949983183E-2),
    K(-2.37374148058994688156E-2),  K(4.93052842396707084878E-2),
    K(-9.49010970480476444210E-2),  K(1.71620901522208775349E-1),
    K(-3.04682672343198398683E-1),  K(6.76795274409476084995E-1)};
__constant T_C SP_I0_B[25] = {
    K(-7.23318048787475395456E-18), K(-4.83050448594418207126E-18),
    K(4.46562142029675999901E-17),  K(3.46122286769746109310E-17),
    K(-2.82762398051658348494E-16), K(-3.42548561967721913462E-16),
    K(1.77256013305652638360E-15),  K(3.81168066935262242075E-15),
    K(-9.55484669882830764870E-15), K(-4.15056934728722208663E-14),
    K(1.54008621752140982691E-14),  K(3.85277838274214270114E-13),
    K(7.18012445138366623367E-13),  K(-1.79417853150680611778E-12),
    K(-1.32158118404477131188E-11), K(-3.14991652796324136454E-11),
    K(1.18891471078464383424E-11),  K(4.94060238822496958910E-10),
    K(3.39623202570838634515E-9),   K(2.26666899049817806459E-8),
    K(2.04891858946906374183E-7),   K(2.89137052083475648297E-6),
    K(6.88975834691682398426E-5),   K(3.36911647825569408990E-3),
    K(8.04490411014108831608E-1)};
/* exp(-x) I1(x) / x on [0, 8], exp(-x) sqrt(x) I1(x) on (8, inf).  float
 * uses only the last 17 and 7 terms, as PyTorch's float kernels. */
__constant T_C SP_I1_A[29] = {
    K(2.77791411276104639959E-18), K(-2.11142121435816608115E-17),
    K(1.55363195773620046921E-16), K(-1.10559694773538630805E-15),
    K(7.60068429473540693410E-15), K(-5.04218550472791168711E-14),
    K(3.22379336594557470981E-13), K(-1.98397439776494371520E-12),
    K(1.17361862988909016308E-11), K(-6.66348972350202774223E-11),
    K(3.62559028155211703701E-10), K(-1.88724975172282928790E-9),
    K(9.38153738649577178388E-9),  K(-4.44505912879632808065E-8),
    K(2.00329475355213526229E-7),  K(-8.56872026469545474066E-7),
    K(3.47025130813767847674E-6),  K(-1.32731636560394358279E-5),
    K(4.78156510755005422638E-5),  K(-1.61760815825896745588E-4),
    K(5.12285956168575772895E-4),  K(-1.51357245063125314899E-3),
    K(4.15642294431288815669E-3),  K(-1.05640848946261981558E-2),
    K(2.47264490306265168283E-2),  K(-5.29459812080949914269E-2),
    K(1.02643658689847095384E-1),  K(-1.76416518357834055153E-1),
    K(2.52587186443633654823E-1)};
__constant T_C SP_I1_B[25] = {
    K(7.51729631084210481353E-18),  K(4.41434832307170791151E-18),
    K(-4.65030536848935832153E-17), K(-3.20952592199342395980E-17),
    K(2.96262899764595013876E-16),  K(3.30820231092092828324E-16),
    K(-1.88035477551078244854E-15), K(-3.81440307243700780478E-15),
    K(1.04202769841288027642E-14),  K(4.27244001671195135429E-14),
    K(-2.10154184277266431302E-14), K(-4.08355111109219731823E-13),
    K(-7.19855177624590851209E-13), K(2.03562854414708950722E-12),
    K(1.41258074366137813316E-11),  K(3.25260358301548823856E-11),
    K(-1.89749581235054123450E-11), K(-5.58974346219658380687E-10),
    K(-3.83538038596423702205E-9),  K(-2.63146884688951950684E-8),
    K(-2.51223623787020892529E-7),  K(-3.88256480887769039346E-6),
    K(-1.10588938762623716291E-4),  K(-9.76109749136146840777E-3),
    K(7.78576235018280120474E-1)};
#if T_ID == 1
#define SP_I1_A_FROM 0
#define SP_I1_B_FROM 0
#else
#define SP_I1_A_FROM 12
#define SP_I1_B_FROM 18
#endif

/* Which Bessel function sp_bessel computes. */
#define SP_I0 0
#define SP_I0E 1
#define SP_I1 2
#define SP_I1E 3
inline T_C sp_bessel(T_C x0, int which)
{
    T_C x = fabs(x0), r;
    bool first = which >= SP_I1;
    if (x <= K(8.0)) {
        T_C y = x / K(2.0) - K(2.0);
        r = first ? sp_cheb(y, SP_I1_A + SP_I1_A_FROM, 29 - SP_I1_A_FROM)
                  : sp_cheb(y, SP_I0_A, 30);
        if (which == SP_I0)
            r = exp(x) * r;
        else if (which == SP_I1)
            r = exp(x) * x * r;
        else if (which == SP_I1E)
            r = r * x;
    } else {
        T_C y = K(32.0) / x - K(2.0);
        r = first ? sp_cheb(y, SP_I1_B + SP_I1_B_FROM, 25 - SP_I1_B_FROM)
                  : sp_cheb(y, SP_I0_B, 25);
        r = which == SP_I0 || which == SP_I1 ? exp(x) * r / sqrt(x) : r / sqrt(x);
    }
    return first && x0 < 0 ? -r : r;
}

/* digamma as PyTorch's calc_digamma: 0 gives -+inf (the sign of -x),
 * negative integers NaN, negative x the reflection digamma(1 - x) -
 * pi / tan(pi frac(x)), then the recurrence up to 10 and the asymptotic
 * series.  PyTorch's float version takes the reflection in double; tanpi
 * gives float that accuracy without fp64. */
#if T_ID == 1
#define SP_TAN_PI(r) tan(SP_PI * (r))
#else
#define SP_TAN_PI(r) tanpi(r)
#endif
__constant T_C SP_PSI_A[7] = {K(8.33333333333333333333E-2), K(-2.10927960927960927961E-2),
                              K(7.57575757575757575758E-3), K(-4.16666666666666666667E-3),
                              K(3.96825396825396825397E-3), K(-8.33333333333333333333E-3),
                              K(8.33333333333333333333E-2)};
inline T_C sp_digamma(T_C x)
{
    if (x == 0)
        return copysign((T_C)INFINITY, -x);
    T_C refl = 0;
    if (x < 0) {
        if (x == trunc(x))
            return (T_C)NAN;
        refl = SP_PI / SP_TAN_PI(x - trunc(x));
        x = 1 - x;
    }
    T_C r = 0;
    while (x < 10) {
        r -= 1 / x;
        x += 1;
    }
    if (x == 10)
        r += K(2.25175258906672110764);
    else {
        T_C y = 0;
        if (x < K(1.0e17)) {
            T_C z = 1 / (x * x);
            y = z * sp_poly(z, SP_PSI_A, 7);
        }
        r = r + log(x) - (K(0.5) / x) - y;
    }
    return r - refl;
}

/* trigamma as PyTorch's calc_trigamma: reflection below 1/2, six steps of
 * the recurrence, then the asymptotic series. */
inline T_C sp_trigamma(T_C x)
{
    T_C sign = 1, r = 0;
    if (x < K(0.5)) {
        sign = -1;
        T_C s = sin(SP_PI * x);
        r -= (SP_PI * SP_PI) / (s * s);
        x = 1 - x;
    }
    for (int i = 0; i < 6; i++) {
        r += 1 / (x * x);
        x += 1;
    }
    T_C ixx = 1 / (x * x);
    r += (1 + 1 / (2 * x) + ixx * (K(1.0) / 6 - ixx * (K(1.0) / 30 - ixx * (K(1.0) / 42)))) / x;
    return sign * r;
}

/* The Hurwitz zeta function sum (k + q)^-x (Cephes zeta, as PyTorch's):
 * direct terms until q + k > 9, then the Euler-Maclaurin tail. */
__constant T_C SP_ZETA_A[12] = {
    K(12.0), K(-720.0), K(30240.0), K(-1209600.0), K(47900160.0),
    K(-1.8924375803183791606e9), K(7.47242496e10), K(-2.950130727918164224e12),
    K(1.1646782814350067249e14), K(-4.5979787224074726105e15),
    K(1.8152105401943546773e17), K(-7.1661652561756670113e18)};
inline T_C sp_zeta(T_C x, T_C q)
{
    const T_C machep = K(1.11022302462515654042E-16);
    if (x == 1)
        return (T_C)INFINITY;
    if (x < 1)
        return (T_C)NAN;
    if (q <= 0) {
        if (q == floor(q))
            return (T_C)INFINITY;
        if (x != floor(x))
            return (T_C)NAN;
    }
    T_C s = pow(q, -x), a = q, b = 0;
    int i = 0;
    while (i < 9 || a <= 9) {
        i++;
        a += 1;
        b = pow(a, -x);
        s += b;
        if (-machep * s < b && b < machep * s)
            return s;
    }
    T_C w = a, k = 0;
    s += b * w / (x - 1);
    s -= K(0.5) * b;
    a = 1;
    for (int j = 0; j < 12; j++) {
        a *= x + k;
        b /= w;
        T_C t = a * b / SP_ZETA_A[j];
        s = s + t;
        if (fabs(t / s) < machep)
            return s;
        k += 1;
        a *= x + k;
        b /= w;
        k += 1;
    }
    return s;
}

/* polygamma(n, x): digamma, trigamma, else (-1)^(n+1) n! zeta(n + 1, x). */
inline T_C sp_polygamma(int n, T_C x)
{
    if (n == 0)
        return sp_digamma(x);
    if (n == 1)
        return sp_trigamma(x);
    return ((n % 2) ? K(1.0) : K(-1.0)) * exp(lgamma((T_C)n + 1)) * sp_zeta((T_C)(n + 1), x);
}

/* ndtr as PyTorch 1.13 composes it: (1 + erf(x / sqrt 2)) * 0.5, which is
 * 0 below about -8.3 (float64) where erfc would keep digits. */
inline T_C sp_ndtr(T_C a)
{
    return (1 + erf(a * K(0.70710678118654752440))) * K(0.5);
}

/* ndtri as Cephes (PyTorch's calc_ndtri): a rational function of y - 1/2
 * in the middle, of 1 / sqrt(-2 log y) in the tails. */
__constant T_C SP_NDTRI_P0[5] = {K(-5.99633501014107895267E1), K(9.80010754185999661536E1),
                                 K(-5.66762857469070293439E1), K(1.39312609387279679503E1),
                                 K(-1.23916583867381258016E0)};
__constant T_C SP_NDTRI_Q0[9] = {K(1.0), K(1.95448858338141759834E0), K(4.67627912898881538453E0),
                                 K(8.63602421390890590575E1), K(-2.25462687854119370527E2),
                                 K(2.00260212380060660359E2), K(-8.20372256168333339912E1),
                                 K(1.59056225126211695515E1), K(-1.18331621121330003142E0)};
__constant T_C SP_NDTRI_P1[9] = {K(4.05544892305962419923E0), K(3.15251094599893866154E1),
                                 K(5.71628192246421288162E1), K(4.40805073893200834700E1),
                                 K(1.46849561928858024014E1), K(2.18663306850790267539E0),
                                 K(-1.40256079171354495875E-1), K(-3.50424626827848203418E-2),
                                 K(-8.57456785154685413611E-4)};
__constant T_C SP_NDTRI_Q1[9] = {K(1.0), K(1.57799883256466749731E1), K(4.53907635128879210584E1),
                                 K(4.13172038254672030440E1), K(1.50425385692907503408E1),
                                 K(2.50464946208309415979E0), K(-1.42182922854787788574E-1),
                                 K(-3.80806407691578277194E-2), K(-9.33259480895457427372E-4)};
__constant T_C SP_NDTRI_P2[9] = {K(3.23774891776946035970E0), K(6.91522889068984211695E0),
                                 K(3.93881025292474443415E0), K(1.33303460815807542389E0),
                                 K(2.01485389549179081538E-1), K(1.23716634817820021358E-2),
                                 K(3.01581553508235416007E-4), K(2.65806974686737550832E-6),
                                 K(6.23974539184983293730E-9)};
__constant T_C SP_NDTRI_Q2[9] = {K(1.0), K(6.02427039364742014255E0), K(3.67983563856160859403E0),
                                 K(1.37702099489081330271E0), K(2.16236993594496635890E-1),
                                 K(1.34204006088543189037E-2), K(3.28014464682127739104E-4),
                                 K(2.89247864745380683936E-6), K(6.79019408009981274425E-9)};
inline T_C sp_ndtri(T_C y0)
{
    if (y0 == 0)
        return -(T_C)INFINITY;
    if (y0 == 1)
        return (T_C)INFINITY;
    if (!(y0 > 0 && y0 < 1))
        return (T_C)NAN;
    const T_C e2 = K(0.13533528323661269189); /* exp(-2) */
    bool lower = true;
    T_C y = y0;
    if (y > 1 - e2) {
        y = 1 - y;
        lower = false;
    }
    if (y > e2) {
        y = y - K(0.5);
        T_C y2 = y * y;
        T_C x = y + y * (y2 * sp_poly(y2, SP_NDTRI_P0, 5) / sp_poly(y2, SP_NDTRI_Q0, 9));
        return x * K(2.50662827463100050242);
    }
    T_C x = sqrt(K(-2.0) * log(y));
    T_C x0 = x - log(x) / x, z = 1 / x, x1;
    if (x < K(8.0))
        x1 = z * sp_poly(z, SP_NDTRI_P1, 9) / sp_poly(z, SP_NDTRI_Q1, 9);
    else
        x1 = z * sp_poly(z, SP_NDTRI_P2, 9) / sp_poly(z, SP_NDTRI_Q2, 9);
    x = x0 - x1;
    return lower ? -x : x;
}

/* log(ndtr(x)): log1p(-ndtr(-x)) from -1 up; below, log(erfc(-x / sqrt 2)
 * / 2), which keeps erfc's relative accuracy, down to where erfc nears
 * the dtype's smallest normal; beyond, the asymptotic series
 * -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4 - ...), whose
 * terms (2k-1)!!/x^2k are below the dtype's rounding there. */
#if T_ID == 1
#define SP_LOG_NDTR_TAIL K(-20.0)
#define SP_LOG_NDTR_TERMS 16
#else
#define SP_LOG_NDTR_TAIL K(-8.0)
#define SP_LOG_NDTR_TERMS 12
#endif
inline T_C sp_log_ndtr(T_C x)
{
    if (x >= -1)
        return log1p(K(-0.5) * erfc(x * K(0.70710678118654752440)));
    if (x >= SP_LOG_NDTR_TAIL)
        return log(K(0.5) * erfc(-x * K(0.70710678118654752440)));
    if (isinf(x))
        return -(T_C)INFINITY;
    T_C r = 1 / (x * x), t = 1, s = 1;
    for (int k = 1; k <= SP_LOG_NDTR_TERMS; k++) {
        t *= -(2 * k - 1) * r;
        s += t;
    }
    return K(-0.5) * x * x - log(-x) - K(0.91893853320467274178) + log(s);
}

/* sinc as PyTorch's: 1 at 0, else sin(pi x) / (pi x). */
inline T_C sp_sinc(T_C x)
{
    if (x == 0)
        return 1;
    T_C p = SP_PI * x;
    return sin(p) / p;
}

/* entr: -x log x above 0, 0 at 0, -inf below, NaN kept (PyTorch's). */
inline T_C sp_entr(T_C x)
{
    if (isnan(x))
        return x;
    if (x > 0)
        return -x * log(x);
    return x == 0 ? (T_C)0 : -(T_C)INFINITY;
}

/* mvlgamma(x, p): sum over j < p of lgamma(x - (p - 1)/2 + j/2), plus c =
 * p (p - 1)/4 log(pi) (the host's, in double, as PyTorch's). */
inline T_C sp_mvlgamma(T_C x, int p, T_C c)
{
    T_C s = 0;
    for (int j = 0; j < p; j++)
        s += lgamma(x + (T_C)(j - (p - 1)) * K(0.5));
    return s + c;
}

/* The sum of digamma over the same arguments: mvlgamma's derivative. */
inline T_C sp_mvdigamma(T_C x, int p)
{
    T_C s = 0;
    for (int j = 0; j < p; j++)
        s += sp_digamma(x + (T_C)(j - (p - 1)) * K(0.5));
    return s;
}
#endif

#ifdef EW_UN
#if T_IS_FLOAT
/* lgamma is the OpenCL builtin; the rest the helpers above, one element
 * at a time (no vector forms). */
#define SPECIAL_UNARY_OPS(X)                                                   \
    X(lgamma, lgamma(x))                                                       \
    X(digamma, sp_digamma(x))                                                  \
    X(i0, sp_bessel(x, SP_I0))                                                 \
    X(i0e, sp_bessel(x, SP_I0E))                                               \
    X(i1, sp_bessel(x, SP_I1))                                                 \
    X(i1e, sp_bessel(x, SP_I1E))                                               \
    X(ndtr, sp_ndtr(x))                                                        \
    X(ndtri, sp_ndtri(x))                                                      \
    X(log_ndtr, sp_log_ndtr(x))                                                \
    X(sinc, sp_sinc(x))                                                        \
    X(entr, sp_entr(x))
SPECIAL_UNARY_OPS(DEF_UNARY_SCALAR)

/* polygamma(n, x) with n = sc0; mvlgamma(x, p) with p = sc0 and the
 * constant sc1 (ACT3's parameters). */
DEF_FOUR(polygamma_, PARAMS_ACT3, FETCH_ACT3, VFETCH_ACT3, sp_polygamma((int)sc0, x), x, 0)
DEF_FOUR(mvlgamma_, PARAMS_ACT3, FETCH_ACT3, VFETCH_ACT3, sp_mvlgamma(x, (int)sc0, sc1), x, 0)

/* frexp: the mantissa in [0.5, 1) with x's sign goes to out, the exponent
 * to pe (int32, operand 1, laid out as out); inf and NaN come back with
 * exponent 0, as the C library's. */
#define PARAMS_FREXP __global const T *pa, __global int *pe
#define FETCH_FREXP(o0, o1, o2)                                                \
    TY x = T_LOAD(pa, o0);                                                     \
    int e_ = 0;                                                                \
    TY m_ = isfinite(x) ? frexp(x, &e_) : x;                                   \
    pe[o1] = e_;
DEF_FOUR(frexp_, PARAMS_FREXP, FETCH_FREXP, VFETCH_UN, m_, x, 0)
#endif

/* bitwise_not: ~x, and logical not for bool (as torch's). */
#if T_IS_BOOL
DEF_UNARY(bitwise_not, x == zero)
#elif T_IS_INT
DEF_UNARY(bitwise_not, ~x)
#endif
#endif

#ifdef EW_BIN
#if T_IS_FLOAT
/* xlog1py as xlogy: NaN where y is NaN, else 0 where x == 0, else
 * x log1p(y).  logaddexp and logaddexp2 as PyTorch's: a itself where both
 * are the same infinity, else max(a, b) + log1p(exp(-|a - b|)) (NaN in
 * either gives NaN; log1p(exp2(..)) / ln 2 for logaddexp2).  nextafter is
 * the C library's. */
#define XLOG1PY (isnan(b) ? b : a == zero ? zero : a * LOG1P(b))
#define LAE_MAX (a < b ? b : a)
#define LOGADDEXP (isinf(a) && a == b ? a : LAE_MAX + log1p(exp(-fabs(a - b))))
#define LOGADDEXP2                                                             \
    (isinf(a) && a == b ? a                                                    \
                        : LAE_MAX + log1p(exp2(-fabs(a - b))) * K(1.44269504088896340736))
DEF_TT_SCALAR(xlog1py, XLOG1PY)
DEF_TT_SCALAR(logaddexp, LOGADDEXP)
DEF_TT_SCALAR(logaddexp2, LOGADDEXP2)
DEF_TT_SCALAR(nextafter, nextafter(a, b))
#endif

/* heaviside: b where a == 0, else 1 above 0 and 0 below (NaN too). */
DEF_FOUR(heaviside_tt_, PARAMS_TT, FETCH_TT, VFETCH_TT, a == zero ? b : (a > zero ? one : zero),
         a, 0)

#if T_IS_INT
/* gcd by Euclid's algorithm on |a| and |b| (abs wraps, as PyTorch's); lcm
 * |a / gcd * b|, 0 where the gcd is.  int8 and int16 wrap abs to their own
 * width (|-128| is -128), computing in int. */
#if T_IS_UNSIGNED
#define INT_ABS(x) (x)
#elif T_ID == 10 || T_ID == 11
#define INT_ABS(x) ((T_C)(T)((x) < 0 ? -(x) : (x)))
#else
#define INT_ABS(x) ((x) < 0 ? -(x) : (x))
#endif
inline T_C int_gcd(T_C a, T_C b)
{
    a = INT_ABS(a);
    b = INT_ABS(b);
    while (a != 0) {
        T_C c = a;
        a = b % a;
        b = c;
    }
    return b;
}

inline T_C int_lcm(T_C a, T_C b)
{
    T_C g = int_gcd(a, b);
    return g == 0 ? 0 : INT_ABS(a / g * b);
}

/* Shifts in T's width W: a left shift by a count outside [0, W) gives 0,
 * wrapping otherwise; a right shift by one outside [0, W - 1) (W for
 * unsigned) gives the sign fill (0 for unsigned), as PyTorch defines them
 * (its 1.13 CPU kernel shifts by the count modulo the width instead). */
#if T_IS_UNSIGNED
#define SHIFT_LEFT(a, b) ((a) << (b))
#else
#define SHIFT_LEFT(a, b) ((T_C)((CAT(u, T_C))(a) << (b)))
#endif
inline T_C int_lshift(T_C a, T_C b)
{
    if (b < 0 || b >= (T_C)(sizeof(T) * 8))
        return 0;
    return SHIFT_LEFT(a, b);
}

inline T_C int_rshift(T_C a, T_C b)
{
    const T_C w = (T_C)(sizeof(T) * 8) - (T_IS_UNSIGNED ? 0 : 1);
    if (b < 0 || b >= w)
        return a < 0 ? (T_C)-1 : (T_C)0;
    return a >> b;
}

#define INTEGER_BINARY_OPS(X)                                                  \
    X(gcd, int_gcd(a, b))                                                      \
    X(lcm, int_lcm(a, b))                                                      \
    X(bitwise_left_shift, int_lshift(a, b))                                    \
    X(bitwise_right_shift, int_rshift(a, b))
INTEGER_BINARY_OPS(DEF_TT_SCALAR)
#endif

/* bitwise and, or and xor of integers and bool. */
#if T_IS_INT || T_IS_BOOL
#define BITWISE_OPS(X)                                                         \
    X(bitwise_and, a & b, a & b, 1)                                            \
    X(bitwise_or, a | b, a | b, 1)                                             \
    X(bitwise_xor, a ^ b, a ^ b, 1)
BITWISE_OPS(DEF_BINARY)
#endif
#endif

#ifdef EW_CMP
/* signbit: the sign bit of a float (-0.0 and -NaN too), x < 0 for
 * integers, false for bool.  isclose(a, b, rtol, atol, equal_nan) as
 * torch's: a == b, or both NaN with equal_nan, or |a - b| finite and at
 * most atol + |rtol * b|, in a's dtype for floats; integers take the
 * difference in their dtype (wrapping) and the bound in float, as torch's
 * cast of b to the default dtype. */
#if T_IS_FLOAT
#define SIGNBIT(x) (signbit(x) != 0)
#define CLOSE_F T_C
#define CLOSE_ABS(d) fabs(d)
#define CLOSE_NANS(a, b) (isnan(a) && isnan(b))
#define CLOSE_FINITE(d) isfinite(d)
#define CLOSE_DIFF(a, b) ((a) - (b))
#else
#define CLOSE_DIFF(a, b) ((T_C)(T)((a) - (b)))
#define SIGNBIT(x) ((x) < zero)
#define CLOSE_F float
#define CLOSE_ABS(d) ABS(d)
#define CLOSE_NANS(a, b) false
#define CLOSE_FINITE(d) true
#endif
DEF_FOUR(signbit_, PARAMS_UN, FETCH_UN, VFETCH_UN, SIGNBIT(x), x, 0)
inline bool is_close(T_C a, T_C b, CLOSE_F rtol, CLOSE_F atol, CLOSE_F equal_nan)
{
    if (a == b || (equal_nan != 0 && CLOSE_NANS(a, b)))
        return true;
    const T_C zero = 0;
    (void)zero;
    T_C d = CLOSE_DIFF(a, b);
    d = CLOSE_ABS(d);
    return CLOSE_FINITE(d) && (CLOSE_F)d <= atol + fabs(rtol * (CLOSE_F)b);
}
#define PARAMS_CLOSE PARAMS_TT, CLOSE_F rtol, CLOSE_F atol, CLOSE_F equal_nan
DEF_FOUR(isclose_tt_, PARAMS_CLOSE, FETCH_TT, VFETCH_TT, is_close(a, b, rtol, atol, equal_nan), a,
         0)
#endif

#if defined(EW_GRAD) && T_IS_FLOAT
/* The special functions' gradients (a the output's gradient, b the input
 * unless said), PyTorch's formulas: lgamma g digamma(x), digamma
 * g trigamma(x), polygamma(n) g polygamma(n + 1, x) (n = sc0), mvlgamma
 * g sum digamma (p = sc0), i0 g i1(x), i0e g (i1e(x) - sgn(x) i0e(x)),
 * i1 g (i0(x) - i1(x)/x) and i1e g (i0e(x) - i1e(x) (sgn(x) + 1/x)), both
 * g/2 where |x| <= eps and at NaN, ndtr g exp(-x^2/2) / sqrt(2 pi), ndtri (b the
 * output) g sqrt(2 pi) exp(y^2/2), log_ndtr g exp(-(y + x^2/2)) /
 * sqrt(2 pi), sinc g (cos(pi x) - sinc(x)) / x (0 at 0), entr
 * -g (1 + log x); logaddexp's and logaddexp2's from b = the other operand
 * less this one, g / (1 + exp(b)) and g / (1 + 2^b); frexp's from b = the
 * exponent, g / 2^b with 2^b in float32, as PyTorch's exp2 of an int32
 * tensor (inf where it underflows there). */
#if T_ID == 1
#define SP_EPS DBL_EPSILON
#else
#define SP_EPS FLT_EPSILON
#endif
#define SP_SGN(x) ((x) > 0 ? K(1.0) : (x) < 0 ? K(-1.0) : K(0.0))
#define SP_RSQRT_2PI K(0.39894228040143267794)
#define SP_SQRT_2PI K(2.50662827463100050242)
#define I1_BW                                                                  \
    (!(fabs(b) > SP_EPS) ? K(0.5) * a : a * (sp_bessel(b, SP_I0) - sp_bessel(b, SP_I1) / b))
#define I1E_BW                                                                 \
    (!(fabs(b) > SP_EPS) ? K(0.5) * a                                          \
                       : a * (sp_bessel(b, SP_I0E) - sp_bessel(b, SP_I1E) * (SP_SGN(b) + 1 / b)))
#define SINC_BW (b == 0 ? zero : a * (cos(SP_PI * b) - sp_sinc(b)) / b)
#define SPECIAL_GRAD_OPS(X)                                                    \
    X(lgamma_bw, a * sp_digamma(b))                                            \
    X(digamma_bw, a * sp_trigamma(b))                                          \
    X(i0_bw, a * sp_bessel(b, SP_I1))                                          \
    X(i0e_bw, a * (sp_bessel(b, SP_I1E) - SP_SGN(b) * sp_bessel(b, SP_I0E)))   \
    X(i1_bw, I1_BW)                                                            \
    X(i1e_bw, I1E_BW)                                                          \
    X(ndtr_bw, a * exp(K(-0.5) * b * b) * SP_RSQRT_2PI)                        \
    X(ndtri_bw, a * SP_SQRT_2PI * exp(b * b / 2))                              \
    X(log_ndtr_bw, a * SP_RSQRT_2PI * exp(-(sp_log_ndtr(b) + b * b / 2)))      \
    X(sinc_bw, SINC_BW)                                                        \
    X(entr_bw, a * -(one + log(b)))                                            \
    X(logaddexp_bw, a / (one + exp(b)))                                        \
    X(logaddexp2_bw, a / (one + exp2(b)))                                      \
    X(frexp_bw, a / (T_C)exp2((float)b))
SPECIAL_GRAD_OPS(DEF_TT_SCALAR)
DEF_FOUR(polygamma_bw_tt_, PARAMS_ACT3_BW, FETCH_ACT3_BW, VFETCH_ACT3_BW,
         a * sp_polygamma((int)sc0 + 1, b), a, 0)
DEF_FOUR(mvlgamma_bw_tt_, PARAMS_ACT3_BW, FETCH_ACT3_BW, VFETCH_ACT3_BW,
         a * sp_mvdigamma(b, (int)sc0), a, 0)
#endif
