/* cltensor/opencl.h: interoperation with code that uses OpenCL directly.
 * Not included by <cltensor.h>: include it where you need the OpenCL types.
 *
 * Every getter here hands out a BORROWED object: the library keeps it and
 * releases it at clt_shutdown().  Call clRetain* on it to keep it longer.
 * Work you enqueue on a device's queue is ordered with cltensor's own work
 * on that device (the queue is in-order). */
#ifndef CLTENSOR_OPENCL_H
#define CLTENSOR_OPENCL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device's context, queue and OpenCL id.  Borrowed (not retained);
 * NULL for NULL. */
CLT_API cl_context clt_device_cl_context(clt_device *dev);
CLT_API cl_command_queue clt_device_cl_queue(clt_device *dev);
CLT_API cl_device_id clt_device_cl_device(const clt_device *dev);

/* The buffer holding a tensor and the byte offset of its first element.
 * Borrowed (not retained): valid while t lives and holds its values
 * there: calls that replace a whole tensor's values at once give its
 * storage a new buffer instead of writing the old one (clt_backward adding
 * to a gradient, clt_clip_grad_norm, BatchNorm's running statistics in
 * clt_module_forward), so ask again after them.  *mem is NULL for a tensor with no
 * elements. */
CLT_API clt_status clt_tensor_cl_buffer(const clt_tensor *t, cl_mem *mem, size_t *offset_bytes);

/* A tensor over a caller's buffer, contiguous, row-major, starting at
 * offset_bytes.  The buffer is retained (clRetainMemObject) and released
 * when the tensor's last handle goes; it must be a buffer (not an image:
 * CLT_ERR_INVALID_ARGUMENT), belong to dev's context and hold the whole
 * tensor.  Kernels may read and write any tensor (in-place ops, _out
 * destinations, optimizer steps), so a buffer made with CL_MEM_READ_ONLY
 * or CL_MEM_WRITE_ONLY is refused (CLT_ERR_INVALID_ARGUMENT): wrap a
 * CL_MEM_READ_WRITE buffer, or copy a read-only one into a new tensor.
 * The host-access flags are accepted (CL_MEM_HOST_NO_ACCESS, ..._READ_ONLY,
 * ..._WRITE_ONLY): device work runs as usual, and a transfer they forbid
 * (clt_tensor_read of a CL_MEM_HOST_NO_ACCESS buffer, say) fails with the
 * driver's CL_INVALID_OPERATION as CLT_ERR_OPENCL.  New tensor: release
 * with clt_tensor_free. */
CLT_API clt_status clt_tensor_from_cl_buffer(clt_device *dev, cl_mem mem, size_t offset_bytes,
                                             clt_dtype dtype, int ndim, const int64_t *shape,
                                             clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
