/* shape.c: the rearranging layers (PixelShuffle, PixelUnshuffle,
 * ChannelShuffle, Unfold, Fold) over the recorded ops of conv.h, Bilinear
 * with clt_bilinear, composed of recorded matmuls, and EmbeddingBag over
 * clt_embedding_bag (index.h). */
#include <string.h>

#include "nn/nn.h"

/* ---- PixelShuffle, PixelUnshuffle, ChannelShuffle ------------------------------------ */

/* i[0]: the factor or the groups. */
static clt_status pixel_shuffle_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__pixel_shuffle_rec("PixelShuffle", x, m->i[0], false, out);
}

static clt_status pixel_unshuffle_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__pixel_shuffle_rec("PixelUnshuffle", x, m->i[0], true, out);
}

static clt_status channel_shuffle_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__channel_shuffle_rec("ChannelShuffle", x, m->i[0], out);
}

static const clt__module_ops pixel_shuffle_ops = {"PixelShuffle", pixel_shuffle_forward, NULL,
                                                  NULL};
static const clt__module_ops pixel_unshuffle_ops = {"PixelUnshuffle", pixel_unshuffle_forward,
                                                    NULL, NULL};
static const clt__module_ops channel_shuffle_ops = {"ChannelShuffle", channel_shuffle_forward,
                                                    NULL, NULL};

/* A layer of ops keeping v > 0 (what, torch's argument name) in i[0]. */
static clt_status positive_layer(const clt__module_ops *ops, int64_t v, const char *what,
                                 clt_module **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (v <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s must be positive, but got %lld", fn,
                          what, (long long)v);
    clt_status st = clt__module_new(ops, NULL, out);
    if (st == CLT_OK)
        (*out)->i[0] = v;
    return st;
}

clt_status clt_pixel_shuffle_layer(int64_t upscale_factor, clt_module **out)
{
    return positive_layer(&pixel_shuffle_ops, upscale_factor, "upscale_factor", out,
                          "clt_pixel_shuffle_layer");
}

clt_status clt_pixel_unshuffle_layer(int64_t downscale_factor, clt_module **out)
{
    return positive_layer(&pixel_unshuffle_ops, downscale_factor, "downscale_factor", out,
                          "clt_pixel_unshuffle_layer");
}

clt_status clt_channel_shuffle_layer(int64_t groups, clt_module **out)
{
    return positive_layer(&channel_shuffle_ops, groups, "groups", out,
                          "clt_channel_shuffle_layer");
}

/* ---- Unfold and Fold ------------------------------------------------------------------ */

/* i[0..1] the kernel, i[2..7] dilation, padding and stride, i[8..9] Fold's
 * output size. */
static clt_fold_opts fold_opts(const clt_module *m)
{
    clt_fold_opts o = {{m->i[2], m->i[3]}, {m->i[4], m->i[5]}, {m->i[6], m->i[7]}};
    return o;
}

static clt_status unfold_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_fold_opts o = fold_opts(m);
    return clt__unfold_rec("Unfold", x, &m->i[0], &o, out);
}

static clt_status fold_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_fold_opts o = fold_opts(m);
    return clt__fold_rec("Fold", x, &m->i[8], &m->i[0], &o, out);
}

static const clt__module_ops unfold_ops = {"Unfold", unfold_forward, NULL, NULL};
static const clt__module_ops fold_ops = {"Fold", fold_forward, NULL, NULL};

/* Unfold or Fold (size, the output size, not NULL) with the settings
 * checked as the ops check them. */
static clt_status blocks_layer(const clt__module_ops *ops, const int64_t *size,
                               const int64_t *kernel_size, const clt_fold_opts *opts,
                               clt_module **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(kernel_size, fn);
    const clt_fold_opts defaults = CLT_FOLD_DEFAULTS;
    const clt_fold_opts *o = opts ? opts : &defaults;
    const int64_t *k = kernel_size;
    if (k[0] <= 0 || k[1] <= 0 || o->stride[0] <= 0 || o->stride[1] <= 0 ||
        o->dilation[0] <= 0 || o->dilation[1] <= 0 || o->padding[0] < 0 || o->padding[1] < 0 ||
        (size && (size[0] < 0 || size[1] < 0)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kernel_size, dilation and stride must be positive, padding%s "
                          "non-negative, but got kernel_size=(%lld, %lld), dilation=(%lld, "
                          "%lld), padding=(%lld, %lld), stride=(%lld, %lld)",
                          fn, size ? " and output_size" : "", (long long)k[0], (long long)k[1],
                          (long long)o->dilation[0], (long long)o->dilation[1],
                          (long long)o->padding[0], (long long)o->padding[1],
                          (long long)o->stride[0], (long long)o->stride[1]);
    clt_status st = clt__module_new(ops, NULL, out);
    if (st != CLT_OK)
        return st;
    int64_t v[10] = {k[0],          k[1],          o->dilation[0], o->dilation[1],
                     o->padding[0], o->padding[1], o->stride[0],   o->stride[1],
                     size ? size[0] : 0, size ? size[1] : 0};
    memcpy((*out)->i, v, sizeof v);
    return st;
}

clt_status clt_unfold_layer(const int64_t kernel_size[2], const clt_fold_opts *opts,
                            clt_module **out)
{
    return blocks_layer(&unfold_ops, NULL, kernel_size, opts, out, "clt_unfold_layer");
}

clt_status clt_fold_layer(const int64_t output_size[2], const int64_t kernel_size[2],
                          const clt_fold_opts *opts, clt_module **out)
{
    static const char fn[] = "clt_fold_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(output_size, fn);
    return blocks_layer(&fold_ops, output_size, kernel_size, opts, out, fn);
}

/* ---- Bilinear ---------------------------------------------------------------------------- */

static clt_status bilinear_check(const clt_tensor *x1, const clt_tensor *x2,
                                 const clt_tensor *w, const clt_tensor *b, const char *fn)
{
    char s[160];
    clt_status st;
    if ((st = clt__same_device(x1, w, fn)) != CLT_OK ||
        (st = clt__same_device(x2, w, fn)) != CLT_OK ||
        (b && (st = clt__same_device(b, w, fn)) != CLT_OK))
        return st;
    if ((st = clt__check_floating(w, "weight", fn)) != CLT_OK)
        return st;
    if (x1->dtype != w->dtype || x2->dtype != w->dtype || (b && b->dtype != w->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: bilinear(): input1 (%s), input2 (%s), weight (%s) and bias (%s) "
                          "must have one dtype",
                          fn, clt_dtype_name(x1->dtype), clt_dtype_name(x2->dtype),
                          clt_dtype_name(w->dtype), b ? clt_dtype_name(b->dtype) : "none");
    if (w->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: bilinear(): weight must be 3-dimensional [out_features, "
                          "in1_features, in2_features], but got %s",
                          fn, clt__shape_str(s, sizeof s, w->ndim, w->shape));
    if (x1->ndim != x2->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: bilinear(): input dimensions do not match: got %d and %d", fn,
                          x1->ndim, x2->ndim);
    if (x1->ndim == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: bilinear(): the inputs must have at least one dimension", fn);
    for (int d = 0; d < x1->ndim - 1; d++)
        if (x1->shape[d] != x2->shape[d])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: bilinear(): input batch dimensions do not match at dim %d: "
                              "got %lld and %lld",
                              fn, d, (long long)x1->shape[d], (long long)x2->shape[d]);
    const int64_t in1 = x1->shape[x1->ndim - 1], in2 = x2->shape[x2->ndim - 1];
    if (in1 != w->shape[1])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: bilinear(): input1 size does not match weight size: got %lld but "
                          "expected %lld",
                          fn, (long long)in1, (long long)w->shape[1]);
    if (in2 != w->shape[2])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: bilinear(): input2 size does not match weight size: got %lld but "
                          "expected %lld",
                          fn, (long long)in2, (long long)w->shape[2]);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: bilinear(): bias size does not match weight size: got %s but "
                          "expected [%lld]",
                          fn, clt__shape_str(s, sizeof s, b->ndim, b->shape),
                          (long long)w->shape[0]);
    return CLT_OK;
}

/* y = x1 W x2 + b as (x1 [B, in1] @ W' [in1, O in2]) viewed [B, O, in2],
 * times x2 [B, in2, 1]: two products, recorded. */
static clt_status bilinear_rec(const char *fn, const clt_tensor *x1, const clt_tensor *x2,
                               const clt_tensor *w, const clt_tensor *b, clt_tensor **out)
{
    /* on autocast's promote list */
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_PROMOTE), 4, (x1, x2, w, b),
                  bilinear_rec(fn, CLT__AC(0), CLT__AC(1), CLT__AC(2), CLT__AC(3), out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x1, fn);
    CLT__REQUIRE_ARG(x2, fn);
    CLT__REQUIRE_ARG(w, fn);
    clt_status st = bilinear_check(x1, x2, w, b, fn);
    if (st != CLT_OK)
        return st;
    const int nd = x1->ndim;
    const int64_t O = w->shape[0], in1 = w->shape[1], in2 = w->shape[2];
    int64_t B = 1;
    for (int d = 0; d < nd - 1; d++)
        B *= x1->shape[d];
    int64_t rshape[CLT_MAX_DIMS];
    memcpy(rshape, x1->shape, sizeof(int64_t) * (size_t)nd);
    rshape[nd - 1] = O;
    clt_tensor *a = NULL, *c = NULL, *wp = NULL, *wr = NULL, *t = NULL, *t3 = NULL, *y = NULL,
               *yr = NULL;
    CLT__TRY(clt__reshape_rec(fn, x1, 2, (int64_t[]){B, in1}, &a));
    CLT__TRY(clt__reshape_rec(fn, x2, 3, (int64_t[]){B, in2, 1}, &c));
    CLT__TRY(clt__permute_rec(fn, w, 3, (const int[]){1, 0, 2}, &wp));
    CLT__TRY(clt__reshape_rec(fn, wp, 2, (int64_t[]){in1, O * in2}, &wr));
    CLT__TRY(clt__matmul_rec(fn, a, wr, &t));
    CLT__TRY(clt__reshape_rec(fn, t, 3, (int64_t[]){B, O, in2}, &t3));
    CLT__TRY(clt__matmul_rec(fn, t3, c, &y));
    if (b) {
        CLT__TRY(clt__reshape_rec(fn, y, nd, rshape, &yr));
        CLT__TRY(clt__add_rec(fn, yr, b, out));
    } else {
        CLT__TRY(clt__reshape_rec(fn, y, nd, rshape, out));
    }
done:
    clt_tensor_free(a);
    clt_tensor_free(c);
    clt_tensor_free(wp);
    clt_tensor_free(wr);
    clt_tensor_free(t);
    clt_tensor_free(t3);
    clt_tensor_free(y);
    clt_tensor_free(yr);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_bilinear(const clt_tensor *input1, const clt_tensor *input2,
                        const clt_tensor *weight, const clt_tensor *bias, clt_tensor **out)
{
    return bilinear_rec("clt_bilinear", input1, input2, weight, bias, out);
}

static clt_status bilinear_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    (void)m;
    (void)x;
    *out = NULL;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "Bilinear: forward takes two inputs: call clt_bilinear_forward");
}

static const clt__module_ops bilinear_ops = {"Bilinear", bilinear_forward, NULL, NULL};

clt_status clt_bilinear_layer(clt_device *dev, int64_t in1_features, int64_t in2_features,
                              int64_t out_features, int bias, clt_generator *gen,
                              clt_module **out)
{
    static const char fn[] = "clt_bilinear_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (in1_features <= 0 || in2_features <= 0 || out_features <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: in1_features (%lld), in2_features (%lld) and out_features (%lld) "
                          "must be positive",
                          fn, (long long)in1_features, (long long)in2_features,
                          (long long)out_features);
    clt_module *m = NULL;
    clt_status st;
    CLT__TRY(clt__module_new(&bilinear_ops, dev, &m));
    /* torch's reset_parameters: both uniform in +-1/sqrt(in1_features) */
    int64_t ws[3] = {out_features, in1_features, in2_features};
    CLT__TRY(clt__module_weight_bias(m, gen, 3, ws, in1_features, bias, fn));
    *out = m;
    m = NULL;
done:
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : st;
}

/* The second input of clt_bilinear_forward, for its run through the
 * module's hooks (which see input1); input1 given as input2 too is the
 * hooks' input in both places. */
typedef struct bilinear_ctx {
    const clt_tensor *input1, *input2;
} bilinear_ctx;

static clt_status bilinear_multi(clt_module *m, void *ctx, const clt_tensor *input1,
                                 clt_tensor **out)
{
    const bilinear_ctx *k = ctx;
    const clt_tensor *input2 = k->input2 == k->input1 ? input1 : k->input2;
    return bilinear_rec("clt_bilinear_forward", input1, input2, m->params[0],
                        m->nparams > 1 ? m->params[1] : NULL, out);
}

clt_status clt_bilinear_forward(clt_module *m, const clt_tensor *input1,
                                const clt_tensor *input2, clt_tensor **out)
{
    static const char fn[] = "clt_bilinear_forward";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    if (m->ops != &bilinear_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a Bilinear",
                          fn, m->ops->name);
    CLT__REQUIRE_ARG(input1, fn);
    CLT__REQUIRE_ARG(input2, fn);
    clt_status st;
    if ((st = clt__module_check_device(m, input1, fn)) != CLT_OK ||
        (st = clt__module_check_device(m, input2, fn)) != CLT_OK)
        return st;
    if ((st = clt__module_check_dtype(input1, m->params[0], "weight", NULL, fn)) != CLT_OK ||
        (st = clt__module_check_dtype(input2, m->params[0], "weight", NULL, fn)) != CLT_OK)
        return st;
    bilinear_ctx k = {input1, input2};
    clt__forward_begin(); /* spectral_norm's u and v are written at its end */
    st = clt__forward_end(clt__module_call_multi(m, input1, bilinear_multi, &k, out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- EmbeddingBag ------------------------------------------------------------------ */

/* i[0] the mode, i[1] include_last_offset, i[2] whether padding_idx is
 * given, i[3] padding_idx, i[4] whether max_norm is given, f[0] max_norm,
 * f[1] norm_type, i[5] scale_grad_by_freq, i[6] sparse. */
static clt_status embedding_bag_run(clt_module *m, const clt_tensor *input,
                                    const clt_tensor *offsets, const clt_tensor *psw,
                                    clt_tensor **out, const char *fn)
{
    clt_status st = clt__module_check_device(m, input, fn);
    if (st != CLT_OK)
        return st;
    clt_embedding_bag_opts o = {(clt_bag_mode)m->i[0], m->i[2] ? &m->i[3] : NULL, (int)m->i[1],
                                m->i[4] ? &m->f[0] : NULL, m->f[1], (int)m->i[5], (int)m->i[6]};
    return clt__embedding_bag_rec(fn, m->params[0], input, offsets, psw, &o, out);
}

static clt_status embedding_bag_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return embedding_bag_run(m, x, NULL, NULL, out, "EmbeddingBag");
}

static const clt__module_ops embedding_bag_ops = {"EmbeddingBag", embedding_bag_forward, NULL,
                                                  NULL};

bool clt__embedding_bag_pad(const clt_module *m, int64_t *pad)
{
    if (m->ops != &embedding_bag_ops)
        return false;
    *pad = m->i[2] ? m->i[3] : -1;
    return true;
}

/* The settings' checks of an EmbeddingBag with o on num_embeddings rows;
 * the padding row wrapped into *pad. */
static clt_status bag_settings_check(const clt_embedding_bag_opts *o, int64_t num_embeddings,
                                     int64_t *pad, const char *fn)
{
    if ((int)o->mode < 0 || (int)o->mode > 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: mode has to be one of sum, mean or max (got %d)", fn, (int)o->mode);
    if (o->scale_grad_by_freq && o->mode == CLT_BAG_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: max mode does not support scaling the gradient by the frequency",
                          fn);
    if (o->sparse && o->mode == CLT_BAG_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: max mode does not support sparse weights", fn);
    return clt__padding_idx(o->padding_idx, num_embeddings, pad, fn);
}

static void bag_settings(clt_module *m, const clt_embedding_bag_opts *o, int64_t pad)
{
    m->i[0] = o->mode;
    m->i[1] = o->include_last_offset != 0;
    m->i[2] = pad >= 0;
    m->i[3] = pad;
    m->i[4] = o->max_norm != NULL;
    m->f[0] = o->max_norm ? *o->max_norm : 0.0;
    m->f[1] = o->norm_type;
    m->i[5] = o->scale_grad_by_freq != 0;
    m->i[6] = o->sparse != 0;
}

static clt_status embedding_bag_layer(clt_device *dev, int64_t num_embeddings,
                                      int64_t embedding_dim, const clt_embedding_bag_opts *o,
                                      clt_generator *gen, clt_module **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    int64_t pad = -1;
    clt_status st = bag_settings_check(o, num_embeddings, &pad, fn);
    if (st != CLT_OK)
        return st;
    clt_module *m = NULL;
    CLT__TRY(clt__embedding_table(&embedding_bag_ops, dev, num_embeddings, embedding_dim, pad,
                                  gen, &m, fn));
    bag_settings(m, o, pad);
    *out = m;
    m = NULL;
done:
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_embedding_bag_layer_from_pretrained(const clt_tensor *embeddings, int freeze,
                                                   const clt_embedding_bag_opts *opts,
                                                   clt_module **out)
{
    static const char fn[] = "clt_embedding_bag_layer_from_pretrained";
    static const clt_embedding_bag_opts defaults = CLT_EMBEDDING_BAG_DEFAULTS;
    const clt_embedding_bag_opts *o = opts ? opts : &defaults;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_module *m = NULL;
    clt_status st = clt__embedding_pretrained(&embedding_bag_ops, embeddings, freeze, &m, fn);
    if (st != CLT_OK)
        return st;
    int64_t pad = -1;
    CLT__TRY(bag_settings_check(o, embeddings->shape[0], &pad, fn));
    bag_settings(m, o, pad);
    *out = m;
    m = NULL;
done:
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_embedding_bag_layer(clt_device *dev, int64_t num_embeddings,
                                   int64_t embedding_dim, clt_bag_mode mode,
                                   const int64_t *padding_idx, int include_last_offset,
                                   clt_generator *gen, clt_module **out)
{
    clt_embedding_bag_opts o = CLT_EMBEDDING_BAG_DEFAULTS;
    o.mode = mode;
    o.padding_idx = padding_idx;
    o.include_last_offset = include_last_offset;
    return embedding_bag_layer(dev, num_embeddings, embedding_dim, &o, gen, out,
                               "clt_embedding_bag_layer");
}

clt_status clt_embedding_bag_layer_with_opts(clt_device *dev, int64_t num_embeddings,
                                             int64_t embedding_dim,
                                             const clt_embedding_bag_opts *opts,
                                             clt_generator *gen, clt_module **out)
{
    static const clt_embedding_bag_opts defaults = CLT_EMBEDDING_BAG_DEFAULTS;
    return embedding_bag_layer(dev, num_embeddings, embedding_dim, opts ? opts : &defaults, gen,
                               out, "clt_embedding_bag_layer_with_opts");
}

/* The inputs of clt_embedding_bag_forward besides the indices, for its run
 * through the module's hooks. */
typedef struct bag_ctx {
    const clt_tensor *offsets, *psw;
} bag_ctx;

static clt_status bag_multi(clt_module *m, void *ctx, const clt_tensor *input, clt_tensor **out)
{
    const bag_ctx *k = ctx;
    return embedding_bag_run(m, input, k->offsets, k->psw, out, "clt_embedding_bag_forward");
}

clt_status clt_embedding_bag_forward(clt_module *m, const clt_tensor *input,
                                     const clt_tensor *offsets,
                                     const clt_tensor *per_sample_weights, clt_tensor **out)
{
    static const char fn[] = "clt_embedding_bag_forward";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(input, fn);
    if (m->ops != &embedding_bag_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the module is a %s, not an EmbeddingBag", fn, m->ops->name);
    bag_ctx k = {offsets, per_sample_weights};
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, input, bag_multi, &k, out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}
