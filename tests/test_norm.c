/* test_norm.c: clt_vector_norm(_dim), clt_normalize and
 * clt_cosine_similarity (reduce.h) against host references computed in
 * double: every ord and dim of a 3-D tensor, keepdim, strided views,
 * float32 and float64, PyTorch 1.13's edge values (0, inf, NaN, empty;
 * values from torch), gradients against finite differences away from the
 * kinks and torch's values at them, and bad input. */
#include <math.h>
#include <stdint.h>

#include "gradcheck.h"

/* The norm of n values x[k * stride] in double, by the definition. */
static double ref_norm(const double *x, int64_t n, int64_t stride, double ord)
{
    double acc = 0;
    if (isinf(ord))
        acc = ord > 0 ? 0 : INFINITY;
    for (int64_t k = 0; k < n; k++) {
        double v = fabs(x[k * stride]);
        if (isnan(v) && ord != 0)
            return NAN;
        if (ord == 0)
            acc += x[k * stride] != 0;
        else if (isinf(ord))
            acc = ord > 0 ? fmax(acc, v) : fmin(acc, v);
        else
            acc += pow(v, ord);
    }
    if (ord == 0 || isinf(ord))
        return acc;
    return pow(acc, 1 / ord);
}

/* Values in [-5, 5] with some exact zeros (every 7th), as doubles that
 * float32 holds exactly. */
static double *data(size_t n, unsigned seed)
{
    double *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (i % 7 == 3) ? 0.0 : ((double)(s >> 8) / (1 << 24) * 10 - 5);
        h[i] = (double)(float)h[i];
    }
    return h;
}

static const double ords[] = {2, 1, INFINITY, -INFINITY, 0, 3, 0.5, -1, -2.5, 1.5};
#define NORDS (sizeof ords / sizeof ords[0])

static double tol(clt_dtype dt)
{
    return dt == CLT_FLOAT32 ? 3e-5 : 1e-12;
}

/* Every ord, the all-elements form and each dim with and without keepdim,
 * of the [3, 4, 5] tensor a holding h (a may be a view). */
static void check_all_dims(const clt_tensor *a, const double *h, clt_dtype dt)
{
    const int64_t shape[3] = {3, 4, 5}, strides[3] = {20, 5, 1};
    for (size_t o = 0; o < NORDS; o++) {
        double ord = ords[o];
        clt_tensor *r = NULL;
        CHECK(clt_vector_norm(a, ord, &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        cr_assert_eq(clt_tensor_dtype(r), dt);
        double *v = read_as_f64(r);
        double want = ref_norm(h, 60, 1, ord);
        cr_assert(close_enough(v[0], want, tol(dt), 0), "ord %g: %.17g, want %.17g", ord, v[0],
                  want);
        free(v);
        clt_tensor_free(r);
        for (int dim = -3; dim < 3; dim++) {
            int d = dim < 0 ? dim + 3 : dim;
            for (int keep = 0; keep < 2; keep++) {
                CHECK(clt_vector_norm_dim(a, ord, dim, keep, &r));
                int64_t os[3];
                int on = 0;
                for (int i = 0; i < 3; i++)
                    if (i != d)
                        os[on++] = shape[i];
                    else if (keep)
                        os[on++] = 1;
                assert_shape(r, on, os);
                v = read_as_f64(r);
                int64_t k = 0;
                for (int64_t i0 = 0; i0 < (d == 0 ? 1 : 3); i0++)
                    for (int64_t i1 = 0; i1 < (d == 1 ? 1 : 4); i1++)
                        for (int64_t i2 = 0; i2 < (d == 2 ? 1 : 5); i2++, k++) {
                            int64_t off = i0 * 20 + i1 * 5 + i2;
                            want = ref_norm(h + off, shape[d], strides[d], ord);
                            cr_assert(close_enough(v[k], want, tol(dt), 0),
                                      "ord %g dim %d element %lld: %.17g, want %.17g", ord,
                                      dim, (long long)k, v[k], want);
                        }
                free(v);
                clt_tensor_free(r);
            }
        }
    }
}

Test(vector_norm, every_ord_and_dim)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[3] = {3, 4, 5};
    double *h = data(60, 1);
    const clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    for (int t = 0; t < 2; t++) {
        clt_tensor *a = tensor_of(dev, dts[t], 3, shape, h);
        check_all_dims(a, h, dts[t]);
        clt_tensor_free(a);
    }
    free(h);
}

/* A transposed view: the [3, 4, 5] values read from a [5, 4, 3] tensor. */
Test(vector_norm, strided_view)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[3] = {5, 4, 3};
    double *h = data(60, 2), *hv = malloc(60 * sizeof *hv);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++)
                hv[i * 20 + j * 5 + k] = h[k * 12 + j * 3 + i];
    clt_tensor *base = tensor_of(dev, CLT_FLOAT64, 3, shape, h), *a = NULL;
    CHECK(clt_transpose(base, 0, 2, &a));
    check_all_dims(a, hv, CLT_FLOAT64);
    clt_tensor_free(a);
    clt_tensor_free(base);
    free(h);
    free(hv);
}

/* One value of clt_vector_norm of the n values v. */
static double norm_of(clt_device *dev, clt_dtype dt, int64_t n, const double *v, double ord)
{
    clt_tensor *a = tensor_of(dev, dt, 1, &n, v), *r = NULL;
    CHECK(clt_vector_norm(a, ord, &r));
    double *h = read_as_f64(r), got = h[0];
    free(h);
    clt_tensor_free(r);
    clt_tensor_free(a);
    return got;
}

/* Values torch.linalg.vector_norm gives (PyTorch 1.13, CPU). */
Test(vector_norm, torch_edge_values)
{
    clt_device *dev = get_device("cpu");
    const double x[3] = {3, -4, 0};
    const double want[9] = {5, 7, 4, 0, 2, 4.497941493988037, 13.928203582763672, 0, 0};
    const double ordx[9] = {2, 1, INFINITY, -INFINITY, 0, 3, 0.5, -1, -2};
    for (int k = 0; k < 9; k++)
        cr_assert(close_enough(norm_of(dev, CLT_FLOAT32, 3, x, ordx[k]), want[k], 1e-6, 0),
                  "ord %g", ordx[k]);
    const double xn[3] = {1, NAN, INFINITY};
    cr_assert(isnan(norm_of(dev, CLT_FLOAT32, 3, xn, INFINITY)));
    cr_assert(isnan(norm_of(dev, CLT_FLOAT32, 3, xn, -INFINITY)));
    cr_assert(isnan(norm_of(dev, CLT_FLOAT64, 3, xn, 2)));
    cr_assert_eq(norm_of(dev, CLT_FLOAT32, 2, xn, 0), 2); /* NaN counts as non-zero */
    const double xi[2] = {1, INFINITY};
    const double oi[7] = {2, 1, 0, -1, 3, 0.5, -INFINITY}, wi[7] = {INFINITY, INFINITY, 2, 1,
                                                                  INFINITY, INFINITY, 1};
    for (int k = 0; k < 7; k++)
        cr_assert_eq(norm_of(dev, CLT_FLOAT64, 2, xi, oi[k]), wi[k], "ord %g", oi[k]);
    /* No scaling, as PyTorch 1.13: the squares overflow and underflow. */
    const double big[2] = {1e30, 1e30}, tiny[2] = {1e-30, 1e-30};
    cr_assert(isinf(norm_of(dev, CLT_FLOAT32, 2, big, 2)));
    cr_assert_eq(norm_of(dev, CLT_FLOAT32, 2, tiny, 2), 0);
    cr_assert(close_enough(norm_of(dev, CLT_FLOAT64, 2, big, 2), sqrt(2) * 1e30, 1e-15, 0));
    const double d[2] = {3, 4};
    cr_assert(close_enough(norm_of(dev, CLT_FLOAT64, 2, d, 2.5), 4.688140842343588, 1e-14, 0));
}

Test(vector_norm, empty_and_zero_dim)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[2] = {0, 3};
    clt_tensor *e = NULL, *r = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, shape, &e));
    const double ok[4] = {2, 1, 0, 3};
    for (int k = 0; k < 4; k++) {
        CHECK(clt_vector_norm(e, ok[k], &r));
        double *v = read_as_f64(r);
        cr_assert_eq(v[0], 0);
        free(v);
        clt_tensor_free(r);
        CHECK(clt_vector_norm_dim(e, ok[k], 0, 0, &r));
        const int64_t three = 3;
        assert_shape(r, 1, &three);
        v = read_as_f64(r);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(v[i], 0);
        free(v);
        clt_tensor_free(r);
    }
    const double bad[4] = {INFINITY, -INFINITY, -1, -0.5};
    for (int k = 0; k < 4; k++) {
        assert_error(clt_vector_norm(e, bad[k], &r), CLT_ERR_INVALID_ARGUMENT, "empty tensor");
        cr_assert_null(r);
        assert_error(clt_vector_norm_dim(e, bad[k], 0, 1, &r), CLT_ERR_INVALID_ARGUMENT,
                     "along dimension 0");
        cr_assert_null(r);
        names_only("clt_vector_norm_dim");
        /* Reducing the non-empty dim: an empty result, no error. */
        CHECK(clt_vector_norm_dim(e, bad[k], 1, 0, &r));
        cr_assert_eq(clt_tensor_numel(r), 0);
        clt_tensor_free(r);
    }
    clt_tensor_free(e);
    /* A 0-dim tensor: dim 0 and -1 are its own. */
    double m3 = -3;
    clt_tensor *s = tensor_of(dev, CLT_FLOAT64, 0, NULL, &m3);
    for (int dim = -1; dim <= 0; dim++) {
        CHECK(clt_vector_norm_dim(s, 2, dim, 1, &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        double *v = read_as_f64(r);
        cr_assert_eq(v[0], 3);
        free(v);
        clt_tensor_free(r);
    }
    assert_error(clt_vector_norm_dim(s, 2, 1, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    clt_tensor_free(s);
}

Test(vector_norm, errors)
{
    clt_device *dev = get_device("cpu");
    const int64_t n = 2;
    const double v[2] = {1, 2};
    clt_tensor *r = (clt_tensor *)1;
    const clt_dtype bad[3] = {CLT_INT64, CLT_INT32, CLT_BOOL};
    for (int k = 0; k < 3; k++) {
        clt_tensor *a = tensor_of(dev, bad[k], 1, &n, v);
        assert_error(clt_vector_norm(a, 2, &r), CLT_ERR_DTYPE_MISMATCH, "floating point");
        cr_assert_null(r);
        names_only("clt_vector_norm");
        r = (clt_tensor *)1;
        assert_error(clt_normalize(a, 2, 0, 1e-12, &r), CLT_ERR_DTYPE_MISMATCH,
                     "floating point");
        cr_assert_null(r);
        names_only("clt_normalize");
        clt_tensor_free(a);
    }
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, &n, v);
    assert_error(clt_vector_norm(a, NAN, &r), CLT_ERR_INVALID_ARGUMENT, "NaN");
    assert_error(clt_vector_norm_dim(a, 2, 1, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    cr_assert_null(r);
    assert_error(clt_vector_norm_dim(a, 2, -2, 0, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    assert_error(clt_normalize(a, 2, 1, 1e-12, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    names_only("clt_normalize");
    assert_error(clt_vector_norm(NULL, 2, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_vector_norm(a, 2, NULL), CLT_ERR_NULL_ARGUMENT, NULL);
    assert_error(clt_cosine_similarity(a, NULL, 0, 1e-8, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    /* Shapes that do not broadcast, and two integer inputs. */
    const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    clt_tensor *b = NULL, *c = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, s23, &b));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, s32, &c));
    r = (clt_tensor *)1;
    assert_error(clt_cosine_similarity(b, c, 1, 1e-8, &r), CLT_ERR_SHAPE_MISMATCH, NULL);
    cr_assert_null(r);
    names_only("clt_cosine_similarity");
    clt_tensor *i1 = tensor_of(dev, CLT_INT64, 1, &n, v);
    assert_error(clt_cosine_similarity(i1, i1, 0, 1e-8, &r), CLT_ERR_DTYPE_MISMATCH,
                 "floating point");
    names_only("clt_cosine_similarity");
    assert_error(clt_cosine_similarity(b, b, 2, 1e-8, &r), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    names_only("clt_cosine_similarity");
    clt_tensor_free(i1);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

/* ---- gradients ---------------------------------------------------------------------- */

typedef struct norm_ctx {
    double ord;
    int dim; /* 99: every element */
    int keepdim;
} norm_ctx;

static clt_status f_norm(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const norm_ctx *c = ctx;
    if (c->dim == 99)
        return clt_vector_norm(in[0], c->ord, out);
    return clt_vector_norm_dim(in[0], c->ord, c->dim, c->keepdim, out);
}

Test(gradients, vector_norm_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    /* Distinct magnitudes, no zeros: away from every kink. */
    double x[12];
    for (int k = 0; k < 12; k++)
        x[k] = (0.3 + 0.37 * k) * ((k % 3) ? 1 : -1);
    gc_in in = {3, {2, 3, 2}, x, 1};
    const double og[8] = {2, 1, INFINITY, -INFINITY, 3, 0.5, -1, 1.5};
    const int dims[4] = {99, 0, -1, 1};
    for (int o = 0; o < 8; o++)
        for (int d = 0; d < 4; d++) {
            norm_ctx c = {og[o], dims[d], d == 2};
            gradcheck(dev, f_norm, &c, 1, &in);
        }
}

/* autograd's gradient of L = sum(vector_norm(x, ord, dim) * 1) for n
 * float64 values; NULL when x got none. */
static double *grad_of(clt_device *dev, int nd, const int64_t *shape, const double *x, double ord,
                       int dim)
{
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, nd, shape, x), *r = NULL, *l = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(dim == 99 ? clt_vector_norm(a, ord, &r) : clt_vector_norm_dim(a, ord, dim, 0, &r));
    CHECK(clt_sum(r, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(a, &g));
    double *h = g ? read_as_f64(g) : NULL;
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(r);
    clt_tensor_free(a);
    return h;
}

static void assert_grad(double *got, const double *want, int n, const char *what)
{
    cr_assert_not_null(got, "%s: no gradient", what);
    for (int k = 0; k < n; k++)
        cr_assert(close_enough(got[k], want[k], 1e-12, 1e-15), "%s element %d: %.17g, want %.17g",
                  what, k, got[k], want[k]);
    free(got);
}

/* torch's gradients (PyTorch 1.13) at the kinks: a zero norm, ties,
 * zeros, NaN and inf. */
Test(gradients, torch_values_at_kinks)
{
    clt_device *dev = get_device("cpu");
    const int64_t n3 = 3, n4 = 4, s23[2] = {2, 3};
    const double z[3] = {0, 0, 0}, zero3[3] = {0, 0, 0};
    const double zo[8] = {2, 1, INFINITY, -INFINITY, 3, 0.5, -1, 1.5};
    for (int o = 0; o < 8; o++)
        assert_grad(grad_of(dev, 1, &n3, z, zo[o], 99), zero3, 3, "zero vector");
    const double t[4] = {2, -2, 1, 0};
    const double w2[4] = {2. / 3, -2. / 3, 1. / 3, 0}, w1[4] = {1, -1, 1, 0},
                 winf[4] = {0.5, -0.5, 0, 0}, w0[4] = {0, 0, 0, 0};
    assert_grad(grad_of(dev, 1, &n4, t, 2, 99), w2, 4, "ord 2");
    assert_grad(grad_of(dev, 1, &n4, t, 1, 99), w1, 4, "ord 1");
    assert_grad(grad_of(dev, 1, &n4, t, INFINITY, 99), winf, 4, "ord inf ties");
    assert_grad(grad_of(dev, 1, &n4, t, -INFINITY, 99), w0, 4, "ord -inf at 0");
    assert_grad(grad_of(dev, 1, &n4, t, -1, 99), w0, 4, "ord -1 with a zero");
    /* ord 3: x |x| / norm^2; ord 0.5: sign(x) |x|^-0.5 norm^0.5, 0 at x = 0. */
    double n3v = cbrt(17), w3[4], nh = pow(2 * sqrt(2) + 1, 2), wh[4];
    for (int k = 0; k < 4; k++) {
        w3[k] = t[k] * fabs(t[k]) / (n3v * n3v);
        wh[k] = t[k] == 0 ? 0 : copysign(pow(fabs(t[k]), -0.5), t[k]) * sqrt(nh);
    }
    assert_grad(grad_of(dev, 1, &n4, t, 3, 99), w3, 4, "ord 3");
    assert_grad(grad_of(dev, 1, &n4, t, 0.5, 99), wh, 4, "ord 0.5");
    /* ord 0 gives no gradient, as PyTorch's None. */
    cr_assert_null(grad_of(dev, 1, &n4, t, 0, 99));
    /* NaN: ord inf gives 0 everywhere (torch.sign(NaN) is 0); ord 1 the
     * sign, 0 at the NaN; ord 2 NaN everywhere. */
    const double xn[3] = {1, NAN, 2}, wn1[3] = {1, 0, 1};
    assert_grad(grad_of(dev, 1, &n3, xn, INFINITY, 99), zero3, 3, "inf NaN");
    assert_grad(grad_of(dev, 1, &n3, xn, 1, 99), wn1, 3, "1 NaN");
    double *g2 = grad_of(dev, 1, &n3, xn, 2, 99);
    for (int k = 0; k < 3; k++)
        cr_assert(isnan(g2[k]));
    free(g2);
    /* inf: ord 2 gives 0 at the finite elements, NaN at the inf; ord -1
     * |x|^-2 norm^2. */
    const double xi[3] = {1, INFINITY, 2};
    double *gi = grad_of(dev, 1, &n3, xi, 2, 99);
    cr_assert(gi[0] == 0 && isnan(gi[1]) && gi[2] == 0);
    free(gi);
    const double wm1[3] = {4. / 9, 0, 1. / 9};
    assert_grad(grad_of(dev, 1, &n3, xi, -1, 99), wm1, 3, "-1 inf");
    /* Along dim 1: ties split per row; a zero row gets 0. */
    const double rows[6] = {1, -3, 3, 0, 0, 0}, wr[6] = {0, -0.5, 0.5, 0, 0, 0},
                 wr2[6] = {1 / sqrt(19), -3 / sqrt(19), 3 / sqrt(19), 0, 0, 0};
    assert_grad(grad_of(dev, 2, s23, rows, INFINITY, 1), wr, 6, "inf rows");
    assert_grad(grad_of(dev, 2, s23, rows, 2, 1), wr2, 6, "2 rows");
}

/* ---- normalize and cosine_similarity ------------------------------------------------- */

Test(normalize, values_dims_and_eps)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[3] = {3, 4, 5};
    double *h = data(60, 3);
    for (int i = 0; i < 5; i++)
        h[20 + i] = 0; /* a zero row along dim 2: 0 / eps */
    const clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};
    const double ps[4] = {2, 1, INFINITY, 3};
    for (int t = 0; t < 2; t++) {
        clt_tensor *a = tensor_of(dev, dts[t], 3, shape, h);
        for (int p = 0; p < 4; p++)
            for (int d = 0; d < 3; d++) {
                int64_t stride = d == 0 ? 20 : d == 1 ? 5 : 1;
                clt_tensor *r = NULL;
                CHECK(clt_normalize(a, ps[p], d - 3 * (p % 2), 1e-12, &r));
                assert_shape(r, 3, shape);
                cr_assert_eq(clt_tensor_dtype(r), dts[t]);
                double *v = read_as_f64(r);
                for (int64_t k = 0; k < 60; k++) {
                    int64_t i[3] = {k / 20, k / 5 % 4, k % 5};
                    int64_t base = k - i[d] * stride;
                    double nrm = fmax(ref_norm(h + base, shape[d], stride, ps[p]), 1e-12);
                    cr_assert(close_enough(v[k], h[k] / nrm, tol(dts[t]), 1e-300),
                              "p %g dim %d element %lld: %.17g, want %.17g", ps[p], d,
                              (long long)k, v[k], h[k] / nrm);
                }
                free(v);
                clt_tensor_free(r);
            }
        clt_tensor_free(a);
    }
    free(h);
    /* torch: F.normalize([[3, 4], [0, 0]], dim=1) */
    const int64_t s22[2] = {2, 2};
    const double x[4] = {3, 4, 0, 0}, want[4] = {0.6, 0.8, 0, 0};
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 2, s22, x), *r = NULL;
    CHECK(clt_normalize(a, 2, 1, 1e-12, &r));
    double *v = read_as_f64(r);
    ASSERT_ALLCLOSE_F32(v, want, 4, 1e-7, 0);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

typedef struct dim_ctx {
    double p;
    int dim;
    double eps;
} dim_ctx;

static clt_status f_normalize(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const dim_ctx *c = ctx;
    return clt_normalize(in[0], c->p, c->dim, c->eps, out);
}

static clt_status f_cosine(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const dim_ctx *c = ctx;
    return clt_cosine_similarity(in[0], in[1], c->dim, c->eps, out);
}

Test(gradients, normalize_and_cosine_similarity)
{
    clt_device *dev = get_device("cpu");
    double x[12], y[4];
    for (int k = 0; k < 12; k++)
        x[k] = (0.3 + 0.37 * k) * ((k % 3) ? 1 : -1);
    for (int k = 0; k < 4; k++)
        y[k] = 0.5 - 0.45 * k;
    gc_in in = {2, {3, 4}, x, 1};
    const double ps[3] = {2, 1, 3};
    for (int p = 0; p < 3; p++)
        for (int d = 0; d < 2; d++) {
            dim_ctx c = {ps[p], d, 1e-12};
            gradcheck(dev, f_normalize, &c, 1, &in);
        }
    /* Broadcast: [3, 4] with [4]. */
    gc_in two[2] = {{2, {3, 4}, x, 1}, {1, {4}, y, 1}};
    dim_ctx c = {2, 1, 1e-8};
    gradcheck(dev, f_cosine, &c, 2, two);
    dim_ctx c0 = {2, 0, 1e-8};
    gc_in cols[2] = {{2, {3, 4}, x, 1}, {2, {3, 1}, y, 1}};
    gradcheck(dev, f_cosine, &c0, 2, cols);
}

/* The reference: sum over dim of x1 / max(|x1|, eps) * x2 / max(|x2|, eps),
 * for x1 [3, 1, 4] and x2 [2, 4] broadcast to [3, 2, 4], along the last dim. */
Test(cosine_similarity, broadcast_values_and_dtypes)
{
    clt_device *dev = get_device("cpu");
    const int64_t s1[3] = {3, 1, 4}, s2[2] = {2, 4}, so[2] = {3, 2};
    double *h1 = data(12, 4), *h2 = data(8, 5);
    for (int k = 0; k < 4; k++)
        h2[4 + k] = 0; /* a zero vector: 0 */
    const clt_dtype d1[3] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT64},
                    d2[3] = {CLT_FLOAT32, CLT_FLOAT32, CLT_FLOAT32},
                    dw[3] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT32};
    for (int t = 0; t < 3; t++) {
        double *g1 = malloc(12 * sizeof *g1);
        for (int k = 0; k < 12; k++)
            g1[k] = d1[t] == CLT_INT64 ? trunc(h1[k]) : h1[k];
        clt_tensor *a = tensor_of(dev, d1[t], 3, s1, g1), *b = tensor_of(dev, d2[t], 2, s2, h2), *r = NULL;
        CHECK(clt_cosine_similarity(a, b, -1, 1e-8, &r));
        assert_shape(r, 2, so);
        cr_assert_eq(clt_tensor_dtype(r), dw[t]);
        double *v = read_as_f64(r);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                double n1 = fmax(ref_norm(g1 + 4 * i, 4, 1, 2), 1e-8);
                double n2 = fmax(ref_norm(h2 + 4 * j, 4, 1, 2), 1e-8), want = 0;
                for (int k = 0; k < 4; k++)
                    want += g1[4 * i + k] / n1 * (h2[4 * j + k] / n2);
                cr_assert(close_enough(v[i * 2 + j], want, 1e-5, 1e-6),
                          "dtypes %d [%d, %d]: %.17g, want %.17g", t, i, j, v[i * 2 + j], want);
            }
        free(v);
        free(g1);
        clt_tensor_free(r);
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
    free(h1);
    free(h2);
    /* torch: overflowing norms give 0; tiny ones are clamped to eps. */
    const int64_t n = 2;
    const double big[2] = {1e30, 1e30}, tiny[2] = {1e-20, 1e-20};
    clt_tensor *a = tensor_of(dev, CLT_FLOAT32, 1, &n, big), *r = NULL;
    CHECK(clt_cosine_similarity(a, a, 0, 1e-8, &r));
    cr_assert_eq(clt_tensor_ndim(r), 0);
    double *v = read_as_f64(r);
    cr_assert_eq(v[0], 0);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(a);
    a = tensor_of(dev, CLT_FLOAT32, 1, &n, tiny);
    CHECK(clt_cosine_similarity(a, a, 0, 1e-8, &r));
    v = read_as_f64(r);
    cr_assert(close_enough(v[0], 2e-24, 1e-5, 0), "%g", v[0]);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(a);
    /* Empty: [0, 3] along 1 gives [0]; [2, 0] along 1 gives zeros. */
    const int64_t s03[2] = {0, 3}, s20[2] = {2, 0};
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, s03, &a));
    CHECK(clt_cosine_similarity(a, a, 1, 1e-8, &r));
    cr_assert_eq(clt_tensor_numel(r), 0);
    clt_tensor_free(r);
    clt_tensor_free(a);
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, s20, &a));
    CHECK(clt_cosine_similarity(a, a, 1, 1e-8, &r));
    v = read_as_f64(r);
    cr_assert(v[0] == 0 && v[1] == 0);
    free(v);
    clt_tensor_free(r);
    clt_tensor_free(a);
}

/* Norms below eps: normalize's clamp stops the gradient through the norm
 * (clamp_min's), cosine_similarity's does not (PyTorch 1.13 clamps without
 * grad and its norm formula then reads the clamped norm): the reference is
 * the derivative of sum(x y) / (c1 c2) with dc1/dx = x / c1, c1 = c2 =
 * eps (torch gives [1.168, 0.464, 0.784]). */
Test(gradients, eps_clamps)
{
    clt_device *dev = get_device("cpu");
    const int64_t n = 3;
    const double x[3] = {0.1, -0.2, 0.05}, y[3] = {0.3, 0.1, 0.2}, eps = 0.5;
    clt_tensor *a = tensor_of(dev, CLT_FLOAT64, 1, &n, x), *b = tensor_of(dev, CLT_FLOAT64, 1, &n, y);
    clt_tensor *r = NULL, *l = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(clt_cosine_similarity(a, b, 0, eps, &r));
    CHECK(clt_backward(r, NULL, 0));
    CHECK(clt_grad(a, &g));
    double *v = read_as_f64(g);
    double dot = 0, n1 = 0;
    for (int k = 0; k < 3; k++) {
        dot += x[k] * y[k];
        n1 += x[k] * x[k];
    }
    n1 = sqrt(n1);
    for (int k = 0; k < 3; k++) {
        double want = y[k] / (eps * eps) - dot / (eps * eps * eps) * x[k] / fmax(n1, eps);
        cr_assert(close_enough(v[k], want, 1e-12, 1e-15), "cosine %d: %.17g, want %.17g", k,
                  v[k], want);
    }
    free(v);
    clt_tensor_free(g);
    clt_tensor_free(r);
    CHECK(clt_zero_grad(a, 1));
    CHECK(clt_normalize(a, 2, 0, eps, &r));
    CHECK(clt_sum(r, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(a, &g));
    v = read_as_f64(g);
    for (int k = 0; k < 3; k++)
        cr_assert(close_enough(v[k], 1 / eps, 1e-15, 0), "normalize %d: %.17g", k, v[k]);
    free(v);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(r);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* An empty input gives an empty result for every p, as F.normalize. */
Test(normalize, empty_for_every_p)
{
    clt_device *dev = get_device("cpu");
    const int64_t shapes[2][2] = {{0, 3}, {3, 0}};
    const double ps[5] = {2, INFINITY, -INFINITY, -1, 0};
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < 5; p++)
            for (int d = 0; d < 2; d++) {
                clt_tensor *e = NULL, *r = NULL;
                CHECK(clt_zeros(dev, CLT_FLOAT32, 2, shapes[s], &e));
                CHECK(clt_normalize(e, ps[p], d, 1e-12, &r));
                assert_shape(r, 2, shapes[s]);
                clt_tensor_free(r);
                clt_tensor_free(e);
            }
}
