/* grad_special2.c: the public functions of cltensor/special.h over the
 * forwards of src/ops/special2.c, with PyTorch 1.13's autograd: gradients
 * for gammainc/gammaincc (x only) and erfcx, a failing backward for zeta
 * and for gammainc's a, and a refusal for the functions PyTorch has no
 * derivative for. */
#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* ---- gammainc, gammaincc ------------------------------------------------------ */

/* saved: a, x; n->i[0] 1 for gammaincc.  a has no derivative in PyTorch;
 * x gets +-g x^(a-1) e^-x / Gamma(a). */
static clt_status bw_igamma(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *d = NULL, *t = NULL;
    if (CLT__NEED(n, 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_backward: the derivative for 'igamma: input' (%s's a) is not "
                          "implemented, as in PyTorch; detach a",
                          n->i[0] ? "clt_special_gammaincc" : "clt_special_gammainc");
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__special2_in("clt_backward", CLT__SP2_B_IGAMMA_DX, true, S(0), S(1), &d));
        if (n->i[0]) {
            CLT__TRY(clt__mul_in("clt_backward", g, d, &t));
            CLT__TRY(clt__neg_in("clt_backward", t, &gin[1]));
        } else {
            CLT__TRY(clt__mul_in("clt_backward", g, d, &gin[1]));
        }
    }
done:
    clt_tensor_free(d);
    clt_tensor_free(t);
    return st;
}

static clt_status igamma_rec(const char *fn, int op, const char *name, const clt_tensor *a,
                             const clt_tensor *x, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = clt__special2_in(fn, op, true, a, x, out);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {a, x};
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw_igamma, 2, in, 2, in, &n);
    if (n)
        n->i[0] = op == CLT__SP2_B_IGAMMAC;
    return st;
}

clt_status clt_special_gammainc(const clt_tensor *a, const clt_tensor *x, clt_tensor **out)
{
    return igamma_rec("clt_special_gammainc", CLT__SP2_B_IGAMMA, "IgammaBackward0", a, x, out);
}

clt_status clt_special_gammaincc(const clt_tensor *a, const clt_tensor *x, clt_tensor **out)
{
    return igamma_rec("clt_special_gammaincc", CLT__SP2_B_IGAMMAC, "IgammacBackward0", a, x,
                      out);
}

/* ---- erfcx ---------------------------------------------------------------------- */

/* saved: x.  g (2 x erfcx(x) - 2/sqrt(pi)). */
static clt_status bw_erfcx(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *d = NULL;
    CLT__TRY(clt__special2_in("clt_backward", CLT__SP2_U_ERFCX_DX, false, S(0), NULL, &d));
    CLT__TRY(clt__mul_in("clt_backward", g, d, &gin[0]));
done:
    clt_tensor_free(d);
    return st;
}

clt_status clt_special_erfcx(const clt_tensor *x, clt_tensor **out)
{
    clt_status st = clt__special2_in("clt_special_erfcx", CLT__SP2_U_ERFCX, false, x, NULL, out);
    if (st != CLT_OK)
        return st;
    return clt__record(st, out, "SpecialErfcxBackward0", bw_erfcx, 1, &x, 1, &x, NULL);
}

/* ---- zeta ------------------------------------------------------------------------ */

static clt_status bw_zeta(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "clt_backward: the derivative for 'zeta' (clt_special_zeta) is not "
                      "implemented, as in PyTorch");
}

clt_status clt_special_zeta(const clt_tensor *x, const clt_tensor *q, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_special_zeta");
    *out = NULL;
    CLT__REQUIRE_ARG(q, "clt_special_zeta");
    clt_status st = clt__special2_in("clt_special_zeta", CLT__SP2_B_ZETA, false, x, q, out);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {x, q};
    return clt__record(st, out, "SpecialZetaBackward0", bw_zeta, 2, in, 0, NULL, NULL);
}

/* ---- no derivative in PyTorch 1.13 ------------------------------------------------- */

/* The functions PyTorch 1.13 defines no derivative for refuse an operand
 * that requires grad (in grad mode) rather than hand back a result cut
 * from the graph. */
static clt_status no_grad_check(const char *fn, const char *name, const clt_tensor *a,
                                const clt_tensor *b, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    const clt_tensor *in[2];
    int k = 0;
    if (a)
        in[k++] = a;
    if (b)
        in[k++] = b;
    if (k > 0 && clt__grad_needed(k, in))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the derivative for '%s' is not implemented, as in PyTorch 1.13; "
                          "call it on a detached tensor or with grad mode off",
                          fn, name);
    return CLT_OK;
}

static clt_status no_grad_unary(const char *fn, const char *name, int op, const clt_tensor *x,
                                clt_tensor **out)
{
    clt_status st = no_grad_check(fn, name, x, NULL, out);
    return st != CLT_OK ? st : clt__special2_in(fn, op, false, x, NULL, out);
}

#define DEF_UN(name, op)                                                             \
    clt_status clt_special_##name(const clt_tensor *x, clt_tensor **out)             \
    {                                                                                \
        return no_grad_unary("clt_special_" #name, #name, op, x, out);               \
    }

DEF_UN(bessel_j0, CLT__SP2_U_J0)
DEF_UN(bessel_j1, CLT__SP2_U_J1)
DEF_UN(bessel_y0, CLT__SP2_U_Y0)
DEF_UN(bessel_y1, CLT__SP2_U_Y1)
DEF_UN(modified_bessel_i0, CLT__SP2_U_I0)
DEF_UN(modified_bessel_i1, CLT__SP2_U_I1)
DEF_UN(modified_bessel_k0, CLT__SP2_U_K0)
DEF_UN(modified_bessel_k1, CLT__SP2_U_K1)
DEF_UN(scaled_modified_bessel_k0, CLT__SP2_U_K0E)
DEF_UN(scaled_modified_bessel_k1, CLT__SP2_U_K1E)
DEF_UN(spherical_bessel_j0, CLT__SP2_U_SPHERICAL_J0)
DEF_UN(airy_ai, CLT__SP2_U_AIRY_AI)

static clt_status poly(const char *fn, const char *name, int op, const clt_tensor *x,
                       const clt_tensor *n, clt_tensor **out)
{
    clt_status st = no_grad_check(fn, name, x, n, out);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(n, fn);
    return clt__special2_in(fn, op, false, x, n, out);
}

/* n as a 0-d tensor: float64 beside a float64 x, float32 otherwise, so
 * that x's dtype wins the promotion as against a Python number. */
static clt_status poly_scalar(const char *fn, const char *name, int op, const clt_tensor *x,
                              double n, clt_tensor **out)
{
    clt_status st = no_grad_check(fn, name, x, NULL, out);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(x, fn);
    clt_tensor *tn = NULL;
    /* n as torch's wrapped number: in x's floating dtype (float16 and
     * bfloat16 too), float32 for integer x */
    clt_dtype nt = x->dtype == CLT_FLOAT64 || clt__dtype_is_half(x->dtype) ? x->dtype : CLT_FLOAT32;
    st = clt__full(x->dev, nt, 0, NULL, n, &tn);
    if (st == CLT_OK)
        st = clt__special2_in(fn, op, false, x, tn, out);
    clt_tensor_free(tn);
    return st == CLT_OK ? st : clt__error_in(st, fn);
}

#define DEF_POLY(name, op)                                                                \
    clt_status clt_special_##name(const clt_tensor *x, const clt_tensor *n, clt_tensor **out) \
    {                                                                                     \
        return poly("clt_special_" #name, #name, op, x, n, out);                          \
    }                                                                                     \
    clt_status clt_special_##name##_scalar(const clt_tensor *x, double n, clt_tensor **out) \
    {                                                                                     \
        return poly_scalar("clt_special_" #name "_scalar", #name, op, x, n, out);         \
    }

DEF_POLY(chebyshev_polynomial_t, CLT__SP2_B_CHEB_T)
DEF_POLY(chebyshev_polynomial_u, CLT__SP2_B_CHEB_U)
DEF_POLY(chebyshev_polynomial_v, CLT__SP2_B_CHEB_V)
DEF_POLY(chebyshev_polynomial_w, CLT__SP2_B_CHEB_W)
DEF_POLY(shifted_chebyshev_polynomial_t, CLT__SP2_B_SCHEB_T)
DEF_POLY(shifted_chebyshev_polynomial_u, CLT__SP2_B_SCHEB_U)
DEF_POLY(shifted_chebyshev_polynomial_v, CLT__SP2_B_SCHEB_V)
DEF_POLY(shifted_chebyshev_polynomial_w, CLT__SP2_B_SCHEB_W)
DEF_POLY(hermite_polynomial_h, CLT__SP2_B_HERMITE_H)
DEF_POLY(hermite_polynomial_he, CLT__SP2_B_HERMITE_HE)
DEF_POLY(laguerre_polynomial_l, CLT__SP2_B_LAGUERRE_L)
DEF_POLY(legendre_polynomial_p, CLT__SP2_B_LEGENDRE_P)
