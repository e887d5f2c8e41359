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
 * the call. */
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
 * value must fit the dtype (as clt_full's value).  New tensor: release with
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

#ifdef __cplusplus
}
#endif

#endif
