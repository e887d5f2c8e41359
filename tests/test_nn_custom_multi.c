/* test_nn_custom_multi.c: custom modules of several inputs and outputs
 * (clt_module_custom_multi) and the single entry point
 * clt_module_forward_multi, torch's model(*args): the Transformer LM
 * tutorial's forward(src, src_mask) against the same layers run by hand;
 * the char-RNN tutorial's forward(input, hidden) -> (output, hidden) looped
 * over a sequence against a host reference, its gradients against float64
 * finite differences; the parts every custom module has (names, clone,
 * moves, train/eval, hooks, Sequential); built-in layers of several inputs
 * through the same call; and the refusals, which leave the outputs NULL
 * and nothing allocated. */
#include "helpers.h"

/* ---- the Transformer LM's forward(src, src_mask) ---------------------------------- */

enum { S = 5, NB = 2, E = 8, V = 6 };

/* decoder(encoder(src, src_mask)), the encoder a TransformerEncoderLayer
 * run through clt_module_forward_multi with its mask. */
static clt_status lm_forward(clt_module *m, void *user, const clt_tensor *const *in, size_t n_in,
                             clt_tensor **out, size_t n_out)
{
    (void)user, (void)n_in, (void)n_out;
    clt_tensor *h = NULL;
    const clt_tensor *args[2] = {in[0], in[1]};
    clt_status st = clt_module_forward_multi(clt_module_child(m, "encoder"), args, 2, &h, 1);
    if (st == CLT_OK)
        st = clt_module_forward(clt_module_child(m, "decoder"), h, &out[0]);
    clt_tensor_free(h);
    return st;
}

static clt_module *make_lm(clt_device *dev, clt_generator *gen)
{
    clt_module *m, *enc, *dec;
    CHECK(clt_module_custom_multi("TransformerModel", lm_forward, 2, 1, NULL, NULL, &m));
    CHECK(clt_transformer_encoder_layer(dev, E, 2, 16, 0.0, "relu", 1e-5, 0, 0, gen, &enc));
    CHECK(clt_module_add_module(m, "encoder", enc));
    CHECK(clt_linear(dev, E, V, 1, gen, &dec));
    CHECK(clt_module_add_module(m, "decoder", dec));
    return m;
}

static clt_tensor *wave(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape, double a,
                        double b)
{
    size_t n = (size_t)host_numel(nd, shape);
    double *v = malloc(n * sizeof *v);
    for (size_t k = 0; k < n; k++)
        v[k] = sin(a * (double)k + b);
    clt_tensor *t = tensor_of(dev, dt, nd, shape, v);
    free(v);
    return t;
}

static void assert_same(const clt_tensor *got, const clt_tensor *want, double tol, const char *what)
{
    cr_assert_eq(clt_tensor_numel(got), clt_tensor_numel(want), "%s: numel", what);
    assert_shape(got, clt_tensor_ndim(want), clt_tensor_shape(want));
    size_t n = (size_t)clt_tensor_numel(got);
    double *g = read_as_f64(got), *w = read_as_f64(want);
    for (size_t k = 0; k < n; k++)
        cr_assert(close_enough(g[k], w[k], tol, tol), "%s[%zu]: %.9g, want %.9g", what, k, g[k],
                  w[k]);
    free(g);
    free(w);
}

static double max_diff(const clt_tensor *a, const clt_tensor *b)
{
    size_t n = (size_t)clt_tensor_numel(a);
    double *x = read_as_f64(a), *y = read_as_f64(b), d = 0;
    for (size_t k = 0; k < n; k++)
        d = fmax(d, fabs(x[k] - y[k]));
    free(x);
    free(y);
    return d;
}

Test(custom_multi, src_mask_forward_matches_the_layers_by_hand)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(11, &gen));
    clt_module *m = make_lm(dev, gen);
    clt_module *enc = clt_module_child(m, "encoder"), *dec = clt_module_child(m, "decoder");
    clt_tensor *src = wave(dev, CLT_FLOAT32, 3, (int64_t[]){S, NB, E}, 0.37, 0.2), *mask;
    CHECK(clt_generate_square_subsequent_mask(dev, CLT_FLOAT32, S, &mask));

    /* model(src, src_mask) */
    clt_tensor *y = NULL, *h, *want;
    CHECK(clt_module_forward_multi(m, (const clt_tensor *[]){src, mask}, 2, &y, 1));
    CHECK(clt_transformer_encoder_forward(enc, src, mask, NULL, &h));
    CHECK(clt_module_forward(dec, h, &want));
    assert_shape(y, 3, (int64_t[]){S, NB, V});
    assert_same(y, want, 1e-6, "masked");
    clt_tensor_free(h);

    /* model(src, None), and model(src) through clt_module_forward */
    clt_tensor *y0 = NULL, *y1 = NULL, *want0;
    CHECK(clt_module_forward_multi(m, (const clt_tensor *[]){src, NULL}, 2, &y0, 1));
    CHECK(clt_module_forward(m, src, &y1));
    CHECK(clt_module_forward(enc, src, &h));
    CHECK(clt_module_forward(dec, h, &want0));
    assert_same(y0, want0, 1e-6, "unmasked");
    assert_same(y1, want0, 1e-6, "clt_module_forward");
    /* the mask is used: the causal positions change the outputs */
    cr_assert_gt(max_diff(y, y0), 1e-3);

    clt_tensor_free(h);
    clt_tensor_free(want0);
    clt_tensor_free(y0);
    clt_tensor_free(y1);
    clt_tensor_free(want);
    clt_tensor_free(y);
    clt_tensor_free(mask);
    clt_tensor_free(src);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- the char-RNN's forward(input, hidden) -> (output, hidden) -------------------- */

enum { I = 3, H = 4, O = 5, B = 2, T = 4 };

/* mode 0: the model; 1: fail after making output 0; 2: OK without output
 * 1; 3: fail silently */
typedef counted_user rnn_user;

/* combined = cat(input, hidden); hidden = i2h(combined);
 * output = softmax(i2o(combined)); hidden NULL: zeros, as initHidden. */
static clt_status char_rnn_forward(clt_module *m, void *user, const clt_tensor *const *in,
                                   size_t n_in, clt_tensor **out, size_t n_out)
{
    (void)n_in, (void)n_out;
    rnn_user *u = user;
    if (u && u->mode == 3)
        return CLT_ERR_INVALID_ARGUMENT;
    clt_tensor *zeros = NULL, *comb = NULL, *o = NULL;
    const clt_tensor *hidden = in[1];
    clt_status st = CLT_OK;
    if (hidden == NULL) {
        const int64_t *xs = clt_tensor_shape(in[0]);
        st = clt_zeros(clt_tensor_device(in[0]), clt_tensor_dtype(in[0]), 2,
                       (int64_t[]){xs[0], H}, &zeros);
        hidden = zeros;
    }
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *[]){in[0], hidden}, 2, 1, &comb);
    if (st == CLT_OK)
        st = clt_module_forward(clt_module_child(m, "i2o"), comb, &o);
    if (st == CLT_OK)
        st = clt_module_forward(clt_module_child(m, "softmax"), o, &out[0]);
    if (st == CLT_OK && u && u->mode == 1)
        st = clt_mul(out[0], comb, &out[1]); /* shapes differ: fails, out[0] made */
    else if (st == CLT_OK && !(u && u->mode == 2))
        st = clt_module_forward(clt_module_child(m, "i2h"), comb, &out[1]);
    clt_tensor_free(zeros);
    clt_tensor_free(comb);
    clt_tensor_free(o);
    return st;
}

/* class RNN(nn.Module) of the char-RNN classification tutorial. */
static clt_module *make_char_rnn(clt_device *dev, clt_generator *gen, rnn_user *u)
{
    clt_module *m, *i2h, *i2o, *sm;
    CHECK(clt_module_custom_multi("RNN", char_rnn_forward, 2, 2, u, u ? counted_user_free : NULL,
                                  &m));
    CHECK(clt_linear(dev, I + H, H, 1, gen, &i2h));
    CHECK(clt_module_add_module(m, "i2h", i2h));
    CHECK(clt_linear(dev, I + H, O, 1, gen, &i2o));
    CHECK(clt_module_add_module(m, "i2o", i2o));
    CHECK(clt_log_softmax_layer(1, &sm));
    CHECK(clt_module_add_module(m, "softmax", sm));
    return m;
}

static const char *const rnn_names[] = {"i2h.weight", "i2h.bias", "i2o.weight", "i2o.bias"};

static double seq[T * B * I];
static double hid0[B * H];

static void fill_seq(void)
{
    for (int k = 0; k < T * B * I; k++)
        seq[k] = sin(0.61 * k + 0.4) * 1.3;
    for (int k = 0; k < B * H; k++)
        hid0[k] = cos(0.9 * k) * 0.5;
}

/* The step inputs [B, I] and the first hidden state, in dt. */
static void seq_tensors(clt_device *dev, clt_dtype dt, clt_tensor **xs, clt_tensor **h0)
{
    fill_seq();
    for (int t = 0; t < T; t++)
        xs[t] = tensor_of(dev, dt, 2, (int64_t[]){B, I}, seq + t * B * I);
    *h0 = tensor_of(dev, dt, 2, (int64_t[]){B, H}, hid0);
}

/* The loop on the host in double: outs[t] [B, O], the last hidden [B, H]. */
static void host_char_rnn(const clt_module *m, double *outs, double *hlast)
{
    double *wh = read_as_f64(clt_module_param(clt_module_child(m, "i2h"), "weight"));
    double *bh = read_as_f64(clt_module_param(clt_module_child(m, "i2h"), "bias"));
    double *wo = read_as_f64(clt_module_param(clt_module_child(m, "i2o"), "weight"));
    double *bo = read_as_f64(clt_module_param(clt_module_child(m, "i2o"), "bias"));
    double h[B * H];
    memcpy(h, hid0, sizeof h);
    for (int t = 0; t < T; t++) {
        double nh[B * H];
        for (int b = 0; b < B; b++) {
            double c[I + H];
            for (int i = 0; i < I; i++)
                c[i] = seq[(t * B + b) * I + i];
            for (int j = 0; j < H; j++)
                c[I + j] = h[b * H + j];
            double z[O], mx = -INFINITY, se = 0;
            for (int o = 0; o < O; o++) {
                z[o] = bo[o];
                for (int k = 0; k < I + H; k++)
                    z[o] += wo[o * (I + H) + k] * c[k];
                mx = fmax(mx, z[o]);
            }
            for (int o = 0; o < O; o++)
                se += exp(z[o] - mx);
            for (int o = 0; o < O; o++)
                outs[(t * B + b) * O + o] = z[o] - mx - log(se);
            for (int j = 0; j < H; j++) {
                nh[b * H + j] = bh[j];
                for (int k = 0; k < I + H; k++)
                    nh[b * H + j] += wh[j * (I + H) + k] * c[k];
            }
        }
        memcpy(h, nh, sizeof h);
    }
    memcpy(hlast, h, sizeof h);
    free(wh);
    free(bh);
    free(wo);
    free(bo);
}

/* Runs the loop: outs[t] and the last hidden state (new tensors). */
static void run_char_rnn(clt_module *m, clt_tensor *const *xs, const clt_tensor *h0,
                         clt_tensor **outs, clt_tensor **hlast)
{
    clt_tensor *h = clt_tensor_retain((clt_tensor *)h0);
    for (int t = 0; t < T; t++) {
        clt_tensor *res[2] = {(clt_tensor *)1, (clt_tensor *)1};
        CHECK(clt_module_forward_multi(m, (const clt_tensor *[]){xs[t], h}, 2, res, 2));
        clt_tensor_free(h);
        outs[t] = res[0];
        h = res[1];
    }
    *hlast = h;
}

/* L = sum_t sum(out_t * w_t) + sum(h_T * wh), on the device. */
static double loss_weight(int k)
{
    return 0.3 + 0.2 * sin(1.7 * k);
}

static clt_tensor *char_rnn_loss(clt_module *m, clt_tensor *const *xs, const clt_tensor *h0)
{
    clt_tensor *outs[T], *hl, *acc = NULL;
    run_char_rnn(m, xs, h0, outs, &hl);
    clt_dtype dt = clt_tensor_dtype(hl);
    clt_device *dev = clt_tensor_device(hl);
    for (int t = 0; t <= T; t++) {
        clt_tensor *y = t < T ? outs[t] : hl;
        size_t n = (size_t)clt_tensor_numel(y);
        double w[B * O];
        for (size_t k = 0; k < n; k++)
            w[k] = loss_weight(t * 100 + (int)k);
        clt_tensor *wt = tensor_of(dev, dt, 2, clt_tensor_shape(y), w), *p, *s, *a2;
        CHECK(clt_mul(y, wt, &p));
        CHECK(clt_sum(p, &s));
        if (acc) {
            CHECK(clt_add(acc, s, &a2));
            clt_tensor_free(acc);
            clt_tensor_free(s);
            acc = a2;
        } else {
            acc = s;
        }
        clt_tensor_free(p);
        clt_tensor_free(wt);
        clt_tensor_free(y);
    }
    return acc;
}

static double scalar_of(const clt_tensor *t)
{
    double *v = read_as_f64(t), r = v[0];
    free(v);
    return r;
}

Test(custom_multi, char_rnn_loop_matches_the_host)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_module *m = make_char_rnn(dev, gen, NULL);
    clt_tensor *xs[T], *h0, *outs[T], *hl;
    seq_tensors(dev, CLT_FLOAT32, xs, &h0);
    run_char_rnn(m, xs, h0, outs, &hl);
    double want[T * B * O], wh[B * H];
    host_char_rnn(m, want, wh);
    for (int t = 0; t < T; t++) {
        assert_shape(outs[t], 2, (int64_t[]){B, O});
        double *got = read_as_f64(outs[t]);
        for (int k = 0; k < B * O; k++)
            cr_assert(close_enough(got[k], want[t * B * O + k], 1e-5, 1e-5),
                      "step %d output %d: %.9g, want %.9g", t, k, got[k], want[t * B * O + k]);
        free(got);
        clt_tensor_free(outs[t]);
        clt_tensor_free(xs[t]);
    }
    assert_shape(hl, 2, (int64_t[]){B, H});
    double *got = read_as_f64(hl);
    for (int k = 0; k < B * H; k++)
        cr_assert(close_enough(got[k], wh[k], 1e-5, 1e-5), "hidden %d: %.9g, want %.9g", k,
                  got[k], wh[k]);
    free(got);
    clt_tensor_free(hl);
    clt_tensor_free(h0);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(custom_multi, char_rnn_gradients_match_finite_differences)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on this device");
    clt_generator *gen;
    CHECK(clt_generator_new(9, &gen));
    clt_module *m = make_char_rnn(dev, gen, NULL);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    clt_tensor *xs[T], *h0;
    seq_tensors(dev, CLT_FLOAT64, xs, &h0);
    CHECK(clt_set_requires_grad(h0, 1));
    clt_tensor *l = char_rnn_loss(m, xs, h0);
    CHECK(clt_backward(l, NULL, 0));
    clt_tensor_free(l);
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_named_parameters(m, &nt, &n));
    cr_assert_eq(n, 4);
    int was = clt_set_grad_enabled(0);
    const double eps = 1e-6;
    /* the parameters, then the first hidden state (an input of the first call) */
    for (size_t i = 0; i <= n; i++) {
        clt_tensor *p = i < n ? nt[i].tensor : h0, *g;
        const char *name = i < n ? nt[i].name : "hidden";
        if (i < n)
            cr_assert_str_eq(name, rnn_names[i]);
        CHECK(clt_grad(p, &g));
        cr_assert_not_null(g, "%s has no gradient", name);
        double *an = read_as_f64(g), *v = read_as_f64(p);
        size_t cnt = (size_t)clt_tensor_numel(p);
        for (size_t k = 0; k < cnt; k++) {
            double orig = v[k], side[2];
            for (int s = 0; s < 2; s++) {
                v[k] = orig + (s ? -eps : eps);
                CHECK(clt_tensor_write(p, v, cnt * sizeof *v));
                clt_tensor *ls = char_rnn_loss(m, xs, h0);
                side[s] = scalar_of(ls);
                clt_tensor_free(ls);
            }
            v[k] = orig;
            CHECK(clt_tensor_write(p, v, cnt * sizeof *v));
            double num = (side[0] - side[1]) / (2 * eps);
            cr_assert(close_enough(an[k], num, 1e-5, 1e-7),
                      "%s[%zu]: autograd %.10g, finite differences %.10g", name, k, an[k], num);
        }
        free(an);
        free(v);
        clt_tensor_free(g);
    }
    clt_set_grad_enabled(was);
    clt_free(nt);
    for (int t = 0; t < T; t++)
        clt_tensor_free(xs[t]);
    clt_tensor_free(h0);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- what every custom module has ------------------------------------------------- */

typedef struct hook_log {
    int pre, fwd;
    const clt_tensor *seen_in, *seen_out;
} hook_log;

static clt_status log_pre(void *user, clt_module *m, const clt_tensor *input,
                          clt_tensor **replacement)
{
    (void)m, (void)replacement;
    hook_log *L = user;
    L->pre++;
    L->seen_in = input;
    return CLT_OK;
}

static clt_status log_fwd(void *user, clt_module *m, const clt_tensor *input,
                          const clt_tensor *output, clt_tensor **replacement)
{
    (void)m, (void)input, (void)replacement;
    hook_log *L = user;
    L->fwd++;
    L->seen_out = output;
    return CLT_OK;
}

/* Doubles the first input. */
static clt_status double_pre(void *user, clt_module *m, const clt_tensor *input,
                             clt_tensor **replacement)
{
    (void)user, (void)m;
    return clt_mul_scalar(input, 2.0, replacement);
}

static void forward_pair(clt_module *m, const clt_tensor *x, const clt_tensor *h,
                         clt_tensor **res)
{
    res[0] = res[1] = (clt_tensor *)1;
    CHECK(clt_module_forward_multi(m, (const clt_tensor *[]){x, h}, 2, res, 2));
    cr_assert_not_null(res[0]);
    cr_assert_not_null(res[1]);
}

Test(custom_multi, parts_names_clone_train_hooks_and_sequential)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(4, &gen));
    int frees = 0;
    rnn_user *u = calloc(1, sizeof *u);
    u->frees = &frees;
    clt_module *m = make_char_rnn(dev, gen, u);
    cr_assert_str_eq(clt_module_name(m), "RNN");
    cr_assert_eq(clt_module_device(m), dev);
    clt_named_tensor *nt;
    size_t n;
    CHECK(clt_module_state(m, &nt, &n));
    cr_assert_eq(n, 4);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(nt[k].name, rnn_names[k]);
    clt_free(nt);
    cr_assert_eq(clt_module_num_parameters(m), (I + H) * H + H + (I + H) * O + O);

    clt_tensor *xs[T], *h0, *a[2], *b[2];
    seq_tensors(dev, CLT_FLOAT32, xs, &h0);
    forward_pair(m, xs[0], h0, a);

    /* train/eval reaches the children */
    clt_module_train(m, 0);
    cr_assert(!clt_module_is_training(clt_module_child(m, "i2h")));
    clt_module_train(m, 1);
    cr_assert(clt_module_is_training(clt_module_child(m, "softmax")));

    /* clone: refused while the module owns its data without clone_user */
    clt_module *c = (clt_module *)1;
    assert_error(clt_module_clone(m, NULL, &c), CLT_ERR_INVALID_ARGUMENT, "clone_user");
    cr_assert_null(c);
    CHECK(clt_module_custom_set_clone(m, counted_user_clone));
    CHECK(clt_module_clone(m, NULL, &c));
    cr_assert_str_eq(clt_module_name(c), "RNN");
    forward_pair(c, xs[0], h0, b);
    assert_same(b[0], a[0], 0, "clone output");
    assert_same(b[1], a[1], 0, "clone hidden");
    clt_tensor_free(b[0]);
    clt_tensor_free(b[1]);
    /* the copy is its own: changing it leaves m alone */
    CHECK(clt_init_zeros_(clt_module_param(clt_module_child(c, "i2h"), "bias")));
    forward_pair(m, xs[0], h0, b);
    assert_same(b[1], a[1], 0, "m after the clone changed");
    clt_tensor_free(b[0]);
    clt_tensor_free(b[1]);
    clt_module_free(c);
    cr_assert_eq(frees, 1, "the clone's user data: %d frees", frees);

    /* clt_module_forward: the hidden state None (zeros), the first output */
    clt_tensor *z, *y;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){B, H}, &z));
    forward_pair(m, xs[1], z, b);
    CHECK(clt_module_forward(m, xs[1], &y));
    assert_same(y, b[0], 0, "clt_module_forward");
    clt_tensor_free(y);
    /* and so in a Sequential */
    clt_module *inner = make_char_rnn(dev, gen, NULL), *lin, *sq;
    CHECK(clt_linear(dev, O, 2, 1, gen, &lin));
    CHECK(clt_sequential((clt_module *[]){inner, lin}, 2, &sq));
    clt_tensor *s1, *s0, *s2;
    CHECK(clt_module_forward(sq, xs[1], &s1));
    CHECK(clt_module_forward(inner, xs[1], &s0));
    CHECK(clt_module_forward(lin, s0, &s2));
    assert_same(s1, s2, 0, "Sequential");
    clt_tensor_free(s0);
    clt_tensor_free(s1);
    clt_tensor_free(s2);
    clt_module_free(sq);
    clt_tensor_free(b[0]);
    clt_tensor_free(b[1]);

    /* hooks see the first input and the first output; a pre-hook's
     * replacement replaces the first input */
    hook_log L = {0};
    clt_hook *hp, *hf, *hd;
    CHECK(clt_module_register_forward_pre_hook(m, log_pre, &L, &hp));
    CHECK(clt_module_register_forward_hook(m, log_fwd, &L, &hf));
    forward_pair(m, xs[0], h0, b);
    cr_assert_eq(L.pre, 1);
    cr_assert_eq(L.fwd, 1);
    cr_assert_eq(L.seen_in, xs[0]);
    cr_assert_eq(L.seen_out, b[0]);
    assert_same(b[0], a[0], 0, "with hooks");
    clt_tensor_free(b[0]);
    clt_tensor_free(b[1]);
    CHECK(clt_module_register_forward_pre_hook(m, double_pre, NULL, &hd));
    clt_tensor *x2, *want[2];
    CHECK(clt_mul_scalar(xs[0], 2.0, &x2));
    clt_hook_remove(hd);
    forward_pair(m, x2, h0, want);
    CHECK(clt_module_register_forward_pre_hook(m, double_pre, NULL, &hd));
    forward_pair(m, xs[0], h0, b);
    assert_same(b[0], want[0], 0, "pre-hook output");
    assert_same(b[1], want[1], 0, "pre-hook hidden");
    clt_hook_remove(hd);
    clt_hook_remove(hp);
    clt_hook_remove(hf);
    for (int k = 0; k < 2; k++) {
        clt_tensor_free(b[k]);
        clt_tensor_free(want[k]);
        clt_tensor_free(a[k]);
    }
    clt_tensor_free(x2);
    clt_tensor_free(z);
    for (int t = 0; t < T; t++)
        clt_tensor_free(xs[t]);
    clt_tensor_free(h0);
    clt_module_free(m);
    cr_assert_eq(frees, 2, "free_user ran %d times", frees);
    clt_generator_free(gen);
}

Test(custom_multi, moves_to_another_device)
{
    clt_device *dev = get_device("cpu"), *dev2 = second_device(dev);
    clt_generator *gen;
    CHECK(clt_generator_new(6, &gen));
    clt_module *m = make_char_rnn(dev, gen, NULL);
    clt_tensor *xs[T], *h0, *a[2], *b[2];
    seq_tensors(dev, CLT_FLOAT32, xs, &h0);
    forward_pair(m, xs[0], h0, a);
    CHECK(clt_module_to(m, dev2));
    cr_assert_eq(clt_module_device(m), dev2);
    cr_assert_eq(clt_tensor_device(clt_module_param(clt_module_child(m, "i2o"), "weight")), dev2);
    /* inputs left on the first device are refused, naming both */
    b[0] = b[1] = (clt_tensor *)1;
    assert_error(clt_module_forward_multi(m, (const clt_tensor *[]){xs[0], h0}, 2, b, 2),
                 CLT_ERR_DEVICE_MISMATCH, "clt_module_forward_multi: RNN: ");
    cr_assert_null(b[0]);
    cr_assert_null(b[1]);
    clt_tensor *x2, *h2;
    CHECK(clt_to(xs[0], dev2, &x2));
    CHECK(clt_to(h0, dev2, &h2));
    forward_pair(m, x2, h2, b);
    cr_assert_eq(clt_tensor_device(b[1]), dev2);
    assert_same(b[0], a[0], 1e-6, "moved output");
    assert_same(b[1], a[1], 1e-6, "moved hidden");
    for (int k = 0; k < 2; k++) {
        clt_tensor_free(a[k]);
        clt_tensor_free(b[k]);
    }
    clt_tensor_free(x2);
    clt_tensor_free(h2);
    for (int t = 0; t < T; t++)
        clt_tensor_free(xs[t]);
    clt_tensor_free(h0);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- built-in layers through the same call ---------------------------------------- */

Test(custom_multi, builtin_layers_of_several_inputs_and_outputs)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(8, &gen));
    /* LSTM: (input, h0, c0) -> (output, h_n, c_n) */
    clt_rnn_opts o = CLT_RNN_DEFAULTS(I, H);
    clt_module *lstm;
    CHECK(clt_lstm_layer(dev, &o, gen, &lstm));
    clt_tensor *x = wave(dev, CLT_FLOAT32, 3, (int64_t[]){T, B, I}, 0.5, 0.1);
    clt_tensor *h0 = wave(dev, CLT_FLOAT32, 3, (int64_t[]){1, B, H}, 0.8, 0.3);
    clt_tensor *c0 = wave(dev, CLT_FLOAT32, 3, (int64_t[]){1, B, H}, 0.6, 0.9);
    clt_tensor *r[3], *w[3];
    CHECK(clt_module_forward_multi(lstm, (const clt_tensor *[]){x, h0, c0}, 3, r, 3));
    CHECK(clt_lstm_forward(lstm, x, h0, c0, &w[0], &w[1], &w[2]));
    for (int k = 0; k < 3; k++) {
        assert_same(r[k], w[k], 0, "LSTM");
        clt_tensor_free(r[k]);
    }
    /* (input) -> (output): zero states, the output alone */
    clt_tensor *r1 = NULL, *w1;
    CHECK(clt_module_forward_multi(lstm, (const clt_tensor *[]){x}, 1, &r1, 1));
    CHECK(clt_module_forward(lstm, x, &w1));
    assert_same(r1, w1, 0, "LSTM output alone");
    cr_assert_gt(max_diff(r1, w[0]), 1e-4); /* the states were used above */
    clt_tensor_free(r1);
    clt_tensor_free(w1);
    for (int k = 0; k < 3; k++)
        clt_tensor_free(w[k]);

    /* MultiheadAttention: (query, key, value) -> (attn_output, attn_weights) */
    clt_module *mha;
    CHECK(clt_multihead_attention_layer(dev, E, 2, 0.0, 1, 0, gen, &mha));
    clt_tensor *q = wave(dev, CLT_FLOAT32, 3, (int64_t[]){S, NB, E}, 0.3, 0.0);
    clt_tensor *kv = wave(dev, CLT_FLOAT32, 3, (int64_t[]){S + 1, NB, E}, 0.7, 1.0);
    CHECK(clt_module_forward_multi(mha, (const clt_tensor *[]){q, kv, kv}, 3, r, 2));
    CHECK(clt_multihead_attention(mha, q, kv, kv, NULL, NULL, 1, 1, &w[0], &w[1]));
    assert_shape(r[1], 3, (int64_t[]){NB, S, S + 1});
    for (int k = 0; k < 2; k++) {
        assert_same(r[k], w[k], 1e-6, "MultiheadAttention");
        clt_tensor_free(r[k]);
        clt_tensor_free(w[k]);
    }

    /* Bilinear: (input1, input2) -> out */
    clt_module *bil;
    CHECK(clt_bilinear_layer(dev, I, H, 2, 1, gen, &bil));
    clt_tensor *x1 = wave(dev, CLT_FLOAT32, 2, (int64_t[]){B, I}, 0.4, 0.0);
    clt_tensor *x2 = wave(dev, CLT_FLOAT32, 2, (int64_t[]){B, H}, 0.9, 0.5);
    CHECK(clt_module_forward_multi(bil, (const clt_tensor *[]){x1, x2}, 2, r, 1));
    CHECK(clt_bilinear_forward(bil, x1, x2, &w[0]));
    assert_same(r[0], w[0], 0, "Bilinear");
    clt_tensor_free(r[0]);
    clt_tensor_free(w[0]);

    /* a plain layer: (x) -> y */
    clt_module *lin;
    CHECK(clt_linear(dev, I, 2, 1, gen, &lin));
    CHECK(clt_module_forward_multi(lin, (const clt_tensor *[]){x1}, 1, r, 1));
    CHECK(clt_module_forward(lin, x1, &w[0]));
    assert_same(r[0], w[0], 0, "Linear");
    clt_tensor_free(r[0]);
    clt_tensor_free(w[0]);

    clt_tensor_free(x1);
    clt_tensor_free(x2);
    clt_tensor_free(q);
    clt_tensor_free(kv);
    clt_tensor_free(x);
    clt_tensor_free(h0);
    clt_tensor_free(c0);
    clt_module_free(lin);
    clt_module_free(bil);
    clt_module_free(mha);
    clt_module_free(lstm);
    clt_generator_free(gen);
}

/* ---- refusals -------------------------------------------------------------------- */

/* A call that must fail: its outputs come back NULL, nothing stays allocated. */
static void refused(clt_module *m, const clt_tensor *const *in, size_t n_in, size_t n_out,
                    clt_status want, const char *needle)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *res[4] = {(clt_tensor *)1, (clt_tensor *)1, (clt_tensor *)1, (clt_tensor *)1};
    uint64_t before = mem_stats(dev).allocated;
    assert_error(clt_module_forward_multi(m, in, n_in, res, n_out), want, needle);
    /* the message opens with the call (the user's forward and the layers
     * may name other calls after it: "clt_mul", the fix "clt_to_dtype") */
    cr_assert(strncmp(clt_last_error(), "clt_module_forward_multi: ", 26) == 0, "%s",
              clt_last_error());
    if (want == CLT_ERR_INVALID_ARGUMENT || want == CLT_ERR_NULL_ARGUMENT)
        names_only("clt_module_forward_multi");
    for (size_t k = 0; k < n_out; k++)
        cr_assert_null(res[k], "output %zu is not NULL", k);
    cr_assert_eq(mem_stats(dev).allocated, before, "the failed call left %llu bytes",
                 (unsigned long long)(mem_stats(dev).allocated - before));
}

static clt_status single_forward(clt_module *m, void *user, const clt_tensor *x,
                                 clt_tensor **out)
{
    (void)m, (void)user;
    *out = clt_tensor_retain((clt_tensor *)x);
    return CLT_OK;
}

Test(custom_multi, refusals_leave_outputs_null_and_nothing_allocated)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(2, &gen));
    int frees = 0;
    rnn_user *u = calloc(1, sizeof *u);
    u->frees = &frees;
    clt_module *m = make_char_rnn(dev, gen, u);
    clt_tensor *xs[T], *h0;
    seq_tensors(dev, CLT_FLOAT32, xs, &h0);
    const clt_tensor *in3[3] = {xs[0], h0, h0};

    /* arity */
    refused(m, in3, 3, 2, CLT_ERR_INVALID_ARGUMENT, "RNN takes 2 inputs and gives 2 outputs; "
                                                    "3 inputs and 2 outputs given");
    refused(m, in3, 2, 1, CLT_ERR_INVALID_ARGUMENT, "1 output given");
    refused(m, in3, 1, 2, CLT_ERR_INVALID_ARGUMENT, "1 input and 2 outputs given");
    refused(m, (const clt_tensor *[]){NULL, h0}, 2, 2, CLT_ERR_NULL_ARGUMENT,
            "the first input is NULL");
    /* the user's forward failing: what it made is released */
    u->mode = 1;
    refused(m, in3, 2, 2, CLT_ERR_SHAPE_MISMATCH, "clt_module_forward_multi: RNN: clt_mul");
    u->mode = 2;
    refused(m, in3, 2, 2, CLT_ERR_INVALID_ARGUMENT, "returned CLT_OK without output 1 (of 2)");
    u->mode = 3;
    refused(m, in3, 2, 2, CLT_ERR_INVALID_ARGUMENT,
            "RNN: the forward function failed (CLT_ERR_INVALID_ARGUMENT) without a message");
    /* and through clt_module_forward */
    u->mode = 1;
    clt_tensor *y = (clt_tensor *)1;
    assert_error(clt_module_forward(m, xs[0], &y), CLT_ERR_SHAPE_MISMATCH,
                 "clt_module_forward: RNN: ");
    cr_assert_null(y);
    u->mode = 0;
    /* an input of another dtype: the layer's refusal, named */
    clt_tensor *x64;
    CHECK(clt_to_dtype(xs[0], CLT_FLOAT64, &x64));
    refused(m, (const clt_tensor *[]){x64, NULL}, 2, 2, CLT_ERR_DTYPE_MISMATCH, "RNN: ");
    clt_tensor_free(x64);

    /* NULL arguments */
    clt_tensor *res[2] = {(clt_tensor *)1, (clt_tensor *)1};
    assert_error(clt_module_forward_multi(NULL, in3, 2, res, 2), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(res[0]);
    cr_assert_null(res[1]);
    assert_error(clt_module_forward_multi(m, NULL, 2, res, 2), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_module_forward_multi(m, in3, 2, NULL, 2), CLT_ERR_NULL_ARGUMENT, NULL);

    /* the constructor */
    clt_module *bad = (clt_module *)1;
    assert_error(clt_module_custom_multi("X", char_rnn_forward, 0, 1, NULL, NULL, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "0 inputs and 1 outputs; each must be 1 to 16");
    cr_assert_null(bad);
    bad = (clt_module *)1;
    assert_error(clt_module_custom_multi("X", char_rnn_forward, 2, CLT_MODULE_MAX_IO + 1, NULL,
                                         NULL, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "clt_module_custom_multi: X: ");
    cr_assert_null(bad);
    bad = (clt_module *)1;
    assert_error(clt_module_custom_multi("", char_rnn_forward, 2, 2, NULL, NULL, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "clt_module_custom_multi: the module's name is empty");
    cr_assert_null(bad);
    /* without a forward: a container, as clt_module_custom's */
    CHECK(clt_module_custom_multi("Holder", NULL, 2, 2, NULL, NULL, &bad));
    refused(bad, in3, 1, 1, CLT_ERR_INVALID_ARGUMENT, "missing the required \"forward\"");
    clt_module_free(bad);

    /* built-in layers: what they take */
    clt_module *lin, *bil, *mha, *lstm, *named_lstm;
    CHECK(clt_linear(dev, I, 2, 1, gen, &lin));
    refused(lin, in3, 2, 1, CLT_ERR_INVALID_ARGUMENT, "Linear takes 1 input and gives 1 output");
    refused(lin, in3, 1, 2, CLT_ERR_INVALID_ARGUMENT, "2 outputs given");
    CHECK(clt_bilinear_layer(dev, I, H, 2, 1, gen, &bil));
    refused(bil, in3, 1, 1, CLT_ERR_INVALID_ARGUMENT,
            "Bilinear takes 2 inputs and gives 1 output (input1, input2) -> out");
    CHECK(clt_multihead_attention_layer(dev, E, 2, 0.0, 1, 0, gen, &mha));
    refused(mha, in3, 2, 1, CLT_ERR_INVALID_ARGUMENT, "takes 3 to 5 inputs and gives 1 to 2");
    clt_rnn_opts o = CLT_RNN_DEFAULTS(I, H);
    CHECK(clt_lstm_layer(dev, &o, gen, &lstm));
    refused(lstm, (const clt_tensor *[]){xs[0], h0, h0, h0}, 4, 1, CLT_ERR_INVALID_ARGUMENT,
            "LSTM takes 1 to 3 inputs");
    /* h0 without c0: the LSTM's own refusal */
    clt_tensor *x3 = wave(dev, CLT_FLOAT32, 3, (int64_t[]){T, B, I}, 0.5, 0.1);
    clt_tensor *s3 = wave(dev, CLT_FLOAT32, 3, (int64_t[]){1, B, H}, 0.5, 0.1);
    refused(lstm, (const clt_tensor *[]){x3, s3}, 2, 3, CLT_ERR_INVALID_ARGUMENT, "c0");
    /* a custom module named as a layer is not taken for it */
    CHECK(clt_module_custom("LSTM", single_forward, NULL, NULL, &named_lstm));
    refused(named_lstm, (const clt_tensor *[]){x3, s3, s3}, 3, 1, CLT_ERR_INVALID_ARGUMENT,
            "LSTM takes 1 input and gives 1 output (x) -> y");
    clt_tensor_free(x3);
    clt_tensor_free(s3);

    clt_module_free(named_lstm);
    clt_module_free(lstm);
    clt_module_free(mha);
    clt_module_free(bil);
    clt_module_free(lin);
    for (int t = 0; t < T; t++)
        clt_tensor_free(xs[t]);
    clt_tensor_free(h0);
    clt_module_free(m);
    cr_assert_eq(frees, 1);
    clt_generator_free(gen);
}

/* ---- full backward hooks: the first input's and the first output's gradients ------ */

typedef struct bw_log {
    int calls;
    double *gin, *gout;
} bw_log;

static clt_status log_bw(void *user, clt_module *m, const clt_tensor *grad_input,
                         const clt_tensor *grad_output, clt_tensor **replacement)
{
    (void)m, (void)replacement;
    bw_log *L = user;
    L->calls++;
    L->gin = grad_input ? read_as_f64(grad_input) : NULL;
    L->gout = grad_output ? read_as_f64(grad_output) : NULL;
    return CLT_OK;
}

Test(custom_multi, full_backward_hook_sees_the_first_input_and_output)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(12, &gen));
    clt_module *m = make_char_rnn(dev, gen, NULL);
    clt_tensor *xs[T], *h0, *res[2], *p, *l;
    seq_tensors(dev, CLT_FLOAT32, xs, &h0);
    CHECK(clt_set_requires_grad(xs[0], 1));
    bw_log L = {0};
    clt_hook *hb;
    CHECK(clt_module_register_full_backward_hook(m, log_bw, &L, &hb));
    forward_pair(m, xs[0], h0, res);
    /* L = sum(output * 3) + sum(hidden): grad_output is 3 everywhere */
    clt_tensor *s0, *s1;
    CHECK(clt_mul_scalar(res[0], 3.0, &p));
    CHECK(clt_sum(p, &s0));
    CHECK(clt_sum(res[1], &s1));
    CHECK(clt_add(s0, s1, &l));
    CHECK(clt_backward(l, NULL, 0));
    cr_assert_eq(L.calls, 1, "the hook ran %d times", L.calls);
    cr_assert_not_null(L.gout);
    for (int k = 0; k < B * O; k++)
        cr_assert_eq(L.gout[k], 3.0, "grad_output[%d] %g", k, L.gout[k]);
    /* grad_input: what flows back to x through the module, x's gradient */
    clt_tensor *g;
    CHECK(clt_grad(xs[0], &g));
    double *gx = read_as_f64(g);
    cr_assert_not_null(L.gin);
    for (int k = 0; k < B * I; k++)
        cr_assert(close_enough(L.gin[k], gx[k], 1e-6, 1e-6), "grad_input[%d] %g, x.grad %g", k,
                  L.gin[k], gx[k]);
    free(gx);
    free(L.gin);
    free(L.gout);
    clt_hook_remove(hb);
    clt_tensor_free(g);
    clt_tensor_free(p);
    clt_tensor_free(s0);
    clt_tensor_free(s1);
    clt_tensor_free(l);
    clt_tensor_free(res[0]);
    clt_tensor_free(res[1]);
    for (int t = 0; t < T; t++)
        clt_tensor_free(xs[t]);
    clt_tensor_free(h0);
    clt_module_free(m);
    clt_generator_free(gen);
}
