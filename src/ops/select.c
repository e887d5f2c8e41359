/* select.c: the index ops whose result size depends on the values
 * (nonzero, masked_select, masked_scatter, bincount, unique,
 * unique_consecutive and unique along a dimension).  Each reads what decides the size back to the host,
 * so each waits for the device, as torch's do on CUDA; the rest of the work
 * stays on the device, through the ops of src/ops/index.c. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static clt_status finish(clt_status st)
{
    return st == CLT_OK ? clt__ok() : st;
}

static int64_t shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    return n;
}

/* Whether each element of t, broadcast to shape (row-major), is nonzero:
 * *flags (clt__malloc'd, at least one byte) gets 0 or 1 each. */
static clt_status read_flags(const clt_tensor *t, int ndim, const int64_t *shape,
                             unsigned char **flags, const char *fn)
{
    int64_t n = shape_numel(ndim, shape);
    *flags = clt__malloc((size_t)(n > 0 ? n : 1));
    if (*flags == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld flags", fn, (long long)n);
    if (n == 0)
        return CLT_OK;
    clt_tensor *e = NULL, *b = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__expand(t, ndim, shape, &e, fn));
    CLT__TRY(clt__contiguous_as(fn, e, CLT_BOOL, &b));
    CLT__TRY(clt__tensor_read_at(b, *flags, (size_t)n, fn, __builtin_return_address(0)));
done:
    clt_tensor_free(e);
    clt_tensor_free(b);
    if (st != CLT_OK) {
        free(*flags);
        *flags = NULL;
    }
    return st;
}

/* An int64 tensor of shape [rows, cols] (1-D [rows] when cols < 0) from
 * host values. */
static clt_status upload(clt_device *dev, const int64_t *v, int64_t rows, int64_t cols,
                         clt_tensor **out, const char *fn)
{
    int64_t shape[2] = {rows, cols};
    return clt__tensor_from_host_in(fn, dev, CLT_INT64, cols < 0 ? 1 : 2, shape, v, out);
}

clt_status clt__nonzero(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (clt__dtype_is_complex(t->dtype)) { /* nonzero: either part */
        clt_tensor *nz = NULL;
        clt_status st = clt__ne_scalar_in(fn, t, 0.0, &nz);
        if (st == CLT_OK)
            st = clt__nonzero(nz, out, fn);
        clt_tensor_free(nz);
        return st;
    }
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    unsigned char *flags = NULL;
    int64_t *coords = NULL, count = 0, nd = t->ndim;
    CLT__TRY(read_flags(t, t->ndim, t->shape, &flags, fn));
    for (int64_t i = 0; i < t->numel; i++)
        count += flags[i];
    coords = clt__malloc((size_t)(count * nd > 0 ? count * nd : 1) * sizeof *coords);
    if (coords == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld coordinates", fn,
                            (long long)(count * nd)));
    for (int64_t i = 0, row = 0; i < t->numel; i++) {
        if (!flags[i])
            continue;
        for (int64_t d = nd - 1, rest = i; d >= 0; d--) {
            coords[row * nd + d] = rest % t->shape[d];
            rest /= t->shape[d];
        }
        row++;
    }
    CLT__TRY(upload(t->dev, coords, count, nd, out, fn));
done:
    free(flags);
    free(coords);
    return finish(st);
}

clt_status clt__mask_places(const clt_tensor *mask, int ndim, const int64_t *shape,
                            clt_tensor **out, const char *fn)
{
    unsigned char *flags = NULL;
    int64_t *places = NULL, n = shape_numel(ndim, shape), count = 0;
    clt_status st = CLT_OK;
    CLT__TRY(read_flags(mask, ndim, shape, &flags, fn));
    places = clt__malloc((size_t)(n > 0 ? n : 1) * sizeof *places);
    if (places == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld places", fn, (long long)n));
    for (int64_t i = 0; i < n; i++)
        if (flags[i])
            places[count++] = i;
    CLT__TRY(upload(mask->dev, places, count, -1, out, fn));
done:
    free(flags);
    free(places);
    return st;
}

/* The broadcast shape of t and a bool mask on its device. */
static clt_status mask_shape(const clt_tensor *t, const clt_tensor *mask, int *ndim,
                             int64_t *shape, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(mask, fn);
    /* torch 1.13 still takes uint8 masks here (deprecated), not in
     * masked_fill. */
    if (mask->dtype != CLT_BOOL && mask->dtype != CLT_UINT8)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected a bool or uint8 mask, but got mask with dtype %s", fn,
                          clt_dtype_name(mask->dtype));
    clt_status st = clt__same_device(t, mask, fn);
    if (st == CLT_OK)
        st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st == CLT_OK)
        st = clt__broadcast_shapes(t->ndim, t->shape, mask->ndim, mask->shape, ndim, shape, fn);
    return st;
}

clt_status clt__masked_select(const clt_tensor *t, const clt_tensor *mask, clt_tensor **out,
                              clt_tensor **places, int *ndim, int64_t *shape, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    int nd = 0;
    int64_t s[CLT_MAX_DIMS];
    clt_status st = mask_shape(t, mask, &nd, s, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *pos = NULL, *e = NULL, *flat = NULL;
    int64_t n = shape_numel(nd, s);
    CLT__TRY(clt__mask_places(mask, nd, s, &pos, fn));
    CLT__TRY(clt__expand(t, nd, s, &e, fn));
    CLT__TRY(clt__reshape(e, 1, &n, &flat, fn));
    CLT__TRY(clt__index_select(flat, 0, pos, out, fn));
    if (places) {
        *places = pos;
        pos = NULL;
        *ndim = nd;
        memcpy(shape, s, sizeof(int64_t) * (size_t)nd);
    }
done:
    clt_tensor_free(pos);
    clt_tensor_free(e);
    clt_tensor_free(flat);
    return finish(st);
}

clt_status clt__masked_scatter(const clt_tensor *t, const clt_tensor *mask,
                               const clt_tensor *source, clt_tensor **out, clt_tensor **places,
                               const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(source, fn);
    int nd = 0;
    int64_t s[CLT_MAX_DIMS];
    clt_status st = mask_shape(t, mask, &nd, s, fn);
    if (st == CLT_OK)
        st = clt__same_device(t, source, fn);
    if (st == CLT_OK && t->dtype != source->dtype)
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: expected self and source to have same dtypes but got %s and %s", fn,
                        clt_dtype_name(t->dtype), clt_dtype_name(source->dtype));
    if (st != CLT_OK)
        return st;
    clt_tensor *pos = NULL, *e = NULL, *r = NULL, *flat = NULL, *sflat = NULL, *part = NULL;
    int64_t n = shape_numel(nd, s), sn = source->numel;
    CLT__TRY(clt__mask_places(mask, nd, s, &pos, fn));
    if (pos->numel > sn)
        CLT__TRY(clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "%s: Number of elements of source < number of ones in mask (source "
                            "has %lld, mask %lld)",
                            fn, (long long)sn, (long long)pos->numel));
    CLT__TRY(clt__expand(t, nd, s, &e, fn));
    CLT__TRY(clt__copy_as(fn, e, t->dtype, &r));
    if (pos->numel > 0) {
        CLT__TRY(clt__reshape(r, 1, &n, &flat, fn));
        CLT__TRY(clt__reshape(source, 1, &sn, &sflat, fn));
        CLT__TRY(clt__narrow(sflat, 0, 0, pos->numel, &part, fn));
        CLT__TRY(clt__index_copy_(flat, 0, pos, part, fn));
    }
    *out = r;
    r = NULL;
    if (places) {
        *places = pos;
        pos = NULL;
    }
done:
    clt_tensor_free(pos);
    clt_tensor_free(e);
    clt_tensor_free(r);
    clt_tensor_free(flat);
    clt_tensor_free(sflat);
    clt_tensor_free(part);
    return finish(st);
}

/* ---- bincount -------------------------------------------------------------------- */

static clt_status bincount_checks(const clt_tensor *t, const clt_tensor *weights,
                                  int64_t minlength, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim != 1 || clt__dtype_category(t->dtype) != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: bincount only supports 1-d non-negative integral inputs (got a %s "
                          "tensor of %d dimensions)",
                          fn, clt_dtype_name(t->dtype), t->ndim);
    if (minlength < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: minlength should be >= 0, got %lld", fn,
                          (long long)minlength);
    if (weights == NULL)
        return CLT_OK;
    clt_status st = clt__same_device(t, weights, fn);
    if (st != CLT_OK)
        return st;
    if (weights->ndim != 1 || weights->shape[0] != t->shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: weights should be 1-d and have the same length as input (input "
                          "has %lld elements, weights %d dimensions)",
                          fn, (long long)t->shape[0], weights->ndim);
    return CLT_OK;
}

/* The largest value of the int64 idx (its smallest refused when
 * negative), read back: the result's size. */
static clt_status bincount_size(const clt_tensor *idx, int64_t minlength, int64_t *size,
                                const char *fn)
{
    *size = minlength;
    if (idx->numel == 0)
        return CLT_OK;
    clt_tensor *lo = NULL, *hi = NULL;
    int64_t vlo = 0, vhi = 0;
    clt_status st = CLT_OK;
    const void *caller = __builtin_return_address(0);
    CLT__TRY(clt__min(idx, &lo, fn));
    CLT__TRY(clt__max(idx, &hi, fn));
    CLT__TRY(clt__tensor_read_at(lo, &vlo, sizeof vlo, fn, caller));
    CLT__TRY(clt__tensor_read_at(hi, &vhi, sizeof vhi, fn, caller));
    if (vlo < 0)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: bincount only supports 1-d non-negative integral inputs (found "
                            "%lld)",
                            fn, (long long)vlo));
    if (vhi + 1 > *size)
        *size = vhi + 1;
done:
    clt_tensor_free(lo);
    clt_tensor_free(hi);
    return st;
}

clt_status clt__bincount(const clt_tensor *t, const clt_tensor *weights, int64_t minlength,
                         clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = bincount_checks(t, weights, minlength, fn);
    if (st != CLT_OK)
        return st;
    /* torch: counts in int64; weights in float32 when they are, else
     * float64. */
    clt_dtype dt = weights == NULL ? CLT_INT64
                                   : weights->dtype == CLT_FLOAT32 ? CLT_FLOAT32 : CLT_FLOAT64;
    CLT__TRY(clt__check_dtype(t->dev, dt, fn));
    clt_tensor *idx = NULL, *z = NULL, *w = NULL, *one = NULL;
    int64_t size = 0, n = t->numel;
    CLT__TRY(clt__to_dtype(t, CLT_INT64, &idx, fn));
    CLT__TRY(bincount_size(idx, minlength, &size, fn));
    CLT__TRY(clt__full(t->dev, dt, 1, &size, 0.0, &z));
    if (n > 0) {
        if (weights)
            CLT__TRY(clt__to_dtype(weights, dt, &w, fn));
        else {
            CLT__TRY(clt__full(t->dev, dt, 0, NULL, 1.0, &one));
            CLT__TRY(clt__expand(one, 1, &n, &w, fn));
        }
        CLT__TRY(clt__index_add(z, 0, idx, w, 1, out, fn));
    } else {
        *out = z;
        z = NULL;
    }
done:
    clt_tensor_free(idx);
    clt_tensor_free(z);
    clt_tensor_free(w);
    clt_tensor_free(one);
    return finish(st);
}

/* ---- unique ---------------------------------------------------------------------- */

/* From the n flags "starts a new value" (flags[0] set): each element's
 * group (gid[n]), each group's first element (first) and its size
 * (counts); *k groups.  The arrays are clt__malloc'd. */
static clt_status groups(const unsigned char *flags, int64_t n, int64_t **gid, int64_t **first,
                         int64_t **counts, int64_t *k, const char *fn)
{
    size_t cap = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
    *gid = clt__malloc(cap);
    *first = clt__malloc(cap);
    *counts = clt__malloc(cap);
    if (!*gid || !*first || !*counts)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: groups of %lld elements", fn,
                          (long long)n);
    *k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || flags[i]) {
            (*first)[*k] = i;
            (*counts)[*k] = 0;
            (*k)++;
        }
        (*gid)[i] = *k - 1;
        (*counts)[*k - 1]++;
    }
    return CLT_OK;
}

clt_status clt__unique(const clt_tensor *t, bool consecutive, clt_tensor **values,
                       clt_tensor **inverse, clt_tensor **counts, const char *fn)
{
    CLT__REQUIRE_ARG(values, fn);
    *values = NULL;
    if (inverse)
        *inverse = NULL;
    if (counts)
        *counts = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s is not implemented for complex dtypes",
                          fn);
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *flat = NULL, *sv = NULL, *perm = NULL, *a = NULL, *b = NULL, *ne = NULL;
    clt_tensor *g = NULL, *f = NULL, *c = NULL, *vals = NULL, *inv = NULL, *z = NULL;
    clt_tensor *invflat = NULL;
    unsigned char *flags = NULL;
    int64_t *gid = NULL, *first = NULL, *cnt = NULL, n = t->numel, k = 0;
    CLT__TRY(clt__reshape(t, 1, &n, &flat, fn));
    if (consecutive)
        sv = clt_tensor_retain(flat);
    else
        CLT__TRY(clt__sort(flat, 0, false, &sv, &perm, fn));
    /* flags[i] for i >= 1: sv[i] != sv[i - 1], so that every NaN starts a
     * value of its own. */
    if (n > 1) {
        int64_t m = n - 1;
        CLT__TRY(clt__narrow(sv, 0, 1, m, &a, fn));
        CLT__TRY(clt__narrow(sv, 0, 0, m, &b, fn));
        CLT__TRY(clt__ne_in(fn, a, b, &ne));
        CLT__TRY(read_flags(ne, 1, &m, &flags, fn));
        unsigned char *grown = clt__realloc(flags, (size_t)n, 1); /* m + 1 */
        if (grown == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld flags", fn, (long long)n));
        flags = grown;
        memmove(flags + 1, flags, (size_t)m);
    } else {
        flags = clt__malloc(1);
        if (flags == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: flags", fn));
    }
    flags[0] = 1;
    CLT__TRY(groups(flags, n, &gid, &first, &cnt, &k, fn));
    CLT__TRY(upload(t->dev, first, k, -1, &f, fn));
    CLT__TRY(clt__index_select(sv, 0, f, &vals, fn));
    if (counts)
        CLT__TRY(upload(t->dev, cnt, k, -1, &c, fn));
    if (inverse) {
        CLT__TRY(upload(t->dev, gid, n, -1, &g, fn));
        if (!consecutive && n > 0) {
            CLT__TRY(clt__full(t->dev, CLT_INT64, 1, &n, 0.0, &z));
            CLT__TRY(clt__scatter(z, 0, perm, g, &invflat, fn));
        } else {
            invflat = clt_tensor_retain(g);
        }
        CLT__TRY(clt__reshape(invflat, t->ndim, t->shape, &inv, fn));
    }
    *values = vals;
    vals = NULL;
    if (inverse) {
        *inverse = inv;
        inv = NULL;
    }
    if (counts) {
        *counts = c;
        c = NULL;
    }
done:
    free(flags);
    free(gid);
    free(first);
    free(cnt);
    clt_tensor *tmp[] = {flat, sv, perm, a, b, ne, g, f, c, vals, inv, z, invflat};
    for (size_t i = 0; i < sizeof tmp / sizeof *tmp; i++)
        clt_tensor_free(tmp[i]);
    return finish(st);
}

/* ---- unique along a dimension ---------------------------------------------------- */

/* n rows of m elements of one dtype, contiguous on the host. */
typedef struct rows {
    const unsigned char *data;
    int64_t m;
    size_t esize;
    clt_dtype dtype;
} rows;

/* The order of two elements: by value, NaN after every number (and level
 * with another NaN, for the order only); int64 compared as integers. */
static int elem_cmp(const rows *r, const unsigned char *a, const unsigned char *b)
{
    if (r->dtype == CLT_INT64) {
        int64_t x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return (x > y) - (x < y);
    }
    double x = clt__element_to_double(r->dtype, a), y = clt__element_to_double(r->dtype, b);
    if (x != x || y != y)
        return (x != x) - (y != y);
    return (x > y) - (x < y);
}

/* Lexicographic order of rows i and j. */
static int row_cmp(const rows *r, int64_t i, int64_t j)
{
    size_t len = (size_t)r->m * r->esize;
    for (int64_t e = 0; e < r->m; e++) {
        int c = elem_cmp(r, r->data + (size_t)i * len + (size_t)e * r->esize,
                         r->data + (size_t)j * len + (size_t)e * r->esize);
        if (c != 0)
            return c;
    }
    return 0;
}

/* Whether rows i and j are equal element by element (a NaN equals
 * nothing, as clt_unique has it). */
static bool row_eq(const rows *r, int64_t i, int64_t j)
{
    size_t len = (size_t)r->m * r->esize;
    for (int64_t e = 0; e < r->m; e++) {
        const unsigned char *a = r->data + (size_t)i * len + (size_t)e * r->esize;
        const unsigned char *b = r->data + (size_t)j * len + (size_t)e * r->esize;
        if (elem_cmp(r, a, b) != 0)
            return false;
        double x = r->dtype == CLT_INT64 ? 0 : clt__element_to_double(r->dtype, a);
        if (x != x) /* NaN, level with b's for the order */
            return false;
    }
    return true;
}

/* Sorts idx[0..n) by row_cmp, stably (merge sort through tmp). */
static void sort_rows(const rows *r, int64_t *idx, int64_t *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    sort_rows(r, idx, tmp, h);
    sort_rows(r, idx + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = row_cmp(r, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

clt_status clt__unique_dim(const clt_tensor *t, int dim, clt_tensor **values,
                           clt_tensor **inverse, clt_tensor **counts, const char *fn)
{
    CLT__REQUIRE_ARG(values, fn);
    *values = NULL;
    if (inverse)
        *inverse = NULL;
    if (counts)
        *counts = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (clt__dtype_is_complex(t->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s is not implemented for complex dtypes",
                          fn);
    int d = 0;
    clt_status st = clt__check_dtype(t->dev, t->dtype, fn);
    if (st == CLT_OK && t->ndim == 0)
        st = clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                        "%s: Dimension specified as %d but tensor has no dimensions", fn, dim);
    if (st == CLT_OK)
        st = clt__wrap_dim(dim, t->ndim, &d, fn);
    for (int j = 0; st == CLT_OK && j < t->ndim; j++)
        if (j != d && t->shape[j] == 0)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: There are 0 sized dimensions, and they aren't selected, so "
                            "unique cannot be applied",
                            fn);
    if (st != CLT_OK)
        return st;
    int perm[CLT_MAX_DIMS];
    for (int j = 0; j < t->ndim; j++)
        perm[j] = j == 0 ? d : j == d ? 0 : j; /* torch's transpose(dim, 0) */
    int64_t n = t->shape[d], *idx = NULL, *tmp = NULL;
    int64_t *gid = NULL, *first = NULL, *cnt = NULL, k = 0;
    size_t esize = clt_dtype_size(t->dtype), bytes = (size_t)t->numel * esize;
    unsigned char *data = NULL, *flags = NULL;
    clt_tensor *mv = NULL, *c = NULL, *f = NULL, *vals = NULL, *inv = NULL, *cn = NULL;
    CLT__TRY(clt__permute(t, t->ndim, perm, &mv, fn));
    CLT__TRY(clt__contiguous(mv, &c));
    data = clt__malloc(bytes ? bytes : 1);
    idx = clt__malloc((size_t)(n ? n : 1) * sizeof *idx);
    tmp = clt__malloc((size_t)(n ? n : 1) * sizeof *tmp);
    flags = clt__malloc((size_t)(n ? n : 1));
    if (!data || !idx || !tmp || !flags)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld rows", fn, (long long)n));
    if (bytes > 0)
        CLT__TRY(clt__tensor_read_at(c, data, bytes, fn, __builtin_return_address(0)));
    rows r = {data, n > 0 ? t->numel / n : 0, esize, t->dtype};
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    sort_rows(&r, idx, tmp, n);
    for (int64_t i = 0; i < n; i++)
        flags[i] = i == 0 || !row_eq(&r, idx[i - 1], idx[i]);
    CLT__TRY(groups(flags, n, &gid, &first, &cnt, &k, fn));
    /* each value's first row in t, and each row's value */
    for (int64_t g = 0; g < k; g++)
        first[g] = idx[first[g]];
    for (int64_t i = 0; i < n; i++)
        tmp[idx[i]] = gid[i];
    CLT__TRY(upload(t->dev, first, k, -1, &f, fn));
    CLT__TRY(clt__index_select(t, d, f, &vals, fn));
    if (inverse)
        CLT__TRY(upload(t->dev, tmp, n, -1, &inv, fn));
    if (counts)
        CLT__TRY(upload(t->dev, cnt, k, -1, &cn, fn));
    *values = vals;
    vals = NULL;
    if (inverse) {
        *inverse = inv;
        inv = NULL;
    }
    if (counts) {
        *counts = cn;
        cn = NULL;
    }
done:
    free(data);
    free(idx);
    free(tmp);
    free(flags);
    free(gid);
    free(first);
    free(cnt);
    clt_tensor *tensors[] = {mv, c, f, vals, inv, cn};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++)
        clt_tensor_free(tensors[i]);
    return finish(st);
}
