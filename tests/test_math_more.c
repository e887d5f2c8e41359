/* test_math_more.c: the special functions, the rest of torch's pointwise
 * math and the comparison helpers of ops.h (clt_lgamma ... clt_equal):
 * values against references computed here in double (the C library, and
 * series or recurrences written here where it has none), PyTorch's edge
 * values, integer rules, gradients against finite differences in float64,
 * grad_fn names, and bad input. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"
#include "internal.h"


/* ---- references ------------------------------------------------------------------ */

/* digamma: the reflection below 0, the recurrence up to 20, then the
 * asymptotic series log x - 1/2x - sum B_2k / (2k x^2k). */
static double ref_digamma(double x)
{
    if (x == 0)
        return copysign(INFINITY, -x);
    if (x < 0) {
        if (x == floor(x))
            return NAN;
        return ref_digamma(1 - x) - M_PI / tan(M_PI * (x - trunc(x)));
    }
    long double s = 0, z = x;
    while (z < 20)
        s -= 1 / z++;
    long double r = 1 / (z * z);
    s += logl(z) - 0.5L / z -
         r * (1.0L / 12 - r * (1.0L / 120 - r * (1.0L / 252 - r * (1.0L / 240 - r / 132))));
    return (double)s;
}

/* polygamma(n >= 1, x > 0): the recurrence up to 30, then the asymptotic
 * series (n-1)!/z^n + n!/2z^(n+1) + sum B_2k (2k+n-1)!/(2k)! / z^(2k+n),
 * with the sign (-1)^(n+1). */
static double ref_polygamma(int n, double x)
{
    static const long double b2k[] = {1.0L / 6, -1.0L / 30, 1.0L / 42, -1.0L / 30, 5.0L / 66,
                                      -691.0L / 2730};
    long double s = 0, z = x, fact_n = 1, fact_nm1 = 1;
    for (int k = 2; k <= n; k++)
        fact_n *= k;
    fact_nm1 = fact_n / n;
    while (z < 30)
        s += fact_n / powl(z++, n + 1);
    s += fact_nm1 / powl(z, n) + fact_n / (2 * powl(z, n + 1));
    for (int k = 1; k <= 6; k++) {
        long double c = b2k[k - 1];
        for (int j = 1; j <= 2 * k + n - 1; j++)
            c *= j;
        for (int j = 1; j <= 2 * k; j++)
            c /= j;
        s += c / powl(z, 2 * k + n);
    }
    return (double)((n % 2) ? s : -s);
}

/* I0 and I1 by their power series (all terms of one sign). */
static double ref_bessel(int order, double x)
{
    long double h = fabs(x) / 2, t = order ? h : 1, s = t;
    for (int k = 1; k < 200; k++) {
        t *= h * h / ((long double)k * (k + order));
        s += t;
    }
    return (double)(order && x < 0 ? -s : s);
}

static double ref_ndtr(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* ndtri by bisection on ref_ndtr. */
static double ref_ndtri(double p)
{
    if (p <= 0 || p >= 1)
        return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
    double lo = -40, hi = 40;
    for (int k = 0; k < 200; k++) {
        double mid = 0.5 * (lo + hi);
        if (ref_ndtr(mid) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

static double ref_log_ndtr(double x)
{
    if (x < -35) {
        double r = 1 / (x * x);
        return -0.5 * x * x - log(-x) - 0.5 * log(2 * M_PI) +
               log1p(-r * (1 - r * (3 - r * (15 - r * 105))));
    }
    return x > 0 ? log1p(-ref_ndtr(-x)) : log(ref_ndtr(x));
}

static double ref_entr(double x)
{
    return isnan(x) ? x : x > 0 ? -x * log(x) : x == 0 ? 0 : -INFINITY;
}

static double ref_sinc(double x)
{
    return x == 0 ? 1 : sin(M_PI * x) / (M_PI * x);
}

typedef enum {
    LGAMMA, DIGAMMA, I0, I0E, I1, I1E, NDTR, NDTRI, LOG_NDTR, ENTR, SINC, NUN
} unop;
static const char *const un_names[NUN] = {"lgamma", "digamma", "special_i0", "special_i0e",
                                          "special_i1", "special_i1e", "special_ndtr",
                                          "special_ndtri", "special_log_ndtr", "special_entr",
                                          "sinc"};
static const un_fn un_fns[NUN] = {clt_lgamma,       clt_digamma,        clt_special_i0,
                                  clt_special_i0e,  clt_special_i1,     clt_special_i1e,
                                  clt_special_ndtr, clt_special_ndtri,  clt_special_log_ndtr,
                                  clt_special_entr, clt_sinc};

static double ref_un(unop op, double x)
{
    switch (op) {
    case LGAMMA: return lgamma(x);
    case DIGAMMA: return ref_digamma(x);
    case I0: return ref_bessel(0, x);
    case I0E: return exp(-fabs(x)) * ref_bessel(0, x);
    case I1: return ref_bessel(1, x);
    case I1E: return exp(-fabs(x)) * ref_bessel(1, x);
    case NDTR: return ref_ndtr(x);
    case NDTRI: return ref_ndtri(x);
    case LOG_NDTR: return ref_log_ndtr(x);
    case ENTR: return ref_entr(x);
    default: return ref_sinc(x);
    }
}

/* n values for op: probabilities for ndtri, [-30, 30] for the Bessel
 * functions (their series), else [-12, 12] with halves and integers. */
static void sweep(unop op, int64_t n, double *x)
{
    for (int64_t i = 0; i < n; i++) {
        double u = (double)((i * 7919) % n) / (double)n;
        x[i] = op == NDTRI ? (u + 0.5 / (double)n)
             : op <= I1E && op >= I0 ? 60 * u - 30
             : op == LOG_NDTR ? 45 * u - 38
                              : 24 * u - 12 + 1e-3 * (double)(i % 3);
    }
}

static double *values_of(clt_device *dev, un_fn f, clt_dtype dt, int64_t n, const double *x)
{
    clt_tensor *t = tensor_of(dev, dt, 1, &n, x), *r = NULL;
    CHECK(f(t, &r));
    cr_assert_eq(clt_tensor_dtype(r), dt);
    double *v = read_as_f64(r);
    clt_tensor_free(t);
    clt_tensor_free(r);
    return v;
}

/* float64 within rtol of the reference (atol where a root or the
 * cancellation of digamma's recurrence leaves absolute digits only). */
/* float32: a few float roundings */
static void check_float32(clt_device *dev, unop op, int n, const double *x)
{
    double *v = values_of(dev, un_fns[op], CLT_FLOAT32, n, x);
    for (int i = 0; i < n; i++) {
        double xf = (float)x[i], want = ref_un(op, xf);
        if (op == DIGAMMA && xf < 0)
            continue; /* a float x next to a pole: any digit counts */
        cr_assert(close_enough(v[i], (float)want, 4e-6, op == NDTR ? 1e-7 : 2e-6),
                  "float32 %s(%.9g): got %.9g, want %.9g", un_names[op], xf, v[i], want);
    }
    free(v);
}

Test(math_more, special_against_references)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    enum { N = 601 };
    double x[N];
    for (int op = 0; op < NUN; op++) {
        sweep(op, N, x);
        double *v = values_of(dev, un_fns[op], CLT_FLOAT64, N, x);
        /* ndtr is PyTorch's (1 + erf) / 2: absolute digits in the left tail */
        double rtol = op == NDTR ? 1e-15 : op == NDTRI ? 1e-13 : 3e-14;
        double atol = op == DIGAMMA || op == NDTR || op == LGAMMA || op == NDTRI ? 1e-14 : 0;
        for (int i = 0; i < N; i++) {
            double want = ref_un(op, x[i]);
            /* near digamma's poles both lose digits to the reflection */
            double near = op == DIGAMMA && x[i] < 0 ? fabs(want) * 1e-12 : 0;
            cr_assert(close_enough(v[i], want, rtol, atol + near), "%s(%.17g): got %.17g, want %.17g",
                      un_names[op], x[i], v[i], want);
        }
        free(v);
        check_float32(dev, op, N, x);
    }
}

Test(math_more, polygamma_and_mvlgamma)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    enum { N = 200 };
    double x[N];
    int64_t n = N;
    for (int i = 0; i < N; i++)
        x[i] = 0.05 + 0.11 * i;
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 1, &n, x), *r = NULL;
    for (int k = 0; k <= 5; k++) {
        CHECK(clt_polygamma(k, t, &r));
        double *v = read_as_f64(r);
        for (int i = 0; i < N; i++) {
            double want = k == 0 ? ref_digamma(x[i]) : ref_polygamma(k, x[i]);
            /* PyTorch's trigamma stops its series at x^-7 after six steps:
             * 5e-10 relative (torch.polygamma(1, 1.5) is 0.93480220097,
             * the true value 0.93480220054), which cltensor follows */
            double rtol = k == 1 ? 2e-9 : 1e-13;
            cr_assert(close_enough(v[i], want, rtol, 1e-15), "polygamma(%d, %.17g): %.17g, want %.17g",
                      k, x[i], v[i], want);
        }
        free(v);
        clt_tensor_free(r);
    }
    for (int p = 1; p <= 4; p++) {
        CHECK(clt_mvlgamma(t, p, &r));
        double *v = read_as_f64(r);
        for (int i = 0; i < N; i++) {
            double want = p * (p - 1) / 4.0 * log(M_PI);
            for (int j = 0; j < p; j++)
                want += lgamma(x[i] - (p - 1) / 2.0 + j / 2.0);
            cr_assert(close_enough(v[i], want, 1e-13, 1e-13), "mvlgamma(%.17g, %d): %.17g, want %.17g",
                      x[i], p, v[i], want);
        }
        free(v);
        clt_tensor_free(r);
    }
    clt_tensor_free(t);
}

/* PyTorch 1.13's values at the edges (float32, printed by torch). */
Test(math_more, special_edges)
{
    clt_device *dev = get_device("cpu");
    const double x[8] = {0.0, -0.0, -1.0, -2.0, INFINITY, -INFINITY, NAN, 0.5};
    int64_t n = 8;
    const struct {
        un_fn f;
        double want[8];
    } cases[] = {
        {clt_lgamma, {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, NAN,
                      0.5723649263381958}},
        {clt_digamma, {-INFINITY, INFINITY, NAN, NAN, INFINITY, NAN, NAN, -1.9635108709335327}},
        {clt_special_i0e, {0.9999999403953552, 0.9999999403953552, 0.46575963497161865,
                           0.3085083067417145, 0, 0, NAN, 0.6450353264808655}},
        {clt_special_i1, {0, 0, -0.5651590824127197, -1.5906368494033813, NAN, NAN, NAN,
                          0.25789427757263184}},
        {clt_special_ndtri, {-INFINITY, -INFINITY, NAN, NAN, NAN, NAN, NAN, 0}},
        {clt_special_log_ndtr, {-0.6931471824645996, -0.6931471824645996, -1.8410214185714722,
                                -3.78318452835083, -0.0, -INFINITY, NAN, -0.3689464330673218}},
        {clt_special_entr, {0, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, NAN,
                            0.3465735912322998}},
        {clt_sinc, {1, 1, -2.7827534054836178e-08, 2.7827534054836178e-08, NAN, NAN, NAN,
                    0.6366197466850281}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 1, &n, x), *r = NULL;
        CHECK(cases[c].f(t, &r));
        float *v = read_f32(r);
        for (int i = 0; i < 8; i++)
            cr_assert(close_enough(v[i], cases[c].want[i], 1e-6, 1e-7) &&
                          (v[i] != 0 || !signbit(v[i]) == !signbit(cases[c].want[i])),
                      "case %zu, x = %g: got %.9g, want %.9g", c, x[i], v[i], cases[c].want[i]);
        free(v);
        clt_tensor_free(t);
        clt_tensor_free(r);
    }
}

/* ---- binary floating ops ----------------------------------------------------------------- */

static double ref_logaddexp(double a, double b, int base2)
{
    if (isinf(a) && a == b)
        return a;
    long double m = a > b ? a : b, d = -fabsl((long double)a - b);
    if (isnan(a) || isnan(b))
        return NAN;
    return (double)(base2 ? m + log1pl(exp2l(d)) / logl(2) : m + log1pl(expl(d)));
}

Test(math_more, binary_float_values)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    static const double sp[] = {INFINITY, -INFINITY, NAN, -0.0, 0.0, 1.0, -1.0, 2.5, -0.999,
                                1e-300, 5e-324, 700, -700, 1e308};
    enum { K = sizeof sp / sizeof sp[0], N = K * K };
    double a[N], b[N];
    for (int i = 0; i < N; i++)
        a[i] = sp[i / K], b[i] = sp[i % K];
    int64_t n = N;
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 1, &n, a), *tb = tensor_of(dev, CLT_FLOAT64, 1, &n, b);
    const struct {
        bin_fn f;
        const char *name;
    } ops[] = {{clt_special_xlog1py, "xlog1py"}, {clt_logaddexp, "logaddexp"},
               {clt_logaddexp2, "logaddexp2"}, {clt_nextafter, "nextafter"},
               {clt_heaviside, "heaviside"},   {clt_ldexp, "ldexp"}};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        clt_tensor *r = NULL;
        CHECK(ops[o].f(ta, tb, &r));
        double *v = read_as_f64(r);
        for (int i = 0; i < N; i++) {
            double want;
            switch (o) {
            case 0: want = isnan(b[i]) ? NAN : a[i] == 0 ? 0 : a[i] * log1p(b[i]); break;
            case 1: want = ref_logaddexp(a[i], b[i], 0); break;
            case 2: want = ref_logaddexp(a[i], b[i], 1); break;
            case 3: want = nextafter(a[i], b[i]); break;
            case 4: want = a[i] == 0 ? b[i] : a[i] > 0 ? 1 : 0; break;
            default: want = a[i] * pow(2.0, b[i]); break;
            }
            /* logaddexp's max + log1p(..) cancels: digits absolute in |a| + |b| */
            double atol = o == 1 || o == 2 ? 1e-15 * fmax(1, fabs(a[i]) + fabs(b[i])) : 0;
            cr_assert(close_enough(v[i], want, 2e-16, atol) &&
                          (want != 0 || !signbit(want) == !signbit(v[i]) || o == 1 || o == 2),
                      "%s(%.17g, %.17g): got %.17g, want %.17g", ops[o].name, a[i], b[i], v[i],
                      want);
        }
        free(v);
        clt_tensor_free(r);
    }
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

Test(math_more, frexp_signbit_float_power)
{
    clt_device *dev = get_device("cpu");
    static const double x[] = {0.0, -0.0, 1.0, -3.5, 1e-310, 6.5e300, INFINITY, -INFINITY, NAN,
                               0.75, 1e-40};
    int64_t n = sizeof x / sizeof x[0];
    for (int pass = 0; pass < 2; pass++) {
        clt_dtype dt = pass ? CLT_FLOAT32 : CLT_FLOAT64;
        if (dt == CLT_FLOAT64 && !clt_device_supports_dtype(dev, dt))
            continue;
        clt_tensor *t = tensor_of(dev, dt, 1, &n, x), *m = NULL, *e = NULL, *s = NULL;
        CHECK(clt_frexp(t, &m, &e));
        cr_assert_eq(clt_tensor_dtype(e), CLT_INT32);
        double *mv = read_as_f64(m), *ev = read_as_f64(e);
        CHECK(clt_signbit(t, &s));
        cr_assert_eq(clt_tensor_dtype(s), CLT_BOOL);
        double *sv = read_as_f64(s);
        for (int64_t i = 0; i < n; i++) {
            double xi = pass ? (double)(float)x[i] : x[i];
            int ex = 0;
            double want = isfinite(xi) ? frexp(xi, &ex) : xi;
            cr_assert(close_enough(mv[i], want, 0, 0) && ev[i] == ex,
                      "frexp(%g): %.17g * 2^%g, want %.17g * 2^%d", xi, mv[i], ev[i], want, ex);
            cr_assert_eq(sv[i] != 0, signbit(xi) != 0, "signbit(%g)", xi);
        }
        free(mv);
        free(ev);
        free(sv);
        clt_tensor_free(t);
        clt_tensor_free(m);
        clt_tensor_free(e);
        clt_tensor_free(s);
    }
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        return;
    int64_t k = 4;
    clt_tensor *a = tensor_of(dev, CLT_INT32, 1, &k, (double[]){2, -3, 0, 7});
    clt_tensor *b = tensor_of(dev, CLT_FLOAT32, 1, &k, (double[]){0.5, 3, -1, 1.5});
    clt_tensor *r = NULL;
    CHECK(clt_float_power(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT64);
    double *v = read_as_f64(r);
    const double want[4] = {sqrt(2.0), -27, INFINITY, pow(7, 1.5)};
    for (int i = 0; i < 4; i++)
        cr_assert(close_enough(v[i], want[i], 1e-15, 0), "float_power %d: %.17g", i, v[i]);
    free(v);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(r);
}

/* ---- integer ops ------------------------------------------------------------------------- */

static int64_t host_gcd(int64_t a, int64_t b)
{
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (a) {
        int64_t c = a;
        a = b % a;
        b = c;
    }
    return b;
}

/* Each integer op of int32, int64 and uint8 operands against the host's,
 * shifts by counts inside and outside [0, W). */
static void check_integer_ops(clt_device *dev)
{
    enum { N = 64 };
    double a[N], b[N], sh[N];
    for (int i = 0; i < N; i++) {
        a[i] = (double)((i * 37) % 61) - 30;
        b[i] = (double)((i * 53) % 47) - 23;
        sh[i] = (double)(i % 70) - 3; /* -3 .. 66 */
    }
    int64_t n = N;
    const clt_dtype dts[3] = {CLT_INT32, CLT_INT64, CLT_UINT8};
    for (int d = 0; d < 3; d++) {
        clt_dtype dt = dts[d];
        int w = dt == CLT_INT32 ? 32 : dt == CLT_INT64 ? 64 : 8;
        double ua[N], ub[N], us[N];
        for (int i = 0; i < N; i++) {
            ua[i] = dt == CLT_UINT8 ? fabs(a[i]) * 8 : a[i];
            ub[i] = dt == CLT_UINT8 ? fabs(b[i]) : b[i];
            us[i] = dt == CLT_UINT8 ? fabs(sh[i]) / 6 : sh[i];
        }
        clt_tensor *ta = tensor_of(dev, dt, 1, &n, ua), *tb = tensor_of(dev, dt, 1, &n, ub);
        clt_tensor *ts = tensor_of(dev, dt, 1, &n, us);
        const bin_fn fns[7] = {clt_gcd, clt_lcm, clt_bitwise_and, clt_bitwise_or, clt_bitwise_xor,
                               clt_bitwise_left_shift, clt_bitwise_right_shift};
        for (int o = 0; o < 7; o++) {
            clt_tensor *r = NULL;
            CHECK(fns[o](ta, o >= 5 ? ts : tb, &r));
            cr_assert_eq(clt_tensor_dtype(r), dt);
            double *v = read_as_f64(r);
            for (int i = 0; i < N; i++) {
                int64_t x = (int64_t)ua[i], y = (int64_t)(o >= 5 ? us[i] : ub[i]), want;
                uint64_t mask = w == 64 ? ~0ULL : (1ULL << w) - 1;
                switch (o) {
                case 0: want = host_gcd(x, y); break;
                case 1: {
                    int64_t g = host_gcd(x, y);
                    want = g ? llabs(x / g * y) : 0;
                    break;
                }
                case 2: want = x & y; break;
                case 3: want = x | y; break;
                case 4: want = x ^ y; break;
                case 5: want = y < 0 || y >= w ? 0 : (int64_t)(((uint64_t)x << y) & mask); break;
                default:
                    want = y < 0 || y >= w - (dt != CLT_UINT8) ? (x < 0 ? -1 : 0) : x >> y;
                    break;
                }
                /* back into the dtype's range: int32 and uint8 wrap */
                if (dt == CLT_INT32)
                    want = (int32_t)(uint32_t)want;
                else if (dt == CLT_UINT8)
                    want = (uint8_t)want;
                cr_assert_eq((int64_t)v[i], want, "%s op %d (%lld, %lld): got %g, want %lld",
                             clt_dtype_name(dt), o, (long long)x, (long long)y, v[i],
                             (long long)want);
            }
            free(v);
            clt_tensor_free(r);
        }
        clt_tensor *r = NULL;
        CHECK(clt_bitwise_not(ta, &r));
        double *v = read_as_f64(r);
        for (int i = 0; i < N; i++) {
            int64_t want = ~(int64_t)ua[i];
            if (dt == CLT_UINT8)
                want = (uint8_t)want;
            cr_assert_eq((int64_t)v[i], want, "bitwise_not(%g): %g", ua[i], v[i]);
        }
        free(v);
        clt_tensor_free(r);
        clt_tensor_free(ta);
        clt_tensor_free(tb);
        clt_tensor_free(ts);
    }
    /* bool: and, or, xor and not are logical; gcd of INT32_MIN wraps */
    int64_t four = 4;
    clt_tensor *p = tensor_of(dev, CLT_BOOL, 1, &four, (double[]){0, 0, 1, 1});
    clt_tensor *q = tensor_of(dev, CLT_BOOL, 1, &four, (double[]){0, 1, 0, 1}), *r = NULL;
    CHECK(clt_bitwise_xor(p, q, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
    double *v = read_as_f64(r);
    cr_assert(v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 0);
    free(v);
    clt_tensor_free(r);
    CHECK(clt_bitwise_not(p, &r));
    v = read_as_f64(r);
    cr_assert(v[0] == 1 && v[1] == 1 && v[2] == 0 && v[3] == 0);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(p);
    clt_tensor_free(q);
}

Test(math_more, integer_ops)
{
    check_integer_ops(get_device("cpu"));
}

/* ---- isclose, allclose, equal --------------------------------------------------------------- */

Test(math_more, closeness)
{
    clt_device *dev = get_device("cpu");
    static const double a[] = {1.0, 1.0, NAN, INFINITY, INFINITY, -INFINITY, 0.0, 100.0, 1e-9};
    static const double b[] = {1.0 + 1e-6, 1.1, NAN, INFINITY, -INFINITY, -INFINITY, 1e-9,
                               100.0009, 0.0};
    int64_t n = sizeof a / sizeof a[0];
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT32, 1, &n, a), *tb = tensor_of(dev, CLT_FLOAT32, 1, &n, b);
    const struct {
        double rtol, atol;
        int nan;
    } cases[] = {{1e-5, 1e-8, 0}, {1e-5, 1e-8, 1}, {0, 0, 0}, {0.2, 0, 1}, {1e-5, 1e-3, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *r = NULL;
        CHECK(clt_isclose(ta, tb, cases[c].rtol, cases[c].atol, cases[c].nan, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
        double *v = read_as_f64(r);
        int all = 1;
        for (int64_t i = 0; i < n; i++) {
            float x = (float)a[i], y = (float)b[i];
            float d = fabsf(x - y);
            int want = x == y || (cases[c].nan && isnan(x) && isnan(y)) ||
                       (isfinite(d) && d <= (float)cases[c].atol + fabsf((float)cases[c].rtol * y));
            all &= want;
            cr_assert_eq(v[i] != 0, want, "case %zu: isclose(%g, %g)", c, x, y);
        }
        free(v);
        clt_tensor_free(r);
        int got = -1;
        CHECK(clt_allclose(ta, tb, cases[c].rtol, cases[c].atol, cases[c].nan, &got));
        cr_assert_eq(got, all, "case %zu: allclose", c);
    }
    int got = -1;
    CHECK(clt_allclose(ta, ta, 0, 0, 1, &got));
    cr_assert_eq(got, 1);
    CHECK(clt_equal(ta, ta, &got));
    cr_assert_eq(got, 0, "NaN equals nothing");
    clt_tensor *s = NULL;
    CHECK(clt_slice(ta, 0, 0, 2, 1, &s));
    CHECK(clt_equal(s, s, &got));
    cr_assert_eq(got, 1);
    CHECK(clt_equal(s, ta, &got));
    cr_assert_eq(got, 0, "shapes differ");
    /* integers: the difference wraps in uint8 (3 - 5 is 254) */
    int64_t two = 2;
    clt_tensor *u = tensor_of(dev, CLT_UINT8, 1, &two, (double[]){3, 250});
    clt_tensor *w = tensor_of(dev, CLT_UINT8, 1, &two, (double[]){5, 2}), *r = NULL;
    CHECK(clt_isclose(u, w, 0, 250, 0, &r));
    double *v = read_as_f64(r);
    cr_assert(v[0] == 0 && v[1] == 1, "uint8 isclose: %g %g", v[0], v[1]);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(u);
    clt_tensor_free(w);
    clt_tensor_free(s);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

/* The one-element-per-work-item kernels (GPU variants, contiguous and
 * strided) on the CPU device told it is a GPU: float32 values, integer ops,
 * and frexp's second output through a transposed view. */
Test(math_more, gpu_variants)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    enum { N = 97 };
    double x[N];
    for (int op = 0; op < NUN; op++) {
        sweep(op, N, x);
        check_float32(dev, op, N, x);
    }
    check_integer_ops(dev);
    int64_t s23[2] = {2, 3};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 2, s23, (double[]){0.5, -3, 12, 1e-3, -0.75, 96});
    clt_tensor *tt = NULL, *m = NULL, *e = NULL;
    CHECK(clt_transpose(t, 0, 1, &tt));
    CHECK(clt_frexp(tt, &m, &e));
    double *mv = read_as_f64(m), *ev = read_as_f64(e);
    for (int i = 0; i < 6; i++) {
        int r = i / 2, c = i % 2, ex = 0;
        double want = frexp((double)(float)(double[]){0.5, -3, 12, 1e-3, -0.75, 96}[c * 3 + r], &ex);
        cr_assert(mv[i] == (double)(float)want && ev[i] == ex, "frexp [%d]: %g 2^%g", i, mv[i],
                  ev[i]);
    }
    free(mv);
    free(ev);
    clt_tensor_free(m);
    clt_tensor_free(e);
    clt_tensor_free(tt);
    clt_tensor_free(t);
}

/* ---- gradients ------------------------------------------------------------------------------ */

static clt_status call_polygamma(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_polygamma(*(const int *)ctx, in[0], out);
}

static clt_status call_mvlgamma(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_mvlgamma(in[0], *(const int *)ctx, out);
}

static clt_status call_frexp(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *e = NULL;
    clt_status st = clt_frexp(in[0], out, &e);
    clt_tensor_free(e);
    return st;
}

Test(math_more, gradients)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    static const double X8[] = {1.7, -0.3, 2.1, -2.45, 0.6, -1.8, 3.6, 9.25};
    static const double P8[] = {0.7, 0.3, 0.1, 0.45, 0.05, 0.8, 0.6, 0.25};
    for (int op = 0; op < NUN; op++) {
        bool pos = op == NDTRI || op == ENTR;
        gc_in xs[1] = {{2, {2, 4}, pos ? P8 : X8, 1}};
        gradcheck(dev, call_un, &un_fns[op], 1, xs);
    }
    gc_in px[1] = {{2, {2, 4}, (double[]){1.7, 0.3, 2.1, 2.45, 0.6, 1.8, 3.6, 9.25}, 1}};
    for (int k = 0; k <= 3; k++)
        gradcheck(dev, call_polygamma, &k, 1, px);
    const int p = 3;
    gradcheck(dev, call_mvlgamma, &p, 1, px);
    gradcheck(dev, call_frexp, NULL, 1, px);
    static const double B4[] = {0.9, -0.2, 2.5, 0.4};
    const bin_fn bins[5] = {clt_special_xlog1py, clt_logaddexp, clt_logaddexp2, clt_ldexp,
                            clt_float_power};
    for (int o = 0; o < 5; o++) {
        gc_in xy[2] = {{2, {2, 4}, o == 4 ? P8 : X8, 1}, {1, {4}, B4, 1}};
        gradcheck(dev, call_bin, &bins[o], 2, xy);
    }
}

Test(math_more, grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    static const char *const names[NUN] = {
        "LgammaBackward0",        "DigammaBackward0",    "I0Backward0",
        "SpecialI0EBackward0",    "SpecialI1Backward0",  "SpecialI1EBackward0",
        "MulBackward1",           "SpecialNdtriBackward0", "SpecialLogNdtrBackward0",
        "SpecialEntrBackward0",   "SincBackward0"};
    int64_t n = 3;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, &n, (double[]){0.5, 0.25, 0.75}), *r = NULL, *e = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    for (int op = 0; op < NUN; op++) {
        CHECK(un_fns[op](a, &r));
        cr_assert_str_eq(clt_grad_fn_name(r), names[op]);
        clt_tensor_free(r);
    }
    const struct {
        bin_fn f;
        const char *name;
    } bins[] = {{clt_special_xlog1py, "SpecialXlog1PyBackward0"}, {clt_logaddexp, "LogaddexpBackward0"},
                {clt_logaddexp2, "Logaddexp2Backward0"},         {clt_nextafter, "NextafterBackward0"},
                {clt_ldexp, "MulBackward0"},                     {clt_float_power, "PowBackward1"}};
    for (size_t o = 0; o < sizeof bins / sizeof bins[0]; o++) {
        CHECK(bins[o].f(a, a, &r));
        cr_assert_str_eq(clt_grad_fn_name(r), bins[o].name);
        clt_tensor_free(r);
    }
    CHECK(clt_polygamma(2, a, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "PolygammaBackward0");
    clt_tensor_free(r);
    CHECK(clt_mvlgamma(a, 1, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "MvlgammaBackward0");
    clt_tensor_free(r);
    CHECK(clt_frexp(a, &r, &e));
    cr_assert_str_eq(clt_grad_fn_name(r), "FrexpBackward0");
    cr_assert_null(clt_grad_fn_name(e));
    clt_tensor_free(r);
    clt_tensor_free(e);
    /* nextafter's backward fails, as PyTorch's */
    clt_tensor *l = NULL;
    CHECK(clt_nextafter(a, a, &r));
    CHECK(clt_sum(r, &l));
    assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "not implemented");
    clt_tensor_free(l);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* ---- bad input -------------------------------------------------------------------------------- */

Test(math_more, bad_input)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3, m = 2;
    clt_tensor *a = NULL, *b = NULL, *i = NULL, *bl = NULL, *r = (clt_tensor *)&r, *e = (clt_tensor *)&e;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &m, &b));
    CHECK(clt_ones(dev, CLT_INT32, 1, &n, &i));
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n, &bl));
    char fn[40];
    for (int op = 0; op < NUN; op++) {
        snprintf(fn, sizeof fn, "clt_%s", un_names[op]);
        r = (clt_tensor *)&r;
        assert_error(un_fns[op](NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
        cr_assert_null(r);
        names_only(fn);
        assert_error(un_fns[op](a, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    }
    assert_error(clt_logaddexp(a, b, &r), CLT_ERR_SHAPE_MISMATCH, "broadcast");
    cr_assert_null(r);
    names_only("clt_logaddexp");
    assert_error(clt_logaddexp(i, i, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_nextafter(i, i, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_polygamma(-1, a, &r), CLT_ERR_INVALID_ARGUMENT, "negative n");
    assert_error(clt_mvlgamma(a, 0, &r), CLT_ERR_INVALID_ARGUMENT, "greater than or equal to 1");
    assert_error(clt_mvlgamma(bl, 1, &r), CLT_ERR_DTYPE_MISMATCH, "boolean");
    assert_error(clt_heaviside(a, i, &r), CLT_ERR_DTYPE_MISMATCH, "different dtypes");
    names_only("clt_heaviside");
    assert_error(clt_gcd(a, a, &r), CLT_ERR_DTYPE_MISMATCH, "integer");
    assert_error(clt_lcm(bl, bl, &r), CLT_ERR_DTYPE_MISMATCH, "integer");
    assert_error(clt_bitwise_and(a, i, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_bitwise_not(a, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_bitwise_left_shift(bl, bl, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_isclose(a, i, 1e-5, 1e-8, 0, &r), CLT_ERR_DTYPE_MISMATCH, NULL);
    assert_error(clt_isclose(a, a, -1, 1e-8, 0, &r), CLT_ERR_INVALID_ARGUMENT, "rtol");
    assert_error(clt_isclose(a, a, 0, NAN, 0, &r), CLT_ERR_INVALID_ARGUMENT, "atol");
    cr_assert_null(r);
    assert_error(clt_frexp(i, &r, &e), CLT_ERR_DTYPE_MISMATCH, "floating");
    cr_assert_null(r);
    cr_assert_null(e);
    assert_error(clt_frexp(a, &r, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    int got = 7;
    assert_error(clt_allclose(a, i, 1e-5, 1e-8, 0, &got), CLT_ERR_DTYPE_MISMATCH, NULL);
    cr_assert_eq(got, 0);
    names_only("clt_allclose");
    assert_error(clt_equal(a, NULL, &got), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_equal(a, a, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(i);
    clt_tensor_free(bl);
}

/* ---- diff, trapezoid, cumulative_trapezoid ----------------------------------------------- */

/* diff, trapezoid and cumulative_trapezoid of a [3, 5] float64 tensor
 * against host loops (along dim 1, and 0 with prepend and append). */
Test(math_more, differences_and_integrals)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    double y[15], x[5] = {0.0, 0.5, 1.75, 2.0, 4.0};
    for (int i = 0; i < 15; i++)
        y[i] = sin(1.3 * i) * (i % 4 + 1);
    int64_t s35[2] = {3, 5}, s5 = 5, s15[2] = {1, 5}, s25[2] = {2, 5};
    clt_tensor *ty = tensor_of(dev, CLT_FLOAT64, 2, s35, y), *tx = tensor_of(dev, CLT_FLOAT64, 1, &s5, x);
    clt_tensor *r = NULL;
    /* second difference along dim 1 */
    CHECK(clt_diff(ty, 2, 1, NULL, NULL, &r));
    assert_shape(r, 2, (int64_t[]){3, 3});
    double *v = read_as_f64(r);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double want = y[i * 5 + j + 2] - 2 * y[i * 5 + j + 1] + y[i * 5 + j];
            cr_assert(close_enough(v[i * 3 + j], want, 1e-15, 1e-15), "diff2 [%d, %d]", i, j);
        }
    free(v);
    clt_tensor_free(r);
    /* first difference along dim 0 with a row before and two after */
    double pre[5] = {1, 2, 3, 4, 5}, app[10] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
    clt_tensor *tp = tensor_of(dev, CLT_FLOAT64, 2, s15, pre), *ta = tensor_of(dev, CLT_FLOAT64, 2, s25, app);
    CHECK(clt_diff(ty, 1, 0, tp, ta, &r));
    assert_shape(r, 2, (int64_t[]){5, 5});
    v = read_as_f64(r);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double rows[6][5];
            for (int k = 0; k < 5; k++) {
                rows[0][k] = pre[k];
                for (int q = 0; q < 3; q++)
                    rows[1 + q][k] = y[q * 5 + k];
                rows[4][k] = app[k];
                rows[5][k] = app[5 + k];
            }
            cr_assert(close_enough(v[i * 5 + j], rows[i + 1][j] - rows[i][j], 1e-15, 0),
                      "diff with ends [%d, %d]", i, j);
        }
    free(v);
    clt_tensor_free(r);
    /* trapezoid and its cumulative form with x and with dx */
    for (int with_x = 0; with_x < 2; with_x++) {
        clt_tensor *c = NULL;
        CHECK(clt_trapezoid(ty, with_x ? tx : NULL, 0.5, -1, &r));
        CHECK(clt_cumulative_trapezoid(ty, with_x ? tx : NULL, 0.5, -1, &c));
        assert_shape(r, 1, (int64_t[]){3});
        assert_shape(c, 2, (int64_t[]){3, 4});
        v = read_as_f64(r);
        double *cv = read_as_f64(c);
        for (int i = 0; i < 3; i++) {
            double acc = 0;
            for (int j = 0; j < 4; j++) {
                double h = with_x ? x[j + 1] - x[j] : 0.5;
                acc += h * (y[i * 5 + j] + y[i * 5 + j + 1]) / 2;
                cr_assert(close_enough(cv[i * 4 + j], acc, 1e-14, 1e-15), "cumulative [%d, %d]",
                          i, j);
            }
            cr_assert(close_enough(v[i], acc, 1e-14, 1e-15), "trapezoid row %d: %.17g, want %.17g",
                      i, v[i], acc);
        }
        free(v);
        free(cv);
        clt_tensor_free(r);
        clt_tensor_free(c);
    }
    clt_tensor_free(tp);
    clt_tensor_free(ta);
    clt_tensor_free(ty);
    clt_tensor_free(tx);
}

static clt_status call_diff(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_diff(in[0], 2, -1, in[1], NULL, out);
}

static clt_status call_trapezoid(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return *(const int *)ctx ? clt_cumulative_trapezoid(in[0], in[1], 0, 1, out)
                             : clt_trapezoid(in[0], in[1], 0, 1, out);
}

Test(math_more, differences_and_integrals_gradients)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    static const double Y8[] = {1.7, -0.3, 2.1, -2.45, 0.6, -1.8, 3.6, 9.25};
    static const double X4[] = {0.0, 0.4, 1.1, 2.5}, P2[] = {0.3, -0.7};
    gc_in d_in[2] = {{2, {2, 4}, Y8, 1}, {2, {2, 1}, P2, 1}};
    gradcheck(dev, call_diff, NULL, 2, d_in);
    gc_in t_in[2] = {{2, {2, 4}, Y8, 1}, {1, {4}, X4, 1}};
    for (int cumulative = 0; cumulative < 2; cumulative++)
        gradcheck(dev, call_trapezoid, &cumulative, 2, t_in);
}

/* ---- cov and corrcoef ------------------------------------------------------------------------- */

/* cov of 3 variables over 5 observations with fweights and aweights, and
 * corrcoef, against host loops (numpy's definition), and their gradients. */
Test(math_more, covariance)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    double x[15], aw[5] = {0.5, 1, 2, 0.25, 1.5}, fwd[5] = {1, 3, 0, 2, 1};
    for (int i = 0; i < 15; i++)
        x[i] = cos(0.7 * i * i) * (i % 3 + 1);
    int64_t s35[2] = {3, 5}, s5 = 5;
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT64, 2, s35, x), *ta = tensor_of(dev, CLT_FLOAT64, 1, &s5, aw);
    clt_tensor *tf = tensor_of(dev, CLT_INT64, 1, &s5, fwd), *r = NULL;
    for (int corr = 0; corr <= 1; corr++) {
        CHECK(clt_cov(tx, corr, tf, ta, &r));
        assert_shape(r, 2, (int64_t[]){3, 3});
        double *v = read_as_f64(r);
        double w[5], ws = 0, wa = 0, avg[3] = {0, 0, 0};
        for (int k = 0; k < 5; k++) {
            w[k] = fwd[k] * aw[k];
            ws += w[k];
            wa += w[k] * aw[k];
        }
        for (int i = 0; i < 3; i++) {
            for (int k = 0; k < 5; k++)
                avg[i] += x[i * 5 + k] * w[k];
            avg[i] /= ws;
        }
        double nf = ws - corr * wa / ws;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double c = 0;
                for (int k = 0; k < 5; k++)
                    c += (x[i * 5 + k] - avg[i]) * (x[j * 5 + k] - avg[j]) * w[k];
                cr_assert(close_enough(v[i * 3 + j], c / nf, 1e-13, 1e-15),
                          "cov c=%d [%d, %d]: %.17g, want %.17g", corr, i, j, v[i * 3 + j], c / nf);
            }
        free(v);
        clt_tensor_free(r);
    }
    CHECK(clt_corrcoef(tx, &r));
    double *v = read_as_f64(r), m[3] = {0, 0, 0}, c[9] = {0};
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 5; k++)
            m[i] += x[i * 5 + k] / 5;
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++)
                c[i * 3 + j] += (x[i * 5 + k] - m[i]) * (x[j * 5 + k] - m[j]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double want = c[i * 3 + j] / sqrt(c[i * 4] * c[j * 4]);
            cr_assert(close_enough(v[i * 3 + j], want, 1e-13, 1e-15), "corrcoef [%d, %d]", i, j);
        }
    free(v);
    clt_tensor_free(r);
    int got = 0;
    clt_tensor *neg = tensor_of(dev, CLT_INT64, 1, &s5, (double[]){1, -1, 0, 0, 0});
    assert_error(clt_cov(tx, 1, neg, NULL, &r), CLT_ERR_INVALID_ARGUMENT, "negative");
    cr_assert_null(r);
    assert_error(clt_cov(tx, 1, ta, NULL, &r), CLT_ERR_DTYPE_MISMATCH, "integral");
    (void)got;
    clt_tensor_free(neg);
    clt_tensor_free(tx);
    clt_tensor_free(ta);
    clt_tensor_free(tf);
}

static clt_status call_cov(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return *(const int *)ctx ? clt_corrcoef(in[0], out) : clt_cov(in[0], 1, NULL, in[1], out);
}

Test(math_more, covariance_gradients)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    static const double X8[] = {1.7, -0.3, 2.1, -2.45, 0.6, -1.8, 3.6, 9.25};
    static const double W4[] = {0.5, 1.25, 2.0, 0.75};
    gc_in in[2] = {{2, {2, 4}, X8, 1}, {1, {4}, W4, 1}};
    for (int corr = 0; corr < 2; corr++)
        gradcheck(dev, call_cov, &corr, 2 - corr, in);
}

/* ---- histc -------------------------------------------------------------------------------------- */

/* histc of 2000 float32 values against a host count with the same
 * formula in float (the last bin takes max; NaN counts in bin 0 and
 * values outside the range nowhere, as PyTorch 1.13's), and a one-value
 * input that widens its range. */
Test(math_more, histc)
{
    clt_device *dev = get_device("cpu");
    enum { N = 2000, B = 13 };
    double x[N];
    for (int i = 0; i < N; i++)
        x[i] = i % 97 == 0 ? NAN : i % 89 == 0 ? 1.5 : 3.3 * sin(0.37 * i * i);
    int64_t n = N;
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 1, &n, x), *r = NULL;
    CHECK(clt_histc(t, B, -2.0, 1.5, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    assert_shape(r, 1, (int64_t[]){B});
    double *v = read_as_f64(r);
    double want[B] = {0};
    for (int i = 0; i < N; i++) {
        float e = (float)x[i];
        if (e < -2.0f || e > 1.5f)
            continue;
        int64_t pos = isnan(e) ? 0 : (int64_t)((e - -2.0f) / (1.5f - -2.0f) * (float)B);
        want[pos == B ? B - 1 : pos] += 1;
    }
    for (int b = 0; b < B; b++)
        cr_assert_eq(v[b], want[b], "bin %d: %g, want %g", b, v[b], want[b]);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(t);
    int64_t three = 3;
    t = tensor_of(dev, CLT_FLOAT32, 1, &three, (double[]){2.5, 2.5, 2.5});
    CHECK(clt_histc(t, 4, 0, 0, &r));
    v = read_as_f64(r);
    cr_assert(v[0] == 0 && v[1] == 0 && v[2] == 3 && v[3] == 0, "[%g %g %g %g]", v[0], v[1], v[2],
              v[3]);
    free(v);
    clt_tensor_free(r);
    assert_error(clt_histc(t, 0, 0, 1, &r), CLT_ERR_INVALID_ARGUMENT, "bins");
    assert_error(clt_histc(t, 3, 2, 1, &r), CLT_ERR_INVALID_ARGUMENT, "larger");
    cr_assert_null(r);
    clt_tensor_free(t);
}
