/* dlpack.c: DLPack exchange through host memory: a tensor read back into a
 * DLManagedTensor that owns its memory, and a kDLCPU DLTensor of any
 * strides copied onto a device. */
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "cltensor/dlpack.h"

/* The structure, shape and strides in one block; the data apart, aligned. */
typedef struct managed {
    DLManagedTensor mt;
    int64_t shape[CLT_MAX_DIMS];
    int64_t strides[CLT_MAX_DIMS];
    void *data;
} managed;

static void deleter(DLManagedTensor *self)
{
    if (self == NULL)
        return;
    managed *m = self->manager_ctx;
    free(m->data);
    free(m);
}

static bool to_dl_dtype(clt_dtype dt, DLDataType *out)
{
    out->lanes = 1;
    switch (dt) {
    case CLT_FLOAT32: out->code = kDLFloat; out->bits = 32; return true;
    case CLT_FLOAT64: out->code = kDLFloat; out->bits = 64; return true;
    case CLT_FLOAT16: out->code = kDLFloat; out->bits = 16; return true;
    case CLT_BFLOAT16: out->code = kDLBfloat; out->bits = 16; return true;
    case CLT_INT32: out->code = kDLInt; out->bits = 32; return true;
    case CLT_INT64: out->code = kDLInt; out->bits = 64; return true;
    case CLT_UINT8: out->code = kDLUInt; out->bits = 8; return true;
    case CLT_INT8: out->code = kDLInt; out->bits = 8; return true;
    case CLT_INT16: out->code = kDLInt; out->bits = 16; return true;
#if DLPACK_VERSION >= 80
    case CLT_BOOL: out->code = kDLBool; out->bits = 8; return true;
#endif
    default: return false;
    }
}

static bool from_dl_dtype(DLDataType t, clt_dtype *out)
{
    if (t.lanes != 1)
        return false;
    switch (t.code) {
    case kDLFloat:
        *out = t.bits == 32 ? CLT_FLOAT32 : t.bits == 64 ? CLT_FLOAT64 : CLT_FLOAT16;
        return t.bits == 32 || t.bits == 64 || t.bits == 16;
    case kDLInt:
        *out = t.bits == 8    ? CLT_INT8
               : t.bits == 16 ? CLT_INT16
               : t.bits == 32 ? CLT_INT32
                              : CLT_INT64;
        return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLUInt:
        *out = CLT_UINT8;
        return t.bits == 8;
    case kDLBfloat:
        *out = CLT_BFLOAT16;
        return t.bits == 16;
#if DLPACK_VERSION >= 80
    case kDLBool:
        *out = CLT_BOOL;
        return t.bits == 8;
#endif
    default:
        return false;
    }
}

clt_status clt_to_dlpack(const clt_tensor *t, DLManagedTensor **out)
{
    const char *fn = "clt_to_dlpack";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    DLDataType dt;
    if (!to_dl_dtype(t->dtype, &dt))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: DLPack %d.%d has no %s type; convert the tensor first "
                          "(clt_to_dtype(t, CLT_UINT8, ...))",
                          fn, DLPACK_VERSION / 100, DLPACK_VERSION / 10 % 10,
                          clt_dtype_name(t->dtype));
    clt_status st = clt__check_host_size(t, fn);
    if (st != CLT_OK)
        return st;
    managed *m = clt__calloc(1, sizeof *m);
    size_t bytes = clt_tensor_nbytes(t);
    if (m == NULL || (m->data = clt__aligned(256, bytes ? bytes : 1)) == NULL) {
        free(m);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for %zu bytes", fn,
                          bytes);
    }
    st = clt__tensor_read_at(t, m->data, bytes, fn, __builtin_return_address(0));
    if (st != CLT_OK) {
        free(m->data);
        free(m);
        return st;
    }
    int64_t stride = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        m->shape[d] = t->shape[d];
        m->strides[d] = stride;
        stride *= t->shape[d];
    }
    DLTensor *dl = &m->mt.dl_tensor;
    dl->data = m->data;
    dl->device.device_type = kDLCPU;
    dl->device.device_id = 0;
    dl->ndim = t->ndim;
    dl->dtype = dt;
    dl->shape = m->shape;
    dl->strides = m->strides;
    dl->byte_offset = 0;
    m->mt.manager_ctx = m;
    m->mt.deleter = deleter;
    *out = &m->mt;
    return clt__ok();
}

/* Whether every element of the strided array src (numel > 0, strides in
 * elements of es bytes) has an address: the byte distances from its first
 * element to the lowest and past the highest one fit int64 (from the data
 * pointer too, byte_offset included), and the data pointer plus
 * byte_offset plus those distances do not wrap around the address space.  Where they would, the strides or the offset lie, and
 * following them would read from addresses computed modulo 2^64. */
static bool within_address_space(const DLTensor *src, const int64_t *strides, size_t es)
{
    int64_t lo = 0, hi = (int64_t)es;
    for (int d = 0; d < src->ndim; d++) {
        int64_t span;
        if (__builtin_mul_overflow(strides[d], src->shape[d] - 1, &span) ||
            __builtin_mul_overflow(span, (int64_t)es, &span) ||
            __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
            return false;
    }
    /* The offset is a byte distance too: one past int64 points at no
     * memory the caller could have (and led the copy into a crash). */
    int64_t end;
    if (src->byte_offset > (uint64_t)INT64_MAX ||
        __builtin_add_overflow(hi, (int64_t)src->byte_offset, &end))
        return false;
    uintptr_t first, low, high;
    return !__builtin_add_overflow((uintptr_t)src->data, src->byte_offset, &first) &&
           !__builtin_sub_overflow(first, (uintptr_t)0 - (uintptr_t)lo, &low) &&
           !__builtin_add_overflow(first, (uintptr_t)hi, &high) && low != 0;
}

/* Copies the elements of a strided n-d array into contiguous dst, the last
 * dimension innermost. */
static void gather(const char *base, int ndim, const int64_t *shape, const int64_t *strides,
                   size_t es, char *dst)
{
    if (ndim == 0) {
        memcpy(dst, base, es);
        return;
    }
    int64_t idx[CLT_MAX_DIMS] = {0};
    int64_t inner = shape[ndim - 1], is = strides[ndim - 1] * (int64_t)es;
    for (;;) {
        const char *p = base;
        for (int d = 0; d < ndim - 1; d++)
            p += idx[d] * strides[d] * (int64_t)es;
        if (is == (int64_t)es) {
            memcpy(dst, p, (size_t)inner * es);
            dst += (size_t)inner * es;
        } else {
            for (int64_t k = 0; k < inner; k++, dst += es)
                memcpy(dst, p + k * is, es);
        }
        int d = ndim - 2;
        for (; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}

clt_status clt_from_dlpack(clt_device *dev, const DLManagedTensor *src, clt_tensor **out)
{
    const char *fn = "clt_from_dlpack";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(src, fn);
    const DLTensor *dl = &src->dl_tensor;
    if (dl->device.device_type != kDLCPU)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the tensor is on DLPack device type %d, id %d; cltensor copies "
                          "from host memory (kDLCPU) only: move it to the CPU first",
                          fn, (int)dl->device.device_type, (int)dl->device.device_id);
    clt_dtype dtype;
    if (!from_dl_dtype(dl->dtype, &dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: DLPack dtype code %u, %u bits, %u lanes is not supported "
                          "(cltensor takes kDLFloat 16/32/64, kDLInt 32/64, kDLUInt 8%s, one lane)",
                          fn, dl->dtype.code, dl->dtype.bits, dl->dtype.lanes,
                          DLPACK_VERSION >= 80 ? ", kDLBool 8" : "");
    if (dl->ndim < 0 || dl->ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %d dimensions; cltensor takes 0 to %d", fn, dl->ndim,
                          CLT_MAX_DIMS);
    if (dl->ndim > 0 && dl->shape == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: shape is NULL for %d dimensions", fn,
                          dl->ndim);
    clt_status st = clt__check_shape(dl->ndim, dl->shape, fn);
    if (st != CLT_OK)
        return st;
    size_t es = clt_dtype_size(dtype);
    int64_t numel = clt__io_numel(dl->ndim, dl->shape, es);
    char s[160];
    if (numel < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: bad shape %s", fn,
                          clt__shape_str(s, sizeof s, dl->ndim, dl->shape));
    if (numel > 0 && dl->data == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: data is NULL for %lld elements", fn,
                          (long long)numel);
    /* C-order strides where none are given; an empty array has no element
     * to address (and its other sizes may multiply past int64) */
    int64_t strides[CLT_MAX_DIMS], stride = 1;
    for (int d = dl->ndim - 1; d >= 0; d--) {
        strides[d] = dl->strides ? dl->strides[d] : stride;
        stride *= numel > 0 ? dl->shape[d] : 1;
    }
    if (numel > 0 && !within_address_space(dl, strides, es)) {
        char t[160];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: storage size calculation overflowed with sizes=%s and "
                          "strides=%s (data %p, byte_offset %llu): the elements would lie "
                          "outside the address space",
                          fn, clt__shape_str(s, sizeof s, dl->ndim, dl->shape),
                          clt__shape_str(t, sizeof t, dl->ndim, strides), dl->data,
                          (unsigned long long)dl->byte_offset);
    }
    /* The device tensor first: a size the device refuses costs no host
     * memory. */
    clt_tensor *t = NULL;
    st = clt__empty(dev, dtype, dl->ndim, dl->shape, &t);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    size_t bytes = (size_t)numel * es;
    char *buf = clt__malloc(bytes ? bytes : 1);
    if (buf == NULL) {
        clt_tensor_free(t);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: no host memory for %zu bytes", fn,
                          bytes);
    }
    if (numel > 0)
        gather((const char *)dl->data + dl->byte_offset, dl->ndim, dl->shape, strides, es, buf);
    int64_t b = dtype == CLT_BOOL ? clt__io_bad_bool(buf, bytes) : -1;
    if (b >= 0)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: bool element %lld holds the byte %u (only 0 and 1 are bools)", fn,
                        (long long)b, (unsigned char)buf[b]);
    clt_event *ev = NULL;
    if (st == CLT_OK)
        st = clt__tensor_write(t, buf, bytes, &ev, fn);
    if (st == CLT_OK)
        st = clt__event_wait_in(fn, ev, __builtin_return_address(0));
    clt_event_free(ev);
    free(buf);
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    *out = t;
    return clt__ok();
}
