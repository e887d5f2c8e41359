/* rrelu.c: torch.nn.functional.rrelu and nn.RReLU: a leaky ReLU whose
 * negative slopes are drawn uniform in [lower, upper) per element in train
 * mode (the fixed (lower + upper) / 2 in eval mode), composed of recorded
 * ops: y = x * noise, noise the slope where x <= 0 and 1 elsewhere, so
 * that the gradient is the noise, as torch's RreluWithNoiseBackward0. */
#include <math.h>
#include <stdlib.h>

#include "nn/nn.h"

static clt_status check_bounds(const char *fn, double lower, double upper)
{
    if (!(lower <= upper))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Lower bound should be less than or equal to the upper bound "
                          "(lower %g, upper %g)",
                          fn, lower, upper);
    return CLT_OK;
}

/* The forward for the call or layer fn: *out in the caller's scope. */
static clt_status rrelu_run(const char *fn, const clt_tensor *x, double lower, double upper,
                            bool training, clt_generator *gen, clt_tensor **out)
{
    clt_status st = check_bounds(fn, lower, upper);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_float(x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: \"rrelu_with_noise\" not implemented for %s (a floating input "
                          "is needed)",
                          fn, clt_dtype_name(x->dtype));
    if (!training)
        return clt__leaky_relu_rec(fn, x, (lower + upper) / 2.0, out);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *u = NULL, *a = NULL, *slope = NULL, *neg = NULL, *ones = NULL, *noise = NULL;
    int was = clt_set_grad_enabled(0);
    st = clt__rand_in(fn, gen, x->dev, x->dtype, x->ndim, x->shape, &u);
    if (st == CLT_OK)
        st = clt__mul_scalar_in(fn, u, upper - lower, &a);
    if (st == CLT_OK)
        st = clt__add_scalar_in(fn, a, lower, &slope);
    if (st == CLT_OK)
        st = clt__le_scalar_in(fn, x, 0.0, &neg);
    if (st == CLT_OK)
        st = clt__full(x->dev, x->dtype, x->ndim, x->shape, 1.0, &ones);
    if (st == CLT_OK)
        st = clt__where_in(fn, neg, slope, ones, &noise);
    clt_set_grad_enabled(was);
    if (st == CLT_OK)
        st = clt__mul_rec(fn, x, noise, out);
    if (st == CLT_OK && (st = clt_scope_keep(*out)) != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    clt_scope_end();
    return st;
}

clt_status clt_rrelu(const clt_tensor *input, double lower, double upper, int training,
                     clt_generator *gen, clt_tensor **out)
{
    static const char fn[] = "clt_rrelu";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    uint64_t drawn = clt_generator_offset(gen);
    clt_status st = rrelu_run(fn, input, lower, upper, training != 0, gen, out);
    if (st != CLT_OK) { /* a failed call takes no numbers from gen */
        clt_generator_set_offset(gen, drawn);
        return st;
    }
    return clt__ok();
}

/* f[0] lower, f[1] upper; gen borrowed, its offset noted for
 * clt_module_forward's undo before anything is drawn. */
static clt_status rrelu_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = m->training ? clt__forward_note_generator(m->gen) : CLT_OK;
    if (st == CLT_OK)
        st = rrelu_run(m->ops->name, x, m->f[0], m->f[1], m->training, m->gen, out);
    return st;
}

static const clt__module_ops rrelu_ops = {"RReLU", rrelu_forward, NULL, NULL};

clt_status clt_rrelu_layer(double lower, double upper, clt_generator *gen, clt_module **out)
{
    static const char fn[] = "clt_rrelu_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_bounds(fn, lower, upper);
    if (st == CLT_OK)
        st = clt__module_new(&rrelu_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->f[0] = lower;
    (*out)->f[1] = upper;
    (*out)->gen = gen;
    return clt__ok();
}
