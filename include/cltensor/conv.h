/* cltensor/conv.h: convolution, pooling and upsampling, like
 * torch.nn.functional's conv1d, conv2d, conv3d, conv_transpose1d,
 * conv_transpose2d, conv_transpose3d, max_pool1d,
 * max_pool2d, avg_pool1d, avg_pool2d, adaptive_avg_pool2d,
 * adaptive_max_pool1d/2d, max_unpool1d/2d, lp_pool1d/2d, max_pool3d,
 * avg_pool3d, adaptive_avg_pool1d/3d, adaptive_max_pool3d, max_unpool3d,
 * interpolate, grid_sample and affine_grid, and the rearrangements
 * pixel_shuffle, pixel_unshuffle,
 * channel_shuffle, unfold and fold.  All are
 * differentiable (autograd.h).
 *
 * Inputs are [N, C, H, W] (batched) or [C, H, W] (unbatched: the result
 * has no batch dimension either; conv1d's, conv_transpose1d's and the
 * 1-D pools' [N, C, L] or [C, L]; conv3d's and conv_transpose3d's
 * [N, C, D, H, W] or [C, D, H, W];
 * clt_interpolate's 4-D only, clt_interpolate_nd's and grid_sample's as
 * they say), float32 or float64, in any layout; float16 too (every op of
 * this header but pixel and channel shuffles, which move any dtype,
 * computes in float32 from the widened operands and rounds the result to
 * half once, as torch's GPU kernels accumulate in float; the casts are
 * recorded, so gradients come back in half; indices stay int64);
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

#include <cltensor/random.h>
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

/* Settings of clt_conv1d, as torch.nn.functional.conv1d's arguments.  A
 * NULL clt_conv1d_opts means PyTorch's defaults, CLT_CONV1D_DEFAULTS:
 * stride 1, padding 0, dilation 1, groups 1. */
typedef struct clt_conv1d_opts {
    int64_t stride;   /* > 0 */
    int64_t padding;  /* >= 0, zeros */
    int64_t dilation; /* > 0 */
    int64_t groups;   /* > 0, divides C and O */
} clt_conv1d_opts;

#define CLT_CONV1D_DEFAULTS {1, 0, 1, 1}

/* torch.nn.functional.conv1d(input, weight, bias, stride, padding,
 * dilation, groups): input [N, C, L] or [C, L], weight [O, C / groups, k],
 * bias [O] or NULL; the result is [N, O, Lo] (or [O, Lo]) with
 * Lo = (L + 2 padding - dilation (k - 1) - 1) / stride + 1.  Computed by
 * clt_conv2d on the views [N, C, 1, L] and [O, C / groups, 1, k]: the same
 * arithmetic, the same bits, and conv2d's messages (sizes with the 1
 * inserted). */
CLT_API clt_status clt_conv1d(const clt_tensor *input, const clt_tensor *weight,
                              const clt_tensor *bias, const clt_conv1d_opts *opts,
                              clt_tensor **out);

/* Settings of clt_conv_transpose2d, as torch.nn.functional.conv_transpose2d's
 * arguments, in its order ({height, width} pairs).  A NULL opts means
 * PyTorch's defaults, CLT_CONV_TRANSPOSE2D_DEFAULTS: stride 1, padding 0,
 * output_padding 0, groups 1, dilation 1. */
typedef struct clt_conv_transpose2d_opts {
    int64_t stride[2];         /* > 0 */
    int64_t padding[2];        /* >= 0: taken off both sides of the output */
    int64_t output_padding[2]; /* >= 0, below the stride or the dilation */
    int64_t groups;            /* > 0, divides both channel counts */
    int64_t dilation[2];       /* > 0 */
} clt_conv_transpose2d_opts;

#define CLT_CONV_TRANSPOSE2D_DEFAULTS {{1, 1}, {0, 0}, {0, 0}, 1, {1, 1}}

/* torch.nn.functional.conv_transpose2d(input, weight, bias, stride,
 * padding, output_padding, groups, dilation), the gradient of conv2d with
 * respect to its input: input [N, Cin, H, W] or [Cin, H, W] (H, W and Cin
 * positive), weight [Cin, Cout / groups, kH, kW] (PyTorch's layout), bias
 * [Cout] or NULL; the result is [N, Cout, Ho, Wo] with Ho = (H - 1) stride
 * - 2 padding + dilation (kH - 1) + output_padding + 1 (likewise Wo), which
 * must be positive.  Runs as conv2d's backward pass (GEMM, then col2im),
 * unfolding as many images at once as fit in 256 MiB. */
CLT_API clt_status clt_conv_transpose2d(const clt_tensor *input, const clt_tensor *weight,
                                        const clt_tensor *bias,
                                        const clt_conv_transpose2d_opts *opts, clt_tensor **out);

/* Settings of clt_conv3d, as torch.nn.functional.conv3d's arguments
 * ({depth, height, width} triples).  A NULL clt_conv3d_opts means
 * PyTorch's defaults, CLT_CONV3D_DEFAULTS: stride 1, padding 0, dilation
 * 1, groups 1. */
typedef struct clt_conv3d_opts {
    int64_t stride[3];   /* > 0 */
    int64_t padding[3];  /* >= 0, zeros */
    int64_t dilation[3]; /* > 0 */
    int64_t groups;      /* > 0, divides C and O */
} clt_conv3d_opts;

#define CLT_CONV3D_DEFAULTS {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1}

/* torch.nn.functional.conv3d(input, weight, bias, stride, padding,
 * dilation, groups): input [N, C, D, H, W] or [C, D, H, W], weight
 * [O, C / groups, kD, kH, kW], bias [O] or NULL; the result is
 * [N, O, Do, Ho, Wo] (or [O, Do, Ho, Wo]) with Do = (D + 2 padding -
 * dilation (kD - 1) - 1) / stride + 1 (likewise Ho, Wo).  All three of one
 * dtype.  The same im2col + GEMM as clt_conv2d (patch rows Cg kD kH kW,
 * columns Do Ho Wo), with its memory bound, order of summation and
 * messages (sizes in triples).  Differentiable in input, weight and bias,
 * twice too (grad_fn ConvolutionBackward0, as torch).  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_conv3d(const clt_tensor *input, const clt_tensor *weight,
                              const clt_tensor *bias, const clt_conv3d_opts *opts,
                              clt_tensor **out);

/* Settings of clt_conv_transpose1d, as
 * torch.nn.functional.conv_transpose1d's arguments in its order.  A NULL
 * opts means PyTorch's defaults, CLT_CONV_TRANSPOSE1D_DEFAULTS: stride 1,
 * padding 0, output_padding 0, groups 1, dilation 1. */
typedef struct clt_conv_transpose1d_opts {
    int64_t stride;         /* > 0 */
    int64_t padding;        /* >= 0: taken off both ends of the output */
    int64_t output_padding; /* >= 0, below the stride or the dilation */
    int64_t groups;         /* > 0, divides both channel counts */
    int64_t dilation;       /* > 0 */
} clt_conv_transpose1d_opts;

#define CLT_CONV_TRANSPOSE1D_DEFAULTS {1, 0, 0, 1, 1}

/* torch.nn.functional.conv_transpose1d(input, weight, bias, stride,
 * padding, output_padding, groups, dilation): input [N, Cin, L] or
 * [Cin, L], weight [Cin, Cout / groups, k], bias [Cout] or NULL; the
 * result is [N, Cout, Lo] (or [Cout, Lo]) with Lo = (L - 1) stride -
 * 2 padding + dilation (k - 1) + output_padding + 1, which must be
 * positive.  Computed by clt_conv_transpose2d on the views [N, Cin, 1, L]
 * and [Cin, Cout / groups, 1, k]: the same arithmetic and bits, and its
 * messages (sizes with the 1 inserted).  Differentiable, twice too.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_conv_transpose1d(const clt_tensor *input, const clt_tensor *weight,
                                        const clt_tensor *bias,
                                        const clt_conv_transpose1d_opts *opts, clt_tensor **out);

/* Settings of clt_conv_transpose3d, as
 * torch.nn.functional.conv_transpose3d's arguments in its order
 * ({depth, height, width} triples).  A NULL opts means PyTorch's
 * defaults, CLT_CONV_TRANSPOSE3D_DEFAULTS. */
typedef struct clt_conv_transpose3d_opts {
    int64_t stride[3];         /* > 0 */
    int64_t padding[3];        /* >= 0: taken off both sides of the output */
    int64_t output_padding[3]; /* >= 0, below the stride or the dilation */
    int64_t groups;            /* > 0, divides both channel counts */
    int64_t dilation[3];       /* > 0 */
} clt_conv_transpose3d_opts;

#define CLT_CONV_TRANSPOSE3D_DEFAULTS {{1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 1, {1, 1, 1}}

/* torch.nn.functional.conv_transpose3d(input, weight, bias, stride,
 * padding, output_padding, groups, dilation), the gradient of conv3d with
 * respect to its input: input [N, Cin, D, H, W] or [Cin, D, H, W]
 * (spatial sizes and Cin positive), weight [Cin, Cout / groups, kD, kH,
 * kW], bias [Cout] or NULL; the result is [N, Cout, Do, Ho, Wo] with
 * Do = (D - 1) stride - 2 padding + dilation (kD - 1) + output_padding + 1
 * (likewise Ho, Wo), which must be positive.  Runs as conv3d's backward
 * pass (GEMM, then col2im), as clt_conv_transpose2d.  Differentiable,
 * twice too.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_conv_transpose3d(const clt_tensor *input, const clt_tensor *weight,
                                        const clt_tensor *bias,
                                        const clt_conv_transpose3d_opts *opts, clt_tensor **out);

/* Modes of clt_interpolate and clt_interpolate_nd, as F.interpolate's
 * mode strings, with the inputs each takes (as torch 1.13). */
typedef enum clt_interp_mode {
    CLT_INTERP_NEAREST = 0,       /* "nearest" (not "nearest-exact"): 3-D, 4-D, 5-D */
    CLT_INTERP_BILINEAR = 1,      /* "bilinear": 4-D */
    CLT_INTERP_NEAREST_EXACT = 2, /* "nearest-exact": 3-D, 4-D, 5-D */
    CLT_INTERP_LINEAR = 3,        /* "linear": 3-D */
    CLT_INTERP_BICUBIC = 4,       /* "bicubic": 4-D */
    CLT_INTERP_TRILINEAR = 5,     /* "trilinear": 5-D */
    CLT_INTERP_AREA = 6           /* "area": 3-D, 4-D, 5-D */
} clt_interp_mode;

/* torch.nn.functional.interpolate(input, size, scale_factor, mode,
 * align_corners) of PyTorch 1.13 for a 4-D input [N, C, H, W] (float32 or
 * float64): exactly one of size {Ho, Wo} (> 0) and scale_factor {sh, sw}
 * (finite, > 0; then Ho = floor(H sh)) is given, the other NULL.
 * Nearest: output row i reads input row min(floor(i s), H - 1), in float32
 * arithmetic whatever the dtype, s = 1 / sh when the scale factor is given,
 * H / Ho otherwise (PyTorch 1.13's rule, which reads row 0 twice for 3 -> 5
 * where nearest-exact would not); align_corners must be 0.  Bilinear, in
 * the input's dtype: align_corners 1 maps the corner pixels' centres onto
 * each other (s = (H - 1) / (Ho - 1)); 0 (PyTorch's default) maps the
 * edges, source (i + 0.5) s - 0.5 clamped at 0; each output is
 * (x00 w0 + x01 w1) h0 + (x10 w0 + x11 w1) h1 rounded as written (nearest
 * is exact; bilinear float32 may differ from PyTorch's in the last bits,
 * whose CPU kernel may fuse the products).  The gradient sums each output
 * gradient into the (one or four) input pixels it read, with their
 * weights, in PyTorch's order. */
CLT_API clt_status clt_interpolate(const clt_tensor *input, const int64_t size[2],
                                   const double scale_factor[2], clt_interp_mode mode,
                                   int align_corners, clt_tensor **out);

/* torch.nn.functional.interpolate(input, size, scale_factor, mode,
 * align_corners, recompute_scale_factor) of PyTorch 1.13 for input
 * [N, C, L] (nearest, nearest-exact, linear, area), [N, C, H, W] (nearest,
 * nearest-exact, bilinear, bicubic, area) or [N, C, D, H, W] (nearest,
 * nearest-exact, trilinear, area), float32, float64 or float16: size and
 * scale_factor hold one entry per spatial dimension (ndim - 2), exactly
 * one of them given, the other NULL; an output size is floor(in * scale).
 * recompute_scale_factor 1 computes the output size from the scale factor
 * and then interpolates as if that size had been given (torch's True); 0
 * passes the scale factor on to the kernels (torch's None or False).
 * align_corners (linear, bilinear, bicubic, trilinear only, else
 * CLT_ERR_INVALID_ARGUMENT as torch) as for clt_interpolate.  Each output
 * element is a weighted sum of input elements along each spatial
 * dimension in turn, last dimension first, with torch's source indices and
 * weights computed on the host in the input's dtype: nearest as
 * clt_interpolate's, nearest-exact min(floor((i + 0.5) s), in - 1),
 * linear as clt_interpolate's bilinear, bicubic torch's cubic convolution
 * (A = -0.75) over 4 taps clamped at the borders (no clamping of the
 * source position); so float32 results are torch's up to the last bits.
 * area is adaptive average pooling to the output size (through
 * clt_adaptive_avg_pool2d, recorded as such; 5-D as two such pools).  The
 * 4-D nearest and bilinear modes are clt_interpolate itself.  Gradients
 * (grad_fn UpsampleNearest1DBackward1, UpsampleLinear1DBackward1,
 * UpsampleBicubic2DBackward1, UpsampleTrilinear3DBackward1, ... as torch)
 * gather, for each input element, the output gradients that read it in
 * a fixed order: the same bits on every run.  Errors: another rank or a
 * mode that does not fit it (CLT_ERR_SHAPE_MISMATCH, torch's "Got 3D
 * input, but bilinear mode needs 4D input"), sizes or scales that are
 * missing, both given, non-positive or not finite
 * (CLT_ERR_INVALID_ARGUMENT), an empty spatial input or output
 * (CLT_ERR_SHAPE_MISMATCH), an integer input (CLT_ERR_DTYPE_UNSUPPORTED).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_interpolate_nd(const clt_tensor *input, const int64_t *size,
                                      const double *scale_factor, clt_interp_mode mode,
                                      int align_corners, int recompute_scale_factor,
                                      clt_tensor **out);

/* Modes and padding modes of clt_grid_sample, as F.grid_sample's strings
 * (in torch's own order). */
typedef enum clt_grid_mode {
    CLT_GRID_BILINEAR = 0, /* "bilinear" */
    CLT_GRID_NEAREST = 1,  /* "nearest": as torch's CPU kernels, halves to even (4-D input)
                            * or away from zero (5-D) */
    CLT_GRID_BICUBIC = 2   /* "bicubic": 4-D input only */
} clt_grid_mode;

typedef enum clt_grid_padding {
    CLT_GRID_PAD_ZEROS = 0,     /* "zeros" */
    CLT_GRID_PAD_BORDER = 1,    /* "border" */
    CLT_GRID_PAD_REFLECTION = 2 /* "reflection" */
} clt_grid_padding;

/* torch.nn.functional.grid_sample(input, grid, mode, padding_mode,
 * align_corners) of PyTorch 1.13 for input [N, C, H, W] and grid
 * [N, Ho, Wo, 2], or input [N, C, D, H, W] and grid [N, Do, Ho, Wo, 3]
 * (bilinear, meaning trilinear, and nearest only), of one dtype (float32
 * or float64): output (n, c, i, j) samples input plane (n, c) at grid
 * (n, i, j) = (x, y) (and z, the depth, in 5-D), x running over the
 * width, each in [-1, 1] from the left/top edge to the right/bottom one
 * (align_corners 0, torch's default: the pixels' outer edges;
 * align_corners 1: the corner pixels' centres); a point outside is read
 * as padding_mode says (zeros, the border's value, or the coordinates
 * reflected at the edges).  A 4-D input's points are placed in pixels as
 * torch's CPU kernel rounds them (fma(x + 1, W / 2, -0.5), or (x + 1) *
 * ((W - 1) / 2) with align_corners; its bilinear sum fused the same way),
 * a 5-D input's as its scalar kernel ((x + 1) W - 1) / 2): a point on a
 * pixel's centre, as every point of an identity affine_grid is, reads the
 * pixels on the same side as torch's, and so the grid gets torch's
 * one-sided slope there.  Bicubic reads 4 x 4 pixels with torch's cubic
 * convolution (A = -0.75), each tap placed by padding_mode.  The result
 * is [N, C, Ho, Wo] ([N, C, Do, Ho, Wo]).  Differentiable with respect to
 * input and grid (GridSampler2DBackward0, GridSampler3DBackward0; nearest
 * gives the grid a zero gradient, as torch): the input's gradient is
 * computed per (n, c) plane and run of output points (as many runs as
 * keep the device's compute units busy, their partial planes within 64
 * MiB), points added in row-major order and the runs' parts summed in
 * order, and the grid's one point per work-item over the channels in
 * order: the same bits on every run of one device.  Errors, in torch's
 * words: ranks other than 4 or 5 or that differ, grid's last size not the
 * spatial rank, batch sizes that differ, an empty spatial size
 * (CLT_ERR_SHAPE_MISMATCH); dtypes that differ (CLT_ERR_DTYPE_MISMATCH);
 * an integer input (CLT_ERR_DTYPE_UNSUPPORTED); an unknown mode, or
 * bicubic in 5-D (CLT_ERR_INVALID_ARGUMENT).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_grid_sample(const clt_tensor *input, const clt_tensor *grid,
                                   clt_grid_mode mode, clt_grid_padding padding_mode,
                                   int align_corners, clt_tensor **out);

/* torch.nn.functional.affine_grid(theta, size, align_corners) of PyTorch
 * 1.13: theta [N, 2, 3] and size {N, C, H, W} (ndim 4) give the grid
 * [N, H, W, 2] of the points theta (x, y, 1) for x and y on torch's base
 * grid (linspace(-1, 1), scaled by (n - 1) / n when align_corners is 0; a
 * size of 1 gives 0), the linspace with the bits of torch 1.13's CPU
 * kernel (its AVX2 build's vector runs; up to 32768 points a side); theta [N, 3, 4] and size {N, C, D, H, W} (ndim 5)
 * give [N, D, H, W, 3].  float32, float64 or float16.  Computed as a
 * batched matrix product of the base grid with theta's transpose, recorded as such (its
 * gradient with respect to theta is matmul's).  Errors, in torch's words:
 * ndim other than 4 or 5, a theta of another shape
 * (CLT_ERR_SHAPE_MISMATCH), a size that is not positive
 * (CLT_ERR_INVALID_ARGUMENT), an integer theta (CLT_ERR_DTYPE_UNSUPPORTED).
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_affine_grid(const clt_tensor *theta, int ndim, const int64_t *size,
                                   int align_corners, clt_tensor **out);

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

/* torch.nn.functional.max_pool1d(input, kernel_size, stride, padding,
 * dilation, ceil_mode) and avg_pool1d(input, kernel_size, stride, padding,
 * ceil_mode, count_include_pad) for input [N, C, L] or [C, L]: kernel > 0;
 * stride 0 means the kernel size; padding at most half the kernel.
 * Computed by clt_max_pool2d and clt_avg_pool2d on the view [N, C, 1, L]
 * with kernel {1, kernel}: the same values, ties, NaN rules and
 * gradients, and their messages (sizes with the 1 inserted). */
CLT_API clt_status clt_max_pool1d(const clt_tensor *input, int64_t kernel, int64_t stride,
                                  int64_t padding, int64_t dilation, int ceil_mode,
                                  clt_tensor **out);
CLT_API clt_status clt_avg_pool1d(const clt_tensor *input, int64_t kernel, int64_t stride,
                                  int64_t padding, int ceil_mode, int count_include_pad,
                                  clt_tensor **out);

/* Settings of the 1-D pooling layers (nn.h), as torch.nn.MaxPool1d's and
 * AvgPool1d's arguments after the kernel size.  A NULL clt_pool1d_opts
 * means PyTorch's defaults, CLT_POOL1D_DEFAULTS. */
typedef struct clt_pool1d_opts {
    int64_t stride;        /* 0: the kernel size */
    int64_t padding;       /* at most half the kernel */
    int64_t dilation;      /* max pooling only */
    int ceil_mode;         /* 1: the output size rounds up */
    int count_include_pad; /* avg pooling only */
} clt_pool1d_opts;

#define CLT_POOL1D_DEFAULTS {0, 0, 1, 0, 1}

/* torch.nn.functional.adaptive_avg_pool2d(input, output_size): the result
 * is [N, C, Ho, Wo] (or [C, Ho, Wo]) for output_size {Ho, Wo} (>= 0; 0
 * gives an empty result; PyTorch's None for a dimension is its input size,
 * passed as such).  Output (i, j) is the mean of the input's rows
 * floor(i H / Ho) to ceil((i + 1) H / Ho) - 1 and the like columns, the
 * window's sum divided by its height, then by its width, as PyTorch's CPU
 * kernel: windows overlap where Ho does not divide H, and an output larger
 * than the input repeats pixels; {1, 1} is the global average pool (for
 * which PyTorch calls mean(), whose other order of summation may round the
 * last bit otherwise).  float32, float64 or float16 (PyTorch 1.13 refuses
 * int64 here too).  The input's last two sizes must be positive (the batch
 * and, in 4-D, the channels may be 0), and Ho * H and Wo * W must fit
 * int64.  The gradient of each input pixel sums, over the windows that
 * cover it, the output's gradient divided by the window's height and width
 * (zeros for an empty output, whose backward PyTorch refuses); that
 * formula is linear, its gradient (double backward,
 * AdaptiveAvgPool2DBackwardBackward0) the pooling itself. */
CLT_API clt_status clt_adaptive_avg_pool2d(const clt_tensor *input, const int64_t output_size[2],
                                           clt_tensor **out);

/* F.max_pool2d(..., return_indices=True) and F.max_pool1d(...,
 * return_indices=True): clt_max_pool2d's and clt_max_pool1d's results
 * (values, ties, NaN, gradients, errors) and, in *indices, a new int64
 * tensor of the output's shape holding where each maximum came from, as
 * h * W + w in its [H, W] plane (w in the 1-D case), PyTorch's flat
 * index that clt_max_unpool2d and clt_max_unpool1d take.  indices is
 * required.  On failure both *out and *indices are NULL.  Release both
 * with clt_tensor_free. */
CLT_API clt_status clt_max_pool2d_with_indices(const clt_tensor *input, const int64_t kernel[2],
                                               const int64_t stride[2],
                                               const int64_t padding[2],
                                               const int64_t dilation[2], int ceil_mode,
                                               clt_tensor **out, clt_tensor **indices);
CLT_API clt_status clt_max_pool1d_with_indices(const clt_tensor *input, int64_t kernel,
                                               int64_t stride, int64_t padding,
                                               int64_t dilation, int ceil_mode,
                                               clt_tensor **out, clt_tensor **indices);

/* torch.nn.functional.adaptive_max_pool2d(input, output_size,
 * return_indices) for input [N, C, H, W] or [C, H, W], float32 or
 * float64: output (i, j) is the maximum over the windows of
 * clt_adaptive_avg_pool2d (rows floor(i H / Ho) to ceil((i + 1) H / Ho) -
 * 1, likewise columns), its first maximum in row-major order with NaN
 * taken as the maximum, as PyTorch's CPU kernel.  indices NULL: not wanted
 * (return_indices False); otherwise *indices is a new int64 tensor of the
 * output's shape, h * W + w of each maximum in its plane.  The gradient
 * (grad_fn AdaptiveMaxPool2DBackward0) adds each output's gradient into
 * its maximum, windows in row-major order; its own gradient (double
 * backward, AdaptiveMaxPool2DBackwardBackward0) gathers at the indices.
 * Errors as
 * clt_adaptive_avg_pool2d's.  clt_adaptive_max_pool1d does the same for
 * [N, C, L] or [C, L] on the view [.., 1, L] (output_size >= 0; indices
 * are positions in L), as torch.  On failure *out (and *indices) are
 * NULL.  New tensors: release with clt_tensor_free. */
CLT_API clt_status clt_adaptive_max_pool2d(const clt_tensor *input, const int64_t output_size[2],
                                           clt_tensor **out, clt_tensor **indices);
CLT_API clt_status clt_adaptive_max_pool1d(const clt_tensor *input, int64_t output_size,
                                           clt_tensor **out, clt_tensor **indices);

/* torch.nn.functional.max_unpool2d(input, indices, kernel_size, stride,
 * padding, output_size): each value of input [N, C, H, W] or [C, H, W]
 * (any dtype) is put at its flat index h * W + w (as
 * clt_max_pool2d_with_indices gives them) in a zero [Ho, Wo] plane;
 * where two indices of a plane coincide the later one wins, as in
 * PyTorch's CPU loop.  indices: int64, input's shape.  kernel (> 0)
 * required; stride NULL or 0 means the kernel, padding NULL means 0.
 * output_size NULL gives Ho = (H - 1) stride - 2 padding + kernel (the
 * same for Wo); given, each size must lie strictly within a stride of
 * that (torch's "invalid output_size").  Indices outside the plane are
 * reported as clt_scatter reports them (index.h: at the next
 * synchronisation).  The gradient (MaxUnpool2DBackward0) gathers the
 * output's gradient at the indices.  clt_max_unpool1d does the same for
 * [N, C, L] or [C, L] (output_size NULL or one size) through [.., L, 1],
 * as torch.  Errors: CLT_ERR_DTYPE_MISMATCH for indices other than
 * int64, CLT_ERR_SHAPE_MISMATCH for other ranks, indices of another
 * shape or an empty non-batch size, CLT_ERR_INVALID_ARGUMENT for the
 * sizes.  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_max_unpool2d(const clt_tensor *input, const clt_tensor *indices,
                                    const int64_t kernel[2], const int64_t stride[2],
                                    const int64_t padding[2], const int64_t output_size[2],
                                    clt_tensor **out);
CLT_API clt_status clt_max_unpool1d(const clt_tensor *input, const clt_tensor *indices,
                                    int64_t kernel, int64_t stride, int64_t padding,
                                    const int64_t *output_size, clt_tensor **out);

/* torch.nn.functional.lp_pool2d(input, norm_type, kernel_size, stride,
 * ceil_mode) and lp_pool1d, as torch 1.13 computes them:
 * (sign(a) * relu(|a|) * kH * kW)^(1 / norm_type) with a the average pool
 * (no padding) of input^norm_type, ops and all: sign(a) * relu(|a|) is a
 * itself (torch's quirk), so a window whose a is negative (odd norm_type,
 * negative values) gives NaN through the fractional power, as torch's;
 * input as clt_avg_pool2d's (clt_avg_pool1d's for 1-D), stride NULL or 0
 * meaning the kernel size.  Recorded as those ops (grad_fn PowBackward0).
 * Errors as clt_avg_pool2d's and clt_avg_pool1d's.  New tensor: release
 * with clt_tensor_free. */
CLT_API clt_status clt_lp_pool2d(const clt_tensor *input, double norm_type,
                                 const int64_t kernel[2], const int64_t stride[2], int ceil_mode,
                                 clt_tensor **out);
CLT_API clt_status clt_lp_pool1d(const clt_tensor *input, double norm_type, int64_t kernel,
                                 int64_t stride, int ceil_mode, clt_tensor **out);

/* ---- 3-D pooling, 1-D adaptive average pooling -------------------------------------------- */

/* torch.nn.functional.max_pool3d(input, kernel_size, stride, padding,
 * dilation, ceil_mode) for input [N, C, D, H, W] or [C, D, H, W], float32
 * or float64.  kernel {kD, kH, kW} > 0 (required); stride NULL or
 * {0, 0, 0} means the kernel size; padding NULL means 0 (at most half the
 * kernel); dilation NULL means 1; each setting at most INT32_MAX.  Computed
 * as clt_max_pool2d over (H, W) and then over D, recorded views between:
 * the maximum of each window is its first in (d, h, w) order and NaN
 * counts as the maximum (of several the last), as PyTorch's CPU kernel, and
 * the gradient goes to that element alone.  The result's grad_fn is an
 * identity node named as PyTorch's, MaxPool3DWithIndicesBackward0, over
 * the composition (AvgPool3DBackward0 for clt_avg_pool3d,
 * AdaptiveAvgPool3DBackward0, AdaptiveMaxPool3DBackward0 and
 * MaxUnpool3DBackward0 for the adaptive pools and clt_max_unpool3d);
 * double backward works through it.  Errors, with PyTorch's
 * messages: CLT_ERR_SHAPE_MISMATCH for another rank, an empty non-batch
 * size or an output size below 1, CLT_ERR_INVALID_ARGUMENT for the
 * settings, CLT_ERR_DTYPE_UNSUPPORTED for an integer input.  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_max_pool3d(const clt_tensor *input, const int64_t kernel[3],
                                  const int64_t stride[3], const int64_t padding[3],
                                  const int64_t dilation[3], int ceil_mode, clt_tensor **out);

/* F.max_pool3d(..., return_indices=True): clt_max_pool3d's result and, in
 * *indices (required), a new int64 tensor of the output's shape holding
 * where each maximum came from as (d H + h) W + w in its [D, H, W]
 * volume, the index clt_max_unpool3d takes.  On failure both are NULL.
 * Release both with clt_tensor_free. */
CLT_API clt_status clt_max_pool3d_with_indices(const clt_tensor *input, const int64_t kernel[3],
                                               const int64_t stride[3],
                                               const int64_t padding[3],
                                               const int64_t dilation[3], int ceil_mode,
                                               clt_tensor **out, clt_tensor **indices);

/* torch.nn.functional.avg_pool3d(input, kernel_size, stride, padding,
 * ceil_mode, count_include_pad): settings and shapes as clt_max_pool3d's
 * (no dilation), count_include_pad as clt_avg_pool2d's.  A window's
 * divisor is the product of its sizes along the three dims, so the pool
 * runs as clt_avg_pool2d over (H, W) and then over D, recorded; the values
 * agree with PyTorch's to rounding (the sum is divided in two steps).
 * int64 too, as PyTorch 1.13: each window's exact sum (differences of
 * cumulative sums) divided by its divisor with truncation toward zero, no
 * gradient.  Errors as clt_max_pool3d's (CLT_ERR_DTYPE_UNSUPPORTED for
 * other integer dtypes).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_avg_pool3d(const clt_tensor *input, const int64_t kernel[3],
                                  const int64_t stride[3], const int64_t padding[3],
                                  int ceil_mode, int count_include_pad, clt_tensor **out);

/* torch.nn.functional.adaptive_avg_pool1d(input, output_size) for
 * [N, C, L] or [C, L], float32, float64 or float16: clt_adaptive_avg_pool2d on the
 * view [.., 1, L] to {1, output_size} (>= 0), as torch computes it
 * (grad_fn SqueezeBackward1).  adaptive_avg_pool3d(input, output_size)
 * for [N, C, D, H, W] or [C, D, H, W] to output_size {Do, Ho, Wo} (each
 * >= 0): each output averages the box of clt_adaptive_avg_pool2d's
 * windows along the three dims, computed as that pool over D and then
 * over (H, W), recorded.  Errors: CLT_ERR_SHAPE_MISMATCH for another rank
 * or an empty non-batch size, CLT_ERR_INVALID_ARGUMENT for a negative
 * size, CLT_ERR_DTYPE_UNSUPPORTED for an integer input.  New tensor:
 * release with clt_tensor_free. */
CLT_API clt_status clt_adaptive_avg_pool1d(const clt_tensor *input, int64_t output_size,
                                           clt_tensor **out);
CLT_API clt_status clt_adaptive_avg_pool3d(const clt_tensor *input, const int64_t output_size[3],
                                           clt_tensor **out);

/* torch.nn.functional.adaptive_max_pool3d(input, output_size,
 * return_indices): the maximum over clt_adaptive_avg_pool3d's boxes, its
 * first in (d, h, w) order with NaN taken as the maximum, as PyTorch's CPU
 * kernel; computed as clt_adaptive_max_pool2d over (H, W) and then over D.
 * indices NULL: not wanted; otherwise *indices is a new int64 tensor of the
 * output's shape, (d H + h) W + w of each maximum in its volume.  The
 * gradient adds each output's gradient into its maximum.  Errors as
 * clt_adaptive_avg_pool3d's.  On failure *out (and *indices) are NULL.
 * New tensors: release with clt_tensor_free. */
CLT_API clt_status clt_adaptive_max_pool3d(const clt_tensor *input, const int64_t output_size[3],
                                           clt_tensor **out, clt_tensor **indices);

/* torch.nn.functional.max_unpool3d(input, indices, kernel_size, stride,
 * padding, output_size): clt_max_unpool2d's rules for input
 * [N, C, D, H, W] or [C, D, H, W] and its int64 indices of the same shape,
 * flat in a zero [Do, Ho, Wo] volume (as clt_max_pool3d_with_indices
 * gives them); output_size NULL or three sizes.  Recorded as a scatter
 * (grad_fn MaxUnpool3DBackward0 over a scatter): the gradient gathers the
 * output's gradient at the indices.  Errors as clt_max_unpool2d's.  New
 * tensor: release with clt_tensor_free. */
CLT_API clt_status clt_max_unpool3d(const clt_tensor *input, const clt_tensor *indices,
                                    const int64_t kernel[3], const int64_t stride[3],
                                    const int64_t padding[3], const int64_t output_size[3],
                                    clt_tensor **out);

/* Settings of the 3-D pooling layers (nn.h), as torch.nn.MaxPool3d's and
 * AvgPool3d's arguments after the kernel size.  A NULL clt_pool3d_opts
 * means PyTorch's defaults, CLT_POOL3D_DEFAULTS. */
typedef struct clt_pool3d_opts {
    int64_t stride[3];     /* {0, 0, 0}: the kernel size */
    int64_t padding[3];    /* at most half the kernel */
    int64_t dilation[3];   /* max pooling only */
    int ceil_mode;         /* 1: the output size rounds up */
    int count_include_pad; /* avg pooling only */
} clt_pool3d_opts;

#define CLT_POOL3D_DEFAULTS {{0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0, 1}


/* ---- rearranging: pixel and channel shuffles, unfold and fold ----------------------------- */

/* torch.nn.functional.pixel_shuffle(input, upscale_factor) and
 * pixel_unshuffle(input, downscale_factor): input [*, C r^2, H, W] becomes
 * [*, C, H r, W r], element (c, h r + i, w r + j) taken from channel
 * c r^2 + i r + j, and pixel_unshuffle does the reverse ([*, C, H r, W r]
 * to [*, C r^2, H, W]).  Any number of leading dims (at least 3 dims in
 * all), any dtype (integers and bool too, as torch).  One copy of a
 * permuted view.  Differentiable: the gradient is the other op
 * (PixelShuffleBackward0, PixelUnshuffleBackward0).  Errors, in torch's
 * words: fewer than 3 dims, channels not divisible by r^2, height or
 * width not divisible by r (CLT_ERR_SHAPE_MISMATCH); r <= 0
 * (CLT_ERR_INVALID_ARGUMENT).  New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_pixel_shuffle(const clt_tensor *input, int64_t upscale_factor,
                                     clt_tensor **out);
CLT_API clt_status clt_pixel_unshuffle(const clt_tensor *input, int64_t downscale_factor,
                                       clt_tensor **out);

/* torch.nn.functional.channel_shuffle(input, groups): input [N, C, *] (more
 * than 2 dims, any dtype) with its C channels seen as [groups, C / groups]
 * and transposed: output channel j groups + i is input channel i (C /
 * groups) + j, that is out[:, k] = in[:, (k % groups) (C / groups) + k /
 * groups].  One copy.  Errors, in torch's words: 2 dims or fewer,
 * groups not dividing C (CLT_ERR_SHAPE_MISMATCH), groups <= 0
 * (CLT_ERR_INVALID_ARGUMENT).  torch 1.13 has no gradient for it (its
 * node is NotImplemented); here it is differentiable, the gradient the
 * inverse shuffle (groups C / groups), recorded as ChannelShuffleBackward0.
 * New tensor: release with clt_tensor_free. */
CLT_API clt_status clt_channel_shuffle(const clt_tensor *input, int64_t groups,
                                       clt_tensor **out);

/* Settings of clt_unfold and clt_fold after the kernel size, as F.unfold's
 * and F.fold's ({height, width} pairs).  NULL means PyTorch's defaults,
 * CLT_FOLD_DEFAULTS: dilation 1, padding 0, stride 1. */
typedef struct clt_fold_opts {
    int64_t dilation[2]; /* > 0 */
    int64_t padding[2];  /* >= 0, zeros */
    int64_t stride[2];   /* > 0 */
} clt_fold_opts;

#define CLT_FOLD_DEFAULTS {{1, 1}, {0, 0}, {1, 1}}

/* torch.nn.functional.unfold(input, kernel_size, dilation, padding,
 * stride) (im2col): input [N, C, H, W] or unbatched [C, H, W] (float32 or
 * float64; C, H, W non-zero, N may be 0) gives [N, C kH kW, L] (or [C kH
 * kW, L]), L = Ho Wo sliding blocks, Ho = (H + 2 padding - dilation (kH -
 * 1) - 1) / stride + 1 (likewise Wo), each column one block's values
 * (channel-major, then kernel row, kernel column; zeros in the padding).
 * The kernel conv2d unfolds its patches with.  Differentiable: the
 * gradient is clt_fold of the output's gradient (Im2ColBackward0).
 *
 * Errors, in torch's words: a kernel, stride or dilation <= 0 or a
 * negative padding (CLT_ERR_INVALID_ARGUMENT); another rank, a zero C, H
 * or W, or fewer than one block along a dimension
 * (CLT_ERR_SHAPE_MISMATCH); an integer input (CLT_ERR_DTYPE_UNSUPPORTED,
 * torch: "not implemented for 'Long'").  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_unfold(const clt_tensor *input, const int64_t kernel_size[2],
                              const clt_fold_opts *opts, clt_tensor **out);

/* torch.nn.functional.fold(input, output_size, kernel_size, dilation,
 * padding, stride) (col2im), the adjoint of clt_unfold: input [N, C kH kW,
 * L] or unbatched [C kH kW, L] (float32, float64 or float16, its last two sizes
 * non-zero) gives [N, C, H, W] (or [C, H, W]) for output_size {H, W}, each
 * pixel the sum of the values of every block that covers it (padding
 * dropped), summed in a fixed order (kernel row, then column) by a gather:
 * the same bits on every run.  L must be the number of blocks clt_unfold
 * would make of an H x W image.  Differentiable: the gradient is
 * clt_unfold of the output's gradient (Col2ImBackward0).
 *
 * Errors, in torch's words: the settings as clt_unfold's, a negative
 * output size (CLT_ERR_INVALID_ARGUMENT); another rank, a zero size,
 * C kH kW not divisible by kH kW, an L other than the number of blocks
 * or fewer than one block (CLT_ERR_SHAPE_MISMATCH); an integer input
 * (CLT_ERR_DTYPE_UNSUPPORTED).  New tensor: release with
 * clt_tensor_free. */
CLT_API clt_status clt_fold(const clt_tensor *input, const int64_t output_size[2],
                            const int64_t kernel_size[2], const clt_fold_opts *opts,
                            clt_tensor **out);

/* ---- fractional max pooling ------------------------------------------------------------- */

/* torch.nn.functional.fractional_max_pool2d(input, kernel_size,
 * output_size, output_ratio, return_indices, _random_samples) for input
 * [N, C, H, W] or [C, H, W], float32, float64 or float16: the maximum of each
 * kernel-sized window, the windows' starts along each dim drawn by
 * PyTorch's generate_intervals from one sample u in [0, 1) per plane and
 * dim: alpha = (in - k) / (out - 1) in the input's dtype, start i
 * floor((i + u) alpha) - floor(u alpha), the last window ending at the
 * input's end.  output_size (two sizes >= 0) wins over output_ratio (two
 * ratios in (0, 1): out = floor(in * ratio)); one of them must be given.
 * random_samples: NULL, or torch's _random_samples, [N, C, 2] (N 1 for
 * an unbatched input) of the input's dtype and device, u of W first, then
 * of H; with the same samples the output and indices are PyTorch's.  NULL
 * draws them as torch.rand([N, C, 2]) from gen (NULL: the default
 * generator), which advances; the same on every device.  The samples are
 * read back (the call waits for them).  indices NULL: not wanted;
 * otherwise *indices is a new int64 tensor of the output's shape, h W + w
 * of each maximum in its plane (the first of ties; a window holding NaN
 * gives NaN at its first NaN, where PyTorch's CPU kernel names its last).
 * The gradient adds each output's gradient into its maximum (grad_fn
 * FractionalMaxPool2DBackward0), its double backward gathers.
 *
 * clt_fractional_max_pool3d does the same for [N, C, T, H, W] or
 * [C, T, H, W] with three sizes, samples [N, C, 3] (u of T, H, W in that
 * order) and indices (t H + h) W + w (FractionalMaxPool3DBackward0).
 *
 * Errors, in torch's words: another rank, an empty non-batch dim or a
 * window that does not fit (out + k - 1 > in; 3-D: >= in, as torch 1.13's
 * check) (CLT_ERR_SHAPE_MISMATCH); neither size nor ratio, a ratio
 * outside (0, 1), a kernel size <= 0, a negative output size, samples
 * outside [0, 1), more than 2^27 window elements over all planes (the
 * windows' positions are listed on the host and gathered)
 * (CLT_ERR_INVALID_ARGUMENT); samples of another shape
 * (CLT_ERR_SHAPE_MISMATCH), dtype (CLT_ERR_DTYPE_MISMATCH) or device; an
 * integer input (CLT_ERR_DTYPE_UNSUPPORTED).  A float16 input takes
 * float16 or float32 samples.  On failure *out
 * (and *indices) are NULL.  New tensors: release with clt_tensor_free. */
CLT_API clt_status clt_fractional_max_pool2d(const clt_tensor *input, const int64_t kernel[2],
                                             const int64_t output_size[2],
                                             const double output_ratio[2],
                                             const clt_tensor *random_samples,
                                             clt_generator *gen, clt_tensor **out,
                                             clt_tensor **indices);
CLT_API clt_status clt_fractional_max_pool3d(const clt_tensor *input, const int64_t kernel[3],
                                             const int64_t output_size[3],
                                             const double output_ratio[3],
                                             const clt_tensor *random_samples,
                                             clt_generator *gen, clt_tensor **out,
                                             clt_tensor **indices);

#ifdef __cplusplus
}
#endif

#endif
