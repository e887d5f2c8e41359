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
 */
#ifndef CLTENSOR_OPS_H
#define CLTENSOR_OPS_H

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- binary, tensor with tensor ---------------------------------------- */
CLT_API clt_status clt_add(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_sub(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
CLT_API clt_status clt_mul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
/* True division: integer operands give float32, as torch.div does. */
CLT_API clt_status clt_div(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);

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

/* ---- unary -------------------------------------------------------------- */
CLT_API clt_status clt_neg(const clt_tensor *a, clt_tensor **out);

/* ---- type promotion ------------------------------------------------------ */

/* The dtype PyTorch gives a binary op on a and b (torch.result_type). */
CLT_API clt_status clt_result_type(const clt_tensor *a, const clt_tensor *b, clt_dtype *out);

/* torch.promote_types for two dtypes. */
CLT_API clt_dtype clt_promote_types(clt_dtype a, clt_dtype b);

#ifdef __cplusplus
}
#endif

#endif
