/* test_activations.c: clt_hardtanh ... clt_prelu and clt_softmin against
 * host references in double (special values, kinks, huge inputs, dtypes),
 * their gradients by finite differences in float64 and at the kinks as
 * PyTorch 1.13 defines them, grad_fn names, refusals, and the layers. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"

static clt_device *dev;

static void setup(void)
{
    dev = get_device("cpu");
}

static void teardown(void)
{
    clt_shutdown();
}

TestSuite(activations, .init = setup, .fini = teardown);

/* ---- host references ----------------------------------------------------------------- */

enum { HARDTANH, RELU6, THRESHOLD, HARDSIGMOID, HARDSWISH, MISH, SELU, CELU, SOFTSIGN,
       TANHSHRINK, HARDSHRINK, SOFTSHRINK, LOGSIGMOID, NOPS };

static const char *const op_names[NOPS] = {
    "hardtanh", "relu6", "threshold", "hardsigmoid", "hardswish", "mish", "selu",
    "celu", "softsign", "tanhshrink", "hardshrink", "softshrink", "logsigmoid"};

/* What each test passes as the op's scalars (torch's defaults, mostly). */
typedef struct act_case {
    int op;
    double s0, s1;
} act_case;

static double clampd(double x, double lo, double hi)
{
    if (isnan(x))
        return x;
    double t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

/* f32: the float32 roundings that PyTorch's kernels make too: hardswish's
 * product (which overflows before the division) and celu's x / alpha. */
static double ref(const act_case *c, double x, int f32)
{
    static const double sa = 1.6732632423543772848170429916717;
    static const double ss = 1.0507009873554804934193349852946;
    switch (c->op) {
    case HARDTANH: return clampd(x, c->s0, c->s1);
    case RELU6: return clampd(x, 0, 6);
    case THRESHOLD: return x <= c->s0 ? c->s1 : x;
    case HARDSIGMOID: return clampd(x + 3, 0, 6) / 6;
    case HARDSWISH: {
        double p = x * clampd(x + 3, 0, 6);
        return (f32 ? (double)(float)p : p) / 6;
    }
    case MISH: return x * tanh(log1p(exp(x)));
    case SELU: return x > 0 ? ss * x : ss * sa * expm1(x);
    case CELU: {
        /* 1 / alpha and its product with x in the dtype, as PyTorch's */
        double ia = f32 ? (double)(float)(1.0 / c->s0) : 1.0 / c->s0;
        double z = f32 ? (double)(float)(x * ia) : x * ia;
        return x > 0 ? x : c->s0 * expm1(z);
    }
    case SOFTSIGN: return x / (1 + fabs(x));
    case TANHSHRINK: return x - tanh(x);
    case HARDSHRINK: return (x >= -c->s0 && x <= c->s0) ? 0 : x;
    case SOFTSHRINK: return x > c->s0 ? x - c->s0 : x < -c->s0 ? x + c->s0 : 0;
    case LOGSIGMOID: return isnan(x) ? x : x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x));
    }
    return NAN;
}

static clt_status run(const act_case *c, const clt_tensor *a, clt_tensor **out)
{
    switch (c->op) {
    case HARDTANH: return clt_hardtanh(a, c->s0, c->s1, out);
    case RELU6: return clt_relu6(a, out);
    case THRESHOLD: return clt_threshold(a, c->s0, c->s1, out);
    case HARDSIGMOID: return clt_hardsigmoid(a, out);
    case HARDSWISH: return clt_hardswish(a, out);
    case MISH: return clt_mish(a, out);
    case SELU: return clt_selu(a, out);
    case CELU: return clt_celu(a, c->s0, out);
    case SOFTSIGN: return clt_softsign(a, out);
    case TANHSHRINK: return clt_tanhshrink(a, out);
    case HARDSHRINK: return clt_hardshrink(a, c->s0, out);
    case SOFTSHRINK: return clt_softshrink(a, c->s0, out);
    case LOGSIGMOID: return clt_logsigmoid(a, out);
    }
    return CLT_ERR_INTERNAL;
}

static const act_case cases[] = {
    {HARDTANH, -1, 1},   {HARDTANH, -0.5, 2},  {HARDTANH, 1, -1},  {RELU6, 0, 0},
    {THRESHOLD, 0.5, 2}, {THRESHOLD, -1, -7},  {HARDSIGMOID, 0, 0}, {HARDSWISH, 0, 0},
    {MISH, 0, 0},        {SELU, 0, 0},         {CELU, 1, 0},       {CELU, 0.5, 0},
    {CELU, -1.5, 0},     {SOFTSIGN, 0, 0},     {TANHSHRINK, 0, 0}, {HARDSHRINK, 0.5, 0},
    {HARDSHRINK, 0, 0},  {HARDSHRINK, -1, 0},  {SOFTSHRINK, 0.5, 0}, {SOFTSHRINK, 2, 0},
    {LOGSIGMOID, 0, 0},
};

/* Kinks, saturation, +-inf, NaN, -0.0, and values where exp overflows in
 * float32 (past 88) and in float64 (past 709). */
static const double edge[] = {
    -3, 3, -1, 1, 0, -0.0, -0.5, 0.5, 6, -6, 2.5, -2.5, 2, -2, -INFINITY, INFINITY, NAN,
    -1e30, 1e30, -100, 100, -88, -89, 20, -20, 1e-10, -1e-10, -750, 710, 3e38, -3e38,
    0.75, -0.3, 1e-3, -1e-3, 4.5, -4.5, 12, 0.25};
#define NEDGE (sizeof edge / sizeof edge[0])

/* Enough elements for a 16-wide loop and a scalar tail: the edges, then
 * values in [-8, 8). */
#define NV 77
static void values(double *v)
{
    for (int k = 0; k < NV; k++)
        v[k] = k < (int)NEDGE ? edge[k] : -8 + 16.0 * ((k * 37) % 64) / 64.0 + 0.0078125;
}

/* got against want for input x: NaN where NaN, infinities exactly, else
 * within rtol of the larger of |want| and |x| (x - tanh(x) and x - lambd
 * cancel: their error scales with x), or atol. */
static void assert_close(const char *what, int k, double x, double got, double want, double rtol,
                         double atol)
{
    if (isnan(want)) {
        cr_assert(isnan(got), "%s element %d (x = %g): got %.17g, want NaN", what, k, x, got);
        return;
    }
    if (isinf(want)) {
        cr_assert(got == want, "%s element %d (x = %g): got %.17g, want %g", what, k, x, got,
                  want);
        return;
    }
    double scale = fmax(fabs(want), isfinite(x) ? fabs(x) : 0);
    cr_assert(fabs(got - want) <= atol + rtol * scale, "%s element %d (x = %.9g): got %.17g, want %.17g",
              what, k, x, got, want);
}

static void check_values(const act_case *c, clt_dtype dt, double rtol, double atol, int transpose)
{
    double v[NV];
    values(v);
    if (dt == CLT_FLOAT32 || dt == CLT_FLOAT16)
        for (int k = 0; k < NV; k++)
            v[k] = dt == CLT_FLOAT32 ? (double)(float)v[k] : v[k];
    int64_t shape[1] = {NV};
    clt_tensor *a = tensor_of(dev, dt, 1, shape, v), *in = NULL, *out = NULL;
    if (transpose) {
        /* [7, 11] read as its transpose: a strided walk */
        clt_tensor *r = NULL;
        CHECK(clt_reshape(a, 2, (int64_t[]){7, 11}, &r));
        CHECK(clt_transpose(r, 0, 1, &in));
        clt_tensor_free(r);
    } else {
        in = clt_tensor_retain(a);
    }
    CHECK(run(c, in, &out));
    cr_assert_eq(clt_tensor_dtype(out), dt);
    double *x = read_as_f64(in), *y = read_as_f64(out);
    char what[96];
    snprintf(what, sizeof what, "%s(%g, %g) %s%s", op_names[c->op], c->s0, c->s1,
             clt_dtype_name(dt), transpose ? " transposed" : "");
    for (int k = 0; k < NV; k++) {
        double want = ref(c, x[k], dt == CLT_FLOAT32);
        if (dt == CLT_FLOAT32)
            want = (double)(float)want; /* the result's own rounding (overflow too) */
        if (dt == CLT_FLOAT16 && fabs(want) >= 65520.0)
            want = copysign(INFINITY, want); /* rounds past half's largest, 65504 */
        assert_close(what, k, x[k], y[k], want, rtol, atol);
    }
    free(x);
    free(y);
    clt_tensor_free(in);
    clt_tensor_free(out);
    clt_tensor_free(a);
}

Test(activations, values_float64)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_values(&cases[i], CLT_FLOAT64, 1e-14, 1e-300, 0);
}

Test(activations, values_float32)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_values(&cases[i], CLT_FLOAT32, 3e-6, 1e-44, 0);
        check_values(&cases[i], CLT_FLOAT32, 3e-6, 1e-44, 1);
    }
}

Test(activations, values_float16)
{
    if (!clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("no float16 on %s", clt_device_name(dev));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_values(&cases[i], CLT_FLOAT16, 2e-3, 1e-7, 0);
}

/* Where the naive formulas lose everything, the stable ones keep it. */
Test(activations, huge_inputs)
{
    const double x[] = {-1e30, 1e30, -1e4, 1e4, -100, 100, -3e38, 3e38};
    int64_t n[1] = {8};
    for (int f64 = 0; f64 < 2; f64++) {
        clt_tensor *a = tensor_of(dev, f64 ? CLT_FLOAT64 : CLT_FLOAT32, 1, n, x), *o = NULL;
        CHECK(clt_logsigmoid(a, &o));
        double *y = read_as_f64(o);
        cr_assert_eq(y[0], f64 ? -1e30 : (double)-1e30f);
        cr_assert_eq(y[1], 0.0);
        cr_assert_eq(y[2], -1e4);
        cr_assert(y[3] == 0 && !signbit(y[3]));
        cr_assert(close_enough(y[5], f64 ? -exp(-100.0) : (double)-expf(-100.0f), 0.05, 0));
        cr_assert(isfinite(y[6]) && isfinite(y[7]));
        free(y);
        clt_tensor_free(o);
        CHECK(clt_mish(a, &o));
        y = read_as_f64(o);
        cr_assert_eq(y[1], f64 ? 1e30 : (double)1e30f);
        cr_assert_eq(y[0], 0.0);
        cr_assert(signbit(y[0]));
        cr_assert_eq(y[3], 1e4);
        cr_assert(close_enough(y[4], -100 * exp(-100.0), f64 ? 1e-12 : 0.05, 0));
        free(y);
        clt_tensor_free(o);
        CHECK(clt_softsign(a, &o));
        y = read_as_f64(o);
        cr_assert_eq(y[0], -1.0);
        cr_assert_eq(y[1], 1.0);
        cr_assert(close_enough(y[3], 1e4 / (1 + 1e4), 1e-7, 0));
        free(y);
        clt_tensor_free(o);
        clt_tensor_free(a);
    }
}

/* ---- dtypes and refusals -------------------------------------------------------------- */

Test(activations, integer_and_bool_tensors)
{
    const double v[6] = {-3, -1, 0, 2, 7, 9};
    int64_t n[1] = {6};
    clt_tensor *i = tensor_of(dev, CLT_INT32, 1, n, v), *b = NULL, *o = NULL;
    CHECK(clt_ones(dev, CLT_BOOL, 1, n, &b));
    /* hardtanh, relu6 and threshold keep integers */
    CHECK(clt_hardtanh(i, -2, 5, &o));
    cr_assert_eq(clt_tensor_dtype(o), CLT_INT32);
    double *y = read_as_f64(o);
    const double ht[6] = {-2, -1, 0, 2, 5, 5};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(y[k], ht[k]);
    free(y);
    clt_tensor_free(o);
    CHECK(clt_relu6(i, &o));
    y = read_as_f64(o);
    const double r6[6] = {0, 0, 0, 2, 6, 6};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(y[k], r6[k]);
    free(y);
    clt_tensor_free(o);
    CHECK(clt_threshold(i, 1, 42, &o));
    cr_assert_eq(clt_tensor_dtype(o), CLT_INT32);
    y = read_as_f64(o);
    const double th[6] = {42, 42, 42, 2, 7, 9};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(y[k], th[k]);
    free(y);
    clt_tensor_free(o);
    /* softsign and tanhshrink give float32 */
    CHECK(clt_softsign(i, &o));
    cr_assert_eq(clt_tensor_dtype(o), CLT_FLOAT32);
    y = read_as_f64(o);
    for (int k = 0; k < 6; k++)
        cr_assert(close_enough(y[k], v[k] / (1 + fabs(v[k])), 1e-7, 0));
    free(y);
    clt_tensor_free(o);
    CHECK(clt_tanhshrink(i, &o));
    cr_assert_eq(clt_tensor_dtype(o), CLT_FLOAT32);
    clt_tensor_free(o);
    /* bool refused by all; integers by the rest */
    for (int op = 0; op < NOPS; op++) {
        act_case c = {op, op == CELU ? 1.0 : 0.5, 1.0};
        o = (clt_tensor *)&o;
        assert_error(run(&c, b, &o), CLT_ERR_DTYPE_MISMATCH, NULL);
        cr_assert_null(o, "%s", op_names[op]);
        if (op == HARDTANH || op == RELU6 || op == THRESHOLD || op == SOFTSIGN ||
            op == TANHSHRINK)
            continue;
        o = (clt_tensor *)&o;
        assert_error(run(&c, i, &o), CLT_ERR_DTYPE_MISMATCH, NULL);
        cr_assert_null(o, "%s", op_names[op]);
    }
    clt_tensor_free(i);
    clt_tensor_free(b);
}

Test(activations, bad_scalars_refused)
{
    clt_tensor *a = NULL, *o = (clt_tensor *)&a;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &a));
    assert_error(clt_celu(a, 0.0, &o), CLT_ERR_INVALID_ARGUMENT, "alpha cannot be 0");
    names_only("clt_celu");
    cr_assert_null(o);
    o = (clt_tensor *)&a;
    assert_error(clt_softshrink(a, -1.0, &o), CLT_ERR_INVALID_ARGUMENT,
                 "lambda must be greater or equal to 0");
    cr_assert_null(o);
    assert_error(clt_softshrink(a, NAN, &o), CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error(clt_mish(NULL, &o), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_glu(a, 0, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    /* hardshrink takes a negative lambd: 0 nowhere */
    CHECK(clt_hardshrink(a, -1.0, &o));
    double *y = read_as_f64(o);
    cr_assert_eq(y[0], 1.0);
    free(y);
    clt_tensor_free(o);
    clt_tensor_free(a);
}

/* ---- gradients ---------------------------------------------------------------------- */

static clt_status gc_act(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return run(ctx, in[0], out);
}

/* Points at least 0.05 from every kink of the cases. */
static const double gx[12] = {-4.2, -2.7, -1.3, -0.8, -0.3, -0.07, 0.09, 0.35, 0.8, 1.4,
                              2.75, 6.6};

Test(activations, gradients_by_finite_differences)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gc_in in = {2, {3, 4}, gx, 1};
        gradcheck(dev, gc_act, &cases[i], 1, &in);
    }
}

/* The gradient of sum(op(x)) for float32 x: PyTorch's values at the kinks. */
static void grad_at(const act_case *c, const double *x, int n, const double *want)
{
    int64_t shape[1] = {n};
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, shape, x), *y = NULL, *s = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(run(c, a, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(a, &g));
    double *gv = read_as_f64(g);
    for (int k = 0; k < n; k++)
        cr_assert(close_enough(gv[k], want[k], 1e-6, 1e-12),
                  "%s: gradient at %g is %.9g, want %.9g", op_names[c->op], x[k], gv[k], want[k]);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(a);
}

Test(activations, gradients_at_kinks_as_torch)
{
    const double k7[7] = {-3, 3, -1, 1, 0, -0.5, 0.5};
    grad_at(&(act_case){HARDTANH, -1, 1}, k7, 7, (double[]){0, 0, 0, 0, 1, 1, 1});
    grad_at(&(act_case){.op = RELU6}, (double[]){0, 6, -1, 3, NAN}, 5, (double[]){0, 0, 0, 1, 1});
    grad_at(&(act_case){HARDTANH, -1, 1}, (double[]){NAN}, 1, (double[]){1});
    grad_at(&(act_case){.op = HARDSIGMOID}, (double[]){-3, 3, 0, NAN, -5}, 5,
            (double[]){0, 0, 1.0 / 6, 0, 0});
    grad_at(&(act_case){.op = HARDSWISH}, k7, 7,
            (double[]){-0.5, 1.5, 1.0 / 6, 5.0 / 6, 0.5, 1.0 / 3, 2.0 / 3});
    grad_at(&(act_case){.op = HARDSWISH}, (double[]){-3.01, NAN, 5, -INFINITY}, 4,
            (double[]){0, 1, 1, 0});
    grad_at(&(act_case){.op = HARDSHRINK, .s0 = 0.5}, k7, 7, (double[]){1, 1, 1, 1, 0, 0, 0});
    grad_at(&(act_case){.op = SOFTSHRINK, .s0 = 0.5}, (double[]){-0.5, 0.5, 0.51, NAN}, 4,
            (double[]){0, 0, 1, 1});
    grad_at(&(act_case){THRESHOLD, 0.5, 2}, (double[]){0.5, 0.6, -1, NAN}, 4,
            (double[]){0, 1, 0, 1});
    /* elu's branch x <= 0 at 0: alpha * scale for selu, 1 for celu */
    grad_at(&(act_case){.op = SELU}, (double[]){0, 1, NAN}, 3,
            (double[]){1.6732632423543772 * 1.0507009873554805, 1.0507009873554805,
                       1.0507009873554805});
    grad_at(&(act_case){.op = CELU, .s0 = 2}, (double[]){0, -2}, 2, (double[]){1, exp(-1.0)});
    /* saturated ends */
    grad_at(&(act_case){.op = LOGSIGMOID}, (double[]){-1e30, 1e30, -100, 100, 0}, 5,
            (double[]){1, 0, 1, (double)expf(-100.0f), 0.5});
    grad_at(&(act_case){.op = MISH}, (double[]){-1e30, 1e30, 0}, 3, (double[]){0, 1, 0.6});
    grad_at(&(act_case){.op = SOFTSIGN}, (double[]){-1e30, 0, 1}, 3, (double[]){0, 1, 0.25});
    grad_at(&(act_case){.op = TANHSHRINK}, (double[]){INFINITY, -INFINITY, 0}, 3,
            (double[]){1, 1, 0});
}

static const char *grad_fn_of(const act_case *c)
{
    clt_tensor *a = NULL, *y = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){2}, &a));
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(run(c, a, &y));
    const char *n = clt_grad_fn_name(y);
    clt_tensor_free(y);
    clt_tensor_free(a);
    return n;
}

Test(activations, grad_fn_names_as_torch)
{
    static const char *const want[NOPS] = {
        "HardtanhBackward0", "HardtanhBackward0", "ThresholdBackward0", "HardsigmoidBackward0",
        "HardswishBackward0", "MishBackward0", "EluBackward0", "CeluBackward0", "DivBackward0",
        "SubBackward0", "HardshrinkBackward0", "SoftshrinkBackward0", "LogSigmoidBackward0"};
    for (int op = 0; op < NOPS; op++) {
        act_case c = {op, op == HARDTANH ? -1 : 1.0, 1.0};
        cr_assert_str_eq(grad_fn_of(&c), want[op], "%s", op_names[op]);
    }
}

/* ---- glu -------------------------------------------------------------------------- */

static double sig(double v)
{
    return 1 / (1 + exp(-v));
}

Test(activations, glu_values_along_each_dim)
{
    double v[24];
    for (int k = 0; k < 24; k++)
        v[k] = -3 + 0.27 * k;
    int64_t shape[3] = {2, 4, 3};
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 3, shape, v);
    for (int dim = -3; dim < 3; dim++) {
        int d = dim < 0 ? dim + 3 : dim;
        clt_tensor *o = NULL;
        if (shape[d] % 2) {
            o = (clt_tensor *)&a;
            assert_error(clt_glu(a, dim, &o), CLT_ERR_SHAPE_MISMATCH,
                         "Halving dimension must be even");
            names_only("clt_glu");
            cr_assert_null(o);
            continue;
        }
        CHECK(clt_glu(a, dim, &o));
        int64_t os[3] = {shape[0], shape[1], shape[2]};
        os[d] /= 2;
        assert_shape(o, 3, os);
        double *y = read_as_f64(o);
        int64_t st[3] = {12, 3, 1};
        for (int64_t i = 0; i < os[0]; i++)
            for (int64_t j = 0; j < os[1]; j++)
                for (int64_t k = 0; k < os[2]; k++) {
                    int64_t off = i * st[0] + j * st[1] + k * st[2];
                    double first = v[off], second = v[off + os[d] * st[d]];
                    double got = y[(i * os[1] + j) * os[2] + k];
                    cr_assert(close_enough(got, first * sig(second), 1e-14, 0),
                              "dim %d: %g, want %g", dim, got, first * sig(second));
                }
        free(y);
        clt_tensor_free(o);
    }
    clt_tensor *o = (clt_tensor *)&a, *s = NULL, *i = NULL;
    assert_error(clt_glu(a, 3, &o), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert_null(o);
    CHECK(clt_full(dev, CLT_FLOAT32, 0, NULL, 1.0, &s));
    assert_error(clt_glu(s, 0, &o), CLT_ERR_SHAPE_MISMATCH, "does not support scalars");
    CHECK(clt_ones(dev, CLT_INT64, 1, (int64_t[]){4}, &i));
    assert_error(clt_glu(i, 0, &o), CLT_ERR_DTYPE_MISMATCH, NULL);
    cr_assert_null(o);
    clt_tensor_free(i);
    clt_tensor_free(s);
    clt_tensor_free(a);
}

static clt_status gc_glu(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_glu(in[0], *(const int *)ctx, out);
}

Test(activations, glu_gradients)
{
    double v[24];
    for (int k = 0; k < 24; k++)
        v[k] = sin(1.7 * k) * 3;
    gc_in in = {3, {2, 4, 3}, v, 1};
    for (int dim = -2; dim < 2; dim++) {
        if (dim == -1 || dim == 2)
            continue;
        gradcheck(dev, gc_glu, &dim, 1, &in);
    }
    gc_in in2 = {2, {3, 8}, v, 1};
    int last = -1;
    gradcheck(dev, gc_glu, &last, 1, &in2);
    clt_tensor *a = NULL, *y = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){4}, &a));
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(clt_glu(a, 0, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "GluBackward0");
    clt_tensor_free(y);
    clt_tensor_free(a);
}

/* ---- prelu ------------------------------------------------------------------------ */

Test(activations, prelu_values_per_channel_and_shared)
{
    double xv[24], wv[3] = {0.25, -0.5, 2.0};
    for (int k = 0; k < 24; k++)
        xv[k] = (k % 2 ? -1 : 1) * (0.5 + 0.3 * k);
    xv[3] = NAN;
    xv[5] = -0.0;
    int64_t xs[4] = {2, 3, 2, 2};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, xs, xv);
    for (int shared = 0; shared < 2; shared++) {
        clt_tensor *w = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){shared ? 1 : 3}, wv), *o = NULL;
        CHECK(clt_prelu(x, w, &o));
        assert_shape(o, 4, xs);
        double *y = read_as_f64(o);
        for (int k = 0; k < 24; k++) {
            double xf = (double)(float)xv[k], wk = shared ? wv[0] : wv[(k / 4) % 3];
            double want = xf > 0 ? xf : (double)(float)(wk * xf);
            cr_assert(close_enough(y[k], want, 0, 0), "element %d: %g, want %g", k, y[k], want);
        }
        free(y);
        clt_tensor_free(o);
        clt_tensor_free(w);
    }
    /* mismatches, as torch's */
    clt_tensor *w2 = NULL, *w23 = NULL, *wd = NULL, *o = (clt_tensor *)&x;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){2}, &w2));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){1, 3}, &w23));
    CHECK(clt_ones(dev, CLT_FLOAT64, 1, (int64_t[]){3}, &wd));
    assert_error(clt_prelu(x, w2, &o), CLT_ERR_SHAPE_MISMATCH,
                 "Found parameter numbers = 2 and channel size = 3");
    names_only("clt_prelu");
    cr_assert_null(o);
    o = (clt_tensor *)&x;
    assert_error(clt_prelu(x, w23, &o), CLT_ERR_SHAPE_MISMATCH, "ndim = 2");
    cr_assert_null(o);
    o = (clt_tensor *)&x;
    assert_error(clt_prelu(x, wd, &o), CLT_ERR_DTYPE_MISMATCH, NULL);
    cr_assert_null(o);
    clt_tensor_free(w2);
    clt_tensor_free(w23);
    clt_tensor_free(wd);
    clt_tensor_free(x);
}

static clt_status gc_prelu(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_prelu(in[0], in[1], out);
}

Test(activations, prelu_gradients_for_input_and_weight)
{
    double xv[24], wv[3] = {0.25, -0.7, 1.6};
    for (int k = 0; k < 24; k++)
        xv[k] = cos(2.3 * k) * 2 + (k % 5 == 0 ? 0.1 : 0);
    gc_in per[2] = {{3, {2, 3, 4}, xv, 1}, {1, {3}, wv, 1}};
    gradcheck(dev, gc_prelu, NULL, 2, per);
    gc_in one[2] = {{2, {4, 6}, xv, 1}, {1, {1}, wv, 1}};
    gradcheck(dev, gc_prelu, NULL, 2, one);
    gc_in flat[2] = {{1, {5}, xv, 1}, {1, {1}, wv + 1, 1}};
    gradcheck(dev, gc_prelu, NULL, 2, flat);
    clt_tensor *x = NULL, *w = NULL, *y = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, &x));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &w));
    CHECK(clt_set_requires_grad(w, 1));
    CHECK(clt_prelu(x, w, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "PreluBackward0");
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(w);
}

/* ---- softmin ------------------------------------------------------------------------- */

static clt_status gc_softmin(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_softmin(in[0], *(const int *)ctx, out);
}

Test(activations, softmin_values_and_gradients)
{
    double v[12];
    for (int k = 0; k < 12; k++)
        v[k] = 4 * sin(0.9 * k) + (k == 7 ? 60 : 0);
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 4}, v), *o = NULL;
    CHECK(clt_softmin(a, 1, &o));
    double *y = read_as_f64(o);
    for (int r = 0; r < 3; r++) {
        double m = INFINITY, s = 0;
        for (int c = 0; c < 4; c++)
            m = fmin(m, v[r * 4 + c]);
        for (int c = 0; c < 4; c++)
            s += exp(m - v[r * 4 + c]);
        for (int c = 0; c < 4; c++)
            cr_assert(close_enough(y[r * 4 + c], exp(m - v[r * 4 + c]) / s, 1e-13, 1e-300));
    }
    free(y);
    clt_tensor_free(o);
    clt_tensor_free(a);
    gc_in in = {2, {3, 4}, v, 1};
    for (int dim = -1; dim < 2; dim++)
        gradcheck(dev, gc_softmin, &dim, 1, &in);
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &a));
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(clt_softmin(a, 0, &o));
    cr_assert_str_eq(clt_grad_fn_name(o), "SoftmaxBackward0");
    clt_tensor_free(o);
    clt_tensor_free(a);
}

/* ---- layers ------------------------------------------------------------------------ */

/* The layer's output equals the op's, and its name is torch's class. */
static void same_as_op(clt_module *m, const char *name, const act_case *c)
{
    double v[NV];
    values(v);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){NV}, v), *y = NULL, *z = NULL;
    cr_assert_str_eq(clt_module_name(m), name);
    CHECK(clt_module_forward(m, x, &y));
    CHECK(run(c, x, &z));
    double *a = read_as_f64(y), *b = read_as_f64(z);
    for (int k = 0; k < NV; k++)
        cr_assert(close_enough(a[k], b[k], 0, 0), "%s element %d", name, k);
    free(a);
    free(b);
    clt_tensor_free(y);
    clt_tensor_free(z);
    clt_tensor_free(x);
    clt_module_free(m);
}

Test(activations, layers_run_their_ops)
{
    clt_module *m = NULL;
    CHECK(clt_hardtanh_layer(-0.5, 2, &m));
    same_as_op(m, "Hardtanh", &(act_case){HARDTANH, -0.5, 2});
    CHECK(clt_relu6_layer(&m));
    same_as_op(m, "ReLU6", &(act_case){.op = RELU6});
    CHECK(clt_hardsigmoid_layer(&m));
    same_as_op(m, "Hardsigmoid", &(act_case){.op = HARDSIGMOID});
    CHECK(clt_hardswish_layer(&m));
    same_as_op(m, "Hardswish", &(act_case){.op = HARDSWISH});
    CHECK(clt_mish_layer(&m));
    same_as_op(m, "Mish", &(act_case){.op = MISH});
    CHECK(clt_selu_layer(&m));
    same_as_op(m, "SELU", &(act_case){.op = SELU});
    CHECK(clt_celu_layer(0.5, &m));
    same_as_op(m, "CELU", &(act_case){.op = CELU, .s0 = 0.5});
    CHECK(clt_softsign_layer(&m));
    same_as_op(m, "Softsign", &(act_case){.op = SOFTSIGN});
    CHECK(clt_tanhshrink_layer(&m));
    same_as_op(m, "Tanhshrink", &(act_case){.op = TANHSHRINK});
    CHECK(clt_hardshrink_layer(2, &m));
    same_as_op(m, "Hardshrink", &(act_case){.op = HARDSHRINK, .s0 = 2});
    CHECK(clt_softshrink_layer(0.5, &m));
    same_as_op(m, "Softshrink", &(act_case){.op = SOFTSHRINK, .s0 = 0.5});
    CHECK(clt_logsigmoid_layer(&m));
    same_as_op(m, "LogSigmoid", &(act_case){.op = LOGSIGMOID});
    CHECK(clt_threshold_layer(0.5, -3, &m));
    same_as_op(m, "Threshold", &(act_case){THRESHOLD, 0.5, -3});
    m = (clt_module *)&m;
    assert_error(clt_hardtanh_layer(1, 1, &m), CLT_ERR_INVALID_ARGUMENT, "max_val");
    names_only("clt_hardtanh_layer");
    cr_assert_null(m);
}

Test(activations, dim_layers)
{
    double v[24];
    for (int k = 0; k < 24; k++)
        v[k] = sin(1.3 * k);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 6}, v);
    clt_status (*mk[4])(int, clt_module **) = {clt_glu_layer, clt_softmax_layer,
                                               clt_log_softmax_layer, clt_softmin_layer};
    clt_status (*op[4])(const clt_tensor *, int, clt_tensor **) = {clt_glu, clt_softmax,
                                                                   clt_log_softmax, clt_softmin};
    static const char *const names[4] = {"GLU", "Softmax", "LogSoftmax", "Softmin"};
    for (int i = 0; i < 4; i++)
        for (int dim = -1; dim < 2; dim++) {
            clt_module *m = NULL;
            clt_tensor *y = NULL, *z = NULL;
            CHECK(mk[i](dim, &m));
            cr_assert_str_eq(clt_module_name(m), names[i]);
            CHECK(clt_module_forward(m, x, &y));
            CHECK(op[i](x, dim, &z));
            double *a = read_as_f64(y), *b = read_as_f64(z);
            for (int64_t k = 0; k < clt_tensor_numel(z); k++)
                cr_assert_eq(a[k], b[k], "%s dim %d element %lld", names[i], dim, (long long)k);
            free(a);
            free(b);
            clt_tensor_free(y);
            clt_tensor_free(z);
            clt_module_free(m);
        }
    clt_tensor_free(x);
}

Test(activations, prelu_layer_weight_in_state_dict_and_trained)
{
    clt_module *m = NULL;
    CHECK(clt_prelu_layer(dev, 3, 0.25, &m));
    cr_assert_str_eq(clt_module_name(m), "PReLU");
    clt_named_tensor *st = NULL;
    size_t n = 0;
    CHECK(clt_module_state(m, &st, &n));
    cr_assert_eq(n, 1);
    cr_assert_str_eq(st[0].name, "weight");
    assert_shape(st[0].tensor, 1, (int64_t[]){3});
    cr_assert_eq(clt_tensor_dtype(st[0].tensor), CLT_FLOAT32);
    double *w = read_as_f64(st[0].tensor);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(w[k], 0.25);
    free(w);
    clt_free(st);
    /* forward, and the gradient reaches the weight: sum of x where x <= 0 */
    const double xv[12] = {-1, 2, -3, 4, 5, -6, -7, 8, 9, 10, -11, 12};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 3}, xv), *y = NULL, *s = NULL;
    CHECK(clt_module_forward(m, x, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor **ps = NULL;
    CHECK(clt_module_parameters(m, &ps, &n));
    clt_tensor *g = NULL;
    CHECK(clt_grad(ps[0], &g));
    double *gv = read_as_f64(g);
    double want[3] = {0, 0, 0};
    for (int k = 0; k < 12; k++)
        if (xv[k] <= 0)
            want[k % 3] += xv[k];
    for (int c = 0; c < 3; c++)
        cr_assert_eq(gv[c], want[c], "channel %d: %g, want %g", c, gv[c], want[c]);
    free(gv);
    clt_free(ps);
    clt_tensor_free(g);
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(m);
    CHECK(clt_prelu_layer(dev, 1, -0.5, &m));
    CHECK(clt_module_state(m, &st, &n));
    assert_shape(st[0].tensor, 1, (int64_t[]){1});
    clt_free(st);
    clt_module_free(m);
    m = (clt_module *)&m;
    assert_error(clt_prelu_layer(dev, -2, 0.25, &m), CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert_null(m);
}
