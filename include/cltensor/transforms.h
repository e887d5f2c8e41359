/* cltensor/transforms.h: torch.distributions.transforms of PyTorch 1.13
 * (Exp, Power, Sigmoid, Tanh, Abs, Affine, Softplus, Softmax,
 * StickBreaking, LowerCholesky, CorrCholesky, Compose, Independent,
 * Reshape, Cat, Stack, CumulativeDistribution and the inverse of each),
 * TransformedDistribution and LogisticNormal.
 *
 * A transform is an opaque handle.  It keeps its own references to its
 * parameter tensors, to the transforms it is made of and to a
 * distribution it uses, so the caller may release its own at once.  What
 * a transform computes (forward, inverse, log_abs_det_jacobian) is
 * composed of recorded ops, so gradients reach the inputs and the
 * parameters, as torch's.  Transforms are not cached (torch's
 * cache_size=0).  Inputs must be float32 or float64
 * (CLT_ERR_DTYPE_UNSUPPORTED otherwise).
 *
 * Every function that hands out a tensor hands out a new reference
 * (release with clt_tensor_free); a function that hands out a transform a
 * new one (release with clt_transform_free).  On failure *out is NULL and
 * the message names the call.  A transform may be used from several
 * threads at once when no graph is recorded (cltensor/common.h).
 */
#ifndef CLTENSOR_TRANSFORMS_H
#define CLTENSOR_TRANSFORMS_H

#include <cltensor/distributions.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_transform clt_transform;

/* ---- constructors ----------------------------------------------------------
 * Each makes a new transform (release with clt_transform_free); NULL
 * arguments are CLT_ERR_NULL_ARGUMENT. */

/* ExpTransform: y = exp(x); log|dy/dx| = x; sign +1. */
CLT_API clt_status clt_exp_transform(clt_transform **out);
/* PowerTransform(exponent): y = x^exponent on x > 0, inverse y^(1 /
 * exponent), log|dy/dx| = log|exponent y / x|; shapes broadcast with the
 * exponent's; sign +1 (torch 1.13's).  exponent floating. */
CLT_API clt_status clt_power_transform(const clt_tensor *exponent, clt_transform **out);
/* SigmoidTransform: y = sigmoid(x) clamped to [tiny, 1 - eps] of the
 * dtype; inverse logit of y clamped the same; log|dy/dx| = -softplus(-x)
 * - softplus(x); sign +1. */
CLT_API clt_status clt_sigmoid_transform(clt_transform **out);
/* TanhTransform: y = tanh(x), inverse atanh(y) (not clamped);
 * log|dy/dx| = 2 (log 2 - x - softplus(-2 x)); sign +1. */
CLT_API clt_status clt_tanh_transform(clt_transform **out);
/* AbsTransform: y = |x|; "inverse" y (not bijective); no
 * log_abs_det_jacobian and no sign (CLT_ERR_INVALID_ARGUMENT, torch's
 * NotImplementedError). */
CLT_API clt_status clt_abs_transform(clt_transform **out);
/* AffineTransform(loc, scale, event_dim): y = loc + scale x, inverse (y -
 * loc) / scale; log|dy/dx| = log|scale| expanded to x's shape, summed
 * over the last event_dim dims of that (torch's view(-1).sum(-1) of the
 * unexpanded log|scale|); sign: the tensor sign(scale).  loc and scale
 * floating tensors on one device; event_dim >= 0
 * (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_affine_transform(const clt_tensor *loc, const clt_tensor *scale,
                                        int event_dim, clt_transform **out);
/* SoftplusTransform: y = softplus(x) (linear above 20), inverse
 * log(-expm1(-y)) + y; log|dy/dx| = -softplus(-x); sign +1. */
CLT_API clt_status clt_softplus_transform(clt_transform **out);
/* SoftmaxTransform over the last dim (event dim 1 both sides): y =
 * exp(x - max) / sum; "inverse" log(y); not bijective: no
 * log_abs_det_jacobian and no sign. */
CLT_API clt_status clt_softmax_transform(clt_transform **out);
/* StickBreakingTransform: [..., K] to the simplex [..., K + 1] (event dim
 * 1 both sides), torch's offsets, clipped sigmoid and cumprod; inverse as
 * torch's (the stick remainder clamped below by tiny); log|det| torch's;
 * no sign. */
CLT_API clt_status clt_stick_breaking_transform(clt_transform **out);
/* LowerCholeskyTransform: [..., n, n] (event dim 2 both sides): tril(x,
 * -1) + diag_embed(exp(diagonal(x))), inverse with log; not bijective as
 * torch's: no log_abs_det_jacobian and no sign. */
CLT_API clt_status clt_lower_cholesky_transform(clt_transform **out);
/* CorrCholeskyTransform: [..., N] with N = D (D - 1) / 2 (event dim 1) to
 * the Cholesky factor [..., D, D] of a correlation matrix (event dim 2),
 * torch's signed stick-breaking of tanh(x) clamped to [-1 + eps, 1 -
 * eps] in row order; inverse and log|det| (of x and the flattened strict
 * lower triangle of y) torch's; N not of that form is
 * CLT_ERR_SHAPE_MISMATCH ("Input is not a flattend lower-diagonal
 * number"); no sign. */
CLT_API clt_status clt_corr_cholesky_transform(clt_transform **out);
/* ComposeTransform(parts): the n parts applied in order (n 0: the
 * identity); the domain and codomain event dims, log_abs_det_jacobian
 * (each part's summed over the dims it leaves as batch) and sign (the
 * product) as torch's.  parts may be NULL when n is 0; a NULL part is
 * CLT_ERR_NULL_ARGUMENT; n < 0 CLT_ERR_INVALID_ARGUMENT. */
CLT_API clt_status clt_compose_transform(clt_transform *const *parts, int n,
                                         clt_transform **out);
/* IndependentTransform(base, reinterpreted_batch_ndims >= 0): base's maps;
 * log_abs_det_jacobian summed over reinterpreted_batch_ndims more dims;
 * inputs of fewer dims than the domain's event dim are
 * CLT_ERR_SHAPE_MISMATCH ("Too few dimensions on input"). */
CLT_API clt_status clt_independent_transform(clt_transform *base, int reinterpreted_batch_ndims,
                                             clt_transform **out);
/* ReshapeTransform(in_shape, out_shape): the rightmost in_ndim dims
 * reshaped to out_shape (equal element counts: CLT_ERR_SHAPE_MISMATCH,
 * "in_shape, out_shape have different numbers of elements");
 * log_abs_det_jacobian zeros of the batch shape; no sign. */
CLT_API clt_status clt_reshape_transform(int in_ndim, const int64_t *in_shape, int out_ndim,
                                         const int64_t *out_shape, clt_transform **out);
/* CatTransform(parts, dim, lengths): part k applied to the slice of
 * length lengths[k] along dim (lengths NULL: 1 each), the results
 * concatenated; event dim the largest of the parts'; log_abs_det_jacobian
 * concatenated along dim or summed, as torch's.  An input whose size
 * along dim is not the sum of lengths, or a dim out of range, is
 * CLT_ERR_SHAPE_MISMATCH.  n >= 1. */
CLT_API clt_status clt_cat_transform(clt_transform *const *parts, int n, int dim,
                                     const int64_t *lengths, clt_transform **out);
/* StackTransform(parts, dim): part k applied to the slice k along dim
 * (size n), the results stacked; log_abs_det_jacobian stacked.  n >= 1. */
CLT_API clt_status clt_stack_transform(clt_transform *const *parts, int n, int dim,
                                       clt_transform **out);
/* CumulativeDistributionTransform(distribution): y = cdf(x), inverse
 * icdf(y), log|dy/dx| = log_prob(x) (clt_distribution_cdf and its
 * neighbours: their refusals pass on); sign +1; domain event dim the
 * distribution's event dims, codomain 0.  Holds a reference to
 * distribution. */
CLT_API clt_status clt_cumulative_distribution_transform(clt_distribution *distribution,
                                                         clt_transform **out);

/* Releases a transform (and its references).  NULL does nothing. */
CLT_API void clt_transform_free(clt_transform *t);

/* t.inv: the inverse transform (a new handle): forward is t's inverse,
 * log_abs_det_jacobian(x, y) is -t's at (y, x), the event dims and shapes
 * swapped, the sign t's.  The inverse of an inverse is the original;
 * Compose's is the Compose of its parts' inverses in reverse order. */
CLT_API clt_status clt_transform_inv(clt_transform *t, clt_transform **out);

/* torch's class name ("ExpTransform", ..., "_InverseTransform");
 * static storage; NULL gives NULL. */
CLT_API const char *clt_transform_name(const clt_transform *t);
/* domain.event_dim and codomain.event_dim; -1 for NULL. */
CLT_API int clt_transform_domain_event_dim(const clt_transform *t);
CLT_API int clt_transform_codomain_event_dim(const clt_transform *t);
/* 1 where torch's bijective is True, 0 where not, -1 for NULL. */
CLT_API int clt_transform_bijective(const clt_transform *t);

/* t.sign: where it is a number, *sign is +1 or -1 and *out NULL; where it
 * is a tensor (Affine's sign(scale), or a product with one), *sign is 0
 * and *out a new tensor.  Transforms without a sign (Abs, Softmax,
 * StickBreaking, LowerCholesky, CorrCholesky, Reshape, Cat, Stack, or a
 * Compose or inverse of one) are CLT_ERR_INVALID_ARGUMENT ("AbsTransform
 * does not implement sign"). */
CLT_API clt_status clt_transform_sign(const clt_transform *t, int *sign, clt_tensor **out);

/* t(x), t.inv(y) and t.log_abs_det_jacobian(x, y): new tensors. */
CLT_API clt_status clt_transform_forward(const clt_transform *t, const clt_tensor *x,
                                         clt_tensor **out);
CLT_API clt_status clt_transform_inverse(const clt_transform *t, const clt_tensor *y,
                                         clt_tensor **out);
CLT_API clt_status clt_transform_log_abs_det_jacobian(const clt_transform *t,
                                                      const clt_tensor *x, const clt_tensor *y,
                                                      clt_tensor **out);

/* t.forward_shape(shape) and t.inverse_shape(shape): ndim sizes in, the
 * result's dims into *out_ndim and its sizes into out_shape (room for
 * CLT_MAX_DIMS).  Shapes the transform refuses are CLT_ERR_SHAPE_MISMATCH
 * (torch's ValueError wording); on failure *out_ndim is 0. */
CLT_API clt_status clt_transform_forward_shape(const clt_transform *t, int ndim,
                                               const int64_t *shape, int *out_ndim,
                                               int64_t *out_shape);
CLT_API clt_status clt_transform_inverse_shape(const clt_transform *t, int ndim,
                                               const int64_t *shape, int *out_ndim,
                                               int64_t *out_shape);

/* ---- TransformedDistribution ---------------------------------------------- */

/* TransformedDistribution(base, transforms): the n transforms (n >= 0,
 * transforms may be NULL when n is 0) applied in order to draws of base.
 * Batch and event shapes as torch computes them (the Compose's forward
 * shape of base's batch + event shape, the event dims its codomain's plus
 * what base has beyond the domain's); base is wrapped in an Independent
 * where the transforms' domain has more event dims than base.  Where the
 * transforms widen base's shape by leading batch dims (an Affine's
 * parameters of more dims: torch expands base), base's draws take them as
 * more sample dims and its densities broadcast; any other widening (a
 * size 1 that grows, or reinterpreted dims among the new ones) is
 * CLT_ERR_INVALID_ARGUMENT; a base of fewer dims than the domain's event
 * dim CLT_ERR_SHAPE_MISMATCH ("base_distribution needs to have shape with
 * size at least 1, but got [].").  Holds references to base and the
 * transforms.  Through the clt_distribution functions: sample and rsample
 * (base's draws, then the transforms; rsample where base has it), log_prob
 * (torch's accumulation of -log|det| with _sum_rightmost, then base's;
 * validate_args checks the value's shape and, for the last transform's
 * codomain among real, positive, the unit interval, (-1, 1) and the
 * simplex, its support), cdf and icdf (base's through the inverses,
 * flipped where the transforms' sign is -1, as torch's _monotonize_cdf);
 * no entropy, moments or KL (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_transformed_dist(clt_distribution *base, clt_transform *const *transforms,
                                        int n, int validate_args, clt_distribution **out);

/* LogisticNormal(loc, scale): TransformedDistribution(Normal(loc, scale)
 * (a 0-dim one as [1]), StickBreakingTransform); support the simplex,
 * event shape [K + 1]; Normal's checks and errors. */
CLT_API clt_status clt_logistic_normal_dist(const clt_tensor *loc, const clt_tensor *scale,
                                            int validate_args, clt_distribution **out);

#ifdef __cplusplus
}
#endif

#endif
