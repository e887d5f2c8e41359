/* conv.c: the convolution, pooling and upsampling layers (torch.nn.Conv1d,
 * Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
 * MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool2d, Upsample,
 * UpsamplingNearest2d, UpsamplingBilinear2d) over the ops of conv.h. */

#include <stdio.h>

#include "nn/nn.h"
#include "ops/conv.h"

/* "{a, b}" (or "{a}", "{a, b, c}") of the nd sizes v into buf. */
static const char *sizes_str(char *buf, size_t len, int nd, const int64_t *v)
{
    if (nd == 1)
        snprintf(buf, len, "{%lld}", (long long)v[0]);
    else if (nd == 2)
        snprintf(buf, len, "{%lld, %lld}", (long long)v[0], (long long)v[1]);
    else
        snprintf(buf, len, "{%lld, %lld, %lld}", (long long)v[0], (long long)v[1],
                 (long long)v[2]);
    return buf;
}

/* The settings of a convolution layer of nd (1 to 3) spatial dimensions,
 * as torch.nn's _ConvNd checks them. */
static clt_status layer_check(const char *fn, int64_t in_channels, int64_t out_channels, int nd,
                              const int64_t *kernel, const int64_t *stride,
                              const int64_t *padding, const int64_t *dilation, int64_t groups)
{
    char k[48], s[48], d[48], p[48];
    bool bad = in_channels <= 0 || out_channels <= 0;
    for (int i = 0; i < nd; i++)
        bad = bad || kernel[i] <= 0;
    if (nd == 1)
        snprintf(k, sizeof k, "%lld", (long long)kernel[0]);
    else if (nd == 2)
        snprintf(k, sizeof k, "%lld x %lld", (long long)kernel[0], (long long)kernel[1]);
    else
        snprintf(k, sizeof k, "%lld x %lld x %lld", (long long)kernel[0], (long long)kernel[1],
                 (long long)kernel[2]);
    if (bad)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: in_channels (%lld), out_channels (%lld) and the kernel size "
                          "(%s) must be positive",
                          fn, (long long)in_channels, (long long)out_channels, k);
    if (groups <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: groups must be a positive integer",
                          fn);
    if (in_channels % groups != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: in_channels must be divisible by groups",
                          fn);
    if (out_channels % groups != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: out_channels must be divisible by groups", fn);
    for (int i = 0; i < nd; i++)
        if (stride[i] <= 0 || padding[i] < 0 || dilation[i] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: stride %s and dilation %s must be positive, padding %s not "
                              "negative",
                              fn, sizes_str(s, sizeof s, nd, stride),
                              sizes_str(d, sizeof d, nd, dilation),
                              sizes_str(p, sizeof p, nd, padding));
    return CLT_OK;
}

/* A new layer of ops on dev with the settings v[0..nv) in i, a "weight" of
 * shape ws (ndim sizes) and, when bias, a "bias" of bias_n elements, all
 * uniform in +-1 / sqrt(fan_in) from gen: torch.nn's reset_parameters of
 * the convolutions. */
static clt_status conv_layer_new(const clt__module_ops *ops, clt_device *dev, int nv,
                                 const int64_t *v, int ndim, const int64_t *ws, int64_t bias_n,
                                 int bias, clt_generator *gen, const char *fn, clt_module **out)
{
    /* the weight's shape first: fan_in multiplies its sizes after the first
     * (torch's _calculate_fan_in_and_fan_out, ConvTranspose2d's too) */
    clt_status st = clt__check_shape(ndim, ws, fn);
    if (st != CLT_OK)
        return st;
    int64_t fan_in = 1;
    for (int d = 1; d < ndim; d++)
        fan_in *= ws[d];
    clt_module *m = NULL;
    st = clt__module_new(ops, dev, &m);
    if (st != CLT_OK)
        return st;
    for (int k = 0; k < nv; k++)
        m->i[k] = v[k];
    st = clt__module_weight_bias_n(m, gen, ndim, ws, fan_in, bias_n, bias, fn);
    if (st != CLT_OK) {
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
}

/* ---- Conv2d --------------------------------------------------------------------------- */

/* i[0..6]: stride, padding, dilation, groups; i[7], i[8]: in and out
 * channels. */
static clt_status conv2d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, "Conv2d");
    if (st == CLT_OK)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, "Conv2d");
    if (st != CLT_OK)
        return st;
    clt_conv2d_opts o = {{m->i[0], m->i[1]}, {m->i[2], m->i[3]}, {m->i[4], m->i[5]}, m->i[6]};
    return clt__conv2d_rec("Conv2d", x, m->params[0], m->nparams > 1 ? m->params[1] : NULL, &o,
                           out);
}

static const clt__module_ops conv2d_ops = {"Conv2d", conv2d_forward, NULL, NULL};

clt_status clt_conv2d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                            int64_t kernel_h, int64_t kernel_w, const clt_conv2d_opts *opts,
                            int bias, clt_generator *gen, clt_module **out)
{
    const char *fn = "clt_conv2d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    const clt_conv2d_opts defaults = CLT_CONV2D_DEFAULTS;
    const clt_conv2d_opts *o = opts ? opts : &defaults;
    int64_t kernel[2] = {kernel_h, kernel_w};
    clt_status st = layer_check(fn, in_channels, out_channels, 2, kernel, o->stride, o->padding,
                                o->dilation, o->groups);
    if (st != CLT_OK)
        return st;
    int64_t ws[4] = {out_channels, in_channels / o->groups, kernel_h, kernel_w};
    int64_t v[9] = {o->stride[0],   o->stride[1],   o->padding[0], o->padding[1],
                    o->dilation[0], o->dilation[1], o->groups,     in_channels,
                    out_channels};
    return conv_layer_new(&conv2d_ops, dev, 9, v, 4, ws, out_channels, bias, gen, fn, out);
}

/* ---- Conv1d --------------------------------------------------------------------------- */

/* i[0..3]: stride, padding, dilation, groups; i[4], i[5]: in and out
 * channels. */
static clt_status conv1d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, "Conv1d");
    if (st == CLT_OK)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, "Conv1d");
    if (st != CLT_OK)
        return st;
    clt_conv1d_opts o = {m->i[0], m->i[1], m->i[2], m->i[3]};
    return clt__conv1d_rec("Conv1d", x, m->params[0], m->nparams > 1 ? m->params[1] : NULL, &o,
                           out);
}

static const clt__module_ops conv1d_ops = {"Conv1d", conv1d_forward, NULL, NULL};

clt_status clt_conv1d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                            int64_t kernel_size, const clt_conv1d_opts *opts, int bias,
                            clt_generator *gen, clt_module **out)
{
    const char *fn = "clt_conv1d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    const clt_conv1d_opts defaults = CLT_CONV1D_DEFAULTS;
    const clt_conv1d_opts *o = opts ? opts : &defaults;
    clt_status st = layer_check(fn, in_channels, out_channels, 1, &kernel_size, &o->stride,
                                &o->padding, &o->dilation, o->groups);
    if (st != CLT_OK)
        return st;
    int64_t ws[3] = {out_channels, in_channels / o->groups, kernel_size};
    int64_t v[6] = {o->stride, o->padding, o->dilation, o->groups, in_channels, out_channels};
    return conv_layer_new(&conv1d_ops, dev, 6, v, 3, ws, out_channels, bias, gen, fn, out);
}

/* ---- ConvTranspose2d -------------------------------------------------------------------- */

/* i[0..8]: stride, padding, output_padding, groups, dilation; i[9], i[10]:
 * in and out channels. */
static clt_status conv_transpose2d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "ConvTranspose2d";
    clt_status st = clt__module_check_device(m, x, fn);
    if (st == CLT_OK)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, fn);
    if (st != CLT_OK)
        return st;
    clt_conv_transpose2d_opts o = {{m->i[0], m->i[1]}, {m->i[2], m->i[3]}, {m->i[4], m->i[5]},
                                   m->i[6], {m->i[7], m->i[8]}};
    return clt__conv_transpose2d_rec(fn, x, m->params[0], m->nparams > 1 ? m->params[1] : NULL,
                                     &o, out);
}

static const clt__module_ops conv_transpose2d_ops = {"ConvTranspose2d", conv_transpose2d_forward,
                                                     NULL, NULL};

clt_status clt_conv_transpose2d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                      int64_t kernel_h, int64_t kernel_w,
                                      const clt_conv_transpose2d_opts *opts, int bias,
                                      clt_generator *gen, clt_module **out)
{
    const char *fn = "clt_conv_transpose2d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    const clt_conv_transpose2d_opts defaults = CLT_CONV_TRANSPOSE2D_DEFAULTS;
    const clt_conv_transpose2d_opts *o = opts ? opts : &defaults;
    int64_t kernel[2] = {kernel_h, kernel_w};
    clt_status st = layer_check(fn, in_channels, out_channels, 2, kernel, o->stride, o->padding,
                                o->dilation, o->groups);
    if (st != CLT_OK)
        return st;
    clt__conv_opts co = {2, {o->stride[0], o->stride[1]}, {0}, {o->dilation[0], o->dilation[1]},
                         {o->output_padding[0], o->output_padding[1]}, o->groups};
    if ((st = clt__output_padding_check(&co, fn)) != CLT_OK)
        return st;
    /* PyTorch's layout [in, out / groups, kH, kW]; kaiming_uniform_ takes
     * fan_in from its second size, so both bounds are 1 / sqrt(out / groups
     * kH kW) */
    int64_t ws[4] = {in_channels, out_channels / o->groups, kernel_h, kernel_w};
    int64_t v[11] = {o->stride[0],         o->stride[1],  o->padding[0],  o->padding[1],
                     o->output_padding[0], o->output_padding[1], o->groups, o->dilation[0],
                     o->dilation[1],       in_channels,   out_channels};
    return conv_layer_new(&conv_transpose2d_ops, dev, 11, v, 4, ws, out_channels, bias, gen, fn,
                          out);
}

/* ---- Conv3d ---------------------------------------------------------------------------- */

/* i[0..9]: stride, padding, dilation (three each), groups; i[10], i[11]:
 * in and out channels. */
static clt_status conv3d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, "Conv3d");
    if (st == CLT_OK)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, "Conv3d");
    if (st != CLT_OK)
        return st;
    clt_conv3d_opts o = {{m->i[0], m->i[1], m->i[2]},
                         {m->i[3], m->i[4], m->i[5]},
                         {m->i[6], m->i[7], m->i[8]},
                         m->i[9]};
    return clt__conv3d_rec("Conv3d", x, m->params[0], m->nparams > 1 ? m->params[1] : NULL, &o,
                           out);
}

static const clt__module_ops conv3d_ops = {"Conv3d", conv3d_forward, NULL, NULL};

clt_status clt_conv3d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                            const int64_t kernel_size[3], const clt_conv3d_opts *opts, int bias,
                            clt_generator *gen, clt_module **out)
{
    const char *fn = "clt_conv3d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(kernel_size, fn);
    const clt_conv3d_opts defaults = CLT_CONV3D_DEFAULTS;
    const clt_conv3d_opts *o = opts ? opts : &defaults;
    clt_status st = layer_check(fn, in_channels, out_channels, 3, kernel_size, o->stride,
                                o->padding, o->dilation, o->groups);
    if (st != CLT_OK)
        return st;
    int64_t ws[5] = {out_channels, in_channels / o->groups, kernel_size[0], kernel_size[1],
                     kernel_size[2]};
    int64_t v[12];
    for (int d = 0; d < 3; d++) {
        v[d] = o->stride[d];
        v[3 + d] = o->padding[d];
        v[6 + d] = o->dilation[d];
    }
    v[9] = o->groups, v[10] = in_channels, v[11] = out_channels;
    return conv_layer_new(&conv3d_ops, dev, 12, v, 5, ws, out_channels, bias, gen, fn, out);
}

/* ---- ConvTranspose1d and ConvTranspose3d ------------------------------------------------- */

/* ConvTranspose1d's i[0..4]: stride, padding, output_padding, groups,
 * dilation; i[5], i[6]: in and out channels. */
static clt_status conv_transpose1d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "ConvTranspose1d";
    clt_status st = clt__module_check_device(m, x, fn);
    if (st == CLT_OK)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, fn);
    if (st != CLT_OK)
        return st;
    clt_conv_transpose1d_opts o = {m->i[0], m->i[1], m->i[2], m->i[3], m->i[4]};
    return clt__conv_transpose1d_rec(fn, x, m->params[0], m->nparams > 1 ? m->params[1] : NULL,
                                     &o, out);
}

static const clt__module_ops conv_transpose1d_ops = {"ConvTranspose1d", conv_transpose1d_forward,
                                                     NULL, NULL};

/* A transposed convolution layer of nd (1 or 3) spatial dims: the checks,
 * PyTorch's weight layout [in, out / groups, k...] and initialisation
 * (kaiming_uniform_ takes fan_in from the second size, so both bounds are
 * 1 / sqrt(out / groups prod(k))). */
static clt_status transposed_layer_new(const clt__module_ops *ops, clt_device *dev,
                                       int64_t in_channels, int64_t out_channels, int nd,
                                       const int64_t *kernel, const clt__conv_opts *co,
                                       int nv, const int64_t *v, int bias, clt_generator *gen,
                                       const char *fn, clt_module **out)
{
    clt_status st = layer_check(fn, in_channels, out_channels, nd, kernel, co->stride,
                                co->padding, co->dilation, co->groups);
    if (st != CLT_OK)
        return st;
    if ((st = clt__output_padding_check(co, fn)) != CLT_OK)
        return st;
    int64_t ws[5] = {in_channels, out_channels / co->groups};
    for (int d = 0; d < nd; d++)
        ws[2 + d] = kernel[d];
    return conv_layer_new(ops, dev, nv, v, nd + 2, ws, out_channels, bias, gen, fn, out);
}

clt_status clt_conv_transpose1d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                      int64_t kernel_size, const clt_conv_transpose1d_opts *opts,
                                      int bias, clt_generator *gen, clt_module **out)
{
    const char *fn = "clt_conv_transpose1d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    const clt_conv_transpose1d_opts defaults = CLT_CONV_TRANSPOSE1D_DEFAULTS;
    const clt_conv_transpose1d_opts *o = opts ? opts : &defaults;
    clt__conv_opts co = {1, {o->stride}, {o->padding}, {o->dilation}, {o->output_padding},
                         o->groups};
    int64_t v[7] = {o->stride, o->padding, o->output_padding, o->groups, o->dilation,
                    in_channels, out_channels};
    return transposed_layer_new(&conv_transpose1d_ops, dev, in_channels, out_channels, 1,
                                &kernel_size, &co, 7, v, bias, gen, fn, out);
}

/* ConvTranspose3d's i[0..12]: stride, padding, output_padding (three
 * each), groups, dilation (three); i[13], i[14]: in and out channels. */
static clt_status conv_transpose3d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "ConvTranspose3d";
    clt_status st = clt__module_check_device(m, x, fn);
    if (st == CLT_OK)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, fn);
    if (st != CLT_OK)
        return st;
    clt_conv_transpose3d_opts o = {{m->i[0], m->i[1], m->i[2]},
                                   {m->i[3], m->i[4], m->i[5]},
                                   {m->i[6], m->i[7], m->i[8]},
                                   m->i[9],
                                   {m->i[10], m->i[11], m->i[12]}};
    return clt__conv_transpose3d_rec(fn, x, m->params[0], m->nparams > 1 ? m->params[1] : NULL,
                                     &o, out);
}

static const clt__module_ops conv_transpose3d_ops = {"ConvTranspose3d", conv_transpose3d_forward,
                                                     NULL, NULL};

clt_status clt_conv_transpose3d_layer(clt_device *dev, int64_t in_channels, int64_t out_channels,
                                      const int64_t kernel_size[3],
                                      const clt_conv_transpose3d_opts *opts, int bias,
                                      clt_generator *gen, clt_module **out)
{
    const char *fn = "clt_conv_transpose3d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(kernel_size, fn);
    const clt_conv_transpose3d_opts defaults = CLT_CONV_TRANSPOSE3D_DEFAULTS;
    const clt_conv_transpose3d_opts *o = opts ? opts : &defaults;
    clt__conv_opts co = {3, {0}, {0}, {0}, {0}, o->groups};
    int64_t v[15];
    for (int d = 0; d < 3; d++) {
        co.stride[d] = v[d] = o->stride[d];
        co.padding[d] = v[3 + d] = o->padding[d];
        co.output_padding[d] = v[6 + d] = o->output_padding[d];
        co.dilation[d] = v[10 + d] = o->dilation[d];
    }
    v[9] = o->groups, v[13] = in_channels, v[14] = out_channels;
    return transposed_layer_new(&conv_transpose3d_ops, dev, in_channels, out_channels, 3,
                                kernel_size, &co, 15, v, bias, gen, fn, out);
}

/* ---- MaxPool2d and AvgPool2d ------------------------------------------------------------ */

/* i[0..1] kernel, i[2..3] stride, i[4..5] padding, i[6..7] dilation,
 * i[8] ceil_mode, i[9] count_include_pad. */
static clt_status max_pool2d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__pool2d_rec("MaxPool2d", true, x, &m->i[0], &m->i[2], &m->i[4], &m->i[6],
                           (int)m->i[8], 1, out);
}

static clt_status avg_pool2d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__pool2d_rec("AvgPool2d", false, x, &m->i[0], &m->i[2], &m->i[4], NULL,
                           (int)m->i[8], (int)m->i[9], out);
}

static const clt__module_ops max_pool2d_ops = {"MaxPool2d", max_pool2d_forward, NULL, NULL};
static const clt__module_ops avg_pool2d_ops = {"AvgPool2d", avg_pool2d_forward, NULL, NULL};

static clt_status pool_layer(const clt__module_ops *ops, int64_t kernel_h, int64_t kernel_w,
                             const clt_pool2d_opts *opts, const char *fn, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    const clt_pool2d_opts defaults = CLT_POOL2D_DEFAULTS;
    const clt_pool2d_opts *o = opts ? opts : &defaults;
    if (kernel_h <= 0 || kernel_w <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kernel size should be greater than zero, but got kH: %lld kW: "
                          "%lld",
                          fn, (long long)kernel_h, (long long)kernel_w);
    clt_module *m = NULL;
    clt_status st = clt__module_new(ops, NULL, &m);
    if (st != CLT_OK)
        return st;
    bool default_stride = o->stride[0] == 0 && o->stride[1] == 0;
    int64_t v[10] = {kernel_h,
                     kernel_w,
                     default_stride ? kernel_h : o->stride[0],
                     default_stride ? kernel_w : o->stride[1],
                     o->padding[0],
                     o->padding[1],
                     o->dilation[0],
                     o->dilation[1],
                     o->ceil_mode != 0,
                     o->count_include_pad != 0};
    for (int k = 0; k < 10; k++)
        m->i[k] = v[k];
    *out = m;
    return clt__ok();
}

clt_status clt_max_pool2d_layer(int64_t kernel_h, int64_t kernel_w, const clt_pool2d_opts *opts,
                                clt_module **out)
{
    return pool_layer(&max_pool2d_ops, kernel_h, kernel_w, opts, "clt_max_pool2d_layer", out);
}

clt_status clt_avg_pool2d_layer(int64_t kernel_h, int64_t kernel_w, const clt_pool2d_opts *opts,
                                clt_module **out)
{
    return pool_layer(&avg_pool2d_ops, kernel_h, kernel_w, opts, "clt_avg_pool2d_layer", out);
}

/* ---- MaxPool1d and AvgPool1d ------------------------------------------------------------ */

/* i[0] kernel, i[1] stride, i[2] padding, i[3] dilation, i[4] ceil_mode,
 * i[5] count_include_pad. */
static clt_status pool1d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    bool max = m->i[6];
    return clt__pool1d_rec(max ? "MaxPool1d" : "AvgPool1d", max, x, m->i[0], m->i[1], m->i[2],
                           m->i[3], (int)m->i[4], (int)m->i[5], out);
}

static const clt__module_ops max_pool1d_ops = {"MaxPool1d", pool1d_forward, NULL, NULL};
static const clt__module_ops avg_pool1d_ops = {"AvgPool1d", pool1d_forward, NULL, NULL};

static clt_status pool1d_layer(bool max, int64_t kernel, const clt_pool1d_opts *opts,
                               const char *fn, clt_module **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    const clt_pool1d_opts defaults = CLT_POOL1D_DEFAULTS;
    const clt_pool1d_opts *o = opts ? opts : &defaults;
    if (kernel <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kernel size should be greater than zero, but got %lld", fn,
                          (long long)kernel);
    clt_status st = clt__module_new(max ? &max_pool1d_ops : &avg_pool1d_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    int64_t v[7] = {kernel,          o->stride ? o->stride : kernel, o->padding,
                    o->dilation,     o->ceil_mode != 0,              o->count_include_pad != 0,
                    max};
    for (int k = 0; k < 7; k++)
        (*out)->i[k] = v[k];
    return clt__ok();
}

clt_status clt_max_pool1d_layer(int64_t kernel, const clt_pool1d_opts *opts, clt_module **out)
{
    return pool1d_layer(true, kernel, opts, "clt_max_pool1d_layer", out);
}

clt_status clt_avg_pool1d_layer(int64_t kernel, const clt_pool1d_opts *opts, clt_module **out)
{
    return pool1d_layer(false, kernel, opts, "clt_avg_pool1d_layer", out);
}

/* ---- AdaptiveAvgPool2d ------------------------------------------------------------------ */

/* i[0..1]: the output size. */
static clt_status adaptive_avg_pool2d_forward(clt_module *m, const clt_tensor *x,
                                              clt_tensor **out)
{
    return clt__adaptive_avg_pool2d_rec("AdaptiveAvgPool2d", x, &m->i[0], out);
}

static const clt__module_ops adaptive_avg_pool2d_ops = {"AdaptiveAvgPool2d",
                                                        adaptive_avg_pool2d_forward, NULL, NULL};

clt_status clt_adaptive_avg_pool2d_layer(int64_t out_h, int64_t out_w, clt_module **out)
{
    static const char fn[] = "clt_adaptive_avg_pool2d_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    int64_t size[2] = {out_h, out_w};
    clt_status st = clt__adaptive_size_check(size, fn);
    if (st == CLT_OK)
        st = clt__module_new(&adaptive_avg_pool2d_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = out_h;
    (*out)->i[1] = out_w;
    return clt__ok();
}

/* ---- Upsample ---------------------------------------------------------------------------- */

/* i[0..2]: the sizes, f[0..2]: the scale factors, i[3] the mode, i[4]
 * align_corners, i[5] whether the sizes are given (else the scales), i[6]
 * the spatial rank, i[7] recompute_scale_factor. */
static clt_status upsample_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    return clt__interpolate_nd_rec(m->ops->name, x, (int)m->i[6], m->i[5] ? &m->i[0] : NULL,
                                   m->i[5] ? NULL : &m->f[0], (int)m->i[3], (int)m->i[4],
                                   (int)m->i[7], out);
}

static const clt__module_ops upsample_ops = {"Upsample", upsample_forward, NULL, NULL};
static const clt__module_ops nearest2d_ops = {"UpsamplingNearest2d", upsample_forward, NULL, NULL};
static const clt__module_ops bilinear2d_ops = {"UpsamplingBilinear2d", upsample_forward, NULL,
                                               NULL};

static clt_status upsample_new(const clt__module_ops *ops, int nd, const int64_t *size,
                               const double *scale_factor, clt_interp_mode mode, int align_corners,
                               int recompute, clt_module **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (nd < 1 || nd > 3)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the number of spatial dimensions must be 1, 2 or 3, not %d", fn,
                          nd);
    clt__interp u;
    clt_status st = clt__interp_check(NULL, nd, size, scale_factor, (int)mode, align_corners,
                                      recompute, &u, fn);
    for (int d = 0; st == CLT_OK && size && d < nd; d++)
        if (size[d] <= 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: output sizes should be greater than 0, but got %lld for "
                            "dimension %d",
                            fn, (long long)size[d], d);
    if (st == CLT_OK)
        st = clt__module_new(ops, NULL, out);
    if (st != CLT_OK)
        return st;
    clt_module *m = *out;
    for (int d = 0; d < nd; d++) {
        m->i[d] = size ? size[d] : 0;
        m->f[d] = scale_factor ? scale_factor[d] : 0;
    }
    m->i[3] = mode;
    m->i[4] = align_corners != 0;
    m->i[5] = size != NULL;
    m->i[6] = nd;
    m->i[7] = recompute != 0;
    return clt__ok();
}

clt_status clt_upsample_layer(const int64_t size[2], const double scale_factor[2],
                              clt_interp_mode mode, int align_corners, clt_module **out)
{
    return upsample_new(&upsample_ops, 2, size, scale_factor, mode, align_corners, 0, out,
                        "clt_upsample_layer");
}

clt_status clt_upsample_nd_layer(int nd, const int64_t *size, const double *scale_factor,
                                 clt_interp_mode mode, int align_corners,
                                 int recompute_scale_factor, clt_module **out)
{
    return upsample_new(&upsample_ops, nd, size, scale_factor, mode, align_corners,
                        recompute_scale_factor, out, "clt_upsample_nd_layer");
}

clt_status clt_upsampling_nearest2d_layer(const int64_t size[2], const double scale_factor[2],
                                          clt_module **out)
{
    return upsample_new(&nearest2d_ops, 2, size, scale_factor, CLT_INTERP_NEAREST, 0, 0, out,
                        "clt_upsampling_nearest2d_layer");
}

clt_status clt_upsampling_bilinear2d_layer(const int64_t size[2], const double scale_factor[2],
                                           clt_module **out)
{
    return upsample_new(&bilinear2d_ops, 2, size, scale_factor, CLT_INTERP_BILINEAR, 1, 0, out,
                        "clt_upsampling_bilinear2d_layer");
}
