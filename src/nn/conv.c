/* conv.c: the convolution and pooling layers (torch.nn.Conv2d, MaxPool2d,
 * AvgPool2d, AdaptiveAvgPool2d) over the ops of conv.h. */

#include "nn/nn.h"
#include "ops/conv.h"

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
    if (in_channels <= 0 || out_channels <= 0 || kernel_h <= 0 || kernel_w <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: in_channels (%lld), out_channels (%lld) and the kernel size "
                          "(%lld x %lld) must be positive",
                          fn, (long long)in_channels, (long long)out_channels,
                          (long long)kernel_h, (long long)kernel_w);
    if (o->groups <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: groups must be a positive integer",
                          fn);
    if (in_channels % o->groups != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: in_channels must be divisible by groups",
                          fn);
    if (out_channels % o->groups != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: out_channels must be divisible by groups", fn);
    for (int d = 0; d < 2; d++)
        if (o->stride[d] <= 0 || o->padding[d] < 0 || o->dilation[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: stride {%lld, %lld} and dilation {%lld, %lld} must be "
                              "positive, padding {%lld, %lld} not negative",
                              fn, (long long)o->stride[0], (long long)o->stride[1],
                              (long long)o->dilation[0], (long long)o->dilation[1],
                              (long long)o->padding[0], (long long)o->padding[1]);
    /* the weight's shape first: fan_in multiplies three of its sizes */
    int64_t ws[4] = {out_channels, in_channels / o->groups, kernel_h, kernel_w};
    clt_status st = clt__check_shape(4, ws, fn);
    if (st != CLT_OK)
        return st;
    clt_module *m = NULL;
    st = clt__module_new(&conv2d_ops, dev, &m);
    if (st != CLT_OK)
        return st;
    int64_t v[9] = {o->stride[0],   o->stride[1],   o->padding[0], o->padding[1],
                    o->dilation[0], o->dilation[1], o->groups,     in_channels,
                    out_channels};
    for (int k = 0; k < 9; k++)
        m->i[k] = v[k];
    st = clt__module_weight_bias(m, gen, 4, ws, in_channels / o->groups * kernel_h * kernel_w,
                                 bias, fn);
    if (st != CLT_OK) {
        clt_module_free(m);
        return st;
    }
    *out = m;
    return clt__ok();
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
