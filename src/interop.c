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
    CLT__REQUIRE_ARG(t, "clt_tensor_cl_buffer");
    CLT__REQUIRE_ARG(mem, "clt_tensor_cl_buffer");
    *mem = clt__mem(t);
    if (offset_bytes)
        *offset_bytes = (size_t)t->offset * clt_dtype_size(t->dtype);
    return clt__ok();
}
