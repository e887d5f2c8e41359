/* cltensor/ops.h: elementwise operations with PyTorch's broadcasting and
 * type promotion.
 *
 * Every operation hands out a new tensor on the operands' device (release
 * with clt_tensor_free), enqueues its kernel and returns without waiting.
 * Operands on different devices are an error (CLT_ERR_DEVICE_MISMATCH),
 * never an implicit copy.  Shapes broadcast as in PyTorch; incompatible
 * shapes give CLT_ERR_SHAPE_MISMATCH naming both.  On any error *out is set
 * to NULL and the operands are unchanged.
 *
 * Scalars are doubles.  A scalar with an integral value acts like a Python
 * int, any other like a Python float: int32 tensor * 2 stays int32,
 * int32 tensor * 2.5 becomes float32, float16 tensor * 2 stays float16.
 * An integral scalar outside the range of an integer result dtype wraps to
 * its width, as a Python int does (int32 tensor + 2^32 adds 0); outside
 * int64's range it is refused (CLT_ERR_INVALID_ARGUMENT).  clt_clamp's
 * bounds, like clt_full's value, must fit the result dtype ("cannot be
 * converted to type int32 without overflow", as in PyTorch).
 *
 * Result dtypes follow torch.result_type: tensors with dimensions outweigh
 * 0-dimensional tensors, which outweigh scalars, except that an operand of
 * a higher category (bool < integer < floating) always decides the
 * category.  Comparisons give bool tensors.
 *
 * Thread-safety: as for tensors (common.h); operations on distinct tensors
 * may run from distinct threads.
 */
#ifndef CLTENSOR_OPS_H
#define CLTENSOR_OPS_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- binary, tensor with tensor ---------------------------------------- */
CLT_API clt_status clt_add(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* A bool operand is refused (CLT_ERR_DTYPE_MISMATCH), as in PyTorch; so are
 * clt_sub_scalar and clt_rsub_scalar of a bool tensor. */
CLT_API clt_status clt_sub(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_mul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* True division: integer operands give float32, as torch.div does. */
CLT_API clt_status clt_div(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* a to the power b, like torch.pow.  Integer operands stay integer (wrapping
 * on overflow); an integer base to a negative integer exponent gives 1 for
 * base 1, +-1 for base -1 and 0 otherwise, as PyTorch's CPU kernel.  Two
 * bool operands are refused, as in PyTorch. */
CLT_API clt_status clt_pow(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* Elementwise maximum and minimum; a NaN in either operand gives NaN, as
 * torch.maximum and torch.minimum do. */
CLT_API clt_status clt_maximum(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_minimum(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* ---- comparisons: bool tensors, compared in the promoted dtype ------------ */
CLT_API clt_status clt_eq(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_ne(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_lt(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_le(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_gt(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_ge(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* a == s, a != s, a < s, a <= s, a > s, a >= s. */
CLT_API clt_status clt_eq_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_ne_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_lt_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_le_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_gt_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_ge_scalar(const clt_tensor *a, double s, clt_tensor **out);

/* ---- selection ---------------------------------------------------------- */

/* torch.where(cond, a, b): a where cond is true, else b; cond must be bool;
 * the three shapes broadcast together; the dtype is that of a and b
 * promoted.  New tensor. */
CLT_API clt_status clt_where(const clt_tensor *cond, const clt_tensor *a, const clt_tensor *b,
                             clt_tensor **out);

/* torch.clamp(a, min, max) with scalar bounds; NULL means no bound (one is
 * required).  NaN in a or in a bound gives NaN; min > max gives max.  A
 * fractional bound makes an integer tensor float32, and a bool tensor with
 * integral bounds gives int64, as torch.clamp does.  A value equal to a
 * bound is kept (clamping -0.0 at 0.0 keeps -0.0).  New tensor. */
CLT_API clt_status clt_clamp(const clt_tensor *a, const double *min, const double *max,
                             clt_tensor **out);

/* ---- binary, tensor with scalar ----------------------------------------- */
CLT_API clt_status clt_add_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* a - s */
CLT_API clt_status clt_sub_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* s - a */
CLT_API clt_status clt_rsub_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_mul_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* a / s */
CLT_API clt_status clt_div_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* s / a */
CLT_API clt_status clt_rdiv_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* a ** s; an integer tensor to a negative integral s is refused
 * (CLT_ERR_INVALID_ARGUMENT), as in PyTorch. */
CLT_API clt_status clt_pow_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* s ** a */
CLT_API clt_status clt_rpow_scalar(const clt_tensor *a, double s, clt_tensor **out);

/* ---- unary -------------------------------------------------------------- */

/* neg, abs and relu keep the dtype (integers wrap: abs of INT32_MIN is
 * INT32_MIN) and refuse bool tensors (CLT_ERR_DTYPE_MISMATCH).  relu keeps
 * NaN.  New tensor. */
CLT_API clt_status clt_neg(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_abs(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_relu(const clt_tensor *a, clt_tensor **out);

/* Floating-point functions: float tensors keep their dtype, integer and bool
 * tensors give float32 (torch.exp of an int tensor is float32).  gelu is the
 * exact form x/2 * (1 + erf(x/sqrt(2))), torch's default, and like torch's it
 * refuses integer and bool tensors.  New tensor. */
CLT_API clt_status clt_exp(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_log(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sqrt(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_rsqrt(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sin(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_cos(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_tanh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sigmoid(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_gelu(const clt_tensor *a, clt_tensor **out);

/* Bool tensor, true where a is zero (any dtype).  New tensor. */
CLT_API clt_status clt_logical_not(const clt_tensor *a, clt_tensor **out);

/* ---- type promotion ------------------------------------------------------ */

/* The dtype PyTorch gives a binary op on a and b (torch.result_type). */
CLT_API clt_status clt_result_type(const clt_tensor *a, const clt_tensor *b, clt_dtype *out);

/* torch.promote_types for two dtypes. */
CLT_API clt_dtype clt_promote_types(clt_dtype a, clt_dtype b);

#ifdef __cplusplus
}
#endif

#endif
