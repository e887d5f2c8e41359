/* optim.h: what the io layer needs of an optimizer to save and load its
 * state (clt_optimizer_save, clt_optimizer_load in src/io). */
#ifndef CLT_OPTIM_H
#define CLT_OPTIM_H

#include "internal.h"
#include "cltensor/nn.h"
#include "cltensor/optim.h"

/* The state tensors (borrowed), named as PyTorch's optimizer state_dict
 * names them: "state.<i>.momentum_buffer" (SGD with momentum, once the
 * buffer started: torch's is None before, and it is left out),
 * "state.<i>.exp_avg", "state.<i>.exp_avg_sq" and, with amsgrad,
 * "state.<i>.max_exp_avg_sq" (Adam, AdamW), "state.<i>.square_avg",
 * "state.<i>.momentum_buffer" and "state.<i>.grad_avg" (RMSprop, the last
 * two with momentum and centered), "state.<i>.sum" (Adagrad),
 * "state.<i>.exp_avg" and "state.<i>.exp_inf" (Adamax), "state.<i>.exp_avg",
 * "state.<i>.exp_avg_sq" (NAdam, RAdam), "state.<i>.square_avg" and
 * "state.<i>.acc_delta" (Adadelta), "state.<i>.prev" and
 * "state.<i>.step_size" (Rprop), "state.<i>.ax" (ASGD), and
 * "state.<i>.mu_product" (NAdam), "state.<i>.eta" and "state.<i>.mu" (ASGD:
 * 0-d float32 tensors, given the host's values here, so that o's tensors
 * change, which o's steps never read), i the parameter's position.
 * *out holds *n entries then `extra` zeroed ones, names included in the
 * block; released with clt_free.  Messages name fn. */
clt_status clt__optimizer_state(const clt_optimizer *o, size_t extra, clt_named_tensor **out,
                                size_t *n, const char *fn);

/* Marks SGD's momentum buffer of parameter i (where o has one) as started
 * (its next use takes momentum buf + (1 - dampening) g) or not (its next
 * use sets it to the gradient, torch's buf = clone(g) where the buffer is
 * None), for loading a file that holds it or leaves it out.  Other kinds:
 * nothing. */
void clt__optimizer_start(clt_optimizer *o, size_t i, bool started);

/* The number of parameters, parameter i (borrowed), and the updates each
 * has had (PyTorch's state[p]['step']; o->n entries, borrowed). */
size_t clt__optimizer_size(const clt_optimizer *o);
clt_tensor *clt__optimizer_param(const clt_optimizer *o, size_t i);
const int64_t *clt__optimizer_updates(const clt_optimizer *o);
/* Non-zero while a step the driver stopped part-way waits to be finished
 * by the next clt_optimizer_step. */
bool clt__optimizer_stopped(const clt_optimizer *o);

/* Sets the counts and the learning rates (one per group) a checkpoint
 * holds; cannot fail (the caller has checked them). */
void clt__optimizer_restore(clt_optimizer *o, const int64_t *updates, int64_t steps,
                            const double *lrs);
/* The number of parameters of group g (clt_optimizer_num_groups groups,
 * over consecutive parameters: group 0's first, as torch numbers them in
 * its state_dict). */
size_t clt__optimizer_group_size(const clt_optimizer *o, size_t g);
/* After a file was loaded into o's state tensors: takes what lives on the
 * host from them (NAdam's mu_product), waiting for them (caller: the user's
 * call site, for CLTENSOR_SYNC_DEBUG).  A failure (a
 * read the driver refused) names fn and leaves o's steps as they were. */
clt_status clt__optimizer_loaded(clt_optimizer *o, const char *fn, const void *caller);

/* What torch's schedules add to an optimizer's param_groups[0], kept in
 * the optimizer as torch keeps them and saved in its file: initial_lr
 * (the rate when the first schedule was made, group.setdefault; OneCycleLR
 * sets its own, with max_lr and min_lr), and OneCycleLR's max_momentum and
 * base_momentum when it cycles momentum, SWALR's swa_lr.  has_* 0: the
 * group has none. */
typedef struct clt__opt_group {
    int has_initial_lr, has_one_cycle, has_momentum, has_swa_lr;
    double initial_lr, max_lr, min_lr, max_momentum, base_momentum, swa_lr;
} clt__opt_group;

/* The settings of every kind; an optimizer reads those of its own, and
 * the group's keys that schedules add. */
typedef struct clt__opt_settings {
    clt_sgd_opts sgd;
    clt_adam_opts adam;
    clt_rmsprop_opts rmsprop;
    clt_adagrad_opts adagrad;
    clt__opt_group group;
    clt_adamax_opts adamax;
    clt_nadam_opts nadam;
    clt_radam_opts radam;
    clt_adadelta_opts adadelta;
    clt_rprop_opts rprop;
    clt_asgd_opts asgd;
    clt_lbfgs_opts lbfgs; /* line_search_fn NULL or the library's own string */
    clt_sparse_adam_opts sparse_adam;
} clt__opt_settings;

/* The tensor that holds the values of p's gradient, borrowed: its dense
 * gradient, or the values [nnz, *rest] of its sparse one (Embedding's
 * sparse=True), which torch's in-place unscale_ of grad._values() changes
 * and whose norm clip_grad_norm_ counts; NULL when p has no gradient. */
clt_tensor *clt__grad_values(const clt_tensor *p);

/* The kind as PyTorch names its class: "SGD", "Adam", "AdamW", "RMSprop",
 * "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD",
 * "LBFGS" or "SparseAdam". */
const char *clt__optimizer_kind(const clt_optimizer *o);
/* The settings of group g of o into the matching member of *c, and the
 * group's keys into c->group, the others untouched; lr is the rate now (a
 * schedule's), as torch's param_groups[g]. */
void clt__optimizer_settings(const clt_optimizer *o, size_t g, clt__opt_settings *c);
/* A new optimizer of o's kind over o's parameters in o's groups, group g
 * with the settings of its kind in c[g] (one per group), checked as the
 * constructors check them, o's defaults, its state made
 * (zeros, Adagrad's sums initial_accumulator_value) as they make it;
 * nothing of o changes.  Messages name fn.  Release with
 * clt_optimizer_free. */
clt_status clt__optimizer_like(const clt_optimizer *o, const clt__opt_settings *c,
                               const char *fn, clt_optimizer **out);
/* Exchanges everything two optimizers hold (made by clt__optimizer_like
 * from one another: the same parameters) but the schedules made on each. */
void clt__optimizer_swap(clt_optimizer *a, clt_optimizer *b);

/* The kinds of schedule, in the order of sched_keys (src/io). */
typedef enum clt__sched_kind {
    CLT__SCHED_STEP,
    CLT__SCHED_COSINE,
    CLT__SCHED_EXPONENTIAL,
    CLT__SCHED_MULTISTEP,
    CLT__SCHED_LINEAR,
    CLT__SCHED_ONE_CYCLE,
    CLT__SCHED_PLATEAU,
    /* warm-up schedules and schedules of schedules */
    CLT__SCHED_CONSTANT,       /* period total_iters, factor factor */
    CLT__SCHED_POLYNOMIAL,     /* period total_iters, factor power */
    CLT__SCHED_WARM_RESTARTS,  /* period T_0, factor eta_min, t_mult, t_i, t_cur */
    CLT__SCHED_LAMBDA,         /* a callback: base_lr * fn(epoch) */
    CLT__SCHED_MULTIPLICATIVE, /* a callback: lr * fn(epoch) */
    CLT__SCHED_SEQUENTIAL,     /* schedules taken, milestones */
    CLT__SCHED_CHAINED,        /* schedules taken */
    CLT__SCHED_CYCLIC,         /* base_lr, factor max_lr, cyclic's settings */
    CLT__SCHED_SWA,            /* period anneal_epochs, swa_lrs, swa_linear */
} clt__sched_kind;

/* OneCycleLR's phases: the step each ends at (torch's
 * _schedule_phases[i]['end_step']; 2 phases, or 3 with three_phase), the
 * annealing (cosine or linear), and whether it cycles momentum (between
 * the optimizer's group's max_momentum and base_momentum).  Its rates: base_lr is initial_lr,
 * factor max_lr, factor2 min_lr, period total_steps. */
typedef struct clt__one_cycle {
    double end_step[3];
    int phases, linear;
    int momentum; /* cycle_momentum: the optimizer's momentum or beta1 too */
} clt__one_cycle;

/* CyclicLR's settings (torch's names): total_size and step_ratio as its
 * constructor computes them, the mode (triangular, triangular2, exp_range,
 * or a callback: the schedule's lambda), scale_mode 'iterations' (else
 * 'cycle'), gamma, and whether it cycles the optimizer's momentum between
 * base_momentum and max_momentum. */
typedef enum { CLT__CYCLIC_TRIANGULAR, CLT__CYCLIC_TRIANGULAR2, CLT__CYCLIC_EXP_RANGE,
               CLT__CYCLIC_CUSTOM } clt__cyclic_mode;
typedef struct clt__cyclic {
    clt__cyclic_mode mode;
    int iterations, momentum;
    double total_size, step_ratio, gamma, base_momentum, max_momentum;
} clt__cyclic;

/* ReduceLROnPlateau's settings and state (torch's names): factor is
 * factor, factor2 min_lrs[0], period patience; `best` the best metric so
 * far (+-inf before any), max: mode 'max', abs: threshold_mode 'abs'. */
typedef struct clt__plateau {
    int max, abs;
    int64_t cooldown, cooldown_counter, num_bad_epochs;
    double threshold, eps, best;
} clt__plateau;

/* A schedule's state, as torch's scheduler.state_dict() holds it: the
 * kind, last_epoch, step_size, T_max or total_iters (period), base_lrs
 * (`groups` of them: one per parameter group the optimizer had when the
 * schedule was made; base_lr is a constructor's one rate, OneCycleLR's
 * initial_lr and CyclicLR's base_lr, which it gives every group), gamma,
 * eta_min or start_factor (factor), end_factor (factor2), the milestones
 * (borrowed from the schedule by _get, as are the lists; n_milestones of
 * them), and _last_lr (last_lrs, n_last of them, from `groups` to the
 * optimizer's groups: the rates the schedule set at last_epoch,
 * ReduceLROnPlateau's the optimizer's rates; _set takes them for a
 * schedule in torch's chainable form, NULL: the closed form's);
 * OneCycleLR's phases, whether it cycles momentum, and
 * ReduceLROnPlateau's settings and counters beside them. */
typedef struct clt__schedule {
    clt__sched_kind kind;
    int64_t epoch, period;
    double base_lr, factor, factor2;
    const double *base_lrs, *last_lrs;
    size_t groups, n_last;
    const int64_t *milestones;
    size_t n_milestones;
    clt__one_cycle cycle;
    clt__plateau plateau;
    int use_beta1; /* _get: the optimizer's momentum is Adam's betas[0] */
    /* CosineAnnealingWarmRestarts' T_mult, T_i and T_cur */
    int64_t t_mult, t_i;
    double t_cur;
    /* LambdaLR's and MultiplicativeLR's callback, CyclicLR's scale_fn
     * (constructors only) */
    clt_lr_lambda lambda;
    void *user;
    clt__cyclic cyclic; /* CyclicLR's */
    /* SWALR's swa_lr (n_swa of them: 1, for every group, or one per
     * group) and anneal_strategy 'linear' (else 'cos') */
    const double *swa_lrs;
    size_t n_swa;
    int swa_linear;
} clt__schedule;
void clt__lr_scheduler_get(const clt_lr_scheduler *s, clt__schedule *out);
/* Sets v's epoch, period, base_lr, factors and milestones (copied; v->kind
 * is the caller's to have checked), checked as the constructors check
 * them; refused, s unchanged, with a message naming fn. */
clt_status clt__lr_scheduler_set(clt_lr_scheduler *s, const clt__schedule *v, const char *fn);
/* clt__lr_scheduler_set's checks alone: what it would refuse (only out
 * of host memory is left to fail after them). */
clt_status clt__lr_scheduler_check(const clt_lr_scheduler *s, const clt__schedule *v,
                                   const char *fn);
/* A SequentialLR's or ChainedScheduler's schedules (borrowed), their
 * number; 0 for any other kind. */
size_t clt__lr_scheduler_subs(const clt_lr_scheduler *s, clt_lr_scheduler *const **subs);
/* Whether s is a SequentialLR's schedule but its first (torch steps it
 * with step(0) at its milestone). */
bool clt__lr_scheduler_later(const clt_lr_scheduler *s);
/* Sets a container's epoch (SequentialLR's last_epoch; ChainedScheduler
 * has none in torch's file: its first schedule's), milestones (n of them,
 * SequentialLR's: one fewer than its schedules, NULL for ChainedScheduler)
 * and last rates (n_last of them, one per group of its optimizer), after
 * its schedules were set; refused, s unchanged, with a message naming
 * fn. */
clt_status clt__lr_scheduler_set_container(clt_lr_scheduler *s, int64_t epoch,
                                           const int64_t *milestones, size_t n,
                                           const double *last_lrs, size_t n_last,
                                           const char *fn);
/* The number of parameter groups of the optimizer s drives (0 when it was
 * freed). */
size_t clt__lr_scheduler_opt_groups(const clt_lr_scheduler *s);

/* ---- L-BFGS (src/optim/lbfgs.c) ------------------------------------------ */

/* torch's LBFGS state (on its parameter 0): the counters, the last
 * direction and step, the history, and the tensors that carry it into and
 * out of files. */
typedef struct clt__lbfgs clt__lbfgs;

/* clt_lbfgs's checks of c (max_eval filled in already), with its
 * messages naming fn. */
clt_status clt__lbfgs_check(const clt_lbfgs_opts *c, const char *fn);
/* An empty state for the n parameters (checked by the caller one by one):
 * refuses two dtypes, two devices or no element at all.  Release with
 * clt__lbfgs_free (NULL does nothing). */
clt_status clt__lbfgs_new(clt_tensor *const *params, size_t n, const char *fn,
                          clt__lbfgs **out);
void clt__lbfgs_free(clt__lbfgs *s);
/* The state as a file holds it: *n names (static strings) and tensors
 * (borrowed from s, made now from its state), torch's keys "state.0.*". */
clt_status clt__lbfgs_entries(clt__lbfgs *s, const char *const **names,
                              clt_tensor *const **tensors, size_t *n, const char *fn);
/* Makes the tensors clt__lbfgs_entries lists for a file that holds the
 * counters only (full false) or everything with m pairs of history, for
 * loading into. */
clt_status clt__lbfgs_expect(clt__lbfgs *s, bool counts, bool full, int64_t m, const char *fn);
/* After a file was loaded into those tensors: they become s's state
 * (history_size the most pairs it may hold); reads the scalars back,
 * waiting (caller: the user's call site). */
clt_status clt__lbfgs_loaded(clt__lbfgs *s, int64_t history_size, const char *fn,
                             const void *caller);
/* o's LBFGS state, NULL for any other kind. */
clt__lbfgs *clt__optimizer_lbfgs(const clt_optimizer *o);
/* Counts a step o took through a closure (clt_optimizer_steps, and every
 * parameter's update count). */
void clt__optimizer_counted(clt_optimizer *o);

/* ---- the optimizers' kernels, for the GradScaler (src/optim/amp.c) -------- */

/* The build options of cl/optim.cl for dtype dt (static storage; NULL with
 * a message when out of host memory), and the launch geometry of a kernel
 * over tensor p's elements (chunk elements per work-item). */
const char *clt__optim_options(clt_dtype dt);
void clt__optim_geometry(const clt_tensor *p, cl_ulong *chunk, size_t *gws, const size_t **lws);

/* After a file was loaded into a's n_averaged: reads it back (a wait) as
 * a's count; a negative one is refused, naming fn, the count left. */
clt_status clt__averaged_model_loaded(clt_averaged_model *a, const char *fn);

/* A GradScaler's state, as torch's state_dict holds it (src/io). */
typedef struct clt__scaler_state {
    int enabled;
    double scale, growth_factor, backoff_factor;
    int64_t growth_interval, growth_tracker;
} clt__scaler_state;
void clt__grad_scaler_get(const clt_grad_scaler *s, clt__scaler_state *out);
/* Sets v (not v->enabled) into s, checked as the constructor checks it;
 * refused, s unchanged, with a message naming fn. */
clt_status clt__grad_scaler_set(clt_grad_scaler *s, const clt__scaler_state *v, const char *fn);

#endif
