/* error_flag.c: the records of the first out-of-range index that an index
 * kernel met (or integer division by zero), one for each thread and device,
 * and their check behind the blocking waits, which turns the calling
 * thread's record into CLT_ERR_INDEX_OUT_OF_RANGE (CLT_ERR_ZERO_DIVISION,
 * or CLT_ERR_INVALID_ARGUMENT for a value outside an op's domain) at its
 * next synchronisation on the device. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const clt__index_error zero_record;

static const char *const op_names[CLT__IDX_COUNT] = {
#define CLT__INDEX_OP_NAME_(name, text) [CLT__IDX_##name] = text,
    CLT__INDEX_OPS(CLT__INDEX_OP_NAME_)
#undef CLT__INDEX_OP_NAME_
};

/* A thread's record buffer on one device.  Index kernels write the record
 * of the thread that launched them, and a thread's waits read only its own
 * records: the queue is in order, so a read enqueued by a wait comes after
 * every kernel its thread launched before it, and other threads' kernels
 * write other buffers.
 *
 * The thread's list (`next`) is walked and changed by that thread alone,
 * without a lock.  `live_next` links every record still holding its buffer,
 * under records_lock, so that clt_shutdown can release the buffers of
 * threads that still run; it marks such a record dead (dev NULL) and leaves
 * the struct to its thread, which frees it at its next new record or at its
 * exit. */
typedef struct record {
    struct record *next;
    struct record *live_next; /* records_lock */
    clt_device *dev;          /* atomic; NULL once the buffer is released */
    cl_mem mem;               /* set before the record is listed, then fixed */
} record;

static _Thread_local record *mine;
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;
static record *live;
static long records_live; /* records_lock */

/* Releases r's buffer and unlists it; r stays on its thread's list, dead.
 * Called with records_lock held: clReleaseMemObject neither waits nor
 * calls back (buffers under enqueued commands are kept by the driver until
 * those complete). */
static void release_locked(record *r)
{
    for (record **p = &live; *p; p = &(*p)->live_next)
        if (*p == r) {
            *p = r->live_next;
            break;
        }
    clReleaseMemObject(r->mem);
    clt__mem_released();
    records_live--;
    __atomic_store_n(&r->dev, NULL, __ATOMIC_RELEASE);
}

/* Frees the calling thread's records: all of them (at its exit), or the
 * dead ones. */
static void free_mine_locked(bool all)
{
    for (record **p = &mine; *p;) {
        record *r = *p;
        bool alive = __atomic_load_n(&r->dev, __ATOMIC_RELAXED) != NULL;
        if (!all && alive) {
            p = &r->next;
            continue;
        }
        if (alive)
            release_locked(r);
        *p = r->next;
        free(r);
    }
}

/* At thread exit: the thread's records go with it, with any error still
 * unreported in them (as its last-error message goes). */
static void thread_exit(void)
{
    pthread_mutex_lock(&records_lock);
    free_mine_locked(true);
    pthread_mutex_unlock(&records_lock);
}

/* The calling thread's record on dev, or NULL. */
static record *find(const clt_device *dev)
{
    for (record *r = mine; r; r = r->next)
        if (__atomic_load_n(&r->dev, __ATOMIC_ACQUIRE) == dev)
            return r;
    return NULL;
}

/* Created the first time the thread runs an op that records on dev, so
 * that the waits of threads and devices which never do pay nothing. */
clt_status clt__index_errors(clt_device *dev, cl_mem *out)
{
    *out = NULL;
    record *r = find(dev);
    if (r) {
        *out = r->mem;
        return CLT_OK;
    }
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    if (!clt__at_thread_exit(thread_exit))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "index error record on %s (%s): cannot arrange the release of this "
                          "thread's records at its exit",
                          dev->label, dev->info.name);
    r = clt__calloc(1, sizeof *r);
    if (r == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "index error record on %s (%s): out of host memory", dev->label,
                          dev->info.name);
    cl_int err = CL_SUCCESS;
    r->mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            sizeof zero_record, (void *)&zero_record, &err);
    if (err != CL_SUCCESS) {
        free(r);
        return clt__cl_error(err, "index error record: clCreateBuffer of %zu bytes on %s (%s)",
                             sizeof zero_record, dev->label, dev->info.name);
    }
    __atomic_store_n(&r->dev, dev, __ATOMIC_RELAXED);
    pthread_mutex_lock(&records_lock);
    free_mine_locked(false); /* those clt_shutdown released */
    r->live_next = live;
    live = r;
    records_live++;
    r->next = mine;
    mine = r;
    pthread_mutex_unlock(&records_lock);
    *out = r->mem;
    return CLT_OK;
}

clt_status clt__index_check_begin(clt_device *dev, clt__index_check *c, const char *fn)
{
    memset(c, 0, sizeof *c);
    record *r = dev ? find(dev) : NULL;
    if (r == NULL)
        return CLT_OK;
    clt_status st = CLT_OK;
    /* Only this thread's kernels write the record, and it enqueues none
     * between the read and the reset; the lock is the one every enqueue
     * takes.  The reset writes from static storage, so it needs no wait. */
    pthread_mutex_lock(&dev->lock);
    CLT__CL_CHECK(CLT__DRIVER(clEnqueueReadBuffer(dev->queue, r->mem, CL_FALSE, 0,
                                                  sizeof c->rec, &c->rec, 0, NULL, &c->ev)),
                  "%s: reading the index error record of %s (%s)", fn, dev->label,
                  dev->info.name);
    c->dev = dev;
    CLT__CL_CHECK(CLT__DRIVER(clEnqueueWriteBuffer(dev->queue, r->mem, CL_FALSE, 0,
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
    if (r->dim == -3)
        return clt__error(CLT_ERR_ZERO_DIVISION,
                          "%s: ZeroDivisionError: integer division by zero (%s)", op, where);
    if (r->dim == -4)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: all elements of input should be between 0 and 1 (element %lld "
                          "of %lld is not) (%s)",
                          op, (long long)r->value, (long long)r->size, where);
    if (r->dim == -5)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: offsets must start at 0, never decrease and not pass the input's "
                          "%lld entries, but found offset %lld (%s)",
                          op, (long long)r->size, (long long)r->value, where);
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
    pthread_mutex_lock(&records_lock);
    for (record *r = live, *next; r; r = next) {
        next = r->live_next;
        if (__atomic_load_n(&r->dev, __ATOMIC_RELAXED) == dev)
            release_locked(r);
    }
    free_mine_locked(false);
    pthread_mutex_unlock(&records_lock);
}

long clt__index_records(void)
{
    pthread_mutex_lock(&records_lock);
    long n = records_live;
    pthread_mutex_unlock(&records_lock);
    return n;
}
