/* cltensor/autograd.h: reverse-mode automatic differentiation, like
 * torch.autograd.
 *
 * A floating-point or complex tensor may require gradients
 * (clt_set_requires_grad).  A complex tensor's gradient is complex, the
 * gradient of a real loss L with respect to z being dL/dz* (conjugate
 * Wirtinger calculus, as torch); cltensor/fft.h lists the complex ops that
 * record one.
 * Every differentiable operation on such tensors records, beside its
 * output, what its backward pass needs; clt_backward on a result walks that
 * graph back and accumulates (adds) the gradients into the `grad` of the
 * leaves, the tensors that required grad without being computed.  The
 * gradients live on the tensors' devices and are computed there by kernels,
 * in a fixed order: the same program gives the same bits on every run, and
 * on every device that computes the forward identically.  Nothing waits on
 * the host.
 *
 * Differentiable: the elementwise ops of ops.h (not comparisons), the
 * reductions of reduce.h but argmax/argmin/argsort (sort and topk through
 * their values), matmul, softmax and
 * log_softmax, every view of view.h, clt_to, clt_to_dtype (to a floating
 * dtype), clt_clone, the index ops of index.h but one_hot, and every
 * in-place op (ops.h, index.h, random.h: recorded on a non-leaf's history
 * as torch records them; on a view, its base's history takes it as
 * torch's CopySlices, views of another dtype included: clt_real,
 * clt_imag, clt_view_as_real, clt_view_as_complex and views of them).
 *
 * Memory.  The graph is owned by the tensors it produced: it holds handles
 * on the data its backward formulas read (PyTorch's saved tensors) and a
 * reference to each leaf, and goes when its outputs are released.
 * clt_backward frees the saved data (unless retain_graph), so a second
 * backward through the same graph is an error.  A tensor that was saved
 * and then changed in place makes backward fail, naming it (PyTorch's
 * version counter check), rather than give a wrong gradient.
 *
 * Threads.  Grad mode is per thread.  Two threads must not run backward
 * through one graph at once.  The getters clt_requires_grad, clt_is_leaf,
 * clt_grad_fn_name and clt_tensor_repr only read: several threads may call
 * them on one tensor at once (a view whose base changed in place since it
 * was made reports the history it will take, AsStridedBackward0, without
 * taking it).  Everything else that touches a tensor's autograd state may
 * write it, and must not run on that tensor while another thread uses it:
 * an in-place op on the tensor, its base or its views, clt_set_requires_grad,
 * clt_retain_grad, the hooks, backward from it, and reading as an op's input
 * (or backward's root) a view whose base changed in place since it was
 * made (the op gives the view its new history first, as torch does).
 */
#ifndef CLTENSOR_AUTOGRAD_H
#define CLTENSOR_AUTOGRAD_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Like t.requires_grad_(on): marks a leaf as requiring gradients (or not).
 * Integer and bool tensors cannot (CLT_ERR_DTYPE_MISMATCH); a computed
 * tensor cannot stop requiring them (CLT_ERR_INVALID_ARGUMENT: use
 * clt_detach). */
CLT_API clt_status clt_set_requires_grad(clt_tensor *t, int on);

/* 1 when t requires gradients (a marked leaf, or computed from one with
 * grad mode on), else 0; NULL gives 0. */
CLT_API int clt_requires_grad(const clt_tensor *t);

/* 1 when t was not computed by a recorded op (t.is_leaf); NULL gives 0. */
CLT_API int clt_is_leaf(const clt_tensor *t);

/* The name of the node that computed t ("MulBackward0"), or NULL for a
 * leaf.  Static storage.  Reads only (safe from several threads, see
 * Threads above). */
CLT_API const char *clt_grad_fn_name(const clt_tensor *t);

/* Like t.grad: a new handle on the gradient accumulated into the leaf t
 * (it shares the storage: it sees what later backward passes add and what
 * clt_clip_grad_norm or clt_zero_grad(t, 0) write), or *out = NULL with CLT_OK when there is none yet.
 * A gradient that clt_backward_ex made with create_graph keeps its history
 * in the handle.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_grad(const clt_tensor *t, clt_tensor **out);

/* Whether t's gradient is sparse (t.grad.is_sparse): a leaf read by an
 * Embedding or EmbeddingBag with sparse set (index.h) holds its gradient
 * as sparse COO entries, as torch's; clt_grad_sparse (sparse.h) hands them
 * out, and clt_grad their dense form (a new tensor: writes into it do not
 * reach the gradient).  clt_zero_grad(t, 0) leaves it sparse with no
 * entries in torch's zero_() layout (every dimension sparse: indices
 * [ndim, 0], values [0], coalesced), clt_zero_grad(t, 1) drops it.
 * clt_module_to and clt_module_to_dtype move and convert dense gradients
 * only: drop a sparse one (clt_zero_grad(t, 1)) before moving the model,
 * or the next step reports the devices or dtypes that differ.  0 for NULL
 * or no gradient. */
CLT_API int clt_grad_is_sparse(const clt_tensor *t);

/* Clears t's gradient: drops it (set_to_none non-zero, torch 2.0's default
 * and what the examples pass), or sets it to zeros in place (0: torch
 * 1.13's default, set_to_none=False).  No gradient: nothing to do. */
CLT_API clt_status clt_zero_grad(clt_tensor *t, int set_to_none);

/* Like t.backward(grad, retain_graph=...): computes the gradients of t with
 * respect to every leaf it depends on and adds them to their grad.  grad is
 * t's own gradient, of t's shape and device; NULL means 1 and needs t to
 * have one element ("grad can be implicitly created only for scalar
 * outputs") and to be real (a complex one needs its grad, as torch).  retain_graph 0 frees the graph's saved tensors. Enqueues
 * kernels only.  The leaves' gradients change only when the whole pass
 * succeeds: a pass that fails (out of device memory, the driver refusing
 * a launch, say) adds nothing to any grad, so the forward and backward may
 * simply be run again (every sum is made apart first, then each gradient's
 * storage takes its sum's buffer, which cannot fail); with
 * retain_graph 0 it has freed the saved tensors of the part it ran, so
 * that a second backward through the same graph is the error above.
 * clt_backward_ex adds create_graph (below). */
CLT_API clt_status clt_backward(clt_tensor *t, const clt_tensor *grad, int retain_graph);

/* Like t.detach(): a new handle on t's data that requires no gradients and
 * has no history.  Not a differentiable view (ops.h): an in-place op on it
 * bumps the storage's version, which backward checks, and never touches
 * t's history.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_detach(const clt_tensor *t, clt_tensor **out);

/* Turns recording on or off for the calling thread (torch.no_grad is
 * clt_set_grad_enabled(0)) and returns the previous setting, to restore:
 *     int was = clt_set_grad_enabled(0); ... clt_set_grad_enabled(was); */
CLT_API int clt_set_grad_enabled(int enabled);

/* 1 when the calling thread records operations (the default). */
CLT_API int clt_is_grad_enabled(void);

/* ---- beyond backward: autograd.grad, retain_grad, hooks, checkpoint ------- */

/* Like torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
 * allow_unused): the gradients of the noutputs outputs (their sum, each
 * weighted by its grad_output) with respect to the ninputs inputs, leaves
 * or computed tensors, returned in grads[k] as new tensors of input k's
 * shape, dtype and device.  The leaves' `grad` do not change, and
 * neither tensor hooks on the inputs nor post-accumulate hooks run (as in
 * torch 1.13, where an input's gradient is taken before its hooks); hooks
 * of the tensors between outputs and inputs do run, and those that keep
 * their gradient (clt_retain_grad) get it added to their grad, as with
 * clt_backward (torch 1.13 does the same).  Only the part of the graph
 * that leads to an input is computed: a retaining tensor outside it keeps
 * nothing, nor does an input unless it also leads to another input.
 *
 * grad_outputs is NULL (every output then needs one element, its gradient
 * being 1) or holds noutputs entries, each a gradient of its output's
 * shape and device, or NULL for 1 on a one-element output.  Every output
 * and every input must require grad.  An input the outputs do not depend
 * on gives grads[k] = NULL with allow_unused, else the call fails naming
 * it.  retain_graph 0 frees the saved tensors of the part of the graph it
 * ran, as clt_backward does.  The returned gradients have no history:
 * clt_autograd_grad_ex with create_graph gives differentiable ones.
 *
 * grads is the caller's array of ninputs slots.  On failure every slot is
 * NULL and nothing changed.  New tensors (NULL entries aside): release
 * each with clt_tensor_free. */
CLT_API clt_status clt_autograd_grad(clt_tensor *const *outputs, size_t noutputs,
                                     clt_tensor *const *grad_outputs,
                                     clt_tensor *const *inputs, size_t ninputs,
                                     int retain_graph, int allow_unused, clt_tensor **grads);

/* The options of clt_backward_ex and clt_autograd_grad_ex; a zeroed struct
 * (or NULL) gives PyTorch's defaults.
 *
 * create_graph: like create_graph=True, the pass records the graph of its
 * own computation, so that the gradients it gives (clt_autograd_grad_ex's
 * grads, the leaves' grad for clt_backward_ex) have a history and can be
 * differentiated again: Hessian-vector products, gradient penalties
 * (WGAN-GP), MAML's inner steps.  The formulas that support it (double
 * backward) run as recorded ops; those are the nodes of: add, sub, mul,
 * div, pow (tensor and scalar exponents, scalar bases), neg, the scalar
 * forms (add/sub/rsub/mul/div_scalar, rdiv_scalar), exp, log, sqrt, tanh,
 * sigmoid, relu, leaky_relu, gelu, softplus, abs, sin, cos, tan, rsqrt,
 * log1p, expm1, exp2, silu, elu, selu, celu, hardtanh, relu6, mish, clamp
 * (scalar and tensor bounds, clamp_min/max_tensor), where, the ops of zero gradient (sign, floor, ceil,
 * round, trunc, div with a rounding mode), sum and mean (all and dim),
 * matmul, a Linear layer (AddmmBackward0), view, reshape, flatten,
 * transpose, permute, expand, squeeze, unsqueeze, contiguous, clone,
 * to_dtype (not clt_to), narrow, slice, cat, stack, index_select,
 * gather, scatter, scatter_add, index_add, take (and take_along_dim, a
 * gather), embedding, masked_fill, masked_select, a Dropout layer (its ops: the saved mask is a
 * constant), layer_norm and group_norm (float32 and float64:
 * NativeLayerNormBackward0 and NativeGroupNormBackward0, input, weight and
 * bias), BatchNorm1d/2d in training and eval (their ops), max_pool2d and
 * avg_pool2d (1d and unbatched too; their formulas' own gradients a gather
 * and the pooling, to any order; adaptive_avg_pool2d, adaptive_max_pool2d
 * and the 3-D pools, composed of them, alike; as in torch each pooling's
 * gradient also depends on the pooling's input, with derivative zero
 * (MaxPool2DWithIndicesBackwardBackward0 ...), so that it has a history
 * even for a constant grad_output), conv1d, conv2d, conv3d and
 * conv_transpose1d/2d/3d (ConvolutionBackward0, with any stride, padding, dilation, groups and
 * bias: each formula a convolution, so to any order), mse_loss,
 * binary_cross_entropy (with a weight) and
 * binary_cross_entropy_with_logits (with a pos_weight), input
 * and target both, softmax, log_softmax, cross_entropy and nll_loss (x
 * [N, C], class indices, with a class weight or without, no label
 * smoothing), vector_norm of every ord (and normalize, cosine_similarity,
 * pairwise_distance made of it), asin, acos, atan, sinh, cosh, asinh,
 * acosh, atanh, erf, erfc, erfinv, log2, log10, reciprocal, frac,
 * round_decimals, square, lgamma, digamma, polygamma, maximum, minimum,
 * remainder, fmod, xlogy, atan2, hypot, copysign, lerp, addcmul, addcdiv,
 * mm, mv, dot, bmm, addmm, addmv, baddbmm, addbmm, var and std (all and
 * dim), logsumexp, max and min (all and dim), amax, amin, nansum, median,
 * nanmedian, kthvalue, mode, quantile, index_copy, index_fill, diagonal,
 * select_scatter, slice_scatter, diagonal_scatter, l1_loss,
 * smooth_l1_loss, huber_loss, kl_div, gaussian_nll_loss, softsign,
 * tanhshrink, logsigmoid, hardswish, pad (every mode), repeat and tile,
 * roll, pixel_shuffle, pixel_unshuffle, channel_shuffle, unfold and fold,
 * as_strided, interpolate (every mode: each formula's gradient is the
 * interpolation, UpsampleBilinear2DBackwardBackward1 ...), max_unpool1d
 * and max_unpool2d, pad_sequence, index_put, masked_scatter, sort, topk,
 * cummax, cummin, scatter_reduce (every reduction; prod by torch's
 * formula) and embedding_bag (every mode, per-sample weights too, where
 * torch 1.13 refuses); prod (all and dim) and cumprod
 * with zeros or without (torch's formulas of grad mode, so a second
 * derivative at a zero is right), logcumsumexp, logit (with eps or
 * without), nan_to_num, frexp's mantissa, mvlgamma, sinc, logaddexp,
 * logaddexp2, special_xlog1py, special_i0, special_i0e, special_i1,
 * special_i1e, special_ndtr, special_ndtri, special_log_ndtr,
 * special_entr, glu, prelu (PreluBackwardBackward0, as below), the
 * in-place ops (add_, sub_, the scalar forms, mul_, div_, the clamps,
 * fill_, zero_, copy_, the random fills, fill_diagonal_ and the in-place
 * index ops; on views too, complex views of real bases and real views of
 * complex ones included: CopySlices and AsStridedBackward0 apply the
 * in-place formula twice when it is), and the fake quantizations'
 * straight-through gradient;
 * in linear algebra trace, diag,
 * diag_embed, block_diag, linalg.cross, det, slogdet, inv and inv_ex,
 * solve and solve_ex, solve_triangular, cholesky and cholesky_ex,
 * cholesky_solve, cholesky_inverse, qr, eigh and eigvalsh, svd, svdvals
 * and torch.svd, pinv, lu, lu_factor and lu_factor_ex, matrix_exp, eig
 * and eigvals (and what is composed of them: the matrix norms, cond,
 * lstsq ...).  Any other node still gives
 * its right gradient, but one that refuses to be differentiated: a later
 * backward through it fails with "the derivative for 'XBackward0' is not
 * implemented" (PyTorch's NotImplemented node), never a silently constant
 * gradient.  As in torch, the gradients of relu, relu6, hardtanh,
 * leaky_relu, prelu and the convolutions have a history whenever the
 * tensors their formula reads require grad, even where they are constant
 * in them (ThresholdBackwardBackward0, HardtanhBackwardBackward0,
 * LeakyReluBackwardBackward0, PreluBackwardBackward0,
 * ConvolutionBackwardBackward0): a second
 * derivative with respect to those is zeros; clamp's formula reads no
 * such tensor (torch's where(mask, grad, 0)), so the gradient of a
 * constant grad_output through it has none, as in torch.  A pass with
 * create_graph is slower: it records a node per op and runs the formulas
 * as separate ops, not fused kernels.
 *
 * With create_graph, clt_backward_ex makes each leaf's grad a tensor with
 * a history (an existing grad is replaced by the sum grad + new, a new
 * tensor, as in torch: handles from an earlier clt_grad keep the old
 * values), and clt_grad hands out handles that keep it.  As torch warns,
 * that grad's graph holds the leaf: clear it with clt_zero_grad(t, 1)
 * (or prefer clt_autograd_grad_ex) or the leaf and graph are never freed.
 *
 * retain_graph: 0 as torch's None, the graph's saved tensors are kept when
 * create_graph is set (a second differentiation goes through them), freed
 * otherwise; 1 keeps them (retain_graph=True); -1 frees them
 * (retain_graph=False), after which differentiating the created gradients
 * again fails ("backward through the graph a second time").
 *
 * allow_unused: clt_autograd_grad_ex only, as in clt_autograd_grad. */
typedef struct clt_grad_opts {
    int retain_graph;
    int create_graph;
    int allow_unused;
} clt_grad_opts;

/* Like t.backward(grad, retain_graph=..., create_graph=...): clt_backward
 * with opts (NULL: the defaults; see clt_grad_opts). */
CLT_API clt_status clt_backward_ex(clt_tensor *t, const clt_tensor *grad,
                                   const clt_grad_opts *opts);

/* Like torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
 * create_graph, allow_unused): clt_autograd_grad with opts (NULL: the
 * defaults; see clt_grad_opts).  With create_graph the new tensors in
 * grads have a history (grad_outputs that require grad are part of it).
 * grads as for clt_autograd_grad: on failure every slot is NULL. */
CLT_API clt_status clt_autograd_grad_ex(clt_tensor *const *outputs, size_t noutputs,
                                        clt_tensor *const *grad_outputs,
                                        clt_tensor *const *inputs, size_t ninputs,
                                        const clt_grad_opts *opts, clt_tensor **grads);

/* Like t.retain_grad(): a computed tensor t keeps the gradient that
 * clt_backward (or clt_autograd_grad) passes through it, so that
 * clt_grad(t) reads it afterwards (accumulated over backward passes, as a
 * leaf's; clt_zero_grad clears it).
 * It is taken where t's hooks are, in registration order: a hook registered
 * before clt_retain_grad changes what is kept, one registered after does
 * not (torch 1.13).  On a leaf it does nothing (a leaf keeps its gradient
 * anyway).  t must require grad (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_retain_grad(clt_tensor *t);

/* 1 when t is a computed tensor that keeps its gradient (t.retains_grad);
 * NULL gives 0. */
CLT_API int clt_retains_grad(const clt_tensor *t);

/* A registered hook, to remove it with clt_hook_remove (torch's
 * RemovableHandle). */
typedef struct clt_hook clt_hook;

/* A tensor hook: called with grad, the gradient flowing into the tensor it
 * was registered on (borrowed: valid during the call only), it may set
 * *replacement to a new tensor of grad's shape, dtype and device that
 * takes grad's place (the library takes that reference and releases it,
 * whichever scope made it), or leave it NULL to keep grad.  A status other
 * than CLT_OK stops the backward pass with that status; the message
 * becomes "clt_backward: hook on <the tensor>: <the hook's message>" (set
 * one with any failing library call, or leave the hook's own). */
typedef clt_status (*clt_tensor_hook_fn)(void *user, const clt_tensor *grad,
                                         clt_tensor **replacement);

/* Like t.register_hook(fn): fn runs during each backward pass with the
 * gradient of t, after the hooks registered before it (each sees the
 * previous one's result).  On a computed tensor it runs when the whole
 * gradient of t is known, before it flows on to t's inputs (it stays with
 * t's node: releasing t does not remove it).  On a leaf it runs before the
 * gradient is added to t's grad, once per pass, with the sum of what the
 * pass computed for t (torch's AccumulateGrad pre-hook).  t must require
 * grad (CLT_ERR_INVALID_ARGUMENT).  handle may be NULL (the hook then
 * lives as long as t's graph or t); else *handle is a new handle: release
 * it with clt_hook_remove, which removes the hook.  Registering while a
 * backward pass through t runs in another thread is not supported. */
CLT_API clt_status clt_tensor_register_hook(clt_tensor *t, clt_tensor_hook_fn fn, void *user,
                                            clt_hook **handle);

/* A post-accumulate-grad hook: called with the leaf t whose grad was just
 * updated (borrowed; clt_grad(t) reads the new gradient).  A status other
 * than CLT_OK stops the backward pass as a tensor hook's does. */
typedef clt_status (*clt_post_accumulate_grad_hook_fn)(void *user, clt_tensor *t);

/* Like t.register_post_accumulate_grad_hook(fn) (torch 2.1): fn runs on
 * the leaf t after each backward pass has added its gradient to t's grad.
 * A leaf with such a hook gets its gradient as soon as every part of the
 * pass that leads to it is done, not at the end of the pass: this is what
 * DDP-style gradient bucketing needs to start reducing a bucket of
 * parameters while backward is still computing the earlier layers'
 * gradients (overlapping communication with backward).  The price: a pass
 * that fails after that point has already updated those leaves (the
 * others, as clt_backward says, change only when the whole pass succeeds).
 * t must be a leaf that requires grad (CLT_ERR_INVALID_ARGUMENT).  handle
 * as for clt_tensor_register_hook. */
CLT_API clt_status clt_tensor_register_post_accumulate_grad_hook(
    clt_tensor *t, clt_post_accumulate_grad_hook_fn fn, void *user, clt_hook **handle);

/* Like handle.remove(): the hook no longer runs (the tensor or graph it was
 * on may be gone already), and the handle is released.  NULL does
 * nothing. */
CLT_API void clt_hook_remove(clt_hook *handle);

/* The function a checkpoint runs: reads the n inputs (borrowed) and writes
 * up to CLT_CHECKPOINT_MAX_OUTPUTS new tensors to outputs, their count to
 * *m.  It must compute the same thing each time it is called with the same
 * values: it runs once forward and once more during backward.  Tensors it
 * reaches through user (a layer's parameters) are allowed: they receive
 * their gradients as if the function had run plainly.  A computed tensor
 * that requires grad must be passed in inputs, not reached through user
 * (clt_checkpoint refuses it, CLT_ERR_INVALID_ARGUMENT).  Hooks the
 * function registers on its intermediates run when it runs again in
 * backward; clt_retain_grad on them keeps nothing there. */
typedef clt_status (*clt_checkpoint_fn)(void *user, clt_tensor *const *inputs, size_t n,
                                        clt_tensor **outputs, size_t *m);

#define CLT_CHECKPOINT_MAX_OUTPUTS 16

/* Like torch.utils.checkpoint.checkpoint(fn, *inputs, use_reentrant=False):
 * runs fn with recording off, so that none of its intermediate results is
 * kept for backward (the memory of one call instead of all its saved
 * tensors), and records one node, CheckpointBackward, for all its outputs.
 * Its backward runs fn again, with recording on, on detached copies of the
 * inputs and backpropagates through that, so the gradients are the plain
 * run's (the same bits on one device, when no input feeds both fn and the
 * rest of the graph: their sum then adds in another order).  The random
 * generators (every clt_generator and the default one) are set back to
 * where they were when fn first ran, so Dropout draws the same masks, and
 * restored afterwards (torch's preserve_rng_state; another thread drawing
 * from a generator meanwhile would disturb this).  With recording off (or
 * nothing requiring grad) fn simply runs.
 *
 * *outputs is a new array of *m new tensors (the outputs of fn, as new
 * handles on them): release each with clt_tensor_free, then the array with
 * clt_free.  On failure *outputs is NULL and *m 0. */
CLT_API clt_status clt_checkpoint(clt_checkpoint_fn fn, void *user, clt_tensor *const *inputs,
                                  size_t n, clt_tensor ***outputs, size_t *m);

/* ---- custom functions: torch.autograd.Function ----------------------------- */

/* The state of one application of a custom function (torch's ctx): made by
 * clt_function_apply, handed to its forward and backward callbacks
 * (borrowed: valid during the call only), released by the library with the
 * graph. */
typedef struct clt_function_ctx clt_function_ctx;

#define CLT_FUNCTION_MAX_OUTPUTS 16
#define CLT_FUNCTION_MAX_SAVED 6

/* Forward: computes up to CLT_FUNCTION_MAX_OUTPUTS new tensors from the n
 * inputs (borrowed) into outputs, their count into *m.  It runs with grad
 * mode off (nothing it does is recorded); it may save tensors for backward
 * (clt_function_save_for_backward), mark outputs non-differentiable and read
 * clt_function_needs_input_grad.  Each output is a new reference that the
 * library takes: an input returned as an output is retained first
 * (clt_tensor_retain).  A
 * status other than CLT_OK fails clt_function_apply with it and the
 * callback's message (its own, or that of the library call that failed). */
typedef clt_status (*clt_function_forward_fn)(clt_function_ctx *ctx, void *user,
                                              clt_tensor *const *inputs, size_t n,
                                              clt_tensor **outputs, size_t *m);

/* Backward: from grad_outputs (m borrowed tensors, one per output of
 * forward, each of its output's shape; zeros where no gradient reached an
 * output, as torch's materialize_grads) sets grad_inputs[k] (n slots, NULL
 * on entry) to a new tensor, the gradient of input k, or leaves it NULL (no
 * gradient: torch's None).  The library takes each such tensor (whichever
 * scope made it); a grad_output passed on as it came (an identity's
 * backward) stays borrowed: the library takes its own handle.  A gradient must be of its input's shape or one that sums
 * to it (torch's sum_to: broadcast dimensions) and on its device; it is
 * converted to the input's dtype.  Gradients for inputs that need none are
 * dropped.  It runs in grad mode off, except in a pass with create_graph,
 * where its ops are recorded and the saved tensors (and grad_outputs) carry
 * their history, so that its gradients are differentiable (unless the
 * function is once_differentiable).  A status other than CLT_OK stops the
 * backward pass with that status; its message becomes
 * "clt_backward: <Name>Backward: <the callback's message>". */
typedef clt_status (*clt_function_backward_fn)(clt_function_ctx *ctx, void *user,
                                               const clt_tensor *const *grad_outputs, size_t m,
                                               clt_tensor **grad_inputs, size_t n);

/* A custom function, like a subclass of torch.autograd.Function.  name
 * gives the grad_fn name "<name>Backward" (at most 64 characters, letters,
 * digits and '_'); free_user, when not NULL, releases the user pointer
 * given to clt_function_apply; once_differentiable (torch's decorator):
 * backward computes without recording even under create_graph, and a
 * gradient it gave refuses to be differentiated again ("the derivative for
 * '<name>Backward' is not implemented"). */
typedef struct clt_function {
    const char *name;
    clt_function_forward_fn forward;
    clt_function_backward_fn backward;
    void (*free_user)(void *user);
    int once_differentiable;
} clt_function;

/* Like MyFunction.apply(*inputs): runs fn->forward on the n inputs with
 * grad mode off and, when grad mode is on and an input requires grad,
 * records one node, "<name>Backward", for its floating and complex outputs
 * that are not marked non-differentiable: those require grad, and backward
 * passes through them run fn->backward (a complex output's grad_output is
 * complex, dL/dz*; a complex gradient may go to a complex input only).  user is handed to both callbacks; with
 * fn->free_user the library owns it from this call on, failure included,
 * and releases it when the node goes (with the graph, or when a backward
 * pass without retain_graph frees the saved tensors), or before returning
 * when nothing was recorded.  fn itself need not outlive the call.
 *
 * *outputs is a new array of *m new tensors (the outputs of forward, as new
 * handles on them): release each with clt_tensor_free, then the array with
 * clt_free.  On failure *outputs is NULL and *m 0.  Errors: a NULL output,
 * more than CLT_FUNCTION_MAX_OUTPUTS, a bad name or missing callback
 * (CLT_ERR_INVALID_ARGUMENT), or forward's own status. */
CLT_API clt_status clt_function_apply(const clt_function *fn, void *user,
                                      clt_tensor *const *inputs, size_t n,
                                      clt_tensor ***outputs, size_t *m);

/* Like ctx.save_for_backward(*tensors), from forward: keeps handles on the
 * n tensors (inputs, outputs or intermediates), at most
 * CLT_FUNCTION_MAX_SAVED in all over the calls, for backward
 * (clt_function_saved_tensor).  Changing one in place before backward
 * makes backward fail, as torch's version check.  An input or output saved
 * carries its history in a pass with create_graph. */
CLT_API clt_status clt_function_save_for_backward(clt_function_ctx *ctx,
                                                  const clt_tensor *const *tensors, size_t n);

/* Like ctx.saved_tensors[k], from backward: *out is a borrowed handle,
 * valid until backward returns.  *out = NULL and CLT_ERR_INVALID_ARGUMENT
 * outside backward or for k past what was saved. */
CLT_API clt_status clt_function_saved_tensor(clt_function_ctx *ctx, size_t k,
                                             const clt_tensor **out);

/* Like ctx.needs_input_grad[k]: 1 when input k required grad with grad mode
 * on when the function was applied; 0 otherwise (k out of range, NULL). */
CLT_API int clt_function_needs_input_grad(const clt_function_ctx *ctx, size_t k);

/* Like ctx.mark_non_differentiable(outputs[k]), from forward: output k
 * will not require grad (an index, a mask); backward still gets a
 * gradient for it, zeros.  k past CLT_FUNCTION_MAX_OUTPUTS, or a call
 * outside forward, is CLT_ERR_INVALID_ARGUMENT; k past the outputs
 * forward gives fails clt_function_apply. */
CLT_API clt_status clt_function_mark_non_differentiable(clt_function_ctx *ctx, size_t k);

/* ---- torch.autograd.functional ------------------------------------------- */

/* The function these differentiate: reads the n inputs (borrowed) and
 * writes up to CLT_FUNCTIONAL_MAX_OUTPUTS new tensors to outputs, their
 * count to *m (the library takes them: an input returned as an output is
 * retained first, clt_tensor_retain).  It runs with grad mode on. */
typedef clt_status (*clt_functional_fn)(void *user, clt_tensor *const *inputs, size_t n,
                                        clt_tensor **outputs, size_t *m);

#define CLT_FUNCTIONAL_MAX_OUTPUTS 16

/* The options of the functional API; a zeroed struct (or NULL) gives
 * torch's defaults.  create_graph: the results have a history (through the
 * inputs that require grad) and can be differentiated again; without it
 * they are detached.  strict: an output or gradient independent of an
 * input is an error (CLT_ERR_INVALID_ARGUMENT, torch's message) instead of
 * zeros. */
typedef struct clt_functional_opts {
    int create_graph;
    int strict;
} clt_functional_opts;

/* How the functional API works, as torch's: fn runs on fresh copies of the
 * inputs that require grad (with create_graph, inputs that require grad
 * are views that keep their history), the derivatives come from
 * clt_autograd_grad_ex, and forward-mode products (jvp, hvp) use the
 * double-backward trick, so every op of fn must support create_graph (see
 * clt_grad_opts) for those, for hessian, and for create_graph.  Inputs and
 * outputs must be floating.  Result arrays are new: release each tensor
 * with clt_tensor_free, then the array with clt_free; on failure each
 * array out is NULL and each count 0. */

/* Like torch.autograd.functional.jacobian(fn, inputs, create_graph,
 * strict): *jac is a new array of *m x n tensors, jac[i * n + j] the
 * Jacobian of output i with respect to input j, of shape
 * out_i.shape + in_j.shape; *m is the number of outputs. */
CLT_API clt_status clt_jacobian(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                                size_t n, const clt_functional_opts *opts, clt_tensor ***jac,
                                size_t *m);

/* Like torch.autograd.functional.hessian(fn, inputs, create_graph, strict):
 * fn must give one output of one element; *hess is a new array of n x n
 * tensors, hess[i * n + j] of shape in_i.shape + in_j.shape.  It is the
 * Jacobian of the Jacobian (computed with create_graph), as torch's, so n
 * is at most CLT_FUNCTIONAL_MAX_OUTPUTS. */
CLT_API clt_status clt_hessian(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                               size_t n, const clt_functional_opts *opts, clt_tensor ***hess);

/* Like torch.autograd.functional.vjp(fn, inputs, v, create_graph, strict):
 * v^T J for v of nv tensors, one per output and of its shape (NULL, with
 * nv 0, for an fn of one one-element output).  *outputs is a new array of
 * fn's *m outputs (detached without create_graph) and *vjp one of n
 * tensors, each of its input's shape. */
CLT_API clt_status clt_vjp(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                           size_t n, clt_tensor *const *v, size_t nv,
                           const clt_functional_opts *opts, clt_tensor ***outputs, size_t *m,
                           clt_tensor ***vjp);

/* Like torch.autograd.functional.jvp: J v for v of n tensors, one per input
 * and of its shape (NULL for one one-element input).  *outputs as for
 * clt_vjp; *jvp a new array of *m tensors, each of its output's shape. */
CLT_API clt_status clt_jvp(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                           size_t n, clt_tensor *const *v, const clt_functional_opts *opts,
                           clt_tensor ***outputs, size_t *m, clt_tensor ***jvp);

/* Like torch.autograd.functional.vhp and hvp: v^T H and H v for fn of one
 * one-element output, v of n tensors shaped as the inputs (NULL for one
 * one-element input).  *output is a new tensor, fn's output; *res a new
 * array of n tensors, each of its input's shape. */
CLT_API clt_status clt_vhp(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                           size_t n, clt_tensor *const *v, const clt_functional_opts *opts,
                           clt_tensor **output, clt_tensor ***res);
CLT_API clt_status clt_hvp(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                           size_t n, clt_tensor *const *v, const clt_functional_opts *opts,
                           clt_tensor **output, clt_tensor ***res);

/* ---- gradcheck -------------------------------------------------------------- */

/* The tolerances of clt_gradcheck; a zeroed struct (or NULL) gives torch's
 * eps 1e-6, atol 1e-5, rtol 1e-3 (a zero field takes its default). */
typedef struct clt_gradcheck_opts {
    double eps, atol, rtol;
} clt_gradcheck_opts;

/* Like torch.autograd.gradcheck(fn, inputs, eps, atol, rtol) (slow mode):
 * compares, for every output and every input that requires grad, the
 * Jacobian that backward gives (one clt_autograd_grad per output element)
 * with central finite differences (fn run with grad mode off on copies of
 * the inputs, one element moved by +-eps); they agree when
 * |analytical - numerical| <= atol + rtol |numerical| everywhere.  The
 * inputs that require grad must be float64 (CLT_ERR_DTYPE_MISMATCH: torch
 * only warns, the library cannot), at least one must, and each output must
 * be floating.  CLT_OK when they agree; otherwise
 * CLT_ERR_INVALID_ARGUMENT with the first mismatch in the message: "Jacobian
 * mismatch for output i with respect to input j, at (output element, input
 * element) (a, b): numerical x, analytical y", outputs that do not require
 * grad having a numerical Jacobian that must be zero.  fn's own failure is
 * its status.  Waits on the device (reads values back); never prints. */
CLT_API clt_status clt_gradcheck(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                                 size_t n, const clt_gradcheck_opts *opts);

/* Like torch.autograd.gradgradcheck(fn, inputs, grad_outputs): gradcheck
 * of the function (inputs, grad_outputs) -> the gradients of fn's outputs
 * weighted by grad_outputs with respect to the inputs that require grad,
 * computed with create_graph.  grad_outputs holds one float64 tensor per
 * output of fn (ngrad of them), or is NULL (ngrad 0) for random normal
 * ones drawn from the default generator, as torch's. */
CLT_API clt_status clt_gradgradcheck(clt_functional_fn fn, void *user,
                                     clt_tensor *const *inputs, size_t n,
                                     clt_tensor *const *grad_outputs, size_t ngrad,
                                     const clt_gradcheck_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
