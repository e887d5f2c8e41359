/* cltensor/quant.h: quantization-aware training as PyTorch 1.13's
 * torch.ao.quantization does it on float tensors: fake quantization
 * (torch.fake_quantize_per_tensor_affine, per_channel_affine and the
 * learnable LSQ forms), the observers that choose scales and zero points
 * (MinMaxObserver, MovingAverageMinMaxObserver, PerChannelMinMaxObserver,
 * MovingAveragePerChannelMinMaxObserver, HistogramObserver), the
 * FakeQuantize module, and
 * torch.quantize_per_tensor / dequantize.
 *
 * Quantized dtypes.  cltensor has no quantized tensor type: a quantized
 * tensor is its integer representation (what torch's int_repr() gives),
 * uint8 for quint8, int8 for qint8 and int32 for qint32, with the scale
 * and zero point kept by the caller.
 *
 * Arithmetic.  As PyTorch's CPU kernels: the scale is rounded to float32,
 * x is multiplied by 1.0f / scale (not divided), rounded half to even
 * (nearbyint), the zero point added, the result clamped to [quant_min,
 * quant_max]; a NaN or a value beyond int64's range becomes quant_min, as
 * on x86.  Zero points are carried in float32, exact up to 2^24 in
 * magnitude (a larger scalar zero point is refused).
 *
 * Every function returning tensors returns new ones (the caller's, freed
 * with clt_tensor_free) and sets every *out to NULL on failure, with a
 * message (clt_last_error) naming the call.  Thread-safe as the rest of
 * the ops; a module is used by one thread at a time. */
#ifndef CLTENSOR_QUANT_H
#define CLTENSOR_QUANT_H

#include <cltensor/common.h>
#include <cltensor/device.h>
#include <cltensor/nn.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* torch.quint8, torch.qint8, torch.qint32 as quantization ranges: 0 .. 255,
 * -128 .. 127, -2^31 .. 2^31 - 1. */
typedef enum clt_qdtype { CLT_QUINT8, CLT_QINT8, CLT_QINT32 } clt_qdtype;

/* torch.per_tensor_affine, per_tensor_symmetric, per_channel_affine,
 * per_channel_symmetric (per_channel_affine_float_qparams is not offered). */
typedef enum clt_qscheme {
    CLT_PER_TENSOR_AFFINE,
    CLT_PER_TENSOR_SYMMETRIC,
    CLT_PER_CHANNEL_AFFINE,
    CLT_PER_CHANNEL_SYMMETRIC
} clt_qscheme;

/* ---- fake quantization --------------------------------------------------- */

/* torch.fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min,
 * quant_max): (clamp(q, quant_min, quant_max) - zero_point) * scale with
 * q = zero_point + nearbyint(x * (1.0f / scale)), in x's dtype (float32,
 * float64 or float16; others CLT_ERR_DTYPE_MISMATCH, bfloat16 too, as torch
 * 1.13's "not implemented for 'BFloat16'", and so in the per-channel form).  Gradient
 * straight-through where quant_min <= q <= quant_max and 0 elsewhere
 * (FakeQuantizePerTensorAffineCachemaskBackward0); none for scale and
 * zero_point.  CLT_ERR_INVALID_ARGUMENT, with torch's words, when
 * quant_min > quant_max or zero_point is outside [quant_min, quant_max];
 * also for |zero_point| > 2^24.  A scale of 0 gives zeros, as torch's. */
CLT_API clt_status clt_fake_quantize_per_tensor_affine(const clt_tensor *x, double scale,
                                                       int64_t zero_point, int64_t quant_min,
                                                       int64_t quant_max, clt_tensor **out);

/* The same with scale and zero_point as tensors of one element (0-d or
 * [1]; floating scale, integer or floating zero_point, on x's device), as
 * torch's overload with tensor qparams (what FakeQuantize calls); they are
 * read on the device, so zero_point is not checked against the range and
 * gets no gradient, nor does scale. */
CLT_API clt_status clt_fake_quantize_per_tensor_affine_t(const clt_tensor *x,
                                                         const clt_tensor *scale,
                                                         const clt_tensor *zero_point,
                                                         int64_t quant_min, int64_t quant_max,
                                                         clt_tensor **out);

/* torch.fake_quantize_per_channel_affine(x, scale, zero_point, axis,
 * quant_min, quant_max): as above with scale[c] and zero_point[c] for the
 * elements of index c along axis (0 <= axis < x's dimensions, torch's
 * "`axis` must be between 0 and number of dimensions of input"; no
 * negative axes).  scale float32 and zero_point int32, float32 or float16
 * (torch's "Zero-point must be Int32, Float or Half"; else
 * CLT_ERR_DTYPE_MISMATCH), both 1-D of x's size along axis (else
 * "dimensions of scale and zero-point are not consistent with input
 * tensor"), on x's device.  As torch's kernel, a floating zero point is
 * added before rounding: q = nearbyint(zero_point + x * (1.0f / scale)),
 * and is not rounded itself (the output computed in x's dtype where torch
 * computes in double: a non-integer zero point may differ in the last
 * bit).  Gradient: x's masked as above
 * (FakeQuantizePerChannelAffineCachemaskBackward0); none for scale and
 * zero_point.  (Difference: the zero points are not read back to check
 * them against the range.) */
CLT_API clt_status clt_fake_quantize_per_channel_affine(const clt_tensor *x,
                                                        const clt_tensor *scale,
                                                        const clt_tensor *zero_point, int axis,
                                                        int64_t quant_min, int64_t quant_max,
                                                        clt_tensor **out);

/* torch._fake_quantize_learnable_per_tensor_affine(x, scale, zero_point,
 * quant_min, quant_max, grad_factor) (LSQ): the forward of
 * clt_fake_quantize_per_tensor_affine with scale and the zero point
 * nearbyint(zero_point) clamped to the range, from float32 tensors of one
 * element; x float32.  Gradients (FakeQuantizeLearnablePerTensorAffineBackward0),
 * torch's formulas with the zero point rounded as zero_point + 0.5
 * truncated (torch's backward rounds so), q = nearbyint(zp + x / s):
 * x: g inside the range, 0 outside; scale: sum of g (fq(x) - x) / s
 * inside, g (quant_min - zp) below, g (quant_max - zp) above, times
 * grad_factor; zero_point: sum of -g s grad_factor outside, 0 inside.
 * The backward fails, as torch's, unless quant_min <= 0 <= quant_max.
 * (Difference: torch takes the first element of longer scale and
 * zero_point tensors and accepts other dtypes until the backward; here
 * they must hold one float32 element, CLT_ERR_INVALID_ARGUMENT or
 * CLT_ERR_DTYPE_MISMATCH.) */
CLT_API clt_status clt_fake_quantize_learnable_per_tensor_affine(
    const clt_tensor *x, const clt_tensor *scale, const clt_tensor *zero_point,
    int64_t quant_min, int64_t quant_max, double grad_factor, clt_tensor **out);

/* torch._fake_quantize_learnable_per_channel_affine: per channel along
 * axis, the zero points rounded (half to even) and clamped to the range
 * in the forward and the backward alike; scale and zero_point float32
 * [x's size along axis], x float32, 0 <= axis < x's dimensions.  Gradients as the per-tensor form,
 * the scale's and zero point's summed per channel
 * (FakeQuantizeLearnablePerChannelAffineBackward0). */
CLT_API clt_status clt_fake_quantize_learnable_per_channel_affine(
    const clt_tensor *x, const clt_tensor *scale, const clt_tensor *zero_point, int axis,
    int64_t quant_min, int64_t quant_max, double grad_factor, clt_tensor **out);

/* ---- quantization ---------------------------------------------------------- */

/* torch.quantize_per_tensor(x, scale, zero_point, dtype).int_repr():
 * clamp(zero_point + nearbyint(x * (1.0f / scale))) to the range of dtype,
 * as uint8 (CLT_QUINT8, 0 .. 255), int8 (CLT_QINT8, -128 .. 127) or int32
 * (CLT_QINT32); x float32 (torch's "Quantize only works on Float Tensor";
 * else CLT_ERR_DTYPE_MISMATCH).  The result is the integer representation
 * itself (no quantized tensor type: keep scale and zero_point beside it).
 * A zero point outside the dtype's range or beyond 2^24 in magnitude is
 * refused (CLT_ERR_INVALID_ARGUMENT).
 * The scale is not checked (0 gives zero_point + nearbyint(NaN or inf),
 * clamped, as torch's).  No gradient: an x that requires grad gives a
 * result that does not. */
CLT_API clt_status clt_quantize_per_tensor(const clt_tensor *x, double scale,
                                           int64_t zero_point, clt_qdtype dtype,
                                           clt_tensor **out);

/* torch's dequantize() of a per-tensor quantized tensor given as its
 * integer representation q (uint8, int8 or int32; others
 * CLT_ERR_DTYPE_MISMATCH):
 * float32 (q - zero_point) * scale, the difference taken in int32 (it
 * wraps, as torch's qint32 path does) and the scale rounded to float32.
 * No gradient. */
CLT_API clt_status clt_dequantize(const clt_tensor *q, double scale, int64_t zero_point,
                                  clt_tensor **out);

/* torch.quantize_per_channel(x, scales, zero_points, axis, dtype).int_repr():
 * as clt_quantize_per_tensor with scales[c] and zero_points[c] for the
 * elements of index c along axis.  scales floating (rounded to float32, as
 * torch's kernel does), zero_points integer, both 1-D of x's size along
 * axis, on x's device; 0 <= axis < x's dimensions (no negative axes, as
 * torch).  Torch's checks and words: CLT_ERR_INVALID_ARGUMENT for "scale
 * tensor must have dimension 1", "number of elements in scales and
 * zero_points must match", "Channel axis out of range", "length of scales
 * must equal to channel", a zero point outside the dtype's range (the zero
 * points are read back to check them) or beyond 2^24 in magnitude;
 * CLT_ERR_DTYPE_MISMATCH for an x not float32 or scales not floating.
 * (Difference: torch also takes floating zero points, which make the
 * per_channel_affine_float_qparams scheme; here they are refused,
 * CLT_ERR_DTYPE_MISMATCH.)  No gradient. */
CLT_API clt_status clt_quantize_per_channel(const clt_tensor *x, const clt_tensor *scales,
                                            const clt_tensor *zero_points, int axis,
                                            clt_qdtype dtype, clt_tensor **out);

/* torch's dequantize() of a per-channel quantized tensor given as its
 * integer representation q (uint8, int8 or int32; others
 * CLT_ERR_DTYPE_MISMATCH), scales, zero_points and axis checked as
 * clt_quantize_per_channel's (the zero points not against a range):
 * float32 (q - zero_points[c]) * scales[c], the difference taken in int64
 * as torch's.  (Difference: torch multiplies by the scale in float64 and
 * rounds to float32 after; here the scale is rounded to float32 first and
 * the difference converted to float32, which is the same result for
 * scales that are float32 values and differences below 2^24 in
 * magnitude.)  No gradient. */
CLT_API clt_status clt_dequantize_per_channel(const clt_tensor *q, const clt_tensor *scales,
                                              const clt_tensor *zero_points, int axis,
                                              clt_tensor **out);

/* ---- observers ------------------------------------------------------------- */

typedef enum clt_observer_kind {
    CLT_MIN_MAX_OBSERVER,                           /* MinMaxObserver */
    CLT_MOVING_AVERAGE_MIN_MAX_OBSERVER,            /* MovingAverageMinMaxObserver */
    CLT_PER_CHANNEL_MIN_MAX_OBSERVER,               /* PerChannelMinMaxObserver */
    CLT_MOVING_AVERAGE_PER_CHANNEL_MIN_MAX_OBSERVER, /* MovingAveragePerChannelMinMaxObserver */
    CLT_HISTOGRAM_OBSERVER                           /* HistogramObserver */
} clt_observer_kind;

/* An observer's settings, as the observer classes' arguments. */
typedef struct clt_observer_opts {
    clt_observer_kind kind;
    clt_qdtype dtype;          /* CLT_QUINT8 by default */
    clt_qscheme qscheme;       /* per-tensor kinds take a per-tensor scheme, the others a
                                * per-channel one */
    int reduce_range;          /* 1: the range halved (quint8 0 .. 127, qint8 -64 .. 63) */
    int has_range;             /* 1: quant_min and quant_max below are given */
    int64_t quant_min, quant_max;
    double averaging_constant; /* the moving-average kinds: 0.01 */
    int ch_axis;               /* the per-channel kinds: 0 */
    int64_t num_channels;      /* the per-channel kinds: > 0, see clt_observer */
    double eps;                /* the smallest scale: torch.finfo(torch.float32).eps */
    int64_t bins;              /* HistogramObserver: 2048 */
    int64_t upsample_rate;     /* HistogramObserver: 128 */
} clt_observer_opts;

/* PyTorch's defaults for a kind:
 *     clt_observer_opts o = CLT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER); */
#define CLT_OBSERVER_PER_CHANNEL_(kind)                                              \
    ((kind) == CLT_PER_CHANNEL_MIN_MAX_OBSERVER ||                                    \
     (kind) == CLT_MOVING_AVERAGE_PER_CHANNEL_MIN_MAX_OBSERVER)
#define CLT_OBSERVER_DEFAULTS(kind)                                                   \
    {(kind), CLT_QUINT8,                                                             \
     CLT_OBSERVER_PER_CHANNEL_(kind) ? CLT_PER_CHANNEL_AFFINE : CLT_PER_TENSOR_AFFINE,  \
     0, 0, 0, 0, 0.01, 0, 0, 1.1920928955078125e-07, 2048, 128}

/* The same for weights, as torch's default_weight_observer and
 * default_per_channel_weight_observer: qint8 with the symmetric scheme
 * (per tensor or per channel by kind), so that the zero point is 0:
 *     clt_observer_opts o = CLT_WEIGHT_OBSERVER_DEFAULTS(CLT_MIN_MAX_OBSERVER); */
#define CLT_WEIGHT_OBSERVER_DEFAULTS(kind)                                            \
    {(kind), CLT_QINT8,                                                              \
     CLT_OBSERVER_PER_CHANNEL_(kind) ? CLT_PER_CHANNEL_SYMMETRIC                      \
                                     : CLT_PER_TENSOR_SYMMETRIC,                      \
     0, 0, 0, 0, 0.01, 0, 0, 1.1920928955078125e-07, 2048, 128}

/* A new observer module on dev (opts required): its forward records the
 * running minimum and maximum of what it is given (a detached float32
 * copy; an empty x records nothing) and returns x itself (a new handle).
 * Buffers, in torch's names and order: "eps" float32 [1], "min_val" and
 * "max_val" float32 (0-d, +inf and -inf, for the per-tensor kinds;
 * [num_channels] for the per-channel ones).  MinMaxObserver keeps
 * min(min_val, min(x)) (NaN propagates); the moving-average kinds
 * min_val + averaging_constant (min(x) - min_val) after the first
 * observation; the per-channel kinds do so per index along ch_axis.
 *
 * The range: torch's calculate_qmin_qmax: the dtype's (reduce_range
 * halving it), or with has_range the given one (which must hold 0 and
 * have quant_min < quant_max) moved to start at 0 (at -len/2 for qint8)
 * and halved with reduce_range.
 *
 * Refused (CLT_ERR_INVALID_ARGUMENT): a qscheme of the other granularity,
 * per_tensor_symmetric with reduce_range for quint8 (torch's "Cannot
 * reduce range for symmetric quantization for quint8"), an averaging
 * constant outside (0, 1], a range longer than the dtype's, eps not
 * positive, num_channels < 1 for the per-channel kinds.  (Difference:
 * torch's per-channel observers start with empty min_val and max_val that
 * take the channel count of their first input; here their size is
 * num_channels from the start, +inf and -inf until the first observation,
 * and an input whose size along ch_axis differs is refused.)
 *
 * CLT_HISTOGRAM_OBSERVER (HistogramObserver(bins, upsample_rate, dtype,
 * qscheme, reduce_range, quant_min, quant_max, eps), per-tensor schemes
 * only): buffers "eps", "histogram" (float32 [bins], zeros), "min_val"
 * and "max_val" (float32 0-d, +inf and -inf), torch's order.  Its forward
 * is torch 1.13's, on the host (the input is read back as float32 and
 * binned there): the first batch, or one after a range of one value,
 * takes the input's min and max and torch.histc(x, bins, int(min),
 * int(max)) (the ends truncated to integers, as torch does: values
 * outside them are not counted, and equal integer ends take the data's
 * own range); a later batch widens the range to a whole multiple
 * (downsample rate) of the old one's bins * upsample_rate grid, bins x
 * over it as above and adds the old histogram, repeated upsample_rate
 * times at its offset in the grid and summed every downsample rate in
 * double (_combine_histograms), all in torch's float32 arithmetic
 * (histc's last edge as its AVX2 linspace makes it).  calculate_qparams
 * runs _non_linear_param_search (the L2 search that drops tail bins while
 * the quantization error into 2^bits bins falls) and _calculate_qparams
 * on the range it keeps.  Refused: bins < 1, upsample_rate < 1, bins *
 * upsample_rate > 2^31; an input with NaN, infinities or values past
 * int64 (torch's forward raises ValueError or OverflowError there, after
 * it has overwritten min_val and max_val; here the state is kept), and a
 * batch whose upsampled histogram does not fit the combined grid (torch
 * fails in _combine_histograms).  The search's sums are torch.sum's
 * float32 sums in the order of its AVX2 kernel.  (Differences: torch
 * allocates the bins * downsample rate grid and runs out of memory when
 * the range grows by large factors, which here succeeds; a float64 input
 * is rounded to float32 before it is binned, where torch bins float64
 * values.)  Use it in clt_fake_quantize_layer too
 * (FakeQuantize(observer=HistogramObserver)).
 * New module: release with clt_module_free. */
CLT_API clt_status clt_observer(clt_device *dev, const clt_observer_opts *opts,
                                clt_module **out);

/* observer.calculate_qparams() of an observer of clt_observer or of the
 * one inside a FakeQuantize of clt_fake_quantize_layer: *scale float32 and
 * *zero_point (int32 for the affine schemes, int64 for the symmetric ones,
 * as torch's), both [1] for the per-tensor kinds and [num_channels] for
 * the per-channel ones, with torch's formulas: min_neg = min(min_val, 0),
 * max_pos = max(max_val, 0); affine: scale = max(( max_pos - min_neg) /
 * (quant_max - quant_min), eps), zero_point = clamp(quant_min -
 * round(min_neg / scale)); symmetric: scale = max(max(-min_neg, max_pos) /
 * ((quant_max - quant_min) / 2), eps), zero_point 0, or 128 for quint8
 * (the range's rounded-down midpoint with has_range).  Before any
 * observation: scale [1.0] and zero_point [0] (int64), as torch's.  New
 * tensors; CLT_ERR_INVALID_ARGUMENT for another module. */
CLT_API clt_status clt_observer_calculate_qparams(const clt_module *m, clt_tensor **scale,
                                                  clt_tensor **zero_point);

/* The range an observer (or a FakeQuantize's) quantizes to, into *quant_min
 * and *quant_max (torch's observer.quant_min, quant_max). */
CLT_API clt_status clt_observer_quant_range(const clt_module *m, int64_t *quant_min,
                                            int64_t *quant_max);

/* ---- FakeQuantize ------------------------------------------------------------ */

/* torch.ao.quantization.FakeQuantize(observer, quant_min, quant_max,
 * **observer_kwargs) with the observer of opts (NULL: torch's default, a
 * MovingAverageMinMaxObserver with its defaults), on dev.  Buffers in
 * torch's names and order: "fake_quant_enabled" and "observer_enabled"
 * (uint8 [1], 1), "scale" (float32 [1], 1.0) and "zero_point" (int32 [1],
 * 0), both [num_channels] for a per-channel observer (torch resizes them
 * at the first forward), then the child
 * "activation_post_process" (the observer) with its own.  Forward: when
 * the observer is enabled, it observes x and scale and zero_point take
 * its calculate_qparams; when fake quantization is enabled the result is
 * clt_fake_quantize_per_tensor_affine_t (per_channel_affine along
 * ch_axis for a per-channel observer) of x with them and the observer's
 * range, else x itself (a new handle).  Gradients flow to x as the fake
 * quantization's.  Use it on activations (after a layer in a Sequential,
 * or from a forward hook) and on weights (from a custom forward).  With
 * has_range the range must lie in the dtype's (torch's asserts).  New
 * module: release with clt_module_free. */
CLT_API clt_status clt_fake_quantize_layer(clt_device *dev, const clt_observer_opts *opts,
                                           clt_module **out);

/* FakeQuantize.enable_fake_quant(on) / disable_fake_quant() and
 * enable_observer(on) / disable_observer(): set the buffers
 * fake_quant_enabled and observer_enabled to 1 or 0 (on is 0 or not).
 * CLT_ERR_INVALID_ARGUMENT for a module other than a FakeQuantize. */
CLT_API clt_status clt_fake_quantize_enable_fake_quant(clt_module *m, int on);
CLT_API clt_status clt_fake_quantize_enable_observer(clt_module *m, int on);

#ifdef __cplusplus
}
#endif

#endif
