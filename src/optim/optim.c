/* optim.c: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD
 * with one fused kernel launch per parameter tensor (cl/optim.cl), SparseAdam's row
 * updates, sparse gradients for SGD and Adagrad, over
 * parameter groups, LBFGS's hooks (its steps in lbfgs.c), gradient-norm
 * clipping, and learning-rate schedules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/optim.h"

typedef enum kind {
    SGD, ADAM, ADAMW, RMSPROP, ADAGRAD, ADAMAX, NADAM, RADAM, ADADELTA, RPROP, ASGD, LBFGS,
    SPARSE_ADAM
} kind;

/* SGD: momentum buffer; Adam: m, v, vmax; RMSprop: square_avg, momentum
 * buffer, grad_avg; Adagrad: sum; Adamax: exp_avg, exp_inf; NAdam, RAdam:
 * exp_avg, exp_avg_sq; Adadelta: square_avg, acc_delta; Rprop: prev, step_size; ASGD:
 * ax */
#define NSTATE 3

/* A parameter group: its parameters params[first, first + n), its rate
 * now and its settings (those of its kind, and the keys schedules add). */
typedef struct opt_group {
    size_t first, n;
    double lr;
    clt__opt_settings set;
} opt_group;

struct clt_optimizer {
    kind kind;
    size_t n;
    clt_tensor **params;          /* references */
    clt_tensor **state[NSTATE];   /* per parameter, made at the first step */
    /* Per parameter, the updates it has had (PyTorch's state['step']): a
     * parameter without a gradient at some step is skipped and keeps its
     * own count, which Adam's bias correction uses; SGD's momentum buffer
     * starts at a parameter's first update. */
    int64_t *updates;
    /* Per parameter, SGD's momentum buffer made and not used yet: its
     * first use sets it to the gradient (PyTorch's buf = d.clone()), also
     * when momentum starts mid-run (OneCycleLR's cycling). */
    unsigned char *fresh;
    size_t resume;                /* parameters a step that failed part-way updated */
    int64_t steps;
    /* torch's param_groups, in order, each over a run of params (a group
     * added later takes the parameters appended), and torch's defaults:
     * the settings it was made with, which a group added without its own
     * takes. */
    opt_group *groups;
    size_t n_groups;
    clt__opt_settings defaults;
    /* The schedules made on it and not yet freed (borrowed; each is told
     * when the optimizer is freed first): with more than one, each takes
     * torch's chainable form (the schedules' factors multiply). */
    clt_lr_scheduler **scheds;
    size_t schedules, sched_cap;
    /* The scalars per parameter that torch keeps in 0-d float32 tensors
     * whatever the parameter's dtype (NAdam's mu_product; ASGD's eta and
     * mu: scalar_names), on the host in float32 as torch keeps them, and
     * the 0-d float32 tensors that carry them into and out of files (filled
     * only by clt__optimizer_state and read by clt__optimizer_loaded); NULL
     * for the kinds without. */
    float *scalar[2];
    clt_tensor **scalar_t[2];
    clt__lbfgs *lbfgs; /* LBFGS's state (lbfgs.c); NULL for the other kinds */
    /* During a step of SGD or Adagrad, per parameter, the dense form of a
     * sparse gradient (owned; NULL for the others): torch's sparse paths
     * of those two give what the dense update of it gives. */
    clt_tensor **densified;
};

/* Each kind's constructor, torch's class name, its kernel, its kernel
 * over several parameters per launch (NULL: one launch per parameter), and
 * the state operands both take after the parameter and its gradient. */
static const struct {
    const char *fn, *torch, *kernel, *multi;
    int nstate;
} kinds[] = {
    [SGD] = {"clt_sgd", "SGD", "sgd_step", "sgd_step_multi", 1},
    [ADAM] = {"clt_adam", "Adam", "adam_step", "adam_step_multi", 3},
    [ADAMW] = {"clt_adamw", "AdamW", "adam_step", "adam_step_multi", 3},
    [RMSPROP] = {"clt_rmsprop", "RMSprop", "rmsprop_step", "rmsprop_step_multi", 3},
    [ADAGRAD] = {"clt_adagrad", "Adagrad", "adagrad_step", "adagrad_step_multi", 1},
    [ADAMAX] = {"clt_adamax", "Adamax", "adamax_step", "adamax_step_multi", 2},
    [NADAM] = {"clt_nadam", "NAdam", "nadam_step", "nadam_step_multi", 2},
    [RADAM] = {"clt_radam", "RAdam", "radam_step", "radam_step_multi", 2},
    [ADADELTA] = {"clt_adadelta", "Adadelta", "adadelta_step", "adadelta_step_multi", 2},
    [RPROP] = {"clt_rprop", "Rprop", "rprop_step", "rprop_step_multi", 2},
    [ASGD] = {"clt_asgd", "ASGD", "asgd_step", "asgd_step_multi", 1},
    [LBFGS] = {"clt_lbfgs", "LBFGS", NULL, NULL, 0},
    [SPARSE_ADAM] = {"clt_sparse_adam", "SparseAdam", NULL, NULL, 2},
};

/* The names of the host scalars (scalar, scalar_t) of each kind that
 * keeps them, as torch's state_dict names them, and their values before a
 * parameter's first update (torch's torch.tensor(1.); ASGD's eta takes the
 * rate at that update). */
static const struct {
    const char *name[2];
    float init[2];
} scalars[] = {
    [NADAM] = {{"mu_product", NULL}, {1.0f, 0.0f}},
    [ASGD] = {{"eta", "mu"}, {0.0f, 1.0f}},
};

static int scalar_count(kind k)
{
    return k == NADAM ? 1 : k == ASGD ? 2 : 0;
}

/* The settings of kind k among c, and their size (the options struct the
 * constructor of k takes). */
static void *settings_of(clt__opt_settings *c, kind k, size_t *size)
{
#define OF(member) (*size = sizeof c->member, (void *)&c->member)
    switch (k) {
    case SGD:
        return OF(sgd);
    case RMSPROP:
        return OF(rmsprop);
    case ADAGRAD:
        return OF(adagrad);
    case ADAMAX:
        return OF(adamax);
    case NADAM:
        return OF(nadam);
    case RADAM:
        return OF(radam);
    case ADADELTA:
        return OF(adadelta);
    case RPROP:
        return OF(rprop);
    case ASGD:
        return OF(asgd);
    case LBFGS:
        return OF(lbfgs);
    case SPARSE_ADAM:
        return OF(sparse_adam);
    default:
        return OF(adam);
    }
#undef OF
}

/* The learning rate among the settings of kind k: the first member of
 * every kind's options struct. */
static double *settings_lr(clt__opt_settings *c, kind k)
{
    size_t size;
    return settings_of(c, k, &size);
}

/* Whether kind k with settings c keeps state slot j (all made at once,
 * when the optimizer is). */
static bool keeps_state(kind k, const clt__opt_settings *c, int j)
{
    switch (k) {
    case SGD:
        return j == 0 && c->sgd.momentum != 0.0;
    case RMSPROP:
        return j == 0 || (j == 1 && c->rmsprop.momentum != 0.0) ||
               (j == 2 && c->rmsprop.centered);
    case ADAGRAD:
        return j == 0;
    case ADAMAX:
    case NADAM:
    case RADAM:
    case ADADELTA:
    case RPROP:
        return j < 2;
    case ASGD:
        return j == 0;
    case LBFGS:
        return false;
    case SPARSE_ADAM:
        return j < 2;
    default:
        return j < 2 || c->adam.amsgrad;
    }
}

/* A setting that must be a number >= 0, named as torch's message names it. */
static clt_status check_nonneg(double v, const char *what, const char *fn)
{
    if (!(v >= 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid %s value: %g", fn, what, v);
    return CLT_OK;
}

static clt_status check_lr(double lr, const char *fn)
{
    if (!(lr >= 0.0) || isinf(lr))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid learning rate: %g", fn, lr);
    return CLT_OK;
}

/* The checks of torch's optimizers with betas (Adam, AdamW, Adamax, NAdam,
 * RAdam), in torch's order and with its messages. */
static clt_status check_betas(double beta1, double beta2, double eps, double weight_decay,
                              const char *fn)
{
    if (!(eps >= 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid epsilon value: %g", fn, eps);
    if (!(beta1 >= 0.0 && beta1 < 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid beta parameter at index 0: %g",
                          fn, beta1);
    if (!(beta2 >= 0.0 && beta2 < 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid beta parameter at index 1: %g",
                          fn, beta2);
    return check_nonneg(weight_decay, "weight_decay", fn);
}

static clt_status check_opts(kind k, const clt__opt_settings *c, const char *fn)
{
    clt_status st = check_lr(*settings_lr((clt__opt_settings *)c, k), fn);
    if (st != CLT_OK)
        return st;
    if (k == SGD) {
        const clt_sgd_opts *s = &c->sgd;
        if ((st = check_nonneg(s->momentum, "momentum", fn)) != CLT_OK ||
            (st = check_nonneg(s->weight_decay, "weight_decay", fn)) != CLT_OK)
            return st;
        if (!isfinite(s->dampening))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid dampening value: %g", fn,
                              s->dampening);
        if (s->nesterov && (s->momentum <= 0.0 || s->dampening != 0.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Nesterov momentum requires a momentum and zero dampening", fn);
        return CLT_OK;
    }
    if (k == RMSPROP) {
        const clt_rmsprop_opts *r = &c->rmsprop;
        if ((st = check_nonneg(r->eps, "epsilon", fn)) != CLT_OK ||
            (st = check_nonneg(r->momentum, "momentum", fn)) != CLT_OK ||
            (st = check_nonneg(r->weight_decay, "weight_decay", fn)) != CLT_OK ||
            (st = check_nonneg(r->alpha, "alpha", fn)) != CLT_OK)
            return st;
        return CLT_OK;
    }
    if (k == ADAGRAD) {
        const clt_adagrad_opts *g = &c->adagrad;
        if ((st = check_nonneg(g->lr_decay, "lr_decay", fn)) != CLT_OK ||
            (st = check_nonneg(g->weight_decay, "weight_decay", fn)) != CLT_OK ||
            (st = check_nonneg(g->initial_accumulator_value, "initial_accumulator_value",
                               fn)) != CLT_OK ||
            (st = check_nonneg(g->eps, "epsilon", fn)) != CLT_OK)
            return st;
        return CLT_OK;
    }
    if (k == ADADELTA) {
        /* torch's checks, order and messages */
        const clt_adadelta_opts *d = &c->adadelta;
        if (!(d->rho >= 0.0 && d->rho <= 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid rho value: %g", fn, d->rho);
        if ((st = check_nonneg(d->eps, "epsilon", fn)) != CLT_OK)
            return st;
        return check_nonneg(d->weight_decay, "weight_decay", fn);
    }
    if (k == RPROP) {
        /* torch's check and message; it takes NaN step sizes, which would
         * make every step size NaN */
        const clt_rprop_opts *r = &c->rprop;
        if (!(0.0 < r->etaminus && r->etaminus < 1.0 && 1.0 < r->etaplus))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Invalid eta values: %g, %g", fn,
                              r->etaminus, r->etaplus);
        if (isnan(r->step_size_min) || isnan(r->step_size_max))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid step_sizes: %g, %g", fn,
                              r->step_size_min, r->step_size_max);
        return CLT_OK;
    }
    if (k == ASGD) {
        /* torch checks weight_decay only; NaN in the others would make
         * every parameter NaN */
        const clt_asgd_opts *a = &c->asgd;
        if (isnan(a->lambd) || isnan(a->alpha) || isnan(a->t0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: invalid lambd, alpha or t0 value: %g, %g, %g", fn, a->lambd,
                              a->alpha, a->t0);
        return check_nonneg(a->weight_decay, "weight_decay", fn);
    }
    if (k == LBFGS)
        return clt__lbfgs_check(&c->lbfgs, fn);
    if (k == SPARSE_ADAM) /* torch's checks, order and messages */
        return check_betas(c->sparse_adam.beta1, c->sparse_adam.beta2, c->sparse_adam.eps, 0.0,
                           fn);
    if (k == ADAMAX)
        return check_betas(c->adamax.beta1, c->adamax.beta2, c->adamax.eps,
                           c->adamax.weight_decay, fn);
    if (k == RADAM)
        return check_betas(c->radam.beta1, c->radam.beta2, c->radam.eps, c->radam.weight_decay,
                           fn);
    if (k == NADAM) {
        const clt_nadam_opts *a = &c->nadam;
        if ((st = check_betas(a->beta1, a->beta2, a->eps, a->weight_decay, fn)) != CLT_OK)
            return st;
        return check_nonneg(a->momentum_decay, "momentum_decay", fn);
    }
    const clt_adam_opts *a = &c->adam;
    return check_betas(a->beta1, a->beta2, a->eps, a->weight_decay, fn);
}

/* The group parameter i belongs to. */
static opt_group *group_of(const clt_optimizer *o, size_t i)
{
    size_t g = o->n_groups - 1;
    while (g > 0 && i < o->groups[g].first)
        g--;
    return &o->groups[g];
}

/* State k of parameter i: zeros like it (Adagrad's sum:
 * initial_accumulator_value; in no scope), kept on the parameter's device
 * and in its dtype when the model moves or is converted (clt_module_to,
 * clt_module_to_dtype). */
static clt_status state(clt_optimizer *o, int k, size_t i, clt_tensor **out)
{
    const clt_tensor *p = o->params[i];
    clt_tensor **s = &o->state[k][i];
    clt_status st = CLT_OK;
    if (*s == NULL) {
        double init =
            o->kind == ADAGRAD ? group_of(o, i)->set.adagrad.initial_accumulator_value : 0.0;
        st = clt__full(p->dev, p->dtype, p->ndim, p->shape, init, s);
        if (st == CLT_OK)
            clt__scope_disown(*s);
    } else {
        st = clt__tensor_rehome(*s, p->dev, p->dtype, "clt_optimizer_step");
    }
    *out = *s;
    return st;
}

/* Makes every state tensor o's settings keep and it lacks (all of them
 * for a new optimizer; momentum buffers when OneCycleLR gives momentum to
 * an optimizer made without), for every parameter; a new SGD momentum
 * buffer is fresh.  What was made before a failure stays, unused. */
static clt_status make_state(clt_optimizer *o, const char *fn)
{
    for (size_t i = 0; i < o->n; i++) {
        for (int j = 0; j < NSTATE; j++) {
            clt_tensor *unused;
            if (!keeps_state(o->kind, &group_of(o, i)->set, j) || o->state[j][i] != NULL)
                continue;
            clt_status st = state(o, j, i, &unused);
            if (st != CLT_OK)
                return clt__error_in(st, fn);
            if (o->kind == SGD)
                o->fresh[i] = 1;
        }
    }
    return CLT_OK;
}

/* Where a parameter's elements lie, for finding one given twice. */
typedef struct span {
    const clt__storage *storage;
    uint64_t begin, end; /* bytes */
    const clt_tensor *t;
    size_t index;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->storage != y->storage)
        return (uintptr_t)x->storage < (uintptr_t)y->storage ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->t != y->t)
        return (uintptr_t)x->t < (uintptr_t)y->t ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Refuses a parameter given twice, or two whose elements overlap (an alias
 * made with clt_detach): a step would update those elements twice.
 * PyTorch 1.13 warns ("optimizer contains a parameter group with duplicate
 * parameters") and later versions raise; the library never prints.  With
 * `grads`, the parameters' gradients are checked instead (parameters
 * without one skipped): clip_grad_norm_ would count such a gradient twice
 * in the norm and scale it twice, as PyTorch does. */
static clt_status check_distinct(clt_tensor *const *params, size_t n, bool grads, const char *fn)
{
    span *s = clt__calloc(n ? n : 1, sizeof *s);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *p = grads ? clt__grad_of(params[i]) : params[i];
        if (p == NULL)
            continue;
        uint64_t es = clt_dtype_size(p->dtype);
        s[m++] = (span){p->storage, (uint64_t)p->offset * es,
                        (uint64_t)(p->offset + p->numel) * es, p, i};
    }
    qsort(s, m, sizeof *s, span_cmp);
    clt_status st = CLT_OK;
    size_t far = 0; /* the span of this storage seen so far that ends last */
    for (size_t k = 1; k < m && st == CLT_OK; k++) {
        if (s[k].storage != s[far].storage) {
            far = k;
            continue;
        }
        size_t lo = s[far].index < s[k].index ? s[far].index : s[k].index;
        size_t hi = s[far].index < s[k].index ? s[k].index : s[far].index;
        if (s[k].t == s[k - 1].t)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: parameter %zu is parameter %zu given again (%s)", fn,
                            s[k].index, s[k - 1].index,
                            grads ? "its gradient would count twice in the norm and be scaled "
                                    "twice"
                                  : "duplicate parameters would be updated twice per step");
        else if (s[k].begin < s[far].end && s[k].end > s[k].begin)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s %zu and %zu share memory (%s)", fn,
                            grads ? "the gradients of parameters" : "parameters", lo, hi,
                            grads ? "their elements would be scaled twice"
                                  : "their elements would be updated twice per step");
        if (s[k].end > s[far].end)
            far = k;
    }
    free(s);
    return st;
}

/* Room for m more parameters in every per-parameter array of o (the new
 * entries zeroed); false when out of host memory (what was grown stays,
 * unused). */
static bool grow(clt_optimizer *o, size_t m)
{
    size_t n = o->n + m;
#define GROW(arr)                                                                          \
    do {                                                                                   \
        void *v_ = clt__realloc((arr), n ? n : 1, sizeof *(arr));                          \
        if (v_ == NULL)                                                                    \
            return false;                                                                  \
        (arr) = v_;                                                                        \
        memset(&(arr)[o->n], 0, m * sizeof *(arr));                                        \
    } while (0)
    GROW(o->params);
    GROW(o->updates);
    GROW(o->fresh);
    for (int k = 0; k < NSTATE; k++)
        GROW(o->state[k]);
    for (int j = 0; j < scalar_count(o->kind); j++) {
        GROW(o->scalar[j]);
        GROW(o->scalar_t[j]);
    }
#undef GROW
    opt_group *g = clt__realloc(o->groups, o->n_groups + 1, sizeof *g);
    if (g == NULL)
        return false;
    o->groups = g;
    return true;
}

/* Undoes a failed append from parameter `from` on: their state and
 * scalars freed, their references dropped; o->n is `from` again. */
static void unappend(clt_optimizer *o, size_t from)
{
    for (size_t i = from; i < o->n; i++) {
        clt__tensor_unref(o->params[i]);
        o->params[i] = NULL;
        for (int k = 0; k < NSTATE; k++) {
            clt_tensor_free(o->state[k][i]);
            o->state[k][i] = NULL;
        }
        for (int j = 0; j < scalar_count(o->kind); j++) {
            clt_tensor_free(o->scalar_t[j][i]);
            o->scalar_t[j][i] = NULL;
        }
        o->fresh[i] = 0;
    }
    o->n = from;
}

static clt_status make_state(clt_optimizer *o, const char *fn);

/* Appends a group of the m parameters params (checked by the caller) with
 * the settings c (checked too): their references, their host scalars at
 * their first values with their tensors for files, and their state.  A
 * failure leaves o as it was. */
static clt_status append(clt_optimizer *o, clt_tensor *const *params, size_t m,
                         const clt__opt_settings *c, const char *fn)
{
    size_t from = o->n;
    if (!grow(o, m))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    o->groups[o->n_groups] = (opt_group){from, m, *settings_lr((clt__opt_settings *)c, o->kind),
                                         *c};
    o->n_groups++;
    clt_status st = CLT_OK;
    for (size_t i = from; i < from + m; i++) {
        o->params[i] = clt_tensor_retain(params[i - from]);
        o->n = i + 1;
        for (int j = 0; j < scalar_count(o->kind) && st == CLT_OK; j++) {
            float init = scalars[o->kind].init[j];
            o->scalar[j][i] = init;
            st = clt__full(o->params[i]->dev, CLT_FLOAT32, 0, NULL, init, &o->scalar_t[j][i]);
            if (st == CLT_OK)
                clt__scope_disown(o->scalar_t[j][i]);
            else
                clt__error_in(st, fn);
        }
        if (st != CLT_OK)
            break;
    }
    /* The state is made now rather than at the first step, so that the
     * first step already holds everything later steps hold and the
     * allocator's cache serves every later step. */
    if (st == CLT_OK)
        st = make_state(o, fn);
    if (st != CLT_OK) {
        unappend(o, from);
        o->n_groups--;
    }
    return st;
}

/* An optimizer of kind k over params (checked by the caller) in groups of
 * sizes[g] parameters with the settings c[g] (checked too), its defaults
 * `defaults`, its state made; messages name fn. */
static clt_status build(kind k, clt_tensor *const *params, const size_t *sizes, size_t groups,
                        const clt__opt_settings *c, const clt__opt_settings *defaults,
                        const char *fn, clt_optimizer **out)
{
    clt_optimizer *o = clt__calloc(1, sizeof *o);
    if (o == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    o->kind = k;
    o->defaults = *defaults;
    clt_status st = CLT_OK;
    for (size_t g = 0, at = 0; g < groups && st == CLT_OK; at += sizes[g++])
        st = append(o, params + at, sizes[g], &c[g], fn);
    if (st == CLT_OK && k == LBFGS) {
        /* the caller's string is not kept; LBFGS has one group (torch's
         * rule, kept by clt_optimizer_add_param_group) */
        const char *ls = c[0].lbfgs.line_search_fn ? "strong_wolfe" : NULL;
        o->groups[0].set.lbfgs.line_search_fn = ls;
        o->defaults.lbfgs.line_search_fn = ls;
        st = clt__lbfgs_new(params, sizes[0], fn, &o->lbfgs);
    }
    if (st != CLT_OK) {
        clt_optimizer_free(o);
        return st;
    }
    *out = o;
    return CLT_OK;
}

/* The checks of every parameter of a list: not NULL, a floating leaf that
 * requires grad, contiguous; n 0 refused. */
static clt_status check_params(clt_tensor *const *params, size_t n, const char *fn)
{
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: optimizer got an empty parameter list",
                          fn);
    CLT__REQUIRE_ARG(params, fn);
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *p = params[i];
        if (p == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: parameter %zu is NULL", fn, i);
        if (!clt_is_leaf(p) || !clt_requires_grad(p))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: parameter %zu is not a leaf that requires grad: can't "
                              "optimize a computed tensor",
                              fn, i);
        if (p->dtype != CLT_FLOAT32 && p->dtype != CLT_FLOAT64)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: parameter %zu is %s; float32 and float64 are supported", fn,
                              i, clt_dtype_name(p->dtype));
        if (!clt__is_contiguous(p))
            return clt__error(CLT_ERR_NOT_CONTIGUOUS, "%s: parameter %zu is not contiguous", fn,
                              i);
    }
    return check_distinct(params, n, false, fn);
}

static clt_status make(kind k, clt_tensor *const *params, size_t n, const clt__opt_settings *c,
                       clt_optimizer **out)
{
    const char *fn = kinds[k].fn;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: optimizer got an empty parameter list",
                          fn);
    CLT__REQUIRE_ARG(params, fn);
    clt_status st = check_opts(k, c, fn);
    if (st == CLT_OK)
        st = check_params(params, n, fn);
    if (st == CLT_OK)
        st = build(k, params, &n, 1, c, c, fn, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_sgd(clt_tensor *const *params, size_t n, const clt_sgd_opts *opts,
                   clt_optimizer **out)
{
    clt__opt_settings c = {.sgd = CLT_SGD_DEFAULTS};
    if (opts)
        c.sgd = *opts;
    return make(SGD, params, n, &c, out);
}

clt_status clt_sparse_adam(clt_tensor *const *params, size_t n, const clt_sparse_adam_opts *opts,
                           clt_optimizer **out)
{
    clt__opt_settings c = {.sparse_adam = CLT_SPARSE_ADAM_DEFAULTS};
    if (opts)
        c.sparse_adam = *opts;
    return make(SPARSE_ADAM, params, n, &c, out);
}

clt_status clt_adam(clt_tensor *const *params, size_t n, const clt_adam_opts *opts,
                    clt_optimizer **out)
{
    clt__opt_settings c = {.adam = CLT_ADAM_DEFAULTS};
    if (opts)
        c.adam = *opts;
    return make(ADAM, params, n, &c, out);
}

clt_status clt_adamw(clt_tensor *const *params, size_t n, const clt_adam_opts *opts,
                     clt_optimizer **out)
{
    clt__opt_settings c = {.adam = CLT_ADAMW_DEFAULTS};
    if (opts)
        c.adam = *opts;
    return make(ADAMW, params, n, &c, out);
}

clt_status clt_rmsprop(clt_tensor *const *params, size_t n, const clt_rmsprop_opts *opts,
                       clt_optimizer **out)
{
    clt__opt_settings c = {.rmsprop = CLT_RMSPROP_DEFAULTS};
    if (opts)
        c.rmsprop = *opts;
    return make(RMSPROP, params, n, &c, out);
}

clt_status clt_adagrad(clt_tensor *const *params, size_t n, const clt_adagrad_opts *opts,
                       clt_optimizer **out)
{
    clt__opt_settings c = {.adagrad = CLT_ADAGRAD_DEFAULTS};
    if (opts)
        c.adagrad = *opts;
    return make(ADAGRAD, params, n, &c, out);
}

clt_status clt_adamax(clt_tensor *const *params, size_t n, const clt_adamax_opts *opts,
                      clt_optimizer **out)
{
    clt__opt_settings c = {.adamax = CLT_ADAMAX_DEFAULTS};
    if (opts)
        c.adamax = *opts;
    return make(ADAMAX, params, n, &c, out);
}

clt_status clt_nadam(clt_tensor *const *params, size_t n, const clt_nadam_opts *opts,
                     clt_optimizer **out)
{
    clt__opt_settings c = {.nadam = CLT_NADAM_DEFAULTS};
    if (opts)
        c.nadam = *opts;
    return make(NADAM, params, n, &c, out);
}

clt_status clt_radam(clt_tensor *const *params, size_t n, const clt_radam_opts *opts,
                     clt_optimizer **out)
{
    clt__opt_settings c = {.radam = CLT_RADAM_DEFAULTS};
    if (opts)
        c.radam = *opts;
    return make(RADAM, params, n, &c, out);
}

clt_status clt_adadelta(clt_tensor *const *params, size_t n, const clt_adadelta_opts *opts,
                        clt_optimizer **out)
{
    clt__opt_settings c = {.adadelta = CLT_ADADELTA_DEFAULTS};
    if (opts)
        c.adadelta = *opts;
    return make(ADADELTA, params, n, &c, out);
}

clt_status clt_rprop(clt_tensor *const *params, size_t n, const clt_rprop_opts *opts,
                     clt_optimizer **out)
{
    clt__opt_settings c = {.rprop = CLT_RPROP_DEFAULTS};
    if (opts)
        c.rprop = *opts;
    return make(RPROP, params, n, &c, out);
}

clt_status clt_asgd(clt_tensor *const *params, size_t n, const clt_asgd_opts *opts,
                    clt_optimizer **out)
{
    clt__opt_settings c = {.asgd = CLT_ASGD_DEFAULTS};
    if (opts)
        c.asgd = *opts;
    return make(ASGD, params, n, &c, out);
}

clt_status clt_lbfgs(clt_tensor *const *params, size_t n, const clt_lbfgs_opts *opts,
                     clt_optimizer **out)
{
    clt__opt_settings c = {.lbfgs = CLT_LBFGS_DEFAULTS};
    if (opts)
        c.lbfgs = *opts;
    /* torch's max_eval None: max_iter * 5 // 4 */
    if (c.lbfgs.max_eval < 0 && c.lbfgs.max_iter > 0)
        c.lbfgs.max_eval = c.lbfgs.max_iter > INT64_MAX / 5 ? INT64_MAX : c.lbfgs.max_iter * 5 / 4;
    return make(LBFGS, params, n, &c, out);
}

static void detach_schedules(clt_optimizer *o);

void clt_optimizer_free(clt_optimizer *opt)
{
    if (opt == NULL)
        return;
    for (size_t i = 0; i < opt->n; i++) {
        if (opt->params)
            clt__tensor_unref(opt->params[i]);
        for (int k = 0; k < NSTATE; k++)
            if (opt->state[k])
                clt_tensor_free(opt->state[k][i]);
        for (int j = 0; j < 2; j++)
            if (opt->scalar_t[j])
                clt_tensor_free(opt->scalar_t[j][i]);
    }
    for (int j = 0; j < 2; j++) {
        free(opt->scalar[j]);
        free(opt->scalar_t[j]);
    }
    clt__lbfgs_free(opt->lbfgs);
    detach_schedules(opt);
    free(opt->params);
    free(opt->updates);
    free(opt->fresh);
    for (int k = 0; k < NSTATE; k++)
        free(opt->state[k]);
    free(opt->groups);
    free(opt);
}

static const char *options(clt_dtype dt)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[dt], "T", dt, NULL, dt, "");
}

const char *clt__optim_options(clt_dtype dt)
{
    return options(dt);
}

/* One work-item per chunk, in work-groups of one, on CPU devices; per
 * element on GPUs. */
static void geometry(const clt_tensor *p, cl_ulong *chunk, size_t *gws, const size_t **lws)
{
    static const size_t one = 1;
    *chunk = clt__chunk_size(p->dev, p->numel);
    if (*chunk == 0)
        *chunk = 1;
    *gws = (size_t)(((cl_ulong)p->numel + *chunk - 1) / *chunk);
    *lws = p->dev->info.type == CLT_DEVICE_TYPE_CPU ? &one : NULL;
}

void clt__optim_geometry(const clt_tensor *p, cl_ulong *chunk, size_t *gws, const size_t **lws)
{
    geometry(p, chunk, gws, lws);
}

/* Parameter i updated: its count, SGD's momentum buffer used, its
 * version. */
static void counted(clt_optimizer *o, size_t i)
{
    o->updates[i]++;
    if (o->kind == SGD && group_of(o, i)->set.sgd.momentum != 0.0)
        o->fresh[i] = 0;
    clt__version_bump(o->params[i]);
}

/* Parameters per launch of cl/optim.cl's *_multi kernels, and their table
 * of offsets and element counts (MULTI_K and clt_optim_slots there). */
#define MULTI_K 8
typedef struct multi_slots {
    cl_ulong off[MULTI_K], n[MULTI_K];
} multi_slots;

/* Whether the step updates several parameters per launch:
 * CLTENSOR_OPTIM=per_param asks for one launch per parameter (the
 * benchmarks' baseline; the same bits). */
static bool multi_wanted(const clt_optimizer *o)
{
    const char *s = getenv("CLTENSOR_OPTIM");
    return kinds[o->kind].multi && !(s && clt__strcaseeq(s, "per_param"));
}

/* Whether parameter i is updated by a step: it has a gradient and
 * elements (torch skips one without a gradient). */
static bool stepped(const clt_optimizer *o, size_t i)
{
    const clt_tensor *p = o->params[i];
    return (clt__grad_of(p) != NULL || clt__grad_is_sparse(p)) && p->numel > 0;
}

/* Whether parameter i takes SGD's sparse update (cl/optim.cl's
 * sgd_sparse, sgd_sparse_param): SGD without momentum on a sparse
 * gradient, which torch adds in entry by entry. */
static bool sparse_sgd(const clt_optimizer *o, size_t i)
{
    return o->kind == SGD && group_of(o, i)->set.sgd.momentum == 0.0 &&
           clt__grad_is_sparse(o->params[i]);
}

/* The dense gradient a kernel reads for parameter i: its own, or the
 * dense form of its sparse one (densified). */
static const clt_tensor *grad_of(const clt_optimizer *o, size_t i)
{
    const clt_tensor *g = clt__grad_of(o->params[i]);
    return g ? g : o->densified ? o->densified[i] : NULL;
}

/* Whether parameters i and j hold the same host scalars (NAdam's
 * mu_product, ASGD's eta and mu), which their kernel's scalars come
 * from. */
static bool same_scalars(const clt_optimizer *o, size_t i, size_t j)
{
    for (int k = 0; k < scalar_count(o->kind); k++)
        if (memcmp(&o->scalar[k][i], &o->scalar[k][j], sizeof(float)) != 0)
            return false;
    return true;
}

/* The parameters from i on that one launch updates with i (i stepped):
 * up to MULTI_K of them into idx, those stepped and on i's device, of its
 * dtype, in its group and with its update count (and SGD's fresh flag, the
 * host scalars of NAdam and ASGD), up to the first that is not; *next the
 * parameter after the last taken.  Without multi, i alone. */
static size_t batch(const clt_optimizer *o, size_t i, bool multi, size_t *idx, size_t *next)
{
    const clt_tensor *p = o->params[i];
    const opt_group *gr = group_of(o, i);
    size_t m = 0, j = i;
    idx[m++] = i;
    *next = i + 1;
    for (j = i + 1; multi && j < o->n && m < MULTI_K; j++) {
        const clt_tensor *q = o->params[j];
        if (!stepped(o, j))
            continue;
        if (sparse_sgd(o, j) || q->dev != p->dev || q->dtype != p->dtype || group_of(o, j) != gr ||
            o->updates[j] != o->updates[i] || o->fresh[j] != o->fresh[i] ||
            !same_scalars(o, i, j))
            break;
        idx[m++] = j;
        *next = j + 1;
    }
    return m;
}

/* The scalars of a kind's kernels after their `chunk` argument, in order:
 * values of the parameter's compute type, or int flags (flag[k]); and the
 * host scalars (NAdam's mu_product, ASGD's eta and mu) the parameters
 * take when the launch succeeds. */
enum { MAX_SCALARS = 12 };
typedef struct kernel_scalars {
    size_t n;
    double v[MAX_SCALARS];
    bool flag[MAX_SCALARS];
    float next[2];
} kernel_scalars;

/* Parameter i's kernel scalars (its group's settings and its update
 * count), in double, as torch's Python computes them. */
static void step_scalars(const clt_optimizer *o, size_t i, kernel_scalars *ks)
{
    const opt_group *gr = group_of(o, i);
    const clt__opt_settings *set = &gr->set;
    double lr = gr->lr, t = (double)(o->updates[i] + 1);
    ks->n = 0;
#define PUT(x) (ks->flag[ks->n] = false, ks->v[ks->n++] = (x))
#define FLAG(x) (ks->flag[ks->n] = true, ks->v[ks->n++] = (x) ? 1.0 : 0.0)
    switch (o->kind) {
    case SGD: {
        const clt_sgd_opts *s = &set->sgd;
        PUT(lr), PUT(s->weight_decay), PUT(s->momentum), PUT(1.0 - s->dampening);
        FLAG(s->nesterov != 0);
        FLAG(s->momentum != 0.0 && o->fresh[i]); /* PyTorch's buf = d.clone() */
        break;
    }
    case ADAM:
    case ADAMW: {
        const clt_adam_opts *a = &set->adam;
        double bc1 = 1.0 - pow(a->beta1, t), bc2 = 1.0 - pow(a->beta2, t);
        PUT(1.0 - lr * a->weight_decay), PUT(1.0 - a->beta1), PUT(a->beta2);
        PUT(1.0 - a->beta2), PUT(a->eps), PUT(a->weight_decay);
        FLAG(o->kind == ADAMW), FLAG(a->amsgrad != 0);
        PUT(lr / bc1), PUT(sqrt(bc2));
        break;
    }
    case RMSPROP: {
        const clt_rmsprop_opts *r = &set->rmsprop;
        PUT(-lr), PUT(r->alpha), PUT(1.0 - r->alpha), PUT(r->eps), PUT(r->weight_decay);
        PUT(r->momentum), FLAG(r->centered != 0);
        break;
    }
    case ADAGRAD: {
        const clt_adagrad_opts *a = &set->adagrad;
        /* torch: clr = lr / (1 + (step - 1) * lr_decay), in double */
        PUT(-(lr / (1.0 + (double)o->updates[i] * a->lr_decay))), PUT(a->eps);
        PUT(a->weight_decay);
        break;
    }
    case ADADELTA: {
        const clt_adadelta_opts *d = &set->adadelta;
        PUT(-lr), PUT(d->rho), PUT(1.0 - d->rho), PUT(d->eps), PUT(d->weight_decay);
        break;
    }
    case RPROP: {
        /* torch fills step_size with the rate at the first update */
        const clt_rprop_opts *r = &set->rprop;
        PUT(lr), PUT(r->etaminus), PUT(r->etaplus), PUT(r->step_size_min);
        PUT(r->step_size_max), FLAG(o->updates[i] == 0);
        break;
    }
    case ASGD: {
        const clt_asgd_opts *a = &set->asgd;
        /* torch's eta and mu: float32 tensors, eta made at the first
         * update from the rate then; the next ones from the step count */
        bool first = o->updates[i] == 0;
        double eta = first ? (double)(float)lr : (double)o->scalar[0][i];
        double mu = first ? 1.0 : (double)o->scalar[1][i];
        PUT(1.0 - a->lambd * eta), PUT(-eta), PUT(mu), PUT(a->weight_decay);
        FLAG(mu != 1.0);
        ks->next[0] = (float)(lr / pow(1.0 + a->lambd * lr * t, a->alpha));
        ks->next[1] = (float)(1.0 / (t - a->t0 > 1.0 ? t - a->t0 : 1.0));
        break;
    }
    case ADAMAX: {
        /* Adamax, NAdam, RAdam: the first moment's settings (beta1, 1 -
         * beta1), then each its own */
        const clt_adamax_opts *a = &set->adamax;
        PUT(a->beta1), PUT(1.0 - a->beta1), PUT(a->beta2), PUT(a->eps), PUT(a->weight_decay);
        PUT(-(lr / (1.0 - pow(a->beta1, t))));
        break;
    }
    case NADAM: {
        const clt_nadam_opts *a = &set->nadam;
        double mu = a->beta1 * (1.0 - 0.5 * pow(0.96, t * a->momentum_decay));
        double mu_next = a->beta1 * (1.0 - 0.5 * pow(0.96, (t + 1.0) * a->momentum_decay));
        /* torch: mu_product *= mu and mu_product * mu * mu_next, float32
         * tensors times Python floats (each rounded to float32 first) */
        float mu_product = o->scalar[0][i] * (float)mu;
        float next = mu_product * (float)mu * (float)mu_next;
        PUT(a->beta1), PUT(1.0 - a->beta1), PUT(a->beta2), PUT(1.0 - a->beta2), PUT(a->eps);
        PUT(a->weight_decay), PUT(1.0 - pow(a->beta2, t));
        PUT(-lr * (1.0 - mu) / (1.0 - (double)mu_product));
        PUT(-lr * mu_next / (1.0 - (double)next));
        ks->next[0] = mu_product;
        break;
    }
    case RADAM: {
        const clt_radam_opts *a = &set->radam;
        double bc1 = 1.0 - pow(a->beta1, t), bc2 = 1.0 - pow(a->beta2, t);
        double rho_inf = 2.0 / (1.0 - a->beta2) - 1.0;
        double rho_t = rho_inf - 2.0 * t * pow(a->beta2, t) / bc2, rect = 0.0;
        bool rectify = rho_t > 5.0;
        if (rectify)
            rect = sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf /
                        ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
        PUT(a->beta1), PUT(1.0 - a->beta1), PUT(a->beta2), PUT(1.0 - a->beta2), PUT(a->eps);
        PUT(a->weight_decay), PUT(lr), PUT(bc1), PUT(sqrt(bc2)), PUT(rect), FLAG(rectify);
        break;
    }
    default: /* LBFGS: not stepped here */
        break;
    }
#undef PUT
#undef FLAG
}

/* The update of the m parameters idx (from batch): one launch of the
 * kind's kernel for one, of its *_multi kernel for more.  The state slots
 * the kind does not keep get the parameter's buffer, which the kernels do
 * not read.  The parameters' counts, state versions and host scalars
 * (NAdam's mu_product, ASGD's eta and mu) move only when the launch
 * succeeded. */
static clt_status step_params(clt_optimizer *o, const size_t *idx, size_t m)
{
    clt_tensor *p0 = o->params[idx[0]];
    const clt__opt_settings *set = &group_of(o, idx[0])->set;
    int nstate = kinds[o->kind].nstate;
    clt_tensor *sv_[MULTI_K][NSTATE] = {{NULL}};
    /* operands: p, g, then the state slots; per slot k of the launch */
    cl_mem mem[2 + NSTATE][MULTI_K];
    multi_slots slots = {{0}, {0}};
    cl_ulong total = 0;
    for (size_t k = 0; k < m; k++) {
        clt_tensor *p = o->params[idx[k]];
        mem[0][k] = clt__mem(p);
        mem[1][k] = clt__mem(grad_of(o, idx[k]));
        for (int j = 0; j < nstate; j++) {
            clt_status st = keeps_state(o->kind, set, j) ? state(o, j, idx[k], &sv_[k][j])
                                                         : CLT_OK;
            if (st != CLT_OK)
                return st;
            mem[2 + j][k] = sv_[k][j] ? clt__mem(sv_[k][j]) : mem[0][k];
        }
        slots.off[k] = (cl_ulong)p->offset;
        slots.n[k] = (cl_ulong)p->numel;
        total += slots.n[k];
    }
    kernel_scalars ks;
    step_scalars(o, idx[0], &ks);
    unsigned char sv[MAX_SCALARS][8];
    clt__arg args[(2 + NSTATE) * MULTI_K + 3 + MAX_SCALARS];
    size_t na = 0, gws;
    const size_t *lws;
    cl_ulong chunk;
    const char *kernel;
    if (m == 1) {
        geometry(p0, &chunk, &gws, &lws);
        for (int j = 0; j < 2 + nstate; j++)
            args[na++] = CLT__ARG(mem[j][0]);
        args[na++] = CLT__ARG(slots.off[0]);
        args[na++] = CLT__ARG(slots.n[0]);
        kernel = kinds[o->kind].kernel;
    } else {
        static const size_t one = 1;
        chunk = clt__chunk_size(p0->dev, (int64_t)total);
        if (chunk == 0)
            chunk = 1;
        gws = 0;
        for (size_t k = 0; k < m; k++)
            gws += (size_t)((slots.n[k] + chunk - 1) / chunk);
        lws = p0->dev->info.type == CLT_DEVICE_TYPE_CPU ? &one : NULL;
        for (int j = 0; j < 2 + nstate; j++)
            for (size_t k = 0; k < MULTI_K; k++)
                args[na++] = CLT__ARG(mem[j][k < m ? k : 0]);
        args[na++] = CLT__ARG(slots);
        kernel = kinds[o->kind].multi;
    }
    args[na++] = CLT__ARG(chunk);
    for (size_t k = 0; k < ks.n; k++, na++) {
        if (ks.flag[k]) {
            cl_int f = ks.v[k] != 0.0;
            memcpy(sv[k], &f, sizeof f);
            args[na] = (clt__arg){sizeof f, sv[k]};
        } else {
            args[na] = (clt__arg){clt__scalar_arg(p0->dtype, ks.v[k], sv[k]), sv[k]};
        }
    }
    clt_status st =
        clt__launch(p0->dev, "optim", options(p0->dtype), kernel, 1, &gws, lws, na, args);
    if (st != CLT_OK)
        return st;
    for (size_t k = 0; k < m; k++) {
        for (int j = 0; j < nstate; j++)
            if (sv_[k][j])
                clt__version_bump(sv_[k][j]);
        for (int j = 0; j < scalar_count(o->kind); j++)
            o->scalar[j][idx[k]] = ks.next[j];
        counted(o, idx[k]);
    }
    return CLT_OK;
}

static void densified_free(clt_optimizer *o)
{
    if (o->densified == NULL)
        return;
    for (size_t i = 0; i < o->n; i++)
        clt_tensor_free(o->densified[i]);
    free(o->densified);
    o->densified = NULL;
}

/* torch's refusals of the gradients a kind cannot take (sparse ones but
 * for SGD without weight decay, Adagrad without weight decay and
 * SparseAdam; dense ones for SparseAdam), then, for SGD and Adagrad, the
 * dense form of every sparse gradient (densified).  A failure changes
 * nothing. */
static clt_status sparse_ready(clt_optimizer *o)
{
    static const char fn[] = "clt_optimizer_step";
    const char *torch = kinds[o->kind].torch;
    bool any = false;
    for (size_t i = 0; i < o->n; i++) {
        const clt_tensor *p = o->params[i];
        const clt__opt_settings *set = &group_of(o, i)->set;
        if (o->kind == SPARSE_ADAM) {
            if (clt__grad_of(p))
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: SparseAdam does not support dense gradients, please "
                                  "consider Adam instead (parameter %zu)",
                                  fn, i);
            continue;
        }
        if (!clt__grad_is_sparse(p))
            continue;
        if (o->kind == SGD && set->sgd.weight_decay != 0.0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: SGD with weight_decay does not support sparse gradients "
                              "(parameter %zu; torch: \"add(sparse, dense) is not supported. "
                              "Use add(dense, sparse) instead.\")",
                              fn, i);
        if (o->kind == ADAGRAD && set->adagrad.weight_decay != 0.0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Adagrad: weight_decay option is not compatible with sparse "
                              "gradients (parameter %zu)",
                              fn, i);
        if (o->kind != SGD && o->kind != ADAGRAD)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: %s does not support sparse gradients%s (parameter %zu)", fn,
                              torch,
                              o->kind == ADAM ? ", please consider SparseAdam instead" : "", i);
        any = true;
    }
    if (!any)
        return CLT_OK;
    o->densified = clt__calloc(o->n, sizeof *o->densified);
    if (o->densified == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; i < o->n; i++) {
        if (!clt__grad_is_sparse(o->params[i]) || sparse_sgd(o, i))
            continue;
        clt_status st = clt__sparse_grad_dense(o->params[i], &o->densified[i]);
        if (st != CLT_OK) {
            densified_free(o);
            return st;
        }
        clt__scope_disown(o->densified[i]);
    }
    return CLT_OK;
}

/* SGD's update of parameter i without momentum on its sparse gradient
 * (sparse_sgd): one launch of cl/optim.cl's sgd_sparse, which adds lr
 * times each entry in turn, as torch's CPU add_ of a sparse tensor does
 * (a row looked up twice is updated twice, each rounded).  The gradient's
 * rows and values are contiguous tensors of their own, the parameter a
 * contiguous [rows, width]. */
static clt_status sgd_sparse_param(clt_optimizer *o, size_t i)
{
    clt_tensor *p = o->params[i];
    const clt_tensor *rows, *vals;
    clt__sparse_grad_of(p, &rows, &vals);
    cl_long nnz = (cl_long)rows->numel;
    if (nnz > 0) {
        cl_ulong width = (cl_ulong)(p->numel / p->shape[0]);
        cl_ulong p_off = (cl_ulong)p->offset, r_off = (cl_ulong)rows->offset,
                 v_off = (cl_ulong)vals->offset;
        cl_mem pm = clt__mem(p), rm = clt__mem(rows), vm = clt__mem(vals);
        unsigned char alpha[8];
        size_t asz = clt__scalar_arg(p->dtype, -group_of(o, i)->lr, alpha);
        size_t gws = (size_t)width;
        clt__arg args[] = {CLT__ARG(pm),    CLT__ARG(rm),    CLT__ARG(vm),
                           CLT__ARG(p_off), CLT__ARG(r_off), CLT__ARG(v_off),
                           CLT__ARG(nnz),   CLT__ARG(width), {asz, alpha}};
        clt_status st = clt__launch(p->dev, "optim", options(p->dtype), "sgd_sparse", 1, &gws,
                                    NULL, sizeof args / sizeof args[0], args);
        if (st != CLT_OK)
            return st;
    }
    counted(o, i);
    return CLT_OK;
}

/* SparseAdam's update of parameter i (torch 1.13's sparse_adam): its
 * sparse gradient coalesced into U distinct rows, and only those rows of
 * exp_avg, exp_avg_sq and the parameter changed:
 *   m[r] += (g - m[r]) (1 - beta1), v[r] += (g^2 - v[r]) (1 - beta2),
 *   p[r] -= step_size m[r] / (sqrt(v[r]) + eps),
 * step_size = lr sqrt(1 - beta2^t) / (1 - beta1^t), t the parameter's own
 * update count.  Everything is computed before the three writes. */
static clt_status sparse_adam_param(clt_optimizer *o, size_t i)
{
    static const char fn[] = "clt_optimizer_step";
    const opt_group *gr = group_of(o, i);
    const clt_sparse_adam_opts *a = &gr->set.sparse_adam;
    clt_tensor *p = o->params[i], *m = NULL, *v = NULL;
    const clt_tensor *rows, *vals;
    clt__sparse_grad_of(p, &rows, &vals);
    clt_sparse *s = NULL, *c = NULL;
    enum { CI, GV, IDX, OM, D1, UM, OV, G2, D2, UV, NU, S2, SQ, DEN, Q, UP, NT };
    clt_tensor *x[NT] = {NULL};
    clt_status st = CLT_OK;
    CLT__TRY(state(o, 0, i, &m));
    CLT__TRY(state(o, 1, i, &v));
    CLT__TRY(clt_sparse_coo_tensor(rows, vals, p->shape, p->ndim, 0, &s));
    CLT__TRY(clt_sparse_coalesce(s, &c));
    CLT__TRY(clt_sparse_indices(c, &x[CI]));
    CLT__TRY(clt_sparse_values(c, &x[GV]));
    int64_t u = x[CI]->numel;
    if (u > 0) {
        double t = (double)(o->updates[i] + 1);
        double bc1 = 1.0 - pow(a->beta1, t), bc2 = 1.0 - pow(a->beta2, t);
        double step_size = gr->lr * sqrt(bc2) / bc1;
        CLT__TRY(clt__reshape(x[CI], 1, &u, &x[IDX], fn));
        CLT__TRY(clt__index_select(m, 0, x[IDX], &x[OM], fn));
        CLT__TRY(clt__sub_in(fn, x[GV], x[OM], &x[D1]));
        CLT__TRY(clt__mul_scalar_in(fn, x[D1], 1.0 - a->beta1, &x[UM]));
        CLT__TRY(clt__index_select(v, 0, x[IDX], &x[OV], fn));
        CLT__TRY(clt__mul_in(fn, x[GV], x[GV], &x[G2]));
        CLT__TRY(clt__sub_in(fn, x[G2], x[OV], &x[D2]));
        CLT__TRY(clt__mul_scalar_in(fn, x[D2], 1.0 - a->beta2, &x[UV]));
        CLT__TRY(clt__add_in(fn, x[UM], x[OM], &x[NU]));
        CLT__TRY(clt__add_in(fn, x[UV], x[OV], &x[S2]));
        CLT__TRY(clt__sqrt_in(fn, x[S2], &x[SQ]));
        CLT__TRY(clt__add_scalar_in(fn, x[SQ], a->eps, &x[DEN]));
        CLT__TRY(clt__div_in(fn, x[NU], x[DEN], &x[Q]));
        CLT__TRY(clt__mul_scalar_in(fn, x[Q], -step_size, &x[UP]));
        CLT__TRY(clt__index_add_(m, 0, x[IDX], x[UM], 1.0));
        CLT__TRY(clt__index_add_(v, 0, x[IDX], x[UV], 1.0));
        CLT__TRY(clt__index_add_(p, 0, x[IDX], x[UP], 1.0));
        clt__version_bump(m);
        clt__version_bump(v);
    }
    counted(o, i);
done:
    for (int k = 0; k < NT; k++)
        clt_tensor_free(x[k]);
    clt_sparse_free(s);
    clt_sparse_free(c);
    return st;
}

/* A SparseAdam step: every parameter with a gradient, in order; one that
 * fails stops the step there, as the kernels' steps do (resume). */
static clt_status sparse_adam_step(clt_optimizer *o)
{
    for (size_t i = o->resume; i < o->n; i++) {
        if (!stepped(o, i))
            continue;
        clt_status st = sparse_adam_param(o, i);
        if (st != CLT_OK) {
            char note[200];
            clt__error_in(st, "clt_optimizer_step");
            snprintf(note, sizeof note,
                     " (at parameter %zu of %zu: those before it were updated; the next "
                     "clt_optimizer_step finishes this step from it)",
                     i, o->n);
            clt__error_append(note);
            o->resume = i;
            return st;
        }
    }
    o->resume = 0;
    o->steps++;
    return CLT_OK;
}

/* Everything the updates need, before any of them: each state tensor of
 * a parameter that will be updated moved to the parameter's device and
 * converted to its dtype (after clt_module_to or clt_module_to_dtype),
 * and every kernel built.  A step that fails here (out of memory, a build
 * that fails) has changed nothing. */
static clt_status step_ready(clt_optimizer *o)
{
    clt_status sst = sparse_ready(o);
    if (sst != CLT_OK)
        return sst;
    for (size_t i = 0; i < o->n; i++) {
        const clt_tensor *p = o->params[i], *g = grad_of(o, i), *rows = NULL;
        if (g == NULL && sparse_sgd(o, i))
            clt__sparse_grad_of(p, &rows, &g); /* the values: their dtype */
        if (g == NULL)
            continue;
        /* the kernel reads both as one element type: never a mix */
        if (g->dtype != p->dtype || (rows == NULL && g->numel != p->numel))
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "clt_optimizer_step: parameter %zu is %s with %lld elements and "
                              "its gradient %s with %lld",
                              i, clt_dtype_name(p->dtype), (long long)p->numel,
                              clt_dtype_name(g->dtype), (long long)g->numel);
        if (p->dtype != CLT_FLOAT32 && p->dtype != CLT_FLOAT64)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "clt_optimizer_step: parameter %zu is %s; float32 and float64 "
                              "are supported",
                              i, clt_dtype_name(p->dtype));
        for (int k = 0; k < NSTATE; k++) {
            clt_tensor *s = o->state[k][i];
            clt_status st = s ? clt__tensor_rehome(s, p->dev, p->dtype, "clt_optimizer_step")
                              : CLT_OK;
            if (st != CLT_OK)
                return st;
        }
    }
    bool multi = multi_wanted(o);
    for (size_t i = o->resume, next; i < o->n && o->kind != SPARSE_ADAM; i = next) {
        const clt_tensor *p = o->params[i];
        size_t idx[MULTI_K];
        next = i + 1;
        if (!stepped(o, i))
            continue;
        const char *opts = options(p->dtype);
        if (opts == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                              "clt_optimizer_step: out of host memory");
        cl_ulong chunk;
        size_t gws;
        const size_t *lws;
        geometry(p, &chunk, &gws, &lws);
        /* the kernel the step launches for the batch i starts (the step
         * starts where the last stopped) */
        bool several = batch(o, i, multi, idx, &next) > 1;
        bool sparse = sparse_sgd(o, i);
        if (sparse) {
            gws = (size_t)(p->numel / p->shape[0]);
            lws = NULL;
        }
        clt_status st = clt__launch_prepare(p->dev, "optim", opts,
                                            sparse    ? "sgd_sparse"
                                            : several ? kinds[o->kind].multi
                                                      : kinds[o->kind].kernel,
                                            1, &gws, lws);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

clt_status clt_optimizer_step(clt_optimizer *opt)
{
    CLT__REQUIRE_ARG(opt, "clt_optimizer_step");
    if (opt->kind == LBFGS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_optimizer_step: LBFGS requires a closure: step it with "
                          "clt_optimizer_step_closure");
    clt_status st = step_ready(opt);
    if (st == CLT_OK && opt->kind == SPARSE_ADAM)
        st = sparse_adam_step(opt);
    if (st != CLT_OK || opt->kind == SPARSE_ADAM) {
        densified_free(opt);
        return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_optimizer_step");
    }
    /* A step the driver stopped part-way is finished by the next one, from
     * the parameter it stopped at, so that none is updated twice.  A launch
     * updates several parameters (batch): one that failed updated none of
     * its own. */
    bool multi = multi_wanted(opt);
    for (size_t i = opt->resume, next; i < opt->n; i = next) {
        size_t idx[MULTI_K];
        next = i + 1;
        if (!stepped(opt, i))
            continue;
        st = sparse_sgd(opt, i) ? sgd_sparse_param(opt, i)
                                : step_params(opt, idx, batch(opt, i, multi, idx, &next));
        if (st != CLT_OK) {
            densified_free(opt);
            char note[320];
            clt__error_in(st, "clt_optimizer_step");
            snprintf(note, sizeof note,
                     " (the driver failed at parameter %zu of %zu: the "
                     "parameters before it were updated, it and those after it were not, and "
                     "the step was not counted; the next clt_optimizer_step finishes this "
                     "step from parameter %zu)",
                     i, opt->n, i);
            clt__error_append(note);
            opt->resume = i;
            return st;
        }
    }
    opt->resume = 0;
    opt->steps++;
    densified_free(opt);
    return clt__ok();
}

clt_status clt_optimizer_zero_grad(clt_optimizer *opt, int set_to_none)
{
    CLT__REQUIRE_ARG(opt, "clt_optimizer_zero_grad");
    for (size_t i = 0; i < opt->n; i++) {
        clt_status st = clt__zero_grad(opt->params[i], set_to_none, "clt_optimizer_zero_grad");
        if (st != CLT_OK)
            return st;
    }
    return clt__ok();
}

double clt_optimizer_lr(const clt_optimizer *opt)
{
    return opt ? opt->groups[0].lr : 0.0;
}

clt_status clt_optimizer_set_lr(clt_optimizer *opt, double lr)
{
    CLT__REQUIRE_ARG(opt, "clt_optimizer_set_lr");
    clt_status st = check_lr(lr, "clt_optimizer_set_lr");
    if (st != CLT_OK)
        return st;
    for (size_t g = 0; g < opt->n_groups; g++)
        opt->groups[g].lr = lr;
    return clt__ok();
}

size_t clt_optimizer_num_groups(const clt_optimizer *opt)
{
    return opt ? opt->n_groups : 0;
}

double clt_optimizer_group_lr(const clt_optimizer *opt, size_t group)
{
    return opt && group < opt->n_groups ? opt->groups[group].lr : NAN;
}

/* Refuses a group index o has not. */
static clt_status check_group(const clt_optimizer *o, size_t group, const char *fn)
{
    if (group >= o->n_groups)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: group %zu is out of range: the optimizer has %zu parameter "
                          "group%s",
                          fn, group, o->n_groups, o->n_groups == 1 ? "" : "s");
    return CLT_OK;
}

clt_status clt_optimizer_set_group_lr(clt_optimizer *opt, size_t group, double lr)
{
    static const char fn[] = "clt_optimizer_set_group_lr";
    CLT__REQUIRE_ARG(opt, fn);
    clt_status st = check_group(opt, group, fn);
    if (st == CLT_OK)
        st = check_lr(lr, fn);
    if (st != CLT_OK)
        return st;
    opt->groups[group].lr = lr;
    return clt__ok();
}

int64_t clt_optimizer_steps(const clt_optimizer *opt)
{
    return opt ? opt->steps : 0;
}

/* The momentum a schedule cycles among settings c of kind k: SGD's and
 * RMSprop's momentum, the beta1 of Adam, AdamW, Adamax, NAdam and RAdam;
 * NULL for Adagrad, Adadelta, Rprop and ASGD. */
static double *settings_momentum(clt__opt_settings *c, kind k)
{
    switch (k) {
    case SGD:
        return &c->sgd.momentum;
    case RMSPROP:
        return &c->rmsprop.momentum;
    case ADAGRAD:
    case ADADELTA:
    case RPROP:
    case ASGD:
    case LBFGS:
        return NULL;
    case ADAMAX:
        return &c->adamax.beta1;
    case NADAM:
        return &c->nadam.beta1;
    case RADAM:
        return &c->radam.beta1;
    default:
        return &c->adam.beta1;
    }
}

/* The momentum of group g of o (settings_momentum). */
static double *momentum_of(clt_optimizer *o, size_t g)
{
    return settings_momentum(&o->groups[g].set, o->kind);
}

/* Whether kind k's momentum is betas[0] (torch's OneCycleLR use_beta1). */
static bool has_betas(kind k)
{
    return k == ADAM || k == ADAMW || k == ADAMAX || k == NADAM || k == RADAM;
}

double clt_optimizer_momentum(const clt_optimizer *opt)
{
    return opt ? clt_optimizer_group_momentum(opt, 0) : 0.0;
}

double clt_optimizer_group_momentum(const clt_optimizer *opt, size_t group)
{
    if (opt == NULL || group >= opt->n_groups)
        return NAN;
    double *m = momentum_of((clt_optimizer *)opt, group);
    return m ? *m : 0.0;
}

clt_status clt_optimizer_add_param_group(clt_optimizer *opt, clt_tensor *const *params,
                                         size_t n, const void *opts)
{
    static const char fn[] = "clt_optimizer_add_param_group";
    CLT__REQUIRE_ARG(opt, fn);
    if (opt->resume != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a step that the driver stopped part-way is not finished: call "
                          "clt_optimizer_step again first", fn);
    if (opt->kind == LBFGS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: LBFGS doesn't support per-parameter options (parameter groups)",
                          fn);
    /* torch fills the keys the group lacks from defaults: here all of
     * them, or none */
    clt__opt_settings c = opt->defaults;
    size_t size;
    void *mine = settings_of(&c, opt->kind, &size);
    if (opts)
        memcpy(mine, opts, size);
    memset(&c.group, 0, sizeof c.group);
    clt_status st = check_params(params, n, fn);
    if (st == CLT_OK)
        st = check_opts(opt->kind, &c, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor **all = clt__calloc(opt->n + n, sizeof *all);
    if (all == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(all, opt->params, opt->n * sizeof *all);
    memcpy(all + opt->n, params, n * sizeof *all);
    st = check_distinct(all, opt->n + n, false, fn);
    free(all);
    if (st == CLT_OK) {
        st = append(opt, params, n, &c, fn);
    } else if (st == CLT_ERR_INVALID_ARGUMENT) {
        char why[512];
        snprintf(why, sizeof why, "%s", clt_last_error());
        st = clt__error(st,
                        "%s: some parameters appear in more than one parameter group (%s; the "
                        "new group's parameters are numbered from %zu)",
                        fn, why, opt->n);
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- state for checkpoints (src/io) -------------------------------------------- */

static const char *const state_names[][NSTATE] = {
    [SGD] = {"momentum_buffer", NULL, NULL},
    [ADAM] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    [ADAMW] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
    [RMSPROP] = {"square_avg", "momentum_buffer", "grad_avg"},
    [ADAGRAD] = {"sum", NULL, NULL},
    [ADAMAX] = {"exp_avg", "exp_inf", NULL},
    [NADAM] = {"exp_avg", "exp_avg_sq", NULL},
    [RADAM] = {"exp_avg", "exp_avg_sq", NULL},
    [ADADELTA] = {"square_avg", "acc_delta", NULL},
    [RPROP] = {"prev", "step_size", NULL},
    [ASGD] = {"ax", NULL, NULL},
    [SPARSE_ADAM] = {"exp_avg", "exp_avg_sq", NULL},
};

/* Whether state slot k of parameter i is SGD's momentum buffer made and
 * not used yet: torch's momentum_buffer is None there, and files leave it
 * out. */
static bool unstarted(const clt_optimizer *o, int k, size_t i)
{
    return o->kind == SGD && k == 0 && o->state[0][i] && o->fresh[i];
}

void clt__optimizer_start(clt_optimizer *o, size_t i, bool started)
{
    if (o->kind == SGD && o->state[0][i])
        o->fresh[i] = !started;
}

clt_status clt__optimizer_state(const clt_optimizer *o, size_t extra, clt_named_tensor **out,
                                size_t *n, const char *fn)
{
    const char *const *names = state_names[o->kind];
    size_t count = 0, bytes = 0;
    for (size_t i = 0; i < o->n; i++)
        for (int k = 0; k < NSTATE; k++)
            if (o->state[k][i] && !unstarted(o, k, i)) {
                count++;
                bytes += (size_t)snprintf(NULL, 0, "state.%zu.%s", i, names[k]) + 1;
            }
    /* the host scalars (NAdam's mu_product, ASGD's eta and mu): their
     * tensors take the host's values now (a cache of them, which the
     * optimizer's steps never read) */
    int ns = scalar_count(o->kind);
    for (size_t i = 0; i < o->n; i++)
        for (int j = 0; j < ns; j++) {
            clt_status st = clt__fill_value(o->scalar_t[j][i], (double)o->scalar[j][i]);
            if (st != CLT_OK)
                return clt__error_in(st, fn);
            count++;
            bytes += (size_t)snprintf(NULL, 0, "state.%zu.%s", i, scalars[o->kind].name[j]) + 1;
        }
    /* LBFGS's state, on parameter 0 as torch keeps it */
    const char *const *lnames = NULL;
    clt_tensor *const *ltensors = NULL;
    size_t ln = 0;
    if (o->lbfgs) {
        clt_status st = clt__lbfgs_entries(o->lbfgs, &lnames, &ltensors, &ln, fn);
        if (st != CLT_OK)
            return st;
        for (size_t k = 0; k < ln; k++)
            bytes += strlen(lnames[k]) + 1;
        count += ln;
    }
    clt_named_tensor *arr = clt__calloc(1, (count + extra) * sizeof *arr + bytes + 1);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    char *text = (char *)(arr + count + extra);
    size_t m = 0;
    for (size_t i = 0; i < o->n; i++)
        for (int k = 0; k < NSTATE; k++)
            if (o->state[k][i] && !unstarted(o, k, i)) {
                arr[m].name = text;
                arr[m++].tensor = o->state[k][i];
                text += sprintf(text, "state.%zu.%s", i, names[k]) + 1;
            }
    for (size_t i = 0; i < o->n; i++)
        for (int j = 0; j < ns; j++) {
            arr[m].name = text;
            arr[m++].tensor = o->scalar_t[j][i];
            text += sprintf(text, "state.%zu.%s", i, scalars[o->kind].name[j]) + 1;
        }
    for (size_t k = 0; k < ln; k++) {
        arr[m].name = text;
        arr[m++].tensor = ltensors[k];
        text += sprintf(text, "%s", lnames[k]) + 1;
    }
    *out = arr;
    *n = count;
    return CLT_OK;
}

size_t clt__optimizer_size(const clt_optimizer *o)
{
    return o->n;
}

clt_tensor *clt__optimizer_param(const clt_optimizer *o, size_t i)
{
    return o->params[i];
}

const int64_t *clt__optimizer_updates(const clt_optimizer *o)
{
    return o->updates;
}

bool clt__optimizer_stopped(const clt_optimizer *o)
{
    return o->resume != 0;
}

void clt__optimizer_restore(clt_optimizer *o, const int64_t *updates, int64_t steps,
                            const double *lrs)
{
    memcpy(o->updates, updates, o->n * sizeof *updates);
    for (size_t i = 0; i < o->n; i++)
        o->fresh[i] = o->kind == SGD && o->state[0][i] && updates[i] == 0;
    o->steps = steps;
    for (size_t g = 0; g < o->n_groups; g++)
        o->groups[g].lr = lrs[g];
    o->resume = 0;
}

size_t clt__optimizer_group_size(const clt_optimizer *o, size_t g)
{
    return o->groups[g].n;
}

clt_status clt__optimizer_loaded(clt_optimizer *o, const char *fn, const void *caller)
{
    for (size_t i = 0; i < o->n; i++)
        for (int j = 0; j < scalar_count(o->kind); j++) {
            float v;
            clt_status st = clt__tensor_read_at(o->scalar_t[j][i], &v, sizeof v, fn, caller);
            if (st != CLT_OK)
                return st;
            o->scalar[j][i] = v;
        }
    if (o->lbfgs)
        return clt__lbfgs_loaded(o->lbfgs, o->groups[0].set.lbfgs.history_size, fn, caller);
    return CLT_OK;
}

const char *clt__optimizer_kind(const clt_optimizer *o)
{
    return kinds[o->kind].torch;
}

void clt__optimizer_settings(const clt_optimizer *o, size_t g, clt__opt_settings *c)
{
    clt__opt_settings mine = o->groups[g].set;
    size_t size;
    *settings_lr(&mine, o->kind) = o->groups[g].lr;
    const void *from = settings_of(&mine, o->kind, &size);
    memcpy(settings_of(c, o->kind, &size), from, size);
    c->group = mine.group;
}

clt_status clt__optimizer_like(const clt_optimizer *o, const clt__opt_settings *c,
                               const char *fn, clt_optimizer **out)
{
    *out = NULL;
    size_t *sizes = clt__calloc(o->n_groups, sizeof *sizes);
    if (sizes == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    for (size_t g = 0; g < o->n_groups && st == CLT_OK; g++) {
        sizes[g] = o->groups[g].n;
        st = check_opts(o->kind, &c[g], fn);
    }
    if (st == CLT_OK)
        st = build(o->kind, o->params, sizes, o->n_groups, c, &o->defaults, fn, out);
    free(sizes);
    return st;
}

void clt__optimizer_swap(clt_optimizer *a, clt_optimizer *b)
{
    clt_optimizer t = *a;
    *a = *b;
    *b = t;
    /* the schedules stay with their optimizer */
    b->scheds = a->scheds;
    b->schedules = a->schedules;
    b->sched_cap = a->sched_cap;
    a->scheds = t.scheds;
    a->schedules = t.schedules;
    a->sched_cap = t.sched_cap;
}

clt__lbfgs *clt__optimizer_lbfgs(const clt_optimizer *o)
{
    return o->lbfgs;
}

void clt__optimizer_counted(clt_optimizer *o)
{
    for (size_t i = 0; i < o->n; i++)
        o->updates[i]++;
    o->steps++;
}

/* ---- clip_grad_norm, clip_grad_value ------------------------------------------------ */

clt_tensor *clt__grad_values(const clt_tensor *p)
{
    const clt_tensor *g = clt__grad_of(p), *rows = NULL;
    if (g == NULL && clt__grad_is_sparse(p))
        clt__sparse_grad_of(p, &rows, &g);
    return (clt_tensor *)g;
}

/* The values of p's sparse gradient coalesced (the entries of a row
 * summed), which torch.norm of a sparse tensor takes: new. */
static clt_status coalesced_values(const clt_tensor *p, clt_tensor **out)
{
    const clt_tensor *rows, *vals;
    clt__sparse_grad_of(p, &rows, &vals);
    clt_sparse *s = NULL, *c = NULL;
    clt_status st = clt_sparse_coo_tensor(rows, vals, p->shape, p->ndim, 0, &s);
    if (st == CLT_OK)
        st = clt_sparse_coalesce(s, &c);
    if (st == CLT_OK)
        st = clt_sparse_values(c, out);
    clt_sparse_free(s);
    clt_sparse_free(c);
    return st;
}

/* The in-place form of a clipping, for gradient i (g). */
typedef clt_status (*clip_inplace)(clt_tensor *g, size_t i, const void *ctx, const char *fn);

/* Puts the clipped values sc[i] (made apart, one for each parameter with a
 * gradient) into the gradients.  Each gradient takes its clipped values'
 * buffer, which cannot fail (views from clt_grad see it too): the
 * gradients are clipped all or none.  Only a gradient that cannot take
 * them (a part of a larger buffer or on a caller's buffer, which autograd
 * never makes) is clipped in place, after the others, and a driver
 * failing there leaves the gradients before it clipped (said in the
 * message).  sc[i] is freed and set to NULL where taken. */
static clt_status clip_commit(clt_tensor *const *params, size_t n, clt_tensor **sc,
                              clip_inplace inplace, const void *ctx, const char *fn)
{
    for (size_t i = 0; i < n; i++) {
        clt_tensor *g = (clt_tensor *)clt__grad_of(params[i]);
        if (g != NULL && clt__tensor_take_values(g, sc[i])) {
            clt_tensor_free(sc[i]);
            sc[i] = NULL;
        }
    }
    for (size_t i = 0; i < n; i++) {
        clt_tensor *g = (clt_tensor *)clt__grad_of(params[i]);
        if (g != NULL && sc[i] != NULL) {
            clt_status st = inplace(g, i, ctx, fn);
            if (st != CLT_OK) {
                char note[256];
                snprintf(note, sizeof note,
                         " (%s: stopped at parameter %zu of %zu, whose gradient is not alone "
                         "in its buffer: the other gradients were clipped but for those after "
                         "it that are not alone in theirs)",
                         fn, i, n);
                clt__error_append(note);
                return st;
            }
        }
    }
    return CLT_OK;
}

/* clip_grad_norm's in place: g *= its coefficient (ctx: the
 * coefficients, one per parameter). */
static clt_status scale_inplace(clt_tensor *g, size_t i, const void *ctx, const char *fn)
{
    clt_tensor *const *co = ctx;
    return clt__binary_(CLT__OP_MUL, g, co[i], 1.0, fn);
}

static clt_status clip_norm(clt_tensor *const *params, size_t n, double max_norm,
                           double norm_type, bool error_if_nonfinite, clt_tensor **total_norm,
                           const char *fn);

clt_status clt_clip_grad_norm(clt_tensor *const *params, size_t n, double max_norm,
                              double norm_type, clt_tensor **total_norm)
{
    return clip_norm(params, n, max_norm, norm_type, false, total_norm, "clt_clip_grad_norm");
}

clt_status clt_clip_grad_norm_ex(clt_tensor *const *params, size_t n, double max_norm,
                                 double norm_type, int error_if_nonfinite, int foreach,
                                 clt_tensor **total_norm)
{
    (void)foreach; /* torch's choice of kernels: the same values */
    return clip_norm(params, n, max_norm, norm_type, error_if_nonfinite != 0, total_norm,
                     "clt_clip_grad_norm_ex");
}

static clt_status clip_norm(clt_tensor *const *params, size_t n, double max_norm,
                           double norm_type, bool error_if_nonfinite, clt_tensor **total_norm,
                           const char *fn)
{
    if (total_norm)
        *total_norm = NULL;
    if (n > 0)
        CLT__REQUIRE_ARG(params, fn);
    if (isnan(norm_type))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: norm_type is NaN", fn);
    if (!(max_norm >= 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid max_norm %g", fn, max_norm);
    for (size_t i = 0; i < n; i++)
        if (params[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: parameter %zu is NULL", fn, i);
    clt_status st = CLT_OK;
    for (size_t i = 0; i < n && norm_type == INFINITY; i++)
        if (clt__grad_is_sparse(params[i]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the gradient of parameter %zu is sparse, whose inf-norm "
                              "torch does not take (\"Could not run 'aten::max' with arguments "
                              "from the 'SparseCPU' backend\")",
                              fn, i);
    st = check_distinct(params, n, true, fn);
    if (st != CLT_OK)
        return st;
    /* sq[0..m): the squared norms; co[i]: the coefficient in the dtype of
     * parameter i's gradient */
    clt_tensor **sq = clt__calloc(n ? 3 * n : 1, sizeof *sq), **co, **sc;
    clt_tensor *sum = NULL, *norm = NULL, *den = NULL, *coef = NULL, *clamped = NULL,
               *nd = NULL, *nc = NULL, *rec = NULL;
    const clt_tensor *first = NULL;
    size_t m = 0;
    if (sq == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    co = sq + n;
    sc = sq + 2 * n;
    int was = clt_set_grad_enabled(0);
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *g = clt__grad_values(params[i]);
        if (g == NULL)
            continue;
        if (first && g->dev != first->dev) {
            st = clt__same_device(first, g, fn);
            goto done;
        }
        first = first ? first : g;
        clt_tensor *g2 = NULL, *gd = NULL, *cv = NULL;
        /* a sparse gradient's norm is its coalesced values' (torch.norm
         * of a sparse tensor) */
        if (clt__grad_of(params[i]) == NULL) {
            st = coalesced_values(params[i], &cv);
            if (st != CLT_OK)
                goto done;
            g = cv;
        }
        /* in float64 where the device has it, as the sum of many squares
         * (or powers) */
        st = clt__to_dtype(g, g->dev->info.fp64 ? CLT_FLOAT64 : CLT_FLOAT32, &gd, fn);
        clt_tensor_free(cv);
        if (st == CLT_OK && norm_type == 2.0)
            st = clt__mul_into(NULL, gd, gd, &g2, fn);
        if (st == CLT_OK)
            st = norm_type == 2.0 ? clt__sum(g2, &sq[m++], fn)
                                  : clt_vector_norm(gd, norm_type, &sq[m++]);
        clt_tensor_free(g2);
        clt_tensor_free(gd);
        if (st != CLT_OK)
            goto done;
    }
    if (m == 0) {
        st = CLT_OK;
        goto done; /* nothing to clip; the norm stays NULL */
    }
    CLT__TRY(clt__stack((const clt_tensor *const *)sq, m, 0, &nd, fn));
    if (norm_type == 2.0) {
        CLT__TRY(clt__sum(nd, &sum, fn));
        CLT__TRY(clt__sqrt_in(fn, sum, &norm));
    } else {
        /* torch's: the norm of the gradients' norms */
        CLT__TRY(clt_vector_norm(nd, norm_type, &norm));
    }
    if (error_if_nonfinite) {
        double *h = NULL;
        CLT__TRY(clt__read_doubles(fn, norm, &h));
        bool finite = isfinite(h[0]);
        free(h);
        /* torch prints the order as a Python float: 2.0, 0.5, inf */
        char order[32];
        snprintf(order, sizeof order,
                 isfinite(norm_type) && norm_type == floor(norm_type) ? "%.1f" : "%g",
                 norm_type);
        if (!finite)
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: The total norm of order %s for gradients from "
                                "`parameters` is non-finite, so it cannot be clipped. To disable "
                                "this error and scale the gradients by the non-finite norm "
                                "anyway, set `error_if_nonfinite=False`",
                                fn, order));
    }
    /* The coefficient as torch's clip_grad_norm_ makes it, in the dtype of
     * its stacked norms (the gradients' promoted one, real; float32 for
     * 16-bit gradients, whose norms would overflow at 65504): the norm rounded
     * to it, max_norm / (norm + 1e-6) as Python's float / tensor computes
     * it (reciprocal(norm + 1e-6) * max_norm), clamped to 1.  So the
     * gradients get torch's bits whenever the norm rounds to torch's (for
     * norm_type inf always). */
    clt_dtype cdt = first->dtype;
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *g = clt__grad_values(params[i]);
        if (g != NULL)
            cdt = clt_promote_types(cdt, g->dtype);
    }
    cdt = cdt == CLT_COMPLEX128 ? CLT_FLOAT64 : cdt; /* a complex gradient's norm is real */
    if (cdt != CLT_FLOAT64 || !first->dev->info.fp64)
        cdt = CLT_FLOAT32;
    CLT__TRY(clt__to_dtype(norm, cdt, &nc, fn));
    CLT__TRY(clt__add_scalar_into(NULL, nc, 1e-6, &den, fn));
    CLT__TRY(clt__reciprocal_in(fn, den, &rec));
    CLT__TRY(clt__mul_scalar_in(fn, rec, max_norm, &coef));
    double one = 1.0;
    CLT__TRY(clt__clamp(coef, NULL, &one, &clamped, fn));
    /* Everything that allocates is made before any gradient changes: a
     * failure must leave them as they were, or the call made again would
     * clip twice. */
    if (total_norm)
        CLT__TRY(clt__to_dtype(norm, first->dtype, total_norm, fn));
    const clt_tensor *last = NULL;
    /* A sparse gradient is left as it is: torch 1.13's
     * g.detach().mul_(coef) scales a copy of a sparse tensor's values (its
     * detach does not share them), so only its norm counts. */
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *g = clt__grad_of(params[i]);
        if (g == NULL)
            continue;
        if (last && last->dtype == g->dtype)
            co[i] = clt_tensor_retain((clt_tensor *)last);
        else
            CLT__TRY(clt__to_dtype(clamped, g->dtype, &co[i], fn));
        last = co[i];
    }
    /* The clipped gradients are made apart, then put in place
     * (clip_commit): all or none. */
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *g = clt__grad_of(params[i]);
        if (g != NULL)
            CLT__TRY(clt__mul_into(NULL, g, co[i], &sc[i], fn));
    }
    CLT__TRY(clip_commit(params, n, sc, scale_inplace, co, fn));
done:
    if (st != CLT_OK && total_norm) {
        clt_tensor_free(*total_norm);
        *total_norm = NULL;
    }
    clt_set_grad_enabled(was);
    for (size_t i = 0; i < m; i++)
        clt_tensor_free(sq[i]);
    for (size_t i = 0; i < n; i++) {
        clt_tensor_free(co[i]);
        clt_tensor_free(sc[i]);
    }
    free(sq);
    clt_tensor_free(nd);
    clt_tensor_free(nc);
    clt_tensor_free(rec);
    clt_tensor_free(sum);
    clt_tensor_free(norm);
    clt_tensor_free(den);
    clt_tensor_free(coef);
    clt_tensor_free(clamped);
    /* the norm is computed with plain ops, whose messages name them */
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* clip_grad_value's in place: g clamped to [-c, c] (ctx: c). */
static clt_status clamp_inplace(clt_tensor *g, size_t i, const void *ctx, const char *fn)
{
    (void)i;
    double hi = *(const double *)ctx, lo = -hi;
    return clt__clamp_(g, &lo, &hi, fn);
}

clt_status clt_clip_grad_value(clt_tensor *const *params, size_t n, double clip_value)
{
    static const char fn[] = "clt_clip_grad_value";
    if (n > 0)
        CLT__REQUIRE_ARG(params, fn);
    /* torch.clamp with min > max gives max: torch's clip_grad_value_ with
     * a negative clip_value sets every gradient to it, and NaN makes every
     * one NaN; neither is a clipping */
    if (!(clip_value >= 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid clip_value %g: a bound >= 0 (inf clips nothing)", fn,
                          clip_value);
    for (size_t i = 0; i < n; i++)
        if (params[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: parameter %zu is NULL", fn, i);
    for (size_t i = 0; i < n; i++)
        if (clt__grad_is_sparse(params[i]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the gradient of parameter %zu is sparse, which torch's "
                              "clip_grad_value_ does not take either (\"Could not run "
                              "'aten::clamp_' with arguments from the 'SparseCPU' backend\"); "
                              "clt_grad gives its dense form",
                              fn, i);
    clt_tensor **sc = clt__calloc(n ? n : 1, sizeof *sc);
    if (sc == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    double hi = clip_value, lo = -clip_value;
    clt_status st = CLT_OK;
    int was = clt_set_grad_enabled(0);
    /* Every clamped gradient is made before any gradient changes (a
     * failure leaves them all as they were), then put in place.  A
     * gradient given twice is clamped twice, which changes nothing more. */
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *g = clt__grad_of(params[i]);
        if (g != NULL)
            CLT__TRY(clt__clamp(g, &lo, &hi, &sc[i], fn));
    }
    CLT__TRY(clip_commit(params, n, sc, clamp_inplace, &clip_value, fn));
done:
    clt_set_grad_enabled(was);
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(sc[i]);
    free(sc);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- schedules -------------------------------------------------------------------------- */

struct clt_lr_scheduler {
    clt_optimizer *opt;
    clt__sched_kind kind;
    int64_t epoch, period;      /* step_size, T_max or total_iters */
    double factor;              /* gamma, eta_min or start_factor */
    double factor2;             /* end_factor */
    int64_t *milestones;        /* MultiStepLR's, as given */
    size_t n_milestones;
    clt__one_cycle cycle;       /* OneCycleLR's phases */
    clt__plateau plateau;       /* ReduceLROnPlateau's settings and counters */
    /* torch's base_lrs, one per group the optimizer had when the schedule
     * was made (`groups`: a group added later has none), and _last_lr, the
     * rates it set last, one per group of the optimizer then (n_last) */
    double *base_lrs, *last_lrs;
    size_t groups, n_last;
    bool rebased;               /* made where the rate was not initial_lr */
    /* LambdaLR's and MultiplicativeLR's callback */
    clt_lr_lambda lambda;
    void *user;
    /* CosineAnnealingWarmRestarts' T_mult, T_i and T_cur (period is T_0) */
    int64_t t_mult, t_i;
    double t_cur;
    /* SequentialLR's and ChainedScheduler's schedules (taken; milestones
     * are SequentialLR's), and the one that took this one */
    clt_lr_scheduler **subs;
    size_t n_subs;
    clt_lr_scheduler *owner;
    clt__cyclic cyclic; /* CyclicLR's settings (lambda: its scale_fn) */
    /* SWALR's swa_lr, one per group it was made over, and its strategy */
    double *swa_lrs;
    bool swa_linear;
};

/* Adds s to its optimizer's schedules; false when out of host memory. */
static bool attach_schedule(clt_lr_scheduler *s)
{
    clt_optimizer *o = s->opt;
    if (o->schedules == o->sched_cap) {
        size_t cap = o->sched_cap ? 2 * o->sched_cap : 2;
        clt_lr_scheduler **v = clt__realloc(o->scheds, cap, sizeof *v);
        if (v == NULL)
            return false;
        o->scheds = v;
        o->sched_cap = cap;
    }
    o->scheds[o->schedules++] = s;
    return true;
}

/* The optimizer is being freed: its schedules drive nothing from now. */
static void detach_schedules(clt_optimizer *o)
{
    for (size_t k = 0; k < o->schedules; k++)
        o->scheds[k]->opt = NULL;
    free(o->scheds);
    o->scheds = NULL;
    o->schedules = o->sched_cap = 0;
}

/* torch's class names, for messages */
static const char *const sched_name[] = {
    [CLT__SCHED_STEP] = "StepLR",           [CLT__SCHED_COSINE] = "CosineAnnealingLR",
    [CLT__SCHED_EXPONENTIAL] = "ExponentialLR", [CLT__SCHED_MULTISTEP] = "MultiStepLR",
    [CLT__SCHED_LINEAR] = "LinearLR",       [CLT__SCHED_ONE_CYCLE] = "OneCycleLR",
    [CLT__SCHED_PLATEAU] = "ReduceLROnPlateau", [CLT__SCHED_CONSTANT] = "ConstantLR",
    [CLT__SCHED_POLYNOMIAL] = "PolynomialLR",
    [CLT__SCHED_WARM_RESTARTS] = "CosineAnnealingWarmRestarts",
    [CLT__SCHED_LAMBDA] = "LambdaLR",       [CLT__SCHED_MULTIPLICATIVE] = "MultiplicativeLR",
    [CLT__SCHED_SEQUENTIAL] = "SequentialLR", [CLT__SCHED_CHAINED] = "ChainedScheduler",
    [CLT__SCHED_CYCLIC] = "CyclicLR", [CLT__SCHED_SWA] = "SWALR"};

/* A rate a schedule is given or gives: finite and >= 0. */
static clt_status check_rate(double v, const char *what, const char *fn)
{
    if (!(v >= 0.0) || isinf(v))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid %s %g", fn, what, v);
    return CLT_OK;
}

/* OneCycleLR's phases: two or three, each ending at a finite step, the
 * last at total_steps - 1 (the period). */
static clt_status check_one_cycle(const clt__schedule *v, const char *fn)
{
    const clt__one_cycle *c = &v->cycle;
    clt_status st = CLT_OK;
    if (c->phases != 2 && c->phases != 3)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: OneCycleLR has 2 or 3 phases, not %d",
                          fn, c->phases);
    for (int i = 0; i < c->phases && st == CLT_OK; i++)
        if (!isfinite(c->end_step[i]))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: phase %d ends at step %g", fn, i,
                            c->end_step[i]);
    if (st == CLT_OK && c->end_step[c->phases - 1] != (double)(v->period - 1))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the last phase ends at step %g, and total_steps %lld makes it "
                        "total_steps - 1",
                        fn, c->end_step[c->phases - 1], (long long)v->period);
    if (st == CLT_OK)
        st = check_rate(v->factor, "max_lr", fn);
    if (st == CLT_OK)
        st = check_rate(v->base_lr, "initial_lr", fn);
    if (st == CLT_OK)
        st = check_rate(v->factor2, "min_lr", fn);
    return st;
}

static clt_status check_plateau(const clt__schedule *v, const char *fn)
{
    const clt__plateau *p = &v->plateau;
    /* torch checks the factor only ("Factor should be < 1.0."); the rest
     * would make no schedule: a negative patience or cooldown, a min_lr or
     * eps that is no rate, a NaN threshold */
    if (!(v->factor >= 0.0 && v->factor < 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: factor %g: Factor should be < 1.0 (and >= 0)", fn, v->factor);
    if (v->period < 0 || p->cooldown < 0 || p->cooldown_counter < 0 || p->num_bad_epochs < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: patience (%lld), cooldown (%lld), cooldown_counter (%lld) and "
                          "num_bad_epochs (%lld) must be >= 0",
                          fn, (long long)v->period, (long long)p->cooldown,
                          (long long)p->cooldown_counter, (long long)p->num_bad_epochs);
    if (!isfinite(p->threshold))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid threshold %g", fn,
                          p->threshold);
    if (isnan(p->best))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: best is NaN", fn);
    clt_status st = check_rate(v->factor2, "min_lr", fn);
    return st == CLT_OK ? check_rate(p->eps, "eps", fn) : st;
}

/* The settings of ConstantLR, PolynomialLR and CosineAnnealingWarmRestarts
 * (the others have none to check). */
static clt_status check_warmup(const clt__schedule *v, const char *fn)
{
    clt__sched_kind k = v->kind;
    if (k == CLT__SCHED_CONSTANT && !(v->factor > 0.0 && v->factor <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: factor %g: Constant multiplicative factor expected to be between "
                          "0 and 1 (and not 0: torch divides by it at total_iters)",
                          fn, v->factor);
    if ((k == CLT__SCHED_CONSTANT || k == CLT__SCHED_POLYNOMIAL) && v->period <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: total_iters must be positive, not %lld",
                          fn, (long long)v->period);
    if (k == CLT__SCHED_POLYNOMIAL && (!(v->factor >= 0.0) || isinf(v->factor)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: power %g: a finite power >= 0 (torch divides by zero at "
                          "total_iters with a negative one)",
                          fn, v->factor);
    if (k != CLT__SCHED_WARM_RESTARTS)
        return CLT_OK;
    if (v->period <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected positive integer T_0, but got %lld", fn,
                          (long long)v->period);
    if (v->t_mult < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected integer T_mult >= 1, but got %lld", fn,
                          (long long)v->t_mult);
    if (!isfinite(v->factor))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid eta_min %g", fn, v->factor);
    if (v->t_i < v->period || !(v->t_cur >= 0.0 && v->t_cur < (double)v->t_i))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: T_i %lld and T_cur %g: T_i at least T_0 (%lld), T_cur in [0, T_i)",
                          fn, (long long)v->t_i, v->t_cur, (long long)v->period);
    return CLT_OK;
}

/* CyclicLR's settings as its constructor makes them (a file's): max_lr a
 * rate, total_size finite and > 0, step_ratio in (0, 1], gamma finite,
 * the momenta it cycles finite and >= 0. */
static clt_status check_cyclic(const clt__schedule *v, const char *fn)
{
    const clt__cyclic *c = &v->cyclic;
    clt_status st = check_rate(v->factor, "max_lr", fn);
    if (st != CLT_OK)
        return st;
    if (!(c->total_size > 0.0) || isinf(c->total_size) ||
        !(c->step_ratio > 0.0 && c->step_ratio <= 1.0) || !isfinite(c->gamma))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: CyclicLR's total_size %g, step_ratio %g and gamma %g: total_size "
                          "finite and > 0, step_ratio in (0, 1], gamma finite",
                          fn, c->total_size, c->step_ratio, c->gamma);
    if (c->momentum && (!(c->base_momentum >= 0.0 && c->max_momentum >= 0.0) ||
                        isinf(c->base_momentum) || isinf(c->max_momentum)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: base_momentum %g and max_momentum %g must be finite and >= 0", fn,
                          c->base_momentum, c->max_momentum);
    return CLT_OK;
}

/* SWALR's settings: torch's checks and messages, and rates that are
 * rates. */
static clt_status check_swa(const clt__schedule *v, const char *fn)
{
    if (v->period < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: anneal_epochs must be equal or greater than 0, got %lld", fn,
                          (long long)v->period);
    for (size_t g = 0; g < v->n_swa; g++) {
        clt_status st = check_rate(v->swa_lrs[g], "swa_lr", fn);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

static clt_status check_schedule(const clt__schedule *v, const char *fn)
{
    static const char *const period_name[] = {
        [CLT__SCHED_STEP] = "step_size", [CLT__SCHED_COSINE] = "T_max",
        [CLT__SCHED_LINEAR] = "total_iters"};
    clt__sched_kind k = v->kind;
    if (k == CLT__SCHED_CYCLIC)
        return check_cyclic(v, fn);
    if (k == CLT__SCHED_SWA)
        return check_swa(v, fn);
    if (k >= CLT__SCHED_CONSTANT)
        return check_warmup(v, fn);
    if (k == CLT__SCHED_PLATEAU)
        return check_plateau(v, fn);
    if (k == CLT__SCHED_ONE_CYCLE && v->period <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected positive integer total_steps, but got %lld", fn,
                          (long long)v->period);
    if (k == CLT__SCHED_ONE_CYCLE)
        return check_one_cycle(v, fn);
    if ((k == CLT__SCHED_STEP || k == CLT__SCHED_COSINE || k == CLT__SCHED_LINEAR) &&
        v->period <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s must be positive, not %lld", fn,
                          period_name[k], (long long)v->period);
    if (k == CLT__SCHED_LINEAR) {
        /* torch's LinearLR checks, and messages */
        if (!(v->factor > 0.0 && v->factor <= 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: start_factor %g: starting multiplicative factor expected "
                              "to be greater than 0 and less or equal to 1",
                              fn, v->factor);
        if (!(v->factor2 >= 0.0 && v->factor2 <= 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: end_factor %g: ending multiplicative factor expected to be "
                              "between 0 and 1",
                              fn, v->factor2);
        return CLT_OK;
    }
    if (!isfinite(v->factor) || (k != CLT__SCHED_COSINE && v->factor < 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid %s %g", fn,
                          k == CLT__SCHED_COSINE ? "eta_min" : "gamma", v->factor);
    for (size_t i = 0; k == CLT__SCHED_MULTISTEP && i < v->n_milestones; i++)
        if (v->milestones[i] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: milestone %zu is negative (%lld): milestones are epochs",
                              fn, i, (long long)v->milestones[i]);
    return CLT_OK;
}

/* A copy of v's milestones (NULL for none), or NULL with *st set. */
static int64_t *copy_milestones(const clt__schedule *v, clt_status *st, const char *fn)
{
    *st = CLT_OK;
    if (v->kind != CLT__SCHED_MULTISTEP || v->n_milestones == 0)
        return NULL;
    int64_t *m = clt__calloc(v->n_milestones, sizeof *m);
    if (m == NULL)
        *st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    else
        memcpy(m, v->milestones, v->n_milestones * sizeof *m);
    return m;
}

static double *momentum_of(clt_optimizer *o, size_t g);

/* OneCycleLR's rate at step `epoch` (torch's get_lr, bit for bit: the
 * same operations in the same order), in *lr, and with mom not NULL and
 * cycle_momentum its momentum, from the optimizer's group's max_momentum
 * and base_momentum, in *mom; refused, as torch refuses it, past
 * total_steps or in a phase of no length (torch divides by zero there). */
static clt_status one_cycle_at(const clt_lr_scheduler *s, size_t gi, int64_t epoch, double *lr,
                               double *mom, const char *fn)
{
    const clt__one_cycle *c = &s->cycle;
    if (epoch > s->period)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Tried to step %lld times. The specified number of total steps "
                          "is %lld",
                          fn, (long long)epoch + 1, (long long)s->period);
    /* the rates each phase goes from and to: initial -> max -> min, or
     * initial -> max -> initial -> min */
    double base = s->base_lrs[gi];
    const double from[3] = {base, s->factor, base};
    const double to[3] = {s->factor, c->phases == 3 ? base : s->factor2, s->factor2};
    double step = (double)epoch, start = 0.0;
    for (int i = 0; i < c->phases; i++) {
        double end = c->end_step[i];
        if (step <= end || i == c->phases - 1) {
            if (end - start == 0.0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: step %lld falls in phase %d of OneCycleLR, which has no "
                                  "length (it starts and ends at step %g: float division by "
                                  "zero in torch)",
                                  fn, (long long)epoch, i, end);
            double pct = (step - start) / (end - start);
            if (c->linear)
                *lr = (to[i] - from[i]) * pct + from[i];
            else
                *lr = to[i] + (from[i] - to[i]) / 2.0 * (cos(M_PI * pct) + 1);
            if (mom && c->momentum) {
                /* max -> base -> max, or max -> base -> max -> max */
                const clt__opt_group *g = &s->opt->groups[gi].set.group;
                if (!g->has_momentum)
                    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                      "%s: OneCycleLR cycles momentum and the optimizer has no "
                                      "max_momentum and base_momentum (load the optimizer's "
                                      "file, which holds them)",
                                      fn);
                double a = i == 1 ? g->base_momentum : g->max_momentum;
                double b = i == 0 ? g->base_momentum : g->max_momentum;
                if (c->linear)
                    *mom = (b - a) * pct + a;
                else
                    *mom = b + (a - b) / 2.0 * (cos(M_PI * pct) + 1);
            }
            break;
        }
        start = end;
    }
    if (!(*lr >= 0.0))
        *lr = 0.0;
    return CLT_OK;
}

static clt_status one_cycle_lr(const clt_lr_scheduler *s, size_t g, int64_t epoch, double *lr,
                               const char *fn)
{
    return one_cycle_at(s, g, epoch, lr, NULL, fn);
}

/* CyclicLR's rate at batch `epoch` (torch's get_lr, the same operations in
 * the same order) in *lr, and with cycle_momentum its momentum in *mom; a
 * scale_fn giving NaN or an infinity, or a rate that is not one, is
 * refused. */
static clt_status cyclic_at(const clt_lr_scheduler *s, size_t g, int64_t epoch, double *lr,
                            double *mom, const char *fn)
{
    const clt__cyclic *c = &s->cyclic;
    double e = (double)epoch;
    double cycle = floor(1 + e / c->total_size);
    double x = 1. + e / c->total_size - cycle;
    double scale_factor = x <= c->step_ratio ? x / c->step_ratio : (x - 1) / (c->step_ratio - 1);
    double arg = c->iterations ? e : cycle, scale = 1.;
    if (c->mode == CLT__CYCLIC_TRIANGULAR2)
        scale = 1 / pow(2., arg - 1);
    else if (c->mode == CLT__CYCLIC_EXP_RANGE)
        scale = pow(c->gamma, arg);
    else if (c->mode == CLT__CYCLIC_CUSTOM) {
        scale = s->lambda(s->user, (int64_t)arg);
        if (!isfinite(scale))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: CyclicLR's scale_fn failed at %s %lld (it gave %g: a finite "
                              "factor is a scale, NaN or an infinity its failure)",
                              fn, c->iterations ? "iteration" : "cycle", (long long)arg, scale);
    }
    *lr = s->base_lrs[g] + (s->factor - s->base_lrs[g]) * scale_factor * scale;
    if (c->momentum)
        *mom = c->max_momentum - (c->max_momentum - c->base_momentum) * scale_factor * scale;
    if (c->momentum && !(*mom >= 0.0 && isfinite(*mom)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: CyclicLR's momentum at batch %lld would be %g, not a momentum", fn,
                          (long long)epoch, *mom);
    return check_lr(*lr, fn);
}

/* CosineAnnealingWarmRestarts' get_lr at T_cur, T_i. */
static double warm_lr(const clt_lr_scheduler *s, size_t g, double t_cur, int64_t t_i)
{
    return s->factor + (s->base_lrs[g] - s->factor) * (1 + cos(M_PI * t_cur / (double)t_i)) / 2;
}

/* The rate s gives at epoch e, in closed form (torch's
 * _get_closed_form_lr); ReduceLROnPlateau's is the optimizer's, and
 * OneCycleLR's one_cycle_lr's (checked before: here 0 where it fails). */
static double schedule_lr(const clt_lr_scheduler *s, size_t g, int64_t epoch)
{
    double lr, e = (double)epoch, base = s->base_lrs[g];
    size_t k = 0;
    switch (s->kind) {
    case CLT__SCHED_PLATEAU:
        return s->opt ? s->opt->groups[g].lr : s->last_lrs[g];
    case CLT__SCHED_ONE_CYCLE:
        lr = 0.0; /* the state was checked: one_cycle_lr cannot fail */
        (void)one_cycle_lr(s, g, epoch, &lr, "clt_lr_scheduler");
        return lr;
    case CLT__SCHED_COSINE:
        lr = s->factor + (base - s->factor) * (1.0 + cos(M_PI * e / (double)s->period)) / 2.0;
        break;
    case CLT__SCHED_EXPONENTIAL:
        lr = base * pow(s->factor, e);
        break;
    case CLT__SCHED_MULTISTEP:
        for (size_t i = 0; i < s->n_milestones; i++)
            k += s->milestones[i] <= epoch; /* bisect_right of the sorted milestones */
        lr = base * pow(s->factor, (double)k);
        break;
    case CLT__SCHED_LINEAR:
        lr = base * (s->factor + (s->factor2 - s->factor) *
                                           (double)(epoch < s->period ? epoch : s->period) /
                                           (double)s->period);
        break;
    case CLT__SCHED_CONSTANT:
        lr = base * (s->factor + (epoch >= s->period ? 1 - s->factor : 0.0));
        break;
    case CLT__SCHED_POLYNOMIAL:
        lr = base *
             pow(1.0 - (double)(epoch < s->period ? epoch : s->period) / (double)s->period,
                 s->factor);
        break;
    case CLT__SCHED_WARM_RESTARTS:
        lr = warm_lr(s, g, s->t_cur, s->t_i);
        break;
    case CLT__SCHED_LAMBDA:
    case CLT__SCHED_MULTIPLICATIVE:
    case CLT__SCHED_SEQUENTIAL:
    case CLT__SCHED_CHAINED:
    case CLT__SCHED_CYCLIC:
    case CLT__SCHED_SWA:
        return s->last_lrs[g]; /* no closed form: the rate it set */
    default:
        lr = base * pow(s->factor, (double)(epoch / s->period));
    }
    return lr < 0 ? 0 : lr;
}

/* Whether s takes torch's chainable form: another schedule made on its
 * optimizer is alive, whose factors multiply with s's, or s was made
 * where the rate was not its base (initial_lr: a schedule made after the
 * rate was set by hand or loaded), from which torch goes on (OneCycleLR,
 * which sets its rates outright, and ReduceLROnPlateau, which multiplies
 * the rate now, have one form). */
static bool chained(const clt_lr_scheduler *s)
{
    return s->opt && (s->opt->schedules > 1 || s->rebased || s->owner) &&
           s->kind != CLT__SCHED_ONE_CYCLE && s->kind != CLT__SCHED_PLATEAU &&
           s->kind != CLT__SCHED_WARM_RESTARTS && s->kind != CLT__SCHED_LAMBDA &&
           s->kind != CLT__SCHED_MULTIPLICATIVE && s->kind != CLT__SCHED_SEQUENTIAL &&
           s->kind != CLT__SCHED_CHAINED && s->kind != CLT__SCHED_CYCLIC &&
           s->kind != CLT__SCHED_SWA;
}

/* CosineAnnealingLR's restart test, (last_epoch - 1 - T_max) % (2 T_max)
 * == 0 with Python's modulo, in 128 bits: T_max up to INT64_MAX (2 T_max
 * overflowed int64). */
static bool cosine_restart(int64_t epoch, int64_t period)
{
    if (period <= 0)
        return false;
    __int128 m = 2 * (__int128)period;
    return ((__int128)epoch - 1 - period) % m == 0;
}

/* torch's get_lr (its chainable form) at epoch: the optimizer's rate now
 * times the schedule's factor for that epoch, the same operations in the
 * same order. */
static double chain_lr(const clt_lr_scheduler *s, size_t g, int64_t epoch)
{
    double lr = s->opt->groups[g].lr, e = (double)epoch, t = (double)s->period, k = 0;
    switch (s->kind) {
    case CLT__SCHED_STEP:
        lr = epoch == 0 || epoch % s->period != 0 ? lr : lr * s->factor;
        break;
    case CLT__SCHED_EXPONENTIAL:
        lr = epoch == 0 ? lr : lr * s->factor;
        break;
    case CLT__SCHED_MULTISTEP:
        for (size_t i = 0; i < s->n_milestones; i++)
            k += s->milestones[i] == epoch; /* the Counter's count of epoch */
        lr = k == 0 ? lr : lr * pow(s->factor, k);
        break;
    case CLT__SCHED_LINEAR:
        if (epoch == 0)
            lr = lr * s->factor;
        else if (epoch <= s->period)
            lr = lr * (1. + (s->factor2 - s->factor) /
                                (t * s->factor + (e - 1) * (s->factor2 - s->factor)));
        break;
    case CLT__SCHED_COSINE:
        /* (last_epoch - 1 - T_max) % (2 T_max) == 0, Python's modulo */
        if (epoch == 0)
            break;
        if (cosine_restart(epoch, s->period))
            lr = lr + (s->base_lrs[g] - s->factor) * (1 - cos(M_PI / t)) / 2;
        else
            lr = (1 + cos(M_PI * e / t)) / (1 + cos(M_PI * (e - 1) / t)) * (lr - s->factor) +
                 s->factor;
        break;
    case CLT__SCHED_CONSTANT:
        if (epoch == 0)
            lr = lr * s->factor;
        else if (epoch == s->period)
            lr = lr * (1.0 / s->factor);
        break;
    case CLT__SCHED_POLYNOMIAL:
        if (epoch != 0 && epoch <= s->period)
            lr = lr * pow((1.0 - e / t) / (1.0 - (e - 1) / t), s->factor);
        break;
    default:
        break;
    }
    return lr < 0 ? 0 : lr;
}

/* The callback's factor at epoch e: a NaN or an infinity is its failure,
 * refused with a message. */
static clt_status lambda_at(const clt_lr_scheduler *s, int64_t e, double *f, const char *fn)
{
    double r = s->lambda(s->user, e);
    if (!isfinite(r))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s's lr_lambda failed at epoch %lld (it gave %g: a finite "
                          "factor is a rate, NaN or an infinity its failure)",
                          fn, sched_name[s->kind], (long long)e, r);
    *f = r;
    return CLT_OK;
}

/* SWALR's anneal_func at t: _cosine_anneal or _linear_anneal. */
static double swa_anneal(const clt_lr_scheduler *s, double t)
{
    return s->swa_linear ? t : (1 - cos(M_PI * t)) / 2;
}

/* torch 1.13's SWALR.get_lr for group g at step e (its _step_count - 1),
 * the same operations in the same order; swa_lr the group's, as torch
 * reads it (an optimizer's loaded state sets it), else the schedule's. */
static double swa_rate(const clt_lr_scheduler *s, size_t g, int64_t e)
{
    const clt__opt_group *gg = &s->opt->groups[g].set.group;
    int64_t step = s->period == 0 && e < 1 ? 1 : e;
    double span = (double)(s->period > 1 ? s->period : 1);
    double swa = gg->has_swa_lr ? gg->swa_lr : s->swa_lrs[g];
    double prev_alpha = swa_anneal(s, fmax(0.0, fmin(1.0, (double)(step - 1) / span)));
    double prev = prev_alpha == 1.0 ? swa
                                    : (s->opt->groups[g].lr - prev_alpha * swa) / (1 - prev_alpha);
    double alpha = swa_anneal(s, fmax(0.0, fmin(1.0, (double)step / span)));
    return swa * alpha + prev * (1 - alpha);
}

/* torch's step() (or with `zero` step(0)) of LambdaLR, MultiplicativeLR,
 * SWALR and CosineAnnealingWarmRestarts, which have no closed form: the rate, and
 * the warm restarts' T_cur and T_i after it, in *lr, *t_cur, *t_i; s
 * unchanged. */
static clt_status own_rate(const clt_lr_scheduler *s, size_t g, bool zero, double *lr,
                           double *t_cur, int64_t *t_i, const char *fn)
{
    int64_t e = zero ? 0 : s->epoch + 1;
    double f = 1.0;
    clt_status st = CLT_OK;
    switch (s->kind) {
    case CLT__SCHED_LAMBDA:
        st = lambda_at(s, e, &f, fn);
        *lr = s->base_lrs[g] * f;
        break;
    case CLT__SCHED_MULTIPLICATIVE:
        if (e > 0)
            st = lambda_at(s, e, &f, fn);
        *lr = e > 0 ? s->opt->groups[g].lr * f : s->opt->groups[g].lr;
        break;
    case CLT__SCHED_SWA:
        *lr = swa_rate(s, g, e);
        break;
    default: /* CosineAnnealingWarmRestarts */
        if (zero || s->epoch < 0) {
            *t_i = s->period;
            *t_cur = 0.0;
        } else {
            *t_cur = s->t_cur + 1;
            *t_i = s->t_i;
            if (*t_cur >= (double)s->t_i) {
                if (s->t_i > INT64_MAX / s->t_mult)
                    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                      "%s: T_i %lld times T_mult %lld is past int64", fn,
                                      (long long)s->t_i, (long long)s->t_mult);
                *t_cur = *t_cur - (double)s->t_i;
                *t_i = s->t_i * s->t_mult;
            }
        }
        *lr = warm_lr(s, g, *t_cur, *t_i);
    }
    if (st == CLT_OK)
        st = check_lr(*lr, fn);
    return st;
}

/* Frees a schedule's own blocks (not its schedules) and the schedule. */
static void schedule_release(clt_lr_scheduler *s)
{
    free(s->milestones);
    free(s->base_lrs);
    free(s->last_lrs);
    free(s->swa_lrs);
    free(s);
}

/* Whether s cycles its optimizer's momentum. */
static bool cycles_momentum(const clt_lr_scheduler *s)
{
    return (s->kind == CLT__SCHED_ONE_CYCLE && s->cycle.momentum) ||
           (s->kind == CLT__SCHED_CYCLIC && s->cyclic.momentum);
}

static clt_status scheduler(clt_optimizer *opt, const clt__schedule *v, clt_lr_scheduler **out,
                            const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(opt, fn);
    if (v->n_milestones > 0)
        CLT__REQUIRE_ARG(v->milestones, fn);
    clt_status st = check_schedule(v, fn);
    if (st != CLT_OK)
        return st;
    size_t ng = opt->n_groups;
    clt_lr_scheduler *s = clt__calloc(1, sizeof *s);
    double *base = s ? clt__calloc(ng, sizeof *base) : NULL;
    double *last = base ? clt__calloc(ng, sizeof *last) : NULL;
    double *mom = last ? clt__calloc(ng, sizeof *mom) : NULL;
    int64_t *m = mom ? copy_milestones(v, &st, fn) : NULL;
    double *swa = mom && st == CLT_OK ? clt__calloc(ng, sizeof *swa) : NULL;
    if (mom == NULL || swa == NULL || st != CLT_OK) {
        free(s);
        free(base);
        free(last);
        free(mom);
        free(m);
        free(swa);
        return st != CLT_OK ? st : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                                              fn);
    }
    /* torch's base_lrs: each group's initial_lr, which the first schedule
     * made sets to the group's rate then (setdefault) and OneCycleLR to
     * its own; ReduceLROnPlateau has none. */
    bool rebased = false;
    for (size_t g = 0; g < ng; g++) {
        const clt__opt_group *gg = &opt->groups[g].set.group;
        double lr = opt->groups[g].lr;
        base[g] = v->kind == CLT__SCHED_ONE_CYCLE || v->kind == CLT__SCHED_CYCLIC ? v->base_lr
                  : v->kind == CLT__SCHED_PLATEAU || !gg->has_initial_lr      ? lr
                                                                               : gg->initial_lr;
        rebased = rebased || base[g] != lr;
        last[g] = lr;
    }
    *s = (clt_lr_scheduler){.opt = opt, .kind = v->kind, .period = v->period,
                            .factor = v->factor, .factor2 = v->factor2, .milestones = m,
                            .n_milestones = m ? v->n_milestones : 0, .cycle = v->cycle,
                            .plateau = v->plateau, .rebased = rebased, .lambda = v->lambda,
                            .user = v->user, .t_mult = v->t_mult, .t_i = v->t_i,
                            .cyclic = v->cyclic, .base_lrs = base, .last_lrs = last,
                            .groups = ng, .n_last = ng, .swa_lrs = swa,
                            .swa_linear = v->swa_linear != 0};
    for (size_t g = 0; g < ng && v->n_swa > 0; g++)
        swa[g] = v->swa_lrs[v->n_swa == 1 ? 0 : g];
    double t_cur = 0.0;
    int64_t t_i = v->period;
    /* torch's first step, from last_epoch -1: the callback's factor at
     * epoch 0 (MultiplicativeLR leaves the rate), or T_cur 0 */
    bool own_first = v->kind == CLT__SCHED_LAMBDA || v->kind == CLT__SCHED_MULTIPLICATIVE ||
                     v->kind == CLT__SCHED_WARM_RESTARTS || v->kind == CLT__SCHED_SWA;
    for (size_t g = 0; g < ng && st == CLT_OK; g++) {
        if (v->kind == CLT__SCHED_ONE_CYCLE)
            st = one_cycle_at(s, g, 0, &last[g], &mom[g], fn);
        if (v->kind == CLT__SCHED_CYCLIC)
            st = cyclic_at(s, g, 0, &last[g], &mom[g], fn);
        if (own_first) {
            s->epoch = -1;
            st = own_rate(s, g, false, &last[g], &t_cur, &t_i, fn);
            s->epoch = 0;
        }
    }
    s->t_cur = t_cur;
    s->t_i = t_i;
    if (st == CLT_OK && !attach_schedule(s))
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st != CLT_OK) {
        free(mom);
        schedule_release(s);
        return st;
    }
    for (size_t g = 0; g < ng; g++) {
        clt__opt_group *gg = &opt->groups[g].set.group;
        if (v->kind == CLT__SCHED_SWA) { /* torch's group['swa_lr'], set before initial_lr */
            gg->has_swa_lr = 1;
            gg->swa_lr = swa[g];
        }
        if (v->kind == CLT__SCHED_ONE_CYCLE) {
            gg->has_initial_lr = gg->has_one_cycle = 1;
            gg->initial_lr = v->base_lr;
            gg->max_lr = v->factor;
            gg->min_lr = v->factor2;
        } else if (v->kind != CLT__SCHED_PLATEAU && !gg->has_initial_lr) {
            /* CyclicLR sets the rate to base_lr before torch's setdefault */
            gg->has_initial_lr = 1;
            gg->initial_lr = v->kind == CLT__SCHED_CYCLIC ? v->base_lr : opt->groups[g].lr;
        }
    }
    /* torch's constructor takes a step to epoch 0, which sets LinearLR's
     * start_factor (and a MultiStepLR milestone 0) and OneCycleLR's first
     * rate; at epoch 0 the closed forms of StepLR, ExponentialLR and
     * MultiStepLR give base_lr exactly, CosineAnnealingLR's might not in its
     * last bit, and torch leaves the rate alone there.  ReduceLROnPlateau
     * takes no step.  A schedule made after another starts from the rate
     * that one set (torch's chainable form). */
    for (size_t g = 0; g < ng; g++) {
        if (chained(s))
            last[g] = chain_lr(s, g, 0);
        else if (v->kind != CLT__SCHED_ONE_CYCLE && v->kind != CLT__SCHED_COSINE &&
                 v->kind != CLT__SCHED_PLATEAU && v->kind != CLT__SCHED_CYCLIC && !own_first)
            last[g] = schedule_lr(s, g, 0);
        opt->groups[g].lr = last[g];
        if (cycles_momentum(s))
            *momentum_of(opt, g) = mom[g];
    }
    free(mom);
    *out = s;
    return clt__ok();
}

/* v as one of two names, a (or NULL) giving *second 0, b 1. */
static clt_status parse_choice(const char *v, const char *a, const char *b, const char *what,
                               int *second, const char *fn)
{
    if (v == NULL || strcmp(v, a) == 0) {
        *second = 0;
        return CLT_OK;
    }
    if (strcmp(v, b) == 0) {
        *second = 1;
        return CLT_OK;
    }
    char q[64];
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s '%s' is unknown: '%s' or '%s' (NULL: '%s')",
                      fn, what, CLT__QUOTE(q, v), a, b, a);
}

/* The settings of every group of o (new, released with free), to put
 * back with settings_restore; NULL when out of host memory. */
static clt__opt_settings *settings_save(const clt_optimizer *o)
{
    clt__opt_settings *c = clt__calloc(o->n_groups, sizeof *c);
    for (size_t g = 0; c && g < o->n_groups; g++)
        c[g] = o->groups[g].set;
    return c;
}

/* A schedule cycling the momentum of opt, whose groups' settings were
 * `old` (settings_save) before the caller gave them the schedule's first
 * momentum: the schedule, and the momentum buffers an optimizer made
 * without momentum lacks; a failure gives opt its old settings and rates
 * back and frees the buffers made.  old is released. */
static clt_status momentum_schedule(clt_optimizer *opt, const clt__schedule *v,
                                    clt__opt_settings *old, clt_lr_scheduler **out,
                                    const char *fn)
{
    double *old_lr = clt__calloc(opt->n_groups, sizeof *old_lr);
    clt_status st = old_lr ? CLT_OK
                           : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t g = 0; old_lr && g < opt->n_groups; g++)
        old_lr[g] = opt->groups[g].lr;
    if (st == CLT_OK)
        st = scheduler(opt, v, out, fn);
    if (st == CLT_OK)
        st = make_state(opt, fn);
    if (st != CLT_OK) {
        clt_lr_scheduler_free(*out);
        *out = NULL;
        for (size_t g = 0; g < opt->n_groups; g++) {
            opt->groups[g].set = old[g];
            if (old_lr)
                opt->groups[g].lr = old_lr[g];
        }
        for (size_t i = 0; i < opt->n; i++)
            for (int j = 0; j < NSTATE; j++)
                if (opt->state[j][i] && !keeps_state(opt->kind, &group_of(opt, i)->set, j)) {
                    clt_tensor_free(opt->state[j][i]);
                    opt->state[j][i] = NULL;
                }
    }
    free(old_lr);
    free(old);
    return st;
}

/* OneCycleLR with settings v, cycling momentum when `cycle`: the
 * optimizer's group gets max_momentum and base_momentum and its momentum
 * (beta1) max_momentum, as torch's constructor gives them, and the
 * momentum buffers an optimizer made without momentum lacks are made.
 * A failure leaves the optimizer as it was. */
static clt_status one_cycle(clt_optimizer *opt, clt__schedule *v, bool cycle,
                            double base_momentum, double max_momentum, clt_lr_scheduler **out,
                            const char *fn)
{
    if (!cycle || opt == NULL || out == NULL)
        return scheduler(opt, v, out, fn);
    *out = NULL;
    if (momentum_of(opt, 0) == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: optimizer must support momentum with `cycle_momentum` option "
                          "enabled (%s has no momentum)",
                          fn, kinds[opt->kind].torch);
    bool betas = has_betas(opt->kind);
    if (!(base_momentum >= 0.0 && max_momentum >= 0.0) || isinf(base_momentum) ||
        isinf(max_momentum) || (betas && !(base_momentum < 1.0 && max_momentum < 1.0)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: base_momentum %g and max_momentum %g must be momenta %s accepts "
                          "(%s)",
                          fn, base_momentum, max_momentum, kinds[opt->kind].torch,
                          betas ? "betas[0] in [0, 1)" : "finite and >= 0");
    clt__opt_settings *old = settings_save(opt);
    if (old == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t k = 0; k < opt->n_groups; k++) {
        clt__opt_group *g = &opt->groups[k].set.group;
        g->has_momentum = 1;
        g->max_momentum = max_momentum;
        g->base_momentum = base_momentum;
        *momentum_of(opt, k) = max_momentum;
    }
    v->cycle.momentum = 1;
    return momentum_schedule(opt, v, old, out, fn);
}

/* clt_one_cycle_lr_momentum, its messages naming fn. */
static clt_status one_cycle_in(const char *fn, clt_optimizer *opt, double max_lr,
                               int64_t total_steps, double pct_start,
                               const char *anneal_strategy, double div_factor,
                               double final_div_factor, int three_phase, int cycle_momentum,
                               double base_momentum, double max_momentum,
                               clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_ONE_CYCLE, .period = total_steps, .factor = max_lr};
    if (out)
        *out = NULL;
    clt_status st = parse_choice(anneal_strategy, "cos", "linear", "anneal_strategy",
                                 &v.cycle.linear, fn);
    if (st != CLT_OK)
        return st;
    if (!(pct_start >= 0.0 && pct_start <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected float between 0 and 1 pct_start, but got %g", fn,
                          pct_start);
    if (!(div_factor > 0.0) || !(final_div_factor > 0.0) || isinf(div_factor) ||
        isinf(final_div_factor))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: div_factor %g and final_div_factor %g must be finite and > 0", fn,
                          div_factor, final_div_factor);
    /* torch's _schedule_phases and the rates it puts in the parameter group */
    v.base_lr = max_lr / div_factor;
    v.factor2 = v.base_lr / final_div_factor;
    double t = (double)total_steps;
    v.cycle.phases = three_phase ? 3 : 2;
    v.cycle.end_step[0] = pct_start * t - 1;
    if (three_phase)
        v.cycle.end_step[1] = 2 * pct_start * t - 2;
    v.cycle.end_step[v.cycle.phases - 1] = t - 1; /* refused below when total_steps < 1 */
    return one_cycle(opt, &v, cycle_momentum != 0, base_momentum, max_momentum, out, fn);
}

clt_status clt_one_cycle_lr(clt_optimizer *opt, double max_lr, int64_t total_steps,
                            double pct_start, const char *anneal_strategy, double div_factor,
                            double final_div_factor, int three_phase, clt_lr_scheduler **out)
{
    return one_cycle_in("clt_one_cycle_lr", opt, max_lr, total_steps, pct_start,
                        anneal_strategy, div_factor, final_div_factor, three_phase, 0, 0, 0,
                        out);
}

clt_status clt_one_cycle_lr_momentum(clt_optimizer *opt, double max_lr, int64_t total_steps,
                                     double pct_start, const char *anneal_strategy,
                                     double div_factor, double final_div_factor,
                                     int three_phase, int cycle_momentum, double base_momentum,
                                     double max_momentum, clt_lr_scheduler **out)
{
    return one_cycle_in("clt_one_cycle_lr_momentum", opt, max_lr, total_steps, pct_start,
                        anneal_strategy, div_factor, final_div_factor, three_phase,
                        cycle_momentum, base_momentum, max_momentum, out);
}

clt_status clt_cyclic_lr(clt_optimizer *opt, double base_lr, double max_lr, int64_t step_size_up,
                         int64_t step_size_down, const char *mode, double gamma,
                         clt_lr_lambda scale_fn, void *user, const char *scale_mode,
                         int cycle_momentum, double base_momentum, double max_momentum,
                         clt_lr_scheduler **out)
{
    static const char fn[] = "clt_cyclic_lr";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(opt, fn);
    clt__schedule v = {.kind = CLT__SCHED_CYCLIC, .base_lr = base_lr, .factor = max_lr,
                       .lambda = scale_fn, .user = user};
    clt__cyclic *c = &v.cyclic;
    clt_status st = check_rate(base_lr, "base_lr", fn);
    if (st == CLT_OK)
        st = check_rate(max_lr, "max_lr", fn);
    if (st != CLT_OK)
        return st;
    if (step_size_up < 1 || step_size_down > INT64_MAX - step_size_up)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: step_size_up %lld and step_size_down %lld: step_size_up at least "
                          "1, their sum an int64",
                          fn, (long long)step_size_up, (long long)step_size_down);
    if (!isfinite(gamma))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid gamma %g", fn, gamma);
    /* torch's constructor: the sizes as floats, step_size_down None (here
     * negative) is step_size_up */
    double up = (double)step_size_up, down = step_size_down < 0 ? up : (double)step_size_down;
    c->total_size = up + down;
    c->step_ratio = up / c->total_size;
    c->gamma = gamma;
    if (scale_fn) {
        c->mode = CLT__CYCLIC_CUSTOM;
        st = parse_choice(scale_mode, "cycle", "iterations", "scale_mode", &c->iterations, fn);
        if (st != CLT_OK)
            return st;
    } else if (mode == NULL || strcmp(mode, "triangular") == 0) {
        c->mode = CLT__CYCLIC_TRIANGULAR;
    } else if (strcmp(mode, "triangular2") == 0) {
        c->mode = CLT__CYCLIC_TRIANGULAR2;
    } else if (strcmp(mode, "exp_range") == 0) {
        c->mode = CLT__CYCLIC_EXP_RANGE;
        c->iterations = 1;
    } else {
        char q[64];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: mode is invalid and scale_fn is None (mode '%s': 'triangular', "
                          "'triangular2' or 'exp_range', NULL: 'triangular')",
                          fn, CLT__QUOTE(q, mode));
    }
    if (!cycle_momentum)
        return scheduler(opt, &v, out, fn);
    /* torch's SGD and RMSprop have a momentum setting, Adam's kinds betas */
    if (opt->kind != SGD && opt->kind != RMSPROP)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: optimizer must support momentum with `cycle_momentum` option "
                          "enabled (%s has no momentum setting: SGD and RMSprop have)",
                          fn, kinds[opt->kind].torch);
    if (!(base_momentum >= 0.0 && max_momentum >= 0.0) || isinf(base_momentum) ||
        isinf(max_momentum))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: base_momentum %g and max_momentum %g must be finite and >= 0", fn,
                          base_momentum, max_momentum);
    c->momentum = 1;
    c->base_momentum = base_momentum;
    c->max_momentum = max_momentum;
    clt__opt_settings *old = settings_save(opt);
    if (old == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t g = 0; g < opt->n_groups; g++)
        *momentum_of(opt, g) = max_momentum; /* the first step's, for make_state */
    return momentum_schedule(opt, &v, old, out, fn);
}

clt_status clt_reduce_lr_on_plateau(clt_optimizer *opt, const char *mode, double factor,
                                    int64_t patience, double threshold,
                                    const char *threshold_mode, int64_t cooldown, double min_lr,
                                    double eps, clt_lr_scheduler **out)
{
    static const char fn[] = "clt_reduce_lr_on_plateau";
    clt__schedule v = {.kind = CLT__SCHED_PLATEAU, .period = patience, .factor = factor,
                       .factor2 = min_lr};
    if (out)
        *out = NULL;
    clt_status st = parse_choice(mode, "min", "max", "mode", &v.plateau.max, fn);
    if (st == CLT_OK)
        st = parse_choice(threshold_mode, "rel", "abs", "threshold_mode", &v.plateau.abs, fn);
    if (st != CLT_OK)
        return st;
    v.plateau.cooldown = cooldown;
    v.plateau.threshold = threshold;
    v.plateau.eps = eps;
    v.plateau.best = v.plateau.max ? -INFINITY : INFINITY; /* mode_worse */
    return scheduler(opt, &v, out, fn);
}

clt_status clt_step_lr(clt_optimizer *opt, int64_t step_size, double gamma,
                       clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_STEP, .period = step_size, .factor = gamma};
    return scheduler(opt, &v, out, "clt_step_lr");
}

clt_status clt_cosine_lr(clt_optimizer *opt, int64_t t_max, double eta_min,
                         clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_COSINE, .period = t_max, .factor = eta_min};
    return scheduler(opt, &v, out, "clt_cosine_lr");
}

clt_status clt_exponential_lr(clt_optimizer *opt, double gamma, clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_EXPONENTIAL, .factor = gamma};
    return scheduler(opt, &v, out, "clt_exponential_lr");
}

clt_status clt_multistep_lr(clt_optimizer *opt, const int64_t *milestones, size_t n,
                            double gamma, clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_MULTISTEP, .factor = gamma, .milestones = milestones,
                       .n_milestones = n};
    return scheduler(opt, &v, out, "clt_multistep_lr");
}

clt_status clt_linear_lr(clt_optimizer *opt, double start_factor, double end_factor,
                         int64_t total_iters, clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_LINEAR, .period = total_iters,
                       .factor = start_factor, .factor2 = end_factor};
    return scheduler(opt, &v, out, "clt_linear_lr");
}

static clt_status check_attached(const clt_lr_scheduler *s, const char *fn);

static clt_status container_step(clt_lr_scheduler *s, const char *fn);

/* torch 1.13's step of s over group g, which was added to the optimizer
 * after s was made (s has no base_lrs entry for it): the chainable forms
 * of StepLR, ExponentialLR, MultiStepLR, LinearLR, ConstantLR,
 * PolynomialLR and CosineAnnealingLR (but for its restart step, which
 * zips base_lrs) scale its rate as the others', as torch's get_lr does
 * over every group; LambdaLR, MultiplicativeLR, CosineAnnealingWarmRestarts,
 * CyclicLR and a SequentialLR's step(0) (torch's zips over base_lrs or
 * lr_lambdas) leave it; OneCycleLR fails as torch's (KeyError:
 * 'initial_lr'). */
static clt_status added_group_lr(const clt_lr_scheduler *s, size_t g, int64_t e, bool zero,
                                 double *lr, const char *fn)
{
    *lr = s->opt->groups[g].lr;
    switch (s->kind) {
    case CLT__SCHED_ONE_CYCLE:
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: parameter group %zu was added after this OneCycleLR was made "
                          "and has no 'initial_lr' (torch 1.13: KeyError: 'initial_lr')",
                          fn, g);
    case CLT__SCHED_COSINE:
        if (!zero && e != 0 && cosine_restart(e, s->period))
            return CLT_OK;
        /* fall through */
    case CLT__SCHED_STEP:
    case CLT__SCHED_EXPONENTIAL:
    case CLT__SCHED_MULTISTEP:
    case CLT__SCHED_LINEAR:
    case CLT__SCHED_CONSTANT:
    case CLT__SCHED_POLYNOMIAL:
        if (!zero)
            *lr = chain_lr(s, g, e);
        return CLT_OK;
    default:
        return CLT_OK;
    }
}

/* One step of s to its next epoch, or with `zero` torch's step(0) (a
 * SequentialLR's milestone: the closed form at epoch 0, where the kind has
 * one), over every group of its optimizer; a failure leaves s, the rates
 * and the momenta as they were. */
static clt_status schedule_step(clt_lr_scheduler *s, bool zero, const char *fn)
{
    if (s->kind == CLT__SCHED_SEQUENTIAL || s->kind == CLT__SCHED_CHAINED)
        return container_step(s, fn);
    if (s->epoch == INT64_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the epoch count is at its limit", fn);
    clt_optimizer *o = s->opt;
    size_t ng = o->n_groups;
    int64_t e = zero ? 0 : s->epoch + 1;
    double t_cur = s->t_cur;
    int64_t t_i = s->t_i;
    /* the new rates (kept as _last_lr), then the momenta */
    double *lr = clt__calloc(2 * ng, sizeof *lr), *mom = lr + ng;
    if (lr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    for (size_t g = 0; g < ng && st == CLT_OK; g++) {
        if (g >= s->groups)
            st = added_group_lr(s, g, e, zero, &lr[g], fn);
        else if (s->kind == CLT__SCHED_ONE_CYCLE)
            st = one_cycle_at(s, g, e, &lr[g], &mom[g], fn);
        else if (s->kind == CLT__SCHED_CYCLIC)
            st = cyclic_at(s, g, e, &lr[g], &mom[g], fn);
        else if (s->kind == CLT__SCHED_LAMBDA || s->kind == CLT__SCHED_MULTIPLICATIVE ||
                 s->kind == CLT__SCHED_WARM_RESTARTS || s->kind == CLT__SCHED_SWA)
            st = own_rate(s, g, zero, &lr[g], &t_cur, &t_i, fn);
        else
            lr[g] = chained(s) && !zero ? chain_lr(s, g, e) : schedule_lr(s, g, e);
        if (st == CLT_OK)
            st = check_lr(lr[g], fn);
    }
    if (st != CLT_OK) {
        free(lr);
        return st;
    }
    for (size_t g = 0; g < ng; g++) {
        o->groups[g].lr = lr[g];
        if (cycles_momentum(s) && g < s->groups)
            *momentum_of(o, g) = mom[g];
    }
    free(s->last_lrs);
    s->last_lrs = lr;
    s->n_last = ng;
    s->epoch = e;
    s->t_cur = t_cur;
    s->t_i = t_i;
    return clt__ok();
}

clt_status clt_lr_scheduler_step(clt_lr_scheduler *s)
{
    static const char fn[] = "clt_lr_scheduler_step";
    CLT__REQUIRE_ARG(s, fn);
    clt_status ast = check_attached(s, fn);
    if (ast != CLT_OK)
        return ast;
    if (s->kind == CLT__SCHED_PLATEAU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: ReduceLROnPlateau steps on a metric: call "
                          "clt_lr_scheduler_step_metric", fn);
    if (s->owner)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: this %s belongs to a %s, which steps it: step that one", fn,
                          sched_name[s->kind], sched_name[s->owner->kind]);
    return schedule_step(s, false, fn);
}

/* torch's ReduceLROnPlateau.is_better. */
static bool plateau_better(const clt__plateau *p, double a)
{
    if (!p->max && !p->abs)
        return a < p->best * (1. - p->threshold);
    if (!p->max)
        return a < p->best - p->threshold;
    if (!p->abs)
        return a > p->best * (p->threshold + 1.);
    return a > p->best + p->threshold;
}

clt_status clt_lr_scheduler_step_metric(clt_lr_scheduler *s, double metric)
{
    static const char fn[] = "clt_lr_scheduler_step_metric";
    CLT__REQUIRE_ARG(s, fn);
    clt_status ast = check_attached(s, fn);
    if (ast != CLT_OK)
        return ast;
    if (s->kind != CLT__SCHED_PLATEAU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s takes no metric (only ReduceLROnPlateau does): call "
                          "clt_lr_scheduler_step",
                          fn, sched_name[s->kind]);
    if (s->epoch == INT64_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the epoch count is at its limit", fn);
    clt_optimizer *o = s->opt;
    double *last = clt__calloc(o->n_groups, sizeof *last);
    if (last == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt__plateau *p = &s->plateau, was = *p;
    /* torch's step(metrics), in its order; a NaN metric is never better */
    if (plateau_better(p, metric)) {
        p->best = metric;
        p->num_bad_epochs = 0;
    } else {
        p->num_bad_epochs++;
    }
    if (p->cooldown_counter > 0) {
        p->cooldown_counter--;
        p->num_bad_epochs = 0; /* bad epochs in cooldown are ignored */
    }
    if (p->num_bad_epochs > s->period && o->n_groups > s->groups) {
        *p = was;
        free(last);
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: parameter group %zu was added after this ReduceLROnPlateau was "
                          "made and has no min_lr (torch 1.13: IndexError: list index out of "
                          "range)",
                          fn, s->groups);
    }
    for (size_t g = 0; g < o->n_groups; g++) {
        if (p->num_bad_epochs > s->period) {
            double old = o->groups[g].lr, lr = old * s->factor;
            lr = s->factor2 > lr ? s->factor2 : lr; /* max(old * factor, min_lr) */
            if (old - lr > p->eps)
                o->groups[g].lr = lr;
        }
        last[g] = o->groups[g].lr;
    }
    if (p->num_bad_epochs > s->period) {
        p->cooldown_counter = p->cooldown;
        p->num_bad_epochs = 0;
    }
    free(s->last_lrs);
    s->last_lrs = last;
    s->n_last = o->n_groups;
    s->epoch++;
    return clt__ok();
}

int64_t clt_lr_scheduler_epoch(const clt_lr_scheduler *s)
{
    return s ? s->epoch : 0;
}

void clt_lr_scheduler_free(clt_lr_scheduler *s)
{
    if (s == NULL || s->owner)
        return;
    for (size_t i = 0; i < s->n_subs; i++) {
        s->subs[i]->owner = NULL;
        clt_lr_scheduler_free(s->subs[i]);
    }
    free(s->subs);
    clt_optimizer *o = s->opt;
    for (size_t k = 0; o && k < o->schedules; k++)
        if (o->scheds[k] == s) {
            memmove(&o->scheds[k], &o->scheds[k + 1], (o->schedules - k - 1) * sizeof *o->scheds);
            o->schedules--;
            break;
        }
    schedule_release(s);
}

/* Refuses a step of a schedule whose optimizer was freed. */
static clt_status check_attached(const clt_lr_scheduler *s, const char *fn)
{
    if (s->opt == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the optimizer this %s drove was freed", fn, sched_name[s->kind]);
    return CLT_OK;
}

void clt__lr_scheduler_get(const clt_lr_scheduler *s, clt__schedule *out)
{
    *out = (clt__schedule){.kind = s->kind,
                           .epoch = s->epoch,
                           .period = s->period,
                           .base_lr = s->base_lrs ? s->base_lrs[0] : 0.0,
                           .factor = s->factor,
                           .factor2 = s->factor2,
                           .base_lrs = s->base_lrs,
                           .last_lrs = s->last_lrs,
                           .groups = s->groups,
                           .n_last = s->n_last,
                           .milestones = s->milestones,
                           .n_milestones = s->n_milestones,
                           .cycle = s->cycle,
                           .plateau = s->plateau,
                           .use_beta1 = s->opt && has_betas(s->opt->kind),
                           .t_mult = s->t_mult,
                           .t_i = s->t_i,
                           .t_cur = s->t_cur,
                           .cyclic = s->cyclic,
                           .swa_lrs = s->swa_lrs,
                           .n_swa = s->swa_lrs ? s->groups : 0,
                           .swa_linear = s->swa_linear};
}

size_t clt__lr_scheduler_opt_groups(const clt_lr_scheduler *s)
{
    return s->opt ? s->opt->n_groups : 0;
}

clt_status clt__lr_scheduler_check(const clt_lr_scheduler *s, const clt__schedule *v,
                                   const char *fn)
{
    clt_status st = check_schedule(v, fn);
    if (st == CLT_OK && v->groups != s->groups)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: base_lrs holds %zu rates, and the schedule was made over %zu "
                        "parameter groups",
                        fn, v->groups, s->groups);
    for (size_t g = 0; g < v->groups && st == CLT_OK; g++)
        st = check_lr(v->base_lrs[g], fn);
    if (st == CLT_OK && v->last_lrs &&
        (v->n_last < s->groups || v->n_last > clt__lr_scheduler_opt_groups(s)))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: _last_lr holds %zu rates, and the optimizer has %zu parameter "
                        "groups (the schedule was made over %zu)",
                        fn, v->n_last, clt__lr_scheduler_opt_groups(s), s->groups);
    /* a SequentialLR's schedule not yet started is at -1 */
    if (st == CLT_OK && v->epoch < (clt__lr_scheduler_later(s) ? -1 : 0))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: last_epoch %lld is negative", fn,
                        (long long)v->epoch);
    if (st == CLT_OK && v->kind == CLT__SCHED_ONE_CYCLE && v->cycle.momentum &&
        (s->opt == NULL || momentum_of(s->opt, 0) == NULL))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: cycle_momentum is True and the optimizer %s: optimizer must "
                        "support momentum with `cycle_momentum` option enabled",
                        fn, s->opt ? "is Adagrad" : "was freed");
    if (st == CLT_OK && v->kind == CLT__SCHED_ONE_CYCLE) {
        /* the rate at last_epoch must be one torch could have given */
        clt_lr_scheduler t = *s;
        double lr;
        t.epoch = v->epoch;
        t.period = v->period;
        t.base_lrs = (double *)v->base_lrs;
        t.factor = v->factor;
        t.factor2 = v->factor2;
        t.cycle = v->cycle;
        for (size_t g = 0; g < v->groups && st == CLT_OK; g++)
            st = one_cycle_lr(&t, g, v->epoch, &lr, fn);
    }
    return st;
}

clt_status clt__lr_scheduler_set(clt_lr_scheduler *s, const clt__schedule *v, const char *fn)
{
    clt_status st = clt__lr_scheduler_check(s, v, fn);
    int64_t *m = st == CLT_OK ? copy_milestones(v, &st, fn) : NULL;
    if (st != CLT_OK)
        return st;
    size_t n_last = v->last_lrs ? v->n_last : s->groups;
    double *last = clt__calloc(n_last ? n_last : 1, sizeof *last);
    if (last == NULL) {
        free(m);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    s->cycle = v->cycle;
    s->plateau = v->plateau;
    free(s->milestones);
    s->milestones = m;
    s->n_milestones = m ? v->n_milestones : 0;
    s->epoch = v->epoch;
    s->period = v->period;
    memcpy(s->base_lrs, v->base_lrs, s->groups * sizeof *s->base_lrs);
    s->factor = v->factor;
    s->factor2 = v->factor2;
    s->t_mult = v->t_mult;
    s->t_i = v->t_i;
    s->t_cur = v->t_cur;
    s->cyclic = v->cyclic;
    s->swa_linear = v->swa_linear != 0;
    bool own = chained(s) || s->kind == CLT__SCHED_LAMBDA || s->kind == CLT__SCHED_MULTIPLICATIVE ||
               s->kind == CLT__SCHED_CYCLIC || s->kind == CLT__SCHED_SWA;
    for (size_t g = 0; g < n_last; g++) {
        double l = v->last_lrs ? v->last_lrs[g] : NAN;
        last[g] = (own || g >= s->groups) && l >= 0 && !isinf(l) ? l
                  : g < s->groups                                ? schedule_lr(s, g, s->epoch)
                                                                 : s->opt->groups[g].lr;
    }
    free(s->last_lrs);
    s->last_lrs = last;
    s->n_last = n_last;
    return CLT_OK;
}

/* ---- warm-up schedules and schedules of schedules ------------------------------------------ */

clt_status clt_lambda_lr(clt_optimizer *opt, clt_lr_lambda lr_lambda, void *user,
                         clt_lr_scheduler **out)
{
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(lr_lambda, "clt_lambda_lr");
    clt__schedule v = {.kind = CLT__SCHED_LAMBDA, .lambda = lr_lambda, .user = user};
    return scheduler(opt, &v, out, "clt_lambda_lr");
}

clt_status clt_multiplicative_lr(clt_optimizer *opt, clt_lr_lambda lr_lambda, void *user,
                                 clt_lr_scheduler **out)
{
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(lr_lambda, "clt_multiplicative_lr");
    clt__schedule v = {.kind = CLT__SCHED_MULTIPLICATIVE, .lambda = lr_lambda, .user = user};
    return scheduler(opt, &v, out, "clt_multiplicative_lr");
}

clt_status clt_constant_lr(clt_optimizer *opt, double factor, int64_t total_iters,
                           clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_CONSTANT, .period = total_iters, .factor = factor};
    return scheduler(opt, &v, out, "clt_constant_lr");
}

clt_status clt_polynomial_lr(clt_optimizer *opt, int64_t total_iters, double power,
                             clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_POLYNOMIAL, .period = total_iters, .factor = power};
    return scheduler(opt, &v, out, "clt_polynomial_lr");
}

clt_status clt_cosine_warm_restarts(clt_optimizer *opt, int64_t t_0, int64_t t_mult,
                                    double eta_min, clt_lr_scheduler **out)
{
    clt__schedule v = {.kind = CLT__SCHED_WARM_RESTARTS, .period = t_0, .factor = eta_min,
                       .t_mult = t_mult, .t_i = t_0};
    return scheduler(opt, &v, out, "clt_cosine_warm_restarts");
}

clt_status clt_swa_lr(clt_optimizer *opt, const double *swa_lrs, size_t n,
                      int64_t anneal_epochs, const char *anneal_strategy,
                      clt_lr_scheduler **out)
{
    static const char fn[] = "clt_swa_lr";
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(opt, fn);
    CLT__REQUIRE_ARG(swa_lrs, fn);
    if (n != 1 && n != opt->n_groups)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: swa_lr must have the same length as optimizer.param_groups: "
                          "swa_lr has %zu, optimizer.param_groups has %zu",
                          fn, n, opt->n_groups);
    clt__schedule v = {.kind = CLT__SCHED_SWA, .period = anneal_epochs, .swa_lrs = swa_lrs,
                       .n_swa = n};
    if (anneal_strategy != NULL && strcmp(anneal_strategy, "cos") != 0) {
        char q[CLT__QUOTE_SIZE];
        if (strcmp(anneal_strategy, "linear") != 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: anneal_strategy must by one of 'cos' or 'linear', instead "
                              "got %s",
                              fn, CLT__QUOTE(q, anneal_strategy));
        v.swa_linear = 1;
    }
    return scheduler(opt, &v, out, fn);
}

clt_status clt_lr_scheduler_step_to(clt_lr_scheduler *s, double epoch)
{
    static const char fn[] = "clt_lr_scheduler_step_to";
    CLT__REQUIRE_ARG(s, fn);
    clt_status st = check_attached(s, fn);
    if (st != CLT_OK)
        return st;
    if (s->kind != CLT__SCHED_WARM_RESTARTS || s->owner)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: only a CosineAnnealingWarmRestarts of its own steps to an epoch "
                          "(this is a %s%s): call clt_lr_scheduler_step",
                          fn, sched_name[s->kind], s->owner ? " a container took" : "");
    if (!(epoch >= 0.0) || !(epoch < 9.2e18))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Expected non-negative epoch, but got %g",
                          fn, epoch);
    /* torch's step(epoch), in its order */
    double t_cur = epoch;
    int64_t t_i = s->period, t0 = s->period, m = s->t_mult;
    if (epoch >= (double)t0 && m == 1) {
        t_cur = fmod(epoch, (double)t0);
        t_i = s->t_i;
    } else if (epoch >= (double)t0) {
        double x = log(epoch / (double)t0 * (double)(m - 1) + 1) / log((double)m);
        int64_t n = (int64_t)x, p = 1;
        for (int64_t i = 0; i < n; i++) {
            if (p > INT64_MAX / m / t0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: epoch %g makes T_i past int64 (T_0 %lld, T_mult %lld)",
                                  fn, epoch, (long long)t0, (long long)m);
            p *= m;
        }
        t_cur = epoch - (double)(t0 * (p - 1)) / (double)(m - 1);
        t_i = t0 * p;
    }
    /* every group (torch zips base_lrs: a group added later is left) */
    size_t ng = s->opt->n_groups;
    double *lr = clt__calloc(ng, sizeof *lr);
    if (lr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t g = 0; g < ng && st == CLT_OK; g++) {
        lr[g] = g < s->groups ? warm_lr(s, g, t_cur, t_i) : s->opt->groups[g].lr;
        st = check_lr(lr[g], fn);
    }
    if (st != CLT_OK) {
        free(lr);
        return st;
    }
    for (size_t g = 0; g < ng; g++)
        s->opt->groups[g].lr = lr[g];
    s->t_cur = t_cur;
    s->t_i = t_i;
    s->epoch = (int64_t)floor(epoch);
    free(s->last_lrs);
    s->last_lrs = lr;
    s->n_last = ng;
    return clt__ok();
}

/* What a container's step may change, to put back when one of its
 * schedules fails: each schedule (a copy: a step changes no pointer but
 * _last_lr's, which it frees and replaces: those are copied too), the
 * rates and the momenta of every group. */
typedef struct {
    clt_lr_scheduler *subs;
    double *lr, *mom;
} saved_steps;

static void saved_steps_free(saved_steps *k, size_t n)
{
    for (size_t i = 0; k->subs && i < n; i++)
        free(k->subs[i].last_lrs);
    free(k->subs);
    free(k->lr);
}

static bool save_steps(const clt_lr_scheduler *s, saved_steps *k)
{
    size_t ng = s->opt->n_groups;
    k->subs = clt__calloc(s->n_subs, sizeof *k->subs);
    k->lr = clt__calloc(2 * ng, sizeof *k->lr);
    bool ok = k->subs && k->lr;
    for (size_t i = 0; ok && i < s->n_subs; i++) {
        const clt_lr_scheduler *t = s->subs[i];
        k->subs[i] = *t;
        k->subs[i].last_lrs = clt__calloc(t->n_last ? t->n_last : 1, sizeof(double));
        ok = k->subs[i].last_lrs != NULL;
        if (ok)
            memcpy(k->subs[i].last_lrs, t->last_lrs, t->n_last * sizeof(double));
    }
    if (!ok) {
        saved_steps_free(k, s->n_subs);
        return false;
    }
    k->mom = k->lr + ng;
    for (size_t g = 0; g < ng; g++) {
        double *m = momentum_of(s->opt, g);
        k->lr[g] = s->opt->groups[g].lr;
        k->mom[g] = m ? *m : 0.0;
    }
    return true;
}

/* Puts back what save_steps saved (its copies of _last_lr taken). */
static void restore_steps(clt_lr_scheduler *s, saved_steps *k)
{
    for (size_t i = 0; i < s->n_subs; i++) {
        free(s->subs[i]->last_lrs);
        *s->subs[i] = k->subs[i];
        k->subs[i].last_lrs = NULL;
    }
    for (size_t g = 0; g < s->opt->n_groups; g++) {
        double *m = momentum_of(s->opt, g);
        s->opt->groups[g].lr = k->lr[g];
        if (m)
            *m = k->mom[g];
    }
}

/* Sets s->last_lrs to its optimizer's rates now; false when out of host
 * memory (s unchanged). */
static bool take_rates(clt_lr_scheduler *s)
{
    size_t ng = s->opt->n_groups;
    double *lr = clt__calloc(ng, sizeof *lr);
    if (lr == NULL)
        return false;
    for (size_t g = 0; g < ng; g++)
        lr[g] = s->opt->groups[g].lr;
    free(s->last_lrs);
    s->last_lrs = lr;
    s->n_last = ng;
    return true;
}

/* SequentialLR's step (the schedule of the epoch, from epoch 0 at its
 * milestone) or ChainedScheduler's (each in turn, all or none). */
static clt_status container_step(clt_lr_scheduler *s, const char *fn)
{
    if (s->epoch == INT64_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the epoch count is at its limit", fn);
    clt_status st = CLT_OK;
    saved_steps k;
    if (!save_steps(s, &k))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (s->kind == CLT__SCHED_SEQUENTIAL) {
        int64_t e = s->epoch + 1;
        size_t idx = 0;
        while (idx < s->n_milestones && s->milestones[idx] <= e)
            idx++; /* bisect_right */
        st = schedule_step(s->subs[idx], idx > 0 && s->milestones[idx - 1] == e, fn);
    } else {
        for (size_t i = 0; i < s->n_subs && st == CLT_OK; i++)
            st = schedule_step(s->subs[i], false, fn);
    }
    if (st == CLT_OK && !take_rates(s))
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st != CLT_OK)
        restore_steps(s, &k);
    else
        s->epoch++;
    saved_steps_free(&k, s->n_subs);
    return st;
}

/* Checks the schedules a container is to take: n >= 1 of them, on opt (or
 * on the first one's optimizer), none taken already, none twice, none
 * ReduceLROnPlateau or a container itself. */
static clt_status check_subs(clt_optimizer *opt, clt_lr_scheduler *const *subs, size_t n,
                             const char *what, const char *fn)
{
    CLT__REQUIRE_ARG(subs, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s takes at least one schedule", fn,
                          what);
    for (size_t i = 0; i < n; i++) {
        if (subs[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: schedulers[%zu] is NULL", fn, i);
        const clt_lr_scheduler *t = subs[i];
        if (t->opt == NULL)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the optimizer schedulers[%zu] drove was freed", fn, i);
        if (t->opt != (opt ? opt : subs[0]->opt))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: %s expects all schedulers to belong to the same optimizer, "
                              "but got schedulers at index %zu to be different",
                              fn, what, i);
        if (t->owner)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: schedulers[%zu] belongs to a %s already", fn, i,
                              sched_name[t->owner->kind]);
        if (t->kind == CLT__SCHED_PLATEAU || t->kind == CLT__SCHED_SEQUENTIAL ||
            t->kind == CLT__SCHED_CHAINED || t->kind == CLT__SCHED_SWA)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: schedulers[%zu] is a %s, which %s does not step", fn, i,
                              sched_name[t->kind], what);
        for (size_t j = 0; j < i; j++)
            if (subs[j] == t)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: schedulers[%zu] is schedulers[%zu] again", fn, i, j);
    }
    return CLT_OK;
}

/* A container of kind k over the n schedules (not yet taken: the caller
 * takes them once nothing can fail), with SequentialLR's milestones. */
static clt_status container(clt_optimizer *opt, clt__sched_kind k, clt_lr_scheduler *const *subs,
                            size_t n, const int64_t *milestones, clt_lr_scheduler **out,
                            const char *fn)
{
    clt_lr_scheduler *s = clt__calloc(1, sizeof *s);
    clt_lr_scheduler **v = s ? clt__calloc(n, sizeof *v) : NULL;
    int64_t *m = v && n > 1 && milestones ? clt__calloc(n - 1, sizeof *m) : NULL;
    if (s) {
        s->opt = opt;
        s->kind = k;
        s->subs = v;
        s->n_subs = n;
        s->milestones = m;
        s->n_milestones = m ? n - 1 : 0;
    }
    if (s == NULL || v == NULL || (m == NULL && n > 1 && milestones) || !take_rates(s) ||
        !attach_schedule(s)) {
        free(v);
        if (s)
            schedule_release(s);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    memcpy(v, subs, n * sizeof *v);
    if (m)
        memcpy(m, milestones, (n - 1) * sizeof *m);
    *out = s;
    return CLT_OK;
}

clt_status clt_sequential_lr(clt_optimizer *opt, clt_lr_scheduler *const *schedulers, size_t n,
                             const int64_t *milestones, clt_lr_scheduler **out)
{
    static const char fn[] = "clt_sequential_lr";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(opt, fn);
    clt_status st = check_subs(opt, schedulers, n, "SequentialLR", fn);
    if (st != CLT_OK)
        return st;
    if (n > 1)
        CLT__REQUIRE_ARG(milestones, fn);
    for (size_t i = 0; i + 1 < n; i++)
        if (milestones[i] < 1 || (i > 0 && milestones[i] < milestones[i - 1]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: milestones[%zu] is %lld: the %zu milestones are epochs >= 1 "
                              "in increasing order (one fewer than the schedulers)",
                              fn, i, (long long)milestones[i], n - 1);
    for (size_t g = 0; g < opt->n_groups; g++)
        if (!opt->groups[g].set.group.has_initial_lr)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: parameter group %zu of the optimizer has no initial_lr "
                              "(torch 1.13: KeyError: 'initial_lr')",
                              fn, g);
    clt_lr_scheduler *s;
    st = container(opt, CLT__SCHED_SEQUENTIAL, schedulers, n, milestones, &s, fn);
    if (st != CLT_OK)
        return st;
    saved_steps k;
    if (!save_steps(s, &k)) {
        clt_lr_scheduler_free(s);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    /* torch's constructor: the rate back to initial_lr, each schedule's
     * step undone, and the first one's initial step */
    for (size_t g = 0; g < opt->n_groups; g++)
        opt->groups[g].lr = opt->groups[g].set.group.initial_lr;
    for (size_t i = 0; i < n; i++) {
        s->subs[i]->epoch--;
        s->subs[i]->owner = s;
    }
    st = schedule_step(s->subs[0], false, fn);
    if (st == CLT_OK && !take_rates(s))
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (st != CLT_OK) {
        restore_steps(s, &k);
        saved_steps_free(&k, n);
        s->n_subs = 0; /* the caller keeps them */
        clt_lr_scheduler_free(s);
    } else {
        saved_steps_free(&k, n);
        *out = s;
    }
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_chained_scheduler(clt_lr_scheduler *const *schedulers, size_t n,
                                 clt_lr_scheduler **out)
{
    static const char fn[] = "clt_chained_scheduler";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_subs(NULL, schedulers, n, "ChainedScheduler", fn);
    if (st == CLT_OK)
        st = container(schedulers[0]->opt, CLT__SCHED_CHAINED, schedulers, n, NULL, out, fn);
    for (size_t i = 0; st == CLT_OK && i < n; i++)
        schedulers[i]->owner = *out;
    return st == CLT_OK ? clt__ok() : st;
}

size_t clt__lr_scheduler_subs(const clt_lr_scheduler *s, clt_lr_scheduler *const **subs)
{
    *subs = s->subs;
    return s->n_subs;
}

bool clt__lr_scheduler_later(const clt_lr_scheduler *s)
{
    return s->owner && s->owner->kind == CLT__SCHED_SEQUENTIAL && s->owner->subs[0] != s;
}

clt_status clt__lr_scheduler_set_container(clt_lr_scheduler *s, int64_t epoch,
                                           const int64_t *milestones, size_t n,
                                           const double *last_lrs, size_t n_last,
                                           const char *fn)
{
    bool seq = s->kind == CLT__SCHED_SEQUENTIAL;
    if (seq && n + 1 != s->n_subs)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %zu milestones, and the SequentialLR has %zu schedules (one more "
                          "than its milestones)",
                          fn, n, s->n_subs);
    for (size_t i = 0; seq && i < n; i++)
        if (milestones[i] < 1 || (i > 0 && milestones[i] < milestones[i - 1]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: _milestones[%zu] is %lld: epochs >= 1 in increasing order",
                              fn, i, (long long)milestones[i]);
    if (seq && epoch < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: last_epoch %lld is negative", fn,
                          (long long)epoch);
    if (n_last == 0 || n_last > clt__lr_scheduler_opt_groups(s))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: _last_lr holds %zu rates, and the optimizer has %zu parameter "
                          "groups",
                          fn, n_last, clt__lr_scheduler_opt_groups(s));
    double *last = clt__calloc(n_last, sizeof *last);
    if (last == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(last, last_lrs, n_last * sizeof *last);
    if (seq && n > 0)
        memcpy(s->milestones, milestones, n * sizeof *milestones);
    s->epoch = seq ? epoch : s->subs[0]->epoch;
    free(s->last_lrs);
    s->last_lrs = last;
    s->n_last = n_last;
    return CLT_OK;
}
