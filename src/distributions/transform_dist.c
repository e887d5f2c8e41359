/* transform_dist.c: TransformedDistribution and LogisticNormal of PyTorch
 * 1.13: a base distribution's draws pushed through transforms, its
 * log_prob through their inverses and log-determinants. */
#include <stdio.h>
#include <stdlib.h>

#include "distributions/transform.h"

/* The transforms' list is d->tf, a Compose of them. */

static clt_status make(const char *fn, clt__dist_kind kind, clt_distribution *base,
                       clt_transform *const *ts, int n, int validate_args, clt_distribution **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(base, fn);
    if (n < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d transforms", fn, n);
    if (n > 0 && !ts)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'transforms' is NULL", fn);
    for (int k = 0; k < n; k++)
        if (!ts[k])
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: transform %d is NULL", fn, k);
    char s1[128], s2[128];
    int nb = base->batch_ndim + base->event_ndim, base_ev = base->event_ndim;
    int64_t bs[CLT_MAX_DIMS], shape[CLT_MAX_DIMS + 1], back[CLT_MAX_DIMS + 1];
    memcpy(bs, base->batch_shape, (size_t)base->batch_ndim * sizeof *bs);
    memcpy(bs + base->batch_ndim, base->event_shape, (size_t)base_ev * sizeof *bs);
    clt_transform *c = NULL;
    clt_distribution *d = NULL, *b = NULL;
    clt_status st = clt__tf_compose(ts, n, &c);
    if (st != CLT_OK)
        return st;
    int dom = clt__tf_domain_ev(c), ns = 0, nback = 0;
    if (nb < dom) {
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: base_distribution needs to have shape with size at least %d, but "
                        "got %s.",
                        fn, dom, clt__shape_str(s1, sizeof s1, nb, bs));
        goto done;
    }
    memcpy(shape, bs, (size_t)nb * sizeof *bs);
    CLT__TRY(clt__tf_shape(fn, c, false, nb, shape, &ns, shape));
    memcpy(back, shape, (size_t)ns * sizeof *back);
    CLT__TRY(clt__tf_shape(fn, c, true, ns, back, &nback, back));
    /* torch expands base to the shape the transforms give back; leading
     * dims are drawn as more sample dims (the base's values broadcast in
     * log_prob, cdf and icdf), other widenings are refused */
    int pre = nback - nb;
    if (pre < 0 || memcmp(back + pre, bs, (size_t)nb * sizeof *bs) != 0 ||
        dom - base_ev > base->batch_ndim) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: the transforms widen the base shape %s to %s; expanding the base "
                        "distribution other than by leading batch dims is not supported",
                        fn, clt__shape_str(s1, sizeof s1, nb, bs),
                        clt__shape_str(s2, sizeof s2, nback, back));
        goto done;
    }
    c->in_ndim = pre;
    memcpy(c->in_shape, back, (size_t)pre * sizeof *back);
    int ev = clt__tf_codomain_ev(c) + (base_ev > dom ? base_ev - dom : 0);
    if (ns > CLT_MAX_DIMS || ev > ns) {
        st = clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: the transformed shape has %d dimensions", fn,
                        ns);
        goto done;
    }
    if (dom > base_ev) {
        CLT__TRY(clt__error_as(clt_independent_dist(base, dom - base_ev, base->validate, &b), fn));
    } else {
        __atomic_add_fetch(&base->refs, 1, __ATOMIC_ACQ_REL);
        b = base;
    }
    d = clt__calloc(1, sizeof *d);
    if (!d) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    d->kind = kind;
    d->refs = 1;
    d->validate = validate_args != 0;
    d->dtype = base->dtype;
    d->base = b;
    d->tf = c;
    b = NULL;
    c = NULL;
    d->batch_ndim = ns - ev;
    d->event_ndim = ev;
    memcpy(d->batch_shape, shape, (size_t)(ns - ev) * sizeof *shape);
    memcpy(d->event_shape, shape + ns - ev, (size_t)ev * sizeof *shape);
    *out = d;
done:
    clt_distribution_free(b);
    clt_transform_free(c);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_transformed_dist(clt_distribution *base, clt_transform *const *transforms, int n,
                                int validate_args, clt_distribution **out)
{
    return make("clt_transformed_dist", CLT__DIST_TRANSFORMED, base, transforms, n, validate_args,
                out);
}

clt_status clt_logistic_normal_dist(const clt_tensor *loc, const clt_tensor *scale,
                                    int validate_args, clt_distribution **out)
{
    const char *fn = "clt_logistic_normal_dist";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(loc, fn);
    CLT__REQUIRE_ARG(scale, fn);
    clt_distribution *normal = NULL;
    clt_transform *sb = NULL;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    const clt_tensor *l = loc, *s = scale;
    if (loc->ndim == 0 && scale->ndim == 0) { /* torch's base_dist.expand([1]) */
        const int64_t one[1] = {1};
        clt_tensor *l1, *s1;
        CLT__TRY(clt__reshape_rec(fn, loc, 1, one, &l1));
        CLT__TRY(clt__reshape_rec(fn, scale, 1, one, &s1));
        l = l1;
        s = s1;
    }
    CLT__TRY(clt__error_as(clt_normal_dist(l, s, validate_args, &normal), fn));
    CLT__TRY(clt__error_as(clt_stick_breaking_transform(&sb), fn));
    st = make(fn, CLT__DIST_LOGISTIC_NORMAL, normal, &sb, 1, validate_args, out);
done:
    clt_distribution_free(normal);
    clt_transform_free(sb);
    clt_scope_end();
    return st == CLT_OK ? clt__ok() : st;
}

/* torch's TransformedDistribution.expand: the base expanded to the shape
 * that batch_shape + event_shape has before the transforms, the same
 * transforms, validation off. */
clt_status clt__dist_transformed_expand(const char *fn, const clt_distribution *d, int n,
                                        const int64_t *batch_shape, clt_distribution **out)
{
    *out = NULL;
    int ns = n + d->event_ndim, nback = 0;
    if (ns > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: more than %d dimensions", fn,
                          CLT_MAX_DIMS);
    int64_t shape[CLT_MAX_DIMS + 1], back[CLT_MAX_DIMS + 1];
    memcpy(shape, batch_shape, (size_t)n * sizeof *shape);
    memcpy(shape + n, d->event_shape, (size_t)d->event_ndim * sizeof *shape);
    clt_status st = clt__tf_shape(fn, d->tf, true, ns, shape, &nback, back);
    if (st != CLT_OK)
        return st;
    int nb = nback - d->base->event_ndim;
    if (nb < 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: the transforms give back %d dims", fn,
                          nback);
    clt_distribution *b = NULL;
    st = clt__error_as(clt_distribution_expand(d->base, back, nb, &b), fn);
    if (st == CLT_OK)
        st = make(fn, d->kind, b, (clt_transform *const *)&d->tf, 1, 0, out);
    clt_distribution_free(b);
    return st;
}

clt_status clt__dist_transformed_sample(const char *fn, const clt_distribution *d,
                                        clt_generator *gen, int n, const int64_t *ext,
                                        clt_tensor **out)
{
    int ns = n - d->batch_ndim - d->event_ndim, pre = d->tf->in_ndim;
    int64_t sh[CLT_MAX_DIMS];
    clt_tensor *x;
    clt_status st;
    if (ns + pre > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: too many sample dimensions", fn);
    if (ns > 0)
        memcpy(sh, ext, (size_t)ns * sizeof *sh);
    memcpy(sh + ns, d->tf->in_shape, (size_t)pre * sizeof *sh);
    ns += pre;
    ext = sh;
    /* rsample where base has it and a graph is wanted: the draw is
     * differentiable in base's parameters, as torch's */
    if (clt_is_grad_enabled() && clt_distribution_has_rsample(d->base) == 1)
        st = clt_distribution_rsample(d->base, gen, ns, ext, &x);
    else
        st = clt_distribution_sample(d->base, gen, ns, ext, &x);
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    return clt__tf_call(fn, d->tf, x, out);
}

/* The support of the last transform's codomain, as a constraint of
 * distribution.c's families: 0 real, 1 positive, 2 unit interval, 3
 * [-1, 1], 4 simplex. */
static int codomain_kind(const clt_transform *t, bool inv)
{
    switch (t->kind) {
    case CLT__TF_EXP:
    case CLT__TF_SOFTPLUS:
    case CLT__TF_ABS: return inv ? 0 : 1;
    case CLT__TF_POWER: return 1;
    case CLT__TF_SIGMOID: return inv ? 0 : 2;
    case CLT__TF_CDF: return inv ? 0 : 2;
    case CLT__TF_TANH: return inv ? 0 : 3;
    case CLT__TF_SOFTMAX:
    case CLT__TF_STICK_BREAKING: return inv ? 0 : 4;
    case CLT__TF_INDEPENDENT: return codomain_kind(t->parts[0], inv);
    case CLT__TF_INV: return codomain_kind(t->parts[0], !inv);
    case CLT__TF_COMPOSE:
        if (t->n == 0)
            return 0;
        return inv ? codomain_kind(t->parts[0], inv) : codomain_kind(t->parts[t->n - 1], inv);
    default: return 0;
    }
}

static clt_status check_support(const char *fn, const clt_distribution *d, const clt_tensor *v)
{
    static const char *const cname[] = {"Real()", "GreaterThan(lower_bound=0.0)",
                                        "Interval(lower_bound=0.0, upper_bound=1.0)",
                                        "Interval(lower_bound=-1.0, upper_bound=1.0)", "Simplex()"};
    int k = d->tf->n ? codomain_kind(d->tf->parts[d->tf->n - 1], false) : 0;
    if (k == 0)
        return CLT_OK;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int was = clt_set_grad_enabled(0);
    clt_tensor *a, *b, *ok = NULL, *all;
    double pass = 0;
    switch (k) {
    case 1: CLT__TRY(clt_gt_scalar(v, 0, &ok)); break;
    case 2:
    case 3:
        CLT__TRY(clt_ge_scalar(v, k == 2 ? 0 : -1, &a));
        CLT__TRY(clt_le_scalar(v, 1, &b));
        CLT__TRY(clt_logical_and(a, b, &ok));
        break;
    default:
        if (v->ndim < 1) {
            CLT__TRY(clt_eq_scalar(v, 1, &ok));
            break;
        }
        CLT__TRY(clt_sum_dim(v, v->ndim - 1, 0, &a));
        CLT__TRY(clt_sub_scalar(a, 1, &a));
        CLT__TRY(clt_abs(a, &a));
        CLT__TRY(clt_lt_scalar(a, 1e-6, &a));
        CLT__TRY(clt_ge_scalar(v, 0, &b));
        CLT__TRY(clt_all_dim(b, b->ndim - 1, 0, &b));
        CLT__TRY(clt_logical_and(a, b, &ok));
        break;
    }
    CLT__TRY(clt_all(ok, &all));
    CLT__TRY(clt_tensor_item(all, &pass));
done:
    clt_set_grad_enabled(was);
    clt_scope_end();
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    if (pass != 0)
        return CLT_OK;
    char s1[128];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: Expected value argument (Tensor of shape %s) to be within the support "
                      "(%s) of the distribution %s, but found invalid values",
                      fn, clt__shape_str(s1, sizeof s1, v->ndim, v->shape), cname[k],
                      clt_distribution_name(d));
}

clt_status clt__dist_transformed_log_prob(const char *fn, const clt_distribution *d,
                                          const clt_tensor *v, clt_tensor **out)
{
    clt_status st;
    if (d->validate && (st = check_support(fn, d, v)) != CLT_OK)
        return st;
    const clt_transform *c = d->tf;
    int ev = d->event_ndim;
    clt_tensor *lp = NULL, *y = (clt_tensor *)v, *x, *j, *b;
    for (int k = c->n - 1; k >= 0; k--) {
        const clt_transform *t = c->parts[k];
        CLT__TRY(clt__tf_inv_call(fn, t, y, &x));
        ev += clt__tf_domain_ev(t) - clt__tf_codomain_ev(t);
        CLT__TRY(clt__tf_ladj(fn, t, x, y, &j));
        CLT__TRY(clt__tf_sum_rightmost(fn, j, ev - clt__tf_domain_ev(t), &j));
        if (lp)
            CLT__TRY(clt__sub_rec(fn, lp, j, &lp));
        else
            CLT__TRY(clt__neg_rec(fn, j, &lp));
        y = x;
    }
    CLT__TRY(clt__error_as(clt_distribution_log_prob(d->base, y, &b), fn));
    CLT__TRY(clt__tf_sum_rightmost(fn, b, ev - d->base->event_ndim, &b));
    if (lp)
        return clt__add_rec(fn, lp, b, out);
    *out = b;
    return CLT_OK;
done:
    return st;
}

/* torch's _monotonize_cdf: value, or sign (value - 1/2) + 1/2. */
static clt_status monotonize(const char *fn, const clt_distribution *d, const clt_tensor *v,
                             clt_tensor **out)
{
    int sign;
    clt_tensor *s, *a;
    clt_status st;
    CLT__TRY(clt__tf_sign(fn, d->tf, &sign, &s));
    if (sign == 1)
        return clt__expand_rec(fn, v, v->ndim, v->shape, out);
    CLT__TRY(clt__sub_scalar_rec(fn, v, 0.5, &a));
    if (s)
        CLT__TRY(clt__mul_rec(fn, s, a, &a));
    else
        CLT__TRY(clt__mul_scalar_rec(fn, a, sign, &a));
    return clt__add_scalar_rec(fn, a, 0.5, out);
done:
    return st;
}

clt_status clt__dist_transformed_cdf(const char *fn, const clt_distribution *d,
                                     const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *x, *c;
    clt_status st;
    CLT__TRY(clt__tf_inv_call(fn, d->tf, v, &x));
    CLT__TRY(clt__error_as(clt_distribution_cdf(d->base, x, &c), fn));
    return monotonize(fn, d, c, out);
done:
    return st;
}

clt_status clt__dist_transformed_icdf(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *m, *x;
    clt_status st;
    CLT__TRY(monotonize(fn, d, v, &m));
    CLT__TRY(clt__error_as(clt_distribution_icdf(d->base, m, &x), fn));
    return clt__tf_call(fn, d->tf, x, out);
done:
    return st;
}
