/* complex.c: the complex views (view_as_real, view_as_complex, real, imag)
 * and the elementwise complex ops (add, sub, mul, div, abs, angle, conj,
 * polar, complex, the elementary functions) over the kernels of
 * cl/complex.cl. */
#include <string.h>

#include "internal.h"

#define TRY_RET(e)                                                           \
    do {                                                                     \
        clt_status s_ = (e);                                                 \
        if (s_ != CLT_OK)                                                    \
            return s_;                                                       \
    } while (0)

const char *clt__complex_options(clt_dtype part)
{
    return part == CLT_FLOAT64 ? "-DR=double -DCLT_FP64" : "-DR=float";
}

clt_status clt__complex_launch(clt_device *dev, clt_dtype part, const char *kernel, size_t items,
                               size_t nargs, const clt__arg *args, const char *fn)
{
    return clt__error_in(clt__launch(dev, "complex", clt__complex_options(part), kernel, 1, &items,
                                     NULL, nargs, args),
                         fn);
}

static clt_status need_complex(const clt_tensor *t, const char *fn)
{
    if (clt__dtype_is_complex(t->dtype))
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: expected a complex tensor, got %s", fn,
                      clt_dtype_name(t->dtype));
}

/* ---- views ------------------------------------------------------------------- */

clt_status clt__view_as_real(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (!clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: view_as_real is only supported for complex tensors (got %s)", fn,
                          clt_dtype_name(t->dtype));
    if (t->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: the real view of a %d-dim tensor would have %d dims, more than "
                          "CLT_MAX_DIMS (%d)",
                          fn, t->ndim, t->ndim + 1, CLT_MAX_DIMS);
    int64_t shape[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[d];
        st[d] = t->strides[d] * 2;
    }
    shape[t->ndim] = 2;
    st[t->ndim] = 1;
    clt_status s = clt__tensor_view(t, t->ndim + 1, shape, st, t->offset * 2, out);
    if (s != CLT_OK)
        return clt__error_in(s, fn);
    (*out)->dtype = clt__complex_part_dtype(t->dtype);
    return clt__ok();
}

clt_status clt__view_as_complex(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->dtype != CLT_FLOAT32 && t->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: view_as_complex is only supported for float32 and float64 "
                          "tensors, but got a tensor of dtype %s",
                          fn, clt_dtype_name(t->dtype));
    if (t->ndim == 0 || t->shape[t->ndim - 1] != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Tensor must have a last dimension of size 2",
                          fn);
    if (t->strides[t->ndim - 1] != 1)
        return clt__error(CLT_ERR_NOT_CONTIGUOUS,
                          "%s: Tensor must have a last dimension with stride 1", fn);
    int64_t st[CLT_MAX_DIMS];
    for (int d = 0; d + 1 < t->ndim; d++) {
        if (t->strides[d] % 2 != 0)
            return clt__error(CLT_ERR_NOT_CONTIGUOUS,
                              "%s: Tensor must have a stride divisible by 2 for all but last "
                              "dimension",
                              fn);
        st[d] = t->strides[d] / 2;
    }
    if (t->offset % 2 != 0)
        return clt__error(CLT_ERR_NOT_CONTIGUOUS,
                          "%s: Tensor must have a storage_offset divisible by 2", fn);
    clt_status s = clt__tensor_view(t, t->ndim - 1, t->shape, st, t->offset / 2, out);
    if (s != CLT_OK)
        return clt__error_in(s, fn);
    (*out)->dtype = clt__complex_of(t->dtype);
    return clt__ok();
}

clt_status clt__real_imag(const clt_tensor *t, int part, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (!clt__dtype_is_complex(t->dtype)) {
        if (part == 1)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: imag is not implemented for tensors with non-complex dtypes "
                              "(got %s)",
                              fn, clt_dtype_name(t->dtype));
        return clt__error_in(clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out),
                             fn);
    }
    clt_status s = clt__complex_part(t, part, out);
    return s == CLT_OK ? clt__ok() : clt__error_in(s, fn);
}

clt_status clt__complex_dense(const char *fn, const clt_tensor *t, clt_dtype dtype,
                              clt_tensor **out)
{
    if (t->dtype == dtype && clt__is_contiguous(t) && t->offset != 0)
        return clt__copy_as(fn, t, dtype, out);
    return clt__contiguous_as(fn, t, dtype, out);
}

/* ---- elementwise ------------------------------------------------------------- */

/* t broadcast to shape and copied contiguous as dtype (a new tensor). */
static clt_status operand(const clt_tensor *t, int ndim, const int64_t *shape, clt_dtype dtype,
                          clt_tensor **out, const char *fn)
{
    clt_tensor *e = NULL;
    clt_status st = clt__expand(t, ndim, shape, &e, fn);
    if (st == CLT_OK)
        st = clt__complex_dense(fn, e, dtype, out);
    clt_tensor_free(e);
    return st;
}

static clt_status check_pair(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                             const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    return clt__same_device(a, b, fn);
}

clt_status clt__complex_binary(int op, const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                               const char *fn)
{
    clt_status st = check_pair(a, b, out, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype rt; /* torch's result type: 0-d operands weigh less */
    clt_result_type(a, b, &rt);
    if (!clt__dtype_is_complex(rt))
        return clt__error(CLT_ERR_INTERNAL, "%s: no complex operand", fn);
    if (clt__dtype_is_half(a->dtype) || clt__dtype_is_half(b->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: %s with complex operands is not implemented (convert the "
                          "%s operand first)",
                          fn, clt_dtype_name(clt__dtype_is_half(a->dtype) ? a->dtype : b->dtype),
                          clt_dtype_name(clt__dtype_is_half(a->dtype) ? a->dtype : b->dtype));
    TRY_RET(clt__check_dtype(a->dev, rt, fn));
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    TRY_RET(clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape, fn));
    clt_tensor *x = NULL, *y = NULL, *r = NULL;
    CLT__TRY(operand(a, nd, shape, rt, &x, fn));
    CLT__TRY(operand(b, nd, shape, rt, &y, fn));
    CLT__TRY(clt__result_new(fn, a->dev, rt, nd, shape, &r));
    {
        cl_mem ma = clt__mem(x), mb = clt__mem(y), mo = clt__mem(r);
        cl_ulong n = (cl_ulong)r->numel;
        cl_int o = op;
        clt__arg args[] = {CLT__ARG(ma), CLT__ARG(mb), CLT__ARG(mo), CLT__ARG(n), CLT__ARG(o)};
        CLT__TRY(clt__complex_launch(a->dev, clt__complex_part_dtype(rt), "cbinary",
                                     (size_t)n, 5, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__complex_unary(int op, const clt_tensor *a, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_tensor *x = NULL, *r = NULL;
    clt_status st;
    clt_dtype ct = a->dtype;
    if (!clt__dtype_is_complex(ct)) {
        if (op != 1 || clt__dtype_is_half(ct))
            return need_complex(a, fn);
        ct = clt__complex_of(ct); /* angle of a real tensor: 0 or pi */
    }
    TRY_RET(clt__check_dtype(a->dev, ct, fn));
    clt_dtype part = clt__complex_part_dtype(ct);
    CLT__TRY(clt__complex_dense(fn, a, ct, &x));
    CLT__TRY(clt__result_new(fn, a->dev, op == 2 ? ct : part, a->ndim, a->shape, &r));
    {
        cl_mem ma = clt__mem(x), mo = clt__mem(r);
        cl_ulong n = (cl_ulong)r->numel;
        cl_int o = op;
        clt__arg args[] = {CLT__ARG(ma), CLT__ARG(mo), CLT__ARG(n), CLT__ARG(o)};
        CLT__TRY(clt__complex_launch(a->dev, part, "cunary", (size_t)n, 4, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(x);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__complex_math(int op, const clt_tensor *a, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_tensor *x = NULL, *r = NULL;
    clt_status st;
    clt_dtype ct = a->dtype;
    if (ct == CLT_FLOAT32 || ct == CLT_FLOAT64)
        ct = clt__complex_of(ct);
    else if (!clt__dtype_is_complex(ct))
        return need_complex(a, fn);
    TRY_RET(clt__check_dtype(a->dev, ct, fn));
    clt_dtype part = clt__complex_part_dtype(ct);
    CLT__TRY(clt__complex_dense(fn, a, ct, &x));
    CLT__TRY(clt__result_new(fn, a->dev, ct, a->ndim, a->shape, &r));
    {
        cl_mem ma = clt__mem(x), mo = clt__mem(r);
        cl_ulong n = (cl_ulong)r->numel;
        cl_int o = op;
        clt__arg args[] = {CLT__ARG(ma), CLT__ARG(mo), CLT__ARG(n), CLT__ARG(o)};
        CLT__TRY(clt__complex_launch(a->dev, part, "cmath", (size_t)n, 4, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(x);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__complex_make(int op, const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                             const char *fn)
{
    clt_status st = check_pair(a, b, out, fn);
    if (st != CLT_OK)
        return st;
    const char *names[2][2] = {{"abs", "angle"}, {"real", "imag"}};
    for (int k = 0; k < 2; k++) {
        const clt_tensor *t = k ? b : a;
        if (t->dtype != CLT_FLOAT32 && t->dtype != CLT_FLOAT64)
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: expected both inputs to be float32 or float64 tensors but "
                              "got %s for '%s'",
                              fn, clt_dtype_name(t->dtype), names[op][k]);
    }
    if (a->dtype != b->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected object of scalar type %s but got %s for '%s'", fn,
                          clt_dtype_name(a->dtype), clt_dtype_name(b->dtype), names[op][1]);
    clt_dtype part = a->dtype, ct = clt__complex_of(part);
    TRY_RET(clt__check_dtype(a->dev, ct, fn));
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    TRY_RET(clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape, fn));
    clt_tensor *x = NULL, *y = NULL, *r = NULL;
    CLT__TRY(operand(a, nd, shape, part, &x, fn));
    CLT__TRY(operand(b, nd, shape, part, &y, fn));
    CLT__TRY(clt__result_new(fn, a->dev, ct, nd, shape, &r));
    {
        cl_mem ma = clt__mem(x), mb = clt__mem(y), mo = clt__mem(r);
        cl_ulong n = (cl_ulong)r->numel;
        cl_int o = op;
        clt__arg args[] = {CLT__ARG(ma), CLT__ARG(mb), CLT__ARG(mo), CLT__ARG(n), CLT__ARG(o)};
        CLT__TRY(clt__complex_launch(a->dev, part, "cmake", (size_t)n, 5, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}
