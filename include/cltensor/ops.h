/* cltensor/ops.h: elementwise operations with PyTorch's broadcasting and
 * type promotion.
 *
 * Every operation hands out a new tensor on the operands' device (release
 * with clt_tensor_free), enqueues its kernel and returns without waiting.
 * Operands on different devices are an error (CLT_ERR_DEVICE_MISMATCH),
 * never an implicit copy.  Shapes broadcast as in PyTorch; incompatible
 * shapes give CLT_ERR_SHAPE_MISMATCH naming both.  On any error the
 * operands are unchanged (and *out NULL, as common.h says).
 *
 * Scalars are doubles.  A scalar with an integral value acts like a Python
 * int, any other like a Python float: int32 tensor * 2 stays int32,
 * int32 tensor * 2.5 becomes float32, float16 tensor * 2 stays float16.
 * An integral scalar outside the range of an integer result dtype wraps to
 * its width, as a Python int does (int32 tensor + 2^32 adds 0); outside
 * int64's range it is refused (CLT_ERR_INVALID_ARGUMENT).  A float16 or
 * bfloat16 operand of the _scalar ops below takes the scalar rounded to
 * its dtype (through float32, as c10::Half), computes in float32 and
 * rounds once, bit for bit as torch 1.13's CPU kernels: float16 x + 0.1
 * adds half(0.1), x == 0.1 compares with it, x * 1e5 is +-inf, x / 1e5
 * +-0.  (torch's GPU kernels keep the scalar in float32.)  Of the other
 * scalar parameters, those torch 1.13's CPU kernels take in the tensor's
 * dtype round the same way: clt_add_'s and clt_sub_'s alpha,
 * clt_threshold's threshold and value, clt_hardshrink's lambda (and their
 * gradients'); the rest stay as given (float32 in the kernel), as torch's
 * take them as float: clamp's bounds, leaky_relu's slope, elu's and celu's
 * alpha, hardtanh's bounds, softplus's beta and threshold, softshrink's
 * lambda, rrelu's bounds, addcmul's and addcdiv's value, lerp's weight,
 * nan_to_num's values; fills store the value rounded once (through
 * float32, as c10::Half).  torch 1.13's CPU has no float16 kernel for
 * most of these: float16 follows bfloat16 there.  clt_clamp's
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
 * bool operands are refused, as in PyTorch.  With a complex operand:
 * exp(b log a) in the promoted complex dtype (cltensor/fft.h). */
CLT_API clt_status clt_pow(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* Elementwise maximum and minimum; a NaN in either operand gives NaN, as
 * torch.maximum and torch.minimum do. */
CLT_API clt_status clt_maximum(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_minimum(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* Modulo and floor division, as PyTorch 1.13's torch.remainder, torch.fmod
 * and torch.floor_divide (which is torch.div(a, b, rounding_mode='floor')):
 * dtypes promote as in clt_sub (int32 % int32 stays int32, int32 % float32
 * is float32; float16 computes in float32), two bool operands are refused
 * (CLT_ERR_DTYPE_MISMATCH), a bool with a number is that number's dtype.
 *
 * clt_remainder: Python's a % b, with the sign of the divisor b:
 * remainder(-5, 3) is 1, remainder(5, -3) is -1.  Floating: fmod(a, b),
 * plus b where the two differ in sign, so remainder(3.0, -inf) is -inf and
 * remainder(-0.0, 3.0) is -0.0.  clt_fmod: C's fmod, with the sign of the
 * dividend a: fmod(-5, 3) is -2.  clt_floor_divide: the quotient rounded
 * toward negative infinity: floor_divide(-5, 3) is -2, floor_divide(-7.5,
 * 2.0) -4.0.  Floating results follow PyTorch's formula ((a - fmod(a, b)) /
 * b, less 1 where the signs differ, rounded to an integer): a zero quotient
 * has the sign of a / b, floor_divide(3.0, -inf) is -1.0, and b == 0 gives
 * a / b (inf, -inf or NaN).  Floating remainder and fmod by 0 give NaN, and
 * NaN or an infinite a gives NaN.  fmod is exact, as C's (PyTorch 1.13's
 * vectorised CPU kernel, which computes all but the last few elements of a
 * tensor, gives NaN instead for a subnormal divisor and for float64
 * dividends near the largest double; its scalar path agrees with this).
 *
 * Integers: INT_MIN by -1 gives the wrapped quotient INT_MIN and
 * remainder 0 (PyTorch 1.13's CPU kernel dies of SIGFPE there).  A zero in
 * an integer divisor tensor is found by the kernel, after the op has
 * returned CLT_OK, as an index out of range is (common.h): the calling
 * thread's next blocking wait on the device (a read-back,
 * clt_device_synchronize) returns CLT_ERR_ZERO_DIVISION with a message that
 * names the op ("clt_remainder: ZeroDivisionError: integer division by
 * zero"), the result holds 0 there, and the wait after succeeds.  PyTorch
 * raises the same "ZeroDivisionError" at once on the CPU.
 *
 * Autograd (floating results): remainder and fmod pass g to a and give b
 * -g * floor(a / b) and -g * trunc(a / b); floor_divide records a node whose
 * backward fails (CLT_ERR_INVALID_ARGUMENT), as PyTorch 1.13's "derivative
 * for aten::floor_divide is not implemented".  New tensor. */
CLT_API clt_status clt_remainder(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_fmod(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_floor_divide(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* torch.div(a, b, rounding_mode=...).  CLT_ROUNDING_NONE is clt_div (true
 * division).  CLT_ROUNDING_TRUNC rounds the quotient toward zero: dtypes
 * as clt_floor_divide (int32 by int32 stays int32, an int tensor by
 * float32 is float32; two bool tensors are refused), floating results are
 * trunc(a / b) of the rounded quotient (-0.5 / 2 is -0.0, 1 / 0 is inf,
 * 0 / 0 NaN), integer ones C's division (-7 / 2 is -3; INT_MIN by -1
 * wraps to INT_MIN, and a zero divisor is CLT_ERR_ZERO_DIVISION as for
 * clt_floor_divide, its message naming clt_div_rounding).
 * CLT_ROUNDING_FLOOR computes clt_floor_divide.  Autograd: with a rounding
 * mode both inputs get zero gradients, as PyTorch's DivBackward2 (where
 * clt_floor_divide's backward is refused).  Another mode is
 * CLT_ERR_INVALID_ARGUMENT.  New tensor. */
typedef enum clt_rounding_mode {
    CLT_ROUNDING_NONE,  /* rounding_mode=None */
    CLT_ROUNDING_TRUNC, /* 'trunc' */
    CLT_ROUNDING_FLOOR  /* 'floor' */
} clt_rounding_mode;

CLT_API clt_status clt_div_rounding(const clt_tensor *a, const clt_tensor *b,
                                    clt_rounding_mode mode, clt_tensor **out);

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
 * promoted (complex with real too: float64 with complex64 gives
 * complex128).  New tensor. */
CLT_API clt_status clt_where(const clt_tensor *cond, const clt_tensor *a, const clt_tensor *b,
                             clt_tensor **out);

/* torch.clamp(a, min, max) with scalar bounds; NULL means no bound (one is
 * required).  NaN in a or in a bound gives NaN; min > max gives max.  (A
 * deliberate difference: PyTorch 1.13 gives NaN for a NaN bound only when
 * both bounds are given, and ignores a lone NaN min or max, keeping a.)  A
 * fractional bound makes an integer tensor float32, and a bool tensor with
 * integral bounds gives int64, as torch.clamp does.  A value equal to a
 * bound is kept (clamping -0.0 at 0.0 keeps -0.0).  New tensor. */
CLT_API clt_status clt_clamp(const clt_tensor *a, const double *min, const double *max,
                             clt_tensor **out);

/* torch.clamp(a, min, max) (torch.clip) with tensor bounds; NULL means no
 * bound (one is required).  a, min and max broadcast together, and the
 * result takes their promoted dtype (a 0-d bound weighs less, as in a
 * binary op: an int64 a with a float32 min gives float32, a uint8 a with a
 * 0-d int32 bound stays uint8); complex is refused.  NaN in a or in a bound
 * gives NaN, min > max gives max, a value equal to a bound is kept, all as
 * torch.clamp.  Autograd (ClampBackward0, torch's clamp_backward_min_max):
 * a gets the gradient where min <= a <= max, min where a < min and
 * min < max, max where a > max or max < min; each is summed back to its
 * input's shape.  The formula is differentiable (double backward).
 * Errors: both bounds NULL, shapes that do not broadcast, devices that
 * differ.  New tensor in *out (the caller frees it); *out is NULL on
 * error. */
CLT_API clt_status clt_clamp_tensor(const clt_tensor *a, const clt_tensor *min,
                                    const clt_tensor *max, clt_tensor **out);
/* torch.clamp_min(a, min) and torch.clamp_max(a, max) with a tensor bound:
 * clt_clamp_tensor with that bound alone (ClampMinBackward1,
 * ClampMaxBackward1: a gets the gradient where a >= min (a <= max), the
 * bound where a < min (a > max)).  The bound must not be NULL.  New tensor
 * in *out. */
CLT_API clt_status clt_clamp_min_tensor(const clt_tensor *a, const clt_tensor *min,
                                        clt_tensor **out);
CLT_API clt_status clt_clamp_max_tensor(const clt_tensor *a, const clt_tensor *max,
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
/* s / a, one correctly rounded division.  (PyTorch's Python `s / t`
 * computes t.reciprocal() * s instead, which can be 1 ulp apart, and gives
 * NaN for 0 / t and inf for s / t where 1 / t overflows, as for t = 1e-45;
 * here 0 and the quotient.) */
CLT_API clt_status clt_rdiv_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* a ** s; an integer tensor to a negative integral s is refused
 * (CLT_ERR_INVALID_ARGUMENT), as in PyTorch, and so is, here and in
 * clt_rpow_scalar, an integral s outside the integer result dtype's range
 * (uint8 takes -255..255): PyTorch's "value cannot be converted to type
 * int32 without overflow", where the other ops wrap.  On float32 and float64
 * tensors s = 0.5, -0.5, -1, 2, 3 and -2 are computed as PyTorch does, as
 * sqrt(a), rsqrt(a), 1 / a, a * a, a * a * a and 1 / (a * a): so
 * (-inf) ** 0.5 is NaN and (-0.0) ** 0.5 is -0.0 (pow would give inf and
 * 0.0), and 1 / (a * a) is 0 where a * a overflows; on bfloat16 tensors
 * the same, each product rounded to bfloat16 as torch's CPU rounds it
 * (a ** 3 is bf16(bf16(a * a) * a)).  A nonzero s below float32's smallest
 * normal keeps its sign and its being nonzero on a float32 tensor, as
 * torch's double exponent does: 0 ** 1e-310 is 0, (-1) ** 1e-310 NaN,
 * inf ** -1e-310 0.  On float16 and bfloat16 tensors s is rounded to the
 * dtype first (1e-310 to 0, giving 1), and an s past the dtype's largest
 * value is refused, as torch's "value cannot be converted to type
 * at::Half without overflow"; float16 computes pow in float32, whose last
 * bit can differ from torch's powf (glibc's or Sleef's) and so, rarely,
 * the half result by one ulp. */
CLT_API clt_status clt_pow_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* s ** a */
CLT_API clt_status clt_rpow_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* remainder(a, s), fmod(a, s), floor_divide(a, s), as the tensor forms
 * above with the scalar rules of this section (an integer tensor by a
 * fractional s is float32; an integral s wraps to the integer dtype).  An
 * integral s that is 0 in an integer result dtype (0, or 256 for uint8 and
 * int8, 65536 for int16) is
 * refused at once: CLT_ERR_ZERO_DIVISION, "ZeroDivisionError".
 * Differences from torch's CPU on 16-bit tensors: floor_divide computes in
 * float32 and rounds once, where torch's vectorised loop rounds each step
 * to the 16-bit dtype and its scalar loop does not (so torch's result
 * depends on an element's place); bfloat16 fmod and remainder give the
 * exact remainder where a / s overflows float32, where torch's vectorised
 * loop gives NaN. */
CLT_API clt_status clt_remainder_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_fmod_scalar(const clt_tensor *a, double s, clt_tensor **out);
CLT_API clt_status clt_floor_divide_scalar(const clt_tensor *a, double s, clt_tensor **out);
/* torch.div(a, s, rounding_mode=...): clt_div_rounding with the scalar
 * rules above (clt_div_scalar for CLT_ROUNDING_NONE; an integer tensor by
 * an integral s stays integer, by 2.5 float32; a zero integral s for an
 * integer result is refused at once).  New tensor. */
CLT_API clt_status clt_div_scalar_rounding(const clt_tensor *a, double s, clt_rounding_mode mode,
                                           clt_tensor **out);

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
 * refuses integer and bool tensors.  exp, log, sqrt, rsqrt, sin, cos, tanh,
 * sigmoid, log1p, expm1, tan and the math functions below but erf, erfc,
 * erfinv and exp2 take complex tensors too (cltensor/fft.h says how).  New
 * tensor. */
CLT_API clt_status clt_exp(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_log(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sqrt(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_rsqrt(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sin(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_cos(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_tanh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sigmoid(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_gelu(const clt_tensor *a, clt_tensor **out);

/* torch.log1p, torch.expm1 and torch.tan, typed as the functions above
 * (integer and bool tensors give float32).  log1p(x) = log(1 + x) and
 * expm1(x) = exp(x) - 1 keep their precision near 0: 1e-10 gives 1e-10
 * (and -0.0 gives -0.0), which log(1 + x) and exp(x) - 1 lose.  log1p(-1)
 * is -inf, below -1 NaN; expm1(-inf) is -1.  Deliberate differences, where
 * PyTorch 1.13's CPU kernels are off: a denormal x has log1p x here (there
 * 0, and float64 tan 0 too), and log1p of more than half the largest finite
 * value is finite here (float32 log1p(3e38) is 88.6), inf there.  New
 * tensor. */
CLT_API clt_status clt_log1p(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_expm1(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_tan(const clt_tensor *a, clt_tensor **out);
/* torch.sign: -1, 0 or 1 in a's own dtype (integers stay integers; a bool
 * tensor comes back unchanged, as in PyTorch).  As torch.sign, NaN gives 0
 * and -0.0 gives +0.0.  Its gradient is zero.  New tensor. */
CLT_API clt_status clt_sign(const clt_tensor *a, clt_tensor **out);
/* torch.floor, torch.ceil, torch.round and torch.trunc: a's own dtype;
 * integer tensors come back with their values, bool tensors are refused
 * (CLT_ERR_DTYPE_MISMATCH), as in PyTorch 1.13.  round takes halves to
 * the even neighbour (0.5 and -0.5 give 0.0 and -0.0, 2.5 gives 2.0).
 * -0.0, +-inf and NaN come back as they are; ceil of a value in (-1, 0)
 * is -0.0.  float16 computes in float (PyTorch's CPU kernels refuse it).
 * Their gradients are zero.  New tensor. */
CLT_API clt_status clt_floor(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_ceil(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_round(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_trunc(const clt_tensor *a, clt_tensor **out);
/* torch.round(a, decimals=decimals), bit for bit as PyTorch 1.13's CPU
 * kernel computes it in a's dtype: rint(x * p) / p, or rint(x / p) * p for
 * negative decimals, with p = 10^|decimals| computed in double and then
 * converted to a's dtype.  So, as there, round(2.675f, 2) is 2.68f, and
 * once p overflows the dtype (decimals beyond 38 in float32, 308 in
 * float64) every result is NaN.  decimals 0 is clt_round.  float32 and
 * float64 only: integer, bool and float16 tensors are refused
 * (CLT_ERR_DTYPE_MISMATCH), as torch's "round_cpu" not implemented for
 * them.  The division is the device's float division, correctly rounded
 * on CPUs (OpenCL lets a GPU's float32 division be 2.5 ulp off).  Its
 * gradient is zero.  New tensor. */
CLT_API clt_status clt_round_decimals(const clt_tensor *a, int64_t decimals, clt_tensor **out);
/* torch.frac: x - trunc(x), with x's sign (-2.5 gives -0.5); NaN at +-inf,
 * +0.0 at integers and -0.0.  Floating tensors only (integer and bool are
 * CLT_ERR_DTYPE_MISMATCH, as torch's "frac_cpu" not implemented for
 * 'Int').  Its gradient is g.  New tensor. */
CLT_API clt_status clt_frac(const clt_tensor *a, clt_tensor **out);
/* torch.reciprocal: 1 / x, one correctly rounded division on CPUs; integer
 * and bool tensors give float32, as clt_exp; 1 / 0.0 is inf and 1 / -0.0
 * -inf.  Its gradient is -g * out^2, PyTorch's formula.  New tensor. */
CLT_API clt_status clt_reciprocal(const clt_tensor *a, clt_tensor **out);
/* torch.nn.functional.silu: x * sigmoid(x).  Floating tensors only (integer
 * and bool are CLT_ERR_DTYPE_MISMATCH, as PyTorch's "not implemented for
 * 'Int'").  A large negative x gives -0.0 (not NaN); -inf gives NaN, as in
 * PyTorch (-inf * 0).  New tensor. */
CLT_API clt_status clt_silu(const clt_tensor *a, clt_tensor **out);
/* torch.nn.functional.softplus(a, beta, threshold): log(1 + exp(beta * x))
 * / beta, and x itself where beta * x > threshold (PyTorch's defaults are
 * beta 1, threshold 20).  beta and threshold are converted to a's dtype
 * (float for float16) first, as PyTorch does; any value is taken (beta 0
 * gives inf, a NaN one NaN, as there).  Floating tensors only, as silu.
 * Computed as (max(z, 0) + log1p(exp(-|z|))) / beta with z = beta * x, so
 * it overflows for no threshold: with a threshold above 88 PyTorch's
 * float32 log1p(exp(z)) gives inf where this gives about x, and its
 * gradient NaN where this gives about 1.  New tensor. */
CLT_API clt_status clt_softplus(const clt_tensor *a, double beta, double threshold,
                                clt_tensor **out);
/* torch.nn.functional.leaky_relu(a, negative_slope): x where x > 0, else
 * x * negative_slope (PyTorch's default 0.01; any value is taken, a
 * negative one too).  Its gradient is 1 where x > 0, else negative_slope
 * (NaN too).  torch.nn.functional.elu(a, alpha): x where x > 0, else
 * (exp(x) - 1) * alpha (alpha 1.0 by default), computed with expm1, so
 * that near 0 it keeps the digits PyTorch's exp(x) - 1 loses (float32
 * elu(-1e-10) is -1e-10 here, 0 in PyTorch); its gradient is
 * alpha * exp(x) where x <= 0, else 1 (NaN too).
 * The scalar is converted to a's dtype (float for float16) first, as
 * PyTorch does.  Floating tensors only, as silu (torch: "leaky_relu_cpu"
 * not implemented for 'Long').  New tensor. */
CLT_API clt_status clt_leaky_relu(const clt_tensor *a, double negative_slope, clt_tensor **out);
CLT_API clt_status clt_elu(const clt_tensor *a, double alpha, clt_tensor **out);

/* The rest of torch.nn.functional's elementwise activations, each one
 * kernel forward and one backward.  Floating tensors keep their dtype
 * (float16 computes in float, where PyTorch's CPU kernels refuse it);
 * others as said for each.  Scalars are converted to a's dtype (float for
 * float16) first, as PyTorch does.  Gradients at the kinks and at NaN are
 * PyTorch's, and so are the grad_fn names (clt_grad_fn_name).  Where
 * PyTorch 1.13's CPU kernels disagree with themselves, the scalar loop
 * that handles a tensor's last elements is followed everywhere: at NaN
 * its vectorised loop gives 0 (hardtanh, the shrinks) or NaN (elu's
 * family, hardswish) where the scalar loop, and this, give the formula's
 * other branch (g for most); at exactly 3 hardswish's vectorised loop
 * gives g where the scalar loop (and torch's CUDA kernel) give 1.5 g.
 * New tensor; on failure *out is NULL.
 *
 * hardtanh(a, min_val, max_val) (PyTorch's defaults -1, 1): torch.clamp's
 * values (NaN propagates; min_val > max_val gives max_val everywhere);
 * gradient g strictly between the bounds, else 0 (NaN passes g);
 * HardtanhBackward0.  Integer tensors keep their dtype (no gradient), bool
 * is CLT_ERR_DTYPE_MISMATCH, as in PyTorch.  relu6 is hardtanh(a, 0, 6),
 * recorded as PyTorch records it (HardtanhBackward0).
 * threshold(a, threshold, value): value where a <= threshold, else a (NaN
 * stays NaN); gradient 0 where a <= threshold, else g; ThresholdBackward0;
 * integer tensors as hardtanh's. */
CLT_API clt_status clt_hardtanh(const clt_tensor *a, double min_val, double max_val,
                                clt_tensor **out);
CLT_API clt_status clt_relu6(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_threshold(const clt_tensor *a, double threshold, double value,
                                 clt_tensor **out);
/* Floating tensors only (integer and bool are CLT_ERR_DTYPE_MISMATCH, as
 * PyTorch's "hardsigmoid_cpu" not implemented for 'Int'):
 * hardsigmoid: min(max(x + 3, 0), 6) / 6; gradient g / 6 strictly inside
 * (-3, 3), else 0 (NaN too).  hardswish: x * min(max(x + 3, 0), 6) / 6
 * (NaN at -inf, as PyTorch's); gradient 0 below -3, g * (x / 3 + 0.5) up
 * to 3 (so -0.5 g at -3, 1.5 g at 3), else g.  mish: x * tanh(softplus(x))
 * with a softplus that overflows nowhere (mish(-inf) is NaN, as in
 * PyTorch); gradient PyTorch's tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)^2)
 * (NaN at +-inf, as there).  selu: elu with PyTorch's alpha
 * 1.6732632423543772848 and scale 1.0507009873554804934
 * (EluBackward0).  celu(a, alpha): elu(x / alpha) * alpha, PyTorch's
 * default alpha 1; alpha 0 is CLT_ERR_INVALID_ARGUMENT, as PyTorch's
 * ZeroDivisionError (CeluBackward0).  elu, selu and celu compute
 * exp(x) - 1 with expm1 (clt_elu's note).  hardshrink(a, lambd): 0 where
 * -lambd <= x <= lambd, else x (any lambd, as PyTorch).  softshrink(a,
 * lambd): x - lambd above lambd, x + lambd below -lambd, else 0 (NaN gives
 * 0, as PyTorch's CPU kernel); lambd below 0 or NaN is
 * CLT_ERR_INVALID_ARGUMENT ("lambda must be greater or equal to 0").  The
 * shrinks' gradients are 0 inside [-lambd, lambd], else g (NaN passes g);
 * PyTorch's default lambd is 0.5.  logsigmoid: min(x, 0) - log1p(exp(-|x|)),
 * finite for every finite x (-1e30 gives -1e30, 100 gives -3.8e-44 in
 * float32); gradient g * sigmoid(-x) (LogSigmoidBackward0). */
CLT_API clt_status clt_hardsigmoid(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_hardswish(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_mish(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_selu(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_celu(const clt_tensor *a, double alpha, clt_tensor **out);
CLT_API clt_status clt_hardshrink(const clt_tensor *a, double lambd, clt_tensor **out);
CLT_API clt_status clt_softshrink(const clt_tensor *a, double lambd, clt_tensor **out);
CLT_API clt_status clt_logsigmoid(const clt_tensor *a, clt_tensor **out);
/* softsign: x / (1 + |x|); tanhshrink: x - tanh(x).  Integer tensors give
 * float32 and bool is CLT_ERR_DTYPE_MISMATCH, as PyTorch's composed forms
 * (x / (x.abs() + 1), x - x.tanh()) do; their grad_fn names are those
 * forms' last nodes, DivBackward0 and SubBackward0.  softsign(+-inf) is
 * NaN as in PyTorch; gradients g / (1 + |x|)^2 and g * tanh(x)^2, the
 * derivatives of the whole formulas, in one kernel (deliberate difference:
 * softsign's is 0 at +-inf, where PyTorch's chain gives NaN). */
CLT_API clt_status clt_softsign(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_tanhshrink(const clt_tensor *a, clt_tensor **out);
/* torch.nn.functional.glu(a, dim): the first half of a along dim times
 * sigmoid of the second half; the result has half of a's size along dim.
 * dim may be negative (CLT_ERR_DIM_OUT_OF_RANGE outside a's dims); a size
 * along dim that is odd, or a 0-d a, is CLT_ERR_SHAPE_MISMATCH ("Halving
 * dimension must be even").  Floating tensors only, as silu.  Gradient
 * PyTorch's glu_backward (GluBackward0). */
CLT_API clt_status clt_glu(const clt_tensor *a, int dim, clt_tensor **out);
/* torch.nn.functional.prelu(a, weight): a where a > 0, else weight * a,
 * weight taken per channel along dim 1 (a of 2 or more dims), or one
 * value for every element.  weight has 1 element, or as many as a's dim
 * 1 (a 0-d or 1-d a counts as one channel), and at most 1 dim; else
 * CLT_ERR_SHAPE_MISMATCH with PyTorch's wording ("Mismatch of parameter
 * numbers and input channel size").  Floating tensors only, and weight of
 * a's dtype (CLT_ERR_DTYPE_MISMATCH otherwise, as PyTorch); same device.
 * Gradients for both (PreluBackward0): g where a > 0, else weight * g for
 * a; the sum of a * g where a <= 0 for each weight element.  weight is
 * borrowed.  New tensor. */
CLT_API clt_status clt_prelu(const clt_tensor *a, const clt_tensor *weight, clt_tensor **out);

/* Bool tensor, true where a is zero (any dtype).  New tensor. */
CLT_API clt_status clt_logical_not(const clt_tensor *a, clt_tensor **out);
/* torch.isnan, torch.isinf and torch.isfinite: bool tensors of a's shape,
 * any dtype; integer and bool values are finite.  No gradient.  New
 * tensor. */
CLT_API clt_status clt_isnan(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_isinf(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_isfinite(const clt_tensor *a, clt_tensor **out);
/* torch.isin(elements, test_elements, assume_unique=, invert=): a bool
 * tensor of elements' shape, true where the element equals one of
 * test_elements (any shape), compared in the promoted dtype as clt_eq
 * (NaN matches nothing); invert non-zero negates it.  assume_unique is a
 * hint only (the result is the same).  Each element is compared with
 * every test element (memory for numel(elements) x numel(test_elements)
 * flags).  Bool or complex operands: CLT_ERR_DTYPE_UNSUPPORTED (torch
 * refuses both).  No gradient.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_isin(const clt_tensor *elements, const clt_tensor *test_elements,
                            int assume_unique, int invert, clt_tensor **out);
/* torch.logical_and, torch.logical_or and torch.logical_xor: bool tensors,
 * any dtypes, shapes broadcast; each operand is true where it is nonzero
 * (NaN is true), after both are converted to their promoted dtype as for
 * the comparisons (so a 0-d float64 1e-300 beside a float32 tensor is
 * false, as in PyTorch).  No gradient.  New tensor. */
CLT_API clt_status clt_logical_and(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_logical_or(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_logical_xor(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

/* ---- math functions ------------------------------------------------------ */

/* torch.asin, acos, atan, sinh, cosh, asinh, acosh, atanh, erf, erfc,
 * erfinv, log2, log10 and exp2: float tensors keep their dtype, integer
 * and bool tensors give float32, as clt_exp; float16 computes in float
 * (PyTorch's CPU kernels refuse it, but for exp2).  Their special values
 * are the C library's and PyTorch's: asin and acos NaN outside [-1, 1],
 * acosh NaN below 1 and 0 at 1, atanh +-inf at +-1 and NaN beyond, erf
 * +-1 at +-inf, erfc 2 at -inf and 0 at inf, erfinv +-inf at +-1 and NaN
 * beyond, log2 and log10 -inf at +-0 and NaN below, sinh and cosh inf
 * only where the true value overflows (PyTorch's vectorised kernels give
 * inf from float32 88.72 and float64 709.78 on, a deliberate difference),
 * -0.0 kept by the odd functions.  Each is within 1.5 units in the last
 * place with PoCL's builtins (measured on an AMD EPYC, Zen 5, CPU family
 * 26; OpenCL allows up to 4).  erfinv is
 * PyTorch's algorithm with its Newton steps taken on erfc near +-1, so
 * that there it keeps the digits PyTorch's loses (1e-5 relative in float32
 * at 0.99999994, 6e-5 in float64 at 1 - 2^-53; here within 1.2 ulps).
 * Gradients as PyTorch's (AsinBackward0 ...): asin g / sqrt(1 - x^2),
 * acosh g / sqrt(x^2 - 1), atanh g / (1 - x^2), erf
 * g * 2/sqrt(pi) * exp(-x^2), erfinv g * sqrt(pi)/2 * exp(out^2),
 * log2 g / (x ln 2), exp2 g * out * ln 2, and so on.  New tensor. */
CLT_API clt_status clt_asin(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_acos(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_atan(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sinh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_cosh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_asinh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_acosh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_atanh(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_erf(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_erfc(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_erfinv(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_log2(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_log10(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_exp2(const clt_tensor *a, clt_tensor **out);
/* torch.square: a * a in a's dtype (integers wrap); a bool tensor gives
 * int64, as in PyTorch.  Its gradient is PyTorch's PowBackward0,
 * g * 2 * a.  New tensor. */
CLT_API clt_status clt_square(const clt_tensor *a, clt_tensor **out);
/* torch.logit(a, eps): log(x / (1 - x)); with eps (not NULL, and neither
 * negative nor NaN: PyTorch's eps=None) x is first clamped to
 * [eps, 1 - eps] as torch.clamp clamps, 1 - eps computed in a's dtype (NaN
 * stays NaN; an eps above 0.5 gives logit(1 - eps) everywhere, as
 * PyTorch's vectorised loop, whose scalar tail takes eps below eps).
 * Without it 0 gives -inf, 1 inf, and outside [0, 1] NaN.  Integer and
 * bool tensors give float32.  Its gradient is PyTorch's logit_backward,
 * g / (x (1 - x)) (inf at 0 and 1, -inf at -0.0); outside [0, 1] NaN
 * without eps, and with eps 0 outside [eps, 1 - eps], at a NaN x, and
 * everywhere for a NaN eps, again as PyTorch's vectorised loop.  New
 * tensor. */
CLT_API clt_status clt_logit(const clt_tensor *a, const double *eps, clt_tensor **out);
/* torch.nan_to_num(a, nan, posinf, neginf): NaN becomes nan_value (torch's
 * default 0.0), +inf posinf and -inf neginf, where a NULL posinf or neginf
 * takes PyTorch's default, a's dtype's largest or lowest finite value
 * (3.4028235e38 in float32, 65504 in float16).  The values are converted
 * to a's dtype, so 1e300 is inf in float32, as there.  Integer and bool
 * tensors come back unchanged, in their dtype.  Its gradient is
 * g * isfinite(a) (NanToNumBackward0).  New tensor. */
CLT_API clt_status clt_nan_to_num(const clt_tensor *a, double nan_value, const double *posinf,
                                  const double *neginf, clt_tensor **out);

/* torch.atan2(a, b), torch.hypot, torch.copysign and torch.xlogy: shapes
 * broadcast and dtypes promote as clt_add; an integer or bool result type
 * gives float32 (atan2, copysign, xlogy) as in PyTorch, whose hypot
 * refuses it (CLT_ERR_DTYPE_MISMATCH).  atan2, hypot and copysign are the
 * C library's (atan2(+-0, -0.0) is +-pi, hypot(inf, NaN) inf, copysign
 * takes b's sign bit, -0.0 and NaN's too).  xlogy is x * log(y), NaN
 * where y is NaN, else 0 where x is 0 (also for y = 0, inf or negative).
 * Gradients as PyTorch's: atan2 g * b / (a^2 + b^2) and -g * a / (a^2 + b^2);
 * hypot g * a / out and g * b / out; copysign g * out / a, 0 where a is 0,
 * and 0 for b; xlogy g * xlogy(a != 0, b) and g * a / b.  New tensor. */
CLT_API clt_status clt_atan2(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_hypot(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_copysign(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_xlogy(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.lerp(start, end, weight): start + weight * (end - start) where
 * |weight| < 0.5, else end - (end - start) * (1 - weight), PyTorch's
 * formula (weight 1 gives end exactly).  The three broadcast; they must
 * share one floating dtype (another is CLT_ERR_DTYPE_MISMATCH, as
 * PyTorch's "expected dtype float for `end` but got dtype double").
 * clt_lerp_scalar takes a Python number weight, converted to the dtype
 * (one that overflows it is refused, CLT_ERR_INVALID_ARGUMENT).  Gradients
 * g * (1 - weight), g * weight and g * (end - start) (LerpBackward1;
 * LerpBackward0 for the scalar form).  New tensor. */
CLT_API clt_status clt_lerp(const clt_tensor *start, const clt_tensor *end,
                            const clt_tensor *weight, clt_tensor **out);
CLT_API clt_status clt_lerp_scalar(const clt_tensor *start, const clt_tensor *end, double weight,
                                   clt_tensor **out);
/* torch.addcmul(a, t1, t2, value=value): a + value * t1 * t2, and
 * torch.addcdiv: a + value * t1 / t2, evaluated left to right as PyTorch's
 * CPU kernels.  The three broadcast and promote together (0-d tensors
 * weigh less, as in clt_add); value is converted to the result dtype (an
 * integer result truncates it, 2.5 acting as 2, and refuses one that
 * overflows, as c10's Scalar).  addcmul refuses bool results, addcdiv two
 * integer (or bool) factors t1 and t2 ("Integer division with addcdiv is no
 * longer supported"), both CLT_ERR_DTYPE_MISMATCH.  Gradients: g for a;
 * addcmul g * t2 * value and g * t1 * value, addcdiv g * value / t2 and
 * -g * value * t1 / t2^2.  New tensor. */
CLT_API clt_status clt_addcmul(const clt_tensor *a, const clt_tensor *t1, const clt_tensor *t2,
                               double value, clt_tensor **out);
CLT_API clt_status clt_addcdiv(const clt_tensor *a, const clt_tensor *t1, const clt_tensor *t2,
                               double value, clt_tensor **out);

/* ---- in place and out= -------------------------------------------------- */

/* In-place ops, PyTorch's tensor.add_(other, alpha=...) and friends: t
 * takes the result and keeps its shape and dtype.  `other` (and copy_'s
 * src) broadcasts to t's shape; a result of another shape is
 * CLT_ERR_SHAPE_MISMATCH ("output with shape [3] doesn't match the
 * broadcast shape [2, 3]"), and a result dtype that cannot be cast to t's
 * (a float into an integer tensor, anything but bool into bool) is
 * CLT_ERR_DTYPE_MISMATCH ("result type Float can't be cast to the desired
 * output type Int").  t may be a view (offset, transposed, sliced): only its
 * own elements change.  A view with a stride-0 (expanded) dimension of
 * size > 1 is refused (CLT_ERR_INVALID_ARGUMENT), as PyTorch refuses it.
 * t and other may overlap (clt_add_(t, t, 1)); partial overlaps are read
 * before they are written.  Each bumps t's version counter, so that a
 * backward that needs t's old values fails instead of computing wrong ones.
 * All enqueue without waiting, except clt_copy_ between devices of
 * different contexts (through host memory) or of one context (it waits for
 * the source's queue, as clt_to does).
 *
 * Autograd: a leaf that requires grad, in grad mode, is refused
 * (CLT_ERR_INVALID_ARGUMENT, PyTorch's "a leaf Variable that requires grad
 * is being used in an in-place operation").  With grad mode on and t (a
 * non-leaf) or other requiring grad, every in-place op records itself on
 * t's history as torch 1.13 does: t's grad_fn becomes the op's node, whose
 * first input is t's old history, with torch's name and formula: add_ and
 * sub_ AddBackward0 and SubBackward0, the scalar forms AddBackward1,
 * SubBackward1, MulBackward1 and DivBackward1 (a difference: torch 1.13
 * wraps the number in a tensor and names them as the tensor forms),
 * mul_ MulBackward0 (t's old value gets g * other, other g * old t), div_
 * DivBackward0 (g / other and -g * old t / other^2), clamp_
 * ClampBackward1 (g where min <= old t <= max), the clamps with tensor bounds ClampBackward0 ..., fill_
 * FillBackward2 and zero_ ZeroBackward0 (zeros to t's old value), copy_
 * CopyBackwards (zeros to dst's old value; g to src, on src's device, in
 * its dtype, summed to its shape).  Where the formula reads t's old
 * values, a copy of them is kept (torch's "original self"); an operand the
 * formula reads is saved at its version, so that changing it before the
 * backward pass is the version error, as in torch (y = exp(x);
 * clt_mul_(y, two) makes exp's backward fail).  The formulas record in a
 * pass that creates a graph (second derivatives).  An integer or bool t
 * never requires grad: copy_ into one records nothing, as torch.  On
 * complex tensors add_ and sub_ (any alpha: t + alpha * other in the
 * result dtype, as torch), mul_, div_ and the scalar forms record the
 * complex formulas (conjugate Wirtinger calculus, as the out-of-place
 * ops).  A failed op leaves t and its history unchanged.
 *
 * In-place ops on a view (view.h: slices, selects, transposes, diagonals,
 * chains of them ...) reach its base's history, as torch's: the base's
 * grad_fn becomes CopySlices (the base's old history, and the op's other
 * operands; its gradient passes as it is but for the view's elements,
 * which go through the op's formula) and the view's AsStridedBackward0 of
 * it; a base that did not require grad does once an operand does.  A view
 * made before an in-place op on its base (or on another view of it) takes
 * the base's new history (AsStridedBackward0) when next used.  Refused
 * with CLT_ERR_INVALID_ARGUMENT, nothing changed, in grad mode when an
 * operand or the base requires grad: a view of a leaf that requires grad
 * ("a view of a leaf Variable that requires grad is being used in an
 * in-place operation"; a view requires grad when its base does, even when
 * the base was made to after the view), a piece of clt_split, clt_chunk,
 * clt_unbind ("output 0 of SplitBackward0 is a view and is being modified
 * in place ..."), a view made in no-grad mode, whatever its base, or a
 * view of one ("a view was created in no_grad mode and is being modified
 * in place with grad mode enabled ..."; a piece made in no-grad mode gives
 * this message, as torch's).  clt_detach's result is no such view: an
 * in-place op on it (or a view of it) bumps the version only.  Views of
 * another dtype than their base (clt_real, clt_imag, clt_view_as_real,
 * clt_view_as_complex, views of those, either way: the real parts of a
 * complex base, or a complex view of a real one) are such views too: the
 * CopySlices applies the op's formula to the view's real scalars (or
 * complex pairs) of the base's gradient, with torch's conjugate
 * convention, and the write bumps the base's version (its saved copies
 * refuse backward, as torch's).  Differences from torch: a view of
 * another dtype made before the change takes AsStridedBackward0 where
 * torch's replays the view op (ViewAsRealBackward0 ...); the gradients are
 * the same.  The
 * base's retained gradient (clt_retain_grad) moves to its CopySlices, as
 * for an in-place op on a non-view, and so is the gradient of its new
 * values (torch 1.13 leaves it on the old history: that of the old
 * values).  On error t is unchanged. */

/* t += alpha * other, computed in the result type of t and other and, for
 * floating types, rounded once (fma), as PyTorch's kernels: 3e38 + (-2) *
 * 3e38 is -3e38 in float32.  A float16 or bfloat16 t takes alpha rounded
 * to its dtype (above), and float16 rounds the product to half before the
 * sum, as torch 1.13's CPU kernel computes in c10::Half.  Integer results refuse a non-integral alpha
 * (an infinite or NaN one too) and one their dtype cannot hold ("cannot be
 * converted to type int32 without overflow"); bool results take any
 * nonzero alpha as true, all as PyTorch. */
CLT_API clt_status clt_add_(clt_tensor *t, const clt_tensor *other, double alpha);
/* t -= alpha * other.  Bool tensors are refused, as in clt_sub. */
CLT_API clt_status clt_sub_(clt_tensor *t, const clt_tensor *other, double alpha);
CLT_API clt_status clt_mul_(clt_tensor *t, const clt_tensor *other);
/* True division: an integer t is refused (the result is float). */
CLT_API clt_status clt_div_(clt_tensor *t, const clt_tensor *other);
/* With a Python number: an integer t takes integral s only (add, sub, mul);
 * div_scalar_ needs a floating t. */
CLT_API clt_status clt_add_scalar_(clt_tensor *t, double s);
CLT_API clt_status clt_sub_scalar_(clt_tensor *t, double s);
CLT_API clt_status clt_mul_scalar_(clt_tensor *t, double s);
CLT_API clt_status clt_div_scalar_(clt_tensor *t, double s);
/* As clt_clamp, in place; bounds must leave t's dtype (float bounds on an
 * integer t are refused). */
CLT_API clt_status clt_clamp_(clt_tensor *t, const double *min, const double *max);
/* As clt_clamp_tensor, clt_clamp_min_tensor and clt_clamp_max_tensor, in
 * place: the bounds broadcast to t's shape (a larger broadcast shape is
 * refused, as torch's "output with shape ... doesn't match the broadcast
 * shape") and the promoted dtype must not leave t's category (a float32
 * bound on an int64 t is refused).  Recorded as torch records them when t
 * (a non-leaf) or a bound requires grad: t's grad_fn becomes
 * ClampBackward0 (ClampMinBackward1, ClampMaxBackward1) whose first input
 * is t's old history, with a copy of t's old values kept for the formula;
 * a leaf that requires grad is refused, as every in-place op. */
CLT_API clt_status clt_clamp_tensor_(clt_tensor *t, const clt_tensor *min,
                                     const clt_tensor *max);
CLT_API clt_status clt_clamp_min_tensor_(clt_tensor *t, const clt_tensor *min);
CLT_API clt_status clt_clamp_max_tensor_(clt_tensor *t, const clt_tensor *max);
/* Every element of t set to value (checked as clt_full checks it). */
CLT_API clt_status clt_fill_(clt_tensor *t, double value);
CLT_API clt_status clt_zero_(clt_tensor *t);
/* Tensor.fill_diagonal_(value, wrap): value (checked as clt_fill_ checks
 * it) into t's main diagonal, the elements whose indices are all equal:
 * min(rows, columns) of them for a 2-D t, any shape; a t of more
 * dimensions must have them all of one length (CLT_ERR_SHAPE_MISMATCH,
 * "all dimensions of input must be of equal length"; fewer than 2
 * dimensions: "dimensions must larger than 1").  With wrap and a 2-D t of
 * more than columns + 1 rows, the diagonal starts again every columns + 1
 * rows (rows 0..C-1, then C+1..2C, ...), as torch.  The positions are
 * torch's, two as_strided views of t's storage (the sum of t's strides
 * apart), so views write where torch's do.  Recorded on t's history when
 * t (a non-leaf) requires grad: its gradient is the incoming one with the
 * filled positions zeroed (FillDiagonalBackward; torch records
 * CopySlices); a leaf that requires grad is refused as by every in-place
 * op.  On a view of a tensor with a history it reaches the base's
 * history (CopySlices, above), as torch's.  On error t is unchanged. */
CLT_API clt_status clt_fill_diagonal_(clt_tensor *t, double value, int wrap);
/* dst = src converted to dst's dtype (any pair: floats into integers
 * truncate, as PyTorch's copy_), src broadcast to dst's shape; src may be on
 * another device.  Recorded as CopyBackwards (see above): the way to put
 * host data into a tensor that requires grad is clt_copy_ from a
 * clt_tensor_from_host tensor (clt_tensor_write refuses one). */
CLT_API clt_status clt_copy_(clt_tensor *dst, const clt_tensor *src);

/* out= forms, torch.add(a, b, out=out): the result of clt_add(a, b) etc.
 * written into the existing `out`, whose shape must equal the result's
 * (CLT_ERR_SHAPE_MISMATCH; out is never resized) and whose dtype the
 * result's must cast to (CLT_ERR_DTYPE_MISMATCH).  out may be a view and
 * may alias a or b.  When out is contiguous at offset 0 with the result's
 * dtype, the kernel writes it directly and nothing is allocated (inputs of
 * another dtype are converted into temporaries first); otherwise through a
 * temporary.  An operand (a, b or out) that requires grad in grad mode is
 * refused (CLT_ERR_INVALID_ARGUMENT), as PyTorch's "functions with out=...
 * arguments don't support automatic differentiation".  Bumps out's
 * version; enqueues without waiting; out is unchanged on error. */
CLT_API clt_status clt_add_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b);
CLT_API clt_status clt_sub_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b);
CLT_API clt_status clt_mul_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b);
CLT_API clt_status clt_div_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b);
/* clt_matmul(a, b) into out (any shapes clt_matmul takes); computes into a
 * temporary, then copies. */
CLT_API clt_status clt_matmul_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b);

/* ---- type promotion ------------------------------------------------------ */

/* The dtype PyTorch gives a binary op on a and b (torch.result_type). */
CLT_API clt_status clt_result_type(const clt_tensor *a, const clt_tensor *b, clt_dtype *out);

/* torch.promote_types for two dtypes; CLT_DTYPE_COUNT when either is
 * outside the enum. */
CLT_API clt_dtype clt_promote_types(clt_dtype a, clt_dtype b);

/* ---- special functions (torch.special) ---------------------------------- */

/* torch.lgamma, torch.digamma, torch.polygamma(n, a), torch.mvlgamma(a, p),
 * torch.special.i0, i0e, i1, i1e, ndtr, ndtri, log_ndtr, entr and
 * torch.sinc.  Float tensors keep their dtype, integer and bool tensors
 * give float32 (as clt_exp; mvlgamma refuses bool, as PyTorch, with
 * CLT_ERR_DTYPE_MISMATCH); float16 computes in float.  The algorithms are
 * PyTorch 1.13's (Cephes): float64 results agree with torch's to a few
 * ulps.  Special values as there: lgamma inf at 0 and the negative
 * integers, inf at +-inf; digamma -+inf at +-0 (the sign of -x), NaN at
 * the negative integers and -inf, inf at inf; polygamma(n >= 1) inf at 0
 * and the negative integers (n odd) or NaN/inf as torch's zeta gives;
 * i0 and i1 overflow to inf, i0e and i1e do not; ndtri -inf at 0, inf at 1,
 * NaN outside [0, 1]; log_ndtr finite down to -1e150 (an asymptotic series
 * below -20, -8 in float32, where PyTorch uses erfcx; within a few ulps of
 * it); entr -x log x, 0 at 0, -inf below 0; sinc 1 at 0.
 * (Deliberate differences: float32 digamma and polygamma take their
 * reflection and zeta sums in float, where PyTorch's CPU kernels use
 * double: polygamma(n >= 2) of a negative float32 x, whose zeta terms
 * cancel, can be 1e-3 relative off there.  ndtr is PyTorch 1.13's
 * (1 + erf(x / sqrt 2)) / 2, 0 below about -8.3 in float64.)
 * polygamma's n below 0 is CLT_ERR_INVALID_ARGUMENT ("does not support
 * negative n"); mvlgamma is sum_j<p lgamma(x - (p-1)/2 + j/2) +
 * p(p-1)/4 log(pi), p below 1 CLT_ERR_INVALID_ARGUMENT (PyTorch 1.13 does
 * not check x > (p-1)/2, and neither does this).
 * Gradients, PyTorch's formulas and grad_fn names: lgamma g digamma(x)
 * (LgammaBackward0), digamma g polygamma(1, x), polygamma
 * g polygamma(n+1, x), mvlgamma g sum_j digamma(...), i0 g i1(x)
 * (I0Backward0), i0e g (i1e(x) - sgn(x) i0e(x)), i1 g (i0(x) - i1(x)/x)
 * and i1e g (i0e(x) - i1e(x) (sgn(x) + 1/x)), both g/2 for |x| <= eps and NaN
 * (SpecialI1Backward0 ...), ndtr g exp(-x^2/2)/sqrt(2 pi) (MulBackward1:
 * PyTorch 1.13 composes it), ndtri g sqrt(2 pi) exp(y^2/2), log_ndtr
 * g exp(-y - x^2/2)/sqrt(2 pi), entr -g (1 + log x), sinc
 * g (cos(pi x) - sinc(x)) / x (0 at 0).  New tensor. */
CLT_API clt_status clt_lgamma(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_digamma(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_polygamma(int64_t n, const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_mvlgamma(const clt_tensor *a, int64_t p, clt_tensor **out);
CLT_API clt_status clt_special_i0(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_i0e(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_i1(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_i1e(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_ndtr(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_ndtri(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_log_ndtr(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_special_entr(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_sinc(const clt_tensor *a, clt_tensor **out);
/* torch.special.xlog1py(a, b): a * log1p(b), NaN where b is NaN, else 0
 * where a is 0; typed and broadcast as clt_xlogy.  Gradients
 * xlog1py(g, b) (0 where a == 0 and b <= -1) and g a / (b + 1)
 * (SpecialXlog1PyBackward0).  New tensor. */
CLT_API clt_status clt_special_xlog1py(const clt_tensor *a, const clt_tensor *b,
                                       clt_tensor **out);

/* ---- more pointwise math ------------------------------------------------ */

/* torch.logaddexp and torch.logaddexp2: log(e^a + e^b) and
 * log2(2^a + 2^b) as max(a, b) + log1p(exp(-|a - b|)) (a itself where
 * both are the same infinity; NaN in either gives NaN).  torch.nextafter:
 * the next float after a towards b (the C library's).  The three broadcast
 * as clt_add and need floating operands (integer and bool are
 * CLT_ERR_DTYPE_MISMATCH, as PyTorch's "logaddexp_cpu" not implemented for
 * 'Long').  Gradients g / (1 + exp(b - a)) and g / (1 + exp(a - b))
 * (LogaddexpBackward0; 2^ for Logaddexp2Backward0); nextafter records
 * NextafterBackward0, whose backward fails (CLT_ERR_INVALID_ARGUMENT), as
 * PyTorch's "not implemented".  New tensor. */
CLT_API clt_status clt_logaddexp(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_logaddexp2(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_nextafter(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.ldexp(a, b): a * 2^b, composed as PyTorch composes it,
 * clt_mul(a, clt_rpow_scalar(b, 2.0)): integer operands give float32, and
 * 2^b is computed in pow's dtype (float32 for an integer b), so an
 * exponent beyond its range overflows to inf or 0 there, as in PyTorch.
 * grad_fn MulBackward0.  New tensor. */
CLT_API clt_status clt_ldexp(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.frexp(a): *mantissa (a's dtype, magnitude in [0.5, 1) with a's
 * sign, 0 at 0) and *exponent (int32) with a = mantissa * 2^exponent;
 * +-inf and NaN give themselves and exponent 0.  Floating tensors only
 * (CLT_ERR_DTYPE_MISMATCH, "torch.frexp() only supports floating-point
 * dtypes").  The mantissa's gradient is g / 2^exponent (FrexpBackward0),
 * 2^exponent computed in float32 as PyTorch's exp2 of the int32 exponent
 * (so inf for a float64 a below about 1e-38, as there).
 * Two new tensors; on failure both outs are NULL. */
CLT_API clt_status clt_frexp(const clt_tensor *a, clt_tensor **mantissa, clt_tensor **exponent);
/* torch.heaviside(a, values): values where a == 0 (-0.0 too), 1 where
 * a > 0, 0 below and at NaN; a and values must share one dtype (any; a
 * mismatch is CLT_ERR_DTYPE_MISMATCH, PyTorch's "heaviside is not yet
 * implemented for tensors with different dtypes") and broadcast.  Records
 * a node whose backward fails, as PyTorch's NotImplemented.  New tensor. */
CLT_API clt_status clt_heaviside(const clt_tensor *a, const clt_tensor *values, clt_tensor **out);
/* torch.signbit: a bool tensor, true where the sign bit is set (-0.0 and
 * a NaN with its sign bit too), x < 0 for integers, false for bool.  New
 * tensor. */
CLT_API clt_status clt_signbit(const clt_tensor *a, clt_tensor **out);
/* torch.float_power(a, b): both converted to float64, then clt_pow; the
 * result is float64 whatever the operands (grad_fn PowBackward1).  Needs
 * cl_khr_fp64 (else CLT_ERR_DTYPE_MISMATCH as clt_to_dtype).  New
 * tensor. */
CLT_API clt_status clt_float_power(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.gcd and torch.lcm of integer tensors (bool and floating are
 * CLT_ERR_DTYPE_MISMATCH, as PyTorch's "gcd_cpu" not implemented for
 * 'Bool'), promoted and broadcast as clt_add: gcd(0, 0) is 0, results are
 * not negative except where |INT_MIN| wraps (as PyTorch's); lcm is
 * |a / gcd * b| (wrapping), 0 where a or b is.  New tensor. */
CLT_API clt_status clt_gcd(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_lcm(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.bitwise_and, _or, _xor (integer and bool tensors, promoted and
 * broadcast as clt_add; floating ones are CLT_ERR_DTYPE_MISMATCH),
 * bitwise_not (~x, logical not for bool) and the shifts
 * bitwise_left_shift and bitwise_right_shift (integer tensors only; bool
 * is refused, as PyTorch's "lshift_cpu" not implemented for 'Bool').  A
 * left shift wraps; a count outside [0, W) for a left shift, outside
 * [0, W - 1) for a right shift of a signed W-bit type, gives 0 and the
 * sign fill (0 or -1), as torch defines them (PyTorch 1.13's CPU kernel
 * takes the count modulo W instead: 1 << 40 in int32 is 256 there, 0
 * here).  New tensor. */
CLT_API clt_status clt_bitwise_and(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_bitwise_or(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_bitwise_xor(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_bitwise_not(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_bitwise_left_shift(const clt_tensor *a, const clt_tensor *b,
                                          clt_tensor **out);
CLT_API clt_status clt_bitwise_right_shift(const clt_tensor *a, const clt_tensor *b,
                                           clt_tensor **out);

/* ---- comparison helpers ------------------------------------------------- */

/* torch.isclose(a, b, rtol, atol, equal_nan): a bool tensor, true where
 * a == b (equal infinities too), where both are NaN and equal_nan is
 * nonzero, or where |a - b| is finite and at most atol + |rtol * b|
 * (PyTorch's defaults rtol 1e-05, atol 1e-08).  a and b must share one
 * dtype (CLT_ERR_DTYPE_MISMATCH otherwise, as PyTorch's "Long did not
 * match Float") and broadcast; floats compare in their dtype, integers
 * take a - b in theirs (wrapping) and the bound in float32.  A negative
 * or NaN rtol or atol is CLT_ERR_INVALID_ARGUMENT.  No gradient.  New
 * tensor. */
CLT_API clt_status clt_isclose(const clt_tensor *a, const clt_tensor *b, double rtol,
                               double atol, int equal_nan, clt_tensor **out);
/* torch.allclose: *out is 1 when every element of clt_isclose(a, b, rtol,
 * atol, equal_nan) is true, else 0 (also on failure).  Reads the answer
 * back: it waits for the device. */
CLT_API clt_status clt_allclose(const clt_tensor *a, const clt_tensor *b, double rtol,
                                double atol, int equal_nan, int *out);
/* torch.equal: *out is 1 when a and b have the same shape and equal
 * elements (compared in their promoted dtype, as clt_eq: NaN equals
 * nothing), else 0 (also on failure).  Different shapes give 0 without
 * touching the device; otherwise it reads the answer back and waits. */
CLT_API clt_status clt_equal(const clt_tensor *a, const clt_tensor *b, int *out);


/* ---- small pointwise functions (composed of the ops above) ---------------
 * Each hands out a new tensor (release with clt_tensor_free) and records
 * the gradient of the ops it is made of. */

/* torch.deg2rad(a) and torch.rad2deg(a): a * (pi / 180) and a * (180 /
 * pi); integer and bool inputs give float32 (torch's default dtype). */
CLT_API clt_status clt_deg2rad(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_rad2deg(const clt_tensor *a, clt_tensor **out);
/* torch.sgn(a): clt_sign for real dtypes (no complex here). */
CLT_API clt_status clt_sgn(const clt_tensor *a, clt_tensor **out);
/* torch.fix(a): clt_trunc (bool refused, CLT_ERR_DTYPE_MISMATCH, as torch). */
CLT_API clt_status clt_fix(const clt_tensor *a, clt_tensor **out);
/* torch.isposinf(a) and torch.isneginf(a): bool, true where a is +inf (or
 * -inf); all false for integer and bool dtypes. */
CLT_API clt_status clt_isposinf(const clt_tensor *a, clt_tensor **out);
CLT_API clt_status clt_isneginf(const clt_tensor *a, clt_tensor **out);
/* torch.isreal(a): bool of a's shape, all true (every dtype here is real). */
CLT_API clt_status clt_isreal(const clt_tensor *a, clt_tensor **out);
/* torch.fmax(a, b) and torch.fmin(a, b): the larger (smaller) element, a
 * NaN losing to a number (NaN only where both are); a and b broadcast and
 * promote as clt_where's.  Composed as where(a >= b or isnan(b), a, b)
 * (<= for fmin), so a tie's gradient goes to a, as torch's formula. */
CLT_API clt_status clt_fmax(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_fmin(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* torch.clamp_min(a, min) and torch.clamp_max(a, max): clt_clamp with one
 * bound (its dtypes, NaN rule and gradient). */
CLT_API clt_status clt_clamp_min(const clt_tensor *a, double min, clt_tensor **out);
CLT_API clt_status clt_clamp_max(const clt_tensor *a, double max, clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
