/* test_nn3.c: the lazy layers against the plain layers made from equally
 * seeded generators (weights, outputs, running statistics, names), what
 * they refuse before their first forward, and CrossMapLRN2d against a host
 * copy of torch's running-sum loop, its gradient against finite
 * differences in float64 (gradcheck.h), and its errors. */
#include <math.h>
#include <stdio.h>

#include "gradcheck.h"

static clt_generator *seeded(uint64_t seed)
{
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    return g;
}

/* Both modules' tensors, listed in the same order, hold the same names
 * and values. */
static void assert_same_state(clt_module *a, clt_module *b)
{
    clt_named_tensor *sa, *sb;
    size_t na, nb;
    CHECK(clt_module_state(a, &sa, &na));
    CHECK(clt_module_state(b, &sb, &nb));
    cr_assert_eq(na, nb, "%zu tensors, want %zu", na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_str_eq(sa[i].name, sb[i].name);
        assert_shape(sa[i].tensor, clt_tensor_ndim(sb[i].tensor), clt_tensor_shape(sb[i].tensor));
        size_t n = (size_t)clt_tensor_numel(sb[i].tensor);
        double *want = read_as_f64(sb[i].tensor);
        assert_tensor_close(sa[i].tensor, want, n, 0, 0, sa[i].name);
        free(want);
    }
    clt_free(sa);
    clt_free(sb);
}

/* lazy(x) and plain(x) agree, and so do the two modules afterwards. */
static void assert_same_forward(clt_module *lazy, clt_module *plain, const clt_tensor *x)
{
    clt_tensor *y1 = NULL, *y2 = NULL;
    CHECK(clt_module_forward(lazy, x, &y1));
    CHECK(clt_module_forward(plain, x, &y2));
    assert_shape(y1, clt_tensor_ndim(y2), clt_tensor_shape(y2));
    double *want = read_as_f64(y2);
    assert_tensor_close(y1, want, (size_t)clt_tensor_numel(y2), 1e-6, 1e-6, "output");
    free(want);
    clt_tensor_free(y1);
    clt_tensor_free(y2);
    cr_assert_eq(clt_module_has_uninitialized_params(lazy), 0);
    cr_assert_str_eq(clt_module_name(lazy), clt_module_name(plain));
    assert_same_state(lazy, plain);
}

static clt_tensor *input(clt_device *dev, int nd, const int64_t *shape, unsigned seed)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    double *v = spread_doubles((size_t)n, seed);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, nd, shape, v);
    free(v);
    return t;
}

Test(nn3, lazy_linear_is_linear_after_its_first_forward)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g1 = seeded(7), *g2 = seeded(7);
    clt_module *lazy = NULL, *plain = NULL;
    CHECK(clt_lazy_linear(dev, 3, 1, g1, &lazy));
    cr_assert_str_eq(clt_module_name(lazy), "LazyLinear");
    cr_assert_eq(clt_module_has_uninitialized_params(lazy), 1);
    cr_assert_eq(clt_generator_offset(g1), 0, "making the layer draws nothing");
    cr_assert_eq(clt_module_num_parameters(lazy), 0);
    clt_tensor **ps = NULL;
    size_t n = 0;
    assert_error(clt_module_parameters(lazy, &ps, &n), CLT_ERR_INVALID_ARGUMENT, "LazyLinear");
    cr_assert_null(ps);
    clt_named_tensor *st = NULL;
    assert_error(clt_module_state(lazy, &st, &n), CLT_ERR_INVALID_ARGUMENT, "forward");
    cr_assert_null(st);
    CHECK(clt_linear(dev, 5, 3, 1, g2, &plain));
    clt_tensor *x = input(dev, 3, (int64_t[]){2, 4, 5}, 3);
    assert_same_forward(lazy, plain, x);
    cr_assert_eq(clt_generator_offset(g1), clt_generator_offset(g2));
    cr_assert_eq(clt_module_num_parameters(lazy), 3 * 5 + 3);
    CHECK(clt_module_parameters(lazy, &ps, &n));
    cr_assert_eq(n, 2);
    assert_shape(ps[0], 2, (int64_t[]){3, 5});
    clt_free(ps);
    /* the size is fixed now: another in_features is the plain layer's error */
    clt_tensor *bad = input(dev, 2, (int64_t[]){2, 6}, 4), *y = NULL;
    cr_assert_neq(clt_module_forward(lazy, bad, &y), CLT_OK);
    cr_assert_null(y);
    clt_tensor_free(bad);
    clt_tensor_free(x);
    clt_module_free(lazy);
    clt_module_free(plain);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

Test(nn3, lazy_convolutions_match_the_plain_ones)
{
    clt_device *dev = get_device("cpu");
    for (int kind = 0; kind < 6; kind++) {
        clt_generator *g1 = seeded(11 + (uint64_t)kind), *g2 = seeded(11 + (uint64_t)kind);
        clt_module *lazy = NULL, *plain = NULL;
        clt_tensor *x = NULL;
        int64_t k3[3] = {2, 1, 2};
        switch (kind) {
        case 0: {
            clt_conv1d_opts o = CLT_CONV1D_DEFAULTS;
            o.groups = 2;
            o.padding = 1;
            CHECK(clt_lazy_conv1d(dev, 4, 3, &o, 1, g1, &lazy));
            CHECK(clt_conv1d_layer(dev, 6, 4, 3, &o, 1, g2, &plain));
            x = input(dev, 3, (int64_t[]){2, 6, 7}, 5);
            break;
        }
        case 1: /* unbatched: the channels are dimension 0 */
            CHECK(clt_lazy_conv2d(dev, 3, 2, 3, NULL, 0, g1, &lazy));
            CHECK(clt_conv2d_layer(dev, 4, 3, 2, 3, NULL, 0, g2, &plain));
            x = input(dev, 3, (int64_t[]){4, 5, 6}, 6);
            break;
        case 2:
            CHECK(clt_lazy_conv3d(dev, 2, k3, NULL, 1, g1, &lazy));
            CHECK(clt_conv3d_layer(dev, 3, 2, k3, NULL, 1, g2, &plain));
            x = input(dev, 5, (int64_t[]){1, 3, 3, 4, 3}, 7);
            break;
        case 3:
            CHECK(clt_lazy_conv_transpose1d(dev, 5, 2, NULL, 1, g1, &lazy));
            CHECK(clt_conv_transpose1d_layer(dev, 3, 5, 2, NULL, 1, g2, &plain));
            x = input(dev, 3, (int64_t[]){2, 3, 4}, 8);
            break;
        case 4: {
            clt_conv_transpose2d_opts o = CLT_CONV_TRANSPOSE2D_DEFAULTS;
            o.stride[0] = 2;
            CHECK(clt_lazy_conv_transpose2d(dev, 2, 3, 2, &o, 1, g1, &lazy));
            CHECK(clt_conv_transpose2d_layer(dev, 4, 2, 3, 2, &o, 1, g2, &plain));
            x = input(dev, 4, (int64_t[]){2, 4, 3, 3}, 9);
            break;
        }
        default:
            CHECK(clt_lazy_conv_transpose3d(dev, 2, k3, NULL, 1, g1, &lazy));
            CHECK(clt_conv_transpose3d_layer(dev, 3, 2, k3, NULL, 1, g2, &plain));
            x = input(dev, 4, (int64_t[]){3, 2, 2, 3}, 10);
            break;
        }
        assert_same_forward(lazy, plain, x);
        clt_tensor_free(x);
        clt_module_free(lazy);
        clt_module_free(plain);
        clt_generator_free(g1);
        clt_generator_free(g2);
    }
}

Test(nn3, lazy_norms_match_the_plain_ones)
{
    clt_device *dev = get_device("cpu");
    for (int kind = 0; kind < 6; kind++) {
        clt_module *lazy = NULL, *plain = NULL;
        clt_tensor *x = NULL;
        double eps = 1e-3, mom = 0.25;
        int affine = kind % 2 == 0, track = kind != 3;
        switch (kind) {
        case 0:
            CHECK(clt_lazy_batch_norm1d(dev, eps, mom, affine, track, &lazy));
            CHECK(clt_batch_norm1d_layer(dev, 3, eps, mom, affine, track, &plain));
            x = input(dev, 3, (int64_t[]){4, 3, 5}, 12);
            break;
        case 1:
            CHECK(clt_lazy_batch_norm2d(dev, eps, mom, affine, track, &lazy));
            CHECK(clt_batch_norm2d_layer(dev, 2, eps, mom, affine, track, &plain));
            x = input(dev, 4, (int64_t[]){3, 2, 2, 3}, 13);
            break;
        case 2:
            CHECK(clt_lazy_batch_norm3d(dev, eps, mom, affine, track, &lazy));
            CHECK(clt_batch_norm3d_layer(dev, 2, eps, mom, affine, track, &plain));
            x = input(dev, 5, (int64_t[]){2, 2, 2, 2, 3}, 14);
            break;
        case 3:
            CHECK(clt_lazy_instance_norm1d(dev, eps, mom, affine, track, &lazy));
            CHECK(clt_instance_norm1d_layer(dev, 4, eps, mom, affine, track, &plain));
            x = input(dev, 3, (int64_t[]){2, 4, 6}, 15);
            break;
        case 4:
            CHECK(clt_lazy_instance_norm2d(dev, eps, mom, affine, track, &lazy));
            CHECK(clt_instance_norm2d_layer(dev, 3, eps, mom, affine, track, &plain));
            x = input(dev, 4, (int64_t[]){2, 3, 3, 4}, 16);
            break;
        default:
            CHECK(clt_lazy_instance_norm3d(dev, eps, mom, affine, track, &lazy));
            CHECK(clt_instance_norm3d_layer(dev, 2, eps, mom, affine, track, &plain));
            x = input(dev, 5, (int64_t[]){2, 2, 2, 3, 2}, 17);
            break;
        }
        /* the running statistics after one step in train mode agree too */
        assert_same_forward(lazy, plain, x);
        clt_module_train(lazy, 0);
        clt_module_train(plain, 0);
        assert_same_forward(lazy, plain, x);
        clt_tensor_free(x);
        clt_module_free(lazy);
        clt_module_free(plain);
    }
}

Test(nn3, a_failed_first_forward_leaves_the_layer_lazy)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = seeded(3);
    clt_module *lazy = NULL;
    CHECK(clt_lazy_linear(dev, 2, 1, g, &lazy));
    double v[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *x64 = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){2, 3}, v), *y = NULL;
    assert_error(clt_module_forward(lazy, x64, &y), CLT_ERR_DTYPE_MISMATCH, "float64");
    cr_assert_null(y);
    cr_assert_eq(clt_module_has_uninitialized_params(lazy), 1);
    cr_assert_str_eq(clt_module_name(lazy), "LazyLinear");
    cr_assert_eq(clt_generator_offset(g), 0, "the failed forward drew nothing");
    /* a 0-d input has no size to take */
    double one = 1;
    clt_tensor *s = tensor_of(dev, CLT_FLOAT32, 0, NULL, &one);
    assert_error(clt_module_forward(lazy, s, &y), CLT_ERR_SHAPE_MISMATCH, "in_features");
    /* as model.double() before the first forward: the tensors are made float64 */
    CHECK(clt_module_to_dtype(lazy, CLT_FLOAT64));
    CHECK(clt_module_forward(lazy, x64, &y));
    cr_assert_eq(clt_tensor_dtype(clt_module_param(lazy, "weight")), CLT_FLOAT64);
    cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT64);
    /* y = x W^T + b with the layer's own tensors */
    double *w = read_as_f64(clt_module_param(lazy, "weight"));
    double *b = read_as_f64(clt_module_param(lazy, "bias")), want[4];
    for (int i = 0; i < 2; i++)
        for (int o = 0; o < 2; o++)
            want[i * 2 + o] = b[o] + v[i * 3] * w[o * 3] + v[i * 3 + 1] * w[o * 3 + 1] +
                              v[i * 3 + 2] * w[o * 3 + 2];
    assert_tensor_close(y, want, 4, 1e-12, 1e-12, "y");
    assert_uniform_within(clt_module_param(lazy, "weight"), 1 / sqrt(3.0), "weight");
    free(w);
    free(b);
    clt_tensor_free(y);
    clt_tensor_free(s);
    clt_tensor_free(x64);
    clt_module_free(lazy);
    clt_generator_free(g);
}

Test(nn3, lazy_layers_in_a_model)
{
    clt_device *dev = get_device("cpu");
    clt_module *mods[3] = {NULL, NULL, NULL}, *seq = NULL, *copy = NULL;
    CHECK(clt_lazy_conv2d(dev, 4, 3, 3, NULL, 1, NULL, &mods[0]));
    CHECK(clt_lazy_batch_norm2d(dev, 1e-5, 0.1, 1, 1, &mods[1]));
    CHECK(clt_flatten_layer(1, -1, &mods[2]));
    CHECK(clt_sequential(mods, 3, &seq));
    clt_tensor **ps = NULL;
    size_t n = 0;
    assert_error(clt_module_parameters(seq, &ps, &n), CLT_ERR_INVALID_ARGUMENT, "LazyConv2d");
    clt_named_tensor *nb = NULL;
    assert_error(clt_module_named_buffers(seq, &nb, &n), CLT_ERR_INVALID_ARGUMENT, NULL);
    /* a copy made before the first forward is lazy too, and independent */
    CHECK(clt_module_clone(seq, NULL, &copy));
    cr_assert_eq(clt_module_has_uninitialized_params(copy), 1);
    clt_tensor *x = input(dev, 4, (int64_t[]){2, 3, 5, 5}, 21), *y = NULL;
    CHECK(clt_module_forward(seq, x, &y));
    assert_shape(y, 2, (int64_t[]){2, 4 * 3 * 3});
    cr_assert_eq(clt_module_has_uninitialized_params(seq), 0);
    cr_assert_eq(clt_module_has_uninitialized_params(copy), 1);
    clt_named_tensor *st = NULL;
    CHECK(clt_module_state(seq, &st, &n));
    const char *names[] = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                           "1.running_var", "1.num_batches_tracked"};
    cr_assert_eq(n, 7);
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(st[i].name, names[i]);
    assert_shape(st[0].tensor, 4, (int64_t[]){4, 3, 3, 3});
    assert_shape(st[4].tensor, 1, (int64_t[]){4});
    clt_free(st);
    /* the copy learns its own size from its own first input */
    clt_tensor *x2 = input(dev, 4, (int64_t[]){2, 5, 4, 4}, 22), *y2 = NULL;
    CHECK(clt_module_forward(copy, x2, &y2));
    assert_shape(y2, 2, (int64_t[]){2, 4 * 2 * 2});
    assert_shape(clt_module_param(clt_module_child(copy, "0"), "weight"), 4,
                 (int64_t[]){4, 5, 3, 3});
    /* the optimizer takes the parameters once they exist */
    CHECK(clt_module_parameters(seq, &ps, &n));
    cr_assert_eq(n, 4);
    clt_free(ps);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_tensor_free(x);
    clt_tensor_free(x2);
    clt_module_free(seq);
    clt_module_free(copy);
}

Test(nn3, lazy_constructors_check_their_settings)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = (clt_module *)1;
    clt_conv2d_opts o = CLT_CONV2D_DEFAULTS;
    o.groups = 2;
    assert_error(clt_lazy_conv2d(dev, 3, 2, 2, &o, 1, NULL, &m), CLT_ERR_INVALID_ARGUMENT,
                 "clt_lazy_conv2d");
    cr_assert_null(m);
    assert_error(clt_lazy_linear(dev, 0, 1, NULL, &m), CLT_ERR_INVALID_ARGUMENT,
                 "clt_lazy_linear");
    assert_error(clt_lazy_batch_norm1d(dev, -1, 0.1, 1, 1, &m), CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error(clt_lazy_linear(NULL, 2, 1, NULL, &m), CLT_ERR_NULL_ARGUMENT, NULL);
    /* a convolution's rank is checked before anything is made */
    CHECK(clt_lazy_conv1d(dev, 2, 1, NULL, 1, NULL, &m));
    clt_tensor *x = input(dev, 4, (int64_t[]){1, 2, 3, 3}, 2), *y = NULL;
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2D (unbatched) or 3D (batched) input to LazyConv1d");
    /* in_channels 3 with groups 2: the plain constructor's error */
    clt_module_free(m);
    o.groups = 2;
    clt_conv1d_opts o1 = CLT_CONV1D_DEFAULTS;
    o1.groups = 2;
    CHECK(clt_lazy_conv1d(dev, 2, 1, &o1, 1, NULL, &m));
    clt_tensor *x3 = input(dev, 3, (int64_t[]){1, 3, 4}, 3);
    cr_assert_eq(clt_module_forward(m, x3, &y), CLT_ERR_INVALID_ARGUMENT, "%s", clt_last_error());
    cr_assert_eq(clt_module_has_uninitialized_params(m), 1);
    clt_tensor_free(x3);
    clt_tensor_free(x);
    clt_module_free(m);
}

/* ---- CrossMapLRN2d ------------------------------------------------------- */

/* torch's forward written out as it is (a running sum over channels). */
static void host_cross_map(const double *x, int64_t N, int64_t C, int64_t HW, int64_t size,
                           double alpha, double beta, double k, double *y)
{
    double *scale = calloc((size_t)(N * C * HW), sizeof *scale);
    int64_t pre_pad = (size - 1) / 2 + 1, crop = pre_pad > C ? C : pre_pad;
    for (int64_t n = 0; n < N; n++) {
        const double *xn = x + n * C * HW;
        double *sn = scale + n * C * HW;
        for (int64_t c = 0; c < crop; c++)
            for (int64_t p = 0; p < HW; p++)
                sn[p] += xn[c * HW + p] * xn[c * HW + p];
        for (int64_t c = 1; c < C; c++)
            for (int64_t p = 0; p < HW; p++) {
                double s = sn[(c - 1) * HW + p];
                if (c < C - pre_pad + 1) {
                    double v = xn[(c + pre_pad - 1) * HW + p];
                    s += v * v;
                }
                if (c > pre_pad) {
                    double v = xn[(c - pre_pad) * HW + p];
                    s -= v * v;
                }
                sn[c * HW + p] = s;
            }
    }
    for (int64_t i = 0; i < N * C * HW; i++)
        y[i] = x[i] * pow(scale[i] * alpha / (double)size + k, -beta);
    free(scale);
}

Test(nn3, cross_map_lrn2d_against_torchs_loop)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {1, 2, 3, 5, 8};
    for (int si = 0; si < 5; si++)
        for (int64_t C = 1; C <= 7; C += 3) {
            int64_t shape[4] = {2, C, 3, 2}, n = 2 * C * 6;
            double *v = spread_doubles((size_t)n, 30 + (unsigned)C), *want = malloc(n * sizeof *want);
            for (int64_t i = 0; i < n; i++)
                v[i] *= 3;
            host_cross_map(v, 2, C, 6, sizes[si], 0.7, 0.75, 1.5, want);
            for (int dt = 0; dt < 2; dt++) {
                clt_tensor *x = tensor_of(dev, dt ? CLT_FLOAT64 : CLT_FLOAT32, 4, shape, v);
                clt_tensor *y = NULL;
                CHECK(clt_cross_map_lrn2d(x, sizes[si], 0.7, 0.75, 1.5, &y));
                assert_shape(y, 4, shape);
                cr_assert_eq(clt_tensor_dtype(y), clt_tensor_dtype(x));
                assert_tensor_close(y, want, (size_t)n, dt ? 1e-12 : 1e-5, dt ? 1e-12 : 1e-6,
                                    "CrossMapLRN2d");
                clt_tensor_free(y);
                clt_tensor_free(x);
            }
            free(v);
            free(want);
        }
    /* the layer with torch's defaults */
    clt_module *m = NULL;
    CHECK(clt_cross_map_lrn2d_layer(3, 1e-4, 0.75, 1, &m));
    cr_assert_str_eq(clt_module_name(m), "CrossMapLRN2d");
    double v[8] = {10, -20, 30, 5, 7, -8, 9, 100}, want[8];
    host_cross_map(v, 1, 4, 2, 3, 1e-4, 0.75, 1, want);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){1, 4, 2, 1}, v), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    assert_tensor_close(y, want, 8, 1e-12, 1e-12, "layer");
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_module_free(m);
}

typedef struct { int64_t size; double alpha, beta, k; } xm_ctx;

static clt_status xm_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const xm_ctx *c = ctx;
    return clt_cross_map_lrn2d(in[0], c->size, c->alpha, c->beta, c->k, out);
}

Test(nn3, cross_map_lrn2d_gradcheck)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {1, 3, 4};
    for (int si = 0; si < 3; si++) {
        xm_ctx c = {sizes[si], 0.9, 0.75, 1.2};
        double *v = spread_doubles(2 * 5 * 2 * 2, 40 + (unsigned)si);
        gc_in in[1] = {{4, {2, 5, 2, 2}, v, 1}};
        gradcheck(dev, xm_f, &c, 1, in);
        free(v);
    }
}

Test(nn3, cross_map_lrn2d_errors)
{
    clt_device *dev = get_device("cpu");
    double v[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *x3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){1, 2, 3}, v);
    clt_tensor *xi = tensor_of(dev, CLT_INT64, 4, (int64_t[]){1, 2, 3, 1}, v);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 2, 3, 1}, v);
    clt_tensor *e = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){0, 2, 3, 1}, v);
    clt_tensor *y = (clt_tensor *)1;
    assert_error(clt_cross_map_lrn2d(x3, 3, 1e-4, 0.75, 1, &y), CLT_ERR_SHAPE_MISMATCH, "4D");
    cr_assert_null(y);
    names_only("clt_cross_map_lrn2d");
    assert_error(clt_cross_map_lrn2d(xi, 3, 1e-4, 0.75, 1, &y), CLT_ERR_DTYPE_MISMATCH, "int64");
    assert_error(clt_cross_map_lrn2d(x, 0, 1e-4, 0.75, 1, &y), CLT_ERR_INVALID_ARGUMENT, "size");
    assert_error(clt_cross_map_lrn2d(NULL, 3, 1e-4, 0.75, 1, &y), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_module *m = (clt_module *)1;
    assert_error(clt_cross_map_lrn2d_layer(-1, 1e-4, 0.75, 1, &m), CLT_ERR_INVALID_ARGUMENT,
                 "size");
    cr_assert_null(m);
    CHECK(clt_cross_map_lrn2d(e, 3, 1e-4, 0.75, 1, &y));
    assert_shape(y, 4, (int64_t[]){0, 2, 3, 1});
    clt_tensor_free(y);
    clt_tensor_free(e);
    clt_tensor_free(x);
    clt_tensor_free(xi);
    clt_tensor_free(x3);
}

/* ---- AdaptiveLogSoftmaxWithLoss ------------------------------------------ */

/* out[n][o] = sum_i x[n][i] w[o][i] (+ b[o]) */
static void host_linear(const double *x, int64_t N, int64_t I, const double *w, const double *b,
                        int64_t O, double *out)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++) {
            double s = b ? b[o] : 0;
            for (int64_t i = 0; i < I; i++)
                s += x[n * I + i] * w[o * I + i];
            out[n * O + o] = s;
        }
}

static void host_log_softmax(double *v, int64_t N, int64_t K)
{
    for (int64_t n = 0; n < N; n++) {
        double mx = -INFINITY, s = 0;
        for (int64_t k = 0; k < K; k++)
            mx = fmax(mx, v[n * K + k]);
        for (int64_t k = 0; k < K; k++)
            s += exp(v[n * K + k] - mx);
        for (int64_t k = 0; k < K; k++)
            v[n * K + k] -= mx + log(s);
    }
}

static double *param_of(clt_module *m, const char *path)
{
    clt_named_tensor *st;
    size_t n;
    CHECK(clt_module_named_parameters(m, &st, &n));
    double *v = NULL;
    for (size_t i = 0; i < n; i++)
        if (strcmp(st[i].name, path) == 0)
            v = read_as_f64(st[i].tensor);
    clt_free(st);
    cr_assert_not_null(v, "no parameter %s", path);
    return v;
}

/* The full [N, 10] log-probabilities of the model below, from its own
 * parameters: in 6, cutoffs {3, 6} of 10 classes, div_value 2 (hidden
 * sizes 3 and 1), head bias. */
static void host_als_full(clt_module *m, const double *x, int64_t N, double *full)
{
    double *hw = param_of(m, "head.weight"), *hb = param_of(m, "head.bias");
    double head[64 * 5];
    host_linear(x, N, 6, hw, hb, 5, head);
    host_log_softmax(head, N, 5);
    const int64_t hsz[2] = {3, 1}, lo[2] = {3, 6}, osz[2] = {3, 4};
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < 3; k++)
            full[n * 10 + k] = head[n * 5 + k];
    for (int c = 0; c < 2; c++) {
        char p0[32], p1[32];
        snprintf(p0, sizeof p0, "tail.%d.0.weight", c);
        snprintf(p1, sizeof p1, "tail.%d.1.weight", c);
        double *w0 = param_of(m, p0), *w1 = param_of(m, p1), h[64 * 3], o[64 * 4];
        host_linear(x, N, 6, w0, NULL, hsz[c], h);
        host_linear(h, N, hsz[c], w1, NULL, osz[c], o);
        host_log_softmax(o, N, osz[c]);
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < osz[c]; k++)
                full[n * 10 + lo[c] + k] = o[n * osz[c] + k] + head[n * 5 + 3 + c];
        free(w0);
        free(w1);
    }
    free(hw);
    free(hb);
}

static clt_module *make_als(clt_device *dev)
{
    clt_module *m = NULL;
    CHECK(clt_adaptive_log_softmax_with_loss(dev, 6, 10, (int64_t[]){3, 6}, 2, 2.0, 1, NULL, &m));
    return m;
}

Test(nn3, adaptive_log_softmax_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = make_als(dev);
    cr_assert_str_eq(clt_module_name(m), "AdaptiveLogSoftmaxWithLoss");
    clt_named_tensor *st;
    size_t n;
    CHECK(clt_module_state(m, &st, &n));
    const char *names[] = {"head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight",
                           "tail.1.0.weight", "tail.1.1.weight"};
    const int64_t shapes[6][2] = {{5, 6}, {5, 0}, {3, 6}, {3, 3}, {1, 6}, {4, 1}};
    cr_assert_eq(n, 6);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(st[i].name, names[i]);
        assert_shape(st[i].tensor, i == 1 ? 1 : 2, shapes[i]);
    }
    clt_free(st);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    const int64_t N = 7;
    double *x = spread_doubles(N * 6, 50), full[7 * 10], out[7], loss = 0;
    for (int64_t i = 0; i < N * 6; i++)
        x[i] *= 2;
    double tv[7] = {0, 4, 9, 2, 6, 3, 8};
    host_als_full(m, x, N, full);
    for (int64_t r = 0; r < N; r++) {
        out[r] = full[r * 10 + (int64_t)tv[r]];
        loss -= out[r] / N;
    }
    clt_tensor *xt = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){N, 6}, x);
    clt_tensor *tt = tensor_of(dev, CLT_INT64, 1, &N, tv), *y = NULL, *l = NULL;
    CHECK(clt_adaptive_log_softmax_forward(m, xt, tt, &y, &l));
    assert_shape(y, 1, &N);
    assert_shape(l, 0, NULL);
    assert_tensor_close(y, out, (size_t)N, 1e-12, 1e-12, "output");
    assert_tensor_close(l, &loss, 1, 1e-12, 1e-12, "loss");
    clt_tensor *lp = NULL, *pr = NULL;
    CHECK(clt_adaptive_log_softmax_log_prob(m, xt, &lp));
    assert_shape(lp, 2, (int64_t[]){N, 10});
    assert_tensor_close(lp, full, (size_t)(N * 10), 1e-12, 1e-12, "log_prob");
    CHECK(clt_adaptive_log_softmax_predict(m, xt, &pr));
    cr_assert_eq(clt_tensor_dtype(pr), CLT_INT64);
    double best[7];
    for (int64_t r = 0; r < N; r++) {
        best[r] = 0;
        for (int64_t k = 1; k < 10; k++)
            if (full[r * 10 + k] > full[r * 10 + (int64_t)best[r]])
                best[r] = (double)k;
    }
    assert_tensor_close(pr, best, (size_t)N, 0, 0, "predict");
    /* unbatched: a 0-d output */
    clt_tensor *x1 = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){6}, x + 6);
    clt_tensor *t1 = tensor_of(dev, CLT_INT64, 0, NULL, &tv[1]), *y1 = NULL, *l1 = NULL;
    CHECK(clt_adaptive_log_softmax_forward(m, x1, t1, &y1, &l1));
    assert_shape(y1, 0, NULL);
    double want1 = full[1 * 10 + 4], wl1 = -want1;
    assert_tensor_close(y1, &want1, 1, 1e-12, 1e-12, "unbatched output");
    assert_tensor_close(l1, &wl1, 1, 1e-12, 1e-12, "unbatched loss");
    clt_tensor *ts[] = {y, l, lp, pr, x1, t1, y1, l1, xt, tt};
    for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
        clt_tensor_free(ts[i]);
    free(x);
    clt_module_free(m);
}

typedef struct { clt_module *m; clt_tensor *target; int log_prob; } als_gc;

static clt_status als_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const als_gc *c = ctx;
    if (c->log_prob)
        return clt_adaptive_log_softmax_log_prob(c->m, in[0], out);
    clt_tensor *y = NULL, *l = NULL;
    clt_status st = clt_adaptive_log_softmax_forward(c->m, in[0], c->target, &y, &l);
    if (st != CLT_OK)
        return st;
    /* both results in one: output * 1 + loss, broadcast */
    st = clt_add(y, l, out);
    clt_tensor_free(y);
    clt_tensor_free(l);
    return st;
}

Test(nn3, adaptive_log_softmax_gradcheck)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = make_als(dev);
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    double tv[5] = {7, 1, 4, 9, 3};
    int64_t N = 5;
    clt_tensor *tt = tensor_of(dev, CLT_INT64, 1, &N, tv);
    double *x = spread_doubles(5 * 6, 60);
    for (int lp = 0; lp < 2; lp++) {
        als_gc c = {m, tt, lp};
        gc_in in[1] = {{2, {5, 6}, x, 1}};
        gradcheck(dev, als_f, &c, 1, in);
    }
    /* a parameter's gradient: head.weight against finite differences of the loss */
    clt_tensor *xt = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){5, 6}, x), *y, *l, *g = NULL;
    clt_tensor *w = clt_module_param(
        clt_module_child(clt_module_child(clt_module_child(m, "tail"), "1"), "0"), "weight");
    cr_assert_not_null(w);
    CHECK(clt_zero_grad(w, 1)); /* the gradchecks above filled it */
    CHECK(clt_adaptive_log_softmax_forward(m, xt, tt, &y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(w, &g));
    double *an = read_as_f64(g), *wv = read_as_f64(w);
    int was = clt_set_grad_enabled(0);
    for (int k = 0; k < 6; k++) {
        double lv[2];
        for (int side = 0; side < 2; side++) {
            double saved = wv[k];
            wv[k] = saved + (side ? -1e-6 : 1e-6);
            CHECK(clt_tensor_write(w, wv, 6 * sizeof *wv));
            clt_tensor *y2, *l2;
            CHECK(clt_adaptive_log_softmax_forward(m, xt, tt, &y2, &l2));
            CHECK(clt_tensor_item(l2, &lv[side]));
            clt_tensor_free(y2);
            clt_tensor_free(l2);
            wv[k] = saved;
        }
        CHECK(clt_tensor_write(w, wv, 6 * sizeof *wv));
        double num = (lv[0] - lv[1]) / 2e-6;
        cr_assert(close_enough(an[k], num, 1e-5, 1e-8), "tail.1.0.weight[%d]: %g vs %g", k,
                  an[k], num);
    }
    clt_set_grad_enabled(was);
    free(an);
    free(wv);
    free(x);
    clt_tensor_free(g);
    clt_tensor_free(y);
    clt_tensor_free(l);
    clt_tensor_free(xt);
    clt_tensor_free(tt);
    clt_module_free(m);
}

Test(nn3, adaptive_log_softmax_errors)
{
    clt_device *dev = get_device("cpu");
    clt_module *m = (clt_module *)1;
    assert_error(clt_adaptive_log_softmax_with_loss(dev, 6, 10, (int64_t[]){6, 3}, 2, 4.0, 0,
                                                    NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "cutoffs should be");
    cr_assert_null(m);
    assert_error(clt_adaptive_log_softmax_with_loss(dev, 6, 10, (int64_t[]){10}, 1, 4.0, 0,
                                                    NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "n_classes-1");
    assert_error(clt_adaptive_log_softmax_with_loss(dev, 3, 10, (int64_t[]){5}, 1, 4.0, 0,
                                                    NULL, &m),
                 CLT_ERR_INVALID_ARGUMENT, "hidden size");
    m = make_als(dev);
    double xv[12] = {0}, tv[2] = {1, 10};
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, 6}, xv);
    clt_tensor *t = tensor_of(dev, CLT_INT64, 1, (int64_t[]){2}, tv);
    clt_tensor *t32 = tensor_of(dev, CLT_INT32, 1, (int64_t[]){2}, xv);
    clt_tensor *t1 = tensor_of(dev, CLT_INT64, 1, (int64_t[]){1}, xv);
    clt_tensor *y = (clt_tensor *)1, *l = (clt_tensor *)1;
    assert_error(clt_adaptive_log_softmax_forward(m, x, t, &y, &l), CLT_ERR_INDEX_OUT_OF_RANGE,
                 "Target values should be in [0, 9]");
    cr_assert_null(y);
    cr_assert_null(l);
    names_only("clt_adaptive_log_softmax_forward");
    assert_error(clt_adaptive_log_softmax_forward(m, x, t32, &y, &l), CLT_ERR_DTYPE_MISMATCH,
                 "int64");
    assert_error(clt_adaptive_log_softmax_forward(m, x, t1, &y, &l), CLT_ERR_SHAPE_MISMATCH,
                 "same size in the batch");
    assert_error(clt_adaptive_log_softmax_log_prob(m, t1, &y), CLT_ERR_SHAPE_MISMATCH, "2D");
    assert_error(clt_module_forward(m, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "clt_adaptive_log_softmax_forward");
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 6, 2, 1, NULL, &lin));
    assert_error(clt_adaptive_log_softmax_predict(lin, x, &y), CLT_ERR_INVALID_ARGUMENT,
                 "Linear");
    clt_module_free(lin);
    clt_tensor *ts[] = {x, t, t32, t1};
    for (size_t i = 0; i < 4; i++)
        clt_tensor_free(ts[i]);
    clt_module_free(m);
}

/* A lazy model of Conv2d (groups 2), BatchNorm2d, ConvTranspose2d,
 * Flatten and Linear, its layers drawn from gen. */
static clt_module *lazy_model(clt_device *dev, clt_generator *gen)
{
    clt_module *mods[5] = {NULL};
    clt_conv2d_opts co = {{1, 1}, {1, 1}, {1, 1}, 2};
    CHECK(clt_lazy_conv2d(dev, 4, 3, 3, &co, 1, gen, &mods[0]));
    CHECK(clt_lazy_batch_norm2d(dev, 1e-5, 0.1, 1, 1, &mods[1]));
    CHECK(clt_lazy_conv_transpose2d(dev, 3, 2, 2, NULL, 0, gen, &mods[2]));
    CHECK(clt_flatten_layer(1, -1, &mods[3]));
    CHECK(clt_lazy_linear(dev, 5, 1, gen, &mods[4]));
    clt_module *seq = NULL;
    CHECK(clt_sequential(mods, 5, &seq));
    return seq;
}

/* torch's _lazy_load_hook: a state_dict (safetensors or torch.save) loads
 * into a fresh lazy model without a forward, each layer taking its input
 * size from the checkpoint's shapes; the values and outputs are the saved
 * model's, and the layers' generators are not drawn from. */
Test(nn3, load_state_dict_materializes_lazy_layers)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g1 = seeded(5), *g2 = seeded(99);
    clt_module *trained = lazy_model(dev, g1);
    clt_tensor *x = input(dev, 4, (int64_t[]){2, 6, 4, 4}, 31), *y = NULL;
    CHECK(clt_module_forward(trained, x, &y)); /* also moves the running statistics */
    clt_tensor_free(y);
    const char *fmts[2] = {"safetensors", "torch"};
    for (int f = 0; f < 2; f++) {
        char path[] = "/tmp/cltensor-lazy-XXXXXX";
        int fd = mkstemp(path);
        cr_assert(fd >= 0);
        close(fd);
        CHECK(f ? clt_module_save_torch(trained, path) : clt_module_save(trained, path));
        clt_module *fresh = lazy_model(dev, g2);
        uint64_t drawn = clt_generator_offset(g2);
        cr_assert_eq(clt_module_has_uninitialized_params(fresh), 1);
        CHECK(f ? clt_module_load_torch(fresh, path, 1) : clt_module_load(fresh, path));
        cr_assert_eq(clt_generator_offset(g2), drawn, "%s: the load drew from gen", fmts[f]);
        cr_assert_eq(clt_module_has_uninitialized_params(fresh), 0, "%s", fmts[f]);
        cr_assert_str_eq(clt_module_name(clt_module_child(fresh, "0")), "Conv2d");
        cr_assert_str_eq(clt_module_name(clt_module_child(fresh, "4")), "Linear");
        assert_shape(clt_module_param(clt_module_child(fresh, "0"), "weight"), 4,
                     (int64_t[]){4, 3, 3, 3});
        assert_shape(clt_module_param(clt_module_child(fresh, "2"), "weight"), 4,
                     (int64_t[]){4, 3, 2, 2});
        assert_shape(clt_module_param(clt_module_child(fresh, "4"), "weight"), 2,
                     (int64_t[]){5, 3 * 5 * 5});
        assert_same_state(fresh, trained);
        clt_module_train(fresh, 0);
        clt_module_train(trained, 0);
        clt_tensor *x2 = input(dev, 4, (int64_t[]){3, 6, 4, 4}, 32);
        assert_same_forward(fresh, trained, x2);
        clt_module_train(trained, 1);
        clt_tensor_free(x2);
        clt_module_free(fresh);
        unlink(path);
    }
    clt_tensor_free(x);
    clt_module_free(trained);
    clt_generator_free(g1);
    clt_generator_free(g2);
}

/* A load that fails after the layers took their sizes leaves them lazy;
 * a lazy layer whose key the file lacks stays lazy; a model made float64
 * before the load gets float64 tensors. */
Test(nn3, lazy_load_failures_leave_the_model_lazy)
{
    clt_device *dev = get_device("cpu");
    clt_module *a = NULL, *b = NULL, *mods[2] = {NULL, NULL}, *seq = NULL;
    CHECK(clt_lazy_linear(dev, 3, 1, NULL, &a));
    clt_tensor *x = input(dev, 2, (int64_t[]){2, 4}, 41), *y = NULL;
    CHECK(clt_module_forward(a, x, &y));
    clt_tensor_free(y);
    char path[] = "/tmp/cltensor-lazy-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    CHECK(clt_module_save_torch(a, path));
    /* out_features 2 against the file's [3, 4]: the plain layer's shapes differ */
    CHECK(clt_lazy_linear(dev, 2, 1, NULL, &b));
    assert_error(clt_module_load_torch(b, path, 1), CLT_ERR_INVALID_ARGUMENT, "size mismatch");
    cr_assert_eq(clt_module_has_uninitialized_params(b), 1);
    cr_assert_str_eq(clt_module_name(b), "LazyLinear");
    assert_error(clt_module_load(b, path), CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert_eq(clt_module_has_uninitialized_params(b), 1);
    clt_module_free(b);
    /* the file's "weight" is not "1.weight": the second layer stays lazy */
    CHECK(clt_lazy_linear(dev, 3, 1, NULL, &mods[0]));
    CHECK(clt_lazy_linear(dev, 3, 1, NULL, &mods[1]));
    CHECK(clt_sequential(mods, 2, &seq));
    assert_error(clt_module_load_torch(seq, path, 0), CLT_ERR_INVALID_ARGUMENT, "LazyLinear");
    cr_assert_str_eq(clt_module_name(clt_module_child(seq, "0")), "LazyLinear");
    clt_module_free(seq);
    /* float64 before the load: the tensors are made float64 and take the values */
    CHECK(clt_lazy_linear(dev, 3, 1, NULL, &b));
    CHECK(clt_module_to_dtype(b, CLT_FLOAT64));
    CHECK(clt_module_load_torch(b, path, 1));
    clt_tensor *w = clt_module_param(b, "weight");
    cr_assert_eq(clt_tensor_dtype(w), CLT_FLOAT64);
    double *want = read_as_f64(clt_module_param(a, "weight"));
    assert_tensor_close(w, want, 12, 0, 0, "float64 weight");
    free(want);
    clt_module_free(b);
    /* a norm with neither affine nor running statistics has nothing to shape */
    CHECK(clt_lazy_instance_norm1d(dev, 1e-5, 0.1, 0, 0, &b));
    cr_assert_eq(clt_module_has_uninitialized_params(b), 0);
    clt_named_tensor *st = NULL;
    size_t n = 1;
    CHECK(clt_module_state(b, &st, &n));
    cr_assert_eq(n, 0);
    clt_free(st);
    cr_assert_str_eq(clt_module_name(b), "LazyInstanceNorm1d");
    clt_module_free(b);
    unlink(path);
    clt_tensor_free(x);
    clt_module_free(a);
}
