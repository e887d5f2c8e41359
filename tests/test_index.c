/* test_index.c: index_select, gather, scatter, scatter_add, index_add (and
 * the in-place forms), masked_fill, one_hot and embedding against host
 * references computed here: every dimension, negative dims, transposed and
 * sliced operands, zero-size and 0-d tensors, several dtypes; the sums
 * bit for bit against a sequential loop and between devices; out-of-range
 * indices reported at the next synchronisation (and not before); the
 * errors found from shapes and dtypes; and the gradients against finite
 * differences. */
#include <stdint.h>
#include <stdio.h>

#include "gradcheck.h"
#include "internal.h"

/* ---- host-side tensors ----------------------------------------------------------- */

/* A contiguous tensor of `dtype` holding vals (row-major). */
static clt_tensor *mk(clt_device *dev, clt_dtype dtype, int nd, const int64_t *shape,
                      const double *vals)
{
    int64_t n = host_numel(nd, shape);
    size_t es = clt_dtype_size(dtype);
    unsigned char *buf = malloc((size_t)(n ? n : 1) * es);
    cr_assert_not_null(buf);
    for (int64_t i = 0; i < n; i++)
        clt__element_from_double(dtype, vals[i], buf + (size_t)i * es);
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, dtype, nd, shape, buf, &t));
    free(buf);
    return t;
}

/* A view with logical shape `shape` and values vals that is the transpose
 * of dims d0 and d1 of a contiguous tensor (so not contiguous itself). */
static clt_tensor *mk_transposed(clt_device *dev, clt_dtype dtype, int nd, const int64_t *shape,
                                 const double *vals, int d0, int d1)
{
    int64_t bs[CLT_MAX_DIMS], c[CLT_MAX_DIMS];
    memcpy(bs, shape, sizeof(int64_t) * (size_t)nd);
    bs[d0] = shape[d1];
    bs[d1] = shape[d0];
    int64_t n = host_numel(nd, shape);
    double *bv = malloc((size_t)(n ? n : 1) * sizeof *bv);
    for (int64_t i = 0; i < n; i++) {
        host_unravel(i, nd, shape, c);
        int64_t t = c[d0];
        c[d0] = c[d1];
        c[d1] = t;
        bv[host_ravel(c, nd, bs)] = vals[i];
    }
    clt_tensor *base = mk(dev, dtype, nd, bs, bv), *v = NULL;
    CHECK(clt_transpose(base, d0, d1, &v));
    if (shape[d0] > 1 && shape[d1] > 1)
        cr_assert_not(clt_tensor_is_contiguous(v));
    clt_tensor_free(base);
    free(bv);
    return v;
}

/* A view with logical shape `shape` and values vals that takes every
 * step-th element of dim from 1 on, in a base whose other elements hold
 * `junk` (an index far out of range, so that a wrong read shows). */
static clt_tensor *mk_sliced(clt_device *dev, clt_dtype dtype, int nd, const int64_t *shape,
                             const double *vals, int dim, int64_t step, double junk)
{
    int64_t bs[CLT_MAX_DIMS], c[CLT_MAX_DIMS];
    memcpy(bs, shape, sizeof(int64_t) * (size_t)nd);
    bs[dim] = shape[dim] * step + 1;
    int64_t bn = host_numel(nd, bs), n = host_numel(nd, shape);
    double *bv = malloc((size_t)(bn ? bn : 1) * sizeof *bv);
    for (int64_t i = 0; i < bn; i++)
        bv[i] = junk;
    for (int64_t i = 0; i < n; i++) {
        host_unravel(i, nd, shape, c);
        c[dim] = 1 + c[dim] * step;
        bv[host_ravel(c, nd, bs)] = vals[i];
    }
    clt_tensor *base = mk(dev, dtype, nd, bs, bv), *v = NULL;
    CHECK(clt_slice(base, dim, 1, INT64_MAX, step, &v));
    cr_assert_eq(clt_tensor_size(v, dim), shape[dim]);
    clt_tensor_free(base);
    free(bv);
    return v;
}

/* The values of t, row-major, as doubles (malloc'd). */
static double *rd(const clt_tensor *t)
{
    int64_t n = clt_tensor_numel(t);
    size_t es = clt_dtype_size(clt_tensor_dtype(t));
    unsigned char *buf = malloc((size_t)(n ? n : 1) * es);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    CHECK(clt_tensor_read(t, buf, (size_t)n * es));
    for (int64_t i = 0; i < n; i++)
        v[i] = clt__element_to_double(clt_tensor_dtype(t), buf + (size_t)i * es);
    free(buf);
    return v;
}

static void assert_values(const clt_tensor *t, const double *want, int64_t n)
{
    cr_assert_eq(clt_tensor_numel(t), n);
    double *got = rd(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %lld: got %.17g, want %.17g", (long long)i, got[i], want[i]);
    free(got);
}

/* Distinct values that every dtype holds exactly (bool: 0/1). */
static double *values(clt_dtype dtype, int64_t n, unsigned seed)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int r = (int)((seed >> 8) % 200);
        v[i] = dtype == CLT_BOOL ? (r & 1)
               : dtype == CLT_UINT8 ? r
               : clt__dtype_is_float(dtype) ? (r - 100) * 0.25
                                            : r - 100;
    }
    return v;
}

static double *indices(int64_t n, int64_t size, unsigned seed)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((seed >> 8) % (uint64_t)size);
    }
    return v;
}

static clt_device *cpu0(void)
{
    return get_device("cpu:0");
}

/* ---- host references ------------------------------------------------------------- */

static double *ref_index_select(int nd, const int64_t *shape, const double *t, int dim,
                                const double *idx, int64_t count, int64_t *oshape)
{
    memcpy(oshape, shape, sizeof(int64_t) * (size_t)nd);
    oshape[dim] = count;
    int64_t n = host_numel(nd, oshape), c[CLT_MAX_DIMS];
    double *o = malloc((size_t)(n ? n : 1) * sizeof *o);
    for (int64_t i = 0; i < n; i++) {
        host_unravel(i, nd, oshape, c);
        c[dim] = (int64_t)idx[c[dim]];
        o[i] = t[host_ravel(c, nd, shape)];
    }
    return o;
}

static double *ref_gather(int nd, const int64_t *shape, const double *t, int dim,
                          const int64_t *ishape, const double *idx)
{
    int64_t n = host_numel(nd, ishape), c[CLT_MAX_DIMS];
    double *o = malloc((size_t)(n ? n : 1) * sizeof *o);
    for (int64_t i = 0; i < n; i++) {
        host_unravel(i, nd, ishape, c);
        c[dim] = (int64_t)idx[i];
        o[i] = t[host_ravel(c, nd, shape)];
    }
    return o;
}

/* Sequential scatter over index positions in row-major order, in float32
 * arithmetic (add) or assignment: the order that fixes the bits. */
static float *ref_scatter_f32(int nd, const int64_t *shape, const double *t, int dim,
                              const int64_t *ishape, const double *idx,
                              const int64_t *sshape, const double *src, bool add)
{
    int64_t n = host_numel(nd, shape), ni = host_numel(nd, ishape), c[CLT_MAX_DIMS];
    float *o = malloc((size_t)(n ? n : 1) * sizeof *o);
    for (int64_t i = 0; i < n; i++)
        o[i] = (float)t[i];
    for (int64_t i = 0; i < ni; i++) {
        host_unravel(i, nd, ishape, c);
        float v = (float)src[host_ravel(c, nd, sshape)];
        c[dim] = (int64_t)idx[i];
        int64_t j = host_ravel(c, nd, shape);
        volatile float sum = o[j] + v;
        o[j] = add ? sum : v;
    }
    return o;
}

/* index_add in float32: o[.., idx[k], ..] += alpha * src[.., k, ..] for k in
 * order, the product rounded before the sum. */
static float *ref_index_add_f32(int nd, const int64_t *shape, const double *t, int dim,
                                const double *idx, int64_t count, const double *src,
                                float alpha)
{
    int64_t sshape[CLT_MAX_DIMS], c[CLT_MAX_DIMS];
    memcpy(sshape, shape, sizeof(int64_t) * (size_t)nd);
    sshape[dim] = count;
    int64_t n = host_numel(nd, shape), ns = host_numel(nd, sshape);
    float *o = malloc((size_t)(n ? n : 1) * sizeof *o);
    for (int64_t i = 0; i < n; i++)
        o[i] = (float)t[i];
    for (int64_t i = 0; i < ns; i++) {
        host_unravel(i, nd, sshape, c);
        c[dim] = (int64_t)idx[c[dim]];
        int64_t j = host_ravel(c, nd, shape);
        volatile float prod = alpha * (float)src[i];
        volatile float sum = o[j] + prod;
        o[j] = sum;
    }
    return o;
}

static void assert_bits_f32(const clt_tensor *t, const float *want, int64_t n)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_numel(t), n);
    float *got = read_f32(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                  "element %lld: got %.9g, want %.9g (bits differ)", (long long)i,
                  (double)got[i], (double)want[i]);
    free(got);
}

static const clt_dtype all_dtypes[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                                       CLT_INT64,   CLT_UINT8,   CLT_BOOL};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* ---- index_select ---------------------------------------------------------------- */

Test(index, index_select_every_dim_and_dtype)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {4, 5, 3};
    for (size_t k = 0; k < N_DTYPES; k++) {
        clt_dtype dt = all_dtypes[k];
        if (!clt_device_supports_dtype(dev, dt))
            continue;
        double *tv = values(dt, 60, 7 + (unsigned)k);
        clt_tensor *t = mk(dev, dt, 3, shape, tv);
        for (int dim = -3; dim < 3; dim++) {
            int w = dim < 0 ? dim + 3 : dim;
            double *iv = indices(7, shape[w], 11 + (unsigned)dim); /* repeats */
            int64_t seven = 7, oshape[3];
            clt_tensor *idx = mk(dev, CLT_INT64, 1, &seven, iv), *r = NULL;
            CHECK(clt_index_select(t, dim, idx, &r));
            double *want = ref_index_select(3, shape, tv, w, iv, 7, oshape);
            cr_assert_eq(clt_tensor_dtype(r), dt);
            assert_shape(r, 3, oshape);
            assert_values(r, want, host_numel(3, oshape));
            free(want);
            free(iv);
            clt_tensor_free(idx);
            clt_tensor_free(r);
        }
        clt_tensor_free(t);
        free(tv);
    }
}

Test(index, index_select_strided_operands)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {3, 6, 4}, five = 5, oshape[3];
    double *tv = values(CLT_FLOAT32, 72, 3);
    double iv[5] = {5, 0, 2, 2, 4};
    /* t transposed (dims 0 and 2 of a [4, 6, 3]), index every other element. */
    clt_tensor *t = mk_transposed(dev, CLT_FLOAT32, 3, shape, tv, 0, 2);
    clt_tensor *idx = mk_sliced(dev, CLT_INT64, 1, &five, iv, 0, 2, 1e6);
    cr_assert_not(clt_tensor_is_contiguous(idx));
    clt_tensor *r = NULL;
    CHECK(clt_index_select(t, 1, idx, &r));
    double *want = ref_index_select(3, shape, tv, 1, iv, 5, oshape);
    assert_shape(r, 3, oshape);
    assert_values(r, want, host_numel(3, oshape));
    clt_tensor_free(r);
    free(want);

    /* t sliced along the selected dim itself. */
    clt_tensor *s = mk_sliced(dev, CLT_FLOAT32, 3, shape, tv, 1, 3, -1.0);
    CHECK(clt_index_select(s, -2, idx, &r));
    want = ref_index_select(3, shape, tv, 1, iv, 5, oshape);
    assert_values(r, want, host_numel(3, oshape));
    free(want);
    clt_tensor_free(r);
    clt_tensor_free(s);
    clt_tensor_free(t);
    clt_tensor_free(idx);
    free(tv);
}

Test(index, index_select_zero_size_and_scalars)
{
    clt_device *dev = cpu0();
    int64_t shape[2] = {3, 4}, zero = 0, one = 1;
    double *tv = values(CLT_INT32, 12, 5);
    clt_tensor *t = mk(dev, CLT_INT32, 2, shape, tv), *r = NULL;

    /* An empty index gives an empty dimension. */
    clt_tensor *empty = mk(dev, CLT_INT64, 1, &zero, NULL);
    CHECK(clt_index_select(t, 1, empty, &r));
    assert_shape(r, 2, (int64_t[]){3, 0});
    clt_tensor_free(r);

    /* A tensor with a zero-size dimension elsewhere. */
    int64_t zshape[2] = {0, 4};
    clt_tensor *z = mk(dev, CLT_INT32, 2, zshape, NULL);
    double i2[2] = {3, 1};
    int64_t two = 2;
    clt_tensor *idx2 = mk(dev, CLT_INT64, 1, &two, i2);
    CHECK(clt_index_select(z, 1, idx2, &r));
    assert_shape(r, 2, (int64_t[]){0, 2});
    clt_tensor_free(r);

    /* A 0-d index selects one slice and keeps the dimension. */
    double i0 = 2;
    clt_tensor *idx0 = mk(dev, CLT_INT64, 0, NULL, &i0);
    CHECK(clt_index_select(t, 0, idx0, &r));
    assert_shape(r, 2, (int64_t[]){1, 4});
    assert_values(r, tv + 8, 4);
    clt_tensor_free(r);

    /* A 0-d tensor with a one-element index stays 0-d. */
    double sv = 42;
    clt_tensor *s = mk(dev, CLT_INT32, 0, NULL, &sv);
    double i1 = 0;
    clt_tensor *idx1 = mk(dev, CLT_INT64, 1, &one, &i1);
    CHECK(clt_index_select(s, -1, idx1, &r));
    assert_shape(r, 0, NULL);
    assert_values(r, &sv, 1);
    clt_tensor_free(r);
    cr_assert_eq(clt_index_select(s, 0, idx2, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(r);

    clt_tensor_free(s);
    clt_tensor_free(idx0);
    clt_tensor_free(idx1);
    clt_tensor_free(idx2);
    clt_tensor_free(z);
    clt_tensor_free(empty);
    clt_tensor_free(t);
    free(tv);
}

/* ---- gather ---------------------------------------------------------------------- */

Test(index, gather_every_dim_and_strides)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {4, 5, 6};
    double *tv = values(CLT_FLOAT32, 120, 9);
    clt_tensor *plain = mk(dev, CLT_FLOAT32, 3, shape, tv);
    clt_tensor *trans = mk_transposed(dev, CLT_FLOAT32, 3, shape, tv, 1, 2);
    for (int dim = -3; dim < 3; dim++) {
        int w = dim < 0 ? dim + 3 : dim;
        /* index smaller than t apart from dim, larger along it */
        int64_t ishape[3] = {3, 4, 2};
        ishape[w] = 7;
        int64_t ni = host_numel(3, ishape);
        double *iv = indices(ni, shape[w], 21 + (unsigned)w);
        double *want = ref_gather(3, shape, tv, w, ishape, iv);
        clt_tensor *idx_plain = mk(dev, CLT_INT64, 3, ishape, iv);
        clt_tensor *idx_trans = mk_transposed(dev, CLT_INT64, 3, ishape, iv, 0, 1);
        const clt_tensor *ts[2] = {plain, trans}, *is[2] = {idx_plain, idx_trans};
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                clt_tensor *r = NULL;
                CHECK(clt_gather(ts[a], dim, is[b], &r));
                assert_shape(r, 3, ishape);
                assert_values(r, want, ni);
                clt_tensor_free(r);
            }
        clt_tensor_free(idx_plain);
        clt_tensor_free(idx_trans);
        free(iv);
        free(want);
    }
    clt_tensor_free(plain);
    clt_tensor_free(trans);
    free(tv);
}

Test(index, gather_dtypes_and_empty)
{
    clt_device *dev = cpu0();
    int64_t shape[2] = {3, 5}, ishape[2] = {3, 2};
    double iv[6] = {4, 0, 1, 1, 2, 3};
    for (size_t k = 0; k < N_DTYPES; k++) {
        clt_dtype dt = all_dtypes[k];
        if (!clt_device_supports_dtype(dev, dt))
            continue;
        double *tv = values(dt, 15, 31 + (unsigned)k);
        clt_tensor *t = mk(dev, dt, 2, shape, tv), *idx = mk(dev, CLT_INT64, 2, ishape, iv);
        clt_tensor *r = NULL;
        CHECK(clt_gather(t, 1, idx, &r));
        double *want = ref_gather(2, shape, tv, 1, ishape, iv);
        cr_assert_eq(clt_tensor_dtype(r), dt);
        assert_values(r, want, 6);
        free(want);
        clt_tensor_free(r);
        clt_tensor_free(t);
        clt_tensor_free(idx);
        free(tv);
    }
    double *tv = values(CLT_FLOAT32, 15, 1);
    clt_tensor *t = mk(dev, CLT_FLOAT32, 2, shape, tv), *r = NULL;
    clt_tensor *idx = mk(dev, CLT_INT64, 2, (int64_t[]){0, 5}, NULL);
    CHECK(clt_gather(t, 0, idx, &r));
    assert_shape(r, 2, (int64_t[]){0, 5});
    clt_tensor_free(r);
    clt_tensor_free(idx);
    clt_tensor_free(t);
    free(tv);
}

/* ---- scatter, scatter_add -------------------------------------------------------- */

Test(index, scatter_and_scatter_add_every_dim)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {4, 3, 5};
    double *tv = values(CLT_FLOAT32, 60, 41);
    clt_tensor *t = mk(dev, CLT_FLOAT32, 3, shape, tv);
    for (int dim = -3; dim < 3; dim++) {
        int w = dim < 0 ? dim + 3 : dim;
        int64_t ishape[3] = {3, 2, 4}, sshape[3] = {4, 3, 5};
        ishape[w] = 6; /* more entries than t's dim: repeated destinations */
        sshape[w] = 7;
        int64_t ni = host_numel(3, ishape), ns = host_numel(3, sshape);
        double *iv = indices(ni, shape[w], 51 + (unsigned)w);
        double *sv = values(CLT_FLOAT32, ns, 61 + (unsigned)w);
        for (int64_t i = 0; i < ns; i++)
            sv[i] += 0.1 * (double)i; /* sums that round */
        clt_tensor *idx = mk(dev, CLT_INT64, 3, ishape, iv);
        clt_tensor *src = mk_transposed(dev, CLT_FLOAT32, 3, sshape, sv, 0, 2);
        for (int add = 0; add < 2; add++) {
            clt_tensor *r = NULL;
            if (add)
                CHECK(clt_scatter_add(t, dim, idx, src, &r));
            else
                CHECK(clt_scatter(t, dim, idx, src, &r));
            float *want = ref_scatter_f32(3, shape, tv, w, ishape, iv, sshape, sv, add);
            assert_shape(r, 3, shape);
            assert_bits_f32(r, want, 60);
            free(want);
            clt_tensor_free(r);
        }
        clt_tensor_free(idx);
        clt_tensor_free(src);
        free(iv);
        free(sv);
    }
    /* t itself is left alone. */
    assert_values(t, tv, 60);
    clt_tensor_free(t);
    free(tv);
}

Test(index, scatter_add_integer_dtypes)
{
    clt_device *dev = cpu0();
    int64_t n = 4, ni = 9;
    double tv[4] = {1, 2, 3, 4}, iv[9] = {0, 3, 3, 1, 0, 3, 2, 2, 3};
    double sv[9] = {100, 200, 60, 7, 8, 9, 10, 11, 12};
    const clt_dtype dts[] = {CLT_INT32, CLT_INT64, CLT_UINT8, CLT_BOOL};
    for (size_t k = 0; k < 4; k++) {
        clt_dtype dt = dts[k];
        double t2[4], s2[9], want[4];
        for (int i = 0; i < 4; i++)
            t2[i] = dt == CLT_BOOL ? i == 1 : tv[i];
        for (int i = 0; i < 9; i++)
            s2[i] = dt == CLT_BOOL ? i == 3 || i == 8 : sv[i];
        memcpy(want, t2, sizeof want);
        for (int i = 0; i < 9; i++)
            want[(int)iv[i]] += s2[i];
        for (int i = 0; i < 4; i++) {
            if (dt == CLT_UINT8)
                want[i] = (double)((int64_t)want[i] % 256); /* wraps */
            if (dt == CLT_BOOL)
                want[i] = want[i] != 0;
        }
        clt_tensor *t = mk(dev, dt, 1, &n, t2), *src = mk(dev, dt, 1, &ni, s2);
        clt_tensor *idx = mk(dev, CLT_INT64, 1, &ni, iv), *r = NULL;
        CHECK(clt_scatter_add(t, 0, idx, src, &r));
        cr_assert_eq(clt_tensor_dtype(r), dt);
        assert_values(r, want, 4);
        clt_tensor_free(r);
        clt_tensor_free(t);
        clt_tensor_free(src);
        clt_tensor_free(idx);
    }
}

Test(index, scatter_last_wins_and_empty_index)
{
    clt_device *dev = cpu0();
    int64_t n = 3, ni = 5;
    double tv[3] = {0, 0, 0}, iv[5] = {1, 1, 0, 1, 0}, sv[5] = {10, 20, 30, 40, 50};
    clt_tensor *t = mk(dev, CLT_INT64, 1, &n, tv), *src = mk(dev, CLT_INT64, 1, &ni, sv);
    clt_tensor *idx = mk(dev, CLT_INT64, 1, &ni, iv), *r = NULL;
    CHECK(clt_scatter(t, 0, idx, src, &r));
    assert_values(r, (double[]){50, 40, 0}, 3);
    clt_tensor_free(r);
    /* An empty index of another rank is not checked and changes nothing. */
    clt_tensor *empty = mk(dev, CLT_INT64, 2, (int64_t[]){0, 7}, NULL);
    CHECK(clt_scatter_add(t, 0, empty, src, &r));
    assert_values(r, tv, 3);
    clt_tensor_free(r);
    clt_tensor_free(empty);
    clt_tensor_free(t);
    clt_tensor_free(src);
    clt_tensor_free(idx);
}

/* ---- index_add ------------------------------------------------------------------- */

Test(index, index_add_every_dim_with_alpha)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {5, 4, 6};
    double *tv = values(CLT_FLOAT32, 120, 71);
    clt_tensor *t = mk_sliced(dev, CLT_FLOAT32, 3, shape, tv, 2, 2, 1e30);
    const float alphas[3] = {1.0f, 2.5f, -0.3f};
    for (int dim = -3; dim < 3; dim++) {
        int w = dim < 0 ? dim + 3 : dim;
        int64_t count = 9, sshape[3];
        memcpy(sshape, shape, sizeof sshape);
        sshape[w] = count;
        int64_t ns = host_numel(3, sshape);
        double *iv = indices(count, shape[w], 81 + (unsigned)w);
        double *sv = values(CLT_FLOAT32, ns, 91 + (unsigned)w);
        for (int64_t i = 0; i < ns; i++)
            sv[i] = sv[i] * 1.37 + 0.001 * (double)i;
        for (int64_t i = 0; i < ns; i++)
            sv[i] = (float)sv[i];
        clt_tensor *idx = mk_sliced(dev, CLT_INT64, 1, &count, iv, 0, 3, -5);
        clt_tensor *src = mk_transposed(dev, CLT_FLOAT32, 3, sshape, sv, w, (w + 1) % 3);
        for (int a = 0; a < 3; a++) {
            clt_tensor *r = NULL;
            CHECK(clt_index_add(t, dim, idx, src, alphas[a], &r));
            float *want = ref_index_add_f32(3, shape, tv, w, iv, count, sv, alphas[a]);
            assert_shape(r, 3, shape);
            assert_bits_f32(r, want, 120);
            free(want);
            clt_tensor_free(r);
        }
        clt_tensor_free(idx);
        clt_tensor_free(src);
        free(iv);
        free(sv);
    }
    clt_tensor_free(t);
    free(tv);
}

Test(index, index_add_integers_and_float64)
{
    clt_device *dev = cpu0();
    int64_t shape[2] = {3, 2}, sshape[2] = {4, 2}, four = 4;
    double tv[6] = {1, 2, 3, 4, 5, 6}, iv[4] = {2, 0, 2, 2};
    double sv[8] = {10, 20, 30, 40, 50, 60, 70, 80};
    const clt_dtype dts[] = {CLT_INT32, CLT_INT64, CLT_FLOAT64};
    for (size_t k = 0; k < 3; k++) {
        if (!clt_device_supports_dtype(dev, dts[k]))
            continue;
        double want[6];
        memcpy(want, tv, sizeof want);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 2; j++)
                want[(int)iv[i] * 2 + j] += -3 * sv[i * 2 + j];
        clt_tensor *t = mk(dev, dts[k], 2, shape, tv), *src = mk(dev, dts[k], 2, sshape, sv);
        clt_tensor *idx = mk(dev, CLT_INT64, 1, &four, iv), *r = NULL;
        CHECK(clt_index_add(t, 0, idx, src, -3, &r));
        assert_values(r, want, 6);
        clt_tensor_free(r);
        clt_tensor_free(t);
        clt_tensor_free(src);
        clt_tensor_free(idx);
    }
}

Test(index, index_add_zero_size_and_scalars)
{
    clt_device *dev = cpu0();
    int64_t zero = 0;
    double tv[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, tv), *r = NULL;
    clt_tensor *idx = mk(dev, CLT_INT64, 1, &zero, NULL);
    clt_tensor *src = mk(dev, CLT_FLOAT32, 2, (int64_t[]){2, 0}, NULL);
    CHECK(clt_index_add(t, 1, idx, src, 1, &r));
    assert_values(r, tv, 6);
    clt_tensor_free(r);

    /* 0-d tensor, 0-d source, one-element index. */
    double a = 1.5, b = 2.25, i0 = 0;
    clt_tensor *s = mk(dev, CLT_FLOAT32, 0, NULL, &a), *ss = mk(dev, CLT_FLOAT32, 0, NULL, &b);
    clt_tensor *idx0 = mk(dev, CLT_INT64, 0, NULL, &i0);
    CHECK(clt_index_add(s, 0, idx0, ss, 2, &r));
    assert_shape(r, 0, NULL);
    assert_values(r, (double[]){6.0}, 1);
    clt_tensor_free(r);
    clt_tensor_free(s);
    clt_tensor_free(ss);
    clt_tensor_free(idx0);
    clt_tensor_free(t);
    clt_tensor_free(idx);
    clt_tensor_free(src);
}

/* ---- in-place forms -------------------------------------------------------------- */

Test(index, index_add_inplace_into_a_view)
{
    clt_device *dev = cpu0();
    int64_t bshape[2] = {6, 4}, three = 3;
    double *bv = values(CLT_FLOAT32, 24, 101);
    clt_tensor *base = mk(dev, CLT_FLOAT32, 2, bshape, bv), *view = NULL;
    /* rows 1, 3, 5 of base, transposed: a [4, 3] view */
    clt_tensor *rows = NULL;
    CHECK(clt_slice(base, 0, 1, INT64_MAX, 2, &rows));
    CHECK(clt_transpose(rows, 0, 1, &view));
    double iv[3] = {2, 0, 2}, sv[12];
    for (int i = 0; i < 12; i++)
        sv[i] = 0.5 * i - 2;
    clt_tensor *idx = mk(dev, CLT_INT64, 1, &three, iv);
    clt_tensor *src = mk(dev, CLT_FLOAT32, 2, (int64_t[]){4, 3}, sv);
    uint64_t v0 = clt__version(base);
    CHECK(clt_index_add_(view, -1, idx, src, 2));
    cr_assert_eq(clt__version(base), v0 + 1, "the in-place write bumps the storage version");
    double want[24];
    memcpy(want, bv, sizeof want);
    /* view[r][c] is base[1 + 2c][r]; column idx[k] of view += 2 * src[:, k] */
    for (int k = 0; k < 3; k++)
        for (int r = 0; r < 4; r++) {
            int c = (int)iv[k];
            volatile float prod = 2.0f * (float)sv[r * 3 + k];
            volatile float sum = (float)want[(1 + 2 * c) * 4 + r] + prod;
            want[(1 + 2 * c) * 4 + r] = sum;
        }
    assert_values(base, want, 24);
    clt_tensor_free(idx);
    clt_tensor_free(src);
    clt_tensor_free(view);
    clt_tensor_free(rows);
    clt_tensor_free(base);
    free(bv);
}

Test(index, scatter_add_inplace_with_aliased_source)
{
    clt_device *dev = cpu0();
    int64_t n = 5, three = 3;
    double tv[5] = {1, 2, 3, 4, 5}, iv[3] = {4, 4, 0};
    clt_tensor *t = mk(dev, CLT_INT64, 1, &n, tv), *src = NULL;
    CHECK(clt_narrow(t, 0, 0, 3, &src)); /* src is t[0:3], read before the writes */
    clt_tensor *idx = mk(dev, CLT_INT64, 1, &three, iv);
    uint64_t v0 = clt__version(t);
    CHECK(clt_scatter_add_(t, 0, idx, src));
    cr_assert_eq(clt__version(t), v0 + 1);
    /* t[4] += 1 + 2, t[0] += 3 */
    assert_values(t, (double[]){4, 2, 3, 4, 8}, 5);

    /* An index that is a view of t itself (int64) is read before the writes too. */
    double tv2[4] = {3, 0, 10, 20};
    int64_t four = 4, two = 2;
    clt_tensor *t2 = mk(dev, CLT_INT64, 1, &four, tv2), *idx2 = NULL;
    CHECK(clt_narrow(t2, 0, 0, 2, &idx2)); /* [3, 0] */
    double s2[2] = {100, 1000};
    clt_tensor *src2 = mk(dev, CLT_INT64, 1, &two, s2);
    CHECK(clt_index_add_(t2, 0, idx2, src2, 1));
    assert_values(t2, (double[]){1003, 0, 10, 120}, 4);
    clt_tensor_free(t2);
    clt_tensor_free(idx2);
    clt_tensor_free(src2);

    clt_tensor_free(t);
    clt_tensor_free(src);
    clt_tensor_free(idx);
}

Test(index, inplace_refuses_expanded_destination)
{
    clt_device *dev = cpu0();
    int64_t one = 1, shape[2] = {3, 4}, two = 2;
    double tv = 7, iv[2] = {0, 1}, sv[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 1, &one, &tv), *e = NULL;
    CHECK(clt_expand(t, 2, shape, &e));
    clt_tensor *idx = mk(dev, CLT_INT64, 1, &two, iv);
    clt_tensor *src = mk(dev, CLT_FLOAT32, 2, (int64_t[]){3, 2}, sv);
    uint64_t v0 = clt__version(t);
    clt_status st = clt_index_add_(e, 1, idx, src, 1);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "single memory location"), "%s", clt_last_error());
    cr_assert_eq(clt__version(t), v0);
    assert_values(t, &tv, 1);
    clt_tensor_free(e);
    clt_tensor_free(t);
    clt_tensor_free(idx);
    clt_tensor_free(src);
}

/* ---- determinism ----------------------------------------------------------------- */

/* Many sources into few destinations with values whose float sums depend on
 * their order: the same bits on every run, on both devices, and as the
 * sequential loop. */
/* An empty destination has no elements to overlap: its stride 0 before a
 * size-0 dimension made scatter_add_ and index_add_ refuse it as expanded
 * (PyTorch does nothing, successfully). */
Test(index, inplace_into_empty_destinations)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL, *src = NULL, *idx = NULL, *src2 = NULL, *idx1 = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 0}, &t));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, 0}, &src));
    CHECK(clt_zeros(dev, CLT_INT64, 2, (int64_t[]){2, 0}, &idx));
    CHECK(clt_scatter_add_(t, 1, idx, src));
    CHECK(clt_scatter_add_(t, 0, idx, src));
    int64_t one = 1;
    CHECK(clt_zeros(dev, CLT_INT64, 1, &one, &idx1));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){1, 0}, &src2));
    CHECK(clt_index_add_(t, 0, idx1, src2, 2.0));
    cr_assert_eq(clt_tensor_numel(t), 0);
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(idx1);
    clt_tensor_free(src2);
    clt_tensor_free(idx);
    clt_tensor_free(src);
    clt_tensor_free(t);
}

Test(index, sums_bit_identical_across_runs_and_devices)
{
    clt_device *d0 = cpu0(), *d1 = second_device(d0);
    int64_t rows = 7, cols = 33, count = 4000;
    double *tv = values(CLT_FLOAT32, rows * cols, 5);
    double *iv = indices(count, rows, 6);
    double *sv = malloc((size_t)(count * cols) * sizeof *sv);
    for (int64_t i = 0; i < count * cols; i++)
        sv[i] = (float)((double)((i * 7919) % 10007) * 1.3e-3 - 6.0 + 1e4 * (i % 3 == 0));
    float *want = ref_index_add_f32(2, (int64_t[]){rows, cols}, tv, 0, iv, count, sv, 1.0f);
    /* the same sums through scatter_add: index [count, cols] along dim 0 */
    double *iv2 = malloc((size_t)(count * cols) * sizeof *iv2);
    for (int64_t i = 0; i < count * cols; i++)
        iv2[i] = iv[i / cols];
    clt_device *devs[2] = {d0, d1};
    for (int k = 0; k < 2; k++)
        for (int run = 0; run < 2; run++) {
            clt_tensor *t = mk(devs[k], CLT_FLOAT32, 2, (int64_t[]){rows, cols}, tv);
            clt_tensor *idx = mk(devs[k], CLT_INT64, 1, &count, iv);
            clt_tensor *idx2 = mk(devs[k], CLT_INT64, 2, (int64_t[]){count, cols}, iv2);
            clt_tensor *src = mk(devs[k], CLT_FLOAT32, 2, (int64_t[]){count, cols}, sv);
            clt_tensor *r = NULL, *r2 = NULL;
            CHECK(clt_index_add(t, 0, idx, src, 1, &r));
            assert_bits_f32(r, want, rows * cols);
            CHECK(clt_scatter_add(t, 0, idx2, src, &r2));
            assert_bits_f32(r2, want, rows * cols);
            CHECK(clt_index_add_(t, 0, idx, src, 1));
            assert_bits_f32(t, want, rows * cols);
            clt_tensor_free(r);
            clt_tensor_free(r2);
            clt_tensor_free(t);
            clt_tensor_free(idx);
            clt_tensor_free(idx2);
            clt_tensor_free(src);
        }
    /* The order matters for these values: a sum in reverse order differs. */
    float *rev = malloc((size_t)(rows * cols) * sizeof *rev);
    for (int64_t i = 0; i < rows * cols; i++)
        rev[i] = (float)tv[i];
    for (int64_t k = count - 1; k >= 0; k--)
        for (int64_t c = 0; c < cols; c++) {
            volatile float s = rev[(int64_t)iv[k] * cols + c] + (float)sv[k * cols + c];
            rev[(int64_t)iv[k] * cols + c] = s;
        }
    cr_assert(memcmp(rev, want, (size_t)(rows * cols) * sizeof *rev) != 0,
              "the test values should make the order of the sums visible");
    free(rev);
    free(want);
    free(tv);
    free(iv);
    free(iv2);
    free(sv);
}

/* ---- embedding ------------------------------------------------------------------- */

/* Embedding with indices of dtype idt (int64, or int32 as torch takes
 * them): the same rows, shapes and table gradient. */
static void embedding_rows(clt_dtype idt)
{
    clt_device *dev = cpu0();
    int64_t V = 10, D = 4, wshape[2] = {10, 4}, ishape[2] = {3, 5};
    double *wv = values(CLT_FLOAT32, V * D, 111);
    double *iv = indices(15, V, 112);
    double *want = malloc(60 * sizeof *want);
    for (int i = 0; i < 15; i++)
        for (int d = 0; d < D; d++)
            want[i * D + d] = wv[(int64_t)iv[i] * D + d];
    /* weight stored transposed; indices transposed */
    clt_tensor *w = mk_transposed(dev, CLT_FLOAT32, 2, wshape, wv, 0, 1);
    clt_tensor *idx = mk_transposed(dev, idt, 2, ishape, iv, 0, 1), *r = NULL;
    CHECK(clt_embedding(w, idx, &r));
    assert_shape(r, 3, (int64_t[]){3, 5, 4});
    assert_values(r, want, 60);
    clt_tensor_free(r);

    /* 0-d indices give one row; empty indices an empty [0, D]. */
    double i0 = 7;
    clt_tensor *idx0 = mk(dev, idt, 0, NULL, &i0);
    CHECK(clt_embedding(w, idx0, &r));
    assert_shape(r, 1, &D);
    assert_values(r, wv + 28, 4);
    clt_tensor_free(r);
    int64_t zero = 0;
    clt_tensor *empty = mk(dev, idt, 1, &zero, NULL);
    CHECK(clt_embedding(w, empty, &r));
    assert_shape(r, 2, (int64_t[]){0, 4});
    clt_tensor_free(r);

    /* The gradient of the table: index_add of the output rows into zeros. */
    clt_tensor *flat = NULL, *grad_out = NULL, *z = NULL, *g = NULL;
    double *gv = values(CLT_FLOAT32, 60, 113);
    grad_out = mk(dev, CLT_FLOAT32, 2, (int64_t[]){15, 4}, gv);
    CHECK(clt_reshape(idx, 1, (int64_t[]){15}, &flat));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, wshape, &z));
    CHECK(clt_index_add(z, 0, flat, grad_out, 1, &g));
    double zv[40] = {0};
    float *gw = ref_index_add_f32(2, wshape, zv, 0, iv, 15, gv, 1.0f);
    assert_bits_f32(g, gw, 40);
    free(gw);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(z);
    clt_tensor_free(flat);
    clt_tensor_free(grad_out);
    clt_tensor_free(empty);
    clt_tensor_free(idx0);
    clt_tensor_free(w);
    clt_tensor_free(idx);
    free(wv);
    free(iv);
    free(want);
}

Test(index, embedding_rows_by_indices_of_any_shape)
{
    embedding_rows(CLT_INT64);
}

Test(index, int32_indices_embed_like_int64)
{
    embedding_rows(CLT_INT32);
}

/* ---- one_hot --------------------------------------------------------------------- */

/* Empty indices as torch 1.13 takes them: with num_classes 0, -1 or any
 * other non-positive count torch raises "Can not infer total number of
 * classes from empty tensor"; with a positive count the result is empty,
 * of shape indices.shape + [num_classes]. */
Test(index, one_hot_of_empty_indices_needs_a_positive_count)
{
    clt_device *dev = cpu0();
    int64_t shapes[3][2] = {{0, 0}, {2, 0}, {0, 3}};
    int ndims[3] = {1, 2, 2};
    for (int i = 0; i < 3; i++) {
        clt_tensor *idx = mk(dev, CLT_INT64, ndims[i], shapes[i], NULL), *r = NULL;
        int64_t bad[4] = {0, -1, -2, -5};
        for (int b = 0; b < 4; b++) {
            r = (clt_tensor *)idx; /* must come back NULL */
            clt_status st = clt_one_hot(idx, bad[b], &r);
            cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "shape %d, num_classes %lld: %s", i,
                         (long long)bad[b], clt_status_name(st));
            cr_assert_null(r);
            cr_assert(strstr(clt_last_error(), "cannot infer the number of classes from an "
                                               "empty tensor"),
                      "%s", clt_last_error());
        }
        for (int64_t c = 1; c <= 3; c += 2) {
            CHECK(clt_one_hot(idx, c, &r));
            int64_t want[3] = {shapes[i][0], shapes[i][1], 0};
            want[ndims[i]] = c;
            assert_shape(r, ndims[i] + 1, want);
            cr_assert_eq(clt_tensor_numel(r), 0);
            cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
            clt_tensor_free(r);
        }
        clt_tensor_free(idx);
    }
}

Test(index, one_hot_shapes_and_values)
{
    clt_device *dev = cpu0();
    int64_t ishape[2] = {2, 3};
    double iv[6] = {0, 4, 2, 2, 1, 3};
    clt_tensor *idx = mk_transposed(dev, CLT_INT64, 2, ishape, iv, 0, 1), *r = NULL;
    CHECK(clt_one_hot(idx, 5, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    assert_shape(r, 3, (int64_t[]){2, 3, 5});
    double want[30] = {0};
    for (int i = 0; i < 6; i++)
        want[i * 5 + (int)iv[i]] = 1;
    assert_values(r, want, 30);
    clt_tensor_free(r);

    double i0 = 1;
    clt_tensor *idx0 = mk(dev, CLT_INT64, 0, NULL, &i0);
    CHECK(clt_one_hot(idx0, 3, &r));
    assert_shape(r, 1, (int64_t[]){3});
    assert_values(r, (double[]){0, 1, 0}, 3);
    clt_tensor_free(r);

    int64_t zero = 0;
    clt_tensor *empty = mk(dev, CLT_INT64, 1, &zero, NULL);
    CHECK(clt_one_hot(empty, 4, &r));
    assert_shape(r, 2, (int64_t[]){0, 4});
    clt_tensor_free(r);

    clt_status st = clt_one_hot(idx, -1, &r);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "not supported"), "%s", clt_last_error());
    cr_assert_null(r);
    st = clt_one_hot(idx, 0, &r);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert_null(r);
    cr_assert_eq(clt_one_hot(idx, -3, &r), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor *i32 = mk(dev, CLT_INT32, 2, ishape, iv);
    st = clt_one_hot(i32, 5, &r);
    cr_assert_eq(st, CLT_ERR_DTYPE_MISMATCH, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "int64"), "%s", clt_last_error());
    cr_assert_null(r);
    clt_tensor_free(i32);
    clt_tensor_free(empty);
    clt_tensor_free(idx0);
    clt_tensor_free(idx);
}

/* ---- masked_fill ----------------------------------------------------------------- */

Test(index, masked_fill_broadcasts_both_ways)
{
    clt_device *dev = cpu0();
    int64_t shape[2] = {3, 4};
    double *tv = values(CLT_FLOAT32, 12, 121);
    double mv[4] = {1, 0, 0, 1};
    int64_t four = 4;
    clt_tensor *t = mk_transposed(dev, CLT_FLOAT32, 2, shape, tv, 0, 1);
    clt_tensor *m = mk(dev, CLT_BOOL, 1, &four, mv), *r = NULL;
    CHECK(clt_masked_fill(t, m, -INFINITY, &r));
    double want[24];
    for (int i = 0; i < 12; i++)
        want[i] = mv[i % 4] ? -INFINITY : tv[i];
    assert_shape(r, 2, shape);
    assert_values(r, want, 12);
    clt_tensor_free(r);

    /* A mask of more dimensions gives the broadcast shape, as torch.masked_fill. */
    double mv2[8] = {0, 1, 1, 0, 1, 1, 0, 0};
    clt_tensor *m2 = mk_sliced(dev, CLT_BOOL, 3, (int64_t[]){2, 1, 4}, mv2, 2, 2, 1);
    CHECK(clt_masked_fill(t, m2, 9, &r));
    for (int i = 0; i < 24; i++)
        want[i] = mv2[(i / 12) * 4 + i % 4] ? 9 : tv[i % 12];
    assert_shape(r, 3, (int64_t[]){2, 3, 4});
    assert_values(r, want, 24);
    clt_tensor_free(r);
    clt_tensor_free(m2);
    clt_tensor_free(t);
    clt_tensor_free(m);
    free(tv);
}

Test(index, masked_fill_dtypes_and_value_checks)
{
    clt_device *dev = cpu0();
    int64_t n = 5;
    double mv[5] = {1, 0, 1, 1, 0};
    clt_tensor *m = mk(dev, CLT_BOOL, 1, &n, mv), *r = NULL;
    for (size_t k = 0; k < N_DTYPES; k++) {
        clt_dtype dt = all_dtypes[k];
        if (!clt_device_supports_dtype(dev, dt))
            continue;
        double *tv = values(dt, 5, 131 + (unsigned)k), want[5];
        double fill = dt == CLT_BOOL ? 1 : 2.75;
        double stored = clt__dtype_is_float(dt) || dt == CLT_BOOL ? fill : 2; /* truncated */
        for (int i = 0; i < 5; i++)
            want[i] = mv[i] ? stored : tv[i];
        clt_tensor *t = mk(dev, dt, 1, &n, tv);
        CHECK(clt_masked_fill(t, m, fill, &r));
        cr_assert_eq(clt_tensor_dtype(r), dt);
        assert_values(r, want, 5);
        clt_tensor_free(r);
        clt_tensor_free(t);
        free(tv);
    }
    double zv[5] = {0};
    clt_tensor *t = mk(dev, CLT_INT32, 1, &n, zv);
    clt_status st = clt_masked_fill(t, m, 1e10, &r);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert_null(r);
    clt_tensor *um = mk(dev, CLT_UINT8, 1, &n, mv);
    st = clt_masked_fill(t, um, 1, &r);
    cr_assert_eq(st, CLT_ERR_DTYPE_MISMATCH, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "bool"), "%s", clt_last_error());
    cr_assert_null(r);
    clt_tensor *m3 = mk(dev, CLT_BOOL, 1, (int64_t[]){3}, mv);
    st = clt_masked_fill(t, m3, 1, &r);
    cr_assert_eq(st, CLT_ERR_SHAPE_MISMATCH, "%s", clt_status_name(st));
    cr_assert_null(r);
    /* zero-size */
    clt_tensor *z = mk(dev, CLT_INT32, 2, (int64_t[]){0, 5}, NULL);
    CHECK(clt_masked_fill(z, m, 3, &r));
    assert_shape(r, 2, (int64_t[]){0, 5});
    clt_tensor_free(r);
    clt_tensor_free(z);
    clt_tensor_free(m3);
    clt_tensor_free(um);
    clt_tensor_free(t);
    clt_tensor_free(m);
}

/* ---- out-of-range indices -------------------------------------------------------- */

/* Runs op, which must succeed without waiting for the device, then reads
 * `probe` and expects the out-of-range report naming `want`; a second read
 * then succeeds (the record was reset). */
static void expect_reported(clt_status op_status, const clt_tensor *probe, const char *want)
{
    cr_assert_eq(op_status, CLT_OK, "the op itself succeeds: %s", clt_last_error());
    float buf[64];
    size_t bytes = clt_tensor_nbytes(probe);
    cr_assert(bytes <= sizeof buf);
    clt_status st = clt_tensor_read(probe, buf, sizeof buf);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s: %s", clt_status_name(st),
                 clt_last_error());
    cr_assert(strstr(clt_last_error(), want), "message '%s' lacks '%s'", clt_last_error(),
              want);
    cr_assert(strstr(clt_last_error(), "clt_tensor_read"), "%s", clt_last_error());
    CHECK(clt_tensor_read(probe, buf, sizeof buf));
}

/* The op runs before its result is looked at (function arguments would be
 * evaluated in any order). */
#define EXPECT_REPORTED(call, probe, want)                                                  \
    do {                                                                                    \
        clt_status s_ = (call);                                                             \
        expect_reported(s_, probe, want);                                                   \
    } while (0)

Test(index, out_of_range_found_at_next_read_without_waiting)
{
    clt_device *dev = cpu0();
    int64_t n = 5, three = 3;
    double tv[5] = {1, 2, 3, 4, 5}, iv[3] = {1, 7, 0};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 1, &n, tv);
    clt_tensor *idx = mk(dev, CLT_INT64, 1, &three, iv), *r = NULL;
    clt_stats s0, s1;
    clt_stats_get(&s0);
    clt_status st = clt_index_select(t, 0, idx, &r);
    clt_stats_get(&s1);
    cr_assert_eq(s1.blocking_waits, s0.blocking_waits, "the op must not wait for the device");
    expect_reported(st, r,
                    "clt_index_select: index 7 is out of bounds for dimension 0 with size 5");
    /* The good indices were served; the bad one read nothing (0). */
    assert_values(r, (double[]){2, 0, 1}, 3);
    clt_tensor_free(r);

    /* Negative indices are out of range too (as PyTorch's index_select). */
    double neg[3] = {0, -1, 4};
    clt_tensor *nidx = mk(dev, CLT_INT64, 1, &three, neg);
    EXPECT_REPORTED(clt_index_select(t, -1, nidx, &r), r,
                    "index -1 is out of bounds for dimension 0 with size 5");
    clt_tensor_free(r);
    clt_tensor_free(nidx);
    clt_tensor_free(idx);
    clt_tensor_free(t);
}

Test(index, out_of_range_in_every_op)
{
    clt_device *dev = cpu0();
    int64_t shape[2] = {2, 3}, ishape[2] = {2, 2}, two = 2;
    double tv[6] = {1, 2, 3, 4, 5, 6}, good_bad[4] = {0, 1, 3, 2}, sv[6] = {1, 1, 1, 1, 1, 1};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 2, shape, tv);
    clt_tensor *idx = mk(dev, CLT_INT64, 2, ishape, good_bad);
    clt_tensor *src = mk(dev, CLT_FLOAT32, 2, shape, sv), *r = NULL;

    EXPECT_REPORTED(clt_gather(t, 1, idx, &r), r,
                    "clt_gather: index 3 is out of bounds for dimension 1 with size 3");
    clt_tensor_free(r);
    EXPECT_REPORTED(clt_scatter(t, 1, idx, src, &r), r,
                    "clt_scatter: index 3 is out of bounds for dimension 1 with size 3");
    clt_tensor_free(r);
    EXPECT_REPORTED(clt_scatter_add(t, -1, idx, src, &r), r,
                    "clt_scatter_add: index 3 is out of bounds for dimension 1 with size 3");
    /* the valid entries were added, the bad one skipped */
    assert_values(r, (double[]){2, 3, 3, 4, 5, 7}, 6);
    clt_tensor_free(r);

    double iv[2] = {1, 2};
    clt_tensor *vidx = mk(dev, CLT_INT64, 1, &two, iv);
    clt_tensor *rows = mk(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, sv);
    EXPECT_REPORTED(clt_index_add(t, 0, vidx, rows, 1, &r), r,
                    "clt_index_add: index 2 is out of bounds for dimension 0 with size 2");
    assert_values(r, (double[]){1, 2, 3, 5, 6, 7}, 6);
    clt_tensor_free(r);
    clt_tensor *c = NULL;
    CHECK(clt_clone(t, &c));
    EXPECT_REPORTED(clt_index_add_(c, 0, vidx, rows, 1), c,
                    "clt_index_add_: index 2 is out of bounds for dimension 0 with size 2");
    EXPECT_REPORTED(clt_scatter_add_(c, 1, idx, src), c, "clt_scatter_add_: index 3");
    clt_tensor_free(c);

    EXPECT_REPORTED(clt_embedding(t, vidx, &r), r,
                    "clt_embedding: index 2 is out of bounds for dimension 0 with size 2");
    assert_values(r, (double[]){4, 5, 6, 0, 0, 0}, 6);
    clt_tensor_free(r);

    double cls[2] = {1, 5};
    clt_tensor *cidx = mk(dev, CLT_INT64, 1, &two, cls);
    EXPECT_REPORTED(clt_one_hot(cidx, 3, &r), r,
                    "clt_one_hot: class values must be smaller than num_classes 3, got 5");
    assert_values(r, (double[]){0, 1, 0, 0, 0, 0}, 6);
    clt_tensor_free(r);
    double ncls[2] = {-2, 0};
    clt_tensor *nidx = mk(dev, CLT_INT64, 1, &two, ncls);
    EXPECT_REPORTED(clt_one_hot(nidx, 3, &r), r, "class values must be non-negative, got -2");
    clt_tensor_free(r);

    clt_tensor_free(nidx);
    clt_tensor_free(cidx);
    clt_tensor_free(rows);
    clt_tensor_free(vidx);
    clt_tensor_free(src);
    clt_tensor_free(idx);
    clt_tensor_free(t);
}

/* Each synchronising call reports the record of its device, and the first
 * bad index stays the one reported. */
Test(index, out_of_range_reported_by_every_sync)
{
    clt_device *dev = cpu0(), *other = second_device(dev);
    int64_t n = 4, one = 1;
    double tv[4] = {1, 2, 3, 4}, bad = 9, worse = 12;
    clt_tensor *t = mk(dev, CLT_FLOAT32, 1, &n, tv);
    clt_tensor *bidx = mk(dev, CLT_INT64, 1, &one, &bad);
    clt_tensor *widx = mk(dev, CLT_INT64, 1, &one, &worse), *r = NULL, *r2 = NULL;
    clt_status st;

    /* clt_device_synchronize; the first of two bad ops is the one named */
    CHECK(clt_index_select(t, 0, bidx, &r));
    CHECK(clt_gather(t, 0, widx, &r2));
    st = clt_device_synchronize(dev);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "clt_index_select: index 9"), "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), clt_device_label(dev)), "%s", clt_last_error());
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(r2);

    /* a read of another tensor, on the other device, is not concerned */
    clt_tensor *o = mk(other, CLT_FLOAT32, 1, &n, tv);
    CHECK(clt_gather(t, 0, widx, &r2));
    float buf[4];
    CHECK(clt_tensor_read(o, buf, sizeof buf));
    /* ... but a read of an unrelated tensor on the device is */
    st = clt_tensor_read(t, buf, sizeof buf);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "clt_gather: index 12"), "%s", clt_last_error());
    clt_tensor_free(r2);

    /* clt_tensor_item */
    double v = 0;
    CHECK(clt_index_select(t, 0, bidx, &r2));
    st = clt_tensor_item(r, &v);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "clt_tensor_item"), "%s", clt_last_error());
    CHECK(clt_tensor_item(r, &v));
    cr_assert_eq(v, 0.0);
    clt_tensor_free(r2);

    /* clt_tensor_format */
    char *text = NULL;
    CHECK(clt_index_select(t, 0, bidx, &r2));
    st = clt_tensor_format(r2, &text);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert_null(text);
    clt_tensor_free(r2);

    /* clt_event_wait, once only */
    clt_event *ev = NULL;
    CHECK(clt_index_select(t, 0, bidx, &r2));
    CHECK(clt_tensor_read_async(r2, buf, sizeof buf, &ev));
    st = clt_event_wait(ev);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "clt_event_wait"), "%s", clt_last_error());
    CHECK(clt_event_wait(ev));
    clt_event_free(ev);
    clt_tensor_free(r2);

    /* clt_event_query once complete */
    CHECK(clt_index_select(t, 0, bidx, &r2));
    CHECK(clt_tensor_read_async(r2, buf, sizeof buf, &ev));
    int done = 0;
    do
        st = clt_event_query(ev, &done);
    while (st == CLT_OK && !done);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    CHECK(clt_event_wait(ev));
    clt_event_free(ev);
    clt_tensor_free(r2);

    /* clt_to another device; the moved tensor is not handed out */
    clt_tensor *moved = NULL;
    CHECK(clt_index_select(t, 0, bidx, &r2));
    st = clt_to(r2, other, &moved);
    cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s", clt_status_name(st));
    cr_assert_null(moved);
    cr_assert(strstr(clt_last_error(), "clt_to"), "%s", clt_last_error());
    CHECK(clt_to(r2, other, &moved));
    clt_tensor_free(moved);
    clt_tensor_free(r2);

    /* an event freed without a wait drops its report, and later reads pass */
    CHECK(clt_index_select(t, 0, bidx, &r2));
    CHECK(clt_tensor_read_async(r2, buf, sizeof buf, &ev));
    clt_event_free(ev);
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(r2);

    clt_tensor_free(o);
    clt_tensor_free(r);
    clt_tensor_free(bidx);
    clt_tensor_free(widx);
    clt_tensor_free(t);
}

/* ---- errors found from shapes and dtypes ----------------------------------------- */

#define EXPECT(call, status, text)                                                          \
    do {                                                                                    \
        clt_status st_ = (call);                                                            \
        cr_assert_eq(st_, status, "%s: %s (%s)", #call, clt_status_name(st_),           \
                     clt_last_error());                                                     \
        cr_assert(strstr(clt_last_error(), text), "%s: message '%s' lacks '%s'", #call,     \
                  clt_last_error(), text);                                                  \
    } while (0)

Test(index, errors_from_shapes_and_dtypes)
{
    clt_device *dev = cpu0(), *other = second_device(dev);
    int64_t shape[2] = {3, 4}, two = 2;
    double tv[12] = {0}, iv[4] = {0, 1, 1, 0};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 2, shape, tv);
    clt_tensor *i64 = mk(dev, CLT_INT64, 1, &two, iv);
    clt_tensor *i32 = mk(dev, CLT_INT32, 1, &two, iv);
    clt_tensor *u8 = mk(dev, CLT_UINT8, 1, &two, iv);
    clt_tensor *i2d = mk(dev, CLT_INT64, 2, (int64_t[]){2, 2}, iv);
    clt_tensor *i3d = mk(dev, CLT_INT64, 3, (int64_t[]){1, 2, 2}, iv);
    clt_tensor *f64 = clt_device_supports_dtype(dev, CLT_FLOAT64)
                          ? mk(dev, CLT_FLOAT64, 2, shape, tv)
                          : mk(dev, CLT_INT32, 2, shape, tv);
    clt_tensor *elsewhere = mk(other, CLT_INT64, 1, &two, iv);
    clt_tensor *src = mk(dev, CLT_FLOAT32, 2, (int64_t[]){3, 2}, tv);
    clt_tensor *r = (clt_tensor *)&r;

    EXPECT(clt_index_select(t, 0, u8, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_index_select: expected dtype int32 or int64 for index, but got uint8");
    cr_assert_null(r);
    EXPECT(clt_index_select(t, 0, i2d, &r), CLT_ERR_INVALID_ARGUMENT, "supposed to be a vector");
    EXPECT(clt_index_select(t, 2, i64, &r), CLT_ERR_DIM_OUT_OF_RANGE, "[-2, 1], but got 2");
    EXPECT(clt_index_select(t, -3, i64, &r), CLT_ERR_DIM_OUT_OF_RANGE, "got -3");
    EXPECT(clt_index_select(t, 0, elsewhere, &r), CLT_ERR_DEVICE_MISMATCH, "cpu:");
    EXPECT(clt_index_select(NULL, 0, i64, &r), CLT_ERR_NULL_ARGUMENT, "'t'");
    EXPECT(clt_index_select(t, 0, NULL, &r), CLT_ERR_NULL_ARGUMENT, "'index'");
    EXPECT(clt_index_select(t, 0, i64, NULL), CLT_ERR_NULL_ARGUMENT, "'out'");
    cr_assert_null(r);

    EXPECT(clt_gather(t, 1, i32, &r), CLT_ERR_DTYPE_MISMATCH, "clt_gather: expected dtype int64");
    EXPECT(clt_gather(t, 1, i64, &r), CLT_ERR_SHAPE_MISMATCH, "same number of dimensions");
    EXPECT(clt_gather(t, 1, i3d, &r), CLT_ERR_SHAPE_MISMATCH, "same number of dimensions");
    clt_tensor *tall = mk(dev, CLT_INT64, 2, (int64_t[]){4, 1}, tv);
    EXPECT(clt_gather(t, 1, tall, &r), CLT_ERR_SHAPE_MISMATCH,
           "expected index [4, 1] to be smaller than self [3, 4] apart from dimension 1");
    cr_assert_null(r);

    EXPECT(clt_scatter(t, 1, i2d, f64, &r), CLT_ERR_DTYPE_MISMATCH,
           "expected self.dtype to be equal to src.dtype");
    EXPECT(clt_scatter_add(t, 0, tall, src, &r), CLT_ERR_SHAPE_MISMATCH,
           "to be smaller size than src [3, 2]");
    EXPECT(clt_scatter_add(t, 0, i64, src, &r), CLT_ERR_SHAPE_MISMATCH,
           "same number of dimensions");
    EXPECT(clt_scatter(t, 5, i2d, src, &r), CLT_ERR_DIM_OUT_OF_RANGE, "got 5");
    EXPECT(clt_scatter(t, 0, i2d, NULL, &r), CLT_ERR_NULL_ARGUMENT, "'src'");
    cr_assert_null(r);

    EXPECT(clt_index_add(t, 1, u8, src, 1, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_index_add: expected dtype int32 or int64 for index, but got uint8");
    EXPECT(clt_index_add(t, 1, i2d, src, 1, &r), CLT_ERR_INVALID_ARGUMENT,
           "supposed to be a vector");
    EXPECT(clt_index_add(t, 0, i64, src, 1, &r), CLT_ERR_SHAPE_MISMATCH,
           "number of indices (2) should be equal to source.size(dim) (3)");
    clt_tensor *src3 = mk(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, tv);
    EXPECT(clt_index_add(t, 1, i64, src3, 1, &r), CLT_ERR_SHAPE_MISMATCH,
           "same size apart from dimension 1");
    clt_tensor *src1 = mk(dev, CLT_FLOAT32, 1, &two, tv);
    EXPECT(clt_index_add(t, 1, i64, src1, 1, &r), CLT_ERR_SHAPE_MISMATCH, "source.dim() (1)");
    clt_tensor *ti = mk(dev, CLT_INT32, 2, shape, tv);
    clt_tensor *si = mk(dev, CLT_INT32, 2, (int64_t[]){3, 2}, tv);
    EXPECT(clt_index_add(ti, 1, i64, si, 0.5, &r), CLT_ERR_INVALID_ARGUMENT,
           "alpha must not be a floating point number");
    EXPECT(clt_index_add(ti, 1, i64, si, NAN, &r), CLT_ERR_INVALID_ARGUMENT,
           "alpha must not be a floating point number");
    EXPECT(clt_index_add(ti, 1, i64, si, 1e30, &r), CLT_ERR_INVALID_ARGUMENT, "overflow");
    EXPECT(clt_index_add(t, 1, i64, si, 1, &r), CLT_ERR_DTYPE_MISMATCH, "src.dtype");
    cr_assert_null(r);

    /* the in-place forms change nothing on an error */
    uint64_t v0 = clt__version(t);
    EXPECT(clt_index_add_(t, 0, i64, src, 1), CLT_ERR_SHAPE_MISMATCH, "number of indices");
    EXPECT(clt_scatter_add_(t, 0, tall, src), CLT_ERR_SHAPE_MISMATCH, "smaller size than src");
    EXPECT(clt_scatter_add_(NULL, 0, tall, src), CLT_ERR_NULL_ARGUMENT, "'t'");
    cr_assert_eq(clt__version(t), v0);
    assert_values(t, tv, 12);

    EXPECT(clt_embedding(src1, i64, &r), CLT_ERR_SHAPE_MISMATCH, "'weight' must be 2-D");
    EXPECT(clt_embedding(t, u8, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_embedding: expected dtype int32 or int64 for indices, but got uint8");
    EXPECT(clt_embedding(t, elsewhere, &r), CLT_ERR_DEVICE_MISMATCH, "same device");
    clt_tensor *deep = NULL, *one = mk(dev, CLT_INT64, 0, NULL, iv);
    CHECK(clt_expand(one, 8, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 2}, &deep));
    EXPECT(clt_embedding(t, deep, &r), CLT_ERR_TOO_MANY_DIMS, "9 dimensions");
    EXPECT(clt_one_hot(deep, 3, &r), CLT_ERR_TOO_MANY_DIMS, "9 dimensions");
    cr_assert_null(r);

    clt_tensor_free(deep);
    clt_tensor_free(one);
    clt_tensor_free(ti);
    clt_tensor_free(si);
    clt_tensor_free(src1);
    clt_tensor_free(src3);
    clt_tensor_free(tall);
    clt_tensor_free(src);
    clt_tensor_free(elsewhere);
    clt_tensor_free(f64);
    clt_tensor_free(i3d);
    clt_tensor_free(i2d);
    clt_tensor_free(u8);
    clt_tensor_free(i32);
    clt_tensor_free(i64);
    clt_tensor_free(t);
}

/* ---- gradients -------------------------------------------------------------------- */

typedef struct gctx {
    int dim;
    clt_tensor *index; /* or the mask */
    double alpha;
    int op;
} gctx;

enum { G_SELECT, G_GATHER, G_SCATTER, G_SCATTER_ADD, G_INDEX_ADD, G_EMBEDDING, G_MASKED };

static clt_status g_op(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gctx *c = ctx;
    switch (c->op) {
    case G_SELECT: return clt_index_select(in[0], c->dim, c->index, out);
    case G_GATHER: return clt_gather(in[0], c->dim, c->index, out);
    case G_SCATTER: return clt_scatter(in[0], c->dim, c->index, in[1], out);
    case G_SCATTER_ADD: return clt_scatter_add(in[0], c->dim, c->index, in[1], out);
    case G_INDEX_ADD: return clt_index_add(in[0], c->dim, c->index, in[1], c->alpha, out);
    case G_EMBEDDING: return clt_embedding(in[0], c->index, out);
    default: return clt_masked_fill(in[0], c->index, -7.5, out);
    }
}

static double *ramp(int64_t n, double scale)
{
    double *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * (double)((i * 37) % 23 - 11) / 7.0;
    return v;
}

Test(index, gradients_of_selections)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *tv = ramp(12, 1.0);
    gc_in t = {2, {3, 4}, tv, 1};
    double sel[4] = {2, 0, 2, 1};
    gctx c = {1, mk(dev, CLT_INT64, 1, (int64_t[]){4}, sel), 1, G_SELECT};
    gradcheck(dev, g_op, &c, 1, &t);
    c.dim = -2;
    clt_tensor_free(c.index);
    c.index = mk(dev, CLT_INT64, 1, (int64_t[]){4}, (double[]){1, 1, 0, 1});
    gradcheck(dev, g_op, &c, 1, &t);
    clt_tensor_free(c.index);

    double gi[6] = {3, 3, 0, 1, 2, 2};
    c = (gctx){1, mk(dev, CLT_INT64, 2, (int64_t[]){3, 2}, gi), 1, G_GATHER};
    gradcheck(dev, g_op, &c, 1, &t);
    clt_tensor_free(c.index);

    /* embedding: weight [5, 3] by indices [2, 3] with repeats */
    double *wv = ramp(15, 0.5);
    gc_in w = {2, {5, 3}, wv, 1};
    double ev[6] = {4, 0, 4, 2, 4, 0};
    c = (gctx){0, mk(dev, CLT_INT64, 2, (int64_t[]){2, 3}, ev), 1, G_EMBEDDING};
    gradcheck(dev, g_op, &c, 1, &w);
    clt_tensor_free(c.index);

    /* masked_fill with a mask that broadcasts t to [2, 3, 4] */
    double mv[8] = {1, 0, 0, 1, 0, 1, 1, 0};
    c = (gctx){0, mk(dev, CLT_BOOL, 3, (int64_t[]){2, 1, 4}, mv), 1, G_MASKED};
    gradcheck(dev, g_op, &c, 1, &t);
    clt_tensor_free(c.index);
    free(tv);
    free(wv);
}

Test(index, gradients_of_scatters)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *tv = ramp(12, 1.0), *sv = ramp(8, 0.75);
    gc_in ins[2] = {{2, {3, 4}, tv, 1}, {2, {2, 4}, sv, 1}};
    /* scatter: distinct destinations per column (an overwritten source has
     * no gradient, which PyTorch's formula does not model either) */
    double si[8] = {0, 2, 1, 2, 2, 0, 0, 1};
    gctx c = {0, mk(dev, CLT_INT64, 2, (int64_t[]){2, 4}, si), 1, G_SCATTER};
    gradcheck(dev, g_op, &c, 2, ins);
    clt_tensor_free(c.index);
    /* scatter_add with repeats */
    double ai[8] = {1, 1, 0, 2, 1, 1, 0, 2};
    c = (gctx){0, mk(dev, CLT_INT64, 2, (int64_t[]){2, 4}, ai), 1, G_SCATTER_ADD};
    gradcheck(dev, g_op, &c, 2, ins);
    clt_tensor_free(c.index);
    /* index_add with alpha along dim 1: src [3, 5] into t [3, 4] */
    double *sv2 = ramp(15, 1.25);
    gc_in ins2[2] = {{2, {3, 4}, tv, 1}, {2, {3, 5}, sv2, 1}};
    double ii[5] = {3, 0, 3, 3, 1};
    c = (gctx){-1, mk(dev, CLT_INT64, 1, (int64_t[]){5}, ii), 2.5, G_INDEX_ADD};
    gradcheck(dev, g_op, &c, 2, ins2);
    clt_tensor_free(c.index);
    free(tv);
    free(sv);
    free(sv2);
}

Test(index, autograd_names_and_inplace_rules)
{
    clt_device *dev = cpu0();
    double tv[4] = {1, 2, 3, 4}, iv[2] = {1, 1};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 1, (int64_t[]){4}, tv);
    clt_tensor *idx = mk(dev, CLT_INT64, 1, (int64_t[]){2}, iv);
    clt_tensor *src = mk(dev, CLT_FLOAT32, 1, (int64_t[]){2}, tv), *r = NULL;
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_index_select(t, 0, idx, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "IndexSelectBackward0");
    cr_assert(clt_requires_grad(r));
    clt_tensor_free(r);
    CHECK(clt_index_add(t, 0, idx, src, 2, &r));
    cr_assert_str_eq(clt_grad_fn_name(r), "IndexAddBackward0");
    clt_tensor_free(r);

    /* one_hot's int64 result never requires grad */
    CHECK(clt_one_hot(idx, 3, &r));
    cr_assert_not(clt_requires_grad(r));
    clt_tensor_free(r);

    /* in place into a leaf that requires grad is refused with grad mode
     * on, and allowed under no_grad; from a source that requires grad it
     * records on the destination's history, as torch */
    uint64_t v0 = clt__version(t);
    clt_status st = clt_index_add_(t, 0, idx, src, 1);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "leaf"), "%s", clt_last_error());
    clt_tensor *plain = mk(dev, CLT_FLOAT32, 1, (int64_t[]){4}, tv), *gsrc = NULL;
    CHECK(clt_index_select(t, 0, idx, &gsrc));
    CHECK(clt_scatter_add_(plain, 0, idx, gsrc));
    cr_assert_str_eq(clt_grad_fn_name(plain), "ScatterAddBackward0");
    assert_values(plain, (double[]){1, 6, 3, 4}, 4);
    int was = clt_set_grad_enabled(0);
    CHECK(clt_index_add_(t, 0, idx, src, 1));
    clt_set_grad_enabled(was);
    cr_assert_eq(clt__version(t), v0 + 1);
    assert_values(t, (double[]){1, 5, 3, 4}, 4);
    clt_tensor_free(gsrc);
    clt_tensor_free(plain);
    clt_tensor_free(t);
    clt_tensor_free(idx);
    clt_tensor_free(src);
}

/* ---- int32 indices ---------------------------------------------------------------- */

/* As torch 1.13: index_select, index_add (and index_add_) and embedding take
 * int32 indices as well as int64 ones, with the same results; every data
 * dtype, every dim, strided indices, 0-d and empty ones. */
Test(index, int32_indices_select_like_int64)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {4, 5, 3}, seven = 7, oshape[3];
    for (size_t k = 0; k < N_DTYPES; k++) {
        clt_dtype dt = all_dtypes[k];
        if (!clt_device_supports_dtype(dev, dt))
            continue;
        double *tv = values(dt, 60, 201 + (unsigned)k);
        clt_tensor *t = mk_transposed(dev, dt, 3, shape, tv, 0, 2);
        for (int dim = -3; dim < 3; dim++) {
            int w = dim < 0 ? dim + 3 : dim;
            double *iv = indices(7, shape[w], 211 + (unsigned)w);
            clt_tensor *i32 = mk_sliced(dev, CLT_INT32, 1, &seven, iv, 0, 2, 1e6);
            clt_tensor *i64 = mk(dev, CLT_INT64, 1, &seven, iv), *r32 = NULL, *r64 = NULL;
            CHECK(clt_index_select(t, dim, i32, &r32));
            CHECK(clt_index_select(t, dim, i64, &r64));
            double *want = ref_index_select(3, shape, tv, w, iv, 7, oshape);
            cr_assert_eq(clt_tensor_dtype(r32), dt);
            assert_shape(r32, 3, oshape);
            assert_values(r32, want, host_numel(3, oshape));
            double *same = rd(r64);
            assert_values(r32, same, host_numel(3, oshape));
            free(same);
            free(want);
            free(iv);
            clt_tensor_free(r32);
            clt_tensor_free(r64);
            clt_tensor_free(i32);
            clt_tensor_free(i64);
        }
        clt_tensor_free(t);
        free(tv);
    }

    /* a 0-d int32 index keeps the dimension; an empty one empties it */
    double tv[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, i0 = 2;
    int64_t zero = 0;
    clt_tensor *t = mk(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, tv), *r = NULL;
    clt_tensor *idx0 = mk(dev, CLT_INT32, 0, NULL, &i0);
    clt_tensor *empty = mk(dev, CLT_INT32, 1, &zero, NULL);
    CHECK(clt_index_select(t, 0, idx0, &r));
    assert_shape(r, 2, (int64_t[]){1, 4});
    assert_values(r, tv + 8, 4);
    clt_tensor_free(r);
    CHECK(clt_index_select(t, 1, empty, &r));
    assert_shape(r, 2, (int64_t[]){3, 0});
    clt_tensor_free(r);
    clt_tensor_free(empty);
    clt_tensor_free(idx0);
    clt_tensor_free(t);
}

Test(index, int32_indices_add_like_int64)
{
    clt_device *dev = cpu0();
    int64_t shape[3] = {5, 4, 6};
    double *tv = values(CLT_FLOAT32, 120, 221);
    clt_tensor *t = mk_sliced(dev, CLT_FLOAT32, 3, shape, tv, 2, 2, 1e30);
    for (int dim = -3; dim < 3; dim++) {
        int w = dim < 0 ? dim + 3 : dim;
        int64_t count = 9, sshape[3];
        memcpy(sshape, shape, sizeof sshape);
        sshape[w] = count;
        int64_t ns = host_numel(3, sshape);
        double *iv = indices(count, shape[w], 231 + (unsigned)w);
        double *sv = values(CLT_FLOAT32, ns, 241 + (unsigned)w);
        for (int64_t i = 0; i < ns; i++)
            sv[i] = (float)(sv[i] * 1.37 + 0.001 * (double)i);
        clt_tensor *i32 = mk_sliced(dev, CLT_INT32, 1, &count, iv, 0, 3, -5);
        clt_tensor *i64 = mk(dev, CLT_INT64, 1, &count, iv);
        clt_tensor *src = mk_transposed(dev, CLT_FLOAT32, 3, sshape, sv, w, (w + 1) % 3);
        clt_tensor *r32 = NULL, *r64 = NULL;
        CHECK(clt_index_add(t, dim, i32, src, -0.3, &r32));
        CHECK(clt_index_add(t, dim, i64, src, -0.3, &r64));
        float *want = ref_index_add_f32(3, shape, tv, w, iv, count, sv, -0.3f);
        assert_shape(r32, 3, shape);
        assert_bits_f32(r32, want, 120);
        assert_bits_f32(r64, want, 120);

        /* in place, into a copy */
        clt_tensor *c = NULL;
        CHECK(clt_clone(t, &c));
        CHECK(clt_index_add_(c, dim, i32, src, -0.3));
        assert_bits_f32(c, want, 120);
        free(want);
        clt_tensor_free(c);
        clt_tensor_free(r32);
        clt_tensor_free(r64);
        clt_tensor_free(src);
        clt_tensor_free(i32);
        clt_tensor_free(i64);
        free(iv);
        free(sv);
    }
    clt_tensor_free(t);
    free(tv);

    /* integer data, and an int32 index that is a view of the destination
     * itself: it is read as it was before the write */
    double bv[6] = {2, 0, 5, 6, 7, 8};
    int64_t six = 6;
    clt_tensor *b = mk(dev, CLT_INT32, 1, &six, bv), *ix = NULL;
    clt_tensor *src = mk(dev, CLT_INT32, 1, (int64_t[]){2}, (double[]){10, 20});
    CHECK(clt_narrow(b, 0, 0, 2, &ix)); /* {2, 0} */
    CHECK(clt_index_add_(b, 0, ix, src, 3));
    assert_values(b, (double[]){62, 0, 35, 6, 7, 8}, 6);
    clt_tensor_free(ix);
    clt_tensor_free(src);
    clt_tensor_free(b);
}

/* What the caller sees of every bad index below, with indices of dtype dt:
 * the status and message of the op, of the read that reports it, and the
 * values read after. */
typedef struct bad_run {
    int n;
    clt_status st[32];
    char msg[32][512];
    double vals[32][8];
} bad_run;

static void bad_note(bad_run *b, clt_status st, const clt_tensor *probe)
{
    cr_assert(b->n < 32);
    b->st[b->n] = st;
    snprintf(b->msg[b->n], sizeof b->msg[0], "%s", st == CLT_OK ? "" : clt_last_error());
    if (probe) {
        cr_assert(clt_tensor_numel(probe) <= 8);
        double *v = rd(probe); /* the second read succeeds */
        memcpy(b->vals[b->n], v, (size_t)clt_tensor_numel(probe) * sizeof *v);
        free(v);
    }
    b->n++;
}

/* Reads probe (the first read reports the bad index) and notes it. */
static void bad_read(bad_run *b, const clt_tensor *probe)
{
    float buf[16];
    cr_assert(clt_tensor_nbytes(probe) <= sizeof buf);
    clt_status st = clt_tensor_read(probe, buf, sizeof buf);
    bad_note(b, st, probe);
}

static void bad_indices(clt_device *dev, clt_dtype dt, bad_run *b)
{
    memset(b, 0, sizeof *b);
    int64_t n = 5, three = 3, two = 2;
    double tv[5] = {1, 2, 3, 4, 5};
    const double lists[4][3] = {{1, 7, 0}, {0, -1, 4}, {INT32_MIN, 2, INT32_MAX}, {3, 5, 1}};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 1, &n, tv), *r = NULL;
    clt_tensor *src = mk(dev, CLT_FLOAT32, 1, &three, (double[]){10, 20, 30});
    clt_tensor *w = mk(dev, CLT_FLOAT32, 2, (int64_t[]){5, 1}, tv);
    for (int l = 0; l < 4; l++) {
        clt_tensor *idx = mk(dev, dt, 1, &three, lists[l]);
        bad_note(b, clt_index_select(t, 0, idx, &r), NULL);
        bad_read(b, r);
        clt_tensor_free(r);
        bad_note(b, clt_index_add(t, -1, idx, src, 2, &r), NULL);
        bad_read(b, r);
        clt_tensor_free(r);
        if (l == 3) {
            clt_tensor *c = NULL;
            CHECK(clt_clone(t, &c));
            bad_note(b, clt_index_add_(c, 0, idx, src, 1), NULL);
            bad_read(b, c);
            clt_tensor_free(c);
            bad_note(b, clt_embedding(w, idx, &r), NULL);
            bad_read(b, r);
            clt_tensor_free(r);
        }
        clt_tensor_free(idx);
    }

    /* backward through a bad index: the forward's report comes at the read of
     * the loss, the backward's own (index_add into zeros) at the read of the
     * gradient */
    clt_tensor *p = mk(dev, CLT_FLOAT32, 1, &n, tv), *y = NULL, *loss = NULL;
    clt_tensor *idx = mk(dev, dt, 1, &two, (double[]){3, 6});
    CHECK(clt_set_requires_grad(p, 1));
    bad_note(b, clt_index_select(p, 0, idx, &y), NULL);
    CHECK(clt_sum(y, &loss));
    bad_read(b, loss);
    bad_note(b, clt_backward(loss, NULL, 0), NULL);
    clt_tensor *g = NULL;
    CHECK(clt_grad(p, &g));
    cr_assert_not_null(g);
    bad_read(b, g);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(idx);
    clt_tensor_free(p);
    clt_tensor_free(w);
    clt_tensor_free(src);
    clt_tensor_free(t);
}

/* Out-of-range int32 indices, negative ones and int32's extremes included,
 * give what int64 ones give: the same statuses, messages and values, in the
 * forward ops and in the backward of index_select. */
Test(index, int32_out_of_range_as_int64)
{
    clt_device *dev = cpu0();
    bad_run *b32 = malloc(sizeof *b32), *b64 = malloc(sizeof *b64);
    bad_indices(dev, CLT_INT64, b64);
    bad_indices(dev, CLT_INT32, b32);
    cr_assert_eq(b32->n, b64->n);
    for (int k = 0; k < b64->n; k++) {
        cr_assert_eq(b32->st[k], b64->st[k], "step %d: %s vs %s", k,
                     clt_status_name(b32->st[k]), clt_status_name(b64->st[k]));
        cr_assert_str_eq(b32->msg[k], b64->msg[k], "step %d", k);
        cr_assert(memcmp(b32->vals[k], b64->vals[k], sizeof b64->vals[k]) == 0, "step %d", k);
    }
    /* and what they give is the documented report, independently of dtype */
    const char *want[] = {
        [1] = "clt_index_select: index 7 is out of bounds for dimension 0 with size 5",
        [3] = "clt_index_add: index 7 is out of bounds for dimension 0 with size 5",
        [5] = "clt_index_select: index -1 is out of bounds for dimension 0 with size 5",
        [7] = "clt_index_add: index -1 is out of bounds",
        [9] = "clt_index_select: index -2147483648 is out of bounds",
        [11] = "clt_index_add: index -2147483648 is out of bounds",
        [13] = "clt_index_select: index 5 is out of bounds",
        [15] = "clt_index_add: index 5 is out of bounds",
        [17] = "clt_index_add_: index 5 is out of bounds",
        [19] = "clt_embedding: index 5 is out of bounds for dimension 0 with size 5",
        [21] = "clt_index_select: index 6 is out of bounds",
        [23] = "clt_index_add: index 6 is out of bounds",
    };
    cr_assert_eq(b32->n, 24);
    for (int k = 0; k < 24; k++) {
        if (!want[k])
            continue;
        cr_assert_eq(b32->st[k - 1], CLT_OK, "step %d: %s", k - 1, b32->msg[k - 1]);
        cr_assert_eq(b32->st[k], CLT_ERR_INDEX_OUT_OF_RANGE, "step %d", k);
        cr_assert(strstr(b32->msg[k], want[k]), "step %d: '%s' lacks '%s'", k, b32->msg[k],
                  want[k]);
    }
    /* index_select's bad entries read 0; index_add skips them */
    cr_assert(memcmp(b32->vals[1], (double[]){2, 0, 1}, 3 * sizeof(double)) == 0);
    cr_assert(memcmp(b32->vals[3], (double[]){61, 22, 3, 4, 5}, 5 * sizeof(double)) == 0);
    cr_assert(memcmp(b32->vals[9], (double[]){0, 3, 0}, 3 * sizeof(double)) == 0);
    cr_assert(memcmp(b32->vals[19], (double[]){4, 0, 2}, 3 * sizeof(double)) == 0);
    /* the gradient of the good entry only */
    cr_assert(memcmp(b32->vals[23], (double[]){0, 0, 0, 1, 0}, 5 * sizeof(double)) == 0);
    free(b32);
    free(b64);
}

/* The gradients of index_select, index_add and embedding with int32
 * indices, against finite differences, and equal to int64's. */
Test(index, int32_indices_gradients)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *tv = ramp(12, 1.0), *sv = ramp(15, 1.25), *wv = ramp(15, 0.5);
    gc_in t = {2, {3, 4}, tv, 1};
    gctx c = {-2, mk(dev, CLT_INT32, 1, (int64_t[]){4}, (double[]){2, 0, 2, 1}), 1, G_SELECT};
    gradcheck(dev, g_op, &c, 1, &t);
    clt_tensor_free(c.index);

    gc_in ins[2] = {{2, {3, 4}, tv, 1}, {2, {3, 5}, sv, 1}};
    c = (gctx){1, mk(dev, CLT_INT32, 1, (int64_t[]){5}, (double[]){3, 0, 3, 3, 1}), 2.5,
               G_INDEX_ADD};
    gradcheck(dev, g_op, &c, 2, ins);
    clt_tensor_free(c.index);

    gc_in w = {2, {5, 3}, wv, 1};
    double ev[6] = {4, 0, 4, 2, 4, 0};
    c = (gctx){0, mk(dev, CLT_INT32, 2, (int64_t[]){2, 3}, ev), 1, G_EMBEDDING};
    gradcheck(dev, g_op, &c, 1, &w);

    /* the table's gradient, exactly: row r gets one 1 per occurrence of r */
    clt_tensor *wt = NULL, *y = NULL, *loss = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, wv, &wt));
    CHECK(clt_set_requires_grad(wt, 1));
    CHECK(clt_embedding(wt, c.index, &y));
    CHECK(clt_sum(y, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(wt, &g));
    double want[15] = {0};
    for (int i = 0; i < 6; i++)
        for (int d = 0; d < 3; d++)
            want[(int)ev[i] * 3 + d] += 1;
    assert_values(g, want, 15);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(wt);
    clt_tensor_free(c.index);
    free(tv);
    free(sv);
    free(wv);
}

/* Index dtypes torch 1.13 refuses: uint8, bool and floating indices
 * everywhere ("Expected dtype int32 or int64 for index"), int32 in gather,
 * scatter, scatter_add and scatter_add_ ("Expected dtype int64 for index");
 * nothing is changed. */
Test(index, index_dtypes_torch_refuses)
{
    clt_device *dev = cpu0();
    int64_t shape[2] = {2, 3}, two = 2;
    double tv[6] = {1, 2, 3, 4, 5, 6}, iv[6] = {1, 0, 1, 0, 1, 0};
    clt_tensor *t = mk(dev, CLT_FLOAT32, 2, shape, tv), *r = (clt_tensor *)&r;
    clt_tensor *src = mk(dev, CLT_FLOAT32, 2, shape, tv);
    const clt_dtype refused[] = {CLT_UINT8, CLT_BOOL, CLT_FLOAT32};
    for (size_t k = 0; k < 3; k++) {
        const char *name = clt_dtype_name(refused[k]);
        char want[128], want_ind[128];
        snprintf(want, sizeof want, "expected dtype int32 or int64 for index, but got %s", name);
        snprintf(want_ind, sizeof want_ind,
                 "clt_embedding: expected dtype int32 or int64 for indices, but got %s", name);
        clt_tensor *v = mk(dev, refused[k], 1, &two, iv);
        clt_tensor *m = mk(dev, refused[k], 2, shape, iv);
        EXPECT(clt_index_select(t, 1, v, &r), CLT_ERR_DTYPE_MISMATCH, want);
        cr_assert_null(r);
        EXPECT(clt_index_add(t, 0, v, src, 1, &r), CLT_ERR_DTYPE_MISMATCH, want);
        cr_assert(strstr(clt_last_error(), "clt_index_add: "), "%s", clt_last_error());
        cr_assert_null(r);
        EXPECT(clt_index_add_(t, 0, v, src, 1), CLT_ERR_DTYPE_MISMATCH, want);
        EXPECT(clt_embedding(t, m, &r), CLT_ERR_DTYPE_MISMATCH, want_ind);
        cr_assert_null(r);
        EXPECT(clt_gather(t, 1, m, &r), CLT_ERR_DTYPE_MISMATCH,
               "expected dtype int64 for index, but got");
        clt_tensor_free(v);
        clt_tensor_free(m);
    }
    clt_tensor *i32 = mk(dev, CLT_INT32, 2, shape, iv);
    EXPECT(clt_gather(t, 1, i32, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_gather: expected dtype int64 for index, but got int32");
    cr_assert_null(r);
    EXPECT(clt_scatter(t, 0, i32, src, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_scatter: expected dtype int64 for index, but got int32");
    cr_assert_null(r);
    EXPECT(clt_scatter_add(t, 0, i32, src, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_scatter_add: expected dtype int64 for index, but got int32");
    cr_assert_null(r);
    EXPECT(clt_scatter_add_(t, 0, i32, src), CLT_ERR_DTYPE_MISMATCH,
           "clt_scatter_add_: expected dtype int64 for index, but got int32");
    EXPECT(clt_one_hot(i32, 3, &r), CLT_ERR_DTYPE_MISMATCH,
           "one_hot is only applicable to index tensors of dtype int64, but got int32");
    cr_assert_null(r);
    assert_values(t, tv, 6);
    clt_tensor_free(i32);
    clt_tensor_free(src);
    clt_tensor_free(t);
}

/* embedding with padding_idx (clt_embedding_ex): the forward reads the
 * padding row as any other, and the weight's gradient is the output
 * gradient's rows added per index, skipping the entries equal to the
 * padding row (so that row's gradient is zero), computed here on the host;
 * a negative padding_idx counts from the end; one out of range is torch's
 * "Padding_idx must be within num_embeddings" with no result. */
Test(index, embedding_padding_idx)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *wv = ramp(15, 0.5), *gv = ramp(18, 0.25);
    double ev[6] = {4, 0, 4, 2, 1, 0};
    clt_tensor *idx = mk(dev, CLT_INT64, 2, (int64_t[]){2, 3}, ev);
    clt_tensor *gout = mk(dev, CLT_FLOAT64, 3, (int64_t[]){2, 3, 3}, gv);
    const int64_t pads[2] = {4, -1}; /* the same row, 4 of 5 */
    for (int k = 0; k < 2; k++) {
        clt_tensor *wt = NULL, *y = NULL, *g = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, wv, &wt));
        CHECK(clt_set_requires_grad(wt, 1));
        CHECK(clt_embedding_ex(wt, idx, &pads[k], &y));
        double fwd[18], want[15] = {0};
        for (int i = 0; i < 6; i++)
            for (int d = 0; d < 3; d++) {
                fwd[i * 3 + d] = wv[(int)ev[i] * 3 + d];
                if (ev[i] != 4)
                    want[(int)ev[i] * 3 + d] += gv[i * 3 + d];
            }
        assert_values(y, fwd, 18);
        CHECK(clt_backward(y, gout, 0));
        CHECK(clt_grad(wt, &g));
        assert_values(g, want, 15);
        clt_tensor_free(g);
        clt_tensor_free(y);
        clt_tensor_free(wt);
    }
    /* NULL is clt_embedding: the padding row learns */
    clt_tensor *wt = NULL, *y = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, wv, &wt));
    CHECK(clt_set_requires_grad(wt, 1));
    CHECK(clt_embedding_ex(wt, idx, NULL, &y));
    CHECK(clt_backward(y, gout, 0));
    CHECK(clt_grad(wt, &g));
    double *gw = rd(g);
    cr_assert_float_eq(gw[12], gv[0] + gv[6], 1e-12);
    free(gw);
    clt_tensor_free(g);
    clt_tensor_free(y);

    clt_tensor *r = (clt_tensor *)0x1;
    for (int k = 0; k < 2; k++) {
        const int64_t bad[2] = {5, -6};
        r = (clt_tensor *)0x1;
        EXPECT(clt_embedding_ex(wt, idx, &bad[k], &r), CLT_ERR_INVALID_ARGUMENT,
               "clt_embedding_ex: Padding_idx must be within num_embeddings");
        cr_assert_null(r);
    }
    clt_tensor_free(wt);
    clt_tensor_free(idx);
    clt_tensor_free(gout);
    free(wv);
    free(gv);
}

/* The host's torch.embedding_renorm_: each distinct row of w [rows, 3]
 * that idx names, scaled by max_norm / (norm + 1e-7) where its p-norm
 * exceeds max_norm (p 1, 2 or inf). */
static void host_renorm(double *w, const double *idx, int n, double max_norm, double p)
{
    bool done[16] = {false};
    for (int i = 0; i < n; i++) {
        int r = (int)idx[i];
        if (done[r])
            continue;
        done[r] = true;
        double nrm = 0;
        for (int d = 0; d < 3; d++) {
            double a = fabs(w[r * 3 + d]);
            nrm = isinf(p) ? fmax(nrm, a) : nrm + pow(a, p);
        }
        if (!isinf(p))
            nrm = pow(nrm, 1 / p);
        if (nrm > max_norm)
            for (int d = 0; d < 3; d++)
                w[r * 3 + d] *= max_norm / (nrm + 1e-7);
    }
}

static void assert_close(const clt_tensor *t, const double *want, int64_t n, double tol)
{
    cr_assert_eq(clt_tensor_numel(t), n);
    double *got = rd(t);
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "element %lld: got %.17g, want %.17g", (long long)i, got[i], want[i]);
    free(got);
}

/* clt_embedding_with_opts with max_norm: the rows read are those of the
 * weight renormalised in place (a host renorm as torch's, norm_type 2, 1
 * and inf), the rows not named unchanged, a row named twice scaled once;
 * a leaf weight that requires grad is renormalised in grad mode and its
 * gradient is the plain one; the weight's version moves, so that a graph
 * that saved it refuses backward; bad operands change nothing. */
Test(index, embedding_max_norm)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *wv = ramp(15, 2.5);
    double ev[5] = {1, 3, 1, 0, 3};
    clt_tensor *idx = mk(dev, CLT_INT64, 1, (int64_t[]){5}, ev);
    const double ps[3] = {2, 1, INFINITY}, mn = 1.5;
    for (int k = 0; k < 3; k++) {
        clt_tensor *wt = mk(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, wv), *y = NULL;
        CHECK(clt_set_requires_grad(wt, 1));
        clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
        o.max_norm = &mn;
        o.norm_type = ps[k];
        CHECK(clt_embedding_with_opts(wt, idx, &o, &y));
        double want[15], fwd[15];
        memcpy(want, wv, sizeof want);
        host_renorm(want, ev, 5, mn, ps[k]);
        for (int i = 0; i < 5; i++)
            for (int d = 0; d < 3; d++)
                fwd[i * 3 + d] = want[(int)ev[i] * 3 + d];
        assert_close(wt, want, 15, 1e-15);
        assert_close(y, fwd, 15, 1e-15);
        clt_tensor *s = NULL, *g = NULL;
        CHECK(clt_sum(y, &s));
        CHECK(clt_backward(s, NULL, 0));
        CHECK(clt_grad(wt, &g));
        double gw[15] = {0};
        for (int i = 0; i < 5; i++)
            for (int d = 0; d < 3; d++)
                gw[(int)ev[i] * 3 + d] += 1;
        assert_values(g, gw, 15);
        clt_tensor_free(g);
        clt_tensor_free(s);
        clt_tensor_free(y);
        clt_tensor_free(wt);
    }
    /* a = w * 1 saved by a * a, then renormalised: backward refuses */
    clt_tensor *wt = mk(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, wv), *a = NULL, *b = NULL,
               *s = NULL, *y = NULL;
    CHECK(clt_set_requires_grad(wt, 1));
    CHECK(clt_mul_scalar(wt, 1.0, &a));
    CHECK(clt_mul(a, a, &b));
    CHECK(clt_sum(b, &s));
    clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
    o.max_norm = &mn;
    CHECK(clt_embedding_with_opts(a, idx, &o, &y));
    EXPECT(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "is at version");
    clt_tensor_free(y);
    clt_tensor_free(s);
    clt_tensor_free(b);
    clt_tensor_free(a);

    /* refusals leave the weight as it was */
    double fv[5] = {1, 3, 1, 0, 3};
    clt_tensor *fidx = mk(dev, CLT_FLOAT32, 1, (int64_t[]){5}, fv), *r = (clt_tensor *)0x1;
    const int64_t bad = 5;
    EXPECT(clt_embedding_with_opts(wt, fidx, &o, &r), CLT_ERR_DTYPE_MISMATCH,
           "clt_embedding_with_opts");
    cr_assert_null(r);
    o.padding_idx = &bad;
    r = (clt_tensor *)0x1;
    EXPECT(clt_embedding_with_opts(wt, idx, &o, &r), CLT_ERR_INVALID_ARGUMENT,
           "Padding_idx must be within num_embeddings");
    cr_assert_null(r);
    assert_values(wt, wv, 15);
    EXPECT(clt_embedding_renorm_(wt, fidx, 1.0, 2.0), CLT_ERR_DTYPE_MISMATCH,
           "clt_embedding_renorm_");
    assert_values(wt, wv, 15);
    /* the public renorm alone, int32 indices */
    clt_tensor *i32 = mk(dev, CLT_INT32, 1, (int64_t[]){5}, ev);
    CHECK(clt_embedding_renorm_(wt, i32, mn, 2.0));
    double want[15];
    memcpy(want, wv, sizeof want);
    host_renorm(want, ev, 5, mn, 2.0);
    assert_close(wt, want, 15, 1e-15);
    clt_tensor_free(i32);
    clt_tensor_free(fidx);
    clt_tensor_free(wt);
    clt_tensor_free(idx);
    free(wv);
}

/* clt_embedding_with_opts with scale_grad_by_freq: each row's gradient is
 * the sum of its entries' output gradients over the count of its index
 * (a host sum; int64 and int32 indices, the padding row still zeros); with
 * create_graph, the gradient of sum(gw * v) for the loss sum(y * y) is 2 v
 * in each row named (torch's double backward: unscaled, the scaling
 * already in the forward's backward). */
Test(index, embedding_scale_grad_by_freq)
{
    clt_device *dev = cpu0();
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no float64");
    double *wv = ramp(15, 0.5), *gv = ramp(18, 0.25), *vv = ramp(15, 0.75);
    double ev[6] = {4, 0, 4, 2, 4, 0};
    clt_tensor *gout = mk(dev, CLT_FLOAT64, 3, (int64_t[]){2, 3, 3}, gv);
    const clt_dtype its[2] = {CLT_INT64, CLT_INT32};
    const int64_t pad = 2;
    for (int k = 0; k < 2; k++) {
        clt_tensor *idx = mk(dev, its[k], 2, (int64_t[]){2, 3}, ev);
        clt_tensor *wt = mk(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, wv), *y = NULL, *g = NULL;
        CHECK(clt_set_requires_grad(wt, 1));
        clt_embedding_opts o = CLT_EMBEDDING_DEFAULTS;
        o.scale_grad_by_freq = 1;
        o.padding_idx = k ? &pad : NULL;
        CHECK(clt_embedding_with_opts(wt, idx, &o, &y));
        CHECK(clt_backward(y, gout, 0));
        CHECK(clt_grad(wt, &g));
        double want[15] = {0}, cnt[5] = {0};
        for (int i = 0; i < 6; i++)
            cnt[(int)ev[i]] += 1;
        for (int i = 0; i < 6; i++)
            for (int d = 0; d < 3; d++)
                if (!k || ev[i] != pad)
                    want[(int)ev[i] * 3 + d] += gv[i * 3 + d] / cnt[(int)ev[i]];
        assert_close(g, want, 15, 1e-15);
        clt_tensor_free(g);
        clt_tensor_free(y);

        /* second order */
        clt_tensor *y2 = NULL, *sq = NULL, *l = NULL, *gw = NULL, *v = NULL, *p = NULL,
                   *s = NULL, *g2 = NULL;
        CHECK(clt_embedding_with_opts(wt, idx, &o, &y2));
        CHECK(clt_mul(y2, y2, &sq));
        CHECK(clt_sum(sq, &l));
        clt_grad_opts go = {1, 1, 0};
        CHECK(clt_autograd_grad_ex(&l, 1, NULL, &wt, 1, &go, &gw));
        v = mk(dev, CLT_FLOAT64, 2, (int64_t[]){5, 3}, vv);
        CHECK(clt_mul(gw, v, &p));
        CHECK(clt_sum(p, &s));
        CHECK(clt_autograd_grad_ex(&s, 1, NULL, &wt, 1, NULL, &g2));
        double want2[15] = {0};
        for (int r = 0; r < 5; r++)
            for (int d = 0; d < 3; d++)
                if (cnt[r] > 0 && (!k || r != pad))
                    want2[r * 3 + d] = 2 * vv[r * 3 + d];
        assert_close(g2, want2, 15, 1e-15);
        clt_tensor *xs[] = {y2, sq, l, gw, v, p, s, g2, wt, idx};
        for (size_t q = 0; q < sizeof xs / sizeof xs[0]; q++)
            clt_tensor_free(xs[q]);
    }
    clt_tensor_free(gout);
    free(wv);
    free(gv);
    free(vv);
}
