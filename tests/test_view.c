/* test_view.c: views and layout ops against host index arithmetic: shapes,
 * strides, offsets, shared storage (no kernel launched) and values; cat and
 * stack with non-contiguous and mixed-dtype inputs; error cases. */
#include <stdio.h>

#include "helpers.h"

static void assert_strides(const clt_tensor *t, int ndim, const int64_t *strides)
{
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(clt_tensor_strides(t)[d], strides[d], "stride %d: %lld vs %lld", d,
                     (long long)clt_tensor_strides(t)[d], (long long)strides[d]);
}

/* Values of a view read back against base[offset + sum(idx * strides)] on
 * the host, with base the iota 0, 1, 2, ... */
static void assert_view_values(const clt_tensor *v, int64_t offset, const int64_t *strides)
{
    int nd = clt_tensor_ndim(v);
    const int64_t *shape = clt_tensor_shape(v);
    size_t n = (size_t)clt_tensor_numel(v);
    float *got = read_f32(v);
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        int64_t off = offset;
        for (int d = nd - 1; d >= 0; d--) {
            off += (int64_t)(rem % (size_t)shape[d]) * strides[d];
            rem /= (size_t)shape[d];
        }
        cr_assert_eq(got[i], (float)off, "element %zu: got %g, want %g", i, got[i], (double)off);
    }
    free(got);
}

Test(view, reshape_and_view_share_storage)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {2, 3, 4};
    clt_tensor *t = iota(dev, 3, s), *v = NULL, *r = NULL;
    CHECK(clt_device_synchronize(dev));
    uint64_t before = launches();
    int64_t vs[] = {4, -1};
    CHECK(clt_view(t, 2, vs, &v));
    int64_t want_shape[] = {4, 6}, want_strides[] = {6, 1};
    assert_shape(v, 2, want_shape);
    assert_strides(v, 2, want_strides);
    int64_t rs[] = {-1};
    CHECK(clt_reshape(t, 1, rs, &r));
    cr_assert_eq(clt_tensor_shape(r)[0], 24);
    cr_assert_eq(launches(), before, "a view launched a kernel");
    assert_view_values(v, 0, want_strides);
    int64_t one = 1;
    assert_view_values(r, 0, &one);
    clt_tensor_free(t);
    /* The views keep the storage alive after the base is released. */
    assert_view_values(v, 0, want_strides);
    clt_tensor_free(v);
    clt_tensor_free(r);
}

Test(view, view_of_transposed_and_reshape_copy)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {4, 6};
    clt_tensor *t = iota(dev, 2, s), *tt = NULL, *v = NULL, *r = NULL;
    CHECK(clt_transpose(t, 0, 1, &tt));
    int64_t ts[] = {6, 4}, tstr[] = {1, 6};
    assert_shape(tt, 2, ts);
    assert_strides(tt, 2, tstr);
    cr_assert_not(clt_tensor_is_contiguous(tt));
    /* Splitting the strided last dim is a view: [6, 4] -> [6, 2, 2]. */
    int64_t split[] = {6, 2, 2}, split_str[] = {1, 12, 6};
    CHECK(clt_view(tt, 3, split, &v));
    assert_strides(v, 3, split_str);
    assert_view_values(v, 0, split_str);
    clt_tensor_free(v);
    /* Merging both dims is not. */
    int64_t flat = 24;
    clt_status st = clt_view(tt, 1, &flat, &v);
    assert_error(st, CLT_ERR_NOT_CONTIGUOUS, "view size is not compatible");
    cr_assert(strstr(clt_last_error(), "[6, 4]") && strstr(clt_last_error(), "clt_reshape"));
    cr_assert_null(v);
    CHECK(clt_device_synchronize(dev));
    uint64_t before = launches();
    CHECK(clt_reshape(tt, 1, &flat, &r));
    cr_assert_eq(launches(), before + 1, "reshape of a transposed tensor must copy once");
    cr_assert(clt_tensor_is_contiguous(r));
    float *got = read_f32(r);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(got[i * 4 + j], (float)(j * 6 + i));
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(tt);
    clt_tensor_free(t);
}

Test(view, reshape_errors)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {2, 3};
    clt_tensor *t = iota(dev, 2, s), *r = NULL;
    int64_t bad[] = {4, -1};
    assert_error(clt_reshape(t, 2, bad, &r), CLT_ERR_INVALID_ARGUMENT,
                 "shape '[4, -1]' is invalid for input of size 6");
    cr_assert_null(r);
    int64_t two[] = {-1, -1};
    assert_error(clt_view(t, 2, two, &r), CLT_ERR_INVALID_ARGUMENT,
                 "only one dimension can be inferred");
    int64_t wrong[] = {7};
    assert_error(clt_view(t, 1, wrong, &r), CLT_ERR_INVALID_ARGUMENT,
                 "shape '[7]' is invalid for input of size 6");
    assert_error(clt_reshape(NULL, 1, wrong, &r), CLT_ERR_NULL_ARGUMENT, "clt_reshape");
    clt_tensor_free(t);
}

Test(view, transpose_permute_values)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {2, 3, 4};
    clt_tensor *t = iota(dev, 3, s), *p = NULL, *q = NULL;
    int dims[] = {2, 0, 1};
    CHECK(clt_permute(t, 3, dims, &p));
    int64_t ps[] = {4, 2, 3}, pstr[] = {1, 12, 4};
    assert_shape(p, 3, ps);
    assert_strides(p, 3, pstr);
    float *got = read_f32(p);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                cr_assert_eq(got[(k * 2 + i) * 3 + j], (float)((i * 3 + j) * 4 + k));
    free(got);
    CHECK(clt_transpose(t, -1, 0, &q));
    int64_t qs[] = {4, 3, 2}, qstr[] = {1, 4, 12};
    assert_shape(q, 3, qs);
    assert_view_values(q, 0, qstr);
    clt_tensor_free(q);

    int dup[] = {0, 0, 1};
    assert_error(clt_permute(t, 3, dup, &q), CLT_ERR_INVALID_ARGUMENT, "duplicate dims");
    assert_error(clt_permute(t, 2, dims, &q), CLT_ERR_INVALID_ARGUMENT, "number of dims");
    assert_error(clt_transpose(t, 3, 0, &q), CLT_ERR_DIM_OUT_OF_RANGE,
                 "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    cr_assert_null(q);
    clt_tensor_free(p);
    clt_tensor_free(t);
}

Test(view, narrow_and_slice)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {5, 7};
    clt_tensor *t = iota(dev, 2, s), *v = NULL;
    CHECK(clt_narrow(t, 1, -5, 3, &v));
    int64_t ns[] = {5, 3}, nstr[] = {7, 1};
    assert_shape(v, 2, ns);
    assert_view_values(v, 2, nstr);
    clt_tensor_free(v);

    /* t[:, 1::2] and t[-4:100:3, :] as in Python. */
    CHECK(clt_slice(t, 1, 1, INT64_MAX, 2, &v));
    int64_t ss[] = {5, 3}, sstr[] = {7, 2};
    assert_shape(v, 2, ss);
    assert_strides(v, 2, sstr);
    assert_view_values(v, 1, sstr);
    clt_tensor_free(v);
    CHECK(clt_slice(t, 0, -4, 100, 3, &v));
    int64_t s2[] = {2, 7}, s2str[] = {21, 1};
    assert_shape(v, 2, s2);
    assert_view_values(v, 7, s2str);
    clt_tensor_free(v);
    /* Empty and fully clamped slices. */
    CHECK(clt_slice(t, 0, 4, 2, 1, &v));
    cr_assert_eq(clt_tensor_shape(v)[0], 0);
    clt_tensor_free(v);
    CHECK(clt_slice(t, -1, -100, -6, 1, &v));
    cr_assert_eq(clt_tensor_shape(v)[1], 1);
    assert_view_values(v, 0, nstr);
    clt_tensor_free(v);

    assert_error(clt_slice(t, 0, 0, 5, 0, &v), CLT_ERR_INVALID_ARGUMENT, "step must be positive");
    assert_error(clt_narrow(t, 0, 3, 3, &v), CLT_ERR_INVALID_ARGUMENT,
                 "start (3) + length (3) exceeds dimension size (5)");
    assert_error(clt_narrow(t, 2, 0, 1, &v), CLT_ERR_DIM_OUT_OF_RANGE, "[-2, 1], but got 2");
    cr_assert_null(v);
    clt_tensor_free(t);
}

Test(view, squeeze_unsqueeze_flatten)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {3, 1, 4, 1};
    clt_tensor *t = iota(dev, 4, s), *v = NULL, *w = NULL;
    CHECK(clt_squeeze(t, 1, &v));
    int64_t s1[] = {3, 4, 1};
    assert_shape(v, 3, s1);
    clt_tensor_free(v);
    CHECK(clt_squeeze(t, 0, &v)); /* size 3: unchanged, as PyTorch */
    assert_shape(v, 4, s);
    clt_tensor_free(v);
    CHECK(clt_squeeze_all(t, &v));
    int64_t s2[] = {3, 4}, str2[] = {4, 1};
    assert_shape(v, 2, s2);
    assert_strides(v, 2, str2);
    CHECK(clt_unsqueeze(v, -1, &w));
    int64_t s3[] = {3, 4, 1}, str3[] = {4, 1, 1};
    assert_shape(w, 3, s3);
    assert_strides(w, 3, str3);
    clt_tensor_free(w);
    CHECK(clt_unsqueeze(v, 1, &w));
    int64_t s4[] = {3, 1, 4}, str4[] = {4, 4, 1};
    assert_shape(w, 3, s4);
    assert_strides(w, 3, str4);
    assert_view_values(w, 0, str4);
    clt_tensor_free(w);
    assert_error(clt_unsqueeze(v, 3, &w), CLT_ERR_DIM_OUT_OF_RANGE,
                 "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    clt_tensor_free(v);

    CHECK(clt_flatten(t, 1, -1, &v));
    int64_t f[] = {3, 4};
    assert_shape(v, 2, f);
    assert_view_values(v, 0, str2);
    clt_tensor_free(v);
    assert_error(clt_flatten(t, 2, 1, &v), CLT_ERR_INVALID_ARGUMENT, "start_dim");
    clt_tensor_free(t);

    /* A scalar: dims -1 and 0 only; flatten gives [1]. */
    clt_tensor *sc = NULL;
    float x = 5;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 0, NULL, &x, &sc));
    CHECK(clt_squeeze(sc, -1, &v));
    cr_assert_eq(clt_tensor_ndim(v), 0);
    clt_tensor_free(v);
    CHECK(clt_flatten(sc, 0, -1, &v));
    cr_assert_eq(clt_tensor_ndim(v), 1);
    cr_assert_eq(clt_tensor_shape(v)[0], 1);
    clt_tensor_free(v);
    CHECK(clt_unsqueeze(sc, 0, &v));
    cr_assert_eq(clt_tensor_ndim(v), 1);
    clt_tensor_free(v);
    assert_error(clt_squeeze(sc, 1, &v), CLT_ERR_DIM_OUT_OF_RANGE, "[-1, 0], but got 1");
    clt_tensor_free(sc);
}

Test(view, expand_and_contiguous)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {3, 1};
    clt_tensor *t = iota(dev, 2, s), *e = NULL, *c = NULL;
    int64_t es[] = {2, -1, 4};
    CHECK(clt_device_synchronize(dev));
    uint64_t before = launches();
    CHECK(clt_expand(t, 3, es, &e));
    int64_t want[] = {2, 3, 4}, wstr[] = {0, 1, 0};
    assert_shape(e, 3, want);
    assert_strides(e, 3, wstr);
    cr_assert_eq(launches(), before);
    assert_view_values(e, 0, wstr);

    CHECK(clt_device_synchronize(dev));
    before = launches();
    CHECK(clt_contiguous(e, &c));
    cr_assert_eq(launches(), before + 1);
    cr_assert(clt_tensor_is_contiguous(c));
    int64_t cstr[] = {12, 4, 1};
    assert_strides(c, 3, cstr);
    clt_tensor *c2 = NULL;
    before = launches();
    CHECK(clt_contiguous(c, &c2));
    cr_assert_eq(launches(), before, "contiguous of a contiguous tensor copied");
    clt_tensor_free(c2);
    clt_tensor_free(c);

    /* An elementwise op on the stride-0 view. */
    CHECK(clt_add(e, e, &c));
    float *got = read_f32(c);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(got[i], 2.0f * (float)((i / 4) % 3));
    free(got);
    clt_tensor_free(c);

    int64_t bad[] = {3, 4, 2};
    clt_status st = clt_expand(e, 2, bad, &c);
    assert_error(st, CLT_ERR_SHAPE_MISMATCH, "must be greater or equal");
    int64_t bad2[] = {4, 2};
    assert_error(clt_expand(t, 2, bad2, &c), CLT_ERR_SHAPE_MISMATCH,
                 "expanded size of the tensor (4) must match the existing size (3)");
    cr_assert(strstr(clt_last_error(), "[4, 2]") && strstr(clt_last_error(), "[3, 1]"));
    cr_assert_null(c);
    clt_tensor_free(e);
    clt_tensor_free(t);
}

Test(view, cat_strided_and_promoted)
{
    clt_device *dev = get_device("cpu");
    int64_t sa[] = {4, 3};
    clt_tensor *a = iota(dev, 2, sa), *at = NULL, *b = NULL, *bs = NULL, *r = NULL;
    CHECK(clt_transpose(a, 0, 1, &at)); /* [3, 4], a[j][i] = 3 j + i at (i, j) */
    int32_t hb[3 * 5];
    for (int i = 0; i < 15; i++)
        hb[i] = 100 + i;
    int64_t sb[] = {3, 5};
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 2, sb, hb, &b));
    CHECK(clt_slice(b, 1, 0, INT64_MAX, 2, &bs)); /* [3, 3]: columns 0, 2, 4 */
    clt_tensor *empty = NULL;
    int64_t zero = 0;
    CHECK(clt_empty(dev, CLT_INT64, 1, &zero, &empty)); /* skipped like PyTorch */
    const clt_tensor *list[] = {at, empty, bs};
    CHECK(clt_cat(list, 3, -1, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    int64_t want[] = {3, 7};
    assert_shape(r, 2, want);
    float *got = read_f32(r);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 7; j++) {
            float w = j < 4 ? (float)(j * 3 + i) : (float)(100 + i * 5 + (j - 4) * 2);
            cr_assert_eq(got[i * 7 + j], w, "(%d, %d): %g vs %g", i, j, got[i * 7 + j], w);
        }
    free(got);
    clt_tensor_free(r);

    /* Along dim 0. */
    const clt_tensor *list0[] = {bs, at};
    assert_error(clt_cat(list0, 2, 0, &r), CLT_ERR_SHAPE_MISMATCH,
                 "Sizes of tensors must match except in dimension 0");
    cr_assert(strstr(clt_last_error(), "[3, 3]") && strstr(clt_last_error(), "[3, 4]"));
    cr_assert_null(r);
    const clt_tensor *list1[] = {bs, bs, at};
    clt_tensor *bst = NULL;
    CHECK(clt_narrow(at, 1, 1, 3, &bst));
    list1[2] = bst;
    CHECK(clt_cat(list1, 3, 0, &r));
    int64_t want0[] = {9, 3};
    assert_shape(r, 2, want0);
    got = read_f32(r);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 3; j++) {
            float w = i < 6 ? (float)(100 + (i % 3) * 5 + j * 2) : (float)((j + 1) * 3 + i - 6);
            cr_assert_eq(got[i * 3 + j], w, "(%d, %d): %g vs %g", i, j, got[i * 3 + j], w);
        }
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(bst);

    clt_tensor *sc = NULL;
    float x = 1;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 0, NULL, &x, &sc));
    const clt_tensor *list2[] = {at, sc};
    assert_error(clt_cat(list2, 2, 0, &r), CLT_ERR_INVALID_ARGUMENT,
                 "zero-dimensional tensor (at position 1)");
    assert_error(clt_cat(list2, 0, 0, &r), CLT_ERR_INVALID_ARGUMENT, "non-empty");
    const clt_tensor *list3[] = {at, at};
    assert_error(clt_cat(list3, 2, 2, &r), CLT_ERR_DIM_OUT_OF_RANGE, "[-2, 1], but got 2");
    clt_tensor_free(sc);
    clt_tensor_free(empty);
    clt_tensor_free(bs);
    clt_tensor_free(b);
    clt_tensor_free(at);
    clt_tensor_free(a);
}

Test(view, cat_device_mismatch)
{
    clt_device *dev = get_device("cpu");
    clt_device *dev2 = second_device(dev);
    int64_t s[] = {2, 2};
    clt_tensor *a = iota(dev, 2, s), *b = iota(dev2, 2, s), *r = NULL;
    const clt_tensor *list[] = {a, b};
    assert_error(clt_cat(list, 2, 0, &r), CLT_ERR_DEVICE_MISMATCH, clt_device_label(dev2));
    assert_error(clt_stack(list, 2, 0, &r), CLT_ERR_DEVICE_MISMATCH, "same device");
    cr_assert_null(r);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(view, stack_values_and_errors)
{
    clt_device *dev = get_device("cpu");
    int64_t s[] = {2, 3};
    clt_tensor *a = iota(dev, 2, s), *b = NULL, *r = NULL;
    CHECK(clt_add_scalar(a, 10, &b));
    const clt_tensor *list[] = {a, b};
    CHECK(clt_stack(list, 2, -1, &r));
    int64_t want[] = {2, 3, 2};
    assert_shape(r, 3, want);
    float *got = read_f32(r);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++)
                cr_assert_eq(got[(i * 3 + j) * 2 + k], (float)(i * 3 + j + 10 * k));
    free(got);
    clt_tensor_free(r);
    CHECK(clt_stack(list, 2, 0, &r));
    int64_t want0[] = {2, 2, 3};
    assert_shape(r, 3, want0);
    got = read_f32(r);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(got[i], (float)(i % 6 + (i >= 6 ? 10 : 0)));
    free(got);
    clt_tensor_free(r);

    clt_tensor *c = NULL;
    int64_t s2[] = {2, 4};
    c = iota(dev, 2, s2);
    const clt_tensor *bad[] = {a, c};
    assert_error(clt_stack(bad, 2, 0, &r), CLT_ERR_SHAPE_MISMATCH,
                 "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and "
                 "[2, 4] at entry 1");
    assert_error(clt_stack(list, 2, 3, &r), CLT_ERR_DIM_OUT_OF_RANGE, "[-3, 2], but got 3");
    cr_assert_null(r);
    clt_tensor_free(c);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* ---- contiguous copies of every view pattern, every dtype --------------- */

/* A view made from a base tensor by one to three of these steps, replayed on
 * the host as (shape, strides, offset) arithmetic for the reference. */
typedef enum { V_NONE, V_TRANSPOSE, V_PERMUTE, V_EXPAND, V_SLICE } view_op;

typedef struct {
    view_op op;
    int dim, nd;          /* V_TRANSPOSE: dims dim and nd; V_EXPAND: nd dims */
    int64_t v[4];         /* V_PERMUTE: the order; V_EXPAND: the shape; V_SLICE: start, end, step */
} view_step;

typedef struct {
    int nd;
    int64_t shape[4];
    view_step steps[3];
} view_case;

typedef struct {
    int nd;
    int64_t shape[4], strides[4], offset;
} host_view;

static clt_tensor *apply_step(const clt_tensor *t, const view_step *s, host_view *h)
{
    clt_tensor *out = NULL;
    host_view g = *h;
    switch (s->op) {
    case V_TRANSPOSE:
        CHECK(clt_transpose(t, s->dim, s->nd, &out));
        g.shape[s->dim] = h->shape[s->nd], g.shape[s->nd] = h->shape[s->dim];
        g.strides[s->dim] = h->strides[s->nd], g.strides[s->nd] = h->strides[s->dim];
        break;
    case V_PERMUTE: {
        int perm[4];
        for (int d = 0; d < h->nd; d++) {
            perm[d] = (int)s->v[d];
            g.shape[d] = h->shape[perm[d]];
            g.strides[d] = h->strides[perm[d]];
        }
        CHECK(clt_permute(t, h->nd, perm, &out));
        break;
    }
    case V_EXPAND:
        CHECK(clt_expand(t, s->nd, s->v, &out));
        g.nd = s->nd;
        for (int d = 0; d < s->nd; d++) {
            int e = d - (s->nd - h->nd); /* the matching dim of t, or < 0 */
            g.shape[d] = s->v[d];
            g.strides[d] = e >= 0 && h->shape[e] == s->v[d] ? h->strides[e] : 0;
        }
        break;
    default: { /* V_SLICE within the dimension, start < end */
        CHECK(clt_slice(t, s->dim, s->v[0], s->v[1], s->v[2], &out));
        int64_t len = s->v[1] > s->v[0] ? (s->v[1] - s->v[0] + s->v[2] - 1) / s->v[2] : 0;
        g.offset += s->v[0] * h->strides[s->dim];
        g.shape[s->dim] = len;
        g.strides[s->dim] = h->strides[s->dim] * s->v[2];
    }
    }
    *h = g;
    return out;
}

/* Element f of a base tensor of dtype dt, as its bytes: values that every
 * copy keeps exactly (float16: finite bit patterns of either sign). */
static void element_bytes(clt_dtype dt, int64_t f, unsigned char *out)
{
    uint64_t u = (uint64_t)f;
    union {
        float f32;
        double f64;
        uint16_t h;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        float c64[2];
        double c128[2];
    } x;
    memset(&x, 0, sizeof x);
    switch (dt) {
    case CLT_FLOAT32: x.f32 = (float)(f % 100003) * 0.25f - 1000.0f; break;
    case CLT_FLOAT64: x.f64 = (double)f * 0.5 - 3.0; break;
    case CLT_FLOAT16: x.h = (uint16_t)((u * 37u) % 0x7C00u | (u & 1u) << 15); break;
    case CLT_INT32: x.i32 = (int32_t)(uint32_t)(u * 2654435761u); break;
    case CLT_INT64: x.i64 = (int64_t)(u * 0x9E3779B97F4A7C15u); break;
    case CLT_UINT8: x.u8 = (uint8_t)(u * 7u); break;
    case CLT_COMPLEX64:
        x.c64[0] = (float)(f % 100003) * 0.25f - 1000.0f;
        x.c64[1] = (float)(f % 1009) * -0.5f;
        break;
    case CLT_COMPLEX128:
        x.c128[0] = (double)f * 0.5 - 3.0;
        x.c128[1] = (double)f * -0.25 + 7.0;
        break;
    default: x.u8 = (uint8_t)(u % 3u == 0); break;
    }
    memcpy(out, &x, clt_dtype_size(dt));
}

/* The view of case c of a base of dtype dt; *ref gets the bytes a
 * contiguous copy must hold (new malloc'd array), *n its elements, and
 * *offs (when not NULL) their offsets in the base (new malloc'd array). */
static clt_tensor *make_view_at(clt_device *dev, clt_dtype dt, const view_case *c,
                                clt_tensor **base, unsigned char **ref, size_t *n,
                                int64_t **offs)
{
    size_t es = clt_dtype_size(dt), nb = 1;
    for (int d = 0; d < c->nd; d++)
        nb *= (size_t)c->shape[d];
    unsigned char *hb = malloc(nb * es + 1);
    cr_assert_not_null(hb);
    for (size_t f = 0; f < nb; f++)
        element_bytes(dt, (int64_t)f, hb + f * es);
    CHECK(clt_tensor_from_host(dev, dt, c->nd, c->shape, hb, base));
    host_view h = {.nd = c->nd};
    int64_t step = 1;
    for (int d = c->nd - 1; d >= 0; d--) {
        h.shape[d] = c->shape[d];
        h.strides[d] = step;
        step *= c->shape[d];
    }
    clt_tensor *v = clt_tensor_retain(*base);
    for (int k = 0; k < 3 && c->steps[k].op != V_NONE; k++) {
        clt_tensor *w = apply_step(v, &c->steps[k], &h);
        clt_tensor_free(v);
        v = w;
    }
    assert_shape(v, h.nd, h.shape);
    *n = (size_t)clt_tensor_numel(v);
    *ref = malloc(*n * es + 1);
    cr_assert_not_null(*ref);
    if (offs) {
        *offs = malloc(*n * sizeof(int64_t) + 1);
        cr_assert_not_null(*offs);
    }
    for (size_t i = 0; i < *n; i++) {
        size_t rem = i;
        int64_t off = h.offset;
        for (int d = h.nd - 1; d >= 0; d--) {
            off += (int64_t)(rem % (size_t)h.shape[d]) * h.strides[d];
            rem /= (size_t)h.shape[d];
        }
        memcpy(*ref + i * es, hb + (size_t)off * es, es);
        if (offs)
            (*offs)[i] = off;
    }
    free(hb);
    return v;
}

static clt_tensor *make_view(clt_device *dev, clt_dtype dt, const view_case *c,
                             clt_tensor **base, unsigned char **ref, size_t *n)
{
    return make_view_at(dev, dt, c, base, ref, n, NULL);
}

#define T2(a, b) {V_TRANSPOSE, a, b, {0}}
#define PERM(...) {V_PERMUTE, 0, 0, {__VA_ARGS__}}
#define EXPAND(nd, ...) {V_EXPAND, 0, nd, {__VA_ARGS__}}
#define SLICE(dim, ...) {V_SLICE, dim, 0, {__VA_ARGS__}}

/* Transposes and permutes of odd shapes (partial 16 x 16 blocks, tiles of
 * more than one block of 256), expansions (stride 0 innermost and outside),
 * slices with steps of rows and of columns, offsets, 0- and 1-size dims;
 * several of them larger than one work-item's share of a CPU device. */
static const view_case view_cases[] = {
    {2, {37, 53}, {T2(0, 1)}},
    {2, {64, 48}, {T2(0, 1)}},
    {2, {300, 530}, {T2(0, 1)}},
    {2, {70, 300}, {T2(1, 0)}},
    {2, {5, 40}, {T2(0, 1)}},
    {3, {5, 33, 18}, {PERM(2, 0, 1)}},
    {3, {3, 17, 40}, {PERM(1, 2, 0)}},
    {4, {3, 4, 5, 6}, {PERM(3, 1, 0, 2)}},
    {3, {17, 1, 3}, {PERM(2, 1, 0)}},
    {2, {7, 1}, {EXPAND(2, 7, 45)}},
    {2, {300, 1}, {EXPAND(2, 300, 77)}},
    {2, {1, 30}, {EXPAND(2, 9, 30)}},
    {1, {1}, {EXPAND(3, 3, 4, 5)}},
    {2, {20, 37}, {SLICE(0, 1, 20, 3)}},
    {2, {601, 33}, {SLICE(0, 0, 601, 2)}},
    {2, {20, 37}, {SLICE(1, 2, 37, 2)}},
    {2, {40, 50}, {SLICE(0, 3, 33, 1), SLICE(1, 5, 45, 1), T2(0, 1)}},
    {3, {6, 40, 20}, {SLICE(0, 1, 6, 2), T2(1, 2)}},
    {3, {9, 70, 36}, {SLICE(2, 1, 36, 1), PERM(2, 0, 1)}},
    {2, {0, 5}, {T2(0, 1)}},
    {3, {4, 0, 3}, {PERM(2, 0, 1)}},
    {2, {1, 17}, {T2(0, 1)}},
    {2, {3, 1}, {EXPAND(3, 0, 3, 4)}},
};

Test(view, contiguous_every_pattern_every_dtype)
{
    clt_device *dev = get_device("cpu");
    for (int t = 0; t < CLT_DTYPE_COUNT; t++) {
        clt_dtype dt = (clt_dtype)t;
        if (!clt_device_supports_dtype(dev, dt))
            continue;
        size_t es = clt_dtype_size(dt);
        for (size_t k = 0; k < sizeof view_cases / sizeof view_cases[0]; k++) {
            clt_tensor *base = NULL, *c = NULL;
            unsigned char *ref = NULL;
            size_t n = 0;
            clt_tensor *v = make_view(dev, dt, &view_cases[k], &base, &ref, &n);
            CHECK(clt_contiguous(v, &c));
            cr_assert(clt_tensor_is_contiguous(c));
            unsigned char *got = malloc(n * es + 1);
            cr_assert_not_null(got);
            CHECK(clt_tensor_read(c, got, n * es));
            for (size_t i = 0; i < n; i++)
                cr_assert(memcmp(got + i * es, ref + i * es, es) == 0,
                          "%s, case %zu: element %zu of %zu differs", clt_dtype_name(dt), k, i,
                          n);
            free(got);
            free(ref);
            clt_tensor_free(c);
            clt_tensor_free(v);
            clt_tensor_free(base);
        }
    }
}

/* The dtype pairs (from, to) of the casts of views and into views. */
static const clt_dtype cast_pairs[][2] = {
    {CLT_FLOAT32, CLT_INT32}, {CLT_FLOAT32, CLT_FLOAT16}, {CLT_INT32, CLT_FLOAT64},
    {CLT_FLOAT64, CLT_BOOL},  {CLT_UINT8, CLT_FLOAT32},   {CLT_FLOAT16, CLT_FLOAT32},
    {CLT_INT64, CLT_UINT8},   {CLT_FLOAT32, CLT_UINT8},   {CLT_BOOL, CLT_INT64},
};

/* A cast of a view converts as the cast of the same values in contiguous
 * memory does (checked value by value in test_dtypes.c),
 * on each kind of copy: blocks of a transpose, their odd edges, runs of
 * stride 0, 1 and 2. */
Test(view, cast_of_views_matches_contiguous_cast)
{
    clt_device *dev = get_device("cpu");
    static const size_t cases[] = {2, 3, 6, 10, 11, 14, 15};
    for (size_t p = 0; p < sizeof cast_pairs / sizeof cast_pairs[0]; p++) {
        clt_dtype from = cast_pairs[p][0], to = cast_pairs[p][1];
        if (!clt_device_supports_dtype(dev, from) || !clt_device_supports_dtype(dev, to))
            continue;
        size_t es = clt_dtype_size(to);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            clt_tensor *base = NULL, *c = NULL, *a = NULL, *b = NULL;
            unsigned char *ref = NULL;
            size_t n = 0;
            clt_tensor *v = make_view(dev, from, &view_cases[cases[k]], &base, &ref, &n);
            CHECK(clt_to_dtype(v, to, &a));
            CHECK(clt_tensor_from_host(dev, from, clt_tensor_ndim(v), clt_tensor_shape(v), ref,
                                       &c));
            CHECK(clt_to_dtype(c, to, &b));
            unsigned char *ga = malloc(n * es + 1), *gb = malloc(n * es + 1);
            cr_assert(ga && gb);
            CHECK(clt_tensor_read(a, ga, n * es));
            CHECK(clt_tensor_read(b, gb, n * es));
            for (size_t i = 0; i < n; i++)
                cr_assert(memcmp(ga + i * es, gb + i * es, es) == 0,
                          "%s to %s, case %zu: element %zu differs", clt_dtype_name(from),
                          clt_dtype_name(to), cases[k], i);
            free(ga);
            free(gb);
            free(ref);
            clt_tensor_free(a);
            clt_tensor_free(b);
            clt_tensor_free(c);
            clt_tensor_free(v);
            clt_tensor_free(base);
        }
    }
}

/* ---- copies into every view pattern, every dtype, every device --------------- */

/* The sources copied into a view v: contiguous; strided (a contiguous
 * tensor of v's shape reversed, its dimensions reversed); v's shape with
 * the last dimension 1, broadcast along it (stride 0 innermost); 0-d. */
typedef enum { SRC_CONTIG, SRC_REVERSED, SRC_ROWS, SRC_SCALAR, SRC_KINDS } src_kind;

/* The source of kind k for a view of shape[nd] and dtype dt, its values
 * element_bytes(dt, first + f) for f its offsets in its own storage; *ref
 * gets the bytes each element of the view must take (new malloc'd array). */
static clt_tensor *make_source(clt_device *dev, clt_dtype dt, src_kind k, int nd,
                               const int64_t *shape, int64_t first, unsigned char **ref)
{
    size_t es = clt_dtype_size(dt), n = 1;
    for (int d = 0; d < nd; d++)
        n *= (size_t)shape[d];
    int64_t sshape[4], sst[4], step = 1;
    int snd = k == SRC_SCALAR ? 0 : nd;
    for (int d = 0; d < nd; d++)
        sshape[d] = shape[k == SRC_REVERSED ? nd - 1 - d : d];
    if (k == SRC_ROWS && nd > 0)
        sshape[nd - 1] = 1;
    size_t ns = 1;
    for (int d = snd - 1; d >= 0; d--)
        ns *= (size_t)sshape[d];
    unsigned char *hs = malloc(ns * es + 1);
    cr_assert_not_null(hs);
    for (size_t f = 0; f < ns; f++)
        element_bytes(dt, first + (int64_t)f, hs + f * es);
    clt_tensor *s = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, dt, snd, sshape, hs, &s));
    /* Strides of the view's dimensions in the source (0 where broadcast). */
    for (int d = nd - 1; d >= 0; d--) {
        sst[d] = k == SRC_SCALAR || (k == SRC_ROWS && d == nd - 1) ? 0 : step;
        if (k != SRC_REVERSED)
            step *= k == SRC_SCALAR ? 1 : sshape[d];
    }
    if (k == SRC_REVERSED) {
        int perm[4];
        step = 1;
        for (int d = 0; d < nd; d++) {
            perm[d] = nd - 1 - d;
            sst[d] = step;
            step *= shape[d];
        }
        CHECK(clt_permute(s, nd, perm, &r));
        clt_tensor_free(s);
        s = r;
    }
    *ref = malloc(n * es + 1);
    cr_assert_not_null(*ref);
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        int64_t off = 0;
        for (int d = nd - 1; d >= 0; d--) {
            off += (int64_t)(rem % (size_t)shape[d]) * sst[d];
            rem /= (size_t)shape[d];
        }
        memcpy(*ref + i * es, hs + (size_t)off * es, es);
    }
    free(hs);
    return s;
}

/* Whether case c's view is expanded: no destination for a copy. */
static bool expanded_case(const view_case *c)
{
    for (int k = 0; k < 3; k++)
        if (c->steps[k].op == V_EXPAND)
            return true;
    return false;
}

/* Reads the whole base of dtype dt and checks it against the base's own
 * values with the view's elements (at offs) replaced by want. */
static void assert_base_after_copy(const clt_tensor *base, clt_dtype dt, const int64_t *offs,
                                   const unsigned char *want, size_t n, const char *what)
{
    size_t es = clt_dtype_size(dt), nb = (size_t)clt_tensor_numel(base);
    unsigned char *ref = malloc(nb * es + 1), *got = malloc(nb * es + 1);
    cr_assert(ref && got);
    for (size_t f = 0; f < nb; f++)
        element_bytes(dt, (int64_t)f, ref + f * es);
    for (size_t i = 0; i < n; i++)
        memcpy(ref + (size_t)offs[i] * es, want + i * es, es);
    CHECK(clt_tensor_read(base, got, nb * es));
    for (size_t f = 0; f < nb; f++)
        cr_assert(memcmp(got + f * es, ref + f * es, es) == 0,
                  "%s: element %zu of the base (%zu) differs", what, f, nb);
    free(ref);
    free(got);
}

/* clt_copy_ into a view (transposed, permuted, sliced with offsets and
 * steps, empty) writes exactly the view's elements, bit for bit, from each
 * kind of source, for every dtype size, on every device (POCL_DEVICES=
 * "pthread basic" gives two). */
Test(view, copy_into_every_pattern_every_dtype)
{
    get_device("cpu");
    size_t ndev = 0;
    CHECK(clt_device_count(&ndev));
    for (size_t di = 0; di < ndev; di++) {
        clt_device *dev = NULL;
        CHECK(clt_device_at(di, &dev));
        for (int t = 0; t < CLT_DTYPE_COUNT; t++) {
            clt_dtype dt = (clt_dtype)t;
            if (!clt_device_supports_dtype(dev, dt))
                continue;
            for (size_t k = 0; k < sizeof view_cases / sizeof view_cases[0]; k++) {
                if (expanded_case(&view_cases[k]))
                    continue;
                for (int sk = 0; sk < SRC_KINDS; sk++) {
                    clt_tensor *base = NULL;
                    unsigned char *old = NULL, *want = NULL;
                    int64_t *offs = NULL;
                    size_t n = 0;
                    clt_tensor *v = make_view_at(dev, dt, &view_cases[k], &base, &old, &n, &offs);
                    clt_tensor *s = make_source(dev, dt, (src_kind)sk, clt_tensor_ndim(v),
                                                clt_tensor_shape(v), 1000003, &want);
                    CHECK(clt_copy_(v, s));
                    char what[96];
                    snprintf(what, sizeof what, "device %zu, %s, case %zu, source %d", di,
                             clt_dtype_name(dt), k, sk);
                    assert_base_after_copy(base, dt, offs, want, n, what);
                    free(old);
                    free(want);
                    free(offs);
                    clt_tensor_free(s);
                    clt_tensor_free(v);
                    clt_tensor_free(base);
                }
            }
        }
    }
}

/* A copy with a cast into a view gives each element what the contiguous
 * cast of the source gives it (test_dtypes.c checks those values), and a
 * 0-d view at an offset takes its one element. */
Test(view, copy_into_views_with_casts_and_0d)
{
    clt_device *dev = get_device("cpu");
    static const size_t cases[] = {2, 3, 5, 13, 15, 16, 18};
    for (size_t p = 0; p < sizeof cast_pairs / sizeof cast_pairs[0]; p++) {
        clt_dtype from = cast_pairs[p][0], to = cast_pairs[p][1];
        if (!clt_device_supports_dtype(dev, from) || !clt_device_supports_dtype(dev, to))
            continue;
        size_t es = clt_dtype_size(to);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            for (int sk = 0; sk < SRC_KINDS; sk += 2) {
                clt_tensor *base = NULL, *c = NULL, *cast = NULL;
                unsigned char *old = NULL, *vals = NULL;
                int64_t *offs = NULL;
                size_t n = 0;
                clt_tensor *v =
                    make_view_at(dev, to, &view_cases[cases[k]], &base, &old, &n, &offs);
                clt_tensor *s = make_source(dev, from, (src_kind)sk, clt_tensor_ndim(v),
                                            clt_tensor_shape(v), 77, &vals);
                CHECK(clt_tensor_from_host(dev, from, clt_tensor_ndim(v), clt_tensor_shape(v),
                                           vals, &c));
                CHECK(clt_to_dtype(c, to, &cast));
                unsigned char *want = malloc(n * es + 1);
                cr_assert_not_null(want);
                CHECK(clt_tensor_read(cast, want, n * es));
                CHECK(clt_copy_(v, s));
                char what[96];
                snprintf(what, sizeof what, "%s to %s, case %zu, source %d",
                         clt_dtype_name(from), clt_dtype_name(to), cases[k], sk);
                assert_base_after_copy(base, to, offs, want, n, what);
                free(old);
                free(vals);
                free(want);
                free(offs);
                clt_tensor_free(cast);
                clt_tensor_free(c);
                clt_tensor_free(s);
                clt_tensor_free(v);
                clt_tensor_free(base);
            }
    }

    /* Element 3 of a [5] base as a 0-d view. */
    static const view_case line = {1, {5}, {SLICE(0, 3, 4, 1)}};
    clt_tensor *base = NULL, *v0 = NULL;
    unsigned char *old = NULL, *want = NULL;
    int64_t *offs = NULL;
    size_t n = 0;
    clt_tensor *v = make_view_at(dev, CLT_FLOAT64, &line, &base, &old, &n, &offs);
    CHECK(clt_squeeze_all(v, &v0));
    cr_assert_eq(clt_tensor_ndim(v0), 0);
    clt_tensor *s = make_source(dev, CLT_FLOAT64, SRC_SCALAR, 0, NULL, 40, &want);
    CHECK(clt_copy_(v0, s));
    assert_base_after_copy(base, CLT_FLOAT64, offs, want, n, "0-d view");
    free(old);
    free(want);
    free(offs);
    clt_tensor_free(s);
    clt_tensor_free(v0);
    clt_tensor_free(v);
    clt_tensor_free(base);
}
