/* test_inplace_grad.c: every in-place op records its gradient on the
 * tensor's history, as torch's do: gradients of a loss through the op on a
 * non-leaf against finite differences in float64, torch's node names, the
 * saved-tensor version error where torch raises it, second derivatives,
 * copy_ between devices, and failures that leave the tensor and its
 * history unchanged. */
#include <complex.h>

#include "gradcheck.h"

typedef enum op_kind {
    K_MUL, K_DIV, K_CLAMP, K_CLAMP_MIN, K_CLAMP_MAX, K_FILL, K_ZERO, K_COPY, K_UNIFORM,
    K_NORMAL, K_EXPONENTIAL, K_GEOMETRIC, K_LOG_NORMAL, K_CAUCHY, K_BERNOULLI, K_INDEX_ADD,
    K_SCATTER_ADD, K_INDEX_FILL, K_INDEX_COPY, K_INDEX_PUT, K_INDEX_PUT_ACC, K_MASKED_SCATTER
} op_kind;

typedef struct ip_case {
    op_kind kind;
    const char *node; /* torch 1.13's grad_fn name */
} ip_case;

static clt_tensor *i64(clt_device *dev, int nd, const int64_t *shape, const int64_t *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, nd, shape, v, &t));
    return t;
}

/* The op on y (in[0] * 1.5, a non-leaf) with operand in[1] where it takes
 * one; random fills draw from a generator seeded afresh, so that every
 * evaluation sees the same values. */
static clt_status apply(op_kind k, clt_tensor *y, clt_tensor *const *in)
{
    clt_device *dev = clt_tensor_device(y);
    clt_status st = CLT_OK;
    clt_generator *g = NULL;
    clt_tensor *idx = NULL, *m = NULL;
    double lo = -1.25, hi = 1.5; /* no ties with 1.5 x: kinks */
    int64_t two[] = {2}, s24[] = {2, 4};
    if (k >= K_UNIFORM && k <= K_BERNOULLI)
        CHECK(clt_generator_new(7, &g));
    switch (k) {
    case K_MUL: st = clt_mul_(y, in[1]); break;
    case K_DIV: st = clt_div_(y, in[1]); break;
    case K_CLAMP: st = clt_clamp_(y, &lo, &hi); break;
    case K_CLAMP_MIN: st = clt_clamp_(y, &lo, NULL); break;
    case K_CLAMP_MAX: st = clt_clamp_(y, NULL, &hi); break;
    case K_FILL: st = clt_fill_(y, 2.5); break;
    case K_ZERO: st = clt_zero_(y); break;
    case K_COPY: st = clt_copy_(y, in[1]); break;
    case K_UNIFORM: st = clt_uniform_(y, g, -1, 2); break;
    case K_NORMAL: st = clt_normal_(y, g, 0.5, 2); break;
    case K_EXPONENTIAL: st = clt_exponential_(y, g, 1.5); break;
    case K_GEOMETRIC: st = clt_geometric_(y, g, 0.3); break;
    case K_LOG_NORMAL: st = clt_log_normal_(y, g, 0, 0.5); break;
    case K_CAUCHY: st = clt_cauchy_(y, g, 0, 1); break;
    case K_BERNOULLI: st = clt_bernoulli_(y, g, 0.5); break;
    case K_INDEX_ADD:
        idx = i64(dev, 1, two, (int64_t[]){2, 0});
        st = clt_index_add_(y, 0, idx, in[1], -2.0);
        break;
    case K_SCATTER_ADD:
        idx = i64(dev, 2, s24, (int64_t[]){0, 2, 1, 0, 2, 2, 0, 1});
        st = clt_scatter_add_(y, 0, idx, in[1]);
        break;
    case K_INDEX_FILL:
        idx = i64(dev, 1, two, (int64_t[]){3, -4});
        st = clt_index_fill_(y, 1, idx, 2.0);
        break;
    case K_INDEX_COPY:
        idx = i64(dev, 1, two, (int64_t[]){2, 0});
        st = clt_index_copy_(y, 0, idx, in[1]);
        break;
    case K_INDEX_PUT:
    case K_INDEX_PUT_ACC: {
        /* accumulating: rows 1, 1 and 0, a repeated place; else rows 2 and
         * 0 (a place written twice has no gradient finite differences
         * see) */
        idx = k == K_INDEX_PUT_ACC ? i64(dev, 1, (int64_t[]){3}, (int64_t[]){1, 1, 0})
                                   : i64(dev, 1, two, (int64_t[]){2, 0});
        const clt_tensor *ix[1] = {idx};
        st = clt_index_put_(y, ix, 1, in[1], k == K_INDEX_PUT_ACC);
        break;
    }
    case K_MASKED_SCATTER: {
        const uint8_t mv[12] = {1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0};
        CHECK(clt_tensor_from_host(dev, CLT_BOOL, 2, (int64_t[]){3, 4}, mv, &m));
        st = clt_masked_scatter_(y, m, in[1]);
        break;
    }
    }
    clt_generator_free(g);
    clt_tensor_free(idx);
    clt_tensor_free(m);
    return st;
}

/* out = op_(in[0] * 1.5, in[1]) * in[0]: the product sends a gradient to
 * x past the ops that give t's old value none. */
static clt_status through(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const ip_case *c = ctx;
    clt_tensor *y = NULL;
    clt_status st = clt_mul_scalar(in[0], 1.5, &y);
    if (st == CLT_OK)
        st = apply(c->kind, y, in);
    if (st == CLT_OK && clt_is_grad_enabled() && clt_requires_grad(y))
        cr_assert_str_eq(clt_grad_fn_name(y), c->node);
    if (st == CLT_OK)
        st = clt_mul(y, in[0], out);
    clt_tensor_free(y);
    return st;
}

static const double xv[12] = {0.3,  -1.1, 0.7, 1.9,  -0.4, 1.3,
                              -1.6, 0.9,  0.2, -0.8, 1.1,  0.55};
static const double ov[12] = {0.8, -1.3, 1.7, 0.6,  -0.9, 1.2,
                              0.45, -0.7, 1.1, -1.5, 0.35, 2.1};

Test(inplace_grad, elementwise_ops_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const ip_case cases[] = {
        {K_MUL, "MulBackward0"},          {K_DIV, "DivBackward0"},
        {K_CLAMP, "ClampBackward1"},      {K_CLAMP_MIN, "ClampBackward1"},
        {K_CLAMP_MAX, "ClampBackward1"},  {K_FILL, "FillBackward2"},
        {K_ZERO, "ZeroBackward0"},        {K_COPY, "CopyBackwards"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int takes = cases[c].kind == K_MUL || cases[c].kind == K_DIV || cases[c].kind == K_COPY;
        gc_in two[2] = {{2, {3, 4}, xv, 1}, {2, {3, 4}, ov, takes}};
        gradcheck(dev, through, &cases[c], 2, two);
        /* other broadcast from [4] */
        gc_in bc[2] = {{2, {3, 4}, xv, 1}, {1, {4}, ov, takes}};
        gradcheck(dev, through, &cases[c], 2, bc);
    }
}

Test(inplace_grad, random_fills_give_the_old_value_zero_gradient)
{
    clt_device *dev = get_device("cpu");
    const ip_case cases[] = {
        {K_UNIFORM, "UniformBackward0"},     {K_NORMAL, "NormalBackward0"},
        {K_EXPONENTIAL, "ExponentialBackward0"}, {K_GEOMETRIC, "GeometricBackward0"},
        {K_LOG_NORMAL, "LogNormalBackward0"}, {K_CAUCHY, "CauchyBackward0"},
        {K_BERNOULLI, "BernoulliBackward2"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        gc_in one[1] = {{2, {3, 4}, xv, 1}};
        gradcheck(dev, through, &cases[c], 1, one);
    }
}

Test(inplace_grad, index_ops_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const struct {
        ip_case c;
        gc_in src;
    } cases[] = {
        {{K_INDEX_ADD, "IndexAddBackward0"}, {2, {2, 4}, ov, 1}},
        {{K_SCATTER_ADD, "ScatterAddBackward0"}, {2, {2, 4}, ov, 1}},
        {{K_INDEX_FILL, "IndexFillBackward0"}, {1, {1}, ov, 0}},
        {{K_INDEX_COPY, "IndexCopyBackward0"}, {2, {2, 4}, ov, 1}},
        {{K_INDEX_PUT, "IndexPutBackward0"}, {1, {4}, ov, 1}},
        {{K_INDEX_PUT_ACC, "IndexPutBackward0"}, {2, {3, 4}, ov, 1}},
        {{K_MASKED_SCATTER, "MaskedScatterBackward0"}, {1, {9}, ov, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        gc_in two[2] = {{2, {3, 4}, xv, 1}, cases[c].src};
        gradcheck(dev, through, &cases[c].c, 2, two);
    }
}

/* L = sum((x * 1.5).mul_(x)) = 1.5 sum x^2: dL/dx = 3x, and the
 * gradient of sum(dL/dx) is 3 everywhere, through MulBackward0's saved
 * old value (which carries x's history in a pass that creates a graph). */
Test(inplace_grad, second_derivative_through_mul_)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *l = NULL, *g = NULL, *s = NULL, *gg = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){4}, xv, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul_scalar(x, 1.5, &y));
    CHECK(clt_mul_(y, x));
    CHECK(clt_sum(y, &l));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&l, 1, NULL, &x, 1, &o, &g));
    assert_tensor_close(g, (double[]){3 * xv[0], 3 * xv[1], 3 * xv[2], 3 * xv[3]}, 4, 1e-12,
                        1e-12, "gradient");
    CHECK(clt_sum(g, &s));
    o.create_graph = 0;
    CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &gg));
    assert_tensor_close(gg, (double[]){3, 3, 3, 3}, 4, 1e-12, 1e-12, "gradient");
    clt_tensor *all[] = {x, y, l, g, s, gg};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* torch's saved-tensor rule: y = exp(x); y.mul_(2) changes what exp's
 * backward reads (an error); an operand changed after mul_ saved it too;
 * mul_'s own old value is a copy, so changing y again is fine. */
Test(inplace_grad, saved_tensor_versions_as_torch)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *o = NULL, *y = NULL, *p = NULL, *l = NULL, *two = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, ov, &o));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 0, NULL, (double[]){2}, &two));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(o, 1));
    /* exp's saved output modified */
    CHECK(clt_exp(x, &y));
    CHECK(clt_mul_(y, two));
    CHECK(clt_sum(y, &l));
    assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "modified by an in-place operation");
    clt_tensor_free(y);
    clt_tensor_free(l);
    /* mul_'s saved operand modified */
    CHECK(clt_mul_scalar(x, 1.5, &y));
    CHECK(clt_mul_scalar(o, 1.0, &p));
    CHECK(clt_mul_(y, p));
    CHECK(clt_mul_scalar_(p, 2.0));
    CHECK(clt_sum(y, &l));
    assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "modified by an in-place operation");
    clt_tensor_free(y);
    clt_tensor_free(l);
    /* y itself changed after mul_ and div_: their old values are copies.
     * L = sum(2 * 1.5 x q / o) with q = o^2: dL/dx = 3 o, dL/do = 3 x */
    clt_tensor_free(p);
    CHECK(clt_mul(o, o, &p));
    CHECK(clt_mul_scalar(x, 1.5, &y));
    CHECK(clt_mul_(y, p));
    CHECK(clt_div_(y, o));
    CHECK(clt_mul_(y, two));
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    double wx[3], wo[3];
    for (int k = 0; k < 3; k++) {
        wx[k] = 3 * ov[k];
        wo[k] = 3 * xv[k];
    }
    clt_tensor *gx = NULL, *go = NULL;
    CHECK(clt_grad(x, &gx));
    CHECK(clt_grad(o, &go));
    assert_tensor_close(gx, wx, 3, 1e-12, 1e-12, "gradient");
    assert_tensor_close(go, wo, 3, 1e-12, 1e-12, "gradient");
    clt_tensor *all[] = {x, o, y, p, l, two, gx, go};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* copy_ from a source on another device: the gradient goes back to the
 * source's device (a broadcast source summed back to its shape). */
Test(inplace_grad, copy_between_devices)
{
    clt_device *d0 = get_device("cpu"), *d1 = second_device(d0);
    clt_tensor *x = NULL, *s = NULL, *y = NULL, *l = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT64, 2, (int64_t[]){3, 4}, xv, &x));
    CHECK(clt_tensor_from_host(d1, CLT_FLOAT32, 1, (int64_t[]){4},
                               (float[]){1, 2, 3, 4}, &s));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(s, 1));
    CHECK(clt_mul_scalar(x, 2.0, &y));
    CHECK(clt_copy_(y, s));
    cr_assert_str_eq(clt_grad_fn_name(y), "CopyBackwards");
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(s, &g));
    cr_assert_eq(clt_tensor_device(g), d1);
    cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32);
    assert_tensor_close(g, (double[]){3, 3, 3, 3}, 4, 0, 0, "gradient");
    clt_tensor_free(g);
    CHECK(clt_grad(x, &g));
    assert_tensor_close(g, (double[12]){0}, 12, 0, 0, "gradient");
    clt_tensor *all[] = {x, s, y, l, g};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* An integer tensor never requires grad: copy_ of a source that does
 * leaves it without history, as torch; mul_ of one is the dtype error. */
Test(inplace_grad, integer_tensors_record_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = i64(dev, 1, (int64_t[]){3}, (int64_t[]){1, 2, 3}), *s = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, xv, &s));
    CHECK(clt_set_requires_grad(s, 1));
    CHECK(clt_copy_(t, s));
    cr_assert_not(clt_requires_grad(t));
    cr_assert_null(clt_grad_fn_name(t));
    assert_error(clt_mul_(t, s), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
    cr_assert_not(clt_requires_grad(t));
    clt_tensor_free(t);
    clt_tensor_free(s);
}

/* y = x * 1.5 then a failing in-place op: y's values, its node and the
 * gradient through it are what they were. */
static void unchanged(clt_tensor *x, clt_tensor *y)
{
    double *v = read_as_f64(y);
    for (int k = 0; k < 12; k++)
        cr_assert_eq(v[k], xv[k] * 1.5);
    free(v);
    cr_assert_str_eq(clt_grad_fn_name(y), "MulBackward1");
    clt_tensor *l = NULL, *g = NULL;
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 1));
    CHECK(clt_grad(x, &g));
    double w[12];
    for (int k = 0; k < 12; k++)
        w[k] = 1.5;
    assert_tensor_close(g, w, 12, 0, 0, "gradient");
    CHECK(clt_zero_grad(x, 1));
    clt_tensor_free(g);
    clt_tensor_free(l);
}

Test(inplace_grad, failures_leave_t_and_its_history_unchanged)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *bad = NULL, *o = NULL, *idx = NULL;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(3, &g));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){3, 4}, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){5}, ov, &bad));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 4}, ov, &o));
    idx = i64(dev, 1, (int64_t[]){2}, (int64_t[]){0, 2});
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(o, 1));
    CHECK(clt_mul_scalar(x, 1.5, &y));
    assert_error(clt_mul_(y, bad), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    assert_error(clt_div_(y, bad), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    assert_error(clt_copy_(y, bad), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    assert_error(clt_bernoulli_(y, g, 2), CLT_ERR_INVALID_ARGUMENT, NULL);
    unchanged(x, y);
    assert_error(clt_uniform_(y, g, 2, 1), CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert_eq(clt_generator_offset(g), 0);
    unchanged(x, y);
    assert_error(clt_index_add_(y, 0, idx, bad, 1), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    assert_error(clt_index_copy_(y, 0, idx, bad), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    assert_error(clt_scatter_add_(y, 0, idx, o), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    const clt_tensor *ix[1] = {idx};
    assert_error(clt_index_put_(y, ix, 1, bad, 0), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    assert_error(clt_masked_scatter_(y, idx, o), CLT_ERR_SHAPE_MISMATCH, NULL);
    unchanged(x, y);
    clt_tensor *all[] = {x, y, bad, o, idx};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
    clt_generator_free(g);
}

/* L = sum |2 z op w| with op in place (mul_, div_ of a complex128 y = 2 z
 * by w, complex or real), at doubles. */
static double cplx_loss(int div, const double complex *z, const double complex *w, int n)
{
    double l = 0;
    for (int k = 0; k < n; k++)
        l += cabs(div ? 2 * z[k] / w[k] : 2 * z[k] * w[k]);
    return l;
}

/* mul_ and div_ of complex tensors record the out-of-place ops' conjugate
 * (Wirtinger) formulas on t's old value, as torch's: gradients of a real
 * loss, dL/dRe + i dL/dIm as torch gives them, against central finite
 * differences; a real w gets the real part. */
Test(inplace_grad, complex_mul_and_div_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    const double complex z0[3] = {1 + 2 * I, 3 - 1 * I, -0.5 + 0.25 * I};
    const double complex w0[3] = {0.7 - 1.2 * I, -1.1 + 0.4 * I, 2 + 0.5 * I};
    for (int div = 0; div < 2; div++)
        for (int real_w = 0; real_w < 2; real_w++) {
            double complex w[3];
            for (int k = 0; k < 3; k++)
                w[k] = real_w ? creal(w0[k]) : w0[k];
            clt_tensor *z = NULL, *wt = NULL, *y = NULL, *a = NULL, *l = NULL, *gz = NULL,
                       *gw = NULL;
            CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, (int64_t[]){3}, z0, &z));
            if (real_w) {
                double wr[3] = {creal(w[0]), creal(w[1]), creal(w[2])};
                CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, wr, &wt));
            } else {
                CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, (int64_t[]){3}, w, &wt));
            }
            CHECK(clt_set_requires_grad(z, 1));
            CHECK(clt_set_requires_grad(wt, 1));
            CHECK(clt_mul_scalar(z, 2.0, &y));
            CHECK(div ? clt_div_(y, wt) : clt_mul_(y, wt));
            cr_assert_str_eq(clt_grad_fn_name(y), div ? "DivBackward0" : "MulBackward0");
            double complex yv[3];
            CHECK(clt_tensor_read(y, yv, sizeof yv));
            for (int k = 0; k < 3; k++) {
                double complex want = div ? 2 * z0[k] / w[k] : 2 * z0[k] * w[k];
                cr_assert(cabs(yv[k] - want) < 1e-12, "y[%d] %g%+gi", k, creal(yv[k]),
                          cimag(yv[k]));
            }
            if (real_w) { /* a real t cannot hold the complex result */
                int was = clt_set_grad_enabled(0);
                assert_error(clt_mul_(wt, y), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
                assert_error(clt_div_(wt, y), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
                clt_set_grad_enabled(was);
            }
            CHECK(clt_abs(y, &a));
            CHECK(clt_sum(a, &l));
            CHECK(clt_backward(l, NULL, 0));
            CHECK(clt_grad(z, &gz));
            CHECK(clt_grad(wt, &gw));
            double complex got_z[3], got_w[3];
            double got_wr[3];
            CHECK(clt_tensor_read(gz, got_z, sizeof got_z));
            if (real_w)
                CHECK(clt_tensor_read(gw, got_wr, sizeof got_wr));
            else
                CHECK(clt_tensor_read(gw, got_w, sizeof got_w));
            const double h = 1e-6;
            for (int k = 0; k < 3; k++) {
                double complex zp[3], wp[3], fd[2][2];
                for (int part = 0; part < 2; part++) {
                    double complex step = part ? h * I : h;
                    memcpy(zp, z0, sizeof zp);
                    zp[k] += step;
                    double up = cplx_loss(div, zp, w, 3);
                    zp[k] -= 2 * step;
                    fd[0][part] = (up - cplx_loss(div, zp, w, 3)) / (2 * h);
                    memcpy(wp, w, sizeof wp);
                    wp[k] += step;
                    up = cplx_loss(div, z0, wp, 3);
                    wp[k] -= 2 * step;
                    fd[1][part] = (up - cplx_loss(div, z0, wp, 3)) / (2 * h);
                }
                double complex want_z = fd[0][0] + I * fd[0][1];
                double complex want_w = real_w ? fd[1][0] : fd[1][0] + I * fd[1][1];
                double complex gwk = real_w ? got_wr[k] : got_w[k];
                cr_assert(cabs(got_z[k] - want_z) < 1e-6, "div %d real_w %d: z[%d] %g%+gi, want "
                          "%g%+gi", div, real_w, k, creal(got_z[k]), cimag(got_z[k]),
                          creal(want_z), cimag(want_z));
                cr_assert(cabs(gwk - want_w) < 1e-6, "div %d real_w %d: w[%d] %g%+gi, want "
                          "%g%+gi", div, real_w, k, creal(gwk), cimag(gwk), creal(want_w),
                          cimag(want_w));
            }
            clt_tensor *all[] = {z, wt, y, a, l, gz, gw};
            for (size_t k = 0; k < sizeof all / sizeof *all; k++)
                clt_tensor_free(all[k]);
        }
}

/* Every in-place op moves the version, as torch's, even one that records
 * nothing and changes nothing (an empty tensor): an empty e that mul saved
 * and then changed in place makes backward fail, as in torch
 * (x.mul(e); e.add_(1); backward: "modified by an inplace operation"). */
Test(inplace_grad, empty_tensor_changed_in_place_moves_its_version)
{
    clt_device *dev = get_device("cpu");
    const int64_t s03[] = {0, 3};
    double lo = 0, hi = 1;
    for (int op = 0; op < 9; op++) {
        clt_tensor *x = NULL, *e = NULL, *y = NULL, *l = NULL, *idx = NULL, *src = NULL;
        clt_generator *g = NULL;
        CHECK(clt_generator_new(1, &g));
        CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s03, &x));
        CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s03, &e));
        CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s03, &src));
        idx = i64(dev, 1, (int64_t[]){0}, NULL);
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_mul(x, e, &y));
        switch (op) {
        case 0: CHECK(clt_add_scalar_(e, 1.0)); break;
        case 1: CHECK(clt_mul_(e, src)); break;
        case 2: CHECK(clt_fill_(e, 2.0)); break;
        case 3: CHECK(clt_zero_(e)); break;
        case 4: CHECK(clt_clamp_(e, &lo, &hi)); break;
        case 5: CHECK(clt_copy_(e, src)); break;
        case 6: CHECK(clt_uniform_(e, g, 0, 1)); break;
        case 7: CHECK(clt_fill_diagonal_(e, 1.0, 0)); break;
        default: CHECK(clt_index_fill_(e, 0, idx, 1.0)); break;
        }
        cr_assert(!clt_requires_grad(e));
        CHECK(clt_sum(y, &l));
        assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                     "modified by an in-place operation");
        clt_tensor *all[] = {x, e, y, l, idx, src};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_free(all[k]);
        clt_generator_free(g);
    }
}

/* index_copy and index_copy_ save their source where it requires grad, as
 * torch's: changing it afterwards fails backward; a source that needs no
 * gradient is not saved, and changing it is fine (torch 1.13 alike). */
Test(inplace_grad, index_copy_saves_its_source_as_torch)
{
    clt_device *dev = get_device("cpu");
    for (int inplace = 0; inplace < 2; inplace++)
        for (int src_grad = 0; src_grad < 2; src_grad++) {
            clt_tensor *x = NULL, *o = NULL, *s = NULL, *y = NULL, *r = NULL, *l = NULL;
            clt_tensor *idx = i64(dev, 1, (int64_t[]){2}, (int64_t[]){2, 0});
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){3, 4}, xv, &x));
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){2, 4}, ov, &o));
            CHECK(clt_set_requires_grad(x, 1));
            CHECK(clt_set_requires_grad(o, src_grad));
            CHECK(clt_mul_scalar(o, 1.0, &s));
            CHECK(clt_mul_scalar(x, 1.5, &y));
            if (inplace) {
                CHECK(clt_index_copy_(y, 0, idx, s));
                r = clt_tensor_retain(y);
            } else {
                CHECK(clt_index_copy(y, 0, idx, s, &r));
            }
            CHECK(clt_mul_scalar_(s, 2.0));
            CHECK(clt_sum(r, &l));
            if (src_grad)
                assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                             "modified by an in-place operation");
            else
                CHECK(clt_backward(l, NULL, 0));
            clt_tensor *all[] = {x, o, s, y, r, l, idx};
            for (size_t k = 0; k < sizeof all / sizeof *all; k++)
                clt_tensor_free(all[k]);
        }
}
