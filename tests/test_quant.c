/* test_quant.c: cltensor/quant.h against references computed here on the
 * host, written from PyTorch 1.13's kernels and observers: fake
 * quantization (ties at .5 rounding half to even, the clamp, the gradient
 * mask), per channel with integer and floating zero points, the learnable
 * form's gradients (torch's formulas in double, and central differences
 * in float64 where the function is smooth: outside the range),
 * quantize_per_tensor and dequantize, the observers' qparams, the
 * FakeQuantize module (state names, enabling, gradients through a model)
 * and the refusals. */
#include <float.h>
#include <stdint.h>

#include "gradcheck.h"
#include <cltensor/quant.h>

static clt_tensor *f32(clt_device *dev, int nd, const int64_t *shape, const float *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, nd, shape, v, &t));
    return t;
}

/* torch's static_cast<int64_t> of a rounded float on x86. */
static int64_t to_i64(double v)
{
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
        return INT64_MIN;
    return (int64_t)v;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* fake_quantize's float32 reference for one element; *in gets the mask. */
static float ref_fq(float x, float s, int64_t z, int64_t lo, int64_t hi, int *in)
{
    float inv = 1.0f / s;
    int64_t q = to_i64((float)z + nearbyintf(x * inv));
    *in = q >= lo && q <= hi;
    return (float)(clampi(q, lo, hi) - z) * s;
}

static const float TIES[] = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, -1.25f, 2.5f, -2.5f,
                             100.0f, -100.0f, 0.0f, 1e30f, NAN, INFINITY, 3.3f, -7.1f};
#define NTIES (sizeof TIES / sizeof TIES[0])

Test(quant, per_tensor_values_ties_and_mask)
{
    clt_device *dev = get_device("cpu");
    int64_t n = NTIES;
    const struct { double s; int64_t z, lo, hi; } cases[] = {
        {0.5, 3, 0, 255}, {0.5, 0, -128, 127}, {0.1, -10, -64, 63}, {0.0, 0, 0, 255}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *x = f32(dev, 1, &n, TIES), *y = NULL, *w = NULL, *p = NULL, *l = NULL,
                   *g = NULL;
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_fake_quantize_per_tensor_affine(x, cases[c].s, cases[c].z, cases[c].lo,
                                                  cases[c].hi, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), "FakeQuantizePerTensorAffineCachemaskBackward0");
        float wv[NTIES];
        for (size_t k = 0; k < NTIES; k++)
            wv[k] = (float)(k + 1);
        w = f32(dev, 1, &n, wv);
        CHECK(clt_mul(y, w, &p));
        CHECK(clt_sum(p, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(x, &g));
        float *got = read_f32(y), *gg = read_f32(g);
        for (size_t k = 0; k < NTIES; k++) {
            int in = 0;
            float want = ref_fq(TIES[k], (float)cases[c].s, cases[c].z, cases[c].lo,
                                cases[c].hi, &in);
            cr_assert(got[k] == want || (isnan(got[k]) && isnan(want)),
                      "case %zu x=%g: %g, want %g", c, TIES[k], got[k], want);
            cr_assert_eq(gg[k], in ? wv[k] : 0.0f, "case %zu x=%g: grad %g", c, TIES[k],
                         gg[k]);
        }
        /* the ties: 0.25 / 0.5 = 0.5 rounds to 0, 0.75 / 0.5 = 1.5 to 2, 2.5 / 0.5 = 5 */
        if (c == 0) {
            cr_assert_eq(got[0], 0.0f);
            cr_assert_eq(got[1], 1.0f);
            cr_assert_eq(got[2], 1.0f);
            cr_assert_eq(got[12], -1.5f, "NaN gives quant_min: %g", got[12]);
        }
        free(got);
        free(gg);
        clt_tensor_free(g);
        clt_tensor_free(l);
        clt_tensor_free(p);
        clt_tensor_free(w);
        clt_tensor_free(y);
        clt_tensor_free(x);
    }
}

Test(quant, per_tensor_tensor_qparams_and_float64)
{
    clt_device *dev = get_device("cpu");
    int64_t n = NTIES, one = 1;
    clt_tensor *x = f32(dev, 1, &n, TIES), *s = NULL, *z = NULL, *y = NULL, *x64 = NULL,
               *y64 = NULL;
    float sv = 0.5f;
    int32_t zv = 3;
    s = f32(dev, 0, NULL, &sv);
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &one, &zv, &z));
    CHECK(clt_fake_quantize_per_tensor_affine_t(x, s, z, 0, 255, &y));
    CHECK(clt_to_dtype(x, CLT_FLOAT64, &x64));
    CHECK(clt_fake_quantize_per_tensor_affine(x64, 0.5, 3, 0, 255, &y64));
    cr_assert_eq(clt_tensor_dtype(y64), CLT_FLOAT64);
    float *got = read_f32(y);
    double *g64 = read_as_f64(y64);
    for (size_t k = 0; k < NTIES; k++) {
        int in;
        float want = ref_fq(TIES[k], 0.5f, 3, 0, 255, &in);
        cr_assert(got[k] == want, "x=%g: %g, want %g", TIES[k], got[k], want);
        /* float64: torch clamps the double, so 1e30 and inf saturate at quant_max */
        double w64 = isinf(TIES[k]) || TIES[k] > 1e20f ? 126.0 : (double)want;
        cr_assert(g64[k] == w64, "float64 x=%g: %g, want %g", TIES[k], g64[k], w64);
    }
    free(got);
    free(g64);
    clt_tensor_free(y64);
    clt_tensor_free(x64);
    clt_tensor_free(y);
    clt_tensor_free(z);
    clt_tensor_free(s);
    clt_tensor_free(x);
}

Test(quant, per_channel_int_and_float_zero_points)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 4}, three = 3;
    float xv[24], sv[3] = {0.5f, 0.25f, 0.1f}, zf[3] = {1.0f, -2.0f, 3.0f};
    int32_t zi[3] = {1, -2, 3};
    for (int k = 0; k < 24; k++)
        xv[k] = (float)(k - 12) * 0.125f;
    clt_tensor *x = f32(dev, 3, shape, xv), *s = f32(dev, 1, &three, sv), *z = NULL,
               *zfl = f32(dev, 1, &three, zf), *y = NULL, *yf = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &three, zi, &z));
    CHECK(clt_fake_quantize_per_channel_affine(x, s, z, 1, -8, 7, &y));
    CHECK(clt_fake_quantize_per_channel_affine(x, s, zfl, 1, -8, 7, &yf));
    float *got = read_f32(y), *gotf = read_f32(yf);
    for (int k = 0; k < 24; k++) {
        int c = (k / 4) % 3, in;
        float want = ref_fq(xv[k], sv[c], zi[c], -8, 7, &in);
        cr_assert(got[k] == want, "element %d: %g, want %g", k, got[k], want);
        /* a floating zero point is added before rounding */
        int64_t q = to_i64(nearbyintf(zf[c] + xv[k] * (1.0f / sv[c])));
        float wf = (float)(clampi(q, -8, 7) - zf[c]) * sv[c];
        cr_assert(gotf[k] == wf, "float zp element %d: %g, want %g", k, gotf[k], wf);
    }
    free(got);
    free(gotf);
    clt_tensor_free(yf);
    clt_tensor_free(y);
    clt_tensor_free(zfl);
    clt_tensor_free(z);
    clt_tensor_free(s);
    clt_tensor_free(x);
}

Test(quant, refusals)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4, three = 3, shape[2] = {2, 3};
    float xv[6] = {0};
    clt_tensor *x = f32(dev, 1, &n, xv), *xi = NULL, *x2 = f32(dev, 2, shape, xv),
               *s3 = f32(dev, 1, &three, xv), *z64 = NULL, *out = (clt_tensor *)&out;
    CHECK(clt_to_dtype(x, CLT_INT32, &xi));
    CHECK(clt_to_dtype(s3, CLT_INT64, &z64));
    assert_error(clt_fake_quantize_per_tensor_affine(x, 0.5, 300, 0, 255, &out),
                 CLT_ERR_INVALID_ARGUMENT, "`zero_point` must be between");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_per_tensor_affine(x, 0.5, 0, 10, 5, &out),
                 CLT_ERR_INVALID_ARGUMENT, "`quant_min` should be less than or equal");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_per_tensor_affine(xi, 0.5, 0, 0, 255, &out),
                 CLT_ERR_DTYPE_MISMATCH, "clt_fake_quantize_per_tensor_affine: not implemented");
    cr_assert_null(out);
    /* bfloat16 is floating, yet refused as torch's kernel refuses it: the
     * message names the dtypes taken */
    clt_tensor *xb = NULL;
    CHECK(clt_to_dtype(x, CLT_BFLOAT16, &xb));
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_per_tensor_affine(xb, 0.5, 0, 0, 255, &out),
                 CLT_ERR_DTYPE_MISMATCH,
                 "not implemented for bfloat16 tensors (float32, float64 or float16");
    cr_assert_null(out);
    clt_tensor_free(xb);
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_per_channel_affine(x2, s3, z64, 1, 0, 255, &out),
                 CLT_ERR_DTYPE_MISMATCH, "Zero-point must be Int32, Float or Half");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_per_channel_affine(x2, s3, s3, 0, 0, 255, &out),
                 CLT_ERR_INVALID_ARGUMENT, "dimensions of scale and zero-point");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_per_channel_affine(x2, s3, s3, -1, 0, 255, &out),
                 CLT_ERR_INVALID_ARGUMENT, "`axis` must be between 0");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_tensor(x, 0.5, -129, CLT_QINT8, &out),
                 CLT_ERR_INVALID_ARGUMENT, "below lower bound");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_tensor(x, 0.5, 256, CLT_QUINT8, &out),
                 CLT_ERR_INVALID_ARGUMENT, "above upper bound");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_dequantize(x, 0.5, 0, &out), CLT_ERR_DTYPE_MISMATCH, "int8 (qint8)");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_fake_quantize_learnable_per_tensor_affine(x, s3, s3, 0, 255, 1.0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "must have one element");
    cr_assert_null(out);
    clt_tensor_free(z64);
    clt_tensor_free(s3);
    clt_tensor_free(x2);
    clt_tensor_free(xi);
    clt_tensor_free(x);
}

Test(quant, quantize_and_dequantize)
{
    clt_device *dev = get_device("cpu");
    int64_t n = NTIES;
    clt_tensor *x = f32(dev, 1, &n, TIES), *q = NULL, *q32 = NULL, *q8 = NULL, *d = NULL;
    clt_tensor *d8 = NULL;
    CHECK(clt_quantize_per_tensor(x, 0.5, 3, CLT_QUINT8, &q));
    CHECK(clt_quantize_per_tensor(x, 0.5, -5, CLT_QINT32, &q32));
    CHECK(clt_quantize_per_tensor(x, 0.25, -7, CLT_QINT8, &q8));
    cr_assert_eq(clt_tensor_dtype(q), CLT_UINT8);
    cr_assert_eq(clt_tensor_dtype(q32), CLT_INT32);
    cr_assert_eq(clt_tensor_dtype(q8), CLT_INT8);
    CHECK(clt_dequantize(q, 0.5, 3, &d));
    CHECK(clt_dequantize(q8, 0.25, -7, &d8));
    uint8_t qv[NTIES];
    int32_t qv32[NTIES];
    int8_t qv8[NTIES];
    CHECK(clt_tensor_read(q, qv, sizeof qv));
    CHECK(clt_tensor_read(q32, qv32, sizeof qv32));
    CHECK(clt_tensor_read(q8, qv8, sizeof qv8));
    float *dv = read_f32(d), *dv8 = read_f32(d8);
    for (size_t k = 0; k < NTIES; k++) {
        int64_t r = to_i64(3.0f + nearbyintf(TIES[k] * 2.0f));
        cr_assert_eq(qv[k], clampi(r, 0, 255), "x=%g: %d", TIES[k], qv[k]);
        int64_t r32 = to_i64(-5.0f + nearbyintf(TIES[k] * 2.0f));
        cr_assert_eq(qv32[k], clampi(r32, INT32_MIN, INT32_MAX), "x=%g: %d", TIES[k], qv32[k]);
        /* qint8: torch's range -128 .. 127 */
        int64_t r8 = to_i64(-7.0f + nearbyintf(TIES[k] * 4.0f));
        cr_assert_eq(qv8[k], clampi(r8, -128, 127), "x=%g: %d", TIES[k], qv8[k]);
        cr_assert_eq(dv[k], (float)(qv[k] - 3) * 0.5f);
        cr_assert_eq(dv8[k], (float)(qv8[k] + 7) * 0.25f);
    }
    free(dv);
    free(dv8);
    clt_tensor_free(d);
    clt_tensor_free(d8);
    clt_tensor_free(q8);
    clt_tensor_free(q32);
    clt_tensor_free(q);
    clt_tensor_free(x);
}

/* ---- learnable ------------------------------------------------------------------ */

/* torch's learnable backward for one element, in double from float32
 * values: the zero point z already rounded as the backward rounds it. */
static void ref_learn(float x, float g, float s, float z, int64_t lo, int64_t hi, double gf,
                      double *dx, double *ds, double *dz)
{
    float inv = 1.0f / s;
    int64_t q = to_i64(nearbyintf(z + x * inv));
    if (q < lo || q > hi) {
        *dx = 0;
        *dz = -(double)g * s * gf;
        *ds = (double)g * (double)((q < lo ? lo : hi) - z) * gf;
    } else {
        double xfq = (double)(clampi(q, lo, hi) - z) * s;
        *dx = g;
        *dz = 0;
        *ds = (double)g * (xfq - x) * inv * gf;
    }
}

Test(quant, learnable_per_tensor_gradients)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 12, one = 1;
    float xv[12] = {0.25f, 0.75f, -1.3f, 2.6f, 100.0f, -100.0f,
                    0.1f,  7.7f,  -3.3f, 1.0f, 3.9f,   -0.6f};
    const struct { float s, z; int64_t lo, hi; double gf; } cases[] = {
        {0.5f, 3.4f, 0, 255, 1.0}, {0.5f, 2.5f, 0, 15, 0.5}, {0.25f, -0.5f, -8, 7, 2.0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *x = f32(dev, 1, &n, xv), *s = f32(dev, 1, &one, &cases[c].s),
                   *z = f32(dev, 1, &one, &cases[c].z), *y = NULL, *w = NULL, *p = NULL,
                   *l = NULL, *gx = NULL, *gs = NULL, *gz = NULL;
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_set_requires_grad(s, 1));
        CHECK(clt_set_requires_grad(z, 1));
        CHECK(clt_fake_quantize_learnable_per_tensor_affine(x, s, z, cases[c].lo, cases[c].hi,
                                                            cases[c].gf, &y));
        float wv[12];
        for (int k = 0; k < 12; k++)
            wv[k] = (float)gc_weight((size_t)k);
        w = f32(dev, 1, &n, wv);
        CHECK(clt_mul(y, w, &p));
        CHECK(clt_sum(p, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(x, &gx));
        CHECK(clt_grad(s, &gs));
        CHECK(clt_grad(z, &gz));
        float *yv = read_f32(y), *gxv = read_f32(gx), *gsv = read_f32(gs), *gzv = read_f32(gz);
        /* the forward rounds the zero point half to even, the backward adds 0.5 */
        float zf = fminf(fmaxf(nearbyintf(cases[c].z), (float)cases[c].lo), (float)cases[c].hi);
        float zb = truncf(fminf(fmaxf(cases[c].z + 0.5f, (float)cases[c].lo),
                                (float)cases[c].hi));
        double sum_s = 0, sum_z = 0;
        for (int k = 0; k < 12; k++) {
            int in;
            float want = ref_fq(xv[k], cases[c].s, (int64_t)zf, cases[c].lo, cases[c].hi, &in);
            cr_assert_eq(yv[k], want, "case %zu element %d: %g, want %g", c, k, yv[k], want);
            double dx, ds, dz;
            ref_learn(xv[k], wv[k], cases[c].s, zb, cases[c].lo, cases[c].hi, cases[c].gf, &dx,
                      &ds, &dz);
            cr_assert(close_enough(gxv[k], dx, 1e-6, 1e-7), "case %zu dx[%d] %g, want %g", c,
                      k, gxv[k], dx);
            sum_s += ds;
            sum_z += dz;
        }
        cr_assert(close_enough(gsv[0], sum_s, 1e-5, 1e-5), "case %zu dscale %g, want %g", c,
                  gsv[0], sum_s);
        cr_assert(close_enough(gzv[0], sum_z, 1e-5, 1e-5), "case %zu dzero_point %g, want %g",
                  c, gzv[0], sum_z);
        free(yv);
        free(gxv);
        free(gsv);
        free(gzv);
        clt_tensor *ts[] = {x, s, z, y, w, p, l, gx, gs, gz};
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
            clt_tensor_free(ts[k]);
    }
}

/* The learnable forms through float32, from float64 leaves (grad_factor 1:
 * the true derivative; the factor is checked above). */
static clt_status call_learn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int per_channel = *(const int *)ctx;
    clt_tensor *c[3] = {0}, *y = NULL;
    clt_status st = CLT_OK;
    for (int k = 0; k < 3 && st == CLT_OK; k++)
        st = clt_to_dtype(in[k], CLT_FLOAT32, &c[k]);
    if (st == CLT_OK)
        st = per_channel
                 ? clt_fake_quantize_learnable_per_channel_affine(c[0], c[1], c[2], 0, -8, 7,
                                                                  1.0, &y)
                 : clt_fake_quantize_learnable_per_tensor_affine(c[0], c[1], c[2], -8, 7, 1.0,
                                                                 &y);
    if (st == CLT_OK)
        st = clt_to_dtype(y, CLT_FLOAT64, out);
    for (int k = 0; k < 3; k++)
        clt_tensor_free(c[k]);
    clt_tensor_free(y);
    return st;
}

/* Outside the range the fake quantization is (quant_min or quant_max -
 * zp) * scale, smooth in the scale and in x (flat), so central
 * differences in float64 check the scale's and x's gradients there. */
Test(quant, learnable_gradients_outside_the_range_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double xv[6] = {9.0, -9.5, 12.25, -30.0, 50.0, -11.0};
    const double s1[1] = {0.5}, z1[1] = {0.75};
    const double s2[2] = {0.5, 0.3}, z2[2] = {0.75, -1.25};
    int pc = 0;
    gc_in t_in[3] = {{1, {6}, xv, 1}, {1, {1}, s1, 1}, {1, {1}, z1, 0}};
    gradcheck_tol(dev, call_learn, &pc, 3, t_in, 1e-3, 1e-4, 1e-5);
    pc = 1;
    gc_in c_in[3] = {{2, {2, 3}, xv, 1}, {1, {2}, s2, 1}, {1, {2}, z2, 0}};
    gradcheck_tol(dev, call_learn, &pc, 3, c_in, 1e-3, 1e-4, 1e-5);
}

/* ---- observers ---------------------------------------------------------------------- */

static clt_tensor *observe_all(clt_device *dev, clt_module *m, int nb, int nd,
                               const int64_t *shape, const float *const *b)
{
    for (int k = 0; k < nb; k++) {
        clt_tensor *x = f32(dev, nd, shape, b[k]), *y = NULL;
        CHECK(clt_module_forward(m, x, &y));
        cr_assert_neq(y, x, "an observer gives its input back as a new handle");
        float *yv = read_f32(y);
        for (int64_t i = 0; i < clt_tensor_numel(x); i++)
            cr_assert_eq(yv[i], b[k][i], "element %lld", (long long)i);
        free(yv);
        clt_tensor_free(y);
        clt_tensor_free(x);
    }
    return NULL;
}

/* torch's affine qparams from min and max in float32. */
static void ref_affine(float mn, float mx, int64_t lo, int64_t hi, float *s, int64_t *z)
{
    float neg = fminf(mn, 0), pos = fmaxf(mx, 0);
    *s = fmaxf((pos - neg) / (float)(hi - lo), FLT_EPSILON);
    *z = clampi(lo - (int64_t)nearbyintf(neg / *s), lo, hi);
}

Test(quant, min_max_and_moving_average_observers)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 3};
    const float b0[6] = {-1.0f, 0.5f, 2.0f, 3.0f, -0.25f, 1.0f};
    const float b1[6] = {-3.0f, 0.5f, 1.0f, 5.5f, 0.0f, 1.0f};
    const float *bs[2] = {b0, b1};
    /* MinMaxObserver, quint8 affine */
    clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    clt_module *m = NULL;
    clt_tensor *s = NULL, *z = NULL;
    CHECK(clt_observer(dev, &o, &m));
    cr_assert_str_eq(clt_module_name(m), "MinMaxObserver");
    CHECK(clt_observer_calculate_qparams(m, &s, &z));
    float *sv = read_f32(s);
    int64_t zv64 = -1;
    CHECK(clt_tensor_read(z, &zv64, sizeof zv64));
    cr_assert(sv[0] == 1.0f && zv64 == 0, "unobserved: %g %lld", sv[0], (long long)zv64);
    free(sv);
    clt_tensor_free(s);
    clt_tensor_free(z);
    observe_all(dev, m, 2, 2, shape, bs);
    CHECK(clt_observer_calculate_qparams(m, &s, &z));
    cr_assert_eq(clt_tensor_dtype(z), CLT_INT32);
    float want_s;
    int64_t want_z;
    ref_affine(-3.0f, 5.5f, 0, 255, &want_s, &want_z);
    sv = read_f32(s);
    int32_t zv = -1;
    CHECK(clt_tensor_read(z, &zv, sizeof zv));
    cr_assert_eq(sv[0], want_s, "scale %g, want %g", sv[0], want_s);
    cr_assert_eq(zv, want_z, "zero_point %d, want %lld", zv, (long long)want_z);
    free(sv);
    clt_tensor_free(s);
    clt_tensor_free(z);
    /* converted with its model to float64, it observes and answers the same */
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    observe_all(dev, m, 2, 2, shape, bs);
    CHECK(clt_observer_calculate_qparams(m, &s, &z));
    sv = read_f32(s);
    cr_assert_eq(sv[0], want_s, "float64 buffers: scale %g, want %g", sv[0], want_s);
    free(sv);
    clt_tensor_free(s);
    clt_tensor_free(z);
    clt_module_free(m);
    /* the weight defaults: qint8, symmetric, as torch's default_weight_observer
     * and default_per_channel_weight_observer */
    o = (clt_observer_opts)CLT_WEIGHT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    cr_assert(o.dtype == CLT_QINT8 && o.qscheme == CLT_PER_TENSOR_SYMMETRIC);
    o = (clt_observer_opts)CLT_WEIGHT_OBSERVER_DEFAULTS(CLT_PER_CHANNEL_MIN_MAX_OBSERVER);
    cr_assert(o.dtype == CLT_QINT8 && o.qscheme == CLT_PER_CHANNEL_SYMMETRIC);
    o = (clt_observer_opts)CLT_WEIGHT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    CHECK(clt_observer(dev, &o, &m));
    int64_t qlo = 0, qhi = 0;
    CHECK(clt_observer_quant_range(m, &qlo, &qhi));
    cr_assert(qlo == -128 && qhi == 127, "[%lld, %lld]", (long long)qlo, (long long)qhi);
    clt_module_free(m);
    /* MovingAverageMinMaxObserver, qint8 symmetric, constant 0.25 */
    o = (clt_observer_opts)CLT_OBSERVER_DEFAULTS(CLT_MOVING_AVERAGE_MIN_MAX_OBSERVER);
    o.dtype = CLT_QINT8;
    o.qscheme = CLT_PER_TENSOR_SYMMETRIC;
    o.averaging_constant = 0.25;
    CHECK(clt_observer(dev, &o, &m));
    observe_all(dev, m, 2, 2, shape, bs);
    float mn = -1.0f + 0.25f * (-3.0f - -1.0f), mx = 3.0f + 0.25f * (5.5f - 3.0f);
    float *mnv = read_f32(clt_module_buffer(m, "min_val"));
    float *mxv = read_f32(clt_module_buffer(m, "max_val"));
    cr_assert(mnv[0] == mn && mxv[0] == mx, "moving min %g max %g", mnv[0], mxv[0]);
    free(mnv);
    free(mxv);
    CHECK(clt_observer_calculate_qparams(m, &s, &z));
    sv = read_f32(s);
    CHECK(clt_tensor_read(z, &zv64, sizeof zv64));
    float ws = fmaxf(fmaxf(-fminf(mn, 0), fmaxf(mx, 0)) / (255.0f / 2), FLT_EPSILON);
    cr_assert_eq(sv[0], ws, "symmetric scale %g, want %g", sv[0], ws);
    cr_assert_eq(zv64, 0);
    free(sv);
    clt_tensor_free(s);
    clt_tensor_free(z);
    clt_module_free(m);
}

/* A scope around the forward releases what the observer (and a
 * FakeQuantize with fake quantization off) returned: nothing of x is
 * left on the device once x, the result and the module are released. */
Test(quant, observer_forward_in_a_scope_leaves_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_memory_stats_get(dev, &before));
    int64_t shape = 3;
    const float xv[3] = {1.0f, -2.0f, 0.5f};
    for (int fq = 0; fq < 2; fq++) {
        clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
        clt_module *m = NULL;
        if (fq) {
            CHECK(clt_fake_quantize_layer(dev, &o, &m));
            CHECK(clt_fake_quantize_enable_fake_quant(m, 0));
        } else {
            CHECK(clt_observer(dev, &o, &m));
        }
        clt_tensor *x = f32(dev, 1, &shape, xv), *y = NULL;
        CHECK(clt_scope_begin());
        CHECK(clt_module_forward(m, x, &y));
        cr_assert_neq(y, x);
        clt_scope_end();
        float *v = read_f32(x);
        cr_assert(v[0] == 1.0f && v[1] == -2.0f && v[2] == 0.5f, "x survives the scope");
        free(v);
        clt_tensor_free(x);
        clt_module_free(m);
    }
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%llu bytes requested after, %llu before",
                 (unsigned long long)after.requested, (unsigned long long)before.requested);
}

Test(quant, per_channel_observer_and_ranges)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 3};
    const float b0[6] = {-1.0f, 0.5f, 2.0f, 3.0f, -0.25f, 1.0f};
    const float *bs[1] = {b0};
    clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_PER_CHANNEL_MIN_MAX_OBSERVER);
    o.ch_axis = 1;
    o.num_channels = 3;
    o.has_range = 1;
    o.quant_min = -10; /* quint8's custom range moves to start at 0: [0, 20] */
    o.quant_max = 10;
    clt_module *m = NULL;
    clt_tensor *s = NULL, *z = NULL;
    CHECK(clt_observer(dev, &o, &m));
    int64_t lo, hi;
    CHECK(clt_observer_quant_range(m, &lo, &hi));
    cr_assert(lo == 0 && hi == 20, "range [%lld, %lld]", (long long)lo, (long long)hi);
    observe_all(dev, m, 1, 2, shape, bs);
    CHECK(clt_observer_calculate_qparams(m, &s, &z));
    assert_shape(s, 1, (int64_t[]){3});
    float *sv = read_f32(s);
    int32_t zv[3];
    CHECK(clt_tensor_read(z, zv, sizeof zv));
    for (int c = 0; c < 3; c++) {
        float mn = fminf(b0[c], b0[3 + c]), mx = fmaxf(b0[c], b0[3 + c]), ws;
        int64_t wz;
        ref_affine(mn, mx, 0, 20, &ws, &wz);
        cr_assert(sv[c] == ws && zv[c] == wz, "channel %d: %g %d, want %g %lld", c, sv[c],
                  zv[c], ws, (long long)wz);
    }
    free(sv);
    clt_tensor_free(s);
    clt_tensor_free(z);
    /* an input of other channels is refused and changes nothing */
    int64_t bad[2] = {3, 2};
    clt_tensor *x = f32(dev, 2, bad, b0), *y = (clt_tensor *)&y;
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_SHAPE_MISMATCH, "channels");
    cr_assert_null(y);
    clt_tensor_free(x);
    clt_module_free(m);
    /* torch's ranges: qint8 reduce_range, refusals */
    o = (clt_observer_opts)CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    o.dtype = CLT_QINT8;
    o.reduce_range = 1;
    CHECK(clt_observer(dev, &o, &m));
    CHECK(clt_observer_quant_range(m, &lo, &hi));
    cr_assert(lo == -64 && hi == 63);
    clt_module_free(m);
    o.dtype = CLT_QUINT8;
    o.qscheme = CLT_PER_TENSOR_SYMMETRIC;
    m = (clt_module *)&m;
    assert_error(clt_observer(dev, &o, &m), CLT_ERR_INVALID_ARGUMENT,
                 "Cannot reduce range for symmetric quantization for quint8");
    cr_assert_null(m);
    o = (clt_observer_opts)CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    o.qscheme = CLT_PER_CHANNEL_AFFINE;
    m = (clt_module *)&m;
    assert_error(clt_observer(dev, &o, &m), CLT_ERR_INVALID_ARGUMENT, "per-tensor qscheme");
    cr_assert_null(m);
    o = (clt_observer_opts)CLT_OBSERVER_DEFAULTS(CLT_PER_CHANNEL_MIN_MAX_OBSERVER);
    m = (clt_module *)&m;
    assert_error(clt_observer(dev, &o, &m), CLT_ERR_INVALID_ARGUMENT, "num_channels");
    cr_assert_null(m);
}

/* ---- FakeQuantize --------------------------------------------------------------------- */

Test(quant, fake_quantize_module)
{
    clt_device *dev = get_device("cpu");
    clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    clt_module *fq = NULL;
    CHECK(clt_fake_quantize_layer(dev, &o, &fq));
    clt_named_tensor *st = NULL;
    size_t n = 0;
    CHECK(clt_module_state(fq, &st, &n));
    const char *names[] = {"fake_quant_enabled", "observer_enabled", "scale", "zero_point",
                           "activation_post_process.eps", "activation_post_process.min_val",
                           "activation_post_process.max_val"};
    cr_assert_eq(n, 7);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(st[k].name, names[k]);
    clt_free(st);
    int64_t shape = 6;
    const float xv[6] = {-1.0f, 0.3f, 2.0f, 0.77f, -0.2f, 1.5f};
    clt_tensor *x = f32(dev, 1, &shape, xv), *y = NULL, *g = NULL, *l = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_module_forward(fq, x, &y));
    float s;
    int64_t z;
    ref_affine(-1.0f, 2.0f, 0, 255, &s, &z);
    float *yv = read_f32(y), *sb = read_f32(clt_module_buffer(fq, "scale"));
    int32_t zb;
    CHECK(clt_tensor_read(clt_module_buffer(fq, "zero_point"), &zb, sizeof zb));
    cr_assert(sb[0] == s && zb == z, "buffers %g %d, want %g %lld", sb[0], zb, s, (long long)z);
    for (int k = 0; k < 6; k++) {
        int in;
        cr_assert_eq(yv[k], ref_fq(xv[k], s, z, 0, 255, &in), "element %d", k);
    }
    free(yv);
    free(sb);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(x, &g));
    float *gv = read_f32(g);
    for (int k = 0; k < 6; k++)
        cr_assert_eq(gv[k], 1.0f, "inside the observed range the gradient passes");
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(y);
    /* observer off: a wider input keeps the old qparams, values beyond clamp */
    CHECK(clt_fake_quantize_enable_observer(fq, 0));
    const float wide[6] = {-10.0f, 0.3f, 20.0f, 0.77f, -0.2f, 1.5f};
    clt_tensor *x2 = f32(dev, 1, &shape, wide);
    CHECK(clt_module_forward(fq, x2, &y));
    yv = read_f32(y);
    for (int k = 0; k < 6; k++) {
        int in;
        cr_assert_eq(yv[k], ref_fq(wide[k], s, z, 0, 255, &in), "observer off, element %d", k);
    }
    free(yv);
    clt_tensor_free(y);
    /* fake quantization off: the input's values, in a new handle */
    CHECK(clt_fake_quantize_enable_fake_quant(fq, 0));
    CHECK(clt_module_forward(fq, x2, &y));
    cr_assert_neq(y, x2);
    float *y2 = read_f32(y), *x2v = read_f32(x2);
    for (int64_t k = 0; k < clt_tensor_numel(x2); k++)
        cr_assert_eq(y2[k], x2v[k], "element %lld", (long long)k);
    free(y2);
    free(x2v);
    clt_tensor_free(y);
    /* calculate_qparams through the FakeQuantize */
    clt_tensor *ts = NULL, *tz = NULL;
    CHECK(clt_observer_calculate_qparams(fq, &ts, &tz));
    float *tsv = read_f32(ts);
    cr_assert_eq(tsv[0], s);
    free(tsv);
    clt_tensor_free(ts);
    clt_tensor_free(tz);
    clt_tensor_free(x2);
    clt_tensor_free(x);
    /* refusals */
    assert_error(clt_fake_quantize_enable_observer(NULL, 1), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 2, 2, 1, NULL, &lin));
    assert_error(clt_fake_quantize_enable_fake_quant(lin, 1), CLT_ERR_INVALID_ARGUMENT,
                 "is not a FakeQuantize");
    ts = tz = (clt_tensor *)&ts;
    assert_error(clt_observer_calculate_qparams(lin, &ts, &tz), CLT_ERR_INVALID_ARGUMENT,
                 "is not an observer");
    cr_assert(ts == NULL && tz == NULL);
    clt_module_free(lin);
    clt_module_free(fq);
    o.has_range = 1;
    o.quant_min = -1;
    o.quant_max = 10;
    fq = (clt_module *)&fq;
    assert_error(clt_fake_quantize_layer(dev, &o, &fq), CLT_ERR_INVALID_ARGUMENT,
                 "quant_min out of bound");
    cr_assert_null(fq);
}

/* Quantization-aware training of a small model: Linear -> FakeQuantize
 * in a Sequential, the weight gradient reaching the Linear through the
 * straight-through mask. */
Test(quant, fake_quantize_in_a_sequential)
{
    clt_device *dev = get_device("cpu");
    clt_module *lin = NULL, *fq = NULL, *seq = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(3, &gen));
    CHECK(clt_linear(dev, 3, 2, 1, gen, &lin));
    CHECK(clt_fake_quantize_layer(dev, NULL, &fq));
    cr_assert_str_eq(clt_module_name(fq), "FakeQuantize");
    clt_module *mods[2] = {lin, fq};
    CHECK(clt_sequential(mods, 2, &seq));
    int64_t shape[2] = {4, 3};
    float xv[12];
    for (int k = 0; k < 12; k++)
        xv[k] = (float)(k % 5) - 2.0f;
    clt_tensor *x = f32(dev, 2, shape, xv), *y = NULL, *l = NULL, *g = NULL;
    CHECK(clt_module_forward(seq, x, &y));
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_tensor *w = clt_module_param(lin, "weight");
    CHECK(clt_grad(w, &g));
    /* every output lies in the observed range, so the weight's gradient is
     * that of sum(x W^T + b): the column sums of x, for each output row */
    float *gv = read_f32(g);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
            float want = 0;
            for (int i = 0; i < 4; i++)
                want += xv[i * 3 + c];
            cr_assert(close_enough(gv[r * 3 + c], want, 1e-6, 1e-6), "dW[%d][%d] %g, want %g",
                      r, c, gv[r * 3 + c], want);
        }
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(seq);
    clt_generator_free(gen);
}

/* A custom module that fake-quantizes its weight (a FakeQuantize child,
 * as torch's QAT Linear has weight_fake_quant) before y = x * w. */
static clt_status qat_forward(clt_module *m, void *user, const clt_tensor *x, clt_tensor **out)
{
    (void)user;
    clt_tensor *wq = NULL;
    clt_status st = clt_module_forward(clt_module_child(m, "weight_fake_quant"),
                                       clt_module_param(m, "weight"), &wq);
    if (st == CLT_OK)
        st = clt_mul(x, wq, out);
    clt_tensor_free(wq);
    return st;
}

/* Activations through a forward hook: the output replaced by a
 * FakeQuantize's. */
static clt_status fq_hook(void *user, clt_module *m, const clt_tensor *input,
                          const clt_tensor *output, clt_tensor **replacement)
{
    (void)m;
    (void)input;
    return clt_module_forward(user, output, replacement);
}

Test(quant, fake_quantize_on_weights_and_by_hook)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    const float wv[4] = {-1.0f, 0.3f, 0.9f, 2.0f}, xv[4] = {1.0f, 2.0f, -1.0f, 0.5f};
    clt_module *m = NULL, *fqw = NULL, *fqa = NULL;
    clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER);
    o.dtype = CLT_QINT8;
    o.qscheme = CLT_PER_TENSOR_SYMMETRIC;
    CHECK(clt_module_custom("QATMul", qat_forward, NULL, NULL, &m));
    CHECK(clt_module_add_parameter(m, "weight", f32(dev, 1, &n, wv)));
    CHECK(clt_fake_quantize_layer(dev, &o, &fqw));
    CHECK(clt_module_add_module(m, "weight_fake_quant", fqw));
    CHECK(clt_fake_quantize_layer(dev, NULL, &fqa));
    clt_hook *h = NULL;
    CHECK(clt_module_register_forward_hook(m, fq_hook, fqa, &h));
    clt_tensor *x = f32(dev, 1, &n, xv), *y = NULL, *l = NULL, *g = NULL;
    CHECK(clt_module_forward(m, x, &y));
    /* the weight: symmetric qint8, scale max|w| / 127.5, zero point 0 */
    float sw = 2.0f / 127.5f, wq[4], yv_want[4];
    for (int k = 0; k < 4; k++) {
        int in;
        wq[k] = ref_fq(wv[k], sw, 0, -128, 127, &in);
        yv_want[k] = xv[k] * wq[k];
    }
    /* the activation: MovingAverageMinMaxObserver's first observation, quint8 affine */
    float mn = yv_want[0], mx = yv_want[0], sa;
    for (int k = 1; k < 4; k++) {
        mn = fminf(mn, yv_want[k]);
        mx = fmaxf(mx, yv_want[k]);
    }
    int64_t za;
    ref_affine(mn, mx, 0, 255, &sa, &za);
    float *yv = read_f32(y);
    for (int k = 0; k < 4; k++) {
        int in;
        float want = ref_fq(yv_want[k], sa, za, 0, 255, &in);
        cr_assert_eq(yv[k], want, "element %d: %g, want %g", k, yv[k], want);
    }
    free(yv);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(clt_module_param(m, "weight"), &g));
    float *gv = read_f32(g);
    for (int k = 0; k < 4; k++) /* every value lies in both ranges: straight through */
        cr_assert_eq(gv[k], xv[k], "dw[%d] %g, want %g", k, gv[k], xv[k]);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_hook_remove(h);
    clt_module_free(fqa);
    clt_module_free(m);
}

Test(quant, quantize_per_channel_and_dequantize)
{
    /* x [2, 3, 4] along axis 1 (3 channels, 4 inner elements): TIES and
     * more, each channel with its own scale and zero point. */
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 4}, three = 3;
    float xv[24];
    for (int k = 0; k < 24; k++)
        xv[k] = k < (int)NTIES ? TIES[k] : (float)(k - 19) * 0.37f;
    const float sv[3] = {0.5f, 0.1f, 2.0f};
    const int64_t zv[3] = {3, -7, 0};
    for (int qd = 0; qd < 3; qd++) {
        int64_t lo = qd == 0 ? 0 : qd == 1 ? -128 : INT32_MIN;
        int64_t hi = qd == 0 ? 255 : qd == 1 ? 127 : INT32_MAX;
        int64_t zq[3] = {zv[0], qd == 0 ? 7 : zv[1], zv[2]};
        clt_tensor *x = f32(dev, 3, shape, xv), *s = f32(dev, 1, &three, sv), *z = NULL;
        clt_tensor *q = NULL, *qi = NULL, *d = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &three, zq, &z));
        CHECK(clt_quantize_per_channel(x, s, z, 1, (clt_qdtype)qd, &q));
        cr_assert_eq(clt_tensor_dtype(q), qd == 0 ? CLT_UINT8 : qd == 1 ? CLT_INT8 : CLT_INT32);
        CHECK(clt_dequantize_per_channel(q, s, z, 1, &d));
        CHECK(clt_to_dtype(q, CLT_INT64, &qi));
        int64_t qv[24];
        CHECK(clt_tensor_read(qi, qv, sizeof qv));
        float *dv = read_f32(d);
        for (int k = 0; k < 24; k++) {
            int c = (k / 4) % 3;
            int64_t r = to_i64((float)zq[c] + nearbyintf(xv[k] * (1.0f / sv[c])));
            cr_assert_eq(qv[k], clampi(r, lo, hi), "qd %d x=%g: %lld", qd, xv[k],
                         (long long)qv[k]);
            cr_assert_eq(dv[k], (float)(qv[k] - zq[c]) * sv[c], "qd %d k %d: %g", qd, k, dv[k]);
        }
        free(dv);
        clt_tensor_free(d);
        clt_tensor_free(qi);
        clt_tensor_free(q);
        clt_tensor_free(z);
        clt_tensor_free(s);
        clt_tensor_free(x);
    }
}

Test(quant, quantize_per_channel_refusals)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 3}, three = 3, two = 2;
    float xv[6] = {0, 1, 2, 3, 4, 5}, sv[3] = {0.5f, 0.5f, 0.5f};
    int64_t zbad[3] = {0, 300, 0}, zok[3] = {0, 1, 2};
    clt_tensor *x = f32(dev, 2, shape, xv), *s = f32(dev, 1, &three, sv), *s2 = f32(dev, 1, &two, sv);
    clt_tensor *zb = NULL, *z = NULL, *out = (clt_tensor *)&out;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &three, zbad, &zb));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &three, zok, &z));
    assert_error(clt_quantize_per_channel(x, s, zb, 1, CLT_QUINT8, &out),
                 CLT_ERR_INVALID_ARGUMENT, "zero_point 300 is above upper bound");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_channel(x, s, z, 2, CLT_QUINT8, &out),
                 CLT_ERR_INVALID_ARGUMENT, "Channel axis out of range");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_channel(x, s, z, 0, CLT_QUINT8, &out),
                 CLT_ERR_INVALID_ARGUMENT, "length of scales must equal to channel");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_channel(x, s2, z, 1, CLT_QUINT8, &out),
                 CLT_ERR_INVALID_ARGUMENT, "number of elements in scales and zero_points");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_channel(x, s, s, 1, CLT_QUINT8, &out), CLT_ERR_DTYPE_MISMATCH,
                 "zero_points must be an integer tensor");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_quantize_per_channel(x, z, z, 1, CLT_QUINT8, &out), CLT_ERR_DTYPE_MISMATCH,
                 "scale tensor must be floating point");
    cr_assert_null(out);
    out = (clt_tensor *)&out;
    assert_error(clt_dequantize_per_channel(x, s, z, 1, &out), CLT_ERR_DTYPE_MISMATCH,
                 "int8 (qint8)");
    cr_assert_null(out);
    clt_tensor_free(z);
    clt_tensor_free(zb);
    clt_tensor_free(s2);
    clt_tensor_free(s);
    clt_tensor_free(x);
}

/* ---- HistogramObserver ---------------------------------------------------------------- */

/* bins equal bins over [lo, hi] in double: exact for the test's values. */
static void ref_histc(const float *x, int n, int bins, double lo, double hi, double *h)
{
    for (int k = 0; k < bins; k++)
        h[k] = 0;
    for (int k = 0; k < n; k++) {
        if (x[k] < lo || x[k] > hi)
            continue;
        int b = (int)floor((x[k] - lo) / (hi - lo) * bins);
        h[b < bins ? b : bins - 1] += 1;
    }
}

/* The L2 error of quantizing the histogram h (bins over [mn, mx]) into
 * 256 bins spanning its bins s .. e, in double, from the integrals of x^2
 * over each source bin's parts. */
static double ref_error(const double *h, int bins, double mn, double mx, int s, int e)
{
    double bw = (mx - mn) / bins, dw = bw * (e - s + 1) / 256;
    if (dw == 0)
        return 0;
    double sum = 0;
    for (int k = 0; k < bins; k++) {
        double begin = (k - s) * bw, end = begin + bw, d = h[k] / bw;
        double db = fmin(fmax(floor(begin / dw), 0), 255), de = fmin(fmax(floor(end / dw), 0), 255);
        double a = begin - (db + 0.5) * dw, b = end - (de + 0.5) * dw, hw = dw / 2;
        sum += d * (hw * hw * hw - a * a * a) / 3 + (de - db - 1) * d * (2 * hw * hw * hw) / 3 +
               d * (b * b * b + hw * hw * hw) / 3;
    }
    return sum;
}

/* The search over bins that torch's _non_linear_param_search does: the
 * first and last bins kept, into *s, *e. */
static void ref_search(const double *h, int bins, double mn, double mx, int *s, int *e)
{
    double csum[64], total = 0, alpha = 0, beta = 1, best = INFINITY;
    for (int k = 0; k < bins; k++)
        csum[k] = total += h[k];
    *s = 0;
    *e = bins - 1;
    while (alpha < beta) {
        double na = alpha + 1e-5, nb = beta - 1e-5;
        int l = *s, r = *e, ns = *s, ne = *e;
        while (l < *e && csum[l] < na * total)
            l++;
        while (r > *s && csum[r] > nb * total)
            r--;
        if (l - *s > *e - r) {
            ns = l;
            alpha = na;
        } else {
            ne = r;
            beta = nb;
        }
        if (ns == *s && ne == *e)
            continue;
        double err = ref_error(h, bins, mn, mx, ns, ne);
        if (err > best)
            break;
        best = err;
        *s = ns;
        *e = ne;
    }
}

Test(quant, histogram_observer)
{
    clt_device *dev = get_device("cpu");
    clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_HISTOGRAM_OBSERVER);
    cr_assert(o.qscheme == CLT_PER_TENSOR_AFFINE && o.bins == 2048 && o.upsample_rate == 128);
    o.bins = 8;
    o.upsample_rate = 2;
    clt_module *m = NULL;
    CHECK(clt_observer(dev, &o, &m));
    cr_assert_str_eq(clt_module_name(m), "HistogramObserver");
    const char *names[] = {"eps", "histogram", "min_val", "max_val"};
    clt_named_tensor *nb = NULL;
    size_t nbuf = 0;
    CHECK(clt_module_named_buffers(m, &nb, &nbuf));
    cr_assert_eq(nbuf, 4);
    for (int k = 0; k < 4; k++)
        cr_assert_str_eq(nb[k].name, names[k], "buffer %d", k);
    clt_free(nb);
    /* first batch: min -2, max 6, bins of width 1 */
    const float b0[8] = {-2.0f, -1.5f, 0.25f, 0.5f, 3.5f, 6.0f, 5.75f, 1.0f};
    /* second: the range grows to [-6, 6], 3 times the old one's grid of
     * (6 - -2) / (8 * 2) = 0.5: the old histogram's 16 upsampled values
     * start at cell (-2 - -6) / 0.5 = 8 of 24, and every 3 make a new bin */
    const float b1[6] = {-6.0f, -4.5f, 4.0f, 0.0f, -0.75f, 2.5f};
    /* third: inside [-6, 6], whose grid of 0.75 it fills twice over: the
     * histograms are added */
    const float b2[3] = {0.0f, 1.0f, -1.0f};
    const float *bs[3] = {b0, b1, b2};
    int64_t n[3] = {8, 6, 3};
    double want[8], h0[8], add[8];
    for (int k = 0; k < 3; k++)
        observe_all(dev, m, 1, 1, &n[k], &bs[k]);
    ref_histc(b0, 8, 8, -2, 6, h0);
    ref_histc(b1, 6, 8, -6, 6, want);
    for (int j = 0; j < 8; j++) {
        double up = 0;
        for (int p = 3 * j; p < 3 * j + 3; p++)
            up += p >= 8 && p < 24 ? h0[(p - 8) / 2] : 0;
        want[j] += up / 2;
    }
    ref_histc(b2, 3, 8, -6, 6, add);
    for (int j = 0; j < 8; j++)
        want[j] += add[j];
    float *hv = read_f32(clt_module_buffer(m, "histogram"));
    for (int j = 0; j < 8; j++)
        cr_assert_eq(hv[j], (float)want[j], "histogram[%d] %g, want %g", j, hv[j], want[j]);
    free(hv);
    float *mn = read_f32(clt_module_buffer(m, "min_val"));
    float *mx = read_f32(clt_module_buffer(m, "max_val"));
    cr_assert(mn[0] == -6.0f && mx[0] == 6.0f, "range [%g, %g]", mn[0], mx[0]);
    free(mn);
    free(mx);
    /* the qparams of the bins the L2 search keeps */
    int s = 0, e = 0;
    ref_search(want, 8, -6, 6, &s, &e);
    float lo = -6.0f + 1.5f * (float)s, hi = -6.0f + 1.5f * (float)(e + 1);
    float want_s;
    int64_t want_z;
    ref_affine(lo, hi, 0, 255, &want_s, &want_z);
    clt_tensor *ts = NULL, *tz = NULL;
    CHECK(clt_observer_calculate_qparams(m, &ts, &tz));
    float *sv = read_f32(ts);
    int32_t zv = -1;
    CHECK(clt_tensor_read(tz, &zv, sizeof zv));
    cr_assert_eq(sv[0], want_s, "scale %g, want %g (bins %d .. %d)", sv[0], want_s, s, e);
    cr_assert_eq(zv, want_z, "zero_point %d, want %lld", zv, (long long)want_z);
    free(sv);
    clt_tensor_free(ts);
    clt_tensor_free(tz);
    /* NaN: refused (torch's int() of it raises), the state kept */
    const float bad[2] = {1.0f, NAN};
    int64_t two = 2;
    clt_tensor *x = f32(dev, 1, &two, bad), *y = (clt_tensor *)&y;
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT, "HistogramObserver");
    cr_assert_null(y);
    clt_tensor_free(x);
    mn = read_f32(clt_module_buffer(m, "min_val"));
    hv = read_f32(clt_module_buffer(m, "histogram"));
    cr_assert(mn[0] == -6.0f && hv[0] == (float)want[0], "the state is kept");
    free(mn);
    free(hv);
    clt_module_free(m);
    /* a constant input: histc widens its one value by 1 each way */
    o.bins = 4;
    CHECK(clt_observer(dev, &o, &m));
    const float c[3] = {2.5f, 2.5f, 2.5f};
    int64_t three = 3;
    const float *cs[1] = {c};
    observe_all(dev, m, 1, 1, &three, cs);
    hv = read_f32(clt_module_buffer(m, "histogram"));
    cr_assert(hv[0] == 0 && hv[1] == 0 && hv[2] == 3 && hv[3] == 0, "constant: %g %g %g %g", hv[0],
              hv[1], hv[2], hv[3]);
    free(hv);
    clt_module_free(m);
    /* settings torch refuses */
    o.bins = 0;
    m = (clt_module *)&m;
    assert_error(clt_observer(dev, &o, &m), CLT_ERR_INVALID_ARGUMENT, "bins >= 1");
    cr_assert_null(m);
    o.bins = 8;
    o.qscheme = CLT_PER_CHANNEL_AFFINE;
    m = (clt_module *)&m;
    assert_error(clt_observer(dev, &o, &m), CLT_ERR_INVALID_ARGUMENT, "per-tensor qscheme");
    cr_assert_null(m);
}
