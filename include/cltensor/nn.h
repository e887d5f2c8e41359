/* cltensor/nn.h: layers and models, like torch.nn.
 *
 * A clt_module is a layer or a model made of layers.  Its parameters are
 * leaf tensors that require grad, initialised as PyTorch initialises them
 * but from a clt_generator (NULL: the default one), so that a seed gives
 * the same model on every device.  clt_module_forward runs it as a graph of
 * differentiable ops; clt_backward on a loss then fills the parameters'
 * gradients.
 *
 * Ownership.  Constructors hand out a new module: release it with
 * clt_module_free, which releases its children and tensors.  The tensors
 * that the listing functions hand out are borrowed: they live as long as
 * the module (across clt_module_to and clt_module_to_dtype, which move or
 * convert their data but keep the handles, so optimizers made before
 * still hold them).
 *
 * Devices.  A model's tensors live on one device.  An input on another
 * device is an error naming both (CLT_ERR_DEVICE_MISMATCH), never a copy.
 *
 * Dtypes.  The layers make their parameters and buffers float32
 * (clt_module_to_dtype converts a model, as model.double()).  As in
 * PyTorch 1.13, a layer with parameters or running statistics (Linear,
 * Conv1d, Conv2d, ConvTranspose2d, LayerNorm with elementwise_affine,
 * GroupNorm with affine,
 * BatchNorm with affine or track_running_stats) does not promote: an input of another dtype,
 * float64 or integer, is CLT_ERR_DTYPE_MISMATCH naming the layer, both
 * dtypes and the fix ("LayerNorm: ... the input is float64 and
 * the weight float32 (convert the input with clt_to_dtype)"), and changes
 * nothing.  The layers without tensors keep the input's dtype (float64 in,
 * float64 out) and take integers where their ops do: ReLU, Flatten,
 * Dropout in eval mode (and with p 0) keep them; Tanh and Sigmoid give
 * float32; AvgPool1d and AvgPool2d take int64 (conv.h); GELU, MaxPool1d,
 * MaxPool2d, Upsample, the other integer dtypes in the average pools,
 * LayerNorm, GroupNorm and BatchNorm refuse them.
 * Embedding takes int64 or int32 indices, as PyTorch (other dtypes are
 * CLT_ERR_DTYPE_MISMATCH).  Dropout in train mode with p 1 gives x * 0
 * in x's dtype, as PyTorch (NaN stays NaN; a bool input gives false).
 */
#ifndef CLTENSOR_NN_H
#define CLTENSOR_NN_H

#include <cltensor/conv.h>
#include <cltensor/random.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct clt_module clt_module;

/* A tensor of a model with its name, as in PyTorch's state_dict
 * ("0.weight"). */
typedef struct clt_named_tensor {
    const char *name;
    clt_tensor *tensor;
} clt_named_tensor;

/* ---- running a model ---------------------------------------------------- */

/* y = m(x).  New tensor: release with clt_tensor_free.  A forward that
 * fails (out of memory, the driver refusing a launch) changes no buffer
 * and takes no numbers from a generator.  The buffers it updates
 * (BatchNorm's running statistics) are written all at once at its end,
 * each storage taking the buffer of its new values (views of a buffer see
 * them too); only a buffer that is a part of a larger one or on a
 * caller's buffer (clt_tensor_from_cl_buffer) is copied into, after the
 * others, and a driver failing there leaves those before it written (the
 * message says which call failed). */
CLT_API clt_status clt_module_forward(clt_module *m, const clt_tensor *x, clt_tensor **out);

/* Like model.to(device): moves every parameter, buffer and gradient of m
 * and its children to dev (copies; the handles stay).  All or none: every
 * copy is made before any handle changes, so that when dev runs out of
 * memory the model is left whole where it was.  A backward pass through
 * a graph recorded before the move adds the gradients on dev. */
CLT_API clt_status clt_module_to(clt_module *m, clt_device *dev);

/* Like model.double(), model.float() or model.to(torch.float64): converts
 * every floating parameter and buffer of m and its children (BatchNorm's
 * running_mean and running_var; not the int64 num_batches_tracked), and
 * their gradients, to dtype (copies, rounded when narrowing; the handles
 * stay, as with clt_module_to).  dtype must be floating, as PyTorch's
 * ("nn.Module.to only accepts floating point or complex dtypes"):
 * anything else is CLT_ERR_INVALID_ARGUMENT; a dtype the device cannot
 * hold (float64 without cl_khr_fp64) is the error clt_to_dtype gives.  All
 * or none: every copy is made before any handle changes, so that a
 * failure (out of memory) leaves the model as it was.  An optimizer made
 * over the parameters before keeps working: its state (momentum, moments)
 * follows each parameter's dtype, converted by the next
 * clt_optimizer_step (PyTorch keeps the state's old dtype and mixes the
 * two); a parameter converted to float16 is refused there.  A backward
 * pass through a graph recorded before the conversion gives each
 * parameter its gradient in its new dtype. */
CLT_API clt_status clt_module_to_dtype(clt_module *m, clt_dtype dtype);

/* model.train() (on = 1) or model.eval() (on = 0), for m and its
 * children: Dropout and BatchNorm act differently in the two. */
CLT_API void clt_module_train(clt_module *m, int on);
CLT_API int clt_module_is_training(const clt_module *m);

/* The device of m's tensors (borrowed), or NULL for a model without any. */
CLT_API clt_device *clt_module_device(const clt_module *m);

/* "Linear", "Sequential", ... (static storage); NULL for NULL. */
CLT_API const char *clt_module_name(const clt_module *m);

/* The number of parameter elements (sum of numel), as
 * sum(p.numel() for p in model.parameters()). */
CLT_API int64_t clt_module_num_parameters(const clt_module *m);

/* The parameters, in PyTorch's order, as *n borrowed tensors in an array
 * that is released with clt_free. */
CLT_API clt_status clt_module_parameters(const clt_module *m, clt_tensor ***out, size_t *n);

/* Named parameters, buffers, or both (the state: parameters then buffers
 * of each module, children after their parent, as state_dict): *n entries
 * in one block (names included) released with clt_free; the tensors are
 * borrowed. */
CLT_API clt_status clt_module_named_parameters(const clt_module *m, clt_named_tensor **out,
                                               size_t *n);
CLT_API clt_status clt_module_named_buffers(const clt_module *m, clt_named_tensor **out,
                                            size_t *n);
CLT_API clt_status clt_module_state(const clt_module *m, clt_named_tensor **out, size_t *n);

/* Releases m, its children and its tensors.  NULL does nothing. */
CLT_API void clt_module_free(clt_module *m);

/* ---- layers (each a new module: release with clt_module_free) ------------- */

/* torch.nn.Sequential: runs mods in order.  Takes ownership of the n
 * modules when it succeeds (they are released with the container); one
 * module given twice, or a module that a container already owns, is
 * CLT_ERR_INVALID_ARGUMENT (each module has one owner, unlike PyTorch's
 * shared submodules), and so is a model nesting containers more than 100
 * levels deep (running a model recurses once per level). */
CLT_API clt_status clt_sequential(clt_module *const *mods, size_t n, clt_module **out);

/* torch.nn.Linear: y = x W^T + b over the last dimension of x.  weight
 * [out_features, in_features] and bias [out_features] (when bias is
 * non-zero), both uniform in +-1/sqrt(in_features), float32 on dev.  Both
 * sizes must be positive (PyTorch also makes empty layers). */
CLT_API clt_status clt_linear(clt_device *dev, int64_t in_features, int64_t out_features,
                              int bias, clt_generator *gen, clt_module **out);

/* torch.nn.Conv2d(in_channels, out_channels, (kernel_h, kernel_w), ...):
 * y = clt_conv2d(x, weight, bias, opts) for x [N, C, H, W] or [C, H, W].
 * opts NULL: stride 1, padding 0, dilation 1, groups 1.  weight
 * [out_channels, in_channels / groups, kernel_h, kernel_w] and bias
 * [out_channels] (when bias is non-zero), both uniform in
 * +-1/sqrt(fan_in), fan_in = in_channels / groups * kernel_h * kernel_w,
 * float32 on dev.  groups must divide both channel counts.  A convolution
 * that BatchNorm follows is made without bias (bias 0; torchvision's
 * bias=False): see clt_batch_norm2d_layer. */
CLT_API clt_status clt_conv2d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                    int64_t kernel_h, int64_t kernel_w,
                                    const clt_conv2d_opts *opts, int bias, clt_generator *gen,
                                    clt_module **out);

/* torch.nn.Conv1d(in_channels, out_channels, kernel_size, ...):
 * y = clt_conv1d(x, weight, bias, opts) for x [N, C, L] or [C, L].  opts
 * NULL: stride 1, padding 0, dilation 1, groups 1.  weight [out_channels,
 * in_channels / groups, kernel_size] and bias [out_channels] (when bias is
 * non-zero), both uniform in +-1/sqrt(in_channels / groups * kernel_size),
 * float32 on dev.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_conv1d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                    int64_t kernel_size, const clt_conv1d_opts *opts, int bias,
                                    clt_generator *gen, clt_module **out);

/* torch.nn.ConvTranspose2d(in_channels, out_channels, (kernel_h,
 * kernel_w), ...): y = clt_conv_transpose2d(x, weight, bias, opts) for x
 * [N, C, H, W] or [C, H, W].  opts NULL: stride 1, padding 0,
 * output_padding 0, groups 1, dilation 1; output_padding must be below
 * the stride or the dilation.  weight [in_channels, out_channels / groups,
 * kernel_h, kernel_w] (PyTorch's layout, so that its state_dict loads as
 * it is) and bias [out_channels], both uniform in +-1/sqrt(fan_in) with
 * PyTorch's fan_in = out_channels / groups * kernel_h * kernel_w, float32
 * on dev.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_conv_transpose2d_layer(clt_device *dev, int64_t in_channels,
                                              int64_t out_channels, int64_t kernel_h,
                                              int64_t kernel_w,
                                              const clt_conv_transpose2d_opts *opts, int bias,
                                              clt_generator *gen, clt_module **out);

/* torch.nn.Upsample(size, scale_factor, mode, align_corners):
 * clt_interpolate(x, size, scale_factor, mode, align_corners) at each
 * forward.  Exactly one of size (both > 0) and scale_factor (finite,
 * > 0) is given, the other NULL (both copied); align_corners only with
 * CLT_INTERP_BILINEAR; checked here (CLT_ERR_INVALID_ARGUMENT).  No
 * tensors.  A new module (*out), released with clt_module_free. */
CLT_API clt_status clt_upsample_layer(const int64_t size[2], const double scale_factor[2],
                                      clt_interp_mode mode, int align_corners, clt_module **out);

/* torch.nn.MaxPool2d((kernel_h, kernel_w), ...) and AvgPool2d: clt_max_pool2d
 * and clt_avg_pool2d with the settings of opts (NULL: PyTorch's defaults,
 * stride the kernel size, padding 0, dilation 1, no ceil_mode,
 * count_include_pad). */
CLT_API clt_status clt_max_pool2d_layer(int64_t kernel_h, int64_t kernel_w,
                                        const clt_pool2d_opts *opts, clt_module **out);
CLT_API clt_status clt_avg_pool2d_layer(int64_t kernel_h, int64_t kernel_w,
                                        const clt_pool2d_opts *opts, clt_module **out);

/* torch.nn.MaxPool1d(kernel, ...) and AvgPool1d: clt_max_pool1d and
 * clt_avg_pool1d with the settings of opts (NULL: PyTorch's defaults,
 * CLT_POOL1D_DEFAULTS: stride the kernel size, padding 0, dilation 1, no
 * ceil_mode, count_include_pad).  kernel > 0 is checked here, the rest at
 * the forward.  No tensors.  A new module (*out), released with
 * clt_module_free. */
CLT_API clt_status clt_max_pool1d_layer(int64_t kernel, const clt_pool1d_opts *opts,
                                        clt_module **out);
CLT_API clt_status clt_avg_pool1d_layer(int64_t kernel, const clt_pool1d_opts *opts,
                                        clt_module **out);

/* torch.nn.AdaptiveAvgPool2d((out_h, out_w)): clt_adaptive_avg_pool2d to
 * that size (both >= 0, checked here: CLT_ERR_INVALID_ARGUMENT; PyTorch
 * refuses them at the first forward).  AdaptiveAvgPool2d(1) is out_h =
 * out_w = 1. */
CLT_API clt_status clt_adaptive_avg_pool2d_layer(int64_t out_h, int64_t out_w, clt_module **out);

/* torch.nn.Identity: its forward gives the input back as a new handle
 * (a view sharing its storage, released with clt_tensor_free) through
 * which gradients flow to the input; PyTorch returns the very object. */
CLT_API clt_status clt_identity_layer(clt_module **out);

/* torch.nn.Flatten(start_dim, end_dim) (PyTorch's defaults are 1, -1). */
CLT_API clt_status clt_flatten_layer(int start_dim, int end_dim, clt_module **out);

/* torch.nn.LayerNorm(normalized_shape, eps, elementwise_affine): normalises
 * over the last ndim dims (biased variance); weight ones and bias zeros
 * (float32) when affine.  A floating input other than float32 needs
 * elementwise_affine 0 (see Dtypes above). */
CLT_API clt_status clt_layer_norm_layer(clt_device *dev, int ndim, const int64_t *normalized_shape,
                                        double eps, int elementwise_affine, clt_module **out);

/* torch.nn.functional.group_norm(input, num_groups, weight, bias, eps):
 * input [N, C, *] (at least 2 dims, float32 or float64) is split into
 * num_groups groups of C / num_groups channels, each sample's group
 * normalised over its channels and all of * together (biased variance:
 * (x - mean) / sqrt(var + eps)), then scaled by weight and shifted by
 * bias, both [C] of input's dtype and device, either NULL (none).  New
 * tensor of input's shape and dtype: release with clt_tensor_free.
 * Differentiable in input, weight and bias.  PyTorch's eps is 1e-5.
 *
 * Errors, in torch's words: num_groups <= 0 (CLT_ERR_INVALID_ARGUMENT), C
 * not divisible by num_groups, fewer than 2 dims, a weight or bias that
 * is not a vector of C values (CLT_ERR_SHAPE_MISMATCH); a weight or bias
 * of another dtype (CLT_ERR_DTYPE_MISMATCH) or device; an integer, bool or
 * float16 input (CLT_ERR_DTYPE_UNSUPPORTED, as torch's CPU kernel).  As
 * torch 1.13's F.group_norm, one sample (N = 1) whose groups hold one value
 * each is refused ("Expected more than 1 value per channel when
 * training", CLT_ERR_INVALID_ARGUMENT).  Unlike torch, a negative or NaN
 * eps is refused too (CLT_ERR_INVALID_ARGUMENT), as LayerNorm's.  Empty
 * inputs (N, C or a size of * zero) give empty results.
 *
 * Composed of the recorded ops LayerNorm uses (a reshape to [N, G, C / G *
 * prod(*)], a copy when input is not contiguous; mean, var, sub, rsqrt,
 * mul), so autograd gives its backward without a formula of its own.  The
 * price is passes over the data: with weight and bias the forward is ten
 * kernel launches, two reductions and four elementwise ops over the whole
 * input, where PyTorch's fused CPU kernel reads it twice and writes once;
 * the backward takes about twice the forward's launches.  A new tensor,
 * not a module: release with clt_tensor_free. */
CLT_API clt_status clt_group_norm(const clt_tensor *input, int64_t num_groups,
                                  const clt_tensor *weight, const clt_tensor *bias, double eps,
                                  clt_tensor **out);

/* torch.nn.GroupNorm(num_groups, num_channels, eps, affine): clt_group_norm
 * with the layer's weight (ones) and bias (zeros), both [num_channels]
 * float32 on dev, when affine; without affine none.  num_groups must be
 * positive and divide num_channels (>= 0), eps >= 0 (PyTorch: 1e-5);
 * otherwise CLT_ERR_INVALID_ARGUMENT.  An input's channels must number
 * num_channels when affine (torch's weight message otherwise); without
 * affine only num_groups is checked against them, as in PyTorch.  The
 * parameters are float32 until clt_module_to_dtype: with affine an input
 * of another dtype is refused (see Dtypes above). */
CLT_API clt_status clt_group_norm_layer(clt_device *dev, int64_t num_groups, int64_t num_channels,
                                        double eps, int affine, clt_module **out);

/* torch.nn.BatchNorm1d ([N, C] or [N, C, L] inputs) and BatchNorm2d ([N, C,
 * H, W]): in train mode, normalises with the batch's statistics and, when
 * track_running_stats, updates the buffers running_mean, running_var
 * (unbiased) and num_batches_tracked with `momentum` (PyTorch: 0.1); in
 * eval mode uses the running statistics.  eps PyTorch: 1e-5.  The
 * parameters and running statistics are float32 (until
 * clt_module_to_dtype): an input of another dtype is refused unless the
 * layer has neither (affine 0, track_running_stats 0), as in PyTorch.
 *
 * The layer before BatchNorm (a Conv2d, a Linear) should have no bias, as
 * torchvision makes its convolutions (bias=False): BatchNorm subtracts
 * each channel's mean, which cancels a per-channel bias exactly, so the
 * bias changes nothing in the output and its gradient is zero but for
 * rounding.  It is not merely wasted: Adam (and AdamW) divides each step
 * by the gradient's running magnitude, so a gradient of rounding noise
 * still moves the bias by about the learning rate per step, and it drifts
 * (weight decay pulls it back only slowly).  BatchNorm's own bias (beta,
 * with affine) plays its part. */
CLT_API clt_status clt_batch_norm1d_layer(clt_device *dev, int64_t num_features, double eps,
                                          double momentum, int affine, int track_running_stats,
                                          clt_module **out);
CLT_API clt_status clt_batch_norm2d_layer(clt_device *dev, int64_t num_features, double eps,
                                          double momentum, int affine, int track_running_stats,
                                          clt_module **out);

/* torch.nn.Dropout(p): in train mode zeroes each element with probability
 * p (in [0, 1]; NaN is refused, which PyTorch lets through) and scales the
 * others by 1 / (1 - p); the masks come from gen (NULL: the default
 * generator) and are the same on every device for the same generator
 * state.  gen is borrowed, unlike the other layers' (which draw from it
 * only while they are made): every forward in train mode draws from it,
 * so it must outlive the layer (clt_generator_free after
 * clt_module_free).  The identity in eval mode.  In train mode with
 * 0 < p < 1 the input must be floating point (an integer or bool one is
 * CLT_ERR_DTYPE_MISMATCH, as PyTorch's "result type Float can't be cast"),
 * and nothing is drawn from gen when it is refused. */
CLT_API clt_status clt_dropout_layer(double p, clt_generator *gen, clt_module **out);

/* torch.nn.Embedding(num_embeddings, embedding_dim): rows of a weight
 * table (normal(0, 1)) picked by int64 or int32 indices of any shape
 * (clt_embedding's rules, index.h). */
CLT_API clt_status clt_embedding_layer(clt_device *dev, int64_t num_embeddings,
                                       int64_t embedding_dim, clt_generator *gen,
                                       clt_module **out);

/* The activations as layers: ReLU, GELU (exact, erf), Tanh, Sigmoid,
 * SiLU (clt_silu: floating inputs only). */
CLT_API clt_status clt_relu_layer(clt_module **out);
CLT_API clt_status clt_gelu_layer(clt_module **out);
CLT_API clt_status clt_tanh_layer(clt_module **out);
CLT_API clt_status clt_sigmoid_layer(clt_module **out);
CLT_API clt_status clt_silu_layer(clt_module **out);
/* torch.nn.Softplus(beta, threshold): clt_softplus with the layer's beta
 * and threshold, which PyTorch defaults to beta = 1, threshold = 20 (pass
 * those for nn.Softplus()).  Any values are taken, as by clt_softplus. */
CLT_API clt_status clt_softplus_layer(double beta, double threshold, clt_module **out);
/* torch.nn.LeakyReLU(negative_slope) and torch.nn.ELU(alpha): clt_leaky_relu
 * and clt_elu with the layer's scalar (PyTorch's defaults: 0.01 and 1.0;
 * pass those for nn.LeakyReLU() and nn.ELU()).  Any value is taken. */
CLT_API clt_status clt_leaky_relu_layer(double negative_slope, clt_module **out);
CLT_API clt_status clt_elu_layer(double alpha, clt_module **out);

#ifdef __cplusplus
}
#endif

#endif
