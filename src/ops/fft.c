/* fft.c: torch.fft's transforms, one dimension at a time, over the kernels
 * of cl/complex.cl: radix-2 Stockham passes for powers of two, Bluestein's
 * algorithm over them for other lengths above 64, a direct DFT (O(n) work
 * per output element) for short ones; and fftfreq, rfftfreq, fftshift and
 * ifftshift. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TRY_RET(e)                                                           \
    do {                                                                     \
        clt_status s_ = (e);                                                 \
        if (s_ != CLT_OK)                                                    \
            return s_;                                                       \
    } while (0)

clt_status clt__fft_norm(const char *norm, int *mode, const char *fn)
{
    if (norm == NULL || strcmp(norm, "backward") == 0)
        *mode = 0;
    else if (strcmp(norm, "ortho") == 0)
        *mode = 1;
    else if (strcmp(norm, "forward") == 0)
        *mode = 2;
    else {
        char q[CLT__QUOTE_SIZE];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Invalid normalization mode: '%s' (expected \"backward\", "
                          "\"ortho\" or \"forward\")",
                          fn, CLT__QUOTE(q, norm));
    }
    return CLT_OK;
}

/* The factor of a transform of length n: forward transforms scale by 1/n
 * under "forward", inverse ones under "backward", both by 1/sqrt(n) under
 * "ortho". */
static double norm_scale(int mode, bool inverse, int64_t n)
{
    if (mode == 1)
        return 1.0 / sqrt((double)n);
    if ((mode == 2 && !inverse) || (mode == 0 && inverse))
        return 1.0 / (double)n;
    return 1.0;
}

/* The complex dtype a transform computes in for input dtype dt, as torch
 * promotes (integers and bool to complex64); float16 is refused. */
static clt_status compute_dtype(const clt_tensor *x, bool want_real, clt_dtype *ct,
                                const char *fn)
{
    if (want_real && clt__dtype_is_complex(x->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s expects a real input tensor, but got %s", fn,
                          clt_dtype_name(x->dtype));
    if (clt__dtype_is_half(x->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Unsupported dtype %s (convert to float32 first)", fn,
                          clt_dtype_name(x->dtype));
    *ct = clt__complex_of(x->dtype);
    return clt__check_dtype(x->dev, *ct, fn);
}

/* Lengths the radix-2 passes take: powers of two from 8 on (shorter ones
 * go to the direct DFT, as cheap and one rounding fewer). */
/* Other lengths above this go to Bluestein's algorithm; below, the direct
 * DFT is as fast and exact to a rounding per term. */
#define BLUESTEIN_MIN 64

static bool radix2(int64_t n)
{
    return n >= 8 && (n & (n - 1)) == 0;
}

static clt__arg scale_arg(clt_dtype part, double v, cl_float *f, cl_double *d)
{
    *f = (cl_float)v;
    *d = v;
    return part == CLT_FLOAT64 ? CLT__ARG(*d) : CLT__ARG(*f);
}

/* Radix-2 passes over rows of n values (a power of two) held in *a, with
 * *b the other buffer (both contiguous complex of rows * n elements): on
 * return *a holds the transform (the two are swapped as the passes go). */
static clt_status r2_passes(clt_tensor **a, clt_tensor **b, int64_t rows, int64_t n, int sign,
                            double scale, const char *fn)
{
    clt_dtype part = clt__complex_part_dtype((*a)->dtype);
    for (int64_t nt = n, sd = 1; nt > 1; nt /= 2, sd *= 2) {
        cl_mem mx = clt__mem(*a), my = clt__mem(*b);
        cl_ulong R = (cl_ulong)rows, N = (cl_ulong)n, NT = (cl_ulong)nt, S = (cl_ulong)sd;
        cl_int sg = sign;
        cl_float sf;
        cl_double sdd;
        clt__arg args[] = {CLT__ARG(mx), CLT__ARG(my), CLT__ARG(R),  CLT__ARG(N),
                           CLT__ARG(NT), CLT__ARG(S),  CLT__ARG(sg),
                           scale_arg(part, nt == 2 ? scale : 1.0, &sf, &sdd)};
        clt_status st = clt__complex_launch((*a)->dev, part, "fft_r2_pass",
                                            (size_t)(rows * (n / 2)), 8, args, fn);
        if (st != CLT_OK)
            return st;
        clt_tensor *t = *a;
        *a = *b;
        *b = t;
    }
    return CLT_OK;
}

/* fft_load of xc's rows into the new [rows, n] tensor *out. */
static clt_status load_rows(const clt_tensor *xc, int64_t rows, int64_t m, int64_t n, bool herm,
                            clt_tensor **out, const char *fn)
{
    int64_t shape[2] = {rows, n};
    clt_status st = clt__temp_new(fn, "an FFT buffer", xc->dev, xc->dtype, 2, shape, out);
    if (st != CLT_OK)
        return st;
    cl_mem mi = clt__mem(xc), ma = clt__mem(*out);
    cl_ulong R = (cl_ulong)rows, M = (cl_ulong)m, N = (cl_ulong)n;
    cl_int h = herm;
    clt__arg args[] = {CLT__ARG(mi), CLT__ARG(ma), CLT__ARG(R),
                       CLT__ARG(M),  CLT__ARG(N),  CLT__ARG(h)};
    return clt__complex_launch(xc->dev, clt__complex_part_dtype(xc->dtype), "fft_load",
                               (size_t)(rows * n), 6, args, fn);
}

/* The last step of fast_rows and bluestein_rows: the [rows, n] complex
 * transform a (kind 0) or its first nout values (kind 1) or its real part
 * (kind 2), as a new tensor of xc's shape with last dimension nout. */
static clt_status finish_rows(const clt_tensor *xc, clt_tensor *a, int64_t nout, int kind,
                              clt_tensor **out, const char *fn)
{
    clt_dtype ct = xc->dtype, part = clt__complex_part_dtype(ct);
    int last = xc->ndim - 1;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, xc->shape, sizeof shape[0] * (size_t)xc->ndim);
    shape[last] = nout;
    clt_tensor *v = NULL, *w = NULL;
    clt_status st;
    if (kind == 2) {
        CLT__TRY(clt__complex_part(a, 0, &v));
        CLT__TRY(clt__copy_as(fn, v, part, &w));
    } else if (a->shape[1] != nout) {
        CLT__TRY(clt__narrow(a, 1, 0, nout, &v, fn));
        CLT__TRY(clt__contiguous_as(fn, v, ct, &w));
    } else {
        w = clt_tensor_retain(a);
    }
    CLT__TRY(clt__view(w, xc->ndim, shape, out, fn));
done:
    if (w == a)
        clt__tensor_unref(w);
    else
        clt_tensor_free(w);
    clt_tensor_free(v);
    return st;
}

/* The transform of rows of xc (contiguous complex, last dimension m) by
 * radix-2 passes into *out, of xc's shape with last dimension nout: kind
 * as transform1's. */
static clt_status fast_rows(const clt_tensor *xc, int64_t rows, int64_t m, int64_t n,
                            int64_t nout, int kind, int sign, double scale, clt_tensor **out,
                            const char *fn)
{
    *out = NULL;
    int64_t shape[2] = {rows, n};
    clt_tensor *a = NULL, *b = NULL;
    clt_status st;
    CLT__TRY(load_rows(xc, rows, m, n, kind == 2, &a, fn));
    CLT__TRY(clt__temp_new(fn, "an FFT buffer", xc->dev, xc->dtype, 2, shape, &b));
    CLT__TRY(r2_passes(&a, &b, rows, n, sign, scale, fn));
    CLT__TRY(finish_rows(xc, a, nout, kind, out, fn));
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

/* The same by Bluestein's algorithm for any n: three radix-2 transforms of
 * length M, the power of two of at least 2n - 1 (cl/complex.cl). */
static clt_status bluestein_rows(const clt_tensor *xc, int64_t rows, int64_t m, int64_t n,
                                 int64_t nout, int kind, int sign, double scale,
                                 clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_dtype ct = xc->dtype, part = clt__complex_part_dtype(ct);
    int64_t M = 1;
    while (M < 2 * n - 1)
        M *= 2;
    int64_t shA[2] = {rows, M}, shB[2] = {1, M}, shR[2] = {rows, n};
    clt_tensor *h = NULL, *a = NULL, *a2 = NULL, *b = NULL, *b2 = NULL, *r = NULL;
    const clt_tensor *src = xc;
    int64_t msrc = m;
    clt_status st;
    if (kind == 2) { /* the mirrored spectrum, then a complex transform */
        CLT__TRY(load_rows(xc, rows, m, n, true, &h, fn));
        src = h;
        msrc = n;
    }
    CLT__TRY(clt__temp_new(fn, "an FFT buffer", xc->dev, ct, 2, shA, &a));
    CLT__TRY(clt__temp_new(fn, "an FFT buffer", xc->dev, ct, 2, shA, &a2));
    CLT__TRY(clt__temp_new(fn, "an FFT buffer", xc->dev, ct, 2, shB, &b));
    CLT__TRY(clt__temp_new(fn, "an FFT buffer", xc->dev, ct, 2, shB, &b2));
    CLT__TRY(clt__temp_new(fn, "an FFT buffer", xc->dev, ct, 2, shR, &r));
    {
        cl_mem mi = clt__mem(src), ma = clt__mem(a), mb = clt__mem(b);
        cl_ulong R = (cl_ulong)rows, Mi = (cl_ulong)msrc, N = (cl_ulong)n, MM = (cl_ulong)M;
        cl_int sg = sign;
        clt__arg la[] = {CLT__ARG(mi), CLT__ARG(ma), CLT__ARG(R), CLT__ARG(Mi),
                         CLT__ARG(N),  CLT__ARG(MM), CLT__ARG(sg)};
        CLT__TRY(clt__complex_launch(xc->dev, part, "blu_load", (size_t)(rows * M), 7, la, fn));
        clt__arg lb[] = {CLT__ARG(mb), CLT__ARG(N), CLT__ARG(MM), CLT__ARG(sg)};
        CLT__TRY(clt__complex_launch(xc->dev, part, "blu_chirp", (size_t)M, 4, lb, fn));
    }
    CLT__TRY(r2_passes(&a, &a2, rows, M, -1, 1.0, fn));
    CLT__TRY(r2_passes(&b, &b2, 1, M, -1, 1.0, fn));
    {
        cl_mem ma = clt__mem(a), mb = clt__mem(b);
        cl_ulong R = (cl_ulong)rows, MM = (cl_ulong)M;
        clt__arg args[] = {CLT__ARG(ma), CLT__ARG(mb), CLT__ARG(R), CLT__ARG(MM)};
        CLT__TRY(clt__complex_launch(xc->dev, part, "blu_mul", (size_t)(rows * M), 4, args, fn));
    }
    CLT__TRY(r2_passes(&a, &a2, rows, M, 1, 1.0 / (double)M, fn));
    {
        cl_mem ma = clt__mem(a), mr = clt__mem(r);
        cl_ulong R = (cl_ulong)rows, MM = (cl_ulong)M, N = (cl_ulong)n, NO = (cl_ulong)n;
        cl_int sg = sign;
        cl_float sf;
        cl_double sd;
        clt__arg args[] = {CLT__ARG(ma), CLT__ARG(mr), CLT__ARG(R),  CLT__ARG(MM),
                           CLT__ARG(N),  CLT__ARG(NO), CLT__ARG(sg), scale_arg(part, scale, &sf, &sd)};
        CLT__TRY(clt__complex_launch(xc->dev, part, "blu_finish", (size_t)(rows * n), 8, args,
                                     fn));
    }
    CLT__TRY(finish_rows(xc, r, nout, kind, out, fn));
done:
    clt_tensor_free(h);
    clt_tensor_free(a);
    clt_tensor_free(a2);
    clt_tensor_free(b);
    clt_tensor_free(b2);
    clt_tensor_free(r);
    return st;
}

/* One transform along dimension d of x (already wrapped): kind 0 complex to
 * complex (n outputs), 1 real to complex (n / 2 + 1 outputs), 2 complex to
 * real (n outputs from the first half of a Hermitian spectrum).  The result
 * is contiguous. */
static clt_status transform1(const clt_tensor *x, int d, int64_t n, int kind, int sign,
                             double scale, clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_dtype ct = clt__complex_of(x->dtype), part = clt__complex_part_dtype(ct);
    int last = x->ndim - 1;
    clt_tensor *t = NULL, *xc = NULL, *r = NULL, *rb = NULL;
    clt_status st;
    CLT__TRY(clt__transpose(x, d, last, &t, fn));
    CLT__TRY(clt__complex_dense(fn, t, ct, &xc));
    int64_t m = xc->shape[last], nout = kind == 1 ? n / 2 + 1 : n, rows = 1;
    int64_t shape[CLT_MAX_DIMS];
    for (int k = 0; k < last; k++) {
        shape[k] = xc->shape[k];
        rows *= xc->shape[k];
    }
    shape[last] = nout;
    if (radix2(n) && rows > 0) {
        CLT__TRY(fast_rows(xc, rows, m, n, nout, kind, sign, scale, &r, fn));
    } else if (n > BLUESTEIN_MIN && rows > 0) {
        CLT__TRY(bluestein_rows(xc, rows, m, n, nout, kind, sign, scale, &r, fn));
    } else {
        CLT__TRY(clt__result_new(fn, x->dev, kind == 2 ? part : ct, x->ndim, shape, &r));
        cl_mem mi = clt__mem(xc), mo = clt__mem(r);
        cl_ulong R = (cl_ulong)rows, M = (cl_ulong)m, N = (cl_ulong)n, NO = (cl_ulong)nout;
        cl_int sg = sign;
        cl_float sf = (cl_float)scale;
        cl_double sd = scale;
        clt__arg sa = part == CLT_FLOAT64 ? CLT__ARG(sd) : CLT__ARG(sf);
        if (kind == 2) {
            clt__arg args[] = {CLT__ARG(mi), CLT__ARG(mo), CLT__ARG(R), CLT__ARG(M),
                               CLT__ARG(N),  CLT__ARG(sg), sa};
            CLT__TRY(clt__complex_launch(x->dev, part, "dft_c2r", (size_t)(rows * nout), 7, args,
                                         fn));
        } else {
            clt__arg args[] = {CLT__ARG(mi), CLT__ARG(mo), CLT__ARG(R),  CLT__ARG(M),
                               CLT__ARG(N),  CLT__ARG(NO), CLT__ARG(sg), sa};
            CLT__TRY(clt__complex_launch(x->dev, part, "dft_c2c", (size_t)(rows * nout), 8, args,
                                         fn));
        }
    }
    if (d != last) {
        CLT__TRY(clt__transpose(r, d, last, &rb, fn));
        clt_tensor_free(r);
        r = NULL;
        CLT__TRY(clt__contiguous(rb, &r));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(t);
    clt_tensor_free(xc);
    clt_tensor_free(r);
    clt_tensor_free(rb);
    return st;
}

static clt_status check_n(int64_t n, const char *fn)
{
    if (n < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Invalid number of data points (%lld) specified", fn, (long long)n);
    return CLT_OK;
}

clt_status clt__fft1(int which, const clt_tensor *x, int64_t n, int dim, const char *norm,
                     clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    int mode = 0, d = 0;
    clt_dtype ct;
    TRY_RET(clt__fft_norm(norm, &mode, fn));
    /* which: 0 fft, 1 ifft, 2 rfft, 3 irfft, 4 hfft, 5 ihfft */
    TRY_RET(compute_dtype(x, which == 2 || which == 5, &ct, fn));
    if (x->ndim == 0)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: Dimension specified as %d but tensor has no dimensions", fn, dim);
    TRY_RET(clt__wrap_dim(dim, x->ndim, &d, fn));
    if (n != -1 && n < 1)
        return check_n(n, fn);
    if (n == -1)
        n = which == 3 || which == 4 ? 2 * (x->shape[d] - 1) : x->shape[d];
    TRY_RET(check_n(n, fn));
    clt_status st;
    switch (which) {
    case 0: st = transform1(x, d, n, 0, -1, norm_scale(mode, false, n), out, fn); break;
    case 1: st = transform1(x, d, n, 0, 1, norm_scale(mode, true, n), out, fn); break;
    case 2: st = transform1(x, d, n, 1, -1, norm_scale(mode, false, n), out, fn); break;
    case 3: st = transform1(x, d, n, 2, 1, norm_scale(mode, true, n), out, fn); break;
    case 4: st = transform1(x, d, n, 2, -1, norm_scale(mode, false, n), out, fn); break;
    default: st = transform1(x, d, n, 1, 1, norm_scale(mode, true, n), out, fn); break;
    }
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__fftn(int which, const clt_tensor *x, int k, const int64_t *s, const int *dim,
                     const char *norm, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    int mode = 0;
    clt_dtype ct;
    /* which: 0 fftn, 1 ifftn, 2 rfftn, 3 irfftn */
    TRY_RET(clt__fft_norm(norm, &mode, fn));
    TRY_RET(compute_dtype(x, which == 2, &ct, fn));
    int dims[CLT_MAX_DIMS];
    int64_t sizes[CLT_MAX_DIMS];
    if (s == NULL && dim == NULL)
        k = x->ndim;
    if (k < 0 || k > x->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Got %d dimensions to transform but the input tensor only has %d "
                          "dimensions",
                          fn, k, x->ndim);
    for (int i = 0; i < k; i++) {
        if (dim)
            TRY_RET(clt__wrap_dim(dim[i], x->ndim, &dims[i], fn));
        else
            dims[i] = x->ndim - k + i;
        for (int j = 0; j < i; j++)
            if (dims[j] == dims[i])
                return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: FFT dims must be unique", fn);
    }
    if ((which == 2 || which == 3) && k == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s must transform at least one axis", fn);
    for (int i = 0; i < k; i++) {
        int64_t v = s ? s[i] : -1;
        if (v != -1 && v < 1)
            return check_n(v, fn);
        if (v == -1)
            v = which == 3 && i == k - 1 ? 2 * (x->shape[dims[i]] - 1) : x->shape[dims[i]];
        TRY_RET(check_n(v, fn));
        sizes[i] = v;
    }
    bool inverse = which == 1 || which == 3;
    int sign = inverse ? 1 : -1;
    clt_tensor *cur = NULL, *next = NULL;
    clt_status st = CLT_OK;
    if (k == 0) {
        st = clt__copy_as(fn, x, ct, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    /* rfftn: the real-to-complex transform along the last dim first;
     * irfftn: the complex-to-real one last. */
    const clt_tensor *src = x;
    if (which == 2) {
        CLT__TRY(transform1(x, dims[k - 1], sizes[k - 1], 1, -1,
                            norm_scale(mode, false, sizes[k - 1]), &cur, fn));
        src = cur;
    }
    int upto = which == 2 || which == 3 ? k - 1 : k;
    for (int i = 0; i < upto; i++) {
        CLT__TRY(transform1(src, dims[i], sizes[i], 0, sign, norm_scale(mode, inverse, sizes[i]),
                            &next, fn));
        clt_tensor_free(cur);
        cur = next;
        next = NULL;
        src = cur;
    }
    if (which == 3) {
        CLT__TRY(transform1(src, dims[k - 1], sizes[k - 1], 2, 1,
                            norm_scale(mode, true, sizes[k - 1]), &next, fn));
        clt_tensor_free(cur);
        cur = next;
        next = NULL;
    }
    *out = cur;
    cur = NULL;
done:
    clt_tensor_free(cur);
    clt_tensor_free(next);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__fftfreq(bool onesided, clt_device *dev, int64_t n, double d, clt_dtype dtype,
                        clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (dtype != CLT_FLOAT32 && dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: expected a float32 or float64 dtype, got %s", fn,
                          clt_dtype_name(dtype));
    TRY_RET(clt__check_dtype(dev, dtype, fn));
    if (n < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: n must be non-negative, got %lld", fn,
                          (long long)n);
    if (n > ((int64_t)1 << 40))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: n = %lld is too large", fn,
                          (long long)n);
    int64_t len = onesided ? n / 2 + 1 : n; /* rfftfreq(0) is [nan], as torch's */
    size_t es = clt_dtype_size(dtype);
    unsigned char *buf = clt__calloc(len ? (size_t)len : 1, es);
    if (buf == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    /* As torch: arange in the dtype times the dtype's 1 / (n d). */
    double step = 1.0 / ((double)n * d);
    for (int64_t i = 0; i < len; i++) {
        double v = (double)(onesided || i < (n + 1) / 2 ? i : i - n);
        if (dtype == CLT_FLOAT32) {
            float f = (float)v * (float)step;
            memcpy(buf + (size_t)i * es, &f, 4);
        } else {
            double f = v * step;
            memcpy(buf + (size_t)i * es, &f, 8);
        }
    }
    int64_t shape[1] = {len};
    clt_status st = clt__tensor_from_host_in(fn, dev, dtype, 1, shape, buf, out);
    free(buf);
    return st == CLT_OK ? clt__ok() : st;
}

/* x rolled along each dimension of dims by half its length: fftshift moves
 * element i to (i + n / 2) mod n, ifftshift undoes it.  Two strided copies
 * per dimension, so any dtype the copies take (complex ones among them). */
clt_status clt__fftshift(bool inverse, const clt_tensor *x, int k, const int *dim,
                         clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    int dims[CLT_MAX_DIMS];
    if (dim == NULL)
        k = x->ndim;
    if (k < 0 || k > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dims given", fn, k);
    for (int i = 0; i < k; i++)
        if (dim)
            TRY_RET(clt__wrap_dim(dim[i], x->ndim, &dims[i], fn));
        else
            dims[i] = i;
    TRY_RET(clt__check_dtype(x->dev, x->dtype, fn));
    clt_tensor *cur = NULL, *next = NULL, *a = NULL, *b = NULL;
    clt_status st;
    CLT__TRY(clt__copy_as(fn, x, x->dtype, &cur));
    for (int i = 0; i < k; i++) {
        int d = dims[i];
        int64_t n = cur->shape[d];
        int64_t shift = inverse ? (n + 1) / 2 : n / 2; /* out[(j + shift) % n] = in[j] */
        if (n == 0 || shift % n == 0)
            continue;
        CLT__TRY(clt__result_new(fn, cur->dev, cur->dtype, cur->ndim, cur->shape, &next));
        /* in[0, n - shift) goes to out[shift, n), in[n - shift, n) to out[0, shift) */
        CLT__TRY(clt__narrow(next, d, shift, n - shift, &a, fn));
        CLT__TRY(clt__narrow(cur, d, 0, n - shift, &b, fn));
        CLT__TRY(clt__copy_strided(a, b, fn));
        clt_tensor_free(a);
        clt_tensor_free(b);
        a = b = NULL;
        CLT__TRY(clt__narrow(next, d, 0, shift, &a, fn));
        CLT__TRY(clt__narrow(cur, d, n - shift, shift, &b, fn));
        CLT__TRY(clt__copy_strided(a, b, fn));
        clt_tensor_free(a);
        clt_tensor_free(b);
        a = b = NULL;
        clt_tensor_free(cur);
        cur = next;
        next = NULL;
    }
    *out = cur;
    cur = NULL;
done:
    clt_tensor_free(cur);
    clt_tensor_free(next);
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st == CLT_OK ? clt__ok() : st;
}
