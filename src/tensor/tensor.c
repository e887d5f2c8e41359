/* tensor.c: tensor handles and their storage: creation, fills, views,
 * contiguous copies and dtype conversion. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *clt__shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t len = 0;
    len += (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (len < n)
        snprintf(buf + len, n - len, "]");
    return buf;
}

int64_t clt__shape_most(int ndim, const int64_t *shape)
{
    /* The sizes multiply with zeros counted as 1: an empty tensor's strides
     * are products of its other sizes, which must fit int64 too. */
    int64_t most = 1;
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0 || (shape[d] > 0 && __builtin_mul_overflow(most, shape[d], &most)))
            return -1;
    return most;
}

/* clt__check_shape; `what` names the shape in the message ("shape", or
 * "result shape" for an op's result). */
static clt_status check_shape(int ndim, const int64_t *shape, const char *fn, const char *what)
{
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d dimensions asked; at most %d supported",
                          fn, ndim, CLT_MAX_DIMS);
    if (ndim > 0 && shape == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: shape is NULL for %d dimensions", fn, ndim);
    if (clt__shape_most(ndim, shape) >= 0)
        return CLT_OK;
    char s[160];
    clt__shape_str(s, sizeof s, ndim, shape);
    bool empty = false;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: negative dimension %lld in shape %s",
                              fn, (long long)shape[d], s);
        empty |= shape[d] == 0;
    }
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s %s has too many elements%s", fn, what, s,
                      empty ? " (its sizes other than 0 multiply past the int64 range)" : "");
}

clt_status clt__check_shape(int ndim, const int64_t *shape, const char *fn)
{
    return check_shape(ndim, shape, fn, "shape");
}

clt_status clt__wrap_dim(int dim, int n, int *out, const char *fn)
{
    if (dim < -n || dim >= n)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: Dimension out of range (expected to be in range of [%d, %d], "
                          "but got %d)",
                          fn, -n, n - 1, dim);
    *out = dim < 0 ? dim + n : dim;
    return CLT_OK;
}

/* Strides of t seen through the broadcast shape (0 on broadcast dims). */
void clt__broadcast_strides(const clt_tensor *t, int n, const int64_t *shape, int64_t *strides)
{
    for (int i = 0; i < n; i++) {
        int it = t->ndim - n + i;
        strides[i] = (it >= 0 && t->shape[it] == shape[i] && shape[i] != 1) ? t->strides[it] : 0;
    }
}

clt_status clt__check_dest(const clt_tensor *t, const char *fn)
{
    for (int d = 0; d < t->ndim && t->numel > 0; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: unsupported operation: more than one element of the "
                              "written-to tensor refers to a single memory location (dimension "
                              "%d has stride 0); clone the tensor before performing the "
                              "operation",
                              fn, d);
    return CLT_OK;
}

bool clt__is_contiguous(const clt_tensor *t)
{
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != expect)
            return false;
        expect *= t->shape[d];
    }
    return true;
}

static void storage_release(clt__storage *s)
{
    if (s == NULL)
        return;
    if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        if (s->foreign) {
            clReleaseMemObject(s->mem); /* a caller's buffer never enters the pool */
            clt__mem_released();
        } else {
            clt__buffer_release(s->dev, s->mem, s->bytes);
        }
        free(s);
    }
}

clt_status clt__tensor_new(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                           clt_tensor **out)
{
    return clt__result_new(NULL, dev, dtype, ndim, shape, out);
}

clt_status clt__result_new(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                           const int64_t *shape, clt_tensor **out)
{
    clt_status st = fn ? check_shape(ndim, shape, fn, "result shape")
                       : check_shape(ndim, shape, "tensor", "shape");
    if (st != CLT_OK)
        return st;
    st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    clt_tensor *t = clt__calloc(1, sizeof *t);
    clt__storage *s = clt__calloc(1, sizeof *s);
    if (t == NULL || s == NULL) {
        free(t);
        free(s);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "tensor: out of host memory");
    }
    t->refs = 1;
    t->dev = dev;
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->shape[d] = shape[d];
        t->strides[d] = t->numel;
        t->numel *= shape[d];
    }
    s->refs = 1;
    s->dev = dev;
    if ((uint64_t)t->numel > SIZE_MAX / clt_dtype_size(dtype)) {
        char sh[160];
        long long numel = (long long)t->numel;
        free(t);
        free(s);
        return clt__error(CLT_ERR_OUT_OF_DEVICE_MEMORY,
                          "%s%stensor of shape %s (%s) has %lld elements: its size in bytes "
                          "does not fit in size_t",
                          fn ? fn : "", fn ? ": the result " : "",
                          clt__shape_str(sh, sizeof sh, ndim, shape), clt_dtype_name(dtype),
                          numel);
    }
    s->bytes = (size_t)t->numel * clt_dtype_size(dtype);
    if (s->bytes > 0) {
        if (dev->info.max_alloc_bytes && s->bytes > dev->info.max_alloc_bytes) {
            char sh[160];
            st = clt__error(CLT_ERR_OUT_OF_DEVICE_MEMORY,
                            "%s%stensor of shape %s (%s, %zu bytes) exceeds the largest buffer "
                            "%s (%s) allows: %llu bytes",
                            fn ? fn : "", fn ? ": the result " : "",
                            clt__shape_str(sh, sizeof sh, ndim, shape), clt_dtype_name(dtype),
                            s->bytes, dev->label, dev->info.name,
                            (unsigned long long)dev->info.max_alloc_bytes);
        } else {
            st = clt__buffer_alloc(dev, s->bytes, &s->mem);
            if (st != CLT_OK && fn)
                clt__error_prefix(st, "%s", fn);
        }
        if (st != CLT_OK) {
            free(t);
            free(s);
            return st;
        }
    }
    t->storage = s;
    st = clt__scope_adopt(t);
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    *out = t;
    return CLT_OK;
}

clt_status clt__tensor_view(const clt_tensor *t, int ndim, const int64_t *shape,
                            const int64_t *strides, int64_t offset, clt_tensor **out)
{
    clt_tensor *v = clt__calloc(1, sizeof *v);
    if (v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "view: out of host memory");
    v->refs = 1;
    v->storage = t->storage;
    __atomic_add_fetch(&v->storage->refs, 1, __ATOMIC_RELAXED);
    v->dev = t->dev;
    v->dtype = t->dtype;
    v->ndim = ndim;
    v->offset = offset;
    v->numel = 1;
    for (int d = 0; d < ndim; d++) {
        v->shape[d] = shape[d];
        v->strides[d] = strides[d];
        v->numel *= shape[d];
    }
    clt_status st = clt__scope_adopt(v);
    if (st != CLT_OK) {
        clt_tensor_free(v);
        return st;
    }
    *out = v;
    return CLT_OK;
}

void clt__tensor_unref(clt_tensor *t)
{
    if (t == NULL || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    clt__scope_disown(t);
    if (t->meta_free)
        t->meta_free(t);
    storage_release(t->storage);
    free(t);
}

void clt_tensor_free(clt_tensor *t)
{
    if (t == NULL)
        return;
    clt__scope_disown(t); /* the first release takes the scope's reference */
    clt__tensor_unref(t);
}

clt_tensor *clt_tensor_retain(clt_tensor *t)
{
    if (t)
        __atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
    return t;
}

/* ---- fills ------------------------------------------------------------------ */


/* Build options of the fill (prefix T) and copy (prefixes S and D) programs. */
const char *clt__fill_options(clt_dtype t)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[t], "T", t, NULL, t, "");
}

/* arange computes in double where the device has it (cl/fill.cl). */
const char *clt__arange_options(const clt_device *dev, clt_dtype t)
{
    static clt__opts_slot slots[2][CLT_DTYPE_COUNT];
    bool fp64 = dev->info.fp64 && t != CLT_FLOAT64; /* float64 defines it already */
    return clt__opts_cached(&slots[fp64][t], "T", t, NULL, t, fp64 ? " -DCLT_FP64" : "");
}

const char *clt__copy_options(clt_dtype src, clt_dtype dst)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT][CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[src][dst], "S", src, "D", dst, "");
}

clt_status clt__tensor_warmup(clt_device *dev, clt_dtype t, size_t *count)
{
    const char *opts[2 + CLT_DTYPE_COUNT];
    const char *family[2 + CLT_DTYPE_COUNT];
    size_t n = 0;
    family[n] = "fill", opts[n++] = clt__fill_options(t);
    family[n] = "fill", opts[n++] = clt__arange_options(dev, t);
    for (int b = 0; b < CLT_DTYPE_COUNT; b++)
        if (clt_device_supports_dtype(dev, (clt_dtype)b) && !clt__dtype_is_complex((clt_dtype)b))
            family[n] = "copy", opts[n++] = clt__copy_options(t, (clt_dtype)b);
    clt_status st = CLT_OK;
    for (size_t i = 0; i < n && st == CLT_OK; i++)
        st = opts[i] ? clt__program_warm(dev, family[i], opts[i], true, count)
                     : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_warmup: out of host memory");
    return st;
}

/* Fills up to this many bytes go to the driver's own fill command: no
 * kernel to build (a first ones() or zeros() of a small tensor compiles
 * nothing) and no launch.  PoCL runs that command on one host thread, so
 * larger fills launch fill.cl, which is 2-4x faster there past 16 KiB. */
#define FILL_DIRECT_MAX_BYTES 16384

/* The element's bytes as the kernel would store them: float16 from the
 * float32 argument, as PyTorch converts a Scalar to Half through float. */
static clt_status fill_direct(clt_tensor *t, double value)
{
    unsigned char pattern[16];
    clt__element_from_double(t->dtype, clt__dtype_is_half(t->dtype) ? (double)(float)value : value,
                             pattern);
    size_t es = clt_dtype_size(t->dtype), bytes = (size_t)t->numel * es;
    clt_device *dev = t->dev;
    clt_status st = clt__device_open(dev);
    if (st != CLT_OK)
        return st;
    pthread_mutex_lock(&dev->lock);
    cl_int err = CLT__DRIVER(clEnqueueFillBuffer(dev->queue, clt__mem(t), pattern, es, 0, bytes,
                                                 0, NULL, NULL));
    if (err == CL_SUCCESS)
        err = clFlush(dev->queue);
    pthread_mutex_unlock(&dev->lock);
    if (err != CL_SUCCESS)
        return clt__cl_error(err, "filling %zu bytes on %s (%s)", bytes, dev->label,
                             dev->info.name);
    return CLT_OK;
}

static clt_status fill(clt_tensor *t, double value)
{
    if (t->numel == 0)
        return CLT_OK;
    if ((size_t)t->numel * clt_dtype_size(t->dtype) <= FILL_DIRECT_MAX_BYTES ||
        clt__dtype_is_complex(t->dtype))
        return fill_direct(t, value);
    const char *opts = clt__fill_options(t->dtype);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    cl_mem mem = clt__mem(t);
    cl_ulong n = (cl_ulong)t->numel;
    unsigned char v[8];
    size_t vsize = clt__scalar_arg(t->dtype, value, v);
    cl_ulong chunk = clt__chunk_size(t->dev, t->numel);
    if (chunk) {
        size_t gws = (size_t)((n + chunk - 1) / chunk), lws = 1;
        clt__arg args[] = {CLT__ARG(mem), CLT__ARG(n), {vsize, v}, CLT__ARG(chunk)};
        return clt__launch(t->dev, "fill", opts, "fill_chunk", 1, &gws, &lws, 4, args);
    }
    clt__arg args[] = {CLT__ARG(mem), CLT__ARG(n), {vsize, v}};
    size_t gws = (size_t)n;
    return clt__launch(t->dev, "fill", opts, "fill", 1, &gws, NULL, 3, args);
}

clt_status clt__fill_value(clt_tensor *t, double value)
{
    if (t->offset != 0 || !clt__is_contiguous(t))
        return clt__error(CLT_ERR_INTERNAL, "fill: the tensor is a view");
    clt_status st = t->numel ? fill(t, value) : CLT_OK;
    if (st == CLT_OK)
        clt__version_bump(t);
    return st;
}

static clt_status check_create(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                               clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    clt_status st = clt__check_dtype(dev, dtype, fn);
    if (st == CLT_OK)
        st = clt__check_shape(ndim, shape, fn);
    return st;
}

/* clt_empty and clt_full under the name of the public call fn, which every
 * message starts with (clt_ones says clt_ones, clt_zeros_like
 * clt_zeros_like).  fn NULL: for the library's own use (clt__empty,
 * clt__full), whose failures the calling op names; only arguments that
 * no caller of the library passes are named as clt_empty's or clt_full's. */
static clt_status empty_in(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                           const int64_t *shape, clt_tensor **out)
{
    clt_status st = check_create(dev, dtype, ndim, shape, out, fn ? fn : "clt_empty");
    if (st == CLT_OK)
        st = clt__result_new(fn, dev, dtype, ndim, shape, out);
    return st == CLT_OK ? clt__ok() : st;
}

static clt_status full_in(const char *fn, clt_device *dev, clt_dtype dtype, int ndim,
                          const int64_t *shape, double value, clt_tensor **out)
{
    clt_tensor *t = NULL;
    const char *named = fn ? fn : "clt_full";
    clt_status st = check_create(dev, dtype, ndim, shape, out, named);
    if (st == CLT_OK)
        st = clt__scalar_check(dtype, value, CLT__SCALAR_EXACT, named);
    if (st == CLT_OK)
        st = clt__result_new(fn, dev, dtype, ndim, shape, &t);
    if (st == CLT_OK)
        st = fill(t, value);
    if (st != CLT_OK && fn)
        clt__error_in(st, fn);
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    *out = t;
    return clt__ok();
}

clt_status clt__empty(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                      clt_tensor **out)
{
    return empty_in(NULL, dev, dtype, ndim, shape, out);
}

clt_status clt__full(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                     double value, clt_tensor **out)
{
    return full_in(NULL, dev, dtype, ndim, shape, value, out);
}

clt_status clt_empty(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                     clt_tensor **out)
{
    return empty_in("clt_empty", dev, dtype, ndim, shape, out);
}

clt_status clt_full(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                    double value, clt_tensor **out)
{
    return full_in("clt_full", dev, dtype, ndim, shape, value, out);
}

clt_status clt_zeros(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                     clt_tensor **out)
{
    return full_in("clt_zeros", dev, dtype, ndim, shape, 0.0, out);
}

clt_status clt_ones(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                    clt_tensor **out)
{
    return full_in("clt_ones", dev, dtype, ndim, shape, 1.0, out);
}

/* clt_arange; fn NULL for the library's own use (clt__arange), whose
 * failure to allocate the op that asked names. */
static clt_status arange_in(const char *fn, clt_device *dev, clt_dtype dtype, double start,
                            double end, double step, clt_tensor **out)
{
    clt_status st = check_create(dev, dtype, 0, NULL, out, "clt_arange");
    if (st != CLT_OK)
        return st;
    if (isnan(step) || isnan(start) || isnan(end) || isinf(start) || isinf(end))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_arange: invalid range start=%g end=%g step=%g", start, end, step);
    if (dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "clt_arange: not implemented for bool");
    /* Integer dtypes work on start, end and step truncated to integers, as
     * PyTorch's kernel does (it casts them to its integer accumulator); only
     * int64 also counts the elements from the truncated values. */
    bool integral = !clt__dtype_is_float(dtype);
    double span = end - start, count_step = step;
    if (integral) {
        /* PyTorch's accumulator is int64: values beyond it are refused
         * (and never converted). */
        const double v[3] = {start, end, step};
        for (int i = 0; i < 3; i++) {
            st = clt__scalar_check(CLT_INT64, v[i], CLT__SCALAR_EXACT, "clt_arange");
            if (st != CLT_OK)
                return st;
        }
        double xs = trunc(start), xe = trunc(end);
        step = trunc(step);
        if (dtype == CLT_INT64) {
            span = xe - xs;
            count_step = step;
        }
        start = xs;
    }
    if (step == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_arange: step must be nonzero");
    if (span / count_step < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_arange: upper bound and larger bound inconsistent with step sign "
                          "(start=%g, end=%g, step=%g)",
                          start, end, step);
    double count = ceil(span / count_step);
    if (count > 9.2e18)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "clt_arange: %g elements is too many", count);
    int64_t n = (int64_t)count;
    clt_tensor *t = NULL;
    st = clt__result_new(fn, dev, dtype, 1, &n, &t);
    if (st != CLT_OK)
        return st;
    const char *opts = clt__arange_options(dev, dtype);
    if (opts == NULL) {
        clt_tensor_free(t);
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    }
    cl_mem mem = clt__mem(t);
    cl_ulong un = (cl_ulong)n;
    size_t gws = (size_t)n;
    if (integral) {
        cl_long s0 = (cl_long)start, s1 = (cl_long)step;
        clt__arg args[] = {CLT__ARG(mem), CLT__ARG(un), CLT__ARG(s0), CLT__ARG(s1)};
        st = clt__launch(dev, "fill", opts, "arange_int", 1, &gws, NULL, 4, args);
    } else if (dev->info.fp64) {
        cl_double s0 = start, s1 = step;
        clt__arg args[] = {CLT__ARG(mem), CLT__ARG(un), CLT__ARG(s0), CLT__ARG(s1)};
        st = clt__launch(dev, "fill", opts, "arange", 1, &gws, NULL, 4, args);
    } else {
        cl_float s0 = (cl_float)start, s1 = (cl_float)step;
        clt__arg args[] = {CLT__ARG(mem), CLT__ARG(un), CLT__ARG(s0), CLT__ARG(s1)};
        st = clt__launch(dev, "fill", opts, "arange", 1, &gws, NULL, 4, args);
    }
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    *out = t;
    return clt__ok();
}

clt_status clt_arange(clt_device *dev, clt_dtype dtype, double start, double end, double step,
                      clt_tensor **out)
{
    return arange_in("clt_arange", dev, dtype, start, end, step, out);
}

clt_status clt__arange(clt_device *dev, clt_dtype dtype, double start, double end, double step,
                       clt_tensor **out)
{
    return arange_in(NULL, dev, dtype, start, end, step, out);
}

/* ---- copies ----------------------------------------------------------------- */

/* The layout of a copy of shape[ndim] from strides src_st (offset src_off)
 * to strides dst_st (dst_off) into L (s0 the source's, s1 the
 * destination's), without the dimensions of size 1 and with neighbours that
 * step through both as one dimension merged (a row-sliced [n, m] view whose
 * rows are whole stays two dimensions; [n, m] of a [n, 2m] view with step 2
 * in the columns stays [n, m] of stride 2).  L.ndim is at least 1. */
static void copy_layout(int ndim, const int64_t *shape, const int64_t *src_st, int64_t src_off,
                        const int64_t *dst_st, int64_t dst_off, clt__layout *L)
{
    memset(L, 0, sizeof *L);
    int k = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        if (k > 0 && L->s0[k - 1] == src_st[d] * shape[d] &&
            L->s1[k - 1] == dst_st[d] * shape[d]) {
            L->shape[k - 1] *= shape[d];
            L->s0[k - 1] = src_st[d];
            L->s1[k - 1] = dst_st[d];
        } else {
            L->shape[k] = shape[d];
            L->s0[k] = src_st[d];
            L->s1[k++] = dst_st[d];
        }
    }
    if (k == 0) {
        L->shape[0] = 1;
        L->s0[0] = L->s1[0] = 1;
        k = 1;
    }
    L->ndim = k;
    L->off0 = src_off;
    L->off1 = dst_off;
}

/* Moves dimension d of L to position to, the ones between shifting over. */
static void layout_move(clt__layout *L, int d, int to)
{
    int64_t n = L->shape[d], a = L->s0[d], b = L->s1[d];
    for (; d < to; d++) {
        L->shape[d] = L->shape[d + 1];
        L->s0[d] = L->s0[d + 1];
        L->s1[d] = L->s1[d + 1];
    }
    for (; d > to; d--) {
        L->shape[d] = L->shape[d - 1];
        L->s0[d] = L->s0[d - 1];
        L->s1[d] = L->s1[d - 1];
    }
    L->shape[to] = n;
    L->s0[to] = a;
    L->s1[to] = b;
}

/* A copy of n elements in layout L (from copy_layout) on a CPU device
 * (cl/copy.cl).  A destination dimension of stride 1 goes innermost, so
 * that runs and tiles store along memory.  Then tiles when the innermost
 * dimension has destination stride 1 and a source stride other than 0 and
 * 1 while another has source stride 1 (a transpose or a permute on either
 * side), runs of the innermost dimension otherwise.  The order of the
 * elements does not matter: a destination never overlaps itself or the
 * source (clt__check_dest, and callers copy an aliased source first). */
static clt_status copy_cpu(clt_device *dev, cl_mem dmem, cl_mem smem, clt__layout *L,
                           cl_ulong n, const char *opts, cl_ulong chunk)
{
    int k = L->ndim;
    for (int d = k - 2; d >= 0 && L->s1[k - 1] != 1; d--)
        if (L->s1[d] == 1)
            layout_move(L, d, k - 1);
    int u = -1;
    if (L->s1[k - 1] == 1 && L->s0[k - 1] != 0 && L->s0[k - 1] != 1)
        for (int d = k - 2; d >= 0 && u < 0; d--)
            if (L->s0[d] == 1)
                u = d;
    if (u < 0) {
        size_t groups = (size_t)((n + chunk - 1) / chunk), lws = 1;
        clt__arg args[] = {CLT__ARG(dmem), CLT__ARG(smem), CLT__ARG(n), CLT__ARG(chunk),
                           CLT__ARG(*L)};
        return clt__launch(dev, "copy", opts, "copy_runs", 1, &groups, &lws, 5, args);
    }
    /* u next to the innermost dimension; the tiles are counted as
     * copy_tiles numbers them. */
    layout_move(L, u, k - 2);
    int64_t tile_u = 64, tile_b = 256; /* COPY_TILE_U and COPY_TILE_B */
    size_t tiles = (size_t)((L->shape[k - 2] + tile_u - 1) / tile_u) *
                   (size_t)((L->shape[k - 1] + tile_b - 1) / tile_b);
    for (int d = 0; d < k - 2; d++)
        tiles *= (size_t)L->shape[d];
    size_t lws = 1;
    clt__arg args[] = {CLT__ARG(dmem), CLT__ARG(smem), CLT__ARG(*L)};
    return clt__launch(dev, "copy", opts, "copy_tiles", 1, &tiles, &lws, 3, args);
}

clt_status clt__complex_part(const clt_tensor *t, int part, clt_tensor **out)
{
    int64_t st[CLT_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++)
        st[d] = t->strides[d] * 2;
    clt_status s = clt__tensor_view(t, t->ndim, t->shape, st, t->offset * 2 + part, out);
    if (s == CLT_OK)
        (*out)->dtype = clt__complex_part_dtype(t->dtype);
    return s;
}

static clt_status copy_strided(clt_tensor *dst, const clt_tensor *src);

/* Copies with a complex side go through the parts' real views: the real
 * kernels (cl/copy.cl) do the work, two launches per copy.  A real source
 * gives a zero imaginary part.  A complex source into a real destination is
 * refused here: an op that converts its operands would otherwise drop the
 * imaginary part silently; clt_to_dtype and clt_real take the real part
 * explicitly (clt__complex_to_real). */
static clt_status copy_complex(clt_tensor *dst, const clt_tensor *src)
{
    if (!clt__dtype_is_complex(dst->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "converting %s to %s is not implemented for complex dtypes here (take "
                          "clt_real or clt_to_dtype first)",
                          clt_dtype_name(src->dtype), clt_dtype_name(dst->dtype));
    if (dst->numel == 0)
        return CLT_OK;
    clt_tensor *dre = NULL, *dim = NULL, *sre = NULL, *sim = NULL;
    clt_status st;
    CLT__TRY(clt__complex_part(dst, 0, &dre));
    CLT__TRY(clt__complex_part(dst, 1, &dim));
    if (clt__dtype_is_complex(src->dtype)) {
        CLT__TRY(clt__complex_part(src, 0, &sre));
        CLT__TRY(clt__complex_part(src, 1, &sim));
    } else {
        sre = clt_tensor_retain((clt_tensor *)src);
        CLT__TRY(clt__full(dst->dev, dre->dtype, 0, NULL, 0.0, &sim));
    }
    CLT__TRY(copy_strided(dre, sre));
    CLT__TRY(copy_strided(dim, sim));
done:
    clt_tensor_free(dre);
    clt_tensor_free(dim);
    if (sre == src)
        clt__tensor_unref(sre);
    else
        clt_tensor_free(sre);
    clt_tensor_free(sim);
    return st;
}

static clt_status copy_into(clt_tensor *dst, const clt_tensor *src)
{
    if (clt__dtype_is_complex(src->dtype) || clt__dtype_is_complex(dst->dtype))
        return copy_complex(dst, src);
    if (src->numel == 0)
        return CLT_OK;
    const char *opts = clt__copy_options(src->dtype, dst->dtype);
    if (opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "copy: out of host memory");
    cl_mem dmem = clt__mem(dst), smem = clt__mem(src);
    cl_ulong doff = (cl_ulong)dst->offset, n = (cl_ulong)src->numel;
    size_t gws = (size_t)n;
    cl_ulong chunk = clt__chunk_size(dst->dev, src->numel);
    if (clt__is_contiguous(src)) {
        cl_ulong soff = (cl_ulong)src->offset;
        if (chunk) {
            size_t groups = (size_t)((n + chunk - 1) / chunk), lws = 1;
            clt__arg args[] = {CLT__ARG(dmem), CLT__ARG(doff), CLT__ARG(smem),
                               CLT__ARG(soff), CLT__ARG(n),    CLT__ARG(chunk)};
            return clt__launch(dst->dev, "copy", opts, "copy_chunk", 1, &groups, &lws, 6, args);
        }
        clt__arg args[] = {CLT__ARG(dmem), CLT__ARG(doff), CLT__ARG(smem), CLT__ARG(soff),
                           CLT__ARG(n)};
        return clt__launch(dst->dev, "copy", opts, "copy_contig", 1, &gws, NULL, 5, args);
    }
    clt__layout L;
    if (chunk) {
        int64_t dst_st[CLT_MAX_DIMS], step = 1;
        for (int d = src->ndim - 1; d >= 0; d--) {
            dst_st[d] = step;
            step *= src->shape[d];
        }
        copy_layout(src->ndim, src->shape, src->strides, src->offset, dst_st, dst->offset, &L);
        return copy_cpu(dst->dev, dmem, smem, &L, n, opts, chunk);
    }
    memset(&L, 0, sizeof L);
    L.ndim = src->ndim;
    L.off0 = src->offset;
    for (int d = 0; d < src->ndim; d++) {
        L.shape[d] = src->shape[d];
        L.s0[d] = src->strides[d];
    }
    clt__arg args[] = {CLT__ARG(dmem), CLT__ARG(doff), CLT__ARG(smem), CLT__ARG(n),
                       CLT__ARG(L)};
    return clt__launch(dst->dev, "copy", opts, "copy_strided", 1, &gws, NULL, 5, args);
}

bool clt__same_shape(const clt_tensor *a, const clt_tensor *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

static clt_status copy_strided(clt_tensor *dst, const clt_tensor *src)
{
    if (clt__dtype_is_complex(src->dtype) || clt__dtype_is_complex(dst->dtype))
        return copy_complex(dst, src);
    if (dst->numel == 0)
        return CLT_OK;
    if (clt__is_contiguous(dst) && clt__same_shape(dst, src))
        return copy_into(dst, src);
    const char *opts = clt__copy_options(src->dtype, dst->dtype);
    if (opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "copy: out of host memory");
    cl_mem dmem = clt__mem(dst), smem = clt__mem(src);
    cl_ulong n = (cl_ulong)dst->numel;
    int64_t src_st[CLT_MAX_DIMS];
    clt__broadcast_strides(src, dst->ndim, dst->shape, src_st);
    clt__layout L;
    cl_ulong chunk = clt__chunk_size(dst->dev, dst->numel);
    if (chunk) {
        copy_layout(dst->ndim, dst->shape, src_st, src->offset, dst->strides, dst->offset, &L);
        return copy_cpu(dst->dev, dmem, smem, &L, n, opts, chunk);
    }
    memset(&L, 0, sizeof L);
    L.ndim = dst->ndim;
    L.off0 = dst->offset;
    L.off1 = src->offset;
    for (int d = 0; d < dst->ndim; d++) {
        L.shape[d] = dst->shape[d];
        L.s0[d] = dst->strides[d];
        L.s1[d] = src_st[d];
    }
    size_t gws = (size_t)n;
    clt__arg args[] = {CLT__ARG(dmem), CLT__ARG(smem), CLT__ARG(n), CLT__ARG(L)};
    return clt__launch(dst->dev, "copy", opts, "copy_to_strided", 1, &gws, NULL, 4, args);
}

clt_status clt__copy_into(clt_tensor *dst, const clt_tensor *src, const char *fn)
{
    return clt__error_in(copy_into(dst, src), fn);
}

clt_status clt__copy_strided(clt_tensor *dst, const clt_tensor *src, const char *fn)
{
    return clt__error_in(copy_strided(dst, src), fn);
}

clt_status clt__copy_as(const char *fn, const clt_tensor *t, clt_dtype dtype, clt_tensor **out)
{
    clt_tensor *c = NULL;
    clt_status st = clt__result_new(fn, t->dev, dtype, t->ndim, t->shape, &c);
    if (st == CLT_OK)
        st = clt__copy_into(c, t, fn);
    if (st != CLT_OK) {
        clt_tensor_free(c);
        return st;
    }
    *out = c;
    return CLT_OK;
}

clt_status clt__contiguous_as(const char *fn, const clt_tensor *t, clt_dtype dtype,
                              clt_tensor **out)
{
    clt_status st = t->dtype == dtype && clt__is_contiguous(t)
                        ? clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out)
                        : clt__copy_as(NULL, t, dtype, out);
    if (st != CLT_OK && fn)
        clt__error_prefix(st, "%s: %s", fn,
                          t->dtype == dtype ? "a contiguous copy of an operand"
                                            : "an operand's copy as the computation's dtype");
    return st;
}

clt_status clt__temp_new(const char *fn, const char *what, clt_device *dev, clt_dtype dtype,
                         int ndim, const int64_t *shape, clt_tensor **out)
{
    clt_status st = clt__tensor_new(dev, dtype, ndim, shape, out);
    if (st != CLT_OK)
        clt__error_prefix(st, "%s: %s", fn, what);
    return st;
}

clt_status clt__clone(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__copy_as(fn, t, t->dtype, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__complex_to_real(const clt_tensor *t, clt_dtype dtype, clt_tensor **out,
                                const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dtype(t->dev, dtype, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_complex(t->dtype) || clt__dtype_is_complex(dtype))
        return clt__to_dtype(t, dtype, out, fn);
    if (dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: converting %s to bool is not implemented for complex dtypes", fn,
                          clt_dtype_name(t->dtype));
    clt_tensor *re = NULL;
    st = clt__complex_part(t, 0, &re);
    if (st == CLT_OK)
        st = clt__copy_as(fn, re, dtype, out);
    clt_tensor_free(re);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__to_dtype(const clt_tensor *t, clt_dtype dtype, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dtype(t->dev, dtype, fn);
    if (st != CLT_OK)
        return st;
    if (dtype == t->dtype)
        st = clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out);
    else
        st = clt__copy_as(fn, t, dtype, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- properties ------------------------------------------------------------- */

int clt_tensor_ndim(const clt_tensor *t)
{
    return t ? t->ndim : 0;
}

const int64_t *clt_tensor_shape(const clt_tensor *t)
{
    return t ? t->shape : NULL;
}

const int64_t *clt_tensor_strides(const clt_tensor *t)
{
    return t ? t->strides : NULL;
}

int64_t clt_tensor_size(const clt_tensor *t, int d)
{
    if (t == NULL)
        return 0;
    if (d < 0)
        d += t->ndim;
    return d >= 0 && d < t->ndim ? t->shape[d] : 0;
}

int64_t clt_tensor_numel(const clt_tensor *t)
{
    return t ? t->numel : 0;
}

size_t clt_tensor_nbytes(const clt_tensor *t)
{
    size_t bytes = 0;
    if (t && __builtin_mul_overflow((uint64_t)t->numel, clt_dtype_size(t->dtype), &bytes))
        return SIZE_MAX; /* an expanded tensor of more bytes than size_t counts */
    return bytes;
}

clt_dtype clt_tensor_dtype(const clt_tensor *t)
{
    return t ? t->dtype : CLT_FLOAT32;
}

clt_device *clt_tensor_device(const clt_tensor *t)
{
    return t ? t->dev : NULL;
}

int clt_tensor_is_contiguous(const clt_tensor *t)
{
    return t ? clt__is_contiguous(t) : 0;
}

clt_status clt__same_device(const clt_tensor *a, const clt_tensor *b, const char *fn)
{
    if (a->dev == b->dev)
        return CLT_OK;
    return clt__error(CLT_ERR_DEVICE_MISMATCH,
                      "%s: expected all tensors to be on the same device, but found at least "
                      "two devices, %s (%s) and %s (%s); move one with clt_to",
                      fn, a->dev->label, a->dev->info.name, b->dev->label, b->dev->info.name);
}

clt_status clt__check_floating(const clt_tensor *t, const char *what, const char *fn)
{
    if (t->dtype != CLT_FLOAT32 && t->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: %s must be float32 or float64, not %s; convert with "
                          "clt_to_dtype first",
                          fn, what, clt_dtype_name(t->dtype));
    return clt__check_dtype(t->dev, t->dtype, fn);
}

/* ---- *_like ------------------------------------------------------------------- */

/* The *_like calls: t's device, dtype and shape, empty or filled with value. */
static clt_status like_in(const char *fn, const clt_tensor *t, int empty, double value,
                          clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    return empty ? empty_in(fn, t->dev, t->dtype, t->ndim, t->shape, out)
                 : full_in(fn, t->dev, t->dtype, t->ndim, t->shape, value, out);
}

clt_status clt_empty_like(const clt_tensor *t, clt_tensor **out)
{
    return like_in("clt_empty_like", t, 1, 0.0, out);
}

clt_status clt_full_like(const clt_tensor *t, double value, clt_tensor **out)
{
    return like_in("clt_full_like", t, 0, value, out);
}

clt_status clt_zeros_like(const clt_tensor *t, clt_tensor **out)
{
    return like_in("clt_zeros_like", t, 0, 0.0, out);
}

clt_status clt_ones_like(const clt_tensor *t, clt_tensor **out)
{
    return like_in("clt_ones_like", t, 0, 1.0, out);
}
