/* bag.c: torch.nn.functional.embedding_bag without autograd: PyTorch's
 * checks, the forward launches of cl/bag.cl (one kernel per mode family),
 * and the pieces of its backward (the weight's gradient as index_add of
 * per-entry rows, the per-sample weights' as per-entry dot products, and
 * each entry's bag for the backward as recorded ops).  The
 * public entry and its node are in src/autograd/grad_index.c.  Indices and
 * offsets are checked on the device, as the index ops' (cl/index.cl). */
#include <string.h>

#include "internal.h"

/* Must match clt_bag_geom in cl/bag.cl. */
typedef struct bag_geom {
    int64_t nbags, noff, n, D, rows;
    int64_t pad, mode, psw, op;
    int64_t woff, ioff, ooff, poff, goff;
} bag_geom;

static const char *const mode_names[] = {"sum", "mean", "max"};

static clt_status launch(clt_device *dev, clt_dtype dtype, const char *kernel, int64_t items,
                         size_t nargs, const clt__arg *args, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__launch_items(dev, "bag", slots, dtype, kernel, items, nargs, args, fn);
}

static clt_status index_dtype(const clt_tensor *t, int arg, const char *what, const char *fn)
{
    if (t->dtype == CLT_INT64 || t->dtype == CLT_INT32)
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: Expected tensor for argument #%d '%s' to have one of the following "
                      "scalar types: Long, Int; but got %s instead (while checking arguments "
                      "for embedding_bag)",
                      fn, arg, what, clt_dtype_name(t->dtype));
}

clt_status clt__padding_idx(const int64_t *padding_idx, int64_t rows, int64_t *pad,
                            const char *fn)
{
    *pad = -1;
    if (!padding_idx)
        return CLT_OK;
    if (*padding_idx < -rows || *padding_idx >= rows)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Padding_idx must be within num_embeddings (%lld), but got %lld",
                          fn, (long long)rows, (long long)*padding_idx);
    *pad = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
    return CLT_OK;
}

/* PyTorch's checks of embedding_bag's operands, in its words where it has
 * them; *pad gets padding_idx wrapped into [0, rows), or -1. */
static clt_status bag_check(const clt_tensor *w, const clt_tensor *input,
                            const clt_tensor *offsets, int mode, const clt_tensor *psw,
                            const int64_t *padding_idx, int include_last_offset, int64_t *pad,
                            const char *fn)
{
    char s1[160], s2[160];
    clt_status st;
    if (mode < 0 || mode > 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: mode has to be one of sum, mean or max (got %d)", fn, mode);
    if ((st = clt__same_device(w, input, fn)) != CLT_OK ||
        (offsets && (st = clt__same_device(w, offsets, fn)) != CLT_OK) ||
        (psw && (st = clt__same_device(w, psw, fn)) != CLT_OK))
        return st;
    if (w->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: 'weight' must be 2-D, but has shape %s",
                          fn, clt__shape_str(s1, sizeof s1, w->ndim, w->shape));
    if ((st = clt__check_floating(w, "weight", fn)) != CLT_OK)
        return st;
    if ((st = index_dtype(input, 1, "indices", fn)) != CLT_OK)
        return st;
    if (input->ndim == 2 && offsets)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: if input is 2D, then offsets has to be None, as input is "
                          "treated is a mini-batch of fixed length sequences. However, found "
                          "offsets of shape %s",
                          fn, clt__shape_str(s1, sizeof s1, offsets->ndim, offsets->shape));
    if (input->ndim == 1 && offsets == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT,
                          "%s: offsets has to be a 1D Tensor but got None", fn);
    if (input->ndim != 1 && input->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: input has to be 1D or 2D Tensor, but got Tensor of dimension %d",
                          fn, input->ndim);
    if (offsets && offsets->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: offsets has to be a 1D Tensor, but has shape %s", fn,
                          clt__shape_str(s1, sizeof s1, offsets->ndim, offsets->shape));
    if (offsets && (st = index_dtype(offsets, 2, "offsets", fn)) != CLT_OK)
        return st;
    if (include_last_offset && offsets && offsets->numel == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: include_last_offset: number of offsets should be at least 1",
                          fn);
    if (psw) {
        if (mode != 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: embedding_bag: per_sample_weights was not None. "
                              "per_sample_weights is only supported for mode='sum' (got "
                              "mode='%s'). Please open a feature request on GitHub.",
                              fn, mode_names[mode]);
        if (!clt__same_shape(psw, input))
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: embedding_bag: If per_sample_weights (%s) is not None, then "
                              "it must have the same shape as the input (%s)",
                              fn, clt__shape_str(s1, sizeof s1, psw->ndim, psw->shape),
                              clt__shape_str(s2, sizeof s2, input->ndim, input->shape));
        if (psw->dtype != w->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: Expected tensor for argument #1 'weight' to have the same "
                              "type as tensor for argument #1 'per_sample_weights'; but type "
                              "%s does not equal %s (while checking arguments for "
                              "embedding_bag)",
                              fn, clt_dtype_name(w->dtype), clt_dtype_name(psw->dtype));
    }
    const int64_t rows = w->shape[0];
    *pad = -1;
    if (padding_idx) {
        if (*padding_idx < -rows || *padding_idx >= rows)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: padding_idx must be within the number of embeddings, -%lld "
                              "through %lld, but got %lld",
                              fn, (long long)rows, (long long)(rows - 1),
                              (long long)*padding_idx);
        *pad = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
    }
    return CLT_OK;
}

clt_status clt__embedding_bag_check(const clt_tensor *w, const clt_tensor *input,
                                    const clt_tensor *offsets, int mode, const clt_tensor *psw,
                                    const int64_t *padding_idx, int include_last_offset,
                                    const char *fn)
{
    int64_t pad;
    return bag_check(w, input, offsets, mode, psw, padding_idx, include_last_offset, &pad, fn);
}

clt_status clt__embedding_bag(const clt_tensor *w, const clt_tensor *input,
                              const clt_tensor *offsets, int mode, const clt_tensor *psw,
                              const int64_t *padding_idx, int include_last_offset,
                              clt_tensor **out, clt__bag_saved *sv, const char *fn)
{
    memset(sv, 0, sizeof *sv);
    *out = NULL;
    int64_t pad = -1;
    clt_status st = bag_check(w, input, offsets, mode, psw, padding_idx, include_last_offset,
                              &pad, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *flat = NULL, *idx = NULL, *off = NULL, *wc = NULL, *pc = NULL, *aux = NULL,
               *r = NULL;
    const int64_t n = input->numel, D = w->shape[1];
    CLT__TRY(clt__reshape(input, 1, &n, &flat, fn));
    CLT__TRY(clt__contiguous_as(fn, flat, CLT_INT64, &idx));
    if (offsets) {
        CLT__TRY(clt__contiguous_as(fn, offsets, CLT_INT64, &off));
    } else if (input->shape[1] > 0) { /* a bag per row */
        CLT__TRY(clt__error_in(clt__arange(w->dev, CLT_INT64, 0, (double)n,
                                           (double)input->shape[1], &off),
                               fn));
    } else {
        CLT__TRY(clt__error_in(clt__full(w->dev, CLT_INT64, 1, &input->shape[0], 0.0, &off),
                               fn));
    }
    bag_geom g = {0};
    g.noff = off->numel;
    g.nbags = include_last_offset ? g.noff - 1 : g.noff;
    g.n = n, g.D = D, g.rows = w->shape[0];
    g.pad = pad, g.mode = mode, g.psw = psw != NULL, g.op = CLT__IDX_EMBEDDING_BAG;
    int64_t shape[2] = {g.nbags, D};
    CLT__TRY(clt__result_new(fn, w->dev, w->dtype, 2, shape, &r));
    if (mode == 2)
        CLT__TRY(clt__temp_new(fn, "the maxima's entries", w->dev, CLT_INT64, 2, shape, &aux));
    else if (mode == 1)
        CLT__TRY(clt__temp_new(fn, "the bags' sizes", w->dev, CLT_INT64, 1, &g.nbags, &aux));
    if (r->numel > 0) {
        cl_mem err = NULL;
        CLT__TRY(clt__index_errors(w->dev, &err));
        CLT__TRY(clt__contiguous_as(fn, w, w->dtype, &wc));
        if (psw) {
            CLT__TRY(clt__contiguous_as(fn, psw, psw->dtype, &pc));
            g.poff = pc->offset;
        }
        g.woff = wc->offset, g.ioff = idx->offset, g.ooff = off->offset;
        cl_mem mo = clt__mem(r), ma = aux ? clt__mem(aux) : mo, mw = clt__mem(wc);
        cl_mem mi = clt__mem(idx), mf = clt__mem(off), mp = pc ? clt__mem(pc) : mw;
        if (mode == 2) {
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma),  CLT__ARG(mw), CLT__ARG(mi),
                               CLT__ARG(mf), CLT__ARG(err), CLT__ARG(g)};
            CLT__TRY(launch(w->dev, w->dtype, "bag_max", r->numel, 7, args, fn));
        } else {
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(mw),  CLT__ARG(mi),
                               CLT__ARG(mf), CLT__ARG(mp), CLT__ARG(err), CLT__ARG(g)};
            CLT__TRY(launch(w->dev, w->dtype, "bag_sum", r->numel, 8, args, fn));
        }
    }
    *out = r;
    sv->idx = idx, sv->off = off, sv->aux = aux, sv->pad = pad;
    r = idx = off = aux = NULL;
done:
    clt_tensor_free(flat);
    clt_tensor_free(idx);
    clt_tensor_free(off);
    clt_tensor_free(wc);
    clt_tensor_free(pc);
    clt_tensor_free(aux);
    clt_tensor_free(r);
    return st;
}

clt_status clt__embedding_bag_backward(const clt_tensor *gout, const clt_tensor *w,
                                       const clt_tensor *psw, const clt__bag_saved *sv,
                                       int mode, clt_tensor **gw, clt_tensor **gp)
{
    const char *fn = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *gc = NULL, *wc = NULL, *pc = NULL, *rows = NULL, *z = NULL, *ic = NULL;
    bag_geom g = {0};
    g.noff = sv->off->numel, g.nbags = gout->shape[0];
    g.n = sv->idx->numel, g.D = w->shape[1], g.rows = w->shape[0];
    g.pad = sv->pad, g.mode = mode, g.psw = psw != NULL, g.op = CLT__IDX_EMBEDDING_BAG;
    g.ioff = sv->idx->offset, g.ooff = sv->off->offset;
    CLT__TRY(clt__contiguous_as(fn, gout, w->dtype, &gc));
    g.goff = gc->offset;
    if (psw) {
        CLT__TRY(clt__contiguous_as(fn, psw, psw->dtype, &pc));
        g.poff = pc->offset;
    }
    cl_mem mg = clt__mem(gc), mi = clt__mem(sv->idx), mf = clt__mem(sv->off);
    if (gw) {
        int64_t rshape[2] = {g.n, g.D};
        CLT__TRY(clt__temp_new(fn, "the entries' gradient rows", w->dev, w->dtype, 2, rshape,
                               &rows));
        cl_mem mr = clt__mem(rows), mp = pc ? clt__mem(pc) : mr;
        cl_mem ma = sv->aux ? clt__mem(sv->aux) : mr;
        clt__arg args[] = {CLT__ARG(mr), CLT__ARG(mg), CLT__ARG(mi), CLT__ARG(mf),
                           CLT__ARG(mp), CLT__ARG(ma), CLT__ARG(g)};
        CLT__TRY(launch(w->dev, w->dtype, "bag_rows", g.n * g.D, 7, args, fn));
        CLT__TRY(clt__error_in(clt__full(w->dev, w->dtype, 2, w->shape, 0.0, &z), fn));
        /* an index out of range (the forward reported it) has a row of
         * zeros, added to a clamped row, so that index_add reports it
         * again under its own name at no later synchronisation */
        double lo = 0, hi = (double)(g.rows - 1);
        CLT__TRY(clt__clamp(sv->idx, &lo, &hi, &ic, fn));
        CLT__TRY(clt__index_add(z, 0, ic, rows, 1, gw, fn));
    }
    if (gp) {
        CLT__TRY(clt__contiguous_as(fn, w, w->dtype, &wc));
        g.woff = wc->offset;
        CLT__TRY(clt__result_new(fn, w->dev, w->dtype, psw->ndim, psw->shape, gp));
        cl_mem mo = clt__mem(*gp), mw = clt__mem(wc);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mg), CLT__ARG(mw),
                           CLT__ARG(mi), CLT__ARG(mf), CLT__ARG(g)};
        CLT__TRY(launch(w->dev, w->dtype, "bag_psw_grad", g.n, 6, args, fn));
    }
done:
    if (st != CLT_OK && gw) {
        clt_tensor_free(*gw);
        *gw = NULL;
    }
    if (st != CLT_OK && gp) {
        clt_tensor_free(*gp);
        *gp = NULL;
    }
    clt_tensor_free(gc);
    clt_tensor_free(wc);
    clt_tensor_free(pc);
    clt_tensor_free(rows);
    clt_tensor_free(z);
    clt_tensor_free(ic);
    return st;
}

clt_status clt__embedding_bag_entries(const clt_tensor *w, const clt__bag_saved *sv,
                                      int64_t nbags, clt_tensor **bags)
{
    const char *fn = "clt_backward";
    *bags = NULL;
    bag_geom g = {0};
    g.noff = sv->off->numel, g.nbags = nbags;
    g.n = sv->idx->numel, g.D = w->shape[1], g.rows = w->shape[0];
    g.pad = sv->pad, g.op = CLT__IDX_EMBEDDING_BAG;
    g.ioff = sv->idx->offset, g.ooff = sv->off->offset;
    clt_status st = clt__result_new(fn, w->dev, CLT_INT64, 1, &g.n, bags);
    if (st != CLT_OK || g.n == 0)
        return st;
    cl_mem mb = clt__mem(*bags), mi = clt__mem(sv->idx), mf = clt__mem(sv->off);
    clt__arg args[] = {CLT__ARG(mb), CLT__ARG(mi), CLT__ARG(mf), CLT__ARG(g)};
    st = launch(w->dev, w->dtype, "bag_entry_bags", g.n, 4, args, fn);
    if (st != CLT_OK) {
        clt_tensor_free(*bags);
        *bags = NULL;
    }
    return st;
}
