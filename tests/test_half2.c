/* test_half2.c: float16 beyond the element-wise ops: the 16-wide half
 * stores of fill, element-wise and scan kernels at odd sizes and offsets
 * (views, expanded and non-contiguous operands); convolutions, pooling,
 * interpolation and padding of half against the float32 op on the same
 * (half-exact) values rounded once, gradients included; and autocast. */
#include <math.h>
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

static clt_tensor *rand_tensor(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                               unsigned seed)
{
    size_t n = (size_t)host_numel(nd, shape);
    double *v = half_values(n, seed);
    clt_tensor *t = tensor_of(dev, dt, nd, shape, v);
    free(v);
    return t;
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
