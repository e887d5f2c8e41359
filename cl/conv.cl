/* conv.cl: 2-D and 3-D convolution and 2-D pooling for dtype T (float32 or
 * float64).  Convolution runs as im2col + GEMM: im2col unfolds the patches
 * of every image into cols [G][K][N][L] (group, K = Cg*kD*kH*kW patch
 * rows, image, L = Do*Ho*Wo output pixels; a 2-D convolution has depth 1
 * everywhere: D = kd = sd = dd = Do = 1, pd = 0), so that one GEMM per
 * group covers the whole
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
    long K, L;         /* Cg * kd * kh * kw, Do * Ho * Wo */
    long off0, off1, off2; /* element offsets of the first three buffers */
    long flag;         /* bias present (conv_out), count_include_pad (avg pool) */
    long D, kd, sd, pd, dd, Do; /* depth (convolution only; 1, 1, 1, 0, 1, 1 in 2-D) */
    long nd;           /* spatial dimensions (host only) */
} clt_conv_geom;

/* Index arithmetic in 32 bits when the host knows every index fits
 * (CONV_I32): PoCL's loops over work-items run several times faster
 * without 64-bit divisions. */
#ifdef CONV_I32
typedef int ix;
#else
typedef long ix;
#endif

/* Kernel `name` over `rows` rows, from the row function name_row: one
 * work-item per row, and name_chunk, `chunk` rows per work-item in
 * work-groups of one, for CPU devices (PoCL's loop over the work-items of
 * a larger group ran the rows' loops several times slower). */
#define CONV_ROW_KERNELS(name, rows, A1, A2, A3)                               \
    CLT_KERNEL(name)(A1 a1, A2 a2, A3 a3, clt_conv_geom g)                     \
    {                                                                          \
        ix id = get_global_id(0);                                              \
        if (id < (rows))                                                       \
            name##_row(a1, a2, a3, g, id);                                     \
    }                                                                          \
    CLT_KERNEL_WG(name##_chunk, 1, 1, 1)(A1 a1, A2 a2, A3 a3, clt_conv_geom g, \
                                         ulong chunk)                          \
    {                                                                          \
        ix r0 = (ix)(get_global_id(0) * chunk);                                \
        ix r1 = min(r0 + (ix)chunk, (ix)(rows));                               \
        for (ix id = r0; id < r1; id++)                                        \
            name##_row(a1, a2, a3, g, id);                                     \
    }

/* im2col for CPU devices: each work-item (in work-groups of one) fills
 * `chunk` consecutive elements of cols, walking (row, n, oh, ow) by
 * increments from one division at its start, as the elementwise kernels'
 * strided walk does, so the loop is straight loads and stores. */
CLT_KERNEL_WG(im2col_chunk, 1, 1, 1)(__global const T *x, __global T *cols, clt_conv_geom g,
                                     ulong chunk)
{
    const ix N = (ix)g.N, L = (ix)g.L, Wo = (ix)g.Wo, Ho = (ix)g.Ho, K = (ix)g.K;
    const ix H = (ix)g.H, W = (ix)g.W, kh = (ix)g.kh, kw = (ix)g.kw;
    const ix sh = (ix)g.sh, sw = (ix)g.sw, ph = (ix)g.ph, pw = (ix)g.pw;
    const ix dh = (ix)g.dh, dw = (ix)g.dw, plane = H * W;
    const ix D = (ix)g.D, Do = (ix)g.Do, kd = (ix)g.kd, sd = (ix)g.sd, pd = (ix)g.pd;
    const ix dd = (ix)g.dd, vol = D * plane, taps = kd * kh * kw;
    ix total = (ix)g.G * K * N * L;
    ix e = (ix)(get_global_id(0) * chunk);
    ix end = min(e + (ix)chunk, total);
    if (e >= end)
        return;
    ix row = e / (N * L), rem = e % (N * L);
    ix n = rem / L, l = rem % L, od = l / (Ho * Wo), oh = (l / Wo) % Ho, ow = l % Wo;
    ix k = row % K, c = (row / K) * (ix)g.Cg + k / taps;
    ix kz = (k / (kh * kw)) % kd, ki = (k / kw) % kh, kj = k % kw;
    __global const T *src = x + (ix)g.off0 + (n * (ix)g.C + c) * vol;
    ix iz = od * sd - pd + kz * dd, ih = oh * sh - ph + ki * dh, iw = ow * sw - pw + kj * dw;
    for (; e < end; e++) {
        cols[e] = (iz >= 0 && iz < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
                      ? src[(iz * H + ih) * W + iw]
                      : (T)0;
        iw += sw;
        if (++ow == Wo) {
            ow = 0;
            iw = kj * dw - pw;
            ih += sh;
            if (++oh == Ho) {
                oh = 0;
                ih = ki * dh - ph;
                iz += sd;
                if (++od == Do) {
                    od = 0;
                    iz = kz * dd - pd;
                    src += (ix)g.C * vol;
                    if (++n == N) {
                        n = 0;
                        row++;
                        k = row % K;
                        c = (row / K) * (ix)g.Cg + k / taps;
                        kz = (k / (kh * kw)) % kd;
                        ki = (k / kw) % kh;
                        kj = k % kw;
                        src = x + (ix)g.off0 + c * vol;
                        iz = kz * dd - pd;
                        ih = ki * dh - ph;
                        iw = kj * dw - pw;
                    }
                }
            }
        }
    }
}

/* im2col for stride 1 and dilation 1 (the usual convolution): row id =
 * (g * K + k, n) of cols, the L = Do * Ho * Wo values of one image's patch
 * row, which is the input volume shifted by the tap with zeros around it:
 * for each output row, zeros, a straight copy of the input row's covered
 * part, zeros. */
inline void im2col_plane_row(__global const T *x, __global T *cols, __global T *unused,
                             const clt_conv_geom g, ix id)
{
    const ix N = (ix)g.N, K = (ix)g.K, H = (ix)g.H, W = (ix)g.W, Wo = (ix)g.Wo;
    const ix kh = (ix)g.kh, kw = (ix)g.kw, D = (ix)g.D, kd = (ix)g.kd;
    ix n = id % N, r = id / N, k = r % K;
    ix c = (r / K) * (ix)g.Cg + k / (kd * kh * kw), kz = (k / (kh * kw)) % kd;
    ix ki = (k / kw) % kh, kj = k % kw;
    __global const T *vol = x + (ix)g.off0 + (n * (ix)g.C + c) * D * H * W;
    __global T *dst = cols + id * (ix)g.L;
    ix dx = kj - (ix)g.pw, ow0 = max(-dx, (ix)0), ow1 = min(Wo, W - dx);
    ow1 = max(ow1, ow0);
    for (ix od = 0; od < (ix)g.Do; od++)
    for (ix oh = 0; oh < (ix)g.Ho; oh++, dst += Wo) {
        ix iz = od - (ix)g.pd + kz, ih = oh - (ix)g.ph + ki;
        if (iz < 0 || iz >= D || ih < 0 || ih >= H) {
            for (ix ow = 0; ow < Wo; ow++)
                dst[ow] = (T)0;
            continue;
        }
        __global const T *sr = vol + (iz * H + ih) * W + dx;
        for (ix ow = 0; ow < ow0; ow++)
            dst[ow] = (T)0;
        for (ix ow = ow0; ow < ow1; ow++)
            dst[ow] = sr[ow];
        for (ix ow = ow1; ow < Wo; ow++)
            dst[ow] = (T)0;
    }
}

CONV_ROW_KERNELS(im2col_plane, g.G * g.K * g.N, __global const T *, __global T *, __global T *)

/* One work-item per row (g * K + k, n, od, oh) of cols: Wo values. */
CLT_KERNEL(im2col)(__global const T *x, __global T *cols, clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.G) * ((ix)g.K) * ((ix)g.N) * ((ix)g.Do) * ((ix)g.Ho))
        return;
    ix oh = id % ((ix)g.Ho), t = id / ((ix)g.Ho);
    ix od = t % ((ix)g.Do);
    t /= (ix)g.Do;
    ix n = t % ((ix)g.N), r = t / ((ix)g.N);
    ix gi = r / ((ix)g.K), k = r % ((ix)g.K);
    const ix khw = ((ix)g.kh) * ((ix)g.kw);
    ix cl = k / (khw * (ix)g.kd), kz = (k / khw) % (ix)g.kd;
    ix ki = (k / ((ix)g.kw)) % ((ix)g.kh), kj = k % ((ix)g.kw);
    ix c = gi * ((ix)g.Cg) + cl;
    ix iz = od * ((ix)g.sd) - ((ix)g.pd) + kz * ((ix)g.dd);
    ix ih = oh * ((ix)g.sh) - ((ix)g.ph) + ki * ((ix)g.dh);
    __global T *dst = cols + id * ((ix)g.Wo);
    if (iz < 0 || iz >= ((ix)g.D) || ih < 0 || ih >= ((ix)g.H)) {
        for (ix ow = 0; ow < ((ix)g.Wo); ow++)
            dst[ow] = (T)0;
        return;
    }
    __global const T *src =
        x + ((ix)g.off0) + (((n * ((ix)g.C) + c) * ((ix)g.D) + iz) * ((ix)g.H) + ih) * ((ix)g.W);
    for (ix ow = 0; ow < ((ix)g.Wo); ow++) {
        ix iw = ow * ((ix)g.sw) - ((ix)g.pw) + kj * ((ix)g.dw);
        dst[ow] = (iw >= 0 && iw < ((ix)g.W)) ? src[iw] : (T)0;
    }
}

/* out[n][o][l] = Y[o][n][l] + bias[o]; row id = (n, o). */
inline void conv_out_row(__global const T *Y, __global const T *bias, __global T *out,
                         const clt_conv_geom g, ix id)
{
    ix n = id / ((ix)g.O), o = id % ((ix)g.O);
    T b = ((ix)g.flag) ? bias[((ix)g.off1) + o] : (T)0;
    __global const T *src = Y + (o * ((ix)g.N) + n) * ((ix)g.L);
    __global T *dst = out + ((ix)g.off2) + id * ((ix)g.L);
    for (ix l = 0; l < ((ix)g.L); l++)
        dst[l] = src[l] + b;
}

CONV_ROW_KERNELS(conv_out, g.N * g.O, __global const T *, __global const T *, __global T *)

/* The inverse move without bias: Gp[o][n][l] = gout[n][o][l], row id =
 * (o, n), for the backward products. */
inline void conv_gout_perm_row(__global const T *gout, __global T *Gp, __global T *unused,
                               const clt_conv_geom g, ix id)
{
    ix o = id / ((ix)g.N), n = id % ((ix)g.N);
    __global const T *src = gout + ((ix)g.off0) + (n * ((ix)g.O) + o) * ((ix)g.L);
    __global T *dst = Gp + id * ((ix)g.L);
    for (ix l = 0; l < ((ix)g.L); l++)
        dst[l] = src[l];
}

CONV_ROW_KERNELS(conv_gout_perm, g.O * g.N, __global const T *, __global T *, __global T *)

/* The adjoint of im2col as a gather: dx[n][c][z][h][w] sums dcols over
 * the (kd, kh, kw) taps that read it, in that order, then adds bias[c]
 * when g.flag is set (conv_transpose's forward).  Row id = (n, c, z, h).
 * The depth taps are found by a division each (kd is small, and 1 in
 * 2-D); the three ways below differ in the rows and columns. */
inline void col2im_row(__global const T *dcols, __global T *dx, __global T *bias,
                       const clt_conv_geom g, ix id)
{
    ix h = id % ((ix)g.H), t = id / ((ix)g.H);
    ix z = t % ((ix)g.D);
    t /= (ix)g.D;
    ix c = t % ((ix)g.C), n = t / ((ix)g.C);
    ix gi = c / ((ix)g.Cg), cl = c % ((ix)g.Cg);
    __global T *dst = dx + ((ix)g.off2) + id * ((ix)g.W);
    const T b = g.flag ? bias[(ix)g.off1 + c] : (T)0;
    const ix Ho = (ix)g.Ho, Wo = (ix)g.Wo, L = (ix)g.L, N = (ix)g.N;
    const ix kd = (ix)g.kd, kh = (ix)g.kh, kw = (ix)g.kw, plane = Ho * Wo;
    const ix sd = (ix)g.sd, tz0 = z + (ix)g.pd;
    /* this image's patch rows of channel cl's first tap */
    __global const T *base = dcols + (gi * (ix)g.K + cl * kd * kh * kw) * N * L + n * L;
    if (g.sh == 1 && g.sw == 1) {
        /* stride 1 (the usual convolution): every tap inside the output
         * is read, no division per tap */
        for (ix w = 0; w < (ix)g.W; w++) {
            T acc = (T)0;
            for (ix kz = 0; kz < kd; kz++) {
                ix tz = tz0 - kz * (ix)g.dd;
                if (tz < 0 || tz % sd != 0 || tz / sd >= (ix)g.Do)
                    continue;
                __global const T *bz = base + kz * kh * kw * N * L + (tz / sd) * plane;
                for (ix ki = 0; ki < kh; ki++) {
                    ix oh = h + (ix)g.ph - ki * (ix)g.dh;
                    if (oh < 0 || oh >= Ho)
                        continue;
                    for (ix kj = 0; kj < kw; kj++) {
                        ix ow = w + (ix)g.pw - kj * (ix)g.dw;
                        if (ow >= 0 && ow < Wo)
                            acc += bz[(ki * kw + kj) * N * L + oh * Wo + ow];
                    }
                }
            }
            dst[w] = g.flag ? acc + b : acc;
        }
        return;
    }
    if (g.dh == 1 && g.dw == 1) {
        /* a larger stride without dilation (conv_transpose's usual
         * upsampling): the taps that land on an output pixel are every
         * stride-th from (h + ph) mod sh, in the same ascending order, and
         * the output row falls by one from one to the next, so no division
         * per tap */
        const ix sh = (ix)g.sh, sw = (ix)g.sw;
        const ix th = h + (ix)g.ph, ki0 = th % sh, oh0 = th / sh;
        for (ix w = 0; w < (ix)g.W; w++) {
            T acc = (T)0;
            const ix tw = w + (ix)g.pw, kj0 = tw % sw, ow0 = tw / sw;
            for (ix kz = 0; kz < kd; kz++) {
                ix tz = tz0 - kz * (ix)g.dd;
                if (tz < 0 || tz % sd != 0 || tz / sd >= (ix)g.Do)
                    continue;
                __global const T *bz = base + kz * kh * kw * N * L + (tz / sd) * plane;
                for (ix ki = ki0, oh = oh0; ki < kh && oh >= 0; ki += sh, oh--) {
                    if (oh >= Ho)
                        continue;
                    for (ix kj = kj0, ow = ow0; kj < kw && ow >= 0; kj += sw, ow--)
                        if (ow < Wo)
                            acc += bz[(ki * kw + kj) * N * L + oh * Wo + ow];
                }
            }
            dst[w] = g.flag ? acc + b : acc;
        }
        return;
    }
    for (ix w = 0; w < ((ix)g.W); w++) {
        T acc = (T)0;
        for (ix kz = 0; kz < kd; kz++) {
            ix tz = tz0 - kz * (ix)g.dd;
            if (tz < 0 || tz % sd != 0 || tz / sd >= (ix)g.Do)
                continue;
            __global const T *bz = base + kz * kh * kw * N * L + (tz / sd) * plane;
            for (ix ki = 0; ki < kh; ki++) {
                ix th = h + ((ix)g.ph) - ki * ((ix)g.dh);
                if (th < 0 || th % ((ix)g.sh) != 0 || th / ((ix)g.sh) >= Ho)
                    continue;
                ix oh = th / ((ix)g.sh);
                for (ix kj = 0; kj < kw; kj++) {
                    ix tw = w + ((ix)g.pw) - kj * ((ix)g.dw);
                    if (tw < 0 || tw % ((ix)g.sw) != 0 || tw / ((ix)g.sw) >= Wo)
                        continue;
                    acc += bz[(ki * kw + kj) * N * L + oh * Wo + tw / ((ix)g.sw)];
                }
            }
        }
        dst[w] = g.flag ? acc + b : acc;
    }
}

CONV_ROW_KERNELS(col2im, g.N * g.C * g.D * g.H, __global const T *, __global T *, __global T *)

/* db[o] = sum over n, then l, of gout[n][o][l]; one work-item per o. */
CLT_KERNEL(conv_bias_grad)(__global const T *gout, __global T *db, clt_conv_geom g)
{
    ix o = get_global_id(0);
    if (o >= ((ix)g.O))
        return;
    T acc = (T)0;
    for (ix n = 0; n < ((ix)g.N); n++) {
        __global const T *src = gout + ((ix)g.off0) + (n * ((ix)g.O) + o) * ((ix)g.L);
        for (ix l = 0; l < ((ix)g.L); l++)
            acc += src[l];
    }
    db[o] = acc;
}

/* ---- pooling: planes p = n * C + c; C counts channels, G is 1 ---------------------- */

/* The maximum of src's rows ih0 to ih1 - 1 (every dh-th) and columns iw0
 * to iw1 - 1 (every dw-th), and in *best its index h * W + w, as
 * PyTorch's CPU kernels: the first maximum in row-major window order, and
 * NaN taken as the maximum (a later NaN moves the index on); -inf and the
 * window's first index when nothing beats it. */
inline T window_max(__global const T *src, ix W, ix ih0, ix ih1, ix dh, ix iw0, ix iw1, ix dw,
                    ix *best)
{
    T m = (T)(-INFINITY);
    *best = ih0 * W + iw0;
    for (ix ih = ih0; ih < ih1; ih += dh)
        for (ix iw = iw0; iw < iw1; iw += dw) {
            ix k = ih * W + iw;
            T v = src[k];
            if (v > m || IS_NAN(v)) {
                m = v;
                *best = k;
            }
        }
    return m;
}

/* Max and its index in the plane (window_max).  Output row id = p * Ho +
 * oh. */
inline void max_pool_row(__global const T *x, __global T *out, __global long *idx,
                         const clt_conv_geom g, ix id)
{
    ix oh = id % ((ix)g.Ho), p = id / ((ix)g.Ho);
    __global const T *src = x + ((ix)g.off0) + p * ((ix)g.H) * ((ix)g.W);
    ix ih0 = oh * ((ix)g.sh) - ((ix)g.ph);
    ix ih1 = min(ih0 + (((ix)g.kh) - 1) * ((ix)g.dh) + 1, ((ix)g.H));
    while (ih0 < 0)
        ih0 += ((ix)g.dh);
    for (ix ow = 0; ow < ((ix)g.Wo); ow++) {
        ix iw0 = ow * ((ix)g.sw) - ((ix)g.pw);
        ix iw1 = min(iw0 + (((ix)g.kw) - 1) * ((ix)g.dw) + 1, ((ix)g.W));
        while (iw0 < 0)
            iw0 += ((ix)g.dw);
        ix best;
        T m = window_max(src, (ix)g.W, ih0, ih1, (ix)g.dh, iw0, iw1, (ix)g.dw, &best);
        out[id * ((ix)g.Wo) + ow] = m;
        idx[id * ((ix)g.Wo) + ow] = best;
    }
}

/* One work-item per output row. */
CLT_KERNEL(max_pool_fwd)(__global const T *x, __global T *out, __global long *idx,
                         clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id < ((ix)g.N) * ((ix)g.C) * ((ix)g.Ho))
        max_pool_row(x, out, idx, g, id);
}

/* For CPU devices: `chunk` output rows per work-item, in work-groups of
 * one (PoCL's loop over the work-items of a larger group ran the row's
 * window loops several times slower). */
CLT_KERNEL_WG(max_pool_fwd_chunk, 1, 1, 1)(__global const T *x, __global T *out,
                                           __global long *idx, clt_conv_geom g, ulong chunk)
{
    ix r0 = (ix)(get_global_id(0) * chunk);
    ix r1 = min(r0 + (ix)chunk, ((ix)g.N) * ((ix)g.C) * ((ix)g.Ho));
    /* MaxPool2d(2) with every window inside the input: four loads per
     * output and no window loops, about four times faster */
    if (g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
        g.dh == 1 && g.dw == 1 && 2 * g.Ho <= g.H && 2 * g.Wo <= g.W) {
        const ix W = (ix)g.W, Wo = (ix)g.Wo, Ho = (ix)g.Ho, HW = (ix)g.H * W;
        for (ix id = r0; id < r1; id++) {
            ix oh = id % Ho, p = id / Ho;
            __global const T *s0 = x + (ix)g.off0 + p * HW + 2 * oh * W, *s1 = s0 + W;
            __global T *o = out + id * Wo;
            __global long *q = idx + id * Wo;
            ix base = 2 * oh * W;
            for (ix ow = 0; ow < Wo; ow++) {
                T a = s0[2 * ow], b = s0[2 * ow + 1], c = s1[2 * ow], d = s1[2 * ow + 1];
                T m = a; /* as max_pool_row from -INFINITY */
                ix k = 0;
                if (b > m || IS_NAN(b))
                    m = b, k = 1;
                if (c > m || IS_NAN(c))
                    m = c, k = W;
                if (d > m || IS_NAN(d))
                    m = d, k = W + 1;
                o[ow] = m;
                q[ow] = base + 2 * ow + k;
            }
        }
        return;
    }
    for (ix id = r0; id < r1; id++)
        max_pool_row(x, out, idx, g, id);
}

/* Each input pixel sums the gradients of the windows whose argmax it is,
 * windows in row-major order (taps from the last, so oh and ow ascend):
 * PyTorch's CPU scatter adds in that order too.  One work-item per
 * (p, h). */
CLT_KERNEL(max_pool_bwd)(__global const T *gout, __global const long *idx, __global T *dx,
                         clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.N) * ((ix)g.C) * ((ix)g.H))
        return;
    ix h = id % ((ix)g.H), p = id / ((ix)g.H);
    __global const T *gp = gout + ((ix)g.off0) + p * ((ix)g.L);
    __global const long *ip = idx + ((ix)g.off1) + p * ((ix)g.L);
    for (ix w = 0; w < ((ix)g.W); w++) {
        T acc = (T)0;
        ix me = h * ((ix)g.W) + w;
        for (ix ki = ((ix)g.kh) - 1; ki >= 0; ki--) {
            ix th = h + ((ix)g.ph) - ki * ((ix)g.dh);
            if (th < 0 || th % ((ix)g.sh) != 0 || th / ((ix)g.sh) >= ((ix)g.Ho))
                continue;
            ix oh = th / ((ix)g.sh);
            for (ix kj = ((ix)g.kw) - 1; kj >= 0; kj--) {
                ix tw = w + ((ix)g.pw) - kj * ((ix)g.dw);
                if (tw < 0 || tw % ((ix)g.sw) != 0 || tw / ((ix)g.sw) >= ((ix)g.Wo))
                    continue;
                ix o = oh * ((ix)g.Wo) + tw / ((ix)g.sw);
                if (ip[o] == me)
                    acc += gp[o];
            }
        }
        dx[id * ((ix)g.W) + w] = acc;
    }
}

/* max_pool_bwd for windows that do not overlap, over a zeroed dx: each
 * window writes its gradient to its argmax, which no other window has.
 * Row id = plane p, its L windows. */
inline void max_pool_bwd_disjoint_row(__global const T *gout, __global const long *idx,
                                      __global T *dx, const clt_conv_geom g, ix p)
{
    const ix L = (ix)g.L;
    __global const T *gp = gout + (ix)g.off0 + p * L;
    __global const long *ip = idx + (ix)g.off1 + p * L;
    __global T *dp = dx + p * ((ix)g.H) * ((ix)g.W);
    for (ix o = 0; o < L; o++)
        dp[ip[o]] = gp[o];
}

CONV_ROW_KERNELS(max_pool_bwd_disjoint, g.N * g.C, __global const T *, __global const long *,
                 __global T *)

/* The window of output (oh, ow) clipped to the input, and its divisor, as
 * PyTorch's avg_pool2d: with count_include_pad the window as it lies over
 * the padded input (cut at the padding's far edge), else only the input
 * pixels it covers. */
inline ix avg_window(const clt_conv_geom *g, ix oh, ix ow, ix *ih0, ix *ih1, ix *iw0,
                       ix *iw1)
{
    ix h0 = oh * ((ix)g->sh) - ((ix)g->ph), w0 = ow * ((ix)g->sw) - ((ix)g->pw);
    ix h1 = min(h0 + ((ix)g->kh), ((ix)g->H) + ((ix)g->ph)), w1 = min(w0 + ((ix)g->kw), ((ix)g->W) + ((ix)g->pw));
    ix pool = (h1 - h0) * (w1 - w0);
    h0 = max(h0, (ix)0);
    w0 = max(w0, (ix)0);
    h1 = min(h1, ((ix)g->H));
    w1 = min(w1, ((ix)g->W));
    *ih0 = h0, *ih1 = h1, *iw0 = w0, *iw1 = w1;
    return ((ix)g->flag) ? pool : (h1 - h0) * (w1 - w0);
}

CLT_KERNEL(avg_pool_fwd)(__global const T *x, __global T *out, clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.N) * ((ix)g.C) * ((ix)g.Ho))
        return;
    ix oh = id % ((ix)g.Ho), p = id / ((ix)g.Ho);
    __global const T *src = x + ((ix)g.off0) + p * ((ix)g.H) * ((ix)g.W);
    for (ix ow = 0; ow < ((ix)g.Wo); ow++) {
        ix ih0, ih1, iw0, iw1;
        ix div = avg_window(&g, oh, ow, &ih0, &ih1, &iw0, &iw1);
        T s = (T)0;
        if (ih0 < ih1 && iw0 < iw1) {
            for (ix ih = ih0; ih < ih1; ih++)
                for (ix iw = iw0; iw < iw1; iw++)
                    s += src[ih * ((ix)g.W) + iw];
            s /= (T)div;
        }
        out[id * ((ix)g.Wo) + ow] = s;
    }
}

/* Each input pixel sums gout / divisor over the windows that cover it, in
 * row-major window order. */
CLT_KERNEL(avg_pool_bwd)(__global const T *gout, __global T *dx, clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.N) * ((ix)g.C) * ((ix)g.H))
        return;
    ix h = id % ((ix)g.H), p = id / ((ix)g.H);
    __global const T *gp = gout + ((ix)g.off0) + p * ((ix)g.L);
    for (ix w = 0; w < ((ix)g.W); w++) {
        T acc = (T)0;
        for (ix ki = ((ix)g.kh) - 1; ki >= 0; ki--) {
            ix th = h + ((ix)g.ph) - ki;
            if (th < 0 || th % ((ix)g.sh) != 0 || th / ((ix)g.sh) >= ((ix)g.Ho))
                continue;
            ix oh = th / ((ix)g.sh);
            for (ix kj = ((ix)g.kw) - 1; kj >= 0; kj--) {
                ix tw = w + ((ix)g.pw) - kj;
                if (tw < 0 || tw % ((ix)g.sw) != 0 || tw / ((ix)g.sw) >= ((ix)g.Wo))
                    continue;
                ix ow = tw / ((ix)g.sw);
                ix ih0, ih1, iw0, iw1;
                ix div = avg_window(&g, oh, ow, &ih0, &ih1, &iw0, &iw1);
                acc += gp[oh * ((ix)g.Wo) + ow] / (T)div;
            }
        }
        dx[id * ((ix)g.W) + w] = acc;
    }
}

/* ---- adaptive average pooling: Ho x Wo windows over H x W ------------------------------ */

/* Window i of n over `size`, as PyTorch's adaptive pooling: from
 * floor(i * size / n) to ceil((i + 1) * size / n).  In 64 bits, as the
 * product passes 2^31 where every index fits 32 bits; the host has made
 * sure that (n + 1) * (size + 1) fits 64. */
inline ix adaptive_start(ix i, long size, long n)
{
    return (ix)((long)i * size / n);
}

inline ix adaptive_end(ix i, long size, long n)
{
    return (ix)((((long)i + 1) * size + n - 1) / n);
}

/* Each output's window sum divided by its height, then by its width, as
 * PyTorch's CPU kernel (not by their product: other bits). */
CLT_KERNEL(adaptive_avg_pool_fwd)(__global const T *x, __global T *out, clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.N) * ((ix)g.C) * ((ix)g.Ho))
        return;
    ix oh = id % ((ix)g.Ho), p = id / ((ix)g.Ho);
    __global const T *src = x + ((ix)g.off0) + p * ((ix)g.H) * ((ix)g.W);
    ix ih0 = adaptive_start(oh, g.H, g.Ho), ih1 = adaptive_end(oh, g.H, g.Ho);
    for (ix ow = 0; ow < ((ix)g.Wo); ow++) {
        ix iw0 = adaptive_start(ow, g.W, g.Wo), iw1 = adaptive_end(ow, g.W, g.Wo);
        T s = (T)0;
        for (ix ih = ih0; ih < ih1; ih++)
            for (ix iw = iw0; iw < iw1; iw++)
                s += src[ih * ((ix)g.W) + iw];
        out[id * ((ix)g.Wo) + ow] = s / (T)(ih1 - ih0) / (T)(iw1 - iw0);
    }
}

/* Each input pixel sums gout / height / width over the windows that cover
 * it, in row-major window order: the order of PyTorch's CPU scatter.  The
 * windows covering row h are those of the same formula with the roles of
 * H and Ho swapped. */
CLT_KERNEL(adaptive_avg_pool_bwd)(__global const T *gout, __global T *dx, clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.N) * ((ix)g.C) * ((ix)g.H))
        return;
    ix h = id % ((ix)g.H), p = id / ((ix)g.H);
    __global const T *gp = gout + ((ix)g.off0) + p * ((ix)g.L);
    ix oh0 = adaptive_start(h, g.Ho, g.H), oh1 = adaptive_end(h, g.Ho, g.H);
    for (ix w = 0; w < ((ix)g.W); w++) {
        ix ow0 = adaptive_start(w, g.Wo, g.W), ow1 = adaptive_end(w, g.Wo, g.W);
        T acc = (T)0;
        for (ix oh = oh0; oh < oh1; oh++) {
            T kh = (T)(adaptive_end(oh, g.H, g.Ho) - adaptive_start(oh, g.H, g.Ho));
            for (ix ow = ow0; ow < ow1; ow++) {
                T kw = (T)(adaptive_end(ow, g.W, g.Wo) - adaptive_start(ow, g.W, g.Wo));
                acc += gp[oh * ((ix)g.Wo) + ow] / kh / kw;
            }
        }
        dx[id * ((ix)g.W) + w] = acc;
    }
}

/* ---- adaptive max pooling: Ho x Wo windows over H x W --------------------------------- */

/* The maximum of each adaptive window and its index h * W + w in the
 * plane (window_max).  Its gradient is a scatter_add over these indices. */
CLT_KERNEL(adaptive_max_pool_fwd)(__global const T *x, __global T *out, __global long *idx,
                                  clt_conv_geom g)
{
    ix id = get_global_id(0);
    if (id >= ((ix)g.N) * ((ix)g.C) * ((ix)g.Ho))
        return;
    ix oh = id % ((ix)g.Ho), p = id / ((ix)g.Ho);
    __global const T *src = x + ((ix)g.off0) + p * ((ix)g.H) * ((ix)g.W);
    ix ih0 = adaptive_start(oh, g.H, g.Ho), ih1 = adaptive_end(oh, g.H, g.Ho);
    for (ix ow = 0; ow < ((ix)g.Wo); ow++) {
        ix iw0 = adaptive_start(ow, g.W, g.Wo), iw1 = adaptive_end(ow, g.W, g.Wo), best;
        T m = window_max(src, (ix)g.W, ih0, ih1, 1, iw0, iw1, 1, &best);
        out[id * ((ix)g.Wo) + ow] = m;
        idx[id * ((ix)g.Wo) + ow] = best;
    }
}
