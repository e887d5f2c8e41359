/* test_double_backward.c: gradients of gradients (create_graph).  For each
 * op in scope, the first-order gradients G = dL/dx of L = sum(f(x) * u)
 * are taken with create_graph; M = sum(G * v) is then differentiated
 * again, and its gradients (Hessian-vector products, and J v for u) are
 * compared with central finite differences of M computed from plain
 * first-order gradients in float64, and with second differences of L
 * itself; then the engine's rules (refused nodes, retain_graph, leaves'
 * grad with history), a WGAN-GP step on a small MLP and a MAML inner
 * step, each against a float64 host computation. */
#include <math.h>

#include "gradcheck.h"

/* M = sum_i sum(G_i * v_i), G = the gradients of L = sum(f(x) * u) with
 * respect to the inputs that require grad, with create_graph when `create`
 * (u then requires grad too).  Returns M (new); *f0 the value of f. */
static clt_tensor *gg_m(clt_device *dev, gc_fn f, const void *ctx, int nin, const gc_in *ins,
                        clt_tensor **x, clt_tensor *u, int create)
{
    clt_tensor *out = NULL, *grads[8] = {0}, *xs[8], *m = NULL;
    int ng = 0;
    CHECK(f(x, &out, ctx));
    for (int i = 0; i < nin; i++)
        if (ins[i].grad)
            xs[ng++] = x[i];
    clt_grad_opts o = {0, create, 0};
    CHECK(clt_autograd_grad_ex(&out, 1, &u, xs, (size_t)ng, &o, grads));
    for (int i = 0, k = 0; i < nin; i++) {
        if (!ins[i].grad)
            continue;
        size_t n = gc_numel(&ins[i]);
        double *vv = malloc(n * sizeof *vv);
        for (size_t e = 0; e < n; e++)
            vv[e] = gc_weight(e * 5 + 2 + (size_t)i);
        clt_tensor *v = NULL, *p = NULL, *s = NULL, *next = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, ins[i].ndim, ins[i].shape, vv, &v));
        free(vv);
        CHECK(clt_mul(grads[k], v, &p));
        CHECK(clt_sum(p, &s));
        if (m) {
            CHECK(clt_add(m, s, &next));
            clt_tensor_free(m);
            clt_tensor_free(s);
            m = next;
        } else {
            m = s;
        }
        clt_tensor_free(v);
        clt_tensor_free(p);
        clt_tensor_free(grads[k++]);
    }
    clt_tensor_free(out);
    return m;
}

/* u: the weights of L, of f's output shape. */
static clt_tensor *gg_u(clt_device *dev, gc_fn f, const void *ctx, int nin, const gc_in *ins,
                        double **data, int grad, double **uv_out, size_t *nu)
{
    clt_tensor *x[8] = {0}, *out = NULL, *u = NULL;
    gc_make(dev, nin, ins, data, x, 0);
    int was = clt_set_grad_enabled(0);
    CHECK(f(x, &out, ctx));
    clt_set_grad_enabled(was);
    size_t n = (size_t)clt_tensor_numel(out);
    double *uv = *uv_out ? *uv_out : malloc((n ? n : 1) * sizeof *uv);
    if (*uv_out == NULL)
        for (size_t k = 0; k < n; k++)
            uv[k] = gc_weight(k);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, clt_tensor_ndim(out), clt_tensor_shape(out), uv,
                               &u));
    if (grad)
        CHECK(clt_set_requires_grad(u, 1));
    *uv_out = uv;
    *nu = n;
    clt_tensor_free(out);
    for (int i = 0; i < nin; i++)
        clt_tensor_free(x[i]);
    return u;
}

/* M at data (and u's values uv) from plain first-order gradients. */
static double gg_m_plain(clt_device *dev, gc_fn f, const void *ctx, int nin, const gc_in *ins,
                         double **data, double *uv)
{
    size_t nu = 0;
    clt_tensor *x[8] = {0};
    int was = clt_set_grad_enabled(1);
    gc_make(dev, nin, ins, data, x, 1);
    clt_tensor *u = gg_u(dev, f, ctx, nin, ins, data, 0, &uv, &nu);
    clt_tensor *m = gg_m(dev, f, ctx, nin, ins, x, u, 0);
    double v = 0;
    CHECK(clt_tensor_item(m, &v));
    clt_tensor_free(m);
    clt_tensor_free(u);
    for (int i = 0; i < nin; i++)
        clt_tensor_free(x[i]);
    clt_set_grad_enabled(was);
    return v;
}

/* L = sum(f(x) * u) at data, grad mode off. */
static double gg_l(clt_device *dev, gc_fn f, const void *ctx, int nin, const gc_in *ins,
                   double **data, double *uv)
{
    size_t nu = 0;
    clt_tensor *x[8] = {0}, *out = NULL, *p = NULL, *s = NULL;
    int was = clt_set_grad_enabled(0);
    gc_make(dev, nin, ins, data, x, 0);
    clt_tensor *u = gg_u(dev, f, ctx, nin, ins, data, 0, &uv, &nu);
    CHECK(f(x, &out, ctx));
    CHECK(clt_mul(out, u, &p));
    CHECK(clt_sum(p, &s));
    double v = 0;
    CHECK(clt_tensor_item(s, &v));
    clt_tensor_free(s);
    clt_tensor_free(p);
    clt_tensor_free(out);
    clt_tensor_free(u);
    for (int i = 0; i < nin; i++)
        clt_tensor_free(x[i]);
    clt_set_grad_enabled(was);
    return v;
}

/* The setup both checks share: a copy of the inputs' values (data), the
 * inputs x, u (requiring grad) and its values uv, and M with create_graph,
 * inside a scope the caller ends after keeping what it needs. */
typedef struct gg_state {
    double *data[8], *uv;
    clt_tensor *x[8], *u;
    size_t nu;
} gg_state;

static clt_tensor *gg_begin(gg_state *s, clt_device *dev, gc_fn f, const void *ctx, int nin,
                            const gc_in *ins)
{
    cr_assert(nin <= 7);
    *s = (gg_state){.nu = 0};
    for (int i = 0; i < nin; i++) {
        size_t n = gc_numel(&ins[i]);
        s->data[i] = malloc((n ? n : 1) * sizeof(double));
        memcpy(s->data[i], ins[i].data, n * sizeof(double));
    }
    gc_make(dev, nin, ins, s->data, s->x, 1);
    s->u = gg_u(dev, f, ctx, nin, ins, s->data, 1, &s->uv, &s->nu);
    CHECK(clt_scope_begin());
    clt_tensor *m = gg_m(dev, f, ctx, nin, ins, s->x, s->u, 1);
    cr_assert(clt_requires_grad(m), "M has no history: the first gradients were detached");
    return m;
}

static void gg_end(gg_state *s, int nin)
{
    clt_tensor_free(s->u);
    for (int i = 0; i < nin; i++) {
        clt_tensor_free(s->x[i]);
        free(s->data[i]);
    }
    free(s->uv);
}

/* dM/d(vals[e]) by central differences of M from plain first-order
 * gradients, vals being one of s->data or s->uv. */
static double gg_m_diff(gg_state *s, clt_device *dev, gc_fn f, const void *ctx, int nin,
                        const gc_in *ins, double *vals, size_t e)
{
    const double eps = 1e-6;
    double orig = vals[e], mv[2];
    for (int side = 0; side < 2; side++) {
        vals[e] = orig + (side ? -eps : eps);
        mv[side] = gg_m_plain(dev, f, ctx, nin, ins, s->data, s->uv);
    }
    vals[e] = orig;
    return (mv[0] - mv[1]) / (2 * eps);
}

/* The check: dM/dx (Hessian-vector products) and dM/du (J v) against
 * finite differences of M, and dM/dx against second differences of L in
 * the directions v and e_k. */
static void gradgradcheck_tol(clt_device *dev, gc_fn f, const void *ctx, int nin,
                              const gc_in *ins, double rtol, double atol)
{
    const double h = 1e-4;
    gg_state s;
    clt_tensor *m = gg_begin(&s, dev, f, ctx, nin, ins), *wrt[8], *an[8] = {0};
    double **data = s.data;
    int nw = 0;
    for (int i = 0; i < nin; i++)
        if (ins[i].grad)
            wrt[nw++] = s.x[i];
    wrt[nw++] = s.u;
    CHECK(clt_autograd_grad(&m, 1, NULL, wrt, (size_t)nw, 0, 1, an));
    for (int i = 0; i < nw; i++)
        if (an[i])
            CHECK(clt_scope_keep(an[i]));
    clt_scope_end();
    int was = clt_set_grad_enabled(0);
    for (int i = 0, k = 0; i <= nin; i++) {
        int is_u = i == nin;
        if (!is_u && !ins[i].grad)
            continue;
        size_t n = is_u ? s.nu : gc_numel(&ins[i]);
        double *got = calloc(n ? n : 1, sizeof *got);
        if (an[k])
            CHECK(clt_tensor_read(an[k], got, n * sizeof *got));
        clt_tensor_free(an[k++]);
        double *vals = is_u ? s.uv : data[i];
        for (size_t e = 0; e < n; e++) {
            double num = gg_m_diff(&s, dev, f, ctx, nin, ins, vals, e);
            cr_assert(close_enough(got[e], num, rtol, atol),
                      "%s %d element %zu: double backward %.10g, finite differences of the "
                      "gradient %.10g",
                      is_u ? "grad_output" : "input", i, e, got[e], num);
            if (is_u)
                continue;
            /* (H v)_e from L: v moves every input that requires grad */
            double l[4];
            for (int c = 0; c < 4; c++) {
                double sv = c < 2 ? h : -h, se = c % 2 ? -h : h;
                for (int j = 0; j < nin; j++)
                    for (size_t q = 0; ins[j].grad && q < gc_numel(&ins[j]); q++)
                        data[j][q] += sv * gc_weight(q * 5 + 2 + (size_t)j);
                vals[e] += se;
                l[c] = gg_l(dev, f, ctx, nin, ins, data, s.uv);
                vals[e] -= se;
                for (int j = 0; j < nin; j++)
                    for (size_t q = 0; ins[j].grad && q < gc_numel(&ins[j]); q++)
                        data[j][q] -= sv * gc_weight(q * 5 + 2 + (size_t)j);
            }
            double second = (l[0] - l[1] - l[2] + l[3]) / (4 * h * h);
            cr_assert(close_enough(got[e], second, 1e-4, 1e-5),
                      "input %d element %zu: double backward %.10g, second differences of "
                      "the function %.10g",
                      i, e, got[e], second);
        }
        free(got);
    }
    clt_set_grad_enabled(was);
    gg_end(&s, nin);
}

static void gradgradcheck(clt_device *dev, gc_fn f, const void *ctx, int nin, const gc_in *ins)
{
    gradgradcheck_tol(dev, f, ctx, nin, ins, 1e-5, 1e-6);
}

/* dM/du alone, the double backward's derivative with respect to
 * grad_output (J v, the path a gradient penalty's first gradient takes),
 * against central differences of M in u: at points where differences in
 * x mean nothing (infinities, NaN), as M is linear in u and finite where
 * the first gradient is. */
static void gradgradcheck_u(const char *what, clt_device *dev, gc_fn f, const void *ctx,
                            int nin, const gc_in *ins)
{
    gg_state s;
    clt_tensor *m = gg_begin(&s, dev, f, ctx, nin, ins), *an = NULL;
    CHECK(clt_autograd_grad(&m, 1, NULL, &s.u, 1, 0, 1, &an));
    if (an)
        CHECK(clt_scope_keep(an));
    clt_scope_end();
    double *got = calloc(s.nu ? s.nu : 1, sizeof *got);
    if (an)
        CHECK(clt_tensor_read(an, got, s.nu * sizeof *got));
    clt_tensor_free(an);
    int was = clt_set_grad_enabled(0);
    for (size_t e = 0; e < s.nu; e++) {
        double num = gg_m_diff(&s, dev, f, ctx, nin, ins, s.uv, e);
        cr_assert(close_enough(got[e], num, 1e-5, 1e-6),
                  "%s: grad_output element %zu: double backward %.10g, finite differences of "
                  "the gradient %.10g",
                  what, e, got[e], num);
    }
    clt_set_grad_enabled(was);
    free(got);
    gg_end(&s, nin);
}

static const double X6[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2};
static const double P6[] = {0.7, 1.3, 2.1, 0.4, 1.6, 2.2};
static const double Y3[] = {1.1, -0.6, 1.9};

/* ---- elementwise ---------------------------------------------------------------- */

typedef clt_status (*tt_fn)(const clt_tensor *, const clt_tensor *, clt_tensor **);
typedef clt_status (*ts_fn)(const clt_tensor *, double, clt_tensor **);

static clt_status call_tt(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return (*(const tt_fn *)ctx)(in[0], in[1], out);
}

/* f(a, b) * a * b: a linear op's second derivative is zero; the product
 * makes the check see its first derivative mixed in. */
static clt_status call_tt_mixed(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *y = NULL, *p = NULL;
    clt_status st = (*(const tt_fn *)ctx)(in[0], in[1], &y);
    if (st == CLT_OK)
        st = clt_mul(y, in[0], &p);
    if (st == CLT_OK)
        st = clt_mul(p, in[1], out);
    clt_tensor_free(y);
    clt_tensor_free(p);
    return st;
}

Test(double_backward, binary_ops_with_broadcasting)
{
    clt_device *dev = get_device("cpu");
    const tt_fn fns[] = {clt_add, clt_sub, clt_mul, clt_div};
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradgradcheck(dev, call_tt, &fns[i], 2, ins);
        gradgradcheck(dev, call_tt_mixed, &fns[i], 2, ins);
    }
    const tt_fn pw = clt_pow;
    gc_in pins[2] = {{2, {2, 3}, P6, 1}, {1, {3}, Y3, 1}};
    gradgradcheck(dev, call_tt, &pw, 2, pins);
}

static clt_status call_ts(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const struct {
        ts_fn f;
        double s;
    } *c = ctx;
    clt_tensor *y = NULL;
    clt_status st = c->f(in[0], c->s, &y);
    if (st == CLT_OK) /* times a: linear ops get a second derivative */
        st = clt_mul(y, in[0], out);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, scalar_ops)
{
    clt_device *dev = get_device("cpu");
    const struct {
        ts_fn f;
        double s;
    } cases[] = {{clt_add_scalar, 1.5},  {clt_sub_scalar, 0.5},  {clt_rsub_scalar, 2.0},
                 {clt_mul_scalar, -1.5}, {clt_div_scalar, 4.0},  {clt_rdiv_scalar, 3.0},
                 {clt_pow_scalar, 3.0},  {clt_pow_scalar, -1.5}, {clt_rpow_scalar, 1.7}};
    gc_in ins[1] = {{2, {2, 3}, P6, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradgradcheck(dev, call_ts, &cases[i], 1, ins);
}

static clt_status call_un_mixed(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *y = NULL;
    clt_status st = (*(const un_fn *)ctx)(in[0], &y);
    if (st == CLT_OK)
        st = clt_mul(y, in[0], out);
    clt_tensor_free(y);
    return st;
}

static clt_status leaky(const clt_tensor *a, clt_tensor **out)
{
    return clt_leaky_relu(a, 0.2, out);
}

static clt_status softplus(const clt_tensor *a, clt_tensor **out)
{
    return clt_softplus(a, 1.5, 2.0, out);
}

Test(double_backward, unary_ops)
{
    clt_device *dev = get_device("cpu");
    const un_fn fns[] = {clt_neg, clt_exp, clt_tanh, clt_sigmoid, clt_gelu, clt_relu, leaky,
                         softplus};
    gc_in ins[1] = {{2, {2, 3}, X6, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradgradcheck(dev, call_un, &fns[i], 1, ins);
        gradgradcheck(dev, call_un_mixed, &fns[i], 1, ins);
    }
    const un_fn pos[] = {clt_log, clt_sqrt};
    gc_in pins[1] = {{2, {2, 3}, P6, 1}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        gradgradcheck(dev, call_un, &pos[i], 1, pins);
}

/* The derivative with respect to grad_output at the special points
 * (+-inf, the kinks, and NaN where the first gradient is finite there):
 * finite where the first gradient is, the branch that does not apply
 * multiplying a zero, never 0 * inf = NaN (hardswish's middle branch gave
 * NaN at +-inf and NaN, where torch's hardswish_backward gives 0 and g). */
Test(double_backward, activations_in_grad_output_at_special_points)
{
    clt_device *dev = get_device("cpu");
    static const double sx[] = {-INFINITY, -4.0,  -3.0,   -1.5,     -0.0, 0.5,
                                3.0,       4.5,   1e300,  -1e300,   INFINITY, NAN};
    const un_fn fns[] = {clt_hardswish, clt_hardsigmoid, clt_relu6, clt_relu,  clt_selu,
                         clt_logsigmoid, clt_softsign,   leaky,     softplus,  clt_sigmoid,
                         clt_tanh};
    const char *names[] = {"hardswish", "hardsigmoid", "relu6", "relu",    "selu",
                           "logsigmoid", "softsign",   "leaky_relu", "softplus", "sigmoid",
                           "tanh"};
    /* the first five pass g (or 0) at NaN, the others NaN, which would
     * make every difference of M NaN: they go without the NaN */
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gc_in ins[1] = {{1, {i < 5 ? 12 : 11}, sx, 1}};
        gradgradcheck_u(names[i], dev, call_un, &fns[i], 1, ins);
    }
}

/* ---- reductions, views, joins, matmul ------------------------------------------------ */

/* g(x) * x summed a way: the reduction and the view both carry gradients of
 * gradients through the product. */
static clt_status call_reduce(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *sq = NULL, *r = NULL, *v = NULL;
    clt_status st = clt_mul(in[0], in[0], &sq); /* [2, 3] */
    int64_t shape23[2] = {3, 2}, ex[3] = {4, 2, 3};
    int perm[2] = {1, 0};
    if (st == CLT_OK) {
        switch (kind) {
        case 0: st = clt_sum(sq, &r); break;
        case 1: st = clt_sum_dim(sq, 1, 0, &r); break;
        case 2: st = clt_mean(sq, &r); break;
        case 3: st = clt_mean_dim(sq, 0, 1, &r); break;
        case 4: st = clt_view(sq, 2, shape23, &r); break;
        case 5: st = clt_reshape(sq, 1, (int64_t[]){6}, &r); break;
        case 6: st = clt_transpose(sq, 0, 1, &r); break;
        case 7: st = clt_permute(sq, 2, perm, &r); break;
        case 8: st = clt_expand(sq, 3, ex, &r); break;
        case 9:
            st = clt_unsqueeze(sq, 1, &v);
            if (st == CLT_OK)
                st = clt_squeeze(v, 1, &r);
            break;
        default: st = clt_narrow(sq, 1, 1, 2, &r); break;
        }
    }
    if (st == CLT_OK) /* times itself: the view's second derivative is not zero */
        st = clt_mul(r, r, out);
    clt_tensor_free(sq);
    clt_tensor_free(r);
    clt_tensor_free(v);
    return st;
}

Test(double_backward, reductions_and_views)
{
    clt_device *dev = get_device("cpu");
    gc_in ins[1] = {{2, {2, 3}, X6, 1}};
    for (int kind = 0; kind <= 10; kind++)
        gradgradcheck(dev, call_reduce, &kind, 1, ins);
}

static clt_status call_join(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *j = NULL, *idx = NULL, *s = NULL;
    const clt_tensor *parts[2] = {in[0], in[1]};
    clt_status st = CLT_OK;
    if (kind == 0) {
        st = clt_cat(parts, 2, 0, &j); /* [3] and [3] */
    } else if (kind == 1) {
        st = clt_stack(parts, 2, 1, &j);
    } else {
        int64_t iv[4] = {2, 0, 2, 1}, n = 4;
        st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 1, &n, iv, &idx);
        if (st == CLT_OK)
            st = clt_mul(in[0], in[1], &s);
        if (st == CLT_OK)
            st = clt_index_select(s, 0, idx, &j);
    }
    if (st == CLT_OK)
        st = clt_mul(j, j, out);
    clt_tensor_free(j);
    clt_tensor_free(idx);
    clt_tensor_free(s);
    return st;
}

Test(double_backward, joins_and_index_select)
{
    clt_device *dev = get_device("cpu");
    static const double Z3[] = {0.4, 1.7, -0.9};
    gc_in ins[2] = {{1, {3}, Y3, 1}, {1, {3}, Z3, 1}};
    for (int kind = 0; kind <= 2; kind++)
        gradgradcheck(dev, call_join, &kind, 2, ins);
}

/* tanh(a @ b): matmul's gradients are bilinear, so the HVP mixes both
 * operands. */
static clt_status call_matmul(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *p = NULL;
    clt_status st = clt_matmul(in[0], in[1], &p);
    if (st == CLT_OK)
        st = clt_tanh(p, out);
    clt_tensor_free(p);
    return st;
}

Test(double_backward, matmul)
{
    clt_device *dev = get_device("cpu");
    static const double B6[] = {0.3, -0.8, 0.5, 1.1, -0.2, 0.6};
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {2, {3, 2}, B6, 1}};
    gradgradcheck(dev, call_matmul, NULL, 2, ins);
    gc_in vec[2] = {{1, {3}, Y3, 1}, {2, {3, 2}, B6, 1}};
    gradgradcheck(dev, call_matmul, NULL, 2, vec);
}

/* ---- losses, softmax, norms ---------------------------------------------------------- */

static clt_status call_loss(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *t = NULL, *h = NULL;
    clt_status st = clt_tanh(in[0], &h); /* [2, 3]: a non-linear input */
    if (st != CLT_OK)
        return st;
    switch (kind) {
    case 0:
    case 1:
        st = clt_mse_loss(h, in[1], kind ? CLT_REDUCTION_SUM : CLT_REDUCTION_MEAN, out);
        break;
    case 2:
    case 3:
    case 4: {
        int64_t tv[2] = {2, 0}, n = 2;
        clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
        o.reduction = kind == 2 ? CLT_REDUCTION_MEAN : kind == 3 ? CLT_REDUCTION_SUM
                                                                  : CLT_REDUCTION_NONE;
        st = clt_tensor_from_host(dev, CLT_INT64, 1, &n, tv, &t);
        if (st == CLT_OK)
            st = clt_cross_entropy(h, t, &o, out);
        break;
    }
    case 5: st = clt_log_softmax(h, 1, out); break;
    case 6: st = clt_softmax(h, 0, out); break;
    case 7: st = clt_vector_norm(h, 2, out); break;
    default: st = clt_vector_norm_dim(h, 2, 1, 1, out); break;
    }
    clt_tensor_free(t);
    clt_tensor_free(h);
    return st;
}

Test(double_backward, losses_softmax_norm)
{
    clt_device *dev = get_device("cpu");
    static const double T6[] = {0.2, -0.5, 0.9, 0.1, 0.4, -0.3};
    gc_in mse[2] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, T6, 1}};
    for (int kind = 0; kind <= 1; kind++)
        gradgradcheck(dev, call_loss, &kind, 2, mse);
    gc_in one[1] = {{2, {2, 3}, X6, 1}};
    for (int kind = 2; kind <= 8; kind++)
        gradgradcheck(dev, call_loss, &kind, 1, one);
}

/* ---- the engine's rules ----------------------------------------------------------------- */

Test(double_backward, unsupported_node_gives_a_right_gradient_that_refuses)
{
    /* cdist with p = inf: torch 1.13 has no derivative of its backward
     * either ("the derivative for '_cdist_backward' is not implemented") */
    clt_device *dev = get_device("cpu");
    const double yv[3] = {0.2, 0.5, -0.3};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){1, 3}, Y3),
               *y = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){1, 3}, yv), *d = NULL, *s = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_cdist(x, y, INFINITY, &d));
    CHECK(clt_sum(d, &s));
    clt_tensor *g = NULL, *gg = NULL, *m = NULL;
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &g));
    double got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    /* the largest |x - y| is x2 - y2 = 2.2 > 0: all of it there */
    const double want[3] = {0, 0, 1};
    for (int k = 0; k < 3; k++)
        cr_assert_float_eq(got[k], want[k], 1e-12);
    /* (its NotImplemented node sits under the view cdist's result ends in) */
    cr_assert(clt_requires_grad(g), "the gradient must not be silently constant");
    CHECK(clt_mul(g, x, &gg));
    CHECK(clt_sum(gg, &m));
    clt_tensor *h = NULL;
    assert_error(clt_autograd_grad(&m, 1, NULL, &x, 1, 0, 0, &h), CLT_ERR_INVALID_ARGUMENT,
                 "the derivative for 'CdistBackward0' is not implemented");
    cr_assert_null(h);
    clt_tensor *ts[] = {x, y, d, s, g, gg, m};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* x^3 summed: its gradient 3 x^2, whose own gradient is 6 x. */
static clt_tensor *cube_sum(clt_tensor *x)
{
    clt_tensor *c = NULL, *s = NULL;
    CHECK(clt_pow_scalar(x, 3.0, &c));
    CHECK(clt_sum(c, &s));
    clt_tensor_free(c);
    return s;
}

Test(double_backward, retain_graph_rules)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, Y3);
    CHECK(clt_set_requires_grad(x, 1));
    /* no create_graph: no history */
    clt_tensor *s = cube_sum(x), *g = NULL;
    CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, NULL, &g));
    cr_assert(!clt_requires_grad(g));
    clt_tensor_free(g);
    clt_tensor_free(s);
    /* create_graph keeps the graph by default (torch's retain_graph=None):
     * the gradient is differentiated twice over */
    s = cube_sum(x);
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &g));
    clt_tensor *gs = NULL, *h = NULL;
    CHECK(clt_sum(g, &gs));
    for (int pass = 0; pass < 2; pass++) {
        CHECK(clt_autograd_grad(&gs, 1, NULL, &x, 1, 1, 0, &h));
        double got[3];
        CHECK(clt_tensor_read(h, got, sizeof got));
        for (int k = 0; k < 3; k++)
            cr_assert(close_enough(got[k], 6 * Y3[k], 1e-12, 0));
        clt_tensor_free(h);
    }
    clt_tensor_free(gs);
    clt_tensor_free(g);
    clt_tensor_free(s);
    /* exp's gradient is its output, whose history is exp's node: with
     * retain_graph -1 (False) that node's saved tensors go, and
     * differentiating the gradient through it fails; kept, it works */
    for (int retain = -1; retain <= 0; retain++) {
        clt_tensor *e = NULL;
        CHECK(clt_exp(x, &e));
        CHECK(clt_sum(e, &s));
        o.retain_graph = retain;
        CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &g));
        CHECK(clt_sum(g, &gs));
        clt_status st = clt_autograd_grad(&gs, 1, NULL, &x, 1, 0, 0, &h);
        if (retain < 0) {
            assert_error(st, CLT_ERR_INVALID_ARGUMENT, "second time");
        } else {
            CHECK(st);
            double got[3];
            CHECK(clt_tensor_read(h, got, sizeof got));
            for (int k = 0; k < 3; k++)
                cr_assert(close_enough(got[k], exp(Y3[k]), 1e-12, 0));
        }
        clt_tensor *ts[] = {e, s, g, gs, h};
        for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
            clt_tensor_free(ts[k]);
    }
    clt_tensor_free(x);
}

Test(double_backward, backward_ex_gives_leaves_a_grad_with_history)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){3}, Y3);
    CHECK(clt_set_requires_grad(x, 1));
    clt_tensor *s = cube_sum(x), *g = NULL, *gs = NULL;
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_backward_ex(s, NULL, &o));
    CHECK(clt_grad(x, &g));
    cr_assert(clt_requires_grad(g));
    double got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int k = 0; k < 3; k++)
        cr_assert(close_enough(got[k], 3 * Y3[k] * Y3[k], 1e-12, 0));
    /* x.grad.sum().backward(): torch adds 6 x into x.grad in place (grad
     * mode is off in that pass), which g, a handle on it, sees */
    CHECK(clt_sum(g, &gs));
    CHECK(clt_backward(gs, NULL, 0));
    clt_tensor *g2 = NULL;
    CHECK(clt_grad(x, &g2));
    CHECK(clt_tensor_read(g2, got, sizeof got));
    for (int k = 0; k < 3; k++)
        cr_assert(close_enough(got[k], 3 * Y3[k] * Y3[k] + 6 * Y3[k], 1e-12, 0));
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int k = 0; k < 3; k++)
        cr_assert(close_enough(got[k], 3 * Y3[k] * Y3[k] + 6 * Y3[k], 1e-12, 0));
    /* a second create_graph pass sums with history: grad + new */
    clt_tensor_free(s);
    s = cube_sum(x);
    CHECK(clt_zero_grad(x, 1));
    CHECK(clt_backward_ex(s, NULL, &o));
    clt_tensor_free(s);
    s = cube_sum(x);
    CHECK(clt_backward_ex(s, NULL, &o));
    clt_tensor *g3 = NULL;
    CHECK(clt_grad(x, &g3));
    CHECK(clt_tensor_read(g3, got, sizeof got));
    for (int k = 0; k < 3; k++)
        cr_assert(close_enough(got[k], 6 * Y3[k] * Y3[k], 1e-12, 0));
    cr_assert(clt_requires_grad(g3));
    CHECK(clt_zero_grad(x, 1)); /* the grad's graph holds x: cleared, it goes */
    clt_tensor *ts[] = {x, s, g, gs, g2, g3};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* ---- a WGAN-GP step ---------------------------------------------------------------------- */

enum { GP_N = 5, GP_IN = 3, GP_H = 4 };

/* The gradient penalty of D(x) = w2 tanh(w1 x + b1) + b2 on the host, in
 * double: g_n = sum_j w2[j] (1 - h_nj^2) w1[j, :], mean over n of
 * (|g_n| - 1)^2 (b2 has no part in it). */
static double host_gp(const double *w1, const double *b1, const double *w2, const double *x)
{
    double total = 0;
    for (int n = 0; n < GP_N; n++) {
        double g[GP_IN] = {0};
        for (int j = 0; j < GP_H; j++) {
            double z = b1[j];
            for (int i = 0; i < GP_IN; i++)
                z += w1[j * GP_IN + i] * x[n * GP_IN + i];
            double h = tanh(z), c = w2[j] * (1 - h * h);
            for (int i = 0; i < GP_IN; i++)
                g[i] += c * w1[j * GP_IN + i];
        }
        double nn = 0;
        for (int i = 0; i < GP_IN; i++)
            nn += g[i] * g[i];
        total += (sqrt(nn) - 1) * (sqrt(nn) - 1);
    }
    return total / GP_N;
}

typedef double (*gp_host_fn)(const double *w1, const double *b1, const double *w2,
                             const double *x);

/* Each of the three leaves' grad (values vals[t], counts[t] of them)
 * against central differences of the host's penalty in those values. */
static void check_gp_grads(clt_tensor *const *leaves, double *const *vals, const size_t *counts,
                           gp_host_fn host, const double *x)
{
    for (int t = 0; t < 3; t++) {
        clt_tensor *gt = NULL;
        CHECK(clt_grad(leaves[t], &gt));
        cr_assert_not_null(gt, "parameter %d has no gradient", t);
        double *got = malloc(counts[t] * sizeof *got);
        CHECK(clt_tensor_read(gt, got, counts[t] * sizeof(double)));
        clt_tensor_free(gt);
        for (size_t k = 0; k < counts[t]; k++) {
            const double eps = 1e-6;
            double orig = vals[t][k], lv[2];
            for (int side = 0; side < 2; side++) {
                vals[t][k] = orig + (side ? -eps : eps);
                lv[side] = host(vals[0], vals[1], vals[2], x);
            }
            vals[t][k] = orig;
            double want = (lv[0] - lv[1]) / (2 * eps);
            cr_assert(close_enough(got[k], want, 1e-6, 1e-8),
                      "parameter %d element %zu: %.10g, host %.10g", t, k, got[k], want);
        }
        free(got);
    }
}

Test(double_backward, wgan_gp_step_on_an_mlp)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    clt_module *l1 = NULL, *l2 = NULL;
    CHECK(clt_generator_new(7, &gen));
    CHECK(clt_linear(dev, GP_IN, GP_H, 1, gen, &l1));
    CHECK(clt_linear(dev, GP_H, 1, 1, gen, &l2));
    CHECK(clt_module_to_dtype(l1, CLT_FLOAT64));
    CHECK(clt_module_to_dtype(l2, CLT_FLOAT64));
    clt_tensor **p1 = NULL, **p2 = NULL;
    size_t n1 = 0, n2 = 0;
    CHECK(clt_module_parameters(l1, &p1, &n1));
    CHECK(clt_module_parameters(l2, &p2, &n2));
    cr_assert_eq(n1, 2);
    cr_assert_eq(n2, 2);
    double xv[GP_N * GP_IN];
    for (int k = 0; k < GP_N * GP_IN; k++)
        xv[k] = sin(1.7 * k + 0.3) * 1.5;
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){GP_N, GP_IN}, xv);
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_scope_begin());
    clt_tensor *a = NULL, *h = NULL, *out = NULL, *s = NULL, *g = NULL, *nrm = NULL, *d = NULL,
               *sq = NULL, *gp = NULL;
    CHECK(clt_module_forward(l1, x, &a));
    CHECK(clt_tanh(a, &h));
    CHECK(clt_module_forward(l2, h, &out));
    CHECK(clt_sum(out, &s));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &g));
    CHECK(clt_vector_norm_dim(g, 2, 1, 0, &nrm));
    CHECK(clt_sub_scalar(nrm, 1.0, &d));
    CHECK(clt_pow_scalar(d, 2.0, &sq));
    CHECK(clt_mean(sq, &gp));
    CHECK(clt_backward(gp, NULL, 0));
    double got_gp = 0;
    CHECK(clt_tensor_item(gp, &got_gp));
    clt_scope_end();
    /* the host's values of the parameters */
    double w1[GP_H * GP_IN], b1[GP_H], w2[GP_H];
    CHECK(clt_tensor_read(p1[0], w1, sizeof w1));
    CHECK(clt_tensor_read(p1[1], b1, sizeof b1));
    CHECK(clt_tensor_read(p2[0], w2, sizeof w2));
    cr_assert(close_enough(got_gp, host_gp(w1, b1, w2, xv), 1e-12, 1e-14));
    double *vals[3] = {w1, b1, w2};
    size_t counts[3] = {GP_H * GP_IN, GP_H, GP_H};
    clt_tensor *leaves[3] = {p1[0], p1[1], p2[0]};
    check_gp_grads(leaves, vals, counts, host_gp, xv);
    /* b2 has no part in the penalty: its gradient is zero or none */
    clt_tensor *gb2 = NULL;
    CHECK(clt_grad(p2[1], &gb2));
    if (gb2) {
        double v = 1;
        CHECK(clt_tensor_item(gb2, &v));
        cr_assert_eq(v, 0.0);
    }
    clt_tensor_free(gb2);
    clt_free(p1);
    clt_free(p2);
    clt_tensor_free(x);
    clt_module_free(l1);
    clt_module_free(l2);
    clt_generator_free(gen);
}

/* ---- a MAML step ---------------------------------------------------------------------------- */

/* One inner step of linear regression, w' = w - a * grad(mse(x w, y), w)
 * with create_graph, then the outer loss mse(x2 w', y2) differentiated with
 * respect to w, against the host's (I - a H) grad_w' L2 with H = 2/n x^T x. */
Test(double_backward, maml_inner_step)
{
    enum { N = 4, D = 3 };
    const double a = 0.1;
    clt_device *dev = get_device("cpu");
    double xv[N * D], x2v[N * D], yv[N], y2v[N], wv[D] = {0.3, -0.7, 0.5};
    for (int k = 0; k < N * D; k++) {
        xv[k] = cos(0.9 * k + 0.2);
        x2v[k] = sin(1.3 * k - 0.4);
    }
    for (int k = 0; k < N; k++) {
        yv[k] = 0.5 * k - 0.6;
        y2v[k] = 0.8 - 0.3 * k;
    }
    clt_tensor *w = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){D}, wv);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){N, D}, xv);
    clt_tensor *x2 = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){N, D}, x2v);
    clt_tensor *y = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){N}, yv);
    clt_tensor *y2 = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){N}, y2v);
    CHECK(clt_set_requires_grad(w, 1));
    CHECK(clt_scope_begin());
    clt_tensor *p = NULL, *l1 = NULL, *g = NULL, *ag = NULL, *w1 = NULL, *p2 = NULL, *l2 = NULL;
    CHECK(clt_matmul(x, w, &p));
    CHECK(clt_mse_loss(p, y, CLT_REDUCTION_MEAN, &l1));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&l1, 1, NULL, &w, 1, &o, &g));
    CHECK(clt_mul_scalar(g, a, &ag));
    CHECK(clt_sub(w, ag, &w1));
    CHECK(clt_matmul(x2, w1, &p2));
    CHECK(clt_mse_loss(p2, y2, CLT_REDUCTION_MEAN, &l2));
    CHECK(clt_backward(l2, NULL, 0));
    clt_scope_end();
    /* the host */
    double r[N], w1h[D], gw1[D], want[D];
    for (int i = 0; i < N; i++) {
        r[i] = -yv[i];
        for (int j = 0; j < D; j++)
            r[i] += xv[i * D + j] * wv[j];
    }
    for (int j = 0; j < D; j++) {
        double gj = 0;
        for (int i = 0; i < N; i++)
            gj += 2.0 / N * xv[i * D + j] * r[i];
        w1h[j] = wv[j] - a * gj;
    }
    for (int i = 0; i < N; i++) {
        r[i] = -y2v[i];
        for (int j = 0; j < D; j++)
            r[i] += x2v[i * D + j] * w1h[j];
    }
    for (int j = 0; j < D; j++) {
        gw1[j] = 0;
        for (int i = 0; i < N; i++)
            gw1[j] += 2.0 / N * x2v[i * D + j] * r[i];
    }
    for (int j = 0; j < D; j++) {
        want[j] = gw1[j];
        for (int k = 0; k < D; k++) {
            double h = 0;
            for (int i = 0; i < N; i++)
                h += 2.0 / N * xv[i * D + j] * xv[i * D + k];
            want[j] -= a * h * gw1[k];
        }
    }
    clt_tensor *gw = NULL;
    CHECK(clt_grad(w, &gw));
    double got[D];
    CHECK(clt_tensor_read(gw, got, sizeof got));
    for (int j = 0; j < D; j++)
        cr_assert(close_enough(got[j], want[j], 1e-12, 1e-14), "w element %d: %.15g, host %.15g",
                  j, got[j], want[j]);
    clt_tensor *ts[] = {w, x, x2, y, y2, gw};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* ---- more ops: math, activations, clamp, embedding, masked_fill, dropout ------------ */

static clt_status celu(const clt_tensor *a, clt_tensor **out)
{
    return clt_celu(a, 0.7, out);
}

static clt_status elu(const clt_tensor *a, clt_tensor **out)
{
    return clt_elu(a, 1.3, out);
}

static clt_status hardtanh(const clt_tensor *a, clt_tensor **out)
{
    return clt_hardtanh(a, -1.0, 1.5, out);
}

static clt_status clamp(const clt_tensor *a, clt_tensor **out)
{
    return clt_clamp(a, (const double[]){-1.0}, (const double[]){1.8}, out);
}

static clt_status clamp_min(const clt_tensor *a, clt_tensor **out)
{
    return clt_clamp(a, (const double[]){-0.5}, NULL, out);
}

Test(double_backward, more_unary_ops)
{
    clt_device *dev = get_device("cpu");
    const un_fn fns[] = {clt_abs, clt_sin,  clt_cos,   clt_silu,  clt_expm1, clt_exp2,  elu,
                         clt_selu, celu,    clt_mish,  hardtanh,  clt_relu6, clamp,     clamp_min};
    gc_in ins[1] = {{2, {2, 3}, X6, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradgradcheck(dev, call_un, &fns[i], 1, ins);
        gradgradcheck(dev, call_un_mixed, &fns[i], 1, ins);
    }
    const un_fn log1p = clt_log1p;
    gc_in pins[1] = {{2, {2, 3}, P6, 1}};
    gradgradcheck(dev, call_un, &log1p, 1, pins);
}

/* kind 0: embedding of tanh(w) rows [3, 2] by indices {2, 0, 2, 1}; 1: masked_fill of
 * x^2; 2: a Dropout layer (p 0.4, its mask drawn from a generator seeded alike on every
 * call) on x^2. */
static clt_status call_select(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *h = NULL, *t = NULL;
    clt_generator *gen = NULL;
    clt_module *m = NULL;
    clt_status st = kind == 0 ? clt_tanh(in[0], &h) : clt_mul(in[0], in[0], &h);
    if (st != CLT_OK)
        return st;
    if (kind == 0) {
        int64_t iv[4] = {2, 0, 2, 1}, n = 4;
        st = clt_tensor_from_host(dev, CLT_INT64, 1, &n, iv, &t);
        if (st == CLT_OK)
            st = clt_embedding(h, t, out);
    } else if (kind == 1) {
        const uint8_t mv[3] = {1, 0, 0};
        int64_t n = 3;
        st = clt_tensor_from_host(dev, CLT_BOOL, 1, &n, mv, &t);
        if (st == CLT_OK)
            st = clt_masked_fill(h, t, 0.5, out);
    } else {
        st = clt_generator_new(7, &gen);
        if (st == CLT_OK)
            st = clt_dropout_layer(0.4, gen, &m);
        if (st == CLT_OK)
            st = clt_module_forward(m, h, out);
    }
    clt_module_free(m);
    clt_generator_free(gen);
    clt_tensor_free(t);
    clt_tensor_free(h);
    return st;
}

Test(double_backward, embedding_masked_fill_dropout)
{
    clt_device *dev = get_device("cpu");
    gc_in w[1] = {{2, {3, 2}, X6, 1}};
    int kind = 0;
    gradgradcheck(dev, call_select, &kind, 1, w);
    gc_in x[1] = {{2, {2, 3}, X6, 1}};
    for (kind = 1; kind <= 2; kind++)
        gradgradcheck(dev, call_select, &kind, 1, x);
}

/* kind 0-3: binary_cross_entropy (mean, sum, none, then mean with a weight [3]) of
 * probabilities in[0]; 4-7: binary_cross_entropy_with_logits (the same, a pos_weight
 * [3] last); in[1] the target. */
static clt_status call_bce(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    static const clt_reduction red[] = {CLT_REDUCTION_MEAN, CLT_REDUCTION_SUM,
                                        CLT_REDUCTION_NONE, CLT_REDUCTION_MEAN};
    clt_tensor *w = NULL;
    clt_status st = CLT_OK;
    if (kind % 4 == 3) {
        static const double wv[3] = {0.6, 1.4, 2.3};
        int64_t n = 3;
        st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_FLOAT64, 1, &n, wv, &w);
    }
    if (st == CLT_OK && kind < 4)
        st = clt_binary_cross_entropy(in[0], in[1], w, red[kind % 4], out);
    else if (st == CLT_OK)
        st = clt_binary_cross_entropy_with_logits(in[0], in[1], w, red[kind % 4], out);
    clt_tensor_free(w);
    return st;
}

Test(double_backward, binary_cross_entropy_losses)
{
    clt_device *dev = get_device("cpu");
    static const double PR[] = {0.2, 0.65, 0.9, 0.35, 0.5, 0.75};
    static const double T6[] = {0.1, 0.8, 0.3, 0.6, 0.95, 0.4};
    gc_in prob[2] = {{2, {2, 3}, PR, 1}, {2, {2, 3}, T6, 1}};
    gc_in logit[2] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, T6, 1}};
    for (int kind = 0; kind < 8; kind++)
        gradgradcheck(dev, call_bce, &kind, 2, kind < 4 ? prob : logit);
}

/* kind 0: layer_norm over the last dim of tanh(x) [2, 3] with weight in[1] and bias
 * in[2] [3]; 1: layer_norm without them over both dims; 2: group_norm (2 groups) of
 * tanh(x) seen as [1, 2, 3] (channels 2) with weight and bias [2]; each times x, so
 * that the bias' gradient has a second derivative. */
static clt_status call_norm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *h = NULL, *y = NULL, *h3 = NULL;
    clt_status st = clt_tanh(in[0], &h);
    if (st == CLT_OK && kind == 0)
        st = clt_layer_norm(h, 1, (const int64_t[]){3}, in[1], in[2], 1e-5, &y);
    else if (st == CLT_OK && kind == 1)
        st = clt_layer_norm(h, 2, (const int64_t[]){2, 3}, NULL, NULL, 1e-5, &y);
    else if (st == CLT_OK) {
        st = clt_reshape(h, 3, (const int64_t[]){1, 2, 3}, &h3);
        if (st == CLT_OK)
            st = clt_group_norm(h3, 2, in[1], in[2], 1e-5, &y);
    }
    if (st == CLT_OK && kind == 2) {
        clt_tensor *y2 = NULL;
        st = clt_reshape(y, 2, (const int64_t[]){2, 3}, &y2);
        clt_tensor_free(y);
        y = y2;
    }
    if (st == CLT_OK)
        st = clt_mul(y, in[0], out);
    clt_tensor_free(h);
    clt_tensor_free(h3);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, layer_norm_and_group_norm)
{
    clt_device *dev = get_device("cpu");
    static const double B3[] = {0.3, -0.7, 0.2};
    gc_in ln[3] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}, {1, {3}, B3, 1}};
    int kind = 0;
    gradgradcheck(dev, call_norm, &kind, 3, ln);
    kind = 1;
    gradgradcheck(dev, call_norm, &kind, 1, ln);
    gc_in gn[3] = {{2, {2, 3}, X6, 1}, {1, {2}, Y3, 1}, {1, {2}, B3, 1}};
    kind = 2;
    gradgradcheck(dev, call_norm, &kind, 3, gn);
}

/* kind 0, 1: a BatchNorm1d layer (affine, running statistics) on tanh(x) [3, 2] in
 * training, then in eval mode (its running statistics as made: mean 0, var 1), times
 * x; 2: BatchNorm2d in training on x seen as [1, 2, 3, 1]. */
static clt_status call_batch_norm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *h = NULL, *y = NULL, *x4 = NULL;
    clt_module *m = NULL;
    clt_status st = kind < 2 ? clt_batch_norm1d_layer(dev, 2, 1e-5, 0.1, 1, 1, &m)
                             : clt_batch_norm2d_layer(dev, 2, 1e-5, 0.1, 1, 1, &m);
    if (st == CLT_OK)
        st = clt_module_to_dtype(m, CLT_FLOAT64);
    if (st == CLT_OK)
        st = clt_tanh(in[0], &h);
    if (st == CLT_OK && kind == 2)
        st = clt_reshape(h, 4, (const int64_t[]){1, 2, 3, 1}, &x4);
    clt_module_train(m, kind != 1);
    if (st == CLT_OK)
        st = clt_module_forward(m, x4 ? x4 : h, &y);
    if (st == CLT_OK && kind == 2) {
        clt_tensor *y2 = NULL;
        st = clt_reshape(y, 2, (const int64_t[]){3, 2}, &y2);
        clt_tensor_free(y);
        y = y2;
    }
    if (st == CLT_OK)
        st = clt_mul(y, in[0], out);
    clt_module_free(m);
    clt_tensor_free(h);
    clt_tensor_free(x4);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, rsqrt_tan_and_batch_norm)
{
    clt_device *dev = get_device("cpu");
    static const double S6[] = {0.3, -0.5, 0.9, -0.2, 0.6, -1.1};
    const un_fn rs = clt_rsqrt, tn = clt_tan;
    gc_in pins[1] = {{2, {2, 3}, P6, 1}};
    gradgradcheck(dev, call_un, &rs, 1, pins);
    gc_in sins[1] = {{2, {2, 3}, S6, 1}};
    gradgradcheck(dev, call_un_mixed, &tn, 1, sins);
    gc_in x[1] = {{2, {3, 2}, X6, 1}};
    for (int kind = 0; kind <= 2; kind++)
        gradgradcheck(dev, call_batch_norm, &kind, 1, x);
}

/* kind 0: max_pool2d (kernel 2, stride 2) of x^2 [1, 1, 4, 4], squared; 1: avg_pool2d
 * (kernel 3, stride 1, padding 1, count_include_pad off) of x^2, squared; 2: max
 * pooling with overlapping windows (kernel 2, stride 1).  J v (the gradient with
 * respect to u) goes through the formulas' own gradients: the gather and the
 * pooling of v. */
static clt_status call_pool(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *sq = NULL, *y = NULL;
    const int64_t k2[2] = {2, 2}, k3[2] = {3, 3}, s1[2] = {1, 1}, p1[2] = {1, 1};
    clt_status st = clt_mul(in[0], in[0], &sq);
    if (st == CLT_OK && kind == 0)
        st = clt_max_pool2d(sq, k2, NULL, NULL, NULL, 0, &y);
    else if (st == CLT_OK && kind == 1)
        st = clt_avg_pool2d(sq, k3, s1, p1, 0, 0, &y);
    else if (st == CLT_OK)
        st = clt_max_pool2d(sq, k2, s1, NULL, NULL, 0, &y);
    if (st == CLT_OK)
        st = clt_mul(y, y, out);
    clt_tensor_free(sq);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, max_and_avg_pool2d)
{
    clt_device *dev = get_device("cpu");
    static const double X16[] = {0.7,  -1.3, 2.1, -0.4, 1.6, -2.2, 0.9, 0.3,
                                 -0.8, 1.2,  0.5, -1.7, 1.9, -0.6, 1.4, -1.1};
    gc_in x[1] = {{4, {1, 1, 4, 4}, X16, 1}};
    for (int kind = 0; kind <= 2; kind++)
        gradgradcheck(dev, call_pool, &kind, 1, x);
}

/* kind 0-2: cross_entropy of tanh(x) [3, 3] with a class weight (mean, sum, none),
 * targets {2, 0, 1}; 3: the same mean with row 2 ignored (ignore_index 1); 4, 5:
 * nll_loss of log_softmax(x), weighted, sum and mean. */
static clt_status call_weighted_ce(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    static const double wv[3] = {0.6, 1.4, 2.3};
    const int64_t tv[3] = {2, 0, 1}, n = 3;
    clt_tensor *h = NULL, *t = NULL, *w = NULL;
    clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
    o.reduction = kind % 3 == 1 ? CLT_REDUCTION_SUM
                  : kind == 2   ? CLT_REDUCTION_NONE
                                : CLT_REDUCTION_MEAN;
    if (kind == 3)
        o.ignore_index = 1;
    clt_status st = kind < 4 ? clt_tanh(in[0], &h) : clt_log_softmax(in[0], 1, &h);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, &n, tv, &t);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, wv, &w);
    o.weight = w;
    if (st == CLT_OK)
        st = kind < 4 ? clt_cross_entropy(h, t, &o, out) : clt_nll_loss(h, t, &o, out);
    clt_tensor_free(h);
    clt_tensor_free(t);
    clt_tensor_free(w);
    return st;
}

Test(double_backward, weighted_cross_entropy_and_nll_loss)
{
    clt_device *dev = get_device("cpu");
    static const double X9[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2, 0.9, 0.3, -0.8};
    gc_in x[1] = {{2, {3, 3}, X9, 1}};
    for (int kind = 0; kind <= 5; kind++)
        gradgradcheck(dev, call_weighted_ce, &kind, 1, x);
}

/* ---- convolutions ---------------------------------------------------------------------- */

/* tanh of a convolution of in[0] with the weight in[1] and the bias in[2]
 * (kind 1: conv1d, 2: conv2d, 3: conv_transpose2d, 4: conv3d, 5:
 * conv_transpose3d, 6: conv_transpose1d; the 3-D ones, a conv3_case, take
 * their input and weight as 4-D data reshaped to x5 and w5, x5[0] 0
 * leaving an unbatched input as it is); tanh makes the first
 * gradients depend on every input, so that the check sees the formulas'
 * own gradients with respect to the input, the weight and the output's
 * gradient. */
typedef struct conv_case {
    int kind;
    int64_t stride[3], padding[3], dilation[3], output_padding[3], groups;
} conv_case;

/* kinds 4 and 5: the case and the 5-D shapes */
typedef struct conv3_case {
    conv_case c;
    int64_t x5[5], w5[5];
} conv3_case;

static clt_status call_conv(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const conv_case *c = ctx;
    clt_tensor *y = NULL;
    clt_status st;
    if (c->kind == 1) {
        clt_conv1d_opts o = {c->stride[1], c->padding[1], c->dilation[1], c->groups};
        st = clt_conv1d(in[0], in[1], in[2], &o, &y);
    } else if (c->kind == 2) {
        clt_conv2d_opts o = {{c->stride[0], c->stride[1]},
                             {c->padding[0], c->padding[1]},
                             {c->dilation[0], c->dilation[1]},
                             c->groups};
        st = clt_conv2d(in[0], in[1], in[2], &o, &y);
    } else if (c->kind == 3) {
        clt_conv_transpose2d_opts o = {{c->stride[0], c->stride[1]},
                                       {c->padding[0], c->padding[1]},
                                       {c->output_padding[0], c->output_padding[1]},
                                       c->groups,
                                       {c->dilation[0], c->dilation[1]}};
        st = clt_conv_transpose2d(in[0], in[1], in[2], &o, &y);
    } else if (c->kind == 6) {
        clt_conv_transpose1d_opts o = {c->stride[1], c->padding[1], c->output_padding[1],
                                       c->groups, c->dilation[1]};
        st = clt_conv_transpose1d(in[0], in[1], in[2], &o, &y);
    } else {
        const conv3_case *c3 = ctx;
        clt_tensor *x5 = NULL, *w5 = NULL;
        st = c3->x5[0] ? clt_reshape(in[0], 5, c3->x5, &x5) : CLT_OK;
        if (st == CLT_OK)
            st = clt_reshape(in[1], 5, c3->w5, &w5);
        const clt_tensor *x = x5 ? x5 : in[0];
        if (st == CLT_OK && c->kind == 4) {
            clt_conv3d_opts o;
            memcpy(o.stride, c->stride, sizeof o.stride);
            memcpy(o.padding, c->padding, sizeof o.padding);
            memcpy(o.dilation, c->dilation, sizeof o.dilation);
            o.groups = c->groups;
            st = clt_conv3d(x, w5, in[2], &o, &y);
        } else if (st == CLT_OK) {
            clt_conv_transpose3d_opts o;
            memcpy(o.stride, c->stride, sizeof o.stride);
            memcpy(o.padding, c->padding, sizeof o.padding);
            memcpy(o.dilation, c->dilation, sizeof o.dilation);
            memcpy(o.output_padding, c->output_padding, sizeof o.output_padding);
            o.groups = c->groups;
            st = clt_conv_transpose3d(x, w5, in[2], &o, &y);
        }
        clt_tensor_free(x5);
        clt_tensor_free(w5);
    }
    if (st == CLT_OK)
        st = clt_tanh(y, out);
    clt_tensor_free(y);
    return st;
}

/* n values of both signs, uneven, scaled by a: the data of an input. */
static double *conv_data(size_t n, double a, double phase)
{
    double *v = malloc(n * sizeof *v);
    for (size_t k = 0; k < n; k++)
        v[k] = a * sin(0.77 * (double)k + phase);
    return v;
}

/* Hessian-vector products through the convolution c with input, weight and
 * bias of those shapes (ndim 0 for the bias: none). */
static void conv_gradgradcheck(clt_device *dev, const conv_case *c, gc_in *ins)
{
    int nin = ins[2].ndim ? 3 : 2;
    double *data[3];
    for (int i = 0; i < nin; i++) {
        data[i] = conv_data(gc_numel(&ins[i]), i == 0 ? 0.9 : 0.4, 0.3 + i);
        ins[i].data = data[i];
        ins[i].grad = 1;
    }
    gradgradcheck_tol(dev, call_conv, c, nin, ins, 1e-5, 1e-7);
    for (int i = 0; i < nin; i++)
        free(data[i]);
}

Test(double_backward, conv2d_stride_padding_dilation_groups)
{
    clt_device *dev = get_device("cpu");
    /* plain, with a batch of 2; stride 2 with two groups (5 rows: one left
     * over); stride, padding and dilation differing between the axes */
    const conv_case cs[] = {{2, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1},
                            {2, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 2},
                            {2, {2, 1}, {0, 2}, {2, 1}, {0, 0}, 1}};
    gc_in ins[3][3] = {{{4, {2, 2, 4, 4}, NULL, 1}, {4, {3, 2, 3, 3}, NULL, 1}, {1, {3}, NULL, 1}},
                       {{4, {2, 4, 5, 4}, NULL, 1}, {4, {4, 2, 3, 3}, NULL, 1}, {1, {4}, NULL, 1}},
                       {{4, {1, 3, 6, 5}, NULL, 1}, {4, {2, 3, 2, 3}, NULL, 1}, {0, {0}, NULL, 1}}};
    for (int k = 0; k < 3; k++)
        conv_gradgradcheck(dev, &cs[k], ins[k]);
}

Test(double_backward, conv1d_and_conv_transpose2d)
{
    clt_device *dev = get_device("cpu");
    /* conv1d: stride 2, padding 1, dilation 2, two groups; unbatched.
     * conv_transpose2d: stride 2 with two groups; an output_padding past
     * the stride (below the dilation) */
    const conv_case cs[] = {{1, {1, 2}, {0, 1}, {1, 2}, {0, 0}, 2},
                            {1, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1},
                            {3, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 2},
                            {3, {1, 1}, {0, 1}, {2, 1}, {1, 0}, 1}};
    gc_in ins[4][3] = {{{3, {2, 4, 7}, NULL, 1}, {3, {4, 2, 3}, NULL, 1}, {1, {4}, NULL, 1}},
                       {{2, {3, 6}, NULL, 1}, {3, {2, 3, 2}, NULL, 1}, {0, {0}, NULL, 1}},
                       {{4, {2, 4, 3, 3}, NULL, 1}, {4, {4, 1, 3, 2}, NULL, 1}, {1, {2}, NULL, 1}},
                       {{4, {1, 2, 3, 4}, NULL, 1}, {4, {2, 3, 2, 2}, NULL, 1}, {1, {3}, NULL, 1}}};
    for (int k = 0; k < 4; k++)
        conv_gradgradcheck(dev, &cs[k], ins[k]);
}

Test(double_backward, conv3d_conv_transpose3d_and_conv_transpose1d)
{
    clt_device *dev = get_device("cpu");
    /* conv3d: stride 2 in depth with two groups (a row left over);
     * unbatched with padding and dilation.  conv_transpose3d: stride and
     * output_padding past it in one dimension; unbatched.
     * conv_transpose1d: stride 2, output_padding 1, two groups */
    const conv3_case cs[] = {
        {{4, {2, 1, 1}, {0, 1, 0}, {1, 1, 1}, {0, 0, 0}, 2}, {2, 4, 3, 3, 2}, {2, 2, 2, 2, 1}},
        {{4, {1, 1, 1}, {1, 0, 1}, {2, 1, 1}, {0, 0, 0}, 1}, {0}, {2, 2, 2, 2, 2}},
        {{5, {2, 1, 1}, {1, 0, 0}, {1, 1, 2}, {1, 0, 1}, 2}, {1, 4, 2, 2, 2}, {4, 1, 2, 2, 2}},
        {{5, {1, 2, 1}, {0, 0, 1}, {1, 1, 1}, {0, 1, 0}, 1}, {0}, {2, 2, 1, 2, 2}},
        {{6, {1, 2}, {0, 1}, {1, 1}, {0, 1}, 2}, {0}, {0}},
    };
    gc_in ins[5][3] = {
        {{4, {8, 3, 3, 2}, NULL, 1}, {4, {4, 2, 2, 1}, NULL, 1}, {1, {2}, NULL, 1}},
        {{4, {2, 3, 2, 3}, NULL, 1}, {4, {4, 2, 2, 2}, NULL, 1}, {0, {0}, NULL, 1}},
        {{4, {4, 2, 2, 2}, NULL, 1}, {4, {4, 2, 2, 2}, NULL, 1}, {1, {2}, NULL, 1}},
        {{4, {2, 2, 2, 3}, NULL, 1}, {4, {4, 1, 2, 2}, NULL, 1}, {1, {2}, NULL, 1}},
        {{3, {1, 4, 3}, NULL, 1}, {3, {4, 1, 3}, NULL, 1}, {1, {2}, NULL, 1}},
    };
    for (int k = 0; k < 5; k++)
        conv_gradgradcheck(dev, &cs[k].c, ins[k]);
}

/* ---- a WGAN-GP step with a convolutional critic ------------------------------------------ */

enum { CP_N = 3, CP_C = 2, CP_H = 5, CP_O = 3, CP_K = 3, CP_OH = 3 };

/* The critic D(x_n) = sum(w2 * tanh(conv2d(x_n, w1, b1))) (stride 2,
 * padding 1) and its penalty mean_n (|dD/dx_n| - 1)^2 on the host, in
 * double. */
static double host_conv_gp(const double *w1, const double *b1, const double *w2,
                           const double *x)
{
    double total = 0;
    for (int n = 0; n < CP_N; n++) {
        double g[CP_C * CP_H * CP_H] = {0};
        for (int o = 0; o < CP_O; o++)
            for (int i = 0; i < CP_OH; i++)
                for (int j = 0; j < CP_OH; j++) {
                    double z = b1[o];
                    for (int pass = 0; pass < 2; pass++) {
                        double c = 0;
                        if (pass == 1) {
                            double h = tanh(z);
                            c = w2[(o * CP_OH + i) * CP_OH + j] * (1 - h * h);
                        }
                        for (int ch = 0; ch < CP_C; ch++)
                            for (int a = 0; a < CP_K; a++)
                                for (int b = 0; b < CP_K; b++) {
                                    int r = 2 * i - 1 + a, q = 2 * j - 1 + b;
                                    if (r < 0 || r >= CP_H || q < 0 || q >= CP_H)
                                        continue;
                                    double wv = w1[((o * CP_C + ch) * CP_K + a) * CP_K + b];
                                    int e = (ch * CP_H + r) * CP_H + q;
                                    if (pass == 0)
                                        z += wv * x[n * CP_C * CP_H * CP_H + e];
                                    else
                                        g[e] += c * wv;
                                }
                    }
                }
        double nn = 0;
        for (int e = 0; e < CP_C * CP_H * CP_H; e++)
            nn += g[e] * g[e];
        total += (sqrt(nn) - 1) * (sqrt(nn) - 1);
    }
    return total / CP_N;
}

Test(double_backward, wgan_gp_step_on_a_conv_critic)
{
    clt_device *dev = get_device("cpu");
    enum {
        NW1 = CP_O * CP_C * CP_K * CP_K,
        NW2 = CP_O * CP_OH * CP_OH,
        NX = CP_N * CP_C * CP_H * CP_H
    };
    double w1[NW1], b1[CP_O] = {0.1, -0.2, 0.15}, w2[NW2], xv[NX];
    for (int k = 0; k < NW1; k++)
        w1[k] = 0.3 * sin(1.1 * k + 0.4);
    for (int k = 0; k < NW2; k++)
        w2[k] = 0.5 * cos(0.7 * k - 0.2);
    for (int k = 0; k < NX; k++)
        xv[k] = sin(1.7 * k + 0.3) * 1.5;
    clt_tensor *pw1 = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){CP_O, CP_C, CP_K, CP_K}, w1);
    clt_tensor *pb1 = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){CP_O}, b1);
    clt_tensor *pw2 = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){CP_O, CP_OH, CP_OH}, w2);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){CP_N, CP_C, CP_H, CP_H}, xv);
    clt_tensor *leaves[3] = {pw1, pb1, pw2};
    for (int t = 0; t < 3; t++)
        CHECK(clt_set_requires_grad(leaves[t], 1));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_scope_begin());
    clt_conv2d_opts co = {{2, 2}, {1, 1}, {1, 1}, 1};
    clt_tensor *z = NULL, *h = NULL, *p = NULL, *s = NULL, *g = NULL, *gf = NULL, *nrm = NULL,
               *d = NULL, *sq = NULL, *gp = NULL;
    CHECK(clt_conv2d(x, pw1, pb1, &co, &z));
    CHECK(clt_tanh(z, &h));
    CHECK(clt_mul(h, pw2, &p));
    CHECK(clt_sum(p, &s));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &g));
    CHECK(clt_reshape(g, 2, (int64_t[]){CP_N, CP_C * CP_H * CP_H}, &gf));
    CHECK(clt_vector_norm_dim(gf, 2, 1, 0, &nrm));
    CHECK(clt_sub_scalar(nrm, 1.0, &d));
    CHECK(clt_pow_scalar(d, 2.0, &sq));
    CHECK(clt_mean(sq, &gp));
    CHECK(clt_backward(gp, NULL, 0));
    double got_gp = 0;
    CHECK(clt_tensor_item(gp, &got_gp));
    clt_scope_end();
    cr_assert(close_enough(got_gp, host_conv_gp(w1, b1, w2, xv), 1e-12, 1e-14));
    double *vals[3] = {w1, b1, w2};
    size_t counts[3] = {NW1, CP_O, NW2};
    check_gp_grads(leaves, vals, counts, host_conv_gp, xv);
    for (int t = 0; t < 3; t++)
        clt_tensor_free(leaves[t]);
    clt_tensor_free(x);
}

/* ---- masked activations: gradients with history, zero second derivatives ---------------- */

static clt_status leaky02(const clt_tensor *a, clt_tensor **out)
{
    return clt_leaky_relu(a, 0.2, out);
}

static clt_status threshold05(const clt_tensor *a, clt_tensor **out)
{
    return clt_threshold(a, 0.5, 2.0, out);
}

static clt_status hardshrink05(const clt_tensor *a, clt_tensor **out)
{
    return clt_hardshrink(a, 0.5, out);
}

static clt_status softshrink15(const clt_tensor *a, clt_tensor **out)
{
    return clt_softshrink(a, 1.5, out);
}

/* For f with a gradient g * m(x), m piecewise constant: G = grad(sum(f(x) *
 * u), x, create_graph) with u constant (ones) or requiring grad, then
 * grad(sum(G * v), [x, u]): as torch, zero for x and m v for u.  relu,
 * relu6, hardtanh, leaky_relu, threshold, the shrinks and hardsigmoid
 * (whose double backward torch 1.13 refuses) keep the history of the tensor their
 * formula read even when u is constant (torch's *BackwardBackward0 nodes);
 * clamp's formula reads nothing differentiable, so its gradient of a
 * constant has none, as torch's (where(mask, grad, 0)). */
Test(double_backward, masked_activations_second_derivatives)
{
    clt_device *dev = get_device("cpu");
    static const double xs[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2},
                        vs[] = {0.5, -1.5, 2, 1, -0.25, 3}, ones[] = {1, 1, 1, 1, 1, 1};
    const struct {
        un_fn f;
        const char *node; /* NULL: no history when u is constant */
        double m[6];
    } cs[] = {{clt_relu, "ThresholdBackwardBackward0", {1, 0, 1, 0, 1, 0}},
              {clt_relu6, "HardtanhBackwardBackward0", {1, 0, 1, 0, 1, 0}},
              {hardtanh, "HardtanhBackwardBackward0", {1, 0, 0, 1, 0, 0}},
              {leaky02, "LeakyReluBackwardBackward0", {1, 0.2, 1, 0.2, 1, 0.2}},
              {threshold05, "ThresholdBackwardBackward0", {1, 0, 1, 0, 1, 0}},
              {hardshrink05, "HardshrinkBackwardBackward0", {1, 1, 1, 0, 1, 1}},
              {softshrink15, "SoftshrinkBackwardBackward0", {0, 0, 1, 0, 1, 1}},
              {clt_hardsigmoid,
               "HardsigmoidBackwardBackward0",
               {1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0, 1 / 6.0}},
              {clamp, NULL, {1, 0, 0, 1, 1, 0}}};
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        for (int ugrad = 0; ugrad < 2; ugrad++) {
            clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){6}, xs);
            clt_tensor *u = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){6}, ones);
            clt_tensor *v = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){6}, vs);
            CHECK(clt_set_requires_grad(x, 1));
            CHECK(clt_set_requires_grad(u, ugrad));
            clt_tensor *y = NULL, *g = NULL, *gv = NULL, *m = NULL, *an[2] = {0};
            CHECK(cs[c].f(x, &y));
            clt_grad_opts o = {0, 1, 0};
            CHECK(clt_autograd_grad_ex(&y, 1, &u, &x, 1, &o, &g));
            double got[6];
            CHECK(clt_tensor_read(g, got, sizeof got));
            for (int k = 0; k < 6; k++)
                cr_assert_float_eq(got[k], cs[c].m[k], 1e-15, "case %zu element %d", c, k);
            if (!ugrad && cs[c].node == NULL) {
                cr_assert(!clt_requires_grad(g), "case %zu: torch's gradient has no history", c);
            } else {
                cr_assert(clt_requires_grad(g), "case %zu u %d: the gradient has no history", c,
                          ugrad);
                if (cs[c].node)
                    cr_assert_str_eq(clt_grad_fn_name(g), cs[c].node);
                CHECK(clt_mul(g, v, &gv));
                CHECK(clt_sum(gv, &m));
                clt_tensor *wrt[2] = {x, u};
                CHECK(clt_autograd_grad(&m, 1, NULL, wrt, ugrad ? 2 : 1, 0, 1, an));
                /* clamp's gradient reads no x: torch's is None (unused) */
                if (cs[c].node == NULL) {
                    cr_assert_null(an[0]);
                } else {
                    cr_assert_not_null(an[0], "case %zu u %d: x unused", c, ugrad);
                    CHECK(clt_tensor_read(an[0], got, sizeof got));
                    for (int k = 0; k < 6; k++)
                        cr_assert_eq(got[k], 0.0, "case %zu u %d element %d", c, ugrad, k);
                }
                if (ugrad) {
                    CHECK(clt_tensor_read(an[1], got, sizeof got));
                    for (int k = 0; k < 6; k++)
                        cr_assert_float_eq(got[k], cs[c].m[k] * vs[k], 1e-15,
                                           "case %zu element %d", c, k);
                }
            }
            clt_tensor *ts[] = {x, u, v, y, g, gv, m, an[0], an[1]};
            for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
                clt_tensor_free(ts[k]);
        }
    }
}

/* ---- the formulas made of recorded ops later: math ops, norms, index_copy, stats --- */

static const double U6[] = {0.3, -0.45, 0.7, -0.2, 0.55, -0.65};
static const double A6[] = {1.3, 2.1, 1.7, 3.0, 1.2, 2.6};

static clt_status round2(const clt_tensor *a, clt_tensor **out)
{
    return clt_round_decimals(a, 2, out);
}

Test(double_backward, math_ops_reciprocal_frac_round_and_activations)
{
    clt_device *dev = get_device("cpu");
    const un_fn in_unit[] = {clt_asin,     clt_acos,       clt_atanh,      clt_erfinv,
                             clt_atan,     clt_sinh,       clt_cosh,       clt_asinh,
                             clt_erf,      clt_erfc,       clt_frac,       round2,
                             clt_softsign, clt_tanhshrink, clt_logsigmoid, clt_hardswish};
    gc_in u[1] = {{2, {2, 3}, U6, 1}};
    for (size_t i = 0; i < sizeof in_unit / sizeof in_unit[0]; i++) {
        if (in_unit[i] != round2) /* a zero gradient has no history, as in torch */
            gradgradcheck(dev, call_un, &in_unit[i], 1, u);
        gradgradcheck(dev, call_un_mixed, &in_unit[i], 1, u);
    }
    const un_fn positive[] = {clt_log2, clt_log10, clt_reciprocal};
    gc_in p[1] = {{2, {2, 3}, P6, 1}};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++) {
        gradgradcheck(dev, call_un, &positive[i], 1, p);
        gradgradcheck(dev, call_un_mixed, &positive[i], 1, p);
    }
    const un_fn acosh = clt_acosh;
    gc_in a[1] = {{2, {2, 3}, A6, 1}};
    gradgradcheck(dev, call_un, &acosh, 1, a);
}

/* The ord-norm of x [2, 3] over every element (kind 0), over dim 1 (1) or
 * dim 0 kept (2), squared: the norms of ord 1 and inf are piecewise linear,
 * the square gives them a second derivative. */
static clt_status call_vnorm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const struct {
        double ord;
        int kind;
    } *c = ctx;
    clt_tensor *r = NULL;
    clt_status st = c->kind == 0 ? clt_vector_norm(in[0], c->ord, &r)
                                 : clt_vector_norm_dim(in[0], c->ord, c->kind == 1 ? 1 : 0,
                                                       c->kind == 2, &r);
    if (st == CLT_OK)
        st = clt_mul(r, r, out);
    clt_tensor_free(r);
    return st;
}

Test(double_backward, vector_norm_of_every_ord)
{
    clt_device *dev = get_device("cpu");
    const double ords[] = {1, INFINITY, -INFINITY, 0.5, 1.5, 3, -1, -2.5, 2};
    gc_in ins[1] = {{2, {2, 3}, X6, 1}};
    for (size_t i = 0; i < sizeof ords / sizeof ords[0]; i++)
        for (int kind = 0; kind < 3; kind++) {
            struct {
                double ord;
                int kind;
            } c = {ords[i], kind};
            gradgradcheck(dev, call_vnorm, &c, 1, ins);
        }
}

/* kind 0: index_copy of src^2 [2, 2] into rows {2, 0} of tanh(t) [3, 2], squared;
 * 1: index_fill of column 0 of t^2 with 0.5, times t. */
static clt_status call_index_copy(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *h = NULL, *s = NULL, *idx = NULL, *y = NULL;
    int64_t iv[2] = {2, 0}, n = kind == 0 ? 2 : 1;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 1, &n,
                                         kind == 0 ? iv : iv + 1, &idx);
    if (st == CLT_OK && kind == 0) {
        st = clt_tanh(in[0], &h);
        if (st == CLT_OK)
            st = clt_mul(in[1], in[1], &s);
        if (st == CLT_OK)
            st = clt_index_copy(h, 0, idx, s, &y);
        if (st == CLT_OK)
            st = clt_mul(y, y, out);
    } else if (st == CLT_OK) {
        st = clt_mul(in[0], in[0], &h);
        if (st == CLT_OK)
            st = clt_index_fill(h, 1, idx, 0.5, &y);
        if (st == CLT_OK)
            st = clt_mul(y, in[0], out);
    }
    clt_tensor_free(h);
    clt_tensor_free(s);
    clt_tensor_free(idx);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, index_copy_and_index_fill)
{
    clt_device *dev = get_device("cpu");
    static const double S4[] = {0.9, -0.3, 1.4, 0.6};
    gc_in ins[2] = {{2, {3, 2}, X6, 1}, {2, {2, 2}, S4, 1}};
    int kind = 0;
    gradgradcheck(dev, call_index_copy, &kind, 2, ins);
    kind = 1;
    gradgradcheck(dev, call_index_copy, &kind, 1, ins);
}

/* A reduction of x [2, 3] (no ties: X6), times itself or x: var and std
 * (all, dim), logsumexp (dim, all), max of all, max along a dim, amax,
 * nansum, median, kthvalue, quantile (linear, q 0.3). */
static clt_status call_stat(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *r = NULL, *idx = NULL;
    const clt_tensor *x = in[0];
    int d1 = 1;
    clt_status st = CLT_OK;
    switch (kind) {
    case 0: st = clt_var(x, 1.0, &r); break;
    case 1: st = clt_var_dim(x, 1, 0.0, 0, &r); break;
    case 2: st = clt_std(x, 1.0, &r); break;
    case 3: st = clt_std_dim(x, 0, 1.0, 1, &r); break;
    case 4: st = clt_logsumexp(x, 1, 0, &r); break;
    case 5: st = clt_logsumexp_all(x, &r); break;
    case 6: st = clt_max(x, &r); break;
    case 7: st = clt_max_dim(x, 1, 0, &r, &idx); break;
    case 8: st = clt_amax(x, &d1, 1, 1, &r); break;
    case 9: st = clt_nansum(x, &r); break;
    case 10: st = clt_median(x, &r); break;
    case 11: st = clt_kthvalue(x, 2, 1, 0, &r, &idx); break;
    default: st = clt_quantile(x, NULL, 0.3, &d1, 0, CLT_QUANTILE_LINEAR, &r); break;
    }
    if (st == CLT_OK) /* r * r: the linear ones get a second derivative */
        st = clt_mul(r, r, out);
    clt_tensor_free(r);
    clt_tensor_free(idx);
    return st;
}

Test(double_backward, var_std_logsumexp_max_median_quantile)
{
    clt_device *dev = get_device("cpu");
    gc_in ins[1] = {{2, {2, 3}, X6, 1}};
    for (int kind = 0; kind <= 12; kind++)
        gradgradcheck(dev, call_stat, &kind, 1, ins);
}

/* gaussian_nll_loss's clamped variance passes gradients of any order as
 * the identity where it is above eps. */
static clt_status call_gnll(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_gaussian_nll_loss(in[0], in[1], in[2], 0, 1e-6, CLT_REDUCTION_MEAN, out);
}

Test(double_backward, gaussian_nll_loss_variance)
{
    clt_device *dev = get_device("cpu");
    gc_in ins[3] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, U6, 1}, {2, {2, 3}, P6, 1}};
    gradgradcheck(dev, call_gnll, NULL, 3, ins);
}

Test(double_backward, maximum_minimum_remainder_fmod)
{
    clt_device *dev = get_device("cpu");
    const tt_fn fns[] = {clt_maximum, clt_minimum, clt_remainder, clt_fmod};
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        gradgradcheck(dev, call_tt_mixed, &fns[i], 2, ins);
}

/* kind 0: l1_loss (mean); 1, 2: smooth_l1_loss beta 1 (sum), 0.5 (none); 3, 4:
 * huber_loss delta 1 (mean), 0.5 (none); 5: kl_div (batchmean) of a positive
 * target; 6: kl_div with log_target (sum).  in[0] the input, in[1] the target. */
static clt_status call_kink_loss(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    switch (kind) {
    case 0: return clt_l1_loss(in[0], in[1], CLT_REDUCTION_MEAN, out);
    case 1: return clt_smooth_l1_loss(in[0], in[1], CLT_REDUCTION_SUM, 1.0, out);
    case 2: return clt_smooth_l1_loss(in[0], in[1], CLT_REDUCTION_NONE, 0.5, out);
    case 3: return clt_huber_loss(in[0], in[1], CLT_REDUCTION_MEAN, 1.0, out);
    case 4: return clt_huber_loss(in[0], in[1], CLT_REDUCTION_NONE, 0.5, out);
    case 5: return clt_kl_div(in[0], in[1], CLT_REDUCTION_BATCHMEAN, 0, out);
    default: return clt_kl_div(in[0], in[1], CLT_REDUCTION_SUM, 1, out);
    }
}

Test(double_backward, l1_smooth_l1_huber_kl_div)
{
    clt_device *dev = get_device("cpu");
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, U6, 1}};
    gc_in pos[2] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, P6, 1}};
    for (int kind = 0; kind <= 6; kind++)
        gradgradcheck(dev, call_kink_loss, &kind, 2, kind == 5 ? pos : ins);
}

/* kind 0: diagonal of x^2 [3, 3] (offset 0), cubed; 1: diagonal offset 1 of
 * dims (1, 0); 2, 3, 4: select_scatter, slice_scatter (step 2) and
 * diagonal_scatter of tanh(s) into x^2, squared.  Through the diagonal the
 * gradient was once a constant under create_graph: wrong second derivatives. */
static clt_status call_diag(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *sq = NULL, *d = NULL, *d2 = NULL, *h = NULL, *e = NULL;
    clt_status st = clt_mul(in[0], in[0], &sq);
    if (st == CLT_OK && kind <= 1) {
        st = kind == 0 ? clt_diagonal(sq, 0, 0, 1, &d) : clt_diagonal(sq, 1, 1, 0, &d);
        if (st == CLT_OK)
            st = clt_mul(d, d, &d2);
        if (st == CLT_OK)
            st = clt_mul(d2, d, out);
    } else if (st == CLT_OK) {
        st = clt_tanh(in[1], &h);
        if (st == CLT_OK && kind == 2)
            st = clt_select_scatter(sq, h, 1, -1, &e);
        else if (st == CLT_OK && kind == 3)
            st = clt_slice_scatter(sq, h, 1, 0, 3, 2, &e);
        else if (st == CLT_OK)
            st = clt_diagonal_scatter(sq, h, 0, 0, 1, &e);
        if (st == CLT_OK)
            st = clt_mul(e, e, out);
    }
    clt_tensor *tmp[] = {sq, d, d2, h, e};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
        clt_tensor_free(tmp[k]);
    return st;
}

Test(double_backward, diagonal_and_the_scatters_of_views)
{
    clt_device *dev = get_device("cpu");
    static const double X9[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2, 0.9, 0.3, -0.8};
    static const double S6[] = {0.5, -0.9, 1.2, 0.4, -0.3, 0.8};
    gc_in one[1] = {{2, {3, 3}, X9, 1}};
    for (int kind = 0; kind <= 1; kind++)
        gradgradcheck(dev, call_diag, &kind, 1, one);
    gc_in sel[2] = {{2, {3, 3}, X9, 1}, {1, {3}, S6, 1}};
    int kind = 2;
    gradgradcheck(dev, call_diag, &kind, 2, sel);
    kind = 4;
    gradgradcheck(dev, call_diag, &kind, 2, sel);
    gc_in sl[2] = {{2, {3, 3}, X9, 1}, {2, {3, 2}, S6, 1}};
    kind = 3;
    gradgradcheck(dev, call_diag, &kind, 2, sl);
}

/* tanh of a product: kind 0 mm [2, 3] @ [3, 2]; 1 mv [2, 3] @ [3]; 2 dot; 3 bmm
 * [1, 2, 3] @ [1, 3, 2]; 4 addmm (beta 0.5, alpha 1.5); 5 addmv; 6 baddbmm;
 * 7 addbmm.  in[0] the first factor, in[1] the second, in[2] the added input. */
static clt_status call_product(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *a = NULL, *b = NULL, *p = NULL;
    clt_status st = CLT_OK;
    const int64_t m23[2] = {2, 3}, m32[2] = {3, 2}, b123[3] = {1, 2, 3}, b132[3] = {1, 3, 2};
    switch (kind) {
    case 0: case 4:
        st = clt_reshape(in[0], 2, m23, &a);
        if (st == CLT_OK)
            st = clt_reshape(in[1], 2, m32, &b);
        if (st == CLT_OK)
            st = kind == 0 ? clt_mm(a, b, &p) : clt_addmm(in[2], a, b, 0.5, 1.5, &p);
        break;
    case 1: case 5:
        st = clt_reshape(in[0], 2, m23, &a);
        if (st == CLT_OK)
            st = clt_narrow(in[1], 0, 0, 3, &b);
        if (st == CLT_OK)
            st = kind == 1 ? clt_mv(a, b, &p) : clt_addmv(in[2], a, b, 0.5, 1.5, &p);
        break;
    case 2:
        st = clt_narrow(in[0], 0, 0, 3, &a);
        if (st == CLT_OK)
            st = clt_narrow(in[1], 0, 3, 3, &b);
        if (st == CLT_OK)
            st = clt_dot(a, b, &p);
        break;
    default:
        st = clt_reshape(in[0], 3, b123, &a);
        if (st == CLT_OK)
            st = clt_reshape(in[1], 3, b132, &b);
        if (st == CLT_OK)
            st = kind == 3   ? clt_bmm(a, b, &p)
                 : kind == 6 ? clt_baddbmm(in[2], a, b, 0.5, 1.5, &p)
                             : clt_addbmm(in[2], a, b, 0.5, 1.5, &p);
    }
    if (st == CLT_OK)
        st = clt_tanh(p, out);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(p);
    return st;
}

Test(double_backward, mm_mv_dot_bmm_and_the_add_products)
{
    clt_device *dev = get_device("cpu");
    static const double B2[] = {0.3, -0.2};
    gc_in ins[3] = {{1, {6}, X6, 1}, {1, {6}, U6, 1}, {1, {2}, B2, 1}};
    for (int kind = 0; kind <= 7; kind++)
        gradgradcheck(dev, call_product, &kind, kind < 4 ? 2 : 3, ins);
}

static clt_status poly2(const clt_tensor *a, clt_tensor **out)
{
    return clt_polygamma(2, a, out);
}

static clt_status xlogy_sq(const clt_tensor *a, clt_tensor **out)
{
    clt_tensor *sq = NULL;
    clt_status st = clt_mul(a, a, &sq);
    if (st == CLT_OK)
        st = clt_xlogy(sq, a, out);
    clt_tensor_free(sq);
    return st;
}

Test(double_backward, lgamma_digamma_polygamma_xlogy)
{
    clt_device *dev = get_device("cpu");
    const un_fn fns[] = {clt_lgamma, clt_digamma, poly2, xlogy_sq};
    gc_in p[1] = {{2, {2, 3}, P6, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradgradcheck(dev, call_un, &fns[i], 1, p);
        gradgradcheck(dev, call_un_mixed, &fns[i], 1, p);
    }
}

/* kind 0: lerp(a, b, w); 1: lerp_scalar(a, b, 0.3); 2: addcmul(a, b, w, 0.7);
 * 3: addcdiv(a, b, w, 0.7); each times a. */
static clt_status call_three(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *y = NULL;
    clt_status st = kind == 0   ? clt_lerp(in[0], in[1], in[2], &y)
                    : kind == 1 ? clt_lerp_scalar(in[0], in[1], 0.3, &y)
                    : kind == 2 ? clt_addcmul(in[0], in[1], in[2], 0.7, &y)
                                : clt_addcdiv(in[0], in[1], in[2], 0.7, &y);
    if (st == CLT_OK)
        st = clt_mul(y, in[0], out);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, atan2_hypot_copysign_lerp_addcmul_addcdiv)
{
    clt_device *dev = get_device("cpu");
    const tt_fn fns[] = {clt_atan2, clt_hypot, clt_copysign};
    gc_in two[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradgradcheck(dev, call_tt, &fns[i], 2, two);
        gradgradcheck(dev, call_tt_mixed, &fns[i], 2, two);
    }
    gc_in three[3] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, U6, 1}, {1, {3}, Y3, 1}};
    for (int kind = 0; kind <= 3; kind++)
        gradgradcheck(dev, call_three, &kind, kind == 1 ? 2 : 3, three);
}

/* ---- linear algebra ----------------------------------------------------------------- */

/* A function of the 3 x 3 matrix in[0] through one linear algebra op
 * (kind), made nonlinear around it where the op is linear: 0 trace(X) X;
 * 1 diag_embed(diag(X)^2); 2 cross(X, X * X); 3 det; 4 inv; 5 cholesky(X
 * X^T + I); 6 solve_triangular(triu(X), X * X); 7 Q * R of qr; 8 V
 * diag(exp(w)) V^T of eigh(X + X^T); 9 U diag(S^2) Vh of svd; 10 L * U of
 * lu; 11 matrix_exp(X / 2); 12 pinv of X's first two columns; 13
 * cholesky_solve(X, cholesky(X X^T + I)); 14 block_diag(X, X * X).  The
 * intermediates live in a scope of their own. */
static clt_status call_linalg(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    const clt_tensor *x = in[0];
    clt_tensor *a, *b, *c, *d, *e;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
#define T(call)                                                              \
    do {                                                                     \
        if ((st = (call)) != CLT_OK)                                         \
            goto done;                                                       \
    } while (0)
    switch (kind) {
    case 0:
        T(clt_trace(x, &a));
        T(clt_mul(a, x, out));
        break;
    case 1:
        T(clt_diag(x, 0, &a));
        T(clt_mul(a, a, &b));
        T(clt_diag_embed(b, 0, -2, -1, out));
        break;
    case 2:
        T(clt_mul(x, x, &a));
        T(clt_linalg_cross(x, a, -1, out));
        break;
    case 3:
        T(clt_linalg_det(x, out));
        break;
    case 4:
        T(clt_linalg_inv(x, out));
        break;
    case 5: case 13:
        T(clt_transpose(x, 0, 1, &a));
        T(clt_matmul(x, a, &b));
        T(clt_eye(clt_tensor_device(x), CLT_FLOAT64, 3, 3, &c));
        T(clt_add(b, c, &d));
        T(kind == 5 ? clt_linalg_cholesky(d, 0, out) : clt_linalg_cholesky(d, 0, &e));
        if (kind == 13)
            T(clt_cholesky_solve(x, e, 0, out));
        break;
    case 6:
        T(clt_triu(x, 0, &a));
        T(clt_mul(x, x, &b));
        T(clt_linalg_solve_triangular(a, b, 1, 1, 0, out));
        break;
    case 7:
        T(clt_linalg_qr(x, "reduced", &a, &b));
        T(clt_mul(a, b, out));
        break;
    case 8:
        T(clt_transpose(x, 0, 1, &a));
        T(clt_add(x, a, &b));
        T(clt_linalg_eigh(b, "L", &c, &d));
        T(clt_exp(c, &e));
        T(clt_mul(d, e, &a));
        T(clt_transpose(d, 0, 1, &b));
        T(clt_matmul(a, b, out));
        break;
    case 9:
        T(clt_linalg_svd(x, 0, &a, &b, &c));
        T(clt_mul(b, b, &d));
        T(clt_mul(a, d, &e));
        T(clt_matmul(e, c, out));
        break;
    case 10:
        T(clt_linalg_lu(x, &a, &b, &c));
        T(clt_mul(b, c, out));
        break;
    case 11:
        T(clt_mul_scalar(x, 0.5, &a));
        T(clt_linalg_matrix_exp(a, out));
        break;
    case 12:
        T(clt_narrow(x, 1, 0, 2, &a));
        T(clt_linalg_pinv(a, NULL, NULL, 0, out));
        break;
    default:
        T(clt_mul(x, x, &a));
        T(clt_block_diag((const clt_tensor *[]){x, a}, 2, out));
    }
#undef T
    st = clt_scope_keep(*out);
done:
    clt_scope_end();
    return st;
}

Test(double_backward, linear_algebra)
{
    clt_device *dev = get_device("cpu");
    static const double X9[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2, 0.9, 0.3, -0.8};
    gc_in one[1] = {{2, {3, 3}, X9, 1}};
    for (int kind = 0; kind <= 14; kind++)
        gradgradcheck_tol(dev, call_linalg, &kind, 1, one, 1e-4, 1e-5);
    /* det at singular matrices: its formula there goes through the SVD */
    static const double rank2[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
    static const double rank1[9] = {1, 2, 3, 2, 4, 6, 3, 6, 9};
    int det = 3;
    gc_in sing[1] = {{2, {3, 3}, rank2, 1}};
    gradgradcheck_tol(dev, call_linalg, &det, 1, sing, 1e-4, 1e-5);
    sing[0].data = rank1;
    gradgradcheck_tol(dev, call_linalg, &det, 1, sing, 1e-4, 1e-5);
}

/* linalg.eig and eigvals of the matrix in[0] ([3, 3] or [2, 3, 3]; kind 4
 * takes it as view_as_complex of [3, 3, 2]), through losses that depend
 * on neither the values' order nor the vectors' phases: 0 view_as_real of
 * eigvals (the values alone); 1 |V|^2 (the vectors alone); 2 view_as_real
 * of L and |V|^2 from one eig (both gradients: the diagonal of torch's M
 * is gL); 3 |eigvals|^2 * real(eigvals); 4 kind 2 of a complex A. */
static clt_status call_eig(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *a = in[0], *w, *v, *r, *s, *t, *fw, *fv;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
#define T(call)                                                              \
    do {                                                                     \
        if ((st = (call)) != CLT_OK)                                         \
            goto done;                                                       \
    } while (0)
    if (kind == 4)
        T(clt_view_as_complex(in[0], &a));
    if (kind == 0 || kind == 3) {
        T(clt_linalg_eigvals(a, &w));
        if (kind == 0) {
            T(clt_view_as_real(w, out));
        } else {
            T(clt_abs(w, &r));
            T(clt_mul(r, r, &s));
            T(clt_real(w, &t));
            T(clt_mul(s, t, out));
        }
    } else {
        T(clt_linalg_eig(a, &w, &v));
        T(clt_abs(v, &r));
        T(clt_mul(r, r, kind == 1 ? out : &s));
        if (kind != 1) {
            T(clt_view_as_real(w, &t));
            T(clt_flatten(t, 0, -1, &fw));
            T(clt_flatten(s, 0, -1, &fv));
            T(clt_cat((const clt_tensor *[]){fw, fv}, 2, 0, out));
        }
    }
#undef T
    st = clt_scope_keep(*out);
done:
    clt_scope_end();
    return st;
}

Test(double_backward, eig_and_eigvals)
{
    clt_device *dev = get_device("cpu");
    /* real eigenvalues (near 1.6, 2.3, 3.1), a complex-conjugate pair, a
     * batch of both, and a complex matrix */
    static const double R9[] = {2.2, 0.3, -0.4, 0.5, 1.9, 0.6, -0.2, 0.7, 2.9};
    static const double C9[] = {1.0, -2.0, 0.3, 1.5, 0.7, -0.4, 0.2, 0.6, 2.5};
    static const double Z18[] = {0.9, 0.2, -0.5, 0.4, 0.3, -0.1, 1.2, -0.3, -0.2,
                                 0.6, 0.5, 0.1, 0.7, -0.8, 0.2, 0.4, 1.5, 0.3};
    double b[18];
    memcpy(b, R9, sizeof R9);
    memcpy(b + 9, C9, sizeof C9);
    gc_in real[1] = {{2, {3, 3}, R9, 1}}, pair[1] = {{2, {3, 3}, C9, 1}};
    gc_in batch[1] = {{3, {2, 3, 3}, b, 1}}, cplx[1] = {{3, {3, 3, 2}, Z18, 1}};
    for (int kind = 0; kind <= 3; kind++) {
        gradgradcheck_tol(dev, call_eig, &kind, 1, real, 1e-4, 1e-5);
        gradgradcheck_tol(dev, call_eig, &kind, 1, pair, 1e-4, 1e-5);
    }
    int two = 2, four = 4;
    gradgradcheck_tol(dev, call_eig, &two, 1, batch, 1e-4, 1e-5);
    gradgradcheck_tol(dev, call_eig, &four, 1, cplx, 1e-4, 1e-5);
}

/* A linear shape or spatial op r of x [1, 4, 2, 2], then r * r, so that
 * the op's backward meets a gradient with a history: kind 0 reflect pad, 1
 * constant pad (one side cropped), 2 replicate pad, 3 circular pad, 4
 * repeat, 5 roll, 6 pixel_shuffle, 7 pixel_unshuffle, 8 channel_shuffle, 9
 * unfold, 10 fold (of x as [1, 4, 4]), 11 bilinear and 12 bicubic
 * interpolation, 13 nearest, 14 as_strided (overlapping), 15
 * max_unpool2d. */
static clt_status call_shape_op(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    const clt_tensor *x = in[0];
    clt_tensor *r = NULL, *v = NULL, *idx = NULL;
    clt_status st = CLT_OK;
    const int64_t p_reflect[4] = {1, 1, 1, 0}, p_const[4] = {1, -1, 2, 0};
    const int64_t p_circ[4] = {1, 0, 0, 1}, reps[4] = {1, 1, 2, 1}, shifts[2] = {1, -1};
    const int dims[2] = {1, 3};
    const int64_t k21[2] = {2, 1}, k22[2] = {2, 2}, s3[3] = {1, 4, 4}, o33[2] = {3, 3};
    const int64_t sz35[2] = {3, 5}, sz33[2] = {3, 3};
    const int64_t as_size[2] = {3, 3}, as_stride[2] = {2, 1}, as_off = 1;
    switch (kind) {
    case 0: st = clt_pad(x, p_reflect, 4, CLT_PAD_REFLECT, 0.0, &r); break;
    case 1: st = clt_pad(x, p_const, 4, CLT_PAD_CONSTANT, 0.5, &r); break;
    case 2: st = clt_pad(x, p_reflect, 4, CLT_PAD_REPLICATE, 0.0, &r); break;
    case 3: st = clt_pad(x, p_circ, 4, CLT_PAD_CIRCULAR, 0.0, &r); break;
    case 4: st = clt_repeat(x, reps, 4, &r); break;
    case 5: st = clt_roll(x, shifts, dims, 2, &r); break;
    case 6: st = clt_pixel_shuffle(x, 2, &r); break;
    case 7: st = clt_pixel_unshuffle(x, 2, &r); break;
    case 8: st = clt_channel_shuffle(x, 2, &r); break;
    case 9: st = clt_unfold(x, k21, NULL, &r); break;
    case 10:
        st = clt_reshape(x, 3, s3, &v);
        if (st == CLT_OK)
            st = clt_fold(v, o33, k22, NULL, &r);
        break;
    case 11: st = clt_interpolate(x, sz35, NULL, CLT_INTERP_BILINEAR, 0, &r); break;
    case 12: st = clt_interpolate(x, sz33, NULL, CLT_INTERP_BICUBIC, 1, &r); break;
    case 13: st = clt_interpolate(x, sz35, NULL, CLT_INTERP_NEAREST, 0, &r); break;
    case 14: st = clt_as_strided(x, 2, as_size, as_stride, &as_off, &r); break;
    default: {
        /* each plane's 4 values to places of a 4 x 4 plane, one per 2 x 2 window */
        int64_t iv[16], ishape[4] = {1, 4, 2, 2};
        for (int k = 0; k < 16; k++) {
            int h = (k / 2) % 2, w = k % 2, c = k / 4;
            iv[k] = (2 * h + (c + k) % 2) * 4 + 2 * w + c / 2;
        }
        st = clt_tensor_from_host(clt_tensor_device(x), CLT_INT64, 4, ishape, iv, &idx);
        if (st == CLT_OK)
            st = clt_max_unpool2d(x, idx, k22, NULL, NULL, NULL, &r);
    }
    }
    if (st == CLT_OK)
        st = clt_mul(r, r, out);
    clt_tensor_free(r);
    clt_tensor_free(v);
    clt_tensor_free(idx);
    return st;
}

Test(double_backward, pads_repeat_roll_shuffles_im2col_interpolate_unpool)
{
    clt_device *dev = get_device("cpu");
    static const double X16[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2, 0.9, 0.3,
                                 -0.8, 1.2, -0.5, 0.6, 1.9, -1.1, 0.2, -1.7};
    gc_in ins[1] = {{4, {1, 4, 2, 2}, X16, 1}};
    for (int kind = 0; kind <= 15; kind++)
        gradgradcheck(dev, call_shape_op, &kind, 1, ins);
}

/* Ops that move x's values by indices, x [2, 3] (no ties: X6), src [2, 2]:
 * kind 0 sort along 1, 1 cummax, 2 cummin, 3-6 scatter_reduce of src into
 * x along 1 at {{0, 2}, {1, 1}} (amax, prod, mean, sum; include_self), 7
 * index_put of src's first row at (0, 2), (1, 0), 8 masked_scatter of src
 * into x, 9 pad_sequence of x's rows as two sequences; each result r taken
 * to r * r. */
static clt_status call_index_move(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    static const char *const reduce[4] = {"amax", "prod", "mean", "sum"};
    int kind = *(const int *)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *r = NULL, *idx = NULL, *i2 = NULL, *row = NULL, *a = NULL, *b = NULL;
    clt_status st = CLT_OK;
    int64_t n2[2] = {2, 2}, n1 = 2, ms[2] = {2, 3};
    if (kind == 0) {
        st = clt_sort(in[0], 1, 0, &r, &idx);
    } else if (kind <= 2) {
        st = kind == 1 ? clt_cummax(in[0], 1, &r, &idx) : clt_cummin(in[0], 1, &r, &idx);
    } else if (kind <= 6) {
        int64_t iv[4] = {0, 2, 1, 1};
        st = clt_tensor_from_host(dev, CLT_INT64, 2, n2, iv, &idx);
        if (st == CLT_OK)
            st = clt_scatter_reduce(in[0], 1, idx, in[1], reduce[kind - 3], 1, &r);
    } else if (kind == 7) {
        int64_t iv0[2] = {0, 1}, iv1[2] = {2, 0};
        st = clt_tensor_from_host(dev, CLT_INT64, 1, &n1, iv0, &idx);
        if (st == CLT_OK)
            st = clt_tensor_from_host(dev, CLT_INT64, 1, &n1, iv1, &i2);
        if (st == CLT_OK)
            st = clt_narrow(in[1], 0, 0, 1, &a);
        if (st == CLT_OK)
            st = clt_reshape(a, 1, &n1, &row);
        const clt_tensor *ix[2] = {idx, i2};
        if (st == CLT_OK)
            st = clt_index_put(in[0], ix, 2, row, 0, &r);
    } else if (kind == 8) {
        uint8_t mv[6] = {1, 0, 1, 0, 1, 1};
        st = clt_tensor_from_host(dev, CLT_BOOL, 2, ms, mv, &idx);
        if (st == CLT_OK)
            st = clt_masked_scatter(in[0], idx, in[1], &r);
    } else {
        int64_t n3 = 3;
        st = clt_narrow(in[0], 0, 0, 1, &row);
        if (st == CLT_OK)
            st = clt_reshape(row, 1, &n3, &a);
        clt_tensor_free(row);
        row = NULL;
        if (st == CLT_OK)
            st = clt_narrow(in[1], 0, 1, 1, &row);
        if (st == CLT_OK)
            st = clt_reshape(row, 1, &n1, &b);
        const clt_tensor *seqs[2] = {a, b};
        if (st == CLT_OK)
            st = clt_pad_sequence(seqs, 2, 1, 0.25, &r);
    }
    if (st == CLT_OK)
        st = clt_mul(r, r, out);
    clt_tensor *tmp[] = {r, idx, i2, row, a, b};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
        clt_tensor_free(tmp[k]);
    return st;
}

Test(double_backward, sort_cummax_scatter_reduce_index_put_masked_scatter_pad_sequence)
{
    clt_device *dev = get_device("cpu");
    static const double S4[] = {0.9, -0.3, 1.4, 0.6};
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {2, {2, 2}, S4, 1}};
    for (int kind = 0; kind <= 9; kind++)
        gradgradcheck(dev, call_index_move, &kind, kind <= 2 ? 1 : 2, ins);
}

/* embedding_bag of weight [4, 2] at entries {0, 2, 1, 3, 2} in bags from
 * offsets {0, 2}, squared: kind 0 sum with per-sample weights (both
 * differentiated), 1 mean, 2 max, 3 sum with padding_idx 3. */
static clt_status call_embedding_bag(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    static const clt_bag_mode modes[4] = {CLT_BAG_SUM, CLT_BAG_MEAN, CLT_BAG_MAX, CLT_BAG_SUM};
    int kind = *(const int *)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    int64_t iv[5] = {0, 2, 1, 3, 2}, ov[2] = {0, 2}, n5 = 5, n2 = 2, pad = 3;
    clt_tensor *idx = NULL, *off = NULL, *r = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 1, &n5, iv, &idx);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, &n2, ov, &off);
    if (st == CLT_OK)
        st = clt_embedding_bag(in[0], idx, off, modes[kind], kind == 0 ? in[1] : NULL,
                               kind == 3 ? &pad : NULL, 0, &r);
    if (st == CLT_OK)
        st = clt_mul(r, r, out);
    clt_tensor_free(idx);
    clt_tensor_free(off);
    clt_tensor_free(r);
    return st;
}

Test(double_backward, embedding_bag_every_mode)
{
    clt_device *dev = get_device("cpu");
    static const double W8[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2, 0.9, 0.3};
    static const double P5[] = {0.5, -0.9, 1.2, 0.4, -0.3};
    gc_in ins[2] = {{2, {4, 2}, W8, 1}, {1, {5}, P5, 1}};
    for (int kind = 0; kind <= 3; kind++)
        gradgradcheck(dev, call_embedding_bag, &kind, kind == 0 ? 2 : 1, ins);
}

/* ---- the remaining math ops: special functions, logit ... prod, cumprod ------------- */

static const double Q6[] = {0.15, 0.3, 0.45, 0.6, 0.75, 0.9};

static clt_status logit_eps(const clt_tensor *a, clt_tensor **out)
{
    const double eps = 0.2; /* 0.15 is clamped: 0 there */
    return clt_logit(a, &eps, out);
}

static clt_status logit_none(const clt_tensor *a, clt_tensor **out)
{
    return clt_logit(a, NULL, out);
}

static clt_status nan_to_num0(const clt_tensor *a, clt_tensor **out)
{
    return clt_nan_to_num(a, 0.0, NULL, NULL, out);
}

static clt_status mvlgamma3(const clt_tensor *a, clt_tensor **out)
{
    return clt_mvlgamma(a, 3, out);
}

static clt_status mantissa(const clt_tensor *a, clt_tensor **out)
{
    clt_tensor *e = NULL;
    clt_status st = clt_frexp(a, out, &e);
    clt_tensor_free(e);
    return st;
}

Test(double_backward, special_functions_logit_nan_to_num_frexp)
{
    clt_device *dev = get_device("cpu");
    const un_fn real[] = {clt_special_i0,   clt_special_i0e,      clt_special_i1,
                          clt_special_i1e,  clt_special_ndtr,     clt_special_log_ndtr,
                          clt_sinc,         nan_to_num0,          mantissa};
    gc_in x[1] = {{2, {2, 3}, X6, 1}};
    for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
        if (real[i] != nan_to_num0 && real[i] != mantissa) /* linear: no history */
            gradgradcheck(dev, call_un, &real[i], 1, x);
        gradgradcheck(dev, call_un_mixed, &real[i], 1, x);
    }
    const un_fn unit[] = {clt_special_ndtri, logit_eps, logit_none};
    gc_in q[1] = {{2, {2, 3}, Q6, 1}};
    for (size_t i = 0; i < sizeof unit / sizeof unit[0]; i++) {
        gradgradcheck(dev, call_un, &unit[i], 1, q);
        gradgradcheck(dev, call_un_mixed, &unit[i], 1, q);
    }
    const un_fn pos[] = {clt_special_entr, mvlgamma3};
    gc_in a[1] = {{2, {2, 3}, A6, 1}};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        gradgradcheck(dev, call_un, &pos[i], 1, a);
        gradgradcheck(dev, call_un_mixed, &pos[i], 1, a);
    }
    const tt_fn two[] = {clt_logaddexp, clt_logaddexp2, clt_special_xlog1py};
    gc_in xy[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
        gradgradcheck(dev, call_tt, &two[i], 2, xy);
        gradgradcheck(dev, call_tt_mixed, &two[i], 2, xy);
    }
}

/* kind 0: glu(x, 1) of x [2, 4]; 1: prelu(x, w) of x [2, 3], w [3];
 * 2: x.clone().mul_(1.5) (MulBackward1 in place); each times x (glu's
 * times x's first half). */
static clt_status call_act(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *y = NULL, *h = NULL;
    clt_status st = CLT_OK;
    if (kind == 0) {
        st = clt_glu(in[0], 1, &y);
        if (st == CLT_OK)
            st = clt_narrow(in[0], 1, 0, 2, &h);
    } else if (kind == 1) {
        st = clt_prelu(in[0], in[1], &y);
    } else {
        st = clt_clone(in[0], &y);
        if (st == CLT_OK)
            st = clt_mul_scalar_(y, 1.5);
    }
    if (st == CLT_OK)
        st = clt_mul(y, h ? h : in[0], out);
    clt_tensor_free(y);
    clt_tensor_free(h);
    return st;
}

Test(double_backward, glu_prelu_and_mul_scalar_in_place)
{
    clt_device *dev = get_device("cpu");
    static const double X8[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2, 0.3, 0.9};
    static const double W3[] = {0.25, -0.5, 1.5};
    const int kinds[] = {0, 1, 2};
    gc_in g[1] = {{2, {2, 4}, X8, 1}};
    gradgradcheck(dev, call_act, &kinds[0], 1, g);
    gc_in p[2] = {{2, {2, 3}, X6, 1}, {1, {3}, W3, 1}};
    gradgradcheck(dev, call_act, &kinds[1], 2, p);
    gradgradcheck(dev, call_act, &kinds[2], 1, p);
}

/* kind 0: prod; 1: prod over dim 1; 2: prod over dim 0 kept; 3: cumprod
 * over dim 1; 4: cumprod over dim 0; 5: logcumsumexp over dim 1; of x
 * [3, 4], squared where the result is linear in each element. */
static clt_status call_scan(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int kind = *(const int *)ctx;
    clt_tensor *y = NULL;
    clt_status st = kind == 0   ? clt_prod(in[0], &y)
                    : kind == 1 ? clt_prod_dim(in[0], 1, 0, &y)
                    : kind == 2 ? clt_prod_dim(in[0], 0, 1, &y)
                    : kind == 3 ? clt_cumprod(in[0], 1, &y)
                    : kind == 4 ? clt_cumprod(in[0], 0, &y)
                                : clt_logcumsumexp(in[0], 1, &y);
    if (st == CLT_OK)
        st = clt_mul(y, y, out);
    clt_tensor_free(y);
    return st;
}

Test(double_backward, prod_cumprod_logcumsumexp_with_zeros)
{
    clt_device *dev = get_device("cpu");
    /* no zero; one zero in a row; two zeros in a row and one in a column */
    static const double none[] = {0.7, -1.3, 1.1, 0.9, 1.6, -0.8, 1.2, 0.5, -1.1, 0.6, 1.4, 1.05};
    static const double one[] = {0.7, 0.0, 1.1, 0.9, 1.6, -0.8, 1.2, 0.5, -1.1, 0.6, 1.4, 1.05};
    static const double two[] = {0.7, 0.0, 1.1, 0.0, 1.6, -0.8, 1.2, 0.5, 0.0, 0.6, 1.4, 1.05};
    const double *data[] = {none, one, two};
    for (int d = 0; d < 3; d++) {
        gc_in x[1] = {{2, {3, 4}, data[d], 1}};
        for (int kind = 0; kind <= 5; kind++)
            if (kind < 5 || d == 0)
                gradgradcheck(dev, call_scan, &kind, 1, x);
    }
}
