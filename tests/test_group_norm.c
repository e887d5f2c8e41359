/* test_group_norm.c: clt_group_norm and GroupNorm (torch.nn.GroupNorm):
 * values against a float64 host loop (2-D and 4-D inputs, one group, a
 * group per channel and between, transposed and sliced inputs, float32 and
 * float64, with and without weight and bias), gradients by finite
 * differences, torch's errors, and the layer's parameters across
 * clt_module_to, clt_module_to_dtype and a checkpoint round trip. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

/* y = (x - mean) / sqrt(var + eps) * w[c] + b[c] over each sample's group
 * of C / G channels (biased variance), for a contiguous host x [N, C, S]
 * (S the product of the dims after C); w, b NULL: 1 and 0. */
static void reference(const double *x, int64_t N, int64_t C, int64_t S, int64_t G,
                      const double *w, const double *b, double eps, double *y)
{
    int64_t cg = C / G, n_in = cg * S;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            const double *xs = x + (n * C + g * cg) * S;
            double *ys = y + (n * C + g * cg) * S;
            double mu = 0, var = 0;
            for (int64_t k = 0; k < n_in; k++)
                mu += xs[k];
            mu /= (double)n_in;
            for (int64_t k = 0; k < n_in; k++)
                var += (xs[k] - mu) * (xs[k] - mu);
            var /= (double)n_in;
            for (int64_t k = 0; k < n_in; k++) {
                int64_t c = g * cg + k / S;
                ys[k] = (xs[k] - mu) / sqrt(var + eps) * (w ? w[c] : 1.0) + (b ? b[c] : 0.0);
            }
        }
}

/* Values in [-3, 3) from a seed, with a per-channel offset so that the
 * groups' means differ. */
static void fill_doubles(double *x, size_t n, int64_t C, int64_t S, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int64_t c = (int64_t)(i / (size_t)S) % C;
        x[i] = (double)((seed >> 8) % 6001) / 1000.0 - 3.0 + 0.5 * (double)c;
    }
}

/* A tensor of dtype holding the host values v (float64), of ndim dims. */
static clt_tensor *upload(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                          const double *v, size_t n)
{
    clt_tensor *t;
    if (dt == CLT_FLOAT64) {
        CHECK(clt_tensor_from_host(dev, dt, nd, shape, v, &t));
        return t;
    }
    float *f = malloc((n ? n : 1) * sizeof *f);
    cr_assert_not_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)v[i];
    CHECK(clt_tensor_from_host(dev, dt, nd, shape, f, &t));
    free(f);
    return t;
}

static double *download(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    if (clt_tensor_dtype(t) == CLT_FLOAT64) {
        CHECK(clt_tensor_read(t, h, n * sizeof *h));
    } else {
        float *f = read_f32(t);
        for (size_t i = 0; i < n; i++)
            h[i] = f[i];
        free(f);
    }
    return h;
}

enum { CONTIGUOUS, TRANSPOSED, SLICED };

/* The input x (host, contiguous, shape[nd]) as a device tensor laid out as
 * `layout` says: contiguous; the transpose of a tensor whose last two dims
 * are swapped; or every other channel of a tensor with twice as many. */
static clt_tensor *input_as(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                            const double *x, size_t n, int layout)
{
    if (layout == CONTIGUOUS)
        return upload(dev, dt, nd, shape, x, n);
    int64_t bshape[4];
    memcpy(bshape, shape, sizeof(int64_t) * (size_t)nd);
    double *base = malloc(2 * n * sizeof *base);
    cr_assert_not_null(base);
    clt_tensor *b, *v;
    if (layout == TRANSPOSED) {
        int64_t r = shape[nd - 2], c = shape[nd - 1];
        bshape[nd - 2] = c;
        bshape[nd - 1] = r;
        for (size_t o = 0; o < n; o += (size_t)(r * c))
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = 0; j < c; j++)
                    base[o + (size_t)(j * r + i)] = x[o + (size_t)(i * c + j)];
        b = upload(dev, dt, nd, bshape, base, n);
        CHECK(clt_transpose(b, -1, -2, &v));
    } else {
        int64_t C = shape[1], S = (int64_t)n / (shape[0] * C);
        bshape[1] = 2 * C;
        for (int64_t m = 0; m < shape[0]; m++)
            for (int64_t c = 0; c < 2 * C; c++)
                for (int64_t s = 0; s < S; s++)
                    base[(m * 2 * C + c) * S + s] =
                        c % 2 ? 1e3 : x[(m * C + c / 2) * S + s]; /* odd channels unseen */
        b = upload(dev, dt, nd, bshape, base, 2 * n);
        CHECK(clt_slice(b, 1, 0, 2 * C, 2, &v));
    }
    free(base);
    clt_tensor_free(b);
    return v;
}

/* clt_group_norm on one case against the host loop; parts: 1 weight,
 * 2 bias. */
static void check_case(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape, int64_t G,
                       int parts, int layout)
{
    int64_t N = shape[0], C = shape[1], S = 1;
    for (int d = 2; d < nd; d++)
        S *= shape[d];
    size_t n = (size_t)(N * C * S);
    double *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want);
    double *w = malloc((size_t)C * sizeof *w), *b = malloc((size_t)C * sizeof *b);
    cr_assert(x && want && w && b);
    fill_doubles(x, n, C, S, (unsigned)(7 * N + 5 * C + 3 * G + nd + layout));
    for (int64_t c = 0; c < C; c++) {
        w[c] = 0.5 + 0.25 * (double)c;
        b[c] = 0.75 - 0.5 * (double)c;
    }
    reference(x, N, C, S, G, parts & 1 ? w : NULL, parts & 2 ? b : NULL, 1e-5, want);
    clt_tensor *tx = input_as(dev, dt, nd, shape, x, n, layout);
    clt_tensor *tw = parts & 1 ? upload(dev, dt, 1, &C, w, (size_t)C) : NULL;
    clt_tensor *tb = parts & 2 ? upload(dev, dt, 1, &C, b, (size_t)C) : NULL;
    clt_tensor *y;
    CHECK(clt_group_norm(tx, G, tw, tb, 1e-5, &y));
    assert_shape(y, nd, shape);
    cr_assert_eq(clt_tensor_dtype(y), dt);
    double *got = download(y);
    double rtol = dt == CLT_FLOAT64 ? 1e-12 : 1e-5, atol = dt == CLT_FLOAT64 ? 1e-12 : 2e-6;
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol),
                  "%s %dd [%lld, %lld, ...] G %lld parts %d layout %d: y[%zu] %.9g, want %.9g",
                  clt_dtype_name(dt), nd, (long long)N, (long long)C, (long long)G, parts,
                  layout, i, got[i], want[i]);
    free(got);
    clt_tensor_free(y);
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(tb);
    free(x);
    free(want);
    free(w);
    free(b);
}

Test(group_norm, values_against_a_host_loop)
{
    clt_device *dev = get_device("cpu");
    static const struct {
        int nd;
        int64_t shape[4], groups[3];
    } cases[] = {
        {2, {4, 6}, {1, 3, 6}},          /* [N, C]: G = C leaves one value a group */
        {3, {2, 6, 5}, {1, 2, 6}},
        {4, {2, 8, 3, 4}, {1, 4, 8}},
        {4, {3, 4, 1, 7}, {2, 4, 1}},
        {3, {1, 4, 9}, {2, 4, 1}},       /* one sample */
    };
    clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (int k = 0; k < 2; k++) {
        if (!clt_device_supports_dtype(dev, dts[k]))
            continue;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            for (int g = 0; g < 3; g++)
                for (int parts = 0; parts < 4; parts++)
                    check_case(dev, dts[k], cases[c].nd, cases[c].shape, cases[c].groups[g],
                               parts, CONTIGUOUS);
        /* non-contiguous inputs: a transpose, a slice with a step */
        for (int layout = TRANSPOSED; layout <= SLICED; layout++) {
            check_case(dev, dts[k], 4, (int64_t[]){2, 8, 3, 4}, 4, 3, layout);
            check_case(dev, dts[k], 3, (int64_t[]){2, 6, 5}, 3, 1, layout);
            check_case(dev, dts[k], 2, (int64_t[]){5, 6}, 2, 0, layout);
        }
    }
}

/* Constant groups normalise to 0 (var 0: x - mean is 0, times 1/sqrt(eps));
 * empty inputs give empty results of their shape. */
Test(group_norm, constant_and_empty_inputs)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *y, *b;
    CHECK(clt_full(dev, CLT_FLOAT32, 3, (int64_t[]){2, 4, 3}, 2.5, &x));
    CHECK(clt_full(dev, CLT_FLOAT32, 1, (int64_t[]){4}, -1.5, &b));
    CHECK(clt_group_norm(x, 2, NULL, b, 1e-5, &y));
    float *got = read_f32(y);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(got[i], -1.5f, "y[%d] %g", i, got[i]);
    free(got);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(b);
    static const int64_t empties[][3] = {{0, 6, 2}, {2, 6, 0}, {2, 0, 3}};
    for (int k = 0; k < 3; k++) {
        CHECK(clt_zeros(dev, CLT_FLOAT32, 3, empties[k], &x));
        CHECK(clt_group_norm(x, 3, NULL, NULL, 1e-5, &y));
        assert_shape(y, 3, empties[k]);
        clt_tensor_free(y);
        clt_tensor_free(x);
    }
}

/* ---- gradients ----------------------------------------------------------------------- */

typedef struct gn_ctx {
    int64_t groups;
    int parts;      /* 1: in[1] is the weight, 2: in[1] or in[2] the bias */
    int transposed; /* in[0] is transposed (last two dims) before */
} gn_ctx;

static clt_status gn_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const gn_ctx *c = p;
    const clt_tensor *w = c->parts & 1 ? in[1] : NULL;
    const clt_tensor *b = c->parts & 2 ? in[c->parts & 1 ? 2 : 1] : NULL;
    if (!c->transposed)
        return clt_group_norm(in[0], c->groups, w, b, 1e-5, out);
    clt_tensor *xt;
    clt_status st = clt_transpose(in[0], -1, -2, &xt);
    if (st == CLT_OK)
        st = clt_group_norm(xt, c->groups, w, b, 1e-5, out);
    clt_tensor_free(xt);
    return st;
}

static void grad_case(clt_device *dev, int nd, const int64_t *shape, int64_t G, int parts,
                      int transposed)
{
    int64_t seen[4]; /* the shape clt_group_norm sees */
    memcpy(seen, shape, sizeof(int64_t) * (size_t)nd);
    if (transposed) {
        seen[nd - 2] = shape[nd - 1];
        seen[nd - 1] = shape[nd - 2];
    }
    int64_t C = seen[1];
    size_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    double *x = malloc(n * sizeof *x), w[16], b[16];
    cr_assert(x && C <= 16);
    fill_doubles(x, n, C, 1, (unsigned)(11 * n + (size_t)G));
    for (int64_t c = 0; c < C; c++) {
        w[c] = 1.25 - 0.375 * (double)c;
        b[c] = 0.125 * (double)c - 0.5;
    }
    gc_in ins[3];
    int k = 0;
    ins[k] = (gc_in){nd, {0}, x, 1};
    memcpy(ins[k++].shape, shape, sizeof(int64_t) * (size_t)nd);
    if (parts & 1)
        ins[k++] = (gc_in){1, {C}, w, 1};
    if (parts & 2)
        ins[k++] = (gc_in){1, {C}, b, 1};
    gn_ctx ctx = {G, parts, transposed};
    gradcheck(dev, gn_fn, &ctx, k, ins);
    free(x);
}

Test(group_norm, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on this device");
    grad_case(dev, 3, (int64_t[]){2, 6, 3}, 3, 3, 0);
    grad_case(dev, 3, (int64_t[]){2, 6, 3}, 1, 1, 0);
    grad_case(dev, 3, (int64_t[]){2, 6, 3}, 6, 2, 0);
    grad_case(dev, 2, (int64_t[]){3, 4}, 2, 3, 0);
    grad_case(dev, 4, (int64_t[]){2, 4, 2, 3}, 2, 0, 0);
    grad_case(dev, 4, (int64_t[]){2, 4, 2, 3}, 4, 3, 0);
    /* a non-contiguous input: [2, 3, 4] transposed to [2, 4, 3] */
    grad_case(dev, 3, (int64_t[]){2, 3, 4}, 2, 3, 1);
}

/* ---- errors -------------------------------------------------------------------------- */

/* clt_group_norm(x, G, w, b, eps) must fail with want, *out NULL and the
 * message holding needle after "clt_group_norm: ". */
static void refused(const clt_tensor *x, int64_t G, const clt_tensor *w, const clt_tensor *b,
                    double eps, clt_status want, const char *needle)
{
    clt_tensor *y = (clt_tensor *)&y;
    assert_error(clt_group_norm(x, G, w, b, eps, &y), want, needle);
    cr_assert_null(y);
    cr_assert(strncmp(clt_last_error(), "clt_group_norm: ", 16) == 0, "%s", clt_last_error());
}

Test(group_norm, errors_in_torch_words)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *x1, *w5, *w61, *w6, *xi, *one, *one1, *four;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 6, 4}, &x));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){6}, &x1));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){5}, &w5));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){6, 1}, &w61));
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){6}, &w6));
    CHECK(clt_zeros(dev, CLT_INT64, 3, (int64_t[]){2, 6, 4}, &xi));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){1, 6}, &one));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){1, 6, 1}, &one1));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){1, 4}, &four));
    clt_tensor *y = (clt_tensor *)&y;
    assert_error(clt_group_norm(NULL, 2, NULL, NULL, 1e-5, &y), CLT_ERR_NULL_ARGUMENT, "input");
    cr_assert_null(y);
    assert_error(clt_group_norm(x, 2, NULL, NULL, 1e-5, NULL), CLT_ERR_NULL_ARGUMENT, "out");
    refused(x, 0, NULL, NULL, 1e-5, CLT_ERR_INVALID_ARGUMENT,
            "Expected num groups to be greater than 0, got 0");
    refused(x, -2, NULL, NULL, 1e-5, CLT_ERR_INVALID_ARGUMENT,
            "Expected num groups to be greater than 0, got -2");
    refused(x1, 3, NULL, NULL, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Expected at least 2 dimensions for input tensor but received 1");
    refused(x, 4, NULL, NULL, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Expected number of channels in input to be divisible by num_groups, but got input "
            "of shape [2, 6, 4] and num_groups=4");
    refused(x, 3, w5, NULL, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Expected weight to be a vector of size equal to the number of channels in input, "
            "but got weight of shape [5] and input of shape [2, 6, 4]");
    refused(x, 3, w61, NULL, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "got weight of shape [6, 1] and input of shape [2, 6, 4]");
    refused(x, 3, w6, w5, 1e-5, CLT_ERR_SHAPE_MISMATCH,
            "Expected bias to be a vector of size equal to the number of channels in input, "
            "but got bias of shape [5] and input of shape [2, 6, 4]");
    refused(xi, 3, NULL, NULL, 1e-5, CLT_ERR_DTYPE_UNSUPPORTED,
            "the input must be float32 or float64, not int64");
    refused(xi, 3, w6, NULL, 1e-5, CLT_ERR_DTYPE_MISMATCH,
            "the input is int64 and the weight float32");
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        clt_tensor *w64;
        CHECK(clt_ones(dev, CLT_FLOAT64, 1, (int64_t[]){6}, &w64));
        refused(x, 3, w6, w64, 1e-5, CLT_ERR_DTYPE_MISMATCH,
                "the input is float32 and the bias float64");
        clt_tensor_free(w64);
    }
    /* torch 1.13's F.group_norm: one sample whose groups hold one value */
    refused(one, 6, NULL, NULL, 1e-5, CLT_ERR_INVALID_ARGUMENT,
            "Expected more than 1 value per channel when training, got input size [1, 6]");
    refused(one1, 6, NULL, NULL, 1e-5, CLT_ERR_INVALID_ARGUMENT, "got input size [1, 6, 1]");
    CHECK(clt_group_norm(four, 2, NULL, NULL, 1e-5, &y)); /* two values a group: taken */
    clt_tensor_free(y);
    refused(x, 3, NULL, NULL, -1.0, CLT_ERR_INVALID_ARGUMENT, "eps -1");
    refused(x, 3, NULL, NULL, NAN, CLT_ERR_INVALID_ARGUMENT, "eps nan");
    clt_tensor *all[] = {x, x1, w5, w61, w6, xi, one, one1, four};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
}

Test(group_norm, refuses_operands_on_two_devices)
{
    clt_device *d0 = get_device("cpu:0"), *d1 = second_device(d0);
    clt_tensor *x, *w;
    CHECK(clt_zeros(d0, CLT_FLOAT32, 2, (int64_t[]){2, 4}, &x));
    CHECK(clt_ones(d1, CLT_FLOAT32, 1, (int64_t[]){4}, &w));
    refused(x, 2, w, NULL, 1e-5, CLT_ERR_DEVICE_MISMATCH, "expected all tensors to be on the same");
    refused(x, 2, NULL, w, 1e-5, CLT_ERR_DEVICE_MISMATCH, "expected all tensors to be on the same");
    clt_tensor_free(x);
    clt_tensor_free(w);
}

/* ---- the layer ------------------------------------------------------------------------ */

/* m's state as (name, host values) pairs compared with names[] and want[]
 * (float64 host values, read from whatever dtype). */
static void assert_state(const clt_module *m, int n, const char *const *names,
                         const double *const *want, int64_t C)
{
    clt_named_tensor *s;
    size_t ns;
    CHECK(clt_module_state(m, &s, &ns));
    cr_assert_eq(ns, (size_t)n);
    for (int k = 0; k < n; k++) {
        cr_assert_str_eq(s[k].name, names[k]);
        assert_shape(s[k].tensor, 1, &C);
        double *v = download(s[k].tensor);
        for (int64_t c = 0; c < C; c++)
            cr_assert(close_enough(v[c], want[k][c], 1e-7, 0), "%s[%lld] %g, want %g", names[k],
                      (long long)c, v[c], want[k][c]);
        free(v);
    }
    clt_free(s);
}

/* The layer's forward on x [2, 6, 5] against the host loop with w, b. */
static void assert_forward(clt_module *m, clt_device *dev, clt_dtype dt, const double *w,
                           const double *b)
{
    const int64_t shape[3] = {2, 6, 5};
    double x[60], want[60];
    fill_doubles(x, 60, 6, 5, 77);
    reference(x, 2, 6, 5, 3, w, b, 1e-5, want);
    clt_tensor *tx = upload(dev, dt, 3, shape, x, 60), *y;
    CHECK(clt_module_forward(m, tx, &y));
    cr_assert_eq(clt_tensor_dtype(y), dt);
    cr_assert_eq(clt_tensor_device(y), dev);
    double *got = download(y);
    for (int i = 0; i < 60; i++)
        cr_assert(close_enough(got[i], want[i], dt == CLT_FLOAT64 ? 1e-12 : 1e-5,
                               dt == CLT_FLOAT64 ? 1e-12 : 2e-6),
                  "y[%d] %.9g, want %.9g", i, got[i], want[i]);
    free(got);
    clt_tensor_free(y);
    clt_tensor_free(tx);
}

Test(group_norm, layer_parameters_devices_dtypes_and_checkpoints)
{
    clt_device *dev = get_device("cpu");
    clt_module *m, *bare;
    CHECK(clt_group_norm_layer(dev, 3, 6, 1e-5, 1, &m));
    CHECK(clt_group_norm_layer(dev, 3, 6, 1e-5, 0, &bare));
    cr_assert_str_eq(clt_module_name(m), "GroupNorm");
    cr_assert_eq(clt_module_num_parameters(m), 12);
    cr_assert_eq(clt_module_num_parameters(bare), 0);
    const char *names[2] = {"weight", "bias"};
    const double ones[6] = {1, 1, 1, 1, 1, 1}, zeros[6] = {0};
    assert_state(m, 2, names, (const double *[]){ones, zeros}, 6);
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    cr_assert_eq(np, 2);
    cr_assert(clt_requires_grad(ps[0]) && clt_requires_grad(ps[1]));
    clt_free(ps);
    assert_forward(m, dev, CLT_FLOAT32, NULL, NULL);

    /* a checkpoint with other values (as torch would write one) loads into
     * the layer, which computes with them and saves them back */
    char dir[] = "/tmp/cltensor-gn-XXXXXX", in[64], out[64];
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    snprintf(in, sizeof in, "%s/in.safetensors", dir);
    snprintf(out, sizeof out, "%s/out.safetensors", dir);
    double w[6], b[6];
    for (int c = 0; c < 6; c++) {
        w[c] = 0.5 + 0.25 * c;
        b[c] = 0.75 - 0.5 * c;
    }
    int64_t C = 6;
    clt_named_tensor file[2] = {{"weight", upload(dev, CLT_FLOAT32, 1, &C, w, 6)},
                                {"bias", upload(dev, CLT_FLOAT32, 1, &C, b, 6)}};
    CHECK(clt_save_safetensors(in, file, 2));
    clt_tensor_free(file[0].tensor);
    clt_tensor_free(file[1].tensor);
    CHECK(clt_module_load(m, in));
    assert_state(m, 2, names, (const double *[]){w, b}, 6);
    assert_forward(m, dev, CLT_FLOAT32, w, b);
    CHECK(clt_module_save(m, out));
    clt_module *m2;
    CHECK(clt_group_norm_layer(dev, 3, 6, 1e-5, 1, &m2));
    CHECK(clt_module_load(m2, out));
    assert_state(m2, 2, names, (const double *[]){w, b}, 6);
    assert_forward(m2, dev, CLT_FLOAT32, w, b);
    /* a layer without affine takes no weight: strict loading refuses it */
    assert_error(clt_module_load(bare, out), CLT_ERR_INVALID_ARGUMENT, "unexpected key");
    clt_module_free(m2);
    cr_assert_eq(unlink(in), 0);
    cr_assert_eq(unlink(out), 0);
    cr_assert_eq(rmdir(dir), 0);

    /* float32 parameters refuse a float64 input; the layer without them
     * takes it; model.double() then takes float64 and refuses float32 */
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        double x[12] = {0};
        clt_tensor *x64 = upload(dev, CLT_FLOAT64, 2, (int64_t[]){2, 6}, x, 12), *y;
        y = (clt_tensor *)&y;
        assert_error(clt_module_forward(m, x64, &y), CLT_ERR_DTYPE_MISMATCH,
                     "clt_module_forward: GroupNorm: the input and the weight must have the same "
                     "dtype, but the input is float64 and the weight float32");
        cr_assert_null(y);
        clt_tensor_free(x64);
        assert_forward(bare, dev, CLT_FLOAT64, NULL, NULL);
        CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
        assert_state(m, 2, names, (const double *[]){w, b}, 6);
        assert_forward(m, dev, CLT_FLOAT64, w, b);
        float xf[12] = {0};
        clt_tensor *x32;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 6}, xf, &x32));
        y = (clt_tensor *)&y;
        assert_error(clt_module_forward(m, x32, &y), CLT_ERR_DTYPE_MISMATCH,
                     "the input is float32 and the weight float64");
        cr_assert_null(y);
        clt_tensor_free(x32);
        CHECK(clt_module_to_dtype(m, CLT_FLOAT32));
    }

    /* model.to(device): the parameters follow, an input left behind is
     * refused naming both devices */
    size_t ndev = 0;
    CHECK(clt_device_count(&ndev));
    if (ndev > 1) {
        clt_device *d1 = second_device(dev);
        CHECK(clt_module_to(m, d1));
        cr_assert_eq(clt_module_device(m), d1);
        assert_state(m, 2, names, (const double *[]){w, b}, 6);
        assert_forward(m, d1, CLT_FLOAT32, w, b);
        float xf[60] = {0};
        clt_tensor *x0, *y = (clt_tensor *)&y;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, (int64_t[]){2, 6, 5}, xf, &x0));
        assert_error(clt_module_forward(m, x0, &y), CLT_ERR_DEVICE_MISMATCH, "GroupNorm: ");
        cr_assert_null(y);
        clt_tensor_free(x0);
    }
    clt_module_free(m);
    clt_module_free(bare);
}

/* The layer's weight and bias gradients of L = sum(y * r): sum over n and
 * the spatial positions of xhat * r, and of r. */
Test(group_norm, layer_gradients)
{
    clt_device *dev = get_device("cpu");
    enum { N = 3, C = 4, S = 5, G = 2 };
    double x[N * C * S], r[N * C * S], xhat[N * C * S];
    fill_doubles(x, N * C * S, C, S, 5);
    fill_doubles(r, N * C * S, C, S, 6);
    reference(x, N, C, S, G, NULL, NULL, 1e-5, xhat);
    clt_module *m;
    CHECK(clt_group_norm_layer(dev, G, C, 1e-5, 1, &m));
    int64_t shape[3] = {N, C, S};
    clt_tensor *tx = upload(dev, CLT_FLOAT32, 3, shape, x, N * C * S);
    clt_tensor *tr = upload(dev, CLT_FLOAT32, 3, shape, r, N * C * S), *y, *p, *l;
    CHECK(clt_scope_begin());
    CHECK(clt_module_forward(m, tx, &y));
    cr_assert_not_null(clt_grad_fn_name(y), "the output is not in the graph");
    CHECK(clt_mul(y, tr, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    float *gw = read_grad_f32(ps[0]), *gb = read_grad_f32(ps[1]);
    for (int c = 0; c < C; c++) {
        double ww = 0, wb = 0;
        for (int n = 0; n < N; n++)
            for (int s = 0; s < S; s++) {
                int i = (n * C + c) * S + s;
                ww += xhat[i] * r[i];
                wb += r[i];
            }
        cr_assert(close_enough(gw[c], ww, 1e-4, 1e-4), "dweight[%d] %g, want %g", c, gw[c], ww);
        cr_assert(close_enough(gb[c], wb, 1e-5, 1e-4), "dbias[%d] %g, want %g", c, gb[c], wb);
    }
    free(gw);
    free(gb);
    clt_free(ps);
    clt_tensor_free(tx);
    clt_tensor_free(tr);
    clt_module_free(m);
}

/* The constructor's checks; the layer's forward checks the channels
 * against its weight (torch's message) when affine, only against
 * num_groups without, as torch. */
Test(group_norm, layer_errors)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = (clt_module *)&m;
    assert_error(clt_group_norm_layer(dev, 0, 6, 1e-5, 1, &m), CLT_ERR_INVALID_ARGUMENT,
                 "clt_group_norm_layer: num_groups 0");
    cr_assert_null(m);
    m = (clt_module *)&m;
    assert_error(clt_group_norm_layer(dev, 4, 6, 1e-5, 1, &m), CLT_ERR_INVALID_ARGUMENT,
                 "num_channels must be divisible by num_groups");
    cr_assert_null(m);
    m = (clt_module *)&m;
    assert_error(clt_group_norm_layer(dev, 2, -2, 1e-5, 1, &m), CLT_ERR_INVALID_ARGUMENT,
                 "num_channels -2");
    cr_assert_null(m);
    m = (clt_module *)&m;
    assert_error(clt_group_norm_layer(dev, 3, 6, -1e-5, 1, &m), CLT_ERR_INVALID_ARGUMENT,
                 "eps -1e-05");
    cr_assert_null(m);
    m = (clt_module *)&m;
    assert_error(clt_group_norm_layer(NULL, 3, 6, 1e-5, 1, &m), CLT_ERR_NULL_ARGUMENT, "dev");
    cr_assert_null(m);

    clt_module *bare;
    CHECK(clt_group_norm_layer(dev, 3, 6, 1e-5, 1, &m));
    CHECK(clt_group_norm_layer(dev, 3, 6, 1e-5, 0, &bare));
    clt_tensor *x9, *x4, *y = (clt_tensor *)&y;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 9}, &x9));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 4}, &x4));
    assert_error(clt_module_forward(m, x9, &y), CLT_ERR_SHAPE_MISMATCH,
                 "clt_module_forward: GroupNorm: Expected weight to be a vector of size equal to "
                 "the number of channels in input, but got weight of shape [6] and input of "
                 "shape [2, 9]");
    cr_assert_null(y);
    CHECK(clt_module_forward(bare, x9, &y));
    clt_tensor_free(y);
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(bare, x4, &y), CLT_ERR_SHAPE_MISMATCH,
                 "clt_module_forward: GroupNorm: Expected number of channels in input to be "
                 "divisible by num_groups");
    cr_assert_null(y);
    /* integers: refused against the weight, or as the input's dtype */
    clt_tensor *xi;
    CHECK(clt_zeros(dev, CLT_INT64, 2, (int64_t[]){2, 6}, &xi));
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(m, xi, &y), CLT_ERR_DTYPE_MISMATCH,
                 "GroupNorm: the input and the weight must have the same dtype, but the input is "
                 "int64 and the weight float32");
    cr_assert_null(y);
    y = (clt_tensor *)&y;
    assert_error(clt_module_forward(bare, xi, &y), CLT_ERR_DTYPE_UNSUPPORTED,
                 "GroupNorm: the input must be float32 or float64, not int64");
    cr_assert_null(y);
    clt_tensor_free(xi);
    clt_tensor_free(x9);
    clt_tensor_free(x4);
    clt_module_free(m);
    clt_module_free(bare);
}
