/* grid_sample.cl: torch.nn.functional.grid_sample of [N, C, H, W] inputs at
 * [N, Ho, Wo, 2] grids (and [N, C, D, H, W] ones at [N, Do, Ho, Wo, 3]) for
 * dtype T (float32 or float64), with PyTorch
 * 1.13's formulas (bilinear, nearest and bicubic; zeros, border and
 * reflection padding), and its backward passes without atomics: the
 * input's gradient one (n, c) plane and run of grid points per work-item
 * (the runs' parts then summed in order), the grid's one point per
 * work-item, each summed in a fixed order. */

/* Products and sums rounded as written, on every device. */
#pragma OPENCL FP_CONTRACT OFF

/* Must match `gsgeom` in src/ops/grid_sample.c.  A 2-D sample has
 * D = Do = 1. */
typedef struct clt_gs_geom {
    long N, C, D, H, W, Do, Ho, Wo;
    long offx, offg, offy; /* element offsets of the input, the grid, the output's gradient */
    int mode;              /* 0 bilinear, 1 nearest, 2 bicubic */
    int padding;           /* 0 zeros, 1 border, 2 reflection */
    int align;             /* align_corners */
    int dims;              /* spatial dimensions: 2 or 3 */
} clt_gs_geom;

/* grid_sampler_unnormalize_set_grad: [-1, 1] to pixel units; *d the
 * derivative.  A 2-D sample rounds as torch's CPU kernel for 4-D inputs
 * (ComputeLocationBase, built with FMA: (coord + 1) * ((size - 1) / 2)
 * with align_corners, fma(coord + 1, size / 2, -0.5) without), a 3-D one
 * as its scalar kernel for 5-D inputs (GridSampler.h).  The bits
 * matter where a point falls on a pixel's centre, as every point of an
 * identity affine_grid does: floor() picks the taps, and with them the
 * one-sided slope that becomes the grid's gradient. */
inline T gs_unnormalize(T coord, long size, int align, int dims, T *d)
{
    if (align) {
        *d = (T)(size - 1) / (T)2;
        return dims == 2 ? (coord + (T)1) * *d : ((coord + (T)1) / (T)2) * (T)(size - 1);
    }
    *d = (T)size / (T)2;
    return dims == 2 ? fma(coord + (T)1, *d, (T)-0.5) : ((coord + (T)1) * (T)size - (T)1) / (T)2;
}

/* clip_coordinates_set_grad: the borders count as outside for the
 * derivative. */
inline T gs_clip(T in, long limit, T *d)
{
    if (in <= (T)0) {
        *d = (T)0;
        return (T)0;
    }
    T max = (T)(limit - 1);
    if (in >= max) {
        *d = (T)0;
        return max;
    }
    *d = (T)1;
    return in;
}

/* reflect_coordinates_set_grad: in reflected into [twice_low / 2,
 * twice_high / 2]. */
inline T gs_reflect(T in, long twice_low, long twice_high, T *d)
{
    if (twice_low == twice_high) {
        *d = (T)0;
        return (T)0;
    }
    T min = (T)twice_low / (T)2, span = (T)(twice_high - twice_low) / (T)2, mult = (T)1;
    in = in - min;
    if (in < (T)0) {
        mult = (T)-1;
        in = -in;
    }
    T extra = fmod(in, span);
    T flips = floor(in / span);
    if (fmod(flips, (T)2) == (T)0) {
        *d = mult;
        return extra + min;
    }
    *d = -mult;
    return span - extra + min;
}

/* compute_coordinates: a position in pixels placed by the padding mode. */
inline T gs_place(T coord, long size, int padding, int align, T *d)
{
    T dc, dr;
    *d = (T)1;
    if (padding == 1) {
        coord = gs_clip(coord, size, &dc);
        *d = dc;
    } else if (padding == 2) {
        coord = align ? gs_reflect(coord, 0, 2 * (size - 1), &dr)
                      : gs_reflect(coord, -1, 2 * size - 1, &dr);
        coord = gs_clip(coord, size, &dc);
        *d = dr * dc;
    }
    return coord;
}

/* grid_sampler_compute_source_index_set_grad. */
inline T gs_source(T coord, long size, int padding, int align, int dims, T *d)
{
    T du, dp;
    coord = gs_unnormalize(coord, size, align, dims, &du);
    coord = gs_place(coord, size, padding, align, &dp);
    *d = padding ? du * dp : du;
    return coord;
}

/* A pixel index, or -1 when it lies outside [0, size) (NaN included). */
inline long gs_index(T v, long size)
{
    return v >= (T)0 && v < (T)size ? (long)v : -1;
}

/* get_cubic_upsample_coefficients (A = -0.75) and their derivatives in t. */
inline void gs_cubic(T t, T *c, T *dc)
{
    const T A = (T)-0.75;
    T x1 = t + (T)1, x2 = (T)1 - t, x3 = x2 + (T)1;
    c[0] = ((A * x1 - (T)5 * A) * x1 + (T)8 * A) * x1 - (T)4 * A;
    c[1] = ((A + (T)2) * t - (A + (T)3)) * t * t + (T)1;
    c[2] = ((A + (T)2) * x2 - (A + (T)3)) * x2 * x2 + (T)1;
    c[3] = ((A * x3 - (T)5 * A) * x3 + (T)8 * A) * x3 - (T)4 * A;
    dc[0] = ((T)3 * A * x1 - (T)10 * A) * x1 + (T)8 * A;
    dc[1] = ((T)3 * (A + (T)2) * t - (T)2 * (A + (T)3)) * t;
    dc[2] = -(((T)3 * (A + (T)2) * x2 - (T)2 * (A + (T)3)) * x2);
    dc[3] = -(((T)3 * A * x3 - (T)10 * A) * x3 + (T)8 * A);
}

/* Where one grid point reads: up to 16 taps (depths tz[l], rows ty[j],
 * columns tx[i], -1 outside) with weights wz[l] wy[j] wx[i], and the
 * weights' derivatives in the point's pixel coordinates, times those
 * coordinates' derivatives in the grid's (dwx, dwy, dwz).  Bicubic uses 4
 * taps a side, bilinear 2 and nearest 1; a 2-D sample has one depth. */
typedef struct gs_taps {
    long tx[4], ty[4], tz[2];
    T wx[4], wy[4], wz[2], dwx[4], dwy[4], dwz[2];
    int n, nz;
} gs_taps;

/* The linear taps of one axis: floor(i) and floor(i) + 1. */
inline void gs_linear(T i, T d, long size, long *t, T *w, T *dw)
{
    T f = floor(i);
    t[0] = gs_index(f, size);
    t[1] = gs_index(f + (T)1, size);
    w[0] = f + (T)1 - i;
    w[1] = i - f;
    dw[0] = -d;
    dw[1] = d;
}

inline gs_taps gs_locate(__global const T *gp, clt_gs_geom g)
{
    gs_taps p;
    T dx, dy, dz;
    p.tz[0] = 0;
    p.wz[0] = (T)1;
    p.dwz[0] = (T)0;
    p.nz = 1;
    if (g.mode == 2) {
        T ix = gs_unnormalize(gp[0], g.W, g.align, 2, &dx);
        T iy = gs_unnormalize(gp[1], g.H, g.align, 2, &dy);
        T fx = floor(ix), fy = floor(iy), dd;
        gs_cubic(ix - fx, p.wx, p.dwx);
        gs_cubic(iy - fy, p.wy, p.dwy);
        for (int k = 0; k < 4; k++) {
            p.tx[k] = gs_index(gs_place(fx - (T)1 + (T)k, g.W, g.padding, g.align, &dd), g.W);
            p.ty[k] = gs_index(gs_place(fy - (T)1 + (T)k, g.H, g.padding, g.align, &dd), g.H);
            p.dwx[k] *= dx;
            p.dwy[k] *= dy;
        }
        p.n = 4;
        return p;
    }
    T ix = gs_source(gp[0], g.W, g.padding, g.align, g.dims, &dx);
    T iy = gs_source(gp[1], g.H, g.padding, g.align, g.dims, &dy);
    T iz = g.dims == 3 ? gs_source(gp[2], g.D, g.padding, g.align, 3, &dz) : (T)0;
    if (g.mode == 1) { /* torch's 2-D kernel rounds half to even, its 3-D one away from 0 */
        p.tx[0] = gs_index(g.dims == 3 ? round(ix) : rint(ix), g.W);
        p.ty[0] = gs_index(g.dims == 3 ? round(iy) : rint(iy), g.H);
        if (g.dims == 3)
            p.tz[0] = gs_index(round(iz), g.D);
        p.wx[0] = p.wy[0] = (T)1;
        p.dwx[0] = p.dwy[0] = (T)0;
        p.n = 1;
        return p;
    }
    gs_linear(ix, dx, g.W, p.tx, p.wx, p.dwx);
    gs_linear(iy, dy, g.H, p.ty, p.wy, p.dwy);
    if (g.dims == 3) {
        gs_linear(iz, dz, g.D, p.tz, p.wz, p.dwz);
        p.nz = 2;
    }
    p.n = 2;
    return p;
}

/* The input element of tap (l, j, i), or -1 outside. */
inline long gs_at(const gs_taps *p, int l, int j, int i, clt_gs_geom g)
{
    return p->tz[l] >= 0 && p->ty[j] >= 0 && p->tx[i] >= 0
               ? (p->tz[l] * g.H + p->ty[j]) * g.W + p->tx[i]
               : -1;
}

/* One grid point per work-item, over the channels: bilinear (trilinear)
 * adds nw, ne, sw, se (the top's, then the bottom's) in that order (in
 * 2-D each product fused into the sum, as torch's CPU kernel); bicubic interpolates each row, then the rows, as PyTorch's
 * cubic_interp1d. */
CLT_KERNEL(grid_sample_fwd)(__global const T *x, __global const T *grid, __global T *y,
                            clt_gs_geom g)
{
    long id = get_global_id(0);
    long points = g.Do * g.Ho * g.Wo, plane = g.D * g.H * g.W;
    if (id >= g.N * points)
        return;
    long n = id / points, q = id % points;
    gs_taps p = gs_locate(grid + g.offg + g.dims * id, g);
    for (long c = 0; c < g.C; c++) {
        __global const T *xp = x + g.offx + (n * g.C + c) * plane;
        T acc = (T)0;
        if (g.mode == 2) {
            for (int j = 0; j < 4; j++) {
                T row = (T)0;
                for (int i = 0; i < 4; i++) {
                    long at = gs_at(&p, 0, j, i, g);
                    T v = at >= 0 ? xp[at] : (T)0;
                    row = i ? row + v * p.wx[i] : v * p.wx[i];
                }
                acc = j ? acc + row * p.wy[j] : row * p.wy[j];
            }
        } else if (g.mode == 1) {
            long at = gs_at(&p, 0, 0, 0, g);
            acc = at >= 0 ? xp[at] : (T)0;
        } else if (g.dims == 2) {
            /* torch's 2-D CPU kernel, built with FMA: nw_val * nw, then
             * ne, sw and se each fused into the sum (a tap outside reads 0) */
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++) {
                    long at = gs_at(&p, 0, j, i, g);
                    T v = at >= 0 ? xp[at] : (T)0, w = p.wy[j] * p.wx[i];
                    acc = i + j ? fma(v, w, acc) : v * w;
                }
        } else {
            for (int l = 0; l < p.nz; l++)
                for (int j = 0; j < 2; j++)
                    for (int i = 0; i < 2; i++) {
                        long at = gs_at(&p, l, j, i, g);
                        if (at >= 0)
                            acc += xp[at] * (p.wx[i] * p.wy[j] * p.wz[l]);
                    }
        }
        y[(n * g.C + c) * points + q] = acc;
    }
}

/* Each grid point's taps once for all channels: k = (l n + i) n + j of
 * its taps gets the input element (-1 outside) and the weight
 * wx[i] wy[j] wz[l], K entries a point. */
CLT_KERNEL(grid_sample_taps)(__global const T *grid, __global long *tidx, __global T *tw,
                             clt_gs_geom g, long K)
{
    long id = get_global_id(0);
    if (id >= g.N * g.Do * g.Ho * g.Wo)
        return;
    gs_taps p = gs_locate(grid + g.offg + g.dims * id, g);
    for (int l = 0; l < p.nz; l++)
        for (int i = 0; i < p.n; i++)
            for (int j = 0; j < p.n; j++) {
                long k = id * K + (l * p.n + i) * p.n + j;
                tidx[k] = gs_at(&p, l, j, i, g);
                tw[k] = p.wx[i] * p.wy[j] * p.wz[l];
            }
}

/* The input's gradient, one plane (n, c) and one run of `len` grid points
 * per work-item: its part (a zeroed plane of `part`, chunk-major) gets
 * each point's output gradient times its taps' weights, points in
 * row-major order. */
CLT_KERNEL(grid_sample_bwd_input)(__global const T *gy, __global const long *tidx,
                                  __global const T *tw, __global T *part, clt_gs_geom g, long K,
                                  long chunks)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * chunks)
        return;
    long plane = id % (g.N * g.C), chunk = id / (g.N * g.C), size = g.D * g.H * g.W;
    long n = plane / g.C, points = g.Do * g.Ho * g.Wo, len = (points + chunks - 1) / chunks;
    long q0 = chunk * len, q1 = min(q0 + len, points);
    __global T *dst = part + id * size;
    for (long k = 0; k < size; k++)
        dst[k] = (T)0;
    __global const T *src = gy + g.offy + plane * points;
    for (long q = q0; q < q1; q++) {
        long at = (n * points + q) * K;
        T v = src[q];
        for (long k = 0; k < K; k++)
            if (tidx[at + k] >= 0)
                dst[tidx[at + k]] += tw[at + k] * v;
    }
}

/* The parts summed in chunk order: one input-gradient element per
 * work-item. */
CLT_KERNEL(grid_sample_sum_parts)(__global const T *part, __global T *gx, long n, long chunks)
{
    long id = get_global_id(0);
    if (id >= n)
        return;
    T acc = part[id];
    for (long c = 1; c < chunks; c++)
        acc += part[c * n + id];
    gx[id] = acc;
}

/* The grid's gradient, one point per work-item, over the channels in
 * order: the derivative of each tap's weight times its value. */
CLT_KERNEL(grid_sample_bwd_grid)(__global const T *gy, __global const T *x,
                                 __global const T *grid, __global T *ggrid, clt_gs_geom g)
{
    long id = get_global_id(0);
    long points = g.Do * g.Ho * g.Wo, plane = g.D * g.H * g.W;
    if (id >= g.N * points)
        return;
    long n = id / points, q = id % points;
    gs_taps p = gs_locate(grid + g.offg + g.dims * id, g);
    T s[3] = {(T)0, (T)0, (T)0};
    for (long c = 0; c < (g.mode == 1 ? 0 : g.C); c++) { /* nearest: a zero gradient */
        __global const T *xp = x + g.offx + (n * g.C + c) * plane;
        T v0 = gy[g.offy + (n * g.C + c) * points + q];
        for (int l = 0; l < p.nz; l++)
            for (int i = 0; i < p.n; i++)
                for (int j = 0; j < p.n; j++) {
                    long at = gs_at(&p, l, j, i, g);
                    if (at < 0)
                        continue;
                    T v = xp[at] * v0;
                    s[0] += v * p.dwx[i] * p.wy[j] * p.wz[l];
                    s[1] += v * p.wx[i] * p.dwy[j] * p.wz[l];
                    if (g.dims == 3)
                        s[2] += v * p.wx[i] * p.wy[j] * p.dwz[l];
                }
    }
    for (int k = 0; k < g.dims; k++)
        ggrid[g.dims * id + k] = s[k];
}
