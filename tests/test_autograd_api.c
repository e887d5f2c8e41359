/* test_autograd_api.c: custom autograd functions (clt_function_apply),
 * torch.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) and
 * clt_gradcheck / clt_gradgradcheck, against host computations in double:
 * finite differences for the custom functions' gradients, analytic
 * Jacobians and Hessians of known functions, and one SGD step of a model
 * with a custom function inside. */
#include "helpers.h"

static const int64_t sh3[1] = {3}, sh22[2] = {2, 2};
static char sentinel_byte;
#define SENTINEL_TENSOR ((const clt_tensor *)(void *)&sentinel_byte)

static clt_tensor *leaf(clt_device *dev, int nd, const int64_t *shape, const double *v, int grad)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    if (grad)
        CHECK(clt_set_requires_grad(t, 1));
    return t;
}

static void expect_values(const clt_tensor *t, const double *want, size_t n, double tol,
                          const char *what)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld elements, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t k = 0; k < n; k++)
        cr_expect(fabs(got[k] - want[k]) <= tol * (1 + fabs(want[k])), "%s[%zu] = %.12g, want %.12g",
                  what, k, got[k], want[k]);
    free(got);
}

/* ---- a custom function: MulAdd(a, b) = (a * b + a^2, a - b) ------------------ */

typedef struct seen {
    int needs[2];
    int calls;
    int wrong;      /* backward gives a wrong gradient for a */
    int fail;       /* backward fails */
    int nondiff;    /* forward marks output 1 non-differentiable */
} seen;

static clt_status muladd_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *in,
                                 size_t n, clt_tensor **out, size_t *m)
{
    seen *s = user;
    clt_tensor *ab = NULL, *aa = NULL;
    cr_assert_eq(n, 2);
    cr_assert_eq(clt_is_grad_enabled(), 0, "forward runs with grad mode off");
    const clt_tensor *save[2] = {in[0], in[1]};
    CHECK(clt_function_save_for_backward(ctx, save, 2));
    CHECK(clt_mul(in[0], in[1], &ab));
    CHECK(clt_mul(in[0], in[0], &aa));
    CHECK(clt_add(ab, aa, &out[0]));
    CHECK(clt_sub(in[0], in[1], &out[1]));
    clt_tensor_free(ab);
    clt_tensor_free(aa);
    if (s && s->nondiff)
        CHECK(clt_function_mark_non_differentiable(ctx, 1));
    *m = 2;
    return CLT_OK;
}

/* ga = g0 (b + 2a) + g1, gb = g0 a - g1, with recording ops so that a pass
 * with create_graph differentiates through it. */
static clt_status muladd_backward(clt_function_ctx *ctx, void *user, const clt_tensor *const *g,
                                  size_t m, clt_tensor **gi, size_t n)
{
    seen *s = user;
    const clt_tensor *a = NULL, *b = NULL;
    clt_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL;
    cr_assert_eq(m, 2);
    cr_assert_eq(n, 2);
    if (s) {
        s->calls++;
        s->needs[0] = clt_function_needs_input_grad(ctx, 0);
        s->needs[1] = clt_function_needs_input_grad(ctx, 1);
        if (s->fail)
            return clt_mul(g[0], NULL, &t1); /* fails, with the library's message */
    }
    CHECK(clt_function_saved_tensor(ctx, 0, &a));
    CHECK(clt_function_saved_tensor(ctx, 1, &b));
    CHECK(clt_mul_scalar(a, s && s->wrong ? 2.5 : 2.0, &t1));
    CHECK(clt_add(t1, b, &t2));
    CHECK(clt_mul(g[0], t2, &t3));
    CHECK(clt_add(t3, g[1], &gi[0]));
    clt_tensor_free(t1);
    clt_tensor_free(t2);
    clt_tensor_free(t3);
    CHECK(clt_mul(g[0], a, &t1));
    CHECK(clt_sub(t1, g[1], &gi[1]));
    clt_tensor_free(t1);
    return CLT_OK;
}

static int frees;

static void count_free(void *p)
{
    (void)p;
    frees++;
}

static const clt_function muladd = {"MulAdd", muladd_forward, muladd_backward, NULL, 0};

/* L = sum(w0 * out0 + w1 * out1) on the host. */
static double muladd_loss(const double *a, const double *b, const double *w0, const double *w1,
                          size_t n)
{
    double l = 0;
    for (size_t k = 0; k < n; k++)
        l += w0[k] * (a[k] * b[k] + a[k] * a[k]) + w1[k] * (a[k] - b[k]);
    return l;
}

static clt_tensor *weighted_loss(clt_tensor *const *outs, const double *w0, const double *w1,
                                 clt_device *dev)
{
    clt_tensor *tw0 = leaf(dev, 1, sh3, w0, 0), *tw1 = leaf(dev, 1, sh3, w1, 0);
    clt_tensor *p0 = NULL, *p1 = NULL, *s = NULL, *l = NULL;
    CHECK(clt_mul(outs[0], tw0, &p0));
    CHECK(clt_mul(outs[1], tw1, &p1));
    CHECK(clt_add(p0, p1, &s));
    CHECK(clt_sum(s, &l));
    clt_tensor_free(tw0);
    clt_tensor_free(tw1);
    clt_tensor_free(p0);
    clt_tensor_free(p1);
    clt_tensor_free(s);
    return l;
}

static void free_outs(clt_tensor **outs, size_t m)
{
    for (size_t k = 0; k < m; k++)
        clt_tensor_free(outs[k]);
    clt_free(outs);
}

Test(function, gradients_match_finite_differences)
{
    clt_device *dev = get_device("cpu:0");
    double a[3] = {0.5, -1.25, 2.0}, b[3] = {1.5, 0.75, -0.5};
    const double w0[3] = {1.0, -2.0, 0.5}, w1[3] = {0.25, 1.0, -1.5};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, a, 1), leaf(dev, 1, sh3, b, 1)};
    seen sv = {0}, *s = &sv;
    clt_function fn = muladd;
    fn.free_user = count_free;
    frees = 0;
    clt_tensor **outs = NULL;
    size_t m = 0;
    CHECK(clt_function_apply(&fn, s, in, 2, &outs, &m));
    cr_assert_eq(m, 2);
    cr_expect_str_eq(clt_grad_fn_name(outs[0]), "MulAddBackward");
    cr_expect_str_eq(clt_grad_fn_name(outs[1]), "MulAddBackward");
    clt_tensor *l = weighted_loss(outs, w0, w1, dev);
    cr_expect_eq(frees, 0);
    CHECK(clt_backward(l, NULL, 0));
    cr_expect_eq(frees, 1, "user freed with the saved state");
    cr_expect_eq(s->calls, 1);
    cr_expect(s->needs[0] && s->needs[1]);
    double *x[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        double fd[3];
        for (int k = 0; k < 3; k++) {
            double keep = x[i][k], h = 1e-6;
            x[i][k] = keep + h;
            double up = muladd_loss(a, b, w0, w1, 3);
            x[i][k] = keep - h;
            double down = muladd_loss(a, b, w0, w1, 3);
            x[i][k] = keep;
            fd[k] = (up - down) / (2 * h);
        }
        clt_tensor *g = NULL;
        CHECK(clt_grad(in[i], &g));
        cr_assert_not_null(g);
        expect_values(g, fd, 3, 1e-7, i ? "grad b" : "grad a");
        clt_tensor_free(g);
    }
    clt_tensor_free(l);
    free_outs(outs, m);
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
}

Test(function, needs_input_grad_and_non_differentiable_outputs)
{
    clt_device *dev = get_device("cpu:0");
    const double a[3] = {0.5, -1.25, 2.0}, b[3] = {1.5, 0.75, -0.5};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, a, 1), leaf(dev, 1, sh3, b, 0)};
    seen s = {.nondiff = 1};
    clt_tensor **outs = NULL, *l = NULL, *g = NULL;
    size_t m = 0;
    CHECK(clt_function_apply(&muladd, &s, in, 2, &outs, &m));
    cr_expect(clt_requires_grad(outs[0]));
    cr_expect(!clt_requires_grad(outs[1]), "a non-differentiable output requires no grad");
    CHECK(clt_sum(outs[0], &l));
    CHECK(clt_backward(l, NULL, 0));
    cr_expect_eq(s.needs[0], 1);
    cr_expect_eq(s.needs[1], 0);
    CHECK(clt_grad(in[0], &g));
    double want[3];
    for (int k = 0; k < 3; k++)
        want[k] = b[k] + 2 * a[k]; /* output 1's gradient came as zeros */
    expect_values(g, want, 3, 1e-12, "grad a");
    clt_tensor_free(g);
    clt_tensor_free(l);
    free_outs(outs, m);
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
}

Test(function, errors_propagate)
{
    clt_device *dev = get_device("cpu:0");
    const double a[3] = {0.5, -1.25, 2.0}, b[3] = {1.5, 0.75, -0.5};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, a, 1), leaf(dev, 1, sh3, b, 1)};
    seen s = {.fail = 1};
    clt_tensor **outs = NULL, *l = NULL;
    size_t m = 0;
    CHECK(clt_function_apply(&muladd, &s, in, 2, &outs, &m));
    CHECK(clt_sum(outs[0], &l));
    clt_status st = clt_backward(l, NULL, 1);
    assert_error(st, CLT_ERR_NULL_ARGUMENT, "MulAddBackward");
    cr_expect(strstr(clt_last_error(), "clt_mul") != NULL, "the callback's message: %s",
              clt_last_error());
    /* A saved input changed in place: the version check. */
    s.fail = 0;
    int was = clt_set_grad_enabled(0);
    CHECK(clt_add_(in[1], in[1], 1.0));
    clt_set_grad_enabled(was);
    assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "modified by an in-place operation");
    clt_tensor_free(l);
    free_outs(outs, m);
    /* Bad names and a forward marking an output it does not give. */
    clt_function bad = muladd;
    bad.name = "no spaces";
    outs = (clt_tensor **)1;
    assert_error(clt_function_apply(&bad, NULL, in, 2, &outs, &m), CLT_ERR_INVALID_ARGUMENT,
                 "name");
    cr_expect_null(outs);
    cr_expect_eq(m, 0);
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
}

/* Cube(x) = x^3, backward 3 x^2 g with recording ops; once_differentiable
 * in `once_cube`. */
static clt_status cube_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *in,
                               size_t n, clt_tensor **out, size_t *m)
{
    (void)user;
    (void)n;
    const clt_tensor *x = in[0];
    CHECK(clt_function_save_for_backward(ctx, &x, 1));
    *m = 1;
    return clt_pow_scalar(in[0], 3.0, &out[0]);
}

static clt_status cube_backward(clt_function_ctx *ctx, void *user, const clt_tensor *const *g,
                                size_t m, clt_tensor **gi, size_t n)
{
    (void)m;
    (void)n;
    const double *scale = user;
    const clt_tensor *x = NULL;
    clt_tensor *sq = NULL, *t = NULL;
    CHECK(clt_function_saved_tensor(ctx, 0, &x));
    CHECK(clt_mul(x, x, &sq));
    CHECK(clt_mul_scalar(sq, scale ? *scale : 3.0, &t));
    CHECK(clt_mul(t, g[0], &gi[0]));
    clt_tensor_free(sq);
    clt_tensor_free(t);
    return CLT_OK;
}

static const clt_function cube = {"Cube", cube_forward, cube_backward, NULL, 0};
static const clt_function once_cube = {"OnceCube", cube_forward, cube_backward, NULL, 1};

/* A saved input that belongs to an open scope goes with the scope: saving
 * must not take it out of its scope (it did, and the input, its history
 * and their device memory stayed allocated for good). */
Test(function, saved_input_of_a_scope_is_released_with_it)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    const double xs[3] = {1, 2, 3};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, xs);
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_scope_begin());
    clt_tensor *a = NULL, **outs = NULL;
    size_t m = 0;
    CHECK(clt_mul_scalar(x, 2.0, &a)); /* the scope's */
    CHECK(clt_function_apply(&cube, NULL, &a, 1, &outs, &m));
    cr_assert_eq(m, 1);
    clt_tensor_free(outs[0]);
    clt_free(outs);
    clt_scope_end();
    clt_tensor_free(x);
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.allocated, before.allocated, "%llu bytes still allocated, %llu before",
                 (unsigned long long)after.allocated, (unsigned long long)before.allocated);
}

/* sum(Cube(x)), as a functional-API function; user: the clt_function. */
static clt_status sum_cube(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                           size_t *m)
{
    (void)n;
    clt_tensor **o = NULL;
    size_t k = 0;
    clt_status st = clt_function_apply(user, NULL, in, 1, &o, &k);
    if (st != CLT_OK)
        return st;
    st = clt_sum(o[0], &out[0]);
    free_outs(o, k);
    *m = 1;
    return st;
}

Test(function, create_graph_through_backward)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0};
    clt_tensor *in = leaf(dev, 1, sh3, x, 1), **h = NULL;
    CHECK(clt_hessian(sum_cube, (void *)&cube, &in, 1, NULL, &h));
    double want[9] = {0};
    for (int k = 0; k < 3; k++)
        want[k * 3 + k] = 6 * x[k];
    expect_values(h[0], want, 9, 1e-12, "hessian of sum(Cube(x))");
    free_outs(h, 1);
    /* once_differentiable: the second derivative is refused, not zero. */
    clt_status st = clt_hessian(sum_cube, (void *)&once_cube, &in, 1, NULL, &h);
    assert_error(st, CLT_ERR_INVALID_ARGUMENT, "OnceCubeBackward");
    cr_expect_null(h);
    clt_tensor_free(in);
}

/* Ident(x) = x: forward returns its input (retained), backward passes the
 * gradient on as it came. */
static clt_status ident_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *in,
                                size_t n, clt_tensor **out, size_t *m)
{
    (void)ctx;
    (void)user;
    (void)n;
    out[0] = clt_tensor_retain(in[0]);
    *m = 1;
    return CLT_OK;
}

static clt_status ident_backward(clt_function_ctx *ctx, void *user, const clt_tensor *const *g,
                                 size_t m, clt_tensor **gi, size_t n)
{
    (void)ctx;
    (void)user;
    (void)m;
    (void)n;
    gi[0] = (clt_tensor *)g[0];
    return CLT_OK;
}

Test(function, identity_passes_its_input_and_gradient_on)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0};
    const clt_function ident = {"Ident", ident_forward, ident_backward, NULL, 0};
    clt_tensor *in = leaf(dev, 1, sh3, x, 1), **y = NULL, *sq = NULL, *l = NULL, *g = NULL;
    size_t m = 0;
    CHECK(clt_function_apply(&ident, NULL, &in, 1, &y, &m));
    cr_assert(y[0] != in, "a handle of its own");
    CHECK(clt_mul(y[0], y[0], &sq));
    CHECK(clt_sum(sq, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(in, &g));
    const double want[3] = {1.0, -3.0, 4.0};
    expect_values(g, want, 3, 0, "grad of sum(Ident(x)^2)");
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(sq);
    free_outs(y, m);
    expect_values(in, x, 3, 0, "the input, still alive");
    clt_tensor_free(in);
}

/* A model with a custom function inside, one SGD step: W [2, 3], x [4, 3],
 * L = mean(Cube(x W^T)); W' = W - lr dL/dW, dL/dW[j, k] = sum_i 3 h_ij^2
 * x_ik / 8. */
Test(function, trains_one_step_inside_a_model)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sw[2] = {2, 3}, sx[2] = {4, 3};
    double w[6] = {0.1, -0.2, 0.3, 0.4, 0.05, -0.15};
    double x[12] = {1, 2, -1, 0.5, -0.5, 1.5, 2, 0, 1, -1, 1, 0.25};
    clt_tensor *tw = leaf(dev, 2, sw, w, 1), *tx = leaf(dev, 2, sx, x, 0);
    clt_tensor *wt = NULL, *h = NULL, **y = NULL, *l = NULL;
    size_t m = 0;
    clt_optimizer *opt = NULL;
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    CHECK(clt_sgd(&tw, 1, &so, &opt));
    CHECK(clt_transpose(tw, 0, 1, &wt));
    CHECK(clt_matmul(tx, wt, &h));
    CHECK(clt_function_apply(&cube, NULL, &h, 1, &y, &m));
    CHECK(clt_mean(y[0], &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_optimizer_step(opt));
    double want[6];
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 3; k++) {
            double g = 0;
            for (int i = 0; i < 4; i++) {
                double hij = 0;
                for (int q = 0; q < 3; q++)
                    hij += x[i * 3 + q] * w[j * 3 + q];
                g += 3 * hij * hij * x[i * 3 + k] / 8;
            }
            want[j * 3 + k] = w[j * 3 + k] - 0.1 * g;
        }
    expect_values(tw, want, 6, 1e-12, "W after one step");
    clt_optimizer_free(opt);
    clt_tensor_free(l);
    free_outs(y, m);
    clt_tensor_free(h);
    clt_tensor_free(wt);
    clt_tensor_free(tw);
    clt_tensor_free(tx);
}

/* ---- torch.autograd.functional --------------------------------------------------- */

/* f(x, y) = (x * y, sum(x^2)), x and y of 3 elements. */
static clt_status two_outputs(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                              size_t *m)
{
    (void)user;
    (void)n;
    clt_tensor *sq = NULL;
    CHECK(clt_mul(in[0], in[1], &out[0]));
    CHECK(clt_mul(in[0], in[0], &sq));
    CHECK(clt_sum(sq, &out[1]));
    clt_tensor_free(sq);
    *m = 2;
    return CLT_OK;
}

Test(functional, jacobian_of_known_functions)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0}, y[3] = {1.0, 0.25, -3.0};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, x, 0), leaf(dev, 1, sh3, y, 0)};
    clt_tensor **jac = NULL;
    size_t m = 0;
    CHECK(clt_jacobian(two_outputs, NULL, in, 2, NULL, &jac, &m));
    cr_assert_eq(m, 2);
    double dy[9] = {0}, dx[9] = {0}, two_x[3], zero[3] = {0};
    for (int k = 0; k < 3; k++) {
        dy[k * 3 + k] = y[k];
        dx[k * 3 + k] = x[k];
        two_x[k] = 2 * x[k];
    }
    assert_shape(jac[0], 2, (int64_t[]){3, 3});
    assert_shape(jac[3], 1, sh3);
    expect_values(jac[0], dy, 9, 1e-12, "d(x*y)/dx");
    expect_values(jac[1], dx, 9, 1e-12, "d(x*y)/dy");
    expect_values(jac[2], two_x, 3, 1e-12, "d sum(x^2)/dx");
    expect_values(jac[3], zero, 3, 0, "d sum(x^2)/dy (unused: zeros)");
    for (int k = 0; k < 4; k++)
        cr_expect(!clt_requires_grad(jac[k]), "detached without create_graph");
    free_outs(jac, 4);
    /* strict: output 1 does not depend on input 1. */
    clt_functional_opts strict = {0, 1};
    assert_error(clt_jacobian(two_outputs, NULL, in, 2, &strict, &jac, &m),
                 CLT_ERR_INVALID_ARGUMENT,
                 "Output 1 of the user-provided function is independent of input 1");
    cr_expect_null(jac);
    cr_expect_eq(m, 0);
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
}

/* f(A) = A * A for A [2, 2]: the Jacobian [2, 2, 2, 2] is 2 A[i, j] where
 * (i, j) = (k, l). */
static clt_status square(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                         size_t *m)
{
    (void)user;
    (void)n;
    *m = 1;
    return clt_mul(in[0], in[0], &out[0]);
}

Test(functional, jacobian_layout_is_out_shape_then_in_shape)
{
    clt_device *dev = get_device("cpu:0");
    const double a[4] = {1, -2, 0.5, 3};
    clt_tensor *in = leaf(dev, 2, sh22, a, 1), **jac = NULL;
    size_t m = 0;
    clt_functional_opts cg = {1, 0};
    CHECK(clt_jacobian(square, NULL, &in, 1, &cg, &jac, &m));
    assert_shape(jac[0], 4, (int64_t[]){2, 2, 2, 2});
    cr_expect(clt_requires_grad(jac[0]), "create_graph keeps the history");
    double want[16] = {0};
    for (int e = 0; e < 4; e++)
        want[e * 4 + e] = 2 * a[e];
    expect_values(jac[0], want, 16, 1e-12, "jacobian of A*A");
    free_outs(jac, 1);
    clt_tensor_free(in);
}

/* f(x, y) = sum(x^2 * y) + x0 x1. */
static clt_status quad(void *user, clt_tensor *const *in, size_t n, clt_tensor **out, size_t *m)
{
    (void)user;
    (void)n;
    clt_tensor *sq = NULL, *p = NULL, *s = NULL, *x0 = NULL, *x1 = NULL, *c = NULL;
    CHECK(clt_mul(in[0], in[0], &sq));
    CHECK(clt_mul(sq, in[1], &p));
    CHECK(clt_sum(p, &s));
    CHECK(clt_narrow(in[0], 0, 0, 1, &x0));
    CHECK(clt_narrow(in[0], 0, 1, 1, &x1));
    CHECK(clt_mul(x0, x1, &c));
    clt_tensor *cs = NULL;
    CHECK(clt_sum(c, &cs));
    CHECK(clt_add(s, cs, &out[0]));
    clt_tensor *all[] = {sq, p, s, x0, x1, c, cs};
    for (size_t k = 0; k < 7; k++)
        clt_tensor_free(all[k]);
    *m = 1;
    return CLT_OK;
}

/* The Hessian of quad, blocks [xx, xy; yx, yy], each 3 x 3. */
static void quad_hessian(const double *x, const double *y, double h[4][9])
{
    memset(h, 0, 4 * 9 * sizeof h[0][0]);
    for (int k = 0; k < 3; k++) {
        h[0][k * 3 + k] = 2 * y[k];
        h[1][k * 3 + k] = 2 * x[k];
        h[2][k * 3 + k] = 2 * x[k];
    }
    h[0][0 * 3 + 1] += 1;
    h[0][1 * 3 + 0] += 1;
}

Test(functional, hessian_and_its_products)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0}, y[3] = {1.0, 0.25, -3.0};
    const double vx[3] = {1.0, 2.0, -1.0}, vy[3] = {0.5, -0.5, 3.0};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, x, 0), leaf(dev, 1, sh3, y, 0)};
    clt_tensor *v[2] = {leaf(dev, 1, sh3, vx, 0), leaf(dev, 1, sh3, vy, 0)};
    double h[4][9];
    quad_hessian(x, y, h);
    clt_tensor **hess = NULL;
    CHECK(clt_hessian(quad, NULL, in, 2, NULL, &hess));
    for (int b = 0; b < 4; b++) {
        assert_shape(hess[b], 2, (int64_t[]){3, 3});
        expect_values(hess[b], h[b], 9, 1e-12, "hessian block");
    }
    free_outs(hess, 4);
    /* H v (hvp, by the double-backward trick) and v^T H (vhp): H is
     * symmetric, so both are the same. */
    double hv[2][3] = {{0}};
    const double *vv[2] = {vx, vy};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    hv[i][r] += h[i * 2 + j][r * 3 + c] * vv[j][c];
    for (int hvp = 0; hvp < 2; hvp++) {
        clt_tensor *out = NULL, **res = NULL;
        CHECK(hvp ? clt_hvp(quad, NULL, in, 2, v, NULL, &out, &res)
                  : clt_vhp(quad, NULL, in, 2, v, NULL, &out, &res));
        double f = 0;
        for (int k = 0; k < 3; k++)
            f += x[k] * x[k] * y[k];
        f += x[0] * x[1];
        expect_values(out, &f, 1, 1e-12, "f");
        expect_values(res[0], hv[0], 3, 1e-12, hvp ? "hvp x" : "vhp x");
        expect_values(res[1], hv[1], 3, 1e-12, hvp ? "hvp y" : "vhp y");
        clt_tensor_free(out);
        free_outs(res, 2);
    }
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
    clt_tensor_free(v[0]);
    clt_tensor_free(v[1]);
}

Test(functional, vjp_and_jvp)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0}, y[3] = {1.0, 0.25, -3.0};
    const double u0[3] = {1.0, -1.0, 2.0}, u1 = 0.5, vx[3] = {2, 1, -1}, vy[3] = {0, 3, 1};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, x, 0), leaf(dev, 1, sh3, y, 0)};
    clt_tensor *u[2] = {leaf(dev, 1, sh3, u0, 0), leaf(dev, 0, NULL, &u1, 0)};
    clt_tensor *v[2] = {leaf(dev, 1, sh3, vx, 0), leaf(dev, 1, sh3, vy, 0)};
    clt_tensor **outs = NULL, **res = NULL;
    size_t m = 0;
    CHECK(clt_vjp(two_outputs, NULL, in, 2, u, 2, NULL, &outs, &m, &res));
    cr_assert_eq(m, 2);
    double wx[3], wy[3], prod[3];
    for (int k = 0; k < 3; k++) {
        wx[k] = u0[k] * y[k] + u1 * 2 * x[k];
        wy[k] = u0[k] * x[k];
        prod[k] = x[k] * y[k];
    }
    expect_values(outs[0], prod, 3, 1e-12, "vjp's output 0");
    expect_values(res[0], wx, 3, 1e-12, "vjp x");
    expect_values(res[1], wy, 3, 1e-12, "vjp y");
    free_outs(outs, m);
    free_outs(res, 2);
    CHECK(clt_jvp(two_outputs, NULL, in, 2, v, NULL, &outs, &m, &res));
    cr_assert_eq(m, 2);
    double j0[3], j1 = 0;
    for (int k = 0; k < 3; k++) {
        j0[k] = y[k] * vx[k] + x[k] * vy[k];
        j1 += 2 * x[k] * vx[k];
    }
    expect_values(res[0], j0, 3, 1e-12, "jvp 0");
    expect_values(res[1], &j1, 1, 1e-12, "jvp 1");
    free_outs(outs, m);
    free_outs(res, 2);
    /* v of the wrong size, and v NULL for outputs that are not one scalar. */
    assert_error(clt_vjp(two_outputs, NULL, in, 2, v, 1, NULL, &outs, &m, &res),
                 CLT_ERR_INVALID_ARGUMENT, "v is a tuple of invalid length: should be 2 but got 1");
    cr_expect_null(outs);
    cr_expect_null(res);
    assert_error(clt_vjp(two_outputs, NULL, in, 2, NULL, 0, NULL, &outs, &m, &res),
                 CLT_ERR_INVALID_ARGUMENT, "The vector v can only be None");
    clt_tensor *bad[2] = {u[1], v[1]};
    assert_error(clt_jvp(two_outputs, NULL, in, 2, bad, NULL, &outs, &m, &res),
                 CLT_ERR_SHAPE_MISMATCH, "Entry 0 in v has invalid size");
    for (int k = 0; k < 2; k++) {
        clt_tensor_free(in[k]);
        clt_tensor_free(u[k]);
        clt_tensor_free(v[k]);
    }
}

/* ---- gradcheck -------------------------------------------------------------------- */

/* MulAdd through the functional signature; user: its seen (wrong or not). */
static clt_status muladd_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                            size_t *m)
{
    clt_tensor **o = NULL;
    size_t k = 0;
    clt_status st = clt_function_apply(&muladd, user, in, n, &o, &k);
    if (st != CLT_OK)
        return st;
    for (size_t i = 0; i < k; i++)
        out[i] = o[i];
    clt_free(o);
    *m = k;
    return CLT_OK;
}

Test(gradcheck, passes_right_and_catches_wrong_backward)
{
    clt_device *dev = get_device("cpu:0");
    const double a[3] = {0.5, -1.25, 2.0}, b[3] = {1.5, 0.75, -0.5};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, a, 1), leaf(dev, 1, sh3, b, 1)};
    seen right = {0}, wrong = {.wrong = 1};
    CHECK(clt_gradcheck(muladd_fn, &right, in, 2, NULL));
    CHECK(clt_gradgradcheck(muladd_fn, &right, in, 2, NULL, 0, NULL));
    clt_status st = clt_gradcheck(muladd_fn, &wrong, in, 2, NULL);
    /* d out0[0] / d a[0] = b0 + 2 a0 = 2.5; the wrong backward gives b0 + 2.5 a0. */
    assert_error(st, CLT_ERR_INVALID_ARGUMENT,
                 "Jacobian mismatch for output 0 with respect to input 0, at output element "
                 "(0), input element (0): numerical 2.5");
    cr_expect(strstr(clt_last_error(), "analytical 2.75") != NULL, "%s", clt_last_error());
    /* float32 inputs are refused. */
    clt_tensor *f = NULL;
    CHECK(clt_to_dtype(in[0], CLT_FLOAT32, &f));
    clt_tensor *fin[2] = {f, in[1]};
    assert_error(clt_gradcheck(muladd_fn, &right, fin, 2, NULL), CLT_ERR_DTYPE_MISMATCH,
                 "double precision");
    clt_tensor_free(f);
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
}

/* grad_outputs of an open scope stay the scope's: gradgradcheck must not
 * take them out of it (it did, and they stayed allocated for good). */
Test(gradcheck, gradgradcheck_leaves_grad_outputs_in_their_scope)
{
    clt_device *dev = get_device("cpu:0");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    const double x[3] = {0.5, -1.5, 2.0}, one[1] = {1.0};
    clt_tensor *in = leaf(dev, 1, sh3, x, 1);
    CHECK(clt_scope_begin());
    clt_tensor *go = tensor_of(dev, CLT_FLOAT64, 0, NULL, one); /* the scope's */
    CHECK(clt_set_requires_grad(go, 1));
    CHECK(clt_gradgradcheck(sum_cube, (void *)&cube, &in, 1, &go, 1, NULL));
    clt_scope_end();
    clt_tensor_free(in);
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.allocated, before.allocated, "%llu bytes still allocated, %llu before",
                 (unsigned long long)after.allocated, (unsigned long long)before.allocated);
}

Test(gradcheck, gradgradcheck_refuses_once_differentiable)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0};
    clt_tensor *in = leaf(dev, 1, sh3, x, 1);
    CHECK(clt_gradcheck(sum_cube, (void *)&once_cube, &in, 1, NULL));
    CHECK(clt_gradgradcheck(sum_cube, (void *)&cube, &in, 1, NULL, 0, NULL));
    assert_error(clt_gradgradcheck(sum_cube, (void *)&once_cube, &in, 1, NULL, 0, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "OnceCubeBackward");
    clt_tensor_free(in);
}

/* Forward asking too much of the ctx: user says what. */
static clt_status greedy_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *in,
                                 size_t n, clt_tensor **out, size_t *m)
{
    (void)n;
    const clt_tensor *seven[7] = {in[0], in[0], in[0], in[0], in[0], in[0], in[0]};
    const clt_tensor *got = SENTINEL_TENSOR;
    if (*(const int *)user == 0) {
        assert_error(clt_function_save_for_backward(ctx, seven, 7), CLT_ERR_INVALID_ARGUMENT,
                     "at most 6 tensors");
        assert_error(clt_function_saved_tensor(ctx, 0, &got), CLT_ERR_INVALID_ARGUMENT,
                     "in backward only");
        cr_expect_null(got);
    } else {
        CHECK(clt_function_mark_non_differentiable(ctx, 3));
    }
    *m = 1;
    return clt_mul_scalar(in[0], 2.0, &out[0]);
}

Test(function, ctx_misuse_is_refused)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0};
    const clt_function greedy = {"Greedy", greedy_forward, cube_backward, NULL, 0};
    clt_tensor *in = leaf(dev, 1, sh3, x, 1), **y = NULL;
    size_t m = 0;
    int mode = 0;
    CHECK(clt_function_apply(&greedy, &mode, &in, 1, &y, &m));
    free_outs(y, m);
    mode = 1;
    assert_error(clt_function_apply(&greedy, &mode, &in, 1, &y, &m), CLT_ERR_INVALID_ARGUMENT,
                 "output 3 was marked non-differentiable, but forward gave 1 outputs");
    cr_expect_null(y);
    cr_expect_eq(m, 0);
    clt_tensor_free(in);
}

/* f(x, y) = sum(x^2): the Hessian does not depend on y. */
static clt_status sum_sq_first(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                               size_t *m)
{
    (void)user;
    (void)n;
    clt_tensor *sq = NULL;
    CHECK(clt_mul(in[0], in[0], &sq));
    CHECK(clt_sum(sq, &out[0]));
    clt_tensor_free(sq);
    *m = 1;
    return CLT_OK;
}

Test(functional, strict_and_create_graph)
{
    clt_device *dev = get_device("cpu:0");
    const double x[3] = {0.5, -1.5, 2.0}, y[3] = {1, 2, 3};
    clt_tensor *in[2] = {leaf(dev, 1, sh3, x, 1), leaf(dev, 1, sh3, y, 0)};
    clt_tensor *out = NULL, **res = NULL, **h = NULL;
    clt_functional_opts strict = {0, 1}, cg = {1, 0};
    assert_error(clt_vhp(sum_sq_first, NULL, in, 2, in, &strict, &out, &res),
                 CLT_ERR_INVALID_ARGUMENT,
                 "The output of the user-provided function is independent of input 1");
    cr_expect_null(out);
    cr_expect_null(res);
    /* without strict: zeros for y; with create_graph the result keeps the
     * history of x (which requires grad) */
    CHECK(clt_hvp(sum_sq_first, NULL, in, 2, in, &cg, &out, &res));
    double two_x[3], zero[3] = {0};
    for (int k = 0; k < 3; k++)
        two_x[k] = 2 * x[k];
    expect_values(res[0], two_x, 3, 1e-12, "H v for x");
    expect_values(res[1], zero, 3, 0, "H v for y");
    cr_expect(clt_requires_grad(out), "f keeps its history with create_graph");
    clt_tensor_free(out);
    free_outs(res, 2);
    CHECK(clt_hessian(sum_sq_first, NULL, in, 2, &cg, &h));
    cr_expect_eq(clt_requires_grad(h[0]), 0, "2 I depends on nothing");
    free_outs(h, 4);
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
}

/* The identity, returning its input itself (retained, as the functional
 * API's contract asks). */
static clt_status same_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                          size_t *m)
{
    (void)user;
    (void)n;
    out[0] = clt_tensor_retain(in[0]);
    *m = 1;
    return CLT_OK;
}

/* An input of an open scope returned as an output stays the scope's: the
 * gradient checks and the functional API released the output with
 * clt_tensor_free, which took the scope's reference, so the scope never
 * freed the input (fuzz seed 3). The Jacobian is the identity. */
Test(gradcheck, input_returned_as_output_stays_in_its_scope)
{
    clt_device *dev = get_device("cpu:0");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    const double x[3] = {0.5, -1.5, 2.0};
    CHECK(clt_scope_begin());
    clt_tensor *in = tensor_of(dev, CLT_FLOAT64, 1, sh3, x); /* the scope's */
    CHECK(clt_set_requires_grad(in, 1));
    CHECK(clt_gradcheck(same_fn, NULL, &in, 1, NULL));
    clt_tensor **jac = NULL;
    size_t m = 0;
    CHECK(clt_jacobian(same_fn, NULL, &in, 1, NULL, &jac, &m));
    cr_assert_eq(m, 1);
    double j[9];
    CHECK(clt_tensor_read(jac[0], j, sizeof j));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            cr_assert_eq(j[r * 3 + c], r == c ? 1.0 : 0.0, "jac[%d][%d] = %g", r, c,
                         j[r * 3 + c]);
    clt_tensor_free(jac[0]);
    clt_free(jac);
    clt_scope_end();
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.allocated, before.allocated, "%llu bytes still allocated, %llu before",
                 (unsigned long long)after.allocated, (unsigned long long)before.allocated);
}
