/* cltensor/sparse.h: sparse COO tensors like PyTorch 1.13's
 * torch.sparse_coo_tensor, with torch.sparse.mm, addmm, sum, softmax,
 * log_softmax, add, scalar products, transposes, coalescing and
 * conversions to and from dense tensors, behind one opaque handle,
 * clt_sparse; the same handle holds compressed sparse row and column
 * matrices (torch.sparse_csr_tensor, torch.sparse_csc_tensor: see
 * "Compressed layouts" below), and torch.sparse.sampled_addmm and
 * Tensor.sparse_mask.
 *
 * Layout.  A clt_sparse of ndim dimensions has sparse_dim sparse ones
 * (first) and dense_dim = ndim - sparse_dim dense ones (last): an int64
 * indices tensor [sparse_dim, nnz] and a values tensor [nnz, *dense_shape]
 * on one device, as torch's _indices() and _values().  A handle keeps its
 * own references to both (the caller may release its handles at once);
 * handles never change once made (every op makes a new one), so several
 * handles may share their tensors.  Duplicate indices are allowed: they
 * add up (to_dense, mm and sum count every entry), until clt_sparse_coalesce
 * sums them into one entry each, in the lexicographic order of the indices,
 * as torch's coalesce().
 *
 * Autograd.  Every op is composed of recorded dense ops (index_select,
 * index_add, mul, cat, sum, ...) of the values and of the dense operands, so
 * gradients reach the values tensor given to clt_sparse_coo_tensor (or the
 * dense tensor given to clt_tensor_to_sparse) and the dense operands, and
 * create_graph works.  Unlike torch, which gives a sparse operand a sparse
 * gradient with its pattern, here the gradient of the values is a dense
 * tensor of their shape [nnz, *dense_shape]: entry i's gradient at row i.
 * Indices carry no gradient.
 *
 * Waits.  What needs index values on the host synchronises: building with
 * check_invariants or without a size, coalescing (and what coalesces:
 * clt_sparse_add, clt_sparse_sum_dims over some of the sparse dims),
 * clt_tensor_to_sparse (nonzero).  clt_sparse_to_dense, clt_sparse_mm,
 * clt_sparse_addmm, clt_sparse_sum, clt_sparse_mul_scalar,
 * clt_sparse_transpose and moves to the same device only enqueue.
 *
 * Devices.  Operands on different devices are CLT_ERR_DEVICE_MISMATCH, as
 * everywhere; clt_sparse_to moves a handle.
 *
 * Errors follow common.h: a status, a message with torch's wording in
 * spirit, every out set to NULL.  Properties of a NULL handle are 0 / NULL.
 *
 * Thread-safety: a handle may be read by several threads at once (it never
 * changes); its tensors follow the rules of tensors (common.h).
 */
#ifndef CLTENSOR_SPARSE_H
#define CLTENSOR_SPARSE_H

#include <cltensor/common.h>
#include <cltensor/device.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_sparse clt_sparse;

/* torch.sparse_coo_tensor(indices, values, size): indices int64 (or int32,
 * converted to an int64 copy, as torch) [sparse_dim, nnz], sparse_dim >= 1;
 * values [nnz, *dense_shape] of any dtype, on indices' device.  size holds
 * ndim = sparse_dim + values' ndim - 1 sizes whose last dense_dim ones are
 * values' trailing sizes; size NULL (ndim ignored) infers each sparse size
 * as the largest index plus one (0 when nnz is 0), as torch.
 * Errors (CLT_ERR_SHAPE_MISMATCH unless said): indices not 2-D ("indices
 * must be sparse_dim x nnz, but got: [3]"), a different nnz ("indices and
 * values must have same nnz, but got nnz from indices: 2, nnz from values:
 * 1"), ndim not sparse_dim + dense_dim ("number of dimensions must be
 * sparse_dim (1) + dense_dim (0), but got 2"), other dense sizes ("values
 * has incorrect size, expected [1, 3], got [1, 2]"), indices of another
 * dtype (CLT_ERR_DTYPE_MISMATCH), the two on different devices
 * (CLT_ERR_DEVICE_MISMATCH).  check_invariants nonzero (or size NULL) reads
 * the indices back (it synchronises) and refuses a negative index or one
 * past its size (CLT_ERR_INDEX_OUT_OF_RANGE: "size is inconsistent with
 * indices: for dim 0, size is 2 but found index 5", "found negative index
 * -1 for dim 0"), as torch always does; zero trusts them, as torch's
 * _sparse_coo_tensor_unsafe: out-of-range indices then give unspecified
 * values (never a read or write outside a buffer; some, such as those past
 * the first dimension's size, are reported at a later synchronisation as
 * index.h says).
 * The handle retains values itself (no copy: gradients reach it) and
 * indices (int64 ones; int32 ones are copied).  The result is not
 * coalesced (torch's is_coalesced() is False), but for nnz <= 1 (True, as
 * torch).  New
 * handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_coo_tensor(const clt_tensor *indices, const clt_tensor *values,
                                         const int64_t *size, int ndim, int check_invariants,
                                         clt_sparse **out);

/* Releases the handle and its references to its tensors.  NULL does
 * nothing. */
CLT_API void clt_sparse_free(clt_sparse *s);

/* s._indices(): the int64 [sparse_dim, nnz] indices, s._values(): the
 * values [nnz, *dense_shape].  A new handle on the same tensor (an alias
 * view: values' gradient reaches the handle's values); do not write into
 * them (handles share them).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_sparse_indices(const clt_sparse *s, clt_tensor **out);
CLT_API clt_status clt_sparse_values(const clt_sparse *s, clt_tensor **out);

/* Properties (no failure; a NULL handle gives 0 / NULL). */
CLT_API int64_t clt_sparse_nnz(const clt_sparse *s);        /* s._nnz() */
CLT_API int clt_sparse_sparse_dim(const clt_sparse *s);     /* s.sparse_dim() */
CLT_API int clt_sparse_dense_dim(const clt_sparse *s);      /* s.dense_dim() */
CLT_API int clt_sparse_ndim(const clt_sparse *s);           /* s.dim() */
/* Borrowed array of ndim sizes, valid while s lives. */
CLT_API const int64_t *clt_sparse_shape(const clt_sparse *s);
CLT_API int clt_sparse_is_coalesced(const clt_sparse *s);   /* s.is_coalesced() */
CLT_API clt_dtype clt_sparse_dtype(const clt_sparse *s);    /* CLT_DTYPE_COUNT for NULL */
/* Borrowed; the device lives until clt_shutdown. */
CLT_API clt_device *clt_sparse_device(const clt_sparse *s);

/* s.coalesce(): one entry per distinct index, sorted lexicographically
 * (row-major), duplicates' values summed (recorded: index_add).  A
 * coalesced s gives a new handle on its tensors.  Synchronises (unless s is
 * coalesced).  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_coalesce(const clt_sparse *s, clt_sparse **out);

/* s.to_dense(): a dense tensor of s's shape and dtype, zero but where s has
 * entries, duplicates summed.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_sparse_to_dense(const clt_sparse *s, clt_tensor **out);

/* t.to_sparse(sparse_dim): the entries of t's first sparse_dim dimensions
 * (1 <= sparse_dim <= t's ndim, else CLT_ERR_INVALID_ARGUMENT, "sparse_dim
 * must be less than or equal to self.dim()") whose slice of the remaining
 * dense dimensions holds a nonzero, in row-major order; coalesced.  The
 * values are a recorded index_select of t: gradients reach t.
 * Synchronises.  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_tensor_to_sparse(const clt_tensor *t, int sparse_dim, clt_sparse **out);

/* s.to(device): indices and values moved as clt_to does (recorded); on
 * s's device a new handle on the same tensors.  New handle: release with
 * clt_sparse_free. */
CLT_API clt_status clt_sparse_to(const clt_sparse *s, clt_device *dev, clt_sparse **out);

/* torch.sparse.mm(a, b) (torch.mm with a sparse left operand): a sparse
 * [n, m] with two sparse dimensions, b dense [m, p] of a's dtype
 * (CLT_ERR_DTYPE_MISMATCH, "expected scalar type Float but found Double")
 * and device; the dense [n, p] product.  a's entries need not be
 * coalesced.  A batched compressed a [*batch, n, m] takes b [*batch, m, p]
 * of the same batch sizes (no broadcasting; CLT_ERR_SHAPE_MISMATCH, "expected
 * 3-D dense", "expected the batch sizes of both operands to match") and
 * gives [*batch, n, p], each batch's product (torch 1.13 on CUDA; its CPU
 * build refuses, "mat1 must be a matrix, got 3-D tensor").  Gradients
 * reach a's values and b.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_sparse_mm(const clt_sparse *a, const clt_tensor *b, clt_tensor **out);

/* torch.sparse.addmm(input, a, b, beta, alpha): beta * input + alpha *
 * (a @ b), input dense and broadcastable to [n, p] ([*batch, n, p] for a
 * batched a; beta 0 ignores its values, NaN included, as torch).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_sparse_addmm(const clt_tensor *input, const clt_sparse *a,
                                    const clt_tensor *b, double beta, double alpha,
                                    clt_tensor **out);

/* torch.sparse.sum(s): the sum of every entry, a dense 0-d tensor of s's
 * dtype (integer and bool values sum to int64, as torch.sum).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_sparse_sum(const clt_sparse *s, clt_tensor **out);

/* torch.sparse.sum(s, dims): the sum over ndims distinct dims (wrapping
 * like Python's; 1 <= ndims <= ndim).  When every sparse dimension is
 * reduced the result is dense, handed out in *dense (*sparse NULL);
 * otherwise it is sparse, coalesced, with the remaining dimensions, in
 * *sparse (*dense NULL).  Synchronises when the result is sparse and a
 * sparse dimension is reduced.  New tensor or handle: release with
 * clt_tensor_free or clt_sparse_free; on failure both are NULL. */
CLT_API clt_status clt_sparse_sum_dims(const clt_sparse *s, const int *dims, int ndims,
                                       clt_tensor **dense, clt_sparse **sparse);

/* a + b of two sparse tensors of one shape, sparse_dim and dtype
 * (CLT_ERR_SHAPE_MISMATCH, CLT_ERR_DTYPE_MISMATCH otherwise, torch's "add:
 * expected sizes of 'self' and 'other' to match, but [2, 3] != [2, 4]"):
 * the entries of both, coalesced (torch coalesces only when both are).
 * Synchronises.  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_add(const clt_sparse *a, const clt_sparse *b, clt_sparse **out);

/* dense + s (torch's add(dense, sparse)): a dense tensor of dense's shape,
 * which must be s's (CLT_ERR_SHAPE_MISMATCH), of the promoted dtype.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_sparse_add_dense(const clt_tensor *dense, const clt_sparse *s,
                                        clt_tensor **out);

/* s * v: the values times v (dtype as clt_mul_scalar's), the indices and
 * coalescedness kept.  A batched compressed s is refused as torch 1.13
 * does (CLT_ERR_SHAPE_MISMATCH, "sparse_mask_sparse_csr expects self to be
 * 2D").  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_mul_scalar(const clt_sparse *s, double v, clt_sparse **out);

/* s.transpose(d0, d1) of two sparse dimensions (s.t() of a 2-D one): the
 * two rows of the indices swapped, the values shared; not coalesced (as
 * torch's).  Dense dimensions are refused (CLT_ERR_INVALID_ARGUMENT).  Of
 * a batched compressed s, the last two dims (as for a 2-D one: CSR to
 * CSC, BSR to BSC) or two batch dims (the layout kept; the compressed
 * indices, plain ones and values transposed and copied, recorded); a
 * batch dim with another is refused as torch does
 * (CLT_ERR_INVALID_ARGUMENT, "transpose(): can only transpose dimensions
 * of the same type (Batch, Sparse, Dense), got 0(Batch) and 1(Sparse)").
 * New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_transpose(const clt_sparse *s, int d0, int d1, clt_sparse **out);

/* t.grad of a leaf whose gradient is sparse (clt_grad_is_sparse,
 * autograd.h: Embedding or EmbeddingBag with sparse set), as torch's: COO
 * of t's shape with one sparse dimension, indices [1, nnz] the rows looked
 * up (padding entries left out), in the order of the lookups and of the
 * backward passes that added them, duplicates not coalesced (is_coalesced
 * false unless nnz <= 1), values [nnz, embedding_dim] each lookup's
 * gradient; after clt_zero_grad(t, 0), torch's zero_() layout (no entries,
 * sparse_dim t's ndim, dense_dim 0, coalesced).  A snapshot: later passes
 * and clt_zero_grad give the leaf new tensors, not this handle's.  Errors: a dense or no gradient
 * (CLT_ERR_INVALID_ARGUMENT).  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_grad_sparse(const clt_tensor *t, clt_sparse **out);

/* torch.sparse.softmax(s, dim) and torch.sparse.log_softmax: over the
 * specified entries only, the unspecified ones counting as -inf (they take
 * no share; a group of one entry gives 1).  Over a sparse dim, the entries
 * of s coalesced that share every other sparse index are softmaxed
 * together; over a dense dim, each entry's values.  dim in [0, ndim)
 * (torch 1.13 refuses negative ones too: CLT_ERR_INVALID_ARGUMENT, "dim
 * must be non-negative and less than input dimensions"); float32 or
 * float64 values (CLT_ERR_DTYPE_UNSUPPORTED otherwise).  The result has
 * the coalesced indices; its values are recorded (gradients reach s's
 * values).  Synchronises (coalescing, grouping) unless s is coalesced and
 * dim is dense.  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_softmax(const clt_sparse *s, int dim, clt_sparse **out);
CLT_API clt_status clt_sparse_log_softmax(const clt_sparse *s, int dim, clt_sparse **out);

/* ---- compressed layouts (CSR, CSC) ----------------------------------------------
 *
 * A CSR handle is a 2-D matrix [nrows, ncols] held as torch's
 * crow_indices [nrows + 1] (entries crow[i] .. crow[i + 1] - 1 are row i's),
 * col_indices [nnz] (sorted and distinct within a row) and values [nnz];
 * a CSC handle the same by columns: ccol_indices [ncols + 1], row_indices
 * [nnz], values [nnz].  Indices are int64 (int32 ones are copied to int64,
 * where torch keeps int32).
 *
 * Batches.  As torch 1.13, a compressed handle (any of CSR, CSC, BSR, BSC)
 * may have batch dimensions first: [*batch, nrows, ncols] held as
 * crow_indices [*batch, nrows + 1], col_indices [*batch, nnz] and values
 * [*batch, nnz] (BSR: [*batch, nnz, R, C]), every batch with the same nnz,
 * each batch's indices relative to its own entries.  clt_sparse_nnz is
 * the entries (blocks) of one batch, clt_sparse_sparse_dim 2 and
 * clt_sparse_dense_dim 0, as torch.  Batched handles serve the
 * constructors, the getters, clt_sparse_to_dense, clt_sparse_to,
 * clt_sparse_sum, clt_sparse_add_dense, clt_sparse_add, clt_sparse_mm and
 * clt_sparse_addmm (each batch's product), clt_sparse_transpose and the
 * conversions between compressed layouts; these are refused for batches
 * as torch 1.13 refuses them: clt_sparse_mul_scalar,
 * clt_tensor_sparse_mask (as a mask) and clt_sparse_sampled_addmm
 * ("sparse_mask_sparse_csr expects self to be 2D"), clt_sparse_mv ("mv:
 * two tensor dim should be 2 and 1") and clt_sparse_to_sparse_coo
 * ("crow_indices is supposed to be a vector"); a COO tensor of other than
 * 2 dims converts to no compressed layout ("Only 2D tensors can be
 * converted to the SparseCsr layout").  Unlike torch 1.13, hybrid (dense)
 * dimensions are not supported: the values have no dimension past nnz
 * (past the blocks).
 *
 * These ops take any layout: clt_sparse_values, clt_sparse_nnz and the
 * other properties, clt_sparse_to_dense, clt_sparse_to, clt_sparse_mm,
 * clt_sparse_addmm, clt_sparse_mv, clt_sparse_sum, clt_sparse_add_dense,
 * clt_sparse_mul_scalar (the layout kept), clt_sparse_transpose (a CSR
 * matrix's transpose is the CSC one on the same tensors, as torch's t()),
 * clt_sparse_add (two operands of one layout; torch's CPU build without
 * MKL refuses CSR additions) and clt_tensor_sparse_mask (COO and CSR
 * masks).
 * Products.  clt_sparse_mm, clt_sparse_addmm and clt_sparse_mv of a CSR
 * or CSC matrix of a floating dtype (float16, bfloat16, float32, float64)
 * or a complex one (complex64, complex128) run one kernel over the
 * compressed rows (each output element the sum of its row's products in
 * the entries' order, 16-bit dtypes accumulated in float32 and rounded
 * once, complex products as (ac - bd, ad + bc)); a CSC matrix's entries
 * are put in row order first by a stable sort on the device (enqueued, no
 * wait).  The gradients are the sampled product g b^T at the entries (the
 * values) and a scatter-add of g's rows (the dense operand), both
 * differentiable again; complex ones conjugate b and the values there (g
 * b^H and A^H g, torch's conjugate Wirtinger calculus).  COO matrices, and the other dtypes, add each entry's scaled row
 * of b at its row (index_add).  Indices trusted without check_invariants
 * that are wrong give unspecified values in the kernel too, never a read
 * outside a buffer.
 *
 * clt_sparse_indices, clt_sparse_coalesce, clt_sparse_sum_dims and the
 * softmaxes take COO handles only (CLT_ERR_INVALID_ARGUMENT otherwise, as
 * torch has no such kernels for CSR); clt_sparse_is_coalesced is 0 for a
 * compressed handle (torch raises) and clt_sparse_sparse_dim 2. */

/* Sparse layouts (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc,
 * torch.sparse_bsr, torch.sparse_bsc). */
typedef enum clt_layout {
    CLT_SPARSE_COO = 0,
    CLT_SPARSE_CSR = 1,
    CLT_SPARSE_CSC = 2,
    CLT_SPARSE_BSR = 3,
    CLT_SPARSE_BSC = 4
} clt_layout;

/* s.layout (no failure; CLT_SPARSE_COO for NULL). */
CLT_API clt_layout clt_sparse_layout(const clt_sparse *s);

/* torch.sparse_csr_tensor(crow_indices, col_indices, values, size):
 * crow_indices [*batch, nrows + 1] and col_indices [*batch, nnz] of one
 * integer dtype,
 * int64 or int32 (CLT_ERR_DTYPE_MISMATCH: "crow_indices and col_indices
 * must have the same dtype, but got int64 and int32, respectively",
 * "crow_indices and col_indices dtype must be Int or Long, but got
 * float32"), values [*batch, nnz] of any dtype, the three on one device.
 * size holds crow_indices' ndim + 1 sizes, {*batch, nrows, ncols}; NULL
 * infers the batch sizes and nrows from crow_indices and ncols as the
 * largest column index plus one (0 without entries), as torch.
 * Errors (CLT_ERR_SHAPE_MISMATCH): index tensors of different ndims
 * ("crow_indices and col_indices dimensionalities must be equal but got 2
 * and 1, respectively") or 0-D, other batch sizes ("all batch dimensions
 * of crow_indices (=[2]), col_indices (=[1]), and values (=[2]) must be
 * equal to tensor batch dimensions (=[2])"), values of fewer dimensions
 * ("values must have dimensionality > sum of batch and block
 * dimensionalities (=1 + 0) but got 1") or more (hybrid: not supported),
 * "col_indices.shape[-1] must be equal to nnz (=3) as defined by
 * values.shape[0], but got 2", "crow_indices.shape[-1] must be equal to
 * the number of rows + 1 (=4), but got 3".
 * check_invariants nonzero (or size NULL) reads the indices back (it
 * synchronises) and checks torch's invariants in torch's order, with its
 * messages, in every batch (CLT_ERR_INVALID_ARGUMENT): "`crow_indices[..., 0] == 0` is not
 * satisfied.", "`crow_indices[..., -1] == nnz` is not satisfied.", "`0 <=
 * crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not
 * satisfied.", "`0 <= col_indices < ncols` is not satisfied." (this one
 * CLT_ERR_INDEX_OUT_OF_RANGE) and that
 * each row's col_indices are sorted and distinct; torch always checks,
 * zero trusts the indices (wrong ones then give unspecified values, never
 * a read or write outside a buffer).  The handle retains values (gradients
 * reach it) and the indices (int64 ones).  New handle: release with
 * clt_sparse_free. */
CLT_API clt_status clt_sparse_csr_tensor(const clt_tensor *crow_indices,
                                         const clt_tensor *col_indices, const clt_tensor *values,
                                         const int64_t *size, int check_invariants,
                                         clt_sparse **out);

/* torch.sparse_csc_tensor(ccol_indices, row_indices, values, size): as
 * clt_sparse_csr_tensor with rows and columns exchanged (ccol_indices
 * [ncols + 1], row_indices [nnz] sorted and distinct within a column; the
 * messages name them and nrows).  New handle: release with
 * clt_sparse_free. */
CLT_API clt_status clt_sparse_csc_tensor(const clt_tensor *ccol_indices,
                                         const clt_tensor *row_indices, const clt_tensor *values,
                                         const int64_t *size, int check_invariants,
                                         clt_sparse **out);

/* s.crow_indices(), s.col_indices() of a CSR handle; s.ccol_indices(),
 * s.row_indices() of a CSC one: int64 tensors ([*batch, n + 1] and
 * [*batch, nnz]), a new handle each on the handle's own (do not write
 * into them).  Another layout is
 * CLT_ERR_INVALID_ARGUMENT ("\"ccol_indices\" expected sparse column
 * compressed tensor layout but got SparseCsr").  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_sparse_crow_indices(const clt_sparse *s, clt_tensor **out);
CLT_API clt_status clt_sparse_col_indices(const clt_sparse *s, clt_tensor **out);
CLT_API clt_status clt_sparse_ccol_indices(const clt_sparse *s, clt_tensor **out);
CLT_API clt_status clt_sparse_row_indices(const clt_sparse *s, clt_tensor **out);

/* t.to_sparse_csr(), t.to_sparse_csc() of a dense t [*batch, n, m] (at
 * least 2-D, else CLT_ERR_SHAPE_MISMATCH): its nonzero entries in
 * row-major (CSR) or column-major (CSC) order, batch by batch; as torch,
 * every batch must hold as many (CLT_ERR_INVALID_ARGUMENT, "Expect the
 * same number of specified elements per batch.") and the batch must not
 * be empty (CLT_ERR_SHAPE_MISMATCH, "to_sparse_csr: Expected product of
 * batch dimensions to be non-zero.").  The values are recorded (gradients
 * reach t).  Synchronises.  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_tensor_to_sparse_csr(const clt_tensor *t, clt_sparse **out);
CLT_API clt_status clt_tensor_to_sparse_csc(const clt_tensor *t, clt_sparse **out);

/* s.to_sparse_csr(), s.to_sparse_csc(), s.to_sparse() (COO) of a handle of
 * any layout.  A COO s must be 2-D with 2 sparse dimensions
 * (CLT_ERR_SHAPE_MISMATCH); its duplicates are summed (recorded).  A
 * batched s converts between compressed layouts batch by batch (torch's
 * rule of equal nnz per batch holds: the entries of BSR blocks that hold
 * zeros count), and not to COO (CLT_ERR_INVALID_ARGUMENT, as torch 1.13).  The
 * same layout gives a new handle on s's tensors.  CSR and CSC to COO give
 * the entries in the compressed order (column-major for CSC, as torch's),
 * marked coalesced for CSR only (torch marks the CSC one coalesced too,
 * though its order is not row-major); they enqueue only.  To CSR or CSC from another
 * layout synchronises (sorting).  New handle: release with
 * clt_sparse_free. */
CLT_API clt_status clt_sparse_to_sparse_csr(const clt_sparse *s, clt_sparse **out);
CLT_API clt_status clt_sparse_to_sparse_csc(const clt_sparse *s, clt_sparse **out);
CLT_API clt_status clt_sparse_to_sparse_coo(const clt_sparse *s, clt_sparse **out);

/* ---- block layouts (BSR, BSC) -------------------------------------------------------
 *
 * torch.sparse_bsr_tensor(crow_indices, col_indices, values, size) and
 * torch.sparse_bsc_tensor(ccol_indices, row_indices, values, size): the
 * compressed indices of a CSR (CSC) matrix whose entries are blocks of
 * blocksize R x C, values [nnz, R, C] (nnz counts blocks; each block row
 * major, in BSC too); the matrix [nrows, ncols] holds block k at rows
 * block_row * R .. + R - 1 and columns block_col * C .. + C - 1.  The
 * arguments, checks, messages and check_invariants are those of
 * clt_sparse_csr_tensor over the blocks (the sizes counted in blocks:
 * crow_indices [nrows / R + 1], `0 <= col_indices < ncols / C`), and
 * values must be 3-D with positive blocksize; size (whose sizes must be
 * multiples of the blocksize: CLT_ERR_SHAPE_MISMATCH, "tensor shape[0]
 * (=3) must be divisible with blocksize[0] (=2) as defined by values
 * shape") NULL infers it from the indices, as torch.  Batches as for CSR
 * (values [*batch, nnz, R, C]); dense dimensions are not supported.
 *
 * Ops: clt_sparse_values ([nnz, R, C]: a new handle on the values given),
 * clt_sparse_nnz (blocks), clt_sparse_crow_indices / col_indices (BSR),
 * ccol_indices / row_indices (BSC), clt_sparse_to_dense, clt_sparse_to,
 * clt_sparse_sum, clt_sparse_add_dense, clt_sparse_mul_scalar (the
 * layout kept), clt_sparse_transpose (BSR.t() is BSC on the same indices,
 * each block transposed, as torch), clt_sparse_mm, clt_sparse_addmm and
 * clt_sparse_mv (every element of every block through the kernel of the
 * compressed products: torch's CPU build without MKL refuses these),
 * clt_sparse_to_sparse_csr / csc / coo (the elements; torch 1.13 refuses
 * blocked inputs there).  clt_sparse_add refuses blocked operands
 * (CLT_ERR_INVALID_ARGUMENT, as torch), and so do clt_tensor_sparse_mask
 * (as a mask), clt_sparse_sampled_addmm and the COO-only ops.  Gradients
 * reach the values [nnz, R, C] given to the constructor (or the dense
 * tensor given to clt_tensor_to_sparse_bsr) and the dense operands. */

/* New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_bsr_tensor(const clt_tensor *crow_indices,
                                         const clt_tensor *col_indices, const clt_tensor *values,
                                         const int64_t *size, int check_invariants,
                                         clt_sparse **out);
/* New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_bsc_tensor(const clt_tensor *ccol_indices,
                                         const clt_tensor *row_indices, const clt_tensor *values,
                                         const int64_t *size, int check_invariants,
                                         clt_sparse **out);

/* t.to_sparse_bsr(blocksize), t.to_sparse_bsc(blocksize) of a dense t
 * [*batch, n, m] (at least 2-D, else CLT_ERR_SHAPE_MISMATCH; batches with
 * torch's rules, as clt_tensor_to_sparse_csr: as many blocks in each)
 * whose last two sizes are multiples of
 * blocksize {R, C} (CLT_ERR_SHAPE_MISMATCH otherwise; a blocksize below 1
 * is CLT_ERR_INVALID_ARGUMENT): the R x C blocks that hold a nonzero, in
 * row-major (BSR) or column-major (BSC) block order; the values are
 * recorded (gradients reach t).  Synchronises.  New handle: release with
 * clt_sparse_free. */
CLT_API clt_status clt_tensor_to_sparse_bsr(const clt_tensor *t, const int64_t *blocksize,
                                            clt_sparse **out);
CLT_API clt_status clt_tensor_to_sparse_bsc(const clt_tensor *t, const int64_t *blocksize,
                                            clt_sparse **out);

/* torch.mv(s, v): s a 2-D sparse matrix [n, m] of any layout with 2
 * sparse dimensions (batched ones refused, as torch), v dense [m] of s's dtype and device; the dense [n]
 * product.  Errors: v not 1-D (CLT_ERR_SHAPE_MISMATCH, "mv: two tensor dim
 * should be 2 and 1"), "mv: expected self.size(-1) == vec.size(-1)"
 * (CLT_ERR_SHAPE_MISMATCH), another dtype (CLT_ERR_DTYPE_MISMATCH).
 * torch's CPU build without MKL refuses CSR; here every layout works.
 * Gradients reach s's values and v.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_sparse_mv(const clt_sparse *s, const clt_tensor *v, clt_tensor **out);

/* torch.sparse.sampled_addmm(input, mat1, mat2, beta, alpha): a CSR handle
 * with input's pattern (and index tensors) whose values are beta *
 * input's values + alpha * (mat1 @ mat2) at those places; mat1 [n, k] and
 * mat2 [k, m] dense, input [n, m] CSR (batched: refused as torch 1.13,
 * CLT_ERR_SHAPE_MISMATCH, "sparse_mask_sparse_csr expects self to be 2D";
 * another layout:
 * CLT_ERR_INVALID_ARGUMENT, "sampled_addmm: Expected result to have sparse
 * csr layout, but got SparseCsc"), all three float32 or float64
 * (CLT_ERR_DTYPE_UNSUPPORTED) of one dtype (CLT_ERR_DTYPE_MISMATCH,
 * "sampled_addmm: Expected mat1 and self to have the same dtype, but got
 * float64 and float32") and device.  Shape errors
 * (CLT_ERR_SHAPE_MISMATCH): "sampled_addmm: Expected mat1 to be a matrix,
 * got 1-D tensor", "sampled_addmm: mat1 and mat2 shapes cannot be
 * multiplied (2x4 and 5x3)", "sampled_addmm: self.shape[-2] must match
 * mat1.shape[-2]", "... self.shape[-1] must match mat2.shape[-1]".  As
 * torch, beta 0 still multiplies input's values (a NaN stays NaN).  Only
 * the nnz sampled dot products are computed.  Gradients reach input's
 * values, mat1 and mat2.  New handle: release with clt_sparse_free. */
CLT_API clt_status clt_sparse_sampled_addmm(const clt_sparse *input, const clt_tensor *mat1,
                                            const clt_tensor *mat2, double beta, double alpha,
                                            clt_sparse **out);

/* torch.hspmm(a, b): a COO [n, m] with 2 sparse dimensions, b dense [m,
 * p] of a's dtype (CLT_ERR_DTYPE_MISMATCH, "expected scalar type float32
 * but found float64") and device; the product a @ b as a hybrid COO
 * tensor [n, p] with 1 sparse dimension: one entry per distinct row of a
 * that has entries (sorted), its values that row of the product [k, p].
 * Not marked coalesced, as torch's.  Errors (CLT_ERR_SHAPE_MISMATCH):
 * "hspmm: Argument #2: matrices expected, got 3D tensor", "hspmm: Argument
 * #3: matrices expected, got 1D tensor", "hspmm: Argument #3: Expected dim
 * 0 size 3, got 4"; a CSR or CSC a is CLT_ERR_INVALID_ARGUMENT (as torch).
 * Without entries the result has indices [1, 0] (torch's have [2, 0]).
 * Gradients reach a's values and b (torch has no hspmm derivative).
 * Synchronises (the distinct rows).  New handle: release with
 * clt_sparse_free. */
CLT_API clt_status clt_sparse_hspmm(const clt_sparse *a, const clt_tensor *b, clt_sparse **out);

/* t.sparse_mask(mask): a sparse handle of mask's layout, indices (shared)
 * and shape, of t's dtype, whose values are t's entries at mask's places
 * (recorded: gradients reach t).  t dense of mask's shape
 * (CLT_ERR_SHAPE_MISMATCH, "sparse_mask: operands have incompatible
 * sizes; self has size [2, 4] but mask has size [2, 3]") and device; a COO
 * mask must be coalesced (CLT_ERR_INVALID_ARGUMENT, "sparse_mask: mask is
 * uncoalesced", as torch: clt_sparse_coalesce first); a CSC mask is
 * refused as torch 1.13 does (CLT_ERR_INVALID_ARGUMENT, "sparse_mask_sparse_csr
 * expects mask to be sparse csr"), and so is a batched one
 * (CLT_ERR_SHAPE_MISMATCH, "... expects self to be 2D").  Enqueues only.  New
 * handle: release with clt_sparse_free. */
CLT_API clt_status clt_tensor_sparse_mask(const clt_tensor *t, const clt_sparse *mask,
                                          clt_sparse **out);

#ifdef __cplusplus
}
#endif

#endif
