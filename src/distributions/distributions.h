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
    CLT__DIST_INDEPENDENT,
    /* density2.c's families */
    CLT__DIST_GAMMA,
    CLT__DIST_CHI2,
    CLT__DIST_BETA,
    CLT__DIST_DIRICHLET,
    CLT__DIST_STUDENT_T,
    CLT__DIST_FISHER_SNEDECOR,
    CLT__DIST_LOG_NORMAL,
    CLT__DIST_GUMBEL,
    CLT__DIST_CAUCHY,
    CLT__DIST_HALF_NORMAL,
    CLT__DIST_HALF_CAUCHY,
    CLT__DIST_PARETO,
    CLT__DIST_WEIBULL,
    CLT__DIST_POISSON,
    CLT__DIST_GEOMETRIC,
    CLT__DIST_NEGATIVE_BINOMIAL,
    CLT__DIST_KUMARASWAMY,
    CLT__DIST_RELAXED_BERNOULLI,
    /* density3.c's families */
    CLT__DIST_BINOMIAL,
    CLT__DIST_MULTINOMIAL,
    CLT__DIST_CONTINUOUS_BERNOULLI,
    CLT__DIST_VON_MISES,
    CLT__DIST_RELAXED_ONE_HOT,
    /* mixture.c's and lowrank.c's */
    CLT__DIST_MIXTURE,
    CLT__DIST_LOWRANK_MVN,
    /* transform_dist.c's */
    CLT__DIST_TRANSFORMED,
    CLT__DIST_LOGISTIC_NORMAL,
    /* wishart.c's */
    CLT__DIST_WISHART,
    CLT__DIST_LKJ_CHOLESKY
} clt__dist_kind;

#define CLT__DIST_IS_TF(k) ((k) == CLT__DIST_TRANSFORMED || (k) == CLT__DIST_LOGISTIC_NORMAL)

#define CLT__DIST_IS2(k) ((k) >= CLT__DIST_GAMMA && (k) < CLT__DIST_MIXTURE)
#define CLT__DIST_IS3(k) ((k) >= CLT__DIST_BINOMIAL && (k) < CLT__DIST_MIXTURE)

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
     *   unbroadcast scale_tril (torch's _unbroadcasted_scale_tril), and,
     *   made from a precision matrix, that matrix expanded to batch + [n, n];
     *   Gamma: concentration, rate; Chi2: df / 2, 1/2 (a Gamma), df;
     *   Beta: concentration1, concentration0; Dirichlet: concentration;
     *   StudentT: df, loc, scale; FisherSnedecor: df1, df2; LogNormal,
     *   Gumbel, Cauchy: loc, scale; HalfNormal, HalfCauchy: scale; Pareto:
     *   scale, alpha; Weibull: scale, concentration; Poisson: rate;
     *   Geometric: probs, logits; NegativeBinomial: total_count, probs,
     *   logits; Kumaraswamy: concentration1, concentration0;
     *   RelaxedBernoulli: probs, logits, temperature; Binomial:
     *   total_count, probs, logits; Multinomial: probs, logits (as
     *   Categorical's); ContinuousBernoulli: probs (clamped), logits; VonMises: loc,
     *   concentration; RelaxedOneHotCategorical: probs, logits (as
     *   Categorical's), temperature; LowRankMultivariateNormal: loc expanded
 *   to batch + event, and the unbroadcast cov_factor and cov_diag. */
    clt_tensor *p[3];
    int batch_ndim, event_ndim;
    int64_t batch_shape[CLT_MAX_DIMS], event_shape[CLT_MAX_DIMS];
    clt_distribution *base; /* Independent's, MixtureSameFamily's components, held */
    clt_distribution *mix;  /* MixtureSameFamily's Categorical, held */
    int reinterpreted;      /* Independent's reinterpreted_batch_ndims */
    int64_t total_count;    /* Multinomial's */
    struct clt_transform *tf; /* TransformedDistribution's transforms (a Compose), held */
    bool straight_through;  /* OneHotCategoricalStraightThrough (a OneHotCategorical) */
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

/* density2.c: what the families after Independent compute, in the
 * caller's scope (sample: the draw of the extended shape ext of n dims,
 * recorded where the family has rsample; moment 0 mean, 1 variance, 2
 * stddev; cdf and icdf: CLT_ERR_INVALID_ARGUMENT where torch has none,
 * which clt__dist2_has_cdf tells first). */
clt_status clt__dist2_sample(const char *fn, const clt_distribution *d, clt_generator *gen, int n,
                             const int64_t *ext, clt_tensor **out);
clt_status clt__dist2_log_prob(const char *fn, const clt_distribution *d, const clt_tensor *v,
                               clt_tensor **out);
clt_status clt__dist2_entropy(const char *fn, const clt_distribution *d, clt_tensor **out);
clt_status clt__dist2_moment(const char *fn, const clt_distribution *d, int m, clt_tensor **out);
bool clt__dist2_has_cdf(const clt_distribution *d);
clt_status clt__dist2_cdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                          clt_tensor **out);
clt_status clt__dist2_icdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                           clt_tensor **out);

/* density3.c: the same for Binomial, Multinomial and ContinuousBernoulli
 * (the density2.c entries pass them on); clt__dist3_cb_log_norm is
 * ContinuousBernoulli's log-normaliser (torch's _cont_bern_log_norm). */
clt_status clt__dist3_sample(const char *fn, const clt_distribution *d, clt_generator *gen, int n,
                             const int64_t *ext, clt_tensor **out);
clt_status clt__dist3_log_prob(const char *fn, const clt_distribution *d, const clt_tensor *v,
                               clt_tensor **out);
clt_status clt__dist3_entropy(const char *fn, const clt_distribution *d, clt_tensor **out);
clt_status clt__dist3_moment(const char *fn, const clt_distribution *d, int m, clt_tensor **out);
bool clt__dist3_has_cdf(const clt_distribution *d);
clt_status clt__dist3_cdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                          clt_tensor **out);
clt_status clt__dist3_icdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                           clt_tensor **out);
clt_status clt__dist3_cb_log_norm(const char *fn, const clt_distribution *d, clt_tensor **out);
/* mixture.c: MixtureSameFamily's log_prob (of a value already checked),
 * moment (0 mean, 1 variance, 2 stddev), cdf and draw (as
 * clt__dist2_sample's), in the caller's scope. */
clt_status clt__dist_mixture_log_prob(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out);
clt_status clt__dist_mixture_moment(const char *fn, const clt_distribution *d, int m,
                                    clt_tensor **out);
clt_status clt__dist_mixture_cdf(const char *fn, const clt_distribution *d, const clt_tensor *v,
                                 clt_tensor **out);
clt_status clt__dist_mixture_sample(const char *fn, const clt_distribution *d,
                                    clt_generator *gen, int n, const int64_t *ext,
                                    clt_tensor **out);

/* lowrank.c: LowRankMultivariateNormal's log_prob, entropy, moment (as
 * the mixture's), rsample (as clt__dist2_sample's), and the KL of it with
 * itself or MultivariateNormal (p or q one of them), in the caller's
 * scope. */
clt_status clt__dist_lowrank_log_prob(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out);
clt_status clt__dist_lowrank_entropy(const char *fn, const clt_distribution *d, clt_tensor **out);
clt_status clt__dist_lowrank_moment(const char *fn, const clt_distribution *d, int m,
                                    clt_tensor **out);
clt_status clt__dist_lowrank_rsample(const char *fn, const clt_distribution *d,
                                     clt_generator *gen, int n, const int64_t *ext,
                                     clt_tensor **out);
clt_status clt__dist_lowrank_kl(const char *fn, const clt_distribution *p,
                                const clt_distribution *q, clt_tensor **out);

/* wishart.c: Wishart's log_prob, entropy, moment (0 mean, 1 variance, 2
 * stddev, 3 mode) and rsample (as clt__dist2_sample's), in the caller's
 * scope; p[0] is df expanded to the batch shape, p[1] the unbroadcast
 * scale_tril, p[2] the covariance_matrix given (batch + event) or NULL. */
clt_status clt__dist_wishart_log_prob(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out);
clt_status clt__dist_wishart_entropy(const char *fn, const clt_distribution *d, clt_tensor **out);
/* KL(Wishart || Wishart), torch's exponential-family pair in closed form,
 * in the caller's scope. */
clt_status clt__dist_wishart_kl(const char *fn, const clt_distribution *p,
                                const clt_distribution *q, clt_tensor **out);
/* KL of two Weibulls or two Kumaraswamys, torch's TransformedDistribution
 * pair: zeros (their bases' KL, of unit parameters) where the transforms'
 * parameters are equal everywhere (read back), else
 * CLT_ERR_INVALID_ARGUMENT, as torch's NotImplementedError. */
clt_status clt__dist_kl_same_transforms(const char *fn, const clt_distribution *p,
                                        const clt_distribution *q, clt_tensor **out);
clt_status clt__dist_wishart_moment(const char *fn, const clt_distribution *d, int m,
                                    clt_tensor **out);
clt_status clt__dist_wishart_rsample(const char *fn, const clt_distribution *d,
                                     clt_generator *gen, int n, const int64_t *ext,
                                     clt_tensor **out);

/* wishart.c: LKJCholesky's log_prob and sample (no rsample), p[0] the
 * concentration (batch shape), total_count its dim. */
clt_status clt__dist_lkj_log_prob(const char *fn, const clt_distribution *d, const clt_tensor *v,
                                  clt_tensor **out);
clt_status clt__dist_lkj_sample(const char *fn, const clt_distribution *d, clt_generator *gen,
                                int n, const int64_t *ext, clt_tensor **out);

/* kl2.c: the pairs with Uniform, Pareto or Bernoulli on one side that kl.c
 * leaves (Uniform || Beta, Pareto || Gamma, Bernoulli || Poisson, ...),
 * into *out in the caller's scope; *found false where the pair is none of
 * them. */
clt_status clt__dist_kl_cross2(const char *fn, const clt_distribution *p,
                               const clt_distribution *q, clt_tensor **out, bool *found);

/* transform_dist.c: TransformedDistribution's draw (as
 * clt__dist2_sample's), log_prob (of a value whose shape is checked),
 * cdf and icdf, in the caller's scope. */
clt_status clt__dist_transformed_expand(const char *fn, const clt_distribution *d, int n,
                                        const int64_t *batch_shape, clt_distribution **out);
clt_status clt__dist_transformed_sample(const char *fn, const clt_distribution *d,
                                        clt_generator *gen, int n, const int64_t *ext,
                                        clt_tensor **out);
clt_status clt__dist_transformed_log_prob(const char *fn, const clt_distribution *d,
                                          const clt_tensor *v, clt_tensor **out);
clt_status clt__dist_transformed_cdf(const char *fn, const clt_distribution *d,
                                     const clt_tensor *v, clt_tensor **out);
clt_status clt__dist_transformed_icdf(const char *fn, const clt_distribution *d,
                                      const clt_tensor *v, clt_tensor **out);
#endif
