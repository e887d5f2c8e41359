/* test_math.c: the math functions of ops.h (asin ... exp2, erfinv, square,
 * logit, nan_to_num, atan2, hypot, copysign, xlogy, lerp, addcmul,
 * addcdiv): values against the C library computed here (double for
 * float32, long double for float64; erfinv by Newton's method on erf in
 * long double), in units in the last place over a sweep; the special
 * values C99 and PyTorch give; every lane of a 16-element vector beside one
 * extreme lane; dtype rules; broadcasting; gradients against float64
 * finite differences; bad input. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"
#include "internal.h"


typedef enum {
    ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH, ERF, ERFC, ERFINV, LOG2, LOG10, EXP2,
    SQUARE, NUN
} unop;
static const char *const un_names[NUN] = {"asin",  "acos", "atan", "sinh",  "cosh",
                                          "asinh", "acosh", "atanh", "erf",  "erfc",
                                          "erfinv", "log2", "log10", "exp2", "square"};
static const un_fn un_fns[NUN] = {clt_asin,  clt_acos,   clt_atan, clt_sinh,  clt_cosh,
                                  clt_asinh, clt_acosh,  clt_atanh, clt_erf,  clt_erfc,
                                  clt_erfinv, clt_log2, clt_log10, clt_exp2, clt_square};

typedef enum { ATAN2, HYPOT, COPYSIGN, XLOGY, NBIN } binop;
static const char *const bin_names[NBIN] = {"atan2", "hypot", "copysign", "xlogy"};
static const bin_fn bin_fns[NBIN] = {clt_atan2, clt_hypot, clt_copysign, clt_xlogy};

/* erfinv(y) by Newton's method in long double, on erf(x) - y, or on its
 * complement (1 - y) - erfc(x) above 0.5 so that 1 - y stays exact. */
static long double erfinv_ref(long double y)
{
    long double ya = fabsl(y);
    if (isnan(ya) || ya > 1)
        return NAN;
    if (ya == 1)
        return copysignl(INFINITY, y);
    if (ya == 0)
        return y;
    long double x = ya < 0.5L ? ya * 0.886L : sqrtl(-logl(1 - ya));
    for (int k = 0; k < 100; k++) {
        long double r = ya > 0.5L ? (1 - ya) - erfcl(x) : erfl(x) - ya;
        long double step = r / (1.1283791670955125738961589L * expl(-x * x));
        x -= step;
        if (fabsl(step) <= fabsl(x) * 1e-19L)
            break;
    }
    return copysignl(x, y);
}

/* The function in long double (the C library's; x * x for square). */
static long double ref(unop op, long double x)
{
    switch (op) {
    case ASIN: return asinl(x);
    case ACOS: return acosl(x);
    case ATAN: return atanl(x);
    case SINH: return sinhl(x);
    case COSH: return coshl(x);
    case ASINH: return asinhl(x);
    case ACOSH: return acoshl(x);
    case ATANH: return atanhl(x);
    case ERF: return erfl(x);
    case ERFC: return erfcl(x);
    case ERFINV: return erfinv_ref(x);
    case LOG2: return log2l(x);
    case LOG10: return log10l(x);
    case EXP2: return exp2l(x);
    default: return x * x;
    }
}

/* |got - want| in units of the last place of want in float32 or float64
 * (the gap above |want| rounded to the dtype, the smallest denormal at 0);
 * 0 when both are the same NaN, inf or zero, 1e9 when one is NaN or
 * infinite and the other not. */
static double ulps(double got, long double want, bool f32)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got) ? 0 : 1e9;
    double w = f32 ? (double)(float)want : (double)want;
    if (isinf(w) || isinf(got))
        return w == got ? 0 : 1e9;
    double a = fabs(w);
    double gap = f32 ? (double)(nextafterf((float)a, INFINITY) - (float)a)
                     : nextafter(a, INFINITY) - a;
    return (double)(fabsl((long double)got - want) / gap);
}

/* The largest ulps allowed.  Measured over the sweeps on PoCL 5 (AMD EPYC,
 * Zen 5): at most 1.49 (float32 acosh; cosh 1.36, sinh 1.13), float64 at
 * most 1.13 (cosh), erfinv 1.16 and 1.11; square is one rounding.  OpenCL
 * itself allows 4 ulps (asinh, acosh, atanh, erf, erfc: 4 in float32). */
static double max_ulps(unop op)
{
    return op == SQUARE ? 0.5 : 2;
}

/* A float32 or float64 tensor of v. */
static clt_tensor *upload(clt_device *dev, clt_dtype dt, int64_t n, const double *v)
{
    return tensor_of(dev, dt, 1, &n, v);
}

/* Where each op's argument sweep lies: its domain, past overflow. */
static void domain(unop op, bool f32, double *lo, double *hi)
{
    switch (op) {
    case ASIN:
    case ACOS:
    case ATANH:
    case ERFINV: *lo = -1, *hi = 1; break;
    case ACOSH: *lo = 1, *hi = 1e6; break;
    case SINH:
    case COSH: *lo = -(f32 ? 90 : 711), *hi = -*lo; break;
    case EXP2: *lo = -(f32 ? 150 : 1075), *hi = f32 ? 129 : 1025; break;
    case LOG2:
    case LOG10: *lo = 0, *hi = 1e30; break;
    case ERF:
    case ERFC: *lo = -10, *hi = 30; break;
    default: *lo = -1e6, *hi = 1e6; break;
    }
}

/* n values of op's domain: uniform, and logarithmic towards its ends and
 * towards 0, in the dtype's precision. */
static double *sweep(unop op, bool f32, int64_t n)
{
    double lo, hi, *x = malloc((size_t)n * sizeof *x);
    float *r = malloc((size_t)n * sizeof *r);
    domain(op, f32, &lo, &hi);
    fill_random(r, (size_t)n, 7 + (unsigned)op);
    for (int64_t i = 0; i < n; i++) {
        double u = (r[i] + 1) / 2; /* [0, 1) */
        switch (i % 4) {
        case 0: x[i] = lo + (hi - lo) * u; break;
        case 1: x[i] = hi - (hi - lo) * ldexp(1, -(int)(u * 50)); break; /* near hi */
        case 2: x[i] = lo + (hi - lo) * ldexp(1, -(int)(u * 50)); break; /* near lo */
        default: x[i] = (r[i] < 0 ? -1 : 1) * ldexp(u, -(int)(i % 40)); break;
        }
        if (f32)
            x[i] = (float)x[i];
    }
    free(r);
    return x;
}

/* op over its sweep in dtype dt: every value within max_ulps of the long
 * double reference; the largest error found is returned. */
static double check_sweep(clt_device *dev, clt_dtype dt, unop op)
{
    bool f32 = dt == CLT_FLOAT32;
    const int64_t n = 40000;
    double *x = sweep(op, f32, n), worst = 0;
    clt_tensor *a = upload(dev, dt, n, x), *r = NULL;
    CHECK(un_fns[op](a, &r));
    cr_assert_eq(clt_tensor_dtype(r), dt);
    double *got = read_as_f64(r);
    for (int64_t i = 0; i < n; i++) {
        double e = ulps(got[i], ref(op, x[i]), f32);
        cr_assert(e <= max_ulps(op), "%s %s(%.17g): got %.17g, want %.20Lg: %.3g ulps",
                  clt_dtype_name(dt), un_names[op], x[i], got[i], ref(op, x[i]), e);
        worst = fmax(worst, e);
    }
    free(got);
    free(x);
    clt_tensor_free(a);
    clt_tensor_free(r);
    return worst;
}

Test(math, sweep_against_the_c_library)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        for (int op = 0; op < NUN; op++)
            check_sweep(dev, dt, op);
    }
}

/* erfinv beside +-1 and at the smallest values, where PyTorch's own loses
 * digits: within max_ulps of the Newton reference too. */
Test(math, erfinv_near_one_and_tiny)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        bool f32 = !d;
        double x[64];
        int n = 0;
        double e = f32 ? FLT_EPSILON : DBL_EPSILON;
        for (int k = 1; k <= 24; k++) {
            x[n++] = 1 - e / 2 * k;
            x[n++] = -(1 - e / 2 * k * k);
        }
        const double tiny[] = {1e-45, -1e-40, 1e-38, 1e-30, 5e-324, 1e-310, 1e-300, 1e-13};
        for (size_t k = 0; k < sizeof tiny / sizeof tiny[0]; k++)
            x[n++] = f32 ? (double)(float)tiny[k] : tiny[k];
        clt_tensor *a = upload(dev, dt, n, x), *r = NULL;
        CHECK(clt_erfinv(a, &r));
        double *got = read_as_f64(r);
        for (int i = 0; i < n; i++) {
            double u = ulps(got[i], erfinv_ref(x[i]), f32);
            cr_assert(u <= max_ulps(ERFINV), "%s erfinv(%.17g): got %.17g, want %.20Lg",
                      clt_dtype_name(dt), x[i], got[i], erfinv_ref(x[i]));
        }
        free(got);
        clt_tensor_free(a);
        clt_tensor_free(r);
    }
}

/* ---- special values ---------------------------------------------------------------- */

static void assert_same(const char *what, double x, double got, double want)
{
    cr_assert((isnan(got) && isnan(want)) || (got == want && signbit(got) == signbit(want)),
              "%s(%.17g): got %.17g, want %.17g", what, x, got, want);
}

#define PI_2 1.5707963267948966192
#define PI 3.1415926535897932385

/* C99's (Annex F) and PyTorch's values at each function's edges; the
 * float32 results are these rounded. */
static const double SX[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5};
#define NSX (sizeof SX / sizeof SX[0])
static const double SV[NUN - 1][NSX] = {
    /*          NaN  inf        -inf        0     -0     1          -1          2       -2     0.5 */
    [ASIN] = {NAN, NAN, NAN, 0.0, -0.0, PI_2, -PI_2, NAN, NAN, 0.52359877559829887308},
    [ACOS] = {NAN, NAN, NAN, PI_2, PI_2, 0.0, PI, NAN, NAN, 1.0471975511965977462},
    [ATAN] = {NAN, PI_2, -PI_2, 0.0, -0.0, 0.78539816339744830962, -0.78539816339744830962,
              1.1071487177940905030, -1.1071487177940905030, 0.46364760900080611621},
    [SINH] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.1752011936438014569, -1.1752011936438014569,
              3.6268604078470187677, -3.6268604078470187677, 0.52109530549374736162},
    [COSH] = {NAN, INFINITY, INFINITY, 1.0, 1.0, 1.5430806348152437785, 1.5430806348152437785,
              3.7621956910836314596, 3.7621956910836314596, 1.1276259652063807852},
    [ASINH] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.88137358701954302523,
               -0.88137358701954302523, 1.4436354751788103425, -1.4436354751788103425,
               0.48121182505960344750},
    [ACOSH] = {NAN, INFINITY, NAN, NAN, NAN, 0.0, NAN, 1.3169578969248167086, NAN, NAN},
    [ATANH] = {NAN, NAN, NAN, 0.0, -0.0, INFINITY, -INFINITY, NAN, NAN,
               0.54930614433405484570},
    [ERF] = {NAN, 1.0, -1.0, 0.0, -0.0, 0.84270079294971486934, -0.84270079294971486934,
             0.99532226501895273416, -0.99532226501895273416, 0.52049987781304653768},
    [ERFC] = {NAN, 0.0, 2.0, 1.0, 1.0, 0.15729920705028513066, 1.8427007929497148693,
              0.0046777349810472658379, 1.9953222650189527342, 0.47950012218695346232},
    [ERFINV] = {NAN, NAN, NAN, 0.0, -0.0, INFINITY, -INFINITY, NAN, NAN,
                0.47693627620446987338},
    [LOG2] = {NAN, INFINITY, NAN, -INFINITY, -INFINITY, 0.0, NAN, 1.0, NAN, -1.0},
    [LOG10] = {NAN, INFINITY, NAN, -INFINITY, -INFINITY, 0.0, NAN, 0.30102999566398119521, NAN,
               -0.30102999566398119521},
    [EXP2] = {NAN, INFINITY, 0.0, 1.0, 1.0, 2.0, 0.5, 4.0, 0.25, 1.4142135623730950488},
};

Test(math, special_values)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        clt_tensor *a = upload(dev, dt, NSX, SX);
        char what[48];
        for (int op = 0; op < SQUARE; op++) {
            clt_tensor *r = NULL;
            CHECK(un_fns[op](a, &r));
            double *got = read_as_f64(r);
            snprintf(what, sizeof what, "%s %s", clt_dtype_name(dt), un_names[op]);
            for (size_t i = 0; i < NSX; i++) {
                double want = d ? SV[op][i] : (double)(float)SV[op][i];
                /* the rounded reference may sit 1 ulp from a correct result */
                if (isfinite(want) && want != 0 && want != 1 && want != 2 && want != 0.5 &&
                    want != 4 && want != 0.25 && want != -1)
                    cr_assert(ulps(got[i], SV[op][i], !d) <= 1, "%s(%g): got %.17g, want %.17g",
                              what, SX[i], got[i], want);
                else
                    assert_same(what, SX[i], got[i], want);
            }
            free(got);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
    }
}

/* Overflow edges: sinh and cosh stay finite while the true value does
 * (PyTorch's vectorised kernels overflow early); exp2 overflows at 2^128
 * and is a denormal, then 0, below 2^-126. */
Test(math, overflow_edges)
{
    clt_device *dev = get_device("cpu");
    const double x[] = {88.7, 89.0, 89.4, 89.5, -89.0, -89.5};
    clt_tensor *a = upload(dev, CLT_FLOAT32, 6, x), *r = NULL;
    for (int op = SINH; op <= COSH; op++) {
        CHECK(un_fns[op](a, &r));
        double *got = read_as_f64(r);
        for (int i = 0; i < 6; i++)
            cr_assert(ulps(got[i], ref(op, (float)x[i]), true) <= max_ulps(op),
                      "%s(%g): got %.9g, want %.9Lg", un_names[op], x[i], got[i],
                      ref(op, (float)x[i]));
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    const double e[] = {127.99, 128.0, -126.0, -140.5, -149.0, -150.0};
    const double want[] = {(float)exp2((float)127.99), INFINITY, 0x1p-126, (float)exp2(-140.5),
                           0x1p-149, 0.0};
    a = upload(dev, CLT_FLOAT32, 6, e);
    CHECK(clt_exp2(a, &r));
    double *got = read_as_f64(r);
    for (int i = 0; i < 6; i++)
        cr_assert(ulps(got[i], want[i], true) <= 1, "exp2(%g): got %.9g, want %.9g", e[i], got[i],
                  want[i]);
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* ---- lanes ------------------------------------------------------------------------- */

/* A 17-element tensor (one 16-wide vector of the CPU kernels and one
 * element of the scalar tail) with one extreme value in one lane: every
 * other element bit for bit as without it, so that no lane's result
 * depends on another's, and the extreme lane within max_ulps of the C
 * library.  (The vector and scalar forms of PoCL's atan, erf, erfc and
 * exp2 may differ in the last bit, both within an ulp: what is compared is
 * the vector against itself.) */
Test(math, lanes_independent)
{
    clt_device *dev = get_device("cpu");
    const double extremes[] = {INFINITY, -INFINITY, NAN, 3e38, -1e30, 1e-45, -0.0, 1.0};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        for (int op = 0; op < NUN; op++) {
            double base[17];
            for (int i = 0; i < 17; i++) {
                base[i] = (i % 2 ? 0.37 : -0.61) * (1 + i * 0.11);
                if (op == ACOSH)
                    base[i] = 1 + fabs(base[i]);
                if (!d)
                    base[i] = (float)base[i];
            }
            clt_tensor *a0 = upload(dev, dt, 17, base), *r0 = NULL;
            CHECK(un_fns[op](a0, &r0));
            double *want = read_as_f64(r0);
            clt_tensor_free(a0);
            clt_tensor_free(r0);
            for (size_t s = 0; s < sizeof extremes / sizeof extremes[0]; s++)
                for (int lane = 0; lane < 16; lane += 5) {
                    double x[17];
                    memcpy(x, base, sizeof x);
                    x[lane] = d ? extremes[s] : (float)extremes[s];
                    clt_tensor *a = upload(dev, dt, 17, x), *r = NULL;
                    CHECK(un_fns[op](a, &r));
                    double *got = read_as_f64(r);
                    char what[64];
                    snprintf(what, sizeof what, "%s %s, %g in lane %d", clt_dtype_name(dt),
                             un_names[op], extremes[s], lane);
                    for (int i = 0; i < 17; i++)
                        if (i != lane)
                            assert_same(what, x[i], got[i], want[i]);
                    cr_assert(ulps(got[lane], ref(op, x[lane]), !d) <= max_ulps(op),
                              "%s: got %.17g, want %.20Lg", what, got[lane], ref(op, x[lane]));
                    free(got);
                    clt_tensor_free(a);
                    clt_tensor_free(r);
                }
            free(want);
        }
    }
}

/* The same for the binary ops, the extreme value in either operand, and
 * against the C library (the builtins' results are correctly rounded for
 * copysign and within 2 ulps for the others). */
Test(math, binary_lanes_and_values)
{
    clt_device *dev = get_device("cpu");
    const double extremes[] = {INFINITY, -INFINITY, NAN, 3e38, -1e-45, -0.0, 0.0};
    for (size_t s = 0; s < sizeof extremes / sizeof extremes[0]; s++)
        for (int side = 0; side < 2; side++) {
            double x[2][17];
            for (int i = 0; i < 17; i++) {
                x[0][i] = (float)((i % 3 - 1) * (0.3 + i * 0.7));
                x[1][i] = (float)(0.25 + i * 0.4 * (i % 2 ? 1 : -1));
            }
            int lane = (int)(s * 5 % 16);
            x[side][lane] = extremes[s];
            int64_t n = 17;
            clt_tensor *a = upload(dev, CLT_FLOAT32, n, x[0]), *b = upload(dev, CLT_FLOAT32, n, x[1]);
            for (int op = 0; op < NBIN; op++) {
                clt_tensor *r = NULL;
                CHECK(bin_fns[op](a, b, &r));
                double *got = read_as_f64(r);
                for (int i = 0; i < 17; i++) {
                    double p = x[0][i], q = x[1][i];
                    long double want = op == ATAN2      ? atan2l(p, q)
                                     : op == HYPOT      ? hypotl(p, q)
                                     : op == COPYSIGN   ? copysignl(p, q)
                                     : isnan(q)         ? NAN
                                     : p == 0           ? 0.0L
                                                        : (long double)p * logl(q);
                    cr_assert(ulps(got[i], want, true) <= 2 &&
                                  (want != 0 || signbit(got[i]) == signbit((double)want)),
                              "%s(%g, %g), %g in lane %d of %c: got %.9g, want %.9Lg",
                              bin_names[op], p, q, extremes[s], lane, "ab"[side], got[i], want);
                }
                free(got);
                clt_tensor_free(r);
            }
            clt_tensor_free(a);
            clt_tensor_free(b);
        }
}

/* ---- logit, nan_to_num, square, lerp, addcmul, addcdiv ------------------------------ */

Test(math, logit_values)
{
    clt_device *dev = get_device("cpu");
    const double x[] = {0.0, -0.0, 1.0, 0.5, 0.25, 1e-7, 0.9999999, -0.5, 1.5, NAN, INFINITY,
                        -INFINITY};
    const int n = sizeof x / sizeof x[0];
    const double eps_v[] = {-1, 0.0, 1e-6, 0.25, 0.75};
    clt_tensor *a = upload(dev, CLT_FLOAT64, n, x);
    for (int k = 0; k < 6; k++) {
        const double *eps = k < 5 ? &eps_v[k] : NULL;
        clt_tensor *r = NULL;
        CHECK(clt_logit(a, eps, &r));
        double *got = read_as_f64(r);
        for (int i = 0; i < n; i++) {
            double lo = eps && *eps >= 0 ? *eps : -INFINITY, hi = 1 - lo;
            double c = isnan(x[i]) ? x[i] : fmin(fmax(x[i], lo), hi);
            double want = log(c / (1 - c));
            cr_assert(close_enough(got[i], want, 1e-15, 0) &&
                          (want != 0 || signbit(got[i]) == signbit(want)),
                      "logit(%g, eps %g): got %.17g, want %.17g", x[i], eps ? *eps : NAN, got[i],
                      want);
        }
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
}

Test(math, nan_to_num_values)
{
    clt_device *dev = get_device("cpu");
    const double x[] = {NAN, INFINITY, -INFINITY, 1.5, -0.0, 1e300};
    const double pos = 7, neg = -9;
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        double big = d ? DBL_MAX : FLT_MAX;
        clt_tensor *a = upload(dev, dt, 6, x), *r = NULL, *r2 = NULL;
        CHECK(clt_nan_to_num(a, 0.0, NULL, NULL, &r));
        CHECK(clt_nan_to_num(a, 2.5, &pos, &neg, &r2));
        double *g = read_as_f64(r), *g2 = read_as_f64(r2);
        /* 1e300 is inf in float32 */
        const double w[6] = {0.0, big, -big, 1.5, -0.0, d ? 1e300 : FLT_MAX};
        const double w2[6] = {2.5, 7, -9, 1.5, -0.0, d ? 1e300 : 7};
        for (int i = 0; i < 6; i++) {
            assert_same("nan_to_num", x[i], g[i], w[i]);
            assert_same("nan_to_num(2.5, 7, -9)", x[i], g2[i], w2[i]);
        }
        free(g);
        free(g2);
        clt_tensor_free(a);
        clt_tensor_free(r);
        clt_tensor_free(r2);
    }
    /* integers come back unchanged, in their dtype */
    const double iv[] = {-3, 0, 7};
    clt_tensor *i = tensor_of(dev, CLT_INT32, 1, (int64_t[]){3}, iv), *r = NULL;
    CHECK(clt_nan_to_num(i, 1.0, &pos, &neg, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    double *g = read_as_f64(r);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(g[k], iv[k]);
    free(g);
    clt_tensor_free(i);
    clt_tensor_free(r);
}

Test(math, dtypes)
{
    clt_device *dev = get_device("cpu");
    const double v[] = {1, 0, 3};
    int64_t n = 3;
    clt_tensor *i32 = tensor_of(dev, CLT_INT32, 1, &n, v), *u8 = tensor_of(dev, CLT_UINT8, 1, &n, v);
    clt_tensor *bl = tensor_of(dev, CLT_BOOL, 1, &n, v), *f = tensor_of(dev, CLT_FLOAT32, 1, &n, v);
    clt_tensor *d = tensor_of(dev, CLT_FLOAT64, 1, &n, v), *r = NULL;
    /* transcendental: integers and bool in float32 */
    for (int op = 0; op < SQUARE; op++) {
        clt_tensor *ins[3] = {i32, u8, bl};
        for (int k = 0; k < 3; k++) {
            CHECK(un_fns[op](ins[k], &r));
            cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "%s of %s", un_names[op],
                         clt_dtype_name(clt_tensor_dtype(ins[k])));
            double *g = read_as_f64(r);
            for (int j = 0; j < 3; j++) {
                double xj = ins[k] == bl ? v[j] != 0 : v[j];
                cr_assert(ulps(g[j], ref(op, xj), true) <= max_ulps(op), "%s(%g) = %g",
                          un_names[op], xj, g[j]);
            }
            free(g);
            clt_tensor_free(r);
        }
    }
    /* square keeps integers and computes bool in int64 */
    CHECK(clt_square(i32, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    clt_tensor_free(r);
    CHECK(clt_square(bl, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    double *g = read_as_f64(r);
    cr_assert(g[0] == 1 && g[1] == 0 && g[2] == 1);
    free(g);
    clt_tensor_free(r);
    /* binary: promoted, then float32 for integers; hypot refuses them */
    CHECK(clt_atan2(i32, u8, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    clt_tensor_free(r);
    CHECK(clt_xlogy(i32, d, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT64);
    clt_tensor_free(r);
    CHECK(clt_copysign(bl, bl, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    clt_tensor_free(r);
    assert_error(clt_hypot(i32, i32, &r), CLT_ERR_DTYPE_MISMATCH, "int32");
    cr_assert_null(r);
    CHECK(clt_hypot(i32, f, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    clt_tensor_free(r);
    /* lerp: one floating dtype */
    assert_error(clt_lerp(f, d, f, &r), CLT_ERR_DTYPE_MISMATCH, "end");
    cr_assert_null(r);
    assert_error(clt_lerp(f, f, d, &r), CLT_ERR_DTYPE_MISMATCH, "weight");
    assert_error(clt_lerp_scalar(i32, i32, 0.5, &r), CLT_ERR_DTYPE_MISMATCH, "int32");
    assert_error(clt_lerp_scalar(f, f, 1e300, &r), CLT_ERR_INVALID_ARGUMENT, "overflow");
    names_only("clt_lerp_scalar");
    /* addcmul: promoted over three, integers truncate value; bool refused */
    CHECK(clt_addcmul(i32, i32, i32, 2.5, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    g = read_as_f64(r);
    for (int j = 0; j < 3; j++)
        cr_assert_eq(g[j], v[j] + 2 * v[j] * v[j]);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_addcmul(u8, i32, f, 1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    clt_tensor_free(r);
    assert_error(clt_addcmul(bl, bl, bl, 1, &r), CLT_ERR_DTYPE_MISMATCH, "bool");
    assert_error(clt_addcmul(u8, u8, u8, -0.5, &r), CLT_ERR_INVALID_ARGUMENT, "uint8");
    assert_error(clt_addcmul(i32, i32, i32, 1e10, &r), CLT_ERR_INVALID_ARGUMENT, "int32");
    /* addcdiv: two integer factors refused, else float */
    assert_error(clt_addcdiv(f, i32, u8, 1, &r), CLT_ERR_DTYPE_MISMATCH, "integer division");
    cr_assert_null(r);
    CHECK(clt_addcdiv(i32, i32, f, 1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    clt_tensor_free(r);
    clt_tensor *all[5] = {i32, u8, bl, f, d};
    for (int k = 0; k < 5; k++)
        clt_tensor_free(all[k]);
}

/* lerp's two branches, addcmul's and addcdiv's order of evaluation,
 * broadcasting over three operands with a 0-d one, and a 0-d float64
 * operand that weighs less than a float32 tensor. */
static void check_ternary(clt_device *dev)
{
    const double sv[] = {1, -2, 3.5}, ev[] = {10, 0.25, -7, 2}, wv[] = {0.25, 0.75};
    clt_tensor *s = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 1}, sv);
    clt_tensor *e = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){1, 4}, ev);
    clt_tensor *w = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){2, 1, 1}, wv), *r = NULL;
    CHECK(clt_lerp(s, e, w, &r));
    assert_shape(r, 3, (int64_t[]){2, 3, 4});
    double *g = read_as_f64(r);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double a = sv[i], b = ev[j], t = wv[k];
                double want = t < 0.5 ? a + t * (b - a) : b - (b - a) * (1 - t);
                cr_assert_eq(g[(k * 3 + i) * 4 + j], want, "lerp(%g, %g, %g)", a, b, t);
            }
    free(g);
    clt_tensor_free(r);
    CHECK(clt_addcdiv(w, s, e, -0.5, &r));
    assert_shape(r, 3, (int64_t[]){2, 3, 4});
    g = read_as_f64(r);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                cr_assert_eq(g[(k * 3 + i) * 4 + j], wv[k] + -0.5 * sv[i] / ev[j]);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_addcmul(w, s, e, 3, &r));
    g = read_as_f64(r);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                cr_assert_eq(g[(k * 3 + i) * 4 + j], wv[k] + 3 * sv[i] * ev[j]);
    free(g);
    clt_tensor_free(r);
    /* a 0-d float64 beside float32 tensors: float32 */
    clt_tensor *z = tensor_of(dev, CLT_FLOAT64, 0, NULL, (double[]){1e-300});
    clt_tensor *f = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){3}, sv);
    CHECK(clt_addcmul(f, z, f, 1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    g = read_as_f64(r);
    for (int j = 0; j < 3; j++)
        cr_assert_eq(g[j], sv[j], "1e-300 is 0 in float32");
    free(g);
    clt_tensor_free(r);
    assert_error(clt_addcmul(f, s, e, 1, &r), CLT_ERR_SHAPE_MISMATCH, "broadcast");
    cr_assert_null(r);
    names_only("clt_addcmul");
    clt_tensor *all[5] = {s, e, w, z, f};
    for (int k = 0; k < 5; k++)
        clt_tensor_free(all[k]);
}

Test(math, ternary_values_and_broadcasting)
{
    check_ternary(get_device("cpu"));
}

/* The kernels' GPU forms (one element per work-item, contiguous and
 * strided) on the CPU device told it is a GPU. */
Test(math, gpu_variants)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    for (int op = 0; op < NUN; op++)
        check_sweep(dev, CLT_FLOAT32, op);
    check_ternary(dev);
}

/* ---- gradients ------------------------------------------------------------------------ */

static clt_status call_logit(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_logit(in[0], ctx, out);
}

static clt_status call_nan_to_num(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_nan_to_num(in[0], 0.0, NULL, NULL, out);
}

static clt_status call_lerp(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_lerp(in[0], in[1], in[2], out);
}

static clt_status call_lerp_scalar(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_lerp_scalar(in[0], in[1], *(const double *)ctx, out);
}

static clt_status call_addcmul(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_addcmul(in[0], in[1], in[2], *(const double *)ctx, out);
}

static clt_status call_addcdiv(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_addcdiv(in[0], in[1], in[2], *(const double *)ctx, out);
}

Test(math, gradients)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    /* inside every domain: (-1, 1) for asin ... erfinv, > 1 for acosh */
    static const double X8[] = {0.7, -0.3, 0.1, -0.45, 0.05, -0.8, 0.6, 0.25};
    static const double P8[] = {1.7, 1.3, 2.1, 1.4, 3.05, 1.8, 2.6, 1.25};
    for (int op = 0; op < NUN; op++) {
        bool pos = op == ACOSH || op == LOG2 || op == LOG10;
        gc_in xs[1] = {{2, {2, 4}, pos ? P8 : X8, 1}};
        gradcheck(dev, call_un, &un_fns[op], 1, xs);
    }
    static const double L8[] = {0.7, 0.3, 0.1, 0.45, 0.05, 0.8, 0.6, 0.25};
    gc_in lx[1] = {{2, {2, 4}, L8, 1}};
    gradcheck(dev, call_logit, NULL, 1, lx);
    const double eps = 0.15; /* no point on a clamp's edge */
    gradcheck(dev, call_logit, &eps, 1, lx);
    gradcheck(dev, call_nan_to_num, NULL, 1, lx);
    /* binary, b broadcast along the rows */
    static const double B4[] = {0.9, -1.2, 2.5, 0.4}, BP4[] = {0.9, 1.2, 2.5, 0.4};
    for (int op = 0; op < NBIN; op++) {
        gc_in xy[2] = {{2, {2, 4}, X8, 1}, {1, {4}, op == XLOGY ? BP4 : B4, 1}};
        gradcheck(dev, call_bin, &bin_fns[op], 2, xy);
    }
    gc_in lerp_in[3] = {{2, {2, 4}, X8, 1}, {1, {4}, B4, 1}, {2, {2, 1}, (double[]){0.3, 0.8}, 1}};
    gradcheck(dev, call_lerp, NULL, 3, lerp_in);
    const double w = 0.7, v = -1.5;
    gradcheck(dev, call_lerp_scalar, &w, 2, lerp_in);
    gc_in addc_in[3] = {{1, {4}, B4, 1}, {2, {2, 4}, X8, 1}, {2, {2, 4}, P8, 1}};
    gradcheck(dev, call_addcmul, &v, 3, addc_in);
    gradcheck(dev, call_addcdiv, &v, 3, addc_in);
}

/* grad_fn names as PyTorch's. */
Test(math, grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    static const char *const names[NUN] = {
        "AsinBackward0",  "AcosBackward0",  "AtanBackward0",  "SinhBackward0",   "CoshBackward0",
        "AsinhBackward0", "AcoshBackward0", "AtanhBackward0", "ErfBackward0",    "ErfcBackward0",
        "ErfinvBackward0", "Log2Backward0", "Log10Backward0", "Exp2Backward0",   "PowBackward0"};
    static const char *const bnames[NBIN] = {"Atan2Backward0", "HypotBackward0",
                                             "CopysignBackward0", "XlogyBackward0"};
    int64_t n = 3;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, &n, (double[]){0.5, 0.25, 0.75}), *r = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    for (int op = 0; op < NUN; op++) {
        CHECK(un_fns[op](a, &r));
        cr_assert_str_eq(clt_grad_fn_name(r), names[op]);
        clt_tensor_free(r);
    }
    for (int op = 0; op < NBIN; op++) {
        CHECK(bin_fns[op](a, a, &r));
        cr_assert_str_eq(clt_grad_fn_name(r), bnames[op]);
        clt_tensor_free(r);
    }
    CHECK(clt_logit(a, NULL, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LogitBackward0");
    clt_tensor_free(r);
    CHECK(clt_nan_to_num(a, 0, NULL, NULL, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "NanToNumBackward0");
    clt_tensor_free(r);
    CHECK(clt_lerp(a, a, a, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LerpBackward1");
    clt_tensor_free(r);
    CHECK(clt_lerp_scalar(a, a, 0.5, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "LerpBackward0");
    clt_tensor_free(r);
    CHECK(clt_addcmul(a, a, a, 1, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "AddcmulBackward0");
    clt_tensor_free(r);
    CHECK(clt_addcdiv(a, a, a, 1, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "AddcdivBackward0");
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* torch's gradients at the edges (x.grad after f(x).sum().backward() in
 * float32, printed by torch 1.13). */
Test(math, gradients_at_the_edges)
{
    clt_device *dev = get_device("cpu");
    const double x[6] = {NAN, INFINITY, -0.0, 1.0, -1.0, 0.0};
    int64_t n = 6;
    const struct {
        un_fn f;
        double want[6];
    } cases[] = {
        {clt_asin, {NAN, NAN, 1, INFINITY, INFINITY, 1}},
        {clt_atanh, {NAN, -0.0, 1, INFINITY, INFINITY, 1}},
        {clt_acosh, {NAN, 0.0, NAN, INFINITY, INFINITY, NAN}},
        {clt_erfinv, {NAN, NAN, 0.88622695207595825, INFINITY, INFINITY, 0.88622695207595825}},
        {clt_log2, {NAN, 0.0, -INFINITY, 1.4426950216293335, -1.4426950216293335, INFINITY}},
        {clt_erf, {NAN, 0.0, 1.128379225730896, 0.41510751843452454, 0.41510751843452454,
                   1.128379225730896}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 1, &n, x), *y = NULL, *l = NULL;
        CHECK(clt_set_requires_grad(t, 1));
        CHECK(cases[c].f(t, &y));
        CHECK(clt_sum(y, &l));
        CHECK(clt_backward(l, NULL, 0));
        float *g = read_grad_f32(t);
        for (int i = 0; i < 6; i++)
            cr_assert((isnan(g[i]) && isnan(cases[c].want[i])) ||
                          close_enough(g[i], cases[c].want[i], 1e-6, 0),
                      "case %zu, x = %g: got %.9g, want %.9g", c, x[i], g[i], cases[c].want[i]);
        free(g);
        clt_tensor_free(t);
        clt_tensor_free(y);
        clt_tensor_free(l);
    }
}

/* ---- bad input ---------------------------------------------------------------------- */

Test(math, bad_input)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3, m = 2;
    clt_tensor *a = NULL, *b = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &m, &b));
    char fn[32];
    for (int op = 0; op < NUN; op++) {
        snprintf(fn, sizeof fn, "clt_%s", un_names[op]);
        r = (clt_tensor *)&r;
        assert_error(un_fns[op](NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
        cr_assert_null(r);
        names_only(fn);
        assert_error(un_fns[op](a, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    }
    for (int op = 0; op < NBIN; op++) {
        snprintf(fn, sizeof fn, "clt_%s", bin_names[op]);
        r = (clt_tensor *)&r;
        assert_error(bin_fns[op](a, b, &r), CLT_ERR_SHAPE_MISMATCH, "broadcast");
        cr_assert_null(r);
        names_only(fn);
        assert_error(bin_fns[op](a, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    }
    r = (clt_tensor *)&r;
    assert_error(clt_logit(NULL, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(r);
    names_only("clt_logit");
    r = (clt_tensor *)&r;
    assert_error(clt_nan_to_num(NULL, 0, NULL, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(r);
    names_only("clt_nan_to_num");
    assert_error(clt_lerp(a, a, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_lerp(a, b, a, &r), CLT_ERR_SHAPE_MISMATCH, NULL);
    names_only("clt_lerp");
    assert_error(clt_addcdiv(a, NULL, a, 1, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor_free(a);
    clt_tensor_free(b);
}
