/* error.c: statuses, the thread-local last-error message, OpenCL error names
 * and the small global facts (version, dtypes) every module uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The message lives in a heap buffer owned by the thread, or, while that
 * cannot be grown (the host is out of memory), truncated in a small fixed
 * one, so that a failure always comes back with a message.  msg points to
 * whichever holds it, msg_cap is that one's size.  The heap buffer is freed
 * when its thread exits (heap_release); a thread that cannot arrange that
 * keeps to the fixed buffer rather than leak. */
static _Thread_local char *heap;
static _Thread_local size_t heap_cap;
static _Thread_local char spare[192];
static _Thread_local char *msg;
static _Thread_local size_t msg_cap;
static _Thread_local clt_status last_status;
static _Thread_local int last_cl;
static char empty_msg[1] = "";

static long heaps_live;

/* At thread exit: the thread's message goes with it.  Should a later
 * destructor of that thread set a message again, the buffer's release is
 * arranged anew. */
static void heap_release(void)
{
    if (msg == heap)
        msg = NULL;
    if (heap) {
        free(heap);
        __atomic_sub_fetch(&heaps_live, 1, __ATOMIC_RELAXED);
    }
    heap = NULL;
    heap_cap = 0;
}

/* Whether this thread's heap buffer will be freed at its exit (and so may
 * be allocated). */
static bool heap_register(void)
{
    return clt__at_thread_exit(heap_release);
}

long clt__error_heaps(void)
{
    return __atomic_load_n(&heaps_live, __ATOMIC_RELAXED);
}

const char *clt_status_string(clt_status status)
{
    switch (status) {
#define CLT_STATUS_TEXT_(name, value, text) case CLT_##name: return text;
        CLT_STATUS_MAP(CLT_STATUS_TEXT_)
#undef CLT_STATUS_TEXT_
    }
    return "unknown status";
}

const char *clt_status_name(clt_status status)
{
    switch (status) {
#define CLT_STATUS_NAME_(name, value, text) case CLT_##name: return "CLT_" #name;
        CLT_STATUS_MAP(CLT_STATUS_NAME_)
#undef CLT_STATUS_NAME_
    }
    return "CLT_UNKNOWN_STATUS";
}

const char *clt_last_error(void)
{
    return msg ? msg : empty_msg;
}

clt_status clt_last_status(void)
{
    return last_status;
}

int clt_last_cl_error(void)
{
    return last_cl;
}

void clt_free(void *ptr)
{
    free(ptr);
}

/* Makes heap hold at least `need` bytes when it can, keeping the message,
 * and points msg at it; while there is no heap buffer, at spare.  The heap
 * buffer is never smaller than spare. */
static void reserve(size_t need)
{
    if (need < sizeof spare)
        need = sizeof spare;
    if (need > heap_cap && heap_register()) {
        char *grown = clt__realloc(heap, need, 1);
        if (grown) {
            if (msg == spare)
                memcpy(grown, spare, sizeof spare);
            if (heap == NULL)
                __atomic_add_fetch(&heaps_live, 1, __ATOMIC_RELAXED);
            heap = grown;
            heap_cap = need;
        }
    }
    msg = heap ? heap : spare;
    msg_cap = heap ? heap_cap : sizeof spare;
}

static void set_msg(const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int need = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    reserve(need < 0 ? 1 : (size_t)need + 1);
    vsnprintf(msg, msg_cap, fmt, ap);
}

clt_status clt__error(clt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
    last_status = status;
    last_cl = 0;
    return status;
}

void clt__error_append(const char *text)
{
    size_t have = msg ? strlen(msg) : 0;
    reserve(have + strlen(text) + 1);
    if (have == 0)
        msg[0] = '\0';
    snprintf(msg + have, msg_cap - have, "%s", text); /* truncated when it did not fit */
}

clt_status clt__error_prefix(clt_status status, const char *fmt, ...)
{
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t pl = n < 0 ? 0 : (size_t)n < sizeof prefix ? (size_t)n : sizeof prefix - 1;
    size_t have = msg ? strlen(msg) : 0, need = pl + 2 + have + 1;
    reserve(need);
    if (have == 0)
        msg[0] = '\0';
    if (need > msg_cap) { /* the message stays as it was, unprefixed */
        if (have == 0)
            snprintf(msg, msg_cap, "%s", prefix);
        goto done;
    }
    memmove(msg + pl + 2, msg, have + 1);
    memcpy(msg, prefix, pl);
    msg[pl] = ':';
    msg[pl + 1] = ' ';
done:
    last_status = status;
    return status;
}

clt_status clt__error_in(clt_status status, const char *fn)
{
    if (status == CLT_OK || fn == NULL)
        return status;
    size_t n = strlen(fn);
    if (!(msg && strncmp(msg, fn, n) == 0 && msg[n] == ':'))
        clt__error_prefix(status, "%s", fn);
    return status;
}

clt_status clt__error_in_step(clt_status status, const char *fn, const char *step)
{
    if (status == CLT_OK)
        return status;
    size_t n = strlen(fn);
    if (msg && strncmp(msg, fn, n) == 0 && msg[n] == ':') {
        size_t skip = n + 1 + (msg[n + 1] == ' ');
        memmove(msg, msg + skip, strlen(msg + skip) + 1);
    }
    return clt__error_prefix(status, "%s: %s", fn, step);
}

clt_status clt__error_as(clt_status status, const char *fn)
{
    if (status == CLT_OK || fn == NULL)
        return status;
    size_t n = msg && strncmp(msg, "clt_", 4) == 0
                   ? strspn(msg, "abcdefghijklmnopqrstuvwxyz0123456789_")
                   : 0;
    if (n > 0 && msg[n] == ':' && !(strlen(fn) == n && strncmp(msg, fn, n) == 0)) {
        size_t skip = n + 1 + (msg[n + 1] == ' ');
        memmove(msg, msg + skip, strlen(msg + skip) + 1);
    }
    return clt__error_in(status, fn);
}

clt_status clt__ok(void)
{
    if (msg)
        msg[0] = '\0';
    last_status = CLT_OK;
    last_cl = 0;
    return CLT_OK;
}

const char *clt_cl_error_name(int err)
{
    switch (err) {
#define N_(x) case x: return #x;
        N_(CL_SUCCESS) N_(CL_DEVICE_NOT_FOUND) N_(CL_DEVICE_NOT_AVAILABLE)
        N_(CL_COMPILER_NOT_AVAILABLE) N_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        N_(CL_OUT_OF_RESOURCES) N_(CL_OUT_OF_HOST_MEMORY)
        N_(CL_PROFILING_INFO_NOT_AVAILABLE) N_(CL_MEM_COPY_OVERLAP)
        N_(CL_IMAGE_FORMAT_MISMATCH) N_(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        N_(CL_BUILD_PROGRAM_FAILURE) N_(CL_MAP_FAILURE)
        N_(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        N_(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        N_(CL_COMPILE_PROGRAM_FAILURE) N_(CL_LINKER_NOT_AVAILABLE)
        N_(CL_LINK_PROGRAM_FAILURE) N_(CL_DEVICE_PARTITION_FAILED)
        N_(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) N_(CL_INVALID_VALUE)
        N_(CL_INVALID_DEVICE_TYPE) N_(CL_INVALID_PLATFORM) N_(CL_INVALID_DEVICE)
        N_(CL_INVALID_CONTEXT) N_(CL_INVALID_QUEUE_PROPERTIES)
        N_(CL_INVALID_COMMAND_QUEUE) N_(CL_INVALID_HOST_PTR)
        N_(CL_INVALID_MEM_OBJECT) N_(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        N_(CL_INVALID_IMAGE_SIZE) N_(CL_INVALID_SAMPLER) N_(CL_INVALID_BINARY)
        N_(CL_INVALID_BUILD_OPTIONS) N_(CL_INVALID_PROGRAM)
        N_(CL_INVALID_PROGRAM_EXECUTABLE) N_(CL_INVALID_KERNEL_NAME)
        N_(CL_INVALID_KERNEL_DEFINITION) N_(CL_INVALID_KERNEL)
        N_(CL_INVALID_ARG_INDEX) N_(CL_INVALID_ARG_VALUE) N_(CL_INVALID_ARG_SIZE)
        N_(CL_INVALID_KERNEL_ARGS) N_(CL_INVALID_WORK_DIMENSION)
        N_(CL_INVALID_WORK_GROUP_SIZE) N_(CL_INVALID_WORK_ITEM_SIZE)
        N_(CL_INVALID_GLOBAL_OFFSET) N_(CL_INVALID_EVENT_WAIT_LIST)
        N_(CL_INVALID_EVENT) N_(CL_INVALID_OPERATION) N_(CL_INVALID_GL_OBJECT)
        N_(CL_INVALID_BUFFER_SIZE) N_(CL_INVALID_MIP_LEVEL)
        N_(CL_INVALID_GLOBAL_WORK_SIZE) N_(CL_INVALID_PROPERTY)
        N_(CL_INVALID_IMAGE_DESCRIPTOR) N_(CL_INVALID_COMPILER_OPTIONS)
        N_(CL_INVALID_LINKER_OPTIONS) N_(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N_
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    return "CL_UNKNOWN_ERROR";
}

static clt_status cl_error_v(cl_int err, const char *fmt, va_list ap)
{
    clt__strbuf sb = {0};
    clt__sb_vprintf(&sb, fmt, ap);
    clt__sb_printf(&sb, ": %s (%d)", clt_cl_error_name(err), err);
    char *text = clt__sb_take(&sb);
    clt_status st = (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES) &&
                            text && strstr(text, "alloc")
                        ? CLT_ERR_OUT_OF_DEVICE_MEMORY
                        : CLT_ERR_OPENCL;
    if (err == CL_OUT_OF_HOST_MEMORY)
        st = CLT_ERR_OUT_OF_HOST_MEMORY;
    if (text)
        clt__error(st, "%s", text);
    else
        clt__error(st, "OpenCL call failed: %s (%d)", clt_cl_error_name(err), err);
    free(text);
    last_cl = err;
    return st;
}

clt_status clt__cl_error(cl_int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    clt_status st = cl_error_v(err, fmt, ap);
    va_end(ap);
    return st;
}

static const char *clblast_name(int err)
{
    switch (err) {
    case -2048: return "CLBlastNotImplemented";
    case -1024: return "CLBlastInvalidMatrixA";
    case -1023: return "CLBlastInvalidMatrixB";
    case -1022: return "CLBlastInvalidMatrixC";
    case -1021: return "CLBlastInvalidVectorX";
    case -1020: return "CLBlastInvalidVectorY";
    case -1019: return "CLBlastInvalidDimension";
    case -1018: return "CLBlastInvalidLeadDimA";
    case -1017: return "CLBlastInvalidLeadDimB";
    case -1016: return "CLBlastInvalidLeadDimC";
    case -1015: return "CLBlastInvalidIncrementX";
    case -1014: return "CLBlastInvalidIncrementY";
    case -1013: return "CLBlastInsufficientMemoryA";
    case -1012: return "CLBlastInsufficientMemoryB";
    case -1011: return "CLBlastInsufficientMemoryC";
    case -1010: return "CLBlastInsufficientMemoryX";
    case -1009: return "CLBlastInsufficientMemoryY";
    case -2049: return "CLBlastInvalidBatchCount";
    case -2050: return "CLBlastInvalidOverrideKernel";
    case -2051: return "CLBlastMissingOverrideParameter";
    case -2052: return "CLBlastInvalidLocalMemUsage";
    case -2053: return "CLBlastNoHalfPrecision";
    case -2054: return "CLBlastNoDoublePrecision";
    case -2055: return "CLBlastInvalidVectorScalar";
    case -2056: return "CLBlastInsufficientMemoryScalar";
    case -2057: return "CLBlastDatabaseError";
    case -2058: return "CLBlastUnknownError";
    case -2059: return "CLBlastUnexpectedError";
    }
    return clt_cl_error_name(err);
}

clt_status clt__clblast_error(int err, const char *fmt, ...)
{
    clt__strbuf sb = {0};
    va_list ap;
    va_start(ap, fmt);
    clt__sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    clt__sb_printf(&sb, ": %s (%d)", clblast_name(err), err);
    char *text = clt__sb_take(&sb);
    if (text)
        clt__error(CLT_ERR_CLBLAST, "%s", text);
    else
        clt__error(CLT_ERR_CLBLAST, "CLBlast call failed: %s (%d)", clblast_name(err), err);
    free(text);
    last_cl = err;
    return CLT_ERR_CLBLAST;
}

const char *clt_version(void)
{
    return CLTENSOR_VERSION_STRING;
}

