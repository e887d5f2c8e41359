/* softmax.c: softmax and log_softmax along a dimension; the kernel of
 * cl/softmax.cl is picked by device type (a work-item per row on CPUs). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *options(clt_dtype dtype)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[dtype], "T", dtype, NULL, dtype,
                            dtype == CLT_FLOAT16    ? " -DSM_HALF=1"
                            : dtype == CLT_BFLOAT16 ? " -DSM_BF16=1"
                                                    : "");
}

clt_status clt__softmax_variant(const clt_tensor *a, int dim, bool logmode, int variant,
                                clt_tensor **out)
{
    return clt__softmax_in(logmode ? "clt_log_softmax" : "clt_softmax", a, dim, logmode, variant,
                           out);
}

clt_status clt__softmax_in(const char *fn, const clt_tensor *a, int dim, bool logmode,
                           int variant, clt_tensor **out)
{
    if (out)
        *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(out, fn);
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: softmax is only defined for floating-point dtypes, not %s; "
                          "convert with clt_to_dtype first",
                          fn, clt_dtype_name(a->dtype));
    int nd = a->ndim > 0 ? a->ndim : 1;
    if (dim < -nd || dim >= nd)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: dimension out of range (expected to be in range of [%d, %d], but "
                          "got %d)",
                          fn, -nd, nd - 1, dim);
    if (dim < 0)
        dim += nd;

    int64_t n = a->ndim > 0 ? a->shape[dim] : 1, inner = 1, outer = 1;
    for (int d = dim + 1; d < a->ndim; d++)
        inner *= a->shape[d];
    for (int d = 0; d < dim; d++)
        outer *= a->shape[d];

    clt_tensor *c = NULL, *r = NULL;
    const char *opts = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__result_new(fn, a->dev, a->dtype, a->ndim, a->shape, &r));
    if (r->numel == 0)
        goto finish;
    CLT__TRY(clt__contiguous_as(fn, a, a->dtype, &c));
    if ((opts = options(a->dtype)) == NULL) {
        st = clt_last_status();
        goto done;
    }
    {
        cl_mem mo = clt__mem(r), mi = clt__mem(c);
        cl_ulong off = (cl_ulong)c->offset, rows = (cl_ulong)(outer * inner);
        cl_ulong nn = (cl_ulong)n, in = (cl_ulong)inner;
        cl_int lm = logmode;
        bool cpu = variant == CLT__SOFTMAX_CPU ||
                   (variant == CLT__SOFTMAX_AUTO && a->dev->info.type == CLT_DEVICE_TYPE_CPU);
        if (cpu) {
            size_t gws = (size_t)rows;
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mi), CLT__ARG(off), CLT__ARG(rows),
                               CLT__ARG(nn), CLT__ARG(in), CLT__ARG(lm)};
            CLT__TRY(clt__error_in(
                clt__launch(a->dev, "softmax", opts, "softmax_cpu", 1, &gws, NULL, 7, args), fn));
        } else {
            size_t lws = 1;
            size_t cap = a->dev->info.max_work_group_size;
            while (lws * 2 <= 256 && lws * 2 <= cap && lws < (size_t)n)
                lws *= 2;
            size_t gws = (size_t)rows * lws;
            size_t csize = a->dtype == CLT_FLOAT64 ? 8 : 4; /* T_C */
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mi), CLT__ARG(off), CLT__ARG(nn),
                               CLT__ARG(in), CLT__ARG(lm), CLT__LOCAL(lws * csize)};
            CLT__TRY(clt__error_in(
                clt__launch(a->dev, "softmax", opts, "softmax_wg", 1, &gws, &lws, 7, args), fn));
        }
    }
finish:
    *out = r;
    r = NULL;
done:
    clt_tensor_free(c);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__softmax(const clt_tensor *a, int dim, clt_tensor **out)
{
    return clt__softmax_variant(a, dim, false, CLT__SOFTMAX_AUTO, out);
}

clt_status clt__log_softmax(const clt_tensor *a, int dim, clt_tensor **out)
{
    return clt__softmax_variant(a, dim, true, CLT__SOFTMAX_AUTO, out);
}
