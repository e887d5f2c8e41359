/* test_layer_norm.c: clt_layer_norm (F.layer_norm) and the fused row
 * normalisation under LayerNorm and GroupNorm, in both kernel shapes (a
 * work-item per row, a work-group per row: CLTENSOR_REDUCE_STYLE): values
 * against a float64 host loop (rows of 1 to 1029 values, with and without
 * weight and bias, float32 and float64, rows near 1e4 with small noise,
 * transposed, sliced and expanded inputs, NaN and inf, empty inputs),
 * gradients by finite differences, the node's name, and the errors. */
#include <stdio.h>

#include "gradcheck.h"

static const char *const styles[2] = {"cpu", "gpu"};

/* y = (x - mean) / sqrt(var + eps) * w[k] + b[k] per row of n values of a
 * contiguous host x (biased variance), in long double on x - 1000 * the
 * row's middle value rounded (what rows near 1e4 take a shift of, exact in
 * long double, so that float64 rows there are checked to their last
 * digits); w, b NULL: 1 and 0. */
static void reference(const double *x, int64_t rows, int64_t n, const double *w,
                      const double *b, double eps, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * n;
        long double c = 1000.0L * roundl(xr[n / 2] / 1000.0L), mu = 0, var = 0;
        for (int64_t k = 0; k < n; k++)
            mu += xr[k] - c;
        mu /= (double)n;
        for (int64_t k = 0; k < n; k++)
            var += (xr[k] - c - mu) * (xr[k] - c - mu);
        var /= (double)n;
        for (int64_t k = 0; k < n; k++)
            y[r * n + k] = (double)((xr[k] - c - mu) / sqrtl(var + eps) * (w ? w[k] : 1.0) +
                                    (b ? b[k] : 0.0));
    }
}

/* n pseudo-random values in [lo, lo + span), rounded to float32 when f32
 * (so that the reference sees what the device holds). */
static void fill(double *x, size_t n, double lo, double span, unsigned seed, bool f32)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = lo + span * (double)((seed >> 8) % 100003) / 100003.0;
        if (f32)
            x[i] = (float)x[i];
    }
}

/* clt_layer_norm of x [rows, n] (dt) with weight and bias by parts (1, 2)
 * against the reference; the largest error relative to max(1, |want|). */
static double run_case(clt_device *dev, clt_dtype dt, int64_t rows, int64_t n, int parts,
                       double lo, double span, double rtol)
{
    bool f32 = dt == CLT_FLOAT32;
    size_t N = (size_t)(rows * n);
    double *x = malloc((N ? N : 1) * sizeof *x), *want = malloc((N ? N : 1) * sizeof *want);
    double *w = malloc((size_t)n * sizeof *w + 8), *b = malloc((size_t)n * sizeof *b + 8);
    cr_assert(x && want && w && b);
    fill(x, N, lo, span, (unsigned)(rows * 31 + n), f32);
    fill(w, (size_t)n, -2, 4, 7, f32);
    fill(b, (size_t)n, -1, 2, 9, f32);
    reference(x, rows, n, parts & 1 ? w : NULL, parts & 2 ? b : NULL, 1e-5, want);
    int64_t shape[2] = {rows, n};
    clt_tensor *tx = tensor_of(dev, dt, 2, shape, x), *tw = tensor_of(dev, dt, 1, &n, w);
    clt_tensor *tb = tensor_of(dev, dt, 1, &n, b), *y;
    CHECK(clt_layer_norm(tx, 1, &n, parts & 1 ? tw : NULL, parts & 2 ? tb : NULL, 1e-5, &y));
    assert_shape(y, 2, shape);
    cr_assert_eq(clt_tensor_dtype(y), dt);
    double *got = read_as_f64(y), worst = 0;
    for (size_t i = 0; i < N; i++) {
        double err = fabs(got[i] - want[i]) / fmax(1.0, fabs(want[i]));
        cr_assert(err <= rtol, "%s [%lld, %lld] parts %d at %zu: %.9g, want %.9g",
                  clt_dtype_name(dt), (long long)rows, (long long)n, parts, i, got[i], want[i]);
        worst = fmax(worst, err);
    }
    free(got);
    clt_tensor_free(y);
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    free(x);
    free(want);
    free(w);
    free(b);
    return worst;
}

Test(layer_norm, values_against_a_host_loop)
{
    clt_device *dev = get_device("cpu");
    bool f64 = clt_device_supports_dtype(dev, CLT_FLOAT64);
    const int64_t ns[] = {1, 3, 16, 17, 100, 1029};
    for (int s = 0; s < 2; s++) {
        setenv("CLTENSOR_REDUCE_STYLE", styles[s], 1);
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (int parts = 0; parts < 4; parts++) {
                run_case(dev, CLT_FLOAT32, 5, ns[i], parts, -3, 6, 2e-6);
                if (f64)
                    run_case(dev, CLT_FLOAT64, 5, ns[i], parts, -3, 6, 1e-14);
            }
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
}

/* Rows near 1e4 with noise of 1e-2 (float32 holds it to about 5%): rows are
 * taken relative to their first element, so the result keeps float32's
 * precision (float64's for float64) where a mean rounded to float32 (torch's)
 * is off by up to half a unit in 1e4, 5e-4, a shift of 0.05 in every
 * normalised value. */
Test(layer_norm, rows_far_from_zero_keep_their_digits)
{
    clt_device *dev = get_device("cpu");
    double tol = clt_device_supports_dtype(dev, CLT_FLOAT64) ? 2e-6 : 1e-5;
    for (int s = 0; s < 2; s++) {
        setenv("CLTENSOR_REDUCE_STYLE", styles[s], 1);
        run_case(dev, CLT_FLOAT32, 4, 1024, 0, 1e4, 1e-2 * sqrt(12.0), tol);
        run_case(dev, CLT_FLOAT32, 3, 77, 3, -1e4, 1e-2 * sqrt(12.0), tol);
        if (clt_device_supports_dtype(dev, CLT_FLOAT64))
            run_case(dev, CLT_FLOAT64, 3, 1000, 3, 1e4, 1e-2 * sqrt(12.0), 1e-13);
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
}

/* Views: a transposed input, a slice at an offset, an expanded one; the
 * result is the normalisation of the values the view shows. */
Test(layer_norm, views_as_input)
{
    clt_device *dev = get_device("cpu");
    double base[4 * 6];
    fill(base, 24, -3, 6, 5, true);
    clt_tensor *b, *t, *sl, *row, *ex, *y;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){4, 6}, base, &t));
    CHECK(clt_to_dtype(t, CLT_FLOAT32, &b));
    clt_tensor_free(t);
    CHECK(clt_transpose(b, 0, 1, &t));                 /* [6, 4] */
    CHECK(clt_slice(b, 1, 1, 6, 2, &sl));               /* [4, 3]: columns 1, 3, 5 */
    CHECK(clt_narrow(b, 0, 2, 1, &row));                /* [1, 6] at an offset */
    CHECK(clt_expand(row, 2, (int64_t[]){3, 6}, &ex)); /* [3, 6], stride 0 */
    const clt_tensor *views[3] = {t, sl, ex};
    for (int s = 0; s < 2; s++) {
        setenv("CLTENSOR_REDUCE_STYLE", styles[s], 1);
        for (int v = 0; v < 3; v++) {
            const clt_tensor *in = views[v];
            int64_t rows = clt_tensor_shape(in)[0], n = clt_tensor_shape(in)[1];
            double *x = read_as_f64(in), want[24];
            reference(x, rows, n, NULL, NULL, 1e-5, want);
            CHECK(clt_layer_norm(in, 1, &n, NULL, NULL, 1e-5, &y));
            double *got = read_as_f64(y);
            for (int64_t i = 0; i < rows * n; i++)
                cr_assert(close_enough(got[i], want[i], 2e-6, 2e-6), "view %d at %lld: %g vs %g",
                          v, (long long)i, got[i], want[i]);
            free(x);
            free(got);
            clt_tensor_free(y);
        }
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
    clt_tensor_free(b);
    clt_tensor_free(t);
    clt_tensor_free(sl);
    clt_tensor_free(row);
    clt_tensor_free(ex);
}

/* NaN or inf in a row make that row NaN and leave the others; rows of one
 * value give the bias (NaN with eps 0); empty inputs give empty results. */
Test(layer_norm, special_values_single_values_and_empty_inputs)
{
    clt_device *dev = get_device("cpu");
    double x[3 * 20];
    fill(x, 60, -1, 2, 3, true);
    x[5] = NAN;
    x[20 + 19] = INFINITY;
    double want[60];
    reference(x + 40, 1, 20, NULL, NULL, 1e-5, want + 40);
    for (int s = 0; s < 2; s++) {
        setenv("CLTENSOR_REDUCE_STYLE", styles[s], 1);
        clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 20}, x), *y;
        CHECK(clt_layer_norm(t, 1, (int64_t[]){20}, NULL, NULL, 1e-5, &y));
        double *got = read_as_f64(y);
        for (int k = 0; k < 40; k++)
            cr_assert(isnan(got[k]), "%s row %d: %g", styles[s], k / 20, got[k]);
        for (int k = 40; k < 60; k++)
            cr_assert(close_enough(got[k], want[k], 2e-6, 2e-6), "%d: %g vs %g", k, got[k],
                      want[k]);
        free(got);
        clt_tensor_free(y);
        clt_tensor_free(t);

        double one[4] = {3, -2, 1e4, 0.5}, bias = 0.25, wv = 2;
        clt_tensor *o = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){4, 1}, one);
        clt_tensor *w = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &wv);
        clt_tensor *b = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &bias);
        for (int e = 0; e < 2; e++) {
            CHECK(clt_layer_norm(o, 1, (int64_t[]){1}, w, b, e ? 0.0 : 1e-5, &y));
            got = read_as_f64(y);
            for (int k = 0; k < 4; k++)
                cr_assert(e ? isnan(got[k]) : got[k] == 0.25, "eps %d row %d: %g", e, k, got[k]);
            free(got);
            clt_tensor_free(y);
        }
        clt_tensor_free(o);
        clt_tensor_free(w);
        clt_tensor_free(b);

        const int64_t shapes[3][2] = {{0, 5}, {4, 0}, {0, 0}};
        for (int k = 0; k < 3; k++) {
            clt_tensor *z;
            CHECK(clt_zeros(dev, CLT_FLOAT32, 2, shapes[k], &z));
            CHECK(clt_set_requires_grad(z, 1));
            CHECK(clt_layer_norm(z, 1, &shapes[k][1], NULL, NULL, 1e-5, &y));
            assert_shape(y, 2, shapes[k]);
            clt_tensor *l;
            CHECK(clt_sum(y, &l));
            CHECK(clt_backward(l, NULL, 0));
            clt_tensor *gz;
            CHECK(clt_grad(z, &gz));
            assert_shape(gz, 2, shapes[k]);
            clt_tensor_free(gz);
            clt_tensor_free(l);
            clt_tensor_free(y);
            clt_tensor_free(z);
        }
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
}

/* ---- gradients ----------------------------------------------------------------------- */

typedef struct ln_ctx {
    int nd; /* normalised dims */
    int parts; /* 1: in[1] the weight, 2: in[1] or in[2] the bias */
    int transposed; /* the input's last two dims are swapped first */
    int group; /* clt_group_norm with 2 groups instead */
} ln_ctx;

static clt_status ln_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const ln_ctx *c = p;
    const clt_tensor *w = c->parts & 1 ? in[1] : NULL;
    const clt_tensor *b = c->parts & 2 ? in[c->parts & 1 ? 2 : 1] : NULL;
    clt_tensor *xt = NULL;
    const clt_tensor *x = in[0];
    clt_status st = CLT_OK;
    if (c->transposed) {
        st = clt_transpose(in[0], -1, -2, &xt);
        x = xt;
    }
    if (st == CLT_OK && c->group)
        st = clt_group_norm(x, 2, w, b, 1e-5, out);
    else if (st == CLT_OK)
        st = clt_layer_norm(x, c->nd, clt_tensor_shape(x) + clt_tensor_ndim(x) - c->nd, w, b,
                            1e-5, out);
    clt_tensor_free(xt);
    return st;
}

static void grad_case(clt_device *dev, int nd, const int64_t *shape, ln_ctx ctx)
{
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    int64_t wshape[4];
    int wnd = ctx.group ? 1 : ctx.nd;
    if (ctx.group)
        wshape[0] = shape[1];
    else
        for (int d = 0; d < wnd; d++) /* the shape ln_fn sees */
            wshape[d] = shape[nd - wnd + d];
    if (ctx.transposed && !ctx.group && wnd >= 2) {
        wshape[wnd - 1] = shape[nd - 2];
        wshape[wnd - 2] = shape[nd - 1];
    } else if (ctx.transposed && !ctx.group) {
        wshape[0] = shape[nd - 2];
    }
    size_t nw = 1;
    for (int d = 0; d < wnd; d++)
        nw *= (size_t)wshape[d];
    double *x = malloc(n * sizeof *x), w[64], b[64];
    cr_assert(x && nw <= 64);
    fill(x, n, -2, 4, (unsigned)n, false);
    fill(w, nw, -1.5, 3, 3, false);
    fill(b, nw, -1, 2, 4, false);
    gc_in ins[3];
    int k = 0;
    ins[k] = (gc_in){nd, {0}, x, 1};
    memcpy(ins[k++].shape, shape, sizeof(int64_t) * (size_t)nd);
    if (ctx.parts & 1) {
        ins[k] = (gc_in){wnd, {0}, w, 1};
        memcpy(ins[k++].shape, wshape, sizeof(int64_t) * (size_t)wnd);
    }
    if (ctx.parts & 2) {
        ins[k] = (gc_in){wnd, {0}, b, 1};
        memcpy(ins[k++].shape, wshape, sizeof(int64_t) * (size_t)wnd);
    }
    gradcheck(dev, ln_fn, &ctx, k, ins);
    free(x);
}

Test(layer_norm, gradients_by_finite_differences, .timeout = 120)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on this device");
    for (int s = 0; s < 2; s++) {
        setenv("CLTENSOR_REDUCE_STYLE", styles[s], 1);
        for (int parts = 0; parts < 4; parts++) {
            grad_case(dev, 2, (int64_t[]){3, 5}, (ln_ctx){1, parts, 0, 0});
            grad_case(dev, 2, (int64_t[]){2, 19}, (ln_ctx){1, parts, 0, 0});
            grad_case(dev, 3, (int64_t[]){2, 3, 4}, (ln_ctx){2, parts, 0, 0});
            grad_case(dev, 3, (int64_t[]){2, 3, 4}, (ln_ctx){1, parts, 1, 0});
            grad_case(dev, 3, (int64_t[]){2, 4, 3}, (ln_ctx){0, parts, 0, 1});
        }
        /* rows of one value: y = b whatever x, so dx = 0 and dw = 0 */
        grad_case(dev, 2, (int64_t[]){4, 1}, (ln_ctx){1, 3, 0, 0});
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
}

/* The output's grad_fn is torch's: NativeLayerNormBackward0 (and
 * NativeGroupNormBackward0 for GroupNorm without affine). */
Test(layer_norm, grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *y, *g;
    CHECK(clt_ones(dev, CLT_FLOAT32, 3, (int64_t[]){2, 4, 3}, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_layer_norm(x, 1, (int64_t[]){3}, NULL, NULL, 1e-5, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "NativeLayerNormBackward0");
    CHECK(clt_group_norm(x, 2, NULL, NULL, 1e-5, &g));
    cr_assert_str_eq(clt_grad_fn_name(g), "NativeGroupNormBackward0");
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(g);
}

/* ---- errors -------------------------------------------------------------------------- */

static void refused(const clt_tensor *x, int nd, const int64_t *ns, const clt_tensor *w,
                    const clt_tensor *b, double eps, clt_status want, const char *needle)
{
    clt_tensor *y = (clt_tensor *)&y;
    assert_error(clt_layer_norm(x, nd, ns, w, b, eps, &y), want, needle);
    cr_assert_null(y);
    const char *m = clt_last_error();
    cr_assert(strncmp(m, "clt_layer_norm: ", 16) == 0, "%s", m);
    if (!strstr(m, "clt_to_dtype")) /* the fix named */
        names_only("clt_layer_norm");
}

Test(layer_norm, errors_in_torch_words)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *xi, *w5, *w4, *w64 = NULL, *b22;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, 4}, &x));
    CHECK(clt_ones(dev, CLT_INT64, 2, (int64_t[]){2, 4}, &xi));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){5}, &w5));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){4}, &w4));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, &b22));
    int64_t four = 4, three = 3;
    refused(x, 1, &three, NULL, NULL, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Given normalized_shape=[3], expected input with shape [*, 3], but got input of "
            "size [2, 4]");
    refused(x, 1, &four, w5, NULL, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            "[5] and normalized_shape = [4]");
    refused(x, 1, &four, NULL, b22, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Expected bias to be of same shape as normalized_shape");
    refused(x, 0, &four, NULL, NULL, 1e-5, CLT_ERR_INVALID_ARGUMENT,
            "Expected normalized_shape to be at least 1-dimensional");
    refused(x, 1, &four, NULL, NULL, -1, CLT_ERR_INVALID_ARGUMENT, "eps -1");
    refused(x, 1, &four, NULL, NULL, NAN, CLT_ERR_INVALID_ARGUMENT, "eps nan");
    refused(xi, 1, &four, NULL, NULL, 1e-5, CLT_ERR_DTYPE_UNSUPPORTED,
            "the input must be float32 or float64, not int64");
    refused(xi, 1, &four, w4, NULL, 1e-5, CLT_ERR_DTYPE_MISMATCH, "int64");
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_ones(dev, CLT_FLOAT64, 1, (int64_t[]){4}, &w64));
        refused(x, 1, &four, w64, NULL, 1e-5, CLT_ERR_DTYPE_MISMATCH, "float64");
    }
    clt_tensor_free(x);
    clt_tensor_free(xi);
    clt_tensor_free(w5);
    clt_tensor_free(w4);
    clt_tensor_free(w64);
    clt_tensor_free(b22);
}

Test(layer_norm, refuses_operands_on_two_devices)
{
    clt_device *dev = get_device("cpu"), *other = second_device(dev);
    clt_tensor *x, *w, *y = (clt_tensor *)&y;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){2, 4}, &x));
    CHECK(clt_ones(other, CLT_FLOAT32, 1, (int64_t[]){4}, &w));
    assert_error(clt_layer_norm(x, 1, (int64_t[]){4}, NULL, w, 1e-5, &y),
                 CLT_ERR_DEVICE_MISMATCH, "clt_layer_norm: expected all tensors to be on the same");
    cr_assert_null(y);
    clt_tensor_free(x);
    clt_tensor_free(w);
}
