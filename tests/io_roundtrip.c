/* io_roundtrip.c: the C side of tests/python_interop.sh, through the
 * installed API only:
 *
 *   io_roundtrip dtypes                    the dtypes the device holds
 *   io_roundtrip npy IN.npy OUT.npy        clt_load_npy, then clt_save_npy
 *   io_roundtrip safetensors IN OUT        clt_load_safetensors, then save
 *   io_roundtrip optimizer KIND OUT SETTINGS...
 *       an optimizer (SGD: lr momentum dampening weight_decay nesterov;
 *       Adam, AdamW: lr beta1 beta2 eps weight_decay amsgrad; RMSprop: lr
 *       alpha eps weight_decay momentum centered; Adagrad: lr lr_decay
 *       weight_decay initial_accumulator_value eps; Adamax, RAdam: lr
 *       beta1 beta2 eps weight_decay; NAdam: lr beta1 beta2 eps
 *       weight_decay momentum_decay; Adadelta: lr rho eps weight_decay;
 *       Rprop: lr etaminus etaplus step_size_min step_size_max; ASGD: lr
 *       lambd alpha t0 weight_decay) over one parameter,
 *       stepped once, saved with clt_optimizer_save
 *   io_roundtrip resume KIND STEPS PARAM OPTIM OUT SETTINGS...
 *       the same optimizer over a float32 parameter [5] that starts at
 *       P0 (PARAM "-") or at the tensor "p" of the safetensors file PARAM,
 *       with the state of OPTIM loaded (clt_optimizer_load; "-": fresh),
 *       STEPS steps of the loss sum(p^3 / 3 + p^2) (gradient p^2 + 2p);
 *       saves the parameter to OUT.param.safetensors and the optimizer to
 *       OUT.optim.safetensors
 *   io_roundtrip cycle KIND STEPS PARAM OPTIM SCHED OUT SETTINGS...
 *       resume's run under OneCycleLR(max_lr=0.2, total_steps=12,
 *       pct_start=0.25, div_factor=10, final_div_factor=100,
 *       base_momentum=0.8, max_momentum=0.9) cycling momentum, made after
 *       the optimizer, with the state of SCHED loaded ("-": fresh), stepped
 *       after each optimizer step; prints the rate and the momentum after
 *       each ("%.17g %.17g") and saves the schedule to OUT.sched.safetensors
 *   io_roundtrip schedule KIND OUT LR PERIOD FACTOR EPOCHS [EXTRA]
 *       StepLR (step_size, gamma), CosineAnnealingLR (T_max, eta_min),
 *       ExponentialLR (-, gamma), MultiStepLR (-, gamma; EXTRA the
 *       milestones, "2,5,5") or LinearLR (total_iters, start_factor; EXTRA
 *       end_factor), OneCycleLR (total_steps, max_lr; EXTRA "pct_start,
 *       anneal_strategy,div_factor,final_div_factor,three_phase") or
 *       ReduceLROnPlateau (patience, factor; EXTRA "mode,threshold,
 *       threshold_mode,cooldown,min_lr,eps", each step on the metric
 *       1 / (1 + epoch % 4), epoch the steps before it) over SGD(lr),
 *       stepped EPOCHS times, saved with clt_lr_scheduler_save; also
 *       ConstantLR (total_iters, factor), PolynomialLR (total_iters,
 *       power), CosineAnnealingWarmRestarts (T_0, eta_min; EXTRA "T_mult"
 *       or "T_mult,EPOCH": clt_lr_scheduler_step_to(EPOCH) before the
 *       steps) and SequentialLR (milestone M, eta_min: LinearLR(0.1, 1.0,
 *       M) then CosineAnnealingLR(6, eta_min) at milestone M); also
 *       CyclicLR (step_size_up, max_lr; EXTRA "base_lr,step_size_down,
 *       mode,gamma", no momentum cycled)
 *   io_roundtrip schedresume KIND FILE EPOCHS [LR [PERIOD FACTOR [EXTRA]]]
 *       a schedule of KIND (the settings given, or any) over SGD(lr=1)
 *       loaded from FILE, the optimizer's rate then set to LR (what the
 *       optimizer's file would restore), then stepped EPOCHS times: prints
 *       the rate after each, "%.17g"
 *   io_roundtrip chain save PREFIX EPOCHS | chain load PREFIX EPOCHS
 *       SGD(lr=0.1) over one parameter (no gradient: the steps move
 *       nothing), then LinearLR(0.5, 1.0, 4) and StepLR(2, 0.5) made one
 *       after the other on it; "save" steps the optimizer and both
 *       schedules EPOCHS times and saves them to PREFIX.optim.safetensors,
 *       PREFIX.s1.safetensors and PREFIX.s2.safetensors; "load" makes them
 *       over SGD with the defaults, loads those files and steps EPOCHS
 *       times; both print the rate after each epoch, "%.17g"
 *   io_roundtrip torch IN OUT              clt_load_torch, then clt_save_torch
 *   io_roundtrip groups KIND STEPS PARAMS OPTIM SCHED OUT
 *       KIND SGD or AdamW over two parameter groups, a float32 [5] "a"
 *       and [3] "b" (starting where resume starts, or at the tensors of
 *       the safetensors file PARAMS), with the settings of groups_run (or
 *       the defaults when the state of OPTIM is loaded, which sets them),
 *       under StepLR(step_size=2, gamma=0.5) made after the groups (the
 *       state of SCHED loaded, "-": fresh), STEPS steps of resume's loss on
 *       each, the schedule stepped after each; saves the parameters to
 *       OUT.param.safetensors, the optimizer to OUT.optim.safetensors and
 *       the schedule to OUT.sched.safetensors
 *   io_roundtrip module IN X Y OUT
 *       Sequential(Linear(4, 8), BatchNorm1d(8), ReLU, Linear(8, 3)) with
 *       its state loaded from the torch.save file IN
 *       (clt_module_load_torch, strict; IN "-": initialised with seed 7),
 *       one forward in training mode on the .npy X (the running statistics
 *       move), then its output in eval mode on X saved to Y and the model
 *       to OUT (clt_module_save_torch)
 *   io_roundtrip general KIND IN X Y STEPS OUT
 *       Linear(4, 3) and the optimizer KIND (torch 1.13's defaults) over
 *       it, both loaded from the general checkpoint IN (torch.save of
 *       {'epoch', 'model_state_dict', 'optimizer_state_dict', ...}: the
 *       optimizer's settings come from it), STEPS steps of mse_loss(model(X),
 *       Y) (the .npy files X, Y; zero_grad(set_to_none=False)), then the
 *       checkpoint saved to OUT with epoch + STEPS and the last loss;
 *       prints IN's epoch and loss (a float, or a one-element tensor)
 *   io_roundtrip gsched DIR EPOCHS
 *       for each schedule of gsched_kinds (make_schedule's, and LambdaLR
 *       0.9^epoch, MultiplicativeLR 0.9, ChainedScheduler of LinearLR(0.5,
 *       1.0, period) and ExponentialLR(factor), SWALR(swa_lr=0.05,
 *       anneal_epochs=8)) over SGD(lr=0.1) and one
 *       parameter: where DIR/KIND.t.pt exists (torch.save of
 *       {'optimizer_state_dict', 'scheduler_state_dict'}), both loaded from
 *       it, EPOCHS steps (printing "KIND torch" and the rates), saved to
 *       DIR/KIND.ct.pt; a fresh one stepped EPOCHS times ("KIND fresh ..."),
 *       saved to DIR/KIND.c.pt; that one loaded, EPOCHS steps ("KIND
 *       ours ..."), saved to DIR/KIND.cc.pt
 *   io_roundtrip npz IN OUT COMPRESSED     clt_load_npz, then clt_save_npz
 *   io_roundtrip npyhost IN OUT            clt_load_npy_host, then
 *                                          clt_save_npy_host (no device)
 *   io_roundtrip loader X Y XOUT YOUT      X and Y read by clt_load_npy_host
 *                                          through a shuffling data loader
 *                                          (batches of 3), the batches
 *                                          saved in the order they came
 *
 *   io_roundtrip sparseadam OUT [IN]
 *       Embedding.from_pretrained(0.1 i - 0.5 as [5, 3], sparse=True) and
 *       SparseAdam(lr=0.01), both loaded from the general checkpoint IN
 *       ({'model', 'optimizer'}) when given, two steps of sum(emb([1, 2,
 *       1])), saved to OUT in one
 *   io_roundtrip lbfgs DATA START OPTIM STEPS OUT LR MAX_ITER HISTORY LINE_SEARCH
 *       logistic regression (binary_cross_entropy_with_logits(x w + b, y),
 *       mean) on the float64 tensors "x" [S, D] and "y" [S] of the
 *       safetensors file DATA, from "w" [D] and "b" [1] of START, stepped
 *       STEPS times by LBFGS(lr=LR, max_iter=MAX_ITER,
 *       history_size=HISTORY, line_search_fn=LINE_SEARCH: "strong_wolfe"
 *       or "None") through clt_optimizer_step_closure, with the state of
 *       OPTIM loaded first ("-": fresh; a name ending in ".pt": a general
 *       checkpoint's "optimizer", clt_checkpoint_dict_load_optimizer);
 *       prints each step's loss ("%.17g") and saves w and b to
 *       OUT.param.safetensors, the optimizer to OUT.optim.safetensors and
 *       in a general checkpoint {"optimizer": ...} to OUT.ckpt.pt
 *
 * Exits 0, 1 with the library's message on stderr, or 77 without OpenCL. */
#include <cltensor.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, clt_status st)
{
    fprintf(stderr, "io_roundtrip: %s: %s: %s\n", what, clt_status_name(st), clt_last_error());
    return 1;
}

/* The optimizer KIND with the settings v (see the top) over p. */
static clt_status make_optimizer(const char *kind, const double *v, clt_tensor **p,
                                 clt_optimizer **opt)
{
    if (strcmp(kind, "SGD") == 0)
        return clt_sgd(p, 1, &(clt_sgd_opts){v[0], v[1], v[2], v[3], v[4] != 0}, opt);
    if (strcmp(kind, "RMSprop") == 0)
        return clt_rmsprop(p, 1, &(clt_rmsprop_opts){v[0], v[1], v[2], v[3], v[4], v[5] != 0},
                           opt);
    if (strcmp(kind, "Adagrad") == 0)
        return clt_adagrad(p, 1, &(clt_adagrad_opts){v[0], v[1], v[2], v[3], v[4]}, opt);
    if (strcmp(kind, "Adamax") == 0)
        return clt_adamax(p, 1, &(clt_adamax_opts){v[0], v[1], v[2], v[3], v[4]}, opt);
    if (strcmp(kind, "NAdam") == 0)
        return clt_nadam(p, 1, &(clt_nadam_opts){v[0], v[1], v[2], v[3], v[4], v[5]}, opt);
    if (strcmp(kind, "RAdam") == 0)
        return clt_radam(p, 1, &(clt_radam_opts){v[0], v[1], v[2], v[3], v[4]}, opt);
    if (strcmp(kind, "Adadelta") == 0)
        return clt_adadelta(p, 1, &(clt_adadelta_opts){v[0], v[1], v[2], v[3]}, opt);
    if (strcmp(kind, "Rprop") == 0)
        return clt_rprop(p, 1, &(clt_rprop_opts){v[0], v[1], v[2], v[3], v[4]}, opt);
    if (strcmp(kind, "ASGD") == 0)
        return clt_asgd(p, 1, &(clt_asgd_opts){v[0], v[1], v[2], v[3], v[4]}, opt);
    return (strcmp(kind, "Adam") == 0 ? clt_adam : clt_adamw)(
        p, 1, &(clt_adam_opts){v[0], v[1], v[2], v[3], v[4], v[5] != 0}, opt);
}

/* LambdaLR's 0.9^epoch and MultiplicativeLR's 0.9. */
static double pow_lambda(void *user, int64_t epoch)
{
    (void)user;
    return pow(0.9, (double)epoch);
}

static double const_lambda(void *user, int64_t epoch)
{
    (void)user;
    (void)epoch;
    return 0.9;
}

/* The schedule KIND over opt: v holds period and factor; extra (or NULL)
 * MultiStepLR's milestones "2,5,5" or LinearLR's end_factor. */
static clt_status make_schedule(const char *kind, clt_optimizer *opt, const double *v,
                                const char *extra, clt_lr_scheduler **s)
{
    int64_t period = (int64_t)v[0];
    if (strcmp(kind, "OneCycleLR") == 0) {
        double pct = 0.3, div = 25, fin = 1e4;
        int three = 0;
        char strat[16] = "cos";
        if (extra)
            sscanf(extra, "%lf,%15[a-z],%lf,%lf,%d", &pct, strat, &div, &fin, &three);
        return clt_one_cycle_lr(opt, v[1], period, pct, strat, div, fin, three, s);
    }
    if (strcmp(kind, "ReduceLROnPlateau") == 0) {
        double threshold = 1e-4, min_lr = 0, eps = 1e-8;
        long long cooldown = 0;
        char mode[8] = "min", tmode[8] = "rel";
        if (extra)
            sscanf(extra, "%7[a-z],%lf,%7[a-z],%lld,%lf,%lf", mode, &threshold, tmode, &cooldown,
                   &min_lr, &eps);
        return clt_reduce_lr_on_plateau(opt, mode, v[1], period, threshold, tmode, cooldown,
                                        min_lr, eps, s);
    }
    if (strcmp(kind, "CyclicLR") == 0) {
        double base = 0.01, gamma = 1.0;
        long long down = -1;
        char mode[16] = "triangular";
        if (extra)
            sscanf(extra, "%lf,%lld,%15[a-z_0-9],%lf", &base, &down, mode, &gamma);
        return clt_cyclic_lr(opt, base, v[1], period, down, mode, gamma, NULL, NULL, NULL, 0,
                             0.8, 0.9, s);
    }
    if (strcmp(kind, "SWALR") == 0) /* extra: anneal_strategy */
        return clt_swa_lr(opt, &v[1], 1, period, extra ? extra : "cos", s);
    if (strcmp(kind, "StepLR") == 0)
        return clt_step_lr(opt, period, v[1], s);
    if (strcmp(kind, "CosineAnnealingLR") == 0)
        return clt_cosine_lr(opt, period, v[1], s);
    if (strcmp(kind, "ExponentialLR") == 0)
        return clt_exponential_lr(opt, v[1], s);
    if (strcmp(kind, "LinearLR") == 0)
        return clt_linear_lr(opt, v[1], extra ? strtod(extra, NULL) : 1.0, period, s);
    if (strcmp(kind, "ConstantLR") == 0)
        return clt_constant_lr(opt, v[1], period, s);
    if (strcmp(kind, "PolynomialLR") == 0)
        return clt_polynomial_lr(opt, period, v[1], s);
    if (strcmp(kind, "CosineAnnealingWarmRestarts") == 0) {
        double at = -1;
        long long mult = 1;
        if (extra)
            sscanf(extra, "%lld,%lf", &mult, &at);
        clt_status st = clt_cosine_warm_restarts(opt, period, mult, v[1], s);
        if (st == CLT_OK && at >= 0)
            st = clt_lr_scheduler_step_to(*s, at);
        return st;
    }
    if (strcmp(kind, "LambdaLR") == 0)
        return clt_lambda_lr(opt, pow_lambda, NULL, s);
    if (strcmp(kind, "MultiplicativeLR") == 0)
        return clt_multiplicative_lr(opt, const_lambda, NULL, s);
    if (strcmp(kind, "ChainedScheduler") == 0) {
        clt_lr_scheduler *sub[2] = {NULL, NULL};
        clt_status st = clt_linear_lr(opt, 0.5, 1.0, period, &sub[0]);
        if (st == CLT_OK)
            st = clt_exponential_lr(opt, v[1], &sub[1]);
        if (st == CLT_OK)
            st = clt_chained_scheduler(sub, 2, s);
        if (st != CLT_OK) {
            clt_lr_scheduler_free(sub[0]);
            clt_lr_scheduler_free(sub[1]);
        }
        return st;
    }
    if (strcmp(kind, "SequentialLR") == 0) {
        clt_lr_scheduler *sub[2] = {NULL, NULL};
        clt_status st = clt_linear_lr(opt, 0.1, 1.0, period, &sub[0]);
        if (st == CLT_OK)
            st = clt_cosine_lr(opt, 6, v[1], &sub[1]);
        if (st == CLT_OK)
            st = clt_sequential_lr(opt, sub, 2, &period, s);
        if (st != CLT_OK) {
            clt_lr_scheduler_free(sub[0]);
            clt_lr_scheduler_free(sub[1]);
        }
        return st;
    }
    int64_t m[64];
    size_t n = 0;
    for (const char *at = extra; at && *at && n < 64;) {
        char *end;
        m[n] = strtoll(at, &end, 10);
        if (end == at)
            break;
        n++;
        at = *end == ',' ? end + 1 : end;
    }
    return clt_multistep_lr(opt, m, n, v[1], s);
}

/* One step of s (ReduceLROnPlateau's on the metric of its epoch). */
static clt_status step_schedule(const char *kind, clt_lr_scheduler *s)
{
    if (strcmp(kind, "ReduceLROnPlateau") != 0)
        return clt_lr_scheduler_step(s);
    return clt_lr_scheduler_step_metric(s, 1.0 / (double)(1 + clt_lr_scheduler_epoch(s) % 4));
}

/* The optimizer or schedule argv describes, saved (see the top). */
static int checkpoint(clt_device *dev, int argc, char **argv)
{
    const char *kind = argv[2], *out = argv[3];
    double v[6] = {0};
    for (int k = 4; k < argc && k < 10; k++)
        v[k - 4] = strtod(argv[k], NULL);
    clt_tensor *p = NULL, *loss = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    clt_status st = clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p);
    if (st == CLT_OK)
        st = clt_set_requires_grad(p, 1);
    bool optimizer = strcmp(argv[1], "optimizer") == 0;
    if (st == CLT_OK && optimizer)
        st = make_optimizer(kind, v, &p, &opt);
    else if (st == CLT_OK)
        st = clt_sgd(&p, 1, &(clt_sgd_opts){v[0], 0, 0, 0, 0}, &opt);
    if (st == CLT_OK && !optimizer)
        st = make_schedule(kind, opt, v + 1, argc > 8 ? argv[8] : NULL, &s);
    for (int e = 0; st == CLT_OK && s && e < (int)v[3]; e++)
        st = step_schedule(kind, s);
    if (st == CLT_OK && !s)
        st = clt_sum(p, &loss);
    if (st == CLT_OK && !s)
        st = clt_backward(loss, NULL, 0);
    if (st == CLT_OK && !s)
        st = clt_optimizer_step(opt);
    if (st == CLT_OK)
        st = s ? clt_lr_scheduler_save(s, out) : clt_optimizer_save(opt, out);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(loss);
    clt_tensor_free(p);
    return st == CLT_OK ? 0 : fail(argv[1], st);
}

/* The gradient of resume's loss sum(p^3 / 3 + p^2) into p's. */
static clt_status cubic_backward(clt_tensor *p)
{
    clt_tensor *p2 = NULL, *p3 = NULL, *a = NULL, *l = NULL, *loss = NULL;
    clt_status st = clt_mul(p, p, &p2);
    if (st == CLT_OK)
        st = clt_mul(p2, p, &p3);
    if (st == CLT_OK)
        st = clt_mul_scalar(p3, 1.0 / 3, &a);
    if (st == CLT_OK)
        st = clt_add(a, p2, &l);
    if (st == CLT_OK)
        st = clt_sum(l, &loss);
    if (st == CLT_OK)
        st = clt_backward(loss, NULL, 0);
    clt_tensor_free(p2);
    clt_tensor_free(p3);
    clt_tensor_free(a);
    clt_tensor_free(l);
    clt_tensor_free(loss);
    return st;
}

/* io_roundtrip resume and cycle (see the top). */
static int resume(clt_device *dev, int argc, char **argv)
{
    bool cycle = strcmp(argv[1], "cycle") == 0;
    const char *kind = argv[2], *param = argv[4], *optim = argv[5], *sched = argv[6];
    const char *out = argv[cycle ? 7 : 6];
    int steps = atoi(argv[3]), at = cycle ? 8 : 7;
    double v[6] = {0};
    for (int k = at; k < argc && k < at + 6; k++)
        v[k - at] = strtod(argv[k], NULL);
    clt_lr_scheduler *s = NULL;
    static const float p0[5] = {1.0f, -0.5f, 0.25f, 2.0f, -1.5f};
    clt_named_tensor *in = NULL;
    size_t nin = 0;
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    clt_status st;
    if (strcmp(param, "-") == 0) {
        st = clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){5}, p0, &p);
    } else {
        st = clt_load_safetensors(param, dev, &in, &nin);
        if (st == CLT_OK && (nin != 1 || strcmp(in[0].name, "p") != 0)) {
            fprintf(stderr, "io_roundtrip: %s holds no single tensor \"p\"\n", param);
            clt_named_tensors_free(in, nin);
            return 1;
        }
        if (st == CLT_OK)
            st = clt_clone(in[0].tensor, &p);
        clt_named_tensors_free(in, nin);
    }
    if (st == CLT_OK)
        st = clt_set_requires_grad(p, 1);
    if (st == CLT_OK)
        st = make_optimizer(kind, v, &p, &opt);
    if (st == CLT_OK && cycle)
        st = clt_one_cycle_lr_momentum(opt, 0.2, 12, 0.25, NULL, 10, 100, 0, 1, 0.8, 0.9, &s);
    if (st == CLT_OK && strcmp(optim, "-") != 0)
        st = clt_optimizer_load(opt, optim);
    if (st == CLT_OK && cycle && strcmp(sched, "-") != 0)
        st = clt_lr_scheduler_load(s, sched);
    for (int t = 0; st == CLT_OK && t < steps; t++) {
        st = clt_optimizer_zero_grad(opt, 1);
        if (st == CLT_OK)
            st = cubic_backward(p);
        if (st == CLT_OK)
            st = clt_optimizer_step(opt);
        if (st == CLT_OK && cycle)
            st = clt_lr_scheduler_step(s);
        if (st == CLT_OK && cycle)
            printf("%.17g %.17g\n", clt_optimizer_lr(opt), clt_optimizer_momentum(opt));
    }
    char path[4096];
    snprintf(path, sizeof path, "%s.param.safetensors", out);
    clt_tensor *saved = NULL;
    if (st == CLT_OK)
        st = clt_detach(p, &saved);
    if (st == CLT_OK)
        st = clt_save_safetensors(path, &(clt_named_tensor){"p", saved}, 1);
    snprintf(path, sizeof path, "%s.optim.safetensors", out);
    if (st == CLT_OK)
        st = clt_optimizer_save(opt, path);
    snprintf(path, sizeof path, "%s.sched.safetensors", out);
    if (st == CLT_OK && cycle)
        st = clt_lr_scheduler_save(s, path);
    clt_tensor_free(saved);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    return st == CLT_OK ? 0 : fail(argv[1], st);
}

/* io_roundtrip groups (see the top): SGD with momentum in one group and
 * not the other; AdamW with weight decay but for the second group (a
 * bias's, as fine-tuning leaves it). */
static int groups_run(clt_device *dev, char **argv)
{
    const char *kind = argv[2], *params = argv[4], *optim = argv[5], *sched = argv[6];
    const char *out = argv[7];
    int steps = atoi(argv[3]);
    bool sgd = strcmp(kind, "SGD") == 0, fresh = strcmp(optim, "-") == 0;
    static const clt_sgd_opts s0 = {0.05, 0.9, 0.0, 0.01, 0}, s1 = {0.1, 0.5, 0.25, 0.0, 0};
    static const clt_adam_opts a0 = {0.01, 0.9, 0.999, 1e-8, 0.01, 0},
                               a1 = {0.05, 0.8, 0.99, 1e-6, 0.0, 0};
    static const float a_init[5] = {1.0f, -0.5f, 0.25f, 2.0f, -1.5f}, b_init[3] = {0.5f, -1.0f,
                                                                                     0.75f};
    clt_tensor *p[2] = {NULL, NULL};
    clt_named_tensor *in = NULL;
    size_t nin = 0;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    clt_status st = CLT_OK;
    if (!sgd && strcmp(kind, "AdamW") != 0) {
        fprintf(stderr, "io_roundtrip: groups takes SGD or AdamW, not %s\n", kind);
        return 2;
    }
    if (strcmp(params, "-") == 0) {
        st = clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){5}, a_init, &p[0]);
        if (st == CLT_OK)
            st = clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){3}, b_init, &p[1]);
    } else {
        st = clt_load_safetensors(params, dev, &in, &nin);
        for (size_t k = 0; st == CLT_OK && k < nin; k++)
            if (strcmp(in[k].name, "a") == 0 || strcmp(in[k].name, "b") == 0)
                st = clt_clone(in[k].tensor, &p[in[k].name[0] == 'b']);
        clt_named_tensors_free(in, nin);
        if (st == CLT_OK && (p[0] == NULL || p[1] == NULL)) {
            fprintf(stderr, "io_roundtrip: %s lacks \"a\" or \"b\"\n", params);
            clt_tensor_free(p[0]);
            clt_tensor_free(p[1]);
            return 1;
        }
    }
    for (int k = 0; k < 2 && st == CLT_OK; k++)
        st = clt_set_requires_grad(p[k], 1);
    if (st == CLT_OK)
        st = sgd ? clt_sgd(&p[0], 1, fresh ? &s0 : NULL, &opt)
                 : clt_adamw(&p[0], 1, fresh ? &a0 : NULL, &opt);
    if (st == CLT_OK)
        st = clt_optimizer_add_param_group(opt, &p[1], 1,
                                           !fresh ? NULL : sgd ? (const void *)&s1 : &a1);
    if (st == CLT_OK)
        st = clt_step_lr(opt, 2, 0.5, &s);
    if (st == CLT_OK && !fresh)
        st = clt_optimizer_load(opt, optim);
    if (st == CLT_OK && strcmp(sched, "-") != 0)
        st = clt_lr_scheduler_load(s, sched);
    for (int t = 0; st == CLT_OK && t < steps; t++) {
        st = clt_optimizer_zero_grad(opt, 1);
        for (int k = 0; k < 2 && st == CLT_OK; k++)
            st = cubic_backward(p[k]);
        if (st == CLT_OK)
            st = clt_optimizer_step(opt);
        if (st == CLT_OK)
            st = clt_lr_scheduler_step(s);
    }
    char path[4096];
    clt_named_tensor saved[2] = {{"a", NULL}, {"b", NULL}};
    for (int k = 0; k < 2 && st == CLT_OK; k++)
        st = clt_detach(p[k], &saved[k].tensor);
    snprintf(path, sizeof path, "%s.param.safetensors", out);
    if (st == CLT_OK)
        st = clt_save_safetensors(path, saved, 2);
    snprintf(path, sizeof path, "%s.optim.safetensors", out);
    if (st == CLT_OK)
        st = clt_optimizer_save(opt, path);
    snprintf(path, sizeof path, "%s.sched.safetensors", out);
    if (st == CLT_OK)
        st = clt_lr_scheduler_save(s, path);
    for (int k = 0; k < 2; k++) {
        clt_tensor_free(saved[k].tensor);
        clt_tensor_free(p[k]);
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    return st == CLT_OK ? 0 : fail(argv[1], st);
}

/* io_roundtrip schedresume (see the top). */
static int schedresume(clt_device *dev, int argc, char **argv)
{
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    double v[2] = {1, 0.5};
    if (argc >= 8) {
        v[0] = strtod(argv[6], NULL);
        v[1] = strtod(argv[7], NULL);
    }
    clt_status st = clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &p);
    if (st == CLT_OK)
        st = clt_set_requires_grad(p, 1);
    if (st == CLT_OK)
        st = clt_sgd(&p, 1, &(clt_sgd_opts){1.0, 0, 0, 0, 0}, &opt);
    if (st == CLT_OK)
        st = make_schedule(argv[2], opt, v, argc > 8 ? argv[8] : NULL, &s);
    if (st == CLT_OK)
        st = clt_lr_scheduler_load(s, argv[3]);
    if (st == CLT_OK && argc > 5)
        st = clt_optimizer_set_lr(opt, strtod(argv[5], NULL));
    for (int e = 0; st == CLT_OK && e < atoi(argv[4]); e++) {
        st = step_schedule(argv[2], s);
        if (st == CLT_OK)
            printf("%.17g\n", clt_optimizer_lr(opt));
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    return st == CLT_OK ? 0 : fail("schedresume", st);
}

/* io_roundtrip chain (see the top). */
static int chain(clt_device *dev, char **argv)
{
    bool save = strcmp(argv[2], "save") == 0;
    const char *prefix = argv[3];
    static const char *const files[3] = {"optim", "s1", "s2"};
    char path[3][512];
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s[2] = {NULL, NULL};
    for (int k = 0; k < 3; k++)
        snprintf(path[k], sizeof path[k], "%s.%s.safetensors", prefix, files[k]);
    clt_status st = clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &p);
    if (st == CLT_OK)
        st = clt_set_requires_grad(p, 1);
    if (st == CLT_OK)
        st = clt_sgd(&p, 1, save ? &(clt_sgd_opts){0.1, 0, 0, 0, 0} : NULL, &opt);
    if (st == CLT_OK)
        st = clt_linear_lr(opt, 0.5, 1.0, 4, &s[0]);
    if (st == CLT_OK)
        st = clt_step_lr(opt, 2, 0.5, &s[1]);
    if (st == CLT_OK && !save)
        st = clt_optimizer_load(opt, path[0]);
    for (int k = 0; st == CLT_OK && !save && k < 2; k++)
        st = clt_lr_scheduler_load(s[k], path[k + 1]);
    for (int e = 0; st == CLT_OK && e < atoi(argv[4]); e++) {
        st = clt_optimizer_step(opt);
        for (int k = 0; st == CLT_OK && k < 2; k++)
            st = clt_lr_scheduler_step(s[k]);
        if (st == CLT_OK)
            printf("%.17g\n", clt_optimizer_lr(opt));
    }
    if (st == CLT_OK && save)
        st = clt_optimizer_save(opt, path[0]);
    for (int k = 0; st == CLT_OK && save && k < 2; k++)
        st = clt_lr_scheduler_save(s[k], path[k + 1]);
    clt_lr_scheduler_free(s[0]);
    clt_lr_scheduler_free(s[1]);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    return st == CLT_OK ? 0 : fail("chain", st);
}

/* One epoch of a shuffling loader over the arrays of the files x_in and
 * y_in; the batches, read back in the order they come, are saved to x_out
 * and y_out. */
static int loader(clt_device *dev, char **paths)
{
    clt_array_spec *x = NULL, *y = NULL;
    clt_dataloader *dl = NULL;
    unsigned char *xb = NULL, *yb = NULL;
    int rc = 1;
    clt_status st = clt_load_npy_host(paths[0], &x);
    if (st == CLT_OK)
        st = clt_load_npy_host(paths[1], &y);
    clt_loader_opts opts = {3, 1, 42, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    if (st == CLT_OK)
        st = clt_dataloader_arrays(dev, x, y, &opts, &dl);
    if (st != CLT_OK) {
        rc = fail("loading", st);
        goto done;
    }
    /* the batches together hold as many bytes as the arrays */
    size_t xn = clt_dtype_size(x->dtype), yn = clt_dtype_size(y->dtype), xat = 0, yat = 0;
    for (int d = 0; d < x->ndim; d++)
        xn *= (size_t)x->shape[d];
    for (int d = 0; d < y->ndim; d++)
        yn *= (size_t)y->shape[d];
    xb = malloc(xn ? xn : 1);
    yb = malloc(yn ? yn : 1);
    if (xb == NULL || yb == NULL) {
        fprintf(stderr, "io_roundtrip: out of memory\n");
        goto done;
    }
    for (;;) {
        clt_tensor *bx = NULL, *by = NULL;
        int got = 0;
        st = clt_dataloader_next(dl, &bx, &by, &got);
        if (st != CLT_OK) {
            rc = fail("clt_dataloader_next", st);
            goto done;
        }
        if (!got)
            break;
        st = clt_tensor_read(bx, xb + xat, xn - xat);
        if (st == CLT_OK)
            st = clt_tensor_read(by, yb + yat, yn - yat);
        xat += clt_tensor_nbytes(bx);
        yat += clt_tensor_nbytes(by);
        clt_tensor_free(bx);
        clt_tensor_free(by);
        if (st != CLT_OK) {
            rc = fail("clt_tensor_read", st);
            goto done;
        }
    }
    clt_array_spec xo = {xb, x->dtype, x->ndim, x->shape}, yo = {yb, y->dtype, y->ndim, y->shape};
    st = clt_save_npy_host(paths[2], &xo);
    if (st == CLT_OK)
        st = clt_save_npy_host(paths[3], &yo);
    rc = st == CLT_OK ? 0 : fail("clt_save_npy_host", st);
done:
    clt_dataloader_free(dl);
    clt_free(x);
    clt_free(y);
    free(xb);
    free(yb);
    return rc;
}

/* io_roundtrip module IN X Y OUT (see the top). */
static int module(clt_device *dev, char **argv)
{
    clt_generator *gen = NULL;
    clt_module *l0 = NULL, *bn = NULL, *r = NULL, *l3 = NULL, *m = NULL;
    clt_tensor *x = NULL, *y = NULL;
    const char *what = "building the model";
    clt_status st = clt_generator_new(7, &gen);
    if (st == CLT_OK)
        st = clt_linear(dev, 4, 8, 1, gen, &l0);
    if (st == CLT_OK)
        st = clt_batch_norm1d_layer(dev, 8, 1e-5, 0.1, 1, 1, &bn);
    if (st == CLT_OK)
        st = clt_relu_layer(&r);
    if (st == CLT_OK)
        st = clt_linear(dev, 8, 3, 1, gen, &l3);
    if (st == CLT_OK)
        st = clt_sequential((clt_module *[]){l0, bn, r, l3}, 4, &m);
    if (st != CLT_OK) {
        clt_module_free(l0);
        clt_module_free(bn);
        clt_module_free(r);
        clt_module_free(l3);
    }
    if (st == CLT_OK && strcmp(argv[2], "-") != 0 &&
        (st = clt_module_load_torch(m, argv[2], 1)) != CLT_OK)
        what = "clt_module_load_torch";
    if (st == CLT_OK && (st = clt_load_npy(argv[3], dev, &x)) != CLT_OK)
        what = "clt_load_npy";
    clt_set_grad_enabled(0);
    if (st == CLT_OK && (st = clt_module_forward(m, x, &y)) == CLT_OK) {
        clt_tensor_free(y);
        y = NULL;
        clt_module_train(m, 0);
        st = clt_module_forward(m, x, &y);
    }
    if (st != CLT_OK && strcmp(what, "building the model") == 0)
        what = "clt_module_forward";
    if (st == CLT_OK && (st = clt_save_npy(argv[4], y)) != CLT_OK)
        what = "clt_save_npy";
    if (st == CLT_OK && (st = clt_module_save_torch(m, argv[5])) != CLT_OK)
        what = "clt_module_save_torch";
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_module_free(m);
    clt_generator_free(gen);
    return st == CLT_OK ? 0 : fail(what, st);
}

/* The optimizer KIND with torch 1.13's defaults over the n params. */
static clt_status default_optimizer(const char *kind, clt_tensor **p, size_t n,
                                    clt_optimizer **opt)
{
    if (strcmp(kind, "SGD") == 0)
        return clt_sgd(p, n, &(clt_sgd_opts)CLT_SGD_DEFAULTS, opt);
    if (strcmp(kind, "Adam") == 0)
        return clt_adam(p, n, &(clt_adam_opts)CLT_ADAM_DEFAULTS, opt);
    if (strcmp(kind, "AdamW") == 0)
        return clt_adamw(p, n, &(clt_adam_opts)CLT_ADAMW_DEFAULTS, opt);
    if (strcmp(kind, "RMSprop") == 0)
        return clt_rmsprop(p, n, &(clt_rmsprop_opts)CLT_RMSPROP_DEFAULTS, opt);
    if (strcmp(kind, "Adagrad") == 0)
        return clt_adagrad(p, n, &(clt_adagrad_opts)CLT_ADAGRAD_DEFAULTS, opt);
    if (strcmp(kind, "Adamax") == 0)
        return clt_adamax(p, n, &(clt_adamax_opts)CLT_ADAMAX_DEFAULTS, opt);
    if (strcmp(kind, "NAdam") == 0)
        return clt_nadam(p, n, &(clt_nadam_opts)CLT_NADAM_DEFAULTS, opt);
    if (strcmp(kind, "RAdam") == 0)
        return clt_radam(p, n, &(clt_radam_opts)CLT_RADAM_DEFAULTS, opt);
    if (strcmp(kind, "Adadelta") == 0)
        return clt_adadelta(p, n, &(clt_adadelta_opts)CLT_ADADELTA_DEFAULTS, opt);
    if (strcmp(kind, "Rprop") == 0)
        return clt_rprop(p, n, &(clt_rprop_opts)CLT_RPROP_DEFAULTS, opt);
    return clt_asgd(p, n, &(clt_asgd_opts)CLT_ASGD_DEFAULTS, opt);
}

/* io_roundtrip general (see the top). */
static int general(clt_device *dev, char **argv)
{
    const char *kind = argv[2], *what = "building the model";
    clt_generator *gen = NULL;
    clt_module *m = NULL;
    clt_optimizer *opt = NULL;
    clt_tensor **params = NULL, *x = NULL, *y = NULL;
    clt_checkpoint_dict *ck = NULL;
    size_t np = 0;
    int64_t epoch = 0, steps = atoll(argv[6]);
    double loss = 0;
    clt_status st = clt_generator_new(3, &gen);
    if (st == CLT_OK)
        st = clt_linear(dev, 4, 3, 1, gen, &m);
    if (st == CLT_OK)
        st = clt_module_parameters(m, &params, &np);
    if (st == CLT_OK)
        st = default_optimizer(kind, params, np, &opt);
    if (st == CLT_OK && (st = clt_checkpoint_dict_load_torch(argv[3], &ck)) != CLT_OK)
        what = "clt_checkpoint_dict_load_torch";
    if (st == CLT_OK &&
        (st = clt_checkpoint_dict_load_module(ck, "model_state_dict", m, 1)) != CLT_OK)
        what = "clt_checkpoint_dict_load_module";
    if (st == CLT_OK &&
        (st = clt_checkpoint_dict_load_optimizer(ck, "optimizer_state_dict", opt)) != CLT_OK)
        what = "clt_checkpoint_dict_load_optimizer";
    if (st == CLT_OK && (st = clt_checkpoint_dict_get_int(ck, "epoch", &epoch)) != CLT_OK)
        what = "clt_checkpoint_dict_get_int";
    if (st == CLT_OK && (st = clt_checkpoint_dict_get_double(ck, "loss", &loss)) != CLT_OK)
        what = "clt_checkpoint_dict_get_double";
    if (st == CLT_OK)
        printf("%lld %.17g\n", (long long)epoch, loss);
    clt_checkpoint_dict_free(ck);
    ck = NULL;
    if (st == CLT_OK && ((st = clt_load_npy(argv[4], dev, &x)) != CLT_OK ||
                         (st = clt_load_npy(argv[5], dev, &y)) != CLT_OK))
        what = "clt_load_npy";
    for (int64_t k = 0; st == CLT_OK && k < steps; k++) {
        clt_tensor *out = NULL, *l = NULL;
        what = "a training step";
        st = clt_optimizer_zero_grad(opt, 0);
        if (st == CLT_OK)
            st = clt_module_forward(m, x, &out);
        if (st == CLT_OK)
            st = clt_mse_loss(out, y, CLT_REDUCTION_MEAN, &l);
        if (st == CLT_OK)
            st = clt_backward(l, NULL, 0);
        if (st == CLT_OK)
            st = clt_optimizer_step(opt);
        if (st == CLT_OK)
            st = clt_tensor_item(l, &loss);
        clt_tensor_free(out);
        clt_tensor_free(l);
    }
    if (st == CLT_OK) {
        what = "saving the checkpoint";
        st = clt_checkpoint_dict_new(&ck);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_set_int(ck, "epoch", epoch + steps);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_add_module(ck, "model_state_dict", m);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_add_optimizer(ck, "optimizer_state_dict", opt);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_set_double(ck, "loss", loss);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_save_torch(ck, argv[7]);
    }
    clt_checkpoint_dict_free(ck);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_optimizer_free(opt);
    clt_free(params);
    clt_module_free(m);
    clt_generator_free(gen);
    return st == CLT_OK ? 0 : fail(what, st);
}

/* The schedules of io_roundtrip gsched: kind, period, factor, extra. */
static const struct {
    const char *kind;
    double v[2];
    const char *extra;
} gsched_kinds[] = {
    {"StepLR", {3, 0.5}, NULL},
    {"MultiStepLR", {0, 0.5}, "2,5,5"},
    {"ExponentialLR", {0, 0.9}, NULL},
    {"CosineAnnealingLR", {10, 0.001}, NULL},
    {"CosineAnnealingWarmRestarts", {3, 0.001}, "2"},
    {"CyclicLR", {4, 0.1}, "0.01"},
    {"OneCycleLR", {10, 0.1}, NULL},
    {"LinearLR", {4, 0.5}, NULL},
    {"ConstantLR", {4, 0.5}, NULL},
    {"PolynomialLR", {5, 2.0}, NULL},
    {"ReduceLROnPlateau", {1, 0.5}, NULL},
    {"LambdaLR", {0, 0}, NULL},
    {"MultiplicativeLR", {0, 0}, NULL},
    {"SequentialLR", {2, 0.001}, NULL},
    {"ChainedScheduler", {3, 0.9}, NULL},
    {"SWALR", {8, 0.05}, "cos"},
};

/* One run of io_roundtrip gsched: SGD(lr=0.1) over one parameter and the
 * schedule k, both loaded from the general checkpoint IN (NULL: fresh),
 * stepped `epochs` times (printing "KIND TAG lr..."), saved to OUT. */
static clt_status gsched_run(clt_device *dev, size_t k, const char *in, int epochs,
                             const char *tag, const char *out)
{
    clt_tensor *p = NULL;
    clt_optimizer *opt = NULL;
    clt_lr_scheduler *s = NULL;
    clt_checkpoint_dict *ck = NULL;
    const char *kind = gsched_kinds[k].kind;
    clt_status st = clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &p);
    if (st == CLT_OK)
        st = clt_set_requires_grad(p, 1);
    if (st == CLT_OK)
        st = clt_sgd(&p, 1, &(clt_sgd_opts){0.1, 0, 0, 0, 0}, &opt);
    if (st == CLT_OK)
        st = make_schedule(kind, opt, gsched_kinds[k].v, gsched_kinds[k].extra, &s);
    if (st == CLT_OK && in)
        st = clt_checkpoint_dict_load_torch(in, &ck);
    if (st == CLT_OK && in)
        st = clt_checkpoint_dict_load_optimizer(ck, "optimizer_state_dict", opt);
    if (st == CLT_OK && in)
        st = clt_checkpoint_dict_load_scheduler(ck, "scheduler_state_dict", s);
    clt_checkpoint_dict_free(ck);
    ck = NULL;
    if (st == CLT_OK)
        printf("%s %s", kind, tag);
    for (int e = 0; st == CLT_OK && e < epochs; e++) {
        st = step_schedule(kind, s);
        if (st == CLT_OK)
            printf(" %.17g", clt_optimizer_lr(opt));
    }
    if (st == CLT_OK)
        printf("\n");
    if (st == CLT_OK)
        st = clt_checkpoint_dict_new(&ck);
    if (st == CLT_OK)
        st = clt_checkpoint_dict_add_optimizer(ck, "optimizer_state_dict", opt);
    if (st == CLT_OK)
        st = clt_checkpoint_dict_add_scheduler(ck, "scheduler_state_dict", s);
    if (st == CLT_OK)
        st = clt_checkpoint_dict_save_torch(ck, out);
    clt_checkpoint_dict_free(ck);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    return st;
}

/* io_roundtrip gsched (see the top). */
static int gsched(clt_device *dev, char **argv)
{
    const char *dir = argv[2];
    int epochs = atoi(argv[3]);
    char in[4096], out[4096];
    for (size_t k = 0; k < sizeof gsched_kinds / sizeof gsched_kinds[0]; k++) {
        const char *kind = gsched_kinds[k].kind;
        clt_status st;
        FILE *f;
        snprintf(in, sizeof in, "%s/%s.t.pt", dir, kind);
        snprintf(out, sizeof out, "%s/%s.ct.pt", dir, kind);
        if ((f = fopen(in, "rb")) != NULL) {
            fclose(f);
            if ((st = gsched_run(dev, k, in, epochs, "torch", out)) != CLT_OK)
                return fail(kind, st);
        }
        snprintf(out, sizeof out, "%s/%s.c.pt", dir, kind);
        if ((st = gsched_run(dev, k, NULL, epochs, "fresh", out)) != CLT_OK)
            return fail(kind, st);
        snprintf(in, sizeof in, "%s/%s.c.pt", dir, kind);
        snprintf(out, sizeof out, "%s/%s.cc.pt", dir, kind);
        if ((st = gsched_run(dev, k, in, epochs, "ours", out)) != CLT_OK)
            return fail(kind, st);
    }
    return 0;
}

/* The logistic regression of io_roundtrip lbfgs: p[0] w, p[1] b. */
typedef struct logistic {
    clt_tensor *x, *y, *p[2];
} logistic;

static clt_status logistic_closure(void *user, double *loss)
{
    logistic *m = user;
    clt_tensor *z = NULL, *zb = NULL, *l = NULL;
    clt_status st = clt_zero_grad(m->p[0], 1);
    if (st == CLT_OK)
        st = clt_zero_grad(m->p[1], 1);
    if (st == CLT_OK)
        st = clt_matmul(m->x, m->p[0], &z);
    if (st == CLT_OK)
        st = clt_add(z, m->p[1], &zb);
    if (st == CLT_OK)
        st = clt_binary_cross_entropy_with_logits(zb, m->y, NULL, CLT_REDUCTION_MEAN, &l);
    if (st == CLT_OK)
        st = clt_backward(l, NULL, 0);
    if (st == CLT_OK)
        st = clt_tensor_item(l, loss);
    clt_tensor_free(z);
    clt_tensor_free(zb);
    clt_tensor_free(l);
    return st;
}

/* The tensor named name of the file's n entries, or NULL. */
static clt_tensor *entry_named(const clt_named_tensor *e, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(e[k].name, name) == 0)
            return e[k].tensor;
    return NULL;
}

/* io_roundtrip lbfgs (see the top). */
static int lbfgs(clt_device *dev, char **argv)
{
    clt_named_tensor *data = NULL, *start = NULL;
    size_t nd = 0, ns = 0;
    logistic m = {0};
    clt_optimizer *opt = NULL;
    int steps = atoi(argv[5]);
    const char *out = argv[6];
    clt_lbfgs_opts o = CLT_LBFGS_DEFAULTS;
    o.lr = strtod(argv[7], NULL);
    o.max_iter = atoll(argv[8]);
    o.history_size = atoll(argv[9]);
    o.line_search_fn = strcmp(argv[10], "None") == 0 ? NULL : argv[10];
    clt_status st = clt_load_safetensors(argv[2], dev, &data, &nd);
    if (st == CLT_OK)
        st = clt_load_safetensors(argv[3], dev, &start, &ns);
    if (st == CLT_OK) {
        m.x = entry_named(data, nd, "x");
        m.y = entry_named(data, nd, "y");
        clt_tensor *w = entry_named(start, ns, "w"), *b = entry_named(start, ns, "b");
        if (!m.x || !m.y || !w || !b) {
            fprintf(stderr, "io_roundtrip: lbfgs: x, y, w or b missing\n");
            clt_named_tensors_free(data, nd);
            clt_named_tensors_free(start, ns);
            return 1;
        }
        st = clt_clone(w, &m.p[0]);
        if (st == CLT_OK)
            st = clt_clone(b, &m.p[1]);
    }
    for (int k = 0; k < 2 && st == CLT_OK; k++)
        st = clt_set_requires_grad(m.p[k], 1);
    if (st == CLT_OK)
        st = clt_lbfgs(m.p, 2, &o, &opt);
    size_t lo = strlen(argv[4]);
    if (st == CLT_OK && lo > 3 && strcmp(argv[4] + lo - 3, ".pt") == 0) {
        clt_checkpoint_dict *ck = NULL;
        st = clt_checkpoint_dict_load_torch(argv[4], &ck);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_load_optimizer(ck, "optimizer", opt);
        clt_checkpoint_dict_free(ck);
    } else if (st == CLT_OK && strcmp(argv[4], "-") != 0) {
        st = clt_optimizer_load(opt, argv[4]);
    }
    for (int t = 0; st == CLT_OK && t < steps; t++) {
        double loss;
        st = clt_optimizer_step_closure(opt, logistic_closure, &m, &loss);
        if (st == CLT_OK)
            printf("%.17g\n", loss);
    }
    char path[4096];
    clt_tensor *w = NULL, *b = NULL;
    if (st == CLT_OK)
        st = clt_detach(m.p[0], &w);
    if (st == CLT_OK)
        st = clt_detach(m.p[1], &b);
    snprintf(path, sizeof path, "%s.param.safetensors", out);
    if (st == CLT_OK)
        st = clt_save_safetensors(path, (clt_named_tensor[]){{"w", w}, {"b", b}}, 2);
    snprintf(path, sizeof path, "%s.optim.safetensors", out);
    if (st == CLT_OK)
        st = clt_optimizer_save(opt, path);
    snprintf(path, sizeof path, "%s.ckpt.pt", out);
    if (st == CLT_OK) {
        clt_checkpoint_dict *ck = NULL;
        st = clt_checkpoint_dict_new(&ck);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_add_optimizer(ck, "optimizer", opt);
        if (st == CLT_OK)
            st = clt_checkpoint_dict_save_torch(ck, path);
        clt_checkpoint_dict_free(ck);
    }
    clt_tensor_free(w);
    clt_tensor_free(b);
    clt_optimizer_free(opt);
    clt_tensor_free(m.p[0]);
    clt_tensor_free(m.p[1]);
    clt_named_tensors_free(data, nd);
    clt_named_tensors_free(start, ns);
    return st == CLT_OK ? 0 : fail("lbfgs", st);
}

/* io_roundtrip sparseadam (see the top). */
static int sparseadam(clt_device *dev, int argc, char **argv)
{
    float w0[15];
    for (int i = 0; i < 15; i++)
        w0[i] = (float)(0.1 * i - 0.5);
    int64_t ws[2] = {5, 3}, idx[3] = {1, 2, 1}, n = 3;
    clt_tensor *w = NULL;
    clt_module *m = NULL;
    clt_optimizer *opt = NULL;
    clt_checkpoint_dict *ck = NULL;
    clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
    o.sparse = 1;
    clt_status st = clt_tensor_from_host(dev, CLT_FLOAT32, 2, ws, w0, &w);
    if (st == CLT_OK)
        st = clt_embedding_layer_from_pretrained(w, 0, &o, &m);
    clt_tensor *p = st == CLT_OK ? clt_module_param(m, "weight") : NULL;
    if (st == CLT_OK)
        st = clt_sparse_adam(&p, 1, &(clt_sparse_adam_opts){0.01, 0.9, 0.999, 1e-8}, &opt);
    if (st == CLT_OK && argc == 4)
        st = clt_checkpoint_dict_load_torch(argv[3], &ck);
    if (st == CLT_OK && argc == 4)
        st = clt_checkpoint_dict_load_module(ck, "model", m, 1);
    if (st == CLT_OK && argc == 4)
        st = clt_checkpoint_dict_load_optimizer(ck, "optimizer", opt);
    clt_checkpoint_dict_free(ck);
    ck = NULL;
    for (int s = 0; s < 2 && st == CLT_OK; s++) {
        clt_tensor *x = NULL, *y = NULL, *l = NULL;
        st = clt_optimizer_zero_grad(opt, 1);
        if (st == CLT_OK)
            st = clt_tensor_from_host(dev, CLT_INT64, 1, &n, idx, &x);
        if (st == CLT_OK)
            st = clt_module_forward(m, x, &y);
        if (st == CLT_OK)
            st = clt_sum(y, &l);
        if (st == CLT_OK)
            st = clt_backward(l, NULL, 0);
        if (st == CLT_OK)
            st = clt_optimizer_step(opt);
        clt_tensor_free(x);
        clt_tensor_free(y);
        clt_tensor_free(l);
    }
    if (st == CLT_OK)
        st = clt_checkpoint_dict_new(&ck);
    if (st == CLT_OK)
        st = clt_checkpoint_dict_add_module(ck, "model", m);
    if (st == CLT_OK)
        st = clt_checkpoint_dict_add_optimizer(ck, "optimizer", opt);
    if (st == CLT_OK)
        st = clt_checkpoint_dict_save_torch(ck, argv[2]);
    clt_checkpoint_dict_free(ck);
    clt_optimizer_free(opt);
    clt_module_free(m);
    clt_tensor_free(w);
    return st == CLT_OK ? 0 : fail("sparseadam", st);
}

static int run(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "npyhost") == 0) {
        clt_array_spec *a = NULL;
        clt_status st = clt_load_npy_host(argv[2], &a);
        if (st != CLT_OK)
            return fail("clt_load_npy_host", st);
        st = clt_save_npy_host(argv[3], a);
        clt_free(a);
        return st == CLT_OK ? 0 : fail("clt_save_npy_host", st);
    }
    clt_device *dev = NULL;
    clt_status st = clt_device_get("auto", &dev);
    if (st == CLT_ERR_NO_PLATFORM) {
        fprintf(stderr, "io_roundtrip: no OpenCL platform: %s\n", clt_last_error());
        return 77;
    }
    if (st != CLT_OK)
        return fail("clt_device_get", st);
    if (argc == 2 && strcmp(argv[1], "dtypes") == 0) {
        static const clt_dtype all[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                                        CLT_INT64,   CLT_UINT8,   CLT_BOOL,    CLT_INT8,
                                        CLT_INT16};
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
            if (clt_device_supports_dtype(dev, all[k]))
                printf("%s\n", clt_dtype_name(all[k]));
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "npy") == 0) {
        clt_tensor *t = NULL;
        st = clt_load_npy(argv[2], dev, &t);
        if (st != CLT_OK)
            return fail("clt_load_npy", st);
        st = clt_save_npy(argv[3], t);
        clt_tensor_free(t);
        return st == CLT_OK ? 0 : fail("clt_save_npy", st);
    }
    if (argc == 4 && strcmp(argv[1], "safetensors") == 0) {
        clt_named_tensor *ts = NULL;
        size_t n = 0;
        st = clt_load_safetensors(argv[2], dev, &ts, &n);
        if (st != CLT_OK)
            return fail("clt_load_safetensors", st);
        st = clt_save_safetensors(argv[3], ts, n);
        clt_named_tensors_free(ts, n);
        return st == CLT_OK ? 0 : fail("clt_save_safetensors", st);
    }
    if (argc == 4 && strcmp(argv[1], "torch") == 0) {
        clt_named_tensor *ts = NULL;
        size_t n = 0;
        st = clt_load_torch(argv[2], dev, &ts, &n);
        if (st != CLT_OK)
            return fail("clt_load_torch", st);
        st = clt_save_torch(argv[3], ts, n);
        clt_named_tensors_free(ts, n);
        return st == CLT_OK ? 0 : fail("clt_save_torch", st);
    }
    if (argc == 5 && strcmp(argv[1], "npz") == 0) {
        clt_named_tensor *ts = NULL;
        size_t n = 0;
        st = clt_load_npz(argv[2], dev, &ts, &n);
        if (st != CLT_OK)
            return fail("clt_load_npz", st);
        st = clt_save_npz(argv[3], ts, n, atoi(argv[4]));
        clt_named_tensors_free(ts, n);
        return st == CLT_OK ? 0 : fail("clt_save_npz", st);
    }
    if ((argc >= 8 && argc <= 10 && strcmp(argv[1], "optimizer") == 0) ||
        (argc >= 8 && argc <= 9 && strcmp(argv[1], "schedule") == 0))
        return checkpoint(dev, argc, argv);
    if ((argc >= 11 && argc <= 13 && strcmp(argv[1], "resume") == 0) ||
        (argc >= 13 && argc <= 14 && strcmp(argv[1], "cycle") == 0))
        return resume(dev, argc, argv);
    if ((argc == 5 || argc == 6 || argc == 8 || argc == 9) &&
        strcmp(argv[1], "schedresume") == 0)
        return schedresume(dev, argc, argv);
    if (argc == 6 && strcmp(argv[1], "loader") == 0)
        return loader(dev, argv + 2);
    if (argc == 5 && strcmp(argv[1], "chain") == 0)
        return chain(dev, argv);
    if (argc == 6 && strcmp(argv[1], "module") == 0)
        return module(dev, argv);
    if (argc == 11 && strcmp(argv[1], "lbfgs") == 0)
        return lbfgs(dev, argv);
    if (argc == 8 && strcmp(argv[1], "groups") == 0)
        return groups_run(dev, argv);
    if (argc == 8 && strcmp(argv[1], "general") == 0)
        return general(dev, argv);
    if (argc == 4 && strcmp(argv[1], "gsched") == 0)
        return gsched(dev, argv);
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "sparseadam") == 0)
        return sparseadam(dev, argc, argv);
    fprintf(stderr, "usage: io_roundtrip dtypes | npy IN OUT | safetensors IN OUT | "
                    "torch IN OUT | npz IN OUT COMPRESSED | npyhost IN OUT | loader X Y XOUT YOUT | optimizer KIND OUT SETTINGS... | "
                    "resume KIND STEPS PARAM OPTIM OUT SETTINGS... | schedule KIND OUT LR "
                    "PERIOD FACTOR EPOCHS [EXTRA] | schedresume KIND FILE EPOCHS [LR [PERIOD FACTOR "
                    "[EXTRA]]] | chain save|load PREFIX EPOCHS | cycle KIND STEPS PARAM OPTIM SCHED OUT "
                    "SETTINGS... | module IN X Y OUT | lbfgs DATA START OPTIM STEPS OUT LR "
                    "MAX_ITER HISTORY LINE_SEARCH | groups KIND STEPS PARAMS OPTIM SCHED OUT | "
                    "general KIND IN X Y STEPS OUT | gsched DIR EPOCHS\n");
    return 2;
}

int main(int argc, char **argv)
{
    int rc = run(argc, argv);
    clt_shutdown();
    return rc;
}
