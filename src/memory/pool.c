/* pool.c: device buffer allocation.  Every tensor buffer goes through
 * clt__buffer_alloc and clt__buffer_release so that a caching allocator can
 * sit here without the rest of the library knowing. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

clt_status clt__buffer_alloc(clt_device *dev, size_t bytes, cl_mem *out)
{
    cl_int err = CL_SUCCESS;
    *out = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        *out = NULL;
        return clt__cl_error(err, "allocating %zu bytes on %s (%s)", bytes, dev->label,
                             dev->info.name);
    }
    return CLT_OK;
}

void clt__buffer_release(clt_device *dev, cl_mem mem, size_t bytes)
{
    (void)dev;
    (void)bytes;
    if (mem)
        clReleaseMemObject(mem);
}

void clt__pool_destroy(clt_device *dev)
{
    (void)dev;
}
