/* cltensor/special.h: the rest of torch.special (PyTorch 1.13): the
 * regularized incomplete gamma functions, erfcx, Hurwitz zeta, the Bessel
 * family, Airy's Ai and the orthogonal polynomials.  (lgamma, digamma,
 * i0 ... entr, xlog1py and sinc are in cltensor/ops.h.)
 *
 * Every function returns a new tensor in *out (the caller's, freed with
 * clt_tensor_free) and sets *out to NULL on failure.  Floating tensors
 * keep their dtype (float16 is stored as such and computed in float);
 * integer and bool tensors compute in float32, except for gammainc and
 * gammaincc, which refuse them as PyTorch's "igamma_cpu" not implemented
 * for 'Long' (CLT_ERR_DTYPE_MISMATCH); complex tensors are refused.  Two
 * operands must be on one device, broadcast as clt_add and promote as
 * torch.result_type.  The algorithms are PyTorch's (ATen's Math.h:
 * Cephes, SciPy's incomplete gamma, Boost's Lanczos sum), computed in the
 * compute dtype; results agree with torch's to a few ulps, except as noted.
 * Thread-safe as the rest of the ops. */
#ifndef CLTENSOR_SPECIAL_H
#define CLTENSOR_SPECIAL_H

#include <cltensor/common.h>
#include <cltensor/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* torch.special.gammainc(a, x) and gammaincc(a, x) (torch.igamma,
 * torch.igammac): the regularized lower P(a, x) and upper Q(a, x) = 1 - P
 * incomplete gamma functions.  NaN where a or x is negative, where both
 * are 0 and where both are infinite; P(0, x > 0) = 1, P(a, 0) = 0,
 * P(inf, x) = 0, P(a, inf) = 1 (Q the complements).  (Deliberate
 * difference: PyTorch takes a uniform asymptotic expansion for a > 20 with
 * x near a, whose last step takes pi in float, so that its float64 results
 * there are off by up to about 1e-9 relative; here the series and the
 * continued fraction serve there too, within a few ulps of the exact
 * values for a up to about 1e5.)  Gradient, PyTorch's: for x,
 * +-g x^(a-1) e^-x / Gamma(a) (IgammaBackward0, IgammacBackward0); for a
 * the backward fails with CLT_ERR_INVALID_ARGUMENT, as PyTorch's "the
 * derivative for 'igamma: input' is not implemented". */
CLT_API clt_status clt_special_gammainc(const clt_tensor *a, const clt_tensor *x,
                                        clt_tensor **out);
CLT_API clt_status clt_special_gammaincc(const clt_tensor *a, const clt_tensor *x,
                                         clt_tensor **out);

/* torch.special.erfcx(x) = exp(x^2) erfc(x): inf below -26.7, NaN at NaN,
 * 1/(x sqrt(pi)) asymptotically.  Gradient 2 x erfcx(x) - 2/sqrt(pi)
 * times g (SpecialErfcxBackward0). */
CLT_API clt_status clt_special_erfcx(const clt_tensor *x, clt_tensor **out);

/* torch.special.zeta(x, q): the Hurwitz zeta function sum_k (k + q)^-x;
 * inf at x = 1 and at q a non-positive integer, NaN for x < 1 and for a
 * negative non-integral q with x not an integer.  (Deliberate
 * difference: float32 sums in float, where PyTorch's CPU kernel sums in
 * double: at a negative q, whose terms cancel, float32 results can be far
 * off; terms that underflow to 0 in float end the sum.)  Records
 * SpecialZetaBackward0, whose backward fails (CLT_ERR_INVALID_ARGUMENT),
 * as PyTorch's "the derivative for 'zeta' is not implemented". */
CLT_API clt_status clt_special_zeta(const clt_tensor *x, const clt_tensor *q, clt_tensor **out);

/* The Bessel family of torch.special: J0, J1, Y0, Y1 (Y NaN below 0, -inf
 * at 0), I0, I1 (overflow to inf), K0, K1 (NaN below 0, inf at 0), K0 and
 * K1 times exp(x) (scaled_modified_bessel_k0/k1), sin(x)/x
 * (spherical_bessel_j0, 1 at 0, 0 at +-inf) and Airy's Ai (NaN at +-inf,
 * 0 above 103.892).  As PyTorch's, which evaluates some of Cephes'
 * denominators without their leading 1 (a polevl loop where Cephes calls
 * p1evl): J0, J1, Y0 and Y1 are only about 1e-6 absolute from the true
 * values, and Ai between -2.09 and about -3 up to 2e-4 relative (better
 * further out); cltensor gives PyTorch's values, to a few ulps.
 * PyTorch 1.13 has no derivative for them: an operand
 * that requires grad (with grad mode on) is refused with
 * CLT_ERR_INVALID_ARGUMENT ("the derivative for 'bessel_j0' is not
 * implemented"); call them on a detached tensor. */
CLT_API clt_status clt_special_bessel_j0(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_bessel_j1(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_bessel_y0(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_bessel_y1(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_modified_bessel_i0(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_modified_bessel_i1(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_modified_bessel_k0(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_modified_bessel_k1(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_scaled_modified_bessel_k0(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_scaled_modified_bessel_k1(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_spherical_bessel_j0(const clt_tensor *x, clt_tensor **out);
CLT_API clt_status clt_special_airy_ai(const clt_tensor *x, clt_tensor **out);

/* The orthogonal polynomials of torch.special at x of degree n: Chebyshev
 * T, U, V, W, the shifted Chebyshev T*, U*, V*, W* (of 2x - 1), the
 * physicists' and probabilists' Hermite H and He, Laguerre L and Legendre
 * P.  n is a tensor (promoted and broadcast with x) truncated towards zero
 * to an integer as torch does; n below 0 (and NaN or infinite n) gives 0.
 * As PyTorch's: |x| < 1 takes closed forms (cos(n acos x) ...) above a
 * small n, the rest a three-term recurrence; Hermite of n above 512 (128
 * in float32) is NaN.  (Deliberate difference: a recurrence longer than
 * 2^24 steps gives NaN, where PyTorch would run for hours.)  The _scalar
 * forms take n as a number (torch.special.chebyshev_polynomial_t(x, 3)):
 * the result has x's dtype (float32 for integer x).  No derivative in
 * PyTorch 1.13: an operand that requires grad is refused as for the
 * Bessel functions. */
CLT_API clt_status clt_special_chebyshev_polynomial_t(const clt_tensor *x, const clt_tensor *n,
                                                      clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_u(const clt_tensor *x, const clt_tensor *n,
                                                      clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_v(const clt_tensor *x, const clt_tensor *n,
                                                      clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_w(const clt_tensor *x, const clt_tensor *n,
                                                      clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_t(const clt_tensor *x,
                                                              const clt_tensor *n,
                                                              clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_u(const clt_tensor *x,
                                                              const clt_tensor *n,
                                                              clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_v(const clt_tensor *x,
                                                              const clt_tensor *n,
                                                              clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_w(const clt_tensor *x,
                                                              const clt_tensor *n,
                                                              clt_tensor **out);
CLT_API clt_status clt_special_hermite_polynomial_h(const clt_tensor *x, const clt_tensor *n,
                                                    clt_tensor **out);
CLT_API clt_status clt_special_hermite_polynomial_he(const clt_tensor *x, const clt_tensor *n,
                                                     clt_tensor **out);
CLT_API clt_status clt_special_laguerre_polynomial_l(const clt_tensor *x, const clt_tensor *n,
                                                     clt_tensor **out);
CLT_API clt_status clt_special_legendre_polynomial_p(const clt_tensor *x, const clt_tensor *n,
                                                     clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_t_scalar(const clt_tensor *x, double n,
                                                             clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_u_scalar(const clt_tensor *x, double n,
                                                             clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_v_scalar(const clt_tensor *x, double n,
                                                             clt_tensor **out);
CLT_API clt_status clt_special_chebyshev_polynomial_w_scalar(const clt_tensor *x, double n,
                                                             clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_t_scalar(const clt_tensor *x,
                                                                     double n,
                                                                     clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_u_scalar(const clt_tensor *x,
                                                                     double n,
                                                                     clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_v_scalar(const clt_tensor *x,
                                                                     double n,
                                                                     clt_tensor **out);
CLT_API clt_status clt_special_shifted_chebyshev_polynomial_w_scalar(const clt_tensor *x,
                                                                     double n,
                                                                     clt_tensor **out);
CLT_API clt_status clt_special_hermite_polynomial_h_scalar(const clt_tensor *x, double n,
                                                           clt_tensor **out);
CLT_API clt_status clt_special_hermite_polynomial_he_scalar(const clt_tensor *x, double n,
                                                            clt_tensor **out);
CLT_API clt_status clt_special_laguerre_polynomial_l_scalar(const clt_tensor *x, double n,
                                                            clt_tensor **out);
CLT_API clt_status clt_special_legendre_polynomial_p_scalar(const clt_tensor *x, double n,
                                                            clt_tensor **out);

#ifdef __cplusplus
}
#endif

#endif
