/* shape.cl: linspace and logspace for one dtype T.  logspace, and linspace
 * for integers, as PyTorch's scalar CPU code: start + i * step for the
 * first half of the steps, end - (steps - 1 - i) * step for the rest, in
 * T's compute type for floating T and in double (float where the device has
 * no fp64) for integers, which then truncate; logspace raises base to that
 * value.  linspace for float32 and float64 (vec > 0) as torch 1.13's
 * vectorised CPU kernel (AVX2: vec 8 floats or 4 doubles) gives it, bit for
 * bit: the same two ends, each value one fused multiply-add, except that in
 * the leading whole pairs of vec-wide blocks only a block's first value is
 * that, and the others add j * step (rounded) to it. */

/* The products and sums round apart, as PyTorch's scalar code does. */
#pragma OPENCL FP_CONTRACT OFF

#if T_IS_FLOAT
typedef T_C lin_t;
#elif defined(CLT_FP64)
typedef double lin_t;
#else
typedef float lin_t;
#endif

/* torch's value i of n (mid = n / 2): one rounding, as its compiler fuses
 * start + step * i. */
static lin_t lin_fused(ulong i, ulong n, ulong mid, lin_t start, lin_t end, lin_t step)
{
    return i < mid ? fma(step, (lin_t)i, start) : fma(-step, (lin_t)(n - 1 - i), end);
}

CLT_KERNEL(linspace)(__global T *out, ulong n, lin_t start, lin_t end, lin_t step, int logspace,
                     lin_t base, ulong vec)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    ulong mid = n / 2;
    lin_t v;
    if (vec == 0) {
        v = i < mid ? start + step * (lin_t)i : end - step * (lin_t)(n - 1 - i);
    } else if (i < n / (2 * vec) * (2 * vec)) {
        ulong j = i % vec;
        v = lin_fused(i - j, n, mid, start, end, step);
        if (j > 0)
            v = v + (lin_t)j * step;
    } else {
        v = lin_fused(i, n, mid, start, end, step);
    }
    if (logspace)
        v = pow(base, v);
    T_STORE(out, i, (T_C)v);
}

/* Per-dimension index maps of gather_map: the source coordinate s of
 * output coordinate j along d.  Must match clt__gmap in src/ops/shape.c. */
#define GMAP_IDENTITY 0 /* s = j */
#define GMAP_REFLECT 1  /* s = j - a mirrored once at both ends of [0, n) */
#define GMAP_CLAMP 2    /* s = j - a clamped to [0, n) (replicate) */
#define GMAP_WRAP 3     /* s = b + (j - a) mod n (circular, roll) */
#define GMAP_FLIP 4     /* s = n - 1 - j */
typedef struct clt_gmap {
    long a[CLT_MAX_DIMS];
    long b[CLT_MAX_DIMS];
    long n[CLT_MAX_DIMS];
    int mode[CLT_MAX_DIMS];
} clt_gmap;

/* The source coordinate of output coordinate j along d. */
static inline long gmap(const clt_gmap *M, int d, long j)
{
    long s, m = M->n[d];
    switch (M->mode[d]) {
    case GMAP_REFLECT:
        s = j - M->a[d];
        s = s < 0 ? -s : s;
        return s >= m ? 2 * (m - 1) - s : s;
    case GMAP_CLAMP:
        return clamp(j - M->a[d], 0L, m - 1);
    case GMAP_WRAP:
        s = (j - M->a[d]) % m;
        return M->b[d] + (s < 0 ? s + m : s);
    case GMAP_FLIP:
        return m - 1 - j;
    default:
        return j;
    }
}

/* out[i] (contiguous, of shape L.shape) = src at L.off0 + the sum over d
 * of gmap(d, j_d) * L.s0[d]: flip, roll and the non-constant pads in one
 * launch, one element per work-item (GPUs). */
CLT_KERNEL(gather_map)(__global T *out, __global const T *src, ulong n, clt_layout L, clt_gmap M)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    ulong rem = i;
    long o = L.off0;
    for (int d = L.ndim - 1; d >= 0; d--) {
        ulong size = (ulong)L.shape[d];
        o += gmap(&M, d, (long)(rem % size)) * L.s0[d];
        rem /= size;
    }
    T_STORE(out, i, T_LOAD(src, o));
}

/* The same for CPU devices: a chunk of the output per work-item, walked as
 * runs of the innermost dimension, so that the outer coordinates are
 * found once per run rather than by divisions per element. */
CLT_KERNEL_WG(gather_map_runs, 1, 1, 1)(__global T *out, __global const T *src, ulong n,
                                        ulong chunk, clt_layout L, clt_gmap M)
{
    ulong i = get_global_id(0) * chunk;
    ulong end = min(i + chunk, n);
    if (i >= end)
        return;
    int k = L.ndim - 1;
    if (k < 0) {
        T_STORE(out, 0, T_LOAD(src, L.off0));
        return;
    }
    ulong m = (ulong)L.shape[k], rem = i / m;
    long col = (long)(i % m), st = L.s0[k];
    long idx[CLT_MAX_DIMS], o = L.off0;
    for (int e = k - 1; e >= 0; --e) {
        idx[e] = (long)(rem % (ulong)L.shape[e]);
        rem /= (ulong)L.shape[e];
        o += gmap(&M, e, idx[e]) * L.s0[e];
    }
    while (i < end) {
        ulong len = min(m - (ulong)col, end - i);
        __global T *d = out + i;
        /* One loop per map, its source stepped rather than mapped where
         * it can be. */
        long a = M.a[k], mm = M.n[k];
        __global const T *s = src + o;
        switch (M.mode[k]) {
        case GMAP_WRAP: {
            /* stepped up to the end of the kept range, then from its start */
            long at = gmap(&M, k, col), hi = M.b[k] + mm;
            for (ulong j = 0; j < len; at = M.b[k]) {
                __global const T *p = s + at * st;
                ulong stop = min(len, j + (ulong)(hi - at));
                for (; j < stop; j++, p += st)
                    T_STORE(d, j, T_LOAD(p, 0));
            }
            break;
        }
        case GMAP_FLIP: {
            __global const T *p = s + (mm - 1 - col) * st;
            for (ulong j = 0; j < len; j++, p -= st)
                T_STORE(d, j, T_LOAD(p, 0));
            break;
        }
        case GMAP_REFLECT:
        case GMAP_CLAMP: {
            /* mapped before and after [a, a + mm), stepped inside */
            long j = 0, nl = (long)len;
            for (; j < nl && col + j < a; j++)
                T_STORE(d, j, T_LOAD(s, gmap(&M, k, col + j) * st));
            __global const T *p = s + (col + j - a) * st;
            for (; j < nl && col + j < a + mm; j++, p += st)
                T_STORE(d, j, T_LOAD(p, 0));
            for (; j < nl; j++)
                T_STORE(d, j, T_LOAD(s, gmap(&M, k, col + j) * st));
            break;
        }
        default: {
            __global const T *p = s + col * st;
            for (ulong j = 0; j < len; j++, p += st)
                T_STORE(d, j, T_LOAD(p, 0));
        }
        }
        i += len;
        col = 0;
        for (int e = k - 1; e >= 0; --e) {
            if (++idx[e] < L.shape[e])
                break;
            idx[e] = 0;
        }
        o = L.off0;
        for (int e = k - 1; e >= 0; --e)
            o += gmap(&M, e, idx[e]) * L.s0[e];
    }
}
