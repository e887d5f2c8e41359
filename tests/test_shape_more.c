/* test_shape_more.c: the remaining shape functions of view.h (unflatten,
 * movedim, swapaxes, ravel, view_as/reshape_as/expand_as, as_strided,
 * atleast_*d, tensor_split and h/v/dsplit, the stacks, rot90,
 * cartesian_prod, combinations, pdist, select, narrow_copy and the scatters)
 * against references computed here on the host: values, shapes, strides,
 * storage shared exactly where torch shares it; gradients against float64
 * finite differences and node names; errors, with nothing handed out. */
#include <stdint.h>

#include "gradcheck.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* A float64 tensor of shape s holding 0, 1, 2, ... */
static clt_tensor *iota64(clt_device *dev, int nd, const int64_t *s)
{
    clt_tensor *f = iota(dev, nd, s), *t = NULL;
    CHECK(clt_to_dtype(f, CLT_FLOAT64, &t));
    clt_tensor_free(f);
    return t;
}

static void assert_values(const clt_tensor *t, int nd, const int64_t *shape, const double *want,
                          const char *what)
{
    assert_shape(t, nd, shape);
    assert_tensor_close(t, want, (size_t)host_numel(nd, shape), 0, 0, what);
}

static void assert_strides(const clt_tensor *t, int nd, const int64_t *strides)
{
    for (int d = 0; d < nd; d++)
        cr_assert_eq(clt_tensor_strides(t)[d], strides[d], "stride %d: %lld, want %lld", d,
                     (long long)clt_tensor_strides(t)[d], (long long)strides[d]);
}

/* Whether v shares base's storage: 1 added through v shows in base at
 * exactly the elements v reaches (want: base's values after, or NULL when
 * base must be unchanged). */
static void assert_writes_through(clt_tensor *v, const clt_tensor *base, const double *want)
{
    size_t n = (size_t)clt_tensor_numel(base);
    double *before = read_as_f64(base);
    CHECK(clt_add_scalar_(v, 1.0));
    assert_tensor_close(base, want ? want : before, n, 0, 0, "base after an add_ to the view");
    free(before);
}

static void assert_error_null(clt_status st, clt_tensor *const *out, clt_status want,
                              const char *needle)
{
    assert_error(st, want, needle);
    cr_assert_null(*out, "*out not NULL on failure");
}

static double first_value(const clt_tensor *t)
{
    double *v = read_as_f64(t), first = v[0];
    free(v);
    return first;
}

static void free_pieces(clt_tensor **ps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
}

/* ---- views ---------------------------------------------------------------------------- */

Test(shape_more, unflatten_movedim_swapaxes_are_views)
{
    clt_device *dev = get_device("cpu");
    int64_t s[3] = {4, 6, 5};
    clt_tensor *x = iota64(dev, 3, s), *v = NULL;
    double *want = malloc(120 * sizeof *want), *after = malloc(120 * sizeof *after);
    for (int i = 0; i < 120; i++)
        want[i] = i;

    CHECK(clt_unflatten(x, 1, (int64_t[]){2, -1}, 2, &v));
    assert_values(v, 4, (int64_t[]){4, 2, 3, 5}, want, "unflatten");
    assert_strides(v, 4, (int64_t[]){30, 15, 5, 1});
    cr_assert_null(clt_grad_fn_name(v), "no history without grad");
    for (int i = 0; i < 120; i++)
        after[i] = i + 1;
    assert_writes_through(v, x, after);
    clt_tensor_free(v);
    clt_tensor_free(x);

    /* movedim (0, 2) -> (2, 0): out[a][b][c] = x[c][b][a] */
    x = iota64(dev, 3, s);
    CHECK(clt_movedim(x, (int[]){0, 2}, (int[]){2, 0}, 2, &v));
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 6; b++)
            for (int c = 0; c < 4; c++)
                want[(a * 6 + b) * 4 + c] = c * 30 + b * 5 + a;
    assert_values(v, 3, (int64_t[]){5, 6, 4}, want, "movedim");
    assert_strides(v, 3, (int64_t[]){1, 5, 30});
    clt_tensor_free(v);
    /* movedim 0 -> -1: the others keep their order ([6, 5, 4]) */
    CHECK(clt_movedim(x, (int[]){0}, (int[]){-1}, 1, &v));
    assert_shape(v, 3, (int64_t[]){6, 5, 4});
    assert_strides(v, 3, (int64_t[]){5, 1, 30});
    clt_tensor_free(v);
    /* swapaxes is movedim's special case here too */
    CHECK(clt_swapaxes(x, 0, -1, &v));
    assert_values(v, 3, (int64_t[]){5, 6, 4}, want, "swapaxes");
    for (int i = 0; i < 120; i++)
        after[i] = i + 1;
    assert_writes_through(v, x, after);
    clt_tensor_free(v);

    /* ravel: a view of a contiguous tensor, a copy of a transposed one */
    CHECK(clt_ravel(x, &v));
    cr_assert_eq(clt_tensor_ndim(v), 1);
    for (int i = 0; i < 120; i++)
        after[i] = i + 2;
    assert_writes_through(v, x, after);
    clt_tensor_free(v);
    clt_tensor *tr = NULL;
    CHECK(clt_transpose(x, 0, 2, &tr));
    CHECK(clt_ravel(tr, &v));
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 6; b++)
            for (int c = 0; c < 4; c++)
                want[(a * 6 + b) * 4 + c] = c * 30 + b * 5 + a + 2;
    assert_values(v, 1, (int64_t[]){120}, want, "ravel of a transpose");
    assert_writes_through(v, x, NULL);
    clt_tensor_free(v);
    clt_tensor_free(tr);
    clt_tensor_free(x);
    free(want);
    free(after);
}

Test(shape_more, view_errors_hand_out_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 3, (int64_t[]){4, 6, 5}), *v = (clt_tensor *)0x1;
    assert_error_null(clt_unflatten(x, 1, (int64_t[]){4, -1}, 2, &v), &v,
                      CLT_ERR_INVALID_ARGUMENT,
                      "unflatten: Provided sizes [4, -1] don't multiply up to the size of dim 1 "
                      "(6) in the input tensor");
    assert_error_null(clt_unflatten(x, 1, NULL, 0, &v), &v, CLT_ERR_INVALID_ARGUMENT,
                      "sizes must be non-empty");
    assert_error_null(clt_unflatten(x, 1, (int64_t[]){-1, -1}, 2, &v), &v,
                      CLT_ERR_INVALID_ARGUMENT, "only one dimension can be inferred");
    assert_error_null(clt_unflatten(x, 3, (int64_t[]){5}, 1, &v), &v, CLT_ERR_DIM_OUT_OF_RANGE,
                      NULL);
    assert_error_null(clt_movedim(x, (int[]){0, 0}, (int[]){1, 2}, 2, &v), &v,
                      CLT_ERR_INVALID_ARGUMENT, "movedim: repeated dim in `source` ([0, 0])");
    assert_error_null(clt_movedim(x, (int[]){0, 1}, (int[]){-1, 2}, 2, &v), &v,
                      CLT_ERR_INVALID_ARGUMENT,
                      "movedim: repeated dim in `destination` ([-1, 2])");
    assert_error_null(clt_movedim(x, (int[]){3}, (int[]){0}, 1, &v), &v, CLT_ERR_DIM_OUT_OF_RANGE,
                      NULL);
    assert_error_null(clt_swapaxes(x, 0, 3, &v), &v, CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    clt_tensor *tr = NULL, *o = iota64(dev, 1, (int64_t[]){120});
    CHECK(clt_transpose(x, 0, 1, &tr));
    assert_error_null(clt_view_as(tr, o, &v), &v, CLT_ERR_NOT_CONTIGUOUS, NULL);
    CHECK(clt_reshape_as(tr, o, &v)); /* a copy */
    assert_shape(v, 1, (int64_t[]){120});
    clt_tensor_free(v);
    clt_tensor *col = iota64(dev, 2, (int64_t[]){6, 1});
    CHECK(clt_expand_as(col, x, &v));
    assert_shape(v, 3, (int64_t[]){4, 6, 5});
    assert_strides(v, 3, (int64_t[]){0, 1, 0});
    clt_tensor_free(v);
    v = (clt_tensor *)0x1;
    assert_error_null(clt_expand_as(x, col, &v), &v, CLT_ERR_SHAPE_MISMATCH, NULL);
    clt_tensor_free(col);
    clt_tensor_free(o);
    clt_tensor_free(tr);
    clt_tensor_free(x);
}

Test(shape_more, as_strided_views_and_bounds)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 2, (int64_t[]){4, 5}), *v = NULL, *sl = NULL;
    double want[20];
    /* [3, 4] from storage offset 1 with strides (2, 1): rows overlap */
    CHECK(clt_as_strided(x, 2, (int64_t[]){3, 4}, (int64_t[]){2, 1}, (int64_t[]){1}, &v));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            want[i * 4 + j] = 1 + 2 * i + j;
    assert_values(v, 2, (int64_t[]){3, 4}, want, "as_strided");
    assert_strides(v, 2, (int64_t[]){2, 1});
    clt_tensor_free(v);
    /* the storage offset is the storage's, not the view's: a slice's is kept
     * when none is given */
    CHECK(clt_slice(x, 1, 3, INT64_MAX, 1, &sl));
    CHECK(clt_as_strided(sl, 2, (int64_t[]){2, 2}, (int64_t[]){5, 1}, NULL, &v));
    double w2[4] = {3, 4, 8, 9};
    assert_values(v, 2, (int64_t[]){2, 2}, w2, "as_strided of a slice");
    double after[20];
    for (int i = 0; i < 20; i++)
        after[i] = i + (i == 3 || i == 4 || i == 8 || i == 9);
    assert_writes_through(v, x, after);
    clt_tensor_free(v);
    /* the last element of the storage is in bounds, one past it is not */
    CHECK(clt_as_strided(sl, 0, NULL, NULL, (int64_t[]){19}, &v));
    assert_values(v, 0, NULL, (double[]){19}, "as_strided 0-d");
    clt_tensor_free(v);
    v = (clt_tensor *)0x1;
    assert_error_null(clt_as_strided(sl, 0, NULL, NULL, (int64_t[]){20}, &v), &v,
                      CLT_ERR_INVALID_ARGUMENT,
                      "setStorage: sizes [], strides [], storage offset 20, and itemsize 8 "
                      "requiring a storage size of 168 are out of bounds for storage of size 160");
    assert_error_null(clt_as_strided(x, 2, (int64_t[]){2, 2}, (int64_t[]){-1, 2}, NULL, &v), &v,
                      CLT_ERR_INVALID_ARGUMENT,
                      "as_strided: Negative strides are not supported at the moment, got "
                      "strides: [-1, 2]");
    assert_error_null(clt_as_strided(x, 1, (int64_t[]){2}, (int64_t[]){1}, (int64_t[]){-1}, &v),
                      &v, CLT_ERR_INVALID_ARGUMENT, "invalid storage offset -1");
    assert_error_null(clt_as_strided(x, 2, (int64_t[]){2, 2},
                                     (int64_t[]){INT64_MAX / 2, INT64_MAX / 2}, NULL, &v),
                      &v, CLT_ERR_INVALID_ARGUMENT, "out of bounds for storage of size 160");
    /* an empty view is in bounds wherever it starts */
    CHECK(clt_as_strided(x, 2, (int64_t[]){0, 3}, (int64_t[]){100, 100}, (int64_t[]){50}, &v));
    assert_shape(v, 2, (int64_t[]){0, 3});
    clt_tensor_free(v);
    clt_tensor_free(sl);
    clt_tensor_free(x);
}

Test(shape_more, atleast_nd)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *s0 = iota64(dev, 0, NULL), *s1 = iota64(dev, 1, (int64_t[]){3}),
               *s2 = iota64(dev, 2, (int64_t[]){2, 3}), *v = NULL;
    struct {
        clt_status (*f)(const clt_tensor *, clt_tensor **);
        clt_tensor *in;
        int nd;
        int64_t shape[3];
    } cases[] = {{clt_atleast_1d, s0, 1, {1}},        {clt_atleast_2d, s0, 2, {1, 1}},
                 {clt_atleast_3d, s0, 3, {1, 1, 1}},  {clt_atleast_2d, s1, 2, {1, 3}},
                 {clt_atleast_3d, s1, 3, {1, 3, 1}},  {clt_atleast_3d, s2, 3, {2, 3, 1}},
                 {clt_atleast_1d, s2, 2, {2, 3}}};
    double want[6] = {0, 1, 2, 3, 4, 5};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        CHECK(cases[k].f(cases[k].in, &v));
        assert_values(v, cases[k].nd, cases[k].shape, want, "atleast");
        cr_assert(v != cases[k].in || clt_tensor_ndim(cases[k].in) >= cases[k].nd);
        clt_tensor_free(v);
    }
    /* enough dims: a handle on t's storage */
    CHECK(clt_atleast_2d(s2, &v));
    cr_assert_neq(v, s2);
    double after[6] = {1, 2, 3, 4, 5, 6};
    assert_writes_through(v, s2, after);
    clt_tensor_free(v);
    assert_shape(s2, 2, (int64_t[]){2, 3});
    clt_tensor_free(s0);
    clt_tensor_free(s1);
    clt_tensor_free(s2);
}

/* ---- splits ----------------------------------------------------------------------------- */

/* The pieces of a [4, 7, 3] iota split along dim 1 at the bounds lo[i]..hi[i]. */
static void assert_pieces(clt_tensor **ps, size_t n, const int64_t *lo, const int64_t *hi,
                          size_t want_n)
{
    cr_assert_eq(n, want_n, "%zu pieces, want %zu", n, want_n);
    for (size_t p = 0; p < n; p++) {
        int64_t len = hi[p] - lo[p], sh[3] = {4, len, 3};
        double want[84];
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < len; j++)
                for (int64_t k = 0; k < 3; k++)
                    want[(i * len + j) * 3 + k] = i * 21 + (lo[p] + j) * 3 + k;
        assert_values(ps[p], 3, sh, want, "piece");
        assert_strides(ps[p], 3, (int64_t[]){21, 3, 1});
    }
}

Test(shape_more, tensor_split_sections_and_indices)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 3, (int64_t[]){4, 7, 3}), **ps = NULL;
    size_t n = 0;
    /* 7 in 3 sections: 3, 2, 2 */
    CHECK(clt_tensor_split(x, 3, 1, &ps, &n));
    assert_pieces(ps, n, (int64_t[]){0, 3, 5}, (int64_t[]){3, 5, 7}, 3);
    /* a piece is a view: writing into it changes x */
    CHECK(clt_add_scalar_(ps[1], 1000.0));
    double *xv = read_as_f64(x);
    for (int i = 0; i < 84; i++) {
        int j = (i / 3) % 7;
        cr_assert_eq(xv[i], i + (j >= 3 && j < 5 ? 1000 : 0), "element %d", i);
    }
    free(xv);
    free_pieces(ps, n);
    clt_tensor_free(x);
    x = iota64(dev, 3, (int64_t[]){4, 7, 3});
    /* 7 in 9 sections: 7 of one element, 2 empty */
    CHECK(clt_tensor_split(x, 9, -2, &ps, &n));
    assert_pieces(ps, n, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 7},
                  (int64_t[]){1, 2, 3, 4, 5, 6, 7, 7, 7}, 9);
    free_pieces(ps, n);
    /* indices as Python slices: negative from the end, decreasing empty,
     * past the end clamped */
    CHECK(clt_tensor_split_indices(x, (int64_t[]){2, -2}, 2, 1, &ps, &n));
    assert_pieces(ps, n, (int64_t[]){0, 2, 5}, (int64_t[]){2, 5, 7}, 3);
    free_pieces(ps, n);
    CHECK(clt_tensor_split_indices(x, (int64_t[]){5, 2, 20}, 3, 1, &ps, &n));
    assert_pieces(ps, n, (int64_t[]){0, 5, 2, 7}, (int64_t[]){5, 5, 7, 7}, 4);
    free_pieces(ps, n);
    CHECK(clt_tensor_split_indices(x, NULL, 0, 1, &ps, &n));
    assert_pieces(ps, n, (int64_t[]){0}, (int64_t[]){7}, 1);
    free_pieces(ps, n);
    /* hsplit of 3-D splits dim 1 */
    CHECK(clt_hsplit_indices(x, (int64_t[]){3}, 1, &ps, &n));
    assert_pieces(ps, n, (int64_t[]){0, 3}, (int64_t[]){3, 7}, 2);
    free_pieces(ps, n);
    CHECK(clt_vsplit(x, 2, &ps, &n));
    cr_assert_eq(n, 2);
    assert_shape(ps[1], 3, (int64_t[]){2, 7, 3});
    cr_assert_eq(first_value(ps[1]), 42, "vsplit's second piece starts at row 2");
    free_pieces(ps, n);
    CHECK(clt_dsplit(x, 3, &ps, &n));
    cr_assert_eq(n, 3);
    assert_shape(ps[2], 3, (int64_t[]){4, 7, 1});
    cr_assert_eq(first_value(ps[2]), 2, "dsplit's last piece starts at column 2");
    free_pieces(ps, n);

    /* refusals leave *outs NULL and *n 0 */
    ps = (clt_tensor **)0x1;
    n = 5;
    assert_error(clt_tensor_split(x, 0, 1, &ps, &n), CLT_ERR_INVALID_ARGUMENT,
                 "number of sections must be larger than 0, got 0");
    cr_assert(ps == NULL && n == 0);
    assert_error(clt_hsplit(x, 2, &ps, &n), CLT_ERR_INVALID_ARGUMENT,
                 "torch.hsplit attempted to split along dimension 1, but the size of the "
                 "dimension 7 is not divisible by the split_size 2!");
    cr_assert(ps == NULL && n == 0);
    clt_tensor *v1 = iota64(dev, 1, (int64_t[]){6}), *s0 = iota64(dev, 0, NULL);
    assert_error(clt_vsplit(v1, 2, &ps, &n), CLT_ERR_INVALID_ARGUMENT,
                 "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor "
                 "with 1 dimensions!");
    assert_error(clt_tensor_split(s0, 2, 0, &ps, &n), CLT_ERR_INVALID_ARGUMENT,
                 "tensor_split expected at least a 1-dimensional tensor");
    assert_error(clt_tensor_split_indices(x, (int64_t[]){1}, 1, 3, &ps, &n),
                 CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert(ps == NULL && n == 0);
    /* hsplit of 1-D splits dim 0 */
    CHECK(clt_hsplit(v1, 3, &ps, &n));
    cr_assert_eq(n, 3);
    assert_tensor_close(ps[2], (double[]){4, 5}, 2, 0, 0, "hsplit of 1-D");
    free_pieces(ps, n);
    clt_tensor_free(v1);
    clt_tensor_free(s0);
    clt_tensor_free(x);
}

/* ---- joins ------------------------------------------------------------------------------ */

Test(shape_more, hstack_vstack_dstack_column_stack)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = iota64(dev, 1, (int64_t[]){3}), *b = NULL, *m = NULL, *m2 = NULL, *o = NULL;
    double bv[4] = {10, 11, 12, 13};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){4}, bv, &b));
    CHECK(clt_hstack((const clt_tensor *[]){a, b}, 2, &o));
    assert_values(o, 1, (int64_t[]){7}, (double[]){0, 1, 2, 10, 11, 12, 13}, "hstack 1-d");
    clt_tensor_free(o);
    m = iota64(dev, 2, (int64_t[]){3, 2});
    m2 = iota64(dev, 2, (int64_t[]){3, 2});
    CHECK(clt_hstack((const clt_tensor *[]){m, m2}, 2, &o));
    assert_values(o, 2, (int64_t[]){3, 4}, (double[]){0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5},
                  "hstack 2-d");
    clt_tensor_free(o);
    CHECK(clt_vstack((const clt_tensor *[]){a, a}, 2, &o));
    assert_values(o, 2, (int64_t[]){2, 3}, (double[]){0, 1, 2, 0, 1, 2}, "vstack 1-d");
    clt_tensor_free(o);
    CHECK(clt_dstack((const clt_tensor *[]){m, m2}, 2, &o));
    double dw[12];
    for (int i = 0; i < 6; i++)
        dw[2 * i] = dw[2 * i + 1] = i;
    assert_values(o, 3, (int64_t[]){3, 2, 2}, dw, "dstack");
    clt_tensor_free(o);
    /* column_stack: 1-D tensors become columns, 2-D ones stay */
    CHECK(clt_column_stack((const clt_tensor *[]){a, m}, 2, &o));
    assert_values(o, 2, (int64_t[]){3, 3}, (double[]){0, 0, 1, 1, 2, 3, 2, 4, 5},
                  "column_stack");
    clt_tensor_free(o);
    /* promotion as cat: int32 with float64 */
    clt_tensor *ai = NULL;
    CHECK(clt_to_dtype(a, CLT_INT32, &ai));
    CHECK(clt_vstack((const clt_tensor *[]){ai, a}, 2, &o));
    cr_assert_eq(clt_tensor_dtype(o), CLT_FLOAT64);
    clt_tensor_free(o);
    o = (clt_tensor *)0x1;
    assert_error_null(clt_vstack((const clt_tensor *[]){a, b}, 2, &o), &o, CLT_ERR_SHAPE_MISMATCH,
                      "Sizes of tensors must match except in dimension 0");
    assert_error_null(clt_hstack(NULL, 0, &o), &o, CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error_null(clt_dstack((const clt_tensor *[]){a}, 0, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "dstack expects a non-empty TensorList");
    clt_tensor_free(ai);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(m);
    clt_tensor_free(m2);
}

/* ---- rot90 ----------------------------------------------------------------------------- */

Test(shape_more, rot90_every_quarter)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 2, (int64_t[]){3, 4}), *o = NULL;
    const int H = 3, W = 4;
    for (int64_t k = -5; k <= 5; k++) {
        int q = (int)(((k % 4) + 4) % 4);
        double want[12];
        int oh = q % 2 ? W : H, ow = q % 2 ? H : W;
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                int si = q == 0 ? i : q == 1 ? j : q == 2 ? H - 1 - i : H - 1 - j;
                int sj = q == 0 ? j : q == 1 ? W - 1 - i : q == 2 ? W - 1 - j : i;
                want[i * ow + j] = si * W + sj;
            }
        CHECK(clt_rot90(x, k, 0, 1, &o));
        assert_values(o, 2, (int64_t[]){oh, ow}, want, "rot90");
        /* torch's layouts: odd k the transpose of a flipped copy */
        if (q % 2)
            assert_strides(o, 2, (int64_t[]){1, oh});
        else
            assert_strides(o, 2, (int64_t[]){ow, 1});
        assert_writes_through(o, x, NULL);
        clt_tensor_free(o);
    }
    /* dims (1, 0) turn the other way: rot90(x, 1, (1, 0)) == rot90(x, 3, (0, 1)) */
    clt_tensor *p = NULL;
    CHECK(clt_rot90(x, 1, 1, 0, &o));
    CHECK(clt_rot90(x, 3, 0, 1, &p));
    double *pv = read_as_f64(p);
    assert_values(o, 2, (int64_t[]){4, 3}, pv, "rot90 (1, 0)");
    free(pv);
    clt_tensor_free(o);
    clt_tensor_free(p);
    o = (clt_tensor *)0x1;
    assert_error_null(clt_rot90(x, 1, 0, 0, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0");
    assert_error_null(clt_rot90(x, 1, 0, 2, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "expected rotation dims to be different");
    assert_error_null(clt_rot90(x, 1, 3, 0, &o), &o, CLT_ERR_DIM_OUT_OF_RANGE,
                      "Rotation dim0 out of range, dim0 = 3");
    clt_tensor *v = iota64(dev, 1, (int64_t[]){3});
    assert_error_null(clt_rot90(v, 1, 0, 1, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "expected total dims >= 2, but got total dims = 1");
    clt_tensor_free(v);
    clt_tensor_free(x);
}

/* ---- products of indices and pdist ------------------------------------------------------ */

Test(shape_more, cartesian_prod_and_combinations)
{
    clt_device *dev = get_device("cpu");
    double av[3] = {1, 2, 3}, bv[2] = {10, 20}, cv[5] = {5, 7, 11, 13, 17};
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *o = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, av, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){2}, bv, &b));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){5}, cv, &c));
    CHECK(clt_cartesian_prod((const clt_tensor *[]){a, b}, 2, &o));
    double want[40 * 3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            want[(i * 2 + j) * 2] = av[i];
            want[(i * 2 + j) * 2 + 1] = bv[j];
        }
    assert_values(o, 2, (int64_t[]){6, 2}, want, "cartesian_prod");
    clt_tensor_free(o);
    CHECK(clt_cartesian_prod((const clt_tensor *[]){c}, 1, &o));
    assert_values(o, 1, (int64_t[]){5}, cv, "cartesian_prod of one tensor");
    clt_tensor_free(o);

    /* r = 2 and 3, without and with replacement, against nested loops */
    for (int rep = 0; rep < 2; rep++) {
        int m = 0;
        for (int i = 0; i < 5; i++)
            for (int j = rep ? i : i + 1; j < 5; j++, m++) {
                want[2 * m] = cv[i];
                want[2 * m + 1] = cv[j];
            }
        CHECK(clt_combinations(c, 2, rep, &o));
        assert_values(o, 2, (int64_t[]){m, 2}, want, "combinations r=2");
        clt_tensor_free(o);
        m = 0;
        for (int i = 0; i < 5; i++)
            for (int j = rep ? i : i + 1; j < 5; j++)
                for (int k = rep ? j : j + 1; k < 5; k++, m++) {
                    want[3 * m] = cv[i];
                    want[3 * m + 1] = cv[j];
                    want[3 * m + 2] = cv[k];
                }
        CHECK(clt_combinations(c, 3, rep, &o));
        assert_values(o, 2, (int64_t[]){m, 3}, want, "combinations r=3");
        clt_tensor_free(o);
    }
    CHECK(clt_combinations(c, 0, 0, &o));
    assert_shape(o, 1, (int64_t[]){0});
    clt_tensor_free(o);
    CHECK(clt_combinations(c, 6, 0, &o));
    assert_shape(o, 2, (int64_t[]){0, 6});
    clt_tensor_free(o);
    o = (clt_tensor *)0x1;
    assert_error_null(clt_combinations(c, -1, 0, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "Expect a non-negative number, but got -1");
    clt_tensor *m = iota64(dev, 2, (int64_t[]){2, 2});
    assert_error_null(clt_combinations(m, 2, 0, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "Expect a 1D vector, but got shape [2, 2]");
    assert_error_null(clt_cartesian_prod((const clt_tensor *[]){a, m}, 2, &o), &o,
                      CLT_ERR_INVALID_ARGUMENT, "Expect a 1D vector");
    /* C(60, 30) pairs of 30 indices pass any buffer */
    clt_tensor *big = iota64(dev, 1, (int64_t[]){60});
    assert_error_null(clt_combinations(big, 30, 0, &o), &o, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                      "int64 indices of the combinations exceed the largest buffer");
    clt_tensor_free(big);
    clt_tensor_free(m);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

static double host_pdist(const double *x, int64_t i, int64_t j, int64_t m, double p)
{
    double acc = 0;
    for (int64_t k = 0; k < m; k++) {
        double d = fabs(x[i * m + k] - x[j * m + k]);
        if (p == 0)
            acc += d != 0;
        else if (isinf(p))
            acc = fmax(acc, d);
        else
            acc += pow(d, p);
    }
    return p == 0 || isinf(p) ? acc : pow(acc, 1 / p);
}

Test(shape_more, pdist_values)
{
    clt_device *dev = get_device("cpu");
    double *x = spread_doubles(24, 5);
    for (int k = 0; k < 4; k++)
        x[4 * 4 + k] = x[1 * 4 + k]; /* rows 1 and 4 equal */
    clt_tensor *t = NULL, *o = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){6, 4}, x, &t));
    const double ps[] = {2, 1, 0.5, 3, 0, INFINITY};
    for (size_t q = 0; q < sizeof ps / sizeof ps[0]; q++) {
        double want[15];
        int c = 0;
        for (int i = 0; i < 6; i++)
            for (int j = i + 1; j < 6; j++)
                want[c++] = host_pdist(x, i, j, 4, ps[q]);
        CHECK(clt_pdist(t, ps[q], &o));
        assert_shape(o, 1, (int64_t[]){15});
        assert_tensor_close(o, want, 15, 1e-12, 1e-14, "pdist");
        clt_tensor_free(o);
    }
    clt_tensor *one = iota64(dev, 2, (int64_t[]){1, 3});
    CHECK(clt_pdist(one, 2, &o));
    assert_shape(o, 1, (int64_t[]){0});
    clt_tensor_free(o);
    o = (clt_tensor *)0x1;
    clt_tensor *v = iota64(dev, 1, (int64_t[]){3}), *i32 = NULL;
    CHECK(clt_to_dtype(t, CLT_INT32, &i32));
    assert_error_null(clt_pdist(v, 2, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "pdist only supports 2D tensors, got: 1D");
    assert_error_null(clt_pdist(t, -1, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "pdist only supports non-negative p values");
    assert_error_null(clt_pdist(t, NAN, &o), &o, CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error_null(clt_pdist(i32, 2, &o), &o, CLT_ERR_DTYPE_UNSUPPORTED,
                      "pdist only supports floating-point dtypes");
    /* the gradient at a zero distance is 0, as torch's (p = 2) */
    clt_tensor *loss = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_pdist(t, 2, &o));
    CHECK(clt_sum(o, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(t, &g));
    double *gv = read_as_f64(g), want[24] = {0};
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++) {
            double r = host_pdist(x, i, j, 4, 2);
            for (int k = 0; k < 4 && r > 0; k++) {
                double d = (x[i * 4 + k] - x[j * 4 + k]) / r;
                want[i * 4 + k] += d;
                want[j * 4 + k] -= d;
            }
        }
    for (int k = 0; k < 24; k++)
        cr_assert(close_enough(gv[k], want[k], 1e-10, 1e-12), "grad %d: %g, want %g", k, gv[k],
                  want[k]);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(o);
    clt_tensor_free(i32);
    clt_tensor_free(v);
    clt_tensor_free(one);
    clt_tensor_free(t);
    free(x);
}

/* ---- select -------------------------------------------------------------------------- */

Test(shape_more, select_is_a_view)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 3, (int64_t[]){3, 4, 5}), *o = NULL;
    double want[60];
    /* x[:, -1] of [3, 4, 5]: x[i, 3, j] = 20 i + 15 + j, strides of x without dim 1 */
    CHECK(clt_select(x, 1, -1, &o));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            want[i * 5 + j] = 20 * i + 15 + j;
    assert_values(o, 2, (int64_t[]){3, 5}, want, "select(x, 1, -1)");
    assert_strides(o, 2, (int64_t[]){20, 1});
    double after[60];
    for (int k = 0; k < 60; k++)
        after[k] = k + (k % 20 >= 15 ? 1 : 0);
    assert_writes_through(o, x, after);
    clt_tensor_free(o);
    /* x[2] (after the add above), and a 1-D tensor's element: 0-dim */
    CHECK(clt_select(x, 0, 2, &o));
    assert_values(o, 2, (int64_t[]){4, 5}, after + 40, "select(x, 0, 2)");
    clt_tensor *e = NULL;
    CHECK(clt_select(o, 1, 0, &e));
    clt_tensor *e0 = NULL;
    CHECK(clt_select(e, 0, -4, &e0));
    cr_assert_eq(clt_tensor_ndim(e0), 0);
    cr_assert_eq(first_value(e0), 40);
    /* errors, in torch's words, with nothing handed out */
    clt_tensor *o2 = (clt_tensor *)0x1;
    assert_error_null(clt_select(x, 1, 4, &o2), &o2, CLT_ERR_INDEX_OUT_OF_RANGE,
                      "select(): index 4 out of range for tensor of size [3, 4, 5] at "
                      "dimension 1");
    assert_error_null(clt_select(x, 0, -4, &o2), &o2, CLT_ERR_INDEX_OUT_OF_RANGE,
                      "index -4 out of range");
    assert_error_null(clt_select(e0, 0, 0, &o2), &o2, CLT_ERR_INDEX_OUT_OF_RANGE,
                      "select() cannot be applied to a 0-dim tensor.");
    assert_error_null(clt_select(x, 3, 0, &o2), &o2, CLT_ERR_DIM_OUT_OF_RANGE,
                      "Dimension out of range");
    assert_error_null(clt_select(NULL, 0, 0, &o2), &o2, CLT_ERR_NULL_ARGUMENT, "clt_select");
    clt_tensor_free(e0);
    clt_tensor_free(e);
    clt_tensor_free(o);
    clt_tensor_free(x);
}

/* ---- narrow_copy and the scatters ----------------------------------------------------- */

Test(shape_more, narrow_copy_is_a_copy)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 2, (int64_t[]){4, 5}), *o = NULL;
    CHECK(clt_narrow_copy(x, 1, -3, 2, &o));
    assert_values(o, 2, (int64_t[]){4, 2}, (double[]){2, 3, 7, 8, 12, 13, 17, 18},
                  "narrow_copy");
    cr_assert(clt_tensor_is_contiguous(o));
    assert_writes_through(o, x, NULL);
    clt_tensor_free(o);
    o = (clt_tensor *)0x1;
    assert_error_null(clt_narrow_copy(x, 1, 4, 2, &o), &o, CLT_ERR_INVALID_ARGUMENT,
                      "start (4) + length (2) exceeds dimension size (5)");
    clt_tensor_free(x);
}

Test(shape_more, select_slice_diagonal_scatter)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 2, (int64_t[]){4, 5}), *o = NULL, *src = NULL;
    double base[20], want[20];
    for (int i = 0; i < 20; i++)
        base[i] = i;
    /* select_scatter along dim 1 at -2 (column 3), from int32 values */
    double sv[4] = {-1, -2, -3, -4};
    src = tensor_of(dev, CLT_INT32, 1, (int64_t[]){4}, sv);
    CHECK(clt_select_scatter(x, src, 1, -2, &o));
    memcpy(want, base, sizeof want);
    for (int i = 0; i < 4; i++)
        want[i * 5 + 3] = sv[i];
    assert_values(o, 2, (int64_t[]){4, 5}, want, "select_scatter");
    cr_assert_eq(clt_tensor_dtype(o), CLT_FLOAT64);
    assert_writes_through(o, x, NULL);
    clt_tensor_free(o);
    clt_tensor_free(src);
    /* slice_scatter along dim 1, 1::2 (columns 1 and 3) */
    double s2[8] = {-1, -2, -3, -4, -5, -6, -7, -8};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){4, 2}, s2, &src));
    CHECK(clt_slice_scatter(x, src, 1, 1, INT64_MAX, 2, &o));
    memcpy(want, base, sizeof want);
    for (int i = 0; i < 4; i++) {
        want[i * 5 + 1] = s2[2 * i];
        want[i * 5 + 3] = s2[2 * i + 1];
    }
    assert_values(o, 2, (int64_t[]){4, 5}, want, "slice_scatter");
    clt_tensor_free(o);
    clt_tensor *o2 = (clt_tensor *)0x1;
    assert_error_null(clt_slice_scatter(x, src, 1, 0, 3, 1, &o2), &o2, CLT_ERR_SHAPE_MISMATCH,
                      "expected src to have a size equal to the slice of self. src size = "
                      "[4, 2], slice size = [4, 3]");
    clt_tensor_free(src);
    /* diagonal_scatter above the diagonal: (0, 1), (1, 2), (2, 3), (3, 4) */
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){4}, sv, &src));
    CHECK(clt_diagonal_scatter(x, src, 1, 0, 1, &o));
    memcpy(want, base, sizeof want);
    for (int i = 0; i < 4; i++)
        want[i * 5 + i + 1] = sv[i];
    assert_values(o, 2, (int64_t[]){4, 5}, want, "diagonal_scatter");
    clt_tensor_free(o);
    o2 = (clt_tensor *)0x1;
    assert_error_null(clt_select_scatter(x, src, 1, 5, &o2), &o2, CLT_ERR_INDEX_OUT_OF_RANGE,
                      "select(): index 5 out of range for tensor of size [4, 5] at dimension 1");
    assert_error_null(clt_diagonal_scatter(x, src, 0, 1, 1, &o2), &o2, CLT_ERR_INVALID_ARGUMENT,
                      "diagonal dimensions cannot be identical");
    clt_tensor_free(src);
    clt_tensor_free(x);
}

/* ---- gradients ---------------------------------------------------------------------------- */

typedef struct gc_case {
    int which;
    int64_t k;
} gc_case;

/* Each function on in[0] (and in[1]), by c->which. */
static clt_status shape_fn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gc_case *c = ctx;
    clt_tensor *tmp = NULL, **ps = NULL;
    size_t n = 0;
    clt_status st;
    switch (c->which) {
    case 0:
        return clt_rot90(in[0], c->k, 0, 2, out);
    case 1: /* elements read twice */
        return clt_as_strided(in[0], 2, (int64_t[]){3, 4}, (int64_t[]){2, 1}, (int64_t[]){1},
                              out);
    case 2: /* an input whose elements alias one another */
        st = clt_expand(in[0], 2, (int64_t[]){3, 5}, &tmp);
        if (st == CLT_OK)
            st = clt_as_strided(tmp, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, NULL, out);
        clt_tensor_free(tmp);
        return st;
    case 3:
        return clt_combinations(in[0], c->k, 1, out);
    case 4:
        return clt_pdist(in[0], (double)c->k, out);
    case 5:
        return clt_select_scatter(in[0], in[1], 1, -1, out);
    case 6:
        return clt_slice_scatter(in[0], in[1], 1, 0, 4, 3, out);
    case 7:
        return clt_diagonal_scatter(in[0], in[1], -1, 1, 0, out);
    case 8: /* the pieces in reverse order */
        st = clt_tensor_split(in[0], 3, 1, &ps, &n);
        if (st == CLT_OK) {
            clt_tensor *rev[3] = {ps[2], ps[1], ps[0]};
            st = clt_cat((const clt_tensor *const *)rev, 3, 1, out);
            free_pieces(ps, n);
        }
        return st;
    case 11:
        return clt_select(in[0], (int)c->k, -2, out);
    case 9:
        return clt_column_stack((const clt_tensor *[]){in[1], in[0]}, 2, out);
    default:
        return clt_cartesian_prod((const clt_tensor *[]){in[1], in[1]}, 2, out);
    }
}

Test(shape_more, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double *x = spread_doubles(60, 11), *y = spread_doubles(12, 12);
    gc_in x345 = {3, {3, 4, 5}, x, 1}, x45 = {2, {4, 5}, x, 1}, x5 = {1, {5}, x, 1},
          x6 = {1, {6}, x, 1}, x64 = {2, {6, 4}, x, 1};
    for (int64_t k = 1; k <= 3; k++) {
        gc_case c = {0, k};
        gradcheck(dev, shape_fn, &c, 1, &x345);
    }
    gradcheck(dev, shape_fn, &(gc_case){1, 0}, 1, &x45);
    gradcheck(dev, shape_fn, &(gc_case){2, 0}, 1, &x5);
    gradcheck(dev, shape_fn, &(gc_case){3, 2}, 1, &x6);
    for (int64_t p = 1; p <= 3; p++)
        gradcheck(dev, shape_fn, &(gc_case){4, p}, 1, &x64);
    gc_in sel[2] = {x45, {1, {4}, y, 1}}, sli[2] = {x45, {2, {4, 2}, y, 1}},
          dia[2] = {x45, {1, {4}, y, 1}};
    gradcheck(dev, shape_fn, &(gc_case){5, 0}, 2, sel);
    gradcheck(dev, shape_fn, &(gc_case){6, 0}, 2, sli);
    gradcheck(dev, shape_fn, &(gc_case){7, 0}, 2, dia);
    gradcheck(dev, shape_fn, &(gc_case){8, 0}, 1, &x345);
    gc_in col[2] = {x45, {1, {4}, y, 1}};
    gradcheck(dev, shape_fn, &(gc_case){9, 0}, 2, col);
    gc_in cart[2] = {{1, {5}, x, 0}, {1, {3}, y, 1}};
    gradcheck(dev, shape_fn, &(gc_case){10, 0}, 2, cart);
    for (int64_t d = 0; d < 3; d++)
        gradcheck(dev, shape_fn, &(gc_case){11, d}, 1, &x345);
    free(x);
    free(y);
}

Test(shape_more, node_names)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota64(dev, 2, (int64_t[]){4, 5}), *v = iota64(dev, 1, (int64_t[]){4}), *o;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(v, 1));
    struct {
        const char *want;
        clt_status st;
    } got[16];
    clt_tensor *outs[16] = {0};
    int k = 0;
#define NAMED(want_, call)                                                                   \
    do {                                                                                     \
        got[k].want = want_;                                                                 \
        got[k].st = (call);                                                                  \
        k++;                                                                                 \
    } while (0)
    NAMED("ViewBackward0", clt_unflatten(x, 1, (int64_t[]){5, 1}, 2, &outs[k]));
    NAMED("PermuteBackward0", clt_movedim(x, (int[]){0}, (int[]){1}, 1, &outs[k]));
    NAMED("TransposeBackward0", clt_swapaxes(x, 0, 1, &outs[k]));
    NAMED("AsStridedBackward0",
          clt_as_strided(x, 1, (int64_t[]){3}, (int64_t[]){2}, NULL, &outs[k]));
    NAMED("Rot90Backward0", clt_rot90(x, 1, 0, 1, &outs[k]));
    NAMED("UnsqueezeBackward0", clt_atleast_2d(v, &outs[k]));
    NAMED("CatBackward0", clt_hstack((const clt_tensor *[]){x, x}, 2, &outs[k]));
    NAMED("StackBackward0", clt_cartesian_prod((const clt_tensor *[]){v, v}, 2, &outs[k]));
    NAMED("StackBackward0", clt_combinations(v, 2, 0, &outs[k]));
    NAMED("PdistBackward0", clt_pdist(x, 2.0, &outs[k]));
    NAMED("SelectScatterBackward0", clt_select_scatter(x, v, 1, 0, &outs[k]));
    NAMED("SelectBackward0", clt_select(x, 0, -1, &outs[k]));
    NAMED("SliceScatterBackward0", clt_slice_scatter(x, x, 0, 0, INT64_MAX, 1, &outs[k]));
    NAMED("DiagonalScatterBackward0", clt_diagonal_scatter(x, v, 0, 0, 1, &outs[k]));
    clt_tensor *wide = iota64(dev, 2, (int64_t[]){3, 4});
    NAMED("ExpandBackward0", clt_expand_as(v, wide, &outs[k]));
#undef NAMED
    for (int i = 0; i < k; i++) {
        cr_assert_eq(got[i].st, CLT_OK, "case %d: %s", i, clt_last_error());
        cr_assert_str_eq(clt_grad_fn_name(outs[i]), got[i].want, "case %d", i);
        clt_tensor_free(outs[i]);
    }
    clt_tensor **ps = NULL;
    size_t n = 0;
    CHECK(clt_tensor_split(x, 2, 0, &ps, &n));
    cr_assert_str_eq(clt_grad_fn_name(ps[1]), "SliceBackward0");
    free_pieces(ps, n);
    /* t's own history when it has the dims: its grad_fn, or AliasBackward0
     * for a leaf; the gradient reaches the leaf */
    clt_tensor *y = NULL, *loss = NULL, *g = NULL;
    CHECK(clt_atleast_1d(x, &o));
    cr_assert_str_eq(clt_grad_fn_name(o), "AliasBackward0");
    CHECK(clt_mul_scalar(x, 2.0, &y));
    clt_tensor_free(o);
    CHECK(clt_atleast_2d(y, &o));
    cr_assert_str_eq(clt_grad_fn_name(o), "MulBackward1"); /* torch: x * 2 */
    CHECK(clt_sum(o, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(x, &g));
    double twos[20];
    for (int i = 0; i < 20; i++)
        twos[i] = 2;
    assert_tensor_close(g, twos, 20, 0, 0, "gradient through atleast_2d");
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(o);
    clt_tensor_free(wide);
    clt_tensor_free(x);
    clt_tensor_free(v);
}
