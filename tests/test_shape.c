/* test_shape.c: the shape ops of view.h (split, split_sizes, chunk, unbind,
 * diagonal, flip, roll, repeat, tile, repeat_interleave, tril, triu, diag,
 * pad), clt_trace and the constructions of tensor.h (linspace, logspace,
 * eye, tril/triu_indices, meshgrid) against references computed here on the
 * host: transposed and sliced inputs, every dtype, negative dims, empty
 * tensors; their gradients against float64 finite differences and their
 * node names; and the errors, with nothing handed out. */
#include <stdint.h>

#include "gradcheck.h"
#include "internal.h"

/* ---- host arrays -------------------------------------------------------------------- */

/* Small integers every dtype holds exactly (0/1 for bool, >= 0 for uint8). */
static double value_at(int64_t i, clt_dtype dt)
{
    if (dt == CLT_BOOL)
        return (double)((i * 5 + 1) % 3 == 0);
    double v = (double)((i * 7 + 3) % 13);
    return dt == CLT_UINT8 ? v : v - 6;
}

/* A tensor of logical shape s whose storage has the last two dims swapped
 * (a transposed view, not contiguous), holding value_at of each logical
 * index; *host gets those values (row-major, to free). */
static clt_tensor *mk_transposed(clt_device *dev, clt_dtype dt, int nd, const int64_t *s,
                                 double **host)
{
    int64_t n = host_numel(nd, s), bs[CLT_MAX_DIMS], c[CLT_MAX_DIMS];
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h), *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    memcpy(bs, s, sizeof(int64_t) * (size_t)nd);
    bs[nd - 1] = s[nd - 2];
    bs[nd - 2] = s[nd - 1];
    for (int64_t i = 0; i < n; i++) {
        h[i] = value_at(i, dt);
        host_unravel(i, nd, s, c);
        int64_t t = c[nd - 1];
        c[nd - 1] = c[nd - 2];
        c[nd - 2] = t;
        b[host_ravel(c, nd, bs)] = h[i];
    }
    clt_tensor *base = tensor_of(dev, dt, nd, bs, b), *v = NULL;
    CHECK(clt_transpose(base, -1, -2, &v));
    if (s[nd - 1] > 1 && s[nd - 2] > 1)
        cr_assert_not(clt_tensor_is_contiguous(v));
    clt_tensor_free(base);
    free(b);
    *host = h;
    return v;
}

/* The source coordinate of output coordinate j along dim d (-1: the fill
 * value). */
typedef int64_t (*src_fn)(int d, int64_t j, const void *ctx);

/* out[c] = in[map(c)] (fill where a coordinate maps to -1), for an input
 * of shape is and an output of shape os, both nd dims. */
static double *gather_ref(const double *in, int nd, const int64_t *is, const int64_t *os,
                          src_fn map, const void *ctx, double fill)
{
    int64_t n = host_numel(nd, os), c[CLT_MAX_DIMS];
    double *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    for (int64_t i = 0; i < n; i++) {
        host_unravel(i, nd, os, c);
        bool filled = false;
        for (int d = 0; d < nd; d++) {
            c[d] = map(d, c[d], ctx);
            filled = filled || c[d] < 0;
        }
        r[i] = filled ? fill : in[host_ravel(c, nd, is)];
    }
    return r;
}

/* got's shape is (nd, s) and its values want's, exactly. */
static void assert_values(const clt_tensor *got, int nd, const int64_t *s, const double *want)
{
    assert_shape(got, nd, s);
    int64_t n = host_numel(nd, s);
    double *g = read_as_f64(got);
    for (int64_t i = 0; i < n; i++)
        cr_assert(g[i] == want[i] || (isnan(g[i]) && isnan(want[i])),
                  "element %lld: got %g, want %g", (long long)i, g[i], want[i]);
    free(g);
}

static const clt_dtype all_dtypes[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT32, CLT_INT64, CLT_UINT8,
                                       CLT_BOOL};

/* ---- splits and diagonals ---------------------------------------------------------------- */

Test(shape, split_chunk_unbind_pieces)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {4, 7};
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, CLT_FLOAT32, 2, s, &h), **ps = NULL;
    size_t n = 0;
    /* split 3 along -1: [4, 3], [4, 3], [4, 1] */
    CHECK(clt_split(t, 3, -1, &ps, &n));
    cr_assert_eq(n, 3);
    for (size_t p = 0; p < n; p++) {
        int64_t len = p < 2 ? 3 : 1, ps_[2] = {4, len};
        double want[12];
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < len; j++)
                want[i * len + j] = h[i * 7 + (int64_t)p * 3 + j];
        assert_values(ps[p], 2, ps_, want);
    }
    /* The array may go first: the pieces stay the caller's. */
    clt_tensor *kept[3] = {ps[0], ps[1], ps[2]};
    clt_free(ps);
    for (size_t p = 0; p < 3; p++)
        clt_tensor_free(kept[p]);
    /* chunk 3 of 7: pieces of ceil(7 / 3) = 3 */
    CHECK(clt_chunk(t, 3, 1, &ps, &n));
    cr_assert_eq(n, 3);
    cr_assert_eq(clt_tensor_shape(ps[2])[1], 1);
    for (size_t p = 0; p < n; p++)
        clt_tensor_free(ps[p]);
    clt_free(ps);
    /* chunk 4 of 4 rows; chunk 3 of 0 rows gives 3 empty pieces */
    CHECK(clt_chunk(t, 4, 0, &ps, &n));
    cr_assert_eq(n, 4);
    for (size_t p = 0; p < n; p++) {
        int64_t rs[2] = {1, 7};
        assert_values(ps[p], 2, rs, h + p * 7);
        clt_tensor_free(ps[p]);
    }
    clt_free(ps);
    clt_tensor *e = NULL;
    CHECK(clt_zeros(dev, CLT_INT64, 2, (int64_t[]){0, 2}, &e));
    CHECK(clt_chunk(e, 3, 0, &ps, &n));
    cr_assert_eq(n, 3);
    for (size_t p = 0; p < n; p++) {
        cr_assert_eq(clt_tensor_numel(ps[p]), 0);
        clt_tensor_free(ps[p]);
    }
    clt_free(ps);
    /* split_sizes with a zero size */
    int64_t sizes[3] = {2, 0, 5};
    CHECK(clt_split_sizes(t, sizes, 3, 1, &ps, &n));
    cr_assert_eq(n, 3);
    cr_assert_eq(clt_tensor_shape(ps[1])[1], 0);
    {
        int64_t ls[2] = {4, 5};
        double want[20];
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 5; j++)
                want[i * 5 + j] = h[i * 7 + 2 + j];
        assert_values(ps[2], 2, ls, want);
    }
    for (size_t p = 0; p < n; p++)
        clt_tensor_free(ps[p]);
    clt_free(ps);
    /* unbind columns of the transposed view */
    CHECK(clt_unbind(t, -1, &ps, &n));
    cr_assert_eq(n, 7);
    for (size_t p = 0; p < n; p++) {
        double want[4];
        for (int64_t i = 0; i < 4; i++)
            want[i] = h[i * 7 + (int64_t)p];
        assert_values(ps[p], 1, (int64_t[]){4}, want);
        clt_tensor_free(ps[p]);
    }
    clt_free(ps);
    clt_tensor_free(e);
    clt_tensor_free(t);
    free(h);
}

Test(shape, split_refusals_hand_out_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL, *s0 = NULL, **ps = (clt_tensor **)&t;
    size_t n = 99;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, &t));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 0, NULL, &s0));
    assert_error(clt_split(t, 0, 1, &ps, &n), CLT_ERR_INVALID_ARGUMENT, "split_size");
    cr_assert(ps == NULL && n == 0);
    ps = (clt_tensor **)&t, n = 99;
    assert_error(clt_split_sizes(t, (int64_t[]){1, 1}, 2, 1, &ps, &n), CLT_ERR_INVALID_ARGUMENT,
                 "sum exactly to 3");
    cr_assert(ps == NULL && n == 0);
    ps = (clt_tensor **)&t, n = 99;
    assert_error(clt_split_sizes(t, (int64_t[]){4, -1}, 2, 1, &ps, &n), CLT_ERR_INVALID_ARGUMENT,
                 "non-negative");
    cr_assert(ps == NULL && n == 0);
    ps = (clt_tensor **)&t, n = 99;
    assert_error(clt_chunk(t, -1, 0, &ps, &n), CLT_ERR_INVALID_ARGUMENT, "greater than 0");
    cr_assert(ps == NULL && n == 0);
    ps = (clt_tensor **)&t, n = 99;
    assert_error(clt_unbind(t, 2, &ps, &n), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert(ps == NULL && n == 0);
    ps = (clt_tensor **)&t, n = 99;
    assert_error(clt_split(s0, 1, 0, &ps, &n), CLT_ERR_INVALID_ARGUMENT, "1-dimensional");
    names_only("clt_split");
    cr_assert(ps == NULL && n == 0);
    n = 99;
    assert_error(clt_unbind(t, 0, NULL, &n), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_eq(n, 0);
    clt_tensor_free(s0);
    clt_tensor_free(t);
}

Test(shape, diagonal_views)
{
    clt_device *dev = get_device("cpu");
    int64_t s[3] = {3, 4, 5};
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, CLT_FLOAT64, 3, s, &h), *d = NULL;
    const struct {
        int64_t off;
        int d1, d2;
    } cases[] = {{0, 0, 1}, {2, 1, 2}, {-1, 2, -3}, {-2, 1, 2}, {9, 0, 2}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int a = cases[k].d1, b = cases[k].d2 < 0 ? cases[k].d2 + 3 : cases[k].d2;
        int other = 3 - a - b;
        int64_t off = cases[k].off;
        int64_t len = off >= 0 ? (s[b] - off < s[a] ? s[b] - off : s[a])
                               : (s[a] + off < s[b] ? s[a] + off : s[b]);
        if (len < 0)
            len = 0;
        double want[32];
        for (int64_t o = 0; o < s[other]; o++)
            for (int64_t i = 0; i < len; i++) {
                int64_t c[3];
                c[other] = o;
                c[a] = off >= 0 ? i : i - off;
                c[b] = off >= 0 ? i + off : i;
                want[o * len + i] = h[host_ravel(c, 3, s)];
            }
        CHECK(clt_diagonal(t, off, cases[k].d1, cases[k].d2, &d));
        assert_values(d, 2, (int64_t[]){s[other], len}, want);
        clt_tensor_free(d);
    }
    assert_error(clt_diagonal(t, 0, 1, -2, &d), CLT_ERR_INVALID_ARGUMENT, "cannot be identical");
    cr_assert_null(d);
    clt_tensor_free(t);
    free(h);
}

/* ---- flip, roll, repeat, repeat_interleave --------------------------------------------------- */

typedef struct flip_ctx {
    const int64_t *shape;
    bool flip[CLT_MAX_DIMS];
    int64_t shift[CLT_MAX_DIMS];
    int64_t rep[CLT_MAX_DIMS];
} flip_ctx;

static int64_t flip_src(int d, int64_t j, const void *p)
{
    const flip_ctx *c = p;
    return c->flip[d] ? c->shape[d] - 1 - j : j;
}

static int64_t roll_src(int d, int64_t j, const void *p)
{
    const flip_ctx *c = p;
    int64_t n = c->shape[d];
    return ((j - c->shift[d]) % n + n) % n;
}

static int64_t repeat_src(int d, int64_t j, const void *p)
{
    const flip_ctx *c = p;
    return j % c->shape[d];
}

static int64_t interleave_src(int d, int64_t j, const void *p)
{
    const flip_ctx *c = p;
    return j / c->rep[d];
}

Test(shape, flip_and_roll_every_dtype_transposed)
{
    clt_device *dev = get_device("cpu");
    int64_t s[3] = {3, 4, 5};
    for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
        double *h = NULL;
        clt_tensor *t = mk_transposed(dev, all_dtypes[k], 3, s, &h), *r = NULL;
        flip_ctx c = {s, {true, false, true}, {0}, {0}};
        int dims[2] = {-1, 0};
        CHECK(clt_flip(t, dims, 2, &r));
        cr_assert_eq(clt_tensor_dtype(r), all_dtypes[k]);
        double *want = gather_ref(h, 3, s, s, flip_src, &c, 0);
        assert_values(r, 3, s, want);
        free(want);
        clt_tensor_free(r);
        /* rolls, one dim twice (they add up), one negative */
        flip_ctx rc = {s, {false}, {-4, 0, 6 + 2}, {0}};
        int64_t shifts[3] = {-4, 6, 2};
        int rd[3] = {0, -1, 2};
        CHECK(clt_roll(t, shifts, rd, 3, &r));
        want = gather_ref(h, 3, s, s, roll_src, &rc, 0);
        assert_values(r, 3, s, want);
        free(want);
        clt_tensor_free(r);
        /* flattened roll: shape kept */
        int64_t n = host_numel(3, s), flat[1] = {n};
        flip_ctx fc = {flat, {false}, {-17}, {0}};
        CHECK(clt_roll(t, (int64_t[]){-17}, NULL, 0, &r));
        want = gather_ref(h, 1, flat, flat, roll_src, &fc, 0);
        assert_values(r, 3, s, want);
        free(want);
        clt_tensor_free(r);
        clt_tensor_free(t);
        free(h);
    }
}

Test(shape, flip_roll_empty_and_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *e = NULL, *r = NULL, *t = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){0, 3}, &e));
    CHECK(clt_flip(e, (int[]){0, 1}, 2, &r));
    assert_shape(r, 2, (int64_t[]){0, 3});
    clt_tensor_free(r);
    CHECK(clt_roll(e, (int64_t[]){3}, (int[]){0}, 1, &r));
    assert_shape(r, 2, (int64_t[]){0, 3});
    clt_tensor_free(r);
    CHECK(clt_roll(e, (int64_t[]){3}, NULL, 0, &r));
    assert_shape(r, 2, (int64_t[]){0, 3});
    clt_tensor_free(r);
    CHECK(clt_ones(dev, CLT_INT32, 2, (int64_t[]){2, 3}, &t));
    r = t;
    assert_error(clt_flip(t, (int[]){1, -1}, 2, &r), CLT_ERR_INVALID_ARGUMENT,
                 "appears multiple times");
    cr_assert_null(r);
    r = t;
    assert_error(clt_flip(t, (int[]){2}, 1, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert_null(r);
    r = t;
    assert_error(clt_roll(t, (int64_t[]){1}, (int[]){-3}, 1, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert_null(r);
    clt_tensor_free(t);
    clt_tensor_free(e);
}

Test(shape, repeat_tile_and_their_many_dims_path)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {3, 4};
    for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
        double *h = NULL;
        clt_tensor *t = mk_transposed(dev, all_dtypes[k], 2, s, &h), *r = NULL;
        /* repeat (2, 1, 3): a leading dim, then rows kept, columns tiled */
        int64_t reps[3] = {2, 1, 3}, os[3] = {2, 3, 12}, is[3] = {1, 3, 4};
        flip_ctx c = {is, {false}, {0}, {0}};
        CHECK(clt_repeat(t, reps, 3, &r));
        double *want = gather_ref(h, 3, is, os, repeat_src, &c, 0);
        assert_values(r, 3, os, want);
        free(want);
        clt_tensor_free(r);
        /* tile with fewer reps than dims: (2,) is (1, 2) */
        int64_t ts[2] = {3, 8};
        flip_ctx tc = {s, {false}, {0}, {0}};
        CHECK(clt_tile(t, (int64_t[]){2}, 1, &r));
        want = gather_ref(h, 2, s, ts, repeat_src, &tc, 0);
        assert_values(r, 2, ts, want);
        free(want);
        clt_tensor_free(r);
        /* zero repeats */
        CHECK(clt_repeat(t, (int64_t[]){0, 2}, 2, &r));
        assert_shape(r, 2, (int64_t[]){0, 8});
        clt_tensor_free(r);
        clt_tensor_free(t);
        free(h);
    }
    /* five repeated dims of size 2: the expanded view would need 10 dims,
     * so each dim is repeated in turn */
    int64_t s5[5] = {2, 2, 2, 2, 3}, r5[5] = {2, 3, 2, 2, 2}, o5[5] = {4, 6, 4, 4, 6};
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, CLT_FLOAT32, 5, s5, &h), *r = NULL;
    flip_ctx c = {s5, {false}, {0}, {0}};
    CHECK(clt_repeat(t, r5, 5, &r));
    double *want = gather_ref(h, 5, s5, o5, repeat_src, &c, 0);
    assert_values(r, 5, o5, want);
    free(want);
    clt_tensor_free(r);
    r = t;
    assert_error(clt_repeat(t, (int64_t[]){2}, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "can not be smaller");
    cr_assert_null(r);
    r = t;
    assert_error(clt_repeat(t, (int64_t[]){1, 1, 1, -1, 1}, 5, &r), CLT_ERR_INVALID_ARGUMENT,
                 "negative dimension");
    cr_assert_null(r);
    clt_tensor_free(t);
    free(h);
}

Test(shape, repeat_interleave_int_and_tensor)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {3, 4};
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, CLT_INT64, 2, s, &h), *r = NULL, *rt = NULL;
    int dim = -1;
    int64_t os[2] = {3, 12};
    flip_ctx c = {s, {false}, {0}, {1, 3}};
    CHECK(clt_repeat_interleave(t, 3, &dim, &r));
    double *want = gather_ref(h, 2, s, os, interleave_src, &c, 0);
    assert_values(r, 2, os, want);
    free(want);
    clt_tensor_free(r);
    /* dim NULL: flattened */
    CHECK(clt_repeat_interleave(t, 2, NULL, &r));
    double flat[24];
    for (int i = 0; i < 24; i++)
        flat[i] = h[i / 2];
    assert_values(r, 1, (int64_t[]){24}, flat);
    clt_tensor_free(r);
    /* a tensor of repeats along dim 0: rows 1, 0 and 2 times */
    int64_t reps[3] = {1, 0, 2};
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, reps, &rt));
    dim = 0;
    CHECK(clt_repeat_interleave_tensor(t, rt, &dim, &r));
    double rows[12];
    for (int j = 0; j < 4; j++) {
        rows[j] = h[j];
        rows[4 + j] = h[8 + j];
        rows[8 + j] = h[8 + j];
    }
    assert_values(r, 2, (int64_t[]){3, 4}, rows);
    clt_tensor_free(r);
    clt_tensor_free(rt);
    int64_t bad[3] = {1, -1, 1};
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, bad, &rt));
    r = t;
    assert_error(clt_repeat_interleave_tensor(t, rt, &dim, &r), CLT_ERR_INVALID_ARGUMENT,
                 "can not be negative");
    cr_assert_null(r);
    clt_tensor_free(rt);
    CHECK(clt_ones(dev, CLT_INT32, 1, (int64_t[]){3}, &rt));
    r = t;
    assert_error(clt_repeat_interleave_tensor(t, rt, &dim, &r), CLT_ERR_DTYPE_MISMATCH, "Long");
    cr_assert_null(r);
    clt_tensor_free(rt);
    clt_tensor_free(t);
    free(h);
}

/* ---- tril, triu, diag, trace -------------------------------------------------------------------- */

Test(shape, tril_triu_batched_every_dtype)
{
    clt_device *dev = get_device("cpu");
    int64_t s[3] = {2, 4, 5};
    const int64_t ks[] = {0, 2, -1, -9, 9};
    for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
        double *h = NULL;
        clt_tensor *t = mk_transposed(dev, all_dtypes[k], 3, s, &h), *r = NULL;
        for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++)
            for (int upper = 0; upper < 2; upper++) {
                double want[40];
                for (int64_t i = 0; i < 40; i++) {
                    int64_t row = (i / 5) % 4, col = i % 5;
                    bool keep = upper ? col - row >= ks[q] : col - row <= ks[q];
                    want[i] = keep ? h[i] : 0;
                }
                CHECK(upper ? clt_triu(t, ks[q], &r) : clt_tril(t, ks[q], &r));
                cr_assert_eq(clt_tensor_dtype(r), all_dtypes[k]);
                assert_values(r, 3, s, want);
                clt_tensor_free(r);
            }
        clt_tensor_free(t);
        free(h);
    }
    clt_tensor *v = NULL, *r = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &v));
    r = v;
    assert_error(clt_tril(v, 0, &r), CLT_ERR_INVALID_ARGUMENT, "at least 2 dimensions");
    cr_assert_null(r);
    clt_tensor_free(v);
}

Test(shape, diag_both_ways_and_trace)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {3, 5};
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, CLT_INT32, 2, s, &h), *r = NULL;
    for (int64_t k = -3; k <= 5; k++) {
        int64_t len = 0;
        double want[5];
        for (int64_t i = 0; i < 3; i++)
            if (i + k >= 0 && i + k < 5)
                want[len++] = h[i * 5 + i + k];
        CHECK(clt_diag(t, k, &r));
        assert_values(r, 1, &len, want);
        /* back: the vector on diagonal k of a square of zeros */
        clt_tensor *m = NULL;
        CHECK(clt_diag(r, -k, &m));
        int64_t side = len + (k < 0 ? -k : k), ms[2] = {side, side};
        double *mw = calloc((size_t)(side > 0 ? side * side : 1), sizeof *mw);
        for (int64_t i = 0; i < len; i++) {
            int64_t row = -k >= 0 ? i : i + k, col = -k >= 0 ? i - k : i;
            mw[row * side + col] = want[i];
        }
        assert_values(m, 2, ms, mw);
        free(mw);
        clt_tensor_free(m);
        clt_tensor_free(r);
    }
    CHECK(clt_trace(t, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64); /* integers sum as int64 */
    double tr = h[0] + h[6] + h[12], got = 0;
    CHECK(clt_tensor_item(r, &got));
    cr_assert_eq(got, tr);
    clt_tensor_free(r);
    clt_tensor *three = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 2, 2}, &three));
    r = t;
    assert_error(clt_diag(three, 0, &r), CLT_ERR_INVALID_ARGUMENT, "1D or 2D");
    cr_assert_null(r);
    r = t;
    assert_error(clt_trace(three, &r), CLT_ERR_INVALID_ARGUMENT, "expected a matrix");
    cr_assert_null(r);
    clt_tensor_free(three);
    clt_tensor_free(t);
    free(h);
}

/* ---- pad ------------------------------------------------------------------------------------------- */

typedef struct pad_ctx {
    int nd;
    const int64_t *shape;
    const int64_t *pad;
    int npad;
    clt_pad_mode mode;
} pad_ctx;

static int64_t pad_src(int d, int64_t j, const void *p)
{
    const pad_ctx *c = p;
    int k = c->nd - 1 - d; /* pads of this dim at 2k, 2k + 1 */
    if (2 * k >= c->npad)
        return j;
    int64_t n = c->shape[d], l = c->pad[2 * k], r = c->pad[2 * k + 1], i = j - l;
    switch (c->mode) {
    case CLT_PAD_CONSTANT:
        return i >= 0 && i < n ? i : -1;
    case CLT_PAD_REPLICATE:
        return i < 0 ? 0 : i >= n ? n - 1 : i;
    case CLT_PAD_REFLECT:
        while (i < 0 || i >= n)
            i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
    default: {
        /* crop, then wrap what is left */
        int64_t off = l < 0 ? -l : 0, kept = n - off - (r < 0 ? -r : 0), q = j - (l > 0 ? l : 0);
        return off + ((q % kept) + kept) % kept;
    }
    }
}

static void check_pad(clt_device *dev, clt_dtype dt, int nd, const int64_t *s, const int64_t *pad,
                      int npad, clt_pad_mode mode, double value)
{
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, dt, nd, s, &h), *r = NULL;
    int64_t os[CLT_MAX_DIMS];
    memcpy(os, s, sizeof(int64_t) * (size_t)nd);
    for (int k = 0; 2 * k < npad; k++)
        os[nd - 1 - k] += pad[2 * k] + pad[2 * k + 1];
    pad_ctx c = {nd, s, pad, npad, mode};
    CHECK(clt_pad(t, pad, npad, mode, value, &r));
    double *want = gather_ref(h, nd, s, os, pad_src, &c, value);
    assert_values(r, nd, os, want);
    free(want);
    clt_tensor_free(r);
    clt_tensor_free(t);
    free(h);
}

Test(shape, pad_every_mode)
{
    clt_device *dev = get_device("cpu");
    int64_t s3[3] = {2, 3, 4}, s4[4] = {1, 2, 3, 4}, s5[5] = {1, 2, 3, 3, 4};
    /* constant: any dtype, several dims, negative pads crop */
    for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
        double v = all_dtypes[k] == CLT_BOOL ? 1 : all_dtypes[k] == CLT_UINT8 ? 7 : -2;
        check_pad(dev, all_dtypes[k], 3, s3, (int64_t[]){1, 2, -1, 1, 0, 1}, 6, CLT_PAD_CONSTANT,
                  v);
        check_pad(dev, all_dtypes[k], 3, s3, (int64_t[]){2, 3}, 2, CLT_PAD_CIRCULAR, 0);
    }
    const clt_pad_mode modes[] = {CLT_PAD_REFLECT, CLT_PAD_REPLICATE, CLT_PAD_CIRCULAR};
    for (size_t m = 0; m < 3; m++)
        for (int f64 = 0; f64 < 2; f64++) {
            clt_dtype dt = f64 ? CLT_FLOAT64 : CLT_FLOAT32;
            check_pad(dev, dt, 3, s3, (int64_t[]){3, 2}, 2, modes[m], 0);
            check_pad(dev, dt, 3, s3, (int64_t[]){-1, 2}, 2, modes[m], 0);
            check_pad(dev, dt, 3, s3, (int64_t[]){2, -1}, 2, modes[m], 0);
            check_pad(dev, dt, 4, s4, (int64_t[]){1, 2, 2, 0}, 4, modes[m], 0);
            check_pad(dev, dt, 5, s5, (int64_t[]){1, 1, 2, 1, 0, 2}, 6, modes[m], 0);
            if (modes[m] != CLT_PAD_CIRCULAR)
                check_pad(dev, dt, 2, (int64_t[]){3, 4}, (int64_t[]){2, 1}, 2, modes[m], 0);
        }
}

/* Outputs past one CPU chunk (4096 elements) with rows of odd length, so
 * that chunks start inside rows; and the kernel of one element per
 * work-item that GPUs take. */
static void big_gathers(void)
{
    clt_device *dev = get_device("cpu");
    int64_t s3[3] = {2, 45, 62};
    check_pad(dev, CLT_FLOAT32, 3, s3, (int64_t[]){3, 2}, 2, CLT_PAD_REFLECT, 0);
    check_pad(dev, CLT_FLOAT64, 3, s3, (int64_t[]){-2, 7, 1, 3}, 4, CLT_PAD_REPLICATE, 0);
    check_pad(dev, CLT_INT32, 3, s3, (int64_t[]){5, -1}, 2, CLT_PAD_CIRCULAR, 0);
    double *h = NULL;
    clt_tensor *t = mk_transposed(dev, CLT_INT64, 3, s3, &h), *r = NULL;
    flip_ctx c = {s3, {false, true, true}, {0}, {0}};
    CHECK(clt_flip(t, (int[]){1, 2}, 2, &r));
    double *want = gather_ref(h, 3, s3, s3, flip_src, &c, 0);
    assert_values(r, 3, s3, want);
    free(want);
    clt_tensor_free(r);
    flip_ctx rc = {s3, {false}, {1, -7, 30}, {0}};
    CHECK(clt_roll(t, (int64_t[]){1, -7, 30}, (int[]){0, 1, 2}, 3, &r));
    want = gather_ref(h, 3, s3, s3, roll_src, &rc, 0);
    assert_values(r, 3, s3, want);
    free(want);
    clt_tensor_free(r);
    clt_tensor_free(t);
    free(h);
}

Test(shape, gathers_in_chunks_and_per_item)
{
    big_gathers();
    clt__gather_per_item = true;
    big_gathers();
    clt__gather_per_item = false;
}

Test(shape, pad_refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL, *i = NULL, *r = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 3, 4}, &t));
    CHECK(clt_zeros(dev, CLT_INT64, 3, (int64_t[]){2, 3, 4}, &i));
    const struct {
        const clt_tensor *t;
        int64_t pad[8];
        int npad;
        clt_pad_mode mode;
        double value;
        clt_status st;
        const char *needle;
    } cases[] = {
        {t, {1}, 1, CLT_PAD_CONSTANT, 0, CLT_ERR_INVALID_ARGUMENT, "divisible by 2"},
        {t, {1, 1, 1, 1, 1, 1, 1, 1}, 8, CLT_PAD_CONSTANT, 0, CLT_ERR_INVALID_ARGUMENT,
         "too large"},
        {t, {-3, -2}, 2, CLT_PAD_CONSTANT, 0, CLT_ERR_INVALID_ARGUMENT, "negative output size"},
        {t, {4, 0}, 2, CLT_PAD_REFLECT, 0, CLT_ERR_INVALID_ARGUMENT, "should be less than"},
        {t, {1, 1, 1, 1, 1, 1}, 6, CLT_PAD_REFLECT, 0, CLT_ERR_INVALID_ARGUMENT, "Only 2D"},
        {t, {1, 1}, 2, CLT_PAD_REPLICATE, 1.5, CLT_ERR_INVALID_ARGUMENT, "value argument"},
        {t, {5, 0}, 2, CLT_PAD_CIRCULAR, 0, CLT_ERR_INVALID_ARGUMENT, "wrapping around"},
        {t, {1, 1, 1, 1}, 4, CLT_PAD_CIRCULAR, 0, CLT_ERR_INVALID_ARGUMENT, "expected 2 but got 4"},
        {i, {1, 1}, 2, CLT_PAD_REFLECT, 0, CLT_ERR_DTYPE_UNSUPPORTED, "int64"},
        {t, {1, 1}, 2, (clt_pad_mode)9, 0, CLT_ERR_INVALID_ARGUMENT, "padding mode"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        r = t;
        assert_error(clt_pad(cases[k].t, cases[k].pad, cases[k].npad, cases[k].mode,
                             cases[k].value, &r),
                     cases[k].st, cases[k].needle);
        names_only("clt_pad");
        cr_assert_null(r, "case %zu", k);
    }
    clt_tensor_free(t);
    clt_tensor_free(i);
}

/* ---- constructions ----------------------------------------------------------------------------------- */

/* torch 1.13's CPU linspace (its AVX2 kernel) in float64 or, f32, float:
 * value i is one fused multiply-add from the nearer end (start + step * i
 * for the first half, end - step * (n - 1 - i) for the rest), except in the
 * leading whole pairs of vec-wide blocks (vec 8 floats, 4 doubles), where a
 * block's first value is that and the others add j * step, rounded, to it.
 * One step gives start. */
static void torch_linspace(double start, double end, int64_t n, bool f32, double *out)
{
    int64_t vec = f32 ? 8 : 4, mid = n / 2, blocks = n / (2 * vec) * (2 * vec);
    float s = (float)start, e = (float)end, fstep = n > 1 ? (e - s) / (float)(n - 1) : 0;
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i < blocks ? i % vec : 0, b = i - j, k = b < mid ? b : n - 1 - b;
        if (f32) {
            float v = b < mid ? fmaf(fstep, (float)k, s) : fmaf(-fstep, (float)k, e);
            volatile float jstep = (float)j * fstep;
            out[i] = j ? v + jstep : v;
        } else {
            double v = b < mid ? fma(step, (double)k, start) : fma(-step, (double)k, end);
            volatile double jstep = (double)j * step;
            out[i] = j ? v + jstep : v;
        }
    }
    if (n == 1) /* torch fills start */
        out[0] = f32 ? (double)s : start;
}

/* linspace equals torch's bit for bit in float32 and float64 (checked
 * against torch 1.13 itself in conformance.py), the last element too (not
 * always end, as torch's): short ranges (no blocks), long ones, negative,
 * reversed and huge ranges. */
Test(shape, linspace_bits_as_torch)
{
    clt_device *dev = get_device("cpu");
    static const struct {
        double start, end;
        int64_t n;
    } cases[] = {{0, 1, 5},       {-1.25, 3.5, 11},    {0, 10, 100},       {0, 1, 1000},
                 {-5, -1, 64},    {3.3, -7.1, 37},     {-1e30, 1e30, 33},  {1e20, -3e20, 50},
                 {1e38, -1e38, 21}, {-1e-3, 1e5, 129}, {1.26e28, 1.69, 8}, {7.11, -4.32, 7},
                 {2, 9, 1},       {0, 1, 2},           {-6.7e29, -9.7, 38}, {9.3, 3.6e29, 1753}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int f32 = 0; f32 < 2; f32++) {
            int64_t n = cases[c].n;
            double *want = malloc(sizeof(double) * (size_t)n);
            cr_assert_not_null(want);
            torch_linspace(cases[c].start, cases[c].end, n, f32, want);
            clt_tensor *r = NULL;
            CHECK(clt_linspace(dev, f32 ? CLT_FLOAT32 : CLT_FLOAT64, cases[c].start,
                               cases[c].end, n, &r));
            double *got = read_as_f64(r);
            for (int64_t i = 0; i < n; i++)
                cr_assert(memcmp(&got[i], &want[i], sizeof(double)) == 0,
                          "linspace(%g, %g, %lld) %s [%lld]: %.17g, torch's %.17g",
                          cases[c].start, cases[c].end, (long long)n,
                          f32 ? "float32" : "float64", (long long)i, got[i], want[i]);
            free(got);
            free(want);
            clt_tensor_free(r);
        }
    }
}

Test(shape, linspace_logspace_eye_indices)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *r = NULL;
    /* whole steps in int32; one step gives start */
    double iw[6] = {-5, -3, -1, 1, 3, 5};
    CHECK(clt_linspace(dev, CLT_INT32, -5, 5, 6, &r));
    assert_values(r, 1, (int64_t[]){6}, iw);
    clt_tensor_free(r);
    CHECK(clt_linspace(dev, CLT_FLOAT32, 2, 9, 1, &r));
    assert_values(r, 1, (int64_t[]){1}, (double[]){2});
    clt_tensor_free(r);
    CHECK(clt_logspace(dev, CLT_FLOAT64, 0, 3, 4, 2, &r));
    double *g = read_as_f64(r);
    for (int i = 0; i < 4; i++)
        cr_assert(close_enough(g[i], ldexp(1, i), 1e-15, 0), "%g", g[i]);
    free(g);
    clt_tensor_free(r);
    r = (clt_tensor *)dev;
    assert_error(clt_linspace(dev, CLT_FLOAT32, 0, 1, -1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "non-negative");
    cr_assert_null(r);
    /* eye */
    for (size_t k = 0; k < sizeof all_dtypes / sizeof all_dtypes[0]; k++) {
        CHECK(clt_eye(dev, all_dtypes[k], 3, 5, &r));
        double e[15];
        for (int i = 0; i < 15; i++)
            e[i] = i / 5 == i % 5;
        assert_values(r, 2, (int64_t[]){3, 5}, e);
        clt_tensor_free(r);
    }
    CHECK(clt_eye(dev, CLT_FLOAT32, 0, 2, &r));
    assert_shape(r, 2, (int64_t[]){0, 2});
    clt_tensor_free(r);
    /* tril/triu_indices of 3 x 4 from offsets -1, 0, 2 */
    for (int64_t off = -1; off <= 2; off++)
        for (int upper = 0; upper < 2; upper++) {
            double rows[12], cols[12], both[24];
            int64_t n = 0;
            for (int64_t i = 0; i < 3; i++)
                for (int64_t j = 0; j < 4; j++)
                    if (upper ? j - i >= off : j - i <= off) {
                        rows[n] = (double)i;
                        cols[n++] = (double)j;
                    }
            memcpy(both, rows, sizeof(double) * (size_t)n);
            memcpy(both + n, cols, sizeof(double) * (size_t)n);
            CHECK(upper ? clt_triu_indices(dev, 3, 4, off, &r) : clt_tril_indices(dev, 3, 4, off, &r));
            cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
            assert_values(r, 2, (int64_t[]){2, n}, both);
            clt_tensor_free(r);
        }
}

Test(shape, meshgrid_ij_and_xy)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = NULL, *b = NULL, *c = NULL, **gs = NULL;
    size_t n = 0;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){2}, (double[]){1, 2}, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, (double[]){5, 6, 7}, &b));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 0, NULL, (double[]){9}, &c));
    const clt_tensor *ts[3] = {a, b, c};
    CHECK(clt_meshgrid(ts, 3, CLT_MESHGRID_IJ, &gs, &n));
    cr_assert_eq(n, 3);
    double g0[6] = {1, 1, 1, 2, 2, 2}, g1[6] = {5, 6, 7, 5, 6, 7}, g2[6] = {9, 9, 9, 9, 9, 9};
    assert_values(gs[0], 3, (int64_t[]){2, 3, 1}, g0);
    assert_values(gs[1], 3, (int64_t[]){2, 3, 1}, g1);
    assert_values(gs[2], 3, (int64_t[]){2, 3, 1}, g2);
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(gs[i]);
    clt_free(gs);
    CHECK(clt_meshgrid(ts, 2, CLT_MESHGRID_XY, &gs, &n));
    double x0[6] = {1, 2, 1, 2, 1, 2}, x1[6] = {5, 5, 6, 6, 7, 7};
    assert_values(gs[0], 2, (int64_t[]){3, 2}, x0);
    assert_values(gs[1], 2, (int64_t[]){3, 2}, x1);
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(gs[i]);
    clt_free(gs);
    clt_tensor *i32 = NULL;
    CHECK(clt_ones(dev, CLT_INT32, 1, (int64_t[]){2}, &i32));
    const clt_tensor *mixed[2] = {a, i32};
    gs = (clt_tensor **)&a, n = 5;
    assert_error(clt_meshgrid(mixed, 2, CLT_MESHGRID_IJ, &gs, &n), CLT_ERR_DTYPE_MISMATCH,
                 "same dtype");
    cr_assert(gs == NULL && n == 0);
    clt_tensor_free(i32);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

/* ---- gradients ---------------------------------------------------------------------------------------- */

typedef struct gctx {
    int op;
} gctx;

/* The op under test applied to in[0] (float64), often through a transposed
 * view so that the backward meets strides. */
static clt_status shape_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    int op = ((const gctx *)p)->op;
    clt_tensor *x = in[0], *tx = NULL, **ps = NULL;
    size_t n = 0;
    clt_status st = CLT_OK;
    if (clt_tensor_ndim(x) >= 2)
        st = clt_transpose(x, -1, -2, &tx);
    else
        tx = clt_tensor_retain(x);
    if (st != CLT_OK)
        return st;
    int dims[2] = {0, -1}, d0 = 0;
    switch (op) {
    case 0: /* split: pieces 2 and 0 joined; piece 1 gets no gradient */
    case 1: /* unbind, stacked back in reverse */
        st = op == 0 ? clt_split(tx, 2, 1, &ps, &n) : clt_unbind(tx, 0, &ps, &n);
        if (st == CLT_OK) {
            const clt_tensor *j[3] = {ps[n - 1], ps[0], ps[n > 2 ? 1 : 0]};
            st = op == 0 ? clt_cat(j, 2, 1, out) : clt_stack(j, 3, 0, out);
        }
        for (size_t i = 0; i < n; i++)
            clt_tensor_free(ps[i]);
        clt_free(ps);
        break;
    case 2:
        st = clt_diagonal(tx, 1, 0, 1, out);
        break;
    case 3:
        st = clt_flip(tx, dims, 2, out);
        break;
    case 4:
        st = clt_roll(tx, (int64_t[]){-1, 3}, dims, 2, out);
        break;
    case 5:
        st = clt_repeat(tx, (int64_t[]){2, 1, 3}, 3, out);
        break;
    case 6:
        st = clt_repeat_interleave(tx, 2, &d0, out);
        break;
    case 7:
        st = clt_tril(tx, -1, out);
        break;
    case 8:
        st = clt_triu(tx, 1, out);
        break;
    case 9:
        st = clt_diag(tx, 1, out);
        break;
    case 10:
        st = clt_trace(tx, out);
        break;
    case 11: /* a 1-D input to diag */
        st = clt_diag(x, -1, out);
        break;
    case 12: /* five repeated dims: one dim at a time */
        st = clt_repeat(x, (int64_t[]){2, 2, 1, 3, 2}, 5, out);
        break;
    default: {
        /* pads of the [1, 3, 4] view: constant with a crop, then reflect,
         * replicate, circular */
        clt_tensor *u = NULL;
        static const int64_t pads[4][2] = {{2, -1}, {3, 2}, {2, 3}, {-1, 3}};
        st = clt_unsqueeze(tx, 0, &u);
        if (st == CLT_OK)
            st = clt_pad(u, pads[op - 13], 2, (clt_pad_mode)(op - 13), op == 13 ? 0.5 : 0, out);
        clt_tensor_free(u);
    }
    }
    clt_tensor_free(tx);
    return st;
}

Test(shape, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double x[24], v[8], x16[16];
    for (int i = 0; i < 24; i++)
        x[i] = sin(0.7 * i) * 2;
    for (int i = 0; i < 16; i++)
        x16[i] = cos(0.3 * i);
    for (int i = 0; i < 8; i++)
        v[i] = i - 2.5;
    for (int op = 0; op <= 16; op++) {
        gctx c = {op};
        gc_in in = {2, {4, 3}, x, 1}; /* the op sees [3, 4] */
        if (op == 11)
            in = (gc_in){1, {5}, v, 1};
        if (op == 12)
            in = (gc_in){4, {2, 2, 2, 2}, x16, 1};
        if (op == 1 || op == 9)
            in = (gc_in){2, {3, 3}, x, 1};
        gradcheck(dev, shape_fn, &c, 1, &in);
    }
}

Test(shape, node_names)
{
    clt_device *dev = get_device("cpu");
    const char *want[] = {"CatBackward0",       "StackBackward0",      "DiagonalBackward0",
                          "FlipBackward0",      "RollBackward0",       "RepeatBackward0",
                          "IndexSelectBackward0", "TrilBackward0",     "TriuBackward0",
                          "DiagBackward0",      "TraceBackward0",      "DiagBackward0",
                          "RepeatBackward0",    "SqueezeBackward1"};
    clt_tensor *x = NULL, *y = NULL, **ps = NULL;
    size_t n = 0;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){4, 4}, &x));
    CHECK(clt_set_requires_grad(x, 1));
    for (int op = 0; op <= 10; op++) {
        gctx c = {op};
        CHECK(shape_fn(&x, &y, &c));
        cr_assert_str_eq(clt_grad_fn_name(y), want[op]);
        clt_tensor_free(y);
    }
    const struct {
        clt_status (*f)(const clt_tensor *, int64_t, int, clt_tensor ***, size_t *);
        const char *name;
    } splits[] = {{clt_split, "SplitBackward0"}, {clt_chunk, "SplitBackward0"}};
    for (int k = 0; k < 2; k++) {
        CHECK(splits[k].f(x, 2, 0, &ps, &n));
        cr_assert_str_eq(clt_grad_fn_name(ps[1]), splits[k].name);
        for (size_t i = 0; i < n; i++)
            clt_tensor_free(ps[i]);
        clt_free(ps);
    }
    CHECK(clt_split_sizes(x, (int64_t[]){1, 3}, 2, 1, &ps, &n));
    cr_assert_str_eq(clt_grad_fn_name(ps[0]), "SplitWithSizesBackward0");
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
    CHECK(clt_unbind(x, 1, &ps, &n));
    cr_assert_str_eq(clt_grad_fn_name(ps[3]), "UnbindBackward0");
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
    const char *pads[4] = {"ConstantPadNdBackward0", "ReflectionPad2DBackward0",
                           "ReplicationPad2DBackward0", "torch::autograd::CopySlices"};
    clt_tensor *x3 = NULL;
    CHECK(clt_unsqueeze(x, 0, &x3));
    for (int m = 0; m < 4; m++) {
        CHECK(clt_pad(x3, (int64_t[]){1, 1, 1, 1}, m == 3 ? 2 : 4, (clt_pad_mode)m, 0, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), m == 3 ? "torch::autograd::CopySlices" : pads[m]);
        clt_tensor_free(y);
    }
    clt_tensor_free(x3);
    clt_tensor_free(x);
}

/* ---- one node for all the pieces ------------------------------------------------------------ */

/* The pieces of c = 1.5 x (computed, so that a piece may change in place),
 * x [3, 4] float64: some pieces unused, some used twice. */
static clt_status pieces_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    int op = ((const gctx *)p)->op;
    clt_tensor *c = NULL, *f = NULL, *a = NULL, *b = NULL, **ps = NULL;
    size_t n = 0;
    clt_status st = clt_mul_scalar(in[0], 1.5, &c);
    if (st != CLT_OK)
        return st;
    switch (op) {
    case 0: /* split_sizes {1, 0, 2, 1} along 1: cat(p0 * p3, p0, p3); p1, p2 unused */
        st = clt_split_sizes(c, (int64_t[]){1, 0, 2, 1}, 4, 1, &ps, &n);
        if (st == CLT_OK)
            st = clt_mul(ps[0], ps[3], &a);
        if (st == CLT_OK)
            st = clt_cat((const clt_tensor *[]){a, ps[0], ps[3]}, 3, 1, out);
        break;
    case 1: /* unbind rows: row 1 scaled (out of place: the pieces are views of
             * one function of several, which refuse in-place ops as torch's),
             * then squared; row 0 unused */
        st = clt_unbind(c, 0, &ps, &n);
        if (st == CLT_OK)
            st = clt_mul_scalar(ps[1], -2, &b);
        if (st == CLT_OK)
            st = clt_mul(b, b, &a);
        if (st == CLT_OK)
            st = clt_stack((const clt_tensor *[]){a, ps[2], ps[2]}, 3, 0, out);
        break;
    case 2: /* twelve 0-d slices of the flattened c: 11, 3, sin(3), 7 */
        st = clt_flatten(c, 0, -1, &f);
        if (st == CLT_OK)
            st = clt_unbind(f, 0, &ps, &n);
        if (st == CLT_OK)
            st = clt_sin(ps[3], &b);
        if (st == CLT_OK)
            st = clt_stack((const clt_tensor *[]){ps[11], ps[3], b, ps[7]}, 4, 0, out);
        break;
    default: /* chunk 3 of the 4 columns (pieces of 2): the last one only */
        st = clt_chunk(c, 3, -1, &ps, &n);
        if (st == CLT_OK)
            st = clt_exp(ps[n - 1], out);
    }
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(f);
    clt_tensor_free(c);
    return st;
}

Test(shape, pieces_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double x[12];
    for (int i = 0; i < 12; i++)
        x[i] = cos(0.9 * i) * 1.5;
    for (int op = 0; op <= 3; op++) {
        gctx c = {op};
        gc_in in = {2, {3, 4}, x, 1};
        gradcheck(dev, pieces_fn, &c, 1, &in);
    }
}

/* The node keeps the pieces' sizes, not tensors: a backward pass through
 * one piece without retain_graph leaves the others usable (as in torch). */
Test(shape, pieces_backward_one_at_a_time)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_scope_begin());
    clt_tensor *x = NULL, **ps = NULL, *l1 = NULL, *l2 = NULL, *g = NULL;
    size_t n = 0;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){3, 2}, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_unbind(x, 0, &ps, &n));
    cr_assert_eq(n, 3);
    CHECK(clt_sum(ps[1], &l1));
    CHECK(clt_sum(ps[2], &l2));
    CHECK(clt_backward(l1, NULL, 0));
    CHECK(clt_backward(l2, NULL, 0));
    CHECK(clt_grad(x, &g));
    assert_values(g, 2, (int64_t[]){3, 2}, (double[]){0, 0, 1, 1, 1, 1});
    for (size_t i = 0; i < n; i++)
        clt_tensor_free(ps[i]);
    clt_free(ps);
    clt_scope_end();
}
