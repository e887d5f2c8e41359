/* test_dtypes.c: type promotion against PyTorch's tables, dtype conversions
 * (truncation, wrap-around, bool), fills of every dtype, float64 on the
 * device, and clear errors for dtypes a device cannot hold. */
#include <stdint.h>

#include "helpers.h"
#include "internal.h"

enum { F32 = CLT_FLOAT32, F64 = CLT_FLOAT64, F16 = CLT_FLOAT16, I32 = CLT_INT32,
       I64 = CLT_INT64, U8 = CLT_UINT8, B = CLT_BOOL };

/* torch.promote_types, rows and columns in enum order. */
static const int promote_table[7][7] = {
    /*          F32  F64  F16  I32  I64  U8   B   */
    /* F32 */ {F32, F64, F32, F32, F32, F32, F32},
    /* F64 */ {F64, F64, F64, F64, F64, F64, F64},
    /* F16 */ {F32, F64, F16, F16, F16, F16, F16},
    /* I32 */ {F32, F64, F16, I32, I64, I32, I32},
    /* I64 */ {F32, F64, F16, I64, I64, I64, I64},
    /* U8  */ {F32, F64, F16, I32, I64, U8, U8},
    /* B   */ {F32, F64, F16, I32, I64, U8, B},
};

Test(dtypes, promote_types_matches_torch)
{
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++)
            cr_assert_eq(clt_promote_types((clt_dtype)a, (clt_dtype)b), promote_table[a][b],
                         "promote_types(%s, %s) = %s, want %s", clt_dtype_name((clt_dtype)a),
                         clt_dtype_name((clt_dtype)b),
                         clt_dtype_name(clt_promote_types((clt_dtype)a, (clt_dtype)b)),
                         clt_dtype_name((clt_dtype)promote_table[a][b]));
}

/* Values outside the enum (found by tests/fuzz.c: they indexed a table). */
Test(dtypes, promote_types_outside_the_enum)
{
    const int bad[] = {-1, CLT_DTYPE_COUNT, 100, 0x7fffffff};
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < CLT_DTYPE_COUNT; b++) {
            cr_assert_eq(clt_promote_types((clt_dtype)bad[i], (clt_dtype)b), CLT_DTYPE_COUNT);
            cr_assert_eq(clt_promote_types((clt_dtype)b, (clt_dtype)bad[i]), CLT_DTYPE_COUNT);
        }
    cr_assert_eq(clt_promote_types((clt_dtype)-1, (clt_dtype)-1), CLT_DTYPE_COUNT);
}

static clt_tensor *zeros(clt_device *dev, clt_dtype dt, int nd)
{
    int64_t shape[2] = {2, 3};
    clt_tensor *t = NULL;
    CHECK(clt_zeros(dev, dt, nd, shape, &t));
    return t;
}

Test(dtypes, result_type_zero_dim_rules)
{
    clt_device *dev = get_device("cpu");
    bool fp64 = clt_device_supports_dtype(dev, CLT_FLOAT64);
    /* a, its ndim, b, its ndim, torch.result_type */
    const struct {
        clt_dtype a;
        int na;
        clt_dtype b;
        int nb;
        clt_dtype want;
    } cases[] = {
        {CLT_INT32, 1, CLT_INT64, 0, CLT_INT32},     /* same category: dims win */
        {CLT_UINT8, 2, CLT_INT64, 0, CLT_UINT8},
        {CLT_FLOAT32, 1, CLT_FLOAT64, 0, CLT_FLOAT32},
        {CLT_INT32, 1, CLT_FLOAT64, 0, CLT_FLOAT64}, /* higher category: 0-d decides */
        {CLT_BOOL, 2, CLT_INT64, 0, CLT_INT64},
        {CLT_INT64, 0, CLT_BOOL, 1, CLT_INT64},
        {CLT_INT32, 0, CLT_FLOAT64, 0, CLT_FLOAT64}, /* both 0-d: plain promotion */
        {CLT_INT32, 1, CLT_INT64, 1, CLT_INT64},
        {CLT_UINT8, 1, CLT_BOOL, 0, CLT_UINT8},
        {CLT_FLOAT32, 0, CLT_INT64, 2, CLT_FLOAT32},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!fp64 && (cases[c].a == CLT_FLOAT64 || cases[c].b == CLT_FLOAT64))
            continue;
        clt_tensor *a = zeros(dev, cases[c].a, cases[c].na);
        clt_tensor *b = zeros(dev, cases[c].b, cases[c].nb);
        clt_dtype got = CLT_DTYPE_COUNT;
        CHECK(clt_result_type(a, b, &got));
        cr_assert_eq(got, cases[c].want, "case %zu: %s", c, clt_dtype_name(got));
        CHECK(clt_result_type(b, a, &got));
        cr_assert_eq(got, cases[c].want, "case %zu reversed: %s", c, clt_dtype_name(got));
        /* the op's result has that dtype too */
        clt_tensor *r = NULL;
        CHECK(clt_mul(a, b, &r));
        cr_assert_eq(clt_tensor_dtype(r), cases[c].want, "case %zu: mul gives %s", c,
                     clt_dtype_name(clt_tensor_dtype(r)));
        clt_tensor_free(r);
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
    /* Leave no kernel to be compiled while the process exits. */
    CHECK(clt_device_synchronize(dev));
}

/* ---- conversions ------------------------------------------------------------------ */

static void from_host(clt_device *dev, clt_dtype dt, int64_t n, const void *data,
                      clt_tensor **out)
{
    CHECK(clt_tensor_from_host(dev, dt, 1, &n, data, out));
}

static clt_tensor *convert(const clt_tensor *t, clt_dtype dt)
{
    clt_tensor *r = NULL;
    CHECK(clt_to_dtype(t, dt, &r));
    cr_assert_eq(clt_tensor_dtype(r), dt);
    cr_assert_eq(clt_tensor_numel(r), clt_tensor_numel(t));
    return r;
}

/* Runs the conversion checks with n elements made by repeating the
 * patterns, so that the chunked and the one-element paths both run. */
static void check_conversions(clt_device *dev, int64_t n)
{
    static const float fv[] = {2.7f, -2.7f, -0.5f, 100.99f, 0.0f, -0.0f, 7.0f, 126.5f};
    static const int32_t iv[] = {0, 5, -1, 256, 300, -129, 2147483647, 42};
    float *hf = malloc((size_t)n * sizeof *hf);
    int32_t *hi = malloc((size_t)n * sizeof *hi);
    for (int64_t k = 0; k < n; k++) {
        hf[k] = fv[k % 8] + (float)(k / 8 % 3);
        hi[k] = iv[k % 8];
    }
    clt_tensor *f = NULL, *i = NULL;
    from_host(dev, CLT_FLOAT32, n, hf, &f);
    from_host(dev, CLT_INT32, n, hi, &i);

    clt_tensor *r = convert(f, CLT_INT32);
    int32_t *gi = malloc((size_t)n * 4);
    CHECK(clt_tensor_read(r, gi, (size_t)n * 4));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gi[k], (int32_t)truncf(hf[k]), "float %g -> int32 %d", hf[k], gi[k]);
    clt_tensor_free(r);

    r = convert(f, CLT_INT64);
    int64_t *gl = malloc((size_t)n * 8);
    CHECK(clt_tensor_read(r, gl, (size_t)n * 8));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gl[k], (int64_t)truncf(hf[k]), "float %g -> int64", hf[k]);
    clt_tensor_free(r);

    uint8_t *gb = malloc((size_t)n);
    r = convert(f, CLT_UINT8); /* through int: -2.7 -> -2 -> 254 */
    CHECK(clt_tensor_read(r, gb, (size_t)n));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gb[k], (uint8_t)(int32_t)hf[k], "float %g -> uint8 %u", hf[k], gb[k]);
    clt_tensor_free(r);

    r = convert(f, CLT_BOOL);
    CHECK(clt_tensor_read(r, gb, (size_t)n));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gb[k], hf[k] != 0, "float %g -> bool %u", hf[k], gb[k]);
    clt_tensor_free(r);

    r = convert(i, CLT_BOOL);
    CHECK(clt_tensor_read(r, gb, (size_t)n));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gb[k], hi[k] != 0, "int %d -> bool %u", hi[k], gb[k]);
    /* bool -> float32 and int32 give exactly 0 and 1 */
    clt_tensor *bf = convert(r, CLT_FLOAT32), *bi = convert(r, CLT_INT32);
    float *gf = malloc((size_t)n * 4);
    CHECK(clt_tensor_read(bf, gf, (size_t)n * 4));
    CHECK(clt_tensor_read(bi, gi, (size_t)n * 4));
    for (int64_t k = 0; k < n; k++) {
        cr_assert_eq(gf[k], hi[k] != 0 ? 1.0f : 0.0f);
        cr_assert_eq(gi[k], hi[k] != 0);
    }
    clt_tensor_free(bf);
    clt_tensor_free(bi);
    clt_tensor_free(r);

    r = convert(i, CLT_UINT8); /* wraps modulo 256 */
    CHECK(clt_tensor_read(r, gb, (size_t)n));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gb[k], (uint8_t)(uint32_t)hi[k], "int %d -> uint8 %u", hi[k], gb[k]);
    clt_tensor *uf = convert(r, CLT_FLOAT32);
    CHECK(clt_tensor_read(uf, gf, (size_t)n * 4));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gf[k], (float)(uint8_t)(uint32_t)hi[k]);
    clt_tensor_free(uf);
    clt_tensor_free(r);

    r = convert(i, CLT_FLOAT32);
    CHECK(clt_tensor_read(r, gf, (size_t)n * 4));
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(gf[k], (float)hi[k]);
    clt_tensor_free(r);

    free(hf);
    free(hi);
    free(gi);
    free(gl);
    free(gb);
    free(gf);
    clt_tensor_free(f);
    clt_tensor_free(i);
}

Test(dtypes, conversions_truncate_wrap_and_bool)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {1, 8, 37, 4099, 70001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_conversions(dev, sizes[s]);
}

Test(dtypes, conversions_gpu_variant)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    check_conversions(dev, 37);
}

Test(dtypes, conversion_of_non_contiguous_source)
{
    clt_device *dev = get_device("cpu");
    float h[12] = {0.5f, -1.5f, 2.5f, -3.5f, 4.5f, -5.5f, 6.5f, -7.5f, 8.5f, -9.5f, 0, -0.0f};
    int64_t s[2] = {3, 4}, ts[2] = {4, 3}, tst[2] = {1, 4};
    clt_tensor *a = NULL, *t = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, s, h, &a));
    CHECK(clt__tensor_view(a, 2, ts, tst, 0, &t));
    CHECK(clt_to_dtype(t, CLT_INT32, &r));
    cr_assert(clt_tensor_is_contiguous(r));
    int32_t g[12];
    CHECK(clt_tensor_read(r, g, sizeof g));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(g[i * 3 + j], (int32_t)h[j * 4 + i]);
    clt_tensor_free(r);
    clt_tensor_free(t);
    clt_tensor_free(a);
}

Test(dtypes, same_dtype_shares_storage)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 5;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_ones(dev, CLT_INT32, 1, &n, &a));
    CHECK(clt_to_dtype(a, CLT_INT32, &r));
    cr_assert_eq(clt__mem(r), clt__mem(a));
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* ---- fills of every dtype ------------------------------------------------------------- */

/* Small fills go to the driver's fill command and larger ones to fill.cl
 * (src/tensor/tensor.c): 5 and 4099 elements of one byte are the first,
 * 20000 of any dtype the second. */
Test(dtypes, full_every_dtype)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {0, 5, 4099, 20000};
    for (int dt = 0; dt < CLT_DTYPE_COUNT; dt++) {
        if (!clt_device_supports_dtype(dev, (clt_dtype)dt))
            continue;
        for (size_t s = 0; s < 4; s++) {
            int64_t n = sizes[s];
            clt_tensor *t = NULL;
            CHECK(clt_full(dev, (clt_dtype)dt, 1, &n, 3.75, &t));
            size_t es = clt_dtype_size((clt_dtype)dt);
            unsigned char *buf = malloc((size_t)(n ? n : 1) * es);
            CHECK(clt_tensor_read(t, buf, (size_t)n * es));
            for (int64_t i = 0; i < n; i++) {
                const unsigned char *p = buf + (size_t)i * es;
                switch ((clt_dtype)dt) {
                case CLT_FLOAT32: cr_assert_eq(*(const float *)p, 3.75f); break;
                case CLT_FLOAT64: cr_assert_eq(*(const double *)p, 3.75); break;
                case CLT_FLOAT16: cr_assert_eq(*(const uint16_t *)p, 0x4380); break;
                case CLT_INT32: cr_assert_eq(*(const int32_t *)p, 3); break;
                case CLT_INT64: cr_assert_eq(*(const int64_t *)p, 3); break;
                case CLT_UINT8: cr_assert_eq(*p, 3); break;
                case CLT_BOOL: cr_assert_eq(*p, 1); break;
                case CLT_COMPLEX64:
                    cr_assert(((const float *)p)[0] == 3.75f && ((const float *)p)[1] == 0.0f);
                    break;
                case CLT_COMPLEX128:
                    cr_assert(((const double *)p)[0] == 3.75 && ((const double *)p)[1] == 0.0);
                    break;
                default: break;
                }
            }
            free(buf);
            clt_tensor_free(t);
        }
    }
}

/* A float16 fill rounds through float32, as PyTorch converts a Scalar to
 * Half: 1 + 2^-11 + 2^-40 is 1 + 2^-11 in float32, halfway between two
 * halves, so it rounds to even (1.0, 0x3c00), not up to 0x3c01 as one
 * rounding of the double would.  The same in both fill paths. */
Test(dtypes, float16_fill_rounds_through_float32)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("%s has no cl_khr_fp16", clt_device_name(dev));
    const double v = 1.0 + ldexp(1.0, -11) + ldexp(1.0, -40);
    float f = (float)v;
    cr_assert_eq(f, 1.0f + ldexpf(1.0f, -11), "the float32 rounding this test relies on");
    const int64_t sizes[] = {3, 20000};
    for (int s = 0; s < 2; s++) {
        clt_tensor *t = NULL;
        CHECK(clt_full(dev, CLT_FLOAT16, 1, &sizes[s], v, &t));
        uint16_t *h = malloc((size_t)sizes[s] * sizeof *h);
        CHECK(clt_tensor_read(t, h, (size_t)sizes[s] * sizeof *h));
        for (int64_t i = 0; i < sizes[s]; i++)
            cr_assert_eq(h[i], 0x3c00, "%lld of %lld: 0x%04x", (long long)i,
                         (long long)sizes[s], h[i]);
        free(h);
        clt_tensor_free(t);
    }
}

/* ---- float64 and unsupported dtypes ---------------------------------------------------- */

Test(dtypes, float64_works_on_device)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("%s has no cl_khr_fp64", clt_device_name(dev));
    enum { N = 4099 };
    double *h = malloc(N * sizeof *h);
    for (int i = 0; i < N; i++)
        h[i] = 4503599627370496.0 + i; /* 2^52 + i: exact in double, not in float */
    int64_t n = N;
    clt_tensor *a = NULL, *r = NULL, *f = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, h, &a));
    CHECK(clt_add_scalar(a, 1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT64);
    double *g = malloc(N * sizeof *g);
    CHECK(clt_tensor_read(r, g, N * sizeof *g));
    for (int i = 0; i < N; i++)
        cr_assert_eq(g[i], h[i] + 1, "element %d", i);
    clt_tensor_free(r);
    CHECK(clt_div_scalar(a, 3, &r));
    CHECK(clt_tensor_read(r, g, N * sizeof *g));
    for (int i = 0; i < N; i++)
        cr_assert(close_enough(g[i], h[i] / 3, 2e-16, 0), "element %d", i);
    /* float64 -> float32 rounds to nearest */
    CHECK(clt_to_dtype(r, CLT_FLOAT32, &f));
    float *gf = malloc(N * sizeof *gf);
    CHECK(clt_tensor_read(f, gf, N * sizeof *gf));
    for (int i = 0; i < N; i++)
        cr_assert_eq(gf[i], (float)g[i], "element %d", i);
    free(h);
    free(g);
    free(gf);
    clt_tensor_free(a);
    clt_tensor_free(r);
    clt_tensor_free(f);
}

Test(dtypes, unsupported_dtype_is_a_clear_error)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *t = (clt_tensor *)&t, *f = NULL;
    if (clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("%s supports float16", clt_device_name(dev));
    cr_assert_eq(clt_full(dev, CLT_FLOAT16, 1, &n, 1.0, &t), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(t);
    cr_assert(strstr(clt_last_error(), "cl_khr_fp16") &&
              strstr(clt_last_error(), clt_device_label(dev)) &&
              strstr(clt_last_error(), "float16"), "%s", clt_last_error());
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &f));
    t = (clt_tensor *)&t;
    cr_assert_eq(clt_to_dtype(f, CLT_FLOAT16, &t), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(t);
    cr_assert_eq(clt_zeros(dev, (clt_dtype)42, 1, &n, &t), CLT_ERR_INVALID_ARGUMENT);
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(f);
}

/* An op whose promoted dtype the device lacks fails before any build, with
 * the device and extension named; simulated by hiding fp64 from the device
 * in this (forked) test process. */
Test(dtypes, op_promoting_to_unsupported_dtype)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("needs a device with fp64 to make the operand");
    int64_t n = 4;
    clt_tensor *d = NULL, *f = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_FLOAT64, 1, &n, &d));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &f));
    dev->info.fp64 = 0;
    cr_assert_eq(clt_add(f, d, &r), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "cl_khr_fp64") && strstr(clt_last_error(), "clt_add"),
              "%s", clt_last_error());
    cr_assert_eq(clt_exp(d, &r), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_eq(clt_to_dtype(f, CLT_FLOAT64, &r), CLT_ERR_DTYPE_UNSUPPORTED);
    dev->info.fp64 = 1;
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(d);
    clt_tensor_free(f);
}

/* Scalars out of a dtype's range, as PyTorch treats them: an operand of a
 * binary op wraps (a Python int added to an int32 tensor), a fill value or
 * clamp bound must fit (c10's "cannot be converted ... without overflow"). */
static void scalar_op(clt_status (*op)(const clt_tensor *, double, clt_tensor **),
                      const clt_tensor *a, double s, clt_dtype want_dt, const int64_t *want)
{
    clt_tensor *r = NULL;
    CHECK(op(a, s, &r));
    cr_assert_eq(clt_tensor_dtype(r), want_dt);
    int64_t got[2] = {0, 0};
    for (int64_t i = 0; i < 2; i++) {
        clt_tensor *e = NULL;
        double v = 0;
        CHECK(clt_narrow(r, 0, i, 1, &e));
        CHECK(clt_tensor_item(e, &v));
        got[i] = (int64_t)v;
        clt_tensor_free(e);
    }
    cr_assert(got[0] == want[0] && got[1] == want[1],
              "%s op %.17g: got [%lld, %lld], want [%lld, %lld]", clt_dtype_name(clt_tensor_dtype(a)),
              s, (long long)got[0], (long long)got[1], (long long)want[0], (long long)want[1]);
    clt_tensor_free(r);
}

static void expect_overflow(clt_status st, const char *what)
{
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", what, clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "without overflow") != NULL, "%s: message: %s", what,
              clt_last_error());
}

Test(dtypes, binary_op_scalars_wrap_like_python_ints)
{
    clt_device *dev = get_device("cpu");
    int32_t hi[2] = {1, 2};
    uint8_t hu[2] = {1, 2};
    clt_tensor *a = NULL, *u = NULL;
    int64_t n = 2;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &n, hi, &a));
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, &n, hu, &u));
    scalar_op(clt_add_scalar, a, 1099511627776.0, CLT_INT32, (int64_t[]){1, 2}); /* 2^40 */
    scalar_op(clt_add_scalar, a, 2147483648.0, CLT_INT32, (int64_t[]){-2147483647, -2147483646});
    scalar_op(clt_mul_scalar, a, 1099511627776.0, CLT_INT32, (int64_t[]){0, 0});
    scalar_op(clt_add_scalar, u, 300, CLT_UINT8, (int64_t[]){45, 46});
    scalar_op(clt_sub_scalar, u, 1, CLT_UINT8, (int64_t[]){0, 1});
    scalar_op(clt_add_scalar, u, -200, CLT_UINT8, (int64_t[]){57, 58});
    /* No Python int is this large: out of int64's range it is an error. */
    clt_tensor *r = NULL;
    expect_overflow(clt_add_scalar(a, 1e30, &r), "int32 + 1e30");
    cr_assert_null(r);
    /* The message states the range that applies, int64's, not int32's. */
    cr_assert(strstr(clt_last_error(), "int64's range [-9.2233720368547758e+18, "
                                       "9.2233720368547748e+18]") != NULL &&
                  strstr(clt_last_error(), "wraps to int32") != NULL &&
                  strstr(clt_last_error(), "2147483647") == NULL,
              "%s", clt_last_error());
    expect_overflow(clt_sub_scalar(u, -1e19, &r), "uint8 - -1e19");
    cr_assert(strstr(clt_last_error(), "int64's range") != NULL &&
                  strstr(clt_last_error(), "wraps to uint8") != NULL,
              "%s", clt_last_error());
    clt_tensor_free(a);
    clt_tensor_free(u);
}

Test(dtypes, fill_values_and_clamp_bounds_must_fit)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 2;
    clt_tensor *t = NULL;
    expect_overflow(clt_full(dev, CLT_INT32, 1, &n, 1099511627776.0, &t), "full int32 2^40");
    cr_assert_null(t);
    expect_overflow(clt_full(dev, CLT_INT32, 1, &n, -2147483649.0, &t), "full int32 -2^31-1");
    expect_overflow(clt_full(dev, CLT_UINT8, 1, &n, 300, &t), "full uint8 300");
    expect_overflow(clt_full(dev, CLT_FLOAT32, 1, &n, 1e300, &t), "full float32 1e300");
    expect_overflow(clt_full(dev, CLT_INT64, 1, &n, 1e19, &t), "full int64 1e19");
    /* A fractional value is torch's floating Scalar: it must lie in the
     * dtype's own range before truncation (torch.full((2,), 127.5,
     * dtype=torch.int8) and torch.full((2,), -0.5, dtype=torch.uint8)
     * raise), where an integral one has uint8's wrapping. */
    expect_overflow(clt_full(dev, CLT_INT8, 1, &n, 127.5, &t), "full int8 127.5");
    cr_assert_null(t);
    cr_assert(strstr(clt_last_error(), "[-128, 127]") != NULL, "%s", clt_last_error());
    expect_overflow(clt_full(dev, CLT_INT8, 1, &n, -128.9, &t), "full int8 -128.9");
    expect_overflow(clt_full(dev, CLT_INT16, 1, &n, -32768.5, &t), "full int16 -32768.5");
    expect_overflow(clt_full(dev, CLT_INT32, 1, &n, 2147483647.5, &t), "full int32 2^31-0.5");
    expect_overflow(clt_full(dev, CLT_UINT8, 1, &n, -0.5, &t), "full uint8 -0.5");
    cr_assert(strstr(clt_last_error(), "[0, 255]") != NULL, "%s", clt_last_error());
    expect_overflow(clt_full(dev, CLT_UINT8, 1, &n, 255.5, &t), "full uint8 255.5");
    cr_assert_null(t);

    /* Values that fit, at the edges: kept, truncated or wrapped as torch.full. */
    double v = 0;
    clt_tensor *s = NULL;
    CHECK(clt_full(dev, CLT_INT32, 0, NULL, -2147483648.0, &s));
    CHECK(clt_tensor_item(s, &v));
    cr_assert_eq(v, -2147483648.0);
    clt_tensor_free(s);
    CHECK(clt_full(dev, CLT_INT32, 0, NULL, 2.9, &s));
    CHECK(clt_tensor_item(s, &v));
    cr_assert_eq(v, 2.0);
    clt_tensor_free(s);
    CHECK(clt_full(dev, CLT_INT8, 0, NULL, 126.75, &s));
    CHECK(clt_tensor_item(s, &v));
    cr_assert_eq(v, 126.0);
    clt_tensor_free(s);
    CHECK(clt_full(dev, CLT_UINT8, 0, NULL, 254.5, &s));
    CHECK(clt_tensor_item(s, &v));
    cr_assert_eq(v, 254.0);
    clt_tensor_free(s);
    CHECK(clt_full(dev, CLT_UINT8, 0, NULL, -1, &s));
    CHECK(clt_tensor_item(s, &v));
    cr_assert_eq(v, 255.0);
    clt_tensor_free(s);
    CHECK(clt_full(dev, CLT_FLOAT32, 0, NULL, INFINITY, &s));
    CHECK(clt_tensor_item(s, &v));
    cr_assert(isinf(v) && v > 0);
    clt_tensor_free(s);

    int32_t hi[2] = {1, 2};
    float hf[2] = {1, 2};
    clt_tensor *a = NULL, *f = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &n, hi, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, hf, &f));
    double big = 1099511627776.0, small = -1099511627776.0, huge = 1e300;
    expect_overflow(clt_clamp(a, NULL, &big, &r), "clamp int32 max 2^40");
    expect_overflow(clt_clamp(a, &small, NULL, &r), "clamp int32 min -2^40");
    expect_overflow(clt_clamp(f, NULL, &huge, &r), "clamp float32 max 1e300");
    cr_assert_null(r);
    /* An operand of a binary op overflows to inf in float32, as in torch. */
    CHECK(clt_add_scalar(f, 1e300, &r));
    float *got = read_f32(r);
    cr_assert(isinf(got[0]) && isinf(got[1]));
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(a);
    clt_tensor_free(f);
}

/* Scalars at and beyond the integers' edges, through every path that
 * converts a double scalar to an integer dtype: each is refused or gives
 * the value the documented rules give (computed here with explicit range
 * checks and modular arithmetic), and, in the sanitizer build, no
 * conversion out of range happens on the way (UBSan's float-cast-overflow
 * stops the test). */
static const double edge_values[] = {NAN, INFINITY, -INFINITY, 0x1p63, -0x1p63 - 1.0 /* = -2^63 */,
                                     1e300};
static const clt_dtype edge_dtypes[] = {CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};

/* v fits dt as a fill value (c10's overflow check; uint8 takes -255..255). */
static int fits_exact(clt_dtype dt, double v)
{
    switch (dt) {
    case CLT_INT32: return v > -2147483649.0 && v < 2147483648.0;
    case CLT_INT64: return v >= -0x1p63 && v < 0x1p63;
    case CLT_UINT8: return v > -256.0 && v < 256.0;
    default: return 1;
    }
}

/* The int64 value i wrapped to dt's width, as a double. */
static double wrap_to(clt_dtype dt, int64_t i)
{
    uint64_t u = (uint64_t)i;
    switch (dt) {
    case CLT_INT32: return (double)(int32_t)(uint32_t)u;
    case CLT_UINT8: return (double)(uint8_t)u;
    case CLT_BOOL: return i != 0;
    default: return (double)i;
    }
}

/* Expects st to be a refusal (CLT_ERR_INVALID_ARGUMENT, the out NULL) when
 * `ok` is 0, else success with the single element equal to want (NaN equal
 * to NaN) in dtype want_dt. */
static void expect_edge(clt_status st, clt_tensor *r, int ok, clt_dtype want_dt, double want,
                        const char *op, clt_dtype dt, double v)
{
    if (!ok) {
        cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s %s %g: %s, want a refusal", op,
                     clt_dtype_name(dt), v, clt_status_name(st));
        cr_assert(strstr(clt_last_error(), "overflow") || strstr(clt_last_error(), "alpha") ||
                      strstr(clt_last_error(), "too many") || strstr(clt_last_error(), "range") ||
                      strstr(clt_last_error(), "sign"),
                  "%s %s %g: \"%s\"", op, clt_dtype_name(dt), v, clt_last_error());
        cr_assert_null(r, "%s", op);
        return;
    }
    cr_assert_eq(st, CLT_OK, "%s %s %g: %s", op, clt_dtype_name(dt), v, clt_last_error());
    cr_assert_eq(clt_tensor_dtype(r), want_dt, "%s %s %g: dtype %s, want %s", op,
                 clt_dtype_name(dt), v, clt_dtype_name(clt_tensor_dtype(r)),
                 clt_dtype_name(want_dt));
    double got = 0;
    CHECK(clt_tensor_item(r, &got));
    cr_assert(isnan(want) ? isnan(got) : got == want, "%s %s %g: %.17g, want %.17g", op,
              clt_dtype_name(dt), v, got, want);
    clt_tensor_free(r);
}

Test(dtypes, scalars_at_integer_edges)
{
    clt_device *dev = get_device("cpu");
    int64_t one = 1;
    for (size_t d = 0; d < sizeof edge_dtypes / sizeof edge_dtypes[0]; d++) {
        clt_dtype dt = edge_dtypes[d];
        clt_tensor *x = NULL, *mask = NULL, *idx = NULL;
        CHECK(clt_ones(dev, dt, 1, &one, &x));
        CHECK(clt_ones(dev, CLT_BOOL, 1, &one, &mask));
        CHECK(clt_zeros(dev, CLT_INT64, 1, &one, &idx));
        for (size_t k = 0; k < sizeof edge_values / sizeof edge_values[0]; k++) {
            double v = edge_values[k];
            int integral = isfinite(v) && v == floor(v), in_int64 = v >= -0x1p63 && v < 0x1p63;
            clt_tensor *r = (clt_tensor *)1;

            /* Fill values must fit the dtype (bool takes anything, v != 0). */
            double stored = dt == CLT_BOOL ? (v != 0) : fits_exact(dt, v) ? wrap_to(dt, (int64_t)v) : 0;
            clt_status st = clt_full(dev, dt, 1, &one, v, &r);
            expect_edge(st, r, fits_exact(dt, v), dt, stored, "full", dt, v);
            r = (clt_tensor *)1;
            st = clt_masked_fill(x, mask, v, &r);
            expect_edge(st, r, fits_exact(dt, v), dt, stored, "masked_fill", dt, v);
            CHECK(clt_clone(x, &r));
            st = clt_fill_(r, v);
            if (fits_exact(dt, v)) {
                expect_edge(st, r, 1, dt, stored, "fill_", dt, v);
            } else {
                cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "fill_ %s %g", clt_dtype_name(dt), v);
                clt_tensor_free(r);
            }

            /* Operands of binary ops: a non-integral scalar makes the
             * result float32; an integral one acts like a Python int,
             * wrapped to the result's width, and beyond int64 is refused.
             * A bool tensor with an int scalar gives int64. */
            clt_dtype int_dt = dt == CLT_BOOL ? CLT_INT64 : dt;
            int ok = !integral || in_int64;
            clt_dtype rdt = integral ? int_dt : CLT_FLOAT32;
            double add = integral ? (in_int64 ? wrap_to(int_dt, (int64_t)((uint64_t)1 + (uint64_t)(int64_t)v)) : 0)
                                  : (double)(1.0f + (float)v);
            double mul = integral ? (in_int64 ? wrap_to(int_dt, (int64_t)v) : 0) : (double)(float)v;
            r = (clt_tensor *)1;
            st = clt_add_scalar(x, v, &r);
            expect_edge(st, r, ok, rdt, add, "add_scalar", dt, v);
            r = (clt_tensor *)1;
            st = clt_mul_scalar(x, v, &r);
            expect_edge(st, r, ok, rdt, mul, "mul_scalar", dt, v);

            /* clamp's bound must fit the promoted dtype: 1 clamped below at v. */
            double lo = integral ? (in_int64 ? (v > 1 ? v : 1) : 0) : (isnan(v) ? NAN : (v > 1 ? v : 1));
            r = (clt_tensor *)1;
            st = clt_clamp(x, &v, NULL, &r);
            expect_edge(st, r, !integral || fits_exact(int_dt, v), rdt, lo, "clamp", dt, v);

            /* index_add's alpha: an integer destination takes only an
             * integral alpha in int64's range, wrapped. */
            if (dt != CLT_BOOL) {
                clt_tensor *z = NULL;
                CHECK(clt_zeros(dev, dt, 1, &one, &z));
                r = (clt_tensor *)1;
                st = clt_index_add(z, 0, idx, x, v, &r);
                expect_edge(st, r, integral && in_int64, dt, in_int64 ? wrap_to(dt, (int64_t)v) : 0,
                            "index_add alpha", dt, v);
                clt_tensor_free(z);
            }

            /* arange works in int64 for integer dtypes: each of these
             * starts or steps is refused. */
            if (dt != CLT_BOOL) {
                r = (clt_tensor *)1;
                st = clt_arange(dev, dt, 0, 10, v, &r);
                expect_edge(st, r, 0, dt, 0, "arange step", dt, v);
                r = (clt_tensor *)1;
                st = clt_arange(dev, dt, v, 10, 1, &r);
                expect_edge(st, r, 0, dt, 0, "arange start", dt, v);
            }
        }
        clt_tensor_free(x);
        clt_tensor_free(mask);
        clt_tensor_free(idx);
    }
}
