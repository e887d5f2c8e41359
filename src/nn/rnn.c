/* rnn.c: the recurrent layers (torch.nn.RNN, LSTM, GRU), composed of
 * recorded ops, so that autograd gives the backward pass: each step is a
 * product with W_hh and the cell's elementwise ops, after the projection of
 * the input (one product for a layer's whole input without grad, one per
 * step while recording). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* i[] of a recurrent module. */
enum { KIND, INPUT, HIDDEN, LAYERS, BIAS, BATCH_FIRST, BIDIR };
/* i[KIND]: the kinds of nn.h's clt__rnn_cell_step */
enum { K_TANH = CLT__CELL_TANH, K_RELU = CLT__CELL_RELU, K_LSTM = CLT__CELL_LSTM,
       K_GRU = CLT__CELL_GRU };

static int gates_of(int64_t kind)
{
    return kind == K_LSTM ? 4 : kind == K_GRU ? 3 : 1;
}

/* Layer l, direction d's parameter k (0 weight_ih, 1 weight_hh, 2 bias_ih,
 * 3 bias_hh), or NULL for a bias the module has not. */
static const clt_tensor *param(const clt_module *m, int64_t l, int d, int k)
{
    int per = m->i[BIAS] ? 4 : 2;
    if (k >= per)
        return NULL;
    return m->params[(l * (m->i[BIDIR] ? 2 : 1) + d) * per + k];
}

/* t[at] along dim 0, without that dim, recorded. */
static clt_status step_of(const char *fn, const clt_tensor *t, int64_t at, clt_tensor **out)
{
    clt_tensor *one = NULL;
    clt_status st = clt_narrow(t, 0, at, 1, &one);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, one, 0, out);
    return st;
}

/* t[:, start:start + len], recorded. */
static clt_status cols(const clt_tensor *t, int64_t start, int64_t len, clt_tensor **out)
{
    return clt_narrow(t, 1, start, len, out);
}

/* One step of the cell: h (and c, LSTM) from xt = W_ih x_t + b_ih and
 * hh = W_hh h + b_hh, both [N, G H].  The new states replace *h and *c;
 * the intermediates are left in the caller's scope. */
static clt_status cell(const char *fn, int64_t kind, int64_t H, const clt_tensor *xt,
                       const clt_tensor *hh, clt_tensor **h, clt_tensor **c)
{
    clt_status st;
    clt_tensor *a, *sg, *i, *f, *g, *gt, *o, *fc, *ig, *tc, *r, *z, *xn, *hn, *rh, *npre, *n,
        *d, *zd;
    CLT__TRY(clt__add_rec(fn, xt, hh, &a));
    switch (kind) {
    case K_TANH:
        CLT__TRY(clt__tanh_rec(fn, a, h));
        break;
    case K_RELU:
        CLT__TRY(clt__relu_rec(fn, a, h));
        break;
    case K_LSTM:
        /* one sigmoid over all four parts (g's is not used) saves launches */
        CLT__TRY(clt__sigmoid_rec(fn, a, &sg));
        CLT__TRY(cols(sg, 0, H, &i));
        CLT__TRY(cols(sg, H, H, &f));
        CLT__TRY(cols(a, 2 * H, H, &gt));
        CLT__TRY(clt__tanh_rec(fn, gt, &g));
        CLT__TRY(cols(sg, 3 * H, H, &o));
        CLT__TRY(clt__mul_rec(fn, f, *c, &fc));
        CLT__TRY(clt__mul_rec(fn, i, g, &ig));
        CLT__TRY(clt__add_rec(fn, fc, ig, c));
        CLT__TRY(clt__tanh_rec(fn, *c, &tc));
        CLT__TRY(clt__mul_rec(fn, o, tc, h));
        break;
    default: /* K_GRU: h' = (1 - z) n + z h = n + z (h - n) */
        CLT__TRY(cols(a, 0, 2 * H, &gt));
        CLT__TRY(clt__sigmoid_rec(fn, gt, &sg));
        CLT__TRY(cols(sg, 0, H, &r));
        CLT__TRY(cols(sg, H, H, &z));
        CLT__TRY(cols(xt, 2 * H, H, &xn));
        CLT__TRY(cols(hh, 2 * H, H, &hn));
        CLT__TRY(clt__mul_rec(fn, r, hn, &rh));
        CLT__TRY(clt__add_rec(fn, xn, rh, &npre));
        CLT__TRY(clt__tanh_rec(fn, npre, &n));
        CLT__TRY(clt__sub_rec(fn, *h, n, &d));
        CLT__TRY(clt__mul_rec(fn, z, d, &zd));
        CLT__TRY(clt__add_rec(fn, n, zd, h));
        break;
    }
done:
    return st;
}

clt_status clt__rnn_cell_step(const char *fn, int kind, int64_t H, const clt_tensor *xt,
                              const clt_tensor *hh, clt_tensor **h, clt_tensor **c)
{
    return cell(fn, kind, H, xt, hh, h, c);
}

clt_status clt__rnn_linear(const char *fn, const clt_tensor *x, const clt_tensor *w,
                           const clt_tensor *b, clt_tensor **out)
{
    CLT__AUTOCAST(fn, CLT__AC_CPU(CLT__AC_LOWER), 3, (x, w, b),
                  clt__linear(CLT__AC(0), CLT__AC(1), CLT__AC(2), out, fn));
    return clt__linear(x, w, b, out, fn);
}

bool clt__rnn_autocast_cpu(const clt_tensor *x, const clt_tensor *w)
{
    const clt_tensor *both[2] = {x, w};
    return clt__autocast_wants(CLT__AC_CPU(CLT__AC_LOWER), 2, both);
}

/* The initial state k of s ([D L, N, H]), or zeros [N, H] (not recorded)
 * for a NULL s. */
static clt_status initial(const char *fn, const clt_tensor *s, int64_t k, const clt_tensor *like,
                          int64_t N, int64_t H, clt_tensor **out)
{
    if (s)
        return step_of(fn, s, k, out);
    int64_t shape[2] = {N, H};
    return clt__full(like->dev, like->dtype, 2, shape, 0.0, out);
}

/* One direction d of layer l over the sequence: in ([T, N, In]) projected
 * at once, or, when pieces is not NULL, each step's input pieces[t] ([N,
 * In]) projected in its step.  The hidden state of each step goes to
 * steps[T] (time order), the final ones to *h (and *c). */
static clt_status direction(const char *fn, const clt_module *m, int64_t l, int d,
                            const clt_tensor *in, clt_tensor *const *pieces,
                            const clt_tensor *h0, const clt_tensor *c0, clt_tensor **steps,
                            clt_tensor **h, clt_tensor **c)
{
    clt_status st;
    int64_t T = in->shape[0], N = in->shape[1], H = m->i[HIDDEN], kind = m->i[KIND];
    int64_t G = gates_of(kind) * H, k = l * (m->i[BIDIR] ? 2 : 1) + d;
    int64_t flat[2] = {T * N, in->shape[2]}, proj[3] = {T, N, G};
    const clt_tensor *wih = param(m, l, d, 0), *bih = param(m, l, d, 2);
    clt_tensor *x2, *xi2, *xi = NULL, *xt, *hh;
    if (pieces == NULL) {
        CLT__TRY(clt__reshape_rec(fn, in, 2, flat, &x2));
        CLT__TRY(clt__rnn_linear(fn, x2, wih, bih, &xi2));
        CLT__TRY(clt__reshape_rec(fn, xi2, 3, proj, &xi));
    }
    CLT__TRY(initial(fn, h0, k, in, N, H, h));
    if (kind == K_LSTM)
        CLT__TRY(initial(fn, c0, k, in, N, H, c));
    for (int64_t s = 0; s < T; s++) {
        int64_t t = d ? T - 1 - s : s;
        /* a step's intermediates go at its end (the graph holds what the
         * backward pass needs): without grad, memory does not grow with T */
        CLT__TRY(clt_scope_begin());
        st = pieces ? clt__rnn_linear(fn, pieces[t], wih, bih, &xt) : step_of(fn, xi, t, &xt);
        if (st == CLT_OK)
            st = clt__rnn_linear(fn, *h, param(m, l, d, 1), param(m, l, d, 3), &hh);
        if (st == CLT_OK)
            st = cell(fn, kind, H, xt, hh, h, c);
        if (st == CLT_OK)
            st = clt_scope_keep(*h);
        if (st == CLT_OK && kind == K_LSTM)
            st = clt_scope_keep(*c);
        clt_scope_end();
        CLT__TRY(st);
        steps[t] = *h;
    }
done:
    return st;
}

/* The next layer's input from this layer's steps (D directions of T
 * steps each): as one tensor [T, N, D H] (*whole), and, when pieces is not
 * NULL, step by step ([N, D H] each), with dropout's mask (NULL: none)
 * applied to either. */
static clt_status layer_output(const char *fn, clt_tensor **steps, int64_t T, int D,
                               const clt_tensor *mask, clt_tensor **whole, clt_tensor **pieces)
{
    clt_status st;
    clt_tensor *stacked[2], *joined, *mt;
    for (int d = 0; d < D; d++)
        CLT__TRY(clt_stack((const clt_tensor *const *)(steps + d * T), (size_t)T, 0,
                           &stacked[d]));
    if (D == 2)
        CLT__TRY(clt_cat((const clt_tensor *const *)stacked, 2, 2, whole));
    else
        *whole = stacked[0];
    if (mask)
        CLT__TRY(clt__mul_rec(fn, *whole, mask, whole));
    for (int64_t t = 0; pieces && t < T; t++) {
        const clt_tensor *both[2] = {steps[t], D == 2 ? steps[T + t] : NULL};
        if (D == 2)
            CLT__TRY(clt_cat(both, 2, 1, &joined));
        else
            joined = steps[t];
        if (mask) {
            CLT__TRY(step_of(fn, mask, t, &mt));
            CLT__TRY(clt__mul_rec(fn, joined, mt, &joined));
        }
        pieces[t] = joined;
    }
done:
    return st;
}

static const char *hidden_what(const clt_module *m, int which)
{
    if (m->i[KIND] != K_LSTM)
        return "hidden";
    return which ? "hidden[1]" : "hidden[0]";
}

/* PyTorch's checks of an initial state s (which: 0 h0, 1 c0) for the
 * input x. */
static clt_status check_state(const char *fn, const clt_module *m, int ndim, int64_t N,
                              const clt_tensor *s, int which, bool any_dtype)
{
    char s1[160], s2[160];
    bool batched = ndim == 3;
    if (s->ndim != ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: For %s input, hx should also be %d-D but got %d-D tensor", fn,
                          batched ? "batched 3-D" : "unbatched 2-D", ndim, s->ndim);
    int64_t want[3] = {(m->i[BIDIR] ? 2 : 1) * m->i[LAYERS], 0, m->i[HIDDEN]};
    if (batched)
        want[1] = N;
    else
        want[1] = m->i[HIDDEN];
    bool same = true;
    for (int k = 0; k < s->ndim; k++)
        same = same && s->shape[k] == want[k];
    if (!same)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Expected %s size %s, got %s", fn,
                          hidden_what(m, which), clt__shape_str(s1, sizeof s1, s->ndim, want),
                          clt__shape_str(s2, sizeof s2, s->ndim, s->shape));
    const char *name = which ? "c0" : "h0";
    if (s->dev != m->dev)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "%s: expected all tensors to be on the same device, but found at "
                          "least two devices: %s on %s (%s) and the model on %s (%s); move one "
                          "with clt_to or clt_module_to",
                          fn, name, s->dev->label, s->dev->info.name, m->dev->label,
                          m->dev->info.name);
    if (!any_dtype && s->dtype != m->params[0]->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: %s must have the dtype of the weights, but %s is %s and the "
                          "weights %s (convert it with clt_to_dtype)",
                          fn, name, name, clt_dtype_name(s->dtype),
                          clt_dtype_name(m->params[0]->dtype));
    return CLT_OK;
}

static clt_status check_input(const char *fn, const clt_module *m, const clt_tensor *x,
                              const clt_tensor *h0, const clt_tensor *c0)
{
    clt_status st = clt__module_check_device(m, x, fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim != 2 && x->ndim != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected input to be 2-D or 3-D but received %d-D tensor", fn,
                          x->ndim);
    int64_t T = x->shape[x->ndim == 3 && m->i[BATCH_FIRST] ? 1 : 0];
    if (T == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected sequence length to be larger than 0 in RNN", fn);
    if (x->shape[x->ndim - 1] != m->i[INPUT])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: input.size(-1) must be equal to input_size. Expected %lld, got "
                          "%lld",
                          fn, (long long)m->i[INPUT], (long long)x->shape[x->ndim - 1]);
    /* autocast with the CPU lists casts the gate products' operands: the
     * input, the states and the weights need not agree */
    bool any = clt__dtype_is_float(x->dtype) && clt__rnn_autocast_cpu(x, m->params[0]);
    if (!any)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, fn);
    int64_t N = x->ndim == 3 ? x->shape[m->i[BATCH_FIRST] ? 0 : 1] : 0;
    if (st == CLT_OK && h0)
        st = check_state(fn, m, x->ndim, N, h0, 0, any);
    if (st == CLT_OK && c0)
        st = check_state(fn, m, x->ndim, N, c0, 1, any);
    return st;
}

/* A recurrent forward's results to the caller's scope (or the caller):
 * the output, and h_n and c_n where asked (c_n NULL without LSTM); on a
 * failure what was kept is released and the rest goes with the scope. */
static clt_status hand_out(clt_tensor *out, clt_tensor *hn, clt_tensor *cn, bool lstm,
                           clt_tensor **output, clt_tensor **h_n, clt_tensor **c_n)
{
    clt_tensor *give[3] = {out, h_n ? hn : NULL, c_n && lstm ? cn : NULL};
    for (int k = 0; k < 3; k++) {
        clt_status st = give[k] ? clt_scope_keep(give[k]) : CLT_OK;
        if (st != CLT_OK) {
            for (int j = 0; j < k; j++)
                clt_tensor_free(give[j]);
            return st;
        }
    }
    *output = out;
    if (h_n)
        *h_n = hn;
    if (c_n)
        *c_n = lstm ? cn : NULL;
    return CLT_OK;
}

/* The whole forward: *output, *h_n and (LSTM) *c_n, the last two only
 * when their pointers are not NULL; all in the caller's scope. */
static clt_status run(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                      const clt_tensor *c0, clt_tensor **output, clt_tensor **h_n,
                      clt_tensor **c_n)
{
    const char *fn = m->ops->name;
    clt_status st = check_input(fn, m, x, h0, c0);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    bool batched = x->ndim == 3, lstm = m->i[KIND] == K_LSTM;
    int D = m->i[BIDIR] ? 2 : 1;
    int64_t L = m->i[LAYERS], nstates = D * L;
    clt_tensor **steps = NULL, **pieces = NULL, **hs = NULL, **cs = NULL;
    clt_tensor *in = NULL, *h0b = NULL, *c0b = NULL, *out = NULL, *hn = NULL, *cn = NULL;
    /* [T, N, *] inside */
    if (!batched)
        CLT__TRY(clt__unsqueeze_rec(fn, x, 1, &in));
    else if (m->i[BATCH_FIRST])
        CLT__TRY(clt__transpose_rec(fn, x, 0, 1, &in));
    else
        in = (clt_tensor *)x;
    if (h0 && !batched)
        CLT__TRY(clt__unsqueeze_rec(fn, h0, 1, &h0b));
    else
        h0b = (clt_tensor *)h0;
    if (c0 && !batched)
        CLT__TRY(clt__unsqueeze_rec(fn, c0, 1, &c0b));
    else
        c0b = (clt_tensor *)c0;
    int64_t T = in->shape[0];
    /* Recording, the input's projection is made step by step: each step's
     * part of a projection made at once would take back a gradient the
     * size of the whole (a narrow's), and the backward pass would grow with
     * the square of T.  Without grad, one product projects all steps. */
    bool by_step = clt_is_grad_enabled() && clt_requires_grad(x);
    for (int k = 0; k < m->nparams && !by_step; k++)
        by_step = clt_is_grad_enabled() && clt_requires_grad(m->params[k]);
    steps = clt__calloc((size_t)(D * T), sizeof *steps);
    pieces = by_step ? clt__calloc((size_t)T, sizeof *pieces) : NULL;
    hs = clt__calloc((size_t)nstates, sizeof *hs);
    cs = clt__calloc((size_t)nstates, sizeof *cs);
    if (steps == NULL || hs == NULL || cs == NULL || (by_step && pieces == NULL)) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t t = 0; by_step && t < T; t++)
        CLT__TRY(step_of(fn, in, t, &pieces[t]));
    for (int64_t l = 0; l < L; l++) {
        for (int d = 0; d < D; d++)
            CLT__TRY(direction(fn, m, l, d, in, pieces, h0b, c0b, steps + d * T,
                               &hs[l * D + d], &cs[l * D + d]));
        clt_tensor *mask = NULL;
        if (l + 1 < L && m->training && m->f[0] > 0) {
            /* dropout's mask (scaled by 1 / (1 - p)), the same in both ways */
            int64_t ms[3] = {T, in->shape[1], D * m->i[HIDDEN]};
            clt_tensor *ones = NULL;
            CLT__TRY(clt__full(x->dev, steps[0]->dtype, 3, ms, 1.0, &ones));
            CLT__TRY(clt__dropout_rec(fn, m->gen, m->f[0], ones, &mask));
        }
        CLT__TRY(layer_output(fn, steps, T, D, mask, &out, l + 1 < L ? pieces : NULL));
        in = out;
    }
    if (!batched)
        CLT__TRY(clt__squeeze_rec(fn, out, 1, &out));
    else if (m->i[BATCH_FIRST])
        CLT__TRY(clt__transpose_rec(fn, out, 0, 1, &out));
    clt_tensor **finals[2] = {hs, cs}, **results[2] = {&hn, &cn};
    for (int k = 0; k < (lstm ? 2 : 1); k++) {
        CLT__TRY(clt_stack((const clt_tensor *const *)finals[k], (size_t)nstates, 0,
                           results[k]));
        if (!batched)
            CLT__TRY(clt__squeeze_rec(fn, *results[k], 1, results[k]));
    }
    /* to the caller's scope (or the caller) */
    st = hand_out(out, hn, cn, lstm, output, h_n, c_n);
done:
    free(steps);
    free(pieces);
    free(hs);
    free(cs);
    clt_scope_end();
    return st;
}

/* ---- packed input: each sequence runs over its own length ---------------- */

/* The work of one step of direction_packed, inside the step's scope: the
 * sorted batch's running rows change from *rows to bs (the forward
 * direction drops the sequences that ended, keeping their final states in
 * fh[*nf] and fc[*nf]; the backward one takes in those that start, with
 * their initial states from hf and cf), then the cell runs on xin. */
static clt_status packed_step(const char *fn, const clt_module *m, int64_t l, int d,
                              int64_t bs, const clt_tensor *xin, const clt_tensor *hf,
                              const clt_tensor *cf, int64_t *rows, clt_tensor **fh,
                              clt_tensor **fc, int *nf, clt_tensor **h, clt_tensor **c)
{
    clt_status st = CLT_OK;
    int64_t H = m->i[HIDDEN], kind = m->i[KIND];
    bool lstm = kind == K_LSTM;
    clt_tensor *xt, *hh, *add;
    if (!d && bs < *rows) {
        CLT__TRY(clt_narrow(*h, 0, bs, *rows - bs, &fh[*nf]));
        CLT__TRY(clt_scope_keep(fh[*nf]));
        CLT__TRY(clt_narrow(*h, 0, 0, bs, h));
        if (lstm) {
            CLT__TRY(clt_narrow(*c, 0, bs, *rows - bs, &fc[*nf]));
            CLT__TRY(clt_scope_keep(fc[*nf]));
            CLT__TRY(clt_narrow(*c, 0, 0, bs, c));
        }
        (*nf)++;
        *rows = bs;
    } else if (d && bs > *rows) {
        CLT__TRY(clt_narrow(hf, 0, *rows, bs - *rows, &add));
        const clt_tensor *hs[2] = {*h, add};
        CLT__TRY(clt__cat_rec(fn, hs, 2, 0, h));
        if (lstm) {
            CLT__TRY(clt_narrow(cf, 0, *rows, bs - *rows, &add));
            const clt_tensor *cs[2] = {*c, add};
            CLT__TRY(clt__cat_rec(fn, cs, 2, 0, c));
        }
        *rows = bs;
    }
    CLT__TRY(clt__rnn_linear(fn, xin, param(m, l, d, 0), param(m, l, d, 2), &xt));
    CLT__TRY(clt__rnn_linear(fn, *h, param(m, l, d, 1), param(m, l, d, 3), &hh));
    CLT__TRY(cell(fn, kind, H, xt, hh, h, c));
    CLT__TRY(clt_scope_keep(*h));
    if (lstm)
        CLT__TRY(clt_scope_keep(*c));
done:
    return st;
}

/* One direction d of layer l over a packed input of T steps of bs[t]
 * sorted sequences each, pieces[t] ([bs[t], In]) the input of step t, h0
 * and c0 ([D L, B, H], sorted) or NULL.  The hidden state of each step
 * goes to steps[t] ([bs[t], H]), the final ones ([B, H], each sequence's
 * at its own last step) to *h (and *c). */
static clt_status direction_packed(const char *fn, const clt_module *m, int64_t l, int d,
                                   int64_t T, const int64_t *bs, clt_tensor *const *pieces,
                                   const clt_tensor *h0, const clt_tensor *c0,
                                   clt_tensor **steps, clt_tensor **h, clt_tensor **c)
{
    clt_status st;
    int64_t B = bs[0], H = m->i[HIDDEN], k = l * (m->i[BIDIR] ? 2 : 1) + d;
    bool lstm = m->i[KIND] == K_LSTM;
    clt_tensor *hf = NULL, *cf = NULL, *hc = NULL, *cc = NULL;
    clt_tensor **fh = clt__calloc((size_t)T + 1, sizeof *fh);
    clt_tensor **fc = clt__calloc((size_t)T + 1, sizeof *fc);
    int nf = 0;
    if (fh == NULL || fc == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    CLT__TRY(initial(fn, h0, k, pieces[0], B, H, &hf));
    if (lstm)
        CLT__TRY(initial(fn, c0, k, pieces[0], B, H, &cf));
    int64_t rows = d ? bs[T - 1] : B;
    hc = hf;
    cc = cf;
    if (rows < B) {
        CLT__TRY(clt_narrow(hf, 0, 0, rows, &hc));
        if (lstm)
            CLT__TRY(clt_narrow(cf, 0, 0, rows, &cc));
    }
    for (int64_t s = 0; s < T; s++) {
        int64_t t = d ? T - 1 - s : s;
        CLT__TRY(clt_scope_begin());
        st = packed_step(fn, m, l, d, bs[t], pieces[t], hf, cf, &rows, fh, fc, &nf, &hc, &cc);
        clt_scope_end();
        CLT__TRY(st);
        steps[t] = hc;
    }
    if (d) {
        *h = hc;
        *c = cc;
    } else {
        /* the rows that ran to the end, then those that ended before them,
         * latest first */
        fh[nf] = hc;
        fc[nf] = cc;
        for (int a = 0, b = nf; a < b; a++, b--) {
            clt_tensor *x = fh[a], *y = fc[a];
            fh[a] = fh[b];
            fc[a] = fc[b];
            fh[b] = x;
            fc[b] = y;
        }
        if (nf == 0) {
            *h = hc;
            *c = cc;
        } else {
            CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const *)fh, (size_t)nf + 1, 0, h));
            if (lstm)
                CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const *)fc, (size_t)nf + 1, 0, c));
        }
    }
done:
    free(fh);
    free(fc);
    return st;
}

/* A new int64 tensor [n] on dev from host values. */
static clt_status ints_on(const char *fn, clt_device *dev, const int64_t *v, int64_t n,
                          clt_tensor **out)
{
    return clt__tensor_from_host_in(fn, dev, CLT_INT64, 1, &n, v, out);
}

/* The whole forward over a packed input (data [sum bs, input_size], the
 * layout read by clt__packed_layout): *output (packed as the input),
 * *h_n and (LSTM) *c_n in the caller's order, the last two only when
 * their pointers are not NULL; all in the caller's scope. */
static clt_status run_packed(clt_module *m, const clt_tensor *x, const clt_tensor *batch_sizes,
                             const clt_tensor *sorted_indices,
                             const clt_tensor *unsorted_indices, const clt_tensor *h0,
                             const clt_tensor *c0, clt_tensor **output, clt_tensor **h_n,
                             clt_tensor **c_n)
{
    const char *fn = m->ops->name;
    int64_t T = 0, *bs = NULL, *pos = NULL, *inv = NULL;
    clt_status st = clt__module_check_device(m, x, fn);
    if (st == CLT_OK && x->ndim != 2)
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: a packed input's data must be 2-D [sum of lengths, input_size], "
                        "but it is %d-D",
                        fn, x->ndim);
    if (st == CLT_OK && x->shape[1] != m->i[INPUT])
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: input.size(-1) must be equal to input_size. Expected %lld, got "
                        "%lld",
                        fn, (long long)m->i[INPUT], (long long)x->shape[1]);
    bool any = st == CLT_OK && clt__dtype_is_float(x->dtype) &&
               clt__rnn_autocast_cpu(x, m->params[0]);
    if (st == CLT_OK && !any)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, fn);
    if (st == CLT_OK)
        st = clt__packed_layout(fn, x, batch_sizes, sorted_indices, unsorted_indices, &T, &bs,
                                &pos);
    if (st == CLT_OK && h0)
        st = check_state(fn, m, 3, bs[0], h0, 0, any);
    if (st == CLT_OK && c0)
        st = check_state(fn, m, 3, bs[0], c0, 1, any);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK) {
        free(bs);
        free(pos);
        return st;
    }
    bool lstm = m->i[KIND] == K_LSTM, identity = true;
    int D = m->i[BIDIR] ? 2 : 1;
    int64_t L = m->i[LAYERS], nstates = D * L, B = bs[0], DH = D * m->i[HIDDEN];
    clt_tensor **steps = NULL, **pieces = NULL, **hs = NULL, **cs = NULL;
    clt_tensor *h0s = (clt_tensor *)h0, *c0s = (clt_tensor *)c0, *out = NULL, *hn = NULL,
               *cn = NULL, *perm = NULL, *back = NULL, *mask = NULL, *mt = NULL;
    steps = clt__calloc((size_t)(D * T), sizeof *steps);
    pieces = clt__calloc((size_t)T, sizeof *pieces);
    hs = clt__calloc((size_t)nstates, sizeof *hs);
    cs = clt__calloc((size_t)nstates, sizeof *cs);
    inv = clt__calloc((size_t)B, sizeof *inv);
    if (steps == NULL || pieces == NULL || hs == NULL || cs == NULL || inv == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t j = 0; j < B; j++) {
        inv[pos[j]] = j;
        identity = identity && pos[j] == j;
    }
    /* the initial states in the sorted order, as torch's apply_permutation */
    if (!identity) {
        CLT__TRY(ints_on(fn, x->dev, inv, B, &perm));
        CLT__TRY(ints_on(fn, x->dev, pos, B, &back));
        if (h0)
            CLT__TRY(clt__index_select_rec(fn, h0, 1, perm, &h0s));
        if (c0)
            CLT__TRY(clt__index_select_rec(fn, c0, 1, perm, &c0s));
    }
    for (int64_t t = 0, off = 0; t < T; off += bs[t], t++)
        CLT__TRY(clt_narrow(x, 0, off, bs[t], &pieces[t]));
    for (int64_t l = 0; l < L; l++) {
        for (int d = 0; d < D; d++)
            CLT__TRY(direction_packed(fn, m, l, d, T, bs, pieces, h0s, c0s, steps + d * T,
                                      &hs[l * D + d], &cs[l * D + d]));
        mask = NULL;
        if (l + 1 < L && m->training && m->f[0] > 0) {
            int64_t ms[2] = {x->shape[0], DH};
            clt_tensor *ones = NULL;
            CLT__TRY(clt__full(x->dev, steps[0]->dtype, 2, ms, 1.0, &ones));
            CLT__TRY(clt__dropout_rec(fn, m->gen, m->f[0], ones, &mask));
        }
        for (int64_t t = 0, off = 0; t < T; off += bs[t], t++) {
            if (D == 2) {
                const clt_tensor *both[2] = {steps[t], steps[T + t]};
                CLT__TRY(clt__cat_rec(fn, both, 2, 1, &pieces[t]));
            } else {
                pieces[t] = steps[t];
            }
            if (mask) {
                CLT__TRY(clt_narrow(mask, 0, off, bs[t], &mt));
                CLT__TRY(clt__mul_rec(fn, pieces[t], mt, &pieces[t]));
            }
        }
    }
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const *)pieces, (size_t)T, 0, &out));
    clt_tensor **finals[2] = {hs, cs}, **results[2] = {&hn, &cn};
    for (int k = 0; k < (lstm ? 2 : 1); k++) {
        CLT__TRY(clt_stack((const clt_tensor *const *)finals[k], (size_t)nstates, 0,
                           results[k]));
        if (!identity)
            CLT__TRY(clt__index_select_rec(fn, *results[k], 1, back, results[k]));
    }
    st = hand_out(out, hn, cn, lstm, output, h_n, c_n);
done:
    free(steps);
    free(pieces);
    free(hs);
    free(cs);
    free(bs);
    free(pos);
    free(inv);
    clt_scope_end();
    return st;
}

static clt_status forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return run(m, x, NULL, NULL, out, NULL, NULL);
}

static const clt__module_ops rnn_ops = {"RNN", forward, NULL, NULL};
static const clt__module_ops lstm_ops = {"LSTM", forward, NULL, NULL};
static const clt__module_ops gru_ops = {"GRU", forward, NULL, NULL};

/* What the public forwards give run besides x: the initial states and
 * where the final ones go. */
typedef struct rnn_ctx {
    const clt_tensor *h0, *c0;
    clt_tensor **h_n, **c_n;
    /* a packed input's layout (batch_sizes NULL: a padded input) */
    const clt_tensor *batch_sizes, *sorted_indices, *unsorted_indices;
} rnn_ctx;

static clt_status run_multi(clt_module *m, void *ctx, const clt_tensor *x, clt_tensor **out);

/* Under autocast torch's recurrent layers run their cells in float16 (the
 * cells, and cuDNN's RNN, are on its lower-precision list): x, the initial
 * states and the parameters cast, the module run through a copy that reads
 * the cast parameters.  false when autocast casts nothing here. */
static bool run_autocast(clt_module *m, rnn_ctx *k, const clt_tensor *x, clt_tensor **out,
                         clt_status *st)
{
    if (clt__autocast_device(NULL) == NULL)
        return false;
    size_t n = 3 + (size_t)m->nparams;
    const clt_tensor **ts = clt__calloc(n, sizeof *ts);
    if (ts == NULL) {
        *st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", m->ops->name);
        return true;
    }
    ts[0] = x;
    ts[1] = k->h0;
    ts[2] = k->c0;
    for (int i = 0; i < m->nparams; i++)
        ts[3 + i] = m->params[i];
    bool wants = clt__autocast_wants(CLT__AC_CUDA(CLT__AC_LOWER), (int)n, ts);
    if (wants) {
        const clt_tensor **cast = NULL;
        clt_tensor **tmp = NULL;
        *st = clt__autocast_list_begin(m->ops->name, CLT__AC_CUDA(CLT__AC_LOWER), n, ts, &cast,
                                       &tmp);
        if (*st == CLT_OK) {
            clt_module mc = *m;
            rnn_ctx kc = *k;
            mc.params = (clt_tensor **)(cast + 3);
            kc.h0 = cast[1];
            kc.c0 = cast[2];
            *st = run_multi(&mc, &kc, cast[0], out);
        }
        *st = clt__autocast_list_end(*st, n, cast, tmp);
    }
    free(ts);
    return wants;
}

static clt_status run_multi(clt_module *m, void *ctx, const clt_tensor *x, clt_tensor **out)
{
    rnn_ctx *k = ctx;
    clt_status st;
    if (run_autocast(m, k, x, out, &st))
        return st;
    if (k->batch_sizes)
        return run_packed(m, x, k->batch_sizes, k->sorted_indices, k->unsorted_indices, k->h0,
                          k->c0, out, k->h_n, k->c_n);
    return run(m, x, k->h0, k->c0, out, k->h_n, k->c_n);
}

/* The public forwards: m must be of ops; through m's hooks, on x and the
 * output. */
static clt_status forward_all(const char *fn, const clt__module_ops *ops, clt_module *m,
                              const clt_tensor *x, const rnn_ctx *packed,
                              const clt_tensor *h0, const clt_tensor *c0,
                              clt_tensor **output, clt_tensor **h_n, clt_tensor **c_n)
{
    /* the states first: a NULL output is refused with every output NULL */
    if (h_n)
        *h_n = NULL;
    if (c_n)
        *c_n = NULL;
    CLT__REQUIRE_ARG(output, fn);
    *output = NULL;
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(x, fn);
    if (m->ops != ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is %s; this call takes %s",
                          fn, m->ops->name, ops->name);
    if (ops == &lstm_ops && (h0 == NULL) != (c0 == NULL))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: give both h0 and c0, or neither (zeros), not %s alone", fn,
                          h0 ? "h0" : "c0");
    rnn_ctx k = {h0, c0, h_n, c_n, NULL, NULL, NULL};
    if (packed) {
        CLT__REQUIRE_ARG(packed->batch_sizes, fn);
        k.batch_sizes = packed->batch_sizes;
        k.sorted_indices = packed->sorted_indices;
        k.unsorted_indices = packed->unsorted_indices;
    }
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, x, run_multi, &k, output), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*output);
        *output = NULL;
        if (h_n) {
            clt_tensor_free(*h_n);
            *h_n = NULL;
        }
        if (c_n) {
            clt_tensor_free(*c_n);
            *c_n = NULL;
        }
        return clt__error_in(st, fn);
    }
    return clt__ok();
}

clt_status clt_lstm_forward(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                            const clt_tensor *c0, clt_tensor **output, clt_tensor **h_n,
                            clt_tensor **c_n)
{
    return forward_all("clt_lstm_forward", &lstm_ops, m, x, NULL, h0, c0, output, h_n, c_n);
}

clt_status clt_rnn_forward(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                           clt_tensor **output, clt_tensor **h_n)
{
    return forward_all("clt_rnn_forward", &rnn_ops, m, x, NULL, h0, NULL, output, h_n, NULL);
}

clt_status clt_gru_forward(clt_module *m, const clt_tensor *x, const clt_tensor *h0,
                           clt_tensor **output, clt_tensor **h_n)
{
    return forward_all("clt_gru_forward", &gru_ops, m, x, NULL, h0, NULL, output, h_n, NULL);
}

clt_status clt_lstm_forward_packed(clt_module *m, const clt_tensor *data,
                                   const clt_tensor *batch_sizes,
                                   const clt_tensor *sorted_indices,
                                   const clt_tensor *unsorted_indices, const clt_tensor *h0,
                                   const clt_tensor *c0, clt_tensor **output, clt_tensor **h_n,
                                   clt_tensor **c_n)
{
    rnn_ctx p = {NULL, NULL, NULL, NULL, batch_sizes, sorted_indices, unsorted_indices};
    return forward_all("clt_lstm_forward_packed", &lstm_ops, m, data, &p, h0, c0, output, h_n,
                       c_n);
}

clt_status clt_rnn_forward_packed(clt_module *m, const clt_tensor *data,
                                  const clt_tensor *batch_sizes, const clt_tensor *sorted_indices,
                                  const clt_tensor *unsorted_indices, const clt_tensor *h0,
                                  clt_tensor **output, clt_tensor **h_n)
{
    rnn_ctx p = {NULL, NULL, NULL, NULL, batch_sizes, sorted_indices, unsorted_indices};
    return forward_all("clt_rnn_forward_packed", &rnn_ops, m, data, &p, h0, NULL, output, h_n,
                       NULL);
}

clt_status clt_gru_forward_packed(clt_module *m, const clt_tensor *data,
                                  const clt_tensor *batch_sizes, const clt_tensor *sorted_indices,
                                  const clt_tensor *unsorted_indices, const clt_tensor *h0,
                                  clt_tensor **output, clt_tensor **h_n)
{
    rnn_ctx p = {NULL, NULL, NULL, NULL, batch_sizes, sorted_indices, unsorted_indices};
    return forward_all("clt_gru_forward_packed", &gru_ops, m, data, &p, h0, NULL, output, h_n,
                       NULL);
}

/* The constructors: the parameters of each layer and direction, in
 * PyTorch's order, all uniform in +-1/sqrt(hidden_size). */
static clt_status make(const char *fn, const clt__module_ops *ops, int64_t kind, clt_device *dev,
                       const clt_rnn_opts *opts, clt_generator *gen, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(opts, fn);
    const clt_rnn_opts *o = opts;
    if (o->input_size <= 0 || o->hidden_size <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: input_size (%lld) and hidden_size (%lld) must be positive", fn,
                          (long long)o->input_size, (long long)o->hidden_size);
    /* each layer's names ("weight_ih_l9999_reverse") fit the module's */
    if (o->num_layers < 1 || o->num_layers > 10000)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: num_layers %lld: expected 1 to 10000",
                          fn, (long long)o->num_layers);
    if (!(o->dropout >= 0.0 && o->dropout <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dropout should be a number in range [0, 1] representing the "
                          "probability of an element being zeroed, not %g",
                          fn, o->dropout);
    if (kind != K_LSTM && kind != K_GRU && o->nonlinearity != CLT_RNN_TANH &&
        o->nonlinearity != CLT_RNN_RELU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Unknown nonlinearity %d: expected CLT_RNN_TANH or CLT_RNN_RELU",
                          fn, o->nonlinearity);
    if (kind != K_LSTM && kind != K_GRU)
        kind = o->nonlinearity == CLT_RNN_RELU ? K_RELU : K_TANH;
    clt_module *m = NULL;
    clt_status st;
    uint64_t drawn = clt_generator_offset(gen);
    CLT__TRY(clt__module_new(ops, dev, &m));
    int D = o->bidirectional ? 2 : 1;
    int64_t H = o->hidden_size, G = gates_of(kind) * H;
    m->i[KIND] = kind;
    m->i[INPUT] = o->input_size;
    m->i[HIDDEN] = H;
    m->i[LAYERS] = o->num_layers;
    m->i[BIAS] = o->bias != 0;
    m->i[BATCH_FIRST] = o->batch_first != 0;
    m->i[BIDIR] = D == 2;
    m->f[0] = o->dropout;
    m->gen = gen;
    double bound = 1.0 / sqrt((double)H);
    for (int64_t l = 0; l < o->num_layers; l++) {
        for (int d = 0; d < D; d++) {
            static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
            int64_t shapes[4][2] = {{G, l ? D * H : o->input_size}, {G, H}, {G}, {G}};
            for (int k = 0; k < (o->bias ? 4 : 2); k++) {
                char name[64];
                clt_tensor *t = NULL;
                snprintf(name, sizeof name, "%s_l%lld%s", names[k], (long long)l,
                         d ? "_reverse" : "");
                CLT__TRY(clt__init_uniform(gen, dev, k < 2 ? 2 : 1, shapes[k], bound, &t, fn));
                CLT__TRY(clt__module_param(m, name, t));
            }
        }
    }
    *out = m;
    m = NULL;
done:
    if (st != CLT_OK) /* a failed constructor takes no numbers from gen */
        clt_generator_set_offset(gen, drawn);
    clt_module_free(m);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_rnn_layer(clt_device *dev, const clt_rnn_opts *opts, clt_generator *gen,
                         clt_module **out)
{
    return make("clt_rnn_layer", &rnn_ops, K_TANH, dev, opts, gen, out);
}

clt_status clt_lstm_layer(clt_device *dev, const clt_rnn_opts *opts, clt_generator *gen,
                          clt_module **out)
{
    return make("clt_lstm_layer", &lstm_ops, K_LSTM, dev, opts, gen, out);
}

clt_status clt_gru_layer(clt_device *dev, const clt_rnn_opts *opts, clt_generator *gen,
                         clt_module **out)
{
    return make("clt_gru_layer", &gru_ops, K_GRU, dev, opts, gen, out);
}
