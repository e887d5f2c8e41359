/* cltensor/distributions.h: probability distributions like
 * torch.distributions of PyTorch 1.13: Normal, Uniform, Bernoulli,
 * Categorical, OneHotCategorical, Exponential, Laplace,
 * MultivariateNormal, Independent, Gamma, Chi2, Beta, Dirichlet, StudentT,
 * FisherSnedecor, LogNormal, Gumbel, Cauchy, HalfNormal, HalfCauchy,
 * Pareto, Weibull, Kumaraswamy, RelaxedBernoulli, Poisson, Geometric,
 * NegativeBinomial, Binomial, Multinomial, ContinuousBernoulli, VonMises,
 * RelaxedOneHotCategorical, LowRankMultivariateNormal, MixtureSameFamily,
 * Wishart, LKJCholesky and OneHotCategoricalStraightThrough behind one
 * handle, with
 * sampling,
 * log-densities, entropies, moments, cdf/icdf and kl_divergence.
 *
 * Parameters.  A distribution keeps its own references to its parameter
 * tensors (float32 or float64; two parameters promote to one dtype), so the
 * caller may release its handles at once.  The parameters broadcast
 * together as torch's broadcast_all: their broadcast shape is the batch
 * shape (Categorical and OneHotCategorical: the shape without the last
 * dimension, the categories; MultivariateNormal: loc's and the matrix's
 * batch dimensions broadcast, and loc's last dimension is the event).  The
 * values computed from the parameters (log_prob, entropy, rsample, the
 * moments, kl_divergence) are recorded ops of the parameters, so gradients
 * flow back to the tensors the caller passed, as in torch; the graph
 * between them and the distribution is made when it is created, as torch's
 * constructors make it (expand, clamp, logsumexp).
 *
 * validate_args.  Non-zero checks, as torch's validate_args=True (its
 * default): the parameters against their constraints when the distribution
 * is made, and every value given to log_prob and cdf against the support
 * and the batch and event shapes.  Each check reads a flag back, so it
 * waits for the device.  A parameter that fails: CLT_ERR_INVALID_ARGUMENT,
 * "Expected parameter scale (Tensor of shape [3]) of distribution Normal to
 * satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid
 * values"; a value outside the support: CLT_ERR_INVALID_ARGUMENT,
 * "Expected value argument (Tensor of shape [3]) to be within the support
 * (GreaterThanEq(lower_bound=0.0)) of the distribution Exponential, but
 * found invalid values"; a value whose shape does not fit:
 * CLT_ERR_SHAPE_MISMATCH ("The right-most size of value must match
 * event_shape: [2] vs [3]." or "Value is not broadcastable with
 * batch_shape+event_shape: [4] vs [3]."), torch's ValueError wording.
 * Zero skips the checks; values outside the support then give what the
 * formulas give.
 *
 * Results.  Every function that hands out a tensor hands out a new
 * reference (release with clt_tensor_free) on the parameters' device;
 * they enqueue without waiting unless validate_args or the function says
 * so.  log_prob gives broadcast(value.shape without the event dims,
 * batch_shape); entropy, and every KL, the batch shape; mean, variance and
 * stddev batch_shape + event_shape.  Samples have shape sample_shape +
 * batch_shape + event_shape (at most CLT_MAX_DIMS dims), the parameters'
 * dtype (Categorical: int64 indices), and are drawn from gen (NULL: the
 * default generator, cltensor/random.h) with the same values on every
 * device for one generator state.
 *
 * Threads: a distribution may be read from several threads at once (its
 * functions change nothing in it) when its parameters do not require grad;
 * recording a graph from two threads at once on shared tensors is not
 * allowed (cltensor/common.h).
 */
#ifndef CLTENSOR_DISTRIBUTIONS_H
#define CLTENSOR_DISTRIBUTIONS_H

#include <cltensor/random.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_distribution clt_distribution;

/* ---- constructors --------------------------------------------------------
 * Each makes a new distribution: release with clt_distribution_free.  NULL
 * parameters are CLT_ERR_NULL_ARGUMENT (where two are alternatives, exactly
 * one must be given: CLT_ERR_INVALID_ARGUMENT otherwise, torch's "Either
 * `probs` or `logits` must be specified, but not both."); integer
 * parameters CLT_ERR_DTYPE_UNSUPPORTED; parameters on two devices
 * CLT_ERR_DEVICE_MISMATCH; shapes that do not broadcast
 * CLT_ERR_SHAPE_MISMATCH. */

/* torch.distributions.Normal(loc, scale): scale > 0 (GreaterThan(0)).
 * rsample: loc + eps scale, eps from clt_randn.  cdf and icdf. */
CLT_API clt_status clt_normal_dist(const clt_tensor *loc, const clt_tensor *scale,
                                   int validate_args, clt_distribution **out);

/* Uniform(low, high): low < high everywhere (torch's check, "Uniform is
 * not defined when low>= high"); support [low, high].  rsample:
 * low + u (high - low), u from clt_rand.  log_prob is -inf outside
 * [low, high) when validate_args is 0.  cdf (clamped to [0, 1]) and
 * icdf. */
CLT_API clt_status clt_uniform_dist(const clt_tensor *low, const clt_tensor *high,
                                    int validate_args, clt_distribution **out);

/* Bernoulli(probs=...) or Bernoulli(logits=...): one of the two, the other
 * NULL.  probs in [0, 1]; logits any real.  Given probs, the logits are
 * log(p) - log1p(-p) of p clamped to [eps, 1 - eps] (eps the dtype's
 * machine epsilon, torch's probs_to_logits); given logits, probs are their
 * sigmoid.  Support {0, 1}: values of any dtype, compared in the
 * parameters' dtype.  Samples (not rsample) are 0 or 1 in the parameters'
 * dtype (clt_bernoulli: waits for the probabilities). */
CLT_API clt_status clt_bernoulli_dist(const clt_tensor *probs, const clt_tensor *logits,
                                      int validate_args, clt_distribution **out);

/* Categorical(probs=...) or Categorical(logits=...) over the last
 * dimension (at least 1-D): probs non-negative, normalised to sum 1 along
 * it (torch's Simplex check runs on the normalised rows, so a row with a
 * negative or NaN entry, or of zeros, fails it), logits any real
 * (normalised by subtracting their logsumexp).
 * Support: the integers 0 .. K-1 (values of any dtype, integral values
 * only).  Samples are int64 (clt_multinomial with replacement: waits for
 * the probabilities); no rsample; mean and variance are NaN, as torch's. */
CLT_API clt_status clt_categorical_dist(const clt_tensor *probs, const clt_tensor *logits,
                                        int validate_args, clt_distribution **out);

/* OneHotCategorical(probs=...) or (logits=...): Categorical with event
 * shape [K]; values and samples are one-hot vectors in the parameters'
 * dtype (support: 0/1 entries summing to 1 along the last dimension);
 * log_prob takes the index of each value's largest entry. */
CLT_API clt_status clt_one_hot_categorical_dist(const clt_tensor *probs,
                                                const clt_tensor *logits, int validate_args,
                                                clt_distribution **out);

/* OneHotCategoricalStraightThrough(probs=...) or (logits=...): a
 * OneHotCategorical (its checks, densities, moments, mode,
 * enumerate_support and KL) named "OneHotCategoricalStraightThrough",
 * with rsample: a sample plus probs - probs.detach(), so the values are
 * the one-hot sample's and the gradient is that of probs (torch's
 * straight-through estimator). */
CLT_API clt_status clt_one_hot_categorical_straight_through_dist(const clt_tensor *probs,
                                                                 const clt_tensor *logits,
                                                                 int validate_args,
                                                                 clt_distribution **out);

/* Exponential(rate): rate > 0; support [0, inf).  rsample: e / rate with
 * e from clt_exponential_ (rate 1).  cdf and icdf. */
CLT_API clt_status clt_exponential_dist(const clt_tensor *rate, int validate_args,
                                        clt_distribution **out);

/* Laplace(loc, scale): scale > 0.  rsample by inversion of u uniform in
 * [eps - 1, 1) (torch's formula).  cdf and icdf. */
CLT_API clt_status clt_laplace_dist(const clt_tensor *loc, const clt_tensor *scale,
                                    int validate_args, clt_distribution **out);

/* MultivariateNormal(loc, covariance_matrix=...) or (loc, scale_tril=...):
 * loc [..., n] (at least 1-D), one of covariance_matrix [..., n, n]
 * (symmetric positive-definite: factored with clt_linalg_cholesky, whose
 * refusal is passed on under this call's name, or reported as the
 * PositiveDefinite constraint when validating) and scale_tril [..., n, n]
 * (lower triangular with a positive diagonal, LowerCholesky), the other
 * NULL; torch's precision_matrix form is clt_multivariate_normal_precision_dist.
 * Event shape [n].  rsample: loc + L eps.  log_prob through a solve with L
 * (clt_linalg_solve); no cdf. */
CLT_API clt_status clt_multivariate_normal_dist(const clt_tensor *loc,
                                                const clt_tensor *covariance_matrix,
                                                const clt_tensor *scale_tril, int validate_args,
                                                clt_distribution **out);

/* MultivariateNormal(loc, precision_matrix=...): precision_matrix [..., n,
 * n] symmetric positive-definite, as covariance_matrix above (its checks
 * and errors, named precision_matrix), turned into L by torch's
 * _precision_to_scale_tril: Lf = cholesky(flip(P, (-2, -1))), L the
 * solution of flip(Lf, (-2, -1))^T L = I (clt_linalg_solve_triangular),
 * recorded, so that every result is differentiable in P.  Then as the
 * other forms: the same methods, shapes and KL pairs (the
 * precision_matrix getter gives L^-T L^-1, P up to rounding). */
CLT_API clt_status clt_multivariate_normal_precision_dist(const clt_tensor *loc,
                                                          const clt_tensor *precision_matrix,
                                                          int validate_args,
                                                          clt_distribution **out);

/* Wishart(df, covariance_matrix=...) or (df, precision_matrix=...) or (df,
 * scale_tril=...): exactly one of the three [..., p, p] (the others NULL;
 * CLT_ERR_INVALID_ARGUMENT otherwise, torch's "Exactly one of
 * covariance_matrix or precision_matrix or scale_tril may be specified."),
 * factored as MultivariateNormal's (covariance: clt_linalg_cholesky;
 * precision: torch's _precision_to_scale_tril); df a floating tensor
 * whose shape broadcasts with the matrix's batch dims (the batch shape).
 * Event shape [p, p].  df must exceed p - 1 everywhere, validating or not
 * (it is read back; CLT_ERR_INVALID_ARGUMENT, torch's "Value of df
 * expected to be greater than ndim - 1 = 2."); validate_args checks df
 * (GreaterThan(lower_bound=p - 1)) and the matrix (LowerCholesky or
 * PositiveDefinite), and values against PositiveDefinite (symmetric, and
 * clt_linalg_cholesky_ex's info 0, as torch's).  log_prob, entropy, mean
 * df V, variance df (V^2 + diag(V) diag(V)^T), stddev its square root,
 * mode (df - p - 1) V (NaN where df <= p + 1), all torch's formulas over V
 * = L L^T; rsample by Bartlett's decomposition as torch's: (L A)(L A)^T
 * with A's diagonal sqrt(Chi2(df - i)) (clamped to eps) drawn first, then
 * standard normals below it in tril_indices order, from gen
 * (differentiable in L and, through the chi2 draws, in df).  torch's
 * retries of singular samples are not made.  KL with another Wishart (see
 * clt_kl_divergence).  No cdf or matrix getters (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_wishart_dist(const clt_tensor *df, const clt_tensor *covariance_matrix,
                                    const clt_tensor *precision_matrix,
                                    const clt_tensor *scale_tril, int validate_args,
                                    clt_distribution **out);

/* LKJCholesky(dim, concentration): the lower Cholesky factors of dim x dim
 * correlation matrices (dim >= 2: CLT_ERR_INVALID_ARGUMENT otherwise,
 * torch's "Expected dim to be an integer greater than or equal to 2.
 * Found dim=1."); concentration > 0, a floating tensor whose shape is the
 * batch shape; event shape [dim, dim]; support CorrCholesky() (lower
 * triangular, positive diagonal, rows of norm 1 within 10 eps dim, as
 * torch's check).  sample by torch's onion method: Beta(offset + 1/2,
 * concentration + (dim - 2) / 2 - offset / 2) draws (offset 0, 0, 1, ..,
 * dim - 2) first, then standard normals below the diagonal, each row
 * normalised and scaled by the square root of its beta draw, the diagonal
 * sqrt(1 - the row's squared norm) clamped below at the smallest normal
 * number.  log_prob torch's (differentiable in concentration and the
 * value).  No rsample, entropy, moments, mode, cdf or KL
 * (CLT_ERR_INVALID_ARGUMENT, as torch's NotImplementedError). */
CLT_API clt_status clt_lkj_cholesky_dist(int64_t dim, const clt_tensor *concentration,
                                         int validate_args, clt_distribution **out);

/* LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance
 * W W^T + diag(D) of cov_factor W [..., n, m] and cov_diag D [..., n]
 * (> 0), loc [..., n] (at least 1-D: CLT_ERR_INVALID_ARGUMENT, as W of
 * fewer than 2 dims); W's rows and D's size must be n
 * (CLT_ERR_SHAPE_MISMATCH, torch's "cov_factor must be a batch of matrices
 * with shape 3 x m", "cov_diag must be a batch of vectors with shape
 * [3]"), the three batch shapes broadcast (CLT_ERR_SHAPE_MISMATCH,
 * "Incompatible batch shapes: ...").  Event shape [n].  validate_args
 * checks loc (IndependentConstraint(Real(), 1)), cov_factor
 * (IndependentConstraint(Real(), 2)) and cov_diag
 * (IndependentConstraint(GreaterThan(lower_bound=0.0), 1)).  rsample:
 * loc + W eps_W + sqrt(D) eps_D, eps_W [..., m] then eps_D [..., n] from
 * clt_randn (torch's order).  log_prob and entropy through the capacitance
 * matrix C = I + W^T D^-1 W (its Cholesky factor, clt_linalg_cholesky):
 * the Woodbury identity and the matrix determinant lemma, as torch; mean
 * loc, variance sum(W^2, -1) + D; the matrices through
 * clt_distribution_covariance_matrix and its neighbours; no cdf.  KL with
 * itself and with MultivariateNormal on either side (equal event shapes:
 * CLT_ERR_SHAPE_MISMATCH otherwise). */
CLT_API clt_status clt_lowrank_multivariate_normal_dist(const clt_tensor *loc,
                                                        const clt_tensor *cov_factor,
                                                        const clt_tensor *cov_diag,
                                                        int validate_args,
                                                        clt_distribution **out);

/* Independent(base, reinterpreted_batch_ndims): the last
 * reinterpreted_batch_ndims batch dimensions of base become event
 * dimensions; log_prob and entropy are summed over them.  The new
 * distribution holds its own reference to base (the caller still releases
 * its own).  reinterpreted_batch_ndims from 0 to base's batch dims
 * (CLT_ERR_INVALID_ARGUMENT otherwise, torch's "Expected
 * reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual
 * 3 vs 2").  validate_args applies to the values given to this one (base
 * keeps its own setting).  No cdf or icdf (torch has none). */
CLT_API clt_status clt_independent_dist(clt_distribution *base, int reinterpreted_batch_ndims,
                                        int validate_args, clt_distribution **out);

/* ---- Gamma and the families built on it ----------------------------------
 * Their draws come from torch's _standard_gamma: Marsaglia and Tsang's
 * rejection in an OpenCL kernel driven by the library's counter-based
 * generator (the same values on every device for one generator state; the
 * generator advances by the element count of each gamma draw), results
 * clamped below to the dtype's smallest normal number.  rsample is
 * differentiable in the concentrations through torch's implicit gradient
 * (_standard_gamma_grad: d sample / d concentration, its grad_fn
 * StandardGammaBackward0), in rates, locs and scales through the
 * formulas. */

/* Gamma(concentration, rate): both > 0 (GreaterThan(lower_bound=0.0));
 * support [0, inf) (GreaterThanEq).  rsample: _standard_gamma(concentration)
 * / rate.  cdf gammainc(concentration, rate v) (clt_special_gammainc:
 * differentiable in v and rate, not in concentration), as torch 2.0's;
 * torch 1.13 has none. */
CLT_API clt_status clt_gamma_dist(const clt_tensor *concentration, const clt_tensor *rate,
                                  int validate_args, clt_distribution **out);

/* Chi2(df): Gamma(df / 2, 1/2); df > 0, named "df" in its errors. */
CLT_API clt_status clt_chi2_dist(const clt_tensor *df, int validate_args,
                                 clt_distribution **out);

/* Beta(concentration1, concentration0): both > 0; support [0, 1].
 * rsample: g1 / (g1 + g0) of two gamma draws (torch draws the Dirichlet of
 * [c1, c0], which is the same; its gradient is torch's _dirichlet_grad,
 * here the gradient through the two gamma draws: the same in expectation,
 * not per sample).  log_prob, entropy and the moments are torch's. */
CLT_API clt_status clt_beta_dist(const clt_tensor *concentration1,
                                 const clt_tensor *concentration0, int validate_args,
                                 clt_distribution **out);

/* Dirichlet(concentration [..., K], at least 1-D): every entry > 0
 * (IndependentConstraint(GreaterThan(lower_bound=0.0), 1)); event shape
 * [K]; support the simplex (Simplex()).  rsample: g / g.sum(-1) of gamma
 * draws (the gradient as Beta's). */
CLT_API clt_status clt_dirichlet_dist(const clt_tensor *concentration, int validate_args,
                                      clt_distribution **out);

/* StudentT(df, loc, scale): loc NULL means 0 and scale NULL means 1 (torch's
 * defaults, df's dtype); df > 0, scale > 0.  rsample: loc + scale X
 * rsqrt(Z / df), X standard normal, Z ~ Chi2(df).  mean NaN where df <= 1;
 * variance inf where 1 < df <= 2 and NaN where df <= 1, as torch's. */
CLT_API clt_status clt_student_t_dist(const clt_tensor *df, const clt_tensor *loc,
                                      const clt_tensor *scale, int validate_args,
                                      clt_distribution **out);

/* FisherSnedecor(df1, df2): both > 0; support (0, inf).  rsample: the ratio
 * of Gamma(df1/2, df1) and Gamma(df2/2, df2) draws, clamped below to the
 * smallest normal number.  mean NaN where df2 <= 2, variance NaN where
 * df2 <= 4; no entropy (torch has none: CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_fisher_snedecor_dist(const clt_tensor *df1, const clt_tensor *df2,
                                            int validate_args, clt_distribution **out);

/* ---- more continuous families ---------------------------------------------
 * torch 1.13's formulas (its TransformedDistributions' log_prob, cdf and
 * icdf in closed form). */

/* LogNormal(loc, scale): exp of Normal(loc, scale); scale > 0; support
 * (0, inf).  rsample exp(loc + eps scale); cdf and icdf. */
CLT_API clt_status clt_log_normal_dist(const clt_tensor *loc, const clt_tensor *scale,
                                       int validate_args, clt_distribution **out);

/* Gumbel(loc, scale): scale > 0.  rsample loc - scale log(-log(u)), u
 * uniform in [tiny, 1 - eps); cdf exp(-exp(-(v - loc) / scale)) and icdf. */
CLT_API clt_status clt_gumbel_dist(const clt_tensor *loc, const clt_tensor *scale,
                                   int validate_args, clt_distribution **out);

/* Cauchy(loc, scale): scale > 0.  rsample loc + scale eps with eps from
 * clt_cauchy_; mean NaN and variance inf everywhere; cdf and icdf. */
CLT_API clt_status clt_cauchy_dist(const clt_tensor *loc, const clt_tensor *scale,
                                   int validate_args, clt_distribution **out);

/* HalfNormal(scale) and HalfCauchy(scale): |X| of Normal(0, scale) and
 * Cauchy(0, scale); scale > 0; support [0, inf) (log_prob -inf below 0
 * when validate_args is 0).  HalfCauchy's mean and variance are inf.  cdf
 * 2 F(v) - 1 and icdf F^-1((v + 1) / 2). */
CLT_API clt_status clt_half_normal_dist(const clt_tensor *scale, int validate_args,
                                        clt_distribution **out);
CLT_API clt_status clt_half_cauchy_dist(const clt_tensor *scale, int validate_args,
                                        clt_distribution **out);

/* Pareto(scale, alpha): both > 0; support [scale, inf)
 * ("GreaterThanEq(lower_bound=scale)").  rsample scale exp(e / alpha), e
 * standard exponential; mean inf for alpha <= 1 and variance inf for
 * alpha <= 2 (torch's clamps); cdf and icdf. */
CLT_API clt_status clt_pareto_dist(const clt_tensor *scale, const clt_tensor *alpha,
                                   int validate_args, clt_distribution **out);

/* Weibull(scale, concentration): both > 0; support (0, inf).  rsample
 * scale e^(1 / concentration), e standard exponential; cdf and icdf. */
CLT_API clt_status clt_weibull_dist(const clt_tensor *scale, const clt_tensor *concentration,
                                    int validate_args, clt_distribution **out);

/* Kumaraswamy(concentration1, concentration0): both > 0; support [0, 1].
 * rsample (1 - u^(1/c0))^(1/c1), u uniform; cdf 1 - (1 - v^c1)^c0 and
 * icdf. */
CLT_API clt_status clt_kumaraswamy_dist(const clt_tensor *concentration1,
                                        const clt_tensor *concentration0, int validate_args,
                                        clt_distribution **out);

/* RelaxedBernoulli(temperature, probs=...) or (temperature, logits=...), one
 * of the two, as Bernoulli takes them; temperature a floating tensor (not
 * checked, as torch) whose shape broadcasts to the batch shape (the
 * parameters' shape; CLT_ERR_SHAPE_MISMATCH otherwise).  Support [0, 1].
 * rsample: sigmoid((logit(u) + logit(probs)) / temperature), u uniform,
 * u and probs clamped to [eps, 1 - eps], the result to [tiny, 1 - eps]
 * (torch's); log_prob through the logit (torch's TransformedDistribution
 * of LogitRelaxedBernoulli); no entropy, moments, cdf or icdf (torch has
 * none: CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_relaxed_bernoulli_dist(const clt_tensor *temperature,
                                              const clt_tensor *probs, const clt_tensor *logits,
                                              int validate_args, clt_distribution **out);

/* ---- more discrete families (sample, no rsample) --------------------------- */

/* Poisson(rate): rate >= 0 (GreaterThanEq(lower_bound=0.0)); support the
 * non-negative integers (IntegerGreaterThan(lower_bound=0)).  Samples from
 * clt_poisson (waits for the rates); no entropy (torch has none). */
CLT_API clt_status clt_poisson_dist(const clt_tensor *rate, int validate_args,
                                    clt_distribution **out);

/* NegativeBinomial(total_count, probs=...) or (total_count, logits=...), one
 * of the two: the number of successes before total_count failures;
 * total_count >= 0 ("GreaterThanEq(lower_bound=0)", any real), probs in
 * [0, 1) ("HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)"), the other
 * computed as Bernoulli's; support the non-negative integers.  Samples
 * clt_poisson of Gamma(total_count, exp(-logits)) draws (waits for them);
 * mean total_count exp(logits), variance mean / sigmoid(-logits); no
 * entropy (torch has none). */
CLT_API clt_status clt_negative_binomial_dist(const clt_tensor *total_count,
                                              const clt_tensor *probs, const clt_tensor *logits,
                                              int validate_args, clt_distribution **out);

/* Geometric(probs=...) or Geometric(logits=...), one of the two, as
 * Bernoulli takes them; probs also > 0 (torch's extra check: "Expected
 * parameter probs (Tensor of shape [2]) of distribution Geometric to be
 * positive but found invalid values").  The number of failures before the
 * first success: support the non-negative integers; samples floor(log(u) /
 * log1p(-probs)), u uniform in [tiny, 1). */
CLT_API clt_status clt_geometric_dist(const clt_tensor *probs, const clt_tensor *logits,
                                      int validate_args, clt_distribution **out);

/* ---- Binomial, Multinomial, ContinuousBernoulli ---------------------------- */

/* Binomial(total_count, probs=...) or (total_count, logits=...), one of the
 * two (the other computed as Bernoulli's): total_count a floating tensor of
 * non-negative integers ("IntegerGreaterThan(lower_bound=0)"), broadcast
 * with the other; probs in [0, 1].  Support the integers 0 .. total_count.
 * Samples (no rsample) from clt_binomial (waits for the parameters).
 * log_prob as torch's (through the logits); mean n p, variance n p (1 -
 * p); entropy only where every total_count is the same (it reads them
 * back; otherwise CLT_ERR_INVALID_ARGUMENT, torch's "Inhomogeneous total
 * count not supported by `entropy`."), by summing over the support. */
CLT_API clt_status clt_binomial_dist(const clt_tensor *total_count, const clt_tensor *probs,
                                     const clt_tensor *logits, int validate_args,
                                     clt_distribution **out);

/* Multinomial(total_count, probs=...) or (total_count, logits=...): an
 * integer total_count >= 0 (CLT_ERR_INVALID_ARGUMENT otherwise) and the
 * parameters taken as Categorical takes them (its checks, named
 * Categorical as torch's); event shape [K].  Support: values >= 0 whose
 * sum along the last dim is at most total_count (torch's check; log_prob
 * uses the values' own sum).  Samples (no rsample): counts of total_count
 * categorical draws per event, in the parameters' dtype (clt_multinomial:
 * waits for the probabilities).  mean n p, variance n p (1 - p), entropy
 * torch's (a sum over 1 .. total_count). */
CLT_API clt_status clt_multinomial_dist(int64_t total_count, const clt_tensor *probs,
                                        const clt_tensor *logits, int validate_args,
                                        clt_distribution **out);

/* ContinuousBernoulli(probs=...) or (logits=...), one of the two, as
 * Bernoulli takes them (probs checked in [0, 1] before they are clamped
 * to [eps, 1 - eps]; given logits, probs = sigmoid(logits) clamped).
 * Support [0, 1].  rsample: icdf(u), u from clt_rand.  log_prob,
 * entropy, mean, variance, cdf and icdf as torch's, with its Taylor
 * expansions for probs in (0.499, 0.501] (torch's default lims). */
CLT_API clt_status clt_continuous_bernoulli_dist(const clt_tensor *probs,
                                                 const clt_tensor *logits, int validate_args,
                                                 clt_distribution **out);

/* VonMises(loc, concentration): concentration > 0; support the reals
 * (angles).  Samples (no rsample, as torch 1.13) by Best and Fisher's
 * rejection as torch's _rejection_sample, computed in float64 from
 * clt_rand's uniforms (rounds until every element is accepted, each
 * reading a flag back; the rejection test and acos run on the device's
 * float64 math), wrapped to [-pi, pi) around loc.  log_prob k cos(v - loc)
 * - log(2 pi) - log I0(k) and the circular variance 1 - I1(k) / I0(k)
 * with torch's polynomial approximations of log I0 and log I1; mean loc;
 * no entropy, cdf or KL (torch has none). */
CLT_API clt_status clt_von_mises_dist(const clt_tensor *loc, const clt_tensor *concentration,
                                      int validate_args, clt_distribution **out);

/* RelaxedOneHotCategorical(temperature, probs=...) or (temperature,
 * logits=...): the parameters as Categorical takes them (its checks),
 * event shape [K]; temperature a floating tensor (not checked, as torch)
 * whose shape broadcasts to the batch shape (CLT_ERR_SHAPE_MISMATCH
 * otherwise): one temperature per batch element, where torch broadcasts
 * it against the events (the same for a single temperature).  Support the simplex.  rsample: softmax((logits + g) / t)
 * with g = -log(-log u), u uniform clamped to [eps, 1 - eps] (torch's
 * exp of ExpRelaxedCategorical's draw); log_prob ExpRelaxedCategorical's
 * at log(v) less sum log(v); no entropy, moments, cdf or KL (torch has
 * none: CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_relaxed_one_hot_categorical_dist(const clt_tensor *temperature,
                                                        const clt_tensor *probs,
                                                        const clt_tensor *logits,
                                                        int validate_args, clt_distribution **out);

/* MixtureSameFamily(mixture_distribution, component_distribution): a
 * Categorical over the last batch dimension (of size k, the Categorical's
 * number of categories: CLT_ERR_SHAPE_MISMATCH otherwise, torch's
 * "`mixture_distribution component` (3) does not equal
 * `component_distribution.batch_shape[-1]` (2)") of a component
 * distribution of any family; the Categorical's batch shape must broadcast
 * to the component's batch_shape[:-1] (CLT_ERR_SHAPE_MISMATCH, torch's
 * "`mixture_distribution.batch_shape` ([2]) is not compatible with
 * `component_distribution.batch_shape`([3])"; where torch accepts more at
 * construction its sample fails).  A mixture that is no Categorical is
 * CLT_ERR_INVALID_ARGUMENT.  Batch shape the component's without its last
 * dim, event shape the component's.  The new distribution holds its own
 * references to both (the caller still releases its own).  log_prob
 * logsumexp(component log_prob at the value with a dim of 1 before its
 * event dims + log_softmax(logits)) (validate_args: the value's shape, and
 * the component's support there; the component checks again with its own
 * setting); mean and variance (the law of total variance); stddev the
 * variance's square root; cdf where the component has one (the value not
 * checked, as torch's); sample draws the Categorical, then the components
 * (sample_shape + the component's batch + event shape, at most
 * CLT_MAX_DIMS dims), and picks; no rsample, entropy, icdf or KL (torch has
 * none: CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_mixture_same_family_dist(clt_distribution *mixture,
                                                clt_distribution *component, int validate_args,
                                                clt_distribution **out);

/* Releases a distribution (and its references to its parameters and base).
 * NULL does nothing. */
CLT_API void clt_distribution_free(clt_distribution *d);

/* ---- properties (no failure; NULL gives NULL, 0 or -1) -------------------- */

/* torch's class name: "Normal", "MultivariateNormal", ...  Static storage. */
CLT_API const char *clt_distribution_name(const clt_distribution *d);
/* batch_shape and event_shape: the number of dims, and the sizes, owned by
 * the distribution (valid while it lives). */
CLT_API int clt_distribution_batch_ndim(const clt_distribution *d);
CLT_API const int64_t *clt_distribution_batch_shape(const clt_distribution *d);
CLT_API int clt_distribution_event_ndim(const clt_distribution *d);
CLT_API const int64_t *clt_distribution_event_shape(const clt_distribution *d);
/* 1 where torch's has_rsample is True, 0 where not, -1 for NULL. */
CLT_API int clt_distribution_has_rsample(const clt_distribution *d);

/* ---- sampling ------------------------------------------------------------ */

/* dist.sample(sample_shape): sample_shape of ndim sizes (ndim 0: none;
 * shape may then be NULL), drawn with autograd off, so the result never
 * requires grad.  New tensor. */
CLT_API clt_status clt_distribution_sample(const clt_distribution *d, clt_generator *gen,
                                           int ndim, const int64_t *sample_shape,
                                           clt_tensor **out);

/* dist.rsample(sample_shape): the reparameterised sample, differentiable
 * with respect to the parameters.  A distribution without rsample
 * (Bernoulli, Categorical, OneHotCategorical but its StraightThrough form,
 * Poisson, Geometric,
 * NegativeBinomial, Binomial, Multinomial, VonMises, MixtureSameFamily,
 * LKJCholesky, Independent of one of them)
 * is CLT_ERR_INVALID_ARGUMENT ("Bernoulli does not implement rsample").
 * New tensor. */
CLT_API clt_status clt_distribution_rsample(const clt_distribution *d, clt_generator *gen,
                                            int ndim, const int64_t *sample_shape,
                                            clt_tensor **out);

/* ---- densities and moments ------------------------------------------------ */

/* dist.log_prob(value): value broadcasts with batch_shape + event_shape.
 * New tensor. */
CLT_API clt_status clt_distribution_log_prob(const clt_distribution *d, const clt_tensor *value,
                                             clt_tensor **out);

/* dist.cdf(value) and dist.icdf(value) (value in [0, 1]) for Normal,
 * Uniform, Exponential, Laplace, LogNormal, Gumbel, Cauchy, HalfNormal,
 * HalfCauchy, Pareto, Weibull, Kumaraswamy and ContinuousBernoulli, and
 * cdf for MixtureSameFamily of one of them (the value unchecked); the
 * others are
 * CLT_ERR_INVALID_ARGUMENT
 * ("Bernoulli does not implement cdf"), as torch's NotImplementedError.
 * cdf checks value as log_prob does; icdf checks nothing, as torch.  New
 * tensor. */
CLT_API clt_status clt_distribution_cdf(const clt_distribution *d, const clt_tensor *value,
                                        clt_tensor **out);
CLT_API clt_status clt_distribution_icdf(const clt_distribution *d, const clt_tensor *value,
                                         clt_tensor **out);

/* dist.entropy(), dist.mean, dist.variance and dist.stddev (the square root
 * of the variance, or the scale where torch gives it directly).  New
 * tensors. */
CLT_API clt_status clt_distribution_entropy(const clt_distribution *d, clt_tensor **out);
CLT_API clt_status clt_distribution_mean(const clt_distribution *d, clt_tensor **out);
CLT_API clt_status clt_distribution_variance(const clt_distribution *d, clt_tensor **out);
CLT_API clt_status clt_distribution_stddev(const clt_distribution *d, clt_tensor **out);

/* dist.covariance_matrix, dist.precision_matrix and dist.scale_tril of a
 * MultivariateNormal or LowRankMultivariateNormal, [batch..., n, n]
 * (MultivariateNormal: L L^T, L^-T L^-1 and L; LowRankMultivariateNormal:
 * W W^T + diag(D), diag(1 / D) - A^T A with A = C^-1 W^T D^-1 (the
 * Woodbury identity), and sqrt(D) cholesky(I + D^-1/2 W W^T D^-1/2), as
 * torch); any other family is CLT_ERR_INVALID_ARGUMENT ("Normal has no
 * covariance_matrix").  Recorded: differentiable in the parameters.  New
 * tensor. */
CLT_API clt_status clt_distribution_covariance_matrix(const clt_distribution *d, clt_tensor **out);
CLT_API clt_status clt_distribution_precision_matrix(const clt_distribution *d, clt_tensor **out);
CLT_API clt_status clt_distribution_scale_tril(const clt_distribution *d, clt_tensor **out);

/* torch.distributions.kl_divergence(p, q) for the pairs torch 1.13
 * registers among these families.  Each family with itself: Normal,
 * Uniform (inf where q's interval does not cover p's), Bernoulli and
 * Categorical (inf where q gives 0 to what p does not), OneHotCategorical,
 * Exponential, Laplace, MultivariateNormal (equal event shapes:
 * CLT_ERR_SHAPE_MISMATCH otherwise, torch's "KL-divergence between two
 * Multivariate Normals with different event shapes cannot be computed"),
 * and Independent pairs with one reinterpreted_batch_ndims (summed over
 * those dims).  Across families: Exponential || Normal, Laplace || Normal,
 * Normal || Laplace, Uniform || Normal, Uniform || Exponential (inf where
 * low < 0), and, inf everywhere (p's batch shape, no gradient, as torch's
 * full_like), Exponential || Uniform, Laplace || Exponential, Laplace ||
 * Uniform, Normal || Exponential, Normal || Uniform.  Among the later
 * families, each with itself: Gamma and Chi2 (a Gamma, also with each
 * other), Beta, Dirichlet, Poisson, Gumbel, Cauchy, HalfNormal, Pareto
 * (inf where p's scale is below q's), LogNormal (its bases') and Geometric;
 * Binomial (inf where p's total_count is above q's; one below q's is
 * CLT_ERR_INVALID_ARGUMENT, torch's NotImplementedError; reads the counts
 * back) and ContinuousBernoulli.  Across these families (Chi2 counting as
 * a Gamma): Exponential || Gamma, Exponential || Gumbel, Gamma ||
 * Exponential, Gamma || Normal, Gumbel || Normal, Normal || Gumbel, Beta ||
 * Normal, Beta || Gamma, Beta || Exponential, ContinuousBernoulli ||
 * Normal, ContinuousBernoulli || Exponential, Pareto || Exponential (inf
 * where alpha <= 1), and, inf everywhere, the pairs torch gives so
 * (Exponential, Gamma, Gumbel, Laplace, Normal, Pareto, Beta,
 * ContinuousBernoulli or Poisson against a family whose support misses
 * theirs); and Uniform || Beta (inf where p leaves [0, 1]), Uniform ||
 * ContinuousBernoulli (inf where p.high >= 1 or p.low <= 0, torch's test),
 * Uniform || Gamma (inf where p.low < 0), Uniform || Gumbel, Uniform ||
 * Pareto (inf where p.low < q.scale), Beta || Uniform (inf where q misses
 * [0, 1]), Beta || ContinuousBernoulli, ContinuousBernoulli || Uniform
 * (inf unless q.low < 0 and q.high > 1, torch's test), Gamma || Gumbel,
 * Pareto || Gamma (inf where alpha <= 1), Pareto || Normal (inf where
 * alpha <= 2), Bernoulli || Poisson, and HalfCauchy || HalfCauchy (its
 * bases', as torch's TransformedDistribution pair).  Weibull || Weibull
 * and Kumaraswamy || Kumaraswamy, torch's TransformedDistribution pair:
 * zeros of the broadcast batch shape (their bases' KL, of unit
 * parameters; no gradient) where the transforms' parameters are equal
 * everywhere (Weibull's scale and 1 / concentration, Kumaraswamy's 1 / c0
 * and 1 / c1, broadcast and read back), else CLT_ERR_INVALID_ARGUMENT,
 * torch's NotImplementedError.  Wishart || Wishart (equal event shapes,
 * else CLT_ERR_SHAPE_MISMATCH), torch's exponential-family pair (a
 * Bregman divergence through autograd there) in its closed form m
 * (log|Lq| - log|Lp|) + n (|Lq^-1 Lp|_F^2 - d) / 2 + mvlgamma(m / 2, d) -
 * mvlgamma(n / 2, d) + (n - m) / 2 mvdigamma(n / 2, d), with n, m the dfs
 * and Lp, Lq the scale_trils, differentiable in both (torch's detaches
 * p's natural parameters: only q's get gradients there).  (Deliberate
 * difference: torch 1.13 sums the df term over the whole batch of a
 * batched df, its _sum_rightmost over the event's two dims, so that only
 * its unbatched results are the KL; here each batch element gets its
 * own.)  Two clt_transformed_dist (LogisticNormal among them), torch's
 * TransformedDistribution pair: their bases' KL (of the batch shape torch
 * expands the bases to) where the event shapes and the transforms are
 * equal as torch's == finds them (the parameter-free transforms of one
 * kind; Power and Affine with parameters equal everywhere, read back;
 * Compose and inverses part by part; any other transform only with
 * itself, the same handle), else CLT_ERR_INVALID_ARGUMENT.  (Not offered:
 * such a distribution against LogNormal, HalfNormal, HalfCauchy, Weibull,
 * Kumaraswamy, Gumbel or Pareto, which are TransformedDistributions in
 * torch and whose transforms could equal a clt_transformed_dist's.)
 * LowRankMultivariateNormal with
 * itself and with MultivariateNormal either way.  The two batch shapes
 * broadcast (the masks of the infinite cases too, where torch's indexing
 * refuses a mask of another shape than the result's).  Any other pair is CLT_ERR_INVALID_ARGUMENT ("No KL(p
 * || q) is implemented for p type Normal and q type Laplace").  New
 * tensor. */
CLT_API clt_status clt_kl_divergence(const clt_distribution *p, const clt_distribution *q,
                                     clt_tensor **out);

/* ---- mode, perplexity, enumerate_support, expand -------------------------- */

/* dist.mode: torch 1.13's per family, batch_shape + event_shape, the
 * parameters' dtype (Categorical: int64 indices).  loc for Normal,
 * Laplace, Cauchy, Gumbel, StudentT, VonMises and the multivariate
 * normals; Pareto's scale; NaN for Uniform; 0 for Exponential,
 * HalfNormal, HalfCauchy and Geometric; exp(loc - scale^2) for LogNormal;
 * ((concentration - 1) / rate) clamped at 0 for Gamma and Chi2; Dirichlet's
 * (c - 1) clamped at 0 and normalised, the one-hot vector of the first
 * category where every concentration of an event is below 1 (torch's
 * argmax of a row of NaNs), and Beta's the first entry of that of [c1,
 * c0]; FisherSnedecor's (df1 - 2) / df1 df2 / (df2 + 2), NaN where df1
 * <= 2; torch's Kumaraswamy formula, NaN where a concentration is below
 * 1; Weibull's scale ((k - 1) / k)^(1 / k); floor(rate) for Poisson,
 * floor((n - 1) exp(logits)) clamped at 0 for NegativeBinomial,
 * floor((n + 1) p) clamped at n for Binomial; Bernoulli's probs >= 1/2,
 * NaN where probs == 1/2; the argmax (Categorical) or its one-hot vector
 * (OneHotCategorical) of probs; Wishart's (df - p - 1) V, NaN where df <=
 * p + 1; Independent its base's.  Recorded where
 * torch's is (differentiable in the parameters).  Multinomial,
 * ContinuousBernoulli, RelaxedBernoulli, RelaxedOneHotCategorical,
 * MixtureSameFamily and LKJCholesky are CLT_ERR_INVALID_ARGUMENT
 * ("Multinomial does not
 * implement mode"), torch's NotImplementedError.  New tensor. */
CLT_API clt_status clt_distribution_mode(const clt_distribution *d, clt_tensor **out);

/* dist.perplexity(): exp(entropy), batch shape, recorded; refused where
 * the entropy is (clt_distribution_entropy's errors).  New tensor. */
CLT_API clt_status clt_distribution_perplexity(const clt_distribution *d, clt_tensor **out);

/* 1 where torch's has_enumerate_support is True (Bernoulli, Categorical,
 * OneHotCategorical, Binomial, and Independent of one of them with
 * reinterpreted_batch_ndims 0), 0 where not, -1 for NULL. */
CLT_API int clt_distribution_has_enumerate_support(const clt_distribution *d);

/* dist.enumerate_support(expand): the support's values along a new first
 * dim of size k, [k, 1 ..., 1] + event_shape (batch dims of size 1), or
 * [k] + batch_shape + event_shape (an expanded view) with expand non-zero:
 * 0 and 1 for Bernoulli and 0 .. total_count for Binomial in the
 * parameters' dtype, 0 .. K-1 as int64 for Categorical, the K one-hot
 * vectors (the rows of eye(K)) for OneHotCategorical.  Binomial reads its
 * total_count back: counts that differ are CLT_ERR_INVALID_ARGUMENT
 * ("Inhomogeneous total count not supported by `enumerate_support`."), as
 * are an empty one; Independent with reinterpreted_batch_ndims > 0
 * ("Enumeration over cartesian product is not implemented") and the other
 * families ("Normal does not implement enumerate_support"), torch's
 * NotImplementedError.  Never requires grad.  New tensor. */
CLT_API clt_status clt_distribution_enumerate_support(const clt_distribution *d, int expand,
                                                      clt_tensor **out);

/* dist.expand(batch_shape): a new distribution of the same family whose
 * batch shape is batch_shape (ndim sizes; NULL with ndim 0), its
 * parameters d's expanded to it (recorded views, as torch's: gradients
 * flow to d's parameters; the multivariate normals' unbroadcast matrices
 * and the relaxed families' temperature kept as they are, as torch's);
 * Independent expands its base to batch_shape + its reinterpreted dims,
 * MixtureSameFamily its components to batch_shape + (k,) and its
 * Categorical to batch_shape.  validate_args is d's; nothing is checked
 * again.  batch_shape must be an expansion of d's batch shape (at least
 * as many dims; each of d's sizes equal to the new one or 1):
 * CLT_ERR_SHAPE_MISMATCH otherwise, as torch's RuntimeError; negative
 * sizes CLT_ERR_INVALID_ARGUMENT; more than CLT_MAX_DIMS dims with the
 * event and parameter dims CLT_ERR_TOO_MANY_DIMS.  The new distribution
 * holds its own references (release with clt_distribution_free; d stays
 * the caller's). */
CLT_API clt_status clt_distribution_expand(const clt_distribution *d, const int64_t *batch_shape,
                                           int ndim, clt_distribution **out);

#ifdef __cplusplus
}
#endif

#endif
