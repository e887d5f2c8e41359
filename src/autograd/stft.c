/* stft.c: torch.stft and torch.istft composed of recorded ops (clt_pad,
 * clt_unfold, clt_mul, the transforms, clt_fold), so that their gradients
 * with respect to the signal and the window are those ops'. */
#include "autograd/autograd.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static const clt_stft_opts stft_defaults = CLT_STFT_DEFAULTS;
static const clt_istft_opts istft_defaults = CLT_ISTFT_DEFAULTS;

/* The window zero-padded on both sides to n_fft (left (n_fft - win) / 2),
 * or all ones of dtype when none is given. */
static clt_status padded_window(const char *fn, const clt_tensor *window, clt_device *dev,
                                clt_dtype dtype, int64_t win, int64_t n_fft, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *w = (clt_tensor *)window;
    if (!w)
        CLT__TRY(clt__error_as(clt_ones(dev, dtype, 1, &win, &w), fn));
    if (win != n_fft) {
        int64_t left = (n_fft - win) / 2;
        int64_t pad[2] = {left, n_fft - win - left};
        CLT__TRY(clt__error_as(clt_pad(w, pad, 2, CLT_PAD_CONSTANT, 0.0, &w), fn));
    }
    *out = w;
done:
    return st;
}

/* [B, L'] (real) framed as [B, n_fft, n_frames]: clt_unfold of it as
 * [B, 1, 1, L'] with a 1 x n_fft kernel at stride hop. */
static clt_status frames_of(const char *fn, const clt_tensor *x, int64_t n_fft, int64_t hop,
                            clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *v = NULL;
    int64_t shape[4] = {x->shape[0], 1, 1, x->shape[1]};
    clt_fold_opts fo = {{1, 1}, {0, 0}, {1, hop}};
    CLT__TRY(clt__error_as(clt_reshape(x, 4, shape, &v), fn));
    CLT__TRY(clt__error_as(clt_unfold(v, (const int64_t[]){1, n_fft}, &fo, out), fn));
done:
    return st;
}

/* Overlap-add of frames [B, n_fft, n_frames] at hop apart into [B, len]
 * (clt_fold; a complex tensor part by part). */
static clt_status overlap_add(const char *fn, const clt_tensor *frames, int64_t n_fft,
                              int64_t hop, int64_t len, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *parts[2] = {NULL, NULL}, *r = NULL;
    int complex = clt__dtype_is_complex(frames->dtype);
    clt_fold_opts fo = {{1, 1}, {0, 0}, {hop, 1}};
    int64_t shape[2] = {frames->shape[0], len};
    for (int k = 0; k < (complex ? 2 : 1); k++) {
        clt_tensor *p = (clt_tensor *)frames, *f = NULL;
        if (complex)
            CLT__TRY(clt__error_as(k ? clt_imag(frames, &p) : clt_real(frames, &p), fn));
        CLT__TRY(clt__error_as(clt_fold(p, (const int64_t[]){len, 1},
                                        (const int64_t[]){n_fft, 1}, &fo, &f),
                               fn));
        CLT__TRY(clt__error_as(clt_reshape(f, 2, shape, &parts[k]), fn));
    }
    if (complex)
        CLT__TRY(clt__error_as(clt_complex(parts[0], parts[1], &r), fn));
    else
        r = parts[0];
    *out = r;
done:
    return st;
}

static clt_status check_window(const char *fn, const clt_tensor *x, const clt_tensor *w,
                               int64_t win, bool inverse)
{
    if (!w)
        return CLT_OK;
    clt_status st = clt__same_device(x, w, fn);
    if (st != CLT_OK)
        return st;
    if (w->ndim != 1 || w->shape[0] != win) {
        char buf[CLT__QUOTE_SIZE];
        clt__shape_str(buf, sizeof buf, w->ndim, w->shape);
        if (inverse)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Invalid window shape. window has to be 1D and length of "
                              "`win_length` (%" PRId64 "), but got window with size %s",
                              fn, win, buf);
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected a 1D window tensor of size equal to win_length=%" PRId64
                          ", but got window with size %s",
                          fn, win, buf);
    }
    /* torch.stft multiplies the frames by an integer or bool window (the
     * product takes the signal's dtype); torch.istft's overlap-add of the
     * squared integer window fails ("col2im_out_cpu" not implemented). */
    if (!clt__dtype_is_float(w->dtype) && !clt__dtype_is_complex(w->dtype) && inverse)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: expected a window of floating point or complex values (torch's "
                          "istft cannot overlap-add an integer window)",
                          fn);
    if (clt__dtype_is_half(w->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: a %s window is not supported", fn,
                          clt_dtype_name(w->dtype));
    return CLT_OK;
}

clt_status clt_stft(const clt_tensor *x, int64_t n_fft, const clt_stft_opts *opts,
                    clt_tensor **out)
{
    static const char fn[] = "clt_stft";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    const clt_stft_opts *o = opts ? opts : &stft_defaults;
    /* on torch's CPU autocast float32 list, the window too */
    clt_stft_opts oc = *o;
    CLT__AUTOCAST(fn, CLT__AC_CPU(CLT__AC_FLOAT32), 2, (x, o->window),
                  (oc.window = CLT__AC(1), clt_stft(CLT__AC(0), n_fft, &oc, out)));
    int cx = clt__dtype_is_complex(x->dtype);
    if ((!clt__dtype_is_float(x->dtype) && !cx) || clt__dtype_is_half(x->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: expected a tensor of floating point or complex values (float32, "
                          "float64, complex64 or complex128)",
                          fn);
    if (x->ndim < 1 || x->ndim > 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a 1D or 2D tensor, but got %d dimensions", fn, x->ndim);
    if (o->center && (o->pad_mode < CLT_PAD_CONSTANT || o->pad_mode > CLT_PAD_CIRCULAR))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Unrecognised padding mode %d", fn,
                          (int)o->pad_mode);
    int64_t len = x->shape[x->ndim - 1];
    if (o->center && n_fft > 0 && __builtin_add_overflow(len, 2 * (n_fft / 2), &len))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: n_fft=%" PRId64 " pads the signal past 2^63 values", fn, n_fft);
    int64_t hop = o->hop_length == -1 ? (n_fft > 0 ? n_fft / 4 : 0) : o->hop_length;
    int64_t win = o->win_length == -1 ? n_fft : o->win_length;
    if (n_fft <= 0 || n_fft > len)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected 0 < n_fft < %" PRId64 ", but got n_fft=%" PRId64, fn, len,
                          n_fft);
    if (hop <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected hop_length > 0, but got hop_length=%" PRId64, fn, hop);
    if (win <= 0 || win > n_fft)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected 0 < win_length <= n_fft, but got win_length=%" PRId64, fn,
                          win);
    clt_status st = check_window(fn, x, o->window, win, false);
    if (st != CLT_OK)
        return st;
    int complex_fft = cx || (o->window && clt__dtype_is_complex(o->window->dtype));
    int onesided = o->onesided == -1 ? !complex_fft : o->onesided != 0;
    if (complex_fft && onesided)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Cannot have onesided output if window or input is complex", fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *fr[2] = {NULL, NULL}, *frames = NULL, *w = NULL, *wv = NULL, *y = NULL;
    clt_tensor *r = NULL;
    int64_t b = x->ndim == 2 ? x->shape[0] : 1;
    for (int k = 0; k < (cx ? 2 : 1); k++) {
        clt_tensor *p = (clt_tensor *)x, *p3 = NULL, *p2 = NULL;
        if (cx)
            CLT__TRY(clt__error_as(k ? clt_imag(x, &p) : clt_real(x, &p), fn));
        if (o->center) {
            int64_t pad[2] = {n_fft / 2, n_fft / 2};
            int64_t s3[3] = {1, b, x->shape[x->ndim - 1]};
            CLT__TRY(clt__error_as(clt_reshape(p, 3, s3, &p3), fn));
            CLT__TRY(clt__error_as(clt_pad(p3, pad, 2, o->pad_mode, 0.0, &p3), fn));
            p = p3;
        }
        CLT__TRY(clt__error_as(clt_reshape(p, 2, (const int64_t[]){b, len}, &p2), fn));
        CLT__TRY(frames_of(fn, p2, n_fft, hop, &fr[k]));
    }
    if (cx)
        CLT__TRY(clt__error_as(clt_complex(fr[0], fr[1], &frames), fn));
    else
        frames = fr[0];
    if (o->window || win != n_fft) {
        clt_dtype wdt = cx ? clt__complex_part_dtype(x->dtype) : x->dtype;
        const clt_tensor *wsrc = o->window;
        clt_tensor *wconv = NULL;
        if (wsrc && !clt__dtype_is_float(wsrc->dtype) && !clt__dtype_is_complex(wsrc->dtype)) {
            /* an integer window: frames * window is of the frames' dtype */
            CLT__TRY(clt__error_as(clt_to_dtype(wsrc, wdt, &wconv), fn));
            wsrc = wconv;
        }
        CLT__TRY(padded_window(fn, wsrc, x->dev, wdt, win, n_fft, &w));
        CLT__TRY(clt__error_as(clt_reshape(w, 2, (const int64_t[]){n_fft, 1}, &wv), fn));
        CLT__TRY(clt__error_as(clt_mul(frames, wv, &frames), fn));
    }
    {
        const char *norm = o->normalized ? "ortho" : "backward";
        if (onesided)
            CLT__TRY(clt__error_as(clt_fft_rfft(frames, n_fft, 1, norm, &y), fn));
        else
            CLT__TRY(clt__error_as(clt_fft_fft(frames, n_fft, 1, norm, &y), fn));
    }
    if (x->ndim == 1)
        CLT__TRY(clt__error_as(clt_squeeze(y, 0, &y), fn));
    if (!o->return_complex)
        CLT__TRY(clt__error_as(clt_view_as_real(y, &y), fn));
    r = y;
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

/* The smallest magnitude of env (float or complex), read back. */
static clt_status min_abs(const char *fn, const clt_tensor *env, double *m)
{
    clt_status st = CLT_OK;
    clt_tensor *a = (clt_tensor *)env;
    double *v = NULL;
    if (clt__dtype_is_complex(env->dtype))
        CLT__TRY(clt__error_as(clt_abs(env, &a), fn));
    CLT__TRY(clt__read_doubles(fn, a, &v));
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++)
        n *= a->shape[i];
    *m = INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(v[i]) >= *m))
            *m = fabs(v[i]);
    free(v);
done:
    return st;
}

clt_status clt_istft(const clt_tensor *X, int64_t n_fft, const clt_istft_opts *opts,
                     clt_tensor **out)
{
    static const char fn[] = "clt_istft";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(X, fn);
    const clt_istft_opts *o = opts ? opts : &istft_defaults;
    int cx = clt__dtype_is_complex(X->dtype);
    int as_real = !cx && (X->dtype == CLT_FLOAT32 || X->dtype == CLT_FLOAT64);
    if (!cx && !as_real)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: istft requires a complex-valued input tensor matching the "
                          "output from stft with return_complex=True",
                          fn);
    int nd = X->ndim - (as_real ? 1 : 0);
    int64_t numel = 1;
    for (int i = 0; i < X->ndim; i++)
        numel *= X->shape[i];
    if (numel == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: input tensor cannot be empty.", fn);
    if (nd != 2 && nd != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a tensor with %s dimensions, but got %d", fn,
                          as_real ? "3 or 4" : "2 or 3", X->ndim);
    if (as_real && X->shape[X->ndim - 1] != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected the last dimension to be 2 (corresponding to real and "
                          "imaginary parts), but got %" PRId64,
                          fn, X->shape[X->ndim - 1]);
    int64_t n_freq = X->shape[nd - 2], n_frames = X->shape[nd - 1];
    int onesided = o->onesided == -1 ? n_freq != n_fft : o->onesided != 0;
    if (onesided && n_fft / 2 + 1 != n_freq)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected the frequency dimension (3rd to the last) of the input "
                          "tensor to match n_fft / 2 + 1 when onesided=True, but got %" PRId64,
                          fn, n_freq);
    if (!onesided && n_fft != n_freq)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected the frequency dimension (3rd to the last) of the input "
                          "tensor to match n_fft when onesided=False, but got %" PRId64,
                          fn, n_freq);
    int64_t hop = o->hop_length == -1 ? n_fft >> 2 : o->hop_length;
    int64_t win = o->win_length == -1 ? n_fft : o->win_length;
    if (!(0 < hop && hop <= win))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected 0 < hop_length <= win_length, but got hop_length=%" PRId64
                          " and win_length=%" PRId64,
                          fn, hop, win);
    if (!(0 < win && win <= n_fft))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected 0 < win_length <= n_fft, but got win_length=%" PRId64, fn,
                          win);
    clt_status st = check_window(fn, X, o->window, win, true);
    if (st != CLT_OK)
        return st;
    if (o->return_complex && onesided)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Cannot have onesided output if window or input is complex", fn);
    if (!o->return_complex && o->window && clt__dtype_is_complex(o->window->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Complex windows are incompatible with return_complex=False", fn);
    if (o->length != -1 && (o->length < 1 || o->length > INT64_MAX / 2))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected 0 < length < 2^62 (or -1 for the whole signal), but got "
                          "length=%" PRId64,
                          fn, o->length);
    int64_t total = n_fft + hop * (n_frames - 1);
    int64_t start = o->center ? n_fft / 2 : 0;
    /* torch slices [start, -(n_fft / 2)) when centred: an n_fft of 1 leaves nothing */
    int64_t end = o->length != -1 ? start + o->length
                  : o->center     ? (n_fft / 2 ? total - n_fft / 2 : 0)
                                  : total;
    int64_t cut = end < total ? end : total;
    if (cut <= start)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: window overlap add min: the result would be empty (n_fft=%" PRId64
                          ", %" PRId64 " frames, center=%d)",
                          fn, n_fft, n_frames, o->center);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *z = (clt_tensor *)X, *frames = NULL, *w = NULL, *wv = NULL, *w2 = NULL;
    clt_tensor *env = NULL, *y = NULL;
    int64_t b = nd == 3 ? X->shape[0] : 1;
    if (as_real) {
        CLT__TRY(clt__error_as(clt_contiguous(X, &z), fn));
        CLT__TRY(clt__error_as(clt_view_as_complex(z, &z), fn));
    }
    CLT__TRY(clt__error_as(clt_reshape(z, 3, (const int64_t[]){b, n_freq, n_frames}, &z), fn));
    {
        const char *norm = o->normalized ? "ortho" : "backward";
        if (o->return_complex) {
            CLT__TRY(clt__error_as(clt_fft_ifft(z, n_fft, 1, norm, &frames), fn));
        } else {
            if (!onesided)
                CLT__TRY(clt__error_as(clt_narrow(z, 1, 0, n_fft / 2 + 1, &z), fn));
            CLT__TRY(clt__error_as(clt_fft_irfft(z, n_fft, 1, norm, &frames), fn));
        }
    }
    CLT__TRY(padded_window(fn, o->window, X->dev, clt__complex_part_dtype(z->dtype), win, n_fft,
                           &w));
    CLT__TRY(clt__error_as(clt_reshape(w, 2, (const int64_t[]){n_fft, 1}, &wv), fn));
    CLT__TRY(clt__error_as(clt_mul(frames, wv, &frames), fn));
    CLT__TRY(overlap_add(fn, frames, n_fft, hop, total, &y));
    CLT__TRY(clt__error_as(clt_mul(wv, wv, &w2), fn));
    CLT__TRY(clt__error_as(clt_reshape(w2, 3, (const int64_t[]){1, n_fft, 1}, &w2), fn));
    CLT__TRY(clt__error_as(clt_expand(w2, 3, (const int64_t[]){1, n_fft, n_frames}, &w2), fn));
    CLT__TRY(overlap_add(fn, w2, n_fft, hop, total, &env));
    CLT__TRY(clt__error_as(clt_slice(y, 1, start, cut, 1, &y), fn));
    CLT__TRY(clt__error_as(clt_slice(env, 1, start, cut, 1, &env), fn));
    {
        double m = 0.0;
        CLT__TRY(min_abs(fn, env, &m));
        if (!(m >= 1e-11)) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: window overlap add min: %g (below 1e-11: the window and "
                            "hop_length leave samples uncovered)",
                            fn, m);
            goto done;
        }
    }
    CLT__TRY(clt__error_as(clt_div(y, env, &y), fn));
    if (end > total)
        CLT__TRY(clt__error_as(
            clt_pad(y, (const int64_t[]){0, end - total}, 2, CLT_PAD_CONSTANT, 0.0, &y), fn));
    if (nd == 2)
        CLT__TRY(clt__error_as(clt_squeeze(y, 0, &y), fn));
done:
    if (st == CLT_OK)
        *out = y;
    return clt__scope_finish(st, out);
}
