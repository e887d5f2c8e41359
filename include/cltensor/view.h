/* cltensor/view.h: views and layout operations with PyTorch's semantics:
 * reshape, view, transpose, permute, narrow, slice, squeeze, unsqueeze,
 * expand, flatten, contiguous, cat and stack; split, chunk, unbind and
 * diagonal (views); flip, roll, repeat, tile, repeat_interleave, tril,
 * triu, diag and pad (copies).
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

/* ---- splits and diagonals (views) ----------------------------------------
 * clt_split, clt_split_sizes, clt_chunk and clt_unbind hand out an array of
 * *n new views of t, in order along dim, sharing t's storage: the array is
 * the caller's, released with clt_free, and each of its *n tensors with
 * clt_tensor_free (the array may be freed first).  On failure *outs is NULL,
 * *n is 0 and nothing is to be released.  The views share one backward
 * node, as in PyTorch (SplitBackward0, SplitWithSizesBackward0,
 * UnbindBackward0), which writes t's gradient once: the pieces' gradients
 * in order, zeros for the pieces that got none.  Each view is a view as
 * any other: an in-place op on one changes t and bumps the version of
 * their storage. */

/* Like torch.split(t, split_size, dim): pieces of split_size elements
 * along dim, the last one smaller when the size does not divide (a
 * dimension of size 0 gives one empty piece).  split_size must be
 * positive, or 0 for a dimension of size 0 ("split_size can only be 0 if
 * dimension size is 0"); a 0-d t is refused. */
CLT_API clt_status clt_split(const clt_tensor *t, int64_t split_size, int dim,
                             clt_tensor ***outs, size_t *n);

/* Like torch.split(t, [sizes...], dim): k pieces of sizes[0..k-1]
 * elements, which must be non-negative and add up to t's size along dim
 * (CLT_ERR_INVALID_ARGUMENT otherwise). */
CLT_API clt_status clt_split_sizes(const clt_tensor *t, const int64_t *sizes, size_t k, int dim,
                                   clt_tensor ***outs, size_t *n);

/* Like torch.chunk(t, chunks, dim): pieces of ceil(size / chunks) elements
 * (so possibly fewer than chunks of them); chunks must be positive. */
CLT_API clt_status clt_chunk(const clt_tensor *t, int64_t chunks, int dim, clt_tensor ***outs,
                             size_t *n);

/* Like torch.unbind(t, dim): the size(dim) slices of t along dim, each
 * without that dimension. */
CLT_API clt_status clt_unbind(const clt_tensor *t, int dim, clt_tensor ***outs, size_t *n);

/* Like torch.diagonal(t, offset, dim1, dim2): the diagonal of the
 * dimensions dim1 and dim2 (offset above it when positive, below when
 * negative) as the last dimension of a view without them; empty when the
 * offset passes the matrix.  t needs 2 dimensions or more, and dim1 and
 * dim2 must differ.  Differentiable (DiagonalBackward0).  New tensor
 * sharing t's storage. */
CLT_API clt_status clt_diagonal(const clt_tensor *t, int64_t offset, int dim1, int dim2,
                                clt_tensor **out);

/* ---- reordering and repeating copies ----------------------------------------
 * Each hands out a new tensor with storage of its own (release with
 * clt_tensor_free), of t's dtype (every dtype); t may be any view.
 * Enqueued without waiting, except clt_repeat_interleave_tensor (see
 * there).  Differentiable, with PyTorch's node names. */

/* Like torch.flip(t, dims): the elements reversed along each of the k dims
 * (no dim twice: CLT_ERR_INVALID_ARGUMENT).  FlipBackward0. */
CLT_API clt_status clt_flip(const clt_tensor *t, const int *dims, int k, clt_tensor **out);

/* Like torch.roll(t, shifts, dims): element i along dims[j] moves to
 * (i + shifts[j]) mod size, for j < k.  k 0 rolls t flattened by
 * shifts[0] (dims is not read) and keeps t's shape, as torch.roll without
 * dims.  RollBackward0. */
CLT_API clt_status clt_roll(const clt_tensor *t, const int64_t *shifts, const int *dims, int k,
                            clt_tensor **out);

/* Like Tensor.repeat(*repeats): t tiled repeats[d] times along each of k
 * dims, k >= ndim (t's shape gets leading 1s first); repeats are
 * non-negative.  RepeatBackward0. */
CLT_API clt_status clt_repeat(const clt_tensor *t, const int64_t *repeats, int k,
                              clt_tensor **out);

/* Like torch.tile(t, reps): clt_repeat with reps given leading 1s when k
 * is less than t's number of dimensions. */
CLT_API clt_status clt_tile(const clt_tensor *t, const int64_t *reps, int k, clt_tensor **out);

/* Like torch.repeat_interleave(t, repeats, dim): each element (slice along
 * *dim) repeated `repeats` times in place; dim NULL repeats the elements of
 * t flattened, as dim=None.  repeats >= 0.  IndexSelectBackward0, as in
 * PyTorch. */
CLT_API clt_status clt_repeat_interleave(const clt_tensor *t, int64_t repeats, const int *dim,
                                         clt_tensor **out);

/* The same with an int64 tensor of repeats, one per element along *dim
 * (or one for all), as torch.repeat_interleave(t, repeats_tensor, dim).
 * The result's size depends on the values, so this call reads repeats
 * back and waits for them (torch does too).  Negative repeats, or a count
 * other than 1 or t's size along dim, are CLT_ERR_INVALID_ARGUMENT. */
CLT_API clt_status clt_repeat_interleave_tensor(const clt_tensor *t, const clt_tensor *repeats,
                                                const int *dim, clt_tensor **out);

/* Like torch.tril(t, diagonal) and torch.triu: the lower (upper) triangle of
 * the last two dimensions from the given diagonal (0 the main one, positive
 * above it), zeros elsewhere; t needs 2 dimensions or more.  TrilBackward0,
 * TriuBackward0. */
CLT_API clt_status clt_tril(const clt_tensor *t, int64_t diagonal, clt_tensor **out);
CLT_API clt_status clt_triu(const clt_tensor *t, int64_t diagonal, clt_tensor **out);

/* Like torch.diag(t, diagonal): a 1-D t becomes the given diagonal of a
 * square matrix of zeros (size numel + |diagonal|); a 2-D t gives a copy of
 * its diagonal.  Other dimensions: CLT_ERR_INVALID_ARGUMENT.
 * DiagBackward0. */
CLT_API clt_status clt_diag(const clt_tensor *t, int64_t diagonal, clt_tensor **out);

/* F.pad's modes. */
typedef enum clt_pad_mode {
    CLT_PAD_CONSTANT = 0,
    CLT_PAD_REFLECT = 1,
    CLT_PAD_REPLICATE = 2,
    CLT_PAD_CIRCULAR = 3
} clt_pad_mode;

/* Like torch.nn.functional.pad(t, pad, mode, value) of PyTorch 1.13.  pad
 * holds npad (even) sizes, pairs (before, after) from the last dimension
 * backwards: (left, right) of the last, then (top, bottom) of the one
 * before, and so on; negative sizes crop.
 * - CLT_PAD_CONSTANT: any dtype and number of dimensions, npad / 2 at most
 *   t's number of dimensions; value fills (as clt_full's value); a result
 *   size below 0 is refused.  ConstantPadNdBackward0.
 * - CLT_PAD_REFLECT (mirror without the edge), CLT_PAD_REPLICATE (the edge
 *   repeated): float32 and float64 (as torch 1.13's kernels); npad 2 for
 *   2-D or 3-D t, 4 for 3-D or 4-D, 6 for 4-D or 5-D ("Only 2D, 3D, 4D, 5D
 *   padding with non-constant padding are supported for now" otherwise);
 *   every dimension but a batch one non-empty, each result size at least
 *   1, and for reflect each pad smaller than its dimension ("Padding size
 *   should be less than the corresponding input dimension").  value must
 *   be 0.  ReflectionPad1DBackward0 ... ReplicationPad3DBackward0: the
 *   gradient adds the mirrored or clamped places back (index_add, in a
 *   fixed order).
 * - CLT_PAD_CIRCULAR (wrap around): any dtype; npad == 2 (ndim - 2), 3 to 5
 *   dimensions, each pad no larger than its dimension ("Padding value
 *   causes wrapping around more than once"); negative pads crop first and
 *   the positive ones wrap around what is left, as in PyTorch 1.13.  The
 *   node is named torch::autograd::CopySlices, as PyTorch 1.13's.
 * Errors are CLT_ERR_INVALID_ARGUMENT (CLT_ERR_DTYPE_UNSUPPORTED for an
 * integer or bool t in reflect or replicate mode).  New tensor. */
CLT_API clt_status clt_pad(const clt_tensor *t, const int64_t *pad, int npad, clt_pad_mode mode,
                           double value, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
