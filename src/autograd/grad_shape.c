/* grad_shape.c: the reordering, repeating and padding copies of view.h
 * (flip, roll, repeat, tile, repeat_interleave, tril, triu, diag, pad),
 * trace, and meshgrid, with their backward formulas under PyTorch's node
 * names.  The forwards are in src/ops/shape.c. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

static clt_status one(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                      const clt_tensor *t, int nsaved, const clt_tensor *const *saved,
                      clt__node **node)
{
    return clt__record(st, out, name, bw, 1, &t, nsaved, saved, node);
}

static int wrap(int dim, int ndim)
{
    int n = ndim > 0 ? ndim : 1;
    return dim < 0 ? dim + n : dim;
}

/* ---- flip and roll ------------------------------------------------------------ */

/* i[0] the count, i[1..] the dims: flipping again undoes it (recorded, so
 * that it is differentiable again: clt__twice). */
static clt_status bw_flip(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int dims[CLT_MAX_DIMS], k = (int)n->i[0];
    for (int j = 0; j < k; j++)
        dims[j] = (int)n->i[1 + j];
    return clt_flip(g, dims, k, &gin[0]);
}

/* flip and roll of a complex tensor: on its real view, the dims wrapped
 * against t's (roll without dims flattens t first, as torch). */
typedef struct via_dims {
    bool roll;
    int k;
    int dims[CLT_MAX_DIMS];
    const int64_t *shifts;
} via_dims;

static clt_status real_move(const clt_tensor *r, const void *ctx, clt_tensor **out)
{
    const via_dims *v = ctx;
    return v->roll ? clt_roll(r, v->shifts, v->dims, v->k, out) : clt_flip(r, v->dims, v->k, out);
}

static bool complex_dims(const clt_tensor *t, const int *dims, int k, clt_tensor **out,
                         via_dims *v)
{
    if (t == NULL || out == NULL || !clt__dtype_is_complex(t->dtype) || t->ndim == 0 ||
        t->ndim >= CLT_MAX_DIMS || k < 0 || k > CLT_MAX_DIMS || (k > 0 && dims == NULL))
        return false;
    v->k = k;
    for (int j = 0; j < k; j++) {
        v->dims[j] = wrap(dims[j], t->ndim);
        if (v->dims[j] < 0 || v->dims[j] >= t->ndim)
            return false;
    }
    return true;
}

clt_status clt_flip(const clt_tensor *t, const int *dims, int k, clt_tensor **out)
{
    via_dims v = {.roll = false};
    if (complex_dims(t, dims, k, out, &v)) {
        clt_status st = clt__complex_via_real("clt_flip", t, real_move, &v, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt__node *n = NULL;
    clt_status st = one(clt__flip(t, dims, k, out, "clt_flip"), out, "FlipBackward0", bw_flip, t,
                        0, NULL, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = k;
        for (int j = 0; j < k; j++)
            n->i[1 + j] = wrap(dims[j], t->ndim);
    }
    return st;
}

/* i[CLT_MAX_DIMS] 1 for a flattened roll by i[0]; else i[d] the total
 * shift of dim d.  Rolling back by minus that undoes it (recorded, so that
 * it is differentiable again: clt__twice). */
static clt_status bw_roll(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int64_t shifts[CLT_MAX_DIMS];
    int dims[CLT_MAX_DIMS], k = 0;
    if (n->i[CLT_MAX_DIMS]) {
        shifts[0] = -n->i[0];
        return clt_roll(g, shifts, NULL, 0, &gin[0]);
    }
    for (int d = 0; d < g->ndim; d++)
        if (n->i[d] != 0) {
            dims[k] = d;
            shifts[k++] = -n->i[d];
        }
    if (k == 0)
        return clt__alias_grad(g, &gin[0]);
    return clt_roll(g, shifts, dims, k, &gin[0]);
}

clt_status clt_roll(const clt_tensor *t, const int64_t *shifts, const int *dims, int k,
                    clt_tensor **out)
{
    via_dims v = {.roll = true, .shifts = shifts};
    if (shifts && k > 0 && complex_dims(t, dims, k, out, &v)) {
        clt_status st = clt__complex_via_real("clt_roll", t, real_move, &v, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    if (shifts && k == 0 && t && out && clt__dtype_is_complex(t->dtype) && t->ndim > 0) {
        /* over the flattened tensor, then t's shape again */
        int64_t nel = t->numel;
        clt_tensor *f = NULL, *r = NULL;
        int zero = 0;
        *out = NULL;
        clt_status st = clt__reshape_rec("clt_roll", t, 1, &nel, &f);
        if (st == CLT_OK)
            st = clt_roll(f, shifts, &zero, 1, &r);
        if (st == CLT_OK)
            st = clt__reshape_rec("clt_roll", r, t->ndim, t->shape, out);
        clt_tensor_free(f);
        clt_tensor_free(r);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt__node *n = NULL;
    clt_status st = one(clt__roll(t, shifts, dims, k, out, "clt_roll"), out, "RollBackward0",
                        bw_roll, t, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        /* Shifts reduced modulo the size, so that negating them cannot
         * overflow. */
        if (k == 0) {
            n->i[CLT_MAX_DIMS] = 1;
            n->i[0] = t->numel > 0 ? shifts[0] % t->numel : 0;
        }
        for (int j = 0; j < k; j++) {
            int d = wrap(dims[j], t->ndim);
            int64_t size = t->ndim > 0 ? t->shape[d] : 1;
            if (size > 0)
                n->i[d] = (n->i[d] + shifts[j] % size) % size;
        }
    }
    return st;
}

/* ---- repeat and tile ---------------------------------------------------------- */

/* i[0] the count k, i[1..k] the repeats: each repeated dim summed over its
 * copies ([before, r, size * after] summed over r), then t's shape, with
 * recording ops (clt__twice). */
static clt_status bw_repeat(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int k = (int)n->i[0];
    const clt__edge *e = &n->in[0];
    clt_tensor *cur = NULL, *v = NULL, *s = NULL;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, g->shape, sizeof shape);
    CLT__TRY(clt__alias_grad(g, &cur));
    for (int d = 0; d < k; d++) {
        int64_t r = n->i[1 + d];
        if (r == 1)
            continue;
        int64_t size = d < k - e->ndim ? 1 : e->shape[d - (k - e->ndim)];
        int64_t before = 1, after = 1;
        for (int j = 0; j < d; j++)
            before *= shape[j];
        for (int j = d + 1; j < k; j++)
            after *= shape[j];
        int64_t s3[3] = {before, r, size * after};
        CLT__TRY(clt__reshape_rec("clt_backward", cur, 3, s3, &v));
        CLT__TRY(clt__sum_dim_rec("clt_backward", v, 1, 0, &s));
        shape[d] = size;
        clt_tensor_free(cur);
        cur = NULL;
        CLT__TRY(clt__reshape_rec("clt_backward", s, k, shape, &cur));
        clt_tensor_free(v);
        clt_tensor_free(s);
        v = s = NULL;
    }
    CLT__TRY(clt__reshape_rec("clt_backward", cur, e->ndim, e->shape, &gin[0]));
done:
    clt_tensor_free(cur);
    clt_tensor_free(v);
    clt_tensor_free(s);
    return st;
}

static clt_status repeat_rec(const char *fn, const clt_tensor *t, const int64_t *repeats, int k,
                             clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = one(clt__repeat(t, repeats, k, out, fn), out, "RepeatBackward0", bw_repeat,
                        t, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = k;
        for (int j = 0; j < k; j++)
            n->i[1 + j] = repeats[j];
    }
    return st;
}

clt_status clt_repeat(const clt_tensor *t, const int64_t *repeats, int k, clt_tensor **out)
{
    return repeat_rec("clt_repeat", t, repeats, k, out);
}

clt_status clt_tile(const clt_tensor *t, const int64_t *reps, int k, clt_tensor **out)
{
    static const char fn[] = "clt_tile";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (k > 0)
        CLT__REQUIRE_ARG(reps, fn);
    if (k < 0 || k > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d reps; at most %d supported", fn, k,
                          CLT_MAX_DIMS);
    int64_t r[CLT_MAX_DIMS];
    int lead = t->ndim > k ? t->ndim - k : 0;
    for (int j = 0; j < lead; j++)
        r[j] = 1;
    for (int j = 0; j < k; j++)
        r[lead + j] = reps[j];
    return repeat_rec(fn, t, r, lead + k, out);
}

/* ---- repeat_interleave: an index_select, as in PyTorch -------------------------- */

static clt_status interleave(const char *fn, const clt_tensor *t, int64_t repeats,
                             const clt_tensor *rt, const int *dim, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = CLT_OK;
    clt_tensor *flat = NULL, *idx = NULL;
    const clt_tensor *src = t;
    int d = 0;
    if (dim == NULL) {
        CLT__TRY(clt__flatten_rec(fn, t, 0, -1, &flat));
        src = flat;
    } else {
        CLT__TRY(clt__wrap_dim(*dim, t->ndim > 0 ? t->ndim : 1, &d, fn));
    }
    int64_t size = src->ndim > 0 ? src->shape[d] : 1;
    if (rt)
        CLT__TRY(clt__same_device(t, rt, fn));
    CLT__TRY(rt ? clt__repeat_interleave_index_of(rt, size, &idx, fn)
                : clt__repeat_interleave_index(t->dev, size, repeats, &idx, fn));
    CLT__TRY(clt__index_select_rec(fn, src, d, idx, out));
done:
    clt_tensor_free(flat);
    clt_tensor_free(idx);
    return st;
}

clt_status clt_repeat_interleave(const clt_tensor *t, int64_t repeats, const int *dim,
                                 clt_tensor **out)
{
    return interleave("clt_repeat_interleave", t, repeats, NULL, dim, out);
}

clt_status clt_repeat_interleave_tensor(const clt_tensor *t, const clt_tensor *repeats,
                                        const int *dim, clt_tensor **out)
{
    static const char fn[] = "clt_repeat_interleave_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(repeats, fn);
    return interleave(fn, t, 0, repeats, dim, out);
}

/* ---- tril, triu, diag, trace ---------------------------------------------------- */

static clt_status tri(const clt_tensor *t, int64_t diagonal, bool upper, clt_tensor **out,
                      const char *fn);

/* i[0] the diagonal, i[1] upper: the same triangle of g (recorded in a
 * pass that creates a graph: clt__twice). */
static clt_status bw_tri(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (clt__creating_graph())
        return tri(g, n->i[0], n->i[1] != 0, &gin[0], "clt_backward");
    return clt__tri(g, n->i[0], n->i[1] != 0, &gin[0], "clt_backward");
}

static clt_status tri(const clt_tensor *t, int64_t diagonal, bool upper, clt_tensor **out,
                      const char *fn)
{
    clt__node *n = NULL;
    clt_status st = one(clt__tri(t, diagonal, upper, out, fn), out,
                        upper ? "TriuBackward0" : "TrilBackward0", bw_tri, t, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = diagonal;
        n->i[1] = upper;
    }
    return st;
}

clt_status clt_tril(const clt_tensor *t, int64_t diagonal, clt_tensor **out)
{
    return tri(t, diagonal, false, out, "clt_tril");
}

clt_status clt_triu(const clt_tensor *t, int64_t diagonal, clt_tensor **out)
{
    return tri(t, diagonal, true, out, "clt_triu");
}

/* i[0] the diagonal: a vector's gradient is g's diagonal, a matrix's g on
 * its diagonal (recorded in a pass that creates a graph: clt__twice). */
static clt_status bw_diag(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    if (e->ndim == 1)
        return clt_diagonal(g, n->i[0], 0, 1, &gin[0]);
    return clt__diagonal_scatter_grad(g, e->ndim, e->shape, n->i[0], 0, 1, &gin[0]);
}

clt_status clt_diag(const clt_tensor *t, int64_t diagonal, clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = one(clt__diag(t, diagonal, out, "clt_diag"), out, "DiagBackward0", bw_diag,
                        t, 0, NULL, &n);
    if (n)
        n->i[0] = diagonal;
    clt__twice(n);
    return st;
}

/* g (0-d) on the main diagonal of zeros (recorded in a pass that creates
 * a graph: clt__twice). */
static clt_status bw_trace(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    int64_t k = e->shape[0] < e->shape[1] ? e->shape[0] : e->shape[1];
    clt_tensor *v = NULL;
    clt_status st = clt__expand_rec("clt_backward", g, 1, &k, &v);
    if (st == CLT_OK)
        st = clt__diagonal_scatter_grad(v, e->ndim, e->shape, 0, 0, 1, &gin[0]);
    clt_tensor_free(v);
    return st;
}

clt_status clt_trace(const clt_tensor *t, clt_tensor **out)
{
    CLT__AUTOCAST("clt_trace", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (t), clt_trace(CLT__AC(0), out));
    static const char fn[] = "clt_trace";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: trace: expected a matrix, but got tensor with dim %d", fn,
                          t->ndim);
    if (t->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: \"trace\" not implemented for bool",
                          fn);
    clt_tensor *v = NULL;
    clt_status st = clt__diagonal(t, 0, 0, 1, &v, fn);
    if (st == CLT_OK)
        st = clt__sum(v, out, fn);
    clt_tensor_free(v);
    clt__node *n = NULL;
    st = one(st, out, "TraceBackward0", bw_trace, t, 0, NULL, &n);
    clt__twice(n);
    return st;
}

/* ---- pad -------------------------------------------------------------------------- */

/* i[0] npad, i[1..npad] the pads: padding g by their negation crops what
 * the forward added and puts zeros where it cropped (recorded: clt__twice). */
static clt_status bw_constant_pad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int64_t neg[2 * CLT_MAX_DIMS];
    int npad = (int)n->i[0];
    for (int j = 0; j < npad; j++)
        neg[j] = -n->i[1 + j];
    return clt__pad_rec("clt_backward", g, neg, npad, CLT_PAD_CONSTANT, 0.0, &gin[0]);
}

/* i[0] npad, i[1..npad] the pads, i[1 + 2 * CLT_MAX_DIMS] the mode: the
 * gather is separable, one index map per padded dim (clt__pad_index), so
 * g's entries go back where they came from by one index_add per dim into
 * zeros, the first padded dim last: sums in a fixed order.  The index_add
 * records (clt__twice): its backward selects the rows again. */
static clt_status bw_gathered_pad(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[0];
    int k = (int)n->i[0] / 2, nd = e->ndim;
    clt_pad_mode mode = (clt_pad_mode)n->i[1 + 2 * CLT_MAX_DIMS];
    clt_tensor *cur = NULL, *z = NULL, *next = NULL, *idx = NULL;
    CLT__TRY(clt__alias_grad(g, &cur));
    for (int j = k - 1; j >= 0; j--) {
        int d = nd - 1 - j;
        int64_t shape[CLT_MAX_DIMS];
        memcpy(shape, cur->shape, sizeof shape);
        shape[d] = e->shape[d];
        CLT__TRY(clt__pad_index(g->dev, e->shape[d], n->i[1 + 2 * j], n->i[2 + 2 * j],
                                cur->shape[d], mode, &idx, "clt_backward"));
        CLT__TRY(clt__full(g->dev, g->dtype, nd, shape, 0.0, &z));
        CLT__TRY(clt_index_add(z, d, idx, cur, 1, &next));
        clt_tensor_free(cur);
        clt_tensor_free(z);
        clt_tensor_free(idx);
        cur = next;
        z = next = idx = NULL;
    }
    gin[0] = cur;
    cur = NULL;
done:
    clt_tensor_free(cur);
    clt_tensor_free(z);
    clt_tensor_free(next);
    clt_tensor_free(idx);
    return st;
}

static const char *const pad_names[2][3] = {
    {"ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0"},
    {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0", "ReplicationPad3DBackward0"}};

bool clt__pad_autocast_cpu(clt_pad_mode mode, int npad)
{
    if (mode == CLT_PAD_REFLECT)
        return npad == 2 || npad == 4;
    return mode == CLT_PAD_REPLICATE && (npad == 2 || npad == 4 || npad == 6);
}

clt_status clt_pad(const clt_tensor *t, const int64_t *pad, int npad, clt_pad_mode mode,
                   double value, clt_tensor **out)
{
    if (clt__pad_autocast_cpu(mode, npad))
        CLT__AUTOCAST("clt_pad", CLT__AC_CPU(CLT__AC_FLOAT32), 1, (t),
                      clt_pad(CLT__AC(0), pad, npad, mode, value, out));
    return clt__pad_rec("clt_pad", t, pad, npad, mode, value, out);
}

clt_status clt__pad_rec(const char *fn, const clt_tensor *t, const int64_t *pad, int npad,
                        clt_pad_mode mode, double value, clt_tensor **out)
{
    if (mode == CLT_PAD_REFLECT || mode == CLT_PAD_REPLICATE)
        CLT__HALF_VIA_FLOAT32(fn, t, out, NULL,
                              clt__pad_rec(fn, clt__hx, pad, npad, mode, value, &clt__hr));
    clt__node *n = NULL;
    clt_status st = clt__pad(t, pad, npad, mode, value, out, fn);
    if (st != CLT_OK)
        return st;
    const char *name = mode == CLT_PAD_CONSTANT    ? "ConstantPadNdBackward0"
                       : mode == CLT_PAD_CIRCULAR ? "torch::autograd::CopySlices"
                                                  : pad_names[mode == CLT_PAD_REPLICATE][npad / 2 - 1];
    st = one(st, out, name, mode == CLT_PAD_CONSTANT ? bw_constant_pad : bw_gathered_pad, t, 0,
             NULL, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = npad;
        for (int j = 0; j < npad; j++)
            n->i[1 + j] = pad[j];
        n->i[1 + 2 * CLT_MAX_DIMS] = mode;
    }
    return st;
}

/* ---- meshgrid: expanded views --------------------------------------------------------------- */

clt_status clt_meshgrid(const clt_tensor *const *ts, size_t n, clt_meshgrid_indexing indexing,
                        clt_tensor ***outs, size_t *nout)
{
    static const char fn[] = "clt_meshgrid";
    if (outs)
        *outs = NULL;
    if (nout)
        *nout = 0;
    CLT__REQUIRE_ARG(outs, fn);
    CLT__REQUIRE_ARG(nout, fn);
    CLT__REQUIRE_ARG(ts, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: expects a non-empty TensorList", fn);
    if (n > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %zu tensors give grids of %zu dimensions; "
                          "at most %d supported", fn, n, n, CLT_MAX_DIMS);
    if (indexing != CLT_MESHGRID_IJ && indexing != CLT_MESHGRID_XY)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: indexing must be one of \"xy\" or \"ij\", but received: %d", fn,
                          (int)indexing);
    int64_t shape[CLT_MAX_DIMS];
    for (size_t i = 0; i < n; i++) {
        if (ts[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu of the list is NULL", fn, i);
        if (ts[i]->ndim > 1)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Expected 0D or 1D tensor in the tensor list but got a tensor "
                              "of %d dimensions at position %zu",
                              fn, ts[i]->ndim, i);
        if (ts[i]->dtype != ts[0]->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: Expected all tensors in the tensor list to have the same "
                              "dtype (%s at position 0, %s at %zu)",
                              fn, clt_dtype_name(ts[0]->dtype), clt_dtype_name(ts[i]->dtype), i);
        clt_status st = clt__same_device(ts[0], ts[i], fn);
        if (st != CLT_OK)
            return st;
    }
    /* xy swaps the first two dimensions of every grid. */
    bool swap = indexing == CLT_MESHGRID_XY && n >= 2;
    for (size_t i = 0; i < n; i++) {
        size_t p = swap && i < 2 ? 1 - i : i;
        shape[p] = ts[i]->numel;
    }
    clt_tensor **arr = clt__calloc(n, sizeof *arr);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    clt_tensor *v = NULL;
    for (size_t i = 0; i < n; i++) {
        int64_t vs[CLT_MAX_DIMS];
        size_t p = swap && i < 2 ? 1 - i : i;
        for (size_t j = 0; j < n; j++)
            vs[j] = j == p ? ts[i]->numel : 1;
        CLT__TRY(clt__reshape_rec(fn, ts[i], (int)n, vs, &v));
        CLT__TRY(clt__expand_rec(fn, v, (int)n, shape, &arr[i]));
        clt_tensor_free(v);
        v = NULL;
    }
    *outs = arr;
    *nout = n;
    return clt__ok();
done:
    clt_tensor_free(v);
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(arr[i]);
    free(arr);
    return st;
}

/* ---- pixel_shuffle, pixel_unshuffle and channel_shuffle ------------------------------ */

/* i[0] the factor, i[1] 1 for pixel_unshuffle: the gradient is the other
 * (recorded: clt__twice). */
static clt_status bw_pixel_shuffle(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__pixel_shuffle_rec("clt_backward", g, n->i[0], n->i[1] == 0, &gin[0]);
}

clt_status clt__pixel_shuffle_rec(const char *fn, const clt_tensor *t, int64_t r, bool down,
                                  clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt__node *n = NULL;
    clt_status st = one(clt__pixel_shuffle(t, r, down, out, fn), out,
                        down ? "PixelUnshuffleBackward0" : "PixelShuffleBackward0",
                        bw_pixel_shuffle, t, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = r;
        n->i[1] = down;
    }
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_pixel_shuffle(const clt_tensor *input, int64_t upscale_factor, clt_tensor **out)
{
    return clt__pixel_shuffle_rec("clt_pixel_shuffle", input, upscale_factor, false, out);
}

clt_status clt_pixel_unshuffle(const clt_tensor *input, int64_t downscale_factor,
                               clt_tensor **out)
{
    return clt__pixel_shuffle_rec("clt_pixel_unshuffle", input, downscale_factor, true, out);
}

/* i[0] the groups: shuffling in C / groups groups puts the channels back
 * (recorded: clt__twice). */
static clt_status bw_channel_shuffle(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__channel_shuffle_rec("clt_backward", g, g->shape[1] / n->i[0], &gin[0]);
}

clt_status clt__channel_shuffle_rec(const char *fn, const clt_tensor *t, int64_t groups,
                                    clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt__node *n = NULL;
    clt_status st = one(clt__channel_shuffle(t, groups, out, fn), out, "ChannelShuffleBackward0",
                        bw_channel_shuffle, t, 0, NULL, &n);
    clt__twice(n);
    if (n)
        n->i[0] = groups;
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_channel_shuffle(const clt_tensor *input, int64_t groups, clt_tensor **out)
{
    return clt__channel_shuffle_rec("clt_channel_shuffle", input, groups, out);
}

/* ---- pad_sequence ---------------------------------------------------------------------- */

/* i[0] batch_first.  Sequence k's gradient is its rows of g, [k, :L_k] or
 * [:L_k, k] (L_k from its edge), converted back by the engine; recorded
 * views (clt__twice). */
static clt_status bw_pad_sequence(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    int bd = n->i[0] ? 0 : 1;
    clt_status st = CLT_OK;
    for (int k = 0; k < n->nin && st == CLT_OK; k++) {
        if (!CLT__NEED(n, k))
            continue;
        clt_tensor *row = NULL, *seq = NULL;
        st = clt__narrow_rec(fn, g, bd, k, 1, &row);
        if (st == CLT_OK)
            st = clt__squeeze_rec(fn, row, bd, &seq);
        if (st == CLT_OK)
            st = clt__narrow_rec(fn, seq, 0, 0, n->in[k].shape[0], &gin[k]);
        clt_tensor_free(row);
        clt_tensor_free(seq);
    }
    return st;
}

clt_status clt_pad_sequence(const clt_tensor *const *seqs, size_t n, int batch_first,
                            double padding_value, clt_tensor **out)
{
    static const char fn[] = "clt_pad_sequence";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(seqs, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: received an empty list of sequences",
                          fn);
    if (n > INT32_MAX / 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %zu sequences are too many", fn, n);
    const clt_tensor *s0 = seqs[0];
    char a[160], b[160];
    int64_t maxlen = 0;
    clt_status st = CLT_OK;
    for (size_t k = 0; k < n; k++) {
        const clt_tensor *s = seqs[k];
        if (s == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: sequence %zu is NULL", fn, k);
        if (s->ndim == 0)
            return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                              "%s: Dimension specified as 0 but tensor has no dimensions "
                              "(sequence %zu)",
                              fn, k);
        if (s->ndim >= CLT_MAX_DIMS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: sequence %zu has %d dims; the result would have more than %d",
                              fn, k, s->ndim, CLT_MAX_DIMS);
        if ((st = clt__same_device(s0, s, fn)) != CLT_OK)
            return st;
        bool same = s->ndim == s0->ndim;
        for (int d = 1; same && d < s->ndim; d++)
            same = s->shape[d] == s0->shape[d];
        if (!same)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: every sequence must have the trailing sizes of the first, but "
                              "sequence %zu is %s and sequence 0 %s",
                              fn, k, clt__shape_str(a, sizeof a, s->ndim, s->shape),
                              clt__shape_str(b, sizeof b, s0->ndim, s0->shape));
        maxlen = s->shape[0] > maxlen ? s->shape[0] : maxlen;
    }
    /* each sequence padded to maxlen rows (in the first's dtype, as
     * torch's copy into its result), then stacked */
    clt_tensor **parts = clt__calloc(n, sizeof *parts);
    if (parts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t pad[2 * CLT_MAX_DIMS] = {0};
    const int npad = 2 * s0->ndim;
    for (size_t k = 0; k < n; k++) {
        clt_tensor *conv = NULL;
        const clt_tensor *s = seqs[k];
        if (s->dtype != s0->dtype) {
            CLT__TRY(clt__to_dtype(s, s0->dtype, &conv, fn));
            s = conv;
        }
        pad[npad - 1] = maxlen - s->shape[0];
        st = clt__pad(s, pad, npad, CLT_PAD_CONSTANT, padding_value, &parts[k], fn);
        clt_tensor_free(conv);
        CLT__TRY(st);
    }
    CLT__TRY(clt__stack((const clt_tensor *const *)parts, n, batch_first ? 0 : 1, out, fn));
    clt__node *node = NULL;
    CLT__TRY(clt__record(st, out, "torch::autograd::CopySlices", bw_pad_sequence, (int)n, seqs,
                         0, NULL, &node));
    clt__twice(node);
    if (node)
        node->i[0] = batch_first != 0;
done:
    for (size_t k = 0; k < n; k++)
        clt_tensor_free(parts[k]);
    free(parts);
    return st == CLT_OK ? clt__ok() : st;
}
