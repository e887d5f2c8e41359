/* train.c: training-step cases of `cltensor bench`: an MLP step with
 * autograd, nn and an optimizer, against the same step written by hand
 * with cltensor's ops (forward, hand-derived gradients, the update),
 * timed in alternating batches in the same run.  Also the launches and
 * device buffer creations per step, an LSTM's step over a long
 * sequence against steps over a quarter of its length, and the optimizer's
 * step alone with several parameters per launch against one launch per
 * parameter (CLTENSOR_OPTIM=per_param). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_LAYERS 4
#define LR 0.01

typedef struct mlp_case {
    const char *name;
    int nlayers;
    int64_t dims[MAX_LAYERS + 1]; /* input, hidden..., classes */
    int64_t batch;
} mlp_case;

typedef struct data {
    clt_tensor *x, *y; /* [batch, dims[0]] float32, [batch] int64 */
} data;

/* Mean cross entropy of logits against labels. */
static clt_status loss_of(const clt_tensor *logits, const clt_tensor *y, clt_tensor **out)
{
    return clt_cross_entropy(logits, y, NULL, out);
}

/* ---- the step with autograd ------------------------------------------------------ */

typedef struct auto_model {
    clt_module *net;
    clt_tensor **params;
    size_t nparams;
    clt_optimizer *opt;
} auto_model;

static clt_status auto_make(bench *b, const mlp_case *c, clt_generator *gen, auto_model *m)
{
    clt_module *layers[2 * MAX_LAYERS];
    int n = 0;
    clt_status st = CLT_OK;
    for (int l = 0; l < c->nlayers && st == CLT_OK; l++) {
        st = clt_linear(b->dev, c->dims[l], c->dims[l + 1], 1, gen, &layers[n++]);
        if (st == CLT_OK && l + 1 < c->nlayers)
            st = clt_relu_layer(&layers[n++]);
    }
    if (st == CLT_OK)
        st = clt_sequential(layers, (size_t)n, &m->net);
    if (st == CLT_OK)
        st = clt_module_parameters(m->net, &m->params, &m->nparams);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = LR;
    if (st == CLT_OK)
        st = clt_sgd(m->params, m->nparams, &so, &m->opt);
    return st;
}

static clt_status auto_step(auto_model *m, const data *d)
{
    clt_status st = clt_scope_begin();
    clt_tensor *out, *loss;
    if (st == CLT_OK)
        st = clt_optimizer_zero_grad(m->opt, 1);
    if (st == CLT_OK)
        st = clt_module_forward(m->net, d->x, &out);
    if (st == CLT_OK)
        st = loss_of(out, d->y, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    if (st == CLT_OK)
        st = clt_optimizer_step(m->opt);
    clt_scope_end();
    return st;
}

static void auto_free(auto_model *m)
{
    clt_optimizer_free(m->opt);
    clt_free(m->params);
    clt_module_free(m->net);
}

/* ---- the same step by hand --------------------------------------------------------- */

/* W [out, in] and b [out] per layer, updated by swapping in new tensors (no
 * in-place ops), the hand-written gradients of
 * z_l = a_{l-1} W_l^T + b_l, a_l = relu(z_l), and cross entropy. */
typedef struct hand_model {
    int nlayers;
    int64_t classes;
    clt_tensor *w[MAX_LAYERS], *b[MAX_LAYERS];
} hand_model;

static clt_status hand_make(bench *b, const mlp_case *c, const auto_model *src, hand_model *h)
{
    h->nlayers = c->nlayers;
    h->classes = c->dims[c->nlayers];
    clt_status st = CLT_OK;
    int was = clt_set_grad_enabled(0); /* plain copies, with no history */
    for (int l = 0; l < c->nlayers && st == CLT_OK; l++) {
        st = clt_clone(src->params[2 * l], &h->w[l]);
        if (st == CLT_OK)
            st = clt_clone(src->params[2 * l + 1], &h->b[l]);
    }
    clt_set_grad_enabled(was);
    return st;
}

/* x -= LR * g, as a new tensor that replaces x. */
static clt_status update(clt_tensor **x, const clt_tensor *g)
{
    clt_tensor *t = NULL, *n = NULL;
    clt_status st = clt_mul_scalar(g, LR, &t);
    if (st == CLT_OK)
        st = clt_sub(*x, t, &n);
    if (st == CLT_OK) {
        clt_scope_keep(n);
        clt_tensor_free(*x);
        *x = n;
    }
    clt_tensor_free(t);
    return st;
}

#define T(call)                                                                      \
    do {                                                                             \
        if ((st = (call)) != CLT_OK)                                                 \
            goto done;                                                               \
    } while (0)

static clt_status hand_step(hand_model *h, const data *d)
{
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int was = clt_set_grad_enabled(0);
    clt_tensor *a[MAX_LAYERS + 1], *z[MAX_LAYERS];
    a[0] = (clt_tensor *)d->x;
    for (int l = 0; l < h->nlayers; l++) {
        clt_tensor *wt, *mm;
        T(clt_transpose(h->w[l], 0, 1, &wt));
        T(clt_matmul(a[l], wt, &mm));
        T(clt_add(mm, h->b[l], &z[l]));
        if (l + 1 < h->nlayers)
            T(clt_relu(z[l], &a[l + 1]));
    }
    /* loss and dz = (softmax(z) - onehot(y)) / B */
    clt_tensor *loss, *p, *oh, *ohf, *diff, *dz;
    T(loss_of(z[h->nlayers - 1], d->y, &loss));
    T(clt_softmax(z[h->nlayers - 1], 1, &p));
    T(clt_one_hot(d->y, h->classes, &oh));
    T(clt_to_dtype(oh, CLT_FLOAT32, &ohf));
    T(clt_sub(p, ohf, &diff));
    T(clt_div_scalar(diff, (double)clt_tensor_size(d->x, 0), &dz));
    for (int l = h->nlayers - 1; l >= 0; l--) {
        clt_tensor *dzt, *dw, *db;
        T(clt_transpose(dz, 0, 1, &dzt));
        T(clt_matmul(dzt, a[l], &dw));
        T(clt_sum_dim(dz, 0, 0, &db));
        if (l > 0) {
            clt_tensor *da, *mask, *zero, *next;
            T(clt_matmul(dz, h->w[l], &da));
            T(clt_gt_scalar(z[l - 1], 0.0, &mask));
            T(clt_zeros(clt_tensor_device(da), CLT_FLOAT32, 0, NULL, &zero));
            T(clt_where(mask, da, zero, &next));
            dz = next;
        }
        T(update(&h->w[l], dw));
        T(update(&h->b[l], db));
    }
done:
    clt_set_grad_enabled(was);
    clt_scope_end();
    return st;
}

static void hand_free(hand_model *h)
{
    for (int l = 0; l < h->nlayers; l++) {
        clt_tensor_free(h->w[l]);
        clt_tensor_free(h->b[l]);
    }
}

/* ---- timing ---------------------------------------------------------------------------- */

typedef clt_status (*step_fn)(void *model, const data *d);

static clt_status run_auto(void *m, const data *d)
{
    return auto_step(m, d);
}

static clt_status run_hand(void *m, const data *d)
{
    return hand_step(m, d);
}

/* Seconds per step over `steps` steps, waited for once at the end. */
static int time_steps(bench *b, const char *name, step_fn fn, void *m, const data *d, int steps,
                      double *secs)
{
    double t0 = now();
    for (int s = 0; s < steps; s++)
        if (fn(m, d) != CLT_OK)
            return fail(b, name, "training step");
    if (clt_device_synchronize(b->dev) != CLT_OK)
        return fail(b, name, "clt_device_synchronize");
    *secs = (now() - t0) / steps;
    return 0;
}

/* Launches and device buffer creations per step, after the first steps. */
/* Sets CLTENSOR_OPTIM to mode (NULL: back to what it was when first set
 * here, unset if it was). */
static void optim_mode(const char *mode)
{
    static int have;
    static char saved[32];
    static int was_set;
    if (!have) {
        const char *v = getenv("CLTENSOR_OPTIM");
        was_set = v != NULL;
        if (v)
            snprintf(saved, sizeof saved, "%s", v);
        have = 1;
    }
    if (mode)
        setenv("CLTENSOR_OPTIM", mode, 1);
    else if (was_set)
        setenv("CLTENSOR_OPTIM", saved, 1);
    else
        unsetenv("CLTENSOR_OPTIM");
}

/* time_steps of the library's step (*secs) and of the same with one
 * optimizer launch per parameter (*per, CLTENSOR_OPTIM=per_param). */
static int time_steps_both(bench *b, const char *name, step_fn fn, void *m, const data *d,
                           int steps, double *secs, double *per)
{
    optim_mode("per_param");
    int bad = time_steps(b, name, fn, m, d, steps, per);
    optim_mode(NULL);
    return bad || time_steps(b, name, fn, m, d, steps, secs);
}

/* Reports the step against the one with an optimizer launch per parameter
 * (name_optim). */
static void report_per_param(bench *b, const char *name, double *t, double *tp, int reps)
{
    char n2[64];
    double a = median(t, reps), p = median(tp, reps);
    snprintf(n2, sizeof n2, "%s_optim", name);
    report(b, n2, a * 1e3, "ms", "per_param", p * 1e3, p / a,
           "(optimizer launch per parameter / several per launch, >= 1: faster)");
}

static int count_steps(bench *b, const char *name, step_fn fn, void *m, const data *d,
                       double *launches, double *allocs)
{
    clt_stats s0, s1;
    clt_memory_stats m0, m1;
    const int steps = 5;
    clt_stats_get(&s0);
    clt_memory_stats_get(b->dev, &m0);
    for (int s = 0; s < steps; s++)
        if (fn(m, d) != CLT_OK)
            return fail(b, name, "training step");
    clt_stats_get(&s1);
    clt_memory_stats_get(b->dev, &m1);
    *launches = (double)(s1.kernel_launches - s0.kernel_launches) / steps;
    *allocs = (double)(m1.device_allocs - m0.device_allocs) / steps;
    return 0;
}

static void case_mlp(bench *b, const mlp_case *c)
{
    clt_generator *gen = NULL;
    auto_model am = {0};
    hand_model hm = {0};
    data d = {0};
    float *x = malloc((size_t)(c->batch * c->dims[0]) * sizeof *x);
    int64_t *y = malloc((size_t)c->batch * sizeof *y);
    if (!x || !y) {
        fprintf(stderr, "cltensor bench: %s: out of memory\n", c->name);
        b->failures++;
        goto done;
    }
    fill_random(x, (size_t)(c->batch * c->dims[0]));
    for (int64_t i = 0; i < c->batch; i++)
        y[i] = (i * 7) % c->dims[c->nlayers];
    if (clt_generator_new(1, &gen) != CLT_OK || auto_make(b, c, gen, &am) != CLT_OK ||
        hand_make(b, c, &am, &hm) != CLT_OK ||
        clt_tensor_from_host(b->dev, CLT_FLOAT32, 2, (int64_t[]){c->batch, c->dims[0]}, x,
                             &d.x) != CLT_OK ||
        clt_tensor_from_host(b->dev, CLT_INT64, 1, &c->batch, y, &d.y) != CLT_OK) {
        fail(b, c->name, "setting up");
        goto done;
    }
    /* first steps: kernels built, the allocator's cache filled */
    double t;
    if (time_steps(b, c->name, run_auto, &am, &d, 3, &t) ||
        time_steps(b, c->name, run_hand, &hm, &d, 3, &t))
        goto done;
    int reps = b->quick ? 5 : 15, steps = c->batch >= 256 ? 4 : 20;
    double ta[MAX_REPS], th[MAX_REPS], tp[MAX_REPS];
    for (int r = 0; r < reps; r++)
        if (time_steps(b, c->name, run_hand, &hm, &d, steps, &th[r]) ||
            time_steps_both(b, c->name, run_auto, &am, &d, steps, &ta[r], &tp[r]))
            goto done;
    report_per_param(b, c->name, ta, tp, reps);
    double a = median(ta, reps), h = median(th, reps);
    report(b, c->name, a * 1e3, "ms", "hand_written", h * 1e3, h / a,
           "(hand / autograd, >= 1: faster than by hand)");
    double la = 0, aa = 0, lh = 0, ah = 0;
    if (count_steps(b, c->name, run_auto, &am, &d, &la, &aa) ||
        count_steps(b, c->name, run_hand, &hm, &d, &lh, &ah))
        goto done;
    char name[64];
    snprintf(name, sizeof name, "%s_launches", c->name);
    report(b, name, la, "/step", "hand_written", lh, la / lh, "(kernel launches per step)");
    snprintf(name, sizeof name, "%s_allocs", c->name);
    report(b, name, aa, "/step", "hand_written", ah, ah > 0 ? aa / ah : 0,
           "(device buffers created per step after the first: 0)");
done:
    clt_tensor_free(d.x);
    clt_tensor_free(d.y);
    hand_free(&hm);
    auto_free(&am);
    clt_generator_free(gen);
    free(x);
    free(y);
}

/* The digits CNN of examples/train_digits (conv 1->16, pool, conv 16->32,
 * pool, linear 128->10) at batch 64 with AdamW: the step against its own
 * forward pass (how many forwards a step costs). */
static void case_cnn(bench *b, const char *name)
{
    clt_generator *gen = NULL;
    clt_module *l[8] = {0}, *net = NULL;
    clt_tensor **params = NULL, *x = NULL, *y = NULL;
    size_t np = 0;
    clt_optimizer *opt = NULL;
    clt_conv2d_opts pad1 = CLT_CONV2D_DEFAULTS;
    pad1.padding[0] = pad1.padding[1] = 1;
    enum { B = 64 };
    if (clt_generator_new(1, &gen) != CLT_OK ||
        clt_conv2d_layer(b->dev, 1, 16, 3, 3, &pad1, 1, gen, &l[0]) != CLT_OK ||
        clt_relu_layer(&l[1]) != CLT_OK || clt_max_pool2d_layer(2, 2, NULL, &l[2]) != CLT_OK ||
        clt_conv2d_layer(b->dev, 16, 32, 3, 3, &pad1, 1, gen, &l[3]) != CLT_OK ||
        clt_relu_layer(&l[4]) != CLT_OK || clt_max_pool2d_layer(2, 2, NULL, &l[5]) != CLT_OK ||
        clt_flatten_layer(1, -1, &l[6]) != CLT_OK ||
        clt_linear(b->dev, 128, 10, 1, gen, &l[7]) != CLT_OK ||
        clt_sequential(l, 8, &net) != CLT_OK ||
        clt_module_parameters(net, &params, &np) != CLT_OK ||
        clt_adamw(params, np, NULL, &opt) != CLT_OK ||
        clt_rand(gen, b->dev, CLT_FLOAT32, 4, (int64_t[]){B, 1, 8, 8}, &x) != CLT_OK ||
        clt_randint(gen, b->dev, 0, 10, CLT_INT64, 1, (int64_t[]){B}, &y) != CLT_OK) {
        fail(b, name, "setting up");
        if (!net)
            for (int k = 0; k < 8; k++)
                clt_module_free(l[k]);
        goto done;
    }
    auto_model am = {net, params, np, opt};
    data d = {x, y};
    double t, tf[MAX_REPS], ts[MAX_REPS], tp[MAX_REPS];
    if (time_steps(b, name, run_auto, &am, &d, 3, &t))
        goto done;
    int reps = b->quick ? 5 : 11, steps = 10;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        int was = clt_set_grad_enabled(0);
        for (int s = 0; s < steps; s++) {
            clt_tensor *out = NULL;
            if (clt_module_forward(net, x, &out) != CLT_OK) {
                clt_set_grad_enabled(was);
                fail(b, name, "forward");
                goto done;
            }
            clt_tensor_free(out);
        }
        clt_set_grad_enabled(was);
        if (clt_device_synchronize(b->dev) != CLT_OK) {
            fail(b, name, "clt_device_synchronize");
            goto done;
        }
        tf[r] = (now() - t0) / steps;
        if (time_steps_both(b, name, run_auto, &am, &d, steps, &ts[r], &tp[r]))
            goto done;
    }
    report_per_param(b, name, ts, tp, reps);
    double f = median(tf, reps), st = median(ts, reps);
    report(b, name, st * 1e3, "ms", "forward_only", f * 1e3, st / f,
           "(a step costs this many forwards)");
    double la = 0, aa = 0;
    if (count_steps(b, name, run_auto, &am, &d, &la, &aa) == 0) {
        char n2[64];
        snprintf(n2, sizeof n2, "%s_allocs", name);
        report(b, n2, aa, "/step", "launches", la, 0, "(device buffers created per step: 0)");
    }
done:
    clt_optimizer_free(opt);
    clt_free(params);
    clt_module_free(net);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_generator_free(gen);
}

/* ---- an LSTM's training step: linear in the sequence's length --------------------------- */

typedef struct lstm_case {
    clt_module *m;
    clt_tensor *x; /* [T, N, input] */
} lstm_case;

/* Forward and backward of the sum of the output (the gradients added up
 * in the parameters), in a scope. */
static clt_status lstm_step(void *vm, const data *d)
{
    lstm_case *c = vm;
    clt_tensor *y = NULL, *loss = NULL;
    (void)d;
    clt_status st = clt_scope_begin();
    if (st == CLT_OK)
        st = clt_module_forward(c->m, c->x, &y);
    if (st == CLT_OK)
        st = clt_sum(y, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    clt_scope_end();
    return st;
}

/* LSTM(32, 64), batch 16: a step over 200 time steps against four steps
 * over 50, alternating, so that the ratio is 1 when the cost is linear in
 * the length (a backward that grew with its square would give about 4). */
static void case_lstm(bench *b, const char *name)
{
    enum { REPS = 7, N = 16, IN = 32, HID = 64, SHORT = 50, LONG = 200 };
    clt_generator *gen = NULL;
    lstm_case c[2] = {{NULL, NULL}, {NULL, NULL}};
    const int64_t lens[2] = {LONG, SHORT};
    double tl[REPS], ts[REPS];
    clt_rnn_opts o = CLT_RNN_DEFAULTS(IN, HID);
    if (clt_generator_new(3, &gen) != CLT_OK) {
        fail(b, name, "clt_generator_new");
        return;
    }
    for (int k = 0; k < 2; k++) {
        int64_t shape[3] = {lens[k], N, IN};
        if (clt_lstm_layer(b->dev, &o, gen, &c[k].m) != CLT_OK ||
            clt_randn(gen, b->dev, CLT_FLOAT32, 3, shape, &c[k].x) != CLT_OK) {
            fail(b, name, "making the model");
            goto done;
        }
    }
    for (int r = -1; r < REPS; r++) {
        double t_long = 0, t_short = 0;
        if (time_steps(b, name, lstm_step, &c[0], NULL, 1, &t_long) != 0 ||
            time_steps(b, name, lstm_step, &c[1], NULL, LONG / SHORT, &t_short) != 0)
            goto done;
        if (r >= 0) {
            tl[r] = t_long;
            ts[r] = t_short * (LONG / SHORT);
        }
    }
    double ml = median(tl, REPS), ms = median(ts, REPS);
    report(b, name, ml * 1e3, "ms", "4x_T50_steps", ms * 1e3, ml / ms, "<= 1.3");
done:
    for (int k = 0; k < 2; k++) {
        clt_module_free(c[k].m);
        clt_tensor_free(c[k].x);
    }
    clt_generator_free(gen);
}

/* ---- the optimizer's step alone: several parameters per launch ------------------------ */

/* The optimizers case_optim steps. */
enum { OPT_SGD, OPT_ADAMW, OPT_RMSPROP, OPT_NADAM };

/* An optimizer's step (SGD with momentum, AdamW, RMSprop with momentum and
 * centered, or NAdam) over parameters of the given shapes (up to 4
 * dimensions; gradients 2 p, left in place), with several parameters per
 * launch against one launch per parameter (CLTENSOR_OPTIM=per_param), in
 * alternating batches of steps; and the launches per step of each. */
static void case_optim(bench *b, const char *name, int kind, const int64_t (*shapes)[4],
                       size_t np)
{
    enum { MAXP = 64 };
    clt_generator *gen = NULL;
    clt_tensor *p[MAXP] = {NULL};
    clt_optimizer *opt = NULL;
    if (np > MAXP || clt_generator_new(5, &gen) != CLT_OK) {
        fail(b, name, "setting up");
        goto done;
    }
    for (size_t k = 0; k < np; k++) {
        int nd = 0;
        while (nd < 4 && shapes[k][nd])
            nd++;
        clt_tensor *sq = NULL, *loss = NULL;
        clt_status st = clt_randn(gen, b->dev, CLT_FLOAT32, nd, shapes[k], &p[k]);
        if (st == CLT_OK)
            st = clt_set_requires_grad(p[k], 1);
        if (st == CLT_OK)
            st = clt_mul(p[k], p[k], &sq);
        if (st == CLT_OK)
            st = clt_sum(sq, &loss);
        if (st == CLT_OK)
            st = clt_backward(loss, NULL, 0);
        clt_tensor_free(sq);
        clt_tensor_free(loss);
        if (st != CLT_OK) {
            fail(b, name, "making the parameters");
            goto done;
        }
    }
    clt_sgd_opts so = {0.01, 0.9, 0.0, 1e-4, 0};
    clt_rmsprop_opts ro = {0.01, 0.99, 1e-8, 1e-4, 0.9, 1};
    clt_status made = kind == OPT_SGD       ? clt_sgd(p, np, &so, &opt)
                      : kind == OPT_ADAMW   ? clt_adamw(p, np, NULL, &opt)
                      : kind == OPT_RMSPROP ? clt_rmsprop(p, np, &ro, &opt)
                                            : clt_nadam(p, np, NULL, &opt);
    if (made != CLT_OK) {
        fail(b, name, "making the optimizer");
        goto done;
    }
    static const char *const mode[2] = {"per_param", "multi"};
    int reps = b->quick ? 5 : 15, steps = 50;
    double t[2][MAX_REPS], launches[2] = {0, 0};
    for (int r = -1; r < reps; r++) {
        for (int m = 0; m < 2; m++) {
            optim_mode(mode[m]);
            clt_stats s0, s1;
            clt_stats_get(&s0);
            double t0 = now();
            for (int s = 0; s < (r < 0 ? 3 : steps); s++)
                if (clt_optimizer_step(opt) != CLT_OK) {
                    fail(b, name, "clt_optimizer_step");
                    goto done;
                }
            if (clt_device_synchronize(b->dev) != CLT_OK) {
                fail(b, name, "clt_device_synchronize");
                goto done;
            }
            clt_stats_get(&s1);
            if (r >= 0) {
                t[m][r] = (now() - t0) / steps;
                launches[m] = (double)(s1.kernel_launches - s0.kernel_launches) / steps;
            }
        }
    }
    double per = median(t[0], reps), multi = median(t[1], reps);
    report(b, name, multi * 1e3, "ms", "per_param", per * 1e3, per / multi,
           "(per parameter / several per launch, >= 1: faster)");
    char n2[64];
    snprintf(n2, sizeof n2, "%s_launches", name);
    report(b, n2, launches[1], "/step", "per_param", launches[0],
           launches[1] > 0 ? launches[0] / launches[1] : 0, "(kernel launches per step)");
done:
    optim_mode(NULL);
    clt_optimizer_free(opt);
    for (size_t k = 0; k < np; k++)
        clt_tensor_free(p[k]);
    clt_generator_free(gen);
}

void bench_train(bench *b)
{
    static const mlp_case cases[] = {
        {"train_mlp_64", 2, {64, 128, 10}, 64},
        {"train_mlp_784", 3, {784, 512, 512, 10}, 256},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (selected(b, cases[i].name))
            case_mlp(b, &cases[i]);
    if (selected(b, "train_cnn_digits"))
        case_cnn(b, "train_cnn_digits");
    if (selected(b, "train_lstm_T200"))
        case_lstm(b, "train_lstm_T200");
    /* the digits CNN's parameters with AdamW, the MLP 784's with SGD, and
     * 24 small ones (a small transformer's norms and projections) */
    static const int64_t cnn[][4] = {{16, 1, 3, 3}, {16}, {32, 16, 3, 3}, {32}, {10, 128}, {10}};
    static const int64_t mlp[][4] = {{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};
    int64_t small[24][4] = {{0}};
    for (int k = 0; k < 24; k++) { /* [64, 64] and [64] in turn */
        small[k][0] = 64;
        small[k][1] = k % 2 ? 0 : 64;
    }
    if (selected(b, "train_optim_adamw_cnn"))
        case_optim(b, "train_optim_adamw_cnn", OPT_ADAMW, cnn, 6);
    if (selected(b, "train_optim_sgd_mlp_784"))
        case_optim(b, "train_optim_sgd_mlp_784", OPT_SGD, mlp, 6);
    if (selected(b, "train_optim_adamw_mlp_784"))
        case_optim(b, "train_optim_adamw_mlp_784", OPT_ADAMW, mlp, 6);
    if (selected(b, "train_optim_adamw_24_small"))
        case_optim(b, "train_optim_adamw_24_small", OPT_ADAMW, (const int64_t (*)[4])small, 24);
    if (selected(b, "train_optim_rmsprop_cnn"))
        case_optim(b, "train_optim_rmsprop_cnn", OPT_RMSPROP, cnn, 6);
    if (selected(b, "train_optim_rmsprop_24_small"))
        case_optim(b, "train_optim_rmsprop_24_small", OPT_RMSPROP, (const int64_t (*)[4])small,
                   24);
    if (selected(b, "train_optim_nadam_24_small"))
        case_optim(b, "train_optim_nadam_24_small", OPT_NADAM, (const int64_t (*)[4])small, 24);
}
