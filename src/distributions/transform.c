/* transform.c: the clt_transform handle (torch.distributions.transforms of
 * PyTorch 1.13): constructors, event dims, shapes, and the maps composed
 * of recorded ops with torch's formulas. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "distributions/transform.h"

static const char *const tf_names[] = {
    [CLT__TF_EXP] = "ExpTransform",
    [CLT__TF_POWER] = "PowerTransform",
    [CLT__TF_SIGMOID] = "SigmoidTransform",
    [CLT__TF_TANH] = "TanhTransform",
    [CLT__TF_ABS] = "AbsTransform",
    [CLT__TF_AFFINE] = "AffineTransform",
    [CLT__TF_SOFTPLUS] = "SoftplusTransform",
    [CLT__TF_SOFTMAX] = "SoftmaxTransform",
    [CLT__TF_STICK_BREAKING] = "StickBreakingTransform",
    [CLT__TF_LOWER_CHOLESKY] = "LowerCholeskyTransform",
    [CLT__TF_CORR_CHOLESKY] = "CorrCholeskyTransform",
    [CLT__TF_COMPOSE] = "ComposeTransform",
    [CLT__TF_INDEPENDENT] = "IndependentTransform",
    [CLT__TF_RESHAPE] = "ReshapeTransform",
    [CLT__TF_CAT] = "CatTransform",
    [CLT__TF_STACK] = "StackTransform",
    [CLT__TF_CDF] = "CumulativeDistributionTransform",
    [CLT__TF_INV] = "_InverseTransform",
};

/* ---- the handle ----------------------------------------------------------- */

static clt_status tf_alloc(const char *fn, clt__tf_kind kind, int nparts, clt_transform **out)
{
    clt_transform *t = clt__calloc(1, sizeof *t);
    if (t && nparts > 0 && !(t->parts = clt__calloc((size_t)nparts, sizeof *t->parts))) {
        free(t);
        t = NULL;
    }
    if (!t)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory for a transform",
                          fn);
    t->kind = kind;
    t->refs = 1;
    *out = t;
    return CLT_OK;
}

static clt_transform *hold(clt_transform *t)
{
    __atomic_add_fetch(&t->refs, 1, __ATOMIC_ACQ_REL);
    return t;
}

void clt_transform_free(clt_transform *t)
{
    if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (int k = 0; k < 2; k++)
        clt_tensor_free(t->p[k]);
    for (int k = 0; k < t->n; k++)
        clt_transform_free(t->parts[k]);
    free(t->parts);
    free(t->lengths);
    clt_distribution_free(t->dist);
    free(t);
}

static clt_status simple(const char *fn, clt__tf_kind kind, clt_transform **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = tf_alloc(fn, kind, 0, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_exp_transform(clt_transform **out)
{
    return simple("clt_exp_transform", CLT__TF_EXP, out);
}

clt_status clt_sigmoid_transform(clt_transform **out)
{
    return simple("clt_sigmoid_transform", CLT__TF_SIGMOID, out);
}

clt_status clt_tanh_transform(clt_transform **out)
{
    return simple("clt_tanh_transform", CLT__TF_TANH, out);
}

clt_status clt_abs_transform(clt_transform **out)
{
    return simple("clt_abs_transform", CLT__TF_ABS, out);
}

clt_status clt_softplus_transform(clt_transform **out)
{
    return simple("clt_softplus_transform", CLT__TF_SOFTPLUS, out);
}

clt_status clt_softmax_transform(clt_transform **out)
{
    return simple("clt_softmax_transform", CLT__TF_SOFTMAX, out);
}

clt_status clt_stick_breaking_transform(clt_transform **out)
{
    return simple("clt_stick_breaking_transform", CLT__TF_STICK_BREAKING, out);
}

clt_status clt_lower_cholesky_transform(clt_transform **out)
{
    return simple("clt_lower_cholesky_transform", CLT__TF_LOWER_CHOLESKY, out);
}

clt_status clt_corr_cholesky_transform(clt_transform **out)
{
    return simple("clt_corr_cholesky_transform", CLT__TF_CORR_CHOLESKY, out);
}

/* Keeps a new handle on each of the n tensors (recorded, so that
 * gradients reach the caller's) as t's parameters. */
static clt_status keep_params(const char *fn, clt_transform *t, int n, const clt_tensor *const *ps,
                              const char *const *what)
{
    clt_status st;
    for (int k = 0; k < n; k++) {
        if ((st = clt__check_floating(ps[k], what[k], fn)) != CLT_OK)
            return st;
        if (k > 0 && (st = clt__same_device(ps[0], ps[k], fn)) != CLT_OK)
            return st;
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    for (int k = 0; k < n && st == CLT_OK; k++) {
        st = clt__expand_rec(fn, ps[k], ps[k]->ndim, ps[k]->shape, &t->p[k]);
        if (st == CLT_OK)
            clt__scope_disown(t->p[k]);
        else
            t->p[k] = NULL;
    }
    clt_scope_end();
    return st;
}

clt_status clt_power_transform(const clt_tensor *exponent, clt_transform **out)
{
    const char *fn = "clt_power_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(exponent, fn);
    clt_transform *t;
    clt_status st = tf_alloc(fn, CLT__TF_POWER, 0, &t);
    if (st == CLT_OK &&
        (st = keep_params(fn, t, 1, (const clt_tensor *[]){exponent}, (const char *[]){"exponent"})) !=
            CLT_OK) {
        clt_transform_free(t);
        return st;
    }
    if (st != CLT_OK)
        return st;
    *out = t;
    return clt__ok();
}

clt_status clt_affine_transform(const clt_tensor *loc, const clt_tensor *scale, int event_dim,
                                clt_transform **out)
{
    const char *fn = "clt_affine_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(loc, fn);
    CLT__REQUIRE_ARG(scale, fn);
    if (event_dim < 0 || event_dim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: event_dim %d is out of range [0, %d]",
                          fn, event_dim, CLT_MAX_DIMS);
    clt_transform *t;
    clt_status st = tf_alloc(fn, CLT__TF_AFFINE, 0, &t);
    if (st != CLT_OK)
        return st;
    t->event_dim = event_dim;
    if ((st = keep_params(fn, t, 2, (const clt_tensor *[]){loc, scale},
                          (const char *[]){"loc", "scale"})) != CLT_OK) {
        clt_transform_free(t);
        return st;
    }
    *out = t;
    return clt__ok();
}

/* A transform of n parts, each held. */
static clt_status with_parts(const char *fn, clt__tf_kind kind, clt_transform *const *parts, int n,
                             clt_transform **out)
{
    clt_transform *t;
    clt_status st = tf_alloc(fn, kind, n, &t);
    if (st != CLT_OK)
        return st;
    t->n = n;
    for (int k = 0; k < n; k++)
        t->parts[k] = hold(parts[k]);
    *out = t;
    return CLT_OK;
}

static clt_status check_parts(const char *fn, clt_transform *const *parts, int n, int min)
{
    if (n < min)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d transforms; at least %d needed", fn,
                          n, min);
    if (n > 0 && !parts)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'parts' is NULL", fn);
    for (int k = 0; k < n; k++)
        if (!parts[k])
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: transform %d is NULL", fn, k);
    return CLT_OK;
}

clt_status clt__tf_compose(clt_transform *const *parts, int n, clt_transform **out)
{
    return with_parts("clt_compose_transform", CLT__TF_COMPOSE, parts, n, out);
}

clt_status clt_compose_transform(clt_transform *const *parts, int n, clt_transform **out)
{
    const char *fn = "clt_compose_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_parts(fn, parts, n, 0);
    if (st == CLT_OK)
        st = with_parts(fn, CLT__TF_COMPOSE, parts, n, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_independent_transform(clt_transform *base, int reinterpreted_batch_ndims,
                                     clt_transform **out)
{
    const char *fn = "clt_independent_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(base, fn);
    if (reinterpreted_batch_ndims < 0 || reinterpreted_batch_ndims > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: reinterpreted_batch_ndims %d is out of range [0, %d]", fn,
                          reinterpreted_batch_ndims, CLT_MAX_DIMS);
    clt_status st = with_parts(fn, CLT__TF_INDEPENDENT, &base, 1, out);
    if (st != CLT_OK)
        return st;
    (*out)->event_dim = reinterpreted_batch_ndims;
    return clt__ok();
}

/* The element count of a shape, -1 where it overflows. */
static int64_t numel(int n, const int64_t *s)
{
    int64_t p = 1;
    for (int k = 0; k < n; k++)
        if (__builtin_mul_overflow(p, s[k], &p))
            return -1;
    return p;
}

static clt_status check_shape_arg(const char *fn, const char *what, int n, const int64_t *s)
{
    if (n < 0 || n > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s of %d dims (at most %d)", fn, what, n,
                          CLT_MAX_DIMS);
    if (n > 0 && !s)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, what);
    for (int k = 0; k < n; k++)
        if (s[k] < 0 || s[k] > ((int64_t)1 << 40))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s has a size of %lld", fn, what,
                              (long long)s[k]);
    return CLT_OK;
}

clt_status clt_reshape_transform(int in_ndim, const int64_t *in_shape, int out_ndim,
                                 const int64_t *out_shape, clt_transform **out)
{
    const char *fn = "clt_reshape_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_shape_arg(fn, "in_shape", in_ndim, in_shape);
    if (st == CLT_OK)
        st = check_shape_arg(fn, "out_shape", out_ndim, out_shape);
    if (st != CLT_OK)
        return st;
    int64_t nin = numel(in_ndim, in_shape);
    if (nin < 0 || nin != numel(out_ndim, out_shape))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: in_shape, out_shape have different numbers of elements", fn);
    clt_transform *t;
    if ((st = tf_alloc(fn, CLT__TF_RESHAPE, 0, &t)) != CLT_OK)
        return st;
    t->in_ndim = in_ndim;
    t->out_ndim = out_ndim;
    if (in_ndim > 0)
        memcpy(t->in_shape, in_shape, (size_t)in_ndim * sizeof *in_shape);
    if (out_ndim > 0)
        memcpy(t->out_shape, out_shape, (size_t)out_ndim * sizeof *out_shape);
    *out = t;
    return clt__ok();
}

/* torch's Transform.event_dim of a part of a Cat or Stack. */
static clt_status part_event_dims(const char *fn, clt_transform *const *parts, int n)
{
    for (int k = 0; k < n; k++)
        if (clt__tf_domain_ev(parts[k]) != clt__tf_codomain_ev(parts[k]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: transform %d: Please use either .domain.event_dim or "
                              ".codomain.event_dim",
                              fn, k);
    return CLT_OK;
}

clt_status clt_cat_transform(clt_transform *const *parts, int n, int dim, const int64_t *lengths,
                             clt_transform **out)
{
    const char *fn = "clt_cat_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_parts(fn, parts, n, 1);
    if (st == CLT_OK)
        st = part_event_dims(fn, parts, n);
    if (st != CLT_OK)
        return st;
    for (int k = 0; lengths && k < n; k++)
        if (lengths[k] < 0 || lengths[k] > ((int64_t)1 << 40))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: lengths[%d] is %lld", fn, k,
                              (long long)lengths[k]);
    if (dim < -CLT_MAX_DIMS || dim >= CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: dim %d is out of range", fn, dim);
    int64_t *len = clt__calloc((size_t)n, sizeof *len);
    if (!len)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int k = 0; k < n; k++)
        len[k] = lengths ? lengths[k] : 1;
    if ((st = with_parts(fn, CLT__TF_CAT, parts, n, out)) != CLT_OK) {
        free(len);
        return st;
    }
    (*out)->lengths = len;
    (*out)->event_dim = dim;
    return clt__ok();
}

clt_status clt_stack_transform(clt_transform *const *parts, int n, int dim, clt_transform **out)
{
    const char *fn = "clt_stack_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_parts(fn, parts, n, 1);
    if (st == CLT_OK)
        st = part_event_dims(fn, parts, n);
    if (st != CLT_OK)
        return st;
    if (dim < -CLT_MAX_DIMS || dim >= CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: dim %d is out of range", fn, dim);
    if ((st = with_parts(fn, CLT__TF_STACK, parts, n, out)) != CLT_OK)
        return st;
    (*out)->event_dim = dim;
    return clt__ok();
}

clt_status clt_cumulative_distribution_transform(clt_distribution *distribution,
                                                 clt_transform **out)
{
    const char *fn = "clt_cumulative_distribution_transform";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(distribution, fn);
    clt_transform *t;
    clt_status st = tf_alloc(fn, CLT__TF_CDF, 0, &t);
    if (st != CLT_OK)
        return st;
    __atomic_add_fetch(&distribution->refs, 1, __ATOMIC_ACQ_REL);
    t->dist = distribution;
    *out = t;
    return clt__ok();
}

/* t.inv without checks (a new handle). */
static clt_status make_inv(const char *fn, clt_transform *t, clt_transform **out)
{
    if (t->kind == CLT__TF_INV) {
        *out = hold(t->parts[0]);
        return CLT_OK;
    }
    if (t->kind != CLT__TF_COMPOSE)
        return with_parts(fn, CLT__TF_INV, &t, 1, out);
    clt_transform *c;
    clt_status st = tf_alloc(fn, CLT__TF_COMPOSE, t->n, &c);
    if (st != CLT_OK)
        return st;
    for (int k = 0; k < t->n && st == CLT_OK; k++) {
        st = make_inv(fn, t->parts[t->n - 1 - k], &c->parts[k]);
        if (st == CLT_OK)
            c->n = k + 1;
    }
    if (st != CLT_OK) {
        clt_transform_free(c);
        return st;
    }
    *out = c;
    return CLT_OK;
}

clt_status clt_transform_inv(clt_transform *t, clt_transform **out)
{
    const char *fn = "clt_transform_inv";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = make_inv(fn, t, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- properties ----------------------------------------------------------- */

const char *clt_transform_name(const clt_transform *t)
{
    return t ? tf_names[t->kind] : NULL;
}

static int imax(int a, int b)
{
    return a > b ? a : b;
}

int clt__tf_domain_ev(const clt_transform *t)
{
    switch (t->kind) {
    case CLT__TF_AFFINE: return t->event_dim;
    case CLT__TF_SOFTMAX:
    case CLT__TF_STICK_BREAKING:
    case CLT__TF_CORR_CHOLESKY: return 1;
    case CLT__TF_LOWER_CHOLESKY: return 2;
    case CLT__TF_INDEPENDENT: return clt__tf_domain_ev(t->parts[0]) + t->event_dim;
    case CLT__TF_RESHAPE: return t->in_ndim;
    case CLT__TF_CDF: return t->dist->event_ndim;
    case CLT__TF_INV: return clt__tf_codomain_ev(t->parts[0]);
    case CLT__TF_CAT:
    case CLT__TF_STACK: {
        int e = 0;
        for (int k = 0; k < t->n; k++)
            e = imax(e, clt__tf_domain_ev(t->parts[k]));
        if (t->kind == CLT__TF_STACK && t->event_dim + e < 0)
            e++;
        return e;
    }
    case CLT__TF_COMPOSE: {
        if (t->n == 0)
            return 0;
        int e = clt__tf_codomain_ev(t->parts[t->n - 1]);
        for (int k = t->n - 1; k >= 0; k--) {
            e += clt__tf_domain_ev(t->parts[k]) - clt__tf_codomain_ev(t->parts[k]);
            e = imax(e, clt__tf_domain_ev(t->parts[k]));
        }
        return e;
    }
    default: return 0;
    }
}

int clt__tf_codomain_ev(const clt_transform *t)
{
    switch (t->kind) {
    case CLT__TF_CORR_CHOLESKY: return 2;
    case CLT__TF_RESHAPE: return t->out_ndim;
    case CLT__TF_CDF: return 0;
    case CLT__TF_INDEPENDENT: return clt__tf_codomain_ev(t->parts[0]) + t->event_dim;
    case CLT__TF_INV: return clt__tf_domain_ev(t->parts[0]);
    case CLT__TF_CAT:
    case CLT__TF_STACK: {
        int e = 0;
        for (int k = 0; k < t->n; k++)
            e = imax(e, clt__tf_codomain_ev(t->parts[k]));
        if (t->kind == CLT__TF_STACK && t->event_dim + e < 0)
            e++;
        return e;
    }
    case CLT__TF_COMPOSE: {
        if (t->n == 0)
            return 0;
        int e = clt__tf_domain_ev(t->parts[0]);
        for (int k = 0; k < t->n; k++) {
            e += clt__tf_codomain_ev(t->parts[k]) - clt__tf_domain_ev(t->parts[k]);
            e = imax(e, clt__tf_codomain_ev(t->parts[k]));
        }
        return e;
    }
    default: return clt__tf_domain_ev(t);
    }
}

int clt_transform_domain_event_dim(const clt_transform *t)
{
    return t ? clt__tf_domain_ev(t) : -1;
}

int clt_transform_codomain_event_dim(const clt_transform *t)
{
    return t ? clt__tf_codomain_ev(t) : -1;
}

static bool bijective(const clt_transform *t)
{
    switch (t->kind) {
    case CLT__TF_ABS:
    case CLT__TF_SOFTMAX:
    case CLT__TF_LOWER_CHOLESKY: return false;
    case CLT__TF_COMPOSE:
    case CLT__TF_CAT:
    case CLT__TF_STACK:
    case CLT__TF_INDEPENDENT:
    case CLT__TF_INV:
        for (int k = 0; k < t->n; k++)
            if (!bijective(t->parts[k]))
                return false;
        return true;
    default: return true;
    }
}

int clt_transform_bijective(const clt_transform *t)
{
    return t ? bijective(t) : -1;
}

static clt_status not_implemented(const char *fn, const clt_transform *t, const char *what)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s does not implement %s", fn,
                      tf_names[t->kind], what);
}

clt_status clt__tf_sign(const char *fn, const clt_transform *t, int *sign, clt_tensor **out)
{
    *sign = 1;
    *out = NULL;
    switch (t->kind) {
    case CLT__TF_EXP:
    case CLT__TF_POWER:
    case CLT__TF_SIGMOID:
    case CLT__TF_TANH:
    case CLT__TF_SOFTPLUS:
    case CLT__TF_CDF: return CLT_OK;
    case CLT__TF_AFFINE: {
        clt_status st = clt_sign(t->p[1], out);
        if (st != CLT_OK)
            return clt__error_as(st, fn);
        *sign = 0;
        return CLT_OK;
    }
    case CLT__TF_INDEPENDENT:
    case CLT__TF_INV: return clt__tf_sign(fn, t->parts[0], sign, out);
    case CLT__TF_COMPOSE:
        for (int k = 0; k < t->n; k++) {
            int s;
            clt_tensor *ts;
            clt_status st = clt__tf_sign(fn, t->parts[k], &s, &ts);
            if (st != CLT_OK)
                return st;
            if (ts && *out)
                st = clt__mul_rec(fn, *out, ts, out);
            else if (ts && *sign != 1)
                st = clt__mul_scalar_rec(fn, ts, *sign, out);
            else if (ts)
                *out = ts;
            else if (*out && s != 1)
                st = clt__mul_scalar_rec(fn, *out, s, out);
            else if (!*out)
                *sign *= s;
            if (st != CLT_OK)
                return st;
            if (*out)
                *sign = 0;
        }
        return CLT_OK;
    default: return not_implemented(fn, t, "sign");
    }
}

clt_status clt_transform_sign(const clt_transform *t, int *sign, clt_tensor **out)
{
    const char *fn = "clt_transform_sign";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(sign, fn);
    *sign = 0;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    st = clt__tf_sign(fn, t, sign, out);
    if (st != CLT_OK)
        *sign = 0;
    if (st == CLT_OK && !*out) {
        clt_scope_end();
        return clt__ok();
    }
    return clt__scope_finish(clt__error_as(st, fn), out);
}

/* ---- shapes ----------------------------------------------------------------- */

static clt_status too_few(const char *fn)
{
    return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Too few dimensions on input", fn);
}

/* The transforms over the last dims need that many (a part of a Stack
 * sees one dim fewer than the Stack's input). */
static clt_status need_dims(const char *fn, const clt_tensor *x, int n)
{
    return x->ndim < n ? too_few(fn) : CLT_OK;
}

static clt_status bcast(const char *fn, const clt_transform *t, int ndim, const int64_t *shape,
                        int *n, int64_t *out)
{
    int nd = ndim;
    int64_t s[CLT_MAX_DIMS];
    memcpy(s, shape, (size_t)ndim * sizeof *s);
    for (int k = 0; k < 2 && t->p[k]; k++) {
        clt_status st = clt__broadcast_shapes(nd, s, t->p[k]->ndim, t->p[k]->shape, &nd, out, fn);
        if (st != CLT_OK)
            return st;
        memcpy(s, out, (size_t)nd * sizeof *s);
    }
    *n = nd;
    memcpy(out, s, (size_t)nd * sizeof *s);
    return CLT_OK;
}

clt_status clt__tf_shape(const char *fn, const clt_transform *t, bool inverse, int ndim,
                         const int64_t *shape, int *n, int64_t *out)
{
    char s1[128], s2[128];
    switch (t->kind) {
    case CLT__TF_POWER:
    case CLT__TF_AFFINE: return bcast(fn, t, ndim, shape, n, out);
    case CLT__TF_SOFTMAX:
    case CLT__TF_STICK_BREAKING:
        if (ndim < 1)
            return too_few(fn);
        *n = ndim;
        memmove(out, shape, (size_t)ndim * sizeof *out);
        if (t->kind == CLT__TF_STICK_BREAKING)
            out[ndim - 1] += inverse ? -1 : 1;
        if (out[ndim - 1] < 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: a simplex of no dims", fn);
        return CLT_OK;
    case CLT__TF_CORR_CHOLESKY:
        if (!inverse) {
            if (ndim < 1)
                return too_few(fn);
            if (ndim + 1 > CLT_MAX_DIMS)
                return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: too many dimensions", fn);
            int64_t nn = shape[ndim - 1];
            int64_t d = (int64_t)llround(sqrt(0.25 + 2.0 * (double)nn) + 0.5);
            if (d * (d - 1) / 2 != nn)
                return clt__error(CLT_ERR_SHAPE_MISMATCH,
                                  "%s: Input is not a flattend lower-diagonal number", fn);
            memmove(out, shape, (size_t)(ndim - 1) * sizeof *out);
            out[ndim - 1] = out[ndim] = d;
            *n = ndim + 1;
            return CLT_OK;
        }
        if (ndim < 2)
            return too_few(fn);
        if (shape[ndim - 2] != shape[ndim - 1])
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Input is not square", fn);
        int64_t d = shape[ndim - 1];
        memmove(out, shape, (size_t)(ndim - 2) * sizeof *out);
        out[ndim - 2] = d * (d - 1) / 2;
        *n = ndim - 1;
        return CLT_OK;
    case CLT__TF_RESHAPE: {
        int nin = inverse ? t->out_ndim : t->in_ndim, nout = inverse ? t->in_ndim : t->out_ndim;
        const int64_t *sin = inverse ? t->out_shape : t->in_shape;
        const int64_t *sout = inverse ? t->in_shape : t->out_shape;
        if (ndim < nin)
            return too_few(fn);
        int cut = ndim - nin;
        if (memcmp(shape + cut, sin, (size_t)nin * sizeof *sin) != 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Shape mismatch: expected %s but got %s",
                              fn, clt__shape_str(s1, sizeof s1, nin, shape + cut),
                              clt__shape_str(s2, sizeof s2, nin, sin));
        if (cut + nout > CLT_MAX_DIMS)
            return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: too many dimensions", fn);
        memmove(out, shape, (size_t)cut * sizeof *out);
        memcpy(out + cut, sout, (size_t)nout * sizeof *out);
        *n = cut + nout;
        return CLT_OK;
    }
    case CLT__TF_INDEPENDENT: return clt__tf_shape(fn, t->parts[0], inverse, ndim, shape, n, out);
    case CLT__TF_INV: return clt__tf_shape(fn, t->parts[0], !inverse, ndim, shape, n, out);
    case CLT__TF_COMPOSE: {
        int nd = ndim;
        int64_t s[CLT_MAX_DIMS];
        memcpy(s, shape, (size_t)ndim * sizeof *s);
        for (int k = 0; k < t->n; k++) {
            const clt_transform *p = t->parts[inverse ? t->n - 1 - k : k];
            clt_status st = clt__tf_shape(fn, p, inverse, nd, s, &nd, out);
            if (st != CLT_OK)
                return st;
            memcpy(s, out, (size_t)nd * sizeof *s);
        }
        *n = nd;
        memcpy(out, s, (size_t)nd * sizeof *s);
        return CLT_OK;
    }
    default:
        *n = ndim;
        memmove(out, shape, (size_t)ndim * sizeof *out);
        return CLT_OK;
    }
}

static clt_status shape_entry(const char *fn, const clt_transform *t, bool inverse, int ndim,
                              const int64_t *shape, int *out_ndim, int64_t *out_shape)
{
    CLT__REQUIRE_ARG(out_ndim, fn);
    *out_ndim = 0;
    CLT__REQUIRE_ARG(out_shape, fn);
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = check_shape_arg(fn, "shape", ndim, shape);
    if (st != CLT_OK)
        return st;
    int64_t tmp[CLT_MAX_DIMS + 1];
    int n = 0;
    if (ndim > 0)
        memcpy(tmp, shape, (size_t)ndim * sizeof *tmp);
    if ((st = clt__tf_shape(fn, t, inverse, ndim, tmp, &n, tmp)) != CLT_OK)
        return st;
    memcpy(out_shape, tmp, (size_t)n * sizeof *tmp);
    *out_ndim = n;
    return clt__ok();
}

clt_status clt_transform_forward_shape(const clt_transform *t, int ndim, const int64_t *shape,
                                       int *out_ndim, int64_t *out_shape)
{
    return shape_entry("clt_transform_forward_shape", t, false, ndim, shape, out_ndim, out_shape);
}

clt_status clt_transform_inverse_shape(const clt_transform *t, int ndim, const int64_t *shape,
                                       int *out_ndim, int64_t *out_shape)
{
    return shape_entry("clt_transform_inverse_shape", t, true, ndim, shape, out_ndim, out_shape);
}

/* ---- the maps ---------------------------------------------------------------- */

static double tiny_of(const clt_tensor *x)
{
    return x->dtype == CLT_FLOAT64 ? DBL_MIN : FLT_MIN;
}

static double eps_of(const clt_tensor *x)
{
    return x->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
}

clt_status clt__tf_sum_rightmost(const char *fn, const clt_tensor *x, int r, clt_tensor **out)
{
    if (r <= 0)
        return clt__expand_rec(fn, x, x->ndim, x->shape, out);
    int keep = x->ndim > r ? x->ndim - r : 0;
    int64_t shape[CLT_MAX_DIMS + 1];
    memcpy(shape, x->shape, (size_t)keep * sizeof *shape);
    shape[keep] = -1;
    clt_tensor *flat;
    clt_status st = clt__reshape_rec(fn, x, keep + 1, shape, &flat);
    return st != CLT_OK ? st : clt__sum_dim_rec(fn, flat, keep, 0, out);
}

/* sigmoid(x) clamped to [tiny, 1 - eps] (torch's _clipped_sigmoid). */
static clt_status clipped_sigmoid(const char *fn, const clt_tensor *x, clt_tensor **out)
{
    double lo = tiny_of(x), hi = 1 - eps_of(x);
    clt_tensor *s;
    clt_status st = clt__sigmoid_rec(fn, x, &s);
    return st != CLT_OK ? st : clt__clamp_rec(fn, s, &lo, &hi, out);
}

static clt_status softplus(const char *fn, const clt_tensor *x, clt_tensor **out)
{
    return clt__softplus_rec(fn, x, 1, 20, out);
}

/* log of K, K - 1, ..., 1 (torch's stick-breaking offsets), x's dtype. */
static clt_status log_offsets(const char *fn, const clt_tensor *x, int64_t k, clt_tensor **out)
{
    clt_tensor *a;
    clt_status st = clt_arange(x->dev, x->dtype, (double)k, 0, -1, &a);
    if (st != CLT_OK)
        return clt__error_as(st, fn);
    return clt__log_rec(fn, a, out);
}

/* pad of the last dim by (left, right) with value. */
static clt_status pad_last(const char *fn, const clt_tensor *x, int64_t left, int64_t right,
                           double value, clt_tensor **out)
{
    const int64_t pad[2] = {left, right};
    return clt__pad_rec(fn, x, pad, 2, CLT_PAD_CONSTANT, value, out);
}

static clt_status cum(const char *fn, bool prod, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = prod ? clt_cumprod(x, x->ndim - 1, out) : clt_cumsum(x, x->ndim - 1, out);
    return clt__error_as(st, fn);
}

/* The positions of torch's tril_mask (j < i + diag + 1 of a d x d matrix)
 * in row order, as an int64 index; with fill >= 0, an index of d * d
 * entries instead: each position's rank among them, fill elsewhere. */
static clt_status tril_index(const char *fn, clt_device *dev, int64_t d, int diag, int64_t fill,
                             clt_tensor **out)
{
    int64_t n = 0, total = fill >= 0 ? d * d : 0;
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++)
            n += j < i + diag + 1;
    if (fill < 0)
        total = n;
    int64_t *idx = clt__calloc((size_t)(total > 0 ? total : 1), sizeof *idx);
    if (!idx)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t r = 0;
    for (int64_t i = 0; i < d; i++)
        for (int64_t j = 0; j < d; j++) {
            bool in = j < i + diag + 1;
            if (fill >= 0)
                idx[i * d + j] = in ? r : fill;
            else if (in)
                idx[r] = i * d + j;
            r += in;
        }
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 1, &total, idx, out);
    free(idx);
    return clt__error_as(st, fn);
}

/* torch's vec_to_tril_matrix(v, diag=-1): [..., N] to [..., d, d]. */
static clt_status vec_to_tril(const char *fn, const clt_tensor *v, int64_t d, clt_tensor **out)
{
    int64_t nv = v->shape[v->ndim - 1];
    clt_tensor *pv, *idx, *g;
    clt_status st;
    int64_t shape[CLT_MAX_DIMS];
    CLT__TRY(pad_last(fn, v, 0, 1, 0, &pv));
    CLT__TRY(tril_index(fn, v->dev, d, -1, nv, &idx));
    CLT__TRY(clt__index_select_rec(fn, pv, pv->ndim - 1, idx, &g));
    memcpy(shape, v->shape, (size_t)(v->ndim - 1) * sizeof *shape);
    shape[v->ndim - 1] = shape[v->ndim] = d;
    return clt__reshape_rec(fn, g, v->ndim + 1, shape, out);
done:
    return st;
}

/* torch's tril_matrix_to_vec(m, diag): [..., d, d] to [..., N]. */
static clt_status tril_to_vec(const char *fn, const clt_tensor *m, int diag, clt_tensor **out)
{
    int64_t d = m->shape[m->ndim - 1];
    clt_tensor *f, *idx;
    clt_status st;
    if (m->ndim < 2 || m->shape[m->ndim - 2] != d)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Input is not square", fn);
    CLT__TRY(clt__flatten_rec(fn, m, m->ndim - 2, m->ndim - 1, &f));
    CLT__TRY(tril_index(fn, m->dev, d, diag, -1, &idx));
    return clt__index_select_rec(fn, f, f->ndim - 1, idx, out);
done:
    return st;
}

static clt_status check_dim(const char *fn, const clt_transform *t, const clt_tensor *x, int64_t size,
                            int *dim)
{
    int d = t->event_dim;
    if (d < -x->ndim || d >= x->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s: dim %d is out of range for a tensor of %d dims", fn,
                          tf_names[t->kind], d, x->ndim);
    *dim = d < 0 ? d + x->ndim : d;
    if (x->shape[*dim] != size)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s: size %lld along dim %d, expected %lld",
                          fn, tf_names[t->kind], (long long)x->shape[*dim], d, (long long)size);
    return CLT_OK;
}

/* Slice k of x along dim for a Cat (narrow) or Stack (select). */
static clt_status part_slice(const char *fn, const clt_transform *t, const clt_tensor *x, int dim,
                             int k, int64_t start, clt_tensor **out)
{
    if (t->kind == CLT__TF_CAT)
        return clt__narrow_rec(fn, x, dim, start, t->lengths[k], out);
    clt_tensor *s;
    clt_status st = clt__narrow_rec(fn, x, dim, k, 1, &s);
    return st != CLT_OK ? st : clt__squeeze_rec(fn, s, dim, out);
}

static int64_t cat_length(const clt_transform *t)
{
    int64_t s = 0;
    for (int k = 0; k < t->n; k++)
        s += t->kind == CLT__TF_CAT ? t->lengths[k] : 1;
    return s;
}

/* Cat's and Stack's forward or inverse: part by part, joined again. */
static clt_status cat_map(const char *fn, const clt_transform *t, const clt_tensor *x, bool inverse,
                          clt_tensor **out)
{
    int dim;
    clt_status st = check_dim(fn, t, x, cat_length(t), &dim);
    if (st != CLT_OK)
        return st;
    clt_tensor **ys = clt__calloc((size_t)t->n, sizeof *ys);
    if (!ys)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t start = 0;
    for (int k = 0; k < t->n; k++) {
        clt_tensor *s;
        CLT__TRY(part_slice(fn, t, x, dim, k, start, &s));
        start += t->kind == CLT__TF_CAT ? t->lengths[k] : 1;
        CLT__TRY(inverse ? clt__tf_inv_call(fn, t->parts[k], s, &ys[k])
                         : clt__tf_call(fn, t->parts[k], s, &ys[k]));
    }
    st = t->kind == CLT__TF_CAT
             ? clt__cat_rec(fn, (const clt_tensor *const *)ys, (size_t)t->n, dim, out)
             : clt__stack_rec(fn, (const clt_tensor *const *)ys, (size_t)t->n, dim, out);
done:
    free(ys);
    return st;
}

static clt_status cdf_call(const char *fn, int which, const clt_distribution *d,
                           const clt_tensor *x, clt_tensor **out)
{
    clt_status st = which == 0   ? clt_distribution_cdf(d, x, out)
                    : which == 1 ? clt_distribution_icdf(d, x, out)
                                 : clt_distribution_log_prob(d, x, out);
    return clt__error_as(st, fn);
}

clt_status clt__tf_call(const char *fn, const clt_transform *t, const clt_tensor *x,
                        clt_tensor **out)
{
    clt_tensor *a, *b, *c;
    clt_status st;
    switch (t->kind) {
    case CLT__TF_EXP: return clt__exp_rec(fn, x, out);
    case CLT__TF_POWER: return clt__pow_rec(fn, x, t->p[0], out);
    case CLT__TF_SIGMOID: return clipped_sigmoid(fn, x, out);
    case CLT__TF_TANH: return clt__tanh_rec(fn, x, out);
    case CLT__TF_ABS: return clt__abs_rec(fn, x, out);
    case CLT__TF_AFFINE:
        CLT__TRY(clt__mul_rec(fn, t->p[1], x, &a));
        return clt__add_rec(fn, t->p[0], a, out);
    case CLT__TF_SOFTPLUS: return softplus(fn, x, out);
    case CLT__TF_SOFTMAX: { /* exp(x - max) / sum; the max is a constant shift */
        CLT__TRY(need_dims(fn, x, 1));
        int dims[1] = {x->ndim - 1}, was = clt_set_grad_enabled(0);
        st = clt_amax(x, dims, 1, 1, &a);
        clt_set_grad_enabled(was);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__sub_rec(fn, x, a, &b));
        CLT__TRY(clt__exp_rec(fn, b, &b));
        CLT__TRY(clt__sum_dim_rec(fn, b, b->ndim - 1, 1, &c));
        return clt__div_rec(fn, b, c, out);
    }
    case CLT__TF_STICK_BREAKING: {
        clt_tensor *z, *zc;
        CLT__TRY(need_dims(fn, x, 1));
        CLT__TRY(log_offsets(fn, x, x->shape[x->ndim - 1], &a));
        CLT__TRY(clt__sub_rec(fn, x, a, &b));
        CLT__TRY(clipped_sigmoid(fn, b, &z));
        CLT__TRY(clt__rsub_scalar_rec(fn, z, 1, &c));
        CLT__TRY(cum(fn, true, c, &zc));
        CLT__TRY(pad_last(fn, z, 0, 1, 1, &a));
        CLT__TRY(pad_last(fn, zc, 1, 0, 1, &b));
        return clt__mul_rec(fn, a, b, out);
    }
    case CLT__TF_LOWER_CHOLESKY:
    case CLT__TF_INV:
        if (t->kind == CLT__TF_INV)
            return clt__tf_inv_call(fn, t->parts[0], x, out);
        CLT__TRY(need_dims(fn, x, 2));
        st = clt_tril(x, -1, &a);
        if (st == CLT_OK)
            st = clt_diagonal(x, 0, -2, -1, &b);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__exp_rec(fn, b, &b));
        st = clt_diag_embed(b, 0, -2, -1, &c);
        CLT__TRY(clt__error_as(st, fn));
        return clt__add_rec(fn, a, c, out);
    case CLT__TF_CORR_CHOLESKY: {
        int n = 0;
        int64_t shape[CLT_MAX_DIMS + 1];
        CLT__TRY(clt__tf_shape(fn, t, false, x->ndim, x->shape, &n, shape));
        int64_t d = shape[n - 1];
        double lo = -1 + eps_of(x), hi = 1 - eps_of(x);
        clt_tensor *r, *z, *e;
        CLT__TRY(clt__tanh_rec(fn, x, &a));
        CLT__TRY(clt__clamp_rec(fn, a, &lo, &hi, &a));
        CLT__TRY(vec_to_tril(fn, a, d, &r));
        CLT__TRY(clt__square_rec(fn, r, &z));
        CLT__TRY(clt__rsub_scalar_rec(fn, z, 1, &z));
        CLT__TRY(clt__sqrt_rec(fn, z, &z));
        CLT__TRY(cum(fn, true, z, &z));
        st = clt_eye(x->dev, x->dtype, d, d, &e);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__add_rec(fn, r, e, &r));
        CLT__TRY(clt__narrow_rec(fn, z, z->ndim - 1, 0, d - 1, &b));
        CLT__TRY(pad_last(fn, b, 1, 0, 1, &b));
        return clt__mul_rec(fn, r, b, out);
    }
    case CLT__TF_COMPOSE:
        a = (clt_tensor *)x;
        for (int k = 0; k < t->n; k++)
            CLT__TRY(clt__tf_call(fn, t->parts[k], a, &a));
        return t->n ? (*out = a, CLT_OK) : clt__expand_rec(fn, x, x->ndim, x->shape, out);
    case CLT__TF_INDEPENDENT: return clt__tf_call(fn, t->parts[0], x, out);
    case CLT__TF_RESHAPE: {
        int n;
        int64_t shape[CLT_MAX_DIMS];
        CLT__TRY(clt__tf_shape(fn, t, false, x->ndim, x->shape, &n, shape));
        return clt__reshape_rec(fn, x, n, shape, out);
    }
    case CLT__TF_CAT:
    case CLT__TF_STACK: return cat_map(fn, t, x, false, out);
    case CLT__TF_CDF: return cdf_call(fn, 0, t->dist, x, out);
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown transform", fn);
done:
    return st;
}

clt_status clt__tf_inv_call(const char *fn, const clt_transform *t, const clt_tensor *y,
                            clt_tensor **out)
{
    clt_tensor *a, *b, *c;
    clt_status st;
    switch (t->kind) {
    case CLT__TF_EXP: return clt__log_rec(fn, y, out);
    case CLT__TF_POWER:
        CLT__TRY(clt__reciprocal_rec(fn, t->p[0], &a));
        return clt__pow_rec(fn, y, a, out);
    case CLT__TF_SIGMOID: { /* y clamped, then log(y) - log1p(-y) */
        double lo = tiny_of(y), hi = 1 - eps_of(y);
        CLT__TRY(clt__clamp_rec(fn, y, &lo, &hi, &a));
        CLT__TRY(clt__log_rec(fn, a, &b));
        CLT__TRY(clt__neg_rec(fn, a, &c));
        CLT__TRY(clt__log1p_rec(fn, c, &c));
        return clt__sub_rec(fn, b, c, out);
    }
    case CLT__TF_TANH: return clt__atanh_rec(fn, y, out);
    case CLT__TF_ABS: return clt__expand_rec(fn, y, y->ndim, y->shape, out);
    case CLT__TF_AFFINE:
        CLT__TRY(clt__sub_rec(fn, y, t->p[0], &a));
        return clt__div_rec(fn, a, t->p[1], out);
    case CLT__TF_SOFTPLUS: /* log(-expm1(-y)) + y */
        CLT__TRY(clt__neg_rec(fn, y, &a));
        CLT__TRY(clt__expm1_rec(fn, a, &a));
        CLT__TRY(clt__neg_rec(fn, a, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        return clt__add_rec(fn, a, y, out);
    case CLT__TF_SOFTMAX: return clt__log_rec(fn, y, out);
    case CLT__TF_STICK_BREAKING: {
        CLT__TRY(need_dims(fn, y, 1));
        int64_t k = y->shape[y->ndim - 1] - 1;
        double lo = tiny_of(y);
        clt_tensor *crop, *sf;
        if (k < 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: a simplex of no dims", fn);
        CLT__TRY(clt__narrow_rec(fn, y, y->ndim - 1, 0, k, &crop));
        CLT__TRY(cum(fn, false, crop, &sf));
        CLT__TRY(clt__rsub_scalar_rec(fn, sf, 1, &sf));
        CLT__TRY(clt__clamp_rec(fn, sf, &lo, NULL, &sf));
        CLT__TRY(clt__log_rec(fn, crop, &a));
        CLT__TRY(clt__log_rec(fn, sf, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &a));
        CLT__TRY(log_offsets(fn, y, k, &c));
        return clt__add_rec(fn, a, c, out);
    }
    case CLT__TF_LOWER_CHOLESKY:
        CLT__TRY(need_dims(fn, y, 2));
        st = clt_tril(y, -1, &a);
        if (st == CLT_OK)
            st = clt_diagonal(y, 0, -2, -1, &b);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__log_rec(fn, b, &b));
        st = clt_diag_embed(b, 0, -2, -1, &c);
        CLT__TRY(clt__error_as(st, fn));
        return clt__add_rec(fn, a, c, out);
    case CLT__TF_CORR_CHOLESKY: {
        int n;
        int64_t shape[CLT_MAX_DIMS];
        CLT__TRY(clt__tf_shape(fn, t, true, y->ndim, y->shape, &n, shape));
        int64_t d = y->shape[y->ndim - 1];
        clt_tensor *yv, *cv, *tt;
        CLT__TRY(clt__mul_rec(fn, y, y, &a));
        CLT__TRY(cum(fn, false, a, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(clt__narrow_rec(fn, a, a->ndim - 1, 0, d > 0 ? d - 1 : 0, &b));
        CLT__TRY(pad_last(fn, b, 1, 0, 1, &b));
        CLT__TRY(tril_to_vec(fn, y, -1, &yv));
        CLT__TRY(tril_to_vec(fn, b, -1, &cv));
        CLT__TRY(clt__sqrt_rec(fn, cv, &cv));
        CLT__TRY(clt__div_rec(fn, yv, cv, &tt));
        CLT__TRY(clt__add_scalar_rec(fn, tt, 1, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, tt, 1, &b));
        CLT__TRY(clt__div_rec(fn, a, b, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        return clt__div_scalar_rec(fn, a, 2, out);
    }
    case CLT__TF_COMPOSE:
        a = (clt_tensor *)y;
        for (int k = t->n - 1; k >= 0; k--)
            CLT__TRY(clt__tf_inv_call(fn, t->parts[k], a, &a));
        return t->n ? (*out = a, CLT_OK) : clt__expand_rec(fn, y, y->ndim, y->shape, out);
    case CLT__TF_INDEPENDENT: return clt__tf_inv_call(fn, t->parts[0], y, out);
    case CLT__TF_RESHAPE: {
        int n;
        int64_t shape[CLT_MAX_DIMS];
        CLT__TRY(clt__tf_shape(fn, t, true, y->ndim, y->shape, &n, shape));
        return clt__reshape_rec(fn, y, n, shape, out);
    }
    case CLT__TF_CAT:
    case CLT__TF_STACK: return cat_map(fn, t, y, true, out);
    case CLT__TF_CDF: return cdf_call(fn, 1, t->dist, y, out);
    case CLT__TF_INV: return clt__tf_call(fn, t->parts[0], y, out);
    }
    return clt__error(CLT_ERR_INTERNAL, "%s: unknown transform", fn);
done:
    return st;
}

/* Cat's and Stack's log_abs_det_jacobian. */
static clt_status cat_ladj(const char *fn, const clt_transform *t, const clt_tensor *x,
                          const clt_tensor *y, clt_tensor **out)
{
    int dim, ydim;
    clt_status st = check_dim(fn, t, x, cat_length(t), &dim);
    if (st == CLT_OK)
        st = check_dim(fn, t, y, cat_length(t), &ydim);
    if (st != CLT_OK)
        return st;
    int ev = clt__tf_domain_ev(t);
    clt_tensor **js = clt__calloc((size_t)t->n, sizeof *js);
    if (!js)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t start = 0;
    for (int k = 0; k < t->n; k++) {
        clt_tensor *xs, *ys;
        CLT__TRY(part_slice(fn, t, x, dim, k, start, &xs));
        CLT__TRY(part_slice(fn, t, y, ydim, k, start, &ys));
        start += t->kind == CLT__TF_CAT ? t->lengths[k] : 1;
        CLT__TRY(clt__tf_ladj(fn, t->parts[k], xs, ys, &js[k]));
        if (t->kind == CLT__TF_CAT && clt__tf_domain_ev(t->parts[k]) < ev)
            CLT__TRY(clt__tf_sum_rightmost(fn, js[k], ev - clt__tf_domain_ev(t->parts[k]),
                                           &js[k]));
    }
    if (t->kind == CLT__TF_STACK) {
        int d = t->event_dim < 0 ? t->event_dim + js[0]->ndim + 1 : t->event_dim;
        st = clt__stack_rec(fn, (const clt_tensor *const *)js, (size_t)t->n, d, out);
    } else {
        int d = (t->event_dim >= 0 ? t->event_dim - x->ndim : t->event_dim) + ev;
        if (d < 0) {
            st = clt__cat_rec(fn, (const clt_tensor *const *)js, (size_t)t->n, d + js[0]->ndim,
                              out);
        } else {
            clt_tensor *s = js[0];
            for (int k = 1; k < t->n; k++)
                CLT__TRY(clt__add_rec(fn, s, js[k], &s));
            *out = s;
        }
    }
done:
    free(js);
    return st;
}

clt_status clt__tf_ladj(const char *fn, const clt_transform *t, const clt_tensor *x,
                        const clt_tensor *y, clt_tensor **out)
{
    clt_tensor *a, *b, *c;
    clt_status st;
    switch (t->kind) {
    case CLT__TF_EXP: return clt__expand_rec(fn, x, x->ndim, x->shape, out);
    case CLT__TF_POWER: /* log|exponent y / x| */
        CLT__TRY(clt__mul_rec(fn, t->p[0], y, &a));
        CLT__TRY(clt__div_rec(fn, a, x, &a));
        CLT__TRY(clt__abs_rec(fn, a, &a));
        return clt__log_rec(fn, a, out);
    case CLT__TF_SIGMOID: /* -softplus(-x) - softplus(x) */
        CLT__TRY(clt__neg_rec(fn, x, &a));
        CLT__TRY(softplus(fn, a, &a));
        CLT__TRY(softplus(fn, x, &b));
        CLT__TRY(clt__add_rec(fn, a, b, &a));
        return clt__neg_rec(fn, a, out);
    case CLT__TF_TANH: /* 2 (log 2 - x - softplus(-2 x)) */
        CLT__TRY(clt__mul_scalar_rec(fn, x, -2, &a));
        CLT__TRY(softplus(fn, a, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, x, log(2.0), &b));
        CLT__TRY(clt__sub_rec(fn, b, a, &a));
        return clt__mul_scalar_rec(fn, a, 2, out);
    case CLT__TF_AFFINE: { /* log|scale| summed over event_dim, expanded to x's batch */
        int keep = x->ndim > t->event_dim ? x->ndim - t->event_dim : 0;
        CLT__TRY(clt__abs_rec(fn, t->p[1], &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        if (t->event_dim)
            CLT__TRY(clt__tf_sum_rightmost(fn, a, t->event_dim, &a));
        return clt__expand_rec(fn, a, keep, x->shape, out);
    }
    case CLT__TF_SOFTPLUS:
        CLT__TRY(clt__neg_rec(fn, x, &a));
        CLT__TRY(softplus(fn, a, &a));
        return clt__neg_rec(fn, a, out);
    case CLT__TF_STICK_BREAKING: { /* sum(-x' + logsigmoid(x') + log y[..., :-1]) */
        CLT__TRY(need_dims(fn, x, 1));
        CLT__TRY(need_dims(fn, y, 1));
        if (y->shape[y->ndim - 1] != x->shape[x->ndim - 1] + 1)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: StickBreakingTransform: y's last size is not x's plus 1", fn);
        CLT__TRY(log_offsets(fn, x, x->shape[x->ndim - 1], &a));
        CLT__TRY(clt__sub_rec(fn, x, a, &a));
        st = clt_logsigmoid(a, &b);
        CLT__TRY(clt__error_as(st, fn));
        CLT__TRY(clt__sub_rec(fn, b, a, &b));
        CLT__TRY(clt__narrow_rec(fn, y, y->ndim - 1, 0, x->shape[x->ndim - 1], &c));
        CLT__TRY(clt__log_rec(fn, c, &c));
        CLT__TRY(clt__add_rec(fn, b, c, &b));
        return clt__sum_dim_rec(fn, b, b->ndim - 1, 0, out);
    }
    case CLT__TF_CORR_CHOLESKY: {
        CLT__TRY(need_dims(fn, x, 1));
        CLT__TRY(need_dims(fn, y, 2));
        CLT__TRY(clt__mul_rec(fn, y, y, &a));
        CLT__TRY(cum(fn, false, a, &a));
        CLT__TRY(clt__rsub_scalar_rec(fn, a, 1, &a));
        CLT__TRY(tril_to_vec(fn, a, -2, &a));
        CLT__TRY(clt__log_rec(fn, a, &a));
        CLT__TRY(clt__sum_dim_rec(fn, a, a->ndim - 1, 0, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, a, 0.5, &a));
        CLT__TRY(clt__mul_scalar_rec(fn, x, -2, &b));
        CLT__TRY(softplus(fn, b, &b));
        CLT__TRY(clt__add_rec(fn, x, b, &b));
        CLT__TRY(clt__sub_scalar_rec(fn, b, log(2.0), &b));
        CLT__TRY(clt__sum_dim_rec(fn, b, b->ndim - 1, 0, &b));
        CLT__TRY(clt__mul_scalar_rec(fn, b, -2, &b));
        return clt__add_rec(fn, a, b, out);
    }
    case CLT__TF_COMPOSE: {
        if (t->n == 0)
            return clt__error_as(clt_zeros_like(x, out), fn);
        const clt_tensor *xi = x;
        clt_tensor *sum = NULL;
        int ev = clt__tf_domain_ev(t);
        for (int k = 0; k < t->n; k++) {
            const clt_transform *p = t->parts[k];
            clt_tensor *yi, *j;
            if (k == t->n - 1)
                yi = (clt_tensor *)y;
            else
                CLT__TRY(clt__tf_call(fn, p, xi, &yi));
            CLT__TRY(clt__tf_ladj(fn, p, xi, yi, &j));
            CLT__TRY(clt__tf_sum_rightmost(fn, j, ev - clt__tf_domain_ev(p), &j));
            ev += clt__tf_codomain_ev(p) - clt__tf_domain_ev(p);
            if (sum)
                CLT__TRY(clt__add_rec(fn, sum, j, &sum));
            else
                sum = j;
            xi = yi;
        }
        *out = sum;
        return CLT_OK;
    }
    case CLT__TF_INDEPENDENT:
        CLT__TRY(clt__tf_ladj(fn, t->parts[0], x, y, &a));
        return clt__tf_sum_rightmost(fn, a, t->event_dim, out);
    case CLT__TF_RESHAPE: {
        int keep = x->ndim - t->in_ndim;
        if (keep < 0)
            return too_few(fn);
        st = clt_zeros(x->dev, x->dtype, keep, x->shape, out);
        return clt__error_as(st, fn);
    }
    case CLT__TF_CAT:
    case CLT__TF_STACK: return cat_ladj(fn, t, x, y, out);
    case CLT__TF_CDF: return cdf_call(fn, 2, t->dist, x, out);
    case CLT__TF_INV:
        CLT__TRY(clt__tf_ladj(fn, t->parts[0], y, x, &a));
        return clt__neg_rec(fn, a, out);
    default: return not_implemented(fn, t, "log_abs_det_jacobian");
    }
done:
    return st;
}

/* ---- the public maps ------------------------------------------------------- */

static clt_status check_input(const char *fn, const clt_tensor *x, const char *what, int ev)
{
    clt_status st = clt__check_floating(x, what, fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim < ev)
        return too_few(fn);
    return CLT_OK;
}

clt_status clt_transform_forward(const clt_transform *t, const clt_tensor *x, clt_tensor **out)
{
    const char *fn = "clt_transform_forward";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_input(fn, x, "x", clt__tf_domain_ev(t));
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    st = clt__tf_call(fn, t, x, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_transform_inverse(const clt_transform *t, const clt_tensor *y, clt_tensor **out)
{
    const char *fn = "clt_transform_inverse";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(y, fn);
    clt_status st = check_input(fn, y, "y", clt__tf_codomain_ev(t));
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    st = clt__tf_inv_call(fn, t, y, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

clt_status clt_transform_log_abs_det_jacobian(const clt_transform *t, const clt_tensor *x,
                                              const clt_tensor *y, clt_tensor **out)
{
    const char *fn = "clt_transform_log_abs_det_jacobian";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(y, fn);
    clt_status st = check_input(fn, x, "x", clt__tf_domain_ev(t));
    if (st == CLT_OK)
        st = check_input(fn, y, "y", clt__tf_codomain_ev(t));
    if (st == CLT_OK)
        st = clt__same_device(x, y, fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    st = clt__tf_ladj(fn, t, x, y, out);
    return clt__scope_finish(clt__error_as(st, fn), out);
}

/* (a == b).all() of two parameters, broadcast, read back. */
static clt_status tensors_equal(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                bool *eq)
{
    clt_tensor *e = NULL, *all = NULL;
    double v = 0;
    int was = clt_set_grad_enabled(0);
    clt_status st = clt__error_as(clt_eq(a, b, &e), fn);
    if (st == CLT_OK)
        st = clt__error_as(clt_all(e, &all), fn);
    if (st == CLT_OK)
        st = clt__error_as(clt_tensor_item(all, &v), fn);
    clt_set_grad_enabled(was);
    clt_tensor_free(e);
    clt_tensor_free(all);
    *eq = st == CLT_OK && v != 0;
    return st;
}

clt_status clt__tf_equal(const char *fn, const clt_transform *a, const clt_transform *b,
                         bool *eq)
{
    *eq = a == b;
    if (a == b || a->kind != b->kind)
        return CLT_OK;
    switch (a->kind) {
    case CLT__TF_EXP:
    case CLT__TF_SIGMOID:
    case CLT__TF_TANH:
    case CLT__TF_ABS:
    case CLT__TF_SOFTPLUS:
    case CLT__TF_SOFTMAX:
    case CLT__TF_STICK_BREAKING:
    case CLT__TF_LOWER_CHOLESKY: *eq = true; return CLT_OK;
    case CLT__TF_POWER: return tensors_equal(fn, a->p[0], b->p[0], eq);
    case CLT__TF_AFFINE: {
        clt_status st = tensors_equal(fn, a->p[0], b->p[0], eq);
        return st != CLT_OK || !*eq ? st : tensors_equal(fn, a->p[1], b->p[1], eq);
    }
    case CLT__TF_COMPOSE:
    case CLT__TF_INV: {
        if (a->n != b->n)
            return CLT_OK;
        clt_status st = CLT_OK;
        *eq = true;
        for (int k = 0; k < a->n && *eq && st == CLT_OK; k++)
            st = clt__tf_equal(fn, a->parts[k], b->parts[k], eq);
        return st;
    }
    default: return CLT_OK; /* torch's Transform.__eq__: the same object */
    }
}
