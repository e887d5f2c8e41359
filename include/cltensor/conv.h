/* cltensor/conv.h: 2-D convolution and pooling, like torch.nn.functional's
 * conv2d, max_pool2d, avg_pool2d and adaptive_avg_pool2d.  All are
 * differentiable (autograd.h).
 *
 * Inputs are [N, C, H, W] (batched) or [C, H, W] (unbatched: the result
 * has no batch dimension either), float32 or float64, in any layout;
 * avg_pool2d also takes int64, as PyTorch 1.13: each window's int64 sum
 * divided with truncation toward zero, -5 / 4 being -1.
 * Every operand lives on one device (CLT_ERR_DEVICE_MISMATCH otherwise).
 * Results are computed on the device in a fixed order: the same bits on
 * every run, and on every device whose arithmetic is the same.  Shapes that
 * do not fit give CLT_ERR_SHAPE_MISMATCH (or CLT_ERR_INVALID_ARGUMENT for
 * bad settings) with PyTorch's message, naming the shapes.  Each call
 * enqueues kernels without waiting.  New tensors: release with
 * clt_tensor_free. */
#ifndef CLTENSOR_CONV_H
#define CLTENSOR_CONV_H

/* Defined when the library has this header's operations and layers. */
#define CLTENSOR_HAS_CONV 1

#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Settings of clt_conv2d, as the arguments of torch.nn.functional.conv2d
 * ({height, width} pairs).  A NULL clt_conv2d_opts means PyTorch's
 * defaults: stride 1, padding 0, dilation 1, groups 1. */
typedef struct clt_conv2d_opts {
    int64_t stride[2];   /* > 0 */
    int64_t padding[2];  /* >= 0, zeros */
    int64_t dilation[2]; /* > 0 */
    int64_t groups;      /* > 0, divides C and O */
} clt_conv2d_opts;

/* PyTorch's defaults, for filling in a few fields:
 *     clt_conv2d_opts o = CLT_CONV2D_DEFAULTS; o.padding[0] = o.padding[1] = 1; */
#define CLT_CONV2D_DEFAULTS {{1, 1}, {0, 0}, {1, 1}, 1}

/* torch.nn.functional.conv2d(input, weight, bias, stride, padding,
 * dilation, groups): input [N, C, H, W] or [C, H, W], weight
 * [O, C / groups, kH, kW], bias [O] or NULL; the result is [N, O, Ho, Wo]
 * with Ho = (H + 2 padding - dilation (kH - 1) - 1) / stride + 1 (likewise
 * Wo).  All three of one dtype.  Runs as im2col + GEMM (on CPU devices
 * float32 through cltensor's own GEMM), unfolding the patches of as many
 * images at once as fit in 256 MiB; the backward pass takes as much again
 * for the input's gradient. */
CLT_API clt_status clt_conv2d(const clt_tensor *input, const clt_tensor *weight,
                              const clt_tensor *bias, const clt_conv2d_opts *opts,
                              clt_tensor **out);

/* torch.nn.functional.max_pool2d(input, kernel_size, stride, padding,
 * dilation, ceil_mode).  kernel {kH, kW} > 0 (required); stride NULL or
 * {0, 0} means the kernel size; padding NULL means 0 (pads with -inf, at
 * most half the kernel); dilation NULL means 1.  The maximum of each window
 * is its first maximum in row-major order, and NaN counts as the maximum
 * (of several NaNs the last, as PyTorch's CPU kernel has it); the gradient
 * goes to that element alone. */
/* Settings of the pooling layers (nn.h), as torch.nn.MaxPool2d's and
 * AvgPool2d's arguments after the kernel size.  A NULL clt_pool2d_opts
 * means PyTorch's defaults, CLT_POOL2D_DEFAULTS. */
typedef struct clt_pool2d_opts {
    int64_t stride[2];     /* {0, 0}: the kernel size */
    int64_t padding[2];    /* at most half the kernel */
    int64_t dilation[2];   /* max pooling only */
    int ceil_mode;         /* 1: the output size rounds up */
    int count_include_pad; /* avg pooling only */
} clt_pool2d_opts;

#define CLT_POOL2D_DEFAULTS {{0, 0}, {0, 0}, {1, 1}, 0, 1}

CLT_API clt_status clt_max_pool2d(const clt_tensor *input, const int64_t kernel[2],
                                  const int64_t stride[2], const int64_t padding[2],
                                  const int64_t dilation[2], int ceil_mode, clt_tensor **out);

/* torch.nn.functional.avg_pool2d(input, kernel_size, stride, padding,
 * ceil_mode, count_include_pad): stride and padding as for clt_max_pool2d.
 * count_include_pad 1 (PyTorch's default) divides by the window's size over
 * the padded input, 0 by the number of input elements it covers. */
CLT_API clt_status clt_avg_pool2d(const clt_tensor *input, const int64_t kernel[2],
                                  const int64_t stride[2], const int64_t padding[2],
                                  int ceil_mode, int count_include_pad, clt_tensor **out);

/* torch.nn.functional.adaptive_avg_pool2d(input, output_size): the result
 * is [N, C, Ho, Wo] (or [C, Ho, Wo]) for output_size {Ho, Wo} (>= 0; 0
 * gives an empty result; PyTorch's None for a dimension is its input size,
 * passed as such).  Output (i, j) is the mean of the input's rows
 * floor(i H / Ho) to ceil((i + 1) H / Ho) - 1 and the like columns, the
 * window's sum divided by its height, then by its width, as PyTorch's CPU
 * kernel: windows overlap where Ho does not divide H, and an output larger
 * than the input repeats pixels; {1, 1} is the global average pool (for
 * which PyTorch calls mean(), whose other order of summation may round the
 * last bit otherwise).  float32 or float64 only (PyTorch 1.13 refuses
 * int64 here too).  The input's last two sizes must be positive (the batch
 * and, in 4-D, the channels may be 0), and Ho * H and Wo * W must fit
 * int64.  The gradient of each input pixel sums, over the windows that
 * cover it, the output's gradient divided by the window's height and width
 * (zeros for an empty output, whose backward PyTorch refuses). */
CLT_API clt_status clt_adaptive_avg_pool2d(const clt_tensor *input, const int64_t output_size[2],
                                           clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
