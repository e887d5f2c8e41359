/* interop.c: handing OpenCL objects to callers and wrapping theirs
 * (include/cltensor/opencl.h). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#include "cltensor/opencl.h"

cl_context clt_device_cl_context(clt_device *dev)
{
    if (dev == NULL || clt__device_open(dev) != CLT_OK)
        return NULL;
    return dev->context;
}

cl_command_queue clt_device_cl_queue(clt_device *dev)
{
    if (dev == NULL || clt__device_open(dev) != CLT_OK)
        return NULL;
    return dev->queue;
}

cl_device_id clt_device_cl_device(const clt_device *dev)
{
    return dev ? dev->id : NULL;
}

clt_status clt_tensor_cl_buffer(const clt_tensor *t, cl_mem *mem, size_t *offset_bytes)
{
    CLT__REQUIRE_ARG(mem, "clt_tensor_cl_buffer");
    *mem = NULL;
    if (offset_bytes)
        *offset_bytes = 0;
    CLT__REQUIRE_ARG(t, "clt_tensor_cl_buffer");
    *mem = clt__mem(t);
    if (offset_bytes)
        *offset_bytes = (size_t)t->offset * clt_dtype_size(t->dtype);
    return clt__ok();
}

clt_status clt_tensor_from_cl_buffer(clt_device *dev, cl_mem mem, size_t offset_bytes,
                                     clt_dtype dtype, int ndim, const int64_t *shape,
                                     clt_tensor **out)
{
    const char *fn = "clt_tensor_from_cl_buffer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(mem, fn);
    clt_status st = clt__check_dtype(dev, dtype, fn);
    if (st == CLT_OK)
        st = clt__check_shape(ndim, shape, fn);
    if (st == CLT_OK)
        st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    size_t es = clt_dtype_size(dtype);
    if (offset_bytes % es != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: offset %zu is not a multiple of the %s element size %zu", fn,
                          offset_bytes, clt_dtype_name(dtype), es);
    cl_context ctx = NULL;
    cl_mem_object_type type = 0;
    cl_mem_flags flags = 0;
    size_t size = 0;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
    /* A sub-buffer made without access flags inherits its parent's, which
     * OpenCL 1.2 drivers need not report as its own. */
    cl_mem parent = NULL;
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
    const cl_mem_flags access = CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY;
    cl_mem_flags pflags = 0;
    if (err == CL_SUCCESS && parent != NULL && !(flags & access)) {
        err = clGetMemObjectInfo(parent, CL_MEM_FLAGS, sizeof pflags, &pflags, NULL);
        flags |= pflags & access;
    }
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "%s: querying the buffer", fn);
    /* An image (or pipe) is no array of elements: buffer commands on it
     * are CL_INVALID_MEM_OBJECT, or undefined on some drivers. */
    if (type != CL_MEM_OBJECT_BUFFER)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the memory object is not a buffer (CL_MEM_TYPE 0x%x; images "
                          "and pipes cannot hold a tensor)",
                          fn, (unsigned)type);
    /* Kernels write through any tensor (in-place ops, outputs of the _out
     * forms, optimizer steps) and read any: a kernel writing a read-only
     * buffer, or reading a write-only one, is undefined behaviour that
     * drivers do not report. */
    if (flags & (CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the buffer was created with %s: a tensor's buffer must be "
                          "readable and writable by kernels (CL_MEM_READ_WRITE)",
                          fn, flags & CL_MEM_READ_ONLY ? "CL_MEM_READ_ONLY" : "CL_MEM_WRITE_ONLY");
    if (ctx != dev->context)
        return clt__error(CLT_ERR_DEVICE_MISMATCH,
                          "%s: the buffer belongs to another OpenCL context than %s (%s)", fn,
                          dev->label, dev->info.name);
    uint64_t numel = 1, bytes = 0, end = 0;
    for (int d = 0; d < ndim; d++)
        numel *= (uint64_t)shape[d]; /* clt__check_shape: no overflow */
    bool wraps = __builtin_mul_overflow(numel, (uint64_t)es, &bytes) ||
                 __builtin_add_overflow(bytes, (uint64_t)offset_bytes, &end) || end > SIZE_MAX;
    if (wraps || end > size) {
        char s[160];
        clt__shape_str(s, sizeof s, ndim, shape);
        if (wraps)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: a %s tensor of shape %s at offset %zu ends past the largest "
                              "size_t; the buffer has %zu bytes",
                              fn, clt_dtype_name(dtype), s, offset_bytes, size);
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a %s tensor of shape %s at offset %zu needs %llu bytes, the "
                          "buffer has %zu",
                          fn, clt_dtype_name(dtype), s, offset_bytes, (unsigned long long)end,
                          size);
    }
    clt_tensor *t = clt__calloc(1, sizeof *t);
    clt__storage *sto = clt__calloc(1, sizeof *sto);
    if (t == NULL || sto == NULL) {
        free(t);
        free(sto);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    clRetainMemObject(mem);
    sto->refs = 1;
    sto->dev = dev;
    sto->mem = mem;
    sto->bytes = size;
    sto->foreign = true;
    t->refs = 1;
    t->storage = sto;
    t->dev = dev;
    t->dtype = dtype;
    t->ndim = ndim;
    t->offset = (int64_t)(offset_bytes / es);
    t->numel = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->shape[d] = shape[d];
        t->strides[d] = t->numel;
        t->numel *= shape[d];
    }
    st = clt__scope_adopt(t);
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    *out = t;
    return clt__ok();
}
