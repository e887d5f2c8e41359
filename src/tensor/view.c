/* view.c: views and layout ops (reshape, view, transpose, permute, narrow,
 * slice, squeeze, unsqueeze, expand, flatten, contiguous, as_strided) and
 * cat/stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static clt_status finish(clt_status st)
{
    return st == CLT_OK ? clt__ok() : st;
}


static void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 1 ? shape[d] : 1;
    }
}

/* Resolves one -1 in `shape` against numel; PyTorch's wording on failure. */
static clt_status infer_shape(const clt_tensor *t, int ndim, const int64_t *shape, int64_t *res,
                              const char *fn)
{
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d dimensions asked; at most %d supported",
                          fn, ndim, CLT_MAX_DIMS);
    if (ndim > 0 && shape == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: shape is NULL for %d dimensions", fn, ndim);
    char s[160];
    int infer = -1;
    int64_t known = 1, most = 1; /* most: zeros counted as 1, as clt__check_shape */
    bool overflow = false;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] > 0 && __builtin_mul_overflow(most, shape[d], &most))
            overflow = true;
        if (shape[d] == -1) {
            if (infer >= 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: only one dimension can be inferred (shape %s)", fn,
                                  clt__shape_str(s, sizeof s, ndim, shape));
            infer = d;
        } else if (shape[d] < 0) {
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid shape dimension %lld in %s",
                              fn, (long long)shape[d], clt__shape_str(s, sizeof s, ndim, shape));
        } else if (__builtin_mul_overflow(known, shape[d], &known)) {
            overflow = true;
        }
        res[d] = shape[d];
    }
    bool ok = !overflow;
    if (ok && infer >= 0) {
        if (known == 0 && t->numel == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: cannot reshape tensor of 0 elements into shape %s because "
                              "the unspecified dimension size -1 can be any value and is "
                              "ambiguous",
                              fn, clt__shape_str(s, sizeof s, ndim, shape));
        ok = known != 0 && t->numel % known == 0;
        if (ok)
            res[infer] = t->numel / known;
    } else if (ok) {
        ok = known == t->numel;
    }
    if (!ok)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: shape '%s' is invalid for input of size %lld", fn,
                          clt__shape_str(s, sizeof s, ndim, shape), (long long)t->numel);
    return CLT_OK;
}

/* Strides that let t's storage be read under `shape` without a copy, after
 * PyTorch's computeStride: each run of dims that is contiguous in t must
 * be split or merged only inside itself. */
static bool view_strides(const clt_tensor *t, int ndim, const int64_t *shape, int64_t *strides)
{
    if (t->numel <= 1) {
        contiguous_strides(ndim, shape, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = t->strides[t->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int td = t->ndim - 1; td >= 0; td--) {
        tensor_numel *= t->shape[td];
        if (td == 0 ||
            (t->shape[td - 1] != 1 && t->strides[td - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel)
                return false;
            if (td > 0) {
                chunk_base = t->strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

static clt_status reshape_impl(const clt_tensor *t, int ndim, const int64_t *shape_in,
                               bool allow_copy, clt_tensor **out, const char *fn)
{
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    clt_status st = infer_shape(t, ndim, shape_in, shape, fn);
    if (st != CLT_OK)
        return st;
    if (view_strides(t, ndim, shape, strides))
        return clt__tensor_view(t, ndim, shape, strides, t->offset, out);
    if (!allow_copy) {
        char s1[160], s2[160], s3[160];
        return clt__error(CLT_ERR_NOT_CONTIGUOUS,
                          "%s: view size is not compatible with input tensor's size and stride "
                          "(at least one dimension spans across two contiguous subspaces): a "
                          "tensor of shape %s and strides %s cannot be viewed as %s; use "
                          "clt_reshape instead",
                          fn, clt__shape_str(s1, sizeof s1, t->ndim, t->shape),
                          clt__shape_str(s2, sizeof s2, t->ndim, t->strides),
                          clt__shape_str(s3, sizeof s3, ndim, shape));
    }
    clt_tensor *c = NULL;
    st = clt__copy_as(fn, t, t->dtype, &c); /* the result's data */
    if (st != CLT_OK)
        return st;
    contiguous_strides(ndim, shape, strides);
    st = clt__tensor_view(c, ndim, shape, strides, c->offset, out);
    clt_tensor_free(c);
    return st;
}

clt_status clt__view(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out,
                     const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    return finish(reshape_impl(t, ndim, shape, false, out, fn));
}

clt_status clt__reshape(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out,
                        const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    return finish(reshape_impl(t, ndim, shape, true, out, fn));
}

clt_status clt__flatten(const clt_tensor *t, int start_dim, int end_dim, clt_tensor **out,
                        const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int n = t->ndim > 0 ? t->ndim : 1, s = 0, e = 0;
    clt_status st = clt__wrap_dim(start_dim, n, &s, fn);
    if (st == CLT_OK)
        st = clt__wrap_dim(end_dim, n, &e, fn);
    if (st != CLT_OK)
        return st;
    if (s > e)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: flatten() has invalid args: start_dim (%d) cannot come after "
                          "end_dim (%d)",
                          fn, start_dim, end_dim);
    if (t->ndim == 0) {
        int64_t one = 1;
        return finish(reshape_impl(t, 1, &one, true, out, fn));
    }
    if (s == e)
        return finish(clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out));
    int64_t shape[CLT_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < s; d++)
        shape[m++] = t->shape[d];
    int64_t merged = 1;
    for (int d = s; d <= e; d++)
        merged *= t->shape[d];
    shape[m++] = merged;
    for (int d = e + 1; d < t->ndim; d++)
        shape[m++] = t->shape[d];
    return finish(reshape_impl(t, m, shape, true, out, fn));
}

clt_status clt__transpose(const clt_tensor *t, int d0, int d1, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int n = t->ndim > 0 ? t->ndim : 1, a = 0, b = 0;
    clt_status st = clt__wrap_dim(d0, n, &a, fn);
    if (st == CLT_OK)
        st = clt__wrap_dim(d1, n, &b, fn);
    if (st != CLT_OK)
        return st;
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        shape[a] = t->shape[b];
        shape[b] = t->shape[a];
        strides[a] = t->strides[b];
        strides[b] = t->strides[a];
    }
    return finish(clt__tensor_view(t, t->ndim, shape, strides, t->offset, out));
}

clt_status clt__permute(const clt_tensor *t, int ndim, const int *dims, clt_tensor **out,
                        const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (ndim != t->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: number of dims don't match in permute: %d dims given for a "
                          "tensor of %d dimensions",
                          fn, ndim, t->ndim);
    if (ndim > 0 && dims == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'dims' is NULL", fn);
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    bool seen[CLT_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d = 0;
        clt_status st = clt__wrap_dim(dims[i], ndim, &d, fn);
        if (st != CLT_OK)
            return st;
        if (seen[d])
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: permute(): duplicate dims are not allowed (dim %d appears "
                              "twice)",
                              fn, d);
        seen[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return finish(clt__tensor_view(t, ndim, shape, strides, t->offset, out));
}

/* The dim argument of narrow and slice: they do not apply to scalars. */
static clt_status slicing_dim(const clt_tensor *t, int dim, int *d, const char *fn,
                              const char *what)
{
    if (t->ndim == 0)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE, "%s: %s() cannot be applied to a 0-dim tensor",
                          fn, what);
    return clt__wrap_dim(dim, t->ndim, d, fn);
}

clt_status clt__narrow(const clt_tensor *t, int dim, int64_t start, int64_t length,
                      clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int d = 0;
    clt_status st = slicing_dim(t, dim, &d, fn, "narrow");
    if (st != CLT_OK)
        return st;
    int64_t size = t->shape[d];
    if (start < -size || start > size)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: start out of range (expected to be in range of [%lld, %lld], but "
                          "got %lld)",
                          fn, (long long)-size, (long long)size, (long long)start);
    if (start < 0)
        start += size;
    if (length < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: narrow(): length must be non-negative, got %lld", fn,
                          (long long)length);
    if (length > size - start)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: start (%lld) + length (%lld) exceeds dimension size (%lld)", fn,
                          (long long)start, (long long)length, (long long)size);
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[d] = length;
    return finish(clt__tensor_view(t, t->ndim, shape, t->strides,
                                   t->offset + start * t->strides[d], out));
}

clt_status clt__slice(const clt_tensor *t, int dim, int64_t start, int64_t end, int64_t step,
                     clt_tensor **out)
{
    static const char fn[] = "clt_slice";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int d = 0;
    clt_status st = slicing_dim(t, dim, &d, fn, "slice");
    if (st != CLT_OK)
        return st;
    if (step <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: slice step must be positive, got %lld",
                          fn, (long long)step);
    int64_t size = t->shape[d];
    if (start < 0)
        start = start < -size ? 0 : start + size;
    if (end < 0)
        end = end < -size ? 0 : end + size;
    if (start > size)
        start = size;
    if (end > size)
        end = size;
    if (end < start)
        end = start;
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    shape[d] = end == start ? 0 : (end - start - 1) / step + 1;
    if (__builtin_mul_overflow(t->strides[d], step, &strides[d]))
        strides[d] = t->strides[d]; /* at most one element is reached */
    return finish(clt__tensor_view(t, t->ndim, shape, strides, t->offset + start * t->strides[d],
                                   out));
}

clt_status clt__squeeze(const clt_tensor *t, int dim, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, t->ndim > 0 ? t->ndim : 1, &d, fn);
    if (st != CLT_OK)
        return st;
    if (t->ndim == 0 || t->shape[d] != 1)
        return finish(clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out));
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d)
            continue;
        shape[m] = t->shape[i];
        strides[m++] = t->strides[i];
    }
    return finish(clt__tensor_view(t, m, shape, strides, t->offset, out));
}

clt_status clt__squeeze_all(const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_squeeze_all");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_squeeze_all");
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 1)
            continue;
        shape[m] = t->shape[i];
        strides[m++] = t->strides[i];
    }
    return finish(clt__tensor_view(t, m, shape, strides, t->offset, out));
}

clt_status clt__unsqueeze(const clt_tensor *t, int dim, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, t->ndim + 1, &d, fn);
    if (st != CLT_OK)
        return st;
    if (t->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: a tensor of %d dimensions cannot gain one; at most %d supported",
                          fn, t->ndim, CLT_MAX_DIMS);
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
        } else {
            shape[i] = t->shape[j];
            strides[i] = t->strides[j++];
        }
    }
    return finish(clt__tensor_view(t, t->ndim + 1, shape, strides, t->offset, out));
}

clt_status clt__expand(const clt_tensor *t, int ndim, const int64_t *shape, clt_tensor **out,
                       const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d dimensions asked; at most %d supported",
                          fn, ndim, CLT_MAX_DIMS);
    if (ndim > 0 && shape == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: shape is NULL for %d dimensions", fn, ndim);
    char s1[160], s2[160];
    if (ndim < t->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the number of sizes provided (%d) must be greater or equal to the "
                          "number of dimensions in the tensor (%d): target sizes %s, tensor "
                          "sizes %s",
                          fn, ndim, t->ndim, clt__shape_str(s1, sizeof s1, ndim, shape),
                          clt__shape_str(s2, sizeof s2, t->ndim, t->shape));
    int64_t res[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        if (i < lead) {
            if (shape[i] < 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: the expanded size of the tensor (%lld) isn't allowed in a "
                                  "leading, non-existing dimension %d",
                                  fn, (long long)shape[i], i);
            res[i] = shape[i];
            strides[i] = 0;
            continue;
        }
        int64_t have = t->shape[i - lead];
        if (shape[i] == -1 || shape[i] == have) {
            res[i] = have;
            strides[i] = t->strides[i - lead];
        } else if (have == 1 && shape[i] >= 0) {
            res[i] = shape[i];
            strides[i] = 0;
        } else {
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: the expanded size of the tensor (%lld) must match the "
                              "existing size (%lld) at non-singleton dimension %d.  Target "
                              "sizes: %s.  Tensor sizes: %s",
                              fn, (long long)shape[i], (long long)have, i,
                              clt__shape_str(s1, sizeof s1, ndim, shape),
                              clt__shape_str(s2, sizeof s2, t->ndim, t->shape));
        }
    }
    clt_status st = clt__check_shape(ndim, res, fn);
    if (st != CLT_OK)
        return st;
    return finish(clt__tensor_view(t, ndim, res, strides, t->offset, out));
}

clt_status clt__contiguous(const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_contiguous");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_contiguous");
    if (clt__is_contiguous(t))
        return finish(clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out));
    return finish(clt__copy_as("clt_contiguous", t, t->dtype, out));
}

/* ---- cat and stack ---------------------------------------------------------- */

/* PyTorch skips 1-D empty tensors in cat whatever the other shapes. */
static bool legacy_empty(const clt_tensor *t)
{
    return t->ndim == 1 && t->shape[0] == 0;
}

static clt_status check_list(const clt_tensor *const *ts, size_t n, const char *fn)
{
    CLT__REQUIRE_ARG(ts, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: expected a non-empty list of tensors",
                          fn);
    for (size_t i = 0; i < n; i++) {
        if (ts[i] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu of the list is NULL", fn, i);
        clt_status st = clt__same_device(ts[0], ts[i], fn);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

static clt_status cat_impl(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out,
                           const char *fn)
{
    const clt_tensor *ref = NULL;
    clt_dtype dtype = ts[0]->dtype;
    for (size_t i = 0; i < n; i++) {
        if (ts[i]->ndim == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: zero-dimensional tensor (at position %zu) cannot be "
                              "concatenated",
                              fn, i);
        dtype = clt_promote_types(dtype, ts[i]->dtype);
        if (ref == NULL && !legacy_empty(ts[i]))
            ref = ts[i];
    }
    if (ref == NULL)
        ref = ts[0];
    int d = 0;
    clt_status st = clt__wrap_dim(dim, ref->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, ref->shape, sizeof shape);
    shape[d] = 0;
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *t = ts[i];
        if (legacy_empty(t) && t != ref)
            continue;
        char s1[160], s2[160];
        if (t->ndim != ref->ndim)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Tensors must have same number of dimensions: got %d and %d "
                              "(shapes %s and %s, tensor number %zu in the list)",
                              fn, ref->ndim, t->ndim,
                              clt__shape_str(s1, sizeof s1, ref->ndim, ref->shape),
                              clt__shape_str(s2, sizeof s2, t->ndim, t->shape), i);
        for (int k = 0; k < t->ndim; k++)
            if (k != d && t->shape[k] != ref->shape[k])
                return clt__error(CLT_ERR_SHAPE_MISMATCH,
                                  "%s: Sizes of tensors must match except in dimension %d. "
                                  "Expected size %lld but got size %lld for tensor number %zu "
                                  "in the list (shapes %s and %s)",
                                  fn, d, (long long)ref->shape[k], (long long)t->shape[k], i,
                                  clt__shape_str(s1, sizeof s1, ref->ndim, ref->shape),
                                  clt__shape_str(s2, sizeof s2, t->ndim, t->shape));
        if (__builtin_add_overflow(shape[d], t->shape[d], &shape[d])) {
            char s1[160];
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: the sizes in dimension %d add up past the int64 range at "
                              "tensor number %zu in the list (shape %s)",
                              fn, d, i, clt__shape_str(s1, sizeof s1, t->ndim, t->shape));
        }
    }
    st = clt__check_dtype(ref->dev, dtype, fn);
    if (st != CLT_OK)
        return st;

    clt_tensor *r = NULL, *slot = NULL;
    CLT__TRY(clt__result_new(fn, ref->dev, dtype, ref->ndim, shape, &r));
    int64_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        const clt_tensor *t = ts[i];
        if ((legacy_empty(t) && t != ref) || t->numel == 0) {
            pos += legacy_empty(t) ? 0 : t->shape[d];
            continue;
        }
        CLT__TRY(clt__tensor_view(r, r->ndim, t->shape, r->strides, pos * r->strides[d], &slot));
        CLT__TRY(clt__copy_strided(slot, t, fn));
        clt_tensor_free(slot);
        slot = NULL;
        pos += t->shape[d];
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(slot);
    clt_tensor_free(r);
    return st;
}

clt_status clt__cat(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out,
                    const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_list(ts, n, fn);
    if (st != CLT_OK)
        return st;
    return finish(cat_impl(ts, n, dim, out, fn));
}

clt_status clt__stack(const clt_tensor *const *ts, size_t n, int dim, clt_tensor **out,
                      const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_list(ts, n, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *t0 = ts[0];
    for (size_t i = 1; i < n; i++) {
        bool same = ts[i]->ndim == t0->ndim;
        for (int k = 0; same && k < t0->ndim; k++)
            same = ts[i]->shape[k] == t0->shape[k];
        if (!same) {
            char s1[160], s2[160];
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: stack expects each tensor to be equal size, but got %s at "
                              "entry 0 and %s at entry %zu",
                              fn, clt__shape_str(s1, sizeof s1, t0->ndim, t0->shape),
                              clt__shape_str(s2, sizeof s2, ts[i]->ndim, ts[i]->shape), i);
        }
    }
    int d = 0;
    st = clt__wrap_dim(dim, t0->ndim + 1, &d, fn);
    if (st != CLT_OK)
        return st;
    if (t0->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS,
                          "%s: stacking tensors of %d dimensions needs %d; at most %d supported",
                          fn, t0->ndim, t0->ndim + 1, CLT_MAX_DIMS);
    clt_tensor **u = clt__calloc(n, sizeof *u);
    if (u == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t i = 0; i < n; i++)
        CLT__TRY(clt__unsqueeze(ts[i], d, &u[i], fn));
    st = cat_impl((const clt_tensor *const *)u, n, d, out, fn);
done:
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(u[i]);
    free(u);
    return finish(st);
}

/* ---- splits and diagonals ------------------------------------------------------ */

/* The views of t along dim d (wrapped) of the k sizes, into a new array
 * *outs of k handles (k may be 0).  On failure nothing is handed out. */
static clt_status split_views(const clt_tensor *t, int d, const int64_t *sizes, size_t k,
                              clt_tensor ***outs, size_t *n, const char *fn)
{
    clt_tensor **arr = clt__calloc(k ? k : 1, sizeof *arr);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    int64_t at = 0;
    for (size_t i = 0; i < k; i++) {
        CLT__TRY(clt__narrow(t, d, at, sizes[i], &arr[i], fn));
        at += sizes[i];
    }
    *outs = arr;
    *n = k;
    return clt__ok();
done:
    for (size_t i = 0; i < k; i++)
        clt_tensor_free(arr[i]);
    free(arr);
    return st;
}

/* The dim of split and chunk: not for 0-d tensors, as PyTorch. */
static clt_status split_dim(const clt_tensor *t, int dim, int *d, const char *fn, const char *what)
{
    if (t->ndim == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s expects at least a 1-dimensional tensor",
                          fn, what);
    return clt__wrap_dim(dim, t->ndim, d, fn);
}

/* Both outs cleared first, whichever of them is NULL. */
#define SPLIT_ARGS(fn)                                                       \
    if (outs)                                                                \
        *outs = NULL;                                                        \
    if (n)                                                                   \
        *n = 0;                                                              \
    CLT__REQUIRE_ARG(outs, fn);                                              \
    CLT__REQUIRE_ARG(n, fn);                                                 \
    CLT__REQUIRE_ARG(t, fn)

clt_status clt__split_sizes(const clt_tensor *t, const int64_t *sizes, size_t k, int dim,
                            clt_tensor ***outs, size_t *n, const char *fn)
{
    SPLIT_ARGS(fn);
    int d = 0;
    clt_status st = split_dim(t, dim, &d, fn, "split_with_sizes");
    if (st != CLT_OK)
        return st;
    if (k > 0 && sizes == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'sizes' is NULL for %zu sizes", fn,
                          k);
    int64_t sum = 0;
    bool over = false;
    for (size_t i = 0; i < k; i++) {
        if (sizes[i] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: split_with_sizes expects split_sizes have only non-negative "
                              "entries, but got split_sizes[%zu] = %lld",
                              fn, i, (long long)sizes[i]);
        over = over || __builtin_add_overflow(sum, sizes[i], &sum);
    }
    if (over || sum != t->shape[d])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: split_with_sizes expects split_sizes to sum exactly to %lld (input "
                          "tensor's size at dimension %d), but got %zu sizes summing to %s%lld",
                          fn, (long long)t->shape[d], d, k, over ? "more than " : "",
                          (long long)(over ? INT64_MAX : sum));
    return finish(split_views(t, d, sizes, k, outs, n, fn));
}

/* split (chunks false: pieces of `size`) or chunk (chunks true: `size`
 * pieces at most). */
clt_status clt__split(const clt_tensor *t, int64_t size, int dim, bool chunks, clt_tensor ***outs,
                      size_t *n, const char *fn)
{
    SPLIT_ARGS(fn);
    int d = 0;
    clt_status st = split_dim(t, dim, &d, fn, chunks ? "chunk" : "split");
    if (st != CLT_OK)
        return st;
    int64_t len = t->shape[d];
    if (chunks && size <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: chunk expects `chunks` to be greater than 0, got: %lld", fn,
                          (long long)size);
    if (!chunks && (size < 0 || (size == 0 && len != 0)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: split expects split_size be non-negative, but got split_size=%lld"
                          "%s",
                          fn, (long long)size,
                          size == 0 ? " (split_size can only be 0 if dimension size is 0)" : "");
    int64_t piece = chunks ? len / size + (len % size != 0) : size;
    /* PyTorch: max(ceil(len / piece), 1) pieces; for an empty dimension one
     * empty piece (split) or `chunks` of them (chunk). */
    int64_t count = piece == 0 ? (chunks ? size : 1) : len / piece + (len % piece != 0);
    if (count < 1)
        count = 1;
    if ((uint64_t)count > SIZE_MAX / sizeof(int64_t))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld pieces do not fit host memory", fn,
                          (long long)count);
    int64_t *sizes = clt__malloc((size_t)count * sizeof *sizes);
    if (sizes == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int64_t i = 0; i < count; i++)
        sizes[i] = piece == 0 ? 0 : (i + 1 < count ? piece : len - piece * i);
    st = split_views(t, d, sizes, (size_t)count, outs, n, fn);
    free(sizes);
    return finish(st);
}

clt_status clt__unbind(const clt_tensor *t, int dim, clt_tensor ***outs, size_t *n,
                       const char *fn)
{
    SPLIT_ARGS(fn);
    int d = 0;
    if (t->ndim == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Dimension specified as %d but tensor has "
                          "no dimensions", fn, dim);
    clt_status st = clt__wrap_dim(dim, t->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    int64_t count = t->shape[d];
    if ((uint64_t)count > SIZE_MAX / sizeof(clt_tensor *))
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: %lld slices do not fit host memory", fn,
                          (long long)count);
    clt_tensor **arr = clt__calloc(count ? (size_t)count : 1, sizeof *arr);
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d)
            continue;
        shape[m] = t->shape[i];
        strides[m++] = t->strides[i];
    }
    for (int64_t i = 0; i < count; i++)
        CLT__TRY(clt__tensor_view(t, m, shape, strides, t->offset + i * t->strides[d], &arr[i]));
    *outs = arr;
    *n = (size_t)count;
    return clt__ok();
done:
    for (int64_t i = 0; i < count; i++)
        clt_tensor_free(arr[i]);
    free(arr);
    return clt__error_in(st, fn);
}

clt_status clt__diagonal(const clt_tensor *t, int64_t offset, int dim1, int dim2,
                         clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (t->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: diagonal dimensions requested on a tensor of %d dimensions (it "
                          "needs at least 2)",
                          fn, t->ndim);
    int a = 0, b = 0;
    clt_status st = clt__wrap_dim(dim1, t->ndim, &a, fn);
    if (st == CLT_OK)
        st = clt__wrap_dim(dim2, t->ndim, &b, fn);
    if (st != CLT_OK)
        return st;
    if (a == b)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: diagonal dimensions cannot be identical %d, %d", fn, dim1, dim2);
    int64_t len, off = t->offset;
    if (offset >= 0) {
        len = offset >= t->shape[b] ? 0 : t->shape[b] - offset;
        len = len < t->shape[a] ? len : t->shape[a];
        if (len > 0)
            off += offset * t->strides[b];
    } else {
        len = offset <= -t->shape[a] ? 0 : t->shape[a] + offset;
        len = len < t->shape[b] ? len : t->shape[b];
        if (len > 0)
            off -= offset * t->strides[a];
    }
    int64_t shape[CLT_MAX_DIMS], strides[CLT_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == a || i == b)
            continue;
        shape[m] = t->shape[i];
        strides[m++] = t->strides[i];
    }
    shape[m] = len;
    strides[m++] = t->strides[a] + t->strides[b];
    return finish(clt__tensor_view(t, m, shape, strides, off, out));
}

/* ---- as_strided --------------------------------------------------------------- */

/* The elements a geometry reaches from its offset: 0 when it has none,
 * otherwise 1 + offset + sum (size - 1) * stride; false past int64. */
bool clt__strided_extent(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                         int64_t *extent)
{
    int64_t e = offset, step;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *extent = 0;
            return true;
        }
    }
    for (int d = 0; d < ndim; d++)
        if (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) ||
            __builtin_add_overflow(e, step, &e))
            return false;
    if (__builtin_add_overflow(e, 1, &e))
        return false;
    *extent = e;
    return true;
}

clt_status clt__as_strided(const clt_tensor *t, int ndim, const int64_t *size,
                           const int64_t *stride, const int64_t *storage_offset,
                           clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d dimensions asked; at most %d supported",
                          fn, ndim, CLT_MAX_DIMS);
    if (ndim > 0) {
        CLT__REQUIRE_ARG(size, fn);
        CLT__REQUIRE_ARG(stride, fn);
    }
    char s1[160], s2[160];
    for (int d = 0; d < ndim; d++)
        if (size[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Trying to create tensor with negative dimension %lld: %s", fn,
                              (long long)size[d], clt__shape_str(s1, sizeof s1, ndim, size));
    for (int d = 0; d < ndim; d++)
        if (stride[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: as_strided: Negative strides are not supported at the moment, "
                              "got strides: %s",
                              fn, clt__shape_str(s1, sizeof s1, ndim, stride));
    int64_t offset = storage_offset ? *storage_offset : t->offset;
    if (offset < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Tensor: invalid storage offset %lld", fn,
                          (long long)offset);
    clt_status st = clt__check_shape(ndim, size, fn);
    if (st != CLT_OK)
        return st;
    size_t item = clt_dtype_size(t->dtype);
    int64_t have = t->storage ? (int64_t)(t->storage->bytes / item) : 0, need = 0;
    bool fits = clt__strided_extent(ndim, size, stride, offset, &need);
    if (!fits || need > have)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: setStorage: sizes %s, strides %s, storage offset %lld, and "
                          "itemsize %zu requiring a storage size of %s%lld are out of bounds "
                          "for storage of size %lld",
                          fn, clt__shape_str(s1, sizeof s1, ndim, size),
                          clt__shape_str(s2, sizeof s2, ndim, stride), (long long)offset, item,
                          fits ? "" : "more than ",
                          (long long)(fits && need <= INT64_MAX / (int64_t)item
                                          ? need * (int64_t)item
                                          : INT64_MAX),
                          (long long)(have * (int64_t)item));
    return finish(clt__tensor_view(t, ndim, size, stride, offset, out));
}
