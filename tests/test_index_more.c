/* test_index_more.c: take, index_fill, index_copy, index_put, scatter_reduce,
 * masked_select, masked_scatter, nonzero, searchsorted, bucketize, bincount,
 * unique and unique_consecutive against host references computed here in
 * double: negative indices, repeats, broadcast indices, bool masks, NaNs,
 * empty and 0-d inputs, strided operands; out-of-range indices reported at
 * the next synchronisation (and the op itself not waiting); the errors found
 * from shapes and dtypes; the gradients against finite differences in
 * float64, and their grad_fn names. */
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"
#include "internal.h"

/* ---- host-side tensors ----------------------------------------------------------- */

static clt_device *cpu0(void)
{
    return get_device("cpu:0");
}

/* A contiguous tensor of `dtype` holding vals (row-major; NULL when
 * empty). */
static clt_tensor *mk(clt_dtype dtype, int nd, const int64_t *shape, const double *vals)
{
    return tensor_of(cpu0(), dtype, nd, shape, vals ? vals : (const double[]){0});
}

static clt_tensor *mk_i64(int nd, const int64_t *shape, const double *vals)
{
    return mk(CLT_INT64, nd, shape, vals);
}

static void assert_values(const clt_tensor *t, const double *want, int64_t n)
{
    cr_assert_eq(clt_tensor_numel(t), n, "numel %lld, want %lld",
                 (long long)clt_tensor_numel(t), (long long)n);
    double *got = read_as_f64(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %lld: got %.17g, want %.17g", (long long)i, got[i], want[i]);
    free(got);
}

/* Distinct-ish values every signed dtype holds exactly. */
static double *values(int64_t n, unsigned seed, bool frac)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int r = (int)((seed >> 8) % 41) - 20;
        v[i] = frac ? r * 0.25 : r;
    }
    return v;
}

/* The op succeeded without waiting, and the read of probe reports want. */
static void expect_reported(clt_status op_status, const clt_stats *before, const clt_tensor *probe,
                            const char *want)
{
    clt_stats now;
    clt_stats_get(&now);
    cr_assert_eq(op_status, CLT_OK, "the op itself succeeds: %s", clt_last_error());
    cr_assert_eq(now.blocking_waits, before->blocking_waits, "the op must not wait");
    double buf[64];
    cr_assert(clt_tensor_nbytes(probe) <= sizeof buf);
    clt_status st = clt_tensor_read(probe, buf, sizeof buf);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s: %s", clt_status_name(st),
                 clt_last_error());
    cr_assert(strstr(clt_last_error(), want), "message '%s' lacks '%s'", clt_last_error(), want);
    CHECK(clt_tensor_read(probe, buf, sizeof buf));
}

#define EXPECT_REPORTED(call, probe, want)                                                  \
    do {                                                                                    \
        clt_stats s0_;                                                                      \
        clt_stats_get(&s0_);                                                                \
        clt_status st_ = (call);                                                            \
        expect_reported(st_, &s0_, probe, want);                                            \
    } while (0)

static int64_t wrap(double i, int64_t n)
{
    return i < 0 ? (int64_t)i + n : (int64_t)i;
}

/* ---- take -------------------------------------------------------------------------- */

Test(index_more, take_negative_indices_any_shape_and_strided_source)
{
    int64_t ts[2] = {3, 4}, is[2] = {2, 3};
    double *tv = values(12, 1, true), iv[6] = {0, -1, 11, -12, 5, 5};
    for (int k = 0; k < 3; k++) {
        clt_dtype dt = k == 0 ? CLT_FLOAT32 : k == 1 ? CLT_INT32 : CLT_FLOAT64;
        clt_tensor *t = mk(dt, 2, ts, tv), *idx = mk_i64(2, is, iv), *r = NULL;
        CHECK(clt_take(t, idx, &r));
        assert_shape(r, 2, is);
        cr_assert_eq(clt_tensor_dtype(r), dt);
        double want[6];
        for (int i = 0; i < 6; i++) {
            double x = tv[wrap(iv[i], 12)];
            want[i] = dt == CLT_INT32 ? trunc(x) : x;
        }
        assert_values(r, want, 6);
        clt_tensor_free(r);
        /* a transposed source is taken in its own row-major order */
        clt_tensor *tt = NULL;
        CHECK(clt_transpose(t, 0, 1, &tt));
        CHECK(clt_take(tt, idx, &r));
        for (int i = 0; i < 6; i++) {
            int64_t j = wrap(iv[i], 12), c[2] = {j / 3, j % 3};
            double x = tv[c[1] * 4 + c[0]];
            want[i] = dt == CLT_INT32 ? trunc(x) : x;
        }
        assert_values(r, want, 6);
        clt_tensor_free(r);
        clt_tensor_free(tt);
        clt_tensor_free(t);
        clt_tensor_free(idx);
    }
    /* 0-d index, empty index */
    clt_tensor *t = mk(CLT_FLOAT32, 2, ts, tv), *r = NULL;
    clt_tensor *i0 = mk_i64(0, NULL, (double[]){-2}), *ie = mk_i64(1, (int64_t[]){0}, NULL);
    CHECK(clt_take(t, i0, &r));
    assert_shape(r, 0, NULL);
    assert_values(r, &tv[10], 1);
    clt_tensor_free(r);
    CHECK(clt_take(t, ie, &r));
    assert_shape(r, 1, (int64_t[]){0});
    clt_tensor_free(r);
    clt_tensor_free(i0);
    clt_tensor_free(ie);
    clt_tensor_free(t);
    free(tv);
}

Test(index_more, take_out_of_range_and_refusals)
{
    double tv[5] = {1, 2, 3, 4, 5};
    clt_tensor *t = mk(CLT_FLOAT32, 1, (int64_t[]){5}, tv), *r = NULL;
    clt_tensor *bad = mk_i64(1, (int64_t[]){3}, (double[]){1, -6, 0});
    EXPECT_REPORTED(clt_take(t, bad, &r), r,
                    "clt_take: index -6 is out of bounds for dimension 0 with size 5");
    assert_values(r, (double[]){2, 0, 1}, 3);
    clt_tensor_free(r);
    clt_tensor_free(bad);
    bad = mk_i64(1, (int64_t[]){1}, (double[]){5});
    EXPECT_REPORTED(clt_take(t, bad, &r), r, "index 5 is out of bounds");
    clt_tensor_free(r);
    clt_tensor_free(bad);
    clt_tensor *i32 = mk(CLT_INT32, 1, (int64_t[]){1}, (double[]){0});
    r = (clt_tensor *)t;
    assert_error(clt_take(t, i32, &r), CLT_ERR_DTYPE_MISMATCH, "expected dtype int64");
    cr_assert_null(r);
    clt_tensor *empty = mk(CLT_FLOAT32, 1, (int64_t[]){0}, NULL);
    clt_tensor *one = mk_i64(1, (int64_t[]){1}, (double[]){0});
    assert_error(clt_take(empty, one, &r), CLT_ERR_INDEX_OUT_OF_RANGE, "empty tensor");
    clt_tensor_free(i32);
    clt_tensor_free(empty);
    clt_tensor_free(one);
    clt_tensor_free(t);
}

/* ---- index_fill, index_copy ------------------------------------------------------- */

Test(index_more, index_fill_and_index_copy_every_dim)
{
    int64_t ts[3] = {3, 4, 5};
    double *tv = values(60, 7, true);
    clt_tensor *t = mk(CLT_FLOAT64, 3, ts, tv);
    for (int dim = -3; dim < 3; dim++) {
        int d = dim < 0 ? dim + 3 : dim;
        int64_t size = ts[d];
        /* fill: negative and repeated indices */
        double fi[3] = {-1, 0, (double)(size - 1)};
        clt_tensor *idx = mk_i64(1, (int64_t[]){3}, fi), *r = NULL;
        CHECK(clt_index_fill(t, dim, idx, -7.5, &r));
        double want[60];
        int64_t c[3];
        for (int64_t i = 0; i < 60; i++) {
            host_unravel(i, 3, ts, c);
            want[i] = (c[d] == 0 || c[d] == size - 1) ? -7.5 : tv[i];
        }
        assert_values(r, want, 60);
        clt_tensor_free(r);
        clt_tensor_free(idx);
        /* copy: src slices into places [size-1, 0, size-1]: the last wins */
        int64_t ss[3] = {ts[0], ts[1], ts[2]};
        ss[d] = 3;
        int64_t sn = host_numel(3, ss);
        double *sv = values(sn, 11, true), ci[3] = {(double)(size - 1), 0, (double)(size - 1)};
        clt_tensor *src = mk(CLT_FLOAT64, 3, ss, sv);
        idx = mk_i64(1, (int64_t[]){3}, ci);
        CHECK(clt_index_copy(t, dim, idx, src, &r));
        memcpy(want, tv, sizeof want);
        for (int64_t i = 0; i < sn; i++) {
            host_unravel(i, 3, ss, c);
            c[d] = (int64_t)ci[c[d]];
            want[host_ravel(c, 3, ts)] = sv[i];
        }
        assert_values(r, want, 60);
        clt_tensor_free(r);
        clt_tensor_free(idx);
        clt_tensor_free(src);
        free(sv);
    }
    clt_tensor_free(t);
    free(tv);
}

Test(index_more, index_fill_and_copy_in_place_into_a_view)
{
    double tv[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    clt_tensor *base = mk(CLT_FLOAT32, 2, (int64_t[]){3, 4}, tv), *v = NULL;
    CHECK(clt_transpose(base, 0, 1, &v)); /* [4, 3] */
    clt_tensor *idx = mk_i64(1, (int64_t[]){1}, (double[]){-1});
    uint64_t v0 = clt__version(base);
    CHECK(clt_index_fill_(v, 0, idx, 100));
    cr_assert_eq(clt__version(base), v0 + 1);
    assert_values(base, (double[]){0, 1, 2, 100, 4, 5, 6, 100, 8, 9, 10, 100}, 12);
    clt_tensor *src = mk(CLT_FLOAT32, 2, (int64_t[]){4, 1}, (double[]){-1, -2, -3, -4});
    clt_tensor *i1 = mk_i64(1, (int64_t[]){1}, (double[]){2});
    CHECK(clt_index_copy_(v, 1, i1, src));
    assert_values(base, (double[]){0, 1, 2, 100, 4, 5, 6, 100, -1, -2, -3, -4}, 12);
    /* errors leave t alone */
    clt_tensor *neg = mk_i64(1, (int64_t[]){1}, (double[]){-1});
    assert_error(clt_index_copy_(v, 1, neg, NULL), CLT_ERR_NULL_ARGUMENT, "src");
    clt_tensor *wide = mk(CLT_FLOAT32, 2, (int64_t[]){4, 2}, tv);
    assert_error(clt_index_copy_(v, 1, i1, wide), CLT_ERR_SHAPE_MISMATCH, "number of indices");
    clt_tensor *i32 = mk(CLT_INT32, 1, (int64_t[]){1}, (double[]){0});
    assert_error(clt_index_copy_(v, 1, i32, src), CLT_ERR_DTYPE_MISMATCH, "int64");
    assert_error(clt_index_fill_(v, 1, i32, 0), CLT_ERR_DTYPE_MISMATCH, "int64");
    assert_values(base, (double[]){0, 1, 2, 100, 4, 5, 6, 100, -1, -2, -3, -4}, 12);
    clt_tensor *r = NULL;
    EXPECT_REPORTED(clt_index_copy(v, 1, neg, src, &r), r,
                    "clt_index_copy: index -1 is out of bounds for dimension 1 with size 3");
    clt_tensor_free(r);
    clt_tensor *far = mk_i64(1, (int64_t[]){1}, (double[]){-5});
    EXPECT_REPORTED(clt_index_fill(v, 0, far, 1, &r), r,
                    "clt_index_fill: index -5 is out of bounds for dimension 0 with size 4");
    clt_tensor_free(r);
    clt_tensor *tensors[] = {base, v, idx, src, i1, neg, wide, i32, far};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
}

/* ---- index_put ---------------------------------------------------------------------- */

Test(index_more, index_put_broadcast_indices_and_values)
{
    /* t [4, 3, 2]; indices [2, 1] and [3] broadcast to [2, 3]; values [2]
     * broadcast to the result [2, 3, 2] */
    int64_t ts[3] = {4, 3, 2};
    double *tv = values(24, 3, true);
    double i0[2] = {0, -1}, i1[3] = {1, -1, 0}, vv[2] = {10, 20};
    clt_tensor *t = mk(CLT_FLOAT32, 3, ts, tv);
    clt_tensor *a = mk_i64(2, (int64_t[]){2, 1}, i0), *b = mk_i64(1, (int64_t[]){3}, i1);
    clt_tensor *val = mk(CLT_FLOAT32, 1, (int64_t[]){2}, vv), *r = NULL;
    const clt_tensor *ix[2] = {a, b};
    for (int acc = 0; acc < 2; acc++) {
        CHECK(clt_index_put(t, ix, 2, val, acc, &r));
        double want[24];
        memcpy(want, tv, sizeof want);
        for (int p = 0; p < 2; p++)
            for (int q = 0; q < 3; q++)
                for (int k = 0; k < 2; k++) {
                    int64_t c[3] = {wrap(i0[p], 4), wrap(i1[q], 3), k};
                    double *w = &want[host_ravel(c, 3, ts)];
                    *w = acc ? (double)((float)*w + (float)vv[k]) : vv[k];
                }
        assert_values(r, want, 24);
        clt_tensor_free(r);
    }
    /* t itself is untouched by the out-of-place form */
    assert_values(t, tv, 24);
    clt_tensor *tensors[] = {t, a, b, val};
    for (size_t k = 0; k < 4; k++)
        clt_tensor_free(tensors[k]);
    free(tv);
}

Test(index_more, index_put_repeats_accumulate_in_order_or_last_wins)
{
    double tv[5] = {1, 2, 3, 4, 5}, iv[4] = {2, -3, 0, 2}, vv[4] = {0.5, 0.25, 8, -1};
    clt_tensor *t = mk(CLT_FLOAT64, 1, (int64_t[]){5}, tv), *r = NULL;
    clt_tensor *idx = mk_i64(1, (int64_t[]){4}, iv);
    clt_tensor *val = mk(CLT_FLOAT64, 1, (int64_t[]){4}, vv);
    const clt_tensor *ix[1] = {idx};
    CHECK(clt_index_put(t, ix, 1, val, 1, &r));
    assert_values(r, (double[]){9, 2, 3 + 0.5 + 0.25 - 1, 4, 5}, 5);
    clt_tensor_free(r);
    CHECK(clt_index_put(t, ix, 1, val, 0, &r));
    assert_values(r, (double[]){8, 2, -1, 4, 5}, 5); /* index 2 last took -1 */
    clt_tensor_free(r);
    /* in place, with the values read from t's own storage */
    uint64_t v0 = clt__version(t);
    clt_tensor *self = NULL;
    CHECK(clt_narrow(t, 0, 1, 4, &self)); /* [2, 3, 4, 5] */
    CHECK(clt_index_put_(t, ix, 1, self, 1));
    cr_assert_eq(clt__version(t), v0 + 1);
    assert_values(t, (double[]){1 + 4, 2, 3 + 2 + 3 + 5, 4, 5}, 5);
    clt_tensor_free(self);
    clt_tensor_free(t);
    clt_tensor_free(idx);
    clt_tensor_free(val);
}

Test(index_more, index_put_bool_masks_and_strided_destination)
{
    /* a [4, 3] mask over the first two dims of [4, 3, 2], values [2] */
    int64_t ts[3] = {4, 3, 2};
    double mv[12] = {1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0}, vv[2] = {-1, -2};
    double *tv = values(24, 5, false);
    clt_tensor *t = mk(CLT_INT64, 3, ts, tv), *m = mk(CLT_BOOL, 2, (int64_t[]){4, 3}, mv);
    clt_tensor *val = mk(CLT_INT64, 1, (int64_t[]){2}, vv), *r = NULL;
    const clt_tensor *ix[1] = {m};
    CHECK(clt_index_put(t, ix, 1, val, 0, &r));
    double want[24];
    for (int64_t i = 0; i < 24; i++)
        want[i] = mv[i / 2] ? vv[i % 2] : tv[i];
    assert_values(r, want, 24);
    clt_tensor_free(r);
    /* a 1-D mask then an int index, in place into a transposed view */
    clt_tensor *base = mk(CLT_FLOAT32, 2, (int64_t[]){3, 4}, tv), *v = NULL;
    CHECK(clt_transpose(base, 0, 1, &v)); /* v [4, 3]: v[i][j] = base[j][i] */
    clt_tensor *m1 = mk(CLT_BOOL, 1, (int64_t[]){4}, (double[]){0, 1, 0, 1});
    clt_tensor *j = mk_i64(1, (int64_t[]){1}, (double[]){-1});
    clt_tensor *one = mk(CLT_FLOAT32, 0, NULL, (double[]){99});
    const clt_tensor *ix2[2] = {m1, j};
    CHECK(clt_index_put_(v, ix2, 2, one, 0));
    double wb[12];
    memcpy(wb, tv, sizeof wb);
    wb[2 * 4 + 1] = 99; /* v[1][2] */
    wb[2 * 4 + 3] = 99; /* v[3][2] */
    assert_values(base, wb, 12);
    /* refusals */
    clt_tensor *m3 = mk(CLT_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1});
    const clt_tensor *bad1[1] = {m3};
    r = (clt_tensor *)t;
    assert_error(clt_index_put(t, bad1, 1, val, 0, &r), CLT_ERR_INDEX_OUT_OF_RANGE,
                  "The shape of the mask [3] at index 0 does not match");
    cr_assert_null(r);
    const clt_tensor *many[4] = {j, j, j, j};
    assert_error(clt_index_put(t, many, 4, val, 0, &r), CLT_ERR_INDEX_OUT_OF_RANGE,
                  "too many indices for tensor of dimension 3");
    clt_tensor *three = mk(CLT_INT64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    assert_error(clt_index_put(t, ix, 1, three, 0, &r), CLT_ERR_SHAPE_MISMATCH,
                  "cannot be broadcast to indexing result of shape [5, 2]");
    assert_error(clt_index_put(t, ix, 1, one, 0, &r), CLT_ERR_DTYPE_MISMATCH,
                  "Index put requires the source and destination dtypes match");
    clt_tensor *i2 = mk_i64(1, (int64_t[]){2}, (double[]){0, 1});
    clt_tensor *i3 = mk_i64(1, (int64_t[]){3}, (double[]){0, 1, 2});
    const clt_tensor *nob[2] = {i2, i3};
    assert_error(clt_index_put(t, nob, 2, val, 0, &r), CLT_ERR_SHAPE_MISMATCH, "[2]");
    assert_error(clt_index_put(t, ix, 0, val, 0, &r), CLT_ERR_INVALID_ARGUMENT, "at least one");
    /* out of range, reported at the read, after the op wrapped the rest */
    clt_tensor *far = mk_i64(1, (int64_t[]){2}, (double[]){1, -5});
    const clt_tensor *ixf[1] = {far};
    EXPECT_REPORTED(clt_index_put(t, ixf, 1, val, 1, &r), r,
                    "clt_index_put: index -5 is out of bounds for dimension 0 with size 4");
    clt_tensor_free(r);
    clt_tensor *tensors[] = {t, m, val, base, v, m1, j, one, m3, three, i2, i3, far};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
    free(tv);
}

/* torch's t[spec] = v (accumulate: +=) for a 3-D t in double: spec[d] NULL
 * for ":" or the nb values of the broadcast index shape, flattened.  v is
 * torch's indexing result: the index shape where the first indexed
 * dimension was when the indexed ones are adjacent, else first, the
 * sliced dimensions around it. */
static void ref_put3(const int64_t *ts, double *t, const double *const *spec, int64_t nb,
                     const double *v, bool acc)
{
    int sl[3], ns = 0, first = -1, last = -1, pos = 0;
    for (int d = 0; d < 3; d++) {
        if (spec[d] == NULL)
            sl[ns++] = d;
        else {
            first = first < 0 ? d : first;
            last = d;
        }
    }
    bool adjacent = true;
    for (int d = first; d <= last; d++)
        adjacent = adjacent && spec[d] != NULL;
    for (int j = 0; adjacent && j < ns; j++)
        pos += sl[j] < first;
    int64_t rsh[3], nsl = 1;
    for (int j = 0; j < ns; j++)
        nsl *= ts[sl[j]];
    for (int64_t b = 0; b < nb; b++)
        for (int64_t s = 0; s < nsl; s++) {
            int64_t c[3], r[3], rem = s;
            int nr = 0;
            for (int j = ns - 1; j >= 0; j--) {
                c[sl[j]] = rem % ts[sl[j]];
                rem /= ts[sl[j]];
            }
            for (int d = 0; d < 3; d++)
                if (spec[d])
                    c[d] = wrap(spec[d][b], ts[d]);
            for (int j = 0; j <= ns; j++) {
                if (j == pos) {
                    rsh[nr] = nb;
                    r[nr++] = b;
                }
                if (j < ns) {
                    rsh[nr] = ts[sl[j]];
                    r[nr++] = c[sl[j]];
                }
            }
            double *w = &t[host_ravel(c, 3, ts)];
            double x = v[host_ravel(r, nr, rsh)];
            *w = acc ? *w + x : x;
        }
}

/* v [nv] of shape vs broadcast to rs (same number of dims) in double. */
static double *broadcast_host(int nd, const int64_t *vs, const double *v, const int64_t *rs)
{
    int64_t n = 1;
    for (int j = 0; j < nd; j++)
        n *= rs[j];
    double *out = malloc((size_t)n * sizeof *out);
    for (int64_t i = 0; i < n; i++) {
        int64_t c[CLT_MAX_DIMS], rem = i;
        for (int j = nd - 1; j >= 0; j--) {
            c[j] = vs[j] == 1 ? 0 : rem % rs[j];
            rem /= rs[j];
        }
        out[i] = v[host_ravel(c, nd, vs)];
    }
    return out;
}

Test(index_more, index_put_full_slices_where_torch_puts_the_indexed_dims)
{
    /* t [3, 4, 5]; NULL entries are ":" */
    int64_t ts[3] = {3, 4, 5};
    double *tv = values(60, 11, true);
    double ia[2] = {3, -1}, ib[6] = {0, -1, 2, 4, 4, 1}, ic[2] = {-3, 1};
    clt_tensor *t = mk(CLT_FLOAT64, 3, ts, tv);
    clt_tensor *a = mk_i64(1, (int64_t[]){2}, ia);
    clt_tensor *a21 = mk_i64(2, (int64_t[]){2, 1}, ia), *c = mk_i64(1, (int64_t[]){2}, ic);
    clt_tensor *b1 = mk_i64(1, (int64_t[]){3}, ib), *r = NULL;
    /* x[:, a] = v [3, 2, 5]: lead 1, v broadcast from [3, 1, 5];
     * x[:, a21, b1] = v [3, 2, 3] (a [2, 1] and b [3] broadcast to [2, 3]);
     * x[c, :, a] = v [2, 4] (apart: the index dims go first);
     * x[c, :, b1[:2]] in place below */
    double ab[6] = {3, 3, 3, -1, -1, -1}, b6[6] = {0, -1, 2, 0, -1, 2};
    struct {
        const clt_tensor *ix[3];
        int n;
        const double *spec[3];
        int64_t nb;
        int vnd;
        int64_t vs[3], rs[3];
    } cases[] = {
        {{NULL, a}, 2, {NULL, ia, NULL}, 2, 3, {3, 1, 5}, {3, 2, 5}},
        {{NULL, a21, b1}, 3, {NULL, ab, b6}, 6, 3, {3, 2, 3}, {3, 2, 3}},
        {{c, NULL, a}, 3, {ic, NULL, ia}, 2, 2, {2, 4}, {2, 4}},
        {{NULL, NULL, c}, 3, {NULL, NULL, ic}, 2, 3, {1, 4, 2}, {3, 4, 2}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int64_t nv = 1;
        for (int j = 0; j < cases[k].vnd; j++)
            nv *= cases[k].vs[j];
        double *vv = values(nv, 20 + (unsigned)k, true);
        double *full = broadcast_host(cases[k].vnd, cases[k].vs, vv, cases[k].rs);
        clt_tensor *val = mk(CLT_FLOAT64, cases[k].vnd, cases[k].vs, vv);
        for (int acc = 0; acc < 2; acc++) {
            double want[60];
            memcpy(want, tv, sizeof want);
            ref_put3(ts, want, cases[k].spec, cases[k].nb, full, acc);
            CHECK(clt_index_put(t, cases[k].ix, cases[k].n, val, acc, &r));
            assert_shape(r, 3, ts);
            assert_values(r, want, 60);
            clt_tensor_free(r);
        }
        /* values of torch's shape with the dims taken in another order
         * are refused, naming torch's shape */
        if (k == 2) {
            clt_tensor *wrong = mk(CLT_FLOAT64, 2, (int64_t[]){4, 2}, full);
            r = (clt_tensor *)t;
            assert_error(clt_index_put(t, cases[k].ix, 3, wrong, 0, &r),
                         CLT_ERR_SHAPE_MISMATCH,
                         "value tensor of shape [4, 2] cannot be broadcast to indexing result "
                         "of shape [2, 4]");
            cr_assert_null(r);
            clt_tensor_free(wrong);
        }
        clt_tensor_free(val);
        free(vv);
        free(full);
    }
    assert_values(t, tv, 60);
    /* in place into a transposed view: u = t^T(0, 2) [5, 4, 3], u[a, :, c]
     * += v [2, 4] (apart), a bool mask after a slice: u[:, m] = 7 */
    clt_tensor *u = NULL;
    CHECK(clt_transpose(t, 0, 2, &u));
    double *uv = values(8, 31, true), ut[60], want[60];
    int64_t us[3] = {5, 4, 3};
    for (int64_t i = 0; i < 60; i++) {
        int64_t cu[3] = {i / 12, i / 3 % 4, i % 3}, ct[3] = {cu[2], cu[1], cu[0]};
        ut[i] = tv[host_ravel(ct, 3, ts)];
    }
    clt_tensor *uval = mk(CLT_FLOAT64, 2, (int64_t[]){2, 4}, uv);
    const clt_tensor *uix[3] = {a, NULL, c};
    memcpy(want, ut, sizeof want);
    ref_put3(us, want, (const double *[]){ia, NULL, ic}, 2, uv, true);
    uint64_t v0 = clt__version(t);
    CHECK(clt_index_put_(u, uix, 3, uval, 1));
    cr_assert_eq(clt__version(t), v0 + 1);
    assert_values(u, want, 60);
    double mv[12] = {1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1}, sev = 7;
    clt_tensor *m = mk(CLT_BOOL, 2, (int64_t[]){4, 3}, mv), *seven = mk(CLT_FLOAT64, 0, NULL, &sev);
    const clt_tensor *mix[2] = {NULL, m};
    CHECK(clt_index_put_(u, mix, 2, seven, 0));
    for (int64_t i = 0; i < 60; i++)
        if (mv[i % 12])
            want[i] = 7;
    assert_values(u, want, 60);
    /* refusals: every entry NULL; too many dimensions counting slices */
    const clt_tensor *none[2] = {NULL, NULL}, *many[4] = {NULL, NULL, NULL, a};
    r = (clt_tensor *)t;
    assert_error(clt_index_put(t, none, 2, seven, 0, &r), CLT_ERR_INVALID_ARGUMENT,
                 "expected at least one index tensor");
    cr_assert_null(r);
    assert_error(clt_index_put_(u, none, 2, seven, 0), CLT_ERR_INVALID_ARGUMENT,
                 "every entry of indices is NULL");
    assert_error(clt_index_put(t, many, 4, seven, 0, &r), CLT_ERR_INDEX_OUT_OF_RANGE,
                 "too many indices for tensor of dimension 3 (got 4)");
    assert_values(u, want, 60);
    clt_tensor *tensors[] = {t, a, a21, c, b1, u, uval, m, seven};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
    free(tv);
    free(uv);
}

/* ---- scatter_reduce ----------------------------------------------------------------- */

/* torch 1.13's scatter_reduce over dim 0 of [n, m] t with index and src
 * [k, m], in double (integers: floor division for the mean). */
static void ref_scatter_reduce(int64_t n, int64_t m, double *t, int64_t k, const double *idx,
                               const double *src, int mode, bool self, bool integer)
{
    double *cnt = calloc((size_t)(n * m), sizeof *cnt);
    for (int64_t i = 0; i < k * m; i++) {
        int64_t p = (int64_t)idx[i] * m + i % m;
        if (cnt[p] == 0 && !self)
            t[p] = mode == 1 ? 1 : mode >= 3 ? src[i] : 0;
        cnt[p] = cnt[p] == 0 && self ? 1 : cnt[p];
        double v = src[i], c = t[p];
        if (mode == 0 || mode == 2)
            t[p] = c + v;
        else if (mode == 1)
            t[p] = c * v;
        else if (isnan(v) || isnan(c))
            t[p] = isnan(c) ? c : v;
        else
            t[p] = mode == 3 ? fmax(c, v) : fmin(c, v);
        cnt[p] += 1;
    }
    for (int64_t p = 0; mode == 2 && p < n * m; p++)
        if (cnt[p] > 0)
            t[p] = integer ? floor(t[p] / cnt[p]) : t[p] / cnt[p];
    free(cnt);
}

Test(index_more, scatter_reduce_every_mode_and_include_self)
{
    static const char *names[] = {"sum", "prod", "mean", "amax", "amin"};
    int64_t ts[2] = {4, 3}, is[2] = {5, 3};
    double iv[15] = {0, 1, 3, 0, 1, 3, 0, 0, 3, 2, 1, 0, 0, 1, 0};
    double *tv = values(12, 9, true), *sv = values(15, 13, true);
    tv[4] = NAN;
    sv[7] = NAN;
    for (int k = 0; k < 2; k++) {
        clt_dtype dt = k == 0 ? CLT_FLOAT64 : CLT_INT64;
        double tk[12], sk[15];
        for (int i = 0; i < 12; i++)
            tk[i] = dt == CLT_INT64 ? (isnan(tv[i]) ? 3 : trunc(tv[i] * 4)) : tv[i];
        for (int i = 0; i < 15; i++)
            sk[i] = dt == CLT_INT64 ? (isnan(sv[i]) ? -5 : trunc(sv[i] * 4)) : sv[i];
        clt_tensor *t = mk(dt, 2, ts, tk), *src = mk(dt, 2, is, sk), *idx = mk_i64(2, is, iv);
        for (int mode = 0; mode < 5; mode++)
            for (int self = 0; self < 2; self++) {
                clt_tensor *r = NULL;
                CHECK(clt_scatter_reduce(t, 0, idx, src, names[mode], self, &r));
                double want[12];
                memcpy(want, tk, sizeof want);
                ref_scatter_reduce(4, 3, want, 5, iv, sk, mode, self, dt == CLT_INT64);
                double *got = read_as_f64(r);
                for (int i = 0; i < 12; i++)
                    cr_assert(fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i]) ||
                                  (isnan(got[i]) && isnan(want[i])),
                              "%s %s self=%d element %d: got %.17g, want %.17g",
                              clt_dtype_name(dt), names[mode], self, i, got[i], want[i]);
                free(got);
                clt_tensor_free(r);
            }
        clt_tensor_free(t);
        clt_tensor_free(src);
        clt_tensor_free(idx);
    }
    free(tv);
    free(sv);
}

Test(index_more, scatter_reduce_along_the_last_dim_errors_and_bad_indices)
{
    double tv[6] = {1, 2, 3, 4, 5, 6}, iv[4] = {2, 2, 0, 1}, sv[4] = {10, 20, 30, 40};
    clt_tensor *t = mk(CLT_FLOAT32, 2, (int64_t[]){2, 3}, tv);
    clt_tensor *idx = mk_i64(2, (int64_t[]){1, 4}, iv), *r = NULL;
    clt_tensor *src = mk(CLT_FLOAT32, 2, (int64_t[]){1, 4}, sv);
    /* index may be longer than t along dim (not elsewhere), as scatter's */
    CHECK(clt_scatter_reduce(t, -1, idx, src, "sum", 1, &r));
    assert_values(r, (double[]){31, 42, 33, 4, 5, 6}, 6);
    clt_tensor_free(r);
    clt_tensor *tall = mk_i64(2, (int64_t[]){3, 1}, iv);
    clt_tensor *tsrc = mk(CLT_FLOAT32, 2, (int64_t[]){3, 1}, sv);
    assert_error(clt_scatter_reduce(t, -1, tall, tsrc, "sum", 1, &r), CLT_ERR_SHAPE_MISMATCH,
                  "expected index");
    clt_tensor_free(tall);
    clt_tensor_free(tsrc);
    clt_tensor *idx3 = mk_i64(2, (int64_t[]){1, 3}, iv);
    CHECK(clt_scatter_reduce(t, -1, idx3, src, "mean", 0, &r));
    assert_values(r, (double[]){30, 2, 15, 4, 5, 6}, 6);
    clt_tensor_free(r);
    assert_error(clt_scatter_reduce(t, 1, idx3, src, "max", 1, &r), CLT_ERR_INVALID_ARGUMENT,
                  "reduce argument must be either sum, prod, mean, amax or amin, got max");
    cr_assert_null(r);
    clt_tensor *bl = mk(CLT_BOOL, 2, (int64_t[]){2, 3}, tv);
    clt_tensor *bs = mk(CLT_BOOL, 2, (int64_t[]){1, 4}, sv);
    assert_error(clt_scatter_reduce(bl, 1, idx3, bs, "sum", 1, &r), CLT_ERR_DTYPE_UNSUPPORTED,
                  "bool");
    clt_tensor *neg = mk_i64(2, (int64_t[]){1, 1}, (double[]){-1});
    EXPECT_REPORTED(clt_scatter_reduce(t, 1, neg, src, "amax", 1, &r), r,
                    "clt_scatter_reduce: index -1 is out of bounds for dimension 1 with size 3");
    assert_values(r, tv, 6);
    clt_tensor_free(r);
    clt_tensor *tensors[] = {t, idx, src, idx3, bl, bs, neg};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
}

/* ---- masked_select, masked_scatter, nonzero ------------------------------------------ */

Test(index_more, masked_select_scatter_and_nonzero_broadcast)
{
    /* t [3, 4], mask [4] broadcast to it */
    double *tv = values(12, 17, true), mv[4] = {1, 0, 1, 1}, *sv = values(10, 19, true);
    clt_tensor *t = mk(CLT_FLOAT32, 2, (int64_t[]){3, 4}, tv);
    clt_tensor *m = mk(CLT_BOOL, 1, (int64_t[]){4}, mv), *r = NULL;
    clt_tensor *src = mk(CLT_FLOAT32, 2, (int64_t[]){2, 5}, sv);
    CHECK(clt_masked_select(t, m, &r));
    double want[12], ws[12];
    int64_t cnt = 0;
    for (int i = 0; i < 12; i++) {
        ws[i] = tv[i];
        if (mv[i % 4]) {
            want[cnt] = tv[i];
            ws[i] = sv[cnt++];
        }
    }
    assert_shape(r, 1, &cnt);
    assert_values(r, want, cnt);
    clt_tensor_free(r);
    CHECK(clt_masked_scatter(t, m, src, &r));
    assert_shape(r, 2, (int64_t[]){3, 4});
    assert_values(r, ws, 12);
    clt_tensor_free(r);
    /* nonzero: coordinates in row-major order, NaN counts */
    double nv[6] = {0, NAN, -0.0, 2, 0, -1};
    clt_tensor *nz = mk(CLT_FLOAT32, 2, (int64_t[]){2, 3}, nv);
    CHECK(clt_nonzero(nz, &r));
    assert_shape(r, 2, (int64_t[]){3, 2});
    assert_values(r, (double[]){0, 1, 1, 0, 1, 2}, 6);
    clt_tensor_free(r);
    CHECK(clt_argwhere(m, &r));
    assert_shape(r, 2, (int64_t[]){3, 1});
    assert_values(r, (double[]){0, 2, 3}, 3);
    clt_tensor_free(r);
    /* 0-d and empty */
    clt_tensor *z0 = mk(CLT_INT32, 0, NULL, (double[]){5}), *e = NULL;
    CHECK(clt_nonzero(z0, &r));
    assert_shape(r, 2, (int64_t[]){1, 0});
    clt_tensor_free(r);
    CHECK(clt_narrow(t, 0, 0, 0, &e));
    CHECK(clt_masked_select(e, m, &r));
    assert_shape(r, 1, (int64_t[]){0});
    clt_tensor_free(r);
    CHECK(clt_nonzero(e, &r));
    assert_shape(r, 2, (int64_t[]){0, 2});
    clt_tensor_free(r);
    /* in place, a uint8 mask, and a source too short */
    clt_tensor *u8 = mk(CLT_UINT8, 1, (int64_t[]){4}, (double[]){0, 2, 0, 1});
    CHECK(clt_masked_scatter_(t, u8, src));
    for (int i = 0, k = 0; i < 12; i++)
        ws[i] = (i % 4 == 1 || i % 4 == 3) ? sv[k++] : tv[i];
    assert_values(t, ws, 12);
    clt_tensor *short_src = NULL;
    CHECK(clt_narrow(src, 1, 0, 2, &short_src)); /* 4 elements for 6 places */
    assert_error(clt_masked_scatter(t, u8, short_src, &r), CLT_ERR_SHAPE_MISMATCH,
                  "Number of elements of source < number of ones in mask");
    clt_tensor *wide = mk(CLT_BOOL, 2, (int64_t[]){2, 1, 4}, (double[]){1, 1, 1, 1, 1, 1, 1, 1});
    assert_error(clt_masked_scatter_(t, wide, src), CLT_ERR_SHAPE_MISMATCH, "broadcast");
    assert_error(clt_masked_select(t, src, &r), CLT_ERR_DTYPE_MISMATCH, "mask");
    assert_values(t, ws, 12);
    clt_tensor *tensors[] = {t, m, src, nz, z0, e, u8, short_src, wide};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
    free(tv);
    free(sv);
}

/* ---- searchsorted, bucketize, bincount ------------------------------------------------ */

static int64_t ref_search(const double *row, int64_t len, double v, bool right)
{
    int64_t lo = 0, hi = len;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (right ? !(row[mid] > v) : !(row[mid] >= v))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

Test(index_more, searchsorted_rows_nan_and_bucketize)
{
    double seq[7] = {-2, -1, 0, 0, 1.5, 3, NAN};
    double vals[8] = {-3, -2, 0, 0.5, 3, 4, NAN, -1};
    clt_tensor *s = mk(CLT_FLOAT32, 1, (int64_t[]){7}, seq);
    clt_tensor *v = mk(CLT_FLOAT32, 2, (int64_t[]){2, 4}, vals), *r = NULL;
    for (int right = 0; right < 2; right++) {
        double want[8];
        for (int i = 0; i < 8; i++)
            want[i] = (double)ref_search(seq, 7, vals[i], right);
        CHECK(clt_searchsorted(s, v, right, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
        assert_shape(r, 2, (int64_t[]){2, 4});
        assert_values(r, want, 8);
        clt_tensor_free(r);
        CHECK(clt_bucketize(v, s, right, &r));
        assert_values(r, want, 8);
        clt_tensor_free(r);
    }
    /* rows: sequence [2, 3] against values [2, 4]; int64 sequence with
     * float values promotes */
    double rows[6] = {1, 2, 3, 10, 20, 30};
    clt_tensor *sr = mk(CLT_INT64, 2, (int64_t[]){2, 3}, rows);
    CHECK(clt_searchsorted(sr, v, 1, &r));
    double want[8];
    for (int i = 0; i < 8; i++)
        want[i] = (double)ref_search(rows + (i / 4) * 3, 3, vals[i], true);
    assert_values(r, want, 8);
    clt_tensor_free(r);
    /* refusals */
    double nine[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    clt_tensor *s33 = mk(CLT_FLOAT32, 2, (int64_t[]){3, 3}, nine);
    assert_error(clt_searchsorted(s33, v, 0, &r), CLT_ERR_SHAPE_MISMATCH,
                  "first N-1 dimensions of boundaries tensor and input value tensor must match");
    assert_error(clt_bucketize(v, sr, 0, &r), CLT_ERR_SHAPE_MISMATCH,
                  "boundaries tensor must be 1 dimension");
    clt_tensor *tensors[] = {s, v, sr, s33};
    for (size_t k = 0; k < 4; k++)
        clt_tensor_free(tensors[k]);
}

Test(index_more, searchsorted_side_sorter_and_out_int32)
{
    /* rows of an unsorted sequence [2, 5] read through their argsort */
    double seq[10] = {3, -1, 7, 0, 3, 10, 20, 10, NAN, -5};
    double sorter[10] = {1, 3, 0, 4, 2, 4, 0, 2, 1, 3};
    double vals[6] = {3, -2, 8, 10, NAN, 25};
    clt_tensor *s = mk(CLT_FLOAT64, 2, (int64_t[]){2, 5}, seq);
    clt_tensor *so = mk_i64(2, (int64_t[]){2, 5}, sorter);
    clt_tensor *v = mk(CLT_FLOAT64, 2, (int64_t[]){2, 3}, vals), *r = NULL;
    double sorted[10];
    for (int i = 0; i < 10; i++)
        sorted[i] = seq[(i / 5) * 5 + (int)sorter[i]];
    static const char *sides[] = {NULL, "left", "right"};
    for (int k = 0; k < 3; k++)
        for (int right = 0; right < 2; right++)
            for (int i32 = 0; i32 < 2; i32++) {
                if (k == 1 && right)
                    continue;
                bool rt = right || k == 2;
                double want[6], plain[6];
                for (int i = 0; i < 6; i++) {
                    want[i] = (double)ref_search(sorted + (i / 3) * 5, 5, vals[i], rt);
                    plain[i] = (double)ref_search(seq + (i / 3) * 5, 5, vals[i], rt);
                }
                CHECK(clt_searchsorted_ex(s, v, i32, right, sides[k], so, &r));
                cr_assert_eq(clt_tensor_dtype(r), i32 ? CLT_INT32 : CLT_INT64);
                assert_shape(r, 2, (int64_t[]){2, 3});
                assert_values(r, want, 6);
                clt_tensor_free(r);
                /* without a sorter, the sequence as it is (unsorted rows:
                 * the same binary search as torch's) */
                CHECK(clt_searchsorted_ex(s, v, i32, right, sides[k], NULL, &r));
                assert_values(r, plain, 6);
                clt_tensor_free(r);
            }
    /* refusals, in torch's words */
    clt_tensor *s32 = mk(CLT_INT32, 2, (int64_t[]){2, 5}, sorter);
    clt_tensor *short_ = mk_i64(2, (int64_t[]){2, 4}, sorter);
    r = (clt_tensor *)s;
    assert_error(clt_searchsorted_ex(s, v, 0, 0, "lft", NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "side can only be 'left' or 'right' but got lft");
    cr_assert_null(r);
    assert_error(clt_searchsorted_ex(s, v, 0, 1, "left", NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "side and right can't be set to opposites, got side of left while right was "
                 "True");
    assert_error(clt_searchsorted_ex(s, v, 0, 0, NULL, s32, &r), CLT_ERR_DTYPE_MISMATCH,
                 "sorter must be a tensor of long dtype but got dtype int32");
    assert_error(clt_searchsorted_ex(s, v, 0, 0, NULL, short_, &r), CLT_ERR_SHAPE_MISMATCH,
                 "boundary and sorter must have the same size, but got boundary tensor [2, 5] "
                 "and got sorter tensor [2, 4]");
    /* a sorter value out of range is reported at the next synchronisation */
    double badv[10] = {0, 1, 2, 3, 5, 0, 1, 2, 3, 4};
    clt_tensor *bad = mk_i64(2, (int64_t[]){2, 5}, badv);
    EXPECT_REPORTED(clt_searchsorted_ex(s, v, 0, 0, NULL, bad, &r), r,
                    "clt_gather: index 5 is out of bounds for dimension 1 with size 5");
    clt_tensor_free(r);
    clt_tensor *tensors[] = {s, so, v, s32, short_, bad};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
}

Test(index_more, bincount_counts_weights_and_refusals)
{
    double xv[6] = {2, 0, 2, 7, 1, 2}, wv[6] = {0.5, 1, 0.25, 2, -1, 3};
    clt_tensor *x = mk(CLT_INT32, 1, (int64_t[]){6}, xv), *r = NULL;
    CHECK(clt_bincount(x, NULL, 3, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    assert_values(r, (double[]){1, 1, 3, 0, 0, 0, 0, 1}, 8);
    clt_tensor_free(r);
    CHECK(clt_bincount(x, NULL, 10, &r));
    assert_shape(r, 1, (int64_t[]){10});
    clt_tensor_free(r);
    for (int k = 0; k < 2; k++) {
        clt_dtype wd = k == 0 ? CLT_FLOAT32 : CLT_INT64;
        clt_tensor *w = mk(wd, 1, (int64_t[]){6}, wv);
        CHECK(clt_bincount(x, w, 0, &r));
        cr_assert_eq(clt_tensor_dtype(r), k == 0 ? CLT_FLOAT32 : CLT_FLOAT64);
        double w2 = k == 0 ? 0.5 + 0.25 + 3 : 0 + 0 + 3;
        assert_values(r, (double[]){1, k == 0 ? -1 : -1, w2, 0, 0, 0, 0, 2}, 8);
        clt_tensor_free(r);
        clt_tensor_free(w);
    }
    clt_tensor *e = mk(CLT_INT64, 1, (int64_t[]){0}, NULL);
    CHECK(clt_bincount(e, NULL, 0, &r));
    assert_shape(r, 1, (int64_t[]){0});
    clt_tensor_free(r);
    clt_tensor *neg = mk(CLT_INT64, 1, (int64_t[]){2}, (double[]){1, -1});
    assert_error(clt_bincount(neg, NULL, 0, &r), CLT_ERR_INVALID_ARGUMENT, "non-negative");
    cr_assert_null(r);
    clt_tensor *f = mk(CLT_FLOAT32, 1, (int64_t[]){1}, xv);
    assert_error(clt_bincount(f, NULL, 0, &r), CLT_ERR_INVALID_ARGUMENT, "integral");
    assert_error(clt_bincount(x, NULL, -1, &r), CLT_ERR_INVALID_ARGUMENT, "minlength");
    assert_error(clt_bincount(x, f, 0, &r), CLT_ERR_SHAPE_MISMATCH, "same length");
    clt_tensor_free(x);
    clt_tensor_free(e);
    clt_tensor_free(neg);
    clt_tensor_free(f);
}

/* ---- unique ---------------------------------------------------------------------------- */

Test(index_more, unique_sorted_inverse_counts_and_nans)
{
    double tv[8] = {3, 1, NAN, 3, -2, 1, NAN, 1};
    clt_tensor *t = mk(CLT_FLOAT32, 2, (int64_t[]){2, 4}, tv), *u = NULL, *inv = NULL, *c = NULL;
    CHECK(clt_unique(t, &u, &inv, &c));
    assert_values(u, (double[]){-2, 1, 3, NAN, NAN}, 5);
    assert_values(c, (double[]){1, 3, 2, 1, 1}, 5);
    assert_shape(inv, 2, (int64_t[]){2, 4});
    double *iv = read_as_f64(inv), *uv = read_as_f64(u);
    for (int i = 0; i < 8; i++)
        cr_assert(uv[(int)iv[i]] == tv[i] || (isnan(tv[i]) && isnan(uv[(int)iv[i]])),
                  "element %d maps to %g", i, iv[i]);
    cr_assert_neq(iv[2], iv[6], "each NaN is a value of its own");
    free(iv);
    free(uv);
    clt_tensor_free(u);
    clt_tensor_free(inv);
    clt_tensor_free(c);
    CHECK(clt_unique_consecutive(t, &u, &inv, &c));
    assert_values(u, (double[]){3, 1, NAN, 3, -2, 1, NAN, 1}, 8);
    clt_tensor_free(u);
    clt_tensor_free(inv);
    clt_tensor_free(c);
    /* runs merge; inverse and counts are optional */
    double rv[7] = {5, 5, 2, 2, 2, 5, 7};
    clt_tensor *runs = mk(CLT_INT64, 1, (int64_t[]){7}, rv);
    CHECK(clt_unique_consecutive(runs, &u, &inv, NULL));
    assert_values(u, (double[]){5, 2, 5, 7}, 4);
    assert_values(inv, (double[]){0, 0, 1, 1, 1, 2, 3}, 7);
    clt_tensor_free(u);
    clt_tensor_free(inv);
    CHECK(clt_unique(runs, &u, NULL, &c));
    assert_values(u, (double[]){2, 5, 7}, 3);
    assert_values(c, (double[]){3, 3, 1}, 3);
    clt_tensor_free(u);
    clt_tensor_free(c);
    /* empty and 0-d */
    clt_tensor *e = mk(CLT_INT32, 1, (int64_t[]){0}, NULL), *z = mk(CLT_INT32, 0, NULL, rv);
    CHECK(clt_unique(e, &u, &inv, &c));
    assert_shape(u, 1, (int64_t[]){0});
    assert_shape(c, 1, (int64_t[]){0});
    clt_tensor_free(u);
    clt_tensor_free(inv);
    clt_tensor_free(c);
    CHECK(clt_unique(z, &u, &inv, &c));
    assert_values(u, (double[]){5}, 1);
    assert_shape(inv, 0, NULL);
    assert_values(inv, (double[]){0}, 1);
    clt_tensor_free(u);
    clt_tensor_free(inv);
    clt_tensor_free(c);
    inv = (clt_tensor *)t;
    assert_error(clt_unique(NULL, &u, &inv, NULL), CLT_ERR_NULL_ARGUMENT, "t");
    cr_assert_null(u);
    cr_assert_null(inv);
    clt_tensor_free(t);
    clt_tensor_free(runs);
    clt_tensor_free(e);
    clt_tensor_free(z);
}

/* torch.unique(dim=d) of a 3-D t in double: the slices' places in sorted
 * order (stable: ties by place), each slice's value, the counts; NaN after
 * every number and equal to nothing.  Returns the number of values; first[g]
 * is the place of value g's first slice. */
static int slice_cmp(const double *t, const int64_t *ts, int d, int64_t i, int64_t j, bool eq)
{
    /* the elements in the order of t.transpose(0, d)[i], as torch's */
    int o[3] = {0, 1, 2}, tmp = o[0];
    o[0] = o[d];
    o[d] = tmp;
    int64_t c[3];
    for (c[o[0]] = 0; c[o[0]] < 1; c[o[0]]++)
        for (c[o[1]] = 0; c[o[1]] < ts[o[1]]; c[o[1]]++)
            for (c[o[2]] = 0; c[o[2]] < ts[o[2]]; c[o[2]]++) {
                int64_t ci[3] = {c[0], c[1], c[2]}, cj[3] = {c[0], c[1], c[2]};
                ci[d] = i;
                cj[d] = j;
                double x = t[host_ravel(ci, 3, ts)], y = t[host_ravel(cj, 3, ts)];
                if (eq && (x != y))
                    return 1;
                if (!eq && (isnan(x) || isnan(y)) && isnan(x) != isnan(y))
                    return isnan(x) ? 1 : -1;
                if (!eq && x != y && !isnan(x))
                    return x < y ? -1 : 1;
            }
    return 0;
}

static int64_t ref_unique_dim(const double *t, const int64_t *ts, int d, int64_t *first,
                              double *inverse, double *counts)
{
    int64_t n = ts[d], order[16], k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = i; /* insertion: after every slice not greater */
        while (p > 0 && slice_cmp(t, ts, d, order[p - 1], i, false) > 0) {
            order[p] = order[p - 1];
            p--;
        }
        order[p] = i;
    }
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || slice_cmp(t, ts, d, order[i - 1], order[i], true) != 0) {
            first[k] = order[i];
            counts[k++] = 0;
        }
        inverse[order[i]] = (double)(k - 1);
        counts[k - 1]++;
    }
    return k;
}

Test(index_more, unique_dim_slices_in_lexicographic_order)
{
    int64_t ts[3] = {3, 4, 2};
    /* dim 1: slices 0 and 2 equal, 1 and 3 differ only in their last
     * element; dim 0: rows 0 and 2 equal; dim 2: the two columns */
    double tv[24] = {1, 2, 0, 5, 1, 2, 0, 4, /**/ 3, 3, 7, 5, 3, 3, 7, 5,
                     1, 2, 0, 5, 1, 2, 0, 4};
    double fv[24];
    memcpy(fv, tv, sizeof fv);
    fv[3] = NAN; /* in slice 1 along dim 1 and row 0 along dim 0 */
    fv[19] = NAN;
    for (int fl = 0; fl < 2; fl++) {
        const double *v = fl ? fv : tv;
        clt_tensor *t = mk(fl ? CLT_FLOAT32 : CLT_INT32, 3, ts, v);
        for (int d = -1; d < 3; d++) {
            int w = d < 0 ? d + 3 : d;
            int64_t first[4];
            double inv[4], cnt[4];
            int64_t k = ref_unique_dim(v, ts, w, first, inv, cnt);
            clt_tensor *u = NULL, *i = NULL, *c = NULL;
            CHECK(clt_unique_dim(t, d, 1, &u, &i, &c));
            int64_t us[3] = {ts[0], ts[1], ts[2]};
            us[w] = k;
            assert_shape(u, 3, us);
            double want[24];
            int64_t p = 0, q[3];
            for (q[0] = 0; q[0] < us[0]; q[0]++)
                for (q[1] = 0; q[1] < us[1]; q[1]++)
                    for (q[2] = 0; q[2] < us[2]; q[2]++) {
                        int64_t src[3] = {q[0], q[1], q[2]};
                        src[w] = first[q[w]];
                        want[p++] = v[host_ravel(src, 3, ts)];
                    }
            assert_values(u, want, p);
            cr_assert_eq(clt_tensor_dtype(i), CLT_INT64);
            assert_values(i, inv, ts[w]);
            assert_values(c, cnt, k);
            clt_tensor_free(u);
            clt_tensor_free(i);
            clt_tensor_free(c);
        }
        clt_tensor_free(t);
    }
    /* along the last dim of [2, 2, 2], slices compare as t[:, :, i].T (torch's
     * transpose(0, 2)): (0, 0, 1, 0) before (0, 1, 0, 0), so slice 0 first */
    clt_tensor *o = mk(CLT_INT32, 3, (int64_t[]){2, 2, 2}, (double[]){0, 0, 1, 0, 0, 1, 0, 0});
    clt_tensor *ou = NULL, *oi = NULL;
    CHECK(clt_unique_dim(o, 2, 1, &ou, &oi, NULL));
    assert_values(oi, (double[]){0, 1}, 2);
    assert_values(ou, (double[]){0, 0, 1, 0, 0, 1, 0, 0}, 8);
    clt_tensor_free(o);
    clt_tensor_free(ou);
    clt_tensor_free(oi);
    /* int64 compared as integers, past 2^53: rows {2^53 + 1, 0}, {2^53, 0},
     * {2^53 + 1, 0} */
    int64_t big[6] = {(INT64_C(1) << 53) + 1, 0, INT64_C(1) << 53, 0, (INT64_C(1) << 53) + 1, 0};
    clt_tensor *b = NULL, *u = NULL, *i = NULL, *c = NULL;
    CHECK(clt_tensor_from_host(cpu0(), CLT_INT64, 2, (int64_t[]){3, 2}, big, &b));
    CHECK(clt_unique_dim(b, 0, 0, &u, &i, NULL));
    int64_t got[4];
    CHECK(clt_tensor_read(u, got, sizeof got));
    cr_assert(got[0] == big[2] && got[2] == big[0], "int64 rows out of order");
    assert_values(i, (double[]){1, 0, 1}, 3);
    clt_tensor_free(u);
    clt_tensor_free(i);
    /* empty along dim; refusals */
    clt_tensor *e = mk(CLT_FLOAT32, 2, (int64_t[]){0, 3}, NULL);
    CHECK(clt_unique_dim(e, 0, 1, &u, &i, &c));
    assert_shape(u, 2, (int64_t[]){0, 3});
    assert_shape(i, 1, (int64_t[]){0});
    assert_shape(c, 1, (int64_t[]){0});
    clt_tensor_free(u);
    clt_tensor_free(i);
    clt_tensor_free(c);
    clt_tensor *z = mk(CLT_FLOAT32, 0, NULL, (double[]){1});
    u = i = c = (clt_tensor *)e;
    assert_error(clt_unique_dim(e, 1, 1, &u, &i, &c), CLT_ERR_INVALID_ARGUMENT,
                 "There are 0 sized dimensions, and they aren't selected");
    cr_assert(u == NULL && i == NULL && c == NULL);
    assert_error(clt_unique_dim(z, 0, 1, &u, NULL, NULL), CLT_ERR_DIM_OUT_OF_RANGE,
                 "Dimension specified as 0 but tensor has no dimensions");
    assert_error(clt_unique_dim(b, 2, 1, &u, NULL, NULL), CLT_ERR_DIM_OUT_OF_RANGE,
                 "Dimension out of range");
    clt_tensor_free(b);
    clt_tensor_free(e);
    clt_tensor_free(z);
}

/* ---- gradients ---------------------------------------------------------------------------- */

typedef enum gop {
    G_TAKE,
    G_FILL,
    G_COPY,
    G_PUT,
    G_PUT_ACC,
    G_SELECT,
    G_MSCATTER,
    G_REDUCE,
    G_PUT_MID,  /* x[:, a, b] = v, accumulate when self */
    G_PUT_APART /* x[a, :, b] = v, accumulate when self */
} gop;

typedef struct gctx {
    gop op;
    int dim;
    clt_tensor *a, *b; /* indices or masks */
    const char *reduce;
    int self;
} gctx;

static clt_status g_op(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const gctx *c = p;
    const clt_tensor *ix[2] = {c->a, c->b};
    switch (c->op) {
    case G_TAKE:
        return clt_take(in[0], c->a, out);
    case G_FILL:
        return clt_index_fill(in[0], c->dim, c->a, 1.5, out);
    case G_COPY:
        return clt_index_copy(in[0], c->dim, c->a, in[1], out);
    case G_PUT:
    case G_PUT_ACC:
        return clt_index_put(in[0], ix, c->b ? 2 : 1, in[1], c->op == G_PUT_ACC, out);
    case G_SELECT:
        return clt_masked_select(in[0], c->a, out);
    case G_MSCATTER:
        return clt_masked_scatter(in[0], c->a, in[1], out);
    case G_REDUCE:
        return clt_scatter_reduce(in[0], c->dim, c->a, in[1], c->reduce, c->self, out);
    case G_PUT_MID:
    case G_PUT_APART: {
        const clt_tensor *mid[3] = {NULL, c->a, c->b}, *apart[3] = {c->a, NULL, c->b};
        return clt_index_put(in[0], c->op == G_PUT_MID ? mid : apart, 3, in[1], c->self, out);
    }
    }
    return CLT_ERR_INVALID_ARGUMENT;
}

static double *ramp(int64_t n, double step)
{
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)((i * 7) % 13) * step - 2.0;
    return v;
}

Test(index_more, gradients_by_finite_differences)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *tv = ramp(12, 0.5), *sv = ramp(12, 0.75);
    gc_in t = {2, {3, 4}, tv, 1};
    gctx c = {G_TAKE, 0, mk_i64(2, (int64_t[]){2, 2}, (double[]){0, -1, 5, 5}), NULL, NULL, 0};
    gradcheck(dev, g_op, &c, 1, &t);
    clt_tensor_free(c.a);

    c = (gctx){G_FILL, -1, mk_i64(1, (int64_t[]){2}, (double[]){0, -2}), NULL, NULL, 0};
    gradcheck(dev, g_op, &c, 1, &t);
    clt_tensor_free(c.a);

    gc_in copy[2] = {{2, {3, 4}, tv, 1}, {2, {3, 2}, sv, 1}};
    c = (gctx){G_COPY, 1, mk_i64(1, (int64_t[]){2}, (double[]){3, 0}), NULL, NULL, 0};
    gradcheck(dev, g_op, &c, 2, copy);
    clt_tensor_free(c.a);

    /* index_put: [2, 1] and [2] broadcast; values [2] broadcast to [2, 2] */
    gc_in put[2] = {{2, {3, 4}, tv, 1}, {1, {2}, sv, 1}};
    c = (gctx){G_PUT, 0, mk_i64(2, (int64_t[]){2, 1}, (double[]){0, -1}),
               mk_i64(1, (int64_t[]){2}, (double[]){1, 3}), NULL, 0};
    gradcheck(dev, g_op, &c, 2, put);
    c.op = G_PUT_ACC;
    gradcheck(dev, g_op, &c, 2, put);
    clt_tensor_free(c.a);
    clt_tensor_free(c.b);
    /* accumulate with repeats, a bool mask */
    gc_in rows[2] = {{2, {3, 4}, tv, 1}, {2, {3, 4}, sv, 1}};
    c = (gctx){G_PUT_ACC, 0, mk_i64(1, (int64_t[]){3}, (double[]){2, 0, 2}), NULL, NULL, 0};
    gradcheck(dev, g_op, &c, 2, rows);
    clt_tensor_free(c.a);
    gc_in masked[2] = {{2, {3, 4}, tv, 1}, {1, {1}, sv, 1}};
    c = (gctx){G_PUT, 0, mk(CLT_BOOL, 2, (int64_t[]){3, 4}, (double[]){1, 0, 0, 1, 0, 1, 1, 0,
                                                                       0, 0, 0, 1}),
               NULL, NULL, 0};
    gradcheck(dev, g_op, &c, 2, masked);
    clt_tensor_free(c.a);

    /* masked_select and masked_scatter with a mask broadcast to [2, 3, 4] */
    c = (gctx){G_SELECT, 0, mk(CLT_BOOL, 3, (int64_t[]){2, 1, 4},
                               (double[]){1, 0, 1, 1, 0, 1, 0, 0}),
               NULL, NULL, 0};
    gradcheck(dev, g_op, &c, 1, &t);
    gc_in ms[2] = {{2, {3, 4}, tv, 1}, {2, {4, 3}, sv, 1}};
    c.op = G_MSCATTER;
    gradcheck(dev, g_op, &c, 2, ms);
    clt_tensor_free(c.a);

    /* scatter_reduce: distinct values, so that amax and amin have no ties
     * for finite differences to straddle */
    double rt[12], rs[6];
    for (int i = 0; i < 12; i++)
        rt[i] = 0.37 * i - 1.9;
    for (int i = 0; i < 6; i++)
        rs[i] = 1.13 * (5 - i) - 2.05;
    gc_in red[2] = {{2, {4, 3}, rt, 1}, {2, {2, 3}, rs, 1}};
    static const char *modes[] = {"sum", "mean", "amax", "amin", "prod"};
    c = (gctx){G_REDUCE, 0, mk_i64(2, (int64_t[]){2, 3}, (double[]){1, 0, 3, 1, 2, 3}), NULL,
               NULL, 0};
    for (int m = 0; m < 5; m++)
        for (int self = 0; self < 2; self++) {
            c.reduce = modes[m];
            c.self = self;
            gradcheck(dev, g_op, &c, 2, red);
        }
    /* prod with zeros: place 2 of column 0 gets a single zero from src,
     * place 3 of column 2 two of them, t[0][1] is zero itself (places
     * whose weight in gradcheck's loss is not 0) */
    clt_tensor_free(c.a);
    c.a = mk_i64(2, (int64_t[]){2, 3}, (double[]){2, 0, 3, 2, 2, 3});
    rt[1] = 0;
    rs[0] = 0;
    rs[2] = 0;
    rs[5] = 0;
    c.reduce = "prod";
    for (int self = 0; self < 2; self++) {
        c.self = self;
        gradcheck(dev, g_op, &c, 2, red);
    }
    clt_tensor_free(c.a);
    free(tv);
    free(sv);
}

Test(index_more, index_put_full_slices_gradients_by_finite_differences)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    /* t [3, 3, 4], a [2, 1] and b [2] broadcast to [2, 2] (distinct places):
     * x[:, a, b] is [3, 2, 2], values broadcast from [3, 1, 2]; x[a, :, b]
     * is [2, 2, 3], values broadcast from [2, 1, 3] */
    double *tv = ramp(36, 0.5), *sv = ramp(6, 0.75);
    gctx c = {G_PUT_MID, 0, mk_i64(2, (int64_t[]){2, 1}, (double[]){2, -3}),
              mk_i64(1, (int64_t[]){2}, (double[]){3, 0}), NULL, 0};
    gc_in mid[2] = {{3, {3, 3, 4}, tv, 1}, {3, {3, 1, 2}, sv, 1}};
    gc_in apart[2] = {{3, {3, 3, 4}, tv, 1}, {3, {2, 1, 3}, sv, 1}};
    for (int acc = 0; acc < 2; acc++) {
        c.self = acc;
        c.op = G_PUT_MID;
        gradcheck(dev, g_op, &c, 2, mid);
        c.op = G_PUT_APART;
        gradcheck(dev, g_op, &c, 2, apart);
    }
    /* the node is index_put's own, as torch's */
    clt_tensor *t = NULL, *v = NULL, *r = NULL;
    const clt_tensor *ix[2] = {NULL, c.b};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, (int64_t[]){3, 3, 4}, tv, &t));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){1}, tv, &v));
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_index_put(t, ix, 2, v, 1, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "IndexPutBackward0");
    clt_tensor_free(r);
    clt_tensor_free(t);
    clt_tensor_free(v);
    clt_tensor_free(c.a);
    clt_tensor_free(c.b);
    free(tv);
    free(sv);
}

Test(index_more, grad_fn_names_and_what_is_not_recorded)
{
    double tv[4] = {1, 2, 3, 4};
    clt_tensor *t = mk(CLT_FLOAT32, 1, (int64_t[]){4}, tv), *r = NULL;
    clt_tensor *idx = mk_i64(1, (int64_t[]){2}, (double[]){1, -1});
    clt_tensor *pos = mk_i64(1, (int64_t[]){2}, (double[]){1, 3});
    clt_tensor *src = mk(CLT_FLOAT32, 1, (int64_t[]){2}, tv);
    clt_tensor *m = mk(CLT_BOOL, 1, (int64_t[]){4}, (double[]){1, 0, 0, 1});
    CHECK(clt_set_requires_grad(t, 1));
    const clt_tensor *ix[1] = {idx};
    struct {
        clt_status st;
        const char *name;
    } rows[7];
    int n = 0;
#define ROW(call, nm)                                                                        \
    do {                                                                                     \
        rows[n].st = (call);                                                                 \
        rows[n].name = nm;                                                                   \
        cr_assert_eq(rows[n].st, CLT_OK, "%s: %s", nm, clt_last_error());                    \
        cr_assert_str_eq(clt_grad_fn_name(r), nm);                                           \
        clt_tensor_free(r);                                                                  \
        n++;                                                                                 \
    } while (0)
    ROW(clt_take(t, idx, &r), "TakeBackward0");
    ROW(clt_index_fill(t, 0, idx, 0, &r), "IndexFillBackward0");
    ROW(clt_index_copy(t, 0, pos, src, &r), "IndexCopyBackward0");
    ROW(clt_index_put(t, ix, 1, src, 0, &r), "IndexPutBackward0");
    ROW(clt_masked_select(t, m, &r), "MaskedSelectBackward0");
    ROW(clt_masked_scatter(t, m, src, &r), "MaskedScatterBackward0");
    ROW(clt_scatter_reduce(t, 0, pos, src, "amax", 0, &r), "ScatterReduceBackward0");
#undef ROW
    /* src's gradient needs src to have index's shape */
    clt_tensor *one = mk_i64(1, (int64_t[]){1}, (double[]){3}), *s2 = NULL;
    CHECK(clt_clone(src, &s2));
    CHECK(clt_set_requires_grad(s2, 1));
    r = (clt_tensor *)t;
    assert_error(clt_scatter_reduce(t, 0, one, s2, "prod", 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "index's shape");
    cr_assert_null(r);
    int was = clt_set_grad_enabled(0);
    CHECK(clt_scatter_reduce(t, 0, one, s2, "prod", 1, &r));
    assert_values(r, (double[]){1, 2, 3, 4}, 4);
    clt_tensor_free(r);
    clt_set_grad_enabled(was);
    clt_tensor_free(one);
    clt_tensor_free(s2);
    /* integer results never require grad */
    CHECK(clt_nonzero(t, &r));
    cr_assert_not(clt_requires_grad(r));
    clt_tensor_free(r);
    /* in-place forms refuse a leaf that requires grad */
    assert_error(clt_index_fill_(t, 0, idx, 0), CLT_ERR_INVALID_ARGUMENT, "leaf");
    assert_error(clt_index_put_(t, ix, 1, src, 0), CLT_ERR_INVALID_ARGUMENT, "leaf");
    assert_error(clt_masked_scatter_(t, m, src), CLT_ERR_INVALID_ARGUMENT, "leaf");
    assert_values(t, tv, 4);
    clt_tensor *tensors[] = {t, idx, pos, src, m};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
}

/* index_put's failures free what it made and nothing of the caller's: in a
 * scope, a call that fails after its index was taken (the values do not
 * broadcast) leaves no tensor behind when the scope ends (it used to take
 * the scope's references to the input and the index). */
Test(index_more, failed_index_put_in_a_scope_leaves_nothing)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats before, after;
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &before));
    for (int inplace = 0; inplace < 2; inplace++) {
        clt_scope_begin();
        clt_tensor *t = NULL, *idx = NULL, *v = NULL, *out = NULL;
        CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){1}, &t));
        CHECK(clt_full(dev, CLT_INT64, 0, NULL, 0.0, &idx));
        CHECK(clt_zeros(dev, CLT_FLOAT32, 4, (int64_t[]){2, 1, 2, 3}, &v));
        const clt_tensor *ix[1] = {idx};
        if (inplace)
            assert_error(clt_index_put_(t, ix, 1, v, 0), CLT_ERR_SHAPE_MISMATCH, "broadcast");
        else
            assert_error(clt_index_put(t, ix, 1, v, 1, &out), CLT_ERR_SHAPE_MISMATCH,
                         "broadcast");
        clt_scope_end();
    }
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.requested, before.requested, "%llu bytes left in tensors",
                 (unsigned long long)(after.requested - before.requested));
}
