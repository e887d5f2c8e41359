/* transfer.c: host import, moves between devices, and explicit read-back
 * (blocking and with an event). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* On devices that share the host's memory (CPUs, integrated GPUs) a mapped
 * buffer is the device memory itself.  Measured on PoCL 3.1: mapping is
 * 8-15 % faster from a few MiB up, but its two commands cost more than one
 * read or write below that, so large transfers map and small ones copy.
 * CLTENSOR_MAP=0 turns mapping off. */
#define MAP_MIN_BYTES (1u << 20)

static bool mapped(const clt_device *dev, size_t bytes)
{
    static int off = -1;
    int v = __atomic_load_n(&off, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *env = getenv("CLTENSOR_MAP");
        v = env && strcmp(env, "0") == 0;
        __atomic_store_n(&off, v, __ATOMIC_RELAXED);
    }
    return dev->info.host_unified_memory && !v && bytes >= MAP_MIN_BYTES;
}

/* Every command goes into a device's queue under the device's lock, as
 * launches do, and every wait happens outside it: PoCL's basic driver runs
 * commands in the thread that enqueues them and deadlocks when two threads
 * enqueue on one device at once (a launch and a blocking read were seen
 * waiting for each other's event locks). */
static cl_int wait_release(cl_event ev)
{
    cl_int err = clt__driver_waited(clWaitForEvents(1, &ev));
    clReleaseEvent(ev);
    return err;
}

/* A blocking copy between host memory and bytes [offset, offset + bytes) of
 * mem: written from data (write, which only reads data) or read into it;
 * through a mapping where the device shares host memory, else a read or
 * write command.  The caller may reuse data when it returns. */
static cl_int host_copy(clt_device *dev, cl_mem mem, size_t offset, size_t bytes, void *data,
                        bool write)
{
    cl_event ev = NULL;
    cl_int err = CL_SUCCESS;
    bool map = mapped(dev, bytes);
    void *p = NULL;
    pthread_mutex_lock(&dev->lock);
    if (clt__driver_refused())
        err = CL_OUT_OF_RESOURCES;
    else if (map)
        p = clEnqueueMapBuffer(dev->queue, mem, CL_FALSE,
                               write ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ, offset,
                               bytes, 0, NULL, &ev, &err);
    else if (write)
        err = clEnqueueWriteBuffer(dev->queue, mem, CL_FALSE, offset, bytes, data, 0, NULL, &ev);
    else
        err = clEnqueueReadBuffer(dev->queue, mem, CL_FALSE, offset, bytes, data, 0, NULL, &ev);
    if (err == CL_SUCCESS)
        clFlush(dev->queue);
    pthread_mutex_unlock(&dev->lock);
    if (err != CL_SUCCESS)
        return err;
    err = wait_release(ev);
    if (!map)
        return err;
    if (err == CL_SUCCESS && write)
        memcpy(p, data, bytes);
    else if (err == CL_SUCCESS)
        memcpy(data, p, bytes);
    /* A failed wait still leaves the region mapped. */
    pthread_mutex_lock(&dev->lock);
    cl_int unmap = CLT__DRIVER(clEnqueueUnmapMemObject(dev->queue, mem, p, 0, NULL, NULL));
    if (unmap == CL_SUCCESS)
        clFlush(dev->queue);
    pthread_mutex_unlock(&dev->lock);
    return err != CL_SUCCESS ? err : unmap;
}

struct clt_event {
    cl_event ev;            /* NULL when there was nothing to copy */
    clt_tensor *keep;       /* keeps the source storage alive until done */
    bool waited;
    clt__index_check chk;   /* the reading thread's index error record, read behind the copy */
};

clt_status clt_tensor_from_host(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                                const void *data, clt_tensor **out)
{
    return clt__tensor_from_host_in("clt_tensor_from_host", dev, dtype, ndim, shape, data, out);
}

clt_status clt__tensor_from_host_in(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                                    const int64_t *shape, const void *data, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    clt_status st = clt__check_dtype(dev, dtype, fn);
    if (st == CLT_OK)
        st = clt__check_shape(ndim, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *t = NULL;
    st = clt__tensor_new(dev, dtype, ndim, shape, &t);
    if (st != CLT_OK)
        return st;
    size_t bytes = clt_tensor_nbytes(t);
    if (bytes > 0) {
        if (data == NULL) {
            clt_tensor_free(t);
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: data is NULL for %zu bytes", fn, bytes);
        }
        cl_int err = host_copy(dev, clt__mem(t), 0, bytes, (void *)data, true);
        if (err != CL_SUCCESS) {
            clt_tensor_free(t);
            return clt__cl_error(err, "%s: writing %zu bytes to %s (%s)", fn, bytes, dev->label,
                                 dev->info.name);
        }
        clt__count_h2d(bytes);
    }
    *out = t;
    return clt__ok();
}

/* A contiguous version of t on its own device (maybe t's own storage),
 * for the public call fn. */
static clt_status contiguous(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    return clt__contiguous_as(fn, t, t->dtype, out);
}

/* Device-side copy between two devices of one context.  The two in-order
 * queues do not order each other.  Cross-queue event dependencies would
 * (and PoCL 3.1 deadlocks on them between its pthread and basic drivers),
 * so the source queue is drained first and the copy is waited for, which
 * also keeps the source buffer from being reused under the copy. */
static clt_status copy_same_context(const clt_tensor *src, clt_tensor *dst, const void *caller,
                                    const char *fn)
{
    clt_status st = CLT_OK;
    clt_device *sd = src->dev, *dd = dst->dev;
    size_t es = clt_dtype_size(src->dtype);
    clt__index_check chk = {0};
    CLT__TRY(clt__sync_point_at(fn, caller));
    CLT__TRY(clt__index_check_begin(sd, &chk, fn));
    CLT__CL_CHECK(clt__driver_waited(clFinish(sd->queue)), "%s: finishing work on %s (%s)", fn,
                  sd->label, sd->info.name);
    CLT__TRY(clt__index_check_end(&chk, true, fn));
    cl_event ev = NULL;
    pthread_mutex_lock(&dd->lock);
    cl_int err = CLT__DRIVER(clEnqueueCopyBuffer(dd->queue, clt__mem(src), clt__mem(dst),
                                                 (size_t)src->offset * es, 0,
                                                 clt_tensor_nbytes(src), 0, NULL, &ev));
    if (err == CL_SUCCESS)
        clFlush(dd->queue);
    pthread_mutex_unlock(&dd->lock);
    CLT__CL_CHECK(err, "%s: copying %zu bytes from %s (%s) to %s (%s)", fn,
                  clt_tensor_nbytes(src), sd->label, sd->info.name, dd->label, dd->info.name);
    CLT__CL_CHECK(wait_release(ev), "%s: copy to %s (%s)", fn, dd->label, dd->info.name);
done:
    clt__index_check_end(&chk, false, NULL);
    return st;
}

static clt_status copy_through_host(const clt_tensor *src, clt_tensor *dst, const void *caller,
                                    const char *fn)
{
    size_t bytes = clt_tensor_nbytes(src);
    void *tmp = clt__malloc(bytes);
    if (tmp == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: no host memory for a %zu-byte staging buffer", fn, bytes);
    clt_status st = clt__tensor_read_at(src, tmp, bytes, fn, caller);
    if (st == CLT_OK) {
        cl_int err = host_copy(dst->dev, clt__mem(dst), 0, bytes, tmp, true);
        if (err != CL_SUCCESS)
            st = clt__cl_error(err, "%s: writing %zu bytes to %s (%s)", fn, bytes,
                               dst->dev->label, dst->dev->info.name);
        else
            clt__count_h2d(bytes);
    }
    free(tmp);
    return st;
}

clt_status clt__to(const clt_tensor *t, clt_device *dev, clt_tensor **out)
{
    return clt__to_at(t, dev, out, __builtin_return_address(0), "clt_to");
}

clt_status clt__to_at(const clt_tensor *t, clt_device *dev, clt_tensor **out,
                      const void *caller, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(dev, fn);
    clt_status st;
    if (dev == t->dev) {
        st = clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    st = clt__check_dtype(dev, t->dtype, fn);
    if (st == CLT_OK)
        st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    clt_tensor *src = NULL, *dst = NULL;
    CLT__TRY(contiguous(t, &src, fn));
    CLT__TRY(clt__result_new(fn, dev, t->dtype, t->ndim, t->shape, &dst));
    if (src->numel > 0) {
        if (dev->context == t->dev->context)
            CLT__TRY(copy_same_context(src, dst, caller, fn));
        else
            CLT__TRY(copy_through_host(src, dst, caller, fn));
    }
    *out = dst;
    dst = NULL;
done:
    clt_tensor_free(src);
    clt_tensor_free(dst);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__write_async(clt_tensor *t, const void *src, size_t bytes, cl_event *ev,
                            const char *fn)
{
    *ev = NULL;
    if (bytes == 0)
        return CLT_OK;
    size_t off = (size_t)t->offset * clt_dtype_size(t->dtype);
    pthread_mutex_lock(&t->dev->lock);
    cl_int err = CLT__DRIVER(clEnqueueWriteBuffer(t->dev->queue, clt__mem(t), CL_FALSE, off,
                                                  bytes, src, 0, NULL, ev));
    if (err == CL_SUCCESS)
        clFlush(t->dev->queue);
    pthread_mutex_unlock(&t->dev->lock);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "%s: writing %zu bytes to %s (%s)", fn, bytes, t->dev->label,
                             t->dev->info.name);
    clt__count_h2d(bytes);
    clt__version_bump(t);
    return CLT_OK;
}

/* Puts the storage of `moved`, t's copy on another device, into t's handle;
 * t's old storage goes to `moved`, to be released with it. */
static void take_storage(clt_tensor *t, clt_tensor *moved)
{
    clt__storage *old = t->storage;
    clt_dtype dtype = t->dtype;
    t->storage = moved->storage;
    moved->storage = old;
    t->dtype = moved->dtype;
    moved->dtype = dtype;
    t->dev = moved->dev;
    t->offset = moved->offset;
    memcpy(t->strides, moved->strides, sizeof t->strides);
    moved->dev = old ? old->dev : moved->dev;
}

/* The buffers trade places inside the two storages, so that every handle
 * on t's storage (a view that clt_grad handed out, say) sees the new
 * values. */
bool clt__tensor_take_values(clt_tensor *t, clt_tensor *next)
{
    clt__storage *s = t->storage, *n = next->storage;
    if (s == NULL || n == NULL || s == n || s->foreign || n->foreign || s->dev != n->dev ||
        s->bytes != n->bytes || t->offset != 0 || clt_tensor_nbytes(t) != s->bytes ||
        !clt__is_contiguous(t) || next->offset != 0 || !clt__is_contiguous(next) ||
        __atomic_load_n(&n->refs, __ATOMIC_ACQUIRE) != 1 || next->dtype != t->dtype ||
        next->ndim != t->ndim ||
        memcmp(next->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) != 0)
        return false;
    cl_mem mem = s->mem;
    s->mem = n->mem;
    n->mem = mem;
    clt__version_bump(t);
    return true;
}

/* A contiguous copy of t on dev as dtype, for t's handle to take. */
static clt_status converted(const clt_tensor *t, clt_device *dev, clt_dtype dtype,
                            clt_tensor **out, const void *caller, const char *fn)
{
    if (dtype == t->dtype)
        return clt__to_at(t, dev, out, caller, fn);
    if (dev == t->dev)
        return clt__to_dtype(t, dtype, out, fn);
    clt_tensor *there = NULL;
    clt_status st = clt__to_at(t, dev, &there, caller, fn);
    if (st == CLT_OK)
        st = clt__to_dtype(there, dtype, out, fn);
    clt_tensor_free(there);
    return st;
}

clt_status clt__tensor_rehome(clt_tensor *t, clt_device *dev, clt_dtype dtype, const char *fn)
{
    if (t->dev == dev && t->dtype == dtype)
        return CLT_OK;
    clt_tensor *moved = NULL;
    clt_status st = converted(t, dev, dtype, &moved, __builtin_return_address(0), fn);
    if (st != CLT_OK)
        return st;
    take_storage(t, moved);
    clt_tensor_free(moved);
    return CLT_OK;
}

/* Where t goes for clt__tensor_rehome_all: *dev and *dtype, and whether
 * that is a change. */
static bool destination(const clt_tensor *t, clt_device *to_dev, clt_dtype floats,
                        clt_device **dev, clt_dtype *dtype)
{
    *dev = to_dev ? to_dev : t->dev;
    *dtype = floats != CLT_DTYPE_COUNT && clt__dtype_is_float(t->dtype) ? floats : t->dtype;
    return *dev != t->dev || *dtype != t->dtype;
}

clt_status clt__tensor_rehome_all(clt_tensor *const *ts, size_t n, clt_device *dev,
                                  clt_dtype floats, const char *fn)
{
    clt_tensor **moved = clt__calloc(n ? n : 1, sizeof *moved);
    if (moved == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: converting %zu tensors: out of "
                          "host memory", fn, n);
    clt_status st = CLT_OK;
    clt_device *to;
    clt_dtype dt;
    for (size_t i = 0; i < n && st == CLT_OK; i++)
        if (ts[i] && destination(ts[i], dev, floats, &to, &dt))
            st = converted(ts[i], to, dt, &moved[i], __builtin_return_address(0), fn);
    for (size_t i = 0; i < n; i++) {
        /* a tensor listed twice changes once */
        if (st == CLT_OK && moved[i] && destination(ts[i], dev, floats, &to, &dt))
            take_storage(ts[i], moved[i]);
        clt_tensor_free(moved[i]);
    }
    free(moved);
    return st;
}

clt_status clt__check_host_size(const clt_tensor *t, const char *fn)
{
    if ((uint64_t)t->numel <= SIZE_MAX / clt_dtype_size(t->dtype))
        return CLT_OK;
    char s[160];
    return clt__error(CLT_ERR_BUFFER_TOO_SMALL,
                      "%s: the %s tensor of shape %s has %lld elements: its size in bytes does "
                      "not fit in size_t, no buffer holds it",
                      fn, clt_dtype_name(t->dtype), clt__shape_str(s, sizeof s, t->ndim, t->shape),
                      (long long)t->numel);
}

static clt_status check_read(const clt_tensor *t, const void *dst, size_t dst_bytes,
                             const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    size_t need = clt_tensor_nbytes(t);
    char s[160];
    clt_status st = clt__check_host_size(t, fn);
    if (st != CLT_OK)
        return st;
    if (need > 0 && dst == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: dst is NULL", fn);
    if (dst_bytes < need) {
        return clt__error(CLT_ERR_BUFFER_TOO_SMALL,
                          "%s: destination holds %zu bytes, the %s tensor of shape %s needs %zu",
                          fn, dst_bytes, clt_dtype_name(t->dtype),
                          clt__shape_str(s, sizeof s, t->ndim, t->shape), need);
    }
    return CLT_OK;
}

/* The blocking read-back behind clt_tensor_read, clt_tensor_item,
 * clt_tensor_format and clt_to; `caller` is the user's call site for
 * CLTENSOR_SYNC_DEBUG.  The thread's index error record is read on the same
 * in-order queue, enqueued before the data and complete when the blocking
 * read returns, so the check adds no wait of its own. */
clt_status clt__tensor_read_at(const clt_tensor *t, void *dst, size_t dst_bytes, const char *fn,
                               const void *caller)
{
    clt_status st = check_read(t, dst, dst_bytes, fn);
    if (st != CLT_OK)
        return st;
    size_t bytes = clt_tensor_nbytes(t);
    if (bytes == 0)
        return clt__ok();
    st = clt__sync_point_at(fn, caller);
    if (st != CLT_OK)
        return st;
    clt_tensor *src = NULL;
    clt__index_check chk = {0};
    CLT__TRY(contiguous(t, &src, fn));
    CLT__TRY(clt__index_check_begin(src->dev, &chk, fn));
    CLT__CL_CHECK(host_copy(src->dev, clt__mem(src),
                            (size_t)src->offset * clt_dtype_size(src->dtype), bytes, dst, false),
                  "%s: reading %zu bytes from %s (%s)", fn, bytes, src->dev->label,
                  src->dev->info.name);
    clt__count_d2h(bytes);
    CLT__TRY(clt__index_check_end(&chk, true, fn));
done:
    clt__index_check_end(&chk, false, NULL);
    clt_tensor_free(src);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_tensor_read(const clt_tensor *t, void *dst, size_t dst_bytes)
{
    return clt__tensor_read_at(t, dst, dst_bytes, "clt_tensor_read",
                               __builtin_return_address(0));
}

clt_status clt_tensor_read_async(const clt_tensor *t, void *dst, size_t dst_bytes,
                                 clt_event **out)
{
    CLT__REQUIRE_ARG(out, "clt_tensor_read_async");
    *out = NULL;
    clt_status st = check_read(t, dst, dst_bytes, "clt_tensor_read_async");
    if (st != CLT_OK)
        return st;
    clt_event *e = clt__calloc(1, sizeof *e);
    if (e == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_tensor_read_async: out of host memory");
    size_t bytes = clt_tensor_nbytes(t);
    if (bytes > 0) {
        CLT__TRY(contiguous(t, &e->keep, "clt_tensor_read_async"));
        /* The record's read goes first on the in-order queue, so that it has
         * completed whenever the copy has (clt_event_query never waits). */
        CLT__TRY(clt__index_check_begin(e->keep->dev, &e->chk, "clt_tensor_read_async"));
        clt_device *kd = e->keep->dev;
        pthread_mutex_lock(&kd->lock);
        cl_int err = CLT__DRIVER(clEnqueueReadBuffer(
            kd->queue, clt__mem(e->keep), CL_FALSE,
            (size_t)e->keep->offset * clt_dtype_size(t->dtype), bytes, dst, 0, NULL, &e->ev));
        if (err == CL_SUCCESS)
            clFlush(kd->queue);
        pthread_mutex_unlock(&kd->lock);
        CLT__CL_CHECK(err, "clt_tensor_read_async: reading %zu bytes from %s (%s)", bytes,
                      t->dev->label, t->dev->info.name);
        clt__count_d2h(bytes);
    }
    *out = e;
    e = NULL;
done:
    if (e) {
        clt__index_check_end(&e->chk, false, NULL);
        clt_tensor_free(e->keep);
        free(e);
    }
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_event_wait(clt_event *e)
{
    return clt__event_wait_in("clt_event_wait", e, __builtin_return_address(0));
}

clt_status clt__event_wait_in(const char *fn, clt_event *e, const void *caller)
{
    CLT__REQUIRE_ARG(e, fn);
    if (e->ev && !e->waited) {
        clt_status st = clt__sync_point_at(fn, caller);
        if (st != CLT_OK)
            return st;
        cl_int err = clt__driver_waited(clWaitForEvents(1, &e->ev));
        if (err != CL_SUCCESS)
            return clt__cl_error(err, "%s: the transfer failed", fn);
        e->waited = true;
        st = clt__index_check_end(&e->chk, true, fn);
        if (st != CLT_OK)
            return st;
    }
    return clt__ok();
}

clt_status clt_event_query(clt_event *e, int *done)
{
    CLT__REQUIRE_ARG(e, "clt_event_query");
    CLT__REQUIRE_ARG(done, "clt_event_query");
    *done = 1;
    if (e->ev == NULL || e->waited)
        return clt__ok();
    cl_int status = CL_QUEUED;
    cl_int err = clGetEventInfo(e->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                NULL);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "clt_event_query");
    if (status < 0)
        return clt__cl_error(status, "clt_event_query: the transfer failed");
    *done = status == CL_COMPLETE;
    if (*done) {
        /* The record's read preceded the copy on the in-order queue. */
        e->waited = true;
        clt_status st = clt__index_check_end(&e->chk, true, "clt_event_query");
        if (st != CLT_OK)
            return st;
    }
    return clt__ok();
}

void clt_event_free(clt_event *e)
{
    if (e == NULL)
        return;
    if (e->ev) {
        if (!e->waited)
            clWaitForEvents(1, &e->ev);
        clReleaseEvent(e->ev);
    }
    clt__index_check_end(&e->chk, false, NULL);
    clt_tensor_free(e->keep);
    free(e);
}

clt_status clt_tensor_item(const clt_tensor *t, double *value)
{
    CLT__REQUIRE_ARG(t, "clt_tensor_item");
    CLT__REQUIRE_ARG(value, "clt_tensor_item");
    if (t->numel != 1) {
        char s[160];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_tensor_item: a tensor with %lld elements (shape %s) cannot be "
                          "converted to a scalar",
                          (long long)t->numel, clt__shape_str(s, sizeof s, t->ndim, t->shape));
    }
    if (clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "clt_tensor_item: a %s value is not a double (read it with "
                          "clt_tensor_read, or take clt_real or clt_imag first)",
                          clt_dtype_name(t->dtype));
    unsigned char buf[8];
    clt_status st =
        clt__tensor_read_at(t, buf, sizeof buf, "clt_tensor_item", __builtin_return_address(0));
    if (st != CLT_OK)
        return st;
    *value = clt__element_to_double(t->dtype, buf);
    return clt__ok();
}

clt_status clt__tensor_write(clt_tensor *t, const void *src, size_t bytes, clt_event **out,
                             const char *fn)
{
    *out = NULL;
    size_t need = clt_tensor_nbytes(t);
    if (need > 0 && src == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: src is NULL", fn);
    if (bytes < need) {
        char s[160];
        return clt__error(CLT_ERR_BUFFER_TOO_SMALL,
                          "%s: source holds %zu bytes, the %s tensor of shape %s needs %zu", fn,
                          bytes, clt_dtype_name(t->dtype),
                          clt__shape_str(s, sizeof s, t->ndim, t->shape), need);
    }
    clt_status st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    clt_event *e = clt__calloc(1, sizeof *e);
    if (e == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_tensor *stage = NULL;
    if (need > 0) {
        if (clt__is_contiguous(t)) {
            CLT__TRY(clt__write_async(t, src, need, &e->ev, fn));
        } else {
            /* A staging buffer on the device, then the strided copy; the
             * in-order queue runs the copy after the write. */
            CLT__TRY(clt__tensor_new(t->dev, t->dtype, t->ndim, t->shape, &stage));
            CLT__TRY(clt__write_async(stage, src, need, &e->ev, fn));
            CLT__TRY(clt__copy_strided(t, stage, fn));
            clt__version_bump(t);
        }
    }
    *out = e;
    e = NULL;
done:
    clt_tensor_free(stage);
    if (e) {
        if (e->ev) {
            clWaitForEvents(1, &e->ev);
            clReleaseEvent(e->ev);
        }
        free(e);
    }
    return st;
}

clt_status clt__read_doubles(const char *fn, const clt_tensor *t, double **out)
{
    *out = NULL;
    if (clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s is not implemented for complex dtypes",
                          fn);
    size_t n = (size_t)t->numel, es = clt_dtype_size(t->dtype);
    unsigned char *raw = clt__calloc(n ? n : 1, es);
    double *v = clt__calloc(n ? n : 1, sizeof *v);
    clt_status st = CLT_OK;
    if (raw == NULL || v == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    CLT__TRY(clt__tensor_read_at(t, raw, n * es, fn, __builtin_return_address(0)));
    for (size_t i = 0; i < n; i++)
        v[i] = clt__element_to_double(t->dtype, raw + i * es);
    *out = v;
    v = NULL;
done:
    free(raw);
    free(v);
    return st;
}

clt_status clt__write_doubles(const char *fn, clt_tensor *t, const double *v)
{
    if (clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s is not implemented for complex dtypes",
                          fn);
    size_t n = (size_t)t->numel, es = clt_dtype_size(t->dtype);
    unsigned char *raw = clt__calloc(n ? n : 1, es);
    if (raw == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; i < n; i++)
        clt__element_from_double(t->dtype, v[i], raw + i * es);
    clt_event *ev = NULL;
    clt_status st = clt__tensor_write(t, raw, n * es, &ev, fn);
    if (st == CLT_OK)
        st = clt__event_wait_in(fn, ev, __builtin_return_address(0));
    clt_event_free(ev);
    free(raw);
    return st;
}
