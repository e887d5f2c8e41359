/* test_grad2.c: clamp with tensor bounds (values, dtypes, NaN, in place,
 * gradients and double backward), torch._segment_reduce (values and
 * gradients) and the double-backward nodes of gather/scatter and of the
 * pools, each against values computed here in double and finite
 * differences (clt_gradcheck, clt_gradgradcheck). */
#include <math.h>

#include "gradcheck.h"

static clt_tensor *leaf(clt_device *dev, int nd, const int64_t *shape, const double *v, int grad)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &t));
    if (grad)
        CHECK(clt_set_requires_grad(t, 1));
    return t;
}

static void expect_f64(const clt_tensor *t, const double *want, size_t n, double tol,
                       const char *what)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld elements, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *h = read_as_f64(t);
    for (size_t k = 0; k < n; k++) {
        if (isnan(want[k])) {
            cr_assert(isnan(h[k]), "%s[%zu]: %.17g, want NaN", what, k, h[k]);
            continue;
        }
        if (isinf(want[k])) {
            cr_assert(h[k] == want[k], "%s[%zu]: %.17g, want %.17g", what, k, h[k], want[k]);
            continue;
        }
        cr_assert(fabs(h[k] - want[k]) <= tol * (1 + fabs(want[k])), "%s[%zu]: %.17g, want %.17g",
                  what, k, h[k], want[k]);
        if (want[k] == 0)
            cr_assert_eq(signbit(h[k]), signbit(want[k]), "%s[%zu]: sign of zero", what, k);
    }
    free(h);
}

/* ---- clamp with tensor bounds ------------------------------------------------ */

/* torch.clamp's rule for one element: NaN in x or a bound is NaN; x kept on
 * a tie; min > max gives max. */
static double clamp_ref(double x, const double *lo, const double *hi)
{
    if (isnan(x))
        return x;
    if (lo && isnan(*lo))
        return *lo;
    if (hi && isnan(*hi))
        return *hi;
    double r = x;
    if (lo && r < *lo)
        r = *lo;
    if (hi && r > *hi)
        r = *hi;
    return r;
}

Test(clamp_tensor, broadcast_values_nan_and_ties)
{
    clt_device *dev = get_device("cpu:0");
    /* a (2, 3), min (3), max (2, 1) */
    const int64_t sa[2] = {2, 3}, smin[1] = {3}, smax[2] = {2, 1};
    const double a[6] = {-2.0, 0.5, NAN, 3.0, -0.0, 7.0};
    const double mn[3] = {-1.0, 0.5, 0.0};
    const double mx[2] = {1.0, NAN};
    clt_tensor *ta = leaf(dev, 2, sa, a, 0), *tmin = leaf(dev, 1, smin, mn, 0),
               *tmax = leaf(dev, 2, smax, mx, 0), *r = NULL;
    CHECK(clt_clamp_tensor(ta, tmin, tmax, &r));
    assert_shape(r, 2, sa);
    double want[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            want[i * 3 + j] = clamp_ref(a[i * 3 + j], &mn[j], &mx[i]);
    expect_f64(r, want, 6, 0, "clamp");
    clt_tensor_free(r);
    /* min alone, max alone; -0.0 at a 0.0 bound stays -0.0 */
    CHECK(clt_clamp_min_tensor(ta, tmin, &r));
    for (int k = 0; k < 6; k++)
        want[k] = clamp_ref(a[k], &mn[k % 3], NULL);
    expect_f64(r, want, 6, 0, "clamp_min");
    clt_tensor_free(r);
    CHECK(clt_clamp_tensor(ta, NULL, tmax, &r));
    for (int k = 0; k < 6; k++)
        want[k] = clamp_ref(a[k], NULL, &mx[k / 3]);
    expect_f64(r, want, 6, 0, "clamp max only");
    clt_tensor_free(r);
    /* min > max gives max */
    const double lo4[1] = {4.0}, hi2[1] = {2.0};
    const int64_t one[1] = {1};
    clt_tensor *l4 = leaf(dev, 1, one, lo4, 0), *h2 = leaf(dev, 1, one, hi2, 0);
    CHECK(clt_clamp_tensor(ta, l4, h2, &r));
    for (int k = 0; k < 6; k++)
        want[k] = isnan(a[k]) ? NAN : 2.0;
    expect_f64(r, want, 6, 0, "min > max");
    clt_tensor_free(r);
    /* both NULL, shapes that do not broadcast */
    assert_error(clt_clamp_tensor(ta, NULL, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "at least one of 'min' or 'max'");
    cr_assert_null(r);
    const int64_t s4[1] = {4};
    const double z4[4] = {0, 0, 0, 0};
    clt_tensor *t4 = leaf(dev, 1, s4, z4, 0);
    cr_assert_neq(clt_clamp_tensor(ta, t4, NULL, &r), CLT_OK);
    cr_assert_null(r);
    assert_error(clt_clamp_max_tensor(ta, NULL, &r), CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor_free(t4);
    clt_tensor_free(l4);
    clt_tensor_free(h2);
    clt_tensor_free(ta);
    clt_tensor_free(tmin);
    clt_tensor_free(tmax);
}

Test(clamp_tensor, dtype_promotion)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s3[1] = {3}, s1[1] = {1};
    const double a[3] = {1, 5, 9}, lo[1] = {2.5}, hi[1] = {7};
    clt_tensor *ai = tensor_of(dev, CLT_INT64, 1, s3, a), *lf = tensor_of(dev, CLT_FLOAT32, 1, s1, lo),
               *hi64 = tensor_of(dev, CLT_INT64, 1, s1, hi), *r = NULL;
    CHECK(clt_clamp_tensor(ai, lf, hi64, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    const double w1[3] = {2.5, 5, 7};
    expect_f64(r, w1, 3, 0, "int64 with float32 min");
    clt_tensor_free(r);
    CHECK(clt_clamp_tensor(ai, NULL, hi64, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    const double w2[3] = {1, 5, 7};
    expect_f64(r, w2, 3, 0, "int64");
    clt_tensor_free(r);
    /* uint8 with a 0-d int32 bound stays uint8 */
    const double three = 3;
    clt_tensor *u8 = tensor_of(dev, CLT_UINT8, 1, s3, a), *i8 = tensor_of(dev, CLT_INT32, 0, NULL, &three);
    CHECK(clt_clamp_min_tensor(u8, i8, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_UINT8);
    const double w3[3] = {3, 5, 9};
    expect_f64(r, w3, 3, 0, "uint8");
    clt_tensor_free(r);
    /* in place: an int64 t refuses a float32 bound and keeps its values */
    assert_error(clt_clamp_tensor_(ai, lf, NULL), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
    double *h = read_as_f64(ai);
    cr_assert(h[0] == 1 && h[1] == 5 && h[2] == 9);
    free(h);
    CHECK(clt_clamp_max_tensor_(ai, hi64));
    expect_f64(ai, w2, 3, 0, "clamp_max_");
    clt_tensor_free(u8);
    clt_tensor_free(i8);
    clt_tensor_free(ai);
    clt_tensor_free(lf);
    clt_tensor_free(hi64);
}

Test(clamp_tensor, in_place)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s23[2] = {2, 3}, s21[2] = {2, 1}, s3[1] = {3};
    const double a[6] = {-3, 0, 3, 5, 1, -1}, lo[3] = {-2, 1, 0}, hi[2] = {2, 4};
    clt_tensor *t = leaf(dev, 2, s23, a, 0), *l = leaf(dev, 1, s3, lo, 0), *h = leaf(dev, 2, s21, hi, 0);
    CHECK(clt_clamp_tensor_(t, l, h));
    double want[6];
    for (int k = 0; k < 6; k++)
        want[k] = clamp_ref(a[k], &lo[k % 3], &hi[k / 3]);
    expect_f64(t, want, 6, 0, "clamp_");
    CHECK(clt_clamp_min_tensor_(t, h));
    for (int k = 0; k < 6; k++)
        want[k] = clamp_ref(want[k], &hi[k / 3], NULL);
    expect_f64(t, want, 6, 0, "clamp_min_");
    /* a bound that broadcasts t to a larger shape is refused */
    clt_tensor *small = leaf(dev, 1, s3, a, 0);
    assert_error(clt_clamp_tensor_(small, h, NULL), CLT_ERR_SHAPE_MISMATCH, "broadcast shape");
    expect_f64(small, a, 3, 0, "unchanged");
    /* recorded on a non-leaf's history, bounds with gradients too:
     * y = 2 x clamped in place to [m, 1.5] */
    const double xv[3] = {-1.5, 0.25, 0.5}, mv[3] = {-1.0, 1.0, 0.0}, w[3] = {0.5, -2.0, 3.0};
    clt_tensor *x = leaf(dev, 1, s3, xv, 1), *m = leaf(dev, 1, s3, mv, 1), *y = NULL, *wt = NULL,
               *p = NULL, *s = NULL, *gr[2] = {0};
    const double hi15 = 1.5;
    clt_tensor *h15 = leaf(dev, 0, NULL, &hi15, 0);
    CHECK(clt_mul_scalar(x, 2.0, &y));
    CHECK(clt_clamp_tensor_(y, m, h15));
    cr_assert_str_eq(clt_grad_fn_name(y), "ClampBackward0");
    const double yv[3] = {-1.0, 1.0, 1.0};
    expect_f64(y, yv, 3, 0, "y");
    wt = leaf(dev, 1, s3, w, 0);
    CHECK(clt_mul(y, wt, &p));
    CHECK(clt_sum(p, &s));
    clt_tensor *xs[2] = {x, m};
    CHECK(clt_autograd_grad(&s, 1, NULL, xs, 2, 0, 0, gr));
    /* 2x = [-3, 0.5, 1]: below m, below m, inside */
    const double gx[3] = {0, 0, 6.0}, gm[3] = {0.5, -2.0, 0};
    expect_f64(gr[0], gx, 3, 0, "dx");
    expect_f64(gr[1], gm, 3, 0, "dm");
    clt_tensor *all[] = {x, m, y, wt, p, s, gr[0], gr[1], h15};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
    /* a leaf that requires grad is refused, as every in-place op */
    clt_tensor *lf = leaf(dev, 1, s3, lo, 1);
    assert_error(clt_clamp_min_tensor_(lf, l), CLT_ERR_INVALID_ARGUMENT, "leaf");
    clt_tensor_free(lf);
    clt_tensor_free(small);
    clt_tensor_free(t);
    clt_tensor_free(l);
    clt_tensor_free(h);
}

/* The gradient of sum(clamp(a, min, max)) with ties and min > max, as
 * torch's clamp_backward_min_max (values from torch 1.13):
 * a = [1, 2, 3, 3], min = [1, 2.5, 3, 4], max = [1, 3, 3, 3] gives
 * da = [1, 0, 1, 0], dmin = [0, 1, 0, 0], dmax = [0, 0, 0, 1]. */
Test(clamp_tensor, gradient_ties_as_torch)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s4[1] = {4};
    const double a[4] = {1, 2, 3, 3}, mn[4] = {1, 2.5, 3, 4}, mx[4] = {1, 3, 3, 3};
    clt_tensor *x = leaf(dev, 1, s4, a, 1), *l = leaf(dev, 1, s4, mn, 1), *h = leaf(dev, 1, s4, mx, 1);
    clt_tensor *y = NULL, *s = NULL, *g[3] = {0};
    CHECK(clt_clamp_tensor(x, l, h, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "ClampBackward0");
    CHECK(clt_sum(y, &s));
    clt_tensor *in[3] = {x, l, h};
    CHECK(clt_autograd_grad(&s, 1, NULL, in, 3, 0, 0, g));
    const double ga[4] = {1, 0, 1, 0}, gl[4] = {0, 1, 0, 0}, gh[4] = {0, 0, 0, 1};
    expect_f64(g[0], ga, 4, 0, "da");
    expect_f64(g[1], gl, 4, 0, "dmin");
    expect_f64(g[2], gh, 4, 0, "dmax");
    for (int k = 0; k < 3; k++)
        clt_tensor_free(g[k]);
    clt_tensor_free(s);
    clt_tensor_free(y);
    /* one bound: ties go to a */
    CHECK(clt_clamp_min_tensor(x, h, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "ClampMinBackward1");
    CHECK(clt_sum(y, &s));
    clt_tensor *in2[2] = {x, h};
    CHECK(clt_autograd_grad(&s, 1, NULL, in2, 2, 0, 0, g));
    const double ga2[4] = {1, 0, 1, 1}, gh2[4] = {0, 1, 0, 0};
    expect_f64(g[0], ga2, 4, 0, "da (min)");
    expect_f64(g[1], gh2, 4, 0, "dmin (min)");
    clt_tensor_free(g[0]);
    clt_tensor_free(g[1]);
    clt_tensor_free(s);
    clt_tensor_free(y);
    CHECK(clt_clamp_max_tensor(x, l, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "ClampMaxBackward1");
    CHECK(clt_sum(y, &s));
    clt_tensor *in3[2] = {x, l};
    CHECK(clt_autograd_grad(&s, 1, NULL, in3, 2, 0, 0, g));
    const double ga3[4] = {1, 1, 1, 1}, gl3[4] = {0, 0, 0, 0};
    expect_f64(g[0], ga3, 4, 0, "da (max)");
    expect_f64(g[1], gl3, 4, 0, "dmax (max)");
    clt_tensor_free(g[0]);
    clt_tensor_free(g[1]);
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(l);
    clt_tensor_free(h);
}

/* user: which bounds (1 min, 2 max, 3 both) */
static clt_status clamp_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                           size_t *m)
{
    int which = *(const int *)user;
    (void)n;
    *m = 1;
    if (which == 1)
        return clt_clamp_min_tensor(in[0], in[1], out);
    if (which == 2)
        return clt_clamp_max_tensor(in[0], in[1], out);
    return clt_clamp_tensor(in[0], in[1], in[2], out);
}

Test(clamp_tensor, gradcheck_and_gradgradcheck_with_broadcasting)
{
    clt_device *dev = get_device("cpu:0");
    /* no ties: finite differences need a margin around each kink */
    const int64_t sa[2] = {2, 4}, smin[1] = {4}, smax[2] = {2, 1};
    const double a[8] = {-2.1, 0.3, 1.7, 0.9, 3.2, -0.4, 0.05, 2.6};
    const double mn[4] = {-1.0, 0.5, 0.2, 1.5};
    const double mx[2] = {1.2, 2.0};
    clt_tensor *in[3] = {leaf(dev, 2, sa, a, 1), leaf(dev, 1, smin, mn, 1),
                         leaf(dev, 2, smax, mx, 1)};
    for (int which = 1; which <= 3; which++) {
        clt_tensor *args[3] = {in[0], which == 2 ? in[2] : in[1], in[2]};
        size_t n = which == 3 ? 3 : 2;
        CHECK(clt_gradcheck(clamp_fn, &which, args, n, NULL));
        CHECK(clt_gradgradcheck(clamp_fn, &which, args, n, NULL, 0, NULL));
    }
    for (int k = 0; k < 3; k++)
        clt_tensor_free(in[k]);
}

/* ---- segment_reduce -------------------------------------------------------------- */

/* The host reference of one segment [b, e) of x (stride st): the
 * reduction from initial (or the identity), mean dividing by the length,
 * NaN propagating for max and min, as torch.segment_reduce. */
static double seg_ref(const double *x, int64_t b, int64_t e, int64_t st, int reduce,
                      const double *init)
{
    double acc = init ? *init
                 : reduce == 2 ? -INFINITY
                 : reduce == 3 ? INFINITY
                 : reduce == 4 ? 1.0
                               : 0.0;
    for (int64_t k = b; k < e; k++) {
        double v = x[k * st];
        if (reduce == 2)
            acc = (isnan(v) || v > acc) ? v : acc;
        else if (reduce == 3)
            acc = (isnan(v) || v < acc) ? v : acc;
        else if (reduce == 4)
            acc *= v;
        else
            acc += v;
    }
    if (reduce == 1)
        acc = e > b ? acc / (double)(e - b) : init ? *init : NAN;
    return acc;
}

static const char *const seg_names[5] = {"sum", "mean", "max", "min", "prod"};

Test(segment_reduce, values_lengths_offsets_initial)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s6[1] = {6}, s4[1] = {4}, s5[1] = {5};
    const double d[6] = {1, 2, 3, 4, 5, 6}, len[4] = {2, 0, 3, 1}, off[5] = {0, 2, 2, 5, 6};
    clt_tensor *x = leaf(dev, 1, s6, d, 0), *l = tensor_of(dev, CLT_INT64, 1, s4, len),
               *o = tensor_of(dev, CLT_INT32, 1, s5, off), *r = NULL;
    const double init = 10.0;
    for (int red = 0; red < 5; red++)
        for (int wi = 0; wi < 2; wi++) {
            const double *ip = wi ? &init : NULL;
            double want[4];
            for (int s = 0; s < 4; s++)
                want[s] = seg_ref(d, (int64_t)off[s], (int64_t)off[s + 1], 1, red, ip);
            CHECK(clt_segment_reduce(x, seg_names[red], l, NULL, 0, 0, ip, &r));
            expect_f64(r, want, 4, 1e-15, seg_names[red]);
            clt_tensor_free(r);
            CHECK(clt_segment_reduce(x, seg_names[red], NULL, o, -1, 0, ip, &r));
            expect_f64(r, want, 4, 1e-15, seg_names[red]);
            clt_tensor_free(r);
        }
    /* torch's values for two of them */
    CHECK(clt_segment_reduce(x, "mean", l, NULL, 0, 0, NULL, &r));
    const double mean_t[4] = {1.5, NAN, 4.0, 6.0};
    expect_f64(r, mean_t, 4, 0, "mean (torch)");
    clt_tensor_free(r);
    CHECK(clt_segment_reduce(x, "max", l, NULL, 0, 0, NULL, &r));
    const double max_t[4] = {2, -INFINITY, 5, 6};
    expect_f64(r, max_t, 4, 0, "max (torch)");
    clt_tensor_free(r);
    /* errors */
    assert_error(clt_segment_reduce(x, "foo", l, NULL, 0, 0, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "unsupported reduction");
    cr_assert_null(r);
    assert_error(clt_segment_reduce(x, "sum", NULL, NULL, 0, 0, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "Either lengths or offsets");
    const double bad[2] = {2, 3}, neg[3] = {2, -1, 5}, boff[3] = {0, 3, 2};
    const int64_t s2[1] = {2}, s3[1] = {3};
    clt_tensor *b = tensor_of(dev, CLT_INT64, 1, s2, bad), *ng = tensor_of(dev, CLT_INT64, 1, s3, neg),
               *bo = tensor_of(dev, CLT_INT64, 1, s3, boff);
    assert_error(clt_segment_reduce(x, "sum", b, NULL, 0, 0, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "sum to data.size");
    CHECK(clt_segment_reduce(x, "sum", b, NULL, 0, 1, NULL, &r)); /* unsafe: 5 of 6 */
    const double us[2] = {3, 12};
    expect_f64(r, us, 2, 0, "unsafe");
    clt_tensor_free(r);
    assert_error(clt_segment_reduce(x, "sum", ng, NULL, 0, 0, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "negative");
    assert_error(clt_segment_reduce(x, "sum", NULL, bo, 0, 0, NULL, &r), CLT_ERR_INVALID_ARGUMENT,
                 "nondecreasing");
    assert_error(clt_segment_reduce(x, "sum", l, NULL, 1, 0, NULL, &r), CLT_ERR_DIM_OUT_OF_RANGE,
                 "Dimension out of range");
    clt_tensor *xi = tensor_of(dev, CLT_INT32, 1, s6, d);
    assert_error(clt_segment_reduce(xi, "sum", l, NULL, 0, 0, NULL, &r), CLT_ERR_DTYPE_MISMATCH,
                 NULL);
    cr_assert_null(r);
    clt_tensor_free(xi);
    clt_tensor_free(b);
    clt_tensor_free(ng);
    clt_tensor_free(bo);
    clt_tensor_free(x);
    clt_tensor_free(l);
    clt_tensor_free(o);
}

/* data (2, 5, 3) along axis 1, lengths per row [[2, 3], [0, 5]]. */
Test(segment_reduce, axis_with_rows_and_inner_dims)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sd[3] = {2, 5, 3}, sl[2] = {2, 2};
    double d[30];
    for (int k = 0; k < 30; k++)
        d[k] = sin(0.7 * k + 0.3) * 3;
    const double len[4] = {2, 3, 0, 5};
    clt_tensor *x = leaf(dev, 3, sd, d, 0), *l = tensor_of(dev, CLT_INT64, 2, sl, len), *r = NULL;
    const double init = -0.5;
    for (int red = 0; red < 5; red++) {
        CHECK(clt_segment_reduce(x, seg_names[red], l, NULL, 1, 0, red == 4 ? &init : NULL, &r));
        const int64_t so[3] = {2, 2, 3};
        assert_shape(r, 3, so);
        double want[12];
        for (int o = 0; o < 2; o++) {
            int64_t b = 0;
            for (int s = 0; s < 2; s++) {
                int64_t e = b + (int64_t)len[o * 2 + s];
                for (int i = 0; i < 3; i++)
                    want[(o * 2 + s) * 3 + i] =
                        seg_ref(d + o * 15 + i, b, e, 3, red, red == 4 ? &init : NULL);
                b = e;
            }
        }
        expect_f64(r, want, 12, 1e-14, seg_names[red]);
        clt_tensor_free(r);
    }
    clt_tensor_free(x);
    clt_tensor_free(l);
}

/* The gradients as torch gives them (torch 1.13): x = [1, 3, 3, 2, 0, 5],
 * lengths [3, 0, 3], initial 2, grad [1, 2, 3]. */
Test(segment_reduce, gradient_as_torch)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s6[1] = {6}, s3[1] = {3};
    const double d[6] = {1, 3, 3, 2, 0, 5}, len[3] = {3, 0, 3}, gv[3] = {1, 2, 3};
    const double want[5][6] = {{1, 1, 1, 3, 3, 3},
                               {1.0 / 3, 1.0 / 3, 1.0 / 3, 1, 1, 1},
                               {0, 0.5, 0.5, 0, 0, 3},
                               {1, 0, 0, 0, 3, 0},
                               {18, 6, 6, 0, 60, 0}};
    clt_tensor *l = tensor_of(dev, CLT_INT64, 1, s3, len), *go = leaf(dev, 1, s3, gv, 0);
    const double init = 2.0;
    for (int red = 0; red < 5; red++) {
        clt_tensor *x = leaf(dev, 1, s6, d, 1), *y = NULL, *g = NULL;
        CHECK(clt_segment_reduce(x, seg_names[red], l, NULL, 0, 0, &init, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), "SegmentReduceBackward0");
        CHECK(clt_autograd_grad(&y, 1, &go, &x, 1, 0, 0, &g));
        expect_f64(g, want[red], 6, 1e-15, seg_names[red]);
        clt_tensor_free(g);
        clt_tensor_free(y);
        clt_tensor_free(x);
    }
    /* a tie with a negative gradient is not divided (torch's kernel) */
    const double t3[3] = {3, 3, 1}, one[1] = {3}, gneg[1] = {-2};
    const int64_t s1[1] = {1};
    clt_tensor *x = leaf(dev, 1, s3, t3, 1), *l1 = tensor_of(dev, CLT_INT64, 1, s1, one),
               *gn = leaf(dev, 1, s1, gneg, 0), *y = NULL, *g = NULL;
    CHECK(clt_segment_reduce(x, "max", l1, NULL, 0, 0, NULL, &y));
    CHECK(clt_autograd_grad(&y, 1, &gn, &x, 1, 0, 0, &g));
    const double wneg[3] = {-2, -2, 0};
    expect_f64(g, wneg, 3, 0, "negative tie");
    clt_tensor_free(g);
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(l1);
    clt_tensor_free(gn);
    clt_tensor_free(l);
    clt_tensor_free(go);
}

struct seg_case {
    const char *reduce;
    const clt_tensor *lengths;
    const double *initial;
};

static clt_status seg_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                         size_t *m)
{
    const struct seg_case *c = user;
    (void)n;
    *m = 1;
    return clt_segment_reduce(in[0], c->reduce, c->lengths, NULL, 1, 0, c->initial, out);
}

Test(segment_reduce, gradcheck_each_reduction)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sd[3] = {2, 5, 3}, sl[2] = {2, 3};
    double d[30];
    for (int k = 0; k < 30; k++)
        d[k] = 0.5 + fmod(k * 0.37, 1.9); /* distinct, no zeros */
    /* empty segments only with initial (else -inf, inf or NaN there) */
    const double len[6] = {2, 2, 1, 1, 2, 2}, len0[6] = {2, 3, 0, 1, 0, 4};
    clt_tensor *x = leaf(dev, 3, sd, d, 1), *l = tensor_of(dev, CLT_INT64, 2, sl, len),
               *l0 = tensor_of(dev, CLT_INT64, 2, sl, len0);
    const double init = 1.5;
    for (int red = 0; red < 5; red++)
        for (int wi = 0; wi < 2; wi++) {
            struct seg_case c = {seg_names[red], wi ? l0 : l, wi ? &init : NULL};
            CHECK(clt_gradcheck(seg_fn, &c, &x, 1, NULL));
        }
    clt_tensor_free(x);
    clt_tensor_free(l);
    clt_tensor_free(l0);
}

/* ---- double backward: index ops and pools ---------------------------------------- */

/* user: which op (0 gather, 1 scatter, 2 scatter_add, 3 index_add, 4 take,
 * 5 take_along_dim, 6 index_select, 7 masked_select: index the mask) with
 * its index from idx_for. */
struct dd_case {
    int op;
    const clt_tensor *index;
};

static clt_status index_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                           size_t *m)
{
    const struct dd_case *c = user;
    (void)n;
    *m = 1;
    int dim = 1;
    switch (c->op) {
    case 0: return clt_gather(in[0], 1, c->index, out);
    case 1: return clt_scatter(in[0], 1, c->index, in[1], out);
    case 2: return clt_scatter_add(in[0], 1, c->index, in[1], out);
    case 3: return clt_index_add(in[0], 1, c->index, in[1], 0.5, out);
    case 4: return clt_take(in[0], c->index, out);
    case 5: return clt_take_along_dim(in[0], c->index, &dim, out);
    case 6: return clt_index_select(in[0], 1, c->index, out);
    default: return clt_masked_select(in[0], c->index, out);
    }
}

/* gradgradcheck differentiates the gradients with respect to the output's
 * gradient too: the gather/scatter formulas must be recorded. */
Test(double_backward2, gather_scatter_index_nodes)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s34[2] = {3, 4}, s32[2] = {3, 2}, s3[1] = {3};
    double x[12], u[6];
    for (int k = 0; k < 12; k++)
        x[k] = sin(1.3 * k + 0.2);
    for (int k = 0; k < 6; k++)
        u[k] = cos(0.9 * k);
    /* distinct per row for scatter (no two writes to one place) */
    const double ix[6] = {3, 0, 1, 2, 0, 3}, iflat[3] = {0, 5, 5}, isel[3] = {2, 0, 2};
    clt_tensor *i2 = tensor_of(dev, CLT_INT64, 2, s32, ix),
               *i1 = tensor_of(dev, CLT_INT64, 1, s3, iflat),
               *is = tensor_of(dev, CLT_INT64, 1, s3, isel);
    const double mk[12] = {1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1};
    clt_tensor *mask = tensor_of(dev, CLT_BOOL, 2, s34, mk);
    clt_tensor *a = leaf(dev, 2, s34, x, 1), *src = leaf(dev, 2, s32, u, 1);
    for (int op = 0; op <= 7; op++) {
        struct dd_case c = {op, op == 7 ? mask : op == 4 ? i1 : op == 3 || op == 6 ? is : i2};
        clt_tensor *srci = src, *ins[2] = {a, src};
        if (op == 3) {
            /* index_add's source: [3, 3] along dim 1 */
            const int64_t s33[2] = {3, 3};
            srci = leaf(dev, 2, s33, x, 1);
            ins[1] = srci;
        }
        size_t nin = op >= 1 && op <= 3 ? 2 : 1;
        CHECK(clt_gradcheck(index_fn, &c, ins, nin, NULL));
        CHECK(clt_gradgradcheck(index_fn, &c, ins, nin, NULL, 0, NULL));
        if (srci != src)
            clt_tensor_free(srci);
    }
    /* the gather's gradient with create_graph: scatter_add of u, whose
     * gradient with respect to u is v gathered back */
    clt_tensor *y = NULL, *gu = NULL, *gx = NULL, *p = NULL, *s = NULL, *gg = NULL;
    clt_tensor *uu = leaf(dev, 2, s32, u, 1), *v = leaf(dev, 2, s34, x, 0);
    CHECK(clt_gather(a, 1, i2, &y));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&y, 1, &uu, &a, 1, &o, &gx));
    cr_assert_not_null(clt_grad_fn_name(gx), "the gather's gradient has no grad_fn");
    CHECK(clt_mul(gx, v, &p));
    CHECK(clt_sum(p, &s));
    CHECK(clt_autograd_grad(&s, 1, NULL, &uu, 1, 0, 0, &gg));
    double want[6];
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 2; j++)
            want[r * 2 + j] = x[r * 4 + (int)ix[r * 2 + j]];
    expect_f64(gg, want, 6, 0, "d/du sum(scatter_add(u) * v)");
    clt_tensor *all[] = {y, gu, gx, p, s, gg, uu, v, a, src, i1, i2, is, mask};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* user: which pooling */
static clt_status pool_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                          size_t *m)
{
    int which = *(const int *)user;
    const int64_t k2[2] = {2, 2}, k3[3] = {1, 2, 2}, o2[2] = {2, 3}, o3[3] = {1, 2, 3};
    clt_tensor *idx = NULL, *x3 = NULL;
    clt_status st;
    (void)n;
    *m = 1;
    switch (which) {
    case 0: return clt_max_pool2d(in[0], k2, NULL, NULL, NULL, 0, out);
    case 1: return clt_avg_pool2d(in[0], k2, NULL, NULL, 0, 1, out);
    case 2:
        st = clt_adaptive_max_pool2d(in[0], o2, out, &idx);
        clt_tensor_free(idx);
        return st;
    case 3: return clt_adaptive_avg_pool2d(in[0], o2, out);
    case 4: return clt_max_pool3d(in[0], k3, NULL, NULL, NULL, 0, out);
    case 5: return clt_avg_pool3d(in[0], k3, NULL, NULL, 0, 1, out);
    case 6: return clt_adaptive_avg_pool3d(in[0], o3, out);
    case 7:
        st = clt_adaptive_max_pool3d(in[0], o3, out, &idx);
        clt_tensor_free(idx);
        return st;
    default: {
        const int64_t s3[3] = {2, 4, 4};
        CHECK(clt_reshape(in[0], 3, s3, &x3));
        st = which == 8 ? clt_max_pool1d(x3, 2, 2, 0, 1, 0, out)
             : which == 9 ? clt_avg_pool1d(x3, 2, 2, 0, 0, 1, out)
                          : clt_adaptive_avg_pool1d(x3, 3, out);
        clt_tensor_free(x3);
        return st;
    }
    }
}

/* torch attaches a node to a pooling's gradient taken with create_graph
 * even when the output's gradient is a constant (it depends on the
 * input, with derivative zero): the gradient has a grad_fn and its own
 * gradient with respect to the input is zeros. */
Test(double_backward2, pools_gradient_has_a_node)
{
    clt_device *dev = get_device("cpu:0");
    static const char *const names[4] = {"MaxPool2DWithIndicesBackwardBackward0",
                                         "AvgPool2DBackwardBackward0",
                                         "AdaptiveMaxPool2DBackwardBackward0",
                                         "AdaptiveAvgPool2DBackwardBackward0"};
    const int64_t sx[4] = {1, 2, 4, 4};
    double xv[32];
    for (int k = 0; k < 32; k++)
        xv[k] = sin(2.1 * k + 0.4) + 0.01 * k; /* no ties */
    for (int which = 0; which <= 10; which++) {
        clt_tensor *x = leaf(dev, 4, sx, xv, 1), *y = NULL, *s = NULL, *gx = NULL, *p = NULL,
                   *s2 = NULL, *gg = NULL;
        size_t m = 0;
        CHECK(pool_fn(&which, &x, 1, &y, &m));
        CHECK(clt_sum(y, &s));
        clt_grad_opts o = {0, 1, 0};
        CHECK(clt_autograd_grad_ex(&s, 1, NULL, &x, 1, &o, &gx));
        const char *nm = clt_grad_fn_name(gx);
        cr_assert_not_null(nm, "pool %d: the gradient has no grad_fn", which);
        if (which < 4)
            cr_assert_str_eq(nm, names[which], "pool %d", which);
        CHECK(clt_mul(gx, gx, &p));
        CHECK(clt_sum(p, &s2));
        CHECK(clt_autograd_grad(&s2, 1, NULL, &x, 1, 0, 0, &gg));
        double zeros[32] = {0};
        expect_f64(gg, zeros, 32, 0, "second derivative");
        /* gradgradcheck with random output gradients */
        CHECK(clt_gradgradcheck(pool_fn, &which, &x, 1, NULL, 0, NULL));
        clt_tensor *all[] = {x, y, s, gx, p, s2, gg};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_free(all[k]);
    }
}
