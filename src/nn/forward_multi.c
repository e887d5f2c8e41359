/* forward_multi.c: clt_module_forward_multi, torch's model(*args): one
 * entry point for the modules of several inputs or outputs (the custom
 * ones of clt_module_custom_multi, and the layers whose own calls take
 * them: clt_lstm_forward, clt_multihead_attention, ...), the others
 * running as clt_module_forward. */
#include <stdio.h>
#include <string.h>

#include "nn/nn.h"

/* A layer's forward on its inputs in (max_in of them, those not given
 * NULL), giving every result it has in res (max_out slots, NULL before;
 * want: how many the caller asked for). */
typedef clt_status (*run_fn)(clt_module *m, const clt_tensor *const *in, size_t want,
                             clt_tensor **res);

static clt_status run_rnn(clt_module *m, const clt_tensor *const *in, size_t want,
                          clt_tensor **res)
{
    (void)want;
    return clt_rnn_forward(m, in[0], in[1], &res[0], &res[1]);
}

static clt_status run_gru(clt_module *m, const clt_tensor *const *in, size_t want,
                          clt_tensor **res)
{
    (void)want;
    return clt_gru_forward(m, in[0], in[1], &res[0], &res[1]);
}

static clt_status run_lstm(clt_module *m, const clt_tensor *const *in, size_t want,
                           clt_tensor **res)
{
    (void)want;
    return clt_lstm_forward(m, in[0], in[1], in[2], &res[0], &res[1], &res[2]);
}

static clt_status run_rnn_cell(clt_module *m, const clt_tensor *const *in, size_t want,
                               clt_tensor **res)
{
    (void)want;
    return clt_rnn_cell_forward(m, in[0], in[1], &res[0]);
}

static clt_status run_gru_cell(clt_module *m, const clt_tensor *const *in, size_t want,
                               clt_tensor **res)
{
    (void)want;
    return clt_gru_cell_forward(m, in[0], in[1], &res[0]);
}

static clt_status run_lstm_cell(clt_module *m, const clt_tensor *const *in, size_t want,
                                clt_tensor **res)
{
    (void)want;
    return clt_lstm_cell_forward(m, in[0], in[1], in[2], &res[0], &res[1]);
}

/* The weights only when asked for (need_weights), averaged as torch's default. */
static clt_status run_mha(clt_module *m, const clt_tensor *const *in, size_t want,
                          clt_tensor **res)
{
    return clt_multihead_attention(m, in[0], in[1], in[2], in[3], in[4], want > 1, 1, &res[0],
                                   &res[1]);
}

static clt_status run_bilinear(clt_module *m, const clt_tensor *const *in, size_t want,
                               clt_tensor **res)
{
    (void)want;
    return clt_bilinear_forward(m, in[0], in[1], &res[0]);
}

static clt_status run_cosine(clt_module *m, const clt_tensor *const *in, size_t want,
                             clt_tensor **res)
{
    (void)want;
    return clt_cosine_similarity_forward(m, in[0], in[1], &res[0]);
}

static clt_status run_pairwise(clt_module *m, const clt_tensor *const *in, size_t want,
                               clt_tensor **res)
{
    (void)want;
    return clt_pairwise_distance_forward(m, in[0], in[1], &res[0]);
}

static clt_status run_bag(clt_module *m, const clt_tensor *const *in, size_t want,
                          clt_tensor **res)
{
    (void)want;
    return clt_embedding_bag_forward(m, in[0], in[1], in[2], &res[0]);
}

static clt_status run_als(clt_module *m, const clt_tensor *const *in, size_t want,
                          clt_tensor **res)
{
    (void)want;
    return clt_adaptive_log_softmax_forward(m, in[0], in[1], &res[0], &res[1]);
}

static clt_status run_unpool(clt_module *m, const clt_tensor *const *in, size_t want,
                             clt_tensor **res)
{
    (void)want;
    return clt_max_unpool_forward(m, in[0], in[1], NULL, &res[0]);
}

static clt_status run_encoder(clt_module *m, const clt_tensor *const *in, size_t want,
                              clt_tensor **res)
{
    (void)want;
    return clt_transformer_encoder_forward(m, in[0], in[1], in[2], &res[0]);
}

static clt_status run_decoder(clt_module *m, const clt_tensor *const *in, size_t want,
                              clt_tensor **res)
{
    (void)want;
    return clt_transformer_decoder_forward(m, in[0], in[1], in[2], in[3], in[4], in[5],
                                           &res[0]);
}

static clt_status run_transformer(clt_module *m, const clt_tensor *const *in, size_t want,
                                  clt_tensor **res)
{
    (void)want;
    return clt_transformer_forward(m, in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7],
                                   &res[0]);
}

/* What a layer takes: min_in to max_in inputs, min_out to max_out outputs. */
typedef struct layer_io {
    const char *name; /* its ops' name (a custom module's are never looked up here) */
    size_t min_in, max_in, min_out, max_out;
    const char *args; /* for messages: "(input, h0) -> (output, h_n)" */
    run_fn run;
} layer_io;

enum { MAX_IN = 8, MAX_OUT = 3 };

static const layer_io layers[] = {
    {"RNN", 1, 2, 1, 2, "(input, h0) -> (output, h_n)", run_rnn},
    {"GRU", 1, 2, 1, 2, "(input, h0) -> (output, h_n)", run_gru},
    {"LSTM", 1, 3, 1, 3, "(input, h0, c0) -> (output, h_n, c_n)", run_lstm},
    {"RNNCell", 1, 2, 1, 1, "(input, hx) -> h'", run_rnn_cell},
    {"GRUCell", 1, 2, 1, 1, "(input, hx) -> h'", run_gru_cell},
    {"LSTMCell", 1, 3, 1, 2, "(input, hx, cx) -> (h', c')", run_lstm_cell},
    {"MultiheadAttention", 3, 5, 1, 2,
     "(query, key, value, key_padding_mask, attn_mask) -> (attn_output, attn_weights)", run_mha},
    {"Bilinear", 2, 2, 1, 1, "(input1, input2) -> out", run_bilinear},
    {"CosineSimilarity", 2, 2, 1, 1, "(x1, x2) -> out", run_cosine},
    {"PairwiseDistance", 2, 2, 1, 1, "(x1, x2) -> out", run_pairwise},
    {"EmbeddingBag", 1, 3, 1, 1, "(input, offsets, per_sample_weights) -> out", run_bag},
    {"AdaptiveLogSoftmaxWithLoss", 2, 2, 1, 2, "(input, target) -> (output, loss)", run_als},
    {"MaxUnpool1d", 2, 2, 1, 1, "(input, indices) -> out", run_unpool},
    {"MaxUnpool2d", 2, 2, 1, 1, "(input, indices) -> out", run_unpool},
    {"MaxUnpool3d", 2, 2, 1, 1, "(input, indices) -> out", run_unpool},
    {"TransformerEncoderLayer", 1, 3, 1, 1, "(src, mask, src_key_padding_mask) -> out",
     run_encoder},
    {"TransformerEncoder", 1, 3, 1, 1, "(src, mask, src_key_padding_mask) -> out", run_encoder},
    {"TransformerDecoderLayer", 2, 6, 1, 1,
     "(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask) -> "
     "out",
     run_decoder},
    {"TransformerDecoder", 2, 6, 1, 1,
     "(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask) -> "
     "out",
     run_decoder},
    {"Transformer", 2, 8, 1, 1,
     "(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask, "
     "memory_key_padding_mask) -> out",
     run_transformer},
};

static const layer_io *layer_of(const clt_module *m)
{
    if (clt__module_is_custom(m)) /* named by its maker: never a layer's name */
        return NULL;
    for (size_t k = 0; k < sizeof layers / sizeof layers[0]; k++)
        if (strcmp(m->ops->name, layers[k].name) == 0)
            return &layers[k];
    return NULL;
}

/* "2 inputs", "1 to 3 outputs" */
static const char *count_text(char *buf, size_t size, size_t lo, size_t hi, const char *what)
{
    if (lo == hi)
        snprintf(buf, size, "%zu %s%s", lo, what, lo == 1 ? "" : "s");
    else
        snprintf(buf, size, "%zu to %zu %ss", lo, hi, what);
    return buf;
}

static clt_status arity_error(const char *fn, const char *name, size_t lo_in, size_t hi_in,
                              size_t lo_out, size_t hi_out, const char *args, size_t n_in,
                              size_t n_out)
{
    char a[40], b[40];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: %s takes %s and gives %s%s%s; %zu input%s and %zu output%s given", fn,
                      name, count_text(a, sizeof a, lo_in, hi_in, "input"),
                      count_text(b, sizeof b, lo_out, hi_out, "output"), args ? " " : "",
                      args ? args : "", n_in, n_in == 1 ? "" : "s", n_out,
                      n_out == 1 ? "" : "s");
}

clt_status clt_module_forward_multi(clt_module *m, const clt_tensor *const *inputs, size_t n_in,
                                    clt_tensor **outputs, size_t n_out)
{
    static const char fn[] = "clt_module_forward_multi";
    CLT__REQUIRE_ARG(outputs, fn);
    for (size_t j = 0; j < n_out; j++)
        outputs[j] = NULL;
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(inputs, fn);
    size_t c_in, c_out;
    const layer_io *L = NULL;
    if (clt__custom_multi_arity(m, &c_in, &c_out)) {
        if (n_in != c_in || n_out != c_out)
            return arity_error(fn, m->ops->name, c_in, c_in, c_out, c_out, NULL, n_in, n_out);
    } else if ((L = layer_of(m)) != NULL) {
        if (n_in < L->min_in || n_in > L->max_in || n_out < L->min_out || n_out > L->max_out)
            return arity_error(fn, L->name, L->min_in, L->max_in, L->min_out, L->max_out,
                               L->args, n_in, n_out);
    } else if (n_in != 1 || n_out != 1) {
        return arity_error(fn, m->ops->name, 1, 1, 1, 1, "(x) -> y", n_in, n_out);
    }
    if (inputs[0] == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT,
                          "%s: %s: the first input is NULL (it is required: the hooks see it)",
                          fn, m->ops->name);
    clt__forward_begin();
    clt_status st;
    if (L == NULL && n_out == 1 && !clt__custom_multi_arity(m, &c_in, &c_out)) {
        st = clt__module_call(m, inputs[0], &outputs[0]);
    } else if (L == NULL) {
        st = clt__custom_call_multi(m, inputs, outputs);
    } else {
        const clt_tensor *in[MAX_IN] = {NULL};
        clt_tensor *res[MAX_OUT] = {NULL};
        for (size_t j = 0; j < n_in; j++)
            in[j] = inputs[j];
        st = L->run(m, in, n_out, res);
        /* the layer's call refusing its arguments names itself: name this one */
        if (st != CLT_OK && strncmp(clt_last_error(), "clt_", 4) == 0)
            st = clt__error_as(st, fn);
        for (size_t j = 0; j < MAX_OUT; j++) {
            if (j < n_out && st == CLT_OK)
                outputs[j] = res[j];
            else
                clt_tensor_free(res[j]);
        }
    }
    st = clt__forward_end(st, fn);
    if (st != CLT_OK)
        for (size_t j = 0; j < n_out; j++) {
            clt_tensor_free(outputs[j]);
            outputs[j] = NULL;
        }
    return st;
}
