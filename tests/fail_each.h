/* fail_each.h: real work, shared by the tests that make one kind of call
 * fail at each point of it in turn (test_hostalloc.c, test_launchfail.c).
 * The call that meets the refusal fails with a status, a message and no
 * result; made again, it and the rest of the work give bit for bit what a
 * run without failures gives, and no device memory is left behind.
 *
 * The including file defines `failing` before including this header. */
#ifndef CLT_TESTS_FAIL_EACH_H
#define CLT_TESTS_FAIL_EACH_H

#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "cltensor/dlpack.h"
#include "helpers.h"

/* The kind of call refused. */
typedef struct failing_kind {
    const char *what; /* "host allocation", for messages */
    /* The hook: lets `pass` calls through and refuses what follows
     * (negative: off); returns the count still to pass, negative once
     * a call has been refused. */
    long (*refuse)(long pass);
    /* Checks the status and message of a call that met the refusal. */
    void (*check)(long pass, clt_status st, const char *call);
    /* Whether every refusal must make a call fail (none may be skipped). */
    bool reported;
} failing_kind;

static const failing_kind failing;

typedef struct run {
    long pass;          /* calls of the kind let through before the refusal */
    int failures;       /* calls that met a refusal */
    const char *failed; /* the first of them */
    unsigned char *bytes; /* every result of the run, in order */
    size_t len, cap;
    char dir[64]; /* for the files written */
    /* The work makes calls whose failure is retried at once (the loader's
     * head start on the next batch): a refusal may fail no call. */
    bool retried;
} run;

/* A call met a refusal: it must say so and hand out nothing.  The limit is
 * lifted for the rest of the run. */
static void check_failure(run *r, clt_status st, const char *call, bool out_null)
{
    cr_assert_geq(r->pass, 0, "%s failed with nothing refused: %s: %s", call,
                  clt_status_name(st), clt_last_error());
    cr_assert_eq(clt_last_status(), st, "%s %ld: %s", failing.what, r->pass, call);
    cr_assert_neq(clt_last_error()[0], '\0', "%s %ld: %s failed with no message",
                  failing.what, r->pass, call);
    failing.check(r->pass, st, call);
    cr_assert(out_null, "%s %ld: %s failed but handed out a result", failing.what, r->pass,
              call);
    if (r->failures++ == 0)
        r->failed = call;
    failing.refuse(-1);
}

static int sentinel;

/* Runs call; when it fails, checks the failure (v, the result it hands
 * out, must be NULL) and makes the call again, which must succeed. */
#define STEP_(r, call, reset, is_null)                                                   \
    do {                                                                                 \
        reset;                                                                           \
        clt_status st_ = (call);                                                         \
        if (st_ != CLT_OK) {                                                             \
            check_failure(r, st_, #call, is_null);                                       \
            reset;                                                                       \
            CHECK(call);                                                                 \
        }                                                                                \
    } while (0)
#define STEP(r, call) STEP_(r, call, (void)0, true)
#define STEP_OUT(r, v, call) STEP_(r, call, (v) = (void *)&sentinel, (v) == NULL)

static void keep_bytes(run *r, const void *p, size_t n)
{
    if (r->len + n > r->cap) {
        r->cap = (r->len + n) * 2;
        r->bytes = realloc(r->bytes, r->cap);
        cr_assert_not_null(r->bytes);
    }
    memcpy(r->bytes + r->len, p, n);
    r->len += n;
}

/* Keeps t's shape, dtype and values. */
static void keep(run *r, const clt_tensor *t)
{
    int nd = clt_tensor_ndim(t);
    clt_dtype dt = clt_tensor_dtype(t);
    keep_bytes(r, &nd, sizeof nd);
    keep_bytes(r, &dt, sizeof dt);
    keep_bytes(r, clt_tensor_shape(t), (size_t)nd * sizeof(int64_t));
    size_t nb = clt_tensor_nbytes(t);
    void *h = malloc(nb ? nb : 1);
    cr_assert_not_null(h);
    STEP(r, clt_tensor_read(t, h, nb));
    keep_bytes(r, h, nb);
    free(h);
}

/* Keeps the gradient of t. */
static void keep_grad(run *r, const clt_tensor *t)
{
    clt_tensor *g;
    STEP_OUT(r, g, clt_grad(t, &g));
    keep(r, g);
    clt_tensor_free(g);
}

/* Keeps t as clt_tensor_format prints it. */
static void keep_text(run *r, const clt_tensor *t)
{
    char *text;
    STEP_OUT(r, text, clt_tensor_format(t, &text));
    keep_bytes(r, text, strlen(text));
    clt_free(text);
}

/* A backward pass frees the saved tensors of the nodes it has run, so one
 * that failed half-way may leave a graph that cannot run again; then it
 * says so and changed no gradient, and the caller builds the graph again
 * (false).  With retain (the graph of a forward that changes state, which
 * cannot simply run again), the same graph must run again. */
static bool backward_(run *r, clt_tensor *l, int retain)
{
    clt_status st = clt_backward(l, NULL, retain);
    if (st == CLT_OK)
        return true;
    check_failure(r, st, "clt_backward", true);
    st = clt_backward(l, NULL, retain);
    cr_assert(st == CLT_OK || !retain, "%s %ld: %s", failing.what, r->pass, clt_last_error());
    if (st == CLT_OK)
        return true;
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "second time"), "%s", clt_last_error());
    return false;
}

static bool backward(run *r, clt_tensor *l)
{
    return backward_(r, l, 0);
}

static clt_device *pick(run *r)
{
    clt_device *dev = (void *)&sentinel;
    clt_status st = clt_device_get("cpu", &dev);
    if (st == CLT_ERR_NO_PLATFORM)
        cr_skip_test("no OpenCL platform: %s", clt_last_error());
    if (st != CLT_OK) {
        check_failure(r, st, "clt_device_get", dev == NULL);
        CHECK(clt_device_get("cpu", &dev));
    }
    char *report;
    STEP_OUT(r, report, clt_device_explain("cpu", &report));
    clt_free(report);
    return dev;
}

static clt_tensor *from_host(run *r, clt_device *dev, int nd, const int64_t *shape,
                             const float *v)
{
    clt_tensor *t;
    STEP_OUT(r, t, clt_tensor_from_host(dev, CLT_FLOAT32, nd, shape, v, &t));
    return t;
}

/* Tensors, ops, a matmul, autograd, printing and the error path. */
static void tensor_work(run *r)
{
    clt_device *dev = pick(r);
    float av[12], bv[12];
    for (int i = 0; i < 12; i++) {
        av[i] = (float)(i % 5) * 0.5f - 1.0f;
        bv[i] = (float)(i % 7) * 0.25f - 0.5f;
    }
    clt_tensor *a = from_host(r, dev, 2, (int64_t[]){3, 4}, av);
    clt_tensor *b = from_host(r, dev, 2, (int64_t[]){4, 3}, bv);
    STEP(r, clt_set_requires_grad(a, 1));
    STEP(r, clt_set_requires_grad(b, 1));
    clt_tensor *c, *d, *e, *l, *g;
    for (;;) {
        STEP_OUT(r, c, clt_matmul(a, b, &c));
        STEP_OUT(r, d, clt_relu(c, &d));
        STEP_OUT(r, e, clt_mul(d, c, &e));
        STEP_OUT(r, l, clt_sum(e, &l));
        /* a bad argument still gets its own message */
        clt_tensor *bad = (void *)&sentinel;
        cr_assert_eq(clt_add(NULL, a, &bad), CLT_ERR_NULL_ARGUMENT);
        cr_assert(bad == NULL && strstr(clt_last_error(), "NULL"), "%s", clt_last_error());
        if (backward(r, l))
            break;
        clt_tensor *t[] = {c, d, e, l};
        for (size_t i = 0; i < sizeof t / sizeof *t; i++)
            clt_tensor_free(t[i]);
    }
    keep(r, c);
    keep(r, l);
    keep_grad(r, a);
    STEP_OUT(r, g, clt_grad(b, &g));
    keep(r, g);
    keep_text(r, g);
    clt_tensor *v, *w;
    STEP_OUT(r, v, clt_transpose(g, 0, 1, &v));
    STEP_OUT(r, w, clt_contiguous(v, &w));
    keep(r, w);
    clt_tensor_free(v);
    clt_tensor_free(w);
    size_t ndev = 0;
    STEP(r, clt_device_count(&ndev));
    clt_device *dev1;
    STEP_OUT(r, dev1, clt_device_at(ndev - 1, &dev1));
    STEP_OUT(r, v, clt_to(g, dev1, &v));
    float back[12];
    clt_event *ev;
    STEP_OUT(r, ev, clt_tensor_read_async(v, back, sizeof back, &ev));
    STEP(r, clt_event_wait(ev));
    clt_event_free(ev);
    keep_bytes(r, back, sizeof back);
    clt_tensor_free(v);
    clt_tensor_free(g);
    clt_tensor *t[] = {a, b, c, d, e, l};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        clt_tensor_free(t[i]);
}

static clt_module *mlp(run *r, clt_device *dev, clt_generator *gen)
{
    clt_module *m[3], *seq;
    STEP_OUT(r, m[0], clt_linear(dev, 4, 6, 1, gen, &m[0]));
    STEP_OUT(r, m[1], clt_relu_layer(&m[1]));
    STEP_OUT(r, m[2], clt_linear(dev, 6, 3, 1, gen, &m[2]));
    STEP_OUT(r, seq, clt_sequential(m, 3, &seq));
    return seq;
}

static clt_module *cnn(run *r, clt_device *dev, clt_generator *gen)
{
    clt_module *m[5], *seq;
    STEP_OUT(r, m[0], clt_conv2d_layer(dev, 1, 2, 3, 3, NULL, 1, gen, &m[0]));
    STEP_OUT(r, m[1], clt_relu_layer(&m[1]));
    STEP_OUT(r, m[2], clt_max_pool2d_layer(2, 2, NULL, &m[2]));
    STEP_OUT(r, m[3], clt_flatten_layer(1, -1, &m[3]));
    STEP_OUT(r, m[4], clt_linear(dev, 8, 3, 1, gen, &m[4]));
    STEP_OUT(r, seq, clt_sequential(m, 5, &seq));
    return seq;
}

/* One training step of m on x with cross entropy against labels. */
static void train_step(run *r, clt_module *m, clt_optimizer *opt, clt_tensor *x,
                       clt_tensor *labels)
{
    clt_tensor *y, *l;
    STEP(r, clt_optimizer_zero_grad(opt, 1));
    for (;;) {
        STEP_OUT(r, y, clt_module_forward(m, x, &y));
        STEP_OUT(r, l, clt_cross_entropy(y, labels, NULL, &l));
        if (backward(r, l))
            break;
        clt_tensor_free(y);
        clt_tensor_free(l);
    }
    keep(r, l);
    STEP(r, clt_optimizer_step(opt));
    clt_tensor_free(y);
    clt_tensor_free(l);
}

static void keep_params(run *r, clt_module *m)
{
    clt_tensor **ps;
    size_t n;
    STEP_OUT(r, ps, clt_module_parameters(m, &ps, &n));
    for (size_t i = 0; i < n; i++)
        keep(r, ps[i]);
    clt_free(ps);
}

/* An MLP trained with SGD and a CNN with Adam, two steps each. */
static void train_work(run *r)
{
    clt_device *dev = pick(r);
    clt_generator *gen;
    STEP_OUT(r, gen, clt_generator_new(7, &gen));
    clt_module *nets[2] = {mlp(r, dev, gen), cnn(r, dev, gen)};
    float xv[2 * 36];
    for (int i = 0; i < 2 * 36; i++)
        xv[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    clt_tensor *x[2] = {from_host(r, dev, 2, (int64_t[]){3, 4}, xv),
                        from_host(r, dev, 4, (int64_t[]){2, 1, 6, 6}, xv)};
    clt_tensor *labels[2];
    STEP_OUT(r, labels[0], clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3},
                                                (int64_t[]){2, 0, 1}, &labels[0]));
    STEP_OUT(r, labels[1], clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){2},
                                                (int64_t[]){1, 2}, &labels[1]));
    for (int k = 0; k < 2; k++) {
        clt_tensor **ps;
        size_t n;
        STEP_OUT(r, ps, clt_module_parameters(nets[k], &ps, &n));
        clt_optimizer *opt;
        if (k == 0) {
            clt_sgd_opts so = {0.1, 0.9, 0.0, 0.0, 0};
            STEP_OUT(r, opt, clt_sgd(ps, n, &so, &opt));
        } else {
            clt_adam_opts ao = CLT_ADAM_DEFAULTS;
            ao.lr = 0.01;
            STEP_OUT(r, opt, clt_adam(ps, n, &ao, &opt));
        }
        clt_lr_scheduler *sched, *plateau;
        if (k == 0)
            STEP_OUT(r, sched, clt_step_lr(opt, 1, 0.5, &sched));
        else
            STEP_OUT(r, sched, clt_one_cycle_lr(opt, 0.02, 4, 0.3, "cos", 25, 1e4, 0, &sched));
        STEP_OUT(r, plateau,
                 clt_reduce_lr_on_plateau(opt, "min", 0.5, 0, 1e-4, "rel", 0, 0, 1e-8, &plateau));
        for (int s = 0; s < 2; s++) {
            train_step(r, nets[k], opt, x[k], labels[k]);
            STEP(r, clt_lr_scheduler_step(sched));
            STEP(r, clt_lr_scheduler_step_metric(plateau, 1.0)); /* decays at the second */
        }
        /* one more step on the other device: the optimizer's state moves */
        size_t ndev;
        clt_device *dev1;
        clt_tensor *x1, *l1;
        STEP(r, clt_device_count(&ndev));
        STEP_OUT(r, dev1, clt_device_at(ndev - 1, &dev1));
        STEP(r, clt_module_to(nets[k], dev1));
        STEP_OUT(r, x1, clt_to(x[k], dev1, &x1));
        STEP_OUT(r, l1, clt_to(labels[k], dev1, &l1));
        train_step(r, nets[k], opt, x1, l1);
        clt_tensor_free(x1);
        clt_tensor_free(l1);
        clt_tensor *norm;
        STEP(r, clt_clip_grad_value(ps, n, 0.01));
        STEP_OUT(r, norm, clt_clip_grad_norm(ps, n, 0.5, 2.0, &norm));
        keep(r, norm);
        clt_tensor_free(norm);
        clt_free(ps);
        keep_params(r, nets[k]);
        int64_t steps = clt_optimizer_steps(opt);
        double lr = clt_optimizer_lr(opt);
        keep_bytes(r, &steps, sizeof steps);
        keep_bytes(r, &lr, sizeof lr);
        clt_lr_scheduler_free(sched);
        clt_lr_scheduler_free(plateau);
        clt_optimizer_free(opt);
        clt_module_free(nets[k]);
        clt_tensor_free(x[k]);
        clt_tensor_free(labels[k]);
    }
    clt_generator_free(gen);
}

/* Embedding, LayerNorm, Dropout (training), Linear and BatchNorm trained a
 * step with AdamW; then a round of functional ops with their gradients. */
static void layers_work(run *r)
{
    clt_device *dev = pick(r);
    clt_generator *gen;
    STEP_OUT(r, gen, clt_generator_new(3, &gen));
    clt_module *m[5], *net;
    STEP_OUT(r, m[0], clt_embedding_layer(dev, 10, 4, gen, &m[0]));
    STEP_OUT(r, m[1], clt_layer_norm_layer(dev, 1, (int64_t[]){4}, 1e-5, 1, &m[1]));
    STEP_OUT(r, m[2], clt_dropout_layer(0.25, gen, &m[2]));
    STEP_OUT(r, m[3], clt_linear(dev, 4, 3, 1, gen, &m[3]));
    STEP_OUT(r, m[4], clt_batch_norm1d_layer(dev, 3, 1e-5, 0.1, 1, 1, &m[4]));
    STEP_OUT(r, net, clt_sequential(m, 5, &net));
    clt_tensor *ids, *labels, *y, *l;
    STEP_OUT(r, ids, clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){5},
                                          (int64_t[]){3, 1, 4, 1, 5}, &ids));
    STEP_OUT(r, labels, clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){5},
                                             (int64_t[]){0, 2, 1, 1, 0}, &labels));
    clt_tensor **ps;
    size_t n;
    STEP_OUT(r, ps, clt_module_parameters(net, &ps, &n));
    clt_adam_opts ao = CLT_ADAMW_DEFAULTS;
    clt_optimizer *opt;
    STEP_OUT(r, opt, clt_adamw(ps, n, &ao, &opt));
    clt_free(ps);
    STEP_OUT(r, y, clt_module_forward(net, ids, &y));
    STEP_OUT(r, l, clt_cross_entropy(y, labels, NULL, &l));
    backward_(r, l, 1);
    keep(r, y);
    STEP(r, clt_optimizer_step(opt));
    clt_named_tensor *state;
    STEP_(r, clt_module_state(net, &state, &n), state = (void *)&sentinel, state == NULL);
    for (size_t i = 0; i < n; i++)
        keep(r, state[i].tensor);
    clt_free(state);
    clt_tensor_free(l);

    /* functional ops on y (a leaf now) */
    clt_tensor *x, *t[12];
    STEP_OUT(r, x, clt_detach(y, &x));
    STEP(r, clt_set_requires_grad(x, 1));
    for (;;) {
        clt_tensor *pair[2];
        STEP_OUT(r, t[0], clt_softmax(x, 1, &t[0]));
        STEP_OUT(r, t[1], clt_log_softmax(x, 0, &t[1]));
        pair[0] = t[0], pair[1] = t[1];
        STEP_OUT(r, t[2], clt_cat((const clt_tensor *const *)pair, 2, 1, &t[2]));
        STEP_OUT(r, t[3], clt_stack((const clt_tensor *const *)pair, 2, 0, &t[3]));
        STEP_OUT(r, t[4], clt_index_select(t[2], 1, labels, &t[4]));
        STEP_OUT(r, t[5], clt_tanh(t[4], &t[5]));
        STEP_OUT(r, t[6], clt_exp(t[5], &t[6]));
        STEP_OUT(r, t[7], clt_var_dim(t[3], 1, 1.0, 0, &t[7]));
        STEP_OUT(r, t[8], clt_mean_dim(t[6], 0, 0, &t[8]));
        STEP_OUT(r, t[9], clt_sum(t[7], &t[9]));
        STEP_OUT(r, t[10], clt_sum(t[8], &t[10]));
        STEP_OUT(r, t[11], clt_add(t[9], t[10], &t[11]));
        if (backward(r, t[11]))
            break;
        for (int i = 0; i < 12; i++)
            clt_tensor_free(t[i]);
    }
    clt_tensor *g, *vals, *idx;
    STEP_OUT(r, g, clt_grad(x, &g));
    STEP_(r, clt_max_dim(g, 1, 0, &vals, &idx), vals = idx = (void *)&sentinel,
          vals == NULL && idx == NULL);
    keep(r, t[11]);
    keep(r, g);
    keep(r, vals);
    keep(r, idx);
    clt_tensor *rest[] = {g, vals, idx, x, y, ids, labels};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_free(rest[i]);
    for (int i = 0; i < 12; i++)
        clt_tensor_free(t[i]);
    clt_optimizer_free(opt);
    clt_module_free(net);
    clt_generator_free(gen);
}

/* A TransformerEncoderLayer (GELU, dropout in train mode) with both
 * masks, forward and backward, and MultiheadAttention's per-head weights:
 * a forward that failed after drawing its dropout masks drew nothing. */
/* Runs the sum of y (returned) backward keeping its graph (the forward
 * drew its dropout masks: its graph runs again after a failure), then keeps
 * y, gen's offset and the gradient of every parameter of m. */
static clt_tensor *keep_backward(run *r, clt_module *m, clt_tensor *y, clt_generator *gen)
{
    clt_tensor *l;
    STEP_OUT(r, l, clt_sum(y, &l));
    backward_(r, l, 1);
    keep(r, y);
    uint64_t drawn = clt_generator_offset(gen);
    keep_bytes(r, &drawn, sizeof drawn);
    clt_tensor **ps;
    size_t n;
    STEP_OUT(r, ps, clt_module_parameters(m, &ps, &n));
    for (size_t i = 0; i < n; i++)
        keep_grad(r, ps[i]);
    clt_free(ps);
    return l;
}

static void attention_work(run *r)
{
    clt_device *dev = pick(r);
    clt_generator *gen;
    STEP_OUT(r, gen, clt_generator_new(4, &gen));
    clt_module *m, *mha;
    STEP_OUT(r, m, clt_transformer_encoder_layer(dev, 4, 2, 6, 0.25, "gelu", 1e-5, 1, 0, gen,
                                                 &m));
    STEP_OUT(r, mha, clt_multihead_attention_layer(dev, 4, 2, 0.0, 1, 1, gen, &mha));
    float xv[2 * 3 * 4], amv[9] = {0, -1, 0, 0, 0, -2, -INFINITY, 0, 0};
    for (int i = 0; i < 2 * 3 * 4; i++)
        xv[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
    bool kv[6] = {0, 0, 1, 0, 0, 0};
    clt_tensor *x = from_host(r, dev, 3, (int64_t[]){2, 3, 4}, xv);
    clt_tensor *am = from_host(r, dev, 2, (int64_t[]){3, 3}, amv), *kpm, *y, *l, *o, *w;
    STEP_OUT(r, kpm, clt_tensor_from_host(dev, CLT_BOOL, 2, (int64_t[]){2, 3}, kv, &kpm));
    STEP_OUT(r, y, clt_transformer_encoder_forward(m, x, am, kpm, &y));
    l = keep_backward(r, m, y, gen);
    STEP_(r, clt_multihead_attention(mha, x, y, y, NULL, am, 1, 0, &o, &w),
          o = w = (void *)&sentinel, o == NULL && w == NULL);
    keep(r, o);
    keep(r, w);
    clt_tensor *rest[] = {x, am, kpm, y, l, o, w};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_free(rest[i]);
    clt_module_free(m);
    clt_module_free(mha);
    clt_generator_free(gen);
}

/* Index ops, a strided convolution with padding and groups, pooling, a
 * random permutation and the nll loss, with their gradients, and a larger
 * tensor formatted (its summary). */
static void index_conv_work(run *r)
{
    clt_device *dev = pick(r);
    clt_generator *gen;
    STEP_OUT(r, gen, clt_generator_new(9, &gen));
    float xv[2 * 2 * 5 * 5], wv[4 * 1 * 3 * 3];
    for (int i = 0; i < 100; i++)
        xv[i] = (float)((i * 13) % 17) / 8.0f - 1.0f;
    for (int i = 0; i < 36; i++)
        wv[i] = (float)((i * 5) % 7) / 4.0f - 0.75f;
    clt_tensor *x = from_host(r, dev, 4, (int64_t[]){2, 2, 5, 5}, xv);
    clt_tensor *w = from_host(r, dev, 4, (int64_t[]){4, 1, 3, 3}, wv);
    STEP(r, clt_set_requires_grad(x, 1));
    STEP(r, clt_set_requires_grad(w, 1));
    clt_tensor *perm, *idx, *lab, *t[10];
    STEP_OUT(r, perm, clt_randperm(gen, dev, 4, CLT_INT64, &perm));
    STEP_OUT(r, idx, clt_tensor_from_host(dev, CLT_INT64, 2, (int64_t[]){2, 3},
                                          (int64_t[]){0, 3, 1, 2, 2, 0}, &idx));
    STEP_OUT(r, lab, clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){2},
                                          (int64_t[]){2, 0}, &lab));
    keep(r, perm);
    clt_conv2d_opts co = {{2, 1}, {1, 1}, {1, 1}, 2};
    for (;;) {
        STEP_OUT(r, t[0], clt_conv2d(x, w, NULL, &co, &t[0]));              /* [2,4,3,5] */
        STEP_OUT(r, t[1], clt_max_pool2d(t[0], (int64_t[]){2, 2}, NULL, NULL, NULL, 1,
                                         &t[1]));                                /* [2,4,2,3] */
        STEP_OUT(r, t[2], clt_index_select(t[1], 1, perm, &t[2]));
        STEP_OUT(r, t[3], clt_reshape(t[2], 2, (int64_t[]){2, 24}, &t[3]));
        STEP_OUT(r, t[4], clt_gather(t[3], 1, idx, &t[4]));                  /* [2,3] */
        STEP_OUT(r, t[5], clt_gt_scalar(t[4], 0.0, &t[5]));
        STEP_OUT(r, t[6], clt_masked_fill(t[4], t[5], 0.5, &t[6]));
        STEP_OUT(r, t[7], clt_where(t[5], t[6], t[4], &t[7]));
        STEP_OUT(r, t[8], clt_log_softmax(t[7], 1, &t[8]));
        STEP_OUT(r, t[9], clt_nll_loss(t[8], lab, NULL, &t[9]));
        if (backward(r, t[9]))
            break;
        for (int i = 0; i < 10; i++)
            clt_tensor_free(t[i]);
    }
    keep(r, t[9]);
    keep_grad(r, w);
    keep_grad(r, x);
    keep_text(r, t[0]);
    for (int i = 0; i < 10; i++)
        clt_tensor_free(t[i]);
    clt_tensor *rest[] = {x, w, perm, idx, lab};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_free(rest[i]);
    clt_generator_free(gen);
}

/* Fills samples with their index, labels with twice it. */
static clt_status fill(void *user, const int64_t *idx, int64_t count, void *x, void *y)
{
    (void)user;
    for (int64_t i = 0; i < count; i++) {
        ((double *)x)[2 * i] = (double)idx[i];
        ((double *)x)[2 * i + 1] = -(double)idx[i];
        ((int64_t *)y)[i] = 2 * idx[i];
    }
    return CLT_OK;
}

/* An epoch of the loader: every batch kept. */
static void epoch(run *r, clt_dataloader *dl, int want)
{
    int got = 1, batches = 0;
    while (got) {
        clt_tensor *bx, *by;
        STEP_(r, clt_dataloader_next(dl, &bx, &by, &got),
              (bx = by = (void *)&sentinel, got = -1), bx == NULL && by == NULL && got == 0);
        if (!got)
            break;
        keep(r, bx);
        keep(r, by);
        clt_tensor_free(bx);
        clt_tensor_free(by);
        batches++;
    }
    cr_assert_eq(batches, want, "%s %ld: an epoch had %d batches", failing.what, r->pass,
                  batches);
}

/* Two shuffled epochs of a loader over arrays, one of a loader with a
 * callback and one of each sampler, every batch kept. */
static void data_work(run *r)
{
    clt_device *dev = pick(r);
    r->retried = true;
    enum { NS = 10, F = 3 };
    float xs[NS * F];
    int64_t ys[NS];
    for (int i = 0; i < NS; i++) {
        ys[i] = i;
        for (int f = 0; f < F; f++)
            xs[i * F + f] = (float)(i * 10 + f);
    }
    clt_array_spec xa = {xs, CLT_FLOAT32, 2, (int64_t[]){NS, F}};
    clt_array_spec ya = {ys, CLT_INT64, 1, (int64_t[]){NS}};
    clt_loader_opts o = {3, 1, 42, 0, 0, 0, NULL, 0, NULL, 0, 1};
    clt_dataloader *dl;
    STEP_OUT(r, dl, clt_dataloader_arrays(dev, &xa, &ya, &o, &dl));
    epoch(r, dl, 4);
    epoch(r, dl, 4);
    clt_dataloader_free(dl);
    clt_array_spec xc = {NULL, CLT_FLOAT64, 1, (int64_t[]){2}}, yc = {NULL, CLT_INT64, 0, NULL};
    o = (clt_loader_opts){4, 1, 5, 1, 0, 0, NULL, 0, NULL, 0, 1};
    STEP_OUT(r, dl, clt_dataloader_callback(dev, 9, &xc, &yc, fill, NULL, &o, &dl));
    epoch(r, dl, 2);
    clt_dataloader_free(dl);
    /* the samplers: a shuffled subset's share, weighted draws without
     * replacement */
    const int64_t idx[5] = {4, 0, 8, 8, 2};
    o = (clt_loader_opts){2, 1, 7, 0, 2, 1, idx, 5, NULL, 0, 1};
    STEP_OUT(r, dl, clt_dataloader_arrays(dev, &xa, &ya, &o, &dl));
    epoch(r, dl, 2);
    clt_dataloader_free(dl);
    const double w[NS] = {1, 0, 2, 1, 1, 0, 3, 1, 1, 1};
    o = (clt_loader_opts){3, 0, 9, 0, 0, 0, NULL, 0, w, 7, 0};
    STEP_OUT(r, dl, clt_dataloader_arrays(dev, &xa, &ya, &o, &dl));
    epoch(r, dl, 3);
    clt_dataloader_free(dl);
}

/* Files (npy, safetensors, a module's state) and DLPack, each written and
 * read back. */
static void io_work(run *r)
{
    clt_device *dev = pick(r);
    char npy[96], st[96], mod[96];
    snprintf(npy, sizeof npy, "%s/t.npy", r->dir);
    snprintf(st, sizeof st, "%s/t.safetensors", r->dir);
    snprintf(mod, sizeof mod, "%s/m.safetensors", r->dir);
    float v[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f};
    clt_tensor *t = from_host(r, dev, 2, (int64_t[]){2, 3}, v), *u;
    STEP(r, clt_save_npy(npy, t));
    STEP_OUT(r, u, clt_load_npy(npy, dev, &u));
    keep(r, u);
    clt_tensor_free(u);
    char link[96];
    snprintf(link, sizeof link, "%s/link.npy", r->dir);
    cr_assert_eq(symlink("t.npy", link), 0);
    STEP(r, clt_save_npy(link, t)); /* through the link, into t.npy */
    STEP_OUT(r, u, clt_load_npy(npy, dev, &u));
    keep(r, u);
    clt_tensor_free(u);

    clt_named_tensor nt[2] = {{"weight", t}, {"bias.x", t}}, *back;
    size_t n;
    STEP(r, clt_save_safetensors(st, nt, 2));
    STEP_(r, clt_load_safetensors(st, dev, &back, &n), back = (void *)&sentinel, back == NULL);
    cr_assert_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        keep_bytes(r, back[i].name, strlen(back[i].name) + 1);
        keep(r, back[i].tensor);
    }
    clt_named_tensors_free(back, n);

    clt_generator *g1, *g2;
    STEP_OUT(r, g1, clt_generator_new(1, &g1));
    STEP_OUT(r, g2, clt_generator_new(2, &g2));
    clt_module *m1 = mlp(r, dev, g1), *m2 = mlp(r, dev, g2);
    STEP(r, clt_module_save(m1, mod));
    STEP(r, clt_module_load(m2, mod));
    clt_named_tensor *state;
    STEP_(r, clt_module_state(m2, &state, &n), state = (void *)&sentinel, state == NULL);
    for (size_t i = 0; i < n; i++) {
        keep_bytes(r, state[i].name, strlen(state[i].name) + 1);
        keep(r, state[i].tensor);
    }
    clt_free(state);
    clt_module_free(m1);
    clt_module_free(m2);
    clt_generator_free(g1);
    clt_generator_free(g2);

    DLManagedTensor *dl;
    STEP_OUT(r, dl, clt_to_dlpack(t, &dl));
    STEP_OUT(r, u, clt_from_dlpack(dev, dl, &u));
    dl->deleter(dl);
    keep(r, u);
    clt_tensor_free(u);
    clt_tensor_free(t);
}

/* nn.Transformer made (its parameters drawn again, xavier), run in train
 * mode with a causal mask and padding masks, backward; its clone run in
 * eval mode. */
static void decoder_work(run *r)
{
    clt_device *dev = pick(r);
    clt_generator *gen;
    STEP_OUT(r, gen, clt_generator_new(6, &gen));
    clt_module *t, *c;
    STEP_OUT(r, t, clt_transformer(dev, 4, 2, 1, 1, 6, 0.25, "relu", 1e-5, 0, 1, gen, &t));
    float sv[3 * 2 * 4], tv[2 * 2 * 4];
    for (int i = 0; i < 3 * 2 * 4; i++)
        sv[i] = (float)((i * 5) % 13) / 6.0f - 1.0f;
    for (int i = 0; i < 2 * 2 * 4; i++)
        tv[i] = (float)((i * 3) % 7) / 3.0f - 1.0f;
    bool kv[6] = {0, 0, 1, 0, 0, 0};
    clt_tensor *src = from_host(r, dev, 3, (int64_t[]){3, 2, 4}, sv);
    clt_tensor *tgt = from_host(r, dev, 3, (int64_t[]){2, 2, 4}, tv), *tm, *kpm, *y, *l, *e;
    STEP_OUT(r, tm, clt_generate_square_subsequent_mask(dev, CLT_FLOAT32, 2, &tm));
    STEP_OUT(r, kpm, clt_tensor_from_host(dev, CLT_BOOL, 2, (int64_t[]){2, 3}, kv, &kpm));
    STEP_OUT(r, y, clt_transformer_forward(t, src, tgt, NULL, tm, NULL, kpm, NULL, kpm, &y));
    l = keep_backward(r, t, y, gen);
    STEP_OUT(r, c, clt_module_clone(t, NULL, &c));
    clt_module_train(c, 0);
    STEP_OUT(r, e, clt_transformer_forward(c, src, tgt, NULL, tm, NULL, NULL, NULL, NULL, &e));
    keep(r, e);
    clt_tensor *rest[] = {src, tgt, tm, kpm, y, l, e};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
        clt_tensor_free(rest[i]);
    clt_module_free(c);
    clt_module_free(t);
    clt_generator_free(gen);
}

/* Removes the files the work wrote, which must be the ones it meant to
 * write: a failed save leaves no temporary file behind. */
static void remove_files(run *r)
{
    static const char *const names[] = {"t.npy", "link.npy", "t.safetensors", "m.safetensors"};
    DIR *d = opendir(r->dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bool known = false;
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            known |= strcmp(e->d_name, names[i]) == 0;
        cr_assert(known, "%s %ld (%s): %s left in the folder", failing.what, r->pass,
                  r->failed ? r->failed : "-", e->d_name);
        char path[sizeof r->dir + sizeof e->d_name + 1];
        snprintf(path, sizeof path, "%s/%s", r->dir, e->d_name);
        cr_assert_eq(unlink(path), 0);
    }
    closedir(d);
    cr_assert_eq(rmdir(r->dir), 0);
}

static uint64_t requested(void)
{
    uint64_t sum = 0;
    size_t n = 0;
    if (clt_device_count(&n) != CLT_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        clt_device *d;
        clt_memory_stats s;
        CHECK(clt_device_at(i, &d));
        CHECK(clt_memory_stats_get(d, &s));
        sum += s.requested;
    }
    return sum;
}

/* Runs work with the calls of the kind refused from the 0th, 1st, 2nd, ...
 * on until a run makes fewer; each run must end as the last one (which met
 * no refusal) did. */
static void each_refusal(void (*work)(run *), long at_least)
{
    run *runs = NULL;
    long pass = 0;
    const char *what = failing.what;
    for (;; pass++) {
        runs = realloc(runs, (size_t)(pass + 1) * sizeof *runs);
        cr_assert_not_null(runs);
        run *r = &runs[pass];
        *r = (run){.pass = pass};
        snprintf(r->dir, sizeof r->dir, "/tmp/clt-failing-XXXXXX");
        cr_assert_not_null(mkdtemp(r->dir));
        uint64_t before = pass ? requested() : 0;
        failing.refuse(pass);
        work(r);
        long left = failing.refuse(-1);
        if (pass)
            cr_assert_eq(requested(), before, "%s %ld (%s): %llu device bytes left", what,
                         pass, r->failed ? r->failed : "-",
                         (unsigned long long)(requested() - before));
        remove_files(r);
        cr_assert_leq(r->failures, 1, "%s %ld: %d calls failed", what, pass, r->failures);
        if (left >= 0) { /* nothing refused: the run to compare with */
            cr_assert_eq(r->failures, 0);
            break;
        }
        cr_assert(r->failures == 1 || !failing.reported || r->retried,
                  "%s %ld was refused and no call failed", what, pass);
    }
    const run *last = &runs[pass];
    for (long p = 0; p < pass; p++) {
        cr_assert_eq(runs[p].len, last->len, "%s %ld (%s): %zu result bytes, not %zu", what,
                     p, runs[p].failed ? runs[p].failed : "-", runs[p].len, last->len);
        cr_assert(memcmp(runs[p].bytes, last->bytes, last->len) == 0,
                  "%s %ld (%s): the results differ", what, p,
                  runs[p].failed ? runs[p].failed : "-");
    }
    for (long p = 0; p <= pass; p++)
        free(runs[p].bytes);
    free(runs);
    cr_log_info("%ld %ss", pass, what);
    cr_assert_geq(pass, at_least, "only %ld %ss", pass, what);
}

/* One test per kind of work, each in its own process (a fresh device
 * registry and program cache), with the calls of the kind it must at least
 * make. */
#define EACH_REFUSAL(suite, name, work, at_least)                                        \
    Test(suite, name, .timeout = 1200)                                                   \
    {                                                                                    \
        each_refusal(work, at_least);                                                    \
    }

#endif

