/* random.cl: counter-based random numbers (Philox4x32-10) for rand, randn and
 * randint.  Element i of a call uses one Philox block, counter (g, 0, 0)
 * with g = offset + i as a 64-bit number and the seed as key, so its value
 * depends on seed, offset and i only, never on the launch geometry.
 *
 * randn must give the same bits on every OpenCL implementation, whose
 * log/sqrt/cos (and float division) differ in their last bits.  So it uses
 * only +, -, * (correctly rounded everywhere), integer and bit operations,
 * exactly representable hex constants, and no contraction into fma.  The
 * host sets RAND_FP64 for float64 (the computations then run in double). */
#pragma OPENCL FP_CONTRACT OFF

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

uint4 philox4x32_10(uint4 c, uint2 k)
{
    for (int r = 0; r < 10; r++) {
        uint hi0 = mul_hi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
        uint hi1 = mul_hi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k.x += PHILOX_W0;
        k.y += PHILOX_W1;
    }
    return c;
}

uint4 block_of(ulong offset, size_t i, uint key0, uint key1)
{
    ulong g = offset + (ulong)i;
    return philox4x32_10((uint4)((uint)g, (uint)(g >> 32), 0u, 0u), (uint2)(key0, key1));
}

#ifdef RAND_FP64
typedef double R;
typedef ulong RBITS;
#define C(x) x
#define AS_R as_double
#define AS_BITS as_ulong
#define MANT_BITS 52
#define EXP_MASK 0x7ffUL
#define EXP_BIAS 1023
#define ONE_BITS 0x3ff0000000000000UL
#define MANT_MASK 0x000fffffffffffffUL
#define RSQRT_MAGIC 0x5fe6eb50c7b537a9UL
#define NEWTON_RECIP 4
#define NEWTON_RSQRT 4
#else
typedef float R;
typedef uint RBITS;
#define C(x) x##f
#define AS_R as_float
#define AS_BITS as_uint
#define MANT_BITS 23
#define EXP_MASK 0xffu
#define EXP_BIAS 127
#define ONE_BITS 0x3f800000u
#define MANT_MASK 0x007fffffu
#define RSQRT_MAGIC 0x5f3759dfu
#define NEWTON_RECIP 3
#define NEWTON_RSQRT 3
#endif

/* Uniform in (0, 1] (for the logarithm) and in [0, 1), from the top bits
 * of the words: exact conversions and power-of-two scalings only. */
#ifdef RAND_FP64
#define BITS53(a, b) ((((ulong)(a)) << 21) | ((ulong)(b) >> 11))
#define UNIFORM_OPEN0(a, b) ((double)(BITS53(a, b) + 1UL) * 0x1p-53)
#define UNIFORM(a, b) ((double)BITS53(a, b) * 0x1p-53)
#else
#define UNIFORM_OPEN0(a, b) ((float)(((a) >> 8) + 1u) * 0x1p-24f)
#define UNIFORM(a, b) ((float)((a) >> 8) * 0x1p-24f)
#endif

/* 1/x for x in [1.7, 2.42]: a linear start within 2% and Newton steps. */
R recip_near2(R x)
{
    R y = C(0x1.f9p-1) - C(0x1.eap-3) * x;
    for (int k = 0; k < NEWTON_RECIP; k++)
        y = y * (C(2.0) - x * y);
    return y;
}

/* log(x) for normal x > 0 (uniforms in (0, 1], poisson's rates and
 * ratios): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2
 * atanh((m-1)/(m+1)) as an odd series. */
R log_unit(R x)
{
    RBITS b = AS_BITS(x);
    int e = (int)((b >> MANT_BITS) & EXP_MASK) - EXP_BIAS;
    R m = AS_R((b & MANT_MASK) | ONE_BITS);
#ifdef RAND_FP64
    if (m > 0x1.6a09e667f3bcdp+0) {
#else
    if (m > 0x1.6a09e6p+0f) {
#endif
        m = m * C(0.5);
        e += 1;
    }
    R s = (m - C(1.0)) * recip_near2(m + C(1.0));
    R z = s * s;
#ifdef RAND_FP64
    R p = 0x1.642c8590b2164p-4;
    p = 0x1.8618618618618p-4 + z * p;
    p = 0x1.af286bca1af28p-4 + z * p;
    p = 0x1.e1e1e1e1e1e1ep-4 + z * p;
    p = 0x1.1111111111111p-3 + z * p;
    p = 0x1.3b13b13b13b14p-3 + z * p;
    p = 0x1.745d1745d1746p-3 + z * p;
    p = 0x1.c71c71c71c71cp-3 + z * p;
    p = 0x1.2492492492492p-2 + z * p;
    p = 0x1.999999999999ap-2 + z * p;
    p = 0x1.5555555555555p-1 + z * p;
    p = 0x1.0p+1 + z * p;
    R fe = (R)e;
    return (fe * 0x1.62e42feep-1 + s * p) + fe * 0x1.a39ef35793c76p-33;
#else
    R p = 0x1.745d18p-3f;
    p = 0x1.c71c72p-3f + z * p;
    p = 0x1.24924ap-2f + z * p;
    p = 0x1.99999ap-2f + z * p;
    p = 0x1.555556p-1f + z * p;
    p = 0x1.0p+1f + z * p;
    return (R)e * 0x1.62e430p-1f + s * p;
#endif
}

/* sqrt(x) for x >= 0 as x / sqrt(x): a bit-level start and Newton steps on
 * 1/sqrt(x). */
R sqrt_pos(R x)
{
    if (x == C(0.0))
        return C(0.0);
    R y = AS_R(RSQRT_MAGIC - (AS_BITS(x) >> 1));
    R h = C(0.5) * x;
    for (int k = 0; k < NEWTON_RSQRT; k++)
        y = y * (C(1.5) - h * y * y);
    return x * y;
}

/* cos(2 pi w) and sin(2 pi w) for w in [0, 1/8] (angles up to pi/4). */
R cos2pi_small(R w)
{
    R z = w * w;
#ifdef RAND_FP64
    R p = -0x1.2a0c591af8314p-5;
    p = 0x1.20c62c2f2d7f5p-2 + z * p;
    p = -0x1.b6e24f44b128fp+0 + z * p;
    p = 0x1.f9d38a3763cc3p+2 + z * p;
    p = -0x1.a6d1f2a204a8cp+4 + z * p;
    p = 0x1.e1f506891babbp+5 + z * p;
    p = -0x1.55d3c7e3cbffap+6 + z * p;
    p = 0x1.03c1f081b5ac4p+6 + z * p;
    p = -0x1.3bd3cc9be45dep+4 + z * p;
#else
    R p = -0x1.a6d1f2p+4f;
    p = 0x1.e1f506p+5f + z * p;
    p = -0x1.55d3c8p+6f + z * p;
    p = 0x1.03c1f0p+6f + z * p;
    p = -0x1.3bd3ccp+4f + z * p;
#endif
    return C(1.0) + z * p;
}

R sin2pi_small(R w)
{
    R z = w * w;
#ifdef RAND_FP64
    R p = -0x1.8a404211f9547p-7;
    p = 0x1.aaec32af93359p-4 + z * p;
    p = -0x1.6fadb9f155744p-1 + z * p;
    p = 0x1.e8f434d018d63p+1 + z * p;
    p = -0x1.e3074fde8871fp+3 + z * p;
    p = 0x1.50783487ee782p+5 + z * p;
    p = -0x1.32d2cce62bd86p+6 + z * p;
    p = 0x1.466bc6775aae2p+6 + z * p;
    p = -0x1.4abbce625be53p+5 + z * p;
    p = 0x1.921fb54442d18p+2 + z * p;
#else
    R p = -0x1.e30750p+3f;
    p = 0x1.507834p+5f + z * p;
    p = -0x1.32d2ccp+6f + z * p;
    p = 0x1.466bc6p+6f + z * p;
    p = -0x1.4abbcep+5f + z * p;
    p = 0x1.921fb6p+2f + z * p;
#endif
    return w * p;
}

/* cos(2 pi u) for u in [0, 1).  Every reduction step is exact (Sterbenz). */
R cos2pi(R u)
{
    R w = fabs(u - C(0.5)); /* cos(2 pi u) = -cos(2 pi w), w in [0, 1/2] */
    R sign = C(-1.0);
    if (w > C(0.25)) {
        w = C(0.5) - w;
        sign = C(1.0);
    }
    R c = w <= C(0.125) ? cos2pi_small(w) : sin2pi_small(C(0.25) - w);
    return sign * c;
}

/* Box-Muller, the cosine branch only, so element i needs block i alone. */
R normal_of(uint4 w)
{
#ifdef RAND_FP64
    R u1 = UNIFORM_OPEN0(w.x, w.y), u2 = UNIFORM(w.z, w.w);
#else
    R u1 = UNIFORM_OPEN0(w.x, 0u), u2 = UNIFORM(w.y, 0u);
#endif
    return sqrt_pos(C(-2.0) * log_unit(u1)) * cos2pi(u2);
}

CLT_KERNEL(rand)(__global T *out, ulong n, uint key0, uint key1, ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint4 w = block_of(offset, i, key0, key1);
#if defined(RAND_FP64)
    T_STORE(out, i, UNIFORM(w.x, w.y));
#elif defined(RAND_HALF)
    T_STORE(out, i, (float)(w.x >> 21) * 0x1p-11f);
#elif defined(RAND_BF16)
    /* k / 256 as torch's bfloat16 uniform: a finer float would round up to 1. */
    T_STORE(out, i, (float)(w.x >> 24) * 0x1p-8f);
#else
    T_STORE(out, i, UNIFORM(w.x, 0u));
#endif
}

CLT_KERNEL(randn)(__global T *out, ulong n, uint key0, uint key1, ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    T_STORE(out, i, (T_C)normal_of(block_of(offset, i, key0, key1)));
}

/* low + floor(x * range / 2^64) for 64 random bits x: exact integer
 * arithmetic, bias below range / 2^64. */
CLT_KERNEL(randint)(__global T *out, ulong n, uint key0, uint key1, ulong offset, long low,
                    ulong range)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint4 w = block_of(offset, i, key0, key1);
    ulong x = ((ulong)w.x << 32) | (ulong)w.y;
    long v = as_long((ulong)low + mul_hi(x, range)); /* wraps, never overflows */
    T_STORE(out, i, (T_C)v);
}

/* randperm: element i goes to its rank among the keys, ties broken by the
 * index, so the result is a permutation that depends only on the keys (the
 * same on every device).  O(n) work per element. */
CLT_KERNEL(randperm_rank)(__global T *out, __global const long *keys, ulong n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    long k = keys[i];
    ulong r = 0;
    for (ulong j = 0; j < n; j++) {
        long kj = keys[j];
        r += (kj < k) | ((kj == k) & (j < i));
    }
    T_STORE(out, r, (T_C)i);
}

/* ---- more distributions: every one from the same counter-based blocks, and
 * from + - * and bit operations only (the helpers above and below), so that
 * they too give the same bits on every device. */

/* Uniform in (0, 1), odd multiples of 2^-24 (2^-53 in double): neither end,
 * for the logarithms and the cotangent. */
#ifdef RAND_FP64
#define UNIFORM_OPEN(a, b) ((double)((BITS53(a, b) & ~1UL) | 1UL) * 0x1p-53)
#else
#define UNIFORM_OPEN(a, b) ((float)((((a) >> 9) << 1) | 1u) * 0x1p-24f)
#endif

/* Draw j of element i: block (g, j) of the counter, so that an element may
 * take as many numbers as it needs (poisson's rejections) and still depends
 * on seed, offset and i only. */
R uniform_j(ulong offset, size_t i, uint key0, uint key1, uint j)
{
    ulong g = offset + (ulong)i;
    uint4 w = philox4x32_10((uint4)((uint)g, (uint)(g >> 32), j, 0u), (uint2)(key0, key1));
    return UNIFORM_OPEN(w.x, w.y);
}

/* 1/x for a normal x > 0: its mantissa m in [1, 2) inverted by Newton's
 * steps from 24/17 - 8/17 m (within 1/17), the exponent negated. */
R recip_pos(R x)
{
    RBITS b = AS_BITS(x);
    int e = (int)((b >> MANT_BITS) & EXP_MASK) - EXP_BIAS;
    R m = AS_R((b & MANT_MASK) | ONE_BITS);
    R y = C(1.4117647) - C(0.47058824) * m;
    for (int k = 0; k < NEWTON_RECIP; k++)
        y = y * (C(2.0) - m * y);
    RBITS s = (RBITS)(EXP_BIAS - e) << MANT_BITS;
    return y * AS_R(s);
}

/* exp(x): x = k ln2 + r with k = rint(x log2 e) and |r| <= ln2 / 2 (k ln2's
 * high part exact), exp(r) by its Taylor polynomial, times 2^k in two
 * factors so that results near the range's ends round once. */
R exp_r(R x)
{
#ifdef RAND_FP64
    if (x > 710.0)
        return INFINITY;
    if (x < -746.0)
        return 0.0;
    R k = rint(x * 0x1.71547652b82fep+0);
    R r = (x - k * 0x1.62e42feep-1) - k * 0x1.a39ef35793c76p-33;
    R p = 0x1.6124613a86d09p-33;
    p = 0x1.1eed8eff8d898p-29 + r * p;
    p = 0x1.ae64567f544e4p-26 + r * p;
    p = 0x1.27e4fb7789f5cp-22 + r * p;
    p = 0x1.71de3a556c734p-19 + r * p;
    p = 0x1.a01a01a01a01ap-16 + r * p;
    p = 0x1.a01a01a01a01ap-13 + r * p;
    p = 0x1.6c16c16c16c17p-10 + r * p;
    p = 0x1.1111111111111p-7 + r * p;
    p = 0x1.5555555555555p-5 + r * p;
    p = 0x1.5555555555555p-3 + r * p;
    p = 0x1.0p-1 + r * p;
#else
    if (x > 89.0f)
        return INFINITY;
    if (x < -104.0f)
        return 0.0f;
    R k = rint(x * 0x1.715476p+0f);
    R r = (x - k * 0x1.62e400p-1f) - k * 0x1.7f7d1cp-20f;
    R p = 0x1.a01a02p-13f;
    p = 0x1.6c16c2p-10f + r * p;
    p = 0x1.111112p-7f + r * p;
    p = 0x1.555556p-5f + r * p;
    p = 0x1.555556p-3f + r * p;
    p = 0x1.0p-1f + r * p;
#endif
    p = C(1.0) + r * p;
    p = C(1.0) + r * p;
    int ki = (int)k, k1 = ki / 2, k2 = ki - ki / 2;
    return p * AS_R((RBITS)(k1 + EXP_BIAS) << MANT_BITS) *
           AS_R((RBITS)(k2 + EXP_BIAS) << MANT_BITS);
}

/* tan(pi (u - 1/2)) = -cos(pi u) / sin(pi u) for u in (0, 1), with v = u / 2
 * folded into (0, 1/4] (sin(2 pi v) > 0) by exact steps. */
R tan_pi_centered(R u)
{
    R v = u * C(0.5), sign = C(-1.0);
    if (v > C(0.25)) {
        v = C(0.5) - v;
        sign = C(1.0);
    }
    R c, s;
    if (v <= C(0.125)) {
        c = cos2pi_small(v);
        s = sin2pi_small(v);
    } else {
        c = sin2pi_small(C(0.25) - v);
        s = cos2pi_small(C(0.25) - v);
    }
    return sign * c * recip_pos(s);
}

/* In-place distributions by inversion, torch's formulas, computed in R:
 * 0 exponential_: -log(u) a (a = 1 / lambda), 1 geometric_: ceil(log(u) a)
 * (a = 1 / log1p(-p)), 2 log_normal_: exp(a + b z), 3 cauchy_: a + b
 * tan(pi (u - 1/2)). */
CLT_KERNEL(distribution)(__global T *out, ulong n, uint key0, uint key1, ulong offset, int kind,
                         R a, R b)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint4 w = block_of(offset, i, key0, key1);
    R u = UNIFORM_OPEN(w.x, w.y), v;
    if (kind == 0)
        v = -log_unit(u) * a;
    else if (kind == 1)
        v = ceil(log_unit(u) * a);
    else if (kind == 2)
        v = exp_r(a + b * normal_of(w));
    else
        v = a + b * tan_pi_centered(u);
    T_STORE(out, i, (T_C)v);
}

/* bernoulli: 1 where u < p, p from a contiguous tensor of T or a scalar; u
 * as clt_rand draws it. */
CLT_KERNEL(bernoulli_tensor)(__global T *out, __global const T *p, ulong n, uint key0, uint key1,
                             ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint4 w = block_of(offset, i, key0, key1);
    T_STORE(out, i, (T_C)(UNIFORM(w.x, w.y) < (R)T_LOAD(p, i) ? 1 : 0));
}

CLT_KERNEL(bernoulli_scalar)(__global T *out, ulong n, uint key0, uint key1, ulong offset, R p)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint4 w = block_of(offset, i, key0, key1);
    T_STORE(out, i, (T_C)(UNIFORM(w.x, w.y) < p ? 1 : 0));
}

/* log(k!) for k >= 0: a table below 10, Stirling's series above. */
R log_factorial(R k)
{
    if (k < C(10.0)) {
        const R table[10] = {C(0.0), C(0.0), C(0.693147180559945), C(1.791759469228055),
                             C(3.178053830347946), C(4.787491742782046), C(6.579251212010101),
                             C(8.525161361065415), C(10.604602902745251),
                             C(12.801827480081469)};
        return table[(int)k];
    }
    R x = k + C(1.0), rx = recip_pos(x);
    return (x - C(0.5)) * log_unit(x) - x + C(0.91893853320467274) +
           rx * (C(0.083333333333333333) - rx * rx * C(0.0027777777777777778));
}

/* poisson: for a rate below 10 Knuth's product of uniforms, above
 * Hormann's transformed rejection with squeeze (PTRS), as torch; draw j of
 * element i from block (g, j).  A rate of 0 gives 0, an infinite one
 * infinity.  POISSON_MAX_DRAWS bounds the work of an element: Knuth's
 * product needs about rate + 1 draws, and each PTRS try (two draws) is
 * accepted with probability above 0.4, so no valid rate comes near it. */
#define POISSON_MAX_DRAWS 4096u
R poisson_of(R lam, ulong offset, size_t i, uint key0, uint key1)
{
    uint j = 0;
    if (lam < C(10.0)) {
        R enl = exp_r(-lam), prod = C(1.0), k = C(0.0);
        for (;;) {
            prod = prod * uniform_j(offset, i, key0, key1, j++);
            if (prod <= enl || j >= POISSON_MAX_DRAWS)
                return k;
            k = k + C(1.0);
        }
    }
    R slam = sqrt_pos(lam), loglam = log_unit(lam);
    R b = C(0.931) + C(2.53) * slam;
    R a = C(-0.059) + C(0.02483) * b;
    R invalpha = C(1.1239) + C(1.1328) * recip_pos(b - C(3.4));
    R vr = C(0.9277) - C(3.6224) * recip_pos(b - C(2.0));
    R log_invalpha = log_unit(invalpha);
    for (;;) {
        R U = uniform_j(offset, i, key0, key1, j++) - C(0.5);
        R V = uniform_j(offset, i, key0, key1, j++);
        R us = C(0.5) - fabs(U);
        R rus = recip_pos(us);
        R k = floor((C(2.0) * a * rus + b) * U + lam + C(0.43));
        if (us >= C(0.07) && V <= vr)
            return k;
        if (k < C(0.0) || (us < C(0.013) && V > us)) {
            if (j >= POISSON_MAX_DRAWS)
                return k < C(0.0) ? C(0.0) : k;
            continue;
        }
        R lhs = log_unit(V) + log_invalpha - log_unit(a * rus * rus + b);
        if (lhs <= -lam + k * loglam - log_factorial(k) || j >= POISSON_MAX_DRAWS)
            return k;
    }
}

CLT_KERNEL(poisson)(__global T *out, __global const T *rates, ulong n, uint key0, uint key1,
                    ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    R lam = (R)T_LOAD(rates, i);
    R v = lam == C(0.0) || isinf(lam) ? lam : poisson_of(lam, offset, i, key0, key1);
    T_STORE(out, i, (T_C)v);
}

/* binomial: torch's sampler.  Below a mean of 10 (of min(p, 1 - p)) the
 * inversion by geometric waiting times, above Kachitvichyanukul and
 * Schmeiser's BTRS with torch's bound of Stirling's tails; for
 * p > 1/2 count minus the draw of 1 - p.  count is taken as floor(count);
 * count 0 or p 0 give 0, p 1 gives count.  Draw j of element i from block
 * (g, j); BINOMIAL_MAX_DRAWS bounds the work of an element (each BTRS try
 * is accepted with probability above 0.4). */
#define BINOMIAL_MAX_DRAWS 4096u
R log1m_r(R p) /* log(1 - p) for p in (0, 1/2] */
{
    if (p < C(0.0078125)) {
        R s = p, t = p, q = p;
        for (int k = 2; k <= 6; k++) {
            t = t * q;
            s = s + t * recip_pos((R)k);
        }
        return -s;
    }
    return log_unit(C(1.0) - p);
}

/* log(k!) less Stirling's approximation of it, torch's stirling_approx_tail. */
R stirling_tail(R k)
{
    if (k <= C(9.0)) {
        const R table[10] = {C(0.08106146679532726), C(0.04134069595540929),
                             C(0.02767792568499834), C(0.02079067210376509),
                             C(0.01664469118982119), C(0.01387612882307075),
                             C(0.01189670994589177), C(0.01041126526197209),
                             C(0.009255462182712733), C(0.008330563433362871)};
        return table[(int)k];
    }
    R r = recip_pos(k + C(1.0)), r2 = r * r;
    return (C(0.083333333333333333) - (C(0.0027777777777777778) - C(0.00079365079365079365) * r2) * r2) * r;
}

R binomial_of(R n, R p, ulong offset, size_t i, uint key0, uint key1)
{
    uint j = 0;
    if (n * p < C(10.0)) {
        R lq = log1m_r(p), rlq = recip_pos(-lq), sum = C(0.0), k = C(0.0);
        for (;;) {
            R u = uniform_j(offset, i, key0, key1, j++);
            sum = sum + ceil(-log_unit(u) * rlq);
            if (sum > n || j >= BINOMIAL_MAX_DRAWS)
                return k;
            k = k + C(1.0);
        }
    }
    R q = C(1.0) - p;
    R sd = sqrt_pos(n * p * q);
    R b = C(1.15) + C(2.53) * sd;
    R a = C(-0.0873) + C(0.0248) * b + C(0.01) * p;
    R c = n * p + C(0.5);
    R vr = C(0.92) - C(4.2) * recip_pos(b);
    R r = p * recip_pos(q);
    R alpha = (C(2.83) + C(5.1) * recip_pos(b)) * sd;
    R m = floor((n + C(1.0)) * p);
    for (;;) {
        R U = uniform_j(offset, i, key0, key1, j++) - C(0.5);
        R V = uniform_j(offset, i, key0, key1, j++);
        R us = C(0.5) - fabs(U);
        R rus = recip_pos(us);
        R k = floor((C(2.0) * a * rus + b) * U + c);
        if (k < C(0.0) || k > n) {
            if (j >= BINOMIAL_MAX_DRAWS)
                return m;
            continue;
        }
        if (us >= C(0.07) && V <= vr)
            return k;
        R lhs = log_unit(V * alpha * recip_pos(a * rus * rus + b));
        R rhs = (m + C(0.5)) * log_unit((m + C(1.0)) * recip_pos(r * (n - m + C(1.0)))) +
                (n + C(1.0)) * log_unit((n - m + C(1.0)) * recip_pos(n - k + C(1.0))) +
                (k + C(0.5)) * log_unit(r * (n - k + C(1.0)) * recip_pos(k + C(1.0))) +
                stirling_tail(m) + stirling_tail(n - m) - stirling_tail(k) -
                stirling_tail(n - k);
        if (lhs <= rhs || j >= BINOMIAL_MAX_DRAWS)
            return k;
    }
}

CLT_KERNEL(binomial)(__global T *out, __global const T *count, __global const T *prob, ulong n,
                     uint key0, uint key1, ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    R cnt = floor((R)T_LOAD(count, i)), p = (R)T_LOAD(prob, i), v;
    if (cnt <= C(0.0) || p <= C(0.0))
        v = C(0.0);
    else if (p >= C(1.0))
        v = cnt;
    else if (p <= C(0.5))
        v = binomial_of(cnt, p, offset, i, key0, key1);
    else
        v = cnt - binomial_of(cnt, C(1.0) - p, offset, i, key0, key1);
    T_STORE(out, i, (T_C)v);
}

/* multinomial with replacement: sample s of row r takes the first category
 * whose running sum passes u times the row's sum (the last category of
 * positive probability when rounding leaves u beyond them all). */
CLT_KERNEL(multinomial_replacement)(__global long *out, __global const T *probs, ulong rows,
                                    ulong k, ulong ns, uint key0, uint key1, ulong offset)
{
    size_t gid = get_global_id(0);
    if (gid >= rows * ns)
        return;
    size_t row = gid / ns;
    __global const T *p = probs + row * k;
    R total = C(0.0);
    long last = 0;
    for (ulong j = 0; j < k; j++) {
        R pj = (R)T_LOAD(p, j);
        total = total + pj;
        if (pj > C(0.0))
            last = (long)j;
    }
    uint4 w = block_of(offset, gid, key0, key1);
    R target = UNIFORM(w.x, w.y) * total, acc = C(0.0);
    long pick = last;
    for (ulong j = 0; j < k; j++) {
        R pj = (R)T_LOAD(p, j);
        acc = acc + pj;
        if (pj > C(0.0) && target < acc) {
            pick = (long)j;
            break;
        }
    }
    out[gid] = pick;
}

/* multinomial without replacement, step 1: key p / E for each category, E
 * exponential (torch's q = exponential_(1); probs / q); a category of
 * probability 0 gets key 0. */
CLT_KERNEL(multinomial_keys)(__global R *keys, __global const T *probs, ulong n, uint key0,
                             uint key1, ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint4 w = block_of(offset, i, key0, key1);
    R e = -log_unit(UNIFORM_OPEN(w.x, w.y));
    keys[i] = (R)T_LOAD(probs, i) * recip_pos(e);
}

/* Step 2: category j of a row goes to place r, its rank among the row's
 * keys from the largest (ties to the lower index), when r < ns (torch's
 * topk order). */
CLT_KERNEL(multinomial_rank)(__global long *out, __global const R *keys, ulong rows, ulong k,
                             ulong ns)
{
    size_t gid = get_global_id(0);
    if (gid >= rows * k)
        return;
    size_t row = gid / k, j = gid % k;
    __global const R *key = keys + row * k;
    R kj = key[j];
    ulong r = 0;
    for (ulong m = 0; m < k; m++)
        r += (key[m] > kj) | ((key[m] == kj) & (m < j));
    if (r < ns)
        out[row * ns + r] = (long)j;
}

/* ---- gamma: torch's _standard_gamma and _standard_gamma_grad -------------- */

/* Block j of element i (as uniform_j takes it), for the draws of an
 * element that needs many. */
uint4 block_j(ulong offset, size_t i, uint key0, uint key1, uint j)
{
    ulong g = offset + (ulong)i;
    return philox4x32_10((uint4)((uint)g, (uint)(g >> 32), j, 0u), (uint2)(key0, key1));
}

/* A standard Gamma(alpha) draw: Marsaglia and Tsang's rejection (torch's
 * sample_gamma), alpha below 1 boosted by u^(1/alpha); draw j of element i
 * from block (g, j).  GAMMA_MAX_DRAWS bounds the work of an element (each
 * try is accepted with probability above 0.95). */
#define GAMMA_MAX_DRAWS 4096u
#ifdef RAND_FP64
#define GAMMA_TINY 0x1p-1022
#else
#define GAMMA_TINY 0x1p-126f
#endif
R gamma_of(R alpha, ulong offset, size_t i, uint key0, uint key1)
{
    uint j = 0;
    R scale = C(1.0);
    if (alpha < C(1.0)) {
        R u = uniform_j(offset, i, key0, key1, j++);
        scale = alpha < GAMMA_TINY ? C(0.0) : exp_r(log_unit(u) * recip_pos(alpha));
        alpha = alpha + C(1.0);
    }
    R d = alpha - C(0.33333333333333333);
    R c = recip_pos(sqrt_pos(C(9.0) * d));
    for (;;) {
        R x, y;
        do {
            x = normal_of(block_j(offset, i, key0, key1, j++));
            y = C(1.0) + c * x;
        } while (y <= C(0.0) && j < GAMMA_MAX_DRAWS);
        R v = y * y * y;
        R u = uniform_j(offset, i, key0, key1, j++);
        R xx = x * x;
        if (y > C(0.0) &&
            (u < C(1.0) - C(0.0331) * xx * xx ||
             (v >= GAMMA_TINY && log_unit(u) < C(0.5) * xx + d * (C(1.0) - v + log_unit(v))) ||
             j >= GAMMA_MAX_DRAWS))
            return scale * d * v;
        if (j >= GAMMA_MAX_DRAWS)
            return scale * d;
    }
}

/* Samples of Gamma(alpha, 1), alpha from a contiguous tensor of T; a result
 * that underflows becomes the dtype's smallest normal number (torch clamps
 * Gamma's samples to finfo.tiny), alpha 0 gives 0, an infinite one
 * infinity, a negative or NaN one NaN. */
CLT_KERNEL(standard_gamma)(__global T *out, __global const T *alpha, ulong n, uint key0,
                           uint key1, ulong offset)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    R a = (R)T_LOAD(alpha, i), v;
    if (!(a > C(0.0)) || isinf(a))
        v = a == C(0.0) ? C(0.0) : a > C(0.0) ? a : NAN;
    else
        v = fmax(gamma_of(a, offset, i, key0, key1), GAMMA_TINY);
    T_STORE(out, i, (T_C)v);
}

/* digamma(x) for x > 0: the recurrence up to 10 and the asymptotic series
 * (torch's digamma_one). */
R digamma_pos(R x)
{
    R r = C(0.0);
    while (x < C(10.0)) {
        r -= C(1.0) / x;
        x += C(1.0);
    }
    R z = C(1.0) / (x * x);
    /* polevl's order: the constant term is the last coefficient */
    R y = z * (((((((C(8.33333333333333333333E-2) * z - C(2.10927960927960927961E-2)) * z +
                  C(7.57575757575757575758E-3)) * z - C(4.16666666666666666667E-3)) * z +
                C(3.96825396825396825397E-3)) * z - C(8.33333333333333333333E-3)) * z +
              C(8.33333333333333333333E-2)));
    return r + log(x) - C(0.5) / x - y;
}

/* d x / d alpha of a Gamma(alpha, 1) sample x, -(d cdf / d alpha) / pdf:
 * torch's standard_gamma_grad_one (a series for small x, Rice's saddle
 * point expansion for large alpha, a rational fit elsewhere). */
R standard_gamma_grad_of(R alpha, R x)
{
    if (x < C(0.8)) {
        R numer = C(1.0), denom = alpha;
        R s1 = numer / denom, s2 = numer / (denom * denom);
        for (int k = 1; k <= 5; ++k) {
            numer *= -x / (R)k;
            denom += C(1.0);
            s1 += numer / denom;
            s2 += numer / (denom * denom);
        }
        R pxa = pow(x, alpha);
        R pdf = pow(x, alpha - C(1.0)) * exp(-x);
        R cdf = pxa * s1;
        R cdf_alpha = (log(x) - digamma_pos(alpha)) * cdf - pxa * s2;
        R r = -cdf_alpha / pdf;
        return isnan(r) ? C(0.0) : r;
    }
    if (alpha > C(8.0)) {
        if (C(0.9) * alpha <= x && x <= C(1.1) * alpha) {
            R n1 = C(1.0) + C(24.0) * alpha * (C(1.0) + C(12.0) * alpha);
            R n2 = C(1440.0) * (alpha * alpha) + C(6.0) * x * (C(53.0) - C(120.0) * x) -
                   C(65.0) * x * x / alpha + alpha * (C(107.0) + C(3600.0) * x);
            R den = C(1244160.0) * (alpha * alpha) * (alpha * alpha);
            return n1 * n2 / den;
        }
        R den = sqrt(C(8.0) * alpha);
        R t2 = den / (alpha - x);
        R t3 = pow(x - alpha - alpha * log(x / alpha), C(-1.5));
        R t23 = x < alpha ? t2 - t3 : t2 + t3;
        R t1 = log(x / alpha) * t23 -
               sqrt(C(2.0) / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
        R stirling = C(1.0) + C(1.0) / (C(12.0) * alpha) * (C(1.0) + C(1.0) / (C(24.0) * alpha));
        return -stirling * x * t1 / den;
    }
    const R cuv[3][8] = {
        {C(0.16009398), C(-0.094634809), C(0.025146376), C(-0.0030648343), C(1.0),
         C(0.32668115), C(0.10406089), C(0.0014179084)},
        {C(0.53487893), C(0.1298071), C(0.065735949), C(-0.0015649758), C(0.16639465),
         C(0.020070113), C(-0.0035938915), C(-0.00058392623)},
        {C(0.040121004), C(-0.0065914022), C(-0.0026286047), C(-0.0013441777),
         C(0.017050642), C(-0.0021309326), C(0.00085092367), C(-1.5247877e-07)}};
    R u = log(x / alpha), v = log(alpha), cv[8];
    for (int k = 0; k < 8; ++k)
        cv[k] = cuv[0][k] + u * (cuv[1][k] + u * cuv[2][k]);
    R p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]));
    R q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]));
    return exp(p / q);
}

/* The gradient of standard_gamma: out = g * d x / d alpha, all contiguous
 * tensors of T with n elements. */
CLT_KERNEL(standard_gamma_grad)(__global T *out, __global const T *g, __global const T *alpha,
                                __global const T *x, ulong n)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    R v = standard_gamma_grad_of((R)T_LOAD(alpha, i), (R)T_LOAD(x, i));
    T_STORE(out, i, (T_C)((R)T_LOAD(g, i) * v));
}
