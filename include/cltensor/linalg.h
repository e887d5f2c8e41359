/* cltensor/linalg.h: matrix products (through CLBlast, or a CPU-tuned
 * kernel on CPU devices), softmax / log_softmax along a dimension, and
 * torch.linalg's inv, solve, det, slogdet and cholesky of batches of
 * square matrices, and its eigh, svd, pinv, matrix_rank and cond. */
#ifndef CLTENSOR_LINALG_H
#define CLTENSOR_LINALG_H

#include <cltensor/tensor.h>
#include <cltensor/random.h>
#include <cltensor/sparse.h>

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
 * float32, float64 and float16 (where the device has it) are supported,
 * and complex64/complex128 (as four real products: cltensor/fft.h);
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
 * the pivots' sign; 0 (or -0) for a singular matrix, no error.  Gradient
 * (LinalgDetBackward0, differentiable twice): g det inv(A)^T, and for a
 * singular matrix (det exactly 0: finding one reads the dets back) its
 * cofactor matrix times g, computed as torch's formula of grad mode does,
 * through the SVD.  (Difference: torch 1.13 gives 0 there at first order,
 * its formula multiplying by det = 0, and its second derivatives there
 * miss the terms that run through g; here both are the polynomial det's
 * own.) */
CLT_API clt_status clt_linalg_det(const clt_tensor *a, clt_tensor **out);

/* torch.linalg.slogdet(A): *sign (-1, 1, or 0 for a singular matrix) and
 * *logabsdet (log|det|, -inf for a singular matrix), both [...]; no error
 * for a singular matrix.  Only *logabsdet carries a gradient, inv(A)^T
 * times g; a backward through a singular matrix's is refused (the
 * inversion's "The diagonal element 2 is zero" message), where torch 1.13
 * gives infinities of its perturbed LU's signs.  Two new tensors (both
 * NULL on failure). */
CLT_API clt_status clt_linalg_slogdet(const clt_tensor *a, clt_tensor **sign,
                                      clt_tensor **logabsdet);

/* torch.linalg.cholesky(A, upper): L lower with A = L L^T from A's lower
 * triangle, or with upper non-zero U = L^T from A's upper triangle (a
 * transposed view on a new buffer, as torch's).  A matrix that is not
 * positive-definite is refused: "clt_linalg_cholesky: The factorization
 * could not be completed because the input is not positive-definite (the
 * leading minor of order 3 is not positive-definite).". */
CLT_API clt_status clt_linalg_cholesky(const clt_tensor *a, int upper, clt_tensor **out);

/* ---- the other matrix products of torch -------------------------------------
 * Each is computed by clt_matmul's GEMM (CLBlast, or the CPU kernel on CPU
 * devices), so the same dtypes: float32, float64 and float16 where the
 * device has it, both operands of one dtype (CLT_ERR_DTYPE_MISMATCH
 * otherwise) on one device; integer and bool dtypes give
 * CLT_ERR_DTYPE_UNSUPPORTED (torch computes them on its CPU).  Shapes that
 * do not fit give CLT_ERR_INVALID_ARGUMENT (wrong number of dims) or
 * CLT_ERR_SHAPE_MISMATCH with torch's message.  Gradients with torch
 * 1.13's formulas and grad_fn names.  Enqueue without waiting.  New
 * tensor: release with clt_tensor_free. */

/* torch.mm(a, b): [n, m] @ [m, p], both 2-D (no broadcasting); grad_fn
 * MmBackward0. */
CLT_API clt_status clt_mm(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.bmm(a, b): [B, n, m] @ [B, m, p], both 3-D with one batch size
 * (no broadcasting); grad_fn BmmBackward0. */
CLT_API clt_status clt_bmm(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.mv(a, v): [n, m] @ [m] = [n]; grad_fn MvBackward0. */
CLT_API clt_status clt_mv(const clt_tensor *a, const clt_tensor *v, clt_tensor **out);

/* torch.dot(a, b): the 0-d sum of a[i] b[i] of two 1-D tensors of one
 * size (0 for size 0); grad_fn DotBackward0. */
CLT_API clt_status clt_dot(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.vdot(a, b): dot with a conjugated: for real dtypes clt_dot
 * (grad_fn VdotBackward0); for two complex tensors of one dtype the sum
 * of conj(a[i]) b[i], composed of recorded real products like complex
 * matmul (grad_fn ComplexBackward0). */
CLT_API clt_status clt_vdot(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.addmm(input, m1, m2, beta=beta, alpha=alpha): beta * input +
 * alpha * (m1 @ m2), m1 [n, m] and m2 [m, p] 2-D, input broadcastable to
 * [n, p] (expand's rules and message) and of m1's dtype.  beta 0 ignores
 * input, NaN and inf included, and alpha 0 the product, as torch; factors
 * of 1 launch nothing extra.  grad_fn AddmmBackward0. */
CLT_API clt_status clt_addmm(const clt_tensor *input, const clt_tensor *m1, const clt_tensor *m2,
                             double beta, double alpha, clt_tensor **out);

/* torch.addmv(input, mat, vec, beta=, alpha=): beta * input + alpha *
 * (mat @ vec), mat [n, m], vec [m], input 0-d, [1] or [n]; as clt_addmm
 * otherwise.  grad_fn AddmvBackward0. */
CLT_API clt_status clt_addmv(const clt_tensor *input, const clt_tensor *mat,
                             const clt_tensor *vec, double beta, double alpha, clt_tensor **out);

/* torch.baddbmm(input, b1, b2, beta=, alpha=): beta * input + alpha *
 * bmm(b1, b2), input broadcastable to [B, n, p]; as clt_addmm otherwise.
 * grad_fn BaddbmmBackward0. */
CLT_API clt_status clt_baddbmm(const clt_tensor *input, const clt_tensor *b1,
                               const clt_tensor *b2, double beta, double alpha,
                               clt_tensor **out);

/* torch.addbmm(input, b1, b2, beta=, alpha=): beta * input + alpha *
 * the sum over the batch of b1[i] @ b2[i], b1 [B, n, m], b2 [B, m, p],
 * input broadcastable to [n, p] (one GEMM of [n, B m] @ [B m, p]); as
 * clt_addmm otherwise.  grad_fn AddbmmBackward0. */
CLT_API clt_status clt_addbmm(const clt_tensor *input, const clt_tensor *b1,
                              const clt_tensor *b2, double beta, double alpha,
                              clt_tensor **out);

/* torch.outer(a, b): [n] x [m] = [n, m], a as a column times b
 * (broadcasting multiplication, so any dtypes, promoted as clt_mul); both
 * 1-D ("Expected 1-D argument self, but got 2-D", CLT_ERR_INVALID_ARGUMENT).
 * grad_fn MulBackward0, as torch. */
CLT_API clt_status clt_outer(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.kron(a, b): the Kronecker product, shape a_i * b_i per dim after
 * the shorter shape is padded with leading 1s; any dtypes, promoted as
 * clt_mul.  Computed as a broadcasting product of interleaved views, so at
 * most CLT_MAX_DIMS / 2 dims (CLT_ERR_INVALID_ARGUMENT beyond).  grad_fn
 * ViewBackward0 (torch: UnsafeViewBackward0), through MulBackward0. */
CLT_API clt_status clt_kron(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.linalg.cross(a, b, dim=dim): the cross product along dim (negative
 * counts from the end; CLT_ERR_DIM_OUT_OF_RANGE), where both have size 3
 * (CLT_ERR_SHAPE_MISMATCH otherwise); a and b have the same number of dims, the others broadcast;
 * one dtype (any, integers included; CLT_ERR_DTYPE_MISMATCH otherwise).
 * grad_fn LinalgCrossBackward0. */
CLT_API clt_status clt_linalg_cross(const clt_tensor *a, const clt_tensor *b, int dim,
                                    clt_tensor **out);

/* torch.cross(a, b, dim=dim) with dim given: clt_linalg_cross (torch's
 * deprecated default dim, the first of size 3, is not offered). */
CLT_API clt_status clt_cross(const clt_tensor *a, const clt_tensor *b, int dim,
                             clt_tensor **out);

/* torch.tensordot(a, b, dims): sums the products over the dims dims_a[i]
 * of a and dims_b[i] of b (ndims of each, negative counting from the
 * end); with dims_a and dims_b both NULL, torch's integer form: the last
 * ndims dims of a with the first ndims of b.  The result has a's other
 * dims then b's.  Contracted sizes must be equal (torch 1.13 also sums a
 * dim of size 1 against a larger one; here CLT_ERR_SHAPE_MISMATCH); a dim
 * listed twice or ndims < 0: CLT_ERR_INVALID_ARGUMENT; a dim out of range:
 * CLT_ERR_DIM_OUT_OF_RANGE; one of the lists NULL: CLT_ERR_NULL_ARGUMENT.
 * Composed of permute, reshape and matmul, as torch; grad_fn
 * ViewBackward0 (torch: ReshapeAliasBackward0). */
CLT_API clt_status clt_tensordot(const clt_tensor *a, const clt_tensor *b, int ndims,
                                 const int *dims_a, const int *dims_b, clt_tensor **out);

/* torch.einsum(equation, operands): the sum of products the equation
 * names, as numpy and torch define it: subscripts a-z and A-Z, spaces
 * ignored, one "..." per term for broadcast dims (ellipsis dims of the
 * operands broadcast together, aligned right); a subscript repeated in one
 * operand takes its diagonal ("ii->i", trace "ii"); with "->" the output
 * is explicit (subscripts it lacks are summed, an ellipsis it lacks too),
 * without it the output is the ellipsis dims then the subscripts that
 * occur once, A-Z before a-z.  Size-1 dims broadcast against a subscript's
 * other sizes.  Computed as torch does: diagonals and sums within each
 * operand, then the operands multiplied left to right, each pair by one
 * batched clt_matmul over permuted and reshaped views, so float dtypes as
 * clt_matmul where there are two or more operands.  At most CLT_MAX_DIMS
 * distinct dims (letters plus ellipsis dims) in the whole equation and 32
 * operands.  Errors (CLT_ERR_INVALID_ARGUMENT unless said) with torch's
 * "einsum(): ..." messages: a bad character, a stray '.', subscripts that
 * do not match an operand's dims, fewer or more operands than terms, an
 * output subscript absent from the inputs or repeated; sizes that do not
 * broadcast or a repeated subscript over different sizes:
 * CLT_ERR_SHAPE_MISMATCH.  Gradients through the recorded views,
 * diagonals, sums and matmuls (grad_fn names as those ops', which may
 * differ from torch's in the last view).  operands: n tensors, borrowed.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_einsum(const char *equation, const clt_tensor *const *operands, size_t n,
                              clt_tensor **out);

/* ---- eigenvalues and singular values (Jacobi's methods) ---------------------
 * A is [..., m, n] (square for eigh and eigvalsh), float32 or float64, with
 * clt_linalg_inv's dtype and dimension errors.  Each matrix is decomposed
 * by a work-group of its own with a Jacobi method (cyclic two-sided for
 * eigh, one-sided for the SVD), accumulating in the dtype; the values are
 * then recomputed from A and the vectors (Rayleigh quotients v^T A v / v^T
 * v, and |A v| / |v|), which keeps their errors near sqrt(n) eps |A| (in
 * float32 below LAPACK's, as torch computes them).  Empty batches and
 * matrices give empty results.  NaN
 * in the triangle eigh reads gives NaN results, as torch's; the SVD (and
 * what is computed from it) refuses a matrix with inf or NaN as torch does,
 * "The algorithm failed to converge because the input matrix contained
 * non-finite values." (CLT_ERR_INVALID_ARGUMENT), for which it reads one
 * flag back (a synchronisation); eigh enqueues without waiting.
 * Eigenvectors and singular vectors are unique up to sign
 * (for distinct values): cltensor's convention is that the largest-magnitude
 * component (the first of equal ones) of each eigenvector, and of each of
 * the first min(m, n) columns of U, is positive; V's rows follow U's.
 * LAPACK (torch) may choose other signs; compare up to sign per vector.
 * Gradients: torch 1.13's formulas and grad_fn names (LinalgEighBackward0,
 * LinalgSvdBackward0), which assume distinct eigenvalues (singular
 * values): repeated ones give inf or NaN in the vectors' gradients, as
 * torch's.  New tensors: release each with clt_tensor_free; on failure
 * every out-pointer is set to NULL. */

/* torch.linalg.eigh(A, UPLO=uplo): *eigenvalues [..., n] ascending and
 * *eigenvectors [..., n, n] (columns) of the symmetric matrices whose lower
 * ("L", or NULL) or upper ("U") triangle is read (the other is ignored).
 * Another uplo: "Expected UPLO argument to be 'L' or 'U', but got X"
 * (CLT_ERR_INVALID_ARGUMENT).  The gradient of A (with respect to a
 * symmetric A, not symmetrised, as torch's): V (diag(gL) + skew(V^T gV) /
 * (L_j - L_i)) V^T, skew(X) = (X - X^T) / 2. */
CLT_API clt_status clt_linalg_eigh(const clt_tensor *a, const char *uplo, clt_tensor **eigenvalues,
                                   clt_tensor **eigenvectors);

/* torch.linalg.eigvalsh(A, UPLO=uplo): clt_linalg_eigh's eigenvalues only,
 * the same values (the kernel accumulates the vectors either way: each
 * value is the Rayleigh quotient of its vector; they are kept only when A
 * requires grad, for the gradient V diag(g) V^T). */
CLT_API clt_status clt_linalg_eigvalsh(const clt_tensor *a, const char *uplo, clt_tensor **out);

/* torch.linalg.eig(A): *eigenvalues [..., n] and *eigenvectors [..., n, n]
 * (columns, A V = V diag(w)) of general square matrices A [..., n, n],
 * float32, float64, complex64 or complex128; the results are complex64
 * (float32, complex64 input) or complex128.  Computed on the host in
 * complex double arithmetic after reading A back (waits): Householder
 * reduction to Hessenberg form, shifted QR (Wilkinson's shifts) to a Schur
 * form, back substitution, as LAPACK's geev without its balancing; so a
 * real matrix's real eigenvalues may carry an imaginary part near eps |A|
 * and its conjugate pairs may differ in the last bits.  The order of the
 * values is the Schur form's (LAPACK's may differ: compare sorted).  Each
 * vector has norm 1 and its largest component (the first of equal ones)
 * real and positive, as zgeev's; dgeev (torch on real input) may give a
 * vector the opposite sign.  Errors as torch's: fewer than 2 dims or
 * matrices not square CLT_ERR_INVALID_ARGUMENT; another dtype
 * CLT_ERR_DTYPE_UNSUPPORTED ("Expected a floating point or complex tensor
 * as input"); inf or NaN in A "torch.linalg.eig: input tensor should not
 * contain infs or NaNs." (CLT_ERR_INVALID_ARGUMENT); no convergence
 * within 30 max(10, n) steps for a value CLT_ERR_INVALID_ARGUMENT.
 * Gradient: torch's linalg_eig_backward (grad_fn LinalgEigBackward0, one
 * node for both outputs, as torch's): gA = V^{-H} M V^H with M = diag(gL)
 * when only the values' gradient flows, else M = (V^H gV - V^H V diag(re
 * diag(V^H gV))) / conj(E), E[i][j] = L[j] - L[i] off the diagonal and 1
 * on it, with its diagonal replaced by gL where that flows too; its real
 * part for real A.  A plain backward pass computes it on the host in
 * complex double (reads back: waits); one with create_graph computes the
 * same formula with recorded complex ops (V^{-H} through the real system
 * of twice the size, as clt_linalg_solve has no complex form), so the
 * gradient is differentiable again, as torch's.  As torch, the backward
 * refuses a gV whose V^H gV has a diagonal with an imaginary part above
 * 1e-2 ("linalg_eig_backward: The eigenvectors in the complex case are
 * specified up to multiplication by e^{i phi}. The specified loss function
 * depends on this quantity, so it is ill-defined.",
 * CLT_ERR_INVALID_ARGUMENT; the check reads the diagonal back), and a
 * singular V (A not diagonalizable: the host formula's message, or
 * clt_linalg_solve's under create_graph); repeated eigenvalues give inf or
 * NaN, as torch's.  New tensors: release each with clt_tensor_free; on
 * failure both are NULL. */
CLT_API clt_status clt_linalg_eig(const clt_tensor *a, clt_tensor **eigenvalues,
                                  clt_tensor **eigenvectors);

/* torch.linalg.eigvals(A): clt_linalg_eig's eigenvalues only (the vectors
 * are formed only when A requires grad, for the gradient V^{-H} diag(gL)
 * V^H), the same values and errors.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_linalg_eigvals(const clt_tensor *a, clt_tensor **out);

/* torch.svd_lowrank(A, q, niter, M): an approximate truncated SVD A - M ~
 * U diag(S) V^T of float32 or float64 A [..., m, n] by torch 1.13's
 * randomized range finder (Halko et al.): R [n', q] standard normal from
 * gen (NULL: the default generator; clt_randn), Q = qr(A R).Q refined by
 * niter power iterations Q = qr(A^T Q).Q, Q = qr(A Q).Q, then the SVD of
 * Q^T A (or, where m < n or n > q, the same for A^T, as torch does).  *u
 * [..., m, k], *s [..., k], *v [..., n, k] (V, not Vh; a transposed view
 * where it comes from Vh), k <= min(q, m, n).  M: NULL or a tensor of A's
 * dtype that broadcasts to A's shape, taken off A first.  Exact for a
 * matrix of rank <= q; the values depend on the generator, not on
 * torch's.  Composed of recorded randn, matmul, qr and svd, so gradients
 * come through them (torch's too).  q or niter negative
 * CLT_ERR_INVALID_ARGUMENT; another dtype CLT_ERR_DTYPE_UNSUPPORTED; M
 * that does not broadcast CLT_ERR_SHAPE_MISMATCH.  New tensors: release
 * each with clt_tensor_free; on failure all three are NULL. */
CLT_API clt_status clt_svd_lowrank(const clt_tensor *a, int64_t q, int64_t niter,
                                   const clt_tensor *m, clt_generator *gen, clt_tensor **u,
                                   clt_tensor **s, clt_tensor **v);

/* torch.pca_lowrank(A, q, center, niter): clt_svd_lowrank of A less its
 * column means (mean over dim -2, when center is non-zero) with q
 * negative meaning torch's None, min(6, m, n); q above min(m, n):
 * "q(=7) must be non-negative integer and not greater than min(m, n)=5"
 * (CLT_ERR_INVALID_ARGUMENT).  Outputs, errors and ownership as
 * clt_svd_lowrank's. */
CLT_API clt_status clt_pca_lowrank(const clt_tensor *a, int64_t q, int center, int64_t niter,
                                   clt_generator *gen, clt_tensor **u, clt_tensor **s,
                                   clt_tensor **v);

/* torch.lobpcg's ortho_iparams and ortho_fparams ("ortho" method only):
 * i_max, j_max (ortho_i_max, ortho_j_max; 0: torch's 3), tol, tol_drop,
 * tol_replace (ortho_tol, ortho_tol_drop, ortho_tol_replace; 0: lobpcg's
 * tol) and use_drop (ortho_bparams' ortho_use_drop; default 0). */
typedef struct clt_lobpcg_ortho {
    int64_t i_max, j_max;
    double tol, tol_drop, tol_replace;
    int use_drop;
} clt_lobpcg_ortho;

/* torch.lobpcg(A, k, B, X, n, iK, niter, tol, largest, method): the k
 * largest (largest non-zero) or smallest eigenvalues *eigenvalues [..., k]
 * and B-orthonormal eigenvectors *eigenvectors [..., m, k] (columns, A X =
 * B X diag(E), X^T B X = I) of the symmetric (positive definite, for B)
 * problem A x = e B x, A and B [..., m, m] float32 or float64 (B NULL: the
 * identity), by torch 1.13's LOBPCG iteration on each matrix of the batch:
 * method NULL or "ortho" (torch's default, Stathopoulos and Wu's
 * orthogonal basis, parameters from ortho, NULL for torch's defaults) or
 * "basic" (Knyazev's).  X [..., m, n] (A's batch dims) is the initial
 * approximation, else n (<= 0: k) columns are drawn standard normal from
 * gen (NULL: the default generator) for each matrix in turn; k <= 0 means
 * X's columns, or 1; with X given n is its columns.  iK [m, m] (NULL:
 * none) is the preconditioner of "basic" ("ortho" ignores it, as
 * torch's).  niter bounds the steps (torch's default None is 1000); 0 or
 * negative iterates until the k leading pairs' backward errors |R_j| /
 * (|X_j| (|A X0| + E_j |B X0|) / |X0|) (R = A X - B X diag(E), X0 the
 * initial X, Frobenius norms) are below tol (NULL: sqrt(feps),
 * feps 1.2e-7 for float32, 2.23e-16 for float64).  Each step reads a few
 * norms back (waits).  Errors: m < 3 n "LPBPCG algorithm is not applicable
 * when the number of A rows (=m) is smaller than 3 x the number of
 * requested eigenpairs (=n)", k > n, a method other than the two, tol <= 0
 * (CLT_ERR_INVALID_ARGUMENT); A not square, B not of A's shape, X not
 * [..., m, n] on A's batch, iK not [m, m] (CLT_ERR_SHAPE_MISMATCH); a dtype
 * other than float32/float64 (CLT_ERR_DTYPE_UNSUPPORTED) or B, X, iK not
 * of A's (CLT_ERR_DTYPE_MISMATCH); another device's operand; a failed
 * Cholesky factorisation of a step's Gram matrix (linear dependence, B not
 * positive definite: clt_linalg_cholesky's message), the "ortho" basis's
 * "Overdetermined shape of U" and a converged count that decreases, as
 * torch's.  Unlike torch: with niter <= 0 a run that has not converged
 * within 10000 steps, and a residual that is not finite (inf or NaN in
 * the input), are errors (CLT_ERR_INVALID_ARGUMENT) where torch's loops
 * for ever; k > n and unknown methods are refused (torch returns n pairs,
 * or runs "basic"); "basic" leaves X unchanged (torch's writes into it).
 * With a fixed X the steps are torch's, so the values agree with torch's
 * to rounding; the vectors' signs are arbitrary.  Gradient (grad_fn
 * LOBPCGAutogradFunctionBackward, one node for both outputs): when A or B
 * requires grad the iteration runs on (A + A^T) / 2 (and (B + B^T) / 2),
 * recorded, as torch's, and the backward is torch's
 * _symeig_backward for a part of the eigenspace, gA = U (diag(gE) +
 * (U^T gU) * F) U^T (F_ij = 1 / (e_j - e_i), 0 on the diagonal) minus
 * the solution of the Sylvester equation in the orthogonal complement of
 * U (through the characteristic polynomial of E at A and a Cholesky
 * solve), recorded ops, so differentiable again; X gets no gradient; with
 * B given the backward fails "lobpcg.backward does not support backward
 * with B != I yet." as torch's.  Repeated eigenvalues give inf or NaN.
 * New tensors: release each with clt_tensor_free; on failure both are
 * NULL. */
CLT_API clt_status clt_lobpcg(const clt_tensor *a, int64_t k, const clt_tensor *b,
                              const clt_tensor *x, int64_t n, const clt_tensor *ik, int64_t niter,
                              const double *tol, int largest, const char *method,
                              const clt_lobpcg_ortho *ortho, clt_generator *gen,
                              clt_tensor **eigenvalues, clt_tensor **eigenvectors);

/* torch.lobpcg with a sparse A (and B): clt_lobpcg's iteration, arguments,
 * results and errors, with A [m, m] a sparse matrix of any layout (COO,
 * CSR, CSC, BSR, BSC; 2 sparse dimensions, no batch, no dense dimensions:
 * CLT_ERR_SHAPE_MISMATCH otherwise, as torch cannot reshape a sparse A)
 * whose products A X are clt_sparse_mm's, and B NULL or a sparse matrix of
 * A's shape, dtype and device (a dense B: clt_tensor_to_sparse it, or
 * clt_sparse_to_dense A for clt_lobpcg).  X and iK are dense.  The values
 * agree with clt_lobpcg's on the dense A to rounding.  When A's (or B's)
 * values require grad, the iteration runs on (A + A^T) / 2 (and B's) as
 * torch's, the results get LOBPCGAutogradFunctionBackward, and the
 * backward fails as torch 1.13's: "lobpcg.backward does not support
 * sparse input yet" (CLT_ERR_INVALID_ARGUMENT).  torch's CPU build without
 * MKL refuses BSR and BSC, and a CSR A that requires grad; every layout
 * works here.  New tensors: release each with clt_tensor_free; on failure
 * both are NULL. */
CLT_API clt_status clt_lobpcg_sparse(const clt_sparse *a, int64_t k, const clt_sparse *b,
                                     const clt_tensor *x, int64_t n, const clt_tensor *ik,
                                     int64_t niter, const double *tol, int largest,
                                     const char *method, const clt_lobpcg_ortho *ortho,
                                     clt_generator *gen, clt_tensor **eigenvalues,
                                     clt_tensor **eigenvectors);

/* torch.linalg.svd(A, full_matrices): A = U diag(S) Vh with *s [..., k]
 * descending (k = min(m, n)) and, with full_matrices 0, *u [..., m, k] and
 * *vh [..., k, n], with full_matrices non-zero *u [..., m, m] and *vh
 * [..., n, n] (the columns past k complete an orthonormal basis, as do
 * those of zero singular values).  Gradients as torch's svd_backward; with
 * full_matrices, the gradients of U's columns and Vh's rows past k are
 * ignored, as torch 1.13 does. */
CLT_API clt_status clt_linalg_svd(const clt_tensor *a, int full_matrices, clt_tensor **u,
                                  clt_tensor **s, clt_tensor **vh);

/* torch.linalg.svdvals(A): clt_linalg_svd's S only, [..., k], the same
 * values (U is formed and kept only when A requires grad, for the
 * gradient U diag(g) Vh). */
CLT_API clt_status clt_linalg_svdvals(const clt_tensor *a, clt_tensor **out);

/* torch.svd(A, some, compute_uv): clt_linalg_svd(A, !some) with *v = Vh^T
 * (a transposed view) in place of Vh.  With compute_uv 0 only S is
 * computed and *u, *v are zeros [..., m, m] and [..., n, n], as torch's. */
CLT_API clt_status clt_svd(const clt_tensor *a, int some, int compute_uv, clt_tensor **u,
                           clt_tensor **s, clt_tensor **v);

/* torch.linalg.pinv(A, atol=, rtol=, hermitian=): [..., n, m], V diag(1/S)
 * U^T over the singular values S > max(atol, rtol * S_max) (the others
 * count as 0), or with hermitian non-zero from clt_linalg_eigh of A's
 * lower triangle over |eigenvalues| above the same bound.  atol and rtol
 * may be NULL (torch's None): atol 0; rtol eps * max(m, n) (eps of A's
 * dtype) when atol is NULL or not positive, 0 when atol is given and
 * positive.  torch.linalg.pinv(A, rcond) is rtol = rcond.  grad_fn
 * LinalgPinvBackward0 (torch's pinv_backward). */
CLT_API clt_status clt_linalg_pinv(const clt_tensor *a, const double *atol, const double *rtol,
                                   int hermitian, clt_tensor **out);

/* torch.linalg.matrix_rank(A, atol=, rtol=, hermitian=): int64 [...], the
 * number of singular values (|eigenvalues| with hermitian) above
 * clt_linalg_pinv's bound.  No gradient. */
CLT_API clt_status clt_linalg_matrix_rank(const clt_tensor *a, const double *atol,
                                          const double *rtol, int hermitian, clt_tensor **out);

/* torch.linalg.cond(A, p) for p = 2 (torch's default None) or -2: [...],
 * S_max / S_min (S_min / S_max for -2) from clt_linalg_svdvals (inf for a
 * singular matrix, NaN for a zero one, 0 when k = 0), A of any shape
 * (torch's rule for p = +-2); gradients through svdvals (recorded as its
 * pieces: LinalgSvdBackward0, then the views and the division).  p = 1,
 * -1, inf or -inf: clt_linalg_cond_ord's.  Another p:
 * CLT_ERR_INVALID_ARGUMENT ("linalg.cond got an invalid norm type: 3"). */
CLT_API clt_status clt_linalg_cond(const clt_tensor *a, double p, clt_tensor **out);

/* torch.linalg.cond(A, p) with p as a string: NULL, "2" or "-2" as
 * clt_linalg_cond; "fro", "nuc", "1", "-1", "inf" or "-inf" as torch
 * computes them, norm(A, p) * norm(inv(A), p) with clt_linalg_matrix_norm
 * and clt_linalg_inv_ex (no wait for the reports), for square A only
 * ("A must be batches of square matrices", CLT_ERR_INVALID_ARGUMENT): inf
 * for a singular matrix (torch's 'nuc' there is the nuclear norm of a
 * matrix of inf, an arbitrary value), 0 for an empty A.  Another p:
 * CLT_ERR_INVALID_ARGUMENT ("linalg.cond got an invalid norm type: 3").
 * Gradients through the recorded composition (grad_fn MaskedFillBackward0
 * for these p; torch: NanToNumBackward0 or MulBackward0), those of
 * norm(A) norm(inv(A)) (torch 1.13's backward of all but 'nuc' fails:
 * "one of the variables needed for gradient computation has been modified
 * by an inplace operation"). */
CLT_API clt_status clt_linalg_cond_ord(const clt_tensor *a, const char *ord, clt_tensor **out);


/* ---- QR, least squares, norms and products of chains ------------------------
 * torch 1.13's torch.linalg.qr, lstsq, vector_norm, matrix_norm, norm,
 * matrix_power, multi_dot, vecdot and householder_product, and
 * torch.diag_embed, block_diag, orgqr, geqrf and ormqr.  The matrices are the last two dims of a
 * batch [..., m, n] (torch's "A").  Errors as the factorisations above
 * (float32 or float64, CLT_ERR_DTYPE_UNSUPPORTED otherwise; fewer than 2
 * dims CLT_ERR_INVALID_ARGUMENT) unless said.  New tensors: release each
 * with clt_tensor_free; on failure every output is NULL. */

/* torch.linalg.qr(A, mode): A = Q R by Householder reflections, as
 * LAPACK's geqrf and orgqr, so with torch's signs (R's diagonal may be
 * negative: each reflector maps its column to -sign(a_kk) times its norm;
 * a column already zero below the diagonal is kept as it is).  mode
 * "reduced" (or NULL, torch's default): Q [..., m, k], R [..., k, n], k =
 * min(m, n); "complete": Q [..., m, m], R [..., m, n]; "r": R as reduced
 * and *q an empty [0] tensor, as torch's; another mode:
 * CLT_ERR_INVALID_ARGUMENT ("qr received unrecognized mode ...").  Each
 * matrix is factored by a work-group of its own, in local memory when it
 * fits in 16 KiB; enqueues without waiting.  Gradient: torch's
 * linalg_qr_backward (grad_fn LinalgQrBackward0, one node for Q and one
 * for R, which add up to torch's one), refused by clt_backward as torch
 * refuses it: mode "r" ("The derivative of linalg.qr depends on Q, which
 * is not computed when mode='r'. ..."), and mode "complete" with m > n;
 * it solves with R, so a singular R fails there as clt_linalg_solve does
 * (torch gives inf or NaN). */
CLT_API clt_status clt_linalg_qr(const clt_tensor *a, const char *mode, clt_tensor **q,
                                 clt_tensor **r);

/* torch.linalg.lstsq(A, B).solution: X minimising |A X - B| of least norm
 * (any m and n, rank-deficient A included), computed as pinv(A) B with
 * clt_linalg_pinv's SVD, singular values up to rcond * S_max counted as 0
 * (torch's default rcond, eps of the dtype times max(m, n)).  torch's CPU
 * default driver gelsy finds the rank by QR with column pivoting and an
 * incremental condition estimate instead: the solutions agree where the
 * rank is clear (a gap in the singular values around rcond * S_max); a
 * matrix whose rank sits on the threshold may be ranked otherwise.  B is
 * [..., m, k], or [..., m] (a batch of vectors) when it has one dim fewer
 * than A (X then [..., n]); the batch dims broadcast.  One dtype
 * (CLT_ERR_DTYPE_MISMATCH), one device; B's m not A's:
 * CLT_ERR_SHAPE_MISMATCH; B with more dims than A or two fewer:
 * CLT_ERR_INVALID_ARGUMENT; inf or NaN in A: the SVD's refusal (reads a
 * flag back: waits).  Gradients through the recorded pinv and product:
 * torch's linalg_lstsq_backward, which is pinv's (grad_fn MmBackward0, or
 * the squeeze's for a vector B; torch: LinalgLstsqBackward0). */
CLT_API clt_status clt_linalg_lstsq(const clt_tensor *a, const clt_tensor *b,
                                    clt_tensor **solution);

/* torch.linalg.lstsq(A, B, rcond=, driver=) with its four outputs, the
 * solution as clt_linalg_lstsq's for every driver, rcond NULL for torch's
 * None (a negative rcond: machine precision, as LAPACK's), driver NULL
 * for torch's CPU default "gelsy", or "gelsd", "gelss", "gels" (another:
 * CLT_ERR_INVALID_ARGUMENT, "parameter `driver` should be one of (gels,
 * gelsy, gelsd, gelss)").  As torch hands them out per driver:
 * *rank int64 [...] (the singular values above rcond * S_max; "gels":
 * empty [0]); *singular_values [..., min(m, n)] for "gelsd" and "gelss",
 * empty [0] otherwise (no gradient); *residuals, the squared residual
 * norms of the columns of B ([..., k], or [...] for a vector B), when m >
 * n and, for "gelsd" and "gelss", every matrix has rank n (read back:
 * waits), empty [0] otherwise and always for "gelsy"; they carry
 * gradients through their recorded composition.  "gels" (torch: QR,
 * full-rank A only, garbage otherwise) gives the minimum-norm solution
 * too.  Four new tensors. */
CLT_API clt_status clt_linalg_lstsq_ex(const clt_tensor *a, const clt_tensor *b,
                                       const double *rcond, const char *driver,
                                       clt_tensor **solution, clt_tensor **residuals,
                                       clt_tensor **rank, clt_tensor **singular_values);

/* torch.linalg.vector_norm(x, ord, dims, keepdim): clt_vector_norm_dim's
 * norm (reduce.h: its ords, dtypes, errors and gradient) over the ndims
 * dims of dims (ndims 0: every element, as dim=None; a dim named twice:
 * CLT_ERR_INVALID_ARGUMENT).  Several dims are permuted to the end and
 * merged first (a copy unless they are laid out so): grad_fn
 * LinalgVectorNormBackward0 without keepdim, with it that of the reshape
 * that gives the reduced dims back. */
CLT_API clt_status clt_linalg_vector_norm(const clt_tensor *x, double ord, const int *dims,
                                          int ndims, int keepdim, clt_tensor **out);

/* torch.linalg.matrix_norm(A, ord, dim, keepdim) over the two dims dims[0]
 * and dims[1] (dims NULL: -2 and -1; equal dims: CLT_ERR_INVALID_ARGUMENT).
 * ord is a string, torch's word or number: "fro" (the 2-norm of the
 * elements), "1" / "-1" (the largest / smallest column sum of |A|), "inf"
 * / "-inf" (row sums), "nuc" (the sum of the singular values), "2" / "-2"
 * (the largest / smallest singular value; these three through
 * clt_linalg_svdvals of A with the two dims moved last, so float32 and
 * float64 only, and its refusal of inf and NaN); other orders
 * CLT_ERR_INVALID_ARGUMENT ("Order 3 not supported."), and so is a string
 * that is neither.  Float dtypes (float16 too, except through the SVD),
 * kept; others CLT_ERR_DTYPE_MISMATCH.  Composed as torch's (vector_norm,
 * then amax or amin; svdvals, then sum, amax or amin), with their
 * gradients and grad_fn names. */
CLT_API clt_status clt_linalg_matrix_norm(const clt_tensor *a, const char *ord, const int *dims,
                                          int keepdim, clt_tensor **out);

/* torch.linalg.norm(A, ord, dim, keepdim), dispatching as torch: ord NULL
 * (None) is the 2-norm of the elements over dims (every element when
 * ndims is 0); "fro" and "nuc", or a number with two dims (given, or those
 * of a 2-D A when ndims is 0), clt_linalg_matrix_norm; a number otherwise
 * clt_linalg_vector_norm.  ndims 0, 1 or 2 (CLT_ERR_INVALID_ARGUMENT
 * otherwise); an ord with ndims 0 needs a 1-D or 2-D A ("If dim is not
 * specified but ord is, the input must be 1D or 2D."). */
CLT_API clt_status clt_linalg_norm(const clt_tensor *a, const char *ord, const int *dims,
                                   int ndims, int keepdim, clt_tensor **out);

/* torch.linalg.matrix_power(A, n): A [..., m, m] to the integer power n by
 * torch's repeated squaring (clt_matmul's products, grad_fn MmBackward0);
 * n < 0 inverts first (clt_linalg_inv: a singular A is refused with its
 * message); n = 1 a copy (CloneBackward0); n = 0 the identity in A's
 * shape, which records no gradient (torch's carries a zero one). */
CLT_API clt_status clt_linalg_matrix_power(const clt_tensor *a, int64_t n, clt_tensor **out);

/* torch.linalg.multi_dot(tensors): the product of n >= 2 matrices in the
 * cheapest order (torch's: the three-term comparison for three, the
 * matrix-chain table for more); the first may be 1-D (a row) and the last
 * 1-D (a column), whose dims the result lacks; the others 2-D
 * (CLT_ERR_INVALID_ARGUMENT).  One dtype (CLT_ERR_DTYPE_MISMATCH) and
 * device; sizes that do not chain: CLT_ERR_SHAPE_MISMATCH.  Dtypes as
 * clt_matmul; grad_fn MmBackward0 (the last squeeze's for vectors).
 * tensors: n borrowed tensors. */
CLT_API clt_status clt_linalg_multi_dot(const clt_tensor *const *tensors, size_t n,
                                        clt_tensor **out);

/* torch.linalg.vecdot(x, y, dim=dim): the sum over dim of x * y (x
 * conjugated, which for cltensor's real dtypes changes nothing), x and y
 * broadcast together (clt_mul's rules; dim counts in the broadcast shape,
 * CLT_ERR_DIM_OUT_OF_RANGE); one floating dtype (CLT_ERR_DTYPE_MISMATCH
 * for two, CLT_ERR_DTYPE_UNSUPPORTED for integers and bool, with torch's
 * messages).  grad_fn SumBackward1, as torch. */
CLT_API clt_status clt_linalg_vecdot(const clt_tensor *x, const clt_tensor *y, int dim,
                                     clt_tensor **out);

/* torch.diag_embed(t, offset, dim1, dim2) (torch's defaults 0, -2, -1): a
 * tensor of zeros with one dim more than t, whose diagonal (offset, dim1,
 * dim2) holds t's last dim; dim1 and dim2 count in the result's dims, are
 * of size t's last size + |offset|, and must differ
 * (CLT_ERR_INVALID_ARGUMENT, "diagonal dimensions cannot be identical");
 * a 0-dim t: CLT_ERR_DIM_OUT_OF_RANGE.  Any dtype, kept.  grad_fn
 * DiagEmbedBackward0 (the gradient's diagonal). */
CLT_API clt_status clt_diag_embed(const clt_tensor *t, int64_t offset, int dim1, int dim2,
                                  clt_tensor **out);

/* torch.block_diag(*tensors): the n tensors (0-dim ones as [1, 1], 1-D
 * ones as a row, 2-D ones as they are; more dims: CLT_ERR_INVALID_ARGUMENT)
 * on the diagonal of a 2-D tensor of zeros, in order; the dtype is all of
 * theirs promoted (clt_promote_types), on one device.  n 0 is refused
 * (CLT_ERR_INVALID_ARGUMENT: no device to put the result on; torch gives
 * an empty [1, 0]).  grad_fn BlockDiagBackward0 (each input gets its
 * block).  tensors: n borrowed tensors. */
CLT_API clt_status clt_block_diag(const clt_tensor *const *tensors, size_t n, clt_tensor **out);

/* torch.linalg.householder_product(A, tau): the first n columns of H_0
 * ... H_{k-1}, H_i = I - tau_i v_i v_i^T with v_i column i of A below the
 * diagonal and 1 on it (LAPACK's orgqr; A [..., m, n] with m >= n, tau
 * [..., k] with k <= n and A's batch dims; CLT_ERR_INVALID_ARGUMENT or
 * CLT_ERR_SHAPE_MISMATCH otherwise, with torch's messages; one dtype,
 * CLT_ERR_DTYPE_MISMATCH).  Composed of recorded products, two per
 * reflector, so gradients for A and tau through them (grad_fn
 * SliceBackward0; torch: LinalgHouseholderProductBackward0). */
CLT_API clt_status clt_linalg_householder_product(const clt_tensor *a, const clt_tensor *tau,
                                                  clt_tensor **out);

/* torch.orgqr(A, tau): clt_linalg_householder_product (torch's alias), the
 * same values, errors and gradients.  New tensor. */
CLT_API clt_status clt_orgqr(const clt_tensor *a, const clt_tensor *tau, clt_tensor **out);

/* torch.geqrf(A): LAPACK's compact QR of A [..., m, n] (float32 or
 * float64): *a [..., m, n] holds R on and above the diagonal and the
 * Householder vectors below it (their leading 1 not stored), *tau [...,
 * min(m, n)] the reflectors' factors, H_i = I - tau_i v_i v_i^T, so that
 * clt_linalg_householder_product(*a, *tau) is clt_linalg_qr's Q and the
 * values are torch's (dlarfg's signs; a column already zero below the
 * diagonal gets tau 0).  Fewer than 2 dims: "torch.geqrf: input must have
 * at least 2 dimensions." (CLT_ERR_INVALID_ARGUMENT).  clt_linalg_qr's
 * kernel; enqueues without waiting.  No derivative, as in torch 1.13: both
 * results of an A that requires grad carry GeqrfBackward0, whose backward
 * fails ("the derivative for 'geqrf' is not implemented",
 * CLT_ERR_INVALID_ARGUMENT).  Two new tensors: release each with
 * clt_tensor_free; on failure both are NULL. */
CLT_API clt_status clt_geqrf(const clt_tensor *a, clt_tensor **a_out, clt_tensor **tau);

/* torch.ormqr(A, tau, C, left=, transpose=): Q C (left non-zero,
 * transpose 0), Q^T C, C Q or C Q^T for Q = H_0 ... H_{k-1} [..., mq, mq]
 * made of clt_geqrf's reflectors (A [..., mq, n], tau [..., k], k <=
 * min(mq, n)) without forming Q; C [..., m, p] with m = mq (left) or p =
 * mq.  As torch: C at least 2-D and with A's number of dims, tau one
 * fewer (CLT_ERR_INVALID_ARGUMENT), the batch dims equal (no broadcasting)
 * and C's side of mq (CLT_ERR_SHAPE_MISMATCH, "torch.ormqr: other.shape[-2]
 * must be equal to input.shape[-2]"), one dtype, float32 or float64
 * (CLT_ERR_DTYPE_MISMATCH).  Computed on the host in double after a
 * read-back (waits).  No derivative, as in torch 1.13: grad_fn
 * OrmqrBackward0, whose backward fails ("the derivative for 'ormqr' is not
 * implemented").  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_ormqr(const clt_tensor *a, const clt_tensor *tau, const clt_tensor *c,
                             int left, int transpose, clt_tensor **out);

/* ---- LU, triangular systems, Cholesky solves, matrix_exp, tensor forms -------
 * torch 1.13's torch.linalg.solve_triangular, lu_factor, lu_factor_ex, lu,
 * lu_solve, cholesky_ex, inv_ex, solve_ex, matrix_exp, tensorinv and
 * tensorsolve, ldl_factor, ldl_factor_ex and ldl_solve, and
 * torch.cholesky_solve and cholesky_inverse.  Matrices are
 * the last two dims ([..., m, n]), float32 or float64 with the
 * factorisations' dtype and dimension errors above; operands of one dtype
 * (CLT_ERR_DTYPE_MISMATCH; torch promotes) on one device; batch dims
 * broadcast where torch broadcasts them.  Pivots are int32 and 1-based, as
 * LAPACK's and torch's; info tensors are int32 of the batch dims (0, or
 * LAPACK's positive report).  New tensors: release each with
 * clt_tensor_free; on failure every output is NULL. */

/* torch.linalg.solve_triangular(A, B, upper=, left=, unitriangular=): X
 * with A X = B (left non-zero) or X A = B, reading only A's upper (upper
 * non-zero) or lower triangle, its diagonal taken as ones with
 * unitriangular.  B is [..., n, k] (left) or [..., k, n], at least 2-D
 * ("The input tensor B must have at least 2 dimensions.",
 * CLT_ERR_INVALID_ARGUMENT); sizes that do not fit: CLT_ERR_SHAPE_MISMATCH
 * ("Incompatible shapes of A and B for the equation AX = B (2x2 and
 * 3x1)").  A zero on the diagonal is no error: inf or NaN, as torch's.  A
 * work-item per column of B; enqueues without waiting.  grad_fn
 * LinalgSolveTriangularBackward0 (torch's formulas: gB =
 * solve_triangular(A^T, g, !upper), gA = -gB X^T in A's triangle). */
CLT_API clt_status clt_linalg_solve_triangular(const clt_tensor *a, const clt_tensor *b, int upper,
                                               int left, int unitriangular, clt_tensor **out);

/* torch.linalg.lu_factor_ex(A): *lu [..., m, n] (L below the diagonal,
 * its unit diagonal not stored, U on and above) and *pivots [..., k], k =
 * min(m, n), by partial pivoting as LAPACK's getrf (the first of equal
 * magnitudes is taken, so where LAPACK's blocked code rounds otherwise a
 * pivot may differ), and *info [...]: the first exactly zero pivot U[i, i],
 * 1-based, or 0; no error for a singular matrix.  A work-group per matrix
 * (clt_linalg_inv's kernel); enqueues without waiting.  grad_fn of *lu
 * LinalgLuFactorExBackward0 with torch's formulas (square, wide m < n
 * and tall m > n). */
CLT_API clt_status clt_linalg_lu_factor_ex(const clt_tensor *a, clt_tensor **lu,
                                           clt_tensor **pivots, clt_tensor **info);

/* torch.linalg.lu_factor(A): clt_linalg_lu_factor_ex, reading the reports
 * back (waits) to refuse a matrix with a zero pivot, as torch:
 * "clt_linalg_lu_factor: (Batch element 1): U[2,2] is zero and using it on
 * lu_solve would result in a division by zero. ..."
 * (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_linalg_lu_factor(const clt_tensor *a, clt_tensor **lu,
                                        clt_tensor **pivots);

/* torch.linalg.lu(A): A = P L U with *p [..., m, m] (a permutation
 * matrix, A's dtype), *l [..., m, k] (unit lower) and *u [..., k, n],
 * from clt_linalg_lu_factor_ex's factors; no error for a singular matrix.
 * grad_fn of l and u LinalgLuBackward0 (one node each, which add up to
 * torch's one), torch's formulas for square, wide and tall A; p has
 * none. */
CLT_API clt_status clt_linalg_lu(const clt_tensor *a, clt_tensor **p, clt_tensor **l,
                                 clt_tensor **u);

/* torch.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots): from
 * clt_linalg_lu_factor's LU [..., m, n] and pivots (int32 [..., j], j <=
 * m, LU's batch dims; CLT_ERR_DTYPE_MISMATCH, CLT_ERR_SHAPE_MISMATCH), *p
 * [..., m, m] (LU's dtype; read back to check each pivot is in [1, m],
 * torch's message otherwise, CLT_ERR_INVALID_ARGUMENT: waits), *l [..., m,
 * k] unit lower and *u [..., k, n] upper, k = min(m, n).  With
 * unpack_pivots 0, *p is an empty [0] tensor; with unpack_data 0, *l and
 * *u are, as torch's.  L and U are recorded narrows, tril/triu and a sum,
 * so gradients reach LU through them (torch: LuUnpackBackward0).  New
 * tensors: release each with clt_tensor_free; on failure all are NULL. */
CLT_API clt_status clt_lu_unpack(const clt_tensor *lu, const clt_tensor *pivots, int unpack_data,
                                 int unpack_pivots, clt_tensor **p, clt_tensor **l,
                                 clt_tensor **u);

/* torch.linalg.lu_solve(LU, pivots, B, left=, adjoint=): X with A X = B
 * (A^T X = B with adjoint; X A = B or X A^T = B with left 0) for A = P L
 * U as clt_linalg_lu_factor gives it.  LU [..., n, n]; pivots int32 [...,
 * n] with LU's batch dims (CLT_ERR_DTYPE_MISMATCH, CLT_ERR_SHAPE_MISMATCH)
 * and values in [1, n] (read back to check: waits; CLT_ERR_INVALID_ARGUMENT
 * otherwise); B as clt_linalg_solve_triangular's, its batch dims
 * broadcasting with LU's.  Composed as torch's of the permutation and two
 * recorded triangular solves, so gradients reach LU and B through them
 * (grad_fn LinalgSolveTriangularBackward0 or, where the permutation comes
 * last, MmBackward0; torch: LinalgLuSolveBackward0). */
CLT_API clt_status clt_linalg_lu_solve(const clt_tensor *lu, const clt_tensor *pivots,
                                       const clt_tensor *b, int left, int adjoint,
                                       clt_tensor **out);

/* torch.linalg.ldl_factor_ex(A, hermitian=): A = P L D L^T P^T for the
 * symmetric matrices whose lower triangle A [..., n, n] holds (the upper
 * is not read), by LAPACK's sytrf with uplo 'L' (Bunch-Kaufman pivoting,
 * 1 x 1 and 2 x 2 blocks, the unblocked sytf2 on every size: LAPACK's
 * blocked code for n >= 64 chooses the same pivots up to rounding), so
 * the values equal torch's: *ld [..., n, n] holds L's multipliers below D's
 * blocks (L's unit diagonal not stored, zeros above the diagonal), *pivots
 * int32 [..., n] LAPACK's 1-based pivots (k: rows k and pivots[k]
 * swapped, 1 x 1 block; a pair of equal negative values -p: a 2 x 2 block
 * whose second row was swapped with p), *info int32 [...]: the 1-based
 * index of the first exactly zero D[i, i], or 0.  float32 or float64
 * (complex: CLT_ERR_DTYPE_UNSUPPORTED; hermitian is then the same as
 * symmetric and is accepted either way); square (torch's message,
 * CLT_ERR_INVALID_ARGUMENT).  Computed on the host in double after a
 * read-back (waits).  No derivative, as in torch 1.13: an A that requires
 * grad gives an *ld whose backward fails ("the derivative for
 * 'aten::linalg_ldl_factor_ex' is not implemented",
 * CLT_ERR_INVALID_ARGUMENT).  Three new tensors: release each with
 * clt_tensor_free; on failure all are NULL. */
CLT_API clt_status clt_linalg_ldl_factor_ex(const clt_tensor *a, int hermitian, clt_tensor **ld,
                                            clt_tensor **pivots, clt_tensor **info);

/* torch.linalg.ldl_factor(A, hermitian=): clt_linalg_ldl_factor_ex,
 * reading info back to refuse a singular matrix ("D[2,2] is exactly zero
 * ...", CLT_ERR_INVALID_ARGUMENT; torch 1.13 fails there with an internal
 * assertion).  Two new tensors. */
CLT_API clt_status clt_linalg_ldl_factor(const clt_tensor *a, int hermitian, clt_tensor **ld,
                                         clt_tensor **pivots);

/* torch.linalg.ldl_solve(LD, pivots, B, hermitian=): X with A X = B for
 * the A clt_linalg_ldl_factor factored into LD and pivots (LAPACK's
 * sytrs).  LD [..., n, n]; pivots int32 [..., n] with LD's batch dims
 * (CLT_ERR_DTYPE_MISMATCH, CLT_ERR_SHAPE_MISMATCH) and values sytrf can
 * give (1 to n, or pairs of equal negative values; others
 * CLT_ERR_INVALID_ARGUMENT); B [..., n, k] of LD's dtype, at least 2-D
 * ("The input tensor B must have at least 2 dimensions.",
 * CLT_ERR_INVALID_ARGUMENT), its batch dims broadcasting with LD's.
 * Computed on the host in double after a read-back (waits).  No
 * derivative, as in torch 1.13 (a node whose backward fails, for LD and
 * B).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_linalg_ldl_solve(const clt_tensor *ld, const clt_tensor *pivots,
                                        const clt_tensor *b, int hermitian, clt_tensor **out);

/* torch.linalg.cholesky_ex(A, upper=): clt_linalg_cholesky without the
 * check: *info [...] is the order of the first leading minor that is not
 * positive-definite, or 0, and that matrix's factor is left partial (it
 * may differ from LAPACK's there).  Enqueues without waiting.  grad_fn
 * LinalgCholeskyExBackward0. */
CLT_API clt_status clt_linalg_cholesky_ex(const clt_tensor *a, int upper, clt_tensor **l,
                                          clt_tensor **info);

/* torch.linalg.inv_ex(A): clt_linalg_inv without the check: *info [...]
 * the first zero pivot (1-based) or 0; a singular matrix's inverse holds
 * inf or NaN.  Enqueues without waiting.  grad_fn LinalgInvExBackward0. */
CLT_API clt_status clt_linalg_inv_ex(const clt_tensor *a, clt_tensor **inverse,
                                     clt_tensor **info);

/* torch.linalg.solve_ex(A, B): clt_linalg_solve without the check: *info
 * of the broadcast batch dims, the first zero pivot or 0 (0 for every
 * matrix when B is empty).  Enqueues without waiting.  grad_fn
 * LinalgSolveExBackward0. */
CLT_API clt_status clt_linalg_solve_ex(const clt_tensor *a, const clt_tensor *b,
                                       clt_tensor **result, clt_tensor **info);

/* torch.cholesky_solve(B, L, upper=): X with A X = B for A = L L^T (L
 * lower, its lower triangle read) or, with upper non-zero, A = U^T U;
 * B [..., n, k], at least 2-D, batch dims broadcasting with L's.  Two
 * triangular solves; enqueues without waiting.  grad_fn
 * CholeskySolveBackward0 with torch's formulas (the gradient of L is
 * torch's full matrix, not its triangle). */
CLT_API clt_status clt_cholesky_solve(const clt_tensor *b, const clt_tensor *l, int upper,
                                      clt_tensor **out);

/* torch.cholesky_inverse(L, upper=): (L L^T)^-1 (or (U^T U)^-1), [...,
 * n, n], as clt_cholesky_solve of the identity.  grad_fn
 * CholeskyInverseBackward0 with torch's formula. */
CLT_API clt_status clt_cholesky_inverse(const clt_tensor *l, int upper, clt_tensor **out);

/* torch.linalg.matrix_exp(A): exp(A) of square matrices [..., n, n] by
 * scaling and squaring: A / 2^s with s from the largest 1-norm of the
 * batch (read back: waits), then a Taylor polynomial of the degree that
 * leaves less than eps / 20 (torch: its optimised Taylor polynomials of
 * degree up to 18, chosen per matrix), squared s times, all by
 * clt_matmul's products.  inf or NaN in A gives non-finite results.
 * grad_fn LinalgMatrixExpBackward0: torch's gradient, the upper right
 * block of the exponential of [[A^T, g], [0, A^T]]. */
CLT_API clt_status clt_linalg_matrix_exp(const clt_tensor *a, clt_tensor **out);

/* torch.linalg.tensorinv(A, ind=): the inverse of A reshaped to a square
 * matrix [prod(A.shape[:ind]), prod(A.shape[ind:])], reshaped to
 * A.shape[ind:] + A.shape[:ind].  ind > 0 (CLT_ERR_INVALID_ARGUMENT); the
 * two products unequal: CLT_ERR_INVALID_ARGUMENT with torch's message.
 * clt_linalg_inv's dtypes and singular-matrix refusal.  Composed of
 * recorded reshapes and clt_linalg_inv (grad_fn that of the last reshape,
 * ViewBackward0; torch: ReshapeAliasBackward0). */
CLT_API clt_status clt_linalg_tensorinv(const clt_tensor *a, int64_t ind, clt_tensor **out);

/* torch.linalg.tensorsolve(A, B, dims=): X with tensordot(A, X, X.ndim) =
 * B: the dims of A that dims lists (ndims of them; dims NULL with ndims 0
 * for torch's None) moved to the end first, then A reshaped to a square
 * [prod(B.shape), prod(A.shape[B.ndim:])] matrix and solved with B
 * flattened; X has shape A.shape[B.ndim:].  The products unequal:
 * CLT_ERR_INVALID_ARGUMENT with torch's message.  clt_linalg_solve's
 * dtypes and refusals; grad_fn ViewBackward0 (torch: ViewBackward0). */
CLT_API clt_status clt_linalg_tensorsolve(const clt_tensor *a, const clt_tensor *b,
                                          const int *dims, int ndims, clt_tensor **out);


/* ---- more products, determinants and norms (compositions) ---------------
 * Each hands out a new tensor (release with clt_tensor_free) and records
 * the gradients of the ops it is made of. */

/* torch.ger(a, b): clt_outer. */
CLT_API clt_status clt_ger(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.inner(a, b): a * b when either is 0-d, else the sum over the last
 * dims (equal sizes, else CLT_ERR_SHAPE_MISMATCH), shaped a.shape[:-1] +
 * b.shape[:-1]: clt_tensordot over the last dims (its dtypes: equal). */
CLT_API clt_status clt_inner(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.addr(input, vec1, vec2, beta, alpha): beta * input + alpha *
 * outer(vec1, vec2) of shape [len1, len2] (input expands to it); beta 0
 * ignores input (its NaNs too).  Integer inputs refuse non-integral beta
 * or alpha (CLT_ERR_INVALID_ARGUMENT); bool inputs take (beta and input) or
 * (alpha and vec1 vec2^T), as torch.  1-D vectors only. */
CLT_API clt_status clt_addr(const clt_tensor *input, const clt_tensor *vec1,
                            const clt_tensor *vec2, double beta, double alpha,
                            clt_tensor **out);
/* torch.chain_matmul(*ts): the product of n 2-D matrices (a copy of the
 * one for n 1), clt_linalg_multi_dot's order; n 0 and other dims are
 * errors. */
CLT_API clt_status clt_chain_matmul(const clt_tensor *const *ts, size_t n, clt_tensor **out);
/* torch.matrix_power(a, n): clt_linalg_matrix_power. */
CLT_API clt_status clt_matrix_power(const clt_tensor *a, int64_t n, clt_tensor **out);
/* torch.logdet(A): log det A of square (batches of) floating matrices: NaN
 * where det < 0, -inf where it is 0, as torch 1.13's where(sign == -1,
 * nan, logabsdet) over clt_linalg_slogdet (its gradient). */
CLT_API clt_status clt_logdet(const clt_tensor *a, clt_tensor **out);
/* torch.frobenius_norm(a, dims, keepdim): the 2-norm of the elements over
 * ndims (0, 1 or 2; 0: all elements) dims, clt_linalg_vector_norm; floating
 * a only. */
CLT_API clt_status clt_frobenius_norm(const clt_tensor *a, const int *dims, int ndims,
                                      int keepdim, clt_tensor **out);
/* torch.nuclear_norm(a, dims, keepdim): the sum of the singular values over
 * the two dims (dims NULL: a must be 2-D), clt_linalg_matrix_norm's "nuc". */
CLT_API clt_status clt_nuclear_norm(const clt_tensor *a, const int *dims, int keepdim,
                                    clt_tensor **out);
/* torch.vander(x, N, increasing): for a 1-D x, [len, N] (n NULL: N = len)
 * of the powers x^(N-1) .. x^0 per row (x^0 .. x^(N-1) when increasing),
 * made by a running product as torch; integer and bool x give int64.  A
 * negative N is CLT_ERR_INVALID_ARGUMENT. */
CLT_API clt_status clt_vander(const clt_tensor *x, const int64_t *n, int increasing,
                              clt_tensor **out);
/* torch.linalg.vander(x, N): x of shape (*, n) to (*, n, N) (n NULL: N =
 * x's last size; a 0-d x is 1-D) of increasing powers; N must exceed 1;
 * integer x gives int64, bool is refused. */
CLT_API clt_status clt_linalg_vander(const clt_tensor *x, const int64_t *n, clt_tensor **out);
/* torch.renorm(t, p, dim, maxnorm): each slice of t along dim whose p-norm
 * exceeds maxnorm scaled by maxnorm / (norm + 1e-7), as torch.  t floating
 * and at least 2-d, p > 0 and maxnorm >= 0 (CLT_ERR_INVALID_ARGUMENT). */
CLT_API clt_status clt_renorm(const clt_tensor *t, double p, int dim, double maxnorm,
                              clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
