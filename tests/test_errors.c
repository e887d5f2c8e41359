/* test_errors.c: every error path returns a status, leaves a message that
 * names what went wrong, and leaves the operands as they were. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "helpers.h"
#include "internal.h"

Test(errors, unknown_kind_lists_available)
{
    clt_device *dev = (clt_device *)1;
    clt_status st = clt_device_get("cudaa", &dev);
    if (st == CLT_ERR_NO_PLATFORM)
        cr_skip_test("no OpenCL platform");
    cr_assert_eq(st, CLT_ERR_UNKNOWN_KIND);
    cr_assert_null(dev);
    cr_assert(strncmp(clt_last_error(), "clt_device_get: unknown device kind 'cudaa'", 43) == 0,
              "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "cpu:0") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_is_available("cudaa"), 0);
    char *report = NULL;
    cr_assert_eq(clt_device_explain("cudaa", &report), CLT_ERR_UNKNOWN_KIND);
    cr_assert(strncmp(clt_last_error(), "clt_device_explain: unknown device kind", 39) == 0,
              "%s", clt_last_error());
    clt_free(report);
}

Test(errors, absent_device)
{
    get_device("cpu");
    if (clt_is_available("mps"))
        cr_skip_test("this machine has an Apple GPU");
    clt_device *dev = NULL;
    cr_assert_eq(clt_device_get("mps", &dev), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert(strncmp(clt_last_error(), "clt_device_get: no device for 'mps'", 35) == 0, "%s",
              clt_last_error());
    cr_assert(strstr(clt_last_error(), "cpu:0") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_device_get("cpu:9", &dev), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert_eq(clt_is_available("cpu:9"), 0);
    cr_assert_eq(clt_is_available("CPU"), 1);
}

Test(errors, device_mismatch_names_both)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    int64_t n = 8;
    clt_tensor *a = NULL, *b = NULL, *c = (clt_tensor *)1;
    CHECK(clt_ones(d0, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(d1, CLT_FLOAT32, 1, &n, &b));
    cr_assert_eq(clt_add(a, b, &c), CLT_ERR_DEVICE_MISMATCH);
    cr_assert_null(c);
    const char *m = clt_last_error();
    cr_assert(strstr(m, "expected all tensors to be on the same device") != NULL, "%s", m);
    cr_assert(strstr(m, clt_device_label(d0)) != NULL, "%s", m);
    cr_assert(strstr(m, clt_device_label(d1)) != NULL, "%s", m);
    cr_assert_eq(clt_mul(b, a, &c), CLT_ERR_DEVICE_MISMATCH);
    /* operands unchanged */
    float *h = read_f32(a);
    cr_assert_eq(h[7], 1.0f);
    free(h);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(errors, shape_mismatch_names_shapes)
{
    clt_device *dev = get_device("cpu");
    int64_t s1[2] = {2, 3}, s2[2] = {3, 2};
    clt_tensor *a = NULL, *b = NULL, *c = (clt_tensor *)1;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, s1, &a));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, s2, &b));
    cr_assert_eq(clt_sub(a, b, &c), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(c);
    cr_assert(strstr(clt_last_error(), "[2, 3]") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "[3, 2]") != NULL, "%s", clt_last_error());
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(errors, null_arguments)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *a = NULL, *c = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    cr_assert_eq(clt_add(a, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "clt_add") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_add(NULL, a, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_add(a, a, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_mul_scalar(NULL, 1, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_neg(NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_device_get(NULL, &dev), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_ones(NULL, CLT_FLOAT32, 1, &n, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_ones(dev, CLT_FLOAT32, 1, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_to(a, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_tensor_read(a, NULL, 16), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_tensor_format(NULL, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(a);
}

Test(errors, bad_shapes_and_buffers)
{
    clt_device *dev = get_device("cpu");
    int64_t neg[2] = {2, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    clt_tensor *t = NULL;
    cr_assert_eq(clt_zeros(dev, CLT_FLOAT32, 2, neg, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "-1") != NULL);
    cr_assert_eq(clt_zeros(dev, CLT_FLOAT32, 9, nine, &t), CLT_ERR_TOO_MANY_DIMS);
    cr_assert_eq(clt_arange(dev, CLT_FLOAT32, 0, 10, 0, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_arange(dev, CLT_FLOAT32, 0, 10, -1, &t), CLT_ERR_INVALID_ARGUMENT);
    int64_t n = 10;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &t));
    float small[4] = {9, 9, 9, 9};
    cr_assert_eq(clt_tensor_read(t, small, sizeof small), CLT_ERR_BUFFER_TOO_SMALL);
    cr_assert(strstr(clt_last_error(), "40") != NULL, "%s", clt_last_error());
    cr_assert_eq(small[0], 9.0f, "a failed read wrote into the buffer");
    double v;
    cr_assert_eq(clt_tensor_item(t, &v), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_free(t);
}

Test(errors, unsupported_dtype_is_named)
{
    clt_device *dev = get_device("cpu");
    if (clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("device supports float16");
    int64_t n = 3;
    clt_tensor *t = NULL;
    cr_assert_eq(clt_zeros(dev, CLT_FLOAT16, 1, &n, &t), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert(strstr(clt_last_error(), "cl_khr_fp16") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), clt_device_label(dev)) != NULL, "%s", clt_last_error());
    cr_assert_null(t);
}

Test(errors, kernel_build_failure_has_log)
{
    clt_device *dev = get_device("cpu");
    /* Options that break the build: the elementwise kernels with a storage
     * type that does not exist. */
    clt_status st = clt__launch(dev, "elementwise", "-DT=no_such_type -DO=float", "add_tt", 1,
                                (size_t[]){1}, NULL, 0, NULL);
    cr_assert_eq(st, CLT_ERR_BUILD_FAILED, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "CL_BUILD_PROGRAM_FAILURE") != NULL, "%s",
              clt_last_error());
    cr_assert(strstr(clt_last_error(), "build log") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "no_such_type") != NULL, "%s", clt_last_error());
}

Test(errors, status_strings)
{
    cr_assert_str_eq(clt_status_name(CLT_ERR_DEVICE_MISMATCH), "CLT_ERR_DEVICE_MISMATCH");
    cr_assert_str_eq(clt_status_string(CLT_OK), "success");
    cr_assert_str_eq(clt_cl_error_name(-5), "CL_OUT_OF_RESOURCES");
    cr_assert_str_eq(clt_cl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
    cr_assert_str_eq(clt_cl_error_name(12345), "CL_UNKNOWN_ERROR");
    clt_dtype dt;
    CHECK(clt_dtype_parse("Double", &dt));
    cr_assert_eq(dt, CLT_FLOAT64);
    cr_assert_eq(clt_dtype_parse("float128", &dt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strncmp(clt_last_error(), "clt_dtype_parse: ", 17) == 0 &&
              strstr(clt_last_error(), "'float128'"), "%s", clt_last_error());
}

/* ---- the op called is the op named ---------------------------------------------- */

/* clt_warmup_counts is not clt_warmup: each names itself. */
Test(errors, each_warm_up_call_names_itself)
{
    size_t built = 5, dropped = 5;
    cr_assert_eq(clt_warmup_counts(NULL, 0, &built, &dropped), CLT_ERR_NULL_ARGUMENT);
    cr_assert(strncmp(clt_last_error(), "clt_warmup_counts: ", 19) == 0, "%s", clt_last_error());
    cr_assert_eq(built, 0);
    cr_assert_eq(dropped, 0);
    cr_assert_eq(clt_warmup(NULL, 0, &built), CLT_ERR_NULL_ARGUMENT);
    cr_assert(strncmp(clt_last_error(), "clt_warmup: ", 12) == 0, "%s", clt_last_error());
}

long clt__host_refuse_after(long pass); /* src/core/alloc.c */

static clt_tensor *ramp(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    clt_tensor *t = NULL, *r = NULL;
    CHECK(clt_arange(dev, CLT_FLOAT32, 0, (double)n, 1, &t));
    CHECK(clt_reshape(t, ndim, shape, &r));
    clt_tensor_free(t);
    CHECK(clt_to_dtype(r, dt, &t));
    clt_tensor_free(r);
    return t;
}

/* A CLTENSOR_GEMM_CLASS that names no class fails every product on the
 * CPU GEMM kernels (float64 here, which never takes the small-product
 * kernel): a convolution, a matrix product and the backward pass of one
 * each name themselves. */
Test(errors, gemm_failure_names_the_op_called)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64) || !clt__gemm_cpu_suitable(dev, CLT_FLOAT64))
        cr_skip_test("no float64 CPU GEMM on %s", clt_device_label(dev));
    clt_tensor *x = ramp(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 6, 6});
    clt_tensor *w = ramp(dev, CLT_FLOAT64, 4, (int64_t[]){4, 3, 3, 3});
    clt_tensor *a = ramp(dev, CLT_FLOAT64, 2, (int64_t[]){5, 7});
    clt_tensor *b = ramp(dev, CLT_FLOAT64, 2, (int64_t[]){7, 3});
    clt_tensor *y = NULL, *s = NULL, *o = (clt_tensor *)1;
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(clt_matmul(a, b, &y));
    CHECK(clt_sum(y, &s));
    setenv("CLTENSOR_GEMM_CLASS", "7", 1);
    cr_assert_eq(clt_conv2d(x, w, NULL, NULL, &o), CLT_ERR_INVALID_ARGUMENT, "%s",
                 clt_last_error());
    cr_assert_null(o);
    names_only("clt_conv2d");
    cr_assert(strstr(clt_last_error(), "CLTENSOR_GEMM_CLASS is '7'"), "%s", clt_last_error());
    o = (clt_tensor *)1;
    cr_assert_eq(clt_matmul(a, b, &o), CLT_ERR_INVALID_ARGUMENT, "%s", clt_last_error());
    cr_assert_null(o);
    names_only("clt_matmul");
    cr_assert_eq(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "%s", clt_last_error());
    names_only("clt_backward");
    unsetenv("CLTENSOR_GEMM_CLASS");
    clt_tensor *ga = (clt_tensor *)1;
    CHECK(clt_grad(a, &ga));
    cr_assert_null(ga, "the failed pass left a gradient");
    CHECK(clt_conv2d(x, w, NULL, NULL, &o));
    clt_tensor_free(o);
    clt_tensor *ts[] = {x, w, a, b, y, s};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* Without hardware FMA a convolution's product runs through the matrix
 * product of src/ops/matmul.c (CLBlast) on views of its operands.  With
 * the device's memory capped at each size from what its inputs take up to
 * what the whole call needs, every failure names clt_conv2d alone, one of
 * them the product's result, and the results that succeed are right
 * (against sums computed here). */
Test(errors, convolution_through_matmul_names_conv, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    const int64_t N = 2, C = 2, H = 5, W = 4, O = 3, K = 3, Ho = H - K + 1, Wo = W - K + 1;
    clt_tensor *x = ramp(dev, CLT_FLOAT32, 4, (int64_t[]){N, C, H, W});
    clt_tensor *w = ramp(dev, CLT_FLOAT32, 4, (int64_t[]){O, C, K, K});
    dev->fp32_fma = false; /* the device is open now; this test's process only */
    cr_assert(!clt__gemm_cpu_suitable(dev, CLT_FLOAT32));
    float want[N * O * Ho * Wo];
    for (int64_t n = 0; n < N; n++)
        for (int64_t q = 0; q < O; q++)
            for (int64_t i = 0; i < Ho; i++)
                for (int64_t j = 0; j < Wo; j++) {
                    double acc = 0;
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t u = 0; u < K; u++)
                            for (int64_t v = 0; v < K; v++)
                                acc += (double)(((n * C + c) * H + i + u) * W + j + v) *
                                       (double)(((q * C + c) * K + u) * K + v);
                    want[((n * O + q) * Ho + i) * Wo + j] = (float)acc;
                }
    clt_memory_stats ms;
    CHECK(clt_memory_empty_cache(dev));
    CHECK(clt_memory_stats_get(dev, &ms));
    int failures = 0;
    for (uint64_t cap = ms.allocated;; cap += 16) {
        clt_tensor *o = (clt_tensor *)1;
        CHECK(clt_memory_empty_cache(dev));
        CHECK(clt_memory_set_limit(dev, cap));
        clt_status st = clt_conv2d(x, w, NULL, NULL, &o);
        if (st != CLT_OK) {
            cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_last_error());
            cr_assert_null(o);
            names_only("clt_conv2d");
            failures++;
            continue;
        }
        CHECK(clt_memory_set_limit(dev, 0));
        float *h = read_f32(o);
        for (int64_t k = 0; k < N * O * Ho * Wo; k++)
            cr_assert_eq(h[k], want[k], "element %lld: %g, not %g", (long long)k, (double)h[k],
                         (double)want[k]);
        free(h);
        clt_tensor_free(o);
        break;
    }
    cr_assert_geq(failures, 3);
    clt_tensor_free(x);
    clt_tensor_free(w);
}

/* Runs call with the device's memory capped at each size, 16 bytes apart,
 * from just above what is allocated now (a cap of 0 would be none) until
 * it succeeds; every failure must be CLT_ERR_OUT_OF_DEVICE_MEMORY and pass
 * check.  Returns the failures. */
static int capped(clt_device *dev, clt_status (*call)(void *), void *arg,
                  void (*check)(void))
{
    clt_memory_stats ms;
    CHECK(clt_memory_empty_cache(dev));
    CHECK(clt_memory_stats_get(dev, &ms));
    int failures = 0;
    for (uint64_t cap = ms.allocated + 1;; cap += 16, failures++) {
        CHECK(clt_memory_empty_cache(dev));
        CHECK(clt_memory_set_limit(dev, cap));
        clt_status st = call(arg);
        if (st == CLT_OK)
            break;
        cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_last_error());
        check();
    }
    CHECK(clt_memory_set_limit(dev, 0));
    return failures;
}

typedef struct graph {
    clt_tensor *a, *b, *s, *norm;
} graph;

static clt_status backward_retained(void *arg)
{
    graph *g = arg;
    return clt_backward(g->s, NULL, 1);
}

static clt_status clip(void *arg)
{
    graph *g = arg;
    clt_tensor_free(g->norm);
    g->norm = NULL;
    return clt_clip_grad_norm(&g->a, 1, 1e9, 2.0, &g->norm);
}

static clt_status clip_value(void *arg)
{
    graph *g = arg;
    return clt_clip_grad_value(&g->a, 1, 30.0);
}

static void clip_value_named(void)
{
    names_only("clt_clip_grad_value");
}

static void backward_named(void)
{
    names_only("clt_backward");
}

/* The message starts with "fn: " and names none of the helpers listed
 * (NULL-terminated); others may follow fn, saying which step failed. */
static void names_first(const char *fn, const char *const *helpers)
{
    const char *m = clt_last_error();
    size_t n = strlen(fn);
    cr_assert(strncmp(m, fn, n) == 0 && m[n] == ':', "the message does not start with %s: %s",
              fn, m);
    for (; *helpers; helpers++)
        cr_assert(!strstr(m, *helpers), "%s: the message names %s: %s", fn, *helpers, m);
}

/* clt_clip_grad_norm converts dtypes, squares, sums, stacks, takes the
 * square root, takes the reciprocal, multiplies and clamps through helpers
 * that name it alone. */
static void clip_named(void)
{
    names_only("clt_clip_grad_norm");
}

/* The backward pass of a matrix product and clt_clip_grad_norm over its
 * gradient, each with the device's memory running out at every point in
 * turn: the messages name the call.  The gradients that come out in the
 * end are the ones a host computation gives. */
Test(errors, backward_and_clipping_name_the_call, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    graph g = {0};
    g.a = ramp(dev, CLT_FLOAT32, 2, (int64_t[]){6, 5});
    g.b = ramp(dev, CLT_FLOAT32, 2, (int64_t[]){5, 4});
    clt_tensor *y = NULL;
    CHECK(clt_set_requires_grad(g.a, 1));
    CHECK(clt_matmul(g.a, g.b, &y));
    CHECK(clt_sum(y, &g.s));
    cr_assert_geq(capped(dev, backward_retained, &g, backward_named), 1);
    clt_tensor *ga = NULL;
    CHECK(clt_grad(g.a, &ga));
    float *h = read_f32(ga);
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 5; k++) /* d sum(a b) / d a[i][k] = sum_j b[k][j] */
            cr_assert_eq(h[i * 5 + k], (float)(4 * (4 * k) + 6), "gradient [%d][%d]: %g", i, k,
                         (double)h[i * 5 + k]);
    free(h);
    clt_tensor_free(ga);
    cr_assert_geq(capped(dev, clip, &g, clip_named), 1);
    double norm = 0, want = 0;
    CHECK(clt_tensor_item(g.norm, &norm));
    for (int k = 0; k < 5; k++)
        want += 6.0 * (16.0 * k + 6) * (16.0 * k + 6);
    cr_assert_float_eq(norm, sqrt(want), 1e-3 * sqrt(want));
    clt_tensor_free(g.norm);
    /* clt_clip_grad_value too: then the gradient 16 k + 6 clamped at 30 */
    cr_assert_geq(capped(dev, clip_value, &g, clip_value_named), 1);
    CHECK(clt_grad(g.a, &ga));
    h = read_f32(ga);
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 5; k++)
            cr_assert_eq(h[i * 5 + k], (float)fmin(16 * k + 6, 30), "clipped [%d][%d]: %g", i,
                         k, (double)h[i * 5 + k]);
    free(h);
    clt_tensor_free(ga);
    clt_tensor_free(y);
    clt_tensor_free(g.s);
    clt_tensor_free(g.a);
    clt_tensor_free(g.b);
}

typedef struct forward {
    clt_module *m;
    clt_tensor *x, *y;
} forward;

static clt_status run_forward(void *arg)
{
    forward *f = arg;
    clt_tensor_free(f->y);
    f->y = NULL;
    return clt_module_forward(f->m, f->x, &f->y);
}

static void forward_named(void)
{
    static const char *const helpers[] = {"clt_linear", NULL}; /* the constructor */
    names_first("clt_module_forward", helpers);
}

/* A model's forward pass with the device's memory running out at every
 * point in turn names clt_module_forward, never clt_linear (the layer's
 * constructor); both layer paths of Linear (a batch of rows, and 3-D
 * input through the general composition) are run. */
Test(errors, module_forward_names_the_call, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    clt_module *layers[2] = {NULL, NULL};
    CHECK(clt_linear(dev, 5, 4, 1, NULL, &layers[0]));
    CHECK(clt_relu_layer(&layers[1]));
    forward f = {0};
    CHECK(clt_sequential(layers, 2, &f.m));
    for (int nd = 2; nd <= 3; nd++) {
        f.x = ramp(dev, CLT_FLOAT32, nd, nd == 2 ? (int64_t[]){3, 5} : (int64_t[]){2, 3, 5});
        cr_assert_geq(capped(dev, run_forward, &f, forward_named), 1);
        cr_assert_eq(clt_tensor_numel(f.y), nd == 2 ? 12 : 24);
        clt_tensor_free(f.x);
        clt_tensor_free(f.y);
        f.y = NULL;
    }
    clt_module_free(f.m);
}

typedef struct layer {
    clt_device *dev;
    clt_module *m;
} layer;

/* The layer constructors the tests below make fail: Linear, Conv2d and
 * Embedding draw their initial weights (uniform, uniform, normal). */
static const char *const constructors[] = {"clt_linear", "clt_conv2d_layer",
                                           "clt_embedding_layer"};
static int constructor;

/* Makes constructors[constructor] into l->m; a failure leaves it NULL. */
static clt_status make_layer(void *arg)
{
    layer *l = arg;
    clt_module_free(l->m);
    l->m = NULL;
    clt_status st;
    switch (constructor) {
    case 0: st = clt_linear(l->dev, 6, 5, 1, NULL, &l->m); break;
    case 1: st = clt_conv2d_layer(l->dev, 2, 3, 3, 3, NULL, 1, NULL, &l->m); break;
    default: st = clt_embedding_layer(l->dev, 7, 5, NULL, &l->m); break;
    }
    if (st != CLT_OK)
        cr_assert_null(l->m, "%s failed and handed out a module", constructors[constructor]);
    return st;
}

static void layer_named(void)
{
    names_only(constructors[constructor]);
}

/* A layer's constructor draws its initial weights with plain ops: with the
 * device's memory running out at every point in turn, the messages name
 * the constructor alone, not the draw (clt_rand, clt_randn) nor the
 * scaling inside it. */
Test(errors, layer_constructor_names_the_call, .timeout = 300)
{
    layer l = {get_device("cpu"), NULL};
    for (constructor = 0; constructor < 3; constructor++) {
        cr_assert_geq(capped(l.dev, make_layer, &l, layer_named), 1, "%s",
                      constructors[constructor]);
        cr_assert_eq(clt_module_device(l.m), l.dev);
        clt_module_free(l.m);
        l.m = NULL;
    }
}

/* ---- the driver failing inside composite calls ------------------------------------ */

long clt__driver_refuse_at(long pass); /* src/device/fault.c */

/* The backward pass from l with each of its driver calls failing in turn:
 * every message names clt_backward, then the node whose step failed (when
 * it was one), and no other public call; each node of ts (the tensors the
 * graph made) is named by some failure; the failed pass leaves no gradient
 * on leaf. */
static void backward_failures_name_nodes(clt_tensor *l, clt_tensor *leaf,
                                         clt_tensor *const *ts, size_t nt)
{
    char nodes[16][64];
    int seen[16] = {0};
    cr_assert_leq(nt, 16);
    for (size_t k = 0; k < nt; k++)
        snprintf(nodes[k], sizeof nodes[k], "clt_backward: %s: ", clt_grad_fn_name(ts[k]));
    long pass = 0;
    for (;; pass++) {
        clt__driver_refuse_at(pass);
        clt_status st = clt_backward(l, NULL, 1);
        long left = clt__driver_refuse_at(-1);
        if (left >= 0) {
            CHECK(st);
            break;
        }
        cr_assert_neq(st, CLT_OK, "driver call %ld was refused and no failure came back", pass);
        names_only("clt_backward");
        const char *m = clt_last_error();
        cr_assert(strstr(m, "CL_OUT_OF_RESOURCES"), "driver call %ld: %s", pass, m);
        for (size_t k = 0; k < nt; k++)
            seen[k] += strncmp(m, nodes[k], strlen(nodes[k])) == 0;
        clt_tensor *g = (clt_tensor *)1;
        CHECK(clt_grad(leaf, &g));
        cr_assert_null(g, "driver call %ld: the failed pass left a gradient", pass);
    }
    for (size_t k = 0; k < nt; k++)
        cr_assert_geq(seen[k], 1, "no failure named by %s (%ld driver calls)", nodes[k], pass);
}

/* Elementwise ops, reductions and softmax's formula inside the nodes, and
 * the reduction of a broadcast input's gradient. */
Test(errors, driver_failures_in_backward_name_the_node, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = ramp(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4});
    clt_tensor *b = ramp(dev, CLT_FLOAT32, 1, (int64_t[]){4});
    clt_tensor *t[4], *g;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(b, 1));
    CHECK(clt_mul(x, b, &t[0]));
    CHECK(clt_var_dim(t[0], 1, 1.0, 0, &t[1]));
    CHECK(clt_softmax(t[1], 0, &t[2]));
    CHECK(clt_prod(t[2], &t[3]));
    backward_failures_name_nodes(t[3], x, t, 4);
    CHECK(clt_grad(b, &g));
    cr_assert_not_null(g);
    clt_tensor_free(g);
    for (int i = 0; i < 4; i++)
        clt_tensor_free(t[i]);
    clt_tensor_free(x);
    clt_tensor_free(b);
}

/* A convolution, relu's gradient kernel, pooling, views, index ops, a
 * concatenation and a loss. */
Test(errors, driver_failures_in_backward_of_conv_index_loss, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = ramp(dev, CLT_FLOAT32, 4, (int64_t[]){2, 1, 6, 6});
    clt_tensor *w = ramp(dev, CLT_FLOAT32, 4, (int64_t[]){2, 1, 3, 3});
    clt_tensor *idx, *lab, *mask, *t[10];
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, (int64_t[]){0, 3, 5}, &idx));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, (int64_t[]){1, 0, 3}, &lab));
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 2, (int64_t[]){3, 4},
                               (uint8_t[]){0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0}, &mask));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(w, 1));
    CHECK(clt_conv2d(x, w, NULL, NULL, &t[0]));                   /* [2, 2, 4, 4] */
    CHECK(clt_relu(t[0], &t[1]));
    CHECK(clt_max_pool2d(t[1], (int64_t[]){2, 2}, NULL, NULL, NULL, 0, &t[2]));
    CHECK(clt_flatten(t[2], 1, -1, &t[3]));                       /* [2, 8] */
    CHECK(clt_permute(t[3], 2, (int[]){1, 0}, &t[4]));            /* [8, 2] */
    CHECK(clt_index_select(t[4], 0, idx, &t[5]));                 /* [3, 2] */
    CHECK(clt_narrow(t[4], 0, 1, 3, &t[6]));                      /* [3, 2] */
    CHECK(clt_cat((const clt_tensor *[]){t[5], t[6]}, 2, 1, &t[7])); /* [3, 4] */
    CHECK(clt_masked_fill(t[7], mask, 0.0, &t[8]));
    CHECK(clt_cross_entropy(t[8], lab, NULL, &t[9]));
    /* flatten's, permute's and cat's formulas make views: they launch nothing */
    clt_tensor *launching[] = {t[0], t[1], t[2], t[5], t[6], t[8], t[9]};
    backward_failures_name_nodes(t[9], x, launching, 7);
    for (int i = 0; i < 10; i++)
        clt_tensor_free(t[i]);
    clt_tensor *rest[] = {x, w, idx, lab, mask};
    for (size_t i = 0; i < 5; i++)
        clt_tensor_free(rest[i]);
}

/* Calls that compute with reductions inside (var's means, clipping's sums
 * and norm) name themselves alone whichever driver call fails. */
Test(errors, driver_failures_in_reductions_name_the_call, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    graph gr = {0};
    gr.a = ramp(dev, CLT_FLOAT32, 2, (int64_t[]){6, 5});
    clt_tensor *sq, *v = NULL;
    CHECK(clt_set_requires_grad(gr.a, 1));
    CHECK(clt_mul(gr.a, gr.a, &sq));
    CHECK(clt_sum(sq, &gr.s));
    CHECK(clt_backward(gr.s, NULL, 0));
    static const struct {
        const char *fn;
        int which;
    } calls[] = {{"clt_var_dim", 0}, {"clt_clip_grad_norm", 1}};
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        int failures = 0;
        for (long pass = 0;; pass++) {
            if (!calls[c].which) {
                clt_tensor_free(v);
                v = NULL;
            }
            clt__driver_refuse_at(pass);
            /* a huge max_norm: the gradient is not clipped, and stays as it is */
            clt_status st = calls[c].which ? clip(&gr) : clt_var_dim(gr.a, 0, 1.0, 0, &v);
            long left = clt__driver_refuse_at(-1);
            if (left >= 0) {
                CHECK(st);
                break;
            }
            cr_assert_neq(st, CLT_OK, "%s: driver call %ld was refused and no failure came back",
                          calls[c].fn, pass);
            cr_assert(strstr(clt_last_error(), "CL_OUT_OF_RESOURCES"), "%s",
                      clt_last_error());
            names_only(calls[c].fn);
            failures++;
        }
        cr_assert_geq(failures, 3, "%s: %d failures", calls[c].fn, failures);
    }
    double norm = 0, want = 0;
    CHECK(clt_tensor_item(gr.norm, &norm));
    for (int i = 0; i < 30; i++)
        want += 4.0 * i * i; /* the gradient is 2 a */
    cr_assert_float_eq(norm, sqrt(want), 1e-4 * sqrt(want));
    float *h = read_f32(v);
    for (int k = 0; k < 5; k++) { /* column k of a: k, k + 5, ..., k + 25 */
        double mean = k + 12.5, ss = 0;
        for (int i = 0; i < 6; i++)
            ss += (k + 5.0 * i - mean) * (k + 5.0 * i - mean);
        cr_assert_float_eq(h[k], ss / 5.0, 1e-4, "var of column %d: %g", k, (double)h[k]);
    }
    free(h);
    clt_tensor *ts[] = {gr.a, gr.s, gr.norm, sq, v};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* Conv2d, BatchNorm2d, ReLU, Flatten, Linear (without bias: the general
 * composition), LayerNorm, Dropout and BatchNorm1d, in training, drawing
 * from gen (which Dropout keeps using). */
static clt_module *composite_model(clt_device *dev, clt_generator *gen)
{
    clt_module *m[8], *seq = NULL;
    CHECK(clt_conv2d_layer(dev, 1, 2, 3, 3, NULL, 1, gen, &m[0])); /* [3, 2, 2, 2] */
    CHECK(clt_batch_norm2d_layer(dev, 2, 1e-5, 0.1, 1, 1, &m[1]));
    CHECK(clt_relu_layer(&m[2]));
    CHECK(clt_flatten_layer(1, -1, &m[3])); /* [3, 8] */
    CHECK(clt_linear(dev, 8, 6, 0, gen, &m[4]));
    CHECK(clt_layer_norm_layer(dev, 1, (int64_t[]){6}, 1e-5, 1, &m[5]));
    CHECK(clt_dropout_layer(0.25, gen, &m[6]));
    CHECK(clt_batch_norm1d_layer(dev, 6, 1e-5, 0.1, 1, 1, &m[7]));
    CHECK(clt_sequential(m, 8, &seq));
    clt_module_train(seq, 1);
    return seq;
}

static uint64_t device_requested(clt_device *dev)
{
    clt_memory_stats s;
    CHECK(clt_memory_stats_get(dev, &s));
    return s.requested;
}

/* call with each of its driver calls failing in turn: every failure names
 * fn alone (then, for a forward, the layer), hands out nothing (*out NULL)
 * and leaves no tensor behind.  Returns the failures; seen[k] counts those
 * naming "fn: layers[k]: ". */
static int driver_failures(clt_device *dev, clt_status (*call)(void *), void *arg,
                           clt_tensor **out, const char *fn, const char *const *layers,
                           int *seen)
{
    int failures = 0;
    for (long pass = 0;; pass++) {
        clt_tensor_free(*out);
        *out = NULL;
        uint64_t before = device_requested(dev);
        clt__driver_refuse_at(pass);
        clt_status st = call(arg);
        long left = clt__driver_refuse_at(-1);
        if (left >= 0) {
            CHECK(st);
            return failures;
        }
        failures++;
        cr_assert_neq(st, CLT_OK, "%s: driver call %ld was refused and no failure came back",
                      fn, pass);
        cr_assert_null(*out, "%s: driver call %ld: a failure handed out a result", fn, pass);
        names_only(fn);
        const char *m = clt_last_error();
        cr_assert(strstr(m, "CL_OUT_OF_RESOURCES"), "driver call %ld: %s", pass, m);
        for (size_t k = 0; layers && layers[k]; k++) {
            char prefix[96];
            snprintf(prefix, sizeof prefix, "%s: %s: ", fn, layers[k]);
            seen[k] += strncmp(m, prefix, strlen(prefix)) == 0;
        }
        /* (the stats call clears the message) */
        uint64_t after = device_requested(dev);
        cr_assert_eq(after, before, "%s: driver call %ld left %lld bytes", fn, pass,
                     (long long)(after - before));
    }
}

typedef struct loss_call {
    clt_tensor *y, *labels, *l;
} loss_call;

static clt_status run_loss(void *arg)
{
    loss_call *c = arg;
    return clt_cross_entropy(c->y, c->labels, NULL, &c->l);
}

static clt_status run_step(void *arg)
{
    return clt_optimizer_step(arg);
}

static clt_status run_zero_grad(void *arg)
{
    return clt_optimizer_zero_grad(arg, 0);
}

/* Bit for bit equality of two tensors' values. */
static void same_values(const clt_tensor *a, const clt_tensor *b, const char *what)
{
    cr_assert_eq(clt_tensor_numel(a), clt_tensor_numel(b), "%s", what);
    float *ha = read_f32(a), *hb = read_f32(b);
    cr_assert(memcmp(ha, hb, clt_tensor_numel(a) * sizeof(float)) == 0,
              "%s: the values differ", what);
    free(ha);
    free(hb);
}

/* The layer constructors with each driver call failing in turn (the draw's
 * launch, the scaling's): every message names the constructor alone. */
Test(errors, driver_failures_in_layer_constructors_name_the_call, .timeout = 300)
{
    layer l = {get_device("cpu"), NULL};
    clt_tensor *none = NULL;
    for (constructor = 0; constructor < 3; constructor++) {
        CHECK(make_layer(&l)); /* builds the programs */
        clt_module_free(l.m);
        l.m = NULL;
        cr_assert_geq(driver_failures(l.dev, make_layer, &l, &none, constructors[constructor],
                                      NULL, NULL),
                      1, "%s", constructors[constructor]);
        cr_assert_not_null(l.m);
        clt_module_free(l.m);
        l.m = NULL;
    }
}

/* A forward through layers that compute with recording ops, and the loss
 * after it, with each driver call failing in turn: the messages name
 * clt_module_forward and then the layer ("clt_module_forward: LayerNorm:
 * ..."), or clt_cross_entropy, and never an op inside (clt_mean_dim,
 * clt_matmul, clt_rand, ...).  The failures change nothing: the forward
 * that then succeeds gives what the same model gives on its first try, and
 * the running statistics are the same. */
Test(errors, driver_failures_in_forward_name_the_layer, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = ramp(dev, CLT_FLOAT32, 4, (int64_t[]){3, 1, 4, 4}), *xs = NULL;
    CHECK(clt_mul_scalar(x, 0.125, &xs)); /* moderate values */
    clt_tensor *labels;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, (int64_t[]){4, 0, 2},
                               &labels));
    clt_generator *g1, *g2;
    CHECK(clt_generator_new(11, &g1));
    CHECK(clt_generator_new(11, &g2));
    forward ref = {composite_model(dev, g1), xs, NULL};
    forward f = {composite_model(dev, g2), xs, NULL};
    CHECK(run_forward(&ref)); /* builds every program the forward uses */
    static const char *const layers[] = {"Conv2d", "BatchNorm2d", "ReLU", "Linear",
                                         "LayerNorm", "Dropout", "BatchNorm1d", NULL};
    int seen[7] = {0};
    int failures = driver_failures(dev, run_forward, &f, &f.y, "clt_module_forward", layers,
                                   seen);
    for (int k = 0; layers[k]; k++)
        cr_assert_geq(seen[k], 1, "no failure named %s (%d failures)", layers[k], failures);
    same_values(f.y, ref.y, "the forward after the failures");
    clt_named_tensor *s1, *s2;
    size_t n1, n2;
    CHECK(clt_module_state(f.m, &s1, &n1));
    CHECK(clt_module_state(ref.m, &s2, &n2));
    cr_assert_eq(n1, n2);
    for (size_t i = 0; i < n1; i++)
        if (clt_tensor_dtype(s1[i].tensor) == CLT_FLOAT32)
            same_values(s1[i].tensor, s2[i].tensor, s1[i].name);
    clt_free(s1);
    clt_free(s2);

    loss_call c = {f.y, labels, NULL};
    cr_assert_geq(driver_failures(dev, run_loss, &c, &c.l, "clt_cross_entropy", NULL, NULL), 1);
    clt_tensor *lref = NULL;
    CHECK(clt_cross_entropy(ref.y, labels, NULL, &lref));
    same_values(c.l, lref, "the loss after the failures");

    /* the optimizer's calls (its state made by a first step) */
    clt_tensor **ps, *none = NULL;
    size_t np;
    clt_optimizer *opt;
    CHECK(clt_module_parameters(f.m, &ps, &np));
    CHECK(clt_sgd(ps, np, &(clt_sgd_opts){0.1, 0.9, 0.0, 0.0, 0}, &opt));
    CHECK(clt_backward(c.l, NULL, 0));
    CHECK(clt_optimizer_step(opt));
    cr_assert_geq(driver_failures(dev, run_step, opt, &none, "clt_optimizer_step", NULL, NULL),
                  1);
    cr_assert_geq(driver_failures(dev, run_zero_grad, opt, &none, "clt_optimizer_zero_grad",
                                  NULL, NULL),
                  1);
    clt_tensor *g0 = NULL;
    CHECK(clt_grad(ps[0], &g0));
    float *hg = read_f32(g0);
    for (int64_t i = 0; i < clt_tensor_numel(g0); i++)
        cr_assert_eq(hg[i], 0.0f, "gradient [%lld] not zeroed: %g", (long long)i, (double)hg[i]);
    free(hg);
    clt_tensor_free(g0);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_tensor *ts[] = {c.l, lref, f.y, ref.y, x, xs, labels};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
    clt_module_free(f.m);
    clt_module_free(ref.m);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

typedef struct gn_call {
    clt_tensor *x, *w, *b, *y;
} gn_call;

static clt_status run_group_norm(void *arg)
{
    gn_call *c = arg;
    return clt_group_norm(c->x, 2, c->w, c->b, 1e-5, &c->y);
}

/* clt_group_norm (a composite of recording ops) on a transposed input,
 * with the weight requiring grad, with each driver call failing in turn:
 * every message names clt_group_norm alone, nothing is handed out or left
 * behind, and the call that then succeeds gives the first try's values. */
Test(errors, driver_failures_in_group_norm_name_the_call, .timeout = 300)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = ramp(dev, CLT_FLOAT32, 4, (int64_t[]){2, 4, 3, 5}), *xt;
    CHECK(clt_transpose(x, -1, -2, &xt));
    cr_assert(!clt_tensor_is_contiguous(xt), "the input should need a copy");
    gn_call c = {xt, ramp(dev, CLT_FLOAT32, 1, (int64_t[]){4}),
                 ramp(dev, CLT_FLOAT32, 1, (int64_t[]){4}), NULL};
    CHECK(clt_set_requires_grad(c.w, 1));
    CHECK(run_group_norm(&c)); /* builds every program it uses */
    clt_tensor *ref = c.y;
    c.y = NULL;
    cr_assert_geq(driver_failures(dev, run_group_norm, &c, &c.y, "clt_group_norm", NULL, NULL),
                  1);
    same_values(c.y, ref, "clt_group_norm after the failures");
    clt_tensor *ts[] = {x, xt, c.w, c.b, c.y, ref};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* The message must hold no raw control byte and stay small, whatever the
 * caller's string. */
static void expect_tame_message(const char *want)
{
    const char *m = clt_last_error();
    for (const char *c = m; *c; c++)
        cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "raw byte 0x%02x in: %s",
                  (unsigned char)*c, m);
    cr_assert_lt(strlen(m), 2000, "message of %zu bytes", strlen(m));
    cr_assert(strstr(m, want) != NULL, "'%s' not in: %s", want, m);
}

/* A 1 MiB string of 'a' (the caller frees it), and in want the first 150
 * bytes of it, which a message quoting it must hold before its cut. */
static char *huge_string(char want[256])
{
    size_t big = 1 << 20;
    char *huge = malloc(big + 1);
    cr_assert_not_null(huge);
    memset(huge, 'a', big);
    huge[big] = '\0';
    memset(want, 'a', 150);
    want[150] = '\0';
    return huge;
}

Test(errors, caller_strings_are_quoted)
{
    char want[256];
    char *huge = huge_string(want);

    clt_dtype dt;
    cr_assert_eq(clt_dtype_parse("float\n32", &dt), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("unknown dtype 'float\\x0a32'");
    cr_assert_eq(clt_dtype_parse("\x1b[31mred", &dt), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("unknown dtype '\\x1b[31mred'");
    cr_assert_eq(clt_dtype_parse(huge, &dt), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message(want);
    expect_tame_message("...'");

    clt_array_spec *spec = (clt_array_spec *)1;
    cr_assert_eq(clt_load_npy_host("/nonexistent/a\n\x1b[31m.npy", &spec), CLT_ERR_IO);
    cr_assert_null(spec);
    expect_tame_message("/nonexistent/a\\x0a\\x1b[31m.npy");
    cr_assert_eq(clt_load_npy_host(huge, &spec), CLT_ERR_IO);
    expect_tame_message(want);

    clt_device *dev = (clt_device *)1;
    clt_status st = clt_device_get("\x1b[31mcpu\n", &dev);
    if (st != CLT_ERR_NO_PLATFORM) {
        cr_assert_eq(st, CLT_ERR_UNKNOWN_KIND);
        cr_assert_null(dev);
        expect_tame_message("unknown device kind '\\x1b[31mcpu\\x0a'");
        cr_assert_eq(clt_device_get(huge, &dev), CLT_ERR_UNKNOWN_KIND);
        expect_tame_message(want);
    }
    free(huge);

    /* The helper itself: escapes and the cut. */
    char q[CLT__QUOTE_SIZE];
    cr_assert_str_eq(CLT__QUOTE(q, "a\tb\x7f" "c\xff"), "a\\x09b\\x7fc\\xff");
    cr_assert_str_eq(CLT__QUOTE(q, "caf\xc3\xa9"), "caf\xc3\xa9");
    char small[12];
    cr_assert_str_eq(clt__quote(small, sizeof small, "abcdefghijkl", 12), "abcdefgh...");
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(p, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* Paths and names in the messages of saving and loading, after the file
 * opened as well as before: a newline and an escape sequence come back
 * as \xNN, a 1 MiB path is cut. */
Test(errors, io_strings_are_quoted)
{
    clt_device *dev = get_device("cpu");
    char dir[] = "/tmp/cltensor-quote-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char want[256];
    char *huge = huge_string(want);
    char p[4096], q[4096];

    /* failing saves: a directory that is not there, a directory in the
     * place of the file, a name given twice, a 1 MiB path */
    float v[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    clt_array_spec a = {v, CLT_FLOAT32, 1, shape};
    snprintf(p, sizeof p, "%s/no\n\x1b[31m/x.npy", dir);
    cr_assert_eq(clt_save_npy_host(p, &a), CLT_ERR_IO);
    expect_tame_message("/no\\x0a\\x1b[31m/x.npy");
    cr_assert_eq(clt_save_npy_host(huge, &a), CLT_ERR_IO);
    expect_tame_message(want);
    snprintf(p, sizeof p, "%s/d\n\x1b[31m", dir);
    cr_assert_eq(mkdir(p, 0700), 0, "mkdir: %s", strerror(errno));
    clt_tensor *t;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, shape, v, &t));
    clt_named_tensor one[2] = {{"w", t}, {"w\x01\n", t}};
    cr_assert_eq(clt_save_safetensors(p, one, 1), CLT_ERR_IO);
    expect_tame_message("/d\\x0a\\x1b[31m: not a regular file");
    one[0].name = "w\x01\n";
    snprintf(q, sizeof q, "%s/twice\n.safetensors", dir);
    cr_assert_eq(clt_save_safetensors(q, one, 2), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("/twice\\x0a.safetensors: the name 'w\\x01\\x0a' is given twice");
    clt_module *m;
    CHECK(clt_linear(dev, 2, 3, 1, NULL, &m));
    cr_assert_eq(clt_module_save(m, huge), CLT_ERR_IO);
    expect_tame_message(want);

    /* failing loads of files that open: not .npy, not safetensors; a
     * path of nearly 4 KiB (as long as open takes) is cut too */
    snprintf(p, sizeof p, "%s/bad\n\x1b[31m.npy", dir);
    write_bytes(p, "not a file of tensors", 21);
    clt_array_spec *spec = (clt_array_spec *)1;
    cr_assert_eq(clt_load_npy_host(p, &spec), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(spec);
    expect_tame_message("/bad\\x0a\\x1b[31m.npy: ");
    clt_named_tensor *got = (clt_named_tensor *)1;
    size_t n = 9;
    cr_assert_eq(clt_load_safetensors(p, dev, &got, &n), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(got);
    expect_tame_message("/bad\\x0a\\x1b[31m.npy: ");
    cr_assert_eq(clt_module_load(m, p), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("/bad\\x0a\\x1b[31m.npy: ");
    size_t len = (size_t)snprintf(q, sizeof q, "%s/", dir);
    while (len + 2 + 20 < 4000) {
        memcpy(q + len, "./", 2);
        len += 2;
    }
    snprintf(q + len, sizeof q - len, "bad\n\x1b[31m.npy");
    cr_assert_eq(clt_load_npy_host(q, &spec), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("/./././...");
    cr_assert_eq(clt_module_load(m, q), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("/./././...");
    cr_assert_eq(clt_module_load(m, huge), CLT_ERR_IO);
    expect_tame_message(want);
    cr_assert_eq(clt_load_safetensors(huge, dev, &got, &n), CLT_ERR_IO);
    expect_tame_message(want);

    /* a checkpoint whose key holds a control character: Linear(2, 3)'s
     * bias is missing, the file's "b\u0001ias" unexpected */
    char h[160];
    int hl = snprintf(h, sizeof h, "{\"weight\":{\"dtype\":\"F32\",\"shape\":[3,2],"
                      "\"data_offsets\":[0,24]},\"b\\u0001ias\":{\"dtype\":\"F32\","
                      "\"shape\":[3],\"data_offsets\":[24,36]}}");
    while (hl % 8 != 0)
        h[hl++] = ' ';
    unsigned char file[8 + 160 + 36] = {0};
    for (int k = 0; k < 8; k++)
        file[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(file + 8, h, (size_t)hl);
    snprintf(p, sizeof p, "%s/ctl\n.safetensors", dir);
    write_bytes(p, file, 8 + (size_t)hl + 36);
    cr_assert_eq(clt_module_load(m, p), CLT_ERR_INVALID_ARGUMENT);
    expect_tame_message("/ctl\\x0a.safetensors: missing key(s) in state: bias; unexpected "
                        "key(s) in state: b\\x01ias");

    clt_module_free(m);
    clt_tensor_free(t);
    free(huge);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
