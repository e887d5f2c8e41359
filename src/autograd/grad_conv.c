/* grad_conv.c: conv1d, conv2d, conv3d, conv_transpose1d/2d/3d (their
 * formulas recorded as convolutions too, for double backward), max_pool1d/2d (with
 * indices too), avg_pool1d/2d, adaptive_avg_pool2d, adaptive_max_pool1d/2d,
 * max_unpool1d/2d, unfold and fold (conv.h) with their backward formulas;
 * the kernels live in src/ops/conv.c (interpolate: grad_spatial.c).  Unbatched
 * [C, H, W] inputs go through the batched op between a recorded unsqueeze
 * and squeeze (adaptive max pooling and unpooling take them as they are,
 * as torch), [N, C, L] ones through the 2-D op on [N, C, 1, L]. */
#include <string.h>

#include "autograd/autograd.h"
#include "ops/conv.h"

#define S(k) (n->saved[k])

typedef clt_status (*op4_fn)(const clt_tensor *x, const void *ctx, clt_tensor **out);

/* op4 on an input of full - 1 dims seen as [1, ...], or on one of full
 * dims as it is; other ranks are the caller's error. */
static clt_status batched_nd(const clt_tensor *x, int full, op4_fn op4, const void *ctx,
                             clt_tensor **out, const char *fn)
{
    if (x->ndim == full)
        return op4(x, ctx, out);
    clt_tensor *x4 = NULL, *y4 = NULL;
    clt_status st = clt__unsqueeze_rec(fn, x, 0, &x4);
    if (st == CLT_OK)
        st = op4(x4, ctx, &y4);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, y4, 0, out);
    clt_tensor_free(x4);
    clt_tensor_free(y4);
    return st;
}

/* op4 on a [C, H, W] input seen as [1, C, H, W], or on a 4-D one as it is. */
static clt_status batched(const clt_tensor *x, op4_fn op4, const void *ctx, clt_tensor **out,
                          const char *fn)
{
    return batched_nd(x, 4, op4, ctx, out, fn);
}

/* A convolution node's settings: i[0] nd, then stride, padding, dilation
 * and output_padding (three each), groups. */
static void opts_to_node(const clt__conv_opts *o, clt__node *n)
{
    n->i[0] = o->nd;
    for (int d = 0; d < 3; d++) {
        n->i[1 + d] = o->stride[d];
        n->i[4 + d] = o->padding[d];
        n->i[7 + d] = o->dilation[d];
        n->i[10 + d] = o->output_padding[d];
    }
    n->i[13] = o->groups;
}

static clt__conv_opts opts_from_node(const clt__node *n)
{
    clt__conv_opts o = {(int)n->i[0], {0}, {0}, {0}, {0}, n->i[13]};
    for (int d = 0; d < 3; d++) {
        o.stride[d] = n->i[1 + d];
        o.padding[d] = n->i[4 + d];
        o.dilation[d] = n->i[7 + d];
        o.output_padding[d] = n->i[10 + d];
    }
    return o;
}

static clt_status conv_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt__conv_opts *o, clt_tensor **out);
static clt_status conv_transpose_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt__conv_opts *o, clt_tensor **out);

/* ---- the formulas as recorded ops, for a pass that creates a graph ---------------- */

/* The weight's gradient [O, C / groups, k...] of conv(x, w) with opts o for
 * its output's gradient g, in recorded ops: a grouped convolution of x's
 * channels, the batch as their channels ([C / G, G N, spatial...]), with g
 * as the kernel ([O, N, out...]), stride and dilation exchanged; its
 * [C / G, O, ...] result transposed and cut to the kernel's size (the
 * rows past it are the input's that no output reached). */
static clt_status conv_weight_grad(const clt_tensor *x, const clt_tensor *g, const int64_t *k,
                                   const clt__conv_opts *o, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    const int nd = o->nd;
    int64_t N = x->shape[0], G = o->groups, Cg = x->shape[1] / G;
    int64_t s5[6] = {N, G, Cg}, s4[5] = {Cg, G * N};
    int perm[6] = {2, 1, 0, 3, 4, 5};
    for (int d = 0; d < nd; d++)
        s5[3 + d] = s4[2 + d] = x->shape[2 + d];
    clt__conv_opts t = *o;
    for (int d = 0; d < 3; d++) {
        t.stride[d] = o->dilation[d];
        t.dilation[d] = o->stride[d];
        t.output_padding[d] = 0;
    }
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *gt = NULL, *r = NULL, *cut[2] = {NULL, NULL};
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape_rec(fn, x, nd + 3, s5, &a));
    CLT__TRY(clt__permute_rec(fn, a, nd + 3, perm, &b));
    CLT__TRY(clt__reshape_rec(fn, b, nd + 2, s4, &c));
    CLT__TRY(clt__transpose_rec(fn, g, 0, 1, &gt));
    CLT__TRY(conv_rec(fn, c, gt, NULL, &t, &r));
    CLT__TRY(clt__transpose_rec(fn, r, 0, 1, &cut[0]));
    for (int d = 0; d < nd; d++) {
        clt_tensor *next = NULL;
        CLT__TRY(clt__narrow_rec(fn, cut[0], 2 + d, 0, k[d], d == nd - 1 ? out : &next));
        clt_tensor_free(cut[0]);
        cut[0] = next;
    }
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(gt);
    clt_tensor_free(r);
    clt_tensor_free(cut[0]);
    return st;
}

/* r cut to the spatial sizes of x (dims 2 on), recorded. */
static clt_status cut_to(const clt_tensor *r, const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_tensor *cur = NULL;
    clt_status st = CLT_OK;
    for (int d = 2; d < x->ndim; d++) {
        clt_tensor *next = NULL;
        CLT__TRY(clt__narrow_rec(fn, cur ? cur : r, d, 0, x->shape[d],
                                 d == x->ndim - 1 ? out : &next));
        clt_tensor_free(cur);
        cur = next;
    }
done:
    clt_tensor_free(cur);
    return st;
}

/* The bias's gradient: g summed over N and the spatial dims, recorded. */
static clt_status conv_bias_grad(const clt_tensor *g, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_tensor *cur = NULL;
    clt_status st = CLT_OK;
    for (int d = g->ndim - 1; d >= 0; d--) {
        if (d == 1)
            continue;
        clt_tensor *next = NULL;
        CLT__TRY(clt__sum_dim_rec(fn, cur ? cur : g, d, 0, d == 0 ? out : &next));
        clt_tensor_free(cur);
        cur = next;
    }
done:
    clt_tensor_free(cur);
    return st;
}

/* Gives each gradient the node PyTorch records for a convolution's
 * formula, with edges to the input and weight it read (clt__grad_node). */
static clt_status conv_grad_nodes(const clt__node *n, clt_tensor **gin)
{
    const clt_tensor *src[2] = {S(0), S(1)};
    clt_status st = CLT_OK;
    for (int j = 0; j < n->nin && st == CLT_OK; j++)
        if (gin[j])
            st = clt__grad_node("ConvolutionBackwardBackward0", 2, src, &gin[j]);
    return st;
}

/* A convolution's formula as recorded ops (torch's convolution_backward
 * as its double backward sees it): the input's gradient conv_transpose of
 * g with the weight, its output_padding the rows the forward's stride left
 * over; the weight's conv_weight_grad; the bias's the sum. */
static clt_status conv_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt__conv_opts o = opts_from_node(n);
    const clt_tensor *x = S(0), *w = S(1);
    const int64_t *k = w->shape + 2;
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0)) {
        clt__conv_opts t = o;
        for (int d = 0; d < o.nd; d++)
            t.output_padding[d] = x->shape[2 + d] + 2 * o.padding[d] -
                                  o.dilation[d] * (k[d] - 1) - 1 -
                                  (g->shape[2 + d] - 1) * o.stride[d];
        CLT__TRY(conv_transpose_rec(fn, g, w, NULL, &t, &gin[0]));
    }
    if (CLT__NEED(n, 1))
        CLT__TRY(conv_weight_grad(x, g, k, &o, &gin[1]));
    if (n->nin > 2 && CLT__NEED(n, 2))
        CLT__TRY(conv_bias_grad(g, &gin[2]));
    st = conv_grad_nodes(n, gin);
done:
    return st;
}

/* A transposed convolution's formula as recorded ops: the input's
 * gradient the convolution of g with the weight (cut to the input's size:
 * an output_padding past the stride adds rows no input reached), the
 * weight's conv_weight_grad with g as the input and the input as the
 * output's gradient. */
static clt_status conv_transpose_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt__conv_opts c = opts_from_node(n);
    for (int d = 0; d < 3; d++)
        c.output_padding[d] = 0;
    const clt_tensor *x = S(0), *w = S(1);
    clt_tensor *r = NULL;
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0)) {
        CLT__TRY(conv_rec(fn, g, w, NULL, &c, &r));
        CLT__TRY(cut_to(r, x, &gin[0]));
    }
    if (CLT__NEED(n, 1))
        CLT__TRY(conv_weight_grad(g, x, w->shape + 2, &c, &gin[1]));
    if (n->nin > 2 && CLT__NEED(n, 2))
        CLT__TRY(conv_bias_grad(g, &gin[2]));
    st = conv_grad_nodes(n, gin);
done:
    clt_tensor_free(r);
    return st;
}

/* ---- convolution (2-D and 3-D) ---------------------------------------------------- */

/* saved: input, weight, and the forward's im2col matrix when it kept one.
 * PyTorch's convolution_backward: grad_input by the
 * transposed product and col2im, grad_weight by the product with the
 * patches, grad_bias the sum over N and the spatial dims. */
static clt_status bw_conv(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->twice && clt__creating_graph())
        return conv_twice(n, g, gin);
    clt__conv_opts o = opts_from_node(n);
    return clt__conv_backward(g, S(0), S(1), &o, n->nsaved > 2 ? S(2) : NULL,
                              CLT__NEED(n, 0) ? &gin[0] : NULL, CLT__NEED(n, 1) ? &gin[1] : NULL,
                              n->nin > 2 && CLT__NEED(n, 2) ? &gin[2] : NULL);
}

typedef struct conv_ctx {
    const clt_tensor *w, *b;
    const clt__conv_opts *o;
    const char *fn;
} conv_ctx;

static clt_status conv_batched(const clt_tensor *x, const void *ctx, clt_tensor **out)
{
    const conv_ctx *c = ctx;
    const clt_tensor *in[3] = {x, c->w, c->b};
    clt__node *n = NULL;
    /* the patches are kept for the weight's gradient when it will need them */
    clt_tensor *cols = NULL;
    bool keep = clt__grad_needed(1, &c->w);
    clt_status st = clt__conv(x, c->w, c->b, c->o, out, keep ? &cols : NULL, c->fn);
    const clt_tensor *sv[3] = {x, c->w, cols};
    st = clt__record(st, out, "ConvolutionBackward0", bw_conv, c->b ? 3 : 2, in, cols ? 3 : 2,
                     sv, &n);
    clt_tensor_free(cols);
    clt__twice(n);
    if (n)
        opts_to_node(c->o, n);
    return st;
}

static clt_status half_conv(const char *fn, bool transposed, const clt_tensor *input,
                            const clt_tensor *weight, const clt_tensor *bias,
                            const clt__conv_opts *o, clt_tensor **out);

static bool all_half(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b)
{
    return clt__dtype_is_half(x->dtype) && w->dtype == x->dtype && (!b || b->dtype == x->dtype);
}

/* A convolution of nd (2 or 3) spatial dims, batched or not, recorded. */
static clt_status conv_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt__conv_opts *o, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(weight, fn);
    if (input->ndim != o->nd + 1 && input->ndim != o->nd + 2) {
        char s[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected %dD (unbatched) or %dD (batched) input to conv%dd, but "
                          "got input of size: %s",
                          fn, o->nd + 1, o->nd + 2, o->nd,
                          clt__shape_str(s, sizeof s, input->ndim, input->shape));
    }
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_LOWER), 3, (input, weight, bias),
                  conv_rec(fn, CLT__AC(0), CLT__AC(1), CLT__AC(2), o, out));
    if (all_half(input, weight, bias))
        return half_conv(fn, false, input, weight, bias, o, out);
    conv_ctx c = {weight, bias, o, fn};
    clt_status st = batched_nd(input, o->nd + 2, conv_batched, &c, out, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__conv2d_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt_conv2d_opts *opts, clt_tensor **out)
{
    const clt_conv2d_opts defaults = CLT_CONV2D_DEFAULTS;
    const clt_conv2d_opts *p = opts ? opts : &defaults;
    clt__conv_opts o = {2, {0}, {0}, {0}, {0}, p->groups};
    memcpy(o.stride, p->stride, sizeof p->stride);
    memcpy(o.padding, p->padding, sizeof p->padding);
    memcpy(o.dilation, p->dilation, sizeof p->dilation);
    return conv_rec(fn, input, weight, bias, &o, out);
}

clt_status clt_conv2d(const clt_tensor *input, const clt_tensor *weight, const clt_tensor *bias,
                      const clt_conv2d_opts *opts, clt_tensor **out)
{
    return clt__conv2d_rec("clt_conv2d", input, weight, bias, opts, out);
}

clt_status clt__conv3d_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt_conv3d_opts *opts, clt_tensor **out)
{
    const clt_conv3d_opts defaults = CLT_CONV3D_DEFAULTS;
    const clt_conv3d_opts *p = opts ? opts : &defaults;
    clt__conv_opts o = {3, {0}, {0}, {0}, {0}, p->groups};
    memcpy(o.stride, p->stride, sizeof p->stride);
    memcpy(o.padding, p->padding, sizeof p->padding);
    memcpy(o.dilation, p->dilation, sizeof p->dilation);
    return conv_rec(fn, input, weight, bias, &o, out);
}

clt_status clt_conv3d(const clt_tensor *input, const clt_tensor *weight, const clt_tensor *bias,
                      const clt_conv3d_opts *opts, clt_tensor **out)
{
    return clt__conv3d_rec("clt_conv3d", input, weight, bias, opts, out);
}

/* ---- conv1d and conv_transpose1d: the 2-D ops on [.., 1, L] ------------------------ */

/* The 1-D op on [N, C, L] or [C, L] as the 2-D one on [N, C, 1, L], the
 * weight [., ., k] as [., ., 1, k] (recorded views: the gradients flow
 * back through them); name is "conv1d" or "conv_transpose1d". */
static clt_status via_2d(const char *fn, const char *name, const clt_tensor *input,
                         const clt_tensor *weight, const clt_tensor *bias, bool transposed,
                         const clt__conv_opts *o2, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(weight, fn);
    char s[160];
    if (input->ndim != 2 && input->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 2D (unbatched) or 3D (batched) input to %s, but got "
                          "input of size: %s",
                          fn, name, clt__shape_str(s, sizeof s, input->ndim, input->shape));
    if (weight->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected weight to be 3-dimensional [%s, k], but got weight of "
                          "size %s",
                          fn,
                          transposed ? "in_channels, out_channels / groups"
                                     : "out_channels, in_channels / groups",
                          clt__shape_str(s, sizeof s, weight->ndim, weight->shape));
    int d = input->ndim - 1;
    clt_tensor *x4 = NULL, *w4 = NULL, *y4 = NULL;
    clt_status st = clt__unsqueeze_rec(fn, input, d, &x4);
    if (st == CLT_OK)
        st = clt__unsqueeze_rec(fn, weight, 2, &w4);
    if (st == CLT_OK)
        st = transposed ? conv_transpose_rec(fn, x4, w4, bias, o2, &y4)
                        : conv_rec(fn, x4, w4, bias, o2, &y4);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, y4, d, out);
    clt_tensor_free(x4);
    clt_tensor_free(w4);
    clt_tensor_free(y4);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__conv1d_rec(const char *fn, const clt_tensor *input, const clt_tensor *weight,
                           const clt_tensor *bias, const clt_conv1d_opts *opts, clt_tensor **out)
{
    const clt_conv1d_opts defaults = CLT_CONV1D_DEFAULTS;
    const clt_conv1d_opts *o = opts ? opts : &defaults;
    clt__conv_opts o2 = {2, {1, o->stride}, {0, o->padding}, {1, o->dilation}, {0, 0}, o->groups};
    return via_2d(fn, "conv1d", input, weight, bias, false, &o2, out);
}

clt_status clt_conv1d(const clt_tensor *input, const clt_tensor *weight, const clt_tensor *bias,
                      const clt_conv1d_opts *opts, clt_tensor **out)
{
    return clt__conv1d_rec("clt_conv1d", input, weight, bias, opts, out);
}

clt_status clt__conv_transpose1d_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt_conv_transpose1d_opts *opts, clt_tensor **out)
{
    const clt_conv_transpose1d_opts defaults = CLT_CONV_TRANSPOSE1D_DEFAULTS;
    const clt_conv_transpose1d_opts *o = opts ? opts : &defaults;
    clt__conv_opts o2 = {2,         {1, o->stride}, {0, o->padding}, {1, o->dilation},
                         {0, o->output_padding}, o->groups};
    return via_2d(fn, "conv_transpose1d", input, weight, bias, true, &o2, out);
}

clt_status clt_conv_transpose1d(const clt_tensor *input, const clt_tensor *weight,
                                const clt_tensor *bias, const clt_conv_transpose1d_opts *opts,
                                clt_tensor **out)
{
    return clt__conv_transpose1d_rec("clt_conv_transpose1d", input, weight, bias, opts, out);
}

/* ---- transposed convolution (2-D and 3-D) ------------------------------------------- */

/* saved: input and weight.  The input's gradient is the convolution of the
 * output's gradient, the weight's the convolution's weight gradient with
 * the roles of input and output gradient exchanged, the bias's the sum
 * over N and the spatial dims. */
static clt_status bw_conv_transpose(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->twice && clt__creating_graph())
        return conv_transpose_twice(n, g, gin);
    clt__conv_opts o = opts_from_node(n);
    return clt__conv_transpose_backward(g, S(0), S(1), &o, CLT__NEED(n, 0) ? &gin[0] : NULL,
                                        CLT__NEED(n, 1) ? &gin[1] : NULL,
                                        n->nin > 2 && CLT__NEED(n, 2) ? &gin[2] : NULL);
}

static clt_status transposed_batched(const clt_tensor *x, const void *ctx, clt_tensor **out)
{
    const conv_ctx *c = ctx;
    const clt_tensor *in[3] = {x, c->w, c->b};
    clt__node *n = NULL;
    clt_status st = clt__conv_transpose(x, c->w, c->b, c->o, out, c->fn);
    st = clt__record(st, out, "ConvolutionBackward0", bw_conv_transpose, c->b ? 3 : 2, in, 2,
                     in, &n);
    clt__twice(n);
    if (n)
        opts_to_node(c->o, n);
    return st;
}

static clt_status conv_transpose_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt__conv_opts *o, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(weight, fn);
    if (input->ndim != o->nd + 1 && input->ndim != o->nd + 2) {
        char s[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected %dD (unbatched) or %dD (batched) input to "
                          "conv_transpose%dd, but got input of size: %s",
                          fn, o->nd + 1, o->nd + 2, o->nd,
                          clt__shape_str(s, sizeof s, input->ndim, input->shape));
    }
    CLT__AUTOCAST(fn, CLT__AC_ON(CLT__AC_LOWER, CLT__AC_FLOAT32), 3, (input, weight, bias),
                  conv_transpose_rec(fn, CLT__AC(0), CLT__AC(1), CLT__AC(2), o, out));
    if (all_half(input, weight, bias))
        return half_conv(fn, true, input, weight, bias, o, out);
    conv_ctx c = {weight, bias, o, fn};
    clt_status st = batched_nd(input, o->nd + 2, transposed_batched, &c, out, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* A convolution of float16 operands: the float32 one of the widened
 * operands (GEMM in float32) rounded to half once, as torch's GPU
 * convolutions accumulate in float; the casts are recorded, so the
 * gradients come back in half. */
static clt_status half_conv(const char *fn, bool transposed, const clt_tensor *input,
                            const clt_tensor *weight, const clt_tensor *bias,
                            const clt__conv_opts *o, clt_tensor **out)
{
    clt_tensor *xw = NULL, *ww = NULL, *bw = NULL, *r = NULL;
    clt_status st = clt__to_dtype_rec(fn, input, CLT_FLOAT32, &xw);
    if (st == CLT_OK)
        st = clt__to_dtype_rec(fn, weight, CLT_FLOAT32, &ww);
    if (st == CLT_OK && bias)
        st = clt__to_dtype_rec(fn, bias, CLT_FLOAT32, &bw);
    /* the float32 convolution inside is not autocast's to cast back */
    clt__autocast_suspend(1);
    if (st == CLT_OK)
        st = transposed ? conv_transpose_rec(fn, xw, ww, bw, o, &r)
                        : conv_rec(fn, xw, ww, bw, o, &r);
    clt__autocast_suspend(0);
    clt_tensor_free(ww);
    clt_tensor_free(bw);
    return clt__half_finish(fn, input->dtype, st, xw, r, out, NULL);
}

clt_status clt__conv_transpose2d_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt_conv_transpose2d_opts *opts, clt_tensor **out)
{
    const clt_conv_transpose2d_opts defaults = CLT_CONV_TRANSPOSE2D_DEFAULTS;
    const clt_conv_transpose2d_opts *p = opts ? opts : &defaults;
    clt__conv_opts o = {2, {0}, {0}, {0}, {0}, p->groups};
    memcpy(o.stride, p->stride, sizeof p->stride);
    memcpy(o.padding, p->padding, sizeof p->padding);
    memcpy(o.dilation, p->dilation, sizeof p->dilation);
    memcpy(o.output_padding, p->output_padding, sizeof p->output_padding);
    return conv_transpose_rec(fn, input, weight, bias, &o, out);
}

clt_status clt_conv_transpose2d(const clt_tensor *input, const clt_tensor *weight,
                                const clt_tensor *bias, const clt_conv_transpose2d_opts *opts,
                                clt_tensor **out)
{
    return clt__conv_transpose2d_rec("clt_conv_transpose2d", input, weight, bias, opts, out);
}

clt_status clt__conv_transpose3d_rec(const char *fn, const clt_tensor *input,
                                     const clt_tensor *weight, const clt_tensor *bias,
                                     const clt_conv_transpose3d_opts *opts, clt_tensor **out)
{
    const clt_conv_transpose3d_opts defaults = CLT_CONV_TRANSPOSE3D_DEFAULTS;
    const clt_conv_transpose3d_opts *p = opts ? opts : &defaults;
    clt__conv_opts o = {3, {0}, {0}, {0}, {0}, p->groups};
    memcpy(o.stride, p->stride, sizeof p->stride);
    memcpy(o.padding, p->padding, sizeof p->padding);
    memcpy(o.dilation, p->dilation, sizeof p->dilation);
    memcpy(o.output_padding, p->output_padding, sizeof p->output_padding);
    return conv_transpose_rec(fn, input, weight, bias, &o, out);
}

clt_status clt_conv_transpose3d(const clt_tensor *input, const clt_tensor *weight,
                                const clt_tensor *bias, const clt_conv_transpose3d_opts *opts,
                                clt_tensor **out)
{
    return clt__conv_transpose3d_rec("clt_conv_transpose3d", input, weight, bias, opts, out);
}

/* ---- pooling ------------------------------------------------------------------------ */

static void pool_to_node(const clt__pool2d *p, clt__node *n)
{
    int64_t v[10] = {p->kernel[0],   p->kernel[1],   p->stride[0],   p->stride[1],
                     p->padding[0],  p->padding[1],  p->dilation[0], p->dilation[1],
                     p->ceil_mode,   p->count_include_pad};
    for (int k = 0; k < 10; k++)
        n->i[k] = v[k];
}

static clt__pool2d pool_from_node(const clt__node *n)
{
    clt__pool2d p = {{n->i[0], n->i[1]}, {n->i[2], n->i[3]}, {n->i[4], n->i[5]},
                     {n->i[6], n->i[7]}, (int)n->i[8], (int)n->i[9]};
    return p;
}

/* Both poolings' gradients are linear in g: a scatter of g (max, by the
 * indices) or a spread of it over the windows (avg), whose own gradient is
 * the transpose: a gather by the same indices, or the average pooling
 * itself.  In a pass that creates a graph each formula records its result
 * as a node whose formula is the other one, so that every order can be
 * taken (clt__twice); a pooling node's input has the input's shape, as the
 * forward's. */
static clt_status bw_max_pool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_avg_pool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* A pooling's own node (not one of its formulas' nodes) saves the pooling's
 * input last and says so here: in a pass that creates a graph its
 * gradient then depends on that input too, with derivative zero, as
 * torch's (whose backward ops read self), so that it has a grad_fn even
 * when g has none. */
#define POOL_INPUT_SAVED(n) ((n)->i[2 * CLT_MAX_DIMS + 1])

/* The saved tensors of n but the pooling's input. */
static int pool_nsaved(const clt__node *n)
{
    return n->nsaved - (POOL_INPUT_SAVED(n) ? 1 : 0);
}

/* *gin, a pooling's gradient, made to depend on the pooling's input, in a
 * pass that creates a graph. */
static clt_status pool_input_edge(clt__node *n, const char *name, clt_tensor **gin)
{
    if (!POOL_INPUT_SAVED(n) || !clt__creating_graph())
        return CLT_OK;
    return clt__grad_node(name, 1, (const clt_tensor *const *)&n->saved[n->nsaved - 1], gin);
}
static clt_status bw_max_pool2d_gather(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_avg_pool2d_pool(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* Records *out = a formula's result on g as a node named name with the
 * pooling parameters of n and its saved indices (max pooling). */
static clt_status pool_record(const clt__node *n, const char *name, clt__backward_fn bw,
                              const clt_tensor *g, clt_tensor **out)
{
    clt__node *m = NULL;
    const clt_tensor *idx = pool_nsaved(n) ? S(0) : NULL;
    clt_status st = clt__record(CLT_OK, out, name, bw, 1, &g, idx ? 1 : 0, &idx, &m);
    if (m) {
        clt__pool2d p = pool_from_node(n);
        pool_to_node(&p, m);
    }
    clt__twice(m);
    return st;
}

/* saved: the argmax indices; the input's shape is its edge's. */
static clt_status bw_max_pool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__pool2d p = pool_from_node(n);
    clt_status st = clt__max_pool2d_backward(g, S(0), n->in[0].shape, &p, &gin[0]);
    if (st == CLT_OK && n->twice && clt__creating_graph())
        st = pool_record(n, "MaxPool2DWithIndicesBackwardBackward0", bw_max_pool2d_gather, g,
                         &gin[0]);
    if (st == CLT_OK && n->twice)
        st = pool_input_edge(n, "MaxPool2DWithIndicesBackwardBackward0", &gin[0]);
    return st;
}

/* The gradient of max pooling's formula: g (the input's shape) gathered at
 * the indices, in each plane. */
static clt_status bw_max_pool2d_gather(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *idx = S(0);
    int64_t gs[3] = {g->shape[0], g->shape[1], g->shape[2] * g->shape[3]};
    int64_t is[3] = {idx->shape[0], idx->shape[1], idx->shape[2] * idx->shape[3]};
    clt_tensor *gf = NULL, *ixf = NULL, *r = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape(g, 3, gs, &gf, fn));
    CLT__TRY(clt__reshape(idx, 3, is, &ixf, fn));
    CLT__TRY(clt__gather(gf, 2, ixf, &r, fn));
    CLT__TRY(clt__reshape(r, 4, idx->shape, &gin[0], fn));
    if (clt__creating_graph())
        CLT__TRY(pool_record(n, "MaxPool2DWithIndicesBackward0", bw_max_pool2d, g, &gin[0]));
done:
    clt_tensor_free(gf);
    clt_tensor_free(ixf);
    clt_tensor_free(r);
    return st;
}

static clt_status bw_avg_pool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__pool2d p = pool_from_node(n);
    clt_status st = clt__avg_pool2d_backward(g, n->in[0].shape, &p, &gin[0]);
    if (st == CLT_OK && n->twice && clt__creating_graph())
        st = pool_record(n, "AvgPool2DBackwardBackward0", bw_avg_pool2d_pool, g, &gin[0]);
    if (st == CLT_OK && n->twice)
        st = pool_input_edge(n, "AvgPool2DBackwardBackward0", &gin[0]);
    return st;
}

/* The gradient of average pooling's formula: the pooling of g. */
static clt_status bw_avg_pool2d_pool(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__pool2d p = pool_from_node(n);
    clt_status st = clt__avg_pool2d(g, &p, &gin[0]);
    if (st == CLT_OK && clt__creating_graph())
        st = pool_record(n, "AvgPool2DBackward0", bw_avg_pool2d, g, &gin[0]);
    return st;
}

typedef struct pool_ctx {
    clt__pool2d p;
    bool max;
    const char *fn;
    clt_tensor **indices; /* or NULL: where max pooling hands out its indices */
} pool_ctx;

static clt_status pool4(const clt_tensor *x, const void *ctx, clt_tensor **out)
{
    const pool_ctx *c = ctx;
    clt__pool2d p = c->p;
    clt__node *n = NULL;
    clt_status st = clt__pool2d_check(x, &p, !c->max, c->fn);
    if (st != CLT_OK)
        return st;
    if (c->max) {
        clt_tensor *idx = NULL;
        const clt_tensor *saved[2] = {NULL, x};
        st = clt__max_pool2d(x, &p, out, &idx);
        saved[0] = idx;
        st = clt__record(st, out, "MaxPool2DWithIndicesBackward0", bw_max_pool2d, 1, &x, 2,
                         saved, &n);
        if (st == CLT_OK && c->indices)
            *c->indices = idx;
        else
            clt_tensor_free(idx);
    } else {
        st = clt__record(clt__avg_pool2d(x, &p, out), out, "AvgPool2DBackward0", bw_avg_pool2d,
                         1, &x, 1, &x, &n);
    }
    if (n) {
        pool_to_node(&p, n);
        POOL_INPUT_SAVED(n) = 1;
    }
    clt__twice(n);
    return st;
}

/* Squeezes dim d out of *t, in its place: the indices of a pooling of an
 * unbatched or 1-D input (they require no grad: nothing is recorded). */
static clt_status squeeze_indices(const char *fn, int d, clt_tensor **t)
{
    clt_tensor *s = NULL;
    clt_status st = clt__squeeze_rec(fn, *t, d, &s);
    clt_tensor_free(*t);
    *t = s;
    return st;
}

/* On failure, releases what a pooling with indices had made. */
static clt_status drop_on_failure(clt_status st, clt_tensor **out, clt_tensor **indices)
{
    if (st != CLT_OK && indices) {
        clt_tensor_free(*indices);
        *indices = NULL;
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* clt__pool2d_rec, handing out max pooling's indices too when indices is
 * not NULL (shaped as the output). */
static clt_status pool2d_in(const char *fn, bool max, const clt_tensor *input,
                            const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                            const int64_t *dilation, int ceil_mode, int count_include_pad,
                            clt_tensor **out, clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(kernel, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, indices,
                          pool2d_in(fn, max, clt__hx, kernel, stride, padding, dilation,
                                    ceil_mode, count_include_pad, &clt__hr, indices));
    if (input->ndim != 3 && input->ndim != 4) {
        char s[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: non-empty 3D or 4D (batch mode) tensor expected for input, but "
                          "got input of size: %s",
                          fn, clt__shape_str(s, sizeof s, input->ndim, input->shape));
    }
    pool_ctx c = {{{kernel[0], kernel[1]},
                   {stride ? stride[0] : 0, stride ? stride[1] : 0},
                   {padding ? padding[0] : 0, padding ? padding[1] : 0},
                   {dilation ? dilation[0] : 1, dilation ? dilation[1] : 1},
                   ceil_mode != 0,
                   count_include_pad != 0},
                  max,
                  fn,
                  indices};
    clt_status st = batched(input, pool4, &c, out, fn);
    if (st == CLT_OK && indices && input->ndim == 3)
        st = squeeze_indices(fn, 0, indices);
    return drop_on_failure(st, out, indices);
}

clt_status clt__pool2d_rec(const char *fn, bool max, const clt_tensor *input,
                           const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                           const int64_t *dilation, int ceil_mode, int count_include_pad,
                           clt_tensor **out)
{
    return pool2d_in(fn, max, input, kernel, stride, padding, dilation, ceil_mode,
                     count_include_pad, out, NULL);
}

clt_status clt_max_pool2d(const clt_tensor *input, const int64_t kernel[2],
                          const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2], int ceil_mode, clt_tensor **out)
{
    return clt__pool2d_rec("clt_max_pool2d", true, input, kernel, stride, padding, dilation,
                           ceil_mode, 1, out);
}

clt_status clt_avg_pool2d(const clt_tensor *input, const int64_t kernel[2],
                          const int64_t stride[2], const int64_t padding[2], int ceil_mode,
                          int count_include_pad, clt_tensor **out)
{
    return clt__pool2d_rec("clt_avg_pool2d", false, input, kernel, stride, padding, NULL,
                           ceil_mode, count_include_pad, out);
}

/* clt__pool1d_rec, with max pooling's indices as pool2d_in's. */
static clt_status pool1d_in(const char *fn, bool max, const clt_tensor *input, int64_t kernel,
                            int64_t stride, int64_t padding, int64_t dilation, int ceil_mode,
                            int count_include_pad, clt_tensor **out, clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    if (input->ndim != 2 && input->ndim != 3) {
        char s[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 2D or 3D input tensor, but got %s", fn,
                          clt__shape_str(s, sizeof s, input->ndim, input->shape));
    }
    /* [N, C, L] as [N, C, 1, L], through recorded views */
    int64_t k[2] = {1, kernel}, st2[2] = {1, stride ? stride : kernel}, pad[2] = {0, padding};
    int64_t dil[2] = {1, dilation};
    int d = input->ndim - 1;
    clt_tensor *x4 = NULL, *y4 = NULL;
    clt_status st = clt__unsqueeze_rec(fn, input, d, &x4);
    if (st == CLT_OK)
        st = pool2d_in(fn, max, x4, k, st2, pad, max ? dil : NULL, ceil_mode,
                       count_include_pad, &y4, indices);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, y4, d, out);
    if (st == CLT_OK && indices)
        st = squeeze_indices(fn, d, indices);
    clt_tensor_free(x4);
    clt_tensor_free(y4);
    return drop_on_failure(st, out, indices);
}

clt_status clt__pool1d_rec(const char *fn, bool max, const clt_tensor *input, int64_t kernel,
                           int64_t stride, int64_t padding, int64_t dilation, int ceil_mode,
                           int count_include_pad, clt_tensor **out)
{
    return pool1d_in(fn, max, input, kernel, stride, padding, dilation, ceil_mode,
                     count_include_pad, out, NULL);
}

clt_status clt_max_pool1d(const clt_tensor *input, int64_t kernel, int64_t stride,
                          int64_t padding, int64_t dilation, int ceil_mode, clt_tensor **out)
{
    return clt__pool1d_rec("clt_max_pool1d", true, input, kernel, stride, padding, dilation,
                           ceil_mode, 1, out);
}

clt_status clt_avg_pool1d(const clt_tensor *input, int64_t kernel, int64_t stride,
                          int64_t padding, int ceil_mode, int count_include_pad, clt_tensor **out)
{
    return clt__pool1d_rec("clt_avg_pool1d", false, input, kernel, stride, padding, 1, ceil_mode,
                           count_include_pad, out);
}

/* ---- adaptive average pooling ----------------------------------------------------------- */

/* Records *out, a formula's result on g, as a node named name whose
 * formula is bw, with n's saved tensors (adaptive max pooling's indices),
 * for double backward. */
static clt_status adaptive_record(const clt__node *n, const char *name, clt__backward_fn bw,
                                  const clt_tensor *g, clt_tensor **out)
{
    clt__node *m = NULL;
    const clt_tensor *idx = pool_nsaved(n) ? S(0) : NULL;
    clt_status st = clt__record(CLT_OK, out, name, bw, 1, &g, idx ? 1 : 0, &idx, &m);
    clt__twice(m);
    return st;
}

static clt_status bw_adaptive_avg_pool2d_pool(clt__node *n, const clt_tensor *g,
                                              clt_tensor **gin);

/* nothing saved: the input's shape is its edge's, the output's g's.  The
 * formula is linear in g; its gradient is the pooling itself. */
static clt_status bw_adaptive_avg_pool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = clt__adaptive_avg_pool2d_backward(g, n->in[0].shape, &gin[0]);
    if (st == CLT_OK && n->twice && clt__creating_graph())
        st = adaptive_record(n, "AdaptiveAvgPool2DBackwardBackward0",
                             bw_adaptive_avg_pool2d_pool, g, &gin[0]);
    if (st == CLT_OK && n->twice)
        st = pool_input_edge(n, "AdaptiveAvgPool2DBackwardBackward0", &gin[0]);
    return st;
}

/* The gradient of adaptive average pooling's formula: g (the input's
 * shape) pooled to the size of the formula's input (the output's). */
static clt_status bw_adaptive_avg_pool2d_pool(clt__node *n, const clt_tensor *g,
                                              clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    int64_t size[2] = {e->shape[e->ndim - 2], e->shape[e->ndim - 1]};
    clt_status st = clt__adaptive_avg_pool2d(g, size, &gin[0], "clt_backward");
    if (st == CLT_OK && clt__creating_graph())
        st = adaptive_record(n, "AdaptiveAvgPool2DBackward0", bw_adaptive_avg_pool2d, g,
                             &gin[0]);
    return st;
}

typedef struct adaptive_ctx {
    const int64_t *size;
    const char *fn;
} adaptive_ctx;

static clt_status adaptive4(const clt_tensor *x, const void *ctx, clt_tensor **out)
{
    const adaptive_ctx *c = ctx;
    clt__node *n = NULL;
    clt_status st = clt__record(clt__adaptive_avg_pool2d(x, c->size, out, c->fn), out,
                                "AdaptiveAvgPool2DBackward0", bw_adaptive_avg_pool2d, 1, &x, 1,
                                &x, &n);
    if (n)
        POOL_INPUT_SAVED(n) = 1;
    clt__twice(n);
    return st;
}

clt_status clt__adaptive_avg_pool2d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(output_size, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, NULL,
                          clt__adaptive_avg_pool2d_rec(fn, clt__hx, output_size, &clt__hr));
    clt_status st = clt__adaptive_pool2d_check(input, output_size, fn);
    if (st != CLT_OK)
        return st;
    adaptive_ctx c = {output_size, fn};
    st = batched(input, adaptive4, &c, out, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_adaptive_avg_pool2d(const clt_tensor *input, const int64_t output_size[2],
                                   clt_tensor **out)
{
    return clt__adaptive_avg_pool2d_rec("clt_adaptive_avg_pool2d", input, output_size, out);
}

/* ---- max pooling with indices, adaptive max pooling, max unpooling ---------------------- */

clt_status clt_max_pool2d_with_indices(const clt_tensor *input, const int64_t kernel[2],
                                       const int64_t stride[2], const int64_t padding[2],
                                       const int64_t dilation[2], int ceil_mode,
                                       clt_tensor **out, clt_tensor **indices)
{
    static const char fn[] = "clt_max_pool2d_with_indices";
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(indices, fn);
    return pool2d_in(fn, true, input, kernel, stride, padding, dilation, ceil_mode, 1, out,
                     indices);
}

clt_status clt_max_pool1d_with_indices(const clt_tensor *input, int64_t kernel, int64_t stride,
                                       int64_t padding, int64_t dilation, int ceil_mode,
                                       clt_tensor **out, clt_tensor **indices)
{
    static const char fn[] = "clt_max_pool1d_with_indices";
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(indices, fn);
    return pool1d_in(fn, true, input, kernel, stride, padding, dilation, ceil_mode, 1, out,
                     indices);
}

static clt_status bw_adaptive_max_pool2d_gather(clt__node *n, const clt_tensor *g,
                                                clt_tensor **gin);

/* saved: the argmax indices.  The gradient is the scatter_add of g into
 * zeros over each input plane, window after window: the order of
 * PyTorch's CPU backward, and the same bits on every device.  Its own
 * gradient gathers at the indices. */
static clt_status bw_adaptive_max_pool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt__edge *e = &n->in[0];
    int nd = e->ndim;
    int64_t planes[2] = {1, e->shape[nd - 2] * e->shape[nd - 1]};
    for (int d = 0; d < nd - 2; d++)
        planes[0] *= e->shape[d];
    int64_t outs[2] = {planes[0], g->shape[nd - 2] * g->shape[nd - 1]};
    clt_tensor *z = NULL, *g2 = NULL, *i2 = NULL, *r = NULL;
    clt_status st = clt__full(g->dev, g->dtype, 2, planes, 0.0, &z);
    if (st == CLT_OK)
        st = clt__reshape(g, 2, outs, &g2, fn);
    if (st == CLT_OK)
        st = clt__reshape(S(0), 2, outs, &i2, fn);
    if (st == CLT_OK)
        st = clt__scatter_add(z, 1, i2, g2, &r, fn);
    if (st == CLT_OK)
        st = clt__reshape(r, nd, e->shape, &gin[0], fn);
    if (st == CLT_OK && n->twice && clt__creating_graph())
        st = adaptive_record(n, "AdaptiveMaxPool2DBackwardBackward0",
                             bw_adaptive_max_pool2d_gather, g, &gin[0]);
    if (st == CLT_OK && n->twice)
        st = pool_input_edge(n, "AdaptiveMaxPool2DBackwardBackward0", &gin[0]);
    clt_tensor_free(z);
    clt_tensor_free(g2);
    clt_tensor_free(i2);
    clt_tensor_free(r);
    return st;
}

/* The gradient of adaptive max pooling's formula: g (the input's shape)
 * gathered at the saved indices in each plane, to the formula's input's
 * (the output's) shape. */
static clt_status bw_adaptive_max_pool2d_gather(clt__node *n, const clt_tensor *g,
                                                clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt__edge *e = &n->in[0];
    int nd = g->ndim;
    int64_t planes[2] = {1, g->shape[nd - 2] * g->shape[nd - 1]};
    for (int d = 0; d < nd - 2; d++)
        planes[0] *= g->shape[d];
    int64_t outs[2] = {planes[0], e->shape[nd - 2] * e->shape[nd - 1]};
    clt_tensor *g2 = NULL, *i2 = NULL, *r = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape(g, 2, planes, &g2, fn));
    CLT__TRY(clt__reshape(S(0), 2, outs, &i2, fn));
    CLT__TRY(clt__gather(g2, 1, i2, &r, fn));
    CLT__TRY(clt__reshape(r, e->ndim, e->shape, &gin[0], fn));
    if (clt__creating_graph())
        CLT__TRY(adaptive_record(n, "AdaptiveMaxPool2DBackward0", bw_adaptive_max_pool2d, g,
                                 &gin[0]));
done:
    clt_tensor_free(g2);
    clt_tensor_free(i2);
    clt_tensor_free(r);
    return st;
}

/* An unbatched input runs as a batch of one through plain views, so that
 * its result's node is AdaptiveMaxPool2DBackward0, as torch's. */
clt_status clt__adaptive_max_pool2d_rec(const char *fn, const clt_tensor *input,
                                        const int64_t *output_size, clt_tensor **out,
                                        clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(output_size, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, indices,
                          clt__adaptive_max_pool2d_rec(fn, clt__hx, output_size, &clt__hr,
                                                       indices));
    clt_status st = clt__adaptive_pool2d_check(input, output_size, fn);
    if (st != CLT_OK)
        return st;
    int nd = input->ndim;
    int64_t s4[4] = {1, 1, 1, 1}, so[4];
    for (int d = 0; d < nd; d++)
        s4[4 - nd + d] = so[d] = input->shape[d];
    so[nd - 2] = output_size[0];
    so[nd - 1] = output_size[1];
    clt_tensor *x4 = NULL, *y4 = NULL, *i4 = NULL, *idx = NULL;
    st = clt__reshape(input, 4, s4, &x4, fn);
    if (st == CLT_OK)
        st = clt__adaptive_max_pool2d(x4, output_size, &y4, &i4, fn);
    if (st == CLT_OK)
        st = clt__reshape(y4, nd, so, out, fn);
    if (st == CLT_OK)
        st = clt__reshape(i4, nd, so, &idx, fn);
    const clt_tensor *saved[2] = {idx, input};
    clt__node *n = NULL;
    st = clt__record(st, out, "AdaptiveMaxPool2DBackward0", bw_adaptive_max_pool2d, 1, &input,
                     2, saved, &n);
    if (n)
        POOL_INPUT_SAVED(n) = 1;
    clt__twice(n);
    if (st == CLT_OK && indices)
        *indices = idx;
    else
        clt_tensor_free(idx);
    clt_tensor_free(x4);
    clt_tensor_free(y4);
    clt_tensor_free(i4);
    return drop_on_failure(st, out, indices);
}

clt_status clt_adaptive_max_pool2d(const clt_tensor *input, const int64_t output_size[2],
                                   clt_tensor **out, clt_tensor **indices)
{
    return clt__adaptive_max_pool2d_rec("clt_adaptive_max_pool2d", input, output_size, out,
                                        indices);
}

clt_status clt_adaptive_max_pool1d(const clt_tensor *input, int64_t output_size,
                                   clt_tensor **out, clt_tensor **indices)
{
    return clt__adaptive_max_pool1d_rec("clt_adaptive_max_pool1d", input, output_size, out,
                                        indices);
}

clt_status clt__adaptive_max_pool1d_rec(const char *fn, const clt_tensor *input,
                                        int64_t output_size, clt_tensor **out,
                                        clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    char s[160];
    if (input->ndim != 2 && input->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 2 to 3 dimensions, but got %d-dimensional tensor for "
                          "argument #1 'self' (while checking arguments for "
                          "adaptive_max_pool1d)",
                          fn, input->ndim);
    for (int d = 1; d < input->ndim; d++)
        if (input->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected input to have non-zero size for non-batch "
                              "dimensions, but input has sizes %s with dimension %d being empty",
                              fn, clt__shape_str(s, sizeof s, input->ndim, input->shape), d);
    /* [.., L] as [.., 1, L], as torch's unsqueeze(-2) */
    int d = input->ndim - 1;
    int64_t size[2] = {1, output_size};
    clt_tensor *x4 = NULL, *y4 = NULL;
    clt_status st = clt__unsqueeze_rec(fn, input, d, &x4);
    if (st == CLT_OK)
        st = clt__adaptive_max_pool2d_rec(fn, x4, size, &y4, indices);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, y4, d, out);
    if (st == CLT_OK && indices)
        st = squeeze_indices(fn, d, indices);
    clt_tensor_free(x4);
    clt_tensor_free(y4);
    return drop_on_failure(st, out, indices);
}

/* saved: the indices; i[0] planes, i[1] output and i[2] input elements per
 * plane.  Each input element's gradient is the output's gradient where it
 * was placed (a gather), as PyTorch's, recorded (clt__twice). */
static clt_status bw_max_unpool2d(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    int64_t gs[2] = {n->i[0], n->i[1]}, is[2] = {n->i[0], n->i[2]};
    clt_tensor *g2 = NULL, *i2 = NULL, *r = NULL;
    clt_status st = clt__reshape_rec(fn, g, 2, gs, &g2);
    if (st == CLT_OK)
        st = clt__reshape(S(0), 2, is, &i2, fn);
    if (st == CLT_OK)
        st = clt_gather(g2, 1, i2, &r);
    if (st == CLT_OK)
        st = clt__reshape_rec(fn, r, n->in[0].ndim, n->in[0].shape, &gin[0]);
    clt_tensor_free(g2);
    clt_tensor_free(i2);
    clt_tensor_free(r);
    return st;
}

/* F.max_unpool1d/2d/3d's checks (torch's words, the op named by k) and
 * the output size from kernel, stride (NULL or 0: the kernel) and padding
 * (NULL: 0), or output_size (NULL: the default) within a stride of it, for
 * the last k dims of x.  torch's 1-D and 2-D checks want the dims after the
 * first non-empty, its 3-D one the last four; a 3-D volume must count in
 * int64, as the plane of values it is scattered into. */
clt_status clt__unpool_size(const char *fn, int k, const clt_tensor *x, const clt_tensor *ix,
                            const int64_t *kernel, const int64_t *stride, const int64_t *padding,
                            const int64_t *output_size, int64_t *size)
{
    char s1[160], s2[160];
    clt_status st = clt__same_device(x, ix, fn);
    if (st != CLT_OK)
        return st;
    if (ix->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: elements in indices should be type int64 but got: %s", fn,
                          clt_dtype_name(ix->dtype));
    if (x->ndim != k + 1 && x->ndim != k + 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Input to max_unpooling%dd should be a %dd or %dd Tensor, but got "
                          "a tensor with %d dimensions.",
                          fn, k, k + 1, k + 2, x->ndim);
    if (x->ndim != ix->ndim || memcmp(x->shape, ix->shape, sizeof(int64_t) * (size_t)x->ndim))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected shape of indices to be same as that of the input tensor "
                          "(%s) but got indices tensor with shape: %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                          clt__shape_str(s2, sizeof s2, ix->ndim, ix->shape));
    for (int d = k == 3 ? x->ndim - 4 : 1; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected input to have non-zero size for non-batch "
                              "dimensions, but got %s with dimension %d being empty.",
                              fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape), d);
    for (int d = 0; d < k; d++) {
        int64_t kd = kernel[d], sd = stride && stride[d] ? stride[d] : kd;
        int64_t pd = padding ? padding[d] : 0, in = x->shape[x->ndim - k + d];
        if (kd <= 0 || sd <= 0 || pd < 0 || kd > INT32_MAX || sd > INT32_MAX ||
            pd > INT32_MAX || in > INT32_MAX)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: kernel_size %lld, stride %lld and padding %lld of dimension "
                              "%d: expected positive sizes and padding >= 0",
                              fn, (long long)kd, (long long)sd, (long long)pd, d);
        int64_t def = (in - 1) * sd + kd - 2 * pd;
        size[d] = output_size ? output_size[d] : def;
        if (output_size && !(def - sd < size[d] && size[d] < def + sd))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: invalid output_size (dim %d must be between %lld and %lld, "
                              "got %lld)",
                              fn, d, (long long)(def - sd), (long long)(def + sd),
                              (long long)size[d]);
        if (size[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: output size %lld of dimension %d is too small", fn,
                              (long long)size[d], d);
    }
    if (k == 3 && (size[0] > INT64_MAX / size[1] || size[0] * size[1] > INT64_MAX / size[2]))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: output size %lld x %lld x %lld passes int64", fn,
                          (long long)size[0], (long long)size[1], (long long)size[2]);
    return CLT_OK;
}

/* The unpooling of x (checked) into [.., size[0], size[1]]: each plane's
 * values scattered to their indices over zeros (a later index of a plane
 * wins where two coincide, as in PyTorch's CPU loop), recorded as
 * MaxUnpool2DBackward0. */
static clt_status unpool2d(const char *fn, const clt_tensor *x, const clt_tensor *ix,
                           const int64_t *size, clt_tensor **out)
{
    int nd = x->ndim;
    int64_t inplane = x->shape[nd - 2] * x->shape[nd - 1], outplane = size[0] * size[1];
    int64_t P = x->numel / inplane, shape[CLT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 2] = size[0];
    shape[nd - 1] = size[1];
    int64_t s_in[2] = {P, inplane}, s_out[2] = {P, outplane};
    clt_tensor *x2 = NULL, *i2 = NULL, *z = NULL, *r = NULL;
    clt_status st = clt__reshape(x, 2, s_in, &x2, fn);
    if (st == CLT_OK)
        st = clt__reshape(ix, 2, s_in, &i2, fn);
    if (st == CLT_OK)
        st = clt__full(x->dev, x->dtype, 2, s_out, 0.0, &z);
    if (st == CLT_OK)
        st = clt__scatter(z, 1, i2, x2, &r, fn);
    if (st == CLT_OK)
        st = clt__reshape(r, nd, shape, out, fn);
    clt_tensor_free(x2);
    clt_tensor_free(i2);
    clt_tensor_free(z);
    clt_tensor_free(r);
    clt__node *n = NULL;
    st = clt__record(st, out, "MaxUnpool2DBackward0", bw_max_unpool2d, 1, &x, 1, &ix, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = P;
        n->i[1] = outplane;
        n->i[2] = inplane;
    }
    return st;
}

clt_status clt_max_unpool2d(const clt_tensor *input, const clt_tensor *indices,
                            const int64_t kernel[2], const int64_t stride[2],
                            const int64_t padding[2], const int64_t output_size[2],
                            clt_tensor **out)
{
    CLT__AUTOCAST("clt_max_unpool2d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
                  clt_max_unpool2d(CLT__AC(0), indices, kernel, stride, padding, output_size, out));
    return clt__max_unpool2d_rec("clt_max_unpool2d", input, indices, kernel, stride, padding,
                                 output_size, out);
}

clt_status clt__max_unpool2d_rec(const char *fn, const clt_tensor *input,
                                 const clt_tensor *indices, const int64_t *kernel,
                                 const int64_t *stride, const int64_t *padding,
                                 const int64_t *output_size, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(indices, fn);
    CLT__REQUIRE_ARG(kernel, fn);
    int64_t size[2];
    clt_status st =
        clt__unpool_size(fn, 2, input, indices, kernel, stride, padding, output_size, size);
    if (st == CLT_OK)
        st = unpool2d(fn, input, indices, size, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_max_unpool1d(const clt_tensor *input, const clt_tensor *indices, int64_t kernel,
                            int64_t stride, int64_t padding, const int64_t *output_size,
                            clt_tensor **out)
{
    CLT__AUTOCAST("clt_max_unpool1d", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (input),
                  clt_max_unpool1d(CLT__AC(0), indices, kernel, stride, padding, output_size, out));
    return clt__max_unpool1d_rec("clt_max_unpool1d", input, indices, kernel, stride, padding,
                                 output_size, out);
}

clt_status clt__max_unpool1d_rec(const char *fn, const clt_tensor *input,
                                 const clt_tensor *indices, int64_t kernel, int64_t stride,
                                 int64_t padding, const int64_t *output_size, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(indices, fn);
    int64_t size[2] = {0, 1};
    clt_status st = clt__unpool_size(fn, 1, input, indices, &kernel, &stride, &padding,
                                     output_size, size);
    if (st != CLT_OK)
        return st;
    /* [.., L] as [.., L, 1] and back, as torch's F.max_unpool1d */
    int d = input->ndim;
    clt_tensor *x2 = NULL, *i2 = NULL, *y2 = NULL;
    st = clt__unsqueeze_rec(fn, input, d, &x2);
    if (st == CLT_OK)
        st = clt__unsqueeze_rec(fn, indices, d, &i2);
    if (st == CLT_OK)
        st = unpool2d(fn, x2, i2, size, &y2);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, y2, d, out);
    clt_tensor_free(x2);
    clt_tensor_free(i2);
    clt_tensor_free(y2);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- unfold and fold ----------------------------------------------------------------- */

/* i[0..1] the kernel, i[2..7] dilation, padding and stride, i[8..9] the
 * unfolded image's height and width (fold's output size): each op's
 * gradient is the other. */
static void blocks_node(clt__node *n, const int64_t *k, const clt_fold_opts *o,
                        const int64_t *size)
{
    int64_t v[10] = {k[0],          k[1],          o->dilation[0], o->dilation[1], o->padding[0],
                     o->padding[1], o->stride[0],  o->stride[1],   size[0],        size[1]};
    for (int j = 0; j < 10; j++)
        n->i[j] = v[j];
}

static clt_fold_opts blocks_opts(const clt__node *n)
{
    clt_fold_opts o = {{n->i[2], n->i[3]}, {n->i[4], n->i[5]}, {n->i[6], n->i[7]}};
    return o;
}

static clt_status bw_unfold(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_fold_opts o = blocks_opts(n);
    return clt__fold_rec("clt_backward", g, &n->i[8], &n->i[0], &o, &gin[0]);
}

static clt_status bw_fold(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_fold_opts o = blocks_opts(n);
    return clt__unfold_rec("clt_backward", g, &n->i[0], &o, &gin[0]);
}

clt_status clt__unfold_rec(const char *fn, const clt_tensor *input, const int64_t *kernel_size,
                           const clt_fold_opts *opts, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(kernel_size, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, NULL,
                          clt__unfold_rec(fn, clt__hx, kernel_size, opts, &clt__hr));
    const clt_fold_opts defaults = CLT_FOLD_DEFAULTS;
    const clt_fold_opts *o = opts ? opts : &defaults;
    clt__node *n = NULL;
    clt_status st = clt__unfold(input, kernel_size, o, out, fn);
    st = clt__record(st, out, "Im2ColBackward0", bw_unfold, 1, &input, 0, NULL, &n);
    clt__twice(n);
    if (n)
        blocks_node(n, kernel_size, o, input->shape + input->ndim - 2);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_unfold(const clt_tensor *input, const int64_t kernel_size[2],
                      const clt_fold_opts *opts, clt_tensor **out)
{
    return clt__unfold_rec("clt_unfold", input, kernel_size, opts, out);
}

clt_status clt__fold_rec(const char *fn, const clt_tensor *input, const int64_t *output_size,
                         const int64_t *kernel_size, const clt_fold_opts *opts, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(output_size, fn);
    CLT__REQUIRE_ARG(kernel_size, fn);
    CLT__HALF_VIA_FLOAT32(fn, input, out, NULL,
                          clt__fold_rec(fn, clt__hx, output_size, kernel_size, opts, &clt__hr));
    const clt_fold_opts defaults = CLT_FOLD_DEFAULTS;
    const clt_fold_opts *o = opts ? opts : &defaults;
    clt__node *n = NULL;
    clt_status st = clt__fold(input, output_size, kernel_size, o, out, fn);
    st = clt__record(st, out, "Col2ImBackward0", bw_fold, 1, &input, 0, NULL, &n);
    clt__twice(n);
    if (n)
        blocks_node(n, kernel_size, o, output_size);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_fold(const clt_tensor *input, const int64_t output_size[2],
                    const int64_t kernel_size[2], const clt_fold_opts *opts, clt_tensor **out)
{
    return clt__fold_rec("clt_fold", input, output_size, kernel_size, opts, out);
}
