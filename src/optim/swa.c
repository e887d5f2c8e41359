/* swa.c: torch.optim.swa_utils.AveragedModel: a copy of a model whose
 * parameters (and buffers) are averaged over training, SWA's running mean
 * by default, an EMA or the caller's average otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "optim/optim.h"

struct clt_averaged_model {
    clt_module *module;
    clt_tensor *n_averaged; /* 0-d int64 on the module's device */
    int64_t count;          /* n_averaged, on the host */
    clt_avg_fn avg_fn;      /* NULL: SWA's mean, or the EMA below */
    void *user;
    bool ema;
    double decay;
    bool use_buffers;
};

static clt_status make(const clt_module *model, clt_device *dev, clt_avg_fn avg_fn, void *user,
                       bool ema, double decay, int use_buffers, clt_averaged_model **out,
                       const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(model, fn);
    clt_averaged_model *a = clt__calloc(1, sizeof *a);
    if (a == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st;
    CLT__TRY(clt_module_clone(model, dev, &a->module));
    clt_device *where = dev ? dev : clt_module_device(a->module);
    if (where == NULL)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the model has no tensor to average",
                            fn));
    CLT__TRY(clt_zeros(where, CLT_INT64, 0, NULL, &a->n_averaged));
    a->avg_fn = avg_fn;
    a->user = user;
    a->ema = ema;
    a->decay = decay;
    a->use_buffers = use_buffers != 0;
    *out = a;
    a = NULL;
done:
    clt_averaged_model_free(a);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_averaged_model_new(const clt_module *model, clt_device *dev, clt_avg_fn avg_fn,
                                  void *user, int use_buffers, clt_averaged_model **out)
{
    return make(model, dev, avg_fn, user, false, 0.0, use_buffers, out,
                "clt_averaged_model_new");
}

clt_status clt_averaged_model_ema(const clt_module *model, clt_device *dev, double decay,
                                  int use_buffers, clt_averaged_model **out)
{
    static const char fn[] = "clt_averaged_model_ema";
    if (out)
        *out = NULL;
    if (!(decay >= 0.0 && decay <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: decay %g: expected a value in [0, 1]",
                          fn, decay);
    return make(model, dev, NULL, NULL, true, decay, use_buffers, out, fn);
}

void clt_averaged_model_free(clt_averaged_model *a)
{
    if (a == NULL)
        return;
    clt_module_free(a->module);
    clt_tensor_free(a->n_averaged);
    free(a);
}

clt_module *clt_averaged_model_module(const clt_averaged_model *a)
{
    return a ? a->module : NULL;
}

int64_t clt_averaged_model_count(const clt_averaged_model *a)
{
    return a ? a->count : 0;
}

/* The tensors averaged, in torch's order: m's parameters, then with
 * buffers its buffers; *t (clt_free) holds *n borrowed tensors and room
 * for one more. */
static clt_status averaged_tensors(const clt_module *m, bool buffers, clt_tensor ***t, size_t *n,
                                   const char *fn)
{
    clt_tensor **p = NULL;
    clt_named_tensor *b = NULL;
    size_t np = 0, nb = 0;
    clt_status st = clt_module_parameters(m, &p, &np);
    if (st == CLT_OK && buffers)
        st = clt_module_named_buffers(m, &b, &nb);
    clt_tensor **v = st == CLT_OK ? clt__realloc(p, np + nb + 1, sizeof *v) : NULL;
    if (v == NULL) {
        free(p);
        free(b);
        return st != CLT_OK ? clt__error_in(st, fn)
                            : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                                         fn);
    }
    for (size_t k = 0; k < nb; k++)
        v[np + k] = b[k].tensor;
    free(b);
    *t = v;
    *n = np + nb;
    return CLT_OK;
}

static bool same_shape(const clt_tensor *x, const clt_tensor *y)
{
    bool same = x->ndim == y->ndim;
    for (int d = 0; same && d < x->ndim; d++)
        same = x->shape[d] == y->shape[d];
    return same;
}

/* The average's new value of avg from src (on avg's device), a new
 * tensor in *out of avg's dtype and shape, alone on its storage. */
static clt_status average(const clt_averaged_model *a, const clt_tensor *avg,
                          const clt_tensor *src, clt_tensor **out, const char *fn)
{
    clt_tensor *d = NULL, *q = NULL;
    clt_status st;
    if (a->avg_fn) {
        st = a->avg_fn(a->user, avg, src, a->count, &d);
        if (st == CLT_OK && d == NULL)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: avg_fn gave no tensor", fn);
        if (st == CLT_OK && !same_shape(d, avg)) {
            char s1[160], s2[160];
            st = clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: avg_fn gave %s for a tensor of %s", fn,
                            clt__shape_str(s1, sizeof s1, d->ndim, d->shape),
                            clt__shape_str(s2, sizeof s2, avg->ndim, avg->shape));
        }
        if (st == CLT_OK && d->dev != avg->dev)
            st = clt__error(CLT_ERR_DEVICE_MISMATCH, "%s: avg_fn gave a tensor on %s for one on %s",
                            fn, clt_device_label(d->dev), clt_device_label(avg->dev));
        /* the caller's tensor may have other handles: a copy of its own */
        if (st == CLT_OK)
            st = d->dtype == avg->dtype ? clt__clone(d, out, fn)
                                        : clt__to_dtype(d, avg->dtype, out, fn);
        clt_tensor_free(d);
        return st == CLT_OK ? st : clt__error_in_step(st, fn, "avg_fn");
    }
    if (a->ema) {
        /* decay * averaged + (1 - decay) * model */
        st = clt__mul_scalar_in(fn, avg, a->decay, &d);
        if (st == CLT_OK)
            st = clt__mul_scalar_in(fn, src, 1.0 - a->decay, &q);
        if (st == CLT_OK)
            st = clt__add_in(fn, d, q, out);
    } else {
        /* averaged + (model - averaged) / (num_averaged + 1) */
        st = clt__sub_in(fn, src, avg, &d);
        if (st == CLT_OK)
            st = clt__div_scalar_in(fn, d, (double)(a->count + 1), &q);
        if (st == CLT_OK)
            st = clt__add_in(fn, avg, q, out);
    }
    clt_tensor_free(d);
    clt_tensor_free(q);
    /* an integer buffer (num_batches_tracked, with use_buffers) averages
     * in float, truncated back as torch's copy_ truncates */
    if (st == CLT_OK && (*out)->dtype != avg->dtype) {
        clt_tensor *v = *out;
        st = clt__to_dtype(v, avg->dtype, out, fn);
        clt_tensor_free(v);
    }
    return st;
}

clt_status clt_averaged_model_update(clt_averaged_model *a, const clt_module *model)
{
    static const char fn[] = "clt_averaged_model_update";
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(model, fn);
    clt_tensor **mine = NULL, **theirs = NULL, **next = NULL;
    size_t n = 0, m = 0;
    int was = clt_set_grad_enabled(0);
    clt_status st;
    CLT__TRY(averaged_tensors(a->module, a->use_buffers, &mine, &n, fn));
    CLT__TRY(averaged_tensors(model, a->use_buffers, &theirs, &m, fn));
    if (n != m)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: the model has %zu tensors to average and the average %zu", fn, m,
                            n));
    for (size_t k = 0; k < n; k++) {
        const clt_tensor *x = mine[k], *y = theirs[k];
        if (!same_shape(x, y)) {
            char s1[160], s2[160];
            CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: tensor %zu is %s in the model and %s in the average", fn, k,
                                clt__shape_str(s1, sizeof s1, y->ndim, y->shape),
                                clt__shape_str(s2, sizeof s2, x->ndim, x->shape)));
        }
    }
    next = clt__calloc(n + 1, sizeof *next);
    if (next == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* every new value is made before any is written */
    for (size_t k = 0; k < n; k++) {
        /* the model's own tensor, or its copy on the averaged model's device */
        clt_tensor *moved = NULL;
        if (theirs[k]->dev != mine[k]->dev)
            CLT__TRY(clt__to_at(theirs[k], mine[k]->dev, &moved, __builtin_return_address(0), fn));
        const clt_tensor *src = moved ? moved : theirs[k];
        if (a->count == 0)
            st = src->dtype == mine[k]->dtype ? clt__clone(src, &next[k], fn)
                                              : clt__to_dtype(src, mine[k]->dtype, &next[k], fn);
        else
            st = average(a, mine[k], src, &next[k], fn);
        clt_tensor_free(moved);
        CLT__TRY(st);
    }
    CLT__TRY(clt__full(a->n_averaged->dev, CLT_INT64, 0, NULL, (double)(a->count + 1),
                       &next[n]));
    /* each tensor takes its new buffer, which cannot fail; one that cannot
     * (a part of a larger buffer: a model's own tensors never are) is
     * copied into, last */
    mine[n] = a->n_averaged;
    bool left = false;
    for (size_t k = 0; k <= n; k++)
        if (clt__tensor_take_values(mine[k], next[k])) {
            clt_tensor_free(next[k]);
            next[k] = NULL;
        } else {
            left = true;
        }
    a->count++;
    for (size_t k = 0; left && k <= n; k++)
        if (next[k] != NULL && (st = clt_copy_(mine[k], next[k])) != CLT_OK) {
            clt__error_append(" (the tensors before it were averaged)");
            break;
        }
done:
    for (size_t k = 0; next && k <= n; k++)
        clt_tensor_free(next[k]);
    free(next);
    free(mine);
    free(theirs);
    clt_set_grad_enabled(was);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_averaged_model_state(const clt_averaged_model *a, clt_named_tensor **out,
                                    size_t *n)
{
    static const char fn[] = "clt_averaged_model_state";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(n, fn);
    *n = 0;
    CLT__REQUIRE_ARG(a, fn);
    clt_named_tensor *s = NULL;
    size_t k = 0, bytes = sizeof "n_averaged";
    clt_status st = clt_module_state(a->module, &s, &k);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    for (size_t i = 0; i < k; i++)
        bytes += strlen(s[i].name) + sizeof "module.";
    /* one block: the entries, then their names */
    clt_named_tensor *v = clt__malloc((k + 1) * sizeof *v + bytes);
    if (v == NULL) {
        free(s);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    char *names = (char *)(v + k + 1);
    v[0] = (clt_named_tensor){.name = names, .tensor = a->n_averaged};
    names += sprintf(names, "n_averaged") + 1;
    for (size_t i = 0; i < k; i++) {
        v[i + 1] = (clt_named_tensor){.name = names, .tensor = s[i].tensor};
        names += sprintf(names, "module.%s", s[i].name) + 1;
    }
    free(s);
    *out = v;
    *n = k + 1;
    return clt__ok();
}

clt_status clt__averaged_model_loaded(clt_averaged_model *a, const char *fn)
{
    int64_t n = 0;
    clt_status st = clt_tensor_read(a->n_averaged, &n, sizeof n);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    if (n < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: n_averaged %lld is negative", fn,
                          (long long)n);
    a->count = n;
    return CLT_OK;
}
