/* transform.h: what transform.c and transform_dist.c share: the
 * clt_transform handle and the maps computed in the caller's scope. */
#ifndef CLT_TRANSFORM_PRIVATE_H
#define CLT_TRANSFORM_PRIVATE_H

#include "distributions/distributions.h"

typedef enum clt__tf_kind {
    CLT__TF_EXP,
    CLT__TF_POWER,
    CLT__TF_SIGMOID,
    CLT__TF_TANH,
    CLT__TF_ABS,
    CLT__TF_AFFINE,
    CLT__TF_SOFTPLUS,
    CLT__TF_SOFTMAX,
    CLT__TF_STICK_BREAKING,
    CLT__TF_LOWER_CHOLESKY,
    CLT__TF_CORR_CHOLESKY,
    CLT__TF_COMPOSE,
    CLT__TF_INDEPENDENT,
    CLT__TF_RESHAPE,
    CLT__TF_CAT,
    CLT__TF_STACK,
    CLT__TF_CDF,
    CLT__TF_INV
} clt__tf_kind;

struct clt_transform {
    clt__tf_kind kind;
    int refs; /* atomic: composites, inverses and distributions hold parts */
    /* Own references, in no scope: Power: exponent; Affine: loc, scale. */
    clt_tensor *p[2];
    int event_dim; /* Affine's event_dim, Independent's reinterpreted dims, Cat's/Stack's dim */
    int n;         /* parts: Compose, Cat, Stack; 1 for Independent and the inverse */
    clt_transform **parts;
    int64_t *lengths; /* Cat's */
    /* Reshape's; the Compose a TransformedDistribution holds keeps in
     * in_shape the leading batch dims its base is expanded by (torch's
     * base_distribution.expand, where the transforms widen the base) */
    int in_ndim, out_ndim;
    int64_t in_shape[CLT_MAX_DIMS], out_shape[CLT_MAX_DIMS];
    clt_distribution *dist; /* CumulativeDistribution's, held */
};

int clt__tf_domain_ev(const clt_transform *t);
int clt__tf_codomain_ev(const clt_transform *t);

/* t(x), t.inv(y), t.log_abs_det_jacobian(x, y), in the caller's scope. */
clt_status clt__tf_call(const char *fn, const clt_transform *t, const clt_tensor *x,
                        clt_tensor **out);
clt_status clt__tf_inv_call(const char *fn, const clt_transform *t, const clt_tensor *y,
                            clt_tensor **out);
clt_status clt__tf_ladj(const char *fn, const clt_transform *t, const clt_tensor *x,
                        const clt_tensor *y, clt_tensor **out);
/* t.sign: *sign +1 or -1 with *out NULL, or *sign 0 and *out a tensor in
 * the caller's scope. */
clt_status clt__tf_sign(const char *fn, const clt_transform *t, int *sign, clt_tensor **out);
/* forward_shape (inverse false) or inverse_shape into out (n dims). */
clt_status clt__tf_shape(const char *fn, const clt_transform *t, bool inverse, int ndim,
                         const int64_t *shape, int *n, int64_t *out);
/* torch's _sum_rightmost: x summed over its last r dims (all of them
 * where it has fewer), recorded, in the caller's scope. */
clt_status clt__tf_sum_rightmost(const char *fn, const clt_tensor *x, int r, clt_tensor **out);
/* torch's Transform.__eq__: the parameter-free transforms of one class are
 * equal, Power and Affine when their parameters are equal everywhere (read
 * back), Compose and the inverse part by part, any other only with
 * itself. */
clt_status clt__tf_equal(const char *fn, const clt_transform *a, const clt_transform *b,
                         bool *eq);
/* A Compose of n parts (held), built without checks. */
clt_status clt__tf_compose(clt_transform *const *parts, int n, clt_transform **out);
#endif
