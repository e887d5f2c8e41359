/* test_double_backward.c: gradients of gradients (create_graph).  For each
 * op in scope, the first-order gradients G = dL/dx of L = sum(f(x) * u)
 * are taken with create_graph; M = sum(G * v) is then differentiated
 * again, and its gradients (Hessian-vector products, and J v for u) are
 * compared with central finite differences of M computed from plain
 * first-order gradients in float64, and with second differences of L
 * itself; then the engine's rules (refused nodes, retain_graph, leaves'
 * grad with history) and a WGAN-GP step on a small MLP against a float64
 * host computation. */
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

/* The check: dM/dx (Hessian-vector products) and dM/du (J v) against
 * finite differences of M, and dM/dx against second differences of L in
 * the directions v and e_k. */
static void gradgradcheck_tol(clt_device *dev, gc_fn f, const void *ctx, int nin,
                              const gc_in *ins, double rtol, double atol)
{
    const double eps = 1e-6, h = 1e-4;
    double *data[8];
    cr_assert(nin <= 7);
    for (int i = 0; i < nin; i++) {
        size_t n = gc_numel(&ins[i]);
        data[i] = malloc((n ? n : 1) * sizeof(double));
        memcpy(data[i], ins[i].data, n * sizeof(double));
    }
    clt_tensor *x[8] = {0}, *wrt[8], *an[8] = {0};
    double *uv = NULL;
    size_t nu = 0;
    gc_make(dev, nin, ins, data, x, 1);
    clt_tensor *u = gg_u(dev, f, ctx, nin, ins, data, 1, &uv, &nu);
    CHECK(clt_scope_begin());
    clt_tensor *m = gg_m(dev, f, ctx, nin, ins, x, u, 1);
    cr_assert(clt_requires_grad(m), "M has no history: the first gradients were detached");
    int nw = 0;
    for (int i = 0; i < nin; i++)
        if (ins[i].grad)
            wrt[nw++] = x[i];
    wrt[nw++] = u;
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
        size_t n = is_u ? nu : gc_numel(&ins[i]);
        double *got = calloc(n ? n : 1, sizeof *got);
        if (an[k])
            CHECK(clt_tensor_read(an[k], got, n * sizeof *got));
        clt_tensor_free(an[k++]);
        double *vals = is_u ? uv : data[i];
        for (size_t e = 0; e < n; e++) {
            double orig = vals[e], mv[2];
            for (int side = 0; side < 2; side++) {
                vals[e] = orig + (side ? -eps : eps);
                mv[side] = gg_m_plain(dev, f, ctx, nin, ins, data, uv);
            }
            vals[e] = orig;
            double num = (mv[0] - mv[1]) / (2 * eps);
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
                l[c] = gg_l(dev, f, ctx, nin, ins, data, uv);
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
    clt_tensor_free(u);
    for (int i = 0; i < nin; i++) {
        clt_tensor_free(x[i]);
        free(data[i]);
    }
    free(uv);
}

static void gradgradcheck(clt_device *dev, gc_fn f, const void *ctx, int nin, const gc_in *ins)
{
    gradgradcheck_tol(dev, f, ctx, nin, ins, 1e-5, 1e-6);
}

static const double X6[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2};
static const double P6[] = {0.7, 1.3, 2.1, 0.4, 1.6, 2.2};
static const double Y3[] = {1.1, -0.6, 1.9};

/* ---- elementwise ---------------------------------------------------------------- */

typedef clt_status (*tt_fn)(const clt_tensor *, const clt_tensor *, clt_tensor **);
typedef clt_status (*ts_fn)(const clt_tensor *, double, clt_tensor **);
typedef clt_status (*un_fn)(const clt_tensor *, clt_tensor **);

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

static clt_status call_un(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return (*(const un_fn *)ctx)(in[0], out);
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
