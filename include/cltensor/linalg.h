/* cltensor/linalg.h: matrix products (through CLBlast, or a CPU-tuned
 * kernel on CPU devices), softmax / log_softmax along a dimension, and
 * torch.linalg's inv, solve, det, slogdet and cholesky of batches of
 * square matrices. */
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

/* torch.nn.functional.softmin(a, dim): softmax(-a, dim), recorded as
 * PyTorch records it (NegBackward0 then SoftmaxBackward0).  Same rules as
 * clt_softmax; a bool tensor is CLT_ERR_DTYPE_MISMATCH (its negation).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_softmin(const clt_tensor *a, int dim, clt_tensor **out);

/* ---- torch.linalg on batches of square matrices -----------------------------
 * A is [..., n, n], float32 or float64 (float16: "Low precision dtypes not
 * supported"; integer and bool dtypes: "Expected a floating point tensor
 * as input"; both CLT_ERR_DTYPE_UNSUPPORTED); fewer than 2 dimensions or
 * matrices that are not square give CLT_ERR_INVALID_ARGUMENT.  Batches of
 * size 0 and n = 0 give empty results (det 1, slogdet (1, 0) for n = 0),
 * as torch.  Each matrix is factored by a work-group of its own (LU with
 * partial pivoting, as LAPACK's getrf, or Cholesky), in local memory when
 * it fits in 16 KiB, accumulating in the dtype.
 * inv, solve and cholesky check every matrix, as torch does: the factors'
 * reports are read back at the end of the call, so these calls wait for
 * the device (a synchronisation, which CLTENSOR_SYNC_DEBUG sees); det and
 * slogdet enqueue without waiting.  A refused matrix gives
 * CLT_ERR_INVALID_ARGUMENT with torch's message, "(Batch element i): "
 * naming the first one when A is batched, and *out NULL.
 * Gradients (torch 1.13's formulas and grad_fn names): inv
 * LinalgInvExBackward0, solve LinalgSolveExBackward0, det
 * LinalgDetBackward0, slogdet LinalgSlogdetBackward0 (log|det| only),
 * cholesky LinalgCholeskyExBackward0.  The gradient of det or slogdet at
 * an exactly singular matrix is refused (clt_backward fails as inv does).
 * New tensors: release each with clt_tensor_free. */

/* torch.linalg.inv(A): [..., n, n].  A matrix whose LU factor U has an
 * exactly zero diagonal element is refused: "clt_linalg_inv: The
 * diagonal element 2 is zero, the inversion could not be completed
 * because the input matrix is singular." (1-based: the first exactly zero
 * pivot of this elimination; where a LAPACK build rounds otherwise, torch
 * may name another element, as it does for [[1, 2, 3], [2, 4, 6], [1, 1,
 * 1]]: 2 there, 3 here). */
CLT_API clt_status clt_linalg_inv(const clt_tensor *a, clt_tensor **out);

/* torch.linalg.solve(A, B): X with A X = B.  B is [..., n, k], or a vector
 * [n] or batch of vectors [..., n] when it is 1-D or its shape is A's
 * without the last dimension (torch's rule); X has B's form.  The batch
 * dimensions of A and B broadcast.  A and B on one device, of one dtype
 * (CLT_ERR_DTYPE_MISMATCH otherwise); B's n not A's: CLT_ERR_SHAPE_MISMATCH.
 * A singular A is refused: "clt_linalg_solve: The solver failed because
 * the input matrix is singular.". */
CLT_API clt_status clt_linalg_solve(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.linalg.det(A): [...], the product of the LU factor's diagonal with
 * the pivots' sign; 0 (or -0) for a singular matrix, no error. */
CLT_API clt_status clt_linalg_det(const clt_tensor *a, clt_tensor **out);

/* torch.linalg.slogdet(A): *sign (-1, 1, or 0 for a singular matrix) and
 * *logabsdet (log|det|, -inf for a singular matrix), both [...]; no error
 * for a singular matrix.  Only *logabsdet carries a gradient.  Two new
 * tensors (both NULL on failure). */
CLT_API clt_status clt_linalg_slogdet(const clt_tensor *a, clt_tensor **sign,
                                      clt_tensor **logabsdet);

/* torch.linalg.cholesky(A, upper): L lower with A = L L^T from A's lower
 * triangle, or with upper non-zero U = L^T from A's upper triangle (a
 * transposed view on a new buffer, as torch's).  A matrix that is not
 * positive-definite is refused: "clt_linalg_cholesky: The factorization
 * could not be completed because the input is not positive-definite (the
 * leading minor of order 3 is not positive-definite).". */
CLT_API clt_status clt_linalg_cholesky(const clt_tensor *a, int upper, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
