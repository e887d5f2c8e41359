/* grad_loss.c: the losses of loss.h as recorded ops, each one node whose
 * backward formula is one fused kernel (src/ops/loss.c, cl/loss.cl). */
#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* The formula as recorded ops, for a pass that creates a graph
 * (clt__twice: x [N, C], class indices, no label smoothing):
 * (softmax(x) - onehot(target)) * g', or -onehot(target) * g' for
 * nll_loss, with g' the row's gradient (g / den for the mean and the sum)
 * times the weight of the row's class (a constant), 0 on ignored rows. */
static clt_status ce_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    const clt_tensor *x = S(0), *t = S(1);
    clt_tensor *cls = NULL, *tc = NULL, *oh = NULL, *ohf = NULL, *valid = NULL, *vf = NULL,
               *gs = NULL, *gv = NULL, *p = NULL, *d = NULL, *ow = NULL, *wt = NULL;
    CLT__TRY(clt__arange(x->dev, t->dtype, 0, (double)x->shape[1], 1, &cls));
    CLT__TRY(clt__unsqueeze(t, 1, &tc, fn));
    CLT__TRY(clt__eq_in(fn, tc, cls, &oh));
    CLT__TRY(clt__to_dtype(oh, x->dtype, &ohf, fn));
    CLT__TRY(clt__ne_scalar_in(fn, tc, (double)n->i[0], &valid));
    CLT__TRY(clt__to_dtype(valid, x->dtype, &vf, fn));
    if (n->nsaved > 3) { /* the weights of the rows' classes: sum(onehot * w) by row */
        CLT__TRY(clt__mul_in(fn, ohf, S(3), &ow));
        CLT__TRY(clt__sum_dim(ow, 1, 1, &wt, fn));
        clt_tensor_free(ow);
        ow = NULL;
        CLT__TRY(clt__mul_in(fn, vf, wt, &ow));
        clt_tensor_free(vf);
        vf = ow;
        ow = NULL;
    }
    if (n->i[1] == CLT_REDUCTION_NONE)
        CLT__TRY(clt__unsqueeze_rec(fn, g, 1, &gs));
    else
        CLT__TRY(clt__div_rec(fn, g, S(2), &gs));
    CLT__TRY(clt__mul_rec(fn, gs, vf, &gv));
    if (n->i[2]) {
        CLT__TRY(clt__mul_rec(fn, ohf, gv, &d));
        CLT__TRY(clt__neg_rec(fn, d, &gin[0]));
    } else {
        CLT__TRY(clt__softmax_rec(fn, x, 1, &p));
        CLT__TRY(clt__sub_rec(fn, p, ohf, &d));
        CLT__TRY(clt__mul_rec(fn, d, gv, &gin[0]));
    }
done:
    clt_tensor_free(cls);
    clt_tensor_free(tc);
    clt_tensor_free(oh);
    clt_tensor_free(ohf);
    clt_tensor_free(valid);
    clt_tensor_free(vf);
    clt_tensor_free(gs);
    clt_tensor_free(gv);
    clt_tensor_free(p);
    clt_tensor_free(d);
    clt_tensor_free(ow);
    clt_tensor_free(wt);
    return st;
}

/* saved: x, target, den (x again for CLT_REDUCTION_NONE), weight if any.
 * s[0] label_smoothing; i[0] ignore_index, i[1] reduction, i[2] nll,
 * i[3] whether den was saved. */
static clt_status bw_cross_entropy(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->twice && clt__creating_graph())
        return CLT__NEED(n, 0) ? ce_twice(n, g, gin) : CLT_OK;
    clt_tensor *gx = NULL, *gt = NULL;
    const clt_tensor *w = n->nsaved > 3 ? S(3) : NULL, *den = n->i[3] ? S(2) : NULL;
    clt_status st = clt__cross_entropy_bw(S(0), S(1), w, (int)n->i[1], n->i[0], n->s[0],
                                          n->i[2] != 0, g, den, CLT__NEED(n, 1), &gx, &gt);
    if (st != CLT_OK)
        return st;
    if (CLT__NEED(n, 0))
        gin[0] = gx;
    else
        clt_tensor_free(gx);
    gin[1] = gt;
    return CLT_OK;
}

clt_status clt__weight_without_grad(const clt_tensor *w, const char *arg, const char *fn,
                                   clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (w && clt_is_grad_enabled() && clt__requires_grad(w))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the loss is not differentiable with respect to argument '%s', "
                          "which requires grad, as in PyTorch (pass it detached: clt_detach)",
                          fn, arg);
    return CLT_OK;
}

static clt_status cross_entropy(bool nll, const clt_tensor *x, const clt_tensor *target,
                                const clt_cross_entropy_opts *opts, clt_tensor **out);

/* cross_entropy or nll_loss of float16 input (and float16 weight and
 * probability target, if any): in float32 from the widened operands,
 * rounded to half once, as torch's GPU kernels compute in float; the
 * casts are recorded. */
static clt_status half_cross_entropy(bool nll, const clt_tensor *x, const clt_tensor *target,
                                     const clt_cross_entropy_opts *opts, clt_tensor **out)
{
    const char *fn = nll ? "clt_nll_loss" : "clt_cross_entropy";
    clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
    if (opts)
        o = *opts;
    clt_tensor *xw = NULL, *tw = NULL, *ww = NULL, *r = NULL;
    clt_status st = clt__to_dtype_rec(fn, x, CLT_FLOAT32, &xw);
    if (st == CLT_OK && target->dtype == x->dtype)
        st = clt__to_dtype_rec(fn, target, CLT_FLOAT32, &tw);
    if (st == CLT_OK && o.weight)
        st = clt__to_dtype(o.weight, CLT_FLOAT32, &ww, fn);
    o.weight = ww;
    if (st == CLT_OK)
        st = cross_entropy(nll, xw, tw ? tw : target, &o, &r);
    if (st == CLT_OK)
        st = clt__to_dtype_rec(fn, r, x->dtype, out);
    clt_tensor_free(xw);
    clt_tensor_free(tw);
    clt_tensor_free(ww);
    clt_tensor_free(r);
    return st;
}

static clt_status cross_entropy(bool nll, const clt_tensor *x, const clt_tensor *target,
                                const clt_cross_entropy_opts *opts, clt_tensor **out)
{
    static const clt_cross_entropy_opts defaults = CLT_CROSS_ENTROPY_DEFAULTS;
    if (out && x && target && clt__dtype_is_half(x->dtype) &&
        (target->dtype == x->dtype || !clt__dtype_is_float(target->dtype)) &&
        (opts == NULL || opts->weight == NULL || opts->weight->dtype == x->dtype)) {
        clt_status st = clt__weight_without_grad(opts ? opts->weight : NULL, "weight",
                                                 nll ? "clt_nll_loss" : "clt_cross_entropy", out);
        return st != CLT_OK ? st : half_cross_entropy(nll, x, target, opts, out);
    }
    clt_tensor *den = NULL;
    clt_status st = clt__weight_without_grad(opts ? opts->weight : NULL, "weight",
                                        nll ? "clt_nll_loss" : "clt_cross_entropy", out);
    if (st != CLT_OK)
        return st;
    st = clt__cross_entropy(x, target, opts, nll, out, &den);
    if (st != CLT_OK)
        return st;
    const clt_cross_entropy_opts *o = opts ? opts : &defaults;
    const clt_tensor *in[2] = {x, target};
    const clt_tensor *saved[4] = {x, target, den ? den : x, o->weight};
    clt__node *n = NULL;
    st = clt__record(st, out, nll ? "NllLossBackward0" : "CrossEntropyLossBackward0",
                     bw_cross_entropy, 2, in, o->weight ? 4 : 3, saved, &n);
    if (n) {
        n->s[0] = o->label_smoothing;
        n->i[0] = o->ignore_index;
        n->i[1] = o->reduction;
        n->i[2] = nll;
        n->i[3] = den != NULL;
        if (!clt__dtype_is_float(target->dtype) && o->label_smoothing == 0 && x->ndim == 2)
            clt__twice(n);
    }
    clt_tensor_free(den);
    return st;
}

/* cross_entropy and nll_loss are on autocast's float32 list: a float16
 * input, probability target or class weight is cast to float32 first. */
static clt_status autocast_cross_entropy(bool nll, const clt_tensor *x, const clt_tensor *target,
                                         const clt_cross_entropy_opts *opts, clt_tensor **out)
{
    clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
    if (opts)
        o = *opts;
    const clt_tensor *in[3] = {x, target, o.weight};
    if (!clt__autocast_wants(CLT__AC_BOTH(CLT__AC_FLOAT32), 3, in))
        return cross_entropy(nll, x, target, opts, out);
    clt_tensor *tmp[3] = {NULL, NULL, NULL};
    clt_status st = clt__autocast_begin(nll ? "clt_nll_loss" : "clt_cross_entropy",
                                        CLT__AC_BOTH(CLT__AC_FLOAT32), 3, in, tmp);
    o.weight = in[2];
    if (st == CLT_OK)
        st = cross_entropy(nll, in[0], in[1], &o, out);
    return clt__autocast_end(st, 3, tmp);
}

clt_status clt_cross_entropy(const clt_tensor *logits, const clt_tensor *target,
                             const clt_cross_entropy_opts *opts, clt_tensor **out)
{
    return autocast_cross_entropy(false, logits, target, opts, out);
}

clt_status clt_nll_loss(const clt_tensor *log_probs, const clt_tensor *target,
                        const clt_cross_entropy_opts *opts, clt_tensor **out)
{
    return autocast_cross_entropy(true, log_probs, target, opts, out);
}

/* saved: input, target, pos_weight or weight if any.  i[0] the kind, i[1]
 * the reduction; s[0] the kind's scalar (beta, delta, log_target). */
/* mse_loss's formula as recorded ops (clt__twice): 2 (x - y) g, over the
 * count for the mean; its negation for y. */
static clt_status mse_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *d = NULL, *t = NULL, *u = NULL;
    CLT__TRY(clt__sub_rec(fn, S(0), S(1), &d));
    double scale = n->i[1] == CLT_REDUCTION_MEAN ? 2.0 / (double)d->numel : 2.0;
    CLT__TRY(clt__mul_rec(fn, d, g, &t));
    CLT__TRY(clt__mul_scalar_rec(fn, t, scale, &u));
    if (CLT__NEED(n, 1))
        CLT__TRY(clt__neg_rec(fn, u, &gin[1]));
    if (CLT__NEED(n, 0)) {
        gin[0] = u;
        u = NULL;
    }
done:
    clt_tensor_free(d);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

/* The binary cross entropies' formulas as recorded ops (clt__twice), with
 * g' = g (over the count for the mean) and PyTorch's formulas: on
 * probabilities (x - y) / clamp_min(x (1 - x), 1e-12) g' w for x and
 * -logit(x) g' w for y (w the weight, if any); on logits
 * (sigmoid(x) - y) g' and -x g', or with a pos_weight p
 * ((p y + 1 - y) sigmoid(x) - p y) g' and
 * (p softplus(-x) - softplus(x)) g'. */
static clt_status bce_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    static const double eps = 1e-12;
    clt_status st = CLT_OK;
    const clt_tensor *x = S(0), *y = S(1), *w = n->nsaved > 2 ? S(2) : NULL;
    bool prob = n->i[0] == CLT__LOSS_BCE_PROB;
    clt_tensor *gs = NULL, *t[8] = {0};
    if (n->i[1] == CLT_REDUCTION_MEAN)
        CLT__TRY(clt__div_scalar_rec(fn, g, (double)x->numel, &gs));
    else
        CLT__TRY(clt__alias_grad(g, &gs));
    if (prob && w) {
        CLT__TRY(clt__mul_rec(fn, gs, w, &t[0]));
        clt_tensor_free(gs);
        gs = t[0];
        t[0] = NULL;
    }
    if (CLT__NEED(n, 0)) {
        if (prob) {
            CLT__TRY(clt__rsub_scalar_rec(fn, x, 1.0, &t[0]));
            CLT__TRY(clt__mul_rec(fn, x, t[0], &t[1]));
            CLT__TRY(clt__clamp_rec(fn, t[1], &eps, NULL, &t[2]));
            CLT__TRY(clt__sub_rec(fn, x, y, &t[3]));
            CLT__TRY(clt__div_rec(fn, t[3], t[2], &t[4]));
        } else if (w) {
            CLT__TRY(clt__mul_rec(fn, w, y, &t[0]));
            CLT__TRY(clt__add_scalar_rec(fn, t[0], 1.0, &t[1]));
            CLT__TRY(clt__sub_rec(fn, t[1], y, &t[2]));
            CLT__TRY(clt__sigmoid_rec(fn, x, &t[3]));
            CLT__TRY(clt__mul_rec(fn, t[2], t[3], &t[5]));
            CLT__TRY(clt__sub_rec(fn, t[5], t[0], &t[4]));
        } else {
            CLT__TRY(clt__sigmoid_rec(fn, x, &t[3]));
            CLT__TRY(clt__sub_rec(fn, t[3], y, &t[4]));
        }
        CLT__TRY(clt__mul_rec(fn, t[4], gs, &gin[0]));
        for (int k = 0; k < 8; k++) {
            clt_tensor_free(t[k]);
            t[k] = NULL;
        }
    }
    if (CLT__NEED(n, 1)) {
        if (prob) {
            CLT__TRY(clt__rsub_scalar_rec(fn, x, 1.0, &t[0]));
            CLT__TRY(clt__div_rec(fn, x, t[0], &t[1]));
            CLT__TRY(clt__log_rec(fn, t[1], &t[2]));
        } else if (w) {
            CLT__TRY(clt__neg_rec(fn, x, &t[0]));
            CLT__TRY(clt__softplus_rec(fn, t[0], 1.0, 20.0, &t[1]));
            CLT__TRY(clt__mul_rec(fn, w, t[1], &t[3]));
            CLT__TRY(clt__softplus_rec(fn, x, 1.0, 20.0, &t[4]));
            CLT__TRY(clt__sub_rec(fn, t[4], t[3], &t[2]));
        } else {
            CLT__TRY(clt__alias_grad(x, &t[2]));
        }
        CLT__TRY(clt__mul_rec(fn, t[2], gs, &t[5]));
        CLT__TRY(clt__neg_rec(fn, t[5], &gin[1]));
    }
done:
    clt_tensor_free(gs);
    for (int k = 0; k < 8; k++)
        clt_tensor_free(t[k]);
    return st;
}

/* smooth_l1's (prm beta) or huber's (prm delta) gradient for the
 * difference d, recorded: as the kernel, -c g' where d <= -prm, c g'
 * where d >= prm (c 1, or delta), else d g' / beta (d g'); the masks and
 * c constants. */
static clt_status kink_twice(int kind, double prm, const clt_tensor *d, const clt_tensor *gs,
                             clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *lo = NULL, *hi = NULL, *hf = NULL, *m1 = NULL, *co = NULL, *outer = NULL,
               *mid = NULL, *inner = NULL, *side = NULL, *either = NULL;
    double c = kind == CLT__LOSS_HUBER ? prm : 1.0;
    CLT__TRY(clt__le_scalar_in(fn, d, -prm, &lo));
    CLT__TRY(clt__ge_scalar_in(fn, d, prm, &hi));
    CLT__TRY(clt__to_dtype(hi, d->dtype, &hf, fn));
    CLT__TRY(clt__full(d->dev, d->dtype, 0, NULL, -c, &m1));
    CLT__TRY(clt__mul_scalar_in(fn, hf, c, &co));
    CLT__TRY(clt__where_in(fn, lo, m1, co, &outer)); /* -c, c or 0 */
    CLT__TRY(clt__mul_rec(fn, outer, gs, &side));
    if (kind == CLT__LOSS_SMOOTH_L1 && prm == 0) { /* no middle */
        *out = side;
        side = NULL;
        goto done;
    }
    CLT__TRY(clt__mul_rec(fn, d, gs, &mid));
    if (kind == CLT__LOSS_SMOOTH_L1)
        CLT__TRY(clt__div_scalar_rec(fn, mid, prm, &inner));
    else
        CLT__TRY(clt__alias_grad(mid, &inner));
    CLT__TRY(clt__logical_or_in(fn, lo, hi, &either));
    CLT__TRY(clt_where(either, side, inner, out));
done:;
    clt_tensor *tmp[] = {lo, hi, hf, m1, co, outer, mid, inner, side, either};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
        clt_tensor_free(tmp[k]);
    return st;
}

/* l1_loss, smooth_l1_loss, huber_loss and kl_div's formulas (the kernel's,
 * PyTorch's) as recorded ops (clt__twice), g' = g over the reduction's
 * divisor: l1 sign(x - y) g' (0 at NaN) and its negation; the kinks' as
 * kink_twice of x - y and of y - x; kl_div -g' e^y and
 * g' e^y (y - x) + g' e^y (log_target), else -g' y and
 * g' xlogy(y != 0, y) + g' y / y - g' x. */
static clt_status loss_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    const clt_tensor *x = S(0), *y = S(1);
    int kind = (int)n->i[0];
    double div = n->i[1] == CLT_REDUCTION_MEAN        ? (double)x->numel
                 : n->i[1] == CLT_REDUCTION_BATCHMEAN ? (x->ndim ? (double)x->shape[0] : 1.0)
                                                      : 1.0;
    clt_tensor *gs = NULL, *t[8] = {0};
    CLT__TRY(div != 1.0 ? clt__div_scalar_rec(fn, g, div, &gs) : clt__alias_grad(g, &gs));
    if (kind == CLT__LOSS_L1) {
        CLT__TRY(clt__sub_in(fn, x, y, &t[0]));
        CLT__TRY(clt__sign_in(fn, t[0], &t[1]));
        CLT__TRY(clt__mul_rec(fn, t[1], gs, &t[2]));
        if (CLT__NEED(n, 1))
            CLT__TRY(clt__neg_rec(fn, t[2], &gin[1]));
        if (CLT__NEED(n, 0)) {
            gin[0] = t[2];
            t[2] = NULL;
        }
    } else if (kind == CLT__LOSS_SMOOTH_L1 || kind == CLT__LOSS_HUBER) {
        if (CLT__NEED(n, 0)) {
            CLT__TRY(clt__sub_rec(fn, x, y, &t[0]));
            CLT__TRY(kink_twice(kind, n->s[0], t[0], gs, &gin[0]));
        }
        if (CLT__NEED(n, 1)) {
            CLT__TRY(clt__sub_rec(fn, y, x, &t[1]));
            CLT__TRY(kink_twice(kind, n->s[0], t[1], gs, &gin[1]));
        }
    } else if (n->s[0] != 0) { /* kl_div, log_target */
        CLT__TRY(clt__exp_rec(fn, y, &t[0]));
        CLT__TRY(clt__mul_rec(fn, gs, t[0], &t[1]));
        if (CLT__NEED(n, 0))
            CLT__TRY(clt__neg_rec(fn, t[1], &gin[0]));
        if (CLT__NEED(n, 1)) {
            CLT__TRY(clt__sub_rec(fn, y, x, &t[2]));
            CLT__TRY(clt__mul_rec(fn, t[1], t[2], &t[3]));
            CLT__TRY(clt__add_rec(fn, t[3], t[1], &gin[1]));
        }
    } else { /* kl_div */
        if (CLT__NEED(n, 0)) {
            CLT__TRY(clt__mul_rec(fn, gs, y, &t[0]));
            CLT__TRY(clt__neg_rec(fn, t[0], &gin[0]));
        }
        if (CLT__NEED(n, 1)) {
            CLT__TRY(clt__log_rec(fn, y, &t[1]));
            CLT__TRY(clt__eq_scalar_in(fn, y, 0.0, &t[2]));
            CLT__TRY(clt__zero_where(t[2], t[1], &t[3])); /* xlogy(y != 0, y) */
            CLT__TRY(clt__mul_rec(fn, gs, t[3], &t[4]));
            CLT__TRY(clt__div_rec(fn, y, y, &t[5]));
            CLT__TRY(clt__mul_rec(fn, gs, t[5], &t[6]));
            clt_tensor_free(t[1]);
            t[1] = NULL;
            CLT__TRY(clt__add_rec(fn, t[4], t[6], &t[1]));
            clt_tensor_free(t[2]);
            t[2] = NULL;
            CLT__TRY(clt__mul_rec(fn, gs, x, &t[2]));
            CLT__TRY(clt__sub_rec(fn, t[1], t[2], &gin[1]));
        }
    }
done:
    clt_tensor_free(gs);
    for (int k = 0; k < 8; k++)
        clt_tensor_free(t[k]);
    return st;
}

static clt_status bw_pointwise(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->twice && clt__creating_graph()) {
        int kind = (int)n->i[0];
        if (kind == CLT__LOSS_MSE)
            return mse_twice(n, g, gin);
        if (kind == CLT__LOSS_BCE_PROB || kind == CLT__LOSS_BCE)
            return bce_twice(n, g, gin);
        return loss_twice(n, g, gin);
    }
    return clt__pointwise_loss_bw((int)n->i[0], S(0), S(1), n->nsaved > 2 ? S(2) : NULL,
                                  n->s[0], (int)n->i[1], g, CLT__NEED(n, 0), CLT__NEED(n, 1),
                                  &gin[0], &gin[1]);
}

static clt_status pointwise(int kind, const char *name, const clt_tensor *x, const clt_tensor *y,
                            const clt_tensor *pw, double prm, clt_reduction reduction,
                            clt_tensor **out);

/* A loss of float16 operands: computed in float32 from the widened
 * operands and rounded to half once, as torch's GPU kernels compute in
 * float (the sum of a reduction too); the casts are recorded, so the
 * gradients come back through them in half. */
static clt_status half_pointwise(int kind, const char *name, const clt_tensor *x,
                                 const clt_tensor *y, const clt_tensor *pw, double prm,
                                 clt_reduction reduction, clt_tensor **out)
{
    static const char fn[] = "16-bit float loss";
    clt_tensor *w[3] = {NULL, NULL, NULL}, *r = NULL;
    *out = NULL;
    clt_status st = clt__to_dtype_rec(fn, x, CLT_FLOAT32, &w[0]);
    if (st == CLT_OK)
        st = clt__to_dtype_rec(fn, y, CLT_FLOAT32, &w[1]);
    if (st == CLT_OK && pw)
        st = clt__to_dtype_rec(fn, pw, CLT_FLOAT32, &w[2]);
    if (st == CLT_OK)
        st = pointwise(kind, name, w[0], w[1], w[2], prm, reduction, &r);
    if (st == CLT_OK)
        st = clt__to_dtype_rec(fn, r, x->dtype, out);
    for (int i = 0; i < 3; i++)
        clt_tensor_free(w[i]);
    clt_tensor_free(r);
    return st;
}

static clt_status pointwise(int kind, const char *name, const clt_tensor *x, const clt_tensor *y,
                            const clt_tensor *pw, double prm, clt_reduction reduction,
                            clt_tensor **out)
{
    clt_status st = CLT_OK;
    if (x && y && clt__dtype_is_half(x->dtype) && y->dtype == x->dtype &&
        (pw == NULL || pw->dtype == x->dtype) && out)
        return half_pointwise(kind, name, x, y, pw, prm, reduction, out);
    if (kind == CLT__LOSS_BCE_PROB)
        st = clt__weight_without_grad(pw, "weight", "clt_binary_cross_entropy", out);
    else if (kind == CLT__LOSS_BCE)
        st = clt__weight_without_grad(pw, "pos_weight", "clt_binary_cross_entropy_with_logits", out);
    if (st != CLT_OK)
        return st;
    st = clt__pointwise_loss(kind, x, y, pw, prm, (int)reduction, out);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {x, y};
    const clt_tensor *saved[3] = {x, y, pw};
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw_pointwise, 2, in, pw ? 3 : 2, saved, &n);
    if (n) {
        n->i[0] = kind;
        n->i[1] = reduction;
        n->s[0] = prm;
        clt__twice(n); /* every kind's formula has its recorded form */
    }
    return st;
}

clt_status clt_mse_loss(const clt_tensor *input, const clt_tensor *target,
                        clt_reduction reduction, clt_tensor **out)
{
    CLT__AUTOCAST("clt_mse_loss", CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_mse_loss(CLT__AC(0), CLT__AC(1), reduction, out));
    return pointwise(CLT__LOSS_MSE, "MseLossBackward0", input, target, NULL, 0, reduction, out);
}

clt_status clt_l1_loss(const clt_tensor *input, const clt_tensor *target, clt_reduction reduction,
                       clt_tensor **out)
{
    CLT__AUTOCAST("clt_l1_loss", CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_l1_loss(CLT__AC(0), CLT__AC(1), reduction, out));
    return pointwise(CLT__LOSS_L1, "L1LossBackward0", input, target, NULL, 0, reduction, out);
}

clt_status clt_smooth_l1_loss(const clt_tensor *input, const clt_tensor *target,
                              clt_reduction reduction, double beta, clt_tensor **out)
{
    CLT__AUTOCAST("clt_smooth_l1_loss", CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_smooth_l1_loss(CLT__AC(0), CLT__AC(1), reduction, beta, out));
    return pointwise(CLT__LOSS_SMOOTH_L1, "SmoothL1LossBackward0", input, target, NULL, beta,
                     reduction, out);
}

clt_status clt_huber_loss(const clt_tensor *input, const clt_tensor *target,
                          clt_reduction reduction, double delta, clt_tensor **out)
{
    CLT__AUTOCAST("clt_huber_loss", CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_huber_loss(CLT__AC(0), CLT__AC(1), reduction, delta, out));
    return pointwise(CLT__LOSS_HUBER, "HuberLossBackward0", input, target, NULL, delta,
                     reduction, out);
}

clt_status clt_binary_cross_entropy(const clt_tensor *input, const clt_tensor *target,
                                    const clt_tensor *weight, clt_reduction reduction,
                                    clt_tensor **out)
{
    clt_device *acdev = clt__autocast_device(NULL);
    if (out && input && acdev && input->dev == acdev && !clt__autocast_cpu_lists()) {
        *out = NULL;
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_binary_cross_entropy: binary_cross_entropy is unsafe to autocast "
                          "(its gradient overflows float16); use "
                          "clt_binary_cross_entropy_with_logits, which is safe, or close the "
                          "autocast region around it");
    }
    /* on torch's CPU lists it is a float32 op */
    CLT__AUTOCAST("clt_binary_cross_entropy", CLT__AC_ON(CLT__AC_NONE, CLT__AC_FLOAT32), 3,
                  (input, target, weight),
                  clt_binary_cross_entropy(CLT__AC(0), CLT__AC(1), CLT__AC(2), reduction, out));
    return pointwise(CLT__LOSS_BCE_PROB, "BinaryCrossEntropyBackward0", input, target, weight,
                     0, reduction, out);
}

clt_status clt_binary_cross_entropy_with_logits(const clt_tensor *input, const clt_tensor *target,
                                                const clt_tensor *pos_weight,
                                                clt_reduction reduction, clt_tensor **out)
{
    CLT__AUTOCAST("clt_binary_cross_entropy_with_logits", CLT__AC_BOTH(CLT__AC_FLOAT32), 3,
                  (input, target, pos_weight),
                  clt_binary_cross_entropy_with_logits(CLT__AC(0), CLT__AC(1), CLT__AC(2),
                                                       reduction, out));
    return pointwise(CLT__LOSS_BCE, "BinaryCrossEntropyWithLogitsBackward0", input, target,
                     pos_weight, 0, reduction, out);
}

clt_status clt_kl_div(const clt_tensor *input, const clt_tensor *target, clt_reduction reduction,
                      int log_target, clt_tensor **out)
{
    CLT__AUTOCAST("clt_kl_div", CLT__AC_BOTH(CLT__AC_FLOAT32), 2, (input, target),
                  clt_kl_div(CLT__AC(0), CLT__AC(1), reduction, log_target, out));
    return pointwise(CLT__LOSS_KL_DIV, "KlDivBackward0", input, target, NULL, log_target != 0,
                     reduction, out);
}
