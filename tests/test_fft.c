/* test_fft.c: complex tensors (casts, copies, views, elementwise) and the
 * FFTs against a direct DFT computed here in double, and the refusals of
 * ops that do not take complex operands. */
#include <complex.h>
#include <stdio.h>
#include <unistd.h>

#include "helpers.h"

static clt_tensor *up_c128(clt_device *dev, int nd, const int64_t *shape, const double complex *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, nd, shape, v, &t));
    return t;
}

static double complex *down_c128(const clt_tensor *t)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_COMPLEX128);
    size_t n = (size_t)clt_tensor_numel(t);
    double complex *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static double *down_f64(const clt_tensor *t)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_FLOAT64);
    size_t n = (size_t)clt_tensor_numel(t);
    double *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static void random_c(double complex *v, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        double re = (double)((seed >> 8) % 20001) / 1000.0 - 10.0;
        seed = seed * 1103515245u + 12345u;
        double im = (double)((seed >> 8) % 20001) / 1000.0 - 10.0;
        v[i] = re + im * I;
    }
}

/* The DFT of x[0..m) (cut or padded to n) with exp(sign 2 pi i j k / n). */
static void naive_dft(const double complex *x, int64_t m, int64_t n, int sign, double scale,
                      double complex *out, int64_t nout)
{
    for (int64_t k = 0; k < nout; k++) {
        long double complex acc = 0;
        for (int64_t j = 0; j < m && j < n; j++)
            acc += x[j] * cexpl(sign * 2.0L * (long double)M_PI * I * (long double)((j * k) % n) /
                                (long double)n);
        out[k] = (double complex)acc * scale;
    }
}

static bool near_c(double complex a, double complex b, double tol)
{
    return cabs(a - b) <= tol;
}

Test(fft, complex_round_trip_casts_and_views)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {3, 4};
    double complex v[12];
    random_c(v, 12, 1);
    clt_tensor *t = up_c128(dev, 2, shape, v);
    cr_assert(clt_is_complex(t));
    /* a transposed copy */
    clt_tensor *tt = NULL, *c = NULL;
    CHECK(clt_transpose(t, 0, 1, &tt));
    CHECK(clt_contiguous(tt, &c));
    double complex *h = down_c128(c);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert(h[j * 3 + i] == v[i * 4 + j]);
    free(h);
    /* complex to real drops the imaginary part; real to complex adds 0 */
    clt_tensor *re = NULL, *back = NULL, *c64 = NULL, *c128 = NULL;
    CHECK(clt_to_dtype(t, CLT_FLOAT64, &re));
    double *r = down_f64(re);
    for (int i = 0; i < 12; i++)
        cr_assert(r[i] == creal(v[i]));
    CHECK(clt_to_dtype(re, CLT_COMPLEX128, &back));
    h = down_c128(back);
    for (int i = 0; i < 12; i++)
        cr_assert(h[i] == creal(v[i]) + 0.0 * I && cimag(h[i]) == 0.0);
    free(h);
    /* complex64 and back */
    CHECK(clt_to_dtype(t, CLT_COMPLEX64, &c64));
    CHECK(clt_to_dtype(c64, CLT_COMPLEX128, &c128));
    h = down_c128(c128);
    for (int i = 0; i < 12; i++)
        cr_assert(near_c(h[i], v[i], 1e-5));
    free(h);
    /* view_as_real shares storage: [3, 4, 2] */
    clt_tensor *vr = NULL, *vi = NULL, *vc = NULL;
    CHECK(clt_view_as_real(t, &vr));
    cr_assert_eq(clt_tensor_ndim(vr), 3);
    cr_assert_eq(clt_tensor_shape(vr)[2], 2);
    double *rr = down_f64(vr);
    for (int i = 0; i < 12; i++)
        cr_assert(rr[2 * i] == creal(v[i]) && rr[2 * i + 1] == cimag(v[i]));
    free(rr);
    CHECK(clt_imag(t, &vi));
    double *im = down_f64(vi);
    for (int i = 0; i < 12; i++)
        cr_assert(im[i] == cimag(v[i]));
    free(im);
    CHECK(clt_view_as_complex(vr, &vc));
    h = down_c128(vc);
    for (int i = 0; i < 12; i++)
        cr_assert(h[i] == v[i]);
    free(h);
    free(r);
    clt_tensor *bad = NULL;
    cr_assert_eq(clt_to_dtype(t, CLT_BOOL, &bad), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(bad);
    clt_tensor *ts[] = {t, tt, c, re, back, c64, c128, vr, vi, vc};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

Test(fft, complex_elementwise_against_host)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 5}, rshape[1] = {5};
    double complex a[10], b[10];
    random_c(a, 10, 2);
    random_c(b, 10, 3);
    double rb[5] = {1.5, -2, 0.25, 3, -0.5};
    clt_tensor *ta = up_c128(dev, 2, shape, a), *tb = up_c128(dev, 2, shape, b), *tr = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, rshape, rb, &tr));
    clt_status (*fns[4])(const clt_tensor *, const clt_tensor *, clt_tensor **) = {
        clt_add, clt_sub, clt_mul, clt_div};
    for (int op = 0; op < 4; op++) {
        clt_tensor *o = NULL, *o2 = NULL;
        CHECK(fns[op](ta, tb, &o));
        CHECK(fns[op](ta, tr, &o2)); /* real operand broadcast over rows */
        double complex *h = down_c128(o), *h2 = down_c128(o2);
        for (int i = 0; i < 10; i++) {
            double complex x = a[i], y = b[i], z = rb[i % 5];
            double complex want = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
            double complex want2 = op == 0 ? x + z : op == 1 ? x - z : op == 2 ? x * z : x / z;
            cr_assert(near_c(h[i], want, 1e-12 * (1 + cabs(want))), "op %d at %d", op, i);
            cr_assert(near_c(h2[i], want2, 1e-12 * (1 + cabs(want2))), "op %d at %d", op, i);
        }
        free(h);
        free(h2);
        clt_tensor_free(o);
        clt_tensor_free(o2);
    }
    clt_tensor *ab = NULL, *an = NULL, *cj = NULL, *pl = NULL, *cx = NULL;
    CHECK(clt_abs(ta, &ab));
    CHECK(clt_angle(ta, &an));
    CHECK(clt_conj(ta, &cj));
    CHECK(clt_polar(ab, an, &pl));
    clt_tensor *re = NULL, *im = NULL;
    CHECK(clt_real(ta, &re));
    CHECK(clt_imag(ta, &im));
    CHECK(clt_complex(re, im, &cx));
    double *hab = down_f64(ab), *han = down_f64(an);
    double complex *hcj = down_c128(cj), *hpl = down_c128(pl), *hcx = down_c128(cx);
    for (int i = 0; i < 10; i++) {
        cr_assert(fabs(hab[i] - cabs(a[i])) <= 1e-12 * cabs(a[i]));
        cr_assert(fabs(han[i] - carg(a[i])) <= 1e-12);
        cr_assert(hcj[i] == conj(a[i]));
        cr_assert(near_c(hpl[i], a[i], 1e-12 * (1 + cabs(a[i]))));
        cr_assert(hcx[i] == a[i]);
    }
    free(hab);
    free(han);
    free(hcj);
    free(hpl);
    free(hcx);
    clt_tensor *ts[] = {ta, tb, tr, ab, an, cj, pl, cx, re, im};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

Test(fft, fft_and_ifft_match_a_direct_dft)
{
    clt_device *dev = get_device("cpu");
    const int64_t lens[] = {1, 2, 5, 8, 12, 17, 64};
    const char *norms[] = {NULL, "ortho", "forward"};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t m = lens[li], shape[2] = {m, 3};
        double complex *x = malloc((size_t)(3 * m) * sizeof *x), col[64], want[80];
        random_c(x, (size_t)(3 * m), (unsigned)m);
        clt_tensor *t = up_c128(dev, 2, shape, x);
        for (int ni = 0; ni < 3; ni++)
            for (int inv = 0; inv < 2; inv++)
                for (int64_t n = m - 1 > 0 ? m - 1 : m; n <= m + 3; n += 4) {
                    clt_tensor *o = NULL;
                    /* along dim 0, a strided dimension */
                    CHECK((inv ? clt_fft_ifft : clt_fft_fft)(t, n, 0, norms[ni], &o));
                    cr_assert_eq(clt_tensor_shape(o)[0], n);
                    double complex *h = down_c128(o);
                    double scale = ni == 1 ? 1 / sqrt((double)n)
                                   : (ni == 2) != (inv == 1) ? 1.0 / (double)n
                                                              : 1.0;
                    for (int c = 0; c < 3; c++) {
                        for (int64_t j = 0; j < m; j++)
                            col[j] = x[j * 3 + c];
                        naive_dft(col, m, n, inv ? 1 : -1, scale, want, n);
                        for (int64_t k = 0; k < n; k++)
                            cr_assert(near_c(h[k * 3 + c], want[k], 1e-9),
                                      "m %lld n %lld norm %d inv %d col %d k %lld", (long long)m,
                                      (long long)n, ni, inv, c, (long long)k);
                    }
                    free(h);
                    clt_tensor_free(o);
                }
        clt_tensor_free(t);
        free(x);
    }
}

Test(fft, real_transforms_match_a_direct_dft)
{
    clt_device *dev = get_device("cpu");
    for (int64_t m = 1; m <= 11; m += 2) {
        double xr[12];
        double complex xc[12], want[12];
        for (int64_t j = 0; j < m; j++) {
            xr[j] = sin(1.0 + 0.7 * (double)j) * 3;
            xc[j] = xr[j];
        }
        int64_t shape[1] = {m};
        clt_tensor *t = NULL, *o = NULL, *back = NULL, *ih = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, shape, xr, &t));
        CHECK(clt_fft_rfft(t, -1, -1, NULL, &o));
        cr_assert_eq(clt_tensor_shape(o)[0], m / 2 + 1);
        double complex *h = down_c128(o);
        naive_dft(xc, m, m, -1, 1.0, want, m / 2 + 1);
        for (int64_t k = 0; k <= m / 2; k++)
            cr_assert(near_c(h[k], want[k], 1e-10));
        /* irfft with n = m gives x back */
        CHECK(clt_fft_irfft(o, m, 0, NULL, &back));
        double *r = down_f64(back);
        for (int64_t j = 0; j < m; j++)
            cr_assert(fabs(r[j] - xr[j]) <= 1e-10, "m %lld j %lld: %g vs %g", (long long)m,
                      (long long)j, r[j], xr[j]);
        free(r);
        /* ihfft is conj(rfft) / n; hfft of it with n = m gives x back */
        CHECK(clt_fft_ihfft(t, -1, 0, NULL, &ih));
        double complex *hi = down_c128(ih);
        for (int64_t k = 0; k <= m / 2; k++)
            cr_assert(near_c(hi[k], conj(want[k]) / (double)m, 1e-10));
        free(hi);
        clt_tensor *hf = NULL;
        CHECK(clt_fft_hfft(ih, m, 0, NULL, &hf));
        r = down_f64(hf);
        for (int64_t j = 0; j < m; j++)
            cr_assert(fabs(r[j] - xr[j]) <= 1e-10);
        free(r);
        free(h);
        clt_tensor_free(hf);
        clt_tensor_free(ih);
        clt_tensor_free(back);
        clt_tensor_free(o);
        clt_tensor_free(t);
    }
}

/* Powers of two from 8 on go through the radix-2 passes: rfft and irfft
 * of 32 (x padded with zeros), against the direct DFT. */
Test(fft, radix2_real_transforms)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 11};
    double xr[22];
    double complex xc[32], want[32];
    for (int i = 0; i < 22; i++)
        xr[i] = cos(0.3 * i * i) * 2;
    clt_tensor *t = NULL, *o = NULL, *back = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, shape, xr, &t));
    CHECK(clt_fft_rfft(t, 32, 1, "ortho", &o));
    cr_assert_eq(clt_tensor_shape(o)[1], 17);
    double complex *h = down_c128(o);
    for (int r = 0; r < 2; r++) {
        for (int j = 0; j < 11; j++)
            xc[j] = xr[r * 11 + j];
        naive_dft(xc, 11, 32, -1, 1 / sqrt(32.0), want, 17);
        for (int k = 0; k < 17; k++)
            cr_assert(near_c(h[r * 17 + k], want[k], 1e-10), "row %d k %d", r, k);
    }
    CHECK(clt_fft_irfft(o, 32, 1, "ortho", &back));
    double *hb = down_f64(back);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 32; j++)
            cr_assert(fabs(hb[r * 32 + j] - (j < 11 ? xr[r * 11 + j] : 0.0)) <= 1e-10);
    free(hb);
    free(h);
    clt_tensor_free(back);
    clt_tensor_free(o);
    clt_tensor_free(t);
}

/* Lengths other than powers of two above 64 go through Bluestein's
 * algorithm: complex transforms of 97 and 100 (from 90 inputs), and irfft
 * of 130 values from 66. */
Test(fft, bluestein_lengths)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[1] = {90};
    double complex x[90], want[100];
    random_c(x, 90, 11);
    clt_tensor *t = up_c128(dev, 1, shape, x);
    const int64_t ns[2] = {97, 100};
    for (int i = 0; i < 2; i++)
        for (int inv = 0; inv < 2; inv++) {
            clt_tensor *o = NULL;
            CHECK((inv ? clt_fft_ifft : clt_fft_fft)(t, ns[i], 0, "forward", &o));
            double complex *h = down_c128(o);
            naive_dft(x, 90, ns[i], inv ? 1 : -1, inv ? 1.0 : 1.0 / (double)ns[i], want, ns[i]);
            for (int64_t k = 0; k < ns[i]; k++)
                cr_assert(near_c(h[k], want[k], 1e-11 * 90), "n %lld k %lld", (long long)ns[i],
                          (long long)k);
            free(h);
            clt_tensor_free(o);
        }
    /* irfft: the real signal whose half spectrum is x[0..66) */
    clt_tensor *half = NULL, *r = NULL;
    CHECK(clt_narrow(t, 0, 0, 66, &half));
    CHECK(clt_fft_irfft(half, 130, 0, NULL, &r));
    double *hr = down_f64(r);
    double complex full[130], sig[130];
    for (int k = 0; k < 130; k++)
        full[k] = k <= 65 ? x[k] : conj(x[130 - k]);
    naive_dft(full, 130, 130, 1, 1.0 / 130, sig, 130);
    for (int j = 0; j < 130; j++)
        cr_assert(fabs(hr[j] - creal(sig[j])) <= 1e-11, "j %d", j);
    free(hr);
    clt_tensor_free(r);
    clt_tensor_free(half);
    clt_tensor_free(t);
}

Test(fft, fft2_matches_a_direct_2d_dft)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 5};
    double complex x[30];
    random_c(x, 30, 7);
    clt_tensor *t = up_c128(dev, 3, shape, x), *o = NULL, *oi = NULL;
    CHECK(clt_fft_fft2(t, NULL, NULL, "ortho", &o));
    double complex *h = down_c128(o);
    for (int b = 0; b < 2; b++)
        for (int u = 0; u < 3; u++)
            for (int v = 0; v < 5; v++) {
                double complex acc = 0;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 5; j++)
                        acc += x[b * 15 + i * 5 + j] *
                               cexp(-2 * M_PI * I * ((double)(u * i) / 3 + (double)(v * j) / 5));
                acc /= sqrt(15.0);
                cr_assert(near_c(h[b * 15 + u * 5 + v], acc, 1e-10));
            }
    /* and back */
    CHECK(clt_fft_ifftn(o, 2, NULL, (const int[]){1, 2}, "ortho", &oi));
    double complex *hb = down_c128(oi);
    for (int i = 0; i < 30; i++)
        cr_assert(near_c(hb[i], x[i], 1e-10));
    free(hb);
    free(h);
    clt_tensor_free(oi);
    clt_tensor_free(o);
    clt_tensor_free(t);
}

Test(fft, freqs_and_shifts)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *f = NULL, *rf = NULL;
    CHECK(clt_fft_fftfreq(dev, 5, 0.5, CLT_FLOAT64, &f));
    CHECK(clt_fft_rfftfreq(dev, 6, 1.0, CLT_FLOAT64, &rf));
    double *h = down_f64(f), *hr = down_f64(rf);
    const double want[5] = {0, 0.4, 0.8, -0.8, -0.4}, wantr[4] = {0, 1.0 / 6, 2.0 / 6, 0.5};
    for (int i = 0; i < 5; i++)
        cr_assert(fabs(h[i] - want[i]) < 1e-15);
    for (int i = 0; i < 4; i++)
        cr_assert(fabs(hr[i] - wantr[i]) < 1e-15);
    /* fftshift of the frequencies sorts them; ifftshift undoes it */
    clt_tensor *s = NULL, *u = NULL;
    CHECK(clt_fft_fftshift(f, 0, NULL, &s));
    CHECK(clt_fft_ifftshift(s, 1, (const int[]){0}, &u));
    double *hs = down_f64(s), *hu = down_f64(u);
    const double sorted[5] = {-0.8, -0.4, 0, 0.4, 0.8};
    for (int i = 0; i < 5; i++) {
        cr_assert(hs[i] == sorted[i]);
        cr_assert(hu[i] == h[i]);
    }
    free(h);
    free(hr);
    free(hs);
    free(hu);
    clt_tensor_free(f);
    clt_tensor_free(rf);
    clt_tensor_free(s);
    clt_tensor_free(u);
}

Test(fft, fftshift_gradient_is_the_inverse_shift)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[1] = {5};
    double x[5] = {1, 2, 3, 4, 5}, w[5] = {10, 20, 30, 40, 50};
    clt_tensor *t = NULL, *tw = NULL, *s = NULL, *p = NULL, *l = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, shape, x, &t));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, shape, w, &tw));
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_fft_fftshift(t, 0, NULL, &s));
    CHECK(clt_mul(s, tw, &p));
    CHECK(clt_sum(p, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(t, &g));
    double *hg = down_f64(g);
    /* s[i] = x[(i + 3) % 5] (fftshift moves x[j] to (j + 2) % 5), so
     * d l / d x[j] = w[(j + 2) % 5] */
    for (int j = 0; j < 5; j++)
        cr_assert(hg[j] == w[(j + 2) % 5], "j %d: %g", j, hg[j]);
    free(hg);
    clt_tensor *ts[] = {t, tw, s, p, l, g};
    for (size_t i = 0; i < 6; i++)
        clt_tensor_free(ts[i]);
}

Test(fft, ops_refuse_complex_and_autograd_takes_it)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 2};
    double complex v[4] = {1 + 2 * I, 3, -1 * I, 4 - I};
    clt_tensor *t = up_c128(dev, 2, shape, v);
    clt_tensor *o = (clt_tensor *)&o;
    cr_assert_eq(clt_erf(t, &o), CLT_ERR_DTYPE_UNSUPPORTED); /* exp takes it: test_complex4 */
    cr_assert_null(o);
    cr_assert(strstr(clt_last_error(), "not implemented for complex dtypes"), "%s",
              clt_last_error());
    /* sum, mean, prod and matmul take complex tensors (test_complexgrad and
     * test_complex3 check their values); cummax does not, as in torch */
    o = (clt_tensor *)&o;
    cr_assert_neq(clt_cummax(t, 0, &o, NULL), CLT_OK);
    cr_assert_null(o);
    cr_assert(strstr(clt_last_error(), "complex"), "%s", clt_last_error());
    o = (clt_tensor *)&o;
    cr_assert_neq(clt_lgamma(t, &o), CLT_OK);
    cr_assert(strstr(clt_last_error(), "complex"), "%s", clt_last_error());
    double d = 0;
    cr_assert_eq(clt_tensor_item(t, &d), CLT_ERR_INVALID_ARGUMENT); /* 4 elements */
    /* autograd takes complex tensors (tests/test_complexgrad.c checks the
     * gradients): a complex leaf, and complex results of real leaves */
    CHECK(clt_set_requires_grad(t, 1));
    cr_assert(clt_requires_grad(t));
    double r[4] = {1, 2, 3, 4};
    clt_tensor *x = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, shape, r, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_fft_rfft(x, -1, -1, NULL, &o));
    cr_assert_str_eq(clt_grad_fn_name(o), "FftR2CBackward0");
    clt_tensor_free(o);
    CHECK(clt_to_dtype(x, CLT_COMPLEX128, &o));
    cr_assert_str_eq(clt_grad_fn_name(o), "ToCopyBackward0");
    clt_tensor_free(o);
    clt_tensor_free(x);
    clt_tensor_free(t);
}

/* torch files hold complex tensors as ComplexFloatStorage and
 * ComplexDoubleStorage: a round trip keeps the values and dtypes. */
Test(fft, complex_tensors_in_torch_files)
{
    clt_device *dev = get_device("cpu");
    const double complex v[3] = {1 + 2 * I, -3.5 - 0.25 * I, 0.5 * I};
    const float complex w[2] = {2 - I, -0.125f + 4 * I};
    clt_tensor *a = up_c128(dev, 1, (int64_t[]){3}, v), *b = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX64, 2, (int64_t[]){1, 2}, w, &b));
    char dir[] = "/tmp/cltensor-fft-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/c.pt", dir);
    clt_named_tensor ts[2] = {{"a", a}, {"b", b}}, *got = NULL;
    size_t n = 0;
    CHECK(clt_save_torch(path, ts, 2));
    CHECK(clt_load_torch(path, dev, &got, &n));
    cr_assert_eq(n, 2);
    cr_assert_str_eq(got[0].name, "a");
    double complex *ga = down_c128(got[0].tensor);
    for (int k = 0; k < 3; k++)
        cr_assert(ga[k] == v[k], "element %d", k);
    free(ga);
    cr_assert_eq(clt_tensor_dtype(got[1].tensor), CLT_COMPLEX64);
    float complex gb[2];
    CHECK(clt_tensor_read(got[1].tensor, gb, sizeof gb));
    cr_assert(gb[0] == w[0] && gb[1] == w[1]);
    clt_named_tensors_free(got, n);
    remove(path);
    rmdir(dir);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* torch's combine_categories: a 0-d complex operand over floating tensors
 * keeps their precision (float32 with complex128 is complex64), over
 * integers it decides. */
Test(fft, zero_dim_complex_keeps_the_float_precision)
{
    clt_device *dev = get_device("cpu");
    const float x[2] = {1.5f, -2};
    const int32_t k[2] = {3, -4};
    const double complex z = 0.5 + 2 * I;
    clt_tensor *a = NULL, *i = NULL, *c = up_c128(dev, 0, NULL, &z), *s = NULL, *s2 = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){2}, x, &a));
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, (int64_t[]){2}, k, &i));
    clt_dtype r;
    CHECK(clt_result_type(a, c, &r));
    cr_assert_eq(r, CLT_COMPLEX64);
    CHECK(clt_result_type(c, i, &r));
    cr_assert_eq(r, CLT_COMPLEX128);
    CHECK(clt_add(a, c, &s));
    cr_assert_eq(clt_tensor_dtype(s), CLT_COMPLEX64);
    float complex got[2];
    CHECK(clt_tensor_read(s, got, sizeof got));
    for (int j = 0; j < 2; j++)
        cr_assert(got[j] == x[j] + (float complex)z, "element %d", j);
    CHECK(clt_mul(i, c, &s2));
    double complex *g2 = down_c128(s2);
    for (int j = 0; j < 2; j++)
        cr_assert(g2[j] == k[j] * z, "element %d", j);
    free(g2);
    clt_tensor *ts[] = {a, i, c, s, s2};
    for (size_t j = 0; j < sizeof ts / sizeof *ts; j++)
        clt_tensor_free(ts[j]);
}
