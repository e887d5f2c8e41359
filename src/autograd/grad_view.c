/* grad_view.c: the views and joins of view.h, and the moves and copies of
 * tensor.h (clt_to, clt_to_dtype, clt_clone), with their backward formulas:
 * each puts the output's gradient back into the input's shape, place,
 * device or dtype. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

/* The gradient in the input's shape (reshape, view, flatten, squeeze,
 * unsqueeze). */
static clt_status bw_reshape(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__reshape_rec("clt_backward", g, n->in[0].ndim, n->in[0].shape, &gin[0]);
}

/* The identity: expand (the engine sums the broadcast dims), contiguous,
 * clone, to_dtype (the engine converts the dtype back). */
static clt_status bw_identity(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__alias_grad(g, &gin[0]);
}

static clt_status bw_transpose(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__transpose_rec("clt_backward", g, (int)n->i[0], (int)n->i[1], &gin[0]);
}

/* i[0..ndim) the permutation; the gradient takes its inverse. */
static clt_status bw_permute(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int inv[CLT_MAX_DIMS];
    int nd = n->in[0].ndim;
    for (int d = 0; d < nd; d++)
        inv[n->i[d]] = d;
    return clt__permute_rec("clt_backward", g, nd, inv, &gin[0]);
}

/* zeros of the given shape, size `len` along dim, in g's dtype */
static clt_status zeros_along(const clt_tensor *g, const clt__edge *e, int dim, int64_t len,
                              clt_tensor **out)
{
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, g->shape, sizeof shape);
    shape[dim] = len;
    return clt__full(g->dev, g->dtype, g->ndim, shape, 0.0, out);
}

/* i[0] dim, i[1] start, i[2] step, i[3] count.  The input's gradient is g
 * at start, start + step, ... and zero elsewhere, built from joins: with a
 * step, g is interleaved with step - 1 zero slices (stack on dim + 1, then
 * reshape), cut to the span, and padded with zeros before and after. */
static clt_status bw_slice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[0];
    int dim = (int)n->i[0];
    int64_t start = n->i[1], step = n->i[2], cnt = n->i[3], size = e->shape[dim];
    clt_tensor *z = NULL, *spread = NULL, *st_ = NULL, *cut = NULL, *before = NULL,
               *after = NULL, **parts = NULL;
    if (cnt == 0)
        return clt__full(g->dev, g->dtype, e->ndim, e->shape, 0.0, &gin[0]);
    if (step > 1) {
        parts = clt__calloc((size_t)step, sizeof *parts);
        if (parts == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "SliceBackward0: out of host memory");
        CLT__TRY(clt__full(g->dev, g->dtype, g->ndim, g->shape, 0.0, &z));
        parts[0] = (clt_tensor *)g;
        for (int64_t k = 1; k < step; k++)
            parts[k] = z;
        CLT__TRY(clt__stack_rec("clt_backward", (const clt_tensor *const *)parts, (size_t)step,
                                dim + 1, &st_));
        int64_t shape[CLT_MAX_DIMS];
        memcpy(shape, g->shape, sizeof shape);
        shape[dim] = cnt * step;
        CLT__TRY(clt__reshape_rec("clt_backward", st_, g->ndim, shape, &spread));
        int64_t span = (cnt - 1) * step + 1;
        CLT__TRY(clt__narrow_rec("clt_backward", spread, dim, 0, span, &cut));
    } else {
        CLT__TRY(clt__alias_grad(g, &cut));
    }
    int64_t tail = size - start - cut->shape[dim];
    const clt_tensor *join[3];
    size_t nj = 0;
    if (start > 0) {
        CLT__TRY(zeros_along(g, e, dim, start, &before));
        join[nj++] = before;
    }
    join[nj++] = cut;
    if (tail > 0) {
        CLT__TRY(zeros_along(g, e, dim, tail, &after));
        join[nj++] = after;
    }
    CLT__TRY(nj == 1 ? clt__alias_grad(cut, &gin[0])
                     : clt__cat_rec("clt_backward", join, nj, dim, &gin[0]));
done:
    free(parts);
    clt_tensor_free(z);
    clt_tensor_free(spread);
    clt_tensor_free(st_);
    clt_tensor_free(cut);
    clt_tensor_free(before);
    clt_tensor_free(after);
    return st;
}

/* i[0] the dim; each input's gradient is its part of g along it (cat) or
 * its index along the new dim (stack, i[1] = 1). */
static clt_status bw_join(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int dim = (int)n->i[0];
    int64_t at = 0;
    for (int k = 0; k < n->nin; k++) {
        const clt__edge *e = &n->in[k];
        int64_t len = n->i[1] ? 1 : e->ndim == 1 && e->shape[0] == 0 && g->ndim != 1 ? 0
                                                                                   : e->shape[dim];
        if (CLT__NEED(n, k)) {
            clt_tensor *part = NULL;
            st = clt__narrow_rec("clt_backward", g, dim, at, len, &part);
            if (st == CLT_OK)
                st = n->i[1] ? clt__squeeze_rec("clt_backward", part, dim, &gin[k])
                             : clt__alias_grad(part, &gin[k]);
            clt_tensor_free(part);
            if (st != CLT_OK)
                return st;
        }
        at += len;
    }
    return CLT_OK;
}

/* The gradient goes back to the input's device. */
static clt_status bw_to(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__to_at(g, n->in[0].dev, &gin[0], __builtin_return_address(0), "clt_backward");
}

/* The formulas above but bw_to compute with recording ops (clt__twice). */
static clt_status one(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                      const clt_tensor *t, clt__node **node)
{
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, 1, &t, 0, NULL, &n);
    if (bw != bw_to)
        clt__twice(n);
    if (node)
        *node = n;
    return st;
}

clt_status clt__view_rec(const char *fn, const clt_tensor *t, int ndim, const int64_t *shape,
                         clt_tensor **out)
{
    return one(clt__view(t, ndim, shape, out, fn), out, "ViewBackward0", bw_reshape, t, NULL);
}

clt_status clt_view(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out)
{
    return clt__view_rec("clt_view", t, ndim, shape, out);
}

clt_status clt__reshape_rec(const char *fn, const clt_tensor *t, int ndim, const int64_t *shape,
                            clt_tensor **out)
{
    return one(clt__reshape(t, ndim, shape, out, fn), out, "ViewBackward0", bw_reshape, t, NULL);
}

clt_status clt_reshape(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out)
{
    return clt__reshape_rec("clt_reshape", t, ndim, shape, out);
}

clt_status clt__flatten_rec(const char *fn, const clt_tensor *t, int start_dim, int end_dim,
                            clt_tensor **out)
{
    return one(clt__flatten(t, start_dim, end_dim, out, fn), out, "ViewBackward0", bw_reshape,
               t, NULL);
}

clt_status clt_flatten(const clt_tensor *t, int start_dim, int end_dim, clt_tensor **out)
{
    return clt__flatten_rec("clt_flatten", t, start_dim, end_dim, out);
}

clt_status clt__squeeze_rec(const char *fn, const clt_tensor *t, int dim, clt_tensor **out)
{
    return one(clt__squeeze(t, dim, out, fn), out, "SqueezeBackward1", bw_reshape, t, NULL);
}

clt_status clt_squeeze(const clt_tensor *t, int dim, clt_tensor **out)
{
    return clt__squeeze_rec("clt_squeeze", t, dim, out);
}

clt_status clt_squeeze_all(const clt_tensor *t, clt_tensor **out)
{
    return one(clt__squeeze_all(t, out), out, "SqueezeBackward0", bw_reshape, t, NULL);
}

clt_status clt__unsqueeze_rec(const char *fn, const clt_tensor *t, int dim, clt_tensor **out)
{
    return one(clt__unsqueeze(t, dim, out, fn), out, "UnsqueezeBackward0", bw_reshape, t, NULL);
}

clt_status clt_unsqueeze(const clt_tensor *t, int dim, clt_tensor **out)
{
    return clt__unsqueeze_rec("clt_unsqueeze", t, dim, out);
}

clt_status clt__expand_rec(const char *fn, const clt_tensor *t, int ndim, const int64_t *shape,
                           clt_tensor **out)
{
    return one(clt__expand(t, ndim, shape, out, fn), out, "ExpandBackward0", bw_identity, t,
               NULL);
}

clt_status clt_expand(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out)
{
    return clt__expand_rec("clt_expand", t, ndim, shape, out);
}

clt_status clt_contiguous(const clt_tensor *t, clt_tensor **out)
{
    return one(clt__contiguous(t, out), out, "CloneBackward0", bw_identity, t, NULL);
}

clt_status clt_clone(const clt_tensor *t, clt_tensor **out)
{
    return one(clt__clone(t, out, "clt_clone"), out, "CloneBackward0", bw_identity, t, NULL);
}

clt_status clt__to_dtype_rec(const char *fn, const clt_tensor *t, clt_dtype dtype,
                             clt_tensor **out)
{
    if (t && clt__dtype_is_complex(t->dtype) && !clt__dtype_is_complex(dtype))
        return one(clt__complex_to_real(t, dtype, out, fn), out, "ToCopyBackward0", bw_identity,
                   t, NULL);
    return one(clt__to_dtype(t, dtype, out, fn), out, "ToCopyBackward0", bw_identity, t, NULL);
}

clt_status clt__half_finish(const char *fn, clt_dtype dt, clt_status st, clt_tensor *hx,
                            clt_tensor *hr, clt_tensor **out, clt_tensor **extra)
{
    if (st == CLT_OK)
        st = clt__to_dtype_rec(fn, hr, dt, out);
    clt_tensor_free(hx);
    clt_tensor_free(hr);
    if (st != CLT_OK && extra) {
        clt_tensor_free(*extra);
        *extra = NULL;
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- autocast's casts ----------------------------------------------------------------- */

/* Whether t is an operand autocast may cast on dev: floating below
 * float64 (float16, bfloat16 or float32, torch's is_eligible). */
static bool eligible(const clt_device *dev, const clt_tensor *t)
{
    return t != NULL && t->dev == dev &&
           (clt__dtype_is_half(t->dtype) || t->dtype == CLT_FLOAT32);
}

/* The op's kind on the lists the innermost region applies. */
static clt__ac_kind list_kind(int kind)
{
    return (clt__ac_kind)(clt__autocast_cpu_lists() ? kind >> 4 : kind & 15);
}

/* The dtype autocast casts t to for an op of kind, or t's own; widest: the
 * promote list's dtype (the autocast dtype promoted with every eligible
 * operand's, as torch's promote_type: float32 when an operand is float32
 * or the other 16-bit dtype). */
static clt_dtype autocast_target(clt__ac_kind kind, const clt_device *dev, clt_dtype lower,
                                 clt_dtype widest, const clt_tensor *t)
{
    if (!eligible(dev, t))
        return t ? t->dtype : CLT_FLOAT32;
    if (kind == CLT__AC_LOWER)
        return lower;
    if (kind == CLT__AC_FLOAT32)
        return CLT_FLOAT32;
    if (kind == CLT__AC_PROMOTE)
        return widest;
    return t->dtype;
}

static clt_dtype widest_of(const clt_device *dev, clt_dtype lower, int n,
                           const clt_tensor *const *in)
{
    clt_dtype w = lower;
    for (int i = 0; i < n; i++)
        if (eligible(dev, in[i]))
            w = clt_promote_types(w, in[i]->dtype);
    return w;
}

bool clt__autocast_wants(int kinds, int n, const clt_tensor *const *in)
{
    clt_dtype lower;
    clt_device *dev = clt__autocast_device(&lower);
    clt__ac_kind kind = list_kind(kinds);
    if (dev == NULL || kind == CLT__AC_NONE)
        return false;
    clt_dtype widest = kind == CLT__AC_PROMOTE ? widest_of(dev, lower, n, in) : CLT_FLOAT32;
    for (int i = 0; i < n; i++)
        if (in[i] && autocast_target(kind, dev, lower, widest, in[i]) != in[i]->dtype)
            return true;
    return false;
}

clt_status clt__autocast_begin(const char *fn, int kinds, int n, const clt_tensor **in,
                               clt_tensor **tmp)
{
    clt_dtype lower;
    clt_device *dev = clt__autocast_device(&lower);
    clt__ac_kind kind = list_kind(kinds);
    clt_dtype widest = kind == CLT__AC_PROMOTE ? widest_of(dev, lower, n, in) : CLT_FLOAT32;
    clt__autocast_suspend(1);
    for (int i = 0; i < n; i++) {
        clt_dtype to = autocast_target(kind, dev, lower, widest, in[i]);
        if (in[i] == NULL || to == in[i]->dtype)
            continue;
        clt_tensor *cached = to == lower ? clt__autocast_cache_find(in[i], to) : NULL;
        if (cached) {
            in[i] = cached;
            continue;
        }
        clt_status st = clt__to_dtype_rec(fn, in[i], to, &tmp[i]);
        if (st != CLT_OK)
            return st;
        const clt_tensor *src = in[i];
        in[i] = tmp[i];
        if (to == lower && clt__autocast_cache_put(src, tmp[i], to))
            tmp[i] = NULL;
    }
    return CLT_OK;
}

clt_status clt__autocast_end(clt_status st, int n, clt_tensor **tmp)
{
    clt__autocast_suspend(0);
    for (int i = 0; i < n; i++)
        clt_tensor_free(tmp[i]);
    return st == CLT_OK ? clt__ok() : st;
}

static _Thread_local char autocast_msg[1024];

void clt__autocast_failed(void)
{
    snprintf(autocast_msg, sizeof autocast_msg, "%s", clt_last_error());
    clt__host_refuse_here(true);
}

clt_status clt__autocast_refail(clt_status st, clt_status ignored)
{
    (void)ignored;
    clt__host_refuse_here(false);
    return clt__error(st, "%s", autocast_msg);
}

clt_status clt__autocast_list_begin(const char *fn, int kind, size_t n,
                                    const clt_tensor *const *ts, const clt_tensor ***cast,
                                    clt_tensor ***tmp)
{
    *cast = clt__calloc(n ? n : 1, sizeof **cast);
    *tmp = clt__calloc(n ? n : 1, sizeof **tmp);
    if (*cast == NULL || *tmp == NULL) {
        /* clt__autocast_list_end resumes autocast */
        clt__autocast_suspend(1);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    memcpy(*cast, ts, n * sizeof **cast);
    return clt__autocast_begin(fn, kind, (int)n, *cast, *tmp);
}

clt_status clt__autocast_list_end(clt_status st, size_t n, const clt_tensor **cast,
                                  clt_tensor **tmp)
{
    if (tmp)
        st = clt__autocast_end(st, (int)n, tmp);
    else
        st = clt__autocast_end(st, 0, NULL);
    free(tmp);
    free((void *)cast);
    return st;
}

clt_status clt_to_dtype(const clt_tensor *t, clt_dtype dtype, clt_tensor **out)
{
    return clt__to_dtype_rec("clt_to_dtype", t, dtype, out);
}

clt_status clt_to(const clt_tensor *t, clt_device *dev, clt_tensor **out)
{
    clt_status st = clt__to_at(t, dev, out, __builtin_return_address(0), "clt_to");
    return one(st, out, "ToCopyBackward0", bw_to, t, NULL);
}

/* A dim as the forward op accepted it, wrapped into [0, ndim). */
static int wrap(int dim, int ndim)
{
    return dim < 0 ? dim + ndim : dim;
}

clt_status clt__transpose_rec(const char *fn, const clt_tensor *t, int d0, int d1,
                              clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = one(clt__transpose(t, d0, d1, out, fn), out, "TransposeBackward0",
                        bw_transpose, t, &n);
    if (n) {
        n->i[0] = d0;
        n->i[1] = d1;
    }
    return st;
}

clt_status clt_transpose(const clt_tensor *t, int d0, int d1, clt_tensor **out)
{
    return clt__transpose_rec("clt_transpose", t, d0, d1, out);
}

clt_status clt_permute(const clt_tensor *t, int ndim, const int *dims, clt_tensor **out)
{
    return clt__permute_rec("clt_permute", t, ndim, dims, out);
}

clt_status clt__permute_rec(const char *fn, const clt_tensor *t, int ndim, const int *dims,
                            clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = clt__permute(t, ndim, dims, out, fn);
    st = one(st, out, "PermuteBackward0", bw_permute, t, &n);
    if (n)
        for (int d = 0; d < ndim; d++)
            n->i[d] = wrap(dims[d], ndim);
    return st;
}

/* Python's clamping of a slice bound to [0, size]. */
static int64_t clamp_bound(int64_t v, int64_t size)
{
    if (v < 0)
        v += size;
    return v < 0 ? 0 : v > size ? size : v;
}

static void slice_node(clt__node *n, const clt_tensor *t, int dim, int64_t start, int64_t step,
                       const clt_tensor *out)
{
    int d = wrap(dim, t->ndim);
    n->i[0] = d;
    n->i[1] = clamp_bound(start, t->shape[d]);
    n->i[2] = step;
    n->i[3] = out->shape[d];
}

clt_status clt_narrow(const clt_tensor *t, int dim, int64_t start, int64_t length,
                      clt_tensor **out)
{
    return clt__narrow_rec("clt_narrow", t, dim, start, length, out);
}

clt_status clt__narrow_rec(const char *fn, const clt_tensor *t, int dim, int64_t start,
                           int64_t length, clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = clt__narrow(t, dim, start, length, out, fn);
    st = one(st, out, "NarrowBackward0", bw_slice, t, &n);
    if (n)
        slice_node(n, t, dim, start, 1, *out);
    return st;
}

/* i[0] dim, i[1] index: g written into zeros of the input's shape at index
 * (recorded as clt_select_scatter when the pass creates a graph). */
static clt_status bw_select(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *z = NULL;
    clt_status st = clt__full(g->dev, g->dtype, n->in[0].ndim, n->in[0].shape, 0.0, &z);
    if (st == CLT_OK)
        st = clt__creating_graph()
                 ? clt_select_scatter(z, g, (int)n->i[0], n->i[1], &gin[0])
                 : clt__embed(z, g, CLT__EMBED_SELECT, n->i, &gin[0], "clt_backward");
    clt_tensor_free(z);
    return st;
}

clt_status clt_select(const clt_tensor *t, int dim, int64_t index, clt_tensor **out)
{
    static const char fn[] = "clt_select";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    const int64_t p[2] = {dim, index};
    clt__node *n = NULL;
    clt_status st = clt__embed_view(t, CLT__EMBED_SELECT, p, out, fn);
    st = one(st, out, "SelectBackward0", bw_select, t, &n);
    if (n) {
        n->i[0] = wrap(dim, t->ndim);
        n->i[1] = index;
    }
    return st;
}

clt_status clt__slice_rec(const char *fn, const clt_tensor *t, int dim, int64_t start,
                          int64_t end, int64_t step, clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = clt__error_in(clt__slice(t, dim, start, end, step, out), fn);
    st = one(st, out, "SliceBackward0", bw_slice, t, &n);
    if (n)
        slice_node(n, t, dim, start, step, *out);
    return st;
}

clt_status clt_slice(const clt_tensor *t, int dim, int64_t start, int64_t end, int64_t step,
                     clt_tensor **out)
{
    return clt__slice_rec("clt_slice", t, dim, start, end, step, out);
}

static clt_status join(bool stack, const clt_tensor *const *ts, size_t n_, int dim,
                       clt_tensor **out, const char *fn)
{
    clt_status st = stack ? clt__stack(ts, n_, dim, out, fn) : clt__cat(ts, n_, dim, out, fn);
    if (st != CLT_OK)
        return st;
    clt__node *n = NULL;
    st = clt__record(st, out, stack ? "StackBackward0" : "CatBackward0", bw_join, (int)n_, ts,
                     0, NULL, &n);
    if (n) {
        n->i[0] = wrap(dim, (*out)->ndim);
        n->i[1] = stack;
    }
    clt__twice(n);
    return st;
}

clt_status clt_cat(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out)
{
    return join(false, ts, n, dim, out, "clt_cat");
}

clt_status clt_stack(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out)
{
    return join(true, ts, n, dim, out, "clt_stack");
}

clt_status clt__cat_rec(const char *fn, const clt_tensor *const *ts, size_t n, int dim,
                        clt_tensor **out)
{
    return join(false, ts, n, dim, out, fn);
}

clt_status clt__stack_rec(const char *fn, const clt_tensor *const *ts, size_t n, int dim,
                          clt_tensor **out)
{
    return join(true, ts, n, dim, out, fn);
}

/* ---- splits and diagonals ---------------------------------------------------- */

/* The pieces' one node: i[0] the dim, i[1] 1 for unbind (whose pieces lack
 * it), ctx the pieces' lengths along it.  The input's gradient is written
 * once, by one cat of the pieces' gradients in order, where each run of
 * pieces that got none is one broadcast zero. */
static clt_status bw_pieces(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)g; /* output 0's gradient, read with the others below */
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[0];
    const int64_t *len = n->ctx;
    int d = (int)n->i[0];
    int64_t gap = 0, shape[CLT_MAX_DIMS], ones[CLT_MAX_DIMS];
    size_t np = 0;
    clt_tensor *zero = NULL;
    clt_tensor **parts = clt__calloc((size_t)n->nout, sizeof *parts);
    if (parts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", n->name);
    for (int s = 0; s <= n->nout; s++) {
        const clt_tensor *gs = s < n->nout ? clt__node_grad(n, s) : NULL;
        if (s < n->nout && gs == NULL) {
            gap += len[s];
            continue;
        }
        if (gap > 0) {
            if (zero == NULL) {
                for (int k = 0; k < e->ndim; k++)
                    ones[k] = 1;
                CLT__TRY(clt__full(e->dev, e->dtype, e->ndim, ones, 0.0, &zero));
            }
            memcpy(shape, e->shape, sizeof shape);
            shape[d] = gap;
            CLT__TRY(clt__expand_rec("clt_backward", zero, e->ndim, shape, &parts[np++]));
            gap = 0;
        }
        if (gs != NULL && len[s] > 0)
            CLT__TRY(n->i[1] ? clt__unsqueeze_rec("clt_backward", gs, d, &parts[np++])
                             : clt__alias_grad(gs, &parts[np++]));
    }
    if (np == 0) /* every piece is empty along d */
        st = clt__full(e->dev, e->dtype, e->ndim, e->shape, 0.0, &gin[0]);
    else if (np == 1)
        st = clt__alias_grad(parts[0], &gin[0]);
    else
        st = clt__cat_rec("clt_backward", (const clt_tensor *const *)parts, np, d, &gin[0]);
done:
    for (size_t k = 0; k < np; k++)
        clt_tensor_free(parts[k]);
    free(parts);
    clt_tensor_free(zero);
    return st;
}

/* Records one node `name` for all the pieces of t along dim (as PyTorch's
 * SplitBackward0 and UnbindBackward0 do), so that backward writes t's
 * gradient once however many pieces are used.  On failure every piece is
 * released and nothing is handed out. */
static clt_status record_pieces(clt_status st, const clt_tensor *t, int dim, const char *name,
                                bool unbind, clt_tensor ***outs, size_t *n_)
{
    if (st != CLT_OK || *n_ == 0)
        return st;
    clt_tensor **arr = *outs;
    size_t k = *n_;
    int64_t *len = NULL;
    clt__node *n = NULL;
    int d = wrap(dim, t->ndim);
    if (!clt__grad_needed(1, &t)) {
        /* the pieces are views still, which refuse in-place ops that
         * would need a gradient (clt__mark_views) */
        if (k <= INT_MAX)
            st = clt__mark_views(t, arr, (int)k, name);
    } else if (k > INT_MAX) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: %zu pieces are more than one node records (at most %d)", name, k,
                        INT_MAX);
    } else if ((len = clt__malloc(k * sizeof *len)) == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory recording the graph",
                        name);
    }
    if (st == CLT_OK && len) {
        for (size_t p = 0; p < k; p++)
            len[p] = unbind ? 1 : arr[p]->shape[d];
        st = clt__record_outputs(arr, (int)k, name, bw_pieces, 1, &t, len, free, &n);
    }
    if (n) {
        n->i[0] = d;
        n->i[1] = unbind;
        n->ctx_kept = true;
        clt__twice(n); /* bw_pieces computes with recording ops */
    }
    if (st != CLT_OK) {
        for (size_t p = 0; p < k; p++)
            clt_tensor_free(arr[p]);
        free(arr);
        *outs = NULL;
        *n_ = 0;
    }
    return st;
}

clt_status clt_split(const clt_tensor *t, int64_t split_size, int dim, clt_tensor ***outs,
                     size_t *n)
{
    clt_status st = clt__split(t, split_size, dim, false, outs, n, "clt_split");
    return record_pieces(st, t, dim, "SplitBackward0", false, outs, n);
}

clt_status clt_chunk(const clt_tensor *t, int64_t chunks, int dim, clt_tensor ***outs, size_t *n)
{
    clt_status st = clt__split(t, chunks, dim, true, outs, n, "clt_chunk");
    return record_pieces(st, t, dim, "SplitBackward0", false, outs, n);
}

clt_status clt_split_sizes(const clt_tensor *t, const int64_t *sizes, size_t k, int dim,
                           clt_tensor ***outs, size_t *n)
{
    clt_status st = clt__split_sizes(t, sizes, k, dim, outs, n, "clt_split_sizes");
    return record_pieces(st, t, dim, "SplitWithSizesBackward0", false, outs, n);
}

clt_status clt_unbind(const clt_tensor *t, int dim, clt_tensor ***outs, size_t *n)
{
    clt_status st = clt__unbind(t, dim, outs, n, "clt_unbind");
    return record_pieces(st, t, dim, "UnbindBackward0", true, outs, n);
}

/* In a pass that creates a graph, a recorded diagonal_scatter into zeros
 * (whose own gradient is a diagonal again): not a constant. */
clt_status clt__diagonal_scatter_grad(const clt_tensor *g, int ndim, const int64_t *shape,
                                      int64_t offset, int dim1, int dim2, clt_tensor **out)
{
    if (!clt__creating_graph())
        return clt__diagonal_scatter(g, ndim, shape, offset, dim1, dim2, out, "clt_backward");
    clt_tensor *z = NULL;
    clt_status st = clt__full(g->dev, g->dtype, ndim, shape, 0.0, &z);
    if (st == CLT_OK)
        st = clt_diagonal_scatter(z, g, offset, dim1, dim2, out);
    clt_tensor_free(z);
    return st;
}

/* i[0] offset, i[1] and i[2] the dims: g written into zeros' diagonal. */
static clt_status bw_diagonal(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__diagonal_scatter_grad(g, n->in[0].ndim, n->in[0].shape, n->i[0], (int)n->i[1],
                                      (int)n->i[2], &gin[0]);
}

clt_status clt_diagonal(const clt_tensor *t, int64_t offset, int dim1, int dim2,
                        clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = one(clt__diagonal(t, offset, dim1, dim2, out, "clt_diagonal"), out,
                        "DiagonalBackward0", bw_diagonal, t, &n);
    if (n) {
        n->i[0] = offset;
        n->i[1] = wrap(dim1, t->ndim);
        n->i[2] = wrap(dim2, t->ndim);
    }
    return st;
}
