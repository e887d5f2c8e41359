/* test_stft.c: clt_stft and clt_istft against a short-time DFT and an
 * overlap-add computed here in double (padding, framing, window and
 * envelope done by hand), their errors, and float64 gradchecks. */
#include <complex.h>
#include <math.h>
#include <stdio.h>

#include "gradcheck.h"
#include "helpers.h"

/* Index i of a signal of n values padded by p on each side in mode. */
static double padded_at(const double *x, int64_t n, int64_t p, int64_t i, clt_pad_mode mode)
{
    int64_t j = i - p;
    if (j >= 0 && j < n)
        return x[j];
    switch (mode) {
    case CLT_PAD_CONSTANT:
        return 0.0;
    case CLT_PAD_REFLECT:
        return x[j < 0 ? -j : 2 * (n - 1) - j];
    case CLT_PAD_REPLICATE:
        return x[j < 0 ? 0 : n - 1];
    default:
        return x[((j % n) + n) % n];
    }
}

typedef struct ref_opts {
    int64_t n_fft, hop, win;
    const double *window; /* win values, NULL: ones */
    int center, normalized, onesided;
    clt_pad_mode mode;
} ref_opts;

/* The reference STFT of b complex signals of n values (xi NULL: real):
 * out[b][f][t], with *nf frequencies and *nt frames. */
static double complex *ref_stft(const double *xr, const double *xi, int64_t b, int64_t n,
                                const ref_opts *o, int64_t *nf, int64_t *nt)
{
    int64_t p = o->center ? o->n_fft / 2 : 0, len = n + 2 * p;
    *nt = 1 + (len - o->n_fft) / o->hop;
    *nf = o->onesided ? o->n_fft / 2 + 1 : o->n_fft;
    double *w = calloc((size_t)o->n_fft, sizeof *w);
    int64_t left = (o->n_fft - o->win) / 2;
    for (int64_t k = 0; k < o->win; k++)
        w[left + k] = o->window ? o->window[k] : 1.0;
    double complex *out = malloc((size_t)(b * *nf * *nt) * sizeof *out);
    double scale = o->normalized ? 1.0 / sqrt((double)o->n_fft) : 1.0;
    for (int64_t s = 0; s < b; s++)
        for (int64_t f = 0; f < *nf; f++)
            for (int64_t t = 0; t < *nt; t++) {
                long double complex acc = 0;
                for (int64_t k = 0; k < o->n_fft; k++) {
                    int64_t i = t * o->hop + k;
                    double complex v = padded_at(xr + s * n, n, p, i, o->mode);
                    if (xi)
                        v += I * padded_at(xi + s * n, n, p, i, o->mode);
                    acc += v * w[k] *
                           cexpl(-2.0L * (long double)M_PI * I * (long double)((f * k) % o->n_fft) /
                                 (long double)o->n_fft);
                }
                out[(s * *nf + f) * *nt + t] = (double complex)acc * scale;
            }
    free(w);
    return out;
}

static double complex *read_c128(const clt_tensor *t)
{
    clt_tensor *c = NULL;
    CHECK(clt_to_dtype(t, CLT_COMPLEX128, &c));
    size_t n = (size_t)clt_tensor_numel(c);
    double complex *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(c, h, n * sizeof *h));
    clt_tensor_free(c);
    return h;
}

static void assert_close_c(const double complex *got, const double complex *want, size_t n,
                           double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(cabs(got[i] - want[i]) <= tol * (1.0 + cabs(want[i])),
                  "%s: element %zu: got %.10g%+.10gi, want %.10g%+.10gi", what, i, creal(got[i]),
                  cimag(got[i]), creal(want[i]), cimag(want[i]));
}

static clt_tensor *up_f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

/* One real case of clt_stft against ref_stft. */
static void stft_case(clt_device *dev, int64_t b, int64_t n, ref_opts o, int batched,
                      unsigned seed)
{
    double *x = spread_doubles((size_t)(b * n), seed);
    double *wbuf = NULL;
    clt_tensor *xt = batched ? up_f64(dev, 2, (int64_t[]){b, n}, x) : up_f64(dev, 1, &n, x);
    clt_tensor *wt = NULL, *y = NULL;
    if (o.window) {
        wbuf = malloc((size_t)o.win * sizeof *wbuf);
        memcpy(wbuf, o.window, (size_t)o.win * sizeof *wbuf);
        wt = up_f64(dev, 1, &o.win, wbuf);
    }
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.hop_length = o.hop;
    so.win_length = o.win;
    so.window = wt;
    so.center = o.center;
    so.pad_mode = o.mode;
    so.normalized = o.normalized;
    so.onesided = o.onesided;
    CHECK(clt_stft(xt, o.n_fft, &so, &y));
    int64_t nf, nt;
    double complex *want = ref_stft(x, NULL, b, n, &o, &nf, &nt);
    if (batched)
        assert_shape(y, 3, (int64_t[]){b, nf, nt});
    else
        assert_shape(y, 2, (int64_t[]){nf, nt});
    cr_assert_eq(clt_tensor_dtype(y), CLT_COMPLEX128);
    double complex *got = read_c128(y);
    assert_close_c(got, want, (size_t)(b * nf * nt), 1e-11, "stft");
    free(got);
    free(want);
    free(x);
    free(wbuf);
    clt_tensor_free(y);
    clt_tensor_free(wt);
    clt_tensor_free(xt);
}

Test(stft, real_signal_matches_reference_dft)
{
    clt_device *dev = get_device("cpu");
    double hann[6], rnd[7];
    for (int k = 0; k < 6; k++)
        hann[k] = 0.5 - 0.5 * cos(2 * M_PI * k / 6);
    for (int k = 0; k < 7; k++)
        rnd[k] = 0.3 + 0.17 * k - 0.02 * k * k;
    stft_case(dev, 2, 21, (ref_opts){8, 3, 6, hann, 1, 0, 1, CLT_PAD_REFLECT}, 1, 1);
    stft_case(dev, 1, 30, (ref_opts){8, 2, 8, NULL, 1, 0, 1, CLT_PAD_REFLECT}, 0, 2);
    stft_case(dev, 3, 25, (ref_opts){10, 4, 7, rnd, 1, 1, 0, CLT_PAD_CONSTANT}, 1, 3);
    stft_case(dev, 2, 19, (ref_opts){9, 2, 7, rnd, 1, 0, 1, CLT_PAD_REPLICATE}, 1, 4);
    stft_case(dev, 1, 17, (ref_opts){6, 5, 6, NULL, 1, 1, 1, CLT_PAD_CIRCULAR}, 0, 5);
    stft_case(dev, 2, 20, (ref_opts){20, 1, 6, hann, 0, 0, 1, CLT_PAD_REFLECT}, 1, 6);
    stft_case(dev, 1, 33, (ref_opts){9, 4, 9, NULL, 0, 0, 0, CLT_PAD_REFLECT}, 0, 7);
    stft_case(dev, 2, 70, (ref_opts){64, 16, 6, hann, 1, 1, 1, CLT_PAD_REFLECT}, 1, 8);
}

Test(stft, complex_signal_matches_reference_dft)
{
    clt_device *dev = get_device("cpu");
    int64_t b = 2, n = 23;
    double *xr = spread_doubles((size_t)(b * n), 11), *xi = spread_doubles((size_t)(b * n), 12);
    double complex *xc = malloc((size_t)(b * n) * sizeof *xc);
    for (int64_t i = 0; i < b * n; i++)
        xc[i] = xr[i] + I * xi[i];
    clt_tensor *x = NULL, *y = NULL, *yr = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, (int64_t[]){b, n}, xc, &x));
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.hop_length = 3;
    CHECK(clt_stft(x, 8, &so, &y));
    ref_opts o = {8, 3, 8, NULL, 1, 0, 0, CLT_PAD_REFLECT};
    int64_t nf, nt;
    double complex *want = ref_stft(xr, xi, b, n, &o, &nf, &nt);
    assert_shape(y, 3, (int64_t[]){b, 8, nt});
    double complex *got = read_c128(y);
    assert_close_c(got, want, (size_t)(b * nf * nt), 1e-11, "complex stft");
    /* return_complex 0: the same values as [..., 2] */
    so.return_complex = 0;
    CHECK(clt_stft(x, 8, &so, &yr));
    assert_shape(yr, 4, (int64_t[]){b, 8, nt, 2});
    double *pairs = read_as_f64(yr);
    for (int64_t i = 0; i < b * nf * nt; i++)
        cr_assert(pairs[2 * i] == creal(got[i]) && pairs[2 * i + 1] == cimag(got[i]));
    /* onesided with a complex input is refused */
    so.onesided = 1;
    clt_tensor *bad = (clt_tensor *)1;
    assert_error(clt_stft(x, 8, &so, &bad), CLT_ERR_INVALID_ARGUMENT, "onesided");
    cr_assert_null(bad);
    free(pairs);
    free(got);
    free(want);
    free(xc);
    free(xr);
    free(xi);
    clt_tensor_free(yr);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

Test(stft, float32_and_mixed_dtypes)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 40, w8 = 8;
    double *x = spread_doubles((size_t)n, 21);
    clt_tensor *x32 = tensor_of(dev, CLT_FLOAT32, 1, &n, x), *y = NULL, *y2 = NULL;
    CHECK(clt_stft(x32, 8, NULL, &y));
    cr_assert_eq(clt_tensor_dtype(y), CLT_COMPLEX64);
    ref_opts o = {8, 2, 8, NULL, 1, 0, 1, CLT_PAD_REFLECT};
    int64_t nf, nt;
    double complex *want = ref_stft(x, NULL, 1, n, &o, &nf, &nt);
    assert_shape(y, 2, (int64_t[]){5, 21});
    double complex *got = read_c128(y);
    assert_close_c(got, want, (size_t)(nf * nt), 2e-6, "float32 stft");
    /* a float64 window makes the result complex128, as torch's promotion */
    double ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    clt_tensor *w = up_f64(dev, 1, &w8, ones);
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.window = w;
    CHECK(clt_stft(x32, 8, &so, &y2));
    cr_assert_eq(clt_tensor_dtype(y2), CLT_COMPLEX128);
    free(got);
    free(want);
    free(x);
    clt_tensor_free(y2);
    clt_tensor_free(w);
    clt_tensor_free(y);
    clt_tensor_free(x32);
}

/* torch.stft takes an integer or bool window: the frames times it keep the
 * signal's dtype, so float32 gives complex64 and float64 complex128, with
 * the values of the same window in floating point. */
Test(stft, integer_and_bool_windows)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 40, six = 6;
    double *x = spread_doubles((size_t)n, 23);
    double wv[6] = {1, 3, 0, 2, 5, 4}, wb[6] = {1, 0, 1, 1, 0, 1};
    clt_tensor *x64 = up_f64(dev, 1, &n, x), *x32 = tensor_of(dev, CLT_FLOAT32, 1, &n, x);
    const clt_dtype dts[4] = {CLT_INT64, CLT_INT32, CLT_UINT8, CLT_BOOL};
    for (int d = 0; d < 4; d++) {
        const double *vals = dts[d] == CLT_BOOL ? wb : wv;
        clt_tensor *wf = up_f64(dev, 1, &six, vals), *wi = NULL;
        CHECK(clt_to_dtype(wf, dts[d], &wi));
        ref_opts o = {8, 2, 6, vals, 1, 0, 1, CLT_PAD_REFLECT};
        int64_t nf, nt;
        double complex *want = ref_stft(x, NULL, 1, n, &o, &nf, &nt);
        for (int prec = 0; prec < 2; prec++) {
            clt_stft_opts so = CLT_STFT_DEFAULTS;
            so.hop_length = 2;
            so.win_length = 6;
            so.window = wi;
            clt_tensor *y = NULL;
            CHECK(clt_stft(prec ? x64 : x32, 8, &so, &y));
            cr_assert_eq(clt_tensor_dtype(y), prec ? CLT_COMPLEX128 : CLT_COMPLEX64,
                         "dtype %d prec %d", (int)dts[d], prec);
            assert_shape(y, 2, (int64_t[]){nf, nt});
            double complex *got = read_c128(y);
            assert_close_c(got, want, (size_t)(nf * nt), prec ? 1e-10 : 1e-5, "integer window");
            free(got);
            clt_tensor_free(y);
        }
        free(want);
        clt_tensor_free(wi);
        clt_tensor_free(wf);
    }
    free(x);
    clt_tensor_free(x32);
    clt_tensor_free(x64);
}

Test(stft, errors_in_torch_words)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 20, five = 5, sh3[3] = {2, 2, 20};
    double *x = spread_doubles(80, 31); /* x3 reads all 80 */
    clt_tensor *xt = up_f64(dev, 1, &n, x), *x3 = up_f64(dev, 3, sh3, x);
    clt_tensor *w5 = up_f64(dev, 1, &five, x), *xi = NULL, *out = (clt_tensor *)1;
    CHECK(clt_to_dtype(xt, CLT_INT64, &xi));
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.hop_length = 0;
    assert_error(clt_stft(xt, 8, &so, &out), CLT_ERR_INVALID_ARGUMENT, "hop_length > 0");
    cr_assert_null(out);
    names_only("clt_stft");
    so = (clt_stft_opts)CLT_STFT_DEFAULTS;
    assert_error(clt_stft(xt, 3, &so, &out), CLT_ERR_INVALID_ARGUMENT, "hop_length > 0");
    so.win_length = 9;
    assert_error(clt_stft(xt, 8, &so, &out), CLT_ERR_INVALID_ARGUMENT, "0 < win_length <= n_fft");
    so = (clt_stft_opts)CLT_STFT_DEFAULTS;
    so.window = w5;
    assert_error(clt_stft(xt, 8, &so, &out), CLT_ERR_INVALID_ARGUMENT, "window");
    so = (clt_stft_opts)CLT_STFT_DEFAULTS;
    so.center = 0;
    assert_error(clt_stft(xt, 21, &so, &out), CLT_ERR_INVALID_ARGUMENT, "0 < n_fft");
    assert_error(clt_stft(xt, 0, &so, &out), CLT_ERR_INVALID_ARGUMENT, "0 < n_fft");
    so = (clt_stft_opts)CLT_STFT_DEFAULTS;
    assert_error(clt_stft(xt, 40, &so, &out), CLT_ERR_INVALID_ARGUMENT, "Padding size");
    names_only("clt_stft");
    so.pad_mode = (clt_pad_mode)7;
    assert_error(clt_stft(xt, 8, &so, &out), CLT_ERR_INVALID_ARGUMENT, "padding mode");
    assert_error(clt_stft(x3, 8, NULL, &out), CLT_ERR_SHAPE_MISMATCH, "1D or 2D");
    assert_error(clt_stft(xi, 8, NULL, &out), CLT_ERR_DTYPE_UNSUPPORTED, "floating point");
    /* an integer window is taken by stft, refused by istft (as torch 1.13) */
    clt_tensor *wi = NULL, *Y = NULL;
    CHECK(clt_narrow(xi, 0, 0, 8, &wi));
    so = (clt_stft_opts)CLT_STFT_DEFAULTS;
    so.window = wi;
    CHECK(clt_stft(xt, 8, &so, &Y));
    clt_istft_opts io = CLT_ISTFT_DEFAULTS;
    io.window = wi;
    assert_error(clt_istft(Y, 8, &io, &out), CLT_ERR_DTYPE_UNSUPPORTED, "window");
    cr_assert_null(out);
    clt_tensor_free(Y);
    clt_tensor_free(wi);
    assert_error(clt_stft(NULL, 8, NULL, &out), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(out);
    free(x);
    clt_tensor_free(xi);
    clt_tensor_free(w5);
    clt_tensor_free(x3);
    clt_tensor_free(xt);
}

/* The reference inverse of spectra X [b][nf][nt] (onesided: the first n_fft
 * / 2 + 1 bins, Hermitian symmetry completing them; the imaginary parts of
 * the zero and Nyquist bins dropped, as irfft), real part taken unless
 * complex_out. */
static double complex *ref_istft(const double complex *X, int64_t b, int64_t nf, int64_t nt,
                                 const ref_opts *o, int64_t length, int complex_out,
                                 int64_t *out_len)
{
    int64_t n_fft = o->n_fft, total = n_fft + o->hop * (nt - 1);
    int64_t start = o->center ? n_fft / 2 : 0;
    int64_t end = length > 0 ? start + length : o->center ? total - n_fft / 2 : total;
    *out_len = end - start;
    double *w = calloc((size_t)n_fft, sizeof *w);
    int64_t left = (n_fft - o->win) / 2;
    for (int64_t k = 0; k < o->win; k++)
        w[left + k] = o->window ? o->window[k] : 1.0;
    double complex *y = calloc((size_t)(b * total), sizeof *y);
    double *env = calloc((size_t)total, sizeof *env);
    double scale = o->normalized ? 1.0 / sqrt((double)n_fft) : 1.0 / (double)n_fft;
    for (int64_t s = 0; s < b; s++)
        for (int64_t t = 0; t < nt; t++)
            for (int64_t k = 0; k < n_fft; k++) {
                long double complex acc = 0;
                for (int64_t f = 0; f < n_fft; f++) {
                    double complex v;
                    if (o->onesided || !complex_out) {
                        int64_t h = f <= n_fft / 2 ? f : n_fft - f;
                        v = X[(s * nf + h) * nt + t];
                        if (h == 0 || 2 * h == n_fft)
                            v = creal(v);
                        if (f != h)
                            v = conj(v);
                    } else {
                        v = X[(s * nf + f) * nt + t];
                    }
                    acc += v * cexpl(2.0L * (long double)M_PI * I *
                                     (long double)((f * k) % n_fft) / (long double)n_fft);
                }
                double complex fr = (double complex)acc * scale;
                y[s * total + t * o->hop + k] += fr * w[k];
                if (s == 0)
                    env[t * o->hop + k] += w[k] * w[k];
            }
    double complex *out = calloc((size_t)(b * *out_len), sizeof *out);
    for (int64_t s = 0; s < b; s++)
        for (int64_t i = start; i < end && i < total; i++)
            out[s * *out_len + i - start] = y[s * total + i] / env[i];
    free(w);
    free(y);
    free(env);
    return out;
}

static void istft_case(clt_device *dev, int64_t b, int64_t nf, int64_t nt, ref_opts o,
                       int64_t length, int complex_out, int batched, unsigned seed)
{
    size_t m = (size_t)(b * nf * nt);
    double *re = spread_doubles(m, seed), *im = spread_doubles(m, seed + 1);
    double complex *X = malloc(m * sizeof *X);
    for (size_t i = 0; i < m; i++)
        X[i] = re[i] + I * im[i];
    clt_tensor *xt = NULL, *wt = NULL, *y = NULL;
    if (batched)
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 3, (int64_t[]){b, nf, nt}, X, &xt));
    else
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, (int64_t[]){nf, nt}, X, &xt));
    if (o.window)
        wt = up_f64(dev, 1, &o.win, o.window);
    clt_istft_opts io = CLT_ISTFT_DEFAULTS;
    io.hop_length = o.hop;
    io.win_length = o.win;
    io.window = wt;
    io.center = o.center;
    io.normalized = o.normalized;
    io.onesided = o.onesided;
    io.length = length;
    io.return_complex = complex_out;
    CHECK(clt_istft(xt, o.n_fft, &io, &y));
    int64_t len;
    double complex *want = ref_istft(X, b, nf, nt, &o, length, complex_out, &len);
    if (batched)
        assert_shape(y, 2, (int64_t[]){b, len});
    else
        assert_shape(y, 1, &len);
    cr_assert_eq(clt_tensor_dtype(y), complex_out ? CLT_COMPLEX128 : CLT_FLOAT64);
    double complex *got = read_c128(y);
    if (!complex_out)
        for (int64_t i = 0; i < b * len; i++)
            want[i] = creal(want[i]);
    assert_close_c(got, want, (size_t)(b * len), 1e-11, "istft");
    free(got);
    free(want);
    free(X);
    free(re);
    free(im);
    clt_tensor_free(y);
    clt_tensor_free(wt);
    clt_tensor_free(xt);
}

Test(stft, istft_matches_reference_overlap_add)
{
    clt_device *dev = get_device("cpu");
    double hann[8], rnd[7]; /* rnd: windows of 6 and of 7 */
    for (int k = 0; k < 8; k++)
        hann[k] = 0.5 - 0.5 * cos(2 * M_PI * k / 8);
    for (int k = 0; k < 7; k++)
        rnd[k] = 0.4 + 0.2 * k - 0.03 * k * k;
    istft_case(dev, 2, 5, 11, (ref_opts){8, 2, 8, hann, 1, 0, 1, 0}, -1, 0, 1, 1);
    istft_case(dev, 1, 5, 9, (ref_opts){8, 3, 6, rnd, 1, 1, 1, 0}, -1, 0, 0, 2);
    istft_case(dev, 2, 5, 9, (ref_opts){8, 3, 8, NULL, 1, 0, 1, 0}, 40, 0, 1, 3);
    istft_case(dev, 1, 6, 7, (ref_opts){10, 4, 10, NULL, 0, 0, 1, 0}, 17, 0, 0, 4);
    istft_case(dev, 2, 8, 6, (ref_opts){8, 2, 8, hann, 1, 0, 0, 0}, -1, 0, 1, 5);
    istft_case(dev, 2, 8, 6, (ref_opts){8, 2, 8, hann, 1, 1, 0, 0}, -1, 1, 1, 6);
    istft_case(dev, 1, 9, 5, (ref_opts){9, 3, 7, rnd, 1, 0, 0, 0}, -1, 1, 0, 7);
}

Test(stft, round_trip_recovers_the_signal)
{
    clt_device *dev = get_device("cpu");
    int64_t b = 2, n = 50, w16 = 16;
    double *x = spread_doubles((size_t)(b * n), 41), hann[16];
    for (int k = 0; k < 16; k++)
        hann[k] = 0.5 - 0.5 * cos(2 * M_PI * k / 16);
    clt_tensor *xt = up_f64(dev, 2, (int64_t[]){b, n}, x), *w = up_f64(dev, 1, &w16, hann);
    clt_tensor *X = NULL, *y = NULL;
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.window = w;
    so.normalized = 1;
    CHECK(clt_stft(xt, 16, &so, &X));
    clt_istft_opts io = CLT_ISTFT_DEFAULTS;
    io.window = w;
    io.normalized = 1;
    io.length = n;
    CHECK(clt_istft(X, 16, &io, &y));
    assert_shape(y, 2, (int64_t[]){b, n});
    assert_tensor_close(y, x, (size_t)(b * n), 1e-12, 1e-12, "round trip");
    free(x);
    clt_tensor_free(y);
    clt_tensor_free(X);
    clt_tensor_free(w);
    clt_tensor_free(xt);
}

Test(stft, istft_errors_in_torch_words)
{
    clt_device *dev = get_device("cpu");
    int64_t sh[2] = {5, 11}, eight = 8, five = 5;
    double complex v[55];
    for (int i = 0; i < 55; i++)
        v[i] = i * 0.1 + I;
    double hann[8], ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int k = 0; k < 8; k++)
        hann[k] = 0.5 - 0.5 * cos(2 * M_PI * k / 8);
    clt_tensor *X = NULL, *w = up_f64(dev, 1, &eight, hann), *w5 = up_f64(dev, 1, &five, ones);
    clt_tensor *e = NULL, *xr = NULL, *out = (clt_tensor *)1;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, sh, v, &X));
    CHECK(clt_narrow(X, 1, 0, 0, &e));
    CHECK(clt_real(X, &xr));
    clt_istft_opts io = CLT_ISTFT_DEFAULTS;
    io.hop_length = 0;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "0 < hop_length");
    cr_assert_null(out);
    names_only("clt_istft");
    io.hop_length = 9;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "0 < hop_length");
    io = (clt_istft_opts)CLT_ISTFT_DEFAULTS;
    assert_error(clt_istft(X, 10, &io, &out), CLT_ERR_INVALID_ARGUMENT, "n_fft / 2 + 1");
    io.onesided = 0;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "match n_fft");
    io = (clt_istft_opts)CLT_ISTFT_DEFAULTS;
    io.return_complex = 1;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "onesided");
    io = (clt_istft_opts)CLT_ISTFT_DEFAULTS;
    io.window = w5;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "window shape");
    /* a hann window at hop n_fft leaves the frame edges uncovered */
    io.window = w;
    io.hop_length = 8;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "window overlap add min");
    names_only("clt_istft");
    io = (clt_istft_opts)CLT_ISTFT_DEFAULTS;
    io.length = 0;
    assert_error(clt_istft(X, 8, &io, &out), CLT_ERR_INVALID_ARGUMENT, "length");
    assert_error(clt_istft(e, 8, NULL, &out), CLT_ERR_INVALID_ARGUMENT, "cannot be empty");
    assert_error(clt_istft(xr, 8, NULL, &out), CLT_ERR_SHAPE_MISMATCH, "3 or 4 dimensions");
    cr_assert_null(out);
    clt_tensor_free(xr);
    clt_tensor_free(e);
    clt_tensor_free(w5);
    clt_tensor_free(w);
    clt_tensor_free(X);
}

/* ---- gradients ---------------------------------------------------------- */

typedef struct gcase {
    int64_t n_fft, hop, win;
    int center, normalized, onesided, complex_in, with_window, rc;
    clt_pad_mode mode;
    int64_t length;
} gcase;

/* stft of in[0] (+ i in[1] when complex_in), window in[last], as real pairs. */
static clt_status gc_stft(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gcase *c = ctx;
    clt_tensor *x = in[0];
    clt_status st = CLT_OK;
    if (c->complex_in && (st = clt_complex(in[0], in[1], &x)) != CLT_OK)
        return st;
    clt_stft_opts so = CLT_STFT_DEFAULTS;
    so.hop_length = c->hop;
    so.win_length = c->win;
    so.window = c->with_window ? in[c->complex_in ? 2 : 1] : NULL;
    so.center = c->center;
    so.pad_mode = c->mode;
    so.normalized = c->normalized;
    so.onesided = c->onesided;
    so.return_complex = 0;
    st = clt_stft(x, c->n_fft, &so, out);
    if (x != in[0])
        clt_tensor_free(x);
    return st;
}

/* istft of in[0] + i in[1], window in[2]. */
static clt_status gc_istft(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gcase *c = ctx;
    clt_tensor *X = NULL, *y = NULL;
    clt_status st = clt_complex(in[0], in[1], &X);
    if (st != CLT_OK)
        return st;
    clt_istft_opts io = CLT_ISTFT_DEFAULTS;
    io.hop_length = c->hop;
    io.win_length = c->win;
    io.window = c->with_window ? in[2] : NULL;
    io.center = c->center;
    io.normalized = c->normalized;
    io.onesided = c->onesided;
    io.length = c->length;
    io.return_complex = c->rc;
    st = clt_istft(X, c->n_fft, &io, &y);
    clt_tensor_free(X);
    if (st == CLT_OK && c->rc) {
        st = clt_view_as_real(y, out);
        clt_tensor_free(y);
    } else {
        *out = y;
    }
    return st;
}

Test(stft, gradcheck_stft)
{
    clt_device *dev = get_device("cpu");
    double *x = spread_doubles(26, 51), *xi = spread_doubles(26, 52), w[6];
    for (int k = 0; k < 6; k++)
        w[k] = 0.5 + 0.1 * k;
    gcase c1 = {8, 3, 6, 1, 0, -1, 0, 1, 0, CLT_PAD_REFLECT, -1};
    gc_in in1[2] = {{2, {2, 13}, x, 1}, {1, {6}, w, 1}};
    gradcheck(dev, gc_stft, &c1, 2, in1);
    gcase c2 = {6, 2, 6, 1, 1, 0, 0, 0, 0, CLT_PAD_REPLICATE, -1};
    gc_in in2[1] = {{1, {13}, x, 1}};
    gradcheck(dev, gc_stft, &c2, 1, in2);
    gcase c3 = {6, 2, 6, 0, 0, -1, 1, 1, 0, CLT_PAD_REFLECT, -1};
    gc_in in3[3] = {{1, {13}, x, 1}, {1, {13}, xi, 1}, {1, {6}, w, 1}};
    gradcheck(dev, gc_stft, &c3, 3, in3);
    free(x);
    free(xi);
}

Test(stft, gradcheck_istft)
{
    clt_device *dev = get_device("cpu");
    double *re = spread_doubles(40, 61), *im = spread_doubles(40, 62), w[8];
    for (int k = 0; k < 8; k++)
        w[k] = 0.6 + 0.05 * k;
    gcase c1 = {8, 2, 8, 1, 0, -1, 0, 1, 0, CLT_PAD_REFLECT, -1};
    gc_in in1[3] = {{2, {5, 8}, re, 1}, {2, {5, 8}, im, 1}, {1, {8}, w, 1}};
    gradcheck(dev, gc_istft, &c1, 3, in1);
    gcase c2 = {6, 2, 6, 1, 1, 0, 0, 1, 1, CLT_PAD_REFLECT, 15};
    gc_in in2[3] = {{3, {1, 6, 6}, re, 1}, {3, {1, 6, 6}, im, 1}, {1, {6}, w, 1}};
    gradcheck(dev, gc_istft, &c2, 3, in2);
    free(re);
    free(im);
}
