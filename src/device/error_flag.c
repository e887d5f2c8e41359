/* error_flag.c: each device's record of the first out-of-range index that an
 * index kernel met, and its check behind the blocking waits, which turns it
 * into CLT_ERR_INDEX_OUT_OF_RANGE at the next synchronisation. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const clt__index_error zero_record;

static const char *const op_names[CLT__IDX_COUNT] = {
#define CLT__INDEX_OP_NAME_(name, text) [CLT__IDX_##name] = text,
    CLT__INDEX_OPS(CLT__INDEX_OP_NAME_)
#undef CLT__INDEX_OP_NAME_
};

/* Created under the device's lock the first time an index op runs there, so
 * that devices which never index pay nothing at their waits. */
clt_status clt__index_errors(clt_device *dev, cl_mem *out)
{
    cl_mem mem = __atomic_load_n(&dev->index_errors, __ATOMIC_ACQUIRE);
    if (mem) {
        *out = mem;
        return CLT_OK;
    }
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&dev->lock);
    mem = dev->index_errors;
    if (mem == NULL) {
        cl_int err = CL_SUCCESS;
        mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             sizeof zero_record, (void *)&zero_record, &err);
        if (err != CL_SUCCESS) {
            mem = NULL;
            st = clt__cl_error(err, "index error record: clCreateBuffer of %zu bytes on %s (%s)",
                               sizeof zero_record, dev->label, dev->info.name);
        } else {
            __atomic_store_n(&dev->index_errors, mem, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&dev->lock);
    *out = mem;
    return st;
}

clt_status clt__index_check_begin(clt_device *dev, clt__index_check *c, const char *fn)
{
    memset(c, 0, sizeof *c);
    if (dev == NULL || __atomic_load_n(&dev->index_errors, __ATOMIC_ACQUIRE) == NULL)
        return CLT_OK;
    clt_status st = CLT_OK;
    /* The read and the reset go in together: a kernel enqueued by another
     * thread between them would have its record wiped unseen.  The reset
     * writes from static storage, so it needs no wait either. */
    pthread_mutex_lock(&dev->lock);
    cl_mem mem = dev->index_errors;
    CLT__CL_CHECK(CLT__DRIVER(clEnqueueReadBuffer(dev->queue, mem, CL_FALSE, 0, sizeof c->rec,
                                                  &c->rec, 0, NULL, &c->ev)),
                  "%s: reading the index error record of %s (%s)", fn, dev->label,
                  dev->info.name);
    c->dev = dev;
    CLT__CL_CHECK(CLT__DRIVER(clEnqueueWriteBuffer(dev->queue, mem, CL_FALSE, 0,
                                                   sizeof zero_record, &zero_record, 0, NULL,
                                                   NULL)),
                  "%s: resetting the index error record of %s (%s)", fn, dev->label,
                  dev->info.name);
done:
    pthread_mutex_unlock(&dev->lock);
    if (st != CLT_OK && c->ev) {
        clWaitForEvents(1, &c->ev);
        clReleaseEvent(c->ev);
        memset(c, 0, sizeof *c);
    }
    return st;
}

clt_status clt__index_check_end(clt__index_check *c, bool report, const char *fn)
{
    if (c->dev == NULL)
        return CLT_OK;
    clt_device *dev = c->dev;
    cl_int err = clWaitForEvents(1, &c->ev);
    clReleaseEvent(c->ev);
    c->dev = NULL;
    c->ev = NULL;
    if (!report)
        return CLT_OK;
    err = clt__driver_waited(err);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "%s: reading the index error record of %s (%s)", fn,
                             dev->label, dev->info.name);
    const clt__index_error *r = &c->rec;
    if (r->flag == 0)
        return CLT_OK;
    const char *op = r->op >= 0 && r->op < CLT__IDX_COUNT ? op_names[r->op] : "an index op";
    char where[512];
    snprintf(where, sizeof where, "found on %s (%s) at the next synchronisation, %s",
             dev->label, dev->info.name, fn);
    if (r->dim == -2)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: Target %lld is out of bounds (expected a class index in [0, %lld) "
                          "or ignore_index) (%s)",
                          op, (long long)r->value, (long long)r->size, where);
    if (r->dim < 0 && r->value < 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: class values must be non-negative, got %lld (%s)", op,
                          (long long)r->value, where);
    if (r->dim < 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: class values must be smaller than num_classes %lld, got %lld (%s)",
                          op, (long long)r->size, (long long)r->value, where);
    return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                      "%s: index %lld is out of bounds for dimension %d with size %lld (%s)", op,
                      (long long)r->value, r->dim, (long long)r->size, where);
}

void clt__index_errors_release(clt_device *dev)
{
    if (dev->index_errors) {
        clReleaseMemObject(dev->index_errors);
        clt__mem_released();
        dev->index_errors = NULL;
    }
}
