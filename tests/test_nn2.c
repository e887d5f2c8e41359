/* test_nn2.c: packed sequences (pack_padded_sequence, pack_sequence,
 * pad_packed_sequence) against host loops written here, the recurrent
 * layers over packed input against running each sequence alone through
 * the padded forward, gradients against finite differences in float64
 * (gradcheck.h), and the errors. */
#include <math.h>

#include "gradcheck.h"

static int64_t read_i64(const clt_tensor *t, int64_t k)
{
    double *v = read_as_f64(t);
    int64_t r = (int64_t)v[k];
    free(v);
    return r;
}

/* The caller's sequence of each place of the sorted batch: the stable
 * order by decreasing length. */
static void host_order(const int64_t *len, int64_t B, int64_t *order)
{
    int64_t n = 0;
    for (int64_t l = 1000; l > 0; l--)
        for (int64_t j = 0; j < B; j++)
            if (len[j] == l)
                order[n++] = j;
}

Test(nn2, pack_and_pad_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    const int64_t B = 4, T = 6, F = 2, len[4] = {3, 5, 1, 5};
    int64_t order[4], total = 14;
    host_order(len, B, order);
    double *v = spread_doubles((size_t)(T * B * F), 7);
    for (int bf = 0; bf < 2; bf++) {
        clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 3,
                                  bf ? (int64_t[]){B, T, F} : (int64_t[]){T, B, F}, v);
        clt_tensor *data = NULL, *bs = NULL, *si = NULL, *ui = NULL;
        CHECK(clt_pack_padded_sequence(x, len, 4, bf, 0, &data, &bs, &si, &ui));
        /* data: step by step, the sequences still running in sorted order */
        double want[14 * 2], *pad = calloc((size_t)(B * 7 * F), sizeof *pad);
        int64_t r = 0, bsw[5] = {0};
        for (int64_t t = 0; t < 5; t++)
            for (int64_t k = 0; k < B; k++)
                if (len[order[k]] > t) {
                    bsw[t]++;
                    for (int64_t f = 0; f < F; f++)
                        want[r * F + f] =
                            v[(bf ? order[k] * T + t : t * B + order[k]) * F + f];
                    r++;
                }
        cr_assert_eq(r, total);
        assert_shape(data, 2, (int64_t[]){total, F});
        assert_tensor_close(data, want, (size_t)(total * F), 0, 0, "data");
        assert_tensor_close(bs, (double[]){4, 3, 3, 2, 2}, 5, 0, 0, "batch_sizes");
        cr_assert_eq(clt_tensor_dtype(bs), CLT_INT64);
        for (int64_t k = 0; k < B; k++) {
            cr_assert_eq(read_i64(si, k), order[k], "sorted_indices[%lld]", (long long)k);
            cr_assert_eq(order[read_i64(ui, k)], k, "unsorted_indices is the inverse");
        }
        /* back, padded to 7 steps with -3 */
        clt_tensor *y = NULL, *lens = NULL;
        CHECK(clt_pad_packed_sequence(data, bs, si, ui, bf, -3.0, 7, &y, &lens));
        assert_shape(y, 3, bf ? (int64_t[]){B, 7, F} : (int64_t[]){7, B, F});
        for (int64_t j = 0; j < B; j++)
            for (int64_t t = 0; t < 7; t++)
                for (int64_t f = 0; f < F; f++)
                    pad[(bf ? j * 7 + t : t * B + j) * F + f] =
                        t < len[j] ? v[(bf ? j * T + t : t * B + j) * F + f] : -3.0;
        assert_tensor_close(y, pad, (size_t)(B * 7 * F), 0, 0, "padded back");
        assert_tensor_close(lens, (double[]){3, 5, 1, 5}, 4, 0, 0, "lengths");
        /* without the indices: the sorted batch */
        clt_tensor *ys = NULL;
        CHECK(clt_pad_packed_sequence(data, bs, NULL, NULL, 0, 0.0, -1, &ys, NULL));
        assert_shape(ys, 3, (int64_t[]){5, B, F});
        double *got = read_as_f64(ys);
        for (int64_t k = 0; k < B; k++)
            for (int64_t t = 0; t < 5; t++)
                cr_assert_eq(got[(t * B + k) * F],
                             t < len[order[k]] ? v[(bf ? order[k] * T + t : t * B + order[k]) * F]
                                               : 0.0);
        free(got);
        clt_tensor_free(ys);
        clt_tensor_free(y);
        clt_tensor_free(lens);
        clt_tensor_free(data);
        clt_tensor_free(bs);
        clt_tensor_free(si);
        clt_tensor_free(ui);
        clt_tensor_free(x);
        free(pad);
    }
    /* pack_sequence: sorted lengths give NULL indices */
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 2}, v);
    clt_tensor *b = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){1, 2}, v + 6);
    const clt_tensor *ab[2] = {a, b};
    clt_tensor *data = NULL, *bs = NULL, *si = (clt_tensor *)0x1, *ui = (clt_tensor *)0x1;
    CHECK(clt_pack_sequence(ab, 2, 1, &data, &bs, &si, &ui));
    cr_assert_null(si);
    cr_assert_null(ui);
    assert_tensor_close(bs, (double[]){2, 1, 1}, 3, 0, 0, "batch_sizes");
    double w[8] = {v[0], v[1], v[6], v[7], v[2], v[3], v[4], v[5]};
    for (int k = 0; k < 8; k++)
        w[k] = (double)(float)w[k];
    assert_tensor_close(data, w, 8, 0, 0, "pack_sequence");
    clt_tensor_free(data);
    clt_tensor_free(bs);
    clt_tensor_free(a);
    clt_tensor_free(b);
    free(v);
}

/* A 2-layer bidirectional module of kind k (0 RNN, 1 LSTM, 2 GRU) in
 * float64. */
static clt_module *rnn_module(clt_device *dev, int k, int64_t I, int64_t H)
{
    clt_rnn_opts o = CLT_RNN_DEFAULTS(I, H);
    o.num_layers = 2;
    o.bidirectional = 1;
    clt_module *m = NULL;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(5 + (uint64_t)k, &g));
    if (k == 0)
        CHECK(clt_rnn_layer(dev, &o, g, &m));
    else if (k == 1)
        CHECK(clt_lstm_layer(dev, &o, g, &m));
    else
        CHECK(clt_gru_layer(dev, &o, g, &m));
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    clt_generator_free(g);
    return m;
}

Test(nn2, packed_forward_equals_each_sequence_alone)
{
    clt_device *dev = get_device("cpu");
    const int64_t B = 4, T = 5, I = 3, H = 4, DL = 4, len[4] = {2, 5, 1, 4};
    double *xv = spread_doubles((size_t)(T * B * I), 11);
    double *hv = spread_doubles((size_t)(DL * B * H), 12);
    double *cv = spread_doubles((size_t)(DL * B * H), 13);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){T, B, I}, xv);
    clt_tensor *h0 = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){DL, B, H}, hv);
    clt_tensor *c0 = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){DL, B, H}, cv);
    clt_tensor *data = NULL, *bs = NULL, *si = NULL, *ui = NULL;
    CHECK(clt_pack_padded_sequence(x, len, 4, 0, 0, &data, &bs, &si, &ui));
    for (int k = 0; k < 3; k++) {
        clt_module *m = rnn_module(dev, k, I, H);
        clt_tensor *out = NULL, *hn = NULL, *cn = NULL, *y = NULL;
        if (k == 1)
            CHECK(clt_lstm_forward_packed(m, data, bs, si, ui, h0, c0, &out, &hn, &cn));
        else if (k == 0)
            CHECK(clt_rnn_forward_packed(m, data, bs, si, ui, h0, &out, &hn));
        else
            CHECK(clt_gru_forward_packed(m, data, bs, si, ui, h0, &out, &hn));
        assert_shape(out, 2, (int64_t[]){12, 2 * H});
        CHECK(clt_pad_packed_sequence(out, bs, si, ui, 0, 0.0, -1, &y, NULL));
        double *yv = read_as_f64(y), *hnv = read_as_f64(hn), *cnv = cn ? read_as_f64(cn) : NULL;
        for (int64_t j = 0; j < B; j++) {
            /* sequence j alone, unbatched, with its own initial states */
            double *xj = malloc((size_t)(len[j] * I) * sizeof *xj);
            double hj[16], cj[16];
            for (int64_t t = 0; t < len[j]; t++)
                for (int64_t i = 0; i < I; i++)
                    xj[t * I + i] = xv[(t * B + j) * I + i];
            for (int64_t s = 0; s < DL; s++)
                for (int64_t h = 0; h < H; h++) {
                    hj[s * H + h] = hv[(s * B + j) * H + h];
                    cj[s * H + h] = cv[(s * B + j) * H + h];
                }
            clt_tensor *xt = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){len[j], I}, xj);
            clt_tensor *ht = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){DL, H}, hj);
            clt_tensor *ct = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){DL, H}, cj);
            clt_tensor *oj = NULL, *hnj = NULL, *cnj = NULL;
            if (k == 1)
                CHECK(clt_lstm_forward(m, xt, ht, ct, &oj, &hnj, &cnj));
            else if (k == 0)
                CHECK(clt_rnn_forward(m, xt, ht, &oj, &hnj));
            else
                CHECK(clt_gru_forward(m, xt, ht, &oj, &hnj));
            double *ov = read_as_f64(oj), *hjv = read_as_f64(hnj);
            for (int64_t t = 0; t < T; t++)
                for (int64_t h = 0; h < 2 * H; h++) {
                    double want = t < len[j] ? ov[t * 2 * H + h] : 0.0;
                    cr_assert(close_enough(yv[(t * B + j) * 2 * H + h], want, 1e-12, 1e-12),
                              "kind %d seq %lld step %lld: %.15g, alone %.15g", k,
                              (long long)j, (long long)t, yv[(t * B + j) * 2 * H + h], want);
                }
            for (int64_t s = 0; s < DL; s++)
                for (int64_t h = 0; h < H; h++)
                    cr_assert(close_enough(hnv[(s * B + j) * H + h], hjv[s * H + h], 1e-12,
                                           1e-12),
                              "kind %d h_n of seq %lld state %lld", k, (long long)j,
                              (long long)s);
            if (cnj) {
                double *cjv = read_as_f64(cnj);
                for (int64_t s = 0; s < DL; s++)
                    for (int64_t h = 0; h < H; h++)
                        cr_assert(close_enough(cnv[(s * B + j) * H + h], cjv[s * H + h], 1e-12,
                                               1e-12),
                                  "c_n of seq %lld", (long long)j);
                free(cjv);
            }
            free(ov);
            free(hjv);
            free(xj);
            clt_tensor_free(xt);
            clt_tensor_free(ht);
            clt_tensor_free(ct);
            clt_tensor_free(oj);
            clt_tensor_free(hnj);
            clt_tensor_free(cnj);
        }
        free(yv);
        free(hnv);
        free(cnv);
        clt_tensor_free(y);
        clt_tensor_free(out);
        clt_tensor_free(hn);
        clt_tensor_free(cn);
        clt_module_free(m);
    }
    clt_tensor_free(data);
    clt_tensor_free(bs);
    clt_tensor_free(si);
    clt_tensor_free(ui);
    clt_tensor_free(x);
    clt_tensor_free(h0);
    clt_tensor_free(c0);
    free(xv);
    free(hv);
    free(cv);
}

/* ---- gradients ---------------------------------------------------------------------------- */

static const int64_t g_len[3] = {2, 4, 3};

/* pad_packed(pack_padded(x)) with padding 0.5, batch first. */
static clt_status pack_pad_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *data = NULL, *bs = NULL, *si = NULL, *ui = NULL;
    clt_status st = clt_pack_padded_sequence(in[0], g_len, 3, 1, 0, &data, &bs, &si, &ui);
    if (st == CLT_OK)
        st = clt_pad_packed_sequence(data, bs, si, ui, 1, 0.5, 5, out, NULL);
    clt_tensor_free(data);
    clt_tensor_free(bs);
    clt_tensor_free(si);
    clt_tensor_free(ui);
    return st;
}

/* The packed forward of the module ctx (LSTM or GRU) on pack(in[0]) with
 * h0 in[1] (and c0 in[2]): its output data, h_n and c_n flattened and
 * joined. */
typedef struct packed_ctx {
    clt_module *m;
    int lstm;
} packed_ctx;

static clt_status packed_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const packed_ctx *p = ctx;
    clt_tensor *data = NULL, *bs = NULL, *si = NULL, *ui = NULL, *o = NULL, *hn = NULL,
               *cn = NULL, *parts[3] = {NULL, NULL, NULL};
    clt_status st = clt_pack_padded_sequence(in[0], g_len, 3, 0, 0, &data, &bs, &si, &ui);
    if (st == CLT_OK)
        st = p->lstm ? clt_lstm_forward_packed(p->m, data, bs, si, ui, in[1], in[2], &o, &hn, &cn)
                     : clt_gru_forward_packed(p->m, data, bs, si, ui, in[1], &o, &hn);
    clt_tensor *res[3] = {o, hn, cn};
    int n = p->lstm ? 3 : 2;
    for (int k = 0; k < n && st == CLT_OK; k++)
        st = clt_flatten(res[k], 0, -1, &parts[k]);
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *const *)parts, (size_t)n, 0, out);
    for (int k = 0; k < 3; k++) {
        clt_tensor_free(parts[k]);
        clt_tensor_free(res[k]);
    }
    clt_tensor_free(data);
    clt_tensor_free(bs);
    clt_tensor_free(si);
    clt_tensor_free(ui);
    return st;
}

Test(nn2, gradients_against_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(3 * 4 * 2, 21);
    gc_in pin[1] = {{3, {3, 4, 2}, xv, 1}};
    gradcheck(dev, pack_pad_f, NULL, 1, pin);
    double *x2 = spread_doubles(4 * 3 * 2, 22), *h = spread_doubles(4 * 3 * 3, 23),
           *c = spread_doubles(4 * 3 * 3, 24);
    for (int lstm = 0; lstm < 2; lstm++) {
        packed_ctx p = {rnn_module(dev, lstm ? 1 : 2, 2, 3), lstm};
        gc_in ins[3] = {{3, {4, 3, 2}, x2, 1}, {3, {4, 3, 3}, h, 1}, {3, {4, 3, 3}, c, 1}};
        gradcheck(dev, packed_f, &p, lstm ? 3 : 2, ins);
        clt_module_free(p.m);
    }
    free(xv);
    free(x2);
    free(h);
    free(c);
}

Test(nn2, packed_errors)
{
    clt_device *dev = get_device("cpu");
    double v[12] = {0};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){3, 2, 2}, v);
    clt_tensor *d = NULL, *bs = NULL, *si = NULL, *ui = NULL, *y = NULL;
    assert_error(clt_pack_padded_sequence(x, (int64_t[]){1, 2}, 2, 0, 1, &d, &bs, &si, &ui),
                 CLT_ERR_INVALID_ARGUMENT, "must be sorted in decreasing order");
    names_only("clt_pack_padded_sequence");
    assert_error(clt_pack_padded_sequence(x, (int64_t[]){1, 4}, 2, 0, 0, &d, &bs, &si, &ui),
                 CLT_ERR_INVALID_ARGUMENT, "past the input's 3 steps");
    assert_error(clt_pack_padded_sequence(x, (int64_t[]){1, 1, 1}, 3, 0, 0, &d, &bs, &si, &ui),
                 CLT_ERR_INVALID_ARGUMENT, "to be equal to batch_size, but got 3 (batch_size=2)");
    cr_assert(d == NULL && bs == NULL && si == NULL && ui == NULL);
    CHECK(clt_pack_padded_sequence(x, (int64_t[]){3, 2}, 2, 0, 0, &d, &bs, &si, &ui));
    assert_error(clt_pad_packed_sequence(d, bs, si, ui, 0, 0.0, 2, &y, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "total_length=2 and max sequence length being 3");
    names_only("clt_pad_packed_sequence");
    clt_tensor *up = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, (int64_t[]){1, 2, 2}, &up));
    assert_error(clt_pad_packed_sequence(d, up, NULL, NULL, 0, 0.0, -1, &y, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "non-increasing");
    assert_error(clt_pad_packed_sequence(d, bs, up, NULL, 0, 0.0, -1, &y, NULL),
                 CLT_ERR_SHAPE_MISMATCH, "sorted_indices must be 1-D with 2 elements");
    cr_assert_null(y);
    /* the recurrent layers: a wrong h0 and a module of another kind */
    clt_rnn_opts o = CLT_RNN_DEFAULTS(2, 3);
    clt_module *m = NULL;
    CHECK(clt_gru_layer(dev, &o, NULL, &m));
    clt_tensor *h0 = NULL, *out = NULL, *hn = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){1, 3, 3}, &h0));
    assert_error(clt_gru_forward_packed(m, d, bs, si, ui, h0, &out, &hn),
                 CLT_ERR_SHAPE_MISMATCH, "Expected hidden size [1, 2, 3], got [1, 3, 3]");
    assert_error(clt_rnn_forward_packed(m, d, bs, si, ui, NULL, &out, &hn),
                 CLT_ERR_INVALID_ARGUMENT, "the module is GRU");
    assert_error(clt_gru_forward_packed(m, d, NULL, si, ui, NULL, &out, &hn),
                 CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert(out == NULL && hn == NULL);
    clt_module_free(m);
    clt_tensor_free(h0);
    clt_tensor_free(up);
    clt_tensor_free(d);
    clt_tensor_free(bs);
    clt_tensor_free(si);
    clt_tensor_free(ui);
    clt_tensor_free(x);
}

/* ---- gumbel_softmax ------------------------------------------------------------------------- */

typedef struct gumbel_ctx {
    double tau;
    int hard, dim;
} gumbel_ctx;

/* The same draws on every call: a generator of seed 9 made here. */
static clt_status gumbel_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gumbel_ctx *c = ctx;
    clt_generator *g = NULL;
    clt_status st = clt_generator_new(9, &g);
    if (st == CLT_OK)
        st = clt_gumbel_softmax(in[0], c->tau, c->hard, c->dim, g, out);
    clt_generator_free(g);
    return st;
}

Test(nn2, gumbel_softmax_against_host_softmax_of_the_draws)
{
    clt_device *dev = get_device("cpu");
    const int64_t R = 3, K = 5;
    double *x = spread_doubles((size_t)(R * K), 31);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){R, K}, x);
    for (int hard = 0; hard < 2; hard++) {
        for (int dim = 0; dim < 2; dim++) {
            clt_generator *g1 = NULL, *g2 = NULL;
            CHECK(clt_generator_new(9, &g1));
            CHECK(clt_generator_new(9, &g2));
            clt_tensor *e = NULL, *y = NULL;
            CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){R, K}, &e));
            CHECK(clt_exponential_(e, g2, 1.0));
            double *ev = read_as_f64(e), want[15], soft[15];
            /* softmax((x - log e) / 0.5) along dim, on the host */
            int64_t n = dim ? K : R, m = dim ? R : K;
            for (int64_t a = 0; a < m; a++) {
                double mx = -INFINITY, sum = 0;
                int64_t arg = 0;
                for (int64_t b = 0; b < n; b++) {
                    int64_t at = dim ? a * K + b : b * K + a;
                    soft[at] = (x[at] - log(ev[at])) / 0.5;
                    mx = soft[at] > mx ? soft[at] : mx;
                }
                for (int64_t b = 0; b < n; b++) {
                    int64_t at = dim ? a * K + b : b * K + a;
                    soft[at] = exp(soft[at] - mx);
                    sum += soft[at];
                }
                for (int64_t b = 0; b < n; b++) {
                    int64_t at = dim ? a * K + b : b * K + a;
                    soft[at] /= sum;
                    int64_t best = dim ? a * K + arg : arg * K + a;
                    if (soft[at] > soft[best])
                        arg = b;
                }
                for (int64_t b = 0; b < n; b++) {
                    int64_t at = dim ? a * K + b : b * K + a;
                    want[at] = hard ? (b == arg ? 1.0 : 0.0) : soft[at];
                }
            }
            CHECK(clt_gumbel_softmax(t, 0.5, hard, dim - 2, g1, &y));
            assert_tensor_close(y, want, 15, 1e-12, 1e-12, hard ? "hard" : "soft");
            cr_assert_eq(clt_generator_offset(g1), clt_generator_offset(g2),
                         "one number an element");
            free(ev);
            clt_tensor_free(e);
            clt_tensor_free(y);
            clt_generator_free(g1);
            clt_generator_free(g2);
        }
    }
    /* gradients: the soft one's against finite differences; the hard one's
     * (straight through) equal to the soft one's for the same draws */
    gumbel_ctx c = {0.7, 0, -1};
    gc_in in[1] = {{2, {R, K}, x, 1}};
    gradcheck(dev, gumbel_f, &c, 1, in);
    double *grads[2];
    for (int hard = 0; hard < 2; hard++) {
        gumbel_ctx ch = {0.7, hard, 0};
        clt_tensor *leaf = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){R, K}, x), *y = NULL,
                   *w = NULL, *p = NULL, *l = NULL, *gr = NULL;
        CHECK(clt_set_requires_grad(leaf, 1));
        CHECK(gumbel_f(&leaf, &y, &ch));
        w = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){R, K}, x + 0);
        CHECK(clt_mul(y, w, &p));
        CHECK(clt_sum(p, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(leaf, &gr));
        grads[hard] = read_as_f64(gr);
        clt_tensor_free(gr);
        clt_tensor_free(l);
        clt_tensor_free(p);
        clt_tensor_free(w);
        clt_tensor_free(y);
        clt_tensor_free(leaf);
    }
    for (int k = 0; k < 15; k++) {
        cr_assert(close_enough(grads[1][k], grads[0][k], 1e-12, 1e-14),
                  "hard gradient %d: %g, soft %g", k, grads[1][k], grads[0][k]);
        cr_assert(grads[0][k] != 0.0, "a gradient that could hide a missing one");
    }
    free(grads[0]);
    free(grads[1]);
    /* errors take no numbers */
    clt_generator *g = NULL;
    CHECK(clt_generator_new(9, &g));
    uint64_t at = clt_generator_offset(g);
    clt_tensor *y = (clt_tensor *)0x1, *i = NULL;
    assert_error(clt_gumbel_softmax(t, 1.0, 0, 2, g, &y), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    names_only("clt_gumbel_softmax");
    CHECK(clt_to_dtype(t, CLT_INT32, &i));
    assert_error(clt_gumbel_softmax(i, 1.0, 1, 0, g, &y), CLT_ERR_INVALID_ARGUMENT,
                 "\"exponential_\" not implemented for int32");
    cr_assert_null(y);
    cr_assert_eq(clt_generator_offset(g), at);
    clt_generator_free(g);
    clt_tensor_free(i);
    clt_tensor_free(t);
    free(x);
}

/* ---- Unflatten, Softmax2d, CosineSimilarity, PairwiseDistance ------------------------------ */

Test(nn2, small_layers_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    double *v = spread_doubles(2 * 3 * 2 * 2, 41), *w = spread_doubles(2 * 3 * 2 * 2, 42);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 2, 2}, v);
    clt_tensor *z = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 2, 2}, w);
    clt_module *m = NULL;
    clt_tensor *y = NULL;
    /* Unflatten(1, (3, -1)) of [2, 12] is [2, 3, 4], the same elements */
    clt_tensor *flat = NULL;
    CHECK(clt_reshape(x, 2, (int64_t[]){2, 12}, &flat));
    CHECK(clt_unflatten_layer(1, (int64_t[]){3, -1}, 2, &m));
    CHECK(clt_module_forward(m, flat, &y));
    assert_shape(y, 3, (int64_t[]){2, 3, 4});
    assert_tensor_close(y, v, 24, 0, 0, "Unflatten");
    clt_tensor_free(y);
    clt_module_free(m);
    /* Softmax2d: over the 3 channels at each (n, h, w) */
    double want[24];
    for (int n = 0; n < 2; n++)
        for (int p = 0; p < 4; p++) {
            double s = 0;
            for (int c = 0; c < 3; c++)
                s += exp(v[(n * 3 + c) * 4 + p]);
            for (int c = 0; c < 3; c++)
                want[(n * 3 + c) * 4 + p] = exp(v[(n * 3 + c) * 4 + p]) / s;
        }
    CHECK(clt_softmax2d_layer(&m));
    CHECK(clt_module_forward(m, x, &y));
    assert_tensor_close(y, want, 24, 1e-13, 1e-15, "Softmax2d");
    clt_tensor_free(y);
    assert_error(clt_module_forward(m, flat, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Softmax2d requires a 3D or 4D tensor as input");
    cr_assert_null(y);
    clt_module_free(m);
    /* CosineSimilarity(dim 1): over the channels */
    double cw[8];
    for (int n = 0; n < 2; n++)
        for (int p = 0; p < 4; p++) {
            double ab = 0, aa = 0, bb = 0;
            for (int c = 0; c < 3; c++) {
                double a = v[(n * 3 + c) * 4 + p], b = w[(n * 3 + c) * 4 + p];
                ab += a * b;
                aa += a * a;
                bb += b * b;
            }
            cw[n * 4 + p] = ab / (sqrt(aa) * sqrt(bb));
        }
    CHECK(clt_cosine_similarity_layer(1, 1e-8, &m));
    CHECK(clt_cosine_similarity_forward(m, x, z, &y));
    assert_shape(y, 3, (int64_t[]){2, 2, 2});
    assert_tensor_close(y, cw, 8, 1e-12, 1e-14, "CosineSimilarity");
    clt_tensor_free(y);
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "call clt_cosine_similarity_forward");
    assert_error(clt_pairwise_distance_forward(m, x, z, &y), CLT_ERR_INVALID_ARGUMENT,
                 "not a PairwiseDistance");
    names_only("clt_pairwise_distance_forward");
    clt_module_free(m);
    /* PairwiseDistance(p 3, eps 0.1, keepdim): over the last dim */
    for (int r = 0; r < 12; r++) {
        double s = 0;
        for (int k = 0; k < 2; k++)
            s += pow(fabs(v[r * 2 + k] - w[r * 2 + k] + 0.1), 3.0);
        want[r] = cbrt(s);
    }
    CHECK(clt_pairwise_distance_layer(3.0, 0.1, 1, &m));
    CHECK(clt_pairwise_distance_forward(m, x, z, &y));
    assert_shape(y, 4, (int64_t[]){2, 3, 2, 1});
    assert_tensor_close(y, want, 12, 1e-12, 1e-14, "PairwiseDistance");
    clt_tensor_free(y);
    clt_module_free(m);
    clt_tensor_free(flat);
    clt_tensor_free(x);
    clt_tensor_free(z);
    free(v);
    free(w);
}

/* ---- triplet_margin_with_distance_loss ----------------------------------------------------- */

/* The L1 distance along the last dim, counting its calls in *user. */
static clt_status l1_distance(const clt_tensor *x1, const clt_tensor *x2, void *user,
                              clt_tensor **out)
{
    (*(int *)user)++;
    return clt_pairwise_distance(x1, x2, 1.0, 0.0, 0, out);
}

static clt_status triplet_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_triplet_margin_with_distance_loss(in[0], in[1], in[2], NULL, NULL, 0.7, 1,
                                                 CLT_REDUCTION_NONE, out);
}

Test(nn2, triplet_margin_with_distance_loss_against_host)
{
    clt_device *dev = get_device("cpu");
    double *v[3];
    clt_tensor *t[3];
    for (int k = 0; k < 3; k++) {
        v[k] = spread_doubles(12, 51 + (unsigned)k);
        t[k] = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){4, 3}, v[k]);
    }
    for (int swap = 0; swap < 2; swap++) {
        double want = 0;
        for (int r = 0; r < 4; r++) {
            double d[3] = {0, 0, 0}; /* a-p, a-n, p-n */
            for (int c = 0; c < 3; c++) {
                d[0] += fabs(v[0][r * 3 + c] - v[1][r * 3 + c]);
                d[1] += fabs(v[0][r * 3 + c] - v[2][r * 3 + c]);
                d[2] += fabs(v[1][r * 3 + c] - v[2][r * 3 + c]);
            }
            double dn = swap && d[2] < d[1] ? d[2] : d[1];
            want += fmax(1.5 + d[0] - dn, 0.0);
        }
        int calls = 0;
        clt_tensor *y = NULL;
        CHECK(clt_triplet_margin_with_distance_loss(t[0], t[1], t[2], l1_distance, &calls, 1.5,
                                                    swap, CLT_REDUCTION_SUM, &y));
        cr_assert_eq(calls, swap ? 3 : 2);
        assert_tensor_close(y, &want, 1, 1e-13, 1e-14, "triplet with L1");
        clt_tensor_free(y);
    }
    gc_in in[3] = {{2, {4, 3}, v[0], 1}, {2, {4, 3}, v[1], 1}, {2, {4, 3}, v[2], 1}};
    gradcheck(dev, triplet_f, NULL, 3, in);
    for (int k = 0; k < 3; k++) {
        clt_tensor_free(t[k]);
        free(v[k]);
    }
}
