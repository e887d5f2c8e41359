/* grid_sample.c: torch.nn.functional.grid_sample of 4-D and 5-D inputs
 * (cl/grid_sample.cl): its checks, forward and backward launches. */
#include "ops/conv.h"

/* Must match clt_gs_geom in cl/grid_sample.cl. */
typedef struct gsgeom {
    int64_t N, C, D, H, W, Do, Ho, Wo;
    int64_t offx, offg, offy;
    int32_t mode, padding, align, dims;
} gsgeom;

clt_status clt__grid_sample_check(const clt_tensor *x, const clt_tensor *grid, int mode,
                                  int padding, const char *fn)
{
    char s1[160], s2[160];
    clt_status st;
    if (mode < CLT_GRID_BILINEAR || mode > CLT_GRID_BICUBIC)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected mode to be 'bilinear', 'nearest' or 'bicubic' (a "
                          "clt_grid_mode), but got: %d",
                          fn, mode);
    if (padding < CLT_GRID_PAD_ZEROS || padding > CLT_GRID_PAD_REFLECTION)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected padding_mode to be 'zeros', 'border', or 'reflection' "
                          "(a clt_grid_padding), but got: %d",
                          fn, padding);
    if ((st = clt__same_device(x, grid, fn)) != CLT_OK)
        return st;
    clt__shape_str(s1, sizeof s1, x->ndim, x->shape);
    clt__shape_str(s2, sizeof s2, grid->ndim, grid->shape);
    if ((x->ndim != 4 && x->ndim != 5) || grid->ndim != x->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected 4D or 5D input and grid with same number of dimensions, "
                          "but got input with sizes %s and grid with sizes %s",
                          fn, s1, s2);
    if (x->ndim == 5 && mode == CLT_GRID_BICUBIC)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: bicubic interpolation only supports 4D input", fn);
    if ((st = clt__check_floating(x, "input", fn)) != CLT_OK)
        return st;
    if (grid->dtype != x->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected input and grid to have same dtype, but input has %s and "
                          "grid has %s",
                          fn, clt_dtype_name(x->dtype), clt_dtype_name(grid->dtype));
    if (x->shape[0] != grid->shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected grid and input to have same batch size, but got input "
                          "with sizes %s and grid with sizes %s",
                          fn, s1, s2);
    int last = x->ndim - 1;
    if (grid->shape[last] != x->ndim - 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected grid to have size %d in last dimension, but got grid "
                          "with sizes %s",
                          fn, x->ndim - 2, s2);
    for (int d = 2; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: expected input to have non-empty spatial dimensions, but "
                              "input has sizes %s with dimension %d being empty",
                              fn, s1, d);
    int64_t oshape[5] = {x->shape[0], x->shape[1], grid->shape[1], grid->shape[2],
                         grid->shape[3]};
    return clt__check_shape(x->ndim, oshape, fn);
}

static const char *gs_opts(clt_dtype dtype)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[dtype], "T", dtype, NULL, dtype, "");
}

/* A 4-D input is a 5-D one of depth 1. */
static gsgeom gs_geom(const clt_tensor *x, const clt_tensor *grid, int mode, int padding,
                      int align_corners)
{
    bool d3 = x->ndim == 5;
    return (gsgeom){x->shape[0],
                    x->shape[1],
                    d3 ? x->shape[2] : 1,
                    x->shape[x->ndim - 2],
                    x->shape[x->ndim - 1],
                    d3 ? grid->shape[1] : 1,
                    grid->shape[grid->ndim - 3],
                    grid->shape[grid->ndim - 2],
                    0,
                    0,
                    0,
                    mode,
                    padding,
                    align_corners != 0,
                    x->ndim - 2};
}

clt_status clt__grid_sample(const clt_tensor *x, const clt_tensor *grid, int mode, int padding,
                            int align_corners, clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *cx = NULL, *cg = NULL, *r = NULL;
    gsgeom g = gs_geom(x, grid, mode, padding, align_corners);
    int64_t oshape[5] = {g.N, g.C, g.Do, g.Ho, g.Wo};
    if (g.dims == 2)
        oshape[2] = g.Ho, oshape[3] = g.Wo;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, x->ndim, oshape, &r));
    if (r->numel > 0) {
        const char *opts = gs_opts(x->dtype);
        if (opts == NULL)
            CLT__TRY(clt_last_status());
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &cx));
        CLT__TRY(clt__contiguous_as(fn, grid, x->dtype, &cg));
        g.offx = cx->offset;
        g.offg = cg->offset;
        cl_mem mx = clt__mem(cx), mg = clt__mem(cg), mr = clt__mem(r);
        clt__arg args[4] = {CLT__ARG(mx), CLT__ARG(mg), CLT__ARG(mr), CLT__ARG(g)};
        size_t gws = (size_t)(g.N * g.Do * g.Ho * g.Wo);
        CLT__TRY(clt__error_in(
            clt__launch(x->dev, "grid_sample", opts, "grid_sample_fwd", 1, &gws, NULL, 4, args),
            fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(cx);
    clt_tensor_free(cg);
    clt_tensor_free(r);
    return st;
}

/* How many runs of grid points the input's gradient is cut into: enough
 * work-items for every compute unit several times over, runs of at least
 * 64 points, and the parts within 64 MiB. */
static int64_t grad_chunks(const clt_device *dev, const gsgeom *g, size_t elem)
{
    int64_t planes = g->N * g->C, points = g->Do * g->Ho * g->Wo, pixels = g->D * g->H * g->W;
    int64_t want = 4 * (int64_t)(dev->info.compute_units ? dev->info.compute_units : 1);
    int64_t c = planes >= want ? 1 : (want + planes - 1) / planes;
    if (c > points / 64)
        c = points / 64;
    while (c > 1 && (double)c * (double)planes * (double)pixels * (double)elem > 64.0 * 1048576)
        c /= 2;
    return c < 1 ? 1 : c;
}

/* The input's gradient from the contiguous output gradient cy and grid
 * cg: each point's taps tabulated once, then per plane and run of points
 * scattered into a part, the parts summed in order. */
static clt_status input_grad(const clt_tensor *cy, const clt_tensor *x, const clt_tensor *cg,
                             const gsgeom *geo, const char *opts, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *r = NULL, *tidx = NULL, *tw = NULL, *part = NULL;
    gsgeom g = *geo;
    cl_long K = g.mode == CLT_GRID_NEAREST ? 1 : g.mode == CLT_GRID_BICUBIC ? 16 : 4 * (g.dims - 1);
    cl_long chunks = grad_chunks(x->dev, &g, clt_dtype_size(x->dtype));
    int64_t nt = g.N * g.Do * g.Ho * g.Wo * K, np = chunks * (int64_t)x->numel;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, x->ndim, x->shape, &r));
    if (r->numel > 0) {
        CLT__TRY(clt__temp_new(fn, "the taps", x->dev, CLT_INT64, 1, &nt, &tidx));
        CLT__TRY(clt__temp_new(fn, "the taps' weights", x->dev, x->dtype, 1, &nt, &tw));
        if (chunks > 1)
            CLT__TRY(clt__temp_new(fn, "the partial gradients", x->dev, x->dtype, 1, &np, &part));
        cl_mem my = clt__mem(cy), mg = clt__mem(cg), mi = clt__mem(tidx), mw = clt__mem(tw);
        cl_mem mp = clt__mem(part ? part : r), mr = clt__mem(r);
        size_t points = (size_t)(g.N * g.Do * g.Ho * g.Wo), work = (size_t)(g.N * g.C * chunks);
        clt__arg targs[5] = {CLT__ARG(mg), CLT__ARG(mi), CLT__ARG(mw), CLT__ARG(g), CLT__ARG(K)};
        clt__arg bargs[7] = {CLT__ARG(my), CLT__ARG(mi), CLT__ARG(mw),    CLT__ARG(mp),
                             CLT__ARG(g),  CLT__ARG(K),  CLT__ARG(chunks)};
        if (points > 0)
            CLT__TRY(clt__error_in(clt__launch(x->dev, "grid_sample", opts, "grid_sample_taps", 1,
                                               &points, NULL, 5, targs),
                                   fn));
        CLT__TRY(clt__error_in(clt__launch(x->dev, "grid_sample", opts, "grid_sample_bwd_input",
                                           1, &work, NULL, 7, bargs),
                               fn));
        if (part) {
            cl_long n = (cl_long)r->numel;
            size_t gws = (size_t)n;
            clt__arg sargs[4] = {CLT__ARG(mp), CLT__ARG(mr), CLT__ARG(n), CLT__ARG(chunks)};
            CLT__TRY(clt__error_in(clt__launch(x->dev, "grid_sample", opts,
                                               "grid_sample_sum_parts", 1, &gws, NULL, 4, sargs),
                                   fn));
        }
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(tidx);
    clt_tensor_free(tw);
    clt_tensor_free(part);
    return st;
}

clt_status clt__grid_sample_backward(const clt_tensor *g, const clt_tensor *x,
                                     const clt_tensor *grid, int mode, int padding,
                                     int align_corners, clt_tensor **gx, clt_tensor **ggrid)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *cy = NULL, *cx = NULL, *cg = NULL, *rx = NULL, *rg = NULL;
    gsgeom geo = gs_geom(x, grid, mode, padding, align_corners);
    const char *opts = gs_opts(x->dtype);
    if (opts == NULL)
        CLT__TRY(clt_last_status());
    CLT__TRY(clt__contiguous_as(fn, g, x->dtype, &cy));
    CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &cx));
    CLT__TRY(clt__contiguous_as(fn, grid, x->dtype, &cg));
    geo.offx = cx->offset;
    geo.offg = cg->offset;
    geo.offy = cy->offset;
    cl_mem my = clt__mem(cy), mx = clt__mem(cx), mg = clt__mem(cg);
    if (gx)
        CLT__TRY(input_grad(cy, x, cg, &geo, opts, &rx));
    if (ggrid) {
        CLT__TRY(clt__result_new(fn, x->dev, x->dtype, grid->ndim, grid->shape, &rg));
        size_t gws = (size_t)(geo.N * geo.Do * geo.Ho * geo.Wo);
        cl_mem mr = clt__mem(rg);
        clt__arg args[5] = {CLT__ARG(my), CLT__ARG(mx), CLT__ARG(mg), CLT__ARG(mr),
                            CLT__ARG(geo)};
        if (gws > 0)
            CLT__TRY(clt__error_in(clt__launch(x->dev, "grid_sample", opts,
                                               "grid_sample_bwd_grid", 1, &gws, NULL, 5, args),
                                   fn));
    }
    if (gx)
        *gx = rx;
    if (ggrid)
        *ggrid = rg;
    rx = rg = NULL;
done:
    clt_tensor_free(cy);
    clt_tensor_free(cx);
    clt_tensor_free(cg);
    clt_tensor_free(rx);
    clt_tensor_free(rg);
    return st;
}
