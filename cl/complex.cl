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

/* x / y.  A zero divisor, or one with an infinite part, gives nan + nan i
 * whatever x, as torch 1.13's (ac + bd) / (c^2 + d^2) does there.  Other
 * divisors are scaled by their larger part (Smith's method), so that |y|^2
 * does not overflow or vanish where the quotient itself is representable
 * (where torch's formula gives 0, inf or nan). */
static inline R2 cdiv(R2 x, R2 y)
{
    if ((y.x == 0 && y.y == 0) || isinf(y.x) || isinf(y.y))
        return (R2)(NAN, NAN);
    if (fabs(y.x) >= fabs(y.y)) {
        R q = y.y / y.x, d = y.x + y.y * q;
        return (R2)((x.x + x.y * q) / d, (x.y - x.x * q) / d);
    }
    R q = y.x / y.y, d = y.y + y.x * q;
    return (R2)((x.x * q + x.y) / d, (x.y * q - x.x) / d);
}

/* op: 0 add, 1 sub, 2 mul, 3 div. */
CLT_KERNEL(cbinary)(__global const R2 *a, __global const R2 *b, __global R2 *o, ulong n, int op)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    R2 x = a[i], y = b[i], r;
    if (op == 0)
        r = x + y;
    else if (op == 1)
        r = x - y;
    else if (op == 2)
        r = (R2)(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
    else
        r = cdiv(x, y);
    o[i] = r;
}

/* ---- the elementary functions ----------------------------------------------------
 * C99's Annex G values at zeros, infinities and nans (glibc's, which torch
 * 1.13's CPU kernels mostly return) and formulas that stay accurate for
 * large and small arguments.  The trigonometric functions are the
 * hyperbolic ones rotated (sin z = -i sinh(iz), cos z = cosh(iz), tan z =
 * -i tanh(iz), asin z = -i asinh(iz), atan z = -i atanh(iz)). */

#ifdef CLT_FP64
#define C_LN2 M_LN2
#define C_LN10 M_LN10
#define C_PI_2 M_PI_2
/* beyond BIG, asinh z = log 2z and atanh z = 1/z to the last bit; below
 * SMALL, both are z */
#define C_BIG 1e8
#define C_SMALL 1e-8
/* below TINY (a few times the smallest normal number) a value loses bits:
 * parts that small are scaled by 2^SCALE_EXP first */
#define C_TINY (4 * DBL_MIN)
#define C_SCALE_EXP 54
#else
#define C_LN2 M_LN2_F
#define C_LN10 M_LN10_F
#define C_PI_2 M_PI_2_F
#define C_BIG 1e4f
#define C_SMALL 1e-4f
#define C_TINY (4 * FLT_MIN)
#define C_SCALE_EXP 24
#endif

/* i z and -i z */
static inline R2 times_i(R2 z)
{
    return (R2)(-z.y, z.x);
}

static inline R2 times_mi(R2 z)
{
    return (R2)(z.y, -z.x);
}

static inline R2 c_exp(R2 z)
{
    R x = z.x, y = z.y;
    if (y == 0)
        return (R2)(exp(x), y);
    if (isinf(x) && !isfinite(y))
        return x < 0 ? (R2)(0, copysign((R)0, y)) : (R2)(x, y - y);
    R c, s = sincos(y, &c);
    if (x > 20) { /* exp(x) may overflow where exp(x) cos y does not */
        R h = exp(x * (R)0.5);
        return (R2)(h * c * h, h * s * h);
    }
    R e = exp(x);
    return (R2)(e * c, e * s);
}

/* log |z| + i arg z; near |z| = 1 through log1p, without cancellation. */
static inline R2 c_log(R2 z)
{
    R ax = fabs(z.x), ay = fabs(z.y), h = hypot(ax, ay), re;
    if (ax < ay) {
        R t = ax;
        ax = ay;
        ay = t;
    }
    if (h > (R)0.7 && h < (R)1.4)
        re = (R)0.5 * log1p((ax - 1) * (ax + 1) + ay * ay);
    else if (h < C_TINY) /* a subnormal |z| holds too few bits */
        re = log(hypot(ldexp(ax, C_SCALE_EXP), ldexp(ay, C_SCALE_EXP))) - C_SCALE_EXP * C_LN2;
    else
        re = log(h);
    return (R2)(re, atan2(z.y, z.x));
}

/* log(1 + z), accurate for small z. */
static inline R2 c_log1p(R2 z)
{
    if (isfinite(z.x) && isfinite(z.y) && fabs(z.x) < (R)0.5 && fabs(z.y) < (R)0.5)
        return (R2)((R)0.5 * log1p(z.x * (2 + z.x) + z.y * z.y), atan2(z.y, 1 + z.x));
    return c_log((R2)(1 + z.x, z.y));
}

/* The principal square root, Re >= 0 (Kahan's). */
static inline R2 c_sqrt(R2 z)
{
    R x = z.x, y = z.y;
    if (x == 0 && y == 0)
        return (R2)(0, y);
    if (isinf(y))
        return (R2)(INFINITY, y);
    if (isnan(x))
        return (R2)(x, x);
    if (isinf(x)) {
        if (x > 0)
            return (R2)(x, isnan(y) ? y : copysign((R)0, y));
        return (R2)(fabs(y - y), copysign((R)INFINITY, y));
    }
    if (isnan(y))
        return (R2)(y, y);
    R ax = fabs(x), ay = fabs(y), sc = 1;
    if (ax > (R)1e30 || ay > (R)1e30) { /* (|x| + |z|) would overflow */
        ax *= (R)0.25;
        ay *= (R)0.25;
        sc = 2;
    } else if (ax < C_TINY && ay < C_TINY) { /* (|x| + |z|) / 2 would lose bits */
        ax = ldexp(ax, 2 * C_SCALE_EXP);
        ay = ldexp(ay, 2 * C_SCALE_EXP);
        sc = ldexp((R)1, -C_SCALE_EXP);
    }
    R t = sqrt((ax + hypot(ax, ay)) * (R)0.5);
    R u = ay / (2 * t);
    t *= sc;
    u *= sc;
    return x >= 0 ? (R2)(t, copysign(u, y)) : (R2)(u, copysign(t, y));
}

static inline R2 c_sinh(R2 z)
{
    R x = z.x, y = z.y;
    if (y == 0)
        return (R2)(sinh(x), y);
    if (x == 0 && !isfinite(y))
        return (R2)(x, y - y);
    if (isinf(x) && !isfinite(y))
        return (R2)(fabs(x), y - y);
    R c, s = sincos(y, &c);
    if (fabs(x) > 20) { /* sinh x = cosh x = e^|x| / 2 to the last bit */
        R h = exp(fabs(x) * (R)0.5);
        return (R2)(copysign((R)1, x) * ((R)0.5 * h * c) * h, ((R)0.5 * h * s) * h);
    }
    return (R2)(sinh(x) * c, cosh(x) * s);
}

static inline R2 c_cosh(R2 z)
{
    R x = z.x, y = z.y;
    if (y == 0)
        return (R2)(cosh(x), isnan(x) ? y : copysign((R)1, x) * y);
    if (x == 0 && !isfinite(y))
        return (R2)(y - y, 0);
    if (isinf(x) && !isfinite(y))
        return (R2)(x * x, y - y);
    R c, s = sincos(y, &c);
    if (fabs(x) > 20) {
        R h = exp(fabs(x) * (R)0.5);
        return (R2)(((R)0.5 * h * c) * h, copysign((R)1, x) * ((R)0.5 * h * s) * h);
    }
    return (R2)(cosh(x) * c, sinh(x) * s);
}

/* Kahan's form, without the cancellation of sinh 2x / (cosh 2x + cos 2y). */
static inline R2 c_tanh(R2 z)
{
    R x = z.x, y = z.y;
    if (isinf(x))
        return (R2)(copysign((R)1, x), copysign((R)0, isfinite(y) ? sin(2 * y) : y));
    if (isnan(x))
        return y == 0 ? (R2)(x, y) : (R2)(x, x);
    if (!isfinite(y))
        return x == 0 ? (R2)(x, y - y) : (R2)(y - y, y - y);
    if (y == 0)
        return (R2)(tanh(x), y);
    if (fabs(x) > 20) {
        R c, s = sincos(y, &c);
        return (R2)(copysign((R)1, x), 4 * s * c * exp(-2 * fabs(x)));
    }
    R t = tan(y), b = 1 + t * t, s = sinh(x), rho = sqrt(1 + s * s), d = 1 + b * s * s;
    return (R2)(b * rho * s / d, t / d);
}

/* asin(u + iv) = P + iQ for u, v >= 0 (infinities included), and Pc =
 * pi/2 - P without its cancellation (acos needs it).  Off the axes, Hull,
 * Fairgrieve and Tang's algorithm: A = (|w + 1| + |w - 1|) / 2, P =
 * asin(u / A), Q = acosh A, with A - 1 and A - u formed without
 * cancellation where P or Q needs them. */
static inline void asin_q1(R u, R v, R *P, R *Pc, R *Q)
{
    if (v == 0) { /* the real axis, or the cut beyond 1 */
        *P = u <= 1 ? asin(u) : C_PI_2;
        *Pc = u <= 1 ? acos(u) : 0;
        *Q = u <= 1 ? 0 : acosh(u);
    } else if (u == 0) {
        *P = 0;
        *Pc = C_PI_2;
        *Q = asinh(v);
    } else if (u > C_BIG || v > C_BIG) { /* -i log(2iw) */
        R2 w = c_log((R2)(v, u));
        *Q = w.x + C_LN2;
        *P = w.y;
        *Pc = atan2(v, u);
    } else if (u < C_SMALL && v < C_SMALL) {
        *P = u;
        *Pc = C_PI_2 - u;
        *Q = v;
    } else {
        R v2 = v * v, r = hypot(u + 1, v), s = hypot(u - 1, v), A = (R)0.5 * (r + s);
        R B = u / A;
        if (B <= (R)0.6417) {
            *P = asin(B);
            *Pc = acos(B);
        } else {
            R amu = u <= 1 ? (R)0.5 * (v2 / (r + u + 1) + (s + (1 - u)))
                           : (R)0.5 * (v2 / (r + u + 1) + v2 / (s + (u - 1)));
            R c = sqrt((A + u) * amu);
            *P = atan(u / c);
            *Pc = atan(c / u);
        }
        if (A <= (R)1.5) {
            R am1 = u < 1 ? (R)0.5 * (v2 / (r + u + 1) + v2 / (s + (1 - u)))
                          : (R)0.5 * (v2 / (r + u + 1) + (s + (u - 1)));
            *Q = log1p(am1 + sqrt(am1 * (A + 1)));
        } else {
            *Q = log(A + sqrt(A * A - 1));
        }
    }
}

/* asinh z = Q + iP of asin(|y| + i|x|), the signs of z copied to the
 * result (asinh is odd and commutes with conj). */
static inline R2 c_asinh(R2 z)
{
    R x = z.x, y = z.y, P, Pc, Q;
    if (isnan(x)) {
        if (y == 0)
            return z;
        return isinf(y) ? (R2)(fabs(y), x) : (R2)(x, x);
    }
    if (isnan(y))
        return isinf(x) ? z : (R2)(y, y);
    asin_q1(fabs(y), fabs(x), &P, &Pc, &Q);
    return (R2)(copysign(Q, x), copysign(P, y));
}

/* acos z = pi/2 - asin z: Re in [0, pi], Im of the sign opposite to Im
 * z's; from asin(|x| + i|y|)'s Pc (acos(-z) = pi - acos z, acos(conj z) =
 * conj(acos z)). */
static inline R2 c_acos(R2 z)
{
    R x = z.x, y = z.y, P, Pc, Q;
    if (isnan(x) || isnan(y)) {
        R2 a = times_mi(c_asinh(times_i(z)));
        return (R2)(C_PI_2 - a.x, -a.y);
    }
    asin_q1(fabs(x), fabs(y), &P, &Pc, &Q);
    return (R2)(signbit(x) ? 2 * C_PI_2 - Pc : Pc, signbit(y) ? Q : -Q);
}

/* acosh z = +-i acos z, the sign making Re >= 0 (Im takes Im z's sign). */
static inline R2 c_acosh(R2 z)
{
    R2 w = c_acos(z);
    return signbit(z.y) ? (R2)(w.y, -w.x) : (R2)(-w.y, w.x);
}

/* atanh on the first quadrant, the signs copied as for asinh. */
static inline R2 c_atanh(R2 z)
{
    R x = z.x, y = z.y, ax = fabs(x), ay = fabs(y), re, im;
    if (isnan(x))
        return isinf(y) ? (R2)(copysign((R)0, x), copysign(C_PI_2, y)) : (R2)(x, x);
    if (isnan(y)) {
        if (isinf(x))
            return (R2)(copysign((R)0, x), y);
        return x == 0 ? z : (R2)(y, y);
    }
    if (ax > C_BIG || ay > C_BIG) { /* 1/z + i pi/2, 1/z vanishing past inf */
        R h = hypot(ax, ay);
        re = isinf(h) ? 0 : ax / h / h;
        im = isinf(h) ? C_PI_2 : C_PI_2 - ay / h / h;
    } else if (ax < C_SMALL && ay < C_SMALL) {
        re = ax;
        im = ay;
    } else {
        R d = (1 - ax) * (1 - ax) + ay * ay;
        /* near z = 1, d may vanish (atanh(1 + 1e-200i) is 230.6 + 0.785i):
         * there log1p(4x / d) is log 4x - 2 log |1 - z| to the last bit */
        if (d < C_SMALL * C_SMALL)
            re = (R)0.25 * log(4 * ax) - (R)0.5 * log(hypot(1 - ax, ay));
        else
            re = (R)0.25 * log1p(4 * ax / d);
        im = (R)0.5 * atan2(2 * ay, (1 - ax) * (1 + ax) - ay * ay);
    }
    return (R2)(copysign(re, x), copysign(im, y));
}

/* exp(z) - 1 without the cancellation near 0: expm1(x) cos y - 2 sin^2(y/2)
 * + i e^x sin y. */
static inline R2 c_expm1(R2 z)
{
    if (!isfinite(z.x) || !isfinite(z.y) || z.x > 20) {
        R2 e = c_exp(z);
        return (R2)(e.x - 1, e.y);
    }
    R c, s = sincos(z.y, &c), h = sin(z.y * (R)0.5);
    return (R2)(expm1(z.x) * c - 2 * h * h, exp(z.x) * s);
}

/* op: 0 exp, 1 log, 2 sqrt, 3 sinh, 4 cosh, 5 tanh, 6 sin, 7 cos, 8 tan,
 * 9 asinh, 10 asin, 11 acos, 12 acosh, 13 atanh, 14 atan, 15 log2, 16 log10,
 * 17 log1p, 18 expm1, 19 rsqrt (1 / sqrt z), 20 sigmoid (1 / (1 + exp(-z))). */
CLT_KERNEL(cmath)(__global const R2 *a, __global R2 *o, ulong n, int op)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    R2 z = a[i], r;
    switch (op) {
    case 0: r = c_exp(z); break;
    case 1: r = c_log(z); break;
    case 2: r = c_sqrt(z); break;
    case 3: r = c_sinh(z); break;
    case 4: r = c_cosh(z); break;
    case 5: r = c_tanh(z); break;
    case 6: r = times_mi(c_sinh(times_i(z))); break;
    case 7: r = c_cosh(times_i(z)); break;
    case 8: r = times_mi(c_tanh(times_i(z))); break;
    case 9: r = c_asinh(z); break;
    case 10: r = times_mi(c_asinh(times_i(z))); break;
    case 11: r = c_acos(z); break;
    case 12: r = c_acosh(z); break;
    case 13: r = c_atanh(z); break;
    case 14: r = times_mi(c_atanh(times_i(z))); break;
    case 15: r = c_log(z) / C_LN2; break;
    case 16: r = c_log(z) / C_LN10; break;
    case 17: r = c_log1p(z); break;
    case 18: r = c_expm1(z); break;
    case 19: r = cdiv((R2)(1, 0), c_sqrt(z)); break;
    default: {
        R2 e = c_exp(-z);
        r = cdiv((R2)(1, 0), (R2)(1 + e.x, e.y));
        break;
    }
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
