/* conv.h: the convolution and pooling implementations of src/ops/conv.c
 * and the interpolation of src/ops/upsample.c, for their public entry
 * points in src/autograd/grad_conv.c.  All take
 * 4-D [N, C, H, W] tensors (convolutions 5-D too); none records autograd. */
#ifndef CLT_OPS_CONV_H
#define CLT_OPS_CONV_H

#include "internal.h"

/* A pooling window, with every default resolved (stride > 0, padding and
 * dilation given); avg pooling uses dilation 1. */
typedef struct clt__pool2d {
    int64_t kernel[2], stride[2], padding[2], dilation[2];
    int ceil_mode, count_include_pad;
} clt__pool2d;

/* The most bytes of patches (im2col's matrix) that a convolution and its
 * backward unfold at once: larger batches go through in chunks of images.
 * 256 MiB; tests lower it. */
extern size_t clt__conv2d_cols_limit;

/* A convolution's settings in nd (2 or 3) spatial dimensions, the first nd
 * entries of each array used; output_padding for transposed ones only.
 * conv1d and conv_transpose1d are the 2-D ones on [.., 1, L] views. */
typedef struct clt__conv_opts {
    int nd;
    int64_t stride[3], padding[3], dilation[3], output_padding[3];
    int64_t groups;
} clt__conv_opts;

/* A convolution of an (nd + 2)-D input x [N, C, (D,) H, W] with weight
 * [O, C / groups, (kD,) kH, kW]; b may be NULL.  opts must not be NULL.
 * cols_keep (or NULL): the forward's im2col matrix, when it made one for
 * the whole batch, for the backward to reuse (NULL otherwise).  Messages
 * name fn, the public call.  No autograd. */
clt_status clt__conv(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                     const clt__conv_opts *opts, clt_tensor **out, clt_tensor **cols_keep,
                     const char *fn);

/* The gradients of clt__conv's input, weight and bias from g, the gradient
 * of its output; each of gx, gw, gb may be NULL to skip it.  cols_saved
 * (or NULL): the forward's cols_keep, instead of a second im2col for the
 * weight's gradient.  New tensors. */
clt_status clt__conv_backward(const clt_tensor *g, const clt_tensor *x, const clt_tensor *w,
                              const clt__conv_opts *opts, const clt_tensor *cols_saved,
                              clt_tensor **gx, clt_tensor **gw, clt_tensor **gb);

/* Error unless each output_padding is >= 0 and below its stride or its
 * dilation (PyTorch's words): conv_transpose's check, and its layers'. */
clt_status clt__output_padding_check(const clt__conv_opts *o, const char *fn);

/* The transposed convolution of an (nd + 2)-D input, weight [Cin, Cout /
 * groups, (kD,) kH, kW]; b may be NULL, opts not.  Messages name fn. */
clt_status clt__conv_transpose(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                               const clt__conv_opts *opts, clt_tensor **out, const char *fn);

/* The gradients of clt__conv_transpose's input, weight and bias from g,
 * the gradient of its output; each of gx, gw, gb may be NULL to skip it.
 * New tensors. */
clt_status clt__conv_transpose_backward(const clt_tensor *g, const clt_tensor *x,
                                        const clt_tensor *w, const clt__conv_opts *opts,
                                        clt_tensor **gx, clt_tensor **gw, clt_tensor **gb);

/* An interpolation with every size resolved: mode (clt_interp_mode),
 * align_corners, whether the scale factors are passed on to the kernels
 * (then scale holds them), the output's spatial sizes and their number
 * nd (1 to 3). */
typedef struct clt__interp {
    int mode, align_corners, has_scale;
    double scale[3];
    int64_t size[3];
    int nd;
} clt__interp;

/* Checks interpolate's settings as PyTorch 1.13 does, and with x (NULL:
 * the settings alone, for a layer's constructor) its float input of nd + 2
 * dims (nd 0: any of 3 to 5 dims, which give nd), and fills in *u;
 * messages name fn.  recompute: recompute_scale_factor. */
clt_status clt__interp_check(const clt_tensor *x, int nd, const int64_t *size, const double *scale,
                             int mode, int align_corners, int recompute, clt__interp *u,
                             const char *fn);
/* clt__interp_check for clt_interpolate and its layer: 4-D input. */
clt_status clt__interpolate_check(const clt_tensor *x, const int64_t *size, const double *scale,
                                  int mode, int align_corners, clt__interp *u, const char *fn);

/* The interpolation of a checked x, and its backward: in_shape is the
 * input's 4-D shape, g the output's gradient. */
clt_status clt__upsample(const clt_tensor *x, const clt__interp *u, clt_tensor **out,
                         const char *fn);
clt_status clt__upsample_backward(const clt_tensor *g, const int64_t *in_shape,
                                  const clt__interp *u, clt_tensor **out);

/* The separable modes (nearest, nearest-exact, linear, bilinear, bicubic,
 * trilinear) of a checked x of any spatial rank, as one pass per spatial
 * dimension, the last first; and the backward, the transposed passes in
 * the other order (in_shape: the input's shape, nd + 2 sizes). */
clt_status clt__interp_separable(const clt_tensor *x, const clt__interp *u, clt_tensor **out,
                                 const char *fn);
clt_status clt__interp_separable_backward(const clt_tensor *g, const int64_t *in_shape,
                                          const clt__interp *u, clt_tensor **out);

/* grid_sample of a checked 4-D input [N, C, H, W] at grid [N, Ho, Wo, 2]
 * (mode and padding as clt_grid_mode and clt_grid_padding), and its
 * backward from g: *gx (input's shape) and *ggrid (grid's), each NULL to
 * skip it.  New tensors. */
clt_status clt__grid_sample_check(const clt_tensor *x, const clt_tensor *grid, int mode,
                                  int padding, const char *fn);
clt_status clt__grid_sample(const clt_tensor *x, const clt_tensor *grid, int mode, int padding,
                            int align_corners, clt_tensor **out, const char *fn);
clt_status clt__grid_sample_backward(const clt_tensor *g, const clt_tensor *x,
                                     const clt_tensor *grid, int mode, int padding,
                                     int align_corners, clt_tensor **gx, clt_tensor **ggrid);

/* Fills in a pool's default stride ({0, 0}: the kernel) and checks it against the 4-D shape of x
 * (PyTorch's messages) and x's dtype: float32 or float64, or int64 too with int64_ok (avg
 * pooling, which PyTorch 1.13 computes in int64, each sum divided with truncation); `fn`
 * names the caller. */
clt_status clt__pool2d_check(const clt_tensor *x, clt__pool2d *p, bool int64_ok, const char *fn);

/* max_pool2d of a 4-D input: the maxima and, in *indices (int64, the same
 * shape), where each came from as h * W + w in its plane. */
clt_status clt__max_pool2d(const clt_tensor *x, const clt__pool2d *p, clt_tensor **out,
                           clt_tensor **indices);
/* Routes g to the input elements named by indices; in_shape is the 4-D
 * input shape, dtype g's. */
clt_status clt__max_pool2d_backward(const clt_tensor *g, const clt_tensor *indices,
                                    const int64_t *in_shape, const clt__pool2d *p,
                                    clt_tensor **out);

clt_status clt__avg_pool2d(const clt_tensor *x, const clt__pool2d *p, clt_tensor **out);
clt_status clt__avg_pool2d_backward(const clt_tensor *g, const int64_t *in_shape,
                                    const clt__pool2d *p, clt_tensor **out);

/* Checks adaptive_avg_pool2d's input x (3-D or 4-D, float32 or float64,
 * its last two sizes positive) and output size {Ho, Wo} (>= 0), with
 * PyTorch's messages naming fn; clt__adaptive_size_check the size alone. */
clt_status clt__adaptive_size_check(const int64_t *size, const char *fn);
clt_status clt__adaptive_pool2d_check(const clt_tensor *x, const int64_t *size, const char *fn);

/* adaptive_avg_pool2d of a checked 4-D input to [N, C, size[0], size[1]],
 * and its backward: g's last two sizes are the output's. */
clt_status clt__adaptive_avg_pool2d(const clt_tensor *x, const int64_t *size, clt_tensor **out,
                                    const char *fn);
clt_status clt__adaptive_avg_pool2d_backward(const clt_tensor *g, const int64_t *in_shape,
                                             clt_tensor **out);

/* adaptive_max_pool2d of a checked 4-D input: the maxima and, in *indices
 * (int64, the same shape), where each came from as h * W + w in its plane
 * (max_pool2d's rule for ties and NaN). */
clt_status clt__adaptive_max_pool2d(const clt_tensor *x, const int64_t *size, clt_tensor **out,
                                    clt_tensor **indices, const char *fn);


/* F.unfold of a 3-D or 4-D x (im2col: [N, C kH kW, L],
 * unbatched [C kH kW, L]) and F.fold of a 2-D or 3-D x into size
 * {H, W} (col2im, overlaps summed in a fixed order), kernel k; each
 * checks its operands as PyTorch does, messages naming fn. */
clt_status clt__unfold(const clt_tensor *x, const int64_t *k, const clt_fold_opts *o,
                       clt_tensor **out, const char *fn);
clt_status clt__fold(const clt_tensor *x, const int64_t *size, const int64_t *k,
                     const clt_fold_opts *o, clt_tensor **out, const char *fn);

#endif
