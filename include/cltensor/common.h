/* cltensor/common.h: status codes, dtypes, errors and memory rules shared by
 * every part of the cltensor API.  Include <cltensor.h> rather than this file.
 *
 * Error model.  Every fallible function returns a clt_status.  On failure it
 * also leaves a message in thread-local storage that names what went wrong
 * (devices, shapes, the OpenCL error by name, a kernel build log).  The
 * message is owned by the library and stays valid until the next cltensor
 * call on the same thread.  The library never aborts, exits or prints.
 *
 * Outputs on failure.  A function that hands something out through a
 * pointer parameter (a tensor, module, optimizer, loader, device, event,
 * string, array or OpenCL handle) sets it to NULL on every failure, and a
 * count handed out beside it (size_t *n) to 0, whatever the failure and
 * whatever the pointer held before; the other headers rely on this rule
 * instead of repeating it.  The one exception says so where it is declared
 * (clt_pick's report).  A NULL out-pointer itself is
 * CLT_ERR_NULL_ARGUMENT unless the declaration says it may be NULL.
 *
 * Errors found on the device.  An index out of range in an index op
 * (cltensor/index.h) is found by its kernel, after the op has returned
 * CLT_OK; the next blocking wait on that device by the thread that called
 * the op returns CLT_ERR_INDEX_OUT_OF_RANGE with the message, as CUDA
 * reports a kernel's error at the next synchronisation, but to that thread
 * alone: other threads' waits on the device never report it.  An integer
 * division by a zero tensor element (clt_remainder, clt_fmod,
 * clt_floor_divide) is reported the same way, as CLT_ERR_ZERO_DIVISION,
 * and a probability outside [0, 1] given to clt_binary_cross_entropy as
 * CLT_ERR_INVALID_ARGUMENT.
 *
 * Ownership.  Functions that hand out something the caller must release say
 * so next to their declaration ("new reference: release with ...").  Every
 * release function accepts NULL and then does nothing.
 *
 * Threads.  Distinct tensors may be used from distinct threads.  One tensor
 * must not be used by two threads at once without outside locking.  On
 * PoCL's basic CPU driver, kernels run on the stack of the thread that
 * waits for them (a read-back, clt_device_synchronize, a kernel's first
 * launch), and any driver may build a kernel's program on the stack of the
 * thread that first launches it: give every thread that calls cltensor at
 * least 256 KiB of stack (README.md, "Thread stacks").  With less, the
 * driver can overflow it, and the process dies of a segmentation fault
 * that the library can neither catch nor report.
 */
#ifndef CLTENSOR_COMMON_H
#define CLTENSOR_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cltensor/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define CLT_API __attribute__((visibility("default")))
#else
#define CLT_API
#endif

/* One list generates the status enum and clt_status_string(). */
#define CLT_STATUS_MAP(X)                                                    \
    X(OK, 0, "success")                                                      \
    X(ERR_INVALID_ARGUMENT, -1, "invalid argument")                          \
    X(ERR_NULL_ARGUMENT, -2, "a required argument is NULL")                  \
    X(ERR_OUT_OF_HOST_MEMORY, -3, "out of host memory")                      \
    X(ERR_NO_PLATFORM, -4, "no OpenCL platform found")                       \
    X(ERR_UNKNOWN_KIND, -5, "unknown device kind")                           \
    X(ERR_DEVICE_NOT_FOUND, -6, "no such device")                            \
    X(ERR_DEVICE_MISMATCH, -7, "tensors are on different devices")           \
    X(ERR_SHAPE_MISMATCH, -8, "shapes do not match")                         \
    X(ERR_DTYPE_MISMATCH, -9, "dtypes do not match")                         \
    X(ERR_DTYPE_UNSUPPORTED, -10, "dtype not supported by the device")       \
    X(ERR_DIM_OUT_OF_RANGE, -11, "dimension out of range")                   \
    X(ERR_TOO_MANY_DIMS, -12, "too many dimensions")                         \
    X(ERR_OPENCL, -13, "OpenCL call failed")                                 \
    X(ERR_BUILD_FAILED, -14, "kernel build failed")                          \
    X(ERR_OUT_OF_DEVICE_MEMORY, -15, "out of device memory")                 \
    X(ERR_CLBLAST, -16, "CLBlast call failed")                               \
    X(ERR_NOT_READY, -17, "the operation has not completed")                 \
    X(ERR_BUFFER_TOO_SMALL, -18, "the caller's buffer is too small")         \
    X(ERR_NOT_CONTIGUOUS, -19, "the tensor is not contiguous")               \
    X(ERR_IO, -20, "file input/output failed")                               \
    X(ERR_SYNC_FORBIDDEN, -21, "blocking synchronisation forbidden")         \
    X(ERR_INTERNAL, -22, "internal error")                                   \
    X(ERR_INDEX_OUT_OF_RANGE, -23, "index out of range")                     \
    X(ERR_ZERO_DIVISION, -24, "integer division by zero")

typedef enum clt_status {
#define CLT_STATUS_ENUM_(name, value, text) CLT_##name = value,
    CLT_STATUS_MAP(CLT_STATUS_ENUM_)
#undef CLT_STATUS_ENUM_
} clt_status;

/* The fixed English text of a status ("invalid argument").  Static storage. */
CLT_API const char *clt_status_string(clt_status status);

/* The name of a status as it appears in C ("CLT_ERR_DEVICE_MISMATCH");
 * "CLT_UNKNOWN_STATUS" for a value outside the enum.  Static storage. */
CLT_API const char *clt_status_name(clt_status status);

/* The message left by the last failed call on this thread, or "" when the
 * last call succeeded.  Owned by the library; valid until the next cltensor
 * call on this thread, and freed when the thread exits.  Strings that come
 * from the caller or from a file are quoted in it with control characters,
 * DEL and bytes that are not UTF-8 written as \xNN, and cut with "..."
 * after about 200 bytes: a device kind string; a dtype name given to
 * clt_dtype_parse; the values of CLTENSOR_DEVICE, CLTENSOR_GEMM_CLASS,
 * CLTENSOR_SYNC_DEBUG and CLTENSOR_MEMORY_FRACTION; every file path of
 * the npy, safetensors and checkpoint functions, loading or saving, with
 * the temporary file and symbolic links that saving names; tensor names
 * given to clt_save_safetensors, and the model's and optimizer's state
 * names in checkpoint messages; and what a file holds: safetensors tensor
 * names (the unexpected keys of a checkpoint among them), dtype strings,
 * __metadata__ keys and values, the kind of optimizer or schedule a
 * checkpoint names, and .npy header keys and descr. */
CLT_API const char *clt_last_error(void);

/* The status of the last call on this thread that set one. */
CLT_API clt_status clt_last_status(void);

/* The raw OpenCL (or CLBlast) error code behind the last CLT_ERR_OPENCL or
 * CLT_ERR_CLBLAST on this thread, 0 otherwise. */
CLT_API int clt_last_cl_error(void);

/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or
 * "CL_UNKNOWN_ERROR".  Static storage. */
CLT_API const char *clt_cl_error_name(int cl_error);

/* Releases strings and arrays that cltensor returned as "release with
 * clt_free".  NULL does nothing. */
CLT_API void clt_free(void *ptr);

/* Element types.  Names and promotion follow PyTorch.  New dtypes are
 * appended, so a dtype's value never changes (CLT_BFLOAT16 is 9). */
#define CLT_DTYPE_MAP(X)                                                     \
    X(FLOAT32, float32, 4)                                                   \
    X(FLOAT64, float64, 8)                                                   \
    X(FLOAT16, float16, 2)                                                   \
    X(INT32, int32, 4)                                                       \
    X(INT64, int64, 8)                                                       \
    X(UINT8, uint8, 1)                                                       \
    X(BOOL, bool, 1)                                                         \
    X(COMPLEX64, complex64, 8)                                               \
    X(COMPLEX128, complex128, 16)                                            \
    X(BFLOAT16, bfloat16, 2)                                                 \
    X(INT8, int8, 1)                                                         \
    X(INT16, int16, 2)

/* Complex dtypes (CLT_COMPLEX64, CLT_COMPLEX128) store each element as its
 * real part followed by its imaginary part (float32 or float64), as numpy,
 * PyTorch and C99's float complex do.  What they support: creation from and
 * reading back to the host (clt_tensor_item refuses them), clt_full and
 * clt_zeros (a real value), clt_to_dtype (a real tensor becomes complex with
 * a zero imaginary part; a complex one becomes real by dropping its
 * imaginary part, as torch does; bool is refused), moves between devices,
 * clone, contiguous, copies and the views (reshape, transpose, slice, cat,
 * ...), .npy files, the functions of cltensor/fft.h (clt_view_as_real,
 * clt_real, clt_imag, clt_conj, clt_angle, clt_polar, clt_complex and the
 * FFTs), clt_abs, clt_add, clt_sub, clt_mul and clt_div with a real or
 * complex other operand, and in place (clt_add_ and clt_sub_ with any
 * alpha, clt_mul_, clt_div_, the _scalar_ forms), the elementary functions (clt_exp ... clt_atanh,
 * clt_sigmoid), clt_pow and the other ops that cltensor/fft.h lists, with
 * their gradients.  Every other op refuses a complex operand with
 * CLT_ERR_DTYPE_UNSUPPORTED ("... is not implemented for complex
 * dtypes").
 *
 * bfloat16 (CLT_BFLOAT16, torch.bfloat16) is float32's upper 16 bits: 8
 * exponent bits (float32's range, largest finite 3.3895e38, eps 2^-7), 7
 * fraction bits.  Like float16 it is a storage format on every device:
 * kernels widen it to float32 exactly, compute in float32 and round the
 * result to nearest, ties to even, NaN kept a NaN (0x7fc0), as torch's
 * round_to_nearest_even; a float64 value goes through float32 first (two
 * roundings, as c10::BFloat16).  Promotion as torch: with an integer or
 * bool it stays bfloat16, with float16 it is float32, with float32 or
 * float64 the wider, and a Python-float scalar keeps it.  It goes where
 * float16 goes (every op that takes float16 takes bfloat16 and rounds to
 * it, the float16 paths through float32 included: products, convolutions,
 * pooling, norms, losses; autocast with clt_autocast_enter(dev,
 * CLT_BFLOAT16)), and is refused with CLT_ERR_DTYPE_UNSUPPORTED where
 * float16 is (linalg decompositions, FFTs and stft, reflect/replicate pad,
 * complex operands, GradScaler's gradients) and by .npy files, which have
 * no bfloat16.  clt_tensor_from_host and clt_tensor_read move the raw 16
 * bits (torch's .view(torch.int16)); clt_tensor_item gives the value.
 * safetensors "BF16", torch's BFloat16Storage and DLPack's kDLBfloat 16
 * carry it.  Differences from torch: results are rounded once from
 * float32 everywhere (torch's CPU computes a few ops, arange among them,
 * in bfloat16 steps, and may land one ulp away).
 *
 * int8 (CLT_INT8, torch.int8, a signed char) and int16 (CLT_INT16,
 * torch.int16 or torch.short) are integer dtypes like uint8: kernels
 * compute in int and store the low 8 or 16 bits, so arithmetic wraps as
 * torch's (127 + 1 is -128, -(-128) is -128, -128 // -1 is -128), integer
 * division and remainder take the signs torch's do, shifts work in the
 * dtype's width (a left shift by 8 or more of an int8 gives 0, a right
 * shift the sign fill) and sums, products and cumulative sums give int64.
 * Promotion as torch: int8 with uint8 is int16, int8 < int16 < int32 <
 * int64, with bool it stays, with any floating dtype it is that dtype.
 * Fill values and clamp bounds must lie in the dtype's range
 * ([-128, 127], [-32768, 32767]: "value cannot be converted to type int8
 * without overflow"); operands of binary ops wrap.  Floating values
 * become int8 or int16 through int32 (truncated toward zero, then the low
 * bits kept: 200.0 gives -56 as int8, 40000.0 gives -25536 as int16, NaN
 * gives 0, as torch's CPU kernels on x86); a value outside int32's range
 * gives what the device's float-to-int conversion gives (undefined in
 * torch too).  Refused as for the other integers: gradients, mean and
 * the floating-only ops.  .npy "|i1" and "<i2", safetensors "I8" and
 * "I16", torch's CharStorage and ShortStorage and DLPack kDLInt 8 and 16
 * carry them. */

typedef enum clt_dtype {
#define CLT_DTYPE_ENUM_(up, low, size) CLT_##up,
    CLT_DTYPE_MAP(CLT_DTYPE_ENUM_)
#undef CLT_DTYPE_ENUM_
    CLT_DTYPE_COUNT
} clt_dtype;

/* "float32", "int64", ...; "invalid" for a value outside the enum.
 * Static storage. */
CLT_API const char *clt_dtype_name(clt_dtype dtype);

/* Bytes per element; 0 for a value outside the enum. */
CLT_API size_t clt_dtype_size(clt_dtype dtype);

/* Parses "float32" (also "float", "f32", "double", "half", "int", "long",
 * "bool", "bfloat16", "bf16", "int8", "i8", "int16", "short", "i16",
 * ...).  CLT_ERR_INVALID_ARGUMENT for anything
 * else. */
CLT_API clt_status clt_dtype_parse(const char *name, clt_dtype *out);

/* Largest number of dimensions a tensor may have. */
#define CLT_MAX_DIMS 8

/* Run-time version, e.g. "0.1.0"; compare with CLTENSOR_VERSION_STRING. */
CLT_API const char *clt_version(void);

/* Releases every device, context, queue, cached program and pooled buffer the
 * library holds.  Tensors must all have been released before.  A later call
 * that needs a device initialises the library again.  Optional: useful to
 * leave a leak checker a clean slate. */
CLT_API void clt_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
