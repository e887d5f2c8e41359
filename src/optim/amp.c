/* amp.c: torch.cuda.amp.GradScaler on any device: the loss scaled, the
 * gradients unscaled and checked for inf and NaN on the device, steps
 * skipped and the scale backed off or grown as torch's. */
#include <math.h>
#include <stdlib.h>

#include "autograd/autograd.h"
#include "optim/optim.h"

/* The stages of torch's _per_optimizer_states. */
enum { READY, UNSCALED, STEPPED };

/* One device's inf flag for one optimizer: a 1-element float32 tensor the
 * unscale launches write (made once, kept for later rounds), whether this
 * round's gradients use it, and its value once read back. */
typedef struct amp_flag {
    clt_device *dev;
    clt_tensor *found;
    bool active, read;
    float value;
} amp_flag;

/* torch's per-optimizer state: its stage and found_inf_per_device (the
 * active flags, `active` of them); `failed` when an unscale stopped
 * part-way (the step is skipped). */
typedef struct amp_record {
    const clt_optimizer *opt;
    int stage;
    bool failed;
    amp_flag *flags;
    size_t n, active;
} amp_record;

struct clt_grad_scaler {
    clt_grad_scaler_opts o;
    float scale; /* torch's _scale, a float32 tensor */
    int64_t tracker;
    amp_record *recs;
    size_t n_recs, cap;
};

static clt_status check_opts(const clt_grad_scaler_opts *o, const char *fn)
{
    if (!(o->growth_factor > 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The growth factor must be > 1.0. (got %g)", fn, o->growth_factor);
    if (!(o->backoff_factor < 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The backoff factor must be < 1.0. (got %g)", fn,
                          o->backoff_factor);
    if (!(o->backoff_factor > 0.0) || !isfinite(o->growth_factor))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: backoff_factor %g and growth_factor %g: a finite growth and a "
                          "backoff above 0 (the scale would reach 0 or inf)",
                          fn, o->backoff_factor, o->growth_factor);
    if (!(o->init_scale > 0.0) || !isfinite((float)o->init_scale))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: scale %g: a finite float32 value above 0", fn, o->init_scale);
    if (o->growth_interval < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: growth_interval %lld: a positive number of steps", fn,
                          (long long)o->growth_interval);
    return CLT_OK;
}

clt_status clt_grad_scaler_new(const clt_grad_scaler_opts *opts, clt_grad_scaler **out)
{
    static const char fn[] = "clt_grad_scaler_new";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    const clt_grad_scaler_opts def = CLT_GRAD_SCALER_DEFAULTS;
    const clt_grad_scaler_opts *o = opts ? opts : &def;
    clt_status st = o->enabled ? check_opts(o, fn) : CLT_OK;
    if (st != CLT_OK)
        return st;
    clt_grad_scaler *s = clt__calloc(1, sizeof *s);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    s->o = *o;
    s->o.enabled = o->enabled != 0;
    s->scale = (float)o->init_scale;
    *out = s;
    return clt__ok();
}

void clt_grad_scaler_free(clt_grad_scaler *s)
{
    if (s == NULL)
        return;
    for (size_t r = 0; r < s->n_recs; r++) {
        for (size_t k = 0; k < s->recs[r].n; k++)
            clt_tensor_free(s->recs[r].flags[k].found);
        free(s->recs[r].flags);
    }
    free(s->recs);
    free(s);
}

double clt_grad_scaler_get_scale(const clt_grad_scaler *s)
{
    return s == NULL ? NAN : s->o.enabled ? (double)s->scale : 1.0;
}

int64_t clt_grad_scaler_growth_tracker(const clt_grad_scaler *s)
{
    return s ? s->tracker : 0;
}

clt_status clt_grad_scaler_scale(clt_grad_scaler *s, const clt_tensor *loss, clt_tensor **out)
{
    static const char fn[] = "clt_grad_scaler_scale";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(loss, fn);
    if (!s->o.enabled) {
        /* loss itself, through a handle of its own: a retained loss
         * released with clt_tensor_free would take its scope's reference */
        clt_status st = clt__alias_history(loss, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    if (!clt__dtype_is_float(loss->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: the loss is %s; a floating loss is scaled", fn,
                          clt_dtype_name(loss->dtype));
    clt_status st = clt_mul_scalar(loss, (double)s->scale, out);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* opt's record, made (at stage READY) the first time; NULL when out of
 * host memory, with the message set. */
static amp_record *record_of(clt_grad_scaler *s, const clt_optimizer *opt, const char *fn)
{
    for (size_t r = 0; r < s->n_recs; r++)
        if (s->recs[r].opt == opt)
            return &s->recs[r];
    if (s->n_recs == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 2;
        amp_record *v = clt__realloc(s->recs, cap, sizeof *v);
        if (v == NULL) {
            clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            return NULL;
        }
        s->recs = v;
        s->cap = cap;
    }
    amp_record *r = &s->recs[s->n_recs++];
    *r = (amp_record){.opt = opt, .stage = READY};
    return r;
}

/* The flag of dev in r, made (zeros) the first time. */
static clt_status flag_of(amp_record *r, clt_device *dev, amp_flag **out, const char *fn)
{
    for (size_t k = 0; k < r->n; k++)
        if (r->flags[k].dev == dev) {
            *out = &r->flags[k];
            return CLT_OK;
        }
    amp_flag *v = clt__realloc(r->flags, r->n + 1, sizeof *v);
    if (v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    r->flags = v;
    clt_tensor *t = NULL;
    int64_t one = 1;
    clt_status st = clt_zeros(dev, CLT_FLOAT32, 1, &one, &t);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    v[r->n] = (amp_flag){.dev = dev, .found = t};
    *out = &v[r->n++];
    return CLT_OK;
}

/* Starts a round: no flag active. */
static void round_reset(amp_record *r)
{
    for (size_t k = 0; k < r->n; k++)
        r->flags[k].active = false;
    r->active = 0;
}

/* torch's unscale_grads_ over opt's gradients into r's flags: everything
 * that can fail before a gradient changes comes first (dtypes, the flags'
 * tensors, the kernels built, the flags zeroed), then one launch per
 * gradient. */
static clt_status unscale(clt_grad_scaler *s, amp_record *r, clt_optimizer *opt,
                          const char *fn)
{
    size_t n = clt__optimizer_size(opt);
    float inv_scale = (float)(1.0 / (double)s->scale);
    amp_flag *fl;
    clt_status st = CLT_OK;
    round_reset(r);
    /* a sparse gradient's values are unscaled (torch: grad._values()) */
    for (size_t i = 0; i < n && st == CLT_OK; i++) {
        const clt_tensor *g = clt__grad_values(clt__optimizer_param(opt, i));
        if (g == NULL)
            continue;
        if (g->dtype != CLT_FLOAT32 && g->dtype != CLT_FLOAT64)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: the gradient of parameter %zu is %s; float32 and float64 "
                              "gradients are unscaled (no autocast: see optim.h)",
                              fn, i, clt_dtype_name(g->dtype));
        if (!clt_tensor_is_contiguous(g))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the gradient of parameter %zu is not contiguous", fn, i);
        st = flag_of(r, g->dev, &fl, fn);
        if (st == CLT_OK && !fl->active) {
            fl->active = true;
            r->active++;
        }
        if (st == CLT_OK && g->numel > 0) {
            const char *opts = clt__optim_options(g->dtype);
            cl_ulong chunk;
            size_t gws;
            const size_t *lws;
            clt__optim_geometry(g, &chunk, &gws, &lws);
            st = opts ? clt__launch_prepare(g->dev, "optim", opts, "amp_unscale", 1, &gws, lws)
                      : CLT_ERR_OUT_OF_HOST_MEMORY;
        }
    }
    for (size_t k = 0; k < r->n && st == CLT_OK; k++)
        if (r->flags[k].active)
            st = clt_zero_(r->flags[k].found);
    if (st != CLT_OK) {
        round_reset(r);
        return clt__error_in(st, fn);
    }
    for (size_t k = 0; k < r->n; k++)
        r->flags[k].read = false;
    for (size_t i = 0; i < n; i++) {
        clt_tensor *g = clt__grad_values(clt__optimizer_param(opt, i));
        if (g == NULL || g->numel == 0)
            continue;
        (void)flag_of(r, g->dev, &fl, fn); /* made above: found */
        cl_ulong chunk, off = (cl_ulong)g->offset, cnt = (cl_ulong)g->numel;
        size_t gws;
        const size_t *lws;
        clt__optim_geometry(g, &chunk, &gws, &lws);
        cl_mem gm = clt__mem(g), fm = clt__mem(fl->found);
        clt__arg args[] = {CLT__ARG(gm),  CLT__ARG(fm),    CLT__ARG(off),
                           CLT__ARG(cnt), CLT__ARG(chunk), CLT__ARG(inv_scale)};
        st = clt__launch(g->dev, "optim", clt__optim_options(g->dtype), "amp_unscale", 1, &gws,
                         lws, sizeof args / sizeof args[0], args);
        if (st != CLT_OK) {
            /* some gradients are unscaled and others not: the step that
             * follows is skipped, as for an inf */
            r->failed = true;
            r->stage = UNSCALED;
            clt__error_in(st, fn);
            clt__error_append(" (the gradients before it were unscaled: this round's step is "
                              "skipped, as for an inf)");
            return st;
        }
        clt__version_bump(g);
    }
    r->stage = UNSCALED;
    return CLT_OK;
}

clt_status clt_grad_scaler_unscale_(clt_grad_scaler *s, clt_optimizer *opt)
{
    static const char fn[] = "clt_grad_scaler_unscale_";
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(opt, fn);
    if (!s->o.enabled)
        return clt__ok();
    amp_record *r = record_of(s, opt, fn);
    if (r == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    if (r->stage == UNSCALED)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: unscale_() has already been called on this optimizer since the "
                          "last update().",
                          fn);
    if (r->stage == STEPPED)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unscale_() is being called after step().",
                          fn);
    clt_status st = unscale(s, r, opt, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* Reads back r's flags not read yet (the scaler's one wait) into *found,
 * the sum of r's flags (1 for an unscale that stopped part-way). */
static clt_status read_flags(amp_record *r, double *found, const char *fn)
{
    *found = r->failed ? 1.0 : 0.0;
    for (size_t k = 0; k < r->n; k++) {
        amp_flag *f = &r->flags[k];
        if (!f->active)
            continue;
        if (!f->read) {
            clt_status st = clt_tensor_read(f->found, &f->value, sizeof f->value);
            if (st != CLT_OK)
                return clt__error_in(st, fn);
            f->read = true;
        }
        *found += f->value;
    }
    return CLT_OK;
}

clt_status clt_grad_scaler_step(clt_grad_scaler *s, clt_optimizer *opt, int *stepped)
{
    static const char fn[] = "clt_grad_scaler_step";
    if (stepped)
        *stepped = 0;
    CLT__REQUIRE_ARG(s, fn);
    CLT__REQUIRE_ARG(opt, fn);
    clt_status st;
    if (!s->o.enabled) {
        st = clt_optimizer_step(opt);
        if (st == CLT_OK && stepped)
            *stepped = 1;
        return st;
    }
    amp_record *r = record_of(s, opt, fn);
    if (r == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    if (r->stage == STEPPED)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: step() has already been called since the last update().", fn);
    if (r->stage == READY && (st = unscale(s, r, opt, fn)) != CLT_OK)
        return st;
    if (r->active == 0 && !r->failed)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: No inf checks were recorded for this optimizer.", fn);
    double found;
    if ((st = read_flags(r, &found, fn)) != CLT_OK)
        return st;
    if (found == 0.0) {
        st = clt_optimizer_step(opt);
        if (st != CLT_OK)
            return st;
        if (stepped)
            *stepped = 1;
    }
    r->stage = STEPPED;
    return clt__ok();
}

/* A new scale torch's fill_ takes: rounded to float32, finite and > 0. */
static clt_status check_scale(double v, const char *fn)
{
    if (!(v > 0.0) || !isfinite((float)v))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: scale %g: a finite float32 value above 0", fn, v);
    return CLT_OK;
}

clt_status clt_grad_scaler_update(clt_grad_scaler *s, const double *new_scale)
{
    static const char fn[] = "clt_grad_scaler_update";
    CLT__REQUIRE_ARG(s, fn);
    if (!s->o.enabled)
        return clt__ok();
    clt_status st = CLT_OK;
    if (new_scale) {
        if ((st = check_scale(*new_scale, fn)) != CLT_OK)
            return st;
        s->scale = (float)*new_scale;
    } else {
        double found = 0.0, f;
        size_t records = 0;
        for (size_t r = 0; r < s->n_recs; r++) {
            if (s->recs[r].stage == READY || (s->recs[r].active == 0 && !s->recs[r].failed))
                continue;
            if ((st = read_flags(&s->recs[r], &f, fn)) != CLT_OK)
                return st;
            found += f;
            records++;
        }
        if (records == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: No inf checks were recorded prior to update.", fn);
        /* torch's _amp_update_scale_: the float32 scale times a double
         * factor, rounded back to float32 */
        if (found > 0.0) {
            s->scale = (float)((double)s->scale * s->o.backoff_factor);
            s->tracker = 0;
        } else if (s->tracker + 1 == s->o.growth_interval) {
            float grown = (float)((double)s->scale * s->o.growth_factor);
            if (isfinite(grown))
                s->scale = grown;
            s->tracker = 0;
        } else {
            s->tracker++;
        }
    }
    for (size_t r = 0; r < s->n_recs; r++) {
        s->recs[r].stage = READY;
        s->recs[r].failed = false;
        round_reset(&s->recs[r]);
    }
    return clt__ok();
}

void clt__grad_scaler_get(const clt_grad_scaler *s, clt__scaler_state *out)
{
    *out = (clt__scaler_state){.enabled = s->o.enabled,
                               .scale = (double)s->scale,
                               .growth_factor = s->o.growth_factor,
                               .backoff_factor = s->o.backoff_factor,
                               .growth_interval = s->o.growth_interval,
                               .growth_tracker = s->tracker};
}

clt_status clt__grad_scaler_set(clt_grad_scaler *s, const clt__scaler_state *v, const char *fn)
{
    clt_grad_scaler_opts o = {v->scale, v->growth_factor, v->backoff_factor,
                              v->growth_interval, 1};
    clt_status st = check_opts(&o, fn);
    if (st != CLT_OK)
        return st;
    if (v->growth_tracker < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: _growth_tracker %lld is negative", fn,
                          (long long)v->growth_tracker);
    s->scale = (float)v->scale;
    s->o.growth_factor = v->growth_factor;
    s->o.backoff_factor = v->backoff_factor;
    s->o.growth_interval = v->growth_interval;
    s->tracker = v->growth_tracker;
    return CLT_OK;
}

/* ---- autocast ------------------------------------------------------------------------ */

clt_status clt_autocast_enter(clt_device *device, clt_dtype dtype)
{
    return clt_autocast_enter_ex(device, dtype, CLT_AUTOCAST_CUDA);
}

clt_status clt_autocast_enter_ex(clt_device *device, clt_dtype dtype, clt_autocast_lists lists)
{
    static const char fn[] = "clt_autocast_enter";
    if (lists != CLT_AUTOCAST_CUDA && lists != CLT_AUTOCAST_CPU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: lists must be CLT_AUTOCAST_CUDA or CLT_AUTOCAST_CPU, not %d", fn,
                          (int)lists);
    if (device && !clt__dtype_is_half(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: autocast's target dtype must be float16 or bfloat16, not %s (the "
                          "lower-precision floating dtypes)",
                          fn, clt_dtype_name(dtype));
    /* torch 1.13 raises for it too (after a warning that it disables autocast) */
    if (device && lists == CLT_AUTOCAST_CPU && dtype != CLT_BFLOAT16)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch's CPU autocast lists take bfloat16 only, not %s "
                          "(\"Currently, AutocastCPU only support Bfloat16 as the "
                          "autocast_cpu_dtype\")",
                          fn, clt_dtype_name(dtype));
    return clt__autocast_push(device, dtype, lists == CLT_AUTOCAST_CPU, fn);
}

clt_status clt_autocast_exit(void)
{
    clt_status st = clt__autocast_pop("clt_autocast_exit");
    /* the outermost region's casts go with it (torch's clear_cache) */
    if (st == CLT_OK && clt__autocast_depth() == 0)
        clt__autocast_cache_clear();
    return st;
}

int clt_autocast_is_enabled(const clt_device *device)
{
    clt_device *d = clt__autocast_device(NULL);
    return d != NULL && (device == NULL || d == device);
}
