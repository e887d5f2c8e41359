/* misc2_calc.c: torch.gradient (scalar spacings and coordinates),
 * torch.histogram and torch.histogramdd (reduce.h), composed of existing
 * ops as torch composes them. */
#include "autograd/autograd.h"

#include <math.h>

static int64_t numel_of(const clt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

/* The end of a histogram's scope: on success h and the D edges in edges
 * leave it (clt__scope_finish_all) and *hist = h; on failure (st, or a failed keep) the
 * scope ends with everything in it. */
static clt_status keep_hist(clt_status st, clt_tensor *h, clt_tensor *const *edges, int D,
                            clt_tensor **hist)
{
    if (st != CLT_OK) {
        clt_scope_end();
        return st;
    }
    clt_tensor *all[CLT_MAX_DIMS + 1];
    all[0] = h;
    for (int d = 0; d < D; d++)
        all[d + 1] = edges[d];
    st = clt__scope_finish_all(st, all, (size_t)D + 1);
    if (st == CLT_OK)
        *hist = h;
    return st;
}

/* ---- torch.gradient -------------------------------------------------------- */

/* x * k, or x itself for k == 1 (torch's products by 1 are exact too). */
static clt_status times(const char *fn, const clt_tensor *x, double k, clt_tensor **out)
{
    return clt__mul_scalar_rec(fn, x, k, out);
}

/* The checks clt_gradient and clt_gradient_coords share: edge_order,
 * dims (NULL: every dim) wrapped into dd[*nd], sizes, dtype. */
static clt_status gradient_args(const char *fn, const clt_tensor *t, const int *dims, int ndims,
                                int edge_order, int *dd, int *ndout)
{
    int nd = 0;
    if (edge_order != 1 && edge_order != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.gradient only supports edge_order=1 and edge_order=2.", fn);
    if (dims) {
        if (ndims < 0 || ndims > CLT_MAX_DIMS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dims given", fn, ndims);
        for (int k = 0; k < ndims; k++) {
            clt_status st = clt__wrap_dim(dims[k], t->ndim, &dd[k], fn);
            if (st != CLT_OK)
                return st;
            for (int j = 0; j < k; j++)
                if (dd[j] == dd[k])
                    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                      "%s: dim %d appears multiple times in the list of dims",
                                      fn, dd[k]);
        }
        nd = ndims;
    } else {
        for (int k = 0; k < t->ndim; k++)
            dd[k] = k;
        nd = t->ndim;
    }
    if (nd == 0 && t->ndim == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.gradient expected each tensor to be at least 1-d", fn);
    for (int k = 0; k < nd; k++)
        if (t->shape[dd[k]] < edge_order + 1)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: torch.gradient expected each dimension size to be at least "
                              "edge_order+1",
                              fn);
    if (t->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Subtraction, the `-` operator, with a bool tensor is not "
                          "supported.",
                          fn);
    *ndout = nd;
    return CLT_OK;
}

clt_status clt_gradient(const clt_tensor *t, const double *spacing, int nspacing,
                        const int *dims, int ndims, int edge_order, clt_tensor ***outs,
                        size_t *n)
{
    static const char fn[] = "clt_gradient";
    if (outs)
        *outs = NULL;
    if (n)
        *n = 0;
    CLT__REQUIRE_ARG(outs, fn);
    CLT__REQUIRE_ARG(n, fn);
    CLT__REQUIRE_ARG(t, fn);
    int dd[CLT_MAX_DIMS], nd = 0;
    clt_status st0 = gradient_args(fn, t, dims, ndims, edge_order, dd, &nd);
    if (st0 != CLT_OK)
        return st0;
    if (nspacing < 0 || (nspacing > 1 && nspacing != nd))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.gradient expected spacing to be unspecified, a scalar or "
                          "it's spacing and dim arguments to have the same length, but got a "
                          "spacing argument of length %d and a dim argument of length %d.",
                          fn, nspacing, nd);
    if (nspacing > 0)
        CLT__REQUIRE_ARG(spacing, fn);
    clt_tensor **arr = clt__calloc(nd ? (size_t)nd : 1, sizeof(clt_tensor *));
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK) {
        free(arr);
        return st;
    }
    for (int k = 0; k < nd; k++) {
        int d = dd[k];
        int64_t len = t->shape[d];
        double h = nspacing == 0 ? 1.0 : spacing[nspacing == 1 ? 0 : k];
        clt_tensor *a = NULL, *b = NULL, *c = NULL, *pre = NULL, *app = NULL, *x = NULL,
                   *y = NULL, *z = NULL;
        /* center (f[2:] - f[:-2]) / h / 2 */
        CLT__TRY(clt__narrow_rec(fn, t, d, 2, len - 2, &a));
        CLT__TRY(clt__narrow_rec(fn, t, d, 0, len - 2, &b));
        CLT__TRY(clt__sub_rec(fn, a, b, &c));
        CLT__TRY(clt__div_scalar_rec(fn, c, h, &c));
        CLT__TRY(clt__div_scalar_rec(fn, c, 2.0, &c));
        if (edge_order == 1) {
            CLT__TRY(clt__narrow_rec(fn, t, d, 1, 1, &a));
            CLT__TRY(clt__narrow_rec(fn, t, d, 0, 1, &b));
            CLT__TRY(clt__sub_rec(fn, a, b, &pre));
            CLT__TRY(clt__div_scalar_rec(fn, pre, h, &pre));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 1, 1, &a));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 2, 1, &b));
            CLT__TRY(clt__sub_rec(fn, a, b, &app));
            CLT__TRY(clt__div_scalar_rec(fn, app, h, &app));
        } else {
            /* (f0 * -1.5 + f1 * 2 - f2 * 0.5) / h and
             * (f[-3] * 0.5 + f[-2] * -2 + f[-1] * 1.5) / h, as torch */
            CLT__TRY(clt__narrow_rec(fn, t, d, 0, 1, &a));
            CLT__TRY(times(fn, a, -1.5, &x));
            CLT__TRY(clt__narrow_rec(fn, t, d, 1, 1, &a));
            CLT__TRY(times(fn, a, 2.0, &y));
            CLT__TRY(clt__narrow_rec(fn, t, d, 2, 1, &a));
            CLT__TRY(times(fn, a, 0.5, &z));
            CLT__TRY(clt__add_rec(fn, x, y, &pre));
            CLT__TRY(clt__sub_rec(fn, pre, z, &pre));
            CLT__TRY(clt__div_scalar_rec(fn, pre, h, &pre));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 3, 1, &a));
            CLT__TRY(times(fn, a, 0.5, &x));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 2, 1, &a));
            CLT__TRY(times(fn, a, -2.0, &y));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 1, 1, &a));
            CLT__TRY(times(fn, a, 1.5, &z));
            CLT__TRY(clt__add_rec(fn, x, y, &app));
            CLT__TRY(clt__add_rec(fn, app, z, &app));
            CLT__TRY(clt__div_scalar_rec(fn, app, h, &app));
        }
        CLT__TRY(clt__cat_rec(fn, (const clt_tensor *[]){pre, c, app}, 3, d, &arr[k]));
    }
done:
    st = clt__scope_finish_all(st, arr, (size_t)nd);
    if (st != CLT_OK) {
        free(arr);
        return st;
    }
    *outs = arr;
    *n = (size_t)nd;
    return CLT_OK;
}

/* ax_dx[k] as a 0-d tensor (k < 0 counts from the end). */
static clt_status elem(const char *fn, const clt_tensor *v, int64_t k, clt_tensor **out)
{
    clt_tensor *p = NULL;
    clt_status st = clt__narrow_rec(fn, v, 0, k < 0 ? v->shape[0] + k : k, 1, &p);
    if (st == CLT_OK)
        st = clt__reshape_rec(fn, p, 0, NULL, out);
    clt_tensor_free(p);
    return st;
}

/* x * p + y * q + z * r, recorded. */
static clt_status comb3(const char *fn, const clt_tensor *x, const clt_tensor *p,
                        const clt_tensor *y, const clt_tensor *q, const clt_tensor *z,
                        const clt_tensor *r, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *u = NULL, *v = NULL, *w = NULL, *s = NULL;
    CLT__TRY(clt__mul_rec(fn, x, p, &u));
    CLT__TRY(clt__mul_rec(fn, y, q, &v));
    CLT__TRY(clt__mul_rec(fn, z, r, &w));
    CLT__TRY(clt__add_rec(fn, u, v, &s));
    CLT__TRY(clt__add_rec(fn, s, w, out));
done:
    clt_tensor_free(u);
    clt_tensor_free(v);
    clt_tensor_free(w);
    clt_tensor_free(s);
    return st;
}

clt_status clt_gradient_coords(const clt_tensor *t, const clt_tensor *const *coords,
                               int ncoords, const int *dims, int ndims, int edge_order,
                               clt_tensor ***outs, size_t *n)
{
    static const char fn[] = "clt_gradient_coords";
    if (outs)
        *outs = NULL;
    if (n)
        *n = 0;
    CLT__REQUIRE_ARG(outs, fn);
    CLT__REQUIRE_ARG(n, fn);
    CLT__REQUIRE_ARG(t, fn);
    int dd[CLT_MAX_DIMS], nd = 0;
    clt_status st = gradient_args(fn, t, dims, ndims, edge_order, dd, &nd);
    if (st != CLT_OK)
        return st;
    if (ncoords != nd)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.gradient expected spacing to be unspecified, a scalar or "
                          "it's spacing and dim arguments to have the same length, but got a "
                          "spacing argument of length %d and a dim argument of length %d.",
                          fn, ncoords, nd);
    if (nd > 0)
        CLT__REQUIRE_ARG(coords, fn);
    for (int k = 0; k < nd; k++) {
        if (coords[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: coordinates %d are NULL", fn, k);
        if ((st = clt__same_device(t, coords[k], fn)) != CLT_OK)
            return st;
        if (coords[k]->ndim != 1)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: torch.gradient expected each element of spacing to have one "
                              "dimension, but got an element with %d dimensions!",
                              fn, coords[k]->ndim);
        if (coords[k]->shape[0] != t->shape[dd[k]])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: coordinates %d have %lld values for a dimension of size %lld",
                              fn, k, (long long)coords[k]->shape[0], (long long)t->shape[dd[k]]);
        if (coords[k]->dtype == CLT_BOOL)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: Subtraction, the `-` operator, with a bool tensor is not "
                              "supported.",
                              fn);
    }
    clt_tensor **arr = clt__calloc(nd ? (size_t)nd : 1, sizeof(clt_tensor *));
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if ((st = clt_scope_begin()) != CLT_OK) {
        free(arr);
        return st;
    }
    for (int k = 0; k < nd; k++) {
        int d = dd[k];
        int64_t len = t->shape[d], shape[CLT_MAX_DIMS];
        for (int i = 0; i < t->ndim; i++)
            shape[i] = i == d ? len - 2 : 1;
        clt_tensor *h = NULL, *h1 = NULL, *h2 = NULL, *a = NULL, *b = NULL, *c = NULL,
                   *x = NULL, *y = NULL, *z = NULL, *u = NULL, *v = NULL, *center = NULL,
                   *pre = NULL, *app = NULL, *e0 = NULL, *e1 = NULL;
        /* torch's nonuniform weights: a = -dx2 / (dx1 (dx1 + dx2)), b = (dx2
         * - dx1) / (dx1 dx2), c = dx1 / (dx2 (dx1 + dx2)) */
        CLT__TRY(clt__error_as(clt_diff(coords[k], 1, 0, NULL, NULL, &h), fn));
        CLT__TRY(clt__narrow_rec(fn, h, 0, 0, len - 2, &h1));
        CLT__TRY(clt__narrow_rec(fn, h, 0, 1, len - 2, &h2));
        CLT__TRY(clt__add_rec(fn, h1, h2, &u));
        CLT__TRY(clt__neg_rec(fn, h2, &a));
        CLT__TRY(clt__mul_rec(fn, h1, u, &v));
        CLT__TRY(clt__div_rec(fn, a, v, &a));
        CLT__TRY(clt__sub_rec(fn, h2, h1, &b));
        CLT__TRY(clt__mul_rec(fn, h1, h2, &v));
        CLT__TRY(clt__div_rec(fn, b, v, &b));
        CLT__TRY(clt__mul_rec(fn, h2, u, &v));
        CLT__TRY(clt__div_rec(fn, h1, v, &c));
        CLT__TRY(clt__reshape_rec(fn, a, t->ndim, shape, &a));
        CLT__TRY(clt__reshape_rec(fn, b, t->ndim, shape, &b));
        CLT__TRY(clt__reshape_rec(fn, c, t->ndim, shape, &c));
        CLT__TRY(clt__narrow_rec(fn, t, d, 0, len - 2, &x));
        CLT__TRY(clt__narrow_rec(fn, t, d, 1, len - 2, &y));
        CLT__TRY(clt__narrow_rec(fn, t, d, 2, len - 2, &z));
        CLT__TRY(comb3(fn, a, x, b, y, c, z, &center));
        CLT__TRY(elem(fn, h, 0, &e0));
        CLT__TRY(elem(fn, h, -1, &e1));
        if (edge_order == 1) {
            CLT__TRY(clt__narrow_rec(fn, t, d, 1, 1, &x));
            CLT__TRY(clt__narrow_rec(fn, t, d, 0, 1, &y));
            CLT__TRY(clt__sub_rec(fn, x, y, &pre));
            CLT__TRY(clt__div_rec(fn, pre, e0, &pre));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 1, 1, &x));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 2, 1, &y));
            CLT__TRY(clt__sub_rec(fn, x, y, &app));
            CLT__TRY(clt__div_rec(fn, app, e1, &app));
        } else {
            clt_tensor *g0 = NULL, *g1 = NULL, *s01 = NULL, *p = NULL, *q = NULL;
            /* a = -(2 h0 + h1) / (h0 (h0 + h1)), b = (h0 + h1) / (h0 h1),
             * c = -h0 / (h1 (h0 + h1)) */
            CLT__TRY(elem(fn, h, 1, &g1));
            g0 = e0;
            CLT__TRY(clt__add_rec(fn, g0, g1, &s01));
            CLT__TRY(clt__mul_scalar_rec(fn, g0, 2.0, &p));
            CLT__TRY(clt__add_rec(fn, p, g1, &p));
            CLT__TRY(clt__neg_rec(fn, p, &p));
            CLT__TRY(clt__mul_rec(fn, g0, s01, &q));
            CLT__TRY(clt__div_rec(fn, p, q, &a));
            CLT__TRY(clt__mul_rec(fn, g0, g1, &q));
            CLT__TRY(clt__div_rec(fn, s01, q, &b));
            CLT__TRY(clt__neg_rec(fn, g0, &p));
            CLT__TRY(clt__mul_rec(fn, g1, s01, &q));
            CLT__TRY(clt__div_rec(fn, p, q, &c));
            CLT__TRY(clt__narrow_rec(fn, t, d, 0, 1, &x));
            CLT__TRY(clt__narrow_rec(fn, t, d, 1, 1, &y));
            CLT__TRY(clt__narrow_rec(fn, t, d, 2, 1, &z));
            CLT__TRY(comb3(fn, a, x, b, y, c, z, &pre));
            /* a = h-1 / (h-2 (h-1 + h-2)), b = -(h-1 + h-2) / (h-1 h-2),
             * c = (2 h-1 + h-2) / (h-1 (h-1 + h-2)) */
            CLT__TRY(elem(fn, h, -2, &g0));
            g1 = e1;
            CLT__TRY(clt__add_rec(fn, g1, g0, &s01));
            CLT__TRY(clt__mul_rec(fn, g0, s01, &q));
            CLT__TRY(clt__div_rec(fn, g1, q, &a));
            CLT__TRY(clt__neg_rec(fn, s01, &p));
            CLT__TRY(clt__mul_rec(fn, g1, g0, &q));
            CLT__TRY(clt__div_rec(fn, p, q, &b));
            CLT__TRY(clt__mul_scalar_rec(fn, g1, 2.0, &p));
            CLT__TRY(clt__add_rec(fn, p, g0, &p));
            CLT__TRY(clt__mul_rec(fn, g1, s01, &q));
            CLT__TRY(clt__div_rec(fn, p, q, &c));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 3, 1, &x));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 2, 1, &y));
            CLT__TRY(clt__narrow_rec(fn, t, d, len - 1, 1, &z));
            CLT__TRY(comb3(fn, a, x, b, y, c, z, &app));
        }
        CLT__TRY(clt__cat_rec(fn, (const clt_tensor *[]){pre, center, app}, 3, d, &arr[k]));
    }
done:
    st = clt__scope_finish_all(st, arr, (size_t)nd);
    if (st != CLT_OK) {
        free(arr);
        return st;
    }
    *outs = arr;
    *n = (size_t)nd;
    return CLT_OK;
}

/* ---- torch.histogram and torch.histogramdd ----------------------------------- */

/* The histogram of the N points of x2 [N, D] (float32 or float64) over D
 * dims: bins[d] equal bins (edges NULL) over range[2d..2d+1] or the data's
 * bounds, or the edges[d] given; weight [N] or NULL.  *hist [bins...] and
 * eout[0..D) are new tensors.  Checks every argument but x2's own. */
static clt_status hist_core(const char *fn, const clt_tensor *x2, int D, const int64_t *bins,
                            const clt_tensor *const *edges, const double *range,
                            const clt_tensor *weight, int density, clt_tensor **hist,
                            clt_tensor **eout)
{
    clt_status st = CLT_OK;
    int64_t N = x2->shape[0], nb[CLT_MAX_DIMS], total = 1;
    if (D < 1 || D > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a histogram of %d dimensions (1 to %d supported)", fn, D,
                          CLT_MAX_DIMS);
    for (int d = 0; d < D; d++) {
        if (edges) {
            const clt_tensor *e = edges[d];
            if (e == NULL)
                return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: bins tensor %d is NULL", fn, d);
            if ((st = clt__same_device(x2, e, fn)) != CLT_OK)
                return st;
            if (e->dtype != x2->dtype)
                return clt__error(CLT_ERR_DTYPE_MISMATCH,
                                  "%s: torch.histogramdd: input tensor and bins tensors should "
                                  "have the same dtype, but got input %s and bins %s",
                                  fn, clt_dtype_name(x2->dtype), clt_dtype_name(e->dtype));
            if (e->ndim != 1 || e->shape[0] < 1)
                return clt__error(CLT_ERR_SHAPE_MISMATCH,
                                  "%s: torch.histogramdd: bins tensor should have one dimension "
                                  "and at least 1 entry, but got %d dimensions for dimension %d",
                                  fn, e->ndim, d);
            nb[d] = e->shape[0] - 1;
        } else {
            if (bins[d] <= 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: torch.histogramdd(): bins must be > 0, but got %lld for "
                                  "dimension %d",
                                  fn, (long long)bins[d], d);
            nb[d] = bins[d];
            if (range && !(range[2 * d] <= range[2 * d + 1]))
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: torch.histogramdd: expected upper bound (%g) to be "
                                  "greater than or equal to lower bound (%g) for dimension %d",
                                  fn, range[2 * d + 1], range[2 * d], d);
        }
        if (nb[d] && total > INT64_MAX / nb[d])
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: too many bins", fn);
        total *= nb[d];
    }
    if (weight) {
        if ((st = clt__same_device(x2, weight, fn)) != CLT_OK)
            return st;
        if (weight->dtype != x2->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: torch.histogramdd: if weight tensor is provided, input "
                              "tensor and weight tensor should have the same dtype",
                              fn);
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *h = NULL, *flat = NULL, *keep = NULL, *w = NULL, *zero = NULL;
    for (int d = 0; d < D; d++)
        eout[d] = NULL;
    for (int d = 0; d < D; d++) {
        clt_tensor *xd = NULL, *e = NULL, *pos = NULL, *e0 = NULL, *e1 = NULL, *k1 = NULL,
                   *k2 = NULL, *kd = NULL;
        CLT__TRY(clt__narrow_rec(fn, x2, 1, d, 1, &xd));
        CLT__TRY(clt__reshape_rec(fn, xd, 1, (int64_t[]){N}, &xd));
        if (edges) {
            CLT__TRY(clt__error_as(clt_clone(edges[d], &e), fn));
        } else {
            double lo = 0, hi = 1; /* torch's bounds for no data */
            if (range) {
                lo = range[2 * d], hi = range[2 * d + 1];
            } else if (N > 0) {
                /* the data's own bounds (read back) */
                clt_tensor *mn = NULL, *mx = NULL;
                CLT__TRY(clt__error_as(clt_aminmax(xd, &mn, &mx), fn));
                CLT__TRY(clt__error_as(clt_tensor_item(mn, &lo), fn));
                CLT__TRY(clt__error_as(clt_tensor_item(mx, &hi), fn));
            }
            if (!isfinite(lo) || !isfinite(hi)) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: torch.histogramdd: range of [%g, %g] is not finite", fn, lo,
                                hi);
                goto done;
            }
            if (lo == hi)
                lo -= 0.5, hi += 0.5;
            CLT__TRY(clt__error_as(clt_linspace(x2->dev, x2->dtype, lo, hi, nb[d] + 1, &e), fn));
        }
        eout[d] = e;
        if (total == 0 || N == 0)
            continue;
        /* bin of v: the last edge <= v (searchsorted right, minus 1), the
         * last bin for v equal to the last edge.  torch 1.13's CPU kernel
         * skips v < first or v > last edge only, so NaN counts: in the
         * last bin with edges given (its binary search), else in bin 1
         * (its bin index of NaN, min(1, bins - 1) on x86-64). */
        const double zero_bin = 0.0, last_bin = (double)(nb[d] - 1);
        CLT__TRY(clt__error_as(clt_searchsorted(e, xd, 1, &pos), fn));
        CLT__TRY(clt__sub_scalar_in(fn, pos, 1.0, &pos));
        CLT__TRY(clt__error_as(clt_clamp(pos, &zero_bin, &last_bin, &pos), fn));
        CLT__TRY(clt__narrow_rec(fn, e, 0, 0, 1, &e0));
        CLT__TRY(clt__narrow_rec(fn, e, 0, nb[d], 1, &e1));
        CLT__TRY(clt__lt_in(fn, xd, e0, &k1));
        CLT__TRY(clt__gt_in(fn, xd, e1, &k2));
        CLT__TRY(clt__logical_or_in(fn, k1, k2, &kd));
        CLT__TRY(clt__logical_not_in(fn, kd, &kd));
        if (!edges) {
            clt_tensor *nan = NULL, *b1 = NULL;
            CLT__TRY(clt__isnan_in(fn, xd, &nan));
            CLT__TRY(clt__full(x2->dev, CLT_INT64, 0, NULL, nb[d] > 1 ? 1.0 : 0.0, &b1));
            CLT__TRY(clt__where_in(fn, nan, b1, pos, &pos));
        }
        if (d == 0) {
            flat = pos, keep = kd;
        } else {
            clt_tensor *m = NULL;
            CLT__TRY(clt__full(x2->dev, CLT_INT64, 0, NULL, (double)nb[d], &m));
            CLT__TRY(clt__mul_in(fn, flat, m, &flat));
            CLT__TRY(clt__add_in(fn, flat, pos, &flat));
            CLT__TRY(clt__logical_and_in(fn, keep, kd, &keep));
        }
    }
    if (total == 0 || N == 0) {
        CLT__TRY(clt__full(x2->dev, x2->dtype, D, nb, 0.0, &h));
    } else {
        CLT__TRY(clt__full(x2->dev, x2->dtype, 0, NULL, 0.0, &zero));
        if (weight)
            CLT__TRY(clt__where_in(fn, keep, weight, zero, &w));
        else
            CLT__TRY(clt__to_dtype_rec(fn, keep, x2->dtype, &w));
        CLT__TRY(clt__error_as(clt_bincount(flat, w, total, &h), fn));
        CLT__TRY(clt__reshape_rec(fn, h, D, nb, &h));
    }
    if (density) {
        clt_tensor *s = NULL, *len = NULL;
        CLT__TRY(clt__error_as(clt_sum(h, &s), fn));
        CLT__TRY(clt__div_in(fn, h, s, &h));
        for (int d = 0; d < D; d++) {
            int64_t shape[CLT_MAX_DIMS];
            for (int i = 0; i < D; i++)
                shape[i] = i == d ? nb[d] : 1;
            CLT__TRY(clt__error_as(clt_diff(eout[d], 1, 0, NULL, NULL, &len), fn));
            CLT__TRY(clt__reshape_rec(fn, len, D, shape, &len));
            CLT__TRY(clt__div_in(fn, h, len, &h));
        }
    }
done:
    if ((st = keep_hist(st, h, eout, D, hist)) == CLT_OK)
        return CLT_OK;
    for (int d = 0; d < D; d++)
        eout[d] = NULL;
    return st;
}

static clt_status need_float_input(const char *fn, const clt_tensor *x)
{
    if (x->dtype != CLT_FLOAT32 && x->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: \"histogramdd\" not implemented for '%s'",
                          fn, clt_dtype_name(x->dtype));
    return CLT_OK;
}

clt_status clt_histogram(const clt_tensor *x, int64_t bins, const clt_tensor *edges,
                         const double *range, const clt_tensor *weight, int density,
                         clt_tensor **hist, clt_tensor **bin_edges)
{
    static const char fn[] = "clt_histogram";
    if (hist)
        *hist = NULL;
    if (bin_edges)
        *bin_edges = NULL;
    CLT__REQUIRE_ARG(hist, fn);
    CLT__REQUIRE_ARG(bin_edges, fn);
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = need_float_input(fn, x);
    if (st != CLT_OK)
        return st;
    if (weight) {
        bool same = weight->ndim == x->ndim;
        for (int i = 0; same && i < x->ndim; i++)
            same = weight->shape[i] == x->shape[i];
        if (!same)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: torch.histogramdd: if weight tensor is provided it should "
                              "have the same shape as the input tensor",
                              fn);
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t N = numel_of(x);
    clt_tensor *x2 = NULL, *wf = NULL, *h = NULL, *e = NULL;
    CLT__TRY(clt__reshape_rec(fn, x, 2, (int64_t[]){N, 1}, &x2));
    if (weight)
        CLT__TRY(clt__reshape_rec(fn, weight, 1, (int64_t[]){N}, &wf));
    CLT__TRY(hist_core(fn, x2, 1, &bins, edges ? &edges : NULL, range, wf, density, &h, &e));
done:
    if ((st = keep_hist(st, h, &e, 1, hist)) == CLT_OK)
        *bin_edges = e;
    return st;
}

clt_status clt_histogramdd(const clt_tensor *x, const int64_t *bins,
                           const clt_tensor *const *edges, size_t nbins, const double *range,
                           const clt_tensor *weight, int density, clt_tensor **hist,
                           clt_tensor ***bin_edges, size_t *n)
{
    static const char fn[] = "clt_histogramdd";
    if (hist)
        *hist = NULL;
    if (bin_edges)
        *bin_edges = NULL;
    if (n)
        *n = 0;
    CLT__REQUIRE_ARG(hist, fn);
    CLT__REQUIRE_ARG(bin_edges, fn);
    CLT__REQUIRE_ARG(n, fn);
    CLT__REQUIRE_ARG(x, fn);
    clt_status st = need_float_input(fn, x);
    if (st != CLT_OK)
        return st;
    if (x->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: torch.histogramdd: input tensor should have at least 2 "
                          "dimensions, but got %d",
                          fn, x->ndim);
    int64_t D = x->shape[x->ndim - 1];
    if (D < 1 || D > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: a histogram of %lld dimensions (1 to %d supported)", fn,
                          (long long)D, CLT_MAX_DIMS);
    if (!bins && !edges)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'bins' and 'edges' are NULL", fn);
    if ((int64_t)nbins != D)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.histogramdd: expected %lld sequences of bin edges or bin "
                          "counts for each of the %lld dimensions, but got %zu",
                          fn, (long long)D, (long long)D, nbins);
    if (weight) {
        bool same = weight->ndim == x->ndim - 1;
        for (int i = 0; same && i < x->ndim - 1; i++)
            same = weight->shape[i] == x->shape[i];
        if (!same)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: torch.histogramdd: if weight tensor is provided it should "
                              "have the same shape as the input tensor excluding its innermost "
                              "dimension",
                              fn);
    }
    clt_tensor **arr = clt__calloc((size_t)D, sizeof(clt_tensor *));
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if ((st = clt_scope_begin()) != CLT_OK) {
        free(arr);
        return st;
    }
    int64_t N = numel_of(x) / D;
    clt_tensor *x2 = NULL, *wf = NULL, *h = NULL;
    CLT__TRY(clt__reshape_rec(fn, x, 2, (int64_t[]){N, D}, &x2));
    if (weight)
        CLT__TRY(clt__reshape_rec(fn, weight, 1, (int64_t[]){N}, &wf));
    CLT__TRY(hist_core(fn, x2, (int)D, edges ? NULL : bins, edges, range, wf, density, &h, arr));
done:
    if ((st = keep_hist(st, h, arr, (int)D, hist)) == CLT_OK) {
        *bin_edges = arr;
        *n = (size_t)D;
        return CLT_OK;
    }
    free(arr);
    return st;
}
