/* test_sparse_csr.c: compressed sparse tensors (CSR and CSC in
 * cltensor/sparse.h), sampled_addmm and sparse_mask against references
 * computed here on the host (dense matrices filled from the compressed
 * arrays, products by loops), their errors, float64 gradchecks and two
 * devices. */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"
#include "helpers.h"
#include "internal.h"

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

static void assert_i64(const clt_tensor *t, const int64_t *want, int64_t n, const char *what)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_INT64, "%s: dtype", what);
    cr_assert_eq(clt_tensor_numel(t), n, "%s: %lld elements", what,
                 (long long)clt_tensor_numel(t));
    int64_t *h = read_i64(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(h[i], want[i], "%s[%lld]: %lld, want %lld", what, (long long)i,
                     (long long)h[i], (long long)want[i]);
    free(h);
}

/* A 4 x 5 matrix: rows 0 (cols 1, 3), 1 (none), 2 (0, 2, 4), 3 (3). */
static const int64_t A_CROW[5] = {0, 2, 2, 5, 6};
static const int64_t A_COL[6] = {1, 3, 0, 2, 4, 3};
static const double A_VAL[6] = {1.5, -2, 0.25, 3, -1, 4};

/* The dense [n, m] matrix of compressed arrays (csc: by columns). */
static void host_dense(int csc, int64_t n, int64_t m, const int64_t *cmp, const int64_t *plain,
                       const double *val, double *d)
{
    memset(d, 0, (size_t)(n * m) * sizeof *d);
    int64_t major = csc ? m : n;
    for (int64_t i = 0; i < major; i++)
        for (int64_t j = cmp[i]; j < cmp[i + 1]; j++) {
            int64_t r = csc ? plain[j] : i, c = csc ? i : plain[j];
            d[r * m + c] += val[j];
        }
}

static clt_sparse *a_csr(clt_device *dev, int check)
{
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){5}, A_CROW), *p = up_i64(dev, 1, (int64_t[]){6}, A_COL),
               *v = up_f64(dev, 1, (int64_t[]){6}, A_VAL);
    clt_sparse *s = NULL;
    CHECK(clt_sparse_csr_tensor(c, p, v, (int64_t[]){4, 5}, check, &s));
    clt_tensor_free(c); /* the handle keeps its own references */
    clt_tensor_free(p);
    clt_tensor_free(v);
    return s;
}

static void assert_dense_of(const clt_sparse *s, const double *want, int64_t n, const char *what)
{
    clt_tensor *d = NULL;
    CHECK(clt_sparse_to_dense(s, &d));
    assert_tensor_close(d, want, n, 1e-12, 1e-12, what);
    clt_tensor_free(d);
}

Test(sparse_csr, construct_accessors_dense)
{
    clt_device *dev = get_device("cpu:0");
    clt_sparse *s = a_csr(dev, 1);
    cr_assert_eq(clt_sparse_layout(s), CLT_SPARSE_CSR);
    cr_assert_eq(clt_sparse_nnz(s), 6);
    cr_assert_eq(clt_sparse_ndim(s), 2);
    cr_assert_eq(clt_sparse_sparse_dim(s), 2);
    cr_assert_eq(clt_sparse_dense_dim(s), 0);
    cr_assert_eq(clt_sparse_shape(s)[0], 4);
    cr_assert_eq(clt_sparse_shape(s)[1], 5);
    cr_assert_eq(clt_sparse_dtype(s), CLT_FLOAT64);
    cr_assert_eq(clt_sparse_device(s), dev);
    cr_assert_eq(clt_sparse_is_coalesced(s), 0);
    cr_assert_eq(clt_sparse_layout(NULL), CLT_SPARSE_COO);
    clt_tensor *cr = NULL, *co = NULL, *v = NULL, *bad = (clt_tensor *)1;
    CHECK(clt_sparse_crow_indices(s, &cr));
    CHECK(clt_sparse_col_indices(s, &co));
    CHECK(clt_sparse_values(s, &v));
    assert_i64(cr, A_CROW, 5, "crow_indices");
    assert_i64(co, A_COL, 6, "col_indices");
    assert_tensor_close(v, A_VAL, 6, 0, 0, "values");
    assert_error(clt_sparse_ccol_indices(s, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "\"ccol_indices\" expected sparse column compressed tensor layout but got "
                 "SparseCsr");
    cr_assert_null(bad);
    names_only("clt_sparse_ccol_indices");
    assert_error(clt_sparse_row_indices(s, &bad), CLT_ERR_INVALID_ARGUMENT, "row_indices");
    assert_error(clt_sparse_indices(s, &bad), CLT_ERR_INVALID_ARGUMENT, "layout SparseCsr");
    cr_assert_null(bad);
    double want[20];
    host_dense(0, 4, 5, A_CROW, A_COL, A_VAL, want);
    assert_dense_of(s, want, 20, "csr to_dense");
    /* COO-only ops refuse */
    clt_sparse *r = (clt_sparse *)1;
    assert_error(clt_sparse_coalesce(s, &r), CLT_ERR_INVALID_ARGUMENT, "SparseCsr");
    cr_assert_null(r);
    assert_error(clt_sparse_softmax(s, 0, &r), CLT_ERR_INVALID_ARGUMENT, "SparseCsr");
    cr_assert_null(r);
    clt_tensor_free(cr);
    clt_tensor_free(co);
    clt_tensor_free(v);
    clt_sparse_free(s);
}

Test(sparse_csr, csc_construct_and_dense)
{
    clt_device *dev = get_device("cpu:0");
    /* 3 x 4 by columns: col 0 (rows 0, 2), col 1 (none), col 2 (1), col 3 (0, 1, 2) */
    int64_t ccol[5] = {0, 2, 2, 3, 6}, row[6] = {0, 2, 1, 0, 1, 2};
    double val[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){5}, ccol), *p = up_i64(dev, 1, (int64_t[]){6}, row),
               *v = up_f64(dev, 1, (int64_t[]){6}, val), *cc = NULL, *rr = NULL;
    clt_sparse *s = NULL;
    CHECK(clt_sparse_csc_tensor(c, p, v, (int64_t[]){3, 4}, 1, &s));
    cr_assert_eq(clt_sparse_layout(s), CLT_SPARSE_CSC);
    double want[12];
    host_dense(1, 3, 4, ccol, row, val, want);
    assert_dense_of(s, want, 12, "csc to_dense");
    CHECK(clt_sparse_ccol_indices(s, &cc));
    CHECK(clt_sparse_row_indices(s, &rr));
    assert_i64(cc, ccol, 5, "ccol_indices");
    assert_i64(rr, row, 6, "row_indices");
    clt_tensor *bad = (clt_tensor *)1;
    assert_error(clt_sparse_crow_indices(s, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "\"crow_indices\" expected sparse row compressed tensor layout but got SparseCsc");
    cr_assert_null(bad);
    /* size inferred: ncols from ccol_indices, nrows from the largest row index */
    clt_sparse *s2 = NULL;
    CHECK(clt_sparse_csc_tensor(c, p, v, NULL, 0, &s2));
    cr_assert_eq(clt_sparse_shape(s2)[0], 3);
    cr_assert_eq(clt_sparse_shape(s2)[1], 4);
    clt_sparse_free(s2);
    /* int32 indices: copied to int64 */
    clt_tensor *c32 = NULL, *p32 = NULL;
    CHECK(clt_to_dtype(c, CLT_INT32, &c32));
    CHECK(clt_to_dtype(p, CLT_INT32, &p32));
    CHECK(clt_sparse_csc_tensor(c32, p32, v, (int64_t[]){3, 4}, 1, &s2));
    assert_dense_of(s2, want, 12, "csc from int32 indices");
    clt_sparse_free(s2);
    clt_tensor *ts[] = {c, p, v, cc, rr, c32, p32};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(s);
}

Test(sparse_csr, construct_errors)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *crow = up_i64(dev, 1, (int64_t[]){3}, (int64_t[]){0, 1, 2});
    clt_tensor *col = up_i64(dev, 1, (int64_t[]){2}, (int64_t[]){0, 1});
    clt_tensor *v = up_f64(dev, 1, (int64_t[]){2}, (double[]){1, 2});
    clt_tensor *v3 = up_f64(dev, 1, (int64_t[]){3}, (double[]){1, 2, 3});
    clt_tensor *crow2d = up_i64(dev, 2, (int64_t[]){1, 3}, (int64_t[]){0, 1, 2});
    clt_tensor *col32 = NULL;
    CHECK(clt_to_dtype(col, CLT_INT32, &col32));
    clt_sparse *s = (clt_sparse *)1;
    int64_t sz[2] = {2, 3};
    assert_error(clt_sparse_csr_tensor(crow2d, col, v, sz, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "crow_indices and col_indices dimensionalities must be equal but got 2 and 1, "
                 "respectively");
    cr_assert_null(s);
    names_only("clt_sparse_csr_tensor");
    assert_error(clt_sparse_csr_tensor(crow, col32, v, sz, 1, &s), CLT_ERR_DTYPE_MISMATCH,
                 "crow_indices and col_indices must have the same dtype, but got int64 and "
                 "int32, respectively");
    assert_error(clt_sparse_csr_tensor(v, v, v, sz, 1, &s), CLT_ERR_DTYPE_MISMATCH,
                 "dtype must be Int or Long, but got float64");
    assert_error(clt_sparse_csr_tensor(crow, col, v3, sz, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "col_indices.shape[-1] must be equal to nnz (=3) as defined by values.shape[0], "
                 "but got 2");
    assert_error(clt_sparse_csr_tensor(crow, col, v, (int64_t[]){3, 3}, 1, &s),
                 CLT_ERR_SHAPE_MISMATCH,
                 "crow_indices.shape[-1] must be equal to the number of rows + 1 (=4), but got 3");
    assert_error(clt_sparse_csc_tensor(crow, col, v, (int64_t[]){3, 3}, 1, &s),
                 CLT_ERR_SHAPE_MISMATCH,
                 "ccol_indices.shape[-1] must be equal to the number of columns + 1 (=4), but "
                 "got 3");
    assert_error(clt_sparse_csr_tensor(crow, col, crow2d, sz, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "hybrid");
    assert_error(clt_sparse_csr_tensor(NULL, col, v, sz, 1, &s), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(s);
    /* invariants, in torch's words */
    struct {
        int64_t crow[3], col[2];
        clt_status st;
        const char *msg;
    } bad[] = {
        {{1, 1, 2}, {0, 1}, CLT_ERR_INVALID_ARGUMENT, "`crow_indices[..., 0] == 0` is not satisfied."},
        {{0, 1, 3}, {0, 1}, CLT_ERR_INVALID_ARGUMENT, "`crow_indices[..., -1] == nnz` is not satisfied."},
        {{0, 3, 2}, {0, 1}, CLT_ERR_INVALID_ARGUMENT,
         "`0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols` is not satisfied."},
        {{0, 1, 2}, {0, 5}, CLT_ERR_INDEX_OUT_OF_RANGE, "`0 <= col_indices < ncols` is not satisfied."},
        {{0, 1, 2}, {0, -1}, CLT_ERR_INDEX_OUT_OF_RANGE, "`0 <= col_indices < ncols`"},
        {{0, 2, 2}, {1, 0}, CLT_ERR_INVALID_ARGUMENT, "are sorted and distinct along the last"},
        {{0, 2, 2}, {1, 1}, CLT_ERR_INVALID_ARGUMENT, "for all i = 1, ..., nrows are sorted"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        clt_tensor *c = up_i64(dev, 1, (int64_t[]){3}, bad[k].crow),
                   *p = up_i64(dev, 1, (int64_t[]){2}, bad[k].col);
        s = (clt_sparse *)1;
        assert_error(clt_sparse_csr_tensor(c, p, v, sz, 1, &s), bad[k].st, bad[k].msg);
        cr_assert_null(s);
        /* unchecked: taken as given */
        CHECK(clt_sparse_csr_tensor(c, p, v, sz, 0, &s));
        clt_sparse_free(s);
        clt_tensor_free(c);
        clt_tensor_free(p);
    }
    /* the CSC wording */
    clt_tensor *r5 = up_i64(dev, 1, (int64_t[]){2}, (int64_t[]){0, 5});
    assert_error(clt_sparse_csc_tensor(crow, r5, v, (int64_t[]){3, 2}, 1, &s),
                 CLT_ERR_INDEX_OUT_OF_RANGE, "`0 <= row_indices < nrows` is not satisfied.");
    /* empty */
    clt_tensor *z3 = up_i64(dev, 1, (int64_t[]){3}, (int64_t[]){0, 0, 0}), *e = NULL, *ev = NULL;
    CHECK(clt_empty(dev, CLT_INT64, 1, (int64_t[]){0}, &e));
    CHECK(clt_empty(dev, CLT_FLOAT64, 1, (int64_t[]){0}, &ev));
    CHECK(clt_sparse_csr_tensor(z3, e, ev, NULL, 0, &s));
    cr_assert_eq(clt_sparse_shape(s)[0], 2);
    cr_assert_eq(clt_sparse_shape(s)[1], 0);
    clt_sparse_free(s);
    CHECK(clt_sparse_csr_tensor(z3, e, ev, (int64_t[]){2, 3}, 1, &s));
    double zeros[6] = {0};
    assert_dense_of(s, zeros, 6, "empty csr");
    clt_sparse_free(s);
    clt_tensor *ts[] = {crow, col, v, v3, crow2d, col32, r5, z3, e, ev};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
}

Test(sparse_csr, conversions)
{
    clt_device *dev = get_device("cpu:0");
    double x[12] = {0, 2, 0, 0, -1, 0, 0, 3, 4, 0, 0, 5};
    clt_tensor *t = up_f64(dev, 2, (int64_t[]){3, 4}, x), *a = NULL, *b = NULL, *c = NULL;
    clt_sparse *csr = NULL, *csc = NULL, *coo = NULL, *back = NULL;
    CHECK(clt_tensor_to_sparse_csr(t, &csr));
    CHECK(clt_sparse_crow_indices(csr, &a));
    CHECK(clt_sparse_col_indices(csr, &b));
    CHECK(clt_sparse_values(csr, &c));
    assert_i64(a, (int64_t[]){0, 1, 3, 5}, 4, "crow of dense");
    assert_i64(b, (int64_t[]){1, 0, 3, 0, 3}, 5, "col of dense");
    /* row-major order of the nonzeros */
    assert_tensor_close(c, (double[]){2, -1, 3, 4, 5}, 5, 0, 0, "csr values of dense");
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    CHECK(clt_tensor_to_sparse_csc(t, &csc));
    CHECK(clt_sparse_ccol_indices(csc, &a));
    CHECK(clt_sparse_row_indices(csc, &b));
    CHECK(clt_sparse_values(csc, &c));
    assert_i64(a, (int64_t[]){0, 2, 3, 3, 5}, 5, "ccol of dense");
    assert_i64(b, (int64_t[]){1, 2, 0, 1, 2}, 5, "row of dense");
    assert_tensor_close(c, (double[]){-1, 4, 2, 3, 5}, 5, 0, 0, "csc values of dense");
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    assert_dense_of(csr, x, 12, "csr round trip");
    assert_dense_of(csc, x, 12, "csc round trip");
    /* CSR -> CSC -> CSR, COO (with duplicates) -> CSR */
    CHECK(clt_sparse_to_sparse_csc(csr, &back));
    cr_assert_eq(clt_sparse_layout(back), CLT_SPARSE_CSC);
    CHECK(clt_sparse_ccol_indices(back, &a));
    assert_i64(a, (int64_t[]){0, 2, 3, 3, 5}, 5, "ccol of csr");
    clt_tensor_free(a);
    assert_dense_of(back, x, 12, "csr to csc");
    clt_sparse_free(back);
    CHECK(clt_sparse_to_sparse_csr(csc, &back));
    CHECK(clt_sparse_col_indices(back, &b));
    assert_i64(b, (int64_t[]){1, 0, 3, 0, 3}, 5, "col of csc to csr");
    clt_tensor_free(b);
    clt_sparse_free(back);
    CHECK(clt_sparse_to_sparse_coo(csr, &coo));
    cr_assert_eq(clt_sparse_layout(coo), CLT_SPARSE_COO);
    cr_assert(clt_sparse_is_coalesced(coo));
    CHECK(clt_sparse_indices(coo, &a));
    assert_i64(a, (int64_t[]){0, 1, 1, 2, 2, 1, 0, 3, 0, 3}, 10, "coo of csr");
    clt_tensor_free(a);
    clt_sparse_free(coo);
    CHECK(clt_sparse_to_sparse_coo(csc, &coo));
    cr_assert_eq(clt_sparse_is_coalesced(coo), 0);
    assert_dense_of(coo, x, 12, "coo of csc");
    clt_sparse_free(coo);
    clt_tensor *i = up_i64(dev, 2, (int64_t[]){2, 4}, (int64_t[]){2, 0, 2, 0, 1, 3, 1, 3});
    clt_tensor *v = up_f64(dev, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4});
    CHECK(clt_sparse_coo_tensor(i, v, (int64_t[]){3, 4}, 2, 1, &coo));
    CHECK(clt_sparse_to_sparse_csr(coo, &back));
    CHECK(clt_sparse_crow_indices(back, &a));
    CHECK(clt_sparse_values(back, &c));
    assert_i64(a, (int64_t[]){0, 1, 1, 2}, 4, "crow of duplicated coo");
    assert_tensor_close(c, (double[]){6, 4}, 2, 0, 0, "duplicates summed");
    clt_tensor_free(a);
    clt_tensor_free(c);
    clt_sparse_free(back);
    /* 1-D refused (3-D is a batch: test batched_conversions) */
    clt_tensor *t3 = up_f64(dev, 1, (int64_t[]){12}, x);
    back = (clt_sparse *)1;
    assert_error(clt_tensor_to_sparse_csr(t3, &back), CLT_ERR_SHAPE_MISMATCH,
                 "at least 2 dimensions");
    cr_assert_null(back);
    clt_tensor *ts[] = {t, i, v, t3};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(coo);
    clt_sparse_free(csr);
    clt_sparse_free(csc);
}

Test(sparse_csr, products_sums_adds_transposes)
{
    clt_device *dev = get_device("cpu:0");
    clt_sparse *s = a_csr(dev, 1), *t = NULL, *r = NULL, *two = NULL;
    double a[20];
    host_dense(0, 4, 5, A_CROW, A_COL, A_VAL, a);
    double b[15], vec[5], inp[3] = {0.5, -1, 2};
    for (int k = 0; k < 15; k++)
        b[k] = (double)((k * 7) % 11) / 4.0 - 1;
    for (int k = 0; k < 5; k++)
        vec[k] = k - 1.5;
    clt_tensor *bt = up_f64(dev, 2, (int64_t[]){5, 3}, b), *vt = up_f64(dev, 1, (int64_t[]){5}, vec),
               *it = up_f64(dev, 1, (int64_t[]){3}, inp), *y = NULL;
    double want[20], total = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            double acc = 0;
            for (int k = 0; k < 5; k++)
                acc += a[i * 5 + k] * b[k * 3 + j];
            want[i * 3 + j] = acc;
        }
    CHECK(clt_sparse_mm(s, bt, &y));
    assert_tensor_close(y, want, 12, 1e-12, 1e-12, "csr mm");
    clt_tensor_free(y);
    for (int k = 0; k < 12; k++)
        want[k] = 0.5 * inp[k % 3] - 2 * want[k];
    CHECK(clt_sparse_addmm(it, s, bt, 0.5, -2, &y));
    assert_tensor_close(y, want, 12, 1e-12, 1e-12, "csr addmm");
    clt_tensor_free(y);
    for (int i = 0; i < 4; i++) {
        want[i] = 0;
        for (int k = 0; k < 5; k++)
            want[i] += a[i * 5 + k] * vec[k];
    }
    CHECK(clt_sparse_mv(s, vt, &y));
    assert_shape(y, 1, (int64_t[]){4});
    assert_tensor_close(y, want, 4, 1e-12, 1e-12, "csr mv");
    clt_tensor_free(y);
    y = (clt_tensor *)1;
    assert_error(clt_sparse_mv(s, it, &y), CLT_ERR_SHAPE_MISMATCH,
                 "mv: expected self.size(-1) == vec.size(-1)");
    cr_assert_null(y);
    assert_error(clt_sparse_mv(s, bt, &y), CLT_ERR_SHAPE_MISMATCH,
                 "mv: two tensor dim should be 2 and 1");
    for (int k = 0; k < 20; k++)
        total += a[k];
    CHECK(clt_sparse_sum(s, &y));
    assert_tensor_close(y, &total, 1, 1e-12, 1e-12, "csr sum");
    clt_tensor_free(y);
    /* t(): CSC of the transpose on the same tensors */
    CHECK(clt_sparse_transpose(s, 0, 1, &t));
    cr_assert_eq(clt_sparse_layout(t), CLT_SPARSE_CSC);
    cr_assert_eq(clt_sparse_shape(t)[0], 5);
    double at[20];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            at[j * 4 + i] = a[i * 5 + j];
    assert_dense_of(t, at, 20, "csr transposed");
    clt_tensor *cc = NULL;
    CHECK(clt_sparse_ccol_indices(t, &cc));
    assert_i64(cc, A_CROW, 5, "ccol of the transpose");
    clt_tensor_free(cc);
    clt_sparse *tt = NULL;
    CHECK(clt_sparse_transpose(t, 1, 0, &tt));
    cr_assert_eq(clt_sparse_layout(tt), CLT_SPARSE_CSR);
    assert_dense_of(tt, a, 20, "transposed twice");
    clt_sparse_free(tt);
    /* CSC mm */
    double b2[8] = {1, -1, 2, 0.5, 3, 1, -2, 0};
    clt_tensor *b2t = up_f64(dev, 2, (int64_t[]){4, 2}, b2);
    CHECK(clt_sparse_mm(t, b2t, &y));
    double w2[10];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++) {
            w2[i * 2 + j] = 0;
            for (int k = 0; k < 4; k++)
                w2[i * 2 + j] += at[i * 4 + k] * b2[k * 2 + j];
        }
    assert_tensor_close(y, w2, 10, 1e-12, 1e-12, "csc mm");
    clt_tensor_free(y);
    /* scalar product, add of two CSR (one with other entries) */
    CHECK(clt_sparse_mul_scalar(s, -3, &r));
    cr_assert_eq(clt_sparse_layout(r), CLT_SPARSE_CSR);
    double m3[20];
    for (int k = 0; k < 20; k++)
        m3[k] = -3 * a[k];
    assert_dense_of(r, m3, 20, "csr * -3");
    double x2[20] = {0};
    x2[1] = 1;
    x2[7] = 2;
    x2[19] = -4;
    clt_tensor *x2t = up_f64(dev, 2, (int64_t[]){4, 5}, x2);
    CHECK(clt_tensor_to_sparse_csr(x2t, &two));
    clt_sparse *sum = NULL;
    CHECK(clt_sparse_add(s, two, &sum));
    cr_assert_eq(clt_sparse_layout(sum), CLT_SPARSE_CSR);
    for (int k = 0; k < 20; k++)
        x2[k] += a[k];
    assert_dense_of(sum, x2, 20, "csr + csr");
    clt_tensor *sc = NULL;
    CHECK(clt_sparse_crow_indices(sum, &sc));
    assert_i64(sc, (int64_t[]){0, 2, 3, 6, 8}, 5, "crow of the sum");
    clt_tensor_free(sc);
    clt_sparse_free(sum);
    sum = (clt_sparse *)1;
    assert_error(clt_sparse_add(s, t, &sum), CLT_ERR_SHAPE_MISMATCH, NULL);
    cr_assert_null(sum);
    clt_sparse *coo = NULL;
    CHECK(clt_sparse_to_sparse_coo(two, &coo));
    assert_error(clt_sparse_add(s, coo, &sum), CLT_ERR_INVALID_ARGUMENT, "one layout");
    cr_assert_null(sum);
    clt_sparse_free(coo);
    clt_tensor *ts[] = {bt, vt, it, b2t, x2t};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(two);
    clt_sparse_free(r);
    clt_sparse_free(t);
    clt_sparse_free(s);
}

Test(sparse_csr, sampled_addmm_and_errors)
{
    clt_device *dev = get_device("cpu:0");
    clt_sparse *s = a_csr(dev, 1), *r = NULL;
    double m1[12], m2[15];
    for (int k = 0; k < 12; k++)
        m1[k] = (double)((k * 5) % 7) / 3.0 - 1;
    for (int k = 0; k < 15; k++)
        m2[k] = (double)((k * 3) % 8) / 2.0 - 1.5;
    clt_tensor *t1 = up_f64(dev, 2, (int64_t[]){4, 3}, m1), *t2 = up_f64(dev, 2, (int64_t[]){3, 5}, m2),
               *v = NULL;
    CHECK(clt_sparse_sampled_addmm(s, t1, t2, 0.5, 2, &r));
    cr_assert_eq(clt_sparse_layout(r), CLT_SPARSE_CSR);
    double want[6];
    for (int i = 0; i < 4; i++)
        for (int64_t j = A_CROW[i]; j < A_CROW[i + 1]; j++) {
            double acc = 0;
            for (int k = 0; k < 3; k++)
                acc += m1[i * 3 + k] * m2[k * 5 + A_COL[j]];
            want[j] = 0.5 * A_VAL[j] + 2 * acc;
        }
    CHECK(clt_sparse_values(r, &v));
    assert_tensor_close(v, want, 6, 1e-12, 1e-12, "sampled_addmm values");
    clt_tensor_free(v);
    clt_tensor *cr = NULL;
    CHECK(clt_sparse_crow_indices(r, &cr));
    assert_i64(cr, A_CROW, 5, "the pattern kept");
    clt_tensor_free(cr);
    clt_sparse_free(r);
    r = (clt_sparse *)1;
    assert_error(clt_sparse_sampled_addmm(s, t2, t2, 1, 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "sampled_addmm: mat1 and mat2 shapes cannot be multiplied (3x5 and 3x5)");
    cr_assert_null(r);
    names_only("clt_sparse_sampled_addmm");
    clt_tensor *t3 = up_f64(dev, 2, (int64_t[]){3, 4}, m2);
    assert_error(clt_sparse_sampled_addmm(s, t1, t3, 1, 1, &r), CLT_ERR_SHAPE_MISMATCH,
                 "self.shape[-1] must match mat2.shape[-1]");
    clt_tensor *f1 = NULL;
    CHECK(clt_to_dtype(t1, CLT_FLOAT32, &f1));
    assert_error(clt_sparse_sampled_addmm(s, f1, t2, 1, 1, &r), CLT_ERR_DTYPE_MISMATCH,
                 "Expected mat1 and mat2 to have the same dtype");
    clt_sparse *t = NULL;
    CHECK(clt_sparse_transpose(s, 0, 1, &t));
    assert_error(clt_sparse_sampled_addmm(t, t1, t2, 1, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "Expected result to have sparse csr layout, but got SparseCsc");
    cr_assert_null(r);
    clt_sparse_free(t);
    clt_tensor_free(f1);
    clt_tensor_free(t1);
    clt_tensor_free(t2);
    clt_tensor_free(t3);
    clt_sparse_free(s);
}

Test(sparse_csr, sparse_mask)
{
    clt_device *dev = get_device("cpu:0");
    double x[20];
    for (int k = 0; k < 20; k++)
        x[k] = k * 0.5 - 3;
    clt_tensor *t = up_f64(dev, 2, (int64_t[]){4, 5}, x), *v = NULL;
    clt_sparse *s = a_csr(dev, 1), *r = NULL;
    CHECK(clt_tensor_sparse_mask(t, s, &r));
    cr_assert_eq(clt_sparse_layout(r), CLT_SPARSE_CSR);
    double want[6];
    for (int i = 0; i < 4; i++)
        for (int64_t j = A_CROW[i]; j < A_CROW[i + 1]; j++)
            want[j] = x[i * 5 + A_COL[j]];
    CHECK(clt_sparse_values(r, &v));
    assert_tensor_close(v, want, 6, 0, 0, "mask by csr");
    clt_tensor_free(v);
    clt_sparse_free(r);
    /* a COO mask with a dense dimension */
    clt_tensor *i = up_i64(dev, 2, (int64_t[]){1, 2}, (int64_t[]){3, 1});
    clt_tensor *mv = up_f64(dev, 2, (int64_t[]){2, 5}, x);
    clt_sparse *m = NULL, *mc = NULL;
    CHECK(clt_sparse_coo_tensor(i, mv, (int64_t[]){4, 5}, 2, 1, &m));
    r = (clt_sparse *)1;
    assert_error(clt_tensor_sparse_mask(t, m, &r), CLT_ERR_INVALID_ARGUMENT,
                 "sparse_mask: mask is uncoalesced");
    cr_assert_null(r);
    names_only("clt_tensor_sparse_mask");
    CHECK(clt_sparse_coalesce(m, &mc));
    CHECK(clt_tensor_sparse_mask(t, mc, &r));
    CHECK(clt_sparse_values(r, &v));
    double w2[10];
    memcpy(w2, x + 5, 5 * sizeof *w2);
    memcpy(w2 + 5, x + 15, 5 * sizeof *w2);
    assert_tensor_close(v, w2, 10, 0, 0, "mask by coo rows");
    clt_tensor_free(v);
    clt_sparse_free(r);
    clt_tensor *t2 = up_f64(dev, 2, (int64_t[]){4, 4}, x);
    r = (clt_sparse *)1;
    assert_error(clt_tensor_sparse_mask(t2, s, &r), CLT_ERR_SHAPE_MISMATCH,
                 "sparse_mask: operands have incompatible sizes; self has size [4, 4] but mask "
                 "has size [4, 5]");
    cr_assert_null(r);
    clt_sparse *csc = NULL;
    CHECK(clt_sparse_transpose(s, 0, 1, &csc));
    clt_tensor *t54 = up_f64(dev, 2, (int64_t[]){5, 4}, x);
    assert_error(clt_tensor_sparse_mask(t54, csc, &r), CLT_ERR_INVALID_ARGUMENT,
                 "expects mask to be sparse csr");
    cr_assert_null(r);
    clt_sparse_free(csc);
    clt_tensor_free(t54);
    clt_tensor *ts[] = {t, i, mv, t2};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(m);
    clt_sparse_free(mc);
    clt_sparse_free(s);
}

Test(sparse_csr, hspmm)
{
    clt_device *dev = get_device("cpu:0");
    /* rows 2, 0, 2 (row 1 empty) of a 3 x 3 matrix */
    int64_t idx[6] = {2, 0, 2, 1, 1, 0};
    double val[3] = {1, 2, 3}, b[6] = {0, 1, 2, 3, 4, 5};
    clt_tensor *i = up_i64(dev, 2, (int64_t[]){2, 3}, idx), *v = up_f64(dev, 1, (int64_t[]){3}, val),
               *bt = up_f64(dev, 2, (int64_t[]){3, 2}, b), *ri = NULL, *rv = NULL;
    clt_sparse *s = NULL, *r = NULL;
    CHECK(clt_sparse_coo_tensor(i, v, (int64_t[]){3, 3}, 2, 1, &s));
    CHECK(clt_sparse_hspmm(s, bt, &r));
    cr_assert_eq(clt_sparse_sparse_dim(r), 1);
    cr_assert_eq(clt_sparse_dense_dim(r), 1);
    cr_assert_eq(clt_sparse_shape(r)[0], 3);
    cr_assert_eq(clt_sparse_shape(r)[1], 2);
    CHECK(clt_sparse_indices(r, &ri));
    CHECK(clt_sparse_values(r, &rv));
    assert_i64(ri, (int64_t[]){0, 2}, 2, "hspmm rows");
    /* row 0: 2 * b[1]; row 2: 1 * b[1] + 3 * b[0] */
    double want[4] = {2 * b[2], 2 * b[3], b[2] + 3 * b[0], b[3] + 3 * b[1]};
    assert_tensor_close(rv, want, 4, 1e-12, 1e-12, "hspmm values");
    clt_tensor_free(ri);
    clt_tensor_free(rv);
    clt_sparse_free(r);
    r = (clt_sparse *)1;
    clt_tensor *b4 = up_f64(dev, 2, (int64_t[]){2, 3}, b);
    assert_error(clt_sparse_hspmm(s, b4, &r), CLT_ERR_SHAPE_MISMATCH,
                 "hspmm: Argument #3: Expected dim 0 size 3, got 2");
    cr_assert_null(r);
    names_only("clt_sparse_hspmm");
    assert_error(clt_sparse_hspmm(s, v, &r), CLT_ERR_SHAPE_MISMATCH,
                 "hspmm: Argument #3: matrices expected, got 1D tensor");
    clt_sparse *csr = NULL;
    CHECK(clt_sparse_to_sparse_csr(s, &csr));
    assert_error(clt_sparse_hspmm(csr, bt, &r), CLT_ERR_INVALID_ARGUMENT, "SparseCsr");
    cr_assert_null(r);
    clt_sparse_free(csr);
    clt_tensor *ts[] = {i, v, bt, b4};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(s);
}

/* ---- gradients -------------------------------------------------------------------- */

/* in[0]: CSR values [6] of A's pattern, in[1]: dense [5, 3], in[2]: [5];
 * mm, mv, to_dense, sum and a transpose's mm, all summed. */
static clt_status gc_products(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *c = NULL, *p = NULL, *y = NULL, *z = NULL, *w = NULL, *tot = NULL, *d = NULL,
               *f = NULL, *g = NULL, *h = NULL, *k = NULL, *ty = NULL, *fl = NULL;
    clt_sparse *s = NULL, *t = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){5}, A_CROW, &c);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){6}, A_COL, &p);
    if (st == CLT_OK)
        st = clt_sparse_csr_tensor(c, p, in[0], (int64_t[]){4, 5}, 1, &s);
    if (st == CLT_OK)
        st = clt_sparse_mm(s, in[1], &y); /* [4, 3] */
    if (st == CLT_OK)
        st = clt_sparse_mv(s, in[2], &z); /* [4] */
    if (st == CLT_OK)
        st = clt_sparse_to_dense(s, &d); /* [4, 5] */
    if (st == CLT_OK)
        st = clt_sparse_sum(s, &tot);
    if (st == CLT_OK)
        st = clt_sparse_transpose(s, 0, 1, &t);
    if (st == CLT_OK)
        st = clt_sparse_mm(t, y, &ty); /* [5, 3] */
    if (st == CLT_OK)
        st = clt_mul(d, d, &f);
    if (st == CLT_OK)
        st = clt_sum_dim(f, 1, 0, &g); /* [4] */
    if (st == CLT_OK)
        st = clt_add(g, z, &h);
    if (st == CLT_OK)
        st = clt_add(h, tot, &k);
    if (st == CLT_OK)
        st = clt_flatten(ty, 0, 1, &fl); /* [15] */
    if (st == CLT_OK)
        st = clt_sum_dim(y, 1, 0, &w);
    clt_tensor *parts[3] = {k, w, fl};
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *const *)parts, 3, 0, out);
    clt_tensor *ts[] = {c, p, y, z, w, tot, d, f, g, h, k, ty, fl};
    for (size_t q = 0; q < sizeof ts / sizeof *ts; q++)
        clt_tensor_free(ts[q]);
    clt_sparse_free(s);
    clt_sparse_free(t);
    return st;
}

Test(sparse_csr, gradcheck_products)
{
    clt_device *dev = get_device("cpu:0");
    double *v = spread_doubles(6, 4), *b = spread_doubles(15, 5), *x = spread_doubles(5, 6);
    gc_in ins[3] = {{1, {6}, v, 1}, {2, {5, 3}, b, 1}, {1, {5}, x, 1}};
    gradcheck(dev, gc_products, NULL, 3, ins);
    free(v);
    free(b);
    free(x);
}

/* in[0]: CSR values [6], in[1]: mat1 [4, 3], in[2]: mat2 [3, 5], in[3]:
 * dense [4, 5]: sampled_addmm's values, then sparse_mask of in[3] by the
 * result and a CSR add, to_dense. */
static clt_status gc_sampled(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *c = NULL, *p = NULL;
    clt_sparse *s = NULL, *r = NULL, *m = NULL, *sum = NULL, *csr = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){5}, A_CROW, &c);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){6}, A_COL, &p);
    if (st == CLT_OK)
        st = clt_sparse_csr_tensor(c, p, in[0], (int64_t[]){4, 5}, 0, &s);
    if (st == CLT_OK)
        st = clt_sparse_sampled_addmm(s, in[1], in[2], 0.5, -1.5, &r);
    if (st == CLT_OK)
        st = clt_tensor_sparse_mask(in[3], r, &m);
    if (st == CLT_OK)
        st = clt_tensor_to_sparse_csr(in[3], &csr);
    if (st == CLT_OK)
        st = clt_sparse_add(r, m, &sum);
    clt_sparse *sum2 = NULL;
    if (st == CLT_OK)
        st = clt_sparse_add(sum, csr, &sum2);
    if (st == CLT_OK)
        st = clt_sparse_to_dense(sum2, out);
    clt_tensor_free(c);
    clt_tensor_free(p);
    clt_sparse *ss[] = {s, r, m, sum, csr, sum2};
    for (size_t q = 0; q < sizeof ss / sizeof *ss; q++)
        clt_sparse_free(ss[q]);
    return st;
}

Test(sparse_csr, gradcheck_sampled_addmm_mask_add)
{
    clt_device *dev = get_device("cpu:0");
    double *v = spread_doubles(6, 7), *a = spread_doubles(12, 8), *b = spread_doubles(15, 9),
           *d = spread_doubles(20, 10);
    gc_in ins[4] = {{1, {6}, v, 1}, {2, {4, 3}, a, 1}, {2, {3, 5}, b, 1}, {2, {4, 5}, d, 1}};
    gradcheck(dev, gc_sampled, NULL, 4, ins);
    free(v);
    free(a);
    free(b);
    free(d);
}

/* ---- the compressed product's kernel (cl/spmm.cl) ---------------------------------- */

/* A 7 x 6 matrix with empty rows 1, 4 and 6 and an empty column 5:
 * values exact in float16. */
static const int64_t K_CROW[8] = {0, 3, 3, 5, 8, 8, 11, 11};
static const int64_t K_COL[11] = {0, 2, 4, 1, 3, 0, 1, 4, 0, 2, 3};
static const double K_VAL[11] = {1.5, -2, 0.25, 3, -1, 4, 0.5, -0.75, 2, 1.25, -3};

/* The CSC arrays of the same matrix (columns 0..5; column 5 empty). */
static const int64_t K_CCOL[7] = {0, 3, 5, 7, 9, 11, 11};
static const int64_t K_ROW[11] = {0, 3, 5, 2, 3, 0, 5, 2, 5, 0, 3};
static const double K_CVAL[11] = {1.5, 4, 2, 3, 0.5, -2, 1.25, -1, -3, 0.25, -0.75};

/* x [m, p] = (i * p + j) mod 7 - 3 over 4: exact in float16. */
static double *k_dense(int64_t m, int64_t p)
{
    double *x = malloc((size_t)(m * p > 0 ? m * p : 1) * sizeof *x);
    for (int64_t i = 0; i < m * p; i++)
        x[i] = (double)((i * 5) % 7 - 3) / 4;
    return x;
}

/* A @ x on the host: d [n, m] dense times x [m, p]. */
static double *k_product(const double *d, int64_t n, int64_t m, const double *x, int64_t p)
{
    double *y = calloc((size_t)(n * p > 0 ? n * p : 1), sizeof *y);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < m; k++)
            for (int64_t j = 0; j < p; j++)
                y[i * p + j] += d[i * m + k] * x[k * p + j];
    return y;
}

static clt_sparse *k_matrix(clt_device *dev, clt_dtype dt, int csc)
{
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){csc ? 7 : 8}, csc ? K_CCOL : K_CROW),
               *p = up_i64(dev, 1, (int64_t[]){11}, csc ? K_ROW : K_COL),
               *v = tensor_of(dev, dt, 1, (int64_t[]){11}, csc ? K_CVAL : K_VAL);
    clt_sparse *s = NULL;
    if (csc)
        CHECK(clt_sparse_csc_tensor(c, p, v, (int64_t[]){7, 6}, 1, &s));
    else
        CHECK(clt_sparse_csr_tensor(c, p, v, (int64_t[]){7, 6}, 1, &s));
    clt_tensor_free(c);
    clt_tensor_free(p);
    clt_tensor_free(v);
    return s;
}

/* mm, mv and addmm of CSR and CSC matrices with empty rows and columns in
 * float32, float64, float16 and bfloat16 (all through the kernel), against
 * the dense product on the host; 16-bit results are rounded once. */
Test(sparse_csr, spmm_kernel_layouts_dtypes)
{
    clt_device *dev = get_device("cpu:0");
    double d[42], dc[42];
    host_dense(0, 7, 6, K_CROW, K_COL, K_VAL, d);
    host_dense(1, 7, 6, K_CCOL, K_ROW, K_CVAL, dc);
    for (int i = 0; i < 42; i++)
        cr_assert_eq(d[i], dc[i], "the CSC arrays hold the CSR matrix");
    const clt_dtype dts[4] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_BFLOAT16};
    const double tol[4] = {1e-6, 1e-13, 2e-3, 1e-2};
    const int64_t ps[3] = {1, 5, 70};
    for (int q = 0; q < 4; q++)
        for (int csc = 0; csc < 2; csc++)
            for (int pi = 0; pi < 3; pi++) {
                int64_t p = ps[pi];
                char what[96];
                snprintf(what, sizeof what, "%s %s mm p=%lld", clt_dtype_name(dts[q]),
                         csc ? "csc" : "csr", (long long)p);
                clt_sparse *s = k_matrix(dev, dts[q], csc);
                double *x = k_dense(6, p), *want = k_product(d, 7, 6, x, p);
                clt_tensor *xt = tensor_of(dev, dts[q], 2, (int64_t[]){6, p}, x), *y = NULL;
                CHECK(clt_sparse_mm(s, xt, &y));
                assert_shape(y, 2, (int64_t[]){7, p});
                cr_assert_eq(clt_tensor_dtype(y), dts[q], "%s: dtype", what);
                assert_tensor_close(y, want, (size_t)(7 * p), tol[q], tol[q], what);
                clt_tensor_free(y);
                /* addmm with a broadcast row: beta 0.5, alpha -2 */
                double *row = k_dense(1, p), *w2 = malloc((size_t)(7 * p) * sizeof *w2);
                for (int64_t i = 0; i < 7 * p; i++)
                    w2[i] = 0.5 * row[i % p] - 2 * want[i];
                clt_tensor *rt = tensor_of(dev, dts[q], 1, (int64_t[]){p}, row);
                CHECK(clt_sparse_addmm(rt, s, xt, 0.5, -2, &y));
                snprintf(what, sizeof what, "%s %s addmm p=%lld", clt_dtype_name(dts[q]),
                         csc ? "csc" : "csr", (long long)p);
                assert_tensor_close(y, w2, (size_t)(7 * p), tol[q], tol[q], what);
                clt_tensor_free(y);
                if (p == 1) { /* mv: the column as a vector */
                    clt_tensor *v = tensor_of(dev, dts[q], 1, (int64_t[]){6}, x);
                    CHECK(clt_sparse_mv(s, v, &y));
                    assert_shape(y, 1, (int64_t[]){7});
                    assert_tensor_close(y, want, 7, tol[q], tol[q], "mv");
                    clt_tensor_free(y);
                    clt_tensor_free(v);
                }
                clt_tensor_free(rt);
                clt_tensor_free(xt);
                clt_sparse_free(s);
                free(x);
                free(want);
                free(row);
                free(w2);
            }
}

/* No entries at all (nnz 0, every row empty), a [0, p] product (no rows)
 * and a product with no columns: zeros of the right shapes. */
Test(sparse_csr, spmm_kernel_empty)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t zero_crow[4] = {0, 0, 0, 0};
    for (int csc = 0; csc < 2; csc++) {
        clt_tensor *c = up_i64(dev, 1, (int64_t[]){4}, zero_crow), *p = NULL, *v = NULL,
                   *x = NULL, *y = NULL;
        CHECK(clt_empty(dev, CLT_INT64, 1, (int64_t[]){0}, &p));
        CHECK(clt_empty(dev, CLT_FLOAT32, 1, (int64_t[]){0}, &v));
        clt_sparse *s = NULL;
        if (csc)
            CHECK(clt_sparse_csc_tensor(c, p, v, (int64_t[]){2, 3}, 1, &s));
        else
            CHECK(clt_sparse_csr_tensor(c, p, v, (int64_t[]){3, 2}, 1, &s));
        int64_t m = csc ? 3 : 2, n = csc ? 2 : 3;
        double *xh = k_dense(m, 4), zeros[12] = {0};
        x = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){m, 4}, xh);
        CHECK(clt_sparse_mm(s, x, &y));
        assert_shape(y, 2, (int64_t[]){n, 4});
        assert_tensor_close(y, zeros, (size_t)(n * 4), 0, 0, csc ? "csc nnz 0" : "csr nnz 0");
        clt_tensor_free(y);
        clt_tensor_free(x);
        /* no columns in the dense operand */
        CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){m, 0}, &x));
        CHECK(clt_sparse_mm(s, x, &y));
        assert_shape(y, 2, (int64_t[]){n, 0});
        clt_tensor *ts[] = {c, p, v, x, y};
        for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
            clt_tensor_free(ts[k]);
        clt_sparse_free(s);
        free(xh);
    }
    /* a matrix without rows */
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){1}, zero_crow), *p = NULL, *v = NULL, *x = NULL,
               *y = NULL;
    CHECK(clt_empty(dev, CLT_INT64, 1, (int64_t[]){0}, &p));
    CHECK(clt_empty(dev, CLT_FLOAT64, 1, (int64_t[]){0}, &v));
    clt_sparse *s = NULL;
    CHECK(clt_sparse_csr_tensor(c, p, v, (int64_t[]){0, 3}, 1, &s));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){3, 2}, &x));
    CHECK(clt_sparse_mm(s, x, &y));
    assert_shape(y, 2, (int64_t[]){0, 2});
    clt_tensor *ts[] = {c, p, v, x, y};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(s);
}

/* The kernel itself (clt__spmm_rows) on indices no check has seen: row
 * bounds past nnz are clamped, entries whose column is outside [0, m)
 * are skipped, and nothing outside a buffer is read. */
Test(sparse_csr, spmm_kernel_untrusted_indices)
{
    clt_device *dev = get_device("cpu:0");
    /* rows: [-3, 2) clamped to [0, 2), [2, 9) to [2, 4), [9, 1) to [4, 4) */
    const int64_t cmp[4] = {-3, 2, 9, 1}, plain[4] = {1, 7, -1, 0};
    const double val[4] = {2, 100, 100, 3}, xh[6] = {1, 2, 3, 4, 5, 6}; /* x [3, 2] */
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){4}, cmp), *p = up_i64(dev, 1, (int64_t[]){4}, plain),
               *v = up_f64(dev, 1, (int64_t[]){4}, val), *x = up_f64(dev, 2, (int64_t[]){3, 2}, xh),
               *y = NULL;
    CHECK(clt__spmm_rows(c, p, v, x, &y, "test"));
    /* row 0: entries 0 (2 x[1]) and 1 (column 7, skipped); row 1: entries
     * 2 (column -1, skipped) and 3 (3 x[0]); row 2: none */
    const double want[6] = {6, 8, 3, 6, 0, 0};
    assert_tensor_close(y, want, 6, 0, 0, "untrusted indices");
    clt_tensor *ts[] = {c, p, v, x, y};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
}

/* inputs: CSR values [11] of K's pattern, dense x [6, 3]; outputs: K @ x
 * and K^T-of-CSC (the same arrays as CSC [6, 7]) @ (K @ x), so that both
 * layouts' kernels and formulas are differentiated twice. */
static clt_status gg_spmm(void *user, clt_tensor *const *in, size_t n, clt_tensor **outs,
                          size_t *m)
{
    (void)user;
    (void)n;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *c = NULL, *p = NULL, *y = NULL, *z = NULL;
    clt_sparse *s = NULL, *t = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){8}, K_CROW, &c);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){11}, K_COL, &p);
    if (st == CLT_OK)
        st = clt_sparse_csr_tensor(c, p, in[0], (int64_t[]){7, 6}, 1, &s);
    if (st == CLT_OK)
        st = clt_sparse_mm(s, in[1], &y);
    if (st == CLT_OK)
        st = clt_sparse_transpose(s, 0, 1, &t);
    if (st == CLT_OK)
        st = clt_sparse_mm(t, y, &z);
    clt_tensor_free(c);
    clt_tensor_free(p);
    clt_sparse_free(s);
    clt_sparse_free(t);
    if (st != CLT_OK) {
        clt_tensor_free(y);
        clt_tensor_free(z);
        return st;
    }
    outs[0] = y;
    outs[1] = z;
    *m = 2;
    return CLT_OK;
}

Test(sparse_csr, spmm_kernel_gradients_twice)
{
    clt_device *dev = get_device("cpu:0");
    double *x = k_dense(6, 3);
    clt_tensor *in[2] = {up_f64(dev, 1, (int64_t[]){11}, K_VAL),
                         up_f64(dev, 2, (int64_t[]){6, 3}, x)};
    for (int k = 0; k < 2; k++)
        CHECK(clt_set_requires_grad(in[k], 1));
    CHECK(clt_gradcheck(gg_spmm, NULL, in, 2, NULL));
    CHECK(clt_gradgradcheck(gg_spmm, NULL, in, 2, NULL, 0, NULL));
    clt_tensor_free(in[0]);
    clt_tensor_free(in[1]);
    free(x);
}

/* ---- block layouts (BSR, BSC) ------------------------------------------------------ */

/* Non-NULL outs that a failing call must set to NULL. */
#define SENTINEL_T ((clt_tensor *)(uintptr_t)1)
#define SENTINEL_SP ((clt_sparse *)(uintptr_t)1)

/* 2 x 3 blocks of 2 x 2: block row 0 holds block columns 0 and 2, block
 * row 1 block column 1. */
static const int64_t B_CMP[3] = {0, 2, 3};
static const int64_t B_PLAIN[3] = {0, 2, 1};
static const double B_VAL[12] = {1, 2, 3, 4, -1, 0.5, 2, -3, 5, 6, -7, 8};

/* The dense [n, m] matrix of blocks (R x C, row-major in each block);
 * bsc: cmp over block columns, plain the block rows. */
static void host_blocks(int bsc, int64_t n, int64_t m, int64_t R, int64_t C, const int64_t *cmp,
                        int64_t nmaj, const int64_t *plain, const double *val, double *d)
{
    memset(d, 0, (size_t)(n * m) * sizeof *d);
    for (int64_t i = 0; i < nmaj; i++)
        for (int64_t k = cmp[i]; k < cmp[i + 1]; k++) {
            int64_t br = bsc ? plain[k] : i, bc = bsc ? i : plain[k];
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++)
                    d[(br * R + r) * m + bc * C + c] += val[(k * R + r) * C + c];
        }
}

static clt_sparse *b_matrix(clt_device *dev, int bsc, const int64_t *size)
{
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){3}, B_CMP), *p = up_i64(dev, 1, (int64_t[]){3}, B_PLAIN),
               *v = up_f64(dev, 3, (int64_t[]){3, 2, 2}, B_VAL);
    clt_sparse *s = NULL;
    if (bsc)
        CHECK(clt_sparse_bsc_tensor(c, p, v, size, 1, &s));
    else
        CHECK(clt_sparse_bsr_tensor(c, p, v, size, 1, &s));
    clt_tensor_free(c);
    clt_tensor_free(p);
    clt_tensor_free(v);
    return s;
}

Test(sparse_csr, bsr_bsc_construct_accessors_dense)
{
    clt_device *dev = get_device("cpu:0");
    for (int bsc = 0; bsc < 2; bsc++) {
        int64_t n = bsc ? 6 : 4, m = bsc ? 4 : 6;
        double want[24];
        host_blocks(bsc, n, m, 2, 2, B_CMP, 2, B_PLAIN, B_VAL, want);
        for (int inferred = 0; inferred < 2; inferred++) {
            clt_sparse *s = b_matrix(dev, bsc, inferred ? NULL : (int64_t[]){n, m});
            cr_assert_eq(clt_sparse_layout(s), bsc ? CLT_SPARSE_BSC : CLT_SPARSE_BSR);
            cr_assert_eq(clt_sparse_nnz(s), 3, "nnz counts blocks");
            cr_assert_eq(clt_sparse_shape(s)[0], n);
            cr_assert_eq(clt_sparse_shape(s)[1], m);
            assert_dense_of(s, want, n * m, bsc ? "bsc to_dense" : "bsr to_dense");
            clt_tensor *t = NULL;
            CHECK(clt_sparse_values(s, &t));
            assert_shape(t, 3, (int64_t[]){3, 2, 2});
            assert_tensor_close(t, B_VAL, 12, 0, 0, "values");
            clt_tensor_free(t);
            CHECK(bsc ? clt_sparse_ccol_indices(s, &t) : clt_sparse_crow_indices(s, &t));
            assert_i64(t, B_CMP, 3, "compressed indices");
            clt_tensor_free(t);
            CHECK(bsc ? clt_sparse_row_indices(s, &t) : clt_sparse_col_indices(s, &t));
            assert_i64(t, B_PLAIN, 3, "plain indices");
            clt_tensor_free(t);
            t = SENTINEL_T;
            assert_error(bsc ? clt_sparse_crow_indices(s, &t) : clt_sparse_ccol_indices(s, &t),
                         CLT_ERR_INVALID_ARGUMENT, bsc ? "but got SparseBsc" : "but got SparseBsr");
            cr_assert_null(t);
            /* sum and a scalar product keep the blocks */
            CHECK(clt_sparse_sum(s, &t));
            double tot = 0, twice[24];
            for (int i = 0; i < 12; i++)
                tot += B_VAL[i];
            assert_tensor_close(t, &tot, 1, 1e-12, 0, "sum");
            clt_tensor_free(t);
            clt_sparse *m2 = NULL;
            CHECK(clt_sparse_mul_scalar(s, -2, &m2));
            cr_assert_eq(clt_sparse_layout(m2), clt_sparse_layout(s));
            for (int i = 0; i < 24; i++)
                twice[i] = -2 * want[i];
            assert_dense_of(m2, twice, n * m, "mul_scalar");
            clt_sparse_free(m2);
            clt_sparse_free(s);
        }
    }
}

Test(sparse_csr, bsr_errors)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){3}, B_CMP), *p = up_i64(dev, 1, (int64_t[]){3}, B_PLAIN),
               *v = up_f64(dev, 3, (int64_t[]){3, 2, 2}, B_VAL), *flat = up_f64(dev, 1, (int64_t[]){3}, B_VAL);
    clt_sparse *s = SENTINEL_SP;
    assert_error(clt_sparse_bsr_tensor(c, p, v, (int64_t[]){5, 6}, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "tensor shape[0] (=5) must be divisible with blocksize[0] (=2)");
    cr_assert_null(s);
    names_only("clt_sparse_bsr_tensor");
    s = SENTINEL_SP;
    assert_error(clt_sparse_bsr_tensor(c, p, flat, (int64_t[]){4, 6}, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "values must have dimensionality > sum of batch and block dimensionalities "
                 "(=0 + 2) but got 1");
    cr_assert_null(s);
    s = SENTINEL_SP; /* block column 2 past 4 / 2 block columns */
    assert_error(clt_sparse_bsr_tensor(c, p, v, (int64_t[]){4, 4}, 1, &s), CLT_ERR_INDEX_OUT_OF_RANGE,
                 "`0 <= col_indices < ncols` is not satisfied.");
    cr_assert_null(s);
    s = SENTINEL_SP;
    assert_error(clt_sparse_bsc_tensor(c, p, v, (int64_t[]){6, 5}, 1, &s), CLT_ERR_SHAPE_MISMATCH,
                 "tensor shape[1] (=5) must be divisible with blocksize[1] (=2)");
    cr_assert_null(s);
    names_only("clt_sparse_bsc_tensor");
    clt_tensor *d = up_f64(dev, 2, (int64_t[]){3, 4}, B_VAL);
    s = SENTINEL_SP;
    assert_error(clt_tensor_to_sparse_bsr(d, (int64_t[]){2, 2}, &s), CLT_ERR_SHAPE_MISMATCH,
                 "must be divisible by blocksize [2, 2]");
    cr_assert_null(s);
    s = SENTINEL_SP;
    assert_error(clt_tensor_to_sparse_bsc(d, (int64_t[]){0, 2}, &s), CLT_ERR_INVALID_ARGUMENT,
                 "blocksize must be positive");
    cr_assert_null(s);
    /* blocked operands of add, and masks, are refused as torch */
    clt_sparse *b = b_matrix(dev, 0, NULL), *r = SENTINEL_SP;
    assert_error(clt_sparse_add(b, b, &r), CLT_ERR_INVALID_ARGUMENT, "(non-block)");
    cr_assert_null(r);
    clt_tensor *z = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){4, 6}, &z));
    r = SENTINEL_SP;
    assert_error(clt_tensor_sparse_mask(z, b, &r), CLT_ERR_INVALID_ARGUMENT, "SparseBsr");
    cr_assert_null(r);
    clt_sparse_free(b);
    clt_tensor *ts[] = {c, p, v, flat, d, z};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
}

/* mm, addmm, mv, the transpose (BSR.t() is BSC) and conversions of both
 * block layouts, against the host's dense matrix. */
Test(sparse_csr, bsr_bsc_products_transpose_conversions)
{
    clt_device *dev = get_device("cpu:0");
    for (int bsc = 0; bsc < 2; bsc++) {
        int64_t n = bsc ? 6 : 4, m = bsc ? 4 : 6;
        double d[24], dt[24];
        host_blocks(bsc, n, m, 2, 2, B_CMP, 2, B_PLAIN, B_VAL, d);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++)
                dt[j * n + i] = d[i * m + j];
        clt_sparse *s = b_matrix(dev, bsc, NULL);
        for (int64_t p = 1; p <= 9; p += 8) {
            double *x = k_dense(m, p), *want = k_product(d, n, m, x, p);
            clt_tensor *xt = up_f64(dev, 2, (int64_t[]){m, p}, x), *y = NULL;
            CHECK(clt_sparse_mm(s, xt, &y));
            assert_tensor_close(y, want, (size_t)(n * p), 1e-12, 1e-12, "block mm");
            clt_tensor_free(y);
            clt_tensor *in = NULL;
            CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){1, p}, &in));
            CHECK(clt_sparse_addmm(in, s, xt, 1, 3, &y));
            for (int64_t i = 0; i < n * p; i++)
                want[i] *= 3;
            assert_tensor_close(y, want, (size_t)(n * p), 1e-12, 1e-12, "block addmm");
            clt_tensor_free(y);
            clt_tensor_free(in);
            clt_tensor_free(xt);
            free(x);
            free(want);
        }
        double *v = k_dense(m, 1), *wv = k_product(d, n, m, v, 1);
        clt_tensor *vt = up_f64(dev, 1, (int64_t[]){m}, v), *y = NULL;
        CHECK(clt_sparse_mv(s, vt, &y));
        assert_tensor_close(y, wv, (size_t)n, 1e-12, 1e-12, "block mv");
        clt_tensor_free(y);
        clt_tensor_free(vt);
        free(v);
        free(wv);
        clt_sparse *t = NULL, *c = NULL;
        CHECK(clt_sparse_transpose(s, 0, 1, &t));
        cr_assert_eq(clt_sparse_layout(t), bsc ? CLT_SPARSE_BSR : CLT_SPARSE_BSC);
        assert_dense_of(t, dt, n * m, "block transpose");
        clt_tensor *tv = NULL;
        CHECK(clt_sparse_values(t, &tv));
        const double tvals[12] = {1, 3, 2, 4, -1, 2, 0.5, -3, 5, -7, 6, 8};
        assert_tensor_close(tv, tvals, 12, 0, 0, "each block transposed");
        clt_tensor_free(tv);
        const clt_layout to[3] = {CLT_SPARSE_CSR, CLT_SPARSE_CSC, CLT_SPARSE_COO};
        for (int k = 0; k < 3; k++) {
            CHECK(k == 0 ? clt_sparse_to_sparse_csr(s, &c)
                         : k == 1 ? clt_sparse_to_sparse_csc(s, &c) : clt_sparse_to_sparse_coo(s, &c));
            cr_assert_eq(clt_sparse_layout(c), to[k]);
            assert_dense_of(c, d, n * m, "block to another layout");
            clt_sparse_free(c);
        }
        clt_sparse_free(t);
        clt_sparse_free(s);
    }
}

/* Dense to BSR and BSC: the blocks with a nonzero, in block order; a
 * round trip gives the dense matrix back. */
Test(sparse_csr, dense_to_bsr_bsc)
{
    clt_device *dev = get_device("cpu:0");
    /* [4, 6] of 2 x 3 blocks: blocks (0, 0) and (1, 1) nonzero (one
     * element each is enough), (0, 1) and (1, 0) zero */
    double d[24] = {0};
    d[0 * 6 + 2] = 1.5;
    d[3 * 6 + 4] = -2;
    d[2 * 6 + 3] = 4;
    clt_tensor *t = up_f64(dev, 2, (int64_t[]){4, 6}, d);
    for (int bsc = 0; bsc < 2; bsc++) {
        clt_sparse *s = NULL;
        CHECK(bsc ? clt_tensor_to_sparse_bsc(t, (int64_t[]){2, 3}, &s)
                  : clt_tensor_to_sparse_bsr(t, (int64_t[]){2, 3}, &s));
        cr_assert_eq(clt_sparse_layout(s), bsc ? CLT_SPARSE_BSC : CLT_SPARSE_BSR);
        cr_assert_eq(clt_sparse_nnz(s), 2);
        clt_tensor *c = NULL, *p = NULL, *v = NULL;
        CHECK(bsc ? clt_sparse_ccol_indices(s, &c) : clt_sparse_crow_indices(s, &c));
        CHECK(bsc ? clt_sparse_row_indices(s, &p) : clt_sparse_col_indices(s, &p));
        assert_i64(c, (int64_t[]){0, 1, 2}, 3, "compressed");
        assert_i64(p, (int64_t[]){0, 1}, 2, "plain");
        CHECK(clt_sparse_values(s, &v));
        assert_shape(v, 3, (int64_t[]){2, 2, 3});
        const double want[12] = {0, 0, 1.5, 0, 0, 0, 4, 0, 0, 0, -2, 0};
        assert_tensor_close(v, want, 12, 0, 0, "blocks");
        assert_dense_of(s, d, 24, "round trip");
        clt_tensor_free(c);
        clt_tensor_free(p);
        clt_tensor_free(v);
        clt_sparse_free(s);
    }
    clt_tensor_free(t);
}

/* in[0]: BSR values [3, 2, 2] of B's pattern, in[1]: dense [6, 3]; mm,
 * the transpose's to_dense and a dense-to-BSR of the product's rows. */
static clt_status gc_blocks(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *c = NULL, *p = NULL, *y = NULL, *d = NULL, *f1 = NULL, *f2 = NULL, *yd = NULL;
    clt_sparse *s = NULL, *t = NULL, *yb = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, B_CMP, &c);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){3}, B_PLAIN, &p);
    if (st == CLT_OK)
        st = clt_sparse_bsr_tensor(c, p, in[0], (int64_t[]){4, 6}, 1, &s);
    if (st == CLT_OK)
        st = clt_sparse_mm(s, in[1], &y); /* [4, 3] */
    if (st == CLT_OK)
        st = clt_tensor_to_sparse_bsc(y, (int64_t[]){2, 1}, &yb);
    if (st == CLT_OK)
        st = clt_sparse_to_dense(yb, &yd);
    if (st == CLT_OK)
        st = clt_sparse_transpose(s, 0, 1, &t);
    if (st == CLT_OK)
        st = clt_sparse_to_dense(t, &d); /* [6, 4] */
    if (st == CLT_OK)
        st = clt_flatten(yd, 0, 1, &f1);
    if (st == CLT_OK)
        st = clt_flatten(d, 0, 1, &f2);
    clt_tensor *parts[2] = {f1, f2};
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *const *)parts, 2, 0, out);
    clt_tensor *ts[] = {c, p, y, d, f1, f2, yd};
    for (size_t q = 0; q < sizeof ts / sizeof *ts; q++)
        clt_tensor_free(ts[q]);
    clt_sparse_free(s);
    clt_sparse_free(t);
    clt_sparse_free(yb);
    return st;
}

Test(sparse_csr, gradcheck_blocks)
{
    clt_device *dev = get_device("cpu:0");
    double *v = spread_doubles(12, 11), *b = spread_doubles(18, 12);
    gc_in ins[2] = {{3, {3, 2, 2}, v, 1}, {2, {6, 3}, b, 1}};
    gradcheck(dev, gc_blocks, NULL, 2, ins);
    free(v);
    free(b);
}

/* ---- complex values through the kernel ----------------------------------------------- */

typedef clt_status (*compressed_fn)(const clt_tensor *, const clt_tensor *, const clt_tensor *,
                                    const int64_t *, int, clt_sparse **);

/* The four layouts over the arrays above: K's 7 x 6 matrix as CSR and
 * CSC, B's blocks as a 4 x 6 BSR and a 6 x 4 BSC matrix. */
static const struct cx_layout {
    const char *name;
    compressed_fn make;
    int blocks, csc;
    const int64_t *cmp, *plain;
    const double *re;
    int64_t ncmp, nnz, n, m;
} CX[4] = {
    {"csr", clt_sparse_csr_tensor, 0, 0, K_CROW, K_COL, K_VAL, 8, 11, 7, 6},
    {"csc", clt_sparse_csc_tensor, 0, 1, K_CCOL, K_ROW, K_CVAL, 7, 11, 7, 6},
    {"bsr", clt_sparse_bsr_tensor, 1, 0, B_CMP, B_PLAIN, B_VAL, 3, 3, 4, 6},
    {"bsc", clt_sparse_bsc_tensor, 1, 1, B_CMP, B_PLAIN, B_VAL, 3, 3, 6, 4},
};

/* The imaginary parts: quarters, exact in float32. */
static double cx_im(int64_t k)
{
    return (double)((k * 3) % 5 - 2) * 0.25;
}

/* The number of values (elements of the blocks for BSR and BSC). */
static int64_t cx_nvals(const struct cx_layout *l)
{
    return l->blocks ? l->nnz * 4 : l->nnz;
}

/* The row r and column c of value k. */
static void cx_coord(const struct cx_layout *l, int64_t k, int64_t *r, int64_t *c)
{
    int64_t e = l->blocks ? k / 4 : k, i = 0;
    while (l->cmp[i + 1] <= e)
        i++;
    int64_t maj = i, pl = l->plain[e];
    *r = l->csc ? pl : maj;
    *c = l->csc ? maj : pl;
    if (l->blocks) {
        *r = *r * 2 + (k % 4) / 2;
        *c = *c * 2 + k % 2;
    }
}

/* A host complex array as a tensor of dt (complex64 or complex128). */
static clt_tensor *up_cx(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                         const double complex *v, int64_t n)
{
    clt_tensor *t = NULL;
    if (dt == CLT_COMPLEX128) {
        CHECK(clt_tensor_from_host(dev, dt, nd, shape, v, &t));
        return t;
    }
    float complex *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    for (int64_t i = 0; i < n; i++)
        f[i] = (float complex)v[i];
    CHECK(clt_tensor_from_host(dev, dt, nd, shape, f, &t));
    free(f);
    return t;
}

static void assert_cx_close(const clt_tensor *t, const double complex *want, int64_t n,
                            double tol, const char *what)
{
    cr_assert_eq(clt_tensor_numel(t), n, "%s: %lld elements", what,
                 (long long)clt_tensor_numel(t));
    double complex *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    if (clt_tensor_dtype(t) == CLT_COMPLEX128) {
        CHECK(clt_tensor_read(t, h, (size_t)n * sizeof *h));
    } else {
        cr_assert_eq(clt_tensor_dtype(t), CLT_COMPLEX64, "%s: dtype", what);
        float complex *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
        CHECK(clt_tensor_read(t, f, (size_t)n * sizeof *f));
        for (int64_t i = 0; i < n; i++)
            h[i] = f[i];
        free(f);
    }
    for (int64_t i = 0; i < n; i++)
        cr_assert(cabs(h[i] - want[i]) <= tol * (1 + cabs(want[i])),
                  "%s[%lld]: %.9g%+.9gi, want %.9g%+.9gi", what, (long long)i, creal(h[i]),
                  cimag(h[i]), creal(want[i]), cimag(want[i]));
    free(h);
}

/* mm, addmm and mv of complex64 and complex128 matrices in the four
 * compressed layouts (through the kernel: clt__spmm_rows takes them
 * directly too) against the dense complex product on the host, and the
 * gradients of values and dense operand against A^H g and g x^H at the
 * entries (torch's, conjugate Wirtinger calculus). */
Test(sparse_csr, spmm_kernel_complex)
{
    clt_device *dev = get_device("cpu:0");
    const clt_dtype dts[2] = {CLT_COMPLEX64, CLT_COMPLEX128};
    const double tol[2] = {1e-5, 1e-13};
    const int64_t ps[3] = {1, 5, 19};
    for (int q = 0; q < 2; q++)
        for (int li = 0; li < 4; li++) {
            const struct cx_layout *l = &CX[li];
            int64_t n = l->n, m = l->m, nv = cx_nvals(l);
            double complex *vals = malloc((size_t)nv * sizeof *vals),
                           *d = calloc((size_t)(n * m), sizeof *d);
            for (int64_t k = 0; k < nv; k++) {
                vals[k] = l->re[k] + cx_im(k) * I;
                int64_t r, c;
                cx_coord(l, k, &r, &c);
                d[r * m + c] += vals[k];
            }
            clt_tensor *ci = up_i64(dev, 1, (int64_t[]){l->ncmp}, l->cmp),
                       *pi = up_i64(dev, 1, (int64_t[]){l->nnz}, l->plain),
                       *vt = up_cx(dev, dts[q], l->blocks ? 3 : 1,
                                   l->blocks ? (int64_t[]){l->nnz, 2, 2} : (int64_t[]){nv}, vals,
                                   nv);
            CHECK(clt_set_requires_grad(vt, 1));
            clt_sparse *s = NULL;
            CHECK(l->make(ci, pi, vt, (int64_t[]){n, m}, 1, &s));
            for (int pk = 0; pk < 3; pk++) {
                int64_t p = ps[pk];
                char what[96];
                double complex *x = malloc((size_t)(m * p) * sizeof *x),
                               *want = calloc((size_t)(n * p), sizeof *want),
                               *row = malloc((size_t)p * sizeof *row),
                               *w2 = malloc((size_t)(n * p) * sizeof *w2);
                for (int64_t i = 0; i < m * p; i++)
                    x[i] = (double)((i * 5) % 7 - 3) / 4 + (double)((i * 3) % 5 - 2) / 8 * I;
                for (int64_t i = 0; i < n; i++)
                    for (int64_t k = 0; k < m; k++)
                        for (int64_t j = 0; j < p; j++)
                            want[i * p + j] += d[i * m + k] * x[k * p + j];
                clt_tensor *xt = up_cx(dev, dts[q], 2, (int64_t[]){m, p}, x, m * p), *y = NULL;
                CHECK(clt_set_requires_grad(xt, 1));
                snprintf(what, sizeof what, "%s %s mm p=%lld", clt_dtype_name(dts[q]), l->name,
                         (long long)p);
                CHECK(clt_sparse_mm(s, xt, &y));
                assert_shape(y, 2, (int64_t[]){n, p});
                assert_cx_close(y, want, n * p, tol[q], what);
                if (p == 5) {
                    /* y.backward(g): values' gradient g x^H at the entries,
                     * x's A^H g */
                    double complex *g = malloc((size_t)(n * p) * sizeof *g),
                                   *gv = calloc((size_t)nv, sizeof *gv),
                                   *gx = calloc((size_t)(m * p), sizeof *gx);
                    for (int64_t i = 0; i < n * p; i++)
                        g[i] = (double)(i % 3 - 1) / 2 + (double)(i % 4) / 4 * I;
                    for (int64_t k = 0; k < nv; k++) {
                        int64_t r, c;
                        cx_coord(l, k, &r, &c);
                        for (int64_t j = 0; j < p; j++) {
                            gv[k] += g[r * p + j] * conj(x[c * p + j]);
                            gx[c * p + j] += conj(vals[k]) * g[r * p + j];
                        }
                    }
                    clt_tensor *gt = up_cx(dev, dts[q], 2, (int64_t[]){n, p}, g, n * p),
                               *got = NULL;
                    CHECK(clt_backward(y, gt, 0));
                    CHECK(clt_grad(vt, &got));
                    snprintf(what, sizeof what, "%s %s values' gradient", clt_dtype_name(dts[q]),
                             l->name);
                    assert_cx_close(got, gv, nv, tol[q], what);
                    clt_tensor_free(got);
                    CHECK(clt_grad(xt, &got));
                    snprintf(what, sizeof what, "%s %s x's gradient", clt_dtype_name(dts[q]),
                             l->name);
                    assert_cx_close(got, gx, m * p, tol[q], what);
                    clt_tensor_free(got);
                    clt_tensor_free(gt);
                    free(g);
                    free(gv);
                    free(gx);
                }
                clt_tensor_free(y);
                /* addmm with a broadcast complex row: beta 0.5, alpha -2 */
                for (int64_t j = 0; j < p; j++)
                    row[j] = (double)(j % 3) / 2 - (double)(j % 2) * I;
                for (int64_t i = 0; i < n * p; i++)
                    w2[i] = 0.5 * row[i % p] - 2 * want[i];
                clt_tensor *rt = up_cx(dev, dts[q], 1, (int64_t[]){p}, row, p);
                CHECK(clt_sparse_addmm(rt, s, xt, 0.5, -2, &y));
                snprintf(what, sizeof what, "%s %s addmm p=%lld", clt_dtype_name(dts[q]),
                         l->name, (long long)p);
                assert_cx_close(y, w2, n * p, tol[q], what);
                clt_tensor_free(y);
                if (p == 1) { /* mv: the column as a vector */
                    clt_tensor *v = up_cx(dev, dts[q], 1, (int64_t[]){m}, x, m);
                    CHECK(clt_sparse_mv(s, v, &y));
                    assert_shape(y, 1, (int64_t[]){n});
                    snprintf(what, sizeof what, "%s %s mv", clt_dtype_name(dts[q]), l->name);
                    assert_cx_close(y, want, n, tol[q], what);
                    clt_tensor_free(y);
                    clt_tensor_free(v);
                }
                clt_tensor_free(rt);
                clt_tensor_free(xt);
                free(x);
                free(want);
                free(row);
                free(w2);
            }
            clt_sparse_free(s);
            clt_tensor_free(ci);
            clt_tensor_free(pi);
            clt_tensor_free(vt);
            free(vals);
            free(d);
        }
    /* the kernel itself on complex arrays: CSR K times x [6, 9] (a block
     * of 8 columns and one more) */
    double complex vals[11], x[54], want[63] = {0};
    for (int k = 0; k < 11; k++)
        vals[k] = K_VAL[k] + cx_im(k) * I;
    for (int i = 0; i < 54; i++)
        x[i] = (double)(i % 7) - 3 + (double)(i % 5) / 4 * I;
    for (int64_t i = 0; i < 7; i++)
        for (int64_t k = K_CROW[i]; k < K_CROW[i + 1]; k++)
            for (int j = 0; j < 9; j++)
                want[i * 9 + j] += vals[k] * x[K_COL[k] * 9 + j];
    for (int q = 0; q < 2; q++) {
        clt_tensor *c = up_i64(dev, 1, (int64_t[]){8}, K_CROW),
                   *p = up_i64(dev, 1, (int64_t[]){11}, K_COL),
                   *v = up_cx(dev, dts[q], 1, (int64_t[]){11}, vals, 11),
                   *xt = up_cx(dev, dts[q], 2, (int64_t[]){6, 9}, x, 54), *y = NULL;
        CHECK(clt__spmm_rows(c, p, v, xt, &y, "test"));
        assert_cx_close(y, want, 63, tol[q], "clt__spmm_rows of complex values");
        clt_tensor *ts[] = {c, p, v, xt, y};
        for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
            clt_tensor_free(ts[k]);
    }
}

/* ---- two devices ------------------------------------------------------------------- */

Test(sparse_csr, two_devices)
{
    clt_device *dev = get_device("cpu:0");
    clt_device *dev2 = second_device(dev);
    clt_sparse *s = a_csr(dev, 1), *s2 = NULL, *r = NULL;
    CHECK(clt_sparse_to(s, dev2, &s2));
    cr_assert_eq(clt_sparse_device(s2), dev2);
    cr_assert_eq(clt_sparse_layout(s2), CLT_SPARSE_CSR);
    clt_tensor *cr = NULL;
    CHECK(clt_sparse_crow_indices(s2, &cr));
    cr_assert_eq(clt_tensor_device(cr), dev2);
    assert_i64(cr, A_CROW, 5, "moved crow_indices");
    clt_tensor_free(cr);
    double a[20];
    host_dense(0, 4, 5, A_CROW, A_COL, A_VAL, a);
    assert_dense_of(s2, a, 20, "moved csr");
    assert_error(clt_sparse_add(s, s2, &r), CLT_ERR_DEVICE_MISMATCH, NULL);
    cr_assert_null(r);
    clt_tensor *x = up_f64(dev, 2, (int64_t[]){4, 5}, a);
    assert_error(clt_tensor_sparse_mask(x, s2, &r), CLT_ERR_DEVICE_MISMATCH, NULL);
    cr_assert_null(r);
    clt_tensor *c = up_i64(dev, 1, (int64_t[]){5}, A_CROW), *p = NULL, *v = NULL;
    CHECK(clt_tensor_from_host(dev2, CLT_INT64, 1, (int64_t[]){6}, A_COL, &p));
    v = up_f64(dev, 1, (int64_t[]){6}, A_VAL);
    assert_error(clt_sparse_csr_tensor(c, p, v, (int64_t[]){4, 5}, 1, &r), CLT_ERR_DEVICE_MISMATCH,
                 NULL);
    cr_assert_null(r);
    clt_tensor *ts[] = {x, c, p, v};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(s);
    clt_sparse_free(s2);
}

/* ---- batch dimensions ---------------------------------------------------------------- */

/* Two 3 x 4 matrices of 3 entries each: batch 0 rows 0 (col 2), 2 (0, 3);
 * batch 1 rows 0 (0, 3), 1 (1). */
static const int64_t Q_CROW[8] = {0, 1, 1, 3, 0, 2, 3, 3};
static const int64_t Q_COL[6] = {2, 0, 3, 0, 3, 1};
static const double Q_VAL[6] = {1, -2, 3, 0.5, 4, -1};

/* The dense [2, n, m] of the batched arrays (csc: by columns), batch by
 * batch with host_dense. */
static void host_batch(int csc, int64_t n, int64_t m, double *d)
{
    int64_t major = csc ? m : n;
    for (int b = 0; b < 2; b++)
        host_dense(csc, n, m, Q_CROW + b * (major + 1), Q_COL + 3 * b, Q_VAL + 3 * b, d + b * n * m);
}

static clt_sparse *q_batch(clt_device *dev, int csc, const int64_t *size)
{
    clt_tensor *c = up_i64(dev, 2, (int64_t[]){2, 4}, Q_CROW),
               *p = up_i64(dev, 2, (int64_t[]){2, 3}, Q_COL),
               *v = up_f64(dev, 2, (int64_t[]){2, 3}, Q_VAL);
    clt_sparse *s = NULL;
    if (csc)
        CHECK(clt_sparse_csc_tensor(c, p, v, size, 1, &s));
    else
        CHECK(clt_sparse_csr_tensor(c, p, v, size, 1, &s));
    clt_tensor_free(c);
    clt_tensor_free(p);
    clt_tensor_free(v);
    return s;
}

Test(sparse_csr, batched_construct_accessors_dense)
{
    clt_device *dev = get_device("cpu:0");
    for (int csc = 0; csc < 2; csc++) {
        /* CSC reads the arrays by columns: 2 matrices of 4 x 3 */
        int64_t n = csc ? 4 : 3, m = csc ? 3 : 4;
        double want[24];
        host_batch(csc, n, m, want);
        for (int inferred = 0; inferred < 2; inferred++) {
            clt_sparse *s = q_batch(dev, csc, inferred ? NULL : (int64_t[]){2, n, m});
            cr_assert_eq(clt_sparse_layout(s), csc ? CLT_SPARSE_CSC : CLT_SPARSE_CSR);
            cr_assert_eq(clt_sparse_nnz(s), 3, "nnz per batch");
            cr_assert_eq(clt_sparse_ndim(s), 3);
            cr_assert_eq(clt_sparse_sparse_dim(s), 2);
            cr_assert_eq(clt_sparse_dense_dim(s), 0);
            const int64_t *sh = clt_sparse_shape(s);
            cr_assert(sh[0] == 2 && sh[1] == n && sh[2] == m, "shape [%lld, %lld, %lld]",
                      (long long)sh[0], (long long)sh[1], (long long)sh[2]);
            clt_tensor *cr = NULL, *co = NULL, *v = NULL, *tot = NULL;
            CHECK(csc ? clt_sparse_ccol_indices(s, &cr) : clt_sparse_crow_indices(s, &cr));
            CHECK(csc ? clt_sparse_row_indices(s, &co) : clt_sparse_col_indices(s, &co));
            CHECK(clt_sparse_values(s, &v));
            assert_shape(cr, 2, (int64_t[]){2, 4});
            assert_shape(co, 2, (int64_t[]){2, 3});
            assert_shape(v, 2, (int64_t[]){2, 3});
            assert_i64(cr, Q_CROW, 8, "batched compressed indices");
            assert_i64(co, Q_COL, 6, "batched plain indices");
            assert_tensor_close(v, Q_VAL, 6, 0, 0, "batched values");
            assert_dense_of(s, want, 24, csc ? "batched csc to_dense" : "batched csr to_dense");
            CHECK(clt_sparse_sum(s, &tot));
            assert_tensor_close(tot, (double[]){5.5}, 1, 1e-12, 0, "batched sum");
            /* dense + s: every element doubled */
            clt_tensor *dn = up_f64(dev, 3, (int64_t[]){2, n, m}, want), *twice = NULL;
            CHECK(clt_sparse_add_dense(dn, s, &twice));
            double w2[24];
            for (int k = 0; k < 24; k++)
                w2[k] = 2 * want[k];
            assert_tensor_close(twice, w2, 24, 0, 0, "batched add_dense");
            clt_tensor *ts[] = {cr, co, v, tot, dn, twice};
            for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
                clt_tensor_free(ts[k]);
            clt_sparse_free(s);
        }
    }
}

Test(sparse_csr, batched_construct_errors)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *c = up_i64(dev, 2, (int64_t[]){2, 4}, Q_CROW),
               *p = up_i64(dev, 2, (int64_t[]){2, 3}, Q_COL),
               *p1 = up_i64(dev, 2, (int64_t[]){1, 3}, Q_COL),
               *v = up_f64(dev, 2, (int64_t[]){2, 3}, Q_VAL),
               *v1 = up_f64(dev, 1, (int64_t[]){3}, Q_VAL);
    clt_sparse *s = SENTINEL_SP;
    assert_error(clt_sparse_csr_tensor(c, p1, v, (int64_t[]){2, 3, 4}, 1, &s),
                 CLT_ERR_SHAPE_MISMATCH,
                 "all batch dimensions of crow_indices (=[2]), col_indices (=[1]), and values "
                 "(=[2]) must be equal to tensor batch dimensions (=[2])");
    cr_assert_null(s);
    names_only("clt_sparse_csr_tensor");
    s = SENTINEL_SP;
    assert_error(clt_sparse_csr_tensor(c, p, v, (int64_t[]){3, 3, 4}, 1, &s),
                 CLT_ERR_SHAPE_MISMATCH, "must be equal to tensor batch dimensions (=[3])");
    cr_assert_null(s);
    s = SENTINEL_SP;
    assert_error(clt_sparse_csr_tensor(c, p, v1, (int64_t[]){2, 3, 4}, 1, &s),
                 CLT_ERR_SHAPE_MISMATCH,
                 "values must have dimensionality > sum of batch and block dimensionalities "
                 "(=1 + 0) but got 1");
    cr_assert_null(s);
    /* torch's invariants hold in every batch: each broken in batch 1 only */
    struct {
        int64_t crow[8], col[6];
        clt_status st;
        const char *msg;
    } bad[] = {
        {{0, 1, 1, 3, 1, 2, 3, 3}, {2, 0, 3, 0, 3, 1}, CLT_ERR_INVALID_ARGUMENT,
         "`crow_indices[..., 0] == 0` is not satisfied."},
        {{0, 1, 1, 3, 0, 2, 2, 2}, {2, 0, 3, 0, 3, 1}, CLT_ERR_INVALID_ARGUMENT,
         "`crow_indices[..., -1] == nnz` is not satisfied."},
        {{0, 1, 1, 3, 0, 2, 3, 3}, {2, 0, 3, 0, 4, 1}, CLT_ERR_INDEX_OUT_OF_RANGE,
         "`0 <= col_indices < ncols` is not satisfied."},
        {{0, 1, 1, 3, 0, 2, 3, 3}, {2, 0, 3, 3, 0, 1}, CLT_ERR_INVALID_ARGUMENT,
         "are sorted and distinct along the last dimension values` is not satisfied."},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        clt_tensor *bc = up_i64(dev, 2, (int64_t[]){2, 4}, bad[k].crow),
                   *bp = up_i64(dev, 2, (int64_t[]){2, 3}, bad[k].col);
        s = SENTINEL_SP;
        assert_error(clt_sparse_csr_tensor(bc, bp, v, (int64_t[]){2, 3, 4}, 1, &s), bad[k].st,
                     bad[k].msg);
        cr_assert_null(s);
        /* trusted without the check: built (wrong values, never a wrong read) */
        CHECK(clt_sparse_csr_tensor(bc, bp, v, (int64_t[]){2, 3, 4}, 0, &s));
        clt_sparse_free(s);
        clt_tensor_free(bc);
        clt_tensor_free(bp);
    }
    clt_tensor *ts[] = {c, p, p1, v, v1};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
}

Test(sparse_csr, batched_conversions)
{
    clt_device *dev = get_device("cpu:0");
    double d[24], dt[24];
    host_batch(0, 3, 4, d);
    clt_tensor *t = up_f64(dev, 3, (int64_t[]){2, 3, 4}, d);
    clt_sparse *csr = NULL, *csc = NULL, *back = NULL, *r = SENTINEL_SP;
    CHECK(clt_tensor_to_sparse_csr(t, &csr));
    cr_assert_eq(clt_sparse_nnz(csr), 3);
    clt_tensor *cr = NULL, *co = NULL, *v = NULL;
    CHECK(clt_sparse_crow_indices(csr, &cr));
    CHECK(clt_sparse_col_indices(csr, &co));
    CHECK(clt_sparse_values(csr, &v));
    assert_i64(cr, Q_CROW, 8, "crow_indices of a 3-D tensor");
    assert_i64(co, Q_COL, 6, "col_indices of a 3-D tensor");
    assert_tensor_close(v, Q_VAL, 6, 0, 0, "values of a 3-D tensor");
    clt_tensor_free(cr);
    clt_tensor_free(co);
    clt_tensor_free(v);
    /* CSC of each batch, by columns (torch: ccol [[0, 1, 1, 2, 3], [0, 1, 2, 2, 3]]) */
    CHECK(clt_tensor_to_sparse_csc(t, &csc));
    CHECK(clt_sparse_ccol_indices(csc, &cr));
    CHECK(clt_sparse_row_indices(csc, &co));
    CHECK(clt_sparse_values(csc, &v));
    assert_i64(cr, (int64_t[]){0, 1, 1, 2, 3, 0, 1, 2, 2, 3}, 10, "ccol_indices");
    assert_i64(co, (int64_t[]){2, 0, 2, 0, 1, 0}, 6, "row_indices");
    assert_tensor_close(v, (double[]){-2, 1, 3, 0.5, -1, 4}, 6, 0, 0, "csc values");
    clt_tensor_free(cr);
    clt_tensor_free(co);
    clt_tensor_free(v);
    assert_dense_of(csc, d, 24, "batched csc of dense");
    CHECK(clt_sparse_to_sparse_csr(csc, &back));
    CHECK(clt_sparse_crow_indices(back, &cr));
    assert_i64(cr, Q_CROW, 8, "csc back to csr");
    clt_tensor_free(cr);
    assert_dense_of(back, d, 24, "csc back to csr, dense");
    clt_sparse_free(back);
    /* a sum of two batched CSR: every entry doubled */
    CHECK(clt_sparse_add(csr, csr, &back));
    for (int k = 0; k < 24; k++)
        dt[k] = 2 * d[k];
    assert_dense_of(back, dt, 24, "batched csr + csr");
    clt_sparse_free(back);
    /* torch's rules: as many entries per batch, a batch not empty, no COO */
    d[1] = 7; /* a fourth entry in batch 0 */
    clt_tensor *uneven = up_f64(dev, 3, (int64_t[]){2, 3, 4}, d);
    assert_error(clt_tensor_to_sparse_csr(uneven, &r), CLT_ERR_INVALID_ARGUMENT,
                 "Expect the same number of specified elements per batch.");
    cr_assert_null(r);
    names_only("clt_tensor_to_sparse_csr");
    r = SENTINEL_SP;
    assert_error(clt_tensor_to_sparse_bsc(uneven, (int64_t[]){1, 2}, &r), CLT_ERR_INVALID_ARGUMENT,
                 "Expect the same number of specified elements per batch.");
    cr_assert_null(r);
    clt_tensor *empty = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 3, (int64_t[]){0, 3, 4}, &empty));
    r = SENTINEL_SP;
    assert_error(clt_tensor_to_sparse_csc(empty, &r), CLT_ERR_SHAPE_MISMATCH,
                 "to_sparse_csc: Expected product of batch dimensions to be non-zero.");
    cr_assert_null(r);
    r = SENTINEL_SP;
    assert_error(clt_sparse_to_sparse_coo(csr, &r), CLT_ERR_INVALID_ARGUMENT,
                 "crow_indices is supposed to be a vector");
    cr_assert_null(r);
    clt_tensor *ts[] = {t, uneven, empty};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse_free(csr);
    clt_sparse_free(csc);
}

Test(sparse_csr, batched_blocks)
{
    clt_device *dev = get_device("cpu:0");
    /* [2, 4, 4] with 2 x 2 blocks: batch 0 blocks (0, 0) and (1, 1), batch 1
     * blocks (0, 1) and (1, 0) */
    double d[32] = {0};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if ((i / 2 == j / 2) == (b == 0) && (i + 2 * j + b) % 3 != 0)
                    d[b * 16 + i * 4 + j] = 1 + i + 4 * j + 16 * b;
    clt_tensor *t = up_f64(dev, 3, (int64_t[]){2, 4, 4}, d);
    for (int bsc = 0; bsc < 2; bsc++) {
        clt_sparse *s = NULL, *tr = NULL, *el = NULL;
        CHECK(bsc ? clt_tensor_to_sparse_bsc(t, (int64_t[]){2, 2}, &s)
                  : clt_tensor_to_sparse_bsr(t, (int64_t[]){2, 2}, &s));
        cr_assert_eq(clt_sparse_nnz(s), 2);
        clt_tensor *cr = NULL, *co = NULL, *v = NULL;
        CHECK(bsc ? clt_sparse_ccol_indices(s, &cr) : clt_sparse_crow_indices(s, &cr));
        CHECK(bsc ? clt_sparse_row_indices(s, &co) : clt_sparse_col_indices(s, &co));
        CHECK(clt_sparse_values(s, &v));
        assert_i64(cr, (int64_t[]){0, 1, 2, 0, 1, 2}, 6, "blocked compressed indices");
        assert_i64(co, (int64_t[]){0, 1, 1, 0}, 4, "blocked plain indices");
        assert_shape(v, 4, (int64_t[]){2, 2, 2, 2});
        /* the blocks, each row-major, in block order */
        double want[16];
        int64_t bl[4][3] = {{0, 0, 0}, {0, 1, 1}, {1, bsc ? 1 : 0, bsc ? 0 : 1},
                            {1, bsc ? 0 : 1, bsc ? 1 : 0}};
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    want[k * 4 + i * 2 + j] =
                        d[bl[k][0] * 16 + (bl[k][1] * 2 + i) * 4 + bl[k][2] * 2 + j];
        assert_tensor_close(v, want, 16, 0, 0, "blocked values");
        assert_dense_of(s, d, 32, "batched blocks to_dense");
        /* the transpose of the last two dims is the other blocked layout */
        double dt[32];
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    dt[b * 16 + j * 4 + i] = d[b * 16 + i * 4 + j];
        CHECK(clt_sparse_transpose(s, -1, -2, &tr));
        cr_assert_eq(clt_sparse_layout(tr), bsc ? CLT_SPARSE_BSR : CLT_SPARSE_BSC);
        assert_dense_of(tr, dt, 32, "batched blocks transposed");
        CHECK(clt_sparse_to_sparse_csr(s, &el));
        assert_dense_of(el, d, 32, "batched blocks to csr");
        clt_tensor_free(cr);
        clt_tensor_free(co);
        clt_tensor_free(v);
        clt_sparse_free(s);
        clt_sparse_free(tr);
        clt_sparse_free(el);
    }
    clt_tensor_free(t);
}

Test(sparse_csr, batched_transposes)
{
    clt_device *dev = get_device("cpu:0");
    clt_sparse *s = q_batch(dev, 0, NULL), *t = NULL, *r = SENTINEL_SP;
    double d[24], dt[24];
    host_batch(0, 3, 4, d);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                dt[b * 12 + j * 3 + i] = d[b * 12 + i * 4 + j];
    CHECK(clt_sparse_transpose(s, 1, 2, &t));
    cr_assert_eq(clt_sparse_layout(t), CLT_SPARSE_CSC);
    assert_dense_of(t, dt, 24, "batched csr transposed");
    clt_sparse_free(t);
    assert_error(clt_sparse_transpose(s, 0, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "transpose(): can only transpose dimensions of the same type (Batch, Sparse, "
                 "Dense), got 0(Batch) and 1(Sparse)");
    cr_assert_null(r);
    names_only("clt_sparse_transpose");
    /* two batch dimensions exchanged: [1, 2, 3, 4] to [2, 1, 3, 4] */
    clt_tensor *t4 = up_f64(dev, 4, (int64_t[]){1, 2, 3, 4}, d);
    clt_sparse *s4 = NULL;
    CHECK(clt_tensor_to_sparse_csr(t4, &s4));
    CHECK(clt_sparse_transpose(s4, 0, 1, &t));
    cr_assert_eq(clt_sparse_shape(t)[0], 2);
    cr_assert_eq(clt_sparse_shape(t)[1], 1);
    assert_dense_of(t, d, 24, "batch dims exchanged");
    clt_tensor *cr = NULL;
    CHECK(clt_sparse_crow_indices(t, &cr));
    assert_shape(cr, 3, (int64_t[]){2, 1, 4});
    assert_i64(cr, Q_CROW, 8, "crow after the batch transpose");
    clt_tensor_free(cr);
    clt_sparse_free(t);
    clt_sparse_free(s4);
    clt_tensor_free(t4);
    clt_sparse_free(s);
}

/* The batched product on the host: a [2, n, m] (dense) times b [2, m, p]. */
static void host_bmm(const double *a, const double *b, int64_t n, int64_t m, int64_t p, double *o)
{
    for (int q = 0; q < 2; q++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < p; j++) {
                double acc = 0;
                for (int64_t k = 0; k < m; k++)
                    acc += a[q * n * m + i * m + k] * b[q * m * p + k * p + j];
                o[q * n * p + i * p + j] = acc;
            }
}

Test(sparse_csr, batched_products_and_refusals)
{
    clt_device *dev = get_device("cpu:0");
    double a[24], x[40], want[40], in[5] = {1, -1, 2, 0.5, 3};
    host_batch(0, 3, 4, a);
    for (int k = 0; k < 40; k++)
        x[k] = (k * 7 % 11) - 5 + 0.25 * k;
    host_bmm(a, x, 3, 4, 5, want);
    clt_tensor *b = up_f64(dev, 3, (int64_t[]){2, 4, 5}, x),
               *bias = up_f64(dev, 1, (int64_t[]){5}, in), *dense = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, (int64_t[]){2, 3, 4}, a, &dense));
    clt_sparse *csr = q_batch(dev, 0, NULL), *csc = NULL, *bsr = NULL, *coo_path = NULL;
    CHECK(clt_sparse_to_sparse_csc(csr, &csc));
    CHECK(clt_tensor_to_sparse_bsr(dense, (int64_t[]){1, 2}, &bsr));
    clt_sparse *all[3] = {csr, csc, bsr};
    for (int k = 0; k < 3; k++) {
        clt_tensor *y = NULL, *z = NULL;
        CHECK(clt_sparse_mm(all[k], b, &y));
        assert_shape(y, 3, (int64_t[]){2, 3, 5});
        assert_tensor_close(y, want, 30, 1e-12, 1e-12, "batched mm");
        CHECK(clt_sparse_addmm(bias, all[k], b, 0.5, -2, &z));
        double w2[30];
        for (int i = 0; i < 30; i++)
            w2[i] = 0.5 * in[i % 5] - 2 * want[i];
        assert_tensor_close(z, w2, 30, 1e-12, 1e-12, "batched addmm");
        clt_tensor_free(y);
        clt_tensor_free(z);
    }
    /* int64 values go the index_add way */
    int64_t ia[24], ix[40], iw[30];
    for (int k = 0; k < 24; k++)
        ia[k] = (int64_t)(a[k] * 2);
    for (int k = 0; k < 40; k++)
        ix[k] = k % 7 - 3;
    double fa[24], fx[40], fw[30];
    for (int k = 0; k < 24; k++)
        fa[k] = (double)ia[k];
    for (int k = 0; k < 40; k++)
        fx[k] = (double)ix[k];
    host_bmm(fa, fx, 3, 4, 5, fw);
    for (int k = 0; k < 30; k++)
        iw[k] = (int64_t)fw[k];
    clt_tensor *it = up_i64(dev, 3, (int64_t[]){2, 3, 4}, ia),
               *ib = up_i64(dev, 3, (int64_t[]){2, 4, 5}, ix), *iy = NULL;
    CHECK(clt_tensor_to_sparse_csr(it, &coo_path));
    CHECK(clt_sparse_mm(coo_path, ib, &iy));
    assert_i64(iy, iw, 30, "batched int64 mm");
    clt_tensor_free(iy);
    /* errors */
    clt_tensor *r = (clt_tensor *)1, *b2 = up_f64(dev, 2, (int64_t[]){4, 5}, x),
               *b3 = up_f64(dev, 3, (int64_t[]){1, 4, 5}, x), *v = up_f64(dev, 1, (int64_t[]){4}, x);
    assert_error(clt_sparse_mm(csr, b2, &r), CLT_ERR_SHAPE_MISMATCH, "expected 3-D dense");
    cr_assert_null(r);
    names_only("clt_sparse_mm");
    r = (clt_tensor *)1;
    assert_error(clt_sparse_mm(csr, b3, &r), CLT_ERR_SHAPE_MISMATCH,
                 "batch sizes of both operands to match, but got [2] and [1]");
    cr_assert_null(r);
    r = (clt_tensor *)1;
    assert_error(clt_sparse_mv(csr, v, &r), CLT_ERR_SHAPE_MISMATCH, "mv: two tensor dim");
    cr_assert_null(r);
    /* torch 1.13 refuses these for batches (sparse_mask_sparse_csr) */
    clt_sparse *rs = SENTINEL_SP;
    assert_error(clt_sparse_mul_scalar(csr, 2, &rs), CLT_ERR_SHAPE_MISMATCH,
                 "sparse_mask_sparse_csr expects self to be 2D");
    cr_assert_null(rs);
    names_only("clt_sparse_mul_scalar");
    rs = SENTINEL_SP;
    assert_error(clt_tensor_sparse_mask(dense, csr, &rs), CLT_ERR_SHAPE_MISMATCH,
                 "sparse_mask_sparse_csr expects self to be 2D");
    cr_assert_null(rs);
    rs = SENTINEL_SP;
    assert_error(clt_sparse_sampled_addmm(csr, b2, b2, 1, 1, &rs), CLT_ERR_SHAPE_MISMATCH,
                 "sparse_mask_sparse_csr expects self to be 2D");
    cr_assert_null(rs);
    clt_tensor *ts[] = {b, bias, dense, it, ib, b2, b3, v};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++)
        clt_tensor_free(ts[k]);
    clt_sparse *ss[] = {csr, csc, bsr, coo_path};
    for (size_t k = 0; k < sizeof ss / sizeof *ss; k++)
        clt_sparse_free(ss[k]);
}

/* in[0]: batched CSR values [2, 3] of Q's pattern, in[1]: dense [2, 4, 2],
 * in[2]: [2, 3, 2]; mm of the CSR matrix, of its CSC copy's transpose's
 * transpose (the sorting path), and addmm, summed. */
static clt_status gc_batched(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_device *dev = clt_tensor_device(in[0]);
    clt_tensor *c = NULL, *p = NULL, *y = NULL, *z = NULL, *w = NULL;
    clt_sparse *s = NULL, *t = NULL;
    clt_status st = clt_tensor_from_host(dev, CLT_INT64, 2, (int64_t[]){2, 4}, Q_CROW, &c);
    if (st == CLT_OK)
        st = clt_tensor_from_host(dev, CLT_INT64, 2, (int64_t[]){2, 3}, Q_COL, &p);
    if (st == CLT_OK)
        st = clt_sparse_csr_tensor(c, p, in[0], (int64_t[]){2, 3, 4}, 1, &s);
    if (st == CLT_OK)
        st = clt_sparse_to_sparse_csc(s, &t);
    if (st == CLT_OK)
        st = clt_sparse_mm(s, in[1], &y);
    if (st == CLT_OK)
        st = clt_sparse_addmm(in[2], t, in[1], 1.5, -0.5, &z);
    if (st == CLT_OK)
        st = clt_add(y, z, &w);
    if (st == CLT_OK)
        st = clt_flatten(w, 0, 2, out);
    clt_tensor *ts[] = {c, p, y, z, w};
    for (size_t q = 0; q < sizeof ts / sizeof *ts; q++)
        clt_tensor_free(ts[q]);
    clt_sparse_free(s);
    clt_sparse_free(t);
    return st;
}

Test(sparse_csr, gradcheck_batched)
{
    clt_device *dev = get_device("cpu:0");
    double *v = spread_doubles(6, 4), *b = spread_doubles(16, 5), *x = spread_doubles(12, 6);
    gc_in ins[3] = {{2, {2, 3}, v, 1}, {3, {2, 4, 2}, b, 1}, {3, {2, 3, 2}, x, 1}};
    gradcheck(dev, gc_batched, NULL, 3, ins);
    free(v);
    free(b);
    free(x);
}

Test(sparse_csr, batched_two_devices)
{
    clt_device *dev = get_device("cpu:0");
    clt_device *dev2 = second_device(dev);
    clt_sparse *s = q_batch(dev, 0, NULL), *s2 = NULL;
    CHECK(clt_sparse_to(s, dev2, &s2));
    cr_assert_eq(clt_sparse_device(s2), dev2);
    cr_assert_eq(clt_sparse_nnz(s2), 3);
    clt_tensor *cr = NULL;
    CHECK(clt_sparse_crow_indices(s2, &cr));
    assert_shape(cr, 2, (int64_t[]){2, 4});
    assert_i64(cr, Q_CROW, 8, "moved batched crow");
    clt_tensor_free(cr);
    double d[24];
    host_batch(0, 3, 4, d);
    assert_dense_of(s2, d, 24, "moved batched csr");
    clt_sparse_free(s);
    clt_sparse_free(s2);
}
