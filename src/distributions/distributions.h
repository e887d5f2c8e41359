/* distributions.h: what the files of src/distributions share: the handle
 * every family fills in, and the checks and sums that densities and
 * divergences both need. */
#ifndef CLT_DISTRIBUTIONS_PRIVATE_H
#define CLT_DISTRIBUTIONS_PRIVATE_H

#include "internal.h"

typedef enum clt__dist_kind {
    CLT__DIST_NORMAL,
    CLT__DIST_UNIFORM,
    CLT__DIST_BERNOULLI,
    CLT__DIST_CATEGORICAL,
    CLT__DIST_ONE_HOT,
    CLT__DIST_EXPONENTIAL,
    CLT__DIST_LAPLACE,
    CLT__DIST_MVN,
    CLT__DIST_INDEPENDENT
} clt__dist_kind;

struct clt_distribution {
    clt__dist_kind kind;
    int refs; /* atomic: an Independent holds a reference to its base */
    bool validate;
    clt_dtype dtype;
    /* Own references, in no scope (NULL where unused):
     *   Normal, Laplace: loc, scale; Uniform: low, high; Exponential: rate;
     *   Bernoulli, Categorical, OneHotCategorical: probs, logits (both,
     *   normalised as torch's lazy properties give them);
     *   MultivariateNormal: loc expanded to batch + event, and the
     *   unbroadcast scale_tril (torch's _unbroadcasted_scale_tril). */
    clt_tensor *p[2];
    int batch_ndim, event_ndim;
    int64_t batch_shape[CLT_MAX_DIMS], event_shape[CLT_MAX_DIMS];
    clt_distribution *base; /* Independent's, held */
    int reinterpreted;      /* Independent's reinterpreted_batch_ndims */
};

/* x summed over its last r dims (torch's _sum_rightmost), recorded; r 0
 * gives a new handle on x.  *out is made in the caller's scope. */
clt_status clt__dist_sum_rightmost(const char *fn, const clt_tensor *x, int r, clt_tensor **out);

/* log|det L| / 2 of lower-triangular L [..., n, n] with a positive
 * diagonal: the sum of the logarithms of its diagonal, recorded. */
clt_status clt__dist_half_log_det(const char *fn, const clt_tensor *l, clt_tensor **out);

/* The sum of squares of L^-1 x over the event dim (torch's
 * _batch_mahalanobis), L [..., n, n], x [..., n], batch dims broadcast;
 * recorded through clt_linalg_solve. */
clt_status clt__dist_mahalanobis(const char *fn, const clt_tensor *l, const clt_tensor *x,
                                 clt_tensor **out);

/* Torch's _validate_sample when d validates: value's trailing sizes are
 * the event shape, value broadcasts with batch + event shape, and every
 * element lies in d's support. */
clt_status clt__dist_check_value(const char *fn, const clt_distribution *d,
                                 const clt_tensor *value);

#endif
