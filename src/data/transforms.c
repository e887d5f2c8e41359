/* transforms.c: torchvision.transforms' functional forms and their random
 * counterparts on device image batches, composed from ops (views, pad,
 * interpolate, where); the random ones draw each sample's parameters from a
 * clt_generator, read back once per call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* x as an image batch [..., H, W] of at least `least` dimensions. */
static clt_status check_image(const clt_tensor *x, int least, const char *fn)
{
    int nd = clt_tensor_ndim(x);
    if (nd < least)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected a tensor image of at least %d dimensions (%s), got %d",
                          fn, least,
                          least == 2   ? "..., H, W"
                          : least == 3 ? "..., C, H, W"
                                       : "N, C, H, W",
                          nd);
    return CLT_OK;
}

static bool is_float(clt_dtype dt)
{
    return clt__dtype_is_float(dt);
}

/* ---- deterministic ------------------------------------------------------------------------ */

clt_status clt_tf_normalize(const clt_tensor *x, const double *mean, const double *std, int c,
                            clt_tensor **out)
{
    static const char fn[] = "clt_tf_normalize";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(mean, fn);
    CLT__REQUIRE_ARG(std, fn);
    clt_status st = check_image(x, 3, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype dt = clt_tensor_dtype(x);
    if (!is_float(dt))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: Input tensor should be a float tensor. Got %s.", fn,
                          clt_dtype_name(dt));
    int nd = clt_tensor_ndim(x);
    int64_t ch = clt_tensor_size(x, nd - 3);
    if (c != 1 && c != ch)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %d means and stds for an image of %lld channels (1 or one per "
                          "channel)",
                          fn, c, (long long)ch);
    for (int k = 0; k < c; k++)
        if (std[k] == 0.0 || !isfinite(std[k]) || !isfinite(mean[k]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: std evaluated to zero after conversion to %s, leading to "
                              "division by zero (or a mean or std not finite), channel %d",
                              fn, clt_dtype_name(dt), k);
    double *mv = clt__malloc((size_t)c * 2 * sizeof(double));
    if (mv == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(mv, mean, (size_t)c * sizeof(double));
    memcpy(mv + c, std, (size_t)c * sizeof(double));
    clt_tensor *m64 = NULL, *s64 = NULL, *m = NULL, *s = NULL, *d = NULL, *r = NULL;
    int64_t shape[3] = {c, 1, 1};
    st = clt_scope_begin();
    if (st != CLT_OK) {
        free(mv);
        return st;
    }
    clt_device *dev = clt_tensor_device(x);
    /* The statistics as float64 on the host, converted once to x's dtype
     * (torch.as_tensor(mean, dtype=tensor.dtype)). */
    double *hm = mv, *hs = mv + c;
    float fm[64], fs[64];
    const void *pm = hm, *ps = hs;
    clt_dtype hdt = CLT_FLOAT64;
    if (dt != CLT_FLOAT64 && c <= 64) {
        for (int k = 0; k < c; k++)
            fm[k] = (float)hm[k], fs[k] = (float)hs[k];
        pm = fm, ps = fs, hdt = CLT_FLOAT32;
    }
    CLT__TRY(clt_tensor_from_host(dev, hdt, 3, shape, pm, &m64));
    CLT__TRY(clt_tensor_from_host(dev, hdt, 3, shape, ps, &s64));
    CLT__TRY(clt_to_dtype(m64, dt, &m));
    CLT__TRY(clt_to_dtype(s64, dt, &s));
    CLT__TRY(clt_sub(x, m, &d));
    CLT__TRY(clt_div(d, s, &r));
done:
    free(mv);
    *out = r;
    return clt__scope_finish(clt__error_in(st, fn), out);
}

static clt_status flip_last(const clt_tensor *x, int back, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_image(x, 2, fn);
    if (st != CLT_OK)
        return st;
    int dim = clt_tensor_ndim(x) - back;
    return clt__error_in(clt_flip(x, &dim, 1, out), fn);
}

clt_status clt_tf_hflip(const clt_tensor *x, clt_tensor **out)
{
    return flip_last(x, 1, out, "clt_tf_hflip");
}

clt_status clt_tf_vflip(const clt_tensor *x, clt_tensor **out)
{
    return flip_last(x, 2, out, "clt_tf_vflip");
}

/* torchvision's crop: the box may pass the image, the rest zeros (constant
 * pad with negative sizes crops). */
static clt_status crop_in(const clt_tensor *x, int64_t top, int64_t left, int64_t h, int64_t w,
                          clt_tensor **out, const char *fn)
{
    int nd = clt_tensor_ndim(x);
    int64_t H = clt_tensor_size(x, nd - 2), W = clt_tensor_size(x, nd - 1);
    if (h <= 0 || w <= 0 || top < -(INT64_MAX / 4) || left < -(INT64_MAX / 4) ||
        top > INT64_MAX / 4 || left > INT64_MAX / 4 || h > INT64_MAX / 4 || w > INT64_MAX / 4)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a crop of %lld x %lld at (%lld, %lld): sizes are positive", fn,
                          (long long)h, (long long)w, (long long)top, (long long)left);
    if (top >= 0 && left >= 0 && top + h <= H && left + w <= W) {
        /* inside: a view, as torchvision's slicing */
        clt_tensor *a = NULL;
        clt_status st = clt_narrow(x, nd - 2, top, h, &a);
        if (st == CLT_OK)
            st = clt_narrow(a, nd - 1, left, w, out);
        clt_tensor_free(a);
        return clt__error_in(st, fn);
    }
    if (top >= H || left >= W || top + h <= 0 || left + w <= 0) {
        /* nothing of the image in the box: zeros */
        int64_t shape[CLT_MAX_DIMS];
        memcpy(shape, clt_tensor_shape(x), sizeof(int64_t) * (size_t)nd);
        shape[nd - 2] = h, shape[nd - 1] = w;
        return clt__error_in(clt_zeros(clt_tensor_device(x), clt_tensor_dtype(x), nd, shape, out),
                             fn);
    }
    int64_t pad[4] = {-left, left + w - W, -top, top + h - H};
    return clt__error_in(clt_pad(x, pad, 4, CLT_PAD_CONSTANT, 0.0, out), fn);
}

clt_status clt_tf_crop(const clt_tensor *x, int64_t top, int64_t left, int64_t height,
                       int64_t width, clt_tensor **out)
{
    static const char fn[] = "clt_tf_crop";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_image(x, 2, fn);
    if (st != CLT_OK)
        return st;
    return crop_in(x, top, left, height, width, out, fn);
}

/* A crop's size: both positive (and far from overflowing the sums made
 * with them). */
static clt_status check_batch(const clt_tensor *x, int least, const char *fn);

/* The entry checks of a crop: x an image of rank >= min_rank (a batch of
 * them when batch), and a crop size both transforms accept. */
static clt_status check_crop(const clt_tensor *x, int min_rank, bool batch, int64_t height,
                             int64_t width, const char *fn)
{
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = batch ? check_batch(x, min_rank, fn) : check_image(x, min_rank, fn);
    if (st != CLT_OK)
        return st;
    if (height <= 0 || width <= 0 || height > INT64_MAX / 4 || width > INT64_MAX / 4)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: crop size %lld x %lld: sizes are positive", fn,
                          (long long)height, (long long)width);
    return CLT_OK;
}

/* Python's round() of d / 2 for d >= 0: halves to even. */
static int64_t half_round_even(int64_t d)
{
    int64_t k = d / 2;
    if (d % 2 == 0)
        return k;
    return k % 2 == 0 ? k : k + 1;
}

clt_status clt_tf_center_crop(const clt_tensor *x, int64_t height, int64_t width,
                              clt_tensor **out)
{
    static const char fn[] = "clt_tf_center_crop";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_crop(x, 2, false, height, width, fn);
    if (st != CLT_OK)
        return st;
    int nd = clt_tensor_ndim(x);
    int64_t H = clt_tensor_size(x, nd - 2), W = clt_tensor_size(x, nd - 1);
    /* Smaller than the crop: zeros around it first, (d // 2) before and
     * ((d + 1) // 2) after, as torchvision; then the crop at Python's
     * round((H - h) / 2). */
    int64_t pt = height > H ? (height - H) / 2 : 0, pb = height > H ? (height - H + 1) / 2 : 0;
    int64_t pl = width > W ? (width - W) / 2 : 0, pr = width > W ? (width - W + 1) / 2 : 0;
    int64_t top = half_round_even(H + pt + pb - height);
    int64_t left = half_round_even(W + pl + pr - width);
    return crop_in(x, top - pt, left - pl, height, width, out, fn);
}

clt_status clt_tf_pad(const clt_tensor *x, const int64_t *padding, int n, clt_pad_mode mode,
                      double fill, clt_tensor **out)
{
    static const char fn[] = "clt_tf_pad";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(padding, fn);
    clt_status st = check_image(x, 2, fn);
    if (st != CLT_OK)
        return st;
    int64_t l, t, r, b;
    if (n == 1)
        l = t = r = b = padding[0];
    else if (n == 2)
        l = r = padding[0], t = b = padding[1];
    else if (n == 4)
        l = padding[0], t = padding[1], r = padding[2], b = padding[3];
    else
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Padding must be an int or a 1, 2, or 4 element tuple, not a %d "
                          "element tuple",
                          fn, n);
    if (mode != CLT_PAD_CONSTANT && fill != 0.0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: fill %g is for constant padding only", fn, fill);
    if (mode != CLT_PAD_CONSTANT && mode != CLT_PAD_REFLECT && mode != CLT_PAD_REPLICATE)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Padding mode should be constant, edge (replicate) or reflect "
                          "(got %d)",
                          fn, (int)mode);
    int64_t pad[4] = {l, r, t, b};
    int nd = clt_tensor_ndim(x);
    if (mode == CLT_PAD_CONSTANT || nd == 3 || nd == 4)
        return clt__error_in(clt_pad(x, pad, 4, mode, fill, out), fn);
    /* reflect and replicate pad 3-D or 4-D: [H, W] and [..., C, H, W] as
     * [1, H, W] and [B, C, H, W], as torchvision reshapes them */
    clt_tensor *v = NULL, *p = NULL;
    int64_t shape[CLT_MAX_DIMS];
    shape[0] = 1;
    for (int d = 0; d < nd - 3; d++)
        shape[0] *= clt_tensor_size(x, d);
    int vnd = nd == 2 ? 3 : 4;
    if (nd == 2)
        shape[1] = clt_tensor_size(x, 0), shape[2] = clt_tensor_size(x, 1);
    else
        for (int d = 0; d < 3; d++)
            shape[1 + d] = clt_tensor_size(x, nd - 3 + d);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    CLT__TRY(clt_reshape(x, vnd, shape, &v));
    CLT__TRY(clt_pad(v, pad, 4, mode, 0.0, &p));
    memcpy(shape, clt_tensor_shape(x), sizeof(int64_t) * (size_t)nd);
    shape[nd - 2] = clt_tensor_size(p, vnd - 2);
    shape[nd - 1] = clt_tensor_size(p, vnd - 1);
    CLT__TRY(clt_reshape(p, nd, shape, out));
done:
    return clt__scope_finish(clt__error_in(st, fn), out);
}

/* The output size of torchvision's resize: (h, w) for two sizes; one size
 * is the smaller edge's, the other edge int(size * long / short). */
static clt_status resize_size(int64_t H, int64_t W, const int64_t *size, int nsize,
                              int64_t *oh, int64_t *ow, const char *fn)
{
    if (nsize != 1 && nsize != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Size must be an int or a 1 or 2 element tuple/list, not a %d "
                          "element tuple/list",
                          fn, nsize);
    for (int k = 0; k < nsize; k++)
        if (size[k] <= 0 || size[k] > (int64_t)1 << 31)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: size %lld: sizes are positive",
                              fn, (long long)size[k]);
    if (nsize == 2) {
        *oh = size[0], *ow = size[1];
        return CLT_OK;
    }
    int64_t s = H <= W ? H : W, l = H <= W ? W : H;
    int64_t ns = size[0], nl = s > 0 ? (int64_t)((double)size[0] * (double)l / (double)s) : 0;
    if (H <= W)
        *oh = ns, *ow = nl;
    else
        *oh = nl, *ow = ns;
    return CLT_OK;
}

/* interpolate of a [..., C, H, W] float image to (oh, ow) as 4-D. */
static clt_status resize_to(const clt_tensor *x, int64_t oh, int64_t ow, clt_interp_mode mode,
                            clt_tensor **out, const char *fn)
{
    int nd = clt_tensor_ndim(x);
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, clt_tensor_shape(x), sizeof(int64_t) * (size_t)nd);
    int64_t b = 1;
    for (int d = 0; d < nd - 3; d++)
        b *= shape[d];
    int64_t s4[4] = {b, shape[nd - 3], shape[nd - 2], shape[nd - 1]};
    clt_tensor *v = NULL, *r = NULL, *c = NULL;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    int64_t size[2] = {oh, ow};
    CLT__TRY(clt_contiguous(x, &c));
    CLT__TRY(clt_reshape(c, 4, s4, &v));
    CLT__TRY(clt_interpolate_nd(v, size, NULL, mode, 0, 0, &r));
    shape[nd - 2] = oh, shape[nd - 1] = ow;
    CLT__TRY(clt_reshape(r, nd, shape, out));
done:
    return clt__scope_finish(clt__error_in(st, fn), out);
}

static clt_status check_resize(const clt_tensor *x, clt_interp_mode mode, const char *fn)
{
    clt_status st = check_image(x, 3, fn);
    if (st != CLT_OK)
        return st;
    if (!is_float(clt_tensor_dtype(x)) || clt__dtype_is_half(clt_tensor_dtype(x)))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: resizing takes float32 or float64 images, got %s (convert with "
                          "clt_tf_convert_image_dtype)",
                          fn, clt_dtype_name(clt_tensor_dtype(x)));
    if (mode != CLT_INTERP_NEAREST && mode != CLT_INTERP_BILINEAR &&
        mode != CLT_INTERP_BICUBIC && mode != CLT_INTERP_NEAREST_EXACT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: interpolation %d: nearest, nearest-exact, bilinear or bicubic",
                          fn, (int)mode);
    return CLT_OK;
}

clt_status clt_tf_resize(const clt_tensor *x, const int64_t *size, int nsize,
                         clt_interp_mode mode, clt_tensor **out)
{
    static const char fn[] = "clt_tf_resize";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    CLT__REQUIRE_ARG(size, fn);
    clt_status st = check_resize(x, mode, fn);
    if (st != CLT_OK)
        return st;
    int nd = clt_tensor_ndim(x);
    int64_t oh = 0, ow = 0;
    st = resize_size(clt_tensor_size(x, nd - 2), clt_tensor_size(x, nd - 1), size, nsize, &oh,
                     &ow, fn);
    if (st == CLT_OK && (oh <= 0 || ow <= 0))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: an empty image resizes to %lld x %lld",
                        fn, (long long)oh, (long long)ow);
    if (st != CLT_OK)
        return st;
    return resize_to(x, oh, ow, mode, out, fn);
}

/* torchvision's _max_value: the largest value of an integer image dtype,
 * 1 for the floating ones; 0 for the dtypes images do not take. */
static double image_max(clt_dtype dt)
{
    switch (dt) {
    case CLT_UINT8:
        return 255.0;
    case CLT_INT8:
        return 127.0;
    case CLT_INT16:
        return 32767.0;
    case CLT_INT32:
        return 2147483647.0;
    case CLT_INT64:
        return 9223372036854775807.0; /* 2^63 as a double, as Python's float() */
    default:
        return is_float(dt) ? 1.0 : 0.0;
    }
}

clt_status clt_tf_convert_image_dtype(const clt_tensor *x, clt_dtype dtype, clt_tensor **out)
{
    static const char fn[] = "clt_tf_convert_image_dtype";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_dtype dt = clt_tensor_dtype(x);
    bool fin = is_float(dt), fout = is_float(dtype);
    double imax = image_max(dt), omax = clt__dtype_valid(dtype) ? image_max(dtype) : 0.0;
    if (imax == 0.0 || omax == 0.0)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: from %s to %s: images are uint8, int8, int16, int32, int64 (0 .. "
                          "their largest value) or floating (0 .. 1)",
                          fn, clt_dtype_name(dt),
                          clt__dtype_valid(dtype) ? clt_dtype_name(dtype) : "an unknown dtype");
    if (fin && ((dt == CLT_FLOAT32 && (dtype == CLT_INT32 || dtype == CLT_INT64)) ||
                (dt == CLT_FLOAT64 && dtype == CLT_INT64)))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: The cast from %s to %s cannot be performed safely.", fn,
                          clt_dtype_name(dt), clt_dtype_name(dtype));
    if (dt == dtype)
        return clt__error_in(clt_clone(x, out), fn);
    if (fin && fout)
        return clt__error_in(clt_to_dtype(x, dtype, out), fn);
    clt_tensor *a = NULL;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    if (fin) {
        /* (image * (max + 1 - eps)).to(dtype), eps 1e-3, as torchvision */
        CLT__TRY(clt_mul_scalar(x, omax + 1.0 - 1e-3, &a));
        CLT__TRY(clt_to_dtype(a, dtype, out));
    } else if (fout) {
        /* image.to(dtype) / max */
        CLT__TRY(clt_to_dtype(x, dtype, &a));
        CLT__TRY(clt_div_scalar(a, imax, out));
    } else if (imax > omax) {
        /* floor division by the ratio of the ranges, then the cast */
        CLT__TRY(clt_floor_divide_scalar(x, floor((imax + 1.0) / (omax + 1.0)), &a));
        CLT__TRY(clt_to_dtype(a, dtype, out));
    } else {
        /* the cast, then the product by the ratio of the ranges */
        CLT__TRY(clt_to_dtype(x, dtype, &a));
        CLT__TRY(clt_mul_scalar(a, floor((omax + 1.0) / (imax + 1.0)), out));
    }
done:
    return clt__scope_finish(clt__error_in(st, fn), out);
}

clt_status clt_tf_to_tensor(const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "clt_tf_to_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_image(x, 3, fn);
    if (st != CLT_OK)
        return st;
    if (clt_tensor_dtype(x) != CLT_UINT8)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: takes uint8 images [..., H, W, C], got %s", fn,
                          clt_dtype_name(clt_tensor_dtype(x)));
    int nd = clt_tensor_ndim(x), src = nd - 1, dst = nd - 3;
    clt_tensor *m = NULL, *c = NULL;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    CLT__TRY(clt_movedim(x, &src, &dst, 1, &m));
    CLT__TRY(clt_contiguous(m, &c));
    CLT__TRY(clt_tf_convert_image_dtype(c, CLT_FLOAT32, out));
done:
    return clt__scope_finish(clt__error_in(st, fn), out);
}

/* ---- random ------------------------------------------------------------------------------- */

/* k uniforms in [0, 1) per sample of n, drawn with one clt_rand on x's
 * device and read back: *u (release with free). */
static clt_status draw(clt_generator *gen, const clt_tensor *x, int64_t n, int k, float **u,
                       const char *fn)
{
    *u = NULL;
    int64_t shape[2] = {n, k};
    clt_tensor *r = NULL;
    size_t bytes = (size_t)(n ? n : 1) * (size_t)k * sizeof(float);
    float *h = clt__malloc(bytes);
    if (h == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = clt_rand(gen, clt_tensor_device(x), CLT_FLOAT32, 2, shape, &r);
    if (st == CLT_OK && n > 0)
        st = clt_tensor_read(r, h, (size_t)n * (size_t)k * sizeof(float));
    clt_tensor_free(r);
    if (st != CLT_OK) {
        free(h);
        return clt__error_in(st, fn);
    }
    *u = h;
    return CLT_OK;
}

/* torch.randint(lo, hi) from one uniform. */
static int64_t randint(float u, int64_t lo, int64_t hi)
{
    int64_t r = lo + (int64_t)((double)u * (double)(hi - lo));
    return r < hi ? r : hi - 1;
}

static double uniform(float u, double a, double b)
{
    return a + (double)u * (b - a);
}

/* The samples of x (dim 0) one by one through `one`, joined again. */
typedef clt_status (*per_sample)(const clt_tensor *s, const int64_t *p, void *ctx,
                                 clt_tensor **out);

static clt_status each_sample(const clt_tensor *x, const int64_t *params, int np,
                              per_sample one, void *ctx, clt_tensor **out, const char *fn)
{
    int64_t n = clt_tensor_size(x, 0);
    clt_tensor **parts = clt__calloc((size_t)(n ? n : 1), sizeof *parts);
    if (parts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK) {
        free(parts);
        return st;
    }
    for (int64_t i = 0; i < n; i++) {
        clt_tensor *s = NULL;
        CLT__TRY(clt_narrow(x, 0, i, 1, &s));
        CLT__TRY(one(s, params + i * np, ctx, &parts[i]));
    }
    CLT__TRY(clt_cat((const clt_tensor *const *)parts, (size_t)n, 0, out));
done:
    free(parts);
    return clt__scope_finish(clt__error_in(st, fn), out);
}

static clt_status check_batch(const clt_tensor *x, int least, const char *fn)
{
    clt_status st = check_image(x, least, fn);
    if (st == CLT_OK && clt_tensor_size(x, 0) == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: an empty batch", fn);
    return st;
}

static bool prob_ok(double p)
{
    return p >= 0.0 && p <= 1.0;
}

clt_status clt_tf_random_horizontal_flip(clt_generator *gen, const clt_tensor *x, double p,
                                         clt_tensor **out)
{
    static const char fn[] = "clt_tf_random_horizontal_flip";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_batch(x, 3, fn);
    if (st != CLT_OK)
        return st;
    if (!prob_ok(p))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: probability p=%g should be between 0 and 1", fn, p);
    int nd = clt_tensor_ndim(x);
    int64_t n = clt_tensor_size(x, 0);
    float *u = NULL;
    if ((st = draw(gen, x, n, 1, &u, fn)) != CLT_OK)
        return st;
    unsigned char *flag = clt__malloc((size_t)n);
    if (flag == NULL) {
        free(u);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (int64_t i = 0; i < n; i++)
        flag[i] = u[i] < p; /* torch.rand(1) < p */
    int64_t shape[CLT_MAX_DIMS];
    shape[0] = n;
    for (int d = 1; d < nd; d++)
        shape[d] = 1;
    clt_tensor *m = NULL, *f = NULL;
    int dim = nd - 1;
    if ((st = clt_scope_begin()) != CLT_OK)
        goto out;
    CLT__TRY(clt_tensor_from_host(clt_tensor_device(x), CLT_BOOL, nd, shape, flag, &m));
    CLT__TRY(clt_flip(x, &dim, 1, &f));
    CLT__TRY(clt_where(m, f, x, out));
done:
    st = clt__scope_finish(clt__error_in(st, fn), out);
out:
    free(u);
    free(flag);
    return st;
}

static clt_status crop_one(const clt_tensor *s, const int64_t *p, void *ctx, clt_tensor **out)
{
    return crop_in(s, p[0], p[1], p[2], p[3], out, ctx);
}

clt_status clt_tf_random_crop(clt_generator *gen, const clt_tensor *x, int64_t height,
                              int64_t width, const int64_t *padding, int npadding,
                              int pad_if_needed, double fill, clt_pad_mode mode,
                              clt_tensor **out)
{
    static const char fn[] = "clt_tf_random_crop";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_crop(x, 3, true, height, width, fn);
    if (st != CLT_OK)
        return st;
    if (npadding > 0)
        CLT__REQUIRE_ARG(padding, fn);
    int nd = clt_tensor_ndim(x);
    int64_t n = clt_tensor_size(x, 0);
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    int64_t *params = NULL;
    float *u = NULL;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    a = (clt_tensor *)x;
    if (npadding > 0) {
        CLT__TRY(clt_tf_pad(x, padding, npadding, mode, fill, &b));
        a = b;
    }
    int64_t H = clt_tensor_size(a, nd - 2), W = clt_tensor_size(a, nd - 1);
    if (pad_if_needed && (W < width || H < height)) {
        int64_t pw = W < width ? width - W : 0, ph = H < height ? height - H : 0;
        int64_t pad2[2] = {pw, ph};
        CLT__TRY(clt_tf_pad(a, pad2, 2, mode, fill, &c));
        a = c;
        H = clt_tensor_size(a, nd - 2), W = clt_tensor_size(a, nd - 1);
    }
    if (H < height || W < width) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: Required crop size (%lld, %lld) is larger than input image size "
                        "(%lld, %lld)",
                        fn, (long long)height, (long long)width, (long long)H, (long long)W);
        goto done;
    }
    CLT__TRY(draw(gen, x, n, 2, &u, fn));
    params = clt__malloc((size_t)n * 4 * sizeof(int64_t));
    if (params == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        params[i * 4] = randint(u[i * 2], 0, H - height + 1);
        params[i * 4 + 1] = randint(u[i * 2 + 1], 0, W - width + 1);
        params[i * 4 + 2] = height;
        params[i * 4 + 3] = width;
    }
    CLT__TRY(each_sample(a, params, 4, crop_one, (void *)fn, out, fn));
done:
    free(u);
    free(params);
    return clt__scope_finish(clt__error_in(st, fn), out);
}

static bool range_ok(const double *r)
{
    return isfinite(r[0]) && isfinite(r[1]) && r[0] <= r[1];
}

typedef struct rrc_ctx {
    int64_t oh, ow;
    clt_interp_mode mode;
    const char *fn;
} rrc_ctx;

static clt_status resized_crop_one(const clt_tensor *s, const int64_t *p, void *ctx,
                                   clt_tensor **out)
{
    const rrc_ctx *c = ctx;
    clt_tensor *a = NULL;
    clt_status st = crop_in(s, p[0], p[1], p[2], p[3], &a, c->fn);
    if (st == CLT_OK)
        st = resize_to(a, c->oh, c->ow, c->mode, out, c->fn);
    clt_tensor_free(a);
    return st;
}

clt_status clt_tf_random_resized_crop(clt_generator *gen, const clt_tensor *x, int64_t height,
                                      int64_t width, const double scale[2],
                                      const double ratio[2], clt_interp_mode mode,
                                      clt_tensor **out)
{
    static const char fn[] = "clt_tf_random_resized_crop";
    static const double dscale[2] = {0.08, 1.0}, dratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_batch(x, 4, fn);
    if (st == CLT_OK)
        st = check_resize(x, mode, fn);
    if (st != CLT_OK)
        return st;
    if (scale == NULL)
        scale = dscale;
    if (ratio == NULL)
        ratio = dratio;
    if (height <= 0 || width <= 0 || height > (int64_t)1 << 31 || width > (int64_t)1 << 31)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: size %lld x %lld: sizes are positive",
                          fn, (long long)height, (long long)width);
    if (!range_ok(scale) || !range_ok(ratio) || scale[0] < 0.0 || ratio[0] <= 0.0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Scale and ratio should be of kind (min, max), scale >= 0 and "
                          "ratio > 0 (got (%g, %g) and (%g, %g))",
                          fn, scale[0], scale[1], ratio[0], ratio[1]);
    int nd = clt_tensor_ndim(x);
    int64_t n = clt_tensor_size(x, 0), H = clt_tensor_size(x, nd - 2),
            W = clt_tensor_size(x, nd - 1);
    if (H == 0 || W == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: an empty image (%lld x %lld)", fn,
                          (long long)H, (long long)W);
    enum { TRIES = 10, PER = TRIES * 4 };
    float *u = NULL;
    if ((st = draw(gen, x, n, PER, &u, fn)) != CLT_OK)
        return st;
    int64_t *params = clt__malloc((size_t)n * 4 * sizeof(int64_t));
    if (params == NULL) {
        free(u);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    /* torchvision's RandomResizedCrop.get_params, per sample */
    double area = (double)H * (double)W, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
    for (int64_t i = 0; i < n; i++) {
        const float *v = u + i * PER;
        int64_t *p = params + i * 4;
        bool found = false;
        for (int t = 0; t < TRIES && !found; t++, v += 4) {
            double target = area * uniform(v[0], scale[0], scale[1]);
            double aspect = exp(uniform(v[1], lr0, lr1));
            int64_t w = (int64_t)nearbyint(sqrt(target * aspect));
            int64_t h = (int64_t)nearbyint(sqrt(target / aspect));
            if (0 < w && w <= W && 0 < h && h <= H) {
                p[0] = randint(v[2], 0, H - h + 1);
                p[1] = randint(v[3], 0, W - w + 1);
                p[2] = h, p[3] = w;
                found = true;
            }
        }
        if (found)
            continue;
        double in_ratio = (double)W / (double)H;
        int64_t w = W, h = H;
        if (in_ratio < ratio[0])
            h = (int64_t)nearbyint((double)w / ratio[0]);
        else if (in_ratio > ratio[1])
            w = (int64_t)nearbyint((double)h * ratio[1]);
        p[0] = (H - h) / 2, p[1] = (W - w) / 2, p[2] = h, p[3] = w;
    }
    free(u);
    rrc_ctx ctx = {height, width, mode, fn};
    st = each_sample(x, params, 4, resized_crop_one, &ctx, out, fn);
    free(params);
    return st;
}

clt_status clt_tf_random_erasing(clt_generator *gen, const clt_tensor *x, double p,
                                 const double scale[2], const double ratio[2], double value,
                                 clt_tensor **out)
{
    static const char fn[] = "clt_tf_random_erasing";
    static const double dscale[2] = {0.02, 0.33}, dratio[2] = {0.3, 3.3};
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = check_batch(x, 3, fn);
    if (st != CLT_OK)
        return st;
    if (scale == NULL)
        scale = dscale;
    if (ratio == NULL)
        ratio = dratio;
    if (!prob_ok(p))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Random erasing probability should be between 0 and 1 (got %g)",
                          fn, p);
    if (!range_ok(scale) || !range_ok(ratio) || scale[0] < 0.0 || scale[1] > 1.0 ||
        ratio[0] <= 0.0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Scale should be between 0 and 1, ratio positive, each (min, max) "
                          "(got (%g, %g) and (%g, %g))",
                          fn, scale[0], scale[1], ratio[0], ratio[1]);
    int nd = clt_tensor_ndim(x);
    int64_t n = clt_tensor_size(x, 0), H = clt_tensor_size(x, nd - 2),
            W = clt_tensor_size(x, nd - 1);
    if ((uint64_t)H * (uint64_t)W > ((uint64_t)1 << 40) / (uint64_t)n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: a mask of %lld x %lld x %lld is too large",
                          fn, (long long)n, (long long)H, (long long)W);
    enum { TRIES = 10, PER = 1 + TRIES * 4 };
    float *u = NULL;
    if ((st = draw(gen, x, n, PER, &u, fn)) != CLT_OK)
        return st;
    size_t plane = (size_t)H * (size_t)W;
    unsigned char *mask = clt__calloc(plane > 0 ? (size_t)n * plane : 1, 1);
    if (mask == NULL) {
        free(u);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    /* torchvision's RandomErasing: erased with probability p, a box of
     * get_params' tries (h < H and w < W), else nothing */
    double area = (double)H * (double)W, lr0 = log(ratio[0]), lr1 = log(ratio[1]);
    for (int64_t i = 0; i < n; i++) {
        const float *v = u + i * PER;
        if (!((double)v[0] < p))
            continue;
        v++;
        for (int t = 0; t < TRIES; t++, v += 4) {
            double target = area * uniform(v[0], scale[0], scale[1]);
            double aspect = exp(uniform(v[1], lr0, lr1));
            int64_t h = (int64_t)nearbyint(sqrt(target * aspect));
            int64_t w = (int64_t)nearbyint(sqrt(target / aspect));
            if (!(h < H && w < W))
                continue;
            int64_t top = randint(v[2], 0, H - h + 1), left = randint(v[3], 0, W - w + 1);
            for (int64_t r = top; r < top + h; r++)
                memset(mask + (size_t)i * plane + (size_t)r * (size_t)W + (size_t)left, 1,
                       (size_t)w);
            break;
        }
    }
    free(u);
    int64_t shape[CLT_MAX_DIMS];
    shape[0] = n;
    for (int d = 1; d < nd - 2; d++)
        shape[d] = 1;
    shape[nd - 2] = H, shape[nd - 1] = W;
    clt_tensor *m = NULL, *v = NULL;
    if ((st = clt_scope_begin()) != CLT_OK) {
        free(mask);
        return st;
    }
    CLT__TRY(clt_tensor_from_host(clt_tensor_device(x), CLT_BOOL, nd, shape, mask, &m));
    CLT__TRY(clt_full(clt_tensor_device(x), clt_tensor_dtype(x), 0, NULL, value, &v));
    CLT__TRY(clt_where(m, v, x, out));
done:
    free(mask);
    return clt__scope_finish(clt__error_in(st, fn), out);
}
