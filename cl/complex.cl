/* complex.cl: elementwise kernels on complex values and the discrete
 * Fourier transforms (src/ops/complex.c, src/ops/fft.c).  The host defines
 * R (float or double; CLT_FP64 with double) itself: these kernels are not
 * specialised with the dtype macros, whose complex form is refused
 * (src/device/program.c).  A complex value is an R2 (real, imaginary);
 * every operand is contiguous. */

#define R2 CAT(R, 2)
#ifdef CLT_FP64
#define TWO_PI (2.0 * M_PI)
#else
#define TWO_PI (2.0f * M_PI_F)
#endif

/* op: 0 add, 1 sub, 2 mul, 3 div.  Division scales by the larger part of
 * the divisor (Smith's method), so that |b|^2 does not overflow or vanish
 * where the quotient itself is representable. */
CLT_KERNEL(cbinary)(__global const R2 *a, __global const R2 *b, __global R2 *o, ulong n, int op)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    R2 x = a[i], y = b[i], r;
    if (op == 0) {
        r = x + y;
    } else if (op == 1) {
        r = x - y;
    } else if (op == 2) {
        r = (R2)(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
    } else if (fabs(y.x) >= fabs(y.y)) {
        if (y.x == 0 && y.y == 0) {
            r = (R2)(x.x / fabs(y.x), x.y / fabs(y.y));
        } else {
            R q = y.y / y.x, d = y.x + y.y * q;
            r = (R2)((x.x + x.y * q) / d, (x.y - x.x * q) / d);
        }
    } else {
        R q = y.x / y.y, d = y.y + y.x * q;
        r = (R2)((x.x * q + x.y) / d, (x.y * q - x.x) / d);
    }
    o[i] = r;
}

/* op: 0 abs (real out), 1 angle (real out), 2 conj (complex out). */
CLT_KERNEL(cunary)(__global const R2 *a, __global R *o, ulong n, int op)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    R2 x = a[i];
    if (op == 0) {
        o[i] = hypot(x.x, x.y);
    } else if (op == 1) {
        o[i] = atan2(x.y, x.x);
    } else {
        o[2 * i] = x.x;
        o[2 * i + 1] = -x.y;
    }
}

/* op: 0 polar (a is the magnitude, b the angle), 1 complex (a real, b
 * imaginary). */
CLT_KERNEL(cmake)(__global const R *a, __global const R *b, __global R2 *o, ulong n, int op)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    R x = a[i], y = b[i];
    if (op == 0) {
        R c, s = sincos(y, &c);
        o[i] = (R2)(x * c, x * s);
    } else {
        o[i] = (R2)(x, y);
    }
}

/* exp(sign 2 pi i r / n) with r = (j k) mod n reduced exactly in integers,
 * so that the angle stays in [0, 2 pi) whatever the length. */
static inline R2 twiddle(ulong j, ulong k, ulong n, int sign)
{
    ulong r = (j * k) % n;
    R c, s = sincos((R)TWO_PI * ((R)r / (R)n), &c);
    return (R2)(c, sign * s);
}

/* One output element per work-item of the DFT of length n along rows:
 * out[b, k] = scale * sum_{j < min(m, n)} in[b, j] exp(sign 2 pi i j k / n),
 * k < nout; rows of m inputs (a shorter row is padded with zeros, a longer
 * one cut, as torch's n argument does).  O(n) per output. */
CLT_KERNEL(dft_c2c)(__global const R2 *in, __global R2 *out, ulong rows, ulong m, ulong n,
                    ulong nout, int sign, R scale)
{
    ulong g = get_global_id(0);
    if (g >= rows * nout)
        return;
    ulong b = g / nout, k = g % nout, len = min(m, n);
    __global const R2 *x = in + b * m;
    R2 acc = (R2)(0, 0);
    for (ulong j = 0; j < len; j++) {
        R2 w = twiddle(j, k, n, sign), v = x[j];
        acc += (R2)(v.x * w.x - v.y * w.y, v.x * w.y + v.y * w.x);
    }
    out[g] = acc * scale;
}

/* The real signal of length n whose spectrum's first half is in (rows of m
 * values; the rest is the conjugate mirror, X[k] = conj(X[n - k]), and
 * missing values are zero): out[b, t] = scale * Re(sum_k X[k] exp(sign 2 pi
 * i k t / n)).  The imaginary parts of X[0] and X[n/2] drop out, as in
 * torch's irfft. */
CLT_KERNEL(dft_c2r)(__global const R2 *in, __global R *out, ulong rows, ulong m, ulong n,
                    int sign, R scale)
{
    ulong g = get_global_id(0);
    if (g >= rows * n)
        return;
    ulong b = g / n, t = g % n;
    __global const R2 *x = in + b * m;
    R acc = 0;
    for (ulong k = 0; k < n; k++) {
        ulong src = k <= n / 2 ? k : n - k;
        if (src >= m)
            continue;
        R2 v = x[src];
        if (k != src)
            v.y = -v.y;
        R2 w = twiddle(k, t, n, sign);
        acc += v.x * w.x - v.y * w.y;
    }
    out[g] = acc * scale;
}

/* The rows of the radix-2 FFT's first buffer: out[b, k] for k < n from m
 * inputs per row, cut or padded with zeros (herm 0), or (herm 1) the full
 * spectrum of length n whose first half the rows hold, mirrored and
 * conjugated as dft_c2r reads it. */
CLT_KERNEL(fft_load)(__global const R2 *in, __global R2 *out, ulong rows, ulong m, ulong n,
                     int herm)
{
    ulong g = get_global_id(0);
    if (g >= rows * n)
        return;
    ulong b = g / n, k = g % n, src = k;
    bool mirror = false;
    if (herm && k > n / 2) {
        src = n - k;
        mirror = true;
    }
    R2 v = src < m ? in[b * m + src] : (R2)(0, 0);
    if (mirror)
        v.y = -v.y;
    out[g] = v;
}

/* One pass of a radix-2 Stockham FFT (decimation in frequency; the output
 * comes out in natural order) over rows of n values, n a power of two:
 * the pass with sub-transforms of length nt and stride s = n / nt.  One
 * butterfly per work-item; scale multiplies the outputs (the last pass's
 * normalisation, 1 elsewhere). */
CLT_KERNEL(fft_r2_pass)(__global const R2 *x, __global R2 *y, ulong rows, ulong n, ulong nt,
                        ulong s, int sign, R scale)
{
    ulong g = get_global_id(0), hn = n / 2;
    if (g >= rows * hn)
        return;
    ulong b = g / hn, i = g % hn, p = i / s, q = i % s, m = nt / 2;
    __global const R2 *xr = x + b * n;
    __global R2 *yr = y + b * n;
    R c, sn = sincos((R)TWO_PI * ((R)p / (R)nt), &c);
    R2 w = (R2)(c, sign * sn);
    R2 a = xr[q + s * p], d = xr[q + s * (p + m)], e = a - d;
    yr[q + s * 2 * p] = (a + d) * scale;
    yr[q + s * (2 * p + 1)] = (R2)(e.x * w.x - e.y * w.y, e.x * w.y + e.y * w.x) * scale;
}

/* Bluestein's algorithm, for lengths radix-2 passes do not take: the DFT of
 * length n as a cyclic convolution of length M (a power of two of at least
 * 2n - 1), X[k] = w[k] sum_j (x[j] w[j]) conj(w[k - j]) with the chirp
 * w[k] = exp(sign pi i k^2 / n), k^2 reduced modulo 2n in integers. */
static inline R2 chirp(ulong k, ulong n, int sign)
{
    ulong r = (k * k) % (2 * n);
    R c, s = sincos((R)TWO_PI * ((R)r / (R)(2 * n)), &c);
    return (R2)(c, sign * s);
}

static inline R2 cmul(R2 a, R2 b)
{
    return (R2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* A[b, j] = x[b, j] w[j] for j < min(m, n), else 0; rows of M. */
CLT_KERNEL(blu_load)(__global const R2 *in, __global R2 *a, ulong rows, ulong m, ulong n, ulong M,
                     int sign)
{
    ulong g = get_global_id(0);
    if (g >= rows * M)
        return;
    ulong b = g / M, j = g % M;
    a[g] = j < n && j < m ? cmul(in[b * m + j], chirp(j, n, sign)) : (R2)(0, 0);
}

/* The convolution's other operand: conj(w[j]) at j and M - j, 0 between. */
CLT_KERNEL(blu_chirp)(__global R2 *bv, ulong n, ulong M, int sign)
{
    ulong j = get_global_id(0);
    if (j >= M)
        return;
    ulong k = j < n ? j : j > M - n ? M - j : M;
    R2 v = (R2)(0, 0);
    if (k < M) {
        v = chirp(k, n, sign);
        v.y = -v.y;
    }
    bv[j] = v;
}

/* a[b, j] *= f[j]: the product of the two transforms. */
CLT_KERNEL(blu_mul)(__global R2 *a, __global const R2 *f, ulong rows, ulong M)
{
    ulong g = get_global_id(0);
    if (g >= rows * M)
        return;
    a[g] = cmul(a[g], f[g % M]);
}

/* out[b, k] = scale w[k] c[b, k] for k < nout. */
CLT_KERNEL(blu_finish)(__global const R2 *c, __global R2 *out, ulong rows, ulong M, ulong n,
                       ulong nout, int sign, R scale)
{
    ulong g = get_global_id(0);
    if (g >= rows * nout)
        return;
    ulong b = g / nout, k = g % nout;
    out[g] = cmul(c[b * M + k], chirp(k, n, sign)) * scale;
}
