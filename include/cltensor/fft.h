/* cltensor/fft.h: complex tensors and torch.fft.  Include <cltensor.h>
 * rather than this file.
 *
 * Complex dtypes (CLT_COMPLEX64, CLT_COMPLEX128; cltensor/common.h) store
 * (real, imaginary) pairs.  Host data for clt_tensor_from_host and
 * clt_tensor_read is in that layout (C99's float complex, numpy's
 * complex64).  Besides the functions here, complex tensors take
 * clt_to_dtype, clt_to, clone, contiguous, the views of cltensor/view.h
 * and its splits, clt_flip, clt_roll, clt_index_select, clt_gather (on
 * the real view: grad_fn ViewAsComplexBackward0), clt_add, clt_sub,
 * clt_mul, clt_div (a real operand is promoted: float32 with complex64
 * gives complex64, float64 with complex64 complex128), clt_abs (a real result), clt_sum, clt_sum_dim, clt_mean,
 * clt_mean_dim (complex results) and clt_matmul, clt_mm, clt_bmm, clt_mv,
 * clt_dot (both operands of one complex dtype: computed as four real
 * products, (ar br - ai bi) + i (ar bi + ai br), recorded as such; grad_fn
 * ComplexBackward0), clt_prod, clt_prod_dim, clt_cumsum, clt_cumprod
 * (complex results; the products composed of recorded complex products of
 * halves, cumprod a Hillis-Steele scan of them), clt_var, clt_std, their
 * _dim forms and clt_var_mean, clt_std_mean and theirs (torch's sum
 * |x - mean|^2 / max(0, N - correction): real results of the parts' dtype,
 * composed of recorded means, differences and squares), clt_tril,
 * clt_triu, clt_where (complex and real operands promoted as clt_add's),
 * clt_masked_fill (the value real, the imaginary part 0), clt_neg,
 * clt_rot90, the arithmetic with a real scalar (clt_add_scalar,
 * clt_sub_scalar, clt_rsub_scalar, clt_mul_scalar, clt_div_scalar,
 * clt_rdiv_scalar: complex results), clt_eq, clt_ne, clt_eq_scalar,
 * clt_ne_scalar (equal when both parts are), clt_isnan, clt_isinf (either
 * part), clt_isfinite (both parts), clt_square, clt_reciprocal, clt_sgn
 * (z / |z|, 0 at 0), clt_vector_norm, clt_vector_norm_dim,
 * clt_linalg_vector_norm (the norms of |z|: real results; ord 2 is
 * differentiable twice, as for real tensors), clt_nonzero, clt_masked_select and
 * clt_index_add, clt_index_copy, clt_scatter, clt_scatter_add (self and
 * source of one complex dtype; on the real views), the elementary
 * functions clt_exp, clt_log, clt_log2, clt_log10, clt_log1p, clt_expm1,
 * clt_sqrt, clt_rsqrt, clt_sin, clt_cos, clt_tan, clt_sinh, clt_cosh,
 * clt_tanh, clt_asin, clt_acos, clt_atan, clt_asinh, clt_acosh, clt_atanh
 * and clt_sigmoid (complex results; principal branches, the cuts on the
 * axes with the sign of a zero part choosing the side; zeros, infinities
 * and nans give C99 Annex G's values, as glibc; accurate to a few units in
 * the last place for large and small arguments too; torch 1.13 gives
 * otherwise exp(inf + 0i) = inf + nan i, asin, acos and atan of large or
 * infinite arguments (its formulas lose them: asin(1e30 + 1e30i) is
 * -1.57 - 32.6i there, 0.785 + 70.1i here), some zeros' signs, and has no
 * complex log1p or expm1; rsqrt and sigmoid divide as clt_div does),
 * clt_pow with a complex operand (exp(b log a), a real operand promoted as
 * clt_add's: 0 ** 0 is nan, as torch's), clt_pow_scalar with a real
 * exponent (torch's exact forms for 0 (1 everywhere), 1, 2, 3, -1, -2,
 * 0.5, -0.5, exp(s log z) otherwise) and clt_rpow_scalar (exp(z log s)).
 * Their gradients are torch's formulas (g conj(f'(z)); asin, acos, asinh
 * and acosh with torch's rsqrt(+-(z^2 -+ 1)) forms) composed of recorded
 * ops, differentiable twice; pow's, composed of exp and log, is nan at a
 * zero base where torch's masks it to 0.  clt_div by a zero, or by a
 * divisor with an infinite part, gives nan + nan i, as torch 1.13's
 * (ac + bd) / (c^2 + d^2); elsewhere Smith's scaling keeps quotients that
 * formula overflows or flushes (complex64 (1 + i) / (1e20 + 1e20i) is
 * 1e-20 here, 0 there).  clt_polar of a negative magnitude r gives
 * r cos(angle) + i r sin(angle), as torch (polar(-1, 0) is -1 - 0i).
 * clt_take (the pairs taken through the real view; the index checked as
 * for real tensors) and clt_index_fill (a real value: the filled
 * elements' imaginary parts 0; grad_fn ComplexBackward0, its formula not
 * recorded under create_graph, as the real op's), clt_index_put and
 * clt_put (values of t's complex dtype, as torch's "Index put requires the
 * source and destination dtypes match"; on the real views) take them too.
 * Other ops (clt_erf, clt_lt, clt_cummax among them) refuse them with
 * CLT_ERR_DTYPE_UNSUPPORTED.
 *
 * Autograd takes complex tensors as torch does: a complex leaf may
 * require grad and its gradient is complex, the gradient of a real loss L
 * with respect to z being dL/dz* (conjugate Wirtinger calculus), and a real
 * input of a complex result takes the real part of its gradient.  Every
 * function here records a gradient (angle of a real tensor: zeros), as does
 * every op above on complex operands, the splits (clt_split, clt_chunk,
 * clt_unbind, clt_tensor_split), clt_checkpoint and clt_function_apply
 * with complex results.
 * clt_backward of a complex output needs its gradient ("grad can be
 * implicitly created only for real scalar outputs").  With create_graph
 * the complex formulas (the transforms' and shifts' too) compute with
 * recorded ops, so their gradients are differentiable again, as torch's.
 *
 * Every function hands out a new reference in *out: release it with
 * clt_tensor_free.  Views share storage with their input.
 */
#ifndef CLTENSOR_FFT_H
#define CLTENSOR_FFT_H

#include <cltensor/common.h>
#include <cltensor/tensor.h>
#include <cltensor/view.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- complex values -------------------------------------------------------- */

/* 1 when t is complex64 or complex128, 0 otherwise (and for NULL). */
CLT_API int clt_is_complex(const clt_tensor *t);

/* torch.view_as_real: a float32/float64 view of complex t with a last
 * dimension of 2 (real, imaginary).  t must have fewer than CLT_MAX_DIMS
 * dimensions. */
CLT_API clt_status clt_view_as_real(const clt_tensor *t, clt_tensor **out);

/* torch.view_as_complex: a complex view of float32/float64 t whose last
 * dimension is 2 with stride 1, its other strides and its offset even
 * (CLT_ERR_NOT_CONTIGUOUS otherwise, CLT_ERR_SHAPE_MISMATCH for a last
 * dimension other than 2). */
CLT_API clt_status clt_view_as_complex(const clt_tensor *t, clt_tensor **out);

/* torch.real and torch.imag: views of the parts of complex t.  clt_real of a
 * real tensor is a view of it; clt_imag of one is CLT_ERR_DTYPE_UNSUPPORTED.
 * An in-place op on these views (or on clt_view_as_real's and
 * clt_view_as_complex's, or views of them) is recorded on the base's
 * history as torch's CopySlices, and gradients reach the base's leaves
 * (ops.h). */
CLT_API clt_status clt_real(const clt_tensor *t, clt_tensor **out);
CLT_API clt_status clt_imag(const clt_tensor *t, clt_tensor **out);

/* torch.conj, materialised: a new tensor (a view of t for a real t). */
CLT_API clt_status clt_conj(const clt_tensor *t, clt_tensor **out);

/* torch.angle: atan2(imag, real) as float32 (complex64) or float64
 * (complex128).  A real float32/float64 or integer t is taken as complex
 * with zero imaginary parts (0 for x >= 0, pi for x < 0); float16 is
 * refused. */
CLT_API clt_status clt_angle(const clt_tensor *t, clt_tensor **out);

/* torch.polar: abs * (cos angle + i sin angle); torch.complex: real + i imag.
 * Both operands float32 or both float64 (complex64 or complex128 result),
 * broadcast together. */
CLT_API clt_status clt_polar(const clt_tensor *abs, const clt_tensor *angle, clt_tensor **out);
CLT_API clt_status clt_complex(const clt_tensor *real, const clt_tensor *imag, clt_tensor **out);

/* torch.pow(a, re + im j): a to the power of a complex Python scalar, as
 * a ** (0.5+1j).  The result is complex: a's dtype for complex a,
 * complex128 for float64 a, complex64 for the other real dtypes (float32,
 * bfloat16, integers and bool), as torch's promotion with a complex
 * scalar.  im == 0 is clt_pow_scalar(a, re) on a complex a (its exact
 * forms for 0, 1, 2, 3, -1, -2, 0.5 and -0.5, as torch's Scalar 2+0j
 * equals 2); otherwise exp(s log a) in the result dtype, as torch's
 * std::pow (cpow): 0 to a power with a positive real part is 0.
 * Autograd: torch's PowBackward0, g conj(s a^(s-1)) for complex a, its
 * real part for a real a, composed of recorded complex ops (log, product,
 * exp), so differentiable twice; NaN at a zero base, as torch's.
 * Errors: float16 a is CLT_ERR_DTYPE_UNSUPPORTED (torch's ComplexHalf
 * "not implemented"); a device without float64 refuses complex128.  New
 * tensor in *out (release with clt_tensor_free); *out is NULL on error. */
CLT_API clt_status clt_pow_scalar_complex(const clt_tensor *a, double re, double im,
                                          clt_tensor **out);

/* ---- torch.fft ------------------------------------------------------------------ */

/* The transforms compute in complex64 (float32, integer and bool inputs) or
 * complex128 (float64 inputs); float16 is refused.  n: the length of the
 * transform along dim (-1: the input's, or 2 (m - 1) for irfft and hfft of
 * m inputs); a shorter input is padded with zeros, a longer one cut.  norm:
 * NULL or "backward" (the inverse scales by 1/n), "ortho" (both by
 * 1/sqrt(n)) or "forward" (the forward one by 1/n).  Results are contiguous.
 * Lengths that are powers of two from 8 on take radix-2 passes, other
 * lengths above 64 Bluestein's algorithm over them (both O(n log n)),
 * shorter ones a direct DFT.
 * Errors: CLT_ERR_INVALID_ARGUMENT for n < 1 (other than -1) or a bad
 * norm, CLT_ERR_DIM_OUT_OF_RANGE, CLT_ERR_DTYPE_UNSUPPORTED for a complex
 * input to rfft or ihfft. */
CLT_API clt_status clt_fft_fft(const clt_tensor *x, int64_t n, int dim, const char *norm,
                               clt_tensor **out);
CLT_API clt_status clt_fft_ifft(const clt_tensor *x, int64_t n, int dim, const char *norm,
                                clt_tensor **out);
/* A real input's n / 2 + 1 non-negative frequencies. */
CLT_API clt_status clt_fft_rfft(const clt_tensor *x, int64_t n, int dim, const char *norm,
                                clt_tensor **out);
/* The real signal of length n whose one-sided spectrum is x (the imaginary
 * parts of the zero and Nyquist frequencies are ignored). */
CLT_API clt_status clt_fft_irfft(const clt_tensor *x, int64_t n, int dim, const char *norm,
                                 clt_tensor **out);
/* torch.fft.hfft: the real spectrum of a Hermitian signal given by its
 * first half; ihfft: its inverse (n / 2 + 1 complex values of a real x). */
CLT_API clt_status clt_fft_hfft(const clt_tensor *x, int64_t n, int dim, const char *norm,
                                clt_tensor **out);
CLT_API clt_status clt_fft_ihfft(const clt_tensor *x, int64_t n, int dim, const char *norm,
                                 clt_tensor **out);

/* N-dimensional forms over k dimensions: s (NULL: the input's sizes, -1
 * entries too) and dim (NULL: the last k dimensions) hold k values each;
 * both NULL transform every dimension (k is ignored then).  rfftn takes the
 * real-to-complex transform along the last of dim, irfftn gives a real
 * result whose last transformed dimension has s[k-1] values (default
 * 2 (m - 1)).  Dims must be unique. */
CLT_API clt_status clt_fft_fftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                                const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_ifftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                                 const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_rfftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                                 const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_irfftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                                  const char *norm, clt_tensor **out);

/* Two-dimensional forms: s NULL or 2 sizes, dim NULL ({-2, -1}) or 2. */
CLT_API clt_status clt_fft_fft2(const clt_tensor *x, const int64_t *s, const int *dim,
                                const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_ifft2(const clt_tensor *x, const int64_t *s, const int *dim,
                                 const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_rfft2(const clt_tensor *x, const int64_t *s, const int *dim,
                                 const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_irfft2(const clt_tensor *x, const int64_t *s, const int *dim,
                                  const char *norm, clt_tensor **out);

/* torch.fft.hfftn and hfft2: the real spectrum of a signal Hermitian in
 * the k dims, given by the first half of its last one (the forward
 * transform over the other dims, then hfft along the last, whose length is
 * s[k-1], default 2 (m - 1)); ihfftn and ihfft2: the inverse of a real x,
 * s[k-1] / 2 + 1 values along the last dim (ihfft along it, then the
 * inverse transform over the others; a complex x is
 * CLT_ERR_DTYPE_UNSUPPORTED).  s, dim and the defaults as for fftn and
 * fft2; at least one dim. */
CLT_API clt_status clt_fft_hfftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                                 const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_ihfftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                                  const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_hfft2(const clt_tensor *x, const int64_t *s, const int *dim,
                                 const char *norm, clt_tensor **out);
CLT_API clt_status clt_fft_ihfft2(const clt_tensor *x, const int64_t *s, const int *dim,
                                  const char *norm, clt_tensor **out);

/* torch.fft.fftfreq and rfftfreq: the sample frequencies of a transform of
 * length n with sample spacing d, as a 1-D float32 or float64 tensor on
 * dev ([0, 1, ..., -(n/2), ..., -1] / (d n); rfftfreq: [0, ..., n/2] /
 * (d n)).  n >= 0. */
CLT_API clt_status clt_fft_fftfreq(clt_device *dev, int64_t n, double d, clt_dtype dtype,
                                   clt_tensor **out);
CLT_API clt_status clt_fft_rfftfreq(clt_device *dev, int64_t n, double d, clt_dtype dtype,
                                    clt_tensor **out);

/* torch.fft.fftshift and ifftshift: x rolled by n / 2 (ifftshift: by
 * -(n / 2)) along each of the k dims in dim (NULL: every dimension, k
 * ignored).  Any dtype; a new contiguous tensor.  Records a gradient. */
CLT_API clt_status clt_fft_fftshift(const clt_tensor *x, int k, const int *dim, clt_tensor **out);
CLT_API clt_status clt_fft_ifftshift(const clt_tensor *x, int k, const int *dim,
                                     clt_tensor **out);

/* ---- short-time Fourier transform ------------------------------------------------- */

/* Settings of clt_stft after n_fft (NULL: CLT_STFT_DEFAULTS, torch's
 * defaults with return_complex=True). */
typedef struct clt_stft_opts {
    int64_t hop_length;       /* > 0; -1: n_fft / 4 (floor) */
    int64_t win_length;       /* 0 < win_length <= n_fft; -1: n_fft */
    const clt_tensor *window; /* [win_length], borrowed; NULL: all ones */
    int center;               /* pad n_fft / 2 on both sides first */
    clt_pad_mode pad_mode;    /* the padding of center (clt_pad's modes) */
    int normalized;           /* scale by n_fft^-1/2 */
    int onesided;             /* -1: 1 for a real input and window, else 0 */
    int return_complex;       /* 0: view_as_real's [..., 2] layout */
} clt_stft_opts;

#define CLT_STFT_DEFAULTS {-1, -1, NULL, 1, CLT_PAD_REFLECT, 0, -1, 1}

/* torch.stft(x, n_fft, hop_length, win_length, window, center, pad_mode,
 * normalized, onesided, return_complex) of PyTorch 1.13: x [L] or [B, L]
 * (float32, float64, complex64 or complex128; torch's "expected a 1D or 2D
 * tensor" otherwise).  With center, x is padded by n_fft / 2 on both sides
 * in pad_mode (clt_pad of x as [1, B, L]; its errors, such as reflect
 * padding not shorter than L).  A window shorter than n_fft is padded
 * with zeros on both sides (left (n_fft - win_length) / 2) to centre it.
 * The result is [n_freq, n_frames] or [B, n_freq, n_frames], n_frames =
 * 1 + (L' - n_fft) / hop_length of the padded length L', n_freq = n_fft /
 * 2 + 1 when onesided, n_fft otherwise; element [b, f, t] is sum_k x'[b,
 * t hop + k] w[k] exp(-2 pi i f k / n_fft) (times n_fft^-1/2 when
 * normalized).  Complex64, or complex128 when x or the window is float64
 * or complex128; an integer or bool window (as torch's) is converted to
 * x's real dtype (not differentiable), so the result's dtype is x's
 * complex one, as torch's promotion of the frames times it; return_complex 0 hands out clt_view_as_real of it (a
 * last dimension of 2).  Differentiable with respect to x and the window
 * (composed of clt_pad, clt_unfold, clt_mul and the transforms above).
 * Errors, in torch's words: CLT_ERR_INVALID_ARGUMENT for n_fft outside 0 <
 * n_fft <= L' ("expected 0 < n_fft < L"), hop_length <= 0, win_length
 * outside (0, n_fft], a window that is not 1-D of win_length values, a
 * bad pad_mode, onesided=1 with a complex x or window ("Cannot have
 * onesided output if window or input is complex");
 * CLT_ERR_SHAPE_MISMATCH for x of another rank; CLT_ERR_DTYPE_UNSUPPORTED
 * for an integer, bool or float16 x ("expected a tensor of floating point
 * or complex values") or a float16 window; CLT_ERR_DEVICE_MISMATCH for a window on another device.  New tensor in *out (NULL on failure): release with
 * clt_tensor_free. */
CLT_API clt_status clt_stft(const clt_tensor *x, int64_t n_fft, const clt_stft_opts *opts,
                            clt_tensor **out);

/* Settings of clt_istft after n_fft (NULL: CLT_ISTFT_DEFAULTS). */
typedef struct clt_istft_opts {
    int64_t hop_length;       /* 0 < hop_length <= win_length; -1: n_fft / 4 */
    int64_t win_length;       /* 0 < win_length <= n_fft; -1: n_fft */
    const clt_tensor *window; /* [win_length], borrowed; NULL: all ones */
    int center;               /* the stft was centred: drop n_fft / 2 each side */
    int normalized;           /* the stft was normalized */
    int onesided;             /* -1: 1 when X's n_freq differs from n_fft */
    int64_t length;           /* the result's length; -1: all the signal */
    int return_complex;       /* 1: complex result (not onesided) */
} clt_istft_opts;

#define CLT_ISTFT_DEFAULTS {-1, -1, NULL, 1, 0, -1, -1, 0}

/* torch.istft(X, n_fft, hop_length, win_length, window, center,
 * normalized, onesided, length, return_complex) of PyTorch 1.13, the
 * inverse of clt_stft: X [n_freq, n_frames] or [B, n_freq, n_frames]
 * complex64 or complex128 (or, as torch 1.13's deprecated form, float32 or
 * float64 with a last dimension of 2).  Each frame is transformed back
 * (clt_fft_irfft of its first n_fft / 2 + 1 values for a real result,
 * clt_fft_ifft for return_complex), multiplied by the window (zero-padded
 * to n_fft as clt_stft's), overlap-added at hop_length apart (clt_fold, a
 * fixed summation order) and divided by the overlap-add of the squared
 * window; with center the first n_fft / 2 samples are dropped, and the
 * result holds length samples (zeros past the signal's end) or, without
 * length, the signal less n_fft / 2 at each end with center.  Real (the
 * real dtype of X, promoted with the window's) unless return_complex.
 * Differentiable with respect to X and the window.
 * Errors, in torch's words (CLT_ERR_INVALID_ARGUMENT unless said): an
 * empty X ("input tensor cannot be empty"); X of another rank
 * (CLT_ERR_SHAPE_MISMATCH); another dtype (CLT_ERR_DTYPE_UNSUPPORTED); a
 * frequency size other than n_fft / 2 + 1 when onesided or n_fft when not;
 * hop_length outside (0, win_length]; win_length outside (0, n_fft]; a
 * window that is not 1-D of win_length values; an integer, bool or
 * float16 window (CLT_ERR_DTYPE_UNSUPPORTED: torch 1.13's istft fails on
 * an integer window, "col2im_out_cpu" not implemented for 'Long'); return_complex with
 * onesided ("Cannot have onesided output if window or input is
 * complex"); a complex window without return_complex; a length other than
 * -1 outside [1, 2^62]; an empty result or an envelope below 1e-11 somewhere in it
 * ("window overlap add min", the NOLA condition: a window and hop that
 * leave a sample uncovered).  The check reads the envelope back, so the
 * call waits for the work queued before it.  New tensor in *out (NULL on failure): release with
 * clt_tensor_free. */
CLT_API clt_status clt_istft(const clt_tensor *X, int64_t n_fft, const clt_istft_opts *opts,
                             clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
