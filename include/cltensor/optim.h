/* cltensor/optim.h: optimizers, gradient clipping and learning-rate
 * schedules, like torch.optim.
 *
 * An optimizer holds a reference to each parameter it was given (leaf
 * tensors that require grad) and its own state (momentum, moments), made
 * with it on each parameter's device.  clt_optimizer_step updates
 * every parameter that has a gradient, in place, with one fused kernel per
 * up to 8 consecutive parameters of one device, dtype, group and update
 * count, as torch's foreach implementations (the same bits as one launch
 * per parameter, which CLTENSOR_OPTIM=per_param asks for; LBFGS steps its
 * own way) and PyTorch's formulas and defaults; after the first
 * step it allocates nothing.  It records nothing for autograd and waits for
 * nothing.
 *
 * Checkpoints (optimizer.state_dict(), load_state_dict(), and the same of
 * a schedule): clt_optimizer_save, clt_optimizer_load,
 * clt_lr_scheduler_save and clt_lr_scheduler_load in <cltensor/io.h>.
 */
#ifndef CLTENSOR_OPTIM_H
#define CLTENSOR_OPTIM_H

#include <cltensor/data.h>
#include <cltensor/nn.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_optimizer clt_optimizer;

/* torch.optim.SGD's settings; CLT_SGD_DEFAULTS are PyTorch's. */
typedef struct clt_sgd_opts {
    double lr, momentum, dampening, weight_decay;
    int nesterov; /* needs momentum > 0 and dampening 0 */
} clt_sgd_opts;
#define CLT_SGD_DEFAULTS {1e-3, 0.0, 0.0, 0.0, 0}

/* torch.optim.Adam's and AdamW's settings; CLT_ADAM_DEFAULTS are Adam's,
 * CLT_ADAMW_DEFAULTS AdamW's (weight decay 0.01). */
typedef struct clt_adam_opts {
    double lr, beta1, beta2, eps, weight_decay;
    int amsgrad;
} clt_adam_opts;
#define CLT_ADAM_DEFAULTS {1e-3, 0.9, 0.999, 1e-8, 0.0, 0}
#define CLT_ADAMW_DEFAULTS {1e-3, 0.9, 0.999, 1e-8, 1e-2, 0}

/* torch.optim.RMSprop's settings; CLT_RMSPROP_DEFAULTS are PyTorch's. */
typedef struct clt_rmsprop_opts {
    double lr, alpha, eps, weight_decay, momentum;
    int centered;
} clt_rmsprop_opts;
#define CLT_RMSPROP_DEFAULTS {1e-2, 0.99, 1e-8, 0.0, 0.0, 0}

/* torch.optim.SparseAdam's settings; CLT_SPARSE_ADAM_DEFAULTS are
 * PyTorch's (lr 1e-3, betas (0.9, 0.999), eps 1e-8). */
typedef struct clt_sparse_adam_opts {
    double lr, beta1, beta2, eps;
} clt_sparse_adam_opts;
#define CLT_SPARSE_ADAM_DEFAULTS {1e-3, 0.9, 0.999, 1e-8}

/* torch.optim.Adagrad's settings; CLT_ADAGRAD_DEFAULTS are PyTorch's. */
typedef struct clt_adagrad_opts {
    double lr, lr_decay, weight_decay, initial_accumulator_value, eps;
} clt_adagrad_opts;
#define CLT_ADAGRAD_DEFAULTS {1e-2, 0.0, 0.0, 0.0, 1e-10}

/* torch.optim.Adamax's, NAdam's and RAdam's settings; the DEFAULTS are
 * PyTorch 1.13's. */
typedef struct clt_adamax_opts {
    double lr, beta1, beta2, eps, weight_decay;
} clt_adamax_opts;
#define CLT_ADAMAX_DEFAULTS {2e-3, 0.9, 0.999, 1e-8, 0.0}
typedef struct clt_nadam_opts {
    double lr, beta1, beta2, eps, weight_decay, momentum_decay;
} clt_nadam_opts;
#define CLT_NADAM_DEFAULTS {2e-3, 0.9, 0.999, 1e-8, 0.0, 4e-3}
typedef struct clt_radam_opts {
    double lr, beta1, beta2, eps, weight_decay;
} clt_radam_opts;
#define CLT_RADAM_DEFAULTS {1e-3, 0.9, 0.999, 1e-8, 0.0}

/* torch.optim.Adadelta's settings; CLT_ADADELTA_DEFAULTS are PyTorch
 * 1.13's (lr 1, rho 0.9, eps 1e-6). */
typedef struct clt_adadelta_opts {
    double lr, rho, eps, weight_decay;
} clt_adadelta_opts;
#define CLT_ADADELTA_DEFAULTS {1.0, 0.9, 1e-6, 0.0}

/* torch.optim.Rprop's settings: lr, etas (etaminus, etaplus) and
 * step_sizes (min, max); CLT_RPROP_DEFAULTS are PyTorch 1.13's. */
typedef struct clt_rprop_opts {
    double lr, etaminus, etaplus, step_size_min, step_size_max;
} clt_rprop_opts;
#define CLT_RPROP_DEFAULTS {1e-2, 0.5, 1.2, 1e-6, 50.0}

/* torch.optim.ASGD's settings; CLT_ASGD_DEFAULTS are PyTorch 1.13's. */
typedef struct clt_asgd_opts {
    double lr, lambd, alpha, t0, weight_decay;
} clt_asgd_opts;
#define CLT_ASGD_DEFAULTS {1e-2, 1e-4, 0.75, 1e6, 0.0}

/* Optimizers over the n tensors params (each retained: the caller keeps
 * its own references).  opts NULL means the defaults.  Settings out of
 * range (a negative or NaN learning rate, betas outside [0, 1), ...), a
 * parameter that is not a floating leaf requiring grad, or none at all are
 * CLT_ERR_INVALID_ARGUMENT.  So is a parameter given twice, or two whose
 * elements overlap (aliases made with clt_detach), which a step would
 * update twice: the message names both positions ("parameter 2 is
 * parameter 0 given again"; PyTorch warns, then raises, on duplicates).  A
 * parameter may start inside its buffer (a detached slice).  New
 * optimizer: release with clt_optimizer_free. */
CLT_API clt_status clt_sgd(clt_tensor *const *params, size_t n, const clt_sgd_opts *opts,
                           clt_optimizer **out);
/* Adam: L2 weight decay added to the gradient. */
CLT_API clt_status clt_adam(clt_tensor *const *params, size_t n, const clt_adam_opts *opts,
                            clt_optimizer **out);
/* AdamW: decoupled weight decay (p *= 1 - lr * weight_decay). */
CLT_API clt_status clt_adamw(clt_tensor *const *params, size_t n, const clt_adam_opts *opts,
                             clt_optimizer **out);
/* RMSprop: square_avg = alpha square_avg + (1 - alpha) g^2 (g with L2
 * weight decay added); centered subtracts grad_avg^2, the running mean of
 * g squared; with momentum, buf = momentum buf + g / (sqrt(.) + eps) and
 * p -= lr buf, else p -= lr g / (sqrt(.) + eps).  alpha, eps, momentum,
 * weight_decay below 0 (or NaN) are refused, as torch refuses them.  The
 * state is square_avg, and momentum_buffer and grad_avg where momentum is
 * not 0 and with centered. */
CLT_API clt_status clt_rmsprop(clt_tensor *const *params, size_t n,
                               const clt_rmsprop_opts *opts, clt_optimizer **out);
/* Adagrad: sum += g^2 (sum starting at initial_accumulator_value), p -=
 * clr g / (sqrt(sum) + eps) with clr = lr / (1 + (t - 1) lr_decay), t the
 * parameter's own update count.  lr_decay, weight_decay,
 * initial_accumulator_value, eps below 0 (or NaN) are refused. */
CLT_API clt_status clt_adagrad(clt_tensor *const *params, size_t n,
                               const clt_adagrad_opts *opts, clt_optimizer **out);
/* Sparse gradients (clt_grad_is_sparse: Embedding or EmbeddingBag with
 * sparse set), as torch 1.13 takes them.  SGD without momentum adds lr
 * times each entry in turn, fused (p[r] = fma(v, -lr, p[r]): torch's CPU
 * add_ of a sparse tensor, its AVX2 kernel), so that a row looked up twice
 * is updated twice: torch's bits, no dense copy of the gradient.  SGD with
 * momentum (dampening, nesterov) and Adagrad update with the gradient's
 * dense form, which gives torch's values (rows without entries: unchanged
 * parameters, Adagrad sums and momentum decay as with a zero gradient)
 * within a few ulps, not its bits: SGD's momentum_buffer is dense here
 * (the parameter's size, as for a dense gradient), where torch's is
 * sparse, made by merging the entries of the buffer and of the new
 * gradient with a walk that assumes sorted rows (they are not: the lookups'
 * order), so that it is never coalesced and grows by about every step's
 * lookups (seen: 8 lookups a step into 50 rows, 84 entries after 12
 * steps), and its memory and each step's time grow without bound.
 * With weight_decay not 0 they refuse it (CLT_ERR_INVALID_ARGUMENT,
 * torch's "add(sparse, dense) is not supported" and "weight_decay option
 * is not compatible with sparse gradients"), and every other kind but
 * SparseAdam refuses it ("Adam does not support sparse gradients, please
 * consider SparseAdam instead").  Refusals come before any parameter
 * changes.
 *
 * SparseAdam (torch.optim.SparseAdam, maximize=False): for the parameters
 * with sparse gradients, Adam's moments and update on the rows the
 * gradient names only (coalesced: duplicates summed), lazily, as torch 1.13:
 * exp_avg[r] += (g - exp_avg[r]) (1 - beta1), exp_avg_sq[r] += (g^2 -
 * exp_avg_sq[r]) (1 - beta2), p[r] -= lr sqrt(1 - beta2^t) / (1 - beta1^t)
 * exp_avg[r] / (sqrt(exp_avg_sq[r]) + eps), t the parameter's own update
 * count (a gradient without entries counts a step and changes nothing).
 * A dense gradient is refused at clt_optimizer_step
 * (CLT_ERR_INVALID_ARGUMENT, "SparseAdam does not support dense
 * gradients, please consider Adam instead"), before any parameter
 * changes.  eps below 0, betas outside [0, 1), lr below 0 (or NaN) are
 * refused with torch's messages.  State: exp_avg, exp_avg_sq (files:
 * clt_optimizer_save; torch checkpoints refuse it).  New optimizer:
 * release with clt_optimizer_free. */
CLT_API clt_status clt_sparse_adam(clt_tensor *const *params, size_t n,
                                   const clt_sparse_adam_opts *opts, clt_optimizer **out);
/* Adamax, NAdam and RAdam (PyTorch 1.13's formulas), each with L2 weight
 * decay added to the gradient (g += weight_decay p) and t the parameter's
 * own update count.  eps and weight_decay below 0, betas outside [0, 1)
 * (or NaN) and, for NAdam, momentum_decay below 0 are refused, with
 * torch's messages.  New optimizer: release with clt_optimizer_free.
 *
 * Adamax: exp_avg = beta1 exp_avg + (1 - beta1) g, exp_inf = max(beta2
 * exp_inf, |g| + eps) (a NaN gradient makes it NaN, as torch.amax), p -=
 * lr / (1 - beta1^t) exp_avg / exp_inf.  State: exp_avg, exp_inf. */
CLT_API clt_status clt_adamax(clt_tensor *const *params, size_t n,
                              const clt_adamax_opts *opts, clt_optimizer **out);
/* NAdam: mu = beta1 (1 - 0.5 0.96^(t momentum_decay)), mu_next the same at
 * t + 1; mu_product *= mu, and mu_product_next = mu_product mu mu_next
 * (1.13's formula, mu counted twice; both in float32, as torch keeps
 * mu_product in a float32 tensor); exp_avg and exp_avg_sq as Adam's, denom
 * = sqrt(exp_avg_sq / (1 - beta2^t)) + eps, p -= lr (1 - mu) / (1 -
 * mu_product) g / denom, then p -= lr mu_next / (1 - mu_product_next)
 * exp_avg / denom.  State: exp_avg, exp_avg_sq, and mu_product (kept on the
 * host: a step reads nothing back). */
CLT_API clt_status clt_nadam(clt_tensor *const *params, size_t n, const clt_nadam_opts *opts,
                             clt_optimizer **out);
/* RAdam: exp_avg and exp_avg_sq as Adam's; rho_inf = 2 / (1 - beta2) - 1,
 * rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t).  While rho_t > 5 (from t
 * = 6 on with beta2 0.999), p -= exp_avg / (1 - beta1^t) lr sqrt(1 -
 * beta2^t) / (sqrt(exp_avg_sq) + eps) rect, rect = sqrt((rho_t - 4) (rho_t
 * - 2) rho_inf / ((rho_inf - 4) (rho_inf - 2) rho_t)); before, p -= lr
 * exp_avg / (1 - beta1^t) (SGD with momentum).  State: exp_avg,
 * exp_avg_sq. */
/* Adadelta (torch 1.13's rule, one fused kernel per parameter): g +=
 * weight_decay p; square_avg = rho square_avg + (1 - rho) g^2; delta =
 * sqrt(acc_delta + eps) / sqrt(square_avg + eps) g; acc_delta = rho
 * acc_delta + (1 - rho) delta^2; p -= lr delta.  opts NULL: the defaults.
 * lr, eps or weight_decay below 0 or rho outside [0, 1] is
 * CLT_ERR_INVALID_ARGUMENT with torch's message.  Its state, in files:
 * "state.<i>.square_avg" and "state.<i>.acc_delta".  As clt_sgd otherwise
 * (parameters, ownership). */
CLT_API clt_status clt_adadelta(clt_tensor *const *params, size_t n,
                                const clt_adadelta_opts *opts, clt_optimizer **out);
CLT_API clt_status clt_radam(clt_tensor *const *params, size_t n, const clt_radam_opts *opts,
                             clt_optimizer **out);
/* Rprop (torch 1.13's rule, one fused kernel per parameter): with s =
 * sign(g prev), step_size *= etaplus where s > 0, etaminus where s < 0 (and
 * g is taken as 0 there), 1 where s is 0, then clamped to [step_size_min,
 * step_size_max]; p -= sign(g) step_size; prev = g.  step_size starts at
 * the rate of the parameter's first update (torch fills it then; later
 * rates, a schedule's, change nothing).  No weight decay, as torch's.  A
 * NaN gradient element leaves its parameter element as it was (torch's
 * sign(NaN) is 0) and makes prev NaN there.  etas that are not 0 <
 * etaminus < 1 < etaplus is CLT_ERR_INVALID_ARGUMENT with torch's
 * message ("Invalid eta values: 1.5, 1.2"), as are a negative rate and NaN
 * step sizes (which torch takes).  Its state, in files:
 * "state.<i>.prev" and "state.<i>.step_size".  As clt_sgd otherwise
 * (parameters, ownership). */
CLT_API clt_status clt_rprop(clt_tensor *const *params, size_t n, const clt_rprop_opts *opts,
                             clt_optimizer **out);
/* ASGD (torch 1.13's rule, one fused kernel per parameter): g +=
 * weight_decay p; p *= 1 - lambd eta; p -= eta g; ax = p while mu is 1,
 * else ax += (p - ax) mu; then, t the parameter's update count, eta = lr /
 * (1 + lambd lr t)^alpha and mu = 1 / max(1, t - t0).  As torch 1.13,
 * eta and mu are float32 whatever the parameter's dtype (torch keeps them
 * in float32 tensors; here on the host: a step reads nothing back), and
 * eta starts at the rate of the parameter's first update.  A negative
 * rate or weight_decay is CLT_ERR_INVALID_ARGUMENT with torch's message,
 * as are NaN lambd, alpha or t0 (which torch takes).  Its state, in files:
 * "state.<i>.ax", and "state.<i>.eta" and "state.<i>.mu" (0-d float32, as
 * torch's state_dict holds them): the averaged parameters ax are read
 * from there (clt_optimizer_save), as torch's from optimizer.state.  As
 * clt_sgd otherwise (parameters, ownership). */
CLT_API clt_status clt_asgd(clt_tensor *const *params, size_t n, const clt_asgd_opts *opts,
                            clt_optimizer **out);

/* One update of every parameter that has a gradient (optimizer.step()),
 * in the order the parameters were given.  A parameter without one is
 * skipped and, as PyTorch's state['step'], keeps its own count of updates:
 * Adam's bias correction, Adagrad's lr_decay and the start of SGD's
 * momentum follow it.
 *
 * Failures.  Everything that can fail in the library comes first: the
 * state is moved to its parameters' devices where the model has moved
 * (clt_module_to) and converted to their dtypes where it was converted
 * (clt_module_to_dtype: the moments keep their values, so the run goes on
 * where PyTorch would keep the state's old dtype and mix the two), and
 * every kernel the step launches is built.  A parameter that is neither
 * float32 nor float64 by then (converted to float16) is
 * CLT_ERR_DTYPE_UNSUPPORTED, one whose gradient has another dtype or size
 * CLT_ERR_DTYPE_MISMATCH.  When one of those fails (out of device or host
 * memory, a kernel that does not build) no parameter, state or step count
 * has changed, and the step may be retried.  What remains is the driver refusing an enqueue
 * (clEnqueueNDRangeKernel or clSetKernelArg failing: CLT_ERR_OPENCL, say
 * CL_OUT_OF_RESOURCES) after earlier parameters' updates were enqueued.
 * Then the parameters with a gradient before the one the message names
 * ("the driver failed at parameter 3 of 8": the first of the launch that
 * failed) have been updated, with their
 * state (momentum, moments); that one and those after it have not (but
 * for a parameter of more than 2^31 work-items, enqueued in parts, whose
 * first parts may have been); and clt_optimizer_steps has not moved.  The
 * optimizer remembers where it stopped: the next clt_optimizer_step
 * finishes that step, updating that parameter and those after it (with
 * the gradients they hold then) and no earlier one, and counts it; so a
 * step retried after the failure gives what one step without it gives. */
CLT_API clt_status clt_optimizer_step(clt_optimizer *opt);

/* Clears every parameter's gradient: drops it (set_to_none non-zero, torch
 * 2.0's default) or zeroes it in place (0: torch 1.13's
 * zero_grad(set_to_none=False), its default).  The two differ at the next
 * step for a parameter that backward then leaves without a gradient: a
 * dropped one is skipped, as torch skips a None grad, while a zeroed one
 * still moves under momentum, Adam's moments or weight decay. */
CLT_API clt_status clt_optimizer_zero_grad(clt_optimizer *opt, int set_to_none);

/* The learning rate now of parameter group 0 (torch's
 * param_groups[0]['lr']; 0 for NULL), and setting it in every group, as
 * `for g in optimizer.param_groups: g['lr'] = lr` does (a negative, NaN
 * or infinite rate is CLT_ERR_INVALID_ARGUMENT, no group changed).
 * Schedules set each group's own rate: clt_optimizer_group_lr. */
CLT_API double clt_optimizer_lr(const clt_optimizer *opt);
CLT_API clt_status clt_optimizer_set_lr(clt_optimizer *opt, double lr);

/* The momentum now of group 0: SGD's and RMSprop's momentum, the betas[0]
 * of Adam, AdamW, Adamax, NAdam and RAdam (what OneCycleLR's momentum
 * cycling sets: clt_one_cycle_lr_momentum); 0 for Adagrad, Adadelta,
 * Rprop, ASGD and for NULL. */
CLT_API double clt_optimizer_momentum(const clt_optimizer *opt);

/* ---- parameter groups (torch's param_groups) ------------------------------ */

/* optimizer.add_param_group({'params': params, ...}): a new parameter
 * group over the n tensors params (each retained), with its own settings.
 * opts points to the options struct of the optimizer's kind, the one its
 * constructor took: a clt_sgd_opts for clt_sgd, a clt_adam_opts for
 * clt_adam and clt_adamw, a clt_rmsprop_opts for clt_rmsprop, and so on
 * (any other type is undefined behaviour, as a wrong cast).  opts NULL
 * gives the group the optimizer's defaults: the options it was made with
 * (not the rates schedules set since), as torch fills a group's missing
 * keys from `defaults`; there is no partial struct, so a group that
 * differs in one setting gives all of them (CLT_SGD_DEFAULTS and the like
 * are torch's defaults, not the optimizer's).  The group's state is made
 * now (zeros, Adagrad's sums initial_accumulator_value), and its
 * parameters are numbered after all those before them (torch's state_dict
 * numbering, which files keep: clt_optimizer_save).
 *
 * Refused with CLT_ERR_INVALID_ARGUMENT, the optimizer unchanged: settings
 * the constructor refuses (with its messages), no parameter, a parameter
 * that is not a floating leaf requiring grad (CLT_ERR_DTYPE_UNSUPPORTED
 * for an integer one, CLT_ERR_NOT_CONTIGUOUS), one given twice in the
 * group, and one that is in another group already or shares memory with
 * one ("some parameters appear in more than one parameter group", torch's
 * message), or while a step the driver stopped part-way waits to be
 * finished (clt_optimizer_step).  Out of memory also leaves it unchanged.
 *
 * Schedules made before the group was added do what torch 1.13's do:
 * they have no base_lrs entry for it.  StepLR, ExponentialLR, MultiStepLR,
 * LinearLR, ConstantLR, PolynomialLR and CosineAnnealingLR scale its rate
 * by their factors for each epoch as the other groups' (torch's get_lr
 * runs over every group; CosineAnnealingLR's restart step, which zips
 * base_lrs, leaves it); LambdaLR, MultiplicativeLR, CyclicLR,
 * CosineAnnealingWarmRestarts and a SequentialLR's restart at a milestone
 * leave its rate (and momentum) alone; OneCycleLR refuses its next step
 * (torch's KeyError: 'initial_lr'), and ReduceLROnPlateau the step that
 * would reduce the rates (torch's IndexError over min_lrs), nothing
 * changed.  Make the schedule again to give the group its own base rate;
 * clt_sequential_lr needs every group to have initial_lr. */
CLT_API clt_status clt_optimizer_add_param_group(clt_optimizer *opt, clt_tensor *const *params,
                                                 size_t n, const void *opts);
/* The number of parameter groups: 1 for an optimizer as made, one more for
 * each clt_optimizer_add_param_group; 0 for NULL. */
CLT_API size_t clt_optimizer_num_groups(const clt_optimizer *opt);
/* Group g's learning rate now (param_groups[g]['lr']); NaN for NULL or a
 * group out of range. */
CLT_API double clt_optimizer_group_lr(const clt_optimizer *opt, size_t group);
/* Sets group g's learning rate alone.  A group out of range or a rate that
 * is negative, NaN or infinite is CLT_ERR_INVALID_ARGUMENT, nothing
 * changed. */
CLT_API clt_status clt_optimizer_set_group_lr(clt_optimizer *opt, size_t group, double lr);
/* Group g's momentum now, as clt_optimizer_momentum's for group 0 (0 for
 * the kinds without); NaN for NULL or a group out of range. */
CLT_API double clt_optimizer_group_momentum(const clt_optimizer *opt, size_t group);

/* Steps taken so far (calls of clt_optimizer_step that succeeded). */
CLT_API int64_t clt_optimizer_steps(const clt_optimizer *opt);

/* Releases the optimizer, its state and its references.  NULL does
 * nothing. */
CLT_API void clt_optimizer_free(clt_optimizer *opt);

/* torch.nn.utils.clip_grad_norm_: scales the gradients of params in place
 * so that their joint norm (norm_type 2: Euclidean) is at most max_norm,
 * by max_norm / (norm + 1e-6) when that is below 1, all on the device (no
 * wait).  Any norm_type but NaN: as torch, the joint norm is the
 * norm_type-norm (clt_vector_norm) of the gradients' norm_type-norms: inf
 * the largest |g|, -inf the smallest, 0 (torch's count of non-zeros) the
 * number of gradients with a non-zero element.  Gradients are converted to
 * float64 for their norms where the device has it.  For norm_type 2 the
 * squares are summed in float64 where the device has it, so
 * float32 gradients beyond 1.8e19 give their true norm (PyTorch's float32
 * norm overflows to inf there and the gradients are scaled to 0).  The
 * coefficient is then made as torch makes it from its stacked norms:
 * that norm rounded to the gradients' promoted dtype (float32 for 16-bit
 * gradients), max_norm * reciprocal(norm + 1e-6) in that dtype, clamped
 * to 1; so float32 gradients are scaled to torch's bits wherever the two
 * norms round alike (norm_type inf always; 2 mostly), and within a few
 * ulps elsewhere, where torch's float32 sums round differently
 * (tests/conformance.py section clip_grad_norm_f32).  *total_norm, when not NULL, gets the norm before clipping as a
 * 0-d tensor on the first parameter's device (new tensor: release with
 * clt_tensor_free), or NULL when no parameter has a gradient (nothing to
 * clip).  Parameters without gradients are skipped; all must be
 * on one device.  A NaN norm_type is CLT_ERR_INVALID_ARGUMENT.  A sparse
 * gradient (clt_grad_is_sparse) counts with its coalesced values' norm
 * (torch.norm of a sparse tensor) and is left unscaled, as torch 1.13
 * leaves it (its g.detach().mul_(coef) scales a copy of a sparse tensor's
 * values); with norm_type inf it is CLT_ERR_INVALID_ARGUMENT, as torch's
 * abs().max() of it ("Could not run 'aten::max' ... 'SparseCPU'").  A
 * parameter with a
 * gradient given twice is CLT_ERR_INVALID_ARGUMENT, nothing scaled: PyTorch
 * counts its gradient twice in the norm and scales it twice.
 *
 * Failures.  Every gradient is clipped or none: the clipped values are all
 * made first (where out of memory or a refused launch changes nothing),
 * then each gradient's storage takes their buffer, which cannot fail; a
 * handle on a gradient from clt_grad sees the clipped values too.  Only a
 * gradient that is a part of a larger buffer or on a caller's buffer
 * (autograd makes neither) would be scaled in place, after the others; a
 * driver failing there leaves the gradients before it clipped, and the
 * message says so. */
CLT_API clt_status clt_clip_grad_norm(clt_tensor *const *params, size_t n, double max_norm,
                                      double norm_type, clt_tensor **total_norm);

/* torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type,
 * error_if_nonfinite, foreach): clt_clip_grad_norm with torch 1.13's two
 * flags.  error_if_nonfinite non-zero: a total norm that is NaN or
 * infinite is CLT_ERR_INVALID_ARGUMENT ("The total norm of order 2.0 for
 * gradients from `parameters` is non-finite, so it cannot be clipped..."),
 * no gradient changed and *total_norm NULL; the norm is read back for
 * that (a wait).  Without it a non-finite norm scales the gradients as
 * clt_clip_grad_norm does (torch's default).  foreach picks torch's
 * grouped kernels, which give the same values: any value is accepted and
 * changes nothing here.  Everything else as clt_clip_grad_norm. */
CLT_API clt_status clt_clip_grad_norm_ex(clt_tensor *const *params, size_t n, double max_norm,
                                         double norm_type, int error_if_nonfinite, int foreach,
                                         clt_tensor **total_norm);
/* torch.nn.utils.clip_grad_value_: clamps every element of the gradients
 * of params to [-clip_value, clip_value] in place, on the device (no
 * wait).  Parameters without gradients are skipped; NaN stays NaN and
 * +-inf becomes +-clip_value, as torch.clamp does; clip_value inf clips
 * nothing.  A negative or NaN clip_value is CLT_ERR_INVALID_ARGUMENT,
 * nothing changed (torch's clamp with min > max would set every gradient
 * to -|clip_value|).  A gradient given twice is clamped twice, which
 * changes nothing more.  A sparse gradient is CLT_ERR_INVALID_ARGUMENT,
 * nothing changed, as torch's ("Could not run 'aten::clamp_' ...
 * 'SparseCPU'").  Failures: as clt_clip_grad_norm's, every
 * gradient is clipped or none (the clamped values are all made first),
 * but for a gradient not alone in its buffer, clamped in place after the
 * others. */
CLT_API clt_status clt_clip_grad_value(clt_tensor *const *params, size_t n, double clip_value);

/* ---- learning-rate schedules (torch.optim.lr_scheduler) ------------------- */

/* The base rate.  As torch's schedules, the first schedule made on an
 * optimizer sets its initial_lr to the rate then (group.setdefault;
 * OneCycleLR sets its own, max_lr / div_factor, whatever was there), and
 * every schedule takes initial_lr as its base_lrs: a schedule made after
 * another does not take the rate the first one reduced as its base.  The
 * optimizer keeps initial_lr and its file holds it (clt_optimizer_save).
 *
 * Several schedules on one optimizer (torch's schedules made one after
 * the other, without ChainedScheduler).  While more than one made on an
 * optimizer is alive (not freed), StepLR, CosineAnnealingLR,
 * ExponentialLR, MultiStepLR and LinearLR take torch's chainable form, as
 * torch's step() does: each multiplies the optimizer's rate now by its
 * factor for the epoch (LinearLR's constructor by start_factor), so the
 * factors of all of them compose in the order they step, bit for bit
 * torch's rates; a schedule made after another starts from the rate that
 * one set.  OneCycleLR sets its rates outright and ReduceLROnPlateau
 * multiplies the rate now, in either case.  So does a schedule made where
 * the optimizer's rate is not initial_lr (made after clt_optimizer_load,
 * or after a rate set by hand): torch goes on from that rate.  Any other
 * schedule alone on its optimizer gives its closed form from initial_lr
 * (below), which is torch's rate (to a few units in the last place)
 * unless the rate is set by hand while it runs: torch's chainable form
 * goes on from the rate set, the closed form does not.  Once one of
 * several is freed, the others go on from the rate now, the last one
 * alone again in its closed form (but for one made as above).
 *
 * Parameter groups.  Every schedule acts on each parameter group of its
 * optimizer, as torch's over param_groups: "the rate" above is each
 * group's, initial_lr is set (and read) per group, and a schedule's
 * base_lrs holds one per group.  Where this API takes one rate or
 * momentum (OneCycleLR's max_lr and momenta, CyclicLR's base_lr, max_lr
 * and momenta, ReduceLROnPlateau's min_lr), every group gets it, as torch
 * does given a float.  "Made where the rate was not initial_lr" holds
 * when it holds for any group.  A group added after a schedule was made:
 * clt_optimizer_add_param_group. */
typedef struct clt_lr_scheduler clt_lr_scheduler;

/* StepLR: lr = base_lr * gamma^(epoch / step_size), base_lr the
 * optimizer's initial_lr (above).  New scheduler (it borrows opt): release
 * with clt_lr_scheduler_free. */
CLT_API clt_status clt_step_lr(clt_optimizer *opt, int64_t step_size, double gamma,
                               clt_lr_scheduler **out);
/* CosineAnnealingLR: lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch /
 * t_max)) / 2.  New scheduler (it borrows opt): release with
 * clt_lr_scheduler_free. */
CLT_API clt_status clt_cosine_lr(clt_optimizer *opt, int64_t t_max, double eta_min,
                                 clt_lr_scheduler **out);
/* ExponentialLR: lr = base_lr * gamma^epoch (gamma finite, >= 0).  New
 * scheduler (it borrows opt): release with clt_lr_scheduler_free.  (No
 * last_epoch argument: a run resumes with clt_lr_scheduler_load.) */
CLT_API clt_status clt_exponential_lr(clt_optimizer *opt, double gamma,
                                      clt_lr_scheduler **out);
/* MultiStepLR: lr = base_lr * gamma^k, k the number of the n milestones
 * (copied; in any order, one given twice counting twice, as torch's
 * Counter) at or below the epoch.  A negative milestone, or milestones
 * NULL with n > 0, is CLT_ERR_INVALID_ARGUMENT (torch would apply a
 * negative one in its closed form only).  New scheduler (it borrows opt):
 * release with clt_lr_scheduler_free. */
CLT_API clt_status clt_multistep_lr(clt_optimizer *opt, const int64_t *milestones, size_t n,
                                    double gamma, clt_lr_scheduler **out);
/* LinearLR: lr = base_lr * (start_factor + (end_factor - start_factor) *
 * min(epoch, total_iters) / total_iters); torch's defaults are 1.0 / 3,
 * 1.0 and 5.  As torch's constructor, it sets the optimizer's rate to
 * base_lr * start_factor at once.  start_factor outside (0, 1], end_factor
 * outside [0, 1] (torch's checks) or total_iters below 1 is
 * CLT_ERR_INVALID_ARGUMENT.  New scheduler (it borrows opt): release with
 * clt_lr_scheduler_free.
 *
 * Every schedule alone on its optimizer gives its closed form, bit for
 * bit torch's _get_closed_form_lr; torch's step() multiplies the previous rate instead
 * (its chainable form), which drifts from it in the last bits: over 100
 * epochs, up to 4 units in the last place for ExponentialLR(0.9), 3 for a
 * MultiStepLR of 33 milestones, 9 for LinearLR(0.1, 0.9, 60). */
CLT_API clt_status clt_linear_lr(clt_optimizer *opt, double start_factor, double end_factor,
                                 int64_t total_iters, clt_lr_scheduler **out);
/* OneCycleLR (torch's defaults: pct_start 0.3, anneal_strategy "cos",
 * div_factor 25, final_div_factor 1e4, three_phase 0): from initial_lr =
 * max_lr / div_factor up to max_lr over the first pct_start * total_steps
 * steps, then down to min_lr = initial_lr / final_div_factor at step
 * total_steps - 1 (three_phase: up, back down to initial_lr, then to
 * min_lr), annealed by cosine or linearly ("cos", "linear"; NULL is
 * "cos"), each rate torch's get_lr bit for bit.  It sets the optimizer's
 * rate at once (step 0) and ignores the rate the optimizer had; it sets
 * the optimizer's initial_lr, max_lr and min_lr, as torch's param_groups
 * get them.  Step
 * total_steps, one past the last phase, is allowed as in torch (the
 * annealing goes on past min_lr: linearly below 0, where the rate is 0
 * here and negative in torch); stepping further is refused, as torch
 * refuses it, the schedule unchanged.
 *
 * No momentum cycling: this is torch's OneCycleLR(..., cycle_momentum=
 * False); clt_one_cycle_lr_momentum below is torch's default, which
 * cycles it.  pct_start outside [0, 1], total_steps below 1,
 * max_lr not a finite rate >= 0, div_factor or final_div_factor not finite
 * and > 0, an unknown strategy, or phases torch would divide by zero in at
 * step 0 are CLT_ERR_INVALID_ARGUMENT.  New scheduler (it borrows opt):
 * release with clt_lr_scheduler_free. */
CLT_API clt_status clt_one_cycle_lr(clt_optimizer *opt, double max_lr, int64_t total_steps,
                                    double pct_start, const char *anneal_strategy,
                                    double div_factor, double final_div_factor,
                                    int three_phase, clt_lr_scheduler **out);
/* OneCycleLR with all of torch's arguments: clt_one_cycle_lr's, then
 * cycle_momentum, base_momentum and max_momentum (torch's defaults: 1,
 * 0.85, 0.95).  With cycle_momentum (cycle_momentum 0 is clt_one_cycle_lr)
 * the optimizer's momentum is cycled inversely to the rate, from
 * max_momentum down to base_momentum while the rate rises and back up
 * while it falls (three_phase: then staying at max_momentum), annealed as
 * the rate is, each value torch's bit for bit: SGD's and RMSprop's
 * momentum, the betas[0] of Adam, AdamW, Adamax, NAdam and RAdam
 * (torch's use_beta1); Adagrad,
 * which has none, is refused with torch's message ("optimizer must
 * support momentum with `cycle_momentum` option enabled").  As torch's
 * constructor, it puts max_momentum and base_momentum in the optimizer
 * (its file holds them, under those keys: clt_optimizer_save, which a
 * resumed schedule reads them from, as torch reads its param_groups) and
 * sets the momentum to its value at step 0.  An SGD or RMSprop made
 * without momentum gains it: the momentum buffers are made now (zeros),
 * and SGD's takes a parameter's gradient at its first use, as torch's
 * SGD starts a buffer (buf = grad), whatever updates the parameter had
 * before.  base_momentum and max_momentum must be momenta the optimizer
 * takes (finite and >= 0; below 1 for a beta1): otherwise
 * CLT_ERR_INVALID_ARGUMENT.  A failure (out of memory for the buffers)
 * leaves the optimizer as it was.  New scheduler (it borrows opt):
 * release with clt_lr_scheduler_free. */
CLT_API clt_status clt_one_cycle_lr_momentum(clt_optimizer *opt, double max_lr,
                                             int64_t total_steps, double pct_start,
                                             const char *anneal_strategy, double div_factor,
                                             double final_div_factor, int three_phase,
                                             int cycle_momentum, double base_momentum,
                                             double max_momentum, clt_lr_scheduler **out);
/* ReduceLROnPlateau (torch's defaults: mode "min", factor 0.1, patience
 * 10, threshold 1e-4, threshold_mode "rel", cooldown 0, min_lr 0, eps
 * 1e-8; NULL modes are the defaults): stepped with
 * clt_lr_scheduler_step_metric, it multiplies the optimizer's rate by
 * factor (not below min_lr, and only by more than eps) when the metric
 * has not improved on the best by threshold (relative or absolute) for
 * more than patience steps, then waits cooldown steps.  It leaves the rate
 * alone when made.  factor outside [0, 1), a negative patience or
 * cooldown, min_lr or eps not a finite number >= 0, a non-finite threshold
 * or an unknown mode is CLT_ERR_INVALID_ARGUMENT.  New scheduler (it
 * borrows opt): release with clt_lr_scheduler_free. */
CLT_API clt_status clt_reduce_lr_on_plateau(clt_optimizer *opt, const char *mode,
                                            double factor, int64_t patience, double threshold,
                                            const char *threshold_mode, int64_t cooldown,
                                            double min_lr, double eps, clt_lr_scheduler **out);
/* Advances the schedule by one epoch and sets the optimizer's rate.
 * ReduceLROnPlateau is refused (CLT_ERR_INVALID_ARGUMENT): it steps on a
 * metric.  A failure leaves the schedule and the rate as they were. */
CLT_API clt_status clt_lr_scheduler_step(clt_lr_scheduler *s);
/* ReduceLROnPlateau's step on the metric of the epoch that ended
 * (torch's scheduler.step(val_loss)); a NaN metric counts as no
 * improvement, as in torch.  Any other kind of schedule is refused
 * (CLT_ERR_INVALID_ARGUMENT): it takes no metric. */
CLT_API clt_status clt_lr_scheduler_step_metric(clt_lr_scheduler *s, double metric);
/* The epoch the schedule is at: the clt_lr_scheduler_step (or
 * clt_lr_scheduler_step_metric) calls that succeeded so far,
 * or the epoch a checkpoint restored (torch's scheduler.last_epoch); 0 for
 * NULL.  Checkpoints: clt_lr_scheduler_save, clt_lr_scheduler_load in
 * <cltensor/io.h>. */
CLT_API int64_t clt_lr_scheduler_epoch(const clt_lr_scheduler *s);
/* Releases the schedule (not the optimizer it drives), and the schedules
 * a SequentialLR or ChainedScheduler took.  Either may be freed first; a
 * schedule whose optimizer was freed refuses to step
 * (CLT_ERR_INVALID_ARGUMENT).  NULL, or a schedule a SequentialLR or
 * ChainedScheduler took (its container frees it), does nothing. */
CLT_API void clt_lr_scheduler_free(clt_lr_scheduler *s);

/* ---- warm-up schedules and schedules of schedules -------------------------- */

/* LambdaLR's and MultiplicativeLR's lr_lambda: the factor for `epoch`
 * (torch's last_epoch, from 0), given the `user` pointer the schedule was
 * made with.  A NaN or an infinity is the callback's failure: the
 * constructor or step that called it is refused (CLT_ERR_INVALID_ARGUMENT,
 * the message naming the schedule and the epoch), the schedule and the
 * rate as they were.  A negative factor gives a negative rate, refused
 * the same way (torch would set it). */
typedef double (*clt_lr_lambda)(void *user, int64_t epoch);

/* LambdaLR: lr = base_lr * lr_lambda(user, epoch), base_lr the optimizer's
 * initial_lr (above); the constructor sets the rate at epoch 0, calling
 * lr_lambda(user, 0).  The schedule's file (clt_lr_scheduler_save) holds
 * no callback, as torch's state_dict holds none for a function or a
 * lambda (lr_lambdas [None]): a resumed run makes the schedule with its
 * callback again and loads the file into it.  lr_lambda NULL is
 * CLT_ERR_NULL_ARGUMENT.  New scheduler (it borrows opt and user, which
 * must outlive it): release with clt_lr_scheduler_free. */
CLT_API clt_status clt_lambda_lr(clt_optimizer *opt, clt_lr_lambda lr_lambda, void *user,
                                 clt_lr_scheduler **out);
/* MultiplicativeLR: each step from epoch 1 on, lr = lr * lr_lambda(user,
 * epoch), lr the optimizer's rate now; made, it leaves the rate.  As
 * clt_lambda_lr otherwise (callback, file, ownership). */
CLT_API clt_status clt_multiplicative_lr(clt_optimizer *opt, clt_lr_lambda lr_lambda,
                                         void *user, clt_lr_scheduler **out);
/* CyclicLR (torch.optim.lr_scheduler.CyclicLR, torch 1.13's rates bit
 * for bit; its defaults: step_size_up 2000, step_size_down None, mode
 * "triangular", gamma 1, scale_mode "cycle", cycle_momentum on,
 * base_momentum 0.8, max_momentum 0.9): the rate goes from base_lr to
 * max_lr in step_size_up steps and back in step_size_down (negative: None,
 * step_size_up), the swing scaled by mode's function: "triangular" 1,
 * "triangular2" 1 / 2^(cycle - 1), "exp_range" gamma^iteration (NULL:
 * "triangular").  With scale_fn not NULL mode is ignored and the swing is
 * scaled by scale_fn(user, x), x the cycle (from 1; scale_mode "cycle" or
 * NULL) or the step (scale_mode "iterations"); NaN or an infinity from it
 * is its failure, which refuses the step (or the constructor) and changes
 * nothing.  The schedule sets the rate to base_lr when made (and the
 * optimizer's initial_lr, when no schedule set it before).  With
 * cycle_momentum the optimizer's momentum goes the other way, from
 * max_momentum to base_momentum; only SGD and RMSprop have a momentum
 * setting (others are refused, as torch refuses them), and one made
 * without momentum gains its buffers.  base_lr or max_lr not a finite
 * number >= 0, step_size_up below 1, a non-finite gamma, momenta not
 * finite and >= 0, or an unknown mode or scale_mode is
 * CLT_ERR_INVALID_ARGUMENT.  Its file (clt_lr_scheduler_save) holds
 * torch's state_dict keys; a scale_fn is not saved (torch's
 * _scale_fn_custom None), which loading keeps.  New scheduler (it borrows
 * opt; user must outlive it): release with clt_lr_scheduler_free. */
CLT_API clt_status clt_cyclic_lr(clt_optimizer *opt, double base_lr, double max_lr,
                                 int64_t step_size_up, int64_t step_size_down, const char *mode,
                                 double gamma, clt_lr_lambda scale_fn, void *user,
                                 const char *scale_mode, int cycle_momentum,
                                 double base_momentum, double max_momentum,
                                 clt_lr_scheduler **out);
/* ConstantLR (torch's defaults: factor 1.0 / 3, total_iters 5): lr =
 * base_lr * factor before epoch total_iters, base_lr from there; made, it
 * sets base_lr * factor.  factor outside (0, 1] (torch takes 0 and divides
 * by it at total_iters) or total_iters below 1 is
 * CLT_ERR_INVALID_ARGUMENT.  New scheduler (it borrows opt): release with
 * clt_lr_scheduler_free. */
CLT_API clt_status clt_constant_lr(clt_optimizer *opt, double factor, int64_t total_iters,
                                   clt_lr_scheduler **out);
/* PolynomialLR (torch's defaults: total_iters 5, power 1.0): lr = base_lr *
 * (1 - min(epoch, total_iters) / total_iters)^power.  total_iters below 1
 * or a power that is not finite and >= 0 is CLT_ERR_INVALID_ARGUMENT.  New
 * scheduler (it borrows opt): release with clt_lr_scheduler_free.
 *
 * ConstantLR and PolynomialLR are schedules as StepLR is: alone on their
 * optimizer, their closed form; with others, or in a SequentialLR or
 * ChainedScheduler, torch's chainable form, bit for bit (above). */
CLT_API clt_status clt_polynomial_lr(clt_optimizer *opt, int64_t total_iters, double power,
                                     clt_lr_scheduler **out);
/* CosineAnnealingWarmRestarts (torch's defaults: T_mult 1, eta_min 0): lr =
 * eta_min + (base_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2, T_cur the
 * epochs since the last restart, T_i the length of this cycle: T_0, then
 * T_0 T_mult, T_0 T_mult^2, ...; each rate torch's bit for bit.  It sets
 * the rate outright (no chainable form, as torch).  t_0 below 1 or t_mult
 * below 1 (torch's messages), or eta_min not finite, is
 * CLT_ERR_INVALID_ARGUMENT.  clt_lr_scheduler_step_to steps it to a
 * fractional epoch.  New scheduler (it borrows opt): release with
 * clt_lr_scheduler_free. */
CLT_API clt_status clt_cosine_warm_restarts(clt_optimizer *opt, int64_t t_0, int64_t t_mult,
                                            double eta_min, clt_lr_scheduler **out);
/* torch's CosineAnnealingWarmRestarts.step(epoch): the schedule at `epoch`
 * (fractional: a step per batch as step(epoch + i / iters)), T_cur and
 * T_i found from epoch as torch finds them, its epoch (last_epoch)
 * floor(epoch); a later clt_lr_scheduler_step goes on from there, T_cur +
 * 1.  A negative or non-finite epoch, or any other kind of schedule (or
 * one a container took), is CLT_ERR_INVALID_ARGUMENT, nothing changed. */
CLT_API clt_status clt_lr_scheduler_step_to(clt_lr_scheduler *s, double epoch);
/* SequentialLR: the n schedules (made on opt, in order, one after the
 * other, as torch's are) take turns: schedulers[0] until epoch
 * milestones[0], schedulers[1] from there (starting again at its epoch 0,
 * torch's step(0): its closed form at 0 where it has one) until
 * milestones[1], and so on; n - 1 milestones (NULL for n 1), >= 1 and in
 * increasing order.  As torch's constructor, it sets the rate back to
 * the optimizer's initial_lr, undoes each schedule's first step (their
 * epochs go back by one: -1 for all but the first) and takes the first
 * one's initial step again.  Its schedules step in torch's chainable form
 * (bit for bit torch's rates).  clt_lr_scheduler_epoch is its own
 * last_epoch.
 *
 * Ownership: on success it takes the schedules (the array is copied, not
 * kept): it steps and frees them; clt_lr_scheduler_step on one of them is
 * refused, clt_lr_scheduler_free on one does nothing.  On failure nothing
 * is taken or changed.  A schedule on another optimizer or whose optimizer
 * was freed, one taken already or given twice, ReduceLROnPlateau, a
 * SequentialLR or ChainedScheduler (no nesting), n 0, or milestones out
 * of order is CLT_ERR_INVALID_ARGUMENT.  Its file (clt_lr_scheduler_save)
 * holds torch's state_dict: _milestones, last_epoch, _last_lr, and each
 * schedule's state_dict, which torch nests in a list under _schedulers,
 * under the keys "_schedulers.I.KEY"; clt_lr_scheduler_load takes one
 * into a SequentialLR of the same kinds of schedule (their settings, as
 * the milestones, from the file).  New scheduler (it borrows opt): release
 * with clt_lr_scheduler_free. */
CLT_API clt_status clt_sequential_lr(clt_optimizer *opt, clt_lr_scheduler *const *schedulers,
                                     size_t n, const int64_t *milestones,
                                     clt_lr_scheduler **out);
/* ChainedScheduler: each clt_lr_scheduler_step steps the n schedules (all
 * on one optimizer) in order, all or none (a failure puts back those
 * stepped before it, and the rate).  Made, it changes nothing.  Its epoch
 * is the steps it took (torch's has none: a file loaded sets it to its
 * first schedule's).  Ownership, refusals and files as
 * clt_sequential_lr's (no milestones; the file holds _last_lr and
 * _schedulers).  New scheduler:
 * release with clt_lr_scheduler_free. */
CLT_API clt_status clt_chained_scheduler(clt_lr_scheduler *const *schedulers, size_t n,
                                         clt_lr_scheduler **out);

/* ---- L-BFGS and steps that take a closure --------------------------------- */

/* torch.optim.LBFGS's settings; CLT_LBFGS_DEFAULTS are torch 1.13's: lr 1,
 * max_iter 20, max_eval max_iter * 5 / 4 (a negative max_eval means torch's
 * None: that default), tolerance_grad 1e-7, tolerance_change 1e-9,
 * history_size 100, line_search_fn NULL (torch's None: fixed steps of lr)
 * or "strong_wolfe" (torch's _strong_wolfe: cubic interpolation, c1 1e-4,
 * c2 0.9, at most 25 evaluations).  The string is compared, not kept. */
typedef struct clt_lbfgs_opts {
    double lr;
    int64_t max_iter, max_eval;
    double tolerance_grad, tolerance_change;
    int64_t history_size;
    const char *line_search_fn;
} clt_lbfgs_opts;
#define CLT_LBFGS_DEFAULTS {1.0, 20, -1, 1e-7, 1e-9, 100, NULL}

/* L-BFGS (torch 1.13's LBFGS, its branches and tests in its order): every
 * parameter taken as one flat vector (torch's _gather_flat_grad: a
 * parameter without a gradient counts as zeros), the two-loop recursion
 * over the last history_size pairs (y, s) whose y.s > 1e-10, H_diag = y.s /
 * y.y, the first step of a run t = min(1, 1 / sum|g|) lr, then lr; with
 * "strong_wolfe", t from torch's line search.  It steps only through
 * clt_optimizer_step_closure (clt_optimizer_step refuses it, as torch's
 * step() without a closure fails).  All parameters must share one device
 * and one dtype (float32 or float64; torch holds them on one device).
 * Each iteration waits for a few scalars read back from the device, as
 * torch's Python reads them: the directional derivative g.d, y.s and y.y,
 * max|g|, max|d t| (and sum|g| at a run's first iteration, max|d| and g.d
 * at each trial point of the line search), besides the loss the closure
 * gives as a double; the two-loop's coefficients stay on the device.  Those scalars, t, H_diag and 1 / y.s
 * are kept in double on the host where torch keeps 0-d tensors of the
 * parameters' dtype, so float32 runs agree with torch's to float32
 * rounding, float64 ones to the order of the sums.  The history takes up to
 * 2 history_size + 2 vectors as large as all parameters together.
 *
 * lr negative, NaN or infinite, max_iter or history_size below 1, a NaN
 * tolerance, or a line_search_fn other than NULL and "strong_wolfe" ("only
 * 'strong_wolfe' is supported", torch's message, here at construction) is
 * CLT_ERR_INVALID_ARGUMENT, as are parameters that hold no element at all;
 * parameters of two dtypes are CLT_ERR_DTYPE_MISMATCH, on two devices
 * CLT_ERR_DEVICE_MISMATCH.  Its state in files (clt_optimizer_save, torch's
 * names, which torch keeps on parameter 0's state): "state.0.func_evals",
 * "state.0.n_iter" (0-d int64), and once a step went past its first test,
 * "state.0.d", "state.0.prev_flat_grad" (the parameters' dtype, all of
 * them flat), "state.0.old_dirs", "state.0.old_stps" ([m, numel], torch's
 * lists stacked, oldest first), "state.0.ro" ([m]), "state.0.t",
 * "state.0.H_diag", "state.0.prev_loss" (0-d; these float64, which the
 * device must hold to save them); saving stacks the history into copies
 * that the optimizer keeps until its next step or free.  No momentum: schedules that cycle one
 * refuse it.  As clt_sgd otherwise (parameters, ownership). */
CLT_API clt_status clt_lbfgs(clt_tensor *const *params, size_t n, const clt_lbfgs_opts *opts,
                             clt_optimizer **out);

/* A closure: re-evaluates the model (zeroes the gradients, computes the
 * loss, runs clt_backward) and writes the loss to *loss; returns CLT_OK,
 * or a failure status after leaving a message (clt_last_error), which the
 * step returns.  user is the pointer given to the step. */
typedef clt_status (*clt_closure)(void *user, double *loss);

/* optimizer.step(closure).  LBFGS calls fn as often as its iterations
 * and line search need (at least once, at most max_eval times plus the
 * line search's last ones, as torch's); every other kind calls it once
 * and then takes one clt_optimizer_step.  *loss (loss may be NULL) gets
 * the loss of the first evaluation, torch's return value; NaN on failure.
 * The closure runs with no scope of the step's open: what it makes is its
 * own.  fn NULL is CLT_ERR_NULL_ARGUMENT.  A failing closure ends the step
 * at once with its status and message: the parameters stay where that
 * evaluation put them (LBFGS's line search evaluates at x + t d and puts x
 * back after each success; a failure leaves x + t d), and LBFGS's
 * counters (func_evals, n_iter) and history keep what the step had done,
 * as torch's state after an exception; other kinds take no step.  Counts
 * as one step (clt_optimizer_steps) when it succeeds.  A failure of the
 * library during an LBFGS step (out of device memory) leaves the same. */
CLT_API clt_status clt_optimizer_step_closure(clt_optimizer *opt, clt_closure fn, void *user,
                                              double *loss);

/* ---- mixed precision: autocast and GradScaler (torch.cuda.amp) ----------- */

/* torch.autocast("cuda", torch.float16) on device (or, with dtype
 * CLT_BFLOAT16, torch.autocast(dtype=torch.bfloat16): the same lists, with
 * bfloat16 wherever float16 is named below; a float16 operand of the
 * lower-precision list is cast to bfloat16 then, and the promote list
 * gives float32 for float16 with bfloat16, as torch's promote_type): opens
 * a region of the
 * calling thread (regions nest; each thread has its own, as torch's
 * thread-local state) in which ops on tensors of device cast their
 * operands as torch 1.13's CUDA autocast does, then run as usual:
 * - to float16 (float32 operands; the result is float16): clt_matmul,
 *   clt_mm, clt_bmm, clt_mv, clt_addmm, clt_addmv, clt_baddbmm,
 *   clt_addbmm, clt_addr, clt_einsum, clt_chain_matmul,
 *   clt_linalg_multi_dot, clt_prelu, the convolutions (conv1d/2d/3d,
 *   conv_transpose1d/2d/3d, their layers), the Linear layer, the cells
 *   (clt_rnn_cell, clt_lstm_cell, clt_gru_cell and their layers) and the
 *   recurrent layers (clt_rnn_forward, clt_lstm_forward, clt_gru_forward,
 *   their _packed forms and clt_module_forward on them: input, states and
 *   parameters cast, output and states float16, as torch's cuDNN RNN);
 * - to float32 (float16 operands; the result is float32): clt_softmax,
 *   clt_log_softmax, clt_softmin, clt_exp, clt_log, clt_log1p, clt_expm1,
 *   clt_log2, clt_log10, clt_pow, clt_pow_scalar, clt_rpow_scalar,
 *   clt_rdiv_scalar (torch's s / t is a reciprocal), clt_reciprocal,
 *   clt_rsqrt, clt_tan, clt_asin, clt_acos, clt_sinh, clt_cosh,
 *   clt_erfinv, clt_softplus, clt_sum, clt_sum_dim, clt_prod,
 *   clt_prod_dim, clt_cumsum, clt_cumprod, clt_logsumexp,
 *   clt_vector_norm, clt_vector_norm_dim (torch.norm), clt_frobenius_norm,
 *   clt_nuclear_norm, clt_renorm, clt_normalize (a division by torch.norm),
 *   clt_cosine_similarity, clt_cdist, clt_pdist, clt_layer_norm,
 *   clt_group_norm, clt_mse_loss, clt_l1_loss, clt_smooth_l1_loss,
 *   clt_huber_loss, clt_kl_div, clt_cross_entropy, clt_nll_loss,
 *   clt_binary_cross_entropy_with_logits, clt_poisson_nll_loss,
 *   clt_cosine_embedding_loss, clt_hinge_embedding_loss,
 *   clt_margin_ranking_loss, clt_multilabel_margin_loss,
 *   clt_soft_margin_loss, clt_triplet_margin_loss, clt_multi_margin_loss;
 * - to the widest of their float16 and float32 operands (float32 when one
 *   is, else float16 as they are): clt_addcdiv, clt_addcmul, clt_atan2,
 *   clt_bilinear (and the Bilinear layer), clt_cross, clt_dot,
 *   clt_grid_sample, clt_index_put, clt_scatter_add, clt_tensordot;
 * - clt_binary_cross_entropy is refused (CLT_ERR_INVALID_ARGUMENT), as
 *   torch raises for it: use the _with_logits form.
 * Other ops run in their operands' dtypes (float16 ones in float16; cat
 * and stack promote by themselves; torch's CUDA lists have no FFT and no
 * upsampling).  float64, integer and bool operands, and tensors on other
 * devices, are never cast.  Casts are recorded (ToCopyBackward0), so
 * gradients reach float32 leaves in float32.  The float16 casts of
 * float32 leaves that require grad (a model's weights) are cached per
 * thread, as torch's: a Linear applied twice in a region casts its weight
 * once.  The cache holds each weight and its cast (a reference each)
 * until the thread's outermost region closes (or the thread ends); a cast
 * is made anew when its weight was written in place since (torch would
 * hand out the stale one), and one made with grad mode off is not handed
 * to an op that records.  Ops an autocast op calls inside itself are not
 * cast again.  device NULL opens a region with autocast off (torch's
 * enabled=False; its casts stay cached for the region around it).  dtype
 * must be CLT_FLOAT16 or CLT_BFLOAT16 (CLT_ERR_INVALID_ARGUMENT otherwise); more than 64
 * nested regions are CLT_ERR_INVALID_ARGUMENT.  Backward passes run the
 * formulas in the dtypes the forward recorded. */
CLT_API clt_status clt_autocast_enter(clt_device *device, clt_dtype dtype);

/* Which of torch 1.13's autocast lists a region applies: CUDA's
 * (torch.autocast("cuda", ...), clt_autocast_enter's) or CPU's
 * (torch.autocast("cpu", torch.bfloat16), what a torch program that names
 * its device's type gets when it runs on the CPU). */
typedef enum clt_autocast_lists { CLT_AUTOCAST_CUDA = 0, CLT_AUTOCAST_CPU = 1 } clt_autocast_lists;

/* clt_autocast_enter with a choice of lists; CLT_AUTOCAST_CUDA is
 * clt_autocast_enter.  CLT_AUTOCAST_CPU applies torch 1.13's CPU lists
 * (read off the installed torch by casting each op under
 * torch.autocast("cpu")), on device whatever its kind:
 * - to bfloat16 (float32 and float16 operands): clt_matmul, clt_mm,
 *   clt_bmm, clt_addmm, clt_baddbmm, clt_addbmm, clt_einsum,
 *   clt_chain_matmul, clt_linalg_multi_dot, clt_tensordot, the
 *   convolutions conv1d/2d/3d (and their layers) and the Linear layer;
 * - to float32 (bfloat16 and float16 operands): the transposed
 *   convolutions (conv_transpose1d/2d/3d and their layers), clt_prod,
 *   clt_prod_dim, clt_cdist, clt_grid_sample, clt_mse_loss, clt_l1_loss,
 *   clt_smooth_l1_loss, clt_huber_loss, clt_kl_div, clt_cross_entropy,
 *   clt_nll_loss, clt_binary_cross_entropy (not refused on these lists),
 *   clt_binary_cross_entropy_with_logits, clt_poisson_nll_loss,
 *   clt_cosine_embedding_loss, clt_hinge_embedding_loss,
 *   clt_margin_ranking_loss, clt_multilabel_margin_loss,
 *   clt_soft_margin_loss, clt_triplet_margin_loss, clt_multi_margin_loss,
 *   clt_ctc_loss (log_probs); clt_max_pool3d (not its _with_indices form,
 *   which torch leaves off the list), clt_avg_pool3d,
 *   clt_adaptive_avg_pool3d, clt_adaptive_max_pool3d,
 *   clt_fractional_max_pool2d/3d (and random_samples), clt_max_unpool1d/
 *   2d/3d and the layers of all these (MaxPool3d, AvgPool3d,
 *   AdaptiveAvgPool3d, AdaptiveMaxPool3d, FractionalMaxPool2d/3d,
 *   MaxUnpool1d/2d/3d); clt_pad with CLT_PAD_REFLECT over 1 or 2 dims
 *   and CLT_PAD_REPLICATE over 1 to 3 (reflection_pad1d/2d,
 *   replication_pad1d/2d/3d; reflect over 3 dims is not on torch's list)
 *   and the ReflectionPad1d/2d and ReplicationPad1d/2d/3d layers;
 *   clt_fft_fft, ifft, rfft, irfft, hfft, ihfft, fft2, ifft2, rfft2,
 *   irfft2, fftn, ifftn, rfftn, irfftn (not hfft2, ihfft2, hfftn,
 *   ihfftn, as torch 1.13) and clt_stft (x and the window); clt_quantile
 *   and clt_nanquantile (a and q), clt_trace, clt_polar,
 *   clt_view_as_complex (complex64 out of bfloat16);
 *   clt_fake_quantize_per_tensor_affine (the scalar form only, as torch);
 *   the linalg ops clt_linalg_inv, clt_linalg_inv_ex, clt_linalg_solve,
 *   clt_linalg_cholesky, clt_linalg_cholesky_ex, clt_linalg_eigh,
 *   clt_linalg_eigvalsh, clt_linalg_eig, clt_linalg_eigvals,
 *   clt_linalg_svd, clt_linalg_svdvals, clt_svd, clt_linalg_matrix_rank,
 *   clt_linalg_cond, clt_linalg_cond_ord, clt_linalg_qr,
 *   clt_linalg_lstsq, clt_linalg_lstsq_ex, clt_linalg_householder_product,
 *   clt_orgqr, clt_geqrf, clt_ormqr, clt_cholesky_solve,
 *   clt_cholesky_inverse, clt_linalg_tensorinv, clt_linalg_tensorsolve
 *   (torch's list leaves off det, slogdet, solve_ex, solve_triangular,
 *   the LU and LDL functions, matrix_exp, pinv: they run as they are);
 * - to the widest of their operands: clt_index_copy (clt_cat and
 *   clt_stack promote by themselves);
 * - the cells (clt_rnn_cell, clt_lstm_cell, clt_gru_cell and their
 *   layers) and the recurrent layers (clt_rnn_forward, clt_lstm_forward,
 *   clt_gru_forward, their _packed forms and clt_module_forward on them)
 *   as torch's CPU composites: each gate product (x W_ih^T + b_ih,
 *   h W_hh^T + b_hh) runs in bfloat16 (input, state, weight and bias
 *   cast), the rest of the cell in its operands' dtypes: a float32 state
 *   meets bfloat16 gates in float32, so that an LSTM's h and c and a GRU's
 *   h are float32 when their states are (given float32, or zeros of a
 *   float32 input's dtype), bfloat16 when they are bfloat16, and a plain
 *   RNN's h (a tanh or relu of the gates) is always bfloat16; the
 *   input, the states and the weights need not share a dtype then, and
 *   the gradients reach float32 weights in float32.
 * Everything else runs in its operands' dtypes, among them what the CUDA
 * lists cast and the CPU lists do not (mv, addmv, addr, prelu, softmax,
 * the exp/log family, pow, sums, norms, layer/group norm, dot, cross,
 * atan2, index_put, scatter_add, bilinear).  dtype must be CLT_BFLOAT16 with
 * CLT_AUTOCAST_CPU (CLT_ERR_INVALID_ARGUMENT otherwise, as torch raises
 * "AutocastCPU only support Bfloat16"); lists outside the enum are
 * CLT_ERR_INVALID_ARGUMENT.  Casting, the cast cache, nesting and
 * device NULL as clt_autocast_enter; an inner region's lists apply until
 * it closes. */
CLT_API clt_status clt_autocast_enter_ex(clt_device *device, clt_dtype dtype,
                                         clt_autocast_lists lists);

/* Closes the calling thread's innermost autocast region
 * (CLT_ERR_INVALID_ARGUMENT when none is open); closing the outermost
 * releases the thread's cached casts. */
CLT_API clt_status clt_autocast_exit(void);

/* torch.is_autocast_enabled(): 1 when ops on device (NULL: on any device)
 * are cast now on the calling thread, else 0. */
CLT_API int clt_autocast_is_enabled(const clt_device *device);


/* torch.cuda.amp.GradScaler of torch 1.13, on any device, for use with
 * autocast (below) or mixed precision by hand (float32 master weights
 * cast to float16 with clt_to_dtype, which records the cast, so gradients
 * come back in float32); it guards training in any dtype against
 * overflow all the same (an inf or NaN gradient skips the step and backs
 * the scale off); unscale refuses float16 gradients, as torch's, and
 * bfloat16 ones too (keep master weights float32; bfloat16 needs no
 * scaler, its range is float32's).  Its
 * settings, CLT_GRAD_SCALER_DEFAULTS
 * torch's: init_scale 65536, growth_factor 2, backoff_factor 0.5,
 * growth_interval 2000, enabled 1.  With enabled 0 every call below is the
 * plain one (scale gives the loss back, step is clt_optimizer_step,
 * unscale and update do nothing, the scale reads 1), as torch's. */
typedef struct clt_grad_scaler clt_grad_scaler;
typedef struct clt_grad_scaler_opts {
    double init_scale, growth_factor, backoff_factor;
    int64_t growth_interval;
    int enabled;
} clt_grad_scaler_opts;
#define CLT_GRAD_SCALER_DEFAULTS {65536.0, 2.0, 0.5, 2000, 1}

/* A new scaler (opts NULL: the defaults).  The scale and the growth
 * tracker are kept on the host: the scale as the float32 value torch keeps
 * in its _scale tensor, so that the sequence of scales is torch's bit for
 * bit.  growth_factor not above 1 ("The growth factor must be > 1.0.") or
 * backoff_factor not below 1 ("The backoff factor must be < 1.0."),
 * torch's checks, and also what torch takes and then fails on (a
 * backoff_factor not above 0, an init_scale that is not finite and > 0 or
 * does not fit float32, growth_interval below 1) are
 * CLT_ERR_INVALID_ARGUMENT.  Release with clt_grad_scaler_free. */
CLT_API clt_status clt_grad_scaler_new(const clt_grad_scaler_opts *opts, clt_grad_scaler **out);

/* scaler.scale(loss): loss times the scale, a new tensor recorded by
 * autograd (torch's MulBackward0; the gradients of a backward pass from it
 * are scaled by the same factor).  Disabled: loss itself through a new
 * handle (its data and history; releasing the handle leaves loss and its
 * scope alone).  As clt_mul_scalar otherwise (floating dtypes).  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_grad_scaler_scale(clt_grad_scaler *s, const clt_tensor *loss,
                                         clt_tensor **out);

/* scaler.unscale_(optimizer): divides every gradient of opt's parameters
 * (the values of a sparse one, torch's grad._values()) by the scale in place (multiplies by its float32 reciprocal, as torch's
 * _amp_foreach_non_finite_check_and_unscale_) and records, per device,
 * whether any of them holds an inf or a NaN.  All on the device: one
 * launch per gradient, every launch of a device writing one flag of that
 * device (no read-back, no wait).  Parameters without a gradient are
 * skipped.  Once per optimizer between two clt_grad_scaler_update calls:
 * again is CLT_ERR_INVALID_ARGUMENT ("unscale_() has already been called
 * on this optimizer since the last update()."), and so is a call after
 * clt_grad_scaler_step on it ("unscale_() is being called after
 * step().").  A gradient that is not float32 or float64 is
 * CLT_ERR_DTYPE_UNSUPPORTED, one that is not contiguous (autograd makes
 * none) CLT_ERR_INVALID_ARGUMENT, both before any is changed.  A driver
 * refusing a launch part-way leaves the gradients before it unscaled and
 * the others not: the message says so, and the round counts as one that
 * found an inf (its step is skipped, the scale backs off).  The scaler tells
 * optimizers apart by their handle (free none between unscale and
 * update).  Disabled: nothing. */
CLT_API clt_status clt_grad_scaler_unscale_(clt_grad_scaler *s, clt_optimizer *opt);

/* scaler.step(optimizer): unscales opt's gradients first unless
 * clt_grad_scaler_unscale_ did since the last update, then reads back the
 * inf flags (the one wait of the scaler: a float per device) and takes
 * clt_optimizer_step(opt) when none is set; when one is, the step is
 * skipped and the parameters and the optimizer's state stay bit for bit
 * as they were.  *stepped (may be NULL) gets 1 when the step was taken, 0
 * when skipped.  Twice between updates is CLT_ERR_INVALID_ARGUMENT
 * ("step() has already been called since the last update()."), as is an
 * optimizer none of whose parameters has a gradient ("No inf checks were
 * recorded for this optimizer.").  A failing clt_optimizer_step returns
 * its status and message.  Disabled: clt_optimizer_step(opt). */
CLT_API clt_status clt_grad_scaler_step(clt_grad_scaler *s, clt_optimizer *opt, int *stepped);

/* scaler.update(new_scale): with new_scale NULL, torch's
 * _amp_update_scale_ over the inf flags of every optimizer unscaled since
 * the last update (flags not read back yet, from an unscale without a
 * step, are read now): any inf or NaN multiplies the scale by
 * backoff_factor and zeroes the growth tracker; else the tracker counts
 * one more, and at growth_interval the scale is multiplied by
 * growth_factor (kept only when that stays finite in float32) and the
 * tracker starts again from 0.  With new_scale, the scale is set to
 * *new_scale (rounded to float32; not finite and > 0 is
 * CLT_ERR_INVALID_ARGUMENT, which torch takes) and the tracker is left.
 * Either way the per-optimizer records start afresh.  No record and no
 * new_scale is CLT_ERR_INVALID_ARGUMENT ("No inf checks were recorded
 * prior to update.").  Disabled: nothing. */
CLT_API clt_status clt_grad_scaler_update(clt_grad_scaler *s, const double *new_scale);

/* scaler.get_scale() (1 when disabled, NaN for NULL), and the growth
 * tracker (torch's _growth_tracker: consecutive steps without inf since
 * the last change of scale; 0 for NULL). */
CLT_API double clt_grad_scaler_get_scale(const clt_grad_scaler *s);
CLT_API int64_t clt_grad_scaler_growth_tracker(const clt_grad_scaler *s);

/* Releases the scaler (not the optimizers it saw).  NULL does nothing.
 * Its state in files: clt_grad_scaler_save, clt_grad_scaler_load in
 * <cltensor/io.h>. */
CLT_API void clt_grad_scaler_free(clt_grad_scaler *s);

/* ---- stochastic weight averaging (torch.optim.swa_utils) ------------------ */

/* SWALR: from each group's rate now to its swa_lr over anneal_epochs
 * steps, torch 1.13's get_lr bit for bit: with step the steps taken
 * (torch's _step_count - 1; at least 1 when anneal_epochs is 0), alpha(t)
 * = (1 - cos(pi t)) / 2 ("cos", NULL) or t ("linear"), t = clamp(step /
 * max(1, anneal_epochs), 0, 1), the rate recovers the one it started from
 * out of the rate now, (lr - alpha(t') swa_lr) / (1 - alpha(t')) with t'
 * one step earlier (swa_lr itself where alpha(t') is 1), and sets swa_lr
 * alpha(t) + that (1 - alpha(t)).  Reading the rate now makes it compose
 * with the other schedules of its optimizer as torch's does (a
 * CosineAnnealingLR stepped until SWA starts, then SWALR).  swa_lrs: n
 * rates, one for every group (n 1) or one per group (n the optimizer's
 * groups; torch's "swa_lr must have the same length as
 * optimizer.param_groups" otherwise), copied.  A negative anneal_epochs,
 * another strategy (torch's messages) or a rate that is not finite and >=
 * 0 is CLT_ERR_INVALID_ARGUMENT.  A group added after it was made keeps
 * its rate (torch fails on its missing swa_lr).  It takes no part in
 * clt_sequential_lr or clt_chained_scheduler (refused: torch's SWALR
 * counts the steps they replay).  It sets each group's swa_lr, as torch's
 * param_groups keep it (saved with the optimizer), and reads its rate
 * from there as torch's get_lr does; clt_lr_scheduler_save and the
 * general checkpoint write its state_dict as torch's (io.h).  Made, it
 * takes torch's first step: the rate stays, but for anneal_epochs 0,
 * which sets swa_lr at once.  New scheduler (it
 * borrows opt): release with clt_lr_scheduler_free. */
CLT_API clt_status clt_swa_lr(clt_optimizer *opt, const double *swa_lrs, size_t n,
                              int64_t anneal_epochs, const char *anneal_strategy,
                              clt_lr_scheduler **out);

/* AveragedModel: a copy of a model (clt_module_clone) whose parameters
 * (and, with use_buffers, buffers too) are averaged over the models given
 * to clt_averaged_model_update.  avg_fn computes the new average: *out =
 * f(averaged, model, num_averaged), a new tensor of averaged's shape (the
 * library copies it into the averaged tensor, converting its dtype, and
 * releases it); a failure status (with a message left) fails the update.
 * user is the pointer given to the constructor. */
typedef struct clt_averaged_model clt_averaged_model;
typedef clt_status (*clt_avg_fn)(void *user, const clt_tensor *averaged,
                                 const clt_tensor *model, int64_t num_averaged,
                                 clt_tensor **out);

/* torch.optim.swa_utils.AveragedModel(model, device, avg_fn, use_buffers):
 * a clone of model on dev (NULL: its own devices) and n_averaged, a 0-d
 * int64 buffer at 0 on the clone's device.  avg_fn NULL is torch's SWA
 * mean, averaged + (model - averaged) / (num_averaged + 1) (the same
 * operations, so float32 averages round as torch's).  Nothing is recorded
 * by autograd.  New averaged model: release with
 * clt_averaged_model_free. */
CLT_API clt_status clt_averaged_model_new(const clt_module *model, clt_device *dev,
                                          clt_avg_fn avg_fn, void *user, int use_buffers,
                                          clt_averaged_model **out);
/* An exponential moving average: clt_averaged_model_new with the avg_fn decay
 * averaged + (1 - decay) model (torch 2's get_ema_avg_fn; in torch 1.13
 * the lambda its documentation shows), decay in [0, 1] (else
 * CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_averaged_model_ema(const clt_module *model, clt_device *dev, double decay,
                                          int use_buffers, clt_averaged_model **out);
/* update_parameters(model): for each parameter (then each buffer, with
 * use_buffers) of the average and of model, in order, the model's value
 * (moved to the average's device) is copied in at the first update and
 * averaged by avg_fn after; then n_averaged counts one more.  model must
 * have the same tensors (count and shapes, as the model cloned) else
 * CLT_ERR_INVALID_ARGUMENT.  All averages are made before any is written:
 * a failure leaves the average and n_averaged as they were. */
CLT_API clt_status clt_averaged_model_update(clt_averaged_model *a, const clt_module *model);
/* The averaged module (borrowed: it lives as long as a), to run, to give
 * to clt_update_bn or to save as the model. */
CLT_API clt_module *clt_averaged_model_module(const clt_averaged_model *a);
/* n_averaged (0 for NULL). */
CLT_API int64_t clt_averaged_model_count(const clt_averaged_model *a);
/* torch's AveragedModel.state_dict(): "n_averaged" (0-d int64), then the
 * module's state under "module." ("module.0.weight", ...), as *n entries
 * in one block (names included) released with clt_free; the tensors are
 * borrowed.  clt_save_torch of it writes a file torch's
 * AveragedModel.load_state_dict takes. */
CLT_API clt_status clt_averaged_model_state(const clt_averaged_model *a,
                                            clt_named_tensor **out, size_t *n);
/* Releases the average, its module and its buffer.  NULL does nothing. */
CLT_API void clt_averaged_model_free(clt_averaged_model *a);

/* torch.optim.swa_utils.update_bn(loader, model): every BatchNorm layer
 * of model gets running_mean zeros, running_var ones and
 * num_batches_tracked 0, then model runs in train mode over one epoch of
 * loader (the x of each batch) with every BatchNorm's momentum None:
 * batch k (from 1) weighs 1 / k, so the running statistics end as the
 * plain average of the batches' (variances unbiased), as torch's; then
 * the momenta and the train or eval mode are put back.  A model without
 * BatchNorm is left alone (no batch is drawn); a BatchNorm without running
 * statistics (track_running_stats 0) is passed over.  A loader that is in the
 * middle of an epoch finishes that one.  A failing batch or forward
 * returns its status, the momenta and the mode put back, the running
 * statistics where they were then. */
CLT_API clt_status clt_update_bn(clt_dataloader *loader, clt_module *model);

#ifdef __cplusplus
}
#endif

#endif
