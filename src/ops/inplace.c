/* inplace.c: in-place ops (add_, mul_, clamp_, fill_, copy_ ...) and the
 * out= forms of the hot binary ops and matmul, with PyTorch's checks on the
 * destination: its shape never changes and the result must cast to it. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* PyTorch's names for dtypes in its casting messages. */
static const char *torch_name(clt_dtype dt)
{
    switch (dt) {
    case CLT_FLOAT32: return "Float";
    case CLT_FLOAT64: return "Double";
    case CLT_FLOAT16: return "Half";
    case CLT_BFLOAT16: return "BFloat16";
    case CLT_INT32: return "Int";
    case CLT_INT64: return "Long";
    case CLT_UINT8: return "Byte";
    case CLT_INT8: return "Char";
    case CLT_INT16: return "Short";
    case CLT_BOOL: return "Bool";
    case CLT_COMPLEX64: return "ComplexFloat";
    case CLT_COMPLEX128: return "ComplexDouble";
    default: return "?";
    }
}

/* c10::canCast: no float into an integer, no non-bool into bool. */
static clt_status check_cast(clt_dtype from, clt_dtype to, const char *fn)
{
    if (clt__dtype_category(from) <= clt__dtype_category(to))
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: result type %s can't be cast to the desired output type %s", fn,
                      torch_name(from), torch_name(to));
}

static bool same_shape(const clt_tensor *a, int n, const int64_t *shape)
{
    if (a->ndim != n)
        return false;
    for (int d = 0; d < n; d++)
        if (a->shape[d] != shape[d])
            return false;
    return true;
}

/* Error unless the shape that a result of (n, shape) takes equals dst's. */
static clt_status check_shape_into(const clt_tensor *dst, int n, const int64_t *shape,
                                   const char *fn)
{
    if (same_shape(dst, n, shape))
        return CLT_OK;
    char s1[160], s2[160];
    return clt__error(CLT_ERR_SHAPE_MISMATCH,
                      "%s: output with shape %s doesn't match the broadcast shape %s", fn,
                      clt__shape_str(s1, sizeof s1, dst->ndim, dst->shape),
                      clt__shape_str(s2, sizeof s2, n, shape));
}

/* Whether reading x while writing dst element by element is safe: x is on
 * other storage, or it is dst's own elements in dst's own order. */
static bool alias_safe(const clt_tensor *dst, const clt_tensor *x)
{
    if (x->storage == NULL || x->storage != dst->storage)
        return true;
    return x->offset == dst->offset && same_shape(x, dst->ndim, dst->shape) &&
           clt__is_contiguous(x) && clt__is_contiguous(dst);
}

/* The dtype a binary op computes in (true division makes floats). */
static clt_dtype binary_dtype(clt__binop op, const clt_tensor *a, const clt_tensor *b)
{
    clt_dtype dt = CLT_FLOAT32;
    clt_result_type(a, b, &dt);
    if (op == CLT__OP_DIV && !clt__dtype_is_float(dt) && !clt__dtype_is_complex(dt))
        dt = CLT_FLOAT32;
    return dt;
}

/* With alpha (not NULL, op add): a + *alpha * b. */
static clt_status run_tt(clt__binop op, clt_tensor *into, const clt_tensor *a,
                         const clt_tensor *b, const double *alpha, clt_tensor **out,
                         const char *fn)
{
    if (alpha)
        return clt__axpy_into(into, a, b, *alpha, out, fn);
    switch (op) {
    case CLT__OP_ADD: return clt__add_into(into, a, b, out, fn);
    case CLT__OP_SUB: return clt__sub_into(into, a, b, out, fn);
    case CLT__OP_MUL: return clt__mul_into(into, a, b, out, fn);
    default: return clt__div_into(into, a, b, out, fn);
    }
}

/* dst = a op b, with checks already done.  Computes into dst when it can
 * (contiguous, offset 0, the result's dtype, no partial overlap), else into
 * a temporary copied into dst through its strides. */
static clt_status binary_dest(clt__binop op, clt_tensor *dst, const clt_tensor *a,
                              const clt_tensor *b, const double *alpha, const char *fn)
{
    bool direct = alias_safe(dst, a) && alias_safe(dst, b);
    clt_tensor *r = NULL;
    clt_status st = run_tt(op, direct ? dst : NULL, a, b, alpha, &r, fn);
    if (st == CLT_OK && r != NULL)
        st = clt__copy_strided(dst, r, fn);
    clt_tensor_free(r);
    if (st == CLT_OK)
        clt__version_bump(dst);
    return st;
}

static clt_status binary_checks(clt__binop op, const clt_tensor *dst, const clt_tensor *a,
                                const clt_tensor *b, const char *fn)
{
    clt_status st = clt__same_device(dst, a, fn);
    if (st == CLT_OK)
        st = clt__same_device(dst, b, fn);
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    if (st == CLT_OK)
        st = clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n, shape, fn);
    if (st == CLT_OK)
        st = check_shape_into(dst, n, shape, fn);
    if (st == CLT_OK)
        st = clt__check_dest(dst, fn);
    if (st == CLT_OK && op == CLT__OP_SUB && (a->dtype == CLT_BOOL || b->dtype == CLT_BOOL))
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: subtraction, the '-' operator, with a bool tensor is not "
                        "supported; to invert a mask use clt_logical_not",
                        fn);
    if (st == CLT_OK)
        st = check_cast(binary_dtype(op, a, b), dst->dtype, fn);
    return st;
}

clt_status clt__binary_(clt__binop op, clt_tensor *t, const clt_tensor *other, double alpha,
                        const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(other, fn);
    clt_status st = binary_checks(op, t, t, other, fn);
    if (st != CLT_OK)
        return st;
    bool scaled = (op == CLT__OP_ADD || op == CLT__OP_SUB) && alpha != 1.0;
    clt_dtype ct = binary_dtype(op, t, other);
    bool floating = clt__dtype_is_float(ct) || clt__dtype_is_complex(ct);
    if (scaled && !floating && !(isfinite(alpha) && alpha == floor(alpha)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: for integral input tensors, argument alpha must not be a "
                          "floating point number",
                          fn);
    /* PyTorch converts alpha to the sum's dtype: a bool sum takes any
     * nonzero alpha as true, an integer one refuses an alpha it cannot hold */
    if (scaled && ct == CLT_BOOL) {
        alpha = alpha != 0.0;
        scaled = alpha != 1.0;
    } else if (scaled && !floating) {
        st = clt__scalar_check(ct, alpha, CLT__SCALAR_EXACT, fn);
        if (st != CLT_OK)
            return st;
    }
    if (t->numel == 0)
        return clt__ok();
    if (clt__dtype_is_complex(ct)) {
        /* the complex kernels (cl/complex.cl) out of place, then into t;
         * alpha scales other (in ct, as torch's a + alpha * b) first */
        clt_tensor *r = NULL, *o = NULL, *a = NULL, *ab = NULL;
        if (scaled && other->dtype != ct)
            st = clt__to_dtype(other, ct, &o, fn);
        if (st == CLT_OK && scaled)
            st = clt__full(t->dev, clt__complex_part_dtype(ct), 0, NULL, alpha, &a);
        if (st == CLT_OK && scaled)
            st = clt__complex_binary(CLT__OP_MUL, o ? o : other, a, &ab, fn);
        if (st == CLT_OK)
            st = clt__complex_binary((int)op, t, ab ? ab : other, &r, fn);
        if (st == CLT_OK)
            st = clt__copy_strided(t, r, fn);
        clt_tensor_free(r);
        clt_tensor_free(ab);
        clt_tensor_free(a);
        clt_tensor_free(o);
        if (st == CLT_OK)
            clt__version_bump(t);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt_tensor *scaled_other = NULL;
    const clt_tensor *b = other;
    /* Floating sums take alpha in one kernel that rounds once, as PyTorch
     * (t - alpha * other is t + (-alpha) * other; + 0.0 makes a zero alpha
     * +0, as an integral scalar is a Python int). */
    double signed_alpha = (op == CLT__OP_SUB ? -alpha : alpha) + 0.0;
    bool fused = scaled && floating;
    if (scaled && !fused) {
        /* integers: alpha * other in the sum's dtype (other's own would
         * wrap an int32 other that an int64 t adds), then the op; both wrap
         * as PyTorch's */
        clt_tensor *conv = NULL;
        const clt_tensor *o = other;
        if (other->dtype != ct) {
            st = clt__to_dtype(other, ct, &conv, fn);
            o = conv;
        }
        if (st == CLT_OK)
            st = clt__mul_scalar_into(NULL, o, alpha, &scaled_other, fn);
        clt_tensor_free(conv);
        if (st != CLT_OK)
            return st;
        b = scaled_other;
    }
    st = binary_dest(fused ? CLT__OP_ADD : op, t, t, b, fused ? &signed_alpha : NULL, fn);
    clt_tensor_free(scaled_other);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__scalar_(clt__binop op, clt_tensor *t, double s, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    /* The result type of t with a Python number. */
    bool integral = isfinite(s) && s == floor(s);
    clt_dtype rt = t->dtype;
    if ((integral ? 1 : 2) > clt__dtype_category(t->dtype))
        rt = integral ? CLT_INT64 : CLT_FLOAT32;
    if (op == CLT__OP_DIV && !clt__dtype_is_float(rt))
        rt = CLT_FLOAT32;
    st = check_cast(rt, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    if (t->numel == 0)
        return clt__ok();
    clt_tensor *r = NULL;
    if (clt__dtype_is_complex(t->dtype)) {
        /* the complex kernels with s as a 0-d tensor, as clt_add_scalar's */
        clt_tensor *s0 = NULL;
        st = clt__full(t->dev, clt__complex_part_dtype(t->dtype), 0, NULL, s, &s0);
        if (st == CLT_OK)
            st = clt__complex_binary((int)op, t, s0, &r, fn);
        clt_tensor_free(s0);
    } else {
        switch (op) {
        case CLT__OP_ADD: st = clt__add_scalar_into(t, t, s, &r, fn); break;
        case CLT__OP_SUB: st = clt__sub_scalar_into(t, t, s, &r, fn); break;
        case CLT__OP_MUL: st = clt__mul_scalar_into(t, t, s, &r, fn); break;
        default: st = clt__div_scalar_into(t, t, s, &r, fn); break;
        }
    }
    if (st == CLT_OK && r != NULL)
        st = clt__copy_strided(t, r, fn);
    clt_tensor_free(r);
    if (st == CLT_OK)
        clt__version_bump(t);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__clamp_(clt_tensor *t, const double *min, const double *max, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL;
    CLT__TRY(clt__clamp(t, min, max, &r, fn));
    CLT__TRY(check_cast(r->dtype, t->dtype, fn));
    CLT__TRY(clt__copy_strided(t, r, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* clamp_ with tensor bounds: the result must keep t's shape (the bounds
 * broadcast to it) and its dtype category, as torch's clamp_. */
clt_status clt__clamp_t_(clt_tensor *t, const clt_tensor *min, const clt_tensor *max,
                         const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dest(t, fn);
    clt_tensor *r = NULL;
    if (st != CLT_OK)
        return st;
    CLT__TRY(clt__clamp_t(t, min, max, &r, fn));
    CLT__TRY(check_shape_into(t, r->ndim, r->shape, fn));
    CLT__TRY(check_cast(r->dtype, t->dtype, fn));
    CLT__TRY(clt__copy_strided(t, r, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__fill_(clt_tensor *t, double value, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dest(t, fn);
    if (st == CLT_OK)
        st = clt__scalar_check(t->dtype, value, CLT__SCALAR_EXACT, fn);
    if (st != CLT_OK || t->numel == 0)
        return st == CLT_OK ? clt__ok() : st;
    if (t->offset == 0 && clt__is_contiguous(t)) {
        st = clt__fill_value(t, value);
        return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
    }
    clt_tensor *v = NULL;
    CLT__TRY(clt__error_in(clt__full(t->dev, t->dtype, 0, NULL, value, &v), fn));
    CLT__TRY(clt__copy_strided(t, v, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(v);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__copy_(clt_tensor *dst, const clt_tensor *src)
{
    const char *fn = "clt_copy_";
    CLT__REQUIRE_ARG(dst, fn);
    CLT__REQUIRE_ARG(src, fn);
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = clt__broadcast_shapes(dst->ndim, dst->shape, src->ndim, src->shape, &n,
                                          shape, fn);
    if (st == CLT_OK)
        st = check_shape_into(dst, n, shape, fn);
    if (st == CLT_OK)
        st = clt__check_dest(dst, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(dst->dev, src->dtype, fn);
    if (st != CLT_OK || dst->numel == 0)
        return st == CLT_OK ? clt__ok() : st;
    clt_tensor *moved = NULL;
    const clt_tensor *s = src;
    if (src->dev != dst->dev) {
        /* Device-side within one context, else through host memory (see
         * clt_to); either waits for the source. */
        CLT__TRY(clt__to_at(src, dst->dev, &moved, __builtin_return_address(0), fn));
        s = moved;
    } else if (!alias_safe(dst, src)) {
        if (src->storage == dst->storage && src->offset == dst->offset &&
            src->dtype == dst->dtype && same_shape(src, dst->ndim, dst->shape) &&
            memcmp(src->strides, dst->strides, sizeof(int64_t) * (size_t)dst->ndim) == 0) {
            clt__version_bump(dst); /* x.copy_(x): nothing moves */
            goto done;
        }
        CLT__TRY(clt__clone(src, &moved, fn));
        s = moved;
    }
    CLT__TRY(clt__copy_strided(dst, s, fn));
    clt__version_bump(dst);
done:
    clt_tensor_free(moved);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__binary_out(clt__binop op, clt_tensor *out, const clt_tensor *a,
                           const clt_tensor *b, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = binary_checks(op, out, a, b, fn);
    if (st == CLT_OK && out->numel > 0)
        st = binary_dest(op, out, a, b, NULL, fn);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__matmul_out(clt_tensor *out, const clt_tensor *a, const clt_tensor *b)
{
    const char *fn = "clt_matmul_out";
    CLT__REQUIRE_ARG(out, fn);
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__same_device(out, a, fn);
    if (st == CLT_OK)
        st = clt__check_dest(out, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL;
    CLT__TRY(clt__matmul(a, b, &r, fn));
    CLT__TRY(check_shape_into(out, r->ndim, r->shape, fn));
    CLT__TRY(check_cast(r->dtype, out->dtype, fn));
    CLT__TRY(clt__copy_strided(out, r, fn));
    clt__version_bump(out);
done:
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}
