/* test_pool2.c: fractional_max_pool2d/3d (values and indices against a
 * host loop over each window with PyTorch's interval formula, samples from
 * the generator, gradients and double backward by finite differences in
 * float64, errors, layers), double backward of the adaptive pools, the
 * 3-D pools' grad_fn names and the hooks of the MaxUnpool layers. */
#include <math.h>
#include <string.h>

#include "gradcheck.h"

/* Values in [-3, 3), distinct (no ties for the maxima). */
static void fill_distinct(double *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (double)((seed >> 8) % 6001) / 1000.0 - 3.0 + (double)i * 1e-7;
    }
}

/* The window starts of PyTorch's generate_intervals, in double. */
static void ref_starts(double u, int64_t in, int64_t out, int64_t k, int64_t *seq)
{
    double alpha = out > 1 ? (double)(in - k) / (double)(out - 1) : 0.0;
    for (int64_t i = 0; i + 1 < out; i++)
        seq[i] = (int64_t)floor(((double)i + u) * alpha) - (int64_t)floor(u * alpha);
    if (out > 0)
        seq[out - 1] = in - k;
}

/* Fractional max pooling of P planes of nd dims in[] with samples u
 * [P, nd] (torch's order: 2-D W then H; 3-D T, H, W): the maxima and the
 * flat index of each window's first maximum. */
static void frac_ref(int nd, const double *x, int64_t P, const int64_t *in, const int64_t *k,
                     const int64_t *o, const double *u, double *y, int64_t *idx)
{
    int64_t seq[3][64];
    int64_t in3[3] = {1, in[0], in[1]}, k3[3] = {1, k[0], k[1]}, o3[3] = {1, o[0], o[1]};
    if (nd == 3)
        for (int d = 0; d < 3; d++)
            in3[d] = in[d], k3[d] = k[d], o3[d] = o[d];
    int64_t V = in3[0] * in3[1] * in3[2], n = 0;
    for (int64_t p = 0; p < P; p++) {
        seq[0][0] = 0;
        if (nd == 2) {
            ref_starts(u[p * 2 + 1], in[0], o[0], k[0], seq[1]);
            ref_starts(u[p * 2 + 0], in[1], o[1], k[1], seq[2]);
        } else {
            for (int d = 0; d < 3; d++)
                ref_starts(u[p * 3 + d], in[d], o[d], k[d], seq[d]);
        }
        for (int64_t a = 0; a < o3[0]; a++)
            for (int64_t b = 0; b < o3[1]; b++)
                for (int64_t c = 0; c < o3[2]; c++, n++) {
                    double m = -INFINITY;
                    int64_t best = -1;
                    for (int64_t i = 0; i < k3[0]; i++)
                        for (int64_t j = 0; j < k3[1]; j++)
                            for (int64_t l = 0; l < k3[2]; l++) {
                                int64_t f = ((seq[0][a] + i) * in3[1] + seq[1][b] + j) * in3[2] +
                                            seq[2][c] + l;
                                if (best < 0 || x[p * V + f] > m) {
                                    m = x[p * V + f];
                                    best = f;
                                }
                            }
                    y[n] = m;
                    idx[n] = best;
                }
    }
}

static void check_frac(clt_device *dev, clt_dtype dt, int nd, int ndim, const int64_t *shape,
                       const int64_t *k, const int64_t *o, unsigned seed)
{
    int64_t numel = host_numel(ndim, shape), N = ndim == nd + 2 ? shape[0] : 1;
    int64_t C = shape[ndim - nd - 1], P = N * C, O = 1;
    for (int d = 0; d < nd; d++)
        O *= o[d];
    double *x = malloc(sizeof *x * (size_t)numel), u[64], *y = malloc(sizeof *y * (size_t)(P * O));
    int64_t *idx = malloc(sizeof *idx * (size_t)(P * O));
    fill_distinct(x, (size_t)numel, seed);
    for (int64_t i = 0; i < P * nd; i++)
        u[i] = (double)((i * 37 + seed) % 100) / 100.0;
    frac_ref(nd, x, P, shape + ndim - nd, k, o, u, y, idx);
    if (dt == CLT_FLOAT32) { /* the reference sees the values the device holds */
        for (int64_t i = 0; i < numel; i++)
            x[i] = (float)x[i];
        frac_ref(nd, x, P, shape + ndim - nd, k, o, u, y, idx);
    }
    int64_t us[3] = {N, C, nd};
    clt_tensor *t = tensor_of(dev, dt, ndim, shape, x), *s = tensor_of(dev, dt, 3, us, u);
    clt_tensor *out = NULL, *ix = NULL;
    if (nd == 2)
        CHECK(clt_fractional_max_pool2d(t, k, o, NULL, s, NULL, &out, &ix));
    else
        CHECK(clt_fractional_max_pool3d(t, k, o, NULL, s, NULL, &out, &ix));
    int64_t want[5];
    memcpy(want, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(want + ndim - nd, o, sizeof(int64_t) * (size_t)nd);
    assert_shape(out, ndim, want);
    assert_shape(ix, ndim, want);
    cr_assert_eq(clt_tensor_dtype(ix), CLT_INT64);
    double *got = read_as_f64(out), *gi = read_as_f64(ix);
    for (int64_t i = 0; i < P * O; i++) {
        cr_assert_eq(got[i], y[i], "nd %d value %lld: %g, want %g", nd, (long long)i, got[i],
                     y[i]);
        cr_assert_eq((int64_t)gi[i], idx[i], "nd %d index %lld: %lld, want %lld", nd,
                     (long long)i, (long long)gi[i], (long long)idx[i]);
    }
    free(got);
    free(gi);
    free(x);
    free(y);
    free(idx);
    clt_tensor_free(t);
    clt_tensor_free(s);
    clt_tensor_free(out);
    clt_tensor_free(ix);
}

Test(pool2, fractional_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    const int64_t s1[4] = {2, 3, 9, 11}, k1[2] = {2, 3}, o1[2] = {4, 5};
    const int64_t s2[3] = {3, 7, 6}, k2[2] = {3, 2}, o2[2] = {5, 5};
    const int64_t s3[4] = {1, 2, 8, 8}, k3[2] = {1, 1}, o3[2] = {8, 8};
    const int64_t s4[5] = {2, 2, 7, 8, 9}, k4[3] = {2, 3, 2}, o4[3] = {3, 4, 5};
    const int64_t s5[4] = {3, 6, 7, 5}, k5[3] = {2, 2, 2}, o5[3] = {4, 3, 3};
    for (int dt = 0; dt < 2; dt++) {
        clt_dtype d = dt ? CLT_FLOAT64 : CLT_FLOAT32;
        check_frac(dev, d, 2, 4, s1, k1, o1, 3);
        check_frac(dev, d, 2, 3, s2, k2, o2, 4);
        check_frac(dev, d, 2, 4, s3, k3, o3, 5);
        check_frac(dev, d, 3, 5, s4, k4, o4, 6);
        check_frac(dev, d, 3, 4, s5, k5, o5, 7);
    }
}

/* Equal values: each window names its first element, as torch's strict >. */
Test(pool2, fractional_ties_name_the_first)
{
    clt_device *dev = get_device("cpu");
    const int64_t sh[4] = {1, 1, 6, 6}, k[2] = {3, 2}, o[2] = {3, 4}, us[3] = {1, 1, 2};
    double x[36], u[2] = {0.25, 0.75};
    for (int i = 0; i < 36; i++)
        x[i] = 1.0;
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, sh, x), *s = tensor_of(dev, CLT_FLOAT64, 3, us, u);
    clt_tensor *out = NULL, *ix = NULL;
    CHECK(clt_fractional_max_pool2d(t, k, o, NULL, s, NULL, &out, &ix));
    int64_t sw[4], shh[3];
    ref_starts(u[0], 6, 4, 2, sw);
    ref_starts(u[1], 6, 3, 3, shh);
    double *gi = read_as_f64(ix);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 4; b++)
            cr_assert_eq((int64_t)gi[a * 4 + b], shh[a] * 6 + sw[b]);
    free(gi);
    clt_tensor_free(t);
    clt_tensor_free(s);
    clt_tensor_free(out);
    clt_tensor_free(ix);
}

/* Without samples: drawn as clt_rand([N, C, 2]) from the generator, so a
 * generator of the same seed gives the same pooling, and the ratio gives
 * floor(in * ratio). */
Test(pool2, fractional_samples_from_the_generator)
{
    clt_device *dev = get_device("cpu");
    const int64_t sh[4] = {2, 3, 10, 9}, k[2] = {2, 2}, us[3] = {2, 3, 2};
    const double ratio[2] = {0.5, 0.7};
    double x[540];
    fill_distinct(x, 540, 11);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, sh, x), *a = NULL, *b = NULL, *s = NULL;
    clt_generator *g1 = NULL, *g2 = NULL;
    CHECK(clt_generator_new(99, &g1));
    CHECK(clt_generator_new(99, &g2));
    CHECK(clt_fractional_max_pool2d(t, k, NULL, ratio, NULL, g1, &a, NULL));
    const int64_t want[4] = {2, 3, 5, 6};
    assert_shape(a, 4, want);
    CHECK(clt_rand(g2, dev, CLT_FLOAT64, 3, us, &s));
    CHECK(clt_fractional_max_pool2d(t, k, want + 2, NULL, s, NULL, &b, NULL));
    double *va = read_as_f64(a), *vb = read_as_f64(b);
    for (int i = 0; i < 180; i++)
        cr_assert_eq(va[i], vb[i]);
    cr_assert_eq(clt_generator_offset(g1), clt_generator_offset(g2));
    free(va);
    free(vb);
    clt_tensor_free(t);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(s);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

static clt_status g_frac2(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const int64_t k[2] = {2, 3}, o[2] = {3, 3};
    return clt_fractional_max_pool2d(in[0], k, o, NULL, ctx, NULL, out, NULL);
}

static clt_status g_frac3(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const int64_t k[3] = {2, 2, 2}, o[3] = {2, 3, 3};
    return clt_fractional_max_pool3d(in[0], k, o, NULL, ctx, NULL, out, NULL);
}

Test(pool2, fractional_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double x[840], u[12];
    fill_distinct(x, 840, 13);
    for (int i = 0; i < 12; i++)
        u[i] = 0.08 * i;
    const int64_t us2[3] = {2, 3, 2}, us3[3] = {1, 4, 3};
    clt_tensor *s2 = tensor_of(dev, CLT_FLOAT64, 3, us2, u);
    clt_tensor *s3 = tensor_of(dev, CLT_FLOAT64, 3, us3, u);
    gc_in a = {4, {2, 3, 6, 7}, x, 1};
    gradcheck(dev, g_frac2, s2, 1, &a);
    gc_in b = {4, {4, 5, 6, 7}, x, 1};
    gradcheck(dev, g_frac3, s3, 1, &b);
    clt_tensor_free(s2);
    clt_tensor_free(s3);
}

/* ---- double backward: clt_gradgradcheck ------------------------------------------------- */

typedef struct gg_ctx {
    int op;
    const clt_tensor *samples;
} gg_ctx;

static clt_status gg_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **outs,
                        size_t *m)
{
    (void)n;
    const gg_ctx *c = user;
    const int64_t k2[2] = {2, 2}, k3[3] = {2, 2, 2}, o2[2] = {3, 2}, o3[3] = {2, 2, 3};
    *m = 1;
    switch (c->op) {
    case 0:
        return clt_fractional_max_pool2d(in[0], k2, o2, NULL, c->samples, NULL, outs, NULL);
    case 1:
        return clt_fractional_max_pool3d(in[0], k3, o3, NULL, c->samples, NULL, outs, NULL);
    case 2:
        return clt_adaptive_avg_pool2d(in[0], o2, outs);
    case 3:
        return clt_adaptive_max_pool2d(in[0], o2, outs, NULL);
    case 4:
        return clt_adaptive_avg_pool3d(in[0], o3, outs);
    case 5:
        return clt_adaptive_max_pool3d(in[0], o3, outs, NULL);
    case 6:
        return clt_adaptive_avg_pool1d(in[0], 3, outs);
    default:
        return clt_adaptive_max_pool1d(in[0], 3, outs, NULL);
    }
}

Test(pool2, double_backward_by_gradgradcheck)
{
    clt_device *dev = get_device("cpu");
    double x[240], u[12];
    fill_distinct(x, 240, 17);
    for (int i = 0; i < 12; i++)
        u[i] = 0.07 * i + 0.01;
    const int64_t s4[4] = {1, 2, 5, 6}, s5[5] = {1, 2, 4, 5, 6}, s3[3] = {2, 3, 7};
    const int64_t us2[3] = {1, 2, 2}, us3[3] = {1, 2, 3};
    clt_tensor *sm2 = tensor_of(dev, CLT_FLOAT64, 3, us2, u);
    clt_tensor *sm3 = tensor_of(dev, CLT_FLOAT64, 3, us3, u);
    for (int op = 0; op < 8; op++) {
        clt_tensor *t = NULL;
        if (op == 1 || op == 4 || op == 5)
            t = tensor_of(dev, CLT_FLOAT64, 5, s5, x);
        else if (op >= 6)
            t = tensor_of(dev, CLT_FLOAT64, 3, s3, x);
        else
            t = tensor_of(dev, CLT_FLOAT64, 4, s4, x);
        CHECK(clt_set_requires_grad(t, 1));
        gg_ctx c = {op, op == 1 ? sm3 : sm2};
        clt_status st = clt_gradgradcheck(gg_fn, &c, &t, 1, NULL, 0, NULL);
        cr_assert_eq(st, CLT_OK, "op %d: %s", op, clt_last_error());
        CHECK(clt_gradcheck(gg_fn, &c, &t, 1, NULL));
        clt_tensor_free(t);
    }
    clt_tensor_free(sm2);
    clt_tensor_free(sm3);
}

/* The second derivative of pool(x)^2 is not zero: gradgradcheck of the
 * square checks the double-backward formulas against finite differences. */
static clt_status gg_square(void *user, clt_tensor *const *in, size_t n, clt_tensor **outs,
                            size_t *m)
{
    clt_tensor *y = NULL;
    clt_status st = gg_fn(user, in, n, &y, m);
    if (st == CLT_OK)
        st = clt_mul(y, y, outs);
    clt_tensor_free(y);
    return st;
}

Test(pool2, second_derivatives_of_the_square)
{
    clt_device *dev = get_device("cpu");
    double x[240], u[12];
    fill_distinct(x, 240, 19);
    for (int i = 0; i < 12; i++)
        u[i] = 0.05 * i + 0.02;
    const int64_t s4[4] = {1, 2, 5, 6}, s5[4] = {2, 4, 5, 6}, s3[3] = {2, 3, 7};
    const int64_t us2[3] = {1, 2, 2}, us3[3] = {1, 2, 3};
    clt_tensor *sm2 = tensor_of(dev, CLT_FLOAT64, 3, us2, u);
    clt_tensor *sm3 = tensor_of(dev, CLT_FLOAT64, 3, us3, u);
    for (int op = 0; op < 8; op++) {
        clt_tensor *t = NULL;
        if (op == 1 || op == 4 || op == 5) /* unbatched 3-D */
            t = tensor_of(dev, CLT_FLOAT64, 4, s5, x);
        else if (op >= 6)
            t = tensor_of(dev, CLT_FLOAT64, 3, s3, x);
        else
            t = tensor_of(dev, CLT_FLOAT64, 4, s4, x);
        CHECK(clt_set_requires_grad(t, 1));
        gg_ctx c = {op, op == 1 ? sm3 : sm2};
        clt_status st = clt_gradgradcheck(gg_square, &c, &t, 1, NULL, 0, NULL);
        cr_assert_eq(st, CLT_OK, "op %d: %s", op, clt_last_error());
        clt_tensor_free(t);
    }
    clt_tensor_free(sm2);
    clt_tensor_free(sm3);
}

/* ---- names, errors, layers, hooks ------------------------------------------------------- */

Test(pool2, grad_fn_names_as_torch)
{
    clt_device *dev = get_device("cpu");
    double x[240];
    fill_distinct(x, 240, 23);
    const int64_t s5[5] = {1, 2, 4, 4, 6}, s4[4] = {2, 4, 4, 6}, k[3] = {2, 2, 2};
    const int64_t o[3] = {2, 2, 2}, us[3] = {1, 2, 3}, us2[3] = {2, 4, 2}, k2[2] = {2, 2};
    double u[16];
    for (int i = 0; i < 16; i++)
        u[i] = 0.06 * i;
    for (int r = 0; r < 2; r++) {
        clt_tensor *t = r ? tensor_of(dev, CLT_FLOAT64, 4, s4, x)
                          : tensor_of(dev, CLT_FLOAT64, 5, s5, x);
        clt_tensor *s = tensor_of(dev, CLT_FLOAT64, 3, us, u), *y = NULL, *ix = NULL, *z = NULL;
        CHECK(clt_set_requires_grad(t, 1));
        CHECK(clt_max_pool3d(t, k, NULL, NULL, NULL, 0, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), "MaxPool3DWithIndicesBackward0");
        clt_tensor_free(y);
        CHECK(clt_max_pool3d_with_indices(t, k, NULL, NULL, NULL, 0, &y, &ix));
        cr_assert_str_eq(clt_grad_fn_name(y), "MaxPool3DWithIndicesBackward0");
        CHECK(clt_max_unpool3d(y, ix, k, NULL, NULL, NULL, &z));
        cr_assert_str_eq(clt_grad_fn_name(z), "MaxUnpool3DBackward0");
        clt_tensor_free(y);
        clt_tensor_free(ix);
        clt_tensor_free(z);
        CHECK(clt_avg_pool3d(t, k, NULL, NULL, 0, 1, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), "AvgPool3DBackward0");
        clt_tensor_free(y);
        CHECK(clt_adaptive_avg_pool3d(t, o, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), "AdaptiveAvgPool3DBackward0");
        clt_tensor_free(y);
        CHECK(clt_adaptive_max_pool3d(t, o, &y, NULL));
        cr_assert_str_eq(clt_grad_fn_name(y), "AdaptiveMaxPool3DBackward0");
        clt_tensor_free(y);
        if (r == 0) {
            CHECK(clt_fractional_max_pool3d(t, k, o, NULL, s, NULL, &y, NULL));
            cr_assert_str_eq(clt_grad_fn_name(y), "FractionalMaxPool3DBackward0");
            clt_tensor_free(y);
        } else {
            clt_tensor *s2 = tensor_of(dev, CLT_FLOAT64, 3, us2, u);
            CHECK(clt_fractional_max_pool2d(t, k2, k2, NULL, s2, NULL, &y, NULL));
            cr_assert_str_eq(clt_grad_fn_name(y), "FractionalMaxPool2DBackward0");
            /* the gradient of sum(y^2), taken with create_graph, is the
             * scatter's node (its gradient depends on x through y) */
            clt_tensor *sum = NULL, *g = NULL, *sq = NULL;
            CHECK(clt_mul(y, y, &sq));
            CHECK(clt_sum(sq, &sum));
            clt_tensor_free(sq);
            clt_grad_opts go = {1, 1, 0};
            CHECK(clt_autograd_grad_ex(&sum, 1, NULL, &t, 1, &go, &g));
            cr_assert_str_eq(clt_grad_fn_name(g), "FractionalMaxPool2DBackwardBackward0");
            clt_tensor_free(sum);
            clt_tensor_free(g);
            clt_tensor_free(y);
            clt_tensor_free(s2);
        }
        /* without grad: no node */
        clt_tensor *c = tensor_of(dev, CLT_FLOAT64, 5, s5, x);
        CHECK(clt_max_pool3d(c, k, NULL, NULL, NULL, 0, &y));
        cr_assert_null(clt_grad_fn_name(y));
        clt_tensor_free(y);
        clt_tensor_free(c);
        clt_tensor_free(s);
        clt_tensor_free(t);
    }
}

Test(pool2, fractional_errors_as_torch)
{
    clt_device *dev = get_device("cpu");
    double x[180] = {0};
    const int64_t sh[4] = {2, 3, 5, 6}, k[2] = {2, 2}, big[2] = {5, 5}, o[2] = {2, 2};
    const int64_t us[3] = {2, 3, 2}, bad_us[3] = {2, 2, 2}, k0[2] = {0, 2}, s2[2] = {5, 6};
    const double r_bad[2] = {1.5, 0.5};
    double u[12] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.5};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 4, sh, x);
    clt_tensor *t2 = tensor_of(dev, CLT_FLOAT32, 2, s2, x);
    clt_tensor *ti = tensor_of(dev, CLT_INT64, 4, sh, x);
    clt_tensor *s = tensor_of(dev, CLT_FLOAT32, 3, us, u);
    clt_tensor *s64 = tensor_of(dev, CLT_FLOAT64, 3, us, u);
    clt_tensor *sbad = tensor_of(dev, CLT_FLOAT32, 3, bad_us, u);
    clt_tensor *out = (clt_tensor *)1, *ix = (clt_tensor *)1;
    assert_error(clt_fractional_max_pool2d(t, k, big, NULL, NULL, NULL, &out, &ix),
                 CLT_ERR_SHAPE_MISMATCH, "pool height 2 too large relative to input height 5");
    cr_assert_null(out);
    cr_assert_null(ix);
    names_only("clt_fractional_max_pool2d");
    assert_error(clt_fractional_max_pool2d(t, k, NULL, NULL, NULL, NULL, &out, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "either an output_size or an output_ratio");
    assert_error(clt_fractional_max_pool2d(t, k, NULL, r_bad, NULL, NULL, &out, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "output_ratio must be between 0 and 1");
    assert_error(clt_fractional_max_pool2d(t, k0, o, NULL, NULL, NULL, &out, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "kernel_size");
    assert_error(clt_fractional_max_pool2d(t2, k, o, NULL, NULL, NULL, &out, NULL),
                 CLT_ERR_SHAPE_MISMATCH, "Expected 3D or 4D tensor");
    assert_error(clt_fractional_max_pool2d(ti, k, o, NULL, NULL, NULL, &out, NULL),
                 CLT_ERR_DTYPE_UNSUPPORTED, "not implemented for");
    assert_error(clt_fractional_max_pool2d(t, k, o, NULL, s64, NULL, &out, NULL),
                 CLT_ERR_DTYPE_MISMATCH, "_random_samples");
    assert_error(clt_fractional_max_pool2d(t, k, o, NULL, sbad, NULL, &out, NULL),
                 CLT_ERR_SHAPE_MISMATCH, "_random_samples must be of shape");
    assert_error(clt_fractional_max_pool2d(t, k, o, NULL, s, NULL, &out, NULL),
                 CLT_ERR_INVALID_ARGUMENT, "must lie in [0, 1)");
    cr_assert_null(out);
    const int64_t s5[5] = {1, 1, 5, 6, 6}, k3[3] = {2, 2, 2}, o3[3] = {4, 3, 3};
    clt_tensor *v = tensor_of(dev, CLT_FLOAT32, 5, s5, x);
    assert_error(clt_fractional_max_pool3d(v, k3, o3, NULL, NULL, NULL, &out, NULL),
                 CLT_ERR_SHAPE_MISMATCH, "pool time 2 too large relative to input time 5");
    clt_tensor_free(t);
    clt_tensor_free(t2);
    clt_tensor_free(ti);
    clt_tensor_free(s);
    clt_tensor_free(s64);
    clt_tensor_free(sbad);
    clt_tensor_free(v);
}

Test(pool2, fractional_layers)
{
    clt_device *dev = get_device("cpu");
    double x[540];
    fill_distinct(x, 540, 29);
    const int64_t sh[4] = {2, 3, 10, 9}, k[2] = {2, 2}, o[2] = {4, 4}, us[3] = {2, 3, 2};
    const double ratio[3] = {0.5, 0.5, 0.5};
    clt_module *m = (clt_module *)1;
    assert_error(clt_fractional_max_pool2d_layer(k, NULL, NULL, NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "requires specifying either an output size");
    cr_assert_null(m);
    assert_error(clt_fractional_max_pool2d_layer(k, o, ratio, NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "only one of output_size and output_ratio");
    const double r_bad[2] = {0.5, 1.0};
    assert_error(clt_fractional_max_pool2d_layer(k, NULL, r_bad, NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "output_ratio must be between 0 and 1");
    clt_generator *g1 = NULL, *g2 = NULL;
    CHECK(clt_generator_new(5, &g1));
    CHECK(clt_generator_new(5, &g2));
    CHECK(clt_fractional_max_pool2d_layer(k, o, NULL, g1, &m));
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, sh, x), *y = NULL, *s = NULL, *want = NULL;
    CHECK(clt_module_forward(m, t, &y));
    CHECK(clt_rand(g2, dev, CLT_FLOAT64, 3, us, &s));
    CHECK(clt_fractional_max_pool2d(t, k, o, NULL, s, NULL, &want, NULL));
    double *a = read_as_f64(y), *b = read_as_f64(want);
    for (int i = 0; i < 96; i++)
        cr_assert_eq(a[i], b[i]);
    free(a);
    free(b);
    clt_tensor_free(y);
    clt_module_free(m);
    /* 3-D by ratio, unbatched */
    const int64_t s4[4] = {2, 6, 5, 9}, k3[3] = {2, 2, 2}, w3[4] = {2, 3, 2, 4};
    CHECK(clt_fractional_max_pool3d_layer(k3, NULL, ratio, NULL, &m));
    clt_tensor *v = tensor_of(dev, CLT_FLOAT32, 4, s4, x);
    CHECK(clt_module_forward(m, v, &y));
    assert_shape(y, 4, w3);
    clt_tensor_free(y);
    clt_module_free(m);
    clt_tensor_free(v);
    clt_tensor_free(t);
    clt_tensor_free(s);
    clt_tensor_free(want);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

/* MaxUnpool layers' forward runs the module's hooks. */
static int pre_calls, post_calls;

static clt_status pre_hook(void *user, clt_module *m, const clt_tensor *input,
                           clt_tensor **replacement)
{
    (void)user;
    (void)m;
    (void)replacement;
    pre_calls++;
    cr_assert_eq(clt_tensor_ndim(input), 4);
    return CLT_OK;
}

static clt_status post_hook(void *user, clt_module *m, const clt_tensor *input,
                            const clt_tensor *output, clt_tensor **replacement)
{
    (void)user;
    (void)m;
    (void)input;
    post_calls++;
    return clt_mul_scalar(output, 2.0, replacement);
}

Test(pool2, max_unpool_layer_runs_hooks)
{
    clt_device *dev = get_device("cpu");
    double x[96];
    fill_distinct(x, 96, 31);
    const int64_t sh[4] = {1, 2, 6, 8}, k[2] = {2, 2};
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, sh, x), *y = NULL, *ix = NULL, *u = NULL;
    CHECK(clt_max_pool2d_with_indices(t, k, NULL, NULL, NULL, 0, &y, &ix));
    clt_module *m = NULL;
    CHECK(clt_max_unpool2d_layer(2, 2, NULL, NULL, &m));
    clt_hook *h1 = NULL, *h2 = NULL;
    CHECK(clt_module_register_forward_pre_hook(m, pre_hook, NULL, &h1));
    CHECK(clt_module_register_forward_hook(m, post_hook, NULL, &h2));
    pre_calls = post_calls = 0;
    CHECK(clt_max_unpool_forward(m, y, ix, NULL, &u));
    cr_assert_eq(pre_calls, 1);
    cr_assert_eq(post_calls, 1);
    assert_shape(u, 4, sh);
    /* the unpooled maxima, doubled by the forward hook; zeros elsewhere */
    double *v = read_as_f64(u), *yv = read_as_f64(y), *iv = read_as_f64(ix);
    double want[96] = {0};
    for (int p = 0; p < 2; p++)
        for (int j = 0; j < 12; j++)
            want[p * 48 + (int)iv[p * 12 + j]] = 2.0 * yv[p * 12 + j];
    for (int i = 0; i < 96; i++)
        cr_assert_eq(v[i], want[i], "element %d: %g, want %g", i, v[i], want[i]);
    free(v);
    free(yv);
    free(iv);
    clt_tensor_free(u);
    /* the 3-D layer too */
    const int64_t s5[5] = {1, 1, 2, 6, 8}, k3[3] = {2, 2, 2};
    clt_tensor *t5 = tensor_of(dev, CLT_FLOAT64, 5, s5, x), *y5 = NULL, *i5 = NULL;
    CHECK(clt_max_pool3d_with_indices(t5, k3, NULL, NULL, NULL, 0, &y5, &i5));
    clt_module *m3 = NULL;
    CHECK(clt_max_unpool3d_layer(k3, NULL, NULL, &m3));
    CHECK(clt_module_register_forward_hook(m3, post_hook, NULL, NULL));
    post_calls = 0;
    CHECK(clt_max_unpool_forward(m3, y5, i5, NULL, &u));
    cr_assert_eq(post_calls, 1);
    assert_shape(u, 5, s5);
    clt_tensor_free(u);
    clt_module_free(m3);
    clt_tensor_free(t5);
    clt_tensor_free(y5);
    clt_tensor_free(i5);
    clt_hook_remove(h1);
    clt_hook_remove(h2);
    clt_module_free(m);
    clt_tensor_free(t);
    clt_tensor_free(y);
    clt_tensor_free(ix);
}
