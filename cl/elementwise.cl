/* elementwise.cl: binary and unary elementwise kernels for compute dtype T
 * and output dtype O.  Each op is one line in a list; the macros below
 * write its kernels.  A kernel takes a layout L: when `contig` is set the
 * operands are contiguous at offsets L.off0/L.off1 and i indexes them
 * directly, otherwise L's shape and (broadcast) strides place element i. */

#define BINARY_OPS(X)                                                          \
    X(add, a + b)                                                              \
    X(sub, a - b)                                                              \
    X(mul, a * b)                                                              \
    X(div, a / b)

#define UNARY_OPS(X)                                                           \
    X(neg, -x)

#define OFFSETS(o0, o1)                                                        \
    long o0, o1, o2_;                                                          \
    if (contig) {                                                              \
        o0 = L.off0 + (long)i;                                                 \
        o1 = L.off1 + (long)i;                                                 \
    } else {                                                                   \
        CLT_UNRAVEL3(&L, i, o0, o1, o2_);                                      \
    }

#define DEF_BINARY(name, expr)                                                 \
    __kernel void name##_tt(__global O *out, __global const T *pa,             \
                            __global const T *pb, ulong n, int contig,         \
                            clt_layout L)                                      \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= n)                                                            \
            return;                                                            \
        OFFSETS(oa, ob)                                                        \
        T_C a = T_LOAD(pa, oa);                                                \
        T_C b = T_LOAD(pb, ob);                                                \
        O_STORE(out, i, (O_C)(expr));                                          \
    }                                                                          \
    __kernel void name##_ts(__global O *out, __global const T *pa, T_C s,      \
                            int reversed, ulong n, int contig, clt_layout L)   \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= n)                                                            \
            return;                                                            \
        OFFSETS(oa, ob)                                                        \
        T_C x = T_LOAD(pa, oa);                                                \
        T_C a = reversed ? s : x;                                              \
        T_C b = reversed ? x : s;                                              \
        O_STORE(out, i, (O_C)(expr));                                          \
    }

#define DEF_UNARY(name, expr)                                                  \
    __kernel void name(__global O *out, __global const T *pa, ulong n,         \
                       int contig, clt_layout L)                               \
    {                                                                          \
        size_t i = get_global_id(0);                                           \
        if (i >= n)                                                            \
            return;                                                            \
        OFFSETS(oa, ob)                                                        \
        T_C x = T_LOAD(pa, oa);                                                \
        O_STORE(out, i, (O_C)(expr));                                          \
    }

BINARY_OPS(DEF_BINARY)
UNARY_OPS(DEF_UNARY)
