/* test_optim.c: SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, NAdam,
 * RAdam, Adadelta, Rprop and ASGD against host implementations of PyTorch's update rules written
 * here, clip_grad_norm, the schedules (against closed forms and torch's values),
 * errors, a training step that allocates nothing after the first, and the
 * state following a model converted to float64. */
#include <float.h>
#include <stdio.h>

#include "helpers.h"
#include "scratch.h"

enum { N = 7, STEPS = 4 };

/* The loss sum(0.5 c p^2) has the gradient c p. */
static const double C[N] = {0.5, -1.2, 2.0, 0.3, -0.7, 1.5, 0.9};
static const double P0[N] = {1.0, -0.5, 0.25, 2.0, -1.5, 0.75, -0.1};

static void loss_backward(clt_device *dev, clt_tensor *p)
{
    clt_tensor *c, *pp, *q, *l;
    int64_t n = N;
    CHECK(clt_scope_begin());
    clt_tensor *c64;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, C, &c64));
    CHECK(clt_to_dtype(c64, clt_tensor_dtype(p), &c));
    CHECK(clt_mul(p, p, &pp));
    CHECK(clt_mul(pp, c, &q));
    CHECK(clt_mul_scalar(q, 0.5, &l));
    clt_tensor *s;
    CHECK(clt_sum(l, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_scope_end();
}

typedef struct ref_opts {
    int kind; /* 0 SGD, 1 Adam, 2 AdamW, 3 RMSprop, 4 Adagrad, 5 Adamax, 6 NAdam, 7 RAdam,
                 8 Adadelta, 9 Rprop, 10 ASGD (8 to 10: multi_case only) */
    double lr, momentum, dampening, wd, beta1, beta2, eps;
    int nesterov, amsgrad;
    double alpha; /* RMSprop */
    int centered;
    double lr_decay, init; /* Adagrad */
    double momentum_decay; /* NAdam */
    int steps;             /* steps to take; 0: STEPS (multi_case: MP_STEPS) */
    double rho;                        /* Adadelta */
    double etaminus, etaplus, lo, hi;  /* Rprop */
    double lambd, t0;                  /* ASGD (and alpha) */
} ref_opts;

/* o's optimizer over the np tensors p. */
static void make_optimizer(const ref_opts *o, clt_tensor **p, size_t np, clt_optimizer **opt)
{
    if (o->kind == 0) {
        clt_sgd_opts s = {o->lr, o->momentum, o->dampening, o->wd, o->nesterov};
        CHECK(clt_sgd(p, np, &s, opt));
    } else if (o->kind == 3) {
        clt_rmsprop_opts r = {o->lr, o->alpha, o->eps, o->wd, o->momentum, o->centered};
        CHECK(clt_rmsprop(p, np, &r, opt));
    } else if (o->kind == 4) {
        clt_adagrad_opts a = {o->lr, o->lr_decay, o->wd, o->init, o->eps};
        CHECK(clt_adagrad(p, np, &a, opt));
    } else if (o->kind == 5) {
        clt_adamax_opts a = {o->lr, o->beta1, o->beta2, o->eps, o->wd};
        CHECK(clt_adamax(p, np, &a, opt));
    } else if (o->kind == 6) {
        clt_nadam_opts a = {o->lr, o->beta1, o->beta2, o->eps, o->wd, o->momentum_decay};
        CHECK(clt_nadam(p, np, &a, opt));
    } else if (o->kind == 7) {
        clt_radam_opts a = {o->lr, o->beta1, o->beta2, o->eps, o->wd};
        CHECK(clt_radam(p, np, &a, opt));
    } else if (o->kind == 8) {
        clt_adadelta_opts a = {o->lr, o->rho, o->eps, o->wd};
        CHECK(clt_adadelta(p, np, &a, opt));
    } else if (o->kind == 9) {
        clt_rprop_opts r = {o->lr, o->etaminus, o->etaplus, o->lo, o->hi};
        CHECK(clt_rprop(p, np, &r, opt));
    } else if (o->kind == 10) {
        clt_asgd_opts a = {o->lr, o->lambd, o->alpha, o->t0, o->wd};
        CHECK(clt_asgd(p, np, &a, opt));
    } else {
        clt_adam_opts a = {o->lr, o->beta1, o->beta2, o->eps, o->wd, o->amsgrad};
        CHECK(o->kind == 1 ? clt_adam(p, np, &a, opt) : clt_adamw(p, np, &a, opt));
    }
}

/* Adamax's, NAdam's and RAdam's update of element i at the parameter's
 * t-th update, written out from torch 1.13's adamax.py, nadam.py and
 * radam.py in double; mu_product[0] is NAdam's running product (float32,
 * as torch's tensor), multiplied once per step by the caller's element 0. */
static void reference_betas(const ref_opts *o, double *p, double *m, double *v, float *mu_product,
                            int t, int i, double g)
{
    g += o->wd * p[i];
    m[i] = o->beta1 * m[i] + (1 - o->beta1) * g;
    if (o->kind == 5) { /* exp_inf in v */
        double a = v[i] * o->beta2, b = fabs(g) + o->eps;
        v[i] = isnan(a) || a > b ? a : b;
        p[i] -= o->lr / (1 - pow(o->beta1, t)) * m[i] / v[i];
        return;
    }
    v[i] = o->beta2 * v[i] + (1 - o->beta2) * g * g;
    double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
    if (o->kind == 6) {
        double mu = o->beta1 * (1 - 0.5 * pow(0.96, t * o->momentum_decay));
        double mu_next = o->beta1 * (1 - 0.5 * pow(0.96, (t + 1) * o->momentum_decay));
        if (i == 0)
            *mu_product = *mu_product * (float)mu;
        float next = *mu_product * (float)mu * (float)mu_next; /* 1.13: mu twice */
        double denom = sqrt(v[i] / bc2) + o->eps;
        p[i] -= o->lr * (1 - mu) / (1 - (double)*mu_product) * g / denom;
        p[i] -= o->lr * mu_next / (1 - (double)next) * m[i] / denom;
        return;
    }
    double rho_inf = 2 / (1 - o->beta2) - 1;
    double rho_t = rho_inf - 2 * t * pow(o->beta2, t) / bc2;
    if (rho_t > 5) {
        double rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                           ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        p[i] -= m[i] / bc1 * o->lr * sqrt(bc2) / (sqrt(v[i]) + o->eps) * rect;
    } else {
        p[i] -= m[i] / bc1 * o->lr;
    }
}

/* PyTorch's formulas (torch/optim/sgd.py, adam.py, rmsprop.py, adagrad.py) in double, for a
 * parameter that has no gradient at step `skip` (1-based; 0 none), so that
 * the step skips it: its own count t of updates drives the momentum's start
 * and Adam's bias correction, as PyTorch's state['step']. */
static void reference_skipping(const ref_opts *o, double *p, int skip)
{
    double buf[N] = {0}, m[N] = {0}, v[N] = {0}, vmax[N] = {0}, sum[N];
    float mu_product = 1.0f;
    for (int i = 0; i < N; i++)
        sum[i] = o->init;
    for (int step = 1, t = 1; step <= (o->steps ? o->steps : STEPS); step++) {
        if (step == skip)
            continue;
        for (int i = 0; i < N; i++) {
            double g = C[i] * p[i];
            if (o->kind >= 5) {
                reference_betas(o, p, m, v, &mu_product, t, i, g);
            } else if (o->kind == 0) {
                if (o->wd)
                    g += o->wd * p[i];
                if (o->momentum) {
                    buf[i] = t == 1 ? g : o->momentum * buf[i] + (1 - o->dampening) * g;
                    g = o->nesterov ? g + o->momentum * buf[i] : buf[i];
                }
                p[i] -= o->lr * g;
            } else if (o->kind == 3) {
                g += o->wd * p[i];
                m[i] = o->alpha * m[i] + (1 - o->alpha) * g * g; /* square_avg */
                double avg = m[i];
                if (o->centered) {
                    v[i] = o->alpha * v[i] + (1 - o->alpha) * g; /* grad_avg */
                    avg -= v[i] * v[i];
                }
                avg = sqrt(avg) + o->eps;
                if (o->momentum > 0) {
                    buf[i] = o->momentum * buf[i] + g / avg;
                    p[i] -= o->lr * buf[i];
                } else {
                    p[i] -= o->lr * g / avg;
                }
            } else if (o->kind == 4) {
                g += o->wd * p[i];
                double clr = o->lr / (1 + (t - 1) * o->lr_decay);
                sum[i] += g * g;
                p[i] -= clr * g / (sqrt(sum[i]) + o->eps);
            } else {
                if (o->kind == 2)
                    p[i] *= 1 - o->lr * o->wd;
                else if (o->wd)
                    g += o->wd * p[i];
                m[i] = o->beta1 * m[i] + (1 - o->beta1) * g;
                v[i] = o->beta2 * v[i] + (1 - o->beta2) * g * g;
                double bc1 = 1 - pow(o->beta1, t), bc2 = 1 - pow(o->beta2, t);
                double vv = v[i];
                if (o->amsgrad) {
                    vmax[i] = fmax(vmax[i], v[i]);
                    vv = vmax[i];
                }
                double denom = sqrt(vv) / sqrt(bc2) + o->eps;
                p[i] -= o->lr / bc1 * m[i] / denom;
            }
        }
        t++;
    }
}

static void reference(const ref_opts *o, double *p)
{
    reference_skipping(o, p, 0);
}

/* STEPS steps of o's optimizer over a parameter of dtype dt against the
 * reference in double: float64 to 1e-12, float32 to 1e-5 (its roundings
 * against the reference's, over four steps). */
static void run_case_in(const ref_opts *o, clt_dtype dt)
{
    clt_device *dev = get_device("cpu");
    int64_t n = N;
    clt_tensor *p64, *p;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p64));
    CHECK(clt_to_dtype(p64, dt, &p));
    CHECK(clt_set_requires_grad(p, 1));
    clt_optimizer *opt;
    make_optimizer(o, &p, 1, &opt);
    int steps = o->steps ? o->steps : STEPS;
    for (int t = 0; t < steps; t++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        loss_backward(dev, p);
        CHECK(clt_optimizer_step(opt));
    }
    cr_assert_eq(clt_optimizer_steps(opt), steps);
    double got[N], want[N];
    memcpy(want, P0, sizeof want);
    reference(o, want);
    clt_tensor *back;
    CHECK(clt_to_dtype(p, CLT_FLOAT64, &back));
    CHECK(clt_tensor_read(back, got, sizeof got));
    double rtol = dt == CLT_FLOAT64 ? 1e-12 : 1e-5, atol = dt == CLT_FLOAT64 ? 1e-14 : 1e-6;
    for (int i = 0; i < N; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol),
                  "kind %d, %s, element %d: %.17g vs %.17g", o->kind, clt_dtype_name(dt), i,
                  got[i], want[i]);
    double moved = 0;
    for (int i = 0; i < N; i++)
        moved += fabs(got[i] - P0[i]);
    cr_assert(moved > 1e-3, "the parameters hardly moved");
    clt_optimizer_free(opt);
    clt_tensor_free(back);
    clt_tensor_free(p);
    clt_tensor_free(p64);
}

static void run_case(const ref_opts *o)
{
    run_case_in(o, CLT_FLOAT64);
}

Test(optim, sgd_variants)
{
    const ref_opts cases[] = {
        {0, 0.1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {0, 0.1, 0.9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {0, 0.05, 0.9, 0.1, 0.01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {0, 0.05, 0.8, 0, 0.02, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run_case(&cases[k]);
}

Test(optim, adam_and_adamw)
{
    const ref_opts cases[] = {
        {1, 0.01, 0, 0, 0, 0.9, 0.999, 1e-8, 0, 0, 0, 0, 0, 0, 0, 0},
        {1, 0.02, 0, 0, 0.05, 0.8, 0.99, 1e-6, 0, 1, 0, 0, 0, 0, 0, 0},
        {2, 0.01, 0, 0, 0.01, 0.9, 0.999, 1e-8, 0, 0, 0, 0, 0, 0, 0, 0},
        {2, 0.03, 0, 0, 0.1, 0.85, 0.95, 1e-8, 0, 1, 0, 0, 0, 0, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run_case(&cases[k]);
}

/* Every option that changes RMSprop's and Adagrad's code path, in float32
 * and float64. */
Test(optim, rmsprop_and_adagrad)
{
    const ref_opts cases[] = {
        /* RMSprop: plain (torch's defaults but lr), weight decay, momentum,
         * centered, all three */
        {.kind = 3, .lr = 0.01, .alpha = 0.99, .eps = 1e-8},
        {.kind = 3, .lr = 0.02, .alpha = 0.9, .eps = 1e-6, .wd = 0.1},
        {.kind = 3, .lr = 0.01, .alpha = 0.95, .eps = 1e-8, .momentum = 0.9},
        {.kind = 3, .lr = 0.01, .alpha = 0.99, .eps = 1e-8, .centered = 1},
        {.kind = 3, .lr = 0.005, .alpha = 0.8, .eps = 1e-4, .wd = 0.05, .momentum = 0.5,
         .centered = 1},
        /* Adagrad: plain, lr_decay, weight decay, initial accumulator, all */
        {.kind = 4, .lr = 0.1, .eps = 1e-10},
        {.kind = 4, .lr = 0.1, .eps = 1e-10, .lr_decay = 0.5},
        {.kind = 4, .lr = 0.1, .eps = 1e-10, .wd = 0.2},
        {.kind = 4, .lr = 0.1, .eps = 1e-10, .init = 0.7},
        {.kind = 4, .lr = 0.3, .eps = 1e-3, .lr_decay = 0.1, .wd = 0.05, .init = 0.25},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_case_in(&cases[k], CLT_FLOAT64);
        run_case_in(&cases[k], CLT_FLOAT32);
    }
}

/* Adamax, NAdam and RAdam: torch's defaults but lr, weight decay, other
 * betas and eps (NAdam: momentum_decay), in float64 and float32. */
Test(optim, adamax_nadam_radam)
{
    const ref_opts cases[] = {
        {.kind = 5, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8},
        {.kind = 5, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-3, .wd = 0.1},
        {.kind = 5, .lr = 0.03, .beta1 = 0.0, .beta2 = 0.0, .eps = 1e-8, .wd = 0.02},
        {.kind = 6, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
         .momentum_decay = 4e-3},
        {.kind = 6, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .wd = 0.1,
         .momentum_decay = 0.5},
        {.kind = 6, .lr = 0.05, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .wd = 0.01,
         .momentum_decay = 0, .steps = 9},
        {.kind = 7, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8},
        {.kind = 7, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .wd = 0.1,
         .steps = 9},
        {.kind = 7, .lr = 0.01, .beta1 = 0.5, .beta2 = 0.5, .eps = 1e-8, .steps = 9},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_case_in(&cases[k], CLT_FLOAT64);
        run_case_in(&cases[k], CLT_FLOAT32);
    }
}

/* RAdam's switch: with torch's betas rho_t is 4.996 at step 5 and 5.994 at
 * step 6, so steps 1 to 5 are momentum steps (p -= lr m / (1 - beta1^t))
 * and step 6 the first rectified one; each count of steps from 1 to 8
 * against the reference, and the first five against the momentum step
 * written apart, which the rectified one is not. */
Test(optim, radam_rectification_threshold)
{
    for (int steps = 1; steps <= 8; steps++) {
        ref_opts o = {.kind = 7, .lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                      .steps = steps};
        run_case_in(&o, CLT_FLOAT64);
    }
    /* one parameter element, g = c p with c = 0.5 */
    clt_device *dev = get_device("cpu");
    int64_t n = N;
    clt_tensor *p;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p));
    CHECK(clt_set_requires_grad(p, 1));
    clt_optimizer *opt;
    CHECK(clt_radam(&p, 1, NULL, &opt));
    cr_assert_eq(clt_optimizer_lr(opt), 1e-3);
    cr_assert_eq(clt_optimizer_momentum(opt), 0.9);
    double want = P0[0], m = 0;
    for (int t = 1; t <= 6; t++) {
        double before = want, got[N];
        m = 0.9 * m + 0.1 * C[0] * before;
        double plain = before - 1e-3 * m / (1 - pow(0.9, t));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        loss_backward(dev, p);
        CHECK(clt_optimizer_step(opt));
        CHECK(clt_tensor_read(p, got, sizeof got));
        if (t <= 5)
            cr_assert(close_enough(got[0], plain, 1e-13, 0), "step %d: %.17g vs %.17g", t,
                      got[0], plain);
        else
            cr_assert(!close_enough(got[0], plain, 1e-6, 0),
                      "step 6 is not rectified: %.17g", got[0]);
        want = got[0];
    }
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

static void give_grad(clt_tensor *p, clt_tensor *g);

/* A NaN in a gradient makes that element's parameter NaN, as in torch,
 * and leaves the other elements their finite update (Adamax's exp_inf:
 * test_io.c's adamax_nadam_radam_checkpoints). */
Test(optim, adamax_nadam_radam_nan_gradient)
{
    clt_device *dev = get_device("cpu");
    static const double g[3] = {NAN, 0.5, -2.0};
    for (int kind = 5; kind <= 7; kind++) {
        clt_tensor *p, *gt;
        CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p));
        CHECK(clt_set_requires_grad(p, 1));
        clt_optimizer *opt;
        ref_opts o = {.kind = kind, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                      .momentum_decay = 4e-3};
        make_optimizer(&o, &p, 1, &opt);
        clt_tensor *g64;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, g, &g64));
        CHECK(clt_to_dtype(g64, CLT_FLOAT32, &gt));
        clt_tensor_free(g64);
        give_grad(p, gt);
        CHECK(clt_optimizer_step(opt));
        float got[3];
        CHECK(clt_tensor_read(p, got, sizeof got));
        double ref[N] = {1, 1, 1}, m[N] = {0}, v[N] = {0};
        float mu = 1.0f;
        for (int i = 0; i < 3; i++)
            reference_betas(&o, ref, m, v, &mu, 1, i, g[i]);
        cr_assert(isnan(got[0]), "kind %d: %g", kind, got[0]);
        for (int i = 1; i < 3; i++)
            cr_assert(close_enough(got[i], ref[i], 1e-6, 1e-7) && got[i] != 1.0f,
                      "kind %d, element %d: %.9g vs %.9g", kind, i, got[i], ref[i]);
        clt_optimizer_free(opt);
        clt_tensor_free(p);
    }
}

/* Adamax's, NAdam's and RAdam's defaults are torch 1.13's: STEPS steps
 * of each made with NULL options against the reference with them written
 * out; the momentum (what OneCycleLR cycles) is betas[0]. */
Test(optim, adamax_nadam_radam_defaults)
{
    clt_device *dev = get_device("cpu");
    int64_t n = N;
    for (int kind = 5; kind <= 7; kind++) {
        ref_opts o = {.kind = kind, .lr = kind == 7 ? 1e-3 : 2e-3, .beta1 = 0.9,
                      .beta2 = 0.999, .eps = 1e-8, .momentum_decay = 4e-3};
        clt_tensor *p;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p));
        CHECK(clt_set_requires_grad(p, 1));
        clt_optimizer *opt;
        CHECK(kind == 5   ? clt_adamax(&p, 1, NULL, &opt)
              : kind == 6 ? clt_nadam(&p, 1, NULL, &opt)
                          : clt_radam(&p, 1, NULL, &opt));
        cr_assert_eq(clt_optimizer_lr(opt), o.lr);
        cr_assert_eq(clt_optimizer_momentum(opt), 0.9);
        for (int t = 0; t < STEPS; t++) {
            CHECK(clt_optimizer_zero_grad(opt, 1));
            loss_backward(dev, p);
            CHECK(clt_optimizer_step(opt));
        }
        double got[N], want[N];
        memcpy(want, P0, sizeof want);
        reference(&o, want);
        CHECK(clt_tensor_read(p, got, sizeof got));
        for (int i = 0; i < N; i++)
            cr_assert(close_enough(got[i], want[i], 1e-12, 1e-14) && got[i] != P0[i],
                      "kind %d, %d: %.17g vs %.17g", kind, i, got[i], want[i]);
        clt_optimizer_free(opt);
        clt_tensor_free(p);
    }
}

/* The defaults are torch's: one step of each made with NULL options
 * equals the step with the values written out. */
Test(optim, rmsprop_and_adagrad_defaults)
{
    clt_device *dev = get_device("cpu");
    int64_t n = N;
    for (int ada = 0; ada <= 1; ada++) {
        ref_opts o = ada ? (ref_opts){.kind = 4, .lr = 0.01, .eps = 1e-10}
                         : (ref_opts){.kind = 3, .lr = 0.01, .alpha = 0.99, .eps = 1e-8};
        clt_tensor *p;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p));
        CHECK(clt_set_requires_grad(p, 1));
        clt_optimizer *opt;
        CHECK(ada ? clt_adagrad(&p, 1, NULL, &opt) : clt_rmsprop(&p, 1, NULL, &opt));
        cr_assert_eq(clt_optimizer_lr(opt), 0.01);
        for (int t = 0; t < STEPS; t++) {
            CHECK(clt_optimizer_zero_grad(opt, 1));
            loss_backward(dev, p);
            CHECK(clt_optimizer_step(opt));
        }
        double got[N], want[N];
        memcpy(want, P0, sizeof want);
        reference(&o, want);
        CHECK(clt_tensor_read(p, got, sizeof got));
        for (int i = 0; i < N; i++)
            cr_assert(close_enough(got[i], want[i], 1e-12, 1e-14), "%d: %.17g vs %.17g", i,
                      got[i], want[i]);
        clt_optimizer_free(opt);
        clt_tensor_free(p);
    }
}

/* A parameter without a gradient at one step is skipped and keeps its own
 * step count: Adam's bias correction at its next update uses 2, not the
 * optimizer's 3 (it once did, as did nothing else in PyTorch), and SGD's
 * momentum starts at a parameter's first update. */
Test(optim, skipped_parameter_keeps_its_own_step_count)
{
    clt_device *dev = get_device("cpu");
    const ref_opts cases[] = {
        {1, 0.1, 0, 0, 0, 0.9, 0.999, 1e-8, 0, 0, 0, 0, 0, 0, 0, 0},
        {2, 0.05, 0, 0, 0.1, 0.8, 0.99, 1e-8, 0, 1, 0, 0, 0, 0, 0, 0},
        {0, 0.1, 0.9, 0.2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {.kind = 4, .lr = 0.1, .eps = 1e-10, .lr_decay = 0.5, .init = 0.1},
        {.kind = 3, .lr = 0.01, .alpha = 0.9, .eps = 1e-8, .momentum = 0.9, .centered = 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const ref_opts *o = &cases[k];
        for (int skip = 1; skip <= 2; skip++) {
            int64_t n = N;
            clt_tensor *p[2];
            for (int j = 0; j < 2; j++) {
                CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p[j]));
                CHECK(clt_set_requires_grad(p[j], 1));
            }
            clt_optimizer *opt;
            make_optimizer(o, p, 2, &opt);
            for (int step = 1; step <= STEPS; step++) {
                CHECK(clt_optimizer_zero_grad(opt, 1));
                loss_backward(dev, p[0]);
                if (step != skip)
                    loss_backward(dev, p[1]);
                CHECK(clt_optimizer_step(opt));
            }
            cr_assert_eq(clt_optimizer_steps(opt), STEPS);
            for (int j = 0; j < 2; j++) {
                double got[N], want[N];
                memcpy(want, P0, sizeof want);
                reference_skipping(o, want, j == 1 ? skip : 0);
                CHECK(clt_tensor_read(p[j], got, sizeof got));
                for (int i = 0; i < N; i++)
                    cr_assert(close_enough(got[i], want[i], 1e-12, 1e-14),
                              "kind %d, skip %d, parameter %d, element %d: %.17g vs %.17g",
                              o->kind, skip, j, i, got[i], want[i]);
                clt_tensor_free(p[j]);
            }
            clt_optimizer_free(opt);
        }
    }
}

/* float32 Adam and AdamW over 40 steps against the same updates in double,
 * with the parameter rounded to float32 after each step as its storage is:
 * the constants 1 - beta1, 1 - beta2 and 1 - lr wd are computed in double
 * (PyTorch's Python does), since 1 - beta2 taken in float32 from 0.999 is
 * 1.3e-5 off, which made every update 6.4e-6 too large (2.6e-6 over these
 * steps).  beta1 = 0 takes the lerp
 * at weight 1, exactly g. */
Test(optim, float32_adam_constants_as_torch)
{
    clt_device *dev = get_device("cpu");
    enum { M = 64, T = 40 };
    float p0[M], c[M];
    fill_random(p0, M, 5);
    fill_random(c, M, 6);
    for (int i = 0; i < M; i++)
        p0[i] *= 1e-3f;
    const clt_adam_opts cases[] = {{0.01, 0.9, 0.999, 1e-8, 0.0, 0}, {0.01, 0.0, 0.999, 1e-8, 0.1, 1}};
    for (int k = 0; k < 2; k++) {
        const clt_adam_opts *a = &cases[k];
        clt_tensor *p, *tc;
        int64_t n = M;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, p0, &p));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, c, &tc));
        CHECK(clt_set_requires_grad(p, 1));
        clt_optimizer *opt;
        CHECK(k == 0 ? clt_adam(&p, 1, a, &opt) : clt_adamw(&p, 1, a, &opt));
        for (int t = 0; t < T; t++) {
            CHECK(clt_optimizer_zero_grad(opt, 1));
            CHECK(clt_scope_begin());
            clt_tensor *q, *s;
            CHECK(clt_mul(p, tc, &q));
            CHECK(clt_sum(q, &s));
            CHECK(clt_backward(s, NULL, 0));
            clt_scope_end();
            CHECK(clt_optimizer_step(opt));
        }
        float got[M];
        CHECK(clt_tensor_read(p, got, sizeof got));
        double worst = 0;
        for (int i = 0; i < M; i++) {
            double x = p0[i], g = c[i], m = 0, v = 0, vmax = 0;
            for (int t = 1; t <= T; t++) {
                if (k == 1)
                    x = (float)(x * (1 - a->lr * a->weight_decay));
                m = a->beta1 * m + (1 - a->beta1) * g;
                v = a->beta2 * v + (1 - a->beta2) * g * g;
                vmax = fmax(vmax, v);
                double vv = a->amsgrad ? vmax : v;
                x = (float)(x - a->lr / (1 - pow(a->beta1, t)) * m /
                                    (sqrt(vv) / sqrt(1 - pow(a->beta2, t)) + a->eps));
            }
            worst = fmax(worst, fabs(got[i] - x));
        }
        cr_assert(worst < 3e-7, "case %d: float32 parameters %g from the double reference", k,
                  worst);
        clt_optimizer_free(opt);
        clt_tensor_free(p);
        clt_tensor_free(tc);
    }
}

Test(optim, float32_adam_close_to_reference)
{
    clt_device *dev = get_device("cpu");
    float p0[64], c[64];
    fill_random(p0, 64, 3);
    fill_random(c, 64, 4);
    clt_tensor *p, *tc;
    int64_t n = 64;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, p0, &p));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, c, &tc));
    CHECK(clt_set_requires_grad(p, 1));
    clt_optimizer *opt;
    CHECK(clt_adamw(&p, 1, NULL, &opt));
    cr_assert_eq(clt_optimizer_lr(opt), 1e-3);
    CHECK(clt_scope_begin());
    clt_tensor *q, *s;
    CHECK(clt_mul(p, tc, &q));
    CHECK(clt_sum(q, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_optimizer_step(opt));
    clt_scope_end();
    float got[64];
    CHECK(clt_tensor_read(p, got, sizeof got));
    for (int i = 0; i < 64; i++) {
        /* first step: m/(1-b1) = g, sqrt(v/(1-b2)) = |g|: p' = p(1 - lr wd) - lr g / (|g| + eps) */
        double g = c[i], want = p0[i] * (1 - 1e-3 * 1e-2) - 1e-3 * g / (fabs(g) + 1e-8);
        cr_assert(close_enough(got[i], want, 1e-6, 1e-6), "%d: %g vs %g", i, got[i], want);
    }
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_tensor_free(tc);
}

Test(optim, clip_grad_norm)
{
    clt_device *dev = get_device("cpu");
    int64_t n = N;
    clt_tensor *p, *q, *norm;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, C, &q));
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_set_requires_grad(q, 1));
    loss_backward(dev, p); /* grad p = C P0 */
    clt_tensor *both[2] = {p, q}; /* q has no gradient: skipped */
    CHECK(clt_clip_grad_norm(both, 2, 0.5, 2.0, &norm));
    double total = 0, got_norm, g[N];
    for (int i = 0; i < N; i++)
        total += C[i] * P0[i] * C[i] * P0[i];
    total = sqrt(total);
    CHECK(clt_tensor_item(norm, &got_norm));
    cr_assert(close_enough(got_norm, total, 1e-12, 0), "norm %g vs %g", got_norm, total);
    clt_tensor *gp;
    CHECK(clt_grad(p, &gp));
    CHECK(clt_tensor_read(gp, g, sizeof g));
    double coef = 0.5 / (total + 1e-6);
    for (int i = 0; i < N; i++)
        cr_assert(close_enough(g[i], C[i] * P0[i] * coef, 1e-12, 1e-15));
    clt_tensor_free(gp);
    clt_tensor_free(norm);
    /* below the bound: unchanged */
    CHECK(clt_clip_grad_norm(both, 2, 100.0, 2.0, NULL));
    CHECK(clt_grad(p, &gp));
    double g2[N];
    CHECK(clt_tensor_read(gp, g2, sizeof g2));
    cr_assert(memcmp(g, g2, sizeof g) == 0);
    clt_tensor_free(gp);
    clt_tensor_free(p);
    clt_tensor_free(q);
}

Test(optim, schedules)
{
    clt_device *dev = get_device("cpu");
    clt_optimizer *opt;
    clt_tensor *p = schedule_param(dev, 0.1, &opt);
    clt_lr_scheduler *s;
    CHECK(clt_step_lr(opt, 2, 0.5, &s));
    const double want_step[] = {0.1, 0.05, 0.05, 0.025, 0.025};
    for (int e = 0; e < 5; e++) {
        CHECK(clt_lr_scheduler_step(s));
        cr_assert_eq(clt_lr_scheduler_epoch(s), e + 1);
        cr_assert(close_enough(clt_optimizer_lr(opt), want_step[e], 1e-15, 0), "epoch %d: %g", e,
                  clt_optimizer_lr(opt));
    }
    clt_lr_scheduler_free(s);
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    CHECK(clt_cosine_lr(opt, 4, 0.01, &s));
    for (int e = 1; e <= 4; e++) {
        CHECK(clt_lr_scheduler_step(s));
        double want = 0.01 + (0.1 - 0.01) * (1 + cos(M_PI * e / 4)) / 2;
        cr_assert(close_enough(clt_optimizer_lr(opt), want, 1e-14, 0));
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* The new schedules over SGD(lr=0.1): want[e] is torch 1.13's rate at
 * epoch e through step() (its chainable form, want[0] what its constructor
 * sets), printed with repr; ours is the closed form, equal to torch's
 * _get_closed_form_lr (closed[e], where given) bit for bit and to the
 * chainable rates to 4 units in the last place. */
static void check_schedule_rates(clt_lr_scheduler *s, const clt_optimizer *opt,
                                 const double *want, const double *closed, int epochs,
                                 const char *what)
{
    for (int e = 0; e <= epochs; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        cr_assert_eq(clt_lr_scheduler_epoch(s), e);
        double lr = clt_optimizer_lr(opt);
        cr_assert(close_enough(lr, want[e], 4 * DBL_EPSILON, 0),
                  "%s, epoch %d: %.17g vs torch's %.17g", what, e, lr, want[e]);
        if (closed)
            cr_assert(lr == closed[e], "%s, epoch %d: %.17g vs torch's closed form %.17g", what,
                      e, lr, closed[e]);
    }
}

Test(optim, exponential_multistep_linear_schedules)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    clt_optimizer *opt;
    clt_lr_scheduler *s;

    /* ExponentialLR(gamma=0.9); and against 0.1 * 0.9^e computed here */
    static const double exp_chain[] = {0.1, 0.09000000000000001, 0.08100000000000002,
                                       0.07290000000000002, 0.06561000000000002,
                                       0.05904900000000002, 0.05314410000000002,
                                       0.04782969000000002, 0.043046721000000024};
    static const double exp_closed[] = {0.1, 0.09000000000000001, 0.08100000000000002,
                                        0.0729, 0.06561, 0.05904900000000001,
                                        0.05314410000000001, 0.04782969000000001,
                                        0.04304672100000001};
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_exponential_lr(opt, 0.9, &s));
    check_schedule_rates(s, opt, exp_chain, exp_closed, 8, "ExponentialLR");
    cr_assert_eq(clt_optimizer_lr(opt), 0.1 * pow(0.9, 8));
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);

    /* MultiStepLR([5, 2, 5], gamma=0.1): unsorted, 5 twice (decays twice) */
    static const double ms_chain[] = {0.1, 0.1, 0.010000000000000002, 0.010000000000000002,
                                      0.010000000000000002, 0.00010000000000000005,
                                      0.00010000000000000005, 0.00010000000000000005,
                                      0.00010000000000000005};
    static const double ms_closed[] = {0.1, 0.1, 0.010000000000000002, 0.010000000000000002,
                                       0.010000000000000002, 0.00010000000000000003,
                                       0.00010000000000000003, 0.00010000000000000003,
                                       0.00010000000000000003};
    int64_t milestones[] = {5, 2, 5};
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_multistep_lr(opt, milestones, 3, 0.1, &s));
    milestones[0] = 1; /* copied: changes nothing */
    check_schedule_rates(s, opt, ms_chain, ms_closed, 8, "MultiStepLR");
    clt_lr_scheduler_free(s);
    /* no milestones: the rate stays */
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    CHECK(clt_multistep_lr(opt, NULL, 0, 0.1, &s));
    for (int e = 0; e < 3; e++)
        CHECK(clt_lr_scheduler_step(s));
    cr_assert_eq(clt_optimizer_lr(opt), 0.1);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);

    /* LinearLR with torch's defaults (1/3, 1, 5): the constructor sets
     * base_lr / 3; and LinearLR(1.0, 0.1, 3), decreasing */
    static const double lin_chain[] = {0.03333333333333333, 0.04666666666666667,
                                       0.060000000000000005, 0.07333333333333335,
                                       0.08666666666666668, 0.1, 0.1, 0.1};
    static const double lin_closed[] = {0.03333333333333333, 0.04666666666666667,
                                        0.06000000000000001, 0.07333333333333335,
                                        0.08666666666666667, 0.1, 0.1, 0.1};
    static const double dec_chain[] = {0.1, 0.06999999999999999, 0.039999999999999994,
                                       0.009999999999999998, 0.009999999999999998,
                                       0.009999999999999998};
    static const double dec_closed[] = {0.1, 0.06999999999999999, 0.04000000000000001,
                                        0.009999999999999998, 0.009999999999999998,
                                        0.009999999999999998};
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_linear_lr(opt, 1.0 / 3, 1.0, 5, &s));
    check_schedule_rates(s, opt, lin_chain, lin_closed, 7, "LinearLR");
    clt_lr_scheduler_free(s);
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    CHECK(clt_linear_lr(opt, 1.0, 0.1, 3, &s));
    check_schedule_rates(s, opt, dec_chain, dec_closed, 5, "LinearLR decreasing");
    for (int e = 6; e <= 8; e++) { /* the closed form, written out here */
        CHECK(clt_lr_scheduler_step(s));
        cr_assert_eq(clt_optimizer_lr(opt), 0.1 * (1.0 + (0.1 - 1.0) * 3 / 3));
    }
    clt_lr_scheduler_free(s);

    /* refused, each with torch's reason, nothing made */
    int64_t neg[] = {3, -1};
    s = (clt_lr_scheduler *)&s;
    assert_error(clt_exponential_lr(opt, -0.5, &s), CLT_ERR_INVALID_ARGUMENT, "invalid gamma -0.5");
    cr_assert_null(s);
    assert_error(clt_exponential_lr(opt, NAN, &s), CLT_ERR_INVALID_ARGUMENT, "invalid gamma");
    assert_error(clt_multistep_lr(opt, neg, 2, 0.1, &s), CLT_ERR_INVALID_ARGUMENT,
                 "milestone 1 is negative (-1)");
    cr_assert_null(s);
    assert_error(clt_multistep_lr(opt, NULL, 2, 0.1, &s), CLT_ERR_NULL_ARGUMENT, "milestones");
    assert_error(clt_multistep_lr(opt, neg, 1, INFINITY, &s), CLT_ERR_INVALID_ARGUMENT,
                 "invalid gamma inf");
    assert_error(clt_linear_lr(opt, 0.0, 1.0, 5, &s), CLT_ERR_INVALID_ARGUMENT,
                 "start_factor 0: starting multiplicative factor expected to be greater than 0");
    assert_error(clt_linear_lr(opt, 1.5, 1.0, 5, &s), CLT_ERR_INVALID_ARGUMENT, "start_factor 1.5");
    assert_error(clt_linear_lr(opt, 0.5, 1.1, 5, &s), CLT_ERR_INVALID_ARGUMENT,
                 "end_factor 1.1: ending multiplicative factor expected to be between 0 and 1");
    assert_error(clt_linear_lr(opt, 0.5, 1.0, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "total_iters must be positive, not 0");
    /* torch's name for the period, which the schedule file's key is too */
    assert_error(clt_cosine_lr(opt, 0, 0.0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "clt_cosine_lr: T_max must be positive, not 0");
    assert_error(clt_linear_lr(NULL, 0.5, 1.0, 5, &s), CLT_ERR_NULL_ARGUMENT, "clt_linear_lr");
    cr_assert_null(s);
    cr_assert_eq(clt_optimizer_lr(opt), 0.1 * (1.0 + (0.1 - 1.0) * 3 / 3),
                 "a refusal set the rate");
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* torch's chainable get_lr of the schedules below, written out from
 * torch 1.13's lr_scheduler.py: the rate now times the factor of epoch e
 * (base the schedule's base_lrs[0], for CosineAnnealingLR). */
static double torch_chain(char kind, double lr, int64_t e, double base, const double *prm)
{
    switch (kind) {
    case 'L': /* LinearLR(start, end, total) */
        if (e == 0)
            return lr * prm[0];
        if (e > (int64_t)prm[2])
            return lr;
        return lr * (1. + (prm[1] - prm[0]) / (prm[2] * prm[0] + (double)(e - 1) * (prm[1] - prm[0])));
    case 'S': /* StepLR(step_size, gamma) */
        return e == 0 || e % (int64_t)prm[0] != 0 ? lr : lr * prm[1];
    case 'E': /* ExponentialLR(gamma) */
        return e == 0 ? lr : lr * prm[0];
    case 'M': { /* MultiStepLR(gamma, milestones...; prm[1] of them) */
        double k = 0;
        for (int i = 0; i < (int)prm[1]; i++)
            k += (int64_t)prm[2 + i] == e;
        return k == 0 ? lr : lr * pow(prm[0], k);
    }
    default: { /* 'C': CosineAnnealingLR(T_max, eta_min) */
        double t = prm[0], eta = prm[1];
        int64_t tm = (int64_t)t;
        if (e == 0)
            return lr;
        if (((e - 1 - tm) % (2 * tm) + 2 * tm) % (2 * tm) == 0)
            return lr + (base - eta) * (1 - cos(M_PI / t)) / 2;
        return (1 + cos(M_PI * (double)e / t)) / (1 + cos(M_PI * (double)(e - 1) / t)) *
                   (lr - eta) +
               eta;
    }
    }
}

/* Schedules made one after the other on one optimizer, as torch's
 * without ChainedScheduler: the first sets initial_lr (setdefault), every
 * later one takes it as its base_lrs and starts from the rate the others
 * set, and each step multiplies the rate by each schedule's factor
 * (torch's chainable form), bit for bit torch 1.13's rates (printed there
 * with repr) and the formulas above.  Freeing one leaves the other going
 * on from the rate. */
Test(optim, chained_schedules_as_torch)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p = schedule_param(dev, 0, NULL);
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = 0.1;
    clt_optimizer *opt;
    clt_lr_scheduler *s1, *s2, *s3;
    /* LinearLR(0.5, 1.0, 4) then StepLR(2, 0.5) */
    static const double torch_ls[] = {0.05, 0.0625, 0.0375, 0.043750000000000004, 0.025, 0.025,
                                      0.0125, 0.0125};
    static const double lin[] = {0.5, 1.0, 4}, step[] = {2, 0.5};
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_linear_lr(opt, 0.5, 1.0, 4, &s1));
    CHECK(clt_step_lr(opt, 2, 0.5, &s2));
    double want = torch_chain('S', torch_chain('L', 0.1, 0, 0.1, lin), 0, 0.1, step);
    cr_assert(clt_optimizer_lr(opt) == torch_ls[0] && want == torch_ls[0], "%.17g",
              clt_optimizer_lr(opt));
    for (int e = 1; e < 8; e++) {
        CHECK(clt_lr_scheduler_step(s1));
        CHECK(clt_lr_scheduler_step(s2));
        want = torch_chain('S', torch_chain('L', want, e, 0.1, lin), e, 0.1, step);
        cr_assert(clt_optimizer_lr(opt) == torch_ls[e] && want == torch_ls[e],
                  "epoch %d: %.17g, the formulas %.17g, torch %.17g", e, clt_optimizer_lr(opt),
                  want, torch_ls[e]);
    }
    /* s1 freed: s2, made where the rate was not initial_lr, goes on from the rate */
    clt_lr_scheduler_free(s1);
    CHECK(clt_lr_scheduler_step(s2));
    cr_assert(clt_optimizer_lr(opt) == 0.0125 * 0.5, "%.17g", clt_optimizer_lr(opt));
    clt_lr_scheduler_free(s2);
    /* so does one made now (torch's chainable form from the rate now) */
    CHECK(clt_exponential_lr(opt, 0.5, &s1));
    cr_assert(clt_optimizer_lr(opt) == 0.0125 * 0.5, "%.17g", clt_optimizer_lr(opt));
    CHECK(clt_lr_scheduler_step(s1));
    cr_assert(clt_optimizer_lr(opt) == 0.0125 * 0.5 * 0.5, "%.17g", clt_optimizer_lr(opt));
    clt_lr_scheduler_free(s1);
    clt_optimizer_free(opt);

    /* CosineAnnealingLR(3, 0.01), MultiStepLR([0, 2, 4, 4], 0.5) and
     * ExponentialLR(0.9) over SGD(lr=0.2): the cosine's restart branch
     * (epoch 7) and a milestone at 0 and one given twice */
    static const double torch_cme[] = {0.1, 0.06975, 0.013462500000000004,
                                       0.009000000000000001, 0.012712499999999998, 0.01632375,
                                       0.0165885, 0.0134472375, 0.010034171250000003,
                                       0.009000000000000001};
    static const double cos_p[] = {3, 0.01}, ms_p[] = {0.5, 4, 0, 2, 4, 4}, exp_p[] = {0.9};
    so.lr = 0.2;
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_cosine_lr(opt, 3, 0.01, &s1));
    CHECK(clt_multistep_lr(opt, (const int64_t[]){0, 2, 4, 4}, 4, 0.5, &s2));
    CHECK(clt_exponential_lr(opt, 0.9, &s3));
    want = 0.2;
    for (int e = 0; e < 10; e++) {
        if (e > 0) {
            CHECK(clt_lr_scheduler_step(s1));
            CHECK(clt_lr_scheduler_step(s2));
            CHECK(clt_lr_scheduler_step(s3));
        }
        want = torch_chain('E', torch_chain('M', torch_chain('C', want, e, 0.2, cos_p), e, 0.2,
                                            ms_p),
                           e, 0.2, exp_p);
        cr_assert(clt_optimizer_lr(opt) == torch_cme[e] && want == torch_cme[e],
                  "epoch %d: %.17g, the formulas %.17g, torch %.17g", e, clt_optimizer_lr(opt),
                  want, torch_cme[e]);
    }
    clt_lr_scheduler_free(s1);
    clt_lr_scheduler_free(s2);
    /* a schedule outliving its optimizer steps no more */
    clt_optimizer_free(opt);
    assert_error(clt_lr_scheduler_step(s3), CLT_ERR_INVALID_ARGUMENT,
                 "the optimizer this ExponentialLR drove was freed");
    clt_lr_scheduler_free(s3);

    /* CosineAnnealingLR(T_max=2**63 - 1) chained after a StepLR: its
     * restart test took 2 T_max in int64 (UBSan: signed overflow, found by
     * the fuzzer); torch's Python ints give (e - 1 - T_max) % (2 T_max) =
     * T_max + e - 1, no restart, and a factor cos(pi e / T_max) ratio of
     * exactly 1 in float64: the rate stays 0.2 */
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_step_lr(opt, 1000, 0.5, &s1));
    CHECK(clt_cosine_lr(opt, INT64_MAX, 0.0, &s2));
    for (int e = 1; e < 4; e++) {
        CHECK(clt_lr_scheduler_step(s1));
        CHECK(clt_lr_scheduler_step(s2));
        cr_assert(clt_optimizer_lr(opt) == 0.2, "epoch %d: %.17g", e, clt_optimizer_lr(opt));
    }
    clt_lr_scheduler_free(s1);
    clt_lr_scheduler_free(s2);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

Test(optim, errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *p, *i, *y;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p));
    clt_optimizer *opt = (clt_optimizer *)&opt;
    cr_assert_eq(clt_sgd(&p, 1, NULL, &opt), CLT_ERR_INVALID_ARGUMENT); /* no requires_grad */
    cr_assert_null(opt);
    CHECK(clt_set_requires_grad(p, 1));
    clt_sgd_opts neg = CLT_SGD_DEFAULTS;
    neg.lr = -0.1;
    cr_assert_eq(clt_sgd(&p, 1, &neg, &opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "learning rate"), "%s", clt_last_error());
    clt_adam_opts nan = CLT_ADAM_DEFAULTS;
    nan.lr = NAN;
    cr_assert_eq(clt_adam(&p, 1, &nan, &opt), CLT_ERR_INVALID_ARGUMENT);
    nan = (clt_adam_opts)CLT_ADAM_DEFAULTS;
    nan.beta2 = 1.0;
    cr_assert_eq(clt_adam(&p, 1, &nan, &opt), CLT_ERR_INVALID_ARGUMENT);
    clt_sgd_opts nest = {0.1, 0.0, 0.0, 0.0, 1};
    cr_assert_eq(clt_sgd(&p, 1, &nest, &opt), CLT_ERR_INVALID_ARGUMENT);
    CHECK(clt_exp(p, &y));
    cr_assert_eq(clt_sgd(&y, 1, NULL, &opt), CLT_ERR_INVALID_ARGUMENT); /* not a leaf */
    cr_assert_eq(clt_sgd(&p, 0, NULL, &opt), CLT_ERR_INVALID_ARGUMENT);
    CHECK(clt_arange(dev, CLT_INT64, 0, 3, 1, &i));
    cr_assert_eq(clt_sgd(&i, 1, NULL, &opt), CLT_ERR_INVALID_ARGUMENT);
    CHECK(clt_adam(&p, 1, NULL, &opt));
    cr_assert_eq(clt_optimizer_set_lr(opt, -1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_optimizer_lr(opt), 1e-3);
    clt_optimizer_free(opt);
    /* RMSprop's and Adagrad's settings, refused with torch's messages */
    static const struct {
        clt_rmsprop_opts r;
        const char *needle;
    } bad_r[] = {
        {{-0.01, 0.99, 1e-8, 0, 0, 0}, "clt_rmsprop: invalid learning rate: -0.01"},
        {{0.01, -0.5, 1e-8, 0, 0, 0}, "clt_rmsprop: invalid alpha value: -0.5"},
        {{0.01, 0.99, -1e-8, 0, 0, 0}, "clt_rmsprop: invalid epsilon value"},
        {{0.01, 0.99, 1e-8, NAN, 0, 0}, "clt_rmsprop: invalid weight_decay value: nan"},
        {{0.01, 0.99, 1e-8, 0, -0.9, 0}, "clt_rmsprop: invalid momentum value: -0.9"},
    };
    for (size_t k = 0; k < sizeof bad_r / sizeof bad_r[0]; k++) {
        opt = (clt_optimizer *)&opt;
        assert_error(clt_rmsprop(&p, 1, &bad_r[k].r, &opt), CLT_ERR_INVALID_ARGUMENT,
                     bad_r[k].needle);
        cr_assert_null(opt);
    }
    static const struct {
        clt_adagrad_opts a;
        const char *needle;
    } bad_a[] = {
        {{NAN, 0, 0, 0, 1e-10}, "clt_adagrad: invalid learning rate: nan"},
        {{0.01, -1, 0, 0, 1e-10}, "clt_adagrad: invalid lr_decay value: -1"},
        {{0.01, 0, -1, 0, 1e-10}, "clt_adagrad: invalid weight_decay value: -1"},
        {{0.01, 0, 0, -0.1, 1e-10}, "clt_adagrad: invalid initial_accumulator_value value: -0.1"},
        {{0.01, 0, 0, 0, -1e-10}, "clt_adagrad: invalid epsilon value: -1e-10"},
    };
    for (size_t k = 0; k < sizeof bad_a / sizeof bad_a[0]; k++) {
        opt = (clt_optimizer *)&opt;
        assert_error(clt_adagrad(&p, 1, &bad_a[k].a, &opt), CLT_ERR_INVALID_ARGUMENT,
                     bad_a[k].needle);
        cr_assert_null(opt);
    }
    assert_error(clt_rmsprop(&i, 1, NULL, &opt), CLT_ERR_INVALID_ARGUMENT,
                 "clt_rmsprop: parameter 0 is not a leaf that requires grad");
    assert_error(clt_adagrad(&p, 0, NULL, &opt), CLT_ERR_INVALID_ARGUMENT,
                 "clt_adagrad: optimizer got an empty parameter list");
    /* Adamax's, NAdam's and RAdam's settings, refused with torch's messages
     * (kind 5, 6, 7; NAdam's momentum_decay last) */
    static const struct {
        int kind;
        double v[6];
        const char *needle;
    } bad_b[] = {
        {5, {-2e-3, 0.9, 0.999, 1e-8, 0, 0}, "clt_adamax: invalid learning rate: -0.002"},
        {5, {2e-3, 1.0, 0.999, 1e-8, 0, 0}, "clt_adamax: invalid beta parameter at index 0: 1"},
        {5, {2e-3, 0.9, NAN, 1e-8, 0, 0}, "clt_adamax: invalid beta parameter at index 1: nan"},
        {5, {2e-3, 0.9, 0.999, -1, 0, 0}, "clt_adamax: invalid epsilon value: -1"},
        {6, {2e-3, 0.9, 0.999, 1e-8, -0.5, 4e-3}, "clt_nadam: invalid weight_decay value: -0.5"},
        {6, {2e-3, 0.9, 0.999, 1e-8, 0, -4e-3},
         "clt_nadam: invalid momentum_decay value: -0.004"},
        {6, {2e-3, -0.1, 0.999, 1e-8, 0, 4e-3},
         "clt_nadam: invalid beta parameter at index 0: -0.1"},
        {7, {INFINITY, 0.9, 0.999, 1e-8, 0, 0}, "clt_radam: invalid learning rate: inf"},
        {7, {1e-3, 0.9, 1.5, 1e-8, 0, 0}, "clt_radam: invalid beta parameter at index 1: 1.5"},
        {7, {1e-3, 0.9, 0.999, 1e-8, NAN, 0}, "clt_radam: invalid weight_decay value: nan"},
    };
    for (size_t k = 0; k < sizeof bad_b / sizeof bad_b[0]; k++) {
        const double *v = bad_b[k].v;
        clt_status st;
        opt = (clt_optimizer *)&opt;
        if (bad_b[k].kind == 5)
            st = clt_adamax(&p, 1, &(clt_adamax_opts){v[0], v[1], v[2], v[3], v[4]}, &opt);
        else if (bad_b[k].kind == 6)
            st = clt_nadam(&p, 1, &(clt_nadam_opts){v[0], v[1], v[2], v[3], v[4], v[5]}, &opt);
        else
            st = clt_radam(&p, 1, &(clt_radam_opts){v[0], v[1], v[2], v[3], v[4]}, &opt);
        assert_error(st, CLT_ERR_INVALID_ARGUMENT, bad_b[k].needle);
        cr_assert_null(opt);
    }
    assert_error(clt_nadam(&i, 1, NULL, &opt), CLT_ERR_INVALID_ARGUMENT,
                 "clt_nadam: parameter 0 is not a leaf that requires grad");
    assert_error(clt_radam(&p, 0, NULL, &opt), CLT_ERR_INVALID_ARGUMENT,
                 "clt_radam: optimizer got an empty parameter list");
    assert_error(clt_adamax(NULL, 1, NULL, &opt), CLT_ERR_NULL_ARGUMENT, "clt_adamax");
    clt_tensor_free(y);
    clt_tensor_free(i);
    clt_tensor_free(p);
}

/* A parameter that starts inside its buffer (a detached slice with
 * requires_grad; a tensor over a caller's buffer at an offset): the step
 * wrote the buffer's first elements instead of the parameter's. */
Test(optim, parameter_at_an_offset)
{
    clt_device *dev = get_device("cpu");
    const float w0[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int kind = 0; kind < 3; kind++) {
        clt_tensor *w, *view, *p, *sq, *half, *loss;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){8}, w0, &w));
        CHECK(clt_narrow(w, 0, 3, 4, &view));
        CHECK(clt_detach(view, &p));
        CHECK(clt_set_requires_grad(p, 1));
        clt_optimizer *opt = NULL;
        const double lr = 0.25, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
        clt_sgd_opts so = {lr, 0.0, 0.0, 0.0, 0};
        clt_adam_opts ao = {lr, b1, b2, eps, kind == 2 ? wd : 0.0, 0};
        CHECK(kind == 0   ? clt_sgd(&p, 1, &so, &opt)
              : kind == 1 ? clt_adam(&p, 1, &ao, &opt)
                          : clt_adamw(&p, 1, &ao, &opt));
        CHECK(clt_mul(p, p, &sq));
        CHECK(clt_mul_scalar(sq, 0.5, &half));
        CHECK(clt_sum(half, &loss)); /* gradient: p */
        CHECK(clt_backward(loss, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        float *got = read_f32(w);
        for (int i = 0; i < 8; i++) {
            double want = w0[i];
            if (i >= 3 && i < 7) {
                double g = w0[i];
                if (kind == 0) {
                    want -= lr * g;
                } else {
                    if (kind == 2)
                        want *= 1 - lr * wd;
                    double m = (1 - b1) * g, v = (1 - b2) * g * g;
                    want -= lr / (1 - b1) * (m / (sqrt(v) / sqrt(1 - b2) + eps));
                }
            }
            cr_assert(close_enough(got[i], want, 1e-6, 1e-6), "optimizer %d, [%d]: %g, not %g",
                      kind, i, got[i], want);
        }
        free(got);
        clt_optimizer_free(opt);
        clt_tensor *all[] = {loss, half, sq, p, view, w};
        for (size_t k = 0; k < 6; k++)
            clt_tensor_free(all[k]);
    }
}

/* A leaf over elements [start, start + len) of the 1-D tensor t's memory (a
 * detached narrow view).  New tensor: free it. */
static clt_tensor *detached_part(clt_tensor *t, int64_t start, int64_t len)
{
    clt_tensor *view, *part;
    CHECK(clt_narrow(t, 0, start, len, &view));
    CHECK(clt_detach(view, &part));
    clt_tensor_free(view);
    return part;
}

/* A parameter given twice would be updated twice per step (PyTorch 1.13
 * warns, later versions raise); so would two aliases of one memory.  Each
 * optimizer refuses both, naming the two positions; disjoint parts of one
 * buffer are distinct parameters. */
Test(optim, duplicate_parameters_refused)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a, *b, *w;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &a));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &b));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){6}, &w));
    clt_tensor *lo = detached_part(w, 0, 3), *hi = detached_part(w, 3, 3);
    clt_tensor *lo2 = detached_part(w, 2, 2); /* overlaps lo at element 2 */
    clt_tensor *all[] = {a, b, lo, hi, lo2};
    for (size_t k = 0; k < 5; k++)
        CHECK(clt_set_requires_grad(all[k], 1));

    struct {
        clt_tensor *ps[3];
        const char *says;
    } cases[] = {
        {{a, b, a}, "parameter 2 is parameter 0 given again"},
        {{b, a, a}, "parameter 2 is parameter 1 given again"},
        {{lo, b, lo2}, "parameters 0 and 2 share memory"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int kind = 0; kind < 3; kind++) {
            clt_optimizer *opt = (clt_optimizer *)&opt;
            clt_status st = kind == 0   ? clt_sgd(cases[c].ps, 3, NULL, &opt)
                            : kind == 1 ? clt_adam(cases[c].ps, 3, NULL, &opt)
                                        : clt_adamw(cases[c].ps, 3, NULL, &opt);
            cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "case %zu, optimizer %d: %s", c, kind,
                         clt_status_name(st));
            cr_assert_null(opt);
            cr_assert(strstr(clt_last_error(), cases[c].says), "case %zu: %s", c,
                      clt_last_error());
        }
    }
    /* Disjoint halves of one buffer, and one alias beside other tensors,
     * are fine; a step updates each once. */
    clt_tensor *ok[] = {hi, a, lo, b};
    clt_optimizer *opt = NULL;
    clt_sgd_opts so = {0.5, 0.0, 0.0, 0.0, 0};
    CHECK(clt_sgd(ok, 4, &so, &opt));
    clt_tensor *s, *l;
    CHECK(clt_sum(hi, &s));
    CHECK(clt_mul_scalar(s, -2.0, &l)); /* d/dhi = -2 */
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_optimizer_step(opt));
    float *got = read_f32(w);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(got[i], i < 3 ? 0.0f : 1.0f, "[%d] %g", i, got[i]);
    free(got);
    clt_optimizer_free(opt);
    clt_tensor_free(l);
    clt_tensor_free(s);
    for (size_t k = 0; k < 5; k++)
        clt_tensor_free(all[k]);
    clt_tensor_free(w);
}

/* clip_grad_norm_ given one parameter twice: PyTorch 1.13 counts its
 * gradient twice in the norm and scales it twice ([p, p] with grad 2s of 3
 * elements and max_norm 1: norm 4.90 and grad 0.083 rather than 3.46 and
 * 0.58).  It is refused, naming the two positions, with nothing scaled;
 * a parameter without a gradient given twice has nothing to scale, and two
 * aliases of one memory have a gradient each, each scaled once. */
Test(optim, clip_grad_norm_refuses_a_gradient_twice)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a, *b, *q, *w;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &a));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &b));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &q));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){4}, &w));
    clt_tensor *lo = detached_part(w, 0, 3);
    clt_tensor *hi = detached_part(w, 1, 3); /* overlaps lo */
    clt_tensor *leaves[] = {a, b, q, lo, hi};
    for (size_t k = 0; k < 5; k++)
        CHECK(clt_set_requires_grad(leaves[k], 1));
    /* grad a = 2, grad b = 1, grad lo = 3, grad hi = 4 (q has none) */
    const double scale[] = {2, 1, 0, 3, 4};
    for (size_t k = 0; k < 5; k++) {
        if (scale[k] == 0)
            continue;
        clt_tensor *s, *l;
        CHECK(clt_sum(leaves[k], &s));
        CHECK(clt_mul_scalar(s, scale[k], &l));
        CHECK(clt_backward(l, NULL, 0));
        clt_tensor_free(s);
        clt_tensor_free(l);
    }
    clt_tensor *twice[] = {a, b, a}, *norm = (clt_tensor *)&norm;
    clt_status st = clt_clip_grad_norm(twice, 3, 1.0, 2.0, &norm);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert_null(norm);
    cr_assert(strstr(clt_last_error(), "parameter 2 is parameter 0 given again") &&
                  strstr(clt_last_error(), "clt_clip_grad_norm"),
              "%s", clt_last_error());
    float *g = read_grad_f32(a);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(g[i], 2.0f, "a refused clip scaled grad a[%d]: %g", i, g[i]);
    free(g);
    /* q twice (no gradient) and the two aliases: clipped, each once */
    clt_tensor *fine[] = {q, lo, hi, q, b};
    CHECK(clt_clip_grad_norm(fine, 5, 1.0, 2.0, &norm));
    double total = sqrt(3 * (3.0 * 3 + 4.0 * 4 + 1.0 * 1)), got;
    CHECK(clt_tensor_item(norm, &got));
    cr_assert(fabs(got - total) <= 1e-6 * total, "norm %.9g, want %.9g", got, total);
    double coef = 1.0 / (total + 1e-6);
    const clt_tensor *clipped[] = {lo, hi, b};
    const double was[] = {3, 4, 1};
    for (int k = 0; k < 3; k++) {
        g = read_grad_f32(clipped[k]);
        for (int i = 0; i < 3; i++)
            cr_assert(fabs(g[i] - was[k] * coef) <= 1e-6, "gradient %d [%d]: %g, want %g", k,
                      i, g[i], was[k] * coef);
        free(g);
    }
    clt_tensor_free(norm);
    for (size_t k = 0; k < 5; k++)
        clt_tensor_free(leaves[k]);
    clt_tensor_free(w);
}

/* Forward, backward and an Adam step in a scope: after the first step, no
 * buffer is created on the device (the allocator serves every request from
 * its cache). */
Test(optim, step_allocates_nothing_after_the_first)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_module *l[3], *m;
    CHECK(clt_linear(dev, 16, 32, 1, gen, &l[0]));
    CHECK(clt_relu_layer(&l[1]));
    CHECK(clt_linear(dev, 32, 4, 1, gen, &l[2]));
    CHECK(clt_sequential(l, 3, &m));
    clt_tensor **ps, *x;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    clt_optimizer *opt;
    CHECK(clt_adam(ps, np, NULL, &opt));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, (int64_t[]){8, 16}, &x));
    clt_memory_stats s1, s2;
    for (int step = 0; step < 4; step++) {
        if (step == 1)
            CHECK(clt_memory_stats_get(dev, &s1));
        CHECK(clt_scope_begin());
        clt_tensor *y, *sq, *loss;
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_module_forward(m, x, &y));
        CHECK(clt_mul(y, y, &sq));
        CHECK(clt_mean(sq, &loss));
        CHECK(clt_backward(loss, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        clt_scope_end();
    }
    CHECK(clt_memory_stats_get(dev, &s2));
    cr_assert_eq(s2.device_allocs, s1.device_allocs, "%llu buffers created after step 1",
                 (unsigned long long)(s2.device_allocs - s1.device_allocs));
    cr_assert_gt(s2.alloc_calls, s1.alloc_calls);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_tensor_free(x);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* The same seed, data and program give bit-identical parameters after
 * several steps on two devices (PoCL's pthread and basic drivers): data
 * loader, MLP, log-softmax loss, backward and AdamW. */
static void train_steps(clt_device *dev, float *out, size_t n_out)
{
    enum { N = 96, I = 12 };
    float x[N * I];
    int64_t y[N];
    fill_random(x, N * I, 77);
    for (int i = 0; i < N; i++)
        y[i] = (i * 7) % 5;
    clt_generator *gen;
    CHECK(clt_generator_new(2024, &gen));
    clt_module *l[4], *m;
    CHECK(clt_linear(dev, I, 32, 1, gen, &l[0]));
    CHECK(clt_gelu_layer(&l[1]));
    CHECK(clt_dropout_layer(0.1, gen, &l[2]));
    CHECK(clt_linear(dev, 32, 5, 1, gen, &l[3]));
    CHECK(clt_sequential(l, 4, &m));
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    clt_optimizer *opt;
    CHECK(clt_adamw(ps, np, NULL, &opt));
    clt_array_spec xs = {x, CLT_FLOAT32, 2, (int64_t[]){N, I}};
    clt_array_spec ys = {y, CLT_INT64, 1, (int64_t[]){N}};
    clt_loader_opts lo = {16, 1, 3, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &xs, &ys, &lo, &dl));
    for (int epoch = 0; epoch < 2; epoch++) {
        int got;
        for (;;) {
            clt_tensor *xb, *yb, *o, *ls, *idx, *pick, *mean, *loss;
            CHECK(clt_scope_begin());
            CHECK(clt_dataloader_next(dl, &xb, &yb, &got));
            if (!got) {
                clt_scope_end();
                break;
            }
            CHECK(clt_module_forward(m, xb, &o));
            CHECK(clt_log_softmax(o, 1, &ls));
            CHECK(clt_unsqueeze(yb, 1, &idx));
            CHECK(clt_gather(ls, 1, idx, &pick));
            CHECK(clt_mean(pick, &mean));
            CHECK(clt_neg(mean, &loss));
            CHECK(clt_optimizer_zero_grad(opt, 1));
            CHECK(clt_backward(loss, NULL, 0));
            CHECK(clt_optimizer_step(opt));
            clt_scope_end();
        }
    }
    size_t at = 0;
    for (size_t k = 0; k < np; k++) {
        size_t cnt = (size_t)clt_tensor_numel(ps[k]);
        cr_assert_leq(at + cnt, n_out);
        CHECK(clt_tensor_read(ps[k], out + at, cnt * sizeof(float)));
        at += cnt;
    }
    cr_assert_eq(at, n_out);
    clt_dataloader_free(dl);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(optim, training_bit_identical_across_devices)
{
    enum { P = 12 * 32 + 32 + 32 * 5 + 5 };
    static float a[P], b[P], c[P];
    clt_device *d0 = get_device("cpu:0");
    train_steps(d0, a, P);
    train_steps(d0, c, P);
    cr_assert(memcmp(a, c, sizeof a) == 0, "two runs on one device differ");
    clt_device *d1 = second_device(d0);
    train_steps(d1, b, P);
    size_t diff = 0;
    for (size_t i = 0; i < P; i++)
        diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    cr_assert_eq(diff, 0, "%zu of %d parameters differ between %s and %s", diff, (int)P,
                 clt_device_label(d0), clt_device_label(d1));
}

long clt__pool_refuse_after(long pass); /* src/memory/pool.c */

/* Reads the n float32 values of a parameter (grad 0) or of its gradient. */
static void read_param(clt_tensor *p, int grad, float *out, size_t n)
{
    clt_tensor *g = NULL;
    if (grad)
        CHECK(clt_grad(p, &g));
    CHECK(clt_tensor_read(g ? g : p, out, n * sizeof *out));
    clt_tensor_free(g);
}

/* After the model moved to another device, a step first moves the
 * optimizer's state there.  Whichever of those buffer requests is refused,
 * the step fails with a message having changed no parameter and counted
 * no step; made again, it gives PyTorch's momentum update. */
Test(optim, refused_step_changes_nothing)
{
    clt_device *dev = get_device("cpu"), *dev1 = second_device(dev);
    enum { IN = 3, OUT = 2, NW = IN * OUT, NP = NW + OUT };
    const float xs[2 * IN] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f};
    const double lr = 0.1, mom = 0.9;
    long pass = 0;
    for (;; pass++) {
        clt_generator *gen;
        CHECK(clt_generator_new(11, &gen));
        clt_module *m;
        CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
        clt_tensor **ps;
        size_t np;
        CHECK(clt_module_parameters(m, &ps, &np));
        clt_sgd_opts so = {lr, mom, 0.0, 0.0, 0};
        clt_optimizer *opt;
        CHECK(clt_sgd(ps, np, &so, &opt));
        float p1[NP], g1[NP], g2[NP], now[NP];
        for (int step = 0; step < 2; step++) {
            clt_device *d = step ? dev1 : dev;
            clt_tensor *x, *y, *sq, *loss;
            CHECK(clt_scope_begin());
            CHECK(clt_tensor_from_host(d, CLT_FLOAT32, 2, (int64_t[]){2, IN}, xs, &x));
            CHECK(clt_optimizer_zero_grad(opt, 1));
            CHECK(clt_module_forward(m, x, &y));
            CHECK(clt_mul(y, y, &sq));
            CHECK(clt_sum(sq, &loss));
            CHECK(clt_backward(loss, NULL, 0));
            clt_scope_end();
            float *g = step ? g2 : g1;
            read_param(ps[0], 1, g, NW);
            read_param(ps[1], 1, g + NW, OUT);
            if (step == 0) {
                CHECK(clt_optimizer_step(opt));
                read_param(ps[0], 0, p1, NW);
                read_param(ps[1], 0, p1 + NW, OUT);
                CHECK(clt_module_to(m, dev1));
            }
        }
        clt__pool_refuse_after(pass);
        clt_status st = clt_optimizer_step(opt);
        bool named = strstr(clt_last_error(), "bytes in use") != NULL;
        bool fired = clt__pool_refuse_after(-1) < 0;
        if (fired) {
            cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
            cr_assert(named, "request %ld: the message names no sizes", pass);
            read_param(ps[0], 0, now, NW);
            read_param(ps[1], 0, now + NW, OUT);
            cr_assert(memcmp(now, p1, sizeof now) == 0,
                      "request %ld refused: the failed step changed a parameter", pass);
            cr_assert_eq(clt_optimizer_steps(opt), 1);
        }
        CHECK(fired ? clt_optimizer_step(opt) : st);
        cr_assert_eq(clt_optimizer_steps(opt), 2);
        read_param(ps[0], 0, now, NW);
        read_param(ps[1], 0, now + NW, OUT);
        for (int i = 0; i < NP; i++) {
            double buf = mom * g1[i] + g2[i], want = p1[i] - lr * buf;
            cr_assert_float_eq(now[i], want, 1e-5, "request %ld: [%d] %g, not %g", pass, i,
                               now[i], want);
        }
        clt_optimizer_free(opt);
        clt_free(ps);
        clt_module_free(m);
        clt_generator_free(gen);
        if (!fired)
            break;
    }
    cr_assert_geq(pass, 2, "only %ld requests in the step", pass);
}

long clt__driver_refuse_at(long pass); /* src/device/fault.c */

/* Parameters p[0..n) of dtypes dt[k] holding 1, 2, 3, 4 (times k + 1),
 * with the gradient of sum(p^2) / 2, which is p. */
static void params_with_grads(clt_device *dev, const clt_dtype *dt, size_t n, clt_tensor **p)
{
    for (size_t k = 0; k < n; k++) {
        const double h[4] = {1.0 * (k + 1), 2.0 * (k + 1), 3.0 * (k + 1), 4.0 * (k + 1)};
        clt_tensor *d, *sq, *half, *loss;
        clt_status st = clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){4}, h, &d);
        if (st == CLT_ERR_DTYPE_UNSUPPORTED)
            cr_skip_test("no float64 on %s", clt_device_label(dev));
        CHECK(st);
        CHECK(clt_to_dtype(d, dt[k], &p[k]));
        clt_tensor_free(d);
        CHECK(clt_set_requires_grad(p[k], 1));
        CHECK(clt_mul(p[k], p[k], &sq));
        CHECK(clt_mul_scalar(sq, 0.5, &half));
        CHECK(clt_sum(half, &loss));
        CHECK(clt_backward(loss, NULL, 0));
        clt_tensor_free(loss);
        clt_tensor_free(half);
        clt_tensor_free(sq);
    }
}

/* Parameter k's values as doubles; whether they are the start values
 * (updated 0) or those after one SGD step of rate 0.5 (updated 1). */
static bool holds(clt_tensor *p, size_t k, int updated)
{
    double got[4];
    clt_tensor *d;
    CHECK(clt_to_dtype(p, CLT_FLOAT64, &d));
    CHECK(clt_tensor_read(d, got, sizeof got));
    clt_tensor_free(d);
    for (int i = 0; i < 4; i++)
        if (got[i] != (i + 1.0) * (double)(k + 1) * (updated ? 0.5 : 1.0))
            return false;
    return true;
}

/* Failures of an SGD step, by where the driver failed. */
typedef struct step_failures {
    int builds;      /* building a program, before any update */
    int before;      /* anywhere before any update (builds included) */
    int mid;         /* in the update of a parameter after the first */
} step_failures;

/* Each driver call of an SGD step (rate 0.5) over parameters of dtypes
 * dt[0..n) fails in turn, from no program (the devices shut down, the
 * disk cache off during the step), so that the step builds its kernels;
 * the parameters' set-up loads its own from the cache.  A failure before any
 * update (a build, a kernel's creation) changes nothing; one in parameter
 * i's update says so, leaves those before it updated and it and those
 * after it not, as optim.h documents.  Neither counts the step, and the
 * next step finishes it, updating no parameter twice. */
static step_failures step_refusals(const clt_dtype *dt, size_t n, double momentum)
{
    static const char mid[] = "failed at parameter ";
    step_failures f = {0};
    /* Set before the devices start and only changed in value after: a
     * variable added or removed may move the environment while a driver
     * thread reads it. */
    setenv("CLTENSOR_CACHE", "1", 1);
    for (long pass = 0;; pass++) {
        clt_device *dev = get_device("cpu");
        clt_tensor *p[3];
        cr_assert_leq(n, 3);
        params_with_grads(dev, dt, n, p);
        clt_sgd_opts so = {0.5, momentum, 0.0, 0.0, 0};
        clt_optimizer *opt;
        CHECK(clt_sgd(p, n, &so, &opt));
        setenv("CLTENSOR_CACHE", "0", 1);
        clt__driver_refuse_at(pass);
        clt_status st = clt_optimizer_step(opt);
        long left = clt__driver_refuse_at(-1);
        setenv("CLTENSOR_CACHE", "1", 1);
        if (left < 0) {
            const char *m = clt_last_error(), *at = strstr(m, mid);
            cr_assert(st == CLT_ERR_OPENCL || st == CLT_ERR_OUT_OF_DEVICE_MEMORY,
                      "driver call %ld: %s: %s", pass, clt_status_name(st), m);
            cr_assert_eq(clt_last_cl_error(), -5, "driver call %ld: %s", pass, m);
            size_t stop = 0;
            if (at) {
                char tail[160];
                stop = strtoul(at + strlen(mid), NULL, 10);
                snprintf(tail, sizeof tail,
                         "%zu of %zu: the parameters before it were updated, it and those "
                         "after it were not, and the step was not counted",
                         stop, n);
                cr_assert(strstr(at, tail), "driver call %ld: %s", pass, m);
                f.mid += stop > 0;
            } else {
                f.before++;
                f.builds += strstr(m, "building cl/optim.cl") != NULL;
            }
            for (size_t k = 0; k < n; k++)
                cr_assert(holds(p[k], k, k < stop), "driver call %ld: parameter %zu: %s", pass,
                          k, m);
            cr_assert_eq(clt_optimizer_steps(opt), 0);
            CHECK(clt_optimizer_step(opt));
        } else {
            CHECK(st);
        }
        for (size_t k = 0; k < n; k++) /* momentum's first step: buf = g = p */
            cr_assert(holds(p[k], k, 1), "driver call %ld: the step is not SGD's", pass);
        cr_assert_eq(clt_optimizer_steps(opt), 1);
        clt_optimizer_free(opt);
        for (size_t k = 0; k < n; k++)
            clt_tensor_free(p[k]);
        clt_shutdown();
        if (left >= 0)
            break;
    }
    unsetenv("CLTENSOR_CACHE");
    return f;
}

/* A step built its kernels as it went: the float32 parameter was updated
 * before building the float64 kernel failed.  Every kernel is now built
 * before any update, so a failed build (of either kernel) changes nothing
 * and the step can be made again. */
Test(optim, failed_build_changes_nothing, .timeout = 300)
{
    const clt_dtype dt[2] = {CLT_FLOAT32, CLT_FLOAT64};
    step_failures f = step_refusals(dt, 2, 0.9);
    cr_assert_geq(f.builds, 2, "%d builds failed", f.builds);
}

/* The values of p as doubles into v (4 of them). */
static void read_as_double(clt_tensor *p, double *v)
{
    clt_tensor *d;
    CHECK(clt_to_dtype(p, CLT_FLOAT64, &d));
    CHECK(clt_tensor_read(d, v, 4 * sizeof *v));
    clt_tensor_free(d);
}

/* RMSprop (centered, momentum), Adagrad (lr_decay, initial accumulator),
 * Adamax, NAdam (whose mu_product moves only with an update) and RAdam
 * with the driver refusing each of its calls in turn, over a
 * float32 and a float64 parameter: the failure leaves the step count at 0,
 * and the step made again gives the bits of one step without the refusal
 * (every kernel built and the state moved first; a step stopped part-way
 * finished from the parameter it stopped at, none updated twice). */
Test(optim, rmsprop_and_adagrad_refused_step_made_again, .timeout = 300)
{
    const clt_dtype dt[2] = {CLT_FLOAT32, CLT_FLOAT64};
    const ref_opts kinds[] = {
        {.kind = 3, .lr = 0.01, .alpha = 0.9, .eps = 1e-8, .wd = 0.01, .momentum = 0.5,
         .centered = 1},
        {.kind = 4, .lr = 0.1, .eps = 1e-10, .lr_decay = 0.5, .init = 0.1},
        {.kind = 5, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .wd = 0.01},
        {.kind = 6, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .wd = 0.01,
         .momentum_decay = 0.5},
        {.kind = 7, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .wd = 0.01},
    };
    setenv("CLTENSOR_CACHE", "1", 1);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        double want[2][4], got[4];
        int refused = 0, builds = 0;
        for (long pass = -1;; pass++) {
            clt_device *dev = get_device("cpu");
            clt_tensor *p[2];
            params_with_grads(dev, dt, 2, p);
            clt_optimizer *opt;
            make_optimizer(&kinds[k], p, 2, &opt);
            setenv("CLTENSOR_CACHE", "0", 1);
            clt__driver_refuse_at(pass);
            clt_status st = clt_optimizer_step(opt);
            long left = clt__driver_refuse_at(-1);
            setenv("CLTENSOR_CACHE", "1", 1);
            if (left < 0 && pass >= 0) {
                cr_assert_neq(st, CLT_OK, "driver call %ld refused, the step succeeded", pass);
                cr_assert_eq(clt_optimizer_steps(opt), 0);
                /* refused before the first update (a build, say): nothing moved */
                char msg[512];
                snprintf(msg, sizeof msg, "%s", clt_last_error());
                bool before = strstr(msg, "failed at parameter ") == NULL;
                builds += before && strstr(msg, "building cl/optim.cl") != NULL;
                for (int j = 0; before && j < 2; j++) {
                    read_as_double(p[j], got);
                    for (int e = 0; e < 4; e++)
                        cr_assert_eq(got[e], (e + 1.0) * (j + 1), "kind %d, driver call %ld: "
                                     "parameter %d changed: %s", kinds[k].kind, pass, j, msg);
                }
                CHECK(clt_optimizer_step(opt));
                refused++;
            } else {
                CHECK(st);
            }
            cr_assert_eq(clt_optimizer_steps(opt), 1);
            for (int j = 0; j < 2; j++) {
                read_as_double(p[j], pass < 0 ? want[j] : got);
                if (pass >= 0)
                    cr_assert(memcmp(got, want[j], sizeof got) == 0,
                              "kind %d, driver call %ld: parameter %d is not one step's: "
                              "%.17g, want %.17g", kinds[k].kind, pass, j, got[0], want[j][0]);
            }
            clt_optimizer_free(opt);
            clt_tensor_free(p[0]);
            clt_tensor_free(p[1]);
            clt_shutdown();
            if (pass >= 0 && left >= 0)
                break;
        }
        cr_assert_geq(refused, 4, "kind %d: only %d driver calls refused", kinds[k].kind,
                      refused);
        cr_assert_geq(builds, 2, "kind %d: %d builds refused before the updates",
                      kinds[k].kind, builds);
    }
    unsetenv("CLTENSOR_CACHE");
}

/* What remains: the driver failing one update after others went through.
 * The message says which parameter, that those before it were updated and
 * that the step was not counted; the next step finishes it.  With one
 * launch per parameter (CLTENSOR_OPTIM=per_param) over three float32
 * parameters, and with SGD's launches over several parameters, where two
 * float32 parameters are one launch and a float64 one another. */
Test(optim, driver_failure_mid_step_says_where, .timeout = 300)
{
    const clt_dtype dt[3] = {CLT_FLOAT32, CLT_FLOAT32, CLT_FLOAT32};
    setenv("CLTENSOR_OPTIM", "per_param", 1); /* before the devices start */
    step_failures f = step_refusals(dt, 3, 0.0);
    cr_assert_geq(f.mid, 2, "%d failures after the first update", f.mid);
    cr_assert_geq(f.before, 1);
    const clt_dtype mixed[3] = {CLT_FLOAT32, CLT_FLOAT32, CLT_FLOAT64};
    setenv("CLTENSOR_OPTIM", "multi", 1);
    f = step_refusals(mixed, 3, 0.0);
    cr_assert_geq(f.mid, 1, "%d failures after the first launch", f.mid);
    cr_assert_geq(f.before, 1);
}

/* An optimizer made before clt_module_to_dtype keeps its state: the next
 * step converts the moments to the parameters' new dtype, and the updates
 * go on as if the whole run had been in float64 (against Adam on the host
 * in double, with the gradient of sum(x W^T + b), which is x for W and 1
 * for b).  A graph recorded before the conversion gives float64 gradients
 * also to parameters whose gradient was set to none, so the step never
 * sees a float32 gradient beside a float64 parameter.  A parameter of a
 * dtype the kernels lack (float16) is refused with a message, changing
 * nothing. */
Test(optim, state_follows_a_converted_model)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    clt_module *m;
    CHECK(clt_linear(dev, 2, 2, 1, gen, &m));
    clt_tensor **ps;
    size_t np;
    CHECK(clt_module_parameters(m, &ps, &np));
    cr_assert_eq(np, 2);
    double p[6], mo[6] = {0}, ve[6] = {0}, g[6] = {1, 2, 1, 2, 1, 1};
    float f[6];
    CHECK(clt_tensor_read(ps[0], f, 4 * sizeof *f));
    CHECK(clt_tensor_read(ps[1], f + 4, 2 * sizeof *f));
    for (int i = 0; i < 6; i++)
        p[i] = f[i];
    const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    clt_adam_opts ao = CLT_ADAM_DEFAULTS;
    ao.lr = lr;
    clt_optimizer *opt;
    CHECK(clt_adam(ps, np, &ao, &opt));
    clt_tensor *x32, *x64;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){1, 2}, (float[]){1, 2}, &x32));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){1, 2}, (double[]){1, 2}, &x64));
    for (int step = 1; step <= 4; step++) {
        clt_tensor *y, *loss;
        CHECK(clt_module_forward(m, step <= 3 ? x32 : x64, &y));
        CHECK(clt_sum(y, &loss));
        if (step == 3) /* the graph above is float32 */
            CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_backward(loss, NULL, 0));
        for (size_t k = 0; k < np; k++) {
            clt_tensor *gr;
            CHECK(clt_grad(ps[k], &gr));
            cr_assert_eq(clt_tensor_dtype(gr), step >= 3 ? CLT_FLOAT64 : CLT_FLOAT32,
                         "step %d: gradient %zu is %s", step, k,
                         clt_dtype_name(clt_tensor_dtype(gr)));
            clt_tensor_free(gr);
        }
        CHECK(clt_optimizer_step(opt));
        clt_tensor_free(y);
        clt_tensor_free(loss);
        double bc1 = 1 - pow(b1, step), bc2 = 1 - pow(b2, step);
        for (int i = 0; i < 6; i++) {
            mo[i] = b1 * mo[i] + (1 - b1) * g[i];
            ve[i] = b2 * ve[i] + (1 - b2) * g[i] * g[i];
            p[i] -= lr / bc1 * mo[i] / (sqrt(ve[i]) / sqrt(bc2) + eps);
        }
    }
    double now[6];
    cr_assert_eq(clt_tensor_dtype(ps[0]), CLT_FLOAT64);
    CHECK(clt_tensor_read(ps[0], now, 4 * sizeof *now));
    CHECK(clt_tensor_read(ps[1], now + 4, 2 * sizeof *now));
    for (int i = 0; i < 6; i++)
        cr_assert(close_enough(now[i], p[i], 1e-6, 1e-6), "[%d] %.9g, want %.9g", i, now[i],
                  p[i]);
    cr_assert_eq(clt_optimizer_steps(opt), 4);

    /* float16 parameters: the conversion works where the device holds
     * float16; the step then refuses them */
    if (clt_device_supports_dtype(dev, CLT_FLOAT16)) {
        CHECK(clt_module_to_dtype(m, CLT_FLOAT16));
        cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_DTYPE_UNSUPPORTED);
        cr_assert(strstr(clt_last_error(), "clt_optimizer_step: parameter 0 is float16"), "%s",
                  clt_last_error());
        cr_assert_eq(clt_optimizer_steps(opt), 4);
        CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    } else {
        cr_assert_eq(clt_module_to_dtype(m, CLT_FLOAT16), CLT_ERR_DTYPE_UNSUPPORTED, "%s",
                     clt_last_error());
    }
    double again[6];
    CHECK(clt_tensor_read(ps[0], again, 4 * sizeof *again));
    CHECK(clt_tensor_read(ps[1], again + 4, 2 * sizeof *again));
    for (int i = 0; i < 6; i++) /* float16 rounds these; the refused step changed nothing */
        cr_assert(close_enough(again[i], now[i], 1e-3, 1e-3), "[%d] %g, was %g", i, again[i],
                  now[i]);
    clt_optimizer_free(opt);
    clt_free(ps);
    clt_tensor_free(x32);
    clt_tensor_free(x64);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* An SGD(lr) over one float32 parameter of 3 zeros, for the schedules. */
static clt_optimizer *sgd_at(clt_tensor **p, double lr)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, p));
    CHECK(clt_set_requires_grad(*p, 1));
    clt_sgd_opts so = CLT_SGD_DEFAULTS;
    so.lr = lr;
    clt_optimizer *opt;
    CHECK(clt_sgd(p, 1, &so, &opt));
    return opt;
}

/* OneCycleLR's rate at step e, written out from its definition: up from
 * initial = max_lr / div over the phase ending at pct * total - 1, then
 * down to initial / final_div at total - 1 (three phases: up, down to
 * initial at 2 pct total - 2, then to the minimum). */
/* torch's OneCycleLR phases at step e, from a to b then to c (three: a to
 * b, back to a, then to c): the rates go initial -> max -> min, the
 * momenta max_momentum -> base_momentum -> max_momentum. */
static double one_cycle_anneal(double a, double b, double c, int64_t total, double pct,
                               int linear, int three, int64_t e)
{
    double ends[3] = {pct * (double)total - 1, 0, 0}, from[3], to[3];
    int n = three ? 3 : 2;
    if (three) {
        ends[1] = 2 * pct * (double)total - 2;
        ends[2] = (double)(total - 1);
        from[0] = a, to[0] = b, from[1] = b, to[1] = a;
        from[2] = a, to[2] = c;
    } else {
        ends[1] = (double)(total - 1);
        from[0] = a, to[0] = b, from[1] = b, to[1] = c;
    }
    double start = 0;
    int k = 0;
    while (k < n - 1 && (double)e > ends[k])
        start = ends[k++];
    double t = ((double)e - start) / (ends[k] - start);
    return linear ? (to[k] - from[k]) * t + from[k]
                  : to[k] + (from[k] - to[k]) / 2.0 * (cos(M_PI * t) + 1);
}

static double one_cycle_ref(double max_lr, int64_t total, double pct, int linear, double div,
                            double final_div, int three, int64_t e)
{
    double initial = max_lr / div;
    return one_cycle_anneal(initial, max_lr, initial / final_div, total, pct, linear, three, e);
}

/* OneCycleLR's momentum cycling against torch 1.13 (its momenta printed
 * with repr) and the phases written out above: an SGD made without
 * momentum (and dampening 0.25), stepped twice before the schedule, gains
 * it: its buffer starts at the gradient at its first use (torch's buf =
 * grad), then buf = m buf + (1 - dampening) g with the momentum of the
 * step, p -= lr buf, against a float64 host reference; Adam's betas[0]
 * cycles (three phases, linear); Adagrad, momenta out of range are
 * refused, the optimizer unchanged. */
Test(optim, one_cycle_cycles_momentum_as_torch)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on this device");
    static const double torch_sgd[] = {0.9, 0.8, 0.8066987298107781, 0.8250000000000001,
                                       0.8500000000000001, 0.875, 0.893301270189222, 0.9,
                                       0.893301270189222};
    static const double torch_adam[] = {0.95, 0.8944444444444444, 0.861111111111111,
                                        0.9166666666666666, 0.95, 0.95, 0.95, 0.95};
    enum { N = 4 };
    double host[N] = {1.0, -0.5, 2.0, 0.25}, buf[N];
    clt_tensor *p = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){N}, host, &p));
    CHECK(clt_set_requires_grad(p, 1));
    clt_optimizer *opt;
    clt_lr_scheduler *s;
    const double damp = 0.25;
    CHECK(clt_sgd(&p, 1, &(clt_sgd_opts){0.1, 0, damp, 0, 0}, &opt));
    /* loss sum(p^2) / 2: the gradient is p */
    for (int e = 0; e < 10; e++) {
        if (e == 2) {
            CHECK(clt_one_cycle_lr_momentum(opt, 0.2, 8, 0.25, NULL, 10, 100, 0, 1, 0.8, 0.9,
                                            &s));
        }
        double lr = clt_optimizer_lr(opt), m = clt_optimizer_momentum(opt);
        if (e >= 2) {
            int64_t k = e - 2;
            double want_lr = one_cycle_ref(0.2, 8, 0.25, 0, 10, 100, 0, k);
            double want_m = one_cycle_anneal(0.9, 0.8, 0.9, 8, 0.25, 0, 0, k);
            cr_assert(m == torch_sgd[k] && m == want_m, "step %d: momentum %.17g, torch %.17g, "
                      "the phases %.17g", e, m, torch_sgd[k], want_m);
            cr_assert(lr == (want_lr < 0 ? 0 : want_lr), "step %d: %.17g vs %.17g", e, lr,
                      want_lr);
        } else {
            cr_assert(lr == 0.1 && m == 0.0);
        }
        clt_tensor *sq, *l;
        CHECK(clt_mul(p, p, &sq));
        CHECK(clt_sum(sq, &l));
        clt_tensor *half;
        CHECK(clt_mul_scalar(l, 0.5, &half));
        CHECK(clt_optimizer_zero_grad(opt, 1));
        CHECK(clt_backward(half, NULL, 0));
        CHECK(clt_optimizer_step(opt));
        for (int i = 0; i < N; i++) {
            double g = host[i];
            if (m != 0.0)
                buf[i] = e == 2 ? g : buf[i] * m + (1 - damp) * g;
            host[i] -= lr * (m != 0.0 ? buf[i] : g);
        }
        double got[N];
        CHECK(clt_tensor_read(p, got, sizeof got));
        for (int i = 0; i < N; i++)
            cr_assert(close_enough(got[i], host[i], 1e-14, 1e-15), "step %d: p[%d] %.17g vs %.17g",
                      e, i, got[i], host[i]);
        clt_tensor_free(sq);
        clt_tensor_free(l);
        clt_tensor_free(half);
        if (e >= 2 && e < 9)
            CHECK(clt_lr_scheduler_step(s));
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);

    /* Adam's betas[0], beta2 untouched */
    clt_adam_opts ao = CLT_ADAM_DEFAULTS;
    CHECK(clt_adam(&p, 1, &ao, &opt));
    CHECK(clt_one_cycle_lr_momentum(opt, 0.2, 7, 0.4, "linear", 25, 1e4, 1, 1, 0.85, 0.95, &s));
    for (int e = 0; e < 8; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        double m = clt_optimizer_momentum(opt),
               want = one_cycle_anneal(0.95, 0.85, 0.95, 7, 0.4, 1, 1, e);
        cr_assert(m == torch_adam[e] && m == want, "Adam step %d: beta1 %.17g, torch %.17g, the "
                  "phases %.17g", e, m, torch_adam[e], want);
    }
    clt_lr_scheduler_free(s);
    /* refusals change nothing */
    double lr = clt_optimizer_lr(opt), m = clt_optimizer_momentum(opt);
    s = (clt_lr_scheduler *)&s;
    assert_error(clt_one_cycle_lr_momentum(opt, 0.2, 7, 0.4, NULL, 25, 1e4, 0, 1, 0.85, 1.0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "must be momenta Adam accepts");
    cr_assert_null(s);
    cr_assert(clt_optimizer_lr(opt) == lr && clt_optimizer_momentum(opt) == m);
    clt_optimizer_free(opt);
    CHECK(clt_adagrad(&p, 1, NULL, &opt));
    assert_error(clt_one_cycle_lr_momentum(opt, 0.2, 7, 0.4, NULL, 25, 1e4, 0, 1, 0.85, 0.95, &s),
                 CLT_ERR_INVALID_ARGUMENT,
                 "optimizer must support momentum with `cycle_momentum` option enabled");
    CHECK(clt_one_cycle_lr_momentum(opt, 0.2, 7, 0.4, NULL, 25, 1e4, 0, 0, 0.85, 0.95, &s));
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    CHECK(clt_sgd(&p, 1, NULL, &opt));
    assert_error(clt_one_cycle_lr_momentum(opt, 0.2, 7, 0.4, NULL, 25, 1e4, 0, 1, -0.1, 0.95, &s),
                 CLT_ERR_INVALID_ARGUMENT, "finite and >= 0");
    cr_assert(clt_optimizer_lr(opt) == 1e-3 && clt_optimizer_momentum(opt) == 0.0);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

Test(optim, one_cycle_schedule)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1);
    clt_lr_scheduler *s;
    /* torch 1.13's OneCycleLR(cycle_momentum=False) rates, printed with
     * repr: (max_lr=0.5, total_steps=10); (0.2, 12, pct_start=0.25,
     * 'linear', div_factor=10, final_div_factor=100, three_phase=True), whose
     * step 12 torch makes -0.002628571428571428 (here 0); (1.0, 7, 0.4,
     * three_phase=True) */
    static const double cos2[] = {0.020000000000000018, 0.26, 0.5, 0.47524231600673683,
                                  0.40587282697488153, 0.30563101096814466,
                                  0.19437098903185537, 0.09412917302511849,
                                  0.024759683993263143, 2e-06, 0.024759683993263115};
    static const double lin3[] = {0.02, 0.11000000000000001, 0.2, 0.11, 0.01999999999999999,
                                  0.017171428571428574, 0.014342857142857143,
                                  0.011514285714285715, 0.008685714285714286,
                                  0.005857142857142856, 0.003028571428571429,
                                  0.0001999999999999988, 0.0};
    static const double cos3[] = {0.040000000000000036, 0.6033511252801265, 0.971052457977236,
                                  0.2800000000000003, 0.03732077602488121,
                                  0.014826136736039799, 4e-06, 0.014826136736039795};
    static const struct {
        double max_lr;
        int64_t total;
        double pct;
        const char *strategy;
        double div, final_div;
        int three;
        const double *want;
    } cases[] = {
        {0.5, 10, 0.3, NULL, 25, 1e4, 0, cos2},
        {0.2, 12, 0.25, "linear", 10, 100, 1, lin3},
        {1.0, 7, 0.4, "cos", 25, 1e4, 1, cos3},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK(clt_optimizer_set_lr(opt, 0.1));
        CHECK(clt_one_cycle_lr(opt, cases[c].max_lr, cases[c].total, cases[c].pct,
                               cases[c].strategy, cases[c].div, cases[c].final_div,
                               cases[c].three, &s));
        int linear = cases[c].strategy && strcmp(cases[c].strategy, "linear") == 0;
        for (int64_t e = 0; e <= cases[c].total; e++) {
            if (e > 0)
                CHECK(clt_lr_scheduler_step(s));
            double lr = clt_optimizer_lr(opt), want = cases[c].want[e];
            double ref = one_cycle_ref(cases[c].max_lr, cases[c].total, cases[c].pct, linear,
                                       cases[c].div, cases[c].final_div, cases[c].three, e);
            cr_assert(lr == want, "case %zu, step %lld: %.17g vs torch's %.17g", c,
                      (long long)e, lr, want);
            cr_assert(lr == (ref < 0 ? 0 : ref), "case %zu, step %lld: %.17g vs %.17g", c,
                      (long long)e, lr, ref);
            cr_assert_eq(clt_lr_scheduler_epoch(s), e);
        }
        /* past total_steps: torch's refusal, nothing changed */
        double last = clt_optimizer_lr(opt);
        char needle[128];
        snprintf(needle, sizeof needle,
                 "Tried to step %lld times. The specified number of total steps is %lld",
                 (long long)cases[c].total + 2, (long long)cases[c].total);
        assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT, needle);
        cr_assert_eq(clt_lr_scheduler_epoch(s), cases[c].total);
        cr_assert_eq(clt_optimizer_lr(opt), last);
        assert_error(clt_lr_scheduler_step_metric(s, 1.0), CLT_ERR_INVALID_ARGUMENT,
                     "OneCycleLR takes no metric (only ReduceLROnPlateau does)");
        clt_lr_scheduler_free(s);
    }
    /* a long run, against the formula only */
    CHECK(clt_one_cycle_lr(opt, 3e-3, 1000, 0.15, "cos", 7, 300, 0, &s));
    for (int64_t e = 1; e <= 1000; e++) {
        CHECK(clt_lr_scheduler_step(s));
        double ref = one_cycle_ref(3e-3, 1000, 0.15, 0, 7, 300, 0, e);
        cr_assert(clt_optimizer_lr(opt) == ref, "step %lld: %.17g vs %.17g", (long long)e,
                  clt_optimizer_lr(opt), ref);
    }
    clt_lr_scheduler_free(s);

    /* refused, nothing made, the rate untouched */
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    s = (clt_lr_scheduler *)&s;
    assert_error(clt_one_cycle_lr(opt, 0.5, 10, 1.5, NULL, 25, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "Expected float between 0 and 1 pct_start, but got 1.5");
    cr_assert_null(s);
    assert_error(clt_one_cycle_lr(opt, 0.5, 0, 0.3, NULL, 25, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "Expected positive integer total_steps, but got 0");
    /* the last phase's end, total_steps - 1, computed without overflowing */
    assert_error(clt_one_cycle_lr(opt, 0.5, INT64_MIN, 0.3, NULL, 25, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT,
                 "Expected positive integer total_steps, but got -9223372036854775808");
    assert_error(clt_one_cycle_lr(opt, 0.5, 10, 0.3, "exp", 25, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "anneal_strategy 'exp' is unknown");
    assert_error(clt_one_cycle_lr(opt, 0.5, 10, 0.3, NULL, 0, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "div_factor 0 and final_div_factor 10000");
    assert_error(clt_one_cycle_lr(opt, -0.5, 10, 0.3, NULL, 25, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "invalid max_lr -0.5");
    /* pct_start 0.1 of 10 steps: the first phase ends at step 0, where
     * torch divides by zero */
    assert_error(clt_one_cycle_lr(opt, 0.5, 10, 0.1, NULL, 25, 1e4, 0, &s),
                 CLT_ERR_INVALID_ARGUMENT, "phase 0 of OneCycleLR, which has no length");
    assert_error(clt_one_cycle_lr(NULL, 0.5, 10, 0.3, NULL, 25, 1e4, 0, &s),
                 CLT_ERR_NULL_ARGUMENT, "clt_one_cycle_lr");
    cr_assert_null(s);
    cr_assert_eq(clt_optimizer_lr(opt), 0.1);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* ReduceLROnPlateau written out from torch's step(metrics). */
typedef struct plateau_ref {
    int max, abs;
    double factor, threshold, min_lr, eps, best, lr;
    int64_t patience, cooldown, counter, bad;
} plateau_ref;

static void plateau_ref_step(plateau_ref *r, double m)
{
    bool better = r->max ? (r->abs ? m > r->best + r->threshold
                                   : m > r->best * (1 + r->threshold))
                         : (r->abs ? m < r->best - r->threshold
                                   : m < r->best * (1 - r->threshold));
    r->bad = better ? 0 : r->bad + 1;
    if (better)
        r->best = m;
    if (r->counter > 0) {
        r->counter--;
        r->bad = 0;
    }
    if (r->bad > r->patience) {
        double lr = fmax(r->lr * r->factor, r->min_lr);
        if (r->lr - lr > r->eps)
            r->lr = lr;
        r->counter = r->cooldown;
        r->bad = 0;
    }
}

Test(optim, reduce_lr_on_plateau)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 1.0);
    clt_lr_scheduler *s;
    /* torch 1.13's rates: (patience=2, cooldown=1, factor=0.5); ('max',
     * patience=1, threshold=0.1, 'abs', factor=0.1, min_lr=0.005) */
    static const double m1[] = {5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3};
    static const double t1[] = {1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25};
    static const double m2[] = {1, 2, 2.0001, 2.0001, 2.5, 2.5, 2.5};
    static const double t2[] = {1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.010000000000000002};
    CHECK(clt_reduce_lr_on_plateau(opt, NULL, 0.5, 2, 1e-4, NULL, 1, 0, 1e-8, &s));
    cr_assert_eq(clt_optimizer_lr(opt), 1.0, "made, it changed the rate");
    for (int e = 0; e < 11; e++) {
        CHECK(clt_lr_scheduler_step_metric(s, m1[e]));
        cr_assert_eq(clt_optimizer_lr(opt), t1[e], "epoch %d: %.17g", e, clt_optimizer_lr(opt));
    }
    cr_assert_eq(clt_lr_scheduler_epoch(s), 11);
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT,
                 "ReduceLROnPlateau steps on a metric: call clt_lr_scheduler_step_metric");
    cr_assert_eq(clt_lr_scheduler_epoch(s), 11);
    clt_lr_scheduler_free(s);
    CHECK(clt_optimizer_set_lr(opt, 1.0));
    CHECK(clt_reduce_lr_on_plateau(opt, "max", 0.1, 1, 0.1, "abs", 0, 0.005, 1e-8, &s));
    for (int e = 0; e < 7; e++) {
        CHECK(clt_lr_scheduler_step_metric(s, m2[e]));
        cr_assert_eq(clt_optimizer_lr(opt), t2[e], "epoch %d: %.17g", e, clt_optimizer_lr(opt));
    }
    clt_lr_scheduler_free(s);

    /* every mode against the host's, over a noisy metric with plateaus and
     * a NaN (never better), min_lr reached, and an eps that stops decays */
    static const struct {
        const char *mode, *tmode;
        double factor;
        int64_t patience;
        double threshold;
        int64_t cooldown;
        double min_lr, eps;
    } cases[] = {
        {"min", "rel", 0.1, 10, 1e-4, 0, 0, 1e-8},  {"min", "abs", 0.5, 2, 0.05, 3, 1e-3, 1e-8},
        {"max", "rel", 0.3, 0, 0.01, 1, 0, 1e-8},   {"max", "abs", 0.9, 3, 0.0, 0, 0.2, 0.05},
        {"min", "rel", 0.0, 1, 0.5, 2, 0.01, 0.0}, {"min", "abs", 0.7, 0, 1e-3, 0, 0, 0.3},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int max = strcmp(cases[c].mode, "max") == 0;
        plateau_ref r = {max, strcmp(cases[c].tmode, "abs") == 0, cases[c].factor,
                         cases[c].threshold, cases[c].min_lr, cases[c].eps,
                         max ? -INFINITY : INFINITY, 1.0, cases[c].patience, cases[c].cooldown,
                         0, 0};
        CHECK(clt_optimizer_set_lr(opt, 1.0));
        CHECK(clt_reduce_lr_on_plateau(opt, cases[c].mode, cases[c].factor, cases[c].patience,
                                       cases[c].threshold, cases[c].tmode, cases[c].cooldown,
                                       cases[c].min_lr, cases[c].eps, &s));
        unsigned x = 12345u + (unsigned)c;
        int changes = 0;
        for (int e = 0; e < 200; e++) {
            x = x * 1103515245u + 12345u;
            double m = (e % 37 == 20) ? NAN : 1.0 / (1 + e / 15) + (double)(x >> 16 & 1023) / 1e5;
            if (max)
                m = -m;
            double before = r.lr;
            plateau_ref_step(&r, m);
            changes += r.lr != before;
            CHECK(clt_lr_scheduler_step_metric(s, m));
            cr_assert_eq(clt_optimizer_lr(opt), r.lr, "case %zu, epoch %d: %.17g vs %.17g", c,
                         e, clt_optimizer_lr(opt), r.lr);
        }
        cr_assert(changes > 0, "case %zu never decayed: the test tests nothing", c);
        clt_lr_scheduler_free(s);
    }

    /* refused, nothing made */
    s = (clt_lr_scheduler *)&s;
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 1.0, 10, 1e-4, NULL, 0, 0, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "factor 1: Factor should be < 1.0");
    cr_assert_null(s);
    assert_error(clt_reduce_lr_on_plateau(opt, "mid", 0.1, 10, 1e-4, NULL, 0, 0, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "mode 'mid' is unknown");
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 0.1, 10, 1e-4, "ratio", 0, 0, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "threshold_mode 'ratio' is unknown");
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 0.1, -1, 1e-4, NULL, 0, 0, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "patience (-1)");
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 0.1, 10, 1e-4, NULL, -2, 0, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "cooldown (-2)");
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 0.1, 10, 1e-4, NULL, 0, -1, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "invalid min_lr -1");
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 0.1, 10, 1e-4, NULL, 0, 0, NAN, &s),
                 CLT_ERR_INVALID_ARGUMENT, "invalid eps nan");
    assert_error(clt_reduce_lr_on_plateau(opt, NULL, 0.1, 10, NAN, NULL, 0, 0, 1e-8, &s),
                 CLT_ERR_INVALID_ARGUMENT, "invalid threshold nan");
    cr_assert_null(s);
    assert_error(clt_lr_scheduler_step_metric(NULL, 1.0), CLT_ERR_NULL_ARGUMENT,
                 "clt_lr_scheduler_step_metric");
    CHECK(clt_step_lr(opt, 2, 0.5, &s));
    assert_error(clt_lr_scheduler_step_metric(s, 1.0), CLT_ERR_INVALID_ARGUMENT,
                 "StepLR takes no metric");
    cr_assert_eq(clt_lr_scheduler_epoch(s), 0);
    /* a step that succeeds after a refused one leaves no message behind */
    CHECK(clt_lr_scheduler_step(s));
    cr_assert_str_empty(clt_last_error());
    cr_assert_eq(clt_lr_scheduler_epoch(s), 1);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* Gives p the gradient g (released here): backward of sum(p * g). */
static void give_grad(clt_tensor *p, clt_tensor *g)
{
    clt_tensor *pg, *loss;
    CHECK(clt_mul(p, g, &pg));
    CHECK(clt_sum(pg, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    clt_tensor_free(pg);
    clt_tensor_free(g);
}

/* clip_grad_value_ over a float64 and a float32 gradient holding NaN and
 * +-inf, against clamping written here (NaN stays, inf becomes the bound,
 * as torch.clamp); a parameter without a gradient is skipped. */
Test(optim, clip_grad_value)
{
    clt_device *dev = get_device("cpu");
    static const double g64[6] = {0.3, -2.5, NAN, INFINITY, -INFINITY, 1.0};
    static const float g32[4] = {-0.99f, 1.01f, NAN, -1e30f};
    clt_tensor *p64, *p32, *q, *g;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 1, (int64_t[]){6}, &p64));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, &p32));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){2}, &q));
    clt_tensor *ps[3] = {p64, q, p32};
    for (int k = 0; k < 3; k++)
        CHECK(clt_set_requires_grad(ps[k], 1));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){6}, g64, &g));
    give_grad(p64, g);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, g32, &g));
    give_grad(p32, g);

    /* refused first: nothing changes */
    assert_error(clt_clip_grad_value(ps, 3, -1.0), CLT_ERR_INVALID_ARGUMENT,
                 "clt_clip_grad_value: invalid clip_value -1");
    assert_error(clt_clip_grad_value(ps, 3, NAN), CLT_ERR_INVALID_ARGUMENT,
                 "invalid clip_value nan");
    assert_error(clt_clip_grad_value(NULL, 3, 1.0), CLT_ERR_NULL_ARGUMENT, "clt_clip_grad_value");
    clt_tensor *withnull[2] = {p64, NULL};
    assert_error(clt_clip_grad_value(withnull, 2, 1.0), CLT_ERR_NULL_ARGUMENT,
                 "parameter 1 is NULL");
    CHECK(clt_clip_grad_value(ps, 3, INFINITY)); /* clips nothing */
    double r64[6];
    float r32[4];
    CHECK(clt_grad(p64, &g));
    CHECK(clt_tensor_read(g, r64, sizeof r64));
    clt_tensor_free(g);
    cr_assert(memcmp(r64, g64, sizeof r64) == 0, "a refusal or inf changed the gradient");

    const double c = 1.0;
    CHECK(clt_clip_grad_value(ps, 3, c));
    CHECK(clt_grad(p64, &g));
    CHECK(clt_tensor_read(g, r64, sizeof r64));
    clt_tensor_free(g);
    for (int i = 0; i < 6; i++) {
        double want = isnan(g64[i]) ? NAN : g64[i] < -c ? -c : g64[i] > c ? c : g64[i];
        cr_assert(isnan(want) ? isnan(r64[i]) : r64[i] == want, "float64 %d: %g vs %g", i,
                  r64[i], want);
    }
    CHECK(clt_grad(p32, &g));
    CHECK(clt_tensor_read(g, r32, sizeof r32));
    clt_tensor_free(g);
    for (int i = 0; i < 4; i++) {
        float want = isnan(g32[i]) ? NAN : g32[i] < -1.0f ? -1.0f : g32[i] > 1.0f ? 1.0f : g32[i];
        cr_assert(isnan(want) ? isnan(r32[i]) : r32[i] == want, "float32 %d: %g vs %g", i,
                  r32[i], want);
    }
    CHECK(clt_grad(q, &g));
    cr_assert_null(g, "a parameter without a gradient got one");
    /* the same gradient twice is clamped twice: the same values; and zero */
    clt_tensor *twice[2] = {p32, p32};
    CHECK(clt_clip_grad_value(twice, 2, 0.5));
    CHECK(clt_grad(p32, &g));
    CHECK(clt_tensor_read(g, r32, sizeof r32));
    clt_tensor_free(g);
    cr_assert(r32[0] == -0.5f && r32[1] == 0.5f && isnan(r32[2]) && r32[3] == -0.5f);
    CHECK(clt_clip_grad_value(ps, 3, 0.0));
    CHECK(clt_grad(p64, &g));
    CHECK(clt_tensor_read(g, r64, sizeof r64));
    clt_tensor_free(g);
    cr_assert(r64[0] == 0 && r64[1] == 0 && isnan(r64[2]) && r64[3] == 0 && r64[5] == 0);
    CHECK(clt_clip_grad_value(NULL, 0, 1.0)); /* none: nothing to do */
    for (int k = 0; k < 3; k++)
        clt_tensor_free(ps[k]);
}

/* ---- warm-up schedules and schedules of schedules ---------------------------------------- */

/* Steps s epochs times (s stepping first where e > 0) and compares the
 * rate with want[e], torch 1.13's printed with repr, bit for bit. */
static void check_torch_rates(clt_lr_scheduler *s, const clt_optimizer *opt, const double *want,
                              int epochs, const char *what)
{
    for (int e = 0; e <= epochs; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        cr_assert(clt_optimizer_lr(opt) == want[e], "%s, epoch %d: %.17g, torch %.17g", what, e,
                  clt_optimizer_lr(opt), want[e]);
    }
}

/* lr_lambdas: 0.95^epoch, (epoch + 1) / 4, 0.9, and one failing (NaN) from
 * epoch *user on; `calls` counts them. */
static int lambda_calls;
static double decay095(void *user, int64_t e)
{
    (void)user;
    lambda_calls++;
    return pow(0.95, (double)e);
}
static double quarter_ramp(void *user, int64_t e)
{
    (void)user;
    return (double)(e + 1) / 4;
}
static double times09(void *user, int64_t e)
{
    (void)user;
    (void)e;
    return 0.9;
}
static double fails_from(void *user, int64_t e)
{
    return e >= *(int64_t *)user ? NAN : 0.5;
}
static double negative(void *user, int64_t e)
{
    (void)user;
    return e >= 2 ? -1.0 : 1.0;
}

Test(optim, lambda_and_multiplicative_lr)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1);
    clt_lr_scheduler *s;
    lambda_calls = 0;
    CHECK(clt_lambda_lr(opt, decay095, NULL, &s));
    cr_assert_eq(lambda_calls, 1); /* epoch 0, in the constructor */
    for (int e = 0; e <= 30; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        cr_assert(clt_optimizer_lr(opt) == 0.1 * pow(0.95, e), "epoch %d: %.17g", e,
                  clt_optimizer_lr(opt));
    }
    /* the rate set by hand: LambdaLR goes from initial_lr all the same */
    CHECK(clt_optimizer_set_lr(opt, 5.0));
    CHECK(clt_lr_scheduler_step(s));
    cr_assert(clt_optimizer_lr(opt) == 0.1 * pow(0.95, 31));
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    static const double torch_mult[] = {0.1, 0.09000000000000001, 0.08100000000000002,
                                        0.07290000000000002, 0.06561000000000002,
                                        0.05904900000000002, 0.05314410000000002};
    opt = sgd_at(&p, 0.1);
    CHECK(clt_multiplicative_lr(opt, times09, NULL, &s));
    check_torch_rates(s, opt, torch_mult, 6, "MultiplicativeLR(0.9)");
    clt_lr_scheduler_free(s);

    /* a callback's failure is refused, the schedule and the rate as they were */
    int64_t from = 3;
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    CHECK(clt_multiplicative_lr(opt, fails_from, &from, &s));
    CHECK(clt_lr_scheduler_step(s));
    CHECK(clt_lr_scheduler_step(s));
    cr_assert(clt_optimizer_lr(opt) == 0.1 * 0.5 * 0.5);
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT,
                 "clt_lr_scheduler_step: MultiplicativeLR's lr_lambda failed at epoch 3");
    cr_assert(clt_optimizer_lr(opt) == 0.1 * 0.5 * 0.5 && clt_lr_scheduler_epoch(s) == 2);
    from = 100; /* the callback works again: the step goes on from epoch 3 */
    CHECK(clt_lr_scheduler_step(s));
    cr_assert(clt_optimizer_lr(opt) == 0.1 * 0.5 * 0.5 * 0.5 && clt_lr_scheduler_epoch(s) == 3);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    /* failing in the constructor: no schedule, the rate and initial_lr untouched */
    opt = sgd_at(&p, 0.1);
    from = 0;
    s = (clt_lr_scheduler *)&from;
    assert_error(clt_lambda_lr(opt, fails_from, &from, &s), CLT_ERR_INVALID_ARGUMENT,
                 "clt_lambda_lr: LambdaLR's lr_lambda failed at epoch 0 (it gave nan");
    cr_assert_null(s);
    cr_assert(clt_optimizer_lr(opt) == 0.1);
    /* a negative factor gives a rate refused */
    CHECK(clt_lambda_lr(opt, negative, NULL, &s));
    CHECK(clt_lr_scheduler_step(s));
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT, "invalid learning rate: -0.1");
    cr_assert(clt_optimizer_lr(opt) == 0.1 && clt_lr_scheduler_epoch(s) == 1);
    clt_lr_scheduler_free(s);
    assert_error(clt_lambda_lr(opt, NULL, NULL, &s), CLT_ERR_NULL_ARGUMENT, "clt_lambda_lr");
    cr_assert_null(s);
    assert_error(clt_multiplicative_lr(NULL, times09, NULL, &s), CLT_ERR_NULL_ARGUMENT,
                 "clt_multiplicative_lr");
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

Test(optim, constant_and_polynomial_lr)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1);
    clt_lr_scheduler *s;
    /* alone: torch's closed forms, written out */
    CHECK(clt_constant_lr(opt, 0.25, 4, &s));
    for (int e = 0; e <= 12; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        double want = 0.1 * (0.25 + (e >= 4 ? 1 - 0.25 : 0.0));
        cr_assert(clt_optimizer_lr(opt) == want, "ConstantLR epoch %d: %.17g", e,
                  clt_optimizer_lr(opt));
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    opt = sgd_at(&p, 0.1);
    CHECK(clt_polynomial_lr(opt, 7, 1.5, &s));
    for (int e = 0; e <= 12; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        double want = 0.1 * pow(1.0 - (double)(e < 7 ? e : 7) / 7, 1.5);
        cr_assert(clt_optimizer_lr(opt) == want, "PolynomialLR epoch %d: %.17g", e,
                  clt_optimizer_lr(opt));
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    /* two on one optimizer: torch's chainable forms, printed */
    static const double torch_cp[] = {0.05, 0.035777087639996645, 0.023237900077244505,
                                      0.025298221281347042, 0.008944271909999158, 0.0, 0.0,
                                      0.0, 0.0};
    clt_lr_scheduler *s2;
    opt = sgd_at(&p, 0.1);
    CHECK(clt_constant_lr(opt, 0.5, 3, &s));
    CHECK(clt_polynomial_lr(opt, 5, 1.5, &s2));
    for (int e = 0; e <= 8; e++) {
        if (e > 0) {
            CHECK(clt_lr_scheduler_step(s));
            CHECK(clt_lr_scheduler_step(s2));
        }
        cr_assert(clt_optimizer_lr(opt) == torch_cp[e], "epoch %d: %.17g, torch %.17g", e,
                  clt_optimizer_lr(opt), torch_cp[e]);
    }
    clt_lr_scheduler_free(s);
    clt_lr_scheduler_free(s2);

    /* refusals */
    assert_error(clt_constant_lr(opt, 1.5, 5, &s), CLT_ERR_INVALID_ARGUMENT,
                 "clt_constant_lr: factor 1.5: Constant multiplicative factor expected to be "
                 "between 0 and 1");
    cr_assert_null(s);
    assert_error(clt_constant_lr(opt, 0.0, 5, &s), CLT_ERR_INVALID_ARGUMENT, "divides by it");
    assert_error(clt_constant_lr(opt, 0.5, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "total_iters must be positive, not 0");
    assert_error(clt_polynomial_lr(opt, -2, 1.0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "clt_polynomial_lr: total_iters must be positive, not -2");
    assert_error(clt_polynomial_lr(opt, 5, -1.0, &s), CLT_ERR_INVALID_ARGUMENT, "power -1");
    assert_error(clt_polynomial_lr(opt, 5, NAN, &s), CLT_ERR_INVALID_ARGUMENT, "power nan");
    cr_assert_null(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* CosineAnnealingWarmRestarts' rate, written out from T_cur and T_i. */
static double warm_ref(double base, double eta_min, double t_cur, double t_i)
{
    return eta_min + (base - eta_min) * (1 + cos(M_PI * t_cur / t_i)) / 2;
}

Test(optim, cosine_warm_restarts)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1);
    clt_lr_scheduler *s;
    static const double torch_warm[] = {
        0.1, 0.07525000000000001, 0.025750000000000012, 0.1, 0.09336825748732973,
        0.07525000000000001, 0.0505, 0.025750000000000012, 0.007631742512670284, 0.1,
        0.09831332840130888, 0.09336825748732973, 0.0855017856687341, 0.07525000000000001,
        0.06331154273257478, 0.0505};
    CHECK(clt_cosine_warm_restarts(opt, 3, 2, 0.001, &s));
    /* cycles of 3, 6, 12 epochs: T_cur restarts at 3 and 9 */
    int64_t t_i = 3, t_cur = 0;
    for (int e = 0; e <= 40; e++) {
        if (e > 0) {
            CHECK(clt_lr_scheduler_step(s));
            if (++t_cur >= t_i) {
                t_cur -= t_i;
                t_i *= 2;
            }
        }
        double lr = clt_optimizer_lr(opt);
        cr_assert(lr == warm_ref(0.1, 0.001, (double)t_cur, (double)t_i), "epoch %d: %.17g", e,
                  lr);
        if (e <= 15)
            cr_assert(lr == torch_warm[e], "epoch %d: %.17g, torch %.17g", e, lr, torch_warm[e]);
    }
    clt_lr_scheduler_free(s);

    /* torch's step(epoch), fractional: lr, T_cur, T_i, last_epoch printed
     * from torch; then a plain step goes on from T_cur + 1 */
    static const double at[] = {0.5, 3.25, 10.0, 2.0, 9.75, 22.5};
    static const double torch_frac[][4] = {
        {0.09336825748732973, 0.5, 3, 0},  {0.09957652063800362, 0.25, 6, 3},
        {0.09831332840130888, 1.0, 12, 10}, {0.025750000000000012, 2.0, 3, 2},
        {0.09904887137995991, 0.75, 12, 9}, {0.09904887137995991, 1.5, 24, 22},
        {0.09737304141000774, 2.5, 24, 23}};
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    CHECK(clt_cosine_warm_restarts(opt, 3, 2, 0.001, &s));
    for (int k = 0; k < 7; k++) {
        if (k < 6)
            CHECK(clt_lr_scheduler_step_to(s, at[k]));
        else
            CHECK(clt_lr_scheduler_step(s));
        double lr = clt_optimizer_lr(opt);
        cr_assert(lr == torch_frac[k][0], "step %d: %.17g, torch %.17g", k, lr,
                  torch_frac[k][0]);
        cr_assert(lr == warm_ref(0.1, 0.001, torch_frac[k][1], torch_frac[k][2]));
        cr_assert_eq(clt_lr_scheduler_epoch(s), (int64_t)torch_frac[k][3]);
    }
    assert_error(clt_lr_scheduler_step_to(s, -0.5), CLT_ERR_INVALID_ARGUMENT,
                 "Expected non-negative epoch, but got -0.5");
    assert_error(clt_lr_scheduler_step_to(s, NAN), CLT_ERR_INVALID_ARGUMENT, "non-negative");
    cr_assert(clt_optimizer_lr(opt) == torch_frac[6][0] && clt_lr_scheduler_epoch(s) == 23);
    clt_lr_scheduler_free(s);

    /* T_mult 1: T_cur = epoch % T_0 */
    static const double torch_frac1[] = {0.0691341716182545, 0.07777851165098011, 0.1};
    CHECK(clt_optimizer_set_lr(opt, 0.1));
    CHECK(clt_cosine_warm_restarts(opt, 4, 1, 0.0, &s));
    CHECK(clt_lr_scheduler_step_to(s, 1.5));
    cr_assert(clt_optimizer_lr(opt) == torch_frac1[0]);
    CHECK(clt_lr_scheduler_step_to(s, 5.25));
    cr_assert(clt_optimizer_lr(opt) == torch_frac1[1]);
    CHECK(clt_lr_scheduler_step_to(s, 8.0));
    cr_assert(clt_optimizer_lr(opt) == torch_frac1[2]);
    clt_lr_scheduler_free(s);

    /* refusals, with torch's messages */
    assert_error(clt_cosine_warm_restarts(opt, 0, 1, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "clt_cosine_warm_restarts: Expected positive integer T_0, but got 0");
    assert_error(clt_cosine_warm_restarts(opt, 3, 0, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "Expected integer T_mult >= 1, but got 0");
    assert_error(clt_cosine_warm_restarts(opt, 3, 1, INFINITY, &s), CLT_ERR_INVALID_ARGUMENT,
                 "invalid eta_min inf");
    cr_assert_null(s);
    CHECK(clt_step_lr(opt, 2, 0.5, &s));
    assert_error(clt_lr_scheduler_step_to(s, 1.0), CLT_ERR_INVALID_ARGUMENT,
                 "only a CosineAnnealingWarmRestarts of its own steps to an epoch (this is a "
                 "StepLR)");
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

Test(optim, sequential_lr_as_torch)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1);
    clt_lr_scheduler *sub[3], *s;
    /* SequentialLR([LinearLR(0.1, 1.0, 4), CosineAnnealingLR(6, 0.001)], [4]):
     * the warm-up, then the cosine from its epoch 0 */
    static const double torch_lc[] = {
        0.010000000000000002, 0.03250000000000001, 0.055000000000000014, 0.07750000000000003,
        0.1, 0.09336825748732973, 0.07525000000000001, 0.0505, 0.025750000000000012,
        0.007631742512670284, 0.001, 0.007631742512670284, 0.025750000000000002};
    CHECK(clt_linear_lr(opt, 0.1, 1.0, 4, &sub[0]));
    CHECK(clt_cosine_lr(opt, 6, 0.001, &sub[1]));
    CHECK(clt_sequential_lr(opt, sub, 2, (const int64_t[]){4}, &s));
    cr_assert_eq(clt_lr_scheduler_epoch(sub[0]), 0);
    cr_assert_eq(clt_lr_scheduler_epoch(sub[1]), -1);
    check_torch_rates(s, opt, torch_lc, 12, "SequentialLR(LinearLR, CosineAnnealingLR)");
    cr_assert_eq(clt_lr_scheduler_epoch(s), 12);
    cr_assert_eq(clt_lr_scheduler_epoch(sub[1]), 8);
    /* its schedules are its own now */
    assert_error(clt_lr_scheduler_step(sub[0]), CLT_ERR_INVALID_ARGUMENT,
                 "this LinearLR belongs to a SequentialLR, which steps it");
    clt_lr_scheduler_free(sub[1]); /* does nothing */
    cr_assert_eq(clt_lr_scheduler_epoch(sub[1]), 8);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    /* ConstantLR, ExponentialLR, PolynomialLR at [3, 6] */
    static const double torch_cep[] = {0.025, 0.025, 0.025, 0.1, 0.08000000000000002,
                                       0.06400000000000002, 0.1, 0.05625, 0.024999999999999998,
                                       0.0062499999999999995, 0.0, 0.0, 0.0};
    opt = sgd_at(&p, 0.1);
    CHECK(clt_constant_lr(opt, 0.25, 3, &sub[0]));
    CHECK(clt_exponential_lr(opt, 0.8, &sub[1]));
    CHECK(clt_polynomial_lr(opt, 4, 2.0, &sub[2]));
    CHECK(clt_sequential_lr(opt, sub, 3, (const int64_t[]){3, 6}, &s));
    check_torch_rates(s, opt, torch_cep, 12, "SequentialLR(Constant, Exponential, Polynomial)");
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    /* LambdaLR's warm-up, then warm restarts from T_cur 0 */
    static const double torch_lw[] = {0.025, 0.05, 0.07500000000000001, 0.1, 0.0775,
                                      0.032500000000000015, 0.1, 0.0775, 0.032500000000000015,
                                      0.1, 0.0775};
    opt = sgd_at(&p, 0.1);
    CHECK(clt_lambda_lr(opt, quarter_ramp, NULL, &sub[0]));
    CHECK(clt_cosine_warm_restarts(opt, 3, 1, 0.01, &sub[1]));
    CHECK(clt_sequential_lr(opt, sub, 2, (const int64_t[]){3}, &s));
    check_torch_rates(s, opt, torch_lw, 10, "SequentialLR(LambdaLR, WarmRestarts)");
    assert_error(clt_lr_scheduler_step_to(sub[1], 2.0), CLT_ERR_INVALID_ARGUMENT,
                 "a container took");
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    /* the first schedule's initial step fails (its callback): nothing taken,
     * the rate and the epochs as they were */
    int64_t from = 100;
    opt = sgd_at(&p, 0.1);
    CHECK(clt_lambda_lr(opt, fails_from, &from, &sub[0]));
    CHECK(clt_exponential_lr(opt, 0.5, &sub[1]));
    CHECK(clt_lr_scheduler_step(sub[1]));
    double lr = clt_optimizer_lr(opt);
    from = 0;
    s = sub[0];
    assert_error(clt_sequential_lr(opt, sub, 2, (const int64_t[]){2}, &s),
                 CLT_ERR_INVALID_ARGUMENT, "LambdaLR's lr_lambda failed at epoch 0");
    cr_assert_null(s);
    cr_assert(clt_optimizer_lr(opt) == lr && clt_lr_scheduler_epoch(sub[0]) == 0 &&
              clt_lr_scheduler_epoch(sub[1]) == 1);
    from = 100;
    CHECK(clt_lr_scheduler_step(sub[0])); /* still the caller's */
    CHECK(clt_lr_scheduler_step(sub[1]));
    clt_lr_scheduler_free(sub[0]);
    clt_lr_scheduler_free(sub[1]);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

Test(optim, chained_scheduler_as_torch)
{
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.2);
    clt_lr_scheduler *sub[2], *s;
    static const double torch_ce[] = {
        0.1, 0.09000000000000001, 0.08100000000000002, 0.14580000000000004,
        0.13122000000000003, 0.11809800000000004, 0.10628820000000004, 0.09565938000000004,
        0.08609344200000005, 0.07748409780000004, 0.06973568802000003};
    CHECK(clt_constant_lr(opt, 0.5, 3, &sub[0]));
    CHECK(clt_exponential_lr(opt, 0.9, &sub[1]));
    CHECK(clt_chained_scheduler(sub, 2, &s));
    check_torch_rates(s, opt, torch_ce, 10, "ChainedScheduler(ConstantLR, ExponentialLR)");
    cr_assert_eq(clt_lr_scheduler_epoch(s), 10);
    clt_lr_scheduler_free(s);

    /* all or none: the second one's callback fails, the first's step is undone */
    int64_t from = 2;
    CHECK(clt_optimizer_set_lr(opt, 0.2));
    CHECK(clt_exponential_lr(opt, 0.5, &sub[0]));
    CHECK(clt_multiplicative_lr(opt, fails_from, &from, &sub[1]));
    CHECK(clt_chained_scheduler(sub, 2, &s));
    CHECK(clt_lr_scheduler_step(s));
    double lr = clt_optimizer_lr(opt);
    cr_assert(lr == 0.2 * 0.5 * 0.5, "%.17g", lr);
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT,
                 "MultiplicativeLR's lr_lambda failed at epoch 2");
    cr_assert(clt_optimizer_lr(opt) == lr && clt_lr_scheduler_epoch(sub[0]) == 1 &&
              clt_lr_scheduler_epoch(s) == 1);
    from = 10;
    CHECK(clt_lr_scheduler_step(s));
    cr_assert(clt_optimizer_lr(opt) == lr * 0.5 * 0.5 && clt_lr_scheduler_epoch(sub[0]) == 2);
    clt_lr_scheduler_free(s);

    /* refusals: nothing taken */
    clt_lr_scheduler *other, *plateau;
    clt_tensor *p2;
    clt_optimizer *opt2 = sgd_at(&p2, 0.1);
    CHECK(clt_step_lr(opt, 2, 0.5, &sub[0]));
    CHECK(clt_step_lr(opt2, 2, 0.5, &other));
    CHECK(clt_reduce_lr_on_plateau(opt, NULL, 0.1, 10, 1e-4, NULL, 0, 0, 1e-8, &plateau));
    sub[1] = other;
    assert_error(clt_chained_scheduler(sub, 2, &s), CLT_ERR_INVALID_ARGUMENT,
                 "ChainedScheduler expects all schedulers to belong to the same optimizer");
    cr_assert_null(s);
    assert_error(clt_sequential_lr(opt, sub, 2, (const int64_t[]){2}, &s),
                 CLT_ERR_INVALID_ARGUMENT,
                 "SequentialLR expects all schedulers to belong to the same optimizer, but got "
                 "schedulers at index 1 to be different");
    sub[1] = sub[0];
    assert_error(clt_chained_scheduler(sub, 2, &s), CLT_ERR_INVALID_ARGUMENT,
                 "schedulers[1] is schedulers[0] again");
    sub[1] = plateau;
    assert_error(clt_chained_scheduler(sub, 2, &s), CLT_ERR_INVALID_ARGUMENT,
                 "schedulers[1] is a ReduceLROnPlateau");
    assert_error(clt_chained_scheduler(sub, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "takes at least one schedule");
    CHECK(clt_exponential_lr(opt, 0.5, &sub[1]));
    assert_error(clt_sequential_lr(opt, sub, 2, (const int64_t[]){0}, &s),
                 CLT_ERR_INVALID_ARGUMENT, "milestones[0] is 0");
    assert_error(clt_sequential_lr(opt, sub, 2, NULL, &s), CLT_ERR_NULL_ARGUMENT,
                 "clt_sequential_lr");
    cr_assert_null(s);
    /* still the caller's: they step */
    CHECK(clt_lr_scheduler_step(sub[0]));
    CHECK(clt_chained_scheduler(sub, 2, &s));
    clt_lr_scheduler *again;
    assert_error(clt_chained_scheduler(sub, 1, &again), CLT_ERR_INVALID_ARGUMENT,
                 "schedulers[0] belongs to a ChainedScheduler already");
    cr_assert_null(again);
    assert_error(clt_chained_scheduler(&s, 1, &again), CLT_ERR_INVALID_ARGUMENT,
                 "is a ChainedScheduler, which ChainedScheduler does not step");
    /* an optimizer freed first: the container refuses to step */
    clt_optimizer_free(opt);
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT,
                 "the optimizer this ChainedScheduler drove was freed");
    clt_lr_scheduler_free(s);
    clt_lr_scheduler_free(plateau);
    clt_lr_scheduler_free(other);
    clt_optimizer_free(opt2);
    clt_tensor_free(p);
    clt_tensor_free(p2);
}

/* ---- CyclicLR ----------------------------------------------------------------------------- */

/* CyclicLR's rate at step e written out from its definition: within
 * cycle c = e / (up + down) + 1 at position i = e mod (up + down), the
 * fraction of the swing is i / up going up, (up + down - i) / down going
 * down; the swing (max - base) is scaled by scale (of the cycle or of e). */
static double cyclic_frac(int64_t up, int64_t down, int64_t e, int64_t *cycle)
{
    int64_t t = up + down, i = e % t;
    *cycle = e / t + 1;
    return i <= up ? (double)i / (double)up : (double)(t - i) / (double)down;
}

/* scale_fn: 1 / (1 + x / 4), counting its calls; fails (NaN) at x == *user
 * when user is not NULL */
static int scale_calls;
static double scale_quarter(void *user, int64_t x)
{
    scale_calls++;
    if (user && x == *(int64_t *)user)
        return NAN;
    return 1.0 / (1.0 + (double)x / 4.0);
}

/* Three cycles of each mode against torch 1.13's rates and momenta
 * (printed with repr, bit for bit) and the closed form above; a scale_fn
 * over cycles and over iterations; refusals change nothing. */
Test(optim, cyclic_lr_as_torch)
{
    static const double torch_tri2[] = {
        0.01, 0.039999999999999994, 0.06999999999999999, 0.09999999999999999, 0.055, 0.01,
        0.025000000000000015, 0.039999999999999994, 0.055, 0.03250000000000002, 0.01,
        0.01750000000000001, 0.024999999999999998, 0.0325, 0.021250000000000012, 0.01};
    static const double torch_tri2_m[] = {
        0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.8500000000000001, 0.9,
        0.8833333333333333, 0.8666666666666667, 0.8500000000000001, 0.875, 0.9,
        0.8916666666666667, 0.8833333333333334, 0.875, 0.8875000000000001, 0.9};
    static const double torch_exp[] = {
        0.001, 0.0030250000000000003, 0.004645000000000001, 0.0059207500000000015,
        0.006904900000000001, 0.004985807500000001, 0.0033914845000000003, 0.002076168025,
        0.001, 0.0018716961002500003, 0.0025690529804500003, 0.0031182215236075007,
        0.0035418658283290013, 0.002715759434122076, 0.002029455660473246,
        0.0014632550472129604, 0.001, 0.001375236588242498, 0.0016754258588364964,
        0.0019118249094292703, 0.0020941898913151243, 0.001738578176637709,
        0.0014431469059826255, 0.0011994161076921814, 0.001};
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1); /* made without momentum */
    clt_lr_scheduler *s;
    CHECK(clt_cyclic_lr(opt, 0.01, 0.1, 3, 2, "triangular2", 1.0, NULL, NULL, NULL, 1, 0.8, 0.9,
                        &s));
    for (int64_t e = 0; e < 16; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        int64_t c;
        double f = cyclic_frac(3, 2, e, &c), sc = 1.0 / pow(2.0, (double)(c - 1));
        double lr = clt_optimizer_lr(opt), m = clt_optimizer_momentum(opt);
        cr_assert(lr == torch_tri2[e] && m == torch_tri2_m[e],
                  "triangular2, step %lld: %.17g %.17g, torch %.17g %.17g", (long long)e, lr, m,
                  torch_tri2[e], torch_tri2_m[e]);
        cr_assert(close_enough(lr, 0.01 + 0.09 * f * sc, 1e-14, 1e-17) &&
                      close_enough(m, 0.9 - 0.1 * f * sc, 1e-14, 1e-17),
                  "triangular2, step %lld: %.17g %.17g against the closed form", (long long)e,
                  lr, m);
    }
    /* torch's initial_lr is base_lr, set before the schedule */
    cr_assert_eq(clt_lr_scheduler_epoch(s), 15);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);

    /* exp_range on RMSprop without momentum cycling: gamma^iteration */
    clt_device *dev = get_device("cpu");
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p));
    CHECK(clt_set_requires_grad(p, 1));
    CHECK(clt_rmsprop(&p, 1, NULL, &opt));
    CHECK(clt_cyclic_lr(opt, 0.001, 0.01, 4, -1, "exp_range", 0.9, NULL, NULL, NULL, 0, 0.8, 0.9,
                        &s));
    for (int64_t e = 0; e < 25; e++) {
        if (e > 0)
            CHECK(clt_lr_scheduler_step(s));
        int64_t c;
        double f = cyclic_frac(4, 4, e, &c), lr = clt_optimizer_lr(opt);
        cr_assert(lr == torch_exp[e], "exp_range, step %lld: %.17g, torch %.17g", (long long)e,
                  lr, torch_exp[e]);
        cr_assert(close_enough(lr, 0.001 + 0.009 * f * pow(0.9, (double)e), 1e-14, 1e-17));
        cr_assert(clt_optimizer_momentum(opt) == 0.0);
    }
    clt_lr_scheduler_free(s);

    /* a scale_fn, over cycles then over iterations (mode ignored) */
    for (int it = 0; it < 2; it++) {
        scale_calls = 0;
        CHECK(clt_cyclic_lr(opt, 0.5, 1.5, 2, 3, "bogus", 1.0, scale_quarter, NULL,
                            it ? "iterations" : "cycle", 0, 0.8, 0.9, &s));
        cr_assert_eq(scale_calls, 1);
        for (int64_t e = 0; e < 16; e++) {
            if (e > 0)
                CHECK(clt_lr_scheduler_step(s));
            int64_t c;
            double f = cyclic_frac(2, 3, e, &c);
            double want = 0.5 + f / (1.0 + (double)(it ? e : c) / 4.0);
            cr_assert(close_enough(clt_optimizer_lr(opt), want, 1e-14, 1e-17),
                      "scale_fn (%s), step %lld: %.17g vs %.17g", it ? "iterations" : "cycle",
                      (long long)e, clt_optimizer_lr(opt), want);
        }
        clt_lr_scheduler_free(s);
    }
    /* a scale_fn failing refuses the step, which changes nothing */
    int64_t bad = 3;
    CHECK(clt_cyclic_lr(opt, 0.5, 1.5, 2, 3, NULL, 1.0, scale_quarter, &bad, "iterations", 0,
                        0.8, 0.9, &s));
    CHECK(clt_lr_scheduler_step(s));
    CHECK(clt_lr_scheduler_step(s));
    double lr = clt_optimizer_lr(opt);
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT,
                 "CyclicLR's scale_fn failed at iteration 3");
    cr_assert(clt_optimizer_lr(opt) == lr && clt_lr_scheduler_epoch(s) == 2);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);

    /* refusals: the optimizer as it was */
    clt_adam_opts ao = CLT_ADAM_DEFAULTS;
    CHECK(clt_adam(&p, 1, &ao, &opt));
    s = (clt_lr_scheduler *)&s;
    assert_error(clt_cyclic_lr(opt, 0.01, 0.1, 3, 2, NULL, 1.0, NULL, NULL, NULL, 1, 0.8, 0.9,
                               &s),
                 CLT_ERR_INVALID_ARGUMENT,
                 "optimizer must support momentum with `cycle_momentum` option enabled");
    cr_assert_null(s);
    cr_assert(clt_optimizer_lr(opt) == 1e-3 && clt_optimizer_momentum(opt) == 0.9);
    assert_error(clt_cyclic_lr(opt, 0.01, 0.1, 3, 2, "sawtooth", 1.0, NULL, NULL, NULL, 0, 0.8,
                               0.9, &s),
                 CLT_ERR_INVALID_ARGUMENT, "mode is invalid and scale_fn is None");
    assert_error(clt_cyclic_lr(opt, 0.01, 0.1, 0, 2, NULL, 1.0, NULL, NULL, NULL, 0, 0.8, 0.9,
                               &s),
                 CLT_ERR_INVALID_ARGUMENT, "step_size_up 0");
    assert_error(clt_cyclic_lr(opt, -0.01, 0.1, 3, 2, NULL, 1.0, NULL, NULL, NULL, 0, 0.8, 0.9,
                               &s),
                 CLT_ERR_INVALID_ARGUMENT, "invalid base_lr");
    assert_error(clt_cyclic_lr(opt, 0.01, NAN, 3, 2, NULL, 1.0, NULL, NULL, NULL, 0, 0.8, 0.9,
                               &s),
                 CLT_ERR_INVALID_ARGUMENT, "invalid max_lr");
    assert_error(clt_cyclic_lr(opt, 0.01, 0.1, 3, 2, NULL, 1.0, scale_quarter, NULL, "epochs",
                               0, 0.8, 0.9, &s),
                 CLT_ERR_INVALID_ARGUMENT, "scale_mode 'epochs' is unknown");
    cr_assert_null(s);
    cr_assert(clt_optimizer_lr(opt) == 1e-3);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    opt = sgd_at(&p, 0.1);
    assert_error(clt_cyclic_lr(opt, 0.01, 0.1, 3, 2, NULL, 1.0, NULL, NULL, NULL, 1, -0.8, 0.9,
                               &s),
                 CLT_ERR_INVALID_ARGUMENT, "finite and >= 0");
    cr_assert(clt_optimizer_lr(opt) == 0.1 && clt_optimizer_momentum(opt) == 0.0);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* ---- Adadelta ----------------------------------------------------------------------------- */

/* p (float64 or float32) at P0 with its gradient for the loss above. */
static clt_tensor *param_at(clt_device *dev, clt_dtype dtype)
{
    clt_tensor *p64, *p;
    int64_t n = N;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, P0, &p64));
    CHECK(clt_to_dtype(p64, dtype, &p));
    clt_tensor_free(p64);
    CHECK(clt_set_requires_grad(p, 1));
    return p;
}

/* t's N values in double. */
static void read_f64(const clt_tensor *t, double *out)
{
    clt_tensor *t64;
    CHECK(clt_to_dtype(t, CLT_FLOAT64, &t64));
    CHECK(clt_tensor_read(t64, out, N * sizeof *out));
    clt_tensor_free(t64);
}

/* Adadelta against torch 1.13's rule written out in float64 on the host
 * (g = C p + wd p; s = rho s + (1 - rho) g^2; d = sqrt(a + eps) /
 * sqrt(s + eps) g; a = rho a + (1 - rho) d^2; p -= lr d), the defaults and
 * settings of its own, over float64 and float32 parameters; refusals with
 * torch's messages; no momentum for the schedules to cycle. */
Test(optim, adadelta_as_torch)
{
    clt_device *dev = get_device("cpu");
    static const clt_adadelta_opts cases[] = {CLT_ADADELTA_DEFAULTS, {0.5, 0.8, 1e-4, 0.05}};
    cr_assert(cases[0].lr == 1.0 && cases[0].rho == 0.9 && cases[0].eps == 1e-6 &&
              cases[0].weight_decay == 0.0);
    for (int dt = 0; dt < 2; dt++) {
        clt_dtype dtype = dt ? CLT_FLOAT32 : CLT_FLOAT64;
        if (!clt_device_supports_dtype(dev, dtype))
            continue;
        for (size_t k = 0; k < 2; k++) {
            const clt_adadelta_opts *o = &cases[k];
            double host[N], s[N] = {0}, a[N] = {0};
            memcpy(host, P0, sizeof host);
            clt_tensor *p = param_at(dev, dtype);
            clt_optimizer *opt;
            CHECK(clt_adadelta(&p, 1, k ? o : NULL, &opt));
            for (int step = 0; step < 12; step++) {
                CHECK(clt_optimizer_zero_grad(opt, 1));
                loss_backward(dev, p);
                CHECK(clt_optimizer_step(opt));
                for (int i = 0; i < N; i++) {
                    double g = C[i] * host[i] + o->weight_decay * host[i];
                    s[i] = o->rho * s[i] + (1 - o->rho) * g * g;
                    double d = sqrt(a[i] + o->eps) / sqrt(s[i] + o->eps) * g;
                    a[i] = o->rho * a[i] + (1 - o->rho) * d * d;
                    host[i] -= o->lr * d;
                }
            }
            double got[N];
            read_f64(p, got);
            for (int i = 0; i < N; i++)
                cr_assert(close_enough(got[i], host[i], dt ? 1e-5 : 1e-13, dt ? 1e-6 : 1e-15),
                          "case %zu, %s: p[%d] %.17g, reference %.17g", k, dt ? "f32" : "f64",
                          i, got[i], host[i]);
            cr_assert(fabs(got[0] - P0[0]) > 1e-3, "case %zu: the parameter did not move", k);
            clt_optimizer_free(opt);
            clt_tensor_free(p);
        }
    }
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1), *ad = (clt_optimizer *)&opt;
    clt_optimizer_free(opt);
    assert_error(clt_adadelta(&p, 1, &(clt_adadelta_opts){1.0, 1.5, 1e-6, 0}, &ad),
                 CLT_ERR_INVALID_ARGUMENT, "invalid rho value: 1.5");
    cr_assert_null(ad);
    assert_error(clt_adadelta(&p, 1, &(clt_adadelta_opts){1.0, 0.9, -1e-6, 0}, &ad),
                 CLT_ERR_INVALID_ARGUMENT, "invalid epsilon value");
    assert_error(clt_adadelta(&p, 1, &(clt_adadelta_opts){-1.0, 0.9, 1e-6, 0}, &ad),
                 CLT_ERR_INVALID_ARGUMENT, "invalid learning rate");
    assert_error(clt_adadelta(&p, 1, &(clt_adadelta_opts){1.0, 0.9, 1e-6, -0.1}, &ad),
                 CLT_ERR_INVALID_ARGUMENT, "invalid weight_decay value");
    CHECK(clt_adadelta(&p, 1, NULL, &ad));
    clt_lr_scheduler *s;
    assert_error(clt_cyclic_lr(ad, 0.01, 0.1, 3, 2, NULL, 1.0, NULL, NULL, NULL, 1, 0.8, 0.9, &s),
                 CLT_ERR_INVALID_ARGUMENT, "Adadelta has no momentum setting");
    assert_error(clt_one_cycle_lr_momentum(ad, 0.2, 7, 0.4, NULL, 25, 1e4, 0, 1, 0.85, 0.95, &s),
                 CLT_ERR_INVALID_ARGUMENT, "Adadelta has no momentum");
    cr_assert(clt_optimizer_lr(ad) == 1.0 && clt_optimizer_momentum(ad) == 0.0);
    clt_optimizer_free(ad);
    clt_tensor_free(p);
}

/* ---- Rprop and ASGD ----------------------------------------------------------------------- */

static double sign_of(double x)
{
    return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}

/* x rounded to float32 where f32, as torch's float32 tensors hold it. */
static double rounded(double x, int f32)
{
    return f32 ? (double)(float)x : x;
}

/* One Rprop step of torch 1.13 on the host: prev and s (step sizes) per
 * element, s starting at lr at the first step; with f32 every value is
 * rounded to float32 as torch's float32 tensors hold it (step sizes at
 * their bound move a parameter onto 0 and back, where float64's and
 * float32's signs part). */
static void rprop_ref(const clt_rprop_opts *o, double lr, int first, int f32, double *host,
                      double *prev, double *s)
{
    for (int i = 0; i < N; i++) {
        double g = rounded(rounded(C[i], f32) * host[i], f32);
        double sg = sign_of(rounded(g * prev[i], f32));
        double f = rounded(sg > 0 ? o->etaplus : sg < 0 ? o->etaminus : 1.0, f32);
        s[i] = rounded((first ? rounded(lr, f32) : s[i]) * f, f32);
        s[i] = fmin(fmax(s[i], rounded(o->step_size_min, f32)), rounded(o->step_size_max, f32));
        if (sg < 0)
            g = 0;
        host[i] = rounded(host[i] - sign_of(g) * s[i], f32);
        prev[i] = g;
    }
}

/* Rprop against torch 1.13's rule written out in float64 on the host: the
 * defaults and settings of its own where step sizes grow, shrink at sign
 * changes and hit both bounds; a rate changed mid-run (a schedule's) that
 * changes nothing after the first step; float64 and float32; torch's
 * refusals. */
Test(optim, rprop_as_torch)
{
    clt_device *dev = get_device("cpu");
    static const clt_rprop_opts cases[] = {CLT_RPROP_DEFAULTS, {0.23, 0.4, 1.5, 0.05, 0.5}};
    cr_assert(cases[0].lr == 1e-2 && cases[0].etaminus == 0.5 && cases[0].etaplus == 1.2 &&
              cases[0].step_size_min == 1e-6 && cases[0].step_size_max == 50.0);
    for (int dt = 0; dt < 2; dt++) {
        clt_dtype dtype = dt ? CLT_FLOAT32 : CLT_FLOAT64;
        if (!clt_device_supports_dtype(dev, dtype))
            continue;
        for (size_t k = 0; k < 2; k++) {
            const clt_rprop_opts *o = &cases[k];
            double host[N], prev[N] = {0}, s[N] = {0}, got[N];
            int shrank = 0, floor = 0, ceiling = 0;
            for (int i = 0; i < N; i++)
                host[i] = rounded(P0[i], dt);
            clt_tensor *p = param_at(dev, dtype);
            clt_optimizer *opt;
            CHECK(clt_rprop(&p, 1, k ? o : NULL, &opt));
            for (int step = 0; step < 14; step++) {
                if (step == 5)
                    CHECK(clt_optimizer_set_lr(opt, 7.0)); /* step_size keeps its own */
                CHECK(clt_optimizer_zero_grad(opt, 1));
                loss_backward(dev, p);
                CHECK(clt_optimizer_step(opt));
                rprop_ref(o, o->lr, step == 0, dt, host, prev, s);
                for (int i = 0; i < N; i++) {
                    shrank += prev[i] == 0.0;
                    floor += s[i] == rounded(o->step_size_min, dt);
                    ceiling += s[i] == rounded(o->step_size_max, dt);
                }
            }
            read_f64(p, got);
            for (int i = 0; i < N; i++)
                cr_assert(close_enough(got[i], host[i], dt ? 1e-5 : 1e-13, dt ? 1e-6 : 1e-15),
                          "case %zu, %s: p[%d] %.17g, reference %.17g", k, dt ? "f32" : "f64",
                          i, got[i], host[i]);
            cr_assert(fabs(got[0] - P0[0]) > 1e-2, "case %zu: the parameter did not move", k);
            if (k == 1)
                cr_assert(shrank && floor && ceiling, "the case crosses no sign change or bound: %d %d %d", shrank, floor, ceiling);
            clt_optimizer_free(opt);
            clt_tensor_free(p);
        }
    }
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1), *r = (clt_optimizer *)&opt;
    clt_optimizer_free(opt);
    assert_error(clt_rprop(&p, 1, &(clt_rprop_opts){0.01, 1.5, 1.2, 1e-6, 50}, &r),
                 CLT_ERR_INVALID_ARGUMENT, "Invalid eta values: 1.5, 1.2");
    cr_assert_null(r);
    assert_error(clt_rprop(&p, 1, &(clt_rprop_opts){0.01, 0.5, 1.0, 1e-6, 50}, &r),
                 CLT_ERR_INVALID_ARGUMENT, "Invalid eta values: 0.5, 1");
    assert_error(clt_rprop(&p, 1, &(clt_rprop_opts){-0.01, 0.5, 1.2, 1e-6, 50}, &r),
                 CLT_ERR_INVALID_ARGUMENT, "invalid learning rate");
    assert_error(clt_rprop(&p, 1, &(clt_rprop_opts){0.01, 0.5, 1.2, NAN, 50}, &r),
                 CLT_ERR_INVALID_ARGUMENT, "invalid step_sizes");
    CHECK(clt_rprop(&p, 1, NULL, &r));
    clt_lr_scheduler *sc;
    assert_error(clt_one_cycle_lr_momentum(r, 0.2, 7, 0.4, NULL, 25, 1e4, 0, 1, 0.85, 0.95, &sc),
                 CLT_ERR_INVALID_ARGUMENT, "Rprop has no momentum");
    cr_assert(clt_optimizer_momentum(r) == 0.0);
    clt_optimizer_free(r);
    clt_tensor_free(p);
}

/* One ASGD step of torch 1.13 on the host, eta and mu rounded to float32
 * as torch's tensors hold them; t the step count after it. */
static void asgd_ref(const clt_asgd_opts *o, double lr, int64_t t, double *host, double *ax,
                     float *eta, float *mu)
{
    for (int i = 0; i < N; i++) {
        double g = C[i] * host[i] + o->weight_decay * host[i];
        host[i] *= 1.0 - o->lambd * (double)*eta;
        host[i] -= (double)*eta * g;
        ax[i] = *mu != 1.0f ? ax[i] + (host[i] - ax[i]) * (double)*mu : host[i];
    }
    *eta = (float)(lr / pow(1.0 + o->lambd * lr * (double)t, o->alpha));
    *mu = (float)(1.0 / fmax(1.0, (double)t - o->t0));
}

/* The tensor named `name` among the n of a loaded file. */
static clt_tensor *named(clt_named_tensor *ts, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(ts[k].name, name) == 0)
            return ts[k].tensor;
    cr_assert_fail("no %s in the file", name);
    return NULL;
}

/* ASGD against torch 1.13's rule written out in float64 on the host (eta
 * and mu in float32, as torch's tensors): the defaults (no averaging
 * before t0 = 1e6: ax follows p) and settings of its own where averaging
 * starts after t0 = 3, with weight decay and a rate changed mid-run (eta
 * follows it from the next step); ax, eta and mu read from the file under
 * torch's names; float64 and float32; torch's refusals. */
Test(optim, asgd_as_torch, .init = scratch_make, .fini = scratch_remove)
{
    clt_device *dev = get_device("cpu");
    static const clt_asgd_opts cases[] = {CLT_ASGD_DEFAULTS, {0.1, 0.05, 0.5, 3.0, 0.05}};
    cr_assert(cases[0].lr == 1e-2 && cases[0].lambd == 1e-4 && cases[0].alpha == 0.75 &&
              cases[0].t0 == 1e6 && cases[0].weight_decay == 0.0);
    for (int dt = 0; dt < 2; dt++) {
        clt_dtype dtype = dt ? CLT_FLOAT32 : CLT_FLOAT64;
        if (!clt_device_supports_dtype(dev, dtype))
            continue;
        for (size_t k = 0; k < 2; k++) {
            const clt_asgd_opts *o = &cases[k];
            double host[N], ax[N] = {0}, got[N], lr = o->lr;
            float eta = (float)o->lr, mu = 1.0f;
            memcpy(host, P0, sizeof host);
            clt_tensor *p = param_at(dev, dtype);
            clt_optimizer *opt;
            CHECK(clt_asgd(&p, 1, k ? o : NULL, &opt));
            for (int step = 0; step < 12; step++) {
                if (step == 6) {
                    lr = 0.5 * o->lr;
                    CHECK(clt_optimizer_set_lr(opt, lr));
                }
                CHECK(clt_optimizer_zero_grad(opt, 1));
                loss_backward(dev, p);
                CHECK(clt_optimizer_step(opt));
                asgd_ref(o, lr, step + 1, host, ax, &eta, &mu);
            }
            const double rtol = dt ? 1e-5 : 1e-13, atol = dt ? 1e-6 : 1e-15;
            read_f64(p, got);
            for (int i = 0; i < N; i++)
                cr_assert(close_enough(got[i], host[i], rtol, atol),
                          "case %zu, %s: p[%d] %.17g, reference %.17g", k, dt ? "f32" : "f64",
                          i, got[i], host[i]);
            cr_assert(fabs(got[0] - P0[0]) > 1e-2, "case %zu: the parameter did not move", k);
            CHECK(clt_optimizer_save(opt, tpath("asgd.safetensors")));
            clt_named_tensor *ts;
            size_t nt;
            CHECK(clt_load_safetensors(tpath("asgd.safetensors"), dev, &ts, &nt));
            read_f64(named(ts, nt, "state.0.ax"), got);
            for (int i = 0; i < N; i++)
                cr_assert(close_enough(got[i], ax[i], rtol, atol),
                          "case %zu, %s: ax[%d] %.17g, reference %.17g", k, dt ? "f32" : "f64",
                          i, got[i], ax[i]);
            if (k == 1)
                cr_assert(fabs(ax[0] - host[0]) > 1e-3, "ax never averaged");
            float e, m;
            CHECK(clt_tensor_read(named(ts, nt, "state.0.eta"), &e, sizeof e));
            CHECK(clt_tensor_read(named(ts, nt, "state.0.mu"), &m, sizeof m));
            cr_assert(e == eta && m == mu, "case %zu: eta %.9g mu %.9g, torch's %.9g %.9g", k,
                      e, m, eta, mu);
            clt_named_tensors_free(ts, nt);
            clt_optimizer_free(opt);
            clt_tensor_free(p);
        }
    }
    clt_tensor *p;
    clt_optimizer *opt = sgd_at(&p, 0.1), *a = (clt_optimizer *)&opt;
    clt_optimizer_free(opt);
    assert_error(clt_asgd(&p, 1, &(clt_asgd_opts){0.01, 1e-4, 0.75, 1e6, -0.1}, &a),
                 CLT_ERR_INVALID_ARGUMENT, "invalid weight_decay value: -0.1");
    cr_assert_null(a);
    assert_error(clt_asgd(&p, 1, &(clt_asgd_opts){-0.01, 1e-4, 0.75, 1e6, 0}, &a),
                 CLT_ERR_INVALID_ARGUMENT, "invalid learning rate");
    assert_error(clt_asgd(&p, 1, &(clt_asgd_opts){0.01, NAN, 0.75, 1e6, 0}, &a),
                 CLT_ERR_INVALID_ARGUMENT, "invalid lambd, alpha or t0");
    CHECK(clt_asgd(&p, 1, NULL, &a));
    clt_lr_scheduler *sc;
    assert_error(clt_cyclic_lr(a, 0.01, 0.1, 3, 2, NULL, 1.0, NULL, NULL, NULL, 1, 0.8, 0.9, &sc),
                 CLT_ERR_INVALID_ARGUMENT, "ASGD has no momentum setting");
    clt_optimizer_free(a);
    clt_tensor_free(p);
}

/* Rprop's and ASGD's state saved after 3 steps and loaded into an
 * optimizer made with the defaults gives, 3 steps on, the bits of 6 steps
 * uninterrupted (its settings come from the file); a fresh optimizer in
 * its place does not. */
Test(optim, rprop_asgd_resume_bit_for_bit, .init = scratch_make, .fini = scratch_remove)
{
    clt_device *dev = get_device("cpu");
    for (int kind = 0; kind < 2; kind++) {
        double want[N], start[N], got[N], fresh[N];
        clt_tensor *p = param_at(dev, CLT_FLOAT32);
        clt_optimizer *opt;
        if (kind == 0)
            CHECK(clt_rprop(&p, 1, &(clt_rprop_opts){0.3, 0.4, 1.5, 0.02, 0.5}, &opt));
        else
            CHECK(clt_asgd(&p, 1, &(clt_asgd_opts){0.1, 0.05, 0.5, 2.0, 0.05}, &opt));
        for (int step = 0; step < 6; step++) {
            if (step == 3) {
                CHECK(clt_optimizer_save(opt, tpath("o.safetensors")));
                read_f64(p, start); /* the parameter at the checkpoint */
            }
            CHECK(clt_optimizer_zero_grad(opt, 1));
            loss_backward(dev, p);
            CHECK(clt_optimizer_step(opt));
        }
        read_f64(p, want);
        clt_optimizer_free(opt);
        clt_tensor_free(p);
        for (int load = 1; load >= 0; load--) {
            int64_t n = N;
            CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, start, &p));
            clt_tensor *p32;
            CHECK(clt_to_dtype(p, CLT_FLOAT32, &p32));
            clt_tensor_free(p);
            p = p32;
            CHECK(clt_set_requires_grad(p, 1));
            if (kind == 0)
                CHECK(clt_rprop(&p, 1, load ? NULL : &(clt_rprop_opts){0.3, 0.4, 1.5, 0.02, 0.5},
                                &opt));
            else
                CHECK(clt_asgd(&p, 1, load ? NULL : &(clt_asgd_opts){0.1, 0.05, 0.5, 2.0, 0.05},
                               &opt));
            if (load)
                CHECK(clt_optimizer_load(opt, tpath("o.safetensors")));
            for (int step = 0; step < 3; step++) {
                CHECK(clt_optimizer_zero_grad(opt, 1));
                loss_backward(dev, p);
                CHECK(clt_optimizer_step(opt));
            }
            read_f64(p, load ? got : fresh);
            clt_optimizer_free(opt);
            clt_tensor_free(p);
            if (load)
                cr_assert(memcmp(got, want, sizeof got) == 0,
                          "%s: the resumed run differs from the uninterrupted one",
                          kind ? "ASGD" : "Rprop");
        }
        cr_assert(memcmp(fresh, want, sizeof fresh) != 0, "%s: the state made no difference",
                  kind ? "ASGD" : "Rprop");
    }
}

/* An SGD made without momentum (dampening 0.25), stepped twice, given
 * momentum by CyclicLR, saved before its first step with momentum and
 * loaded into another: its buffer starts at the gradient at that step
 * (torch's momentum_buffer is None until then, and its file holds none),
 * then buf = m buf + (1 - dampening) g, against a float64 reference. */
Test(optim, sgd_momentum_raised_starts_at_grad_across_files, .init = scratch_make,
     .fini = scratch_remove)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on this device");
    const clt_sgd_opts so = {0.1, 0.0, 0.25, 0.0, 0};
    double host[N], buf[N], got[N];
    memcpy(host, P0, sizeof host);
    clt_tensor *p = param_at(dev, CLT_FLOAT64);
    clt_optimizer *opt;
    clt_lr_scheduler *s;
    CHECK(clt_sgd(&p, 1, &so, &opt));
    for (int step = 0; step < 2; step++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        loss_backward(dev, p);
        CHECK(clt_optimizer_step(opt));
        for (int i = 0; i < N; i++)
            host[i] -= 0.1 * C[i] * host[i];
    }
    CHECK(clt_cyclic_lr(opt, 0.1, 0.1, 4, -1, NULL, 1.0, NULL, NULL, NULL, 1, 0.8, 0.8, &s));
    cr_assert(clt_optimizer_momentum(opt) == 0.8);
    CHECK(clt_optimizer_save(opt, tpath("sgd.safetensors")));
    clt_named_tensor *ts;
    size_t nt;
    CHECK(clt_load_safetensors(tpath("sgd.safetensors"), dev, &ts, &nt));
    for (size_t k = 0; k < nt; k++)
        cr_assert(strcmp(ts[k].name, "state.0.momentum_buffer") != 0,
                  "a buffer not started yet is in the file (torch's is None)");
    clt_named_tensors_free(ts, nt);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    CHECK(clt_sgd(&p, 1, NULL, &opt));
    CHECK(clt_optimizer_load(opt, tpath("sgd.safetensors")));
    cr_assert(clt_optimizer_momentum(opt) == 0.8);
    for (int step = 0; step < 3; step++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        loss_backward(dev, p);
        CHECK(clt_optimizer_step(opt));
        for (int i = 0; i < N; i++) {
            double g = C[i] * host[i];
            buf[i] = step == 0 ? g : 0.8 * buf[i] + 0.75 * g;
            host[i] -= 0.1 * buf[i];
        }
    }
    read_f64(p, got);
    for (int i = 0; i < N; i++)
        cr_assert(close_enough(got[i], host[i], 1e-13, 1e-15), "p[%d] %.17g, reference %.17g",
                  i, got[i], host[i]);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* ---- parameter groups (torch's param_groups) ------------------------------------------ */

/* The options struct of o's kind (in *u), as clt_optimizer_add_param_group
 * takes it. */
typedef union any_opts {
    clt_sgd_opts sgd;
    clt_adam_opts adam;
    clt_rmsprop_opts rmsprop;
    clt_adagrad_opts adagrad;
    clt_adamax_opts adamax;
    clt_nadam_opts nadam;
    clt_radam_opts radam;
    clt_adadelta_opts adadelta;
    clt_rprop_opts rprop;
    clt_asgd_opts asgd;
} any_opts;

static const void *opts_of(const ref_opts *o, any_opts *u)
{
    switch (o->kind) {
    case 0:
        u->sgd = (clt_sgd_opts){o->lr, o->momentum, o->dampening, o->wd, o->nesterov};
        break;
    case 3:
        u->rmsprop = (clt_rmsprop_opts){o->lr, o->alpha, o->eps, o->wd, o->momentum, o->centered};
        break;
    case 4:
        u->adagrad = (clt_adagrad_opts){o->lr, o->lr_decay, o->wd, o->init, o->eps};
        break;
    case 5:
        u->adamax = (clt_adamax_opts){o->lr, o->beta1, o->beta2, o->eps, o->wd};
        break;
    case 6:
        u->nadam = (clt_nadam_opts){o->lr, o->beta1, o->beta2, o->eps, o->wd, o->momentum_decay};
        break;
    case 7:
        u->radam = (clt_radam_opts){o->lr, o->beta1, o->beta2, o->eps, o->wd};
        break;
    default:
        u->adam = (clt_adam_opts){o->lr, o->beta1, o->beta2, o->eps, o->wd, o->amsgrad};
    }
    return u;
}

/* Two groups of one parameter each, with other rates, weight decays and
 * momenta (or betas), STEPS steps: each parameter against the float64
 * reference of torch's rule with its own group's settings; the second
 * group also added with NULL takes the constructor's settings. */
Test(optim, param_groups_each_with_its_settings)
{
    clt_device *dev = get_device("cpu");
    static const ref_opts g0[] = {
        {.kind = 0, .lr = 0.05, .momentum = 0.9, .wd = 0.01},
        {.kind = 1, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .wd = 0.1},
        {.kind = 2, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .wd = 0.1},
        {.kind = 3, .lr = 0.01, .alpha = 0.99, .eps = 1e-8, .momentum = 0.5, .wd = 0.01},
        {.kind = 4, .lr = 0.1, .lr_decay = 0.01, .wd = 0.01, .init = 0.1, .eps = 1e-10},
        {.kind = 5, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .wd = 0.01},
        {.kind = 6, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .wd = 0.01,
         .momentum_decay = 4e-3},
        {.kind = 7, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .wd = 0.01,
         .steps = 8},
    };
    static const ref_opts g1[] = {
        {.kind = 0, .lr = 0.2, .momentum = 0.0, .wd = 0.0},
        {.kind = 1, .lr = 0.1, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-6, .wd = 0.0, .amsgrad = 1},
        {.kind = 2, .lr = 0.1, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-6, .wd = 0.0},
        {.kind = 3, .lr = 0.03, .alpha = 0.9, .eps = 1e-6, .momentum = 0.0, .centered = 1},
        {.kind = 4, .lr = 0.3, .lr_decay = 0.0, .wd = 0.0, .init = 0.0, .eps = 1e-8},
        {.kind = 5, .lr = 0.1, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-6, .wd = 0.0},
        {.kind = 6, .lr = 0.1, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-6, .wd = 0.1,
         .momentum_decay = 1e-2},
        {.kind = 7, .lr = 0.1, .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-6, .wd = 0.0, .steps = 8},
    };
    for (size_t k = 0; k < sizeof g0 / sizeof g0[0]; k++) {
        clt_tensor *pa = param_at(dev, CLT_FLOAT64), *pb = param_at(dev, CLT_FLOAT64);
        clt_tensor *pc = param_at(dev, CLT_FLOAT64);
        clt_optimizer *opt;
        any_opts u;
        make_optimizer(&g0[k], &pa, 1, &opt);
        CHECK(clt_optimizer_add_param_group(opt, &pb, 1, opts_of(&g1[k], &u)));
        CHECK(clt_optimizer_add_param_group(opt, &pc, 1, NULL));
        cr_assert_eq(clt_optimizer_num_groups(opt), 3);
        cr_assert(clt_optimizer_group_lr(opt, 0) == g0[k].lr);
        cr_assert(clt_optimizer_group_lr(opt, 1) == g1[k].lr);
        cr_assert(clt_optimizer_group_lr(opt, 2) == g0[k].lr);
        cr_assert(isnan(clt_optimizer_group_lr(opt, 3)));
        int steps = g0[k].steps ? g0[k].steps : STEPS;
        for (int t = 0; t < steps; t++) {
            CHECK(clt_optimizer_zero_grad(opt, 1));
            loss_backward(dev, pa);
            loss_backward(dev, pb);
            loss_backward(dev, pc);
            CHECK(clt_optimizer_step(opt));
        }
        const ref_opts *want_of[3] = {&g0[k], &g1[k], &g0[k]};
        clt_tensor *ps[3] = {pa, pb, pc};
        for (int g = 0; g < 3; g++) {
            double got[N], want[N];
            memcpy(want, P0, sizeof want);
            reference(want_of[g], want);
            read_f64(ps[g], got);
            for (int i = 0; i < N; i++)
                cr_assert(close_enough(got[i], want[i], 1e-12, 1e-14),
                          "kind %d, group %d, element %d: %.17g vs %.17g", g0[k].kind, g, i,
                          got[i], want[i]);
        }
        double a[N], b[N];
        read_f64(pa, a);
        read_f64(pb, b);
        cr_assert(fabs(a[0] - b[0]) > 1e-6, "kind %d: the groups moved alike", g0[k].kind);
        clt_optimizer_free(opt);
        clt_tensor_free(pa);
        clt_tensor_free(pb);
        clt_tensor_free(pc);
    }
}

/* Adadelta, Rprop and ASGD (and SGD with momentum in one group only): a
 * two-group optimizer gives each parameter the bits of a one-group
 * optimizer with its group's settings. */
Test(optim, param_groups_match_separate_optimizers)
{
    clt_device *dev = get_device("cpu");
    clt_adadelta_opts d0 = CLT_ADADELTA_DEFAULTS, d1 = {0.5, 0.8, 1e-4, 0.05};
    clt_rprop_opts r0 = CLT_RPROP_DEFAULTS, r1 = {0.23, 0.4, 1.5, 0.05, 0.5};
    clt_asgd_opts a0 = {0.05, 0.01, 0.6, 2.0, 0.01}, a1 = {0.2, 1e-4, 0.75, 1.0, 0.0};
    clt_sgd_opts s0 = {0.1, 0.0, 0.0, 0.0, 0}, s1 = {0.05, 0.9, 0.1, 0.01, 0};
    const void *first[] = {&d0, &r0, &a0, &s0}, *second[] = {&d1, &r1, &a1, &s1};
    for (int k = 0; k < 4; k++) {
        clt_tensor *p[2], *q[2];
        clt_optimizer *two, *one[2];
        for (int j = 0; j < 2; j++) {
            p[j] = param_at(dev, CLT_FLOAT32);
            q[j] = param_at(dev, CLT_FLOAT32);
        }
        for (int j = 0; j < 2; j++) {
            const void *o = j ? second[k] : first[k];
            clt_tensor **at = j ? &q[1] : &q[0];
            CHECK(k == 0   ? clt_adadelta(at, 1, o, &one[j])
                  : k == 1 ? clt_rprop(at, 1, o, &one[j])
                  : k == 2 ? clt_asgd(at, 1, o, &one[j])
                           : clt_sgd(at, 1, o, &one[j]));
        }
        CHECK(k == 0   ? clt_adadelta(&p[0], 1, first[k], &two)
              : k == 1 ? clt_rprop(&p[0], 1, first[k], &two)
              : k == 2 ? clt_asgd(&p[0], 1, first[k], &two)
                       : clt_sgd(&p[0], 1, first[k], &two));
        CHECK(clt_optimizer_add_param_group(two, &p[1], 1, second[k]));
        for (int t = 0; t < 6; t++) {
            CHECK(clt_optimizer_zero_grad(two, 1));
            for (int j = 0; j < 2; j++) {
                CHECK(clt_optimizer_zero_grad(one[j], 1));
                loss_backward(dev, p[j]);
                loss_backward(dev, q[j]);
                CHECK(clt_optimizer_step(one[j]));
            }
            CHECK(clt_optimizer_step(two));
        }
        for (int j = 0; j < 2; j++) {
            float *a = read_f32(p[j]), *b = read_f32(q[j]);
            cr_assert(memcmp(a, b, N * sizeof *a) == 0, "kind %d, group %d: not the bits of a "
                      "one-group optimizer (%.9g vs %.9g)", k, j, a[0], b[0]);
            cr_assert(a[0] != (float)P0[0], "kind %d, group %d: did not move", k, j);
            free(a);
            free(b);
        }
        clt_optimizer_free(two);
        for (int j = 0; j < 2; j++) {
            clt_optimizer_free(one[j]);
            clt_tensor_free(p[j]);
            clt_tensor_free(q[j]);
        }
    }
}

/* What clt_optimizer_add_param_group refuses, the optimizer unchanged,
 * with torch's messages; the per-group getters and setters; NULL takes
 * the constructor's settings, not a schedule's rate. */
Test(optim, param_group_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = param_at(dev, CLT_FLOAT32), *b = param_at(dev, CLT_FLOAT32);
    clt_tensor *c = param_at(dev, CLT_FLOAT32);
    clt_optimizer *opt;
    clt_sgd_opts so = {0.1, 0.9, 0.0, 0.0, 0};
    CHECK(clt_sgd(&a, 1, &so, &opt));
    assert_error(clt_optimizer_add_param_group(opt, &a, 1, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "some parameters appear in more than one parameter group");
    clt_tensor *ab[2] = {b, a};
    assert_error(clt_optimizer_add_param_group(opt, ab, 2, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "some parameters appear in more than one parameter group");
    clt_tensor *alias = detached_part(a, 2, 3);
    CHECK(clt_set_requires_grad(alias, 1));
    assert_error(clt_optimizer_add_param_group(opt, &alias, 1, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "some parameters appear in more than one parameter group");
    clt_tensor *bb[2] = {b, b};
    assert_error(clt_optimizer_add_param_group(opt, bb, 2, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "parameter 1 is parameter 0 given again");
    clt_tensor *computed;
    CHECK(clt_mul_scalar(b, 2.0, &computed));
    assert_error(clt_optimizer_add_param_group(opt, &computed, 1, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "not a leaf that requires grad");
    assert_error(clt_optimizer_add_param_group(opt, &b, 0, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "empty parameter list");
    assert_error(clt_optimizer_add_param_group(opt, &b, 1, &(clt_sgd_opts){-0.1, 0, 0, 0, 0}),
                 CLT_ERR_INVALID_ARGUMENT, "invalid learning rate");
    assert_error(clt_optimizer_add_param_group(opt, &b, 1, &(clt_sgd_opts){0.1, 0, 0, 0, 1}),
                 CLT_ERR_INVALID_ARGUMENT, "Nesterov momentum requires");
    assert_error(clt_optimizer_add_param_group(NULL, &b, 1, NULL), CLT_ERR_NULL_ARGUMENT, "");
    assert_error(clt_optimizer_add_param_group(opt, NULL, 1, NULL), CLT_ERR_NULL_ARGUMENT, "");
    cr_assert_eq(clt_optimizer_num_groups(opt), 1);
    assert_error(clt_optimizer_set_group_lr(opt, 1, 0.5), CLT_ERR_INVALID_ARGUMENT,
                 "group 1 is out of range: the optimizer has 1 parameter group");
    assert_error(clt_optimizer_set_group_lr(opt, 0, NAN), CLT_ERR_INVALID_ARGUMENT,
                 "invalid learning rate");
    cr_assert(isnan(clt_optimizer_group_momentum(opt, 1)));
    cr_assert_eq(clt_optimizer_num_groups(NULL), 0);
    /* a refused group took nothing: the same tensors make a group now */
    CHECK(clt_optimizer_set_lr(opt, 0.05));
    CHECK(clt_optimizer_add_param_group(opt, &b, 1, NULL));
    CHECK(clt_optimizer_add_param_group(opt, &c, 1, &(clt_sgd_opts){0.3, 0.0, 0, 0, 0}));
    cr_assert_eq(clt_optimizer_num_groups(opt), 3);
    cr_assert(clt_optimizer_group_lr(opt, 1) == 0.1, "%g", clt_optimizer_group_lr(opt, 1));
    cr_assert(clt_optimizer_group_momentum(opt, 1) == 0.9);
    cr_assert(clt_optimizer_group_momentum(opt, 2) == 0.0);
    CHECK(clt_optimizer_set_group_lr(opt, 2, 0.7));
    cr_assert(clt_optimizer_group_lr(opt, 2) == 0.7 && clt_optimizer_group_lr(opt, 0) == 0.05);
    CHECK(clt_optimizer_set_lr(opt, 0.01));
    for (size_t g = 0; g < 3; g++)
        cr_assert(clt_optimizer_group_lr(opt, g) == 0.01);
    cr_assert(clt_optimizer_lr(opt) == 0.01);
    clt_optimizer_free(opt);
    clt_tensor_free(computed);
    clt_tensor_free(alias);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

/* An SGD over two groups, a (lr la, momentum 0.9) and b (lr lb, no
 * momentum), on float64 parameters. */
static clt_optimizer *two_groups(clt_device *dev, double la, double lb, clt_tensor **a,
                                 clt_tensor **b)
{
    clt_optimizer *opt;
    *a = param_at(dev, CLT_FLOAT64);
    *b = param_at(dev, CLT_FLOAT64);
    CHECK(clt_sgd(a, 1, &(clt_sgd_opts){la, 0.9, 0.0, 0.01, 0}, &opt));
    CHECK(clt_optimizer_add_param_group(opt, b, 1, &(clt_sgd_opts){lb, 0.0, 0.0, 0.0, 0}));
    return opt;
}

/* Schedules over two groups act on each with its own base rate (torch's
 * base_lrs, one per group); a group added after the schedule was made is
 * what torch 1.13 makes of it. */
Test(optim, schedules_over_param_groups)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a, *b, *c = param_at(dev, CLT_FLOAT64);
    clt_lr_scheduler *s;
    /* StepLR: each group base * gamma^(e / 2); a group added at epoch 5
     * is scaled with the others from then on (torch's chainable get_lr) */
    clt_optimizer *opt = two_groups(dev, 0.1, 0.01, &a, &b);
    CHECK(clt_step_lr(opt, 2, 0.5, &s));
    for (int64_t e = 1; e <= 5; e++) {
        CHECK(clt_lr_scheduler_step(s));
        cr_assert(clt_optimizer_group_lr(opt, 0) == 0.1 * pow(0.5, (double)(e / 2)));
        cr_assert(clt_optimizer_group_lr(opt, 1) == 0.01 * pow(0.5, (double)(e / 2)));
    }
    CHECK(clt_optimizer_add_param_group(opt, &c, 1, &(clt_sgd_opts){1.0, 0, 0, 0, 0}));
    double want_c[] = {0.5, 0.5, 0.25};
    for (int64_t e = 6; e <= 8; e++) {
        CHECK(clt_lr_scheduler_step(s));
        cr_assert(clt_optimizer_group_lr(opt, 0) == 0.1 * pow(0.5, (double)(e / 2)));
        cr_assert(clt_optimizer_group_lr(opt, 2) == want_c[e - 6], "epoch %lld: %.17g",
                  (long long)e, clt_optimizer_group_lr(opt, 2));
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);

    /* CosineAnnealingLR with eta_min, each group from its own base */
    opt = two_groups(dev, 0.1, 0.02, &a, &b);
    CHECK(clt_cosine_lr(opt, 4, 0.001, &s));
    for (int64_t e = 1; e <= 4; e++) {
        CHECK(clt_lr_scheduler_step(s));
        for (size_t g = 0; g < 2; g++) {
            double base = g ? 0.02 : 0.1;
            double want = 0.001 + (base - 0.001) * (1 + cos(M_PI * (double)e / 4)) / 2;
            cr_assert(close_enough(clt_optimizer_group_lr(opt, g), want, 1e-15, 1e-17),
                      "epoch %lld, group %zu: %.17g vs %.17g", (long long)e, g,
                      clt_optimizer_group_lr(opt, g), want);
        }
    }
    clt_lr_scheduler_free(s);

    /* LambdaLR: base * f(e) per group; a group added later is left */
    CHECK(clt_optimizer_set_group_lr(opt, 0, 0.1));
    CHECK(clt_optimizer_set_group_lr(opt, 1, 0.02));
    c = param_at(dev, CLT_FLOAT64);
    CHECK(clt_lambda_lr(opt, decay095, NULL, &s));
    CHECK(clt_optimizer_add_param_group(opt, &c, 1, &(clt_sgd_opts){0.7, 0, 0, 0, 0}));
    for (int64_t e = 1; e <= 3; e++) {
        CHECK(clt_lr_scheduler_step(s));
        /* initial_lr was set by the cosine schedule made first */
        cr_assert(clt_optimizer_group_lr(opt, 0) == 0.1 * pow(0.95, (double)e));
        cr_assert(clt_optimizer_group_lr(opt, 1) == 0.02 * pow(0.95, (double)e));
        cr_assert(clt_optimizer_group_lr(opt, 2) == 0.7);
    }
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);

    /* ReduceLROnPlateau: each group's rate times factor, not below min_lr;
     * a group added later fails the step that would reduce it (torch's
     * IndexError), nothing changed */
    opt = two_groups(dev, 0.1, 0.01, &a, &b);
    CHECK(clt_reduce_lr_on_plateau(opt, NULL, 0.5, 0, 1e-4, NULL, 0, 0.008, 1e-8, &s));
    CHECK(clt_lr_scheduler_step_metric(s, 1.0));
    CHECK(clt_lr_scheduler_step_metric(s, 2.0));
    cr_assert(clt_optimizer_group_lr(opt, 0) == 0.05 && clt_optimizer_group_lr(opt, 1) == 0.008);
    c = param_at(dev, CLT_FLOAT64);
    CHECK(clt_optimizer_add_param_group(opt, &c, 1, NULL));
    CHECK(clt_lr_scheduler_step_metric(s, 0.5)); /* better: nothing to reduce */
    assert_error(clt_lr_scheduler_step_metric(s, 3.0), CLT_ERR_INVALID_ARGUMENT,
                 "IndexError");
    cr_assert_eq(clt_lr_scheduler_epoch(s), 3);
    cr_assert(clt_optimizer_group_lr(opt, 0) == 0.05);
    clt_lr_scheduler_free(s);
    /* SequentialLR needs every group's initial_lr */
    clt_lr_scheduler *sub;
    CHECK(clt_step_lr(opt, 2, 0.5, &sub));
    clt_tensor *d = param_at(dev, CLT_FLOAT64);
    CHECK(clt_optimizer_add_param_group(opt, &d, 1, NULL));
    assert_error(clt_sequential_lr(opt, &sub, 1, NULL, &s), CLT_ERR_INVALID_ARGUMENT,
                 "parameter group 3 of the optimizer has no initial_lr");
    clt_lr_scheduler_free(sub);
    clt_tensor_free(d);
    clt_optimizer_free(opt);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);

    /* OneCycleLR cycling Adam's beta1: the same rate and momentum in both
     * groups (one max_lr for all, as torch given a float); a group added
     * later refuses the next step (torch's KeyError) */
    a = param_at(dev, CLT_FLOAT64);
    b = param_at(dev, CLT_FLOAT64);
    CHECK(clt_adam(&a, 1, NULL, &opt));
    CHECK(clt_optimizer_add_param_group(opt, &b, 1, &(clt_adam_opts){0.5, 0.5, 0.9, 1e-6, 0, 0}));
    CHECK(clt_one_cycle_lr_momentum(opt, 0.2, 10, 0.3, NULL, 10.0, 100.0, 0, 1, 0.8, 0.9, &s));
    for (int e = 0; e < 5; e++) {
        cr_assert(clt_optimizer_group_lr(opt, 0) == clt_optimizer_group_lr(opt, 1));
        cr_assert(clt_optimizer_group_momentum(opt, 0) == clt_optimizer_group_momentum(opt, 1));
        cr_assert(clt_optimizer_group_lr(opt, 0) ==
                  one_cycle_ref(0.2, 10, 0.3, 0, 10.0, 100.0, 0, e), "epoch %d", e);
        CHECK(clt_lr_scheduler_step(s));
    }
    double lr = clt_optimizer_group_lr(opt, 0);
    c = param_at(dev, CLT_FLOAT64);
    CHECK(clt_optimizer_add_param_group(opt, &c, 1, NULL));
    assert_error(clt_lr_scheduler_step(s), CLT_ERR_INVALID_ARGUMENT, "KeyError: 'initial_lr'");
    cr_assert(clt_optimizer_group_lr(opt, 0) == lr && clt_lr_scheduler_epoch(s) == 5);
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

/* A float64 parameter holding the N values v. */
static clt_tensor *param_from(clt_device *dev, const double *v)
{
    clt_tensor *p;
    int64_t n = N;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, v, &p));
    CHECK(clt_set_requires_grad(p, 1));
    return p;
}

static void two_group_steps(clt_device *dev, clt_optimizer *opt, clt_lr_scheduler *s,
                            clt_tensor *a, clt_tensor *b, int steps)
{
    for (int t = 0; t < steps; t++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        loss_backward(dev, a);
        loss_backward(dev, b);
        CHECK(clt_optimizer_step(opt));
        CHECK(clt_lr_scheduler_step(s));
    }
}

/* Two groups saved after 3 steps (optimizer and StepLR) and loaded into a
 * fresh optimizer of two groups made with the defaults and a fresh
 * schedule go on with the bits of the uninterrupted run; files of another
 * number of groups, or of groups of other sizes, are refused with torch's
 * messages, the optimizer unchanged. */
Test(optim, param_groups_save_and_load)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a, *b;
    clt_lr_scheduler *s;
    clt_optimizer *opt = two_groups(dev, 0.1, 0.03, &a, &b);
    CHECK(clt_step_lr(opt, 2, 0.5, &s));
    two_group_steps(dev, opt, s, a, b, 3);
    CHECK(clt_optimizer_save(opt, tpath("groups.optim.safetensors")));
    CHECK(clt_lr_scheduler_save(s, tpath("groups.sched.safetensors")));
    double at_a[N], at_b[N], want_a[N], want_b[N], got_a[N], got_b[N];
    read_f64(a, at_a);
    read_f64(b, at_b);
    two_group_steps(dev, opt, s, a, b, 3);
    read_f64(a, want_a);
    read_f64(b, want_b);

    clt_tensor *a2 = param_from(dev, at_a), *b2 = param_from(dev, at_b);
    clt_optimizer *fresh;
    clt_lr_scheduler *s2;
    CHECK(clt_sgd(&a2, 1, NULL, &fresh));
    CHECK(clt_optimizer_add_param_group(fresh, &b2, 1, NULL));
    CHECK(clt_step_lr(fresh, 5, 0.9, &s2));
    CHECK(clt_optimizer_load(fresh, tpath("groups.optim.safetensors")));
    CHECK(clt_lr_scheduler_load(s2, tpath("groups.sched.safetensors")));
    cr_assert(clt_optimizer_group_lr(fresh, 0) == 0.05 && clt_optimizer_group_lr(fresh, 1) == 0.015,
              "%g %g", clt_optimizer_group_lr(fresh, 0), clt_optimizer_group_lr(fresh, 1));
    cr_assert(clt_optimizer_group_momentum(fresh, 0) == 0.9 &&
              clt_optimizer_group_momentum(fresh, 1) == 0.0);
    two_group_steps(dev, fresh, s2, a2, b2, 3);
    read_f64(a2, got_a);
    read_f64(b2, got_b);
    cr_assert(memcmp(got_a, want_a, sizeof got_a) == 0 && memcmp(got_b, want_b, sizeof got_b) == 0,
              "resumed %.17g %.17g, uninterrupted %.17g %.17g", got_a[0], got_b[0], want_a[0],
              want_b[0]);
    cr_assert(clt_optimizer_group_lr(fresh, 0) == clt_optimizer_group_lr(opt, 0) &&
              clt_optimizer_group_lr(fresh, 1) == clt_optimizer_group_lr(opt, 1));

    /* one group: another number of groups */
    clt_tensor *ab[2] = {a2, b2};
    clt_optimizer *one;
    CHECK(clt_sgd(ab, 2, NULL, &one));
    assert_error(clt_optimizer_load(one, tpath("groups.optim.safetensors")),
                 CLT_ERR_INVALID_ARGUMENT,
                 "loaded state dict has a different number of parameter groups");
    cr_assert(clt_optimizer_num_groups(one) == 1 && clt_optimizer_lr(one) == 1e-3);
    /* and the schedule's base_lrs */
    clt_lr_scheduler *s1;
    CHECK(clt_step_lr(one, 2, 0.5, &s1));
    assert_error(clt_lr_scheduler_load(s1, tpath("groups.sched.safetensors")),
                 CLT_ERR_INVALID_ARGUMENT, "'base_lrs' is '[0.1, 0.03]', expected a list of one");
    clt_lr_scheduler_free(s1);
    clt_optimizer_free(one);
    /* groups of 1 and 2 parameters against a file of 2 and 1 */
    clt_tensor *c = param_at(dev, CLT_FLOAT64), *c2 = param_at(dev, CLT_FLOAT64);
    clt_tensor *bc[2] = {b, c}, *ab2[2] = {a2, b2};
    clt_optimizer *x, *y;
    CHECK(clt_sgd(&a, 1, NULL, &x));
    CHECK(clt_optimizer_add_param_group(x, bc, 2, NULL));
    CHECK(clt_optimizer_save(x, tpath("sizes.safetensors")));
    CHECK(clt_sgd(ab2, 2, NULL, &y));
    CHECK(clt_optimizer_add_param_group(y, &c2, 1, NULL));
    assert_error(clt_optimizer_load(y, tpath("sizes.safetensors")), CLT_ERR_INVALID_ARGUMENT,
                 "loaded state dict contains a parameter group that doesn't match the size of "
                 "optimizer's group");
    CHECK(clt_optimizer_load(x, tpath("sizes.safetensors")));
    clt_optimizer_free(x);
    clt_optimizer_free(y);
    clt_lr_scheduler_free(s);
    clt_lr_scheduler_free(s2);
    clt_optimizer_free(opt);
    clt_optimizer_free(fresh);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(c2);
    clt_tensor_free(a2);
    clt_tensor_free(b2);
}

/* Schedule k of schedule_kind_on over opt (and, for the two containers, the
 * schedules they take). */
static void schedule_kind_on(int k, clt_optimizer *opt, clt_lr_scheduler **s)
{
    clt_lr_scheduler *sub[2];
    static const int64_t ms[] = {2, 5, 5};
    switch (k) {
    case 0:
        CHECK(clt_exponential_lr(opt, 0.8, s));
        break;
    case 1:
        CHECK(clt_multistep_lr(opt, ms, 3, 0.5, s));
        break;
    case 2:
        CHECK(clt_linear_lr(opt, 0.25, 1.0, 4, s));
        break;
    case 3:
        CHECK(clt_constant_lr(opt, 0.5, 3, s));
        break;
    case 4:
        CHECK(clt_polynomial_lr(opt, 6, 2.0, s));
        break;
    case 5:
        CHECK(clt_cosine_warm_restarts(opt, 3, 2, 0.001, s));
        break;
    case 6:
        CHECK(clt_multiplicative_lr(opt, times09, NULL, s));
        break;
    case 7:
        CHECK(clt_cyclic_lr(opt, 0.01, 0.2, 2, -1, "triangular2", 1.0, NULL, NULL, NULL, 1, 0.8,
                            0.9, s));
        break;
    case 8:
        CHECK(clt_linear_lr(opt, 0.1, 1.0, 3, &sub[0]));
        CHECK(clt_cosine_lr(opt, 5, 0.001, &sub[1]));
        CHECK(clt_sequential_lr(opt, sub, 2, (int64_t[]){3}, s));
        break;
    default:
        CHECK(clt_constant_lr(opt, 0.5, 2, &sub[0]));
        CHECK(clt_exponential_lr(opt, 0.9, &sub[1]));
        CHECK(clt_chained_scheduler(sub, 2, s));
    }
}

/* Every other kind of schedule over two groups gives each group the rates
 * (and momenta) a one-group optimizer at that group's rate gets, bit for
 * bit (those are checked against torch's elsewhere); the schedule's file
 * holds a base rate per group and loads back. */
Test(optim, every_schedule_over_param_groups)
{
    clt_device *dev = get_device("cpu");
    for (int k = 0; k < 10; k++) {
        clt_tensor *a, *b, *q[2];
        clt_optimizer *two = two_groups(dev, 0.1, 0.03, &a, &b), *one[2];
        clt_lr_scheduler *s, *s1[2];
        static const double lr[2] = {0.1, 0.03};
        schedule_kind_on(k, two, &s);
        for (int g = 0; g < 2; g++) {
            q[g] = param_at(dev, CLT_FLOAT64);
            CHECK(clt_sgd(&q[g], 1, &(clt_sgd_opts){lr[g], g ? 0.0 : 0.9, 0, 0, 0}, &one[g]));
            schedule_kind_on(k, one[g], &s1[g]);
        }
        bool moved = false;
        for (int e = 0; e < 9; e++) {
            moved = moved || clt_optimizer_group_lr(two, 1) != 0.03;
            for (size_t g = 0; g < 2; g++) {
                cr_assert(clt_optimizer_group_lr(two, g) == clt_optimizer_lr(one[g]),
                          "kind %d, epoch %d, group %zu: %.17g vs %.17g", k, e, g,
                          clt_optimizer_group_lr(two, g), clt_optimizer_lr(one[g]));
                cr_assert(clt_optimizer_group_momentum(two, g) == clt_optimizer_momentum(one[g]),
                          "kind %d, epoch %d, group %zu: momentum", k, e, g);
            }
            if (e == 4) {
                /* through the schedule's file and back */
                CHECK(clt_lr_scheduler_save(s, tpath("every.safetensors")));
                CHECK(clt_lr_scheduler_load(s, tpath("every.safetensors")));
            }
            CHECK(clt_lr_scheduler_step(s));
            for (int g = 0; g < 2; g++)
                CHECK(clt_lr_scheduler_step(s1[g]));
        }
        cr_assert(moved, "kind %d: the rates never moved", k);
        clt_lr_scheduler_free(s);
        clt_optimizer_free(two);
        clt_tensor_free(a);
        clt_tensor_free(b);
        for (int g = 0; g < 2; g++) {
            clt_lr_scheduler_free(s1[g]);
            clt_optimizer_free(one[g]);
            clt_tensor_free(q[g]);
        }
    }
}

/* ---- several parameters per launch --------------------------------------------------- */

enum { MP = 12, MP_STEPS = 4 };

/* The parameters of multi_case: shapes of several ranks, one with no
 * element, one (4) that never gets a gradient, one (6) that misses it at
 * the second step (its update count then lags the others'), one of 12000
 * elements (several work-items), and the last a part of a larger buffer
 * (at an offset in it). */
static const int64_t mp_shape[MP][3] = {{3, 5, 0}, {7, 0, 0}, {0, 0, 0}, {2, 3, 4}, {1, 0, 0},
                                        {40, 300, 0}, {5, 0, 0}, {4, 0, 0}, {6, 2, 0},
                                        {9, 0, 0}, {3, 0, 0}, {9, 0, 0}};
static const int mp_ndim[MP] = {2, 1, 1, 3, 1, 2, 1, 1, 2, 1, 1, 1};

static int64_t mp_numel(int k)
{
    int64_t n = 1;
    for (int d = 0; d < mp_ndim[k]; d++)
        n *= mp_shape[k][d];
    return n;
}

/* A tensor of dtype dt and parameter k's shape holding f(k, e, salt). */
static clt_tensor *mp_tensor(clt_device *dev, clt_dtype dt, int k, double salt)
{
    int64_t n = mp_numel(k);
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    cr_assert(h);
    for (int64_t e = 0; e < n; e++)
        h[e] = sin(1.0 + 0.37 * (double)e + 1.1 * k + salt) * (1.0 + 0.25 * k);
    clt_tensor *d, *t;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, mp_ndim[k], mp_shape[k], h, &d));
    CHECK(clt_to_dtype(d, dt, &t));
    clt_tensor_free(d);
    free(h);
    return t;
}

/* Parameter k of one set: a leaf, the last one a part of base (its
 * elements 5 to 14 of 20). */
static clt_tensor *mp_param(clt_device *dev, clt_dtype dt, int k, clt_tensor **base)
{
    clt_tensor *t = mp_tensor(dev, dt, k, 0.0);
    if (k == MP - 1) {
        clt_tensor *b0, *b, *cat;
        CHECK(clt_zeros(dev, dt, 1, (int64_t[]){5}, &b0));
        CHECK(clt_zeros(dev, dt, 1, (int64_t[]){6}, &b));
        CHECK(clt_cat((const clt_tensor *const[]){b0, t, b}, 3, 0, &cat));
        clt_tensor_free(b0);
        clt_tensor_free(b);
        clt_tensor_free(t);
        *base = cat;
        t = detached_part(cat, 5, mp_numel(k));
    }
    CHECK(clt_set_requires_grad(t, 1));
    return t;
}

/* Whether parameter k has a gradient at step s. */
static bool mp_has_grad(int k, int s)
{
    return k != 4 && !(k == 6 && s == 1);
}

/* The optimizer o over a set of MP parameters per launch (B) and over
 * another with one launch per parameter (A, CLTENSOR_OPTIM=per_param),
 * MP_STEPS steps with the same gradients: the parameters hold the same
 * bits after each, and B's step took fewer launches. */
static void multi_case(const ref_opts *o, clt_dtype dt)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *pa[MP], *pb[MP], *base[2] = {NULL, NULL};
    for (int k = 0; k < MP; k++) {
        pa[k] = mp_param(dev, dt, k, &base[0]);
        pb[k] = mp_param(dev, dt, k, &base[1]);
    }
    clt_optimizer *a, *b;
    make_optimizer(o, pa, MP, &a);
    make_optimizer(o, pb, MP, &b);
    size_t es = clt_dtype_size(dt);
    for (int s = 0; s < (o->steps ? o->steps : MP_STEPS); s++) {
        CHECK(clt_optimizer_zero_grad(a, 1));
        CHECK(clt_optimizer_zero_grad(b, 1));
        int stepped = 0;
        for (int k = 0; k < MP; k++) {
            if (!mp_has_grad(k, s))
                continue;
            give_grad(pa[k], mp_tensor(dev, dt, k, 0.53 * (s + 1)));
            give_grad(pb[k], mp_tensor(dev, dt, k, 0.53 * (s + 1)));
            stepped += mp_numel(k) > 0;
        }
        clt_stats s0, s1, s2;
        setenv("CLTENSOR_OPTIM", "per_param", 1);
        clt_stats_get(&s0);
        CHECK(clt_optimizer_step(a));
        clt_stats_get(&s1);
        setenv("CLTENSOR_OPTIM", "multi", 1);
        CHECK(clt_optimizer_step(b));
        clt_stats_get(&s2);
        uint64_t la = s1.kernel_launches - s0.kernel_launches;
        uint64_t lb = s2.kernel_launches - s1.kernel_launches;
        cr_assert_eq(la, (uint64_t)stepped, "kind %d, step %d: %llu launches per parameter", o->kind,
                     s, (unsigned long long)la);
        cr_assert(lb >= (uint64_t)(stepped + 7) / 8 && lb < la,
                  "kind %d, step %d: %llu launches for %d parameters", o->kind, s,
                  (unsigned long long)lb, stepped);
        for (int k = 0; k < MP; k++) {
            size_t bytes = (size_t)mp_numel(k) * es;
            unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
            cr_assert(x && y);
            CHECK(clt_tensor_read(pa[k], x, bytes));
            CHECK(clt_tensor_read(pb[k], y, bytes));
            cr_assert(memcmp(x, y, bytes) == 0,
                      "kind %d (momentum %g, nesterov %d, wd %g, amsgrad %d, centered %d), "
                      "%s, step %d: parameter %d differs",
                      o->kind, o->momentum, o->nesterov, o->wd, o->amsgrad, o->centered,
                      clt_dtype_name(dt), s, k);
            free(x);
            free(y);
        }
    }
    /* the part leaves the rest of its buffer alone */
    for (int j = 0; j < 2; j++) {
        double h[20];
        clt_tensor *d;
        CHECK(clt_to_dtype(base[j], CLT_FLOAT64, &d));
        CHECK(clt_tensor_read(d, h, sizeof h));
        clt_tensor_free(d);
        for (int e = 0; e < 20; e++)
            if (e < 5 || e >= 14)
                cr_assert_eq(h[e], 0.0, "element %d of the part's buffer changed", e);
    }
    clt_optimizer_free(a);
    clt_optimizer_free(b);
    for (int k = 0; k < MP; k++) {
        clt_tensor_free(pa[k]);
        clt_tensor_free(pb[k]);
    }
    clt_tensor_free(base[0]);
    clt_tensor_free(base[1]);
}

/* SGD (plain; momentum with dampening and weight decay; Nesterov), Adam
 * and AdamW (with weight decay, with amsgrad), RMSprop (momentum,
 * centered, weight decay), Adagrad (lr_decay, initial accumulator), Adamax,
 * NAdam, RAdam (past its rectification's start), Adadelta, Rprop (the step
 * sizes' bounds reached) and ASGD (averaging from the second update) update
 * several parameters per launch, giving the bits of one launch per
 * parameter, in float32 and float64. */
Test(optim, several_parameters_per_launch_same_bits)
{
    /* set before the devices start; only its value changes after */
    setenv("CLTENSOR_OPTIM", "multi", 1);
    const ref_opts cases[] = {
        {.kind = 0, .lr = 0.1},
        {.kind = 0, .lr = 0.1, .momentum = 0.9, .dampening = 0.2, .wd = 0.01},
        {.kind = 0, .lr = 0.05, .momentum = 0.8, .wd = 0.02, .nesterov = 1},
        {.kind = 1, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8},
        {.kind = 1, .lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .wd = 0.1,
         .amsgrad = 1},
        {.kind = 2, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .wd = 0.1},
        {.kind = 2, .lr = 0.02, .beta1 = 0.0, .beta2 = 0.9, .eps = 1e-8, .wd = 0.05,
         .amsgrad = 1},
        {.kind = 3, .lr = 0.01, .alpha = 0.99, .eps = 1e-8},
        {.kind = 3, .lr = 0.01, .alpha = 0.9, .eps = 1e-6, .wd = 0.1, .momentum = 0.9,
         .centered = 1},
        {.kind = 3, .lr = 0.02, .alpha = 0.95, .eps = 1e-8, .momentum = 0.5},
        {.kind = 3, .lr = 0.02, .alpha = 0.95, .eps = 1e-8, .wd = 0.01, .centered = 1},
        {.kind = 4, .lr = 0.1, .eps = 1e-10},
        {.kind = 4, .lr = 0.1, .lr_decay = 0.1, .wd = 0.05, .init = 0.5, .eps = 1e-6},
        {.kind = 5, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8},
        {.kind = 5, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.9, .eps = 1e-3, .wd = 0.1},
        {.kind = 6, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
         .momentum_decay = 4e-3},
        {.kind = 6, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .wd = 0.1,
         .momentum_decay = 0.1},
        {.kind = 7, .lr = 0.02, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .steps = 7},
        {.kind = 7, .lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .wd = 0.1, .steps = 7},
        {.kind = 8, .lr = 1.0, .rho = 0.9, .eps = 1e-6},
        {.kind = 8, .lr = 0.5, .rho = 0.8, .eps = 1e-4, .wd = 0.1},
        {.kind = 9, .lr = 0.01, .etaminus = 0.5, .etaplus = 1.2, .lo = 1e-6, .hi = 50},
        {.kind = 9, .lr = 0.02, .etaminus = 0.3, .etaplus = 1.9, .lo = 0.015, .hi = 0.03},
        {.kind = 10, .lr = 0.01, .lambd = 1e-4, .alpha = 0.75, .t0 = 1e6},
        {.kind = 10, .lr = 0.05, .lambd = 0.1, .alpha = 0.5, .t0 = 1, .wd = 0.02},
    };
    const clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int d = 0; d < 2; d++)
            multi_case(&cases[c], dts[d]);
}
