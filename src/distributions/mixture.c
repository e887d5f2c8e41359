/* mixture.c: MixtureSameFamily (torch.distributions 1.13): a Categorical over
 * the last batch dimension of a component distribution; its log_prob,
 * moments, cdf and draw, composed of the components' own. */
#include "distributions/distributions.h"

/* A parameter tensor of d (through Independent and mixtures): for the
 * device. */
static const clt_tensor *any_param(const clt_distribution *d)
{
    while (d->p[0] == NULL && d->base)
        d = d->base;
    return d->p[0];
}

clt_status clt_mixture_same_family_dist(clt_distribution *mixture, clt_distribution *component,
                                        int validate_args, clt_distribution **out)
{
    const char *fn = "clt_mixture_same_family_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(mixture, fn);
    CLT__REQUIRE_ARG(component, fn);
    if (mixture->kind != CLT__DIST_CATEGORICAL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: The Mixture distribution needs to be an instance of "
                          "torch.distributions.Categorical, not %s",
                          fn, clt_distribution_name(mixture));
    int cb = component->batch_ndim, mb = mixture->batch_ndim;
    if (cb < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: component_distribution needs a batch dimension of components, "
                          "its batch_shape is []",
                          fn);
    char s1[128], s2[128];
    /* torch's check (sizes equal or 1), narrowed to what its sample can
     * gather: the mixture's batch shape must broadcast to the component's
     * batch_shape[:-1] */
    bool fits = mb <= cb - 1;
    for (int i = 0; fits && i < mb; i++) {
        int64_t m = mixture->batch_shape[mb - 1 - i], c = component->batch_shape[cb - 2 - i];
        fits = m == c || m == 1;
    }
    if (!fits)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: `mixture_distribution.batch_shape` (%s) is not compatible with "
                          "`component_distribution.batch_shape`(%s)",
                          fn, clt__shape_str(s1, sizeof s1, mb, mixture->batch_shape),
                          clt__shape_str(s2, sizeof s2, cb - 1, component->batch_shape));
    int64_t km = mixture->p[0]->shape[mixture->p[0]->ndim - 1];
    int64_t kc = component->batch_shape[cb - 1];
    if (km != kc)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: `mixture_distribution component` (%lld) does not equal "
                          "`component_distribution.batch_shape[-1]` (%lld)",
                          fn, (long long)km, (long long)kc);
    clt_status st = clt__same_device(mixture->p[0], any_param(component), fn);
    if (st != CLT_OK)
        return st;
    clt_distribution *d = clt__calloc(1, sizeof *d);
    if (!d)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    d->kind = CLT__DIST_MIXTURE;
    d->refs = 1;
    d->validate = validate_args != 0;
    d->dtype = component->dtype;
    __atomic_add_fetch(&component->refs, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&mixture->refs, 1, __ATOMIC_ACQ_REL);
    d->base = component;
    d->mix = mixture;
    d->batch_ndim = cb - 1;
    memcpy(d->batch_shape, component->batch_shape, (size_t)(cb - 1) * sizeof(int64_t));
    d->event_ndim = component->event_ndim;
    memcpy(d->event_shape, component->event_shape,
           (size_t)component->event_ndim * sizeof(int64_t));
    *out = d;
    return clt__ok();
}

/* x with a dimension of 1 before its event dims (torch's _pad), recorded. */
static clt_status pad(const char *fn, const clt_distribution *d, const clt_tensor *x,
                      clt_tensor **out)
{
    if (x->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: value has too many dimensions", fn);
    return clt__unsqueeze_rec(fn, x, x->ndim - d->event_ndim, out);
}

/* The mixture's probs [..., k] with event_ndim dims of 1 after them, to
 * broadcast against the components' [..., k, event] (torch's
 * _pad_mixture_dimensions). */
static clt_status padded_probs(const char *fn, const clt_distribution *d, clt_tensor **out)
{
    const clt_tensor *p = d->mix->p[0];
    int n = p->ndim + d->event_ndim;
    if (n > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: too many dimensions", fn);
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, p->shape, (size_t)p->ndim * sizeof *shape);
    for (int k = p->ndim; k < n; k++)
        shape[k] = 1;
    return clt__reshape_rec(fn, p, n, shape, out);
}

clt_status clt__dist_mixture_log_prob(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *x, *lp, *lm, *s;
    clt_status st;
    const clt_tensor *logits = d->mix->p[1];
    CLT__TRY(pad(fn, d, v, &x));
    CLT__TRY(clt_distribution_log_prob(d->base, x, &lp));
    CLT__TRY(clt__log_softmax_rec(fn, logits, logits->ndim - 1, &lm));
    CLT__TRY(clt__add_rec(fn, lp, lm, &s));
    return clt__error_as(clt_logsumexp(s, s->ndim - 1, 0, out), fn);
done:
    return clt__error_as(st, fn);
}

clt_status clt__dist_mixture_moment(const char *fn, const clt_distribution *d, int m,
                                    clt_tensor **out)
{
    clt_tensor *p, *mean, *a, *mu, *var;
    clt_status st;
    if (m == 2) { /* torch's Distribution.stddev: variance.sqrt() */
        CLT__TRY(clt__dist_mixture_moment(fn, d, 1, &a));
        return clt__sqrt_rec(fn, a, out);
    }
    int dim = -1 - d->event_ndim;
    CLT__TRY(padded_probs(fn, d, &p));
    CLT__TRY(clt_distribution_mean(d->base, &mean));
    CLT__TRY(clt__mul_rec(fn, p, mean, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim + dim, 0, &mu));
    if (m == 0) {
        *out = mu;
        return CLT_OK;
    }
    /* E[Var(Y|X)] + Var(E[Y|X]) */
    CLT__TRY(clt_distribution_variance(d->base, &var));
    CLT__TRY(clt__mul_rec(fn, p, var, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim + dim, 0, &var));
    CLT__TRY(pad(fn, d, mu, &a));
    CLT__TRY(clt__sub_rec(fn, mean, a, &a));
    CLT__TRY(clt__square_rec(fn, a, &a));
    CLT__TRY(clt__mul_rec(fn, p, a, &a));
    CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim + dim, 0, &a));
    return clt__add_rec(fn, var, a, out);
done:
    return clt__error_as(st, fn);
}

clt_status clt__dist_mixture_cdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                                 clt_tensor **out)
{
    clt_tensor *x, *c;
    clt_status st;
    CLT__TRY(pad(fn, d, v, &x));
    CLT__TRY(clt_distribution_cdf(d->base, x, &c));
    CLT__TRY(clt__mul_rec(fn, c, d->mix->p[0], &c));
    return clt__sum_dim_rec(fn, c, c->ndim - 1, 0, out);
done:
    return clt__error_as(st, fn);
}

clt_status clt__dist_mixture_sample(const char *fn, const clt_distribution *d,
                                    clt_generator *gen, int n, const int64_t *ext,
                                    clt_tensor **out)
{
    int ns = n - d->batch_ndim - d->event_ndim, nb = d->batch_ndim, ne = d->event_ndim;
    const clt_distribution *mix = d->mix;
    clt_tensor *ms, *cs, *idx, *g;
    clt_status st;
    if (n + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: sample_shape + the components' batch_shape + event_shape has %d "
                          "dimensions; at most %d are supported",
                          fn, n + 1, CLT_MAX_DIMS);
    /* torch's order: the mixture's draw [n, Bm], then the components'
     * [n, B, k, E] */
    CLT__TRY(clt_distribution_sample(mix, gen, ns, ext, &ms));
    CLT__TRY(clt_distribution_sample(d->base, gen, ns, ext, &cs));
    /* the picks as [n, 1.., Bm, 1, 1..], expanded to [n, B, 1, E] */
    int64_t shape[CLT_MAX_DIMS], full[CLT_MAX_DIMS];
    memcpy(shape, ext, (size_t)ns * sizeof *shape);
    for (int k = 0; k < nb - mix->batch_ndim; k++)
        shape[ns + k] = 1;
    memcpy(shape + ns + nb - mix->batch_ndim, mix->batch_shape,
           (size_t)mix->batch_ndim * sizeof *shape);
    for (int k = 0; k <= ne; k++)
        shape[ns + nb + k] = 1;
    memcpy(full, ext, (size_t)(ns + nb) * sizeof *full);
    full[ns + nb] = 1;
    memcpy(full + ns + nb + 1, d->event_shape, (size_t)ne * sizeof *full);
    CLT__TRY(clt__reshape_rec(fn, ms, n + 1, shape, &idx));
    CLT__TRY(clt__expand_rec(fn, idx, n + 1, full, &idx));
    CLT__TRY(clt_contiguous(idx, &idx));
    CLT__TRY(clt_gather(cs, ns + nb, idx, &g));
    return clt__squeeze_rec(fn, g, ns + nb, out);
done:
    return clt__error_as(st, fn);
}
