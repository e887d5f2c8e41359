/* grad_elementwise.c: the public elementwise ops (ops.h): each runs its
 * forward from src/ops and records its backward formula, written here
 * beside it.  Formulas work in the output's shape and dtype; the engine
 * reduces broadcast dimensions and converts dtypes back to each input. */
#include <math.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* A 0-d zero of g's dtype on g's device, for where(). */
static clt_status zero_of(const clt_tensor *g, clt_tensor **out)
{
    return clt__full(g->dev, g->dtype, 0, NULL, 0.0, out);
}

/* where(cond, a, b) in a formula: recorded when the pass creates a graph
 * (clt__twice), as clt_where. */
static clt_status where_g(const clt_tensor *cond, const clt_tensor *a, const clt_tensor *b,
                          clt_tensor **out)
{
    if (clt__creating_graph())
        return clt_where(cond, a, b, out);
    return clt__where_in("clt_backward", cond, a, b, out);
}

clt_status clt__zero_where(const clt_tensor *mask, const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *z = NULL;
    clt_status st = zero_of(x, &z);
    if (st == CLT_OK)
        st = where_g(mask, z, x, out);
    clt_tensor_free(z);
    return st;
}

/* ---- tensor with tensor --------------------------------------------------------- */

/* The formulas that clt__twice marks compute with the recording forms of
 * the ops (clt__X_rec), which record only in a pass that creates a graph,
 * and pass g on with clt__alias_grad. */
static clt_status bw_add(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__alias_grad(g, &gin[0]);
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = clt__alias_grad(g, &gin[1]);
    return st;
}

static clt_status bw_sub(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__alias_grad(g, &gin[0]);
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = clt__neg_rec("clt_backward", g, &gin[1]);
    return st;
}

/* saved: a, b */
clt_status clt__mul_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__mul_rec("clt_backward", g, S(1), &gin[0]);
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = clt__mul_rec("clt_backward", g, S(0), &gin[1]);
    return st;
}

/* saved: b, out.  d(a/b)/db = -(g/b) * out. */
static clt_status bw_div(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *gb = NULL, *t = NULL;
    clt_status st = clt__div_rec("clt_backward", g, S(0), &gb);
    if (st == CLT_OK && CLT__NEED(n, 1)) {
        st = clt__mul_rec("clt_backward", gb, S(1), &t);
        if (st == CLT_OK)
            st = clt__neg_rec("clt_backward", t, &gin[1]);
    }
    if (st == CLT_OK && CLT__NEED(n, 0)) {
        gin[0] = gb;
        gb = NULL;
    }
    clt_tensor_free(gb);
    clt_tensor_free(t);
    return st;
}

/* saved: a, b, out.  PyTorch's pow_backward_self and _exponent:
 * da = where(b == 0, 0, g * b * a^(b-1)); db = where(a == 0 & b >= 0, 0,
 * g * out * log(a)). */
static clt_status bw_pow(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL, *mask = NULL, *m2 = NULL;
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__sub_scalar_rec("clt_backward", S(1), 1.0, &t1));
        CLT__TRY(clt__pow_rec("clt_backward", S(0), t1, &t2));
        clt_tensor_free(t1);
        t1 = NULL;
        CLT__TRY(clt__mul_rec("clt_backward", t2, S(1), &t1));
        clt_tensor_free(t2);
        t2 = NULL;
        CLT__TRY(clt__mul_rec("clt_backward", t1, g, &t2));
        CLT__TRY(clt__eq_scalar_in("clt_backward", S(1), 0.0, &mask));
        CLT__TRY(clt__zero_where(mask, t2, &gin[0]));
        clt_tensor_free(t1);
        clt_tensor_free(t2);
        clt_tensor_free(mask);
        t1 = t2 = mask = NULL;
    }
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__log_rec("clt_backward", S(0), &t1));
        CLT__TRY(clt__mul_rec("clt_backward", g, S(2), &t2));
        CLT__TRY(clt__mul_rec("clt_backward", t2, t1, &t3));
        /* a == 0 and b >= 0: where(a == 0, b >= 0, false) */
        CLT__TRY(clt__eq_scalar_in("clt_backward", S(0), 0.0, &mask));
        CLT__TRY(clt__ge_scalar_in("clt_backward", S(1), 0.0, &m2));
        clt_tensor_free(t1);
        t1 = NULL;
        CLT__TRY(clt__mul_in("clt_backward", mask, m2, &t1)); /* bool * bool: logical and */
        CLT__TRY(clt__zero_where(t1, t3, &gin[1]));
    }
done:
    clt_tensor_free(t1);
    clt_tensor_free(t2);
    clt_tensor_free(t3);
    clt_tensor_free(mask);
    clt_tensor_free(m2);
    return st;
}

/* saved: a, b.  PyTorch's maximum/minimum: a tie splits the gradient in
 * halves; the loser gets none.  n->i[0] is 1 for maximum, 0 for minimum. */
static clt_status bw_extremum(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *tie = NULL, *half = NULL, *base = NULL, *lose = NULL;
    CLT__TRY(clt__eq_in("clt_backward", S(0), S(1), &tie));
    CLT__TRY(clt__mul_scalar_rec("clt_backward", g, 0.5, &half));
    CLT__TRY(where_g(tie, half, g, &base));
    for (int k = 0; k < 2; k++) {
        if (!CLT__NEED(n, k))
            continue;
        /* input k loses where it is below the other (maximum) or above */
        bool below = (k == 0) == (n->i[0] == 1);
        CLT__TRY(below ? clt__lt_in("clt_backward", S(0), S(1), &lose)
                       : clt__gt_in("clt_backward", S(0), S(1), &lose));
        CLT__TRY(clt__zero_where(lose, base, &gin[k]));
        clt_tensor_free(lose);
        lose = NULL;
    }
done:
    clt_tensor_free(tie);
    clt_tensor_free(half);
    clt_tensor_free(base);
    clt_tensor_free(lose);
    return st;
}

/* saved: a, b.  remainder and fmod: da = g; db = -g * floor(a / b)
 * (remainder, n->i[0] 1) or -g * trunc(a / b) (fmod, 0), as PyTorch's
 * formulas, with a / b the true quotient. */
static clt_status bw_modulo(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__alias_grad(g, &gin[0]);
    if (st == CLT_OK && CLT__NEED(n, 1)) {
        clt_tensor *q = NULL, *r = NULL, *t = NULL;
        st = clt__div_in("clt_backward", S(0), S(1), &q);
        if (st == CLT_OK && !clt__creating_graph())
            st = clt__grad_kernel(n->i[0] ? "remainder_bw" : "fmod_bw", g, q, &gin[1]);
        else if (st == CLT_OK) { /* recorded: the rounded quotient is a constant */
            st = n->i[0] ? clt__floor_in("clt_backward", q, &r)
                         : clt__trunc_in("clt_backward", q, &r);
            if (st == CLT_OK)
                st = clt__mul_rec("clt_backward", g, r, &t);
            if (st == CLT_OK)
                st = clt__neg_rec("clt_backward", t, &gin[1]);
        }
        clt_tensor_free(q);
        clt_tensor_free(r);
        clt_tensor_free(t);
    }
    return st;
}

/* floor_divide has no derivative in PyTorch 1.13: its result requires grad,
 * and backward through it fails. */
static clt_status bw_floor_divide(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    (void)g;
    (void)gin;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "clt_backward: the derivative for clt_floor_divide is not implemented, "
                      "as in PyTorch (derivative for aten::floor_divide is not implemented)");
}

/* saved: cond */
static clt_status bw_where(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *z = NULL;
    CLT__TRY(zero_of(g, &z));
    if (CLT__NEED(n, 1))
        CLT__TRY(where_g(S(0), g, z, &gin[1]));
    if (CLT__NEED(n, 2))
        CLT__TRY(where_g(S(0), z, g, &gin[2]));
done:
    clt_tensor_free(z);
    return st;
}

/* saved: a.  The gradient passes where min <= a <= max (s[0], s[1]; i[0]
 * and i[1] say whether each bound is there), as PyTorch's clamp_backward. */
clt_status clt__clamp_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *in = NULL, *out = NULL, *cur = NULL;
    CLT__TRY(clt__alias_grad(g, &cur));
    for (int k = 0; k < 2; k++) {
        if (!n->i[k])
            continue;
        CLT__TRY(k == 0 ? clt__lt_scalar_in("clt_backward", S(0), n->s[0], &out)
                        : clt__gt_scalar_in("clt_backward", S(0), n->s[1], &out));
        /* NaN compares false either way: PyTorch's mask is (a >= min), so a
         * NaN input gets no gradient. */
        CLT__TRY(k == 0 ? clt__ge_scalar_in("clt_backward", S(0), n->s[0], &in)
                        : clt__le_scalar_in("clt_backward", S(0), n->s[1], &in));
        clt_tensor *next = NULL;
        clt_tensor *z = NULL;
        CLT__TRY(zero_of(g, &z));
        st = where_g(in, cur, z, &next);
        clt_tensor_free(z);
        if (st != CLT_OK)
            goto done;
        clt_tensor_free(cur);
        cur = next;
        clt_tensor_free(in);
        clt_tensor_free(out);
        in = out = NULL;
    }
    gin[0] = cur;
    cur = NULL;
done:
    clt_tensor_free(in);
    clt_tensor_free(out);
    clt_tensor_free(cur);
    return st;
}

typedef clt_status (*binary_fn)(const char *, const clt_tensor *, const clt_tensor *,
                                clt_tensor **);

static clt_status bw_xlogy(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_atan2(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_hypot(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_copysign(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* tag goes to the node's i[0] (maximum 1, minimum 0). */
static clt_status binary(binary_fn fwd, const char *fn, const char *name, clt__backward_fn bw,
                         int save, int tag, const clt_tensor *a, const clt_tensor *b,
                         clt_tensor **out)
{
    if (a && b && (clt__dtype_is_complex(a->dtype) || clt__dtype_is_complex(b->dtype))) {
        int op = fwd == clt__add_in ? 0 : fwd == clt__sub_in ? 1 : fwd == clt__mul_in ? 2
                 : fwd == clt__div_in ? 3 : -1;
        if (op >= 0)
            return clt__complex_binary_rec(op, a, b, out, fn);
        if (fwd == clt__pow_in)
            return clt__complex_pow_rec(a, b, out, fn);
    }
    clt_status st = fwd(fn, a, b, out);
    if (st != CLT_OK || bw == NULL)
        return st;
    const clt_tensor *in[2] = {a, b};
    /* save: 0 nothing, 1 (a, b), 2 (b, out), 3 (a, b, out) */
    const clt_tensor *sv[3] = {a, b, *out};
    int ns = save == 1 ? 2 : save == 3 ? 3 : 0;
    if (save == 2) {
        sv[0] = b;
        sv[1] = *out;
        ns = 2;
    }
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, 2, in, ns, sv, &n);
    if (n)
        n->i[0] = tag;
    if (bw == bw_add || bw == bw_sub || bw == clt__mul_grad || bw == bw_div || bw == bw_pow ||
        bw == bw_extremum || bw == bw_modulo || bw == bw_xlogy || bw == bw_atan2 ||
        bw == bw_hypot || bw == bw_copysign)
        clt__twice(n);
    return st;
}

/* clt__X_rec(fn, ...) records clt_X with its messages naming fn; clt_X is
 * clt__X_rec("clt_X", ...). */
#define DEF_BINARY(fname, name, bw, save, tag)                                        \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, const clt_tensor *b, \
                                  clt_tensor **out)                                   \
    {                                                                                 \
        return binary(clt__##fname##_in, fn, name, bw, save, tag, a, b, out);         \
    }                                                                                 \
    clt_status clt_##fname(const clt_tensor *a, const clt_tensor *b, clt_tensor **out) \
    {                                                                                 \
        return clt__##fname##_rec("clt_" #fname, a, b, out);                          \
    }

/* An op of autocast's float32 list (torch.autocast): float16 operands on
 * the autocast device are cast to float32 first. */
#define DEF_BINARY_F32(fname, name, bw, save, tag)                                    \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, const clt_tensor *b, \
                                  clt_tensor **out)                                   \
    {                                                                                 \
        return binary(clt__##fname##_in, fn, name, bw, save, tag, a, b, out);         \
    }                                                                                 \
    clt_status clt_##fname(const clt_tensor *a, const clt_tensor *b, clt_tensor **out) \
    {                                                                                 \
        CLT__AUTOCAST("clt_" #fname, CLT__AC_CUDA(CLT__AC_FLOAT32), 2, (a, b),        \
                      clt_##fname(CLT__AC(0), CLT__AC(1), out));                      \
        return clt__##fname##_rec("clt_" #fname, a, b, out);                          \
    }

DEF_BINARY(add, "AddBackward0", bw_add, 0, 0)
DEF_BINARY(sub, "SubBackward0", bw_sub, 0, 0)
DEF_BINARY(mul, "MulBackward0", clt__mul_grad, 1, 0)
DEF_BINARY(div, "DivBackward0", bw_div, 2, 0)
DEF_BINARY_F32(pow, "PowBackward1", bw_pow, 3, 0)
DEF_BINARY(maximum, "MaximumBackward0", bw_extremum, 1, 1)
DEF_BINARY(minimum, "MinimumBackward0", bw_extremum, 1, 0)
DEF_BINARY(remainder, "RemainderBackward1", bw_modulo, 1, 1)
DEF_BINARY(fmod, "FmodBackward1", bw_modulo, 1, 0)
DEF_BINARY(floor_divide, "NotImplemented", bw_floor_divide, 0, 0)
/* An op of autocast's promote list: mixed float16 and float32 operands on
 * the autocast device run in float32. */
#define DEF_BINARY_PROMOTE(fname, name, bw, save, tag)                                \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, const clt_tensor *b, \
                                  clt_tensor **out)                                   \
    {                                                                                 \
        return binary(clt__##fname##_in, fn, name, bw, save, tag, a, b, out);         \
    }                                                                                 \
    clt_status clt_##fname(const clt_tensor *a, const clt_tensor *b, clt_tensor **out) \
    {                                                                                 \
        CLT__AUTOCAST("clt_" #fname, CLT__AC_CUDA(CLT__AC_PROMOTE), 2, (a, b),        \
                      clt_##fname(CLT__AC(0), CLT__AC(1), out));                      \
        return clt__##fname##_rec("clt_" #fname, a, b, out);                          \
    }

DEF_BINARY(eq, NULL, NULL, 0, 0)
DEF_BINARY(ne, NULL, NULL, 0, 0)
DEF_BINARY(lt, NULL, NULL, 0, 0)
DEF_BINARY(le, NULL, NULL, 0, 0)
DEF_BINARY(gt, NULL, NULL, 0, 0)
DEF_BINARY(ge, NULL, NULL, 0, 0)

/* Zeros of g's shape for every input that needs a gradient (not g * 0,
 * which an infinite g would make NaN): sign, floor, ceil, round and trunc
 * (PyTorch's SignBackward0, ...), and torch.div with a rounding mode
 * (DivBackward2 and DivBackward3; floor_divide alone refuses). */
static clt_status bw_zero(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    for (int k = 0; k < n->nin && st == CLT_OK; k++)
        if (CLT__NEED(n, k))
            st = clt__full(g->dev, g->dtype, g->ndim, g->shape, 0.0, &gin[k]);
    return st;
}

static clt_status bad_rounding(clt_rounding_mode mode, const char *fn)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: div expected rounding_mode to be one of CLT_ROUNDING_NONE, "
                      "CLT_ROUNDING_TRUNC or CLT_ROUNDING_FLOOR, but found %d",
                      fn, (int)mode);
}

clt_status clt_div_rounding(const clt_tensor *a, const clt_tensor *b, clt_rounding_mode mode,
                            clt_tensor **out)
{
    static const char fn[] = "clt_div_rounding";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    switch (mode) {
    case CLT_ROUNDING_NONE:
        return clt__div_rec(fn, a, b, out);
    case CLT_ROUNDING_TRUNC:
        return binary(clt__trunc_divide_in, fn, "DivBackward2", bw_zero, 0, 0, a, b, out);
    case CLT_ROUNDING_FLOOR:
        return binary(clt__floor_divide_in, fn, "DivBackward2", bw_zero, 0, 0, a, b, out);
    }
    return bad_rounding(mode, fn);
}

clt_status clt_where(const clt_tensor *cond, const clt_tensor *a, const clt_tensor *b,
                     clt_tensor **out)
{
    clt_status st = clt__where(cond, a, b, out);
    const clt_tensor *in[3] = {cond, a, b};
    clt__node *n = NULL;
    st = clt__record(st, out, "WhereBackward0", bw_where, 3, in, 1, &cond, &n);
    clt__twice(n);
    return st;
}

clt_status clt__clamp_rec(const char *fn, const clt_tensor *a, const double *min,
                          const double *max, clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = clt__clamp(a, min, max, out, fn);
    st = clt__record(st, out, "ClampBackward1", clt__clamp_grad, 1, &a, 1, &a, &n);
    if (n) {
        n->i[0] = min != NULL;
        n->i[1] = max != NULL;
        n->s[0] = min ? *min : 0.0;
        n->s[1] = max ? *max : 0.0;
    }
    clt__twice(n);
    return st;
}

clt_status clt_clamp(const clt_tensor *a, const double *min, const double *max,
                     clt_tensor **out)
{
    return clt__clamp_rec("clt_clamp", a, min, max, out);
}

/* saved: a, then min and max where given (inputs in the same order; i[0]
 * and i[1] say which bounds there are).  PyTorch's clamp_backward_min_max:
 * a gets g where min <= a <= max; min where a < min and min < max; max
 * where a > max or max < min (min > max gives max); one bound alone:
 * a where a >= min (a <= max), the bound where a < min (a > max).  NaN
 * compares false, so a NaN anywhere sends g to neither a nor min. */
clt_status clt__clamp_t_grad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    bool lo = n->i[0] != 0, hi = n->i[1] != 0;
    const clt_tensor *a = S(0), *mn = lo ? S(1) : NULL, *mx = hi ? S(lo ? 2 : 1) : NULL;
    int kmin = 1, kmax = lo ? 2 : 1;
    clt_tensor *z = NULL, *p = NULL, *q = NULL, *pq = NULL;
    CLT__TRY(zero_of(g, &z));
    if (CLT__NEED(n, 0)) {
        if (lo)
            CLT__TRY(clt__ge_in(fn, a, mn, &p));
        if (hi)
            CLT__TRY(clt__le_in(fn, a, mx, &q));
        if (lo && hi)
            CLT__TRY(clt__logical_and_in(fn, p, q, &pq));
        CLT__TRY(where_g(pq ? pq : lo ? p : q, g, z, &gin[0]));
        clt_tensor_free(p);
        clt_tensor_free(q);
        clt_tensor_free(pq);
        p = q = pq = NULL;
    }
    if (lo && CLT__NEED(n, kmin)) {
        CLT__TRY(clt__lt_in(fn, a, mn, &p));
        if (hi) {
            CLT__TRY(clt__lt_in(fn, mn, mx, &q));
            CLT__TRY(clt__logical_and_in(fn, p, q, &pq));
        }
        CLT__TRY(where_g(pq ? pq : p, g, z, &gin[kmin]));
        clt_tensor_free(p);
        clt_tensor_free(q);
        clt_tensor_free(pq);
        p = q = pq = NULL;
    }
    if (hi && CLT__NEED(n, kmax)) {
        CLT__TRY(clt__gt_in(fn, a, mx, &p));
        if (lo) {
            CLT__TRY(clt__lt_in(fn, mx, mn, &q));
            CLT__TRY(clt__logical_or_in(fn, p, q, &pq));
        }
        CLT__TRY(where_g(pq ? pq : p, g, z, &gin[kmax]));
    }
done:
    clt_tensor_free(z);
    clt_tensor_free(p);
    clt_tensor_free(q);
    clt_tensor_free(pq);
    return st;
}

static clt_status clamp_t_rec(const char *fn, const char *name, const clt_tensor *a,
                              const clt_tensor *min, const clt_tensor *max, clt_tensor **out)
{
    clt_status st = clt__clamp_t(a, min, max, out, fn);
    const clt_tensor *in[3] = {a, min ? min : max, max};
    int nin = 1 + (min != NULL) + (max != NULL);
    clt__node *n = NULL;
    st = clt__record(st, out, name, clt__clamp_t_grad, nin, in, nin, in, &n);
    if (n) {
        n->i[0] = min != NULL;
        n->i[1] = max != NULL;
    }
    clt__twice(n);
    return st;
}

clt_status clt_clamp_tensor(const clt_tensor *a, const clt_tensor *min, const clt_tensor *max,
                            clt_tensor **out)
{
    return clamp_t_rec("clt_clamp_tensor", "ClampBackward0", a, min, max, out);
}

clt_status clt_clamp_min_tensor(const clt_tensor *a, const clt_tensor *min, clt_tensor **out)
{
    static const char fn[] = "clt_clamp_min_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(min, fn);
    return clamp_t_rec(fn, "ClampMinBackward1", a, min, NULL, out);
}

clt_status clt_clamp_max_tensor(const clt_tensor *a, const clt_tensor *max, clt_tensor **out)
{
    static const char fn[] = "clt_clamp_max_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(max, fn);
    return clamp_t_rec(fn, "ClampMaxBackward1", a, NULL, max, out);
}

/* ---- tensor with scalar ------------------------------------------------------------ */

/* n->s[0] is the scalar; saved: a (and out where said). */
static clt_status bw_add_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__alias_grad(g, &gin[0]);
}

static clt_status bw_rsub_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__neg_rec("clt_backward", g, &gin[0]);
}

static clt_status bw_mul_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__mul_scalar_rec("clt_backward", g, n->s[0], &gin[0]);
}

static clt_status bw_div_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__div_scalar_rec("clt_backward", g, n->s[0], &gin[0]);
}

/* s / a: -g * out / a; saved a, out */
static clt_status bw_rdiv_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *t = NULL, *u = NULL;
    clt_status st = clt__mul_rec("clt_backward", g, S(1), &t);
    if (st == CLT_OK)
        st = clt__div_rec("clt_backward", t, S(0), &u);
    if (st == CLT_OK)
        st = clt__neg_rec("clt_backward", u, &gin[0]);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

/* a ^ s: g * s * a^(s-1), 0 for s == 0; saved a */
static clt_status bw_pow_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    double s = n->s[0];
    if (s == 0.0)
        return clt__mul_scalar_rec("clt_backward", g, 0.0, &gin[0]);
    clt_tensor *p = NULL, *t = NULL;
    clt_status st = clt__pow_scalar_rec("clt_backward", S(0), s - 1.0, &p);
    if (st == CLT_OK)
        st = clt__mul_scalar_rec("clt_backward", p, s, &t);
    if (st == CLT_OK)
        st = clt__mul_rec("clt_backward", t, g, &gin[0]);
    clt_tensor_free(p);
    clt_tensor_free(t);
    return st;
}

/* s ^ a: g * out * log(s), and 0 where s == 0 and a >= 0; saved a, out */
static clt_status bw_rpow_s(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    double s = n->s[0];
    clt_tensor *t = NULL, *u = NULL, *mask = NULL;
    clt_status st = clt__mul_rec("clt_backward", g, S(1), &t);
    if (st == CLT_OK)
        st = clt__mul_scalar_rec("clt_backward", t, log(s), &u);
    if (st == CLT_OK && s == 0.0) {
        st = clt__ge_scalar_in("clt_backward", S(0), 0.0, &mask);
        if (st == CLT_OK)
            st = clt__zero_where(mask, u, &gin[0]);
    } else if (st == CLT_OK) {
        gin[0] = u;
        u = NULL;
    }
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(mask);
    return st;
}

typedef clt_status (*scalar_fn)(const char *, const clt_tensor *, double, clt_tensor **);

/* a + s, a - s, s - a, a * s, a / s, s / a of a complex a: the complex op
 * with s as a 0-d tensor of a's parts' dtype, recorded with its complex
 * gradient (s / a's is g / conj(-a^2 / s), not the real formula).  0 when
 * fwd is none of those. */
static int complex_scalar(scalar_fn fwd, int *rev)
{
    *rev = fwd == clt__rsub_scalar_in || fwd == clt__rdiv_scalar_in;
    if (fwd == clt__add_scalar_in)
        return 1;
    if (fwd == clt__sub_scalar_in || fwd == clt__rsub_scalar_in)
        return 2;
    if (fwd == clt__mul_scalar_in)
        return 3;
    if (fwd == clt__div_scalar_in || fwd == clt__rdiv_scalar_in)
        return 4;
    return 0;
}

/* save: 0 nothing, 1 a, 2 (a, out) */
static clt_status scalar_op(scalar_fn fwd, const char *fn, const char *name, clt__backward_fn bw,
                            int save, const clt_tensor *a, double s, clt_tensor **out)
{
    int rev = 0, cop = a && out && clt__dtype_is_complex(a->dtype) ? complex_scalar(fwd, &rev) : 0;
    if (a && clt__dtype_is_complex(a->dtype) &&
        (fwd == clt__pow_scalar_in || fwd == clt__rpow_scalar_in))
        return clt__complex_pow_scalar_rec(a, s, fwd == clt__rpow_scalar_in, out, fn);
    if (cop) {
        clt_tensor *s0 = NULL;
        *out = NULL;
        clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
        if (st == CLT_OK)
            st = clt__full(a->dev, clt__complex_part_dtype(a->dtype), 0, NULL, s, &s0);
        if (st == CLT_OK)
            st = clt__complex_binary_rec(cop - 1, rev ? s0 : a, rev ? a : s0, out, fn);
        clt_tensor_free(s0);
        return st;
    }
    clt_status st = fwd(fn, a, s, out);
    if (st != CLT_OK || bw == NULL)
        return st;
    const clt_tensor *sv[2] = {a, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, 1, &a, save, sv, &n);
    if (n)
        n->s[0] = s;
    if (bw == bw_add_s || bw == bw_rsub_s || bw == bw_mul_s || bw == bw_div_s ||
        bw == bw_rdiv_s || bw == bw_pow_s || bw == bw_rpow_s || bw == bw_zero)
        clt__twice(n);
    return st;
}

#define DEF_SCALAR(fname, name, bw, save)                                      \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, double s, \
                                  clt_tensor **out)                            \
    {                                                                          \
        return scalar_op(clt__##fname##_in, fn, name, bw, save, a, s, out);    \
    }                                                                          \
    clt_status clt_##fname(const clt_tensor *a, double s, clt_tensor **out)    \
    {                                                                          \
        return clt__##fname##_rec("clt_" #fname, a, s, out);                   \
    }

#define DEF_SCALAR_F32(fname, name, bw, save)                                  \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, double s, \
                                  clt_tensor **out)                            \
    {                                                                          \
        return scalar_op(clt__##fname##_in, fn, name, bw, save, a, s, out);    \
    }                                                                          \
    clt_status clt_##fname(const clt_tensor *a, double s, clt_tensor **out)    \
    {                                                                          \
        CLT__AUTOCAST("clt_" #fname, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),                  \
                      clt_##fname(CLT__AC(0), s, out));                        \
        return clt__##fname##_rec("clt_" #fname, a, s, out);                   \
    }

DEF_SCALAR(add_scalar, "AddBackward1", bw_add_s, 0)
DEF_SCALAR(sub_scalar, "SubBackward1", bw_add_s, 0)
DEF_SCALAR(rsub_scalar, "RsubBackward1", bw_rsub_s, 0)
DEF_SCALAR(mul_scalar, "MulBackward1", bw_mul_s, 0)
DEF_SCALAR(div_scalar, "DivBackward1", bw_div_s, 0)
/* torch's s / t is t.reciprocal() * s: on autocast's float32 list */
DEF_SCALAR_F32(rdiv_scalar, "DivBackward2", bw_rdiv_s, 2)
DEF_SCALAR_F32(pow_scalar, "PowBackward0", bw_pow_s, 1)
DEF_SCALAR_F32(rpow_scalar, "PowBackward2", bw_rpow_s, 2)
DEF_SCALAR(remainder_scalar, "RemainderBackward0", bw_add_s, 0)
DEF_SCALAR(fmod_scalar, "FmodBackward0", bw_add_s, 0)
DEF_SCALAR(floor_divide_scalar, "NotImplemented", bw_floor_divide, 0)
DEF_SCALAR(eq_scalar, NULL, NULL, 0)
DEF_SCALAR(ne_scalar, NULL, NULL, 0)
DEF_SCALAR(lt_scalar, NULL, NULL, 0)
DEF_SCALAR(le_scalar, NULL, NULL, 0)
DEF_SCALAR(gt_scalar, NULL, NULL, 0)
DEF_SCALAR(ge_scalar, NULL, NULL, 0)

clt_status clt_div_scalar_rounding(const clt_tensor *a, double s, clt_rounding_mode mode,
                                   clt_tensor **out)
{
    static const char fn[] = "clt_div_scalar_rounding";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    switch (mode) {
    case CLT_ROUNDING_NONE:
        return clt__div_scalar_rec(fn, a, s, out);
    case CLT_ROUNDING_TRUNC:
        return scalar_op(clt__trunc_divide_scalar_in, fn, "DivBackward3", bw_zero, 0, a,
                         s, out);
    case CLT_ROUNDING_FLOOR:
        return scalar_op(clt__floor_divide_scalar_in, fn, "DivBackward3", bw_zero, 0, a,
                         s, out);
    }
    return bad_rounding(mode, fn);
}

/* ---- unary ---------------------------------------------------------------------------- */

/* Formulas over one saved tensor (the input or the output): either a
 * gradient kernel of cl/elementwise.cl (n->i[0] indexes kernels[]) or a
 * plain op. */
static const char *const kernels[] = {"relu_bw", "abs_bw",   "tanh_bw",  "sigmoid_bw", "gelu_bw",
                                      "log1p_bw", "expm1_bw", "tan_bw",   "silu_bw",    "sin_bw",
                                      "cos_bw",   "sqrt_bw",  "rsqrt_bw"};
enum {
    K_RELU, K_ABS, K_TANH, K_SIGMOID, K_GELU, K_LOG1P, K_EXPM1, K_TAN, K_SILU, K_SIN, K_COS,
    K_SQRT, K_RSQRT
};

/* The kernels' formulas as recorded ops, for a pass that creates a graph:
 * relu's g where out > 0 (given torch's ThresholdBackwardBackward0 node,
 * clt__grad_node), tanh's g * (1 - out^2), sigmoid's
 * g * out * (1 - out), sqrt's g / (2 out), gelu's g * (cdf(x) + x pdf(x)),
 * abs's g * sign(x), sin's g * cos(x), cos's
 * -(g * sin(x)), log1p's g / (1 + x), expm1's g * (out + 1), silu's
 * g * s * (1 + x (1 - s)) with s = sigmoid(x), rsqrt's -g out^3 / 2,
 * tan's g * (1 + out^2). */
static clt_status kernel_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *u = NULL, *v = NULL, *w = NULL;
    const clt_tensor *y = S(0);
    switch (n->i[0]) {
    case K_RELU:
        CLT__TRY(clt__le_scalar_in(fn, y, 0.0, &t));
        CLT__TRY(clt__zero_where(t, g, &gin[0]));
        CLT__TRY(clt__grad_node("ThresholdBackwardBackward0", 1, &y, &gin[0]));
        break;
    case K_TANH:
        CLT__TRY(clt__mul_rec(fn, y, y, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__mul_rec(fn, g, u, &gin[0]));
        break;
    case K_SIGMOID:
        CLT__TRY(clt__rsub_scalar_rec(fn, y, 1.0, &t));
        CLT__TRY(clt__mul_rec(fn, y, t, &u));
        CLT__TRY(clt__mul_rec(fn, g, u, &gin[0]));
        break;
    case K_SQRT:
        CLT__TRY(clt__mul_scalar_rec(fn, y, 2.0, &t));
        CLT__TRY(clt__div_rec(fn, g, t, &gin[0]));
        break;
    case K_GELU: /* y is the input here */
        CLT__TRY(clt__mul_scalar_rec(fn, y, M_SQRT1_2, &t));
        CLT__TRY(clt__erf_rec(fn, t, &u));
        clt_tensor_free(t);
        CLT__TRY(clt__add_scalar_rec(fn, u, 1.0, &t));
        clt_tensor_free(u);
        CLT__TRY(clt__mul_scalar_rec(fn, t, 0.5, &u)); /* cdf */
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__mul_rec(fn, y, y, &t));
        CLT__TRY(clt__mul_scalar_rec(fn, t, -0.5, &v));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__exp_rec(fn, v, &t));
        clt_tensor_free(v);
        v = NULL;
        CLT__TRY(clt__mul_rec(fn, y, t, &v));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__mul_scalar_rec(fn, v, 0.39894228040143267794, &t)); /* x pdf */
        CLT__TRY(clt__add_rec(fn, u, t, &w));
        CLT__TRY(clt__mul_rec(fn, g, w, &gin[0]));
        break;
    case K_ABS:
        CLT__TRY(clt__sign_rec(fn, y, &t));
        CLT__TRY(clt__mul_rec(fn, g, t, &gin[0]));
        break;
    case K_SIN:
        CLT__TRY(clt__cos_rec(fn, y, &t));
        CLT__TRY(clt__mul_rec(fn, g, t, &gin[0]));
        break;
    case K_COS:
        CLT__TRY(clt__sin_rec(fn, y, &t));
        CLT__TRY(clt__mul_rec(fn, g, t, &u));
        CLT__TRY(clt__neg_rec(fn, u, &gin[0]));
        break;
    case K_LOG1P:
        CLT__TRY(clt__add_scalar_rec(fn, y, 1.0, &t));
        CLT__TRY(clt__div_rec(fn, g, t, &gin[0]));
        break;
    case K_EXPM1: /* y is the output */
        CLT__TRY(clt__add_scalar_rec(fn, y, 1.0, &t));
        CLT__TRY(clt__mul_rec(fn, g, t, &gin[0]));
        break;
    case K_RSQRT: /* y is the output */
        CLT__TRY(clt__mul_rec(fn, y, y, &t));
        CLT__TRY(clt__mul_rec(fn, t, y, &u));
        CLT__TRY(clt__mul_scalar_rec(fn, u, -0.5, &v));
        CLT__TRY(clt__mul_rec(fn, g, v, &gin[0]));
        break;
    case K_TAN: /* y is the output */
        CLT__TRY(clt__mul_rec(fn, y, y, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__mul_rec(fn, g, u, &gin[0]));
        break;
    case K_SILU:
        CLT__TRY(clt__sigmoid_rec(fn, y, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__mul_rec(fn, y, u, &v));
        clt_tensor_free(u);
        u = NULL;
        CLT__TRY(clt__add_scalar_rec(fn, v, 1.0, &u));
        CLT__TRY(clt__mul_rec(fn, t, u, &w));
        CLT__TRY(clt__mul_rec(fn, g, w, &gin[0]));
        break;
    default:
        st = clt__error(CLT_ERR_INTERNAL, "%s: no recorded formula for %s", fn, n->name);
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(v);
    clt_tensor_free(w);
    return st;
}

/* A node of one gradient kernel (table[n->i[0]], over the saved tensor),
 * or its formula as recorded ops (twice) in a pass that creates a graph. */
static clt_status kernel_or_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin,
                                  const char *const *table, clt__backward_fn twice)
{
    if (n->twice && clt__creating_graph())
        return twice(n, g, gin);
    return clt__grad_kernel(table[n->i[0]], g, S(0), &gin[0]);
}

static clt_status bw_kernel(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return kernel_or_twice(n, g, gin, kernels, kernel_twice);
}

static clt_status bw_neg(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__neg_rec("clt_backward", g, &gin[0]);
}

/* exp: g * out (saved out) */
static clt_status bw_exp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__mul_rec("clt_backward", g, S(0), &gin[0]);
}

/* log: g / a (saved a) */
static clt_status bw_log(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__div_rec("clt_backward", g, S(0), &gin[0]);
}

/* reciprocal: -g * out^2 (saved out), PyTorch's formula, one kernel. */
static clt_status bw_reciprocal(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (!(n->twice && clt__creating_graph()))
        return clt__grad_kernel("reciprocal_bw", g, S(0), &gin[0]);
    clt_tensor *t = NULL, *u = NULL; /* -(g * out^2), recorded */
    clt_status st = clt__mul_rec("clt_backward", S(0), S(0), &t);
    if (st == CLT_OK)
        st = clt__mul_rec("clt_backward", g, t, &u);
    if (st == CLT_OK)
        st = clt__neg_rec("clt_backward", u, &gin[0]);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

/* One gradient kernel of cl/elementwise.cl over the saved input or output
 * (n->i[0] indexes math_kernels[]), PyTorch's formulas: asin's
 * g * rsqrt(1 - x^2) ... exp2's g * out * ln 2 (see the kernel file). */
static const char *const math_kernels[] = {
    "asin_bw", "acos_bw", "atan_bw", "sinh_bw",   "cosh_bw", "asinh_bw", "acosh_bw",
    "atanh_bw", "erf_bw", "erfc_bw", "erfinv_bw", "log2_bw", "log10_bw", "exp2_bw"};
enum {
    M_ASIN, M_ACOS, M_ATAN, M_SINH, M_COSH, M_ASINH, M_ACOSH, M_ATANH, M_ERF, M_ERFC, M_ERFINV,
    M_LOG2, M_LOG10, M_EXP2
};

/* The kernels' formulas as recorded ops (PyTorch's derivatives.yaml), for a
 * pass that creates a graph: x is the saved input, or the output for
 * erfinv and exp2. */
static clt_status math_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *u = NULL, *v = NULL;
    const clt_tensor *x = S(0);
    switch (n->i[0]) {
    case M_ASIN: /* g * rsqrt(1 - x^2), acos's negated */
    case M_ACOS:
        CLT__TRY(clt__mul_rec(fn, x, x, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0, &u));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(clt__rsqrt_rec(fn, u, &t));
        if (n->i[0] == M_ACOS) {
            CLT__TRY(clt__mul_rec(fn, g, t, &v));
            CLT__TRY(clt__neg_rec(fn, v, &gin[0]));
        } else {
            CLT__TRY(clt__mul_rec(fn, g, t, &gin[0]));
        }
        break;
    case M_ATAN: /* g / (x^2 + 1) */
        CLT__TRY(clt__mul_rec(fn, x, x, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__div_rec(fn, g, u, &gin[0]));
        break;
    case M_SINH: /* g * cosh(x) */
        CLT__TRY(clt__cosh_rec(fn, x, &t));
        CLT__TRY(clt__mul_rec(fn, g, t, &gin[0]));
        break;
    case M_COSH: /* g * sinh(x) */
        CLT__TRY(clt__sinh_rec(fn, x, &t));
        CLT__TRY(clt__mul_rec(fn, g, t, &gin[0]));
        break;
    case M_ASINH: /* g * rsqrt(x^2 + 1), acosh's rsqrt(x^2 - 1) */
    case M_ACOSH:
        CLT__TRY(clt__mul_rec(fn, x, x, &t));
        CLT__TRY(clt__add_scalar_rec(fn, t, n->i[0] == M_ASINH ? 1.0 : -1.0, &u));
        CLT__TRY(clt__rsqrt_rec(fn, u, &v));
        CLT__TRY(clt__mul_rec(fn, g, v, &gin[0]));
        break;
    case M_ATANH: /* g * (1 / (1 - x^2)) */
        CLT__TRY(clt__mul_rec(fn, x, x, &t));
        CLT__TRY(clt__rsub_scalar_rec(fn, t, 1.0, &u));
        CLT__TRY(clt__rdiv_scalar_rec(fn, u, 1.0, &v));
        CLT__TRY(clt__mul_rec(fn, g, v, &gin[0]));
        break;
    case M_ERF: /* +-2 / sqrt(pi) * exp(-x^2) * g */
    case M_ERFC:
    case M_ERFINV: /* sqrt(pi) / 2 * exp(y^2) * g */
        CLT__TRY(clt__mul_rec(fn, x, x, &t));
        if (n->i[0] != M_ERFINV) {
            CLT__TRY(clt__neg_rec(fn, t, &u));
            clt_tensor_free(t);
            t = u;
            u = NULL;
        }
        CLT__TRY(clt__exp_rec(fn, t, &u));
        CLT__TRY(clt__mul_scalar_rec(fn, u,
                                     n->i[0] == M_ERF    ? 1.12837916709551257390
                                     : n->i[0] == M_ERFC ? -1.12837916709551257390
                                                         : 0.88622692545275801365,
                                     &v));
        CLT__TRY(clt__mul_rec(fn, v, g, &gin[0]));
        break;
    case M_LOG2: /* g / (x * ln 2), log10's g / (x * ln 10) */
    case M_LOG10:
        CLT__TRY(clt__mul_scalar_rec(fn, x, n->i[0] == M_LOG2 ? M_LN2 : M_LN10, &t));
        CLT__TRY(clt__div_rec(fn, g, t, &gin[0]));
        break;
    case M_EXP2: /* g * out * ln 2 */
        CLT__TRY(clt__mul_rec(fn, g, x, &t));
        CLT__TRY(clt__mul_scalar_rec(fn, t, M_LN2, &gin[0]));
        break;
    default:
        st = clt__error(CLT_ERR_INTERNAL, "%s: no recorded formula for %s", fn, n->name);
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(v);
    return st;
}

static clt_status bw_math(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return kernel_or_twice(n, g, gin, math_kernels, math_twice);
}

typedef clt_status (*unary_fn)(const char *, const clt_tensor *, clt_tensor **);

/* The op of the complex elementary functions (clt__complex_math_rec) that
 * fwd computes for real tensors, -1 for none. */
static int complex_math_op(unary_fn fwd)
{
    static const struct {
        unary_fn fwd;
        int op;
    } ops[] = {{clt__exp_in, CLT__CMATH_EXP},     {clt__log_in, CLT__CMATH_LOG},
               {clt__sqrt_in, CLT__CMATH_SQRT},   {clt__sinh_in, CLT__CMATH_SINH},
               {clt__cosh_in, CLT__CMATH_COSH},   {clt__tanh_in, CLT__CMATH_TANH},
               {clt__sin_in, CLT__CMATH_SIN},     {clt__cos_in, CLT__CMATH_COS},
               {clt__tan_in, CLT__CMATH_TAN},     {clt__asinh_in, CLT__CMATH_ASINH},
               {clt__asin_in, CLT__CMATH_ASIN},   {clt__acos_in, CLT__CMATH_ACOS},
               {clt__acosh_in, CLT__CMATH_ACOSH}, {clt__atanh_in, CLT__CMATH_ATANH},
               {clt__atan_in, CLT__CMATH_ATAN},   {clt__log2_in, CLT__CMATH_LOG2},
               {clt__log10_in, CLT__CMATH_LOG10}, {clt__log1p_in, CLT__CMATH_LOG1P},
               {clt__expm1_in, CLT__CMATH_EXPM1}, {clt__rsqrt_in, CLT__CMATH_RSQRT},
               {clt__sigmoid_in, CLT__CMATH_SIGMOID}};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (ops[k].fwd == fwd)
            return ops[k].op;
    return -1;
}

/* save: 0 nothing, 1 the input, 2 the output; kernel: index in kernels[] */
static clt_status unary(unary_fn fwd, const char *fn, const char *name, clt__backward_fn bw,
                        int save, int kernel, const clt_tensor *a, clt_tensor **out)
{
    if (a && clt__dtype_is_complex(a->dtype) && complex_math_op(fwd) >= 0)
        return clt__complex_math_rec(complex_math_op(fwd), a, out, fn);
    if (a && fwd == clt__abs_in && clt__dtype_is_complex(a->dtype))
        return clt__complex_abs_rec(a, out, fn);
    if (a && out && fwd == clt__reciprocal_in && clt__dtype_is_complex(a->dtype)) {
        clt_tensor *one = NULL; /* 1 / z, recorded */
        *out = NULL;
        clt_status st = clt__check_dtype(a->dev, a->dtype, fn);
        if (st == CLT_OK)
            st = clt__full(a->dev, clt__complex_part_dtype(a->dtype), 0, NULL, 1.0, &one);
        if (st == CLT_OK)
            st = clt__complex_binary_rec(3, one, a, out, fn);
        clt_tensor_free(one);
        return st;
    }
    clt_status st = fwd(fn, a, out);
    if (st != CLT_OK || bw == NULL)
        return st;
    const clt_tensor *sv = save == 2 ? *out : a;
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, 1, &a, save ? 1 : 0, &sv, &n);
    if (n)
        n->i[0] = kernel;
    if (bw == bw_kernel || bw == bw_neg || bw == bw_exp || bw == bw_log || bw == bw_zero ||
        bw == bw_math || bw == bw_add_s || bw == bw_reciprocal)
        clt__twice(n);
    return st;
}

#define DEF_UNARY(fname, name, bw, save, kernel)                                        \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, clt_tensor **out) \
    {                                                                                   \
        return unary(clt__##fname##_in, fn, name, bw, save, kernel, a, out);            \
    }                                                                                   \
    clt_status clt_##fname(const clt_tensor *a, clt_tensor **out)                       \
    {                                                                                   \
        return clt__##fname##_rec("clt_" #fname, a, out);                               \
    }

#define DEF_UNARY_F32(fname, name, bw, save, kernel)                                    \
    clt_status clt__##fname##_rec(const char *fn, const clt_tensor *a, clt_tensor **out) \
    {                                                                                   \
        return unary(clt__##fname##_in, fn, name, bw, save, kernel, a, out);            \
    }                                                                                   \
    clt_status clt_##fname(const clt_tensor *a, clt_tensor **out)                       \
    {                                                                                   \
        CLT__AUTOCAST("clt_" #fname, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),             \
                      clt_##fname(CLT__AC(0), out));                                    \
        return clt__##fname##_rec("clt_" #fname, a, out);                               \
    }

DEF_UNARY(neg, "NegBackward0", bw_neg, 0, 0)
DEF_UNARY(abs, "AbsBackward0", bw_kernel, 1, K_ABS)
DEF_UNARY(relu, "ReluBackward0", bw_kernel, 2, K_RELU)
DEF_UNARY_F32(exp, "ExpBackward0", bw_exp, 2, 0)
DEF_UNARY_F32(log, "LogBackward0", bw_log, 1, 0)
DEF_UNARY(sqrt, "SqrtBackward0", bw_kernel, 2, K_SQRT)
DEF_UNARY_F32(rsqrt, "RsqrtBackward0", bw_kernel, 2, K_RSQRT)
DEF_UNARY(sin, "SinBackward0", bw_kernel, 1, K_SIN)
DEF_UNARY(cos, "CosBackward0", bw_kernel, 1, K_COS)
DEF_UNARY(tanh, "TanhBackward0", bw_kernel, 2, K_TANH)
DEF_UNARY(sigmoid, "SigmoidBackward0", bw_kernel, 2, K_SIGMOID)
DEF_UNARY(gelu, "GeluBackward0", bw_kernel, 1, K_GELU)
DEF_UNARY_F32(log1p, "Log1PBackward0", bw_kernel, 1, K_LOG1P)
DEF_UNARY_F32(expm1, "Expm1Backward0", bw_kernel, 2, K_EXPM1)
DEF_UNARY_F32(tan, "TanBackward0", bw_kernel, 2, K_TAN)
DEF_UNARY(sign, "SignBackward0", bw_zero, 0, 0)

/* floor, ceil, round and trunc have zero gradients, frac passes g (as
 * bw_add_s does), reciprocal's is -g * out^2 (PyTorch's formula, one
 * kernel); the predicates and logical ops give bool: no node. */
DEF_UNARY(floor, "FloorBackward0", bw_zero, 0, 0)
DEF_UNARY(ceil, "CeilBackward0", bw_zero, 0, 0)
DEF_UNARY(round, "RoundBackward0", bw_zero, 0, 0)
DEF_UNARY(trunc, "TruncBackward0", bw_zero, 0, 0)
DEF_UNARY(frac, "FracBackward0", bw_add_s, 0, 0)
DEF_UNARY_F32(reciprocal, "ReciprocalBackward0", bw_reciprocal, 2, 0)
DEF_UNARY(isnan, NULL, NULL, 0, 0)
DEF_UNARY(isinf, NULL, NULL, 0, 0)
DEF_UNARY(isfinite, NULL, NULL, 0, 0)
DEF_BINARY(logical_and, NULL, NULL, 0, 0)
DEF_BINARY(logical_or, NULL, NULL, 0, 0)
DEF_BINARY(logical_xor, NULL, NULL, 0, 0)

clt_status clt_round_decimals(const clt_tensor *a, int64_t decimals, clt_tensor **out)
{
    clt_status st = clt__round_decimals_in("clt_round_decimals", a, decimals, out);
    clt__node *n = NULL;
    st = clt__record(st, out, "RoundBackward1", bw_zero, 1, &a, 0, NULL, &n);
    clt__twice(n);
    return st;
}
DEF_UNARY(silu, "SiluBackward0", bw_kernel, 1, K_SILU)
DEF_UNARY(logical_not, NULL, NULL, 0, 0)

/* softplus: n->s[0] beta, n->s[1] threshold; saved: a.  PyTorch's
 * softplus_backward: g where beta * a > threshold, else g * sigmoid(beta * a). */
static clt_status bw_softplus(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (!clt__creating_graph())
        return clt__grad_kernel_s("softplus_bw", g, S(0), 2, n->s, &gin[0]);
    clt_status st = CLT_OK;
    clt_tensor *z = NULL, *sg = NULL, *t = NULL, *mask = NULL, *zc = NULL, *zs = NULL;
    CLT__TRY(clt__mul_scalar_rec("clt_backward", S(0), n->s[0], &z));
    /* sigmoid of z below the threshold, of z's constant value from it on:
     * torch's softplus_double_backward masks with z < threshold */
    CLT__TRY(clt__ge_scalar_in("clt_backward", z, n->s[1], &mask));
    CLT__TRY(clt__alias(z, &zc));
    CLT__TRY(where_g(mask, zc, z, &zs));
    CLT__TRY(clt__sigmoid_rec("clt_backward", zs, &sg));
    CLT__TRY(clt__mul_rec("clt_backward", g, sg, &t));
    clt_tensor_free(mask);
    mask = NULL;
    CLT__TRY(clt__gt_scalar_in("clt_backward", z, n->s[1], &mask));
    CLT__TRY(where_g(mask, g, t, &gin[0]));
done:
    clt_tensor_free(z);
    clt_tensor_free(sg);
    clt_tensor_free(t);
    clt_tensor_free(mask);
    clt_tensor_free(zc);
    clt_tensor_free(zs);
    return st;
}

clt_status clt__softplus_rec(const char *fn, const clt_tensor *a, double beta, double threshold,
                             clt_tensor **out)
{
    clt_status st = clt__softplus_in(fn, a, beta, threshold, out);
    clt__node *n = NULL;
    st = clt__record(st, out, "SoftplusBackward0", bw_softplus, 1, &a, 1, &a, &n);
    if (n) {
        n->s[0] = beta;
        n->s[1] = threshold;
    }
    clt__twice(n);
    return st;
}

clt_status clt_softplus(const clt_tensor *a, double beta, double threshold, clt_tensor **out)
{
    CLT__AUTOCAST("clt_softplus", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_softplus(CLT__AC(0), beta, threshold, out));
    return clt__softplus_rec("clt_softplus", a, beta, threshold, out);
}

/* leaky_relu: n->s[0] negative_slope; saved: a.  Its backward kernel is
 * PyTorch's leaky_relu_backward on the input (elu's is in
 * grad_activation.c). */
static clt_status bw_leaky_relu(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (!clt__creating_graph())
        return clt__grad_kernel_s("leaky_relu_bw", g, S(0), 1, n->s, &gin[0]);
    /* g * where(a > 0, 1, slope): the factor is a constant */
    clt_status st = CLT_OK;
    clt_tensor *pos = NULL, *one = NULL, *slope = NULL, *f = NULL;
    CLT__TRY(clt__gt_scalar_in("clt_backward", S(0), 0.0, &pos));
    CLT__TRY(clt__full(g->dev, g->dtype, 0, NULL, 1.0, &one));
    CLT__TRY(clt__full(g->dev, g->dtype, 0, NULL, n->s[0], &slope));
    CLT__TRY(clt__where_in("clt_backward", pos, one, slope, &f));
    CLT__TRY(clt__mul_rec("clt_backward", g, f, &gin[0]));
    CLT__TRY(clt__grad_node("LeakyReluBackwardBackward0", 1, (const clt_tensor *[]){S(0)},
                            &gin[0]));
done:
    clt_tensor_free(pos);
    clt_tensor_free(one);
    clt_tensor_free(slope);
    clt_tensor_free(f);
    return st;
}

clt_status clt__leaky_relu_rec(const char *fn, const clt_tensor *a, double negative_slope,
                               clt_tensor **out)
{
    clt_status st = clt__leaky_relu_in(fn, a, negative_slope, out);
    clt__node *n = NULL;
    st = clt__record(st, out, "LeakyReluBackward0", bw_leaky_relu, 1, &a, 1, &a, &n);
    if (n)
        n->s[0] = negative_slope;
    clt__twice(n);
    return st;
}

clt_status clt__elu_rec(const char *fn, const clt_tensor *a, double alpha, clt_tensor **out)
{
    return clt__act_rec(fn, CLT__ACT_ELU, a, &alpha, out);
}

clt_status clt_leaky_relu(const clt_tensor *a, double negative_slope, clt_tensor **out)
{
    return clt__leaky_relu_rec("clt_leaky_relu", a, negative_slope, out);
}

clt_status clt_elu(const clt_tensor *a, double alpha, clt_tensor **out)
{
    return clt__elu_rec("clt_elu", a, alpha, out);
}

/* ---- math functions (torch.asin ... torch.addcdiv) ---------------------------------- */

DEF_UNARY_F32(asin, "AsinBackward0", bw_math, 1, M_ASIN)
DEF_UNARY_F32(acos, "AcosBackward0", bw_math, 1, M_ACOS)
DEF_UNARY(atan, "AtanBackward0", bw_math, 1, M_ATAN)
DEF_UNARY_F32(sinh, "SinhBackward0", bw_math, 1, M_SINH)
DEF_UNARY_F32(cosh, "CoshBackward0", bw_math, 1, M_COSH)
DEF_UNARY(asinh, "AsinhBackward0", bw_math, 1, M_ASINH)
DEF_UNARY(acosh, "AcoshBackward0", bw_math, 1, M_ACOSH)
DEF_UNARY(atanh, "AtanhBackward0", bw_math, 1, M_ATANH)
DEF_UNARY(erf, "ErfBackward0", bw_math, 1, M_ERF)
DEF_UNARY(erfc, "ErfcBackward0", bw_math, 1, M_ERFC)
DEF_UNARY_F32(erfinv, "ErfinvBackward0", bw_math, 2, M_ERFINV)
DEF_UNARY_F32(log2, "Log2Backward0", bw_math, 1, M_LOG2)
DEF_UNARY_F32(log10, "Log10Backward0", bw_math, 1, M_LOG10)
DEF_UNARY(exp2, "Exp2Backward0", bw_math, 2, M_EXP2)

/* torch.square is pow(a, 2): PowBackward0, g * 2 * a^1 (bw_pow_s). */
clt_status clt__square_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    if (a && out && clt__dtype_is_complex(a->dtype)) /* z * z, recorded */
        return clt__complex_binary_rec(2, a, a, out, fn);
    clt__node *n = NULL;
    clt_status st = clt__square_in(fn, a, out);
    st = clt__record(st, out, "PowBackward0", bw_pow_s, 1, &a, 1, &a, &n);
    if (n)
        n->s[0] = 2.0;
    clt__twice(n); /* pow_scalar's formula, recorded */
    return st;
}

clt_status clt_square(const clt_tensor *a, clt_tensor **out)
{
    return clt__square_rec("clt_square", a, out);
}

/* logit: saved a; n->s[0] eps, n->s[1] 1 when eps was given and not
 * negative (a NaN eps counts as given: PyTorch's vectorised backward then
 * gives 0 everywhere), n->i[0] 1 when eps was given.  In a pass that
 * creates a graph PyTorch's infinitely_differentiable_logit_backward,
 * recorded: g / (a (1 - a)) where eps <= a <= 1 - eps, 0 elsewhere (any
 * eps given, a negative one too, as there), or where 0 <= a <= 1 and NaN
 * elsewhere without eps. */
static clt_status bw_logit(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (!clt__creating_graph())
        return clt__grad_kernel_s("logit_bw", g, S(0), 2, n->s, &gin[0]);
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    const clt_tensor *a = S(0);
    double lo = n->i[0] ? n->s[0] : 0.0, hi = n->i[0] ? 1.0 - n->s[0] : 1.0;
    clt_tensor *m0 = NULL, *m1 = NULL, *in = NULL, *t = NULL, *u = NULL, *q = NULL,
               *other = NULL;
    CLT__TRY(clt__ge_scalar_in(fn, a, lo, &m0));
    CLT__TRY(clt__le_scalar_in(fn, a, hi, &m1));
    CLT__TRY(clt__logical_and_in(fn, m0, m1, &in));
    CLT__TRY(clt__rsub_scalar_rec(fn, a, 1.0, &t));
    CLT__TRY(clt__mul_rec(fn, a, t, &u));
    CLT__TRY(clt__div_rec(fn, g, u, &q));
    CLT__TRY(clt__full(g->dev, q->dtype, 0, NULL, n->i[0] ? 0.0 : NAN, &other));
    CLT__TRY(where_g(in, q, other, &gin[0]));
done:
    clt_tensor_free(m0);
    clt_tensor_free(m1);
    clt_tensor_free(in);
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(q);
    clt_tensor_free(other);
    return st;
}

clt_status clt_logit(const clt_tensor *a, const double *eps, clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = clt__logit_in("clt_logit", a, eps, out);
    st = clt__record(st, out, "LogitBackward0", bw_logit, 1, &a, 1, &a, &n);
    if (n) {
        n->s[0] = eps ? *eps : 0.0;
        n->s[1] = eps && !(*eps < 0);
        n->i[0] = eps != NULL;
    }
    clt__twice(n);
    return st;
}

/* nan_to_num: g * isfinite(a), PyTorch's formula (an infinite g at a
 * replaced element gives NaN there too), recorded in a pass that creates
 * a graph (clt__twice). */
static clt_status bw_nan_to_num(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *fin = NULL;
    clt_status st = clt__isfinite_in("clt_backward", S(0), &fin);
    if (st == CLT_OK)
        st = clt__mul_rec("clt_backward", g, fin, &gin[0]);
    clt_tensor_free(fin);
    return st;
}

clt_status clt_nan_to_num(const clt_tensor *a, double nan_value, const double *posinf,
                          const double *neginf, clt_tensor **out)
{
    clt_status st = clt__nan_to_num_in("clt_nan_to_num", a, nan_value, posinf, neginf, out);
    clt__node *n = NULL;
    st = clt__record(st, out, "NanToNumBackward0", bw_nan_to_num, 1, &a, 1, &a, &n);
    clt__twice(n);
    return st;
}

/* saved: a, b.  atan2: g * b / (a^2 + b^2) and g * -a / (a^2 + b^2). */
static clt_status bw_atan2(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *a2 = NULL, *b2 = NULL, *den = NULL, *q = NULL, *t = NULL;
    CLT__TRY(clt__mul_rec("clt_backward", S(0), S(0), &a2));
    CLT__TRY(clt__mul_rec("clt_backward", S(1), S(1), &b2));
    CLT__TRY(clt__add_rec("clt_backward", a2, b2, &den));
    CLT__TRY(clt__div_rec("clt_backward", g, den, &q));
    if (CLT__NEED(n, 0))
        CLT__TRY(clt__mul_rec("clt_backward", q, S(1), &gin[0]));
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__mul_rec("clt_backward", q, S(0), &t));
        CLT__TRY(clt__neg_rec("clt_backward", t, &gin[1]));
    }
done:
    clt_tensor_free(a2);
    clt_tensor_free(b2);
    clt_tensor_free(den);
    clt_tensor_free(q);
    clt_tensor_free(t);
    return st;
}

/* saved: a, b, out.  hypot: g * a / out and g * b / out. */
static clt_status bw_hypot(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *q = NULL;
    CLT__TRY(clt__div_rec("clt_backward", g, S(2), &q));
    for (int k = 0; k < 2; k++)
        if (CLT__NEED(n, k))
            CLT__TRY(clt__mul_rec("clt_backward", q, S(k), &gin[k]));
done:
    clt_tensor_free(q);
    return st;
}

/* saved: a, b, out.  copysign: g * (out / a), 0 where a == 0, for a (as
 * PyTorch's copysign_tensor_self_backward); zeros for b. */
static clt_status bw_copysign(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *ratio = NULL, *mask = NULL, *r0 = NULL;
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__div_rec("clt_backward", S(2), S(0), &ratio));
        CLT__TRY(clt__eq_scalar_in("clt_backward", S(0), 0.0, &mask));
        CLT__TRY(clt__zero_where(mask, ratio, &r0));
        CLT__TRY(clt__mul_rec("clt_backward", g, r0, &gin[0]));
    }
    if (CLT__NEED(n, 1))
        CLT__TRY(clt__full(g->dev, g->dtype, g->ndim, g->shape, 0.0, &gin[1]));
done:
    clt_tensor_free(ratio);
    clt_tensor_free(mask);
    clt_tensor_free(r0);
    return st;
}

/* saved: a, b.  xlogy, PyTorch 1.13's formulas: xlogy(g, b) with 0 where
 * a == 0 and b <= 0, for a; g * a / b for b; recorded in a pass that
 * creates a graph (clt__twice). */
static clt_status bw_xlogy(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *az = NULL, *bn = NULL, *mask = NULL;
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__creating_graph() ? clt_xlogy(g, S(1), &t) /* recorded */
                                       : clt__xlogy_in("clt_backward", g, S(1), &t));
        CLT__TRY(clt__eq_scalar_in("clt_backward", S(0), 0.0, &az));
        CLT__TRY(clt__le_scalar_in("clt_backward", S(1), 0.0, &bn));
        CLT__TRY(clt__logical_and_in("clt_backward", az, bn, &mask));
        CLT__TRY(clt__zero_where(mask, t, &gin[0]));
        clt_tensor_free(t);
        t = NULL;
    }
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__mul_rec("clt_backward", g, S(0), &t));
        CLT__TRY(clt__div_rec("clt_backward", t, S(1), &gin[1]));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(az);
    clt_tensor_free(bn);
    clt_tensor_free(mask);
    return st;
}

DEF_BINARY_PROMOTE(atan2, "Atan2Backward0", bw_atan2, 1, 0)
DEF_BINARY(hypot, "HypotBackward0", bw_hypot, 3, 0)
DEF_BINARY(copysign, "CopysignBackward0", bw_copysign, 3, 0)
DEF_BINARY(xlogy, "XlogyBackward0", bw_xlogy, 1, 0)

/* lerp: g * (1 - w) for start and g * w for end; with a tensor weight
 * (saved: start, end, weight) g * (end - start) for it.  A scalar weight
 * is n->s[0]. */
static clt_status bw_lerp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *d = NULL;
    bool scalar = n->nin == 2;
    if (CLT__NEED(n, 0)) {
        if (scalar)
            CLT__TRY(clt__mul_scalar_rec("clt_backward", g, 1.0 - n->s[0], &gin[0]));
        else {
            CLT__TRY(clt__rsub_scalar_rec("clt_backward", S(2), 1.0, &t));
            CLT__TRY(clt__mul_rec("clt_backward", g, t, &gin[0]));
        }
    }
    if (CLT__NEED(n, 1))
        CLT__TRY(scalar ? clt__mul_scalar_rec("clt_backward", g, n->s[0], &gin[1])
                        : clt__mul_rec("clt_backward", g, S(2), &gin[1]));
    if (!scalar && CLT__NEED(n, 2)) {
        CLT__TRY(clt__sub_rec("clt_backward", S(1), S(0), &d));
        CLT__TRY(clt__mul_rec("clt_backward", g, d, &gin[2]));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(d);
    return st;
}

clt_status clt_lerp(const clt_tensor *start, const clt_tensor *end, const clt_tensor *weight,
                    clt_tensor **out)
{
    clt_status st = clt__lerp_in("clt_lerp", start, end, weight, out);
    const clt_tensor *in[3] = {start, end, weight};
    clt__node *n = NULL;
    st = clt__record(st, out, "LerpBackward1", bw_lerp, 3, in, 3, in, &n);
    clt__twice(n); /* recorded formulas */
    return st;
}

clt_status clt_lerp_scalar(const clt_tensor *start, const clt_tensor *end, double weight,
                           clt_tensor **out)
{
    clt_status st = clt__lerp_scalar_in("clt_lerp_scalar", start, end, weight, out);
    const clt_tensor *in[2] = {start, end};
    clt__node *n = NULL;
    st = clt__record(st, out, "LerpBackward0", bw_lerp, 2, in, 0, NULL, &n);
    if (n)
        n->s[0] = weight;
    clt__twice(n);
    return st;
}

/* addcmul and addcdiv: saved a, t1, t2; n->s[0] value, n->i[0] 1 for
 * addcdiv.  PyTorch's formulas: g for a; addcmul g * t2 * value and
 * g * t1 * value; addcdiv g * value / t2 and -g * value * t1 / (t2 * t2). */
static clt_status bw_addc(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *u = NULL, *sq = NULL;
    double v = n->s[0];
    if (CLT__NEED(n, 0))
        CLT__TRY(clt__alias_grad(g, &gin[0]));
    if (!n->i[0]) {
        for (int k = 1; k < 3; k++) {
            if (!CLT__NEED(n, k))
                continue;
            CLT__TRY(clt__mul_rec("clt_backward", g, S(3 - k), &t));
            CLT__TRY(clt__mul_scalar_rec("clt_backward", t, v, &gin[k]));
            clt_tensor_free(t);
            t = NULL;
        }
        goto done;
    }
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__mul_scalar_rec("clt_backward", g, v, &t));
        CLT__TRY(clt__div_rec("clt_backward", t, S(2), &gin[1]));
        clt_tensor_free(t);
        t = NULL;
    }
    if (CLT__NEED(n, 2)) {
        CLT__TRY(clt__mul_scalar_rec("clt_backward", g, -v, &t));
        CLT__TRY(clt__mul_rec("clt_backward", t, S(1), &u));
        CLT__TRY(clt__mul_rec("clt_backward", S(2), S(2), &sq));
        CLT__TRY(clt__div_rec("clt_backward", u, sq, &gin[2]));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(u);
    clt_tensor_free(sq);
    return st;
}

static clt_status addc(clt_status st, const char *name, int div, const clt_tensor *a,
                       const clt_tensor *t1, const clt_tensor *t2, double value, clt_tensor **out)
{
    const clt_tensor *in[3] = {a, t1, t2};
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw_addc, 3, in, 3, in, &n);
    if (n) {
        n->s[0] = value;
        n->i[0] = div;
    }
    clt__twice(n); /* recorded formulas */
    return st;
}

clt_status clt_addcmul(const clt_tensor *a, const clt_tensor *t1, const clt_tensor *t2,
                       double value, clt_tensor **out)
{
    CLT__AUTOCAST("clt_addcmul", CLT__AC_CUDA(CLT__AC_PROMOTE), 3, (a, t1, t2),
                  clt_addcmul(CLT__AC(0), CLT__AC(1), CLT__AC(2), value, out));
    return addc(clt__addcmul_in("clt_addcmul", a, t1, t2, value, out), "AddcmulBackward0", 0, a,
                t1, t2, value, out);
}

clt_status clt_addcdiv(const clt_tensor *a, const clt_tensor *t1, const clt_tensor *t2,
                       double value, clt_tensor **out)
{
    CLT__AUTOCAST("clt_addcdiv", CLT__AC_CUDA(CLT__AC_PROMOTE), 3, (a, t1, t2),
                  clt_addcdiv(CLT__AC(0), CLT__AC(1), CLT__AC(2), value, out));
    return addc(clt__addcdiv_in("clt_addcdiv", a, t1, t2, value, out), "AddcdivBackward0", 1, a,
                t1, t2, value, out);
}
