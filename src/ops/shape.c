/* shape.c: the copies of view.h that reorder, repeat, pad or scatter (flip,
 * roll, repeat, tri, diag, pad, select/slice/diagonal_scatter) and the
 * constructions of tensor.h beyond fills (linspace, logspace, eye,
 * tril/triu_indices), without autograd; the public entries and backward
 * formulas of the differentiable ones are in src/autograd/grad_shape.c (the
 * scatters' in grad_shape_more.c).  flip, roll and the non-constant pads are one
 * launch of cl/shape.cl's gather_map, which maps each output coordinate to
 * its source dimension by dimension; the pads' gradients add back through
 * int64 index maps made on the device (clt__pad_index) and index_add;
 * repeats are copies of expanded views.  Nothing waits but the tensor form
 * of repeat_interleave, whose result's size is in the repeats' values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static clt_status finish(clt_status st)
{
    return st == CLT_OK ? clt__ok() : st;
}

/* A handle on t with its own geometry (the tensor layer's view). */
static clt_status same_view(const clt_tensor *t, clt_tensor **out)
{
    return clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out);
}

/* int64 [start, start + len) on dev. */
static clt_status iota64(clt_device *dev, int64_t start, int64_t len, clt_tensor **out,
                         const char *fn)
{
    clt_status st = len == 0 ? clt__empty(dev, CLT_INT64, 1, &len, out)
                             : clt__arange(dev, CLT_INT64, (double)start,
                                           (double)start + (double)len, 1, out);
    return clt__error_in(st, fn);
}

/* The per-dimension index maps of cl/shape.cl's gather_map (identity when
 * zeroed); must match clt_gmap there. */
typedef struct clt__gmap {
    int64_t a[CLT_MAX_DIMS];
    int64_t b[CLT_MAX_DIMS];
    int64_t n[CLT_MAX_DIMS];
    int32_t mode[CLT_MAX_DIMS];
} clt__gmap;
enum { GMAP_IDENTITY, GMAP_REFLECT, GMAP_CLAMP, GMAP_WRAP, GMAP_FLIP };

static const char *shape_options(const clt_device *dev, clt_dtype t);

bool clt__gather_per_item = false;

/* A new tensor of shape os (t's number of dims) whose element j is t's at
 * the coordinates M maps j to: one launch. */
static clt_status gather_map(const clt_tensor *t, const int64_t *os, const clt__gmap *M,
                             clt_tensor **out, const char *fn)
{
    clt_tensor *r = NULL;
    clt_status st = clt__result_new(fn, t->dev, t->dtype, t->ndim, os, &r);
    if (st != CLT_OK)
        return st;
    if (r->numel > 0) {
        const char *opts = shape_options(t->dev, t->dtype);
        if (opts == NULL) {
            clt_tensor_free(r);
            return CLT_ERR_OUT_OF_HOST_MEMORY;
        }
        clt__layout L;
        memset(&L, 0, sizeof L);
        L.ndim = t->ndim;
        memcpy(L.shape, os, sizeof(int64_t) * (size_t)t->ndim);
        memcpy(L.s0, t->strides, sizeof(int64_t) * (size_t)t->ndim);
        L.off0 = t->offset;
        cl_mem mo = clt__mem(r), ms = clt__mem(t);
        cl_ulong n = (cl_ulong)r->numel;
        cl_ulong chunk = clt__gather_per_item ? 0 : clt__chunk_size(t->dev, r->numel);
        if (chunk > 0) {
            /* CPUs: a chunk of runs per work-item */
            size_t gws = (size_t)((n + chunk - 1) / chunk), lws = 1;
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ms), CLT__ARG(n), CLT__ARG(chunk),
                               {sizeof L, &L}, {sizeof *M, M}};
            st = clt__launch(t->dev, "shape", opts, "gather_map_runs", 1, &gws, &lws, 6, args);
        } else {
            size_t gws = (size_t)n;
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ms), CLT__ARG(n), {sizeof L, &L},
                               {sizeof *M, M}};
            st = clt__launch(t->dev, "shape", opts, "gather_map", 1, &gws, NULL, 5, args);
        }
        st = clt__error_in(st, fn);
    }
    if (st != CLT_OK) {
        clt_tensor_free(r);
        return st;
    }
    *out = r;
    return CLT_OK;
}

/* Wraps k dims of t into d[], refusing repeats ("dim 0 appears multiple
 * times in the list of dims"). */
static clt_status wrap_dims(const clt_tensor *t, const int *dims, int k, int *d, const char *fn)
{
    if (k < 0 || k > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dims given; at most %d", fn, k,
                          CLT_MAX_DIMS);
    if (k > 0 && dims == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'dims' is NULL for %d dims", fn,
                          k);
    bool seen[CLT_MAX_DIMS] = {false};
    for (int i = 0; i < k; i++) {
        clt_status st = clt__wrap_dim(dims[i], t->ndim > 0 ? t->ndim : 1, &d[i], fn);
        if (st != CLT_OK)
            return st;
        if (seen[d[i]])
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: dim %d appears multiple times in the list of dims", fn, d[i]);
        seen[d[i]] = true;
    }
    return CLT_OK;
}

/* ---- flip and roll ------------------------------------------------------------------ */

clt_status clt__flip(const clt_tensor *t, const int *dims, int k, clt_tensor **out,
                     const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int d[CLT_MAX_DIMS];
    clt_status st = wrap_dims(t, dims, k, d, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    clt__gmap M;
    memset(&M, 0, sizeof M);
    for (int i = 0; i < k && t->ndim > 0; i++) {
        M.mode[d[i]] = GMAP_FLIP;
        M.n[d[i]] = t->shape[d[i]];
    }
    return finish(gather_map(t, t->shape, &M, out, fn));
}

clt_status clt__roll(const clt_tensor *t, const int64_t *shifts, const int *dims, int k,
                     clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(shifts, fn);
    if (k < 0 || k > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dims given; at most %d", fn, k,
                          CLT_MAX_DIMS);
    if (k > 0)
        CLT__REQUIRE_ARG(dims, fn);
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    clt__gmap M;
    memset(&M, 0, sizeof M);
    if (k == 0) {
        /* torch.roll without dims: the flattened tensor, rolled. */
        int64_t n = t->numel;
        clt_tensor *flat = NULL, *r = NULL;
        st = clt__reshape(t, 1, &n, &flat, fn);
        if (st == CLT_OK && n > 0) {
            M.mode[0] = GMAP_WRAP;
            M.a[0] = shifts[0] % n;
            M.n[0] = n;
        }
        if (st == CLT_OK)
            st = gather_map(flat, flat->shape, &M, &r, fn);
        if (st == CLT_OK)
            st = clt__reshape(r, t->ndim, t->shape, out, fn);
        clt_tensor_free(flat);
        clt_tensor_free(r);
        return finish(st);
    }
    /* Dims may repeat in torch.roll: the shifts of one dim add up. */
    for (int i = 0; i < k; i++) {
        int d = 0;
        st = clt__wrap_dim(dims[i], t->ndim > 0 ? t->ndim : 1, &d, fn);
        if (st != CLT_OK)
            return st;
        int64_t n = t->ndim > 0 ? t->shape[d] : 1;
        if (n == 0)
            continue;
        M.mode[d] = GMAP_WRAP;
        M.n[d] = n;
        M.a[d] = (M.a[d] + shifts[i] % n) % n;
    }
    return finish(gather_map(t, t->shape, &M, out, fn));
}

/* ---- repeat --------------------------------------------------------------------------- */

/* One dim's repeat of the contiguous c as a [B, 1, rest] view expanded to
 * [B, r, rest] and copied. */
static clt_status repeat_one(const clt_tensor *c, int d, int64_t r, clt_tensor **out,
                             const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *v = NULL, *e = NULL, *cp = NULL;
    int64_t before = 1, rest = 1;
    for (int i = 0; i < d; i++)
        before *= c->shape[i];
    for (int i = d; i < c->ndim; i++)
        rest *= c->shape[i];
    int64_t s3[3] = {before, 1, rest}, e3[3] = {before, r, rest}, shape[CLT_MAX_DIMS];
    memcpy(shape, c->shape, sizeof shape);
    shape[d] *= r;
    CLT__TRY(clt__reshape(c, 3, s3, &v, fn));
    CLT__TRY(clt__expand(v, 3, e3, &e, fn));
    CLT__TRY(clt__copy_as(fn, e, e->dtype, &cp));
    CLT__TRY(clt__reshape(cp, c->ndim, shape, out, fn));
done:
    clt_tensor_free(v);
    clt_tensor_free(e);
    clt_tensor_free(cp);
    return st;
}

clt_status clt__repeat(const clt_tensor *t, const int64_t *repeats, int k, clt_tensor **out,
                       const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (k > 0)
        CLT__REQUIRE_ARG(repeats, fn);
    if (k < t->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Number of dimensions of repeat dims can not be smaller than "
                          "number of dimensions of tensor (%d repeats for %d dimensions)",
                          fn, k, t->ndim);
    if (k > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d repeat dims; at most %d supported", fn,
                          k, CLT_MAX_DIMS);
    int lead = k - t->ndim;
    int64_t xs[CLT_MAX_DIMS], xst[CLT_MAX_DIMS], os[CLT_MAX_DIMS] = {0};
    for (int i = 0; i < k; i++) {
        if (repeats[i] < 0) {
            char s[160];
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Trying to create tensor with negative dimension %lld: "
                              "repeats %s",
                              fn, (long long)repeats[i], clt__shape_str(s, sizeof s, k, repeats));
        }
        xs[i] = i < lead ? 1 : t->shape[i - lead];
        xst[i] = i < lead ? 0 : t->strides[i - lead];
        if (__builtin_mul_overflow(xs[i], repeats[i], &os[i]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the repeated size of dimension %d "
                              "passes int64", fn, i);
    }
    clt_status st = clt__check_shape(k, os, fn);
    if (st != CLT_OK)
        return st;
    /* One copy of a view that steps through t with stride 0 across each
     * repeat, when its dimensions fit; else one dimension at a time. */
    int64_t es[CLT_MAX_DIMS * 2], est[CLT_MAX_DIMS * 2];
    int m = 0;
    for (int i = 0; i < k; i++) {
        if (repeats[i] != 1 && xs[i] != 1) {
            es[m] = repeats[i];
            est[m++] = 0;
            es[m] = xs[i];
            est[m++] = xst[i];
        } else if (xs[i] == 1) {
            es[m] = repeats[i];
            est[m++] = 0;
        } else {
            es[m] = xs[i];
            est[m++] = xst[i];
        }
    }
    clt_tensor *v = NULL, *c = NULL, *next = NULL;
    if (m <= CLT_MAX_DIMS) {
        CLT__TRY(clt__tensor_view(t, m, es, est, t->offset, &v));
        CLT__TRY(clt__copy_as(fn, v, t->dtype, &c));
        CLT__TRY(clt__reshape(c, k, os, out, fn));
        goto done;
    }
    CLT__TRY(clt__tensor_view(t, k, xs, xst, t->offset, &v));
    CLT__TRY(clt__copy_as(fn, v, t->dtype, &c));
    for (int i = 0; i < k; i++) {
        if (repeats[i] == 1)
            continue;
        CLT__TRY(repeat_one(c, i, repeats[i], &next, fn));
        clt_tensor_free(c);
        c = next;
        next = NULL;
    }
    *out = c;
    c = NULL;
done:
    clt_tensor_free(v);
    clt_tensor_free(c);
    clt_tensor_free(next);
    return finish(st);
}

/* ---- repeat_interleave's index ------------------------------------------------------------- */

clt_status clt__repeat_interleave_index(clt_device *dev, int64_t size, int64_t repeats,
                                        clt_tensor **out, const char *fn)
{
    *out = NULL;
    if (repeats < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: repeats can not be negative, got %lld",
                          fn, (long long)repeats);
    int64_t n = 0;
    if (__builtin_mul_overflow(size, repeats, &n))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %lld repeats of %lld elements pass int64",
                          fn, (long long)repeats, (long long)size);
    clt_tensor *a = NULL;
    clt_status st = iota64(dev, 0, n, &a, fn);
    if (st == CLT_OK)
        st = n == 0 ? same_view(a, out) : clt__floor_divide_scalar_in(fn, a, (double)repeats, out);
    clt_tensor_free(a);
    return st;
}

clt_status clt__repeat_interleave_index_of(const clt_tensor *repeats, int64_t size,
                                           clt_tensor **out, const char *fn)
{
    *out = NULL;
    if (repeats->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: repeats has to be a Long tensor, but got %s", fn,
                          clt_dtype_name(repeats->dtype));
    if (repeats->ndim > 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: repeats must be 0-dim or 1-dim tensor, got %d dimensions", fn,
                          repeats->ndim);
    if (repeats->numel != 1 && repeats->numel != size)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: repeats must have the same size as input along dim: %lld repeats "
                          "for size %lld",
                          fn, (long long)repeats->numel, (long long)size);
    size_t k = (size_t)repeats->numel;
    int64_t *r = clt__malloc((k ? k : 1) * sizeof *r), *idx = NULL;
    if (r == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = clt__tensor_read_at(repeats, r, k * sizeof *r, fn, __builtin_return_address(0));
    if (st != CLT_OK)
        goto done;
    int64_t total = 0;
    for (size_t i = 0; i < k; i++) {
        if (r[i] < 0) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: repeats can not be negative (%lld at "
                            "%zu)", fn, (long long)r[i], i);
            goto done;
        }
        int64_t add = k == 1 ? 0 : r[i];
        if (k == 1 && __builtin_mul_overflow(r[0], size, &add))
            add = -1;
        if (add < 0 || __builtin_add_overflow(total, add, &total)) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the repeats add up past int64", fn);
            goto done;
        }
    }
    if (k == 1) {
        st = clt__repeat_interleave_index(repeats->dev, size, r[0], out, fn);
        goto done;
    }
    if ((uint64_t)total > SIZE_MAX / sizeof *idx) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    idx = clt__malloc((total ? (size_t)total : 1) * sizeof *idx);
    if (idx == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    int64_t at = 0;
    for (size_t i = 0; i < k; i++)
        for (int64_t j = 0; j < r[i]; j++)
            idx[at++] = (int64_t)i;
    st = clt__tensor_from_host_in(fn, repeats->dev, CLT_INT64, 1, &total, idx, out);
done:
    free(r);
    free(idx);
    return st;
}

/* ---- tril, triu, diag, diagonal scatter -------------------------------------------------------- */

clt_status clt__tri(const clt_tensor *t, int64_t diagonal, bool upper, clt_tensor **out,
                    const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s: input tensor must have at least 2 dimensions, got %d", fn,
                          upper ? "triu" : "tril", t->ndim);
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    int64_t r = t->shape[t->ndim - 2], c = t->shape[t->ndim - 1];
    clt_tensor *rows = NULL, *rv = NULL, *cols = NULL, *diff = NULL, *mask = NULL;
    int64_t rs[2] = {r, 1};
    CLT__TRY(iota64(t->dev, 0, r, &rows, fn));
    CLT__TRY(iota64(t->dev, 0, c, &cols, fn));
    CLT__TRY(clt__reshape(rows, 2, rs, &rv, fn));
    CLT__TRY(clt__sub_in(fn, cols, rv, &diff)); /* column - row */
    CLT__TRY(upper ? clt__lt_scalar_in(fn, diff, (double)diagonal, &mask)
                   : clt__gt_scalar_in(fn, diff, (double)diagonal, &mask));
    CLT__TRY(clt__masked_fill(t, mask, 0.0, out, fn));
done:
    clt_tensor_free(rows);
    clt_tensor_free(rv);
    clt_tensor_free(cols);
    clt_tensor_free(diff);
    clt_tensor_free(mask);
    return finish(st);
}

/* ---- select_scatter, slice_scatter, diagonal_scatter --------------------------------- */

/* torch.select: t without dim, at index along it (negative counts from the
 * end).  A view. */
static clt_status select_view(const clt_tensor *t, int64_t dim, int64_t index, clt_tensor **out,
                              const char *fn)
{
    if (t->ndim == 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: select() cannot be applied to a 0-dim tensor.", fn);
    int d = 0;
    clt_status st = clt__wrap_dim(dim < INT32_MIN || dim > INT32_MAX ? INT32_MAX : (int)dim,
                                  t->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    int64_t size = t->shape[d];
    if (index < -size || index >= size) {
        char s[160];
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: select(): index %lld out of range for tensor of size %s at "
                          "dimension %d",
                          fn, (long long)index, clt__shape_str(s, sizeof s, t->ndim, t->shape), d);
    }
    clt_tensor *one = NULL; /* the slice of length 1, then without its dim */
    st = clt__narrow(t, d, index, 1, &one, fn);
    if (st == CLT_OK)
        st = clt__squeeze(one, d, out, fn);
    clt_tensor_free(one);
    return st;
}

clt_status clt__embed_view(const clt_tensor *t, clt__embed_kind kind, const int64_t *p,
                           clt_tensor **out, const char *fn)
{
    switch (kind) {
    case CLT__EMBED_SELECT:
        return select_view(t, p[0], p[1], out, fn);
    case CLT__EMBED_SLICE:
        return clt__error_in(clt__slice(t, (int)p[0], p[1], p[2], p[3], out), fn);
    default:
        return clt__diagonal(t, p[0], (int)p[1], (int)p[2], out, fn);
    }
}

/* src written into the region of r (a tensor of its own, not overlapping
 * src), src of the region's shape (checked by the caller). */
static clt_status embed_into(clt_tensor *r, const clt_tensor *src, clt__embed_kind kind,
                             const int64_t *p, const char *fn)
{
    clt_tensor *v = NULL;
    clt_status st = clt__embed_view(r, kind, p, &v, fn);
    if (st == CLT_OK && v->numel > 0)
        st = clt__copy_strided(v, src, fn);
    clt_tensor_free(v);
    return st;
}

clt_status clt__embed(const clt_tensor *t, const clt_tensor *src, clt__embed_kind kind,
                      const int64_t *p, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(src, fn);
    clt_status st = clt__same_device(t, src, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *v = NULL, *r = NULL;
    CLT__TRY(clt__embed_view(t, kind, p, &v, fn));
    if (src->ndim != v->ndim || !clt__same_shape(src, v)) {
        char s1[160], s2[160];
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: expected src to have a size equal to the slice of self. src size = "
                        "%s, slice size = %s",
                        fn, clt__shape_str(s1, sizeof s1, src->ndim, src->shape),
                        clt__shape_str(s2, sizeof s2, v->ndim, v->shape));
        goto done;
    }
    CLT__TRY(clt__copy_as(fn, t, t->dtype, &r));
    CLT__TRY(embed_into(r, src, kind, p, fn));
    *out = r;
    r = NULL;
done:
    clt_tensor_free(v);
    clt_tensor_free(r);
    return finish(st);
}

clt_status clt__diagonal_scatter(const clt_tensor *g, int ndim, const int64_t *shape,
                                 int64_t offset, int dim1, int dim2, clt_tensor **out,
                                 const char *fn)
{
    *out = NULL;
    clt_status st = CLT_OK;
    clt_tensor *z = NULL;
    const int64_t p[3] = {offset, dim1, dim2};
    CLT__TRY(clt__error_in(clt__full(g->dev, g->dtype, ndim, shape, 0.0, &z), fn));
    CLT__TRY(embed_into(z, g, CLT__EMBED_DIAGONAL, p, fn));
    *out = z;
    z = NULL;
done:
    clt_tensor_free(z);
    return st;
}

clt_status clt__diag(const clt_tensor *t, int64_t diagonal, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim != 1 && t->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: diag(): Supports 1D or 2D tensors. Got %dD", fn, t->ndim);
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    if (t->ndim == 2) {
        clt_tensor *v = NULL;
        st = clt__diagonal(t, diagonal, 0, 1, &v, fn);
        if (st == CLT_OK)
            st = clt__copy_as(fn, v, t->dtype, out);
        clt_tensor_free(v);
        return finish(st);
    }
    int64_t mag = diagonal == INT64_MIN ? 0 : diagonal < 0 ? -diagonal : diagonal, n = 0;
    if (diagonal == INT64_MIN || __builtin_add_overflow(t->numel, mag, &n))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: diagonal %lld is too far out", fn,
                          (long long)diagonal);
    int64_t shape[2] = {n, n};
    st = clt__check_shape(2, shape, fn);
    if (st == CLT_OK)
        st = clt__diagonal_scatter(t, 2, shape, diagonal, 0, 1, out, fn);
    return finish(st);
}

/* ---- pad --------------------------------------------------------------------------------------------- */

/* The source index of each of the len places of a dimension of size n
 * padded by l before and r after (negative: cropped): j - l mirrored
 * (reflect) or clamped (replicate) into [0, n).  Circular, as PyTorch
 * 1.13, crops first and wraps the positive pads around what is left. */
clt_status clt__pad_index(clt_device *dev, int64_t n, int64_t l, int64_t r, int64_t len,
                          clt_pad_mode mode, clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *e = NULL;
    if (mode == CLT_PAD_CIRCULAR) {
        int64_t off = l < 0 ? -l : 0, kept = n - off - (r < 0 ? -r : 0), lp = l > 0 ? l : 0;
        CLT__TRY(iota64(dev, -lp, len, &a, fn));
        if (len == 0) {
            *out = a;
            a = NULL;
            goto done;
        }
        CLT__TRY(clt__remainder_scalar_in(fn, a, (double)kept, &b));
        CLT__TRY(off == 0 ? same_view(b, out) : clt__add_scalar_in(fn, b, (double)off, out));
        goto done;
    }
    CLT__TRY(iota64(dev, -l, len, &a, fn));
    if (len == 0) {
        *out = a;
        a = NULL;
        goto done;
    }
    if (mode == CLT_PAD_REPLICATE) {
        double lo = 0, hi = (double)(n - 1);
        CLT__TRY(clt__clamp(a, &lo, &hi, out, fn));
    } else {
        /* (n - 1) - |(n - 1) - |j - l||: the mirror at both ends. */
        double m = (double)(n - 1);
        CLT__TRY(clt__abs_in(fn, a, &b));
        CLT__TRY(clt__rsub_scalar_in(fn, b, m, &c));
        CLT__TRY(clt__abs_in(fn, c, &e));
        CLT__TRY(clt__rsub_scalar_in(fn, e, m, out));
    }
done:
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(e);
    return st;
}

static const char *mode_name(clt_pad_mode mode)
{
    return mode == CLT_PAD_REFLECT ? "reflect" : mode == CLT_PAD_REPLICATE ? "replicate"
                                                                          : "circular";
}

/* Torch 1.13's rules for the modes other than constant. */
static clt_status pad_checks(const clt_tensor *t, const int64_t *pad, int npad,
                             clt_pad_mode mode, double value, const char *fn)
{
    char s[160];
    const char *shape = clt__shape_str(s, sizeof s, t->ndim, t->shape);
    if (value != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Padding mode \"%s\" doesn't take in value argument", fn,
                          mode_name(mode));
    int nd = t->ndim, k = npad / 2;
    if (mode == CLT_PAD_CIRCULAR) {
        if (nd < 3 || nd > 5)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Only 3D, 4D, 5D padding with circular padding are supported "
                              "(input %s)",
                              fn, shape);
        if (npad != 2 * (nd - 2))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Invalid padding size, expected %d but got %d", fn,
                              2 * (nd - 2), npad);
    } else {
        if (!((k == 1 && (nd == 2 || nd == 3)) || (k == 2 && (nd == 3 || nd == 4)) ||
              (k == 3 && (nd == 4 || nd == 5))))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                              "supported for now (input %s, %d pad sizes)",
                              fn, shape, npad);
        if (!clt__dtype_is_float(t->dtype) || clt__dtype_is_half(t->dtype))
            return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                              "%s: \"%s\" padding is not implemented for %s (float32 and "
                              "float64 only)",
                              fn, mode_name(mode), clt_dtype_name(t->dtype));
    }
    /* Reflect and replicate: every dimension but the batch one non-empty. */
    for (int d = nd == k + 2 ? 1 : 0; mode != CLT_PAD_CIRCULAR && d < nd; d++)
        if (t->shape[d] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Expected %dD or %dD (batch mode) tensor with possibly 0 batch "
                              "size and other non-zero dimensions for input, but got: %s",
                              fn, k + 1, k + 2, shape);
    for (int i = 0; i < k; i++) {
        int d = nd - 1 - i;
        int64_t n = t->shape[d], l = pad[2 * i], r = pad[2 * i + 1];
        int64_t kept = n - (l < 0 ? -l : 0) - (r < 0 ? -r : 0);
        if (mode == CLT_PAD_CIRCULAR && (l > n || r > n || l > kept || r > kept))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Padding value causes wrapping around more than once: padding "
                              "(%lld, %lld) at dimension %d of input %s",
                              fn, (long long)l, (long long)r, d, shape);
        if (mode == CLT_PAD_REFLECT && (l >= n || r >= n))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Padding size should be less than the corresponding input "
                              "dimension, but got: padding (%lld, %lld) at dimension %d of "
                              "input %s",
                              fn, (long long)l, (long long)r, d, shape);
        int64_t size = 0;
        bool over = __builtin_add_overflow(n, l, &size) || __builtin_add_overflow(size, r, &size);
        if (mode != CLT_PAD_CIRCULAR && !over && size < 1)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: input (size %lld at dimension %d) is too small. Calculated "
                              "output size: %lld",
                              fn, (long long)n, d, (long long)size);
    }
    return CLT_OK;
}

clt_status clt__pad(const clt_tensor *t, const int64_t *pad, int npad, clt_pad_mode mode,
                    double value, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (npad > 0)
        CLT__REQUIRE_ARG(pad, fn);
    if ((unsigned)mode > CLT_PAD_CIRCULAR)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Unrecognised padding mode %d", fn,
                          (int)mode);
    if (npad < 0 || npad % 2 != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Padding length must be divisible by 2 (got %d)", fn, npad);
    if (npad > 2 * t->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Padding length too large: %d sizes for a tensor of %d dimensions",
                          fn, npad, t->ndim);
    for (int i = 0; i < npad; i++)
        if (pad[i] == INT64_MIN) /* its crop has no positive size */
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: padding size %lld is out of range",
                              fn, (long long)pad[i]);
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st == CLT_OK && mode != CLT_PAD_CONSTANT)
        st = pad_checks(t, pad, npad, mode, value, fn);
    if (st != CLT_OK)
        return st;
    int nd = t->ndim, k = npad / 2;
    int64_t oshape[CLT_MAX_DIMS], cshape[CLT_MAX_DIMS];
    int64_t src_off = t->offset, dst_start[CLT_MAX_DIMS] = {0};
    memcpy(oshape, t->shape, sizeof oshape);
    memcpy(cshape, t->shape, sizeof cshape);
    for (int i = 0; i < k; i++) {
        int d = nd - 1 - i;
        int64_t n = t->shape[d], l = pad[2 * i], r = pad[2 * i + 1], size = 0;
        if (__builtin_add_overflow(n, l, &size) || __builtin_add_overflow(size, r, &size) ||
            size < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: The input size %lld, plus negative padding %lld and %lld "
                              "resulted in a negative output size, which is invalid. Check "
                              "dimension %d of your input.",
                              fn, (long long)n, (long long)l, (long long)r, d);
        oshape[d] = size;
        if (mode == CLT_PAD_CONSTANT) {
            int64_t cl = l < 0 ? -l : 0, cr = r < 0 ? -r : 0;
            cshape[d] = n - cl - cr;
            if (cshape[d] < 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: start (%lld) + length (%lld) exceeds dimension size "
                                  "(%lld): padding (%lld, %lld) crops more than dimension %d "
                                  "holds",
                                  fn, (long long)cl, (long long)cshape[d], (long long)n,
                                  (long long)l, (long long)r, d);
            src_off += cl * t->strides[d];
            dst_start[d] = l > 0 ? l : 0;
        }
    }
    st = clt__check_shape(nd, oshape, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL, *slot = NULL, *src = NULL;
    if (mode == CLT_PAD_CONSTANT) {
        st = clt__scalar_check(t->dtype, value, CLT__SCALAR_EXACT, fn);
        if (st != CLT_OK)
            return st;
        CLT__TRY(clt__result_new(fn, t->dev, t->dtype, nd, oshape, &r));
        CLT__TRY(clt__fill_value(r, value));
        int64_t numel = clt__shape_most(nd, cshape);
        for (int d = 0; d < nd; d++)
            if (cshape[d] == 0)
                numel = 0;
        if (numel > 0) {
            int64_t off = r->offset;
            for (int d = 0; d < nd; d++)
                off += dst_start[d] * r->strides[d];
            CLT__TRY(clt__tensor_view(r, nd, cshape, r->strides, off, &slot));
            CLT__TRY(clt__tensor_view(t, nd, cshape, t->strides, src_off, &src));
            CLT__TRY(clt__copy_strided(slot, src, fn));
        }
        *out = r;
        r = NULL;
        goto done;
    }
    {
        clt__gmap M;
        memset(&M, 0, sizeof M);
        for (int i = 0; i < k; i++) {
            int d = nd - 1 - i;
            int64_t n = t->shape[d], l = pad[2 * i], rr = pad[2 * i + 1];
            M.mode[d] = mode == CLT_PAD_REFLECT ? GMAP_REFLECT
                        : mode == CLT_PAD_REPLICATE ? GMAP_CLAMP
                                                    : GMAP_WRAP;
            M.a[d] = l;
            M.n[d] = n;
            if (mode == CLT_PAD_CIRCULAR) {
                /* crop first, then wrap around what is left */
                M.a[d] = l > 0 ? l : 0;
                M.b[d] = l < 0 ? -l : 0;
                M.n[d] = n - M.b[d] - (rr < 0 ? -rr : 0);
            }
        }
        st = gather_map(t, oshape, &M, out, fn);
    }
done:
    clt_tensor_free(r);
    clt_tensor_free(slot);
    clt_tensor_free(src);
    return finish(st);
}

/* ---- construction ---------------------------------------------------------------------------------- */

static clt_status create_checks(clt_device *dev, clt_dtype dtype, clt_tensor **out,
                                const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (!clt__dtype_valid(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d", fn, (int)dtype);
    return clt__check_dtype(dev, dtype, fn);
}

static const char *shape_options(const clt_device *dev, clt_dtype t)
{
    static clt__opts_slot slots[2][CLT_DTYPE_COUNT];
    bool fp64 = dev->info.fp64 && t != CLT_FLOAT64; /* float64 defines it already */
    return clt__opts_cached(&slots[fp64][t], "T", t, NULL, t, fp64 ? " -DCLT_FP64" : "");
}

static clt_status space(const char *fn, clt_device *dev, clt_dtype dtype, double start,
                        double end, int64_t steps, bool log, double base, clt_tensor **out)
{
    clt_status st = create_checks(dev, dtype, out, fn);
    if (st != CLT_OK)
        return st;
    if (steps < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: number of steps must be non-negative, "
                          "got %lld", fn, (long long)steps);
    if (dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: not implemented for bool", fn);
    bool integral = !clt__dtype_is_float(dtype);
    if (integral) {
        const double v[2] = {start, end};
        for (int i = 0; i < 2; i++) {
            st = clt__scalar_check(dtype, v[i], CLT__SCALAR_EXACT, fn);
            if (st != CLT_OK)
                return st;
        }
        /* PyTorch converts start and end to the dtype first. */
        start = trunc(start);
        end = trunc(end);
    }
    clt_tensor *t = NULL;
    st = clt__result_new(fn, dev, dtype, 1, &steps, &t);
    if (st != CLT_OK || steps == 0)
        goto done;
    const char *opts = shape_options(dev, dtype);
    if (opts == NULL) {
        st = CLT_ERR_OUT_OF_HOST_MEMORY;
        goto done;
    }
    {
        double step = steps == 1 ? 0 : (end - start) / (double)(steps - 1);
        bool wide = dtype == CLT_FLOAT64 || (integral && dev->info.fp64);
        unsigned char a[4][8];
        size_t sz;
        if (wide) {
            cl_double v[4] = {start, steps == 1 ? start : end, step, base};
            for (int i = 0; i < 4; i++)
                memcpy(a[i], &v[i], sizeof v[i]);
            sz = sizeof(cl_double);
        } else {
            cl_float f0 = (cl_float)start, f1 = (cl_float)(steps == 1 ? start : end);
            cl_float fb = (cl_float)base;
            /* float32: the step in float, as PyTorch's float scalar_t */
            cl_float fs = steps == 1 ? 0.0f : (f1 - f0) / (cl_float)(steps - 1);
            if (integral)
                fs = (cl_float)step;
            cl_float v[4] = {f0, f1, fs, fb};
            for (int i = 0; i < 4; i++)
                memcpy(a[i], &v[i], sizeof v[i]);
            sz = sizeof(cl_float);
        }
        cl_mem mem = clt__mem(t);
        cl_ulong n = (cl_ulong)steps;
        cl_int lg = log;
        /* float32 and float64 linspace as torch 1.13's AVX2 kernel: blocks
         * of 32 bytes (cl/shape.cl) */
        cl_ulong vec = 0;
        if (!log && (dtype == CLT_FLOAT32 || dtype == CLT_FLOAT64))
            vec = 32 / clt_dtype_size(dtype);
        size_t gws = (size_t)steps;
        clt__arg args[] = {CLT__ARG(mem), CLT__ARG(n),  {sz, a[0]}, {sz, a[1]},
                           {sz, a[2]},    CLT__ARG(lg), {sz, a[3]}, CLT__ARG(vec)};
        st = clt__error_in(clt__launch(dev, "shape", opts, "linspace", 1, &gws, NULL, 8, args),
                           fn);
    }
done:
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    *out = t;
    return clt__ok();
}

clt_status clt_linspace(clt_device *dev, clt_dtype dtype, double start, double end,
                        int64_t steps, clt_tensor **out)
{
    return space("clt_linspace", dev, dtype, start, end, steps, false, 10.0, out);
}

clt_status clt_logspace(clt_device *dev, clt_dtype dtype, double start, double end,
                        int64_t steps, double base, clt_tensor **out)
{
    return space("clt_logspace", dev, dtype, start, end, steps, true, base, out);
}

clt_status clt_eye(clt_device *dev, clt_dtype dtype, int64_t n, int64_t m, clt_tensor **out)
{
    static const char fn[] = "clt_eye";
    clt_status st = create_checks(dev, dtype, out, fn);
    if (st != CLT_OK)
        return st;
    if (n < 0 || m < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: n and m must be greater or equal to 0, "
                          "got %lld and %lld", fn, (long long)n, (long long)m);
    int64_t shape[2] = {n, m};
    clt_tensor *one = NULL;
    st = clt__check_shape(2, shape, fn);
    if (st == CLT_OK)
        st = clt__error_in(clt__full(dev, dtype, 0, NULL, 1.0, &one), fn);
    if (st == CLT_OK)
        st = clt__diagonal_scatter(one, 2, shape, 0, 0, 1, out, fn);
    clt_tensor_free(one);
    return finish(st);
}

static clt_status tri_indices(const char *fn, clt_device *dev, int64_t row, int64_t col,
                              int64_t offset, bool upper, clt_tensor **out)
{
    clt_status st = create_checks(dev, CLT_INT64, out, fn);
    if (st != CLT_OK)
        return st;
    if (row < 0 || col < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: row must be non-negative, got %lld; col "
                          "must be non-negative, got %lld", fn, (long long)row, (long long)col);
    /* Offsets past the matrix act as its edge (and keep i + offset in range). */
    if (offset > col + 1)
        offset = col + 1;
    if (offset < -row - 1)
        offset = -row - 1;
    /* Count first: the pairs (i, j) with j - i <= offset (>= for upper). */
    int64_t count = 0;
    for (int64_t i = 0; i < row; i++) {
        int64_t lim = upper ? col - (offset + i > 0 ? (offset + i < col ? offset + i : col) : 0)
                            : (i + offset + 1 < 0 ? 0 : i + offset + 1 > col ? col
                                                                             : i + offset + 1);
        if (__builtin_add_overflow(count, lim, &count) || count > (int64_t)(SIZE_MAX / 16))
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld x %lld indices do not fit "
                              "host memory", fn, (long long)row, (long long)col);
    }
    int64_t *h = clt__malloc((size_t)(count ? count : 1) * 2 * sizeof *h);
    if (h == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t at = 0;
    for (int64_t i = 0; i < row; i++)
        for (int64_t j = 0; j < col; j++)
            if (upper ? j - i >= offset : j - i <= offset) {
                h[at] = i;
                h[count + at] = j;
                at++;
            }
    int64_t shape[2] = {2, count};
    st = clt__tensor_from_host_in(fn, dev, CLT_INT64, 2, shape, h, out);
    free(h);
    return finish(st);
}

clt_status clt_tril_indices(clt_device *dev, int64_t row, int64_t col, int64_t offset,
                            clt_tensor **out)
{
    return tri_indices("clt_tril_indices", dev, row, col, offset, false, out);
}

clt_status clt_triu_indices(clt_device *dev, int64_t row, int64_t col, int64_t offset,
                            clt_tensor **out)
{
    return tri_indices("clt_triu_indices", dev, row, col, offset, true, out);
}

/* ---- pixel_shuffle, pixel_unshuffle and channel_shuffle ---------------------------------- */

/* t's values as the view [shape6] (t's leading dims flattened into the
 * first) permuted by perm, copied, and seen as the result's shape rshape
 * (rank nd): every rearrangement below is this one copy. */
static clt_status rearrange(const clt_tensor *t, int n6, const int64_t *shape6, const int *perm,
                            int nd, const int64_t *rshape, clt_tensor **out, const char *fn)
{
    clt_tensor *v = NULL, *p = NULL, *c = NULL;
    clt_status st = clt__check_shape(nd, rshape, fn);
    if (st == CLT_OK)
        st = clt__reshape(t, n6, shape6, &v, fn);
    if (st == CLT_OK)
        st = clt__permute(v, n6, perm, &p, fn);
    if (st == CLT_OK)
        st = clt__copy_as(fn, p, t->dtype, &c);
    if (st == CLT_OK)
        st = clt__view(c, nd, rshape, out, fn);
    clt_tensor_free(v);
    clt_tensor_free(p);
    clt_tensor_free(c);
    return st;
}

static clt_status shuffle_too_big(const clt_tensor *t, int64_t r, const char *fn)
{
    char s[160];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: the result of %s by %lld passes the int64 range", fn,
                      clt__shape_str(s, sizeof s, t->ndim, t->shape), (long long)r);
}

/* The product of t's sizes before dim d. */
static int64_t lead(const clt_tensor *t, int d)
{
    int64_t b = 1;
    for (int k = 0; k < d; k++)
        b *= t->shape[k];
    return b;
}

clt_status clt__pixel_shuffle(const clt_tensor *t, int64_t r, bool down, clt_tensor **out,
                              const char *fn)
{
    const char *name = down ? "pixel_unshuffle" : "pixel_shuffle";
    if (t->ndim < 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s expects input to have at least 3 dimensions, but got input "
                          "with %d dimension(s)",
                          fn, name, t->ndim);
    if (r <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s expects a positive %s, but got %lld",
                          fn, name, down ? "downscale_factor" : "upscale_factor", (long long)r);
    const int nd = t->ndim;
    const int64_t C = t->shape[nd - 3], H = t->shape[nd - 2], W = t->shape[nd - 1];
    int64_t rr = 0;
    bool big = __builtin_mul_overflow(r, r, &rr);
    int64_t rshape[CLT_MAX_DIMS];
    memcpy(rshape, t->shape, sizeof(int64_t) * (size_t)nd);
    if (!down) {
        if (big || C % rr != 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: pixel_shuffle expects its input's 'channel' dimension to be "
                              "divisible by the square of upscale_factor, but input.size(-3)=%lld "
                              "is not divisible by %lld%s",
                              fn, (long long)C, big ? (long long)r : (long long)rr,
                              big ? " squared" : "");
        if (__builtin_mul_overflow(H, r, &rshape[nd - 2]) ||
            __builtin_mul_overflow(W, r, &rshape[nd - 1]))
            return shuffle_too_big(t, r, fn);
        rshape[nd - 3] = C / rr;
        const int64_t s6[6] = {lead(t, nd - 3), C / rr, r, r, H, W};
        return rearrange(t, 6, s6, (const int[]){0, 1, 4, 2, 5, 3}, nd, rshape, out, fn);
    }
    if (H % r != 0 || W % r != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: pixel_unshuffle expects %s to be divisible by downscale_factor, "
                          "but input.size(%d)=%lld is not divisible by %lld",
                          fn, H % r ? "height" : "width", H % r ? -2 : -1,
                          (long long)(H % r ? H : W), (long long)r);
    if (big || __builtin_mul_overflow(C, rr, &rshape[nd - 3]))
        return shuffle_too_big(t, r, fn);
    rshape[nd - 2] = H / r;
    rshape[nd - 1] = W / r;
    const int64_t s6[6] = {lead(t, nd - 3), C, H / r, r, W / r, r};
    return rearrange(t, 6, s6, (const int[]){0, 1, 3, 5, 2, 4}, nd, rshape, out, fn);
}

clt_status clt__channel_shuffle(const clt_tensor *t, int64_t groups, clt_tensor **out,
                                const char *fn)
{
    if (t->ndim <= 2) {
        char s[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: channel_shuffle expects input with > 2 dims, but got input with "
                          "sizes %s",
                          fn, clt__shape_str(s, sizeof s, t->ndim, t->shape));
    }
    if (groups <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Number of groups to divide channels in must be positive. Value "
                          "of groups:%lld",
                          fn, (long long)groups);
    const int64_t C = t->shape[1];
    if (C % groups != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Number of channels must be divisible by groups. Got %lld channels "
                          "and %lld groups.",
                          fn, (long long)C, (long long)groups);
    int64_t rest = t->numel / (t->shape[0] * C > 0 ? t->shape[0] * C : 1);
    if (t->numel == 0) /* any geometry will do: nothing moves */
        rest = 0;
    const int64_t s4[4] = {t->shape[0], groups, C / groups, rest};
    return rearrange(t, 4, s4, (const int[]){0, 2, 1, 3}, t->ndim, t->shape, out, fn);
}
