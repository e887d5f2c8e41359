/* cltensor/index.h: indexing with PyTorch's semantics: index_select,
 * gather, scatter, scatter_add, index_add, masked_fill, one_hot and
 * embedding, and the in-place index_add_ and scatter_add_ that gradients
 * are built from.
 *
 * Indices are tensors on the data's device, of the dtypes PyTorch 1.13
 * takes: index_select, index_add, index_add_ and embedding take int64 or
 * int32 indices (with the same results, and the same out-of-range errors
 * and gradients, for both); gather, scatter, scatter_add, scatter_add_ and
 * one_hot take int64 only.  Any other dtype gives CLT_ERR_DTYPE_MISMATCH
 * naming the dtypes the op takes ("clt_index_select: expected dtype int32
 * or int64 for index, but got uint8", "clt_gather: expected dtype int64 for
 * index, but got int32"); convert such indices with clt_to_dtype.
 * Dimensions wrap like Python indices, and a 0-dimensional tensor counts as
 * 1-dimensional of size 1, as in PyTorch.  Every operand may be a view
 * (transposed, sliced, expanded).  Ops enqueue their kernels and return
 * without waiting.  Every error detectable from shapes and dtypes is
 * reported at once: the call returns its status (*out NULL, as common.h
 * says), the message names the op, the shapes and the dimension, and
 * nothing is changed.
 *
 * Out-of-range indices.  Index values live on the device, so they are
 * checked there, without a host wait per op: an index outside [0, size)
 * (negative ones included: PyTorch's index_select, gather and embedding
 * refuse them too) is skipped (ops that read write 0 in its place; the
 * scatters and index_add still apply every other entry, in place too) and
 * the first such index is recorded for the calling thread on its device.
 * That thread's next blocking synchronisation on that device
 * (clt_tensor_read, clt_tensor_item, clt_tensor_format, clt_event_wait,
 * clt_event_query once complete, clt_to when it waits,
 * clt_device_synchronize) returns CLT_ERR_INDEX_OUT_OF_RANGE with a message
 * like "clt_index_select: index 7 is out of bounds for dimension 0 with
 * size 5 (found on cpu:0 (...) at the next synchronisation,
 * clt_tensor_read)", and clears the record.  The synchronisation that
 * reports it may read an unrelated tensor, and its data have been read.
 * Later bad indices of the thread before that synchronisation are not
 * recorded.  The record is the thread's, not the device's as a CUDA error
 * is: other threads' synchronisations on the device never report it (an
 * event reports the record of the thread that called
 * clt_tensor_read_async).  So a thread that hands an index op's result to
 * another one learns of its bad indices by synchronising itself
 * (clt_device_synchronize) before; one that exits without synchronising
 * takes its unreported error with it.
 *
 * Determinism.  scatter_add, index_add and their in-place forms sum without
 * atomics, each destination element adding its sources in ascending index
 * order: results are bit-identical from run to run and between devices,
 * and equal a sequential loop's.  clt_scatter with repeated destinations
 * keeps the last source in index order.
 *
 * Autograd (autograd.h).  index_select, gather, scatter, scatter_add,
 * index_add, masked_fill and embedding are differentiable with respect to
 * their floating-point tensors (not the indices or the mask); their
 * gradients are built from these same ops, so they are deterministic too.
 * For scatter and scatter_add, src's gradient needs src to have index's
 * shape, as in PyTorch.  The in-place forms are not recorded: with grad mode
 * on they refuse an operand that requires grad (CLT_ERR_INVALID_ARGUMENT).
 *
 * Thread-safety: as for tensors (common.h).
 */
#ifndef CLTENSOR_INDEX_H
#define CLTENSOR_INDEX_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* torch.index_select(t, dim, index): the slices index[0], index[1], ... of
 * t along dim, in that order; index is 1-D or 0-D (one value), int64 or
 * int32.  The result has t's shape with dimension dim of size
 * numel(index) (0-d for a 0-d t).  CLT_ERR_INVALID_ARGUMENT when index has
 * more than one dimension.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_index_select(const clt_tensor *t, int dim, const clt_tensor *index,
                                    clt_tensor **out);

/* torch.gather(t, dim, index): out[i][j][k] = t[index[i][j][k]][j][k] for
 * dim 0 (and likewise along other dims), with index's shape.  index has t's
 * number of dimensions and sizes no larger than t's apart from dim
 * (CLT_ERR_SHAPE_MISMATCH otherwise).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_gather(const clt_tensor *t, int dim, const clt_tensor *index,
                              clt_tensor **out);

/* torch.scatter(t, dim, index, src): a copy of t with out[index[i][j][k]][j][k]
 * = src[i][j][k] for dim 0 (and likewise along other dims), for every
 * position of index.  index, t and src have one number of dimensions;
 * index is no larger than src in any dimension nor than t apart from dim
 * (CLT_ERR_SHAPE_MISMATCH); src has t's dtype (CLT_ERR_DTYPE_MISMATCH).  An
 * empty index is not checked against the shapes, as in PyTorch.  Where
 * indices repeat, the last one in index order wins.  New tensor: release
 * with clt_tensor_free. */
CLT_API clt_status clt_scatter(const clt_tensor *t, int dim, const clt_tensor *index,
                               const clt_tensor *src, clt_tensor **out);

/* torch.scatter_add(t, dim, index, src): as clt_scatter, but adding:
 * out[index[i][j][k]][j][k] += src[i][j][k].  Deterministic (see above).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_scatter_add(const clt_tensor *t, int dim, const clt_tensor *index,
                                   const clt_tensor *src, clt_tensor **out);

/* Tensor.scatter_add_: the same sums into t itself (every handle and view
 * on t's storage sees them; its version counter is bumped).  t must not be
 * expanded (a stride 0 over more than one element: CLT_ERR_INVALID_ARGUMENT).
 * src and index may share t's storage: they are read as they were before
 * the call.  Autograd, for this and every in-place index op below
 * (index_add_, index_fill_, index_copy_, index_put_, masked_scatter_): a
 * leaf that requires grad is refused in grad mode (as every in-place op);
 * when t (a non-leaf) or src requires grad, the op records itself on t's
 * history as torch does, with the out-of-place form's node and formula
 * (ScatterAddBackward0, IndexAddBackward0, IndexFillBackward0,
 * IndexCopyBackward0, IndexPutBackward0, MaskedScatterBackward0) whose
 * first input is t's old history; the index is saved at its version.  On
 * error t and its history are unchanged. */
CLT_API clt_status clt_scatter_add_(clt_tensor *t, int dim, const clt_tensor *index,
                                    const clt_tensor *src);

/* torch.index_add(t, dim, index, src, alpha=alpha): a copy of t with
 * alpha * src[i] added to slice index[i] of dim, for i in order (src's
 * slices along dim).  index is 1-D (or 0-D), int64 or int32, with
 * numel(index) == src.size(dim); src has t's dtype and t's shape apart
 * from dim (CLT_ERR_SHAPE_MISMATCH).  Integer tensors refuse a fractional alpha
 * (CLT_ERR_INVALID_ARGUMENT).  Deterministic (see above); the backward of
 * clt_embedding is index_add of the output gradient's rows into zeros.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_index_add(const clt_tensor *t, int dim, const clt_tensor *index,
                                 const clt_tensor *src, double alpha, clt_tensor **out);

/* Tensor.index_add_: the same sums into t itself, with clt_scatter_add_'s
 * rules for in-place writes. */
CLT_API clt_status clt_index_add_(clt_tensor *t, int dim, const clt_tensor *index,
                                  const clt_tensor *src, double alpha);

/* torch.masked_fill(t, mask, value): value where the bool mask is true,
 * else t.  t and mask broadcast together (the result has the broadcast
 * shape and t's dtype).  A mask of another dtype is CLT_ERR_DTYPE_MISMATCH;
 * value must fit the dtype (as clt_full's value; a complex t takes value
 * as its real part, 0 as the imaginary one).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_masked_fill(const clt_tensor *t, const clt_tensor *mask, double value,
                                   clt_tensor **out);

/* torch.nn.functional.one_hot(indices, num_classes): int64 tensor of shape
 * indices.shape + [num_classes] with 1 at each index's class and 0
 * elsewhere; indices are int64.  num_classes -1 (infer it from the largest
 * value) is not supported, because finding it would wait for the device:
 * CLT_ERR_INVALID_ARGUMENT.  Class values outside [0, num_classes) are
 * out-of-range indices (see above); with num_classes 0 and any value the
 * call itself fails with CLT_ERR_INDEX_OUT_OF_RANGE.  Empty indices need a
 * positive num_classes (torch cannot infer the count from no values
 * either): with 0 or a negative one, CLT_ERR_INVALID_ARGUMENT.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_one_hot(const clt_tensor *indices, int64_t num_classes,
                               clt_tensor **out);

/* torch.nn.functional.embedding(indices, weight): the rows of the 2-D weight
 * table [num_embeddings, D] picked by int64 or int32 indices of any shape;
 * the result has shape indices.shape + [D] and weight's dtype.  A weight that
 * is not 2-D is CLT_ERR_SHAPE_MISMATCH.  Note the order of the arguments
 * (weight first, as torch.nn.Embedding holds it).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_embedding(const clt_tensor *weight, const clt_tensor *indices,
                                 clt_tensor **out);

/* torch.nn.functional.embedding(indices, weight, padding_idx=...) (max_norm
 * and scale_grad_by_freq: clt_embedding_with_opts; no sparse):
 * clt_embedding, where the row padding_idx (NULL: none, as clt_embedding;
 * negative counts from the end, in [-num_embeddings, num_embeddings))
 * gets no gradient: as torch's
 * embedding_backward, entries equal to it are skipped, so that row of the
 * weight's gradient is zeros (its value in the forward is still read: the
 * padding row is whatever weight holds there).  Errors: clt_embedding's,
 * and a padding_idx out of range (CLT_ERR_INVALID_ARGUMENT, "Padding_idx
 * must be within num_embeddings", torch's AssertionError).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_embedding_ex(const clt_tensor *weight, const clt_tensor *indices,
                                    const int64_t *padding_idx, clt_tensor **out);

/* The options of torch.nn.functional.embedding and nn.Embedding beyond the
 * weight and the indices.  sparse (torch's default False): the weight's
 * gradient is sparse COO (clt_grad_is_sparse, clt_grad_sparse), one entry
 * per looked-up index but the padding row's, as torch's
 * embedding_sparse_backward, when the backward pass is clt_backward
 * without create_graph and the weight a leaf without hooks; otherwise
 * (clt_autograd_grad, create_graph, a computed weight, hooks) the gradient
 * flows dense, where torch keeps it sparse.  With scale_grad_by_freq the
 * backward fails (CLT_ERR_INVALID_ARGUMENT, torch's "embedding_backward:
 * scale_grad_by_freq not supported with sparse gradients"). */
typedef struct clt_embedding_opts {
    const int64_t *padding_idx; /* NULL: none; negative counts from the end */
    const double *max_norm;     /* NULL: none (no renormalisation) */
    double norm_type;           /* the p of max_norm's norm (torch's default 2) */
    int scale_grad_by_freq;     /* each row's gradient over its index's count */
    int sparse;                 /* the weight's gradient sparse (see above) */
} clt_embedding_opts;

#define CLT_EMBEDDING_DEFAULTS {NULL, NULL, 2.0, 0, 0}

/* torch.embedding_renorm_(weight, indices, max_norm, norm_type) under
 * torch.no_grad, as F.embedding with max_norm runs it: each row of the 2-D
 * floating weight that indices (int64 or int32, any shape) name and whose
 * p-norm (p = norm_type, computed in weight's dtype) exceeds max_norm is
 * scaled in place by max_norm / (norm + 1e-7) (in float64, then rounded to
 * weight's dtype); a row named twice is scaled once; the other rows and a
 * NaN norm are left alone.  Nothing is recorded, whatever grad mode is on,
 * and weight (a leaf that requires grad too) may be changed: its version
 * moves as with any in-place op, so that a graph that saved it refuses to
 * run backward (torch's "modified by an inplace operation").  The indices
 * must lie in [0, rows): a negative one or one past the end is reported at
 * the next synchronisation (CLT_ERR_INDEX_OUT_OF_RANGE), where torch
 * raises at once.  Errors: a weight other than 2-D
 * (CLT_ERR_SHAPE_MISMATCH), not floating, or indices of another dtype
 * (CLT_ERR_DTYPE_MISMATCH), devices that differ; weight is unchanged
 * then. */
CLT_API clt_status clt_embedding_renorm_(clt_tensor *weight, const clt_tensor *indices,
                                         double max_norm, double norm_type);

/* torch.nn.functional.embedding(indices, weight, padding_idx, max_norm,
 * norm_type, scale_grad_by_freq) with opts (NULL: CLT_EMBEDDING_DEFAULTS,
 * which is clt_embedding):
 * - padding_idx as clt_embedding_ex;
 * - max_norm: before the lookup, clt_embedding_renorm_(weight, indices,
 *   *max_norm, norm_type), which changes weight in place (hence not
 *   const), so that the result reads the renormalised rows; the
 *   renormalisation is no part of the graph (torch's no_grad);
 * - scale_grad_by_freq: the weight's gradient in each row is divided by the
 *   number of times its index occurs in indices (torch's
 *   embedding_dense_backward).  A pass that creates a graph differentiates
 *   that gradient as torch's embedding_dense_double_backward does: the
 *   output gradient's rows at the indices, unscaled (the scaling is kept
 *   once, by the forward's own backward).
 * Errors: clt_embedding_ex's, checked before anything is changed.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_embedding_with_opts(clt_tensor *weight, const clt_tensor *indices,
                                           const clt_embedding_opts *opts, clt_tensor **out);

/* The reductions of clt_embedding_bag, as its mode strings. */
typedef enum clt_bag_mode {
    CLT_BAG_SUM = 0,  /* "sum" */
    CLT_BAG_MEAN = 1, /* "mean", PyTorch's default */
    CLT_BAG_MAX = 2   /* "max" */
} clt_bag_mode;

/* torch.nn.functional.embedding_bag(input, weight, offsets, mode=mode,
 * per_sample_weights=..., include_last_offset=..., padding_idx=...)
 * (max_norm and scale_grad_by_freq: clt_embedding_bag_with_opts; no
 * sparse; note the order of the first
 * arguments, weight first as clt_embedding's): the rows of weight [rows,
 * D] (float32 or float64) picked by input (int64 or int32 indices) are
 * reduced bag by bag into [bags, D] of weight's dtype.
 *
 * Bags: a 2-D input [B, N] has a bag per row (offsets must be NULL); a 1-D
 * input [n] needs 1-D offsets (int64 or int32): bag b holds entries
 * offsets[b] to offsets[b + 1] (the last one to the end of input), and with
 * include_last_offset the last offset only ends the bag before it (one bag
 * fewer than offsets; as torch, a 2-D input then loses its last row).
 * Entries equal to padding_idx (NULL: none; negative counts from the end,
 * in [-rows, rows)) are left out of their bag.
 *
 * CLT_BAG_SUM adds the bag's rows, each times its per-sample weight when
 * per_sample_weights (input's shape, weight's dtype; sum only, as torch)
 * is given; CLT_BAG_MEAN divides the sum by the number of entries other
 * than padding; CLT_BAG_MAX takes each column's largest value, the first
 * of equal ones (a later value replaces the maximum only when greater, as
 * PyTorch's CPU kernel, so that a NaN stays only where it comes first).
 * An empty bag gives zeros.  Every output element sums its bag in order,
 * one work-item each: the same bits on every run.  (PyTorch 1.13's CPU
 * mean with include_last_offset divides the last bag by the entries from
 * its start to the end of input when its last offset is below that; here
 * by the bag's own size.)
 *
 * Differentiable in weight and per_sample_weights (EmbeddingBagBackward0):
 * each entry's row gets the output gradient of its bag (times its weight,
 * divided by the bag's size for the mean, only in the columns where it was
 * the maximum for max), summed per row by index_add in entry order (no
 * atomics); a per-sample weight gets the dot product of its bag's output
 * gradient with its row.  Padding entries get nothing.
 *
 * Errors, in PyTorch's words: a mode outside the three, per_sample_weights
 * with another mode, a padding_idx out of range, offsets with a 2-D input
 * (CLT_ERR_INVALID_ARGUMENT); no offsets with a 1-D input
 * (CLT_ERR_NULL_ARGUMENT); an input of another rank, offsets other than
 * 1-D or empty with include_last_offset, a weight other than 2-D,
 * per_sample_weights of another shape (CLT_ERR_SHAPE_MISMATCH); index or
 * offsets dtypes other than int32 and int64, per_sample_weights of
 * another dtype (CLT_ERR_DTYPE_MISMATCH); an integer weight
 * (CLT_ERR_DTYPE_UNSUPPORTED); devices that differ.  Index values are
 * checked on the device (see above): an index outside [0, rows) is left
 * out of its bag, and offsets that do not start at 0, decrease or pass the
 * input's length make their bag empty; either is reported at the next
 * synchronisation (CLT_ERR_INDEX_OUT_OF_RANGE), where PyTorch's CPU kernel
 * raises at once (or, for offsets, may read out of bounds).  A 2-D input
 * [B, 0] gives B bags of zeros (PyTorch raises "step must be nonzero").
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_embedding_bag(const clt_tensor *weight, const clt_tensor *input,
                                     const clt_tensor *offsets, clt_bag_mode mode,
                                     const clt_tensor *per_sample_weights,
                                     const int64_t *padding_idx, int include_last_offset,
                                     clt_tensor **out);

/* The options of torch.nn.functional.embedding_bag and nn.EmbeddingBag
 * beyond the weight, input, offsets and per_sample_weights (sparse is not
 * supported). */
typedef struct clt_embedding_bag_opts {
    clt_bag_mode mode;          /* torch's default CLT_BAG_MEAN */
    const int64_t *padding_idx; /* NULL: none; negative counts from the end */
    int include_last_offset;
    const double *max_norm;     /* NULL: none (no renormalisation) */
    double norm_type;           /* the p of max_norm's norm (torch's default 2) */
    int scale_grad_by_freq;     /* each row's gradient over its index's count */
    /* the weight's gradient sparse, as clt_embedding_opts' sparse: one
     * entry per index of input but padding ones, its bag's gradient
     * (over the bag's size for mean, times its per-sample weight); with
     * CLT_BAG_MAX refused (CLT_ERR_INVALID_ARGUMENT, torch's "max mode does
     * not support sparse weights") */
    int sparse;
} clt_embedding_bag_opts;

#define CLT_EMBEDDING_BAG_DEFAULTS {CLT_BAG_MEAN, NULL, 0, NULL, 2.0, 0, 0}

/* torch.nn.functional.embedding_bag(input, weight, offsets, max_norm,
 * norm_type, scale_grad_by_freq, mode, per_sample_weights=...,
 * include_last_offset=..., padding_idx=...) with opts (NULL:
 * CLT_EMBEDDING_BAG_DEFAULTS): clt_embedding_bag, and
 * - max_norm: first clt_embedding_renorm_(weight, input, *max_norm,
 *   norm_type) over all of input (padding entries too, as torch), which
 *   changes weight in place;
 * - scale_grad_by_freq: the weight's gradient in each row divided by the
 *   number of times its index occurs in input (padding entries and
 *   entries in no bag counted too, as torch's compute_counts; their rows
 *   get nothing anyway); the per-sample weights' gradient is unscaled.
 *   (PyTorch 1.13's CPU kernel divides the entries of its k-th distinct
 *   index, in sorted order, by the count of the k-th sorted entry's
 *   index, so that some rows get another index's count: for input [1, 2,
 *   4, 5, 4, 3, 2, 0, 5, 5] its sum gradient of ones is [1, 1, 1, 0.5, 2,
 *   1.5], where every row's own count gives ones.)  A
 *   pass that creates a graph differentiates it unscaled, as
 *   clt_embedding_with_opts (torch 1.13 refuses to differentiate
 *   embedding_bag's backward at all).  With CLT_BAG_MAX it is
 *   CLT_ERR_INVALID_ARGUMENT ("max mode does not support scaling the
 *   gradient by the frequency", torch's ValueError).
 * Errors: clt_embedding_bag's, all checked before weight is changed.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_embedding_bag_with_opts(clt_tensor *weight, const clt_tensor *input,
                                               const clt_tensor *offsets,
                                               const clt_tensor *per_sample_weights,
                                               const clt_embedding_bag_opts *opts,
                                               clt_tensor **out);

/* ---- more indexing: take, index_fill, index_copy, index_put, scatter_reduce,
 * masked_select, masked_scatter, nonzero, searchsorted, bincount, unique ----
 *
 * take, index_fill, index_put and index_put_ take negative indices, which
 * count from the end as in Python (torch does the same); index_copy and
 * scatter_reduce refuse them as gather does.  All take int64 indices only
 * (index_put bool masks too), as torch 1.13.  Out-of-range indices are
 * found on the device and reported at the next synchronisation, as above.
 *
 * Ops that synchronise.  masked_select, masked_scatter, nonzero, argwhere,
 * bincount, unique, unique_consecutive, unique_dim, and index_put and
 * index_put_ given a bool mask, have results (or work) whose size depends on the values:
 * like torch's on CUDA, they wait for the device and read what decides the
 * size (the mask, the largest value) back to the host before they return.
 * That wait reports an out-of-range index of an earlier op (see above).
 *
 * Autograd.  take, index_fill, index_copy, index_put, masked_select,
 * masked_scatter and scatter_reduce are
 * differentiable with respect to their floating tensors, with torch's
 * grad_fn names (TakeBackward0, ...).  The in-place forms are not
 * recorded (see above).  searchsorted, bucketize, nonzero, argwhere,
 * bincount and unique give integer results and are not recorded; nor is
 * unique_dim (torch's unique has no gradient either). */

/* torch.take(t, index): t's elements, t seen as 1-D in row-major order, at
 * the int64 indices; the result has index's shape.  An index in
 * [-numel, 0) counts from the end.  Taking from an empty t is
 * CLT_ERR_INDEX_OUT_OF_RANGE at once.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_take(const clt_tensor *t, const clt_tensor *index, clt_tensor **out);

/* torch.index_fill(t, dim, index, value): a copy of t with the slices
 * index[i] along dim set to value (which must fit t's dtype, as clt_full's);
 * index is 1-D or 0-D int64, negative values counting from the end.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_index_fill(const clt_tensor *t, int dim, const clt_tensor *index,
                                  double value, clt_tensor **out);

/* Tensor.index_fill_: the same into t itself, with clt_scatter_add_'s rules
 * for in-place writes. */
CLT_API clt_status clt_index_fill_(clt_tensor *t, int dim, const clt_tensor *index,
                                   double value);

/* torch.index_copy(t, dim, index, src): a copy of t with slice index[i]
 * along dim replaced by src's slice i; index is 1-D or 0-D int64 with
 * numel(index) == src.size(dim), src of t's dtype and shape apart from dim
 * (CLT_ERR_SHAPE_MISMATCH), as clt_index_add.  Where indices repeat, torch
 * leaves the result undefined; here the last one in index order wins, on
 * every device.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_index_copy(const clt_tensor *t, int dim, const clt_tensor *index,
                                  const clt_tensor *src, clt_tensor **out);

/* Tensor.index_copy_: the same into t itself, with clt_scatter_add_'s rules
 * for in-place writes. */
CLT_API clt_status clt_index_copy_(clt_tensor *t, int dim, const clt_tensor *index,
                                   const clt_tensor *src);

/* torch.put(t, index, source, accumulate): a copy of t with the elements
 * at index (int64, any shape, into t flattened; negative counts from the
 * end) set to source's (same number of elements, t's dtype), or with
 * accumulate non-zero source added there (repeated places add up).
 * Composed of reshapes and clt_index_put, whose checks of the indices and
 * order for repeated places it has; gradients for t and source through
 * them (grad_fn ViewBackward0 over IndexPutBackward0; torch: PutBackward0).
 * index not int64 or source of another dtype: CLT_ERR_DTYPE_MISMATCH;
 * counts that differ: CLT_ERR_SHAPE_MISMATCH; an index into an empty t:
 * CLT_ERR_INDEX_OUT_OF_RANGE (torch's messages).  New tensor: release
 * with clt_tensor_free. */
CLT_API clt_status clt_put(const clt_tensor *t, const clt_tensor *index, const clt_tensor *source,
                           int accumulate, clt_tensor **out);

/* torch.index_put(t, indices, values, accumulate), t[indices] = values in
 * Python: the n entries indices[0..n) index t's dimensions in turn, from
 * the first.
 * An int64 tensor indexes one dimension (negative values count from the
 * end); a bool mask of k dimensions indexes k of them, as the k columns of
 * its nonzero() (its sizes must be those of the dimensions it covers:
 * CLT_ERR_INDEX_OUT_OF_RANGE), and makes the call synchronise.  The index
 * tensors broadcast together (CLT_ERR_SHAPE_MISMATCH otherwise); values,
 * of t's dtype (CLT_ERR_DTYPE_MISMATCH), broadcast to the indexing result:
 * the broadcast index shape followed by t's dimensions past the indexed
 * ones.  A NULL entry is a full slice, Python's ":" (x[:, idx] = v is
 * {NULL, idx}; None, a new dimension, has no counterpart): it covers one
 * dimension, and the index tensors index the dimensions that follow it.
 * Where the indexed dimensions are adjacent, the broadcast index shape
 * stands in their place in the indexing result (t [A, B, C, D] and
 * {NULL, i, j} with i and j of shape [N]: [A, N, D]); where slices separate
 * them, it comes first, followed by all the others in order ({i, NULL, j}:
 * [N, B, D]), as torch.  Indexing more dimensions than t has, slices
 * counted, is CLT_ERR_INDEX_OUT_OF_RANGE; n < 1, or no entry that is not
 * NULL (torch refuses it too), is CLT_ERR_INVALID_ARGUMENT.  The gradients
 * (IndexPutBackward0) follow the same places.  accumulate nonzero adds
 * values into the places, repeated ones adding up in index order
 * (deterministic);
 * without it each place takes its value, and where places repeat (torch:
 * undefined) the last in index order wins, on every device.  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_index_put(const clt_tensor *t, const clt_tensor *const *indices, int n,
                                 const clt_tensor *values, int accumulate, clt_tensor **out);

/* Tensor.index_put_: the same into t itself, with clt_scatter_add_'s rules
 * for in-place writes (values may share t's storage). */
CLT_API clt_status clt_index_put_(clt_tensor *t, const clt_tensor *const *indices, int n,
                                  const clt_tensor *values, int accumulate);

/* torch.scatter_reduce(t, dim, index, src, reduce, include_self=...): as
 * clt_scatter, but each place reduces t's value (when include_self is
 * nonzero) and the src values scattered to it, in index order, by reduce:
 * "sum", "prod", "mean" (the sum divided by the count of values reduced,
 * t's own counted with include_self; floor division for integer dtypes,
 * as torch), "amax" or "amin" (a NaN among them gives NaN).  Places no
 * index names keep t's value.  index is int64 with clt_scatter's shape
 * rules; bool tensors are CLT_ERR_DTYPE_UNSUPPORTED; any other reduce is
 * CLT_ERR_INVALID_ARGUMENT.  Gradients (ScatterReduceBackward0) as torch
 * 1.13 for every reduce: amax and amin share a place's gradient evenly
 * among the values equal to its result; prod gives each value the product
 * of the others at its place (zeros included); src's gradient needs src to
 * have index's shape (CLT_ERR_SHAPE_MISMATCH when it requires grad).  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_scatter_reduce(const clt_tensor *t, int dim, const clt_tensor *index,
                                      const clt_tensor *src, const char *reduce,
                                      int include_self, clt_tensor **out);

/* torch.masked_select(t, mask): 1-D tensor of t's elements where the bool
 * mask is true, t and mask broadcast together, in row-major order.
 * Synchronises (see above).  As torch 1.13, a uint8 mask is taken too
 * (nonzero is true); any other dtype is CLT_ERR_DTYPE_MISMATCH.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_masked_select(const clt_tensor *t, const clt_tensor *mask,
                                     clt_tensor **out);

/* torch.masked_scatter(t, mask, source): a copy of t (broadcast with the
 * bool or uint8 mask) whose elements where mask is true take source's elements in
 * row-major order, one after another; source has t's dtype and at least as
 * many elements as mask has true values (CLT_ERR_SHAPE_MISMATCH).
 * Synchronises.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_masked_scatter(const clt_tensor *t, const clt_tensor *mask,
                                      const clt_tensor *source, clt_tensor **out);

/* Tensor.masked_scatter_: the same into t itself; mask must broadcast to
 * t's shape.  clt_scatter_add_'s rules for in-place writes. */
CLT_API clt_status clt_masked_scatter_(clt_tensor *t, const clt_tensor *mask,
                                       const clt_tensor *source);

/* torch.nonzero(t): int64 tensor [count, ndim] of the coordinates of t's
 * nonzero elements (NaN counts as nonzero), in row-major order; [count, 0]
 * for a 0-d t.  Any dtype.  Synchronises.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_nonzero(const clt_tensor *t, clt_tensor **out);

/* torch.argwhere(t): the same as clt_nonzero.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_argwhere(const clt_tensor *t, clt_tensor **out);

/* torch.searchsorted(sorted_sequence, values, right=right): int64 tensor of
 * values' shape with, for each value, the index at which inserting it would
 * keep its row of sorted_sequence sorted: the first place whose element is
 * not below it (right nonzero: not below nor equal), by torch's
 * comparisons, so that a NaN value goes to the end.  sorted_sequence is
 * 1-D, or has values' number of dimensions and its sizes apart from the
 * last (CLT_ERR_SHAPE_MISMATCH); its rows must be sorted (not checked, as
 * torch without a sorter).  The dtypes promote as torch.result_type; bool
 * is CLT_ERR_DTYPE_UNSUPPORTED.  Does not synchronise.  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_searchsorted(const clt_tensor *sorted_sequence, const clt_tensor *values,
                                    int right, clt_tensor **out);

/* torch.searchsorted(sorted_sequence, values, out_int32=out_int32,
 * right=right, side=side, sorter=sorter): clt_searchsorted with torch's
 * keyword arguments.  side is "left", "right" or NULL (none); "right" is
 * right, and "left" with right nonzero is refused, as torch ("side and
 * right can't be set to opposites"), as is any other string
 * (CLT_ERR_INVALID_ARGUMENT).  sorter (NULL: none) is an int64 tensor of
 * sorted_sequence's shape whose rows hold the indices that sort its rows
 * (torch.argsort's): the sequence is read through it, and the result
 * indexes the sorted order, as torch's.  Another dtype is
 * CLT_ERR_DTYPE_MISMATCH, another shape CLT_ERR_SHAPE_MISMATCH; its values
 * are checked on the device as clt_gather's (an index outside [0, the
 * last dimension's size) is reported at the next synchronisation, in
 * clt_gather's name, where torch's CPU kernel raises at once).  out_int32 nonzero gives an int32
 * result (the last dimension must then be shorter than INT32_MAX:
 * CLT_ERR_INVALID_ARGUMENT).  Does not synchronise.  New tensor: release
 * with clt_tensor_free. */
CLT_API clt_status clt_searchsorted_ex(const clt_tensor *sorted_sequence,
                                       const clt_tensor *values, int out_int32, int right,
                                       const char *side, const clt_tensor *sorter,
                                       clt_tensor **out);

/* torch.bucketize(t, boundaries, right=right): clt_searchsorted(boundaries,
 * t, right); boundaries must be 1-D (CLT_ERR_SHAPE_MISMATCH).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_bucketize(const clt_tensor *t, const clt_tensor *boundaries, int right,
                                 clt_tensor **out);

/* torch.bincount(t, weights, minlength): for a 1-D integer t of
 * non-negative values, a 1-D tensor of max(max(t) + 1, minlength) counts
 * of each value (int64), or sums of the weights (NULL: none) at each value
 * (float32 for float32 weights, float64 for any others, as torch).  A
 * negative value is CLT_ERR_INVALID_ARGUMENT (found when the call reads
 * the largest and smallest values back: it synchronises), as are other
 * dtypes, other shapes and a negative minlength; weights not of t's
 * length are CLT_ERR_SHAPE_MISMATCH.  The sums run in t's order on every
 * device.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_bincount(const clt_tensor *t, const clt_tensor *weights, int64_t minlength,
                                clt_tensor **out);

/* torch.unique(t, sorted=True, return_inverse, return_counts): *values the
 * 1-D sorted distinct values of t; *inverse (when inverse is not NULL) an
 * int64 tensor of t's shape holding the place in *values of each element;
 * *counts (when not NULL) int64 [numel(values)], how often each occurs.
 * The result is always sorted.  NaNs sort last and each NaN is a value of
 * its own (equal to nothing, as numpy and torch since 2.0 have it; torch
 * 1.13's CPU unique gives them wrong inverse indices and counts of 0).
 * Synchronises.  New tensors: release each with clt_tensor_free; on
 * failure every one given is set to NULL. */
CLT_API clt_status clt_unique(const clt_tensor *t, clt_tensor **values, clt_tensor **inverse,
                              clt_tensor **counts);

/* torch.unique_consecutive(t, return_inverse, return_counts): as
 * clt_unique, over t flattened, but only runs of equal neighbours merge and
 * the order is kept (each NaN its own run, as torch).  Synchronises.  New
 * tensors: release each with clt_tensor_free. */
CLT_API clt_status clt_unique_consecutive(const clt_tensor *t, clt_tensor **values,
                                          clt_tensor **inverse, clt_tensor **counts);

/* torch.unique(t, sorted, return_inverse, return_counts, dim=dim): the
 * distinct slices of t along dim, in lexicographic order, each slice
 * compared element by element in the order of t.transpose(0, dim)[i], as
 * torch 1.13 (for a 3-D t and dim 2, t[:, :, i].T, not t[:, :, i]):
 * *values has t's shape with dim of size the number of distinct slices, in
 * t's dtype; *inverse (when inverse is not NULL) int64 [t.size(dim)], the
 * place in *values of each slice; *counts (when not NULL) int64, how many
 * slices each value stands for.  sorted is taken for torch's signature:
 * torch 1.13 sorts the slices with dim either way, and so does this.
 * Elements order by value; a NaN orders after every number and makes its
 * slice equal to no other (each such slice a value of its own, as torch
 * 1.13's CPU kernel and clt_unique).  Any dtype.  dim wraps as Python's
 * (CLT_ERR_DIM_OUT_OF_RANGE otherwise, and for a 0-d t: "Dimension
 * specified as 0 but tensor has no dimensions"); an empty t whose empty
 * dimension is not dim is CLT_ERR_INVALID_ARGUMENT, as torch.
 * Synchronises: t is read back to the host and its slices sorted there.
 * New tensors: release each with clt_tensor_free; on failure every one
 * given is set to NULL. */
CLT_API clt_status clt_unique_dim(const clt_tensor *t, int dim, int sorted, clt_tensor **values,
                                  clt_tensor **inverse, clt_tensor **counts);


/* ---- take_along_dim and index_reduce ------------------------------------- */

/* torch.take_along_dim(t, indices, dim): with dim (non-NULL) t and the
 * int64 indices (same number of dims) broadcast but along *dim and
 * gathered there (clt_gather's checks and gradient); dim NULL takes from t
 * flattened at indices flattened.  New tensor. */
CLT_API clt_status clt_take_along_dim(const clt_tensor *t, const clt_tensor *indices,
                                      const int *dim, clt_tensor **out);
/* torch.index_reduce(t, dim, index, source, reduce, include_self): a copy
 * of t whose slice index[i] along dim is reduced with source's slice i by
 * reduce, "prod", "mean", "amax" or "amin" (t's own value taken into it
 * when include_self).  index 1-D int64 or int32 of source.size(dim)
 * entries in range; source of t's dtype and slice shape.  Composed as
 * clt_scatter_reduce over the index expanded to source's shape (its
 * gradient and its device check of the values).  New tensor. */
CLT_API clt_status clt_index_reduce(const clt_tensor *t, int dim, const clt_tensor *index,
                                    const clt_tensor *source, const char *reduce,
                                    int include_self, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
