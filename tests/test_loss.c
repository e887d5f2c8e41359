/* test_loss.c: the losses of loss.h against host references computed in
 * double: values (huge logits, ignore_index, label smoothing, class
 * weights, probability targets, every reduction, batchmean), gradients by
 * finite differences in float64 and against analytic references in
 * float32, PyTorch's values at the edges, dtypes, errors, out-of-range
 * class indices and probabilities found on the device, and identical bits
 * on two devices. */
#include <stdio.h>

#include "gradcheck.h"

static clt_tensor *mk(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape,
                      const double *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    clt_tensor *t = NULL;
    if (dt == CLT_FLOAT32) {
        float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
        for (int64_t k = 0; k < n; k++)
            f[k] = (float)v[k];
        CHECK(clt_tensor_from_host(dev, dt, ndim, shape, f, &t));
        free(f);
    } else {
        CHECK(clt_tensor_from_host(dev, dt, ndim, shape, v, &t));
    }
    return t;
}

static clt_tensor *mk_idx(clt_device *dev, int ndim, const int64_t *shape, const int64_t *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, ndim, shape, v, &t));
    return t;
}

/* t's values as doubles (malloc'd). */
static double *rd(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (clt_tensor_dtype(t) == CLT_FLOAT32) {
        float *f = read_f32(t);
        for (size_t k = 0; k < n; k++)
            d[k] = f[k];
        free(f);
    } else {
        CHECK(clt_tensor_read(t, d, n * sizeof *d));
    }
    return d;
}

static void assert_close(const double *got, const double *want, size_t n, double rtol,
                         double atol, const char *what)
{
    for (size_t k = 0; k < n; k++)
        cr_assert(close_enough(got[k], want[k], rtol, atol), "%s[%zu]: got %.12g, want %.12g",
                  what, k, got[k], want[k]);
}

/* ---- host references ------------------------------------------------------------- */

/* Cross entropy (nll 0) or nll_loss (nll 1) of x [N, C] with class indices t
 * or probabilities p; rows gets the per-row losses, *res the reduced one,
 * grad (if not NULL) d res / dx (for NONE: d sum(rows) / dx). */
static void ref_ce(const double *x, int N, int C, const int64_t *t, const double *p,
                   const double *w, int64_t ign, double eps, int nll, clt_reduction red,
                   double *rows, double *res, double *grad)
{
    double total = 0, den = 0;
    double *a = malloc((size_t)C * sizeof *a), *lp = malloc((size_t)C * sizeof *lp);
    for (int i = 0; i < N; i++) {
        const double *xr = x + (size_t)i * C;
        double lse = 0;
        if (!nll) {
            double m = -INFINITY, s = 0;
            for (int c = 0; c < C; c++)
                m = fmax(m, xr[c]);
            for (int c = 0; c < C; c++)
                s += exp(xr[c] - m);
            lse = m + log(s);
        }
        double row = 0, wr = 1;
        int skip = 0;
        for (int c = 0; c < C; c++)
            lp[c] = xr[c] - lse;
        if (p) {
            for (int c = 0; c < C; c++)
                a[c] = (w ? w[c] : 1) * ((1 - eps) * p[(size_t)i * C + c] + eps / C);
        } else if (t[i] == ign) {
            skip = 1;
            wr = 0;
        } else {
            wr = w ? w[t[i]] : 1;
            for (int c = 0; c < C; c++)
                a[c] = (c == t[i] ? (1 - eps) * wr : 0) + eps / C * (w ? w[c] : 1);
        }
        if (!skip)
            for (int c = 0; c < C; c++)
                row -= a[c] * lp[c];
        rows[i] = row;
        total += row;
        den += wr;
        if (grad) {
            double A = 0;
            for (int c = 0; c < C && !skip; c++)
                A += a[c];
            for (int c = 0; c < C; c++)
                grad[(size_t)i * C + c] =
                    skip ? 0 : nll ? -a[c] : exp(lp[c]) * A - a[c];
        }
    }
    double div = red != CLT_REDUCTION_MEAN ? 1 : p ? N : den;
    *res = red == CLT_REDUCTION_MEAN ? total / div : total;
    if (grad)
        for (int k = 0; k < N * C; k++)
            grad[k] /= div;
    free(a);
    free(lp);
}

static double ref_pointwise(int kind, double x, double y, double pw)
{
    if (kind == 0)
        return (x - y) * (x - y);
    if (kind == 1)
        return fabs(x - y);
    return (1 - y) * x + (1 + (pw - 1) * y) * (log1p(exp(-fabs(x))) + fmax(-x, 0));
}

/* ---- forward values --------------------------------------------------------------- */

enum { N4 = 4, C5 = 5 };
static const double X45[N4 * C5] = {0.5,  -1.25, 2.0, 0.0,  3.5, /* */
                                    1e4,  -1e4,  0.0, 1e4,  -3.0, /* huge */
                                    -0.7, 0.3,   1.1, -2.2, 0.9,  /* */
                                    -1e4, -1e4,  5.0, 2.0,  -1e4};
static const int64_t T4[N4] = {4, 1, -100, 2};
static const double W5[C5] = {0.5, 2.0, 1.0, 1.5, 0.25};

static clt_status ce_call(int nll, const clt_tensor *x, const clt_tensor *t,
                          const clt_cross_entropy_opts *o, clt_tensor **out)
{
    return nll ? clt_nll_loss(x, t, o, out) : clt_cross_entropy(x, t, o, out);
}

Test(loss, cross_entropy_class_indices)
{
    clt_device *dev = get_device("cpu");
    clt_dtype dts[2] = {CLT_FLOAT64, CLT_FLOAT32};
    int64_t xs[2] = {N4, C5}, n = N4;
    for (int di = 0; di < 2; di++) {
        double tol = di ? 2e-6 : 1e-12;
        clt_tensor *x = mk(dev, dts[di], 2, xs, X45), *t = mk_idx(dev, 1, &n, T4);
        clt_tensor *w = mk(dev, dts[di], 1, xs + 1, W5);
        for (int nll = 0; nll < 2; nll++)
            for (int wi = 0; wi < 2; wi++)
                for (int si = 0; si < 2; si++)
                    for (int red = 0; red < 3; red++) {
                        if (nll && si)
                            continue;
                        clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
                        o.reduction = (clt_reduction)red;
                        o.weight = wi ? w : NULL;
                        o.label_smoothing = si ? 0.1 : 0.0;
                        double rows[N4], res;
                        ref_ce(X45, N4, C5, T4, NULL, wi ? W5 : NULL, -100, o.label_smoothing,
                               nll, o.reduction, rows, &res, NULL);
                        clt_tensor *r = NULL;
                        CHECK(ce_call(nll, x, t, &o, &r));
                        double *got = rd(r);
                        if (red == CLT_REDUCTION_NONE) {
                            cr_assert_eq(clt_tensor_ndim(r), 1);
                            cr_assert_eq(clt_tensor_shape(r)[0], N4);
                            assert_close(got, rows, N4, tol, tol, "rows");
                        } else {
                            cr_assert_eq(clt_tensor_ndim(r), 0);
                            cr_assert(isfinite(got[0]));
                            assert_close(got, &res, 1, tol, tol, "loss");
                        }
                        free(got);
                        clt_tensor_free(r);
                    }
        clt_tensor_free(x);
        clt_tensor_free(t);
        clt_tensor_free(w);
    }
}

/* uint8 class indices, as torch 1.13 takes them (labels read from a uint8
 * file): the values and gradients of the int64 reference, for both losses
 * and every reduction; an index past the classes (200) is reported as an
 * int64 one is. */
Test(loss, uint8_class_indices)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[2] = {N4, C5}, n = N4;
    const int64_t t64[N4] = {4, 1, 0, 2};
    const uint8_t t8[N4] = {4, 1, 0, 2}, bad[N4] = {4, 200, 0, 2};
    clt_tensor *t, *tb;
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, &n, t8, &t));
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, &n, bad, &tb));
    for (int nll = 0; nll < 2; nll++)
        for (int red = 0; red < 3; red++) {
            clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
            o.reduction = (clt_reduction)red;
            double rows[N4], res, grad[N4 * C5];
            ref_ce(X45, N4, C5, t64, NULL, NULL, -100, 0.0, nll, o.reduction, rows, &res, grad);
            clt_tensor *x = mk(dev, CLT_FLOAT64, 2, xs, X45), *r = NULL, *g = NULL;
            CHECK(clt_set_requires_grad(x, 1));
            CHECK(ce_call(nll, x, t, &o, &r));
            double *got = rd(r);
            if (red == CLT_REDUCTION_NONE)
                assert_close(got, rows, N4, 1e-12, 1e-12, "rows");
            else
                assert_close(got, &res, 1, 1e-12, 1e-12, "loss");
            free(got);
            clt_tensor *s = NULL;
            CHECK(clt_sum(r, &s));
            CHECK(clt_backward(s, NULL, 0));
            CHECK(clt_grad(x, &g));
            got = rd(g);
            assert_close(got, grad, N4 * C5, 1e-12, 1e-12, "gradient");
            free(got);
            clt_tensor_free(g);
            clt_tensor_free(s);
            clt_tensor_free(r);
            CHECK(ce_call(nll, x, tb, &o, &r));
            clt_status st = clt_device_synchronize(dev);
            cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s: %s", clt_status_name(st),
                         clt_last_error());
            cr_assert(strstr(clt_last_error(), "Target 200 is out of bounds"), "%s",
                      clt_last_error());
            clt_tensor_free(r);
            clt_tensor_free(x);
        }
    clt_tensor_free(t);
    clt_tensor_free(tb);
}

Test(loss, cross_entropy_probabilities_and_unbatched)
{
    clt_device *dev = get_device("cpu");
    enum { N = 3, C = 4 };
    double x[N * C] = {1e4, 0, -1e4, 3, 0.1, 0.2, 0.3, 0.4, -2, 4, 1, 0.5};
    double p[N * C] = {0.7, 0.1, 0.1, 0.1, 0, 0, 1, 0, 0.25, 0.25, 0.25, 0.25};
    double w[C] = {1, 0.5, 2, 3};
    int64_t xs[2] = {N, C};
    clt_tensor *tx = mk(dev, CLT_FLOAT64, 2, xs, x), *tp = mk(dev, CLT_FLOAT64, 2, xs, p);
    clt_tensor *tw = mk(dev, CLT_FLOAT64, 1, xs + 1, w);
    for (int wi = 0; wi < 2; wi++)
        for (int si = 0; si < 2; si++)
            for (int red = 0; red < 3; red++) {
                clt_cross_entropy_opts o = {(clt_reduction)red, -100, si ? 0.2 : 0.0,
                                            wi ? tw : NULL};
                double rows[N], res;
                ref_ce(x, N, C, NULL, p, wi ? w : NULL, -100, o.label_smoothing, 0,
                       o.reduction, rows, &res, NULL);
                clt_tensor *r = NULL;
                CHECK(clt_cross_entropy(tx, tp, &o, &r));
                double *got = rd(r);
                assert_close(got, red == CLT_REDUCTION_NONE ? rows : &res,
                             red == CLT_REDUCTION_NONE ? N : 1, 1e-12, 1e-12, "prob");
                free(got);
                clt_tensor_free(r);
            }
    /* unbatched: [C] logits with a [] index or [C] probabilities */
    int64_t c = C, t1 = 3;
    clt_tensor *ux = mk(dev, CLT_FLOAT64, 1, &c, x + C), *ut = mk_idx(dev, 0, NULL, &t1);
    clt_tensor *up = mk(dev, CLT_FLOAT64, 1, &c, p + C), *r = NULL;
    double rows[1], res;
    for (int red = 0; red < 3; red++) {
        clt_cross_entropy_opts o = {(clt_reduction)red, -100, 0.0, NULL};
        ref_ce(x + C, 1, C, &t1, NULL, NULL, -100, 0, 0, o.reduction, rows, &res, NULL);
        CHECK(clt_cross_entropy(ux, ut, &o, &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        double *got = rd(r);
        assert_close(got, &res, 1, 1e-12, 1e-12, "unbatched");
        free(got);
        clt_tensor_free(r);
        ref_ce(x + C, 1, C, NULL, p + C, NULL, -100, 0, 0, o.reduction, rows, &res, NULL);
        CHECK(clt_cross_entropy(ux, up, &o, &r));
        cr_assert_eq(clt_tensor_ndim(r), 0);
        got = rd(r);
        assert_close(got, &res, 1, 1e-12, 1e-12, "unbatched prob");
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(ux);
    clt_tensor_free(ut);
    clt_tensor_free(up);
    clt_tensor_free(tx);
    clt_tensor_free(tp);
    clt_tensor_free(tw);
}

Test(loss, every_target_ignored_gives_nan_as_pytorch)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[2] = {2, 3}, n = 2, t[2] = {-100, -100};
    double x[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *tx = mk(dev, CLT_FLOAT32, 2, xs, x), *tt = mk_idx(dev, 1, &n, t), *r = NULL;
    CHECK(clt_cross_entropy(tx, tt, NULL, &r));
    double v;
    CHECK(clt_tensor_item(r, &v));
    cr_assert(isnan(v), "got %g", v);
    clt_tensor_free(r);
    clt_tensor_free(tx);
    clt_tensor_free(tt);
}

/* nll_loss's gradient is -w[t] g at the target and +0.0 elsewhere whatever
 * the row's g is, as PyTorch's nll_loss_backward: an infinite or NaN g
 * once gave NaN in every class of its row, and g > 0 gave -0.0. */
Test(loss, nll_gradient_other_classes_zero)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[2] = {3, 4}, n = 3, t[3] = {1, 0, 3};
    double x[12], g[3] = {INFINITY, -2.0, NAN};
    for (int k = 0; k < 12; k++)
        x[k] = -0.5 - 0.25 * k;
    clt_tensor *tx = mk(dev, CLT_FLOAT64, 2, xs, x), *tt = mk_idx(dev, 1, &n, t);
    clt_tensor *tg = mk(dev, CLT_FLOAT64, 1, &n, g), *r = NULL, *gx = NULL;
    CHECK(clt_set_requires_grad(tx, 1));
    clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
    o.reduction = CLT_REDUCTION_NONE;
    CHECK(clt_nll_loss(tx, tt, &o, &r));
    CHECK(clt_backward(r, tg, 0));
    CHECK(clt_grad(tx, &gx));
    double *got = rd(gx);
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 4; c++) {
            double v = got[i * 4 + c];
            if (c == t[i])
                cr_assert(isnan(g[i]) ? isnan(v) : v == -g[i], "row %d target: %g", i, v);
            else
                cr_assert(v == 0 && !signbit(v), "row %d class %d: %g, want +0", i, c, v);
        }
    free(got);
    clt_tensor_free(gx);
    clt_tensor_free(r);
    clt_tensor_free(tg);
    clt_tensor_free(tt);
    clt_tensor_free(tx);
}

/* loss kind (0 bce without pos_weight, 1 bce with pos_weight 0.5, 2 l1)
 * of x and y with reduction none, and the gradients for an all-ones g. */
static void pointwise_grads(clt_device *dev, int kind, const double *x, const double *y,
                            int64_t n, double **loss, double **gx, double **gy)
{
    double *pwv = malloc((size_t)n * sizeof *pwv), *ones = malloc((size_t)n * sizeof *ones);
    for (int64_t k = 0; k < n; k++) {
        pwv[k] = 0.5;
        ones[k] = 1.0;
    }
    clt_tensor *tx = mk(dev, CLT_FLOAT64, 1, &n, x), *ty = mk(dev, CLT_FLOAT64, 1, &n, y);
    clt_tensor *tp = mk(dev, CLT_FLOAT64, 1, &n, pwv), *tg = mk(dev, CLT_FLOAT64, 1, &n, ones);
    clt_tensor *r = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_set_requires_grad(ty, 1));
    if (kind == 2)
        CHECK(clt_l1_loss(tx, ty, CLT_REDUCTION_NONE, &r));
    else
        CHECK(clt_binary_cross_entropy_with_logits(tx, ty, kind ? tp : NULL,
                                                   CLT_REDUCTION_NONE, &r));
    *loss = rd(r);
    CHECK(clt_backward(r, tg, 0));
    CHECK(clt_grad(tx, &g));
    *gx = rd(g);
    clt_tensor_free(g);
    CHECK(clt_grad(ty, &g));
    *gy = rd(g);
    clt_tensor_free(g);
    clt_tensor_free(r);
    clt_tensor_free(tg);
    clt_tensor_free(tp);
    clt_tensor_free(ty);
    clt_tensor_free(tx);
    free(pwv);
    free(ones);
}

/* Infinite and NaN operands of the pointwise losses, as PyTorch's formulas
 * give them: without pos_weight an infinite target makes binary cross
 * entropy's loss and input gradient -inf (no 0 * inf from a (pw - 1) y
 * term) and a -inf logit the target's gradient -x = inf; with pos_weight
 * that gradient is log_sigmoid(-x) - pw log_sigmoid(x) = inf; l1's gradient
 * is sgn(x - y), 0 for NaN.  Each of these once came out NaN. */
Test(loss, pointwise_infinities_as_pytorch)
{
    clt_device *dev = get_device("cpu");
    const double x[3] = {0.5, -INFINITY, NAN}, y[3] = {INFINITY, 0.25, 0.5};
    double *l, *gx, *gy;
    pointwise_grads(dev, 0, x, y, 3, &l, &gx, &gy);
    cr_assert(l[0] == -INFINITY && gx[0] == -INFINITY && gy[0] == -0.5, "%g %g %g", l[0],
              gx[0], gy[0]);
    cr_assert(gx[1] == -0.25 && gy[1] == INFINITY, "%g %g", gx[1], gy[1]);
    free(l);
    free(gx);
    free(gy);
    pointwise_grads(dev, 1, x, y, 3, &l, &gx, &gy);
    cr_assert(gy[1] == INFINITY, "pos_weight: %g", gy[1]);
    free(l);
    free(gx);
    free(gy);
    pointwise_grads(dev, 2, x, y, 3, &l, &gx, &gy);
    cr_assert(isnan(l[2]) && gx[2] == 0 && gy[2] == 0, "l1 at NaN: %g %g %g", l[2], gx[2],
              gy[2]);
    cr_assert(gx[0] == -1 && gx[1] == -1 && gy[1] == 1, "l1: %g %g %g", gx[0], gx[1], gy[1]);
    free(l);
    free(gx);
    free(gy);
}

Test(loss, pointwise_values)
{
    clt_device *dev = get_device("cpu");
    enum { R = 2, C = 3, N = R * C };
    double x[N] = {1e4, -1e4, 0.5, -0.25, 2, 0}, y[N] = {1, 0, 0.3, 0.5, 2, 1};
    double pw[C] = {2, 0.5, 3};
    int64_t s[2] = {R, C};
    for (int di = 0; di < 2; di++) {
        clt_dtype dt = di ? CLT_FLOAT32 : CLT_FLOAT64;
        double tol = di ? 2e-6 : 1e-12;
        clt_tensor *tx = mk(dev, dt, 2, s, x), *ty = mk(dev, dt, 2, s, y);
        clt_tensor *tpw = mk(dev, dt, 1, s + 1, pw);
        for (int kind = 0; kind < 4; kind++)
            for (int red = 0; red < 3; red++) {
                int k = kind < 3 ? kind : 2;
                const double *pwv = kind == 3 ? pw : NULL;
                double rows[N], sum = 0;
                for (int i = 0; i < N; i++) {
                    rows[i] = ref_pointwise(k, x[i], y[i], pwv ? pwv[i % C] : 1);
                    sum += rows[i];
                }
                double res = red == CLT_REDUCTION_MEAN ? sum / N : sum;
                clt_tensor *r = NULL;
                clt_reduction rr = (clt_reduction)red;
                if (k == 0)
                    CHECK(clt_mse_loss(tx, ty, rr, &r));
                else if (k == 1)
                    CHECK(clt_l1_loss(tx, ty, rr, &r));
                else
                    CHECK(clt_binary_cross_entropy_with_logits(tx, ty, kind == 3 ? tpw : NULL,
                                                               rr, &r));
                double *got = rd(r);
                if (red == CLT_REDUCTION_NONE) {
                    cr_assert_eq(clt_tensor_ndim(r), 2);
                    assert_close(got, rows, N, tol, tol, "pointwise rows");
                } else {
                    cr_assert_eq(clt_tensor_ndim(r), 0);
                    assert_close(got, &res, 1, tol, tol, "pointwise");
                }
                for (int i = 0; i < (red == CLT_REDUCTION_NONE ? N : 1); i++)
                    cr_assert(isfinite(got[i]));
                free(got);
                clt_tensor_free(r);
            }
        clt_tensor_free(tx);
        clt_tensor_free(ty);
        clt_tensor_free(tpw);
    }
}

/* Past 4096 values the sums run in two stages: still exact in order of
 * magnitude, and the weighted mean still divides by the weights' sum. */
Test(loss, long_reductions)
{
    clt_device *dev = get_device("cpu");
    enum { N = 5003, C = 3, M = 10007 };
    static double x[N * C], rows[N], a[M], b[M];
    static int64_t t[N];
    double w[C] = {0.5, 2, 1.25};
    for (int k = 0; k < N * C; k++)
        x[k] = sin(0.7 * k) * 4;
    for (int i = 0; i < N; i++)
        t[i] = i % 7 == 0 ? -100 : i % C;
    int64_t xs[2] = {N, C}, n = N, m = M, c = C;
    clt_tensor *tx = mk(dev, CLT_FLOAT64, 2, xs, x), *tt = mk_idx(dev, 1, &n, t);
    clt_tensor *tw = mk(dev, CLT_FLOAT64, 1, &c, w), *r = NULL;
    for (int red = 0; red < 2; red++) {
        clt_cross_entropy_opts o = {(clt_reduction)red, -100, 0.05, tw};
        double res, got;
        ref_ce(x, N, C, t, NULL, w, -100, 0.05, 0, o.reduction, rows, &res, NULL);
        CHECK(clt_cross_entropy(tx, tt, &o, &r));
        CHECK(clt_tensor_item(r, &got));
        assert_close(&got, &res, 1, 1e-10, 1e-10, "long ce");
        clt_tensor_free(r);
    }
    double sum = 0;
    for (int k = 0; k < M; k++) {
        a[k] = cos(0.3 * k);
        b[k] = sin(0.2 * k);
        sum += (a[k] - b[k]) * (a[k] - b[k]);
    }
    clt_tensor *ta = mk(dev, CLT_FLOAT64, 1, &m, a), *tb = mk(dev, CLT_FLOAT64, 1, &m, b);
    double got, want = sum / M;
    CHECK(clt_mse_loss(ta, tb, CLT_REDUCTION_MEAN, &r));
    CHECK(clt_tensor_item(r, &got));
    assert_close(&got, &want, 1, 1e-10, 1e-12, "long mse");
    clt_tensor_free(r);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tx);
    clt_tensor_free(tt);
    clt_tensor_free(tw);
}

/* float32 means over 2^21 rows: the per-row values are added compensated.
 * Plain float32 sums of 2^13-row chunks made the mean cross entropy of
 * equal rows of log(2) 6.4e-5 high. */
Test(loss, long_float32_means_keep_their_accuracy)
{
    clt_device *dev = get_device("cpu");
    int64_t n = (int64_t)1 << 21, xs[2] = {n, 2};
    clt_tensor *x = NULL, *t = NULL, *a = NULL, *z = NULL, *r = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, xs, &x));
    CHECK(clt_zeros(dev, CLT_INT64, 1, &n, &t));
    double got, want = log(2.0);
    CHECK(clt_cross_entropy(x, t, NULL, &r));
    CHECK(clt_tensor_item(r, &got));
    cr_assert(fabs(got - want) <= 1e-6 * want, "cross entropy %.9g, want %.9g", got, want);
    clt_tensor_free(r);
    /* mse: every element (0.1f)^2 in float32 */
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 0.1, &a));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, &n, &z));
    CHECK(clt_mse_loss(a, z, CLT_REDUCTION_MEAN, &r));
    CHECK(clt_tensor_item(r, &got));
    want = (double)(0.1f * 0.1f);
    cr_assert(fabs(got - want) <= 1e-6 * want, "mse %.9g, want %.9g", got, want);
    clt_tensor_free(r);
    clt_tensor_free(a);
    clt_tensor_free(z);
    clt_tensor_free(x);
    clt_tensor_free(t);
}

/* ---- gradients, float64 finite differences ---------------------------------------- */

typedef struct ce_ctx {
    int nll, prob;
    clt_tensor *target;
    clt_cross_entropy_opts o;
} ce_ctx;

static clt_status f_ce(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const ce_ctx *c = p;
    const clt_tensor *t = c->prob ? in[1] : c->target;
    return ce_call(c->nll, in[0], t, &c->o, out);
}

Test(loss, gradcheck_cross_entropy_and_nll)
{
    clt_device *dev = get_device("cpu");
    int64_t n = N4, c5 = C5;
    /* moderate logits: finite differences of 1e4 would lose every digit */
    double x[N4 * C5];
    for (int k = 0; k < N4 * C5; k++)
        x[k] = sin(1.7 * k) * 2;
    clt_tensor *t = mk_idx(dev, 1, &n, T4), *w = mk(dev, CLT_FLOAT64, 1, &c5, W5);
    gc_in ins[1] = {{2, {N4, C5}, x, 1}};
    for (int nll = 0; nll < 2; nll++)
        for (int wi = 0; wi < 2; wi++)
            for (int si = 0; si < 2; si++)
                for (int red = 0; red < 3; red++) {
                    if (nll && si)
                        continue;
                    ce_ctx c = {nll, 0, t, {(clt_reduction)red, -100, si ? 0.15 : 0.0,
                                            wi ? w : NULL}};
                    gradcheck(dev, f_ce, &c, 1, ins);
                }
    /* probability targets: the logits and the targets */
    double p[N4 * C5];
    for (int k = 0; k < N4 * C5; k++)
        p[k] = 0.1 + 0.05 * (k % 7);
    gc_in pins[2] = {{2, {N4, C5}, x, 1}, {2, {N4, C5}, p, 1}};
    for (int wi = 0; wi < 2; wi++)
        for (int red = 0; red < 3; red++) {
            ce_ctx c = {0, 1, NULL, {(clt_reduction)red, -100, 0.2, wi ? w : NULL}};
            gradcheck(dev, f_ce, &c, 2, pins);
        }
    /* unbatched */
    int64_t one = 2;
    clt_tensor *ut = mk_idx(dev, 0, NULL, &one);
    gc_in uins[1] = {{1, {C5}, x, 1}};
    ce_ctx uc = {0, 0, ut, {CLT_REDUCTION_MEAN, -100, 0.1, NULL}};
    gradcheck(dev, f_ce, &uc, 1, uins);
    clt_tensor_free(ut);
    clt_tensor_free(t);
    clt_tensor_free(w);
}

typedef struct pw_ctx {
    int kind;
    clt_reduction red;
    int with_pw;
} pw_ctx;

static clt_status f_pw(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const pw_ctx *c = p;
    if (c->kind == 0)
        return clt_mse_loss(in[0], in[1], c->red, out);
    if (c->kind == 1)
        return clt_l1_loss(in[0], in[1], c->red, out);
    return clt_binary_cross_entropy_with_logits(in[0], in[1], c->with_pw ? in[2] : NULL, c->red,
                                                out);
}

Test(loss, gradcheck_pointwise_input_and_target)
{
    clt_device *dev = get_device("cpu");
    double x[6] = {0.3, -1.2, 2.5, 0.8, -0.4, 1.9}, y[6] = {0.9, 0.1, 0.4, 0.05, 1.0, 0.6};
    double pw[3] = {2.0, 0.5, 1.5};
    gc_in ins[3] = {{2, {2, 3}, x, 1}, {2, {2, 3}, y, 1}, {1, {3}, pw, 0}};
    for (int kind = 0; kind < 3; kind++)
        for (int red = 0; red < 3; red++)
            for (int wp = 0; wp < (kind == 2 ? 2 : 1); wp++) {
                pw_ctx c = {kind, (clt_reduction)red, wp};
                gradcheck(dev, f_pw, &c, wp ? 3 : 2, ins);
            }
}

/* ---- gradients, float32 against analytic references ------------------------------- */

Test(loss, float32_gradients_against_host)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[2] = {N4, C5}, n = N4;
    clt_tensor *x = mk(dev, CLT_FLOAT32, 2, xs, X45), *t = mk_idx(dev, 1, &n, T4);
    clt_tensor *w = mk(dev, CLT_FLOAT32, 1, xs + 1, W5), *r = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    clt_cross_entropy_opts o = {CLT_REDUCTION_MEAN, -100, 0.1, w};
    CHECK(clt_cross_entropy(x, t, &o, &r));
    CHECK(clt_backward(r, NULL, 0));
    CHECK(clt_grad(x, &g));
    double rows[N4], res, want[N4 * C5];
    ref_ce(X45, N4, C5, T4, NULL, W5, -100, 0.1, 0, CLT_REDUCTION_MEAN, rows, &res, want);
    double *got = rd(g);
    assert_close(got, want, N4 * C5, 1e-5, 1e-6, "ce grad");
    for (int k = 0; k < N4 * C5; k++)
        cr_assert(isfinite(got[k]));
    for (int k = 2 * C5; k < 3 * C5; k++) /* the ignored row */
        cr_assert_eq(got[k], 0.0);
    free(got);
    clt_tensor_free(g);
    clt_tensor_free(r);

    /* bce with pos_weight, sum, huge logits: sigmoid(x)(1 + (pw-1)y) - pw y */
    double bx[4] = {1e4, -1e4, 0.5, -2}, by[4] = {0, 1, 0.25, 0.75}, bp[2] = {3, 0.5};
    int64_t bs[2] = {2, 2};
    clt_tensor *tx = mk(dev, CLT_FLOAT32, 2, bs, bx), *ty = mk(dev, CLT_FLOAT32, 2, bs, by);
    clt_tensor *tp = mk(dev, CLT_FLOAT32, 1, bs + 1, bp);
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_set_requires_grad(ty, 1));
    CHECK(clt_binary_cross_entropy_with_logits(tx, ty, tp, CLT_REDUCTION_SUM, &r));
    CHECK(clt_backward(r, NULL, 0));
    double wx[4], wy[4];
    for (int i = 0; i < 4; i++) {
        double p = bp[i % 2], s = 1 / (1 + exp(-bx[i]));
        wx[i] = s * (1 + (p - 1) * by[i]) - p * by[i];
        wy[i] = (p - 1) * (log1p(exp(-fabs(bx[i]))) + fmax(-bx[i], 0)) - bx[i];
    }
    CHECK(clt_grad(tx, &g));
    got = rd(g);
    assert_close(got, wx, 4, 1e-5, 1e-6, "bce dx");
    free(got);
    clt_tensor_free(g);
    CHECK(clt_grad(ty, &g));
    got = rd(g);
    assert_close(got, wy, 4, 1e-5, 1e-6, "bce dy");
    free(got);
    clt_tensor_free(g);
    clt_tensor_free(r);

    /* mse mean and l1 none: 2 (x - y) / n, sign(x - y) g (0 at 0) */
    double lx[4] = {1, 2, 3, 4}, ly[4] = {0.5, 2, 3.5, -1};
    clt_tensor *mx = mk(dev, CLT_FLOAT32, 2, bs, lx), *my = mk(dev, CLT_FLOAT32, 2, bs, ly);
    CHECK(clt_set_requires_grad(mx, 1));
    CHECK(clt_mse_loss(mx, my, CLT_REDUCTION_MEAN, &r));
    CHECK(clt_backward(r, NULL, 0));
    clt_tensor_free(r);
    CHECK(clt_grad(mx, &g));
    got = rd(g);
    for (int i = 0; i < 4; i++)
        wx[i] = 2 * (lx[i] - ly[i]) / 4;
    assert_close(got, wx, 4, 1e-6, 1e-7, "mse dx");
    free(got);
    clt_tensor_free(g);
    CHECK(clt_zero_grad(mx, 1));
    clt_tensor *l = NULL, *s = NULL;
    CHECK(clt_l1_loss(mx, my, CLT_REDUCTION_NONE, &l));
    CHECK(clt_sum(l, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(mx, &g));
    got = rd(g);
    double wl[4] = {1, 0, -1, 1};
    assert_close(got, wl, 4, 0, 0, "l1 dx");
    free(got);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(s);
    clt_tensor_free(mx);
    clt_tensor_free(my);
    clt_tensor_free(tx);
    clt_tensor_free(ty);
    clt_tensor_free(tp);
    clt_tensor_free(x);
    clt_tensor_free(t);
    clt_tensor_free(w);
}

/* ---- dtype promotion ------------------------------------------------------------- */

/* One mixed-dtype call, with the result dtype torch 1.13 gives it (checked
 * with torch: F.mse_loss(float32, float64) is float64, an int64 target
 * takes the input's dtype, binary_cross_entropy_with_logits gives the
 * target's dtype whatever the input's and pos_weight's, cross_entropy with
 * probabilities promotes the logits, the target and the weight). */
typedef struct promo_case {
    int kind; /* 0 mse, 1 l1, 2 bce, 3 cross entropy with probabilities */
    clt_dtype x, y, extra; /* extra: pos_weight or weight; CLT_DTYPE_COUNT: none */
    double smoothing;
    clt_dtype want;
} promo_case;

enum { PR = 2, PC = 3, PN = PR * PC };

/* The loss of the case on host values, in double: the mean (red 0) or the
 * sum (red 1) of the elements' or rows' losses. */
static double promo_ref(const promo_case *c, const double *x, const double *y, const double *e,
                        int red)
{
    if (c->kind == 3) {
        double rows[PR], res;
        ref_ce(x, PR, PC, NULL, y, c->extra == CLT_DTYPE_COUNT ? NULL : e, -100, c->smoothing,
               0, red ? CLT_REDUCTION_SUM : CLT_REDUCTION_MEAN, rows, &res, NULL);
        return res;
    }
    double sum = 0;
    for (int i = 0; i < PN; i++)
        sum += ref_pointwise(c->kind, x[i], y[i], c->extra == CLT_DTYPE_COUNT ? 1 : e[i % PC]);
    return red ? sum : sum / PN;
}

/* values rounded to what a tensor of dt holds */
static clt_tensor *promo_tensor(clt_device *dev, clt_dtype dt, int ndim, const int64_t *shape,
                                double *v, size_t n)
{
    if (dt == CLT_INT64) {
        int64_t iv[PN];
        for (size_t k = 0; k < n; k++)
            v[k] = (double)(iv[k] = (int64_t)llround(v[k]));
        return mk_idx(dev, ndim, shape, iv);
    }
    for (size_t k = 0; k < n && dt == CLT_FLOAT32; k++)
        v[k] = (float)v[k];
    return mk(dev, dt, ndim, shape, v);
}

/* Mixed float32 and float64 (and int64) operands give torch's dtype, the
 * value of a float64 host reference, and each floating operand its
 * gradient in its own dtype, against central differences of that
 * reference in float64.  torch 1.13's own mse_loss backward refuses mixed
 * dtypes ("Found dtype Double but expected Float"); here it works as l1's. */
Test(loss, dtype_promotion)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype F32 = CLT_FLOAT32, F64 = CLT_FLOAT64, I64 = CLT_INT64, NO = CLT_DTYPE_COUNT;
    const promo_case cases[] = {
        {0, F32, F64, NO, 0, F64},  {0, F64, F32, NO, 0, F64},  {0, F32, I64, NO, 0, F32},
        {0, I64, F64, NO, 0, F64},  {1, F32, F64, NO, 0, F64},  {1, F64, F32, NO, 0, F64},
        {1, F64, I64, NO, 0, F64},  {2, F32, F64, NO, 0, F64},  {2, F64, F32, NO, 0, F32},
        {2, F32, F32, F64, 0, F32}, {2, F32, F64, F32, 0, F64}, {2, F64, F32, F64, 0, F32},
        {2, F64, F64, I64, 0, F64}, {3, F32, F64, NO, 0, F64},  {3, F64, F32, NO, 0, F64},
        {3, F32, F32, F64, 0, F64}, {3, F32, F64, F32, 0.1, F64},
    };
    int64_t s2[2] = {PR, PC}, s1 = PC;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const promo_case *c = &cases[ci];
        for (int red = 0; red < 2; red++) {
            double x[PN], y[PN], e[PC];
            for (int k = 0; k < PN; k++) {
                x[k] = c->x == I64 ? k - 2 : 1.3 * sin(0.9 * k + 0.2);
                y[k] = c->y == I64 ? 2 - k % 4 : c->kind >= 2 ? 0.2 + 0.1 * k : cos(1.1 * k);
            }
            for (int k = 0; k < PC; k++)
                e[k] = 0.5 + 0.75 * k;
            clt_tensor *tx = promo_tensor(dev, c->x, 2, s2, x, PN);
            clt_tensor *ty = promo_tensor(dev, c->y, 2, s2, y, PN);
            clt_tensor *te = c->extra == NO ? NULL : promo_tensor(dev, c->extra, 1, &s1, e, PC);
            if (c->x != I64)
                CHECK(clt_set_requires_grad(tx, 1));
            if (c->y != I64)
                CHECK(clt_set_requires_grad(ty, 1));
            clt_reduction rr = red ? CLT_REDUCTION_SUM : CLT_REDUCTION_MEAN;
            clt_tensor *r = NULL;
            if (c->kind == 0)
                CHECK(clt_mse_loss(tx, ty, rr, &r));
            else if (c->kind == 1)
                CHECK(clt_l1_loss(tx, ty, rr, &r));
            else if (c->kind == 2)
                CHECK(clt_binary_cross_entropy_with_logits(tx, ty, te, rr, &r));
            else {
                clt_cross_entropy_opts o = {rr, -100, c->smoothing, te};
                CHECK(clt_cross_entropy(tx, ty, &o, &r));
            }
            cr_assert_eq(clt_tensor_dtype(r), c->want, "case %zu: the loss is %s, want %s", ci,
                         clt_dtype_name(clt_tensor_dtype(r)), clt_dtype_name(c->want));
            /* float32 where any operand or the result is float32 */
            bool f32 = c->want == F32 || (c->x != F64 && c->y != F64 && c->extra != F64);
            double tol = f32 ? 2e-6 : 1e-12, want = promo_ref(c, x, y, e, red);
            double *got = rd(r);
            assert_close(got, &want, 1, tol, tol, "promoted loss");
            free(got);
            CHECK(clt_backward(r, NULL, 0));
            for (int which = 0; which < 2; which++) {
                clt_tensor *t = which ? ty : tx;
                double *v = which ? y : x;
                if ((which ? c->y : c->x) == I64)
                    continue;
                clt_tensor *g = NULL;
                CHECK(clt_grad(t, &g));
                cr_assert_eq(clt_tensor_dtype(g), clt_tensor_dtype(t),
                             "case %zu: operand %d's gradient is %s", ci, which,
                             clt_dtype_name(clt_tensor_dtype(g)));
                double *gv = rd(g), fd[PN];
                for (int k = 0; k < PN; k++) {
                    double keep = v[k], h = 1e-6;
                    v[k] = keep + h;
                    double up = promo_ref(c, x, y, e, red);
                    v[k] = keep - h;
                    double down = promo_ref(c, x, y, e, red);
                    v[k] = keep;
                    fd[k] = (up - down) / (2 * h);
                }
                assert_close(gv, fd, PN, f32 ? 1e-5 : 1e-7, f32 ? 1e-6 : 1e-8,
                             which ? "target gradient" : "input gradient");
                free(gv);
                clt_tensor_free(g);
            }
            clt_tensor_free(r);
            clt_tensor_free(tx);
            clt_tensor_free(ty);
            clt_tensor_free(te);
        }
    }
}

/* ---- errors ------------------------------------------------------------------------- */

static void expect_err(clt_status st, clt_tensor *r, clt_status want, const char *needle)
{
    cr_assert_eq(st, want, "got %s, want %s: %s", clt_status_name(st), clt_status_name(want),
                 clt_last_error());
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), needle), "message '%s' lacks '%s'", clt_last_error(),
              needle);
}

Test(loss, errors)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[2] = {3, 4}, n3 = 3, n4 = 4, c5 = 5;
    double z[20] = {0};
    int64_t ti[4] = {0, 1, 2, 3};
    int32_t t32[3] = {0, 1, 2};
    clt_tensor *x = mk(dev, CLT_FLOAT32, 2, xs, z), *t4 = mk_idx(dev, 1, &n4, ti);
    clt_tensor *t3 = mk_idx(dev, 1, &n3, ti), *w5 = mk(dev, CLT_FLOAT32, 1, &c5, z);
    clt_tensor *p35 = mk(dev, CLT_FLOAT32, 2, (int64_t[]){3, 5}, z);
    clt_tensor *p34d = mk(dev, CLT_FLOAT64, 2, xs, z), *ti32 = NULL, *xi = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, &n3, t32, &ti32));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 2, xs, (int64_t[12]){0}, &xi));

    expect_err(clt_cross_entropy(x, t4, NULL, &r), r, CLT_ERR_SHAPE_MISMATCH,
               "Expected input batch_size (3) to match target batch_size (4)");
    expect_err(clt_nll_loss(x, t4, NULL, &r), r, CLT_ERR_SHAPE_MISMATCH,
               "Expected input batch_size (3) to match target batch_size (4)");
    clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
    o.weight = w5;
    expect_err(clt_cross_entropy(x, t3, &o, &r), r, CLT_ERR_SHAPE_MISMATCH, "all 4 classes");
    expect_err(clt_cross_entropy(x, p35, NULL, &r), r, CLT_ERR_SHAPE_MISMATCH, "5 classes");
    expect_err(clt_cross_entropy(x, ti32, NULL, &r), r, CLT_ERR_DTYPE_MISMATCH, "int32");
    /* an int64 target of the logits' shape is neither indices nor
     * probabilities (torch: "Expected floating point type for target with
     * class probabilities, got Long") */
    expect_err(clt_cross_entropy(x, xi, NULL, &r), r, CLT_ERR_SHAPE_MISMATCH,
               "1-dimensional target of class indices");
    /* with class indices torch refuses a weight of another dtype; with
     * probabilities it promotes (test dtype_promotion) */
    clt_tensor *w4d = mk(dev, CLT_FLOAT64, 1, &n4, z);
    o.weight = w4d;
    expect_err(clt_cross_entropy(x, t3, &o, &r), r, CLT_ERR_DTYPE_MISMATCH,
               "weight of dtype float32 like the input, but got float64");
    expect_err(clt_nll_loss(x, t3, &o, &r), r, CLT_ERR_DTYPE_MISMATCH, "weight");
    clt_tensor_free(w4d);
    /* float labels of the shape class indices have: a dtype error, as torch's
     * "expected scalar type Long but found Float", not a probability target
     * of the wrong shape */
    clt_tensor *tf3 = mk(dev, CLT_FLOAT32, 1, &n3, z), *tf3d = mk(dev, CLT_FLOAT64, 1, &n3, z);
    expect_err(clt_cross_entropy(x, tf3, NULL, &r), r, CLT_ERR_DTYPE_MISMATCH,
               "expected target of dtype int64 (class indices), but got float32 of shape [3]");
    expect_err(clt_cross_entropy(x, tf3d, NULL, &r), r, CLT_ERR_DTYPE_MISMATCH,
               "but got float64 of shape [3]");
    clt_tensor_free(tf3);
    clt_tensor_free(tf3d);
    expect_err(clt_cross_entropy(xi, t3, NULL, &r), r, CLT_ERR_DTYPE_UNSUPPORTED,
               "clt_cross_entropy: logits must be float32 or float64, not int64; convert with "
               "clt_to_dtype first");
    o = (clt_cross_entropy_opts)CLT_CROSS_ENTROPY_DEFAULTS;
    o.reduction = (clt_reduction)7;
    expect_err(clt_cross_entropy(x, t3, &o, &r), r, CLT_ERR_INVALID_ARGUMENT, "reduction");
    expect_err(clt_mse_loss(x, x, (clt_reduction)-1, &r), r, CLT_ERR_INVALID_ARGUMENT,
               "reduction");
    o = (clt_cross_entropy_opts)CLT_CROSS_ENTROPY_DEFAULTS;
    o.label_smoothing = 1.5;
    expect_err(clt_cross_entropy(x, t3, &o, &r), r, CLT_ERR_INVALID_ARGUMENT,
               "label_smoothing must be between 0.0 and 1.0");
    o.label_smoothing = -0.1;
    expect_err(clt_cross_entropy(x, t3, &o, &r), r, CLT_ERR_INVALID_ARGUMENT,
               "label_smoothing");
    o.label_smoothing = 0.1;
    expect_err(clt_nll_loss(x, t3, &o, &r), r, CLT_ERR_INVALID_ARGUMENT, "label_smoothing");
    expect_err(clt_mse_loss(x, p35, CLT_REDUCTION_MEAN, &r), r, CLT_ERR_SHAPE_MISMATCH,
               "different to the input size");
    /* torch: "mse_cpu" not implemented for 'Long' */
    expect_err(clt_mse_loss(xi, xi, CLT_REDUCTION_MEAN, &r), r, CLT_ERR_DTYPE_UNSUPPORTED,
               "the input is int64 and the target int64: one of them must be floating");
    /* torch: "result type Float can't be cast to the desired output type Long" */
    expect_err(clt_binary_cross_entropy_with_logits(x, xi, NULL, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_DTYPE_UNSUPPORTED, "the target (int64) must be floating");
    expect_err(clt_binary_cross_entropy_with_logits(xi, x, NULL, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_DTYPE_UNSUPPORTED, "the input (int64)");
    clt_tensor *pwb = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, &n4, (uint8_t[4]){1, 1, 0, 1}, &pwb));
    expect_err(clt_binary_cross_entropy_with_logits(x, p34d, pwb, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_DTYPE_UNSUPPORTED, "pos_weight must not be bool");
    clt_tensor_free(pwb);
    expect_err(clt_binary_cross_entropy_with_logits(x, x, w5, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_SHAPE_MISMATCH, "pos_weight");
    expect_err(clt_cross_entropy(NULL, t3, NULL, &r), r, CLT_ERR_NULL_ARGUMENT, "NULL");
    clt_tensor *arr[] = {x, t4, t3, w5, p35, p34d, ti32, xi};
    for (size_t k = 0; k < sizeof arr / sizeof *arr; k++)
        clt_tensor_free(arr[k]);
}

Test(loss, out_of_range_target_reported_at_next_read)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[2] = {3, 4}, n = 3;
    double x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    int64_t bad[3] = {0, 7, -3};
    for (int nll = 0; nll < 2; nll++) {
        clt_tensor *tx = mk(dev, CLT_FLOAT32, 2, xs, x), *tt = mk_idx(dev, 1, &n, bad);
        clt_tensor *r = NULL, *g = NULL;
        CHECK(clt_set_requires_grad(tx, 1));
        CHECK(ce_call(nll, tx, tt, NULL, &r)); /* no host wait: the call succeeds */
        double v;
        clt_status st = clt_tensor_item(r, &v);
        cr_assert_eq(st, CLT_ERR_INDEX_OUT_OF_RANGE, "%s: %s", clt_status_name(st),
                     clt_last_error());
        cr_assert(strstr(clt_last_error(), "Target 7 is out of bounds"), "%s",
                  clt_last_error());
        cr_assert(strstr(clt_last_error(), nll ? "clt_nll_loss" : "clt_cross_entropy"), "%s",
                  clt_last_error());
        CHECK(clt_tensor_item(r, &v)); /* the record was reset */
        /* the bad rows were skipped: their gradient is 0 */
        CHECK(clt_backward(r, NULL, 0));
        (void)clt_device_synchronize(dev);
        CHECK(clt_grad(tx, &g));
        double *got = rd(g);
        for (int k = 4; k < 12; k++)
            cr_assert_eq(got[k], 0.0, "element %d: %g", k, got[k]);
        cr_assert_neq(got[0], 0.0);
        free(got);
        clt_tensor_free(g);
        clt_tensor_free(r);
        clt_tensor_free(tx);
        clt_tensor_free(tt);
    }
}

/* ---- determinism across devices ---------------------------------------------------- */

static void run_on(clt_device *dev, float *loss, float *grad, float *bce, float *big_loss)
{
    enum { M = 9001 };
    static double big[M], zero[M];
    for (int k = 0; k < M; k++)
        big[k] = sin(0.013 * k * k) * (1 + k % 13);
    int64_t m = M;
    clt_tensor *ta = mk(dev, CLT_FLOAT32, 1, &m, big), *tz = mk(dev, CLT_FLOAT32, 1, &m, zero);
    clt_tensor *tl = NULL;
    CHECK(clt_mse_loss(ta, tz, CLT_REDUCTION_MEAN, &tl)); /* two-stage sum */
    CHECK(clt_tensor_read(tl, big_loss, sizeof *big_loss));
    clt_tensor_free(tl);
    clt_tensor_free(ta);
    clt_tensor_free(tz);

    enum { N = 64, C = 37 };
    static double x[N * C], p[N * C];
    int64_t t[N], xs[2] = {N, C}, n = N;
    for (int k = 0; k < N * C; k++) {
        x[k] = sin(0.37 * k) * (k % 5 == 0 ? 30 : 3);
        p[k] = 0.5 + 0.5 * cos(0.11 * k);
    }
    for (int i = 0; i < N; i++)
        t[i] = i % 9 == 0 ? -100 : (i * 7) % C;
    clt_tensor *tx = mk(dev, CLT_FLOAT32, 2, xs, x), *tt = mk_idx(dev, 1, &n, t);
    clt_tensor *tp = mk(dev, CLT_FLOAT32, 2, xs, p), *r = NULL, *g = NULL, *b = NULL;
    CHECK(clt_set_requires_grad(tx, 1));
    clt_cross_entropy_opts o = {CLT_REDUCTION_MEAN, -100, 0.1, NULL};
    CHECK(clt_cross_entropy(tx, tt, &o, &r));
    CHECK(clt_backward(r, NULL, 0));
    CHECK(clt_tensor_read(r, loss, sizeof *loss));
    CHECK(clt_grad(tx, &g));
    CHECK(clt_tensor_read(g, grad, sizeof(float) * N * C));
    CHECK(clt_binary_cross_entropy_with_logits(tx, tp, NULL, CLT_REDUCTION_MEAN, &b));
    CHECK(clt_tensor_read(b, bce, sizeof *bce));
    clt_tensor_free(r);
    clt_tensor_free(g);
    clt_tensor_free(b);
    clt_tensor_free(tx);
    clt_tensor_free(tt);
    clt_tensor_free(tp);
}

Test(loss, same_bits_on_two_devices)
{
    clt_device *d0 = get_device("cpu:0"), *d1 = second_device(d0);
    static float g0[64 * 37], g1[64 * 37];
    float l0, l1, b0, b1, m0, m1;
    run_on(d0, &l0, g0, &b0, &m0);
    run_on(d1, &l1, g1, &b1, &m1);
    cr_assert(memcmp(&m0, &m1, sizeof m0) == 0, "long mse %.9g vs %.9g", m0, m1);
    cr_assert(memcmp(&l0, &l1, sizeof l0) == 0, "loss %.9g vs %.9g", l0, l1);
    cr_assert(memcmp(&b0, &b1, sizeof b0) == 0, "bce %.9g vs %.9g", b0, b1);
    cr_assert(memcmp(g0, g1, sizeof g0) == 0, "gradients differ");
    float l2, b2, m2;
    run_on(d0, &l2, g1, &b2, &m2); /* and run to run */
    cr_assert(memcmp(&l0, &l2, sizeof l0) == 0 && memcmp(g0, g1, sizeof g0) == 0);
}

/* ---- smooth_l1, huber, binary cross entropy (probabilities), kl_div ----------------- */

enum { MK_SL1, MK_HUBER, MK_BCE, MK_KL };

/* One call: kind, its scalar (beta, delta, log_target) and for binary cross
 * entropy a weight (w: NULL or broadcast to the input's shape). */
static clt_status more_call(int kind, double prm, const clt_tensor *x, const clt_tensor *y,
                            const clt_tensor *w, clt_reduction red, clt_tensor **out)
{
    switch (kind) {
    case MK_SL1: return clt_smooth_l1_loss(x, y, red, prm, out);
    case MK_HUBER: return clt_huber_loss(x, y, red, prm, out);
    case MK_BCE: return clt_binary_cross_entropy(x, y, w, red, out);
    default: return clt_kl_div(x, y, red, (int)prm, out);
    }
}

/* The element's loss in double, and its derivatives in x and y (away from
 * the kinks), as PyTorch defines them. */
static double ref_more(int kind, double prm, double x, double y, double w, double *dx,
                       double *dy)
{
    double d = x - y, z = fabs(d), l;
    switch (kind) {
    case MK_SL1:
        l = z < prm ? 0.5 * z * z / prm : z - 0.5 * prm;
        *dx = d <= -prm ? -1 : d >= prm ? 1 : d / prm;
        *dy = -*dx;
        return l;
    case MK_HUBER:
        l = z < prm ? 0.5 * z * z : prm * (z - 0.5 * prm);
        *dx = d <= -prm ? -prm : d >= prm ? prm : d;
        *dy = -*dx;
        return l;
    case MK_BCE:
        *dx = w * d / fmax((1 - x) * x, (double)1e-12f);
        *dy = -w * log(x / (1 - x));
        return -w * (y * fmax(log(x), -100) + (1 - y) * fmax(log(1 - x), -100));
    default:
        if (prm != 0) {
            *dx = -exp(y);
            *dy = exp(y) * (y - x + 1);
            return exp(y) * (y - x);
        }
        *dx = -y;
        *dy = log(y) + 1 - x;
        return (y == 0 ? 0 : y * log(y)) - y * x;
    }
}

enum { MR = 3, MC = 4, MN = MR * MC };

/* Inputs for each kind: differences on both sides of beta and delta
 * (never on them), probabilities in (0, 1), log-probabilities and a
 * probability target with a 0 (kl_div; log_target uses it as logs). */
static void more_data(int kind, double *x, double *y)
{
    for (int k = 0; k < MN; k++) {
        double s = sin(0.9 * k + 0.3), c = cos(1.3 * k + 0.1);
        if (kind == MK_BCE) {
            x[k] = 0.5 + 0.45 * s;
            y[k] = 0.5 + 0.5 * c;
        } else if (kind == MK_KL) {
            x[k] = -1.5 + 1.2 * s;
            y[k] = k == 5 ? 0 : 0.55 + 0.45 * c;
        } else {
            x[k] = 2.7 * s;
            y[k] = 0.9 * c;
        }
    }
}

static const struct more_param {
    int kind;
    double prm;
    int weight; /* binary cross entropy: 0 none, 1 [MC], 2 [MR, 1] */
} more_params[] = {
    {MK_SL1, 1.0, 0},   {MK_SL1, 0.5, 0},   {MK_SL1, 0.0, 0}, {MK_HUBER, 1.0, 0},
    {MK_HUBER, 2.5, 0}, {MK_BCE, 0, 0},     {MK_BCE, 0, 1},   {MK_BCE, 0, 2},
    {MK_KL, 0, 0},      {MK_KL, 1, 0},
};

static const double MW[MC] = {0.5, 2.0, 1.0, 3.0}, MWR[MR] = {1.5, 0.25, 2.0};

static double more_weight(const struct more_param *p, int k)
{
    return p->weight == 1 ? MW[k % MC] : p->weight == 2 ? MWR[k / MC] : 1;
}

/* Values of every reduction (batchmean for kl_div), and both gradients
 * after a backward of the reduced loss (a sum of the rows for NONE),
 * against ref_more, in float32 and float64. */
Test(loss, more_losses_values_and_gradients)
{
    clt_device *dev = get_device("cpu");
    int64_t s2[2] = {MR, MC}, sc = MC, sr[2] = {MR, 1};
    for (int di = 0; di < 2; di++) {
        clt_dtype dt = di ? CLT_FLOAT32 : CLT_FLOAT64;
        double tol = di ? 3e-6 : 1e-12;
        for (size_t pi = 0; pi < sizeof more_params / sizeof *more_params; pi++) {
            const struct more_param *p = &more_params[pi];
            double x[MN], y[MN], rows[MN], gx[MN], gy[MN], sum = 0;
            more_data(p->kind, x, y);
            for (int k = 0; k < MN; k++) {
                if (di) { /* what the float32 tensors hold */
                    x[k] = (float)x[k];
                    y[k] = (float)y[k];
                }
                rows[k] = ref_more(p->kind, p->prm, x[k], y[k], more_weight(p, k), &gx[k],
                                   &gy[k]);
                sum += rows[k];
            }
            clt_tensor *w = p->weight == 1   ? mk(dev, dt, 1, &sc, MW)
                            : p->weight == 2 ? mk(dev, CLT_FLOAT64, 2, sr, MWR)
                                             : NULL;
            for (int red = 0; red < (p->kind == MK_KL ? 4 : 3); red++) {
                clt_tensor *tx = mk(dev, dt, 2, s2, x), *ty = mk(dev, dt, 2, s2, y);
                clt_tensor *r = NULL, *l = NULL, *g = NULL;
                CHECK(clt_set_requires_grad(tx, 1));
                CHECK(clt_set_requires_grad(ty, 1));
                CHECK(more_call(p->kind, p->prm, tx, ty, w, (clt_reduction)red, &r));
                cr_assert_eq(clt_tensor_dtype(r), dt);
                double div = red == CLT_REDUCTION_MEAN ? MN : red == CLT_REDUCTION_BATCHMEAN ? MR
                                                                                             : 1;
                double want = sum / div, *got = rd(r);
                char what[64];
                snprintf(what, sizeof what, "case %zu %s reduction %d", pi,
                         clt_dtype_name(dt), red);
                if (red == CLT_REDUCTION_NONE) {
                    assert_shape(r, 2, s2);
                    assert_close(got, rows, MN, tol, tol, what);
                    CHECK(clt_sum(r, &l));
                } else {
                    cr_assert_eq(clt_tensor_ndim(r), 0);
                    assert_close(got, &want, 1, tol, tol, what);
                }
                free(got);
                CHECK(clt_backward(l ? l : r, NULL, 0));
                for (int which = 0; which < 2; which++) {
                    double ref_g[MN];
                    for (int k = 0; k < MN; k++)
                        ref_g[k] = (which ? gy[k] : gx[k]) / div;
                    CHECK(clt_grad(which ? ty : tx, &g));
                    cr_assert_eq(clt_tensor_dtype(g), dt);
                    got = rd(g);
                    /* kl_div's target gradient at a 0 target is NaN, as torch's */
                    if (p->kind == MK_KL && p->prm == 0 && which) {
                        cr_assert(isnan(got[5]), "%s: kl_div's target gradient at 0: %g", what,
                                  got[5]);
                        got[5] = ref_g[5] = 0;
                    }
                    assert_close(got, ref_g, MN, di ? 1e-5 : 1e-12, di ? 1e-6 : 1e-12,
                                 which ? "target gradient" : "input gradient");
                    free(got);
                    clt_tensor_free(g);
                }
                clt_tensor_free(l);
                clt_tensor_free(r);
                clt_tensor_free(tx);
                clt_tensor_free(ty);
            }
            clt_tensor_free(w);
        }
    }
}

typedef struct more_ctx {
    int kind;
    double prm;
    clt_reduction red;
    int with_w;
} more_ctx;

static clt_status f_more(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const more_ctx *c = p;
    return more_call(c->kind, c->prm, in[0], in[1], c->with_w ? in[2] : NULL, c->red, out);
}

/* Both gradients against float64 central differences, each reduction. */
Test(loss, gradcheck_more_losses)
{
    clt_device *dev = get_device("cpu");
    for (size_t pi = 0; pi < sizeof more_params / sizeof *more_params; pi++) {
        const struct more_param *p = &more_params[pi];
        double x[MN], y[MN];
        more_data(p->kind, x, y);
        if (p->kind == MK_KL)
            y[5] = 0.3; /* the target's gradient at 0 is NaN */
        gc_in ins[3] = {{2, {MR, MC}, x, 1}, {2, {MR, MC}, y, 1}, {0}};
        if (p->weight == 1)
            ins[2] = (gc_in){1, {MC}, MW, 0};
        else
            ins[2] = (gc_in){2, {MR, 1}, MWR, 0};
        for (int red = 0; red < (p->kind == MK_KL ? 4 : 3); red++) {
            more_ctx c = {p->kind, p->prm, (clt_reduction)red, p->weight != 0};
            gradcheck(dev, f_more, &c, p->weight ? 3 : 2, ins);
        }
    }
}

/* PyTorch 1.13's values at the edges, printed by torch:
 * binary_cross_entropy's logs clamped at -100 (x = 0 or 1 against the
 * other label: 100), its input gradient's denominator at least 1e-12f,
 * its target gradient -logit(x) (infinite at 0 and 1), 0 and -0.0 where x
 * equals y at 0 and 1; smooth_l1 with beta 0 is -1 at x == y for both
 * operands (its backward's d <= -beta); kl_div is 0 at a zero target with
 * a finite input, NaN with -inf or a negative or NaN target, and its
 * target gradient NaN at 0. */
Test(loss, more_losses_torch_edge_values)
{
    clt_device *dev = get_device("cpu");
    int64_t n6 = 6, n3 = 3, n5 = 5;
    const double bx[6] = {0, 1, 0.5, 1e-50, 0, 1}, by[6] = {1, 0, 1, 1, 0, 1};
    const double b_loss[6] = {100, 100, 0.6931471805599453, 100, 0.0, -0.0};
    const double b_gx[6] = {-1000000003995.8029, 1000000003995.8029, -2.0, -1000000003995.8029,
                            0.0, 0.0};
    const double b_gy[6] = {INFINITY, -INFINITY, 0.0, 115.12925464970229, INFINITY, -INFINITY};
    /* float32: 1e-30 is not clamped (log is -69.08) */
    const double fx[6] = {0, 1, 0.5, 1e-30, 0, 1};
    const double f_loss[6] = {100, 100, 0.6931471824645996, 69.07755279541016, 0.0, -0.0};
    const double f_gx[6] = {-999999995904.0, 999999995904.0, -2.0, -999999995904.0, 0.0, 0.0};
    const double f_gy[6] = {INFINITY, -INFINITY, 0.0, 69.07755279541016, INFINITY, -INFINITY};
    for (int di = 0; di < 2; di++) {
        clt_dtype dt = di ? CLT_FLOAT32 : CLT_FLOAT64;
        clt_tensor *tx = mk(dev, dt, 1, &n6, di ? fx : bx), *ty = mk(dev, dt, 1, &n6, by);
        clt_tensor *r = NULL, *l = NULL, *g = NULL;
        CHECK(clt_set_requires_grad(tx, 1));
        CHECK(clt_set_requires_grad(ty, 1));
        CHECK(clt_binary_cross_entropy(tx, ty, NULL, CLT_REDUCTION_NONE, &r));
        double *got = rd(r);
        for (int k = 0; k < 6; k++)
            cr_assert(got[k] == (di ? f_loss : b_loss)[k] &&
                          !!signbit(got[k]) == !!signbit((di ? f_loss : b_loss)[k]),
                      "%s bce(%g, %g): %.17g", clt_dtype_name(dt), bx[k], by[k], got[k]);
        free(got);
        CHECK(clt_sum(r, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(tx, &g));
        got = rd(g);
        assert_close(got, di ? f_gx : b_gx, 6, di ? 1e-7 : 1e-15, 0, "bce input gradient");
        free(got);
        clt_tensor_free(g);
        CHECK(clt_grad(ty, &g));
        got = rd(g);
        assert_close(got, di ? f_gy : b_gy, 6, di ? 1e-7 : 1e-15, 0, "bce target gradient");
        free(got);
        clt_tensor_free(g);
        clt_tensor_free(l);
        clt_tensor_free(r);
        clt_tensor_free(tx);
        clt_tensor_free(ty);
    }

    const double sx[3] = {0, 2, -1}, sy[3] = {0, 2, 1};
    const double s_gx[3] = {-1, -1, -1}, s_gy[3] = {-1, -1, 1}, s_loss = 2;
    clt_tensor *tx = mk(dev, CLT_FLOAT64, 1, &n3, sx), *ty = mk(dev, CLT_FLOAT64, 1, &n3, sy);
    clt_tensor *r = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_set_requires_grad(ty, 1));
    CHECK(clt_smooth_l1_loss(tx, ty, CLT_REDUCTION_SUM, 0.0, &r));
    double *got = rd(r);
    assert_close(got, &s_loss, 1, 0, 0, "smooth_l1 beta 0");
    free(got);
    CHECK(clt_backward(r, NULL, 0));
    CHECK(clt_grad(tx, &g));
    got = rd(g);
    assert_close(got, s_gx, 3, 0, 0, "smooth_l1 beta 0 input gradient");
    free(got);
    clt_tensor_free(g);
    CHECK(clt_grad(ty, &g));
    got = rd(g);
    assert_close(got, s_gy, 3, 0, 0, "smooth_l1 beta 0 target gradient");
    free(got);
    clt_tensor_free(g);
    clt_tensor_free(r);
    clt_tensor_free(tx);
    clt_tensor_free(ty);

    const double kx[5] = {-1, -INFINITY, 0.5, 2, -0.5}, ky[5] = {0, 0, -1, NAN, 0.25};
    const double k_loss[5] = {0.0, NAN, NAN, NAN, -0.22157359027997264};
    const double k_gx[5] = {-0.0, -0.0, 1.0, NAN, -0.25};
    const double k_gy[5] = {NAN, NAN, NAN, NAN, 0.11370563888010943};
    tx = mk(dev, CLT_FLOAT64, 1, &n5, kx);
    ty = mk(dev, CLT_FLOAT64, 1, &n5, ky);
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_set_requires_grad(ty, 1));
    clt_tensor *l = NULL;
    CHECK(clt_kl_div(tx, ty, CLT_REDUCTION_NONE, 0, &r));
    got = rd(r);
    assert_close(got, k_loss, 5, 1e-15, 0, "kl_div");
    free(got);
    CHECK(clt_sum(r, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(tx, &g));
    got = rd(g);
    assert_close(got, k_gx, 5, 1e-15, 0, "kl_div input gradient");
    cr_assert(signbit(got[0]) && signbit(got[1]), "-0.0 at a zero target: %g %g", got[0],
              got[1]);
    free(got);
    clt_tensor_free(g);
    CHECK(clt_grad(ty, &g));
    got = rd(g);
    assert_close(got, k_gy, 5, 1e-15, 0, "kl_div target gradient");
    free(got);
    clt_tensor_free(g);
    clt_tensor_free(l);
    clt_tensor_free(r);
    clt_tensor_free(tx);
    clt_tensor_free(ty);

    /* batchmean of a 0-d input is the sum; of an empty batch NaN, as torch */
    double a = -0.5, b = 0.25, want = 0.25 * log(0.25) + 0.125, v;
    tx = mk(dev, CLT_FLOAT64, 0, NULL, &a);
    ty = mk(dev, CLT_FLOAT64, 0, NULL, &b);
    CHECK(clt_kl_div(tx, ty, CLT_REDUCTION_BATCHMEAN, 0, &r));
    CHECK(clt_tensor_item(r, &v));
    cr_assert(close_enough(v, want, 1e-15, 0), "batchmean 0-d: %.17g, want %.17g", v, want);
    clt_tensor_free(r);
    clt_tensor_free(tx);
    clt_tensor_free(ty);
    int64_t e2[2] = {0, 3};
    tx = mk(dev, CLT_FLOAT32, 2, e2, &a);
    ty = mk(dev, CLT_FLOAT32, 2, e2, &b);
    CHECK(clt_kl_div(tx, ty, CLT_REDUCTION_BATCHMEAN, 0, &r));
    CHECK(clt_tensor_item(r, &v));
    cr_assert(isnan(v), "batchmean of no rows: %g", v);
    clt_tensor_free(r);
    clt_tensor_free(tx);
    clt_tensor_free(ty);
}

/* Result and gradient dtypes as torch 1.13 gives them (checked with torch):
 * smooth_l1 and kl_div promote, huber keeps the input's dtype (computing in
 * the promoted one: huber(float32 1.0000001, float64 0.1) is torch's
 * 0.40500012040138245, the float64 loss rounded once), binary cross
 * entropy's weight takes the input's dtype. */
Test(loss, more_losses_dtypes)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype F32 = CLT_FLOAT32, F64 = CLT_FLOAT64, I64 = CLT_INT64, BL = CLT_BOOL;
    const struct {
        int kind;
        clt_dtype x, y, want;
    } cases[] = {
        {MK_SL1, F32, F64, F64},   {MK_SL1, F64, F32, F64},   {MK_SL1, F32, I64, F32},
        {MK_SL1, I64, F32, F32},   {MK_SL1, F32, BL, F32},    {MK_HUBER, F32, F64, F32},
        {MK_HUBER, F64, F32, F64}, {MK_HUBER, F32, I64, F32}, {MK_HUBER, F64, BL, F64},
        {MK_KL, F32, F64, F64},    {MK_KL, F64, F32, F64},
    };
    int64_t n = 4;
    const double xv[4] = {0.5, -1.25, 2.0, 0.0};
    const int64_t iv[4] = {1, 0, 2, -1};
    const uint8_t bv[4] = {1, 0, 1, 1};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        clt_tensor *t[2] = {NULL, NULL}, *r = NULL, *g = NULL;
        clt_dtype dts[2] = {cases[c].x, cases[c].y};
        for (int i = 0; i < 2; i++) {
            if (dts[i] == I64)
                t[i] = mk_idx(dev, 1, &n, iv);
            else if (dts[i] == BL)
                CHECK(clt_tensor_from_host(dev, BL, 1, &n, bv, &t[i]));
            else
                t[i] = mk(dev, dts[i], 1, &n, xv);
            if (dts[i] == F32 || dts[i] == F64)
                CHECK(clt_set_requires_grad(t[i], 1));
        }
        CHECK(more_call(cases[c].kind, 1.0, t[0], t[1], NULL,
                        CLT_REDUCTION_MEAN, &r));
        cr_assert_eq(clt_tensor_dtype(r), cases[c].want, "case %zu: %s", c,
                     clt_dtype_name(clt_tensor_dtype(r)));
        CHECK(clt_backward(r, NULL, 0));
        for (int i = 0; i < 2; i++) {
            if (dts[i] != F32 && dts[i] != F64)
                continue;
            CHECK(clt_grad(t[i], &g));
            cr_assert_eq(clt_tensor_dtype(g), dts[i], "case %zu operand %d", c, i);
            clt_tensor_free(g);
        }
        clt_tensor_free(r);
        clt_tensor_free(t[0]);
        clt_tensor_free(t[1]);
    }
    float hx = 1.0000001f;
    double hy = 0.1, v;
    int64_t one = 1;
    clt_tensor *a = NULL, *b = mk(dev, F64, 1, &one, &hy), *r = NULL;
    CHECK(clt_tensor_from_host(dev, F32, 1, &one, &hx, &a));
    CHECK(clt_huber_loss(a, b, CLT_REDUCTION_MEAN, 1.0, &r));
    CHECK(clt_tensor_item(r, &v));
    cr_assert_eq(v, 0.40500012040138245, "huber mixed: %.17g", v);
    clt_tensor_free(r);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(loss, more_losses_errors)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {2, 3}, s32[2] = {3, 2}, n4 = 4, w3[3] = {2, 2, 3};
    double h[12] = {0.5, 0.25, 0.75, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    const int64_t iv[6] = {0, 1, 0, 1, 1, 0};
    clt_tensor *x = mk(dev, CLT_FLOAT32, 2, s, h), *xd = mk(dev, CLT_FLOAT64, 2, s, h);
    clt_tensor *xt = mk(dev, CLT_FLOAT32, 2, s32, h), *xi = mk_idx(dev, 2, s, iv);
    clt_tensor *w4 = mk(dev, CLT_FLOAT32, 1, &n4, h), *wb = mk(dev, CLT_FLOAT32, 3, w3, h);
    clt_tensor *r = NULL;
    expect_err(clt_smooth_l1_loss(x, x, CLT_REDUCTION_MEAN, -1, &r), r,
               CLT_ERR_INVALID_ARGUMENT, "does not support negative values for beta");
    expect_err(clt_smooth_l1_loss(x, x, CLT_REDUCTION_MEAN, NAN, &r), r,
               CLT_ERR_INVALID_ARGUMENT, "beta");
    expect_err(clt_huber_loss(x, x, CLT_REDUCTION_MEAN, 0, &r), r, CLT_ERR_INVALID_ARGUMENT,
               "does not support non-positive values for delta");
    expect_err(clt_huber_loss(x, x, CLT_REDUCTION_MEAN, -2, &r), r, CLT_ERR_INVALID_ARGUMENT,
               "delta");
    expect_err(clt_smooth_l1_loss(xi, xi, CLT_REDUCTION_MEAN, 1, &r), r,
               CLT_ERR_DTYPE_UNSUPPORTED, "one of them must be floating");
    /* torch: "result type Float can't be cast to the desired output type Long" */
    expect_err(clt_huber_loss(xi, x, CLT_REDUCTION_MEAN, 1, &r), r, CLT_ERR_DTYPE_UNSUPPORTED,
               "clt_huber_loss: the input is int64");
    expect_err(clt_smooth_l1_loss(x, xt, CLT_REDUCTION_SUM, 1, &r), r, CLT_ERR_SHAPE_MISMATCH,
               "different to the input size");
    /* torch: "Found dtype Double but expected Float" */
    expect_err(clt_binary_cross_entropy(x, xd, NULL, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_DTYPE_MISMATCH, "Found dtype float64 but expected float32");
    expect_err(clt_binary_cross_entropy(xi, xi, NULL, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_DTYPE_UNSUPPORTED, "int64");
    expect_err(clt_binary_cross_entropy(x, x, w4, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_SHAPE_MISMATCH, "weight of shape [4] does not broadcast");
    expect_err(clt_binary_cross_entropy(x, x, wb, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_SHAPE_MISMATCH, "[2, 2, 3]");
    expect_err(clt_binary_cross_entropy(x, xt, NULL, CLT_REDUCTION_MEAN, &r), r,
               CLT_ERR_SHAPE_MISMATCH, "different to the input size");
    /* batchmean is kl_div's alone */
    expect_err(clt_binary_cross_entropy(x, x, NULL, CLT_REDUCTION_BATCHMEAN, &r), r,
               CLT_ERR_INVALID_ARGUMENT, "reduction");
    expect_err(clt_huber_loss(x, x, CLT_REDUCTION_BATCHMEAN, 1, &r), r,
               CLT_ERR_INVALID_ARGUMENT, "reduction");
    expect_err(clt_kl_div(x, x, (clt_reduction)4, 0, &r), r, CLT_ERR_INVALID_ARGUMENT,
               "CLT_REDUCTION_BATCHMEAN");
    expect_err(clt_kl_div(x, xi, CLT_REDUCTION_SUM, 0, &r), r, CLT_ERR_DTYPE_UNSUPPORTED,
               "Integral inputs not supported");
    expect_err(clt_kl_div(NULL, x, CLT_REDUCTION_SUM, 0, &r), r, CLT_ERR_NULL_ARGUMENT,
               "clt_kl_div");
    expect_err(clt_binary_cross_entropy(x, NULL, NULL, CLT_REDUCTION_SUM, &r), r,
               CLT_ERR_NULL_ARGUMENT, "clt_binary_cross_entropy");
    clt_tensor *arr[] = {x, xd, xt, xi, w4, wb};
    for (size_t k = 0; k < sizeof arr / sizeof *arr; k++)
        clt_tensor_free(arr[k]);
}

/* Probabilities outside [0, 1] (and NaN) are found on the device, as torch's
 * "all elements of input should be between 0 and 1": the call succeeds,
 * the next read fails once with CLT_ERR_INVALID_ARGUMENT and the message
 * names the element, and the reads after it succeed. */
Test(loss, bce_input_outside_0_1_reported_at_next_read)
{
    clt_device *dev = get_device("cpu");
    const double bad[3] = {1.5, -0.1, NAN};
    int64_t n = 4;
    for (int k = 0; k < 3; k++) {
        double x[4] = {0.5, 0.25, bad[k], 1.0}, y[4] = {1, 0, 1, 1}, v;
        clt_tensor *tx = mk(dev, CLT_FLOAT32, 1, &n, x), *ty = mk(dev, CLT_FLOAT32, 1, &n, y);
        clt_tensor *r = NULL;
        CHECK(clt_binary_cross_entropy(tx, ty, NULL, CLT_REDUCTION_MEAN, &r));
        clt_status st = clt_tensor_item(r, &v);
        cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%g: %s: %s", bad[k], clt_status_name(st),
                     clt_last_error());
        cr_assert(strstr(clt_last_error(), "clt_binary_cross_entropy: all elements of input "
                                           "should be between 0 and 1 (element 2 of 4 is not)"),
                  "%s", clt_last_error());
        CHECK(clt_tensor_item(r, &v)); /* the record was reset */
        cr_assert(isnan(v), "the loss of a bad element is NaN: %g", v);
        clt_tensor_free(r);
        clt_tensor_free(tx);
        clt_tensor_free(ty);
    }
}

/* The new losses' means of 9001 values (a two-stage sum) and gradients are
 * the same bits on two devices. */
static void run_more_on(clt_device *dev, float *loss, float *grad)
{
    enum { M = 9001 };
    static double x[M], y[M], p[M];
    for (int k = 0; k < M; k++) {
        x[k] = sin(0.013 * k * k) * (1 + k % 13);
        y[k] = cos(0.7 * k);
        p[k] = 0.5 + 0.49 * sin(0.31 * k);
    }
    int64_t m = M;
    clt_tensor *tx = mk(dev, CLT_FLOAT32, 1, &m, x), *ty = mk(dev, CLT_FLOAT32, 1, &m, y);
    clt_tensor *tp = mk(dev, CLT_FLOAT32, 1, &m, p);
    CHECK(clt_set_requires_grad(tx, 1));
    for (int kind = 0; kind < 4; kind++) {
        clt_tensor *r = NULL, *g = NULL, *in = kind == MK_BCE ? tp : tx;
        if (kind == MK_BCE)
            CHECK(clt_set_requires_grad(tp, 1));
        CHECK(more_call(kind, kind == MK_KL ? 1 : 0.75, in, kind == MK_BCE ? tp : ty, NULL,
                        CLT_REDUCTION_MEAN, &r));
        CHECK(clt_backward(r, NULL, 0));
        CHECK(clt_tensor_read(r, &loss[kind], sizeof *loss));
        CHECK(clt_grad(in, &g));
        CHECK(clt_tensor_read(g, grad + (size_t)kind * M, sizeof(float) * M));
        CHECK(clt_zero_grad(in, 1));
        clt_tensor_free(g);
        clt_tensor_free(r);
    }
    clt_tensor_free(tx);
    clt_tensor_free(ty);
    clt_tensor_free(tp);
}

Test(loss, more_losses_same_bits_on_two_devices)
{
    clt_device *d0 = get_device("cpu:0"), *d1 = second_device(d0);
    static float g0[4 * 9001], g1[4 * 9001];
    float l0[4], l1[4];
    run_more_on(d0, l0, g0);
    run_more_on(d1, l1, g1);
    for (int k = 0; k < 4; k++)
        cr_assert(memcmp(&l0[k], &l1[k], sizeof *l0) == 0, "loss %d: %.9g vs %.9g", k, l0[k],
                  l1[k]);
    cr_assert(memcmp(g0, g1, sizeof g0) == 0, "gradients differ");
}

/* A weight (cross_entropy's and nll_loss's class weight, binary cross
 * entropy's weight, the logits form's pos_weight) that requires grad is
 * refused while grad mode is on, before anything is computed, as torch
 * 1.13 refuses it ("not differentiable with respect to argument
 * 'weight'"); in no-grad mode, or detached, it is taken and the loss has
 * the value of the same weight without grad. */
Test(loss, weight_requiring_grad_is_refused)
{
    clt_device *dev = get_device("cpu");
    float xv[4] = {0.3f, 0.6f, -1.0f, 2.0f}, pv[4] = {0.3f, 0.6f, 0.1f, 0.9f};
    float tv[4] = {0, 1, 1, 0}, wv[2] = {1.0f, 2.5f};
    int64_t cls[2] = {1, 0};
    clt_tensor *x, *p, *t, *w, *wd, *c, *xg;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, xv, &xg));
    CHECK(clt_set_requires_grad(xg, 1));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, pv, &p));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, (int64_t[]){2, 2}, tv, &t));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){2}, wv, &w));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){2}, cls, &c));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, (int64_t[]){2}, wv, &wd));
    CHECK(clt_set_requires_grad(w, 1));
    static const char *const fns[] = {"clt_cross_entropy", "clt_nll_loss",
                                      "clt_binary_cross_entropy",
                                      "clt_binary_cross_entropy_with_logits"};
    for (int k = 0; k < 4; k++) {
        for (int mode = 0; mode < 3; mode++) { /* 0 grad on, 1 no-grad, 2 detached weight */
            const clt_tensor *wk = mode == 2 ? wd : w;
            const clt_tensor *in = k == 2 ? p : mode == 0 ? xg : x;
            clt_cross_entropy_opts o = CLT_CROSS_ENTROPY_DEFAULTS;
            o.weight = wk;
            int was = clt_is_grad_enabled();
            clt_set_grad_enabled(mode != 1);
            clt_tensor *l = (clt_tensor *)0x1, *ref = NULL;
            clt_status st = k == 0   ? clt_cross_entropy(in, c, &o, &l)
                            : k == 1 ? clt_nll_loss(in, c, &o, &l)
                            : k == 2 ? clt_binary_cross_entropy(in, t, wk, CLT_REDUCTION_SUM, &l)
                                     : clt_binary_cross_entropy_with_logits(
                                           in, t, wk, CLT_REDUCTION_SUM, &l);
            clt_set_grad_enabled(was);
            if (mode == 0) {
                cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", fns[k], clt_last_error());
                cr_assert_null(l);
                char want[160];
                snprintf(want, sizeof want,
                         "%s: the loss is not differentiable with respect to argument '%s'",
                         fns[k], k == 3 ? "pos_weight" : "weight");
                cr_assert(strstr(clt_last_error(), want), "%s", clt_last_error());
                continue;
            }
            cr_assert_eq(st, CLT_OK, "%s mode %d: %s", fns[k], mode, clt_last_error());
            /* the same value as with the weight's values and no grad */
            o.weight = wd;
            CHECK(k == 0   ? clt_cross_entropy(x, c, &o, &ref)
                  : k == 1 ? clt_nll_loss(x, c, &o, &ref)
                  : k == 2 ? clt_binary_cross_entropy(p, t, wd, CLT_REDUCTION_SUM, &ref)
                           : clt_binary_cross_entropy_with_logits(x, t, wd, CLT_REDUCTION_SUM,
                                                                  &ref));
            float a, b;
            CHECK(clt_tensor_read(l, &a, sizeof a));
            CHECK(clt_tensor_read(ref, &b, sizeof b));
            cr_assert(a == b && isfinite(a), "%s mode %d: %g vs %g", fns[k], mode, a, b);
            clt_tensor_free(ref);
            clt_tensor_free(l);
        }
    }
    clt_tensor *all[] = {x, xg, p, t, w, wd, c};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}
