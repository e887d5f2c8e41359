/* grad_fft.c: the public complex and torch.fft functions.  A complex result
 * is never recorded (clt__record refuses one when an input requires grad);
 * fftshift and ifftshift, which move values, carry gradients. */
#include <string.h>

#include "autograd/autograd.h"

/* Never runs: clt__record refuses complex results before a node exists. */
static clt_status bw_complex(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                      "the derivative for '%s' is not implemented for complex dtypes", n->name);
}

static clt_status rec1(clt_status st, clt_tensor **out, const char *name, const clt_tensor *x)
{
    return clt__record(st, out, name, bw_complex, 1, &x, 0, NULL, NULL);
}

static clt_status rec2(clt_status st, clt_tensor **out, const char *name, const clt_tensor *a,
                       const clt_tensor *b)
{
    const clt_tensor *in[2] = {a, b};
    return clt__record(st, out, name, bw_complex, 2, in, 0, NULL, NULL);
}

clt_status clt_view_as_real(const clt_tensor *t, clt_tensor **out)
{
    return rec1(clt__view_as_real(t, out, "clt_view_as_real"), out, "ViewAsRealBackward0", t);
}

clt_status clt_view_as_complex(const clt_tensor *t, clt_tensor **out)
{
    return rec1(clt__view_as_complex(t, out, "clt_view_as_complex"), out,
                "ViewAsComplexBackward0", t);
}

clt_status clt_real(const clt_tensor *t, clt_tensor **out)
{
    if (t && !clt__dtype_is_complex(t->dtype)) {
        /* torch.real of a real tensor is the tensor itself: its history too */
        CLT__REQUIRE_ARG(out, "clt_real");
        *out = NULL;
        clt_status st = clt__alias_history(t, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    return rec1(clt__real_imag(t, 0, out, "clt_real"), out, "RealBackward0", t);
}

clt_status clt_imag(const clt_tensor *t, clt_tensor **out)
{
    return rec1(clt__real_imag(t, 1, out, "clt_imag"), out, "ImagBackward0", t);
}

clt_status clt_conj(const clt_tensor *t, clt_tensor **out)
{
    if (t && !clt__dtype_is_complex(t->dtype)) {
        CLT__REQUIRE_ARG(out, "clt_conj");
        *out = NULL;
        clt_status st = clt__alias_history(t, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    return rec1(clt__complex_unary(2, t, out, "clt_conj"), out, "ConjBackward0", t);
}

clt_status clt_angle(const clt_tensor *t, clt_tensor **out)
{
    clt_status st = clt__complex_unary(1, t, out, "clt_angle");
    if (st == CLT_OK && clt__requires_grad(t)) {
        /* the angle of a real tensor is piecewise constant: torch's
         * gradient is zero, which needs a recorded node; not implemented */
        clt_tensor_free(*out);
        *out = NULL;
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "clt_angle: autograd is not implemented for angle (detach the input)");
    }
    return st;
}

clt_status clt_polar(const clt_tensor *abs, const clt_tensor *angle, clt_tensor **out)
{
    return rec2(clt__complex_make(0, abs, angle, out, "clt_polar"), out, "PolarBackward0", abs,
                angle);
}

clt_status clt_complex(const clt_tensor *real, const clt_tensor *imag, clt_tensor **out)
{
    return rec2(clt__complex_make(1, real, imag, out, "clt_complex"), out, "ComplexBackward0",
                real, imag);
}

/* A real result from a real input that requires grad (irfft of a real
 * spectrum, hfft): refused, as no backward is implemented. */
static clt_status no_grad_real(clt_status st, clt_tensor **out, const clt_tensor *x,
                               const char *fn)
{
    if (st == CLT_OK && clt__requires_grad(x)) {
        clt_tensor_free(*out);
        *out = NULL;
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: autograd is not implemented for the FFTs (detach the input)", fn);
    }
    return st;
}

#define DEF_FFT1(name, which, node)                                                      \
    clt_status clt_fft_##name(const clt_tensor *x, int64_t n, int dim, const char *norm,   \
                              clt_tensor **out)                                          \
    {                                                                                    \
        clt_status st = clt__fft1(which, x, n, dim, norm, out, "clt_fft_" #name);        \
        if (st == CLT_OK && !clt__dtype_is_complex((*out)->dtype))                       \
            return no_grad_real(st, out, x, "clt_fft_" #name);                           \
        return rec1(st, out, node, x);                                                   \
    }

DEF_FFT1(fft, 0, "FftC2CBackward0")
DEF_FFT1(ifft, 1, "FftC2CBackward0")
DEF_FFT1(rfft, 2, "FftR2CBackward0")
DEF_FFT1(irfft, 3, "FftC2RBackward0")
DEF_FFT1(hfft, 4, "FftC2RBackward0")
DEF_FFT1(ihfft, 5, "FftR2CBackward0")

#define DEF_FFTN(name, which, node)                                                      \
    clt_status clt_fft_##name(const clt_tensor *x, int k, const int64_t *s, const int *dim, \
                              const char *norm, clt_tensor **out)                        \
    {                                                                                    \
        clt_status st = clt__fftn(which, x, k, s, dim, norm, out, "clt_fft_" #name);     \
        if (st == CLT_OK && !clt__dtype_is_complex((*out)->dtype))                       \
            return no_grad_real(st, out, x, "clt_fft_" #name);                           \
        return rec1(st, out, node, x);                                                   \
    }

DEF_FFTN(fftn, 0, "FftC2CBackward0")
DEF_FFTN(ifftn, 1, "FftC2CBackward0")
DEF_FFTN(rfftn, 2, "FftR2CBackward0")
DEF_FFTN(irfftn, 3, "FftC2RBackward0")

#define DEF_FFT2(name, which, node)                                                      \
    clt_status clt_fft_##name(const clt_tensor *x, const int64_t *s, const int *dim,      \
                              const char *norm, clt_tensor **out)                        \
    {                                                                                    \
        static const int last2[2] = {-2, -1};                                            \
        clt_status st = clt__fftn(which, x, 2, s, dim ? dim : last2, norm, out,          \
                                  "clt_fft_" #name);                                     \
        if (st == CLT_OK && !clt__dtype_is_complex((*out)->dtype))                       \
            return no_grad_real(st, out, x, "clt_fft_" #name);                           \
        return rec1(st, out, node, x);                                                   \
    }

DEF_FFT2(fft2, 0, "FftC2CBackward0")
DEF_FFT2(ifft2, 1, "FftC2CBackward0")
DEF_FFT2(rfft2, 2, "FftR2CBackward0")
DEF_FFT2(irfft2, 3, "FftC2RBackward0")

clt_status clt_fft_fftfreq(clt_device *dev, int64_t n, double d, clt_dtype dtype,
                           clt_tensor **out)
{
    return clt__fftfreq(false, dev, n, d, dtype, out, "clt_fft_fftfreq");
}

clt_status clt_fft_rfftfreq(clt_device *dev, int64_t n, double d, clt_dtype dtype,
                            clt_tensor **out)
{
    return clt__fftfreq(true, dev, n, d, dtype, out, "clt_fft_rfftfreq");
}

/* The gradient of a shift is the opposite shift of the gradient. */
static clt_status bw_shift(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int k = (int)n->i[0], dims[CLT_MAX_DIMS];
    for (int j = 0; j < k; j++)
        dims[j] = (int)n->i[2 + j];
    return clt__fftshift(n->i[1] == 0, g, k, dims, &gin[0], "clt_backward");
}

static clt_status shift(bool inverse, const clt_tensor *x, int k, const int *dim, clt_tensor **out,
                        const char *fn)
{
    clt__node *n = NULL;
    clt_status st = clt__fftshift(inverse, x, k, dim, out, fn);
    st = clt__record(st, out, inverse ? "IfftshiftBackward0" : "FftshiftBackward0", bw_shift, 1,
                     &x, 0, NULL, &n);
    if (n) {
        int kk = dim ? k : x->ndim;
        n->i[0] = kk;
        n->i[1] = inverse;
        for (int j = 0; j < kk; j++)
            n->i[2 + j] = dim ? dim[j] : j;
    }
    return st;
}

clt_status clt_fft_fftshift(const clt_tensor *x, int k, const int *dim, clt_tensor **out)
{
    return shift(false, x, k, dim, out, "clt_fft_fftshift");
}

clt_status clt_fft_ifftshift(const clt_tensor *x, int k, const int *dim, clt_tensor **out)
{
    return shift(true, x, k, dim, out, "clt_fft_ifftshift");
}
