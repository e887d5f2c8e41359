/* test_rounding.c: floor, ceil, round, round_decimals, trunc, frac,
 * reciprocal, isnan, isinf, isfinite and logical_and, logical_or and
 * logical_xor (ops.h): values against the C library (floor, ceil, rint,
 * trunc) computed here, PyTorch 1.13's results at the edges (literal values
 * printed by torch), every lane of the CPU kernels' vectors, the dtypes of
 * integer, bool and float16 inputs, gradients against finite differences,
 * and bad input. */
#include <float.h>
#include <stdio.h>

#include "gradcheck.h"
#include "internal.h"


/* The unary ops with a floating result, in the order of the edge table. */
typedef enum { FLOOR, CEIL, ROUND, TRUNC, FRAC, RECIPROCAL, NUN } unop;
static const char *const un_names[NUN] = {"floor", "ceil", "round", "trunc", "frac",
                                          "reciprocal"};
static const un_fn un_fns[NUN] = {clt_floor, clt_ceil, clt_round, clt_trunc, clt_frac,
                                  clt_reciprocal};

/* The bool-valued ones. */
typedef enum { ISNAN, ISINF, ISFINITE, NPRED } predop;
static const char *const pred_names[NPRED] = {"isnan", "isinf", "isfinite"};
static const un_fn pred_fns[NPRED] = {clt_isnan, clt_isinf, clt_isfinite};

typedef enum { AND, OR, XOR, NLOG } logop;
static const char *const log_names[NLOG] = {"logical_and", "logical_or", "logical_xor"};
static const bin_fn log_fns[NLOG] = {clt_logical_and, clt_logical_or, clt_logical_xor};

/* The reference in the tensor's own precision (f32: float arithmetic, as
 * the kernel's; rint rounds halves to even in the default rounding mode). */
static double ref(unop op, double x, bool f32)
{
    if (f32) {
        float xf = (float)x;
        switch (op) {
        case FLOOR: return floorf(xf);
        case CEIL: return ceilf(xf);
        case ROUND: return rintf(xf);
        case TRUNC: return truncf(xf);
        case FRAC: return xf - truncf(xf);
        default: return 1.0f / xf;
        }
    }
    switch (op) {
    case FLOOR: return floor(x);
    case CEIL: return ceil(x);
    case ROUND: return rint(x);
    case TRUNC: return trunc(x);
    case FRAC: return x - trunc(x);
    default: return 1.0 / x;
    }
}

/* round(x, decimals) as ops.h defines it, in float or double arithmetic. */
static double ref_decimals(double x, int64_t d, bool f32)
{
    double p = pow(10.0, fabs((double)d));
    if (f32) {
        float xf = (float)x, pf = (float)p;
        return d < 0 ? rintf(xf / pf) * pf : rintf(xf * pf) / pf;
    }
    return d < 0 ? rint(x / p) * p : rint(x * p) / p;
}

static bool pred_ref(predop op, double x)
{
    return op == ISNAN ? isnan(x) : op == ISINF ? isinf(x) : isfinite(x);
}

static bool log_ref(logop op, bool a, bool b)
{
    return op == AND ? a && b : op == OR ? a || b : a != b;
}

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

/* A bool tensor's values as a new array. */
static uint8_t *download_bool(const clt_tensor *t)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_BOOL, "dtype %s, want bool",
                 clt_dtype_name(clt_tensor_dtype(t)));
    size_t n = (size_t)clt_tensor_numel(t);
    uint8_t *v = malloc(n ? n : 1);
    CHECK(clt_tensor_read(t, v, n));
    return v;
}

/* got is want bit for bit: NaN with NaN, and zeros of the same sign. */
static void assert_same(const char *what, double x, double got, double want)
{
    cr_assert((isnan(got) && isnan(want)) || (got == want && signbit(got) == signbit(want)),
              "%s(%.17g): got %.17g, want %.17g", what, x, got, want);
}

/* ---- values against the C library --------------------------------------------------- */

/* n values of every kind a rounding op meets: halves and quarters, values
 * from 1e-12 to 2^60 (the largest have no fraction left), a few negative
 * zeros; in float32 when f32. */
static void fill_values(double *x, int64_t n, bool f32)
{
    float *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    fill_random(r, (size_t)n, 11);
    for (int64_t i = 0; i < n; i++) {
        switch (i % 6) {
        case 0: x[i] = floor(r[i] * 8) / 4 + 0.5; break; /* halves and quarters */
        case 1: x[i] = r[i] * 1e-12; break;
        case 2: x[i] = ldexp(r[i], (int)(i % 61)); break;
        case 3: x[i] = i % 4 ? r[i] : -0.0; break;
        default: x[i] = r[i] * 100; break;
        }
        if (f32)
            x[i] = (float)x[i];
    }
    free(r);
}

/* Every op on n values of shape (nd, shape) in dtype dt, bit for bit
 * against the reference. */
static void check_values(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape)
{
    bool f32 = dt == CLT_FLOAT32;
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    fill_values(x, n, f32);
    clt_tensor *a = upload(dev, dt, nd, shape, n, x);
    char what[64];
    for (int op = 0; op < NUN; op++) {
        clt_tensor *r = NULL;
        CHECK(un_fns[op](a, &r));
        assert_shape(r, nd, shape);
        cr_assert_eq(clt_tensor_dtype(r), dt);
        double *got = download(r);
        snprintf(what, sizeof what, "%s %s", clt_dtype_name(dt), un_names[op]);
        for (int64_t i = 0; i < n; i++)
            assert_same(what, x[i], got[i], ref(op, x[i], f32));
        free(got);
        clt_tensor_free(r);
    }
    const int64_t decimals[] = {0, 1, 2, 4, -1, -3};
    for (size_t k = 0; k < sizeof decimals / sizeof decimals[0]; k++) {
        clt_tensor *r = NULL;
        CHECK(clt_round_decimals(a, decimals[k], &r));
        cr_assert_eq(clt_tensor_dtype(r), dt);
        double *got = download(r);
        snprintf(what, sizeof what, "%s round_decimals %lld", clt_dtype_name(dt),
                 (long long)decimals[k]);
        for (int64_t i = 0; i < n; i++)
            assert_same(what, x[i], got[i], ref_decimals(x[i], decimals[k], f32));
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    free(x);
}

Test(rounding, values_float32_many_sizes)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {0, 1, 15, 17, 4099};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_values(dev, CLT_FLOAT32, 1, &sizes[s]);
    check_values(dev, CLT_FLOAT32, 0, NULL);
    int64_t s2[2] = {3, 0};
    check_values(dev, CLT_FLOAT32, 2, s2);
}

Test(rounding, values_float64)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    const int64_t sizes[] = {1, 33, 517};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_values(dev, CLT_FLOAT64, 1, &sizes[s]);
}

/* The GPU variants: one element per work-item. */
Test(rounding, values_gpu_variant)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    int64_t n = 1001;
    check_values(dev, CLT_FLOAT32, 1, &n);
}

/* A transposed (strided) input, for every op. */
Test(rounding, transposed_input)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {37, 29}, n = 37 * 29;
    double *x = malloc((size_t)n * sizeof *x);
    fill_values(x, n, true);
    clt_tensor *base = upload(dev, CLT_FLOAT32, 2, s, n, x), *t = NULL;
    CHECK(clt_transpose(base, 0, 1, &t));
    cr_assert(!clt_tensor_is_contiguous(t));
    for (int op = 0; op <= NUN + NPRED; op++) {
        clt_tensor *r = NULL;
        if (op < NUN)
            CHECK(un_fns[op](t, &r));
        else if (op < NUN + NPRED)
            CHECK(pred_fns[op - NUN](t, &r));
        else
            CHECK(clt_round_decimals(t, 2, &r));
        double *got = op < NUN || op == NUN + NPRED ? download(r) : NULL;
        uint8_t *b = got ? NULL : download_bool(r);
        for (int64_t i = 0; i < 29; i++)
            for (int64_t j = 0; j < 37; j++) {
                double xv = x[j * 29 + i];
                if (op < NUN)
                    assert_same(un_names[op], xv, got[i * 37 + j], ref(op, xv, true));
                else if (got)
                    assert_same("round_decimals 2", xv, got[i * 37 + j],
                                ref_decimals(xv, 2, true));
                else
                    cr_assert_eq(b[i * 37 + j], pred_ref(op - NUN, xv), "%s(%g)",
                                 pred_names[op - NUN], xv);
            }
        free(got);
        free(b);
        clt_tensor_free(r);
    }
    clt_tensor_free(t);
    clt_tensor_free(base);
    free(x);
}

/* ---- PyTorch 1.13's values at the edges -----------------------------------------
 * torch.floor, torch.ceil, torch.round, torch.trunc, torch.frac,
 * torch.reciprocal and torch.round(x, decimals=d) for d = 2, -1, -2, 3 and
 * the first d whose 10^d overflows the dtype, on these inputs, printed by
 * torch (float32 to 9 digits, float64 to 17: each literal is the value's
 * own).  Halves round to even; 2^23 - 0.5 and 2^52 - 0.5 are the last
 * halves; float32's largest value times 100 overflows (decimals 2 gives
 * inf) and over 100 rounds up to inf (decimals -2). */
#define NEDGE 24
#define NEDGE_OPS (NUN + 5)
static const int64_t edge_decimals_f32[5] = {2, -1, -2, 3, 39};
static const int64_t edge_decimals_f64[5] = {2, -1, -2, 3, 309};
static const double edge_x_f32[NEDGE] = {
    NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997,
    -0.49999997, -0.99999994, 8388607.5, -8388607.5, 16777215.0, 3.40282347e+38, 1.40129846e-45,
    -1.40129846e-45, 1e-30, -2.70000005, 2.67499995, -123.456001};
static const double edge_want_f32[NEDGE_OPS][NEDGE] = {
    /* floor */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -1.0, 1.0, -2.0, 2.0, -3.0, 0.0, -1.0, -1.0,
        8388607.0, -8388608.0, 16777215.0, 3.40282347e+38, 0.0, -1.0, 0.0, -3.0, 2.0, -124.0},
    /* ceil */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -0.0, 2.0, -1.0, 3.0, -2.0, 1.0, -0.0, -0.0,
        8388608.0, -8388607.0, 16777215.0, 3.40282347e+38, 1.0, -0.0, 1.0, -2.0, 3.0, -123.0},
    /* round */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 2.0, -2.0, 2.0, -2.0, 0.0, -0.0, -1.0,
        8388608.0, -8388608.0, 16777215.0, 3.40282347e+38, 0.0, -0.0, 0.0, -3.0, 3.0, -123.0},
    /* trunc */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.0, -0.0, -0.0,
        8388607.0, -8388607.0, 16777215.0, 3.40282347e+38, 0.0, -0.0, 0.0, -2.0, 2.0, -123.0},
    /* frac */ {
        NAN, NAN, NAN, 0.0, 0.0, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.49999997, -0.49999997,
        -0.99999994, 0.5, -0.5, 0.0, 0.0, 1.40129846e-45, -1.40129846e-45, 1e-30, -0.700000048,
        0.674999952, -0.456001282},
    /* reciprocal */ {
        NAN, 0.0, -0.0, -INFINITY, INFINITY, 2.0, -2.0, 0.666666687, -0.666666687, 0.400000006,
        -0.400000006, 2.00000024, -2.00000024, -1.00000012, 1.19209304e-07, -1.19209304e-07,
        5.96046519e-08, 2.93873588e-39, INFINITY, -INFINITY, 1.00000002e+30, -0.370370358,
        0.373831779, -0.00810005143},
    /* decimals 2 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, -1.0,
        8388607.5, -8388607.5, 16777215.0, INFINITY, 0.0, -0.0, 0.0, -2.70000005, 2.68000007,
        -123.459999},
    /* decimals -1 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, -0.0,
        8388610.0, -8388610.0, 16777220.0, 3.40282347e+38, 0.0, -0.0, 0.0, -0.0, 0.0, -120.0},
    /* decimals -2 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, -0.0,
        8388600.0, -8388600.0, 16777200.0, INFINITY, 0.0, -0.0, 0.0, -0.0, 0.0, -100.0},
    /* decimals 3 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, -1.0,
        8388607.5, -8388607.5, 16777215.0, INFINITY, 0.0, -0.0, 0.0, -2.70000005, 2.67499995,
        -123.456001},
    /* decimals 39 */ {
        NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
        NAN, NAN, NAN, NAN, NAN, NAN},
};
static const double edge_x_f64[NEDGE] = {
    NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994,
    -0.49999999999999994, -0.99999999999999989, 4503599627370495.5, -4503599627370495.5,
    9007199254740991.0, 1.7976931348623157e+308, 4.9406564584124654e-324,
    -4.9406564584124654e-324, 1e-300, -2.7000000000000002, 2.6749999999999998, -123.456};
static const double edge_want_f64[NEDGE_OPS][NEDGE] = {
    /* floor */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -1.0, 1.0, -2.0, 2.0, -3.0, 0.0, -1.0, -1.0,
        4503599627370495.0, -4503599627370496.0, 9007199254740991.0, 1.7976931348623157e+308,
        0.0, -1.0, 0.0, -3.0, 2.0, -124.0},
    /* ceil */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -0.0, 2.0, -1.0, 3.0, -2.0, 1.0, -0.0, -0.0,
        4503599627370496.0, -4503599627370495.0, 9007199254740991.0, 1.7976931348623157e+308,
        1.0, -0.0, 1.0, -2.0, 3.0, -123.0},
    /* round */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 2.0, -2.0, 2.0, -2.0, 0.0, -0.0, -1.0,
        4503599627370496.0, -4503599627370496.0, 9007199254740991.0, 1.7976931348623157e+308,
        0.0, -0.0, 0.0, -3.0, 3.0, -123.0},
    /* trunc */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.0, -0.0, -0.0,
        4503599627370495.0, -4503599627370495.0, 9007199254740991.0, 1.7976931348623157e+308,
        0.0, -0.0, 0.0, -2.0, 2.0, -123.0},
    /* frac */ {
        NAN, NAN, NAN, 0.0, 0.0, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.49999999999999994,
        -0.49999999999999994, -0.99999999999999989, 0.5, -0.5, 0.0, 0.0, 4.9406564584124654e-324,
        -4.9406564584124654e-324, 1e-300, -0.70000000000000018, 0.67499999999999982,
        -0.45600000000000307},
    /* reciprocal */ {
        NAN, 0.0, -0.0, -INFINITY, INFINITY, 2.0, -2.0, 0.66666666666666663,
        -0.66666666666666663, 0.40000000000000002, -0.40000000000000002, 2.0000000000000004,
        -2.0000000000000004, -1.0000000000000002, 2.2204460492503136e-16,
        -2.2204460492503136e-16, 1.1102230246251568e-16, 5.5626846462680035e-309, INFINITY,
        -INFINITY, 9.999999999999999e+299, -0.37037037037037035, 0.37383177570093462,
        -0.0081000518403317786},
    /* decimals 2 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, -1.0,
        4503599627370495.5, -4503599627370495.5, 9007199254740991.0, INFINITY, 0.0, -0.0, 0.0,
        -2.7000000000000002, 2.6800000000000002, -123.45999999999999},
    /* decimals -1 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, -0.0,
        4503599627370500.0, -4503599627370500.0, 9007199254740990.0, 1.7976931348623157e+308,
        0.0, -0.0, 0.0, -0.0, 0.0, -120.0},
    /* decimals -2 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, -0.0,
        4503599627370500.0, -4503599627370500.0, 9007199254741000.0, 1.7976931348623157e+308,
        0.0, -0.0, 0.0, -0.0, 0.0, -100.0},
    /* decimals 3 */ {
        NAN, INFINITY, -INFINITY, -0.0, 0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, -1.0,
        4503599627370495.5, -4503599627370495.5, 9007199254740991.0, INFINITY, 0.0, -0.0, 0.0,
        -2.7000000000000002, 2.6749999999999998, -123.456},
    /* decimals 309 */ {
        NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
        NAN, NAN, NAN, NAN, NAN, NAN},
};

/* Each edge value in the vector loop (48 copies) and alone in a 0-d tensor
 * (the scalar code), bit for bit. */
static void check_edges(clt_device *dev, clt_dtype dt, const double *xs,
                        const double (*want)[NEDGE], const int64_t *decimals)
{
    for (int op = 0; op < NEDGE_OPS; op++)
        for (int k = 0; k < NEDGE; k++) {
            double v[48];
            for (int i = 0; i < 48; i++)
                v[i] = xs[k];
            int64_t n = 48;
            clt_tensor *a = upload(dev, dt, 1, &n, n, v), *s = upload(dev, dt, 0, NULL, 1, v);
            clt_tensor *r = NULL, *rs = NULL;
            char what[64];
            if (op < NUN) {
                CHECK(un_fns[op](a, &r));
                CHECK(un_fns[op](s, &rs));
                snprintf(what, sizeof what, "%s %s", clt_dtype_name(dt), un_names[op]);
            } else {
                int64_t d = decimals[op - NUN];
                CHECK(clt_round_decimals(a, d, &r));
                CHECK(clt_round_decimals(s, d, &rs));
                snprintf(what, sizeof what, "%s round_decimals %lld", clt_dtype_name(dt),
                         (long long)d);
            }
            double *got = download(r), *gs = download(rs);
            double w = dt == CLT_FLOAT32 ? (float)want[op][k] : want[op][k];
            for (int i = 0; i < 48; i++)
                assert_same(what, xs[k], got[i], w);
            assert_same(what, xs[k], gs[0], w);
            free(got);
            free(gs);
            clt_tensor_free(r);
            clt_tensor_free(rs);
            clt_tensor_free(a);
            clt_tensor_free(s);
        }
}

Test(rounding, torch_edge_values)
{
    clt_device *dev = get_device("cpu");
    check_edges(dev, CLT_FLOAT32, edge_x_f32, edge_want_f32, edge_decimals_f32);
    if (clt_device_supports_dtype(dev, CLT_FLOAT64))
        check_edges(dev, CLT_FLOAT64, edge_x_f64, edge_want_f64, edge_decimals_f64);
}

/* Every lane on its own: 16 values, tiny ones and halves, with one inf, NaN
 * or huge value that goes through every lane in turn (and a 17th element
 * for the scalar tail); no lane's result may depend on another's. */
Test(rounding, lanes_independent)
{
    clt_device *dev = get_device("cpu");
    const double specials[] = {INFINITY, -INFINITY, NAN, 3e38, -1e30, 1e-45, -0.0};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        bool f32 = !d;
        for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++)
            for (int lane = 0; lane < 16; lane++) {
                double x[17];
                for (int i = 0; i < 17; i++)
                    x[i] = i % 3 == 0 ? 1e-30 * (i - 8) : i % 3 == 1 ? 0.5 + i : -2.5 + 0.25 * i;
                x[lane] = specials[s];
                if (f32)
                    for (int i = 0; i < 17; i++)
                        x[i] = (float)x[i];
                int64_t n = 17;
                clt_tensor *a = upload(dev, dt, 1, &n, n, x);
                char what[80];
                for (int op = 0; op <= NUN; op++) {
                    clt_tensor *r = NULL;
                    if (op < NUN)
                        CHECK(un_fns[op](a, &r));
                    else
                        CHECK(clt_round_decimals(a, 1, &r));
                    double *g = download(r);
                    snprintf(what, sizeof what, "%s %s, %g in lane %d", clt_dtype_name(dt),
                             op < NUN ? un_names[op] : "round_decimals 1", specials[s], lane);
                    for (int i = 0; i < 17; i++)
                        assert_same(what, x[i], g[i],
                                    op < NUN ? ref(op, x[i], f32) : ref_decimals(x[i], 1, f32));
                    free(g);
                    clt_tensor_free(r);
                }
                for (int op = 0; op < NPRED; op++) {
                    clt_tensor *r = NULL;
                    CHECK(pred_fns[op](a, &r));
                    uint8_t *b = download_bool(r);
                    for (int i = 0; i < 17; i++)
                        cr_assert_eq(b[i], pred_ref(op, x[i]), "%s %s(%g), %g in lane %d",
                                     clt_dtype_name(dt), pred_names[op], x[i], specials[s],
                                     lane);
                    free(b);
                    clt_tensor_free(r);
                }
                clt_tensor_free(a);
            }
    }
}

/* ---- dtypes ------------------------------------------------------------------------ */

/* The message names the call first. */
static void opens_with(const char *fn)
{
    size_t n = strlen(fn);
    cr_assert(strncmp(clt_last_error(), fn, n) == 0 && clt_last_error()[n] == ':', "%s",
              clt_last_error());
}

static const int32_t I32[6] = {INT32_MIN, -5, 0, 7, INT32_MAX, -1};
static const int64_t I64[6] = {INT64_MIN, -3, 0, 9, INT64_MAX, 1};
static const uint8_t U8[6] = {0, 1, 255, 128, 2, 7}, B8[6] = {0, 1, 1, 0, 1, 0};

static double int_value(clt_dtype dt, int i)
{
    return dt == CLT_INT32 ? I32[i] : dt == CLT_INT64 ? (double)I64[i] : dt == CLT_UINT8 ? U8[i]
                                                                                       : B8[i];
}

static clt_tensor *int_tensor(clt_device *dev, clt_dtype dt)
{
    const void *v = dt == CLT_INT32 ? (const void *)I32 : dt == CLT_INT64 ? (const void *)I64
                  : dt == CLT_UINT8 ? (const void *)U8 : (const void *)B8;
    int64_t n = 6;
    clt_tensor *a = NULL;
    CHECK(clt_tensor_from_host(dev, dt, 1, &n, v, &a));
    return a;
}

/* floor, ceil, round and trunc give integer tensors back unchanged (the
 * same dtype, every value, INT64_MIN too) and refuse bool; frac refuses
 * integers and bool; reciprocal computes them in float32; round_decimals
 * refuses them all, as PyTorch 1.13 does. */
Test(rounding, integer_and_bool_inputs)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[4] = {CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};
    for (int k = 0; k < 4; k++) {
        clt_dtype dt = dts[k];
        clt_tensor *a = int_tensor(dev, dt), *r = NULL;
        size_t es = dt == CLT_INT64 ? 8 : dt == CLT_INT32 ? 4 : 1;
        char fn[32];
        for (int op = FLOOR; op <= TRUNC; op++) {
            snprintf(fn, sizeof fn, "clt_%s", un_names[op]);
            if (dt == CLT_BOOL) {
                r = (clt_tensor *)&r;
                assert_error(un_fns[op](a, &r), CLT_ERR_DTYPE_MISMATCH, "bool");
                opens_with(fn);
                cr_assert_null(r);
                continue;
            }
            CHECK(un_fns[op](a, &r));
            cr_assert_eq(clt_tensor_dtype(r), dt, "%s keeps %s", un_names[op],
                         clt_dtype_name(dt));
            unsigned char got[48], want[48];
            CHECK(clt_tensor_read(r, got, 6 * es));
            CHECK(clt_tensor_read(a, want, 6 * es));
            cr_assert(memcmp(got, want, 6 * es) == 0, "%s changed %s values", un_names[op],
                      clt_dtype_name(dt));
            clt_tensor_free(r);
        }
        r = (clt_tensor *)&r;
        assert_error(clt_frac(a, &r), CLT_ERR_DTYPE_MISMATCH, clt_dtype_name(dt));
        opens_with("clt_frac");
        cr_assert_null(r);
        for (int64_t d = -1; d <= 1; d++) {
            r = (clt_tensor *)&r;
            assert_error(clt_round_decimals(a, d, &r), CLT_ERR_DTYPE_MISMATCH, clt_dtype_name(dt));
            opens_with("clt_round_decimals");
            cr_assert_null(r);
        }
        CHECK(clt_reciprocal(a, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "reciprocal of %s", clt_dtype_name(dt));
        double *g = download(r);
        for (int i = 0; i < 6; i++)
            assert_same("reciprocal", int_value(dt, i), g[i], 1.0f / (float)int_value(dt, i));
        free(g);
        clt_tensor_free(r);
        /* integers and bool are finite */
        for (int op = 0; op < NPRED; op++) {
            CHECK(pred_fns[op](a, &r));
            uint8_t *b = download_bool(r);
            for (int i = 0; i < 6; i++)
                cr_assert_eq(b[i], op == ISFINITE, "%s of %s", pred_names[op],
                             clt_dtype_name(dt));
            free(b);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
    }
}

/* float16 keeps its dtype and computes in float (exact for these ops on
 * float16 values); round_decimals refuses it, as PyTorch's CPU kernel. */
Test(rounding, float16)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("no float16 on %s", clt_device_name(dev));
    double x[21];
    for (int i = 0; i < 20; i++)
        x[i] = -2.75 + 0.25 * i; /* exact in float16, halves among them */
    x[20] = 1023.5; /* the largest half with a fraction: 1024.5 is not one */
    int64_t n = 21;
    clt_tensor *a32 = upload(dev, CLT_FLOAT32, 1, &n, n, x), *a = NULL;
    CHECK(clt_to_dtype(a32, CLT_FLOAT16, &a));
    for (int op = 0; op < NUN; op++) {
        clt_tensor *r = NULL, *r32 = NULL;
        CHECK(un_fns[op](a, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT16);
        CHECK(clt_to_dtype(r, CLT_FLOAT32, &r32));
        double *g = download(r32);
        for (int i = 0; i < 21; i++) {
            double want = ref(op, x[i], false);
            if (op == RECIPROCAL) /* 1 / x rounded to float16's 11 bits */
                cr_assert(close_enough(g[i], want, 4.9e-4, 0), "reciprocal(%g): %g", x[i],
                          g[i]);
            else
                assert_same(un_names[op], x[i], g[i], want);
        }
        free(g);
        clt_tensor_free(r);
        clt_tensor_free(r32);
    }
    clt_tensor *r = (clt_tensor *)&r;
    assert_error(clt_round_decimals(a, 1, &r), CLT_ERR_DTYPE_MISMATCH, "float16");
    cr_assert_null(r);
    clt_tensor_free(a);
    clt_tensor_free(a32);

    /* the predicates and logical ops on float16 (1e5 is inf there), in
     * the vector loop and its tail */
    double v[19];
    const double sp[6] = {NAN, INFINITY, -INFINITY, 1e5, 65504, -0.0};
    for (int i = 0; i < 19; i++)
        v[i] = i < 6 ? sp[i] : i % 2 ? 0.0 : 0.5 * i;
    v[17] = NAN;
    n = 19;
    a32 = upload(dev, CLT_FLOAT32, 1, &n, n, v);
    CHECK(clt_to_dtype(a32, CLT_FLOAT16, &a));
    for (int op = 0; op < NPRED + NLOG; op++) {
        if (op < NPRED)
            CHECK(pred_fns[op](a, &r));
        else
            CHECK(log_fns[op - NPRED](a, a32, &r));
        uint8_t *b = download_bool(r);
        for (int i = 0; i < 19; i++) {
            double h = v[i] == 1e5 ? INFINITY : v[i];
            bool want = op < NPRED ? pred_ref(op, h)
                                   : log_ref(op - NPRED, h != 0, v[i] != 0);
            cr_assert_eq(b[i], want, "float16 %s(%g)",
                         op < NPRED ? pred_names[op] : log_names[op - NPRED], v[i]);
        }
        free(b);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    clt_tensor_free(a32);
}

/* ---- isnan, isinf, isfinite and the logical ops ------------------------------------ */

Test(rounding, predicates_float)
{
    clt_device *dev = get_device("cpu");
    const double v[10] = {NAN, -NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e-45, 3e38, -1.5, 1e300};
    for (int d = 0; d < 2; d++) {
        clt_dtype dt = d ? CLT_FLOAT64 : CLT_FLOAT32;
        if (d && !clt_device_supports_dtype(dev, dt))
            break;
        double x[40];
        for (int i = 0; i < 40; i++)
            x[i] = d ? v[(i * 3) % 10] : (float)v[(i * 3) % 10]; /* 1e300 is inf in float32 */
        int64_t n = 40;
        clt_tensor *a = upload(dev, dt, 1, &n, n, x);
        for (int op = 0; op < NPRED; op++) {
            clt_tensor *r = NULL;
            CHECK(pred_fns[op](a, &r));
            assert_shape(r, 1, &n);
            uint8_t *b = download_bool(r);
            for (int i = 0; i < 40; i++)
                cr_assert_eq(b[i], pred_ref(op, x[i]), "%s %s(%g)", clt_dtype_name(dt),
                             pred_names[op], x[i]);
            free(b);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
    }
}

/* logical_and, logical_or and logical_xor of every dtype pair, broadcast
 * ([3, 1] with [4]), nonzero and NaN true, against the host's truth table
 * on the values each tensor holds. */
Test(rounding, logical_ops)
{
    clt_device *dev = get_device("cpu");
    const double av[3] = {NAN, 0.0, -2.0}, bv[4] = {0.5, -0.0, 0.0, 3.0};
    const clt_dtype dts[6] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_UINT8,
                              CLT_BOOL};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            if (!clt_device_supports_dtype(dev, dts[i]) ||
                !clt_device_supports_dtype(dev, dts[j]))
                continue;
            int64_t sa[2] = {3, 1}, sb = 4;
            clt_tensor *a64 = upload(dev, CLT_FLOAT64, 2, sa, 3, av), *a = NULL;
            clt_tensor *b64 = upload(dev, CLT_FLOAT64, 1, &sb, 4, bv), *b = NULL;
            /* NaN converts to some integer; the truth table reads what the
             * tensors hold */
            CHECK(clt_to_dtype(a64, dts[i], &a));
            CHECK(clt_to_dtype(b64, dts[j], &b));
            clt_tensor *ad = NULL, *bd = NULL;
            CHECK(clt_to_dtype(a, CLT_FLOAT64, &ad));
            CHECK(clt_to_dtype(b, CLT_FLOAT64, &bd));
            double *ha = download(ad), *hb = download(bd);
            for (int op = 0; op < NLOG; op++) {
                clt_tensor *r = NULL;
                CHECK(log_fns[op](a, b, &r));
                int64_t want_shape[2] = {3, 4};
                assert_shape(r, 2, want_shape);
                uint8_t *g = download_bool(r);
                for (int p = 0; p < 3; p++)
                    for (int q = 0; q < 4; q++)
                        cr_assert_eq(g[p * 4 + q], log_ref(op, ha[p] != 0, hb[q] != 0),
                                     "%s(%s %g, %s %g)", log_names[op], clt_dtype_name(dts[i]),
                                     ha[p], clt_dtype_name(dts[j]), hb[q]);
                free(g);
                clt_tensor_free(r);
            }
            free(ha);
            free(hb);
            clt_tensor_free(ad);
            clt_tensor_free(bd);
            clt_tensor_free(a);
            clt_tensor_free(b);
            clt_tensor_free(a64);
            clt_tensor_free(b64);
        }
}

/* Both operands are converted to their promoted dtype first, as PyTorch's:
 * a 0-d float64 1e-300 beside a float32 tensor becomes 0 (false), a 0-d
 * int64 256 beside a uint8 tensor wraps to 0; and every lane of the vector
 * loop (a NaN among zeros, a zero among nonzeros, at each position). */
Test(rounding, logical_ops_promotion_and_lanes)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    const double ones[4] = {1, 2, 3, 4};
    clt_tensor *f = upload(dev, CLT_FLOAT32, 1, &n, n, ones), *r = NULL;
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        const double tiny = 1e-300;
        clt_tensor *t = upload(dev, CLT_FLOAT64, 0, NULL, 1, &tiny);
        CHECK(clt_logical_and(f, t, &r));
        uint8_t *g = download_bool(r);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(g[i], 0, "1e-300 as float32 is 0");
        free(g);
        clt_tensor_free(r);
        clt_tensor_free(t);
    }
    const uint8_t u[4] = {0, 1, 2, 255};
    const int64_t big = 256;
    clt_tensor *tu = NULL, *tb = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, &n, u, &tu));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 0, NULL, &big, &tb));
    CHECK(clt_logical_or(tu, tb, &r));
    uint8_t *g = download_bool(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], u[i] != 0, "uint8 %d or 256 (0 as uint8)", u[i]);
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(tu);
    clt_tensor_free(tb);
    clt_tensor_free(f);

    for (int lane = 0; lane < 16; lane++) {
        double x[33], y[33];
        for (int i = 0; i < 33; i++) {
            x[i] = i == lane || i == lane + 16 ? NAN : 0.0;
            y[i] = i == lane ? 0.0 : -1e-30 * (i + 1);
        }
        int64_t m = 33;
        clt_tensor *a = upload(dev, CLT_FLOAT32, 1, &m, m, x);
        clt_tensor *b = upload(dev, CLT_FLOAT32, 1, &m, m, y);
        for (int op = 0; op < NLOG; op++) {
            CHECK(log_fns[op](a, b, &r));
            g = download_bool(r);
            for (int i = 0; i < 33; i++)
                cr_assert_eq(g[i], log_ref(op, x[i] != 0, (float)y[i] != 0),
                             "%s(%g, %g), lane %d", log_names[op], x[i], y[i], lane);
            free(g);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
}

/* ---- gradients ---------------------------------------------------------------------- */

/* Away from reciprocal's pole and frac's jumps at the integers. */
static const double X8[] = {0.7, -1.3, 1.1, -0.4, 0.05, -0.8, 2.1, -3.2};

Test(rounding, gradients)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    gc_in xs[1] = {{2, {2, 4}, X8, 1}};
    gradcheck(dev, call_un, &un_fns[RECIPROCAL], 1, xs);
    gradcheck(dev, call_un, &un_fns[FRAC], 1, xs);
    /* floor, ceil, round and trunc are flat between the integers */
    for (int op = FLOOR; op <= TRUNC; op++)
        gradcheck(dev, call_un, &un_fns[op], 1, xs);
}

static clt_status round_decimals_2(const clt_tensor *a, clt_tensor **out)
{
    return clt_round_decimals(a, 2, out);
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
 * printed by torch): zero for the rounding ops, even at inf and NaN; 1 for
 * frac; -out^2 for reciprocal, -inf at +-0, -0.0 at +-inf, a denormal at
 * 1e20. */
Test(rounding, gradients_at_the_edges)
{
    clt_device *dev = get_device("cpu");
    const float x[10] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -1.0f, 2.0f, 1e-20f, 1e20f,
                         -3.0f};
    const struct {
        un_fn f;
        const char *name;
        float want[10];
    } cases[] = {
        {clt_floor, "FloorBackward0", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {clt_ceil, "CeilBackward0", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {clt_round, "RoundBackward0", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {clt_trunc, "TruncBackward0", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {round_decimals_2, "RoundBackward1", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {clt_frac, "FracBackward0", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {clt_reciprocal, "ReciprocalBackward0",
         {NAN, -0.0f, -0.0f, -INFINITY, -INFINITY, -1, -0.25f, -INFINITY, -9.9999461e-41f,
          -0.111111119f}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float *g = grad_of_sum(dev, cases[c].f, x, 10, cases[c].name);
        for (int i = 0; i < 10; i++)
            assert_same(cases[c].name, x[i], g[i], cases[c].want[i]);
        free(g);
    }
}

/* The bool results record nothing, as torch's (requires_grad False). */
Test(rounding, bool_results_have_no_grad)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    const double v[3] = {1.5, NAN, 0};
    clt_tensor *a = upload(dev, CLT_FLOAT32, 1, &n, n, v), *r = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    for (int op = 0; op < NPRED + NLOG; op++) {
        if (op < NPRED)
            CHECK(pred_fns[op](a, &r));
        else
            CHECK(log_fns[op - NPRED](a, a, &r));
        cr_assert(!clt_requires_grad(r), "%s records a node",
                  op < NPRED ? pred_names[op] : log_names[op - NPRED]);
        cr_assert_null(clt_grad_fn_name(r));
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
}

/* ---- bad input ---------------------------------------------------------------------- */

static clt_status round_decimals_m1(const clt_tensor *a, clt_tensor **out)
{
    return clt_round_decimals(a, -1, out);
}

Test(rounding, bad_input)
{
    clt_device *dev = get_device("cpu");
    struct {
        un_fn f;
        const char *name;
    } un[NUN + NPRED + 1];
    for (int op = 0; op < NUN; op++)
        un[op].f = un_fns[op], un[op].name = un_names[op];
    for (int op = 0; op < NPRED; op++)
        un[NUN + op].f = pred_fns[op], un[NUN + op].name = pred_names[op];
    un[NUN + NPRED].f = round_decimals_m1;
    un[NUN + NPRED].name = "round_decimals";
    int64_t n = 3, m = 2;
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(dev, CLT_INT32, 1, &m, &b));
    char fn[32];
    for (int op = 0; op < NUN + NPRED + 1; op++) {
        snprintf(fn, sizeof fn, "clt_%s", un[op].name);
        clt_tensor *r = (clt_tensor *)&r;
        assert_error(un[op].f(NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
        names_only(fn);
        cr_assert_null(r);
        cr_assert_eq(un[op].f(a, NULL), CLT_ERR_NULL_ARGUMENT, "%s", un[op].name);
    }
    for (int op = 0; op < NLOG; op++) {
        snprintf(fn, sizeof fn, "clt_%s", log_names[op]);
        clt_tensor *r = (clt_tensor *)&r;
        assert_error(log_fns[op](NULL, a, &r), CLT_ERR_NULL_ARGUMENT, NULL);
        names_only(fn);
        cr_assert_null(r);
        r = (clt_tensor *)&r;
        assert_error(log_fns[op](a, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
        cr_assert_null(r);
        cr_assert_eq(log_fns[op](a, a, NULL), CLT_ERR_NULL_ARGUMENT, "%s", log_names[op]);
        /* shapes [3] and [2] do not broadcast */
        r = (clt_tensor *)&r;
        assert_error(log_fns[op](a, b, &r), CLT_ERR_SHAPE_MISMATCH, "[3]");
        names_only(fn);
        cr_assert_null(r);
    }
    /* the inputs are left as they were */
    float *v = read_f32(a);
    cr_assert(v[0] == 1 && v[1] == 1 && v[2] == 1);
    free(v);
    clt_tensor_free(a);
    clt_tensor_free(b);
}
