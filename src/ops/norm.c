/* norm.c: the fused row normalisation of LayerNorm and GroupNorm and its
 * backward (cl/norm.cl), not recorded; the kernel shape follows the
 * reductions' style: a work-item per row on CPUs, a work-group per row on
 * GPUs. */
#include "internal.h"

/* Build options for dtype, with the statistics in double (acc64). */
static const char *options(clt_dtype dtype, bool acc64, const char *fn)
{
    static clt__opts_slot slots[2][CLT_DTYPE_COUNT];
    const char *o = clt__opts_cached(&slots[acc64][dtype], "T", dtype, NULL, dtype,
                                     acc64 ? " -DCLT_FP64 -DNM_ACC_DOUBLE" : "");
    if (o == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return o;
}

/* float32 statistics in double where the device has it, as var does. */
static bool acc64_for(const clt_tensor *x)
{
    return x->dtype == CLT_FLOAT32 && x->dev->info.fp64;
}

/* t contiguous from offset 0 (the kernels take no offset for it): t itself
 * or a copy; NULL t gives NULL. */
static clt_status dense(const char *fn, const clt_tensor *t, clt_tensor **out)
{
    *out = NULL;
    if (t == NULL)
        return CLT_OK;
    clt_status st = clt__contiguous_as(fn, t, t->dtype, out);
    if (st == CLT_OK && (*out)->offset != 0) {
        clt_tensor *c = *out;
        st = clt__copy_as(fn, c, c->dtype, out);
        clt_tensor_free(c);
    }
    return st;
}

/* A CPU launch of `items` work-items: groups small enough to leave each
 * core several (as the reductions' geometry), so that the 64 column blocks
 * of the affine sums of 1024 columns spread over the cores. */
void clt__cpu_geometry(const clt_device *dev, size_t items, size_t *gws, size_t *lws)
{
    size_t cu = dev->info.compute_units ? dev->info.compute_units : 1, l = 1;
    while (l * 2 <= 64 && items / (l * 2) >= cu * 8)
        l *= 2;
    *lws = l;
    *gws = (items + l - 1) / l * l;
}

/* The work-group size for rows of n on a GPU: a power of two up to 256. */
static size_t group_size(const clt_device *dev, int64_t n)
{
    size_t lws = 1, cap = dev->info.max_work_group_size;
    while (lws * 2 <= 256 && lws * 2 <= cap && lws < (size_t)n)
        lws *= 2;
    return lws;
}

clt_status clt__native_norm(const clt_tensor *x, int64_t n, const clt_tensor *w,
                            const clt_tensor *b, double eps, clt_tensor **y, clt_tensor **mean,
                            clt_tensor **rstd, const char *fn)
{
    *y = *mean = *rstd = NULL;
    bool acc64 = acc64_for(x);
    clt_dtype adt = acc64 ? CLT_FLOAT64 : x->dtype;
    int64_t rows = n > 0 ? x->numel / n : 0;
    clt_tensor *cx = NULL, *cw = NULL, *cb = NULL, *ry = NULL, *rm = NULL, *rr = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, x->ndim, x->shape, &ry));
    CLT__TRY(clt__temp_new(fn, "the means", x->dev, adt, 1, &rows, &rm));
    CLT__TRY(clt__temp_new(fn, "the inverse deviations", x->dev, adt, 1, &rows, &rr));
    if (ry->numel > 0) {
        const char *opts = options(x->dtype, acc64, fn);
        if (opts == NULL) {
            st = clt_last_status();
            goto done;
        }
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &cx));
        CLT__TRY(dense(fn, w, &cw));
        CLT__TRY(dense(fn, b, &cb));
        cl_mem my = clt__mem(ry), mm = clt__mem(rm), mr = clt__mem(rr), mx = clt__mem(cx);
        cl_mem mw = cw ? clt__mem(cw) : mx, mb = cb ? clt__mem(cb) : mx;
        cl_ulong off = (cl_ulong)cx->offset, nrows = (cl_ulong)rows, nn = (cl_ulong)n;
        cl_int flags = (cw ? 1 : 0) | (cb ? 2 : 0);
        cl_double e64 = eps;
        cl_float e32 = (cl_float)eps;
        clt__arg ea = adt == CLT_FLOAT64 ? CLT__ARG(e64) : CLT__ARG(e32);
        if (!clt__reduce_gpu_style(x->dev)) {
            size_t gws, lws;
            clt__cpu_geometry(x->dev, (size_t)rows, &gws, &lws);
            clt__arg args[] = {CLT__ARG(my), CLT__ARG(mm),  CLT__ARG(mr),    CLT__ARG(mx),
                               CLT__ARG(off), CLT__ARG(mw), CLT__ARG(mb),    CLT__ARG(nrows),
                               CLT__ARG(nn), ea,            CLT__ARG(flags)};
            CLT__TRY(clt__error_in(
                clt__launch(x->dev, "norm", opts, "norm_fwd_cpu", 1, &gws, &lws, 11, args), fn));
        } else {
            size_t lws = group_size(x->dev, n), gws = (size_t)rows * lws;
            clt__arg args[] = {CLT__ARG(my),  CLT__ARG(mm), CLT__ARG(mr), CLT__ARG(mx),
                               CLT__ARG(off), CLT__ARG(mw), CLT__ARG(mb), CLT__ARG(nn),
                               ea,            CLT__ARG(flags),
                               CLT__LOCAL(2 * lws * clt_dtype_size(adt))};
            CLT__TRY(clt__error_in(
                clt__launch(x->dev, "norm", opts, "norm_fwd_wg", 1, &gws, &lws, 11, args), fn));
        }
    }
    *y = ry;
    *mean = rm;
    *rstd = rr;
    ry = rm = rr = NULL;
done:
    clt_tensor_free(cx);
    clt_tensor_free(cw);
    clt_tensor_free(cb);
    clt_tensor_free(ry);
    clt_tensor_free(rm);
    clt_tensor_free(rr);
    return st;
}

/* The GPU backward: norm_bwd_wg for dx (rx, when not NULL), a work-group
 * per row, and norm_bwd_affine for dw and db (rw, rb), a work-item per
 * column. */
static clt_status backward_gpu(const char *opts, const clt_tensor *x, cl_mem mg, cl_mem mx,
                               cl_ulong off, const clt_tensor *mean, const clt_tensor *rstd,
                               const clt_tensor *cw, int64_t rows, int64_t n, clt_tensor *rx,
                               clt_tensor *rw, clt_tensor *rb, const char *fn)
{
    clt_status st = CLT_OK;
    cl_mem mm = clt__mem(mean), mr = clt__mem(rstd);
    cl_ulong nrows = (cl_ulong)rows, nn = (cl_ulong)n;
    if (rx) {
        cl_mem md = clt__mem(rx), mw = cw ? clt__mem(cw) : mx;
        cl_int has_w = cw != NULL;
        size_t lws = group_size(x->dev, n), gws = (size_t)rows * lws;
        clt__arg args[] = {CLT__ARG(md), CLT__ARG(mg),    CLT__ARG(mx), CLT__ARG(off),
                           CLT__ARG(mm), CLT__ARG(mr),    CLT__ARG(mw), CLT__ARG(has_w),
                           CLT__ARG(nn), CLT__LOCAL(2 * lws * clt_dtype_size(mean->dtype))};
        st = clt__launch(x->dev, "norm", opts, "norm_bwd_wg", 1, &gws, &lws, 10, args);
    }
    if (st == CLT_OK && (rw || rb)) {
        cl_mem mdw = rw ? clt__mem(rw) : clt__mem(rb), mdb = rb ? clt__mem(rb) : mdw;
        cl_int flags = (rw ? 1 : 0) | (rb ? 2 : 0);
        size_t gws = (size_t)n;
        clt__arg args[] = {CLT__ARG(mdw), CLT__ARG(mdb), CLT__ARG(mg),    CLT__ARG(mx),
                           CLT__ARG(off), CLT__ARG(mm),  CLT__ARG(mr),    CLT__ARG(nrows),
                           CLT__ARG(nn),  CLT__ARG(flags)};
        st = clt__launch(x->dev, "norm", opts, "norm_bwd_affine", 1, &gws, NULL, 10, args);
    }
    return clt__error_in(st, fn);
}

/* The CPU backward: norm_bwd_cpu over chunks of rows, each writing its
 * rows' dx and its own row of dw and db sums into a scratch buffer, which
 * norm_affine_sum_cpu then adds up: g and x are read once from memory. */
static clt_status backward_cpu(const char *opts, const clt_tensor *x, cl_mem mg, cl_mem mx,
                               cl_ulong off, const clt_tensor *mean, const clt_tensor *rstd,
                               const clt_tensor *cw, int64_t rows, int64_t n, clt_tensor *rx,
                               clt_tensor *rw, clt_tensor *rb, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *part = NULL;
    size_t cu = x->dev->info.compute_units ? x->dev->info.compute_units : 1;
    int64_t items = (int64_t)cu * 8 < rows ? (int64_t)cu * 8 : rows;
    cl_ulong per = (cl_ulong)((rows + items - 1) / items);
    items = (int64_t)(((cl_ulong)rows + per - 1) / per);
    cl_int flags = (rw ? 1 : 0) | (rb ? 2 : 0), has_dx = rx != NULL, has_w = cw != NULL;
    if (flags) {
        int64_t pshape[2] = {items, 2 * n};
        CLT__TRY(clt__temp_new(fn, "the partial sums", x->dev, mean->dtype, 2, pshape, &part));
    }
    cl_mem md = rx ? clt__mem(rx) : mx, mw = cw ? clt__mem(cw) : mx;
    cl_mem mp = part ? clt__mem(part) : clt__mem(mean), mm = clt__mem(mean), mr = clt__mem(rstd);
    cl_ulong nrows = (cl_ulong)rows, nn = (cl_ulong)n;
    size_t gws = (size_t)items, lws = 1;
    clt__arg args[] = {CLT__ARG(md),    CLT__ARG(has_dx), CLT__ARG(mg), CLT__ARG(mx),
                       CLT__ARG(off),   CLT__ARG(mm),     CLT__ARG(mr), CLT__ARG(mw),
                       CLT__ARG(has_w), CLT__ARG(nrows),  CLT__ARG(nn), CLT__ARG(per),
                       CLT__ARG(mp),    CLT__ARG(flags)};
    CLT__TRY(clt__error_in(
        clt__launch(x->dev, "norm", opts, "norm_bwd_cpu", 1, &gws, &lws, 14, args), fn));
    if (flags) {
        cl_mem mdw = rw ? clt__mem(rw) : clt__mem(rb), mdb = rb ? clt__mem(rb) : mdw;
        cl_ulong nparts = (cl_ulong)items;
        clt__cpu_geometry(x->dev, (size_t)(n / 16 + n % 16), &gws, &lws);
        clt__arg sargs[] = {CLT__ARG(mdw), CLT__ARG(mdb), CLT__ARG(mp),
                            CLT__ARG(nparts), CLT__ARG(nn), CLT__ARG(flags)};
        CLT__TRY(clt__error_in(
            clt__launch(x->dev, "norm", opts, "norm_affine_sum_cpu", 1, &gws, &lws, 6, sargs),
            fn));
    }
done:
    clt_tensor_free(part);
    return st;
}

clt_status clt__native_norm_backward(const clt_tensor *g, const clt_tensor *x,
                                     const clt_tensor *mean, const clt_tensor *rstd,
                                     const clt_tensor *w, int64_t n, clt_tensor **dx,
                                     clt_tensor **dw, clt_tensor **db, const char *fn)
{
    if (dx)
        *dx = NULL;
    if (dw)
        *dw = NULL;
    if (db)
        *db = NULL;
    bool acc64 = mean->dtype != x->dtype;
    int64_t rows = n > 0 ? x->numel / n : 0;
    clt_tensor *cg = NULL, *cx = NULL, *cw = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
    clt_status st = CLT_OK;
    if (dx)
        CLT__TRY(clt__result_new(fn, x->dev, x->dtype, x->ndim, x->shape, &rx));
    /* the weight's and the bias's gradients have n elements, shaped by the
     * caller */
    if (dw)
        CLT__TRY(clt__result_new(fn, x->dev, x->dtype, 1, &n, &rw));
    if (db)
        CLT__TRY(clt__result_new(fn, x->dev, x->dtype, 1, &n, &rb));
    if (rows == 0) {
        /* no rows: dx is empty, dw and db sums of nothing */
        if (rw && n > 0)
            CLT__TRY(clt__error_in(clt__fill_value(rw, 0.0), fn));
        if (rb && n > 0)
            CLT__TRY(clt__error_in(clt__fill_value(rb, 0.0), fn));
    } else if (rx || rw || rb) {
        const char *opts = options(x->dtype, acc64, fn);
        if (opts == NULL) {
            st = clt_last_status();
            goto done;
        }
        CLT__TRY(dense(fn, g, &cg));
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &cx));
        if (rx)
            CLT__TRY(dense(fn, w, &cw));
        cl_mem mg = clt__mem(cg), mx = clt__mem(cx);
        cl_ulong off = (cl_ulong)cx->offset;
        CLT__TRY((clt__reduce_gpu_style(x->dev) ? backward_gpu : backward_cpu)(
            opts, x, mg, mx, off, mean, rstd, cw, rows, n, rx, rw, rb, fn));
    }
    if (dx) {
        *dx = rx;
        rx = NULL;
    }
    if (dw) {
        *dw = rw;
        rw = NULL;
    }
    if (db) {
        *db = rb;
        rb = NULL;
    }
done:
    clt_tensor_free(cg);
    clt_tensor_free(cx);
    clt_tensor_free(cw);
    clt_tensor_free(rx);
    clt_tensor_free(rw);
    clt_tensor_free(rb);
    return st;
}
