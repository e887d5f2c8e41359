/* test_unary_more.c: log1p, expm1, tan, sign, silu, softplus, leaky_relu and
 * elu (ops.h) and the SiLU, Softplus, LeakyReLU and ELU layers (nn.h):
 * values against the C library in double, PyTorch 1.13's results at the
 * edges (literal values from torch), every lane of the CPU kernels'
 * vectors, integer and bool inputs, gradients against finite differences,
 * and bad input. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"
#include "internal.h"

typedef enum { LOG1P, EXPM1, TAN, SIGN, SILU, SOFTPLUS, LEAKY_RELU, ELU, NOPS } unop;

static const char *const names[NOPS] = {"log1p", "expm1",    "tan",        "sign",
                                        "silu",  "softplus", "leaky_relu", "elu"};

/* softplus with PyTorch's defaults, beta 1 and threshold 20 */
static clt_status softplus_default(const clt_tensor *a, clt_tensor **out)
{
    return clt_softplus(a, 1.0, 20.0, out);
}

/* leaky_relu and elu with PyTorch's defaults, 0.01 and 1.0 */
static clt_status leaky_relu_default(const clt_tensor *a, clt_tensor **out)
{
    return clt_leaky_relu(a, 0.01, out);
}

static clt_status elu_default(const clt_tensor *a, clt_tensor **out)
{
    return clt_elu(a, 1.0, out);
}

static const un_fn fns[NOPS] = {clt_log1p, clt_expm1,        clt_tan,           clt_sign,
                                clt_silu,  softplus_default, leaky_relu_default, elu_default};

/* The reference, in double; softplus with beta and threshold. */
static double ref_sp(double x, double beta, double threshold)
{
    double z = beta * x;
    return z > threshold ? x : log1p(exp(z)) / beta;
}

static double ref(unop op, double x)
{
    switch (op) {
    case LOG1P: return log1p(x);
    case EXPM1: return expm1(x);
    case TAN: return tan(x);
    case SIGN: return (x > 0) - (x < 0);
    case SILU: return x / (1 + exp(-x));
    case LEAKY_RELU: return x > 0 ? x : x * 0.01;
    case ELU: return x > 0 ? x : expm1(x) + 0.0; /* +0.0 at -0.0, as torch */
    default: return ref_sp(x, 1, 20);
    }
}

/* Relative tolerances: float32 (a few roundings in the kernel), float64. */
static const double rtol32[NOPS] = {3e-7, 3e-7, 4e-7, 0, 5e-7, 4e-7, 2e-7, 3e-7};
#define RTOL64 1e-14

/* A float32 or float64 tensor of v (converted to float for float32). */
static clt_tensor *upload(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                          int64_t n, const double *v)
{
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (dt == CLT_FLOAT32)
            ((float *)buf)[i] = (float)v[i];
        else
            ((double *)buf)[i] = v[i];
    }
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, dt, nd, shape, buf, &t));
    free(buf);
    return t;
}

/* A float32 or float64 tensor's values as a new array of doubles. */
static double *download(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *v = malloc((n ? n : 1) * sizeof *v);
    if (clt_tensor_dtype(t) == CLT_FLOAT64) {
        CHECK(clt_tensor_read(t, v, n * sizeof *v));
    } else {
        cr_assert_eq(clt_tensor_dtype(t), CLT_FLOAT32);
        float *f = read_f32(t);
        for (size_t i = 0; i < n; i++)
            v[i] = f[i];
        free(f);
    }
    return v;
}

/* got equals want within rtol and atol, NaN with NaN, infinities and the
 * sign of a zero exactly. */
static void assert_value(const char *what, double x, double got, double want, double rtol,
                         double atol)
{
    cr_assert(close_enough(got, want, rtol, atol), "%s(%.17g): got %.17g, want %.17g", what, x,
              got, want);
    if (want == 0 && got == 0)
        cr_assert_eq(!!signbit(got), !!signbit(want), "%s(%.17g): got %g, want %g", what, x,
                     got, want);
}

/* The values of each op on n inputs of shape (nd, shape) in dtype dt, from
 * [-10, 10] (log1p: above -1) with every fifth value tiny (1e-11 scale),
 * against the reference in double on the values the tensor holds. */
static void check_values(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    fill_random(f, (size_t)n, 7);
    for (int op = 0; op < NOPS; op++) {
        for (int64_t i = 0; i < n; i++) {
            x[i] = i % 5 == 2 ? f[i] * 1e-12 : f[i];
            if (op == LOG1P && x[i] < 0)
                x[i] /= 10.01;
            if (dt == CLT_FLOAT32)
                x[i] = (float)x[i];
        }
        clt_tensor *a = upload(dev, dt, nd, shape, n, x), *r = NULL;
        CHECK(fns[op](a, &r));
        assert_shape(r, nd, shape);
        cr_assert_eq(clt_tensor_dtype(r), dt);
        double *got = download(r);
        for (int64_t i = 0; i < n; i++) {
            double want = ref(op, x[i]);
            if (dt == CLT_FLOAT32)
                want = (float)want;
            assert_value(names[op], x[i], got[i], want,
                         dt == CLT_FLOAT32 ? rtol32[op] : RTOL64, 0);
        }
        free(got);
        clt_tensor_free(r);
        clt_tensor_free(a);
    }
    free(f);
    free(x);
}

Test(unary_more, values_float32_many_sizes)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {0, 1, 15, 17, 4099};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_values(dev, CLT_FLOAT32, 1, &sizes[s]);
    check_values(dev, CLT_FLOAT32, 0, NULL);
    int64_t s2[2] = {3, 0};
    check_values(dev, CLT_FLOAT32, 2, s2);
}

Test(unary_more, values_float64)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    const int64_t sizes[] = {1, 33, 517};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_values(dev, CLT_FLOAT64, 1, &sizes[s]);
}

/* The GPU variants: one element per work-item, contiguous and strided. */
Test(unary_more, values_gpu_variant)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    int64_t n = 1001;
    check_values(dev, CLT_FLOAT32, 1, &n);
}

/* A transposed (strided) input, and softplus with other parameters. */
Test(unary_more, transposed_input)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {37, 29}, n = 37 * 29;
    float *f = malloc((size_t)n * sizeof *f);
    double *x = malloc((size_t)n * sizeof *x);
    fill_random(f, (size_t)n, 3);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(f[i] / 10.01); /* in (-1, 1): log1p's domain */
    clt_tensor *base = upload(dev, CLT_FLOAT32, 2, s, n, x), *t = NULL;
    CHECK(clt_transpose(base, 0, 1, &t));
    cr_assert(!clt_tensor_is_contiguous(t));
    for (int op = 0; op <= NOPS; op++) {
        clt_tensor *r = NULL;
        if (op == NOPS)
            CHECK(clt_softplus(t, 2.0, 0.5, &r));
        else
            CHECK(fns[op](t, &r));
        double *got = download(r);
        for (int64_t i = 0; i < 29; i++)
            for (int64_t j = 0; j < 37; j++) {
                double xv = x[j * 29 + i];
                double want = (float)(op == NOPS ? ref_sp(xv, 2.0, 0.5) : ref(op, xv));
                assert_value(op == NOPS ? "softplus(beta 2, threshold 0.5)" : names[op], xv,
                             got[i * 37 + j], want, op == NOPS ? 4e-7 : rtol32[op], 0);
            }
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(t);
    clt_tensor_free(base);
    free(f);
    free(x);
}

/* ---- PyTorch 1.13's values at the edges -----------------------------------------
 * torch.log1p, torch.expm1, torch.tan, torch.sign, F.silu, F.softplus,
 * F.leaky_relu and F.elu on these inputs, printed by torch (float32 to 9
 * digits, float64 to 17); elu's with torch.expm1 for exp(x) - 1 (ops.h:
 * F.elu gives 0 at float32 -1e-10, and -1.000000082740371e-10 at float64
 * -1e-10). */
static const double edge_x_f32[24] = {
    NAN,   INFINITY, -INFINITY, -0.0,       0.0,  1.00000001e-10, -1.00000001e-10, 1e-30,
    1.00000002e+30, -1.00000002e+30, 88.8000031, 89.0, -1.0, -0.999999881, -2.0, 20.0,
    20.5,  -20.0,    -88.0,     -100.0,     100.0, 9.99999994e-09, 3.0,            -3.0};
static const double edge_want_f32[NOPS][24] = {
    /* log1p */ {NAN, INFINITY, NAN, -0.0, 0.0, 1.00000001e-10, -1.00000001e-10, 1e-30,
                 69.0775528, NAN, 4.49758482, 4.49980974, -INFINITY, -15.9423847, NAN,
                 3.04452252, 3.06805301, NAN, NAN, NAN, 4.61512041, 9.99999994e-09, 1.38629436,
                 NAN},
    /* expm1 */ {NAN, INFINITY, -1.0, -0.0, 0.0, 1.00000001e-10, -1.00000001e-10, 1e-30,
                 INFINITY, -1.0, INFINITY, INFINITY, -0.63212055, -0.63212049, -0.864664733,
                 485165184.0, 799902208.0, -1.0, -1.0, -1.0, INFINITY, 9.99999994e-09, 19.085537,
                 -0.950212955},
    /* tan */ {NAN, NAN, NAN, -0.0, 0.0, 1.00000001e-10, -1.00000001e-10, 1e-30, 1.29358602,
               -1.29358602, 1.1053791, 1.68582535, -1.55740774, -1.55740726, 2.18503976,
               2.23716092, -12.5287218, -2.23716092, -0.0354204997, 0.587213933, -0.587213933,
               9.99999994e-09, -0.142546549, 0.142546549},
    /* sign */ {0.0, 1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0,
                1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0},
    /* silu */ {NAN, INFINITY, NAN, -0.0, 0.0, 5.00000007e-11, -5.00000007e-11, 5.00000002e-31,
                1.00000002e+30, -0.0, 88.8000031, 89.0, -0.268941432, -0.268941402,
                -0.238405839, 20.0, 20.5, -4.12230747e-08, -5.32804976e-37, -0.0, 100.0,
                4.99999997e-09, 2.85772252, -0.142277613},
    /* softplus */ {NAN, INFINITY, 0.0, 0.693147182, 0.693147182, 0.693147182, 0.693147182,
                    0.693147182, 1.00000002e+30, 0.0, 88.8000031, 89.0, 0.313261688, 0.313261718,
                    0.126928017, 20.0, 20.5, 2.06115369e-09, 6.05460149e-39, 3.78350585e-44,
                    100.0, 0.693147182, 3.04858732, 0.048587352},
    /* leaky_relu */ {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.00000001e-10, -9.99999996e-13,
                      1e-30, 1.00000002e+30, -9.99999944e+27, 88.8000031, 89.0, -0.00999999978,
                      -0.00999999885, -0.0199999996, 20.0, 20.5, -0.199999988, -0.879999995,
                      -1.0, 100.0, 9.99999994e-09, 3.0, -0.0299999993},
    /* elu */ {NAN, INFINITY, -1.0, 0.0, 0.0, 1.00000001e-10, -1.00000001e-10, 1e-30,
               1.00000002e+30, -1.0, 88.8000031, 89.0, -0.63212055, -0.63212049, -0.864664733,
               20.0, 20.5, -1.0, -1.0, -1.0, 100.0, 9.99999994e-09, 3.0, -0.950212955},
};
static const double edge_x_f64[24] = {
    NAN,   INFINITY, -INFINITY, -0.0, 0.0,  1e-10, -1e-10, 1.0000000000000001e-30, 1e+30, -1e+30,
    709.0, 710.0,    -1.0,      -0.99999990000000005,   -2.0, 20.0,  20.5,   -20.0,
    -88.0, -104.0,   100.0,     1e-08, 3.0, -3.0};
static const double edge_want_f64[NOPS][24] = {
    /* log1p */ {NAN, INFINITY, NAN, -0.0, 0.0, 9.9999999995000007e-11, -1.00000000005e-10,
                 1.0000000000000001e-30, 69.077552789821368, NAN, 6.5652649700353614,
                 6.5666724298032406, -INFINITY, -16.118095651484676, NAN, 3.044522437723423,
                 3.068052935133617, NAN, NAN, NAN, 4.6151205168412597, 9.999999950000001e-09,
                 1.3862943611198906, NAN},
    /* expm1 */ {NAN, INFINITY, -1.0, -0.0, 0.0, 1.00000000005e-10, -9.9999999995000007e-11,
                 1.0000000000000001e-30, INFINITY, -1.0, 8.2184074615549724e+307, INFINITY,
                 -0.63212055882855767, -0.63212052204061175, -0.8646647167633873,
                 485165194.40979028, 799902176.47550535, -0.99999999793884642, -1.0, -1.0,
                 2.6881171418161356e+43, 1.0000000050000001e-08, 19.085536923187668,
                 -0.95021293163213605},
    /* tan */ {NAN, NAN, NAN, -0.0, 0.0, 1e-10, -1e-10, 1.0000000000000001e-30,
               -0.0093318752326624066, 0.0093318752326624066, -1.5572012239442703,
               6.0288706801151796e-05, -1.5574077246549023, -1.5574073821030736,
               2.1850398632615189, 2.2371609442247422, -12.528721729997956, -2.2371609442247422,
               -0.035420501339376929, -0.33966973169509312, -0.58721391515692911, 1e-08,
               -0.1425465430742778, 0.1425465430742778},
    /* sign */ {0.0, 1.0, -1.0, 0.0, 0.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0,
                1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0},
    /* silu */ {NAN, INFINITY, NAN, -0.0, 0.0, 5.00000000025e-11, -4.9999999997500004e-11,
                5.0000000000000004e-31, 1e+30, -0.0, 709.0, 710.0, -0.2689414213699951,
                -0.26894141413704481, -0.23840584404423509, 19.999999958776925,
                20.499999974371867, -4.1223072363804073e-08, -5.3280496679530441e-37,
                -7.0860990944071099e-44, 100.0, 5.0000000249999997e-09, 2.8577223804672998,
                -0.14227761953270035},
    /* softplus */ {NAN, INFINITY, 0.0, 0.69314718055994529, 0.69314718055994529,
                    0.69314718060994529, 0.69314718050994528, 0.69314718055994529, 1e+30, 0.0,
                    709.0, 710.0, 0.31326168751822286, 0.31326171441236594, 0.12692801104297249,
                    20.000000002061153, 20.5, 2.0611536203143808e-09, 6.0546018954011858e-39,
                    6.8135568215452984e-46, 100.0, 0.69314718555994526, 3.0485873515737421,
                    0.048587351573742062},
    /* leaky_relu */ {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-10, -9.9999999999999998e-13,
                      1.0000000000000001e-30, 1e+30, -9.9999999999999996e+27, 709.0, 710.0,
                      -0.01, -0.0099999990000000007, -0.02, 20.0, 20.5, -0.20000000000000001,
                      -0.88, -1.04, 100.0, 1e-08, 3.0, -0.029999999999999999},
    /* elu */ {NAN, INFINITY, -1.0, 0.0, 0.0, 1e-10, -9.9999999995000007e-11,
               1.0000000000000001e-30, 1e+30, -1.0, 709.0, 710.0, -0.63212055882855767,
               -0.63212052204061175, -0.8646647167633873, 20.0, 20.5, -0.99999999793884642,
               -1.0, -1.0, 100.0, 1e-08, 3.0, -0.95021293163213605},
};

/* Each edge value in the vector loop (a tensor of 24 copies of it, twice
 * over) and alone in a 0-d tensor (the scalar code). */
static void check_edges(clt_device *dev, clt_dtype dt, const double *xs,
                        const double (*want)[24])
{
    bool f32 = dt == CLT_FLOAT32;
    /* float32: torch rounds tan 1 ulp apart, and a denormal result (softplus
     * of -100) is within one denormal step */
    double rtol = f32 ? 2.5e-7 : 1e-15, atol = f32 ? 1.5e-45 : 0;
    for (int op = 0; op < NOPS; op++)
        for (int k = 0; k < 24; k++) {
            double v[48];
            for (int i = 0; i < 48; i++)
                v[i] = xs[k];
            int64_t n = 48;
            clt_tensor *a = upload(dev, dt, 1, &n, n, v), *s = upload(dev, dt, 0, NULL, 1, v);
            clt_tensor *r = NULL, *rs = NULL;
            CHECK(fns[op](a, &r));
            CHECK(fns[op](s, &rs));
            double *got = download(r), *gs = download(rs);
            char what[64];
            snprintf(what, sizeof what, "%s %s", clt_dtype_name(dt), names[op]);
            for (int i = 0; i < 48; i++)
                assert_value(what, xs[k], got[i], want[op][k], rtol, atol);
            assert_value(what, xs[k], gs[0], want[op][k], rtol, atol);
            free(got);
            free(gs);
            clt_tensor_free(r);
            clt_tensor_free(rs);
            clt_tensor_free(a);
            clt_tensor_free(s);
        }
}

Test(unary_more, torch_edge_values)
{
    clt_device *dev = get_device("cpu");
    check_edges(dev, CLT_FLOAT32, edge_x_f32, edge_want_f32);
    if (clt_device_supports_dtype(dev, CLT_FLOAT64))
        check_edges(dev, CLT_FLOAT64, edge_x_f64, edge_want_f64);
}

static float *grad_of_sum(clt_device *dev, un_fn f, const float *x, int64_t n,
                          const char *grad_fn);

static clt_status softplus_1000(const clt_tensor *a, clt_tensor **out)
{
    return clt_softplus(a, 1.0, 1000.0, out);
}

/* Where PyTorch 1.13's CPU kernels are wrong, the exact results (ops.h):
 * its log1p of more than half the largest value is inf (3e38 in float32,
 * 1.7e308 in float64), its log1p of a denormal 0 (float64 tan of one too),
 * and softplus with a threshold above 88 overflows in float32, its
 * gradient z / (z + 1) too (NaN). */
Test(unary_more, exact_where_torch_is_not)
{
    clt_device *dev = get_device("cpu");
    double x[3] = {3e38, 1e-45, -1e-45};
    int64_t n = 3;
    clt_tensor *a = upload(dev, CLT_FLOAT32, 1, &n, n, x), *r;
    CHECK(clt_log1p(a, &r));
    double *g = download(r);
    cr_assert(close_enough(g[0], (float)log1p((double)(float)3e38), 2.5e-7, 0), "%g", g[0]);
    cr_assert(g[1] == (float)1e-45 && g[2] == -(float)1e-45, "log1p of denormals: %g %g", g[1],
              g[2]);
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(a);

    double big[4] = {100, 200, 1e30, -300};
    n = 4;
    a = upload(dev, CLT_FLOAT32, 1, &n, n, big);
    CHECK(clt_softplus(a, 1.0, 1000.0, &r));
    g = download(r);
    const double want[4] = {100, 200, 1e30, 0}; /* + log1p(exp(-|x|)), below float's ulp */
    for (int i = 0; i < 4; i++)
        assert_value("softplus(threshold 1000)", big[i], g[i], (float)want[i], 0, 0);
    free(g);
    const float fbig[4] = {100, 200, 1e30f, -300};
    float *fg = grad_of_sum(dev, softplus_1000, fbig, 4, "SoftplusBackward0");
    for (int i = 0; i < 4; i++)
        assert_value("softplus'(threshold 1000)", fbig[i], fg[i], i < 3 ? 1.0 : 0.0, 0, 0);
    free(fg);
    clt_tensor_free(r);
    clt_tensor_free(a);

    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        return;
    double d[4] = {5e-324, -1e-310, 1000.0, 1.7e308};
    a = upload(dev, CLT_FLOAT64, 1, &n, n, d);
    CHECK(clt_tan(a, &r));
    g = download(r);
    for (int i = 0; i < 3; i++)
        assert_value("tan", d[i], g[i], tan(d[i]), 1e-15, 0);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_log1p(a, &r));
    g = download(r);
    for (int i = 0; i < 4; i++)
        assert_value("log1p", d[i], g[i], log1p(d[i]), 1e-15, 0);
    cr_assert(g[0] == 5e-324, "log1p(5e-324) = %g", g[0]);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_softplus(a, 1.0, 1e4, &r));
    g = download(r);
    cr_assert_eq(g[2], 1000.0, "softplus(1000, threshold 1e4) = %g", g[2]);
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* Every lane on its own: an inf, NaN or huge value in one lane of a 16-wide
 * vector must not change the tiny values beside it (PoCL's 16-wide float32
 * tan turned tan(1e-30) into 0.0099 beside 1e30, and spoiled lanes beside
 * 1e7 already, as its sin and cos did). */
Test(unary_more, lanes_independent)
{
    clt_device *dev = get_device("cpu");
    const double specials[] = {INFINITY, -INFINITY, NAN, 3e38, -3.3e38, 1e30, -1e30, 88.8,
                               -104, 1e5, -1e5, 1e7, -5e7, 9999};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++) {
            double x[33];
            for (int i = 0; i < 33; i++)
                x[i] = i % 3 == 0 ? 1e-30 : i % 3 == 1 ? -2e-38 : 0.3 + 0.01 * i;
            x[1] = d ? 1e-310 : 1e-45;
            x[5] = x[20] = specials[s];
            if (!d)
                for (int i = 0; i < 33; i++)
                    x[i] = (float)x[i];
            int64_t n = 33;
            clt_tensor *a = upload(dev, dt, 1, &n, n, x);
            for (int op = 0; op < NOPS; op++) {
                clt_tensor *r = NULL;
                CHECK(fns[op](a, &r));
                double *g = download(r);
                for (int i = 0; i < 33; i++) {
                    double want = ref(op, x[i]);
                    if (!d)
                        want = (float)want;
                    double rtol = d ? 1e-15 : 3e-7;
                    if (op == TAN && fabs(x[i]) > 1e4)
                        rtol = d ? 1e-13 : 1e-5; /* tan of a huge value: range reduction */
                    if (op == SILU && x[i] == -104 && !d)
                        want = -0.0; /* exp(104) overflows float: -0.0, as torch */
                    if (op == SILU && x[i] == -INFINITY)
                        want = NAN; /* -inf / inf, as torch */
                    char what[64];
                    snprintf(what, sizeof what, "%s %s beside %g", clt_dtype_name(dt),
                             names[op], specials[s]);
                    assert_value(what, x[i], g[i], want, rtol, 0);
                }
                free(g);
                clt_tensor_free(r);
            }
            clt_tensor_free(a);
        }
    }
}

/* ---- dtypes ------------------------------------------------------------------------ */

/* The message names the call first (it goes on to name clt_to_dtype, the
 * fix). */
static void opens_with(const char *fn)
{
    size_t n = strlen(fn);
    cr_assert(strncmp(clt_last_error(), fn, n) == 0 && clt_last_error()[n] == ':', "%s",
              clt_last_error());
}

/* log1p, expm1 and tan of integer and bool tensors are float32; sign keeps
 * the dtype (bool unchanged); silu, softplus, leaky_relu and elu refuse
 * them, all as torch. */
Test(unary_more, integer_and_bool_inputs)
{
    clt_device *dev = get_device("cpu");
    const int32_t i32[6] = {INT32_MIN, -5, 0, 7, INT32_MAX, -1};
    const int64_t i64[6] = {INT64_MIN, -3, 0, 9, INT64_MAX, 1};
    const uint8_t u8[6] = {0, 1, 255, 128, 2, 7}, b8[6] = {0, 1, 1, 0, 1, 0};
    struct {
        clt_dtype dt;
        const void *v;
    } in[4] = {{CLT_INT32, i32}, {CLT_INT64, i64}, {CLT_UINT8, u8}, {CLT_BOOL, b8}};
    int64_t n = 6;
    for (int k = 0; k < 4; k++) {
        clt_tensor *a = NULL;
        CHECK(clt_tensor_from_host(dev, in[k].dt, 1, &n, in[k].v, &a));
        double x[6];
        for (int i = 0; i < 6; i++)
            x[i] = in[k].dt == CLT_INT32 ? i32[i]
                 : in[k].dt == CLT_INT64 ? (double)i64[i]
                 : in[k].dt == CLT_UINT8 ? u8[i]
                                         : b8[i];
        for (int op = LOG1P; op <= TAN; op++) {
            clt_tensor *r = NULL;
            CHECK(fns[op](a, &r));
            cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "%s of %s", names[op],
                         clt_dtype_name(in[k].dt));
            double *g = download(r);
            for (int i = 0; i < 6; i++) {
                float xf = (float)x[i];
                /* tan of a value near 2^31 or 2^63 in float: range reduction */
                double rtol = op == TAN && fabs(xf) > 1e4 ? 1e-5 : rtol32[op];
                assert_value(names[op], xf, g[i], (float)ref(op, xf), rtol, 0);
            }
            free(g);
            clt_tensor_free(r);
        }
        clt_tensor *r = NULL;
        CHECK(clt_sign(a, &r));
        cr_assert_eq(clt_tensor_dtype(r), in[k].dt, "sign keeps %s", clt_dtype_name(in[k].dt));
        unsigned char raw[48];
        size_t es = in[k].dt == CLT_INT64 ? 8 : in[k].dt == CLT_INT32 ? 4 : 1;
        CHECK(clt_tensor_read(r, raw, 6 * es));
        for (int i = 0; i < 6; i++) {
            int64_t got = es == 8 ? ((int64_t *)raw)[i] : es == 4 ? ((int32_t *)raw)[i] : raw[i];
            int64_t want = (x[i] > 0) - (x[i] < 0);
            cr_assert_eq(got, want, "sign(%g) on %s: %lld", x[i], clt_dtype_name(in[k].dt),
                         (long long)got);
        }
        clt_tensor_free(r);
        for (int op = SILU; op < NOPS; op++) {
            r = (clt_tensor *)&r;
            clt_status st = fns[op](a, &r);
            char fn[32];
            snprintf(fn, sizeof fn, "clt_%s", names[op]);
            assert_error(st, CLT_ERR_DTYPE_MISMATCH, clt_dtype_name(in[k].dt));
            opens_with(fn);
            cr_assert_null(r);
        }
        clt_tensor_free(a);
    }
}

/* float16 keeps its dtype and computes in float, as for the other
 * floating functions (values through a float32 copy). */
Test(unary_more, float16)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("no float16 on %s", clt_device_name(dev));
    double x[20];
    for (int i = 0; i < 20; i++)
        x[i] = -0.95 + 0.25 * i;
    int64_t n = 20;
    clt_tensor *a32 = upload(dev, CLT_FLOAT32, 1, &n, n, x), *a = NULL, *back = NULL;
    CHECK(clt_to_dtype(a32, CLT_FLOAT16, &a));
    /* the references take the inputs as float16 holds them (-0.95 is
     * -0.9501953125 there) */
    CHECK(clt_to_dtype(a, CLT_FLOAT32, &back));
    double *xh = download(back);
    memcpy(x, xh, sizeof x);
    free(xh);
    clt_tensor_free(back);
    for (int op = 0; op < NOPS; op++) {
        clt_tensor *r = NULL, *r32 = NULL;
        CHECK(fns[op](a, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT16);
        CHECK(clt_to_dtype(r, CLT_FLOAT32, &r32));
        double *g = download(r32);
        for (int i = 0; i < 20; i++)
            assert_value(names[op], x[i], g[i], ref(op, x[i]), 1e-3, 1e-4);
        free(g);
        clt_tensor_free(r);
        clt_tensor_free(r32);
    }
    clt_tensor_free(a);
    clt_tensor_free(a32);
}

/* ---- softplus's beta and threshold ------------------------------------------------- */

Test(unary_more, softplus_beta_and_threshold)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    double x[7] = {-3, -1, 0, 1, 3, 30, 10};
    int64_t n = 7;
    clt_tensor *a = upload(dev, CLT_FLOAT64, 1, &n, n, x);
    const struct {
        double beta, threshold;
    } ps[] = {{2, 5}, {-1, 20}, {0.5, 1}, {2, 20}, {1, -INFINITY}, {1, NAN}, {0, 20}, {NAN, 20}};
    for (size_t p = 0; p < sizeof ps / sizeof ps[0]; p++) {
        clt_tensor *r = NULL;
        CHECK(clt_softplus(a, ps[p].beta, ps[p].threshold, &r));
        double *g = download(r);
        for (int i = 0; i < 7; i++)
            assert_value("softplus", x[i], g[i], ref_sp(x[i], ps[p].beta, ps[p].threshold),
                         1e-15, 0);
        free(g);
        clt_tensor_free(r);
    }
    /* beta * x == threshold takes the log (beta 2, x 10, threshold 20:
     * log1p(exp(20)) / 2 = 10 + 1.03e-9), as torch's strict '>' does; beta
     * -1 gives torch's -softplus(-x) (printed by torch, whose last value,
     * -exp(-30), is 4.7e-14 apart from -log1p(exp(-30))) */
    clt_tensor *r = NULL;
    CHECK(clt_softplus(a, 2, 20, &r));
    double *g = download(r);
    cr_assert(g[6] > 10.000000001 && g[6] < 10.0000000011, "%.17g", g[6]);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_softplus(a, -1, 20, &r));
    g = download(r);
    const double neg[6] = {-3.0485873515737421, -1.3132616875182228, -0.69314718055994529,
                           -0.31326168751822286, -0.048587351573742062, -9.3576229688401746e-14};
    for (int i = 0; i < 6; i++)
        assert_value("softplus(beta -1)", x[i], g[i], neg[i], i == 5 ? 1e-13 : 1e-15, 0);
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* ---- gradients ---------------------------------------------------------------------- */

static clt_status call_softplus(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const double *p = ctx;
    return clt_softplus(in[0], p[0], p[1], out);
}

static clt_status call_layer(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_module_forward((clt_module *)ctx, in[0], out);
}

/* Away from tan's poles and softplus's kink (beta 2, threshold 3: x = 1.5). */
static const double X8[] = {0.7, -1.3, 1.1, -0.4, 0.05, -0.8, 2.1, -3.2};
static const double LOG1P_X8[] = {0.7, -0.6, 1.1, -0.4, 0.05, -0.8, 2.1, 3.2};
static const double TAN_X8[] = {0.7, -1.3, 1.1, -0.4, 0.05, -0.8, 1.2, -0.2};

Test(unary_more, gradients)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    gc_in xs[1] = {{2, {2, 4}, X8, 1}};
    gc_in lx[1] = {{2, {2, 4}, LOG1P_X8, 1}}, tx[1] = {{1, {8}, TAN_X8, 1}};
    gradcheck(dev, call_un, &fns[LOG1P], 1, lx);
    gradcheck(dev, call_un, &fns[EXPM1], 1, xs);
    gradcheck(dev, call_un, &fns[TAN], 1, tx);
    gradcheck(dev, call_un, &fns[SILU], 1, xs);
    gradcheck(dev, call_un, &fns[SOFTPLUS], 1, xs);
    gradcheck(dev, call_un, &fns[LEAKY_RELU], 1, xs);
    gradcheck(dev, call_un, &fns[ELU], 1, xs);
    const double p[3][2] = {{2, 3}, {-1.5, 2}, {0.5, -1}};
    for (int i = 0; i < 3; i++)
        gradcheck(dev, call_softplus, p[i], 1, xs);
    clt_module *silu, *softplus, *leaky, *elu;
    CHECK(clt_silu_layer(&silu));
    CHECK(clt_softplus_layer(2, 3, &softplus));
    CHECK(clt_leaky_relu_layer(-0.3, &leaky));
    CHECK(clt_elu_layer(1.7, &elu));
    gradcheck(dev, call_layer, silu, 1, xs);
    gradcheck(dev, call_layer, softplus, 1, xs);
    gradcheck(dev, call_layer, leaky, 1, xs);
    gradcheck(dev, call_layer, elu, 1, xs);
    clt_module_free(silu);
    clt_module_free(softplus);
    clt_module_free(leaky);
    clt_module_free(elu);
}

/* x's gradient of sum(op(x)) for the float32 x, as a new array. */
static float *grad_of_sum(clt_device *dev, un_fn f, const float *x, int64_t n,
                          const char *grad_fn)
{
    clt_tensor *t, *y, *l;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, x, &t));
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_scope_begin());
    CHECK(f(t, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), grad_fn);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    float *g = read_grad_f32(t);
    clt_tensor_free(t);
    return g;
}

/* torch's gradients at the edges (x.grad after f(x).sum().backward(),
 * printed by torch): sign's is zero everywhere, silu's NaN at +-inf,
 * softplus's 1 past the threshold and 0 at -inf, leaky_relu's the slope at
 * 0 and NaN, elu's 1 at NaN and alpha at -0.0. */
Test(unary_more, gradients_at_the_edges)
{
    clt_device *dev = get_device("cpu");
    const float x[10] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -1.0f, -100.0f, 100.0f, 25.0f,
                         -1e-10f};
    const struct {
        un_fn f;
        const char *name;
        float want[10];
    } cases[] = {
        {clt_log1p, "Log1PBackward0",
         {NAN, 0.0f, -0.0f, 1, 1, INFINITY, -0.010101010091602802f, 0.009900989942252636f,
          0.03846153989434242f, 1}},
        {clt_expm1, "Expm1Backward0",
         {NAN, INFINITY, 0, 1, 1, 0.3678794503211975f, 0, INFINITY, 72004902912.0f, 1}},
        {clt_tan, "TanBackward0",
         {NAN, NAN, NAN, 1, 1, 3.425518751144409f, 1.344820261001587f, 1.344820261001587f,
          1.0178292989730835f, 1}},
        {clt_sign, "SignBackward0", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {clt_silu, "SiluBackward0",
         {NAN, NAN, NAN, 0.5f, 0.5f, 0.07232948392629623f, -0.0f, 1, 1, 0.5f}},
        {softplus_default, "SoftplusBackward0",
         {NAN, 1, 0, 0.5f, 0.5f, 0.2689414322376251f, 3.783505853677006e-44f, 1, 1, 0.5f}},
        {leaky_relu_default, "LeakyReluBackward0",
         {0.01f, 1, 0.01f, 0.01f, 0.01f, 0.01f, 0.01f, 1, 1, 0.01f}},
        {elu_default, "EluBackward0",
         {1, 1, 0, 1, 1, 0.3678794503211975f, 3.783505853677006e-44f, 1, 1, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float *g = grad_of_sum(dev, cases[c].f, x, 10, cases[c].name);
        for (int i = 0; i < 10; i++)
            assert_value(cases[c].name, x[i], g[i], cases[c].want[i], 4e-7, 1.5e-45);
        free(g);
    }
}

/* ---- layers ------------------------------------------------------------------------ */

Test(unary_more, layers)
{
    clt_device *dev = get_device("cpu");
    clt_module *silu, *softplus;
    CHECK(clt_silu_layer(&silu));
    CHECK(clt_softplus_layer(2.0, 5.0, &softplus));
    cr_assert_str_eq(clt_module_name(silu), "SiLU");
    cr_assert_str_eq(clt_module_name(softplus), "Softplus");
    cr_assert_eq(clt_module_num_parameters(softplus), 0);
    double x[12];
    for (int i = 0; i < 12; i++)
        x[i] = -6.5 + 1.25 * i; /* beta * x crosses the threshold at x = 2.5 */
    int64_t s[2] = {3, 4}, n = 12;
    clt_tensor *a = upload(dev, CLT_FLOAT32, 2, s, n, x), *y = NULL;
    CHECK(clt_module_forward(silu, a, &y));
    assert_shape(y, 2, s);
    double *g = download(y);
    for (int i = 0; i < 12; i++)
        assert_value("SiLU", x[i], g[i], (float)ref(SILU, x[i]), rtol32[SILU], 0);
    free(g);
    clt_tensor_free(y);
    CHECK(clt_module_forward(softplus, a, &y));
    g = download(y);
    for (int i = 0; i < 12; i++)
        assert_value("Softplus(2, 5)", x[i], g[i], (float)ref_sp(x[i], 2, 5), 4e-7, 0);
    free(g);
    clt_tensor_free(y);

    /* an integer input is refused with the layer named */
    clt_tensor *xi = NULL;
    CHECK(clt_full(dev, CLT_INT64, 2, s, 3, &xi));
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(softplus, xi, &y), CLT_ERR_DTYPE_MISMATCH, "Softplus");
    cr_assert_null(y);
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(silu, xi, &y), CLT_ERR_DTYPE_MISMATCH, "SiLU");
    cr_assert_null(y);
    cr_assert(!strstr(clt_last_error(), "clt_silu"), "%s", clt_last_error());
    clt_tensor_free(xi);
    clt_tensor_free(a);
    clt_module_free(silu);
    clt_module_free(softplus);
    cr_assert_eq(clt_softplus_layer(1, 20, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_silu_layer(NULL), CLT_ERR_NULL_ARGUMENT);
}

/* LeakyReLU and ELU keep their scalar (nn.LeakyReLU(0.2), nn.ELU(0.5)) and
 * hold no parameters; an integer input is refused with the layer named. */
Test(unary_more, leaky_relu_and_elu_layers)
{
    clt_device *dev = get_device("cpu");
    clt_module *leaky, *elu;
    CHECK(clt_leaky_relu_layer(0.2, &leaky));
    CHECK(clt_elu_layer(0.5, &elu));
    cr_assert_str_eq(clt_module_name(leaky), "LeakyReLU");
    cr_assert_str_eq(clt_module_name(elu), "ELU");
    cr_assert_eq(clt_module_num_parameters(leaky), 0);
    cr_assert_eq(clt_module_num_parameters(elu), 0);
    double x[12];
    for (int i = 0; i < 12; i++)
        x[i] = -6.5 + 1.25 * i;
    int64_t s[2] = {3, 4}, n = 12;
    clt_tensor *a = upload(dev, CLT_FLOAT64, 2, s, n, x), *y = NULL;
    CHECK(clt_module_forward(leaky, a, &y));
    assert_shape(y, 2, s);
    double *g = download(y);
    for (int i = 0; i < 12; i++)
        assert_value("LeakyReLU(0.2)", x[i], g[i], x[i] > 0 ? x[i] : 0.2 * x[i], 1e-15, 0);
    free(g);
    clt_tensor_free(y);
    CHECK(clt_module_forward(elu, a, &y));
    g = download(y);
    for (int i = 0; i < 12; i++)
        assert_value("ELU(0.5)", x[i], g[i], x[i] > 0 ? x[i] : 0.5 * expm1(x[i]), 1e-15, 0);
    free(g);
    clt_tensor_free(y);
    clt_tensor *xi = NULL;
    CHECK(clt_full(dev, CLT_INT32, 2, s, 3, &xi));
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(leaky, xi, &y), CLT_ERR_DTYPE_MISMATCH, "LeakyReLU");
    cr_assert_null(y);
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(elu, xi, &y), CLT_ERR_DTYPE_MISMATCH, "ELU");
    cr_assert_null(y);
    cr_assert(!strstr(clt_last_error(), "clt_elu"), "%s", clt_last_error());
    clt_tensor_free(xi);
    clt_tensor_free(a);
    clt_module_free(leaky);
    clt_module_free(elu);
    cr_assert_eq(clt_leaky_relu_layer(0.01, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_elu_layer(1.0, NULL), CLT_ERR_NULL_ARGUMENT);
}

/* Any slope and alpha are taken, as by torch: a negative slope flips the
 * negative side (leaky_relu(-2, -0.5) is 1), alpha 0 gives -0.0 below 0, a
 * negative alpha a positive value (torch's values, float64). */
Test(unary_more, leaky_relu_and_elu_scalars)
{
    clt_device *dev = get_device("cpu");
    const double x[7] = {-2.0, -0.0, 0.0, 3.0, -INFINITY, INFINITY, NAN};
    const struct {
        int elu;
        double s, want[7];
    } cases[] = {
        {0, 0.2, {-0.4, -0.0, 0.0, 3.0, -INFINITY, INFINITY, NAN}},
        {0, -0.5, {1.0, 0.0, -0.0, 3.0, INFINITY, INFINITY, NAN}},
        {1, 1.5, {-1.2969970751450810, 0.0, 0.0, 3.0, -1.5, INFINITY, NAN}},
        {1, -0.5, {0.43233235838169365, -0.0, -0.0, 3.0, 0.5, INFINITY, NAN}},
        {1, 0.0, {-0.0, 0.0, 0.0, 3.0, -0.0, INFINITY, NAN}},
    };
    int64_t n = 7;
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        clt_tensor *a = upload(dev, dt, 1, &n, n, x);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            clt_tensor *r = NULL;
            if (cases[c].elu)
                CHECK(clt_elu(a, cases[c].s, &r));
            else
                CHECK(clt_leaky_relu(a, cases[c].s, &r));
            double *g = download(r);
            for (int i = 0; i < 7; i++)
                assert_value(cases[c].elu ? "elu" : "leaky_relu", x[i], g[i],
                             d ? cases[c].want[i] : (float)cases[c].want[i], d ? 1e-15 : 2e-7,
                             0);
            free(g);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
    }
}

/* ---- bad input ---------------------------------------------------------------------- */

Test(unary_more, bad_input)
{
    clt_device *dev = get_device("cpu");
    for (int op = 0; op < NOPS; op++) {
        char fn[32];
        snprintf(fn, sizeof fn, "clt_%s", names[op]);
        clt_tensor *r = (clt_tensor *)&r;
        assert_error(fns[op](NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
        names_only(op == SOFTPLUS ? "clt_softplus" : fn);
        cr_assert_null(r);
    }
    int64_t n = 3;
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n, &b));
    for (int op = 0; op < NOPS; op++)
        cr_assert_eq(fns[op](a, NULL), CLT_ERR_NULL_ARGUMENT, "%s", names[op]);
    clt_tensor *r = (clt_tensor *)&r;
    assert_error(clt_softplus(b, 1, 20, &r), CLT_ERR_DTYPE_MISMATCH, "bool");
    opens_with("clt_softplus");
    cr_assert_null(r);
    /* the input is left as it was */
    float *v = read_f32(a);
    cr_assert(v[0] == 1 && v[1] == 1 && v[2] == 1);
    free(v);
    clt_tensor_free(a);
    clt_tensor_free(b);
}
