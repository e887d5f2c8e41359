/* upsample.cl: nearest and bilinear interpolation of [N, C, H, W] planes,
 * and one pass of the separable modes along one dimension,
 * for dtype T (float32 or float64), as PyTorch 1.13's CPU kernels, and
 * their backward passes: each work-item owns one row of the input
 * gradient and adds the output gradients that read it in PyTorch's order,
 * so results are the same bits on every run, without atomics.  Bilinear
 * reads its sources and weights from a table made once per call. */

/* Products and sums rounded as written, on every device. */
#pragma OPENCL FP_CONTRACT OFF

/* Must match `ugeom` in src/ops/upsample.c. */
typedef struct clt_up_geom {
    long P;          /* planes, N * C */
    long H, W;       /* input */
    long Ho, Wo;     /* output */
    long off0;       /* element offset of the first buffer */
    long align;      /* bilinear: align_corners */
    long pad;
} clt_up_geom;

/* PyTorch 1.13's nearest_idx: the same and twice the size exactly, else
 * min(floor(i * s), in - 1) in float. */
inline long nearest_src(long i, long in, long out, float s)
{
    if (out == in)
        return i;
    if (out == 2 * in)
        return i >> 1;
    return min((long)floor((float)i * s), in - 1);
}

/* One output row (p, oh) per work-item. */
CLT_KERNEL(upsample_nearest_fwd)(__global const T *x, __global T *y, clt_up_geom g, float sh,
                                 float sw)
{
    long id = get_global_id(0);
    if (id >= g.P * g.Ho)
        return;
    long oh = id % g.Ho, p = id / g.Ho;
    __global const T *src = x + g.off0 + (p * g.H + nearest_src(oh, g.H, g.Ho, sh)) * g.W;
    __global T *dst = y + id * g.Wo;
    for (long ow = 0; ow < g.Wo; ow++)
        dst[ow] = src[nearest_src(ow, g.W, g.Wo, sw)];
}

/* One input-gradient row (p, ih) per work-item: the output rows that read
 * it (consecutive, as the source row grows with the output row), each
 * output pixel added in row-major order. */
CLT_KERNEL(upsample_nearest_bwd)(__global const T *gy, __global T *gx, clt_up_geom g, float sh,
                                 float sw)
{
    long id = get_global_id(0);
    if (id >= g.P * g.H)
        return;
    long ih = id % g.H, p = id / g.H;
    __global T *dst = gx + id * g.W;
    for (long iw = 0; iw < g.W; iw++)
        dst[iw] = (T)0;
    for (long oh = 0; oh < g.Ho; oh++) {
        long src_h = nearest_src(oh, g.H, g.Ho, sh);
        if (src_h > ih)
            break;
        if (src_h != ih)
            continue;
        __global const T *src = gy + g.off0 + (p * g.Ho + oh) * g.Wo;
        for (long ow = 0; ow < g.Wo; ow++)
            dst[nearest_src(ow, g.W, g.Wo, sw)] += src[ow];
    }
}

/* PyTorch's area_pixel_compute_source_index and
 * compute_indices_weights_linear for output index i: source indices i0
 * and i1 (i0 + 1, or i0 at the last pixel) and their weights. */
inline void linear_src(long i, long in, T s, long align, long *i0, long *i1, T *l0, T *l1)
{
    T real;
    if (align) {
        real = s * (T)i;
    } else {
        real = s * ((T)i + (T)0.5) - (T)0.5;
        real = real < (T)0 ? (T)0 : real;
    }
    long a = (long)real;
    *i0 = a;
    *i1 = a + (a < in - 1 ? 1 : 0);
    T l = real - (T)a;
    l = l < (T)0 ? (T)0 : l > (T)1 ? (T)1 : l;
    *l1 = l;
    *l0 = (T)1 - l;
}

/* The source indices and weights of every output row (entries 0 to
 * Ho - 1) and column (Ho to Ho + Wo - 1), once per launch rather than once
 * per pixel: idx holds i0, i1 and lam l0, l1 for each. */
CLT_KERNEL(upsample_linear_table)(__global long *idx, __global T *lam, clt_up_geom g, T sh, T sw)
{
    long e = get_global_id(0);
    if (e >= g.Ho + g.Wo)
        return;
    bool row = e < g.Ho;
    long i0, i1;
    T l0, l1;
    linear_src(row ? e : e - g.Ho, row ? g.H : g.W, row ? sh : sw, g.align, &i0, &i1, &l0, &l1);
    idx[2 * e] = i0;
    idx[2 * e + 1] = i1;
    lam[2 * e] = l0;
    lam[2 * e + 1] = l1;
}

/* One output row (p, oh) per work-item: (x[h0][w0] l0w + x[h0][w1] l1w) l0h
 * + (x[h1][w0] l0w + x[h1][w1] l1w) l1h, PyTorch's order. */
CLT_KERNEL(upsample_bilinear_fwd)(__global const T *x, __global T *y, clt_up_geom g,
                                  __global const long *idx, __global const T *lam)
{
    long id = get_global_id(0);
    if (id >= g.P * g.Ho)
        return;
    long oh = id % g.Ho, p = id / g.Ho;
    T a0 = lam[2 * oh], a1 = lam[2 * oh + 1];
    __global const T *r0 = x + g.off0 + (p * g.H + idx[2 * oh]) * g.W;
    __global const T *r1 = x + g.off0 + (p * g.H + idx[2 * oh + 1]) * g.W;
    __global const long *wi = idx + 2 * g.Ho;
    __global const T *wl = lam + 2 * g.Ho;
    __global T *dst = y + id * g.Wo;
    for (long ow = 0; ow < g.Wo; ow++) {
        long w0 = wi[2 * ow], w1 = wi[2 * ow + 1];
        T b0 = wl[2 * ow], b1 = wl[2 * ow + 1];
        T t0 = r0[w0] * b0 + r0[w1] * b1;
        T t1 = r1[w0] * b0 + r1[w1] * b1;
        dst[ow] = t0 * a0 + t1 * a1;
    }
}

/* One input-gradient row (p, ih) per work-item, over the output rows whose
 * h0 or h1 is ih; each output pixel adds l0h l0w g, l0h l1w g, l1h l0w g,
 * l1h l1w g to its four sources in that order, as PyTorch's loop. */
CLT_KERNEL(upsample_bilinear_bwd)(__global const T *gy, __global T *gx, clt_up_geom g,
                                  __global const long *idx, __global const T *lam)
{
    long id = get_global_id(0);
    if (id >= g.P * g.H)
        return;
    long ih = id % g.H, p = id / g.H;
    __global const long *wi = idx + 2 * g.Ho;
    __global const T *wl = lam + 2 * g.Ho;
    __global T *dst = gx + id * g.W;
    for (long iw = 0; iw < g.W; iw++)
        dst[iw] = (T)0;
    for (long oh = 0; oh < g.Ho; oh++) {
        long h0 = idx[2 * oh], h1 = idx[2 * oh + 1];
        if (h0 > ih)
            break;
        if (h0 != ih && h1 != ih)
            continue;
        T a0 = lam[2 * oh], a1 = lam[2 * oh + 1];
        __global const T *src = gy + g.off0 + (p * g.Ho + oh) * g.Wo;
        for (long ow = 0; ow < g.Wo; ow++) {
            long w0 = wi[2 * ow], w1 = wi[2 * ow + 1];
            T b0 = wl[2 * ow], b1 = wl[2 * ow + 1], v = src[ow];
            if (h0 == ih) {
                dst[w0] += a0 * b0 * v;
                dst[w1] += a0 * b1 * v;
            }
            if (h1 == ih) {
                dst[w0] += a1 * b0 * v;
                dst[w1] += a1 * b1 * v;
            }
        }
    }
}

/* ---- the separable modes: one pass along one spatial dimension ---------------------- */

/* Must match `upass` in src/ops/upsample.c. */
typedef struct clt_up_pass {
    long outer, L, Lo, inner; /* [outer, L, inner] to [outer, Lo, inner] */
    long taps;                /* sources per output index */
    long off0;                /* element offset of the first buffer */
    long bstart, bent;        /* the backward's table in idx */
} clt_up_pass;

/* One output element per work-item: its taps' weighted sum, the first
 * product then each next one added, as PyTorch's CPU loop. */
CLT_KERNEL(interp_pass_fwd)(__global const T *x, __global T *y, clt_up_pass g,
                            __global const long *idx, __global const T *w)
{
    long id = get_global_id(0);
    if (id >= g.outer * g.Lo * g.inner)
        return;
    long k = id % g.inner, r = id / g.inner;
    long j = r % g.Lo, o = r / g.Lo;
    __global const T *src = x + g.off0 + o * g.L * g.inner + k;
    __global const long *ij = idx + j * g.taps;
    __global const T *wj = w + j * g.taps;
    T acc = src[ij[0] * g.inner] * wj[0];
    for (long t = 1; t < g.taps; t++)
        acc += src[ij[t] * g.inner] * wj[t];
    y[id] = acc;
}

/* One input-gradient element per work-item: the gradients of the outputs
 * that read it, in increasing output order, each times its weight. */
CLT_KERNEL(interp_pass_bwd)(__global const T *gy, __global T *gx, clt_up_pass g,
                            __global const long *idx, __global const T *w)
{
    long id = get_global_id(0);
    if (id >= g.outer * g.L * g.inner)
        return;
    long k = id % g.inner, r = id / g.inner;
    long i = r % g.L, o = r / g.L;
    __global const T *src = gy + g.off0 + o * g.Lo * g.inner + k;
    __global const T *wb = w + g.Lo * g.taps;
    T acc = (T)0;
    for (long e = idx[g.bstart + i]; e < idx[g.bstart + i + 1]; e++)
        acc += src[idx[g.bent + e] * g.inner] * wb[e];
    gx[id] = acc;
}
