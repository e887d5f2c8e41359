/* test_cells.c: the recurrent cells (clt_rnn_cell, clt_lstm_cell,
 * clt_gru_cell and their layers) against one step of the equations in
 * float64 on the host, their gradients by finite differences, the layers'
 * parameters; the containers (ModuleList, ModuleDict, ParameterList,
 * ParameterDict) and their names in the listings, the state and the
 * optimizers; Sequential's children by index; hooks around the forwards
 * of several inputs; RReLU's slopes, modes and gradients. */
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

enum { TANH, RELU, LSTM, GRU };

static int gates(int kind)
{
    return kind == LSTM ? 4 : kind == GRU ? 3 : 1;
}

static double sigm(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* One step of torch's cell equations: x [N, I], h and c [N, H] (NULL:
 * zeros), biases NULL for none; ho and co [N, H]. */
static void ref_step(int kind, int64_t N, int64_t I, int64_t H, const double *x, const double *h,
                     const double *c, const double *wih, const double *whh, const double *bih,
                     const double *bhh, double *ho, double *co)
{
    int64_t G = gates(kind) * H;
    double *a = malloc((size_t)G * sizeof *a), *ah = malloc((size_t)G * sizeof *ah);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t g = 0; g < G; g++) {
            double vx = bih ? bih[g] : 0.0, vh = bhh ? bhh[g] : 0.0;
            for (int64_t i = 0; i < I; i++)
                vx += wih[g * I + i] * x[n * I + i];
            for (int64_t j = 0; j < H; j++)
                vh += whh[g * H + j] * (h ? h[n * H + j] : 0.0);
            a[g] = vx;
            ah[g] = vh;
        }
        for (int64_t j = 0; j < H; j++) {
            double hp = h ? h[n * H + j] : 0.0, cp = c ? c[n * H + j] : 0.0;
            double *hv = &ho[n * H + j];
            switch (kind) {
            case TANH:
                *hv = tanh(a[j] + ah[j]);
                break;
            case RELU:
                *hv = fmax(a[j] + ah[j], 0.0);
                break;
            case LSTM: {
                double ig = sigm(a[j] + ah[j]), fg = sigm(a[H + j] + ah[H + j]);
                double gg = tanh(a[2 * H + j] + ah[2 * H + j]), og = sigm(a[3 * H + j] + ah[3 * H + j]);
                co[n * H + j] = fg * cp + ig * gg;
                *hv = og * tanh(co[n * H + j]);
                break;
            }
            default: {
                double r = sigm(a[j] + ah[j]), z = sigm(a[H + j] + ah[H + j]);
                double nn = tanh(a[2 * H + j] + r * ah[2 * H + j]);
                *hv = (1 - z) * nn + z * hp;
                break;
            }
            }
        }
    }
    free(a);
    free(ah);
}

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

/* The functional cell of kind on float64 tensors: *h (and *c). */
static clt_status run_cell(int kind, const clt_tensor *x, const clt_tensor *h,
                           const clt_tensor *c, const clt_tensor *wih, const clt_tensor *whh,
                           const clt_tensor *bih, const clt_tensor *bhh, clt_tensor **ho,
                           clt_tensor **co)
{
    switch (kind) {
    case TANH:
    case RELU:
        return clt_rnn_cell(x, h, wih, whh, bih, bhh, kind == RELU ? CLT_RNN_RELU : CLT_RNN_TANH,
                            ho);
    case LSTM:
        return clt_lstm_cell(x, h, c, wih, whh, bih, bhh, ho, co);
    default:
        return clt_gru_cell(x, h, wih, whh, bih, bhh, ho);
    }
}

static void values_case(clt_device *dev, int kind, int bias, int given, int batched)
{
    const int64_t N = 3, I = 4, H = 5, G = gates(kind) * H;
    double *x = spread_doubles((size_t)(N * I), 1), *h = spread_doubles((size_t)(N * H), 2);
    double *c = spread_doubles((size_t)(N * H), 3), *wih = spread_doubles((size_t)(G * I), 4);
    double *whh = spread_doubles((size_t)(G * H), 5), *bih = spread_doubles((size_t)G, 6);
    double *bhh = spread_doubles((size_t)G, 7);
    int64_t n = batched ? N : 1;
    double *ho = calloc((size_t)(N * H), sizeof *ho), *co = calloc((size_t)(N * H), sizeof *co);
    ref_step(kind, n, I, H, x, given ? h : NULL, given ? c : NULL, wih, whh, bias ? bih : NULL,
             bias ? bhh : NULL, ho, co);
    int64_t xs[2] = {N, I}, hs[2] = {N, H}, ws[2] = {G, I}, ws2[2] = {G, H};
    const int64_t *xsh = batched ? xs : xs + 1, *hsh = batched ? hs : hs + 1;
    int nd = batched ? 2 : 1;
    clt_tensor *tx = f64(dev, nd, xsh, x), *th = given ? f64(dev, nd, hsh, h) : NULL;
    clt_tensor *tc = given && kind == LSTM ? f64(dev, nd, hsh, c) : NULL;
    clt_tensor *twih = f64(dev, 2, ws, wih), *twhh = f64(dev, 2, ws2, whh);
    clt_tensor *tbih = bias ? f64(dev, 1, &G, bih) : NULL, *tbhh = bias ? f64(dev, 1, &G, bhh) : NULL;
    clt_tensor *rh = NULL, *rc = NULL;
    CHECK(run_cell(kind, tx, th, tc, twih, twhh, tbih, tbhh, &rh, &rc));
    assert_shape(rh, nd, hsh);
    assert_tensor_close(rh, ho, (size_t)(n * H), 1e-10, 1e-12, "h'");
    if (kind == LSTM) {
        assert_shape(rc, nd, hsh);
        assert_tensor_close(rc, co, (size_t)(n * H), 1e-10, 1e-12, "c'");
    } else {
        cr_assert_null(rc);
    }
    clt_tensor *all[9] = {tx, th, tc, twih, twhh, tbih, tbhh, rh, rc};
    for (int k = 0; k < 9; k++)
        clt_tensor_free(all[k]);
    free(x), free(h), free(c), free(wih), free(whh), free(bih), free(bhh), free(ho), free(co);
}

static void values_of(int kind)
{
    clt_device *dev = get_device("cpu");
    for (int bias = 0; bias < 2; bias++)
        for (int given = 0; given < 2; given++)
            for (int batched = 0; batched < 2; batched++)
                values_case(dev, kind, bias, given, batched);
}

Test(cells, rnn_tanh_cell_against_a_host_step)
{
    values_of(TANH);
}

Test(cells, rnn_relu_cell_against_a_host_step)
{
    values_of(RELU);
}

Test(cells, lstm_cell_against_a_host_step)
{
    values_of(LSTM);
}

Test(cells, gru_cell_against_a_host_step)
{
    values_of(GRU);
}

/* ---- gradients ----------------------------------------------------------------------- */

typedef struct gctx {
    int kind;
    int want_c; /* LSTM: the loss of c' instead of h' */
} gctx;

static clt_status cell_fn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gctx *g = ctx;
    int lstm = g->kind == LSTM;
    /* x, h, [c,] w_ih, w_hh, b_ih, b_hh */
    const clt_tensor *c = lstm ? in[2] : NULL;
    int w = lstm ? 3 : 2;
    clt_tensor *h = NULL, *cn = NULL;
    clt_status st = run_cell(g->kind, in[0], in[1], c, in[w], in[w + 1], in[w + 2], in[w + 3],
                             &h, &cn);
    if (st != CLT_OK)
        return st;
    if (g->want_c) {
        clt_tensor_free(h);
        *out = cn;
    } else {
        clt_tensor_free(cn);
        *out = h;
    }
    return CLT_OK;
}

static void grads_of(int kind, int want_c)
{
    clt_device *dev = get_device("cpu");
    const int64_t N = 2, I = 3, H = 2, G = gates(kind) * H;
    double *v[7];
    for (int k = 0; k < 7; k++)
        v[k] = spread_doubles(64, 20 + (unsigned)k);
    gc_in ins[7];
    int k = 0;
    ins[k++] = (gc_in){2, {N, I}, v[0], 1};
    ins[k++] = (gc_in){2, {N, H}, v[1], 1};
    if (kind == LSTM)
        ins[k++] = (gc_in){2, {N, H}, v[2], 1};
    ins[k++] = (gc_in){2, {G, I}, v[3], 1};
    ins[k++] = (gc_in){2, {G, H}, v[4], 1};
    ins[k++] = (gc_in){1, {G}, v[5], 1};
    ins[k++] = (gc_in){1, {G}, v[6], 1};
    gctx g = {kind, want_c};
    gradcheck(dev, cell_fn, &g, k, ins);
    for (int j = 0; j < 7; j++)
        free(v[j]);
}

Test(cells, gradients_by_finite_differences)
{
    grads_of(TANH, 0);
    grads_of(RELU, 0);
    grads_of(LSTM, 0);
    grads_of(LSTM, 1);
    grads_of(GRU, 0);
}

/* ---- the layers ---------------------------------------------------------------------- */

Test(cells, layers_have_torchs_parameters_and_run_as_the_functional_form)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(9, &gen));
    const int64_t I = 3, H = 4, N = 2;
    for (int kind = 0; kind < 4; kind++) {
        clt_module *m = NULL;
        if (kind == LSTM)
            CHECK(clt_lstm_cell_layer(dev, I, H, 1, gen, &m));
        else if (kind == GRU)
            CHECK(clt_gru_cell_layer(dev, I, H, 1, gen, &m));
        else
            CHECK(clt_rnn_cell_layer(dev, I, H, 1, kind == RELU ? CLT_RNN_RELU : CLT_RNN_TANH,
                                     gen, &m));
        cr_assert_str_eq(clt_module_name(m),
                         kind == LSTM ? "LSTMCell" : kind == GRU ? "GRUCell" : "RNNCell");
        clt_named_tensor *p = NULL;
        size_t n = 0;
        CHECK(clt_module_named_parameters(m, &p, &n));
        cr_assert_eq(n, 4);
        static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
        int64_t G = gates(kind) * H, shapes[4][2] = {{G, I}, {G, H}, {G}, {G}};
        for (int k = 0; k < 4; k++) {
            cr_assert_str_eq(p[k].name, names[k]);
            assert_shape(p[k].tensor, k < 2 ? 2 : 1, shapes[k]);
            assert_uniform_within(p[k].tensor, 1.0 / sqrt((double)H), names[k]);
        }
        /* the module's step against the host one, in float64 */
        CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
        double *w[4];
        for (int k = 0; k < 4; k++)
            w[k] = read_as_f64(p[k].tensor);
        double *x = spread_doubles((size_t)(N * I), 40), *h = spread_doubles((size_t)(N * H), 41);
        double *c = spread_doubles((size_t)(N * H), 42);
        double *ho = calloc((size_t)(N * H), sizeof *ho), *co = calloc((size_t)(N * H), sizeof *co);
        double *z = calloc((size_t)(N * H), sizeof *z), *zc = calloc((size_t)(N * H), sizeof *zc);
        ref_step(kind, N, I, H, x, h, c, w[0], w[1], w[2], w[3], ho, co);
        ref_step(kind, N, I, H, x, NULL, NULL, w[0], w[1], w[2], w[3], z, zc);
        int64_t xs[2] = {N, I}, hs[2] = {N, H};
        clt_tensor *tx = f64(dev, 2, xs, x), *th = f64(dev, 2, hs, h), *tc = f64(dev, 2, hs, c);
        clt_tensor *y = NULL, *y2 = NULL, *cy = NULL;
        CHECK(clt_module_forward(m, tx, &y));
        assert_tensor_close(y, z, (size_t)(N * H), 1e-10, 1e-12, "forward from zeros");
        if (kind == LSTM)
            CHECK(clt_lstm_cell_forward(m, tx, th, tc, &y2, &cy));
        else if (kind == GRU)
            CHECK(clt_gru_cell_forward(m, tx, th, &y2));
        else
            CHECK(clt_rnn_cell_forward(m, tx, th, &y2));
        assert_tensor_close(y2, ho, (size_t)(N * H), 1e-10, 1e-12, "h'");
        if (kind == LSTM)
            assert_tensor_close(cy, co, (size_t)(N * H), 1e-10, 1e-12, "c'");
        /* the other kinds' calls refuse it */
        clt_tensor *bad = (clt_tensor *)1;
        assert_error(kind == GRU ? clt_rnn_cell_forward(m, tx, th, &bad)
                                 : clt_gru_cell_forward(m, tx, th, &bad),
                     CLT_ERR_INVALID_ARGUMENT, "this call takes");
        cr_assert_null(bad);
        clt_tensor *all[6] = {tx, th, tc, y, y2, cy};
        for (int k = 0; k < 6; k++)
            clt_tensor_free(all[k]);
        for (int k = 0; k < 4; k++)
            free(w[k]);
        free(x), free(h), free(c), free(ho), free(co), free(z), free(zc);
        clt_free(p);
        clt_module_free(m);
    }
    /* without bias: two parameters */
    clt_module *m = NULL;
    CHECK(clt_gru_cell_layer(dev, I, H, 0, gen, &m));
    cr_assert_eq(clt_module_num_parameters(m), 3 * H * I + 3 * H * H);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(cells, errors)
{
    clt_device *dev = get_device("cpu");
    const int64_t G = 4, H = 4, I = 3;
    int64_t s3[3] = {2, 2, I}, x2[2] = {2, I}, wrong[2] = {2, 5}, h2[2] = {3, H},
            hbad[2] = {2, 5}, wi[2] = {G, I}, wh[2] = {G, H}, hs[2] = {2, H};
    double v[64] = {0};
    clt_tensor *x = f64(dev, 2, x2, v), *x3 = f64(dev, 3, s3, v), *xw = f64(dev, 2, wrong, v);
    clt_tensor *hb = f64(dev, 2, h2, v), *hh = f64(dev, 2, hbad, v), *h = f64(dev, 2, hs, v);
    clt_tensor *wih = f64(dev, 2, wi, v), *whh = f64(dev, 2, wh, v), *out = (clt_tensor *)1;
    clt_tensor *xf = NULL, *c2 = (clt_tensor *)1;
    CHECK(clt_to_dtype(x, CLT_FLOAT32, &xf));
    assert_error(clt_rnn_cell(x3, NULL, wih, whh, NULL, NULL, CLT_RNN_TANH, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Expected input to be 1-D or 2-D but received 3-D");
    cr_assert_null(out);
    assert_error(clt_rnn_cell(xw, NULL, wih, whh, NULL, NULL, CLT_RNN_TANH, &out),
                 CLT_ERR_SHAPE_MISMATCH, "input has inconsistent input_size: got 5 expected 3");
    assert_error(clt_rnn_cell(x, hb, wih, whh, NULL, NULL, CLT_RNN_TANH, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Input batch size 2 doesn't match hidden0 batch size 3");
    assert_error(clt_rnn_cell(x, hh, wih, whh, NULL, NULL, CLT_RNN_TANH, &out),
                 CLT_ERR_SHAPE_MISMATCH, "hidden0 has inconsistent hidden_size: got 5, expected 4");
    assert_error(clt_rnn_cell(xf, NULL, wih, whh, NULL, NULL, CLT_RNN_TANH, &out),
                 CLT_ERR_DTYPE_MISMATCH, NULL);
    names_only("clt_rnn_cell");
    assert_error(clt_rnn_cell(x, NULL, wih, whh, NULL, NULL, (clt_rnn_nonlinearity)7, &out),
                 CLT_ERR_INVALID_ARGUMENT, "Unknown nonlinearity");
    assert_error(clt_gru_cell(x, NULL, wih, whh, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "3 * hidden_size");
    assert_error(clt_lstm_cell(x, h, NULL, wih, whh, NULL, NULL, &out, &c2),
                 CLT_ERR_INVALID_ARGUMENT, "give both hx and cx");
    cr_assert_null(out);
    cr_assert_null(c2);
    assert_error(clt_rnn_cell(x, NULL, wih, whh, x, NULL, CLT_RNN_TANH, &out),
                 CLT_ERR_SHAPE_MISMATCH, "b_ih must be [4]");
    clt_module *m = NULL;
    assert_error(clt_lstm_cell_layer(dev, 0, 3, 1, NULL, &m), CLT_ERR_INVALID_ARGUMENT,
                 "must be positive");
    cr_assert_null(m);
    /* 3 gates of 2^62 rows pass int64: refused, not overflowed */
    assert_error(clt_gru_cell_layer(dev, 2, (int64_t)1 << 62, 1, NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "passes int64");
    cr_assert_null(m);
    CHECK(clt_rnn_cell_layer(dev, I, H, 1, CLT_RNN_TANH, NULL, &m));
    assert_error(clt_module_forward(m, x, &out), CLT_ERR_DTYPE_MISMATCH, "RNNCell");
    assert_error(clt_rnn_cell_forward(m, xf, h, &out), CLT_ERR_DTYPE_MISMATCH,
                 "clt_rnn_cell_forward: RNNCell");
    clt_module_free(m);
    clt_tensor *all[10] = {x, x3, xw, hb, hh, h, wih, whh, xf, NULL};
    for (int k = 0; k < 10; k++)
        clt_tensor_free(all[k]);
}

/* ---- containers -------------------------------------------------------------------- */

static clt_module *lin(clt_device *dev, int64_t i, int64_t o)
{
    clt_module *m = NULL;
    CHECK(clt_linear(dev, i, o, 1, NULL, &m));
    return m;
}

static void assert_names(const clt_module *m, const char *const *want, size_t n)
{
    clt_named_tensor *p = NULL;
    size_t got = 0;
    CHECK(clt_module_named_parameters(m, &p, &got));
    cr_assert_eq(got, n, "%zu parameters, want %zu", got, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(p[k].name, want[k]);
    clt_free(p);
}

static clt_status no_forward(clt_module *m, void *user, const clt_tensor *x, clt_tensor **out)
{
    (void)m, (void)user;
    *out = clt_tensor_retain((clt_tensor *)x);
    return CLT_OK;
}

Test(containers, module_list_names_by_place)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = lin(dev, 2, 3), *b = lin(dev, 3, 4), *c = lin(dev, 4, 5), *d = lin(dev, 5, 6);
    clt_module *mods[2] = {a, b}, *list = NULL;
    CHECK(clt_module_list(mods, 2, &list));
    cr_assert_str_eq(clt_module_name(list), "ModuleList");
    CHECK(clt_module_list_append(list, c));
    CHECK(clt_module_list_insert(list, 0, d));
    cr_assert_eq(clt_module_list_len(list), 4);
    cr_assert_eq(clt_module_list_get(list, 0), d);
    cr_assert_eq(clt_module_list_get(list, -1), c);
    cr_assert_eq(clt_module_list_get(list, 1), a);
    cr_assert_null(clt_module_list_get(list, 4));
    cr_assert_null(clt_module_list_get(list, -5));
    cr_assert_eq(clt_module_child(list, "2"), b);
    cr_assert_null(clt_module_child(list, "02"));
    static const char *const want[8] = {"0.weight", "0.bias", "1.weight", "1.bias",
                                        "2.weight", "2.bias", "3.weight", "3.bias"};
    assert_names(list, want, 8);
    /* the weights follow their modules: list[0] is d, 6 x 5 */
    cr_assert_eq(clt_tensor_shape(clt_module_param(clt_module_list_get(list, 0), "weight"))[0], 6);
    /* refused: a module it already holds, an index out of range, a forward */
    assert_error(clt_module_list_append(list, a), CLT_ERR_INVALID_ARGUMENT, "already belongs");
    clt_module *e = lin(dev, 1, 1);
    assert_error(clt_module_list_insert(list, 9, e), CLT_ERR_INDEX_OUT_OF_RANGE, "out of range");
    assert_error(clt_module_add_module(list, "x", e), CLT_ERR_INVALID_ARGUMENT, "container");
    CHECK(clt_module_list_insert(list, -1, e)); /* before the last, as list.insert(-1, e) */
    cr_assert_eq(clt_module_list_get(list, 3), e);
    cr_assert_eq(clt_module_list_get(list, 4), c);
    clt_tensor *x = NULL, *y = (clt_tensor *)1;
    int64_t xs[2] = {1, 2};
    double xv[2] = {1, 2};
    x = f64(dev, 2, xs, xv);
    assert_error(clt_module_forward(list, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "missing the required \"forward\"");
    cr_assert_null(y);
    clt_tensor_free(x);
    /* in a model: "layers.0.weight", and a clone keeps the names */
    clt_module *model = NULL, *copy = NULL;
    CHECK(clt_module_custom("Net", no_forward, NULL, NULL, &model));
    CHECK(clt_module_add_module(model, "layers", list));
    clt_named_tensor *p = NULL;
    size_t n = 0;
    CHECK(clt_module_named_parameters(model, &p, &n));
    cr_assert_eq(n, 10);
    cr_assert_str_eq(p[0].name, "layers.0.weight");
    cr_assert_str_eq(p[9].name, "layers.4.bias");
    clt_free(p);
    CHECK(clt_module_clone(model, NULL, &copy));
    clt_module *cl = clt_module_child(copy, "layers");
    cr_assert_eq(clt_module_list_len(cl), 5);
    clt_module *f = lin(dev, 7, 7);
    CHECK(clt_module_list_insert(cl, 0, f)); /* renumbering the copy's names */
    CHECK(clt_module_named_parameters(copy, &p, &n));
    cr_assert_eq(n, 12);
    cr_assert_str_eq(p[0].name, "layers.0.weight");
    cr_assert_str_eq(p[11].name, "layers.5.bias");
    clt_free(p);
    clt_module *fresh = NULL;
    CHECK(clt_module_clone(model, NULL, &fresh));
    assert_state_roundtrip(model, fresh);
    clt_module_free(fresh);
    clt_module_free(copy);
    clt_module_free(model);
}

Test(containers, module_dict_by_key)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = lin(dev, 2, 3), *b = lin(dev, 3, 4), *c = lin(dev, 4, 5);
    const char *names[2] = {"enc", "dec"};
    clt_module *mods[2] = {a, b}, *d = NULL;
    CHECK(clt_module_dict(names, mods, 2, &d));
    cr_assert_eq(clt_module_child(d, "dec"), b);
    CHECK(clt_module_dict_set(d, "head", c));
    cr_assert_eq(clt_module_list_len(d), 3);
    static const char *const want[6] = {"enc.weight", "enc.bias", "dec.weight",
                                        "dec.bias",   "head.weight", "head.bias"};
    assert_names(d, want, 6);
    /* an existing key keeps its place */
    clt_module *e = lin(dev, 8, 9);
    CHECK(clt_module_dict_set(d, "enc", e));
    cr_assert_eq(clt_module_child(d, "enc"), e);
    assert_names(d, want, 6);
    cr_assert_eq(clt_module_num_parameters(d), 9 * 8 + 9 + 3 * 4 + 4 + 4 * 5 + 5);
    clt_module *g = lin(dev, 1, 1);
    assert_error(clt_module_dict_set(d, "a.b", g), CLT_ERR_INVALID_ARGUMENT, "contain \".\"");
    const char *twice[2] = {"k", "k"};
    clt_module *two[2] = {g, lin(dev, 1, 1)}, *bad = (clt_module *)1;
    assert_error(clt_module_dict(twice, two, 2, &bad), CLT_ERR_INVALID_ARGUMENT, "given twice");
    cr_assert_null(bad);
    assert_error(clt_module_list_append(d, g), CLT_ERR_INVALID_ARGUMENT, "not a ModuleList");
    clt_module_free(two[1]);
    clt_module_free(g);
    clt_module_free(d);
}

Test(containers, parameter_list_and_dict)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {2, 3};
    double v[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *t0 = f64(dev, 2, s, v), *t1 = f64(dev, 1, s, v), *t2 = f64(dev, 1, s + 1, v);
    clt_tensor *ts[2] = {t0, t1};
    clt_module *pl = NULL;
    CHECK(clt_parameter_list(ts, 2, &pl));
    CHECK(clt_parameter_list_append(pl, t2));
    cr_assert_eq(clt_parameter_list_len(pl), 3);
    cr_assert_eq(clt_parameter_list_get(pl, -1), t2);
    cr_assert_eq(clt_module_param(pl, "1"), t1);
    cr_assert(clt_requires_grad(t0));
    static const char *const want[3] = {"0", "1", "2"};
    assert_names(pl, want, 3);
    /* refused: a tensor it holds, an integer one, the wrong container call */
    assert_error(clt_parameter_list_append(pl, t0), CLT_ERR_INVALID_ARGUMENT, "already");
    clt_tensor *iv = NULL, *grad_free = NULL;
    CHECK(clt_to_dtype(t0, CLT_INT64, &iv));
    assert_error(clt_parameter_list_append(pl, iv), CLT_ERR_DTYPE_MISMATCH, "floating point");
    assert_error(clt_module_add_parameter(pl, "x", iv), CLT_ERR_INVALID_ARGUMENT, "container");
    assert_error(clt_parameter_dict_set(pl, "x", iv), CLT_ERR_INVALID_ARGUMENT,
                 "not a ParameterDict");
    /* a dict in a model: "params.alpha"; an optimizer sees every tensor */
    clt_tensor *a = f64(dev, 1, s, v), *b = f64(dev, 1, s + 1, v), *b2 = f64(dev, 1, s, v);
    const char *names[2] = {"alpha", "beta"};
    clt_tensor *ab[2] = {a, b};
    clt_module *pd = NULL, *model = NULL;
    CHECK(clt_parameter_dict(names, ab, 2, &pd));
    CHECK(clt_parameter_dict_set(pd, "beta", b2)); /* replaces b (released) in its place */
    cr_assert_eq(clt_module_param(pd, "beta"), b2);
    cr_assert_eq(clt_parameter_list_len(pd), 2);
    CHECK(clt_module_custom("Net", no_forward, NULL, NULL, &model));
    CHECK(clt_module_add_module(model, "plist", pl));
    CHECK(clt_module_add_module(model, "params", pd));
    static const char *const all[5] = {"plist.0", "plist.1", "plist.2", "params.alpha",
                                       "params.beta"};
    assert_names(model, all, 5);
    clt_tensor **ps = NULL;
    size_t n = 0;
    CHECK(clt_module_parameters(model, &ps, &n));
    cr_assert_eq(n, 5);
    clt_optimizer *opt = NULL;
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.5;
    CHECK(clt_sgd(ps, n, &so, &opt));
    /* L = sum(b2): b2's gradient is ones, and one step moves it by -0.5 */
    clt_tensor *l = NULL;
    CHECK(clt_sum(b2, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_optimizer_step(opt));
    double after[2], want2[2] = {0.5, 1.5};
    CHECK(clt_tensor_read(b2, after, sizeof after));
    cr_assert(after[0] == want2[0] && after[1] == want2[1], "b2 after a step: %g %g", after[0],
              after[1]);
    CHECK(clt_module_to_dtype(model, CLT_FLOAT32));
    cr_assert_eq(clt_tensor_dtype(clt_parameter_list_get(pl, 0)), CLT_FLOAT32);
    clt_module *fresh = NULL;
    CHECK(clt_module_clone(model, NULL, &fresh));
    assert_state_roundtrip(model, fresh);
    (void)grad_free;
    clt_module_free(fresh);
    clt_tensor_free(l);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_tensor_free(iv);
    clt_module_free(model);
}

Test(containers, sequential_children_by_index)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = lin(dev, 2, 3), *b = lin(dev, 3, 4), *mods[2] = {a, b}, *seq = NULL;
    CHECK(clt_sequential(mods, 2, &seq));
    cr_assert_eq(clt_module_child(seq, "0"), a);
    cr_assert_eq(clt_module_child(seq, "1"), b);
    cr_assert_null(clt_module_child(seq, "2"));
    cr_assert_null(clt_module_child(seq, "01"));
    cr_assert_null(clt_module_child(seq, "-1"));
    cr_assert_null(clt_module_child(seq, ""));
    clt_module_free(seq);
}

/* ---- hooks on the forwards of several inputs --------------------------------------- */

typedef struct seen {
    int pre, fwd, bwd;
    const clt_tensor *input;
} seen;

static clt_status pre_hook(void *user, clt_module *m, const clt_tensor *input,
                           clt_tensor **replacement)
{
    (void)m, (void)replacement;
    seen *s = user;
    s->pre++;
    s->input = input;
    return CLT_OK;
}

/* doubles the output */
static clt_status fwd_hook(void *user, clt_module *m, const clt_tensor *input,
                           const clt_tensor *output, clt_tensor **replacement)
{
    (void)m, (void)input;
    seen *s = user;
    s->fwd++;
    return clt_mul_scalar(output, 2.0, replacement);
}

static clt_status bwd_hook(void *user, clt_module *m, const clt_tensor *grad_input,
                           const clt_tensor *grad_output, clt_tensor **replacement)
{
    (void)m, (void)grad_output, (void)replacement;
    seen *s = user;
    s->bwd += grad_input != NULL;
    return CLT_OK;
}

static void hook_all(clt_module *m, seen *s)
{
    CHECK(clt_module_register_forward_pre_hook(m, pre_hook, s, NULL));
    CHECK(clt_module_register_forward_hook(m, fwd_hook, s, NULL));
    CHECK(clt_module_register_full_backward_hook(m, bwd_hook, s, NULL));
}

Test(hooks_multi, cell_and_lstm_forwards_run_the_hooks)
{
    clt_device *dev = get_device("cpu");
    const int64_t N = 2, I = 3, H = 4;
    int64_t xs[2] = {N, I}, hs[2] = {N, H};
    double *xv = spread_doubles(64, 50);
    clt_tensor *x = NULL, *h = NULL, *c = NULL, *y0 = NULL, *y = NULL, *cy = NULL, *l = NULL;
    x = f64(dev, 2, xs, xv);
    CHECK(clt_set_requires_grad(x, 1));
    h = f64(dev, 2, hs, xv), c = f64(dev, 2, hs, xv + 8);
    clt_module *m = NULL;
    CHECK(clt_lstm_cell_layer(dev, I, H, 1, NULL, &m));
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    CHECK(clt_lstm_cell_forward(m, x, h, c, &y0, &cy));
    clt_tensor_free(cy);
    seen s = {0};
    hook_all(m, &s);
    CHECK(clt_lstm_cell_forward(m, x, h, c, &y, &cy));
    cr_assert_eq(s.pre, 1);
    cr_assert_eq(s.fwd, 1);
    cr_assert_eq(s.input, x);
    double *a = read_as_f64(y0), *b = read_as_f64(y);
    for (int k = 0; k < N * H; k++)
        cr_assert(b[k] == 2 * a[k], "h' %d: %g, want twice %g", k, b[k], a[k]);
    free(a), free(b);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    cr_assert_eq(s.bwd, 1);
    clt_tensor *all[7] = {x, h, c, y0, y, cy, l};
    for (int k = 0; k < 7; k++)
        clt_tensor_free(all[k]);
    clt_module_free(m);

    /* LSTM over a sequence: hooks on x and the output */
    clt_rnn_opts o = CLT_RNN_DEFAULTS(I, H);
    seen s2 = {0};
    CHECK(clt_lstm_layer(dev, &o, NULL, &m));
    hook_all(m, &s2);
    int64_t seq[3] = {5, N, I};
    clt_tensor *xq = NULL, *out = NULL, *hn = NULL, *cn = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, seq, xv, &x));
    CHECK(clt_to_dtype(x, CLT_FLOAT32, &xq));
    CHECK(clt_lstm_forward(m, xq, NULL, NULL, &out, &hn, &cn));
    cr_assert_eq(s2.pre, 1);
    cr_assert_eq(s2.fwd, 1);
    cr_assert_eq(s2.input, xq);
    clt_tensor_free(x), clt_tensor_free(xq), clt_tensor_free(out), clt_tensor_free(hn);
    clt_tensor_free(cn);
    clt_module_free(m);
    free(xv);
}

Test(hooks_multi, attention_and_bilinear_forwards_run_the_hooks)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(64, 60);
    int64_t xs[3] = {3, 2, 4};
    clt_tensor *x = NULL, *y0 = NULL, *y = NULL, *w = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, xs, xv, &x));
    clt_tensor *xf = NULL;
    CHECK(clt_to_dtype(x, CLT_FLOAT32, &xf));
    clt_module *m = NULL;
    CHECK(clt_multihead_attention_layer(dev, 4, 2, 0.0, 1, 0, NULL, &m));
    CHECK(clt_multihead_attention(m, xf, xf, xf, NULL, NULL, 0, 1, &y0, NULL));
    seen s = {0};
    hook_all(m, &s);
    CHECK(clt_multihead_attention(m, xf, xf, xf, NULL, NULL, 1, 1, &y, &w));
    cr_assert_eq(s.pre, 1);
    cr_assert_eq(s.fwd, 1);
    cr_assert_eq(s.input, xf);
    cr_assert_not_null(w);
    double *a = read_as_f64(y0), *b = read_as_f64(y);
    for (int k = 0; k < 24; k++)
        cr_assert(fabs(b[k] - 2 * a[k]) < 1e-6, "out %d: %g, want twice %g", k, b[k], a[k]);
    free(a), free(b);
    clt_tensor_free(y0), clt_tensor_free(y), clt_tensor_free(w);
    clt_module_free(m);

    seen s2 = {0};
    CHECK(clt_bilinear_layer(dev, 4, 4, 3, 1, NULL, &m));
    hook_all(m, &s2);
    CHECK(clt_bilinear_forward(m, xf, xf, &y));
    cr_assert_eq(s2.pre, 1);
    cr_assert_eq(s2.fwd, 1);
    int64_t ys[3] = {3, 2, 3};
    assert_shape(y, 3, ys);
    clt_tensor_free(y);
    clt_module_free(m);
    clt_tensor_free(x), clt_tensor_free(xf);
    free(xv);
}

/* ---- RReLU --------------------------------------------------------------------------- */

Test(rrelu, eval_is_leaky_relu_with_the_mean_slope)
{
    clt_device *dev = get_device("cpu");
    double v[6] = {-2.0, -0.5, 0.0, 0.25, 3.0, -1e-3}, want[6];
    int64_t n = 6;
    for (int k = 0; k < 6; k++)
        want[k] = v[k] >= 0 ? v[k] : v[k] * (0.1 + 0.3) / 2;
    clt_tensor *x = f64(dev, 1, &n, v), *y = NULL;
    CHECK(clt_rrelu(x, 0.1, 0.3, 0, NULL, &y));
    assert_tensor_close(y, want, 6, 1e-15, 0, "eval rrelu");
    clt_tensor_free(y);
    clt_module *m = NULL;
    CHECK(clt_rrelu_layer(0.1, 0.3, NULL, &m));
    cr_assert_str_eq(clt_module_name(m), "RReLU");
    clt_module_train(m, 0);
    CHECK(clt_module_forward(m, x, &y));
    assert_tensor_close(y, want, 6, 1e-15, 0, "RReLU in eval mode");
    clt_tensor_free(y);
    clt_module_free(m);
    clt_tensor_free(x);
}

Test(rrelu, train_draws_a_slope_per_element_and_its_gradient_is_the_slope)
{
    clt_device *dev = get_device("cpu");
    const int64_t n = 400;
    double *v = spread_doubles((size_t)n, 70);
    v[0] = 0.0;
    clt_tensor *x = f64(dev, 1, &n, v), *y = NULL, *y2 = NULL, *l = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    clt_generator *gen = NULL, *gen2 = NULL;
    CHECK(clt_generator_new(4, &gen));
    CHECK(clt_generator_new(4, &gen2));
    const double lo = 0.2, hi = 0.6;
    CHECK(clt_rrelu(x, lo, hi, 1, gen, &y));
    CHECK(clt_rrelu(x, lo, hi, 1, gen2, &y2));
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(x, &g));
    double *got = read_as_f64(y), *again = read_as_f64(y2), *gr = read_as_f64(g);
    double smin = 1, smax = 0;
    for (int64_t k = 0; k < n; k++) {
        cr_assert(got[k] == again[k], "element %lld differs between equal seeds",
                  (long long)k);
        if (v[k] > 0) {
            cr_assert(got[k] == v[k] && gr[k] == 1.0, "x %g > 0: y %g, grad %g", v[k],
                      got[k], gr[k]);
            continue;
        }
        /* x <= 0: y = x * slope, the slope in [lo, hi) and the gradient */
        cr_assert(gr[k] >= lo && gr[k] < hi, "element %lld: slope %g outside [%g, %g)",
                  (long long)k, gr[k], lo, hi);
        cr_assert(got[k] == v[k] * gr[k], "element %lld: y %g, x * slope %g", (long long)k,
                  got[k], v[k] * gr[k]);
        smin = fmin(smin, gr[k]);
        smax = fmax(smax, gr[k]);
    }
    cr_assert(smax - smin > 0.3, "the slopes are not spread: %g..%g", smin, smax);
    free(got), free(again), free(gr), free(v);
    /* errors */
    clt_tensor *bad = (clt_tensor *)1, *iv = NULL;
    assert_error(clt_rrelu(x, 0.5, 0.2, 1, gen, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "Lower bound should be less than or equal to the upper bound");
    cr_assert_null(bad);
    CHECK(clt_to_dtype(x, CLT_INT64, &iv));
    uint64_t at = clt_generator_offset(gen);
    assert_error(clt_rrelu(iv, 0.1, 0.2, 1, gen, &bad), CLT_ERR_DTYPE_MISMATCH, "not implemented");
    cr_assert_eq(clt_generator_offset(gen), at);
    clt_module *m = (clt_module *)1;
    assert_error(clt_rrelu_layer(1.0, 0.0, gen, &m), CLT_ERR_INVALID_ARGUMENT, "Lower bound");
    cr_assert_null(m);
    clt_tensor *all[6] = {x, y, y2, l, g, iv};
    for (int k = 0; k < 6; k++)
        clt_tensor_free(all[k]);
    clt_generator_free(gen);
    clt_generator_free(gen2);
}
