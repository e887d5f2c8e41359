/* test_misc2.c: torch's small functions (ops.h, view.h, linalg.h, index.h,
 * reduce.h, tensor.h: deg2rad .. kaiser_window) against host loops, their
 * gradients against finite differences, and their errors. */
#include "gradcheck.h"

static clt_device *dev64(void)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    return dev;
}

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

static clt_tensor *i64(clt_device *dev, int nd, const int64_t *shape, const int64_t *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, nd, shape, v, &t));
    return t;
}

/* t equals want (n doubles) exactly, NaN matching NaN; then t is freed. */
static void expect(clt_tensor *t, const double *want, size_t n, double tol, const char *what)
{
    assert_tensor_close(t, want, n, tol, tol, what);
    clt_tensor_free(t);
}

Test(misc2, pointwise)
{
    clt_device *dev = dev64();
    double x[6] = {-2.5, -0.0, 1.75, INFINITY, -INFINITY, NAN};
    double y[6] = {1.0, NAN, 1.75, -3.0, NAN, 2.0};
    int64_t s6 = 6;
    clt_tensor *a = f64(dev, 1, &s6, x), *b = f64(dev, 1, &s6, y), *r = NULL;
    double w[6];
    CHECK(clt_deg2rad(a, &r));
    for (int i = 0; i < 6; i++)
        w[i] = x[i] * (M_PI / 180.0);
    expect(r, w, 6, 1e-15, "deg2rad");
    CHECK(clt_rad2deg(a, &r));
    for (int i = 0; i < 6; i++)
        w[i] = x[i] * (180.0 / M_PI);
    expect(r, w, 6, 1e-15, "rad2deg");
    CHECK(clt_sgn(a, &r));
    expect(r, (double[]){-1, 0, 1, 1, -1, 0}, 6, 0, "sgn"); /* sign(NaN) 0, torch 1.13's CPU */
    CHECK(clt_fix(a, &r));
    expect(r, (double[]){-2, -0.0, 1, INFINITY, -INFINITY, NAN}, 6, 0, "fix");
    CHECK(clt_isposinf(a, &r));
    expect(r, (double[]){0, 0, 0, 1, 0, 0}, 6, 0, "isposinf");
    CHECK(clt_isneginf(a, &r));
    expect(r, (double[]){0, 0, 0, 0, 1, 0}, 6, 0, "isneginf");
    CHECK(clt_isreal(a, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
    expect(r, (double[]){1, 1, 1, 1, 1, 1}, 6, 0, "isreal");
    /* fmax and fmin: NaN loses to a number */
    CHECK(clt_fmax(a, b, &r));
    for (int i = 0; i < 6; i++)
        w[i] = fmax(x[i], y[i]);
    expect(r, w, 6, 0, "fmax");
    CHECK(clt_fmin(a, b, &r));
    for (int i = 0; i < 6; i++)
        w[i] = fmin(x[i], y[i]);
    expect(r, w, 6, 0, "fmin");
    CHECK(clt_clamp_min(a, 0.5, &r));
    expect(r, (double[]){0.5, 0.5, 1.75, INFINITY, 0.5, NAN}, 6, 0, "clamp_min");
    CHECK(clt_clamp_max(a, 0.5, &r));
    expect(r, (double[]){-2.5, -0.0, 0.5, 0.5, -INFINITY, NAN}, 6, 0, "clamp_max");
    /* integers: deg2rad gives float32, isposinf all false */
    int64_t iv[3] = {0, 90, -180}, s3 = 3;
    clt_tensor *ti = i64(dev, 1, &s3, iv);
    CHECK(clt_deg2rad(ti, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    expect(r, (double[]){0, M_PI / 2, -M_PI}, 3, 1e-6, "deg2rad int");
    CHECK(clt_isposinf(ti, &r));
    expect(r, (double[]){0, 0, 0}, 3, 0, "isposinf int");
    assert_error(clt_fix(NULL, &r), CLT_ERR_NULL_ARGUMENT, "clt_fix");
    cr_assert_null(r);
    clt_tensor_free(ti);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(misc2, shapes_and_broadcasting)
{
    clt_device *dev = dev64();
    double v[6] = {1, 2, 3, 4, 5, 6};
    int64_t s23[2] = {2, 3}, s3 = 3;
    clt_tensor *a = f64(dev, 2, s23, v), *r = NULL;
    CHECK(clt_fliplr(a, &r));
    expect(r, (double[]){3, 2, 1, 6, 5, 4}, 6, 0, "fliplr");
    CHECK(clt_flipud(a, &r));
    expect(r, (double[]){4, 5, 6, 1, 2, 3}, 6, 0, "flipud");
    clt_tensor *v3 = f64(dev, 1, &s3, v);
    assert_error(clt_fliplr(v3, &r), CLT_ERR_SHAPE_MISMATCH, "2-d");
    cr_assert_null(r);
    /* diagflat of [2, 3] with offset 1: a 7 x 7 matrix */
    CHECK(clt_diagflat(a, 1, &r));
    assert_shape(r, 2, (int64_t[]){7, 7});
    double want[49] = {0};
    for (int i = 0; i < 6; i++)
        want[i * 7 + i + 1] = v[i];
    expect(r, want, 49, 0, "diagflat");
    /* broadcast_to, broadcast_shapes, broadcast_tensors */
    CHECK(clt_broadcast_to(v3, 2, (int64_t[]){2, 3}, &r));
    expect(r, (double[]){1, 2, 3, 1, 2, 3}, 6, 0, "broadcast_to");
    int nd = -1;
    int64_t shape[CLT_MAX_DIMS];
    const int64_t sa[2] = {4, 1}, sb[1] = {5}, sc[3] = {2, 1, 1};
    CHECK(clt_broadcast_shapes((const int[]){2, 1, 3}, (const int64_t *const[]){sa, sb, sc}, 3,
                               &nd, shape));
    cr_assert_eq(nd, 3);
    cr_assert(shape[0] == 2 && shape[1] == 4 && shape[2] == 5);
    assert_error(clt_broadcast_shapes((const int[]){1, 1}, (const int64_t *const[]){sb, s23 + 1},
                                      2, &nd, shape),
                 CLT_ERR_SHAPE_MISMATCH, NULL);
    cr_assert_eq(nd, 0);
    clt_tensor **ts = NULL;
    size_t n = 9;
    clt_tensor *col = NULL;
    CHECK(clt_reshape(v3, 3, (int64_t[]){3, 1, 1}, &col));
    CHECK(clt_broadcast_tensors((const clt_tensor *[]){col, a}, 2, &ts, &n));
    cr_assert_eq(n, 2);
    assert_shape(ts[0], 3, (int64_t[]){3, 2, 3});
    double w3[18];
    for (int k = 0; k < 18; k++)
        w3[k] = v[k / 6];
    expect(ts[0], w3, 18, 0, "broadcast_tensors 0");
    for (int k = 0; k < 18; k++)
        w3[k] = v[k % 6];
    expect(ts[1], w3, 18, 0, "broadcast_tensors 1");
    clt_free(ts);
    clt_tensor_free(col);
    clt_tensor_free(v3);
    clt_tensor_free(a);
}

Test(misc2, products_and_matrices)
{
    clt_device *dev = dev64();
    double av[6] = {1, -2, 3, 0.5, 4, -1}, bv[12], u[3] = {1, 2, -1}, z[4] = {0.5, -1, 2, 3};
    for (int i = 0; i < 12; i++)
        bv[i] = sin(i + 1.0);
    int64_t s23[2] = {2, 3}, s43[2] = {4, 3}, s3 = 3, s4 = 4;
    clt_tensor *a = f64(dev, 2, s23, av), *b = f64(dev, 2, s43, bv), *r = NULL;
    /* inner: [2, 3] x [4, 3] -> [2, 4] */
    CHECK(clt_inner(a, b, &r));
    double w[12];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            w[i * 4 + j] = 0;
            for (int k = 0; k < 3; k++)
                w[i * 4 + j] += av[i * 3 + k] * bv[j * 3 + k];
        }
    expect(r, w, 8, 1e-14, "inner");
    /* int64 inner */
    int64_t ia[3] = {1, 2, 3}, ib[3] = {4, -5, 6};
    clt_tensor *x = i64(dev, 1, &s3, ia), *y = i64(dev, 1, &s3, ib);
    CHECK(clt_inner(x, y, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    expect(r, (double[]){12}, 1, 0, "inner int64");
    clt_tensor_free(x);
    clt_tensor_free(y);
    /* addr: 0.5 * M + 2 * u z^T */
    clt_tensor *tu = f64(dev, 1, &s3, u), *tz = f64(dev, 1, &s4, z), *m = NULL;
    CHECK(clt_reshape(b, 2, (int64_t[]){3, 4}, &m));
    CHECK(clt_addr(m, tu, tz, 0.5, 2.0, &r));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            w[i * 4 + j] = 0.5 * bv[i * 4 + j] + 2.0 * u[i] * z[j];
    expect(r, w, 12, 1e-14, "addr");
    CHECK(clt_ger(tu, tz, &r));
    for (int i = 0; i < 12; i++)
        w[i] = u[i / 4] * z[i % 4];
    expect(r, w, 12, 0, "ger");
    /* chain_matmul of [2, 3] [3, 4] [4, 1] */
    clt_tensor *zc = NULL;
    CHECK(clt_reshape(tz, 2, (int64_t[]){4, 1}, &zc));
    CHECK(clt_chain_matmul((const clt_tensor *[]){a, m, zc}, 3, &r));
    for (int i = 0; i < 2; i++) {
        double s = 0;
        for (int j = 0; j < 4; j++) {
            double t = 0;
            for (int k = 0; k < 3; k++)
                t += av[i * 3 + k] * bv[k * 4 + j];
            s += t * z[j];
        }
        w[i] = s;
    }
    expect(r, w, 2, 1e-13, "chain_matmul");
    /* logdet of [[2, 1], [1, 3]] (5), [[-1, 0], [0, 1]] (NaN), zeros (-inf) */
    double mats[12] = {2, 1, 1, 3, -1, 0, 0, 1, 0, 0, 0, 0};
    clt_tensor *M = f64(dev, 3, (int64_t[]){3, 2, 2}, mats);
    CHECK(clt_logdet(M, &r));
    expect(r, (double[]){log(5.0), NAN, -INFINITY}, 3, 1e-14, "logdet");
    /* nuclear norm of 2 x 2: sqrt(fro^2 + 2 |det|); frobenius */
    clt_tensor *M0 = NULL, *M1 = NULL;
    CHECK(clt_narrow(M, 0, 0, 1, &M1));
    CHECK(clt_reshape(M1, 2, (int64_t[]){2, 2}, &M0));
    clt_tensor_free(M1);
    CHECK(clt_nuclear_norm(M0, NULL, 0, &r));
    expect(r, (double[]){sqrt(15.0 + 10.0)}, 1, 1e-12, "nuclear_norm");
    CHECK(clt_frobenius_norm(M, (const int[]){1, 2}, 2, 0, &r));
    expect(r, (double[]){sqrt(15.0), sqrt(2.0), 0}, 3, 1e-14, "frobenius_norm");
    CHECK(clt_matrix_power(M0, 3, &r));
    /* [[2,1],[1,3]]^2 = [[5,5],[5,10]], ^3 = [[15,20],[20,35]] */
    expect(r, (double[]){15, 20, 20, 35}, 4, 1e-13, "matrix_power");
    clt_tensor_free(M0);
    clt_tensor_free(M);
    clt_tensor_free(zc);
    clt_tensor_free(m);
    clt_tensor_free(tu);
    clt_tensor_free(tz);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(misc2, vander_and_renorm)
{
    clt_device *dev = dev64();
    double xv[3] = {2, -0.5, 3};
    int64_t s3 = 3, n4 = 4;
    clt_tensor *x = f64(dev, 1, &s3, xv), *r = NULL;
    double w[12];
    CHECK(clt_vander(x, &n4, 0, &r));
    assert_shape(r, 2, (int64_t[]){3, 4});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            w[i * 4 + j] = pow(xv[i], 3 - j);
    expect(r, w, 12, 1e-15, "vander");
    CHECK(clt_linalg_vander(x, NULL, &r));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            w[i * 3 + j] = pow(xv[i], j);
    expect(r, w, 9, 1e-15, "linalg_vander");
    int64_t one = 1;
    assert_error(clt_linalg_vander(x, &one, &r), CLT_ERR_INVALID_ARGUMENT, "greater than 1");
    /* renorm rows of [3, 2] to 2-norm at most 1 */
    double m[6] = {3, 4, 0.3, 0.4, -6, 8};
    clt_tensor *t = f64(dev, 2, (int64_t[]){3, 2}, m);
    CHECK(clt_renorm(t, 2.0, 0, 1.0, &r));
    for (int i = 0; i < 3; i++) {
        double nrm = hypot(m[2 * i], m[2 * i + 1]), f = nrm > 1.0 ? 1.0 / (nrm + 1e-7) : 1.0;
        w[2 * i] = m[2 * i] * f;
        w[2 * i + 1] = m[2 * i + 1] * f;
    }
    expect(r, w, 6, 1e-15, "renorm");
    assert_error(clt_renorm(x, 2.0, 0, 1.0, &r), CLT_ERR_SHAPE_MISMATCH, "2 dimensions");
    clt_tensor_free(t);
    clt_tensor_free(x);
}

Test(misc2, take_along_dim_and_index_reduce)
{
    clt_device *dev = dev64();
    double v[12];
    for (int i = 0; i < 12; i++)
        v[i] = i * 1.5 - 4;
    int64_t s34[2] = {3, 4};
    clt_tensor *t = f64(dev, 2, s34, v), *r = NULL;
    /* indices [3, 1] broadcast along dim 1 from [1, 2]... per row */
    int64_t iv[3] = {3, 0, 2};
    clt_tensor *idx = i64(dev, 2, (int64_t[]){3, 1}, iv);
    int d1 = 1;
    CHECK(clt_take_along_dim(t, idx, &d1, &r));
    assert_shape(r, 2, (int64_t[]){3, 1});
    expect(r, (double[]){v[3], v[4], v[10]}, 3, 0, "take_along_dim");
    int64_t fv[2] = {11, 5}, s2 = 2;
    clt_tensor *flat = i64(dev, 1, &s2, fv);
    CHECK(clt_take_along_dim(t, flat, NULL, &r));
    expect(r, (double[]){v[11], v[5]}, 2, 0, "take_along_dim flat");
    /* index_reduce along 0 of a [3, 4] with 4 source rows */
    double src[16];
    for (int i = 0; i < 16; i++)
        src[i] = cos(i * 0.7) * 3;
    int64_t ix[4] = {2, 0, 2, 1}, s4 = 4;
    clt_tensor *s = f64(dev, 2, (int64_t[]){4, 4}, src), *ti = i64(dev, 1, &s4, ix);
    const char *reds[4] = {"prod", "mean", "amax", "amin"};
    for (int k = 0; k < 4; k++)
        for (int inc = 0; inc < 2; inc++) {
            double w[12], cnt[12];
            for (int e = 0; e < 12; e++) {
                cnt[e] = inc;
                w[e] = inc ? v[e] : (k == 0 ? 1 : k == 1 ? 0 : k == 2 ? -INFINITY : INFINITY);
            }
            for (int row = 0; row < 4; row++)
                for (int c = 0; c < 4; c++) {
                    int e = (int)ix[row] * 4 + c;
                    double q = src[row * 4 + c];
                    cnt[e] += 1;
                    w[e] = k == 0 ? w[e] * q : k == 1 ? w[e] + q : k == 2 ? fmax(w[e], q)
                                                                            : fmin(w[e], q);
                }
            if (k == 1)
                for (int e = 0; e < 12; e++)
                    w[e] = cnt[e] ? w[e] / cnt[e] : v[e];
            CHECK(clt_index_reduce(t, 0, ti, s, reds[k], inc, &r));
            expect(r, w, 12, 1e-14, reds[k]);
        }
    assert_error(clt_index_reduce(t, 0, ti, s, "sum", 1, &r), CLT_ERR_INVALID_ARGUMENT,
                 "prod, mean, amax or amin");
    cr_assert_null(r);
    clt_tensor_free(s);
    clt_tensor_free(ti);
    clt_tensor_free(flat);
    clt_tensor_free(idx);
    clt_tensor_free(t);
}

Test(misc2, gradient)
{
    clt_device *dev = dev64();
    double f[20];
    for (int i = 0; i < 20; i++)
        f[i] = sin(0.3 * i * i) + i;
    clt_tensor *t = f64(dev, 2, (int64_t[]){4, 5}, f);
    for (int eo = 1; eo <= 2; eo++) {
        clt_tensor **g = NULL;
        size_t n = 0;
        double h[2] = {0.5, 2.0};
        CHECK(clt_gradient(t, h, 2, NULL, 0, eo, &g, &n));
        cr_assert_eq(n, 2);
        for (int d = 0; d < 2; d++) {
            int len = d ? 5 : 4, step = d ? 1 : 5;
            double w[20];
            for (int e = 0; e < 20; e++) {
                int i = d ? e % 5 : e / 5, base = e - i * step;
#define F(k) f[base + (k) * step]
                if (i == 0)
                    w[e] = eo == 1 ? (F(1) - F(0)) / h[d]
                                   : (-1.5 * F(0) + 2 * F(1) - 0.5 * F(2)) / h[d];
                else if (i == len - 1)
                    w[e] = eo == 1 ? (F(len - 1) - F(len - 2)) / h[d]
                                   : (0.5 * F(len - 3) - 2 * F(len - 2) + 1.5 * F(len - 1)) / h[d];
                else
                    w[e] = (F(i + 1) - F(i - 1)) / (2 * h[d]);
#undef F
            }
            expect(g[d], w, 20, 1e-13, "gradient");
        }
        clt_free(g);
    }
    clt_tensor **g = NULL;
    size_t n = 7;
    assert_error(clt_gradient(t, NULL, 0, NULL, 0, 3, &g, &n), CLT_ERR_INVALID_ARGUMENT,
                 "edge_order");
    cr_assert(g == NULL && n == 0);
    clt_tensor_free(t);
}

Test(misc2, histogram)
{
    clt_device *dev = dev64();
    double x[10] = {-1.0, -0.2, 0.0, 0.3, 0.5, 0.99, 1.0, 2.5, -3.0, 0.25};
    double wv[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    int64_t s10 = 10;
    clt_tensor *t = f64(dev, 1, &s10, x), *wt = f64(dev, 1, &s10, wv), *h = NULL, *e = NULL;
    double range[2] = {-1.0, 1.0};
    CHECK(clt_histogram(t, 4, NULL, range, wt, 0, &h, &e));
    expect(e, (double[]){-1, -0.5, 0, 0.5, 1}, 5, 0, "edges");
    double want[4] = {0};
    for (int i = 0; i < 10; i++) {
        if (x[i] < -1 || x[i] > 1)
            continue;
        int b = (int)floor((x[i] + 1) / 0.5);
        want[b > 3 ? 3 : b] += wv[i];
    }
    expect(h, want, 4, 0, "hist");
    /* density over given edges */
    double ev[3] = {-3, 0, 0.5};
    int64_t s3 = 3;
    clt_tensor *te = f64(dev, 1, &s3, ev);
    CHECK(clt_histogram(t, 0, te, NULL, NULL, 1, &h, &e));
    double c0 = 0, c1 = 0;
    for (int i = 0; i < 10; i++) {
        if (x[i] >= -3 && x[i] < 0)
            c0++;
        else if (x[i] >= 0 && x[i] <= 0.5)
            c1++;
    }
    expect(h, (double[]){c0 / (c0 + c1) / 3.0, c1 / (c0 + c1) / 0.5}, 2, 1e-15, "density");
    clt_tensor_free(e);
    assert_error(clt_histogram(t, 0, NULL, NULL, NULL, 0, &h, &e), CLT_ERR_INVALID_ARGUMENT,
                 "bins must be > 0");
    cr_assert(h == NULL && e == NULL);
    clt_tensor_free(te);
    clt_tensor_free(wt);
    clt_tensor_free(t);
}

Test(misc2, creation_and_windows)
{
    clt_device *dev = dev64();
    clt_tensor *r = NULL;
    CHECK(clt_scalar_tensor(dev, CLT_FLOAT64, -2.5, &r));
    cr_assert_eq(clt_tensor_ndim(r), 0);
    expect(r, (double[]){-2.5}, 1, 0, "scalar_tensor");
    CHECK(clt_empty_strided(dev, CLT_FLOAT32, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, &r));
    assert_shape(r, 2, (int64_t[]){2, 3});
    cr_assert(clt_tensor_strides(r)[0] == 1 && clt_tensor_strides(r)[1] == 2);
    clt_tensor_free(r);
    /* windows against their formulas in double */
    for (int per = 0; per < 2; per++) {
        int64_t L = 9, N = per ? L + 1 : L;
        double w[9];
        CHECK(clt_hann_window(dev, CLT_FLOAT64, L, per, &r));
        for (int i = 0; i < L; i++)
            w[i] = 0.5 - 0.5 * cos(2 * M_PI * i / (N - 1));
        expect(r, w, 9, 1e-15, "hann");
        CHECK(clt_hamming_window(dev, CLT_FLOAT64, L, per, 0.54, 0.46, &r));
        for (int i = 0; i < L; i++)
            w[i] = 0.54 - 0.46 * cos(2 * M_PI * i / (N - 1));
        expect(r, w, 9, 1e-15, "hamming");
        CHECK(clt_blackman_window(dev, CLT_FLOAT64, L, per, &r));
        for (int i = 0; i < L; i++)
            w[i] = 0.42 - 0.5 * cos(2 * M_PI * i / (N - 1)) + 0.08 * cos(4 * M_PI * i / (N - 1));
        expect(r, w, 9, 1e-15, "blackman");
        CHECK(clt_bartlett_window(dev, CLT_FLOAT64, L, per, &r));
        for (int i = 0; i < L; i++)
            w[i] = 1 - fabs(2.0 * i / (N - 1) - 1);
        expect(r, w, 9, 1e-15, "bartlett");
        CHECK(clt_kaiser_window(dev, CLT_FLOAT32, L, per, 5.0, &r));
        /* I0(beta r) / I0(beta) by their series */
        for (int i = 0; i < L; i++) {
            double a = (N - 1) / 2.0, q = (i - a) / a, arg = 5.0 * sqrt(1 - q * q);
            double s1 = 0, s2 = 0, t1 = 1, t2 = 1;
            for (int k = 0; k < 80; k++) {
                s1 += t1;
                s2 += t2;
                t1 *= (arg * arg / 4) / ((k + 1.0) * (k + 1.0));
                t2 *= (25.0 / 4) / ((k + 1.0) * (k + 1.0));
            }
            w[i] = s1 / s2;
        }
        expect(r, w, 9, 1e-6, "kaiser");
    }
    assert_error(clt_hann_window(dev, CLT_INT32, 5, 1, &r), CLT_ERR_DTYPE_MISMATCH,
                 "floating point");
    cr_assert_null(r);
}

/* ---- gradients against finite differences ------------------------------ */

static clt_status g_fmax(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_fmax(in[0], in[1], out);
}

static clt_status g_renorm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_renorm(in[0], 3.0, 1, 1.2, out);
}

static clt_status g_logdet(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_logdet(in[0], out);
}

static clt_status g_addr(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_addr(in[0], in[1], in[2], 0.5, -2.0, out);
}

static clt_status g_vander(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_linalg_vander(in[0], (const int64_t[]){4}, out);
}

static clt_status g_gradient(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor **g = NULL;
    size_t n = 0;
    int k = *(const int *)ctx;
    clt_status st = clt_gradient(in[0], (const double[]){0.7}, 1, NULL, 0, k + 1, &g, &n);
    if (st != CLT_OK)
        return st;
    *out = g[k];
    clt_tensor_free(g[1 - k]);
    clt_free(g);
    return CLT_OK;
}

static clt_status g_index_reduce(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *idx = NULL;
    int64_t iv[3] = {1, 0, 1}, s3 = 3;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_INT64, 1, &s3, iv, &idx);
    if (st == CLT_OK)
        st = clt_index_reduce(in[0], 0, idx, in[1], (const char *)ctx, 1, out);
    clt_tensor_free(idx);
    return st;
}

Test(misc2, gradients)
{
    clt_device *dev = dev64();
    double a[6] = {0.3, -1.2, 2.0, 0.7, -0.4, 1.1}, b[6] = {0.5, -1.0, 1.5, 0.9, -0.8, 0.2};
    gradcheck(dev, g_fmax, NULL, 2,
              (gc_in[]){{2, {2, 3}, a, 1}, {2, {2, 3}, b, 1}});
    double m[12];
    for (int i = 0; i < 12; i++)
        m[i] = sin(i * 1.3) * 1.5;
    gradcheck(dev, g_renorm, NULL, 1, (gc_in[]){{3, {2, 3, 2}, m, 1}});
    double spd[9] = {4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2};
    gradcheck(dev, g_logdet, NULL, 1, (gc_in[]){{2, {3, 3}, spd, 1}});
    gradcheck(dev, g_addr, NULL, 3,
              (gc_in[]){{2, {2, 3}, m, 1}, {1, {2}, a, 1}, {1, {3}, b, 1}});
    gradcheck(dev, g_vander, NULL, 1, (gc_in[]){{2, {2, 3}, a, 1}});
    for (int k = 0; k < 2; k++)
        gradcheck(dev, g_gradient, &k, 1, (gc_in[]){{2, {3, 4}, m, 1}});
    const char *reds[4] = {"prod", "mean", "amax", "amin"};
    for (int k = 0; k < 4; k++)
        gradcheck(dev, g_index_reduce, reds[k], 2,
                  (gc_in[]){{2, {2, 2}, a, 1}, {2, {3, 2}, b, 1}});
    /* sgn's gradient is zeros, as sign's */
    clt_tensor *x = NULL, *y = NULL, *s = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (int64_t[]){3}, a, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_sgn(x, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(x, &g));
    expect(g, (double[]){0, 0, 0}, 3, 0, "sgn grad");
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* A failure inside a composed op names the call the user made. */
Test(misc2, messages_name_the_call)
{
    clt_device *dev = dev64();
    double v[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *a = f64(dev, 2, (int64_t[]){2, 3}, v), *r = NULL;
    assert_error(clt_ger(a, a, &r), CLT_ERR_INVALID_ARGUMENT, NULL);
    names_only("clt_ger");
    assert_error(clt_matrix_power(a, 2, &r), CLT_ERR_INVALID_ARGUMENT, "square");
    names_only("clt_matrix_power");
    assert_error(clt_nuclear_norm(a, (const int[]){0, 0}, 0, &r), CLT_ERR_INVALID_ARGUMENT, NULL);
    names_only("clt_nuclear_norm");
    assert_error(clt_chain_matmul((const clt_tensor *[]){a, a}, 2, &r), CLT_ERR_SHAPE_MISMATCH,
                 NULL);
    names_only("clt_chain_matmul");
    cr_assert_null(r);
    clt_tensor_free(a);
}

/* histogramdd of 2-d points against a host count, with weights. */
Test(misc2, histogramdd)
{
    clt_device *dev = dev64();
    double pts[16] = {0.1, 0.1, 0.9, 0.2, 0.5, 0.5, 1.0,  1.0,
                      -0.5, 0.3, 0.2, 0.8, 0.7, 0.7, 0.0, 0.99};
    double wv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    clt_tensor *x = f64(dev, 2, (int64_t[]){8, 2}, pts), *w = f64(dev, 1, (int64_t[]){8}, wv);
    clt_tensor *h = NULL, **e = NULL;
    size_t n = 0;
    const int64_t bins[2] = {2, 4};
    const double range[4] = {0, 1, 0, 1};
    CHECK(clt_histogramdd(x, bins, NULL, 2, range, w, 0, &h, &e, &n));
    cr_assert_eq(n, 2);
    assert_shape(h, 2, (int64_t[]){2, 4});
    double want[8] = {0};
    for (int i = 0; i < 8; i++) {
        double a = pts[2 * i], b = pts[2 * i + 1];
        if (a < 0 || a > 1 || b < 0 || b > 1)
            continue;
        int ia = a >= 1 ? 1 : (int)floor(a * 2), ib = b >= 1 ? 3 : (int)floor(b * 4);
        want[ia * 4 + ib] += wv[i];
    }
    expect(h, want, 8, 0, "histogramdd");
    expect(e[0], (double[]){0, 0.5, 1}, 3, 0, "edges 0");
    expect(e[1], (double[]){0, 0.25, 0.5, 0.75, 1}, 5, 0, "edges 1");
    clt_free(e);
    assert_error(clt_histogramdd(x, bins, NULL, 1, range, NULL, 0, &h, &e, &n),
                 CLT_ERR_INVALID_ARGUMENT, "clt_histogramdd");
    cr_assert(h == NULL && e == NULL && n == 0);
    clt_tensor_free(w);
    clt_tensor_free(x);
}

/* gradient with coordinates: exact for a quadratic (second order inside,
 * and at the ends with edge_order 2), whatever the spacing. */
Test(misc2, gradient_coords)
{
    clt_device *dev = dev64();
    double xs[5] = {0.0, 0.3, 1.0, 1.2, 2.5}, f[5];
    for (int i = 0; i < 5; i++)
        f[i] = 3 * xs[i] * xs[i] - 2 * xs[i] + 1;
    int64_t s5 = 5;
    clt_tensor *t = f64(dev, 1, &s5, f), *c = f64(dev, 1, &s5, xs), **g = NULL;
    size_t n = 0;
    CHECK(clt_gradient_coords(t, (const clt_tensor *[]){c}, 1, NULL, 0, 2, &g, &n));
    cr_assert_eq(n, 1);
    double want[5];
    for (int i = 0; i < 5; i++)
        want[i] = 6 * xs[i] - 2;
    expect(g[0], want, 5, 1e-12, "gradient_coords");
    clt_free(g);
    /* edge_order 1: one-sided differences at the ends */
    CHECK(clt_gradient_coords(t, (const clt_tensor *[]){c}, 1, NULL, 0, 1, &g, &n));
    want[0] = (f[1] - f[0]) / 0.3;
    want[4] = (f[4] - f[3]) / 1.3;
    expect(g[0], want, 5, 1e-12, "gradient_coords order 1");
    clt_free(g);
    assert_error(clt_gradient_coords(t, (const clt_tensor *[]){t, c}, 2, NULL, 0, 1, &g, &n),
                 CLT_ERR_INVALID_ARGUMENT, "same length");
    cr_assert(g == NULL && n == 0);
    clt_tensor_free(c);
    clt_tensor_free(t);
}
