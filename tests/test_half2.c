/* test_half2.c: float16 beyond the element-wise ops: the 16-wide half
 * stores of fill, element-wise and scan kernels at odd sizes and offsets
 * (views, expanded and non-contiguous operands); convolutions, pooling,
 * interpolation and padding of half against the float32 op on the same
 * (half-exact) values rounded once, gradients included; and autocast. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* v rounded to half through the device's own float32 -> half cast is not
 * independent: the host rounds to nearest even from the format. */
static double host_round_half(double d)
{
    float f = (float)d;
    if (isnan(f) || isinf(f))
        return f;
    int e;
    frexpf(f, &e); /* f = m 2^e, 0.5 <= |m| < 1 */
    int q = e - 11 < -24 ? -24 : e - 11; /* the spacing of halves near f */
    double r = nearbyint(ldexp(f, -q));  /* ties to even in the default mode */
    double v = ldexp(r, q);
    return fabs(v) > 65504.0 ? copysign(INFINITY, v) : v;
}

/* n half-exact values (multiples of 1/64 in [-4, 4]). */
static double *half_values(size_t n, unsigned seed)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((int)((seed >> 9) % 513) - 256) / 64.0;
    }
    return v;
}

/* ---- the 16-wide half stores -------------------------------------------------------------- */

/* Fills large enough for the chunked kernel (past 16 KiB), at sizes that
 * leave every remainder of 16. */
Test(half_store, fill_chunked_odd_sizes)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sizes[] = {8193, 8207, 9000, 12345, 40001, 65551};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        clt_tensor *t = NULL;
        CHECK(clt_full(dev, CLT_FLOAT16, 1, &sizes[k], 0.1, &t));
        double *g = read_as_f64(t);
        double want = host_round_half(0.1);
        for (int64_t i = 0; i < sizes[k]; i++)
            cr_assert_eq(g[i], want, "size %lld element %lld: %g", (long long)sizes[k],
                         (long long)i, g[i]);
        free(g);
        /* fill_ of a view at an odd offset leaves the rest alone */
        clt_tensor *v = NULL;
        CHECK(clt_narrow(t, 0, 3, sizes[k] - 5, &v));
        CHECK(clt_fill_(v, -2.5));
        g = read_as_f64(t);
        for (int64_t i = 0; i < sizes[k]; i++)
            cr_assert_eq(g[i], i >= 3 && i < sizes[k] - 2 ? -2.5 : want, "element %lld: %g",
                         (long long)i, g[i]);
        free(g);
        clt_tensor_free(v);
        clt_tensor_free(t);
    }
}

/* Element-wise ops with half results: contiguous runs at odd offsets,
 * expanded operands ([7, 1] against [7, 45]), transposed ones and a
 * scalar, at sizes past one chunk. */
Test(half_store, elementwise_views_expanded_offsets)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t big = 20011, shp[2] = {7, 45}, col[2] = {7, 1};
    double *hv = half_values((size_t)big, 3);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT16, 1, &big, hv);
    for (int64_t off = 0; off < 5; off++) {
        clt_tensor *a = NULL, *b = NULL, *s = NULL, *m = NULL, *e = NULL;
        int64_t len = big - 2 * off - 1;
        CHECK(clt_narrow(x, 0, off, len, &a));
        CHECK(clt_narrow(x, 0, off + 1, len, &b));
        CHECK(clt_add(a, b, &s));
        CHECK(clt_mul_scalar(a, 0.5, &m));
        CHECK(clt_exp(b, &e));
        double *gs = read_as_f64(s), *gm = read_as_f64(m), *ge = read_as_f64(e);
        for (int64_t i = 0; i < len; i++) {
            cr_assert_eq(gs[i], host_round_half(hv[off + i] + hv[off + 1 + i]),
                         "add off %lld at %lld", (long long)off, (long long)i);
            cr_assert_eq(gm[i], hv[off + i] * 0.5, "mul off %lld at %lld", (long long)off,
                         (long long)i);
            double w = exp(hv[off + 1 + i]);
            cr_assert(fabs(ge[i] - w) <= 1e-3 * fabs(w), "exp off %lld at %lld: %g vs %g",
                      (long long)off, (long long)i, ge[i], w);
        }
        free(gs);
        free(gm);
        free(ge);
        clt_tensor_free(a);
        clt_tensor_free(b);
        clt_tensor_free(s);
        clt_tensor_free(m);
        clt_tensor_free(e);
    }
    /* [7, 1] expanded to [7, 45], plus a [7, 45] at offset 1; and its transpose */
    clt_tensor *c = NULL, *ex = NULL, *flat = NULL, *w = NULL, *r = NULL, *rt = NULL, *wt = NULL;
    CHECK(clt_narrow(x, 0, 0, 7, &flat));
    CHECK(clt_reshape(flat, 2, col, &c));
    CHECK(clt_expand(c, 2, shp, &ex));
    clt_tensor *n315 = NULL;
    CHECK(clt_narrow(x, 0, 1, 315, &n315));
    CHECK(clt_reshape(n315, 2, shp, &w));
    CHECK(clt_add(ex, w, &r));
    CHECK(clt_transpose(w, 0, 1, &wt));
    clt_tensor *ext = NULL;
    CHECK(clt_transpose(ex, 0, 1, &ext));
    CHECK(clt_mul(ext, wt, &rt));
    double *gr = read_as_f64(r), *grt = read_as_f64(rt);
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 45; j++) {
            cr_assert_eq(gr[i * 45 + j], host_round_half(hv[i] + hv[1 + i * 45 + j]),
                         "expanded add at %d,%d", i, j);
            cr_assert_eq(grt[j * 7 + i], host_round_half(hv[i] * hv[1 + i * 45 + j]),
                         "transposed mul at %d,%d", j, i);
        }
    /* an expand copied into half ([7, 1] -> [7, 45]) and a splat stored */
    clt_tensor *cp = NULL;
    CHECK(clt_contiguous(ex, &cp));
    double *gc = read_as_f64(cp);
    for (int i = 0; i < 7 * 45; i++)
        cr_assert_eq(gc[i], hv[i / 45], "expand copy at %d", i);
    free(gc);
    free(gr);
    free(grt);
    clt_tensor *all[] = {c, ex, flat, w, r, rt, wt, ext, n315, cp, x};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
    free(hv);
}

/* Cumulative sums and products of half along a dim with inner sizes of
 * 16 and more (the 16-lane kernel) and a remainder, from offset views. */
Test(half_store, scan_lanes_odd_inner_and_offsets)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t inners[] = {16, 17, 37, 64, 129};
    for (size_t k = 0; k < sizeof inners / sizeof inners[0]; k++) {
        int64_t R = 5, inner = inners[k], total = R * inner + 3;
        double *hv = half_values((size_t)total, (unsigned)(11 + k));
        for (int64_t i = 0; i < total; i++)
            hv[i] = hv[i] / 4 + (hv[i] >= 0 ? 0.5 : -0.5); /* products stay in range */
        clt_tensor *x = tensor_of(dev, CLT_FLOAT16, 1, &total, hv);
        for (int64_t off = 0; off < 3; off += 1) {
            clt_tensor *v = NULL, *m = NULL, *cs = NULL, *cp = NULL;
            int64_t shp[2] = {R, inner};
            CHECK(clt_narrow(x, 0, off, R * inner, &v));
            CHECK(clt_reshape(v, 2, shp, &m));
            CHECK(clt_cumsum(m, 0, &cs));
            CHECK(clt_cumprod(m, 0, &cp));
            double *gs = read_as_f64(cs), *gp = read_as_f64(cp);
            for (int64_t j = 0; j < inner; j++) {
                float s = 0, p = 1;
                for (int64_t r = 0; r < R; r++) {
                    double xv = hv[off + r * inner + j];
                    s += (float)xv;
                    p *= (float)xv;
                    double ws = host_round_half(s), wp = host_round_half(p);
                    cr_assert(fabs(gs[r * inner + j] - ws) <= 1e-3 * fabs(ws) + 1e-3,
                              "cumsum inner %lld off %lld at %lld,%lld: %g vs %g",
                              (long long)inner, (long long)off, (long long)r, (long long)j,
                              gs[r * inner + j], ws);
                    cr_assert(fabs(gp[r * inner + j] - wp) <= 2e-3 * fabs(wp) + 1e-4,
                              "cumprod inner %lld at %lld,%lld: %g vs %g", (long long)inner,
                              (long long)r, (long long)j, gp[r * inner + j], wp);
                }
            }
            free(gs);
            free(gp);
            clt_tensor_free(v);
            clt_tensor_free(m);
            clt_tensor_free(cs);
            clt_tensor_free(cp);
        }
        clt_tensor_free(x);
        free(hv);
    }
}

/* ---- convolution, pooling, interpolation, padding in half ---------------------------------- */

/* An op of up to three operands (NULL past nin) into *out. */
typedef clt_status (*op_fn)(clt_tensor *const *in, clt_tensor **out);

/* x[i] in float16 and float32 (the same half-exact values), both requiring
 * grad: the half op's output is half and equals the float32 op's rounded
 * to half by the host; so do the gradients from a half-exact output
 * gradient (within rtol where the op composes half steps: lp_pool). */
static void check_half_op(const char *what, int nin, const int *nds, const int64_t (*shapes)[5],
                          op_fn f, int grad_from, double rtol)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *h[3] = {NULL, NULL, NULL}, *s[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nin; i++) {
        size_t n = (size_t)host_numel(nds[i], shapes[i]);
        double *v = half_values(n, 101u + (unsigned)i * 7u);
        h[i] = tensor_of(dev, CLT_FLOAT16, nds[i], shapes[i], v);
        s[i] = tensor_of(dev, CLT_FLOAT32, nds[i], shapes[i], v);
        if (i >= grad_from) {
            CHECK(clt_set_requires_grad(h[i], 1));
            CHECK(clt_set_requires_grad(s[i], 1));
        }
        free(v);
    }
    clt_tensor *yh = NULL, *ys = NULL;
    CHECK(f(h, &yh));
    CHECK(f(s, &ys));
    cr_assert_eq(clt_tensor_dtype(yh), CLT_FLOAT16, "%s: result dtype %d", what,
                 (int)clt_tensor_dtype(yh));
    size_t n = (size_t)clt_tensor_numel(ys);
    cr_assert_eq((size_t)clt_tensor_numel(yh), n, "%s: %zu elements", what, n);
    cr_assert(n > 0, "%s: empty", what);
    double *gh = read_as_f64(yh), *gs = read_as_f64(ys);
    for (size_t i = 0; i < n; i++) {
        double want = host_round_half(gs[i]);
        cr_assert(rtol == 0 ? gh[i] == want : close_enough(gh[i], want, rtol, rtol),
                  "%s: element %zu: %.9g, want %.9g", what, i, gh[i], want);
    }
    free(gh);
    free(gs);
    if (grad_from < nin) {
        double *gv = half_values(n, 977);
        clt_tensor *goh = tensor_of(dev, CLT_FLOAT16, clt_tensor_ndim(ys), clt_tensor_shape(ys), gv);
        clt_tensor *gos = tensor_of(dev, CLT_FLOAT32, clt_tensor_ndim(ys), clt_tensor_shape(ys), gv);
        free(gv);
        CHECK(clt_backward(yh, goh, 0));
        CHECK(clt_backward(ys, gos, 0));
        for (int i = grad_from; i < nin; i++) {
            clt_tensor *dh = NULL, *ds = NULL;
            CHECK(clt_grad(h[i], &dh));
            CHECK(clt_grad(s[i], &ds));
            cr_assert_not_null(dh, "%s: no gradient for operand %d", what, i);
            cr_assert_eq(clt_tensor_dtype(dh), CLT_FLOAT16, "%s: gradient %d dtype", what, i);
            size_t m = (size_t)clt_tensor_numel(ds);
            double *a = read_as_f64(dh), *b = read_as_f64(ds);
            for (size_t k = 0; k < m; k++) {
                double want = host_round_half(b[k]);
                cr_assert(rtol == 0 ? a[k] == want : close_enough(a[k], want, rtol, rtol),
                          "%s: gradient %d element %zu: %.9g, want %.9g", what, i, k, a[k], want);
            }
            free(a);
            free(b);
            clt_tensor_free(dh);
            clt_tensor_free(ds);
        }
        clt_tensor_free(goh);
        clt_tensor_free(gos);
    }
    clt_tensor_free(yh);
    clt_tensor_free(ys);
    for (int i = 0; i < nin; i++) {
        clt_tensor_free(h[i]);
        clt_tensor_free(s[i]);
    }
}

static clt_status op_conv2d(clt_tensor *const *in, clt_tensor **out)
{
    clt_conv2d_opts o = {{2, 1}, {1, 2}, {1, 2}, 2};
    return clt_conv2d(in[0], in[1], in[2], &o, out);
}

static clt_status op_conv1d(clt_tensor *const *in, clt_tensor **out)
{
    clt_conv1d_opts o = {1, 1, 2, 1};
    return clt_conv1d(in[0], in[1], in[2], &o, out);
}

static clt_status op_conv3d(clt_tensor *const *in, clt_tensor **out)
{
    clt_conv3d_opts o = {{1, 2, 1}, {0, 1, 1}, {1, 1, 1}, 1};
    return clt_conv3d(in[0], in[1], in[2], &o, out);
}

static clt_status op_conv_t2d(clt_tensor *const *in, clt_tensor **out)
{
    clt_conv_transpose2d_opts o = {{2, 2}, {1, 0}, {1, 1}, 2, {1, 1}};
    return clt_conv_transpose2d(in[0], in[1], in[2], &o, out);
}

static clt_status op_conv_t1d(clt_tensor *const *in, clt_tensor **out)
{
    clt_conv_transpose1d_opts o = {3, 1, 2, 1, 1};
    return clt_conv_transpose1d(in[0], in[1], NULL, &o, out);
}

static clt_status op_conv_t3d(clt_tensor *const *in, clt_tensor **out)
{
    clt_conv_transpose3d_opts o = {{1, 2, 1}, {0, 0, 1}, {0, 1, 0}, 1, {1, 1, 2}};
    return clt_conv_transpose3d(in[0], in[1], in[2], &o, out);
}

Test(half_conv, conv_1d_2d_3d_grouped_dilated_transposed)
{
    const int nd3[3] = {4, 4, 1};
    const int64_t s2[3][5] = {{2, 4, 7, 6}, {6, 2, 3, 3}, {6}};
    check_half_op("conv2d", 3, nd3, s2, op_conv2d, 0, 0);
    const int nd1[3] = {3, 3, 1};
    const int64_t s1[3][5] = {{2, 3, 11}, {4, 3, 3}, {4}};
    check_half_op("conv1d", 3, nd1, s1, op_conv1d, 0, 0);
    const int nd5[3] = {5, 5, 1};
    const int64_t s3[3][5] = {{1, 2, 5, 4, 6}, {3, 2, 2, 3, 2}, {3}};
    check_half_op("conv3d", 3, nd5, s3, op_conv3d, 0, 0);
    const int64_t st2[3][5] = {{2, 4, 5, 4}, {4, 3, 3, 3}, {6}};
    check_half_op("conv_transpose2d", 3, nd3, st2, op_conv_t2d, 0, 0);
    const int ndu[2] = {2, 3};
    const int64_t st1[2][5] = {{3, 6}, {3, 2, 4}};
    check_half_op("conv_transpose1d (unbatched)", 2, ndu, st1, op_conv_t1d, 0, 0);
    const int64_t st3[3][5] = {{2, 2, 3, 3, 4}, {2, 3, 2, 2, 3}, {3}};
    check_half_op("conv_transpose3d", 3, nd5, st3, op_conv_t3d, 0, 0);
}

/* conv2d of half against a host loop in double, rounded to half: within
 * one rounding of half (float32 accumulation differs from double's only
 * far below it). */
Test(half_conv, conv2d_against_host_loops)
{
    clt_device *dev = get_device("cpu:0");
    enum { N = 2, C = 3, H = 6, W = 5, O = 4, K = 3 };
    const int64_t xs[4] = {N, C, H, W}, ws[4] = {O, C, K, K}, bs[1] = {O};
    double *x = half_values(N * C * H * W, 5), *w = half_values(O * C * K * K, 6),
           *b = half_values(O, 7);
    clt_tensor *xh = tensor_of(dev, CLT_FLOAT16, 4, xs, x), *wh = tensor_of(dev, CLT_FLOAT16, 4, ws, w),
               *bh = tensor_of(dev, CLT_FLOAT16, 1, bs, b), *y = NULL;
    clt_conv2d_opts o = CLT_CONV2D_DEFAULTS;
    o.padding[0] = o.padding[1] = 1;
    CHECK(clt_conv2d(xh, wh, bh, &o, &y));
    const int64_t ys[4] = {N, O, H, W};
    assert_shape(y, 4, ys);
    double *g = read_as_f64(y);
    for (int n = 0; n < N; n++)
        for (int oc = 0; oc < O; oc++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++) {
                    double acc = b[oc];
                    for (int c = 0; c < C; c++)
                        for (int ki = 0; ki < K; ki++)
                            for (int kj = 0; kj < K; kj++) {
                                int ii = i + ki - 1, jj = j + kj - 1;
                                if (ii >= 0 && ii < H && jj >= 0 && jj < W)
                                    acc += x[((n * C + c) * H + ii) * W + jj] *
                                           w[((oc * C + c) * K + ki) * K + kj];
                            }
                    double want = host_round_half(acc), got = g[((n * O + oc) * H + i) * W + j];
                    cr_assert(fabs(got - want) <= fabs(want) * 0x1p-10 + 0x1p-24,
                              "at %d,%d,%d,%d: %.9g, want %.9g", n, oc, i, j, got, want);
                }
    free(g);
    free(x);
    free(w);
    free(b);
    clt_tensor_free(xh);
    clt_tensor_free(wh);
    clt_tensor_free(bh);
    clt_tensor_free(y);
}

/* Mixed dtypes are refused with torch's message, not widened. */
Test(half_conv, mixed_dtypes_refused)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[4] = {1, 2, 4, 4}, ws[4] = {3, 2, 3, 3};
    clt_tensor *x = NULL, *w = NULL, *y = (clt_tensor *)&y;
    CHECK(clt_ones(dev, CLT_FLOAT16, 4, xs, &x));
    CHECK(clt_ones(dev, CLT_FLOAT32, 4, ws, &w));
    assert_error(clt_conv2d(x, w, NULL, NULL, &y), CLT_ERR_DTYPE_MISMATCH,
                 "should be the same");
    cr_assert_null(y);
    clt_tensor_free(x);
    clt_tensor_free(w);
}

static const int64_t K2[2] = {3, 2}, S2[2] = {2, 1}, P2[2] = {1, 1}, D2[2] = {1, 2};
static const int64_t K3[3] = {2, 3, 2}, S3[3] = {1, 2, 2}, P3[3] = {1, 1, 0}, D3[3] = {1, 1, 1};

static clt_status op_max2(clt_tensor *const *in, clt_tensor **out)
{
    clt_tensor *idx = NULL;
    clt_status st = clt_max_pool2d_with_indices(in[0], K2, S2, P2, D2, 1, out, &idx);
    clt_tensor_free(idx);
    return st;
}
static clt_status op_avg2(clt_tensor *const *in, clt_tensor **out)
{
    return clt_avg_pool2d(in[0], K2, S2, P2, 1, 0, out);
}
static clt_status op_max1(clt_tensor *const *in, clt_tensor **out)
{
    return clt_max_pool1d(in[0], 3, 2, 1, 1, 0, out);
}
static clt_status op_avg1(clt_tensor *const *in, clt_tensor **out)
{
    return clt_avg_pool1d(in[0], 3, 2, 1, 0, 1, out);
}
static clt_status op_max3(clt_tensor *const *in, clt_tensor **out)
{
    return clt_max_pool3d(in[0], K3, S3, P3, D3, 0, out);
}
static clt_status op_avg3(clt_tensor *const *in, clt_tensor **out)
{
    return clt_avg_pool3d(in[0], K3, S3, P3, 1, 1, out);
}
static clt_status op_aavg2(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t o[2] = {3, 5};
    return clt_adaptive_avg_pool2d(in[0], o, out);
}
static clt_status op_amax2(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t o[2] = {4, 3};
    clt_tensor *idx = NULL;
    clt_status st = clt_adaptive_max_pool2d(in[0], o, out, &idx);
    clt_tensor_free(idx);
    return st;
}
static clt_status op_aavg1(clt_tensor *const *in, clt_tensor **out)
{
    return clt_adaptive_avg_pool1d(in[0], 4, out);
}
static clt_status op_amax1(clt_tensor *const *in, clt_tensor **out)
{
    return clt_adaptive_max_pool1d(in[0], 5, out, NULL);
}
static clt_status op_aavg3(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t o[3] = {2, 3, 4};
    return clt_adaptive_avg_pool3d(in[0], o, out);
}
static clt_status op_amax3(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t o[3] = {3, 2, 3};
    return clt_adaptive_max_pool3d(in[0], o, out, NULL);
}
static clt_status op_lp2(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t k[2] = {2, 2};
    clt_tensor *a = NULL;
    /* lp of positive values (a negative base to the power 1/p is NaN) */
    clt_status st = clt_abs(in[0], &a);
    if (st == CLT_OK)
        st = clt_lp_pool2d(a, 2.0, k, NULL, 0, out);
    clt_tensor_free(a);
    return st;
}

Test(half_pool, max_avg_adaptive_lp_1d_2d_3d)
{
    const int nd4[1] = {4}, nd3[1] = {3}, nd5[1] = {5};
    const int64_t x4[1][5] = {{2, 3, 7, 9}}, x3[1][5] = {{2, 3, 11}}, x5[1][5] = {{2, 2, 5, 6, 7}};
    const int64_t u3[1][5] = {{3, 6, 8}};
    check_half_op("max_pool2d_with_indices", 1, nd4, x4, op_max2, 0, 0);
    check_half_op("avg_pool2d", 1, nd4, x4, op_avg2, 0, 0);
    check_half_op("max_pool2d (unbatched)", 1, nd3, u3, op_max2, 0, 0);
    check_half_op("max_pool1d", 1, nd3, x3, op_max1, 0, 0);
    check_half_op("avg_pool1d", 1, nd3, x3, op_avg1, 0, 0);
    check_half_op("max_pool3d", 1, nd5, x5, op_max3, 0, 0);
    check_half_op("avg_pool3d", 1, nd5, x5, op_avg3, 0, 0);
    check_half_op("adaptive_avg_pool2d", 1, nd4, x4, op_aavg2, 0, 0);
    check_half_op("adaptive_max_pool2d", 1, nd4, x4, op_amax2, 0, 0);
    check_half_op("adaptive_avg_pool1d", 1, nd3, x3, op_aavg1, 0, 0);
    check_half_op("adaptive_max_pool1d", 1, nd3, x3, op_amax1, 0, 0);
    check_half_op("adaptive_avg_pool3d", 1, nd5, x5, op_aavg3, 0, 0);
    check_half_op("adaptive_max_pool3d", 1, nd5, x5, op_amax3, 0, 0);
    /* composed of half steps, as torch's: within a few roundings */
    check_half_op("lp_pool2d", 1, nd4, x4, op_lp2, 0, 4e-3);
}

/* Indices of half max pooling are the float32 op's, int64. */
Test(half_pool, indices_match_float32)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[4] = {2, 3, 8, 7};
    double *v = half_values(2 * 3 * 8 * 7, 21);
    clt_tensor *h = tensor_of(dev, CLT_FLOAT16, 4, xs, v), *f = tensor_of(dev, CLT_FLOAT32, 4, xs, v);
    clt_tensor *yh = NULL, *ih = NULL, *yf = NULL, *iff = NULL;
    CHECK(clt_max_pool2d_with_indices(h, K2, S2, P2, D2, 0, &yh, &ih));
    CHECK(clt_max_pool2d_with_indices(f, K2, S2, P2, D2, 0, &yf, &iff));
    cr_assert_eq(clt_tensor_dtype(ih), CLT_INT64);
    size_t n = (size_t)clt_tensor_numel(iff);
    double *a = read_as_f64(ih), *b = read_as_f64(iff);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(a[i], b[i], "index %zu: %g vs %g", i, a[i], b[i]);
    /* unpooling half values with them */
    clt_tensor *uh = NULL, *uf = NULL, *ph = NULL, *pf = NULL, *jh = NULL, *jf = NULL;
    const int64_t osz[2] = {8, 7}, k2[2] = {2, 2};
    CHECK(clt_max_pool2d_with_indices(h, k2, NULL, NULL, NULL, 0, &ph, &jh));
    CHECK(clt_max_pool2d_with_indices(f, k2, NULL, NULL, NULL, 0, &pf, &jf));
    CHECK(clt_max_unpool2d(ph, jh, k2, NULL, NULL, osz, &uh));
    CHECK(clt_max_unpool2d(pf, jf, k2, NULL, NULL, osz, &uf));
    cr_assert_eq(clt_tensor_dtype(uh), CLT_FLOAT16);
    double *c = read_as_f64(uh), *d = read_as_f64(uf);
    for (size_t i = 0; i < (size_t)clt_tensor_numel(uf); i++)
        cr_assert_eq(c[i], d[i], "unpool %zu", i);
    free(a);
    free(b);
    free(c);
    free(d);
    free(v);
    clt_tensor *all[] = {h, f, yh, ih, yf, iff, uh, uf, ph, pf, jh, jf};
    for (size_t i = 0; i < 12; i++)
        clt_tensor_free(all[i]);
}

static clt_status op_nearest(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t s[2] = {11, 7};
    return clt_interpolate(in[0], s, NULL, CLT_INTERP_NEAREST, 0, out);
}
static clt_status op_bilinear(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t s[2] = {9, 13};
    return clt_interpolate(in[0], s, NULL, CLT_INTERP_BILINEAR, 0, out);
}
static clt_status op_bilinear_ac(clt_tensor *const *in, clt_tensor **out)
{
    const double f[2] = {1.5, 2.25};
    return clt_interpolate(in[0], NULL, f, CLT_INTERP_BILINEAR, 1, out);
}
static clt_status op_bicubic(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t s[2] = {10, 5};
    return clt_interpolate(in[0], s, NULL, CLT_INTERP_BICUBIC, 0, out);
}
static clt_status op_area(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t s[2] = {3, 4};
    return clt_interpolate(in[0], s, NULL, CLT_INTERP_AREA, 0, out);
}
static clt_status op_linear(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t s = 17;
    return clt_interpolate_nd(in[0], &s, NULL, CLT_INTERP_LINEAR, 1, 0, out);
}
static clt_status op_trilinear(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t s[3] = {4, 7, 5};
    return clt_interpolate_nd(in[0], s, NULL, CLT_INTERP_TRILINEAR, 0, 0, out);
}
static clt_status op_reflect(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t p[4] = {2, 1, 3, 0};
    return clt_pad(in[0], p, 4, CLT_PAD_REFLECT, 0, out);
}
static clt_status op_replicate(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t p[6] = {1, 2, 0, 3, 2, 1};
    return clt_pad(in[0], p, 6, CLT_PAD_REPLICATE, 0, out);
}
static clt_status op_constant(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t p[4] = {1, 2, 2, 1};
    return clt_pad(in[0], p, 4, CLT_PAD_CONSTANT, 0.25, out);
}
static clt_status op_unfold(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t k[2] = {2, 3};
    clt_fold_opts o = CLT_FOLD_DEFAULTS;
    o.padding[1] = 1;
    return clt_unfold(in[0], k, &o, out);
}
static clt_status op_fold(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t k[2] = {2, 2}, osz[2] = {4, 5};
    return clt_fold(in[0], osz, k, NULL, out);
}
static clt_status op_grid(clt_tensor *const *in, clt_tensor **out)
{
    clt_tensor *g = NULL;
    clt_status st = clt_mul_scalar(in[1], 0.25, &g);
    if (st == CLT_OK)
        st = clt_grid_sample(in[0], g, CLT_GRID_BILINEAR, CLT_GRID_PAD_BORDER, 0, out);
    clt_tensor_free(g);
    return st;
}
static clt_status op_affine(clt_tensor *const *in, clt_tensor **out)
{
    const int64_t size[4] = {2, 3, 5, 4};
    return clt_affine_grid(in[0], 4, size, 0, out);
}

Test(half_spatial, interpolate_pad_fold_grid)
{
    const int nd4[2] = {4, 4}, nd3[1] = {3}, nd5[1] = {5};
    const int64_t x4[1][5] = {{2, 3, 6, 5}}, x3[1][5] = {{2, 3, 7}}, x5[1][5] = {{1, 2, 3, 4, 3}};
    check_half_op("interpolate nearest", 1, nd4, x4, op_nearest, 0, 0);
    check_half_op("interpolate bilinear", 1, nd4, x4, op_bilinear, 0, 0);
    check_half_op("interpolate bilinear align_corners", 1, nd4, x4, op_bilinear_ac, 0, 0);
    check_half_op("interpolate bicubic", 1, nd4, x4, op_bicubic, 0, 0);
    check_half_op("interpolate area", 1, nd4, x4, op_area, 0, 0);
    check_half_op("interpolate linear", 1, nd3, x3, op_linear, 0, 0);
    check_half_op("interpolate trilinear", 1, nd5, x5, op_trilinear, 0, 0);
    check_half_op("pad reflect", 1, nd4, x4, op_reflect, 0, 0);
    check_half_op("pad replicate", 1, nd5, x5, op_replicate, 0, 0);
    check_half_op("pad constant", 1, nd4, x4, op_constant, 0, 0);
    check_half_op("unfold", 1, nd4, x4, op_unfold, 0, 0);
    const int64_t cols[1][5] = {{2, 12, 12}};
    check_half_op("fold", 1, nd3, cols, op_fold, 0, 0);
    const int64_t gs[2][5] = {{2, 3, 6, 5}, {2, 4, 3, 2}};
    check_half_op("grid_sample", 2, nd4, gs, op_grid, 0, 0);
    const int64_t th[1][5] = {{2, 2, 3}};
    check_half_op("affine_grid", 1, nd3, th, op_affine, 0, 0);
}

/* fractional max pooling of half with half samples: the float32 op's. */
Test(half_pool, fractional_with_samples)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[4] = {2, 3, 9, 8}, ss[3] = {2, 3, 2}, k[2] = {2, 2}, o[2] = {4, 5};
    double *v = half_values(2 * 3 * 9 * 8, 31), u[12];
    for (int i = 0; i < 12; i++)
        u[i] = (double)(i * 5 % 12) / 16.0;
    clt_tensor *h = tensor_of(dev, CLT_FLOAT16, 4, xs, v), *f = tensor_of(dev, CLT_FLOAT32, 4, xs, v);
    clt_tensor *sh = tensor_of(dev, CLT_FLOAT16, 3, ss, u), *sf = tensor_of(dev, CLT_FLOAT32, 3, ss, u);
    clt_tensor *yh = NULL, *yf = NULL;
    CHECK(clt_fractional_max_pool2d(h, k, o, NULL, sh, NULL, &yh, NULL));
    CHECK(clt_fractional_max_pool2d(f, k, o, NULL, sf, NULL, &yf, NULL));
    cr_assert_eq(clt_tensor_dtype(yh), CLT_FLOAT16);
    double *a = read_as_f64(yh), *b = read_as_f64(yf);
    for (size_t i = 0; i < (size_t)clt_tensor_numel(yf); i++)
        cr_assert_eq(a[i], b[i], "element %zu", i);
    free(a);
    free(b);
    free(v);
    clt_tensor *all[] = {h, f, sh, sf, yh, yf};
    for (size_t i = 0; i < 6; i++)
        clt_tensor_free(all[i]);
}

/* ---- autocast ---------------------------------------------------------------------------- */

static void assert_same_values(const clt_tensor *a, const clt_tensor *b, const char *what)
{
    size_t n = (size_t)clt_tensor_numel(b);
    cr_assert_eq((size_t)clt_tensor_numel(a), n, "%s: sizes", what);
    double *x = read_as_f64(a), *y = read_as_f64(b);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(x[i], y[i], "%s: element %zu: %.9g vs %.9g", what, i, x[i], y[i]);
    free(x);
    free(y);
}

static clt_tensor *leaf_f32(clt_device *dev, int nd, const int64_t *shape, unsigned seed)
{
    size_t n = (size_t)host_numel(nd, shape);
    double *v = half_values(n, seed);
    for (size_t i = 0; i < n; i++)
        v[i] += 1.0 / 4096; /* float32 values that half does not hold */
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, nd, shape, v);
    free(v);
    CHECK(clt_set_requires_grad(t, 1));
    return t;
}

/* matmul casts float32 operands to half (half result), sum casts half up
 * (float32 result); the backward pass (inside the region) brings float32
 * gradients to the float32 leaves, equal to those of the same casts made
 * by hand outside autocast. */
Test(autocast, products_lower_sums_float32_gradients_reach_leaves)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sa[2] = {5, 7}, sb[2] = {7, 3};
    clt_tensor *a = leaf_f32(dev, 2, sa, 1), *b = leaf_f32(dev, 2, sb, 2);
    clt_tensor *a2 = leaf_f32(dev, 2, sa, 1), *b2 = leaf_f32(dev, 2, sb, 2);
    cr_assert_eq(clt_autocast_is_enabled(dev), 0);
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    cr_assert_eq(clt_autocast_is_enabled(dev), 1);
    cr_assert_eq(clt_autocast_is_enabled(NULL), 1);
    clt_tensor *y = NULL, *s = NULL;
    CHECK(clt_matmul(a, b, &y));
    cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT16);
    CHECK(clt_sum(y, &s));
    cr_assert_eq(clt_tensor_dtype(s), CLT_FLOAT32);
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_autocast_exit());
    cr_assert_eq(clt_autocast_is_enabled(dev), 0);
    /* by hand */
    clt_tensor *ah = NULL, *bh = NULL, *y2 = NULL, *y2f = NULL, *s2 = NULL;
    CHECK(clt_to_dtype(a2, CLT_FLOAT16, &ah));
    CHECK(clt_to_dtype(b2, CLT_FLOAT16, &bh));
    CHECK(clt_matmul(ah, bh, &y2));
    cr_assert_eq(clt_tensor_dtype(y2), CLT_FLOAT16);
    CHECK(clt_to_dtype(y2, CLT_FLOAT32, &y2f));
    CHECK(clt_sum(y2f, &s2));
    CHECK(clt_backward(s2, NULL, 0));
    assert_same_values(y, y2, "matmul");
    assert_same_values(s, s2, "sum");
    clt_tensor *ga = NULL, *gb = NULL, *ga2 = NULL, *gb2 = NULL;
    CHECK(clt_grad(a, &ga));
    CHECK(clt_grad(b, &gb));
    CHECK(clt_grad(a2, &ga2));
    CHECK(clt_grad(b2, &gb2));
    cr_assert_not_null(ga);
    cr_assert_not_null(gb);
    cr_assert_eq(clt_tensor_dtype(ga), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_dtype(gb), CLT_FLOAT32);
    assert_same_values(ga, ga2, "grad a");
    assert_same_values(gb, gb2, "grad b");
    /* the gradient of sum(a b) wrt a is rowsum(b) in every row, within half */
    double *g = read_as_f64(ga), *bv = read_as_f64(b);
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 7; k++) {
            double w = 0;
            for (int j = 0; j < 3; j++)
                w += host_round_half(bv[k * 3 + j]);
            cr_assert(fabs(g[i * 7 + k] - w) <= 2e-3 * fabs(w) + 2e-3, "grad a %d,%d: %g vs %g",
                      i, k, g[i * 7 + k], w);
        }
    free(g);
    free(bv);
    clt_tensor *all[] = {a, b, a2, b2, y, s, ah, bh, y2, y2f, s2, ga, gb, ga2, gb2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* The float32 list: softmax, log_softmax, exp and a loss of half operands
 * give float32, equal to the ops on the widened values; ops on neither
 * list keep half; float64 is never cast. */
Test(autocast, float32_list_and_untouched_ops)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sh[2] = {4, 9};
    double *v = half_values(36, 9);
    clt_tensor *h = tensor_of(dev, CLT_FLOAT16, 2, sh, v), *f = tensor_of(dev, CLT_FLOAT32, 2, sh, v);
    clt_tensor *d = tensor_of(dev, CLT_FLOAT64, 2, sh, v);
    free(v);
    clt_tensor *r[6] = {NULL}, *w[6] = {NULL};
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_softmax(h, 1, &r[0]));
    CHECK(clt_log_softmax(h, 0, &r[1]));
    CHECK(clt_exp(h, &r[2]));
    CHECK(clt_mse_loss(h, f, CLT_REDUCTION_MEAN, &r[3]));
    CHECK(clt_relu(h, &r[4]));
    clt_tensor *dd = NULL, *dt = NULL;
    CHECK(clt_transpose(d, 0, 1, &dt));
    CHECK(clt_matmul(d, dt, &dd));
    CHECK(clt_autocast_exit());
    for (int i = 0; i < 4; i++)
        cr_assert_eq(clt_tensor_dtype(r[i]), CLT_FLOAT32, "op %d dtype %d", i,
                     (int)clt_tensor_dtype(r[i]));
    cr_assert_eq(clt_tensor_dtype(r[4]), CLT_FLOAT16, "relu is on neither list");
    cr_assert_eq(clt_tensor_dtype(dd), CLT_FLOAT64, "float64 is not cast");
    CHECK(clt_softmax(f, 1, &w[0]));
    CHECK(clt_log_softmax(f, 0, &w[1]));
    CHECK(clt_exp(f, &w[2]));
    CHECK(clt_mse_loss(f, f, CLT_REDUCTION_MEAN, &w[3]));
    for (int i = 0; i < 4; i++)
        assert_same_values(r[i], w[i], "float32 list");
    double *m = read_as_f64(r[3]);
    cr_assert_eq(m[0], 0.0);
    free(m);
    for (int i = 0; i < 6; i++) {
        clt_tensor_free(r[i]);
        clt_tensor_free(w[i]);
    }
    clt_tensor *all[] = {h, f, d, dd, dt};
    for (size_t i = 0; i < 5; i++)
        clt_tensor_free(all[i]);
}

/* A float32 Linear and Conv2d under autocast: half outputs, a float32
 * loss, float32 gradients on every parameter. */
Test(autocast, layers_train_with_float32_parameters)
{
    clt_device *dev = get_device("cpu:0");
    clt_module *lin = NULL, *conv = NULL;
    CHECK(clt_linear(dev, 6, 4, 1, NULL, &lin));
    CHECK(clt_conv2d_layer(dev, 2, 3, 3, 3, NULL, 1, NULL, &conv));
    const int64_t xs[2] = {5, 6}, cs[4] = {2, 2, 5, 5};
    clt_tensor *x = leaf_f32(dev, 2, xs, 4), *c = leaf_f32(dev, 4, cs, 5);
    clt_tensor *y = NULL, *z = NULL, *l1 = NULL, *l = NULL, *zs = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_module_forward(lin, x, &y));
    CHECK(clt_module_forward(conv, c, &z));
    cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT16);
    cr_assert_eq(clt_tensor_dtype(z), CLT_FLOAT16);
    CHECK(clt_sum(z, &zs));
    clt_tensor *zero = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){5, 4}, &zero));
    CHECK(clt_mse_loss(y, zero, CLT_REDUCTION_SUM, &l1));
    cr_assert_eq(clt_tensor_dtype(l1), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_dtype(zs), CLT_FLOAT32);
    CHECK(clt_add(l1, zs, &l));
    CHECK(clt_autocast_exit());
    CHECK(clt_backward(l, NULL, 0));
    clt_module *ms[2] = {lin, conv};
    for (int k = 0; k < 2; k++) {
        clt_tensor **ps = NULL;
        size_t np = 0;
        CHECK(clt_module_parameters(ms[k], &ps, &np));
        cr_assert_eq(np, 2);
        for (size_t i = 0; i < np; i++) {
            clt_tensor *g = NULL;
            CHECK(clt_grad(ps[i], &g));
            cr_assert_not_null(g, "module %d parameter %zu has no gradient", k, i);
            cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32);
            double *gv = read_as_f64(g);
            double norm = 0;
            for (int64_t j = 0; j < clt_tensor_numel(g); j++) {
                cr_assert(isfinite(gv[j]));
                norm += fabs(gv[j]);
            }
            cr_assert(norm > 0, "module %d parameter %zu: zero gradient", k, i);
            free(gv);
            clt_tensor_free(g);
        }
        clt_free(ps);
    }
    /* and the float32 inputs get float32 gradients */
    clt_tensor *gx = NULL;
    CHECK(clt_grad(c, &gx));
    cr_assert_eq(clt_tensor_dtype(gx), CLT_FLOAT32);
    clt_tensor_free(gx);
    clt_tensor *all[] = {x, c, y, z, l1, l, zs, zero};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
    clt_module_free(lin);
    clt_module_free(conv);
}

/* Half operands under autocast: the lower-precision ops run in half as
 * they are (the float32 computation inside conv is not cast back), with
 * the values of the same ops outside autocast. */
Test(autocast, half_operands_stay_half)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[4] = {2, 3, 6, 5}, ws[4] = {4, 3, 3, 3}, ms[2] = {6, 5}, bs[1] = {6};
    double *xv = half_values(2 * 3 * 6 * 5, 61), *wv = half_values(4 * 3 * 3 * 3, 62);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT16, 4, xs, xv), *w = tensor_of(dev, CLT_FLOAT16, 4, ws, wv);
    clt_tensor *m = tensor_of(dev, CLT_FLOAT16, 2, ms, xv), *b = tensor_of(dev, CLT_FLOAT16, 1, bs, wv);
    const int64_t wts[4] = {3, 2, 3, 3};
    clt_tensor *wt = tensor_of(dev, CLT_FLOAT16, 4, wts, wv);
    free(xv);
    free(wv);
    clt_tensor *r[4] = {NULL}, *q[4] = {NULL}, *mt = NULL;
    CHECK(clt_transpose(m, 0, 1, &mt));
    for (int pass = 0; pass < 2; pass++) {
        clt_tensor **o = pass ? q : r;
        if (pass == 0)
            CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
        CHECK(clt_conv2d(x, w, NULL, NULL, &o[0]));
        CHECK(clt_conv_transpose2d(x, wt, NULL, NULL, &o[1]));
        CHECK(clt_matmul(m, mt, &o[2]));
        CHECK(clt_addmm(b, m, mt, 1.0, 1.0, &o[3]));
        if (pass == 0)
            CHECK(clt_autocast_exit());
    }
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(clt_tensor_dtype(r[i]), CLT_FLOAT16, "op %d", i);
        assert_same_values(r[i], q[i], "half under autocast");
    }
    for (int i = 0; i < 4; i++) {
        clt_tensor_free(r[i]);
        clt_tensor_free(q[i]);
    }
    clt_tensor *all[] = {x, w, m, b, mt, wt};
    for (size_t i = 0; i < 6; i++)
        clt_tensor_free(all[i]);
}

/* Regions nest (device NULL turns autocast off inside), the dtype must
 * be float16, exit needs an open region, binary_cross_entropy is
 * refused, and ops on other devices or threads are untouched. */
static void *other_thread(void *arg)
{
    return (void *)(intptr_t)clt_autocast_is_enabled(NULL);
}

Test(autocast, regions_errors_threads)
{
    clt_device *dev = get_device("cpu:0");
    assert_error(clt_autocast_exit(), CLT_ERR_INVALID_ARGUMENT, "no autocast region");
    assert_error(clt_autocast_enter(dev, CLT_FLOAT32), CLT_ERR_INVALID_ARGUMENT, "float16");
    cr_assert_eq(clt_autocast_is_enabled(NULL), 0);
    const int64_t s[2] = {3, 3};
    clt_tensor *a = leaf_f32(dev, 2, s, 3), *y = NULL, *p = NULL, *t = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_autocast_enter(NULL, CLT_FLOAT16));
    cr_assert_eq(clt_autocast_is_enabled(dev), 0);
    CHECK(clt_mm(a, a, &y));
    cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT32, "autocast off inside");
    clt_tensor_free(y);
    CHECK(clt_autocast_exit());
    cr_assert_eq(clt_autocast_is_enabled(dev), 1);
    pthread_t th;
    void *res = NULL;
    cr_assert_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
    pthread_join(th, &res);
    cr_assert_eq((intptr_t)res, 0, "another thread has its own state");
    CHECK(clt_mm(a, a, &y));
    cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT16);
    CHECK(clt_sigmoid(a, &p));
    CHECK(clt_ones_like(a, &t));
    clt_tensor *bce = (clt_tensor *)&bce;
    assert_error(clt_binary_cross_entropy(p, t, NULL, CLT_REDUCTION_MEAN, &bce),
                 CLT_ERR_INVALID_ARGUMENT, "with_logits");
    cr_assert_null(bce);
    CHECK(clt_autocast_exit());
    size_t nd = 0;
    CHECK(clt_device_count(&nd));
    if (nd > 1) {
        clt_device *other = second_device(dev);
        CHECK(clt_autocast_enter(other, CLT_FLOAT16));
        clt_tensor *y2 = NULL;
        CHECK(clt_mm(a, a, &y2));
        cr_assert_eq(clt_tensor_dtype(y2), CLT_FLOAT32, "a region of another device");
        clt_tensor_free(y2);
        CHECK(clt_autocast_exit());
    }
    clt_tensor *all[] = {a, y, p, t};
    for (size_t i = 0; i < 4; i++)
        clt_tensor_free(all[i]);
}

/* torch's autocast recipe end to end: a float32 Linear trained under
 * autocast with a GradScaler and SGD; the loss falls, and every step is
 * taken at the default scale (no inf in half here). */
Test(autocast, trains_with_grad_scaler)
{
    clt_device *dev = get_device("cpu:0");
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(7, &gen));
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 8, 3, 1, gen, &lin));
    clt_tensor **ps = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(lin, &ps, &np));
    clt_sgd_opts so = {0.1, 0.0, 0, 0, 0};
    clt_optimizer *opt = NULL;
    CHECK(clt_sgd(ps, np, &so, &opt));
    clt_grad_scaler *sc = NULL;
    CHECK(clt_grad_scaler_new(NULL, &sc));
    const int64_t xs[2] = {16, 8}, ys[2] = {16, 3};
    clt_tensor *x = NULL, *y = NULL;
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, xs, &x));
    CHECK(clt_randn(gen, dev, CLT_FLOAT32, 2, ys, &y));
    double first = 0, last = 0;
    for (int t = 0; t < 40; t++) {
        CHECK(clt_optimizer_zero_grad(opt, 1));
        clt_tensor *p = NULL, *l = NULL, *scaled = NULL;
        CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
        CHECK(clt_module_forward(lin, x, &p));
        cr_assert_eq(clt_tensor_dtype(p), CLT_FLOAT16);
        CHECK(clt_mse_loss(p, y, CLT_REDUCTION_MEAN, &l));
        cr_assert_eq(clt_tensor_dtype(l), CLT_FLOAT32);
        CHECK(clt_autocast_exit());
        CHECK(clt_grad_scaler_scale(sc, l, &scaled));
        CHECK(clt_backward(scaled, NULL, 0));
        float lv = 0;
        CHECK(clt_tensor_read(l, &lv, sizeof lv));
        if (t == 0)
            first = lv;
        last = lv;
        int stepped = -1;
        CHECK(clt_grad_scaler_step(sc, opt, &stepped));
        cr_assert_eq(stepped, 1, "step %d skipped", t);
        CHECK(clt_grad_scaler_update(sc, NULL));
        clt_tensor_free(p);
        clt_tensor_free(l);
        clt_tensor_free(scaled);
    }
    cr_assert(last < 0.9 * first, "loss %g -> %g", first, last);
    cr_assert_eq(clt_grad_scaler_get_scale(sc), 65536.0);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_free(ps);
    clt_grad_scaler_free(sc);
    clt_optimizer_free(opt);
    clt_module_free(lin);
    clt_generator_free(gen);
}
