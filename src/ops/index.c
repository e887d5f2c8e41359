/* index.c: indexing ops (index_select, gather, scatter, scatter_add,
 * index_add, masked_fill, one_hot, embedding, take, index_copy, index_fill,
 * index_put, scatter_reduce, searchsorted): PyTorch's shape and dtype
 * checks, and launches of cl/index.cl.  Indices are checked on the device;
 * a bad one is reported at the launching thread's next synchronisation on
 * the device (src/device/error_flag.c).
 * These are the clt__ implementations; the public entries, with their
 * backward formulas, are in src/autograd/grad_index.c.
 *
 * Determinism.  scatter_add and index_add give every destination element
 * one owner: a work-item per destination column (every coordinate but
 * `dim`), which walks the indices in ascending order and adds the matching
 * sources in that order.  No atomics, no float sums whose order depends on
 * scheduling: the bits are the same on every run and every device, and equal
 * a sequential host loop's.  The work is that of the sources, O(n_index *
 * D) for index_add of n_index rows of D columns, spread over D work-items;
 * a destination with a single column (a 1-D tensor) is summed by one
 * work-item, the price of that order. */
#include <math.h>
#include <string.h>

#include "internal.h"

static clt_status finish(clt_status st)
{
    return st == CLT_OK ? clt__ok() : st;
}


/* t's shape and strides with a 0-d tensor seen as 1-d of size 1, as
 * PyTorch's ensure_nonempty_dim; returns the number of dims. */
static int nonempty(const clt_tensor *t, int64_t *shape, int64_t *strides)
{
    if (t->ndim == 0) {
        shape[0] = 1;
        strides[0] = 0;
        return 1;
    }
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return t->ndim;
}

static const char *shape_of(char *buf, size_t n, const clt_tensor *t)
{
    return clt__shape_str(buf, n, t->ndim, t->shape);
}

/* Which index dtypes an op takes, as PyTorch 1.13: int64 everywhere, and
 * int32 too for index_select, index_add and embedding (gather and the
 * scatters want int64). */
typedef enum index_dtypes { INT64_ONLY, INT32_OR_INT64 } index_dtypes;

static clt_status index_dtype(const clt_tensor *index, index_dtypes allowed, const char *fn,
                              const char *what)
{
    if (index->dtype == CLT_INT64 || (allowed == INT32_OR_INT64 && index->dtype == CLT_INT32))
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: expected dtype %s for %s, but got %s", fn,
                      allowed == INT32_OR_INT64 ? "int32 or int64" : "int64", what,
                      clt_dtype_name(index->dtype));
}

static clt_status same_dtype(const clt_tensor *t, const clt_tensor *src, const char *fn)
{
    if (t->dtype == src->dtype)
        return CLT_OK;
    return clt__error(CLT_ERR_DTYPE_MISMATCH,
                      "%s: expected self.dtype to be equal to src.dtype, but self is %s and src "
                      "is %s",
                      fn, clt_dtype_name(t->dtype), clt_dtype_name(src->dtype));
}

/* What the ops that take an index check first: one device, an index dtype
 * the op takes, src (NULL for those that only read) of t's dtype, dim
 * wrapped over nd dims, and a dtype the device holds. */
static clt_status index_checks(const clt_tensor *t, int dim, int nd, const clt_tensor *index,
                               index_dtypes allowed, const clt_tensor *src, int *d,
                               const char *fn)
{
    clt_status st = clt__same_device(t, index, fn);
    if (st == CLT_OK && src)
        st = clt__same_device(t, src, fn);
    if (st == CLT_OK)
        st = index_dtype(index, allowed, fn, "index");
    if (st == CLT_OK && src)
        st = same_dtype(t, src, fn);
    if (st == CLT_OK)
        st = clt__wrap_dim(dim, nd, d, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(t->dev, t->dtype, fn);
    return st;
}

static clt_status vector_index(const clt_tensor *index, const char *fn)
{
    char s[160];
    if (index->ndim <= 1)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: index is supposed to be a vector, but has shape %s", fn,
                      shape_of(s, sizeof s, index));
}

/* The shape of embedding's and one_hot's results: indices' shape and one
 * more dimension of size last (n dimensions in all). */
static clt_status indices_and(const clt_tensor *indices, int64_t last, int64_t *shape, int *n,
                              const char *fn)
{
    char s[160];
    *n = indices->ndim + 1;
    if (*n > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: indices of shape %s give a result of %d dimensions; at most %d "
                          "supported",
                          fn, shape_of(s, sizeof s, indices), *n, CLT_MAX_DIMS);
    memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    shape[*n - 1] = last;
    return CLT_OK;
}

/* Build options of cl/index.cl for data dtype t and index dtype idx (int64
 * or int32; int64 for the kernels that read no index, and one_hot). */
static const char *options(clt_dtype t, clt_dtype idx)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT][2];
    return clt__opts_cached(&slots[t][idx == CLT_INT32], "T", t, "I", idx, "");
}

static clt_status launch(clt_device *dev, clt_dtype t, clt_dtype idx, const char *kernel,
                         uint64_t n, size_t nargs, const clt__arg *args, const char *fn)
{
    const char *opts = options(t, idx);
    if (opts == NULL)
        return CLT_ERR_OUT_OF_HOST_MEMORY;
    size_t gws = (size_t)n;
    return clt__error_in(clt__launch(dev, "index", opts, kernel, 1, &gws, NULL, nargs, args),
                         fn);
}

static clt__layout layout_new(int ndim, const int64_t *shape)
{
    clt__layout L;
    memset(&L, 0, sizeof L);
    L.ndim = ndim;
    memcpy(L.shape, shape, sizeof(int64_t) * (size_t)ndim);
    return L;
}

static uint64_t layout_numel(const clt__layout *L)
{
    uint64_t n = 1;
    for (int d = 0; d < L->ndim; d++)
        n *= (uint64_t)L->shape[d];
    return n;
}

/* ---- take: index_select, gather, embedding ------------------------------------- */

/* Launches take over r (new, contiguous) with L.s0/off0 placing src and
 * L.s1/off1 placing index. */
static clt_status take(clt_tensor *r, const clt_tensor *src, const clt_tensor *index,
                       clt__layout *L, int64_t sel_stride, int64_t sel_size, clt__index_op op,
                       int dim, bool wrap, const char *fn)
{
    if (r->numel == 0)
        return CLT_OK;
    cl_mem err = NULL;
    clt_status st = clt__index_errors(r->dev, &err);
    if (st != CLT_OK)
        return st;
    L->off0 = src->offset;
    L->off1 = index->offset;
    cl_mem mo = clt__mem(r), ms = clt__mem(src), mi = clt__mem(index);
    cl_long l_stride = sel_stride, l_size = sel_size;
    cl_int l_op = op, l_dim = dim, l_wrap = wrap;
    cl_ulong n = (cl_ulong)r->numel;
    clt__arg args[] = {CLT__ARG(mo),     CLT__ARG(ms),   CLT__ARG(mi),    CLT__ARG(l_stride),
                       CLT__ARG(l_size), CLT__ARG(l_op), CLT__ARG(l_dim), CLT__ARG(l_wrap),
                       CLT__ARG(err),    CLT__ARG(n),    {sizeof *L, L}};
    return launch(r->dev, r->dtype, index->dtype, "take", n, 11, args, fn);
}

clt_status clt__index_select(const clt_tensor *t, int dim, const clt_tensor *index,
                            clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    int64_t ts[CLT_MAX_DIMS], tst[CLT_MAX_DIMS], is[1], ist[1];
    int nd = nonempty(t, ts, tst), d = 0;
    clt_status st = index_checks(t, dim, nd, index, INT32_OR_INT64, NULL, &d, fn);
    if (st == CLT_OK)
        st = vector_index(index, fn);
    if (st != CLT_OK)
        return st;
    int64_t count = index->numel;
    if (t->ndim == 0 && count != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: index to a 0-dimensional tensor can have only 1 value, got %lld",
                          fn, (long long)count);
    nonempty(index, is, ist);
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, ts, sizeof(int64_t) * (size_t)nd);
    shape[d] = count;
    clt_tensor *r = NULL;
    CLT__TRY(clt__result_new(fn, t->dev, t->dtype, t->ndim, shape, &r));
    {
        clt__layout L = layout_new(nd, shape);
        memcpy(L.s0, tst, sizeof(int64_t) * (size_t)nd);
        L.s0[d] = 0;
        L.s1[d] = ist[0];
        CLT__TRY(take(r, t, index, &L, tst[d], ts[d], CLT__IDX_INDEX_SELECT, d, false, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

clt_status clt__gather(const clt_tensor *t, int dim, const clt_tensor *index, clt_tensor **out,
                       const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    int64_t ts[CLT_MAX_DIMS], tst[CLT_MAX_DIMS], is[CLT_MAX_DIMS], ist[CLT_MAX_DIMS];
    int nd = nonempty(t, ts, tst), ind = nonempty(index, is, ist), d = 0;
    clt_status st = index_checks(t, dim, nd, index, INT64_ONLY, NULL, &d, fn);
    if (st != CLT_OK)
        return st;
    char s1[160], s2[160];
    if (ind != nd)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: index tensor must have the same number of dimensions as input "
                          "tensor (index %s, input %s)",
                          fn, shape_of(s1, sizeof s1, index), shape_of(s2, sizeof s2, t));
    for (int k = 0; k < nd; k++)
        if (k != d && is[k] > ts[k])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: size does not match at dimension %d: expected index %s to be "
                              "smaller than self %s apart from dimension %d",
                              fn, k, shape_of(s1, sizeof s1, index), shape_of(s2, sizeof s2, t),
                              d);
    clt_tensor *r = NULL;
    CLT__TRY(clt__result_new(fn, t->dev, t->dtype, index->ndim, index->shape, &r));
    {
        clt__layout L = layout_new(nd, is);
        memcpy(L.s0, tst, sizeof(int64_t) * (size_t)nd);
        L.s0[d] = 0;
        memcpy(L.s1, ist, sizeof(int64_t) * (size_t)nd);
        CLT__TRY(take(r, t, index, &L, tst[d], ts[d], CLT__IDX_GATHER, d, false, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

clt_status clt__embedding(const clt_tensor *weight, const clt_tensor *indices, clt_tensor **out,
                          const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(weight, fn);
    CLT__REQUIRE_ARG(indices, fn);
    clt_status st = clt__same_device(weight, indices, fn);
    if (st == CLT_OK)
        st = index_dtype(indices, INT32_OR_INT64, fn, "indices");
    if (st == CLT_OK)
        st = clt__check_dtype(weight->dev, weight->dtype, fn);
    if (st != CLT_OK)
        return st;
    char s[160];
    if (weight->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: 'weight' must be 2-D, but has shape %s",
                          fn, shape_of(s, sizeof s, weight));
    int64_t shape[CLT_MAX_DIMS];
    int n = 0;
    st = indices_and(indices, weight->shape[1], shape, &n, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL;
    CLT__TRY(clt__result_new(fn, weight->dev, weight->dtype, n, shape, &r));
    {
        clt__layout L = layout_new(n, shape);
        L.s0[n - 1] = weight->strides[1];
        memcpy(L.s1, indices->strides, sizeof(int64_t) * (size_t)indices->ndim);
        CLT__TRY(take(r, weight, indices, &L, weight->strides[0], weight->shape[0],
                      CLT__IDX_EMBEDDING, 0, false, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

/* ---- scatter: scatter, scatter_add, index_add ---------------------------------- */

typedef enum scatter_kind { SCATTER, INDEX_ADD } scatter_kind;

/* Enqueues the scatter kernel writing into dst (any strides, without
 * internal overlap), along the wrapped dimension d.  SCATTER walks index's
 * own columns (index, src and dst of one rank); INDEX_ADD walks the 1-D
 * index for every column of dst.  add: accumulate alpha * src, else
 * assign; wrap: an index in [-size, 0) counts from the end. */
static clt_status scatter_into(clt_tensor *dst, int d, const clt_tensor *index,
                               const clt_tensor *src, scatter_kind kind, bool add, double alpha,
                               clt__index_op op, bool wrap, const char *fn)
{
    if (index->numel == 0)
        return CLT_OK; /* and the ranks may differ (scatter_checks) */
    int64_t ds[CLT_MAX_DIMS], dst_[CLT_MAX_DIMS], is[CLT_MAX_DIMS], ist[CLT_MAX_DIMS];
    int64_t ss[CLT_MAX_DIMS], sst[CLT_MAX_DIMS];
    int nd = nonempty(dst, ds, dst_);
    nonempty(index, is, ist);
    nonempty(src, ss, sst);
    clt__layout L = layout_new(nd, kind == SCATTER ? is : ds);
    L.shape[d] = 1;
    memcpy(L.s0, dst_, sizeof(int64_t) * (size_t)nd);
    memcpy(L.s2, sst, sizeof(int64_t) * (size_t)nd);
    cl_long nk, idx_step;
    if (kind == SCATTER) {
        memcpy(L.s1, ist, sizeof(int64_t) * (size_t)nd);
        nk = is[d];
        idx_step = ist[d];
    } else {
        nk = index->numel;
        idx_step = ist[0];
    }
    L.off0 = dst->offset;
    L.off1 = index->offset;
    L.off2 = src->offset;
    cl_ulong n = layout_numel(&L);
    if (n == 0 || nk == 0)
        return CLT_OK;
    cl_mem err = NULL;
    clt_status st = clt__index_errors(dst->dev, &err);
    if (st != CLT_OK)
        return st;
    cl_mem md = clt__mem(dst), mi = clt__mem(index), ms = clt__mem(src);
    unsigned char av[8];
    size_t asize = clt__scalar_arg(dst->dtype, alpha, av);
    cl_int l_add = add, l_op = op, l_dim = d, l_wrap = wrap;
    cl_long dst_step = dst_[d], src_step = sst[d], dim_size = ds[d];
    clt__arg args[] = {CLT__ARG(md),       CLT__ARG(mi),       CLT__ARG(ms),
                       {asize, av},        CLT__ARG(l_add),    CLT__ARG(nk),
                       CLT__ARG(dst_step), CLT__ARG(idx_step), CLT__ARG(src_step),
                       CLT__ARG(dim_size), CLT__ARG(l_op),     CLT__ARG(l_dim),
                       CLT__ARG(l_wrap),   CLT__ARG(err),      CLT__ARG(n),
                       {sizeof L, &L}};
    return launch(dst->dev, dst->dtype, index->dtype, "scatter", n, 16, args, fn);
}

/* PyTorch's scatter_shape_check: index, self and src of one rank (0-d
 * counting as 1-d), index no larger than src anywhere nor than self apart
 * from dimension d; nothing is checked for an empty index. */
static clt_status scatter_checks(const clt_tensor *t, int dim, const clt_tensor *index,
                                 const clt_tensor *src, int *d, const char *fn)
{
    int64_t ts[CLT_MAX_DIMS], tst[CLT_MAX_DIMS], is[CLT_MAX_DIMS], ist[CLT_MAX_DIMS];
    int64_t ss[CLT_MAX_DIMS], sst[CLT_MAX_DIMS];
    int nd = nonempty(t, ts, tst), ind = nonempty(index, is, ist), snd = nonempty(src, ss, sst);
    clt_status st = index_checks(t, dim, nd, index, INT64_ONLY, src, d, fn);
    if (st != CLT_OK || index->numel == 0)
        return st;
    char s1[160], s2[160], s3[160];
    if (ind != nd || snd != nd)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: index tensor must have the same number of dimensions as self "
                          "and src tensors (index %s, self %s, src %s)",
                          fn, shape_of(s1, sizeof s1, index), shape_of(s2, sizeof s2, t),
                          shape_of(s3, sizeof s3, src));
    for (int k = 0; k < nd; k++)
        if (is[k] > ss[k] || (k != *d && is[k] > ts[k]))
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: expected index %s to be smaller than self %s apart from "
                              "dimension %d and to be smaller size than src %s",
                              fn, shape_of(s1, sizeof s1, index), shape_of(s2, sizeof s2, t), *d,
                              shape_of(s3, sizeof s3, src));
    return CLT_OK;
}

/* PyTorch's index_add checks: a vector index with one entry per slice of
 * src along d, src shaped as self apart from d, and an alpha the dtype can
 * take (no fractional alpha for integer tensors). */
static clt_status index_add_checks(const clt_tensor *t, int dim, const clt_tensor *index,
                                   const clt_tensor *src, double alpha, int *d, const char *fn)
{
    int64_t ts[CLT_MAX_DIMS], tst[CLT_MAX_DIMS], ss[CLT_MAX_DIMS], sst[CLT_MAX_DIMS];
    int nd = nonempty(t, ts, tst), snd = nonempty(src, ss, sst);
    clt_status st = index_checks(t, dim, nd, index, INT32_OR_INT64, src, d, fn);
    if (st == CLT_OK)
        st = vector_index(index, fn);
    if (st != CLT_OK)
        return st;
    char s1[160], s2[160];
    if (snd != nd)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: source.dim() (%d) must equal self.dim() (%d) (source %s, self %s)",
                          fn, src->ndim, t->ndim, shape_of(s1, sizeof s1, src),
                          shape_of(s2, sizeof s2, t));
    if (index->numel != ss[*d])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: number of indices (%lld) should be equal to source.size(dim) "
                          "(%lld) for dim %d",
                          fn, (long long)index->numel, (long long)ss[*d], *d);
    for (int k = 0; k < nd; k++)
        if (k != *d && ss[k] != ts[k])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: source %s and self %s must have the same size apart from "
                              "dimension %d (they differ at dimension %d)",
                              fn, shape_of(s1, sizeof s1, src), shape_of(s2, sizeof s2, t), *d,
                              k);
    if (!clt__dtype_is_float(t->dtype) && !(isfinite(alpha) && alpha == floor(alpha)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: for integral input tensors, argument alpha must not be a "
                          "floating point number (got %g for a %s tensor)",
                          fn, alpha, clt_dtype_name(t->dtype));
    return clt__scalar_check(t->dtype, alpha, CLT__SCALAR_WRAP, fn);
}

/* The operands of an in-place scatter into t: src and index themselves,
 * or private copies of them when they share t's storage, so that the
 * kernel reads them as they were before the write. */
static clt_status unaliased(const clt_tensor *t, const clt_tensor *x, clt_tensor **tmp,
                            const clt_tensor **use, const char *fn)
{
    *use = x;
    if (x->storage == NULL || x->storage != t->storage)
        return CLT_OK;
    clt_status st = clt__clone(x, tmp, fn);
    if (st == CLT_OK)
        *use = *tmp;
    return st;
}

/* The arguments of scatter, scatter_add and index_add, in place or not. */
static clt_status scatter_args(const clt_tensor *t, int dim, const clt_tensor *index,
                               const clt_tensor *src, scatter_kind kind, double alpha, int *d,
                               const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    CLT__REQUIRE_ARG(src, fn);
    return kind == SCATTER ? scatter_checks(t, dim, index, src, d, fn)
                           : index_add_checks(t, dim, index, src, alpha, d, fn);
}

static clt_status scatter_inplace(clt_tensor *t, int dim, const clt_tensor *index,
                                  const clt_tensor *src, scatter_kind kind, bool add,
                                  double alpha, clt__index_op op, const char *fn)
{
    int d = 0;
    clt_status st = scatter_args(t, dim, index, src, kind, alpha, &d, fn);
    if (st == CLT_OK)
        st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ti = NULL, *ts = NULL;
    const clt_tensor *ui, *us;
    CLT__TRY(unaliased(t, index, &ti, &ui, fn));
    CLT__TRY(unaliased(t, src, &ts, &us, fn));
    CLT__TRY(scatter_into(t, d, ui, us, kind, add, alpha, op, false, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(ti);
    clt_tensor_free(ts);
    return finish(st);
}

static clt_status scatter_copy(const clt_tensor *t, int dim, const clt_tensor *index,
                               const clt_tensor *src, scatter_kind kind, bool add, double alpha,
                               clt__index_op op, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    int d = 0;
    clt_status st = scatter_args(t, dim, index, src, kind, alpha, &d, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL;
    CLT__TRY(clt__clone(t, &r, fn)); /* contiguous, with storage of its own */
    CLT__TRY(scatter_into(r, d, index, src, kind, add, alpha, op, false, fn));
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

clt_status clt__scatter(const clt_tensor *t, int dim, const clt_tensor *index,
                       const clt_tensor *src, clt_tensor **out, const char *fn)
{
    return scatter_copy(t, dim, index, src, SCATTER, false, 1, CLT__IDX_SCATTER, out, fn);
}

clt_status clt__scatter_add(const clt_tensor *t, int dim, const clt_tensor *index,
                           const clt_tensor *src, clt_tensor **out, const char *fn)
{
    return scatter_copy(t, dim, index, src, SCATTER, true, 1, CLT__IDX_SCATTER_ADD, out, fn);
}

clt_status clt__index_add(const clt_tensor *t, int dim, const clt_tensor *index,
                         const clt_tensor *src, double alpha, clt_tensor **out, const char *fn)
{
    return scatter_copy(t, dim, index, src, INDEX_ADD, true, alpha, CLT__IDX_INDEX_ADD, out, fn);
}

clt_status clt__scatter_add_(clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *src)
{
    return scatter_inplace(t, dim, index, src, SCATTER, true, 1, CLT__IDX_SCATTER_ADD_,
                           "clt_scatter_add_");
}

clt_status clt__index_add_(clt_tensor *t, int dim, const clt_tensor *index, const clt_tensor *src,
                          double alpha)
{
    return scatter_inplace(t, dim, index, src, INDEX_ADD, true, alpha, CLT__IDX_INDEX_ADD_,
                           "clt_index_add_");
}

/* ---- masked_fill, one_hot ------------------------------------------------------- */

/* t (bool) with a last dim of size 1 more: a view that broadcasts against
 * a real view's pairs. */
static clt_status with_pair_dim(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    if (t->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: a mask of %d dims is more than a complex operand's real view "
                          "takes (CLT_MAX_DIMS %d)",
                          fn, t->ndim, CLT_MAX_DIMS);
    int64_t shape[CLT_MAX_DIMS], st[CLT_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[d];
        st[d] = t->strides[d];
    }
    shape[t->ndim] = 1;
    st[t->ndim] = 0;
    return clt__error_in(clt__tensor_view(t, t->ndim + 1, shape, st, t->offset, out), fn);
}

/* masked_fill of a complex t with a real value (imaginary part 0): the
 * real view's real parts filled with value, its imaginary ones with 0. */
static clt_status complex_masked_fill(const clt_tensor *t, const clt_tensor *mask, double value,
                                      clt_tensor **out, const char *fn)
{
    clt_tensor *rv = NULL, *mu = NULL, *pick = NULL, *mre = NULL, *mim = NULL, *r1 = NULL,
               *r2 = NULL;
    clt_status st;
    CLT__TRY(clt__view_as_real(t, &rv, fn));
    CLT__TRY(with_pair_dim(mask, &mu, fn));
    if (value == 0.0 && !signbit(value)) {
        CLT__TRY(clt__masked_fill(rv, mu, 0.0, &r2, fn));
    } else {
        const unsigned char re_only[2] = {1, 0}, im_only[2] = {0, 1};
        int64_t two = 2;
        CLT__TRY(clt__tensor_from_host_in(fn, t->dev, CLT_BOOL, 1, &two, re_only, &pick));
        CLT__TRY(clt__logical_and_in(fn, mu, pick, &mre));
        clt_tensor_free(pick);
        pick = NULL;
        CLT__TRY(clt__tensor_from_host_in(fn, t->dev, CLT_BOOL, 1, &two, im_only, &pick));
        CLT__TRY(clt__logical_and_in(fn, mu, pick, &mim));
        CLT__TRY(clt__masked_fill(rv, mre, value, &r1, fn));
        CLT__TRY(clt__masked_fill(r1, mim, 0.0, &r2, fn));
    }
    CLT__TRY(clt__view_as_complex(r2, out, fn));
done:
    clt_tensor_free(rv);
    clt_tensor_free(mu);
    clt_tensor_free(pick);
    clt_tensor_free(mre);
    clt_tensor_free(mim);
    clt_tensor_free(r1);
    clt_tensor_free(r2);
    return st;
}

clt_status clt__masked_fill(const clt_tensor *t, const clt_tensor *mask, double value,
                           clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(mask, fn);
    if (mask->dtype != CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: only bool masks are supported, but got mask with dtype %s", fn,
                          clt_dtype_name(mask->dtype));
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = clt__same_device(t, mask, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st == CLT_OK)
        st = clt__broadcast_shapes(t->ndim, t->shape, mask->ndim, mask->shape, &n, shape, fn);
    if (st == CLT_OK)
        st = clt__scalar_check(clt__dtype_is_complex(t->dtype) ? clt__complex_part_dtype(t->dtype)
                                                               : t->dtype,
                               value, CLT__SCALAR_EXACT, fn);
    if (st != CLT_OK)
        return st;
    if (clt__dtype_is_complex(t->dtype))
        return finish(complex_masked_fill(t, mask, value, out, fn));
    clt_tensor *r = NULL;
    CLT__TRY(clt__result_new(fn, t->dev, t->dtype, n, shape, &r));
    if (r->numel > 0) {
        int64_t one = 1;
        clt__layout L = layout_new(n > 0 ? n : 1, n > 0 ? shape : &one);
        clt__broadcast_strides(t, n, shape, L.s0);
        clt__broadcast_strides(mask, n, shape, L.s1);
        L.off0 = t->offset;
        L.off1 = mask->offset;
        cl_mem mo = clt__mem(r), mt = clt__mem(t), mm = clt__mem(mask);
        unsigned char v[8];
        size_t vsize = clt__scalar_arg(t->dtype, value, v);
        cl_ulong count = (cl_ulong)r->numel;
        clt__arg args[] = {CLT__ARG(mo),    CLT__ARG(mt),    CLT__ARG(mm),
                           {vsize, v},      CLT__ARG(count), {sizeof L, &L}};
        CLT__TRY(launch(t->dev, t->dtype, CLT_INT64, "masked_fill", count, 6, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

clt_status clt__one_hot(const clt_tensor *indices, int64_t num_classes, clt_tensor **out)
{
    const char *fn = "clt_one_hot";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(indices, fn);
    if (indices->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: one_hot is only applicable to index tensors of dtype int64, but "
                          "got %s",
                          fn, clt_dtype_name(indices->dtype));
    /* torch checks an empty tensor first: its result needs a class count
     * from the caller, since no value can give one. */
    if (indices->numel == 0 && num_classes <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cannot infer the number of classes from an empty tensor "
                          "(num_classes %lld); pass a positive num_classes",
                          fn, (long long)num_classes);
    if (num_classes == -1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_classes -1 (one more than the largest value) is not "
                          "supported: finding it would wait for the device; pass the number of "
                          "classes",
                          fn);
    if (num_classes < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: num_classes must be non-negative, got %lld", fn,
                          (long long)num_classes);
    if (num_classes == 0 && indices->numel > 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: class values must be smaller than num_classes 0 (%lld values "
                          "given)",
                          fn, (long long)indices->numel);
    int64_t shape[CLT_MAX_DIMS];
    int n = 0;
    clt_status st = indices_and(indices, num_classes, shape, &n, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL;
    CLT__TRY(clt__result_new(fn, indices->dev, CLT_INT64, n, shape, &r));
    if (r->numel > 0) {
        cl_mem err = NULL;
        CLT__TRY(clt__index_errors(r->dev, &err));
        clt__layout L = layout_new(n, shape);
        memcpy(L.s0, indices->strides, sizeof(int64_t) * (size_t)indices->ndim);
        L.off0 = indices->offset;
        cl_mem mo = clt__mem(r), mi = clt__mem(indices);
        cl_long classes = num_classes;
        cl_int op = CLT__IDX_ONE_HOT;
        cl_ulong count = (cl_ulong)r->numel;
        clt__arg args[] = {CLT__ARG(mo),  CLT__ARG(mi),    CLT__ARG(classes), CLT__ARG(op),
                           CLT__ARG(err), CLT__ARG(count), {sizeof L, &L}};
        CLT__TRY(launch(r->dev, CLT_INT64, CLT_INT64, "one_hot", count, 7, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

/* ---- take, index_copy, index_fill ------------------------------------------------ */

clt_status clt__take(const clt_tensor *t, const clt_tensor *index, clt_tensor **out,
                     const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    int d = 0;
    clt_status st = index_checks(t, 0, 1, index, INT64_ONLY, NULL, &d, fn);
    if (st != CLT_OK)
        return st;
    if (t->numel == 0 && index->numel > 0)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: tried to take from an empty tensor (%lld indices given)", fn,
                          (long long)index->numel);
    clt_tensor *r = NULL, *flat = NULL;
    CLT__TRY(clt__result_new(fn, t->dev, t->dtype, index->ndim, index->shape, &r));
    if (r->numel > 0) {
        CLT__TRY(clt__contiguous_as(fn, t, t->dtype, &flat));
        int64_t is[CLT_MAX_DIMS], ist[CLT_MAX_DIMS];
        int nd = nonempty(index, is, ist);
        clt__layout L = layout_new(nd, is);
        memcpy(L.s1, ist, sizeof(int64_t) * (size_t)nd);
        CLT__TRY(take(r, flat, index, &L, 1, t->numel, CLT__IDX_TAKE, 0, true, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(flat);
    return finish(st);
}

/* index_copy takes int64 indices only, as PyTorch 1.13 (index_add int32
 * too). */
static clt_status copy_index_dtype(const clt_tensor *index, const char *fn)
{
    return index ? index_dtype(index, INT64_ONLY, fn, "index") : CLT_OK;
}

clt_status clt__index_copy(const clt_tensor *t, int dim, const clt_tensor *index,
                           const clt_tensor *src, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = copy_index_dtype(index, fn);
    return st != CLT_OK ? st
                        : scatter_copy(t, dim, index, src, INDEX_ADD, false, 1,
                                       CLT__IDX_INDEX_COPY, out, fn);
}

clt_status clt__index_copy_(clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *src, const char *fn)
{
    clt_status st = copy_index_dtype(index, fn);
    return st != CLT_OK ? st
                        : scatter_inplace(t, dim, index, src, INDEX_ADD, false, 1,
                                          CLT__IDX_INDEX_COPY_, fn);
}

/* index_fill writes into dst (t itself, or its copy): index_copy from value
 * broadcast to the slices, negative indices counting from the end. */
static clt_status fill_into(clt_tensor *dst, int dim, const clt_tensor *index, double value,
                            clt__index_op op, const char *fn)
{
    int64_t ts[CLT_MAX_DIMS], tst[CLT_MAX_DIMS];
    int nd = nonempty(dst, ts, tst), d = 0;
    clt_status st = index_checks(dst, dim, nd, index, INT64_ONLY, NULL, &d, fn);
    if (st == CLT_OK)
        st = vector_index(index, fn);
    if (st == CLT_OK)
        st = clt__scalar_check(dst->dtype, value, CLT__SCALAR_EXACT, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *v = NULL, *src = NULL;
    ts[d] = index->numel;
    CLT__TRY(clt__temp_new(fn, "the fill value", dst->dev, dst->dtype, 0, NULL, &v));
    CLT__TRY(clt__fill_value(v, value));
    CLT__TRY(clt__expand(v, nd, ts, &src, fn));
    CLT__TRY(scatter_into(dst, d, index, src, INDEX_ADD, false, 1, op, true, fn));
done:
    clt_tensor_free(v);
    clt_tensor_free(src);
    return st;
}

clt_status clt__index_fill(const clt_tensor *t, int dim, const clt_tensor *index, double value,
                           clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    clt_tensor *r = NULL;
    clt_status st = clt__same_device(t, index, fn);
    if (st != CLT_OK)
        return st;
    CLT__TRY(clt__clone(t, &r, fn));
    CLT__TRY(fill_into(r, dim, index, value, CLT__IDX_INDEX_FILL, fn));
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    return finish(st);
}

clt_status clt__index_fill_(clt_tensor *t, int dim, const clt_tensor *index, double value)
{
    const char *fn = "clt_index_fill_";
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    clt_tensor *ti = NULL;
    const clt_tensor *ui;
    clt_status st = clt__check_dest(t, fn);
    if (st == CLT_OK)
        st = clt__same_device(t, index, fn);
    if (st != CLT_OK)
        return st;
    CLT__TRY(unaliased(t, index, &ti, &ui, fn));
    CLT__TRY(fill_into(t, dim, ui, value, CLT__IDX_INDEX_FILL_, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(ti);
    return finish(st);
}

/* ---- index_put ------------------------------------------------------------------- */

/* The int64 index tensors of index_put, each bool mask replaced by the
 * columns of its nonzero(): parts[0..*k) index t's dimensions dims[0..*k),
 * in order; NULL entries of indices are full slices.  The parts are new
 * handles. */
static clt_status put_parts(const clt_tensor *t, const clt_tensor *const *indices, int n,
                            clt_tensor **parts, int *k, int *dims, const char *fn)
{
    char s1[160], s2[160];
    int total = 0, given = 0;
    for (int i = 0; i < n; i++) {
        const clt_tensor *x = indices[i];
        if (x == NULL) {
            total++;
            continue;
        }
        given++;
        clt_status st = clt__same_device(t, x, fn);
        if (st != CLT_OK)
            return st;
        if (x->dtype != CLT_INT64 && x->dtype != CLT_BOOL)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: tensors used as indices must be int64 or bool tensors, but "
                              "indices[%d] is %s",
                              fn, i, clt_dtype_name(x->dtype));
        if (x->dtype == CLT_BOOL && x->ndim == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: a 0-dimensional bool index (indices[%d]) is not supported",
                              fn, i);
        total += x->dtype == CLT_BOOL ? x->ndim : 1;
    }
    if (given == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected at least one index tensor, but every entry of indices "
                          "is NULL (a full slice)",
                          fn);
    if (total > t->ndim)
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: too many indices for tensor of dimension %d (got %d)", fn,
                          t->ndim, total);
    *k = 0;
    for (int i = 0, d = 0; i < n; i++) {
        const clt_tensor *x = indices[i];
        int m = x == NULL ? 0 : x->dtype == CLT_BOOL ? x->ndim : 1;
        clt_status st = CLT_OK;
        for (int j = 0; j < m; j++)
            dims[*k + j] = d + j;
        d += x == NULL ? 1 : m;
        if (x == NULL)
            continue;
        if (x->dtype == CLT_INT64) {
            /* a handle of its own: a retained caller's tensor freed with
             * clt_tensor_free would take the reference of the caller's scope */
            st = clt__tensor_view(x, x->ndim, x->shape, x->strides, x->offset, &parts[*k]);
            if (st != CLT_OK)
                return st;
            (*k)++;
            continue;
        }
        for (int j = 0; j < m; j++)
            if (x->shape[j] != t->shape[dims[*k + j]])
                return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                                  "%s: The shape of the mask %s at index %d does not match the "
                                  "shape of the indexed tensor %s at index %d",
                                  fn, shape_of(s1, sizeof s1, x), j, shape_of(s2, sizeof s2, t),
                                  dims[*k + j]);
        clt_tensor *nz = NULL;
        st = clt__nonzero(x, &nz, fn);
        if (st != CLT_OK)
            return st;
        for (int j = 0; j < m && st == CLT_OK; j++) {
            int64_t len = nz->shape[0], step = m;
            st = clt__tensor_view(nz, 1, &len, &step, nz->offset + j, &parts[*k]);
            if (st == CLT_OK)
                (*k)++;
        }
        clt_tensor_free(nz);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

/* The linear place, in t's first k dimensions seen as one, of each
 * position of the k index tensors broadcast together (info->ndim and
 * info->shape get the broadcast shape for now). */
static clt_status put_places(const clt_tensor *t, clt_tensor *const *parts, int k,
                             clt__index_op op, clt__put_info *info, const char *fn)
{
    int bnd = parts[0]->ndim;
    int64_t bs[CLT_MAX_DIMS];
    memcpy(bs, parts[0]->shape, sizeof(int64_t) * (size_t)bnd);
    for (int j = 1; j < k; j++) {
        clt_status st = clt__broadcast_shapes(bnd, bs, parts[j]->ndim, parts[j]->shape, &bnd, bs,
                                              fn);
        if (st != CLT_OK)
            return st;
    }
    clt_tensor *ex[CLT_MAX_DIMS] = {NULL}, *stacked = NULL, *lin = NULL;
    int64_t bn = 1;
    clt_status st = CLT_OK;
    for (int j = 0; j < bnd; j++)
        bn *= bs[j];
    CLT__TRY(clt__temp_new(fn, "the linear indices", t->dev, CLT_INT64, 1, &bn, &lin));
    if (bn > 0) {
        for (int j = 0; j < k; j++)
            CLT__TRY(clt__expand(parts[j], bnd, bs, &ex[j], fn));
        CLT__TRY(clt__stack((const clt_tensor *const *)ex, (size_t)k, 0, &stacked, fn));
        cl_mem err = NULL;
        CLT__TRY(clt__index_errors(t->dev, &err));
        clt__layout L = layout_new(k, t->shape);
        int64_t m = 1;
        for (int j = k - 1; j >= 0; j--) {
            L.s0[j] = m;
            m *= t->shape[j];
        }
        cl_mem mo = clt__mem(lin), mi = clt__mem(stacked);
        cl_int l_k = k, l_op = op;
        cl_ulong count = (cl_ulong)bn;
        clt__arg args[] = {CLT__ARG(mo),  CLT__ARG(mi),    CLT__ARG(l_k), CLT__ARG(l_op),
                           CLT__ARG(err), CLT__ARG(count), {sizeof L, &L}};
        CLT__TRY(launch(t->dev, CLT_INT64, CLT_INT64, "linear_index", count, 7, args, fn));
    }
    info->lin = lin;
    lin = NULL;
    info->ndim = bnd;
    memcpy(info->shape, bs, sizeof(int64_t) * (size_t)bnd);
done:
    for (int j = 0; j < k; j++)
        clt_tensor_free(ex[j]);
    clt_tensor_free(stacked);
    clt_tensor_free(lin);
    return st;
}

/* index_put into dst (contiguous, t's shape, its indexed dimensions
 * first): values broadcast to the indexing result (the broadcast index
 * shape and t's dimensions past k; with info->lead, torch's order: that
 * shape after the first lead of those dimensions), seen as rows of t's
 * trailing elements, copied or added (accumulate) into the rows that
 * info->lin names, in index order. */
static clt_status put_into(clt_tensor *dst, const clt_tensor *values, int k, bool accumulate,
                           clt__index_op op, clt__put_info *info, const char *fn)
{
    int rest = dst->ndim - k, nd = info->ndim + rest, bnd = info->ndim, lead = info->lead;
    char s1[160], s2[160];
    if (nd > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: the indexing result would have %d dimensions; at most %d "
                          "supported",
                          fn, nd, CLT_MAX_DIMS);
    memcpy(info->shape + info->ndim, dst->shape + k, sizeof(int64_t) * (size_t)rest);
    info->ndim = nd;
    info->rows = 1;
    info->cols = 1;
    for (int j = 0; j < dst->ndim; j++)
        *(j < k ? &info->rows : &info->cols) *= dst->shape[j];
    /* torch's shape (rs) and the order that takes it to info->shape (q). */
    int vn = 0, q[CLT_MAX_DIMS];
    int64_t vs[CLT_MAX_DIMS], rs[CLT_MAX_DIMS] = {0};
    for (int j = 0; j < nd; j++) {
        q[j] = j < bnd ? lead + j : j < bnd + lead ? j - bnd : j;
        rs[q[j]] = info->shape[j];
    }
    clt_status st = clt__broadcast_shapes(values->ndim, values->shape, nd, rs, &vn, vs, fn);
    bool fits = st == CLT_OK && vn == nd;
    for (int j = 0; fits && j < nd; j++)
        fits = vs[j] == rs[j];
    if (!fits)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: shape mismatch: value tensor of shape %s cannot be broadcast to "
                          "indexing result of shape %s",
                          fn, shape_of(s1, sizeof s1, values),
                          clt__shape_str(s2, sizeof s2, nd, rs));
    clt_tensor *d2 = NULL, *ve = NULL, *vp = NULL, *v2 = NULL;
    int64_t bn = info->lin->numel, ds[2] = {info->rows, info->cols}, dst2[2] = {info->cols, 1};
    int64_t vs2[2] = {bn, info->cols};
    if (bn == 0 || info->cols == 0)
        return CLT_OK;
    CLT__TRY(clt__tensor_view(dst, 2, ds, dst2, dst->offset, &d2));
    CLT__TRY(clt__expand(values, nd, rs, &ve, fn));
    CLT__TRY(clt__permute(ve, nd, q, &vp, fn));
    CLT__TRY(clt__reshape(vp, 2, vs2, &v2, fn));
    CLT__TRY(scatter_into(d2, 0, info->lin, v2, INDEX_ADD, accumulate, 1, op, false, fn));
done:
    clt_tensor_free(d2);
    clt_tensor_free(ve);
    clt_tensor_free(vp);
    clt_tensor_free(v2);
    return st;
}

static clt_status put_checks(const clt_tensor *t, const clt_tensor *const *indices, int n,
                             const clt_tensor *values, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(indices, fn);
    CLT__REQUIRE_ARG(values, fn);
    if (n < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: at least one index tensor needed, got %d",
                          fn, n);
    clt_status st = clt__same_device(t, values, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st == CLT_OK && t->dtype != values->dtype)
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: Index put requires the source and destination dtypes match, got %s "
                        "for the destination and %s for the source",
                        fn, clt_dtype_name(t->dtype), clt_dtype_name(values->dtype));
    return st;
}

/* The indexed dimensions of t first, in order, then the others (perm), and
 * where torch puts the indexed result's dimensions (info->lead: after the
 * dimensions before the first indexed one when the indexed ones are
 * adjacent, else first); *tp the view of t in that order. */
static clt_status put_order(const clt_tensor *t, const int *dims, int k, clt__put_info *info,
                            clt_tensor **tp, const char *fn)
{
    bool adjacent = true, taken[CLT_MAX_DIMS] = {false};
    int m = k;
    for (int j = 0; j < k; j++) {
        info->perm[j] = dims[j];
        taken[dims[j]] = true;
        adjacent = adjacent && (j == 0 || dims[j] == dims[j - 1] + 1);
    }
    for (int d = 0; d < t->ndim; d++)
        if (!taken[d])
            info->perm[m++] = d;
    info->lead = adjacent ? dims[0] : 0;
    info->k = k;
    info->permuted = dims[0] != 0 || !adjacent;
    if (!info->permuted) {
        /* a handle of its own, as put_parts' */
        return clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, tp);
    }
    return clt__permute(t, t->ndim, info->perm, tp, fn);
}

/* index_put of t's view tp (put_order) into dst, tp's contiguous copy or
 * tp itself. */
static clt_status put(const clt_tensor *tp, clt_tensor *dst, clt_tensor *const *parts, int k,
                      const clt_tensor *values, bool accumulate, clt__index_op op,
                      clt__put_info *info, const char *fn)
{
    clt_status st = put_places(tp, parts, k, op, info, fn);
    if (st == CLT_OK)
        st = put_into(dst, values, k, accumulate, op, info, fn);
    return st;
}

/* dst, in put_order's order, back in t's (a view). */
static clt_status put_back(const clt_tensor *dst, const clt__put_info *info, clt_tensor **out,
                           const char *fn)
{
    int inv[CLT_MAX_DIMS];
    for (int j = 0; j < dst->ndim; j++)
        inv[info->perm[j]] = j;
    return clt__permute(dst, dst->ndim, inv, out, fn);
}

clt_status clt__index_put(const clt_tensor *t, const clt_tensor *const *indices, int n,
                          const clt_tensor *values, bool accumulate, clt_tensor **out,
                          clt__put_info *info, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt__put_info mine = {0};
    clt__put_info *pi = info ? info : &mine;
    clt_status st = put_checks(t, indices, n, values, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *parts[CLT_MAX_DIMS] = {NULL}, *tp = NULL, *r = NULL, *back = NULL;
    int k = 0, dims[CLT_MAX_DIMS];
    CLT__TRY(put_parts(t, indices, n, parts, &k, dims, fn));
    CLT__TRY(put_order(t, dims, k, pi, &tp, fn));
    CLT__TRY(clt__clone(tp, &r, fn));
    CLT__TRY(put(tp, r, parts, k, values, accumulate, CLT__IDX_INDEX_PUT, pi, fn));
    if (pi->permuted) {
        CLT__TRY(put_back(r, pi, &back, fn));
        clt_tensor_free(r);
        r = NULL;
        CLT__TRY(clt__contiguous(back, &r));
    }
    *out = r;
    r = NULL;
done:
    for (int j = 0; j < k; j++)
        clt_tensor_free(parts[j]);
    clt_tensor_free(tp);
    clt_tensor_free(r);
    clt_tensor_free(back);
    if (st != CLT_OK || info == NULL) {
        clt_tensor_free(pi->lin);
        pi->lin = NULL;
    }
    return finish(st);
}

clt_status clt__index_put_(clt_tensor *t, const clt_tensor *const *indices, int n,
                           const clt_tensor *values, bool accumulate)
{
    const char *fn = "clt_index_put_";
    clt_status st = put_checks(t, indices, n, values, fn);
    if (st == CLT_OK)
        st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    clt__put_info info = {0};
    clt_tensor *parts[CLT_MAX_DIMS] = {NULL}, *tv = NULL, *c = NULL, *tp = NULL;
    const clt_tensor *uv;
    int k = 0, dims[CLT_MAX_DIMS];
    CLT__TRY(put_parts(t, indices, n, parts, &k, dims, fn));
    CLT__TRY(put_order(t, dims, k, &info, &tp, fn));
    bool direct = clt__is_contiguous(tp);
    CLT__TRY(unaliased(t, values, &tv, &uv, fn));
    if (!direct)
        CLT__TRY(clt__clone(tp, &c, fn));
    CLT__TRY(put(tp, direct ? tp : c, parts, k, uv, accumulate, CLT__IDX_INDEX_PUT_, &info, fn));
    if (!direct)
        CLT__TRY(clt__copy_strided(tp, c, fn));
    clt__version_bump(t);
done:
    for (int j = 0; j < k; j++)
        clt_tensor_free(parts[j]);
    clt_tensor_free(info.lin);
    clt_tensor_free(tv);
    clt_tensor_free(c);
    clt_tensor_free(tp);
    return finish(st);
}

/* ---- scatter_reduce -------------------------------------------------------------- */

static const char *const reductions[] = {"sum", "prod", "mean", "amax", "amin"};

int clt__scatter_reduce_mode(const char *reduce)
{
    for (int i = 0; reduce && i < 5; i++)
        if (strcmp(reduce, reductions[i]) == 0)
            return i;
    return -1;
}

clt_status clt__scatter_reduce(const clt_tensor *t, int dim, const clt_tensor *index,
                               const clt_tensor *src, const char *reduce, bool include_self,
                               clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(index, fn);
    CLT__REQUIRE_ARG(src, fn);
    CLT__REQUIRE_ARG(reduce, fn);
    int mode = clt__scatter_reduce_mode(reduce), d = 0;
    char q[CLT__QUOTE_SIZE];
    if (mode < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: reduce argument must be either sum, prod, mean, amax or amin, got "
                          "%s",
                          fn, CLT__QUOTE(q, reduce));
    clt_status st = scatter_checks(t, dim, index, src, &d, fn);
    if (st != CLT_OK)
        return st;
    if (t->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: bool tensors are not supported; convert with clt_to_dtype", fn);
    clt_tensor *r = NULL, *count = NULL;
    CLT__TRY(clt__clone(t, &r, fn)); /* contiguous at offset 0: count shares its layout */
    if (index->numel > 0) {
        int64_t rs[CLT_MAX_DIMS], rst[CLT_MAX_DIMS], is[CLT_MAX_DIMS], ist[CLT_MAX_DIMS];
        int64_t ss[CLT_MAX_DIMS], sst[CLT_MAX_DIMS];
        int nd = nonempty(r, rs, rst);
        nonempty(index, is, ist);
        nonempty(src, ss, sst);
        clt__layout L = layout_new(nd, is);
        L.shape[d] = 1;
        memcpy(L.s0, rst, sizeof(int64_t) * (size_t)nd);
        memcpy(L.s1, ist, sizeof(int64_t) * (size_t)nd);
        memcpy(L.s2, sst, sizeof(int64_t) * (size_t)nd);
        L.off1 = index->offset;
        L.off2 = src->offset;
        cl_ulong n = layout_numel(&L);
        CLT__TRY(clt__temp_new(fn, "the counts", r->dev, CLT_INT64, r->ndim, r->shape, &count));
        cl_mem err = NULL;
        CLT__TRY(clt__index_errors(r->dev, &err));
        cl_mem md = clt__mem(r), mi = clt__mem(index), ms = clt__mem(src), mc = clt__mem(count);
        cl_int l_mode = mode, l_self = include_self, l_op = CLT__IDX_SCATTER_REDUCE, l_dim = d;
        cl_long nk = is[d], dst_step = rst[d], idx_step = ist[d], src_step = sst[d];
        cl_long dim_size = rs[d];
        clt__arg args[] = {CLT__ARG(md),       CLT__ARG(mi),       CLT__ARG(ms),
                           CLT__ARG(mc),       CLT__ARG(l_mode),   CLT__ARG(l_self),
                           CLT__ARG(nk),       CLT__ARG(dst_step), CLT__ARG(idx_step),
                           CLT__ARG(src_step), CLT__ARG(dim_size), CLT__ARG(l_op),
                           CLT__ARG(l_dim),    CLT__ARG(err),      CLT__ARG(n),
                           {sizeof L, &L}};
        if (n > 0)
            CLT__TRY(launch(r->dev, r->dtype, CLT_INT64, "scatter_reduce", n, 16, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(count);
    return finish(st);
}

/* ---- searchsorted ---------------------------------------------------------------- */

/* torch's searchsorted_pre_check: a 1-D sequence, or one whose leading
 * dimensions are the values'. */
static clt_status sorted_checks(const clt_tensor *seq, const clt_tensor *values, const char *fn)
{
    char s1[160], s2[160];
    bool ok = seq->ndim == 1;
    if (!ok && seq->ndim > 1 && seq->ndim == values->ndim) {
        ok = true;
        for (int j = 0; j < seq->ndim - 1; j++)
            ok = ok && seq->shape[j] == values->shape[j];
    }
    if (ok)
        return CLT_OK;
    return clt__error(CLT_ERR_SHAPE_MISMATCH,
                      "%s: boundaries tensor should be 1 dimension or the first N-1 dimensions "
                      "of boundaries tensor and input value tensor must match, but we got "
                      "boundaries tensor %s and input value tensor %s",
                      fn, shape_of(s1, sizeof s1, seq), shape_of(s2, sizeof s2, values));
}

clt_status clt__searchsorted(const clt_tensor *seq, const clt_tensor *values, bool right,
                             clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(seq, fn);
    CLT__REQUIRE_ARG(values, fn);
    clt_status st = clt__same_device(seq, values, fn);
    if (st == CLT_OK)
        st = sorted_checks(seq, values, fn);
    clt_dtype dt = clt_promote_types(seq->dtype, values->dtype);
    if (st == CLT_OK && (dt == CLT_DTYPE_COUNT || dt == CLT_BOOL))
        st = clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                        "%s: searchsorted is not implemented for %s boundaries and %s values",
                        fn, clt_dtype_name(seq->dtype), clt_dtype_name(values->dtype));
    if (st == CLT_OK)
        st = clt__check_dtype(seq->dev, dt, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL, *s = NULL, *v = NULL;
    CLT__TRY(clt__result_new(fn, values->dev, CLT_INT64, values->ndim, values->shape, &r));
    if (r->numel > 0) {
        const clt_tensor *us = seq, *uv = values;
        if (seq->dtype != dt)
            CLT__TRY(clt__to_dtype(seq, dt, &s, fn));
        if (values->dtype != dt)
            CLT__TRY(clt__to_dtype(values, dt, &v, fn));
        us = s ? s : seq;
        uv = v ? v : values;
        int64_t vs[CLT_MAX_DIMS], vst[CLT_MAX_DIMS];
        int nd = nonempty(uv, vs, vst);
        clt__layout L = layout_new(nd, vs);
        memcpy(L.s0, vst, sizeof(int64_t) * (size_t)nd);
        for (int j = 0; us->ndim > 1 && j < us->ndim - 1; j++)
            L.s1[j] = us->strides[j];
        L.off0 = uv->offset;
        L.off1 = us->offset;
        cl_mem mo = clt__mem(r), mv = clt__mem(uv), ms = clt__mem(us);
        cl_long len = us->shape[us->ndim - 1], step = us->strides[us->ndim - 1];
        cl_int l_right = right;
        cl_ulong n = (cl_ulong)r->numel;
        clt__arg args[] = {CLT__ARG(mo),  CLT__ARG(mv),      CLT__ARG(ms), CLT__ARG(len),
                           CLT__ARG(step), CLT__ARG(l_right), CLT__ARG(n),  {sizeof L, &L}};
        CLT__TRY(launch(r->dev, dt, CLT_INT64, "searchsorted", n, 8, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(r);
    clt_tensor_free(s);
    clt_tensor_free(v);
    return finish(st);
}

/* searchsorted with torch's keyword arguments: side ("left", "right" or
 * NULL) agreeing with right, the sequence read through sorter (gathered
 * along its last dimension: sorter's values are checked as gather's), the
 * result converted to int32 with out_int32. */
clt_status clt__searchsorted_ex(const clt_tensor *seq, const clt_tensor *values, bool out_int32,
                                bool right, const char *side, const clt_tensor *sorter,
                                clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(seq, fn);
    CLT__REQUIRE_ARG(values, fn);
    char q[CLT__QUOTE_SIZE], s1[160], s2[160];
    if (side && strcmp(side, "left") != 0 && strcmp(side, "right") != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: side can only be 'left' or 'right' but got %s", fn,
                          CLT__QUOTE(q, side));
    if (side && strcmp(side, "left") == 0 && right)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: side and right can't be set to opposites, got side of left while "
                          "right was True",
                          fn);
    right = right || (side && strcmp(side, "right") == 0);
    clt_status st = sorter ? clt__same_device(seq, sorter, fn) : CLT_OK;
    if (st != CLT_OK)
        return st;
    if (sorter && sorter->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: sorter must be a tensor of long dtype but got dtype %s", fn,
                          clt_dtype_name(sorter->dtype));
    if (sorter && (sorter->ndim != seq->ndim ||
                   memcmp(sorter->shape, seq->shape, sizeof(int64_t) * (size_t)seq->ndim)))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: boundary and sorter must have the same size, but got boundary "
                          "tensor %s and got sorter tensor %s",
                          fn, shape_of(s1, sizeof s1, seq), shape_of(s2, sizeof s2, sorter));
    if (out_int32 && seq->ndim > 0 && seq->shape[seq->ndim - 1] >= INT32_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the size of boundaries' last dimension should be less than %d, "
                          "but we got %lld",
                          fn, INT32_MAX, (long long)seq->shape[seq->ndim - 1]);
    clt_tensor *sorted = NULL, *r = NULL;
    if (sorter && seq->ndim > 0)
        CLT__TRY(clt__gather(seq, seq->ndim - 1, sorter, &sorted, fn));
    CLT__TRY(clt__searchsorted(sorted ? sorted : seq, values, right, &r, fn));
    if (out_int32) {
        CLT__TRY(clt__to_dtype(r, CLT_INT32, out, fn));
    } else {
        *out = r;
        r = NULL;
    }
done:
    clt_tensor_free(sorted);
    clt_tensor_free(r);
    return finish(st);
}
