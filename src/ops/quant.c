/* quant.c: the launches of cl/quant.cl without autograd: fake
 * quantization with its mask, the learnable fake quantization's
 * elementwise gradients, and quantization to an integer dtype.  Public
 * entry points, with their autograd, are in src/autograd/grad_quant.c. */
#include "internal.h"

static const char *quant_options(clt_dtype t, clt_dtype q, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT][CLT_DTYPE_COUNT];
    const char *opts = clt__opts_cached(&slots[t][q], "T", t, "Q", q, "");
    if (opts == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return opts;
}

/* scale and zp must be contiguous float32 tensors of nch elements on x's
 * device (checked by the callers). */
clt_status clt__fake_quant(const char *fn, const clt_tensor *x, const clt_tensor *scale,
                           const clt_tensor *zp, bool zp_float, int64_t inner, int64_t nch,
                           int64_t qmin, int64_t qmax, clt_tensor **out, clt_tensor **mask)
{
    *out = NULL;
    if (mask)
        *mask = NULL;
    clt_status st = CLT_OK;
    clt_tensor *xc = NULL, *r = NULL, *m = NULL;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, x->ndim, x->shape, &r));
    CLT__TRY(clt__temp_new(fn, "the mask", x->dev, CLT_BOOL, x->ndim, x->shape, &m));
    if (x->numel > 0) {
        const char *opts = quant_options(x->dtype, x->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &xc));
        cl_mem mo = clt__mem(r), mm = clt__mem(m), mx = clt__mem(xc), ms = clt__mem(scale),
               mz = clt__mem(zp);
        cl_ulong cin = (cl_ulong)(inner > 0 ? inner : 1), cch = (cl_ulong)nch,
                 cnt = (cl_ulong)x->numel;
        cl_long lo = qmin, hi = qmax;
        cl_int zf = zp_float;
        size_t gws = (size_t)x->numel;
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mm),  CLT__ARG(mx), CLT__ARG(ms),
                           CLT__ARG(mz), CLT__ARG(cin), CLT__ARG(cch), CLT__ARG(lo),
                           CLT__ARG(hi), CLT__ARG(zf),  CLT__ARG(cnt)};
        CLT__TRY(clt__error_in(
            clt__launch(x->dev, "quant", opts, "fake_quant", 1, &gws, NULL, 11, args), fn));
    }
    *out = r;
    r = NULL;
    if (mask) {
        *mask = m;
        m = NULL;
    }
done:
    clt_tensor_free(xc);
    clt_tensor_free(r);
    clt_tensor_free(m);
    return st;
}

clt_status clt__fake_quant_learn_grad(const char *fn, const clt_tensor *x, const clt_tensor *dy,
                                      const clt_tensor *scale, const clt_tensor *zp,
                                      int64_t inner, int64_t nch, int64_t qmin, int64_t qmax,
                                      double grad_factor, clt_tensor **dx, clt_tensor **ds,
                                      clt_tensor **dz)
{
    *dx = *ds = *dz = NULL;
    clt_status st = CLT_OK;
    clt_tensor *xc = NULL, *gc = NULL, *r[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++)
        CLT__TRY(clt__result_new(fn, x->dev, CLT_FLOAT32, x->ndim, x->shape, &r[k]));
    if (x->numel > 0) {
        const char *opts = quant_options(CLT_FLOAT32, CLT_FLOAT32, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__contiguous_as(fn, x, CLT_FLOAT32, &xc));
        CLT__TRY(clt__contiguous_as(fn, dy, CLT_FLOAT32, &gc));
        cl_mem m0 = clt__mem(r[0]), m1 = clt__mem(r[1]), m2 = clt__mem(r[2]), mx = clt__mem(xc),
               mg = clt__mem(gc), ms = clt__mem(scale), mz = clt__mem(zp);
        cl_ulong cin = (cl_ulong)(inner > 0 ? inner : 1), cch = (cl_ulong)nch,
                 cnt = (cl_ulong)x->numel;
        cl_long lo = qmin, hi = qmax;
        cl_float gf = (cl_float)grad_factor;
        size_t gws = (size_t)x->numel;
        clt__arg args[] = {CLT__ARG(m0),  CLT__ARG(m1), CLT__ARG(m2), CLT__ARG(mx),
                           CLT__ARG(mg),  CLT__ARG(ms), CLT__ARG(mz), CLT__ARG(cin),
                           CLT__ARG(cch), CLT__ARG(lo), CLT__ARG(hi), CLT__ARG(gf),
                           CLT__ARG(cnt)};
        CLT__TRY(clt__error_in(clt__launch(x->dev, "quant", opts, "fake_quant_learn_grad", 1,
                                           &gws, NULL, 13, args),
                               fn));
    } else {
        for (int k = 0; k < 3; k++)
            CLT__TRY(clt__fill_value(r[k], 0.0));
    }
    *dx = r[0];
    *ds = r[1];
    *dz = r[2];
    r[0] = r[1] = r[2] = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(gc);
    for (int k = 0; k < 3; k++)
        clt_tensor_free(r[k]);
    return st;
}

/* The frame of the launches that map x elementwise to a new tensor of
 * dtype rt: quant.cl built for T = t and Q = q, `kernel`'s arguments the
 * result, x (contiguous in its own dtype), the n extra ones and the
 * element count. */
static clt_status quant_map(const char *fn, const clt_tensor *x, clt_dtype t, clt_dtype q,
                            clt_dtype rt, const char *kernel, size_t n, const clt__arg *extra,
                            clt_tensor **out)
{
    *out = NULL;
    clt_status st = CLT_OK;
    clt_tensor *xc = NULL, *r = NULL;
    CLT__TRY(clt__result_new(fn, x->dev, rt, x->ndim, x->shape, &r));
    if (x->numel > 0) {
        const char *opts = quant_options(t, q, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &xc));
        cl_mem mo = clt__mem(r), mx = clt__mem(xc);
        cl_ulong cnt = (cl_ulong)x->numel;
        size_t gws = (size_t)x->numel;
        clt__arg args[12] = {CLT__ARG(mo), CLT__ARG(mx)};
        for (size_t k = 0; k < n; k++)
            args[2 + k] = extra[k];
        args[2 + n] = CLT__ARG(cnt);
        CLT__TRY(clt__error_in(
            clt__launch(x->dev, "quant", opts, kernel, 1, &gws, NULL, n + 3, args), fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(r);
    return st;
}

clt_status clt__quantize(const char *fn, const clt_tensor *x, double scale, int64_t zero_point,
                         clt_dtype qt, int64_t qmin, int64_t qmax, clt_tensor **out)
{
    cl_float inv = 1.0f / (float)scale, z = (cl_float)zero_point;
    cl_long lo = qmin, hi = qmax;
    clt__arg args[] = {CLT__ARG(inv), CLT__ARG(z), CLT__ARG(lo), CLT__ARG(hi)};
    return quant_map(fn, x, x->dtype, qt, qt, "quantize", 4, args, out);
}

clt_status clt__quantize_channel(const char *fn, const clt_tensor *x, const clt_tensor *scale,
                                 const clt_tensor *zp, int64_t inner, int64_t nch, clt_dtype qt,
                                 int64_t qmin, int64_t qmax, clt_tensor **out)
{
    cl_mem ms = clt__mem(scale), mz = clt__mem(zp);
    cl_ulong cin = (cl_ulong)(inner > 0 ? inner : 1), cch = (cl_ulong)nch;
    cl_long lo = qmin, hi = qmax;
    clt__arg args[] = {CLT__ARG(ms),  CLT__ARG(mz), CLT__ARG(cin),
                       CLT__ARG(cch), CLT__ARG(lo), CLT__ARG(hi)};
    return quant_map(fn, x, x->dtype, qt, qt, "quantize_channel", 6, args, out);
}

clt_status clt__dequantize_channel(const char *fn, const clt_tensor *q, const clt_tensor *scale,
                                   const clt_tensor *zp, int64_t inner, int64_t nch,
                                   clt_tensor **out)
{
    cl_mem ms = clt__mem(scale), mz = clt__mem(zp);
    cl_ulong cin = (cl_ulong)(inner > 0 ? inner : 1), cch = (cl_ulong)nch;
    clt__arg args[] = {CLT__ARG(ms), CLT__ARG(mz), CLT__ARG(cin), CLT__ARG(cch)};
    return quant_map(fn, q, CLT_FLOAT32, q->dtype, CLT_FLOAT32, "dequantize_channel", 4, args,
                     out);
}
