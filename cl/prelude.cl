/* prelude.cl: put in front of every cltensor program.  The host defines the
 * element types with -D options per dtype (see clt__dtype_defs): for a
 * prefix P, P is the storage type, P_C the compute type, P_LOAD/P_STORE the
 * access macros and P_IS_FLOAT/P_IS_INT/P_IS_BOOL/P_IS_UNSIGNED flags. */
#ifdef CLT_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
/* float16 is storage only: vload_half and vstore_half_rte (core built-ins)
 * move it to and from float, in which every kernel computes, so no kernel
 * needs cl_khr_fp16 and none may declare a half variable (a device without
 * the extension refuses to build it). */

#define CLT_MAX_DIMS 8

/* Pastes a and b after expanding them (CAT(T_C, 16) gives float16). */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

/* Compilers for x86 CPUs without AVX-512 (or AVX) warn that 16-wide vector
 * arguments "change the ABI" at every call of a builtin such as fmax or
 * convert_float16.  The builtins are linked in as bitcode compiled for the
 * same CPU and inlined, so no call crosses an ABI; the warning only made
 * noise (PoCL prints a count of warnings on stderr). */
#if defined(__clang__) && defined(__has_warning)
#if __has_warning("-Wpsabi")
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#endif

/* Kernels are declared with CLT_KERNEL(name)(params), or
 * CLT_KERNEL_WG(name, x, y, z)(params) for a required work-group size.  A
 * program built for one kernel (options -DCLT_SELECT -DCLT_ONLY_<name>, see
 * src/device/program.c) compiles only that one: the others become unused
 * static functions, which the compiler drops unread.  Without CLT_SELECT
 * every kernel is compiled, as is any declared with plain __kernel. */
#define CLT__SECOND(a, b, ...) b
#define CLT__ONE_1 ~, 1
#define CLT__IS_ONE__(probe) CLT__SECOND(probe, 0, ~)
#define CLT__IS_ONE_(x) CLT__IS_ONE__(CLT__ONE_##x)
#define CLT__IS_ONE(x) CLT__IS_ONE_(x)
#ifdef CLT_SELECT
#define CLT__WANTED(name) CLT__IS_ONE(CLT_ONLY_##name)
#else
#define CLT__WANTED(name) 1
#endif
#define CLT__QUAL_1(...) __kernel __VA_ARGS__ void
#define CLT__QUAL_0(...) static inline void
#define CLT_KERNEL(name) CAT(CLT__QUAL_, CLT__WANTED(name))() name
#define CLT_KERNEL_WG(name, x, y, z)                                          \
    CAT(CLT__QUAL_, CLT__WANTED(name))(__attribute__((reqd_work_group_size(x, y, z)))) name

/* Must match clt__layout in src/internal.h. */
typedef struct clt_layout {
    long shape[CLT_MAX_DIMS];
    long s0[CLT_MAX_DIMS];
    long s1[CLT_MAX_DIMS];
    long s2[CLT_MAX_DIMS];
    long off0, off1, off2;
    int ndim;
    int pad;
} clt_layout;

/* What contiguous kernels need besides their buffers and scalars: the
 * element count, the elements per work-item on CPUs, the operands' offsets.
 * Must match clt__offsets in src/internal.h.  One small argument is cheaper
 * to set and enqueue than the whole layout, or than three (PoCL copies each
 * by-value argument on its own). */
typedef struct clt_offsets {
    ulong n, chunk;
    long off0, off1, off2;
} clt_offsets;

/* The record of the first error a kernel meets in its data (an index out of
 * range, an integer division by zero), which the host reads at the
 * launching thread's next synchronisation (src/device/error_flag.c).  Must
 * match clt__index_error in src/internal.h. */
typedef struct clt_index_error {
    int flag, op, dim, pad;
    long value, size;
} clt_index_error;

/* Keeps the first error the device meets; later ones (in this kernel or the
 * next) leave it alone until the host reads and resets it.  dim says what
 * was met: >= 0 an index along that dimension, -1 one_hot's class value,
 * -2 a loss's target, -3 an integer division by zero. */
static inline void clt_report_error(__global clt_index_error *e, int op, int dim, long value,
                                    long size)
{
    if (atomic_cmpxchg((volatile __global int *)&e->flag, 0, 1) == 0) {
        e->op = op;
        e->dim = dim;
        e->value = value;
        e->size = size;
    }
}

/* isnan for the dtype T, false for integers (isnan of an integer is an
 * ambiguous call). */
#if T_IS_FLOAT
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) false
#endif

#define LOAD_PLAIN(p, i) ((p)[i])
#define STORE_PLAIN(p, i, v) ((p)[i] = (v))
#define LOAD_HALF(p, i) vload_half((i), (p))
#define STORE_HALF(p, i, v) vstore_half_rte((v), (i), (p))
#define STORE_BOOL(p, i, v) ((p)[i] = (uchar)((v) != 0))

/* bfloat16 is storage only too: the upper half of a float, in 16 bits
 * wrapped in a struct so that a kernel that computes on T itself, rather
 * than through T_LOAD and T_STORE, fails to build instead of doing integer
 * arithmetic on the bits (copying T values whole stays right).  Loading
 * shifts the bits back; storing rounds a float to the nearest bfloat16,
 * ties to even, and keeps NaN a (quiet) NaN as torch's
 * round_to_nearest_even does (adding 0x7fff plus the kept half's lowest bit
 * carries into it exactly when the dropped half is above one half, or is
 * one half with that bit odd; a finite value past the largest carries into
 * the exponent and becomes inf). */
typedef struct clt_bf16 {
    ushort bits;
} clt_bf16;
#define LOAD_BF16(p, i) as_float((uint)(p)[i].bits << 16)
#define STORE_BF16(p, i, v) ((p)[i].bits = clt_float_to_bf16(v))
static inline ushort clt_float_to_bf16(float f)
{
    uint u = as_uint(f);
    return isnan(f) ? (ushort)0x7fc0 : (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
/* The same for 16 lanes, for the vector paths of the kernels. */
#define CLT_VLOAD16_BF16(p)                                                    \
    as_float16(convert_uint16(CLT_VLOAD16(ushort, (__global const ushort *)(p))) << 16)
static inline ushort16 clt_float16_to_bf16(float16 f)
{
    uint16 u = as_uint16(f);
    uint16 r = (u + (uint16)0x7fffu + ((u >> 16) & (uint16)1u)) >> 16;
    return convert_ushort16(select(r, (uint16)0x7fc0u, as_uint16(isnan(f))));
}
#define CLT_VSTORE16_BF16(v, p) CLT_VSTORE16(ushort, clt_float16_to_bf16(v), (__global ushort *)(p))

/* Compensated (Kahan) addition of x to the sum s of floating type `type`,
 * whose lost low-order part is -c (start both at 0): the error of a long
 * sum stays near one rounding instead of growing with its length.  Once
 * the sum is infinite c stays 0, so inf stays inf (inf - inf would turn c,
 * and then the sum, into NaN).  Needs FP_CONTRACT off or no products in x. */
#define CLT_ADD_COMPENSATED(type, s, c, x)                                     \
    do {                                                                       \
        type y_ = (x) - (c), t_ = (s) + y_;                                    \
        (c) = isfinite(t_) ? (t_ - (s)) - y_ : (type)0;                        \
        (s) = t_;                                                              \
    } while (0)

/* Offsets of element i (row-major over L->shape) in up to three strided
 * operands. */
#define CLT_UNRAVEL3(L, i, o0, o1, o2)                                        \
    do {                                                                      \
        long rem_ = (long)(i);                                                \
        o0 = (L)->off0;                                                       \
        o1 = (L)->off1;                                                       \
        o2 = (L)->off2;                                                       \
        for (int d_ = (L)->ndim - 1; d_ >= 0; --d_) {                         \
            long n_ = (L)->shape[d_];                                         \
            long k_ = rem_ % n_;                                              \
            rem_ /= n_;                                                       \
            o0 += k_ * (L)->s0[d_];                                           \
            o1 += k_ * (L)->s1[d_];                                           \
            o2 += k_ * (L)->s2[d_];                                           \
        }                                                                     \
    } while (0)

/* The start of a kernel with one work-item per element of L.shape: item i
 * past the last of n elements returns; the others get the offsets o0, o1
 * and o2 of element i (row-major) in the three operands. */
#define CLT_STRIDED_ITEM(i, n, L, o0, o1, o2)                                 \
    size_t i = get_global_id(0);                                              \
    if (i >= (n))                                                             \
        return;                                                               \
    long o0, o1, o2;                                                          \
    CLT_UNRAVEL3(&(L), i, o0, o1, o2)

/* 16-element loads and stores at any address aligned to the element, for
 * global memory.  PoCL 3.1 compiles vload16/vstore16 in some kernels into
 * pieces of two elements (eight 8-byte loads and a chain of shuffles per
 * float16: an add of 1M floats ran at 85 GB/s instead of 115); a clang
 * vector type with the element's alignment gives one unaligned 64-byte
 * access.  Only for clang compiling for a CPU (x86-64 or AArch64), where it
 * was measured; GPU and other compilers keep vload16/vstore16. */
#if defined(__clang__) && (defined(__x86_64__) || defined(__aarch64__))
#define CLT_DEF_V16U(type) \
    typedef type CAT(clt_v16u_, type) __attribute__((ext_vector_type(16), aligned(sizeof(type))));
CLT_DEF_V16U(float)
CLT_DEF_V16U(int)
CLT_DEF_V16U(uint)
CLT_DEF_V16U(long)
CLT_DEF_V16U(ulong)
CLT_DEF_V16U(uchar)
CLT_DEF_V16U(ushort)
CLT_DEF_V16U(char)
CLT_DEF_V16U(short)
#ifdef CLT_FP64
CLT_DEF_V16U(double)
#endif
#define CLT_VLOAD16(type, p) (*(const __global CAT(clt_v16u_, type) *)(p))
#define CLT_VSTORE16(type, v, p) (*(__global CAT(clt_v16u_, type) *)(p) = (v))
#else
#define CLT_VLOAD16(type, p) vload16(0, (p))
#define CLT_VSTORE16(type, v, p) vstore16((v), 0, (p))
#endif

/* The 4 x 4 register tile of the small products (mm_dot in cl/mm_small.cl,
 * gemm_small in cl/gemm.cl): declares the vector accumulators a00 to a33
 * (a<u><v>, named by the prefix a) and adds into each, lane by lane, the
 * products p<u>[k] q<v>[k] for k0 <= k < k1 (k1 - k0 a multiple of the
 * width of V), in vectors read by LOAD(pointer).  The caller adds up the
 * lanes. */
#define CLT_TILE4X4(V, LOAD, a, p0, p1, p2, p3, q0, q1, q2, q3, k0, k1)      \
    V a##00 = 0, a##01 = 0, a##02 = 0, a##03 = 0, a##10 = 0, a##11 = 0;      \
    V a##12 = 0, a##13 = 0, a##20 = 0, a##21 = 0, a##22 = 0, a##23 = 0;      \
    V a##30 = 0, a##31 = 0, a##32 = 0, a##33 = 0;                            \
    for (ulong k_ = (k0); k_ < (k1); k_ += vec_step(V)) {                     \
        V p0_ = LOAD((p0) + k_), p1_ = LOAD((p1) + k_);                       \
        V p2_ = LOAD((p2) + k_), p3_ = LOAD((p3) + k_);                       \
        V q0_ = LOAD((q0) + k_), q1_ = LOAD((q1) + k_);                       \
        V q2_ = LOAD((q2) + k_), q3_ = LOAD((q3) + k_);                       \
        a##00 = fma(p0_, q0_, a##00), a##01 = fma(p0_, q1_, a##01);           \
        a##02 = fma(p0_, q2_, a##02), a##03 = fma(p0_, q3_, a##03);           \
        a##10 = fma(p1_, q0_, a##10), a##11 = fma(p1_, q1_, a##11);           \
        a##12 = fma(p1_, q2_, a##12), a##13 = fma(p1_, q3_, a##13);           \
        a##20 = fma(p2_, q0_, a##20), a##21 = fma(p2_, q1_, a##21);           \
        a##22 = fma(p2_, q2_, a##22), a##23 = fma(p2_, q3_, a##23);           \
        a##30 = fma(p3_, q0_, a##30), a##31 = fma(p3_, q1_, a##31);           \
        a##32 = fma(p3_, q2_, a##32), a##33 = fma(p3_, q3_, a##33);           \
    }
