/* cells.c: the recurrent cells (torch.rnn_tanh_cell, lstm_cell, gru_cell and
 * the layers nn.RNNCell, LSTMCell, GRUCell): one step of rnn.c's cells,
 * composed of recorded ops, so that autograd gives the backward pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* i[] of a cell layer. */
enum { KIND, INPUT, HIDDEN, BIAS };

static int gates_of(int kind)
{
    return kind == CLT__CELL_LSTM ? 4 : kind == CLT__CELL_GRU ? 3 : 1;
}

static const char *cell_name(int kind)
{
    return kind == CLT__CELL_LSTM ? "LSTMCell" : kind == CLT__CELL_GRU ? "GRUCell" : "RNNCell";
}

/* Error unless t (named what) is on dev and of dtype. */
static clt_status check_like(const char *fn, const char *what, const clt_tensor *t,
                             clt_device *dev, clt_dtype dtype, bool any_dtype)
{
    if (t->dev != dev)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "%s: expected all tensors to be on the same device, but found at "
                          "least two devices: %s on %s (%s) and the input on %s (%s); move one "
                          "with clt_to",
                          fn, what, t->dev->label, t->dev->info.name, dev->label,
                          dev->info.name);
    if (!any_dtype && t->dtype != dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected %s to have the input's dtype %s, but got %s (convert "
                          "one of them)",
                          fn, what, clt_dtype_name(dtype), clt_dtype_name(t->dtype));
    return CLT_OK;
}

/* PyTorch's checks of a cell's input, states and weights (messages name
 * fn, and who, the module's class, for the input's rank). */
static clt_status check_cell(const char *fn, const char *who, int kind, const clt_tensor *x,
                             const clt_tensor *hx, const clt_tensor *cx, const clt_tensor *w_ih,
                             const clt_tensor *w_hh, const clt_tensor *b_ih,
                             const clt_tensor *b_hh)
{
    char s1[160];
    clt_status st;
    if (x->ndim != 1 && x->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s: Expected input to be 1-D or 2-D but received %d-D tensor", fn,
                          who, x->ndim);
    if (!clt__dtype_is_float(x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: the input must be floating (float32 or float64), not %s", fn,
                          clt_dtype_name(x->dtype));
    if (w_hh->ndim != 2 || w_ih->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: w_ih and w_hh must be 2-D, got %d-D and %d-D", fn, w_ih->ndim,
                          w_hh->ndim);
    int64_t H = w_hh->shape[1], G = gates_of(kind) * H;
    if (w_hh->shape[0] != G || w_ih->shape[0] != G)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: w_ih and w_hh must have %d * hidden_size = %lld rows (hidden_size "
                          "%lld, w_hh's columns), got %lld and %lld",
                          fn, gates_of(kind), (long long)G, (long long)H,
                          (long long)w_ih->shape[0], (long long)w_hh->shape[0]);
    const clt_tensor *bs[2] = {b_ih, b_hh};
    for (int k = 0; k < 2; k++)
        if (bs[k] && (bs[k]->ndim != 1 || bs[k]->shape[0] != G))
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s must be [%lld], got %s", fn,
                              k ? "b_hh" : "b_ih", (long long)G,
                              clt__shape_str(s1, sizeof s1, bs[k]->ndim, bs[k]->shape));
    const clt_tensor *all[6] = {w_ih, w_hh, b_ih, b_hh, hx, cx};
    static const char *const names[6] = {"w_ih", "w_hh", "b_ih", "b_hh", "hx", "cx"};
    /* autocast with the CPU lists casts the gate products' operands */
    bool any = clt__rnn_autocast_cpu(x, w_ih);
    for (int k = 0; k < 6; k++)
        if (all[k] && (st = check_like(fn, names[k], all[k], x->dev, x->dtype, any)) != CLT_OK)
            return st;
    if (x->shape[x->ndim - 1] != w_ih->shape[1])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: input has inconsistent input_size: got %lld expected %lld", fn,
                          (long long)x->shape[x->ndim - 1], (long long)w_ih->shape[1]);
    const clt_tensor *states[2] = {hx, cx};
    for (int k = 0; k < 2; k++) {
        const clt_tensor *s = states[k];
        if (s == NULL)
            continue;
        if (s->ndim != x->ndim)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: %s: Expected hidden%d to be %d-D as the input, but got %d-D",
                              fn, who, k, x->ndim, s->ndim);
        if (x->ndim == 2 && s->shape[0] != x->shape[0])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Input batch size %lld doesn't match hidden%d batch size %lld",
                              fn, (long long)x->shape[0], k, (long long)s->shape[0]);
        if (s->shape[s->ndim - 1] != H)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: hidden%d has inconsistent hidden_size: got %lld, expected "
                              "%lld",
                              fn, k, (long long)s->shape[s->ndim - 1], (long long)H);
    }
    return CLT_OK;
}

/* One step: *h_out (and, LSTM, *c_out) in the caller's scope. */
static clt_status cell_run(const char *fn, const char *who, int kind, const clt_tensor *x,
                           const clt_tensor *hx, const clt_tensor *cx, const clt_tensor *w_ih,
                           const clt_tensor *w_hh, const clt_tensor *b_ih,
                           const clt_tensor *b_hh, clt_tensor **h_out, clt_tensor **c_out)
{
    /* torch's rnn_tanh_cell, rnn_relu_cell, lstm_cell and gru_cell are on
     * autocast's CUDA lower-precision list; on the CPU they are composites
     * whose linears are cast (clt__rnn_linear) */
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_LOWER), 7, (x, hx, cx, w_ih, w_hh, b_ih, b_hh),
                  cell_run(fn, who, kind, CLT__AC(0), CLT__AC(1), CLT__AC(2), CLT__AC(3),
                           CLT__AC(4), CLT__AC(5), CLT__AC(6), h_out, c_out));
    clt_status st = check_cell(fn, who, kind, x, hx, cx, w_ih, w_hh, b_ih, b_hh);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    bool batched = x->ndim == 2, lstm = kind == CLT__CELL_LSTM;
    int64_t H = w_hh->shape[1];
    clt_tensor *in = (clt_tensor *)x, *h = (clt_tensor *)hx, *c = (clt_tensor *)cx;
    clt_tensor *xt = NULL, *hh = NULL;
    if (!batched)
        CLT__TRY(clt__unsqueeze_rec(fn, x, 0, &in));
    int64_t shape[2] = {in->shape[0], H};
    if (h == NULL)
        CLT__TRY(clt__full(x->dev, x->dtype, 2, shape, 0.0, &h));
    else if (!batched)
        CLT__TRY(clt__unsqueeze_rec(fn, hx, 0, &h));
    if (lstm && c == NULL)
        CLT__TRY(clt__full(x->dev, x->dtype, 2, shape, 0.0, &c));
    else if (lstm && !batched)
        CLT__TRY(clt__unsqueeze_rec(fn, cx, 0, &c));
    CLT__TRY(clt__rnn_linear(fn, in, w_ih, b_ih, &xt));
    CLT__TRY(clt__rnn_linear(fn, h, w_hh, b_hh, &hh));
    CLT__TRY(clt__rnn_cell_step(fn, kind, H, xt, hh, &h, &c));
    if (!batched) {
        CLT__TRY(clt__squeeze_rec(fn, h, 0, &h));
        if (lstm)
            CLT__TRY(clt__squeeze_rec(fn, c, 0, &c));
    }
    CLT__TRY(clt_scope_keep(h));
    if (lstm && (st = clt_scope_keep(c)) != CLT_OK) {
        clt_tensor_free(h);
        goto done;
    }
    *h_out = h;
    if (lstm)
        *c_out = c;
done:
    clt_scope_end();
    return st;
}

/* The functional forms: the outputs NULL first, then the checks. */
static clt_status functional(const char *fn, int kind, const clt_tensor *x, const clt_tensor *hx,
                             const clt_tensor *cx, const clt_tensor *w_ih,
                             const clt_tensor *w_hh, const clt_tensor *b_ih,
                             const clt_tensor *b_hh, clt_tensor **h_out, clt_tensor **c_out)
{
    if (c_out)
        *c_out = NULL;
    CLT__REQUIRE_ARG(h_out, fn);
    *h_out = NULL;
    if (kind == CLT__CELL_LSTM)
        CLT__REQUIRE_ARG(c_out, fn);
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(w_ih, fn);
    CLT__REQUIRE_ARG(w_hh, fn);
    if (kind == CLT__CELL_LSTM && (hx == NULL) != (cx == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: give both hx and cx, or neither (zeros), not %s alone", fn,
                          hx ? "hx" : "cx");
    clt_status st = cell_run(fn, cell_name(kind), kind, x, hx, cx, w_ih, w_hh, b_ih, b_hh, h_out,
                             c_out);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_rnn_cell(const clt_tensor *input, const clt_tensor *hx, const clt_tensor *w_ih,
                        const clt_tensor *w_hh, const clt_tensor *b_ih, const clt_tensor *b_hh,
                        clt_rnn_nonlinearity nonlinearity, clt_tensor **out)
{
    static const char fn[] = "clt_rnn_cell";
    if (out)
        *out = NULL;
    if (nonlinearity != CLT_RNN_TANH && nonlinearity != CLT_RNN_RELU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Unknown nonlinearity %d: expected CLT_RNN_TANH or CLT_RNN_RELU",
                          fn, (int)nonlinearity);
    return functional(fn, nonlinearity == CLT_RNN_RELU ? CLT__CELL_RELU : CLT__CELL_TANH, input,
                      hx, NULL, w_ih, w_hh, b_ih, b_hh, out, NULL);
}

clt_status clt_lstm_cell(const clt_tensor *input, const clt_tensor *hx, const clt_tensor *cx,
                         const clt_tensor *w_ih, const clt_tensor *w_hh, const clt_tensor *b_ih,
                         const clt_tensor *b_hh, clt_tensor **h_out, clt_tensor **c_out)
{
    return functional("clt_lstm_cell", CLT__CELL_LSTM, input, hx, cx, w_ih, w_hh, b_ih, b_hh,
                      h_out, c_out);
}

clt_status clt_gru_cell(const clt_tensor *input, const clt_tensor *hx, const clt_tensor *w_ih,
                        const clt_tensor *w_hh, const clt_tensor *b_ih, const clt_tensor *b_hh,
                        clt_tensor **out)
{
    return functional("clt_gru_cell", CLT__CELL_GRU, input, hx, NULL, w_ih, w_hh, b_ih, b_hh,
                      out, NULL);
}

/* ---- the layers ------------------------------------------------------------ */

/* What a forward of a cell layer gets besides its input, and gives besides
 * h': its states and c'. */
typedef struct cell_ctx {
    const clt_tensor *hx, *cx;
    clt_tensor *c_out;
} cell_ctx;

static clt_status layer_step(clt_module *m, void *ctx, const clt_tensor *x, clt_tensor **out)
{
    cell_ctx *k = ctx;
    const char *fn = m->ops->name;
    clt_status st = clt__module_check_device(m, x, fn);
    const clt_tensor *cast[2] = {x, m->params[0]};
    /* under autocast cell_run casts both: no dtype to match */
    if (st == CLT_OK && clt__dtype_is_float(x->dtype) &&
        !clt__autocast_wants(CLT__AC_BOTH(CLT__AC_LOWER), 2, cast))
        st = clt__module_check_dtype(x, m->params[0], "weight_ih",
                                     "mat1 and mat2 must have the same dtype", fn);
    if (st != CLT_OK)
        return st;
    bool bias = m->i[BIAS] != 0;
    return cell_run(fn, fn, (int)m->i[KIND], x, k->hx, k->cx, m->params[0], m->params[1],
                    bias ? m->params[2] : NULL, bias ? m->params[3] : NULL, out, &k->c_out);
}

static clt_status layer_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    cell_ctx k = {NULL, NULL, NULL};
    clt_status st = layer_step(m, &k, x, out);
    clt_tensor_free(k.c_out);
    return st;
}

static const clt__module_ops rnn_cell_ops = {"RNNCell", layer_forward, NULL, NULL};
static const clt__module_ops lstm_cell_ops = {"LSTMCell", layer_forward, NULL, NULL};
static const clt__module_ops gru_cell_ops = {"GRUCell", layer_forward, NULL, NULL};

static clt_status make(const char *fn, const clt__module_ops *ops, int kind, clt_device *dev,
                       int64_t input_size, int64_t hidden_size, int bias, clt_generator *gen,
                       clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (input_size <= 0 || hidden_size <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: input_size (%lld) and hidden_size (%lld) must be positive", fn,
                          (long long)input_size, (long long)hidden_size);
    int64_t G;
    if (__builtin_mul_overflow((int64_t)gates_of(kind), hidden_size, &G))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: hidden_size (%lld) times the %d gates passes int64", fn,
                          (long long)hidden_size, gates_of(kind));
    clt_module *m = NULL;
    clt_status st;
    uint64_t drawn = clt_generator_offset(gen);
    CLT__TRY(clt__module_new(ops, dev, &m));
    m->i[KIND] = kind;
    m->i[INPUT] = input_size;
    m->i[HIDDEN] = hidden_size;
    m->i[BIAS] = bias != 0;
    /* torch's reset_parameters: every parameter uniform in +-1/sqrt(hidden) */
    double bound = 1.0 / sqrt((double)hidden_size);
    static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    int64_t shapes[4][2] = {{G, input_size}, {G, hidden_size}, {G}, {G}};
    for (int k = 0; k < (bias ? 4 : 2); k++) {
        clt_tensor *t = NULL;
        CLT__TRY(clt__init_uniform(gen, dev, k < 2 ? 2 : 1, shapes[k], bound, &t, fn));
        CLT__TRY(clt__module_param(m, names[k], t));
    }
    *out = m;
    m = NULL;
done:
    if (st != CLT_OK) /* a failed constructor takes no numbers from gen */
        clt_generator_set_offset(gen, drawn);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_rnn_cell_layer(clt_device *dev, int64_t input_size, int64_t hidden_size, int bias,
                              clt_rnn_nonlinearity nonlinearity, clt_generator *gen,
                              clt_module **out)
{
    static const char fn[] = "clt_rnn_cell_layer";
    if (out)
        *out = NULL;
    if (nonlinearity != CLT_RNN_TANH && nonlinearity != CLT_RNN_RELU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Unknown nonlinearity %d: expected CLT_RNN_TANH or CLT_RNN_RELU",
                          fn, (int)nonlinearity);
    return make(fn, &rnn_cell_ops,
                nonlinearity == CLT_RNN_RELU ? CLT__CELL_RELU : CLT__CELL_TANH, dev, input_size,
                hidden_size, bias, gen, out);
}

clt_status clt_lstm_cell_layer(clt_device *dev, int64_t input_size, int64_t hidden_size, int bias,
                               clt_generator *gen, clt_module **out)
{
    return make("clt_lstm_cell_layer", &lstm_cell_ops, CLT__CELL_LSTM, dev, input_size,
                hidden_size, bias, gen, out);
}

clt_status clt_gru_cell_layer(clt_device *dev, int64_t input_size, int64_t hidden_size, int bias,
                              clt_generator *gen, clt_module **out)
{
    return make("clt_gru_cell_layer", &gru_cell_ops, CLT__CELL_GRU, dev, input_size, hidden_size,
                bias, gen, out);
}

/* The forwards with states: through the module's hooks, as
 * clt_module_forward. */
static clt_status forward_states(const char *fn, const clt__module_ops *ops, clt_module *m,
                                 const clt_tensor *x, const clt_tensor *hx, const clt_tensor *cx,
                                 clt_tensor **h_out, clt_tensor **c_out)
{
    if (c_out)
        *c_out = NULL;
    CLT__REQUIRE_ARG(h_out, fn);
    *h_out = NULL;
    if (ops == &lstm_cell_ops)
        CLT__REQUIRE_ARG(c_out, fn);
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(x, fn);
    if (m->ops != ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is %s; this call takes %s",
                          fn, m->ops->name, ops->name);
    if (ops == &lstm_cell_ops && (hx == NULL) != (cx == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: give both hx and cx, or neither (zeros), not %s alone", fn,
                          hx ? "hx" : "cx");
    cell_ctx k = {hx, cx, NULL};
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, x, layer_step, &k, h_out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*h_out);
        *h_out = NULL;
        clt_tensor_free(k.c_out);
        return st;
    }
    if (c_out)
        *c_out = k.c_out;
    else
        clt_tensor_free(k.c_out);
    return clt__ok();
}

clt_status clt_rnn_cell_forward(clt_module *m, const clt_tensor *input, const clt_tensor *hx,
                                clt_tensor **out)
{
    return forward_states("clt_rnn_cell_forward", &rnn_cell_ops, m, input, hx, NULL, out, NULL);
}

clt_status clt_gru_cell_forward(clt_module *m, const clt_tensor *input, const clt_tensor *hx,
                                clt_tensor **out)
{
    return forward_states("clt_gru_cell_forward", &gru_cell_ops, m, input, hx, NULL, out, NULL);
}

clt_status clt_lstm_cell_forward(clt_module *m, const clt_tensor *input, const clt_tensor *hx,
                                 const clt_tensor *cx, clt_tensor **h_out, clt_tensor **c_out)
{
    return forward_states("clt_lstm_cell_forward", &lstm_cell_ops, m, input, hx, cx, h_out,
                          c_out);
}
