/* grad_special.c: the public special functions and the rest of torch's
 * pointwise math (ops.h: clt_lgamma ... clt_equal), each with its backward
 * formula (PyTorch's) beside it; forwards in src/ops/elementwise.c. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* ---- one input, one gradient kernel ------------------------------------------- */

/* The gradient kernel of cl/elementwise.cl named n's grad_fn_kernel over
 * the saved input (or output), with n->s[0] as its scalar where it has one
 * (polygamma's n, mvlgamma's p). */
static const char *const special_kernels[] = {
    "lgamma_bw", "digamma_bw", "i0_bw",    "i0e_bw",   "i1_bw",       "i1e_bw",  "ndtr_bw",
    "ndtri_bw",  "log_ndtr_bw", "sinc_bw", "entr_bw",  "polygamma_bw", "mvlgamma_bw"};
enum {
    K_LGAMMA, K_DIGAMMA, K_I0, K_I0E, K_I1, K_I1E, K_NDTR, K_NDTRI, K_LOG_NDTR, K_SINC, K_ENTR,
    K_POLYGAMMA, K_MVLGAMMA
};

/* torch's i1_backward and i1e_backward (i1e: e 1), recorded: with s = x
 * where |x| > eps, eps elsewhere (the dtype's), i0(s) - i1(x) / s (i1e:
 * i0e(s) - i1e(x) (sgn(s) + 1 / s)), and 1/2 where |x| <= eps or x is
 * NaN. */
static clt_status bessel1_factor(const clt_tensor *x, int e, clt_tensor **f)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    double eps = x->dtype == CLT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
    clt_tensor *ax = NULL, *big = NULL, *ce = NULL, *half = NULL, *s = NULL, *i0 = NULL,
               *r = NULL, *t = NULL, *u = NULL, *v = NULL, *d = NULL;
    CLT__TRY(clt__abs_in(fn, x, &ax));
    CLT__TRY(clt__gt_scalar_in(fn, ax, eps, &big));
    CLT__TRY(clt__full(x->dev, x->dtype, 0, NULL, eps, &ce));
    CLT__TRY(clt__full(x->dev, x->dtype, 0, NULL, 0.5, &half));
    CLT__TRY(clt_where(big, x, ce, &s));
    CLT__TRY(e ? clt_special_i0e(s, &i0) : clt_special_i0(s, &i0));
    CLT__TRY(e ? clt_special_i1e(x, &r) : clt_special_i1(x, &r));
    CLT__TRY(clt__reciprocal_rec(fn, s, &t));
    if (e) {
        CLT__TRY(clt__sign_rec(fn, s, &u));
        CLT__TRY(clt__add_rec(fn, u, t, &v));
        clt_tensor_free(t);
        t = v;
        v = NULL;
    }
    CLT__TRY(clt__mul_rec(fn, r, t, &v));
    CLT__TRY(clt__sub_rec(fn, i0, v, &d));
    CLT__TRY(clt_where(big, d, half, f));
done:;
    clt_tensor *all[] = {ax, big, ce, half, s, i0, r, t, u, v, d};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

/* torch's sinc_backward, recorded: g ((pi x) cos(pi x) - sin(pi x)) /
 * (pi x^2), 0 where pi x^2 is 0.  Each pi x is its own product, as there:
 * the second derivative at a tiny x is the difference of large terms,
 * which the order of their sum decides (torch's 0 there). */
static clt_status sinc_twice(const clt_tensor *x, const clt_tensor *g, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *sq = NULL, *psq = NULL, *px[3] = {NULL, NULL, NULL}, *c = NULL, *t = NULL,
               *sn = NULL, *num = NULL, *q = NULL, *gq = NULL, *z = NULL;
    CLT__TRY(clt__mul_rec(fn, x, x, &sq));
    CLT__TRY(clt__mul_scalar_rec(fn, sq, M_PI, &psq));
    for (int k = 0; k < 3; k++)
        CLT__TRY(clt__mul_scalar_rec(fn, x, M_PI, &px[k]));
    CLT__TRY(clt__cos_rec(fn, px[1], &c));
    CLT__TRY(clt__mul_rec(fn, px[0], c, &t));
    CLT__TRY(clt__sin_rec(fn, px[2], &sn));
    CLT__TRY(clt__sub_rec(fn, t, sn, &num));
    CLT__TRY(clt__div_rec(fn, num, psq, &q));
    CLT__TRY(clt__mul_rec(fn, g, q, &gq));
    CLT__TRY(clt__eq_scalar_in(fn, psq, 0.0, &z));
    CLT__TRY(clt__zero_where(z, gq, out));
done:;
    clt_tensor *all[] = {sq, psq, px[0], px[1], px[2], c, t, sn, num, q, gq, z};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

/* The kernels' formulas as recorded ops (PyTorch's derivatives.yaml), for
 * a pass that creates a graph (clt__twice): g times the factor f, of x the
 * saved input (the output for ndtri). */
static clt_status special_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *x = S(0);
    clt_status st = CLT_OK;
    clt_tensor *f = NULL, *t = NULL, *u = NULL, *v = NULL, *w = NULL;
    switch (n->i[0]) {
    case K_LGAMMA: /* digamma(x) */
        CLT__TRY(clt_digamma(x, &f));
        break;
    case K_DIGAMMA: /* polygamma(1, x), polygamma(k)'s polygamma(k + 1, x) */
    case K_POLYGAMMA:
        CLT__TRY(clt_polygamma(n->i[0] == K_DIGAMMA ? 1 : (int64_t)n->s[0] + 1, x, &f));
        break;
    case K_I0: /* i1(x) */
        CLT__TRY(clt_special_i1(x, &f));
        break;
    case K_I0E: /* i1e(x) - sgn(x) i0e(x) */
        CLT__TRY(clt_special_i1e(x, &t));
        CLT__TRY(clt__sign_rec(fn, x, &u));
        CLT__TRY(clt_special_i0e(x, &v));
        CLT__TRY(clt__mul_rec(fn, u, v, &w));
        CLT__TRY(clt__sub_rec(fn, t, w, &f));
        break;
    case K_I1:
    case K_I1E:
        CLT__TRY(bessel1_factor(x, n->i[0] == K_I1E, &f));
        break;
    case K_NDTR: /* exp(-x^2 / 2) / sqrt(2 pi), ndtri's sqrt(2 pi) exp(y^2 / 2) */
    case K_NDTRI:
        CLT__TRY(clt__mul_rec(fn, x, x, &t));
        CLT__TRY(clt__mul_scalar_rec(fn, t, n->i[0] == K_NDTR ? -0.5 : 0.5, &u));
        CLT__TRY(clt__exp_rec(fn, u, &v));
        CLT__TRY(clt__mul_scalar_rec(fn, v,
                                     n->i[0] == K_NDTR ? 0.39894228040143267794
                                                       : 2.50662827463100050242,
                                     &f));
        break;
    case K_LOG_NDTR: /* exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi) */
        CLT__TRY(clt_special_log_ndtr(x, &t));
        CLT__TRY(clt__mul_rec(fn, x, x, &u));
        CLT__TRY(clt__mul_scalar_rec(fn, u, 0.5, &v));
        clt_tensor_free(u);
        u = NULL;
        CLT__TRY(clt__add_rec(fn, t, v, &u));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__neg_rec(fn, u, &t));
        clt_tensor_free(v);
        v = NULL;
        CLT__TRY(clt__exp_rec(fn, t, &v));
        CLT__TRY(clt__mul_scalar_rec(fn, v, 0.39894228040143267794, &f));
        break;
    case K_SINC:
        CLT__TRY(sinc_twice(x, g, &gin[0]));
        goto done;
    case K_ENTR: /* -(1 + log x) */
        CLT__TRY(clt__log_rec(fn, x, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__neg_rec(fn, u, &f));
        break;
    case K_MVLGAMMA: /* the sum of digamma(x - j / 2), j = 0 ... p - 1 */
        for (int64_t j = 0; j < (int64_t)n->s[0]; j++) {
            CLT__TRY(clt__sub_scalar_rec(fn, x, 0.5 * (double)j, &t));
            CLT__TRY(clt_digamma(t, &u));
            if (f) {
                CLT__TRY(clt__add_rec(fn, f, u, &v));
                clt_tensor_free(f);
                clt_tensor_free(u);
                f = v;
                v = u = NULL;
            } else {
                f = u;
                u = NULL;
            }
            clt_tensor_free(t);
            t = NULL;
        }
        break;
    default:
        CLT__TRY(clt__error(CLT_ERR_INTERNAL, "%s: no recorded formula for %s", fn, n->name));
    }
    CLT__TRY(clt__mul_rec(fn, g, f, &gin[0]));
done:
    clt_tensor_free(f);
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(v);
    clt_tensor_free(w);
    return st;
}

static clt_status bw_special(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->twice && clt__creating_graph())
        return special_twice(n, g, gin);
    double sc[3] = {n->s[0], 0, 0};
    const char *k = special_kernels[n->i[0]];
    if (n->i[0] == K_POLYGAMMA || n->i[0] == K_MVLGAMMA)
        return clt__grad_kernel_s(k, g, S(0), 3, sc, &gin[0]);
    return clt__grad_kernel(k, g, S(0), &gin[0]);
}

/* Records op's node over a (saving a, or the output when save_out), with
 * its kernel and scalar. */
static clt_status special_rec(clt_status st, clt_tensor **out, const char *name, int kernel,
                              bool save_out, double scalar, const clt_tensor *a)
{
    if (st != CLT_OK)
        return st;
    const clt_tensor *sv = save_out ? *out : a;
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw_special, 1, &a, 1, &sv, &n);
    if (n) {
        n->i[0] = kernel;
        n->s[0] = scalar;
    }
    clt__twice(n); /* special_twice */
    return st;
}

#define DEF_SPECIAL(fname, impl, name, kernel, save_out)                               \
    clt_status clt_##fname(const clt_tensor *a, clt_tensor **out)                      \
    {                                                                                  \
        return special_rec(clt__##impl##_in("clt_" #fname, a, out), out, name, kernel, \
                           save_out, 0, a);                                            \
    }

DEF_SPECIAL(lgamma, lgamma, "LgammaBackward0", K_LGAMMA, false)
DEF_SPECIAL(digamma, digamma, "DigammaBackward0", K_DIGAMMA, false)
DEF_SPECIAL(special_i0, i0, "I0Backward0", K_I0, false)
DEF_SPECIAL(special_i0e, i0e, "SpecialI0EBackward0", K_I0E, false)
DEF_SPECIAL(special_i1, i1, "SpecialI1Backward0", K_I1, false)
DEF_SPECIAL(special_i1e, i1e, "SpecialI1EBackward0", K_I1E, false)
/* PyTorch 1.13 composes special_ndtr, whose last node is a MulBackward1. */
DEF_SPECIAL(special_ndtr, ndtr, "MulBackward1", K_NDTR, false)
DEF_SPECIAL(special_ndtri, ndtri, "SpecialNdtriBackward0", K_NDTRI, true)
DEF_SPECIAL(special_log_ndtr, log_ndtr, "SpecialLogNdtrBackward0", K_LOG_NDTR, false)
DEF_SPECIAL(sinc, sinc, "SincBackward0", K_SINC, false)
DEF_SPECIAL(special_entr, entr, "SpecialEntrBackward0", K_ENTR, false)

clt_status clt_polygamma(int64_t n, const clt_tensor *a, clt_tensor **out)
{
    return special_rec(clt__polygamma_in("clt_polygamma", n, a, out), out, "PolygammaBackward0",
                       K_POLYGAMMA, false, (double)n, a);
}

clt_status clt_mvlgamma(const clt_tensor *a, int64_t p, clt_tensor **out)
{
    return special_rec(clt__mvlgamma_in("clt_mvlgamma", a, p, out), out, "MvlgammaBackward0",
                       K_MVLGAMMA, false, (double)p, a);
}

/* ---- two inputs ---------------------------------------------------------------- */

/* saved: a, b.  xlog1py, PyTorch's formulas: xlog1py(g, b) with 0 where
 * a == 0 and b <= -1, for a; g * a / (b + 1) for b; recorded in a pass
 * that creates a graph (clt__twice). */
static clt_status bw_xlog1py(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *az = NULL, *bn = NULL, *mask = NULL, *b1 = NULL;
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__creating_graph() ? clt_special_xlog1py(g, S(1), &t) /* recorded */
                                       : clt__xlog1py_in(fn, g, S(1), &t));
        CLT__TRY(clt__eq_scalar_in(fn, S(0), 0.0, &az));
        CLT__TRY(clt__le_scalar_in(fn, S(1), -1.0, &bn));
        CLT__TRY(clt__logical_and_in(fn, az, bn, &mask));
        CLT__TRY(clt__zero_where(mask, t, &gin[0]));
        clt_tensor_free(t);
        t = NULL;
    }
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__mul_rec(fn, g, S(0), &t));
        CLT__TRY(clt__add_scalar_rec(fn, S(1), 1.0, &b1));
        CLT__TRY(clt__div_rec(fn, t, b1, &gin[1]));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(az);
    clt_tensor_free(bn);
    clt_tensor_free(mask);
    clt_tensor_free(b1);
    return st;
}

/* saved: a, b.  logaddexp: g / (1 + exp(b - a)) for a and g / (1 +
 * exp(a - b)) for b; logaddexp2 the same with 2^ (n->i[0] 1).  One kernel
 * each, or PyTorch's formula in recorded ops in a pass that creates a
 * graph (clt__twice). */
static clt_status bw_logaddexp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *d = NULL, *e = NULL, *e1 = NULL;
    const char *k = n->i[0] ? "logaddexp2_bw" : "logaddexp_bw";
    for (int i = 0; i < 2; i++) {
        if (!CLT__NEED(n, i))
            continue;
        CLT__TRY(clt__sub_rec(fn, S(1 - i), S(i), &d));
        if (clt__creating_graph()) {
            CLT__TRY(n->i[0] ? clt__rpow_scalar_rec(fn, d, 2.0, &e) : clt__exp_rec(fn, d, &e));
            CLT__TRY(clt__add_scalar_rec(fn, e, 1.0, &e1));
            CLT__TRY(clt__div_rec(fn, g, e1, &gin[i]));
        } else {
            CLT__TRY(clt__grad_kernel(k, g, d, &gin[i]));
        }
        clt_tensor_free(d);
        clt_tensor_free(e);
        clt_tensor_free(e1);
        d = e = e1 = NULL;
    }
done:
    clt_tensor_free(d);
    clt_tensor_free(e);
    clt_tensor_free(e1);
    return st;
}

/* nextafter and heaviside have no derivative in PyTorch 1.13: their
 * results require grad, and backward through them fails. */
static clt_status bw_not_implemented(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "clt_backward: the derivative for %s is not implemented, as in PyTorch",
                      n->i[0] ? "clt_heaviside" : "clt_nextafter");
}

typedef clt_status (*binary_fn)(const char *, const clt_tensor *, const clt_tensor *,
                                clt_tensor **);

static clt_status binary_rec(binary_fn fwd, const char *fn, const char *name,
                             clt__backward_fn bw, int tag, const clt_tensor *a,
                             const clt_tensor *b, clt_tensor **out)
{
    clt_status st = fwd(fn, a, b, out);
    if (st != CLT_OK || bw == NULL)
        return st;
    const clt_tensor *in[2] = {a, b};
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, 2, in, 2, in, &n);
    if (n)
        n->i[0] = tag;
    if (bw == bw_xlog1py || bw == bw_logaddexp)
        clt__twice(n);
    return st;
}

#define DEF_BINARY(fname, impl, name, bw, tag)                                           \
    clt_status clt_##fname(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)  \
    {                                                                                   \
        return binary_rec(clt__##impl##_in, "clt_" #fname, name, bw, tag, a, b, out);   \
    }

DEF_BINARY(special_xlog1py, xlog1py, "SpecialXlog1PyBackward0", bw_xlog1py, 0)
DEF_BINARY(logaddexp, logaddexp, "LogaddexpBackward0", bw_logaddexp, 0)
DEF_BINARY(logaddexp2, logaddexp2, "Logaddexp2Backward0", bw_logaddexp, 1)
DEF_BINARY(nextafter, nextafter, "NextafterBackward0", bw_not_implemented, 0)
DEF_BINARY(heaviside, heaviside, "NotImplemented", bw_not_implemented, 1)
DEF_BINARY(gcd, gcd, NULL, NULL, 0)
DEF_BINARY(lcm, lcm, NULL, NULL, 0)
DEF_BINARY(bitwise_and, bitwise_and, NULL, NULL, 0)
DEF_BINARY(bitwise_or, bitwise_or, NULL, NULL, 0)
DEF_BINARY(bitwise_xor, bitwise_xor, NULL, NULL, 0)
DEF_BINARY(bitwise_left_shift, bitwise_left_shift, NULL, NULL, 0)
DEF_BINARY(bitwise_right_shift, bitwise_right_shift, NULL, NULL, 0)

clt_status clt_bitwise_not(const clt_tensor *a, clt_tensor **out)
{
    return clt__bitwise_not_in("clt_bitwise_not", a, out);
}

clt_status clt_signbit(const clt_tensor *a, clt_tensor **out)
{
    return clt__signbit_in("clt_signbit", a, out);
}

/* ---- composed as PyTorch composes them ----------------------------------------- */

/* torch.ldexp(a, b) is a * pow(2.0, b): its grad_fn is the MulBackward0 of
 * that product (and b's gradient flows through the PowBackward).  The 2.0
 * is a Python float there: an integer b gives float32 powers, so b is
 * converted first. */
clt_status clt_ldexp(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_ldexp";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_tensor *p = NULL, *bf = NULL;
    clt_status st = clt__dtype_is_float(b->dtype) ? CLT_OK : clt_to_dtype(b, CLT_FLOAT32, &bf);
    if (st == CLT_OK)
        st = clt_rpow_scalar(bf ? bf : b, 2.0, &p);
    if (st == CLT_OK)
        st = clt_mul(a, p, out);
    clt_tensor_free(p);
    clt_tensor_free(bf);
    return st == CLT_OK ? st : clt__error_in(st, fn);
}

/* torch.float_power(a, b): both converted to float64, then pow (its
 * grad_fn PowBackward1). */
clt_status clt_float_power(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_float_power";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_tensor *a64 = NULL, *b64 = NULL;
    clt_status st = clt_to_dtype(a, CLT_FLOAT64, &a64);
    if (st == CLT_OK)
        st = clt_to_dtype(b, CLT_FLOAT64, &b64);
    if (st == CLT_OK)
        st = clt_pow(a64, b64, out);
    clt_tensor_free(a64);
    clt_tensor_free(b64);
    return st == CLT_OK ? st : clt__error_in(st, fn);
}

/* frexp: saved the exponent; the mantissa's gradient is g / 2^exponent
 * (FrexpBackward0; the exponent is an integer tensor, without one), in a
 * pass that creates a graph g recorded times the constant 1 / 2^exponent
 * (clt__twice). */
static clt_status bw_frexp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (!clt__creating_graph())
        return clt__grad_kernel("frexp_bw", g, S(0), &gin[0]);
    clt_tensor *one = NULL, *f = NULL;
    clt_status st = clt__full(g->dev, g->dtype, 0, NULL, 1.0, &one);
    if (st == CLT_OK)
        st = clt__grad_kernel("frexp_bw", one, S(0), &f);
    if (st == CLT_OK)
        st = clt__mul_rec("clt_backward", g, f, &gin[0]);
    clt_tensor_free(one);
    clt_tensor_free(f);
    return st;
}

clt_status clt_frexp(const clt_tensor *a, clt_tensor **mantissa, clt_tensor **exponent)
{
    clt_status st = clt__frexp_in("clt_frexp", a, mantissa, exponent);
    if (st != CLT_OK)
        return st;
    const clt_tensor *sv = *exponent;
    clt__node *n = NULL;
    st = clt__record(st, mantissa, "FrexpBackward0", bw_frexp, 1, &a, 1, &sv, &n);
    clt__twice(n);
    if (st != CLT_OK) {
        clt_tensor_free(*exponent);
        *exponent = NULL;
    }
    return st;
}

/* ---- comparison helpers ---------------------------------------------------------- */

clt_status clt_isclose(const clt_tensor *a, const clt_tensor *b, double rtol, double atol,
                       int equal_nan, clt_tensor **out)
{
    return clt__isclose_in("clt_isclose", a, b, rtol, atol, equal_nan != 0, out);
}

/* Whether every element of the bool tensor t is true, read back into
 * *out (t may be NULL: false). */
static clt_status all_true(const clt_tensor *t, int *out, const char *fn)
{
    clt_tensor *r = NULL;
    unsigned char v = 0;
    clt_status st = clt__all(t, &r, fn);
    if (st == CLT_OK)
        st = clt_tensor_read(r, &v, 1);
    clt_tensor_free(r);
    *out = st == CLT_OK && v != 0;
    return st;
}

clt_status clt_allclose(const clt_tensor *a, const clt_tensor *b, double rtol, double atol,
                        int equal_nan, int *out)
{
    static const char fn[] = "clt_allclose";
    CLT__REQUIRE_ARG(out, fn);
    *out = 0;
    clt_tensor *c = NULL;
    clt_status st = clt__isclose_in(fn, a, b, rtol, atol, equal_nan != 0, &c);
    if (st == CLT_OK)
        st = all_true(c, out, fn);
    clt_tensor_free(c);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_equal(const clt_tensor *a, const clt_tensor *b, int *out)
{
    static const char fn[] = "clt_equal";
    CLT__REQUIRE_ARG(out, fn);
    *out = 0;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim != b->ndim ||
        memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) != 0)
        return clt__ok();
    clt_tensor *e = NULL;
    st = clt__eq_in(fn, a, b, &e);
    if (st == CLT_OK)
        st = all_true(e, out, fn);
    clt_tensor_free(e);
    return st == CLT_OK ? clt__ok() : st;
}
