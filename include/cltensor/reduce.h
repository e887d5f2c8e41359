/* cltensor/reduce.h: reductions over all elements or along one dimension,
 * like torch.sum, mean, prod, max, min, argmax, argmin, var, std,
 * logsumexp, any and all, the cumulative ops torch.cumsum, cumprod,
 * cummax, cummin and logcumsumexp, sort, argsort
 * and topk, and the vector norms torch.linalg.vector_norm, F.normalize and
 * F.cosine_similarity.
 *
 * The forms without a dimension reduce every element and give a
 * 0-dimensional tensor.  The *_dim forms reduce dimension `dim` (negative
 * counts from the end; outside [-ndim, ndim-1] gives
 * CLT_ERR_DIM_OUT_OF_RANGE) and drop it, or keep it with size 1 when
 * keepdim is non-zero.  Inputs may be strided views.
 *
 * Result dtypes follow PyTorch: sum and prod of bool and integer tensors
 * give int64, of floating tensors the same dtype (float16 accumulates in
 * float32); mean, var and std need a floating dtype (CLT_ERR_DTYPE_MISMATCH
 * otherwise); max and min keep the dtype; argmax and argmin give int64
 * indices (flat indices for the forms without a dimension) and refuse bool
 * tensors (CLT_ERR_DTYPE_MISMATCH), as PyTorch does.
 *
 * Empty reductions: sum gives 0, prod 1, mean and var NaN.  max, min,
 * argmax and argmin of no elements fail with CLT_ERR_INVALID_ARGUMENT, as
 * they have no identity.  NaN propagates: max and min of data with a NaN are
 * NaN and argmax/argmin point at the first NaN; ties give the first index.
 *
 * The summation order depends only on the shape (fixed chunks of 4096
 * elements, 64 lanes each, combined pairwise), never on the device or its
 * work-group size, so two devices give bit-identical results.  var and std
 * of float32 data accumulate in float64 where the device has it, as
 * PyTorch's CPU kernels do (squares of deviations beyond 1.8e19 would
 * overflow float32): there a device without float64 may differ from one
 * with it.  Each call enqueues its kernels and returns without waiting.
 *
 * On success every function hands out a new tensor on the input's device:
 * release it with clt_tensor_free.  Setting
 * CLTENSOR_REDUCE_STYLE to "cpu" or "gpu" forces the kernel variant (for
 * testing); by default it follows the device type. */
#ifndef CLTENSOR_REDUCE_H
#define CLTENSOR_REDUCE_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sum of all elements (0-dim).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_sum(const clt_tensor *a, clt_tensor **out);

/* Like torch.trace(t): the sum of the main diagonal of the 2-D t, as
 * clt_sum of it (integers give int64).  TraceBackward0.  New tensor. */
CLT_API clt_status clt_trace(const clt_tensor *t, clt_tensor **out);

/* Sum along dim.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_sum_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);

/* Tensor.sum_to_size(size): t summed to the ndim sizes `size`, which must
 * expand to t's shape (each size t's or 1, t having at least ndim
 * dimensions; else CLT_ERR_SHAPE_MISMATCH, "size {[4]} is not expandable
 * to size {[2, 3]}.").  The leading dimensions are summed away and those
 * where size is 1 summed with keepdim; integer and bool tensors give
 * int64, as clt_sum_dim.  A size equal to t's shape gives a view of t in
 * t's dtype (torch returns t itself), whose gradient passes unchanged,
 * except the empty size, which always sums (a 0-d t too: int64 for an
 * integer one), as torch's sum_to.
 * Differentiable (SumBackward1).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_sum_to_size(const clt_tensor *t, int ndim, const int64_t *size,
                                   clt_tensor **out);

/* Mean of all elements (0-dim); floating and complex dtypes only (clt_sum
 * and clt_sum_dim take complex tensors too).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_mean(const clt_tensor *a, clt_tensor **out);
/* Mean along dim.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_mean_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);

/* Product of all elements (0-dim).  Complex tensors too (see
 * cltensor/fft.h: composed of recorded products, whose gradients give
 * torch's).  New tensor: release with clt_tensor_free.
 *
 * The gradient of clt_prod and clt_prod_dim is decided per reduced slice:
 * g * result / x where the slice has no zero (NaN for an inf element, as in
 * PyTorch); where it has a zero, g times the product of the others (for an
 * element other than the slice's only zero that is 0, or NaN when the
 * others hold an inf or NaN: 0 * inf); clt_prod of a tensor with two or
 * more zeros has gradient 0 throughout.  clt_prod's gradient is PyTorch
 * 1.13's, but not its second derivative with two or more zeros, which is
 * the product's own here (the gradient's formula differentiated, as
 * torch's prod_dim does) and 0 in torch 1.13 (its prod_backward then
 * returns zeros that carry no history).  For clt_prod_dim PyTorch 1.13
 * instead takes the product of the others for every element of every
 * slice as soon as the whole tensor holds a zero, so with a zero in one
 * slice and an inf or NaN in another slice that has none, the two differ
 * there (PyTorch's inf or finite values where this gives NaN).  A
 * deliberate difference: PyTorch's choice needs the host to wait for the
 * count of zeros. */
CLT_API clt_status clt_prod(const clt_tensor *a, clt_tensor **out);
/* Product along dim.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_prod_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);

/* Largest element (0-dim), NaN if any is NaN.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_max(const clt_tensor *a, clt_tensor **out);
/* Largest elements along dim and where they are, like torch.max(a, dim):
 * *values has a's dtype, *indices (int64) the index along dim of the first
 * largest element, or of the first NaN, as clt_argmax_dim; both come from
 * one pass.  indices may be NULL when unwanted.  The gradient flows to the
 * element each index picks.  New tensors: release each with
 * clt_tensor_free. */
CLT_API clt_status clt_max_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                               clt_tensor **indices);

/* Smallest element (0-dim), NaN if any is NaN.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_min(const clt_tensor *a, clt_tensor **out);
/* Smallest elements along dim and their indices, like torch.min(a, dim);
 * as clt_max_dim.  New tensors: release each with clt_tensor_free. */
CLT_API clt_status clt_min_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                               clt_tensor **indices);

/* Flat index (int64, 0-dim) of the first largest element, or of the first
 * NaN.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_argmax(const clt_tensor *a, clt_tensor **out);
/* Index along dim of the first largest element (int64).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_argmax_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);

/* Flat index (int64, 0-dim) of the first smallest element, or of the first
 * NaN.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_argmin(const clt_tensor *a, clt_tensor **out);
/* Index along dim of the first smallest element (int64).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_argmin_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);

/* Sorts a along dim, like torch.sort(a, dim, descending, stable=True):
 * *values (a's dtype and shape) holds each slice along dim in ascending
 * order (descending when descending is non-zero), *indices (int64) where
 * each value was along dim.  NaN sorts as the largest value (last
 * ascending, first descending), -0.0 and 0.0 are equal, and equal values
 * keep their original order in both directions (a stable sort), so the
 * result is unique and the same bits on every device.  torch 1.13's
 * default (stable=False) gives the same order for slices of up to 16
 * elements; on longer slices with ties its CPU kernel may order the equal
 * values' indices otherwise.  Any dtype, bool included; a 0-dim tensor is
 * a slice of one (dim -1 or 0).  Either output may be NULL when unwanted,
 * not both (CLT_ERR_NULL_ARGUMENT).
 * The gradient of the values puts g back at each index.  New tensors:
 * release each with clt_tensor_free. */
CLT_API clt_status clt_sort(const clt_tensor *a, int dim, int descending, clt_tensor **values,
                            clt_tensor **indices);
/* torch.msort(t): clt_sort's values along dim 0, ascending (SortBackward0
 * for the gradient).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_msort(const clt_tensor *t, clt_tensor **out);
/* The indices of clt_sort, like torch.argsort(a, dim, descending) with the
 * stable order.  Not differentiable.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_argsort(const clt_tensor *a, int dim, int descending, clt_tensor **out);
/* The k largest elements along dim (the k smallest when largest is 0) and
 * their int64 indices, like torch.topk(a, k, dim, largest, sorted): the
 * first k of clt_sort(a, dim, largest), bit for bit (k up to 16 is
 * selected in chunks without sorting the rest; a larger k by clt_sort's
 * merge passes making only the first k of each merged run), so they are
 * always in
 * sorted order, whatever `sorted` says (torch leaves the order unspecified
 * when it is 0), NaN counts as the largest value, and among equal values
 * the lower indices come first and are the ones taken (torch's CPU kernel
 * may pick and order ties otherwise).  k outside [0, size along dim] gives
 * CLT_ERR_INVALID_ARGUMENT ("selected index k out of range"); a 0-dim
 * tensor takes k 0 or 1 and gives itself, as torch does.  bool tensors are
 * refused (CLT_ERR_DTYPE_MISMATCH), as torch 1.13's CPU topk refuses them;
 * float16 is taken (torch's CPU kernel refuses it, its CUDA kernel does
 * not).  Either output may be NULL, not both (CLT_ERR_NULL_ARGUMENT).
 * The gradient of the values puts g
 * back at each index, 0 elsewhere.  New tensors: release each with
 * clt_tensor_free. */
CLT_API clt_status clt_topk(const clt_tensor *a, int64_t k, int dim, int largest, int sorted,
                            clt_tensor **values, clt_tensor **indices);

/* Variance of all elements (0-dim): sum((x - mean)^2) / max(0, N -
 * correction); correction 1 is the unbiased estimate (torch's default), 0
 * the population variance.  Floating and complex dtypes (a complex a
 * gives sum |x - mean|^2 / max(0, N - correction) in its parts' dtype, as
 * torch; see cltensor/fft.h).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_var(const clt_tensor *a, double correction, clt_tensor **out);
/* Variance along dim.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_var_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                               clt_tensor **out);

/* Standard deviation, sqrt of clt_var.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_std(const clt_tensor *a, double correction, clt_tensor **out);
/* Standard deviation along dim.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_std_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                               clt_tensor **out);

/* log(sum(exp(x))) along dim, like torch.logsumexp(a, dim, keepdim):
 * computed as PyTorch does, m + log(sum(exp(x - m))) with m the slice's
 * largest element (taken as 0 where it is infinite), so large values do
 * not overflow.  A slice of -inf gives -inf, one holding +inf gives inf,
 * one holding NaN gives NaN; a slice without elements gives -inf.
 * Floating inputs keep their dtype; bool and integer inputs give float32
 * (torch's default dtype).  The gradient is g * exp(x - result), the
 * softmax along dim (NaN at elements equal to an infinite result, as in
 * PyTorch).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_logsumexp(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);
/* clt_logsumexp over every element (0-dim), like torch.logsumexp(a,
 * tuple(range(a.dim()))).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_logsumexp_all(const clt_tensor *a, clt_tensor **out);

/* Cumulative sums along dim, like torch.cumsum(a, dim): element k along
 * dim is the sum of elements 0..k; the result has a's shape.  Floating
 * inputs keep their dtype, bool and integer inputs give int64 (PyTorch's
 * rule).  Sums run in the accumulator PyTorch's CPU kernel (at::cumsum)
 * uses: double for float32 and float64, float for float16, int64 for
 * integers.  Where there are enough slices to occupy the device, each is
 * added up in order, one element after the other: the results are then
 * PyTorch's CPU results bit for bit, each float32 one the float32 nearest
 * the float64 running sum.  Fewer, longer slices are cut into chunks
 * (the number chosen from the device's compute units; not on a CPU of
 * under 4, where reading each slice twice would gain nothing) added up in
 * parallel, the chunks' totals added in order and carried into each chunk,
 * as torch's GPU kernels do: integer sums stay exact, float64 results and
 * float16 ones may differ from the sequential sum by about a rounding per
 * chunk, and float32 ones (from double) only where the double sum falls
 * within a double rounding of a float32 tie.  On a device without float64,
 * float32 adds in a compensated (Kahan) float sum instead: each result
 * within about 2^-23 times the sum of the magnitudes so far, plus its
 * rounding to float32.
 * Complex tensors sum their parts apart, as above.  The gradient is the
 * cumulative sum of g from the end (recorded with create_graph: it is
 * differentiable again).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_cumsum(const clt_tensor *a, int dim, clt_tensor **out);
/* Cumulative products along dim, like torch.cumprod(a, dim): dtypes,
 * accumulators and the parallel chunks as clt_cumsum's (bool and integer
 * inputs give int64, wrapping on overflow as torch's).  The gradient is
 * torch's cumprod_backward, right where slices hold zeros: before a
 * slice's first zero the reversed cumulative sum of g * out over a, at
 * that zero the product of the elements before it times the sum of g times
 * the running product after it (up to the next zero), 0 after it.  A
 * complex a: see cltensor/fft.h.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_cumprod(const clt_tensor *a, int dim, clt_tensor **out);
/* Running maxima along dim and their int64 indices, like torch.cummax(a,
 * dim): *values has a's dtype and shape, *indices where along dim each
 * value was.  As torch 1.13: among equal values the last one's index is
 * taken (>=), and a NaN, once met, stays, with the index of the latest
 * NaN.  Every dtype (torch's CPU kernel refuses float16, its CUDA kernel
 * does not); a 0-dim tensor gives itself and index 0, and as in torch 1.13
 * a 0-dim or empty input takes any dim.  Either output may
 * be NULL when unwanted, not both (CLT_ERR_NULL_ARGUMENT).  The gradient
 * of the values adds g up at each index (scatter_add).  New tensors:
 * release each with clt_tensor_free. */
CLT_API clt_status clt_cummax(const clt_tensor *a, int dim, clt_tensor **values,
                              clt_tensor **indices);
/* Running minima along dim, like torch.cummin(a, dim): as clt_cummax with
 * <= (the last of equal minima).  New tensors: release each with
 * clt_tensor_free. */
CLT_API clt_status clt_cummin(const clt_tensor *a, int dim, clt_tensor **values,
                              clt_tensor **indices);
/* log(cumsum(exp(a))) along dim, like torch.logcumsumexp(a, dim), stable:
 * each step is torch's log_add_exp (the larger plus log1p(exp(smaller -
 * larger))), in double for float32 where the device has it; -inf elements
 * add nothing, +inf gives inf from there on, NaN spreads.  Floating dtypes
 * only (others: CLT_ERR_DTYPE_MISMATCH); float16 is taken (torch's CPU
 * kernel refuses it).  Long slices are cut into chunks as in clt_cumsum, so
 * results may differ from the sequential ones by a rounding per chunk.
 * The gradient is torch's logcumsumexp_backward (g's positive and negative
 * parts each through a reversed logcumsumexp, so nothing overflows).  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_logcumsumexp(const clt_tensor *a, int dim, clt_tensor **out);

/* Whether any element is non-zero, like torch.any(a): 0-dim bool, false
 * for no elements.  NaN counts as true (it is not 0).  Any dtype; as in
 * PyTorch 1.13, uint8 input gives a uint8 0 or 1 instead of bool.  Not
 * differentiable.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_any(const clt_tensor *a, clt_tensor **out);
/* Whether every element is non-zero, like torch.all(a): true for no
 * elements; otherwise as clt_any.  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_all(const clt_tensor *a, clt_tensor **out);
/* clt_any along dim (torch.any(a, dim, keepdim)).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_any_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);
/* clt_all along dim (torch.all(a, dim, keepdim)).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_all_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);


/* ---- vector norms ----------------------------------------------------------
 * torch.linalg.vector_norm(a, ord, dim, keepdim) as PyTorch 1.13 computes
 * it on the CPU: ord 2 sqrt(sum(x^2)), 1 sum(|x|), INFINITY max(|x|),
 * -INFINITY min(|x|), 0 the count of non-zero elements (NaN counts), any
 * other ord, positive or negative, sum(|x|^ord)^(1/ord) (so a zero element
 * makes a negative-ord norm 0).  Nothing is rescaled, as in PyTorch 1.13:
 * where the sum of |x|^ord overflows the dtype the norm is inf (ord 2 of two
 * float32 values of 1.7e19), where it underflows 0 (ord 2 of float32 values
 * of 1e-30).  NaN in a slice gives NaN (except for
 * ord 0).  Floating dtypes only, kept in the result; bool and integer
 * tensors fail with CLT_ERR_DTYPE_MISMATCH, a NaN ord with
 * CLT_ERR_INVALID_ARGUMENT (a deliberate difference: PyTorch computes with
 * it and gives NaN).  A slice without elements gives 0 for ord >= 0
 * and fails with CLT_ERR_INVALID_ARGUMENT for a negative or infinite ord
 * (no identity), as in PyTorch.
 *
 * The gradient is PyTorch's (one LinalgVectorNormBackward0 node): ord 2
 * g * x / norm, 0 where the norm is 0; ord 1 g * sign(x); ord +-inf
 * g * sign(x) shared evenly between the elements whose |x| equals the norm
 * (a NaN gets 0, as torch.sign(NaN) is 0); ord 0 none (the input's gradient
 * is left alone, as PyTorch leaves it None); other ord the derivative of
 * the formula, 0 where the norm is 0 (ord > 1) or where x is 0 (ord < 1). */

/* The ord-norm of all elements (0-dim), torch.linalg.vector_norm(a, ord).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_vector_norm(const clt_tensor *a, double ord, clt_tensor **out);
/* The ord-norm along dim, torch.linalg.vector_norm(a, ord, dim, keepdim).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_vector_norm_dim(const clt_tensor *a, double ord, int dim, int keepdim,
                                       clt_tensor **out);

/* torch.dist(a, b, p): the p-norm of a - b (broadcast, promoted as
 * clt_sub) over all its elements, as clt_vector_norm of the difference
 * (0-dim; complex operands give the real norm of the complex difference).
 * An empty difference gives 0 for every p, as torch's.  The common dtype
 * must be floating or complex (CLT_ERR_DTYPE_MISMATCH, torch's "norm():
 * input dtype should be either floating point or complex").  (Deliberate
 * difference: a NaN p is refused as by clt_vector_norm, where torch gives
 * NaN.)  Gradients through the difference and the norm (torch records one
 * DistBackward0 node).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_dist(const clt_tensor *a, const clt_tensor *b, double p,
                            clt_tensor **out);

/* F.normalize(a, p, dim, eps): a / max(norm, eps), the norm
 * clt_vector_norm_dim(a, p, dim, keepdim 1) broadcast back along dim
 * (torch's defaults: p 2, dim 1, eps 1e-12); an empty a gives an empty
 * result for every p, as in PyTorch.  Where the norm is below eps
 * no gradient flows through it (clamp_min's).  Floating dtypes only
 * (CLT_ERR_DTYPE_MISMATCH).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_normalize(const clt_tensor *a, double p, int dim, double eps,
                                 clt_tensor **out);

/* F.cosine_similarity(x1, x2, dim, eps) of PyTorch 1.13 (torch's defaults:
 * dim 1, eps 1e-8): x1 and x2 broadcast together, then
 * sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps))) along dim, |.| the
 * 2-norm along dim; dividing first keeps large values from overflowing
 * (1e30-sized vectors give 0: their norm overflows).  As in PyTorch 1.13
 * the clamp to eps does not stop the gradient: it flows through the clamped
 * norm as through the norm (x / max(|x|, eps) times the norm's gradient).  The dtype is the two inputs' promoted dtype, which must
 * be floating (CLT_ERR_DTYPE_MISMATCH otherwise): an integer or bool input
 * is converted to it first.  Shapes that do not broadcast fail with
 * CLT_ERR_SHAPE_MISMATCH.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_cosine_similarity(const clt_tensor *x1, const clt_tensor *x2, int dim,
                                         double eps, clt_tensor **out);

/* ---- more reductions and order statistics --------------------------------------
 * torch 1.13's amax, amin, aminmax, nansum, nanmean, count_nonzero,
 * var_mean, std_mean, median, nanmedian, kthvalue, mode, quantile and
 * nanquantile.  Functions taking a list of dims (dims, ndims) reduce each
 * dim it names (negative ones count from the end; a dim named twice is
 * CLT_ERR_INVALID_ARGUMENT, "dim 0 appears multiple times in the list of
 * dims"); ndims 0 reduces every dim, as torch's dim=().  The order
 * statistics sort each slice with clt_sort's order (NaN after every
 * number, ties by index) and pick from it, so values are torch's; where
 * equal values tie, the index is that of the stable sort (see each). */

/* torch.amax(a, dims, keepdim) and torch.amin: the largest (smallest)
 * elements over dims, NaN where a slice holds one; any dtype, kept.  A
 * reduced dim of size 0 is CLT_ERR_INVALID_ARGUMENT ("Expected reduction
 * dim 0 to have non-zero size"), as are no dims on an empty tensor.
 * AmaxBackward0 (AminBackward0): g shared evenly among the elements of each
 * slice equal to its result; NaN throughout a slice whose result is NaN
 * (g / 0 * 0), as torch's.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_amax(const clt_tensor *a, const int *dims, int ndims, int keepdim,
                            clt_tensor **out);
CLT_API clt_status clt_amin(const clt_tensor *a, const int *dims, int ndims, int keepdim,
                            clt_tensor **out);

/* torch.aminmax(a): *min and *max of every element (0-dim), a's dtype; an
 * empty a is CLT_ERR_INVALID_ARGUMENT ("cannot compute aminmax over an
 * empty dimension as the operation has no identity").  They are clt_amin
 * and clt_amax, gradients included (torch 1.13 has no derivative for
 * aminmax and fails in backward: a deliberate difference).  Both out
 * pointers are required; on failure both are NULL.  New tensors: release
 * each with clt_tensor_free. */
CLT_API clt_status clt_aminmax(const clt_tensor *a, clt_tensor **min, clt_tensor **max);
/* torch.aminmax(a, dim=dim, keepdim=keepdim); a size-0 dim is
 * CLT_ERR_INVALID_ARGUMENT.  A 0-dim a gives 0-dim results (torch 1.13
 * resizes them to [1] with keepdim, with a deprecation warning).  As
 * clt_aminmax otherwise. */
CLT_API clt_status clt_aminmax_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **min,
                                   clt_tensor **max);

/* torch.nansum: clt_sum with NaNs counted as 0 (dtypes as clt_sum: bool
 * and integers give int64).  NansumBackward0: g, 0 at the NaNs.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_nansum(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_nansum_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out);

/* torch.nanmean: the mean of the elements that are not NaN (NaN where
 * there are none), computed as torch does, nansum / count (so the
 * gradient's node is DivBackward0).  Floating dtypes only
 * (CLT_ERR_DTYPE_MISMATCH).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_nanmean(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_nanmean_dim(const clt_tensor *a, int dim, int keepdim,
                                   clt_tensor **out);

/* torch.count_nonzero(a, dims): the number of elements that are not 0
 * (NaN counts) over dims, int64, the dims dropped.  Any dtype.  Not
 * differentiable.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_count_nonzero(const clt_tensor *a, const int *dims, int ndims,
                                     clt_tensor **out);

/* torch.var_mean(a, correction=...): *var as clt_var and *mean as
 * clt_mean of every element (floating dtypes only).  The gradients are
 * those of clt_var and clt_mean: each output records its own node
 * (VarBackward0 and MeanBackward1; torch records one VarMeanBackward0 for
 * both).  The mean is clt_mean's: inf for a slice holding an inf where
 * torch's one-pass (Welford) mean may give NaN, depending on where the inf
 * sits.  Both out pointers are required; on failure both are NULL.  New
 * tensors: release each with clt_tensor_free. */
CLT_API clt_status clt_var_mean(const clt_tensor *a, double correction, clt_tensor **var,
                                clt_tensor **mean);
/* torch.var_mean(a, dim, correction=..., keepdim=...).  As clt_var_mean. */
CLT_API clt_status clt_var_mean_dim(const clt_tensor *a, int dim, double correction,
                                    int keepdim, clt_tensor **var, clt_tensor **mean);
/* torch.std_mean: as clt_var_mean with clt_std (StdBackward0). */
CLT_API clt_status clt_std_mean(const clt_tensor *a, double correction, clt_tensor **std,
                                clt_tensor **mean);
CLT_API clt_status clt_std_mean_dim(const clt_tensor *a, int dim, double correction,
                                    int keepdim, clt_tensor **std, clt_tensor **mean);

/* torch.median(a): the lower median of every element (the element at
 * position (n - 1) / 2 of the sorted n), NaN if any is NaN, NaN for no
 * elements (0 for an integer dtype, where torch casts NaN); 0-dim, a's
 * dtype.  Numeric dtypes; bool is
 * CLT_ERR_DTYPE_MISMATCH, as in torch.  MedianBackward0: g shared evenly
 * among the elements equal to the result (among the NaNs when it is
 * NaN).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_median(const clt_tensor *a, clt_tensor **out);
/* torch.median(a, dim, keepdim): *values the lower median of each slice
 * (its first NaN where it has one), *indices (int64, may be NULL) where it
 * was along dim: among equal values the one the stable sort puts at that
 * position.  A size-0 dim is CLT_ERR_INVALID_ARGUMENT.  MedianBackward1:
 * g to the element each index picks.  New tensors: release each with
 * clt_tensor_free. */
CLT_API clt_status clt_median_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                                  clt_tensor **indices);
/* torch.nanmedian: clt_median of the elements that are not NaN (NaN, at
 * index 0, where all are).  NanmedianBackward0 / NanmedianBackward1.  New
 * tensors: release each with clt_tensor_free. */
CLT_API clt_status clt_nanmedian(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_nanmedian_dim(const clt_tensor *a, int dim, int keepdim,
                                     clt_tensor **values, clt_tensor **indices);
/* torch.kthvalue(a, k, dim, keepdim): the k-th smallest element of each
 * slice (k from 1; NaN counts as the largest), *indices (may be NULL) as
 * clt_median_dim: among equal values the k-th of the stable sort, where
 * torch 1.13's CPU quickselect may name another of the equal elements.
 * k outside [1, size] is CLT_ERR_INVALID_ARGUMENT ("selected number k out
 * of range").  Not for bool.  KthvalueBackward0: g to the element picked.
 * New tensors: release each with clt_tensor_free. */
CLT_API clt_status clt_kthvalue(const clt_tensor *a, int64_t k, int dim, int keepdim,
                                clt_tensor **values, clt_tensor **indices);
/* torch.mode(a, dim, keepdim): the most frequent value of each slice, the
 * smallest of those equally frequent, and the largest index at which it
 * occurs (torch 1.13's CPU kernel's answer for slices of up to 16
 * elements; on longer ones its unstable sort may name another occurrence).
 * A NaN is equal to nothing and larger than every number here; torch's
 * sort leaves NaN unordered, so for slices holding one its answer depends
 * on where the NaNs sit.  Any dtype, bool included.  A size-0
 * dim is CLT_ERR_INVALID_ARGUMENT.  ModeBackward0: g to the element
 * picked.  New tensors: release each with clt_tensor_free. */
CLT_API clt_status clt_mode(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                            clt_tensor **indices);

/* torch.quantile's interpolation between the two sorted elements around
 * the rank q * (n - 1). */
typedef enum clt_quantile_interp {
    CLT_QUANTILE_LINEAR,   /* torch's default */
    CLT_QUANTILE_LOWER,
    CLT_QUANTILE_HIGHER,
    CLT_QUANTILE_MIDPOINT,
    CLT_QUANTILE_NEAREST   /* the rank rounded half to even */
} clt_quantile_interp;

/* torch.quantile(a, q, dim, keepdim, interpolation): q is the tensor q (0-dim
 * or 1-D, a's dtype and device), or the number q_value when q is NULL; each
 * in [0, 1] (a tensor's values are read back to check them, as torch does:
 * the host waits).  dim NULL reduces every element (keepdim then keeps
 * every dim as size 1).  The result has a's dtype and the reduced shape,
 * with a first dim of q's length when q is 1-D.  Computed as torch 1.13
 * does, in a's dtype: rank q * (n - 1), n - 1 when the slice holds a NaN
 * (so the result is NaN), then torch.lerp of the elements at floor and
 * ceil of it.  float32 and float64 only (CLT_ERR_DTYPE_MISMATCH); an empty
 * a is CLT_ERR_INVALID_ARGUMENT ("input tensor must be non-empty"), as is
 * q outside [0, 1].  The gradient (one node, QuantileBackward0, where
 * torch's composite records several) is torch's: g * (1 - w) to the lower
 * element and g * w to the upper one, w the lerp's weight; q gets none.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_quantile(const clt_tensor *a, const clt_tensor *q, double q_value,
                                const int *dim, int keepdim, clt_quantile_interp interpolation,
                                clt_tensor **out);
/* torch.nanquantile: clt_quantile over the elements that are not NaN (NaN
 * where a slice has none). */
CLT_API clt_status clt_nanquantile(const clt_tensor *a, const clt_tensor *q, double q_value,
                                   const int *dim, int keepdim,
                                   clt_quantile_interp interpolation, clt_tensor **out);

/* ---- differences and integrals (torch.diff, torch.trapezoid) ------------ */

/* torch.diff(x, n, dim, prepend, append): the n-th forward difference
 * along dim (negative counts from the end; CLT_ERR_DIM_OUT_OF_RANGE
 * outside) of x with prepend and append (may be NULL; they must have x's
 * number of dims and its sizes but along dim, and their dtypes promote
 * with x's, as clt_cat) joined before and after it.  Each step is
 * x[1:] - x[:-1] (logical_xor for bool, as PyTorch's); n beyond the size
 * gives a size 0 along dim; n = 0 a copy, and so does a negative n, as
 * PyTorch 1.13 takes it.  A 0-d x is CLT_ERR_SHAPE_MISMATCH.
 * Composed of recorded ops (its grad_fn is SubBackward0, as PyTorch's).
 * New tensor. */
CLT_API clt_status clt_diff(const clt_tensor *x, int64_t n, int dim, const clt_tensor *prepend,
                            const clt_tensor *append, clt_tensor **out);
/* torch.trapezoid(y, x, dx=dx, dim) and torch.cumulative_trapezoid: the
 * trapezoidal rule along dim, with sample points x (NULL: uniform spacing
 * dx).  x is 1-d with one value per sample (laid along dim), or
 * broadcasts against y after leading 1s (its differences along dim are
 * the spacings); a mismatch is CLT_ERR_SHAPE_MISMATCH.  PyTorch's
 * formulas: with dx (y.sum(dim) - (y[0] + y[-1]) / 2) * dx, else
 * sum(dx_i (y[i+1] + y[i])) / 2; cumulative (dx / 2 (y[i] + y[i+1]))
 * cumulatively summed, one element fewer along dim.  No samples give
 * zeros (trapezoid).  Dtypes as those ops give them (an integer y with
 * dx gives float32); bool y or x is CLT_ERR_DTYPE_MISMATCH; a 0-d y is
 * CLT_ERR_DIM_OUT_OF_RANGE.  Composed of recorded ops (gradients and
 * grad_fn names theirs).  New tensor. */
CLT_API clt_status clt_trapezoid(const clt_tensor *y, const clt_tensor *x, double dx, int dim,
                                 clt_tensor **out);
CLT_API clt_status clt_cumulative_trapezoid(const clt_tensor *y, const clt_tensor *x, double dx,
                                            int dim, clt_tensor **out);

/* torch.cov(x, correction, fweights, aweights): the covariance matrix of
 * the variables in x's rows (observations along columns; a 1-d or 0-d x is
 * one variable), [V, V], or 0-d for one variable.  fweights (integer
 * frequencies) and aweights (floating weights), NULL for none, are 1-d
 * with one entry per observation and not negative (else
 * CLT_ERR_SHAPE_MISMATCH, CLT_ERR_DTYPE_MISMATCH or
 * CLT_ERR_INVALID_ARGUMENT, PyTorch's messages); weights summing to 0 are
 * CLT_ERR_INVALID_ARGUMENT.  PyTorch's formula: avg = sum(x w) / sum(w),
 * (x - avg) (x - avg)^T w / (sum(w) - correction (sum(w aw) / sum(w)
 * with aweights)), the divisor 0 when it is not positive (PyTorch warns;
 * inf and NaN follow).  Integer x gives float32; bool and more than 2 dims
 * are refused.  It reads the weights' minimum, their sum and the divisor
 * back (waits).  torch.corrcoef(x): cov(x) / (s s^T) with s the standard
 * deviations, clamped to [-1, 1]; c / c for a 0-d cov.  Composed of
 * recorded ops (gradients theirs).  New tensor. */
CLT_API clt_status clt_cov(const clt_tensor *x, int64_t correction, const clt_tensor *fweights,
                           const clt_tensor *aweights, clt_tensor **out);
CLT_API clt_status clt_corrcoef(const clt_tensor *x, clt_tensor **out);

/* torch.histc(x, bins, min, max): a histogram of x's elements in bins
 * equal bins over [min, max] (bounds converted to x's dtype), of x's
 * dtype.  Element v goes to bin (int64)((v - min) / (max - min) * bins),
 * computed in x's dtype, the last bin for v == max; elements outside
 * [min, max] are not counted, and NaN counts in the first bin, as in
 * PyTorch 1.13's CPU kernel.  min == max takes x's
 * own minimum and maximum (read back), and a range of one value is
 * widened by 1 each way.  Counting is exact and deterministic (integer
 * counts, converted at the end).  Floating x only (CLT_ERR_DTYPE_MISMATCH
 * otherwise); bins < 1, min > max and a range that is not finite are
 * CLT_ERR_INVALID_ARGUMENT with PyTorch's messages.  No gradient.  Reads
 * back (the bin counts' size).  New tensor. */
CLT_API clt_status clt_histc(const clt_tensor *x, int64_t bins, double min, double max,
                             clt_tensor **out);


/* torch.gradient(t, spacing, dim, edge_order): one tensor per dim (dims
 * NULL: every dim of t, in order) of t's estimated derivative along it:
 * central differences (f[i+1] - f[i-1]) / 2h inside, one-sided differences
 * of order edge_order (1 or 2) at the ends.  spacing holds nspacing
 * scalars: 0 (every h 1), 1 (for every dim) or one per dim (coordinate
 * tensors: clt_gradient_coords).  Each dim needs edge_order + 1
 * elements; integer inputs give float32.  *outs is a new array of *n new
 * tensors (release each with clt_tensor_free, the array with clt_free);
 * composed of recorded ops (their gradients). */
CLT_API clt_status clt_gradient(const clt_tensor *t, const double *spacing, int nspacing,
                                const int *dims, int ndims, int edge_order, clt_tensor ***outs,
                                size_t *n);
/* torch.gradient(t, spacing=coordinates, dim, edge_order): as clt_gradient
 * with the sample points along each dim given: coords[k] (1-D, of that
 * dim's size; ncoords equal to the number of dims) for dims[k], and torch's
 * weights for unevenly spaced samples inside and at the ends. */
CLT_API clt_status clt_gradient_coords(const clt_tensor *t, const clt_tensor *const *coords,
                                       int ncoords, const int *dims, int ndims, int edge_order,
                                       clt_tensor ***outs, size_t *n);
/* torch.histogram(x, bins, range, weight, density): with edges NULL, bins
 * equal bins from clt_linspace over range[0..1] (range NULL: x's minimum
 * and maximum, read back; equal bounds widened by 0.5 each way); else the
 * 1-D edges given (x's dtype).  Element v counts (or adds its weight, of
 * x's shape and dtype) in bin i where edges[i] <= v < edges[i+1], the last
 * bin closed; v outside the edges and NaN are not counted.  density
 * divides by the total and the bins' widths.  x float32 or float64.
 * *hist (x's dtype) and *bin_edges are new tensors; no gradient. */
CLT_API clt_status clt_histogram(const clt_tensor *x, int64_t bins, const clt_tensor *edges,
                                 const double *range, const clt_tensor *weight, int density,
                                 clt_tensor **hist, clt_tensor **bin_edges);
/* torch.histogramdd(x, bins, range, weight, density): the histogram of
 * x's points (x [..., D], D = x's last size, at least 2-d) over D dims,
 * each as clt_histogram's: bins (nbins == D counts; edges NULL) over range
 * (2 D bounds, NULL: each dim's own) or edges (nbins == D 1-D tensors;
 * bins is then not read); weight of x's shape without the last dim.
 * *hist [bins...] (x's dtype) is a new tensor, *bin_edges a new array of
 * *n = D new tensors (release each with clt_tensor_free, the array with
 * clt_free); no gradient. */
CLT_API clt_status clt_histogramdd(const clt_tensor *x, const int64_t *bins,
                                   const clt_tensor *const *edges, size_t nbins,
                                   const double *range, const clt_tensor *weight, int density,
                                   clt_tensor **hist, clt_tensor ***bin_edges, size_t *n);

/* torch.segment_reduce(data, reduce, lengths=, offsets=, axis=, unsafe=,
 * initial=) (PyTorch 1.13's _segment_reduce): reduces data along axis over
 * consecutive segments.  reduce is "sum", "mean", "max", "min" or "prod".
 * The segments are given by lengths (int32 or int64, nonnegative; used
 * when both are given) or by offsets (their bounds, nseg + 1 of them,
 * nondecreasing), either of data's leading shape up to axis, which must
 * be their last dimension (segments of each row apart).  The output has
 * data's shape with axis of size nseg.  A segment starts from initial when
 * it is not NULL (mean divides the sum with it by the length), else from
 * the identity: 0, 1, -inf (max), inf (min); an empty segment gives
 * initial, or the identity (NaN for mean), as torch.  max and min
 * propagate NaN.  Unless unsafe, each row of lengths must sum to data's
 * size along axis; with unsafe it may sum to less.  (PyTorch reads past
 * the data for a row of lengths or offsets that runs beyond it; that is
 * refused here, unsafe or not, as are offsets out of [0, size].)  Data
 * must be floating (float16 is computed in float32 and rounded once) and
 * not empty.  Reads lengths or offsets back to the host (waits).
 * Autograd: SegmentReduceBackward0, torch's _segment_reduce_backward: sum
 * passes the gradient, mean divides it by the length, prod gives
 * g * out / x (for x zero or NaN g times the product of the others and
 * initial), max and min give it to every element equal to the result (or
 * NaN), divided by their count where it is positive (PyTorch's kernel
 * divides only those); no double backward, as in torch.  Errors: an
 * unknown reduce, neither lengths nor offsets, axis not their last
 * dimension, shapes that disagree, negative lengths, bad offsets, integer
 * data.  New tensor in *out (the caller frees it); NULL on error. */
CLT_API clt_status clt_segment_reduce(const clt_tensor *data, const char *reduce,
                                      const clt_tensor *lengths, const clt_tensor *offsets,
                                      int axis, int unsafe, const double *initial,
                                      clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
