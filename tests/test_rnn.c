/* test_rnn.c: RNN (tanh, relu), LSTM and GRU: outputs and final states
 * against a float64 host loop of the cell equations (one and two layers,
 * both directions, batch_first both ways, given initial states, unbatched
 * input), gradients of the input, the initial states and every parameter by
 * finite differences, dropout between layers in train mode only, the
 * parameters' names, shapes and initialisation, a checkpoint round trip,
 * and the errors. */
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

enum { TANH, RELU, LSTM, GRU };

typedef struct cfg {
    int kind;
    int64_t I, H, L;
    int bias, bf, bidir, batched;
} cfg;

static int gates(int kind)
{
    return kind == LSTM ? 4 : kind == GRU ? 3 : 1;
}

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* The forward of torch's equations in plain loops.  p: the parameters in
 * the module's order (weight_ih, weight_hh[, bias_ih, bias_hh] for each
 * layer and direction).  x in the caller's layout ([T, N, I], [N, T, I]
 * with bf, [T, I] unbatched); h0, c0 [D L, N, H] or NULL (zeros).  out in
 * the output's layout, hn and cn [D L, N, H] (cn LSTM only).  zero_between:
 * the layers after the first see zeros (dropout with p 1). */
static void reference(const cfg *c, double *const *p, const double *x, int64_t T, int64_t N,
                      const double *h0, const double *c0, double *out, double *hn, double *cn,
                      int zero_between)
{
    int D = c->bidir ? 2 : 1, per = c->bias ? 4 : 2;
    int64_t H = c->H, G = gates(c->kind) * H, DH = D * H;
    double *in = calloc((size_t)(T * N * (c->I > DH ? c->I : DH)), sizeof *in);
    double *lo = calloc((size_t)(T * N * DH), sizeof *lo);
    double *a = malloc((size_t)G * sizeof *a), *ah = malloc((size_t)G * sizeof *ah);
    double *h = malloc((size_t)(N * H) * sizeof *h), *cs = malloc((size_t)(N * H) * sizeof *cs);
    double *hnew = malloc((size_t)(N * H) * sizeof *hnew);
    for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t i = 0; i < c->I; i++)
                in[(t * N + n) * c->I + i] =
                    x[(c->batched && c->bf ? n * T + t : t * N + n) * c->I + i];
    int64_t isz = c->I;
    for (int64_t l = 0; l < c->L; l++) {
        if (l > 0) {
            for (int64_t k = 0; k < T * N * DH; k++)
                in[k] = zero_between ? 0.0 : lo[k];
            isz = DH;
        }
        for (int d = 0; d < D; d++) {
            int64_t k = l * D + d;
            const double *wih = p[k * per], *whh = p[k * per + 1];
            const double *bih = c->bias ? p[k * per + 2] : NULL;
            const double *bhh = c->bias ? p[k * per + 3] : NULL;
            for (int64_t j = 0; j < N * H; j++) {
                h[j] = h0 ? h0[k * N * H + j] : 0.0;
                cs[j] = c0 ? c0[k * N * H + j] : 0.0;
            }
            for (int64_t s = 0; s < T; s++) {
                int64_t t = d ? T - 1 - s : s;
                for (int64_t n = 0; n < N; n++) {
                    for (int64_t g = 0; g < G; g++) {
                        double vx = bih ? bih[g] : 0.0, vh = bhh ? bhh[g] : 0.0;
                        for (int64_t i = 0; i < isz; i++)
                            vx += wih[g * isz + i] * in[(t * N + n) * isz + i];
                        for (int64_t j = 0; j < H; j++)
                            vh += whh[g * H + j] * h[n * H + j];
                        a[g] = vx;
                        ah[g] = vh;
                    }
                    for (int64_t j = 0; j < H; j++) {
                        double *hv = &hnew[n * H + j], *cv = &cs[n * H + j];
                        double hprev = h[n * H + j];
                        switch (c->kind) {
                        case TANH:
                            *hv = tanh(a[j] + ah[j]);
                            break;
                        case RELU:
                            *hv = fmax(a[j] + ah[j], 0.0);
                            break;
                        case LSTM: {
                            double ig = sigm(a[j] + ah[j]), fg = sigm(a[H + j] + ah[H + j]);
                            double gg = tanh(a[2 * H + j] + ah[2 * H + j]);
                            double og = sigm(a[3 * H + j] + ah[3 * H + j]);
                            *cv = fg * *cv + ig * gg;
                            *hv = og * tanh(*cv);
                            break;
                        }
                        default: {
                            double r = sigm(a[j] + ah[j]), z = sigm(a[H + j] + ah[H + j]);
                            double nn = tanh(a[2 * H + j] + r * ah[2 * H + j]);
                            *hv = (1 - z) * nn + z * hprev;
                            break;
                        }
                        }
                    }
                }
                memcpy(h, hnew, (size_t)(N * H) * sizeof *h);
                for (int64_t n = 0; n < N; n++)
                    for (int64_t j = 0; j < H; j++)
                        lo[(t * N + n) * DH + d * H + j] = h[n * H + j];
            }
            memcpy(hn + k * N * H, h, (size_t)(N * H) * sizeof *h);
            if (cn)
                memcpy(cn + k * N * H, cs, (size_t)(N * H) * sizeof *cs);
        }
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t j = 0; j < DH; j++)
                out[(c->batched && c->bf ? n * T + t : t * N + n) * DH + j] =
                    lo[(t * N + n) * DH + j];
    free(in);
    free(lo);
    free(a);
    free(ah);
    free(h);
    free(cs);
    free(hnew);
}

/* Values in [lo, hi) from a seed. */
static void fill(double *v, size_t n, unsigned seed, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = lo + (hi - lo) * (double)((seed >> 8) % 10007) / 10007.0;
    }
}

static clt_status make(clt_device *dev, const cfg *c, double dropout, clt_generator *gen,
                       clt_module **m)
{
    clt_rnn_opts o = CLT_RNN_DEFAULTS(c->I, c->H);
    o.num_layers = c->L;
    o.bias = c->bias;
    o.batch_first = c->bf;
    o.bidirectional = c->bidir;
    o.dropout = dropout;
    o.nonlinearity = c->kind == RELU ? CLT_RNN_RELU : CLT_RNN_TANH;
    if (c->kind == LSTM)
        return clt_lstm_layer(dev, &o, gen, m);
    if (c->kind == GRU)
        return clt_gru_layer(dev, &o, gen, m);
    return clt_rnn_layer(dev, &o, gen, m);
}

/* output, h_n, c_n (LSTM) of m. */
static clt_status run(clt_module *m, int kind, const clt_tensor *x, const clt_tensor *h0,
                      const clt_tensor *c0, clt_tensor **out, clt_tensor **hn, clt_tensor **cn)
{
    if (kind == LSTM)
        return clt_lstm_forward(m, x, h0, c0, out, hn, cn);
    *cn = NULL;
    if (kind == GRU)
        return clt_gru_forward(m, x, h0, out, hn);
    return clt_rnn_forward(m, x, h0, out, hn);
}

/* The module's parameters as host doubles, in its order. */
static double **host_params(const clt_module *m, size_t *n)
{
    clt_tensor **ps = NULL;
    CHECK(clt_module_parameters(m, &ps, n));
    double **v = malloc(*n * sizeof *v);
    for (size_t k = 0; k < *n; k++)
        v[k] = read_as_f64(ps[k]);
    clt_free(ps);
    return v;
}

static void free_params(double **v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(v[k]);
    free(v);
}

static void assert_close(const clt_tensor *t, const double *want, size_t n, double rtol,
                         double atol, const char *what)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld values, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol), "%s element %zu: got %.9g, want %.9g",
                  what, i, got[i], want[i]);
    free(got);
}

/* One configuration, float32 or float64, against the reference. */
static void one_case(clt_device *dev, const cfg *c, clt_dtype dt, int given)
{
    int64_t T = 4, N = c->batched ? 3 : 1, D = c->bidir ? 2 : 1;
    clt_generator *gen = NULL;
    clt_module *m = NULL;
    CHECK(clt_generator_new(11, &gen));
    CHECK(make(dev, c, 0.0, gen, &m));
    if (dt == CLT_FLOAT64)
        CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    size_t np = 0;
    double **p = host_params(m, &np);
    cr_assert_eq(np, (size_t)(c->L * D * (c->bias ? 4 : 2)));
    size_t nx = (size_t)(T * N * c->I), nh = (size_t)(D * c->L * N * c->H);
    double *x = malloc(nx * sizeof *x), *h0 = malloc(nh * sizeof *h0), *c0 = malloc(nh * sizeof *c0);
    fill(x, nx, 5, -2, 2);
    fill(h0, nh, 6, -1, 1);
    fill(c0, nh, 7, -1, 1);
    int64_t xs[3] = {c->bf ? N : T, c->bf ? T : N, c->I}, xu[2] = {T, c->I};
    int64_t hs[3] = {D * c->L, N, c->H}, hu[2] = {D * c->L, c->H};
    clt_tensor *tx = tensor_of(dev, dt, c->batched ? 3 : 2, c->batched ? xs : xu, x);
    clt_tensor *th = given ? tensor_of(dev, dt, c->batched ? 3 : 2, c->batched ? hs : hu, h0) : NULL;
    clt_tensor *tc = given && c->kind == LSTM
                         ? tensor_of(dev, dt, c->batched ? 3 : 2, c->batched ? hs : hu, c0)
                         : NULL;
    clt_tensor *out = NULL, *hn = NULL, *cn = NULL, *only = NULL;
    CHECK(run(m, c->kind, tx, th, tc, &out, &hn, &cn));
    size_t no = (size_t)(T * N * D * c->H);
    double *wo = malloc(no * sizeof *wo), *wh = malloc(nh * sizeof *wh), *wc = malloc(nh * sizeof *wc);
    reference(c, p, x, T, N, given ? h0 : NULL, given ? c0 : NULL, wo, wh,
              c->kind == LSTM ? wc : NULL, 0);
    int64_t os[3] = {c->bf ? N : T, c->bf ? T : N, D * c->H}, ou[2] = {T, D * c->H};
    assert_shape(out, c->batched ? 3 : 2, c->batched ? os : ou);
    assert_shape(hn, c->batched ? 3 : 2, c->batched ? hs : hu);
    double rtol = dt == CLT_FLOAT64 ? 1e-12 : 2e-5, atol = dt == CLT_FLOAT64 ? 1e-13 : 2e-6;
    assert_close(out, wo, no, rtol, atol, "output");
    assert_close(hn, wh, nh, rtol, atol, "h_n");
    if (c->kind == LSTM) {
        assert_shape(cn, c->batched ? 3 : 2, c->batched ? hs : hu);
        assert_close(cn, wc, nh, rtol, atol, "c_n");
    } else {
        cr_assert_null(cn);
    }
    /* without grad the input is projected for all steps at once: the same */
    clt_tensor *o2 = NULL, *h2 = NULL, *c2 = NULL;
    int was = clt_set_grad_enabled(0);
    CHECK(run(m, c->kind, tx, th, tc, &o2, &h2, &c2));
    clt_set_grad_enabled(was);
    assert_close(o2, wo, no, rtol, atol, "output without grad");
    assert_close(h2, wh, nh, rtol, atol, "h_n without grad");
    if (c->kind == LSTM)
        assert_close(c2, wc, nh, rtol, atol, "c_n without grad");
    clt_tensor_free(o2);
    clt_tensor_free(h2);
    clt_tensor_free(c2);
    /* clt_module_forward gives the output alone (zero initial states) */
    if (!given) {
        CHECK(clt_module_forward(m, tx, &only));
        assert_close(only, wo, no, rtol, atol, "clt_module_forward");
    }
    clt_tensor_free(only);
    clt_tensor_free(out);
    clt_tensor_free(hn);
    clt_tensor_free(cn);
    clt_tensor_free(tx);
    clt_tensor_free(th);
    clt_tensor_free(tc);
    free(x);
    free(h0);
    free(c0);
    free(wo);
    free(wh);
    free(wc);
    free_params(p, np);
    clt_module_free(m);
    clt_generator_free(gen);
}

static void all_cases(int kind)
{
    clt_device *dev = get_device("cpu");
    for (int L = 1; L <= 2; L++)
        for (int bidir = 0; bidir < 2; bidir++)
            for (int bf = 0; bf < 2; bf++)
                for (int given = 0; given < 2; given++)
                    for (int batched = 1; batched >= 0; batched--) {
                        if (!batched && bf)
                            continue;
                        cfg c = {kind, 3, 5, L, 1, bf, bidir, batched};
                        one_case(dev, &c, CLT_FLOAT32, given);
                        if (L == 2 && bidir && given)
                            one_case(dev, &c, CLT_FLOAT64, given);
                    }
    cfg nobias = {kind, 2, 3, 2, 0, 0, 1, 1};
    one_case(dev, &nobias, CLT_FLOAT32, 1);
}

Test(rnn, rnn_tanh_values_against_a_host_loop)
{
    all_cases(TANH);
}

Test(rnn, rnn_relu_values_against_a_host_loop)
{
    all_cases(RELU);
}

Test(rnn, lstm_values_against_a_host_loop)
{
    all_cases(LSTM);
}

Test(rnn, gru_values_against_a_host_loop)
{
    all_cases(GRU);
}

/* ---- gradients ------------------------------------------------------------ */

typedef struct gctx {
    clt_module *m;
    int kind, given;
} gctx;

/* output, h_n and c_n joined into one vector, so that all three carry
 * gradients back. */
static clt_status joined(clt_tensor *const *in, clt_tensor **out, const void *vctx)
{
    const gctx *g = vctx;
    clt_tensor *o = NULL, *hn = NULL, *cn = NULL, *parts[3] = {NULL, NULL, NULL};
    clt_status st = run(g->m, g->kind, in[0], g->given ? in[1] : NULL,
                        g->given && g->kind == LSTM ? in[2] : NULL, &o, &hn, &cn);
    if (st != CLT_OK)
        return st;
    clt_tensor *src[3] = {o, hn, cn};
    size_t n = 0;
    for (int k = 0; k < 3 && st == CLT_OK; k++)
        if (src[k])
            st = clt_flatten(src[k], 0, -1, &parts[n++]);
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *const *)parts, n, 0, out);
    for (int k = 0; k < 3; k++) {
        clt_tensor_free(src[k]);
        clt_tensor_free(parts[k]);
    }
    return st;
}

/* L = sum(joined * w) with fixed w, grad mode as it is. */
static double loss_of(clt_device *dev, const gctx *g, clt_tensor *const *in, int backward)
{
    clt_tensor *j = NULL, *w = NULL, *prod = NULL, *l = NULL;
    CHECK(joined(in, &j, g));
    size_t n = (size_t)clt_tensor_numel(j);
    double *wv = malloc(n * sizeof *wv);
    for (size_t k = 0; k < n; k++)
        wv[k] = gc_weight(k);
    int64_t sh[1] = {(int64_t)n};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, sh, wv, &w));
    CHECK(clt_mul(j, w, &prod));
    CHECK(clt_sum(prod, &l));
    double v = 0;
    CHECK(clt_tensor_item(l, &v));
    if (backward)
        CHECK(clt_backward(l, NULL, 0));
    clt_tensor_free(j);
    clt_tensor_free(w);
    clt_tensor_free(prod);
    clt_tensor_free(l);
    free(wv);
    return v;
}

/* Every parameter's gradient against central differences, each parameter
 * element moved in place with grad mode off. */
static void param_gradcheck(clt_device *dev, const gctx *g, clt_tensor *const *in)
{
    clt_tensor **ps = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(g->m, &ps, &np));
    for (size_t k = 0; k < np; k++)
        CHECK(clt_zero_grad(ps[k], 1));
    loss_of(dev, g, in, 1);
    int was = clt_set_grad_enabled(0);
    for (size_t k = 0; k < np; k++) {
        size_t n = (size_t)clt_tensor_numel(ps[k]);
        clt_tensor *gt = NULL;
        CHECK(clt_grad(ps[k], &gt));
        cr_assert_not_null(gt, "parameter %zu has no gradient", k);
        double *an = read_as_f64(gt), *v = read_as_f64(ps[k]);
        clt_tensor_free(gt);
        for (size_t e = 0; e < n; e++) {
            double orig = v[e], lv[2];
            for (int side = 0; side < 2; side++) {
                v[e] = orig + (side ? -1e-6 : 1e-6);
                CHECK(clt_tensor_write(ps[k], v, n * sizeof *v));
                lv[side] = loss_of(dev, g, in, 0);
            }
            v[e] = orig;
            CHECK(clt_tensor_write(ps[k], v, n * sizeof *v));
            double num = (lv[0] - lv[1]) / 2e-6;
            cr_assert(close_enough(an[e], num, 1e-5, 1e-6),
                      "parameter %zu element %zu: autograd %.10g, finite differences %.10g", k,
                      e, an[e], num);
        }
        free(an);
        free(v);
    }
    clt_set_grad_enabled(was);
    clt_free(ps);
}

static void grad_case(int kind, int bidir, int bf, int batched)
{
    clt_device *dev = get_device("cpu");
    cfg c = {kind, 2, 3, 2, 1, bf, bidir, batched};
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(3, &gen));
    gctx g = {NULL, kind, 1};
    CHECK(make(dev, &c, 0.0, gen, &g.m));
    CHECK(clt_module_to_dtype(g.m, CLT_FLOAT64));
    int64_t T = 3, N = batched ? 2 : 1, D = bidir ? 2 : 1;
    double x[18], h0[24], c0[24];
    fill(x, 18, 21, -1.5, 1.5);
    fill(h0, 24, 22, -1, 1);
    fill(c0, 24, 23, -1, 1);
    gc_in ins[3] = {
        {batched ? 3 : 2, {bf ? N : T, bf ? T : N, c.I}, x, 1},
        {batched ? 3 : 2, {D * c.L, N, c.H}, h0, 1},
        {batched ? 3 : 2, {D * c.L, N, c.H}, c0, 1},
    };
    if (!batched) {
        ins[0].shape[0] = T;
        ins[0].shape[1] = c.I;
        ins[1].shape[1] = ins[2].shape[1] = c.H;
    }
    int nin = kind == LSTM ? 3 : 2;
    gradcheck(dev, joined, &g, nin, ins);
    clt_tensor *leaves[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nin; i++)
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, ins[i].ndim, ins[i].shape, ins[i].data,
                                   &leaves[i]));
    param_gradcheck(dev, &g, leaves);
    for (int i = 0; i < nin; i++)
        clt_tensor_free(leaves[i]);
    clt_module_free(g.m);
    clt_generator_free(gen);
}

Test(rnn, gradients_by_finite_differences)
{
    for (int kind = TANH; kind <= GRU; kind++) {
        grad_case(kind, 1, 0, 1);
        grad_case(kind, 0, 1, 1);
    }
    grad_case(LSTM, 1, 0, 0);
    grad_case(GRU, 0, 0, 0);
}

/* ---- dropout ----------------------------------------------------------------- */

Test(rnn, dropout_between_layers_in_train_mode_only)
{
    clt_device *dev = get_device("cpu");
    cfg c = {LSTM, 3, 4, 2, 1, 0, 1, 1};
    int64_t T = 4, N = 3, D = 2;
    clt_generator *gen = NULL;
    clt_module *m = NULL;
    CHECK(clt_generator_new(5, &gen));
    size_t nx = (size_t)(T * N * c.I), no = (size_t)(T * N * D * c.H), nh = (size_t)(D * 2 * N * 4);
    double *x = malloc(nx * sizeof *x), *wo = malloc(no * sizeof *wo);
    double *wh = malloc(nh * sizeof *wh), *wc = malloc(nh * sizeof *wc);
    fill(x, nx, 9, -2, 2);
    int64_t xs[3] = {T, N, c.I};
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT32, 3, xs, x), *out = NULL, *again = NULL;
    for (int pass = 0; pass < 2; pass++) {
        double p = pass ? 1.0 : 0.5;
        CHECK(make(dev, &c, p, gen, &m));
        size_t np = 0;
        double **ps = host_params(m, &np);
        /* eval: no dropout, and no numbers drawn */
        clt_module_train(m, 0);
        uint64_t before = clt_generator_offset(gen);
        CHECK(clt_module_forward(m, tx, &out));
        cr_assert_eq(clt_generator_offset(gen), before);
        reference(&c, ps, x, T, N, NULL, NULL, wo, wh, wc, 0);
        assert_close(out, wo, no, 2e-5, 2e-6, "eval");
        clt_tensor_free(out);
        /* train: masks drawn between the layers */
        clt_module_train(m, 1);
        CHECK(clt_module_forward(m, tx, &out));
        if (p == 1.0) {
            /* the second layer sees zeros */
            reference(&c, ps, x, T, N, NULL, NULL, wo, wh, wc, 1);
            assert_close(out, wo, no, 2e-5, 2e-6, "p 1");
        } else {
            double *got = read_as_f64(out);
            size_t same = 0;
            for (size_t i = 0; i < no; i++)
                same += close_enough(got[i], wo[i], 2e-5, 2e-6);
            cr_assert_lt(same, no, "train mode with p 0.5 gave the eval output");
            cr_assert_gt(clt_generator_offset(gen), before);
            free(got);
            /* the same generator state gives the same masks */
            uint64_t at = clt_generator_offset(gen);
            clt_generator_set_offset(gen, before);
            CHECK(clt_module_forward(m, tx, &again));
            cr_assert_eq(clt_generator_offset(gen), at);
            double *got2 = read_as_f64(out), *b = read_as_f64(again);
            for (size_t i = 0; i < no; i++)
                cr_assert_eq(got2[i], b[i]);
            free(b);
            clt_tensor_free(again);
            /* without grad (the input projected at once): the same masks */
            clt_generator_set_offset(gen, before);
            int was = clt_set_grad_enabled(0);
            CHECK(clt_module_forward(m, tx, &again));
            clt_set_grad_enabled(was);
            cr_assert_eq(clt_generator_offset(gen), at);
            b = read_as_f64(again);
            for (size_t i = 0; i < no; i++)
                cr_assert(close_enough(b[i], got2[i], 1e-6, 1e-7), "element %zu: %g, %g", i,
                          b[i], got2[i]);
            free(b);
            free(got2);
            clt_tensor_free(again);
        }
        clt_tensor_free(out);
        free_params(ps, np);
        clt_module_free(m);
    }
    /* one layer: dropout does nothing, even in train mode */
    cfg one = {GRU, 3, 4, 1, 1, 0, 0, 1};
    CHECK(make(dev, &one, 0.5, gen, &m));
    size_t np = 0;
    double **ps = host_params(m, &np);
    uint64_t before = clt_generator_offset(gen);
    CHECK(clt_module_forward(m, tx, &out));
    cr_assert_eq(clt_generator_offset(gen), before);
    reference(&one, ps, x, T, N, NULL, NULL, wo, wh, NULL, 0);
    assert_close(out, wo, (size_t)(T * N * 4), 2e-5, 2e-6, "one layer");
    clt_tensor_free(out);
    free_params(ps, np);
    clt_module_free(m);
    clt_tensor_free(tx);
    clt_generator_free(gen);
    free(x);
    free(wo);
    free(wh);
    free(wc);
}

/* ---- parameters, initialisation, checkpoints ---------------------------------- */

Test(rnn, parameter_names_shapes_and_initialisation)
{
    clt_device *dev = get_device("cpu");
    clt_rnn_opts o = CLT_RNN_DEFAULTS(5, 6);
    o.num_layers = 2;
    o.bidirectional = 1;
    clt_generator *gen = NULL;
    clt_module *m = NULL;
    CHECK(clt_generator_new(1, &gen));
    CHECK(clt_lstm_layer(dev, &o, gen, &m));
    cr_assert_str_eq(clt_module_name(m), "LSTM");
    clt_named_tensor *nt = NULL;
    size_t n = 0;
    CHECK(clt_module_named_parameters(m, &nt, &n));
    static const char *const names[16] = {
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
        "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
        "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
        "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
        "bias_hh_l1_reverse"};
    cr_assert_eq(n, 16);
    double bound = 1 / sqrt(6.0);
    for (size_t k = 0; k < n; k++) {
        cr_assert_str_eq(nt[k].name, names[k]);
        int kk = (int)(k % 4);
        int64_t in = k < 8 ? 5 : 12;
        int64_t w[2] = {24, kk == 0 ? in : 6}, b[1] = {24};
        assert_shape(nt[k].tensor, kk < 2 ? 2 : 1, kk < 2 ? w : b);
        double *v = read_as_f64(nt[k].tensor);
        double lo = 1, hi = -1;
        for (int64_t e = 0; e < clt_tensor_numel(nt[k].tensor); e++) {
            cr_assert(v[e] >= -bound && v[e] <= bound, "%s: %g outside +-%g", names[k], v[e],
                      bound);
            lo = fmin(lo, v[e]);
            hi = fmax(hi, v[e]);
        }
        if (kk < 2) /* spread over the range, not a constant */
            cr_assert(hi - lo > bound, "%s: values in [%g, %g]", names[k], lo, hi);
        free(v);
    }
    cr_assert_eq(clt_module_num_parameters(m), 2 * (24 * 5 + 24 * 6 + 48) + 2 * (24 * 12 + 24 * 6 + 48));
    clt_free(nt);
    /* the same seed gives the same model; the draws follow torch's order,
     * weight_ih_l0 first */
    clt_module *m2 = NULL;
    clt_tensor *u = NULL;
    clt_manual_seed(gen, 1);
    int64_t shape[2] = {24, 5};
    CHECK(clt_rand(gen, dev, CLT_FLOAT32, 2, shape, &u));
    clt_manual_seed(gen, 1);
    CHECK(clt_lstm_layer(dev, &o, gen, &m2));
    clt_tensor **p1 = NULL, **p2 = NULL;
    size_t n1, n2;
    CHECK(clt_module_parameters(m, &p1, &n1));
    CHECK(clt_module_parameters(m2, &p2, &n2));
    double *uv = read_as_f64(u), *w0 = read_as_f64(p2[0]);
    for (int e = 0; e < 24 * 5; e++)
        cr_assert(fabs(w0[e] - (2 * bound * uv[e] - bound)) < 1e-6, "element %d", e);
    free(uv);
    free(w0);
    for (size_t k = 0; k < n1; k++) {
        double *a = read_as_f64(p1[k]), *b = read_as_f64(p2[k]);
        for (int64_t e = 0; e < clt_tensor_numel(p1[k]); e++)
            cr_assert_eq(a[e], b[e]);
        free(a);
        free(b);
    }
    clt_free(p1);
    clt_free(p2);
    clt_tensor_free(u);
    clt_module_free(m2);
    /* GRU and RNN: 3 and 1 gates */
    o = (clt_rnn_opts)CLT_RNN_DEFAULTS(5, 6);
    o.bias = 0;
    CHECK(clt_gru_layer(dev, &o, gen, &m2));
    cr_assert_str_eq(clt_module_name(m2), "GRU");
    cr_assert_eq(clt_module_num_parameters(m2), 18 * 5 + 18 * 6);
    clt_module_free(m2);
    CHECK(clt_rnn_layer(dev, &o, gen, &m2));
    cr_assert_str_eq(clt_module_name(m2), "RNN");
    cr_assert_eq(clt_module_num_parameters(m2), 6 * 5 + 6 * 6);
    clt_module_free(m2);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(rnn, checkpoint_round_trip_and_moves)
{
    clt_device *dev = get_device("cpu");
    cfg c = {GRU, 3, 4, 2, 1, 1, 1, 1};
    clt_generator *gen = NULL;
    clt_module *a = NULL, *b = NULL;
    CHECK(clt_generator_new(2, &gen));
    CHECK(make(dev, &c, 0.0, gen, &a));
    CHECK(make(dev, &c, 0.0, gen, &b));
    char path[] = "/tmp/cltensor-rnn-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    CHECK(clt_module_save(a, path));
    CHECK(clt_module_load(b, path));
    unlink(path);
    double x[2 * 5 * 3];
    fill(x, 30, 4, -1, 1);
    int64_t xs[3] = {2, 5, 3};
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT32, 3, xs, x), *ya = NULL, *yb = NULL, *x64 = NULL;
    CHECK(clt_module_forward(a, tx, &ya));
    CHECK(clt_module_forward(b, tx, &yb));
    double *va = read_as_f64(ya), *vb = read_as_f64(yb);
    for (int i = 0; i < 2 * 5 * 8; i++)
        cr_assert_eq(va[i], vb[i], "element %d", i);
    free(vb);
    clt_tensor_free(yb);
    /* model.double(): float64 in, float64 out, the same values */
    CHECK(clt_module_to_dtype(b, CLT_FLOAT64));
    CHECK(clt_to_dtype(tx, CLT_FLOAT64, &x64));
    CHECK(clt_module_forward(b, x64, &yb));
    cr_assert_eq(clt_tensor_dtype(yb), CLT_FLOAT64);
    vb = read_as_f64(yb);
    for (int i = 0; i < 2 * 5 * 8; i++)
        cr_assert(close_enough(vb[i], va[i], 1e-5, 1e-6), "element %d", i);
    free(va);
    free(vb);
    clt_tensor_free(ya);
    clt_tensor_free(yb);
    clt_tensor_free(x64);
    clt_tensor_free(tx);
    clt_module_free(a);
    clt_module_free(b);
    clt_generator_free(gen);
}

/* ---- errors ----------------------------------------------------------------- */

Test(rnn, errors_with_messages)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(4, &gen));
    clt_module *m = NULL;
    clt_rnn_opts o = CLT_RNN_DEFAULTS(3, 4);
    o.num_layers = 2;
    /* settings */
    clt_rnn_opts bad = o;
    bad.hidden_size = 0;
    uint64_t off = clt_generator_offset(gen);
    assert_error(clt_lstm_layer(dev, &bad, gen, &m), CLT_ERR_INVALID_ARGUMENT, "hidden_size");
    cr_assert_null(m);
    bad = o;
    bad.num_layers = 0;
    assert_error(clt_gru_layer(dev, &bad, gen, &m), CLT_ERR_INVALID_ARGUMENT, "num_layers");
    bad = o;
    bad.dropout = NAN;
    assert_error(clt_rnn_layer(dev, &bad, gen, &m), CLT_ERR_INVALID_ARGUMENT, "dropout");
    bad.dropout = 1.5;
    assert_error(clt_lstm_layer(dev, &bad, gen, &m), CLT_ERR_INVALID_ARGUMENT, "dropout");
    bad = o;
    bad.nonlinearity = 7;
    assert_error(clt_rnn_layer(dev, &bad, gen, &m), CLT_ERR_INVALID_ARGUMENT, "nonlinearity");
    assert_error(clt_rnn_layer(dev, NULL, gen, &m), CLT_ERR_NULL_ARGUMENT, "opts");
    cr_assert_eq(clt_generator_offset(gen), off, "a refused constructor drew numbers");

    CHECK(clt_lstm_layer(dev, &o, gen, &m));
    clt_tensor *out = (clt_tensor *)1, *hn = (clt_tensor *)1, *cn = (clt_tensor *)1;
    int64_t xs[3] = {5, 2, 3}, wide[3] = {5, 2, 6}, empty[3] = {0, 2, 3}, x1[1] = {3};
    int64_t hs[3] = {2, 2, 4}, hbad[3] = {2, 3, 4}, h2[2] = {2, 4};
    clt_tensor *x = NULL, *xw = NULL, *x0 = NULL, *xv = NULL, *x64 = NULL, *h = NULL,
               *hb = NULL, *hv = NULL, *h64 = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, xs, &x));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, wide, &xw));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, empty, &x0));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, x1, &xv));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 3, xs, &x64));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, hs, &h));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, hbad, &hb));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, h2, &hv));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 3, hs, &h64));
#define EXPECT_FAIL(call, status, needle)                                          \
    do {                                                                           \
        out = hn = cn = (clt_tensor *)1;                                           \
        assert_error(call, status, needle);                                        \
        if (status != CLT_ERR_DTYPE_MISMATCH) /* which names clt_to_dtype */       \
            names_only("clt_lstm_forward");                                        \
        cr_assert(strncmp(clt_last_error(), "clt_lstm_forward: ", 18) == 0,        \
                  "%s", clt_last_error());                                         \
        cr_assert(out == NULL && hn == NULL && cn == NULL, "outputs left set");    \
    } while (0)
    EXPECT_FAIL(clt_lstm_forward(m, xw, NULL, NULL, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "input.size(-1) must be equal to input_size. Expected 3, got 6");
    EXPECT_FAIL(clt_lstm_forward(m, x0, NULL, NULL, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "Expected sequence length to be larger than 0");
    EXPECT_FAIL(clt_lstm_forward(m, xv, NULL, NULL, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "Expected input to be 2-D or 3-D but received 1-D tensor");
    EXPECT_FAIL(clt_lstm_forward(m, x, hb, h, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "Expected hidden[0] size [2, 2, 4], got [2, 3, 4]");
    EXPECT_FAIL(clt_lstm_forward(m, x, h, hb, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "Expected hidden[1] size [2, 2, 4], got [2, 3, 4]");
    EXPECT_FAIL(clt_lstm_forward(m, x, hv, hv, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "For batched 3-D input, hx should also be 3-D but got 2-D tensor");
    EXPECT_FAIL(clt_lstm_forward(m, x64, NULL, NULL, &out, &hn, &cn), CLT_ERR_DTYPE_MISMATCH,
                "the input is float64 and the weight float32");
    EXPECT_FAIL(clt_lstm_forward(m, x, h64, h, &out, &hn, &cn), CLT_ERR_DTYPE_MISMATCH,
                "h0 is float64 and the weights float32");
    EXPECT_FAIL(clt_lstm_forward(m, x, h, NULL, &out, &hn, &cn), CLT_ERR_INVALID_ARGUMENT,
                "give both h0 and c0");
    /* a NULL output is refused with the states' pointers set to NULL too */
    hn = cn = (clt_tensor *)1;
    assert_error(clt_lstm_forward(m, x, NULL, NULL, NULL, &hn, &cn), CLT_ERR_NULL_ARGUMENT,
                 "output");
    cr_assert(hn == NULL && cn == NULL, "states left set");
    out = (clt_tensor *)1;
    assert_error(clt_gru_forward(m, x, NULL, &out, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "the module is LSTM; this call takes GRU");
    cr_assert_null(out);
    /* through clt_module_forward */
    assert_error(clt_module_forward(m, xw, &out), CLT_ERR_SHAPE_MISMATCH, "LSTM: input.size(-1)");
    names_only("clt_module_forward");
    cr_assert_null(out);
    /* a refused forward in train mode with dropout draws nothing */
    clt_module *d = NULL;
    clt_rnn_opts od = o;
    od.dropout = 0.5;
    CHECK(clt_gru_layer(dev, &od, gen, &d));
    off = clt_generator_offset(gen);
    assert_error(clt_gru_forward(d, x, hb, &out, &hn), CLT_ERR_SHAPE_MISMATCH,
                 "Expected hidden size [2, 2, 4], got [2, 3, 4]");
    cr_assert_eq(clt_generator_offset(gen), off);
    clt_module_free(d);
    /* unbatched input takes 2-D states only */
    int64_t xu[2] = {5, 3};
    clt_tensor *xun = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, xu, &xun));
    EXPECT_FAIL(clt_lstm_forward(m, xun, h, h, &out, &hn, &cn), CLT_ERR_SHAPE_MISMATCH,
                "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
    CHECK(clt_lstm_forward(m, xun, hv, hv, &out, &hn, &cn));
    int64_t os[2] = {5, 4};
    assert_shape(out, 2, os);
    assert_shape(hn, 2, h2);
    assert_shape(cn, 2, h2);
    clt_tensor_free(out);
    clt_tensor_free(hn);
    clt_tensor_free(cn);
    /* h_n and c_n may be left out */
    CHECK(clt_lstm_forward(m, x, NULL, NULL, &out, NULL, NULL));
    clt_tensor_free(out);
    clt_tensor *tensors[] = {x, xw, x0, xv, x64, h, hb, hv, h64, xun};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(rnn, refuses_tensors_on_another_device)
{
    clt_device *dev = get_device("cpu");
    clt_device *other = second_device(dev);
    clt_rnn_opts o = CLT_RNN_DEFAULTS(3, 4);
    clt_module *m = NULL;
    CHECK(clt_rnn_layer(dev, &o, NULL, &m));
    int64_t xs[3] = {5, 2, 3}, hs[3] = {1, 2, 4};
    clt_tensor *x = NULL, *xo = NULL, *ho = NULL, *out = (clt_tensor *)1, *hn = (clt_tensor *)1;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, xs, &x));
    CHECK(clt_zeros(other, CLT_FLOAT32, 3, xs, &xo));
    CHECK(clt_zeros(other, CLT_FLOAT32, 3, hs, &ho));
    assert_error(clt_rnn_forward(m, xo, NULL, &out, &hn), CLT_ERR_DEVICE_MISMATCH,
                 "the input on");
    cr_assert(out == NULL && hn == NULL);
    assert_error(clt_rnn_forward(m, x, ho, &out, &hn), CLT_ERR_DEVICE_MISMATCH, "h0 on");
    cr_assert(out == NULL && hn == NULL);
    /* moved with the model, it runs there */
    CHECK(clt_module_to(m, other));
    CHECK(clt_rnn_forward(m, xo, ho, &out, &hn));
    cr_assert_eq(clt_tensor_device(out), other);
    clt_tensor_free(out);
    clt_tensor_free(hn);
    clt_tensor_free(x);
    clt_tensor_free(xo);
    clt_tensor_free(ho);
    clt_module_free(m);
}
