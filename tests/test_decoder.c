/* test_decoder.c: TransformerDecoderLayer, TransformerDecoder and
 * Transformer: names as torch's, the forward against its definition written
 * with the public calls of the parts (both norm orders, masks), gradients
 * by finite differences, dropout and its generator, clone and to, the
 * causal mask, errors.  Parity with torch itself is tests/conformance.py's
 * decoder section. */
#include <stdio.h>

#include "gradcheck.h"

/* ---- helpers --------------------------------------------------------------------------- */

static void assert_names(const clt_module *m, const char *const *want, size_t n)
{
    clt_named_tensor *p;
    size_t got;
    CHECK(clt_module_state(m, &p, &got));
    cr_assert_eq(got, n, "%zu tensors, want %zu", got, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(p[k].name, want[k]);
    clt_free(p);
}

/* The largest |a - b| over two tensors of one size. */
static double max_diff(const clt_tensor *a, const clt_tensor *b)
{
    cr_assert_eq(clt_tensor_numel(a), clt_tensor_numel(b));
    size_t n = (size_t)clt_tensor_numel(a);
    double *x = read_as_f64(a), *y = read_as_f64(b), d = 0;
    for (size_t i = 0; i < n; i++)
        d = isnan(x[i]) || isnan(y[i]) ? INFINITY : fmax(d, fabs(x[i] - y[i]));
    free(x);
    free(y);
    return d;
}

static clt_tensor *randn(clt_generator *g, clt_device *dev, int nd, const int64_t *shape)
{
    clt_tensor *t;
    CHECK(clt_randn(g, dev, CLT_FLOAT64, nd, shape, &t));
    return t;
}

/* ---- the reference: the layer's definition with the parts' public calls -------------- */

/* Each call's result is the next one's input; everything is released at the
 * scope's end but the result. */
static clt_tensor *part(clt_module *m, const char *name, const clt_tensor *x)
{
    clt_tensor *y;
    clt_module *c = clt_module_child(m, name);
    cr_assert_not_null(c, "no child %s", name);
    CHECK(clt_module_forward(c, x, &y));
    return y;
}

static clt_tensor *attn(clt_module *m, const char *name, const clt_tensor *q,
                        const clt_tensor *kv, const clt_tensor *kpm, const clt_tensor *am)
{
    clt_tensor *y;
    CHECK(clt_multihead_attention(clt_module_child(m, name), q, kv, kv, kpm, am, 0, 0, &y, NULL));
    return y;
}

static clt_tensor *plus(const clt_tensor *a, const clt_tensor *b)
{
    clt_tensor *y;
    CHECK(clt_add(a, b, &y));
    return y;
}

/* linear2(activation(linear1(x))): the dropouts are off in eval mode. */
static clt_tensor *ff(clt_module *m, int gelu, const clt_tensor *x)
{
    clt_tensor *h = part(m, "linear1", x), *a;
    CHECK(gelu ? clt_gelu(h, &a) : clt_relu(h, &a));
    return part(m, "linear2", a);
}

/* torch 1.13's TransformerDecoderLayer.forward in eval mode. */
static clt_tensor *decoder_layer_ref(clt_module *m, int gelu, int nf, const clt_tensor *x,
                                     const clt_tensor *mem, const clt_tensor *const *masks)
{
    const clt_tensor *tm = masks[0], *mm = masks[1], *tk = masks[2], *mk = masks[3];
    clt_tensor *y;
    CHECK(clt_scope_begin());
    if (nf) {
        clt_tensor *n = part(m, "norm1", x);
        x = plus(x, attn(m, "self_attn", n, n, tk, tm));
        x = plus(x, attn(m, "multihead_attn", part(m, "norm2", x), mem, mk, mm));
        y = plus(x, ff(m, gelu, part(m, "norm3", x)));
    } else {
        x = part(m, "norm1", plus(x, attn(m, "self_attn", x, x, tk, tm)));
        x = part(m, "norm2", plus(x, attn(m, "multihead_attn", x, mem, mk, mm)));
        y = part(m, "norm3", plus(x, ff(m, gelu, x)));
    }
    CHECK(clt_scope_keep(y));
    clt_scope_end();
    return y;
}

/* ---- names ----------------------------------------------------------------------------- */

static const char *const layer_names[] = {
    "self_attn.in_proj_weight",      "self_attn.in_proj_bias",
    "self_attn.out_proj.weight",     "self_attn.out_proj.bias",
    "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
    "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias",
    "linear1.weight",                "linear1.bias",
    "linear2.weight",                "linear2.bias",
    "norm1.weight",                  "norm1.bias",
    "norm2.weight",                  "norm2.bias",
    "norm3.weight",                  "norm3.bias"};

Test(decoder, names_as_torch)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(1, &gen));
    clt_module *l[2], *norm, *d;
    for (int k = 0; k < 2; k++)
        CHECK(clt_transformer_decoder_layer(dev, 8, 2, 16, 0.1, NULL, 1e-5, 0, 0, gen, &l[k]));
    cr_assert_str_eq(clt_module_name(l[0]), "TransformerDecoderLayer");
    assert_names(l[0], layer_names, 18);
    /* the children, dropouts included, in torch's order */
    static const char *const kids[] = {"self_attn", "multihead_attn", "linear1", "dropout",
                                       "linear2",   "norm1",          "norm2",   "norm3",
                                       "dropout1",  "dropout2",       "dropout3"};
    for (size_t k = 0; k < 11; k++)
        cr_assert_not_null(clt_module_child(l[0], kids[k]), "no %s", kids[k]);
    cr_assert_str_eq(clt_module_name(clt_module_child(l[0], "dropout3")), "Dropout");
    CHECK(clt_layer_norm_layer(dev, 1, (int64_t[]){8}, 1e-5, 1, &norm));
    CHECK(clt_transformer_decoder(l, 2, norm, &d));
    cr_assert_str_eq(clt_module_name(d), "TransformerDecoder");
    clt_named_tensor *p;
    size_t n;
    CHECK(clt_module_state(d, &p, &n));
    cr_assert_eq(n, 2 * 18 + 2);
    char want[96];
    for (size_t k = 0; k < 36; k++) {
        snprintf(want, sizeof want, "layers.%zu.%s", k / 18, layer_names[k % 18]);
        cr_assert_str_eq(p[k].name, want);
    }
    cr_assert_str_eq(p[36].name, "norm.weight");
    cr_assert_str_eq(p[37].name, "norm.bias");
    clt_free(p);
    clt_module_free(d);
    /* nn.Transformer(8, 2, 1, 1, 16): encoder then decoder, each with its norm */
    clt_module *t;
    CHECK(clt_transformer(dev, 8, 2, 1, 1, 16, 0.1, "relu", 1e-5, 0, 0, gen, &t));
    cr_assert_str_eq(clt_module_name(t), "Transformer");
    CHECK(clt_module_state(t, &p, &n));
    cr_assert_eq(n, 12 + 2 + 18 + 2);
    cr_assert_str_eq(p[0].name, "encoder.layers.0.self_attn.in_proj_weight");
    cr_assert_str_eq(p[11].name, "encoder.layers.0.norm2.bias");
    cr_assert_str_eq(p[12].name, "encoder.norm.weight");
    cr_assert_str_eq(p[13].name, "encoder.norm.bias");
    for (size_t k = 0; k < 18; k++) {
        snprintf(want, sizeof want, "decoder.layers.0.%s", layer_names[k]);
        cr_assert_str_eq(p[14 + k].name, want);
    }
    cr_assert_str_eq(p[32].name, "decoder.norm.weight");
    cr_assert_str_eq(p[33].name, "decoder.norm.bias");
    clt_free(p);
    clt_module_free(t);
    clt_generator_free(gen);
}

/* Transformer._reset_parameters: the weights of more than one dim are
 * xavier-uniform, the biases and norms as their layers left them. */
Test(decoder, transformer_initialisation)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    enum { E = 8, F = 64 };
    clt_module *t;
    CHECK(clt_transformer(dev, E, 2, 2, 2, F, 0.1, "relu", 1e-5, 0, 0, gen, &t));
    clt_named_tensor *p;
    size_t n;
    CHECK(clt_module_named_parameters(t, &p, &n));
    for (size_t k = 0; k < n; k++) {
        const clt_tensor *w = p[k].tensor;
        int64_t numel = clt_tensor_numel(w);
        double *v = read_as_f64(w), big = 0;
        for (int64_t i = 0; i < numel; i++)
            big = fmax(big, fabs(v[i]));
        const char *name = p[k].name;
        if (clt_tensor_ndim(w) == 2) {
            const int64_t *s = clt_tensor_shape(w);
            double bound = sqrt(6.0 / (double)(s[0] + s[1]));
            /* linear2 [E, F] was kaiming-uniform within 1/sqrt(F) = 0.125:
             * xavier's 0.28 shows it drawn again */
            cr_assert(big <= bound && big > 0.8 * bound, "%s: max %g, xavier bound %g", name,
                      big, bound);
        } else if (strstr(name, "norm") && strstr(name, "weight")) {
            for (int64_t i = 0; i < numel; i++)
                cr_assert_eq(v[i], 1.0, "%s", name);
        } else if (strstr(name, "in_proj_bias") || strstr(name, "out_proj.bias") ||
                   strstr(name, "norm")) {
            for (int64_t i = 0; i < numel; i++)
                cr_assert_eq(v[i], 0.0, "%s", name);
        } else { /* linear1.bias, linear2.bias: 1/sqrt(fan_in) */
            double fan_in = strstr(name, "linear1") ? E : F;
            cr_assert(big <= 1.0 / sqrt(fan_in) && big > 0, "%s: max %g", name, big);
        }
        free(v);
    }
    clt_free(p);
    /* the layers differ from each other (torch's deep copies start equal,
     * and _reset_parameters draws each again) */
    clt_named_tensor *s;
    CHECK(clt_module_state(t, &s, &n));
    const clt_tensor *a = NULL, *b = NULL;
    for (size_t k = 0; k < n; k++) {
        if (strcmp(s[k].name, "decoder.layers.0.linear1.weight") == 0)
            a = s[k].tensor;
        if (strcmp(s[k].name, "decoder.layers.1.linear1.weight") == 0)
            b = s[k].tensor;
    }
    cr_assert(a && b);
    cr_assert_gt(max_diff(a, b), 0.01);
    clt_free(s);
    clt_module_free(t);
    clt_generator_free(gen);
}

/* ---- the forward ------------------------------------------------------------------------- */

Test(decoder, layer_against_definition)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    enum { E = 8, H = 2, F = 12, T = 5, S = 4, N = 3 };
    for (int nf = 0; nf < 2; nf++)
        for (int bf = 0; bf < 2; bf++)
            for (int gelu = 0; gelu < 2; gelu++) {
                clt_module *m;
                CHECK(clt_transformer_decoder_layer(dev, E, H, F, 0.1, gelu ? "gelu" : "relu",
                                                    1e-5, bf, nf, gen, &m));
                CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
                clt_module_train(m, 0);
                int64_t xs[3] = {bf ? N : T, bf ? T : N, E}, ms[3] = {bf ? N : S, bf ? S : N, E};
                clt_tensor *x = randn(gen, dev, 3, xs), *mem = randn(gen, dev, 3, ms);
                /* an additive causal tgt_mask, a bool memory_mask, a bool
                 * tgt padding mask and an additive memory padding mask */
                clt_tensor *mk[4], *tmp;
                CHECK(clt_generate_square_subsequent_mask(dev, CLT_FLOAT64, T, &mk[0]));
                double mm[T * S] = {0}, tk[N * T] = {0}, mkp[N * S] = {0};
                mm[1] = mm[3 * S] = 1;
                tk[1 * T + 4] = 1;
                mkp[2 * S + 3] = -INFINITY;
                mkp[1] = -0.75;
                mk[1] = tensor_of(dev, CLT_BOOL, 2, (int64_t[]){T, S}, mm);
                mk[2] = tensor_of(dev, CLT_BOOL, 2, (int64_t[]){N, T}, tk);
                mk[3] = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){N, S}, mkp);
                const clt_tensor *none[4] = {NULL, NULL, NULL, NULL};
                const clt_tensor *with[4] = {mk[0], mk[1], mk[2], mk[3]};
                for (int masked = 0; masked < 2; masked++) {
                    const clt_tensor *const *ms_ = masked ? with : none;
                    clt_tensor *y, *want = decoder_layer_ref(m, gelu, nf, x, mem, ms_);
                    CHECK(clt_transformer_decoder_forward(m, x, mem, ms_[0], ms_[1], ms_[2],
                                                          ms_[3], &y));
                    assert_shape(y, 3, xs);
                    double d = max_diff(y, want);
                    cr_assert(d < 1e-12, "nf %d bf %d gelu %d masks %d: off by %g", nf, bf,
                              gelu, masked, d);
                    /* the memory matters, and so do the masks */
                    CHECK(clt_mul_scalar(mem, 2.0, &tmp));
                    clt_tensor *y2;
                    CHECK(clt_transformer_decoder_forward(m, x, tmp, ms_[0], ms_[1], ms_[2],
                                                          ms_[3], &y2));
                    cr_assert_gt(max_diff(y, y2), 1e-3);
                    clt_tensor_free(y2);
                    clt_tensor_free(tmp);
                    clt_tensor_free(y);
                    clt_tensor_free(want);
                }
                clt_tensor *y0, *y1;
                CHECK(clt_transformer_decoder_forward(m, x, mem, NULL, NULL, NULL, NULL, &y0));
                CHECK(clt_transformer_decoder_forward(m, x, mem, mk[0], mk[1], mk[2], mk[3],
                                                      &y1));
                cr_assert_gt(max_diff(y0, y1), 1e-3);
                clt_tensor_free(y0);
                clt_tensor_free(y1);
                for (int k = 0; k < 4; k++)
                    clt_tensor_free(mk[k]);
                clt_tensor_free(x);
                clt_tensor_free(mem);
                clt_module_free(m);
            }
    clt_generator_free(gen);
}

/* A TransformerDecoder is its layers in turn over one memory, then its
 * norm; a Transformer its decoder over its encoder's output. */
Test(decoder, stacks_and_transformer_compose)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(9, &gen));
    enum { E = 8, H = 4, F = 16, T = 4, S = 6, N = 2 };
    clt_module *l[2], *norm, *d;
    for (int k = 0; k < 2; k++)
        CHECK(clt_transformer_decoder_layer(dev, E, H, F, 0.0, "gelu", 1e-5, 1, 1, gen, &l[k]));
    CHECK(clt_layer_norm_layer(dev, 1, (int64_t[]){E}, 1e-5, 1, &norm));
    CHECK(clt_transformer_decoder(l, 2, norm, &d));
    CHECK(clt_module_to_dtype(d, CLT_FLOAT64));
    int64_t xs[3] = {N, T, E}, ms[3] = {N, S, E};
    clt_tensor *x = randn(gen, dev, 3, xs), *mem = randn(gen, dev, 3, ms), *tm, *a, *b, *c, *y;
    CHECK(clt_generate_square_subsequent_mask(dev, CLT_FLOAT64, T, &tm));
    CHECK(clt_transformer_decoder_forward(l[0], x, mem, tm, NULL, NULL, NULL, &a));
    CHECK(clt_transformer_decoder_forward(l[1], a, mem, tm, NULL, NULL, NULL, &b));
    CHECK(clt_module_forward(norm, b, &c));
    CHECK(clt_transformer_decoder_forward(d, x, mem, tm, NULL, NULL, NULL, &y));
    cr_assert(max_diff(y, c) < 1e-12, "decoder off by %g", max_diff(y, c));
    clt_tensor *parts[] = {a, b, c, y};
    for (int k = 0; k < 4; k++)
        clt_tensor_free(parts[k]);
    clt_module_free(d);
    clt_tensor_free(tm);
    clt_tensor_free(x);
    clt_tensor_free(mem);
    /* Transformer, sequence first */
    clt_module *t;
    CHECK(clt_transformer(dev, E, H, 2, 1, F, 0.1, "relu", 1e-5, 0, 0, gen, &t));
    CHECK(clt_module_to_dtype(t, CLT_FLOAT64));
    clt_module_train(t, 0);
    int64_t ss[3] = {S, N, E}, ts[3] = {T, N, E};
    clt_tensor *src = randn(gen, dev, 3, ss), *tgt = randn(gen, dev, 3, ts), *mask;
    double sk[N * S] = {0};
    sk[S + 2] = 1;
    clt_tensor *skp = tensor_of(dev, CLT_BOOL, 2, (int64_t[]){N, S}, sk);
    CHECK(clt_generate_square_subsequent_mask(dev, CLT_FLOAT64, T, &mask));
    CHECK(clt_transformer_encoder_forward(clt_module_child(t, "encoder"), src, NULL, skp, &a));
    CHECK(clt_transformer_decoder_forward(clt_module_child(t, "decoder"), tgt, a, mask, NULL,
                                          NULL, skp, &b));
    CHECK(clt_transformer_forward(t, src, tgt, NULL, mask, NULL, skp, NULL, skp, &y));
    assert_shape(y, 3, ts);
    cr_assert(max_diff(y, b) < 1e-12, "transformer off by %g", max_diff(y, b));
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(y);
    clt_tensor_free(skp);
    clt_tensor_free(mask);
    clt_tensor_free(src);
    clt_tensor_free(tgt);
    clt_module_free(t);
    clt_generator_free(gen);
}

/* ---- gradients ------------------------------------------------------------------------ */

typedef struct gctx {
    clt_module *m;
    clt_tensor *kpm;
} gctx;

/* in: tgt, memory, an additive tgt_mask. */
static clt_status layer_gc(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gctx *g = ctx;
    return clt_transformer_decoder_forward(g->m, in[0], in[1], in[2], NULL, NULL, g->kpm, out);
}

/* in: src, tgt. */
static clt_status transformer_gc(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gctx *g = ctx;
    return clt_transformer_forward(g->m, in[0], in[1], NULL, NULL, NULL, NULL, NULL, g->kpm,
                                   out);
}

Test(decoder, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(4, &gen));
    enum { E = 4, H = 2, F = 6, T = 3, S = 2, N = 2 };
    double tgt[T * N * E], mem[S * N * E], tm[T * T];
    for (int i = 0; i < T * N * E; i++)
        tgt[i] = sin(1.3 * i + 0.2);
    for (int i = 0; i < S * N * E; i++)
        mem[i] = cos(0.7 * i - 0.4);
    for (int i = 0; i < T * T; i++)
        tm[i] = 0.3 * sin(2.1 * i);
    double kp[N * S] = {0, 0, 0, 1};
    gc_in ins[3] = {{3, {T, N, E}, tgt, 1}, {3, {S, N, E}, mem, 1}, {2, {T, T}, tm, 1}};
    for (int nf = 0; nf < 2; nf++) {
        clt_module *m;
        CHECK(clt_transformer_decoder_layer(dev, E, H, F, 0.0, nf ? "gelu" : "relu", 1e-5, 0, nf,
                                            gen, &m));
        CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
        gctx g = {m, tensor_of(dev, CLT_BOOL, 2, (int64_t[]){N, S}, kp)};
        gradcheck(dev, layer_gc, &g, 3, ins);
        clt_tensor_free(g.kpm);
        clt_module_free(m);
    }
    clt_module *t;
    CHECK(clt_transformer(dev, E, H, 1, 1, F, 0.0, "gelu", 1e-5, 1, 0, gen, &t));
    CHECK(clt_module_to_dtype(t, CLT_FLOAT64));
    gctx g = {t, NULL};
    gc_in tin[2] = {{3, {N, S, E}, mem, 1}, {3, {N, T, E}, tgt, 1}};
    gradcheck(dev, transformer_gc, &g, 2, tin);
    clt_module_free(t);
    clt_generator_free(gen);
}

/* ---- dropout, clone, to ----------------------------------------------------------------- */

Test(decoder, dropout_draws_from_its_generator)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g1, *g2;
    CHECK(clt_generator_new(21, &g1));
    CHECK(clt_generator_new(21, &g2));
    enum { E = 8, T = 6, S = 5, N = 2 };
    clt_module *a, *b;
    CHECK(clt_transformer_decoder_layer(dev, E, 2, 16, 0.5, "relu", 1e-5, 1, 0, g1, &a));
    CHECK(clt_transformer_decoder_layer(dev, E, 2, 16, 0.5, "relu", 1e-5, 1, 0, g2, &b));
    clt_tensor *x, *mem, *ya, *yb, *y2, *e1, *e2;
    CHECK(clt_randn(NULL, dev, CLT_FLOAT32, 3, (int64_t[]){N, T, E}, &x));
    CHECK(clt_randn(NULL, dev, CLT_FLOAT32, 3, (int64_t[]){N, S, E}, &mem));
    /* train mode: generators alike give the same masks; a second run draws
     * new ones */
    uint64_t before = clt_generator_offset(g1);
    CHECK(clt_transformer_decoder_forward(a, x, mem, NULL, NULL, NULL, NULL, &ya));
    cr_assert_gt(clt_generator_offset(g1), before, "train mode drew nothing");
    CHECK(clt_transformer_decoder_forward(b, x, mem, NULL, NULL, NULL, NULL, &yb));
    cr_assert_eq(max_diff(ya, yb), 0.0);
    CHECK(clt_transformer_decoder_forward(a, x, mem, NULL, NULL, NULL, NULL, &y2));
    cr_assert_gt(max_diff(ya, y2), 1e-3);
    /* eval mode: nothing drawn, the same twice, not train's */
    clt_module_train(a, 0);
    before = clt_generator_offset(g1);
    CHECK(clt_transformer_decoder_forward(a, x, mem, NULL, NULL, NULL, NULL, &e1));
    CHECK(clt_transformer_decoder_forward(a, x, mem, NULL, NULL, NULL, NULL, &e2));
    cr_assert_eq(clt_generator_offset(g1), before, "eval mode drew");
    cr_assert_eq(max_diff(e1, e2), 0.0);
    cr_assert_gt(max_diff(ya, e1), 1e-3);
    /* a forward that fails draws nothing */
    clt_module_train(a, 1);
    clt_tensor *bad, *o = NULL;
    CHECK(clt_zeros(dev, CLT_BOOL, 2, (int64_t[]){N, S + 1}, &bad));
    before = clt_generator_offset(g1);
    assert_error(clt_transformer_decoder_forward(a, x, mem, NULL, NULL, NULL, bad, &o),
                 CLT_ERR_SHAPE_MISMATCH,
                 "clt_transformer_decoder_forward: MultiheadAttention: expecting "
                 "key_padding_mask shape");
    cr_assert_null(o);
    cr_assert_eq(clt_generator_offset(g1), before);
    clt_tensor *all[] = {x, mem, ya, yb, y2, e1, e2, bad};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
    clt_module_free(a);
    clt_module_free(b);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

Test(decoder, clone_and_to)
{
    clt_device *dev = get_device("cpu"), *dev2;
    clt_generator *gen;
    CHECK(clt_generator_new(13, &gen));
    enum { E = 8, T = 4, S = 5, N = 2 };
    clt_module *t, *c;
    CHECK(clt_transformer(dev, E, 2, 1, 2, 16, 0.1, "gelu", 1e-5, 1, 1, gen, &t));
    clt_module_train(t, 0);
    CHECK(clt_module_clone(t, NULL, &c));
    cr_assert_str_eq(clt_module_name(c), "Transformer");
    cr_assert_eq(clt_module_is_training(c), 0);
    clt_tensor *src, *tgt, *y, *yc;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){N, S, E}, &src));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){N, T, E}, &tgt));
    CHECK(clt_transformer_forward(t, src, tgt, NULL, NULL, NULL, NULL, NULL, NULL, &y));
    CHECK(clt_transformer_forward(c, src, tgt, NULL, NULL, NULL, NULL, NULL, NULL, &yc));
    cr_assert_eq(max_diff(y, yc), 0.0);
    clt_tensor_free(yc);
    /* the copy's tensors are its own */
    clt_named_tensor *p, *q;
    size_t n, nc;
    CHECK(clt_module_state(t, &p, &n));
    CHECK(clt_module_state(c, &q, &nc));
    cr_assert_eq(n, nc);
    for (size_t k = 0; k < n; k++) {
        cr_assert_str_eq(p[k].name, q[k].name);
        cr_assert_neq(p[k].tensor, q[k].tensor);
    }
    int was = clt_set_grad_enabled(0);
    CHECK(clt_fill_(q[0].tensor, 0.5));
    clt_set_grad_enabled(was);
    CHECK(clt_transformer_forward(t, src, tgt, NULL, NULL, NULL, NULL, NULL, NULL, &yc));
    cr_assert_eq(max_diff(y, yc), 0.0, "changing the copy changed the original");
    clt_tensor_free(yc);
    clt_free(p);
    clt_free(q);
    clt_module_free(c);
    /* a decoder layer cloned keeps its settings (norm_first, batch_first) */
    clt_module *l, *lc;
    CHECK(clt_transformer_decoder_layer(dev, E, 2, 16, 0.0, "gelu", 1e-5, 1, 1, gen, &l));
    CHECK(clt_module_clone(l, NULL, &lc));
    clt_tensor *mem, *a, *b;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){N, S, E}, &mem));
    CHECK(clt_transformer_decoder_forward(l, tgt, mem, NULL, NULL, NULL, NULL, &a));
    CHECK(clt_transformer_decoder_forward(lc, tgt, mem, NULL, NULL, NULL, NULL, &b));
    cr_assert_eq(max_diff(a, b), 0.0);
    clt_tensor_free(b);
    clt_module_free(lc);
    dev2 = second_device(dev); /* skips the rest with one device */
    if (dev2) { /* to the second device: the same values there */
        clt_tensor *s2, *t2, *m2, *y2, *o = NULL;
        CHECK(clt_module_to(t, dev2));
        CHECK(clt_module_to(l, dev2));
        CHECK(clt_to(src, dev2, &s2));
        CHECK(clt_to(tgt, dev2, &t2));
        CHECK(clt_to(mem, dev2, &m2));
        CHECK(clt_transformer_forward(t, s2, t2, NULL, NULL, NULL, NULL, NULL, NULL, &y2));
        cr_assert_eq(clt_tensor_device(y2), dev2);
        cr_assert(max_diff(y, y2) < 1e-5, "off by %g", max_diff(y, y2));
        clt_tensor_free(y2);
        CHECK(clt_transformer_decoder_forward(l, t2, m2, NULL, NULL, NULL, NULL, &y2));
        cr_assert(max_diff(a, y2) < 1e-5, "off by %g", max_diff(a, y2));
        clt_tensor_free(y2);
        /* the memory left behind on the first device */
        assert_error(clt_transformer_decoder_forward(l, t2, mem, NULL, NULL, NULL, NULL, &o),
                     CLT_ERR_DEVICE_MISMATCH, "the key is on");
        cr_assert_null(o);
        clt_tensor_free(s2);
        clt_tensor_free(t2);
        clt_tensor_free(m2);
    }
    clt_tensor_free(a);
    clt_tensor_free(mem);
    clt_tensor_free(y);
    clt_tensor_free(src);
    clt_tensor_free(tgt);
    clt_module_free(l);
    clt_module_free(t);
    clt_generator_free(gen);
}

/* ---- generate_square_subsequent_mask ---------------------------------------------------- */

Test(decoder, square_subsequent_mask)
{
    clt_device *dev = get_device("cpu");
    clt_dtype dts[3] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16};
    for (int k = 0; k < 3; k++) {
        clt_tensor *m = NULL;
        if (!clt_device_supports_dtype(dev, dts[k])) {
            assert_error(clt_generate_square_subsequent_mask(dev, dts[k], 5, &m),
                         CLT_ERR_DTYPE_UNSUPPORTED, "clt_generate_square_subsequent_mask: device");
            cr_assert_null(m);
            continue;
        }
        CHECK(clt_generate_square_subsequent_mask(dev, dts[k], 5, &m));
        cr_assert_eq(clt_tensor_dtype(m), dts[k]);
        assert_shape(m, 2, (int64_t[]){5, 5});
        double *v = read_as_f64(m);
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                double e = v[i * 5 + j];
                if (j > i)
                    cr_assert(isinf(e) && e < 0, "[%d, %d] = %g", i, j, e);
                else
                    cr_assert(e == 0 && !signbit(e), "[%d, %d] = %g", i, j, e);
            }
        free(v);
        clt_tensor_free(m);
    }
    clt_tensor *m = NULL;
    CHECK(clt_generate_square_subsequent_mask(dev, CLT_FLOAT32, 0, &m));
    cr_assert_eq(clt_tensor_numel(m), 0);
    clt_tensor_free(m);
    assert_error(clt_generate_square_subsequent_mask(dev, CLT_INT64, 3, &m),
                 CLT_ERR_DTYPE_UNSUPPORTED, "must be floating");
    cr_assert_null(m);
    assert_error(clt_generate_square_subsequent_mask(dev, CLT_FLOAT32, -1, &m),
                 CLT_ERR_INVALID_ARGUMENT, "negative dimension");
    assert_error(clt_generate_square_subsequent_mask(NULL, CLT_FLOAT32, 2, &m),
                 CLT_ERR_NULL_ARGUMENT, NULL);
}

/* ---- errors ----------------------------------------------------------------------------- */

Test(decoder, errors)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(2, &gen));
    clt_module *dl, *el, *m = NULL, *t;
    clt_tensor *o = NULL;
    assert_error(clt_transformer_decoder_layer(dev, 8, 2, 16, 0.1, "tanh", 1e-5, 0, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "clt_transformer_decoder_layer: activation should be");
    cr_assert_null(m);
    assert_error(clt_transformer_decoder_layer(dev, 8, 3, 16, 0.1, "relu", 1e-5, 0, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "divisible by num_heads");
    assert_error(clt_transformer(dev, 8, 2, 0, 1, 16, 0.1, "relu", 1e-5, 0, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "must be positive");
    uint64_t before = clt_generator_offset(gen);
    assert_error(clt_transformer(dev, 8, 2, 1, 1, 16, 0.1, "gelu", -1.0, 0, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "clt_transformer: layer_norm_eps");
    cr_assert_eq(clt_generator_offset(gen), before, "a failed constructor drew");
    cr_assert_null(m);
    CHECK(clt_transformer_decoder_layer(dev, 8, 2, 16, 0.1, NULL, 1e-5, 0, 0, gen, &dl));
    CHECK(clt_transformer_encoder_layer(dev, 8, 2, 16, 0.1, NULL, 1e-5, 0, 0, gen, &el));
    assert_error(clt_transformer_decoder(&el, 1, NULL, &m), CLT_ERR_INVALID_ARGUMENT,
                 "not a TransformerDecoderLayer");
    assert_error(clt_transformer_encoder(&dl, 1, NULL, &m), CLT_ERR_INVALID_ARGUMENT,
                 "not a TransformerEncoderLayer");
    clt_tensor *x, *x64, *mem;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, 8}, &x));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){3, 2, 8}, &mem));
    CHECK(clt_to_dtype(mem, CLT_FLOAT64, &x64));
    assert_error(clt_module_forward(dl, x, &o), CLT_ERR_INVALID_ARGUMENT,
                 "TransformerDecoderLayer: forward() missing 1 required positional argument: "
                 "'memory'");
    cr_assert_null(o);
    assert_error(clt_transformer_decoder_forward(dl, x, NULL, NULL, NULL, NULL, NULL, &o),
                 CLT_ERR_NULL_ARGUMENT, "clt_transformer_decoder_forward");
    assert_error(clt_transformer_decoder_forward(el, x, mem, NULL, NULL, NULL, NULL, &o),
                 CLT_ERR_INVALID_ARGUMENT, "not a TransformerDecoderLayer or TransformerDecoder");
    assert_error(clt_transformer_encoder_forward(dl, x, NULL, NULL, &o), CLT_ERR_INVALID_ARGUMENT,
                 "not a TransformerEncoderLayer");
    assert_error(clt_transformer_decoder_forward(dl, x, x64, NULL, NULL, NULL, NULL, &o),
                 CLT_ERR_DTYPE_MISMATCH, "clt_transformer_decoder_forward: MultiheadAttention");
    cr_assert_null(o);
    /* the Transformer's own checks, in torch's words */
    CHECK(clt_transformer(dev, 8, 2, 1, 1, 16, 0.1, "relu", 1e-5, 0, 0, gen, &t));
    clt_tensor *tgt3, *e6;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){4, 3, 8}, &tgt3));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, 6}, &e6));
    assert_error(clt_transformer_forward(t, x, tgt3, NULL, NULL, NULL, NULL, NULL, NULL, &o),
                 CLT_ERR_SHAPE_MISMATCH, "the batch number of src and tgt must be equal");
    assert_error(clt_transformer_forward(t, x, e6, NULL, NULL, NULL, NULL, NULL, NULL, &o),
                 CLT_ERR_SHAPE_MISMATCH,
                 "the feature number of src and tgt must be equal to d_model");
    assert_error(clt_transformer_forward(dl, x, x, NULL, NULL, NULL, NULL, NULL, NULL, &o),
                 CLT_ERR_INVALID_ARGUMENT, "not a Transformer");
    assert_error(clt_module_forward(t, x, &o), CLT_ERR_INVALID_ARGUMENT, "'tgt'");
    cr_assert_null(o);
    clt_tensor *all[] = {x, x64, mem, tgt3, e6};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
    clt_module_free(t);
    clt_module_free(dl);
    clt_module_free(el);
    clt_generator_free(gen);
}
