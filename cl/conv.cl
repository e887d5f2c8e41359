/* conv.cl: 2-D convolution and pooling for dtype T (float32 or float64).
 * Convolution runs as im2col + GEMM: im2col unfolds the patches of every
 * image into cols [G][K][N][L] (group, K = Cg*kH*kW patch rows, image,
 * L = Ho*Wo output pixels), so that one GEMM per group covers the whole
 * batch; conv_out moves the GEMM's [O][N][L] result to [N][O][L] and adds
 * the bias.  The backward kernels are gathers: each input pixel, weight or
 * bias element sums its own contributions in a fixed order, so results are
 * the same bits on every run and device, without atomics. */

/* Must match `geom` in src/ops/conv.c. */
typedef struct clt_conv_geom {
    long N, C, H, W;   /* input */
    long O, G, Cg, Og; /* output channels, groups, channels per group */
    long kh, kw, sh, sw, ph, pw, dh, dw;
    long Ho, Wo;
    long K, L;         /* Cg * kh * kw, Ho * Wo */
    long off0, off1, off2; /* element offsets of the first three buffers */
    long flag;         /* bias present (conv_out), count_include_pad (avg pool) */
} clt_conv_geom;

/* One work-item per row (g * K + k, n, oh) of cols: Wo values. */
__kernel void im2col(__global const T *x, __global T *cols, clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.G * g.K * g.N * g.Ho)
        return;
    long oh = id % g.Ho, t = id / g.Ho;
    long n = t % g.N, r = t / g.N;
    long gi = r / g.K, k = r % g.K;
    long cl = k / (g.kh * g.kw), ki = (k / g.kw) % g.kh, kj = k % g.kw;
    long c = gi * g.Cg + cl;
    long ih = oh * g.sh - g.ph + ki * g.dh;
    __global T *dst = cols + id * g.Wo;
    if (ih < 0 || ih >= g.H) {
        for (long ow = 0; ow < g.Wo; ow++)
            dst[ow] = (T)0;
        return;
    }
    __global const T *src = x + g.off0 + ((n * g.C + c) * g.H + ih) * g.W;
    for (long ow = 0; ow < g.Wo; ow++) {
        long iw = ow * g.sw - g.pw + kj * g.dw;
        dst[ow] = (iw >= 0 && iw < g.W) ? src[iw] : (T)0;
    }
}

/* out[n][o][l] = Y[o][n][l] + bias[o], one work-item per (n, o). */
__kernel void conv_out(__global const T *Y, __global const T *bias, __global T *out,
                       clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.O)
        return;
    long n = id / g.O, o = id % g.O;
    T b = g.flag ? bias[g.off1 + o] : (T)0;
    __global const T *src = Y + (o * g.N + n) * g.L;
    __global T *dst = out + g.off2 + id * g.L;
    for (long l = 0; l < g.L; l++)
        dst[l] = src[l] + b;
}

/* The inverse move without bias: Gp[o][n][l] = gout[n][o][l], one
 * work-item per (o, n), for the backward products. */
__kernel void conv_gout_perm(__global const T *gout, __global T *Gp, clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.O * g.N)
        return;
    long o = id / g.N, n = id % g.N;
    __global const T *src = gout + g.off0 + (n * g.O + o) * g.L;
    __global T *dst = Gp + id * g.L;
    for (long l = 0; l < g.L; l++)
        dst[l] = src[l];
}

/* The adjoint of im2col as a gather: dx[n][c][h][w] sums dcols over the
 * (kh, kw) taps that read it, in that order.  One work-item per (n, c, h). */
__kernel void col2im(__global const T *dcols, __global T *dx, clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * g.H)
        return;
    long h = id % g.H, t = id / g.H;
    long c = t % g.C, n = t / g.C;
    long gi = c / g.Cg, cl = c % g.Cg;
    __global T *dst = dx + g.off2 + id * g.W;
    for (long w = 0; w < g.W; w++) {
        T acc = (T)0;
        for (long ki = 0; ki < g.kh; ki++) {
            long th = h + g.ph - ki * g.dh;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.Ho)
                continue;
            long oh = th / g.sh;
            for (long kj = 0; kj < g.kw; kj++) {
                long tw = w + g.pw - kj * g.dw;
                if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.Wo)
                    continue;
                long ow = tw / g.sw;
                long row = gi * g.K + (cl * g.kh + ki) * g.kw + kj;
                acc += dcols[(row * g.N + n) * g.L + oh * g.Wo + ow];
            }
        }
        dst[w] = acc;
    }
}

/* db[o] = sum over n, then l, of gout[n][o][l]; one work-item per o. */
__kernel void conv_bias_grad(__global const T *gout, __global T *db, clt_conv_geom g)
{
    long o = get_global_id(0);
    if (o >= g.O)
        return;
    T acc = (T)0;
    for (long n = 0; n < g.N; n++) {
        __global const T *src = gout + g.off0 + (n * g.O + o) * g.L;
        for (long l = 0; l < g.L; l++)
            acc += src[l];
    }
    db[o] = acc;
}

/* ---- pooling: planes p = n * C + c; C counts channels, G is 1 ---------------------- */

/* Max and its index h * W + w in the plane, as PyTorch's CPU kernel: the
 * first maximum in row-major window order, and NaN taken as the maximum
 * (a later NaN moves the index on). */
__kernel void max_pool_fwd(__global const T *x, __global T *out, __global long *idx,
                           clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * g.Ho)
        return;
    long oh = id % g.Ho, p = id / g.Ho;
    __global const T *src = x + g.off0 + p * g.H * g.W;
    long ih0 = oh * g.sh - g.ph;
    long ih1 = min(ih0 + (g.kh - 1) * g.dh + 1, g.H);
    while (ih0 < 0)
        ih0 += g.dh;
    for (long ow = 0; ow < g.Wo; ow++) {
        long iw0 = ow * g.sw - g.pw;
        long iw1 = min(iw0 + (g.kw - 1) * g.dw + 1, g.W);
        while (iw0 < 0)
            iw0 += g.dw;
        long best = ih0 * g.W + iw0;
        T m = (T)(-INFINITY);
        for (long ih = ih0; ih < ih1; ih += g.dh)
            for (long iw = iw0; iw < iw1; iw += g.dw) {
                long k = ih * g.W + iw;
                T v = src[k];
                if (v > m || isnan(v)) {
                    m = v;
                    best = k;
                }
            }
        out[id * g.Wo + ow] = m;
        idx[id * g.Wo + ow] = best;
    }
}

/* Each input pixel sums the gradients of the windows whose argmax it is,
 * windows in row-major order (taps from the last, so oh and ow ascend):
 * PyTorch's CPU scatter adds in that order too.  One work-item per
 * (p, h). */
__kernel void max_pool_bwd(__global const T *gout, __global const long *idx, __global T *dx,
                           clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * g.H)
        return;
    long h = id % g.H, p = id / g.H;
    __global const T *gp = gout + g.off0 + p * g.L;
    __global const long *ip = idx + g.off1 + p * g.L;
    for (long w = 0; w < g.W; w++) {
        T acc = (T)0;
        long me = h * g.W + w;
        for (long ki = g.kh - 1; ki >= 0; ki--) {
            long th = h + g.ph - ki * g.dh;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.Ho)
                continue;
            long oh = th / g.sh;
            for (long kj = g.kw - 1; kj >= 0; kj--) {
                long tw = w + g.pw - kj * g.dw;
                if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.Wo)
                    continue;
                long o = oh * g.Wo + tw / g.sw;
                if (ip[o] == me)
                    acc += gp[o];
            }
        }
        dx[id * g.W + w] = acc;
    }
}

/* max_pool_bwd for windows that do not overlap, over a zeroed dx: each
 * window writes its gradient to its argmax, which no other window has.
 * One work-item per output element (p, o). */
__kernel void max_pool_bwd_disjoint(__global const T *gout, __global const long *idx,
                                    __global T *dx, clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * g.L)
        return;
    long p = id / g.L;
    dx[p * g.H * g.W + idx[g.off1 + id]] = gout[g.off0 + id];
}

/* The window of output (oh, ow) clipped to the input, and its divisor, as
 * PyTorch's avg_pool2d: with count_include_pad the window as it lies over
 * the padded input (cut at the padding's far edge), else only the input
 * pixels it covers. */
inline long avg_window(const clt_conv_geom *g, long oh, long ow, long *ih0, long *ih1, long *iw0,
                       long *iw1)
{
    long h0 = oh * g->sh - g->ph, w0 = ow * g->sw - g->pw;
    long h1 = min(h0 + g->kh, g->H + g->ph), w1 = min(w0 + g->kw, g->W + g->pw);
    long pool = (h1 - h0) * (w1 - w0);
    h0 = max(h0, 0L);
    w0 = max(w0, 0L);
    h1 = min(h1, g->H);
    w1 = min(w1, g->W);
    *ih0 = h0, *ih1 = h1, *iw0 = w0, *iw1 = w1;
    return g->flag ? pool : (h1 - h0) * (w1 - w0);
}

__kernel void avg_pool_fwd(__global const T *x, __global T *out, clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * g.Ho)
        return;
    long oh = id % g.Ho, p = id / g.Ho;
    __global const T *src = x + g.off0 + p * g.H * g.W;
    for (long ow = 0; ow < g.Wo; ow++) {
        long ih0, ih1, iw0, iw1;
        long div = avg_window(&g, oh, ow, &ih0, &ih1, &iw0, &iw1);
        T s = (T)0;
        if (ih0 < ih1 && iw0 < iw1) {
            for (long ih = ih0; ih < ih1; ih++)
                for (long iw = iw0; iw < iw1; iw++)
                    s += src[ih * g.W + iw];
            s /= (T)div;
        }
        out[id * g.Wo + ow] = s;
    }
}

/* Each input pixel sums gout / divisor over the windows that cover it, in
 * row-major window order. */
__kernel void avg_pool_bwd(__global const T *gout, __global T *dx, clt_conv_geom g)
{
    long id = get_global_id(0);
    if (id >= g.N * g.C * g.H)
        return;
    long h = id % g.H, p = id / g.H;
    __global const T *gp = gout + g.off0 + p * g.L;
    for (long w = 0; w < g.W; w++) {
        T acc = (T)0;
        for (long ki = g.kh - 1; ki >= 0; ki--) {
            long th = h + g.ph - ki;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.Ho)
                continue;
            long oh = th / g.sh;
            for (long kj = g.kw - 1; kj >= 0; kj--) {
                long tw = w + g.pw - kj;
                if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.Wo)
                    continue;
                long ow = tw / g.sw;
                long ih0, ih1, iw0, iw1;
                long div = avg_window(&g, oh, ow, &ih0, &ih1, &iw0, &iw1);
                acc += gp[oh * g.Wo + ow] / (T)div;
            }
        }
        dx[id * g.W + w] = acc;
    }
}
