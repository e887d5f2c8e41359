/* quant.cl: fake quantization and quantization (torch.fake_quantize_*,
 * torch._fake_quantize_learnable_*'s gradients, torch.quantize_per_tensor)
 * over contiguous x of dtype T (float32, float64; float16 stored, computed
 * in float), step for step as PyTorch 1.13's CPU kernels compute them:
 * x times the float reciprocal of the scale, rounded half to even (rint,
 * torch's nearbyint), the zero point added, then clamped.  Element i
 * belongs to channel (i / inner) % nch; scale and zp are float32 arrays of
 * nch elements (one for per-tensor quantization). */
#pragma OPENCL FP_CONTRACT OFF

/* The rounded value as the integer torch's kernels clamp: for float32
 * and float16 x a static_cast<int64_t> as x86 does it, where NaN and
 * values outside int64's range give INT64_MIN (the "integer indefinite"),
 * which the clamp takes to quant_min; for float64 x torch clamps the
 * double itself, so NaN gives quant_min and large values saturate. */
inline long q_to_long(T_C v)
{
#if T_ID == 1
    if (isnan(v))
        return LONG_MIN;
    if (v >= (T_C)9223372036854775808.0)
        return LONG_MAX;
#endif
    if (!(v >= (T_C)-9223372036854775808.0 && v < (T_C)9223372036854775808.0))
        return LONG_MIN;
    return (long)v;
}

/* out = (clamp(q, qmin, qmax) - zp) * scale with q = zp + rint(x * inv),
 * or rint(zp + x * inv) for floating zero points (zp_float: torch's
 * per-channel kernel rounds after adding those), mask = qmin <= q <= qmax
 * (the straight-through gradient's mask). */
CLT_KERNEL(fake_quant)(__global T *out, __global uchar *mask, __global const T *x,
                       __global const float *scale, __global const float *zp, ulong inner,
                       ulong nch, long qmin, long qmax, int zp_float, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong c = (i / inner) % nch;
    float s = scale[c];
    float inv = 1.0f / s;
    T_C z = (T_C)zp[c];
    T_C v = T_LOAD(x, i) * (T_C)inv;
    long q = q_to_long(zp_float ? rint(z + v) : z + rint(v));
    long k = clamp(q, qmin, qmax);
    T_STORE(out, i, ((T_C)k - z) * (T_C)s);
    mask[i] = (uchar)(q >= qmin && q <= qmax);
}

/* torch.quantize_per_tensor's integer representation: clamp(zp + rint(x *
 * inv)) into Q (uint8 for quint8, int32 for qint32), qmin and qmax the
 * range of the quantized type. */
CLT_KERNEL(quantize)(__global Q *out, __global const T *x, float inv, float zp, long qmin,
                     long qmax, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    long q = q_to_long((T_C)zp + rint(T_LOAD(x, i) * (T_C)inv));
    Q_STORE(out, i, (Q_C)clamp(q, qmin, qmax));
}

/* torch.quantize_per_channel's integer representation: as quantize with
 * the reciprocal of scale[c] and zp[c] of element i's channel c. */
CLT_KERNEL(quantize_channel)(__global Q *out, __global const T *x, __global const float *scale,
                             __global const float *zp, ulong inner, ulong nch, long qmin,
                             long qmax, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong c = (i / inner) % nch;
    float inv = 1.0f / scale[c];
    long q = q_to_long((T_C)zp[c] + rint(T_LOAD(x, i) * (T_C)inv));
    Q_STORE(out, i, (Q_C)clamp(q, qmin, qmax));
}

/* The dequantization of a per-channel quantized tensor's integer
 * representation q (Q): float32 (q - zp[c]) * scale[c], the difference
 * taken in long (torch's int64). */
CLT_KERNEL(dequantize_channel)(__global float *out, __global const Q *q,
                               __global const float *scale, __global const long *zp,
                               ulong inner, ulong nch, ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong c = (i / inner) % nch;
    out[i] = (float)((long)Q_LOAD(q, i) - zp[c]) * scale[c];
}

/* The elementwise part of the learnable fake quantization's backward
 * (PyTorch's fake_quantize_learnable_*_grad_kernel_cpu, float32 only): dx
 * the masked gradient, ds and dz each element's share of the scale's and
 * the zero point's gradients (summed by the caller), zp already rounded as
 * the backward rounds it. */
CLT_KERNEL(fake_quant_learn_grad)(__global float *dx, __global float *ds, __global float *dz,
                                  __global const float *x, __global const float *dy,
                                  __global const float *scale, __global const float *zp,
                                  ulong inner, ulong nch, long qmin, long qmax, float gf,
                                  ulong n)
{
    ulong i = get_global_id(0);
    if (i >= n)
        return;
    ulong c = (i / inner) % nch;
    float s = scale[c];
    float inv = 1.0f / s;
    float z = zp[c];
    float small = (float)qmin - z, big = (float)qmax - z;
    float xv = x[i], g = dy[i];
    long xq = q_to_long(rint(z + xv * inv));
    bool inside = xq >= qmin && xq <= qmax;
    dx[i] = g * (inside ? 1.0f : 0.0f);
    float xfq = ((float)clamp(xq, qmin, qmax) - z) * s;
    if (!inside) {
        dz[i] = g * -1.0f * s * gf;
        ds[i] = (xq < qmin ? g * small : g * big) * gf;
    } else {
        dz[i] = 0.0f;
        ds[i] = g * (xfq - xv) * inv * gf;
    }
}
