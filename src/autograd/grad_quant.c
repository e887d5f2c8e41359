/* grad_quant.c: the public functions of cltensor/quant.h that compute on
 * tensors (fake quantization, its learnable form, quantize_per_tensor and
 * dequantize) over src/ops/quant.c, with PyTorch 1.13's autograd: the
 * straight-through masked gradient, and LSQ's gradients for the scale and
 * the zero point. */
#include <math.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])
#define ZP_MAX 16777216.0 /* zero points travel in float32 */

static clt_status check_x(const char *fn, const clt_tensor *x, bool float32_only)
{
    if (x->dtype == CLT_FLOAT32 ||
        (!float32_only && (x->dtype == CLT_FLOAT64 || x->dtype == CLT_FLOAT16)))
        return clt__check_dtype(x->dev, x->dtype, fn);
    return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: not implemented for %s tensors (%s)", fn,
                      clt_dtype_name(x->dtype),
                      float32_only ? "float32 only, as PyTorch's"
                                   : "float32, float64 or float16, as PyTorch's");
}

static clt_status check_range(const char *fn, int64_t qmin, int64_t qmax)
{
    if (qmin > qmax)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: `quant_min` should be less than or equal to `quant_max` "
                          "(%lld > %lld)",
                          fn, (long long)qmin, (long long)qmax);
    return CLT_OK;
}

/* A float32 copy of a scale or zero point operand t on x's device, which
 * must be floating (scale) or real (zero point), with want elements (-1:
 * one element of any shape, else 1-D of want). */
static clt_status qparam(const char *fn, const char *what, const clt_tensor *x,
                         const clt_tensor *t, int64_t want, bool floating, clt_tensor **out)
{
    *out = NULL;
    clt_status st = clt__same_device(x, t, fn);
    if (st != CLT_OK)
        return st;
    if (clt__dtype_is_complex(t->dtype) || t->dtype == CLT_BOOL ||
        (floating && !clt__dtype_is_float(t->dtype)))
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s of dtype %s (%s needed)", fn, what,
                          clt_dtype_name(t->dtype), floating ? "a floating one" : "a real one");
    if (want < 0 ? t->numel != 1 : (t->ndim != 1 || t->numel != want))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          want < 0 ? "%s: %s must have one element (it has %lld)"
                                   : "%s: dimensions of scale and zero-point are not consistent "
                                     "with input tensor (%s has %lld elements)",
                          fn, what, (long long)t->numel);
    return clt__contiguous_as(fn, t, CLT_FLOAT32, out);
}

static clt_status scalar_tensor(const clt_tensor *x, double v, clt_tensor **out)
{
    return clt__full(x->dev, CLT_FLOAT32, 1, (const int64_t[]){1}, v, out);
}

/* torch's check of a per-channel axis: no negative values. */
static clt_status check_axis(const char *fn, const clt_tensor *x, int axis)
{
    if (axis < 0 || axis >= x->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: `axis` must be between 0 and number of dimensions of input "
                          "(axis %d, %d dimensions)",
                          fn, axis, x->ndim);
    return CLT_OK;
}

/* inner (elements after axis) and the channel count for axis of x. */
static void channels(const clt_tensor *x, int axis, int64_t *inner, int64_t *nch)
{
    *inner = 1;
    for (int d = axis + 1; d < x->ndim; d++)
        *inner *= x->shape[d];
    *nch = x->shape[axis];
}

/* ---- fake quantization: the straight-through gradient ------------------------ */

/* saved: the mask.  Recorded in a pass that creates a graph (clt__twice). */
static clt_status bw_fake_quant(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__mul_rec("clt_backward", g, S(0), &gin[0]);
}

static clt_status fake_quant_rec(const char *fn, const char *name, const clt_tensor *x,
                                 const clt_tensor *scale, const clt_tensor *zp, bool zp_float,
                                 int64_t inner, int64_t nch, int64_t qmin, int64_t qmax,
                                 clt_tensor **out)
{
    clt_tensor *mask = NULL;
    clt_status st =
        clt__fake_quant(fn, x, scale, zp, zp_float, inner, nch, qmin, qmax, out, &mask);
    if (st == CLT_OK) {
        const clt_tensor *sv = mask;
        clt__node *n = NULL;
        st = clt__record(st, out, name, bw_fake_quant, 1, &x, 1, &sv, &n);
        clt__twice(n);
    }
    clt_tensor_free(mask);
    return st;
}

clt_status clt_fake_quantize_per_tensor_affine(const clt_tensor *x, double scale,
                                               int64_t zero_point, int64_t quant_min,
                                               int64_t quant_max, clt_tensor **out)
{
    CLT__AUTOCAST("clt_fake_quantize_per_tensor_affine", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x),
                  clt_fake_quantize_per_tensor_affine(CLT__AC(0), scale, zero_point, quant_min,
                                                      quant_max, out));
    static const char fn[] = "clt_fake_quantize_per_tensor_affine";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_x(fn, x, false);
    if (st == CLT_OK)
        st = check_range(fn, quant_min, quant_max);
    if (st != CLT_OK)
        return st;
    if (zero_point < quant_min || zero_point > quant_max)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: `zero_point` must be between `quant_min` and `quant_max` "
                          "(%lld not in [%lld, %lld])",
                          fn, (long long)zero_point, (long long)quant_min, (long long)quant_max);
    if (fabs((double)zero_point) > ZP_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: zero_point %lld is beyond 2^24 in magnitude (zero points are "
                          "carried in float32)",
                          fn, (long long)zero_point);
    clt_tensor *ts = NULL, *tz = NULL;
    st = scalar_tensor(x, scale, &ts);
    if (st == CLT_OK)
        st = scalar_tensor(x, (double)zero_point, &tz);
    if (st == CLT_OK)
        st = fake_quant_rec(fn, "FakeQuantizePerTensorAffineCachemaskBackward0", x, ts, tz,
                            false, x->numel, 1, quant_min, quant_max, out);
    clt_tensor_free(ts);
    clt_tensor_free(tz);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_fake_quantize_per_tensor_affine_t(const clt_tensor *x, const clt_tensor *scale,
                                                 const clt_tensor *zero_point,
                                                 int64_t quant_min, int64_t quant_max,
                                                 clt_tensor **out)
{
    static const char fn[] = "clt_fake_quantize_per_tensor_affine_t";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(scale, fn);
    CLT__REQUIRE_ARG(zero_point, fn);
    clt_status st = check_x(fn, x, false);
    if (st == CLT_OK)
        st = check_range(fn, quant_min, quant_max);
    if (st != CLT_OK)
        return st;
    clt_tensor *ts = NULL, *tz = NULL;
    st = qparam(fn, "scale", x, scale, -1, true, &ts);
    if (st == CLT_OK)
        st = qparam(fn, "zero_point", x, zero_point, -1, false, &tz);
    if (st == CLT_OK)
        st = fake_quant_rec(fn, "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0", x,
                            ts, tz, false, x->numel, 1, quant_min, quant_max, out);
    clt_tensor_free(ts);
    clt_tensor_free(tz);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_fake_quantize_per_channel_affine(const clt_tensor *x, const clt_tensor *scale,
                                                const clt_tensor *zero_point, int axis,
                                                int64_t quant_min, int64_t quant_max,
                                                clt_tensor **out)
{
    static const char fn[] = "clt_fake_quantize_per_channel_affine";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(scale, fn);
    CLT__REQUIRE_ARG(zero_point, fn);
    clt_status st = check_x(fn, x, false);
    if (st == CLT_OK)
        st = check_range(fn, quant_min, quant_max);
    if (st == CLT_OK)
        st = check_axis(fn, x, axis);
    if (st != CLT_OK)
        return st;
    if (scale->dtype != CLT_FLOAT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: scale of dtype %s (float32 needed)", fn,
                          clt_dtype_name(scale->dtype));
    clt_dtype zt = zero_point->dtype;
    if (zt != CLT_INT32 && zt != CLT_FLOAT32 && zt != CLT_FLOAT16)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Zero-point must be Int32, Float or Half, found %s", fn,
                          clt_dtype_name(zt));
    int64_t inner, nch;
    channels(x, axis, &inner, &nch);
    clt_tensor *ts = NULL, *tz = NULL;
    st = qparam(fn, "scale", x, scale, nch, true, &ts);
    if (st == CLT_OK)
        st = qparam(fn, "zero_point", x, zero_point, nch, false, &tz);
    if (st == CLT_OK)
        st = fake_quant_rec(fn, "FakeQuantizePerChannelAffineCachemaskBackward0", x, ts, tz,
                            clt__dtype_is_float(zero_point->dtype), inner, nch, quant_min,
                            quant_max, out);
    clt_tensor_free(ts);
    clt_tensor_free(tz);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* ---- learnable fake quantization (LSQ) --------------------------------------- */

/* The zero points as the learnable forms use them, float32: the
 * per-tensor forward rounds half to even and the per-tensor backward
 * rounds zp + 0.5 down toward zero (both after a clamp to the range, as
 * torch's _get_zero_point_from_tensor); the per-channel form rounds half
 * to even both ways. */
static clt_status learn_zero_point(const char *fn, const clt_tensor *zp, bool per_tensor_bw,
                                   int64_t qmin, int64_t qmax, clt_tensor **out)
{
    *out = NULL;
    clt_status st = CLT_OK;
    clt_tensor *a = NULL, *b = NULL;
    double lo = (double)(float)qmin, hi = (double)(float)qmax;
    if (per_tensor_bw) {
        CLT__TRY(clt__add_scalar_in(fn, zp, 0.5, &a));
        CLT__TRY(clt__clamp(a, &lo, &hi, &b, fn));
        CLT__TRY(clt__trunc_in(fn, b, out));
    } else {
        CLT__TRY(clt__round_in(fn, zp, &a));
        CLT__TRY(clt__clamp(a, &lo, &hi, out, fn));
    }
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

/* saved: x, scale, zero_point (float32); i[0] the axis (-1: per tensor),
 * i[1] quant_min, i[2] quant_max; s[0] grad_factor. */
static clt_status bw_learn(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *x = S(0), *scale = S(1), *zp = S(2);
    int axis = (int)n->i[0];
    int64_t qmin = n->i[1], qmax = n->i[2];
    if (!(qmin <= 0 && qmax >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: `quant_min` should be less than or equal to `quant_max`, and the "
                          "quantization range should include 0 ([%lld, %lld])",
                          fn, (long long)qmin, (long long)qmax);
    clt_status st = CLT_OK;
    clt_tensor *zb = NULL, *sc = NULL, *dx = NULL, *ds = NULL, *dz = NULL;
    clt_tensor *rs = NULL, *rz = NULL, *t = NULL;
    int64_t inner = x->numel, nch = 1;
    if (axis >= 0)
        channels(x, axis, &inner, &nch);
    CLT__TRY(learn_zero_point(fn, zp, axis < 0, qmin, qmax, &zb));
    CLT__TRY(clt__contiguous_as(fn, zb, CLT_FLOAT32, &t));
    clt_tensor_free(zb);
    zb = t;
    t = NULL;
    CLT__TRY(clt__contiguous_as(fn, scale, CLT_FLOAT32, &sc));
    CLT__TRY(clt__fake_quant_learn_grad(fn, x, g, sc, zb, inner, nch, qmin, qmax, n->s[0], &dx,
                                        &ds, &dz));
    if (axis < 0) {
        CLT__TRY(clt__sum(ds, &rs, fn));
        CLT__TRY(clt__sum(dz, &rz, fn));
    } else {
        /* sum over every dimension but axis, the last first */
        clt_tensor *cur[2] = {ds, dz};
        for (int k = 0; k < 2; k++) {
            clt_tensor *c = clt_tensor_retain(cur[k]);
            for (int d = x->ndim - 1; d >= 0 && st == CLT_OK; d--) {
                if (d == axis)
                    continue;
                st = clt__sum_dim(c, d, 0, &t, fn);
                clt_tensor_free(c);
                c = t;
                t = NULL;
            }
            if (k == 0)
                rs = c;
            else
                rz = c;
            if (st != CLT_OK)
                goto done;
        }
    }
    if (CLT__NEED(n, 0)) {
        gin[0] = dx;
        dx = NULL;
    }
    if (CLT__NEED(n, 1))
        CLT__TRY(clt__reshape(rs, scale->ndim, scale->shape, &gin[1], fn));
    if (CLT__NEED(n, 2))
        CLT__TRY(clt__reshape(rz, zp->ndim, zp->shape, &gin[2], fn));
done:
    clt_tensor_free(zb);
    clt_tensor_free(sc);
    clt_tensor_free(dx);
    clt_tensor_free(ds);
    clt_tensor_free(dz);
    clt_tensor_free(rs);
    clt_tensor_free(rz);
    clt_tensor_free(t);
    return st;
}

/* The learnable forms: per channel along axis when per_channel. */
static clt_status learnable(const char *fn, const char *name, const clt_tensor *x,
                            const clt_tensor *scale, const clt_tensor *zero_point,
                            bool per_channel, int axis, int64_t qmin, int64_t qmax,
                            double grad_factor, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(scale, fn);
    CLT__REQUIRE_ARG(zero_point, fn);
    int ax = -1;
    clt_status st = check_x(fn, x, true);
    if (st == CLT_OK)
        st = check_range(fn, qmin, qmax);
    if (st == CLT_OK && per_channel) {
        st = check_axis(fn, x, axis);
        ax = axis;
    }
    if (st != CLT_OK)
        return st;
    const clt_tensor *ps[2] = {scale, zero_point};
    const char *what[2] = {"scale", "zero_point"};
    for (int k = 0; k < 2; k++)
        if (ps[k]->dtype != CLT_FLOAT32)
            return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s of dtype %s (float32 needed, as "
                              "PyTorch's backward checks)",
                              fn, what[k], clt_dtype_name(ps[k]->dtype));
    int64_t inner = x->numel, nch = 1;
    if (ax >= 0)
        channels(x, ax, &inner, &nch);
    clt_tensor *ts = NULL, *tz = NULL, *zr = NULL;
    st = qparam(fn, "scale", x, scale, ax >= 0 ? nch : -1, true, &ts);
    if (st == CLT_OK)
        st = qparam(fn, "zero_point", x, zero_point, ax >= 0 ? nch : -1, false, &tz);
    if (st == CLT_OK)
        st = learn_zero_point(fn, tz, false, qmin, qmax, &zr);
    if (st == CLT_OK)
        st = clt__fake_quant(fn, x, ts, zr, false, inner, nch, qmin, qmax, out, NULL);
    clt__node *node = NULL;
    if (st == CLT_OK) {
        const clt_tensor *in[3] = {x, scale, zero_point};
        st = clt__record(st, out, name, bw_learn, 3, in, 3, in, &node);
    }
    if (node) {
        node->i[0] = ax;
        node->i[1] = qmin;
        node->i[2] = qmax;
        node->s[0] = grad_factor;
    }
    clt_tensor_free(ts);
    clt_tensor_free(tz);
    clt_tensor_free(zr);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_fake_quantize_learnable_per_tensor_affine(const clt_tensor *x,
                                                         const clt_tensor *scale,
                                                         const clt_tensor *zero_point,
                                                         int64_t quant_min, int64_t quant_max,
                                                         double grad_factor, clt_tensor **out)
{
    return learnable("clt_fake_quantize_learnable_per_tensor_affine",
                     "FakeQuantizeLearnablePerTensorAffineBackward0", x, scale, zero_point,
                     false, 0, quant_min, quant_max, grad_factor, out);
}

clt_status clt_fake_quantize_learnable_per_channel_affine(const clt_tensor *x,
                                                          const clt_tensor *scale,
                                                          const clt_tensor *zero_point, int axis,
                                                          int64_t quant_min, int64_t quant_max,
                                                          double grad_factor, clt_tensor **out)
{
    return learnable("clt_fake_quantize_learnable_per_channel_affine",
                     "FakeQuantizeLearnablePerChannelAffineBackward0", x, scale, zero_point,
                     true, axis, quant_min, quant_max, grad_factor, out);
}

/* ---- quantize_per_tensor, quantize_per_channel, dequantize ----------------------- */

/* torch's checks of quantize's input and dtype; the dtype's range. */
static clt_status check_quantize(const char *fn, const clt_tensor *x, clt_qdtype dtype,
                                 int64_t *qmin, int64_t *qmax)
{
    if (dtype != CLT_QUINT8 && dtype != CLT_QINT8 && dtype != CLT_QINT32)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unknown quantized dtype %d", fn,
                          (int)dtype);
    if (x->dtype != CLT_FLOAT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Quantize only works on Float Tensor, got %s", fn,
                          clt_dtype_name(x->dtype));
    *qmin = dtype == CLT_QUINT8 ? 0 : dtype == CLT_QINT8 ? -128 : INT32_MIN;
    *qmax = dtype == CLT_QUINT8 ? 255 : dtype == CLT_QINT8 ? 127 : INT32_MAX;
    return CLT_OK;
}

static clt_status check_zero_point(const char *fn, int64_t zero_point, int64_t qmin,
                                   int64_t qmax)
{
    if (zero_point < qmin || zero_point > qmax)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: zero_point %lld is %s bound", fn,
                          (long long)zero_point,
                          zero_point < qmin ? "below lower" : "above upper");
    if (fabs((double)zero_point) > ZP_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: zero_point %lld is beyond 2^24 in magnitude (zero points are "
                          "carried in float32)",
                          fn, (long long)zero_point);
    return CLT_OK;
}

/* The integer representation's dtype of a quantized dtype. */
static clt_dtype qtype(clt_qdtype dtype)
{
    return dtype == CLT_QUINT8 ? CLT_UINT8 : dtype == CLT_QINT8 ? CLT_INT8 : CLT_INT32;
}

/* torch's checks of per-channel scales and zero points for x along axis:
 * *scale a float32 copy and *zp an int64 copy, both contiguous, on x's
 * device; with zps, the zero points read back into a new host array
 * (*zps, freed with free). */
static clt_status channel_qparams(const char *fn, const clt_tensor *x, const clt_tensor *scales,
                                  const clt_tensor *zero_points, int axis, clt_tensor **scale,
                                  clt_tensor **zp, int64_t **zps)
{
    *scale = *zp = NULL;
    if (zps)
        *zps = NULL;
    clt_status st = clt__same_device(x, scales, fn);
    if (st == CLT_OK)
        st = clt__same_device(x, zero_points, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_float(scales->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: scale tensor must be floating point (got %s)", fn,
                          clt_dtype_name(scales->dtype));
    clt_dtype zt = zero_points->dtype;
    if (clt__dtype_is_float(zt) || clt__dtype_is_complex(zt) || zt == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: zero_points must be an integer tensor (got %s)", fn,
                          clt_dtype_name(zt));
    if (scales->ndim != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: scale tensor must have dimension 1",
                          fn);
    if (zero_points->ndim != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: zero_points tensor must have dimension 1", fn);
    if (scales->numel != zero_points->numel)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: number of elements in scales and zero_points must match "
                          "(%lld and %lld)",
                          fn, (long long)scales->numel, (long long)zero_points->numel);
    if (axis < 0 || axis >= x->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Channel axis out of range in per channel affine quantization. "
                          "Got: %d Expected: [0, %d)",
                          fn, axis, x->ndim);
    if (x->shape[axis] != scales->numel)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: length of scales must equal to channel (%lld and %lld)", fn,
                          (long long)scales->numel, (long long)x->shape[axis]);
    int64_t *host = NULL;
    clt_tensor *s = NULL, *z = NULL;
    CLT__TRY(clt__contiguous_as(fn, scales, CLT_FLOAT32, &s));
    CLT__TRY(clt__contiguous_as(fn, zero_points, CLT_INT64, &z));
    if (zps) {
        host = malloc((size_t)(z->numel > 0 ? z->numel : 1) * sizeof *host);
        if (host == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        CLT__TRY(clt_tensor_read(z, host, (size_t)z->numel * sizeof *host));
        *zps = host;
        host = NULL;
    }
    *scale = s;
    *zp = z;
    s = z = NULL;
done:
    free(host);
    clt_tensor_free(s);
    clt_tensor_free(z);
    return st;
}

clt_status clt_quantize_per_tensor(const clt_tensor *x, double scale, int64_t zero_point,
                                   clt_qdtype dtype, clt_tensor **out)
{
    static const char fn[] = "clt_quantize_per_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    int64_t qmin, qmax;
    clt_status st = check_quantize(fn, x, dtype, &qmin, &qmax);
    if (st == CLT_OK)
        st = check_zero_point(fn, zero_point, qmin, qmax);
    if (st != CLT_OK)
        return st;
    st = clt__quantize(fn, x, scale, zero_point, qtype(dtype), qmin, qmax, out);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_dequantize(const clt_tensor *q, double scale, int64_t zero_point,
                          clt_tensor **out)
{
    static const char fn[] = "clt_dequantize";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(q, fn);
    if (q->dtype != CLT_UINT8 && q->dtype != CLT_INT8 && q->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: a quantized tensor's integer representation is uint8 (quint8), "
                          "int8 (qint8) or int32 (qint32), not %s",
                          fn, clt_dtype_name(q->dtype));
    clt_status st = CLT_OK;
    clt_tensor *f = NULL, *d = NULL;
    /* q - zero_point in int32, wrapping as torch's qint32 path does */
    CLT__TRY(clt__to_dtype(q, CLT_INT32, &d, fn));
    CLT__TRY(clt__sub_scalar_in(fn, d, (double)zero_point, &f));
    clt_tensor_free(d);
    d = NULL;
    CLT__TRY(clt__to_dtype(f, CLT_FLOAT32, &d, fn));
    CLT__TRY(clt__mul_scalar_in(fn, d, (double)(float)scale, out));
done:
    clt_tensor_free(f);
    clt_tensor_free(d);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_quantize_per_channel(const clt_tensor *x, const clt_tensor *scales,
                                    const clt_tensor *zero_points, int axis, clt_qdtype dtype,
                                    clt_tensor **out)
{
    static const char fn[] = "clt_quantize_per_channel";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(scales, fn);
    CLT__REQUIRE_ARG(zero_points, fn);
    int64_t qmin, qmax, *zps = NULL, inner, nch;
    clt_tensor *s = NULL, *z = NULL, *zf = NULL;
    clt_status st = check_quantize(fn, x, dtype, &qmin, &qmax);
    if (st != CLT_OK)
        return st;
    CLT__TRY(channel_qparams(fn, x, scales, zero_points, axis, &s, &z, &zps));
    for (int64_t c = 0; c < z->numel; c++)
        CLT__TRY(check_zero_point(fn, zps[c], qmin, qmax));
    CLT__TRY(clt__contiguous_as(fn, z, CLT_FLOAT32, &zf));
    channels(x, axis, &inner, &nch);
    CLT__TRY(clt__quantize_channel(fn, x, s, zf, inner, nch, qtype(dtype), qmin, qmax, out));
done:
    free(zps);
    clt_tensor_free(s);
    clt_tensor_free(z);
    clt_tensor_free(zf);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_dequantize_per_channel(const clt_tensor *q, const clt_tensor *scales,
                                      const clt_tensor *zero_points, int axis, clt_tensor **out)
{
    static const char fn[] = "clt_dequantize_per_channel";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(q, fn);
    CLT__REQUIRE_ARG(scales, fn);
    CLT__REQUIRE_ARG(zero_points, fn);
    if (q->dtype != CLT_UINT8 && q->dtype != CLT_INT8 && q->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: a quantized tensor's integer representation is uint8 (quint8), "
                          "int8 (qint8) or int32 (qint32), not %s",
                          fn, clt_dtype_name(q->dtype));
    int64_t inner, nch;
    clt_tensor *s = NULL, *z = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(channel_qparams(fn, q, scales, zero_points, axis, &s, &z, NULL));
    channels(q, axis, &inner, &nch);
    CLT__TRY(clt__dequantize_channel(fn, q, s, z, inner, nch, out));
done:
    clt_tensor_free(s);
    clt_tensor_free(z);
    return st == CLT_OK ? clt__ok() : st;
}
