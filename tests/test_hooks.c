/* test_hooks.c: autograd beyond backward: clt_autograd_grad against float64
 * finite differences and against clt_backward's gradients, clt_retain_grad,
 * tensor hooks and post-accumulate-grad hooks (calls in torch 1.13's order,
 * values from torch's rules), and clt_checkpoint (the plain run's bits,
 * Dropout included, and a lower memory peak). */
#include <stdio.h>

#include "helpers.h"

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

static clt_tensor *leaf64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = f64(dev, nd, shape, v);
    CHECK(clt_set_requires_grad(t, 1));
    return t;
}

static void assert_values(const clt_tensor *t, const double *want, size_t n, double rtol,
                          double atol)
{
    cr_assert_not_null(t);
    cr_assert_eq((size_t)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol), "element %zu: got %.12g, want %.12g",
                  i, got[i], want[i]);
    free(got);
}

static void assert_no_grad(const clt_tensor *t)
{
    clt_tensor *g = NULL;
    CHECK(clt_grad(t, &g));
    cr_assert_null(g, "the tensor has a grad");
}

/* ---- clt_autograd_grad -------------------------------------------------------- */

/* L(x, w) = sum_ij tanh(x_ij * w_j) * x_ij, x [2, 3], w [3]. */
static const double X[6] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2};
static const double W[3] = {1.1, -0.6, 0.9};

static double host_loss(const double *x, const double *w)
{
    double s = 0;
    for (int i = 0; i < 6; i++)
        s += tanh(x[i] * w[i % 3]) * x[i];
    return s;
}

static clt_tensor *device_loss(const clt_tensor *x, const clt_tensor *w)
{
    clt_tensor *xw = NULL, *t = NULL, *p = NULL, *l = NULL;
    CHECK(clt_mul(x, w, &xw));
    CHECK(clt_tanh(xw, &t));
    CHECK(clt_mul(t, x, &p));
    CHECK(clt_sum(p, &l));
    return l;
}

Test(hooks, grad_matches_finite_differences_and_backward)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t sx[2] = {2, 3}, sw[1] = {3};
    clt_tensor *x = leaf64(dev, 2, sx, X), *w = leaf64(dev, 1, sw, W);
    clt_tensor *l = device_loss(x, w);
    clt_tensor *ins[2] = {x, w}, *g[2] = {0};
    CHECK(clt_autograd_grad(&l, 1, NULL, ins, 2, 1, 0, g));
    /* .grad untouched */
    assert_no_grad(x);
    assert_no_grad(w);
    /* central differences in float64 on the host */
    double num_x[6], num_w[3], xp[6], wp[3];
    const double eps = 1e-6;
    for (int i = 0; i < 6; i++) {
        memcpy(xp, X, sizeof xp);
        xp[i] = X[i] + eps;
        double hi = host_loss(xp, W);
        xp[i] = X[i] - eps;
        num_x[i] = (hi - host_loss(xp, W)) / (2 * eps);
    }
    for (int j = 0; j < 3; j++) {
        memcpy(wp, W, sizeof wp);
        wp[j] = W[j] + eps;
        double hi = host_loss(X, wp);
        wp[j] = W[j] - eps;
        num_w[j] = (hi - host_loss(X, wp)) / (2 * eps);
    }
    assert_values(g[0], num_x, 6, 1e-6, 1e-8);
    assert_values(g[1], num_w, 3, 1e-6, 1e-8);
    /* backward on the same graph gives the same bits */
    CHECK(clt_backward(l, NULL, 0));
    double *gx = read_as_f64(g[0]), *gw = read_as_f64(g[1]);
    clt_tensor *bx = NULL, *bw = NULL;
    CHECK(clt_grad(x, &bx));
    CHECK(clt_grad(w, &bw));
    double *hx = read_as_f64(bx), *hw = read_as_f64(bw);
    cr_assert(memcmp(gx, hx, sizeof X) == 0, "autograd.grad and backward differ for x");
    cr_assert(memcmp(gw, hw, sizeof W) == 0, "autograd.grad and backward differ for w");
    free(gx);
    free(gw);
    free(hx);
    free(hw);
    clt_scope_end();
}

Test(hooks, grad_of_several_outputs_with_grad_outputs)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {0.5, -1.25, 2.0}, g1v[3] = {1.5, -2.0, 0.25}, g2v[3] = {-1.0, 3.0, 0.5};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y1 = NULL, *y2 = NULL;
    CHECK(clt_mul(x, x, &y1));
    CHECK(clt_sin(x, &y2));
    clt_tensor *outs[2] = {y1, y2}, *gos[2] = {f64(dev, 1, s3, g1v), f64(dev, 1, s3, g2v)};
    clt_tensor *g = NULL;
    CHECK(clt_autograd_grad(outs, 2, gos, &x, 1, 1, 0, &g));
    double want[3];
    for (int i = 0; i < 3; i++)
        want[i] = 2 * xv[i] * g1v[i] + cos(xv[i]) * g2v[i];
    assert_values(g, want, 3, 1e-12, 1e-12);
    /* a computed input: d(sum(h * h))/dh = 2h, h = 3x */
    clt_tensor *h = NULL, *hh = NULL, *l = NULL, *gh = NULL;
    CHECK(clt_mul_scalar(x, 3, &h));
    CHECK(clt_mul(h, h, &hh));
    CHECK(clt_sum(hh, &l));
    CHECK(clt_autograd_grad(&l, 1, NULL, &h, 1, 0, 0, &gh));
    for (int i = 0; i < 3; i++)
        want[i] = 6 * xv[i];
    assert_values(gh, want, 3, 1e-12, 1e-12);
    /* an output that is the input: its grad_output comes back */
    clt_tensor *gx = NULL;
    CHECK(clt_autograd_grad(&x, 1, &gos[0], &x, 1, 0, 0, &gx));
    assert_values(gx, g1v, 3, 0, 0);
    assert_no_grad(x);
    clt_scope_end();
}

Test(hooks, grad_allow_unused_and_errors)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s2[1] = {2};
    const double one[2] = {1, 1};
    clt_tensor *a = leaf64(dev, 1, s2, one), *b = leaf64(dev, 1, s2, one), *c = f64(dev, 1, s2, one);
    clt_tensor *a2 = NULL, *l = NULL, *lc = NULL, *c2 = NULL;
    CHECK(clt_mul_scalar(a, 2, &a2));
    CHECK(clt_sum(a2, &l));
    clt_tensor *ins[2] = {a, b}, *g[2] = {(clt_tensor *)1, (clt_tensor *)1};
    assert_error(clt_autograd_grad(&l, 1, NULL, ins, 2, 1, 0, g), CLT_ERR_INVALID_ARGUMENT,
                 "input 1 (float64 [2]), one of the differentiated tensors, appears to not have "
                 "been used in the graph");
    cr_assert(g[0] == NULL && g[1] == NULL);
    CHECK(clt_autograd_grad(&l, 1, NULL, ins, 2, 1, 1, g));
    const double two[2] = {2, 2};
    assert_values(g[0], two, 2, 0, 0);
    cr_assert_null(g[1]);
    assert_error(clt_autograd_grad(&l, 1, NULL, &c, 1, 1, 0, g), CLT_ERR_INVALID_ARGUMENT,
                 "does not require grad");
    cr_assert_null(g[0]);
    CHECK(clt_mul_scalar(c, 2, &c2));
    CHECK(clt_sum(c2, &lc));
    assert_error(clt_autograd_grad(&lc, 1, NULL, &a, 1, 1, 0, g), CLT_ERR_INVALID_ARGUMENT,
                 "element 0 of the outputs does not require grad");
    /* a non-scalar output needs its grad_output */
    assert_error(clt_autograd_grad(&a2, 1, NULL, &a, 1, 1, 0, g), CLT_ERR_INVALID_ARGUMENT,
                 "grad can be implicitly created only for scalar outputs");
    names_only("clt_autograd_grad");
    /* without retain_graph the graph's saved tensors go */
    CHECK(clt_autograd_grad(&l, 1, NULL, &a, 1, 0, 0, g));
    clt_tensor *sq = NULL, *ls = NULL;
    CHECK(clt_mul(a, a, &sq));
    CHECK(clt_sum(sq, &ls));
    CHECK(clt_autograd_grad(&ls, 1, NULL, &a, 1, 0, 0, g));
    assert_error(clt_autograd_grad(&ls, 1, NULL, &a, 1, 0, 0, g), CLT_ERR_INVALID_ARGUMENT,
                 "a second time");
    clt_scope_end();
}

/* ---- retain_grad and hooks ---------------------------------------------------- */

typedef struct logged {
    char name[8];
    double v[3];
} logged;

typedef struct hook_log {
    logged e[16];
    int n;
} hook_log;

typedef struct hook_ctx {
    hook_log *log;
    const char *name;
    double scale; /* 0: observe only */
    double add;
} hook_ctx;

static clt_status log_hook(void *user, const clt_tensor *grad, clt_tensor **replacement)
{
    hook_ctx *c = user;
    logged *e = &c->log->e[c->log->n++];
    snprintf(e->name, sizeof e->name, "%s", c->name);
    clt_status st = clt_tensor_read(grad, e->v, sizeof e->v);
    if (st != CLT_OK)
        return st;
    if (c->scale != 0)
        return clt_mul_scalar(grad, c->scale, replacement);
    if (c->add != 0)
        return clt_add_scalar(grad, c->add, replacement);
    return CLT_OK;
}

static void assert_logged(const logged *e, const char *name, const double *v)
{
    cr_assert_str_eq(e->name, name);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(e->v[i], v[i], "%s[%d]: %g, want %g", name, i, e->v[i], v[i]);
}

/* torch 1.13:
 *   x = tensor([1., 2., 3.], requires_grad=True); y = x * 2; z = y * y
 *   y.retain_grad(); y.register_hook(g * 10); y.register_hook(observe)
 *   x.register_hook(g + 1); (z + x).sum().backward()
 * calls y1 [4, 8, 12], y2 [40, 80, 120], x [81, 161, 241];
 * y.grad [4, 8, 12] (retained before the hooks), x.grad [82, 162, 242]. */
Test(hooks, order_and_values_as_torch)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {1, 2, 3};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y = NULL, *z = NULL, *zx = NULL, *l = NULL;
    CHECK(clt_mul_scalar(x, 2, &y));
    CHECK(clt_mul(y, y, &z));
    CHECK(clt_retain_grad(y));
    cr_assert(clt_retains_grad(y));
    cr_assert(!clt_retains_grad(x));
    hook_log log = {0};
    hook_ctx y1 = {&log, "y1", 10, 0}, y2 = {&log, "y2", 0, 0}, xh = {&log, "x", 0, 1};
    CHECK(clt_tensor_register_hook(y, log_hook, &y1, NULL));
    CHECK(clt_tensor_register_hook(y, log_hook, &y2, NULL));
    CHECK(clt_tensor_register_hook(x, log_hook, &xh, NULL));
    CHECK(clt_add(z, x, &zx));
    CHECK(clt_sum(zx, &l));
    CHECK(clt_backward(l, NULL, 0));
    cr_assert_eq(log.n, 3);
    assert_logged(&log.e[0], "y1", (double[]){4, 8, 12});
    assert_logged(&log.e[1], "y2", (double[]){40, 80, 120});
    assert_logged(&log.e[2], "x", (double[]){81, 161, 241});
    clt_tensor *gy = NULL, *gx = NULL;
    CHECK(clt_grad(y, &gy));
    CHECK(clt_grad(x, &gx));
    assert_values(gy, (double[]){4, 8, 12}, 3, 0, 0);
    assert_values(gx, (double[]){82, 162, 242}, 3, 0, 0);
    /* retain_grad after a hook keeps the hook's result: [40, 80, 120] */
    clt_tensor *y3 = NULL, *z3 = NULL, *l3 = NULL, *g3 = NULL;
    CHECK(clt_mul_scalar(x, 2, &y3));
    hook_ctx y3h = {&log, "y3", 10, 0};
    CHECK(clt_tensor_register_hook(y3, log_hook, &y3h, NULL));
    CHECK(clt_retain_grad(y3));
    CHECK(clt_mul(y3, y3, &z3));
    CHECK(clt_sum(z3, &l3));
    CHECK(clt_zero_grad(x, 1));
    CHECK(clt_backward(l3, NULL, 0));
    CHECK(clt_grad(y3, &g3));
    assert_values(g3, (double[]){40, 80, 120}, 3, 0, 0);
    clt_scope_end();
}

Test(hooks, retained_grad_accumulates_and_plain_intermediates_keep_none)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {0.5, -1.5, 2.0};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y = NULL, *q = NULL, *z = NULL, *l = NULL;
    CHECK(clt_sin(x, &y));
    CHECK(clt_exp(y, &q));
    CHECK(clt_mul(q, y, &z));
    CHECK(clt_sum(z, &l));
    CHECK(clt_retain_grad(y));
    CHECK(clt_retain_grad(x)); /* a leaf: nothing to do */
    CHECK(clt_backward(l, NULL, 1));
    double want[3];
    for (int i = 0; i < 3; i++) /* d(e^y * y)/dy = e^y (y + 1) */
        want[i] = exp(sin(xv[i])) * (sin(xv[i]) + 1);
    clt_tensor *gy = NULL;
    CHECK(clt_grad(y, &gy));
    assert_values(gy, want, 3, 1e-12, 1e-12);
    assert_no_grad(q);
    CHECK(clt_backward(l, NULL, 0));
    for (int i = 0; i < 3; i++)
        want[i] *= 2;
    assert_values(gy, want, 3, 1e-12, 1e-12); /* gy shares the storage */
    /* released before backward: the retain hook forgets it */
    clt_tensor *y2 = NULL, *l2 = NULL;
    CHECK(clt_mul_scalar(x, 3, &y2));
    CHECK(clt_retain_grad(y2));
    CHECK(clt_sum(y2, &l2));
    clt_tensor_free(y2);
    CHECK(clt_backward(l2, NULL, 0));
    clt_tensor *c = f64(dev, 1, s3, xv);
    assert_error(clt_retain_grad(c), CLT_ERR_INVALID_ARGUMENT, "does not require grad");
    clt_scope_end();
}

static clt_status fail_hook(void *user, const clt_tensor *grad, clt_tensor **replacement)
{
    (void)grad;
    (void)replacement;
    int *calls = user;
    ++*calls;
    /* any failing call leaves its message; this one is the hook's own */
    clt_tensor *bad = NULL;
    return clt_reshape(grad, 1, (int64_t[]){7}, &bad);
}

static clt_status wrong_size_hook(void *user, const clt_tensor *grad, clt_tensor **replacement)
{
    (void)user;
    clt_tensor *flat = NULL;
    clt_status st = clt_ones(clt_tensor_device(grad), clt_tensor_dtype(grad), 1,
                             (int64_t[]){4}, &flat);
    *replacement = flat;
    return st;
}

Test(hooks, removal_failure_and_wrong_size)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {1, 2, 3};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y = NULL, *l = NULL;
    hook_log log = {0};
    hook_ctx scale = {&log, "s", 10, 0};
    clt_hook *h = NULL, *hx = NULL;
    CHECK(clt_tensor_register_hook(x, log_hook, &scale, &hx));
    CHECK(clt_mul_scalar(x, 2, &y));
    CHECK(clt_tensor_register_hook(y, log_hook, &scale, &h));
    clt_hook_remove(h);
    clt_hook_remove(hx);
    clt_hook_remove(NULL);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 1));
    cr_assert_eq(log.n, 0, "a removed hook ran");
    clt_tensor *gx = NULL;
    CHECK(clt_grad(x, &gx));
    assert_values(gx, (double[]){2, 2, 2}, 3, 0, 0);
    /* a failing hook on the intermediate: backward stops, x.grad as it was */
    int calls = 0;
    CHECK(clt_tensor_register_hook(y, fail_hook, &calls, &h));
    clt_status st = clt_backward(l, NULL, 1);
    assert_error(st, CLT_ERR_INVALID_ARGUMENT,
                 "clt_backward: hook on the float64 [3] tensor that MulBackward");
    cr_assert(strstr(clt_last_error(), "clt_reshape") != NULL,
              "the hook's own message is gone: %s", clt_last_error());
    cr_assert_eq(calls, 1);
    assert_values(gx, (double[]){2, 2, 2}, 3, 0, 0);
    clt_hook_remove(h);
    /* a hook that changes the size, on the leaf */
    CHECK(clt_tensor_register_hook(x, wrong_size_hook, NULL, &h));
    assert_error(clt_backward(l, NULL, 1), CLT_ERR_SHAPE_MISMATCH,
                 "hook on the float64 [3] leaf tensor: the hook changed the size of the "
                 "gradient from [3] to [4]");
    assert_values(gx, (double[]){2, 2, 2}, 3, 0, 0);
    clt_hook_remove(h);
    CHECK(clt_backward(l, NULL, 0));
    assert_values(gx, (double[]){4, 4, 4}, 3, 0, 0);
    clt_tensor *c = f64(dev, 1, s3, xv);
    assert_error(clt_tensor_register_hook(c, log_hook, &scale, &h), CLT_ERR_INVALID_ARGUMENT,
                 "does not require gradients");
    cr_assert_null(h);
    clt_scope_end();
}

/* Under clt_autograd_grad (torch 1.13): an input's gradient is taken before
 * its hooks, which do not run; hooks between the output and the inputs do. */
Test(hooks, hooks_under_autograd_grad)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {1, 2, 3};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y = NULL, *z = NULL, *l = NULL;
    CHECK(clt_mul_scalar(x, 2, &y));
    CHECK(clt_mul(y, y, &z));
    CHECK(clt_sum(z, &l));
    hook_log log = {0};
    hook_ctx yh = {&log, "y", 10, 0}, xh = {&log, "x", 0, 1};
    CHECK(clt_tensor_register_hook(y, log_hook, &yh, NULL));
    CHECK(clt_tensor_register_hook(x, log_hook, &xh, NULL));
    clt_tensor *g = NULL, *g2[2] = {0};
    CHECK(clt_autograd_grad(&l, 1, NULL, &x, 1, 1, 0, &g));
    assert_values(g, (double[]){80, 160, 240}, 3, 0, 0);
    cr_assert_eq(log.n, 1);
    cr_assert_str_eq(log.e[0].name, "y");
    CHECK(clt_autograd_grad(&l, 1, NULL, &y, 1, 1, 0, &g));
    assert_values(g, (double[]){4, 8, 12}, 3, 0, 0);
    cr_assert_eq(log.n, 1, "y's hook ran for y's own gradient");
    clt_tensor *both[2] = {x, y};
    CHECK(clt_autograd_grad(&l, 1, NULL, both, 2, 1, 0, g2));
    assert_values(g2[0], (double[]){80, 160, 240}, 3, 0, 0);
    assert_values(g2[1], (double[]){4, 8, 12}, 3, 0, 0);
    assert_no_grad(x);
    clt_scope_end();
}

typedef struct post_ctx {
    double seen[4][2];
    int calls;
    clt_hook *self; /* removes itself on its second call */
} post_ctx;

static clt_status post_hook(void *user, clt_tensor *t)
{
    post_ctx *c = user;
    clt_tensor *g = NULL;
    clt_status st = clt_grad(t, &g);
    if (st != CLT_OK)
        return st;
    st = clt_tensor_read(g, c->seen[c->calls++], 2 * sizeof(double));
    clt_tensor_free(g);
    if (c->calls == 2)
        clt_hook_remove(c->self);
    return st;
}

Test(hooks, post_accumulate_grad_hook_sees_the_updated_grad)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s2[1] = {2};
    const double wv[2] = {1.5, -2.0};
    clt_tensor *w = leaf64(dev, 1, s2, wv), *w3 = NULL, *ww = NULL, *s = NULL, *l = NULL;
    CHECK(clt_mul_scalar(w, 3, &w3));
    CHECK(clt_mul(w, w, &ww));
    CHECK(clt_add(w3, ww, &s));
    CHECK(clt_sum(s, &l));
    post_ctx pc = {0};
    hook_log log = {0};
    hook_ctx pre = {&log, "pre", 0, 0};
    CHECK(clt_tensor_register_hook(w, log_hook, &pre, NULL));
    CHECK(clt_tensor_register_post_accumulate_grad_hook(w, post_hook, &pc, &pc.self));
    CHECK(clt_backward(l, NULL, 1));
    CHECK(clt_backward(l, NULL, 1));
    CHECK(clt_backward(l, NULL, 0));
    /* d/dw = 3 + 2w = [6, -1] per pass; the hook saw 1x, then 2x; removed */
    cr_assert_eq(pc.calls, 2);
    cr_assert(pc.seen[0][0] == 6 && pc.seen[0][1] == -1);
    cr_assert(pc.seen[1][0] == 12 && pc.seen[1][1] == -2);
    /* the pre hook saw each pass's own gradient, before accumulation */
    cr_assert_eq(log.n, 3);
    for (int k = 0; k < 3; k++)
        cr_assert(log.e[k].v[0] == 6 && log.e[k].v[1] == -1);
    clt_tensor *g = NULL;
    CHECK(clt_grad(w, &g));
    assert_values(g, (double[]){18, -3}, 2, 0, 0);
    clt_hook *h = (clt_hook *)1;
    assert_error(clt_tensor_register_post_accumulate_grad_hook(w3, post_hook, &pc, &h),
                 CLT_ERR_INVALID_ARGUMENT, "cannot be registered on non-leaf tensors");
    cr_assert_null(h);
    clt_scope_end();
}

/* ---- clt_checkpoint -------------------------------------------------------------- */

/* One block: dropout(tanh(linear(x))). */
typedef struct block {
    clt_module *lin, *drop;
} block;

static clt_status block_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                           size_t *m)
{
    block *b = user;
    clt_tensor *h = NULL, *t = NULL;
    (void)n;
    clt_status st = clt_module_forward(b->lin, in[0], &h);
    if (st == CLT_OK)
        st = clt_tanh(h, &t);
    if (st == CLT_OK)
        st = clt_module_forward(b->drop, t, &out[0]);
    clt_tensor_free(h);
    clt_tensor_free(t);
    *m = st == CLT_OK;
    return st;
}

/* Runs x through the blocks (checkpointed or not), backward of sum(out^2);
 * returns x's gradient and the first weight's, read back. */
static void run_blocks(clt_device *dev, block *b, int nb, clt_generator *gen, uint64_t offset,
                       int ckpt, float **gx, float **gw)
{
    CHECK(clt_scope_begin());
    float xv[8 * 16];
    fill_random(xv, 8 * 16, 3);
    clt_tensor *x = NULL, *cur, *sq = NULL, *l = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){8, 16}, xv, &x));
    CHECK(clt_set_requires_grad(x, 1));
    clt_generator_set_offset(gen, offset);
    cur = x;
    for (int k = 0; k < nb; k++) {
        if (ckpt) {
            clt_tensor **outs = NULL;
            size_t m = 0;
            CHECK(clt_checkpoint(block_fn, &b[k], &cur, 1, &outs, &m));
            cr_assert_eq(m, 1);
            cr_assert_str_eq(clt_grad_fn_name(outs[0]), "CheckpointBackward");
            cur = outs[0];
            clt_free(outs);
        } else {
            clt_tensor *o = NULL;
            size_t m = 0;
            CHECK(block_fn(&b[k], &cur, 1, &o, &m));
            cur = o;
        }
    }
    CHECK(clt_mul(cur, cur, &sq));
    CHECK(clt_sum(sq, &l));
    /* a draw between forward and backward must not change the masks */
    clt_tensor *noise = NULL;
    CHECK(clt_rand(gen, dev, CLT_FLOAT32, 1, (int64_t[]){5}, &noise));
    uint64_t before = clt_generator_offset(gen);
    CHECK(clt_backward(l, NULL, 0));
    cr_assert_eq(clt_generator_offset(gen), before, "backward moved the generator");
    *gx = read_grad_f32(x);
    clt_tensor **params = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(b[0].lin, &params, &np));
    *gw = read_grad_f32(params[0]);
    for (int k = 0; k < nb; k++) {
        clt_tensor **ps = NULL;
        size_t n = 0;
        CHECK(clt_module_parameters(b[k].lin, &ps, &n));
        for (size_t i = 0; i < n; i++)
            CHECK(clt_zero_grad(ps[i], 1));
        clt_free(ps);
    }
    clt_free(params);
    clt_scope_end();
}

Test(hooks, checkpoint_gives_the_plain_runs_bits_with_dropout)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(7, &gen));
    block b[2];
    for (int k = 0; k < 2; k++) {
        CHECK(clt_linear(dev, 16, 16, 1, gen, &b[k].lin));
        CHECK(clt_dropout_layer(0.5, gen, &b[k].drop));
    }
    float *px, *pw, *cx, *cw;
    run_blocks(dev, b, 2, gen, 1000, 0, &px, &pw);
    run_blocks(dev, b, 2, gen, 1000, 1, &cx, &cw);
    cr_assert(memcmp(px, cx, 8 * 16 * sizeof(float)) == 0, "x's gradient differs");
    cr_assert(memcmp(pw, cw, 16 * 16 * sizeof(float)) == 0, "the weight's gradient differs");
    int nonzero = 0;
    for (int i = 0; i < 8 * 16; i++)
        nonzero += px[i] != 0;
    cr_assert(nonzero > 0, "no gradient reached x");
    /* another mask (the generator moved on) gives another gradient: the
     * comparison above could fail */
    float *ox, *ow;
    run_blocks(dev, b, 2, gen, 0, 1, &ox, &ow);
    cr_assert(memcmp(px, ox, 8 * 16 * sizeof(float)) != 0, "other masks, the same gradient");
    free(ox);
    free(ow);
    free(px);
    free(pw);
    free(cx);
    free(cw);
    for (int k = 0; k < 2; k++) {
        clt_module_free(b[k].lin);
        clt_module_free(b[k].drop);
    }
    clt_generator_free(gen);
}

/* A segment of `steps` sin ops. */
static clt_status sin_chain(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                            size_t *m)
{
    int steps = *(const int *)user;
    clt_tensor *cur = NULL;
    (void)n;
    clt_status st = clt_sin(in[0], &cur);
    for (int k = 1; k < steps && st == CLT_OK; k++) {
        clt_tensor *next = NULL;
        st = clt_sin(cur, &next);
        clt_tensor_free(cur);
        cur = next;
    }
    out[0] = cur;
    *m = st == CLT_OK;
    return st;
}

/* Peak bytes of forward and backward through 8 segments of 6 sin ops. */
static uint64_t chain_peak(clt_device *dev, int ckpt, double **gx)
{
    const int steps = 6;
    int64_t shape[2] = {128, 256};
    CHECK(clt_scope_begin());
    clt_tensor *x = iota(dev, 2, shape), *cur, *l = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_memory_reset_peak(dev));
    cur = x;
    for (int s = 0; s < 8; s++) {
        clt_tensor *o = NULL, **outs = NULL;
        size_t m = 0;
        if (ckpt) {
            CHECK(clt_checkpoint(sin_chain, (void *)&steps, &cur, 1, &outs, &m));
            o = outs[0];
            clt_free(outs);
        } else {
            CHECK(sin_chain((void *)&steps, &cur, 1, &o, &m));
        }
        if (cur != x)
            clt_tensor_free(cur);
        cur = o;
    }
    CHECK(clt_sum(cur, &l));
    clt_tensor_free(cur);
    CHECK(clt_backward(l, NULL, 0));
    uint64_t peak = mem_stats(dev).peak;
    clt_tensor *g = NULL;
    CHECK(clt_grad(x, &g));
    *gx = read_as_f64(g);
    clt_scope_end();
    return peak;
}

Test(hooks, checkpoint_keeps_no_intermediates)
{
    clt_device *dev = get_device("cpu");
    double *gp, *gc;
    uint64_t plain = chain_peak(dev, 0, &gp), ck = chain_peak(dev, 1, &gc);
    cr_assert(memcmp(gp, gc, 128 * 256 * sizeof(double)) == 0, "the gradients differ");
    /* plain: 48 saved [128, 256] float32 tensors (128 KiB each); checkpointed:
     * the 8 segment boundaries and one segment's 6 at a time */
    cr_assert_lt(ck * 2, plain, "peak %llu bytes with checkpoints, %llu without",
                 (unsigned long long)ck, (unsigned long long)plain);
    free(gp);
    free(gc);
}

static clt_status reads_intermediate(void *user, clt_tensor *const *in, size_t n,
                                     clt_tensor **out, size_t *m)
{
    (void)n;
    *m = 1;
    return clt_mul(in[0], (const clt_tensor *)user, &out[0]);
}

static clt_status fails(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                        size_t *m)
{
    (void)user;
    (void)n;
    (void)m;
    return clt_reshape(in[0], 1, (int64_t[]){5}, &out[0]);
}

Test(hooks, checkpoint_plain_run_and_errors)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {1, 2, 3};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y = NULL, **outs = (clt_tensor **)1;
    size_t m = 9;
    const int steps = 2;
    int was = clt_set_grad_enabled(0);
    CHECK(clt_checkpoint(sin_chain, (void *)&steps, &x, 1, &outs, &m));
    clt_set_grad_enabled(was);
    cr_assert_eq(m, 1);
    cr_assert(!clt_requires_grad(outs[0]) && clt_grad_fn_name(outs[0]) == NULL);
    double want[3];
    for (int i = 0; i < 3; i++)
        want[i] = sin(sin(xv[i]));
    assert_values(outs[0], want, 3, 1e-15, 0);
    clt_free(outs);
    CHECK(clt_mul_scalar(x, 2, &y));
    assert_error(clt_checkpoint(reads_intermediate, y, &x, 1, &outs, &m),
                 CLT_ERR_INVALID_ARGUMENT, "reads a computed tensor");
    cr_assert(outs == NULL && m == 0);
    assert_error(clt_checkpoint(fails, NULL, &x, 1, &outs, &m), CLT_ERR_INVALID_ARGUMENT,
                 "clt_checkpoint: clt_reshape");
    cr_assert(outs == NULL && m == 0);
    clt_scope_end();
}

static clt_status first_doubled(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                                size_t *m)
{
    (void)user;
    (void)n;
    *m = 1;
    return clt_mul_scalar(in[0], 2, &out[0]);
}

/* A checkpoint whose state a backward pass freed stays freed when a later
 * pass reaches it without a gradient (here as the unused second input of
 * another checkpoint): a third pass that gives it one is refused, where
 * it used to run the function with the freed state (a NULL dereference;
 * the fuzz target found it). */
Test(hooks, checkpoint_freed_state_stays_freed)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s2[1] = {2};
    const double xv[2] = {1, 2};
    clt_tensor *x = leaf64(dev, 1, s2, xv), *s = NULL, *w = NULL, **outs = NULL;
    size_t m = 0;
    CHECK(clt_checkpoint(first_doubled, NULL, &x, 1, &outs, &m));
    clt_tensor *y = outs[0];
    clt_free(outs);
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0)); /* frees y's checkpoint */
    clt_tensor *in2[2] = {x, y};
    CHECK(clt_checkpoint(first_doubled, NULL, in2, 2, &outs, &m));
    clt_tensor *z = outs[0];
    clt_free(outs);
    CHECK(clt_sum(z, &s));
    CHECK(clt_backward(s, NULL, 0)); /* reaches y's node with no gradient */
    CHECK(clt_mul_scalar(y, 3, &w));
    CHECK(clt_sum(w, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "backward through the graph a second time");
    clt_scope_end();
}

/* torch 1.13:
 *   x = tensor([1., 2., 3.], requires_grad=True); y = x * 2; w = y * 3
 *   y.retain_grad(); w.retain_grad(); z = (w * w).sum(); z.retain_grad()
 *   autograd.grad(z, x) twice: y.grad [36, 72, 108] then [72, 144, 216],
 *   w.grad [12, 24, 36] then doubled, z.grad 1 then 2, x.grad None;
 *   with grads cleared, autograd.grad(z, y): y.grad None (an input's own),
 *   w.grad [12, 24, 36]; autograd.grad(z, w): neither; autograd.grad(z,
 *   [y, x]): y.grad [36, 72, 108] (y also leads to x). */
Test(hooks, autograd_grad_fills_retained_grads)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    int64_t s3[1] = {3};
    const double xv[3] = {1, 2, 3};
    clt_tensor *x = leaf64(dev, 1, s3, xv), *y = NULL, *w = NULL, *ww = NULL, *z = NULL;
    CHECK(clt_mul_scalar(x, 2, &y));
    CHECK(clt_mul_scalar(y, 3, &w));
    CHECK(clt_mul(w, w, &ww));
    CHECK(clt_sum(ww, &z));
    CHECK(clt_retain_grad(y));
    CHECK(clt_retain_grad(w));
    CHECK(clt_retain_grad(z));
    clt_tensor *g = NULL, *gy = NULL, *gw = NULL, *gz = NULL, *g2[2] = {0};
    CHECK(clt_autograd_grad(&z, 1, NULL, &x, 1, 1, 0, &g));
    assert_values(g, (double[]){72, 144, 216}, 3, 0, 0);
    CHECK(clt_grad(y, &gy));
    CHECK(clt_grad(w, &gw));
    CHECK(clt_grad(z, &gz));
    assert_values(gy, (double[]){36, 72, 108}, 3, 0, 0);
    assert_values(gw, (double[]){12, 24, 36}, 3, 0, 0);
    assert_values(gz, (double[]){1}, 1, 0, 0);
    assert_no_grad(x);
    CHECK(clt_autograd_grad(&z, 1, NULL, &x, 1, 1, 0, &g));
    assert_values(gy, (double[]){72, 144, 216}, 3, 0, 0); /* gy shares the storage */
    assert_values(gw, (double[]){24, 48, 72}, 3, 0, 0);
    assert_values(gz, (double[]){2}, 1, 0, 0);
    /* a failed call changes nothing: x and an unused leaf, without allow_unused */
    clt_tensor *u = leaf64(dev, 1, s3, xv), *xu[2] = {x, u};
    assert_error(clt_autograd_grad(&z, 1, NULL, xu, 2, 1, 0, g2), CLT_ERR_INVALID_ARGUMENT,
                 "not have been used");
    assert_values(gy, (double[]){72, 144, 216}, 3, 0, 0);
    CHECK(clt_zero_grad(y, 1));
    CHECK(clt_zero_grad(w, 1));
    CHECK(clt_autograd_grad(&z, 1, NULL, &y, 1, 1, 0, &g));
    assert_values(g, (double[]){36, 72, 108}, 3, 0, 0);
    assert_no_grad(y);
    CHECK(clt_grad(w, &gw));
    assert_values(gw, (double[]){12, 24, 36}, 3, 0, 0);
    CHECK(clt_zero_grad(w, 1));
    CHECK(clt_autograd_grad(&z, 1, NULL, &w, 1, 1, 0, &g));
    assert_no_grad(y);
    assert_no_grad(w);
    clt_tensor *yx[2] = {y, x};
    CHECK(clt_autograd_grad(&z, 1, NULL, yx, 2, 1, 0, g2));
    CHECK(clt_grad(y, &gy));
    assert_values(gy, (double[]){36, 72, 108}, 3, 0, 0);
    assert_no_grad(x);
    clt_scope_end();
}

/* Hooks and retain_grad on the pieces of one unbind node, of
 * x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]: l = sum(p0 * p2) + sum(p0), p1
 * unused.  p0's gradient p2 + 1 = [8, 9, 10] is scaled by its hook to
 * [80, 90, 100]; p2's, p0 = [1, 2, 3], gets 1 added: [2, 3, 4], which p2
 * keeps (retained after the hook); x.grad holds both rows and zeros.
 * clt_autograd_grad with respect to p0 takes [8, 9, 10] (before its hook). */
Test(hooks, hooks_on_the_pieces_of_one_node)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    const double xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    clt_tensor *x = leaf64(dev, 2, (int64_t[]){3, 3}, xv), **ps = NULL, *m = NULL, *s1 = NULL,
               *s2 = NULL, *l = NULL;
    size_t n = 0;
    CHECK(clt_unbind(x, 0, &ps, &n));
    cr_assert_eq(n, 3);
    hook_log log = {0};
    hook_ctx h0 = {&log, "p0", 10, 0}, h2 = {&log, "p2", 0, 1};
    CHECK(clt_tensor_register_hook(ps[0], log_hook, &h0, NULL));
    CHECK(clt_tensor_register_hook(ps[2], log_hook, &h2, NULL));
    CHECK(clt_retain_grad(ps[2]));
    CHECK(clt_retain_grad(ps[1]));
    CHECK(clt_mul(ps[0], ps[2], &m));
    CHECK(clt_sum(m, &s1));
    CHECK(clt_sum(ps[0], &s2));
    CHECK(clt_add(s1, s2, &l));
    clt_tensor *g = NULL;
    CHECK(clt_autograd_grad(&l, 1, NULL, &ps[0], 1, 1, 0, &g));
    assert_values(g, (double[]){8, 9, 10}, 3, 0, 0);
    cr_assert_eq(log.n, 0, "a piece's hook ran for clt_autograd_grad");
    CHECK(clt_backward(l, NULL, 0));
    cr_assert_eq(log.n, 2);
    const logged *e0 = strcmp(log.e[0].name, "p0") == 0 ? &log.e[0] : &log.e[1];
    const logged *e2 = e0 == &log.e[0] ? &log.e[1] : &log.e[0];
    assert_logged(e0, "p0", (double[]){8, 9, 10});
    assert_logged(e2, "p2", (double[]){1, 2, 3});
    clt_tensor *gx = NULL, *g2 = NULL;
    CHECK(clt_grad(x, &gx));
    assert_values(gx, (double[]){80, 90, 100, 0, 0, 0, 2, 3, 4}, 9, 0, 0);
    CHECK(clt_grad(ps[2], &g2));
    assert_values(g2, (double[]){2, 3, 4}, 3, 0, 0);
    assert_no_grad(ps[1]);
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
    clt_scope_end();
}
