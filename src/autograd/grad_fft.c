/* grad_fft.c: the public complex and torch.fft functions with their
 * gradients, as torch computes them (conjugate Wirtinger calculus: the
 * gradient of a real loss L with respect to a complex z is dL/dz*). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

#define FN "clt_backward"

/* ---- helpers of the formulas ------------------------------------------------ */

/* Every formula here computes with recording forms (the _rec helpers
 * below, clt__complex_binary_rec and the like), so that its nodes are
 * differentiable twice (clt__twice): in a pass without create_graph grad
 * mode is off and nothing records. */
static clt_status rec2(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                       int nin, const clt_tensor *const *in, int nsaved,
                       const clt_tensor *const *saved, clt__node **node)
{
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, nin, in, nsaved, saved, &n);
    clt__twice(n);
    if (node)
        *node = n;
    return st;
}

static clt_status bw_view_as_real(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_view_as_complex(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_real(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_imag(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_conj(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_make_complex(clt__node *n, const clt_tensor *g, clt_tensor **gin);

static clt_status view_as_real_rec(const char *fn, const clt_tensor *t, clt_tensor **out)
{
    return rec2(clt__view_as_real(t, out, fn), out, "ViewAsRealBackward0", bw_view_as_real, 1,
                &t, 0, NULL, NULL);
}

static clt_status view_as_complex_rec(const char *fn, const clt_tensor *t, clt_tensor **out)
{
    return rec2(clt__view_as_complex(t, out, fn), out, "ViewAsComplexBackward0",
                bw_view_as_complex, 1, &t, 0, NULL, NULL);
}

/* real (part 0) or imag (part 1) of a complex t. */
static clt_status part_rec(const char *fn, const clt_tensor *t, int part, clt_tensor **out)
{
    return rec2(clt__real_imag(t, part, out, fn), out, part ? "ImagBackward0" : "RealBackward0",
                part ? bw_imag : bw_real, 1, &t, 0, NULL, NULL);
}

/* conj(t), or t itself (a new handle with t's history) when t is real. */
static clt_status conj_rec(const char *fn, const clt_tensor *t, clt_tensor **out)
{
    if (t && !clt__dtype_is_complex(t->dtype))
        return clt__alias_history(t, out);
    return rec2(clt__complex_unary(2, t, out, fn), out, "ConjBackward0", bw_conj, 1, &t, 0, NULL,
                NULL);
}

static clt_status make_rec(const char *fn, const clt_tensor *re, const clt_tensor *im,
                           clt_tensor **out)
{
    const clt_tensor *in[2] = {re, im};
    return rec2(clt__complex_make(1, re, im, out, fn), out, "ComplexBackward0", bw_make_complex,
                2, in, 0, NULL, NULL);
}

static clt_status conj_of(const clt_tensor *t, clt_tensor **out)
{
    return conj_rec(FN, t, out);
}

/* t * (re + i im), a complex tensor (t real or complex). */
static clt_status times_const(const clt_tensor *t, double re, double im, clt_tensor **out)
{
    *out = NULL;
    clt_dtype ct = clt__complex_of(clt__dtype_is_complex(t->dtype)
                                       ? clt__complex_part_dtype(t->dtype)
                                       : t->dtype);
    clt_tensor *c = NULL;
    clt_status st;
    if (ct == CLT_COMPLEX128) {
        double v[2] = {re, im};
        st = clt__tensor_from_host_in(FN, t->dev, ct, 0, NULL, v, &c);
    } else {
        float v[2] = {(float)re, (float)im};
        st = clt__tensor_from_host_in(FN, t->dev, ct, 0, NULL, v, &c);
    }
    if (st == CLT_OK)
        st = clt__complex_binary_rec(2, t, c, out, FN);
    clt_tensor_free(c);
    return st;
}

/* z / |z|^p with 0 where z is 0 (p 1: torch's sgn, p 2: for angle). */
static clt_status over_abs(const clt_tensor *z, int p, clt_tensor **out)
{
    *out = NULL;
    clt_tensor *a = NULL, *m = NULL, *a1 = NULL, *a2 = NULL;
    clt_status st;
    CLT__TRY(clt__complex_abs_rec(z, &a, FN));
    CLT__TRY(clt__eq_scalar_in(FN, a, 0.0, &m));
    CLT__TRY(clt__masked_fill_rec(FN, a, m, 1.0, &a1));
    if (p == 2)
        CLT__TRY(clt__mul_rec(FN, a1, a1, &a2));
    CLT__TRY(clt__complex_binary_rec(3, z, a2 ? a2 : a1, out, FN));
done:
    clt_tensor_free(a);
    clt_tensor_free(m);
    clt_tensor_free(a1);
    clt_tensor_free(a2);
    return st;
}

/* ---- complex values ------------------------------------------------------------ */

static clt_status bw_view_as_real(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    clt_tensor *c = NULL;
    clt_status st = clt_contiguous(g, &c);
    if (st == CLT_OK)
        st = view_as_complex_rec(FN, c, &gin[0]);
    clt_tensor_free(c);
    return st;
}

static clt_status bw_view_as_complex(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return view_as_real_rec(FN, g, &gin[0]);
}

/* real: the gradient goes to the real parts (the engine casts it to the
 * complex input); imag: to the imaginary ones, i g. */
static clt_status bw_real(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return clt__alias_grad(g, &gin[0]);
}

static clt_status bw_imag(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return times_const(g, 0.0, 1.0, &gin[0]);
}

static clt_status bw_conj(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return conj_of(g, &gin[0]);
}

/* complex(re, im): re takes real(g), im imag(g). */
static clt_status bw_make_complex(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    for (int k = 0; k < 2 && st == CLT_OK; k++)
        if (CLT__NEED(n, k))
            st = part_rec(FN, g, k, &gin[k]);
    return st;
}

/* polar(r, theta) = z, saved: z.  torch's polar_backward: r takes
 * real(conj(g) sgn(z)), theta real(conj(g) i z). */
static clt_status bw_polar(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *gc = NULL, *t = NULL, *u = NULL;
    CLT__TRY(conj_of(g, &gc));
    if (CLT__NEED(n, 0)) {
        CLT__TRY(over_abs(n->saved[0], 1, &t));
        CLT__TRY(clt__complex_binary_rec(2, gc, t, &u, FN));
        CLT__TRY(part_rec(FN, u, 0, &gin[0]));
        clt_tensor_free(t);
        clt_tensor_free(u);
        t = u = NULL;
    }
    if (CLT__NEED(n, 1)) {
        CLT__TRY(times_const(n->saved[0], 0.0, 1.0, &t));
        CLT__TRY(clt__complex_binary_rec(2, gc, t, &u, FN));
        CLT__TRY(part_rec(FN, u, 0, &gin[1]));
    }
done:
    clt_tensor_free(gc);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

/* abs: g sgn(z), 0 at 0 (saved: z). */
static clt_status bw_cabs(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *s = NULL;
    clt_status st = over_abs(n->saved[0], 1, &s);
    if (st == CLT_OK)
        st = clt__complex_binary_rec(2, g, s, &gin[0], FN);
    clt_tensor_free(s);
    return st;
}

/* angle: i g z / |z|^2, 0 at 0, for a complex z (saved); zeros for a
 * real one (piecewise constant), as torch's angle_backward. */
static clt_status bw_angle(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    if (!clt__dtype_is_complex(e->dtype))
        return clt__full(e->dev, e->dtype, e->ndim, e->shape, 0.0, &gin[0]);
    clt_tensor *s = NULL, *t = NULL;
    clt_status st = over_abs(n->saved[0], 2, &s);
    if (st == CLT_OK)
        st = clt__complex_binary_rec(2, g, s, &t, FN);
    if (st == CLT_OK)
        st = times_const(t, 0.0, 1.0, &gin[0]);
    clt_tensor_free(s);
    clt_tensor_free(t);
    return st;
}

clt_status clt__complex_binary_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *c = NULL, *t = NULL, *ga = NULL;
    switch (n->i[0]) {
    case 0:
    case 1:
        if (CLT__NEED(n, 0))
            CLT__TRY(clt__alias_grad(g, &gin[0]));
        if (CLT__NEED(n, 1))
            CLT__TRY(n->i[0] == 0 ? clt__alias_grad(g, &gin[1])
                                  : times_const(g, -1.0, 0.0, &gin[1]));
        break;
    case 2:
        for (int k = 0; k < 2; k++) {
            if (!CLT__NEED(n, k))
                continue;
            CLT__TRY(conj_of(n->saved[1 - k], &c));
            CLT__TRY(clt__complex_binary_rec(2, g, c, &gin[k], FN));
            clt_tensor_free(c);
            c = NULL;
        }
        break;
    default:
        CLT__TRY(conj_of(n->saved[n->i[0] == 3 ? 0 : 1], &c));
        CLT__TRY(clt__complex_binary_rec(3, g, c, &ga, FN));
        if (CLT__NEED(n, 1)) {
            /* -ga conj(out), or -ga conj(a) / conj(b) */
            clt_tensor_free(c);
            c = NULL;
            CLT__TRY(conj_of(n->saved[n->i[0] == 3 ? 1 : 0], &c));
            CLT__TRY(clt__complex_binary_rec(2, ga, c, &t, FN));
            if (n->i[0] == 4) {
                clt_tensor_free(c);
                c = NULL;
                clt_tensor *u = t;
                t = NULL;
                st = conj_of(n->saved[1], &c);
                if (st == CLT_OK)
                    st = clt__complex_binary_rec(3, u, c, &t, FN);
                clt_tensor_free(u);
                if (st != CLT_OK)
                    goto done;
            }
            CLT__TRY(times_const(t, -1.0, 0.0, &gin[1]));
        }
        if (CLT__NEED(n, 0)) {
            gin[0] = ga;
            ga = NULL;
        }
        break;
    }
done:
    clt_tensor_free(c);
    clt_tensor_free(t);
    clt_tensor_free(ga);
    return st;
}

static const char *const binary_names[4] = {"AddBackward0", "SubBackward0", "MulBackward0",
                                            "DivBackward0"};

clt_status clt__complex_binary_rec(int op, const clt_tensor *a, const clt_tensor *b,
                                   clt_tensor **out, const char *fn)
{
    const clt_tensor *in[2] = {a, b};
    clt_status st = clt__complex_binary(op, a, b, out, fn);
    const clt_tensor *sv[2] = {a, b};
    if (op == 3 && st == CLT_OK) {
        sv[0] = b;
        sv[1] = *out;
    }
    clt__node *n = NULL;
    st = rec2(st, out, binary_names[op], clt__complex_binary_grad, 2, in, op >= 2 ? 2 : 0, sv,
              &n);
    if (n)
        n->i[0] = op;
    return st;
}

clt_status clt__complex_abs_rec(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    return rec2(clt__complex_unary(0, a, out, fn), out, "AbsBackward0", bw_cabs, 1, &a, 1, &a,
                NULL);
}

/* ---- the elementary functions ------------------------------------------------- */

/* t + c for a real c, recorded. */
static clt_status plus_const(const clt_tensor *t, double c, clt_tensor **out)
{
    clt_tensor *k = NULL;
    clt_status st = clt__full(t->dev, clt__complex_part_dtype(t->dtype), 0, NULL, c, &k);
    if (st == CLT_OK)
        st = clt__complex_binary_rec(0, t, k, out, FN);
    clt_tensor_free(k);
    return st;
}

/* c0 + c2 t^2, recorded. */
static clt_status square_affine(const clt_tensor *t, double c0, double c2, clt_tensor **out)
{
    clt_tensor *t2 = NULL, *t3 = NULL;
    clt_status st;
    CLT__TRY(clt__complex_binary_rec(2, t, t, &t2, FN));
    CLT__TRY(times_const(t2, c2, 0.0, &t3));
    CLT__TRY(plus_const(t3, c0, out));
done:
    clt_tensor_free(t2);
    clt_tensor_free(t3);
    return st;
}

static const char *const math_names[CLT__CMATH_COUNT] = {
    "ExpBackward0",   "LogBackward0",   "SqrtBackward0",  "SinhBackward0",  "CoshBackward0",
    "TanhBackward0",  "SinBackward0",   "CosBackward0",   "TanBackward0",   "AsinhBackward0",
    "AsinBackward0",  "AcosBackward0",  "AcoshBackward0", "AtanhBackward0", "AtanBackward0",
    "Log2Backward0",  "Log10Backward0", "Log1PBackward0", "Expm1Backward0", "RsqrtBackward0",
    "SigmoidBackward0"};

/* Saved: z, out; i[0] the op.  torch's formulas (derivatives.yaml): g
 * conj(f'(z)), or g / conj(1 / f'(z)) where that is the simpler form; asin,
 * acos, asinh and acosh take rsqrt(+-(z^2 -+ 1)) as torch does (acosh's
 * rsqrt(z^2 - 1) is -f'(z) left of the imaginary axis, as torch's). */
static clt_status bw_cmath(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt_tensor *z = n->saved[0], *o = n->saved[1];
    clt_tensor *d = NULL, *t = NULL, *c = NULL;
    bool div = false;
    clt_status st = CLT_OK;
    switch (n->i[0]) {
    case CLT__CMATH_EXP:
        CLT__TRY(clt__alias_history(o, &d));
        break;
    case CLT__CMATH_LOG:
        CLT__TRY(clt__alias_history(z, &d));
        div = true;
        break;
    case CLT__CMATH_SQRT:
        CLT__TRY(times_const(o, 2.0, 0.0, &d));
        div = true;
        break;
    case CLT__CMATH_SINH:
    case CLT__CMATH_COSH:
        CLT__TRY(clt__complex_math_rec(n->i[0] == CLT__CMATH_SINH ? CLT__CMATH_COSH
                                                                  : CLT__CMATH_SINH,
                                       z, &d, FN));
        break;
    case CLT__CMATH_TANH:
        CLT__TRY(square_affine(o, 1.0, -1.0, &d));
        break;
    case CLT__CMATH_SIN:
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_COS, z, &d, FN));
        break;
    case CLT__CMATH_COS:
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_SIN, z, &t, FN));
        CLT__TRY(times_const(t, -1.0, 0.0, &d));
        break;
    case CLT__CMATH_TAN:
        CLT__TRY(square_affine(o, 1.0, 1.0, &d));
        break;
    case CLT__CMATH_ASINH:
    case CLT__CMATH_ASIN:
    case CLT__CMATH_ACOS:
    case CLT__CMATH_ACOSH: {
        int op = n->i[0];
        double c0 = op == CLT__CMATH_ASINH ? 1.0 : op == CLT__CMATH_ACOSH ? -1.0 : 1.0;
        double c2 = op == CLT__CMATH_ASIN || op == CLT__CMATH_ACOS ? -1.0 : 1.0;
        CLT__TRY(square_affine(z, c0, c2, &c));
        if (op == CLT__CMATH_ACOS) {
            CLT__TRY(clt__complex_math_rec(CLT__CMATH_RSQRT, c, &t, FN));
            CLT__TRY(times_const(t, -1.0, 0.0, &d));
        } else {
            CLT__TRY(clt__complex_math_rec(CLT__CMATH_RSQRT, c, &d, FN));
        }
        break;
    }
    case CLT__CMATH_ATANH:
    case CLT__CMATH_ATAN:
        CLT__TRY(square_affine(z, 1.0, n->i[0] == CLT__CMATH_ATANH ? -1.0 : 1.0, &d));
        div = true;
        break;
    case CLT__CMATH_LOG2:
    case CLT__CMATH_LOG10:
        CLT__TRY(times_const(z, n->i[0] == CLT__CMATH_LOG2 ? M_LN2 : M_LN10, 0.0, &d));
        div = true;
        break;
    case CLT__CMATH_LOG1P:
        CLT__TRY(plus_const(z, 1.0, &d));
        div = true;
        break;
    case CLT__CMATH_EXPM1:
        CLT__TRY(plus_const(o, 1.0, &d));
        break;
    case CLT__CMATH_RSQRT: /* -0.5 out^3 */
        CLT__TRY(clt__complex_binary_rec(2, o, o, &c, FN));
        CLT__TRY(clt__complex_binary_rec(2, c, o, &t, FN));
        CLT__TRY(times_const(t, -0.5, 0.0, &d));
        break;
    default: /* sigmoid: out (1 - out) */
        CLT__TRY(times_const(o, -1.0, 0.0, &t));
        CLT__TRY(plus_const(t, 1.0, &c));
        CLT__TRY(clt__complex_binary_rec(2, o, c, &d, FN));
        break;
    }
    clt_tensor_free(c);
    c = NULL;
    CLT__TRY(conj_of(d, &c));
    CLT__TRY(clt__complex_binary_rec(div ? 3 : 2, g, c, &gin[0], FN));
done:
    clt_tensor_free(d);
    clt_tensor_free(t);
    clt_tensor_free(c);
    return st;
}

clt_status clt__complex_math_rec(int op, const clt_tensor *a, clt_tensor **out, const char *fn)
{
    clt_status st = clt__complex_math(op, a, out, fn);
    const clt_tensor *sv[2] = {a, st == CLT_OK ? *out : NULL};
    clt__node *n = NULL;
    st = rec2(st, out, math_names[op], bw_cmath, 1, &a, 2, sv, &n);
    if (n)
        n->i[0] = op;
    return st;
}

/* zeros of the input's dtype and shape (pow(z, 0)). */
static clt_status bw_zero_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    const clt__edge *e = &n->in[0];
    return clt__full(e->dev, e->dtype, e->ndim, e->shape, 0.0, &gin[0]);
}

/* exp(b log a), a and b first made the result type's complex dtype (the
 * casts recorded). */
clt_status clt__complex_pow_rec(const clt_tensor *a, const clt_tensor *b, clt_tensor **out,
                                const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_tensor *ca = NULL, *l = NULL, *p = NULL;
    clt_dtype rt;
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    clt_result_type(a, b, &rt);
    if (a->dtype == CLT_FLOAT16 || b->dtype == CLT_FLOAT16)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: float16 with complex operands is not implemented (convert the "
                          "float16 operand first)",
                          fn);
    CLT__TRY(clt__check_dtype(a->dev, rt, fn));
    CLT__TRY(clt__to_dtype_rec(fn, a, rt, &ca));
    CLT__TRY(clt__complex_math_rec(CLT__CMATH_LOG, ca, &l, fn));
    CLT__TRY(clt__complex_binary_rec(2, b, l, &p, fn));
    CLT__TRY(clt__complex_math_rec(CLT__CMATH_EXP, p, out, fn));
done:
    clt_tensor_free(ca);
    clt_tensor_free(l);
    clt_tensor_free(p);
    return st == CLT_OK ? clt__ok() : st;
}

/* torch's pow(z, s) of a complex z: 1 for s 0 (everywhere), z for 1,
 * sqrt, rsqrt, reciprocal for 0.5, -0.5, -1, products for 2, 3 and -2,
 * exp(s log z) otherwise; reversed: s ** z = exp(z log s). */
clt_status clt__complex_pow_scalar_rec(const clt_tensor *z, double s, bool reversed,
                                       clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(z, fn);
    clt_tensor *k = NULL, *t = NULL, *u = NULL;
    clt_status st = clt__check_dtype(z->dev, z->dtype, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype part = clt__complex_part_dtype(z->dtype);
    if (reversed) {
        double v[2] = {log(fabs(s)), atan2(0.0, s)}; /* log s, s real */
        float vf[2] = {(float)v[0], (float)v[1]};
        CLT__TRY(clt__tensor_from_host_in(fn, z->dev, z->dtype, 0, NULL,
                                          z->dtype == CLT_COMPLEX128 ? (void *)v : (void *)vf,
                                          &k));
        CLT__TRY(clt__complex_binary_rec(2, z, k, &t, fn));
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_EXP, t, out, fn));
    } else if (s == 0.0) {
        CLT__TRY(clt__full(z->dev, z->dtype, z->ndim, z->shape, 1.0, out));
        CLT__TRY(rec2(st, out, "PowBackward0", bw_zero_grad, 1, &z, 0, NULL, NULL));
    } else if (s == 1.0) {
        CLT__TRY(clt__full(z->dev, part, 0, NULL, 0.0, &k));
        CLT__TRY(clt__complex_binary_rec(0, z, k, out, fn));
    } else if (s == 0.5 || s == -0.5) {
        CLT__TRY(clt__complex_math_rec(s > 0 ? CLT__CMATH_SQRT : CLT__CMATH_RSQRT, z, out, fn));
    } else if (s == 2.0 || s == 3.0 || s == -2.0) {
        CLT__TRY(clt__complex_binary_rec(2, z, z, &t, fn));
        if (s == 3.0)
            CLT__TRY(clt__complex_binary_rec(2, t, z, out, fn));
        else if (s == 2.0)
            CLT__TRY(clt__alias_history(t, out));
        else {
            CLT__TRY(clt__full(z->dev, part, 0, NULL, 1.0, &k));
            CLT__TRY(clt__complex_binary_rec(3, k, t, out, fn));
        }
    } else if (s == -1.0) {
        CLT__TRY(clt__full(z->dev, part, 0, NULL, 1.0, &k));
        CLT__TRY(clt__complex_binary_rec(3, k, z, out, fn));
    } else {
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_LOG, z, &t, fn));
        CLT__TRY(times_const(t, s, 0.0, &u));
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_EXP, u, out, fn));
    }
done:
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    clt_tensor_free(k);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_pow_scalar_complex(const clt_tensor *a, double re, double im, clt_tensor **out)
{
    static const char fn[] = "clt_pow_scalar_complex";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (a->dtype == CLT_FLOAT16)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: \"pow\" not implemented for 'ComplexHalf' (a float16 tensor to "
                          "the complex power %g%+gj is ComplexHalf in PyTorch; convert the "
                          "tensor to float32 first)",
                          fn, re, im);
    /* a real tensor becomes complex first (float64 complex128, the others
     * bfloat16 included complex64, as torch's promotion with a complex
     * scalar), recorded: its gradient is the real part of the complex one */
    clt_dtype ct = clt__dtype_is_complex(a->dtype) ? a->dtype
                 : a->dtype == CLT_FLOAT64         ? CLT_COMPLEX128
                                                   : CLT_COMPLEX64;
    clt_tensor *z = NULL, *t = NULL, *u = NULL, *c = NULL;
    clt_status st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;
    if (ct != a->dtype)
        CLT__TRY(clt__to_dtype_rec(fn, a, ct, &z));
    if (im == 0.0) {
        /* a real exponent: clt_pow_scalar's forms, as torch's Scalar equals
         * 2 + 0j to 2 */
        CLT__TRY(clt__complex_pow_scalar_rec(z ? z : a, re, false, out, fn));
    } else { /* exp(s log z), as std::pow (cpow) in torch's kernel */
        double v[2] = {re, im};
        float vf[2] = {(float)re, (float)im};
        CLT__TRY(clt__tensor_from_host_in(fn, a->dev, ct, 0, NULL,
                                          ct == CLT_COMPLEX128 ? (void *)v : (void *)vf, &c));
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_LOG, z ? z : a, &t, fn));
        CLT__TRY(clt__complex_binary_rec(2, t, c, &u, fn));
        CLT__TRY(clt__complex_math_rec(CLT__CMATH_EXP, u, out, fn));
    }
done:
    clt_tensor_free(z);
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(c);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_view_as_real(const clt_tensor *t, clt_tensor **out)
{
    return view_as_real_rec("clt_view_as_real", t, out);
}

clt_status clt_view_as_complex(const clt_tensor *t, clt_tensor **out)
{
    CLT__AUTOCAST("clt_view_as_complex", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (t),
                  clt_view_as_complex(CLT__AC(0), out));
    return view_as_complex_rec("clt_view_as_complex", t, out);
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
    return part_rec("clt_real", t, 0, out);
}

clt_status clt_imag(const clt_tensor *t, clt_tensor **out)
{
    return part_rec("clt_imag", t, 1, out);
}

clt_status clt_conj(const clt_tensor *t, clt_tensor **out)
{
    if (t && !clt__dtype_is_complex(t->dtype)) {
        CLT__REQUIRE_ARG(out, "clt_conj");
        *out = NULL;
        clt_status st = clt__alias_history(t, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    return conj_rec("clt_conj", t, out);
}

clt_status clt_angle(const clt_tensor *t, clt_tensor **out)
{
    clt_status st = clt__complex_unary(1, t, out, "clt_angle");
    bool save = st == CLT_OK && clt__dtype_is_complex(t->dtype);
    return rec2(st, out, "AngleBackward0", bw_angle, 1, &t, save ? 1 : 0, &t, NULL);
}

clt_status clt_polar(const clt_tensor *abs, const clt_tensor *angle, clt_tensor **out)
{
    CLT__AUTOCAST("clt_polar", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (abs, angle),
                  clt_polar(CLT__AC(0), CLT__AC(1), out));
    const clt_tensor *in[2] = {abs, angle};
    clt_status st = clt__complex_make(0, abs, angle, out, "clt_polar");
    const clt_tensor *sv = st == CLT_OK ? *out : NULL;
    return rec2(st, out, "PolarBackward0", bw_polar, 2, in, 1, &sv, NULL);
}

clt_status clt_complex(const clt_tensor *real, const clt_tensor *imag, clt_tensor **out)
{
    return make_rec("clt_complex", real, imag, out);
}

clt_status clt__complex_via_real(const char *fn, const clt_tensor *t, clt__real_op op,
                                 const void *ctx, clt_tensor **out)
{
    *out = NULL;
    clt_tensor *r = NULL, *y = NULL, *c = NULL;
    clt_status st;
    CLT__TRY(view_as_real_rec(fn, t, &r));
    CLT__TRY(op(r, ctx, &y));
    CLT__TRY(clt_contiguous(y, &c));
    CLT__TRY(view_as_complex_rec(fn, c, out));
done:
    clt_tensor_free(r);
    clt_tensor_free(y);
    clt_tensor_free(c);
    return st;
}

/* matmul of complex operands (both of one complex dtype), composed of
 * recorded real products: (ar + i ai)(br + i bi) = (ar br - ai bi) +
 * i (ar bi + ai br), so that the gradients (g conj(b)^T and conj(a)^T g)
 * and their own gradients come from those of the parts.  Shapes as
 * clt_matmul's, checked by its real products.  conj_a: conj(a) b =
 * (ar br + ai bi) + i (ar bi - ai br), torch.vdot's. */
static clt_status complex_product(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                  bool conj_a, clt_tensor **out)
{
    *out = NULL;
    if (a->dtype != b->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: expected scalar type %s but found %s", fn,
                          clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    clt_tensor *p[4] = {0}, *ar = NULL, *ai = NULL, *br = NULL, *bi = NULL, *re = NULL,
               *im = NULL;
    clt_status st;
    CLT__TRY(part_rec(fn, a, 0, &ar));
    CLT__TRY(part_rec(fn, a, 1, &ai));
    CLT__TRY(part_rec(fn, b, 0, &br));
    CLT__TRY(part_rec(fn, b, 1, &bi));
    CLT__TRY(clt__matmul_rec(fn, ar, br, &p[0]));
    CLT__TRY(clt__matmul_rec(fn, ai, bi, &p[1]));
    CLT__TRY(clt__matmul_rec(fn, ar, bi, &p[2]));
    CLT__TRY(clt__matmul_rec(fn, ai, br, &p[3]));
    CLT__TRY((conj_a ? clt__add_rec : clt__sub_rec)(fn, p[0], p[1], &re));
    CLT__TRY((conj_a ? clt__sub_rec : clt__add_rec)(fn, p[2], p[3], &im));
    CLT__TRY(make_rec(fn, re, im, out));
done:
    for (int k = 0; k < 4; k++)
        clt_tensor_free(p[k]);
    clt_tensor_free(ar);
    clt_tensor_free(ai);
    clt_tensor_free(br);
    clt_tensor_free(bi);
    clt_tensor_free(re);
    clt_tensor_free(im);
    return st;
}

clt_status clt__complex_matmul_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                   clt_tensor **out)
{
    return complex_product(fn, a, b, false, out);
}

clt_status clt__complex_vdot_rec(const char *fn, const clt_tensor *a, const clt_tensor *b,
                                 clt_tensor **out)
{
    return complex_product(fn, a, b, true, out);
}

/* ---- the FFTs ------------------------------------------------------------------- */

/* A transform's node: i[0] its kind (0 c2c forward, 1 c2c inverse, 2 rfft,
 * 3 irfft, 4 hfft, 5 ihfft), i[1] the number k of dims transformed, i[2..]
 * the dims, i[2 + CLT_MAX_DIMS ..] the signal sizes, s[0] the norm mode.
 * The gradient is the adjoint transform with the same scale, which is the
 * opposite direction under the swapped norm (torch's fft_r2c_backward and
 * fft_c2r_backward), brought back to the input's sizes (the forward padded
 * or cut it). */
static const char *const norm_names[3] = {"backward", "ortho", "forward"};

#define FFT_DIM(n, j) ((int)(n)->i[2 + (j)])
#define FFT_SIZE(n, j) ((n)->i[2 + CLT_MAX_DIMS + (j)])

/* t cut or padded with zeros to `size` along dim d (a new tensor). */
static clt_status resize_dim(const clt_tensor *t, int d, int64_t size, clt_tensor **out)
{
    *out = NULL;
    int64_t cur = t->shape[d];
    if (cur >= size) {
        clt_tensor *v = NULL;
        clt_status st = clt__narrow_rec(FN, t, d, 0, size, &v);
        if (st == CLT_OK)
            st = clt_contiguous(v, out);
        clt_tensor_free(v);
        return st;
    }
    bool cx = clt__dtype_is_complex(t->dtype);
    clt_tensor *r = NULL, *c = NULL, *p = NULL;
    clt_status st = CLT_OK;
    if (cx)
        CLT__TRY(view_as_real_rec(FN, t, &r));
    {
        const clt_tensor *src = cx ? r : t;
        int64_t pad[2 * CLT_MAX_DIMS] = {0};
        int j = src->ndim - 1 - d;
        pad[2 * j + 1] = size - cur;
        CLT__TRY(clt__pad_rec(FN, src, pad, 2 * (j + 1), CLT_PAD_CONSTANT, 0.0, &p));
    }
    if (cx) {
        CLT__TRY(clt_contiguous(p, &c));
        CLT__TRY(view_as_complex_rec(FN, c, out));
    } else {
        *out = p;
        p = NULL;
    }
done:
    clt_tensor_free(r);
    clt_tensor_free(c);
    clt_tensor_free(p);
    return st;
}

/* The one-sided spectrum t (along d, of a real signal of length len)
 * with the entries whose mirror images it lacks doubled: 1 .. len -
 * (len / 2 + 1), as torch's fft_c2r_backward. */
static clt_status double_mirrored(const clt_tensor *t, int d, int64_t len, clt_tensor **out)
{
    *out = NULL;
    int64_t m = t->shape[d], dl = len - (len / 2 + 1);
    if (dl <= 0)
        return clt__alias_grad(t, out);
    clt_dtype part = clt__complex_part_dtype(t->dtype);
    int64_t shape[CLT_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++)
        shape[k] = k == d ? m : 1;
    double *w = clt__calloc((size_t)m, sizeof *w);
    float *wf = clt__calloc((size_t)m, sizeof *wf);
    clt_tensor *wt = NULL;
    clt_status st;
    if (w == NULL || wf == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", FN);
        goto done;
    }
    for (int64_t k = 0; k < m; k++) {
        w[k] = k >= 1 && k <= dl ? 2.0 : 1.0;
        wf[k] = (float)w[k];
    }
    CLT__TRY(clt__tensor_from_host_in(FN, t->dev, part, t->ndim, shape,
                                      part == CLT_FLOAT64 ? (const void *)w : (const void *)wf,
                                      &wt));
    CLT__TRY(clt__complex_binary_rec(2, t, wt, out, FN));
done:
    free(w);
    free(wf);
    clt_tensor_free(wt);
    return st;
}

static clt_status fft1(int which, const clt_tensor *x, int64_t n, int dim, const char *norm,
                       clt_tensor **out, const char *fn);
static clt_status fftn(int which, const clt_tensor *x, int k, const int64_t *s, const int *dim,
                       const char *norm, clt_tensor **out, const char *fn);

/* The adjoint transform, computed with the recorded transforms (so that
 * it is differentiable again, as torch's formulas are). */
static clt_status bw_fft(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int kind = (int)n->i[0], k = (int)n->i[1], mode = (int)n->s[0];
    const char *inv = norm_names[2 - mode]; /* backward <-> forward */
    int dims[CLT_MAX_DIMS];
    int64_t sizes[CLT_MAX_DIMS];
    for (int j = 0; j < k; j++) {
        dims[j] = FFT_DIM(n, j);
        sizes[j] = FFT_SIZE(n, j);
    }
    int last = k > 0 ? dims[k - 1] : 0;
    clt_tensor *cur = NULL, *next = NULL;
    clt_status st = CLT_OK;
    switch (kind) {
    case 0:
    case 1:
        CLT__TRY(fftn(kind == 0 ? 1 : 0, g, k, NULL, dims, inv, &cur, FN));
        break;
    case 2: /* rfft: the spectrum padded with zeros to the full length, the
             * inverse c2c transform, its real part */
    case 5:
        if (kind == 2)
            CLT__TRY(fftn(1, g, k, sizes, dims, inv, &next, FN));
        else
            CLT__TRY(fft1(0, g, sizes[0], last, inv, &next, FN));
        CLT__TRY(part_rec(FN, next, 0, &cur));
        break;
    case 3: /* irfft: the r2c transform, the mirrored entries doubled */
    case 4:
        if (kind == 3)
            CLT__TRY(fftn(2, g, k, NULL, dims, inv, &next, FN));
        else
            CLT__TRY(fft1(5, g, -1, last, inv, &next, FN));
        CLT__TRY(double_mirrored(next, last, sizes[k - 1], &cur));
        break;
    default:
        st = clt__error(CLT_ERR_INTERNAL, "%s: unknown transform %d", FN, kind);
        goto done;
    }
    for (int j = 0; j < k; j++) {
        int d = dims[j];
        if (cur->shape[d] == n->in[0].shape[d])
            continue;
        clt_tensor_free(next);
        next = NULL;
        CLT__TRY(resize_dim(cur, d, n->in[0].shape[d], &next));
        clt_tensor_free(cur);
        cur = next;
        next = NULL;
    }
    gin[0] = cur;
    cur = NULL;
done:
    clt_tensor_free(cur);
    clt_tensor_free(next);
    return st;
}

static const char *const fft_nodes[6] = {"FftC2CBackward0", "FftC2CBackward0", "FftR2CBackward0",
                                         "FftC2RBackward0", "FftC2RBackward0", "FftR2CBackward0"};

/* Records the transform of kind (see bw_fft) that made *out from x over
 * the k (wrapped) dims with the signal sizes. */
static clt_status rec_fft(clt_status st, clt_tensor **out, const clt_tensor *x, int kind, int k,
                          const int *dims, const int64_t *sizes, const char *norm)
{
    clt__node *n = NULL;
    st = rec2(st, out, fft_nodes[kind], bw_fft, 1, &x, 0, NULL, &n);
    if (n) {
        int mode = 0;
        (void)clt__fft_norm(norm, &mode, FN); /* checked by the transform */
        n->i[0] = kind;
        n->i[1] = k;
        for (int j = 0; j < k; j++) {
            n->i[2 + j] = dims[j];
            n->i[2 + CLT_MAX_DIMS + j] = sizes[j];
        }
        n->s[0] = mode;
    }
    return st;
}

static clt_status fft1(int which, const clt_tensor *x, int64_t n, int dim, const char *norm,
                       clt_tensor **out, const char *fn)
{
    clt_status st = clt__fft1(which, x, n, dim, norm, out, fn);
    if (st != CLT_OK || !clt__grad_needed(1, &x))
        return st;
    int d = 0;
    (void)clt__wrap_dim(dim, x->ndim, &d, fn); /* checked by the transform */
    if (n == -1)
        n = which == 3 || which == 4 ? 2 * (x->shape[d] - 1) : x->shape[d];
    return rec_fft(st, out, x, which, 1, &d, &n, norm);
}

/* which: 0 fftn, 1 ifftn, 2 rfftn, 3 irfftn (the kinds of bw_fft too). */
static clt_status fftn(int which, const clt_tensor *x, int k, const int64_t *s, const int *dim,
                       const char *norm, clt_tensor **out, const char *fn)
{
    clt_status st = clt__fftn(which, x, k, s, dim, norm, out, fn);
    if (st != CLT_OK || !clt__grad_needed(1, &x))
        return st;
    int dims[CLT_MAX_DIMS];
    int64_t sizes[CLT_MAX_DIMS];
    if (s == NULL && dim == NULL)
        k = x->ndim;
    for (int i = 0; i < k; i++) {
        dims[i] = x->ndim - k + i;
        if (dim)
            (void)clt__wrap_dim(dim[i], x->ndim, &dims[i], fn);
        int64_t v = s ? s[i] : -1;
        if (v == -1)
            v = which == 3 && i == k - 1 ? 2 * (x->shape[dims[i]] - 1) : x->shape[dims[i]];
        sizes[i] = v;
    }
    return rec_fft(st, out, x, which, k, dims, sizes, norm);
}

#define DEF_FFT1(name, which)                                                            \
    clt_status clt_fft_##name(const clt_tensor *x, int64_t n, int dim, const char *norm, \
                              clt_tensor **out)                                          \
    {                                                                                    \
        CLT__AUTOCAST("clt_fft_" #name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x),            \
                      clt_fft_##name(CLT__AC(0), n, dim, norm, out));                    \
        return fft1(which, x, n, dim, norm, out, "clt_fft_" #name);                      \
    }

DEF_FFT1(fft, 0)
DEF_FFT1(ifft, 1)
DEF_FFT1(rfft, 2)
DEF_FFT1(irfft, 3)
DEF_FFT1(hfft, 4)
DEF_FFT1(ihfft, 5)

#define DEF_FFTN(name, which)                                                               \
    clt_status clt_fft_##name(const clt_tensor *x, int k, const int64_t *s, const int *dim, \
                              const char *norm, clt_tensor **out)                           \
    {                                                                                       \
        CLT__AUTOCAST("clt_fft_" #name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x),               \
                      clt_fft_##name(CLT__AC(0), k, s, dim, norm, out));                    \
        return fftn(which, x, k, s, dim, norm, out, "clt_fft_" #name);                      \
    }

DEF_FFTN(fftn, 0)
DEF_FFTN(ifftn, 1)
DEF_FFTN(rfftn, 2)
DEF_FFTN(irfftn, 3)

#define DEF_FFT2(name, which)                                                        \
    clt_status clt_fft_##name(const clt_tensor *x, const int64_t *s, const int *dim, \
                              const char *norm, clt_tensor **out)                    \
    {                                                                                \
        static const int last2[2] = {-2, -1};                                        \
        CLT__AUTOCAST("clt_fft_" #name, CLT__AC_CPU(CLT__AC_FLOAT32), 1, (x),        \
                      clt_fft_##name(CLT__AC(0), s, dim, norm, out));                \
        return fftn(which, x, 2, s, dim ? dim : last2, norm, out, "clt_fft_" #name); \
    }

DEF_FFT2(fft2, 0)
DEF_FFT2(ifft2, 1)
DEF_FFT2(rfft2, 2)
DEF_FFT2(irfft2, 3)

/* torch.fft.hfftn and ihfftn, composed of recorded transforms as torch
 * composes them (so their gradients come from those): hfftn is the
 * forward c2c transform over all dims but the last, then hfft along the
 * last; ihfftn is ihfft along the last, then the inverse c2c transform over
 * the others.  The dims and sizes are checked here, as clt__fftn checks
 * them, before anything is computed. */
static clt_status hermitian_n(bool inverse, const clt_tensor *x, int k, const int64_t *s,
                              const int *dim, const char *norm, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    int mode = 0;
    clt_status st = clt__fft_norm(norm, &mode, fn);
    if (st != CLT_OK)
        return st;
    if (inverse && clt__dtype_is_complex(x->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s expects a real input tensor, but got %s",
                          fn, clt_dtype_name(x->dtype));
    int dims[CLT_MAX_DIMS];
    int64_t sizes[CLT_MAX_DIMS];
    if (s == NULL && dim == NULL)
        k = x->ndim;
    if (k < 0 || k > x->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Got %d dimensions to transform but the input tensor only has %d "
                          "dimensions",
                          fn, k, x->ndim);
    if (k == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s must transform at least one axis", fn);
    for (int i = 0; i < k; i++) {
        dims[i] = x->ndim - k + i;
        if (dim && (st = clt__wrap_dim(dim[i], x->ndim, &dims[i], fn)) != CLT_OK)
            return st;
        for (int j = 0; j < i; j++)
            if (dims[j] == dims[i])
                return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: FFT dims must be unique", fn);
    }
    for (int i = 0; i < k; i++) {
        int64_t v = s ? s[i] : -1;
        if (v == -1)
            v = !inverse && i == k - 1 ? 2 * (x->shape[dims[i]] - 1) : x->shape[dims[i]];
        if (v < 1)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Invalid number of data points (%lld) specified", fn,
                              (long long)v);
        sizes[i] = v;
    }
    clt_tensor *mid = NULL;
    if (inverse) {
        st = fft1(5, x, sizes[k - 1], dims[k - 1], norm, &mid, fn);
        if (st == CLT_OK && k > 1)
            st = fftn(1, mid, k - 1, sizes, dims, norm, out, fn);
        else if (st == CLT_OK) {
            *out = mid;
            mid = NULL;
        }
    } else {
        const clt_tensor *src = x;
        if (k > 1) {
            st = fftn(0, x, k - 1, sizes, dims, norm, &mid, fn);
            src = mid;
        }
        if (st == CLT_OK)
            st = fft1(4, src, sizes[k - 1], dims[k - 1], norm, out, fn);
    }
    clt_tensor_free(mid);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_fft_hfftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                         const char *norm, clt_tensor **out)
{
    return hermitian_n(false, x, k, s, dim, norm, out, "clt_fft_hfftn");
}

clt_status clt_fft_ihfftn(const clt_tensor *x, int k, const int64_t *s, const int *dim,
                          const char *norm, clt_tensor **out)
{
    return hermitian_n(true, x, k, s, dim, norm, out, "clt_fft_ihfftn");
}

clt_status clt_fft_hfft2(const clt_tensor *x, const int64_t *s, const int *dim, const char *norm,
                         clt_tensor **out)
{
    static const int last2[2] = {-2, -1};
    return hermitian_n(false, x, 2, s, dim ? dim : last2, norm, out, "clt_fft_hfft2");
}

clt_status clt_fft_ihfft2(const clt_tensor *x, const int64_t *s, const int *dim, const char *norm,
                          clt_tensor **out)
{
    static const int last2[2] = {-2, -1};
    return hermitian_n(true, x, 2, s, dim ? dim : last2, norm, out, "clt_fft_ihfft2");
}

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

static clt_status shift(bool inverse, const clt_tensor *x, int k, const int *dim, clt_tensor **out,
                        const char *fn);

/* The gradient of a shift is the opposite shift of the gradient (recorded). */
static clt_status bw_shift(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int k = (int)n->i[0], dims[CLT_MAX_DIMS];
    for (int j = 0; j < k; j++)
        dims[j] = (int)n->i[2 + j];
    return shift(n->i[1] == 0, g, k, dims, &gin[0], "clt_backward");
}

static clt_status shift(bool inverse, const clt_tensor *x, int k, const int *dim, clt_tensor **out,
                        const char *fn)
{
    clt__node *n = NULL;
    clt_status st = clt__fftshift(inverse, x, k, dim, out, fn);
    st = rec2(st, out, inverse ? "IfftshiftBackward0" : "FftshiftBackward0", bw_shift, 1, &x, 0,
              NULL, &n);
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
