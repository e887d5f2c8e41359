/* index.c: indexing ops (index_select, gather, scatter, scatter_add,
 * index_add, masked_fill, one_hot, embedding): PyTorch's shape and dtype
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
                       int dim, const char *fn)
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
    cl_int l_op = op, l_dim = dim;
    cl_ulong n = (cl_ulong)r->numel;
    clt__arg args[] = {CLT__ARG(mo),   CLT__ARG(ms),    CLT__ARG(mi), CLT__ARG(l_stride),
                       CLT__ARG(l_size), CLT__ARG(l_op), CLT__ARG(l_dim), CLT__ARG(err),
                       CLT__ARG(n),    {sizeof *L, L}};
    return launch(r->dev, r->dtype, index->dtype, "take", n, 10, args, fn);
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
        CLT__TRY(take(r, t, index, &L, tst[d], ts[d], CLT__IDX_INDEX_SELECT, d, fn));
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
        CLT__TRY(take(r, t, index, &L, tst[d], ts[d], CLT__IDX_GATHER, d, fn));
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
                      CLT__IDX_EMBEDDING, 0, fn));
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
 * assign. */
static clt_status scatter_into(clt_tensor *dst, int d, const clt_tensor *index,
                               const clt_tensor *src, scatter_kind kind, bool add, double alpha,
                               clt__index_op op, const char *fn)
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
    cl_int l_add = add, l_op = op, l_dim = d;
    cl_long dst_step = dst_[d], src_step = sst[d], dim_size = ds[d];
    clt__arg args[] = {CLT__ARG(md),       CLT__ARG(mi),       CLT__ARG(ms),
                       {asize, av},        CLT__ARG(l_add),    CLT__ARG(nk),
                       CLT__ARG(dst_step), CLT__ARG(idx_step), CLT__ARG(src_step),
                       CLT__ARG(dim_size), CLT__ARG(l_op),     CLT__ARG(l_dim),
                       CLT__ARG(err),      CLT__ARG(n),        {sizeof L, &L}};
    return launch(dst->dev, dst->dtype, index->dtype, "scatter", n, 15, args, fn);
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

/* In-place writes need a destination whose elements are distinct memory, as
 * PyTorch's assert_no_internal_overlap (an expanded tensor is refused). */
static clt_status writable(const clt_tensor *t, const char *fn)
{
    for (int d = 0; d < t->ndim && t->numel > 0; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: unsupported operation: more than one element of the "
                              "written-to tensor refers to a single memory location (dimension "
                              "%d has stride 0); clone the tensor first",
                              fn, d);
    return CLT_OK;
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
                                  const clt_tensor *src, scatter_kind kind, double alpha,
                                  clt__index_op op, const char *fn)
{
    int d = 0;
    clt_status st = scatter_args(t, dim, index, src, kind, alpha, &d, fn);
    if (st == CLT_OK)
        st = writable(t, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ti = NULL, *ts = NULL;
    const clt_tensor *ui, *us;
    CLT__TRY(unaliased(t, index, &ti, &ui, fn));
    CLT__TRY(unaliased(t, src, &ts, &us, fn));
    CLT__TRY(scatter_into(t, d, ui, us, kind, true, alpha, op, fn));
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
    CLT__TRY(scatter_into(r, d, index, src, kind, add, alpha, op, fn));
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
    return scatter_inplace(t, dim, index, src, SCATTER, 1, CLT__IDX_SCATTER_ADD_,
                           "clt_scatter_add_");
}

clt_status clt__index_add_(clt_tensor *t, int dim, const clt_tensor *index, const clt_tensor *src,
                          double alpha)
{
    return scatter_inplace(t, dim, index, src, INDEX_ADD, alpha, CLT__IDX_INDEX_ADD_,
                           "clt_index_add_");
}

/* ---- masked_fill, one_hot ------------------------------------------------------- */

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
        st = clt__scalar_check(t->dtype, value, CLT__SCALAR_EXACT, fn);
    if (st != CLT_OK)
        return st;
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
