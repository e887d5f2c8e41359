/* reduce_stats.c: amax/amin over several dims, nansum, count_nonzero, and
 * the order statistics (median, nanmedian, kthvalue, mode, quantile) from
 * the sorted slices of src/ops/sort.c and the kernels of cl/stats.cl. */
#include <math.h>

#include "internal.h"

/* The dims a list names as a mask; ndims 0 names every dim (torch's
 * dim=()).  A 0-dim tensor takes dims -1 and 0 (no dim to reduce). */
clt_status clt__dims_mask(const clt_tensor *a, const int *dims, int ndims, unsigned *mask,
                          const char *fn)
{
    *mask = 0;
    if (ndims < 0 || (ndims > 0 && dims == NULL))
        return clt__error(ndims < 0 ? CLT_ERR_INVALID_ARGUMENT : CLT_ERR_NULL_ARGUMENT,
                          "%s: %d dims in the list, and the list %s", fn, ndims,
                          dims ? "given" : "NULL");
    if (ndims == 0) {
        *mask = (1u << a->ndim) - 1u;
        return CLT_OK;
    }
    for (int k = 0; k < ndims; k++) {
        int d;
        clt_status st = clt__wrap_dim(dims[k], a->ndim > 0 ? a->ndim : 1, &d, fn);
        if (st != CLT_OK)
            return st;
        if (a->ndim == 0)
            continue;
        if (*mask & (1u << d))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: dim %d appears multiple times in the list of dims", fn, d);
        *mask |= 1u << d;
    }
    return CLT_OK;
}

/* The shape of a reduced over the dims of mask (size 1 when keepdim). */
static void reduced_shape(const clt_tensor *a, unsigned mask, int keepdim, int *ond,
                          int64_t *oshape)
{
    *ond = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (!(mask & (1u << d)))
            oshape[(*ond)++] = a->shape[d];
        else if (keepdim)
            oshape[(*ond)++] = 1;
    }
}

/* a with the dims of mask moved last, in order, and merged into one: the
 * kept dims, then the product of the reduced ones (a copy when the
 * permuted view cannot be reshaped). */
static clt_status fold_dims(const clt_tensor *a, unsigned mask, clt_tensor **out,
                            const char *fn)
{
    int perm[CLT_MAX_DIMS], np = 0, nk = 0;
    int64_t shape[CLT_MAX_DIMS + 1], R = 1;
    for (int d = 0; d < a->ndim; d++)
        if (!(mask & (1u << d))) {
            perm[np++] = d;
            shape[nk++] = a->shape[d];
        }
    for (int d = 0; d < a->ndim; d++)
        if (mask & (1u << d)) {
            perm[np++] = d;
            R *= a->shape[d];
        }
    shape[nk] = R;
    clt_tensor *p = NULL;
    clt_status st = clt__permute(a, a->ndim, perm, &p, fn);
    if (st == CLT_OK)
        st = clt__reshape(p, nk + 1, shape, out, fn);
    clt_tensor_free(p);
    return st;
}

/* a summed (how 0), or its largest (1) or smallest (2) element taken,
 * over the dims of mask: the reduced dims folded into one, reduced along
 * it, and the result given the reduced shape. */
static clt_status over_dims(const clt_tensor *a, unsigned mask, int keepdim, int how,
                            clt_tensor **out, const char *fn)
{
    int ond;
    int64_t oshape[CLT_MAX_DIMS];
    reduced_shape(a, mask, keepdim, &ond, oshape);
    clt_status st = CLT_OK;
    clt_tensor *f = NULL, *v = NULL;
    CLT__TRY(fold_dims(a, mask, &f, fn));
    CLT__TRY(how == 0   ? clt__sum_dim(f, -1, 0, &v, fn)
             : how == 1 ? clt__max_dim(f, -1, 0, &v, NULL, fn)
                        : clt__min_dim(f, -1, 0, &v, NULL, fn));
    CLT__TRY(clt__reshape(v, ond, oshape, out, fn));
done:
    clt_tensor_free(f);
    clt_tensor_free(v);
    return st;
}

clt_status clt__amax(const clt_tensor *a, const int *dims, int ndims, int keepdim, bool max,
                     clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    unsigned mask;
    clt_status st = clt__dims_mask(a, dims, ndims, &mask, fn);
    if (st != CLT_OK)
        return st;
    const char *name = max ? "amax" : "amin";
    if (a->numel == 0 && ndims == 0 && a->ndim > 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected reduction dim to be specified for input.numel() == 0. "
                          "Specify the reduction dim with the 'dim' argument (%s)",
                          fn, name);
    for (int d = 0; d < a->ndim; d++)
        if ((mask & (1u << d)) && a->shape[d] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Expected reduction dim %d to have non-zero size (%s)", fn, d,
                              name);
    st = over_dims(a, mask, keepdim, max ? 1 : 2, out, fn);
    return st == CLT_OK ? clt__ok() : st;
}

/* a with its NaNs as 0 (a new handle on a for other dtypes). */
static clt_status nan_as_zero(const clt_tensor *a, clt_tensor **out, const char *fn)
{
    if (!clt__dtype_is_float(a->dtype))
        return clt__view(a, a->ndim, a->shape, out, fn);
    clt_tensor *m = NULL;
    clt_status st = clt__isnan_in(fn, a, &m);
    if (st == CLT_OK)
        st = clt__masked_fill(a, m, 0.0, out, fn);
    clt_tensor_free(m);
    return st;
}

clt_status clt__nansum(const clt_tensor *a, bool all, int dim, int keepdim, clt_tensor **out,
                       const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    /* torch's words; the sums take complex tensors now, nansum does not */
    if (clt__dtype_is_complex(a->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: nansum does not support complex inputs",
                          fn);
    clt_tensor *z = NULL;
    clt_status st = nan_as_zero(a, &z, fn);
    if (st == CLT_OK)
        st = all ? clt__sum(z, out, fn) : clt__sum_dim(z, dim, keepdim, out, fn);
    clt_tensor_free(z);
    return st;
}

clt_status clt__count_nonzero(const clt_tensor *a, const int *dims, int ndims, clt_tensor **out,
                              const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    unsigned mask;
    clt_status st = clt__dims_mask(a, dims, ndims, &mask, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *nz = NULL;
    st = clt__ne_scalar_in(fn, a, 0.0, &nz);
    if (st == CLT_OK)
        st = over_dims(nz, mask, 0, 0, out, fn);
    clt_tensor_free(nz);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- order statistics over sorted slices --------------------------------------- */

static const char *stats_options(clt_dtype dt, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    const char *opts = clt__opts_cached(&slots[dt], "T", dt, NULL, dt, "");
    if (opts == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return opts;
}

static const char *const pick_names[] = {"kthvalue", "median", "nanmedian", "mode"};

clt_status clt__order_stat(const clt_tensor *a, clt__stat_pick what, bool all, int dim, int64_t k,
                           int keepdim, clt_tensor **values, clt_tensor **indices,
                           const char *fn)
{
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(values, fn);
    *values = NULL;
    CLT__REQUIRE_ARG(a, fn);
    const char *name = pick_names[what];
    if (a->dtype == CLT_BOOL && what != CLT__PICK_MODE)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: \"%s\" not implemented for bool tensors",
                          fn, name);
    clt_status st = CLT_OK;
    clt_tensor *flat = NULL, *sv = NULL, *si = NULL, *v = NULL, *x = NULL;
    const clt_tensor *src = a;
    int d = 0, ond = 0;
    int64_t outer, R, inner, oshape[CLT_MAX_DIMS];
    if (all) {
        /* torch.median(a): the lower median of every element, NaN for none. */
        int64_t n = a->numel;
        CLT__TRY(clt__reshape(a, 1, &n, &flat, fn));
        src = flat;
    } else {
        CLT__TRY(clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn));
        for (int q = 0; q < a->ndim; q++)
            if (q != d || keepdim)
                oshape[ond++] = q == d ? 1 : a->shape[q];
    }
    clt__around(src, d, &outer, &R, &inner);
    if (what == CLT__PICK_KTH && (k < 1 || k > R)) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: selected number k out of range for dimension %d (k = %lld, size "
                        "%lld)",
                        fn, d, (long long)k, (long long)R);
        goto done;
    }
    if (R == 0 && !all) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: Expected reduction dim %d to have non-zero size (%s)", fn, d, name);
        goto done;
    }
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, ond, oshape, &v));
    CLT__TRY(clt__result_new(fn, a->dev, CLT_INT64, ond, oshape, &x));
    if (R == 0) {
        CLT__TRY(clt__fill_value(v, NAN));
    } else if (v->numel > 0) {
        const char *opts = stats_options(a->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__sort(src, d, false, &sv, &si, fn));
        cl_mem m_sv = clt__mem(sv), m_si = clt__mem(si), m_v = clt__mem(v), m_x = clt__mem(x);
        cl_long l_R = R, l_inner = inner, l_k = k - 1, l_total = outer * inner;
        cl_int l_what = what;
        size_t gws = (size_t)l_total;
        if (what == CLT__PICK_MODE) {
            clt__arg args[] = {CLT__ARG(m_sv), CLT__ARG(m_si), CLT__ARG(l_R), CLT__ARG(l_inner),
                               CLT__ARG(m_v),  CLT__ARG(m_x),  CLT__ARG(l_total)};
            CLT__TRY(clt__error_in(
                clt__launch(a->dev, "stats", opts, "mode_sorted", 1, &gws, NULL, 7, args), fn));
        } else {
            clt__arg args[] = {CLT__ARG(m_sv), CLT__ARG(m_si), CLT__ARG(l_R),
                               CLT__ARG(l_inner), CLT__ARG(l_what), CLT__ARG(l_k),
                               CLT__ARG(m_v),  CLT__ARG(m_x),  CLT__ARG(l_total)};
            CLT__TRY(clt__error_in(
                clt__launch(a->dev, "stats", opts, "pick_sorted", 1, &gws, NULL, 9, args), fn));
        }
    }
    *values = v;
    v = NULL;
    if (indices) {
        *indices = x;
        x = NULL;
    }
done:
    clt_tensor_free(flat);
    clt_tensor_free(sv);
    clt_tensor_free(si);
    clt_tensor_free(v);
    clt_tensor_free(x);
    return st == CLT_OK ? clt__ok() : st;
}

/* q as a contiguous 1-D tensor of a's dtype on a's device, its values
 * checked to lie in [0, 1] (a tensor's are read back: torch checks them
 * too); *nq its length, *vector whether it was 1-D. */
static clt_status quantile_q(const clt_tensor *a, const clt_tensor *q, double qv,
                             clt_tensor **out, int64_t *nq, bool *vector, const char *fn)
{
    clt_status st = CLT_OK;
    double *host = NULL;
    clt_tensor *c = NULL;
    *vector = false;
    if (q == NULL) {
        if (!(qv >= 0.0 && qv <= 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: q must be in the range [0, 1] but got %g", fn, qv);
        *nq = 1;
        int64_t one = 1;
        return clt__full(a->dev, a->dtype, 1, &one, qv, out);
    }
    CLT__TRY(clt__same_device(a, q, fn));
    if (q->ndim > 1) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: q must be a scalar or 1D tensor", fn);
        goto done;
    }
    if (q->dtype != a->dtype) {
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: q tensor must be same dtype as the input tensor (%s, not %s)", fn,
                        clt_dtype_name(a->dtype), clt_dtype_name(q->dtype));
        goto done;
    }
    *vector = q->ndim == 1;
    *nq = q->numel;
    CLT__TRY(clt__copy_as(fn, q, CLT_FLOAT64, &c));
    host = clt__malloc((size_t)(*nq > 0 ? *nq : 1) * sizeof *host);
    if (host == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    CLT__TRY(clt__tensor_read_at(c, host, (size_t)*nq * sizeof *host, fn,
                                 __builtin_return_address(0)));
    for (int64_t t = 0; t < *nq; t++)
        if (!(host[t] >= 0.0 && host[t] <= 1.0)) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: q values must be in the range [0, 1] (q[%lld] is %g)", fn,
                            (long long)t, host[t]);
            goto done;
        }
    {
        int64_t n = *nq;
        clt_tensor_free(c);
        c = NULL;
        CLT__TRY(clt__copy_as(fn, q, a->dtype, &c));
        CLT__TRY(clt__reshape(c, 1, &n, out, fn));
    }
done:
    free(host);
    clt_tensor_free(c);
    return st;
}

clt_status clt__quantile(const clt_tensor *a, const clt_tensor *q, double qv, const int *dim,
                         int keepdim, int interp, bool ignore_nan, clt_tensor **out,
                         clt_tensor **lo, clt_tensor **hi, clt_tensor **w, const char *fn)
{
    if (lo)
        *lo = NULL;
    if (hi)
        *hi = NULL;
    if (w)
        *w = NULL;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (interp < 0 || interp > 4)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: interpolation must be one of linear, lower, higher, midpoint or "
                          "nearest (0 to 4), not %d",
                          fn, interp);
    if (a->dtype != CLT_FLOAT32 && a->dtype != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: input tensor must be either float or double dtype, not %s", fn,
                          clt_dtype_name(a->dtype));
    int d = 0;
    if (dim) {
        clt_status st = clt__wrap_dim(*dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
        if (st != CLT_OK)
            return st;
    }
    if (a->numel == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: input tensor must be non-empty", fn);
    clt_status st = CLT_OK;
    clt_tensor *qt = NULL, *flat = NULL, *sv = NULL, *si = NULL, *v = NULL, *xl = NULL,
               *xh = NULL, *xw = NULL;
    int64_t nq = 0;
    bool vector = false;
    CLT__TRY(quantile_q(a, q, qv, &qt, &nq, &vector, fn));
    /* The result: [nq] when q is 1-D, then a's shape reduced along dim
     * (every dim when dim is NULL), size 1 there when keepdim. */
    int ond = 0;
    int64_t oshape[CLT_MAX_DIMS + 1];
    if (vector)
        oshape[ond++] = nq;
    for (int k = 0; k < a->ndim; k++)
        if ((dim && k != d) || keepdim)
            oshape[ond++] = (dim && k != d) ? a->shape[k] : 1;
    const clt_tensor *src = a;
    if (dim == NULL) {
        int64_t n = a->numel;
        CLT__TRY(clt__reshape(a, 1, &n, &flat, fn));
        src = flat;
    }
    int64_t outer, R, inner;
    clt__around(src, d, &outer, &R, &inner);
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, ond, oshape, &v));
    CLT__TRY(clt__temp_new(fn, "the indices", a->dev, CLT_INT64, ond, oshape, &xl));
    CLT__TRY(clt__temp_new(fn, "the indices", a->dev, CLT_INT64, ond, oshape, &xh));
    CLT__TRY(clt__temp_new(fn, "the weights", a->dev, a->dtype, ond, oshape, &xw));
    if (v->numel > 0) {
        const char *opts = stats_options(a->dtype, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(clt__sort(src, d, false, &sv, &si, fn));
        cl_mem m_sv = clt__mem(sv), m_si = clt__mem(si), m_q = clt__mem(qt), m_v = clt__mem(v),
               m_l = clt__mem(xl), m_h = clt__mem(xh), m_w = clt__mem(xw);
        cl_long l_R = R, l_inner = inner, l_nq = nq, l_total = outer * inner;
        cl_int l_interp = interp, l_ign = ignore_nan;
        size_t gws = (size_t)l_total;
        clt__arg args[] = {CLT__ARG(m_sv),     CLT__ARG(m_si),  CLT__ARG(l_R),
                           CLT__ARG(l_inner),  CLT__ARG(m_q),   CLT__ARG(l_nq),
                           CLT__ARG(l_interp), CLT__ARG(l_ign), CLT__ARG(m_v),
                           CLT__ARG(m_l),      CLT__ARG(m_h),   CLT__ARG(m_w),
                           CLT__ARG(l_total)};
        CLT__TRY(clt__error_in(
            clt__launch(a->dev, "stats", opts, "quantile_sorted", 1, &gws, NULL, 13, args), fn));
    }
    *out = v;
    v = NULL;
    if (lo) {
        *lo = xl;
        xl = NULL;
    }
    if (hi) {
        *hi = xh;
        xh = NULL;
    }
    if (w) {
        *w = xw;
        xw = NULL;
    }
done:;
    clt_tensor *tmp[] = {qt, flat, sv, si, v, xl, xh, xw};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
        clt_tensor_free(tmp[k]);
    return st == CLT_OK ? clt__ok() : st;
}
