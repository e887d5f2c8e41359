/* cltensor/view.h: views and layout operations with PyTorch's semantics:
 * reshape, view, transpose, permute, narrow, slice, squeeze, unsqueeze,
 * expand, flatten, contiguous, cat and stack.
 *
 * Views (view, transpose, permute, narrow, slice, squeeze, unsqueeze,
 * expand, and reshape or flatten when a view is possible) share storage with
 * their input: they change shape, strides and offset only, and launch no
 * kernel.  Views are read-only in this API, so sharing is never observable
 * through values; every op accepts them as inputs.  Each function hands out
 * a new handle: release it with clt_tensor_free (the input stays valid and
 * must be released on its own).
 *
 * Dimensions wrap like Python indices: -1 is the last one.  A dimension
 * outside [-ndim, ndim-1] gives CLT_ERR_DIM_OUT_OF_RANGE ("Dimension out of
 * range (expected to be in range of [-2, 1], but got 3)"); a 0-dimensional
 * tensor accepts dims -1 and 0 as in PyTorch.  On any error the inputs are
 * unchanged.
 */
#ifndef CLTENSOR_VIEW_H
#define CLTENSOR_VIEW_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Like Tensor.view: the same elements under a new shape, without copying.
 * One entry of shape may be -1 and is inferred.  CLT_ERR_INVALID_ARGUMENT
 * when the element counts differ, CLT_ERR_NOT_CONTIGUOUS when t's strides
 * allow no such view (use clt_reshape).  New tensor sharing t's storage. */
CLT_API clt_status clt_view(const clt_tensor *t, int ndim, const int64_t *shape,
                            clt_tensor **out);

/* Like torch.reshape: a view when possible, otherwise a contiguous copy
 * (enqueued, no wait).  One entry may be -1.  New tensor. */
CLT_API clt_status clt_reshape(const clt_tensor *t, int ndim, const int64_t *shape,
                               clt_tensor **out);

/* Like torch.flatten: dims start_dim..end_dim merged into one (a view when
 * possible, as reshape).  A 0-dimensional tensor gives shape [1].  New
 * tensor. */
CLT_API clt_status clt_flatten(const clt_tensor *t, int start_dim, int end_dim,
                               clt_tensor **out);

/* Dims d0 and d1 swapped.  New tensor sharing t's storage. */
CLT_API clt_status clt_transpose(const clt_tensor *t, int d0, int d1, clt_tensor **out);

/* Dims reordered: dimension i of the result is dimension dims[i] of t.
 * ndim must equal t's number of dimensions and dims must name each of them
 * once.  New tensor sharing t's storage. */
CLT_API clt_status clt_permute(const clt_tensor *t, int ndim, const int *dims,
                               clt_tensor **out);

/* Like torch.narrow: `length` elements of dim from `start` (negative start
 * counts from the end).  New tensor sharing t's storage. */
CLT_API clt_status clt_narrow(const clt_tensor *t, int dim, int64_t start, int64_t length,
                              clt_tensor **out);

/* Like t[..., start:end:step, ...] on dim in Python: negative start and end
 * count from the end, both are clamped to the dimension as Python does
 * (pass INT64_MAX as end for "to the end"), step must be positive.  New
 * tensor sharing t's storage. */
CLT_API clt_status clt_slice(const clt_tensor *t, int dim, int64_t start, int64_t end,
                             int64_t step, clt_tensor **out);

/* Removes dim when its size is 1; otherwise the same shape (as PyTorch).
 * New tensor sharing t's storage. */
CLT_API clt_status clt_squeeze(const clt_tensor *t, int dim, clt_tensor **out);

/* Removes every dimension of size 1.  New tensor sharing t's storage. */
CLT_API clt_status clt_squeeze_all(const clt_tensor *t, clt_tensor **out);

/* Inserts a dimension of size 1 at dim, which may be in [-ndim-1, ndim].
 * CLT_ERR_TOO_MANY_DIMS beyond CLT_MAX_DIMS.  New tensor sharing t's
 * storage. */
CLT_API clt_status clt_unsqueeze(const clt_tensor *t, int dim, clt_tensor **out);

/* Like Tensor.expand: size-1 dimensions (and new leading ones) repeated to
 * `shape` with stride 0; -1 keeps a size.  CLT_ERR_SHAPE_MISMATCH when a
 * non-singleton size would change.  New tensor sharing t's storage. */
CLT_API clt_status clt_expand(const clt_tensor *t, int ndim, const int64_t *shape,
                              clt_tensor **out);

/* t itself (a new handle on the same storage) when it is contiguous,
 * otherwise a contiguous copy (enqueued, no wait).  New tensor. */
CLT_API clt_status clt_contiguous(const clt_tensor *t, clt_tensor **out);

/* Like torch.cat: the n tensors ts[0..n-1] joined along dim.  All on one
 * device (CLT_ERR_DEVICE_MISMATCH otherwise); the result dtype is their
 * promoted type (clt_promote_types).  Shapes must agree except in dim
 * (CLT_ERR_SHAPE_MISMATCH names them); 1-D tensors of shape [0] are skipped
 * as PyTorch does.  The tensors may be non-contiguous views.  New tensor
 * with its own storage. */
CLT_API clt_status clt_cat(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out);

/* Like torch.stack: the n tensors, all of one shape, joined along a new
 * dimension dim in [-ndim-1, ndim].  Otherwise as clt_cat.  New tensor. */
CLT_API clt_status clt_stack(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
