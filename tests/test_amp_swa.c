/* test_amp_swa.c: GradScaler (its scale sequence against a host
 * simulation of torch's, steps skipped on injected overflow with the
 * parameters bit for bit as before, its errors and its file) and
 * swa_utils (AveragedModel's SWA mean and EMA against host averages in
 * double, update_bn against host batch statistics, SWALR's rates against
 * torch's formulas). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

enum { N = 5 };

static const float C[N] = {0.5f, -1.25f, 2.0f, 0.375f, -0.75f};
static const float P0[N] = {1.0f, -0.5f, 0.25f, 2.0f, -1.5f};

/* Backward of scaler.scale(sum(0.5 c p^2) * boost): p's gradient is scale
 * boost c p (inf with an infinite boost). */
static void scaled_backward(clt_grad_scaler *s, clt_tensor *p, double boost)
{
    int64_t n = N;
    clt_tensor *c, *pp, *q, *l, *b, *sum, *scaled;
    CHECK(clt_scope_begin());
    CHECK(clt_tensor_from_host(clt_tensor_device(p), CLT_FLOAT32, 1, &n, C, &c));
    CHECK(clt_mul(p, p, &pp));
    CHECK(clt_mul(pp, c, &q));
    CHECK(clt_mul_scalar(q, 0.5, &l));
    CHECK(clt_sum(l, &sum));
    CHECK(clt_mul_scalar(sum, boost, &b));
    CHECK(clt_grad_scaler_scale(s, b, &scaled));
    CHECK(clt_backward(scaled, NULL, 0));
    clt_scope_end();
}

static clt_tensor *param(clt_device *dev, const float *v)
{
    int64_t n = N;
    clt_tensor *p;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, v, &p));
    CHECK(clt_set_requires_grad(p, 1));
    return p;
}

/* SGD with lr 0.1 over the n tensors p. */
static clt_optimizer *sgd(clt_tensor **p, size_t n)
{
    clt_sgd_opts so = {0.1, 0, 0, 0, 0};
    clt_optimizer *opt;
    CHECK(clt_sgd(p, n, &so, &opt));
    return opt;
}

/* torch's _amp_update_scale_ on the host. */
static void host_update(float *scale, int64_t *tracker, bool found, double growth,
                        double backoff, int64_t interval)
{
    if (found) {
        *scale = (float)((double)*scale * backoff);
        *tracker = 0;
    } else if (*tracker + 1 == interval) {
        float g = (float)((double)*scale * growth);
        if (isfinite(g))
            *scale = g;
        *tracker = 0;
    } else {
        ++*tracker;
    }
}

/* A training run of SGD under the scaler with overflows injected at the
 * steps marked: those are skipped (the parameters bit for bit as before),
 * the others take p -= lr c p with the unscaled gradient, and the scale
 * and growth tracker follow torch's rule step by step. */
Test(amp, injected_overflows_skip_exactly_those_steps)
{
    clt_device *dev = get_device("cpu:0");
    static const int inject[] = {0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0};
    enum { STEPS = sizeof inject / sizeof inject[0] };
    const clt_grad_scaler_opts o = {1024.0, 2.0, 0.25, 3, 1};
    clt_grad_scaler *s;
    CHECK(clt_grad_scaler_new(&o, &s));
    clt_tensor *p = param(dev, P0);
    clt_optimizer *opt = sgd(&p, 1);
    float host[N], scale = 1024.0f;
    double ref[N];
    int64_t tracker = 0;
    for (int k = 0; k < N; k++)
        ref[k] = P0[k];
    for (int t = 0; t < STEPS; t++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        scaled_backward(s, p, inject[t] ? INFINITY : 1.0);
        float before[N], after[N];
        CHECK(clt_tensor_read(p, before, sizeof before));
        int stepped = -1;
        CHECK(clt_grad_scaler_step(s, opt, &stepped));
        CHECK(clt_tensor_read(p, after, sizeof after));
        cr_assert_eq(stepped, !inject[t], "step %d: stepped %d", t, stepped);
        if (inject[t]) {
            cr_assert(memcmp(before, after, sizeof before) == 0,
                      "step %d was skipped but the parameters changed", t);
        } else {
            for (int k = 0; k < N; k++) {
                ref[k] -= 0.1 * C[k] * ref[k];
                cr_assert(fabs(after[k] - ref[k]) <= 1e-5 * fabs(ref[k]) + 1e-6,
                          "step %d, p[%d] %.9g, want %.9g", t, k, after[k], ref[k]);
            }
        }
        CHECK(clt_grad_scaler_update(s, NULL));
        host_update(&scale, &tracker, inject[t], 2.0, 0.25, 3);
        cr_assert_eq(clt_grad_scaler_get_scale(s), (double)scale, "step %d: scale %g, want %g",
                     t, clt_grad_scaler_get_scale(s), (double)scale);
        cr_assert_eq(clt_grad_scaler_growth_tracker(s), tracker, "step %d: tracker %lld, want %lld",
                     t, (long long)clt_grad_scaler_growth_tracker(s), (long long)tracker);
    }
    /* 4 overflows, 12 good steps: the run's scale is not its start */
    cr_assert_neq(scale, 1024.0f);
    CHECK(clt_tensor_read(p, host, sizeof host));
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_grad_scaler_free(s);
}

/* unscale_ divides the gradients by the scale (float32 reciprocal) on the
 * device, and a NaN is found as an inf is. */
Test(amp, unscale_divides_and_finds_nan)
{
    clt_device *dev = get_device("cpu:0");
    const clt_grad_scaler_opts o = {4096.0, 2.0, 0.5, 2000, 1};
    clt_grad_scaler *s;
    CHECK(clt_grad_scaler_new(&o, &s));
    clt_tensor *p = param(dev, P0);
    clt_optimizer *opt = sgd(&p, 1);
    scaled_backward(s, p, 1.0);
    CHECK(clt_grad_scaler_unscale_(s, opt));
    clt_tensor *g;
    CHECK(clt_grad(p, &g));
    float *h = read_f32(g);
    for (int k = 0; k < N; k++) {
        double want = (double)C[k] * P0[k];
        cr_assert(fabs(h[k] - want) <= 1e-6 * fabs(want), "g[%d] %.9g, want %.9g", k, h[k], want);
    }
    free(h);
    clt_tensor_free(g);
    int stepped = -1;
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 1);
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_growth_tracker(s), 1);

    /* a NaN gradient (0 * inf in the loss) */
    float nanp[N] = {1.0f, NAN, 0.5f, 0.5f, 0.5f};
    CHECK(clt_optimizer_zero_grad(opt, 1));
    clt_tensor *p2 = param(dev, nanp);
    clt_optimizer *opt2 = sgd(&p2, 1);
    scaled_backward(s, p2, 1.0);
    CHECK(clt_grad_scaler_step(s, opt2, &stepped));
    cr_assert_eq(stepped, 0, "a NaN gradient must skip the step");
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_get_scale(s), 2048.0);
    cr_assert_eq(clt_grad_scaler_growth_tracker(s), 0);
    clt_optimizer_free(opt);
    clt_optimizer_free(opt2);
    clt_tensor_free(p);
    clt_tensor_free(p2);
    clt_grad_scaler_free(s);
}

/* float64 gradients are unscaled in float64 (by the float32 reciprocal, as
 * torch's kernel takes it) and checked as float32 ones. */
Test(amp, float64_gradients)
{
    clt_device *dev = get_device("cpu:0");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64 on %s", clt_device_label(dev));
    const clt_grad_scaler_opts o = {3.0, 2.0, 0.5, 2000, 1};
    clt_grad_scaler *s;
    CHECK(clt_grad_scaler_new(&o, &s));
    const double v[N] = {1.0, -2.0, 1e308, 0.5, 3.0};
    int64_t n = N;
    clt_tensor *p, *sum, *scaled, *g;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, v, &p));
    CHECK(clt_set_requires_grad(p, 1));
    clt_optimizer *opt = sgd(&p, 1);
    CHECK(clt_mul(p, p, &sum));
    clt_tensor *l;
    CHECK(clt_sum(sum, &l));
    CHECK(clt_grad_scaler_scale(s, l, &scaled));
    CHECK(clt_backward(scaled, NULL, 0));
    CHECK(clt_grad_scaler_unscale_(s, opt));
    CHECK(clt_grad(p, &g));
    double h[N];
    CHECK(clt_tensor_read(g, h, sizeof h));
    for (int k = 0; k < N; k++) {
        /* 3 * 2 v in float64, times (float)(1 / 3.0) */
        double want = (3.0 * 2.0 * v[k]) * (double)(float)(1.0 / 3.0);
        if (k == 2)
            cr_assert(isinf(h[k]), "g[2] %g: 6e308 overflows float64", h[k]);
        else
            cr_assert_eq(h[k], want, "g[%d] %.17g, want %.17g", k, h[k], want);
    }
    int stepped = -1;
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 0, "the float64 gradient's inf must skip the step");
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(sum);
    clt_tensor_free(scaled);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_grad_scaler_free(s);
}

/* The scale does not grow past float32's range: torch keeps it. */
Test(amp, growth_stops_at_float32_max)
{
    clt_device *dev = get_device("cpu:0");
    const clt_grad_scaler_opts o = {ldexp(1.0, 127), 2.0, 0.5, 1, 1};
    clt_grad_scaler *s;
    CHECK(clt_grad_scaler_new(&o, &s));
    static const float small[N] = {1e-20f, 1e-20f, 1e-20f, 1e-20f, 1e-20f};
    clt_tensor *p = param(dev, small);
    clt_optimizer *opt = sgd(&p, 1);
    scaled_backward(s, p, 1.0);
    CHECK(clt_grad_scaler_step(s, opt, NULL));
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_get_scale(s), ldexp(1.0, 127));
    cr_assert_eq(clt_grad_scaler_growth_tracker(s), 0);
    double ns = 8.0;
    CHECK(clt_grad_scaler_update(s, &ns));
    cr_assert_eq(clt_grad_scaler_get_scale(s), 8.0);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_grad_scaler_free(s);
}

static void expect_fail(clt_status st, clt_status want, const char *text)
{
    cr_assert_eq(st, want, "status %s, want %s: %s", clt_status_name(st), clt_status_name(want),
                 clt_last_error());
    cr_assert(strstr(clt_last_error(), text) != NULL, "message '%s' lacks '%s'",
              clt_last_error(), text);
}

Test(amp, errors_as_torch)
{
    clt_device *dev = get_device("cpu:0");
    clt_grad_scaler *s = NULL;
    clt_grad_scaler_opts bad = {65536.0, 1.0, 0.5, 2000, 1};
    expect_fail(clt_grad_scaler_new(&bad, &s), CLT_ERR_INVALID_ARGUMENT,
                "The growth factor must be > 1.0.");
    cr_assert_null(s);
    bad = (clt_grad_scaler_opts){65536.0, 2.0, 1.0, 2000, 1};
    expect_fail(clt_grad_scaler_new(&bad, &s), CLT_ERR_INVALID_ARGUMENT,
                "The backoff factor must be < 1.0.");
    CHECK(clt_grad_scaler_new(NULL, &s));
    cr_assert_eq(clt_grad_scaler_get_scale(s), 65536.0);
    expect_fail(clt_grad_scaler_update(s, NULL), CLT_ERR_INVALID_ARGUMENT,
                "No inf checks were recorded prior to update.");
    clt_tensor *p = param(dev, P0);
    clt_optimizer *opt = sgd(&p, 1);
    expect_fail(clt_grad_scaler_step(s, opt, NULL), CLT_ERR_INVALID_ARGUMENT,
                "No inf checks were recorded for this optimizer.");
    CHECK(clt_grad_scaler_update(s, (const double[]){65536.0}));
    scaled_backward(s, p, 1.0);
    CHECK(clt_grad_scaler_unscale_(s, opt));
    clt_tensor *g;
    CHECK(clt_grad(p, &g));
    float *once = read_f32(g);
    expect_fail(clt_grad_scaler_unscale_(s, opt), CLT_ERR_INVALID_ARGUMENT,
                "unscale_() has already been called on this optimizer since the last update().");
    float *still = read_f32(g);
    cr_assert(memcmp(once, still, N * sizeof *once) == 0, "a refused unscale_ changed the gradient");
    free(once);
    free(still);
    clt_tensor_free(g);
    CHECK(clt_grad_scaler_step(s, opt, NULL));
    expect_fail(clt_grad_scaler_step(s, opt, NULL), CLT_ERR_INVALID_ARGUMENT,
                "step() has already been called since the last update().");
    expect_fail(clt_grad_scaler_unscale_(s, opt), CLT_ERR_INVALID_ARGUMENT,
                "unscale_() is being called after step().");
    expect_fail(clt_grad_scaler_update(s, (const double[]){INFINITY}), CLT_ERR_INVALID_ARGUMENT,
                "scale inf");
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_growth_tracker(s), 1);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_grad_scaler_free(s);
}

Test(amp, disabled_is_the_plain_step)
{
    clt_device *dev = get_device("cpu:0");
    const clt_grad_scaler_opts o = {65536.0, 2.0, 0.5, 2000, 0};
    clt_grad_scaler *s;
    CHECK(clt_grad_scaler_new(&o, &s));
    cr_assert_eq(clt_grad_scaler_get_scale(s), 1.0);
    clt_tensor *p = param(dev, P0), *out;
    CHECK(clt_grad_scaler_scale(s, p, &out));
    /* p itself, through a handle of its own */
    float ho[N];
    CHECK(clt_tensor_read(out, ho, sizeof ho));
    for (int k = 0; k < N; k++)
        cr_assert_eq(ho[k], P0[k]);
    cr_assert_eq(clt_requires_grad(out), 1);
    clt_tensor_free(out);
    /* a loss made in a scope goes with the scope, the scaled handle released
     * (it was p retained: releasing it took the scope's reference) */
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    CHECK(clt_scope_begin());
    clt_tensor *loss = NULL;
    CHECK(clt_mul_scalar(p, 3.0, &loss));
    CHECK(clt_grad_scaler_scale(s, loss, &out));
    clt_tensor_free(out);
    clt_scope_end();
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%llu bytes left in tensors",
                 (unsigned long long)(after.requested - before.requested));
    clt_optimizer *opt = sgd(&p, 1);
    scaled_backward(s, p, 1.0);
    int stepped = 0;
    CHECK(clt_grad_scaler_unscale_(s, opt));
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 1);
    CHECK(clt_grad_scaler_update(s, NULL));
    float h[N];
    CHECK(clt_tensor_read(p, h, sizeof h));
    for (int k = 0; k < N; k++)
        cr_assert_float_eq(h[k], P0[k] - 0.1f * C[k] * P0[k], 1e-6);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_grad_scaler_free(s);
}

/* The flags are per device: an inf on the second device alone skips the
 * step of parameters on both. */
Test(amp, inf_on_one_device_skips_all)
{
    clt_device *dev = get_device("cpu:0"), *dev2 = second_device(dev);
    clt_grad_scaler *s;
    CHECK(clt_grad_scaler_new(NULL, &s));
    clt_tensor *p[2] = {param(dev, P0), param(dev2, P0)};
    clt_optimizer *opt = sgd(p, 2);
    scaled_backward(s, p[0], 1.0);
    scaled_backward(s, p[1], INFINITY);
    float before[N], after[N];
    CHECK(clt_tensor_read(p[0], before, sizeof before));
    int stepped = -1;
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 0);
    CHECK(clt_tensor_read(p[0], after, sizeof after));
    cr_assert(memcmp(before, after, sizeof before) == 0);
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_get_scale(s), 32768.0);
    /* the next round, finite on both: a step */
    CHECK(clt_optimizer_zero_grad(opt, 1));
    scaled_backward(s, p[0], 1.0);
    scaled_backward(s, p[1], 1.0);
    CHECK(clt_grad_scaler_step(s, opt, &stepped));
    cr_assert_eq(stepped, 1);
    CHECK(clt_grad_scaler_update(s, NULL));
    cr_assert_eq(clt_grad_scaler_growth_tracker(s), 1);
    clt_optimizer_free(opt);
    clt_tensor_free(p[0]);
    clt_tensor_free(p[1]);
    clt_grad_scaler_free(s);
}

Test(amp, file_round_trip)
{
    const clt_grad_scaler_opts o = {512.0, 3.0, 0.125, 7, 1};
    clt_grad_scaler *s, *t, *off;
    CHECK(clt_grad_scaler_new(&o, &s));
    CHECK(clt_grad_scaler_update(s, (const double[]){0.1}));
    char path[] = "/tmp/clt_scaler_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    CHECK(clt_grad_scaler_save(s, path));
    CHECK(clt_grad_scaler_new(NULL, &t));
    CHECK(clt_grad_scaler_load(t, path));
    cr_assert_eq(clt_grad_scaler_get_scale(t), (double)0.1f);
    clt_grad_scaler_opts d = {1.0, 2.0, 0.5, 1, 0};
    CHECK(clt_grad_scaler_new(&d, &off));
    CHECK(clt_grad_scaler_save(off, path));
    expect_fail(clt_grad_scaler_load(t, path), CLT_ERR_INVALID_ARGUMENT,
                "The source state dict is empty");
    cr_assert_eq(clt_grad_scaler_get_scale(t), (double)0.1f);
    remove(path);
    clt_grad_scaler_free(s);
    clt_grad_scaler_free(t);
    clt_grad_scaler_free(off);
}

long clt__driver_refuse_at(long pass); /* src/device/fault.c */

/* Each driver call of a scaler's step refused in turn, over three
 * parameters: the step fails with a message; retried, it either takes
 * the step (the refusal came before any gradient changed, or after all
 * were unscaled) or, when it came between the unscale launches, skips it
 * as for an inf, and the update backs off.  Never a step from gradients
 * half unscaled. */
Test(amp, driver_refusals)
{
    clt_device *dev = get_device("cpu:0");
    enum { NP = 3 };
    const float want0 = P0[0] - 0.1f * C[0] * P0[0];
    long pass = 0;
    int skipped = 0, taken = 0;
    for (;; pass++) {
        clt_grad_scaler *s;
        CHECK(clt_grad_scaler_new(NULL, &s));
        clt_tensor *p[NP] = {param(dev, P0), param(dev, P0), param(dev, P0)};
        clt_optimizer *opt = sgd(p, NP);
        for (int i = 0; i < NP; i++)
            scaled_backward(s, p[i], 1.0);
        clt__driver_refuse_at(pass);
        int stepped = -1;
        clt_status st = clt_grad_scaler_step(s, opt, &stepped);
        long left = clt__driver_refuse_at(-1);
        if (left < 0) {
            cr_assert_neq(st, CLT_OK, "driver call %ld refused and the step succeeded", pass);
            cr_assert(clt_last_error()[0] != '\0');
            cr_assert_eq(stepped, 0);
            CHECK(clt_grad_scaler_step(s, opt, &stepped));
        } else {
            CHECK(st);
        }
        CHECK(clt_grad_scaler_update(s, NULL));
        float h[NP][N];
        for (int i = 0; i < NP; i++)
            CHECK(clt_tensor_read(p[i], h[i], sizeof h[i]));
        if (stepped) {
            taken++;
            for (int i = 0; i < NP; i++)
                cr_assert_float_eq(h[i][0], want0, 1e-6, "driver call %ld: parameter %d", pass,
                                   i);
            cr_assert_eq(clt_grad_scaler_get_scale(s), 65536.0);
        } else {
            skipped++;
            for (int i = 0; i < NP; i++)
                cr_assert(memcmp(h[i], P0, sizeof P0) == 0, "driver call %ld: parameter %d moved",
                          pass, i);
            cr_assert_eq(clt_grad_scaler_get_scale(s), 32768.0);
        }
        clt_optimizer_free(opt);
        for (int i = 0; i < NP; i++)
            clt_tensor_free(p[i]);
        clt_grad_scaler_free(s);
        if (left >= 0)
            break;
    }
    cr_assert_gt(pass, 5, "only %ld driver calls", pass);
    cr_assert_gt(skipped, 0, "no refusal fell between the unscale launches");
    cr_assert_gt(taken, 1);
}

/* ---- SWALR ----------------------------------------------------------------- */

/* torch 1.13's SWALR.get_lr, in Python's operations. */
static double anneal(bool linear, double t)
{
    return linear ? t : (1 - cos(M_PI * t)) / 2;
}

static double torch_swalr(double lr, double swa, int64_t step_count, int64_t epochs,
                          bool linear)
{
    int64_t step = step_count - 1;
    if (epochs == 0)
        step = step > 1 ? step : 1;
    double span = (double)(epochs > 1 ? epochs : 1);
    double pt = fmax(0, fmin(1, (double)(step - 1) / span));
    double pa = anneal(linear, pt);
    double prev = pa == 1 ? swa : (lr - pa * swa) / (1 - pa);
    double t = fmax(0, fmin(1, (double)step / span));
    double a = anneal(linear, t);
    return swa * a + prev * (1 - a);
}

static void swalr_case(int64_t epochs, const char *strategy, int before)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *p = param(dev, P0), *q = param(dev, P0);
    clt_sgd_opts so = {0.5, 0, 0, 0, 0}, so2 = {0.2, 0, 0, 0, 0};
    clt_optimizer *opt;
    CHECK(clt_sgd(&p, 1, &so, &opt));
    CHECK(clt_optimizer_add_param_group(opt, &q, 1, &so2));
    clt_lr_scheduler *cos_s = NULL, *swa;
    double lr[2] = {0.5, 0.2};
    if (before > 0) {
        /* a CosineAnnealingLR first, as torch's example: its rates (in
         * its chainable form, two schedules alive) then SWALR's from
         * there */
        CHECK(clt_cosine_lr(opt, 10, 0.0, &cos_s));
        for (int e = 0; e < before; e++)
            CHECK(clt_lr_scheduler_step(cos_s));
        lr[0] = clt_optimizer_group_lr(opt, 0);
        lr[1] = clt_optimizer_group_lr(opt, 1);
    }
    const double swa_lrs[2] = {0.05, 0.01};
    bool linear = strategy && strcmp(strategy, "linear") == 0;
    CHECK(clt_swa_lr(opt, swa_lrs, 2, epochs, strategy, &swa));
    int64_t count = 1;
    for (int g = 0; g < 2; g++)
        lr[g] = torch_swalr(lr[g], swa_lrs[g], count, epochs, linear);
    for (int e = 0; e < 8; e++) {
        for (int g = 0; g < 2; g++)
            cr_assert_eq(clt_optimizer_group_lr(opt, g), lr[g],
                         "anneal_epochs %lld, %s, after %d steps: group %d rate %.17g, want %.17g",
                         (long long)epochs, strategy ? strategy : "NULL", e, g,
                         clt_optimizer_group_lr(opt, g), lr[g]);
        CHECK(clt_lr_scheduler_step(swa));
        count++;
        for (int g = 0; g < 2; g++)
            lr[g] = torch_swalr(lr[g], swa_lrs[g], count, epochs, linear);
    }
    cr_assert_float_eq(clt_optimizer_group_lr(opt, 0), 0.05, 1e-12);
    clt_lr_scheduler_free(swa);
    clt_lr_scheduler_free(cos_s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
    clt_tensor_free(q);
}

Test(swalr, rates_as_torch)
{
    swalr_case(3, NULL, 0);
    swalr_case(3, "linear", 0);
    swalr_case(0, "cos", 0);
    swalr_case(1, "linear", 0);
    swalr_case(5, "cos", 3);
    swalr_case(4, "linear", 2);
}

Test(swalr, refusals)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *p = param(dev, P0);
    clt_sgd_opts so = {0.5, 0, 0, 0, 0};
    clt_optimizer *opt;
    CHECK(clt_sgd(&p, 1, &so, &opt));
    clt_lr_scheduler *s = NULL, *c = NULL;
    const double r[2] = {0.1, 0.1};
    expect_fail(clt_swa_lr(opt, r, 1, -1, NULL, &s), CLT_ERR_INVALID_ARGUMENT,
                "anneal_epochs must be equal or greater than 0, got -1");
    expect_fail(clt_swa_lr(opt, r, 1, 10, "step", &s), CLT_ERR_INVALID_ARGUMENT,
                "anneal_strategy must by one of 'cos' or 'linear', instead got step");
    expect_fail(clt_swa_lr(opt, r, 2, 10, NULL, &s), CLT_ERR_INVALID_ARGUMENT,
                "swa_lr must have the same length as optimizer.param_groups");
    expect_fail(clt_swa_lr(opt, (const double[]){-1.0}, 1, 10, NULL, &s),
                CLT_ERR_INVALID_ARGUMENT, "swa_lr");
    cr_assert_null(s);
    cr_assert_eq(clt_optimizer_lr(opt), 0.5);
    CHECK(clt_swa_lr(opt, r, 1, 10, NULL, &s));
    expect_fail(clt_chained_scheduler(&s, 1, &c), CLT_ERR_INVALID_ARGUMENT, "SWALR");
    clt_lr_scheduler_free(s);
    clt_optimizer_free(opt);
    clt_tensor_free(p);
}

/* ---- AveragedModel ------------------------------------------------------------ */

enum { IN = 3, OUT = 2, MODELS = 5 };

/* Writes model k's values into the linear layer's weight and bias. */
static void set_model(clt_module *m, int k, double *w, double *b)
{
    float hw[OUT * IN], hb[OUT];
    for (int i = 0; i < OUT * IN; i++)
        hw[i] = (float)(sin(1.7 * k + 0.3 * i) * (1 + k));
    for (int i = 0; i < OUT; i++)
        hb[i] = (float)(cos(0.9 * k + i) - 0.25 * k);
    for (int i = 0; i < OUT * IN; i++)
        w[i] = hw[i];
    for (int i = 0; i < OUT; i++)
        b[i] = hb[i];
    int was = clt_set_grad_enabled(0);
    CHECK(clt_tensor_write(clt_module_param(m, "weight"), hw, sizeof hw));
    CHECK(clt_tensor_write(clt_module_param(m, "bias"), hb, sizeof hb));
    clt_set_grad_enabled(was);
}

static void expect_close(const clt_tensor *t, const double *want, int n, double tol,
                         const char *what)
{
    float *h = read_f32(t);
    for (int i = 0; i < n; i++)
        cr_assert(fabs(h[i] - want[i]) <= tol * (1 + fabs(want[i])), "%s[%d] %.9g, want %.9g",
                  what, i, h[i], want[i]);
    free(h);
}

static clt_status max_avg(void *user, const clt_tensor *avg, const clt_tensor *model,
                          int64_t num_averaged, clt_tensor **out)
{
    *(int64_t *)user = num_averaged;
    return clt_maximum(avg, model, out);
}

Test(swa, mean_ema_and_custom_against_host)
{
    clt_device *dev = get_device("cpu:0");
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *m;
    CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
    clt_averaged_model *swa, *ema, *mx;
    int64_t seen = -1;
    CHECK(clt_averaged_model_new(m, NULL, NULL, NULL, 0, &swa));
    CHECK(clt_averaged_model_ema(m, NULL, 0.75, 0, &ema));
    CHECK(clt_averaged_model_new(m, NULL, max_avg, &seen, 0, &mx));
    double mean_w[OUT * IN] = {0}, mean_b[OUT] = {0}, ema_w[OUT * IN], ema_b[OUT];
    double max_w[OUT * IN], max_b[OUT], w[OUT * IN], b[OUT];
    for (int k = 0; k < MODELS; k++) {
        set_model(m, k, w, b);
        CHECK(clt_averaged_model_update(swa, m));
        CHECK(clt_averaged_model_update(ema, m));
        CHECK(clt_averaged_model_update(mx, m));
        for (int i = 0; i < OUT * IN + OUT; i++) {
            double v = i < OUT * IN ? w[i] : b[i - OUT * IN];
            double *mean = i < OUT * IN ? &mean_w[i] : &mean_b[i - OUT * IN];
            double *e = i < OUT * IN ? &ema_w[i] : &ema_b[i - OUT * IN];
            double *x = i < OUT * IN ? &max_w[i] : &max_b[i - OUT * IN];
            *mean += (v - *mean) / (k + 1);
            *e = k == 0 ? v : 0.75 * *e + 0.25 * v;
            *x = k == 0 ? v : fmax(*x, v);
        }
    }
    cr_assert_eq(clt_averaged_model_count(swa), MODELS);
    cr_assert_eq(seen, MODELS - 1, "avg_fn saw num_averaged %lld", (long long)seen);
    clt_module *am = clt_averaged_model_module(swa);
    expect_close(clt_module_param(am, "weight"), mean_w, OUT * IN, 1e-6, "swa weight");
    expect_close(clt_module_param(am, "bias"), mean_b, OUT, 1e-6, "swa bias");
    am = clt_averaged_model_module(ema);
    expect_close(clt_module_param(am, "weight"), ema_w, OUT * IN, 1e-6, "ema weight");
    expect_close(clt_module_param(am, "bias"), ema_b, OUT, 1e-6, "ema bias");
    am = clt_averaged_model_module(mx);
    expect_close(clt_module_param(am, "weight"), max_w, OUT * IN, 0, "max weight");
    /* the state: n_averaged first, then the module's under "module." */
    clt_named_tensor *st;
    size_t n;
    CHECK(clt_averaged_model_state(swa, &st, &n));
    cr_assert_eq(n, 3);
    cr_assert_str_eq(st[0].name, "n_averaged");
    cr_assert_str_eq(st[1].name, "module.weight");
    cr_assert_str_eq(st[2].name, "module.bias");
    int64_t count = -1;
    cr_assert_eq(clt_tensor_dtype(st[0].tensor), CLT_INT64);
    CHECK(clt_tensor_read(st[0].tensor, &count, sizeof count));
    cr_assert_eq(count, MODELS);
    clt_free(st);
    clt_averaged_model_free(swa);
    clt_averaged_model_free(ema);
    clt_averaged_model_free(mx);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* A run resumed from the state file averages as an uninterrupted one. */
Test(swa, resume_from_state_file)
{
    clt_device *dev = get_device("cpu:0");
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *m;
    CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
    clt_averaged_model *a, *b;
    CHECK(clt_averaged_model_new(m, NULL, NULL, NULL, 0, &a));
    CHECK(clt_averaged_model_new(m, NULL, NULL, NULL, 0, &b));
    double w[OUT * IN], bias[OUT];
    for (int k = 0; k < 3; k++) {
        set_model(m, k, w, bias);
        CHECK(clt_averaged_model_update(a, m));
    }
    char path[] = "/tmp/clt_swa_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    clt_named_tensor *st;
    size_t n;
    CHECK(clt_averaged_model_state(a, &st, &n));
    CHECK(clt_save_torch(path, st, n));
    clt_free(st);
    CHECK(clt_averaged_model_load_torch(b, path));
    cr_assert_eq(clt_averaged_model_count(b), 3);
    set_model(m, 3, w, bias);
    CHECK(clt_averaged_model_update(a, m));
    CHECK(clt_averaged_model_update(b, m));
    float *wa = read_f32(clt_module_param(clt_averaged_model_module(a), "weight"));
    float *wb = read_f32(clt_module_param(clt_averaged_model_module(b), "weight"));
    cr_assert(memcmp(wa, wb, OUT * IN * sizeof *wa) == 0, "the resumed average differs");
    free(wa);
    free(wb);
    /* a model's own file lacks n_averaged: refused, b as it was */
    CHECK(clt_module_save_torch(m, path));
    cr_assert_neq(clt_averaged_model_load_torch(b, path), CLT_OK);
    cr_assert(strstr(clt_last_error(), "missing key(s) in state") != NULL, "%s",
              clt_last_error());
    cr_assert_eq(clt_averaged_model_count(b), 4);
    remove(path);
    clt_averaged_model_free(a);
    clt_averaged_model_free(b);
    clt_module_free(m);
    clt_generator_free(gen);
}

Test(swa, refusals)
{
    clt_device *dev = get_device("cpu:0");
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *m, *other;
    CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
    CHECK(clt_linear(dev, IN, OUT + 1, 1, gen, &other));
    clt_averaged_model *a = NULL;
    expect_fail(clt_averaged_model_ema(m, NULL, 1.5, 0, &a), CLT_ERR_INVALID_ARGUMENT, "decay");
    cr_assert_null(a);
    CHECK(clt_averaged_model_new(m, NULL, NULL, NULL, 0, &a));
    expect_fail(clt_averaged_model_update(a, other), CLT_ERR_INVALID_ARGUMENT, "tensor 0");
    cr_assert_eq(clt_averaged_model_count(a), 0);
    clt_averaged_model_free(a);
    clt_module_free(m);
    clt_module_free(other);
    clt_generator_free(gen);
}

/* ---- update_bn ------------------------------------------------------------------ */

enum { SAMPLES = 10, BATCH = 4, FEAT = 3 };

Test(swa, update_bn_against_host_statistics)
{
    clt_device *dev = get_device("cpu:0");
    clt_generator *gen;
    CHECK(clt_generator_new(3, &gen));
    clt_module *layers[2], *m;
    CHECK(clt_linear(dev, FEAT, FEAT, 1, gen, &layers[0]));
    CHECK(clt_batch_norm1d_layer(dev, FEAT, 1e-5, 0.1, 1, 1, &layers[1]));
    CHECK(clt_sequential(layers, 2, &m));
    float x[SAMPLES * FEAT], w[FEAT * FEAT], bias[FEAT];
    fill_random(x, SAMPLES * FEAT, 11);
    clt_module *lin = layers[0], *bn = layers[1]; /* borrowed from m */
    CHECK(clt_tensor_read(clt_module_param(lin, "weight"), w, sizeof w));
    CHECK(clt_tensor_read(clt_module_param(lin, "bias"), bias, sizeof bias));
    /* running statistics from an earlier "training", which update_bn drops */
    CHECK(clt_fill_(clt_module_buffer(bn, "running_mean"), 5.0));
    clt_module_train(m, 0);
    const int64_t shape[2] = {SAMPLES, FEAT};
    const clt_array_spec xs = {x, CLT_FLOAT32, 2, shape};
    clt_loader_opts lo = CLT_LOADER_DEFAULTS;
    lo.batch_size = BATCH;
    lo.shuffle = 0;
    clt_dataloader *dl;
    CHECK(clt_dataloader_arrays(dev, &xs, NULL, &lo, &dl));
    CHECK(clt_update_bn(dl, m));
    /* host: each batch's mean and unbiased variance of x W^T + b, averaged
     * over the batches (torch's momentum None) */
    double mean[FEAT] = {0}, var[FEAT] = {0};
    int batches = 0;
    for (int s0 = 0; s0 < SAMPLES; s0 += BATCH, batches++) {
        int nb = SAMPLES - s0 < BATCH ? SAMPLES - s0 : BATCH;
        for (int f = 0; f < FEAT; f++) {
            double h[BATCH], mu = 0, v = 0;
            for (int i = 0; i < nb; i++) {
                h[i] = bias[f];
                for (int j = 0; j < FEAT; j++)
                    h[i] += (double)x[(s0 + i) * FEAT + j] * w[f * FEAT + j];
                mu += h[i] / nb;
            }
            for (int i = 0; i < nb; i++)
                v += (h[i] - mu) * (h[i] - mu) / (nb - 1);
            mean[f] += mu;
            var[f] += v;
        }
    }
    for (int f = 0; f < FEAT; f++) {
        mean[f] /= batches;
        var[f] /= batches;
    }
    expect_close(clt_module_buffer(bn, "running_mean"), mean, FEAT, 1e-5, "running_mean");
    expect_close(clt_module_buffer(bn, "running_var"), var, FEAT, 1e-5, "running_var");
    int64_t tracked = 0;
    CHECK(clt_tensor_read(clt_module_buffer(bn, "num_batches_tracked"), &tracked,
                          sizeof tracked));
    cr_assert_eq(tracked, batches);
    cr_assert_eq(clt_module_is_training(m), 0, "update_bn must give back eval mode");
    /* the momentum is 0.1 again: one more batch in train mode moves the
     * mean by a tenth of the way */
    clt_module_train(m, 1);
    clt_tensor *xb, *y;
    int got;
    CHECK(clt_dataloader_next(dl, &xb, NULL, &got));
    cr_assert(got);
    float *before = read_f32(clt_module_buffer(bn, "running_mean"));
    CHECK(clt_module_forward(m, xb, &y));
    double want[FEAT];
    for (int f = 0; f < FEAT; f++) {
        double mu = 0;
        for (int i = 0; i < BATCH; i++) {
            double h = bias[f];
            for (int j = 0; j < FEAT; j++)
                h += (double)x[i * FEAT + j] * w[f * FEAT + j];
            mu += h / BATCH;
        }
        want[f] = 0.9 * before[f] + 0.1 * mu;
    }
    expect_close(clt_module_buffer(bn, "running_mean"), want, FEAT, 1e-5, "momentum 0.1 mean");
    free(before);
    clt_tensor_free(xb);
    clt_tensor_free(y);
    clt_dataloader_free(dl);
    clt_module_free(m);
    clt_generator_free(gen);
}

long clt__host_refuse_after(long pass); /* src/core/alloc.c */

/* Each driver call, then each host allocation, of an update refused in
 * turn: an update that fails leaves the average, n_averaged and its count
 * as they were; one that succeeds gives the mean. */
Test(swa, update_refusals_change_nothing)
{
    clt_device *dev = get_device("cpu:0");
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *m;
    CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
    double w0[OUT * IN], b0[OUT], w1[OUT * IN], b1[OUT], mean[OUT * IN];
    for (int hook = 0; hook < 2; hook++) {
        int failures = 0;
        long (*refuse)(long) = hook ? clt__host_refuse_after : clt__driver_refuse_at;
        for (long pass = 0;; pass++) {
            clt_averaged_model *a;
            CHECK(clt_averaged_model_new(m, NULL, NULL, NULL, 0, &a));
            set_model(m, 0, w0, b0);
            CHECK(clt_averaged_model_update(a, m));
            set_model(m, 1, w1, b1);
            clt_tensor *w = clt_module_param(clt_averaged_model_module(a), "weight");
            refuse(pass);
            clt_status st = clt_averaged_model_update(a, m);
            long left = refuse(-1);
            bool message = clt_last_error()[0] != '\0';
            int64_t n = -1;
            clt_named_tensor *state;
            size_t ns;
            CHECK(clt_averaged_model_state(a, &state, &ns));
            CHECK(clt_tensor_read(state[0].tensor, &n, sizeof n));
            clt_free(state);
            /* a refusal the library works around (a cache) may leave the
             * update to succeed */
            if (st != CLT_OK) {
                cr_assert_lt(left, 0);
                failures++;
                cr_assert(message, "refusal %ld (hook %d): a failure without a message", pass,
                          hook);
                cr_assert_eq(clt_averaged_model_count(a), 1);
                cr_assert_eq(n, 1, "refusal %ld (hook %d): n_averaged %lld", pass, hook,
                             (long long)n);
                expect_close(w, w0, OUT * IN, 0, "weight after a refused update");
            } else {
                CHECK(st);
                cr_assert_eq(n, 2);
                for (int i = 0; i < OUT * IN; i++)
                    mean[i] = w0[i] + (w1[i] - w0[i]) / 2;
                expect_close(w, mean, OUT * IN, 1e-6, "weight");
            }
            clt_averaged_model_free(a);
            if (left >= 0) {
                cr_assert_gt(failures, 2, "hook %d: only %d refusals failed the update", hook,
                             failures);
                break;
            }
        }
    }
    clt_module_free(m);
    clt_generator_free(gen);
}

/* An average on another device: the model's values move there. */
Test(swa, average_on_another_device)
{
    clt_device *dev = get_device("cpu:0"), *dev2 = second_device(dev);
    clt_generator *gen;
    CHECK(clt_generator_new(7, &gen));
    clt_module *m;
    CHECK(clt_linear(dev, IN, OUT, 1, gen, &m));
    clt_averaged_model *a;
    CHECK(clt_averaged_model_new(m, dev2, NULL, NULL, 0, &a));
    double w0[OUT * IN], b0[OUT], w1[OUT * IN], b1[OUT], mean[OUT * IN];
    set_model(m, 0, w0, b0);
    CHECK(clt_averaged_model_update(a, m));
    set_model(m, 1, w1, b1);
    CHECK(clt_averaged_model_update(a, m));
    for (int i = 0; i < OUT * IN; i++)
        mean[i] = (w0[i] + w1[i]) / 2;
    clt_tensor *w = clt_module_param(clt_averaged_model_module(a), "weight");
    cr_assert_eq(clt_tensor_device(w), dev2);
    expect_close(w, mean, OUT * IN, 1e-6, "weight on the second device");
    clt_averaged_model_free(a);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* An AveragedModel of a model with BatchNorm, use_buffers: the running
 * statistics are averaged with the parameters. */
Test(swa, use_buffers_averages_running_stats)
{
    clt_device *dev = get_device("cpu:0");
    clt_module *bn;
    CHECK(clt_batch_norm1d_layer(dev, FEAT, 1e-5, 0.1, 1, 1, &bn));
    clt_averaged_model *a, *p;
    CHECK(clt_averaged_model_new(bn, NULL, NULL, NULL, 1, &a));
    CHECK(clt_averaged_model_new(bn, NULL, NULL, NULL, 0, &p));
    double want[FEAT] = {0};
    for (int k = 0; k < 3; k++) {
        CHECK(clt_fill_(clt_module_buffer(bn, "running_mean"), 2.0 * k + 1));
        want[0] += (2.0 * k + 1 - want[0]) / (k + 1);
        CHECK(clt_averaged_model_update(a, bn));
        CHECK(clt_averaged_model_update(p, bn));
    }
    want[1] = want[2] = want[0];
    expect_close(clt_module_buffer(clt_averaged_model_module(a), "running_mean"), want, FEAT, 1e-6,
                 "averaged running_mean");
    /* without use_buffers the clone's buffers stay as cloned (torch 1.13) */
    double zero[FEAT] = {0};
    expect_close(clt_module_buffer(clt_averaged_model_module(p), "running_mean"), zero, FEAT, 0,
                 "running_mean not averaged");
    clt_averaged_model_free(a);
    clt_averaged_model_free(p);
    clt_module_free(bn);
}
