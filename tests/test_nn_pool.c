/* test_nn_pool.c: max pooling's indices, adaptive max pooling, max
 * unpooling, LP pooling, local response norm, instance norm and the
 * channel and alpha dropouts (functions and layers): values against float64
 * host loops, gradients by finite differences in float64, the dropouts'
 * masks reproduced from the generator's seed and their statistics, the
 * layers' names, state and modes, and torch's errors. */
#include <math.h>
#include <string.h>

#include "gradcheck.h"

/* Values in [-3, 3) from a seed, all distinct (no ties for the maxima). */
static void fill_distinct(double *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (double)((seed >> 8) % 6001) / 1000.0 - 3.0 + (double)i * 1e-7;
    }
}

static clt_tensor *f64(clt_device *dev, int nd, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    return t;
}

static void assert_close_all(const clt_tensor *t, const double *want, size_t n, double rtol,
                             double atol)
{
    cr_assert_eq(clt_tensor_numel(t), (int64_t)n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol), "element %zu: got %.12g, want %.12g",
                  i, got[i], want[i]);
    free(got);
}

/* ---- adaptive max pooling and max pooling's indices ---------------------------- */

static int64_t win_start(int64_t i, int64_t size, int64_t n)
{
    return i * size / n;
}

static int64_t win_end(int64_t i, int64_t size, int64_t n)
{
    return ((i + 1) * size + n - 1) / n;
}

/* adaptive_max_pool2d of planes [P, H, W] into [P, Ho, Wo]: first maximum
 * in row-major order, its flat index. */
static void adaptive_max_ref(const double *x, int64_t P, int64_t H, int64_t W, int64_t Ho,
                             int64_t Wo, double *y, int64_t *idx)
{
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                double m = -INFINITY;
                int64_t best = win_start(i, H, Ho) * W + win_start(j, W, Wo);
                for (int64_t h = win_start(i, H, Ho); h < win_end(i, H, Ho); h++)
                    for (int64_t w = win_start(j, W, Wo); w < win_end(j, W, Wo); w++)
                        if (x[p * H * W + h * W + w] > m) {
                            m = x[p * H * W + h * W + w];
                            best = h * W + w;
                        }
                y[(p * Ho + i) * Wo + j] = m;
                idx[(p * Ho + i) * Wo + j] = best;
            }
}

static void assert_indices(const clt_tensor *t, const int64_t *want, size_t n)
{
    cr_assert_eq(clt_tensor_dtype(t), CLT_INT64);
    cr_assert_eq(clt_tensor_numel(t), (int64_t)n);
    int64_t *got = malloc((n ? n : 1) * sizeof *got);
    CHECK(clt_tensor_read(t, got, n * sizeof *got));
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "index %zu: got %lld, want %lld", i, (long long)got[i],
                     (long long)want[i]);
    free(got);
}

Test(nn_pool, adaptive_max_pool_values_and_indices)
{
    clt_device *dev = get_device("cpu");
    const int64_t cases[][4] = {{7, 6, 3, 4}, {5, 5, 2, 2}, {3, 4, 5, 7}, {9, 2, 9, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t H = cases[c][0], W = cases[c][1], Ho = cases[c][2], Wo = cases[c][3];
        int64_t shape[4] = {2, 3, H, W}, o[2] = {Ho, Wo}, P = 6;
        double *x = malloc(sizeof(double) * (size_t)(P * H * W));
        double *y = malloc(sizeof(double) * (size_t)(P * Ho * Wo));
        int64_t *idx = malloc(sizeof(int64_t) * (size_t)(P * Ho * Wo));
        fill_distinct(x, (size_t)(P * H * W), (unsigned)c + 1);
        adaptive_max_ref(x, P, H, W, Ho, Wo, y, idx);
        for (int dt = 0; dt < 2; dt++) {
            clt_tensor *t = tensor_of(dev, dt ? CLT_FLOAT64 : CLT_FLOAT32, 4, shape, x);
            clt_tensor *r = NULL, *ri = NULL, *t3 = NULL, *r3 = NULL, *ri3 = NULL;
            CHECK(clt_adaptive_max_pool2d(t, o, &r, &ri));
            int64_t want[4] = {2, 3, Ho, Wo};
            assert_shape(r, 4, want);
            assert_close_all(r, y, (size_t)(P * Ho * Wo), dt ? 0 : 1e-7, 0);
            assert_indices(ri, idx, (size_t)(P * Ho * Wo));
            /* unbatched: [6, H, W], the same planes */
            int64_t s3[3] = {6, H, W};
            CHECK(clt_reshape(t, 3, s3, &t3));
            CHECK(clt_adaptive_max_pool2d(t3, o, &r3, &ri3));
            assert_close_all(r3, y, (size_t)(P * Ho * Wo), dt ? 0 : 1e-7, 0);
            assert_indices(ri3, idx, (size_t)(P * Ho * Wo));
            clt_tensor_free(t);
            clt_tensor_free(r);
            clt_tensor_free(ri);
            clt_tensor_free(t3);
            clt_tensor_free(r3);
            clt_tensor_free(ri3);
        }
        free(x);
        free(y);
        free(idx);
    }
    /* 1-D: [2, 3, 10] -> 4, windows over L alone */
    double x[60], y[24];
    int64_t idx[24], s[3] = {2, 3, 10};
    fill_distinct(x, 60, 9);
    adaptive_max_ref(x, 6, 1, 10, 1, 4, y, idx);
    clt_tensor *t = f64(dev, 3, s, x), *r = NULL, *ri = NULL;
    CHECK(clt_adaptive_max_pool1d(t, 4, &r, &ri));
    int64_t want[3] = {2, 3, 4};
    assert_shape(r, 3, want);
    assert_close_all(r, y, 24, 0, 0);
    assert_indices(ri, idx, 24);
    clt_tensor_free(r);
    clt_tensor_free(ri);
    /* NaN counts as the maximum */
    x[3] = NAN;
    clt_tensor_free(t);
    t = f64(dev, 3, s, x);
    CHECK(clt_adaptive_max_pool1d(t, 4, &r, &ri));
    double *got = read_as_f64(r);
    cr_assert(isnan(got[1]), "the window holding NaN gives %g", got[1]);
    free(got);
    clt_tensor_free(t);
    clt_tensor_free(r);
    clt_tensor_free(ri);
}

/* max_pool2d's window maxima and flat indices, dilation 1. */
static void max_pool_ref(const double *x, int64_t P, int64_t H, int64_t W, int64_t k,
                         int64_t s, int64_t pad, int64_t Ho, int64_t Wo, int64_t *idx)
{
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                double m = -INFINITY;
                int64_t best = -1;
                for (int64_t h = i * s - pad; h < i * s - pad + k; h++)
                    for (int64_t w = j * s - pad; w < j * s - pad + k; w++)
                        if (h >= 0 && h < H && w >= 0 && w < W &&
                            (best < 0 || x[p * H * W + h * W + w] > m)) {
                            m = x[p * H * W + h * W + w];
                            best = h * W + w;
                        }
                idx[(p * Ho + i) * Wo + j] = best;
            }
}

Test(nn_pool, max_pool_indices_and_unpool_round_trip)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {2, 2, 7, 6}, k[2] = {3, 3}, s[2] = {2, 2}, pd[2] = {1, 1};
    double x[168];
    fill_distinct(x, 168, 4);
    int64_t Ho = 4, Wo = 3, idx[48];
    max_pool_ref(x, 4, 7, 6, 3, 2, 1, Ho, Wo, idx);
    clt_tensor *t = f64(dev, 4, shape, x), *y = NULL, *yi = NULL, *plain = NULL;
    CHECK(clt_max_pool2d_with_indices(t, k, s, pd, NULL, 0, &y, &yi));
    assert_indices(yi, idx, 48);
    CHECK(clt_max_pool2d(t, k, s, pd, NULL, 0, &plain));
    double *a = read_as_f64(y), *b = read_as_f64(plain);
    for (int i = 0; i < 48; i++)
        cr_assert_eq(a[i], b[i]);
    free(a);
    free(b);
    /* unpool with output_size {7, 6} (the default would be 7 x 5): each
     * maximum back where it came from, zeros elsewhere */
    int64_t osz[2] = {7, 6};
    clt_tensor *u = NULL;
    CHECK(clt_max_unpool2d(y, yi, k, s, pd, osz, &u));
    assert_shape(u, 4, shape);
    double want2[168] = {0};
    for (int p = 0; p < 4; p++)
        for (int o = 0; o < 12; o++)
            want2[p * 42 + idx[p * 12 + o]] = x[p * 42 + idx[p * 12 + o]];
    assert_close_all(u, want2, 168, 0, 0);
    /* the default size, 2x2 windows over [2, 2, 4, 6]: 4 x 6 again */
    int64_t s22[4] = {2, 2, 4, 6}, k2[2] = {2, 2};
    clt_tensor *t22 = f64(dev, 4, s22, x), *y2 = NULL, *i2 = NULL, *u2 = NULL;
    CHECK(clt_max_pool2d_with_indices(t22, k2, NULL, NULL, NULL, 0, &y2, &i2));
    CHECK(clt_max_unpool2d(y2, i2, k2, NULL, NULL, NULL, &u2));
    assert_shape(u2, 4, s22);
    int64_t idx2[24];
    max_pool_ref(x, 4, 4, 6, 2, 2, 0, 2, 3, idx2);
    double want3[96] = {0};
    for (int p = 0; p < 4; p++)
        for (int o = 0; o < 6; o++)
            want3[p * 24 + idx2[p * 6 + o]] = x[p * 24 + idx2[p * 6 + o]];
    assert_close_all(u2, want3, 96, 0, 0);
    /* 1-D: [2, 9], kernel 2 */
    int64_t s2[2] = {2, 9};
    double x1[18];
    fill_distinct(x1, 18, 7);
    clt_tensor *t1 = f64(dev, 2, s2, x1), *y1 = NULL, *i1 = NULL, *u1 = NULL;
    CHECK(clt_max_pool1d_with_indices(t1, 2, 0, 0, 1, 0, &y1, &i1));
    int64_t idx1[8];
    for (int p = 0; p < 2; p++)
        for (int o = 0; o < 4; o++)
            idx1[p * 4 + o] = x1[p * 9 + 2 * o] > x1[p * 9 + 2 * o + 1] ? 2 * o : 2 * o + 1;
    assert_indices(i1, idx1, 8);
    int64_t o1 = 9;
    CHECK(clt_max_unpool1d(y1, i1, 2, 0, 0, &o1, &u1));
    int64_t us1[2] = {2, 9};
    assert_shape(u1, 2, us1);
    double want1[18] = {0};
    for (int p = 0; p < 2; p++)
        for (int o = 0; o < 4; o++)
            want1[p * 9 + idx1[p * 4 + o]] = x1[p * 9 + idx1[p * 4 + o]];
    assert_close_all(u1, want1, 18, 0, 0);
    clt_tensor *objs[] = {t, y, yi, plain, u, t22, y2, i2, u2, t1, y1, i1, u1};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
        clt_tensor_free(objs[i]);
}

/* ---- LP pooling and local response norm --------------------------------------------- */

Test(nn_pool, lp_pool_follows_torchs_formula)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {1, 2, 4, 6}, k[2] = {2, 3};
    double x[48];
    fill_distinct(x, 48, 3);
    const double norms[] = {2.0, 3.0, 1.0};
    for (int q = 0; q < 3; q++) {
        double p = norms[q], want[8];
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double s = 0;
                    for (int h = 0; h < 2; h++)
                        for (int w = 0; w < 3; w++)
                            s += pow(x[c * 24 + (2 * i + h) * 6 + 3 * j + w], p);
                    double avg = s / 6;
                    /* torch's sign(avg) * relu(|avg|) is avg: a negative one
                     * gives NaN through the cube root */
                    double v = avg * 6;
                    want[(c * 2 + i) * 2 + j] = pow(v, 1.0 / p);
                }
        clt_tensor *t = f64(dev, 4, shape, x), *r = NULL;
        CHECK(clt_lp_pool2d(t, p, k, NULL, 0, &r));
        int64_t ws[4] = {1, 2, 2, 2};
        assert_shape(r, 4, ws);
        assert_close_all(r, want, 8, 1e-12, 1e-12);
        clt_tensor_free(t);
        clt_tensor_free(r);
    }
    /* 1-D, stride 2 over [2, 8] with ceil_mode: the last window holds two values */
    int64_t s1[2] = {2, 8};
    double x1[16];
    fill_distinct(x1, 16, 5);
    clt_tensor *t = f64(dev, 2, s1, x1), *r = NULL;
    CHECK(clt_lp_pool1d(t, 2.0, 3, 2, 1, &r));
    double want[8];
    for (int c = 0; c < 2; c++)
        for (int o = 0; o < 4; o++) {
            double s = 0;
            int n = 0;
            for (int w = 2 * o; w < 2 * o + 3 && w < 8; w++, n++)
                s += x1[c * 8 + w] * x1[c * 8 + w];
            want[c * 4 + o] = sqrt(s / n * 3);
        }
    assert_close_all(r, want, 8, 1e-12, 1e-12);
    clt_tensor_free(t);
    clt_tensor_free(r);
}

/* local_response_norm over [N, C, S]: the channel window c - size/2 ..
 * c + (size - 1)/2, zeros outside, divided by size. */
static void lrn_ref(const double *x, int64_t N, int64_t C, int64_t S, int64_t size, double alpha,
                    double beta, double k, double *y)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t s = 0; s < S; s++) {
                double sum = 0;
                for (int64_t j = c - size / 2; j <= c + (size - 1) / 2; j++)
                    if (j >= 0 && j < C)
                        sum += x[(n * C + j) * S + s] * x[(n * C + j) * S + s];
                y[(n * C + c) * S + s] =
                    x[(n * C + c) * S + s] / pow(k + alpha * sum / (double)size, beta);
            }
}

Test(nn_pool, local_response_norm_against_a_host_loop)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {2, 5, 2, 3};
    double x[60], y[60];
    fill_distinct(x, 60, 11);
    for (int64_t size = 1; size <= 6; size++) {
        lrn_ref(x, 2, 5, 6, size, 0.1, 0.75, 2.0, y);
        for (int dt = 0; dt < 2; dt++) {
            clt_tensor *t = tensor_of(dev, dt ? CLT_FLOAT64 : CLT_FLOAT32, 4, shape, x), *r = NULL;
            CHECK(clt_local_response_norm(t, size, 0.1, 0.75, 2.0, &r));
            assert_shape(r, 4, shape);
            assert_close_all(r, y, 60, dt ? 1e-12 : 1e-5, dt ? 1e-12 : 1e-6);
            clt_tensor_free(t);
            clt_tensor_free(r);
        }
    }
    /* the layer, defaults alpha 1e-4, beta 0.75, k 1 */
    clt_module *m = NULL;
    CHECK(clt_local_response_norm_layer(3, 1e-4, 0.75, 1.0, &m));
    cr_assert_str_eq(clt_module_name(m), "LocalResponseNorm");
    clt_tensor *t = f64(dev, 4, shape, x), *r = NULL;
    CHECK(clt_module_forward(m, t, &r));
    lrn_ref(x, 2, 5, 6, 3, 1e-4, 0.75, 1.0, y);
    assert_close_all(r, y, 60, 1e-12, 1e-12);
    clt_tensor_free(r);
    clt_module_free(m);
    int64_t s2[2] = {3, 4};
    clt_tensor *t2 = f64(dev, 2, s2, x);
    r = (clt_tensor *)0x1;
    assert_error(clt_local_response_norm(t2, 2, 1e-4, 0.75, 1.0, &r), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 3D or higher dimensionality input");
    cr_assert_null(r);
    assert_error(clt_local_response_norm(t, 0, 1e-4, 0.75, 1.0, &r), CLT_ERR_INVALID_ARGUMENT,
                 "size");
    clt_tensor_free(t);
    clt_tensor_free(t2);
}

/* ---- instance norm ----------------------------------------------------------------- */

/* Each (n, c) of x [N, C, S] normalised by its own mean and biased
 * variance, times w[c] plus b[c] (NULL: 1, 0); the per-(n, c) means and
 * unbiased variances averaged over n into mean_c and var_c when not NULL. */
static void instance_ref(const double *x, int64_t N, int64_t C, int64_t S, const double *w,
                         const double *b, double eps, double *y, double *mean_c, double *var_c)
{
    for (int64_t c = 0; c < C; c++) {
        if (mean_c)
            mean_c[c] = var_c[c] = 0;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) {
            const double *xs = x + (n * C + c) * S;
            double mu = 0, var = 0;
            for (int64_t s = 0; s < S; s++)
                mu += xs[s];
            mu /= (double)S;
            for (int64_t s = 0; s < S; s++)
                var += (xs[s] - mu) * (xs[s] - mu);
            for (int64_t s = 0; s < S; s++)
                y[(n * C + c) * S + s] = (xs[s] - mu) / sqrt(var / (double)S + eps) *
                                             (w ? w[c] : 1) + (b ? b[c] : 0);
            if (mean_c) {
                mean_c[c] += mu / (double)N;
                var_c[c] += var / (double)(S - 1) / (double)N;
            }
        }
}

Test(nn_pool, instance_norm_values_and_running_statistics)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 5}, cs = 3;
    double x[30], y[30], w[3] = {0.5, -1.5, 2.0}, b[3] = {0.25, 0.0, -1.0};
    double rm[3] = {0.1, -0.2, 0.3}, rv[3] = {1.5, 0.5, 2.0}, mc[3], vc[3];
    fill_distinct(x, 30, 21);
    instance_ref(x, 2, 3, 5, w, b, 1e-5, y, mc, vc);
    clt_tensor *t = f64(dev, 3, shape, x), *tw = f64(dev, 1, &cs, w), *tb = f64(dev, 1, &cs, b);
    clt_tensor *trm = f64(dev, 1, &cs, rm), *trv = f64(dev, 1, &cs, rv), *r = NULL;
    CHECK(clt_instance_norm(t, trm, trv, tw, tb, 1, 0.3, 1e-5, &r));
    assert_close_all(r, y, 30, 1e-10, 1e-10);
    double nm[3], nv[3];
    for (int c = 0; c < 3; c++) {
        nm[c] = 0.7 * rm[c] + 0.3 * mc[c];
        nv[c] = 0.7 * rv[c] + 0.3 * vc[c];
    }
    assert_close_all(trm, nm, 3, 1e-12, 1e-12);
    assert_close_all(trv, nv, 3, 1e-12, 1e-12);
    clt_tensor_free(r);
    /* with the running statistics instead, which stay as they are */
    double *before = read_as_f64(trm);
    CHECK(clt_instance_norm(t, trm, trv, NULL, NULL, 0, 0.3, 1e-3, &r));
    for (int i = 0; i < 30; i++) {
        int c = (i / 5) % 3;
        y[i] = (x[i] - nm[c]) / sqrt(nv[c] + 1e-3);
    }
    assert_close_all(r, y, 30, 1e-12, 1e-12);
    assert_close_all(trm, before, 3, 0, 0);
    free(before);
    clt_tensor_free(r);
    /* torch's refusals */
    int64_t s1[3] = {2, 3, 1};
    clt_tensor *one = f64(dev, 3, s1, x);
    r = (clt_tensor *)0x1;
    assert_error(clt_instance_norm(one, NULL, NULL, NULL, NULL, 1, 0.1, 1e-5, &r),
                 CLT_ERR_INVALID_ARGUMENT, "Expected more than 1 spatial element");
    cr_assert_null(r);
    assert_error(clt_instance_norm(t, NULL, NULL, NULL, NULL, 0, 0.1, 1e-5, &r),
                 CLT_ERR_INVALID_ARGUMENT, "Expected running_mean and running_var");
    clt_tensor *objs[] = {t, tw, tb, trm, trv, one};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
        clt_tensor_free(objs[i]);
}

static int has_name(const clt_named_tensor *v, size_t n, size_t k, const char *name)
{
    return k < n && strcmp(v[k].name, name) == 0;
}

Test(nn_pool, instance_norm_layers_state_and_modes)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = NULL;
    CHECK(clt_instance_norm1d_layer(dev, 3, 1e-5, 0.1, 1, 1, &m));
    cr_assert_str_eq(clt_module_name(m), "InstanceNorm1d");
    clt_named_tensor *st = NULL;
    size_t n = 0;
    CHECK(clt_module_state(m, &st, &n));
    const char *names[] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
    cr_assert_eq(n, 5);
    for (size_t k = 0; k < 5; k++)
        cr_assert(has_name(st, n, k, names[k]), "state %zu is %s, want %s", k, st[k].name,
                  names[k]);
    clt_free(st);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    int64_t shape[3] = {2, 3, 5};
    double x[30], y[30], mc[3], vc[3];
    fill_distinct(x, 30, 8);
    instance_ref(x, 2, 3, 5, NULL, NULL, 1e-5, y, mc, vc);
    clt_tensor *t = f64(dev, 3, shape, x), *r = NULL;
    CHECK(clt_module_forward(m, t, &r)); /* train mode: own statistics, buffers updated */
    assert_close_all(r, y, 30, 1e-10, 1e-10);
    clt_tensor_free(r);
    double nm[3], nv[3];
    for (int c = 0; c < 3; c++) {
        nm[c] = 0.1 * mc[c];
        nv[c] = 0.9 + 0.1 * vc[c];
    }
    assert_close_all(clt_module_buffer(m, "running_mean"), nm, 3, 1e-12, 1e-12);
    assert_close_all(clt_module_buffer(m, "running_var"), nv, 3, 1e-12, 1e-12);
    double zero = 0;
    assert_close_all(clt_module_buffer(m, "num_batches_tracked"), &zero, 1, 0, 0);
    clt_module_train(m, 0); /* eval: the running statistics */
    CHECK(clt_module_forward(m, t, &r));
    for (int i = 0; i < 30; i++)
        y[i] = (x[i] - nm[(i / 5) % 3]) / sqrt(nv[(i / 5) % 3] + 1e-5);
    assert_close_all(r, y, 30, 1e-12, 1e-12);
    clt_tensor_free(r);
    /* unbatched [C, L] in eval mode, and the wrong channel count */
    int64_t s2[2] = {3, 5};
    clt_tensor *t2 = f64(dev, 2, s2, x);
    CHECK(clt_module_forward(m, t2, &r));
    assert_shape(r, 2, s2);
    assert_close_all(r, y, 15, 1e-12, 1e-12);
    clt_tensor_free(r);
    int64_t s4[3] = {1, 5, 3};
    clt_tensor *bad = f64(dev, 3, s4, x);
    assert_error(clt_module_forward(m, bad, &r), CLT_ERR_SHAPE_MISMATCH, "num_features");
    clt_module_free(m);
    /* InstanceNorm2d without affine or running statistics: no state, own
     * statistics in eval mode too; float32 layer refuses float64 only with
     * tensors */
    CHECK(clt_instance_norm2d_layer(dev, 2, 1e-5, 0.1, 0, 0, &m));
    cr_assert_str_eq(clt_module_name(m), "InstanceNorm2d");
    CHECK(clt_module_state(m, &st, &n));
    cr_assert_eq(n, 0);
    clt_free(st);
    clt_module_train(m, 0);
    int64_t s3[4] = {1, 2, 3, 5};
    clt_tensor *t4 = f64(dev, 4, s3, x);
    CHECK(clt_module_forward(m, t4, &r));
    instance_ref(x, 1, 2, 15, NULL, NULL, 1e-5, y, NULL, NULL);
    assert_close_all(r, y, 30, 1e-10, 1e-10);
    clt_tensor_free(r);
    assert_error(clt_module_forward(m, t2, &r), CLT_ERR_SHAPE_MISMATCH, "expected 3D or 4D input");
    clt_module_free(m);
    assert_error(clt_instance_norm1d_layer(dev, 0, 1e-5, 0.1, 0, 0, &m), CLT_ERR_INVALID_ARGUMENT,
                 "num_features");
    cr_assert_null(m);
    clt_tensor *objs[] = {t, t2, bad, t4};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
        clt_tensor_free(objs[i]);
}

/* ---- gradients ------------------------------------------------------------------------ */

static clt_status g_adaptive(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    int64_t o[2] = {2, 3};
    return clt_adaptive_max_pool2d(in[0], o, out, NULL);
}

static clt_status g_adaptive1d(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_adaptive_max_pool1d(in[0], 3, out, NULL);
}

/* unpool of x at fixed indices (ctx: the int64 tensor) */
static clt_status g_unpool(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int64_t k[2] = {2, 2};
    return clt_max_unpool2d(in[0], (const clt_tensor *)ctx, k, NULL, NULL, NULL, out);
}

static clt_status g_lp(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    int64_t k[2] = {2, 2}, s[2] = {1, 2};
    return clt_lp_pool2d(in[0], *(const double *)ctx, k, s, 0, out);
}

static clt_status g_lrn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_local_response_norm(in[0], 3, 0.5, 0.75, 1.0, out);
}

static clt_status g_instance(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    return clt_instance_norm(in[0], NULL, NULL, in[1], in[2], 1, 0.1, 1e-5, out);
}

Test(nn_pool, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double x[60];
    fill_distinct(x, 60, 31);
    gc_in a = {4, {1, 2, 5, 6}, x, 1};
    gradcheck(dev, g_adaptive, NULL, 1, &a);
    gc_in a1 = {3, {2, 3, 7}, x, 1};
    gradcheck(dev, g_adaptive1d, NULL, 1, &a1);
    /* unpool at the indices of a 2x2 max pool over [1, 2, 4, 6] */
    int64_t ps[4] = {1, 2, 4, 6}, k[2] = {2, 2};
    clt_tensor *t = f64(dev, 4, ps, x), *y = NULL, *idx = NULL;
    CHECK(clt_max_pool2d_with_indices(t, k, NULL, NULL, NULL, 0, &y, &idx));
    gc_in u = {4, {1, 2, 2, 3}, x, 1};
    gradcheck(dev, g_unpool, idx, 1, &u);
    clt_tensor_free(t);
    clt_tensor_free(y);
    clt_tensor_free(idx);
    double pos[48];
    for (int i = 0; i < 48; i++)
        pos[i] = 0.5 + fabs(x[i]);
    const double norms[] = {2.0, 3.0, 1.5};
    for (int q = 0; q < 3; q++) {
        gc_in l = {4, {1, 2, 4, 6}, pos, 1};
        gradcheck_tol(dev, g_lp, &norms[q], 1, &l, 1e-6, 1e-5, 1e-6);
    }
    gc_in r = {4, {2, 5, 2, 3}, x, 1};
    gradcheck(dev, g_lrn, NULL, 1, &r);
    double w[3] = {0.5, -1.5, 2.0}, b[3] = {0.25, 0.0, -1.0};
    gc_in in[3] = {{3, {2, 3, 4}, x, 1}, {1, {3}, w, 1}, {1, {3}, b, 1}};
    gradcheck(dev, g_instance, NULL, 3, in);
}

/* ---- dropouts ------------------------------------------------------------------------- */

/* The mask a dropout with p draws from a generator seeded `seed` for a
 * noise of n elements: u >= p, u as clt_rand gives it in float64. */
static double *mask_from_seed(clt_device *dev, uint64_t seed, double p, int64_t n)
{
    clt_generator *g = NULL;
    clt_tensor *u = NULL;
    CHECK(clt_generator_new(seed, &g));
    CHECK(clt_rand(g, dev, CLT_FLOAT64, 1, &n, &u));
    double *m = read_as_f64(u);
    for (int64_t i = 0; i < n; i++)
        m[i] = m[i] >= p ? 1.0 : 0.0;
    clt_tensor_free(u);
    clt_generator_free(g);
    return m;
}

typedef clt_status (*drop_fn)(const clt_tensor *, double, int, clt_generator *, clt_tensor **);

Test(nn_pool, dropout_masks_from_the_seed)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {3, 4, 2, 5};
    double x[120];
    fill_distinct(x, 120, 41);
    clt_tensor *t = f64(dev, 4, shape, x);
    const double p = 0.4, al = 1.7580993408473766;
    const double a = 1.0 / sqrt((al * al * p + 1) * (1 - p));
    /* channel dropout: a mask element per [n, c] over the 10 values of each */
    const drop_fn fns[] = {clt_dropout2d, clt_feature_alpha_dropout, clt_alpha_dropout};
    for (int f = 0; f < 3; f++) {
        clt_generator *g = NULL;
        clt_tensor *r = NULL;
        CHECK(clt_generator_new(77, &g));
        CHECK(fns[f](t, p, 1, g, &r));
        int64_t n = f == 2 ? 120 : 12;
        cr_assert_eq(clt_generator_offset(g), (uint64_t)n, "drew %llu numbers, want %lld",
                     (unsigned long long)clt_generator_offset(g), (long long)n);
        double *m = mask_from_seed(dev, 77, p, n), want[120];
        for (int i = 0; i < 120; i++) {
            double k = m[f == 2 ? i : i / 10];
            want[i] = f == 0 ? x[i] * (k / (1 - p))
                             : x[i] * (k * a) + ((k - 1) * al * a + al * a * p);
        }
        assert_close_all(r, want, 120, 1e-14, 1e-14);
        free(m);
        clt_tensor_free(r);
        /* eval mode: the input, nothing drawn */
        CHECK(fns[f](t, p, 0, g, &r));
        assert_close_all(r, x, 120, 0, 0);
        cr_assert_eq(clt_generator_offset(g), (uint64_t)n);
        clt_tensor_free(r);
        clt_generator_free(g);
    }
    /* dropout1d of an unbatched [C, L] and dropout3d of a 4-D [C, D, H, W]:
     * a mask element per channel */
    int64_t s2[2] = {12, 10}, s4[4] = {12, 2, 5, 1};
    clt_tensor *t2 = NULL, *t4 = NULL;
    CHECK(clt_reshape(t, 2, s2, &t2));
    CHECK(clt_reshape(t, 4, s4, &t4));
    const drop_fn fns2[] = {clt_dropout1d, clt_dropout3d};
    clt_tensor *ins[] = {t2, t4};
    for (int f = 0; f < 2; f++) {
        clt_generator *g = NULL;
        clt_tensor *r = NULL;
        CHECK(clt_generator_new(5, &g));
        CHECK(fns2[f](ins[f], p, 1, g, &r));
        assert_shape(r, clt_tensor_ndim(ins[f]), clt_tensor_shape(ins[f]));
        double *m = mask_from_seed(dev, 5, p, 12), want[120];
        for (int i = 0; i < 120; i++)
            want[i] = x[i] * (m[i / 10] / (1 - p));
        assert_close_all(r, want, 120, 1e-14, 1e-14);
        free(m);
        clt_tensor_free(r);
        clt_generator_free(g);
    }
    clt_tensor_free(t);
    clt_tensor_free(t2);
    clt_tensor_free(t4);
}

Test(nn_pool, dropout_statistics)
{
    clt_device *dev = get_device("cpu");
    /* Dropout2d(0.3) on ones [40, 50, 4]: whole channels of zeros, about
     * 30% of them; kept values 1 / 0.7 */
    int64_t shape[3] = {40, 50, 4};
    clt_tensor *ones = NULL, *r = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 3, shape, 1.0, &ones));
    clt_generator *g = NULL;
    CHECK(clt_generator_new(123, &g));
    CHECK(clt_dropout2d(ones, 0.3, 1, g, &r));
    float *v = read_f32(r);
    int zeros = 0;
    for (int ch = 0; ch < 2000; ch++) {
        float first = v[ch * 4];
        for (int j = 1; j < 4; j++)
            cr_assert_eq(v[ch * 4 + j], first, "channel %d is not dropped whole", ch);
        cr_assert(first == 0.0f || fabsf(first - 1.0f / 0.7f) < 1e-6f, "value %g", first);
        zeros += first == 0.0f;
    }
    /* 2000 channels, p 0.3: 600 +- 20.5 (1 sd); 5 sd either way */
    cr_assert(zeros > 500 && zeros < 700, "%d of 2000 channels dropped", zeros);
    free(v);
    clt_tensor_free(r);
    /* AlphaDropout keeps a standard normal input's mean 0 and variance 1 */
    int64_t n = 200000;
    clt_tensor *z = NULL;
    CHECK(clt_randn(g, dev, CLT_FLOAT64, 1, &n, &z));
    CHECK(clt_alpha_dropout(z, 0.2, 1, g, &r));
    double *d = read_as_f64(r), mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++)
        mean += d[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++)
        var += (d[i] - mean) * (d[i] - mean);
    var /= (double)(n - 1);
    cr_assert(fabs(mean) < 0.02 && fabs(var - 1) < 0.03, "mean %g, variance %g", mean, var);
    free(d);
    clt_tensor_free(r);
    clt_tensor_free(z);
    clt_tensor_free(ones);
    clt_generator_free(g);
}

/* F.dropout (clt_dropout): Dropout's mask from the generator, the same as
 * the layer's, its gradient the mask over 1 - p, and its modes and
 * refusals. */
Test(nn_pool, functional_dropout)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {3, 4, 2, 5};
    double x[120];
    fill_distinct(x, 120, 43);
    clt_tensor *t = f64(dev, 4, shape, x);
    const double p = 0.4;
    clt_generator *g = NULL;
    clt_tensor *r = NULL, *leaf = NULL, *s = NULL, *gr = NULL;
    CHECK(clt_generator_new(77, &g));
    CHECK(clt_detach(t, &leaf));
    CHECK(clt_set_requires_grad(leaf, 1));
    CHECK(clt_dropout(leaf, p, 1, g, &r));
    cr_assert_eq(clt_generator_offset(g), 120u, "drew %llu numbers, want 120",
                 (unsigned long long)clt_generator_offset(g));
    double *m = mask_from_seed(dev, 77, p, 120), want[120], dwant[120];
    for (int i = 0; i < 120; i++) {
        want[i] = x[i] * m[i] / (1 - p);
        dwant[i] = m[i] / (1 - p);
    }
    assert_shape(r, 4, shape);
    assert_close_all(r, want, 120, 1e-14, 1e-14);
    /* d sum(dropout(x)) / dx is the mask over 1 - p */
    CHECK(clt_sum(r, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(leaf, &gr));
    assert_close_all(gr, dwant, 120, 1e-14, 1e-14);
    clt_tensor_free(r);
    clt_tensor_free(s);
    clt_tensor_free(gr);
    /* the Dropout layer from the same generator state draws the same mask */
    clt_module *layer = NULL;
    clt_generator_set_offset(g, 0);
    CHECK(clt_dropout_layer(p, g, &layer));
    CHECK(clt_module_forward(layer, t, &r));
    assert_close_all(r, want, 120, 0, 0);
    clt_tensor_free(r);
    clt_module_free(layer);
    /* training 0 or p 0: the input, nothing drawn; p 1: zeros */
    uint64_t before = clt_generator_offset(g);
    CHECK(clt_dropout(t, p, 0, g, &r));
    assert_close_all(r, x, 120, 0, 0);
    clt_tensor_free(r);
    CHECK(clt_dropout(t, 0.0, 1, g, &r));
    assert_close_all(r, x, 120, 0, 0);
    clt_tensor_free(r);
    CHECK(clt_dropout(t, 1.0, 1, g, &r));
    double zeros[120] = {0};
    assert_close_all(r, zeros, 120, 0, 0);
    clt_tensor_free(r);
    cr_assert_eq(clt_generator_offset(g), before);
    /* refusals: out NULL, nothing drawn */
    r = (clt_tensor *)0x1;
    assert_error(clt_dropout(t, 1.5, 1, g, &r), CLT_ERR_INVALID_ARGUMENT,
                 "dropout probability has to be between 0 and 1, but got 1.5");
    cr_assert_null(r);
    clt_tensor *ti = NULL;
    CHECK(clt_to_dtype(t, CLT_INT64, &ti));
    r = (clt_tensor *)0x1;
    assert_error(clt_dropout(ti, 0.5, 1, g, &r), CLT_ERR_DTYPE_MISMATCH, "floating point");
    cr_assert_null(r);
    assert_error(clt_dropout(NULL, 0.5, 1, g, &r), CLT_ERR_NULL_ARGUMENT, "clt_dropout");
    cr_assert_eq(clt_generator_offset(g), before);
    free(m);
    clt_tensor_free(ti);
    clt_tensor_free(leaf);
    clt_tensor_free(t);
    clt_generator_free(g);
}

Test(nn_pool, dropout_layers_modes_and_errors)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(9, &g));
    clt_status (*ctors[])(double, clt_generator *, clt_module **) = {
        clt_dropout1d_layer, clt_dropout2d_layer, clt_dropout3d_layer, clt_alpha_dropout_layer,
        clt_feature_alpha_dropout_layer};
    const char *names[] = {"Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                           "FeatureAlphaDropout"};
    int64_t shape[5] = {2, 3, 2, 2, 2};
    double x[48];
    fill_distinct(x, 48, 2);
    clt_tensor *t3 = NULL, *t5 = f64(dev, 5, shape, x);
    int64_t s3[3] = {2, 3, 8};
    CHECK(clt_reshape(t5, 3, s3, &t3));
    for (int k = 0; k < 5; k++) {
        clt_module *m = NULL;
        clt_tensor *r = NULL, *in = k == 2 ? t5 : t3;
        CHECK(ctors[k](0.5, g, &m));
        cr_assert_str_eq(clt_module_name(m), names[k]);
        uint64_t before = clt_generator_offset(g);
        CHECK(clt_module_forward(m, in, &r));
        cr_assert_gt(clt_generator_offset(g), before, "%s drew nothing in train mode", names[k]);
        clt_tensor_free(r);
        clt_module_train(m, 0);
        before = clt_generator_offset(g);
        CHECK(clt_module_forward(m, in, &r));
        assert_close_all(r, x, 48, 0, 0);
        cr_assert_eq(clt_generator_offset(g), before);
        clt_tensor_free(r);
        clt_module_free(m);
        m = (clt_module *)0x1;
        assert_error(ctors[k](1.5, g, &m), CLT_ERR_INVALID_ARGUMENT,
                     "dropout probability has to be between 0 and 1");
        cr_assert_null(m);
    }
    /* a refused forward takes nothing from the generator */
    clt_tensor *r = (clt_tensor *)0x1;
    uint64_t before = clt_generator_offset(g);
    assert_error(clt_dropout1d(t5, 0.5, 1, g, &r), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2D or 3D input");
    cr_assert_null(r);
    int64_t s1 = 48;
    clt_tensor *t1 = NULL, *ti = NULL;
    CHECK(clt_reshape(t5, 1, &s1, &t1));
    assert_error(clt_dropout2d(t1, 0.5, 1, g, &r), CLT_ERR_SHAPE_MISMATCH,
                 "Feature dropout requires at least 2 dimensions");
    CHECK(clt_to_dtype(t3, CLT_INT64, &ti));
    assert_error(clt_alpha_dropout(ti, 0.5, 1, g, &r), CLT_ERR_DTYPE_MISMATCH, "floating point");
    cr_assert_eq(clt_generator_offset(g), before);
    /* p 1: zeros */
    CHECK(clt_feature_alpha_dropout(t3, 1.0, 1, g, &r));
    double zeros[48] = {0};
    assert_close_all(r, zeros, 48, 0, 0);
    clt_tensor_free(r);
    clt_tensor *objs[] = {t1, t3, t5, ti};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
        clt_tensor_free(objs[i]);
    clt_generator_free(g);
}

/* ---- pooling layers and errors ---------------------------------------------------------- */

Test(nn_pool, pooling_layers_and_errors)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {1, 2, 4, 6};
    double x[48];
    fill_distinct(x, 48, 13);
    clt_tensor *t = f64(dev, 4, shape, x), *r = NULL, *want = NULL, *idx = NULL;
    clt_module *m = NULL;
    /* AdaptiveMaxPool2d gives the function's output */
    CHECK(clt_adaptive_max_pool2d_layer(2, 3, &m));
    cr_assert_str_eq(clt_module_name(m), "AdaptiveMaxPool2d");
    CHECK(clt_module_forward(m, t, &r));
    int64_t o[2] = {2, 3};
    CHECK(clt_adaptive_max_pool2d(t, o, &want, NULL));
    double *w = read_as_f64(want);
    assert_close_all(r, w, 12, 0, 0);
    free(w);
    clt_tensor_free(r);
    clt_tensor_free(want);
    clt_module_free(m);
    /* LPPool2d(2, 2) is lp_pool2d */
    CHECK(clt_lp_pool2d_layer(2.0, 2, 2, NULL, 0, &m));
    cr_assert_str_eq(clt_module_name(m), "LPPool2d");
    CHECK(clt_module_forward(m, t, &r));
    int64_t k[2] = {2, 2};
    CHECK(clt_lp_pool2d(t, 2.0, k, NULL, 0, &want));
    w = read_as_f64(want);
    assert_close_all(r, w, 12, 0, 0);
    free(w);
    clt_tensor_free(r);
    clt_tensor_free(want);
    clt_module_free(m);
    /* MaxUnpool2d runs with the indices only */
    CHECK(clt_max_pool2d_with_indices(t, k, NULL, NULL, NULL, 0, &want, &idx));
    CHECK(clt_max_unpool2d_layer(2, 2, NULL, NULL, &m));
    cr_assert_str_eq(clt_module_name(m), "MaxUnpool2d");
    assert_error(clt_module_forward(m, want, &r), CLT_ERR_INVALID_ARGUMENT,
                 "clt_max_unpool_forward");
    cr_assert_null(r);
    CHECK(clt_max_unpool_forward(m, want, idx, NULL, &r));
    assert_shape(r, 4, shape);
    clt_tensor_free(r);
    /* torch's unpooling errors */
    int64_t bad[2] = {9, 6};
    assert_error(clt_max_unpool2d(want, idx, k, NULL, NULL, bad, &r), CLT_ERR_INVALID_ARGUMENT,
                 "invalid output_size");
    clt_tensor *i32 = NULL;
    CHECK(clt_to_dtype(idx, CLT_INT32, &i32));
    assert_error(clt_max_unpool2d(want, i32, k, NULL, NULL, NULL, &r), CLT_ERR_DTYPE_MISMATCH,
                 "elements in indices should be type int64");
    assert_error(clt_max_unpool2d(t, idx, k, NULL, NULL, NULL, &r), CLT_ERR_SHAPE_MISMATCH,
                 "Expected shape of indices to be same as that of the input tensor");
    clt_module_free(m);
    CHECK(clt_max_unpool1d_layer(2, 0, 0, &m));
    cr_assert_str_eq(clt_module_name(m), "MaxUnpool1d");
    clt_module_free(m);
    /* the constructors' checks */
    m = (clt_module *)0x1;
    assert_error(clt_adaptive_max_pool1d_layer(-1, &m), CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert_null(m);
    assert_error(clt_lp_pool1d_layer(2.0, 0, 0, 0, &m), CLT_ERR_INVALID_ARGUMENT, "kernel_size");
    assert_error(clt_max_unpool2d_layer(0, 2, NULL, NULL, &m), CLT_ERR_INVALID_ARGUMENT,
                 "kernel_size");
    assert_error(clt_local_response_norm_layer(0, 1e-4, 0.75, 1.0, &m), CLT_ERR_INVALID_ARGUMENT,
                 "size");
    /* the adaptive pools' input checks */
    int64_t s2[2] = {6, 8};
    clt_tensor *t2 = f64(dev, 2, s2, x);
    assert_error(clt_adaptive_max_pool2d(t2, o, &r, &idx), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 3D or 4D tensor");
    cr_assert_null(idx);
    assert_error(clt_adaptive_max_pool1d(t, 2, &r, NULL), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2 to 3 dimensions");
    clt_tensor_free(t);
    clt_tensor_free(t2);
    clt_tensor_free(want);
    clt_tensor_free(i32);
}
