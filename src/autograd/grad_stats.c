/* grad_stats.c: the public reductions of reduce.h that src/ops/reduce_stats.c
 * computes (amax, amin, aminmax, nansum, nanmean, count_nonzero, var_mean,
 * std_mean, median, nanmedian, kthvalue, mode, quantile) with their
 * backward formulas, as torch 1.13's derivatives.yaml routes them. */
#include <math.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* Node integers: i[0] the dim (-1: every dim), i[2] the mask of reduced
 * dims, i[3..6] for quantile.  The formulas are of recorded ops (the
 * recording forms record only in a pass that creates a graph), their
 * masks, counts, places and weights constants, as in torch's. */

/* g with the node's reduced dims back as size 1, so that it broadcasts
 * against the input (edge 0). */
static clt_status keep_dims(clt__node *n, const clt_tensor *g, clt_tensor **out)
{
    const clt__edge *e = &n->in[0];
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++)
        shape[d] = (n->i[2] >> d) & 1 ? 1 : e->shape[d];
    return clt__reshape_rec("clt_backward", g, e->ndim, shape, out);
}

/* saved: a, out.  amax/amin: g shared evenly among the elements equal to
 * the result, as torch's scale_grad_by_count (NaN over a slice whose
 * result is NaN: none equals it, and g / 0 * 0 is NaN). */
static clt_status bw_amax(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *ou = NULL, *gu = NULL, *eq = NULL, *ef = NULL, *cnt = NULL, *share = NULL;
    CLT__TRY(keep_dims(n, S(1), &ou));
    CLT__TRY(keep_dims(n, g, &gu));
    CLT__TRY(clt__eq_in("clt_backward", S(0), ou, &eq));
    CLT__TRY(clt__to_dtype(eq, g->dtype, &ef, "clt_backward"));
    CLT__TRY(clt__alias(ef, &cnt));
    for (int d = 0; d < n->in[0].ndim; d++)
        if ((n->i[2] >> d) & 1) {
            clt_tensor *s = NULL;
            st = clt__sum_dim(cnt, d, 1, &s, "clt_backward");
            clt_tensor_free(cnt);
            cnt = s;
            CLT__TRY(st);
        }
    CLT__TRY(clt__div_rec("clt_backward", gu, cnt, &share));
    CLT__TRY(clt__mul_rec("clt_backward", ef, share, &gin[0]));
done:
    clt_tensor_free(ou);
    clt_tensor_free(gu);
    clt_tensor_free(eq);
    clt_tensor_free(ef);
    clt_tensor_free(cnt);
    clt_tensor_free(share);
    return st;
}

/* saved: a.  nansum: g where a is a number, 0 at its NaNs. */
static clt_status bw_nansum(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *gu = NULL, *ge = NULL, *nan = NULL;
    CLT__TRY(keep_dims(n, g, &gu));
    CLT__TRY(clt__expand_rec("clt_backward", gu, n->in[0].ndim, n->in[0].shape, &ge));
    CLT__TRY(clt__isnan_in("clt_backward", S(0), &nan));
    CLT__TRY(clt__masked_fill_rec("clt_backward", ge, nan, 0.0, &gin[0]));
done:
    clt_tensor_free(gu);
    clt_tensor_free(ge);
    clt_tensor_free(nan);
    return st;
}

/* saved: the indices the forward picked along i[0].  median, nanmedian,
 * kthvalue and mode along a dim: g goes to the element each index names,
 * as torch's value_selecting_reduction_backward. */
static clt_status bw_select(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    if (n->i[0] < 0)
        return clt__alias_grad(g, &gin[0]); /* a 0-dim input is its own pick */
    clt_status st = CLT_OK;
    clt_tensor *idx = NULL, *gu = NULL, *z = NULL;
    CLT__TRY(keep_dims(n, S(0), &idx));
    CLT__TRY(keep_dims(n, g, &gu));
    CLT__TRY(clt__full(e->dev, g->dtype, e->ndim, e->shape, 0.0, &z));
    CLT__TRY(clt__creating_graph() ? clt_scatter(z, (int)n->i[0], idx, gu, &gin[0])
                                   : clt__scatter(z, (int)n->i[0], idx, gu, &gin[0],
                                                  "clt_backward"));
done:
    clt_tensor_free(idx);
    clt_tensor_free(gu);
    clt_tensor_free(z);
    return st;
}

/* saved: a, out (0-dim).  median and nanmedian of every element: g shared
 * evenly among the elements equal to the result, or among the NaNs when
 * it is NaN (torch's evenly_distribute_backward). */
static clt_status bw_evenly(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *eq = NULL, *an = NULL, *on = NULL, *both = NULL, *m = NULL, *mf = NULL,
               *cnt = NULL, *share = NULL;
    CLT__TRY(clt__eq_in("clt_backward", S(0), S(1), &eq));
    CLT__TRY(clt__isnan_in("clt_backward", S(0), &an));
    CLT__TRY(clt__isnan_in("clt_backward", S(1), &on));
    CLT__TRY(clt__logical_and_in("clt_backward", an, on, &both));
    CLT__TRY(clt__logical_or_in("clt_backward", eq, both, &m));
    CLT__TRY(clt__to_dtype(m, g->dtype, &mf, "clt_backward"));
    CLT__TRY(clt__sum(mf, &cnt, "clt_backward"));
    CLT__TRY(clt__div_rec("clt_backward", g, cnt, &share));
    CLT__TRY(clt__mul_rec("clt_backward", mf, share, &gin[0]));
done:
    clt_tensor_free(eq);
    clt_tensor_free(an);
    clt_tensor_free(on);
    clt_tensor_free(both);
    clt_tensor_free(m);
    clt_tensor_free(mf);
    clt_tensor_free(cnt);
    clt_tensor_free(share);
    return st;
}

/* t (of the quantile's result layout, [nq, outer, inner] in memory) as
 * [outer, nq, inner], the layout scatter_add takes along dim 1. */
static clt_status by_slice(clt__node *n, const clt_tensor *t, clt_tensor **out)
{
    int64_t shape[3] = {n->i[6], n->i[3], n->i[5]};
    const int perm[3] = {1, 0, 2};
    clt_tensor *r = NULL;
    clt_status st = clt__reshape_rec("clt_backward", t, 3, shape, &r);
    if (st == CLT_OK)
        st = clt__permute_rec("clt_backward", r, 3, perm, out);
    clt_tensor_free(r);
    return st;
}

/* saved: lo, hi, w.  quantile: the lerp's g * (1 - w) to the element at lo
 * and g * w to the one at hi, put back where the sort took them from (as
 * torch's composite quantile's gather and sort backward do).  i[3..6]:
 * outer, R, inner and the number of q values.  Recorded ops (clt__twice):
 * linear in g, with the places and weights constants, as in torch. */
static clt_status bw_quantile(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[0];
    clt_tensor *omw = NULL, *glo = NULL, *ghi = NULL, *plo = NULL, *phi = NULL, *xlo = NULL,
               *xhi = NULL, *z = NULL, *z1 = NULL, *z2 = NULL;
    int64_t zs[3] = {n->i[3], n->i[4], n->i[5]};
    bool rec = clt__creating_graph();
    CLT__TRY(clt__rsub_scalar_in("clt_backward", S(2), 1.0, &omw));
    CLT__TRY(clt__mul_rec("clt_backward", g, omw, &glo));
    CLT__TRY(clt__mul_rec("clt_backward", g, S(2), &ghi));
    CLT__TRY(by_slice(n, glo, &plo));
    CLT__TRY(by_slice(n, ghi, &phi));
    CLT__TRY(by_slice(n, S(0), &xlo));
    CLT__TRY(by_slice(n, S(1), &xhi));
    CLT__TRY(clt__full(e->dev, g->dtype, 3, zs, 0.0, &z));
    CLT__TRY(rec ? clt_scatter_add(z, 1, xlo, plo, &z1)
                 : clt__scatter_add(z, 1, xlo, plo, &z1, "clt_backward"));
    CLT__TRY(rec ? clt_scatter_add(z1, 1, xhi, phi, &z2)
                 : clt__scatter_add(z1, 1, xhi, phi, &z2, "clt_backward"));
    CLT__TRY(clt__reshape_rec("clt_backward", z2, e->ndim, e->shape, &gin[0]));
done:;
    clt_tensor *tmp[] = {omw, glo, ghi, plo, phi, xlo, xhi, z, z1, z2};
    for (size_t k = 0; k < sizeof tmp / sizeof tmp[0]; k++)
        clt_tensor_free(tmp[k]);
    return st;
}

/* The mask of the dims a reduction over dim (all: every dim) removes, for
 * keep_dims; a 0-dim a has none. */
static int64_t dim_mask(const clt_tensor *a, bool all, int dim)
{
    if (a->ndim == 0)
        return 0;
    if (all)
        return ((int64_t)1 << a->ndim) - 1;
    return (int64_t)1 << (dim < 0 ? dim + a->ndim : dim);
}

/* Records node `name` on *out after a forward that returned st, saving
 * `saved` (nsaved of them); dim the wrapped dim (-1 every dim, or a 0-dim
 * input), mask the reduced dims. */
static clt_status record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                         const clt_tensor *a, int nsaved, const clt_tensor *const *saved,
                         int64_t dim, int64_t mask, clt__node **node)
{
    clt__node *n = NULL;
    if (node)
        *node = NULL;
    st = clt__record(st, out, name, bw, 1, &a, nsaved, saved, &n);
    clt__twice(n); /* every formula here is of recorded ops */
    if (n) {
        n->i[0] = a->ndim == 0 ? -1 : dim;
        n->i[2] = mask;
        if (node)
            *node = n;
    }
    return st;
}

/* ---- amax, amin, aminmax --------------------------------------------------- */

clt_status clt__amax_rec(const clt_tensor *a, const int *dims, int ndims, int keepdim,
                         bool max, clt_tensor **out, const char *fn)
{
    clt_status st = clt__amax(a, dims, ndims, keepdim, max, out, fn);
    if (st != CLT_OK)
        return st;
    unsigned mask = 0;
    clt__dims_mask(a, dims, ndims, &mask, fn);
    const clt_tensor *sv[2] = {a, *out};
    return record(st, out, max ? "AmaxBackward0" : "AminBackward0", bw_amax, a, 2, sv, -1,
                  mask, NULL);
}

clt_status clt_amax(const clt_tensor *a, const int *dims, int ndims, int keepdim,
                    clt_tensor **out)
{
    return clt__amax_rec(a, dims, ndims, keepdim, true, out, "clt_amax");
}

clt_status clt_amin(const clt_tensor *a, const int *dims, int ndims, int keepdim,
                    clt_tensor **out)
{
    return clt__amax_rec(a, dims, ndims, keepdim, false, out, "clt_amin");
}

static clt_status aminmax(const clt_tensor *a, const int *dim, int keepdim, clt_tensor **min,
                          clt_tensor **max, const char *fn)
{
    if (max)
        *max = NULL;
    CLT__REQUIRE_ARG(min, fn);
    *min = NULL;
    CLT__REQUIRE_ARG(max, fn);
    CLT__REQUIRE_ARG(a, fn);
    int d = 0;
    if (dim) {
        clt_status st = clt__wrap_dim(*dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
        if (st != CLT_OK)
            return st;
        if (a->ndim > 0 && a->shape[d] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Expected reduction dim %d to have non-zero size", fn, d);
    } else if (a->numel == 0) {
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cannot compute aminmax over an empty dimension as the "
                          "operation has no identity",
                          fn);
    }
    clt_status st =
        clt__amax_rec(a, dim ? &d : NULL, dim ? 1 : 0, dim ? keepdim : 0, false, min, fn);
    if (st == CLT_OK)
        st = clt__amax_rec(a, dim ? &d : NULL, dim ? 1 : 0, dim ? keepdim : 0, true, max, fn);
    if (st != CLT_OK) {
        clt_tensor_free(*min);
        *min = NULL;
    }
    return st;
}

clt_status clt_aminmax(const clt_tensor *a, clt_tensor **min, clt_tensor **max)
{
    return aminmax(a, NULL, 0, min, max, "clt_aminmax");
}

clt_status clt_aminmax_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **min,
                           clt_tensor **max)
{
    return aminmax(a, &dim, keepdim, min, max, "clt_aminmax_dim");
}

/* ---- nansum, nanmean, count_nonzero --------------------------------------------- */

static clt_status nansum_rec(const clt_tensor *a, bool all, int dim, int keepdim,
                             clt_tensor **out, const char *fn)
{
    clt_status st = clt__nansum(a, all, dim, keepdim, out, fn);
    return record(st, out, "NansumBackward0", bw_nansum, a, 1, &a, all ? -1 : dim,
                  st == CLT_OK ? dim_mask(a, all, dim) : 0, NULL);
}

clt_status clt_nansum(const clt_tensor *a, clt_tensor **out)
{
    return nansum_rec(a, true, 0, 0, out, "clt_nansum");
}

clt_status clt_nansum_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return nansum_rec(a, false, dim, keepdim, out, "clt_nansum_dim");
}

/* torch.nanmean: nansum / the count of numbers, recorded as the two ops
 * (DivBackward0 last, as torch's composite). */
static clt_status nanmean(const clt_tensor *a, bool all, int dim, int keepdim, clt_tensor **out,
                          const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected input to have floating point dtype but got %s", fn,
                          clt_dtype_name(a->dtype));
    clt_status st = CLT_OK;
    clt_tensor *s = NULL, *num = NULL, *cnt = NULL;
    CLT__TRY(nansum_rec(a, all, dim, keepdim, &s, fn));
    CLT__TRY(clt__eq_in(fn, a, a, &num));
    CLT__TRY(all ? clt__sum(num, &cnt, fn) : clt__sum_dim(num, dim, keepdim, &cnt, fn));
    CLT__TRY(clt__div_rec(fn, s, cnt, out));
done:
    clt_tensor_free(s);
    clt_tensor_free(num);
    clt_tensor_free(cnt);
    return st;
}

clt_status clt_nanmean(const clt_tensor *a, clt_tensor **out)
{
    return nanmean(a, true, 0, 0, out, "clt_nanmean");
}

clt_status clt_nanmean_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return nanmean(a, false, dim, keepdim, out, "clt_nanmean_dim");
}

clt_status clt_count_nonzero(const clt_tensor *a, const int *dims, int ndims, clt_tensor **out)
{
    return clt__count_nonzero(a, dims, ndims, out, "clt_count_nonzero");
}

/* ---- var_mean, std_mean ---------------------------------------------------------- */

/* var (or std) and mean along dim, or of every element (all), each recorded
 * as its own op. */
static clt_status spread_mean(const clt_tensor *a, bool std, bool all, int dim,
                              double correction, int keepdim, clt_tensor **var,
                              clt_tensor **mean, const char *fn)
{
    if (mean)
        *mean = NULL;
    CLT__REQUIRE_ARG(var, fn);
    *var = NULL;
    CLT__REQUIRE_ARG(mean, fn);
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = CLT_OK;
    clt_tensor *flat = NULL;
    const clt_tensor *x = a;
    if (all) {
        int64_t n = a->numel;
        CLT__TRY(clt__reshape_rec(fn, a, 1, &n, &flat));
        x = flat;
        dim = 0;
        keepdim = 0;
    }
    CLT__TRY(std ? clt__std_dim_rec(fn, x, dim, correction, keepdim, var)
                 : clt__var_dim_rec(fn, x, dim, correction, keepdim, var));
    CLT__TRY(clt__mean_dim_rec(fn, x, dim, keepdim, mean));
done:
    clt_tensor_free(flat);
    if (st != CLT_OK) {
        clt_tensor_free(*var);
        *var = NULL;
    }
    return st;
}

clt_status clt_var_mean(const clt_tensor *a, double correction, clt_tensor **var,
                        clt_tensor **mean)
{
    return spread_mean(a, false, true, 0, correction, 0, var, mean, "clt_var_mean");
}

clt_status clt_var_mean_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                            clt_tensor **var, clt_tensor **mean)
{
    return spread_mean(a, false, false, dim, correction, keepdim, var, mean, "clt_var_mean_dim");
}

clt_status clt_std_mean(const clt_tensor *a, double correction, clt_tensor **std,
                        clt_tensor **mean)
{
    return spread_mean(a, true, true, 0, correction, 0, std, mean, "clt_std_mean");
}

clt_status clt_std_mean_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                            clt_tensor **std, clt_tensor **mean)
{
    return spread_mean(a, true, false, dim, correction, keepdim, std, mean, "clt_std_mean_dim");
}

/* ---- median, nanmedian, kthvalue, mode ------------------------------------------ */

/* The whole-tensor forms: a 0-dim value, g shared evenly. */
static clt_status order_all(const clt_tensor *a, clt__stat_pick what, clt_tensor **out,
                            const char *name, const char *fn)
{
    clt_status st = clt__order_stat(a, what, true, 0, 0, 0, out, NULL, fn);
    const clt_tensor *sv[2] = {a, st == CLT_OK ? *out : NULL};
    return record(st, out, name, bw_evenly, a, 2, sv, -1,
                  st == CLT_OK ? dim_mask(a, true, 0) : 0, NULL);
}

/* The forms along dim: the values record the node, which keeps the
 * indices; the caller gets them too when it asks. */
static clt_status order_dim(const clt_tensor *a, clt__stat_pick what, int dim, int64_t k,
                            int keepdim, clt_tensor **values, clt_tensor **indices,
                            const char *name, const char *fn)
{
    if (indices)
        *indices = NULL;
    clt_tensor *idx = NULL;
    clt_status st = clt__order_stat(a, what, false, dim, k, keepdim, values, &idx, fn);
    int d = 0;
    if (st == CLT_OK)
        clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
    st = record(st, values, name, bw_select, a, 1, (const clt_tensor *const *)&idx, d,
                st == CLT_OK ? dim_mask(a, false, d) : 0, NULL);
    if (st == CLT_OK && indices)
        *indices = idx;
    else
        clt_tensor_free(idx);
    return st;
}

clt_status clt_median(const clt_tensor *a, clt_tensor **out)
{
    return order_all(a, CLT__PICK_MEDIAN, out, "MedianBackward0", "clt_median");
}

clt_status clt_median_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                          clt_tensor **indices)
{
    return order_dim(a, CLT__PICK_MEDIAN, dim, 0, keepdim, values, indices, "MedianBackward1",
                     "clt_median_dim");
}

clt_status clt_nanmedian(const clt_tensor *a, clt_tensor **out)
{
    return order_all(a, CLT__PICK_NANMEDIAN, out, "NanmedianBackward0", "clt_nanmedian");
}

clt_status clt_nanmedian_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                             clt_tensor **indices)
{
    return order_dim(a, CLT__PICK_NANMEDIAN, dim, 0, keepdim, values, indices,
                     "NanmedianBackward1", "clt_nanmedian_dim");
}

clt_status clt_kthvalue(const clt_tensor *a, int64_t k, int dim, int keepdim,
                        clt_tensor **values, clt_tensor **indices)
{
    return order_dim(a, CLT__PICK_KTH, dim, k, keepdim, values, indices, "KthvalueBackward0",
                     "clt_kthvalue");
}

clt_status clt_mode(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                    clt_tensor **indices)
{
    return order_dim(a, CLT__PICK_MODE, dim, 0, keepdim, values, indices, "ModeBackward0",
                     "clt_mode");
}

/* ---- quantile ------------------------------------------------------------------- */

static clt_status quantile(const clt_tensor *a, const clt_tensor *q, double qv, const int *dim,
                           int keepdim, clt_quantile_interp interp, bool ignore_nan,
                           clt_tensor **out, const char *fn)
{
    clt_tensor *lo = NULL, *hi = NULL, *w = NULL;
    bool grad = a != NULL && clt__grad_needed(1, &a);
    clt_status st = clt__quantile(a, q, qv, dim, keepdim, (int)interp, ignore_nan, out,
                                  grad ? &lo : NULL, grad ? &hi : NULL, grad ? &w : NULL, fn);
    if (st == CLT_OK && grad) {
        const clt_tensor *sv[3] = {lo, hi, w};
        clt__node *n = NULL;
        st = record(st, out, "QuantileBackward0", bw_quantile, a, 3, sv, -1, 0, &n);
        if (n) {
            int d = 0;
            if (dim)
                clt__wrap_dim(*dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
            int64_t outer = 1, R = a->numel, inner = 1;
            if (dim)
                clt__around(a, d, &outer, &R, &inner);
            n->i[3] = outer;
            n->i[4] = R;
            n->i[5] = inner;
            n->i[6] = lo->numel / (outer * inner);
        }
    }
    clt_tensor_free(lo);
    clt_tensor_free(hi);
    clt_tensor_free(w);
    return st;
}

clt_status clt_quantile(const clt_tensor *a, const clt_tensor *q, double q_value,
                        const int *dim, int keepdim, clt_quantile_interp interpolation,
                        clt_tensor **out)
{
    CLT__AUTOCAST("clt_quantile", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, q),
                  clt_quantile(CLT__AC(0), CLT__AC(1), q_value, dim, keepdim, interpolation, out));
    return quantile(a, q, q_value, dim, keepdim, interpolation, false, out, "clt_quantile");
}

clt_status clt_nanquantile(const clt_tensor *a, const clt_tensor *q, double q_value,
                           const int *dim, int keepdim, clt_quantile_interp interpolation,
                           clt_tensor **out)
{
    CLT__AUTOCAST(
        "clt_nanquantile", CLT__AC_CPU(CLT__AC_FLOAT32), 2, (a, q),
        clt_nanquantile(CLT__AC(0), CLT__AC(1), q_value, dim, keepdim, interpolation, out));
    return quantile(a, q, q_value, dim, keepdim, interpolation, true, out, "clt_nanquantile");
}
