/* test_softmax.c: softmax and log_softmax against double-precision host
 * references: every dimension of a 3-D tensor, rows that sum to 1, extreme
 * values, strided input, both kernel variants, float64 and the errors. */
#include "helpers.h"
#include "internal.h"

/* Host reference over dimension dim of a row-major tensor, in double. */
static double *ref_softmax(int nd, const int64_t *shape, const float *x, int dim, bool logmode)
{
    int64_t outer = 1, inner = 1, n = shape[dim], total = 1;
    for (int d = 0; d < nd; d++)
        total *= shape[d];
    for (int d = 0; d < dim; d++)
        outer *= shape[d];
    for (int d = dim + 1; d < nd; d++)
        inner *= shape[d];
    double *y = malloc((size_t)total * sizeof *y);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            const float *r = x + o * n * inner + j;
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < n; k++)
                m = fmax(m, r[k * inner]);
            for (int64_t k = 0; k < n; k++)
                s += exp(r[k * inner] - m);
            for (int64_t k = 0; k < n; k++) {
                double v = r[k * inner] - m;
                y[o * n * inner + j + k * inner] = logmode ? v - log(s) : exp(v) / s;
            }
        }
    return y;
}

static void check_softmax(clt_tensor *t, const float *logical, int dim, bool logmode,
                          int variant)
{
    int nd = clt_tensor_ndim(t);
    const int64_t *shape = clt_tensor_shape(t);
    int wrapped = dim < 0 ? dim + nd : dim;
    double *want = ref_softmax(nd, shape, logical, wrapped, logmode);
    clt_tensor *r = NULL;
    CHECK(clt__softmax_variant(t, dim, logmode, variant, &r));
    cr_assert_eq(clt_tensor_ndim(r), nd);
    for (int d = 0; d < nd; d++)
        cr_assert_eq(clt_tensor_shape(r)[d], shape[d]);
    float *got = read_f32(r);
    ASSERT_ALLCLOSE_F32(got, want, clt_tensor_numel(t), 1e-5, 1e-6);

    if (!logmode) {
        /* Every row sums to 1. */
        int64_t n = shape[wrapped], inner = 1, total = clt_tensor_numel(t);
        for (int d = wrapped + 1; d < nd; d++)
            inner *= shape[d];
        for (int64_t g = 0; g < total / n; g++) {
            int64_t base = (g / inner) * n * inner + g % inner;
            double s = 0;
            for (int64_t k = 0; k < n; k++)
                s += got[base + k * inner];
            cr_assert(fabs(s - 1) < 1e-5, "row %lld sums to %.9g", (long long)g, s);
        }
    }
    free(got);
    free(want);
    clt_tensor_free(r);
}

static clt_tensor *random_tensor(clt_device *dev, int nd, const int64_t *shape, float **host)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    float *h = malloc((size_t)n * sizeof *h);
    fill_random(h, (size_t)n, 42);
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, nd, shape, h, &t));
    *host = h;
    return t;
}

Test(softmax, every_dim_of_3d)
{
    clt_device *dev = get_device("cpu");
    float *h = NULL;
    clt_tensor *t = random_tensor(dev, 3, (int64_t[]){3, 4, 5}, &h);
    for (int dim = -3; dim < 3; dim++) {
        check_softmax(t, h, dim, false, CLT__SOFTMAX_AUTO);
        check_softmax(t, h, dim, true, CLT__SOFTMAX_AUTO);
    }
    clt_tensor_free(t);
    free(h);
}

Test(softmax, long_rows_and_tails)
{
    clt_device *dev = get_device("cpu");
    float *h = NULL;
    /* 1029 = 8 * 128 + 5: the vector loop and its scalar tail. */
    clt_tensor *t = random_tensor(dev, 2, (int64_t[]){3, 1029}, &h);
    check_softmax(t, h, 1, false, CLT__SOFTMAX_CPU);
    check_softmax(t, h, -1, true, CLT__SOFTMAX_CPU);
    check_softmax(t, h, 0, false, CLT__SOFTMAX_CPU);
    clt_tensor_free(t);
    free(h);
}

Test(softmax, work_group_variant)
{
    clt_device *dev = get_device("cpu");
    float *h = NULL;
    clt_tensor *t = random_tensor(dev, 3, (int64_t[]){2, 300, 3}, &h);
    check_softmax(t, h, 1, false, CLT__SOFTMAX_WG);
    check_softmax(t, h, 2, true, CLT__SOFTMAX_WG);
    check_softmax(t, h, 0, false, CLT__SOFTMAX_WG);
    clt_tensor_free(t);
    free(h);
}

Test(softmax, extreme_values)
{
    clt_device *dev = get_device("cpu");
    float h[] = {1000, 1000, -1000, -1000, -1000, -1000, 88, 89, 90, 0, -200, 1e30f};
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){4, 3}, h, &t));
    for (int variant = CLT__SOFTMAX_CPU; variant <= CLT__SOFTMAX_WG; variant++) {
        clt_tensor *s = NULL, *l = NULL;
        CHECK(clt__softmax_variant(t, -1, false, variant, &s));
        CHECK(clt__softmax_variant(t, -1, true, variant, &l));
        float *gs = read_f32(s), *gl = read_f32(l);
        for (int i = 0; i < 12; i++)
            cr_assert(isfinite(gs[i]) && isfinite(gl[i]), "element %d: %g, %g", i, gs[i], gl[i]);
        double want_s[] = {0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 0, 0, 0, 1};
        double l2 = log(2.0), l3 = log(3.0);
        double want_l[] = {-l2, -l2, -2000 - l2, -l3, -l3, -l3, 0, 0, 0, -1e30, -1e30, 0};
        double e = log(1 + exp(-1.0) + exp(-2.0));
        want_s[6] = exp(-2.0 - e), want_s[7] = exp(-1.0 - e), want_s[8] = exp(-e);
        want_l[6] = -2 - e, want_l[7] = -1 - e, want_l[8] = -e;
        ASSERT_ALLCLOSE_F32(gs, want_s, 12, 1e-5, 1e-7);
        ASSERT_ALLCLOSE_F32(gl, want_l, 12, 1e-5, 1e-4);
        free(gs), free(gl);
        clt_tensor_free(s), clt_tensor_free(l);
    }
    clt_tensor_free(t);
}

Test(softmax, strided_input)
{
    clt_device *dev = get_device("cpu");
    float *h = NULL;
    /* The transpose of a [6, 4] tensor, a logical [4, 6]. */
    clt_tensor *s = random_tensor(dev, 2, (int64_t[]){6, 4}, &h), *t = NULL;
    CHECK(clt__tensor_view(s, 2, (int64_t[]){4, 6}, (int64_t[]){1, 4}, 0, &t));
    float L[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++)
            L[i * 6 + j] = h[j * 4 + i];
    check_softmax(t, L, 1, false, CLT__SOFTMAX_AUTO);
    check_softmax(t, L, 0, true, CLT__SOFTMAX_AUTO);
    clt_tensor_free(t);

    /* Rows 1..3 of the [6, 4] tensor: a view with an offset. */
    CHECK(clt__tensor_view(s, 2, (int64_t[]){3, 4}, (int64_t[]){4, 1}, 4, &t));
    check_softmax(t, h + 4, 1, false, CLT__SOFTMAX_AUTO);
    clt_tensor_free(t);
    clt_tensor_free(s);
    free(h);
}

Test(softmax, float64)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no fp64 on %s", clt_device_name(dev));
    double h[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 700, -700};
    clt_tensor *t = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 6}, h, &t));
    CHECK(clt_log_softmax(t, 1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT64);
    double got[12];
    CHECK(clt_tensor_read(r, got, sizeof got));
    for (int row = 0; row < 2; row++) {
        double m = -INFINITY, s = 0;
        for (int k = 0; k < 6; k++)
            m = fmax(m, h[row * 6 + k]);
        for (int k = 0; k < 6; k++)
            s += exp(h[row * 6 + k] - m);
        for (int k = 0; k < 6; k++)
            cr_assert(close_enough(got[row * 6 + k], h[row * 6 + k] - m - log(s), 1e-12, 1e-12),
                      "element %d: %.17g", row * 6 + k, got[row * 6 + k]);
    }
    clt_tensor_free(t);
    clt_tensor_free(r);
}

Test(softmax, scalar_and_empty)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL, *r = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 0, NULL, 5.0, &t));
    CHECK(clt_softmax(t, -1, &r));
    double v = 0;
    CHECK(clt_tensor_item(r, &v));
    cr_assert_eq(v, 1.0);
    clt_tensor_free(r);
    clt_tensor_free(t);
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, (int64_t[]){0, 3}, &t));
    CHECK(clt_softmax(t, 1, &r));
    cr_assert_eq(clt_tensor_numel(r), 0);
    cr_assert_eq(clt_tensor_shape(r)[1], 3);
    clt_tensor_free(r);
    clt_tensor_free(t);
}

Test(softmax, errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_zeros(dev, CLT_INT64, 2, (int64_t[]){2, 3}, &t));
    cr_assert_eq(clt_softmax(t, 1, &r), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "int64"), "%s", clt_last_error());
    clt_tensor_free(t);

    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, &t));
    r = (clt_tensor *)&r;
    cr_assert_eq(clt_log_softmax(t, 2, &r), CLT_ERR_DIM_OUT_OF_RANGE);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "[-2, 1]") && strstr(clt_last_error(), "got 2"), "%s",
              clt_last_error());
    cr_assert_eq(clt_softmax(t, -3, &r), CLT_ERR_DIM_OUT_OF_RANGE);
    cr_assert_eq(clt_softmax(NULL, 0, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_softmax(t, 0, NULL), CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(t);
}

/* log_softmax of large values keeps its digits: (x - max) - log(sum), not
 * x - (max + log(sum)), which rounds max + log(sum) first.  References in
 * double here; PyTorch gives -0.4401897 and -0.31326 for the first
 * elements. */
Test(softmax, log_softmax_precision_on_large_values)
{
    clt_device *dev = get_device("cpu");
    const double rows[2][4] = {{1e4, 1e4 - 1, 1e4 - 2, 1e4 - 3}, {1e6, 1e6 - 1, 0, 0}};
    const int n[2] = {4, 2};
    for (int r = 0; r < 2; r++) {
        for (int dt = 0; dt < 2; dt++) {
            clt_dtype dtype = dt ? CLT_FLOAT64 : CLT_FLOAT32;
            float xf[4];
            for (int k = 0; k < n[r]; k++)
                xf[k] = (float)rows[r][k];
            clt_tensor *x, *y;
            int64_t shape = n[r];
            CHECK(clt_tensor_from_host(dev, dtype, 1, &shape, dt ? (const void *)rows[r] : xf,
                                       &x));
            for (int variant = 1; variant <= 2; variant++) {
                CHECK(clt__softmax_variant(x, 0, true, variant, &y));
                double got[4];
                float gf[4];
                if (dt)
                    CHECK(clt_tensor_read(y, got, (size_t)n[r] * sizeof(double)));
                else
                    CHECK(clt_tensor_read(y, gf, (size_t)n[r] * sizeof(float)));
                double m = rows[r][0], s = 0;
                for (int k = 0; k < n[r]; k++)
                    s += exp((dt ? rows[r][k] : (double)xf[k]) - m);
                for (int k = 0; k < n[r]; k++) {
                    double want = ((dt ? rows[r][k] : (double)xf[k]) - m) - log(s);
                    double g = dt ? got[k] : gf[k];
                    cr_assert(fabs(g - want) <= (dt ? 1e-12 : 2e-7) * fabs(want) + 1e-12,
                              "row %d %s variant %d element %d: %.9g, want %.9g", r,
                              dt ? "float64" : "float32", variant, k, g, want);
                }
                clt_tensor_free(y);
            }
            clt_tensor_free(x);
        }
    }
}

/* A long row's sum of exponentials keeps float32 accuracy on the CPU
 * variant, along memory (vectors in blocks, compensated) and strided
 * (compensated element by element): a row of 2^22 values whose
 * exponentials are all about 0.1 (the first, the maximum, gives 1).
 * Sixteen lanes over the whole row, or one for a strided row, used to make
 * the sum 1e-3 off. */
Test(softmax, long_row_sums_keep_float32_accuracy)
{
    clt_device *dev = get_device("cpu");
    int64_t n = (int64_t)1 << 22;
    float *h = malloc((size_t)n * 2 * sizeof *h);
    cr_assert(h);
    const float low = (float)log(0.1);
    for (int64_t k = 0; k < 2 * n; k++)
        h[k] = k < 2 ? 0.0f : low; /* [n] uses the first n, [n, 2] all */
    double sum = 1 + (double)(n - 1) * exp((double)low); /* max 0: exp(x - 0) */
    clt_tensor *x[2] = {NULL, NULL}, *y = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h + 1, &x[0]));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){n, 2}, h, &x[1]));
    for (int logmode = 0; logmode < 2; logmode++) {
        for (int strided = 0; strided < 2; strided++) {
            CHECK(clt__softmax_variant(x[strided], 0, logmode, CLT__SOFTMAX_CPU, &y));
            float *got = read_f32(y);
            double first = got[strided], want = logmode ? -log(sum) : 1 / sum;
            free(got);
            cr_assert(fabs(first - want) <= 1e-5 * fabs(want),
                      "%s%s: %.9g, want %.9g (relative error %.2e)",
                      logmode ? "log_softmax" : "softmax", strided ? " strided" : "", first,
                      want, fabs(first - want) / fabs(want));
            clt_tensor_free(y);
        }
    }
    clt_tensor_free(x[0]);
    clt_tensor_free(x[1]);
    free(h);
}
