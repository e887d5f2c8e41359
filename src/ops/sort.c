/* sort.c: sort, argsort and topk along one dimension (the kernels of
 * cl/sort.cl): runs sorted, then merged pass by pass into the results;
 * topk of up to 16 elements selected in chunks without a sort, of more by
 * merge passes that make only the first k of each merged pair. */
#include <stdlib.h>

#include "internal.h"

/* Both must match cl/sort.cl. */
#define RUN 16
/* Output elements a merge_pass work-item takes at most. */
#define SEG_MAX 512

/* Work-items a group of sort_runs or topk_small takes at most.  PoCL's CPU
 * drivers keep every work-item's private arrays (256 bytes for these
 * kernels) on one thread's stack, maybe a caller's small one: a group size
 * left to the driver could make that hundreds of KiB (see GROUP_PRIVATE_MAX
 * in src/ops/reduce.c). */
#define GROUP_MAX 64

/* cl/sort.cl's build options for dtype (static storage), or NULL with the
 * message set. */
static const char *options(clt_dtype dt, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    const char *opts = clt__opts_cached(&slots[dt], "T", dt, NULL, dt, "");
    if (opts == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return opts;
}

/* Launches kernel over `items` work-items; with_arrays: in groups of at
 * most GROUP_MAX (the kernel returns past its items). */
static clt_status launch(clt_device *dev, const char *opts, const char *kernel, size_t items,
                         bool with_arrays, size_t nargs, const clt__arg *args, const char *fn)
{
    size_t lws = dev->info.max_work_group_size < GROUP_MAX ? 1 : GROUP_MAX;
    size_t gws = with_arrays ? (items + lws - 1) / lws * lws : items;
    return clt__error_in(clt__launch(dev, "sort", opts, kernel, 1, &gws,
                                     with_arrays ? &lws : NULL, nargs, args),
                         fn);
}

/* a seen as [outer, R, inner] around dimension d (a 0-dim tensor: one
 * element); internal.h declares it for the order statistics too. */
void clt__around(const clt_tensor *a, int d, int64_t *outer, int64_t *R, int64_t *inner)
{
    *outer = *R = *inner = 1;
    for (int k = 0; k < a->ndim; k++) {
        if (k < d)
            *outer *= a->shape[k];
        else if (k == d)
            *R = a->shape[k];
        else
            *inner *= a->shape[k];
    }
}

/* Values (a's dtype) and indices (int64) of a sorted along d, both of a's
 * shape, [outer, R, inner] around d; only the first `keep` of each slice
 * when keep < R (topk: each merge pass makes the first keep of each merged
 * pair, the rest of the buffers left as they were). */
static clt_status sort_into(const clt_tensor *a, int64_t outer, int64_t R, int64_t inner,
                            bool desc, int64_t keep, clt_tensor *vals, clt_tensor *idx,
                            const char *fn)
{
    const char *opts = options(a->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    clt_status st = CLT_OK;
    clt_tensor *ca = NULL, *tv = NULL, *ti = NULL;
    int64_t nruns = (R + RUN - 1) / RUN;
    int passes = 0;
    for (int64_t w = RUN; w < R; w *= 2)
        passes++;
    CLT__TRY(clt__contiguous_as(fn, a, a->dtype, &ca));
    if (passes > 0) {
        CLT__TRY(clt__temp_new(fn, "the merge buffer", a->dev, a->dtype, a->ndim, a->shape, &tv));
        CLT__TRY(clt__temp_new(fn, "the merge buffer", a->dev, CLT_INT64, a->ndim, a->shape,
                               &ti));
    }
    /* The passes alternate between the two pairs of buffers and end in the
     * results. */
    cl_mem v[2] = {clt__mem(vals), tv ? clt__mem(tv) : NULL};
    cl_mem x[2] = {clt__mem(idx), ti ? clt__mem(ti) : NULL};
    int cur = passes % 2;
    cl_long l_soff = ca->offset, l_R = R, l_inner = inner, l_nruns = nruns,
            l_total = outer * inner * nruns;
    cl_int l_desc = desc;
    cl_mem src = clt__mem(ca);
    clt__arg args[] = {CLT__ARG(src),     CLT__ARG(l_soff),  CLT__ARG(v[cur]),
                       CLT__ARG(x[cur]),  CLT__ARG(l_R),     CLT__ARG(l_inner),
                       CLT__ARG(l_nruns), CLT__ARG(l_desc),  CLT__ARG(l_total)};
    CLT__TRY(launch(a->dev, opts, "sort_runs", (size_t)l_total, true, 9, args, fn));
    for (int64_t w = RUN; w < R; w *= 2) {
        cl_long l_w = w, l_seg = 2 * w < SEG_MAX ? 2 * w : SEG_MAX,
                l_keep = keep < 2 * w ? keep : 2 * w, l_kseg = (l_keep + l_seg - 1) / l_seg,
                l_nsegs = (R + 2 * w - 1) / (2 * w) * l_kseg, l_t = outer * inner * l_nsegs;
        clt__arg margs[] = {CLT__ARG(v[cur]),     CLT__ARG(x[cur]),  CLT__ARG(v[1 - cur]),
                            CLT__ARG(x[1 - cur]), CLT__ARG(l_R),     CLT__ARG(l_inner),
                            CLT__ARG(l_w),        CLT__ARG(l_seg),   CLT__ARG(l_nsegs),
                            CLT__ARG(l_keep),     CLT__ARG(l_kseg),  CLT__ARG(l_desc),
                            CLT__ARG(l_t)};
        CLT__TRY(launch(a->dev, opts, "merge_pass", (size_t)l_t, false, 13, margs, fn));
        cur = 1 - cur;
    }
done:
    clt_tensor_free(ca);
    clt_tensor_free(tv);
    clt_tensor_free(ti);
    return st;
}

clt_status clt__sort(const clt_tensor *a, int dim, bool descending, clt_tensor **values,
                     clt_tensor **indices, const char *fn)
{
    if (values)
        *values = NULL;
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d;
    clt_status st = clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
    if (st != CLT_OK)
        return st;
    int64_t outer, R, inner;
    clt__around(a, d, &outer, &R, &inner);
    clt_tensor *v = NULL, *x = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &v));
    CLT__TRY(clt__result_new(fn, a->dev, CLT_INT64, a->ndim, a->shape, &x));
    if (a->numel > 0)
        CLT__TRY(sort_into(a, outer, R, inner, descending, R, v, x, fn));
    if (values) {
        *values = v;
        v = NULL;
    }
    if (indices) {
        *indices = x;
        x = NULL;
    }
done:
    clt_tensor_free(v);
    clt_tensor_free(x);
    return st == CLT_OK ? clt__ok() : st;
}

/* Both must match cl/sort.cl's topk_small. */
#define KMAX 16
#define TOPK_CHUNK 1024

/* The first k (1 <= k <= KMAX) of a ([outer, R, inner] around d)
 * into vals and idx ([outer, k, inner]): topk_small over chunks, then over
 * the chunks' candidates until one chunk is left. */
static clt_status topk_into(const clt_tensor *a, int64_t outer, int64_t R, int64_t inner,
                            int k, bool desc, clt_tensor *vals, clt_tensor *idx, const char *fn)
{
    const char *opts = options(a->dtype, fn);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    clt_status st = CLT_OK;
    clt_tensor *ca = NULL, *sv = NULL, *si = NULL, *tv = NULL, *ti = NULL;
    CLT__TRY(clt__contiguous_as(fn, a, a->dtype, &ca));
    cl_mem src = clt__mem(ca), sidx = clt__mem(ca); /* sidx unread in the first pass */
    cl_long l_soff = ca->offset, l_R = R, l_sin = inner, l_chunk = TOPK_CHUNK;
    cl_int l_has = 0, l_k = k, l_desc = desc;
    for (;;) {
        cl_long l_nch = (l_R + TOPK_CHUNK - 1) / TOPK_CHUNK, l_din = inner,
                l_total = outer * inner * l_nch;
        cl_mem dv = clt__mem(vals), di = clt__mem(idx);
        if (l_nch > 1) {
            int64_t shape[2] = {outer * inner, l_nch * k};
            l_din = 1;
            CLT__TRY(clt__temp_new(fn, "the candidates", a->dev, a->dtype, 2, shape, &tv));
            CLT__TRY(clt__temp_new(fn, "the candidates", a->dev, CLT_INT64, 2, shape, &ti));
            dv = clt__mem(tv);
            di = clt__mem(ti);
        }
        clt__arg args[] = {CLT__ARG(src),   CLT__ARG(l_soff), CLT__ARG(sidx),  CLT__ARG(l_has),
                           CLT__ARG(l_R),   CLT__ARG(l_sin),  CLT__ARG(l_chunk),
                           CLT__ARG(l_nch), CLT__ARG(l_k),    CLT__ARG(l_desc), CLT__ARG(dv),
                           CLT__ARG(di),    CLT__ARG(l_din),  CLT__ARG(l_total)};
        CLT__TRY(launch(a->dev, opts, "topk_small", (size_t)l_total, true, 14, args, fn));
        if (l_nch == 1)
            break;
        /* The candidates are the next pass's input. */
        clt_tensor_free(sv);
        clt_tensor_free(si);
        sv = tv;
        si = ti;
        tv = ti = NULL;
        src = clt__mem(sv);
        sidx = clt__mem(si);
        l_soff = 0;
        l_R = l_nch * k;
        l_sin = 1;
        l_has = 1;
    }
done:
    clt_tensor_free(ca);
    clt_tensor_free(sv);
    clt_tensor_free(si);
    clt_tensor_free(tv);
    clt_tensor_free(ti);
    return st;
}

/* *t replaced by a fresh copy of its first k along d. */
static clt_status first_k(clt_tensor **t, int d, int64_t k, const char *fn)
{
    clt_tensor *view = NULL, *c = NULL;
    clt_status st = clt__narrow(*t, d, 0, k, &view, fn);
    if (st == CLT_OK)
        st = clt__copy_as(fn, view, view->dtype, &c);
    clt_tensor_free(view);
    if (st == CLT_OK) {
        clt_tensor_free(*t);
        *t = c;
    }
    return st;
}

clt_status clt__topk(const clt_tensor *a, int64_t k, int dim, bool largest,
                     clt_tensor **values, clt_tensor **indices, const char *fn)
{
    if (values)
        *values = NULL;
    if (indices)
        *indices = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d;
    clt_status st = clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn);
    if (st != CLT_OK)
        return st;
    /* torch 1.13 has no CPU topk kernel for bool. */
    if (a->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: \"topk\" not implemented for bool tensors",
                          fn);
    int64_t outer, R, inner;
    clt__around(a, d, &outer, &R, &inner);
    if (k < 0 || k > R)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: selected index k out of range (k = %lld, size %lld along "
                          "dimension %d)",
                          fn, (long long)k, (long long)R, d);
    clt_tensor *nv = NULL, *nx = NULL;
    if (a->ndim > 0 && k >= 1 && k <= KMAX) {
        /* A few of many (top-5 accuracy): no full sort. */
        int64_t shape[CLT_MAX_DIMS];
        for (int q = 0; q < a->ndim; q++)
            shape[q] = q == d ? k : a->shape[q];
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, shape, &nv));
        CLT__TRY(clt__result_new(fn, a->dev, CLT_INT64, a->ndim, shape, &nx));
        if (nv->numel > 0)
            CLT__TRY(topk_into(a, outer, R, inner, (int)k, largest, nv, nx, fn));
    } else {
        /* More than KMAX: the merge sort making only the first k of each
         * merged pair, once its runs are longer than k. */
        CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &nv));
        CLT__TRY(clt__result_new(fn, a->dev, CLT_INT64, a->ndim, a->shape, &nx));
        /* CLTENSOR_TOPK=sort: the whole sort (the benchmarks' baseline). */
        const char *how = getenv("CLTENSOR_TOPK");
        int64_t keep = how && clt__strcaseeq(how, "sort") ? R : k > 0 ? k : 1;
        if (a->numel > 0)
            CLT__TRY(sort_into(a, outer, R, inner, largest, keep, nv, nx, fn));
        /* A 0-dim tensor gives itself for k 0 and 1 alike, as in torch. */
        if (a->ndim > 0 && k < R) {
            if (values)
                CLT__TRY(first_k(&nv, d, k, fn));
            CLT__TRY(first_k(&nx, d, k, fn));
        }
    }
    if (values) {
        *values = nv;
        nv = NULL;
    }
    if (indices) {
        *indices = nx;
        nx = NULL;
    }
done:
    clt_tensor_free(nv);
    clt_tensor_free(nx);
    return st == CLT_OK ? clt__ok() : st;
}
