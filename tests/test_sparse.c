/* test_sparse.c: sparse COO tensors (cltensor/sparse.h) against references
 * computed here on the host (dense tensors filled entry by entry, products
 * and sums by loops, coalescing by sorting), their errors, float64
 * gradchecks of sparse_mm, to_dense and sum, and two devices. */
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"
#include "helpers.h"

static unsigned lcg(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

static clt_tensor *up_i64(clt_device *dev, int nd, const int64_t *shape, const int64_t *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, nd, shape, v, &t));
    return t;
}

static clt_tensor *up_f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

static int64_t *read_i64(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    int64_t *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

/* A random COO description: sd sparse dims of shape, dense part dshape
 * (dd dims), nnz entries with repeats (indices drawn from a few values). */
typedef struct coo {
    int sd, dd;
    int64_t shape[8];
    int64_t nnz, dn; /* dn: elements per entry */
    int64_t *idx;    /* [sd][nnz] */
    double *val;     /* [nnz][dn] */
} coo;

static coo coo_random(int sd, int dd, const int64_t *shape, int64_t nnz, unsigned seed)
{
    coo c = {sd, dd, {0}, nnz, 1, NULL, NULL};
    memcpy(c.shape, shape, (size_t)(sd + dd) * sizeof *shape);
    for (int k = 0; k < dd; k++)
        c.dn *= shape[sd + k];
    c.idx = malloc((size_t)(sd * nnz + 1) * sizeof *c.idx);
    c.val = malloc((size_t)(nnz * c.dn + 1) * sizeof *c.val);
    for (int k = 0; k < sd; k++)
        for (int64_t i = 0; i < nnz; i++)
            c.idx[k * nnz + i] = (int64_t)(lcg(&seed) % (unsigned)shape[k]);
    for (int64_t i = 0; i < nnz * c.dn; i++)
        c.val[i] = (double)(lcg(&seed) % 2001) / 1000.0 - 1.0;
    return c;
}

static void coo_free(coo *c)
{
    free(c->idx);
    free(c->val);
}

static clt_sparse *coo_upload(clt_device *dev, const coo *c, int check)
{
    int64_t ish[2] = {c->sd, c->nnz}, vsh[8];
    vsh[0] = c->nnz;
    memcpy(vsh + 1, c->shape + c->sd, (size_t)c->dd * sizeof *vsh);
    clt_tensor *i = up_i64(dev, 2, ish, c->idx), *v = up_f64(dev, 1 + c->dd, vsh, c->val);
    clt_sparse *s = NULL;
    CHECK(clt_sparse_coo_tensor(i, v, c->shape, c->sd + c->dd, check, &s));
    clt_tensor_free(i); /* the handle keeps its own references */
    clt_tensor_free(v);
    return s;
}

/* The dense tensor of c, duplicates summed (a new array). */
static double *coo_dense(const coo *c)
{
    int64_t n = host_numel(c->sd + c->dd, c->shape);
    double *d = calloc((size_t)(n ? n : 1), sizeof *d);
    for (int64_t i = 0; i < c->nnz; i++) {
        int64_t lin = 0;
        for (int k = 0; k < c->sd; k++)
            lin = lin * c->shape[k] + c->idx[k * c->nnz + i];
        for (int64_t j = 0; j < c->dn; j++)
            d[lin * c->dn + j] += c->val[i * c->dn + j];
    }
    return d;
}

Test(sparse, construct_properties_and_dense)
{
    clt_device *dev = get_device("cpu:0");
    int64_t shape[4] = {4, 5, 3, 2};
    coo c = coo_random(2, 2, shape, 17, 3);
    clt_sparse *s = coo_upload(dev, &c, 1);
    cr_assert_eq(clt_sparse_nnz(s), 17);
    cr_assert_eq(clt_sparse_sparse_dim(s), 2);
    cr_assert_eq(clt_sparse_dense_dim(s), 2);
    cr_assert_eq(clt_sparse_ndim(s), 4);
    cr_assert_eq(clt_sparse_dtype(s), CLT_FLOAT64);
    cr_assert_eq(clt_sparse_device(s), dev);
    cr_assert_eq(clt_sparse_is_coalesced(s), 0);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(clt_sparse_shape(s)[k], shape[k]);
    clt_tensor *i = NULL, *v = NULL, *d = NULL;
    CHECK(clt_sparse_indices(s, &i));
    CHECK(clt_sparse_values(s, &v));
    assert_shape(i, 2, (int64_t[]){2, 17});
    assert_shape(v, 3, (int64_t[]){17, 3, 2});
    int64_t *hi = read_i64(i);
    cr_assert(memcmp(hi, c.idx, 34 * sizeof *hi) == 0);
    assert_tensor_close(v, c.val, 17 * 6, 0, 0, "values");
    CHECK(clt_sparse_to_dense(s, &d));
    assert_shape(d, 4, shape);
    double *want = coo_dense(&c);
    assert_tensor_close(d, want, 4 * 5 * 3 * 2, 1e-12, 1e-12, "to_dense");
    free(want);
    free(hi);
    clt_tensor_free(i);
    clt_tensor_free(v);
    clt_tensor_free(d);
    clt_sparse_free(s);
    coo_free(&c);
    clt_sparse_free(NULL);
    cr_assert_eq(clt_sparse_nnz(NULL), 0);
    cr_assert_null(clt_sparse_shape(NULL));
}

Test(sparse, construct_errors_and_inferred_size)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *i = up_i64(dev, 2, (int64_t[]){1, 1}, (int64_t[]){5});
    clt_tensor *neg = up_i64(dev, 2, (int64_t[]){1, 1}, (int64_t[]){-1});
    clt_tensor *v = up_f64(dev, 1, (int64_t[]){1}, (double[]){1.5});
    clt_tensor *v2 = up_f64(dev, 1, (int64_t[]){2}, (double[]){1, 2});
    clt_tensor *flat = up_i64(dev, 1, (int64_t[]){1}, (int64_t[]){1});
    clt_sparse *s = (clt_sparse *)1;
    assert_error(clt_sparse_coo_tensor(i, v, (int64_t[]){2}, 1, 1, &s), CLT_ERR_INDEX_OUT_OF_RANGE,
                 "size is inconsistent with indices: for dim 0, size is 2 but found index 5");
    cr_assert_null(s);
    names_only("clt_sparse_coo_tensor");
    assert_error(clt_sparse_coo_tensor(neg, v, (int64_t[]){2}, 1, 1, &s),
                 CLT_ERR_INDEX_OUT_OF_RANGE, "found negative index -1 for dim 0");
    assert_error(clt_sparse_coo_tensor(i, v2, (int64_t[]){9}, 1, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "nnz from indices: 1, nnz from values: 2");
    assert_error(clt_sparse_coo_tensor(i, v, (int64_t[]){9, 3}, 2, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "number of dimensions must be sparse_dim (1) + dense_dim (0), but got 2");
    assert_error(clt_sparse_coo_tensor(flat, v, (int64_t[]){9}, 1, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "indices must be sparse_dim x nnz, but got: [1]");
    assert_error(clt_sparse_coo_tensor(i, i, (int64_t[]){9}, 1, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "sparse_dim (1) + dense_dim (1), but got 1");
    assert_error(clt_sparse_coo_tensor(v, v, (int64_t[]){9}, 1, 1, &s), CLT_ERR_DTYPE_MISMATCH,
                 "int64");
    assert_error(clt_sparse_coo_tensor(NULL, v, NULL, 0, 1, &s), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(s);
    /* unchecked: no read, no error now */
    CHECK(clt_sparse_coo_tensor(i, v, (int64_t[]){9}, 1, 0, &s));
    clt_sparse_free(s);
    /* hybrid values of the wrong dense size */
    clt_tensor *vh = up_f64(dev, 2, (int64_t[]){1, 2}, (double[]){1, 2});
    clt_tensor *i2 = up_i64(dev, 2, (int64_t[]){2, 1}, (int64_t[]){1, 2});
    assert_error(clt_sparse_coo_tensor(i2, vh, (int64_t[]){2, 3, 3}, 3, 1, &s),
                 CLT_ERR_SHAPE_MISMATCH, "values has incorrect size, expected [1, 3], got [1, 2]");
    /* size inferred: largest index + 1 and values' dense sizes */
    CHECK(clt_sparse_coo_tensor(i2, vh, NULL, 0, 0, &s));
    cr_assert_eq(clt_sparse_ndim(s), 3);
    cr_assert_eq(clt_sparse_shape(s)[0], 2);
    cr_assert_eq(clt_sparse_shape(s)[1], 3);
    cr_assert_eq(clt_sparse_shape(s)[2], 2);
    clt_sparse_free(s);
    /* int32 indices are taken (copied to int64) */
    clt_tensor *i32 = NULL, *back = NULL;
    CHECK(clt_to_dtype(i2, CLT_INT32, &i32));
    CHECK(clt_sparse_coo_tensor(i32, vh, (int64_t[]){4, 4, 2}, 3, 1, &s));
    CHECK(clt_sparse_indices(s, &back));
    cr_assert_eq(clt_tensor_dtype(back), CLT_INT64);
    int64_t *hb = read_i64(back);
    cr_assert(hb[0] == 1 && hb[1] == 2);
    free(hb);
    clt_tensor_free(back);
    clt_sparse_free(s);
    /* nnz 0 */
    clt_tensor *e = NULL, *ev = NULL, *d = NULL;
    CHECK(clt_empty(dev, CLT_INT64, 2, (int64_t[]){2, 0}, &e));
    CHECK(clt_empty(dev, CLT_FLOAT64, 1, (int64_t[]){0}, &ev));
    CHECK(clt_sparse_coo_tensor(e, ev, (int64_t[]){3, 4}, 2, 1, &s));
    CHECK(clt_sparse_to_dense(s, &d));
    double zeros[12] = {0};
    assert_tensor_close(d, zeros, 12, 0, 0, "empty to_dense");
    clt_tensor_free(d);
    clt_sparse *cs = NULL;
    CHECK(clt_sparse_coalesce(s, &cs));
    cr_assert_eq(clt_sparse_nnz(cs), 0);
    cr_assert(clt_sparse_is_coalesced(cs));
    clt_sparse_free(cs);
    clt_sparse_free(s);
    clt_tensor *tensors[] = {i, neg, v, v2, flat, vh, i2, i32, e, ev};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
}

typedef struct ent {
    int64_t lin, first;
} ent;

static int ent_cmp(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    return x->lin < y->lin ? -1 : x->lin > y->lin;
}

Test(sparse, coalesce_sorts_and_sums)
{
    clt_device *dev = get_device("cpu:0");
    int64_t shape[3] = {3, 4, 2};
    coo c = coo_random(2, 1, shape, 23, 11);
    clt_sparse *s = coo_upload(dev, &c, 0), *cs = NULL;
    CHECK(clt_sparse_coalesce(s, &cs));
    cr_assert(clt_sparse_is_coalesced(cs));
    /* host: the distinct linear indices sorted, values summed */
    ent e[23];
    for (int64_t i = 0; i < 23; i++)
        e[i] = (ent){c.idx[i] * 4 + c.idx[23 + i], i};
    qsort(e, 23, sizeof *e, ent_cmp);
    int64_t lins[23], nu = 0;
    double vals[46] = {0};
    for (int64_t i = 0; i < 23; i++) {
        if (nu == 0 || lins[nu - 1] != e[i].lin)
            lins[nu++] = e[i].lin;
        for (int j = 0; j < 2; j++)
            vals[(nu - 1) * 2 + j] += c.val[e[i].first * 2 + j];
    }
    cr_assert_eq(clt_sparse_nnz(cs), nu);
    cr_assert_lt(nu, 23, "the draw has duplicates");
    clt_tensor *i = NULL, *v = NULL;
    CHECK(clt_sparse_indices(cs, &i));
    CHECK(clt_sparse_values(cs, &v));
    int64_t *hi = read_i64(i);
    for (int64_t k = 0; k < nu; k++) {
        cr_assert_eq(hi[k], lins[k] / 4, "row of entry %lld", (long long)k);
        cr_assert_eq(hi[nu + k], lins[k] % 4, "column of entry %lld", (long long)k);
    }
    assert_tensor_close(v, vals, (size_t)nu * 2, 1e-12, 1e-12, "coalesced values");
    /* coalescing a coalesced tensor changes nothing */
    clt_sparse *again = NULL;
    CHECK(clt_sparse_coalesce(cs, &again));
    cr_assert_eq(clt_sparse_nnz(again), nu);
    free(hi);
    clt_tensor_free(i);
    clt_tensor_free(v);
    clt_sparse_free(again);
    clt_sparse_free(cs);
    clt_sparse_free(s);
    coo_free(&c);
}

Test(sparse, to_sparse_is_nonzero_order)
{
    clt_device *dev = get_device("cpu:0");
    double x[24];
    for (int k = 0; k < 24; k++)
        x[k] = (k % 5 == 0 || k % 7 == 3) ? (double)k - 7.5 : 0.0;
    clt_tensor *t = up_f64(dev, 3, (int64_t[]){4, 3, 2}, x);
    /* sparse_dim 3: every nonzero element */
    clt_sparse *s = NULL;
    CHECK(clt_tensor_to_sparse(t, 3, &s));
    cr_assert(clt_sparse_is_coalesced(s));
    int64_t nnz = 0;
    for (int k = 0; k < 24; k++)
        nnz += x[k] != 0;
    cr_assert_eq(clt_sparse_nnz(s), nnz);
    clt_tensor *i = NULL, *v = NULL, *d = NULL;
    CHECK(clt_sparse_indices(s, &i));
    CHECK(clt_sparse_values(s, &v));
    int64_t *hi = read_i64(i);
    double *hv = read_as_f64(v);
    int64_t n = 0;
    for (int k = 0; k < 24; k++) {
        if (x[k] == 0)
            continue;
        cr_assert_eq(hi[n], k / 6);
        cr_assert_eq(hi[nnz + n], (k / 2) % 3);
        cr_assert_eq(hi[2 * nnz + n], k % 2);
        cr_assert_eq(hv[n], x[k]);
        n++;
    }
    free(hi);
    free(hv);
    clt_tensor_free(i);
    clt_tensor_free(v);
    clt_sparse_free(s);
    /* sparse_dim 1: rows with any nonzero, whole rows as values */
    CHECK(clt_tensor_to_sparse(t, 1, &s));
    cr_assert_eq(clt_sparse_dense_dim(s), 2);
    CHECK(clt_sparse_to_dense(s, &d));
    assert_tensor_close(d, x, 24, 0, 0, "round trip");
    clt_tensor_free(d);
    clt_sparse_free(s);
    clt_sparse *bad = (clt_sparse *)1;
    assert_error(clt_tensor_to_sparse(t, 4, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "less than or equal to self.dim()");
    cr_assert_null(bad);
    clt_tensor_free(t);
}

Test(sparse, mm_and_addmm_match_host_products)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t n = 5, m = 6, p = 3;
    coo c = coo_random(2, 0, (int64_t[]){n, m}, 19, 5);
    double *dense = coo_dense(&c);
    double *b = spread_doubles((size_t)(m * p), 9), *in = spread_doubles((size_t)p, 4);
    clt_sparse *s = coo_upload(dev, &c, 1);
    clt_tensor *bt = up_f64(dev, 2, (int64_t[]){m, p}, b), *it = up_f64(dev, 1, &p, in);
    clt_tensor *y = NULL, *z = NULL;
    CHECK(clt_sparse_mm(s, bt, &y));
    assert_shape(y, 2, (int64_t[]){n, p});
    double want[15], want2[15];
    for (int64_t r = 0; r < n; r++)
        for (int64_t q = 0; q < p; q++) {
            double acc = 0;
            for (int64_t k = 0; k < m; k++)
                acc += dense[r * m + k] * b[k * p + q];
            want[r * p + q] = acc;
            want2[r * p + q] = 0.5 * in[q] - 2.0 * acc;
        }
    assert_tensor_close(y, want, 15, 1e-12, 1e-12, "sparse_mm");
    CHECK(clt_sparse_addmm(it, s, bt, 0.5, -2.0, &z));
    assert_tensor_close(z, want2, 15, 1e-12, 1e-12, "sparse_addmm");
    clt_tensor_free(z);
    /* errors: shapes, dtypes, a hybrid operand */
    clt_tensor *wrong = up_f64(dev, 2, (int64_t[]){4, 2}, b), *f32 = NULL;
    CHECK(clt_to_dtype(bt, CLT_FLOAT32, &f32));
    assert_error(clt_sparse_mm(s, wrong, &z), CLT_ERR_SHAPE_MISMATCH,
                 "Expected dim 0 size 6, got 4");
    cr_assert_null(z);
    names_only("clt_sparse_mm");
    assert_error(clt_sparse_mm(s, f32, &z), CLT_ERR_DTYPE_MISMATCH,
                 "expected scalar type float64 but found float32");
    assert_error(clt_sparse_mm(NULL, bt, &z), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor_free(wrong);
    clt_tensor_free(f32);
    clt_tensor_free(y);
    clt_tensor_free(bt);
    clt_tensor_free(it);
    clt_sparse_free(s);
    free(dense);
    free(b);
    free(in);
    coo_free(&c);
}

Test(sparse, sums_adds_scalar_products_transposes)
{
    clt_device *dev = get_device("cpu:0");
    int64_t shape[3] = {3, 4, 2};
    coo c = coo_random(2, 1, shape, 15, 21);
    double *d = coo_dense(&c);
    clt_sparse *s = coo_upload(dev, &c, 1);
    clt_tensor *t = NULL;
    CHECK(clt_sparse_sum(s, &t));
    double all = 0;
    for (int k = 0; k < 24; k++)
        all += d[k];
    assert_tensor_close(t, &all, 1, 1e-12, 1e-12, "sum");
    clt_tensor_free(t);
    /* over both sparse dims: dense [2] */
    clt_sparse *r = NULL;
    CHECK(clt_sparse_sum_dims(s, (int[]){1, 0}, 2, &t, &r));
    cr_assert_null(r);
    double w2[2] = {0};
    for (int k = 0; k < 24; k++)
        w2[k % 2] += d[k];
    assert_tensor_close(t, w2, 2, 1e-12, 1e-12, "sum over the sparse dims");
    clt_tensor_free(t);
    /* over dim 0 and the dense dim: sparse [4], coalesced */
    CHECK(clt_sparse_sum_dims(s, (int[]){0, -1}, 2, &t, &r));
    cr_assert_null(t);
    cr_assert(clt_sparse_is_coalesced(r));
    cr_assert_eq(clt_sparse_ndim(r), 1);
    double w4[4] = {0};
    for (int k = 0; k < 24; k++)
        w4[(k / 2) % 4] += d[k];
    clt_tensor *rd = NULL;
    CHECK(clt_sparse_to_dense(r, &rd));
    assert_tensor_close(rd, w4, 4, 1e-12, 1e-12, "sum over dims 0 and 2");
    clt_tensor_free(rd);
    clt_sparse_free(r);
    assert_error(clt_sparse_sum_dims(s, (int[]){0, 0}, 2, &t, &r), CLT_ERR_INVALID_ARGUMENT,
                 "multiple times");
    /* s + s * -0.5 = s * 0.5; dense + s */
    clt_sparse *h = NULL, *sum = NULL, *tr = NULL;
    CHECK(clt_sparse_mul_scalar(s, -0.5, &h));
    CHECK(clt_sparse_add(s, h, &sum));
    cr_assert(clt_sparse_is_coalesced(sum));
    CHECK(clt_sparse_to_dense(sum, &rd));
    double half[24], twice[24];
    for (int k = 0; k < 24; k++) {
        half[k] = 0.5 * d[k];
        twice[k] = 2 * d[k];
    }
    assert_tensor_close(rd, half, 24, 1e-12, 1e-12, "s + (-0.5 s)");
    clt_tensor *dd = up_f64(dev, 3, shape, d), *ds = NULL;
    CHECK(clt_sparse_add_dense(dd, s, &ds));
    assert_tensor_close(ds, twice, 24, 1e-12, 1e-12, "dense + s");
    clt_tensor_free(ds);
    clt_tensor_free(rd);
    /* transpose of the sparse dims */
    CHECK(clt_sparse_transpose(s, 0, 1, &tr));
    cr_assert_eq(clt_sparse_shape(tr)[0], 4);
    cr_assert_eq(clt_sparse_shape(tr)[1], 3);
    CHECK(clt_sparse_to_dense(tr, &rd));
    double tw[24];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++)
            for (int e = 0; e < 2; e++)
                tw[(b * 3 + a) * 2 + e] = d[(a * 4 + b) * 2 + e];
    assert_tensor_close(rd, tw, 24, 0, 0, "transpose");
    clt_tensor_free(rd);
    assert_error(clt_sparse_transpose(s, 0, 2, &r), CLT_ERR_INVALID_ARGUMENT, "dense");
    cr_assert_null(r);
    /* mismatched shapes */
    clt_sparse *o = NULL;
    CHECK(clt_tensor_to_sparse(dd, 1, &o));
    assert_error(clt_sparse_add(s, o, &r), CLT_ERR_SHAPE_MISMATCH, "same density");
    assert_error(clt_sparse_add(s, tr, &r), CLT_ERR_SHAPE_MISMATCH, "[3, 4, 2] != [4, 3, 2]");
    clt_sparse_free(o);
    clt_tensor_free(dd);
    clt_sparse_free(tr);
    clt_sparse_free(h);
    clt_sparse_free(sum);
    clt_sparse_free(s);
    free(d);
    coo_free(&c);
}

/* ---- gradients -------------------------------------------------------------- */

typedef struct mm_ctx {
    const int64_t *idx;
    int64_t nnz, n, m;
} mm_ctx;

/* in[0]: values [nnz], in[1]: dense [m, p] */
static clt_status gc_mm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const mm_ctx *c = ctx;
    clt_tensor *i = NULL;
    clt_sparse *s = NULL;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 2,
                                         (int64_t[]){2, c->nnz}, c->idx, &i);
    if (st == CLT_OK)
        st = clt_sparse_coo_tensor(i, in[0], (int64_t[]){c->n, c->m}, 2, 0, &s);
    if (st == CLT_OK)
        st = clt_sparse_mm(s, in[1], out);
    clt_sparse_free(s);
    clt_tensor_free(i);
    return st;
}

/* in[0]: values [nnz, 2]; to_dense of the coalesced tensor times itself,
 * plus its sum (to_dense, coalesce and sum all on the path). */
static clt_status gc_dense(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const mm_ctx *c = ctx;
    clt_tensor *i = NULL, *d = NULL, *sq = NULL, *total = NULL;
    clt_sparse *s = NULL, *cs = NULL;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 2,
                                         (int64_t[]){2, c->nnz}, c->idx, &i);
    if (st == CLT_OK)
        st = clt_sparse_coo_tensor(i, in[0], (int64_t[]){c->n, c->m, 2}, 3, 1, &s);
    if (st == CLT_OK)
        st = clt_sparse_coalesce(s, &cs);
    if (st == CLT_OK)
        st = clt_sparse_to_dense(cs, &d);
    if (st == CLT_OK)
        st = clt_mul(d, d, &sq);
    if (st == CLT_OK)
        st = clt_sparse_sum(s, &total);
    if (st == CLT_OK)
        st = clt_add(sq, total, out);
    clt_tensor_free(sq);
    clt_tensor_free(total);
    clt_tensor_free(d);
    clt_sparse_free(cs);
    clt_sparse_free(s);
    clt_tensor_free(i);
    return st;
}

Test(sparse, gradcheck_mm_wrt_values_and_dense)
{
    clt_device *dev = get_device("cpu:0");
    static const int64_t idx[2 * 7] = {0, 2, 2, 1, 0, 3, 2, /* rows (2, 2 twice) */
                                       1, 0, 0, 3, 4, 2, 4};
    mm_ctx c = {idx, 7, 4, 5};
    double *v = spread_doubles(7, 1), *b = spread_doubles(15, 2);
    gc_in ins[2] = {{1, {7}, v, 1}, {2, {5, 3}, b, 1}};
    gradcheck(dev, gc_mm, &c, 2, ins);
    free(v);
    free(b);
}

Test(sparse, gradcheck_coalesce_to_dense_sum)
{
    clt_device *dev = get_device("cpu:0");
    static const int64_t idx[2 * 6] = {1, 0, 1, 2, 0, 1, 2, 1, 2, 0, 1, 0};
    mm_ctx c = {idx, 6, 3, 3};
    double *v = spread_doubles(12, 8);
    gc_in ins[1] = {{2, {6, 2}, v, 1}};
    gradcheck(dev, gc_dense, &c, 1, ins);
    free(v);
}

Test(sparse, gradient_reaches_the_dense_tensor_of_to_sparse)
{
    clt_device *dev = get_device("cpu:0");
    double x[6] = {0, 2, 0, -1, 3, 0};
    clt_tensor *t = up_f64(dev, 2, (int64_t[]){2, 3}, x), *b = NULL, *y = NULL, *l = NULL,
               *g = NULL;
    CHECK(clt_set_requires_grad(t, 1));
    double bv[3] = {1, 2, 3};
    b = up_f64(dev, 2, (int64_t[]){3, 1}, bv);
    clt_sparse *s = NULL;
    CHECK(clt_tensor_to_sparse(t, 2, &s));
    CHECK(clt_sparse_mm(s, b, &y));
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(t, &g));
    /* d sum(S b) / d S[r, k] = b[k] where S has an entry, 0 elsewhere */
    double want[6] = {0, 2, 0, 1, 2, 0};
    assert_tensor_close(g, want, 6, 0, 0, "grad of the dense tensor");
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(y);
    clt_tensor_free(b);
    clt_tensor_free(t);
    clt_sparse_free(s);
}

/* ---- two devices ------------------------------------------------------------- */

Test(sparse, two_devices)
{
    clt_device *dev = get_device("cpu:0");
    clt_device *dev2 = second_device(dev);
    coo c = coo_random(2, 0, (int64_t[]){3, 4}, 6, 2);
    clt_sparse *s = coo_upload(dev, &c, 1), *s2 = NULL, *r = NULL;
    double *b = spread_doubles(8, 3);
    clt_tensor *b1 = up_f64(dev, 2, (int64_t[]){4, 2}, b), *b2 = NULL, *y = NULL, *y2 = NULL;
    CHECK(clt_to(b1, dev2, &b2));
    assert_error(clt_sparse_mm(s, b2, &y), CLT_ERR_DEVICE_MISMATCH, "same device");
    cr_assert_null(y);
    clt_tensor *i = up_i64(dev, 2, (int64_t[]){2, 6}, c.idx), *v2 = NULL;
    clt_tensor *v = up_f64(dev, 1, (int64_t[]){6}, c.val);
    CHECK(clt_to(v, dev2, &v2));
    assert_error(clt_sparse_coo_tensor(i, v2, (int64_t[]){3, 4}, 2, 1, &r),
                 CLT_ERR_DEVICE_MISMATCH, NULL);
    cr_assert_null(r);
    CHECK(clt_sparse_to(s, dev2, &s2));
    cr_assert_eq(clt_sparse_device(s2), dev2);
    assert_error(clt_sparse_add(s, s2, &r), CLT_ERR_DEVICE_MISMATCH, NULL);
    CHECK(clt_sparse_mm(s, b1, &y));
    CHECK(clt_sparse_mm(s2, b2, &y2));
    double *h1 = read_as_f64(y);
    assert_tensor_close(y2, h1, 6, 0, 0, "the product on the second device");
    free(h1);
    clt_tensor *tensors[] = {b1, b2, y, y2, i, v, v2};
    for (size_t k = 0; k < sizeof tensors / sizeof *tensors; k++)
        clt_tensor_free(tensors[k]);
    clt_sparse_free(s);
    clt_sparse_free(s2);
    free(b);
    coo_free(&c);
}

/* ---- second order ---------------------------------------------------------------- */

/* (S b)^2 with S's values inputs[0] and b inputs[1]: create_graph through
 * sparse_mm's index_select, mul and index_add. */
static clt_status gg_mm(void *user, clt_tensor *const *in, size_t n, clt_tensor **outs, size_t *m)
{
    const mm_ctx *c = user;
    (void)n;
    clt_tensor *i = NULL, *y = NULL;
    clt_sparse *s = NULL;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 2,
                                         (int64_t[]){2, c->nnz}, c->idx, &i);
    if (st == CLT_OK)
        st = clt_sparse_coo_tensor(i, in[0], (int64_t[]){c->n, c->m}, 2, 0, &s);
    if (st == CLT_OK)
        st = clt_sparse_mm(s, in[1], &y);
    if (st == CLT_OK)
        st = clt_mul(y, y, &outs[0]);
    *m = 1;
    clt_tensor_free(y);
    clt_sparse_free(s);
    clt_tensor_free(i);
    return st;
}

Test(sparse, gradgradcheck_mm)
{
    clt_device *dev = get_device("cpu:0");
    static const int64_t idx[2 * 5] = {0, 2, 2, 1, 0, 1, 0, 0, 3, 1};
    mm_ctx c = {idx, 5, 3, 4};
    double *v = spread_doubles(5, 12), *b = spread_doubles(8, 13);
    clt_tensor *in[2] = {up_f64(dev, 1, (int64_t[]){5}, v), up_f64(dev, 2, (int64_t[]){4, 2}, b)};
    CHECK(clt_set_requires_grad(in[0], 1));
    CHECK(clt_set_requires_grad(in[1], 1));
    CHECK(clt_gradcheck(gg_mm, &c, in, 2, NULL));
    CHECK(clt_gradgradcheck(gg_mm, &c, in, 2, NULL, 0, NULL));
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
    free(v);
    free(b);
}

/* ---- softmax -------------------------------------------------------------------- */

Test(sparse, softmax_over_sparse_and_dense_dims)
{
    clt_device *dev = get_device("cpu:0");
    /* [3, 4] sparse with a dense dim of 2; entries repeat (summed first) */
    static const int64_t idx[2 * 6] = {0, 2, 0, 1, 2, 0, 1, 3, 3, 0, 3, 1};
    double *v = spread_doubles(12, 17);
    for (int k = 0; k < 12; k++)
        v[k] *= 3;
    clt_tensor *it = up_i64(dev, 2, (int64_t[]){2, 6}, idx);
    clt_tensor *vt = up_f64(dev, 2, (int64_t[]){6, 2}, v);
    clt_sparse *s = NULL, *r = NULL;
    CHECK(clt_sparse_coo_tensor(it, vt, (int64_t[]){3, 4, 2}, 3, 1, &s));
    /* the host: the dense sums and which places are specified */
    double d[24] = {0};
    int spec[12] = {0};
    for (int i = 0; i < 6; i++) {
        spec[idx[i] * 4 + idx[6 + i]] = 1;
        for (int e = 0; e < 2; e++)
            d[(idx[i] * 4 + idx[6 + i]) * 2 + e] += v[i * 2 + e];
    }
    for (int dim = 0; dim < 3; dim++)
        for (int lg = 0; lg < 2; lg++) {
            CHECK((lg ? clt_sparse_log_softmax : clt_sparse_softmax)(s, dim, &r));
            cr_assert(clt_sparse_is_coalesced(r));
            double want[24] = {0};
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 4; b++)
                    for (int e = 0; e < 2; e++) {
                        if (!spec[a * 4 + b])
                            continue;
                        double x = d[(a * 4 + b) * 2 + e], sum = 0;
                        for (int j = 0; j < (dim == 0 ? 3 : dim == 1 ? 4 : 2); j++) {
                            int aa = dim == 0 ? j : a, bb = dim == 1 ? j : b, ee = dim == 2 ? j : e;
                            if (spec[aa * 4 + bb])
                                sum += exp(d[(aa * 4 + bb) * 2 + ee]);
                        }
                        want[(a * 4 + b) * 2 + e] = lg ? x - log(sum) : exp(x) / sum;
                    }
            clt_tensor *rd = NULL;
            CHECK(clt_sparse_to_dense(r, &rd));
            char what[64];
            snprintf(what, sizeof what, "%s over dim %d", lg ? "log_softmax" : "softmax", dim);
            assert_tensor_close(rd, want, 24, 1e-12, 1e-12, what);
            clt_tensor_free(rd);
            clt_sparse_free(r);
        }
    assert_error(clt_sparse_softmax(s, -1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "dim must be non-negative and less than input dimensions");
    cr_assert_null(r);
    clt_sparse_free(s);
    clt_tensor_free(it);
    clt_tensor_free(vt);
    free(v);
}

/* softmax over dim 1 of a [3, 4] sparse tensor of values in[0], to dense */
static clt_status gc_softmax(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const mm_ctx *c = ctx;
    clt_tensor *i = NULL;
    clt_sparse *s = NULL, *r = NULL;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 2,
                                         (int64_t[]){2, c->nnz}, c->idx, &i);
    if (st == CLT_OK)
        st = clt_sparse_coo_tensor(i, in[0], (int64_t[]){c->n, c->m}, 2, 0, &s);
    if (st == CLT_OK)
        st = clt_sparse_log_softmax(s, 1, &r);
    if (st == CLT_OK)
        st = clt_sparse_to_dense(r, out);
    clt_sparse_free(r);
    clt_sparse_free(s);
    clt_tensor_free(i);
    return st;
}

Test(sparse, gradcheck_log_softmax)
{
    clt_device *dev = get_device("cpu:0");
    static const int64_t idx[2 * 6] = {0, 2, 0, 1, 2, 0, 1, 3, 3, 0, 3, 1};
    mm_ctx c = {idx, 6, 3, 4};
    double *v = spread_doubles(6, 23);
    gc_in ins[1] = {{1, {6}, v, 1}};
    gradcheck(dev, gc_softmax, &c, 1, ins);
    free(v);
}
