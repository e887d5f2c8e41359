/* test_attention.c: MultiheadAttention, TransformerEncoderLayer and
 * TransformerEncoder against float64 host references written out here
 * (the attention formula in plain loops): layouts, heads, masks of both
 * kinds, weights averaged or per head, fully masked rows; initialisation
 * and names; gradients by finite differences; dropout in train and eval
 * mode; errors; a state saved and loaded back. */
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

/* ---- the host reference ------------------------------------------------------------ */

/* A named tensor of m's state as doubles (new array), or NULL when m has
 * none of that name. */
static double *state_f64(const clt_module *m, const char *name)
{
    clt_named_tensor *p = NULL;
    size_t n = 0;
    double *v = NULL;
    CHECK(clt_module_state(m, &p, &n));
    for (size_t k = 0; k < n && !v; k++)
        if (strcmp(p[k].name, name) == 0)
            v = read_as_f64(p[k].tensor);
    clt_free(p);
    return v;
}

/* The parameters of a MultiheadAttention named prefix ("" or
 * "self_attn."), read back. */
typedef struct mha_w {
    double *w, *b, *wo, *bo; /* in_proj_weight, in_proj_bias, out_proj.* (biases may be NULL) */
} mha_w;

static mha_w mha_read(const clt_module *m, const char *prefix)
{
    char nm[4][96];
    const char *leaf[4] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
    for (int k = 0; k < 4; k++)
        snprintf(nm[k], sizeof nm[k], "%s%s", prefix, leaf[k]);
    mha_w r = {state_f64(m, nm[0]), state_f64(m, nm[1]), state_f64(m, nm[2]), state_f64(m, nm[3])};
    cr_assert_not_null(r.w);
    cr_assert_not_null(r.wo);
    return r;
}

static void mha_w_free(mha_w *r)
{
    free(r->w);
    free(r->b);
    free(r->wo);
    free(r->bo);
}

/* Shapes and masks of one case.  Inputs in the query's layout: [T, N, E],
 * or [N, T, E] with bf (unbatched is N = 1 either way). */
typedef struct cfg {
    int64_t E, H, N, L, S;
    int bf;
    const double *kpm; /* [N, S] or NULL */
    int kpm_bool;
    const double *am; /* [L, S] or [N * H, L, S] (am3) or NULL */
    int am_bool, am3;
} cfg;

static size_t at(const cfg *c, int64_t n, int64_t t, int64_t e, int64_t T)
{
    return (size_t)(c->bf ? (n * T + t) * c->E + e : (t * c->N + n) * c->E + e);
}

/* out [query layout], weights [N, H, L, S] (per head) in float64. */
static void mha_ref(const cfg *c, const mha_w *p, const double *q, const double *k,
                    const double *v, double *out, double *wts)
{
    int64_t E = c->E, H = c->H, N = c->N, L = c->L, S = c->S, D = E / H;
    double *pq = calloc((size_t)(N * L * E), sizeof *pq);
    double *pk = calloc((size_t)(N * S * E), sizeof *pk);
    double *pv = calloc((size_t)(N * S * E), sizeof *pv);
    double *o = calloc((size_t)(N * L * E), sizeof *o), *s = calloc((size_t)S, sizeof *s);
    /* projections, stored [N, T, E] */
    for (int64_t n = 0; n < N; n++)
        for (int64_t e = 0; e < E; e++) {
            for (int64_t t = 0; t < L; t++) {
                double a = p->b ? p->b[e] : 0;
                for (int64_t i = 0; i < E; i++)
                    a += q[at(c, n, t, i, L)] * p->w[e * E + i];
                pq[(n * L + t) * E + e] = a;
            }
            for (int64_t t = 0; t < S; t++) {
                double a = p->b ? p->b[E + e] : 0, b = p->b ? p->b[2 * E + e] : 0;
                for (int64_t i = 0; i < E; i++) {
                    a += k[at(c, n, t, i, S)] * p->w[(E + e) * E + i];
                    b += v[at(c, n, t, i, S)] * p->w[(2 * E + e) * E + i];
                }
                pk[(n * S + t) * E + e] = a;
                pv[(n * S + t) * E + e] = b;
            }
        }
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < L; i++) {
                double mx = -INFINITY;
                for (int64_t j = 0; j < S; j++) {
                    double a = 0;
                    for (int64_t d = 0; d < D; d++)
                        a += pq[(n * L + i) * E + h * D + d] * pk[(n * S + j) * E + h * D + d];
                    a /= sqrt((double)D);
                    if (c->am) {
                        double mv = c->am3 ? c->am[((n * H + h) * L + i) * S + j]
                                           : c->am[i * S + j];
                        a = c->am_bool ? (mv != 0 ? -INFINITY : a) : a + mv;
                    }
                    if (c->kpm) {
                        double mv = c->kpm[n * S + j];
                        a = c->kpm_bool || c->am ? (mv != 0 ? -INFINITY : a) : a + mv;
                    }
                    s[j] = a;
                    mx = fmax(mx, a);
                }
                double sum = 0;
                for (int64_t j = 0; j < S; j++)
                    sum += s[j] = exp(s[j] - mx); /* all -inf: NaN, as torch */
                for (int64_t j = 0; j < S; j++) {
                    double a = s[j] / sum;
                    if (wts)
                        wts[((n * H + h) * L + i) * S + j] = a;
                    for (int64_t d = 0; d < D; d++)
                        o[(n * L + i) * E + h * D + d] += a * pv[(n * S + j) * E + h * D + d];
                }
            }
    for (int64_t n = 0; n < N; n++)
        for (int64_t t = 0; t < L; t++)
            for (int64_t e = 0; e < E; e++) {
                double a = p->bo ? p->bo[e] : 0;
                for (int64_t i = 0; i < E; i++)
                    a += o[(n * L + t) * E + i] * p->wo[e * E + i];
                out[at(c, n, t, e, L)] = a;
            }
    free(pq);
    free(pk);
    free(pv);
    free(o);
    free(s);
}

static double *rand_f64(size_t n, unsigned seed, double lo, double hi)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = lo + (hi - lo) * (double)((seed >> 8) % 100001) / 100000.0;
    }
    return v;
}

static void assert_close(const clt_tensor *t, const double *want, size_t n, double tol,
                         const char *what)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld values, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], tol, tol), "%s: element %zu: got %.9g, want %.9g",
                  what, i, got[i], want[i]);
    free(got);
}

/* ---- MultiheadAttention forward ------------------------------------------------------- */

/* One case: cross attention (S != L) with the masks of c, weights averaged
 * and per head, against the reference; and self-attention through
 * clt_module_forward when L == S and there are no masks. */
static void mha_case(clt_device *dev, cfg c, int bias, int unbatched)
{
    clt_generator *gen;
    CHECK(clt_generator_new(11 + (uint64_t)c.H, &gen));
    clt_module *m;
    CHECK(clt_multihead_attention_layer(dev, c.E, c.H, 0.0, bias, c.bf, gen, &m));
    mha_w p = mha_read(m, "");
    size_t nq = (size_t)(c.N * c.L * c.E), nk = (size_t)(c.N * c.S * c.E);
    double *q = rand_f64(nq, 1, -1, 1), *k = rand_f64(nk, 2, -1, 1), *v = rand_f64(nk, 3, -1, 1);
    int64_t qs[3] = {c.bf ? c.N : c.L, c.bf ? c.L : c.N, c.E};
    int64_t ks[3] = {c.bf ? c.N : c.S, c.bf ? c.S : c.N, c.E};
    int64_t q2[2] = {c.L, c.E}, k2[2] = {c.S, c.E};
    int nd = unbatched ? 2 : 3;
    clt_tensor *tq = tensor_of(dev, CLT_FLOAT32, nd, unbatched ? q2 : qs, q);
    clt_tensor *tk = tensor_of(dev, CLT_FLOAT32, nd, unbatched ? k2 : ks, k);
    clt_tensor *tv = tensor_of(dev, CLT_FLOAT32, nd, unbatched ? k2 : ks, v);
    clt_tensor *kpm = NULL, *am = NULL;
    if (c.kpm) {
        int64_t sh[2] = {c.N, c.S};
        kpm = tensor_of(dev, c.kpm_bool ? CLT_BOOL : CLT_FLOAT32, unbatched ? 1 : 2,
                        unbatched ? sh + 1 : sh, c.kpm);
    }
    if (c.am) {
        int64_t sh[3] = {unbatched ? c.H : c.N * c.H, c.L, c.S};
        am = tensor_of(dev, c.am_bool ? CLT_BOOL : CLT_FLOAT32, c.am3 ? 3 : 2,
                       c.am3 ? sh : sh + 1, c.am);
    }
    size_t nw = (size_t)(c.N * c.H * c.L * c.S);
    double *out = malloc(nq * sizeof *out), *w = malloc(nw * sizeof *w);
    double *avg = malloc((size_t)(c.N * c.L * c.S) * sizeof *avg);
    mha_ref(&c, &p, q, k, v, out, w);
    for (int64_t n = 0; n < c.N; n++)
        for (int64_t i = 0; i < c.L * c.S; i++) {
            double a = 0;
            for (int64_t h = 0; h < c.H; h++)
                a += w[(n * c.H + h) * c.L * c.S + i];
            avg[n * c.L * c.S + i] = a / (double)c.H;
        }
    for (int av = 0; av < 2; av++) {
        clt_tensor *o = NULL, *wt = NULL;
        CHECK(clt_multihead_attention(m, tq, tk, tv, kpm, am, 1, av, &o, &wt));
        assert_shape(o, nd, unbatched ? q2 : qs);
        assert_close(o, out, nq, 2e-5, "output");
        int64_t ws[4] = {c.N, c.H, c.L, c.S}, wa[3] = {c.N, c.L, c.S};
        if (av)
            assert_shape(wt, unbatched ? 2 : 3, unbatched ? wa + 1 : wa);
        else
            assert_shape(wt, unbatched ? 3 : 4, unbatched ? ws + 1 : ws);
        assert_close(wt, av ? avg : w, av ? (size_t)(c.N * c.L * c.S) : nw, 2e-5, "weights");
        clt_tensor_free(o);
        clt_tensor_free(wt);
    }
    /* need_weights 0: no weights, the same output */
    clt_tensor *o = NULL, *wt = (clt_tensor *)&wt;
    CHECK(clt_multihead_attention(m, tq, tk, tv, kpm, am, 0, 1, &o, &wt));
    cr_assert_null(wt);
    assert_close(o, out, nq, 2e-5, "output without weights");
    clt_tensor_free(o);
    if (c.L == c.S && !c.kpm && !c.am) { /* self-attention, q = k = v */
        cfg s = c;
        mha_ref(&s, &p, q, q, q, out, NULL);
        CHECK(clt_module_forward(m, tq, &o));
        assert_close(o, out, nq, 2e-5, "self-attention");
        clt_tensor_free(o);
    }
    free(q);
    free(k);
    free(v);
    free(out);
    free(w);
    free(avg);
    mha_w_free(&p);
    clt_tensor_free(tq);
    clt_tensor_free(tk);
    clt_tensor_free(tv);
    clt_tensor_free(kpm);
    clt_tensor_free(am);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(attention, heads_and_layouts_without_masks)
{
    clt_device *dev = get_device("cpu");
    for (int H = 1; H <= 4; H *= 2)
        for (int bf = 0; bf < 2; bf++) {
            mha_case(dev, (cfg){8, H, 3, 5, 6, bf, NULL, 0, NULL, 0, 0}, 1, 0);
            mha_case(dev, (cfg){8, H, 2, 4, 4, bf, NULL, 0, NULL, 0, 0}, bf, 0);
        }
}

Test(attention, masks_of_both_kinds)
{
    clt_device *dev = get_device("cpu");
    enum { E = 8, N = 2, L = 3, S = 5 };
    double kpm[N * S] = {0, 0, 1, 0, 0, 1, 0, 0, 0, 1};
    double kpf[N * S] = {0, -1.5, 0.5, 0, -INFINITY, 2, 0, -3, 0, 0};
    double am2b[L * S] = {0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1};
    double *am2f = rand_f64(L * S, 9, -2, 1);
    double *am3f = rand_f64(N * 4 * L * S, 10, -2, 1);
    double am3b[N * 4 * L * S];
    for (int i = 0; i < N * 4 * L * S; i++)
        am3b[i] = (i * 7) % 5 == 0 && i % S != 1; /* column 1 always open */
    for (int H = 1; H <= 4; H *= 2)
        for (int bf = 0; bf < 2; bf++) {
            mha_case(dev, (cfg){E, H, N, L, S, bf, kpm, 1, NULL, 0, 0}, 1, 0);
            mha_case(dev, (cfg){E, H, N, L, S, bf, kpf, 0, NULL, 0, 0}, 1, 0);
            mha_case(dev, (cfg){E, H, N, L, S, bf, NULL, 0, am2b, 1, 0}, 1, 0);
            mha_case(dev, (cfg){E, H, N, L, S, bf, NULL, 0, am2f, 0, 0}, 1, 0);
            mha_case(dev, (cfg){E, H, N, L, S, bf, kpm, 1, am2f, 0, 0}, 1, 0);
            if (H == 4) { /* the 3-D masks are [N * 4, L, S] */
                mha_case(dev, (cfg){E, H, N, L, S, bf, kpm, 1, am3b, 1, 1}, 1, 0);
                mha_case(dev, (cfg){E, H, N, L, S, bf, NULL, 0, am3f, 0, 1}, 0, 0);
                /* a float padding mask with a bool attn_mask hides its
                 * nonzero entries (torch's logical_or) */
                mha_case(dev, (cfg){E, H, N, L, S, bf, kpf, 0, am3b, 1, 1}, 1, 0);
            }
        }
    /* unbatched: [L, E], masks [S] and [H, L, S] */
    mha_case(dev, (cfg){E, 2, 1, L, S, 0, kpm, 1, NULL, 0, 0}, 1, 1);
    mha_case(dev, (cfg){E, 4, 1, L, S, 0, NULL, 0, am3f, 0, 1}, 1, 1);
    free(am2f);
    free(am3f);
}

Test(attention, fully_masked_rows_give_nan)
{
    clt_device *dev = get_device("cpu");
    enum { E = 4, N = 2, L = 2, S = 3 };
    double kpm[N * S] = {1, 1, 1, 0, 1, 0}; /* batch 0 hides every key */
    mha_case(dev, (cfg){E, 2, N, L, S, 1, kpm, 1, NULL, 0, 0}, 1, 0);
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_module *m;
    CHECK(clt_multihead_attention_layer(dev, E, 2, 0.0, 1, 1, gen, &m));
    int64_t xs[3] = {N, L, E}, ms[2] = {N, S}, ks[3] = {N, S, E};
    double *xv = rand_f64(N * S * E, 4, -1, 1);
    clt_tensor *q = tensor_of(dev, CLT_FLOAT32, 3, xs, xv);
    clt_tensor *k = tensor_of(dev, CLT_FLOAT32, 3, ks, xv);
    clt_tensor *mk = tensor_of(dev, CLT_BOOL, 2, ms, kpm), *o, *w;
    CHECK(clt_multihead_attention(m, q, k, k, mk, NULL, 1, 1, &o, &w));
    double *ov = read_as_f64(o), *wv = read_as_f64(w);
    for (int i = 0; i < L * E; i++) {
        cr_assert(isnan(ov[i]), "batch 0 output %d: %g, want NaN", i, ov[i]);
        cr_assert(!isnan(ov[L * E + i]), "batch 1 output %d is NaN", i);
    }
    for (int i = 0; i < L * S; i++)
        cr_assert(isnan(wv[i]));
    free(ov);
    free(wv);
    free(xv);
    clt_tensor_free(q);
    clt_tensor_free(k);
    clt_tensor_free(mk);
    clt_tensor_free(o);
    clt_tensor_free(w);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- initialisation and names ---------------------------------------------------------- */

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

Test(attention, initialisation_and_names)
{
    clt_device *dev = get_device("cpu");
    enum { E = 16 };
    clt_generator *gen, *gen2;
    CHECK(clt_generator_new(21, &gen));
    CHECK(clt_generator_new(21, &gen2));
    clt_module *m, *m2, *nb;
    CHECK(clt_multihead_attention_layer(dev, E, 4, 0.0, 1, 0, gen, &m));
    CHECK(clt_multihead_attention_layer(dev, E, 4, 0.0, 1, 0, gen2, &m2));
    CHECK(clt_multihead_attention_layer(dev, E, 4, 0.0, 0, 0, gen, &nb));
    cr_assert_str_eq(clt_module_name(m), "MultiheadAttention");
    const char *names[] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"};
    assert_names(m, names, 4);
    const char *names_nb[] = {"in_proj_weight", "out_proj.weight"};
    assert_names(nb, names_nb, 2);
    cr_assert_eq(clt_module_num_parameters(m), 3 * E * E + 3 * E + E * E + E);
    mha_w p = mha_read(m, ""), p2 = mha_read(m2, "");
    /* xavier_uniform_ over [3E, E]: bound sqrt(6 / (E + 3E)); out_proj
     * kaiming-uniform: 1 / sqrt(E); both biases zero */
    double xb = sqrt(6.0 / (4.0 * E)), kb = 1.0 / sqrt((double)E), lo = 1, hi = -1;
    for (int i = 0; i < 3 * E * E; i++) {
        cr_assert(fabs(p.w[i]) <= xb, "in_proj_weight %d = %g beyond %g", i, p.w[i], xb);
        lo = fmin(lo, p.w[i]);
        hi = fmax(hi, p.w[i]);
        cr_assert_eq(p.w[i], p2.w[i], "not reproducible at %d", i);
    }
    cr_assert(hi > 0.9 * xb && lo < -0.9 * xb, "in_proj_weight spans %g..%g of +-%g", lo, hi, xb);
    lo = 1, hi = -1;
    for (int i = 0; i < E * E; i++) {
        cr_assert(fabs(p.wo[i]) <= kb);
        lo = fmin(lo, p.wo[i]);
        hi = fmax(hi, p.wo[i]);
    }
    cr_assert(hi > 0.8 * kb && lo < -0.8 * kb, "out_proj.weight spans %g..%g of +-%g", lo, hi, kb);
    for (int i = 0; i < 3 * E; i++)
        cr_assert_eq(p.b[i], 0.0);
    for (int i = 0; i < E; i++)
        cr_assert_eq(p.bo[i], 0.0);
    mha_w_free(&p);
    mha_w_free(&p2);
    /* TransformerEncoderLayer and TransformerEncoder: torch's keys */
    clt_module *layers[2], *norm, *enc;
    CHECK(clt_transformer_encoder_layer(dev, E, 4, 32, 0.1, "gelu", 1e-5, 0, 0, gen, &layers[0]));
    CHECK(clt_transformer_encoder_layer(dev, E, 4, 32, 0.1, NULL, 1e-5, 0, 0, gen, &layers[1]));
    const char *lnames[] = {"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                            "self_attn.out_proj.weight", "self_attn.out_proj.bias",
                            "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                            "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
    assert_names(layers[0], lnames, 12);
    cr_assert_str_eq(clt_module_name(layers[0]), "TransformerEncoderLayer");
    int64_t e = E;
    CHECK(clt_layer_norm_layer(dev, 1, &e, 1e-5, 1, &norm));
    CHECK(clt_transformer_encoder(layers, 2, norm, &enc));
    clt_named_tensor *st;
    size_t n;
    CHECK(clt_module_state(enc, &st, &n));
    cr_assert_eq(n, 26);
    cr_assert_str_eq(st[0].name, "layers.0.self_attn.in_proj_weight");
    cr_assert_str_eq(st[12].name, "layers.1.self_attn.in_proj_weight");
    cr_assert_str_eq(st[23].name, "layers.1.norm2.bias");
    cr_assert_str_eq(st[24].name, "norm.weight");
    clt_free(st);
    /* a layer owned already, or given twice, is refused */
    clt_module *again = NULL;
    assert_error(clt_transformer_encoder(layers, 1, NULL, &again), CLT_ERR_INVALID_ARGUMENT,
                 "already belongs");
    cr_assert_null(again);
    clt_module *l3, *dup[2];
    CHECK(clt_transformer_encoder_layer(dev, E, 4, 32, 0.1, "relu", 1e-5, 0, 0, gen, &l3));
    dup[0] = dup[1] = l3;
    assert_error(clt_transformer_encoder(dup, 2, NULL, &again), CLT_ERR_INVALID_ARGUMENT,
                 "same module");
    assert_error(clt_transformer_encoder(&m, 1, NULL, &again), CLT_ERR_INVALID_ARGUMENT,
                 "not a TransformerEncoderLayer");
    clt_module_free(l3);
    clt_module_free(enc);
    clt_module_free(m);
    clt_module_free(m2);
    clt_module_free(nb);
    clt_generator_free(gen);
    clt_generator_free(gen2);
}

/* ---- gradients ------------------------------------------------------------------------- */

typedef struct gctx {
    clt_module *m;
    int masks; /* a bool padding mask and a float attn_mask (input 3) */
    clt_tensor *kpm;
} gctx;

static clt_status mha_gc(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gctx *g = ctx;
    clt_tensor *w = NULL, *o = NULL, *s = NULL;
    clt_status st = clt_multihead_attention(g->m, in[0], in[1], in[2], g->masks ? g->kpm : NULL,
                                            g->masks ? in[3] : NULL, 1, 0, &o, &w);
    if (st == CLT_OK) /* both results count */
        st = clt_sum(w, &s);
    if (st == CLT_OK)
        st = clt_add(o, s, out);
    clt_tensor_free(o);
    clt_tensor_free(w);
    clt_tensor_free(s);
    return st;
}

/* The gradients of every parameter of g->m (np of them) from
 * L = mha_gc(ins): autograd's against central differences with each
 * parameter value moved in turn (every third). */
static void param_grads_fd(clt_device *dev, const gctx *g, clt_tensor **ins, size_t np_want)
{
    clt_named_tensor *ps;
    size_t np;
    CHECK(clt_module_named_parameters(g->m, &ps, &np));
    cr_assert_eq(np, np_want);
    for (size_t j = 0; j < np; j++) /* gradcheck's backward passes reached them too */
        CHECK(clt_zero_grad(ps[j].tensor, 1));
    clt_tensor *loss = gc_loss(dev, mha_gc, g, ins);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    for (size_t j = 0; j < np; j++) {
        clt_tensor *t = ps[j].tensor, *gt = NULL;
        size_t n = (size_t)clt_tensor_numel(t);
        CHECK(clt_grad(t, &gt));
        cr_assert_not_null(gt, "%s has no gradient", ps[j].name);
        double *an = read_as_f64(gt), *val = read_as_f64(t);
        clt_tensor_free(gt);
        int was = clt_set_grad_enabled(0);
        for (size_t i = 0; i < n; i += 3) {
            double lv[2], orig = val[i];
            for (int side = 0; side < 2; side++) {
                val[i] = orig + (side ? -1e-6 : 1e-6);
                CHECK(clt_tensor_write(t, val, n * sizeof *val));
                clt_tensor *l = gc_loss(dev, mha_gc, g, ins);
                CHECK(clt_tensor_item(l, &lv[side]));
                clt_tensor_free(l);
            }
            val[i] = orig;
            CHECK(clt_tensor_write(t, val, n * sizeof *val));
            double num = (lv[0] - lv[1]) / 2e-6;
            cr_assert(close_enough(an[i], num, 1e-5, 1e-6),
                      "%s element %zu: autograd %.10g, finite differences %.10g", ps[j].name, i,
                      an[i], num);
        }
        clt_set_grad_enabled(was);
        free(an);
        free(val);
    }
    clt_free(ps);
}

/* The gradients of m (in float64, key and value widths kd and vd, np
 * parameters) by gradcheck over q, k, v, then with the masks (bool padding
 * mask kp, float attn_mask) where `masks`, and the parameters' gradients
 * against central differences. */
static void mha_grads_case(clt_device *dev, clt_module *m, int64_t kd, int64_t vd,
                           const double kp[4], int masks, size_t np)
{
    enum { E = 4, N = 2, L = 3, S = 2 };
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    double *q = rand_f64(L * N * E, 1, -1, 1), *k = rand_f64(S * N * kd, 2, -1, 1);
    double *v = rand_f64(S * N * vd, 3, -1, 1), *am = rand_f64(L * S, 4, -1, 1);
    int64_t ms[2] = {N, S};
    gctx g = {m, 0, tensor_of(dev, CLT_BOOL, 2, ms, kp)};
    gc_in ins[4] = {{3, {L, N, E}, q, 1}, {3, {S, N, kd}, k, 1}, {3, {S, N, vd}, v, 1},
                    {2, {L, S}, am, 1}};
    gradcheck(dev, mha_gc, &g, 3, ins);
    if (masks) {
        g.masks = 1;
        gradcheck(dev, mha_gc, &g, 4, ins);
    }
    int64_t qs[3] = {L, N, E}, ks[3] = {S, N, kd}, vs[3] = {S, N, vd}, as[2] = {L, S};
    clt_tensor *ins_t[4] = {tensor_of(dev, CLT_FLOAT64, 3, qs, q),
                            tensor_of(dev, CLT_FLOAT64, 3, ks, k),
                            tensor_of(dev, CLT_FLOAT64, 3, vs, v),
                            tensor_of(dev, CLT_FLOAT64, 2, as, am)};
    param_grads_fd(dev, &g, ins_t, np);
    for (int j = 0; j < 4; j++)
        clt_tensor_free(ins_t[j]);
    clt_tensor_free(g.kpm);
    free(q);
    free(k);
    free(v);
    free(am);
}

Test(attention, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    clt_module *m;
    CHECK(clt_multihead_attention_layer(dev, 4, 2, 0.0, 1, 0, gen, &m));
    const double kp[4] = {0, 1, 0, 0};
    mha_grads_case(dev, m, 4, 4, kp, 1, 4);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- dropout --------------------------------------------------------------------------- */

Test(attention, dropout_in_train_and_eval_mode)
{
    clt_device *dev = get_device("cpu");
    enum { E = 8, N = 2, L = 6, S = 6, H = 2 };
    clt_generator *gen;
    CHECK(clt_generator_new(8, &gen));
    clt_module *m;
    CHECK(clt_multihead_attention_layer(dev, E, H, 0.5, 1, 1, gen, &m));
    int64_t xs[3] = {N, L, E};
    double *xv = rand_f64(N * L * E, 6, -1, 1);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, xs, xv), *o, *w, *oe, *we;
    /* eval: no dropout, nothing drawn, the reference */
    clt_module_train(m, 0);
    uint64_t before = clt_generator_offset(gen);
    CHECK(clt_multihead_attention(m, x, x, x, NULL, NULL, 1, 0, &oe, &we));
    cr_assert_eq(clt_generator_offset(gen), before, "eval mode drew from the generator");
    mha_w p = mha_read(m, "");
    cfg c = {E, H, N, L, S, 1, NULL, 0, NULL, 0, 0};
    double *out = malloc(N * L * E * sizeof *out), *wr = malloc(N * H * L * S * sizeof *wr);
    mha_ref(&c, &p, xv, xv, xv, out, wr);
    assert_close(oe, out, N * L * E, 2e-5, "eval output");
    assert_close(we, wr, N * H * L * S, 2e-5, "eval weights");
    /* train: each weight dropped (0) or scaled by 1 / (1 - p) = 2 */
    clt_module_train(m, 1);
    CHECK(clt_multihead_attention(m, x, x, x, NULL, NULL, 1, 0, &o, &w));
    cr_assert_gt(clt_generator_offset(gen), before, "train mode drew nothing");
    double *wt = read_as_f64(w), *wev = read_as_f64(we), *ot = read_as_f64(o);
    int zeros = 0;
    for (int i = 0; i < N * H * L * S; i++) {
        zeros += wt[i] == 0;
        cr_assert(wt[i] == 0 || close_enough(wt[i], 2 * wev[i], 1e-5, 1e-7),
                  "weight %d: %g, eval %g", i, wt[i], wev[i]);
    }
    cr_assert(zeros > N * H * L * S / 4 && zeros < 3 * N * H * L * S / 4, "%d of %d dropped",
              zeros, N * H * L * S);
    /* the output is the dropped weights times v, through out_proj: it
     * differs from eval's */
    double diff = 0;
    for (int i = 0; i < N * L * E; i++)
        diff = fmax(diff, fabs(ot[i] - out[i]));
    cr_assert_gt(diff, 1e-3);
    /* dropout 1 drops every weight: the output is out_proj's bias, zeros */
    clt_module *all;
    CHECK(clt_multihead_attention_layer(dev, E, H, 1.0, 1, 1, gen, &all));
    clt_tensor *o1, *w1;
    CHECK(clt_multihead_attention(all, x, x, x, NULL, NULL, 1, 1, &o1, &w1));
    double *o1v = read_as_f64(o1), *w1v = read_as_f64(w1);
    for (int i = 0; i < N * L * E; i++)
        cr_assert_eq(o1v[i], 0.0, "dropout 1: output %d = %g", i, o1v[i]);
    for (int i = 0; i < N * L * S; i++)
        cr_assert_eq(w1v[i], 0.0, "dropout 1: weight %d = %g", i, w1v[i]);
    free(o1v);
    free(w1v);
    clt_tensor_free(o1);
    clt_tensor_free(w1);
    clt_module_free(all);
    /* the encoder layer in eval mode equals itself run twice; in train mode
     * two runs differ */
    clt_module *layer;
    CHECK(clt_transformer_encoder_layer(dev, E, H, 16, 0.5, "relu", 1e-5, 1, 0, gen, &layer));
    clt_tensor *a, *b;
    CHECK(clt_module_forward(layer, x, &a));
    CHECK(clt_module_forward(layer, x, &b));
    double *av = read_as_f64(a), *bv = read_as_f64(b);
    diff = 0;
    for (int i = 0; i < N * L * E; i++)
        diff = fmax(diff, fabs(av[i] - bv[i]));
    cr_assert_gt(diff, 1e-3, "train mode: two runs agree");
    free(av);
    free(bv);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_module_train(layer, 0);
    CHECK(clt_module_forward(layer, x, &a));
    CHECK(clt_module_forward(layer, x, &b));
    av = read_as_f64(a);
    bv = read_as_f64(b);
    for (int i = 0; i < N * L * E; i++)
        cr_assert_eq(av[i], bv[i]);
    free(av);
    free(bv);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_module_free(layer);
    free(wt);
    free(wev);
    free(ot);
    free(out);
    free(wr);
    free(xv);
    mha_w_free(&p);
    clt_tensor_free(x);
    clt_tensor_free(o);
    clt_tensor_free(w);
    clt_tensor_free(oe);
    clt_tensor_free(we);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- TransformerEncoderLayer against the reference -------------------------------------- */

static void layer_norm_ref(double *x, int64_t rows, int64_t E, const double *w, const double *b)
{
    for (int64_t r = 0; r < rows; r++) {
        double mu = 0, var = 0;
        for (int64_t e = 0; e < E; e++)
            mu += x[r * E + e];
        mu /= (double)E;
        for (int64_t e = 0; e < E; e++)
            var += (x[r * E + e] - mu) * (x[r * E + e] - mu);
        var /= (double)E;
        for (int64_t e = 0; e < E; e++)
            x[r * E + e] = (x[r * E + e] - mu) / sqrt(var + 1e-5) * w[e] + b[e];
    }
}

/* y = x + ff(x) rows of E, ff = linear2(act(linear1(x))). */
static void ff_ref(const double *x, int64_t rows, int64_t E, int64_t F, const double *w1,
                   const double *b1, const double *w2, const double *b2, int gelu, double *y)
{
    double *h = malloc((size_t)F * sizeof *h);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t f = 0; f < F; f++) {
            double a = b1[f];
            for (int64_t e = 0; e < E; e++)
                a += x[r * E + e] * w1[f * E + e];
            h[f] = gelu ? 0.5 * a * (1 + erf(a / sqrt(2.0))) : fmax(a, 0);
        }
        for (int64_t e = 0; e < E; e++) {
            double a = b2[e];
            for (int64_t f = 0; f < F; f++)
                a += h[f] * w2[e * F + f];
            y[r * E + e] = x[r * E + e] + a;
        }
    }
    free(h);
}

Test(attention, encoder_layer_against_reference)
{
    clt_device *dev = get_device("cpu");
    enum { E = 8, H = 2, F = 12, N = 2, L = 4 };
    double kpm[N * L] = {0, 0, 0, 1, 0, 1, 0, 0};
    double src_mask[L * L];
    for (int i = 0; i < L * L; i++)
        src_mask[i] = i % L > i / L ? -INFINITY : 0; /* causal, float */
    int64_t ks[2] = {N, L}, ms[2] = {L, L};
    clt_tensor *kp = tensor_of(dev, CLT_BOOL, 2, ks, kpm);
    clt_tensor *sm = tensor_of(dev, CLT_FLOAT32, 2, ms, src_mask);
    clt_generator *gen;
    CHECK(clt_generator_new(31, &gen));
    for (int nf = 0; nf < 2; nf++)
        for (int gelu = 0; gelu < 2; gelu++)
            for (int bf = 0; bf < 2; bf++) {
                clt_module *m;
                CHECK(clt_transformer_encoder_layer(dev, E, H, F, 0.1, gelu ? "gelu" : "relu",
                                                    1e-5, bf, nf, gen, &m));
                clt_module_train(m, 0);
                mha_w p = mha_read(m, "self_attn.");
                double *w1 = state_f64(m, "linear1.weight"), *b1 = state_f64(m, "linear1.bias");
                double *w2 = state_f64(m, "linear2.weight"), *b2 = state_f64(m, "linear2.bias");
                double *n1w = state_f64(m, "norm1.weight"), *n1b = state_f64(m, "norm1.bias");
                double *n2w = state_f64(m, "norm2.weight"), *n2b = state_f64(m, "norm2.bias");
                double *xv = rand_f64(N * L * E, 40 + (unsigned)nf, -2, 2);
                int64_t xs[3] = {bf ? N : L, bf ? L : N, E};
                clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, xs, xv), *o;
                for (int masked = 0; masked < 2; masked++) {
                    cfg c = {E, H, N, L, L, bf, masked ? kpm : NULL, 1,
                             masked ? src_mask : NULL, 0, 0};
                    size_t n = N * L * E;
                    double *h = malloc(n * sizeof *h), *a = malloc(n * sizeof *a);
                    double *y = malloc(n * sizeof *y);
                    /* rows of E in any layout: the norms and ff work per row */
                    if (nf) {
                        memcpy(h, xv, n * sizeof *h);
                        layer_norm_ref(h, N * L, E, n1w, n1b);
                        mha_ref(&c, &p, h, h, h, a, NULL);
                        for (size_t i = 0; i < n; i++)
                            a[i] += xv[i];
                        memcpy(h, a, n * sizeof *h);
                        layer_norm_ref(h, N * L, E, n2w, n2b);
                        ff_ref(h, N * L, E, F, w1, b1, w2, b2, gelu, y);
                        for (size_t i = 0; i < n; i++)
                            y[i] += a[i] - h[i]; /* x1 + ff(norm2(x1)) */
                    } else {
                        mha_ref(&c, &p, xv, xv, xv, a, NULL);
                        for (size_t i = 0; i < n; i++)
                            a[i] += xv[i];
                        layer_norm_ref(a, N * L, E, n1w, n1b);
                        ff_ref(a, N * L, E, F, w1, b1, w2, b2, gelu, y);
                        layer_norm_ref(y, N * L, E, n2w, n2b);
                    }
                    if (masked)
                        CHECK(clt_transformer_encoder_forward(m, x, sm, kp, &o));
                    else
                        CHECK(clt_module_forward(m, x, &o));
                    assert_shape(o, 3, xs);
                    assert_close(o, y, n, 5e-5, nf ? "norm_first" : "post-norm");
                    clt_tensor_free(o);
                    free(h);
                    free(a);
                    free(y);
                }
                clt_tensor_free(x);
                free(xv);
                free(w1);
                free(b1);
                free(w2);
                free(b2);
                free(n1w);
                free(n1b);
                free(n2w);
                free(n2b);
                mha_w_free(&p);
                clt_module_free(m);
            }
    clt_tensor_free(kp);
    clt_tensor_free(sm);
    clt_generator_free(gen);
}

/* ---- errors ---------------------------------------------------------------------------- */

Test(attention, errors)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(1, &gen));
    clt_module *m = (clt_module *)&m;
    assert_error(clt_multihead_attention_layer(dev, 10, 3, 0.0, 1, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "embed_dim must be divisible by num_heads");
    cr_assert_null(m);
    assert_error(clt_multihead_attention_layer(dev, 8, 2, 1.5, 1, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "between 0 and 1");
    assert_error(clt_transformer_encoder_layer(dev, 8, 2, 16, 0.1, "tanh", 1e-5, 0, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "activation should be relu/gelu, not tanh");
    assert_error(clt_transformer_encoder_layer(dev, 8, 3, 16, 0.1, "relu", 1e-5, 0, 0, gen, &m),
                 CLT_ERR_INVALID_ARGUMENT, "divisible");
    cr_assert_null(m);
    CHECK(clt_multihead_attention_layer(dev, 8, 2, 0.0, 1, 0, gen, &m));
    int64_t s3[3] = {4, 2, 8}, s5[3] = {5, 2, 8}, e7[3] = {4, 2, 7}, b3[3] = {4, 3, 8};
    clt_tensor *q, *k5, *q7, *kb3, *q64, *qi;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, s3, &q));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, s5, &k5));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, e7, &q7));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, b3, &kb3));
    CHECK(clt_to_dtype(q, CLT_FLOAT64, &q64));
    CHECK(clt_to_dtype(q, CLT_INT32, &qi));
    clt_tensor *o = (clt_tensor *)&o, *w = (clt_tensor *)&w;
#define MHA_ERR(want, needle, ...)                                                   \
    do {                                                                             \
        o = (clt_tensor *)&o;                                                        \
        w = (clt_tensor *)&w;                                                        \
        assert_error(clt_multihead_attention(m, __VA_ARGS__, &o, &w), want, needle); \
        cr_assert_null(o);                                                           \
        cr_assert_null(w);                                                           \
        cr_assert(strncmp(clt_last_error(), "clt_multihead_attention: ", 25) == 0);  \
    } while (0)
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "was expecting embedding dimension of 8, but got 7", q7, q7,
            q7, NULL, NULL, 1, 1);
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "does not match value shape", q, k5, q, NULL, NULL, 1, 1);
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "batch size 3 does not match the query's 2", q, kb3, kb3, NULL,
            NULL, 1, 1);
    MHA_ERR(CLT_ERR_DTYPE_MISMATCH, "the input is float64 and the in_proj_weight float32", q64,
            q64, q64, NULL, NULL, 1, 1);
    MHA_ERR(CLT_ERR_DTYPE_MISMATCH, "float32, float64 and float32", q, q64, q, NULL, NULL, 1, 1);
    MHA_ERR(CLT_ERR_DTYPE_MISMATCH, "in_proj_weight", qi, qi, qi, NULL, NULL, 0, 0);
    /* masks: shapes and dtypes */
    int64_t kpm_bad[2] = {2, 5}, am_bad[2] = {4, 5}, am3_bad[3] = {2, 4, 5};
    clt_tensor *kb, *ab, *a3, *ai, *af64, *kf, *af;
    CHECK(clt_zeros(dev, CLT_BOOL, 2, kpm_bad, &kb));
    CHECK(clt_zeros(dev, CLT_BOOL, 2, am_bad, &ab));
    CHECK(clt_zeros(dev, CLT_BOOL, 3, am3_bad, &a3));
    CHECK(clt_zeros(dev, CLT_INT32, 2, (int64_t[]){4, 4}, &ai));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){4, 4}, &af64));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 4}, &kf));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){4, 4}, &af));
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "expecting key_padding_mask shape of [2, 4], but got [2, 5]",
            q, q, q, kb, NULL, 1, 1);
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "The shape of the 2D attn_mask is [4, 5], but should be [4, 4]",
            q, q, q, NULL, ab, 1, 1);
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "The shape of the 3D attn_mask is [2, 4, 5], but should be "
            "[4, 4, 4]", q, q, q, NULL, a3, 1, 1);
    MHA_ERR(CLT_ERR_DTYPE_MISMATCH, "only bool and floating types of attn_mask", q, q, q, NULL,
            ai, 1, 1);
    MHA_ERR(CLT_ERR_DTYPE_MISMATCH, "must have the query's dtype", q, q, q, NULL, af64, 1, 1);
    MHA_ERR(CLT_ERR_DTYPE_MISMATCH, "masked_fill only supports boolean masks", q, q, q, kf, af, 1,
            1);
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "expected `key_padding_mask` to be `None` or 2-D", q, q, q,
            a3, NULL, 1, 1);
    clt_tensor *q4;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){1, 4, 2, 8}, &q4));
    MHA_ERR(CLT_ERR_SHAPE_MISMATCH, "query should be unbatched 2D or batched 3D tensor but "
            "received 4-D", q4, q4, q4, NULL, NULL, 1, 1);
    o = (clt_tensor *)&o;
    assert_error(clt_multihead_attention(m, q, q, q, NULL, NULL, 1, 1, &o, NULL),
                 CLT_ERR_NULL_ARGUMENT, "weights");
    cr_assert_null(o);
    clt_tensor *wt = (clt_tensor *)&o; /* a NULL out: the weights' pointer is set to NULL */
    assert_error(clt_multihead_attention(m, q, q, q, NULL, NULL, 1, 1, NULL, &wt),
                 CLT_ERR_NULL_ARGUMENT, "out");
    cr_assert_null(wt);
    /* another kind of module */
    clt_module *relu;
    CHECK(clt_relu_layer(&relu));
    o = (clt_tensor *)&o;
    assert_error(clt_multihead_attention(relu, q, q, q, NULL, NULL, 0, 0, &o, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "the module is a ReLU, not a MultiheadAttention");
    assert_error(clt_transformer_encoder_forward(m, q, NULL, NULL, &o), CLT_ERR_INVALID_ARGUMENT,
                 "not a TransformerEncoderLayer");
    cr_assert_null(o);
    /* through clt_module_forward, the layer names itself */
    assert_error(clt_module_forward(m, q7, &o), CLT_ERR_SHAPE_MISMATCH,
                 "clt_module_forward: MultiheadAttention: was expecting embedding dimension");
    cr_assert_null(o);
    /* another device */
    clt_device *dev2 = second_device(dev);
    clt_tensor *q2;
    CHECK(clt_to(q, dev2, &q2));
    MHA_ERR(CLT_ERR_DEVICE_MISMATCH, "the key is on", q, q2, q2, NULL, NULL, 1, 1);
    clt_tensor *kb2;
    CHECK(clt_zeros(dev2, CLT_BOOL, 2, (int64_t[]){2, 4}, &kb2));
    MHA_ERR(CLT_ERR_DEVICE_MISMATCH, "the key_padding_mask is on", q, q, q, kb2, NULL, 1, 1);
    clt_tensor *tensors[] = {q, k5, q7, kb3, q64, qi, kb, ab, a3, ai, af64, kf, af, q2, kb2, q4};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++)
        clt_tensor_free(tensors[i]);
    clt_module_free(relu);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(attention, failed_forward_draws_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(2, &gen));
    clt_module *m;
    CHECK(clt_transformer_encoder_layer(dev, 8, 2, 16, 0.3, "relu", 1e-5, 0, 0, gen, &m));
    int64_t s[3] = {4, 2, 8};
    clt_tensor *x, *bad, *o = NULL;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, s, &x));
    CHECK(clt_zeros(dev, CLT_BOOL, 2, (int64_t[]){2, 3}, &bad));
    uint64_t before = clt_generator_offset(gen);
    assert_error(clt_transformer_encoder_forward(m, x, NULL, bad, &o), CLT_ERR_SHAPE_MISMATCH,
                 "clt_transformer_encoder_forward: MultiheadAttention: expecting "
                 "key_padding_mask shape");
    cr_assert_null(o);
    cr_assert_eq(clt_generator_offset(gen), before);
    clt_tensor_free(bad);
    clt_tensor_free(x);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- a state saved and loaded back ------------------------------------------------------ */

Test(attention, state_round_trip)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g1, *g2;
    CHECK(clt_generator_new(100, &g1));
    CHECK(clt_generator_new(200, &g2));
    clt_module *a, *b;
    CHECK(clt_transformer_encoder_layer(dev, 8, 4, 16, 0.0, "gelu", 1e-5, 1, 1, g1, &a));
    CHECK(clt_transformer_encoder_layer(dev, 8, 4, 16, 0.0, "gelu", 1e-5, 1, 1, g2, &b));
    char path[] = "/tmp/cltensor-attn-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    CHECK(clt_module_save(a, path));
    CHECK(clt_module_load(b, path));
    unlink(path);
    int64_t s[3] = {2, 5, 8};
    clt_tensor *x, *ya, *yb;
    CHECK(clt_randn(g1, dev, CLT_FLOAT32, 3, s, &x));
    CHECK(clt_module_forward(a, x, &ya));
    CHECK(clt_module_forward(b, x, &yb));
    double *va = read_as_f64(ya), *vb = read_as_f64(yb);
    for (int i = 0; i < 2 * 5 * 8; i++)
        cr_assert_eq(va[i], vb[i], "element %d: %g vs %g", i, va[i], vb[i]);
    free(va);
    free(vb);
    clt_tensor_free(x);
    clt_tensor_free(ya);
    clt_tensor_free(yb);
    clt_module_free(a);
    clt_module_free(b);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

/* ---- kdim, vdim, add_bias_kv, add_zero_attn ---------------------------------------------- */

/* A layer made with clt_multihead_attention_layer_with_opts, its settings
 * and its parameters read back: wq [E, E], wk [E, kd], wv [E, vd] (slices
 * of in_proj_weight when kd = vd = E), b [3E] or NULL, bk and bv [E] or
 * NULL, wo, bo. */
typedef struct ocase {
    int64_t E, H, kd, vd;
    int bkv, za, bias, bf;
} ocase;

typedef struct ow {
    double *w, *wq, *wk, *wv, *b, *bk, *bv, *wo, *bo;
} ow;

static ow ow_read(const clt_module *m, const ocase *o)
{
    ow r = {0};
    if (o->kd == o->E && o->vd == o->E) {
        r.w = state_f64(m, "in_proj_weight");
        cr_assert_not_null(r.w);
        r.wq = r.w;
        r.wk = r.w + o->E * o->E;
        r.wv = r.w + 2 * o->E * o->E;
    } else {
        r.wq = state_f64(m, "q_proj_weight");
        r.wk = state_f64(m, "k_proj_weight");
        r.wv = state_f64(m, "v_proj_weight");
        cr_assert(r.wq && r.wk && r.wv);
        cr_assert_null(state_f64(m, "in_proj_weight"));
    }
    r.b = state_f64(m, "in_proj_bias");
    r.bk = state_f64(m, "bias_k");
    r.bv = state_f64(m, "bias_v");
    r.wo = state_f64(m, "out_proj.weight");
    r.bo = state_f64(m, "out_proj.bias");
    cr_assert_eq(r.b != NULL, o->bias != 0);
    cr_assert_eq(r.bk != NULL && r.bv != NULL, o->bkv != 0);
    return r;
}

static void ow_free(ow *r)
{
    if (r->w == NULL) {
        free(r->wq);
        free(r->wk);
        free(r->wv);
    }
    free(r->w);
    free(r->b);
    free(r->bk);
    free(r->bv);
    free(r->wo);
    free(r->bo);
}

/* Element (n, t, f) of an input of T positions and F features in the
 * query's layout ([T, N, F], or [N, T, F] with bf). */
static size_t at_f(int bf, int64_t N, int64_t n, int64_t t, int64_t f, int64_t T, int64_t F)
{
    return (size_t)(bf ? (n * T + t) * F + f : (t * N + n) * F + f);
}

/* F.multi_head_attention_forward in plain loops for the options of o:
 * out in the query's layout, weights [N, H, L, S2] per head, S2 = S + bkv
 * + za; the masks of c (S columns) are read as zero past S. */
static void mha_ref_opts(const ocase *o, const cfg *c, const ow *p, const double *q,
                         const double *k, const double *v, double *out, double *wts)
{
    int64_t E = o->E, H = o->H, N = c->N, L = c->L, S = c->S, D = E / H;
    int64_t S2 = S + o->bkv + o->za;
    double *pq = calloc((size_t)(N * L * E), sizeof *pq);
    double *pk = calloc((size_t)(N * S2 * E), sizeof *pk); /* zeros: the zero attention */
    double *pv = calloc((size_t)(N * S2 * E), sizeof *pv);
    double *ob = calloc((size_t)(N * L * E), sizeof *ob), *s = calloc((size_t)S2, sizeof *s);
    for (int64_t n = 0; n < N; n++)
        for (int64_t e = 0; e < E; e++) {
            for (int64_t t = 0; t < L; t++) {
                double a = p->b ? p->b[e] : 0;
                for (int64_t i = 0; i < E; i++)
                    a += q[at_f(o->bf, N, n, t, i, L, E)] * p->wq[e * E + i];
                pq[(n * L + t) * E + e] = a;
            }
            for (int64_t t = 0; t < S; t++) {
                double a = p->b ? p->b[E + e] : 0, b = p->b ? p->b[2 * E + e] : 0;
                for (int64_t i = 0; i < o->kd; i++)
                    a += k[at_f(o->bf, N, n, t, i, S, o->kd)] * p->wk[e * o->kd + i];
                for (int64_t i = 0; i < o->vd; i++)
                    b += v[at_f(o->bf, N, n, t, i, S, o->vd)] * p->wv[e * o->vd + i];
                pk[(n * S2 + t) * E + e] = a;
                pv[(n * S2 + t) * E + e] = b;
            }
            if (o->bkv) {
                pk[(n * S2 + S) * E + e] = p->bk[e];
                pv[(n * S2 + S) * E + e] = p->bv[e];
            }
        }
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < L; i++) {
                double mx = -INFINITY;
                for (int64_t j = 0; j < S2; j++) {
                    double a = 0;
                    for (int64_t d = 0; d < D; d++)
                        a += pq[(n * L + i) * E + h * D + d] * pk[(n * S2 + j) * E + h * D + d];
                    a /= sqrt((double)D);
                    if (c->am && j < S) {
                        double mv = c->am3 ? c->am[((n * H + h) * L + i) * S + j]
                                           : c->am[i * S + j];
                        a = c->am_bool ? (mv != 0 ? -INFINITY : a) : a + mv;
                    }
                    if (c->kpm && j < S) {
                        double mv = c->kpm[n * S + j];
                        a = c->kpm_bool || c->am ? (mv != 0 ? -INFINITY : a) : a + mv;
                    }
                    s[j] = a;
                    mx = fmax(mx, a);
                }
                double sum = 0;
                for (int64_t j = 0; j < S2; j++)
                    sum += s[j] = exp(s[j] - mx);
                for (int64_t j = 0; j < S2; j++) {
                    double a = s[j] / sum;
                    wts[((n * H + h) * L + i) * S2 + j] = a;
                    for (int64_t d = 0; d < D; d++)
                        ob[(n * L + i) * E + h * D + d] += a * pv[(n * S2 + j) * E + h * D + d];
                }
            }
    for (int64_t n = 0; n < N; n++)
        for (int64_t t = 0; t < L; t++)
            for (int64_t e = 0; e < E; e++) {
                double a = p->bo ? p->bo[e] : 0;
                for (int64_t i = 0; i < E; i++)
                    a += ob[(n * L + t) * E + i] * p->wo[e * E + i];
                out[at_f(o->bf, N, n, t, e, L, E)] = a;
            }
    free(pq);
    free(pk);
    free(pv);
    free(ob);
    free(s);
}

static clt_module *make_opts(clt_device *dev, const ocase *o, clt_generator *gen)
{
    clt_multihead_attention_opts mo = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
    mo.bias = o->bias;
    mo.add_bias_kv = o->bkv;
    mo.add_zero_attn = o->za;
    mo.kdim = o->kd == o->E ? 0 : o->kd;
    mo.vdim = o->vd;
    mo.batch_first = o->bf;
    clt_module *m;
    CHECK(clt_multihead_attention_layer_with_opts(dev, o->E, o->H, &mo, gen, &m));
    return m;
}

/* One case of o with the masks of c (c.E, c.H, c.bf unused): outputs and
 * weights (averaged, per head, none) against mha_ref_opts; unbatched when
 * c.N is 0 (then one sequence). */
static void opts_case(clt_device *dev, const ocase *o, cfg c)
{
    clt_generator *gen;
    CHECK(clt_generator_new(31, &gen));
    clt_module *m = make_opts(dev, o, gen);
    ow p = ow_read(m, o);
    int unbatched = c.N == 0;
    if (unbatched)
        c.N = 1;
    int64_t N = c.N, L = c.L, S = c.S, E = o->E, H = o->H, S2 = S + o->bkv + o->za;
    size_t nq = (size_t)(N * L * E), nk = (size_t)(N * S * o->kd), nv = (size_t)(N * S * o->vd);
    double *q = rand_f64(nq, 1, -1, 1), *k = rand_f64(nk, 2, -1, 1), *v = rand_f64(nv, 3, -1, 1);
    int64_t qs[3] = {o->bf ? N : L, o->bf ? L : N, E}, ks[3] = {o->bf ? N : S, o->bf ? S : N,
                                                                o->kd};
    int64_t vs[3] = {ks[0], ks[1], o->vd};
    int nd = unbatched ? 2 : 3, off = unbatched ? 1 : 0;
    if (unbatched) { /* [T, F]: the dims after N's place */
        qs[1] = L, ks[1] = S, vs[1] = S;
    }
    clt_tensor *tq = tensor_of(dev, CLT_FLOAT32, nd, qs + off, q);
    clt_tensor *tk = tensor_of(dev, CLT_FLOAT32, nd, ks + off, k);
    clt_tensor *tv = tensor_of(dev, CLT_FLOAT32, nd, vs + off, v);
    clt_tensor *kpm = NULL, *am = NULL;
    if (c.kpm) {
        int64_t sh[2] = {N, S};
        kpm = tensor_of(dev, c.kpm_bool ? CLT_BOOL : CLT_FLOAT32, 2 - off, sh + off, c.kpm);
    }
    if (c.am) {
        int64_t sh[3] = {N * H, L, S};
        am = tensor_of(dev, c.am_bool ? CLT_BOOL : CLT_FLOAT32, c.am3 ? 3 : 2,
                       c.am3 ? sh : sh + 1, c.am);
    }
    c.E = E, c.H = H, c.bf = o->bf;
    size_t nw = (size_t)(N * H * L * S2), na = (size_t)(N * L * S2);
    double *out = malloc(nq * sizeof *out), *w = malloc(nw * sizeof *w);
    double *avg = calloc(na, sizeof *avg);
    mha_ref_opts(o, &c, &p, q, k, v, out, w);
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < L * S2; i++)
                avg[n * L * S2 + i] += w[(n * H + h) * L * S2 + i] / (double)H;
    for (int av = 0; av < 2; av++) {
        clt_tensor *to = NULL, *wt = NULL;
        CHECK(clt_multihead_attention(m, tq, tk, tv, kpm, am, 1, av, &to, &wt));
        assert_shape(to, nd, qs + off);
        assert_close(to, out, nq, 2e-5, "output");
        int64_t ws[4] = {N, H, L, S2}, wa[3] = {N, L, S2};
        if (av)
            assert_shape(wt, 3 - off, wa + off);
        else
            assert_shape(wt, 4 - off, ws + off);
        assert_close(wt, av ? avg : w, av ? na : nw, 2e-5, "weights");
        clt_tensor_free(to);
        clt_tensor_free(wt);
    }
    clt_tensor *to = NULL, *wt = (clt_tensor *)&wt;
    CHECK(clt_multihead_attention(m, tq, tk, tv, kpm, am, 0, 1, &to, &wt));
    cr_assert_null(wt);
    assert_close(to, out, nq, 2e-5, "output without weights");
    clt_tensor_free(to);
    free(q);
    free(k);
    free(v);
    free(out);
    free(w);
    free(avg);
    ow_free(&p);
    clt_tensor_free(tq);
    clt_tensor_free(tk);
    clt_tensor_free(tv);
    clt_tensor_free(kpm);
    clt_tensor_free(am);
    clt_module_free(m);
    clt_generator_free(gen);
}

static const ocase opt_cases[] = {
    /* E, H, kdim, vdim, add_bias_kv, add_zero_attn, bias, batch_first (set per run) */
    {8, 2, 5, 3, 0, 0, 1, 0}, {8, 2, 5, 3, 1, 1, 1, 0}, {8, 4, 8, 8, 1, 0, 1, 0},
    {8, 2, 8, 8, 0, 1, 0, 0}, {8, 2, 8, 8, 1, 1, 1, 0}, {8, 1, 6, 8, 1, 1, 0, 0},
};

Test(attention, opts_against_reference)
{
    clt_device *dev = get_device("cpu");
    enum { N = 2, L = 3, S = 5 };
    double kpm[N * S] = {0, 0, 1, 0, 0, 1, 1, 1, 1, 1}; /* batch 1: every key hidden */
    double kpf[N * S] = {0, -1.5, 0.5, 0, -INFINITY, 2, 0, -3, 0, 0};
    double am2b[L * S] = {0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1};
    double *am2f = rand_f64(L * S, 9, -2, 1);
    double *am3f = rand_f64(N * 4 * L * S, 10, -2, 1);
    for (size_t i = 0; i < sizeof opt_cases / sizeof *opt_cases; i++)
        for (int bf = 0; bf < 2; bf++) {
            ocase o = opt_cases[i];
            o.bf = bf;
            /* cfg: E, H and bf come from o */
            opts_case(dev, &o, (cfg){0, 0, N, L, S, 0, NULL, 0, NULL, 0, 0});
            opts_case(dev, &o, (cfg){0, 0, N, L, S, 0, kpf, 0, NULL, 0, 0});
            opts_case(dev, &o, (cfg){0, 0, N, L, S, 0, NULL, 0, am2b, 1, 0});
            opts_case(dev, &o, (cfg){0, 0, N, L, S, 0, NULL, 0, am2f, 0, 0});
            if (o.bkv || o.za) /* the added positions keep fully hidden rows finite */
                opts_case(dev, &o, (cfg){0, 0, N, L, S, 0, kpm, 1, am2f, 0, 0});
            if (o.H == 4)
                opts_case(dev, &o, (cfg){0, 0, N, L, S, 0, kpm, 1, am3f, 0, 1});
            /* unbatched: [L, E], masks [S] and [L, S] */
            opts_case(dev, &o, (cfg){0, 0, 0, L, S, 0, kpm, 1, am2f, 0, 0});
        }
    free(am2f);
    free(am3f);
}

Test(attention, opts_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    enum { E = 4, H = 2 };
    const ocase cases[] = {{E, H, 3, 5, 1, 1, 1, 0}, {E, H, E, E, 1, 0, 1, 0},
                           {E, H, E, E, 0, 1, 0, 0}, {E, H, 2, E, 0, 0, 1, 0}};
    const double kp[4] = {0, 1, 1, 1}; /* batch 1 hides both keys */
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const ocase *o = &cases[c];
        clt_generator *gen;
        CHECK(clt_generator_new(5, &gen));
        clt_module *m = make_opts(dev, o, gen);
        size_t np = (o->kd == E && o->vd == E ? 1 : 3) + (o->bias ? 1 : 0) + (o->bkv ? 2 : 0) +
                    (o->bias ? 2 : 1);
        /* without a bias_k or zero_attn, batch 1's rows are NaN with the masks */
        mha_grads_case(dev, m, o->kd, o->vd, kp, o->bkv || o->za, np);
        clt_module_free(m);
        clt_generator_free(gen);
    }
}

Test(attention, opts_initialisation_names_and_errors)
{
    clt_device *dev = get_device("cpu");
    enum { E = 16 };
    clt_generator *gen, *gen2;
    CHECK(clt_generator_new(21, &gen));
    CHECK(clt_generator_new(21, &gen2));
    ocase o = {E, 4, 5, 7, 1, 1, 1, 0};
    clt_module *m = make_opts(dev, &o, gen), *m2 = make_opts(dev, &o, gen2);
    const char *names[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                           "bias_k",        "bias_v",        "out_proj.weight", "out_proj.bias"};
    assert_names(m, names, 8);
    ow p = ow_read(m, &o), p2 = ow_read(m2, &o);
    /* xavier_uniform_ each: bound sqrt(6 / (E + columns)); reproducible */
    const double *ws[3] = {p.wq, p.wk, p.wv}, *ws2[3] = {p2.wq, p2.wk, p2.wv};
    int64_t cols[3] = {E, 5, 7};
    for (int j = 0; j < 3; j++) {
        double xb = sqrt(6.0 / (double)(E + cols[j])), lo = 1, hi = -1;
        for (int64_t i = 0; i < E * cols[j]; i++) {
            cr_assert(fabs(ws[j][i]) <= xb, "weight %d element %lld = %g beyond %g", j,
                      (long long)i, ws[j][i], xb);
            cr_assert_eq(ws[j][i], ws2[j][i]);
            lo = fmin(lo, ws[j][i]);
            hi = fmax(hi, ws[j][i]);
        }
        cr_assert(hi > 0.8 * xb && lo < -0.8 * xb, "weight %d spans %g..%g of +-%g", j, lo, hi,
                  xb);
    }
    /* xavier_normal_ on [1, 1, E]: std sqrt(1 / E), bias_k and bias_v drawn apart */
    double ss = 0;
    int differ = 0;
    for (int i = 0; i < E; i++) {
        ss += p.bk[i] * p.bk[i] + p.bv[i] * p.bv[i];
        differ |= p.bk[i] != p.bv[i];
        cr_assert_eq(p.bk[i], p2.bk[i]);
    }
    cr_assert(differ);
    double sd = sqrt(ss / (2 * E)); /* 32 draws: within a factor 1.6 of 0.25 */
    cr_assert(sd > 0.25 / 1.6 && sd < 0.25 * 1.6, "bias_k, bias_v std %g, want about 0.25", sd);
    for (int i = 0; i < 3 * E; i++)
        cr_assert_eq(p.b[i], 0.0);
    ow_free(&p);
    ow_free(&p2);
    /* kdim = vdim = E: in_proj_weight, as clt_multihead_attention_layer's;
     * bias_k and bias_v without bias */
    ocase o2 = {E, 4, E, E, 1, 0, 0, 0};
    clt_module *m3 = make_opts(dev, &o2, gen);
    const char *names3[] = {"in_proj_weight", "bias_k", "bias_v", "out_proj.weight"};
    assert_names(m3, names3, 4);
    /* NULL opts: the defaults, drawing as clt_multihead_attention_layer */
    clt_module *d1, *d2;
    clt_manual_seed(gen, 3);
    clt_manual_seed(gen2, 3);
    CHECK(clt_multihead_attention_layer_with_opts(dev, E, 4, NULL, gen, &d1));
    CHECK(clt_multihead_attention_layer(dev, E, 4, 0.0, 1, 0, gen2, &d2));
    mha_w a = mha_read(d1, ""), b = mha_read(d2, "");
    for (int i = 0; i < 3 * E * E; i++)
        cr_assert_eq(a.w[i], b.w[i]);
    mha_w_free(&a);
    mha_w_free(&b);
    /* errors: a constructor that fails draws nothing */
    clt_multihead_attention_opts bad = CLT_MULTIHEAD_ATTENTION_DEFAULTS;
    bad.vdim = -2;
    clt_module *none = (clt_module *)&none;
    uint64_t before = clt_generator_offset(gen);
    assert_error(clt_multihead_attention_layer_with_opts(dev, E, 4, &bad, gen, &none),
                 CLT_ERR_INVALID_ARGUMENT, "clt_multihead_attention_layer_with_opts: kdim (0) "
                 "and vdim (-2) must be positive");
    cr_assert_null(none);
    bad.vdim = 0;
    bad.dropout = -0.5;
    assert_error(clt_multihead_attention_layer_with_opts(dev, E, 4, &bad, gen, &none),
                 CLT_ERR_INVALID_ARGUMENT, "between 0 and 1");
    assert_error(clt_multihead_attention_layer_with_opts(dev, E, 3, NULL, gen, &none),
                 CLT_ERR_INVALID_ARGUMENT, "divisible");
    cr_assert_eq(clt_generator_offset(gen), before);
    /* inputs of the wrong sizes for kdim 5, vdim 7 */
    clt_tensor *q, *k5, *v7, *k16, *v7s, *o_ = (clt_tensor *)&o_, *w_ = (clt_tensor *)&w_;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){3, 2, E}, &q));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, 5}, &k5));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, 7}, &v7));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, E}, &k16));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 3, (int64_t[]){5, 2, 7}, &v7s));
    assert_error(clt_multihead_attention(m, q, k16, v7, NULL, NULL, 1, 1, &o_, &w_),
                 CLT_ERR_SHAPE_MISMATCH, "have 16 and 7 features in their last dimension; the "
                 "layer takes kdim 5 and vdim 7");
    cr_assert_null(o_);
    cr_assert_null(w_);
    assert_error(clt_multihead_attention(m, q, k5, v7s, NULL, NULL, 1, 1, &o_, &w_),
                 CLT_ERR_SHAPE_MISMATCH, "key's sequence and batch dims [4, 2] do not match "
                 "value's [5, 2]");
    assert_error(clt_module_forward(m, q, &o_), CLT_ERR_SHAPE_MISMATCH, "kdim 5 and vdim 7");
    cr_assert_null(o_);
    CHECK(clt_multihead_attention(m, q, k5, v7, NULL, NULL, 1, 0, &o_, &w_));
    assert_shape(w_, 4, (int64_t[]){2, 4, 3, 6}); /* S + 2 columns */
    clt_tensor *ts[] = {q, k5, v7, k16, v7s, o_, w_};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        clt_tensor_free(ts[i]);
    clt_module_free(m);
    clt_module_free(m2);
    clt_module_free(m3);
    clt_module_free(d1);
    clt_module_free(d2);
    clt_generator_free(gen);
    clt_generator_free(gen2);
}
