/* test_autograd.c: gradients of every differentiable op against finite
 * differences in float64 (gradcheck.h) and analytic host references, the
 * engine's rules (accumulation, retain_graph, errors, no-grad, detach),
 * memory, scopes, and bit-identical gradients on two devices. */
#include "gradcheck.h"

/* Values away from the kinks of abs, relu, clamp, max and the poles of
 * log, div and rsqrt. */
static const double X6[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2};
static const double P6[] = {0.7, 1.3, 2.1, 0.4, 1.6, 2.2};
static const double Y3[] = {1.1, -0.6, 1.9};
static const double Q3[] = {1.1, 0.6, 1.9};
static const double X12[] = {0.3, -1.1, 0.8, 1.7, -0.5, 2.3, -1.9, 0.2, 1.2, -0.7, 0.9, -2.4};

/* ---- elementwise --------------------------------------------------------------- */

typedef clt_status (*tt_fn)(const clt_tensor *, const clt_tensor *, clt_tensor **);
typedef clt_status (*ts_fn)(const clt_tensor *, double, clt_tensor **);

static clt_status call_tt(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return (*(const tt_fn *)ctx)(in[0], in[1], out);
}

Test(autograd, binary_ops_with_broadcasting)
{
    clt_device *dev = get_device("cpu");
    const tt_fn fns[] = {clt_add, clt_sub, clt_mul, clt_div, clt_maximum, clt_minimum};
    /* [2, 3] with [3] (broadcast over rows) */
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        gradcheck(dev, call_tt, &fns[i], 2, ins);
    /* [2, 1] with [1, 3] both broadcast; a 0-d operand */
    static const double C2[] = {0.5, -1.5}, S1[] = {1.25};
    gc_in b2[2] = {{2, {2, 1}, C2, 1}, {2, {1, 3}, Y3, 1}};
    gc_in b0[2] = {{2, {2, 3}, X6, 1}, {0, {0}, S1, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradcheck(dev, call_tt, &fns[i], 2, b2);
        gradcheck(dev, call_tt, &fns[i], 2, b0);
    }
}

Test(autograd, pow_both_operands)
{
    clt_device *dev = get_device("cpu");
    const tt_fn f = clt_pow;
    gc_in ins[2] = {{2, {2, 3}, P6, 1}, {1, {3}, Y3, 1}};
    gradcheck(dev, call_tt, &f, 2, ins);
}

static clt_status call_ts(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const struct {
        ts_fn f;
        double s;
    } *c = ctx;
    return c->f(in[0], c->s, out);
}

Test(autograd, scalar_ops)
{
    clt_device *dev = get_device("cpu");
    const struct {
        ts_fn f;
        double s;
    } cases[] = {{clt_add_scalar, 2.5},  {clt_sub_scalar, 1.5},  {clt_rsub_scalar, 3.0},
                 {clt_mul_scalar, -1.5}, {clt_div_scalar, 4.0},  {clt_rdiv_scalar, 2.0},
                 {clt_pow_scalar, 3.0},  {clt_pow_scalar, 0.5},  {clt_rpow_scalar, 1.7},
                 {clt_pow_scalar, -2.0}};
    gc_in pos[1] = {{2, {2, 3}, P6, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck(dev, call_ts, &cases[i], 1, pos);
}

/* remainder and fmod: a's gradient passes, b's is -g * floor(a / b) or
 * -g * trunc(a / b); at points away from the jumps (a / b not near an
 * integer).  Their scalar forms pass the gradient. */
Test(autograd, remainder_and_fmod)
{
    clt_device *dev = get_device("cpu");
    const tt_fn fns[] = {clt_remainder, clt_fmod};
    static const double C2[] = {0.5, -1.5}, S1[] = {1.25}, W6[] = {7.3, -5.1, 4.4, -0.7, 9.5, -3.3};
    gc_in ins[2] = {{2, {2, 3}, W6, 1}, {1, {3}, Y3, 1}};
    gc_in b2[2] = {{2, {2, 1}, C2, 1}, {2, {1, 3}, Y3, 1}};
    gc_in b0[2] = {{2, {2, 3}, X6, 1}, {0, {0}, S1, 1}};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        gradcheck(dev, call_tt, &fns[i], 2, ins);
        gradcheck(dev, call_tt, &fns[i], 2, b2);
        gradcheck(dev, call_tt, &fns[i], 2, b0);
    }
    const struct {
        ts_fn f;
        double s;
    } cases[] = {{clt_remainder_scalar, 0.75}, {clt_fmod_scalar, -0.75}};
    gc_in one[1] = {{2, {2, 3}, W6, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck(dev, call_ts, &cases[i], 1, one);

    /* the values PyTorch 1.13 gives: x = [5, -7.5], y = [2, 2], the
     * gradients of sum(remainder(x, y)) are [1, 1] and [-2, 4], of
     * sum(fmod(x, y)) [1, 1] and [-2, 3] */
    int64_t n = 2;
    static const double want[2][2] = {{-2, 4}, {-2, 3}};
    for (int k = 0; k < 2; k++) {
        clt_tensor *x = NULL, *y = NULL, *r = NULL, *l = NULL, *gx = NULL, *gy = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, (float[]){5, -7.5f}, &x));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, (float[]){2, 2}, &y));
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_set_requires_grad(y, 1));
        CHECK(fns[k](x, y, &r));
        cr_assert_str_eq(clt_grad_fn_name(r), k ? "FmodBackward1" : "RemainderBackward1");
        CHECK(clt_sum(r, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(x, &gx));
        CHECK(clt_grad(y, &gy));
        float *hx = read_f32(gx), *hy = read_f32(gy);
        cr_assert(hx[0] == 1 && hx[1] == 1, "%g %g", hx[0], hx[1]);
        cr_assert(hy[0] == want[k][0] && hy[1] == want[k][1], "%g %g", hy[0], hy[1]);
        free(hx);
        free(hy);
        clt_tensor *all[] = {x, y, r, l, gx, gy};
        for (size_t i = 0; i < 6; i++)
            clt_tensor_free(all[i]);
    }
}

/* floor_divide has no derivative in PyTorch 1.13: its result requires
 * grad, and backward through it fails ("derivative for aten::floor_divide
 * is not implemented"), leaving no gradient. */
Test(autograd, floor_divide_not_differentiable)
{
    clt_device *dev = get_device("cpu");
    for (int scalar = 0; scalar < 2; scalar++) {
        int64_t n = 3;
        clt_tensor *x = NULL, *y = NULL, *r = NULL, *l = NULL, *g = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, X6, &x));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, Q3, &y));
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(scalar ? clt_floor_divide_scalar(x, 0.5, &r) : clt_floor_divide(x, y, &r));
        cr_assert(clt_requires_grad(r));
        cr_assert_str_eq(clt_grad_fn_name(r), "NotImplemented");
        CHECK(clt_sum(r, &l));
        assert_error(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                     "derivative for clt_floor_divide is not implemented");
        cr_assert(strncmp(clt_last_error(), "clt_backward: ", 14) == 0, "%s", clt_last_error());
        CHECK(clt_grad(x, &g));
        cr_assert_null(g);
        clt_tensor *all[] = {x, y, r, l};
        for (size_t i = 0; i < 4; i++)
            clt_tensor_free(all[i]);
    }
}

Test(autograd, unary_ops)
{
    clt_device *dev = get_device("cpu");
    const un_fn any[] = {clt_neg, clt_abs, clt_relu, clt_exp, clt_sin, clt_cos,
                         clt_tanh, clt_sigmoid, clt_gelu};
    const un_fn positive[] = {clt_log, clt_sqrt, clt_rsqrt};
    gc_in xs[1] = {{2, {2, 3}, X6, 1}}, ps[1] = {{2, {2, 3}, P6, 1}};
    for (size_t i = 0; i < sizeof any / sizeof any[0]; i++)
        gradcheck(dev, call_un, &any[i], 1, xs);
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        gradcheck(dev, call_un, &positive[i], 1, ps);
}

static clt_status call_where(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *cond = NULL;
    clt_status st = clt_gt_scalar(in[0], 0.0, &cond);
    if (st == CLT_OK)
        st = clt_where(cond, in[0], in[1], out);
    return st;
}

static clt_status call_clamp(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const double *b = ctx;
    return clt_clamp(in[0], isnan(b[0]) ? NULL : &b[0], isnan(b[1]) ? NULL : &b[1], out);
}

Test(autograd, where_and_clamp)
{
    clt_device *dev = get_device("cpu");
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    gradcheck(dev, call_where, NULL, 2, ins);
    const double bounds[3][2] = {{-1.0, 1.0}, {NAN, 0.5}, {-0.5, NAN}};
    for (int i = 0; i < 3; i++)
        gradcheck(dev, call_clamp, bounds[i], 1, ins);
}

/* Analytic reference: ties of maximum split the gradient in halves;
 * relu passes NaN's gradient (PyTorch's threshold_backward on the output). */
Test(autograd, maximum_ties_and_relu_nan)
{
    clt_device *dev = get_device("cpu");
    const double a[] = {1.0, 2.0, 3.0}, b[] = {1.0, 3.0, 2.0};
    int64_t s[1] = {3};
    clt_tensor *ta, *tb, *m, *l;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s, a, &ta));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s, b, &tb));
    CHECK(clt_set_requires_grad(ta, 1));
    CHECK(clt_set_requires_grad(tb, 1));
    CHECK(clt_scope_begin());
    CHECK(clt_maximum(ta, tb, &m));
    CHECK(clt_sum(m, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    double ga[3], gb[3];
    clt_tensor *g;
    CHECK(clt_grad(ta, &g));
    CHECK(clt_tensor_read(g, ga, sizeof ga));
    clt_tensor_free(g);
    CHECK(clt_grad(tb, &g));
    CHECK(clt_tensor_read(g, gb, sizeof gb));
    clt_tensor_free(g);
    const double wa[] = {0.5, 0.0, 1.0}, wb[] = {0.5, 1.0, 0.0};
    for (int i = 0; i < 3; i++)
        cr_assert(ga[i] == wa[i] && gb[i] == wb[i], "element %d: %g %g", i, ga[i], gb[i]);
    clt_tensor_free(ta);
    clt_tensor_free(tb);

    const float x[] = {NAN, -1.0f, 0.0f, 2.0f};
    int64_t s4[1] = {4};
    clt_tensor *tx, *r, *sum;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, s4, x, &tx));
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_relu(tx, &r));
    CHECK(clt_sum(r, &sum));
    CHECK(clt_backward(sum, NULL, 0));
    CHECK(clt_grad(tx, &g));
    float gx[4];
    CHECK(clt_tensor_read(g, gx, sizeof gx));
    const float want[] = {1.0f, 0.0f, 0.0f, 1.0f};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(gx[i], want[i], "relu grad %d: %g", i, gx[i]);
    clt_tensor_free(g);
    clt_tensor_free(sum);
    clt_tensor_free(r);
    clt_tensor_free(tx);
}

/* abs's gradient at -0.0 and 0.0 is a +0.0 times the output's gradient, as
 * PyTorch's g * sgn(x) (sgn(-0.0) is +0.0), so its zero has g's sign; it
 * once had the opposite sign at -0.0.  NaN gets 0 (torch.sign(nan) is 0).
 * 20 elements: vector loop and tail. */
Test(autograd, abs_gradient_sign_of_zero)
{
    clt_device *dev = get_device("cpu");
    float x[20], gy[20];
    for (int i = 0; i < 20; i++) {
        x[i] = i % 4 == 0 ? -0.0f : i % 4 == 1 ? 0.0f : i % 4 == 2 ? -1.5f : NAN;
        gy[i] = i % 8 < 4 ? 1.0f : -1.0f;
    }
    int64_t n = 20;
    clt_tensor *tx, *tg, *y, *g;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, x, &tx));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, gy, &tg));
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_abs(tx, &y));
    CHECK(clt_backward(y, tg, 0));
    CHECK(clt_grad(tx, &g));
    float got[20];
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int i = 0; i < 20; i++) {
        float sgn = x[i] > 0 ? 1.0f : x[i] < 0 ? -1.0f : 0.0f; /* 0 for NaN, as torch.sign */
        float want = gy[i] * sgn;
        cr_assert(got[i] == want && !signbit(got[i]) == !signbit(want),
                  "abs grad at %g with %g: %g, want %g", x[i], gy[i], got[i], want);
    }
    clt_tensor_free(g);
    clt_tensor_free(y);
    clt_tensor_free(tg);
    clt_tensor_free(tx);
}

/* float32 tanh of large |x| (the vector loop and the tail): +-1 exactly, as
 * the correctly rounded result (host tanh in double, rounded) is, and so a
 * gradient 1 - y*y of exactly 0.  PoCL's tanh stopped at 0.99999994, which
 * left a gradient of 1.2e-7 on every saturated unit. */
Test(autograd, tanh_saturates_to_one)
{
    clt_device *dev = get_device("cpu");
    const float edge[8] = {INFINITY, -INFINITY, 9.02f, -9.5f, 20.0f, -100.0f, 1e30f, 0.5f};
    float x[37];
    for (int i = 0; i < 37; i++)
        x[i] = edge[i % 8];
    int64_t n = 37;
    clt_tensor *tx, *y, *s, *g;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, x, &tx));
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_tanh(tx, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(tx, &g));
    float *yv = read_f32(y), *gv = read_f32(g);
    for (int i = 0; i < 37; i++) {
        float want = (float)tanh((double)x[i]);
        double wg = 1.0 - (double)want * want;
        if (fabsf(x[i]) > 9.0109134f) {
            cr_assert(want == copysignf(1.0f, x[i]), "reference tanh(%g) = %.9g", x[i], want);
            cr_assert(yv[i] == want && gv[i] == 0.0f, "tanh(%g) = %.9g, grad %g; want %g, 0", x[i],
                      yv[i], gv[i], want);
        } else {
            cr_assert(fabsf(yv[i] - want) <= 1.2e-7f * fabsf(want), "tanh(%g) = %.9g, want %.9g",
                      x[i], yv[i], want);
            cr_assert(fabs(gv[i] - wg) <= 1e-6 * wg, "tanh'(%g) = %g, want %g", x[i], gv[i], wg);
        }
    }
    free(yv);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(tx);
}

/* ---- reductions ----------------------------------------------------------------- */

typedef struct red_case {
    clt_status (*all)(const clt_tensor *, clt_tensor **);
    clt_status (*dim)(const clt_tensor *, int, int, clt_tensor **);
    int d, keep;
} red_case;

/* max and min along a dim without their indices, as the other reductions. */
static clt_status max_dim_values(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return clt_max_dim(a, dim, keepdim, out, NULL);
}

static clt_status min_dim_values(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return clt_min_dim(a, dim, keepdim, out, NULL);
}

static clt_status call_red(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const red_case *c = ctx;
    return c->all ? c->all(in[0], out) : c->dim(in[0], c->d, c->keep, out);
}

Test(autograd, reductions)
{
    clt_device *dev = get_device("cpu");
    gc_in x[1] = {{3, {2, 3, 2}, X12, 1}};
    const red_case cases[] = {
        {clt_sum, NULL, 0, 0},       {NULL, clt_sum_dim, 1, 0},  {NULL, clt_sum_dim, -1, 1},
        {clt_mean, NULL, 0, 0},      {NULL, clt_mean_dim, 0, 1}, {NULL, clt_mean_dim, 2, 0},
        {clt_prod, NULL, 0, 0},      {NULL, clt_prod_dim, 1, 0}, {NULL, clt_prod_dim, 0, 1},
        {clt_max, NULL, 0, 0},       {NULL, max_dim_values, 1, 0},  {NULL, max_dim_values, -1, 1},
        {clt_min, NULL, 0, 0},       {NULL, min_dim_values, 2, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck(dev, call_red, &cases[i], 1, x);
}

typedef struct var_case {
    int std, dim, keep;
    double corr;
} var_case;

static clt_status call_var(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const var_case *c = ctx;
    if (c->dim == 99)
        return c->std ? clt_std(in[0], c->corr, out) : clt_var(in[0], c->corr, out);
    return c->std ? clt_std_dim(in[0], c->dim, c->corr, c->keep, out)
                  : clt_var_dim(in[0], c->dim, c->corr, c->keep, out);
}

Test(autograd, var_and_std)
{
    clt_device *dev = get_device("cpu");
    gc_in x[1] = {{2, {3, 4}, X12, 1}};
    const var_case cases[] = {{0, 99, 0, 1}, {0, 99, 0, 0}, {1, 99, 0, 1}, {0, 1, 0, 1},
                              {1, 0, 1, 1},  {1, -1, 0, 0}, {0, 0, 1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck(dev, call_var, &cases[i], 1, x);
}

/* prod with zeros: PyTorch's three cases, against the products of the
 * others computed here, also where a zero meets a NaN or an infinity among
 * the others (0 * inf: NaN, not 0). */
Test(autograd, prod_with_zeros)
{
    clt_device *dev = get_device("cpu");
    const double rows[6][4] = {{2, 3, 0, 5},        {0, 3, 0, 5},        {2, 3, 4, 5},
                               {NAN, 0, 2, 3}, {INFINITY, 0, 2, 3}, {0, 0, NAN, 1}};
    /* first row, rows, full product (else along dim 1) */
    const int cases[][3] = {{0, 6, 0}, {0, 6, 1}, {0, 1, 1}, {3, 1, 1}, {4, 1, 1}};
    clt_tensor *x, *p, *l, *g;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r0 = cases[i][0], nr = cases[i][1], all = cases[i][2];
        int64_t s[2] = {nr, 4};
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, s, rows[r0], &x));
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_scope_begin());
        if (all) {
            CHECK(clt_prod(x, &l));
        } else {
            CHECK(clt_prod_dim(x, 1, 0, &p));
            CHECK(clt_sum(p, &l));
        }
        CHECK(clt_backward(l, NULL, 0));
        clt_scope_end();
        double got[6][4];
        CHECK(clt_grad(x, &g));
        CHECK(clt_tensor_read(g, got, (size_t)nr * sizeof got[0]));
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < 4; c++) {
                double want = 1;
                for (int k = 0; k < 4; k++)
                    if (k != c)
                        want *= rows[r0 + r][k];
                if (all && nr > 1)
                    want = 0; /* two zeros or more in the tensor: every gradient is 0 */
                cr_assert(isnan(want) ? isnan(got[r][c]) : got[r][c] == want,
                          "prod grad [%d][%d] (case %zu): %g, want %g", r0 + r, c, i,
                          got[r][c], want);
            }
        clt_tensor_free(g);
        clt_tensor_free(x);
    }
}

/* max over all with ties shares the gradient evenly; max along a dim gives
 * it to the first of ties, as PyTorch. */
Test(autograd, max_ties)
{
    clt_device *dev = get_device("cpu");
    const double v[2][3] = {{3, 1, 3}, {2, 2, 0}};
    int64_t s[2] = {2, 3};
    clt_tensor *x, *m, *l, *g;
    double got[2][3];
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, s, v, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_scope_begin());
    CHECK(clt_max(x, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_max_dim(x, 1, 0, &m, NULL));
    CHECK(clt_sum(m, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    CHECK(clt_grad(x, &g));
    CHECK(clt_tensor_read(g, got, sizeof got));
    const double want[2][3] = {{0.5 + 1, 0, 0.5}, {1, 0, 0}};
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            cr_assert_eq(got[r][c], want[r][c], "[%d][%d]: %g", r, c, got[r][c]);
    clt_tensor_free(g);
    clt_tensor_free(x);
}

/* ---- matmul, softmax ---------------------------------------------------------------- */

typedef struct mm_case {
    int ta, tb; /* transpose the operand's last two dims first */
} mm_case;

static clt_status call_mm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const mm_case *c = ctx;
    clt_tensor *a = NULL, *b = NULL;
    clt_status st = c && c->ta ? clt_transpose(in[0], -2, -1, &a) : clt_clone(in[0], &a);
    if (st == CLT_OK)
        st = c && c->tb ? clt_transpose(in[1], -2, -1, &b) : clt_clone(in[1], &b);
    if (st == CLT_OK)
        st = clt_matmul(a, b, out);
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

/* min along a dim with NaN and ties: each column's gradient goes to the
 * index min_dim hands out (the first NaN, else the first smallest). */
Test(autograd, min_dim_gradient_follows_indices)
{
    clt_device *dev = get_device("cpu");
    const float v[3][4] = {{1, NAN, 5, 0}, {1, 2, NAN, -3}, {0, 2, 7, -3}};
    const float w[4] = {1, 2, 3, 4};
    clt_tensor *x, *m, *ix, *gw, *g;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, v, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_min_dim(x, 0, 1, &m, &ix));
    cr_assert_eq(clt_requires_grad(ix), 0);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){1, 4}, w, &gw));
    CHECK(clt_backward(m, gw, 0));
    CHECK(clt_grad(x, &g));
    float got[3][4];
    int64_t idx[4];
    CHECK(clt_tensor_read(g, got, sizeof got));
    CHECK(clt_tensor_read(ix, idx, sizeof idx));
    for (int c = 0; c < 4; c++) {
        int best = 0;
        for (int r = 1; r < 3 && !isnan(v[best][c]); r++)
            if (isnan(v[r][c]) || v[r][c] < v[best][c])
                best = r;
        cr_assert_eq(idx[c], best, "column %d: index %lld, want %d", c, (long long)idx[c], best);
        for (int r = 0; r < 3; r++)
            cr_assert_eq(got[r][c], r == best ? w[c] : 0.0f, "[%d][%d]: %g", r, c, got[r][c]);
    }
    clt_tensor_free(g);
    clt_tensor_free(gw);
    clt_tensor_free(ix);
    clt_tensor_free(m);
    clt_tensor_free(x);
}

Test(autograd, matmul_every_form)
{
    clt_device *dev = get_device("cpu");
    /* 1-D . 1-D, 1-D @ 2-D, 2-D @ 1-D, 2-D @ 2-D, batched with broadcast */
    gc_in dot[2] = {{1, {3}, Y3, 1}, {1, {3}, Q3, 1}};
    gc_in vm[2] = {{1, {3}, Y3, 1}, {2, {3, 4}, X12, 1}};
    gc_in mv[2] = {{2, {4, 3}, X12, 1}, {1, {3}, Y3, 1}};
    gc_in mm[2] = {{2, {2, 3}, X6, 1}, {2, {3, 4}, X12, 1}};
    gc_in bm[2] = {{3, {2, 2, 3}, X12, 1}, {2, {3, 2}, X6, 1}};
    gc_in bb[2] = {{4, {2, 1, 1, 3}, X6, 1}, {3, {2, 3, 2}, X12, 1}};
    gradcheck(dev, call_mm, NULL, 2, dot);
    gradcheck(dev, call_mm, NULL, 2, vm);
    gradcheck(dev, call_mm, NULL, 2, mv);
    gradcheck(dev, call_mm, NULL, 2, mm);
    gradcheck(dev, call_mm, NULL, 2, bm);
    gradcheck(dev, call_mm, NULL, 2, bb);
    /* transposed operands: x^T @ W^T */
    const mm_case tt = {1, 1};
    gc_in tr[2] = {{2, {3, 2}, X6, 1}, {2, {4, 3}, X12, 1}};
    gradcheck(dev, call_mm, &tt, 2, tr);
}

/* float32 products on the CPU GEMM kernels, against a host reference of
 * dA = G B^T and dB = A^T G with G = 1. */
Test(autograd, matmul_float32_reference)
{
    clt_device *dev = get_device("cpu");
    enum { M = 5, K = 7, N = 6 };
    float a[M * K], b[K * N];
    fill_random(a, M * K, 1);
    fill_random(b, K * N, 2);
    int64_t sa[2] = {M, K}, sb[2] = {K, N};
    clt_tensor *ta, *tb, *c, *l, *g;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sa, a, &ta));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sb, b, &tb));
    CHECK(clt_set_requires_grad(ta, 1));
    CHECK(clt_set_requires_grad(tb, 1));
    CHECK(clt_matmul(ta, tb, &c));
    CHECK(clt_sum(c, &l));
    CHECK(clt_backward(l, NULL, 0));
    float ga[M * K], gb[K * N];
    CHECK(clt_grad(ta, &g));
    CHECK(clt_tensor_read(g, ga, sizeof ga));
    clt_tensor_free(g);
    CHECK(clt_grad(tb, &g));
    CHECK(clt_tensor_read(g, gb, sizeof gb));
    clt_tensor_free(g);
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) {
            double want = 0;
            for (int j = 0; j < N; j++)
                want += b[k * N + j];
            cr_assert(close_enough(ga[i * K + k], want, 1e-5, 1e-4), "dA[%d][%d]", i, k);
        }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int i = 0; i < M; i++)
                want += a[i * K + k];
            cr_assert(close_enough(gb[k * N + j], want, 1e-5, 1e-4), "dB[%d][%d]", k, j);
        }
    clt_tensor_free(l);
    clt_tensor_free(c);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}

typedef struct sm_case {
    int log, dim;
} sm_case;

static clt_status call_sm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const sm_case *c = ctx;
    return c->log ? clt_log_softmax(in[0], c->dim, out) : clt_softmax(in[0], c->dim, out);
}

Test(autograd, softmax_and_log_softmax)
{
    clt_device *dev = get_device("cpu");
    gc_in x[1] = {{2, {3, 4}, X12, 1}};
    const sm_case cases[] = {{0, 1}, {0, 0}, {1, -1}, {1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        gradcheck(dev, call_sm, &cases[i], 1, x);
}

/* ---- views, joins, moves ------------------------------------------------------------ */

static clt_status call_view(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int which = *(const int *)ctx;
    const clt_tensor *x = in[0]; /* [2, 3, 2] */
    clt_tensor *v = NULL, *w = NULL;
    clt_status st;
    switch (which) {
    case 0: st = clt_reshape(x, 2, (int64_t[]){3, 4}, &v); break;
    case 1: st = clt_view(x, 2, (int64_t[]){6, 2}, &v); break;
    case 2: st = clt_flatten(x, 1, 2, &v); break;
    case 3: st = clt_transpose(x, 0, 2, &v); break;
    case 4: st = clt_permute(x, 3, (int[]){2, 0, 1}, &v); break;
    case 5: st = clt_narrow(x, 1, 1, 2, &v); break;
    case 6: st = clt_slice(x, 1, 0, INT64_MAX, 2, &v); break;
    case 7: st = clt_slice(x, 1, -2, 3, 1, &v); break;
    case 8: st = clt_unsqueeze(x, 1, &v); break;
    case 9:
        st = clt_narrow(x, 2, 0, 1, &w);
        if (st == CLT_OK)
            st = clt_squeeze(w, 2, &v);
        break;
    case 10:
        st = clt_unsqueeze(x, 0, &w);
        if (st == CLT_OK)
            st = clt_expand(w, 4, (int64_t[]){3, 2, 3, 2}, &v);
        break;
    case 11:
        st = clt_transpose(x, 0, 1, &w);
        if (st == CLT_OK)
            st = clt_contiguous(w, &v);
        break;
    case 12: st = clt_slice(x, 1, 1, INT64_MAX, 3, &v); break;
    default:
        st = clt_narrow(x, 0, 0, 1, &w);
        if (st == CLT_OK)
            st = clt_squeeze_all(w, &v);
        break;
    }
    clt_tensor_free(w);
    if (st == CLT_OK) /* a non-linear op after the view, so position matters */
        st = clt_mul(v, v, out);
    clt_tensor_free(v);
    return st;
}

Test(autograd, views)
{
    clt_device *dev = get_device("cpu");
    gc_in x[1] = {{3, {2, 3, 2}, X12, 1}};
    for (int which = 0; which <= 13; which++)
        gradcheck(dev, call_view, &which, 1, x);
}

static clt_status call_join(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int which = *(const int *)ctx;
    const clt_tensor *parts[3] = {in[0], in[1], in[0]};
    clt_tensor *j = NULL;
    clt_status st = which == 0   ? clt_cat(parts, 3, 0, &j)
                    : which == 1 ? clt_cat(parts, 2, -1, &j)
                                 : clt_stack(parts, 3, 1, &j);
    if (st == CLT_OK)
        st = clt_mul(j, j, out);
    clt_tensor_free(j);
    return st;
}

Test(autograd, cat_and_stack)
{
    clt_device *dev = get_device("cpu");
    gc_in x[2] = {{2, {2, 3}, X6, 1}, {2, {2, 3}, P6, 1}};
    for (int which = 0; which < 3; which++)
        gradcheck(dev, call_join, &which, 2, x);
}

static clt_status call_dtype(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *f = NULL, *e = NULL;
    /* through float32 and back: the gradient is converted at each step */
    clt_status st = clt_to_dtype(in[0], CLT_FLOAT32, &f);
    if (st == CLT_OK)
        st = clt_exp(f, &e);
    if (st == CLT_OK)
        st = clt_to_dtype(e, CLT_FLOAT64, out);
    clt_tensor_free(f);
    clt_tensor_free(e);
    return st;
}

Test(autograd, dtype_conversion)
{
    clt_device *dev = get_device("cpu");
    gc_in x[1] = {{1, {3}, Y3, 1}};
    /* float32 in the middle: a step float32 resolves, and its accuracy */
    gradcheck_tol(dev, call_dtype, NULL, 1, x, 1e-2, 1e-3, 1e-3);
}

/* The gradient of a move goes back to the source device. */
Test(autograd, move_between_devices)
{
    clt_device *d0 = get_device("cpu:0");
    clt_device *d1 = second_device(d0);
    int64_t s[1] = {3};
    clt_tensor *x, *y, *z, *l, *g;
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT64, 1, s, Y3, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_scope_begin());
    CHECK(clt_to(x, d1, &y));
    CHECK(clt_mul(y, y, &z));
    CHECK(clt_sum(z, &l));
    CHECK(clt_backward(l, NULL, 0));
    clt_scope_end();
    CHECK(clt_grad(x, &g));
    cr_assert_eq(clt_tensor_device(g), d0);
    double got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int i = 0; i < 3; i++)
        cr_assert_eq(got[i], 2 * Y3[i]);
    clt_tensor_free(g);
    clt_tensor_free(x);
}

/* ---- the engine's rules ---------------------------------------------------------------- */

static clt_tensor *leaf(clt_device *dev, const double *v, int64_t n)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, v, &t));
    CHECK(clt_set_requires_grad(t, 1));
    return t;
}

static void read3(const clt_tensor *t, double *out)
{
    clt_tensor *g = NULL;
    CHECK(clt_grad(t, &g));
    cr_assert_not_null(g);
    CHECK(clt_tensor_read(g, out, 3 * sizeof *out));
    clt_tensor_free(g);
}

Test(autograd, accumulates_and_retains)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = leaf(dev, Y3, 3), *y, *l;
    CHECK(clt_scope_begin());
    CHECK(clt_mul(x, x, &y));
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 1)); /* retain_graph */
    CHECK(clt_backward(l, NULL, 0));
    double g[3];
    read3(x, g);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(g[i], 4 * Y3[i], "accumulated twice: %g", g[i]);
    /* a third pass: the saved tensors are gone */
    cr_assert_eq(clt_backward(l, NULL, 0), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "second time"), "%s", clt_last_error());
    clt_scope_end();
    CHECK(clt_zero_grad(x, 0));
    read3(x, g);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(g[i], 0.0);
    CHECK(clt_zero_grad(x, 1));
    clt_tensor *none = (clt_tensor *)&none;
    CHECK(clt_grad(x, &none));
    cr_assert_null(none);
    clt_tensor_free(x);
}

Test(autograd, explicit_output_gradient)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = leaf(dev, Y3, 3), *y, *go, *bad;
    const double w[] = {1, 10, 100};
    int64_t n = 3, n2 = 2;
    CHECK(clt_scope_begin());
    CHECK(clt_mul_scalar(x, 3.0, &y));
    cr_assert_eq(clt_backward(y, NULL, 0), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "scalar outputs"), "%s", clt_last_error());
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n2, w, &bad));
    cr_assert_eq(clt_backward(y, bad, 0), CLT_ERR_SHAPE_MISMATCH);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, w, &go));
    CHECK(clt_backward(y, go, 0));
    clt_scope_end();
    double g[3];
    read3(x, g);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(g[i], 3 * w[i]);
    clt_tensor_free(x);
}

Test(autograd, no_grad_detach_and_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = leaf(dev, Y3, 3), *y, *d, *i;
    cr_assert(clt_is_leaf(x) && clt_requires_grad(x) && clt_grad_fn_name(x) == NULL);
    CHECK(clt_scope_begin());
    int was = clt_set_grad_enabled(0);
    cr_assert_eq(was, 1);
    cr_assert_eq(clt_is_grad_enabled(), 0);
    CHECK(clt_exp(x, &y));
    cr_assert(!clt_requires_grad(y) && clt_is_leaf(y));
    cr_assert_eq(clt_backward(y, NULL, 0), CLT_ERR_INVALID_ARGUMENT);
    /* a loss computed under no_grad: the message names recording, and that
     * it is off now */
    cr_assert(strstr(clt_last_error(), "clt_set_grad_enabled(0)") &&
                  strstr(clt_last_error(), "recording is off on this thread now"),
              "%s", clt_last_error());
    clt_set_grad_enabled(was);
    cr_assert_eq(clt_backward(y, NULL, 0), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "clt_set_grad_enabled(0)") &&
                  !strstr(clt_last_error(), "off on this thread now"),
              "%s", clt_last_error());
    CHECK(clt_exp(x, &y));
    cr_assert(clt_requires_grad(y) && !clt_is_leaf(y));
    cr_assert_str_eq(clt_grad_fn_name(y), "ExpBackward0");
    cr_assert_eq(clt_set_requires_grad(y, 0), CLT_ERR_INVALID_ARGUMENT);
    CHECK(clt_detach(y, &d));
    cr_assert(!clt_requires_grad(d) && clt_is_leaf(d));
    /* integer tensors never require grad; comparisons record nothing */
    CHECK(clt_arange(dev, CLT_INT64, 0, 3, 1, &i));
    cr_assert_eq(clt_set_requires_grad(i, 1), CLT_ERR_DTYPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "floating point"), "%s", clt_last_error());
    clt_tensor *c;
    CHECK(clt_gt_scalar(x, 0.0, &c));
    cr_assert(!clt_requires_grad(c));
    clt_tensor *am;
    CHECK(clt_argmax(x, &am));
    cr_assert(!clt_requires_grad(am));
    clt_scope_end();
    clt_tensor_free(x);
}

/* The graph holds only what backward needs, and goes with its outputs and
 * gradients: the allocator's live bytes come back to where they started. */
Test(autograd, memory_released)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, mid, after;
    CHECK(clt_memory_stats_get(dev, &before));
    clt_tensor *x = leaf(dev, X12, 12), *w = leaf(dev, X12, 12);
    for (int step = 0; step < 3; step++) {
        CHECK(clt_scope_begin());
        clt_tensor *a, *b, *c, *l, *r;
        CHECK(clt_reshape(x, 2, (int64_t[]){3, 4}, &r));
        CHECK(clt_reshape(w, 2, (int64_t[]){4, 3}, &a));
        CHECK(clt_matmul(r, a, &b));
        CHECK(clt_tanh(b, &c));
        CHECK(clt_mean(c, &l));
        CHECK(clt_backward(l, NULL, 0));
        clt_scope_end();
    }
    CHECK(clt_memory_stats_get(dev, &mid));
    /* the leaves and their two gradients */
    cr_assert_eq(mid.requested - before.requested, 4 * 12 * sizeof(double),
                 "%llu bytes live", (unsigned long long)(mid.requested - before.requested));
    clt_tensor_free(x);
    clt_tensor_free(w);
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested);
}

Test(autograd, scope_keeps_and_frees)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_memory_stats_get(dev, &before));
    clt_tensor *kept, *a, *b, *inner;
    CHECK(clt_scope_begin());
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){100}, &a));
    CHECK(clt_mul_scalar(a, 2, &b));
    CHECK(clt_scope_begin());
    CHECK(clt_add(a, b, &inner));
    CHECK(clt_scope_keep(inner)); /* into the outer scope */
    clt_scope_end();
    CHECK(clt_add(inner, b, &kept));
    clt_tensor_free(b); /* releasing by hand inside a scope is fine */
    CHECK(clt_scope_keep(kept));
    clt_scope_end();
    float v[100];
    CHECK(clt_tensor_read(kept, v, sizeof v));
    for (int i = 0; i < 100; i++)
        cr_assert_eq(v[i], 5.0f);
    clt_tensor_free(kept);
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested);
    clt_scope_end(); /* none open: nothing happens */
}

/* ---- determinism ---------------------------------------------------------------------- */

/* A two-layer perceptron's gradients, as bytes. */
static void mlp_grads(clt_device *dev, float *gw1, float *gw2)
{
    enum { B = 16, I = 24, H = 40, O = 10 };
    float x[B * I], w1[H * I], w2[O * H];
    fill_random(x, B * I, 11);
    fill_random(w1, H * I, 12);
    fill_random(w2, O * H, 13);
    for (int i = 0; i < H * I; i++)
        w1[i] *= 0.02f;
    for (int i = 0; i < O * H; i++)
        w2[i] *= 0.02f;
    clt_tensor *tx, *t1, *t2, *g;
    CHECK(clt_scope_begin());
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){B, I}, x, &tx));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){H, I}, w1, &t1));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){O, H}, w2, &t2));
    CHECK(clt_set_requires_grad(t1, 1));
    CHECK(clt_set_requires_grad(t2, 1));
    clt_tensor *w1t, *h, *a, *w2t, *o, *ls, *l;
    CHECK(clt_transpose(t1, 0, 1, &w1t));
    CHECK(clt_matmul(tx, w1t, &h));
    CHECK(clt_relu(h, &a));
    CHECK(clt_transpose(t2, 0, 1, &w2t));
    CHECK(clt_matmul(a, w2t, &o));
    CHECK(clt_log_softmax(o, 1, &ls));
    CHECK(clt_mean(ls, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(t1, &g));
    CHECK(clt_tensor_read(g, gw1, H * I * sizeof(float)));
    CHECK(clt_grad(t2, &g));
    CHECK(clt_tensor_read(g, gw2, O * H * sizeof(float)));
    clt_scope_end();
}

Test(autograd, bit_identical_across_devices_and_runs)
{
    clt_device *d0 = get_device("cpu:0");
    static float a1[40 * 24], a2[10 * 40], b1[40 * 24], b2[10 * 40], c1[40 * 24], c2[10 * 40];
    mlp_grads(d0, a1, a2);
    mlp_grads(d0, c1, c2);
    cr_assert(memcmp(a1, c1, sizeof a1) == 0 && memcmp(a2, c2, sizeof a2) == 0,
              "two runs on one device differ");
    double nz = 0;
    for (size_t i = 0; i < sizeof a1 / sizeof a1[0]; i++)
        nz += fabs(a1[i]);
    cr_assert(nz > 0, "all gradients are zero");
    clt_device *d1 = second_device(d0);
    mlp_grads(d1, b1, b2);
    cr_assert(memcmp(a1, b1, sizeof a1) == 0, "layer 1 gradients differ between devices");
    cr_assert(memcmp(a2, b2, sizeof a2) == 0, "layer 2 gradients differ between devices");
}

/* ---- zero-size and special values --------------------------------------------------- */

Test(autograd, zero_size)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x, *s, *g;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){0, 3}, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_scope_begin());
    CHECK(clt_sum(x, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_scope_end();
    CHECK(clt_grad(x, &g));
    cr_assert_not_null(g);
    cr_assert_eq(clt_tensor_numel(g), 0);
    cr_assert_eq(clt_tensor_size(g, 1), 3);
    clt_tensor_free(g);
    clt_tensor_free(x);
}

/* Leaves made inside a scope and held by a graph made there go when the
 * scope ends: the graph's reference to a leaf is its own, not the scope's. */
Test(autograd, scope_releases_leaves_held_by_the_graph)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_memory_stats_get(dev, &before));
    for (int round = 0; round < 2; round++) {
        CHECK(clt_scope_begin());
        clt_tensor *w, *x, *y, *l;
        CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){1000}, &w));
        CHECK(clt_set_requires_grad(w, 1));
        CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){1000}, &x));
        CHECK(clt_mul(w, x, &y));
        CHECK(clt_sum(y, &l));
        if (round)
            CHECK(clt_backward(l, NULL, 0));
        clt_scope_end();
    }
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%lld bytes left",
                 (long long)(after.requested - before.requested));
}

/* ---- running out of device memory half-way ----------------------------------------------- */

long clt__pool_refuse_after(long pass); /* src/memory/pool.c */

/* True when the leaves' gradients are want[k] (NULL: none). */
static bool grads_are(clt_tensor *const *t, const double (*want)[3], int n)
{
    for (int k = 0; k < n; k++) {
        clt_tensor *g = NULL;
        CHECK(clt_grad(t[k], &g));
        double v[3];
        bool same = (g == NULL) == (want == NULL);
        if (same && g) {
            CHECK(clt_tensor_read(g, v, sizeof v));
            same = memcmp(v, want[k], sizeof v) == 0;
        }
        clt_tensor_free(g);
        if (!same)
            return false;
    }
    return true;
}

/* loss = sum((a * b) * c): c's gradient is ready before a's and b's. */
static clt_tensor *product_loss(clt_tensor *const *abc)
{
    clt_tensor *u, *v, *l;
    CHECK(clt_mul(abc[0], abc[1], &u));
    CHECK(clt_mul(u, abc[2], &v));
    CHECK(clt_sum(v, &l));
    clt_tensor_free(u);
    clt_tensor_free(v);
    return l;
}

/* Whichever buffer request of a backward pass is refused, the pass fails
 * with a message having added nothing to any leaf's gradient, whether none
 * was there or one to add to; run again (through the same graph or a new
 * one), it gives the exact gradients, not a part of them twice. */
Test(autograd, failed_backward_adds_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *abc[3] = {leaf(dev, X6, 3), leaf(dev, Y3, 3), leaf(dev, Q3, 3)};
    double once[3][3], twice[3][3];
    for (int i = 0; i < 3; i++) {
        once[0][i] = Y3[i] * Q3[i];
        once[1][i] = X6[i] * Q3[i];
        once[2][i] = X6[i] * Y3[i];
        for (int k = 0; k < 3; k++)
            twice[k][i] = 2 * once[k][i];
    }
    for (int had = 0; had < 2; had++) {
        long pass = 0;
        for (;; pass++) {
            for (int k = 0; k < 3; k++)
                CHECK(clt_zero_grad(abc[k], 1));
            clt_tensor *l = NULL;
            if (had) { /* a gradient there already, added to in place */
                l = product_loss(abc);
                CHECK(clt_backward(l, NULL, 0));
                clt_tensor_free(l);
            }
            l = product_loss(abc);
            clt__pool_refuse_after(pass);
            clt_status st = clt_backward(l, NULL, 0);
            bool named = strstr(clt_last_error(), "bytes in use") != NULL;
            if (clt__pool_refuse_after(-1) >= 0) { /* every request of the pass went through */
                CHECK(st);
                clt_tensor_free(l);
                cr_assert(grads_are(abc, had ? twice : once, 3));
                break;
            }
            cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "request %ld: %s", pass,
                         clt_status_name(st));
            cr_assert(named, "request %ld: the message names no sizes", pass);
            cr_assert(grads_are(abc, had ? once : NULL, 3),
                      "request %ld refused: the failed backward changed a gradient", pass);
            /* through the same graph again: the exact gradients, or the
             * error of a second backward when the failed pass had freed
             * saved tensors, and then nothing changed */
            st = clt_backward(l, NULL, 0);
            clt_tensor_free(l);
            if (st != CLT_OK) {
                cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "request %ld: %s", pass,
                             clt_last_error());
                cr_assert(strstr(clt_last_error(), "second time"), "%s", clt_last_error());
                cr_assert(grads_are(abc, had ? once : NULL, 3), "request %ld", pass);
                l = product_loss(abc);
                CHECK(clt_backward(l, NULL, 0));
                clt_tensor_free(l);
            }
            cr_assert(grads_are(abc, had ? twice : once, 3), "request %ld: retried", pass);
        }
        cr_assert_geq(pass, 3, "only %ld requests in the pass", pass);
    }
    for (int k = 0; k < 3; k++)
        clt_tensor_free(abc[k]);
}
