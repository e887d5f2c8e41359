/* attention.c: F.scaled_dot_product_attention (the fused op, or composed
 * where it cannot serve), and the transformer layers (MultiheadAttention,
 * the encoder's and decoder's layers and stacks, nn.Transformer) as
 * PyTorch 1.13 computes them, composed of recorded ops (linear, matmul,
 * softmax, masked_fill, views; the attention itself fused where torch
 * would give no weights) so that autograd gives their backward passes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* ---- scaled dot-product attention -------------------------------------------------- */

/* Whether the fused kernels take the attention of q (float32 or float64)
 * with this mask and dropout: the mask gets no gradient from them. */
static bool sdpa_fusable(const clt_tensor *q, const clt_tensor *mask, double dropout_p)
{
    return (q->dtype == CLT_FLOAT32 || q->dtype == CLT_FLOAT64) && dropout_p == 0.0 &&
           (mask == NULL || mask->dtype == CLT_BOOL || !clt_requires_grad(mask));
}

/* torch 2's math path, recorded op by op: softmax(q k^T * scale + mask) v
 * with dropout on the weights (a bool mask attends where true). */
static clt_status sdpa_composed(const char *fn, const clt_tensor *q, const clt_tensor *k,
                                const clt_tensor *v, const clt_tensor *mask, double dropout_p,
                                bool causal, double scale, clt_generator *gen, clt_tensor **out)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *kt, *s, *t, *a, *keep = NULL;
    int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
    CLT__TRY(clt__transpose_rec(fn, k, -2, -1, &kt));
    CLT__TRY(clt__matmul_rec(fn, q, kt, &t));
    CLT__TRY(clt__mul_scalar_rec(fn, t, scale, &s));
    if (causal) { /* torch.ones(L, S).tril(): key j for query i when j <= i */
        unsigned char *b = clt__malloc((size_t)(L * S) + 1);
        if (b == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++)
                b[i * S + j] = j <= i;
        st = clt__tensor_from_host_in(fn, q->dev, CLT_BOOL, 2, (int64_t[]){L, S}, b, &keep);
        clt_free(b);
        CLT__TRY(st);
    } else if (mask && mask->dtype == CLT_BOOL) {
        keep = (clt_tensor *)mask;
    }
    if (keep) {
        clt_tensor *drop;
        CLT__TRY(clt__logical_not_in(fn, keep, &drop));
        CLT__TRY(clt__masked_fill_rec(fn, s, drop, -INFINITY, &t));
        s = t;
    } else if (mask) {
        CLT__TRY(clt__add_rec(fn, s, mask, &t));
        s = t;
    }
    CLT__TRY(clt__softmax_rec(fn, s, -1, &a));
    if (dropout_p > 0.0)
        CLT__TRY(clt__dropout(fn, gen, dropout_p, a, &a));
    CLT__TRY(clt__matmul_rec(fn, a, v, out));
    st = clt_scope_keep(*out);
done:
    clt_scope_end();
    if (st != CLT_OK)
        *out = NULL;
    return st;
}

/* F.scaled_dot_product_attention's checks, in torch 2's words where it has
 * them; *scale_out the scale to use. */
static clt_status sdpa_check(const char *fn, const clt_tensor *q, const clt_tensor *k,
                             const clt_tensor *v, const clt_tensor *mask, double dropout_p,
                             int is_causal, const double *scale, double *scale_out,
                             int64_t *batch_out)
{
    char s1[160], s2[160];
    clt_status st;
    if ((st = clt__same_device(q, k, fn)) != CLT_OK || (st = clt__same_device(q, v, fn)) != CLT_OK ||
        (mask && (st = clt__same_device(q, mask, fn)) != CLT_OK))
        return st;
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected query, key, and value to have the same dtype, but got "
                          "query.dtype: %s key.dtype: %s and value.dtype: %s instead.",
                          fn, clt_dtype_name(q->dtype), clt_dtype_name(k->dtype),
                          clt_dtype_name(v->dtype));
    if (!clt__dtype_is_float(q->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: the query, key and value must be floating point, not %s "
                          "(convert them to float32 or float64 first)",
                          fn, clt_dtype_name(q->dtype));
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the query, key and value need at least 2 dims ([..., L, E], "
                          "[..., S, E], [..., S, Ev]), but have %d, %d and %d",
                          fn, q->ndim, k->ndim, v->ndim);
    int64_t E = q->shape[q->ndim - 1], L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2];
    if (k->shape[k->ndim - 1] != E || v->shape[v->ndim - 2] != S)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: query %s, key %s and value %s do not fit: the key must have the "
                          "query's last dim and the value the key's rows ([..., L, E], [..., S, "
                          "E], [..., S, Ev])",
                          fn, clt__shape_str(s1, sizeof s1, q->ndim, q->shape),
                          clt__shape_str(s2, sizeof s2, k->ndim, k->shape),
                          clt__shape_str((char[160]){0}, 160, v->ndim, v->shape));
    int n1, nb;
    int64_t b1[CLT_MAX_DIMS], bs[CLT_MAX_DIMS];
    if ((st = clt__broadcast_shapes(q->ndim - 2, q->shape, k->ndim - 2, k->shape, &n1, b1,
                                    fn)) != CLT_OK ||
        (st = clt__broadcast_shapes(n1, b1, v->ndim - 2, v->shape, &nb, bs, fn)) != CLT_OK)
        return st;
    if (mask) {
        if (mask->dtype != CLT_BOOL && mask->dtype != q->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: Expected attn_mask dtype to be bool or to match query "
                              "dtype, but got attn_mask.dtype: %s and query.dtype: %s instead.",
                              fn, clt_dtype_name(mask->dtype), clt_dtype_name(q->dtype));
        int nw, nm;
        int64_t want[CLT_MAX_DIMS], got[CLT_MAX_DIMS];
        memcpy(want, bs, sizeof(int64_t) * (size_t)nb);
        want[nb] = L;
        want[nb + 1] = S;
        nw = nb + 2;
        bool ok = mask->ndim <= nw &&
                  clt__broadcast_shapes(mask->ndim, mask->shape, nw, want, &nm, got, fn) ==
                      CLT_OK;
        for (int d = 0; ok && d < nw; d++)
            ok = got[d] == want[d];
        clt__ok();
        if (!ok)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: attn_mask %s does not broadcast to the scores' shape %s", fn,
                              clt__shape_str(s1, sizeof s1, mask->ndim, mask->shape),
                              clt__shape_str(s2, sizeof s2, nw, want));
        if (is_causal)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Explicit attn_mask should not be set when is_causal=True", fn);
    }
    if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dropout probability has to be between 0 and 1, but got %g", fn,
                          dropout_p);
    if (scale == NULL && E == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the query's last dim is 0, so the default scale 1/sqrt(E) is "
                          "undefined; pass a scale",
                          fn);
    *scale_out = scale ? *scale : 1.0 / sqrt((double)E);
    *batch_out = 1;
    for (int d = 0; d < nb; d++)
        *batch_out *= bs[d];
    return CLT_OK;
}

clt_status clt_scaled_dot_product_attention(const clt_tensor *query, const clt_tensor *key,
                                            const clt_tensor *value,
                                            const clt_tensor *attn_mask, double dropout_p,
                                            int is_causal, const double *scale,
                                            clt_generator *gen, clt_tensor **out)
{
    static const char fn[] = "clt_scaled_dot_product_attention";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(query, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(value, fn);
    double sc;
    int64_t batch;
    clt_status st =
        sdpa_check(fn, query, key, value, attn_mask, dropout_p, is_causal, scale, &sc, &batch);
    if (st != CLT_OK)
        return st;
    if (sdpa_fusable(query, attn_mask, dropout_p) &&
        clt__sdpa_prefer_fused(query->dev, query->dtype, batch, query->shape[query->ndim - 2],
                               key->shape[key->ndim - 2],
                               query->shape[query->ndim - 1] > value->shape[value->ndim - 1]
                                   ? query->shape[query->ndim - 1]
                                   : value->shape[value->ndim - 1]))
        return clt__sdpa_rec(fn, query, key, value, attn_mask,
                             attn_mask && attn_mask->dtype != CLT_BOOL ? CLT__SDPA_MASK_ADD
                                                                       : CLT__SDPA_MASK_KEEP,
                             is_causal != 0, sc, out);
    clt__forward_begin();
    st = sdpa_composed(fn, query, key, value, attn_mask, dropout_p, is_causal != 0, sc, gen,
                       out);
    st = clt__forward_end(st, fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- MultiheadAttention ----------------------------------------------------------- */

/* i[0] embed_dim, i[1] num_heads, i[2] batch_first, i[3] kdim, i[4] vdim,
 * i[5] add_zero_attn; f[0] dropout.  Parameters in_proj_weight [3E, E]
 * (kdim = vdim = E) or q_proj_weight [E, E], k_proj_weight [E, kdim] and
 * v_proj_weight [E, vdim]; with bias, in_proj_bias [3E]; with add_bias_kv,
 * bias_k and bias_v [1, 1, E]; child out_proj, a Linear(E, E).  gen
 * (borrowed) draws the dropout masks. */
static const char *const mha_children[] = {"out_proj"};

static clt_status mha_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);
static const clt__module_ops mha_ops = {"MultiheadAttention", mha_forward, NULL, NULL};

/* Error unless t lives on the module's device. */
static clt_status on_device(const clt_module *m, const clt_tensor *t, const char *what)
{
    if (t == NULL || t->dev == m->dev)
        return CLT_OK;
    return clt__error(CLT_ERR_DEVICE_MISMATCH,
                      "MultiheadAttention: expected all tensors to be on the same device, but "
                      "the %s is on %s (%s) and the model on %s (%s); move one with clt_to or "
                      "clt_module_to",
                      what, t->dev->label, t->dev->info.name, m->dev->label, m->dev->info.name);
}

/* A mask must be bool or of the query's floating dtype (PyTorch adds a
 * float mask to the scores, which does not promote). */
static clt_status mask_dtype(const clt_tensor *mask, const clt_tensor *q, const char *what)
{
    if (mask == NULL || mask->dtype == CLT_BOOL || mask->dtype == q->dtype)
        return CLT_OK;
    if (!clt__dtype_is_float(mask->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "MultiheadAttention: only bool and floating types of %s are supported, "
                          "not %s",
                          what, clt_dtype_name(mask->dtype));
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "MultiheadAttention: a floating %s must have the query's dtype, but it is "
                      "%s and the query %s (convert it with clt_to_dtype)",
                      what, clt_dtype_name(mask->dtype), clt_dtype_name(q->dtype));
}

static bool shape_is(const clt_tensor *t, int nd, const int64_t *shape)
{
    if (t->ndim != nd)
        return false;
    for (int d = 0; d < nd; d++)
        if (t->shape[d] != shape[d])
            return false;
    return true;
}

/* Whether m has the separate q_proj_weight, k_proj_weight and
 * v_proj_weight (torch's _qkv_same_embed_dim False). */
static bool mha_separate(const clt_module *m)
{
    return m->i[3] != m->i[0] || m->i[4] != m->i[0];
}

/* The first projection weight (in_proj_weight or q_proj_weight), whose
 * dtype the inputs must have. */
static clt_tensor *mha_first_weight(const clt_module *m, const char **name)
{
    *name = mha_separate(m) ? "q_proj_weight" : "in_proj_weight";
    return clt_module_param(m, *name);
}

/* F.multi_head_attention_forward's checks, in its words where it has them. */
static clt_status mha_check(const clt_module *m, const clt_tensor *q, const clt_tensor *k,
                            const clt_tensor *v, const clt_tensor *kpm, const clt_tensor *am)
{
    static const char fn[] = "MultiheadAttention";
    char s1[160], s2[160];
    clt_status st;
    const clt_tensor *all[5] = {q, k, v, kpm, am};
    const char *names[5] = {"query", "key", "value", "key_padding_mask", "attn_mask"};
    for (int j = 0; j < 5; j++)
        if ((st = on_device(m, all[j], names[j])) != CLT_OK)
            return st;
    int64_t E = m->i[0], H = m->i[1];
    bool batched = q->ndim == 3;
    if (q->ndim != 2 && q->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: query should be unbatched 2D or batched 3D tensor but received "
                          "%d-D query tensor",
                          fn, q->ndim);
    if (k->ndim != q->ndim || v->ndim != q->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: For %s (%d-D) `query`, expected `key` and `value` to be %d-D but "
                          "found %d-D and %d-D tensors respectively",
                          fn, batched ? "batched" : "unbatched", q->ndim, q->ndim, k->ndim,
                          v->ndim);
    if (kpm && kpm->ndim != q->ndim - 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: For %s (%d-D) `query`, expected `key_padding_mask` to be `None` "
                          "or %d-D but found %d-D tensor instead",
                          fn, batched ? "batched" : "unbatched", q->ndim, q->ndim - 1, kpm->ndim);
    if (am && am->ndim != 2 && am->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: For %s (%d-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                          "3-D but found %d-D tensor instead",
                          fn, batched ? "batched" : "unbatched", q->ndim, am->ndim);
    const char *wname;
    const clt_tensor *w0 = mha_first_weight(m, &wname);
    if ((st = clt__module_check_dtype(q, w0, wname, NULL, fn)) != CLT_OK)
        return st;
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: the query, key and value must have one dtype, but they are %s, "
                          "%s and %s",
                          fn, clt_dtype_name(q->dtype), clt_dtype_name(k->dtype),
                          clt_dtype_name(v->dtype));
    if ((st = mask_dtype(kpm, q, "key_padding_mask")) != CLT_OK ||
        (st = mask_dtype(am, q, "attn_mask")) != CLT_OK)
        return st;
    if (q->shape[q->ndim - 1] != E)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: was expecting embedding dimension of %lld, but got %lld", fn,
                          (long long)E, (long long)q->shape[q->ndim - 1]);
    if (!mha_separate(m) && !shape_is(k, v->ndim, v->shape))
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: key shape %s does not match value shape %s",
                          fn, clt__shape_str(s1, sizeof s1, k->ndim, k->shape),
                          clt__shape_str(s2, sizeof s2, v->ndim, v->shape));
    bool lead = true; /* the dims before the last: key and value have one rank here */
    for (int d = 0; d + 1 < k->ndim; d++)
        lead = lead && k->shape[d] == v->shape[d];
    if (mha_separate(m) && !lead)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: key's sequence and batch dims %s do not match value's %s", fn,
                          clt__shape_str(s1, sizeof s1, k->ndim - 1, k->shape),
                          clt__shape_str(s2, sizeof s2, v->ndim - 1, v->shape));
    if (k->shape[k->ndim - 1] != m->i[3] || v->shape[v->ndim - 1] != m->i[4])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the key and value have %lld and %lld features in their last "
                          "dimension; the layer takes kdim %lld and vdim %lld",
                          fn, (long long)k->shape[k->ndim - 1],
                          (long long)v->shape[v->ndim - 1], (long long)m->i[3],
                          (long long)m->i[4]);
    int bd = m->i[2] ? 0 : 1, sd = m->i[2] ? 1 : 0;
    int64_t N = batched ? q->shape[bd] : 1, L = batched ? q->shape[sd] : q->shape[0];
    int64_t S = batched ? k->shape[sd] : k->shape[0];
    if (batched && k->shape[bd] != N)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the key's batch size %lld does not match the query's %lld", fn,
                          (long long)k->shape[bd], (long long)N);
    if (am) {
        int64_t want[3] = {batched ? N * H : H, L, S};
        bool ok = am->ndim == 2 ? shape_is(am, 2, want + 1) : shape_is(am, 3, want);
        if (!ok)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: The shape of the %dD attn_mask is %s, but should be %s.", fn,
                              am->ndim, clt__shape_str(s1, sizeof s1, am->ndim, am->shape),
                              clt__shape_str(s2, sizeof s2, am->ndim,
                                             am->ndim == 2 ? want + 1 : want));
    }
    if (kpm) {
        int64_t want[2] = {N, S};
        const int64_t *w = batched ? want : want + 1;
        if (!shape_is(kpm, q->ndim - 1, w))
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: expecting key_padding_mask shape of %s, but got %s", fn,
                              clt__shape_str(s1, sizeof s1, q->ndim - 1, w),
                              clt__shape_str(s2, sizeof s2, kpm->ndim, kpm->shape));
        /* F.multi_head_attention_forward masks a float attn_mask with the
         * padding mask through masked_fill, which takes bool masks only */
        if (kpm->dtype != CLT_BOOL && am && am->dtype != CLT_BOOL)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: with a floating attn_mask the key_padding_mask must be bool "
                              "(masked_fill only supports boolean masks), not %s",
                              fn, clt_dtype_name(kpm->dtype));
    }
    return CLT_OK;
}

/* t [N, T, E] (batch first) as [N, H, T, D]. */
static clt_status split_heads(const char *fn, const clt_tensor *t, int64_t H, clt_tensor **out)
{
    int64_t shape[4] = {t->shape[0], t->shape[1], H, t->shape[2] / H};
    clt_tensor *r;
    clt_status st = clt__reshape_rec(fn, t, 4, shape, &r);
    return st == CLT_OK ? clt__transpose_rec(fn, r, 1, 2, out) : st;
}

/* scores + a mask: bool ones fill -inf where true, floating ones add. */
static clt_status apply_mask(const char *fn, const clt_tensor *s, const clt_tensor *mask,
                             clt_tensor **out)
{
    if (mask->dtype == CLT_BOOL)
        return clt__masked_fill_rec(fn, s, mask, -INFINITY, out);
    return clt__add_rec(fn, s, mask, out);
}

/* The attention weights of heads h (q, k, v [N, H, T, D]) of module m:
 * softmax(q / sqrt(D) @ k^T + masks) [N, H, L, S], after dropout in train
 * mode, recorded op by op in the caller's scope. */
static clt_status mha_weights(clt_module *m, clt_tensor *const *h, const clt_tensor *am,
                              const clt_tensor *kpm, int64_t N, int64_t L, int64_t S,
                              clt_tensor **out)
{
    static const char fn[] = "MultiheadAttention";
    clt_status st = CLT_OK;
    int64_t H = m->i[1], D = m->i[0] / H;
    clt_tensor *qs, *kt, *s, *a, *t;
    CLT__TRY(clt__div_scalar_rec(fn, h[0], sqrt((double)D), &qs));
    CLT__TRY(clt__transpose_rec(fn, h[1], -2, -1, &kt));
    CLT__TRY(clt__matmul_rec(fn, qs, kt, &s));
    if (am) {
        const clt_tensor *mk = am;
        if (am->ndim == 3) {
            CLT__TRY(clt__reshape_rec(fn, am, 4, (int64_t[]){N, H, L, S}, &t));
            mk = t;
        }
        CLT__TRY(apply_mask(fn, s, mk, &t));
        s = t;
    }
    if (kpm) {
        clt_tensor *mk;
        CLT__TRY(clt__reshape_rec(fn, kpm, 4, (int64_t[]){N, 1, 1, S}, &mk));
        if (mk->dtype != CLT_BOOL && am) /* PyTorch's logical_or: nonzero masks */
            CLT__TRY(clt__ne_scalar_rec(fn, mk, 0.0, &mk));
        CLT__TRY(apply_mask(fn, s, mk, &t));
        s = t;
    }
    CLT__TRY(clt__softmax_rec(fn, s, -1, &a));
    if (m->training && m->f[0] > 0.0)
        CLT__TRY(clt__dropout(fn, m->gen, m->f[0], a, &a));
    *out = a;
done:
    return st;
}

/* MultiheadAttention's masks as one mask for the fused attention of heads
 * [N, H, L, S], in the caller's scope: attn_mask am ([L, S] or [N * H, L,
 * S]) and key_padding_mask kpm ([N, S]) viewed as [N, H, L, S] and [N, 1,
 * 1, S]; with both, kpm (nonzero hides, as torch's logical_or) or'ed into
 * a bool am or filling a floating one with -inf.  *kind says how the
 * kernels read *mk (NULL when neither is given). */
static clt_status mha_mask(const char *fn, const clt_tensor *am, const clt_tensor *kpm,
                           int64_t N, int64_t H, int64_t L, int64_t S, const clt_tensor **mk,
                           int *kind)
{
    clt_status st = CLT_OK;
    clt_tensor *a = NULL, *k = NULL, *t;
    *mk = NULL;
    *kind = 0;
    if (am && am->ndim == 3)
        CLT__TRY(clt__reshape(am, 4, (int64_t[]){N, H, L, S}, &a, fn));
    else if (am)
        a = (clt_tensor *)am;
    if (kpm)
        CLT__TRY(clt__reshape(kpm, 4, (int64_t[]){N, 1, 1, S}, &k, fn));
    if (a && k) {
        if (k->dtype != CLT_BOOL) {
            CLT__TRY(clt__ne_scalar_in(fn, k, 0.0, &t));
            k = t;
        }
        if (a->dtype == CLT_BOOL)
            CLT__TRY(clt__logical_or_in(fn, a, k, &t));
        else
            CLT__TRY(clt__masked_fill(a, k, -INFINITY, &t, fn));
        a = t;
    } else if (k) {
        a = k;
    }
    if (a) {
        *mk = a;
        *kind = a->dtype == CLT_BOOL ? CLT__SDPA_MASK_DROP : CLT__SDPA_MASK_ADD;
    }
done:
    return st;
}

/* The attention of module m (checked by mha_check), its intermediates in
 * the caller's scope: *out as the query's layout, *weights (when need)
 * [N, L, S] averaged or [N, H, L, S], without N when unbatched. */
static clt_status mha_compute(clt_module *m, const clt_tensor *query, const clt_tensor *key,
                              const clt_tensor *value, const clt_tensor *kpm,
                              const clt_tensor *am, bool need, bool avg, clt_tensor **out,
                              clt_tensor **weights)
{
    static const char fn[] = "MultiheadAttention";
    clt_status st = CLT_OK;
    static const char *const sep_names[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
    int64_t E = m->i[0], H = m->i[1], D = E / H;
    bool batched = query->ndim == 3, bf = m->i[2] != 0, self = query == key && key == value;
    bool sep = mha_separate(m);
    const clt_tensor *W = sep ? NULL : clt_module_param(m, "in_proj_weight"),
                     *b = clt_module_param(m, "in_proj_bias"),
                     *bkv[2] = {clt_module_param(m, "bias_k"), clt_module_param(m, "bias_v")};
    const clt_tensor *in[3] = {query, key, value};
    clt_tensor *x[3], *p[3], *h[3], *P, *wp, *bp, *t;
    /* the inputs batch first: [N, T, E] */
    for (int j = 0; j < 3; j++) {
        if (!batched)
            CLT__TRY(clt__unsqueeze_rec(fn, in[j], 0, &x[j]));
        else if (!bf)
            CLT__TRY(clt__transpose_rec(fn, in[j], 0, 1, &x[j]));
        else
            x[j] = (clt_tensor *)in[j];
    }
    /* in_proj: one product of 3E columns for self-attention, as PyTorch's
     * _in_projection_packed, else a third of the weight each, or the
     * separate weights of other kdim, vdim (its _in_projection) */
    if (self && !sep) {
        CLT__TRY(clt__linear(x[0], W, b, &P, fn));
        for (int j = 0; j < 3; j++)
            CLT__TRY(clt__narrow_rec(fn, P, -1, j * E, E, &p[j]));
    } else {
        for (int j = 0; j < 3; j++) {
            if (sep)
                wp = clt_module_param(m, sep_names[j]);
            else
                CLT__TRY(clt__narrow_rec(fn, W, 0, j * E, E, &wp));
            bp = NULL;
            if (b)
                CLT__TRY(clt__narrow_rec(fn, b, 0, j * E, E, &bp));
            CLT__TRY(clt__linear(x[j], wp, bp, &p[j], fn));
        }
    }
    int64_t N = x[0]->shape[0], L = x[0]->shape[1];
    /* add_bias_kv: bias_k and bias_v [1, 1, E] as one more position of
     * every batch entry's keys and values */
    for (int j = 0; j < 2 && bkv[0] && bkv[1]; j++) {
        CLT__TRY(clt__expand_rec(fn, bkv[j], 3, (int64_t[]){N, 1, E}, &t));
        CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){p[j + 1], t}, 2, 1, &p[j + 1]));
    }
    for (int j = 0; j < 3; j++)
        CLT__TRY(split_heads(fn, p[j], H, &h[j]));
    /* add_zero_attn: a zero key and value appended to each head */
    for (int j = 1; j < 3 && m->i[5]; j++)
        CLT__TRY(clt__pad_rec(fn, h[j], (const int64_t[]){0, 0, 0, 1}, 4, CLT_PAD_CONSTANT, 0.0,
                              &h[j]));
    /* the masks get a zero (false) column for each position added */
    int64_t S = h[1]->shape[2], added = S - x[1]->shape[1];
    const int64_t pad[2] = {0, added};
    if (added > 0 && am) {
        CLT__TRY(clt__pad_rec(fn, am, pad, 2, CLT_PAD_CONSTANT, 0.0, &t));
        am = t;
    }
    if (added > 0 && kpm) {
        CLT__TRY(clt__pad_rec(fn, kpm, pad, 2, CLT_PAD_CONSTANT, 0.0, &t));
        kpm = t;
    }
    clt_tensor *o, *ot, *o2, *y, *a = NULL;
    double drop = m->training ? m->f[0] : 0.0;
    if (!need && sdpa_fusable(h[0], am, drop) && sdpa_fusable(h[0], kpm, drop) &&
        clt__sdpa_prefer_fused(h[0]->dev, h[0]->dtype, N * H, L, S, D)) {
        /* no weights wanted: the fused attention over the heads' views */
        const clt_tensor *mk;
        int kind;
        CLT__TRY(mha_mask(fn, am, kpm, N, H, L, S, &mk, &kind));
        CLT__TRY(clt__sdpa_rec(fn, h[0], h[1], h[2], mk, kind, false, 1.0 / sqrt((double)D),
                               &o));
    } else {
        CLT__TRY(mha_weights(m, h, am, kpm, N, L, S, &a));
        CLT__TRY(clt__matmul_rec(fn, a, h[2], &o));
    }
    /* heads back together, in the query's layout, then out_proj over
     * rows of E as PyTorch's [L * N, E] */
    const int *perm = bf || !batched ? (const int[]){0, 2, 1, 3} : (const int[]){2, 0, 1, 3};
    CLT__TRY(clt__permute_rec(fn, o, 4, perm, &ot));
    CLT__TRY(clt__reshape_rec(fn, ot, 2, (int64_t[]){N * L, E}, &o2));
    const clt_module *op = m->children[0];
    CLT__TRY(clt__linear(o2, op->params[0], op->nparams > 1 ? op->params[1] : NULL, &y, fn));
    if (!batched)
        CLT__TRY(clt__reshape_rec(fn, y, 2, (int64_t[]){L, E}, out));
    else
        CLT__TRY(clt__reshape_rec(fn, y, 3, bf ? (int64_t[]){N, L, E} : (int64_t[]){L, N, E},
                                  out));
    if (need) {
        if (avg) {
            CLT__TRY(clt__sum_dim_rec(fn, a, 1, 0, &t));
            CLT__TRY(clt__div_scalar_rec(fn, t, (double)H, &a));
        }
        if (!batched)
            CLT__TRY(clt__squeeze_rec(fn, a, 0, &a));
        *weights = a;
    }
done:
    return st;
}

/* Checks, then computes in a scope that keeps *out and *weights. */
static clt_status mha_run(clt_module *m, const clt_tensor *q, const clt_tensor *k,
                          const clt_tensor *v, const clt_tensor *kpm, const clt_tensor *am,
                          bool need, bool avg, clt_tensor **out, clt_tensor **weights)
{
    clt_status st = mha_check(m, q, k, v, kpm, am);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *w = NULL;
    st = mha_compute(m, q, k, v, kpm, am, need, avg, out, &w);
    if (st == CLT_OK)
        st = clt_scope_keep(*out);
    if (st == CLT_OK && w)
        st = clt_scope_keep(w);
    clt_scope_end();
    if (st != CLT_OK) { /* released with the scope */
        *out = NULL;
        w = NULL;
    }
    if (weights)
        *weights = w;
    return st;
}

/* Self-attention: q = k = v = x, no masks, no weights. */
static clt_status mha_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return mha_run(m, x, x, x, NULL, NULL, false, false, out, NULL);
}

/* clt_multihead_attention's inputs besides the query, for its run through
 * the module's hooks (which see the query: a key or value that is the
 * query, as in self-attention, is the hooks' query too), and the weights
 * it gives. */
typedef struct mha_ctx {
    const clt_tensor *query, *key, *value, *kpm, *am;
    bool need, avg;
    clt_tensor *w;
} mha_ctx;

static clt_status mha_multi(clt_module *m, void *ctx, const clt_tensor *q, clt_tensor **out)
{
    mha_ctx *k = ctx;
    return mha_run(m, q, k->key == k->query ? q : k->key, k->value == k->query ? q : k->value,
                   k->kpm, k->am, k->need, k->avg, out, &k->w);
}

clt_status clt_multihead_attention(clt_module *m, const clt_tensor *query, const clt_tensor *key,
                                   const clt_tensor *value, const clt_tensor *key_padding_mask,
                                   const clt_tensor *attn_mask, int need_weights,
                                   int average_attn_weights, clt_tensor **out,
                                   clt_tensor **weights)
{
    static const char fn[] = "clt_multihead_attention";
    if (weights) /* first: a NULL out is refused with *weights NULL too */
        *weights = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (need_weights)
        CLT__REQUIRE_ARG(weights, fn);
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(query, fn);
    CLT__REQUIRE_ARG(key, fn);
    CLT__REQUIRE_ARG(value, fn);
    if (m->ops != &mha_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the module is a %s, not a MultiheadAttention", fn, m->ops->name);
    mha_ctx k = {query, key, value, key_padding_mask, attn_mask, need_weights != 0,
                 average_attn_weights != 0, NULL};
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, query, mha_multi, &k, out), fn);
    clt_tensor *w = k.w;
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        clt_tensor_free(w);
        *out = NULL;
        return st;
    }
    if (weights)
        *weights = w;
    return CLT_OK;
}

/* MultiheadAttention's constructor with options o, for the public call fn. */
static clt_status mha_new(const char *fn, clt_device *dev, int64_t embed_dim, int64_t num_heads,
                          const clt_multihead_attention_opts *o, clt_generator *gen,
                          clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (embed_dim <= 0 || num_heads <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: embed_dim (%lld) and num_heads (%lld) must be positive", fn,
                          (long long)embed_dim, (long long)num_heads);
    if (embed_dim % num_heads != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: embed_dim must be divisible by num_heads (embed_dim %lld, "
                          "num_heads %lld)",
                          fn, (long long)embed_dim, (long long)num_heads);
    if (!(o->dropout >= 0.0 && o->dropout <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dropout probability has to be between 0 and 1, but got %g", fn,
                          o->dropout);
    if (o->kdim < 0 || o->vdim < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kdim (%lld) and vdim (%lld) must be positive, or 0 for embed_dim",
                          fn, (long long)o->kdim, (long long)o->vdim);
    clt_module *m = NULL, *op = NULL;
    clt_tensor *t = NULL;
    clt_status st;
    uint64_t drawn = clt_generator_offset(gen);
    CLT__TRY(clt__module_new(&mha_ops, dev, &m));
    m->i[0] = embed_dim;
    m->i[1] = num_heads;
    m->i[2] = o->batch_first != 0;
    m->i[3] = o->kdim ? o->kdim : embed_dim;
    m->i[4] = o->vdim ? o->vdim : embed_dim;
    m->i[5] = o->add_zero_attn != 0;
    m->f[0] = o->dropout;
    m->gen = gen;
    /* PyTorch makes out_proj (a Linear, its weight kaiming-uniform) before
     * _reset_parameters draws the projection weights (xavier_uniform_),
     * zeroes both biases and draws bias_k, bias_v (xavier_normal_); the
     * parameters are registered in the order of torch's state_dict */
    CLT__TRY(clt_linear(dev, embed_dim, embed_dim, 0, gen, &op));
    if (o->bias) {
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &embed_dim, 0.0, &t));
        st = clt__module_param(op, "bias", t); /* taken, even when it fails */
        t = NULL;
        CLT__TRY(st);
    }
    if (mha_separate(m)) {
        static const char *const names[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
        for (int j = 0; j < 3; j++) {
            int64_t ws[2] = {embed_dim, j == 0 ? embed_dim : m->i[2 + j]};
            double bound = sqrt(6.0 / (double)(ws[0] + ws[1]));
            CLT__TRY(clt__init_uniform(gen, dev, 2, ws, bound, &t, fn));
            st = clt__module_param(m, names[j], t);
            t = NULL;
            CLT__TRY(st);
        }
    } else {
        int64_t ws[2] = {3 * embed_dim, embed_dim};
        double bound = sqrt(6.0 / (double)(ws[0] + ws[1]));
        CLT__TRY(clt__init_uniform(gen, dev, 2, ws, bound, &t, fn));
        st = clt__module_param(m, "in_proj_weight", t);
        t = NULL;
        CLT__TRY(st);
    }
    if (o->bias) {
        int64_t n = 3 * embed_dim;
        CLT__TRY(clt__full(dev, CLT_FLOAT32, 1, &n, 0.0, &t));
        st = clt__module_param(m, "in_proj_bias", t);
        t = NULL;
        CLT__TRY(st);
    }
    for (int j = 0; j < 2 && o->add_bias_kv; j++) {
        /* xavier_normal_ on [1, 1, E]: fan_in = fan_out = E */
        CLT__TRY(clt__empty(dev, CLT_FLOAT32, 3, (int64_t[]){1, 1, embed_dim}, &t));
        CLT__TRY(clt__normal_(t, gen, 0.0, sqrt(1.0 / (double)embed_dim)));
        st = clt__module_param(m, j ? "bias_v" : "bias_k", t);
        t = NULL;
        CLT__TRY(st);
    }
    CLT__TRY(clt__module_adopt(m, &op, 1, mha_children));
    op = NULL;
    *out = m;
    m = NULL;
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, drawn);
    clt_tensor_free(t);
    clt_module_free(op);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_multihead_attention_layer(clt_device *dev, int64_t embed_dim, int64_t num_heads,
                                         double dropout, int bias, int batch_first,
                                         clt_generator *gen, clt_module **out)
{
    clt_multihead_attention_opts o = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
    o.dropout = dropout;
    o.bias = bias;
    o.batch_first = batch_first;
    return mha_new("clt_multihead_attention_layer", dev, embed_dim, num_heads, &o, gen, out);
}

clt_status clt_multihead_attention_layer_with_opts(clt_device *dev, int64_t embed_dim,
                                                   int64_t num_heads,
                                                   const clt_multihead_attention_opts *opts,
                                                   clt_generator *gen, clt_module **out)
{
    static const clt_multihead_attention_opts defaults = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
    return mha_new("clt_multihead_attention_layer_with_opts", dev, embed_dim, num_heads,
                   opts ? opts : &defaults, gen, out);
}

/* ---- TransformerEncoderLayer and TransformerDecoderLayer ---------------------------- */

/* Children in PyTorch's order, for the encoder's layer and the decoder's;
 * i[0] 1 for gelu (else relu), i[1] norm_first. */
enum { SELF_ATTN, LINEAR1, DROPOUT, LINEAR2, NORM1, NORM2, DROPOUT1, DROPOUT2, NCHILD };
static const char *const layer_children[NCHILD] = {
    "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"};
enum {
    D_SELF_ATTN, D_CROSS_ATTN, D_LINEAR1, D_DROPOUT, D_LINEAR2, D_NORM1, D_NORM2, D_NORM3,
    D_DROPOUT1, D_DROPOUT2, D_DROPOUT3, D_NCHILD
};
static const char *const dec_layer_children[D_NCHILD] = {
    "self_attn", "multihead_attn", "linear1",  "dropout",  "linear2", "norm1",
    "norm2",     "norm3",          "dropout1", "dropout2", "dropout3"};

/* Where a layer's residual blocks find their children: block s (the
 * self-attention, the decoder's attention over the memory, then the
 * feed-forward block) is wrapped by norm[s] and ends with drop[s]. */
typedef struct layer_kind {
    int nblocks;
    int attn[2]; /* self_attn, multihead_attn */
    int linear1; /* followed by dropout and linear2 */
    int norm[3], drop[3];
    int nchild;
    const char *const *names;
} layer_kind;

static const layer_kind enc_kind = {
    .nblocks = 2, .attn = {SELF_ATTN, -1}, .linear1 = LINEAR1, .norm = {NORM1, NORM2, -1},
    .drop = {DROPOUT1, DROPOUT2, -1}, .nchild = NCHILD, .names = layer_children};
static const layer_kind dec_kind = {
    .nblocks = 3, .attn = {D_SELF_ATTN, D_CROSS_ATTN}, .linear1 = D_LINEAR1,
    .norm = {D_NORM1, D_NORM2, D_NORM3}, .drop = {D_DROPOUT1, D_DROPOUT2, D_DROPOUT3},
    .nchild = D_NCHILD, .names = dec_layer_children};

/* What a transformer forward takes beside x: the decoder's memory (NULL
 * for the encoder), the self-attention's masks (src's or tgt's) and those
 * of the attention over the memory. */
typedef struct tf_inputs {
    const clt_tensor *memory;
    const clt_tensor *mask, *kpm;
    const clt_tensor *mem_mask, *mem_kpm;
} tf_inputs;

static clt_status layer_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);
static clt_status needs_memory(clt_module *m, const clt_tensor *x, clt_tensor **out);
static const clt__module_ops layer_ops = {"TransformerEncoderLayer", layer_forward, NULL, NULL};
static const clt__module_ops dec_layer_ops = {"TransformerDecoderLayer", needs_memory, NULL,
                                              NULL};

/* y = child c of m applied to x, left in the caller's scope. */
static clt_status child(clt_module *m, int c, const clt_tensor *x, clt_tensor **y)
{
    return clt_module_forward(m->children[c], x, y);
}

/* Residual block s of layer m on x: _sa_block, dropout1(self_attn(x, x,
 * x)); the decoder's _mha_block, dropout2(multihead_attn(x, mem, mem));
 * _ff_block, drop(linear2(dropout(activation(linear1(x))))). */
static clt_status block(clt_module *m, const layer_kind *k, int s, const clt_tensor *x,
                        const tf_inputs *in, clt_tensor **out)
{
    const char *fn = m->ops->name;
    clt_status st;
    clt_tensor *h, *g, *d, *l;
    if (s < k->nblocks - 1) {
        const clt_tensor *kv = s == 0 ? x : in->memory;
        CLT__TRY(mha_run(m->children[k->attn[s]], x, kv, kv, s ? in->mem_kpm : in->kpm,
                         s ? in->mem_mask : in->mask, false, false, &l, NULL));
    } else {
        CLT__TRY(child(m, k->linear1, x, &h));
        CLT__TRY(m->i[0] ? clt__gelu_rec(fn, h, &g) : clt__relu_rec(fn, h, &g));
        CLT__TRY(child(m, k->linear1 + 1, g, &d));
        CLT__TRY(child(m, k->linear1 + 2, d, &l));
    }
    CLT__TRY(child(m, k->drop[s], l, out));
done:
    return st;
}

/* A layer's forward: each block as x + block(norm(x)) with norm_first,
 * else norm(x + block(x)). */
static clt_status layer_run(clt_module *m, const clt_tensor *x, const tf_inputs *in,
                            clt_tensor **out)
{
    const layer_kind *k = m->ops == &dec_layer_ops ? &dec_kind : &enc_kind;
    const char *fn = m->ops->name;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    const clt_tensor *cur = x;
    clt_tensor *n, *f, *s;
    for (int j = 0; j < k->nblocks; j++) {
        if (m->i[1]) {
            CLT__TRY(child(m, k->norm[j], cur, &n));
            CLT__TRY(block(m, k, j, n, in, &f));
            CLT__TRY(clt__add_rec(fn, cur, f, &s));
        } else {
            CLT__TRY(block(m, k, j, cur, in, &f));
            CLT__TRY(clt__add_rec(fn, cur, f, &n));
            CLT__TRY(child(m, k->norm[j], n, &s));
        }
        cur = s;
    }
    *out = (clt_tensor *)cur;
    st = clt_scope_keep(*out);
done:
    clt_scope_end();
    if (st != CLT_OK)
        *out = NULL;
    return st;
}

static clt_status layer_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return layer_run(m, x, &(tf_inputs){0}, out);
}

/* The forward of a decoder or a Transformer, which take two inputs. */
static clt_status needs_memory(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    (void)x;
    *out = NULL;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: forward() missing 1 required positional argument: '%s' (run it with "
                      "%s)",
                      m->ops->name, strcmp(m->ops->name, "Transformer") ? "memory" : "tgt",
                      strcmp(m->ops->name, "Transformer") ? "clt_transformer_decoder_forward"
                                                          : "clt_transformer_forward");
}

/* TransformerEncoderLayer's or TransformerDecoderLayer's constructor (the
 * layer kind k with ops), for the public call fn. */
static clt_status layer_new(const char *fn, const clt__module_ops *ops, const layer_kind *k,
                            clt_device *dev, int64_t d_model, int64_t nhead,
                            int64_t dim_feedforward, double dropout, const char *activation,
                            double layer_norm_eps, int batch_first, int norm_first,
                            clt_generator *gen, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    bool gelu = activation && strcmp(activation, "gelu") == 0;
    if (activation && !gelu && strcmp(activation, "relu") != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: activation should be relu/gelu, not %s", fn, activation);
    if (dim_feedforward <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: dim_feedforward (%lld) must be positive",
                          fn, (long long)dim_feedforward);
    if (!(layer_norm_eps >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: layer_norm_eps %g: expected eps >= 0",
                          fn, layer_norm_eps);
    clt_module *m = NULL, *c[D_NCHILD] = {0};
    clt_status st;
    uint64_t drawn = clt_generator_offset(gen);
    for (int a = 0; a < k->nblocks - 1; a++)
        CLT__TRY(clt_multihead_attention_layer(dev, d_model, nhead, dropout, 1, batch_first, gen,
                                               &c[k->attn[a]]));
    CLT__TRY(clt_linear(dev, d_model, dim_feedforward, 1, gen, &c[k->linear1]));
    CLT__TRY(clt_dropout_layer(dropout, gen, &c[k->linear1 + 1]));
    CLT__TRY(clt_linear(dev, dim_feedforward, d_model, 1, gen, &c[k->linear1 + 2]));
    for (int j = 0; j < k->nblocks; j++)
        CLT__TRY(clt_layer_norm_layer(dev, 1, &d_model, layer_norm_eps, 1, &c[k->norm[j]]));
    for (int j = 0; j < k->nblocks; j++)
        CLT__TRY(clt_dropout_layer(dropout, gen, &c[k->drop[j]]));
    CLT__TRY(clt__module_new(ops, NULL, &m));
    m->i[0] = gelu;
    m->i[1] = norm_first != 0;
    CLT__TRY(clt__module_adopt(m, c, (size_t)k->nchild, k->names));
    memset(c, 0, sizeof c);
    *out = m;
    m = NULL;
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, drawn);
    for (int j = 0; j < D_NCHILD; j++)
        clt_module_free(c[j]);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_transformer_encoder_layer(clt_device *dev, int64_t d_model, int64_t nhead,
                                         int64_t dim_feedforward, double dropout,
                                         const char *activation, double layer_norm_eps,
                                         int batch_first, int norm_first, clt_generator *gen,
                                         clt_module **out)
{
    return layer_new("clt_transformer_encoder_layer", &layer_ops, &enc_kind, dev, d_model, nhead,
                     dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                     norm_first, gen, out);
}

clt_status clt_transformer_decoder_layer(clt_device *dev, int64_t d_model, int64_t nhead,
                                         int64_t dim_feedforward, double dropout,
                                         const char *activation, double layer_norm_eps,
                                         int batch_first, int norm_first, clt_generator *gen,
                                         clt_module **out)
{
    return layer_new("clt_transformer_decoder_layer", &dec_layer_ops, &dec_kind, dev, d_model,
                     nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                     norm_first, gen, out);
}

/* ---- TransformerEncoder and TransformerDecoder ---------------------------------------- */

/* Children "layers" (a ModuleList of the layers) and, when given, "norm". */
static const char *const stack_children[] = {"layers", "norm"};

static clt_status module_list_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "ModuleList: a ModuleList has no forward of its own; run its modules");
}

static const clt__module_ops module_list_ops = {"ModuleList", module_list_forward, NULL, NULL};

static clt_status encoder_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);
static const clt__module_ops encoder_ops = {"TransformerEncoder", encoder_forward, NULL, NULL};
static const clt__module_ops decoder_ops = {"TransformerDecoder", needs_memory, NULL, NULL};

/* The layers of an encoder or decoder in order, then its norm. */
static clt_status stack_run(clt_module *m, const clt_tensor *x, const tf_inputs *in,
                            clt_tensor **out)
{
    const clt_module *list = m->children[0];
    clt_tensor *cur = NULL;
    clt_status st = CLT_OK;
    for (size_t k = 0; k < list->nchildren && st == CLT_OK; k++) {
        clt_tensor *next = NULL;
        st = layer_run(list->children[k], cur ? cur : x, in, &next);
        clt_tensor_free(cur);
        cur = next;
    }
    if (st == CLT_OK && m->nchildren > 1) {
        clt_tensor *next = NULL;
        st = clt_module_forward(m->children[1], cur, &next);
        clt_tensor_free(cur);
        cur = next;
    }
    *out = st == CLT_OK ? cur : NULL;
    return st;
}

static clt_status encoder_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return stack_run(m, x, &(tf_inputs){0}, out);
}

/* TransformerEncoder's or TransformerDecoder's constructor (stack_ops over
 * layers of layer_ops), for the public call fn. */
static clt_status stack_new(const char *fn, const clt__module_ops *stack_ops,
                            const clt__module_ops *layer_ops_, clt_module *const *layers,
                            size_t num_layers, clt_module *norm, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(layers, fn);
    if (num_layers == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: num_layers must be positive", fn);
    for (size_t k = 0; k <= num_layers; k++) {
        clt_module *l = k < num_layers ? layers[k] : norm;
        if (l == NULL && k == num_layers)
            break;
        if (l == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: layer %zu is NULL", fn, k);
        if (k < num_layers && l->ops != layer_ops_)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: layer %zu is a %s, not a %s", fn,
                              k, l->ops->name, layer_ops_->name);
        if (l->owner)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: module %zu (%s) already belongs to a %s, which releases it; "
                              "a module can be given to one container only",
                              fn, k, l->ops->name, l->owner->ops->name);
        for (size_t j = 0; j < k; j++)
            if (layers[j] == l)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: modules %zu and %zu are the same module", fn, j, k);
    }
    clt_module *list = NULL, *m = NULL;
    clt_status st;
    CLT__TRY(clt__module_new(&module_list_ops, NULL, &list));
    CLT__TRY(clt__module_adopt(list, layers, num_layers, NULL));
    CLT__TRY(clt__module_new(stack_ops, NULL, &m));
    clt_module *kids[2] = {list, norm};
    CLT__TRY(clt__module_adopt(m, kids, norm ? 2 : 1, stack_children));
    list = NULL;
    *out = m;
    m = NULL;
done:
    if (list) { /* the layers stay the caller's */
        list->nchildren = 0;
        for (size_t k = 0; k < num_layers; k++)
            layers[k]->owner = NULL;
    }
    clt_module_free(list);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_transformer_encoder(clt_module *const *layers, size_t num_layers, clt_module *norm,
                                   clt_module **out)
{
    return stack_new("clt_transformer_encoder", &encoder_ops, &layer_ops, layers, num_layers,
                     norm, out);
}

clt_status clt_transformer_decoder(clt_module *const *layers, size_t num_layers, clt_module *norm,
                                   clt_module **out)
{
    return stack_new("clt_transformer_decoder", &decoder_ops, &dec_layer_ops, layers, num_layers,
                     norm, out);
}

/* layer_run and stack_run through the module's hooks, which see x. */
static clt_status tf_layer_multi(clt_module *m, void *ctx, const clt_tensor *x, clt_tensor **out)
{
    return layer_run(m, x, ctx, out);
}

static clt_status tf_stack_multi(clt_module *m, void *ctx, const clt_tensor *x, clt_tensor **out)
{
    return stack_run(m, x, ctx, out);
}

/* The public forward fn of the encoder's (dec false) or the decoder's
 * layers and stacks: its checks, then layer or stack m under the forward
 * bracket. */
static clt_status tf_forward(const char *fn, bool dec, clt_module *m, const clt_tensor *x,
                             const tf_inputs *in, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    if (x == NULL || (dec && in->memory == NULL))
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn,
                          x ? "memory" : dec ? "tgt" : "src");
    const clt__module_ops *layer = dec ? &dec_layer_ops : &layer_ops,
                          *stack = dec ? &decoder_ops : &encoder_ops;
    if (m->ops != layer && m->ops != stack)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a %s or %s", fn,
                          m->ops->name, layer->name, stack->name);
    clt__forward_begin();
    clt_status st = clt__forward_end(
        clt__module_call_multi(m, x, m->ops == layer ? tf_layer_multi : tf_stack_multi,
                               (void *)in, out),
        fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

clt_status clt_transformer_encoder_forward(clt_module *m, const clt_tensor *src,
                                           const clt_tensor *mask,
                                           const clt_tensor *src_key_padding_mask,
                                           clt_tensor **out)
{
    return tf_forward("clt_transformer_encoder_forward", false, m, src,
                      &(tf_inputs){NULL, mask, src_key_padding_mask, NULL, NULL}, out);
}

clt_status clt_transformer_decoder_forward(clt_module *m, const clt_tensor *tgt,
                                           const clt_tensor *memory, const clt_tensor *tgt_mask,
                                           const clt_tensor *memory_mask,
                                           const clt_tensor *tgt_key_padding_mask,
                                           const clt_tensor *memory_key_padding_mask,
                                           clt_tensor **out)
{
    return tf_forward("clt_transformer_decoder_forward", true, m, tgt,
                      &(tf_inputs){memory, tgt_mask, tgt_key_padding_mask, memory_mask,
                                   memory_key_padding_mask},
                      out);
}

/* ---- Transformer ------------------------------------------------------------------- */

/* Children "encoder" and "decoder" (TransformerEncoder and
 * TransformerDecoder, each with its norm); i[0] d_model, i[1] batch_first. */
static const char *const transformer_children[] = {"encoder", "decoder"};
static const clt__module_ops transformer_ops = {"Transformer", needs_memory, NULL, NULL};

/* Transformer._reset_parameters: xavier_uniform_ on every parameter of m
 * and its children with more than one dim, in the state_dict's order. */
static clt_status xavier_all(clt_module *m, clt_generator *gen, const char *fn)
{
    clt_status st = CLT_OK;
    for (int k = 0; k < m->nparams && st == CLT_OK; k++) {
        clt_tensor *p = m->params[k], *t = NULL;
        if (p->ndim < 2)
            continue;
        int64_t rf = 1; /* the receptive field, 1 for the 2-D weights here */
        for (int d = 2; d < p->ndim; d++)
            rf *= p->shape[d];
        double bound = sqrt(6.0 / (double)((p->shape[0] + p->shape[1]) * rf));
        st = clt__init_uniform(gen, m->dev, p->ndim, p->shape, bound, &t, fn);
        if (st == CLT_OK)
            st = clt__copy_into(p, t, fn);
        clt_tensor_free(t);
    }
    for (size_t c = 0; c < m->nchildren && st == CLT_OK; c++)
        st = xavier_all(m->children[c], gen, fn);
    return st;
}

/* nn.Transformer's encoder (dec false) or decoder: num layers made with
 * the given settings, then a LayerNorm(d_model, eps). */
static clt_status transformer_stack(const char *fn, bool dec, clt_device *dev, int64_t num,
                                    int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                    double dropout, const char *activation, double eps, int bf,
                                    int nf, clt_generator *gen, clt_module **out)
{
    clt_module **l = clt__malloc(sizeof *l * (size_t)num), *norm = NULL;
    if (l == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    int64_t made = 0;
    for (; made < num && st == CLT_OK; made++)
        st = layer_new(fn, dec ? &dec_layer_ops : &layer_ops, dec ? &dec_kind : &enc_kind, dev,
                       d_model, nhead, dim_feedforward, dropout, activation, eps, bf, nf, gen,
                       &l[made]); /* a failed one is NULL */
    if (st == CLT_OK)
        st = clt_layer_norm_layer(dev, 1, &d_model, eps, 1, &norm);
    if (st == CLT_OK)
        st = stack_new(fn, dec ? &decoder_ops : &encoder_ops, dec ? &dec_layer_ops : &layer_ops,
                       l, (size_t)num, norm, out);
    if (st != CLT_OK) {
        for (int64_t k = 0; k < made; k++)
            clt_module_free(l[k]);
        clt_module_free(norm);
    }
    clt_free(l);
    return st;
}

clt_status clt_transformer(clt_device *dev, int64_t d_model, int64_t nhead,
                           int64_t num_encoder_layers, int64_t num_decoder_layers,
                           int64_t dim_feedforward, double dropout, const char *activation,
                           double layer_norm_eps, int batch_first, int norm_first,
                           clt_generator *gen, clt_module **out)
{
    static const char fn[] = "clt_transformer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (num_encoder_layers <= 0 || num_decoder_layers <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_encoder_layers (%lld) and num_decoder_layers (%lld) must be "
                          "positive",
                          fn, (long long)num_encoder_layers, (long long)num_decoder_layers);
    clt_module *c[2] = {NULL, NULL}, *m = NULL;
    clt_status st;
    uint64_t drawn = clt_generator_offset(gen);
    for (int d = 0; d < 2; d++)
        CLT__TRY(transformer_stack(fn, d == 1, dev, d ? num_decoder_layers : num_encoder_layers,
                                   d_model, nhead, dim_feedforward, dropout, activation,
                                   layer_norm_eps, batch_first, norm_first, gen, &c[d]));
    CLT__TRY(clt__module_new(&transformer_ops, NULL, &m));
    m->i[0] = d_model;
    m->i[1] = batch_first != 0;
    CLT__TRY(clt__module_adopt(m, c, 2, transformer_children));
    c[0] = c[1] = NULL;
    CLT__TRY(xavier_all(m, gen, fn));
    *out = m;
    m = NULL;
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, drawn);
    clt_module_free(c[0]);
    clt_module_free(c[1]);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* clt_transformer_forward's inputs besides src, for its run through the
 * module's hooks (which see src and the output). */
typedef struct tr_ctx {
    const clt_tensor *tgt, *src_mask, *tgt_mask, *memory_mask, *src_kpm, *tgt_kpm, *mem_kpm;
} tr_ctx;

static clt_status tr_multi(clt_module *m, void *ctx, const clt_tensor *src, clt_tensor **out)
{
    const tr_ctx *k = ctx;
    clt_tensor *mem = NULL;
    clt_status st = stack_run(m->children[0], src,
                              &(tf_inputs){NULL, k->src_mask, k->src_kpm, NULL, NULL}, &mem);
    if (st == CLT_OK)
        st = stack_run(m->children[1], k->tgt,
                       &(tf_inputs){mem, k->tgt_mask, k->tgt_kpm, k->memory_mask, k->mem_kpm},
                       out);
    clt_tensor_free(mem);
    return st;
}

clt_status clt_transformer_forward(clt_module *m, const clt_tensor *src, const clt_tensor *tgt,
                                   const clt_tensor *src_mask, const clt_tensor *tgt_mask,
                                   const clt_tensor *memory_mask,
                                   const clt_tensor *src_key_padding_mask,
                                   const clt_tensor *tgt_key_padding_mask,
                                   const clt_tensor *memory_key_padding_mask, clt_tensor **out)
{
    static const char fn[] = "clt_transformer_forward";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(src, fn);
    CLT__REQUIRE_ARG(tgt, fn);
    if (m->ops != &transformer_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a Transformer",
                          fn, m->ops->name);
    int bd = m->i[1] ? 0 : 1;
    if (src->ndim == 3 && (tgt->ndim <= bd || src->shape[bd] != tgt->shape[bd]))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the batch number of src and tgt must be equal", fn);
    if (src->ndim == 0 || tgt->ndim == 0 || src->shape[src->ndim - 1] != m->i[0] ||
        tgt->shape[tgt->ndim - 1] != m->i[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the feature number of src and tgt must be equal to d_model", fn);
    tr_ctx k = {tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask,
                tgt_key_padding_mask, memory_key_padding_mask};
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, src, tr_multi, &k, out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

clt_status clt_generate_square_subsequent_mask(clt_device *dev, clt_dtype dtype, int64_t sz,
                                               clt_tensor **out)
{
    static const char fn[] = "clt_generate_square_subsequent_mask";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    clt_status st = clt__check_dtype(dev, dtype, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_float(dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: the mask holds -inf, so its dtype must be floating, not %s", fn,
                          clt_dtype_name(dtype));
    if (sz < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Trying to create tensor with negative dimension %lld: [%lld, %lld]",
                          fn, (long long)sz, (long long)sz, (long long)sz);
    clt_tensor *full = NULL;
    st = clt__full(dev, dtype, 2, (int64_t[]){sz, sz}, -INFINITY, &full);
    if (st == CLT_OK)
        st = clt__tri(full, 1, true, out, fn);
    clt_tensor_free(full);
    if (st != CLT_OK) {
        *out = NULL;
        return clt__error_in(st, fn);
    }
    return clt__ok();
}
