/* test_complex4.c: the elementary functions of complex tensors (exp ...
 * sigmoid), pow, complex division by zero and polar with a negative
 * magnitude: values against C99 <complex.h> in double (special values
 * compared exactly: nans, infinities, signed zeros), gradients (float64
 * leaves viewed as complex128) against central differences with gradcheck,
 * and their own gradients with gradgradcheck. */
#include <complex.h>
#include <math.h>

#include "gradcheck.h"

/* A complex tensor of dtype dt (complex64 or complex128) from n complex
 * doubles. */
static clt_tensor *ctensor(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                           const double complex *v, size_t n)
{
    clt_tensor *t = NULL;
    if (dt == CLT_COMPLEX128) {
        CHECK(clt_tensor_from_host(dev, dt, nd, shape, v, &t));
        return t;
    }
    float complex *f = malloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float complex)v[i];
    CHECK(clt_tensor_from_host(dev, dt, nd, shape, f, &t));
    free(f);
    return t;
}

/* t (complex64 or complex128) read back as complex doubles. */
static double complex *read_c(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double complex *out = malloc((n ? n : 1) * sizeof *out);
    if (clt_tensor_dtype(t) == CLT_COMPLEX128) {
        CHECK(clt_tensor_read(t, out, n * sizeof *out));
    } else {
        cr_assert_eq(clt_tensor_dtype(t), CLT_COMPLEX64);
        float complex *f = malloc((n ? n : 1) * sizeof *f);
        CHECK(clt_tensor_read(t, f, n * sizeof *f));
        for (size_t i = 0; i < n; i++)
            out[i] = f[i];
        free(f);
    }
    return out;
}

/* One part: nan where want is nan, equal (signed zeros included) where
 * exact or want is infinite, else within tol of want relative to scale. */
static bool part_ok(double got, double want, double scale, double tol, bool exact)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want) || (exact && (want == 0 || got == 0)))
        return got == want && signbit(got) == signbit(want);
    return fabs(got - want) <= tol * scale;
}

static void assert_parts(double complex got, double complex want, double tol, bool exact,
                         const char *what, double complex z)
{
    double scale = fmax(cabs(want), 1e-300);
    if (isnan(scale) || isinf(scale))
        scale = 1;
    cr_assert(part_ok(creal(got), creal(want), scale, tol, exact) &&
                  part_ok(cimag(got), cimag(want), scale, tol, exact),
              "%s(%g%+gi): %.17g%+.17gi, want %.17g%+.17gi", what, creal(z), cimag(z),
              creal(got), cimag(got), creal(want), cimag(want));
}

typedef clt_status (*unary_op)(const clt_tensor *, clt_tensor **);

static double complex c_log2(double complex z)
{
    return clog(z) / M_LN2;
}

static double complex c_log10(double complex z)
{
    return clog(z) / M_LN10;
}

static double complex c_log1p(double complex z)
{
    return clog(1 + z);
}

static double complex c_expm1(double complex z)
{
    return cexp(z) - 1;
}

static double complex c_rsqrt(double complex z)
{
    return 1 / csqrt(z);
}

static double complex c_sigmoid(double complex z)
{
    return 1 / (1 + cexp(-z));
}

static const struct {
    const char *name;
    unary_op op;
    double complex (*ref)(double complex);
    bool exact; /* C99's special values, which the kernel gives */
} fns[] = {
    {"exp", clt_exp, cexp, true},          {"log", clt_log, clog, true},
    {"sqrt", clt_sqrt, csqrt, true},       {"sin", clt_sin, csin, false},
    {"cos", clt_cos, ccos, false},         {"tan", clt_tan, ctan, false},
    {"sinh", clt_sinh, csinh, false},      {"cosh", clt_cosh, ccosh, false},
    {"tanh", clt_tanh, ctanh, false},      {"asin", clt_asin, casin, true},
    {"acos", clt_acos, cacos, true},       {"atan", clt_atan, catan, true},
    {"asinh", clt_asinh, casinh, true},    {"acosh", clt_acosh, cacosh, true},
    {"atanh", clt_atanh, catanh, true},    {"log2", clt_log2, c_log2, true},
    {"log10", clt_log10, c_log10, true},   {"log1p", clt_log1p, c_log1p, false},
    {"expm1", clt_expm1, c_expm1, false},  {"rsqrt", clt_rsqrt, c_rsqrt, false},
    {"sigmoid", clt_sigmoid, c_sigmoid, false},
};
#define NFNS (sizeof fns / sizeof fns[0])

Test(complex4, elementary_functions_values)
{
    clt_device *dev = get_device("cpu");
    enum { N = 48 };
    double complex v[N];
    unsigned seed = 5;
    for (int i = 0; i < N; i++) {
        double p[2];
        for (int k = 0; k < 2; k++) {
            seed = seed * 1103515245u + 12345u;
            p[k] = -3 + (double)((seed >> 8) % 6001) / 1000.0;
        }
        /* a third of them large (up to 3e3, 3e6), a few tiny */
        double s = i < 32 ? 1 : i < 40 ? 1e3 : i < 44 ? 1e6 : 1e-5;
        v[i] = s * (p[0] + I * p[1]);
    }
    v[0] = 0.5 + 1e-9 * I; /* near the real axis, inside asin's domain */
    v[1] = 2 - 1e-9 * I;   /* near acos's cut */
    v[2] = 1e-9 + 0.9 * I; /* near asinh's cut */
    v[3] = 0.999 + 0.001 * I;
    int64_t n = N;
    clt_dtype dts[2] = {CLT_COMPLEX128, CLT_COMPLEX64};
    for (int d = 0; d < 2; d++) {
        clt_tensor *z = ctensor(dev, dts[d], 1, &n, v, N);
        double complex *zin = read_c(z); /* the inputs rounded to the dtype */
        double tol = d == 0 ? 1e-13 : 2e-6;
        for (size_t f = 0; f < NFNS; f++) {
            clt_tensor *r = NULL;
            cr_assert_eq(fns[f].op(z, &r), CLT_OK, "%s: %s", fns[f].name, clt_last_error());
            cr_assert_eq(clt_tensor_dtype(r), dts[d]);
            assert_shape(r, 1, &n);
            double complex *got = read_c(r);
            for (int i = 0; i < N; i++) {
                double complex want = fns[f].ref(zin[i]);
                /* float32 overflows where double does not (exp(3e3)) */
                if (d == 1 && (fabs(creal(want)) > 1e37 || fabs(cimag(want)) > 1e37))
                    continue;
                /* exp(-z) overflows: 1 / (1 + inf) is nan, as torch's */
                if (f == NFNS - 1 && creal(zin[i]) < -80)
                    continue;
                /* the references lose what log1p and expm1 keep near 0 */
                double t = (f == 17 || f == 18) && cabs(zin[i]) < 1e-3 ? fmax(tol, 1e-9) : tol;
                assert_parts(got[i], want, t, false, fns[f].name, zin[i]);
            }
            free(got);
            clt_tensor_free(r);
        }
        free(zin);
        clt_tensor_free(z);
    }
}

/* log1p and expm1 near 0 keep the digits that log(1 + z) and exp(z) - 1
 * lose: against their series. */
Test(complex4, log1p_expm1_small_arguments)
{
    clt_device *dev = get_device("cpu");
    double complex v[3] = {1e-10 + 2e-10 * I, -3e-12 * I, 1e-7 - 1e-7 * I};
    int64_t n = 3;
    clt_tensor *z = ctensor(dev, CLT_COMPLEX128, 1, &n, v, 3), *a = NULL, *b = NULL;
    CHECK(clt_log1p(z, &a));
    CHECK(clt_expm1(z, &b));
    double complex *ga = read_c(a), *gb = read_c(b);
    for (int i = 0; i < 3; i++) {
        double complex l = v[i] - v[i] * v[i] / 2 + v[i] * v[i] * v[i] / 3;
        double complex e = v[i] + v[i] * v[i] / 2 + v[i] * v[i] * v[i] / 6;
        assert_parts(ga[i], l, 1e-15, false, "log1p", v[i]);
        assert_parts(gb[i], e, 1e-15, false, "expm1", v[i]);
    }
    free(ga);
    free(gb);
    clt_tensor *ts[] = {z, a, b};
    for (size_t i = 0; i < 3; i++)
        clt_tensor_free(ts[i]);
}

/* Subnormal arguments, and atanh and atan next to their poles, where the
 * intermediate |z|, (|x| + |z|) / 2 or |1 - z|^2 underflows: against
 * glibc's (every function of fns[] at each, both dtypes; sqrt(1e-320 +
 * 1e-320i) was off in the fifth digit, atanh(1 + 1e-200i) infinite). */
Test(complex4, subnormal_and_near_pole_arguments)
{
    clt_device *dev = get_device("cpu");
    const double complex v128[] = {1e-320 + 1e-320 * I, -3e-321 + 5e-322 * I,
                                   1e-310 - 2e-310 * I, 4e-308 + 1e-308 * I,
                                   1 + 1e-200 * I,      1 - 1e-320 * I,
                                   -1 + 1e-300 * I,     1e-300 + 1 * I,
                                   -1e-320 - 1 * I};
    const double complex v64[] = {3e-45 + 1e-44 * I, -1e-40 + 2e-41 * I, 1 + 1e-30 * I,
                                  1e-30 - 1 * I};
    const double complex *vs[2] = {v128, v64};
    int64_t ns[2] = {sizeof v128 / sizeof v128[0], sizeof v64 / sizeof v64[0]};
    clt_dtype dts[2] = {CLT_COMPLEX128, CLT_COMPLEX64};
    for (int d = 0; d < 2; d++) {
        clt_tensor *z = ctensor(dev, dts[d], 1, &ns[d], vs[d], (size_t)ns[d]);
        double complex *zin = read_c(z);
        double tol = d == 0 ? 1e-13 : 2e-6;
        for (size_t f = 0; f < NFNS; f++) {
            clt_tensor *r = NULL;
            cr_assert_eq(fns[f].op(z, &r), CLT_OK, "%s: %s", fns[f].name, clt_last_error());
            double complex *got = read_c(r);
            for (int64_t i = 0; i < ns[d]; i++) {
                double complex want = fns[f].ref(zin[i]);
                /* the references lose what log1p and expm1 keep, and
                 * rsqrt's 1 / sqrt overflows in float32 */
                if (f == 17 || f == 18 || (d == 1 && cabs(want) > 1e37))
                    continue;
                assert_parts(got[i], want, tol, false, fns[f].name, zin[i]);
            }
            free(got);
            clt_tensor_free(r);
        }
        free(zin);
        clt_tensor_free(z);
    }
}

/* Zeros, infinities and nans: C99 Annex G's values (glibc's, torch 1.13's
 * for most), exactly, for the functions that give them. */
Test(complex4, special_values_as_c99)
{
    clt_device *dev = get_device("cpu");
    const double inf = INFINITY, nan = NAN;
    double re[] = {0, -0.0, 0, -0.0, inf, -inf, 0, inf, -inf, nan, 0, 1, inf, -inf, 1, -1, -1,
                   2, -2, 1e30, 1, 0, -0.0, nan, nan, 2};
    double im[] = {0, 0, -0.0, -0.0, 0, 0, inf, inf, inf, 0, nan, inf, 1, 1, 0, 0, -0.0,
                   0, -0.0, 1e30, nan, 2, -0.5, inf, 1, -0.0};
    enum { N = sizeof re / sizeof re[0] };
    double complex v[N];
    for (int i = 0; i < N; i++)
        v[i] = CMPLX(re[i], im[i]);
    int64_t n = N;
    for (int d = 0; d < 2; d++) {
        clt_tensor *z = ctensor(dev, d ? CLT_COMPLEX64 : CLT_COMPLEX128, 1, &n, v, N);
        for (size_t f = 0; f < NFNS; f++) {
            if (!fns[f].exact)
                continue;
            clt_tensor *r = NULL;
            CHECK(fns[f].op(z, &r));
            double complex *got = read_c(r);
            for (int i = 0; i < N; i++) {
                if (d && (i == 19)) /* 1e30 + 1e30 i overflows float32 */
                    continue;
                double complex want = fns[f].ref(v[i]);
                if (d && !isnan(creal(want)) && !isinf(creal(want)) && creal(want) != 0)
                    want = CMPLX((float)creal(want), cimag(want));
                if (d && !isnan(cimag(want)) && !isinf(cimag(want)) && cimag(want) != 0)
                    want = CMPLX(creal(want), (float)cimag(want));
                assert_parts(got[i], want, d ? 2e-7 : 1e-15, true, fns[f].name, v[i]);
            }
            free(got);
            clt_tensor_free(r);
        }
        clt_tensor_free(z);
    }
}

/* torch 1.13 divides as (ac + bd) / (c^2 + d^2): a zero divisor, or one
 * with an infinite part, gives nan + nan i whatever the dividend; Smith's
 * method elsewhere. */
Test(complex4, division_by_zero_is_nan)
{
    clt_device *dev = get_device("cpu");
    const double inf = INFINITY;
    double complex a[6] = {1 + I, 0, CMPLX(inf, 0), CMPLX(1, inf), -1, 3 - 4 * I};
    double complex b[6] = {0, CMPLX(-0.0, 0), CMPLX(0, -0.0), CMPLX(inf, 0), CMPLX(inf, inf),
                           CMPLX(2, 1e-300)};
    int64_t n = 6;
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_COMPLEX64 : CLT_COMPLEX128;
        clt_tensor *x = ctensor(dev, dt, 1, &n, a, 6), *y = ctensor(dev, dt, 1, &n, b, 6),
                   *q = NULL, *zr = NULL, *q2 = NULL, *q3 = NULL;
        CHECK(clt_div(x, y, &q));
        double complex *g = read_c(q);
        for (int i = 0; i < 5; i++)
            cr_assert(isnan(creal(g[i])) && isnan(cimag(g[i])), "[%d] %g%+gi", i, creal(g[i]),
                      cimag(g[i]));
        /* (3 - 4i) / (2 + 1e-300 i): finite (0 in float32's divisor part) */
        assert_parts(g[5], (3 - 4 * I) / 2, 1e-7, false, "div", a[5]);
        free(g);
        /* a real zero divisor, tensor and scalar */
        CHECK(clt_zeros(dev, d ? CLT_FLOAT32 : CLT_FLOAT64, 0, NULL, &zr));
        CHECK(clt_div(x, zr, &q2));
        CHECK(clt_div_scalar(x, 0.0, &q3));
        double complex *g2 = read_c(q2), *g3 = read_c(q3);
        for (int i = 0; i < 6; i++)
            cr_assert(isnan(creal(g2[i])) && isnan(cimag(g2[i])) && isnan(creal(g3[i])) &&
                          isnan(cimag(g3[i])),
                      "[%d] %g%+gi, %g%+gi", i, creal(g2[i]), cimag(g2[i]), creal(g3[i]),
                      cimag(g3[i]));
        free(g2);
        free(g3);
        clt_tensor *ts[] = {x, y, q, zr, q2, q3};
        for (size_t i = 0; i < 6; i++)
            clt_tensor_free(ts[i]);
    }
}

/* torch.polar(-1., 0.) is -1 - 0i: abs cos(angle) + i abs sin(angle), the
 * sign of a negative magnitude kept. */
Test(complex4, polar_with_a_negative_magnitude)
{
    clt_device *dev = get_device("cpu");
    double m[3] = {-1, -2, -0.5}, t[3] = {0, 1, -2.5};
    int64_t n = 3;
    clt_tensor *a = NULL, *b = NULL, *z = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, m, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, t, &b));
    CHECK(clt_polar(a, b, &z));
    double complex *g = read_c(z);
    for (int i = 0; i < 3; i++)
        assert_parts(g[i], CMPLX(m[i] * cos(t[i]), m[i] * sin(t[i])), 1e-15, true, "polar",
                     CMPLX(m[i], t[i]));
    cr_assert(signbit(cimag(g[0])), "polar(-1, 0): %g%+gi", creal(g[0]), cimag(g[0]));
    free(g);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(z);
}

/* pow: z ** s with torch's exact forms for s 0, 1, 2, 3, -1, -2, 0.5, -0.5
 * and cpow otherwise, s ** z, and tensor ** tensor with a complex or real
 * operand on either side. */
Test(complex4, pow_values)
{
    clt_device *dev = get_device("cpu");
    double complex v[5] = {1 + I, 2, -1, 0.5 - 2 * I, -0.3 + 0.7 * I};
    double complex e[5] = {2 - I, 0.5, 1 + 2 * I, -1.5, 3};
    double er[5] = {0.5, 2, -1.5, 3, 0.25};
    int64_t n = 5;
    clt_tensor *z = ctensor(dev, CLT_COMPLEX128, 1, &n, v, 5);
    const double ss[] = {0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, -1.3};
    for (size_t k = 0; k < sizeof ss / sizeof ss[0]; k++) {
        double s = ss[k];
        clt_tensor *p = NULL, *q = NULL;
        CHECK(clt_pow_scalar(z, s, &p));
        CHECK(clt_rpow_scalar(z, fabs(s) + 0.5, &q));
        double complex *gp = read_c(p), *gq = read_c(q);
        for (int i = 0; i < 5; i++) {
            double complex want = s == 0   ? 1
                                  : s == 2 ? v[i] * v[i]
                                  : s == 3 ? v[i] * v[i] * v[i]
                                           : cpow(v[i], s);
            assert_parts(gp[i], want, 1e-14, false, "pow_scalar", v[i]);
            assert_parts(gq[i], cpow(fabs(s) + 0.5, v[i]), 1e-14, false, "rpow_scalar", v[i]);
        }
        free(gp);
        free(gq);
        clt_tensor_free(p);
        clt_tensor_free(q);
    }
    /* exact products: (1 + i)^2 = 2i, (1 + i)^3 = -2 + 2i */
    clt_tensor *sq = NULL, *cu = NULL;
    CHECK(clt_pow_scalar(z, 2, &sq));
    CHECK(clt_pow_scalar(z, 3, &cu));
    double complex *gs = read_c(sq), *gc = read_c(cu);
    cr_assert(gs[0] == 2 * I && gc[0] == -2 + 2 * I, "%g%+gi %g%+gi", creal(gs[0]), cimag(gs[0]),
              creal(gc[0]), cimag(gc[0]));
    free(gs);
    free(gc);
    clt_tensor_free(sq);
    clt_tensor_free(cu);
    clt_tensor *w = ctensor(dev, CLT_COMPLEX64, 1, &n, e, 5), *x = NULL, *p1 = NULL, *p2 = NULL,
               *p3 = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, er, &x));
    CHECK(clt_pow(z, w, &p1)); /* complex128 ** complex64 */
    CHECK(clt_pow(w, x, &p2)); /* complex64 ** float64: complex128, as torch */
    CHECK(clt_pow(x, z, &p3));
    cr_assert_eq(clt_tensor_dtype(p1), CLT_COMPLEX128);
    cr_assert_eq(clt_tensor_dtype(p2), CLT_COMPLEX128);
    cr_assert_eq(clt_tensor_dtype(p3), CLT_COMPLEX128);
    double complex *g1 = read_c(p1), *g2 = read_c(p2), *g3 = read_c(p3), *we = read_c(w);
    for (int i = 0; i < 5; i++) {
        assert_parts(g1[i], cpow(v[i], we[i]), 1e-13, false, "pow", v[i]);
        assert_parts(g2[i], cpow(we[i], er[i]), 1e-13, false, "pow", we[i]);
        assert_parts(g3[i], cpow(er[i], v[i]), 1e-13, false, "pow", v[i]);
    }
    free(g1);
    free(g2);
    free(g3);
    free(we);
    clt_tensor *ts[] = {z, w, x, p1, p2, p3};
    for (size_t i = 0; i < 6; i++)
        clt_tensor_free(ts[i]);
}

/* take (flat indices, negative ones wrapping, the index's shape) and
 * index_fill (a real value: the imaginary parts of the filled slices 0) of
 * complex tensors, against host indexing. */
Test(complex4, take_and_index_fill_values)
{
    clt_device *dev = get_device("cpu");
    double complex v[6] = {1 + 2 * I, 3 - I, 0.5 * I, -2, 4 + 4 * I, -1 - 3 * I};
    int64_t shape[2] = {2, 3}, ishape[2] = {2, 2}, two = 2;
    int64_t iv[4] = {-1, 0, 4, 2}, fv[2] = {2, 0};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_COMPLEX64 : CLT_COMPLEX128;
        clt_tensor *z = ctensor(dev, dt, 2, shape, v, 6), *ix = NULL, *fx = NULL, *t = NULL,
                   *f = NULL, *t0 = NULL, *zt = NULL, *tt = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 2, ishape, iv, &ix));
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &two, fv, &fx));
        CHECK(clt_take(z, ix, &t));
        cr_assert_eq(clt_tensor_dtype(t), dt);
        assert_shape(t, 2, ishape);
        double complex *g = read_c(t);
        for (int i = 0; i < 4; i++) {
            double complex want = v[(iv[i] + 6) % 6];
            cr_assert(g[i] == want, "take [%d]: %g%+gi", i, creal(g[i]), cimag(g[i]));
        }
        free(g);
        /* a transposed view: take reads it in its logical order */
        CHECK(clt_transpose(z, 0, 1, &zt));
        CHECK(clt_take(zt, ix, &tt));
        g = read_c(tt);
        for (int i = 0; i < 4; i++) {
            int k = (int)((iv[i] + 6) % 6); /* zt is [3, 2]: element k is z[k % 2][k / 2] */
            cr_assert(g[i] == v[(k % 2) * 3 + k / 2], "take of a view [%d]", i);
        }
        free(g);
        CHECK(clt_take(z, fx, &t0)); /* 1-D index */
        CHECK(clt_index_fill(z, 1, fx, 2.5, &f));
        g = read_c(f);
        for (int i = 0; i < 6; i++) {
            double complex want = i % 3 == 1 ? v[i] : 2.5;
            cr_assert(g[i] == want && !signbit(cimag(g[i])) == !signbit(cimag(want)),
                      "index_fill [%d]: %g%+gi", i, creal(g[i]), cimag(g[i]));
        }
        free(g);
        clt_tensor *ts[] = {z, ix, fx, t, f, t0, zt, tt};
        for (size_t i = 0; i < 8; i++)
            clt_tensor_free(ts[i]);
    }
}

/* index_put and put of complex tensors (accumulating or not) through the
 * real views; a real values tensor is refused, as torch's. */
Test(complex4, index_put_and_put_values)
{
    clt_device *dev = get_device("cpu");
    double complex v[4] = {1 + I, 2 * I, 3, 4}, w[2] = {5 * I, 6};
    int64_t shape[2] = {2, 2}, two = 2, iv[2] = {1, 0}, pv[2] = {-1, 0};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_COMPLEX64 : CLT_COMPLEX128;
        clt_tensor *z = ctensor(dev, dt, 2, shape, v, 4), *vals = ctensor(dev, dt, 1, &two, w, 2);
        clt_tensor *ix = NULL, *px = NULL, *a = NULL, *b = NULL, *re = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &two, iv, &ix));
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &two, pv, &px));
        const clt_tensor *idx[1] = {ix};
        CHECK(clt_index_put(z, idx, 1, vals, 1, &a)); /* rows 1 and 0 += w */
        CHECK(clt_put(z, px, vals, 0, &b));            /* flat -1 and 0 = w */
        double complex *ga = read_c(a), *gb = read_c(b);
        for (int i = 0; i < 4; i++) {
            double complex wa = v[i] + w[i % 2]; /* w broadcast along each row */
            double complex wb = i == 3 ? w[0] : i == 0 ? w[1] : v[i];
            cr_assert(ga[i] == wa, "index_put [%d]: %g%+gi", i, creal(ga[i]), cimag(ga[i]));
            cr_assert(gb[i] == wb, "put [%d]: %g%+gi", i, creal(gb[i]), cimag(gb[i]));
        }
        free(ga);
        free(gb);
        CHECK(clt_real(vals, &re));
        clt_tensor *o = (clt_tensor *)&o;
        assert_error(clt_index_put(z, idx, 1, re, 0, &o), CLT_ERR_DTYPE_MISMATCH,
                     "dtypes match");
        cr_assert_null(o);
        clt_tensor *ts[] = {z, vals, ix, px, a, b, re};
        for (size_t i = 0; i < 7; i++)
            clt_tensor_free(ts[i]);
    }
}

/* in[0] a float64 [3, 2, 2] viewed as complex z (real parts in [0.2, 1.2],
 * imaginary in [0.1, 0.9]: away from every cut and pole), in[1] a float64
 * [3, 2] x in [0.5, 1.5]: kind 0 .. NFNS - 1 the function fns[kind] of z,
 * then pow_scalar(z, 2.5), pow_scalar(z, 3), pow_scalar(z, -0.5),
 * rpow_scalar(z, 1.7), pow(z, z * 0.5), pow(z, x), pow(x, z), take(z,
 * [-1, 2, 2]), index_fill(z, 0, [-1, 2, 2], 1.5); complex results through
 * their real views. */
static clt_status c4_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out, size_t *m)
{
    (void)n;
    int kind = *(const int *)user;
    clt_tensor *z = NULL, *r = NULL, *t = NULL;
    clt_status st = clt_view_as_complex(in[0], &z);
    int k = kind - (int)NFNS;
    if (st == CLT_OK) {
        if (k < 0)
            st = fns[kind].op(z, &r);
        else if (k < 3)
            st = clt_pow_scalar(z, k == 0 ? 2.5 : k == 1 ? 3 : -0.5, &r);
        else if (k == 3)
            st = clt_rpow_scalar(z, 1.7, &r);
        else if (k == 4) {
            st = clt_mul_scalar(z, 0.5, &t);
            if (st == CLT_OK)
                st = clt_pow(z, t, &r);
        } else if (k < 7) {
            st = k == 5 ? clt_pow(z, in[1], &r) : clt_pow(in[1], z, &r);
        } else {
            int64_t iv[3] = {-1, 2, 2}, three = 3; /* 2 twice: its gradient sums */
            st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 1, &three, iv, &t);
            if (st == CLT_OK)
                st = k == 7 ? clt_take(z, t, &r) : clt_index_fill(z, 0, t, 1.5, &r);
        }
    }
    if (st == CLT_OK)
        st = clt_view_as_real(r, &out[0]);
    *m = st == CLT_OK;
    clt_tensor_free(z);
    clt_tensor_free(r);
    clt_tensor_free(t);
    return st;
}

Test(complex4, gradcheck_and_gradgradcheck)
{
    clt_device *dev = get_device("cpu");
    int64_t sz[3] = {3, 2, 2}, sx[2] = {3, 2};
    double zv[12], xv[6];
    unsigned seed = 3;
    for (int i = 0; i < 12; i++) {
        seed = seed * 1103515245u + 12345u;
        double u = (double)((seed >> 8) % 1001) / 1000.0;
        zv[i] = i % 2 ? 0.1 + 0.8 * u : 0.2 + u;
    }
    for (int i = 0; i < 6; i++)
        xv[i] = 0.5 + 0.2 * i;
    for (int kind = 0; kind < (int)NFNS + 9; kind++) {
        clt_tensor *in[2] = {NULL, NULL};
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, sz, zv, &in[0]));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, sx, xv, &in[1]));
        CHECK(clt_set_requires_grad(in[0], 1));
        CHECK(clt_set_requires_grad(in[1], 1));
        clt_status st = clt_gradcheck(c4_fn, &kind, in, 2, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        /* the real index_fill's formula does not record under create_graph */
        st = kind == (int)NFNS + 8 ? CLT_OK : clt_gradgradcheck(c4_fn, &kind, in, 2, NULL, 0, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        clt_tensor_free(in[0]);
        clt_tensor_free(in[1]);
    }
}

/* A complex leaf's gradient is dL/dz* (dL/dx + i dL/dy): L = sum |sin(z)
 * log(z)|^2 against central differences of the parts; torch's grad_fn
 * names. */
static double c4_leaf_loss(clt_device *dev, const double complex *v, int64_t n, bool grad,
                           double complex *g)
{
    clt_tensor *z = ctensor(dev, CLT_COMPLEX128, 1, &n, v, (size_t)n), *s = NULL, *l = NULL,
               *p = NULL, *a = NULL, *a2 = NULL, *sum = NULL;
    if (grad)
        CHECK(clt_set_requires_grad(z, 1));
    CHECK(clt_sin(z, &s));
    CHECK(clt_log(z, &l));
    if (grad) {
        cr_assert_str_eq(clt_grad_fn_name(s), "SinBackward0");
        cr_assert_str_eq(clt_grad_fn_name(l), "LogBackward0");
    }
    CHECK(clt_mul(s, l, &p));
    CHECK(clt_abs(p, &a));
    CHECK(clt_mul(a, a, &a2));
    CHECK(clt_sum(a2, &sum));
    double val = 0;
    CHECK(clt_tensor_item(sum, &val));
    if (grad) {
        CHECK(clt_backward(sum, NULL, 0));
        clt_tensor *gz = NULL;
        CHECK(clt_grad(z, &gz));
        cr_assert_eq(clt_tensor_dtype(gz), CLT_COMPLEX128);
        CHECK(clt_tensor_read(gz, g, (size_t)n * sizeof *g));
        clt_tensor_free(gz);
    }
    clt_tensor *ts[] = {z, s, l, p, a, a2, sum};
    for (size_t i = 0; i < 7; i++)
        clt_tensor_free(ts[i]);
    return val;
}

Test(complex4, complex_leaf_gradient_is_the_conjugate_wirtinger_one)
{
    clt_device *dev = get_device("cpu");
    double complex v[4] = {0.3 + 0.4 * I, -0.7 + 0.1 * I, 0.9 - 0.5 * I, 0.2 + 0.8 * I};
    double complex g[4];
    c4_leaf_loss(dev, v, 4, true, g);
    const double h = 1e-6;
    for (int k = 0; k < 4; k++) {
        double complex want = 0;
        for (int part = 0; part < 2; part++) {
            double complex p[4], q[4], step = part ? h * I : h;
            for (int j = 0; j < 4; j++)
                p[j] = q[j] = v[j];
            p[k] += step;
            q[k] -= step;
            double d = (c4_leaf_loss(dev, p, 4, false, NULL) -
                        c4_leaf_loss(dev, q, 4, false, NULL)) / (2 * h);
            want += part ? I * d : d;
        }
        cr_assert(cabs(g[k] - want) < 1e-6, "z[%d]: %g%+gi, want %g%+gi", k, creal(g[k]),
                  cimag(g[k]), creal(want), cimag(want));
    }
}

Test(complex4, refusals_leave_outputs_null)
{
    clt_device *dev = get_device("cpu");
    double complex v[2] = {1 + I, -2};
    int64_t n = 2;
    clt_tensor *z = ctensor(dev, CLT_COMPLEX64, 1, &n, v, 2), *h = NULL;
    clt_tensor *o = (clt_tensor *)&o;
    /* erf has no complex form, in torch either */
    cr_assert_eq(clt_erf(z, &o), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(o);
    cr_assert(strstr(clt_last_error(), "complex"), "%s", clt_last_error());
    CHECK(clt_zeros(dev, CLT_FLOAT16, 1, &n, &h));
    o = (clt_tensor *)&o;
    assert_error(clt_pow(z, h, &o), CLT_ERR_DTYPE_UNSUPPORTED, "float16");
    cr_assert_null(o);
    o = (clt_tensor *)&o;
    assert_error(clt_exp(NULL, &o), CLT_ERR_NULL_ARGUMENT, "clt_exp");
    cr_assert_null(o);
    clt_tensor *fi = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, &n, &fi));
    o = (clt_tensor *)&o;
    cr_assert_neq(clt_take(z, fi, &o), CLT_OK);
    cr_assert_null(o);
    cr_assert(strstr(clt_last_error(), "clt_take"), "%s", clt_last_error());
    o = (clt_tensor *)&o;
    cr_assert_neq(clt_index_fill(z, 3, fi, 1.0, &o), CLT_OK);
    cr_assert_null(o);
    cr_assert(strstr(clt_last_error(), "clt_index_fill"), "%s", clt_last_error());
    clt_tensor_free(fi);
    clt_tensor_free(z);
    clt_tensor_free(h);
}

/* torch.pow(z, 0.5+1j), z ** (2-1j): cpow (exp(s log z)) in the result
 * dtype; 0 to a power with a positive real part is 0, as std::pow's; a real
 * float64 tensor gives complex128 (float32 complex64); an imaginary part 0
 * takes clt_pow_scalar's forms (2+0j squares); float16 is refused as torch's
 * ComplexHalf. */
Test(complex4, pow_scalar_complex)
{
    clt_device *dev = get_device("cpu");
    double complex v[6] = {1 + 2 * I, -0.5 + 0.1 * I, 0, 3 - I, -2, 1e-3 + 4e3 * I};
    double complex s[4] = {0.5 + 1 * I, 2 - 1 * I, -1.5 + 0.25 * I, 2};
    int64_t n = 6;
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_COMPLEX64 : CLT_COMPLEX128;
        clt_tensor *z = ctensor(dev, dt, 1, &n, v, 6);
        for (int k = 0; k < 4; k++) {
            clt_tensor *p = NULL;
            CHECK(clt_pow_scalar_complex(z, creal(s[k]), cimag(s[k]), &p));
            cr_assert_eq(clt_tensor_dtype(p), dt);
            double complex *g = read_c(p);
            for (int i = 0; i < 6; i++) {
                /* the input as the dtype holds it */
                double complex zi = d ? CMPLX((float)creal(v[i]), (float)cimag(v[i])) : v[i];
                double complex want = zi == 0 && creal(s[k]) > 0 ? 0
                                      : cimag(s[k]) == 0 ? cpow(zi, creal(s[k]))
                                                         : cexp(s[k] * clog(zi));
                assert_parts(g[i], want, d ? 2e-5 : 1e-12, false, "pow_scalar_complex", zi);
            }
            free(g);
            clt_tensor_free(p);
        }
        clt_tensor_free(z);
    }
    /* real operands: float64 to complex128, float32 and int64 to complex64 */
    double r[4] = {0, 1, 2.5, -3};
    int64_t ri[4] = {0, 1, 2, -3};
    int64_t m = 4;
    clt_tensor *x64 = NULL, *x32 = NULL, *xi = NULL, *p = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &m, r, &x64));
    CHECK(clt_to_dtype(x64, CLT_FLOAT32, &x32));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &m, ri, &xi));
    const clt_tensor *xs[3] = {x64, x32, xi};
    const clt_dtype want_dt[3] = {CLT_COMPLEX128, CLT_COMPLEX64, CLT_COMPLEX64};
    for (int k = 0; k < 3; k++) {
        CHECK(clt_pow_scalar_complex(xs[k], 0.5, 1, &p));
        cr_assert_eq(clt_tensor_dtype(p), want_dt[k]);
        double complex *g = read_c(p);
        for (int i = 0; i < 4; i++) {
            double xv = k == 2 ? (double)ri[i] : r[i];
            double complex want = xv == 0 ? 0 : cexp((0.5 + I) * clog(CMPLX(xv, 0)));
            assert_parts(g[i], want, k ? 2e-5 : 1e-12, false, "pow_scalar_complex real",
                         CMPLX(xv, 0));
        }
        free(g);
        clt_tensor_free(p);
    }
    /* errors: float16, NULL; *out NULL and a message naming the call */
    clt_tensor *h = NULL, *o = (clt_tensor *)&o;
    CHECK(clt_zeros(dev, CLT_FLOAT16, 1, &m, &h));
    assert_error(clt_pow_scalar_complex(h, 0.5, 1, &o), CLT_ERR_DTYPE_UNSUPPORTED, "ComplexHalf");
    cr_assert_null(o);
    cr_assert(strncmp(clt_last_error(), "clt_pow_scalar_complex: ", 24) == 0, "%s",
              clt_last_error());
    o = (clt_tensor *)&o;
    assert_error(clt_pow_scalar_complex(NULL, 0.5, 1, &o), CLT_ERR_NULL_ARGUMENT,
                 "clt_pow_scalar_complex");
    cr_assert_null(o);
    clt_tensor_free(h);
    clt_tensor_free(x64);
    clt_tensor_free(x32);
    clt_tensor_free(xi);
}
