/* grad_activation.c: the activations of ops.h beyond relu ... leaky_relu
 * (clt_hardtanh ... clt_prelu, clt_softmin), each recorded with its
 * backward formula: one kernel of cl/elementwise.cl over the saved input. */
#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* The node each activation records, as PyTorch 1.13 names it: relu6 is
 * hardtanh there, selu elu; softsign and tanhshrink are composed in
 * Python (x / (x.abs() + 1), x - x.tanh()), so their last node is a
 * division and a subtraction. */
static const char *const act_nodes[] = {
    [CLT__ACT_ELU] = "EluBackward0",
    [CLT__ACT_HARDTANH] = "HardtanhBackward0",
    [CLT__ACT_RELU6] = "HardtanhBackward0",
    [CLT__ACT_HARDSIGMOID] = "HardsigmoidBackward0",
    [CLT__ACT_HARDSWISH] = "HardswishBackward0",
    [CLT__ACT_MISH] = "MishBackward0",
    [CLT__ACT_SELU] = "EluBackward0",
    [CLT__ACT_CELU] = "CeluBackward0",
    [CLT__ACT_SOFTSIGN] = "DivBackward0",
    [CLT__ACT_TANHSHRINK] = "SubBackward0",
    [CLT__ACT_HARDSHRINK] = "HardshrinkBackward0",
    [CLT__ACT_SOFTSHRINK] = "SoftshrinkBackward0",
    [CLT__ACT_LOGSIGMOID] = "LogSigmoidBackward0",
    [CLT__ACT_THRESHOLD] = "ThresholdBackward0",
};

/* The backward kernels, "<forward kernel>_bw" (cl/elementwise.cl's
 * ACT3_BW_OPS). */
static const char *const act_bw[] = {
    [CLT__ACT_ELU] = "elu_bw",
    [CLT__ACT_HARDTANH] = "hardtanh_bw",
    [CLT__ACT_RELU6] = "hardtanh_bw",
    [CLT__ACT_HARDSIGMOID] = "hardsigmoid_bw",
    [CLT__ACT_HARDSWISH] = "hardswish_bw",
    [CLT__ACT_MISH] = "mish_bw",
    [CLT__ACT_SELU] = "elu_bw",
    [CLT__ACT_CELU] = "elu_bw",
    [CLT__ACT_SOFTSIGN] = "softsign_bw",
    [CLT__ACT_TANHSHRINK] = "tanhshrink_bw",
    [CLT__ACT_HARDSHRINK] = "hardshrink_bw",
    [CLT__ACT_SOFTSHRINK] = "softshrink_bw",
    [CLT__ACT_LOGSIGMOID] = "logsigmoid_bw",
    [CLT__ACT_THRESHOLD] = "threshold_bw",
};

/* The activations whose formula also runs as recorded ops (clt__twice), in
 * a pass that creates a graph. */
static bool act_twice(clt__act act)
{
    return act == CLT__ACT_ELU || act == CLT__ACT_SELU || act == CLT__ACT_CELU ||
           act == CLT__ACT_HARDTANH || act == CLT__ACT_RELU6 || act == CLT__ACT_MISH ||
           act == CLT__ACT_THRESHOLD || act == CLT__ACT_HARDSHRINK ||
           act == CLT__ACT_SOFTSHRINK || act == CLT__ACT_HARDSIGMOID ||
           act == CLT__ACT_SOFTSIGN || act == CLT__ACT_TANHSHRINK ||
           act == CLT__ACT_LOGSIGMOID || act == CLT__ACT_HARDSWISH;
}

/* elu's kernel as recorded ops: g * where(x > 0 or NaN, scale,
 * input_scale * scale * alpha * exp(input_scale * x)), s = {alpha, scale,
 * input_scale}; hardtanh's g, zeroed where x <= min or x >= max (s[0],
 * s[1]); mish's g * (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x));
 * threshold's g, zeroed where x <= s[0]; the shrinks' g, zeroed inside
 * [-s[0], s[0]]; hardsigmoid's g / 6, zeroed outside (-3, 3) (NaN too).
 * The masked ones have zero second derivatives in x: their x edges come
 * from clt__grad_node, as PyTorch's ...BackwardBackward0 nodes (torch 1.13
 * has none for hardsigmoid and refuses its double backward; this gives
 * the true one, 0 in x and mask / 6 in g). */
static clt_status act_formula(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *x = S(0);
    clt_tensor *t = NULL, *u = NULL, *v = NULL, *w = NULL;
    clt_status st = CLT_OK;
    switch (n->i[0]) {
    case CLT__ACT_HARDTANH:
    case CLT__ACT_RELU6:
        CLT__TRY(clt__le_scalar_in(fn, x, n->s[0], &t));
        CLT__TRY(clt__ge_scalar_in(fn, x, n->s[1], &u));
        CLT__TRY(clt__logical_or_in(fn, t, u, &v));
        CLT__TRY(clt__zero_where(v, g, &gin[0]));
        CLT__TRY(clt__grad_node("HardtanhBackwardBackward0", 1, &x, &gin[0]));
        break;
    case CLT__ACT_THRESHOLD:
        CLT__TRY(clt__le_scalar_in(fn, x, n->s[0], &t));
        CLT__TRY(clt__zero_where(t, g, &gin[0]));
        CLT__TRY(clt__grad_node("ThresholdBackwardBackward0", 1, &x, &gin[0]));
        break;
    case CLT__ACT_HARDSHRINK:
    case CLT__ACT_SOFTSHRINK:
        CLT__TRY(clt__ge_scalar_in(fn, x, -n->s[0], &t));
        CLT__TRY(clt__le_scalar_in(fn, x, n->s[0], &u));
        CLT__TRY(clt__logical_and_in(fn, t, u, &v));
        CLT__TRY(clt__zero_where(v, g, &gin[0]));
        CLT__TRY(clt__grad_node(n->i[0] == CLT__ACT_HARDSHRINK ? "HardshrinkBackwardBackward0"
                                                                : "SoftshrinkBackwardBackward0",
                                1, &x, &gin[0]));
        break;
    case CLT__ACT_HARDSIGMOID:
        CLT__TRY(clt__gt_scalar_in(fn, x, -3.0, &t));
        CLT__TRY(clt__lt_scalar_in(fn, x, 3.0, &u));
        CLT__TRY(clt__logical_and_in(fn, t, u, &v));
        CLT__TRY(clt__logical_not_in(fn, v, &w));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__zero_where(w, g, &t));
        CLT__TRY(clt__mul_scalar_rec(fn, t, 1.0 / 6.0, &gin[0]));
        CLT__TRY(clt__grad_node("HardsigmoidBackwardBackward0", 1, &x, &gin[0]));
        break;
    case CLT__ACT_SOFTSIGN: /* g / (1 + |x|)^2 */
        CLT__TRY(clt__abs_rec(fn, x, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__mul_rec(fn, u, u, &v));
        CLT__TRY(clt__div_rec(fn, g, v, &gin[0]));
        break;
    case CLT__ACT_TANHSHRINK: /* g tanh(x)^2 */
        CLT__TRY(clt__tanh_rec(fn, x, &t));
        CLT__TRY(clt__mul_rec(fn, t, t, &u));
        CLT__TRY(clt__mul_rec(fn, g, u, &gin[0]));
        break;
    case CLT__ACT_LOGSIGMOID: /* g sigmoid(-x) */
        CLT__TRY(clt__neg_rec(fn, x, &t));
        CLT__TRY(clt__sigmoid_rec(fn, t, &u));
        CLT__TRY(clt__mul_rec(fn, g, u, &gin[0]));
        break;
    case CLT__ACT_HARDSWISH:
        /* 0 below -3, g (x / 3 + 0.5) up to 3, g above and at NaN; x
         * enters the middle's formula strictly inside (-3, 3) (a constant
         * at +-3: torch's second derivative is 0 there), and outside
         * [-3, 3] and at NaN the middle's factor is that of 0: finite, so
         * that the zero the branches give it there stays 0 in the
         * derivative with respect to g (torch's, hardswish_backward
         * itself), not 0 * inf = NaN at x = +-inf */
        CLT__TRY(clt__ge_scalar_in(fn, x, -3.0, &t));
        CLT__TRY(clt__le_scalar_in(fn, x, 3.0, &u));
        CLT__TRY(clt__logical_and_in(fn, t, u, &v));
        CLT__TRY(clt__logical_not_in(fn, v, &w));
        clt_tensor_free(t);
        clt_tensor_free(u);
        clt_tensor_free(v);
        t = u = v = NULL;
        CLT__TRY(clt__alias(x, &t)); /* no history */
        CLT__TRY(clt__zero_where(w, t, &u));
        clt_tensor_free(t);
        clt_tensor_free(w);
        t = w = NULL;
        CLT__TRY(clt__gt_scalar_in(fn, x, -3.0, &t));
        CLT__TRY(clt__lt_scalar_in(fn, x, 3.0, &w));
        CLT__TRY(clt__logical_and_in(fn, t, w, &v));
        clt_tensor_free(t);
        clt_tensor_free(w);
        t = w = NULL;
        CLT__TRY(clt_where(v, x, u, &t));
        clt_tensor_free(u);
        u = t;
        t = NULL;
        clt_tensor_free(t);
        clt_tensor_free(v);
        t = v = NULL;
        CLT__TRY(clt__div_scalar_rec(fn, u, 3.0, &t));
        clt_tensor_free(u);
        u = NULL;
        CLT__TRY(clt__add_scalar_rec(fn, t, 0.5, &u));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__mul_rec(fn, g, u, &v)); /* the middle */
        clt_tensor_free(u);
        u = NULL;
        CLT__TRY(clt__le_scalar_in(fn, x, 3.0, &t));
        CLT__TRY(clt__logical_not_in(fn, t, &w));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt_where(w, g, v, &u));
        clt_tensor_free(w);
        w = NULL;
        CLT__TRY(clt__lt_scalar_in(fn, x, -3.0, &w));
        CLT__TRY(clt__zero_where(w, u, &gin[0]));
        break;
    case CLT__ACT_MISH:
        CLT__TRY(clt__softplus_rec(fn, x, 1.0, 20.0, &t));
        CLT__TRY(clt__tanh_rec(fn, t, &u));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__mul_rec(fn, u, u, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0, &v));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__sigmoid_rec(fn, x, &t));
        CLT__TRY(clt__mul_rec(fn, t, v, &w));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__mul_rec(fn, x, w, &t));
        clt_tensor_free(v);
        v = NULL;
        CLT__TRY(clt__add_rec(fn, u, t, &v));
        CLT__TRY(clt__mul_rec(fn, g, v, &gin[0]));
        break;
    default: /* elu, selu, celu */
        /* the exp branch of x where x < 0, of 0 elsewhere (NaN too): at
         * x == 0 its constant value (torch's elu_double_backward masks with
         * x < 0, the first derivative with x <= 0), and no exp(inf) for
         * the masked places' zero gradients to meet */
        CLT__TRY(clt__lt_scalar_in(fn, x, 0.0, &t));
        CLT__TRY(clt__logical_not_in(fn, t, &w));
        CLT__TRY(clt__zero_where(w, x, &v));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__mul_scalar_rec(fn, v, n->s[2], &t));
        CLT__TRY(clt__exp_rec(fn, t, &u));
        clt_tensor_free(v);
        v = NULL;
        CLT__TRY(clt__mul_scalar_rec(fn, u, n->s[2] * n->s[1] * n->s[0], &v));
        clt_tensor_free(w);
        w = NULL;
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__le_scalar_in(fn, x, 0.0, &t));
        CLT__TRY(clt__logical_not_in(fn, t, &w)); /* x > 0 or NaN: scale, as the kernel */
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__full(g->dev, g->dtype, 0, NULL, n->s[1], &t));
        clt_tensor_free(u);
        u = NULL;
        CLT__TRY(clt_where(w, t, v, &u));
        CLT__TRY(clt__mul_rec(fn, g, u, &gin[0]));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(v);
    clt_tensor_free(w);
    return st;
}

/* n->i[0] the clt__act, n->s the backward kernel's scalars; saved: a. */
static clt_status bw_act(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->twice && clt__creating_graph())
        return act_formula(n, g, gin);
    return clt__grad_kernel_s(act_bw[n->i[0]], g, S(0), 3, n->s, &gin[0]);
}

clt_status clt__act_rec(const char *fn, clt__act act, const clt_tensor *a, const double *sc,
                        clt_tensor **out)
{
    clt_status st = clt__act_in(fn, act, a, sc, out);
    clt__node *n = NULL;
    st = clt__record(st, out, act_nodes[act], bw_act, 1, &a, 1, &a, &n);
    if (n) {
        double fwd[3];
        clt__act_scalars(act, sc, fwd, n->s);
        n->i[0] = act;
        if (act_twice(act))
            clt__twice(n);
    }
    return st;
}

clt_status clt_hardtanh(const clt_tensor *a, double min_val, double max_val, clt_tensor **out)
{
    const double sc[2] = {min_val, max_val};
    return clt__act_rec("clt_hardtanh", CLT__ACT_HARDTANH, a, sc, out);
}

clt_status clt_threshold(const clt_tensor *a, double threshold, double value, clt_tensor **out)
{
    const double sc[2] = {threshold, value};
    return clt__act_rec("clt_threshold", CLT__ACT_THRESHOLD, a, sc, out);
}

clt_status clt_celu(const clt_tensor *a, double alpha, clt_tensor **out)
{
    return clt__act_rec("clt_celu", CLT__ACT_CELU, a, &alpha, out);
}

clt_status clt_hardshrink(const clt_tensor *a, double lambd, clt_tensor **out)
{
    return clt__act_rec("clt_hardshrink", CLT__ACT_HARDSHRINK, a, &lambd, out);
}

clt_status clt_softshrink(const clt_tensor *a, double lambd, clt_tensor **out)
{
    return clt__act_rec("clt_softshrink", CLT__ACT_SOFTSHRINK, a, &lambd, out);
}

#define DEF_ACT0(fname, act)                                                        \
    clt_status clt_##fname(const clt_tensor *a, clt_tensor **out)                   \
    {                                                                               \
        return clt__act_rec("clt_" #fname, act, a, NULL, out);                      \
    }

DEF_ACT0(relu6, CLT__ACT_RELU6)
DEF_ACT0(hardsigmoid, CLT__ACT_HARDSIGMOID)
DEF_ACT0(hardswish, CLT__ACT_HARDSWISH)
DEF_ACT0(mish, CLT__ACT_MISH)
DEF_ACT0(selu, CLT__ACT_SELU)
DEF_ACT0(softsign, CLT__ACT_SOFTSIGN)
DEF_ACT0(tanhshrink, CLT__ACT_TANHSHRINK)
DEF_ACT0(logsigmoid, CLT__ACT_LOGSIGMOID)

/* ---- glu -------------------------------------------------------------------------- */

/* The two halves of t along dim (views). */
static clt_status halves(const clt_tensor *t, int dim, clt_tensor **h0, clt_tensor **h1,
                         const char *fn)
{
    int64_t h = t->shape[dim] / 2;
    clt_status st = clt__narrow(t, dim, 0, h, h0, fn);
    if (st == CLT_OK)
        st = clt__narrow(t, dim, h, h, h1, fn);
    return st;
}

/* glu's gradient in recorded ops, for a pass that creates a graph: the
 * halves a and b of x along dim, g * sigmoid(b) and
 * g * a * sigmoid(b) * (1 - sigmoid(b)) side by side, whose derivatives are
 * torch's glu_double_backward. */
static clt_status glu_twice(const clt_tensor *x, int dim, const clt_tensor *g, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    int64_t h = x->shape[dim] / 2;
    clt_status st = CLT_OK;
    clt_tensor *a = NULL, *b = NULL, *sg = NULL, *ga = NULL, *t = NULL, *u = NULL, *v = NULL,
               *gb = NULL;
    CLT__TRY(clt__narrow_rec(fn, x, dim, 0, h, &a));
    CLT__TRY(clt__narrow_rec(fn, x, dim, h, h, &b));
    CLT__TRY(clt__sigmoid_rec(fn, b, &sg));
    CLT__TRY(clt__mul_rec(fn, g, sg, &ga));
    CLT__TRY(clt__rsub_scalar_rec(fn, sg, 1.0, &t));
    CLT__TRY(clt__mul_rec(fn, sg, t, &u));
    CLT__TRY(clt__mul_rec(fn, u, a, &v));
    CLT__TRY(clt__mul_rec(fn, v, g, &gb));
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){ga, gb}, 2, dim, out));
done:;
    clt_tensor *all[] = {a, b, sg, ga, t, u, v, gb};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

/* n->i[0] the dim; saved: a.  PyTorch's glu_backward: the first half's
 * gradient g * sigmoid(b) (glu's own kernel on g and b), the second's
 * (1 - sigmoid(b)) * sigmoid(b) * a * g, side by side along dim; recorded
 * in a pass that creates a graph (glu_twice, clt__twice). */
static clt_status bw_glu(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    int dim = (int)n->i[0];
    if (clt__creating_graph())
        return glu_twice(S(0), dim, g, &gin[0]);
    clt_tensor *a = NULL, *b = NULL, *ga = NULL, *gb = NULL;
    clt_status st;
    CLT__TRY(halves(S(0), dim, &a, &b, fn));
    CLT__TRY(clt__glu_halves_in(fn, g, b, &ga));
    CLT__TRY(clt__glu_bw_in(fn, g, a, b, &gb));
    CLT__TRY(clt__cat((const clt_tensor *const[]){ga, gb}, 2, dim, &gin[0], fn));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(ga);
    clt_tensor_free(gb);
    return st;
}

clt_status clt__glu_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (a->ndim == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: glu does not support scalars because halving size must be even",
                          fn);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, a->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    if (a->shape[d] % 2 != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Halving dimension must be even, but dimension %d is size %lld", fn,
                          d, (long long)a->shape[d]);
    clt_tensor *h0 = NULL, *h1 = NULL;
    clt__node *n = NULL;
    CLT__TRY(halves(a, d, &h0, &h1, fn));
    CLT__TRY(clt__glu_halves_in(fn, h0, h1, out));
    st = clt__record(st, out, "GluBackward0", bw_glu, 1, &a, 1, &a, &n);
    if (n)
        n->i[0] = d;
    clt__twice(n); /* glu_twice */
done:
    clt_tensor_free(h0);
    clt_tensor_free(h1);
    return st;
}

clt_status clt_glu(const clt_tensor *a, int dim, clt_tensor **out)
{
    return clt__glu_rec("clt_glu", a, dim, out);
}

/* ---- prelu ------------------------------------------------------------------------ */

/* prelu's gradients in recorded ops, for a pass that creates a graph:
 * where(x > 0, g, g * w) and where(x > 0, 0, g * x), whose derivatives are
 * torch's prelu_double_backward; both carry its PreluBackwardBackward0
 * node (clt__grad_node), so that they require grad whenever x or w
 * does. */
static clt_status prelu_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *src[2] = {S(0), S(1)};
    clt_status st = CLT_OK;
    clt_tensor *pos = NULL, *t = NULL;
    CLT__TRY(clt__gt_scalar_in(fn, S(0), 0.0, &pos));
    for (int k = 0; k < 2; k++) {
        if (!CLT__NEED(n, k))
            continue;
        CLT__TRY(clt__mul_rec(fn, g, S(1 - k), &t));
        CLT__TRY(k == 0 ? clt_where(pos, g, t, &gin[0]) : clt__zero_where(pos, t, &gin[1]));
        CLT__TRY(clt__grad_node("PreluBackwardBackward0", 2, src, &gin[k]));
        clt_tensor_free(t);
        t = NULL;
    }
done:
    clt_tensor_free(pos);
    clt_tensor_free(t);
    return st;
}

/* saved: x and the weight w as broadcast (0-d, or [C, 1, ...]).  PyTorch's
 * prelu_backward: g where x > 0, else w * g for x; 0 where x > 0, else
 * x * g for w, which the engine sums over the broadcast dimensions;
 * recorded in a pass that creates a graph (prelu_twice, clt__twice). */
static clt_status bw_prelu(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (clt__creating_graph())
        return prelu_twice(n, g, gin);
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__prelu_bw_x_in("clt_backward", g, S(0), S(1), &gin[0]);
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = clt__grad_kernel("prelu_bw_w", g, S(0), &gin[1]);
    return st;
}

clt_status clt__prelu_rec(const char *fn, const clt_tensor *x, const clt_tensor *w,
                          clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(w, fn);
    clt_status st = clt__same_device(x, w, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_float(x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for %s tensors; it needs a floating-point "
                          "dtype (convert with clt_to_dtype)",
                          fn, clt_dtype_name(x->dtype));
    if (w->dtype != x->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: found dtype %s for the weight but expected %s (the input's)", fn,
                          clt_dtype_name(w->dtype), clt_dtype_name(x->dtype));
    if (w->ndim > 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected `weight` to be a scalar or 1D tensor, but got ndim = %d",
                          fn, w->ndim);
    int64_t channels = x->ndim >= 2 ? x->shape[1] : 1;
    if (w->numel != 1 && w->numel != channels)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Mismatch of parameter numbers and input channel size. Found "
                          "parameter numbers = %lld and channel size = %lld.",
                          fn, (long long)w->numel, (long long)channels);
    /* The weight broadcast along dim 1: [C, 1, ...] over x's dims past 0,
     * or 0-d for one element. */
    int64_t shape[CLT_MAX_DIMS];
    int nd = 0;
    if (w->numel != 1) {
        nd = x->ndim - 1;
        shape[0] = w->numel;
        for (int d = 1; d < nd; d++)
            shape[d] = 1;
    }
    clt_tensor *wv = NULL;
    CLT__TRY(clt__reshape_rec(fn, w, nd, shape, &wv));
    CLT__TRY(clt__prelu_bcast_in(fn, x, wv, out));
    const clt_tensor *in[2] = {x, wv};
    clt__node *n = NULL;
    st = clt__record(st, out, "PreluBackward0", bw_prelu, 2, in, 2, in, &n);
    clt__twice(n); /* prelu_twice */
done:
    clt_tensor_free(wv);
    return st;
}

clt_status clt_prelu(const clt_tensor *x, const clt_tensor *weight, clt_tensor **out)
{
    CLT__AUTOCAST("clt_prelu", CLT__AC_CUDA(CLT__AC_LOWER), 2, (x, weight),
                  clt_prelu(CLT__AC(0), CLT__AC(1), out));
    return clt__prelu_rec("clt_prelu", x, weight, out);
}

/* ---- softmin ---------------------------------------------------------------------- */

/* torch's F.softmin: softmax of -a, recorded as the two ops PyTorch
 * records (NegBackward0, then SoftmaxBackward0). */
clt_status clt__softmin_rec(const char *fn, const clt_tensor *a, int dim, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_tensor *t = NULL;
    clt_status st = clt__neg_rec(fn, a, &t);
    if (st == CLT_OK)
        st = clt__softmax_rec(fn, t, dim, out);
    clt_tensor_free(t);
    return st;
}

clt_status clt_softmin(const clt_tensor *a, int dim, clt_tensor **out)
{
    /* torch's softmin is a softmax (autocast's float32 list) of -a */
    CLT__AUTOCAST("clt_softmin", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_softmin(CLT__AC(0), dim, out));
    return clt__softmin_rec("clt_softmin", a, dim, out);
}
