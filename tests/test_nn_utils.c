/* test_nn_utils.c: module hooks (forward pre-hooks, forward hooks, full
 * backward hooks) called in torch's order with the right tensors;
 * weight_norm and spectral_norm forwards against host references in
 * double and their gradients against finite differences; their state
 * names; parameters_to_vector and vector_to_parameters. */
#include "helpers.h"

#include <stdio.h>

enum { IN = 3, OUT = 4, N = 2 };

static clt_device *dev;

static void setup(void)
{
    dev = get_device("cpu");
}

TestSuite(nn_utils, .init = setup);

/* clt_tensor_write under no_grad (a parameter is a leaf that requires grad). */
static void put(clt_tensor *t, const double *v, size_t bytes)
{
    int was = clt_set_grad_enabled(0);
    CHECK(clt_tensor_write(t, v, bytes));
    clt_set_grad_enabled(was);
}

/* A float64 Linear(IN, OUT) with known weight and bias. */
static clt_module *linear64(double *w, double *b)
{
    clt_module *m = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(7, &gen));
    CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
    clt_generator_free(gen);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    for (int k = 0; k < OUT * IN; k++)
        w[k] = 0.3 * sin(1.7 * k + 0.2) + (k % 5 == 0 ? 0.5 : 0.0);
    for (int k = 0; k < OUT; k++)
        b[k] = 0.1 * k - 0.15;
    put(clt_module_param(m, "weight"), w, sizeof(double) * OUT * IN);
    put(clt_module_param(m, "bias"), b, sizeof(double) * OUT);
    return m;
}

static clt_tensor *input64(const double *x, int requires_grad)
{
    int64_t shape[2] = {N, IN};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, shape, x);
    if (requires_grad)
        CHECK(clt_set_requires_grad(t, 1));
    return t;
}

static const double X[N * IN] = {0.5, -1.25, 2.0, 1.5, 0.25, -0.75};

/* y = x W^T + b on the host. */
static void host_linear(const double *x, const double *w, const double *b, double *y)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) {
            double s = b[o];
            for (int i = 0; i < IN; i++)
                s += x[n * IN + i] * w[o * IN + i];
            y[n * OUT + o] = s;
        }
}

static void assert_values_at(int line, const clt_tensor *t, const double *want, size_t n,
                             double tol)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "numel %lld, want %zu",
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t k = 0; k < n; k++)
        cr_assert(fabs(got[k] - want[k]) <= tol * (1.0 + fabs(want[k])),
                  "line %d: element %zu: %.12g, want %.12g", line, k, got[k], want[k]);
    free(got);
}

#define assert_values(...) assert_values_at(__LINE__, __VA_ARGS__)

static void assert_names(const clt_module *m, const char *const *want, size_t n)
{
    clt_named_tensor *st = NULL;
    size_t got = 0;
    CHECK(clt_module_state(m, &st, &got));
    cr_assert_eq(got, n, "%zu state entries, want %zu", got, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(st[k].name, want[k]);
    clt_free(st);
}

/* ---- hooks ------------------------------------------------------------------------ */

typedef struct hlog {
    char calls[16][24];
    int n;
    const clt_tensor *seen_input;
    double scale;        /* pre-hook: replace the input by scale * input when not 0 */
    double shift;        /* forward hook: replace the output by output + shift when not 0 */
    int zero_grad_input; /* backward hook: replace grad_input by zeros */
    double *grad_in, *grad_out;
    int grad_in_null;
} hlog;

typedef struct tag {
    hlog *log;
    const char *name;
} tag;

static void note(tag *t, const char *what)
{
    cr_assert_lt(t->log->n, 16);
    snprintf(t->log->calls[t->log->n++], 24, "%s.%s", t->name, what);
}

static clt_status pre_hook(void *user, clt_module *m, const clt_tensor *input,
                           clt_tensor **replacement)
{
    (void)m;
    tag *t = user;
    note(t, "pre");
    t->log->seen_input = input;
    if (t->log->scale != 0.0)
        return clt_mul_scalar(input, t->log->scale, replacement);
    return CLT_OK;
}

static clt_status fwd_hook(void *user, clt_module *m, const clt_tensor *input,
                           const clt_tensor *output, clt_tensor **replacement)
{
    (void)m;
    (void)input;
    tag *t = user;
    note(t, "fwd");
    if (t->log->shift != 0.0)
        return clt_add_scalar(output, t->log->shift, replacement);
    return CLT_OK;
}

static clt_status bwd_hook(void *user, clt_module *m, const clt_tensor *grad_input,
                           const clt_tensor *grad_output, clt_tensor **replacement)
{
    (void)m;
    tag *t = user;
    note(t, "bwd");
    t->log->grad_in_null = grad_input == NULL;
    free(t->log->grad_out);
    t->log->grad_out = read_as_f64(grad_output);
    if (grad_input) {
        free(t->log->grad_in);
        t->log->grad_in = read_as_f64(grad_input);
    }
    if (t->log->zero_grad_input && grad_input)
        return clt_mul_scalar(grad_input, 0.0, replacement);
    return CLT_OK;
}

static clt_status failing_hook(void *user, clt_module *m, const clt_tensor *input,
                               clt_tensor **replacement)
{
    (void)user;
    (void)m;
    (void)replacement;
    clt_tensor *bad = NULL;
    return clt_reshape(input, 1, (int64_t[]){-7}, &bad);
}

Test(nn_utils, forward_hooks_in_torch_order_with_replacements)
{
    double w[OUT * IN], b[OUT];
    clt_module *lin = linear64(w, b), *relu = NULL, *seq = NULL;
    CHECK(clt_relu_layer(&relu));
    CHECK(clt_sequential((clt_module *[]){lin, relu}, 2, &seq));
    hlog log = {0};
    tag ts = {&log, "seq"}, tl = {&log, "lin"}, tr = {&log, "relu"};
    clt_hook *h_seq_pre = NULL;
    CHECK(clt_module_register_forward_pre_hook(seq, pre_hook, &ts, &h_seq_pre));
    CHECK(clt_module_register_forward_hook(seq, fwd_hook, &ts, NULL));
    CHECK(clt_module_register_forward_pre_hook(lin, pre_hook, &tl, NULL));
    CHECK(clt_module_register_forward_hook(lin, fwd_hook, &tl, NULL));
    CHECK(clt_module_register_forward_hook(relu, fwd_hook, &tr, NULL));
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(seq, x, &y));
    const char *want[] = {"seq.pre", "lin.pre", "lin.fwd", "relu.fwd", "seq.fwd"};
    cr_assert_eq(log.n, 5);
    for (int k = 0; k < 5; k++)
        cr_assert_str_eq(log.calls[k], want[k]);
    double ref[N * OUT], x2[N * IN];
    host_linear(X, w, b, ref);
    for (int k = 0; k < N * OUT; k++)
        ref[k] = ref[k] > 0 ? ref[k] : 0;
    assert_values(y, ref, N * OUT, 1e-12);
    clt_tensor_free(y);

    /* the seq pre-hook scales the input by 2, every forward hook adds 0.5 */
    log = (hlog){.scale = 2.0, .shift = 0.5};
    clt_hook_remove(h_seq_pre); /* removed: only lin's pre-hook scales */
    CHECK(clt_module_forward(seq, x, &y));
    cr_assert_eq(log.n, 4);
    cr_assert_str_eq(log.calls[0], "lin.pre");
    for (int k = 0; k < N * IN; k++)
        x2[k] = 2.0 * X[k];
    host_linear(x2, w, b, ref);
    for (int k = 0; k < N * OUT; k++) {
        double h = ref[k] + 0.5;               /* lin's forward hook */
        ref[k] = (h > 0 ? h : 0) + 0.5 + 0.5; /* relu's, then seq's */
    }
    assert_values(y, ref, N * OUT, 1e-12);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(seq);
    free(log.grad_in);
    free(log.grad_out);
}

Test(nn_utils, a_failing_hook_fails_the_forward_with_its_message)
{
    double w[OUT * IN], b[OUT];
    clt_module *lin = linear64(w, b);
    clt_hook *h = NULL;
    CHECK(clt_module_register_forward_pre_hook(lin, failing_hook, NULL, &h));
    clt_tensor *x = input64(X, 0), *y = NULL;
    clt_status st = clt_module_forward(lin, x, &y);
    assert_error(st, CLT_ERR_INVALID_ARGUMENT,
                 "clt_module_forward: Linear: forward pre-hook: clt_reshape");
    cr_assert_null(y);
    clt_hook_remove(h);
    CHECK(clt_module_forward(lin, x, &y));
    clt_tensor_free(y);
    assert_error(clt_module_register_forward_hook(lin, NULL, NULL, &h), CLT_ERR_NULL_ARGUMENT,
                 NULL);
    cr_assert_null(h);
    clt_tensor_free(x);
    clt_module_free(lin);
}

/* A loss with uneven weights: sum(y * G), G[k] as below. */
static double gout(int k)
{
    return 0.25 + 0.5 * (k % 3) - 0.125 * k;
}

static clt_tensor *weighted_loss(const clt_tensor *y)
{
    double g[64];
    int64_t n = clt_tensor_numel(y);
    for (int k = 0; k < n; k++)
        g[k] = gout(k);
    clt_tensor *gw = tensor_of(dev, CLT_FLOAT64, clt_tensor_ndim(y), clt_tensor_shape(y), g);
    clt_tensor *p = NULL, *l = NULL;
    CHECK(clt_mul(y, gw, &p));
    CHECK(clt_sum(p, &l));
    clt_tensor_free(p);
    clt_tensor_free(gw);
    return l;
}

Test(nn_utils, full_backward_hooks_see_grad_input_and_grad_output)
{
    double w[OUT * IN], b[OUT], w2[OUT * OUT], b2[OUT];
    clt_module *a = linear64(w, b), *c = NULL, *seq = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(3, &gen));
    CHECK(clt_linear(dev, OUT, OUT, 1, gen, &c));
    clt_generator_free(gen);
    CHECK(clt_module_to_dtype(c, CLT_FLOAT64));
    for (int k = 0; k < OUT * OUT; k++)
        w2[k] = 0.2 * cos(0.9 * k) - 0.05;
    for (int k = 0; k < OUT; k++)
        b2[k] = 0.01 * k;
    put(clt_module_param(c, "weight"), w2, sizeof w2);
    put(clt_module_param(c, "bias"), b2, sizeof b2);
    CHECK(clt_sequential((clt_module *[]){a, c}, 2, &seq));
    hlog la = {0}, lc = {0};
    tag ta = {&la, "a"}, tc = {&lc, "c"};
    CHECK(clt_module_register_full_backward_hook(a, bwd_hook, &ta, NULL));
    CHECK(clt_module_register_full_backward_hook(c, bwd_hook, &tc, NULL));
    clt_tensor *x = input64(X, 1), *y = NULL;
    CHECK(clt_module_forward(seq, x, &y));
    clt_tensor *loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    cr_assert_eq(la.n, 1);
    cr_assert_eq(lc.n, 1);
    /* c's grad_output is G; its grad_input G @ W2; a's grad_output that,
     * its grad_input that @ W */
    double G[N * OUT], gc[N * OUT], ga[N * IN];
    for (int k = 0; k < N * OUT; k++)
        G[k] = gout(k);
    for (int n = 0; n < N; n++) {
        for (int i = 0; i < OUT; i++) {
            gc[n * OUT + i] = 0;
            for (int o = 0; o < OUT; o++)
                gc[n * OUT + i] += G[n * OUT + o] * w2[o * OUT + i];
        }
        for (int i = 0; i < IN; i++) {
            ga[n * IN + i] = 0;
            for (int o = 0; o < OUT; o++)
                ga[n * IN + i] += gc[n * OUT + o] * w[o * IN + i];
        }
    }
    for (int k = 0; k < N * OUT; k++) {
        cr_assert(fabs(lc.grad_out[k] - G[k]) < 1e-12);
        cr_assert(fabs(lc.grad_in[k] - gc[k]) < 1e-12);
        cr_assert(fabs(la.grad_out[k] - gc[k]) < 1e-12);
    }
    for (int k = 0; k < N * IN; k++)
        cr_assert(fabs(la.grad_in[k] - ga[k]) < 1e-12);
    double *xg = NULL;
    clt_tensor *g = NULL;
    CHECK(clt_grad(x, &g));
    xg = read_as_f64(g);
    for (int k = 0; k < N * IN; k++)
        cr_assert(fabs(xg[k] - ga[k]) < 1e-12);
    free(xg);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);

    /* c's hook zeroes its grad_input: nothing reaches a's input or x,
     * while c's own weight still gets its gradient */
    lc.zero_grad_input = 1;
    CHECK(clt_zero_grad(x, 1));
    CHECK(clt_module_forward(seq, x, &y));
    loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(x, &g));
    xg = read_as_f64(g);
    for (int k = 0; k < N * IN; k++)
        cr_assert_eq(xg[k], 0.0);
    for (int k = 0; k < N * OUT; k++)
        cr_assert_eq(la.grad_out[k], 0.0);
    free(xg);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(x);

    /* an input that needs no gradient: the hook gets NULL for it */
    la = (hlog){0};
    x = input64(X, 0);
    CHECK(clt_module_forward(a, x, &y));
    loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    cr_assert_eq(la.n, 1);
    cr_assert(la.grad_in_null);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(seq);
    free(la.grad_in);
    free(la.grad_out);
    free(lc.grad_in);
    free(lc.grad_out);
}

/* ---- weight_norm ------------------------------------------------------------------ */

/* sum(y * G) for x through m, recording nothing. */
static double loss_value(clt_module *m, const clt_tensor *x)
{
    int was = clt_set_grad_enabled(0);
    clt_tensor *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor *l = weighted_loss(y);
    double v;
    CHECK(clt_tensor_read(l, &v, sizeof v));
    clt_tensor_free(l);
    clt_tensor_free(y);
    clt_set_grad_enabled(was);
    return v;
}

/* Each element of p's gradient (after a backward of the loss) against
 * central differences of the loss. */
static void check_grad_fd(clt_module *m, const clt_tensor *x, clt_tensor *p)
{
    size_t n = (size_t)clt_tensor_numel(p);
    clt_tensor *g = NULL;
    CHECK(clt_grad(p, &g));
    cr_assert_not_null(g);
    double *an = read_as_f64(g), *v = read_as_f64(p);
    clt_tensor_free(g);
    const double eps = 1e-6;
    for (size_t k = 0; k < n; k++) {
        double keep = v[k];
        v[k] = keep + eps;
        put(p, v, n * sizeof *v);
        double lp = loss_value(m, x);
        v[k] = keep - eps;
        put(p, v, n * sizeof *v);
        double lm = loss_value(m, x);
        v[k] = keep;
        put(p, v, n * sizeof *v);
        double num = (lp - lm) / (2 * eps);
        cr_assert(fabs(num - an[k]) <= 1e-6 * (1 + fabs(num)), "element %zu: %.10g, fd %.10g",
                  k, an[k], num);
    }
    free(an);
    free(v);
}

Test(nn_utils, weight_norm_values_state_and_gradients)
{
    double w[OUT * IN], b[OUT];
    clt_module *m = linear64(w, b);
    clt_tensor *old = clt_module_param(m, "weight");
    CHECK(clt_weight_norm(m, NULL, 0));
    const char *names[] = {"bias", "weight_g", "weight_v"};
    assert_names(m, names, 3);
    cr_assert(!clt_is_leaf(clt_module_param(m, "weight")), "weight is computed");
    assert_values(clt_module_param(m, "weight"), w, OUT * IN, 1e-12);
    cr_assert_eq(clt_module_num_parameters(m), OUT + OUT + OUT * IN);
    clt_tensor *g = clt_module_param(m, "weight_g"), *v = clt_module_param(m, "weight_v");
    assert_shape(g, 2, (int64_t[]){OUT, 1});
    double gn[OUT];
    for (int o = 0; o < OUT; o++) {
        double s = 0;
        for (int i = 0; i < IN; i++)
            s += w[o * IN + i] * w[o * IN + i];
        gn[o] = sqrt(s);
    }
    assert_values(g, gn, OUT, 1e-12);
    assert_values(v, w, OUT * IN, 0);
    (void)old;

    /* a new g: the weight is v * g / |v| row by row */
    double g2[OUT] = {0.5, -2.0, 1.25, 3.0}, wn[OUT * IN], ref[N * OUT];
    put(g, g2, sizeof g2);
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            wn[o * IN + i] = w[o * IN + i] * g2[o] / gn[o];
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    host_linear(X, wn, b, ref);
    assert_values(y, ref, N * OUT, 1e-12);
    clt_tensor *loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    clt_tensor_free(y);
    check_grad_fd(m, x, g);
    check_grad_fd(m, x, v);

    /* removed: weight is a parameter again, with the computed values */
    CHECK(clt_remove_weight_norm(m, "weight"));
    const char *back[] = {"weight", "bias"};
    assert_names(m, back, 2);
    assert_values(clt_module_param(m, "weight"), wn, OUT * IN, 1e-12);
    cr_assert(clt_requires_grad(clt_module_param(m, "weight")));
    assert_error(clt_remove_weight_norm(m, "weight"), CLT_ERR_INVALID_ARGUMENT,
                 "weight_norm of 'weight' not found in Linear");
    clt_tensor_free(x);
    clt_module_free(m);
}

Test(nn_utils, weight_norm_over_the_whole_tensor_and_other_dims)
{
    double w[OUT * IN], b[OUT];
    clt_module *m = linear64(w, b);
    CHECK(clt_weight_norm(m, "weight", -1));
    clt_tensor *g = clt_module_param(m, "weight_g");
    cr_assert_eq(clt_tensor_ndim(g), 0);
    double s = 0;
    for (int k = 0; k < OUT * IN; k++)
        s += w[k] * w[k];
    double whole = sqrt(s);
    assert_values(g, &whole, 1, 1e-12);
    assert_error(clt_weight_norm(m, "weight", 0), CLT_ERR_INVALID_ARGUMENT,
                 "Cannot register two weight_norm hooks on the same parameter weight");
    assert_error(clt_weight_norm(m, "w", 0), CLT_ERR_INVALID_ARGUMENT,
                 "Module 'Linear' has no parameter or buffer with name 'w'");
    assert_error(clt_weight_norm(m, "bias", 1), CLT_ERR_INVALID_ARGUMENT, "out of range");
    /* a clone has its own g and v under the same names, and the same weight */
    clt_module *copy = NULL;
    CHECK(clt_module_clone(m, NULL, &copy));
    clt_named_tensor *pa = NULL, *pb = NULL;
    size_t na = 0, nb = 0;
    CHECK(clt_module_named_parameters(m, &pa, &na));
    CHECK(clt_module_named_parameters(copy, &pb, &nb));
    cr_assert_eq(na, nb);
    for (size_t k = 0; k < na; k++) {
        cr_assert_str_eq(pa[k].name, pb[k].name);
        cr_assert_neq(pa[k].tensor, pb[k].tensor);
    }
    clt_free(pa);
    clt_free(pb);
    assert_values(clt_module_param(copy, "weight"), w, OUT * IN, 1e-12);
    CHECK(clt_init_zeros_(clt_module_param(copy, "weight_g")));
    assert_values(clt_module_param(m, "weight_g"), &whole, 1, 1e-12);
    clt_module_free(copy);
    /* dim 1: norms of columns */
    CHECK(clt_weight_norm(m, "bias", 0));
    clt_module_free(m);
    m = linear64(w, b);
    CHECK(clt_weight_norm(m, "weight", -2)); /* counted from the end: dim 0 */
    assert_shape(clt_module_param(m, "weight_g"), 2, (int64_t[]){OUT, 1});
    clt_module_free(m);
    m = linear64(w, b);
    CHECK(clt_weight_norm(m, "weight", 1));
    g = clt_module_param(m, "weight_g");
    assert_shape(g, 2, (int64_t[]){1, IN});
    double cn[IN];
    for (int i = 0; i < IN; i++) {
        s = 0;
        for (int o = 0; o < OUT; o++)
            s += w[o * IN + i] * w[o * IN + i];
        cn[i] = sqrt(s);
    }
    assert_values(g, cn, IN, 1e-12);
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    double ref[N * OUT];
    host_linear(X, w, b, ref);
    assert_values(y, ref, N * OUT, 1e-12);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(m);
}

/* ---- spectral_norm ----------------------------------------------------------------- */

static void host_normalize(double *x, int n, double eps)
{
    double s = 0;
    for (int k = 0; k < n; k++)
        s += x[k] * x[k];
    s = sqrt(s);
    s = s > eps ? s : eps;
    for (int k = 0; k < n; k++)
        x[k] /= s;
}

Test(nn_utils, spectral_norm_power_iteration_eval_mode_and_gradients)
{
    double w[OUT * IN], b[OUT];
    clt_module *m = linear64(w, b);
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(11, &gen));
    CHECK(clt_spectral_norm(m, NULL, 2, 1e-12, -1, gen));
    clt_generator_free(gen);
    const char *names[] = {"bias", "weight_orig", "weight_u", "weight_v"};
    assert_names(m, names, 4);
    clt_tensor *u = clt_module_buffer(m, "weight_u"), *v = clt_module_buffer(m, "weight_v");
    assert_shape(u, 1, (int64_t[]){OUT});
    assert_shape(v, 1, (int64_t[]){IN});
    double u0[OUT] = {0.3, -0.2, 0.9, 0.1}, v0[IN] = {0.6, 0.7, -0.2};
    host_normalize(u0, OUT, 1e-12);
    host_normalize(v0, IN, 1e-12);
    put(u, u0, sizeof u0);
    put(v, v0, sizeof v0);

    /* train mode: two steps of power iteration, then W / u.(W v) */
    double uu[OUT], vv[IN];
    memcpy(uu, u0, sizeof uu);
    for (int it = 0; it < 2; it++) {
        for (int i = 0; i < IN; i++) {
            vv[i] = 0;
            for (int o = 0; o < OUT; o++)
                vv[i] += w[o * IN + i] * uu[o];
        }
        host_normalize(vv, IN, 1e-12);
        for (int o = 0; o < OUT; o++) {
            uu[o] = 0;
            for (int i = 0; i < IN; i++)
                uu[o] += w[o * IN + i] * vv[i];
        }
        host_normalize(uu, OUT, 1e-12);
    }
    double sigma = 0;
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            sigma += uu[o] * w[o * IN + i] * vv[i];
    double ws[OUT * IN], ref[N * OUT];
    for (int k = 0; k < OUT * IN; k++)
        ws[k] = w[k] / sigma;
    host_linear(X, ws, b, ref);
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    assert_values(y, ref, N * OUT, 1e-10);
    assert_values(u, uu, OUT, 1e-12);
    assert_values(v, vv, IN, 1e-12);
    clt_tensor_free(y);

    /* eval mode: u and v as they are, unchanged */
    clt_module_train(m, 0);
    double u1[OUT] = {1, 0, 0, 0}, v1[IN] = {0, 1, 0};
    put(u, u1, sizeof u1);
    put(v, v1, sizeof v1);
    for (int k = 0; k < OUT * IN; k++)
        ws[k] = w[k] / w[1];
    host_linear(X, ws, b, ref);
    CHECK(clt_module_forward(m, x, &y));
    assert_values(y, ref, N * OUT, 1e-12);
    assert_values(u, u1, OUT, 0);
    clt_tensor *loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    clt_tensor_free(y);
    put(u, u0, sizeof u0);
    put(v, v0, sizeof v0);
    clt_tensor *orig = clt_module_param(m, "weight_orig");
    CHECK(clt_zero_grad(orig, 1));
    CHECK(clt_module_forward(m, x, &y));
    loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    clt_tensor_free(y);
    check_grad_fd(m, x, orig);

    CHECK(clt_remove_spectral_norm(m, NULL));
    const char *back[] = {"weight", "bias"};
    assert_names(m, back, 2);
    clt_tensor_free(x);
    clt_module_free(m);
}

Test(nn_utils, spectral_norm_refusals)
{
    double w[OUT * IN], b[OUT];
    clt_module *m = linear64(w, b);
    assert_error(clt_spectral_norm(m, NULL, 0, 1e-12, -1, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "Expected n_power_iterations to be positive");
    assert_error(clt_spectral_norm(m, NULL, 1, 0.0, -1, NULL), CLT_ERR_INVALID_ARGUMENT, "eps");
    assert_error(clt_spectral_norm(m, NULL, 1, 1e-12, 2, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "out of range");
    const char *names[] = {"weight", "bias"};
    assert_names(m, names, 2);
    CHECK(clt_spectral_norm(m, NULL, 1, 1e-12, -1, NULL));
    assert_error(clt_weight_norm(m, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "Cannot register two weight_norm hooks");
    clt_module_free(m);
}

/* ---- parameters_to_vector ----------------------------------------------------------- */

Test(nn_utils, parameters_to_vector_and_back)
{
    double w[OUT * IN], b[OUT];
    clt_module *m = linear64(w, b);
    clt_tensor **ps = NULL, *vec = NULL;
    size_t n = 0;
    CHECK(clt_module_parameters(m, &ps, &n));
    CHECK(clt_parameters_to_vector(ps, n, &vec));
    double all[OUT * IN + OUT];
    memcpy(all, w, sizeof w);
    memcpy(all + OUT * IN, b, sizeof b);
    assert_values(vec, all, OUT * IN + OUT, 0);
    cr_assert(clt_requires_grad(vec));
    for (int k = 0; k < OUT * IN + OUT; k++)
        all[k] = 0.5 * k - 3;
    clt_tensor *nv = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){OUT * IN + OUT}, all);
    CHECK(clt_vector_to_parameters(nv, ps, n));
    assert_values(ps[0], all, OUT * IN, 0);
    assert_values(ps[1], all + OUT * IN, OUT, 0);
    clt_tensor *short_v = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, all);
    assert_error(clt_vector_to_parameters(short_v, ps, n), CLT_ERR_SHAPE_MISMATCH, "elements");
    clt_tensor *none = NULL;
    assert_error(clt_parameters_to_vector(ps, 0, &none), CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert_null(none);
    clt_tensor_free(short_v);
    clt_tensor_free(nv);
    clt_tensor_free(vec);
    clt_free(ps);
    clt_module_free(m);
}

/* ---- clip_grad_norm_'s norm types ------------------------------------------------------ */

/* The joint norm of order p of gradients ga (3) and gb (2), as torch: the
 * p-norm of their p-norms, computed here on the host in double. */
static double host_norm(const double *x, int n, double p)
{
    double r;
    if (isinf(p)) {
        r = fabs(x[0]);
        for (int k = 1; k < n; k++)
            r = p > 0 ? fmax(r, fabs(x[k])) : fmin(r, fabs(x[k]));
        return r;
    }
    r = 0;
    for (int k = 0; k < n; k++)
        r += p == 0 ? (x[k] != 0) : pow(fabs(x[k]), p);
    return p == 0 ? r : pow(r, 1 / p);
}

Test(nn_utils, clip_grad_norm_norm_types)
{
    double a[3] = {3, 0, 4}, ga[3] = {1, -2, 0.5}, gb[2] = {0, -3};
    const double orders[] = {1, 3, 0.5, INFINITY, -INFINITY, 0, -1};
    for (size_t o = 0; o < sizeof orders / sizeof *orders; o++) {
        double p_ord = orders[o];
        clt_tensor *p = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, a);
        clt_tensor *q = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){2}, a);
        CHECK(clt_set_requires_grad(p, 1));
        CHECK(clt_set_requires_grad(q, 1));
        clt_tensor *g = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, ga);
        clt_tensor *h = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){2}, gb);
        clt_tensor *pg = NULL, *qh = NULL, *l1 = NULL, *l2 = NULL;
        CHECK(clt_mul(p, g, &pg));
        CHECK(clt_sum(pg, &l1));
        CHECK(clt_backward(l1, NULL, 0));
        CHECK(clt_mul(q, h, &qh));
        CHECK(clt_sum(qh, &l2));
        CHECK(clt_backward(l2, NULL, 0));
        double norms[2] = {host_norm(ga, 3, p_ord), host_norm(gb, 2, p_ord)};
        double want = host_norm(norms, 2, p_ord);
        double max_norm = 0.75 * want + (want == 0);
        double c = fmin(1.0, max_norm / (want + 1e-6));
        clt_tensor *ps[2] = {p, q}, *norm = NULL, *gr = NULL;
        CHECK(clt_clip_grad_norm(ps, 2, max_norm, p_ord, &norm));
        cr_assert_eq(clt_tensor_dtype(norm), CLT_FLOAT64, "order %g", p_ord);
        assert_values(norm, &want, 1, 1e-12);
        double cp[3], cq[2];
        for (int k = 0; k < 3; k++)
            cp[k] = ga[k] * c;
        for (int k = 0; k < 2; k++)
            cq[k] = gb[k] * c;
        CHECK(clt_grad(p, &gr));
        assert_values(gr, cp, 3, 1e-12);
        clt_tensor_free(gr);
        CHECK(clt_grad(q, &gr));
        assert_values(gr, cq, 2, 1e-6);
        clt_tensor_free(gr);
        clt_tensor_free(norm);
        clt_tensor *ts[] = {p, q, g, h, pg, qh, l1, l2};
        for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
            clt_tensor_free(ts[k]);
    }
    /* NaN is refused, nothing scaled */
    clt_tensor *p = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, a), *ps[1] = {p};
    assert_error(clt_clip_grad_norm(ps, 1, 1.0, NAN, NULL), CLT_ERR_INVALID_ARGUMENT, "NaN");
    clt_tensor_free(p);
}

/* ---- clip_grad_norm_'s flags ----------------------------------------------------------- */

Test(nn_utils, clip_grad_norm_error_if_nonfinite)
{
    double a[3] = {3, 0, 4}, ga[3] = {1, 2, 2}, gb[2] = {INFINITY, 1};
    clt_tensor *p = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, a);
    clt_tensor *q = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){2}, a);
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_set_requires_grad(q, 1));
    /* gradients: p's 2 * (1, 2, 2) / 2 through sum(p * g) */
    clt_tensor *g = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, ga), *pg = NULL, *l = NULL;
    CHECK(clt_mul(p, g, &pg));
    CHECK(clt_sum(pg, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_tensor *ps[2] = {p, q}, *norm = NULL;
    /* norm 3: clipped to max_norm 1.5 by 1.5 / (3 + 1e-6) */
    CHECK(clt_clip_grad_norm_ex(ps, 2, 1.5, 2.0, 1, 1, &norm));
    double want = 3.0, c = 1.5 / (3.0 + 1e-6), clipped[3];
    assert_values(norm, &want, 1, 1e-12);
    clt_tensor_free(norm);
    clt_tensor *gr = NULL;
    CHECK(clt_grad(p, &gr));
    for (int k = 0; k < 3; k++)
        clipped[k] = ga[k] * c;
    assert_values(gr, clipped, 3, 1e-12);
    clt_tensor_free(gr);
    /* q gets an infinite gradient: refused, nothing scaled */
    clt_tensor *h = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){2}, gb), *qh = NULL, *l2 = NULL;
    CHECK(clt_mul(q, h, &qh));
    CHECK(clt_sum(qh, &l2));
    CHECK(clt_backward(l2, NULL, 0));
    norm = (clt_tensor *)&want; /* a sentinel the call must clear */
    assert_error(clt_clip_grad_norm_ex(ps, 2, 1.5, 2.0, 1, 0, &norm), CLT_ERR_INVALID_ARGUMENT,
                 "The total norm of order 2.0 for gradients from `parameters` is non-finite");
    cr_assert_null(norm);
    CHECK(clt_grad(p, &gr));
    assert_values(gr, clipped, 3, 0);
    clt_tensor_free(gr);
    /* without the flag, as torch: scaled by the non-finite norm */
    CHECK(clt_clip_grad_norm_ex(ps, 2, 1.5, 2.0, 0, 0, NULL));
    CHECK(clt_grad(p, &gr));
    double *v = read_as_f64(gr);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(v[k], 0.0);
    free(v);
    clt_tensor_free(gr);
    clt_tensor_free(h);
    clt_tensor_free(qh);
    clt_tensor_free(l2);
    clt_tensor_free(g);
    clt_tensor_free(pg);
    clt_tensor_free(l);
    clt_tensor_free(p);
    clt_tensor_free(q);
}

/* ---- pruning ------------------------------------------------------------------------ */

/* The indices of the k smallest |w| among those mask keeps (mask 1). */
static void host_l1(const double *w, double *mask, int n, int k)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (mask[i] == 1.0 && (best < 0 || fabs(w[i]) < fabs(w[best])))
                best = i;
        mask[best] = 0.0;
    }
}

Test(nn_utils, prune_l1_unstructured_iterated_and_removed)
{
    double w[OUT * IN], b[OUT], mask[OUT * IN], wm[OUT * IN], ref[N * OUT];
    clt_module *m = linear64(w, b);
    clt_tensor *orig = clt_module_param(m, "weight");
    cr_assert_eq(clt_prune_is_pruned(m), 0);
    CHECK(clt_prune_l1_unstructured(m, NULL, 0.25, -1)); /* round(3.0) entries */
    cr_assert_eq(clt_prune_is_pruned(m), 1);
    const char *names[] = {"bias", "weight_orig", "weight_mask"};
    assert_names(m, names, 3);
    cr_assert_eq(clt_module_param(m, "weight_orig"), orig, "weight_orig is the same handle");
    for (int i = 0; i < OUT * IN; i++)
        mask[i] = 1.0;
    host_l1(w, mask, OUT * IN, 3);
    assert_values(clt_module_buffer(m, "weight_mask"), mask, OUT * IN, 0);
    /* again, 2 more among those kept */
    CHECK(clt_prune_l1_unstructured(m, "weight", 0.0, 2));
    host_l1(w, mask, OUT * IN, 2);
    assert_values(clt_module_buffer(m, "weight_mask"), mask, OUT * IN, 0);
    for (int i = 0; i < OUT * IN; i++)
        wm[i] = w[i] * mask[i];
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    host_linear(X, wm, b, ref);
    assert_values(y, ref, N * OUT, 1e-12);
    /* the gradient of weight_orig is masked: G^T x where kept, else 0 */
    clt_tensor *loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor *g = NULL;
    CHECK(clt_grad(orig, &g));
    double gw[OUT * IN];
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++) {
            double sum = 0;
            for (int n = 0; n < N; n++)
                sum += gout(n * OUT + o) * X[n * IN + i];
            gw[o * IN + i] = sum * mask[o * IN + i];
        }
    assert_values(g, gw, OUT * IN, 1e-12);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    assert_error(clt_prune_l1_unstructured(m, NULL, 0.0, 8), CLT_ERR_INVALID_ARGUMENT,
                 "amount=8 should be smaller than the number of parameters to prune=7");
    assert_error(clt_prune_l1_unstructured(m, NULL, 1.5, -1), CLT_ERR_INVALID_ARGUMENT,
                 "should either be a float in the range [0, 1] or a non-negative integer");
    /* permanent: weight is the same handle again, with the zeros */
    CHECK(clt_prune_remove(m, NULL));
    cr_assert_eq(clt_prune_is_pruned(m), 0);
    cr_assert_eq(clt_module_param(m, "weight"), orig);
    const char *back[] = {"weight", "bias"};
    assert_names(m, back, 2);
    assert_values(orig, wm, OUT * IN, 0);
    assert_error(clt_prune_remove(m, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "Parameter 'weight' of module Linear has to be pruned before pruning can be "
                 "removed");
    clt_tensor_free(x);
    clt_module_free(m);
}

Test(nn_utils, prune_ln_structured_random_and_global)
{
    double w[OUT * IN], b[OUT];
    clt_module *m = linear64(w, b);
    /* rows (dim 0) of smallest 2-norm: half of them */
    CHECK(clt_prune_ln_structured(m, NULL, 0.5, -1, 2.0, 0));
    double norm[OUT], mask[OUT * IN];
    int order[OUT];
    for (int o = 0; o < OUT; o++) {
        norm[o] = 0;
        for (int i = 0; i < IN; i++)
            norm[o] += w[o * IN + i] * w[o * IN + i];
        order[o] = o;
    }
    for (int a = 0; a < OUT; a++) /* ascending norms */
        for (int c = a + 1; c < OUT; c++)
            if (norm[order[c]] < norm[order[a]]) {
                int t = order[a];
                order[a] = order[c];
                order[c] = t;
            }
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            mask[o * IN + i] = (o == order[0] || o == order[1]) ? 0.0 : 1.0;
    assert_values(clt_module_buffer(m, "weight_mask"), mask, OUT * IN, 0);
    assert_error(clt_prune_ln_structured(m, "bias", 0.5, -1, 2.0, 0), CLT_ERR_INVALID_ARGUMENT,
                 "Structured pruning can only be applied to multidimensional tensors");
    /* random: exactly 3 more of the 6 kept entries */
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(5, &gen));
    CHECK(clt_prune_random_unstructured(m, NULL, 0.5, -1, gen));
    clt_generator_free(gen);
    double *got = read_as_f64(clt_module_buffer(m, "weight_mask"));
    int kept = 0;
    for (int i = 0; i < OUT * IN; i++) {
        cr_assert(got[i] == 0.0 || mask[i] == 1.0, "a pruned entry came back at %d", i);
        kept += got[i] == 1.0;
    }
    cr_assert_eq(kept, 3);
    free(got);
    /* global: the 4 smallest |w| of this weight (as masked) and another's */
    double w2[OUT * IN], b2[OUT];
    clt_module *m2 = linear64(w2, b2);
    for (int i = 0; i < OUT * IN; i++) /* no ties with m's */
        w2[i] = 1.1 * w2[i] + 0.01;
    put(clt_module_param(m2, "weight"), w2, sizeof w2);
    double *mm = read_as_f64(clt_module_buffer(m, "weight_mask"));
    CHECK(clt_prune_global_unstructured((clt_module *[]){m, m2}, NULL, 2, 0.0, 4));
    double all[2 * OUT * IN], am[2 * OUT * IN];
    for (int i = 0; i < OUT * IN; i++) {
        all[i] = w[i] * mm[i];
        am[i] = mm[i];
        all[OUT * IN + i] = w2[i];
        am[OUT * IN + i] = 1.0;
    }
    host_l1(all, am, 2 * OUT * IN, 4);
    assert_values(clt_module_buffer(m, "weight_mask"), am, OUT * IN, 0);
    assert_values(clt_module_buffer(m2, "weight_mask"), am + OUT * IN, OUT * IN, 0);
    free(mm);
    clt_module_free(m2);
    clt_module_free(m);
}

/* ---- a custom module ------------------------------------------------------------------ */

/* x * weight, reading the weight by name as a torch forward reads self.weight. */
static clt_status scale_forward(clt_module *m, void *user, const clt_tensor *x, clt_tensor **out)
{
    (void)user;
    return clt_mul(x, clt_module_param(m, "weight"), out);
}

Test(nn_utils, custom_module_weight_norm_and_hooks)
{
    clt_module *m = NULL;
    CHECK(clt_module_custom("Scale", scale_forward, NULL, NULL, &m));
    double w[IN] = {3, -4, 12};
    clt_tensor *p = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){IN}, w);
    CHECK(clt_module_add_parameter(m, "weight", p));
    CHECK(clt_weight_norm(m, NULL, -1));
    double g = 2.0, ref[N * IN];
    put(clt_module_param(m, "weight_g"), &g, sizeof g);
    hlog log = {.shift = 1.0};
    tag t = {&log, "scale"};
    CHECK(clt_module_register_forward_hook(m, fwd_hook, &t, NULL));
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    for (int k = 0; k < N * IN; k++)
        ref[k] = X[k] * w[k % IN] * 2.0 / 13.0 + 1.0;
    assert_values(y, ref, N * IN, 1e-12);
    cr_assert_eq(log.n, 1);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(m);
}

/* A forward of several inputs (clt_rnn_forward) runs the reparametrization
 * too: weight_hh_l0 with g doubled acts as the weight doubled. */
Test(nn_utils, rnn_forward_uses_the_computed_weight)
{
    clt_rnn_opts o = CLT_RNN_DEFAULTS(IN, OUT);
    clt_module *a = NULL, *b = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(9, &gen));
    CHECK(clt_rnn_layer(dev, &o, gen, &a));
    clt_manual_seed(gen, 9);
    CHECK(clt_rnn_layer(dev, &o, gen, &b));
    clt_generator_free(gen);
    double *w = read_as_f64(clt_module_param(b, "weight_hh_l0"));
    for (int k = 0; k < OUT * OUT; k++)
        w[k] *= 2.0;
    int was = clt_set_grad_enabled(0);
    clt_tensor *wb = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){OUT, OUT}, w);
    CHECK(clt_copy_(clt_module_param(b, "weight_hh_l0"), wb));
    clt_set_grad_enabled(was);
    CHECK(clt_weight_norm(a, "weight_hh_l0", 0));
    clt_tensor *g = clt_module_param(a, "weight_hh_l0_g"), *g2 = NULL;
    CHECK(clt_mul_scalar(g, 2.0, &g2));
    was = clt_set_grad_enabled(0);
    CHECK(clt_copy_(g, g2));
    clt_set_grad_enabled(was);
    double xs[3 * N * IN];
    for (int k = 0; k < 3 * N * IN; k++)
        xs[k] = 0.25 * k - 1.5;
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){3, N, IN}, xs);
    clt_tensor *ya = NULL, *yb = NULL, *ha = NULL, *hb = NULL;
    CHECK(clt_rnn_forward(a, x, NULL, &ya, &ha));
    CHECK(clt_rnn_forward(b, x, NULL, &yb, &hb));
    double *want = read_as_f64(yb);
    assert_values(ya, want, 3 * N * OUT, 1e-5);
    assert_values(clt_module_param(a, "weight_hh_l0"), w, OUT * OUT, 1e-6);
    free(want);
    free(w);
    clt_tensor *ts[] = {wb, g2, x, ya, yb, ha, hb};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_module_free(a);
    clt_module_free(b);
}

/* Global hooks run for every module, before each module's own. */
Test(nn_utils, global_hooks_run_first_for_every_module)
{
    double w[OUT * IN], b[OUT];
    clt_module *lin = linear64(w, b), *relu = NULL, *seq = NULL;
    CHECK(clt_relu_layer(&relu));
    CHECK(clt_sequential((clt_module *[]){lin, relu}, 2, &seq));
    hlog log = {0};
    tag tg = {&log, "global"}, tl = {&log, "lin"};
    clt_hook *hp = NULL, *hf = NULL;
    CHECK(clt_module_register_forward_pre_hook(lin, pre_hook, &tl, NULL));
    CHECK(clt_register_module_forward_pre_hook(pre_hook, &tg, &hp));
    CHECK(clt_register_module_forward_hook(fwd_hook, &tg, &hf));
    clt_tensor *x = input64(X, 0), *y = NULL;
    CHECK(clt_module_forward(seq, x, &y));
    const char *want[] = {"global.pre", "global.pre", "lin.pre", "global.fwd",
                          "global.pre", "global.fwd", "global.fwd"};
    cr_assert_eq(log.n, 7, "%d calls", log.n);
    for (int k = 0; k < 7; k++)
        cr_assert_str_eq(log.calls[k], want[k]);
    clt_tensor_free(y);
    clt_hook_remove(hp);
    clt_hook_remove(hf);
    log.n = 0;
    CHECK(clt_module_forward(seq, x, &y));
    cr_assert_eq(log.n, 1);
    cr_assert_str_eq(log.calls[0], "lin.pre");
    assert_error(clt_register_module_forward_hook(NULL, NULL, &hf), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(seq);
}
