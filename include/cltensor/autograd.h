/* cltensor/autograd.h: reverse-mode automatic differentiation, like
 * torch.autograd.
 *
 * A floating-point tensor may require gradients (clt_set_requires_grad).
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
 * dtype), clt_clone, and the index ops of index.h but one_hot and the
 * in-place forms.
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
 * through one graph at once.
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
 * leaf.  Static storage. */
CLT_API const char *clt_grad_fn_name(const clt_tensor *t);

/* Like t.grad: a new handle on the gradient accumulated into the leaf t
 * (it shares the storage: it sees what later backward passes add and what
 * clt_clip_grad_norm or clt_zero_grad(t, 0) write), or *out = NULL with CLT_OK when there is none yet.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_grad(const clt_tensor *t, clt_tensor **out);

/* Clears t's gradient: drops it (set_to_none, PyTorch's default for
 * optimizers), or sets it to zeros in place.  No gradient: nothing to do. */
CLT_API clt_status clt_zero_grad(clt_tensor *t, int set_to_none);

/* Like t.backward(grad, retain_graph=...): computes the gradients of t with
 * respect to every leaf it depends on and adds them to their grad.  grad is
 * t's own gradient, of t's shape and device; NULL means 1 and needs t to
 * have one element ("grad can be implicitly created only for scalar
 * outputs").  retain_graph 0 frees the graph's saved tensors. Enqueues
 * kernels only.  The leaves' gradients change only when the whole pass
 * succeeds: a pass that fails (out of device memory, the driver refusing
 * a launch, say) adds nothing to any grad, so the forward and backward may
 * simply be run again (every sum is made apart first, then each gradient's
 * storage takes its sum's buffer, which cannot fail); with
 * retain_graph 0 it has freed the saved tensors of the part it ran, so
 * that a second backward through the same graph is the error above. */
CLT_API clt_status clt_backward(clt_tensor *t, const clt_tensor *grad, int retain_graph);

/* Like t.detach(): a new handle on t's data that requires no gradients and
 * has no history.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_detach(const clt_tensor *t, clt_tensor **out);

/* Turns recording on or off for the calling thread (torch.no_grad is
 * clt_set_grad_enabled(0)) and returns the previous setting, to restore:
 *     int was = clt_set_grad_enabled(0); ... clt_set_grad_enabled(was); */
CLT_API int clt_set_grad_enabled(int enabled);

/* 1 when the calling thread records operations (the default). */
CLT_API int clt_is_grad_enabled(void);

#ifdef __cplusplus
}
#endif

#endif
