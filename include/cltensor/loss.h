/* cltensor/loss.h: fused, numerically stable losses with PyTorch's
 * reductions and gradients: cross_entropy, nll_loss, mse_loss, l1_loss and
 * binary_cross_entropy_with_logits.
 *
 * Each loss hands out a new tensor on its operands' device (release with
 * clt_tensor_free): 0-dimensional for CLT_REDUCTION_MEAN and
 * CLT_REDUCTION_SUM, one value per row (cross entropy, nll) or per element
 * (the others) for CLT_REDUCTION_NONE.  Calls enqueue their kernels and
 * return without waiting.  Operands live on one device.
 *
 * Dtypes, as PyTorch 1.13 promotes them.  mse_loss and l1_loss compute in
 * their operands' promoted dtype and give it: float32 with float64 gives
 * float64, an integer or bool target (or input) takes the other's
 * floating dtype; two integer operands are CLT_ERR_DTYPE_UNSUPPORTED.
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
 * gets its gradient in its own dtype.  torch 1.13's own mse_loss backward
 * refuses mixed dtypes ("Found dtype Double but expected Float"); here it
 * works as l1_loss's does there.
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
 * ("clt_cross_entropy: Target 7 is out of bounds ...").
 *
 * Autograd (autograd.h).  Each loss records one node whose backward is a
 * single fused kernel writing the whole input gradient.  mse, l1 and
 * binary_cross_entropy_with_logits also give a target that requires grad
 * its gradient, as does cross_entropy for probability targets
 * (-(1 - label_smoothing) w log_softmax(x) g).  Class weights and
 * pos_weight get no gradient.
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
    CLT_REDUCTION_NONE
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
 * do not match, CLT_ERR_INVALID_ARGUMENT for a reduction outside the enum
 * or label_smoothing outside [0, 1]. */
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

/* torch.nn.functional.binary_cross_entropy_with_logits: input logits and
 * target of one shape; pos_weight NULL, or with one element or as many as
 * input's last dimension (broadcast along it).  The loss has the target's
 * dtype (above). */
CLT_API clt_status clt_binary_cross_entropy_with_logits(const clt_tensor *input,
                                                        const clt_tensor *target,
                                                        const clt_tensor *pos_weight,
                                                        clt_reduction reduction,
                                                        clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
