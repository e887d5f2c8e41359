/* cltensor/dlpack.h: exchanging tensors with other libraries through
 * DLPack (0.6 and later: DLManagedTensor), as torch.utils.dlpack does.
 * Not included by <cltensor.h>: include it where you need the DLPack
 * types (it includes <dlpack/dlpack.h>; on Debian the package
 * libdlpack-dev).
 *
 * cltensor's tensors live in OpenCL buffers, which DLPack cannot describe
 * portably, so both directions copy through host memory (kDLCPU):
 * clt_to_dlpack reads the tensor back (it waits), clt_from_dlpack uploads.
 *
 * dtypes: float32, float64, float16 (kDLFloat 32, 64, 16), bfloat16
 * (kDLBfloat 16), int8, int16, int32, int64 (kDLInt 8, 16, 32, 64), uint8 (kDLUInt 8), and bool as kDLBool 8 where the
 * DLPack header has it (0.8 and later), always with lanes 1.
 */
#ifndef CLTENSOR_DLPACK_H
#define CLTENSOR_DLPACK_H

#include <dlpack/dlpack.h>

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads t back into host memory and hands it out as a new DLManagedTensor:
 * kDLCPU, device_id 0, byte_offset 0, C-contiguous strides (given, not
 * NULL), a 0-d tensor with ndim 0.  The data is aligned to 256 bytes.
 * Ownership: the caller (or the library it hands *out to) calls
 * (*out)->deleter(*out) once, which frees the data, shape, strides and the
 * structure; t is not kept and may be released at once.  Errors:
 * CLT_ERR_NULL_ARGUMENT, CLT_ERR_DTYPE_UNSUPPORTED (bool with a DLPack
 * header that has no kDLBool: convert to uint8 first), errors of the
 * read-back. */
CLT_API clt_status clt_to_dlpack(const clt_tensor *t, DLManagedTensor **out);

/* Copies the kDLCPU tensor src (any strides, negative included, NULL
 * strides meaning C-contiguous; byte_offset honoured) into a new
 * contiguous tensor on dev.  src stays the caller's: this function does
 * not call its deleter, and src may be deleted as soon as it returns.
 * Refused with CLT_ERR_INVALID_ARGUMENT: another device type, lanes other
 * than 1, a dtype code and width cltensor does not have (complex, int8,
 * ...), more than CLT_MAX_DIMS dimensions, a negative size,
 * NULL data or shape where elements exist, bool bytes other than 0 and 1,
 * strides or a byte_offset that put elements past the int64 range of byte
 * distances or around the end of the address space ("storage size
 * calculation overflowed").  A size the device cannot hold is refused
 * (CLT_ERR_OUT_OF_DEVICE_MEMORY) before the host copy is made.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_from_dlpack(clt_device *dev, const DLManagedTensor *src,
                                   clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
