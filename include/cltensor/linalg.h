/* cltensor/linalg.h: matrix products (through CLBlast, or a CPU-tuned
 * kernel on CPU devices) and softmax / log_softmax along a dimension. */
#ifndef CLTENSOR_LINALG_H
#define CLTENSOR_LINALG_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Matrix product with torch.matmul semantics:
 *   1-D @ 1-D   dot product, a 0-d tensor;
 *   2-D @ 2-D   matrix product;
 *   1-D @ n-D   the vector is taken as a row [1, k] and the 1 removed after;
 *   n-D @ 1-D   the vector is taken as a column [k, 1] and the 1 removed;
 *   n-D @ m-D   batched, the batch dimensions (all but the last two)
 *               broadcast like elementwise operations.
 * Both operands must live on the same device and have the same dtype.
 * float32, float64 and float16 (where the device has it) are supported;
 * integer and bool dtypes give CLT_ERR_DTYPE_UNSUPPORTED.  Inner sizes that
 * differ give CLT_ERR_SHAPE_MISMATCH naming both shapes.  Transposed views
 * (last two strides swapped) are read in place; other non-contiguous
 * operands are copied first.  Enqueues without waiting.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_matmul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* Softmax along dimension `dim` (negative counts from the end), like
 * torch.softmax(a, dim): exp(x - max) / sum(exp(x - max)), so large or very
 * negative inputs give no inf or NaN.  Float dtypes only (integer and bool
 * give CLT_ERR_DTYPE_UNSUPPORTED); the result has a's dtype and shape.  Any
 * layout.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_softmax(const clt_tensor *a, int dim, clt_tensor **out);

/* log(softmax(a, dim)) computed as x - max - log(sum(exp(x - max))), like
 * torch.log_softmax.  Same rules as clt_softmax.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_log_softmax(const clt_tensor *a, int dim, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
