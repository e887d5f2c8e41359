/* grad_norm.c: the vector norms of reduce.h (torch.linalg.vector_norm,
 * F.normalize, F.cosine_similarity), composed from the plain ops, with the
 * norm's gradient as PyTorch's norm_backward; and the recorded fused row
 * normalisation of LayerNorm and GroupNorm (torch's native_layer_norm and
 * its NativeLayerNormBackward0). */
#include <math.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* The sum (ext 0), max (1) or min (-1) of t over dim, or over every element
 * when dim < 0. */
static clt_status over(const clt_tensor *t, int ext, int dim, int keepdim, clt_tensor **out,
                       const char *fn)
{
    if (dim < 0)
        return ext == 0 ? clt__sum(t, out, fn) : ext > 0 ? clt__max(t, out, fn)
                                                          : clt__min(t, out, fn);
    if (ext == 0)
        return clt__sum_dim(t, dim, keepdim, out, fn);
    return ext > 0 ? clt__max_dim(t, dim, keepdim, out, NULL, fn)
                   : clt__min_dim(t, dim, keepdim, out, NULL, fn);
}

/* The ord-norm of a over dim (every element when dim < 0), not recorded;
 * a checked already. */
static clt_status norm_forward(const clt_tensor *a, double ord, int dim, int keepdim,
                               clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *u = NULL;
    if (clt__dtype_is_half(a->dtype)) {
        /* In float32 and rounded once, as torch's GPU kernels accumulate:
         * the squares of half values past 256 overflow half, and a sum
         * of 4096 squares of 10 does too. */
        CLT__TRY(clt__to_dtype(a, CLT_FLOAT32, &t, fn));
        CLT__TRY(norm_forward(t, ord, dim, keepdim, &u, fn));
        CLT__TRY(clt__to_dtype(u, a->dtype, out, fn));
        goto done;
    }
    if (ord == 2) {
        CLT__TRY(clt__mul_in(fn, a, a, &t));
        CLT__TRY(over(t, 0, dim, keepdim, &u, fn));
        CLT__TRY(clt__sqrt_in(fn, u, out));
    } else if (ord == 0) {
        /* NaN != 0: counted, as in PyTorch. */
        CLT__TRY(clt__ne_scalar_in(fn, a, 0.0, &t));
        CLT__TRY(over(t, 0, dim, keepdim, &u, fn));
        CLT__TRY(clt__to_dtype(u, a->dtype, out, fn));
    } else if (ord == 1 || isinf(ord)) {
        CLT__TRY(clt__abs_in(fn, a, &t));
        CLT__TRY(over(t, ord == 1 ? 0 : ord > 0 ? 1 : -1, dim, keepdim, out, fn));
    } else {
        CLT__TRY(clt__abs_in(fn, a, &t));
        CLT__TRY(clt__pow_scalar_in(fn, t, ord, &u));
        clt_tensor_free(t);
        t = NULL;
        CLT__TRY(over(u, 0, dim, keepdim, &t, fn));
        CLT__TRY(clt__pow_scalar_in(fn, t, 1.0 / ord, out));
    }
done:
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

/* Node: saved a and the norm (clamped, for cosine_similarity); i[0] the dim (-1: every
 * element), i[1] keepdim; s[0] ord. */

/* t (shaped as the node's output) with the reduced dim back as size 1, so
 * that it broadcasts against a. */
static clt_status unreduce(clt__node *n, const clt_tensor *t, clt_tensor **out)
{
    if (n->i[0] < 0 || n->i[1])
        return clt__alias_grad(t, out);
    const clt__edge *e = &n->in[0];
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++)
        shape[d] = d == n->i[0] ? 1 : e->shape[d];
    return clt__reshape_rec("clt_backward", t, e->ndim, shape, out);
}

/* g * sign(x) * m / count(m) with m = (|x| == norm) | (isnan(x) & isnan(norm)),
 * count over the reduced dims: the gradient of the +-inf norm. */
static clt_status bw_extreme(clt__node *n, const clt_tensor *gu, const clt_tensor *nu,
                             clt_tensor **gin)
{
    const char *fn = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *ab = NULL, *eq = NULL, *xn = NULL, *nn = NULL, *both = NULL, *m = NULL,
               *mf = NULL, *cnt = NULL, *q = NULL, *sg = NULL, *t = NULL;
    CLT__TRY(clt__abs_in(fn, S(0), &ab));
    CLT__TRY(clt__eq_in(fn, ab, nu, &eq));
    CLT__TRY(clt__isnan_in(fn, S(0), &xn));
    CLT__TRY(clt__isnan_in(fn, nu, &nn));
    CLT__TRY(clt__logical_and_in(fn, xn, nn, &both));
    CLT__TRY(clt__logical_or_in(fn, eq, both, &m));
    CLT__TRY(clt__to_dtype(m, S(0)->dtype, &mf, fn));
    CLT__TRY(n->i[0] < 0 ? clt__sum(mf, &cnt, fn) : clt__sum_dim(mf, (int)n->i[0], 1, &cnt, fn));
    CLT__TRY(clt__div_rec(fn, gu, cnt, &q));
    CLT__TRY(clt__sign_in(fn, S(0), &sg));
    CLT__TRY(clt__mul_in(fn, sg, mf, &t));
    CLT__TRY(clt__mul_rec(fn, t, q, gin));
done:
    clt_tensor_free(ab);
    clt_tensor_free(eq);
    clt_tensor_free(xn);
    clt_tensor_free(nn);
    clt_tensor_free(both);
    clt_tensor_free(m);
    clt_tensor_free(mf);
    clt_tensor_free(cnt);
    clt_tensor_free(q);
    clt_tensor_free(sg);
    clt_tensor_free(t);
    return st;
}

/* PyTorch 1.13's norm_backward (FunctionsManual.cpp) for a real input,
 * every formula of recorded ops (clt__twice): the masks, signs and counts
 * are constants there too, their derivatives zero. */
static clt_status bw_norm(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    double p = n->s[0];
    if (p == 0)
        return CLT_OK; /* no gradient, as PyTorch's undefined one */
    clt_status st = CLT_OK;
    clt_tensor *gu = NULL, *nu = NULL, *a = NULL, *b = NULL, *c = NULL, *m = NULL;
    CLT__TRY(unreduce(n, g, &gu));
    CLT__TRY(unreduce(n, S(1), &nu));
    if (p == 1) {
        CLT__TRY(clt__sign_in(fn, S(0), &a));
        CLT__TRY(clt__mul_rec(fn, a, gu, &gin[0]));
    } else if (p == 2) {
        /* g * (x / norm).masked_fill(norm == 0, 0), recorded (clt__twice) */
        CLT__TRY(clt__div_rec(fn, S(0), nu, &a));
        CLT__TRY(clt__eq_scalar_in(fn, nu, 0.0, &m));
        CLT__TRY(clt__zero_where(m, a, &b));
        CLT__TRY(clt__mul_rec(fn, gu, b, &gin[0]));
    } else if (isinf(p)) {
        CLT__TRY(bw_extreme(n, gu, nu, &gin[0]));
    } else if (p < 1) {
        /* sign(x) * |x|^(p-1).masked_fill(x == 0, 0) * g * norm^(1-p) */
        CLT__TRY(clt__abs_rec(fn, S(0), &a));
        CLT__TRY(clt__pow_scalar_rec(fn, a, p - 1, &b));
        CLT__TRY(clt__eq_scalar_in(fn, S(0), 0.0, &m));
        clt_tensor_free(a);
        a = NULL;
        CLT__TRY(clt__zero_where(m, b, &a));
        clt_tensor_free(b);
        b = NULL;
        CLT__TRY(clt__sign_in(fn, S(0), &c));
        CLT__TRY(clt__mul_rec(fn, c, a, &b)); /* b: the scaled input */
        clt_tensor_free(a);
        a = NULL;
        CLT__TRY(clt__mul_rec(fn, b, gu, &a));
        clt_tensor_free(c);
        c = NULL;
        CLT__TRY(clt__pow_scalar_rec(fn, nu, 1 - p, &c));
        CLT__TRY(clt__mul_rec(fn, a, c, &gin[0]));
    } else {
        /* scaled input: sign(x) * |x|^(p-1) for p < 2, x * |x|^(p-2) above;
         * times (g / norm^(p-1)).masked_fill(norm == 0, 0) */
        CLT__TRY(clt__abs_rec(fn, S(0), &a));
        CLT__TRY(clt__pow_scalar_rec(fn, a, p < 2 ? p - 1 : p - 2, &b));
        clt_tensor_free(a);
        a = NULL;
        if (p < 2)
            CLT__TRY(clt__sign_in(fn, S(0), &c));
        CLT__TRY(clt__mul_rec(fn, p < 2 ? c : S(0), b, &a)); /* a: the scaled input */
        clt_tensor_free(b);
        b = NULL;
        clt_tensor_free(c);
        c = NULL;
        CLT__TRY(clt__pow_scalar_rec(fn, nu, p - 1, &b));
        CLT__TRY(clt__div_rec(fn, gu, b, &c));
        CLT__TRY(clt__eq_scalar_in(fn, nu, 0.0, &m));
        clt_tensor_free(b);
        b = NULL;
        CLT__TRY(clt__zero_where(m, c, &b));
        CLT__TRY(clt__mul_rec(fn, a, b, &gin[0]));
    }
done:
    clt_tensor_free(gu);
    clt_tensor_free(nu);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(m);
    return st;
}

/* Checks a, ord and dim (all: every element) for fn; *wd the wrapped dim,
 * -1 for every element or a 0-dim a. */
static clt_status check(const clt_tensor *a, double ord, bool all, int dim, int *wd,
                        const char *fn)
{
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected a floating point tensor as input, got %s", fn,
                          clt_dtype_name(a->dtype));
    if (isnan(ord))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the order of the norm is NaN", fn);
    *wd = -1;
    if (!all) {
        clt_status st = clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, wd, fn);
        if (st != CLT_OK)
            return st;
        if (a->ndim == 0)
            *wd = -1;
    }
    if (ord < 0 || isinf(ord)) {
        if (*wd < 0 && clt_tensor_numel(a) == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: cannot compute the %g norm of an empty tensor: the "
                              "operation has no identity",
                              fn, ord);
        if (*wd >= 0 && a->shape[*wd] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: cannot compute the %g norm along dimension %d: it is empty "
                              "and the operation has no identity",
                              fn, ord, dim);
    }
    return CLT_OK;
}

/* The recorded norm of a over dim (all: every element); with eps, the norm
 * clamped below at *eps, its gradient the norm's formula with the clamped
 * value in place of the norm (g * x / max(norm, eps) for ord 2): what
 * PyTorch 1.13's cosine_similarity gives with its no-grad clamp_min_. */
static clt_status norm_rec(const char *fn, const clt_tensor *a, double ord, bool all, int dim,
                           int keepdim, const double *eps, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int wd;
    clt_status st = check(a, ord, all, dim, &wd, fn);
    clt_tensor *norm = NULL;
    if (st == CLT_OK)
        st = norm_forward(a, ord, wd, keepdim, &norm, fn);
    if (st == CLT_OK && eps != NULL)
        st = clt__clamp(norm, eps, NULL, out, fn);
    else if (st == CLT_OK) {
        *out = norm;
        norm = NULL;
    }
    clt_tensor_free(norm);
    if (st != CLT_OK)
        return st;
    clt__node *n = NULL;
    const clt_tensor *sv[2] = {a, *out};
    st = clt__record(st, out, "LinalgVectorNormBackward0", bw_norm, 1, &a, 2, sv, &n);
    if (n) {
        n->i[0] = wd;
        n->i[1] = keepdim;
        n->s[0] = ord;
    }
    clt__twice(n);
    return st;
}

/* The norms of a complex a are those of |a| (real, of its parts' dtype),
 * the gradient reaching a through abs's (torch's sgn(a), 0 at 0). */
static clt_status complex_norm(const char *fn, const clt_tensor *a, double ord, bool all,
                               int dim, bool keepdim, clt_tensor **out)
{
    *out = NULL;
    clt_tensor *m = NULL;
    clt_status st = clt__complex_abs_rec(a, &m, fn);
    if (st == CLT_OK)
        st = norm_rec(fn, m, ord, all, dim, keepdim, NULL, out);
    clt_tensor_free(m);
    return st;
}

clt_status clt_vector_norm(const clt_tensor *a, double ord, clt_tensor **out)
{
    CLT__AUTOCAST("clt_vector_norm", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_vector_norm(CLT__AC(0), ord, out));
    if (a && out && clt__dtype_is_complex(a->dtype))
        return complex_norm("clt_vector_norm", a, ord, true, 0, false, out);
    return norm_rec("clt_vector_norm", a, ord, true, 0, 0, NULL, out);
}

clt_status clt_vector_norm_dim(const clt_tensor *a, double ord, int dim, int keepdim,
                               clt_tensor **out)
{
    CLT__AUTOCAST("clt_vector_norm_dim", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_vector_norm_dim(CLT__AC(0), ord, dim, keepdim, out));
    return clt__vector_norm_dim_rec("clt_vector_norm_dim", a, ord, dim, keepdim, out);
}

clt_status clt__vector_norm_dim_rec(const char *fn, const clt_tensor *a, double ord, int dim,
                                   int keepdim, clt_tensor **out)
{
    if (a && out && clt__dtype_is_complex(a->dtype))
        return complex_norm(fn, a, ord, false, dim, keepdim != 0, out);
    return norm_rec(fn, a, ord, false, dim, keepdim != 0, NULL, out);
}

clt_status clt_normalize(const clt_tensor *a, double p, int dim, double eps, clt_tensor **out)
{
    const char *fn = "clt_normalize";
    /* torch's normalize divides by a norm of autocast's float32 list */
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_normalize(CLT__AC(0), p, dim, eps, out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = CLT_OK;
    clt_tensor *norm = NULL, *den = NULL;
    /* An empty a gives an empty result whatever the norm: PyTorch refuses
     * no order then, not even one without identity. */
    if (a != NULL && clt_tensor_numel(a) == 0 && !isnan(p))
        p = 2;
    CLT__TRY(norm_rec(fn, a, p, false, dim, 1, NULL, &norm));
    CLT__TRY(clt__clamp_rec(fn, norm, &eps, NULL, &den));
    CLT__TRY(clt__div_rec(fn, a, den, out));
done:
    clt_tensor_free(norm);
    clt_tensor_free(den);
    return st;
}

clt_status clt_cosine_similarity(const clt_tensor *x1, const clt_tensor *x2, int dim,
                                 double eps, clt_tensor **out)
{
    const char *fn = "clt_cosine_similarity";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 2, (x1, x2),
                  clt_cosine_similarity(CLT__AC(0), CLT__AC(1), dim, eps, out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x1, fn);
    CLT__REQUIRE_ARG(x2, fn);
    clt_status st = CLT_OK;
    const clt_tensor *x[2] = {x1, x2};
    clt_tensor *c[2] = {NULL, NULL}, *e[2] = {NULL, NULL}, *nrm[2] = {NULL, NULL},
               *q[2] = {NULL, NULL}, *prod = NULL;
    clt_dtype ct;
    CLT__TRY(clt_result_type(x1, x2, &ct));
    if (!clt__dtype_is_float(ct)) {
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: expected the common dtype to be floating point, yet it is %s", fn,
                        clt_dtype_name(ct));
        goto done;
    }
    int nd;
    int64_t shape[CLT_MAX_DIMS];
    CLT__TRY(clt__broadcast_shapes(x1->ndim, x1->shape, x2->ndim, x2->shape, &nd, shape, fn));
    for (int k = 0; k < 2; k++) {
        /* Integer and bool inputs are converted; floating ones keep their
         * dtype until the product promotes them, as in PyTorch. */
        if (clt__dtype_is_float(x[k]->dtype))
            CLT__TRY(clt__expand_rec(fn, x[k], nd, shape, &e[k]));
        else {
            CLT__TRY(clt__to_dtype_rec(fn, x[k], ct, &c[k]));
            CLT__TRY(clt__expand_rec(fn, c[k], nd, shape, &e[k]));
        }
        CLT__TRY(norm_rec(fn, e[k], 2, false, dim, 1, &eps, &nrm[k]));
        CLT__TRY(clt__div_rec(fn, e[k], nrm[k], &q[k]));
    }
    CLT__TRY(clt__mul_rec(fn, q[0], q[1], &prod));
    CLT__TRY(clt__sum_dim_rec(fn, prod, dim, 0, out));
done:
    for (int k = 0; k < 2; k++) {
        clt_tensor_free(c[k]);
        clt_tensor_free(e[k]);
        clt_tensor_free(nrm[k]);
        clt_tensor_free(q[k]);
    }
    clt_tensor_free(prod);
    return st;
}

/* ---- the fused row normalisation of LayerNorm and GroupNorm ------------------------ */

/* The fused formula as recorded ops (clt__twice), over x seen as rows
 * [R, n]: mean and rstd are computed again from x (the saved ones carry no
 * history), xhat = (x - mean) rstd, gw = g w (g without w), then
 * dx = rstd (gw - mean(gw) - xhat mean(gw xhat)) by row, dw the sum over
 * rows of g xhat, db that of g.  s[0] eps. */
static clt_status native_norm_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin, int iw,
                                    int ib)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    int64_t flat = n->i[0], rows[2] = {flat ? S(0)->numel / flat : 0, flat};
    clt_tensor *x = NULL, *gr = NULL, *mu = NULL, *d = NULL, *var = NULL, *rstd = NULL,
               *xh = NULL, *gw = NULL, *t[6] = {0};
    CLT__TRY(clt__reshape_rec(fn, S(0), 2, rows, &x));
    CLT__TRY(clt__reshape_rec(fn, g, 2, rows, &gr));
    CLT__TRY(clt__mean_dim_rec(fn, x, 1, 1, &mu));
    CLT__TRY(clt__sub_rec(fn, x, mu, &d));
    CLT__TRY(clt__mul_rec(fn, d, d, &t[0]));
    CLT__TRY(clt__mean_dim_rec(fn, t[0], 1, 1, &t[1]));
    CLT__TRY(clt__add_scalar_rec(fn, t[1], n->s[0], &var));
    CLT__TRY(clt__pow_scalar_rec(fn, var, -0.5, &rstd));
    CLT__TRY(clt__mul_rec(fn, d, rstd, &xh));
    if (iw >= 0) {
        CLT__TRY(clt__reshape_rec(fn, S(3), 1, &flat, &t[2]));
        CLT__TRY(clt__mul_rec(fn, gr, t[2], &gw));
    } else {
        CLT__TRY(clt__alias_grad(gr, &gw));
    }
    for (int k = 0; k < 3; k++) {
        clt_tensor_free(t[k]);
        t[k] = NULL;
    }
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__mean_dim_rec(fn, gw, 1, 1, &t[0]));
        CLT__TRY(clt__mul_rec(fn, gw, xh, &t[1]));
        CLT__TRY(clt__mean_dim_rec(fn, t[1], 1, 1, &t[2]));
        CLT__TRY(clt__mul_rec(fn, xh, t[2], &t[3]));
        CLT__TRY(clt__sub_rec(fn, gw, t[0], &t[4]));
        CLT__TRY(clt__sub_rec(fn, t[4], t[3], &t[5]));
        clt_tensor_free(t[0]);
        t[0] = NULL;
        CLT__TRY(clt__mul_rec(fn, t[5], rstd, &t[0]));
        CLT__TRY(clt__reshape_rec(fn, t[0], S(0)->ndim, S(0)->shape, &gin[0]));
        for (int k = 0; k < 6; k++) {
            clt_tensor_free(t[k]);
            t[k] = NULL;
        }
    }
    if (iw >= 0 && CLT__NEED(n, iw)) {
        CLT__TRY(clt__mul_rec(fn, gr, xh, &t[0]));
        CLT__TRY(clt__sum_dim_rec(fn, t[0], 0, 0, &t[1]));
        CLT__TRY(clt__reshape_rec(fn, t[1], n->in[iw].ndim, n->in[iw].shape, &gin[iw]));
    }
    if (ib >= 0 && CLT__NEED(n, ib)) {
        CLT__TRY(clt__sum_dim_rec(fn, gr, 0, 0, &t[2]));
        CLT__TRY(clt__reshape_rec(fn, t[2], n->in[ib].ndim, n->in[ib].shape, &gin[ib]));
    }
done:
    for (int k = 0; k < 6; k++)
        clt_tensor_free(t[k]);
    clt_tensor_free(x);
    clt_tensor_free(gr);
    clt_tensor_free(mu);
    clt_tensor_free(d);
    clt_tensor_free(var);
    clt_tensor_free(rstd);
    clt_tensor_free(xh);
    clt_tensor_free(gw);
    return st;
}

/* Node: saved x, mean, rstd and w (when given); i[0] the row length n,
 * i[1] and i[2] the inputs w and b are (-1: not given); s[0] eps. */
static clt_status bw_native_norm(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    int iw = (int)n->i[1], ib = (int)n->i[2];
    if (n->twice && clt__creating_graph())
        return native_norm_twice(n, g, gin, iw, ib);
    bool need_w = iw >= 0 && CLT__NEED(n, iw), need_b = ib >= 0 && CLT__NEED(n, ib);
    clt_tensor *dw = NULL, *db = NULL;
    clt_status st = clt__native_norm_backward(g, S(0), S(1), S(2), iw >= 0 ? S(3) : NULL,
                                              n->i[0], CLT__NEED(n, 0) ? &gin[0] : NULL,
                                              need_w ? &dw : NULL, need_b ? &db : NULL, fn);
    if (st == CLT_OK && dw)
        st = clt__reshape(dw, n->in[iw].ndim, n->in[iw].shape, &gin[iw], fn);
    if (st == CLT_OK && db)
        st = clt__reshape(db, n->in[ib].ndim, n->in[ib].shape, &gin[ib], fn);
    clt_tensor_free(dw);
    clt_tensor_free(db);
    return st;
}

clt_status clt__native_norm_rec(const char *fn, const char *node, const clt_tensor *x, int64_t n,
                                const clt_tensor *w, const clt_tensor *b, double eps,
                                clt_tensor **out)
{
    *out = NULL;
    const clt_tensor *in[3] = {x, NULL, NULL}, *sv[4];
    int nin = 1, iw = -1, ib = -1;
    if (w) {
        iw = nin;
        in[nin++] = w;
    }
    if (b) {
        ib = nin;
        in[nin++] = b;
    }
    clt_tensor *mean = NULL, *rstd = NULL;
    clt_status st = clt__native_norm(x, n, w, b, eps, out, &mean, &rstd, fn);
    if (st == CLT_OK) {
        clt__node *nd = NULL;
        sv[0] = x;
        sv[1] = mean;
        sv[2] = rstd;
        sv[3] = w;
        st = clt__record(st, out, node, bw_native_norm, nin, in, w ? 4 : 3, sv, &nd);
        if (nd) {
            nd->i[0] = n;
            nd->i[1] = iw;
            nd->i[2] = ib;
            nd->s[0] = eps;
        }
        clt__twice(nd);
    }
    clt_tensor_free(mean);
    clt_tensor_free(rstd);
    return st;
}

clt_status clt_dist(const clt_tensor *a, const clt_tensor *b, double p, clt_tensor **out)
{
    const char *fn = "clt_dist";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 2, (a, b),
                  clt_dist(CLT__AC(0), CLT__AC(1), p, out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_dtype ct;
    clt_status st = clt_result_type(a, b, &ct);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    if (!clt__dtype_is_float(ct) && !clt__dtype_is_complex(ct))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: norm(): input dtype should be either floating point or complex. "
                          "Got %s instead.",
                          fn, clt_dtype_name(ct));
    clt_tensor *d = NULL;
    st = clt__sub_rec(fn, a, b, &d);
    if (st != CLT_OK)
        return st;
    /* torch's norm of an empty difference is 0 whatever p (inf and NaN
     * too), where vector_norm has no identity for some: any p gives it */
    if (d->numel == 0)
        p = 2;
    if (clt__dtype_is_complex(d->dtype))
        st = complex_norm(fn, d, p, true, 0, false, out);
    else
        st = norm_rec(fn, d, p, true, 0, 0, NULL, out);
    clt_tensor_free(d);
    return st;
}
