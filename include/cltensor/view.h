/* cltensor/view.h: views and layout operations with PyTorch's semantics:
 * reshape, view, transpose, permute, narrow, slice, squeeze, unsqueeze,
 * expand, flatten, contiguous, cat and stack; split, chunk, unbind and
 * diagonal (views); flip, roll, repeat, tile, repeat_interleave, tril,
 * triu, diag and pad (copies); and the rest of torch's shape functions
 * (unflatten, movedim, as_strided, tensor_split, hstack, rot90, pdist, the
 * scatters, ...: the last section).
 *
 * Views (view, transpose, permute, narrow, slice, squeeze, unsqueeze,
 * expand, and reshape or flatten when a view is possible) share storage with
 * their input: they change shape, strides and offset only, and launch no
 * kernel.  Every op accepts them as inputs, and an in-place op on a view
 * (ops.h's clt_add_, ...) changes its input, as in PyTorch.  They (and
 * split, chunk, unbind, diagonal, select, unfold, as_strided, ...: every
 * recorded op whose result shares its input's storage and dtype) are
 * differentiable views, as torch's: an in-place op on one reaches its
 * base's history (CopySlices), and one whose base changed in place since
 * takes the base's new history (AsStridedBackward0); see ops.h.  Each function
 * hands out a new handle: release it with clt_tensor_free (the input stays
 * valid and must be released on its own).
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

/* torch.select(t, dim, index), t[index] on dim 0 in Python (h_n[-1] of a
 * recurrent layer): t without dim, at index along it (negative counts from
 * the end).  Errors in torch's words: a 0-dim t (CLT_ERR_INDEX_OUT_OF_RANGE,
 * "select() cannot be applied to a 0-dim tensor."), dim out of range
 * (CLT_ERR_DIM_OUT_OF_RANGE), index outside [-size, size)
 * (CLT_ERR_INDEX_OUT_OF_RANGE, "select(): index 5 out of range for tensor
 * of size [3, 4] at dimension 0").  SelectBackward0: the gradient is g
 * written into zeros at index (clt_select_scatter).  New tensor sharing
 * t's storage. */
CLT_API clt_status clt_select(const clt_tensor *t, int dim, int64_t index, clt_tensor **out);

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
 * above it), zeros elsewhere; t needs 2 dimensions or more; complex t too.
 * TrilBackward0, TriuBackward0 (recorded with create_graph: differentiable
 * again). */
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
 *   repeated): float32 and float64 (as torch 1.13's kernels), and float16
 *   (through float32, the casts recorded: gradients in half); npad 2 for
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

/* ---- more views, splits, joins and scatters (torch 1.13) ------------------
 * Each hands out new handles (release with clt_tensor_free; the split
 * arrays as clt_split's, with clt_free) and leaves its inputs unchanged on
 * failure.  Those called views share t's storage, as torch's do (an
 * in-place op on one changes t); the others have storage of their own.
 * Every dtype unless said; differentiable for floating dtypes, with the
 * node names given. */

/* Like torch.unflatten(t, dim, sizes): dim replaced by k dims of the
 * given sizes, whose product must be t's size along dim; one of them may
 * be -1 and is inferred.  k >= 1 ("unflatten: sizes must be non-empty").
 * A view (ViewBackward0). */
CLT_API clt_status clt_unflatten(const clt_tensor *t, int dim, const int64_t *sizes, int k,
                                 clt_tensor **out);

/* Like torch.movedim(t, source, destination) (also torch.moveaxis): dim
 * source[i] of t becomes dim destination[i] of the result, for i < k; the
 * other dims keep their order.  No dim twice in either list.  A view
 * (PermuteBackward0). */
CLT_API clt_status clt_movedim(const clt_tensor *t, const int *source, const int *destination,
                               int k, clt_tensor **out);

/* Like torch.swapaxes(t, axis0, axis1) (also torch.swapdims): clt_transpose.
 * A view (TransposeBackward0). */
CLT_API clt_status clt_swapaxes(const clt_tensor *t, int axis0, int axis1, clt_tensor **out);

/* Like torch.ravel: t flattened to 1-D, a view when possible and a
 * contiguous copy otherwise (as clt_reshape). */
CLT_API clt_status clt_ravel(const clt_tensor *t, clt_tensor **out);

/* Like Tensor.view_as, Tensor.reshape_as and Tensor.expand_as: clt_view,
 * clt_reshape and clt_expand to other's shape (only its shape is read). */
CLT_API clt_status clt_view_as(const clt_tensor *t, const clt_tensor *other, clt_tensor **out);
CLT_API clt_status clt_reshape_as(const clt_tensor *t, const clt_tensor *other,
                                  clt_tensor **out);
CLT_API clt_status clt_expand_as(const clt_tensor *t, const clt_tensor *other, clt_tensor **out);

/* Like torch.as_strided(t, size, stride, storage_offset): a view of t's
 * storage with the given ndim sizes and strides (in elements) from
 * *storage_offset (an element of the storage, not of t; NULL keeps t's).
 * Sizes, strides and the offset must be non-negative, and every element
 * reached must lie in the storage (CLT_ERR_INVALID_ARGUMENT: "setStorage:
 * sizes [2, 2], strides [1, 20], storage offset 1, and itemsize 4
 * requiring a storage size of 92 are out of bounds for storage of size
 * 48").  AsStridedBackward0: the gradient is summed into t's storage
 * positions (an element reached twice gets both), and shared equally
 * among the elements of t that alias one position. */
CLT_API clt_status clt_as_strided(const clt_tensor *t, int ndim, const int64_t *size,
                                  const int64_t *stride, const int64_t *storage_offset,
                                  clt_tensor **out);

/* Like torch.atleast_1d, atleast_2d and atleast_3d of one tensor: a view
 * with leading (and for atleast_3d of 1-D or 2-D t, trailing) dims of size
 * 1 (ViewBackward0 from 0-d, UnsqueezeBackward0 otherwise).  When t has
 * enough dims torch hands out t itself; here a new handle on t's storage
 * with t's history: t's grad_fn, or for a leaf that requires grad an
 * AliasBackward0 node (the handle is not a leaf). */
CLT_API clt_status clt_atleast_1d(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_atleast_2d(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_atleast_3d(const clt_tensor *t, clt_tensor **out);

/* Like torch.tensor_split(t, sections, dim): `sections` (>= 1) views along
 * dim, the first size % sections of them one element longer.  Each piece
 * is a slice of t (SliceBackward0).  Outputs as clt_split's. */
CLT_API clt_status clt_tensor_split(const clt_tensor *t, int64_t sections, int dim,
                                    clt_tensor ***outs, size_t *n);

/* Like torch.tensor_split(t, indices, dim): k + 1 views along dim, cut
 * before each index (t[:i0], t[i0:i1], ..., t[ik-1:] with Python's slice
 * rules: negative indices count from the end, out-of-range ones clamp,
 * decreasing ones give empty pieces). */
CLT_API clt_status clt_tensor_split_indices(const clt_tensor *t, const int64_t *indices,
                                            size_t k, int dim, clt_tensor ***outs, size_t *n);

/* Like torch.hsplit, vsplit and dsplit: clt_tensor_split along dim 1 (dim
 * 0 for 1-D t), 0 and 2, for t of at least 1, 2 and 3 dimensions; with
 * sections, the size must divide by it ("torch.hsplit attempted to split
 * along dimension 1, but the size of the dimension 4 is not divisible by
 * the split_size 3!"). */
CLT_API clt_status clt_hsplit(const clt_tensor *t, int64_t sections, clt_tensor ***outs,
                              size_t *n);
CLT_API clt_status clt_vsplit(const clt_tensor *t, int64_t sections, clt_tensor ***outs,
                              size_t *n);
CLT_API clt_status clt_dsplit(const clt_tensor *t, int64_t sections, clt_tensor ***outs,
                              size_t *n);
CLT_API clt_status clt_hsplit_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                                      clt_tensor ***outs, size_t *n);
CLT_API clt_status clt_vsplit_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                                      clt_tensor ***outs, size_t *n);
CLT_API clt_status clt_dsplit_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                                      clt_tensor ***outs, size_t *n);

/* Like torch.hstack, vstack (also torch.row_stack), dstack and
 * column_stack of n tensors: clt_cat of clt_atleast_1d of each along dim 0
 * when the first is 1-D, otherwise dim 1 (hstack); of clt_atleast_2d
 * along dim 0 (vstack); of clt_atleast_3d along dim 2 (dstack); of each
 * tensor of 1 or 0 dims as a column [numel, 1] along dim 1
 * (column_stack).  Errors and dtypes as clt_cat's.  CatBackward0.  New
 * tensor. */
CLT_API clt_status clt_hstack(const clt_tensor *const *ts, size_t n, clt_tensor **out);
CLT_API clt_status clt_vstack(const clt_tensor *const *ts, size_t n, clt_tensor **out);
CLT_API clt_status clt_dstack(const clt_tensor *const *ts, size_t n, clt_tensor **out);
/* torch.row_stack: clt_vstack under its other name (its messages name
 * clt_row_stack).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_row_stack(const clt_tensor *const *ts, size_t n, clt_tensor **out);
CLT_API clt_status clt_column_stack(const clt_tensor *const *ts, size_t n, clt_tensor **out);

/* Like torch.rot90(t, k, [dim0, dim1]): t rotated k times by 90 degrees
 * from dim0 towards dim1 (k of any sign, taken mod 4).  t needs 2 dims or
 * more; dim0 and dim1 must differ.  As torch: odd k gives the transpose of
 * a flipped copy (its strides are not contiguous), k = 0 a copy.
 * Rot90Backward0.  New tensor with storage of its own. */
CLT_API clt_status clt_rot90(const clt_tensor *t, int64_t k, int dim0, int dim1,
                             clt_tensor **out);

/* Like torch.cartesian_prod of n 1-D tensors of one dtype: [prod numel, n]
 * rows of every combination, the last tensor varying fastest; StackBackward0,
 * new storage.  n 1: a new handle on that tensor with its history, as
 * clt_atleast_1d. */
CLT_API clt_status clt_cartesian_prod(const clt_tensor *const *ts, size_t n, clt_tensor **out);

/* Like torch.combinations(t, r, with_replacement): the [count, r] rows of
 * t's elements at indices i1 < i2 < ... < ir (<= with replacement) in
 * lexicographic order, for 1-D t and r >= 0; r 0 gives shape [0].  The
 * indices are made on the host (count * r int64s).  StackBackward0.  New
 * tensor. */
CLT_API clt_status clt_combinations(const clt_tensor *t, int64_t r, int with_replacement,
                                    clt_tensor **out);

/* Like torch.pdist(t, p): the p-norm distances between the N rows of a
 * 2-D floating t, pairs (i, j) with i < j in row-major order: shape
 * [N (N - 1) / 2].  p >= 0 (0 counts differing elements, INFINITY is the
 * largest difference).  PdistBackward0, with torch's formula: 0 where a
 * distance is 0 (and for p < 1 where a difference is), for p inf each
 * element at the largest difference gets the pair's gradient.  The pair
 * indices are made on the host.  New tensor. */
CLT_API clt_status clt_pdist(const clt_tensor *t, double p, clt_tensor **out);

/* Like torch.narrow_copy: clt_narrow's elements in a contiguous tensor of
 * their own.  Differentiable (torch 1.13 is not: its node is
 * NotImplemented); the node is CloneBackward0. */
CLT_API clt_status clt_narrow_copy(const clt_tensor *t, int dim, int64_t start, int64_t length,
                                   clt_tensor **out);

/* Like torch.select_scatter(t, src, dim, index), torch.slice_scatter(t,
 * src, dim, start, end, step) and torch.diagonal_scatter(t, src, offset,
 * dim1, dim2): a contiguous copy of t whose region torch.select,
 * t[..., start:end:step, ...] (as clt_slice: INT64_MAX as end for "to the
 * end") or torch.diagonal picks holds src instead.  src must have that
 * region's shape exactly (CLT_ERR_SHAPE_MISMATCH: "expected src to have a
 * size equal to the slice of self. src size = [2], slice size = [3]") and
 * is cast to t's dtype; an index outside the dimension is
 * CLT_ERR_INDEX_OUT_OF_RANGE.  SelectScatterBackward0,
 * SliceScatterBackward0, DiagonalScatterBackward0: t's gradient is g with
 * the region zeroed, src's the region of g.  New tensor. */
CLT_API clt_status clt_select_scatter(const clt_tensor *t, const clt_tensor *src, int dim,
                                      int64_t index, clt_tensor **out);
CLT_API clt_status clt_slice_scatter(const clt_tensor *t, const clt_tensor *src, int dim,
                                     int64_t start, int64_t end, int64_t step,
                                     clt_tensor **out);
CLT_API clt_status clt_diagonal_scatter(const clt_tensor *t, const clt_tensor *src,
                                        int64_t offset, int dim1, int dim2, clt_tensor **out);


/* ---- flips, diagflat and broadcasting ------------------------------------ */

/* torch.fliplr(t) (t at least 2-d: dim 1 reversed) and torch.flipud(t) (at
 * least 1-d: dim 0), clt_flip's copies; fewer dims are
 * CLT_ERR_SHAPE_MISMATCH ("Input must be >= 2-d.").  New tensor. */
CLT_API clt_status clt_fliplr(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_flipud(const clt_tensor *t, clt_tensor **out);
/* torch.diagflat(t, offset): t flattened as the diagonal (offset above it
 * when positive) of a square matrix, as clt_diag of the flattened t.  New
 * tensor. */
CLT_API clt_status clt_diagflat(const clt_tensor *t, int64_t offset, clt_tensor **out);
/* torch.broadcast_to(t, shape): clt_expand (a view; -1 keeps a size).  New
 * tensor sharing t's storage. */
CLT_API clt_status clt_broadcast_to(const clt_tensor *t, int ndim, const int64_t *shape,
                                    clt_tensor **out);
/* torch.broadcast_shapes(*shapes): the broadcast shape of the n shapes
 * (shapes[k] of ndims[k] sizes) written to the caller's out_shape (room for
 * CLT_MAX_DIMS sizes) and *out_ndim (0 for n 0).  Shapes that do not
 * broadcast are CLT_ERR_SHAPE_MISMATCH, negative sizes
 * CLT_ERR_INVALID_ARGUMENT; *out_ndim is then 0.  Nothing is allocated. */
CLT_API clt_status clt_broadcast_shapes(const int *ndims, const int64_t *const *shapes, size_t n,
                                        int *out_ndim, int64_t *out_shape);
/* torch.broadcast_tensors(*ts): *outs a new array of n views (recorded
 * expands) of ts, each of the broadcast shape; *nout is n.  The array is
 * released with clt_free, each view with clt_tensor_free.  Tensors on
 * different devices are CLT_ERR_DEVICE_MISMATCH; *outs NULL and *nout 0 on
 * failure. */
CLT_API clt_status clt_broadcast_tensors(const clt_tensor *const *ts, size_t n,
                                         clt_tensor ***outs, size_t *nout);

#ifdef __cplusplus
}
#endif

#endif
