/* grad_shape_more.c: torch 1.13's remaining shape functions (view.h's "more
 * views, splits, joins and scatters").  Most are composed of recorded views
 * and joins, so that autograd gives their gradients and PyTorch's node
 * names; as_strided, rot90 and the scatters record nodes of their own. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

static clt_status finish(clt_status st)
{
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- views ---------------------------------------------------------------------- */

clt_status clt_unflatten(const clt_tensor *t, int dim, const int64_t *sizes, int k,
                         clt_tensor **out)
{
    static const char fn[] = "clt_unflatten";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim == 0)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: Dimension specified as %d but tensor has no dimensions", fn, dim);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, t->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    if (k <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unflatten: sizes must be non-empty", fn);
    CLT__REQUIRE_ARG(sizes, fn);
    if (k > CLT_MAX_DIMS - t->ndim + 1)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: unflattening into %d sizes gives %d dimensions; at most %d "
                          "supported",
                          fn, k, t->ndim - 1 + k, CLT_MAX_DIMS);
    int infer = -1;
    int64_t known = 1;
    bool ok = true;
    char s[160];
    for (int i = 0; i < k; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: unflatten: only one dimension can be inferred (sizes %s)",
                                  fn, clt__shape_str(s, sizeof s, k, sizes));
            infer = i;
        } else if (sizes[i] < 0) {
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: unflatten: invalid size %lld in sizes %s", fn,
                              (long long)sizes[i], clt__shape_str(s, sizeof s, k, sizes));
        } else if (__builtin_mul_overflow(known, sizes[i], &known)) {
            ok = false;
        }
    }
    int64_t size = t->shape[d];
    if (ok)
        ok = infer >= 0 ? known != 0 && size % known == 0 : known == size;
    if (!ok)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: unflatten: Provided sizes %s don't multiply up to the size of dim "
                          "%d (%lld) in the input tensor",
                          fn, clt__shape_str(s, sizeof s, k, sizes), d, (long long)size);
    int64_t shape[CLT_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < d; i++)
        shape[m++] = t->shape[i];
    for (int i = 0; i < k; i++)
        shape[m++] = i == infer ? size / known : sizes[i];
    for (int i = d + 1; i < t->ndim; i++)
        shape[m++] = t->shape[i];
    return clt__view_rec(fn, t, m, shape, out);
}

/* The k dims of list (source or destination) wrapped into *w, each once. */
static clt_status movedim_list(const int *list, int k, int n, const char *what, int *w,
                               bool *seen, const char *fn)
{
    for (int i = 0; i < k; i++) {
        clt_status st = clt__wrap_dim(list[i], n, &w[i], fn);
        if (st != CLT_OK)
            return st;
        if (seen[w[i]]) {
            int64_t given[CLT_MAX_DIMS];
            char s[160];
            for (int j = 0; j <= i; j++)
                given[j] = list[j];
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: movedim: repeated dim in `%s` (%s)",
                              fn, what, clt__shape_str(s, sizeof s, i + 1, given));
        }
        seen[w[i]] = true;
    }
    return CLT_OK;
}

clt_status clt_movedim(const clt_tensor *t, const int *source, const int *destination, int k,
                       clt_tensor **out)
{
    static const char fn[] = "clt_movedim";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int n = t->ndim > 0 ? t->ndim : 1;
    if (k < 0 || k > n)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: movedim: Invalid source or destination dims: %d dims given for a "
                          "tensor of %d dimensions",
                          fn, k, t->ndim);
    if (k > 0) {
        CLT__REQUIRE_ARG(source, fn);
        CLT__REQUIRE_ARG(destination, fn);
    }
    int src[CLT_MAX_DIMS], dst[CLT_MAX_DIMS], order[CLT_MAX_DIMS];
    bool src_seen[CLT_MAX_DIMS] = {false}, dst_seen[CLT_MAX_DIMS] = {false};
    clt_status st = movedim_list(source, k, n, "source", src, src_seen, fn);
    if (st == CLT_OK)
        st = movedim_list(destination, k, n, "destination", dst, dst_seen, fn);
    if (st != CLT_OK)
        return st;
    for (int i = 0; i < k; i++)
        order[dst[i]] = src[i];
    for (int pos = 0, rest = 0; pos < t->ndim; pos++) {
        if (dst_seen[pos])
            continue;
        while (src_seen[rest])
            rest++;
        order[pos] = rest++;
    }
    return clt__permute_rec(fn, t, t->ndim, order, out);
}

clt_status clt_swapaxes(const clt_tensor *t, int axis0, int axis1, clt_tensor **out)
{
    return clt__transpose_rec("clt_swapaxes", t, axis0, axis1, out);
}

clt_status clt_ravel(const clt_tensor *t, clt_tensor **out)
{
    int64_t all = -1;
    return clt__reshape_rec("clt_ravel", t, 1, &all, out);
}

/* view_as, reshape_as and expand_as: which is 0, 1 or 2. */
static clt_status as_other(int which, const clt_tensor *t, const clt_tensor *other,
                           clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(other, fn);
    if (which == 0)
        return clt__view_rec(fn, t, other->ndim, other->shape, out);
    if (which == 1)
        return clt__reshape_rec(fn, t, other->ndim, other->shape, out);
    return clt__expand_rec(fn, t, other->ndim, other->shape, out);
}

clt_status clt_view_as(const clt_tensor *t, const clt_tensor *other, clt_tensor **out)
{
    return as_other(0, t, other, out, "clt_view_as");
}

clt_status clt_reshape_as(const clt_tensor *t, const clt_tensor *other, clt_tensor **out)
{
    return as_other(1, t, other, out, "clt_reshape_as");
}

clt_status clt_expand_as(const clt_tensor *t, const clt_tensor *other, clt_tensor **out)
{
    return as_other(2, t, other, out, "clt_expand_as");
}

/* t with at least nd (1 to 3) dims: a new handle on t with its history
 * (torch hands out t itself), or a view with dims of size 1 added as torch
 * adds them. */
static clt_status atleast(const clt_tensor *t, int nd, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim >= nd)
        return finish(clt__alias_history(t, out));
    if (t->ndim == 0) {
        int64_t ones[3] = {1, 1, 1};
        return clt__reshape_rec(fn, t, nd, ones, out);
    }
    if (nd == 2 || t->ndim == 2) /* [n] -> [1, n]; [m, n] -> [m, n, 1] */
        return clt__unsqueeze_rec(fn, t, nd == 2 ? 0 : -1, out);
    clt_tensor *u = NULL; /* [n] -> [1, n, 1] */
    clt_status st = clt__unsqueeze_rec(fn, t, 0, &u);
    if (st == CLT_OK)
        st = clt__unsqueeze_rec(fn, u, -1, out);
    clt_tensor_free(u);
    return st;
}

clt_status clt_atleast_1d(const clt_tensor *t, clt_tensor **out)
{
    return atleast(t, 1, out, "clt_atleast_1d");
}

clt_status clt_atleast_2d(const clt_tensor *t, clt_tensor **out)
{
    return atleast(t, 2, out, "clt_atleast_2d");
}

clt_status clt_atleast_3d(const clt_tensor *t, clt_tensor **out)
{
    return atleast(t, 3, out, "clt_atleast_3d");
}

/* ---- as_strided ---------------------------------------------------------------- */

typedef struct geometry {
    int ndim;
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS], offset, numel, extent;
} geometry;

typedef struct strided_ctx {
    geometry in, out;
} strided_ctx;

static void geometry_of(const clt_tensor *t, geometry *g)
{
    g->ndim = t->ndim;
    memcpy(g->shape, t->shape, sizeof g->shape);
    memcpy(g->strides, t->strides, sizeof g->strides);
    g->offset = t->offset;
    g->numel = t->numel;
    if (!clt__strided_extent(t->ndim, t->shape, t->strides, t->offset, &g->extent))
        g->extent = 0; /* checked by clt__as_strided for the output; t's is in its storage */
}

/* Whether two elements of g may share a storage position (a conservative
 * test: dims sorted by stride, each stride past what the smaller reach). */
static bool may_overlap(const geometry *g)
{
    int idx[CLT_MAX_DIMS], m = 0;
    for (int d = 0; d < g->ndim; d++) {
        if (g->shape[d] < 2)
            continue;
        int j = m++;
        while (j > 0 && g->strides[idx[j - 1]] > g->strides[d]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = d;
    }
    int64_t reach = 0; /* the farthest the dims so far reach from the first element */
    for (int j = 0; j < m; j++) {
        int d = idx[j];
        if (g->strides[d] <= reach)
            return true;
        reach += (g->shape[d] - 1) * g->strides[d];
    }
    return false;
}

/* The storage positions, less base, that g reaches in row-major order: a
 * new int64 [numel] tensor (read through g from an iota of the span). */
static clt_status positions(clt_device *dev, const geometry *g, int64_t base, int64_t span,
                            clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *iota = NULL, *v = NULL, *c = NULL;
    int64_t one = 1;
    CLT__TRY(clt__arange(dev, CLT_INT64, 0.0, (double)span, 1.0, &iota));
    CLT__TRY(clt__tensor_view(iota, g->ndim, g->shape, g->strides, g->offset - base, &v));
    CLT__TRY(clt__copy_as("clt_backward", v, CLT_INT64, &c));
    st = clt__tensor_view(c, 1, &g->numel, &one, 0, out);
done:
    clt_tensor_free(iota);
    clt_tensor_free(v);
    clt_tensor_free(c);
    return st;
}

/* g summed into the storage positions the output reaches, then read at the
 * input's, each divided by how many of the input's elements share its
 * position when they may (PyTorch's as_strided_backward); the steps on g
 * record (clt__twice). */
static clt_status bw_as_strided(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const strided_ctx *c = n->ctx;
    const clt__edge *e = &n->in[0];
    if (c->in.numel == 0 || c->out.numel == 0)
        return clt__full(g->dev, g->dtype, e->ndim, e->shape, 0.0, &gin[0]);
    clt_status st = CLT_OK;
    clt_tensor *pin = NULL, *pout = NULL, *gflat = NULL, *z = NULL, *acc = NULL, *r = NULL,
               *ones = NULL, *cnt = NULL, *rc = NULL, *q = NULL;
    int64_t base = c->in.offset < c->out.offset ? c->in.offset : c->out.offset;
    int64_t span = (c->in.extent > c->out.extent ? c->in.extent : c->out.extent) - base;
    CLT__TRY(positions(g->dev, &c->in, base, span, &pin));
    CLT__TRY(positions(g->dev, &c->out, base, span, &pout));
    CLT__TRY(clt__reshape_rec("clt_backward", g, 1, &c->out.numel, &gflat));
    CLT__TRY(clt__full(g->dev, g->dtype, 1, &span, 0.0, &z));
    CLT__TRY(clt_index_add(z, 0, pout, gflat, 1.0, &acc));
    CLT__TRY(clt__index_select_rec("clt_backward", acc, 0, pin, &r));
    if (may_overlap(&c->in)) {
        CLT__TRY(clt__full(g->dev, g->dtype, 1, &c->in.numel, 1.0, &ones));
        CLT__TRY(clt__index_add(z, 0, pin, ones, 1.0, &cnt, "clt_backward"));
        CLT__TRY(clt__index_select(cnt, 0, pin, &rc, "clt_backward"));
        CLT__TRY(clt__div_rec("clt_backward", r, rc, &q));
        clt_tensor_free(r);
        r = q;
        q = NULL;
    }
    st = clt__reshape_rec("clt_backward", r, e->ndim, e->shape, &gin[0]);
done:
    clt_tensor_free(pin);
    clt_tensor_free(pout);
    clt_tensor_free(gflat);
    clt_tensor_free(z);
    clt_tensor_free(acc);
    clt_tensor_free(r);
    clt_tensor_free(ones);
    clt_tensor_free(cnt);
    clt_tensor_free(rc);
    clt_tensor_free(q);
    return st;
}

clt_status clt_as_strided(const clt_tensor *t, int ndim, const int64_t *size,
                          const int64_t *stride, const int64_t *storage_offset, clt_tensor **out)
{
    static const char fn[] = "clt_as_strided";
    clt_status st = clt__as_strided(t, ndim, size, stride, storage_offset, out, fn);
    if (st != CLT_OK || !clt__grad_needed(1, &t))
        return st;
    strided_ctx *c = clt__malloc(sizeof *c);
    if (c == NULL) {
        clt_tensor_free(*out);
        *out = NULL;
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory recording the "
                          "graph", fn);
    }
    geometry_of(t, &c->in);
    geometry_of(*out, &c->out);
    clt__node *n = NULL;
    st = clt__record(st, out, "AsStridedBackward0", bw_as_strided, 1, &t, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        n->ctx = c;
        n->ctx_free = free;
        n->ctx_kept = true;
    } else {
        free(c);
    }
    return st;
}

/* ---- splits ---------------------------------------------------------------------- */

static void split_clear(clt_tensor ***outs, size_t *n)
{
    if (outs)
        *outs = NULL;
    if (n)
        *n = 0;
}

/* The count slices [starts[i], ends[i]) of t along d (Python's clamping),
 * each recorded as SliceBackward0, into a new array. */
static clt_status slices(const clt_tensor *t, int d, const int64_t *starts, const int64_t *ends,
                         size_t count, clt_tensor ***outs, size_t *n, const char *fn)
{
    clt_tensor **arr = clt__calloc(count ? count : 1, sizeof *arr);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    for (size_t i = 0; i < count; i++)
        CLT__TRY(clt__slice_rec(fn, t, d, starts[i], ends[i], 1, &arr[i]));
    *outs = arr;
    *n = count;
    return clt__ok();
done:
    for (size_t i = 0; i < count; i++)
        clt_tensor_free(arr[i]);
    free(arr);
    return st;
}

/* tensor_split by sections (indices NULL) or at the k indices, along dim. */
static clt_status tensor_split(const clt_tensor *t, int64_t sections, const int64_t *indices,
                               size_t k, int dim, clt_tensor ***outs, size_t *n, const char *fn)
{
    split_clear(outs, n);
    CLT__REQUIRE_ARG(outs, fn);
    CLT__REQUIRE_ARG(n, fn);
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: tensor_split expected at least a 1-dimensional tensor, but got a "
                          "tensor with 0 dims",
                          fn);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, t->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    if (indices == NULL && k > 0)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'indices' is NULL for %zu indices",
                          fn, k);
    size_t count = k + 1;
    if (indices == NULL) {
        if (sections <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: number of sections must be larger than 0, got %lld", fn,
                              (long long)sections);
        if ((uint64_t)sections > SIZE_MAX / (2 * sizeof(int64_t)))
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld sections do not fit host "
                              "memory", fn, (long long)sections);
        count = (size_t)sections;
    } else if (k >= SIZE_MAX / (2 * sizeof(int64_t))) {
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %zu indices do not fit host memory",
                          fn, k);
    }
    int64_t *starts = clt__malloc(2 * count * sizeof *starts), *ends = starts + count;
    if (starts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t size = t->shape[d];
    for (size_t i = 0; i < count; i++) {
        if (indices == NULL) {
            int64_t base = size / sections, extra = size % sections;
            starts[i] = (int64_t)i * base + ((int64_t)i < extra ? (int64_t)i : extra);
            ends[i] = starts[i] + base + ((int64_t)i < extra);
        } else {
            starts[i] = i == 0 ? 0 : indices[i - 1];
            ends[i] = i == k ? INT64_MAX : indices[i];
        }
    }
    st = slices(t, d, starts, ends, count, outs, n, fn);
    free(starts);
    return st;
}

clt_status clt_tensor_split(const clt_tensor *t, int64_t sections, int dim, clt_tensor ***outs,
                            size_t *n)
{
    return tensor_split(t, sections, NULL, 0, dim, outs, n, "clt_tensor_split");
}

clt_status clt_tensor_split_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                                    int dim, clt_tensor ***outs, size_t *n)
{
    static const char fn[] = "clt_tensor_split_indices";
    if (indices == NULL && k == 0) {
        int64_t none = 0; /* one piece, all of t */
        return tensor_split(t, 0, &none, 0, dim, outs, n, fn);
    }
    return tensor_split(t, 0, indices, k, dim, outs, n, fn);
}

/* hsplit (which 0), vsplit (1) and dsplit (2), by sections (indices NULL)
 * or at the k indices. */
static clt_status direction_split(int which, const clt_tensor *t, int64_t sections,
                                  const int64_t *indices, size_t k, clt_tensor ***outs,
                                  size_t *n, const char *fn)
{
    static const char *const names[3] = {"hsplit", "vsplit", "dsplit"};
    split_clear(outs, n);
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim < which + 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.%s requires a tensor with at least %d dimension, but got a "
                          "tensor with %d dimensions!",
                          fn, names[which], which + 1, t->ndim);
    int dim = which == 0 ? (t->ndim == 1 ? 0 : 1) : which == 1 ? 0 : 2;
    if (indices == NULL && (sections == 0 || t->shape[dim] % sections != 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.%s attempted to split along dimension %d, but the size of "
                          "the dimension %lld is not divisible by the split_size %lld!",
                          fn, names[which], dim, (long long)t->shape[dim], (long long)sections);
    return tensor_split(t, sections, indices, k, dim, outs, n, fn);
}

clt_status clt_hsplit(const clt_tensor *t, int64_t sections, clt_tensor ***outs, size_t *n)
{
    return direction_split(0, t, sections, NULL, 0, outs, n, "clt_hsplit");
}

clt_status clt_vsplit(const clt_tensor *t, int64_t sections, clt_tensor ***outs, size_t *n)
{
    return direction_split(1, t, sections, NULL, 0, outs, n, "clt_vsplit");
}

clt_status clt_dsplit(const clt_tensor *t, int64_t sections, clt_tensor ***outs, size_t *n)
{
    return direction_split(2, t, sections, NULL, 0, outs, n, "clt_dsplit");
}

/* The _indices forms: k 0 (indices may be NULL) gives t whole. */
static clt_status direction_split_at(int which, const clt_tensor *t, const int64_t *indices,
                                     size_t k, clt_tensor ***outs, size_t *n, const char *fn)
{
    int64_t none = 0;
    return direction_split(which, t, 0, indices || k > 0 ? indices : &none, k, outs, n, fn);
}

clt_status clt_hsplit_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                              clt_tensor ***outs, size_t *n)
{
    return direction_split_at(0, t, indices, k, outs, n, "clt_hsplit_indices");
}

clt_status clt_vsplit_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                              clt_tensor ***outs, size_t *n)
{
    return direction_split_at(1, t, indices, k, outs, n, "clt_vsplit_indices");
}

clt_status clt_dsplit_indices(const clt_tensor *t, const int64_t *indices, size_t k,
                              clt_tensor ***outs, size_t *n)
{
    return direction_split_at(2, t, indices, k, outs, n, "clt_dsplit_indices");
}

/* ---- joins ---------------------------------------------------------------------- */

enum { HSTACK, VSTACK, DSTACK, COLUMN_STACK };

/* One tensor of the list as the join takes it. */
static clt_status join_part(int kind, const clt_tensor *t, clt_tensor **out, const char *fn)
{
    if (kind == HSTACK)
        return atleast(t, 1, out, fn);
    if (kind == VSTACK)
        return atleast(t, 2, out, fn);
    if (kind == DSTACK)
        return atleast(t, 3, out, fn);
    if (t->ndim > 1)
        return atleast(t, 1, out, fn);
    int64_t col[2] = {t->numel, 1};
    return clt__reshape_rec(fn, t, 2, col, out);
}

static clt_status join(int kind, const clt_tensor *const *ts, size_t n, clt_tensor **out,
                       const char *fn)
{
    static const char *const names[4] = {"hstack", "vstack", "dstack", "column_stack"};
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(ts, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s expects a non-empty TensorList", fn,
                          names[kind]);
    for (size_t i = 0; i < n; i++)
        if (ts[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu of the list is NULL", fn, i);
    clt_tensor **parts = clt__calloc(n, sizeof *parts);
    if (parts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    for (size_t i = 0; i < n; i++)
        CLT__TRY(join_part(kind, ts[i], &parts[i], fn));
    int dim = kind == HSTACK ? (parts[0]->ndim == 1 ? 0 : 1) : kind == VSTACK ? 0
              : kind == DSTACK                                                 ? 2
                                                                               : 1;
    st = clt__cat_rec(fn, (const clt_tensor *const *)parts, n, dim, out);
done:
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(parts[i]);
    free(parts);
    return st;
}

clt_status clt_hstack(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    return join(HSTACK, ts, n, out, "clt_hstack");
}

clt_status clt_vstack(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    return join(VSTACK, ts, n, out, "clt_vstack");
}

clt_status clt_row_stack(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    return join(VSTACK, ts, n, out, "clt_row_stack");
}

clt_status clt_dstack(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    return join(DSTACK, ts, n, out, "clt_dstack");
}

clt_status clt_column_stack(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    return join(COLUMN_STACK, ts, n, out, "clt_column_stack");
}

/* ---- rot90 ----------------------------------------------------------------------- */

/* t rotated k (mod 4) times from dim a towards dim b (checked), as torch
 * builds it: a flip, then a transposed view of it for odd k. */
static clt_status rot90_copy(const clt_tensor *t, int64_t k, int a, int b, clt_tensor **out,
                             const char *fn)
{
    k = ((k % 4) + 4) % 4;
    if (k == 0)
        return clt__clone(t, out, fn);
    int dims[2] = {a, b};
    if (k == 2)
        return clt__flip(t, dims, 2, out, fn);
    clt_tensor *f = NULL;
    clt_status st = clt__flip(t, k == 1 ? &dims[1] : &dims[0], 1, &f, fn);
    if (st == CLT_OK)
        st = clt__transpose(f, a, b, out, fn);
    clt_tensor_free(f);
    return st;
}

/* i[0] k, i[1] and i[2] the dims: rotating back (recorded in a pass that
 * creates a graph: clt__twice). */
static clt_status bw_rot90(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (clt__creating_graph())
        return clt_rot90(g, -n->i[0], (int)n->i[1], (int)n->i[2], &gin[0]);
    return rot90_copy(g, -n->i[0], (int)n->i[1], (int)n->i[2], &gin[0], "clt_backward");
}

/* rot90 of a complex tensor: of its real view, whose pairs stay last. */
typedef struct rot_args {
    int64_t k;
    int a, b;
} rot_args;

static clt_status real_rot90(const clt_tensor *r, const void *ctx, clt_tensor **out)
{
    const rot_args *v = ctx;
    return clt_rot90(r, v->k, v->a, v->b, out);
}

clt_status clt_rot90(const clt_tensor *t, int64_t k, int dim0, int dim1, clt_tensor **out)
{
    static const char fn[] = "clt_rot90";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int nd = t->ndim;
    if (nd < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected total dims >= 2, but got total dims = %d", fn, nd);
    if (dim0 == dim1 || (long)dim0 - dim1 == nd || (long)dim1 - dim0 == nd)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected rotation dims to be different, but got dim0 = %d and "
                          "dim1 = %d",
                          fn, dim0, dim1);
    if (dim0 >= nd || dim0 < -nd)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE, "%s: Rotation dim0 out of range, dim0 = %d",
                          fn, dim0);
    if (dim1 >= nd || dim1 < -nd)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE, "%s: Rotation dim1 out of range, dim1 = %d",
                          fn, dim1);
    int a = dim0 < 0 ? dim0 + nd : dim0, b = dim1 < 0 ? dim1 + nd : dim1;
    if (clt__dtype_is_complex(t->dtype)) {
        rot_args v = {k, a, b};
        return finish(clt__complex_via_real(fn, t, real_rot90, &v, out));
    }
    clt__node *n = NULL;
    clt_status st = rot90_copy(t, k, a, b, out, fn);
    st = clt__record(st, out, "Rot90Backward0", bw_rot90, 1, &t, 0, NULL, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = k % 4;
        n->i[1] = a;
        n->i[2] = b;
    }
    return finish(st);
}

/* ---- products of indices ---------------------------------------------------------- */

/* Whether elems int64 indices made on the host fit one buffer of dev (they
 * are checked before the host array is allocated). */
static clt_status indices_fit(const clt_device *dev, uint64_t elems, const char *what,
                              const char *fn)
{
    uint64_t cap = dev->info.max_alloc_bytes ? dev->info.max_alloc_bytes : SIZE_MAX;
    if (elems <= cap / sizeof(int64_t) && elems <= SIZE_MAX / sizeof(int64_t))
        return CLT_OK;
    return clt__error(CLT_ERR_OUT_OF_DEVICE_MEMORY,
                      "%s: the %llu int64 indices of %s exceed the largest buffer %s (%s) "
                      "allows: %llu bytes",
                      fn, (unsigned long long)elems, what, dev->label, dev->info.name,
                      (unsigned long long)cap);
}

/* The 1-D check of cartesian_prod and combinations. */
static clt_status need_vector(const clt_tensor *t, const char *fn)
{
    if (t->ndim == 1)
        return CLT_OK;
    char s[160];
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Expect a 1D vector, but got shape %s", fn,
                      clt__shape_str(s, sizeof s, t->ndim, t->shape));
}

clt_status clt_cartesian_prod(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    static const char fn[] = "clt_cartesian_prod";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(ts, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: expects a non-empty TensorList", fn);
    for (size_t i = 0; i < n; i++) {
        if (ts[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu of the list is NULL", fn, i);
        clt_status st = need_vector(ts[i], fn);
        if (st != CLT_OK)
            return st;
    }
    if (n == 1)
        return finish(clt__alias_history(ts[0], out));
    clt_tensor **grids = NULL, **flat = NULL;
    size_t ng = 0;
    clt_status st = clt__error_in(clt_meshgrid(ts, n, CLT_MESHGRID_IJ, &grids, &ng), fn);
    if (st != CLT_OK)
        return st;
    int64_t all = -1;
    flat = clt__calloc(ng, sizeof *flat);
    if (flat == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (size_t i = 0; i < ng; i++)
        CLT__TRY(clt__reshape_rec(fn, grids[i], 1, &all, &flat[i]));
    st = clt__stack_rec(fn, (const clt_tensor *const *)flat, ng, 1, out);
done:
    for (size_t i = 0; i < ng; i++) {
        clt_tensor_free(grids[i]);
        if (flat)
            clt_tensor_free(flat[i]);
    }
    free(grids);
    free(flat);
    return st;
}

/* C(n, r) (or with replacement C(n + r - 1, r)) into *count; false past
 * int64. */
static bool combination_count(int64_t n, int64_t r, bool with_replacement, int64_t *count)
{
    if (with_replacement) {
        if (n == 0) {
            *count = r == 0;
            return true;
        }
        if (__builtin_add_overflow(n, r - 1, &n))
            return false;
    }
    if (r > n) {
        *count = 0;
        return true;
    }
    if (r > n - r)
        r = n - r;
    unsigned __int128 c = 1;
    for (int64_t i = 0; i < r; i++) {
        c = c * (unsigned __int128)(n - i) / (unsigned __int128)(i + 1);
        if (c > INT64_MAX)
            return false;
    }
    *count = (int64_t)c;
    return true;
}

clt_status clt_combinations(const clt_tensor *t, int64_t r, int with_replacement,
                            clt_tensor **out)
{
    static const char fn[] = "clt_combinations";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = need_vector(t, fn);
    if (st != CLT_OK)
        return st;
    if (r < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Expect a non-negative number, but got %lld",
                          fn, (long long)r);
    int64_t count = 0, len = t->numel;
    if (!combination_count(len, r, with_replacement, &count) ||
        (r > 0 && (uint64_t)count > UINT64_MAX / (uint64_t)r))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: the combinations of %lld elements taken %lld at a time are more "
                          "than int64 counts",
                          fn, (long long)len, (long long)r);
    st = indices_fit(t->dev, (uint64_t)count * (uint64_t)r, "the combinations", fn);
    if (st != CLT_OK)
        return st;
    if (r == 0 || count == 0) {
        int64_t shape[2] = {0, r};
        return finish(clt__result_new(fn, t->dev, t->dtype, r == 0 ? 1 : 2, shape, out));
    }
    /* idx[j * count + c]: the index of combination c's element j. */
    int64_t *idx = clt__malloc((size_t)count * (size_t)r * sizeof *idx);
    int64_t *cur = clt__malloc((size_t)r * sizeof *cur);
    clt_tensor *it = NULL, **cols = NULL;
    if (idx == NULL || cur == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t j = 0; j < r; j++)
        cur[j] = with_replacement ? 0 : j;
    for (int64_t c = 0; c < count; c++) {
        for (int64_t j = 0; j < r; j++)
            idx[j * count + c] = cur[j];
        int64_t j = r - 1;
        while (j >= 0 && cur[j] == (with_replacement ? len - 1 : len - r + j))
            j--;
        if (j < 0)
            break;
        cur[j]++;
        for (int64_t m = j + 1; m < r; m++)
            cur[m] = with_replacement ? cur[j] : cur[m - 1] + 1;
    }
    int64_t shape[2] = {r, count};
    CLT__TRY(clt__tensor_from_host_in(fn, t->dev, CLT_INT64, 2, shape, idx, &it));
    cols = clt__calloc((size_t)r, sizeof *cols);
    if (cols == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (int64_t j = 0; j < r; j++) {
        clt_tensor *row = NULL;
        int64_t one = 1;
        CLT__TRY(clt__tensor_view(it, 1, &count, &one, j * count, &row));
        st = clt__index_select_rec(fn, t, 0, row, &cols[j]);
        clt_tensor_free(row);
        if (st != CLT_OK)
            goto done;
    }
    st = clt__stack_rec(fn, (const clt_tensor *const *)cols, (size_t)r, 1, out);
done:
    for (int64_t j = 0; cols && j < r; j++)
        clt_tensor_free(cols[j]);
    free(cols);
    clt_tensor_free(it);
    free(idx);
    free(cur);
    return st;
}

/* The pair indices of pdist's rows, first rows then second rows, as int64
 * [2, pairs] (rows > 1) on dev. */
static clt_status pair_indices(clt_device *dev, int64_t rows, int64_t pairs, clt_tensor **out,
                               const char *fn)
{
    int64_t *ij = clt__malloc((size_t)(pairs ? 2 * pairs : 1) * sizeof *ij);
    if (ij == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int64_t i = 0, c = 0; i < rows; i++) {
        for (int64_t j = i + 1; j < rows; j++, c++) {
            ij[c] = i;
            ij[pairs + c] = j;
        }
    }
    int64_t shape[2] = {2, pairs};
    clt_status st = clt__tensor_from_host_in(fn, dev, CLT_INT64, 2, shape, ij, out);
    free(ij);
    return st;
}

/* Row k (0 or 1) of pdist's pair indices: a view. */
static clt_status pair_row(const clt_tensor *ij, int k, clt_tensor **out)
{
    int64_t pairs = ij->shape[1], one = 1;
    return clt__tensor_view(ij, 1, &pairs, &one, ij->offset + k * pairs, out);
}

/* s[0] p; saved: the input x, the distances, the pair indices.  With
 * D = x[i] - x[j] and r the pair's distance, the pair's part of x[i]'s
 * gradient (minus x[j]'s) is g sign(D) |D|^(p-1) / r^(p-1), as PyTorch's
 * _pdist_backward: g sign(D) for p 1, g D / r for p 2, g sign(D) where
 * |D| = r for p inf, none for p 0; 0 where r is 0, and for p < 1 where D
 * is 0. */
static clt_status bw_pdist(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt_tensor *x = n->saved[0], *dist = n->saved[1], *ij = n->saved[2];
    double p = n->s[0];
    static const char fn[] = "clt_backward";
    if (p == 0 || g->numel == 0 || x->numel == 0)
        return clt__full(g->dev, g->dtype, x->ndim, x->shape, 0.0, &gin[0]);
    clt_status st = CLT_OK;
    clt_tensor *ii = NULL, *jj = NULL, *a = NULL, *b = NULL, *d = NULL, *r = NULL, *gg = NULL,
               *sg = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *zero = NULL, *mask = NULL,
               *m2 = NULL, *part = NULL, *acc = NULL;
    clt_tensor **all[] = {&ii, &jj, &a, &b, &d, &r, &gg, &sg, &t1, &t2, &t3, &zero, &mask, &m2,
                          &part, &acc};
    int64_t one = 1;
    CLT__TRY(pair_row(ij, 0, &ii));
    CLT__TRY(pair_row(ij, 1, &jj));
    CLT__TRY(clt__index_select(x, 0, ii, &a, fn));
    CLT__TRY(clt__index_select(x, 0, jj, &b, fn));
    CLT__TRY(clt__sub_in(fn, a, b, &d));
    CLT__TRY(clt__unsqueeze(dist, 1, &r, fn));
    CLT__TRY(clt__unsqueeze(g, 1, &gg, fn));
    CLT__TRY(clt__sign_in(fn, d, &sg));
    if (p == 1) {
        CLT__TRY(clt__mul_in(fn, sg, gg, &part));
    } else if (isinf(p)) {
        CLT__TRY(clt__abs_in(fn, d, &t1));
        CLT__TRY(clt__eq_in(fn, t1, r, &mask));
        CLT__TRY(clt__mul_in(fn, sg, gg, &t2));
        CLT__TRY(clt__full(g->dev, g->dtype, 1, &one, 0.0, &zero));
        CLT__TRY(clt__where_in(fn, mask, t2, zero, &part));
    } else {
        if (p == 2) {
            CLT__TRY(clt__mul_in(fn, d, gg, &t1));
            CLT__TRY(clt__div_in(fn, t1, r, &t3));
        } else {
            CLT__TRY(clt__abs_in(fn, d, &t1));
            CLT__TRY(clt__pow_scalar_in(fn, t1, p - 1, &t2));
            clt_tensor_free(t1);
            t1 = NULL;
            CLT__TRY(clt__mul_in(fn, sg, t2, &t1));
            clt_tensor_free(t2);
            t2 = NULL;
            CLT__TRY(clt__mul_in(fn, t1, gg, &t2));
            clt_tensor_free(t1);
            t1 = NULL;
            CLT__TRY(clt__pow_scalar_in(fn, r, p - 1, &t1));
            CLT__TRY(clt__div_in(fn, t2, t1, &t3));
        }
        CLT__TRY(clt__eq_scalar_in(fn, r, 0.0, &mask));
        if (p < 1) {
            CLT__TRY(clt__eq_scalar_in(fn, d, 0.0, &m2));
            clt_tensor *both = NULL;
            CLT__TRY(clt__logical_or_in(fn, mask, m2, &both));
            clt_tensor_free(mask);
            mask = both;
        }
        CLT__TRY(clt__full(g->dev, g->dtype, 1, &one, 0.0, &zero));
        CLT__TRY(clt__where_in(fn, mask, zero, t3, &part));
    }
    clt_tensor_free(a);
    a = NULL;
    CLT__TRY(clt__full(g->dev, g->dtype, x->ndim, x->shape, 0.0, &a));
    CLT__TRY(clt__index_add(a, 0, ii, part, 1.0, &acc, fn));
    st = clt__index_add(acc, 0, jj, part, -1.0, &gin[0], fn);
done:
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(*all[k]);
    return st;
}

clt_status clt_pdist(const clt_tensor *t, double p, clt_tensor **out)
{
    static const char fn[] = "clt_pdist";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (t), clt_pdist(CLT__AC(0), p, out));
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: pdist only supports 2D tensors, got: %dD",
                          fn, t->ndim);
    if (!clt__dtype_is_float(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: pdist only supports floating-point dtypes (got %s)", fn,
                          clt_dtype_name(t->dtype));
    if (!(p >= 0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: pdist only supports non-negative p values (got %g)", fn, p);
    int64_t rows = t->shape[0], pairs = 0;
    if (rows > 1 && __builtin_mul_overflow(rows, rows - 1, &pairs))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "%s: the pairs of %lld rows are more than int64 counts", fn,
                          (long long)rows);
    pairs /= 2;
    clt_status st = indices_fit(t->dev, 2 * (uint64_t)pairs, "the pairs of rows", fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ij = NULL, *ii = NULL, *jj = NULL, *a = NULL, *b = NULL, *diff = NULL;
    /* the forward computes with recording ops, unrecorded: one node below */
    int was = clt_set_grad_enabled(0);
    CLT__TRY(pair_indices(t->dev, rows, pairs, &ij, fn));
    CLT__TRY(pair_row(ij, 0, &ii));
    CLT__TRY(pair_row(ij, 1, &jj));
    CLT__TRY(clt__index_select(t, 0, ii, &a, fn));
    CLT__TRY(clt__index_select(t, 0, jj, &b, fn));
    CLT__TRY(clt__sub_in(fn, a, b, &diff));
    CLT__TRY(clt__vector_norm_dim_rec(fn, diff, p, 1, 0, out));
done:
    clt_set_grad_enabled(was);
    if (st == CLT_OK) {
        clt__node *n = NULL;
        const clt_tensor *saved[3] = {t, *out, ij};
        st = clt__record(st, out, "PdistBackward0", bw_pdist, 1, &t, 3, saved, &n);
        if (n)
            n->s[0] = p;
    }
    clt_tensor_free(ij);
    clt_tensor_free(ii);
    clt_tensor_free(jj);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(diff);
    return finish(st);
}

/* ---- narrow_copy and the scatters ------------------------------------------------- */

clt_status clt_narrow_copy(const clt_tensor *t, int dim, int64_t start, int64_t length,
                           clt_tensor **out)
{
    static const char fn[] = "clt_narrow_copy";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_tensor *v = NULL;
    clt_status st = clt__narrow_rec(fn, t, dim, start, length, &v);
    if (st == CLT_OK)
        st = clt__error_in(clt_clone(v, out), fn);
    clt_tensor_free(v);
    return st;
}

static const char *const embed_names[3] = {"SelectScatterBackward0", "SliceScatterBackward0",
                                           "DiagonalScatterBackward0"};

static clt_status embed(const clt_tensor *t, const clt_tensor *src, clt__embed_kind kind,
                        const int64_t *p, clt_tensor **out, const char *fn);

/* The region of g (clt__embed_view) through recorded views: select's
 * narrow and squeeze, slice, diagonal. */
static clt_status region_rec(const clt_tensor *g, clt__embed_kind kind, const int64_t *p,
                             clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    if (kind == CLT__EMBED_SLICE)
        return clt__slice_rec(fn, g, (int)p[0], p[1], p[2], p[3], out);
    if (kind != CLT__EMBED_SELECT)
        return clt_diagonal(g, p[0], (int)p[1], (int)p[2], out);
    int d = 0;
    clt_tensor *one = NULL;
    clt_status st = clt__wrap_dim((int)p[0], g->ndim, &d, fn);
    if (st == CLT_OK)
        st = clt__narrow_rec(fn, g, d, p[1], 1, &one);
    if (st == CLT_OK)
        st = clt__squeeze_rec(fn, one, d, out);
    clt_tensor_free(one);
    return st;
}

/* i[0] the kind, i[1..4] its parameters: t's gradient is g with the region
 * zeroed, src's the region of g; recorded in a pass that creates a graph
 * (clt__twice). */
static clt_status bw_embed(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt__embed_kind kind = (clt__embed_kind)n->i[0];
    const int64_t *p = &n->i[1];
    clt_status st = CLT_OK;
    clt_tensor *v = NULL, *z = NULL;
    CLT__TRY(clt__embed_view(g, kind, p, &v, "clt_backward"));
    if (clt__creating_graph()) {
        if (CLT__NEED(n, 0)) {
            CLT__TRY(clt__full(g->dev, g->dtype, v->ndim, v->shape, 0.0, &z));
            CLT__TRY(embed(g, z, kind, p, &gin[0], "clt_backward"));
        }
        if (CLT__NEED(n, 1))
            st = region_rec(g, kind, p, &gin[1]);
        goto done;
    }
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__full(g->dev, g->dtype, v->ndim, v->shape, 0.0, &z));
        CLT__TRY(clt__embed(g, z, kind, p, &gin[0], "clt_backward"));
    }
    if (CLT__NEED(n, 1))
        st = clt__copy_as("clt_backward", v, v->dtype, &gin[1]);
done:
    clt_tensor_free(v);
    clt_tensor_free(z);
    return st;
}

static clt_status embed(const clt_tensor *t, const clt_tensor *src, clt__embed_kind kind,
                        const int64_t *p, clt_tensor **out, const char *fn)
{
    clt__node *n = NULL;
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__embed(t, src, kind, p, out, fn);
    st = clt__record(st, out, embed_names[kind], bw_embed, 2, in, 0, NULL, &n);
    if (n) {
        n->i[0] = kind;
        memcpy(&n->i[1], p, 4 * sizeof *p);
    }
    clt__twice(n);
    return finish(st);
}

clt_status clt_select_scatter(const clt_tensor *t, const clt_tensor *src, int dim, int64_t index,
                              clt_tensor **out)
{
    int64_t p[4] = {dim, index, 0, 0};
    return embed(t, src, CLT__EMBED_SELECT, p, out, "clt_select_scatter");
}

clt_status clt_slice_scatter(const clt_tensor *t, const clt_tensor *src, int dim, int64_t start,
                             int64_t end, int64_t step, clt_tensor **out)
{
    int64_t p[4] = {dim, start, end, step};
    return embed(t, src, CLT__EMBED_SLICE, p, out, "clt_slice_scatter");
}

clt_status clt_diagonal_scatter(const clt_tensor *t, const clt_tensor *src, int64_t offset,
                                int dim1, int dim2, clt_tensor **out)
{
    int64_t p[4] = {offset, dim1, dim2, 0};
    return embed(t, src, CLT__EMBED_DIAGONAL, p, out, "clt_diagonal_scatter");
}
