/* segment.cl: torch.segment_reduce (PyTorch 1.13's _segment_reduce) over
 * contiguous data of dtype T (float32 or float64) seen as [outer, size,
 * inner], segments along the middle dimension given by host-checked
 * offsets [outer, nseg + 1] (long).  A work-item per output element
 * (o, s, i) walks its segment in order, as PyTorch's CPU kernel, for the
 * forward (seg_fwd) and the backward (seg_bwd, which writes the gradient of
 * every element of the segment: segments do not overlap).  No atomics. */

#pragma OPENCL FP_CONTRACT OFF

/* Must match seg_geom in src/ops/segment.c. */
typedef struct clt_seg_geom {
    long outer, size, inner, nseg;
    long reduce;           /* 0 sum, 1 mean, 2 max, 3 min, 4 prod */
    long has_init;
    long rh;               /* 16-bit data: each step rounded to float16 (1) or bfloat16 (2) */
    long doff, ooff, goff; /* element offsets of data, output, grad */
} clt_seg_geom;

#define SEG_SUM 0
#define SEG_MEAN 1
#define SEG_MAX 2
#define SEG_MIN 3
#define SEG_PROD 4

/* x rounded to float16 or bfloat16 and back when g.rh: PyTorch's 16-bit
 * kernels keep their running value in that dtype. */
static inline T seg_round(const clt_seg_geom g, T x)
{
    if (!g.rh)
        return x;
    if (g.rh == 2)
        return (T)as_float((uint)clt_float_to_bf16((float)x) << 16);
    ushort u;
    vstore_half_rte(x, 0, (__private half *)&u);
    return (T)vload_half(0, (__private const half *)&u);
}

/* The reduction's start: initial when given, else its identity (-inf for
 * max, inf for min, 1 for prod, 0 for sum and mean). */
static inline T seg_start(const clt_seg_geom g, T init)
{
    if (g.has_init)
        return init;
    if (g.reduce == SEG_MAX)
        return (T)(-INFINITY);
    if (g.reduce == SEG_MIN)
        return (T)INFINITY;
    return g.reduce == SEG_PROD ? (T)1 : (T)0;
}

CLT_KERNEL(seg_fwd)(__global T *out, __global const T *data, __global const long *off,
                    T init, clt_seg_geom g)
{
    long id = get_global_id(0);
    if (id >= g.outer * g.nseg * g.inner)
        return;
    long i = id % g.inner, s = (id / g.inner) % g.nseg, o = id / (g.inner * g.nseg);
    long b = off[o * (g.nseg + 1) + s], e = off[o * (g.nseg + 1) + s + 1];
    __global const T *p = data + g.doff + o * g.size * g.inner + i;
    T acc = seg_round(g, seg_start(g, init));
    for (long k = b; k < e; k++) {
        T v = p[k * g.inner];
        switch (g.reduce) {
        case SEG_MAX:
            /* NaN propagates: once acc is NaN nothing replaces it */
            acc = (isnan(v) || v > acc) ? v : acc;
            break;
        case SEG_MIN:
            acc = (isnan(v) || v < acc) ? v : acc;
            break;
        case SEG_PROD:
            acc = seg_round(g, acc * v);
            break;
        default:
            acc = seg_round(g, acc + v);
        }
    }
    if (g.reduce == SEG_MEAN) {
        if (e > b)
            acc = isnan(acc) ? acc : acc / (T)(e - b);
        else if (!g.has_init)
            acc = (T)NAN;
    }
    out[g.ooff + id] = acc;
}

/* gin (contiguous, data's shape, zeroed where no segment reaches) from
 * the output's gradient grad and the forward's out, as PyTorch's
 * _segment_reduce_backward: sum g; mean g / length; max and min g to every
 * element equal to the result or NaN, divided by their count where g is
 * positive (PyTorch's kernel divides only those); prod g * out / x, and
 * for x zero or NaN g times the product of the others and initial. */
CLT_KERNEL(seg_bwd)(__global T *gin, __global const T *grad, __global const T *out,
                    __global const T *data, __global const long *off, T init, clt_seg_geom g)
{
    long id = get_global_id(0);
    if (id >= g.outer * g.nseg * g.inner)
        return;
    long i = id % g.inner, s = (id / g.inner) % g.nseg, o = id / (g.inner * g.nseg);
    long b = off[o * (g.nseg + 1) + s], e = off[o * (g.nseg + 1) + s + 1];
    long base = o * g.size * g.inner + i;
    __global const T *p = data + g.doff + base;
    __global T *q = gin + base;
    T gv = grad[g.goff + id], ov = out[g.ooff + id];
    if (g.reduce == SEG_SUM || g.reduce == SEG_MEAN) {
        T v = g.reduce == SEG_MEAN && e > b ? gv / (T)(e - b) : gv;
        for (long k = b; k < e; k++)
            q[k * g.inner] = v;
    } else if (g.reduce == SEG_MAX || g.reduce == SEG_MIN) {
        long cnt = 0;
        for (long k = b; k < e; k++) {
            T x = p[k * g.inner];
            if (isnan(x) || x == ov)
                cnt++;
        }
        T share = cnt >= 2 && gv > (T)0 ? gv / (T)cnt : gv;
        for (long k = b; k < e; k++) {
            T x = p[k * g.inner];
            q[k * g.inner] = (isnan(x) || x == ov) ? share : (T)0;
        }
    } else {
        T gp = gv * ov;
        T start = g.has_init ? init : (T)1;
        for (long k = b; k < e; k++) {
            T x = p[k * g.inner];
            if (isnan(x) || x == (T)0) {
                T ex = start;
                for (long j = b; j < e; j++)
                    if (j != k)
                        ex = ex * p[j * g.inner];
                q[k * g.inner] = gv * ex;
            } else {
                q[k * g.inner] = gp / x;
            }
        }
    }
}
