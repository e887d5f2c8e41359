/* test_sort.c: clt_sort, clt_argsort and clt_topk against a host reference
 * (qsort of (value, index) pairs in the same total order: NaN largest,
 * -0.0 equal to 0.0, ties by index), every dtype, dims, views, long slices,
 * empty dims, errors, gradients and the bits of two devices. */
#include "gradcheck.h"
#include "helpers.h"

typedef struct pair {
    double v;
    int64_t i;
} pair;

static int g_desc;

/* The order of reduce.h's clt_sort, written apart from cl/sort.cl. */
static int cmp_pair(const void *pa, const void *pb)
{
    const pair *a = pa, *b = pb;
    int na = isnan(a->v), nb = isnan(b->v), c;
    if (na || nb)
        c = na && nb ? 0 : na ? 1 : -1;
    else
        c = a->v < b->v ? -1 : a->v > b->v ? 1 : 0;
    if (g_desc)
        c = -c;
    if (c == 0)
        c = a->i < b->i ? -1 : a->i > b->i ? 1 : 0;
    return c;
}

/* t's elements as float64, row-major, in a new malloc'd array. */
static double *read_f64(const clt_tensor *t)
{
    clt_tensor *d = NULL;
    CHECK(clt_to_dtype(t, CLT_FLOAT64, &d));
    size_t n = (size_t)clt_tensor_numel(t);
    double *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(d, h, n * sizeof *h));
    clt_tensor_free(d);
    return h;
}

static int64_t *read_i64(const clt_tensor *t)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_INT64);
    size_t n = (size_t)clt_tensor_numel(t);
    int64_t *h = malloc((n ? n : 1) * sizeof *h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static int same_bits(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* The reference's slices of x along d ([outer, R, inner]): for the slice of
 * (o, i) and position j, the index along d of the element that sorts j-th
 * (ref[(o * R + j) * inner + i]). */
static int64_t *reference(const double *x, int nd, const int64_t *shape, int d, int desc)
{
    int64_t outer = 1, R = nd ? shape[d] : 1, inner = 1;
    for (int k = 0; k < nd; k++) {
        if (k < d)
            outer *= shape[k];
        if (k > d)
            inner *= shape[k];
    }
    size_t n = (size_t)(outer * R * inner);
    int64_t *ref = malloc((n ? n : 1) * sizeof *ref);
    pair *p = malloc((size_t)(R ? R : 1) * sizeof *p);
    g_desc = desc;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t j = 0; j < R; j++)
                p[j] = (pair){x[(o * R + j) * inner + i], j};
            qsort(p, (size_t)R, sizeof *p, cmp_pair);
            for (int64_t j = 0; j < R; j++)
                ref[(o * R + j) * inner + i] = p[j].i;
        }
    free(p);
    return ref;
}

/* Checks sort, argsort and topk of t along dim (both directions) against
 * the reference. */
static void check_all(const clt_tensor *t, int dim)
{
    int nd = clt_tensor_ndim(t);
    const int64_t *shape = clt_tensor_shape(t);
    int d = dim < 0 ? dim + (nd ? nd : 1) : dim;
    int64_t outer = 1, R = nd ? shape[d] : 1, inner = 1;
    for (int k = 0; k < nd; k++) {
        if (k < d)
            outer *= shape[k];
        if (k > d)
            inner *= shape[k];
    }
    double *x = read_f64(t);
    for (int desc = 0; desc < 2; desc++) {
        int64_t *ref = reference(x, nd, shape, d, desc);
        clt_tensor *v = NULL, *ix = NULL, *as = NULL;
        CHECK(clt_sort(t, dim, desc, &v, &ix));
        cr_assert_eq(clt_tensor_dtype(v), clt_tensor_dtype(t));
        assert_shape(v, nd, shape);
        assert_shape(ix, nd, shape);
        CHECK(clt_argsort(t, dim, desc, &as));
        double *hv = read_f64(v);
        int64_t *hi = read_i64(ix), *ha = read_i64(as);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < R; j++)
                for (int64_t i = 0; i < inner; i++) {
                    int64_t p = (o * R + j) * inner + i, want = ref[p];
                    cr_assert_eq(hi[p], want, "%s dtype %s dim %d slice (%lld, %lld) position %lld: "
                                 "index %lld, want %lld", desc ? "descending" : "ascending",
                                 clt_dtype_name(clt_tensor_dtype(t)), dim, (long long)o,
                                 (long long)i, (long long)j, (long long)hi[p], (long long)want);
                    cr_assert_eq(ha[p], want, "argsort position %lld", (long long)p);
                    double wv = x[(o * R + want) * inner + i];
                    cr_assert(same_bits(hv[p], wv), "value %g, want %g", hv[p], wv);
                }
        /* topk: the first k of the sort in the same direction. */
        if (clt_tensor_dtype(t) != CLT_BOOL) {
            /* 1 to 16 take the chunked selection, the others merge passes
             * that make only the first k of each merged run (all of them
             * for k = R). */
            int64_t ks[] = {0, 1, 5, 16, 17, 37, 100, 1000, R / 2, R};
            for (int q = 0; q < 10; q++) {
                int64_t k = ks[q] > R ? R : ks[q];
                clt_tensor *tv = NULL, *ti = NULL;
                CHECK(clt_topk(t, k, dim, desc, 1, &tv, &ti));
                int64_t kshape[8];
                for (int a = 0; a < nd; a++)
                    kshape[a] = a == d ? k : shape[a];
                assert_shape(tv, nd, kshape);
                assert_shape(ti, nd, kshape);
                double *kv = read_f64(tv);
                int64_t *ki = read_i64(ti);
                for (int64_t o = 0; o < outer; o++)
                    for (int64_t j = 0; j < k && nd > 0; j++)
                        for (int64_t i = 0; i < inner; i++) {
                            int64_t p = (o * k + j) * inner + i, s = (o * R + j) * inner + i;
                            cr_assert_eq(ki[p], ref[s], "topk k %lld index", (long long)k);
                            cr_assert(same_bits(kv[p], hv[s]), "topk k %lld value", (long long)k);
                        }
                free(kv);
                free(ki);
                clt_tensor_free(tv);
                clt_tensor_free(ti);
            }
        }
        free(ref);
        free(hv);
        free(hi);
        free(ha);
        clt_tensor_free(v);
        clt_tensor_free(ix);
        clt_tensor_free(as);
    }
    free(x);
}

/* Values with many ties; for floating dtypes NaN, infinities and both
 * zeros among them. */
static double *tied_values(size_t n, int floating, unsigned seed)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    static const double special[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
    for (size_t k = 0; k < n; k++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 8) % 1000;
        x[k] = (double)(r % 13) - 6.0 + (floating ? (double)(r % 4) * 0.25 : 0.0);
        if (floating && r % 17 == 0)
            x[k] = special[r % 5];
    }
    return x;
}

static clt_tensor *make(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                        const double *x)
{
    clt_tensor *h = NULL, *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, x, &h));
    CHECK(clt_to_dtype(h, dt, &t));
    clt_tensor_free(h);
    return t;
}

Test(sort, torch_example)
{
    /* torch 1.13: torch.sort(x) and torch.sort(x, descending=True) of this x
     * (the same with stable=True). */
    clt_device *dev = get_device("cpu");
    double x[] = {3, 1, NAN, 1, -0.0, 0, 3, NAN, 0, -0.0};
    int64_t n = 10, asc[] = {4, 5, 8, 9, 1, 3, 0, 6, 2, 7}, des[] = {2, 7, 0, 6, 1, 3, 4, 5, 8, 9};
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, &n, x);
    for (int desc = 0; desc < 2; desc++) {
        clt_tensor *v = NULL, *ix = NULL;
        CHECK(clt_sort(t, 0, desc, &v, &ix));
        int64_t *hi = read_i64(ix);
        float *hv = read_f32(v);
        for (int k = 0; k < 10; k++) {
            int64_t want = desc ? des[k] : asc[k];
            cr_assert_eq(hi[k], want, "position %d: %lld, want %lld", k, (long long)hi[k],
                         (long long)want);
            cr_assert(same_bits(hv[k], (float)x[want]));
        }
        free(hi);
        free(hv);
        clt_tensor_free(v);
        clt_tensor_free(ix);
    }
    clt_tensor_free(t);
}

Test(sort, every_dtype_every_dim)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_INT32,
                             CLT_INT64,   CLT_UINT8,   CLT_BOOL};
    int64_t shape[3] = {3, 37, 5};
    for (size_t q = 0; q < sizeof dts / sizeof dts[0]; q++) {
        if (!clt_device_supports_dtype(dev, dts[q]))
            continue;
        double *x = tied_values(3 * 37 * 5, dts[q] <= CLT_FLOAT16, 7 + (unsigned)q);
        clt_tensor *t = make(dev, dts[q], 3, shape, x);
        for (int dim = -1; dim < 3; dim++)
            check_all(t, dim);
        free(x);
        clt_tensor_free(t);
    }
}

Test(sort, shapes_and_long_slices)
{
    clt_device *dev = get_device("cpu");
    static const struct {
        int nd;
        int64_t shape[3];
        int dim;
    } cases[] = {{1, {1}, 0},          {1, {16}, 0},        {1, {17}, 0},
                 {1, {5000}, 0},       {2, {2, 3000}, 1},   {2, {1100, 3}, 0},
                 {3, {2, 513, 2}, 1},  {2, {4, 1024}, -1},  {1, {4097}, 0},
                 {1, {70000}, 0},      {2, {2100, 3}, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = 1;
        for (int k = 0; k < cases[c].nd; k++)
            n *= (size_t)cases[c].shape[k];
        for (int floating = 0; floating < 2; floating++) {
            double *x = tied_values(n, floating, 100 + (unsigned)c);
            if (c % 2)
                for (size_t k = 0; k < n; k++) /* fewer ties */
                    x[k] = isfinite(x[k]) ? x[k] * 1000 + (double)(k % 997) : x[k];
            clt_tensor *t = make(dev, floating ? CLT_FLOAT32 : CLT_INT64, cases[c].nd,
                                 cases[c].shape, x);
            check_all(t, cases[c].dim);
            free(x);
            clt_tensor_free(t);
        }
    }
}

/* topk's chunks of 1024: a last chunk shorter than k pads its candidates,
 * which must lose to every element, even to negative ones. */
Test(sort, topk_short_last_chunk)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 1030};
    double *x = tied_values(2060, 1, 5);
    for (size_t k = 0; k < 2060; k++)
        x[k] = -fabs(x[k]) - 1 - (double)(k % 7);
    for (int q = 0; q < 2; q++) {
        clt_tensor *t = make(dev, q ? CLT_INT32 : CLT_FLOAT32, 2, shape, x);
        check_all(t, 1);
        clt_tensor_free(t);
    }
    free(x);
}

Test(sort, views)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {40, 30}, eshape[3] = {3, 40, 30};
    double *x = tied_values(1200, 1, 3);
    clt_tensor *t = make(dev, CLT_FLOAT64, 2, shape, x), *tr = NULL, *sl = NULL, *ex = NULL;
    CHECK(clt_transpose(t, 0, 1, &tr));
    CHECK(clt_slice(t, 1, 1, 30, 3, &sl));
    CHECK(clt_expand(t, 3, eshape, &ex));
    for (int dim = 0; dim < 2; dim++) {
        check_all(tr, dim);
        check_all(sl, dim);
    }
    check_all(ex, 0);
    check_all(ex, 2);
    free(x);
    clt_tensor_free(t);
    clt_tensor_free(tr);
    clt_tensor_free(sl);
    clt_tensor_free(ex);
}

Test(sort, empty_and_scalar)
{
    clt_device *dev = get_device("cpu");
    int64_t s1[2] = {3, 0}, s2[2] = {0, 4};
    clt_tensor *a = NULL, *b = NULL, *v = NULL, *ix = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, s1, &a));
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, s2, &b));
    for (int dim = 0; dim < 2; dim++) {
        CHECK(clt_sort(a, dim, 0, &v, &ix));
        assert_shape(v, 2, s1);
        assert_shape(ix, 2, s1);
        clt_tensor_free(v);
        clt_tensor_free(ix);
        CHECK(clt_topk(b, 0, dim, 1, 1, &v, &ix));
        int64_t ks[2] = {dim == 0 ? 0 : 0, dim == 1 ? 0 : 4};
        assert_shape(v, 2, ks);
        clt_tensor_free(v);
        clt_tensor_free(ix);
    }
    CHECK(clt_topk(a, 0, 1, 1, 1, &v, &ix));
    assert_shape(v, 2, s1);
    clt_tensor_free(v);
    clt_tensor_free(ix);
    assert_error(clt_topk(a, 1, 1, 1, 1, &v, &ix), CLT_ERR_INVALID_ARGUMENT,
                 "selected index k out of range");
    cr_assert_null(v);
    cr_assert_null(ix);
    clt_tensor_free(a);
    clt_tensor_free(b);

    /* A 0-dim tensor is a slice of one; topk takes k 0 or 1 (torch). */
    double five = 5;
    clt_tensor *s = make(dev, CLT_FLOAT32, 0, NULL, &five);
    check_all(s, 0);
    check_all(s, -1);
    for (int64_t k = 0; k < 2; k++) {
        CHECK(clt_topk(s, k, 0, 1, 1, &v, &ix));
        assert_shape(v, 0, NULL);
        double got;
        int64_t gi;
        CHECK(clt_tensor_item(v, &got));
        CHECK(clt_tensor_read(ix, &gi, sizeof gi));
        cr_assert(got == 5 && gi == 0);
        clt_tensor_free(v);
        clt_tensor_free(ix);
    }
    assert_error(clt_topk(s, 2, 0, 1, 1, &v, &ix), CLT_ERR_INVALID_ARGUMENT,
                 "selected index k out of range");
    clt_tensor_free(s);
}

Test(sort, errors)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 3};
    double x[6] = {1, 0, 1, 0, 1, 1};
    clt_tensor *t = make(dev, CLT_FLOAT32, 2, shape, x), *bt = make(dev, CLT_BOOL, 2, shape, x);
    clt_tensor *v = (clt_tensor *)1, *ix = (clt_tensor *)1;
    assert_error(clt_topk(t, 4, 1, 1, 1, &v, &ix), CLT_ERR_INVALID_ARGUMENT,
                 "selected index k out of range");
    cr_assert_null(v);
    cr_assert_null(ix);
    names_only("clt_topk");
    assert_error(clt_topk(t, -1, 1, 1, 1, &v, &ix), CLT_ERR_INVALID_ARGUMENT,
                 "selected index k out of range");
    assert_error(clt_topk(bt, 1, 1, 1, 1, &v, &ix), CLT_ERR_DTYPE_MISMATCH, "not implemented");
    names_only("clt_topk");
    assert_error(clt_sort(t, 2, 0, &v, &ix), CLT_ERR_DIM_OUT_OF_RANGE, "Dimension out of range");
    cr_assert_null(v);
    cr_assert_null(ix);
    names_only("clt_sort");
    assert_error(clt_argsort(t, -3, 0, &v), CLT_ERR_DIM_OUT_OF_RANGE, "Dimension out of range");
    names_only("clt_argsort");
    assert_error(clt_topk(t, 1, 5, 1, 1, &v, &ix), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    assert_error(clt_sort(NULL, 0, 0, &v, &ix), CLT_ERR_NULL_ARGUMENT, "clt_sort");
    assert_error(clt_sort(t, 0, 0, NULL, NULL), CLT_ERR_NULL_ARGUMENT, "both NULL");
    assert_error(clt_topk(t, 1, 0, 1, 1, NULL, NULL), CLT_ERR_NULL_ARGUMENT, "both NULL");
    assert_error(clt_argsort(t, 0, 0, NULL), CLT_ERR_NULL_ARGUMENT, "out");
    /* Either output alone, and bool sorts (torch sorts bool). */
    CHECK(clt_sort(t, 1, 1, &v, NULL));
    clt_tensor_free(v);
    CHECK(clt_sort(t, 1, 1, NULL, &ix));
    clt_tensor_free(ix);
    CHECK(clt_topk(t, 2, 1, 0, 0, NULL, &ix));
    clt_tensor_free(ix);
    check_all(bt, 1);
    clt_tensor_free(t);
    clt_tensor_free(bt);
}

/* ---- gradients ---------------------------------------------------------------------- */

typedef struct {
    int topk, dim, desc;
    int64_t k;
} gcase;

static clt_status call_case(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gcase *c = ctx;
    if (c->topk)
        return clt_topk(in[0], c->k, c->dim, c->desc, 1, out, NULL);
    return clt_sort(in[0], c->dim, c->desc, out, NULL);
}

Test(gradients, sort_and_topk)
{
    clt_device *dev = get_device("cpu");
    double x[60];
    for (int i = 0; i < 60; i++)
        x[i] = sin(1.7 * i + 0.3) * 3; /* no ties */
    gc_in in3 = {3, {3, 4, 5}, x, 1}, in0 = {0, {0}, x, 1}, in1 = {1, {7}, x, 1};
    const gcase cases[] = {{0, 0, 0, 0}, {0, 1, 1, 0}, {0, -1, 0, 0}, {1, 2, 1, 2},
                           {1, 1, 0, 3}, {1, 0, 1, 0}, {1, -1, 0, 5}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gradcheck(dev, call_case, &cases[k], 1, &in3);
        if (cases[k].dim == 1 || cases[k].dim == 2)
            continue;
        gradcheck(dev, call_case, &cases[k], 1, &in1);
        if (cases[k].k <= 1)
            gradcheck(dev, call_case, &cases[k], 1, &in0);
    }
}

Test(sort, two_devices_same_bits)
{
    clt_device *a = get_device("cpu"), *b = second_device(a);
    int64_t shape[2] = {3, 2500};
    double *x = tied_values(7500, 1, 11);
    clt_tensor *ta = make(a, CLT_FLOAT32, 2, shape, x), *tb = make(b, CLT_FLOAT32, 2, shape, x);
    for (int desc = 0; desc < 2; desc++) {
        for (int64_t k = 5; k <= 2500; k += 2495) { /* topk's selection, then a sort */
            clt_tensor *va = NULL, *ia = NULL, *vb = NULL, *ib = NULL;
            CHECK(clt_topk(ta, k, 1, desc, 1, &va, &ia));
            CHECK(clt_topk(tb, k, 1, desc, 1, &vb, &ib));
            size_t n = (size_t)(3 * k);
            float *hva = read_f32(va), *hvb = read_f32(vb);
            int64_t *hia = read_i64(ia), *hib = read_i64(ib);
            cr_assert(memcmp(hva, hvb, n * sizeof(float)) == 0, "values differ");
            cr_assert(memcmp(hia, hib, n * sizeof(int64_t)) == 0, "indices differ");
            free(hva);
            free(hvb);
            free(hia);
            free(hib);
            clt_tensor_free(va);
            clt_tensor_free(ia);
            clt_tensor_free(vb);
            clt_tensor_free(ib);
        }
    }
    free(x);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}
