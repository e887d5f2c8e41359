/* test_loss_more.c: the losses of loss.h's second part (margin ranking,
 * hinge and cosine embedding, soft and multi-label margins, multi margin,
 * triplet, Poisson and Gaussian NLL) and pairwise_distance and cdist
 * against host references in double: every reduction, weights, margins at
 * the kink, var's shapes and clamp, cdist's matmul path; gradients by
 * finite differences in float64; torch's refusals. */
#include <stdio.h>

#include "gradcheck.h"

#define NR 3 /* reductions: MEAN, SUM, NONE */

static clt_tensor *f64(clt_device *dev, int ndim, const int64_t *shape, const double *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, ndim, shape, v, &t));
    return t;
}

static clt_tensor *i64(clt_device *dev, int ndim, const int64_t *shape, const int64_t *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, ndim, shape, v, &t));
    return t;
}

/* The host reduction of n per-sample losses as red gives it (*nout values). */
static void host_reduce(const double *l, int n, int red, double *res, int *nout)
{
    if (red == CLT_REDUCTION_NONE) {
        memcpy(res, l, (size_t)n * sizeof *l);
        *nout = n;
        return;
    }
    double s = 0;
    for (int k = 0; k < n; k++)
        s += l[k];
    res[0] = red == CLT_REDUCTION_SUM ? s : s / n;
    *nout = 1;
}

/* out (released here) against the reduction of the n losses l. */
static void expect(clt_tensor *out, const double *l, int n, int red, double rtol, const char *what)
{
    double want[64];
    int nw;
    host_reduce(l, n, red, want, &nw);
    cr_assert_eq(clt_tensor_numel(out), nw, "%s: %lld values, want %d", what,
                 (long long)clt_tensor_numel(out), nw);
    if (red != CLT_REDUCTION_NONE)
        cr_assert_eq(clt_tensor_ndim(out), 0, "%s: not 0-d", what);
    double *got = read_as_f64(out);
    for (int k = 0; k < nw; k++)
        cr_assert(close_enough(got[k], want[k], rtol, 1e-12),
                  "%s red %d [%d]: got %.15g, want %.15g", what, red, k, got[k], want[k]);
    free(got);
    clt_tensor_free(out);
}

/* ---- the losses as one call, for the value tests and gradcheck -------------------- */

enum kind {
    K_RANK,
    K_HINGE,
    K_SOFT,
    K_MLSOFT,
    K_MLMARGIN,
    K_MULTI,
    K_COSEMB,
    K_PAIRWISE,
    K_TRIPLET,
    K_POISSON,
    K_GAUSS,
    K_CDIST
};

typedef struct lcase {
    int kind, red, p, flag; /* flag: swap, log_input, full, keepdim */
    double margin, dp, eps;
    const clt_tensor *labels, *weight; /* class indices, weight (not differentiated) */
} lcase;

static clt_status run(const lcase *c, clt_tensor *const *in, clt_tensor **out)
{
    clt_reduction r = (clt_reduction)c->red;
    switch (c->kind) {
    case K_RANK:
        return clt_margin_ranking_loss(in[0], in[1], in[2], c->margin, r, out);
    case K_HINGE:
        return clt_hinge_embedding_loss(in[0], in[1], c->margin, r, out);
    case K_SOFT:
        return clt_soft_margin_loss(in[0], in[1], r, out);
    case K_MLSOFT:
        return clt_multilabel_soft_margin_loss(in[0], in[1], c->weight, r, out);
    case K_MLMARGIN:
        return clt_multilabel_margin_loss(in[0], c->labels, r, out);
    case K_MULTI:
        return clt_multi_margin_loss(in[0], c->labels, c->p, c->margin, c->weight, r, out);
    case K_COSEMB:
        return clt_cosine_embedding_loss(in[0], in[1], in[2], c->margin, r, out);
    case K_PAIRWISE:
        return clt_pairwise_distance(in[0], in[1], c->dp, c->eps, c->flag, out);
    case K_TRIPLET:
        return clt_triplet_margin_loss(in[0], in[1], in[2], c->margin, c->dp, c->eps, c->flag, r,
                                       out);
    case K_POISSON:
        return clt_poisson_nll_loss(in[0], in[1], c->flag & 1, c->flag >> 1, c->eps, r, out);
    case K_GAUSS:
        return clt_gaussian_nll_loss(in[0], in[1], in[2], c->flag, c->eps, r, out);
    default:
        return clt_cdist(in[0], in[1], c->dp, out);
    }
}

static clt_status f_case(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return run(ctx, in, out);
}

/* ---- host references --------------------------------------------------------------- */

static double pnorm(const double *d, int n, double p)
{
    double s = 0, m = 0;
    for (int k = 0; k < n; k++) {
        double a = fabs(d[k]);
        if (isinf(p))
            m = fmax(m, a);
        else if (p == 0)
            s += a != 0;
        else
            s += pow(a, p);
    }
    return isinf(p) ? m : p == 0 ? s : pow(s, 1 / p);
}

static double pdist(const double *a, const double *b, int n, double p, double eps)
{
    double d[16];
    for (int k = 0; k < n; k++)
        d[k] = a[k] - b[k] + eps;
    return pnorm(d, n, p);
}

static const double X1[6] = {2.0, 0.5, -1.0, 3.0, 0.25, -2.0};
static const double X2[6] = {1.0, 0.25, 2.0, -1.0, 0.25, 1.5};
static const double Y6[6] = {1, -1, 1, -1, 1, -1};

Test(loss_more, margin_ranking_hinge_soft_margin_values)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 6;
    clt_tensor *a = f64(dev, 1, &n, X1), *b = f64(dev, 1, &n, X2), *y = f64(dev, 1, &n, Y6);
    /* with margin 1 the first element is on the kink: -(2 - 1) + 1 == 0 */
    double hy[6] = {1, -1, -1, 1, 0, -1};
    clt_tensor *h = f64(dev, 1, &n, hy);
    for (int red = 0; red < NR; red++) {
        double l[6];
        clt_tensor *out = NULL;
        for (int k = 0; k < 6; k++)
            l[k] = fmax(0, -Y6[k] * (X1[k] - X2[k]) + 1.0);
        CHECK(clt_margin_ranking_loss(a, b, y, 1.0, (clt_reduction)red, &out));
        expect(out, l, 6, red, 1e-14, "margin_ranking");
        for (int k = 0; k < 6; k++)
            l[k] = (hy[k] != -1 ? X1[k] : 0) + (hy[k] != 1 ? fmax(0, 1.5 - X1[k]) : 0);
        CHECK(clt_hinge_embedding_loss(a, h, 1.5, (clt_reduction)red, &out));
        expect(out, l, 6, red, 1e-14, "hinge_embedding");
        for (int k = 0; k < 6; k++)
            l[k] = log1p(exp(-Y6[k] * X1[k]));
        CHECK(clt_soft_margin_loss(a, y, (clt_reduction)red, &out));
        expect(out, l, 6, red, 1e-14, "soft_margin");
    }
    /* the target of soft_margin_loss has no gradient in torch: refused */
    clt_tensor *yg = NULL, *out = (clt_tensor *)1;
    CHECK(clt_clone(y, &yg));
    CHECK(clt_set_requires_grad(yg, 1));
    assert_error(clt_soft_margin_loss(a, yg, CLT_REDUCTION_MEAN, &out), CLT_ERR_INVALID_ARGUMENT,
                 "'target'");
    cr_assert_null(out);
    clt_tensor *bad = f64(dev, 0, NULL, X1);
    assert_error(clt_margin_ranking_loss(a, b, bad, 0, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_SHAPE_MISMATCH, "same dimension");
    names_only("clt_margin_ranking_loss");
    cr_assert_null(out);
    assert_error(clt_hinge_embedding_loss(a, h, 1, CLT_REDUCTION_BATCHMEAN, &out),
                 CLT_ERR_INVALID_ARGUMENT, "reduction");
    cr_assert_null(out);
    clt_tensor *objs[] = {a, b, y, h, yg, bad};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

/* x [3, 4] and labels for the class losses */
static const double XC[12] = {0.5, -0.45, 0.2, 1.0, 0.1, 0.3, -0.2, 0.4, 2.0, -1.0, 0.0, 0.7};
static const int64_t ML[12] = {0, 3, -1, 2, -1, 1, 2, 3, 1, 1, 2, -1};
static const int64_t MC[3] = {0, 2, 3};
static const double WC[4] = {0.5, 1.0, 2.0, 1.5};

Test(loss_more, multilabel_and_multi_margin_values)
{
    clt_device *dev = get_device("cpu");
    int64_t s2[2] = {3, 4}, n3 = 3, c4 = 4;
    clt_tensor *x = f64(dev, 2, s2, XC), *ml = i64(dev, 2, s2, ML), *mc = i64(dev, 1, &n3, MC),
               *w = f64(dev, 1, &c4, WC), *out = NULL;
    for (int red = 0; red < NR; red++) {
        double l[3];
        for (int r = 0; r < 3; r++) {
            const double *xr = XC + 4 * r;
            const int64_t *y = ML + 4 * r;
            int is_t[4] = {0}, nt = 0;
            while (nt < 4 && y[nt] >= 0)
                is_t[y[nt++]] = 1;
            double s = 0;
            for (int j = 0; j < nt; j++)
                for (int i = 0; i < 4; i++)
                    if (!is_t[i])
                        s += fmax(0, 1 - (xr[y[j]] - xr[i]));
            l[r] = s / 4;
        }
        CHECK(clt_multilabel_margin_loss(x, ml, (clt_reduction)red, &out));
        expect(out, l, 3, red, 1e-14, "multilabel_margin");
        for (int p = 1; p <= 2; p++)
            for (int wi = 0; wi < 2; wi++) {
                for (int r = 0; r < 3; r++) {
                    const double *xr = XC + 4 * r;
                    double s = 0;
                    for (int i = 0; i < 4; i++) {
                        double z = 0.6 - xr[MC[r]] + xr[i];
                        if (i != MC[r] && z > 0)
                            s += (p == 1 ? z : z * z) * (wi ? WC[MC[r]] : 1);
                    }
                    l[r] = s / 4;
                }
                CHECK(
                    clt_multi_margin_loss(x, mc, p, 0.6, wi ? w : NULL, (clt_reduction)red, &out));
                expect(out, l, 3, red, 1e-14, "multi_margin");
            }
        /* multilabel soft margin with labels in {0, 1} as floats and a weight */
        double yf[12];
        for (int k = 0; k < 12; k++)
            yf[k] = (k * 5) % 3 == 0;
        clt_tensor *yt = f64(dev, 2, s2, yf);
        for (int wi = 0; wi < 2; wi++) {
            for (int r = 0; r < 3; r++) {
                double s = 0;
                for (int c = 0; c < 4; c++) {
                    double v = XC[4 * r + c], t = yf[4 * r + c];
                    double ls = -log1p(exp(-v)), lsn = -log1p(exp(v));
                    s += -(t * ls + (1 - t) * lsn) * (wi ? WC[c] : 1);
                }
                l[r] = s / 4;
            }
            CHECK(clt_multilabel_soft_margin_loss(x, yt, wi ? w : NULL, (clt_reduction)red, &out));
            expect(out, l, 3, red, 1e-13, "multilabel_soft_margin");
        }
        clt_tensor_free(yt);
    }
    /* a vector: one 0-d loss; its labels stop at the first negative one */
    int64_t v4 = 4, lab[4] = {3, -1, 0, 0};
    clt_tensor *xv = f64(dev, 1, &v4, XC), *lv = i64(dev, 1, &v4, lab);
    CHECK(clt_multilabel_margin_loss(xv, lv, CLT_REDUCTION_NONE, &out));
    cr_assert_eq(clt_tensor_ndim(out), 0);
    double want =
        (fmax(0, 1 - (1.0 - 0.5)) + fmax(0, 1 - (1.0 + 0.45)) + fmax(0, 1 - (1.0 - 0.2))) / 4;
    expect(out, &want, 1, CLT_REDUCTION_NONE, 1e-14, "multilabel_margin vector");
    /* refusals: label past C, int32 target, p 3, weight size */
    int64_t badl[12] = {0, 4, -1, 0, -1, 0, 0, 0, -1, 0, 0, 0};
    clt_tensor *bl = i64(dev, 2, s2, badl), *i32 = NULL, *w3 = f64(dev, 1, &n3, WC);
    assert_error(clt_multilabel_margin_loss(x, bl, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_INDEX_OUT_OF_RANGE, "out of range");
    cr_assert_null(out);
    CHECK(clt_to_dtype(mc, CLT_INT32, &i32));
    assert_error(clt_multi_margin_loss(x, i32, 1, 1, NULL, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_DTYPE_MISMATCH, "Long");
    names_only("clt_multi_margin_loss");
    assert_error(clt_multi_margin_loss(x, mc, 3, 1, NULL, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_INVALID_ARGUMENT, "p == 1 and p == 2");
    assert_error(clt_multi_margin_loss(x, mc, 1, 1, w3, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_SHAPE_MISMATCH, "inconsistent weight size");
    int64_t oob[3] = {0, 4, 1};
    clt_tensor *ob = i64(dev, 1, &n3, oob);
    assert_error(clt_multi_margin_loss(x, ob, 1, 1, NULL, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_INDEX_OUT_OF_RANGE, "out of range");
    cr_assert_null(out);
    clt_tensor *objs[] = {x, ml, mc, w, xv, lv, bl, i32, w3, ob};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

Test(loss_more, cosine_embedding_pairwise_triplet_values)
{
    clt_device *dev = get_device("cpu");
    int64_t s2[2] = {3, 4}, n3 = 3;
    double B[12], Nn[12], ye[3] = {1, -1, -1};
    for (int k = 0; k < 12; k++) {
        B[k] = cos(1.3 * k);
        Nn[k] = sin(0.7 * k + 1);
    }
    B[4] = B[5] = B[6] = B[7] = 0; /* a zero row: the 1e-12 keeps cos finite */
    clt_tensor *a = f64(dev, 2, s2, XC), *b = f64(dev, 2, s2, B), *ng = f64(dev, 2, s2, Nn),
               *y = f64(dev, 1, &n3, ye), *out = NULL;
    for (int red = 0; red < NR; red++) {
        double l[3];
        for (int r = 0; r < 3; r++) {
            double pr = 0, m1 = 0, m2 = 0;
            for (int k = 0; k < 4; k++) {
                pr += XC[4 * r + k] * B[4 * r + k];
                m1 += XC[4 * r + k] * XC[4 * r + k];
                m2 += B[4 * r + k] * B[4 * r + k];
            }
            double cs = pr / sqrt((m1 + 1e-12) * (m2 + 1e-12));
            l[r] = ye[r] == 1 ? 1 - cs : fmax(0, cs - 0.1);
        }
        CHECK(clt_cosine_embedding_loss(a, b, y, 0.1, (clt_reduction)red, &out));
        expect(out, l, 3, red, 1e-13, "cosine_embedding");
        const double ps[] = {2, 1, 3, INFINITY};
        for (int pi = 0; pi < 4; pi++)
            for (int sw = 0; sw < 2; sw++) {
                for (int r = 0; r < 3; r++) {
                    double dp = pdist(XC + 4 * r, B + 4 * r, 4, ps[pi], 1e-6);
                    double dn = pdist(XC + 4 * r, Nn + 4 * r, 4, ps[pi], 1e-6);
                    if (sw)
                        dn = fmin(dn, pdist(B + 4 * r, Nn + 4 * r, 4, ps[pi], 1e-6));
                    l[r] = fmax(0, 1.0 + dp - dn);
                }
                CHECK(clt_triplet_margin_loss(a, b, ng, 1.0, ps[pi], 1e-6, sw, (clt_reduction)red,
                                              &out));
                expect(out, l, 3, red, 1e-13, "triplet_margin");
            }
    }
    /* pairwise_distance: keepdim and broadcasting of a row against a matrix */
    for (int kd = 0; kd < 2; kd++) {
        double l[3];
        for (int r = 0; r < 3; r++)
            l[r] = pdist(XC + 4 * r, B + 4, 4, 2.0, 1e-6);
        int64_t four = 4;
        clt_tensor *row = f64(dev, 1, &four, B + 4);
        CHECK(clt_pairwise_distance(a, row, 2.0, 1e-6, kd, &out));
        cr_assert_eq(clt_tensor_ndim(out), kd ? 2 : 1);
        expect(out, l, 3, CLT_REDUCTION_NONE, 1e-13, "pairwise_distance");
        clt_tensor_free(row);
    }
    int64_t two = 2;
    clt_tensor *y2 = f64(dev, 2, (int64_t[]){3, 1}, ye), *v = f64(dev, 1, &two, B);
    assert_error(clt_cosine_embedding_loss(a, b, y2, 0, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_SHAPE_MISMATCH, "multi-target not supported");
    assert_error(clt_triplet_margin_loss(a, b, v, 1, 2, 1e-6, 0, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_SHAPE_MISMATCH, "same dimension");
    names_only("clt_triplet_margin_loss");
    cr_assert_null(out);
    clt_tensor *objs[] = {a, b, ng, y, y2, v};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

Test(loss_more, poisson_and_gaussian_nll_values)
{
    clt_device *dev = get_device("cpu");
    int64_t s2[2] = {3, 4}, n3 = 3;
    double yt[12], xp[12], var[12];
    for (int k = 0; k < 12; k++) {
        yt[k] = k % 5;               /* counts, 0 and 1 among them */
        xp[k] = 0.2 + 0.3 * (k % 7); /* positive rates */
        var[k] = 0.1 + 0.2 * (k % 4);
    }
    var[3] = 1e-9; /* clamped to eps */
    clt_tensor *x = f64(dev, 2, s2, XC), *xr = f64(dev, 2, s2, xp), *y = f64(dev, 2, s2, yt),
               *v = f64(dev, 2, s2, var), *vrow = f64(dev, 1, &n3, var),
               *v1 = f64(dev, 2, (int64_t[]){3, 1}, var), *out = NULL;
    for (int red = 0; red < NR; red++) {
        double l[12];
        for (int li = 0; li < 2; li++)
            for (int full = 0; full < 2; full++) {
                for (int k = 0; k < 12; k++) {
                    double in = li ? XC[k] : xp[k], t = yt[k];
                    l[k] = li ? exp(in) - t * in : in - t * log(in + 1e-8);
                    if (full && t > 1)
                        l[k] += t * log(t) - t + 0.5 * log(2 * M_PI * t);
                }
                CHECK(
                    clt_poisson_nll_loss(li ? x : xr, y, li, full, 1e-8, (clt_reduction)red, &out));
                expect(out, l, 12, red, 1e-13, "poisson_nll");
            }
        /* var per element, per row ([3] unsqueezed) and [3, 1] */
        for (int vk = 0; vk < 3; vk++)
            for (int full = 0; full < 2; full++) {
                for (int k = 0; k < 12; k++) {
                    double vv = vk == 0 ? var[k] : var[k / 4];
                    vv = fmax(vv, 1e-6);
                    double d = XC[k] - yt[k];
                    l[k] = 0.5 * (log(vv) + d * d / vv) + (full ? 0.5 * log(2 * M_PI) : 0);
                }
                CHECK(clt_gaussian_nll_loss(x, y,
                                            vk == 0   ? v
                                            : vk == 1 ? vrow
                                                      : v1,
                                            full, 1e-6, (clt_reduction)red, &out));
                expect(out, l, 12, red, 1e-12, "gaussian_nll");
            }
    }
    double negv[3] = {1, -0.5, 2};
    clt_tensor *vn = f64(dev, 1, &n3, negv), *vbad = f64(dev, 2, (int64_t[]){3, 2}, var);
    assert_error(clt_gaussian_nll_loss(x, y, vn, 0, 1e-6, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_INVALID_ARGUMENT, "negative entry");
    cr_assert_null(out);
    assert_error(clt_gaussian_nll_loss(x, y, vbad, 0, 1e-6, CLT_REDUCTION_MEAN, &out),
                 CLT_ERR_SHAPE_MISMATCH, "incorrect size");
    names_only("clt_gaussian_nll_loss");
    clt_tensor *objs[] = {x, xr, y, v, vrow, v1, vn, vbad};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

Test(loss_more, cdist_exact_and_matmul_paths)
{
    clt_device *dev = get_device("cpu");
    /* 30 rows take the matmul path for p == 2; 5 rows the exact one */
    enum { P30 = 30, R = 5, M = 3 };
    double a[P30 * M], b[R * M];
    for (int k = 0; k < P30 * M; k++)
        a[k] = sin(0.37 * k) * 2;
    for (int k = 0; k < R * M; k++)
        b[k] = cos(0.53 * k);
    for (int k = 0; k < M; k++)
        b[M + k] = a[k]; /* a zero distance */
    const double ps[] = {2, 1, 0, 0.5, 3, INFINITY};
    for (int rows = R; rows <= P30; rows += P30 - R)
        for (int pi = 0; pi < 6; pi++) {
            clt_tensor *x1 = f64(dev, 2, (int64_t[]){rows, M}, a),
                       *x2 = f64(dev, 2, (int64_t[]){R, M}, b), *out = NULL;
            CHECK(clt_cdist(x1, x2, ps[pi], &out));
            assert_shape(out, 2, (int64_t[]){rows, R});
            double *got = read_as_f64(out);
            bool mm = ps[pi] == 2 && rows > 25;
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < R; j++) {
                    double want = pdist(a + i * M, b + j * M, M, ps[pi], 0);
                    /* the matmul's cancellation: sqrt(1e-30) for equal rows, and
                     * about 1e-16 |x|^2 / d elsewhere */
                    cr_assert(
                        close_enough(got[i * R + j], want, mm ? 1e-12 : 1e-14, mm ? 1e-7 : 1e-14),
                        "cdist p %g rows %d [%d, %d]: got %.15g, want %.15g", ps[pi], rows, i, j,
                        got[i * R + j], want);
                }
            free(got);
            clt_tensor_free(out);
            clt_tensor_free(x1);
            clt_tensor_free(x2);
        }
    /* no columns: every distance 0, p = inf included (torch's zeros) */
    clt_tensor *e0 = f64(dev, 2, (int64_t[]){2, 0}, a), *z = NULL;
    CHECK(clt_cdist(e0, e0, INFINITY, &z));
    double zero4[4] = {0, 0, 0, 0};
    expect(z, zero4, 4, CLT_REDUCTION_NONE, 0, "cdist without columns");
    clt_tensor_free(e0);
    clt_tensor *v = f64(dev, 1, (int64_t[]){3}, a), *m = f64(dev, 2, (int64_t[]){1, 3}, a),
               *m4 = f64(dev, 2, (int64_t[]){1, 4}, a), *i = NULL, *out = NULL;
    assert_error(clt_cdist(v, m, 2, &out), CLT_ERR_SHAPE_MISMATCH, "at least 2D");
    assert_error(clt_cdist(m, m4, 2, &out), CLT_ERR_SHAPE_MISMATCH, "same number of columns");
    assert_error(clt_cdist(m, m, -1, &out), CLT_ERR_INVALID_ARGUMENT, "non-negative");
    CHECK(clt_to_dtype(m, CLT_INT64, &i));
    assert_error(clt_cdist(i, i, 2, &out), CLT_ERR_DTYPE_UNSUPPORTED, "floating-point");
    names_only("clt_cdist");
    cr_assert_null(out);
    clt_tensor_free(v);
    clt_tensor_free(m);
    clt_tensor_free(m4);
    clt_tensor_free(i);
}

/* ---- gradients, float64 finite differences ---------------------------------------- */

Test(loss_more, gradcheck_all)
{
    clt_device *dev = get_device("cpu");
    int64_t n3 = 3, c4 = 4;
    /* points away from the kinks, where finite differences are defined */
    double B[12], Nn[12], yf[12], cnt[12], var[12], vrow[3];
    for (int k = 0; k < 12; k++) {
        B[k] = cos(1.3 * k);
        Nn[k] = sin(0.7 * k + 1);
        yf[k] = 0.25 * (k % 5);
        cnt[k] = 0.5 + k % 4; /* no 0: y log(y) has a NaN gradient there, as in torch */
        var[k] = 0.3 + 0.2 * (k % 4);
    }
    for (int k = 0; k < 3; k++)
        vrow[k] = 0.5 + k;
    double ys[6] = {1, -1, 1, -1, 1, -1}, hy[6] = {1, -1, -1, 1, 0, -1}, ye[3] = {1, -1, -1};
    clt_tensor *ml = i64(dev, 2, (int64_t[]){3, 4}, ML), *mc = i64(dev, 1, &n3, MC),
               *w = f64(dev, 1, &c4, WC);
    for (int red = 0; red < NR; red++) {
        lcase c = {.kind = K_RANK, .red = red, .margin = 0.3};
        gc_in r3[3] = {{1, {6}, X1, 1}, {1, {6}, X2, 1}, {1, {6}, ys, 1}};
        gradcheck(dev, f_case, &c, 3, r3);
        c = (lcase){.kind = K_HINGE, .red = red, .margin = 1.2};
        gc_in h2[2] = {{1, {6}, X1, 1}, {1, {6}, hy, 0}};
        gradcheck(dev, f_case, &c, 2, h2);
        c = (lcase){.kind = K_SOFT, .red = red};
        gc_in s2[2] = {{1, {6}, X1, 1}, {1, {6}, ys, 0}};
        gradcheck(dev, f_case, &c, 2, s2);
        gc_in x34[2] = {{2, {3, 4}, XC, 1}, {2, {3, 4}, yf, 1}};
        c = (lcase){.kind = K_MLSOFT, .red = red, .weight = w};
        gradcheck(dev, f_case, &c, 2, x34);
        c = (lcase){.kind = K_MLMARGIN, .red = red, .labels = ml};
        gradcheck(dev, f_case, &c, 1, x34);
        for (int p = 1; p <= 2; p++) {
            c = (lcase){
                .kind = K_MULTI, .red = red, .p = p, .margin = 0.6, .labels = mc, .weight = w};
            gradcheck(dev, f_case, &c, 1, x34);
        }
        gc_in ce[3] = {{2, {3, 4}, XC, 1}, {2, {3, 4}, B, 1}, {1, {3}, ye, 0}};
        c = (lcase){.kind = K_COSEMB, .red = red, .margin = -0.2};
        gradcheck(dev, f_case, &c, 3, ce);
        const double ps[] = {2, 1, 3};
        for (int pi = 0; pi < 3; pi++) {
            gc_in tr[3] = {{2, {3, 4}, XC, 1}, {2, {3, 4}, B, 1}, {2, {3, 4}, Nn, 1}};
            c = (lcase){.kind = K_TRIPLET,
                        .red = red,
                        .margin = 2.0,
                        .dp = ps[pi],
                        .eps = 1e-6,
                        .flag = pi == 1};
            gradcheck(dev, f_case, &c, 3, tr);
        }
        for (int f = 0; f < 4; f++) {
            double xp[12];
            for (int k = 0; k < 12; k++)
                xp[k] = f & 1 ? XC[k] : 0.3 + fabs(XC[k]);
            gc_in po[2] = {{2, {3, 4}, xp, 1}, {2, {3, 4}, cnt, 1}};
            c = (lcase){.kind = K_POISSON, .red = red, .flag = f, .eps = 1e-8};
            gradcheck(dev, f_case, &c, 2, po);
        }
        gc_in ga[3] = {{2, {3, 4}, XC, 1}, {2, {3, 4}, B, 1}, {2, {3, 4}, var, 1}};
        c = (lcase){.kind = K_GAUSS, .red = red, .flag = 1, .eps = 1e-6};
        gradcheck(dev, f_case, &c, 3, ga);
        gc_in gr[3] = {{2, {3, 4}, XC, 1}, {2, {3, 4}, B, 1}, {1, {3}, vrow, 1}};
        gradcheck(dev, f_case, &c, 3, gr);
    }
    const double ps[] = {2, 1, 3, INFINITY};
    for (int pi = 0; pi < 4; pi++) {
        gc_in pw[2] = {{2, {3, 4}, XC, 1}, {2, {3, 4}, B, 1}};
        lcase c = {.kind = K_PAIRWISE, .dp = ps[pi], .eps = 1e-6};
        gradcheck(dev, f_case, &c, 2, pw);
        c = (lcase){.kind = K_CDIST, .dp = ps[pi]};
        gc_in cd[2] = {{2, {3, 4}, XC, 1}, {2, {2, 4}, B, 1}};
        gradcheck(dev, f_case, &c, 2, cd);
    }
    /* cdist's matmul path (30 rows) */
    double big[30 * 2];
    for (int k = 0; k < 60; k++)
        big[k] = sin(0.41 * k);
    lcase c = {.kind = K_CDIST, .dp = 2};
    gc_in cm[2] = {{2, {30, 2}, big, 1}, {2, {2, 2}, B, 1}};
    gradcheck_tol(dev, f_case, &c, 2, cm, 1e-6, 1e-5, 1e-6);
    clt_tensor_free(ml);
    clt_tensor_free(mc);
    clt_tensor_free(w);
}

/* At the kinks the conventions decide: clamp_min passes the gradient where
 * its argument is 0 (margin_ranking, hinge, triplet), the kernels' z > 0
 * does not (multi_margin), as torch 1.13; var below eps gets the clamped
 * value's gradient whole. */
Test(loss_more, gradients_at_the_kinks)
{
    clt_device *dev = get_device("cpu");
    int64_t two = 2;
    double a[2] = {2.0, 0.0}, b[2] = {1.0, 1.0}, y[2] = {1.0, -1.0};
    clt_tensor *ta = f64(dev, 1, &two, a), *tb = f64(dev, 1, &two, b), *ty = f64(dev, 1, &two, y),
               *out = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(ta, 1));
    /* element 0: -(2 - 1) + 1 == 0, element 1: (0 - 1) + 1 == 0 */
    CHECK(clt_margin_ranking_loss(ta, tb, ty, 1.0, CLT_REDUCTION_SUM, &out));
    CHECK(clt_backward(out, NULL, 0));
    CHECK(clt_grad(ta, &g));
    double *gv = read_as_f64(g), want[2] = {-1.0, 1.0};
    assert_shape(g, 1, &two);
    for (int k = 0; k < 2; k++)
        cr_assert_eq(gv[k], want[k], "margin_ranking kink [%d]: %g, want %g", k, gv[k], want[k]);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(out);
    /* multi_margin: x = [1, 0.5, 0], y = 0, margin 0.5: class 1 on the kink */
    int64_t c3 = 3, zero = 0;
    double xm[3] = {1.0, 0.5, 0.0};
    clt_tensor *tx = f64(dev, 1, &c3, xm), *lab = i64(dev, 1, (int64_t[]){1}, &zero);
    CHECK(clt_set_requires_grad(tx, 1));
    CHECK(clt_multi_margin_loss(tx, lab, 1, 0.5, NULL, CLT_REDUCTION_SUM, &out));
    CHECK(clt_backward(out, NULL, 0));
    CHECK(clt_grad(tx, &g));
    gv = read_as_f64(g);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(gv[k], 0.0, "multi_margin kink [%d]: %g, want 0", k, gv[k]);
    free(gv);
    clt_tensor_free(g);
    clt_tensor_free(out);
    /* gaussian_nll: var 1e-9 < eps: d/dv 0.5 (log v + d^2 / v) at v = eps */
    double vv = 1e-9, xi = 0.5, ti = 0.0;
    clt_tensor *gx = f64(dev, 0, NULL, &xi), *gt = f64(dev, 0, NULL, &ti),
               *gvv = f64(dev, 0, NULL, &vv);
    CHECK(clt_set_requires_grad(gvv, 1));
    CHECK(clt_gaussian_nll_loss(gx, gt, gvv, 0, 1e-6, CLT_REDUCTION_MEAN, &out));
    CHECK(clt_backward(out, NULL, 0));
    CHECK(clt_grad(gvv, &g));
    double got, wantv = 0.5 * (1 / 1e-6 - 0.25 / (1e-6 * 1e-6));
    CHECK(clt_tensor_item(g, &got));
    cr_assert(close_enough(got, wantv, 1e-12, 0), "gaussian var below eps: %.15g, want %.15g", got,
              wantv);
    clt_tensor_free(g);
    clt_tensor_free(out);
    /* cdist p = inf: |x1 - x2| = [1, 0, 1] ties; torch gives each tie the whole
     * gradient, sign(diff) g */
    double c1[3] = {0, 1, 2}, c2[3] = {1, 1, 1};
    clt_tensor *tc1 = f64(dev, 2, (int64_t[]){1, 3}, c1), *tc2 = f64(dev, 2, (int64_t[]){1, 3}, c2);
    CHECK(clt_set_requires_grad(tc1, 1));
    CHECK(clt_cdist(tc1, tc2, INFINITY, &out));
    CHECK(clt_backward(out, NULL, 0));
    CHECK(clt_grad(tc1, &g));
    gv = read_as_f64(g);
    double wc[3] = {-1, 0, 1};
    for (int k = 0; k < 3; k++)
        cr_assert_eq(gv[k], wc[k], "cdist inf tie [%d]: %g, want %g", k, gv[k], wc[k]);
    free(gv);
    clt_tensor *objs[] = {ta, tb, ty, tx, lab, gx, gt, gvv, g, out, tc1, tc2};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

/* ---- CTC against every alignment ------------------------------------------------- */

enum { CT = 4, CN = 4, CC = 3 };

/* -log of the sum over all CC^il paths that collapse (repeats merged, then
 * blanks dropped) to the target y[0..L) of prod_t exp(lp[t, b, path_t]). */
static double ctc_brute(const double *lp, int b, int il, const int64_t *y, int L, int blank)
{
    double total = 0;
    int paths = 1;
    for (int t = 0; t < il; t++)
        paths *= CC;
    for (int code = 0; code < paths; code++) {
        int p[CT], c = code, out[CT], n = 0;
        for (int t = 0; t < il; t++, c /= CC)
            p[t] = c % CC;
        for (int t = 0; t < il; t++)
            if (p[t] != blank && (t == 0 || p[t] != p[t - 1]))
                out[n++] = p[t];
        if (n != L)
            continue;
        int same = 1;
        for (int k = 0; k < n; k++)
            same &= out[k] == y[k];
        if (!same)
            continue;
        double s = 0;
        for (int t = 0; t < il; t++)
            s += lp[(t * CN + b) * CC + p[t]];
        total += exp(s);
    }
    return -log(total);
}

/* log_softmax over classes of sin-made logits [CT, CN, CC] */
static void ctc_logprobs(double *lp)
{
    for (int r = 0; r < CT * CN; r++) {
        double m = 0;
        for (int c = 0; c < CC; c++)
            m += exp(lp[r * CC + c] = sin(1.1 * (r * CC + c)) * 1.5);
        for (int c = 0; c < CC; c++)
            lp[r * CC + c] -= log(m);
    }
}

/* padded targets: "1 2", "1 1", "" (empty), and "1 1 2" that 3 steps cannot hold */
static const int64_t CTG[CN * 3] = {1, 2, 0, 1, 1, 0, 0, 0, 0, 1, 1, 2};
static const int64_t CIL[CN] = {4, 4, 3, 3}, CTL[CN] = {2, 2, 0, 3};

Test(loss_more, ctc_against_every_alignment)
{
    clt_device *dev = get_device("cpu");
    double lp[CT * CN * CC];
    ctc_logprobs(lp);
    int64_t n = CN;
    clt_tensor *x = f64(dev, 3, (int64_t[]){CT, CN, CC}, lp),
               *tg = i64(dev, 2, (int64_t[]){CN, 3}, CTG), *il = i64(dev, 1, &n, CIL),
               *tl = i64(dev, 1, &n, CTL), *out = NULL;
    /* concatenated: the same targets one after another */
    int64_t cat[7] = {1, 2, 1, 1, 1, 1, 2}, seven = 7;
    clt_tensor *tc = i64(dev, 1, &seven, cat);
    double nll[CN];
    for (int b = 0; b < CN; b++)
        nll[b] = ctc_brute(lp, b, (int)CIL[b], CTG + 3 * b, (int)CTL[b], 0);
    cr_assert(isinf(nll[3]), "the reference's impossible alignment is finite");
    for (int zi = 0; zi < 2; zi++)
        for (int red = 0; red < NR; red++)
            for (int cc = 0; cc < 2; cc++) {
                double l[CN];
                for (int b = 0; b < CN; b++) {
                    l[b] = zi && isinf(nll[b]) ? 0 : nll[b];
                    if (red == CLT_REDUCTION_MEAN)
                        l[b] /= CTL[b] > 1 ? (double)CTL[b] : 1;
                }
                CHECK(clt_ctc_loss(x, cc ? tc : tg, il, tl, 0, (clt_reduction)red, zi, &out));
                expect(out, l, CN, red, 1e-12, "ctc_loss");
            }
    /* blank 2, unbatched: sample 0 with labels "1 0" */
    int64_t y10[2] = {1, 0}, two = 2, four = 4;
    double u[CT * CC];
    for (int t = 0; t < CT; t++)
        for (int c = 0; c < CC; c++)
            u[t * CC + c] = lp[(t * CN + 0) * CC + c];
    clt_tensor *xu = f64(dev, 2, (int64_t[]){CT, CC}, u), *yu = i64(dev, 1, &two, y10),
               *ilu = i64(dev, 0, NULL, &four), *tlu = i64(dev, 0, NULL, &two);
    CHECK(clt_ctc_loss(xu, yu, ilu, tlu, 2, CLT_REDUCTION_NONE, 0, &out));
    cr_assert_eq(clt_tensor_ndim(out), 0);
    double want = ctc_brute(lp, 0, CT, y10, 2, 2);
    expect(out, &want, 1, CLT_REDUCTION_NONE, 1e-12, "ctc_loss unbatched blank 2");
    /* refusals */
    int64_t big[CN] = {5, 4, 3, 3};
    clt_tensor *ilb = i64(dev, 1, &n, big), *flt = NULL;
    assert_error(clt_ctc_loss(x, tg, ilb, tl, 0, CLT_REDUCTION_MEAN, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "at most 4");
    assert_error(clt_ctc_loss(x, tg, il, tl, 3, CLT_REDUCTION_MEAN, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "blank must be in label range");
    CHECK(clt_to_dtype(il, CLT_FLOAT32, &flt));
    assert_error(clt_ctc_loss(x, tg, flt, tl, 0, CLT_REDUCTION_MEAN, 0, &out),
                 CLT_ERR_DTYPE_MISMATCH, "input_lengths must be integral");
    names_only("clt_ctc_loss");
    cr_assert_null(out);
    clt_tensor *objs[] = {x, tg, il, tl, tc, xu, yu, ilu, tlu, ilb, flt};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

/* torch converts targets and lengths to int64: every integer dtype (the
 * three mixed), float targets truncated toward zero, bool ones; the
 * padded and concatenated forms' sizes; the unbatched forms torch takes */
Test(loss_more, ctc_dtypes_and_forms)
{
    clt_device *dev = get_device("cpu");
    double lp[CT * CN * CC];
    ctc_logprobs(lp);
    int64_t n = CN;
    clt_tensor *x = f64(dev, 3, (int64_t[]){CT, CN, CC}, lp),
               *tg = i64(dev, 2, (int64_t[]){CN, 3}, CTG), *il = i64(dev, 1, &n, CIL),
               *tl = i64(dev, 1, &n, CTL), *out = NULL;
    double nll[CN];
    for (int b = 0; b < CN; b++)
        nll[b] = ctc_brute(lp, b, (int)CIL[b], CTG + 3 * b, (int)CTL[b], 0);
    const clt_dtype ints[] = {CLT_INT32, CLT_INT16, CLT_INT8, CLT_UINT8, CLT_INT64};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            clt_tensor *t1, *t2, *t3;
            CHECK(clt_to_dtype(tg, ints[a], &t1));
            CHECK(clt_to_dtype(il, ints[b], &t2));
            CHECK(clt_to_dtype(tl, ints[(a + b) % 5], &t3));
            CHECK(clt_ctc_loss(x, t1, t2, t3, 0, CLT_REDUCTION_NONE, 0, &out));
            expect(out, nll, CN, CLT_REDUCTION_NONE, 1e-12, "ctc_loss integer dtypes");
            clt_tensor_free(t1);
            clt_tensor_free(t2);
            clt_tensor_free(t3);
        }
    /* float targets: 1.7 and -0.5 truncate to 1 and 0 (a padding place) */
    double fv[CN * 3] = {1.7, 2.2, -0.5, 1, 1.99, 0, 0, 0, 0, 1, 1, 2};
    clt_tensor *ft = NULL, *bt = NULL, *bl = NULL;
    clt_tensor *ft64 = f64(dev, 2, (int64_t[]){CN, 3}, fv);
    CHECK(clt_to_dtype(ft64, CLT_FLOAT32, &ft));
    CHECK(clt_ctc_loss(x, ft64, il, tl, 0, CLT_REDUCTION_NONE, 0, &out));
    expect(out, nll, CN, CLT_REDUCTION_NONE, 1e-12, "ctc_loss float targets");
    CHECK(clt_ctc_loss(x, ft, il, tl, 0, CLT_REDUCTION_NONE, 0, &out));
    expect(out, nll, CN, CLT_REDUCTION_NONE, 1e-12, "ctc_loss float32 targets");
    /* bool targets: every label 1 */
    int64_t ones[2] = {1, 1}, one = 1, two = 2;
    double want1 = ctc_brute(lp, 0, (int)CIL[0], ones, 2, 0);
    clt_tensor *t11 = i64(dev, 2, (int64_t[]){1, 2}, ones);
    CHECK(clt_to_dtype(t11, CLT_BOOL, &bt));
    double u[CT * CC];
    for (int t = 0; t < CT; t++)
        for (int c = 0; c < CC; c++)
            u[t * CC + c] = lp[(t * CN + 0) * CC + c];
    /* unbatched: padded [1, S] targets and [1] lengths, as torch takes them */
    clt_tensor *xu = f64(dev, 2, (int64_t[]){CT, CC}, u), *il1 = i64(dev, 1, &one, CIL),
               *tl1 = i64(dev, 1, &one, &two), *il0 = i64(dev, 0, NULL, CIL);
    for (int red = 0; red < NR; red++) {
        double l = red == CLT_REDUCTION_MEAN ? want1 / 2 : want1;
        CHECK(clt_ctc_loss(xu, bt, il1, tl1, 0, (clt_reduction)red, 0, &out));
        cr_assert_eq(clt_tensor_ndim(out), 0, "unbatched red %d: %d-D", red, clt_tensor_ndim(out));
        expect(out, &l, 1, CLT_REDUCTION_NONE, 1e-12, "ctc_loss unbatched padded bool");
        CHECK(clt_ctc_loss(xu, t11, il0, tl1, 0, (clt_reduction)red, 0, &out));
        expect(out, &l, 1, CLT_REDUCTION_NONE, 1e-12, "ctc_loss unbatched 0-d and [1]");
    }
    /* refusals: lengths that are not integers, complex targets, padded
     * rows other than the batch, concatenated targets other than the
     * lengths' sum, a NaN target */
    clt_tensor *c64 = NULL, *fl = NULL, *short_tg = NULL, *cat = NULL, *nan_t = NULL;
    assert_error(clt_ctc_loss(x, tg, il, tl, 0, (clt_reduction)-1, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, NULL);
    CHECK(clt_to_dtype(tl, CLT_BOOL, &bl));
    assert_error(clt_ctc_loss(x, tg, il, bl, 0, CLT_REDUCTION_SUM, 0, &out),
                 CLT_ERR_DTYPE_MISMATCH, "target_lengths must be integral");
    names_only("clt_ctc_loss");
    CHECK(clt_to_dtype(tl, CLT_FLOAT64, &fl));
    assert_error(clt_ctc_loss(x, tg, il, fl, 0, CLT_REDUCTION_SUM, 0, &out),
                 CLT_ERR_DTYPE_MISMATCH, "target_lengths must be integral");
    CHECK(clt_to_dtype(tg, CLT_COMPLEX64, &c64));
    assert_error(clt_ctc_loss(x, c64, il, tl, 0, CLT_REDUCTION_SUM, 0, &out),
                 CLT_ERR_DTYPE_MISMATCH, "targets must be real");
    CHECK(clt_narrow(tg, 0, 0, 2, &short_tg));
    assert_error(clt_ctc_loss(x, short_tg, il, tl, 0, CLT_REDUCTION_SUM, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "4 rows");
    int64_t catv[8] = {1, 2, 1, 1, 1, 1, 2, 1}, eight = 8;
    cat = i64(dev, 1, &eight, catv);
    assert_error(clt_ctc_loss(x, cat, il, tl, 0, CLT_REDUCTION_SUM, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "expected 7 concatenated targets");
    fv[0] = NAN;
    nan_t = f64(dev, 2, (int64_t[]){CN, 3}, fv);
    assert_error(clt_ctc_loss(x, nan_t, il, tl, 0, CLT_REDUCTION_SUM, 0, &out),
                 CLT_ERR_INDEX_OUT_OF_RANGE, "not an index");
    cr_assert_null(out);
    clt_tensor *objs[] = {x,   tg,  il,  tl, ft, ft64, t11, bt,       xu,  il1, tl1,
                          il0, bl,  c64, fl, short_tg, cat, nan_t};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

typedef struct ctc_ctx {
    const clt_tensor *tg, *il, *tl;
    int red, zi;
} ctc_ctx;

/* ctc_loss(log_softmax(x)): torch's gradient is that of the logits */
static clt_status f_ctc(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const ctc_ctx *c = p;
    clt_tensor *ls = NULL;
    clt_status st = clt_log_softmax(in[0], 2, &ls);
    if (st == CLT_OK)
        st = clt_ctc_loss(ls, c->tg, c->il, c->tl, 0, (clt_reduction)c->red, c->zi, out);
    clt_tensor_free(ls);
    return st;
}

Test(loss_more, ctc_gradcheck_and_zero_infinity)
{
    clt_device *dev = get_device("cpu");
    double x[CT * CN * CC];
    for (int k = 0; k < CT * CN * CC; k++)
        x[k] = sin(1.1 * k) * 1.5;
    int64_t n = CN - 1; /* the possible alignments */
    clt_tensor *tg = i64(dev, 2, (int64_t[]){CN - 1, 3}, CTG), *il = i64(dev, 1, &n, CIL),
               *tl = i64(dev, 1, &n, CTL);
    gc_in ins[1] = {{3, {CT, CN - 1, CC}, x, 1}};
    for (int red = 0; red < NR; red++) {
        ctc_ctx c = {tg, il, tl, red, 0};
        gradcheck(dev, f_ctc, &c, 1, ins);
    }
    /* the impossible sample: infinite loss, NaN-free zero gradient with
     * zero_infinity, and nothing past an input's length */
    int64_t n4 = CN;
    clt_tensor *tg4 = i64(dev, 2, (int64_t[]){CN, 3}, CTG), *il4 = i64(dev, 1, &n4, CIL),
               *tl4 = i64(dev, 1, &n4, CTL), *xt = f64(dev, 3, (int64_t[]){CT, CN, CC}, x),
               *out = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(xt, 1));
    ctc_ctx c = {tg4, il4, tl4, CLT_REDUCTION_SUM, 1};
    CHECK(f_ctc(&xt, &out, &c));
    double v;
    CHECK(clt_tensor_item(out, &v));
    cr_assert(isfinite(v), "zero_infinity: %g", v);
    CHECK(clt_backward(out, NULL, 0));
    CHECK(clt_grad(xt, &g));
    double *gv = read_as_f64(g);
    for (int t = 0; t < CT; t++)
        for (int b = 0; b < CN; b++)
            for (int k = 0; k < CC; k++) {
                double e = gv[(t * CN + b) * CC + k];
                if (b == 3 || t >= CIL[b])
                    cr_assert_eq(e, 0.0, "t %d b %d c %d: %g, want 0", t, b, k, e);
                else
                    cr_assert(isfinite(e) && e != 0, "t %d b %d c %d: %g", t, b, k, e);
            }
    free(gv);
    clt_tensor *objs[] = {tg, il, tl, tg4, il4, tl4, xt, out, g};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

/* torch 1.13 has no derivative of ctc_loss's backward ("derivative for
 * aten::_ctc_loss_backward is not implemented"): the gradient made with
 * create_graph is right, and differentiating it fails naming CTC's node */
Test(loss_more, ctc_double_backward_refused)
{
    clt_device *dev = get_device("cpu");
    double x[CT * CN * CC];
    for (int k = 0; k < CT * CN * CC; k++)
        x[k] = sin(1.1 * k) * 1.5;
    int64_t n = CN - 1;
    clt_tensor *tg = i64(dev, 2, (int64_t[]){CN - 1, 3}, CTG), *il = i64(dev, 1, &n, CIL),
               *tl = i64(dev, 1, &n, CTL), *xt = f64(dev, 3, (int64_t[]){CT, CN - 1, CC}, x),
               *out = NULL, *g = NULL, *g1 = NULL, *s = NULL, *gg = NULL;
    CHECK(clt_set_requires_grad(xt, 1));
    ctc_ctx c = {tg, il, tl, CLT_REDUCTION_SUM, 0};
    CHECK(f_ctc(&xt, &out, &c));
    clt_grad_opts create = {1, 1, 0};
    CHECK(clt_autograd_grad_ex(&out, 1, NULL, &xt, 1, &create, &g));
    cr_assert(clt_requires_grad(g), "the created gradient has no history");
    CHECK(clt_backward(out, NULL, 1)); /* retain_graph: g's graph reads it */
    CHECK(clt_grad(xt, &g1));
    double *a = read_as_f64(g), *b = read_as_f64(g1);
    for (int k = 0; k < CT * (CN - 1) * CC; k++)
        cr_assert(close_enough(a[k], b[k], 1e-12, 1e-14), "[%d]: %g, want %g", k, a[k], b[k]);
    free(a);
    free(b);
    CHECK(clt_sum(g, &s));
    assert_error(clt_autograd_grad_ex(&s, 1, NULL, &xt, 1, NULL, &gg), CLT_ERR_INVALID_ARGUMENT,
                 "'CtcLossBackward0' is not implemented");
    cr_assert_null(gg);
    clt_tensor *objs[] = {tg, il, tl, xt, out, g, g1, s};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

/* ---- CTC past one work-group: a float64 host forward-backward ------------------- */

/* CTC_GROUP_MAX in src/ops/loss.c is 256, so 2 L + 1 = 301 states take
 * more than one work-group on every device; sample 1 stops early, sample
 * 2's target is empty. */
enum { GT = 320, GN = 3, GC = 6, GL = 150 };
static const int64_t GIL[GN] = {GT, GT - 17, GT - 5}, GTL[GN] = {GL, GL - 9, 0};

static double lse(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

/* Sample b's loss and torch's gradient for its log-probabilities lp [GT,
 * GN, GC] (exp(lp) - exp(log sum_{s: l'(s) = c} alpha beta + nll - lp), 0
 * past the input), by the alpha and beta recursions over the extended
 * labels in log space. */
static double ctc_host(const double *lp, int b, const int64_t *y, double *grad)
{
    int il = (int)GIL[b], L = (int)GTL[b], S = 2 * L + 1;
    double *al = malloc(sizeof(double) * GT * S), *be = malloc(sizeof(double) * GT * S);
    cr_assert(al && be);
#define LPV(t, c) lp[((t)*GN + b) * GC + (c)]
#define LAB(s) ((s) % 2 ? (int)y[(s) / 2] : 0)
    for (int t = 0; t < il; t++)
        for (int s = 0; s < S; s++) {
            double v = -INFINITY;
            if (t == 0)
                v = s < 2 ? 0 : -INFINITY;
            else {
                v = al[(t - 1) * S + s];
                if (s > 0)
                    v = lse(v, al[(t - 1) * S + s - 1]);
                if (s > 1 && LAB(s) != LAB(s - 2))
                    v = lse(v, al[(t - 1) * S + s - 2]);
            }
            al[t * S + s] = v + LPV(t, LAB(s));
        }
    for (int t = il - 1; t >= 0; t--)
        for (int s = S - 1; s >= 0; s--) {
            double v;
            if (t == il - 1)
                v = s >= S - 2 ? 0 : -INFINITY;
            else {
                v = be[(t + 1) * S + s];
                if (s < S - 1)
                    v = lse(v, be[(t + 1) * S + s + 1]);
                if (s < S - 2 && LAB(s) != LAB(s + 2))
                    v = lse(v, be[(t + 1) * S + s + 2]);
            }
            be[t * S + s] = v + LPV(t, LAB(s));
        }
    double nll = -lse(al[(il - 1) * S + S - 1], S > 1 ? al[(il - 1) * S + S - 2] : -INFINITY);
    for (int t = 0; t < GT; t++)
        for (int c = 0; c < GC; c++) {
            double acc = -INFINITY;
            for (int s = 0; s < S && t < il; s++)
                if (LAB(s) == c)
                    acc = lse(acc, al[t * S + s] + be[t * S + s]);
            grad[(t * GN + b) * GC + c] =
                t < il ? exp(LPV(t, c)) - exp(acc + nll - LPV(t, c)) : 0;
        }
#undef LPV
#undef LAB
    free(al);
    free(be);
    return nll;
}

/* The losses (NONE) and the gradient of their sum on dev, in dt. */
static void ctc_run(clt_device *dev, clt_dtype dt, const double *lp, const int64_t *tg,
                    double *loss, double *grad)
{
    int64_t n = GN;
    clt_tensor *x = f64(dev, 3, (int64_t[]){GT, GN, GC}, lp), *xd = NULL, *out = NULL,
               *sum = NULL, *g = NULL;
    clt_tensor *ty = i64(dev, 2, (int64_t[]){GN, GL}, tg), *ti = i64(dev, 1, &n, GIL),
               *tt = i64(dev, 1, &n, GTL);
    CHECK(clt_to_dtype(x, dt, &xd));
    CHECK(clt_set_requires_grad(xd, 1));
    CHECK(clt_ctc_loss(xd, ty, ti, tt, 0, CLT_REDUCTION_NONE, 0, &out));
    CHECK(clt_sum(out, &sum));
    CHECK(clt_backward(sum, NULL, 0));
    CHECK(clt_grad(xd, &g));
    double *lv = read_as_f64(out), *gv = read_as_f64(g);
    memcpy(loss, lv, sizeof(double) * GN);
    memcpy(grad, gv, sizeof(double) * GT * GN * GC);
    free(lv);
    free(gv);
    clt_tensor *objs[] = {x, xd, out, sum, g, ty, ti, tt};
    for (size_t k = 0; k < sizeof objs / sizeof *objs; k++)
        clt_tensor_free(objs[k]);
}

Test(loss_more, ctc_states_past_a_work_group)
{
    clt_device *d0 = get_device("cpu:0");
    static double lp[GT * GN * GC], lp32[GT * GN * GC], want[GT * GN * GC],
        got[GT * GN * GC], other[GT * GN * GC];
    for (int r = 0; r < GT * GN; r++) { /* log_softmax of sin-made logits */
        double m = 0;
        for (int c = 0; c < GC; c++)
            m += exp(lp[r * GC + c] = 2 * sin(0.37 * (r * GC + c) + 0.001 * r * r));
        for (int c = 0; c < GC; c++)
            lp[r * GC + c] -= log(m);
    }
    int64_t tg[GN * GL];
    for (int k = 0; k < GN * GL; k++) /* labels 1..5, with repeats */
        tg[k] = 1 + (k * k + 3 * k) / 7 % (GC - 1);
    for (int d = 0; d < 2; d++) {
        const double *in = lp;
        if (d == 1) { /* float32: the reference from the rounded inputs */
            for (int k = 0; k < GT * GN * GC; k++)
                lp32[k] = (float)lp[k];
            in = lp32;
        }
        double nll[GN], loss[GN];
        for (int b = 0; b < GN; b++)
            nll[b] = ctc_host(in, b, tg + b * GL, want);
        ctc_run(d0, d ? CLT_FLOAT32 : CLT_FLOAT64, lp, tg, loss, got);
        /* float32: the gradient's exp(log(alpha beta) + nll - lp) keeps the
         * absolute error of the hundreds that cancel in its exponent */
        double rtol = d ? 1e-5 : 1e-11, gtol = d ? 1e-3 : 1e-10;
        for (int b = 0; b < GN; b++)
            cr_assert(isfinite(nll[b]) && close_enough(loss[b], nll[b], rtol, 0),
                      "dtype %d sample %d: loss %.15g, want %.15g", d, b, loss[b], nll[b]);
        for (int k = 0; k < GT * GN * GC; k++)
            cr_assert(close_enough(got[k], want[k], gtol, gtol),
                      "dtype %d grad [%d, %d, %d]: %.15g, want %.15g", d, k / (GN * GC),
                      k / GC % GN, k % GC, got[k], want[k]);
    }
    /* the same bits as the serial kernels, and on a second device */
    double loss0[GN], loss1[GN];
    ctc_run(d0, CLT_FLOAT32, lp, tg, loss0, got);
    setenv("CLTENSOR_CTC", "serial", 1);
    ctc_run(d0, CLT_FLOAT32, lp, tg, loss1, other);
    unsetenv("CLTENSOR_CTC");
    cr_assert(memcmp(loss0, loss1, sizeof loss0) == 0 && memcmp(got, other, sizeof got) == 0,
              "the serial kernels' bits differ");
    ctc_run(second_device(d0), CLT_FLOAT32, lp, tg, loss1, other);
    cr_assert(memcmp(loss0, loss1, sizeof loss0) == 0 && memcmp(got, other, sizeof got) == 0,
              "the second device's bits differ");
}
