/* segment.c: torch.segment_reduce (PyTorch 1.13's _segment_reduce) without
 * autograd: its checks, in its words, on lengths or offsets read back to
 * the host, and the launches of cl/segment.cl for the forward and for
 * _segment_reduce_backward.  The public entry and its node are in
 * src/autograd/grad_segment.c. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Must match clt_seg_geom in cl/segment.cl. */
typedef struct seg_geom {
    int64_t outer, size, inner, nseg;
    int64_t reduce, has_init, rh;
    int64_t doff, ooff, goff;
} seg_geom;

static const char *const reduce_names[] = {"sum", "mean", "max", "min", "prod"};

int clt__segment_reduce_code(const char *reduce)
{
    for (int k = 0; reduce && k < 5; k++)
        if (strcmp(reduce, reduce_names[k]) == 0)
            return k;
    return -1;
}

static clt_status launch(clt_device *dev, clt_dtype dtype, const char *kernel, int64_t items,
                         size_t nargs, const clt__arg *args, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__launch_items(dev, "segment", slots, dtype, kernel, items, nargs, args, fn);
}

/* The segments' bounds, checked: from lengths (their running sums) or
 * offsets, as a new int64 tensor [outer, nseg + 1] on data's device; the
 * output's shape in (*nd, shape). */
static clt_status seg_offsets(const clt_tensor *data, const clt_tensor *lengths,
                              const clt_tensor *offsets, int axis, int unsafe, seg_geom *g,
                              clt_tensor **off, const char *fn)
{
    const clt_tensor *b = lengths ? lengths : offsets;
    const char *what = lengths ? "lengths" : "offsets";
    clt_status st = clt__same_device(data, b, fn);
    if (st != CLT_OK)
        return st;
    if (b->dtype != CLT_INT64 && b->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: segment_reduce(): %s must be int32 or int64, not %s", fn, what,
                          clt_dtype_name(b->dtype));
    if (b->ndim - 1 != axis)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: segment_reduce(): Expected axis to be the last dimension of %s "
                          "but got %d.",
                          fn, what, axis);
    for (int d = 0; d < axis; d++)
        if (b->shape[d] != data->shape[d])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: segment_reduce(): %s has size %lld in dimension %d where "
                              "data has %lld",
                              fn, what, (long long)b->shape[d], d, (long long)data->shape[d]);
    int64_t last = b->shape[axis];
    if (!lengths && last < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: segment_reduce(): offsets needs at least one element along axis",
                          fn);
    g->nseg = lengths ? last : last - 1;
    g->size = data->shape[axis];
    g->outer = 1;
    for (int d = 0; d < axis; d++)
        g->outer *= data->shape[d];
    g->inner = 1;
    for (int d = axis + 1; d < data->ndim; d++)
        g->inner *= data->shape[d];
    size_t nb = (size_t)b->numel, no = (size_t)(g->outer * (g->nseg + 1));
    int64_t *h = clt__malloc((nb ? nb : 1) * sizeof *h), *o = clt__malloc((no ? no : 1) * sizeof *o);
    clt_tensor *b64 = NULL;
    if (h == NULL || o == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    CLT__TRY(clt__contiguous_as(fn, b, CLT_INT64, &b64));
    CLT__TRY(clt__tensor_read_at(b64, h, nb * sizeof *h, fn, __builtin_return_address(0)));
    /* torch checks the signs of all lengths before their sums */
    for (size_t k = 0; lengths && k < nb; k++)
        if (h[k] < 0) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: segment_reduce(): lengths contains negative value!", fn);
            goto done;
        }
    for (int64_t r = 0; r < g->outer; r++) {
        int64_t *orow = o + r * (g->nseg + 1);
        const int64_t *brow = h + r * last;
        if (lengths) {
            int64_t acc = 0;
            orow[0] = 0;
            for (int64_t s = 0; s < g->nseg; s++) {
                if (brow[s] > g->size - acc) { /* acc + brow[s] > size, without overflow */
                    st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                    "%s: segment_reduce(): Expected all rows of lengths along "
                                    "axis to sum to data.size(lengths.dim()-1)%s (a row sums "
                                    "past %lld)",
                                    fn, unsafe ? " at most" : " when !unsafe",
                                    (long long)g->size);
                    goto done;
                }
                acc += brow[s];
                orow[s + 1] = acc;
            }
            if (!unsafe && acc != g->size) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: segment_reduce(): Expected all rows of lengths along axis "
                                "to sum to data.size(lengths.dim()-1) when !unsafe.",
                                fn);
                goto done;
            }
        } else {
            for (int64_t s = 0; s <= g->nseg; s++) {
                if (brow[s] < 0 || brow[s] > g->size || (s > 0 && brow[s] < brow[s - 1])) {
                    st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                    "%s: segment_reduce(): offsets must be nondecreasing and "
                                    "lie in [0, %lld] (segment_length >= 0); got %lld at %lld",
                                    fn, (long long)g->size, (long long)brow[s], (long long)s);
                    goto done;
                }
                orow[s] = brow[s];
            }
        }
    }
    {
        int64_t shp[2] = {g->outer, g->nseg + 1};
        CLT__TRY(clt__tensor_from_host_in(fn, data->dev, CLT_INT64, 2, shp, o, off));
    }
done:
    clt_tensor_free(b64);
    free(h);
    free(o);
    return st;
}

clt_status clt__segment_reduce(const clt_tensor *data, int reduce, const clt_tensor *lengths,
                               const clt_tensor *offsets, int axis, int unsafe,
                               const double *initial, clt_tensor **out, clt_tensor **offs,
                               const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (offs)
        *offs = NULL;
    CLT__REQUIRE_ARG(data, fn);
    if (reduce < 0 || reduce > 4)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: unsupported reduction given! (reduce must be \"sum\", \"mean\", "
                          "\"max\", \"min\" or \"prod\")",
                          fn);
    if (lengths == NULL && offsets == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: segment_reduce(): Either lengths or offsets must be defined.", fn);
    if (!clt__dtype_is_float(data->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: segment_reduce is not implemented for %s data, as in PyTorch; it "
                          "needs float16, float32 or float64",
                          fn, clt_dtype_name(data->dtype));
    if (data->numel == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: segment_reduce(): Expected data.numel() > 0", fn);
    int ax = 0;
    clt_status st = clt__wrap_dim(axis, data->ndim, &ax, fn);
    if (st != CLT_OK)
        return st;
    /* float16 and bfloat16 are computed in float32 and rounded once at the end. */
    clt_dtype ct = clt__dtype_is_half(data->dtype) ? CLT_FLOAT32 : data->dtype;
    st = clt__check_dtype(data->dev, data->dtype, fn);
    if (st != CLT_OK)
        return st;
    seg_geom g = {0};
    clt_tensor *off = NULL, *d = NULL, *r = NULL;
    CLT__TRY(seg_offsets(data, lengths, offsets, ax, unsafe, &g, &off, fn));
    CLT__TRY(clt__contiguous_as(fn, data, ct, &d));
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, data->shape, sizeof(int64_t) * (size_t)data->ndim);
    shape[ax] = g.nseg;
    CLT__TRY(clt__result_new(fn, data->dev, ct, data->ndim, shape, &r));
    g.reduce = reduce;
    g.has_init = initial != NULL;
    g.rh = data->dtype == CLT_FLOAT16 ? 1 : data->dtype == CLT_BFLOAT16 ? 2 : 0;
    g.doff = d->offset;
    g.ooff = r->offset;
    {
        unsigned char iv[8];
        size_t isz = clt__scalar_arg(ct, initial ? *initial : 0.0, iv);
        cl_mem mo = clt__mem(r), md = clt__mem(d), mf = clt__mem(off);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(md), CLT__ARG(mf), {isz, iv}, CLT__ARG(g)};
        CLT__TRY(launch(data->dev, ct, "seg_fwd", g.outer * g.nseg * g.inner, 5, args, fn));
    }
    if (ct != data->dtype) {
        clt_tensor *h = NULL;
        CLT__TRY(clt__copy_as(fn, r, data->dtype, &h));
        clt_tensor_free(r);
        r = h;
    }
    *out = r;
    r = NULL;
    if (offs) {
        *offs = off;
        off = NULL;
    }
done:
    clt_tensor_free(off);
    clt_tensor_free(d);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__segment_reduce_backward(const clt_tensor *grad, const clt_tensor *output,
                                        const clt_tensor *data, const clt_tensor *offs,
                                        int reduce, int axis, const double *initial,
                                        clt_tensor **out, const char *fn)
{
    *out = NULL;
    clt_dtype ct = clt__dtype_is_half(data->dtype) ? CLT_FLOAT32 : data->dtype;
    seg_geom g = {0};
    g.outer = offs->shape[0];
    g.nseg = offs->shape[1] - 1;
    g.size = data->shape[axis];
    g.inner = 1;
    for (int d = axis + 1; d < data->ndim; d++)
        g.inner *= data->shape[d];
    g.reduce = reduce;
    g.has_init = initial != NULL;
    clt_tensor *gc = NULL, *oc = NULL, *dc = NULL, *r = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__contiguous_as(fn, grad, ct, &gc));
    CLT__TRY(clt__contiguous_as(fn, output, ct, &oc));
    CLT__TRY(clt__contiguous_as(fn, data, ct, &dc));
    CLT__TRY(clt__temp_new(fn, "the data's gradient", data->dev, ct, data->ndim, data->shape, &r));
    CLT__TRY(clt__fill_value(r, 0.0));
    g.doff = dc->offset;
    g.goff = gc->offset;
    g.ooff = oc->offset;
    {
        unsigned char iv[8];
        size_t isz = clt__scalar_arg(ct, initial ? *initial : 0.0, iv);
        cl_mem mr = clt__mem(r), mg = clt__mem(gc), mo = clt__mem(oc), md = clt__mem(dc),
               mf = clt__mem(offs);
        clt__arg args[] = {CLT__ARG(mr), CLT__ARG(mg), CLT__ARG(mo), CLT__ARG(md),
                           CLT__ARG(mf), {isz, iv},    CLT__ARG(g)};
        CLT__TRY(launch(data->dev, ct, "seg_bwd", g.outer * g.nseg * g.inner, 7, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(gc);
    clt_tensor_free(oc);
    clt_tensor_free(dc);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}
