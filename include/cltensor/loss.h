/* cltensor/loss.h: fused, numerically stable losses with PyTorch's
 * reductions and gradients: cross_entropy, nll_loss, mse_loss, l1_loss,
 * smooth_l1_loss, huber_loss, binary_cross_entropy,
 * binary_cross_entropy_with_logits and kl_div; then (below, composed of
 * recorded ops) the rest of torch.nn's losses, pairwise_distance and
 * cdist, and ctc_loss (its own kernels).
 *
 * Each loss hands out a new tensor on its operands' device (release with
 * clt_tensor_free): 0-dimensional for CLT_REDUCTION_MEAN and
 * CLT_REDUCTION_SUM, one value per row (cross entropy, nll) or per element
 * (the others) for CLT_REDUCTION_NONE.  Calls enqueue their kernels and
 * return without waiting.  Operands live on one device.  Gradients flow to
 * the input and the target; a weight (cross_entropy's and nll_loss's class
 * weight, binary_cross_entropy's weight, the logits form's pos_weight)
 * that requires grad is refused while grad mode is on
 * (CLT_ERR_INVALID_ARGUMENT, "not differentiable with respect to argument
 * 'weight'"), as PyTorch refuses it.
 *
 * Dtypes, as PyTorch 1.13 promotes them.  mse_loss, l1_loss and
 * smooth_l1_loss compute in their operands' promoted dtype and give it:
 * float32 with float64 gives float64, an integer or bool target (or input)
 * takes the other's floating dtype; two integer operands are
 * CLT_ERR_DTYPE_UNSUPPORTED.  huber_loss computes so too but gives the
 * input's dtype (float32 input, float64 target: a float32 loss), and an
 * integer input is CLT_ERR_DTYPE_UNSUPPORTED (torch's "result type Float
 * can't be cast to the desired output type Long").  binary_cross_entropy
 * wants input and target of one floating dtype (CLT_ERR_DTYPE_MISMATCH
 * otherwise, torch's "Found dtype Double but expected Float") and
 * converts its weight, of any dtype, to it.  kl_div promotes two floating
 * operands (an integer or bool one is CLT_ERR_DTYPE_UNSUPPORTED, torch's
 * "Integral inputs not supported") and computes all in that dtype, where
 * torch 1.13's composite kl_div computes the target's own term
 * (xlogy(target, target) or exp(target)) in the target's dtype: a float64
 * input with a float32 target differs from it in about the 8th digit.
 * binary_cross_entropy_with_logits takes a floating input and target
 * (an integer target is CLT_ERR_DTYPE_UNSUPPORTED, as torch's "result
 * type Float can't be cast to the desired output type Long") and a
 * pos_weight of any dtype but bool, computes in the three's promoted dtype
 * and, as torch 1.13, gives the target's dtype (float64 input with a
 * float32 target: a float32 loss).  cross_entropy with probabilities
 * promotes the logits, the target and the weight (float32 logits and
 * targets with a float64 weight: float64); with class indices (and
 * nll_loss) the weight must have the input's dtype, as in torch
 * (CLT_ERR_DTYPE_MISMATCH).  The promoted dtype must be float32 or float64
 * (CLT_ERR_DTYPE_UNSUPPORTED otherwise).  Each operand that requires grad
 * gets its gradient in its own dtype.  torch 1.13's own mse_loss and
 * huber_loss backward refuse mixed dtypes ("Found dtype Double but
 * expected Float"); here they work as l1_loss's does there.
 *
 * On any error the message names the loss and what did not match
 * ("Expected input batch_size (3) to match target batch_size (4)"), and
 * nothing is changed.
 *
 * Numerics.  cross_entropy computes each row's maximum, log-sum-exp and
 * target terms in one kernel (never softmax then log), so logits of 1e4 or
 * -1e4 give finite losses and gradients; binary_cross_entropy_with_logits
 * uses (1 - y) x + (1 + (pw - 1) y) (log1p(exp(-|x|)) + max(-x, 0)), and
 * without pos_weight (1 - y) x + log1p(exp(-|x|)) + max(-x, 0), so that
 * infinite operands give PyTorch's infinities rather than 0 * inf.  Means
 * and sums add in index order, without atomics, in chunks that depend only
 * on the number of values: the results are the same bits on every run and
 * every device.
 *
 * Out-of-range class indices (cross_entropy, nll_loss) are checked on the
 * device, as index.h describes: the row is skipped (it adds nothing, and
 * its gradient is 0) and the calling thread's next blocking
 * synchronisation on the device returns CLT_ERR_INDEX_OUT_OF_RANGE
 * ("clt_cross_entropy: Target 7 is out of bounds ...").  So are
 * binary_cross_entropy's probabilities: an input element outside [0, 1]
 * (or NaN) has a NaN loss and the next blocking synchronisation returns
 * CLT_ERR_INVALID_ARGUMENT ("clt_binary_cross_entropy: all elements of
 * input should be between 0 and 1 (element 3 of 8 is not) ...").
 *
 * Autograd (autograd.h).  Each loss records one node whose backward is a
 * single fused kernel writing the whole input gradient.  The elementwise
 * losses (all but cross_entropy and nll_loss) also give a target that
 * requires grad its gradient, as does cross_entropy for probability
 * targets (-(1 - label_smoothing) w log_softmax(x) g).  Class weights,
 * binary_cross_entropy's weight and pos_weight get no gradient.
 *
 * Thread-safety: as for tensors (common.h).
 */
#ifndef CLTENSOR_LOSS_H
#define CLTENSOR_LOSS_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How per-row or per-element losses become the result. */
typedef enum clt_reduction {
    CLT_REDUCTION_MEAN, /* the mean (cross_entropy, nll_loss: see below) */
    CLT_REDUCTION_SUM,
    CLT_REDUCTION_NONE,
    CLT_REDUCTION_BATCHMEAN /* clt_kl_div only: the sum divided by input's first dimension */
} clt_reduction;

/* Options of clt_cross_entropy and clt_nll_loss.  ignore_index: targets
 * equal to it add nothing and are not counted by the mean.
 * label_smoothing in [0, 1] (must be 0 for nll_loss).  weight: NULL or a
 * [C] tensor of the input's dtype and device, borrowed for the call (class
 * weights; the mean of class-index targets divides by the sum of the
 * weights of the non-ignored targets, as PyTorch).  With probability
 * targets the weight may be of another floating dtype (promoted). */
typedef struct clt_cross_entropy_opts {
    clt_reduction reduction;
    int64_t ignore_index;
    double label_smoothing;
    const clt_tensor *weight;
} clt_cross_entropy_opts;

#define CLT_CROSS_ENTROPY_DEFAULTS {CLT_REDUCTION_MEAN, -100, 0.0, NULL}

/* torch.nn.functional.cross_entropy.  logits: [N, C], or [C] for one
 * unbatched sample.  target: class indices [N] (or [] unbatched), int64
 * or, as torch 1.13 takes them, uint8 (labels read from a uint8 file), or
 * class probabilities of logits' shape and a floating dtype (promoted).  opts NULL means
 * CLT_CROSS_ENTROPY_DEFAULTS.  With class indices each row's loss is
 * (1 - s) w[t] (-log_softmax(x)[t]) + s / C sum_c w[c] (-log_softmax(x)[c]);
 * with probabilities p it is -sum_c w[c] ((1 - s) p[c] + s / C)
 * log_softmax(x)[c], and the mean divides by N (ignore_index does not
 * apply).  Errors: CLT_ERR_DTYPE_UNSUPPORTED for non-float logits,
 * CLT_ERR_DTYPE_MISMATCH for an integer target other than int64 and
 * uint8 (int32 too, as torch's "expected scalar type Long but found Int"), a
 * floating target of class indices' shape ([N] for [N, C] logits: labels
 * in the wrong dtype, as torch's "expected scalar type Long but found
 * Float"), or a weight of another dtype beside class indices,
 * CLT_ERR_SHAPE_MISMATCH
 * for batch sizes, class counts (weight, probabilities) or dimensions that
 * do not match, CLT_ERR_INVALID_ARGUMENT for a reduction other than MEAN,
 * SUM and NONE or label_smoothing outside [0, 1]. */
CLT_API clt_status clt_cross_entropy(const clt_tensor *logits, const clt_tensor *target,
                                     const clt_cross_entropy_opts *opts, clt_tensor **out);

/* torch.nn.functional.nll_loss: log_probs [N, C] or [C], target as
 * for clt_cross_entropy; row loss -w[t] log_probs[t].  opts as for
 * clt_cross_entropy (NULL: defaults); label_smoothing must be 0. */
CLT_API clt_status clt_nll_loss(const clt_tensor *log_probs, const clt_tensor *target,
                                const clt_cross_entropy_opts *opts, clt_tensor **out);

/* (input - target)^2 and |input - target|, reduced.  input and target have
 * the same shape (PyTorch would broadcast with a warning; here a
 * difference is CLT_ERR_SHAPE_MISMATCH); their dtypes promote (above).  The gradient of l1 is
 * sign(input - target), 0 where they are equal or either is NaN (PyTorch's
 * sgn). */
CLT_API clt_status clt_mse_loss(const clt_tensor *input, const clt_tensor *target,
                                clt_reduction reduction, clt_tensor **out);
CLT_API clt_status clt_l1_loss(const clt_tensor *input, const clt_tensor *target,
                               clt_reduction reduction, clt_tensor **out);

/* torch.nn.functional.smooth_l1_loss: with z = |input - target|,
 * 0.5 z^2 / beta where z < beta, else z - 0.5 beta (beta 1 is PyTorch's
 * default; beta 0 is l1_loss's value, and its gradient, as PyTorch's
 * smooth_l1_loss_backward, is -g for both operands where input equals
 * target).
 * torch.nn.functional.huber_loss: 0.5 z^2 where z < delta, else
 * delta (z - 0.5 delta) (delta 1 by default), which is delta times
 * smooth_l1 with beta = delta.  Shapes as for clt_mse_loss; dtypes above.
 * Errors: CLT_ERR_INVALID_ARGUMENT for a negative (or NaN) beta, a delta
 * that is not positive, or a reduction outside MEAN, SUM, NONE. */
CLT_API clt_status clt_smooth_l1_loss(const clt_tensor *input, const clt_tensor *target,
                                      clt_reduction reduction, double beta, clt_tensor **out);
CLT_API clt_status clt_huber_loss(const clt_tensor *input, const clt_tensor *target,
                                  clt_reduction reduction, double delta, clt_tensor **out);

/* torch.nn.functional.binary_cross_entropy on probabilities: input x in
 * [0, 1] (checked on the device, above) and target y of x's shape;
 * -w (y max(log x, -100) + (1 - y) max(log(1 - x), -100)), so that x = 0
 * or 1 gives a finite loss (100 for a certain wrong answer).  weight: NULL
 * or a tensor of any dtype whose shape broadcasts to x's (torch expands it
 * so), borrowed for the call, converted to x's dtype.  The gradient is, as
 * PyTorch's, w (x - y) / max((1 - x) x, eps) g for x, with eps the float
 * 1e-12 in both dtypes (0 at x == y == 0 or 1, about -+1e12 g at x = 0 or
 * 1 otherwise), and -w log(x / (1 - x)) g for a target that requires grad
 * (infinite at x = 0 or 1).
 * Errors: CLT_ERR_DTYPE_MISMATCH, CLT_ERR_DTYPE_UNSUPPORTED (above),
 * CLT_ERR_SHAPE_MISMATCH for a target of another shape or a weight that
 * does not broadcast. */
CLT_API clt_status clt_binary_cross_entropy(const clt_tensor *input, const clt_tensor *target,
                                            const clt_tensor *weight, clt_reduction reduction,
                                            clt_tensor **out);

/* torch.nn.functional.binary_cross_entropy_with_logits: input logits and
 * target of one shape; pos_weight NULL, or with one element or as many as
 * input's last dimension (broadcast along it).  The loss has the target's
 * dtype (above). */
CLT_API clt_status clt_binary_cross_entropy_with_logits(const clt_tensor *input,
                                                        const clt_tensor *target,
                                                        const clt_tensor *pos_weight,
                                                        clt_reduction reduction,
                                                        clt_tensor **out);

/* torch.nn.functional.kl_div(input, target, reduction, log_target): input
 * holds log-probabilities; each element is target (log(target) - input),
 * computed as PyTorch 1.13's xlogy(target, target) - target input (0
 * where target is 0, NaN where it is negative), or, with log_target
 * non-zero, exp(target) (target - input).  reduction may also be
 * CLT_REDUCTION_BATCHMEAN, the sum divided by input's first dimension (the
 * sum itself for a 0-d input), the KL divergence's definition; MEAN divides
 * by the number of elements, as PyTorch's 'mean' does.  Shapes as for
 * clt_mse_loss.  The target's gradient follows PyTorch's composite
 * backward: log(target) + 1 - input times g (NaN where target is 0),
 * or exp(target) (target - input + 1) g. */
CLT_API clt_status clt_kl_div(const clt_tensor *input, const clt_tensor *target,
                              clt_reduction reduction, int log_target, clt_tensor **out);

/* ---- the rest of torch.nn's losses, and distances --------------------------
 * These are composed of recorded ops as PyTorch 1.13 composes them (or as
 * its kernels compute them), so each records the nodes of its ops, not one
 * node; their values and gradients are torch's formulas.  Every operand but
 * a class index tensor may require grad and gets its gradient where
 * torch's composition gives it one (margin_ranking's, poisson_nll's and
 * gaussian_nll's targets too; hinge_embedding's and cosine_embedding's
 * targets only select, and get none).  Each hands out a new
 * tensor on the operands' device (release with clt_tensor_free): 0-d for
 * CLT_REDUCTION_MEAN and CLT_REDUCTION_SUM, the per-sample losses for
 * CLT_REDUCTION_NONE; the reduction must be MEAN, SUM or NONE
 * (CLT_ERR_INVALID_ARGUMENT).  Operands promote as PyTorch's ops promote
 * them and must promote to a floating dtype (CLT_ERR_DTYPE_UNSUPPORTED);
 * they broadcast where torch's ops broadcast them.  A NULL operand is
 * CLT_ERR_NULL_ARGUMENT; operands on two devices CLT_ERR_DEVICE_MISMATCH.
 * "Kink" below is where a clamp's argument is exactly 0: clamp_min passes
 * the gradient there, as torch's; relu (multi_margin, multilabel_margin)
 * does not, as torch's kernels' z > 0. */

/* F.margin_ranking_loss: max(0, -y (x1 - x2) + margin).  The three have
 * one number of dimensions (CLT_ERR_SHAPE_MISMATCH otherwise, torch's "All
 * input tensors should have same dimension") and broadcast. */
CLT_API clt_status clt_margin_ranking_loss(const clt_tensor *input1, const clt_tensor *input2,
                                           const clt_tensor *target, double margin,
                                           clt_reduction reduction, clt_tensor **out);

/* F.hinge_embedding_loss (margin 1 in torch): x where y != -1 (y == 1 in
 * use) plus max(0, margin - x) where y != 1; input and target broadcast. */
CLT_API clt_status clt_hinge_embedding_loss(const clt_tensor *input, const clt_tensor *target,
                                            double margin, clt_reduction reduction,
                                            clt_tensor **out);

/* F.soft_margin_loss: log1p(exp(-y x)), as torch computes it (so y x below
 * about -88 in float32 gives inf, as there).  A target that requires grad
 * is refused while grad mode is on (CLT_ERR_INVALID_ARGUMENT), as torch
 * 1.13 refuses it. */
CLT_API clt_status clt_soft_margin_loss(const clt_tensor *input, const clt_tensor *target,
                                        clt_reduction reduction, clt_tensor **out);

/* F.multilabel_soft_margin_loss: -(y logsigmoid(x) + (1 - y)
 * logsigmoid(-x)) times weight (NULL, or broadcasting to input: one per
 * class), averaged over the last (class) dimension; NONE gives input's
 * shape without it.  input at least 1-D; target of its shape
 * (CLT_ERR_SHAPE_MISMATCH), promoted with it.  Computed with
 * clt_binary_cross_entropy_with_logits' stable kernel, whose messages
 * may show. */
CLT_API clt_status clt_multilabel_soft_margin_loss(const clt_tensor *input,
                                                   const clt_tensor *target,
                                                   const clt_tensor *weight,
                                                   clt_reduction reduction, clt_tensor **out);

/* F.multilabel_margin_loss: input [N, C] or [C] (or 0-d), target int64 of
 * its shape holding each sample's class indices, ended by the first
 * negative one; each sample's loss is sum over its targets j and the
 * classes i that are not targets of max(0, 1 - (x[y_j] - x[i])), divided
 * by C; NONE gives [N], or 0-d for a vector input.  The target is read to
 * the host (the call waits for it).  Works in O(N C^2) device memory.
 * Errors: CLT_ERR_SHAPE_MISMATCH ("Expected non-empty vector or matrix
 * with optional 0-dim batch size", "inconsistent size"),
 * CLT_ERR_DTYPE_MISMATCH for a target that is not int64,
 * CLT_ERR_INDEX_OUT_OF_RANGE for a label >= C. */
CLT_API clt_status clt_multilabel_margin_loss(const clt_tensor *input, const clt_tensor *target,
                                              clt_reduction reduction, clt_tensor **out);

/* F.multi_margin_loss (p 1, margin 1 in torch): input [N, C] or [C] (or
 * 0-d), target int64 [N] (or one element); each sample's loss is sum over
 * i != y of max(0, margin - x[y] + x[i])^p w[y], divided by C.  weight:
 * NULL or C floating values, which may not require grad (as for
 * loss.h's other weights).  NONE gives [N], 0-d for a 0-d target.  The
 * target is read to the host (the call waits for it).  Errors:
 * CLT_ERR_INVALID_ARGUMENT for p other than 1 and 2, or a weight that
 * requires grad; CLT_ERR_SHAPE_MISMATCH ("inconsistent target size",
 * "inconsistent weight size"); CLT_ERR_DTYPE_MISMATCH for a target that
 * is not int64; CLT_ERR_INDEX_OUT_OF_RANGE for a target outside [0, C). */
CLT_API clt_status clt_multi_margin_loss(const clt_tensor *input, const clt_tensor *target,
                                         int p, double margin, const clt_tensor *weight,
                                         clt_reduction reduction, clt_tensor **out);

/* F.cosine_embedding_loss (margin 0 in torch): with cos = sum(x1 x2) /
 * sqrt((sum x1^2 + 1e-12)(sum x2^2 + 1e-12)) over the last dimension,
 * 1 - cos where y == 1, max(0, cos - margin) where y == -1, 0 elsewhere.
 * target 1-D [N] with inputs [N, D], or 0-d with inputs [D]
 * (CLT_ERR_SHAPE_MISMATCH otherwise, torch's wording). */
CLT_API clt_status clt_cosine_embedding_loss(const clt_tensor *input1, const clt_tensor *input2,
                                             const clt_tensor *target, double margin,
                                             clt_reduction reduction, clt_tensor **out);

/* F.pairwise_distance (p 2, eps 1e-6, keepdim 0 in torch): the p-norm of
 * x1 - x2 + eps over the last dimension of their broadcast (as
 * clt_vector_norm_dim, whose gradient is 0 where the norm is 0); keepdim
 * non-zero keeps it with size 1.  p must be >= 0
 * (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_pairwise_distance(const clt_tensor *x1, const clt_tensor *x2, double p,
                                         double eps, int keepdim, clt_tensor **out);

/* F.triplet_margin_loss (margin 1, p 2, eps 1e-6, swap 0 in torch):
 * max(0, margin + d(a, pos) - d(a, neg)) with d clt_pairwise_distance(p,
 * eps); with swap, d(a, neg) is replaced by the smaller of it and
 * d(pos, neg).  The three have one number of dimensions
 * (CLT_ERR_SHAPE_MISMATCH otherwise). */
CLT_API clt_status clt_triplet_margin_loss(const clt_tensor *anchor, const clt_tensor *positive,
                                           const clt_tensor *negative, double margin, double p,
                                           double eps, int swap, clt_reduction reduction,
                                           clt_tensor **out);

/* The distance of clt_triplet_margin_with_distance_loss: *out a new
 * tensor of d(x1, x2) (the loss releases it); user is the caller's
 * pointer, passed through.  A status other than CLT_OK fails the loss with
 * it. */
typedef clt_status (*clt_distance_fn)(const clt_tensor *x1, const clt_tensor *x2, void *user,
                                      clt_tensor **out);

/* F.triplet_margin_with_distance_loss (distance_function None, margin 1,
 * swap 0 in torch): max(0, margin + d(a, pos) - d(a, neg)) with d the
 * caller's distance_function (called with user; differentiable as far as
 * it records its ops) or, for NULL, clt_pairwise_distance(p 2, eps 1e-6);
 * with swap, d(a, neg) is replaced by the smaller of it and d(pos, neg).
 * As torch 1.13's functional form, neither the margin nor the inputs'
 * ranks are checked (they broadcast).  Errors: a distance function that
 * fails (its status) or succeeds without a result
 * (CLT_ERR_INVALID_ARGUMENT); a NULL, integer or bool input, inputs on
 * different devices, a reduction out of range.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_triplet_margin_with_distance_loss(const clt_tensor *anchor,
                                                         const clt_tensor *positive,
                                                         const clt_tensor *negative,
                                                         clt_distance_fn distance_function,
                                                         void *user, double margin, int swap,
                                                         clt_reduction reduction,
                                                         clt_tensor **out);

/* F.poisson_nll_loss (log_input 1, full 0, eps 1e-8 in torch): exp(x) - y x
 * with log_input, else x - y log(x + eps); full adds Stirling's
 * y log(y) - y + 0.5 log(2 pi y) where y > 1. */
CLT_API clt_status clt_poisson_nll_loss(const clt_tensor *input, const clt_tensor *target,
                                        int log_input, int full, double eps,
                                        clt_reduction reduction, clt_tensor **out);

/* F.gaussian_nll_loss (full 0, eps 1e-6 in torch): 0.5 (log(v) +
 * (x - y)^2 / v) (+ 0.5 log(2 pi) with full), v = max(var, eps), whose
 * gradient passes to var whole (torch clamps under no_grad).  var has
 * input's shape, or input's without the last dimension (one variance per
 * row, unsqueezed), or that with a last dimension of 1, as torch 1.13
 * (CLT_ERR_SHAPE_MISMATCH, "var is of incorrect size", otherwise); a
 * negative entry is CLT_ERR_INVALID_ARGUMENT ("var has negative
 * entry/entries"), for which the call reads var's check to the host (it
 * waits). */
CLT_API clt_status clt_gaussian_nll_loss(const clt_tensor *input, const clt_tensor *target,
                                         const clt_tensor *var, int full, double eps,
                                         clt_reduction reduction, clt_tensor **out);

/* torch.cdist(x1, x2, p) (p 2 in torch) with torch's default compute_mode:
 * x1 [..., P, M], x2 [..., R, M] (batch dimensions broadcast) give
 * [..., P, R], the p-norm distance between rows.  For p == 2 with P or R
 * above 25, sqrt(clamp_min(|a|^2 - 2 a.b + |b|^2, 1e-30)) through one
 * matmul, as torch's "use_mm_for_euclid_dist_if_necessary" (faster, less
 * exact for near points); otherwise the exact norm of the differences, in
 * O(P R M) memory.  Gradients as torch's cdist backward: 0 where a
 * distance is 0, and for p = inf each difference that reaches the
 * distance gets the whole gradient (ties are not split).  Errors: CLT_ERR_SHAPE_MISMATCH for fewer than 2
 * dimensions or column counts that differ, CLT_ERR_DTYPE_UNSUPPORTED for
 * integer operands, CLT_ERR_DTYPE_MISMATCH for two dtypes,
 * CLT_ERR_INVALID_ARGUMENT for p < 0 or NaN. */
CLT_API clt_status clt_cdist(const clt_tensor *x1, const clt_tensor *x2, double p,
                             clt_tensor **out);

/* F.ctc_loss (blank 0, MEAN, zero_infinity 0 in torch): the negative log
 * likelihood of each target sequence under the per-step class
 * log-probabilities, summed over its alignments with torch's
 * forward-backward (alpha, beta) recursions in log space (cl/loss.cl: a
 * work-group per sample, its states over the work-items, a barrier per
 * step, as torch's LossCTC.cu; the gradient one work-item per element;
 * the same bits on every device).  log_probs: [T, N, C] (or [T, C] unbatched),
 * float32 or float64, log_softmax's output; targets: class indices,
 * [N, S] padded (sample b's first target_lengths[b]; [1, S] unbatched) or
 * 1-D with the samples' targets concatenated, exactly the lengths' sum
 * ([S] unbatched); input_lengths and target_lengths: N values (one
 * unbatched) in any shape, each input length in [0, T].  As torch 1.13
 * converts them to int64: the lengths of any integer dtype (int64, int32,
 * int16, int8, uint8, mixed), the targets of any real dtype (bool, and
 * floating ones truncated toward zero).
 * A target may be empty (its loss is -sum_t log_probs[t, blank]).  An
 * input length of 0 gives 0 for an empty target and an infinite loss
 * otherwise (as later torch; torch 1.13 reads before its alphas there).  An
 * impossible alignment gives an infinite loss; zero_infinity non-zero
 * turns it, and its gradient, into 0.  MEAN divides each loss by its
 * target length (at least 1), then takes the mean over the batch, as
 * torch; NONE gives [N] (0-d unbatched).  The gradient for log_probs is
 * torch's ctc_loss_backward, exp(lp) - exp(log(alpha beta) + nll - lp)
 * over the states of each class, 0 past an input's length; the targets
 * and lengths are read to the host (the call waits for them).  Errors:
 * CLT_ERR_DTYPE_UNSUPPORTED (log_probs), CLT_ERR_DTYPE_MISMATCH
 * (complex targets, lengths that are not integers: "input_lengths must be
 * integral"), CLT_ERR_SHAPE_MISMATCH (shapes, padded rows other than N,
 * lengths past the targets given), CLT_ERR_INVALID_ARGUMENT (blank
 * outside [0, C), an input length outside [0, T], reduction),
 * CLT_ERR_INDEX_OUT_OF_RANGE (a target outside [0, C), or not finite;
 * torch's CPU reads past its tables there).  torch has no double
 * backward: differentiating a gradient made with create_graph fails
 * naming CtcLossBackward0 (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_ctc_loss(const clt_tensor *log_probs, const clt_tensor *targets,
                                const clt_tensor *input_lengths, const clt_tensor *target_lengths,
                                int64_t blank, clt_reduction reduction, int zero_infinity,
                                clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
