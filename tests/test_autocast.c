/* test_autocast.c: the rest of torch 1.13's CUDA autocast (the main lists
 * are in test_half2.c): the cast cache of weights (one cast per region,
 * released with it, per thread, never stale), the promote list, and the
 * float16 and float32 list additions, each against the same ops on
 * operands cast by hand outside autocast, gradients included. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "internal.h"

/* n values that half holds exactly (multiples of 1/64 in [-4, 4]), plus
 * off when float32 operands should not be half-exact. */
static double *values(size_t n, unsigned seed, double off)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((int)((seed >> 9) % 513) - 256) / 64.0 + off;
    }
    return v;
}

static clt_tensor *make(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                        unsigned seed, int grad)
{
    size_t n = (size_t)host_numel(nd, shape);
    double *v = values(n, seed, dt == CLT_FLOAT32 ? 1.0 / 4096 : 0.0);
    clt_tensor *t = tensor_of(dev, dt, nd, shape, v);
    free(v);
    if (grad)
        CHECK(clt_set_requires_grad(t, 1));
    return t;
}

static clt_tensor *cast(const clt_tensor *t, clt_dtype dt)
{
    clt_tensor *c = NULL;
    CHECK(clt_to_dtype(t, dt, &c));
    return c;
}

static void same(const clt_tensor *a, const clt_tensor *b, const char *what)
{
    cr_assert_eq(clt_tensor_dtype(a), clt_tensor_dtype(b), "%s: dtype %s vs %s", what,
                 clt_dtype_name(clt_tensor_dtype(a)), clt_dtype_name(clt_tensor_dtype(b)));
    size_t n = (size_t)clt_tensor_numel(b);
    cr_assert_eq((size_t)clt_tensor_numel(a), n, "%s: sizes", what);
    double *x = read_as_f64(a), *y = read_as_f64(b);
    for (size_t i = 0; i < n; i++)
        cr_assert(x[i] == y[i] || (isnan(x[i]) && isnan(y[i])),
                  "%s: element %zu: %.9g vs %.9g", what, i, x[i], y[i]);
    free(x);
    free(y);
}

static void same_grad(const clt_tensor *a, const clt_tensor *b, clt_dtype want, const char *what)
{
    clt_tensor *ga = NULL, *gb = NULL;
    CHECK(clt_grad(a, &ga));
    CHECK(clt_grad(b, &gb));
    cr_assert_not_null(ga, "%s: no gradient", what);
    cr_assert_not_null(gb, "%s: no reference gradient", what);
    cr_assert_eq(clt_tensor_dtype(ga), want, "%s: gradient in %s", what,
                 clt_dtype_name(clt_tensor_dtype(ga)));
    same(ga, gb, what);
    clt_tensor_free(ga);
    clt_tensor_free(gb);
}

/* sum(y) in float32, backward. */
static void backward_sum(const clt_tensor *y)
{
    clt_tensor *yf = cast(y, CLT_FLOAT32), *s = NULL;
    CHECK(clt_sum(yf, &s));
    CHECK(clt_backward(s, NULL, 0));
    clt_tensor_free(yf);
    clt_tensor_free(s);
}

/* Column k of a 2-D t, 1-D (recorded). */
static clt_tensor *column(const clt_tensor *t, int64_t k)
{
    clt_tensor *n = NULL, *c = NULL;
    CHECK(clt_narrow(t, 1, k, 1, &n));
    CHECK(clt_squeeze(n, 1, &c));
    clt_tensor_free(n);
    return c;
}

static size_t cache_entries(void)
{
    size_t n = 0;
    clt__autocast_cache_stats(&n, NULL);
    return n;
}

static uint64_t cache_hits(void)
{
    uint64_t h = 0;
    clt__autocast_cache_stats(NULL, &h);
    return h;
}

/* ---- the cast cache ----------------------------------------------------------------- */

/* A Linear applied twice in one region casts its weight and bias once:
 * the second forward finds both casts in the cache; the outermost exit
 * empties it (an inner region's exit does not); the gradient of the two
 * forwards is twice that of one, in float32. */
Test(autocast_cache, linear_twice_casts_weights_once)
{
    clt_device *dev = get_device("cpu:0");
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 6, 4, 1, NULL, &lin));
    const int64_t xs[2] = {5, 6};
    clt_tensor *x = make(dev, CLT_FLOAT32, 2, xs, 1, 0), *y1 = NULL, *y2 = NULL;
    cr_assert_eq(cache_entries(), 0);
    uint64_t h0 = cache_hits();
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_module_forward(lin, x, &y1));
    cr_assert_eq(cache_entries(), 2, "weight and bias cached: %zu", cache_entries());
    cr_assert_eq(cache_hits(), h0);
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_module_forward(lin, x, &y2));
    CHECK(clt_autocast_exit());
    cr_assert_eq(cache_hits(), h0 + 2, "the second forward reuses both casts");
    cr_assert_eq(cache_entries(), 2, "an inner region's exit keeps the cache");
    cr_assert_eq(clt_tensor_dtype(y1), CLT_FLOAT16);
    same(y1, y2, "the two forwards");
    CHECK(clt_autocast_exit());
    cr_assert_eq(cache_entries(), 0, "the outermost exit empties the cache");

    clt_tensor *y = NULL;
    CHECK(clt_add(y1, y2, &y));
    backward_sum(y);
    clt_tensor **ps = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(lin, &ps, &np));
    cr_assert_eq(np, 2);
    clt_tensor *g2[2] = {NULL, NULL};
    for (size_t i = 0; i < np; i++) {
        CHECK(clt_grad(ps[i], &g2[i]));
        cr_assert_not_null(g2[i]);
        cr_assert_eq(clt_tensor_dtype(g2[i]), CLT_FLOAT32);
        clt_tensor *copy = NULL;
        CHECK(clt_clone(g2[i], &copy));
        clt_tensor_free(g2[i]);
        g2[i] = copy;
        CHECK(clt_zero_grad(ps[i], 1));
    }
    /* one forward, its own region (cast anew) */
    clt_tensor *y3 = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_module_forward(lin, x, &y3));
    cr_assert_eq(cache_hits(), h0 + 2, "a new region casts anew");
    CHECK(clt_autocast_exit());
    backward_sum(y3);
    for (size_t i = 0; i < np; i++) {
        clt_tensor *g = NULL, *twice = NULL;
        CHECK(clt_grad(ps[i], &g));
        CHECK(clt_mul_scalar(g, 2.0, &twice));
        same(g2[i], twice, "twice the gradient of one forward");
        double *gv = read_as_f64(g);
        double norm = 0;
        for (int64_t j = 0; j < clt_tensor_numel(g); j++)
            norm += fabs(gv[j]);
        cr_assert(isfinite(norm) && norm > 0, "parameter %zu: gradient %g", i, norm);
        free(gv);
        clt_tensor_free(g);
        clt_tensor_free(twice);
        clt_tensor_free(g2[i]);
    }
    clt_free(ps);
    clt_tensor *all[] = {x, y1, y2, y, y3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
    clt_module_free(lin);
}

/* The cache holds a weight and its cast after the caller let both go, and
 * nothing once the region closes. */
Test(autocast_cache, released_with_the_region)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[2] = {4, 8}, ws[2] = {8, 16};
    clt_tensor *x = make(dev, CLT_FLOAT32, 2, xs, 2, 0);
    uint64_t base = mem_stats(dev).allocated;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    clt_tensor *w = make(dev, CLT_FLOAT32, 2, ws, 3, 1), *y = NULL;
    CHECK(clt_mm(x, w, &y));
    clt_tensor_free(y);
    clt_tensor_free(w);
    cr_assert_eq(cache_entries(), 1);
    cr_assert(mem_stats(dev).allocated > base, "the cache holds the weight and its cast");
    CHECK(clt_autocast_exit());
    cr_assert_eq(mem_stats(dev).allocated, base, "%llu bytes left after the region",
                 (unsigned long long)(mem_stats(dev).allocated - base));
    clt_tensor_free(x);
}

/* Only float32 leaves that require grad are cached: activations, leaves
 * without grad and computed tensors are cast at each op. */
Test(autocast_cache, only_weights)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s[2] = {3, 3};
    clt_tensor *a = make(dev, CLT_FLOAT32, 2, s, 4, 0), *w = make(dev, CLT_FLOAT32, 2, s, 5, 1);
    clt_tensor *w2 = NULL, *y = NULL, *z = NULL;
    CHECK(clt_mul_scalar(w, 0.5, &w2)); /* computed: not a leaf */
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_mm(a, w2, &y));
    CHECK(clt_mm(a, a, &z));
    cr_assert_eq(cache_entries(), 0, "no weight was read");
    clt_tensor_free(z);
    CHECK(clt_mm(a, w, &z));
    cr_assert_eq(cache_entries(), 1);
    CHECK(clt_autocast_exit());
    clt_tensor *all[] = {a, w, w2, y, z};
    for (size_t i = 0; i < 5; i++)
        clt_tensor_free(all[i]);
}

/* A weight written in place (under no_grad, as an optimizer) inside the
 * region is cast again, not read stale; a cast made without grad is not
 * handed to an op that records (its gradient would not reach the
 * weight). */
Test(autocast_cache, never_stale_and_grad_mode_kept)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[2] = {4, 5}, ws[2] = {5, 3};
    clt_tensor *x = make(dev, CLT_FLOAT32, 2, xs, 6, 0), *w = make(dev, CLT_FLOAT32, 2, ws, 7, 1);
    clt_tensor *y0 = NULL, *y1 = NULL, *y2 = NULL, *twice = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    int prev = clt_set_grad_enabled(0);
    CHECK(clt_mm(x, w, &y0));
    clt_set_grad_enabled(prev);
    cr_assert_eq(cache_entries(), 1);
    CHECK(clt_mm(x, w, &y1));
    cr_assert_eq(cache_entries(), 2, "a recorded cast beside the one made without grad");
    cr_assert_not_null(clt_grad_fn_name(y1));
    same(y0, y1, "with and without grad");
    prev = clt_set_grad_enabled(0);
    CHECK(clt_mul_scalar_(w, 2.0));
    clt_set_grad_enabled(prev);
    CHECK(clt_mm(x, w, &y2));
    CHECK(clt_autocast_exit());
    /* doubling is exact in half: the products double exactly */
    CHECK(clt_mul_scalar(y1, 2.0, &twice));
    same(y2, twice, "after the in-place write");
    backward_sum(y1);
    clt_tensor *g = NULL;
    CHECK(clt_grad(w, &g));
    cr_assert_not_null(g, "the recorded cast brings the gradient to the weight");
    cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32);
    /* d sum(x w) / dw[k][j] = sum_i x[i][k] (x rounded to half) */
    double *xv = read_as_f64(x), *gv = read_as_f64(g);
    for (int k = 0; k < 5; k++)
        for (int j = 0; j < 3; j++) {
            double want = 0;
            for (int i = 0; i < 4; i++)
                want += (double)(_Float16)xv[i * 5 + k];
            cr_assert(fabs(gv[k * 3 + j] - want) <= 1e-3 * (1 + fabs(want)), "%d,%d: %g vs %g",
                      k, j, gv[k * 3 + j], want);
        }
    free(xv);
    free(gv);
    clt_tensor *all[] = {x, w, y0, y1, y2, twice, g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* Each thread has its own cache. */
static clt_device *thread_dev;
static clt_tensor *thread_w;

static void *thread_body(void *arg)
{
    (void)arg;
    intptr_t bad = 0;
    const int64_t s[2] = {2, 3};
    clt_tensor *x = NULL, *y = NULL;
    if (cache_entries() != 0)
        bad |= 1;
    if (clt_zeros(thread_dev, CLT_FLOAT32, 2, s, &x) != CLT_OK ||
        clt_autocast_enter(thread_dev, CLT_FLOAT16) != CLT_OK)
        return (void *)(intptr_t)2;
    if (clt_mm(x, thread_w, &y) != CLT_OK || cache_entries() != 1 || cache_hits() != 0)
        bad |= 4;
    clt_tensor_free(y);
    if (clt_autocast_exit() != CLT_OK || cache_entries() != 0)
        bad |= 8;
    clt_tensor_free(x);
    return (void *)bad;
}

Test(autocast_cache, per_thread)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[2] = {2, 3}, ws[2] = {3, 3};
    clt_tensor *x = make(dev, CLT_FLOAT32, 2, xs, 8, 0), *y = NULL;
    thread_dev = dev;
    thread_w = make(dev, CLT_FLOAT32, 2, ws, 9, 1);
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_mm(x, thread_w, &y));
    uint64_t h = cache_hits();
    cr_assert_eq(cache_entries(), 1);
    pthread_t th;
    void *res = NULL;
    cr_assert_eq(pthread_create(&th, NULL, thread_body, NULL), 0);
    pthread_join(th, &res);
    cr_assert_eq((intptr_t)res, 0, "the other thread saw %ld", (long)(intptr_t)res);
    cr_assert_eq(cache_entries(), 1, "this thread's cache is untouched");
    cr_assert_eq(cache_hits(), h);
    CHECK(clt_autocast_exit());
    clt_tensor_free(y);
    clt_tensor_free(x);
    clt_tensor_free(thread_w);
}

/* ---- the promote list --------------------------------------------------------------- */

/* Mixed float16 and float32 operands run in float32 (those that refuse
 * mixed dtypes outside autocast too), with the values of the float16 ones
 * cast by hand; all-half operands stay half; float64 is not touched. */
Test(autocast_promote, mixed_operands_run_in_float32)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s3[1] = {3}, m[2] = {4, 3}, w3[3] = {2, 3, 3}, idx_s[1] = {2};
    clt_tensor *hv = make(dev, CLT_FLOAT16, 1, s3, 10, 1), *fv = make(dev, CLT_FLOAT32, 1, s3, 11, 1);
    clt_tensor *hv2 = make(dev, CLT_FLOAT16, 1, s3, 10, 1), *fv2 = make(dev, CLT_FLOAT32, 1, s3, 11, 1);
    clt_tensor *hm = make(dev, CLT_FLOAT16, 2, m, 12, 0), *fm = make(dev, CLT_FLOAT32, 2, m, 13, 0);
    clt_tensor *fw = make(dev, CLT_FLOAT32, 3, w3, 14, 0);
    clt_tensor *hmf = cast(hm, CLT_FLOAT32), *hvf = NULL;
    double iv[2] = {2, 0};
    clt_tensor *idx = tensor_of(dev, CLT_INT64, 1, idx_s, iv);
    clt_tensor *sidx = NULL;
    {
        double sv[12] = {0, 1, 2, 2, 2, 1, 0, 0, 1, 1, 2, 0};
        sidx = tensor_of(dev, CLT_INT64, 2, m, sv);
    }
    const clt_tensor *ind[1] = {idx};
    const int64_t vs[2] = {2, 3};
    clt_tensor *vals = make(dev, CLT_FLOAT32, 2, vs, 15, 0);
    clt_tensor *r[9] = {NULL}, *q[9] = {NULL};
    const char *names[9] = {"dot", "cross", "tensordot", "atan2", "addcmul", "addcdiv",
                            "index_put", "scatter_add", "bilinear"};
    for (int pass = 0; pass < 2; pass++) {
        clt_tensor **o = pass ? q : r;
        const clt_tensor *h = pass ? hmf : hm, *a = pass ? NULL : hv, *b = pass ? NULL : fv;
        if (pass == 1) {
            hvf = cast(hv2, CLT_FLOAT32);
            a = hvf;
            b = fv2;
        } else {
            CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
        }
        CHECK(clt_dot(a, b, &o[0]));
        CHECK(clt_cross(h, fm, 1, &o[1]));
        CHECK(clt_tensordot(h, fm, 1, (const int[]){0}, (const int[]){0}, &o[2]));
        CHECK(clt_atan2(h, fm, &o[3]));
        CHECK(clt_addcmul(h, fm, h, 0.5, &o[4]));
        CHECK(clt_addcdiv(fm, h, fm, 0.5, &o[5]));
        CHECK(clt_index_put(h, ind, 1, vals, 0, &o[6]));
        CHECK(clt_scatter_add(h, 1, sidx, fm, &o[7]));
        CHECK(clt_bilinear(h, h, fw, NULL, &o[8]));
        if (pass == 0)
            CHECK(clt_autocast_exit());
    }
    for (int i = 0; i < 9; i++) {
        cr_assert_eq(clt_tensor_dtype(r[i]), CLT_FLOAT32, "%s", names[i]);
        same(r[i], q[i], names[i]);
    }
    /* dot against the host; gradients in each leaf's dtype */
    double *a = read_as_f64(hv), *b = read_as_f64(fv), *d = read_as_f64(r[0]), want = 0;
    for (int i = 0; i < 3; i++)
        want += a[i] * b[i];
    cr_assert(fabs(d[0] - want) <= 1e-5 * (1 + fabs(want)), "dot %g vs %g", d[0], want);
    free(a);
    free(b);
    free(d);
    backward_sum(r[0]);
    backward_sum(q[0]);
    same_grad(hv, hv2, CLT_FLOAT16, "dot's half operand");
    same_grad(fv, fv2, CLT_FLOAT32, "dot's float32 operand");

    /* half alone stays half; float64 is left to the op (which refuses) */
    clt_tensor *hh = NULL, *d64 = make(dev, CLT_FLOAT64, 1, s3, 16, 0), *bad = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_dot(hv, hv, &hh));
    cr_assert_eq(clt_tensor_dtype(hh), CLT_FLOAT16);
    assert_error(clt_dot(d64, hv, &bad), CLT_ERR_DTYPE_MISMATCH, "same dtype");
    cr_assert_null(bad);
    CHECK(clt_autocast_exit());
    for (int i = 0; i < 9; i++) {
        clt_tensor_free(r[i]);
        clt_tensor_free(q[i]);
    }
    clt_tensor *all[] = {hv, fv, hv2, fv2, hm, fm, fw, hmf, hvf, idx, sidx, vals, hh, d64};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* grid_sample of a half input on a float32 grid: float32, as the input
 * cast by hand. */
Test(autocast_promote, grid_sample)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[4] = {1, 2, 4, 4}, gs[4] = {1, 3, 3, 2};
    clt_tensor *x = make(dev, CLT_FLOAT16, 4, xs, 17, 0);
    double *gv = values(18, 18, 0.0);
    for (int i = 0; i < 18; i++)
        gv[i] /= 4.5; /* inside [-1, 1] */
    clt_tensor *g = tensor_of(dev, CLT_FLOAT32, 4, gs, gv);
    free(gv);
    clt_tensor *xf = cast(x, CLT_FLOAT32), *r = NULL, *q = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_grid_sample(x, g, CLT_GRID_BILINEAR, CLT_GRID_PAD_ZEROS, 0, &r));
    CHECK(clt_autocast_exit());
    CHECK(clt_grid_sample(xf, g, CLT_GRID_BILINEAR, CLT_GRID_PAD_ZEROS, 0, &q));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    same(r, q, "grid_sample");
    clt_tensor *all[] = {x, g, xf, r, q};
    for (size_t i = 0; i < 5; i++)
        clt_tensor_free(all[i]);
}

/* ---- the float16 list ---------------------------------------------------------------- */

/* einsum, chain_matmul and multi_dot of float32 leaves: half results equal
 * to the ops on half casts made by hand, float32 gradients equal to
 * theirs. */
Test(autocast_lower, products_of_lists)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t sa[2] = {3, 4}, sb[2] = {4, 5}, sc[2] = {5, 2};
    clt_tensor *a = make(dev, CLT_FLOAT32, 2, sa, 20, 1), *b = make(dev, CLT_FLOAT32, 2, sb, 21, 1);
    clt_tensor *c = make(dev, CLT_FLOAT32, 2, sc, 22, 1);
    clt_tensor *a2 = make(dev, CLT_FLOAT32, 2, sa, 20, 1), *b2 = make(dev, CLT_FLOAT32, 2, sb, 21, 1);
    clt_tensor *c2 = make(dev, CLT_FLOAT32, 2, sc, 22, 1);
    clt_tensor *ah = cast(a2, CLT_FLOAT16), *bh = cast(b2, CLT_FLOAT16), *ch = cast(c2, CLT_FLOAT16);
    const clt_tensor *f[3] = {a, b, c}, *h[3] = {ah, bh, ch};
    clt_tensor *r[3] = {NULL}, *q[3] = {NULL};
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_einsum("ij,jk,kl->il", f, 3, &r[0]));
    CHECK(clt_chain_matmul(f, 3, &r[1]));
    CHECK(clt_linalg_multi_dot(f, 3, &r[2]));
    CHECK(clt_autocast_exit());
    cr_assert_eq(cache_entries(), 0);
    CHECK(clt_einsum("ij,jk,kl->il", h, 3, &q[0]));
    CHECK(clt_chain_matmul(h, 3, &q[1]));
    CHECK(clt_linalg_multi_dot(h, 3, &q[2]));
    const char *names[3] = {"einsum", "chain_matmul", "multi_dot"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(clt_tensor_dtype(r[i]), CLT_FLOAT16, "%s", names[i]);
        same(r[i], q[i], names[i]);
    }
    backward_sum(r[0]);
    backward_sum(q[0]);
    same_grad(a, a2, CLT_FLOAT32, "einsum a");
    same_grad(b, b2, CLT_FLOAT32, "einsum b");
    same_grad(c, c2, CLT_FLOAT32, "einsum c");
    for (int i = 0; i < 3; i++) {
        clt_tensor_free(r[i]);
        clt_tensor_free(q[i]);
    }
    clt_tensor *all[] = {a, b, c, a2, b2, c2, ah, bh, ch};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* The cells (functional and layers): half states from float32 operands,
 * equal to the cells on half casts; the weights' gradients in float32. */
Test(autocast_lower, cells)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t xs[2] = {2, 3}, hs[2] = {2, 4}, w4[2] = {16, 3}, u4[2] = {16, 4}, b4[1] = {16};
    const int64_t w3[2] = {12, 3}, u3[2] = {12, 4}, b3[1] = {12};
    clt_tensor *x = make(dev, CLT_FLOAT32, 2, xs, 30, 0), *hx = make(dev, CLT_FLOAT32, 2, hs, 31, 0);
    clt_tensor *cx = make(dev, CLT_FLOAT32, 2, hs, 32, 0);
    clt_tensor *wi = make(dev, CLT_FLOAT32, 2, w4, 33, 1), *wh = make(dev, CLT_FLOAT32, 2, u4, 34, 1);
    clt_tensor *bi = make(dev, CLT_FLOAT32, 1, b4, 35, 1), *bh = make(dev, CLT_FLOAT32, 1, b4, 36, 1);
    clt_tensor *wi2 = make(dev, CLT_FLOAT32, 2, w4, 33, 1), *wh2 = make(dev, CLT_FLOAT32, 2, u4, 34, 1);
    clt_tensor *bi2 = make(dev, CLT_FLOAT32, 1, b4, 35, 1), *bh2 = make(dev, CLT_FLOAT32, 1, b4, 36, 1);
    clt_tensor *gi = make(dev, CLT_FLOAT32, 2, w3, 37, 0), *gh = make(dev, CLT_FLOAT32, 2, u3, 38, 0);
    clt_tensor *gb = make(dev, CLT_FLOAT32, 1, b3, 39, 0);
    clt_tensor *ri = make(dev, CLT_FLOAT32, 2, (const int64_t[]){4, 3}, 40, 0);
    clt_tensor *rh = make(dev, CLT_FLOAT32, 2, (const int64_t[]){4, 4}, 41, 0);
    clt_tensor *h[6] = {NULL};
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_lstm_cell(x, hx, cx, wi, wh, bi, bh, &h[0], &h[1]));
    CHECK(clt_gru_cell(x, hx, gi, gh, gb, NULL, &h[2]));
    CHECK(clt_rnn_cell(x, NULL, ri, rh, NULL, NULL, CLT_RNN_RELU, &h[3]));
    CHECK(clt_autocast_exit());
    clt_tensor *xh = cast(x, CLT_FLOAT16), *hxh = cast(hx, CLT_FLOAT16), *cxh = cast(cx, CLT_FLOAT16);
    clt_tensor *c16[9] = {cast(wi2, CLT_FLOAT16), cast(wh2, CLT_FLOAT16), cast(bi2, CLT_FLOAT16),
                          cast(bh2, CLT_FLOAT16), cast(gi, CLT_FLOAT16), cast(gh, CLT_FLOAT16),
                          cast(gb, CLT_FLOAT16), cast(ri, CLT_FLOAT16), cast(rh, CLT_FLOAT16)};
    clt_tensor *k[4] = {NULL};
    CHECK(clt_lstm_cell(xh, hxh, cxh, c16[0], c16[1], c16[2], c16[3], &k[0], &k[1]));
    CHECK(clt_gru_cell(xh, hxh, c16[4], c16[5], c16[6], NULL, &k[2]));
    CHECK(clt_rnn_cell(xh, NULL, c16[7], c16[8], NULL, NULL, CLT_RNN_RELU, &k[3]));
    const char *names[4] = {"lstm h", "lstm c", "gru", "rnn relu"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(clt_tensor_dtype(h[i]), CLT_FLOAT16, "%s", names[i]);
        same(h[i], k[i], names[i]);
    }
    backward_sum(h[0]);
    backward_sum(k[0]);
    same_grad(wi, wi2, CLT_FLOAT32, "lstm w_ih");
    same_grad(wh, wh2, CLT_FLOAT32, "lstm w_hh");
    same_grad(bh, bh2, CLT_FLOAT32, "lstm b_hh");

    /* the cell layer: half out of float32 parameters, float32 gradients */
    clt_module *cell = NULL;
    CHECK(clt_gru_cell_layer(dev, 3, 4, 1, NULL, &cell));
    clt_tensor *o = NULL;
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_gru_cell_forward(cell, x, hx, &o));
    CHECK(clt_autocast_exit());
    cr_assert_eq(clt_tensor_dtype(o), CLT_FLOAT16);
    backward_sum(o);
    clt_tensor **ps = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(cell, &ps, &np));
    for (size_t i = 0; i < np; i++) {
        clt_tensor *g = NULL;
        CHECK(clt_grad(ps[i], &g));
        cr_assert_not_null(g, "parameter %zu", i);
        cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32);
        clt_tensor_free(g);
    }
    clt_free(ps);
    clt_module_free(cell);
    for (int i = 0; i < 6; i++)
        clt_tensor_free(h[i]);
    for (int i = 0; i < 4; i++)
        clt_tensor_free(k[i]);
    for (int i = 0; i < 9; i++)
        clt_tensor_free(c16[i]);
    clt_tensor *all[] = {x, hx, cx, wi, wh, bi, bh, wi2, wh2, bi2, bh2, gi, gh, gb, ri, rh,
                         xh, hxh, cxh, o};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* An LSTM layer (2 layers, bidirectional) runs in half: output and states
 * half, close to the float32 layer (within half's rounding), float32
 * gradients on every parameter; its weights are cast once for all the
 * steps. */
Test(autocast_lower, lstm_layer)
{
    clt_device *dev = get_device("cpu:0");
    clt_rnn_opts o = CLT_RNN_DEFAULTS(3, 4);
    o.num_layers = 2;
    o.bidirectional = 1;
    clt_module *m = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(7, &gen));
    CHECK(clt_lstm_layer(dev, &o, gen, &m));
    const int64_t xs[3] = {5, 2, 3};
    clt_tensor *x = make(dev, CLT_FLOAT32, 3, xs, 50, 0);
    clt_tensor *out = NULL, *hn = NULL, *cn = NULL, *ref = NULL;
    CHECK(clt_lstm_forward(m, x, NULL, NULL, &ref, NULL, NULL));
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    CHECK(clt_lstm_forward(m, x, NULL, NULL, &out, &hn, &cn));
    cr_assert_eq(cache_entries(), 16, "each parameter cast once: %zu", cache_entries());
    CHECK(clt_autocast_exit());
    cr_assert_eq(clt_tensor_dtype(out), CLT_FLOAT16);
    cr_assert_eq(clt_tensor_dtype(hn), CLT_FLOAT16);
    cr_assert_eq(clt_tensor_dtype(cn), CLT_FLOAT16);
    double *a = read_as_f64(out), *b = read_as_f64(ref);
    for (int64_t i = 0; i < clt_tensor_numel(ref); i++)
        cr_assert(fabs(a[i] - b[i]) <= 2e-2, "output %lld: %g vs %g", (long long)i, a[i], b[i]);
    free(a);
    free(b);
    backward_sum(out);
    clt_tensor **ps = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(m, &ps, &np));
    cr_assert_eq(np, 16);
    for (size_t i = 0; i < np; i++) {
        clt_tensor *g = NULL;
        CHECK(clt_grad(ps[i], &g));
        cr_assert_not_null(g, "parameter %zu", i);
        cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32);
        clt_tensor_free(g);
    }
    clt_free(ps);
    clt_tensor *all[] = {x, out, hn, cn, ref};
    for (size_t i = 0; i < 5; i++)
        clt_tensor_free(all[i]);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- the float32 list ---------------------------------------------------------------- */

/* Half operands of the float32 list's additions: float32 results equal to
 * the ops on float32 casts made by hand, half gradients for half leaves. */
Test(autocast_float32, norms_losses)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t s[2] = {4, 3}, v[1] = {4};
    clt_tensor *h = make(dev, CLT_FLOAT16, 2, s, 60, 1), *h2 = make(dev, CLT_FLOAT16, 2, s, 60, 1);
    clt_tensor *g = make(dev, CLT_FLOAT16, 2, s, 61, 0), *p = NULL;
    double pv[12], sg[4] = {1, -1, 1, -1}, cls[4] = {2, 0, 1, 1};
    for (int i = 0; i < 12; i++)
        pv[i] = (double)(i % 5);
    p = tensor_of(dev, CLT_FLOAT16, 2, s, pv);
    clt_tensor *y = tensor_of(dev, CLT_FLOAT16, 1, v, sg), *ys = NULL;
    clt_tensor *cl = tensor_of(dev, CLT_INT64, 1, v, cls);
    double ml[12] = {0, 2, -1, 1, -1, 0, 2, 1, 0, -1, 0, 0};
    clt_tensor *mlt = tensor_of(dev, CLT_INT64, 2, s, ml);
    {
        double sv[12];
        for (int i = 0; i < 12; i++)
            sv[i] = i % 2 ? 1 : -1;
        ys = tensor_of(dev, CLT_FLOAT16, 2, s, sv);
    }
    clt_tensor *h1 = column(h, 0), *g1 = column(g, 1);
    enum { N = 15 };
    clt_tensor *r[N] = {NULL}, *q[N] = {NULL};
    const char *names[N] = {"frobenius_norm", "nuclear_norm", "renorm", "poisson_nll_loss",
                            "cosine_embedding_loss", "hinge_embedding_loss",
                            "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
                            "triplet_margin_loss", "multi_margin_loss", "normalize", "softmin",
                            "vector_norm_dim", "rdiv_scalar"};
    clt_tensor *hf = NULL, *gf = cast(g, CLT_FLOAT32), *pf = cast(p, CLT_FLOAT32);
    clt_tensor *yf = cast(y, CLT_FLOAT32), *ysf = cast(ys, CLT_FLOAT32);
    clt_tensor *h1f = NULL, *g1f = cast(g1, CLT_FLOAT32);
    for (int pass = 0; pass < 2; pass++) {
        clt_tensor **o = pass ? q : r;
        const clt_tensor *a = h, *b = g, *pp = p, *yy = y, *yyy = ys, *a1 = h1, *b1 = g1;
        if (pass == 1) {
            hf = cast(h2, CLT_FLOAT32);
            h1f = column(hf, 0);
            a = hf, b = gf, pp = pf, yy = yf, yyy = ysf, a1 = h1f, b1 = g1f;
        } else {
            CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
        }
        CHECK(clt_frobenius_norm(a, NULL, 0, 0, &o[0]));
        CHECK(clt_nuclear_norm(a, NULL, 0, &o[1]));
        CHECK(clt_renorm(a, 2, 0, 1.5, &o[2]));
        CHECK(clt_poisson_nll_loss(a, pp, 1, 0, 1e-8, CLT_REDUCTION_MEAN, &o[3]));
        CHECK(clt_cosine_embedding_loss(a, b, yy, 0.1, CLT_REDUCTION_MEAN, &o[4]));
        CHECK(clt_hinge_embedding_loss(a, yyy, 1.0, CLT_REDUCTION_SUM, &o[5]));
        CHECK(clt_margin_ranking_loss(a1, b1, yy, 0.2, CLT_REDUCTION_MEAN, &o[6]));
        CHECK(clt_multilabel_margin_loss(a, mlt, CLT_REDUCTION_MEAN, &o[7]));
        CHECK(clt_soft_margin_loss(a, yyy, CLT_REDUCTION_MEAN, &o[8]));
        CHECK(clt_triplet_margin_loss(a, b, pp, 1.0, 2.0, 1e-6, 0, CLT_REDUCTION_MEAN, &o[9]));
        CHECK(clt_multi_margin_loss(a, cl, 1, 1.0, NULL, CLT_REDUCTION_MEAN, &o[10]));
        CHECK(clt_normalize(a, 2.0, 1, 1e-12, &o[11]));
        CHECK(clt_softmin(a, 1, &o[12]));
        CHECK(clt_vector_norm_dim(a, 3.0, 0, 1, &o[13]));
        CHECK(clt_rdiv_scalar(b, 2.0, &o[14]));
        if (pass == 0)
            CHECK(clt_autocast_exit());
    }
    for (int i = 0; i < N; i++) {
        cr_assert_eq(clt_tensor_dtype(r[i]), CLT_FLOAT32, "%s", names[i]);
        same(r[i], q[i], names[i]);
    }
    /* a half leaf gets its gradient in half, equal to the cast's (one op:
     * each op casts anew, and torch rounds each cast's gradient to half
     * before they add up) */
    clt_tensor *l = NULL, *l2 = NULL;
    CHECK(clt_mul_scalar(r[9], 1.0, &l));
    CHECK(clt_mul_scalar(q[9], 1.0, &l2));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_backward(l2, NULL, 0));
    same_grad(h, h2, CLT_FLOAT16, "triplet_margin_loss's half anchor");
    for (int i = 0; i < N; i++) {
        clt_tensor_free(r[i]);
        clt_tensor_free(q[i]);
    }
    clt_tensor *all[] = {h, h2, g, p, y, ys, cl, mlt, h1, g1, hf, gf, pf, yf, ysf, h1f, g1f,
                         l, l2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        clt_tensor_free(all[i]);
}

/* ---- torch's CPU lists (clt_autocast_enter_ex with CLT_AUTOCAST_CPU) ---- */

/* Ops on two [4, 4] operands, each with the kind torch 1.13's CPU autocast
 * gives it (probed on the installed torch): 'l' bfloat16, 'f' float32,
 * '-' none.  Operands in (0, 1), so that the losses and logs take them. */
typedef clt_status (*op2_fn)(const clt_tensor *a, const clt_tensor *b, clt_tensor **out);
static clt_status op_mm(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_mm(a, b, o);
}
static clt_status op_matmul(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_matmul(a, b, o);
}
static clt_status op_addmm(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_addmm(b, a, b, 0.5, 2.0, o);
}
static clt_status op_tensordot(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    const int da[1] = {1}, db[1] = {0};
    return clt_tensordot(a, b, 1, da, db, o);
}
/* conv(a as [1, 4, 4], b as a [4, 4, 1] weight). */
typedef clt_status (*conv_fn)(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                              const void *opts, clt_tensor **out);
static clt_status op_conv_with(conv_fn conv, const clt_tensor *a, const clt_tensor *b,
                               clt_tensor **o)
{
    clt_tensor *w = NULL;
    const int64_t ws[3] = {4, 4, 1};
    clt_status st = clt_reshape(b, 3, ws, &w);
    if (st == CLT_OK) {
        clt_tensor *x = NULL;
        st = clt_unsqueeze(a, 0, &x);
        if (st == CLT_OK)
            st = conv(x, w, NULL, NULL, o);
        clt_tensor_free(x);
    }
    clt_tensor_free(w);
    return st;
}
static clt_status conv1d_plain(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                               const void *opts, clt_tensor **o)
{
    return clt_conv1d(x, w, b, opts, o);
}
static clt_status conv_transpose1d_plain(const clt_tensor *x, const clt_tensor *w,
                                         const clt_tensor *b, const void *opts, clt_tensor **o)
{
    return clt_conv_transpose1d(x, w, b, opts, o);
}
static clt_status op_conv1d(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return op_conv_with(conv1d_plain, a, b, o);
}
static clt_status op_conv_transpose1d(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return op_conv_with(conv_transpose1d_plain, a, b, o);
}
static clt_status op_prod(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    (void)b;
    return clt_prod_dim(a, 1, 0, o);
}
static clt_status op_cdist(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_cdist(a, b, 2.0, o);
}
static clt_status op_mse(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_mse_loss(a, b, CLT_REDUCTION_MEAN, o);
}
static clt_status op_kl_div(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_kl_div(a, b, CLT_REDUCTION_SUM, 0, o);
}
static clt_status op_bce(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    return clt_binary_cross_entropy(a, b, NULL, CLT_REDUCTION_MEAN, o);
}
static clt_status op_mv(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    clt_tensor *v = NULL;
    clt_status st = clt_select(b, 0, 1, &v);
    if (st == CLT_OK)
        st = clt_mv(a, v, o);
    clt_tensor_free(v);
    return st;
}
static clt_status op_softmax(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    (void)b;
    return clt_softmax(a, 1, o);
}
static clt_status op_exp(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    (void)b;
    return clt_exp(a, o);
}
static clt_status op_sum(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    (void)b;
    return clt_sum(a, o);
}
static clt_status op_prelu(const clt_tensor *a, const clt_tensor *b, clt_tensor **o)
{
    clt_tensor *w = NULL;
    clt_status st = clt_select(b, 0, 0, &w);
    if (st == CLT_OK)
        st = clt_prelu(a, w, o);
    clt_tensor_free(w);
    return st;
}

static const struct {
    const char *name;
    op2_fn fn;
    char cpu;
} cpu_ops[] = {
    {"mm", op_mm, 'l'},           {"matmul", op_matmul, 'l'},
    {"addmm", op_addmm, 'l'},     {"tensordot", op_tensordot, 'l'},
    {"conv1d", op_conv1d, 'l'},   {"conv_transpose1d", op_conv_transpose1d, 'f'},
    {"prod", op_prod, 'f'},       {"cdist", op_cdist, 'f'},
    {"mse_loss", op_mse, 'f'},    {"kl_div", op_kl_div, 'f'},
    {"binary_cross_entropy", op_bce, 'f'},
    {"mv", op_mv, '-'},           {"softmax", op_softmax, '-'},
    {"exp", op_exp, '-'},         {"sum", op_sum, '-'},
    {"prelu", op_prelu, '-'},
};

static clt_tensor *unit_values(clt_device *dev, clt_dtype dt, unsigned seed)
{
    const int64_t s[2] = {4, 4};
    double v[16];
    for (int i = 0; i < 16; i++) {
        seed = seed * 1103515245u + 12345u;
        /* bfloat16-exact in (0, 1), plus a float32 tail that rounding drops */
        v[i] = (double)((seed >> 9) % 127 + 1) / 128.0 + (dt == CLT_FLOAT32 ? 1.0 / 65536 : 0);
    }
    return tensor_of(dev, dt, 2, s, v);
}

/* Each op in a CPU-list region, on float32 and on bfloat16 operands:
 * the result's dtype is the list's and its values are the op's on
 * operands cast by hand outside autocast. */
Test(autocast_cpu, lists_cast_as_torch_cpu)
{
    clt_device *dev = get_device("cpu:0");
    for (int pass = 0; pass < 2; pass++) {
        clt_dtype in = pass ? CLT_BFLOAT16 : CLT_FLOAT32;
        clt_tensor *a = unit_values(dev, in, 3), *b = unit_values(dev, in, 4);
        for (size_t i = 0; i < sizeof cpu_ops / sizeof cpu_ops[0]; i++) {
            char k = cpu_ops[i].cpu;
            clt_dtype want = k == 'l' ? CLT_BFLOAT16 : k == 'f' ? CLT_FLOAT32 : in;
            clt_tensor *r = NULL, *q = NULL;
            CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
            CHECK(cpu_ops[i].fn(a, b, &r));
            CHECK(clt_autocast_exit());
            clt_tensor *ac = cast(a, want), *bc = cast(b, want);
            CHECK(cpu_ops[i].fn(ac, bc, &q));
            cr_assert_eq(clt_tensor_dtype(r), want, "%s on %s: %s", cpu_ops[i].name,
                         clt_dtype_name(in), clt_dtype_name(clt_tensor_dtype(r)));
            same(r, q, cpu_ops[i].name);
            clt_tensor *all[] = {r, q, ac, bc};
            for (size_t j = 0; j < 4; j++)
                clt_tensor_free(all[j]);
        }
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
}

/* The promote list: index_copy of a bfloat16 tensor with float32 values
 * runs in float32 (outside autocast the dtypes must match); a float32
 * weight cast to bfloat16 reaches its gradient in float32. */
Test(autocast_cpu, index_copy_promotes_and_gradients)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *t = unit_values(dev, CLT_BFLOAT16, 5), *src = unit_values(dev, CLT_FLOAT32, 6);
    double iv[4] = {3, 0, 2, 1};
    const int64_t is[1] = {4};
    clt_tensor *idx = tensor_of(dev, CLT_INT64, 1, is, iv), *r = NULL, *q = NULL;
    clt_tensor *tf = cast(t, CLT_FLOAT32);
    cr_assert_neq(clt_index_copy(t, 0, idx, src, &r), CLT_OK);
    cr_assert_null(r);
    CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
    CHECK(clt_index_copy(t, 0, idx, src, &r));
    CHECK(clt_autocast_exit());
    CHECK(clt_index_copy(tf, 0, idx, src, &q));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    same(r, q, "index_copy");
    clt_tensor_free(r);
    clt_tensor_free(q);

    clt_tensor *w = unit_values(dev, CLT_FLOAT32, 7), *w2 = unit_values(dev, CLT_FLOAT32, 7);
    CHECK(clt_set_requires_grad(w, 1));
    CHECK(clt_set_requires_grad(w2, 1));
    clt_tensor *w2b = cast(w2, CLT_BFLOAT16), *tb = cast(tf, CLT_BFLOAT16);
    CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
    CHECK(clt_mm(tf, w, &r));
    CHECK(clt_autocast_exit());
    CHECK(clt_mm(tb, w2b, &q));
    same(r, q, "mm");
    backward_sum(r);
    backward_sum(q);
    same_grad(w, w2, CLT_FLOAT32, "mm's float32 weight");
    clt_tensor *all[] = {t, src, idx, tf, r, q, w, w2, w2b, tb};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
}

/* float16 on the CPU lists and lists outside the enum are refused, with
 * no region opened; binary_cross_entropy is refused on the CUDA lists
 * only; an inner region's lists apply until it closes. */
Test(autocast_cpu, refusals_and_nesting)
{
    clt_device *dev = get_device("cpu:0");
    cr_assert_eq(clt_autocast_enter_ex(dev, CLT_FLOAT16, CLT_AUTOCAST_CPU),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "bfloat16") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_autocast_enter_ex(dev, CLT_BFLOAT16, (clt_autocast_lists)7),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_autocast_exit(), CLT_ERR_INVALID_ARGUMENT, "no region was opened");

    clt_tensor *a = unit_values(dev, CLT_BFLOAT16, 8), *b = unit_values(dev, CLT_BFLOAT16, 9);
    clt_tensor *r = NULL;
    CHECK(clt_autocast_enter(dev, CLT_BFLOAT16));
    cr_assert_eq(op_bce(a, b, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(r);
    CHECK(op_softmax(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "softmax on the CUDA lists");
    clt_tensor_free(r);
    CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
    CHECK(op_softmax(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_BFLOAT16, "softmax on the CPU lists");
    clt_tensor_free(r);
    CHECK(op_bce(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "binary_cross_entropy on the CPU lists");
    clt_tensor_free(r);
    CHECK(clt_autocast_exit());
    CHECK(op_softmax(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "the outer region's CUDA lists again");
    clt_tensor_free(r);
    CHECK(clt_autocast_exit());
    clt_tensor_free(a);
    clt_tensor_free(b);
}

/* ---- torch's CPU float32 list: pools, padding, FFTs, linalg (CPU lists) ---- */

/* Unary ops on a [4, 4] operand (symmetric positive definite, so that the
 * decompositions take it), each on torch 1.13's CPU float32 list (probed
 * on the installed torch: bfloat16 in, float32 or complex64 out). */
typedef clt_status (*op1_fn)(const clt_tensor *a, clt_tensor **out);
static clt_status as5(const clt_tensor *a, clt_tensor **o)
{
    const int64_t s5[5] = {1, 1, 2, 2, 4};
    return clt_reshape(a, 5, s5, o);
}
static clt_status pool3(const clt_tensor *a, int which, clt_tensor **o)
{
    clt_tensor *x = NULL;
    const int64_t k[3] = {1, 2, 2}, one[3] = {1, 1, 1};
    clt_status st = as5(a, &x);
    if (st == CLT_OK)
        st = which == 0   ? clt_max_pool3d(x, k, NULL, NULL, NULL, 0, o)
             : which == 1 ? clt_avg_pool3d(x, k, NULL, NULL, 0, 1, o)
             : which == 2 ? clt_adaptive_avg_pool3d(x, one, o)
                          : clt_adaptive_max_pool3d(x, one, o, NULL);
    clt_tensor_free(x);
    return st;
}
static clt_status op_max_pool3d(const clt_tensor *a, clt_tensor **o)
{
    return pool3(a, 0, o);
}
static clt_status op_avg_pool3d(const clt_tensor *a, clt_tensor **o)
{
    return pool3(a, 1, o);
}
static clt_status op_adaptive_avg_pool3d(const clt_tensor *a, clt_tensor **o)
{
    return pool3(a, 2, o);
}
static clt_status op_adaptive_max_pool3d(const clt_tensor *a, clt_tensor **o)
{
    return pool3(a, 3, o);
}
static clt_status op_reflect2d(const clt_tensor *a, clt_tensor **o)
{
    clt_tensor *x = NULL;
    const int64_t p[4] = {1, 2, 2, 1};
    clt_status st = clt_unsqueeze(a, 0, &x);
    if (st == CLT_OK)
        st = clt_pad(x, p, 4, CLT_PAD_REFLECT, 0.0, o);
    clt_tensor_free(x);
    return st;
}
static clt_status op_replicate3d(const clt_tensor *a, clt_tensor **o)
{
    clt_tensor *x = NULL;
    const int64_t p[6] = {1, 0, 0, 2, 1, 1};
    clt_status st = as5(a, &x);
    if (st == CLT_OK)
        st = clt_pad(x, p, 6, CLT_PAD_REPLICATE, 0.0, o);
    clt_tensor_free(x);
    return st;
}
static clt_status op_trace(const clt_tensor *a, clt_tensor **o)
{
    return clt_trace(a, o);
}
static clt_status op_quantile(const clt_tensor *a, clt_tensor **o)
{
    const int dim[1] = {1};
    return clt_quantile(a, NULL, 0.3, dim, 0, CLT_QUANTILE_LINEAR, o);
}
static clt_status op_irfft(const clt_tensor *a, clt_tensor **o)
{
    return clt_fft_irfft(a, -1, -1, NULL, o);
}
/* complex results compared as view_as_real's float32 */
static clt_status real_view(clt_status st, clt_tensor *c, clt_tensor **o)
{
    if (st == CLT_OK)
        st = clt_view_as_real(c, o);
    clt_tensor_free(c);
    return st;
}
static clt_status op_rfft(const clt_tensor *a, clt_tensor **o)
{
    clt_tensor *c = NULL;
    clt_status st = clt_fft_rfft(a, -1, -1, NULL, &c);
    return real_view(st, c, o);
}
static clt_status op_fft2(const clt_tensor *a, clt_tensor **o)
{
    clt_tensor *c = NULL;
    clt_status st = clt_fft_fft2(a, NULL, NULL, NULL, &c);
    return real_view(st, c, o);
}
static clt_status op_polar(const clt_tensor *a, clt_tensor **o)
{
    clt_tensor *c = NULL;
    clt_status st = clt_polar(a, a, &c);
    return real_view(st, c, o);
}
static clt_status op_view_as_complex(const clt_tensor *a, clt_tensor **o)
{
    clt_tensor *x = NULL, *c = NULL;
    const int64_t s[3] = {4, 2, 2};
    clt_status st = clt_reshape(a, 3, s, &x);
    if (st == CLT_OK)
        st = clt_view_as_complex(x, &c);
    clt_tensor_free(x);
    return real_view(st, c, o);
}
static clt_status op_inv(const clt_tensor *a, clt_tensor **o)
{
    return clt_linalg_inv(a, o);
}
static clt_status op_solve(const clt_tensor *a, clt_tensor **o)
{
    return clt_linalg_solve(a, a, o);
}
static clt_status op_cholesky(const clt_tensor *a, clt_tensor **o)
{
    return clt_linalg_cholesky(a, 0, o);
}
static clt_status op_eigvalsh(const clt_tensor *a, clt_tensor **o)
{
    return clt_linalg_eigvalsh(a, "L", o);
}
static clt_status op_svdvals(const clt_tensor *a, clt_tensor **o)
{
    return clt_linalg_svdvals(a, o);
}
static clt_status op_cond(const clt_tensor *a, clt_tensor **o)
{
    return clt_linalg_cond_ord(a, "fro", o);
}
static clt_status op_fake_quantize(const clt_tensor *a, clt_tensor **o)
{
    return clt_fake_quantize_per_tensor_affine(a, 0.05, 3, -128, 127, o);
}

static const struct {
    const char *name;
    op1_fn fn;
} f32_ops[] = {
    {"max_pool3d", op_max_pool3d},
    {"avg_pool3d", op_avg_pool3d},
    {"adaptive_avg_pool3d", op_adaptive_avg_pool3d},
    {"adaptive_max_pool3d", op_adaptive_max_pool3d},
    {"reflection_pad2d", op_reflect2d},
    {"replication_pad3d", op_replicate3d},
    {"trace", op_trace},
    {"quantile", op_quantile},
    {"fft_irfft", op_irfft},
    {"fft_rfft", op_rfft},
    {"fft_fft2", op_fft2},
    {"polar", op_polar},
    {"view_as_complex", op_view_as_complex},
    {"linalg_inv", op_inv},
    {"linalg_solve", op_solve},
    {"linalg_cholesky", op_cholesky},
    {"linalg_eigvalsh", op_eigvalsh},
    {"linalg_svdvals", op_svdvals},
    {"linalg_cond fro", op_cond},
    {"fake_quantize_per_tensor_affine", op_fake_quantize},
};

/* A symmetric positive definite [4, 4] of bfloat16-exact values (a dominant
 * diagonal), in dt. */
static clt_tensor *spd_values(clt_device *dev, clt_dtype dt, int grad)
{
    double v[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            v[i * 4 + j] = i == j ? 4.0 + i / 2.0 : (double)((i + j) % 3 + 1) / 8.0;
    const int64_t s[2] = {4, 4};
    clt_tensor *t = tensor_of(dev, dt, 2, s, v);
    if (grad)
        CHECK(clt_set_requires_grad(t, 1));
    return t;
}

/* Each op on a bfloat16 operand in a CPU-list region: float32 (complex64
 * for the complex ones, seen through view_as_real) and equal to the op on
 * a float32 cast made by hand outside autocast; on a float32 operand, the
 * op as it is outside.  A bfloat16 leaf gets its gradient in bfloat16. */
Test(autocast_cpu, float32_list_ops)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *a = spd_values(dev, CLT_BFLOAT16, 1), *af = cast(a, CLT_FLOAT32);
    clt_tensor *f = spd_values(dev, CLT_FLOAT32, 0);
    for (size_t i = 0; i < sizeof f32_ops / sizeof f32_ops[0]; i++) {
        clt_tensor *r = NULL, *q = NULL, *rf = NULL, *qf = NULL;
        CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
        clt_status st = f32_ops[i].fn(a, &r);
        cr_assert_eq(st, CLT_OK, "%s: %s", f32_ops[i].name, clt_last_error());
        st = f32_ops[i].fn(f, &rf);
        cr_assert_eq(st, CLT_OK, "%s (float32): %s", f32_ops[i].name, clt_last_error());
        CHECK(clt_autocast_exit());
        CHECK(f32_ops[i].fn(af, &q));
        CHECK(f32_ops[i].fn(f, &qf));
        cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32, "%s: %s", f32_ops[i].name,
                     clt_dtype_name(clt_tensor_dtype(r)));
        same(r, q, f32_ops[i].name);
        same(rf, qf, f32_ops[i].name);
        clt_tensor *all[] = {r, q, rf, qf};
        for (size_t j = 0; j < 4; j++)
            clt_tensor_free(all[j]);
    }
    /* the gradient of a bfloat16 leaf through linalg_inv's cast */
    clt_tensor *r = NULL, *b2 = spd_values(dev, CLT_BFLOAT16, 1), *bf = cast(b2, CLT_FLOAT32);
    clt_tensor *q = NULL;
    CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
    CHECK(clt_linalg_inv(a, &r));
    CHECK(clt_autocast_exit());
    CHECK(clt_linalg_inv(bf, &q));
    backward_sum(r);
    backward_sum(q);
    same_grad(a, b2, CLT_BFLOAT16, "linalg_inv's bfloat16 leaf");
    clt_tensor *all[] = {a, af, f, r, b2, bf, q};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
}

/* ---- cells and recurrent layers on the CPU lists ----------------------------------- */

/* x W^T + b in bfloat16, by hand: the operands cast outside autocast. */
static clt_tensor *gate_product(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b)
{
    clt_tensor *xb = cast(x, CLT_BFLOAT16), *wb = cast(w, CLT_BFLOAT16), *wt = NULL, *p = NULL;
    CHECK(clt_transpose(wb, 0, 1, &wt));
    CHECK(clt_matmul(xb, wt, &p));
    if (b) {
        clt_tensor *bb = cast(b, CLT_BFLOAT16), *pb = NULL;
        CHECK(clt_add(p, bb, &pb));
        clt_tensor_free(bb);
        clt_tensor_free(p);
        p = pb;
    }
    clt_tensor_free(xb);
    clt_tensor_free(wb);
    clt_tensor_free(wt);
    return p;
}

static clt_tensor *apply1(clt_status (*f)(const clt_tensor *, clt_tensor **), const clt_tensor *a)
{
    clt_tensor *o = NULL;
    CHECK(f(a, &o));
    return o;
}

static clt_tensor *apply2(clt_status (*f)(const clt_tensor *, const clt_tensor *, clt_tensor **),
                          const clt_tensor *a, const clt_tensor *b)
{
    clt_tensor *o = NULL;
    CHECK(f(a, b, &o));
    return o;
}

/* torch 1.13's CPU lstm_cell under autocast, by hand: the gates in
 * bfloat16, c' = f c + i g and h' = o tanh(c') in the states' dtype. */
static void lstm_cell_by_hand(const clt_tensor *x, const clt_tensor *h, const clt_tensor *c,
                              clt_tensor *const w[4], int64_t H, clt_tensor **h1, clt_tensor **c1)
{
    clt_tensor *xi = gate_product(x, w[0], w[2]), *hh = gate_product(h, w[1], w[3]);
    clt_tensor *a = apply2(clt_add, xi, hh), *part[4];
    for (int k = 0; k < 4; k++) {
        clt_tensor *n = NULL;
        CHECK(clt_narrow(a, 1, k * H, H, &n));
        part[k] = apply1(k == 2 ? clt_tanh : clt_sigmoid, n);
        clt_tensor_free(n);
    }
    clt_tensor *fc = apply2(clt_mul, part[1], c), *ig = apply2(clt_mul, part[0], part[2]);
    *c1 = apply2(clt_add, fc, ig);
    clt_tensor *tc = apply1(clt_tanh, *c1);
    *h1 = apply2(clt_mul, part[3], tc);
    clt_tensor *all[] = {xi, hh, a, part[0], part[1], part[2], part[3], fc, ig, tc};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
}

/* torch 1.13's CPU gru_cell under autocast, by hand: r, z and n in
 * bfloat16, h' = (h - n) z + n in the state's dtype. */
static clt_tensor *gru_cell_by_hand(const clt_tensor *x, const clt_tensor *h,
                                    clt_tensor *const w[4], int64_t H)
{
    clt_tensor *xi = gate_product(x, w[0], w[2]), *hh = gate_product(h, w[1], w[3]);
    clt_tensor *xs[3], *hs[3];
    for (int k = 0; k < 3; k++) {
        CHECK(clt_narrow(xi, 1, k * H, H, &xs[k]));
        CHECK(clt_narrow(hh, 1, k * H, H, &hs[k]));
    }
    clt_tensor *rs = apply2(clt_add, xs[0], hs[0]), *zs = apply2(clt_add, xs[1], hs[1]);
    clt_tensor *r = apply1(clt_sigmoid, rs), *z = apply1(clt_sigmoid, zs);
    clt_tensor *rh = apply2(clt_mul, r, hs[2]), *np = apply2(clt_add, xs[2], rh);
    clt_tensor *n = apply1(clt_tanh, np), *d = apply2(clt_sub, h, n);
    clt_tensor *dz = apply2(clt_mul, d, z), *out = apply2(clt_add, dz, n);
    clt_tensor *all[] = {xi, hh, xs[0], xs[1], xs[2], hs[0], hs[1], hs[2], rs, zs, r, z, rh,
                         np, n, d, dz};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
    return out;
}

static void close_to(const clt_tensor *a, const clt_tensor *b, double tol, const char *what)
{
    cr_assert_eq(clt_tensor_dtype(a), clt_tensor_dtype(b), "%s: dtype %s vs %s", what,
                 clt_dtype_name(clt_tensor_dtype(a)), clt_dtype_name(clt_tensor_dtype(b)));
    size_t n = (size_t)clt_tensor_numel(b);
    cr_assert_eq((size_t)clt_tensor_numel(a), n, "%s: sizes", what);
    double *x = read_as_f64(a), *y = read_as_f64(b);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(x[i] - y[i]) <= tol * (1 + fabs(y[i])), "%s: element %zu: %.9g vs %.9g",
                  what, i, x[i], y[i]);
    free(x);
    free(y);
}

/* The cells as torch's CPU composites: LSTMCell and GRUCell with float32
 * states give float32 h (and c), with bfloat16 ones (or none, on a
 * bfloat16 input) bfloat16; RNNCell's h is bfloat16 whatever its state;
 * each equal to the composition by hand (gate products in bfloat16, the
 * states' arithmetic in their dtype); float32 gradients on the weights. */
Test(autocast_cpu, cells_as_torch_cpu)
{
    clt_device *dev = get_device("cpu:0");
    const int64_t H = 4, xs[2] = {2, 3}, hs[2] = {2, 4};
    const int64_t w4[2] = {16, 3}, u4[2] = {16, 4}, b4[1] = {16};
    const int64_t w3[2] = {12, 3}, u3[2] = {12, 4}, b3[1] = {12};
    clt_tensor *xb = make(dev, CLT_BFLOAT16, 2, xs, 70, 0), *xf = make(dev, CLT_FLOAT32, 2, xs, 70, 0);
    clt_tensor *hx = make(dev, CLT_FLOAT32, 2, hs, 71, 0), *cx = make(dev, CLT_FLOAT32, 2, hs, 72, 0);
    clt_tensor *hb = cast(hx, CLT_BFLOAT16), *cb = cast(cx, CLT_BFLOAT16);
    clt_tensor *lw[4] = {make(dev, CLT_FLOAT32, 2, w4, 73, 1), make(dev, CLT_FLOAT32, 2, u4, 74, 1),
                         make(dev, CLT_FLOAT32, 1, b4, 75, 1), make(dev, CLT_FLOAT32, 1, b4, 76, 1)};
    clt_tensor *gw[4] = {make(dev, CLT_FLOAT32, 2, w3, 77, 0), make(dev, CLT_FLOAT32, 2, u3, 78, 0),
                         make(dev, CLT_FLOAT32, 1, b3, 79, 0), make(dev, CLT_FLOAT32, 1, b3, 80, 0)};
    clt_tensor *rw[2] = {make(dev, CLT_FLOAT32, 2, (const int64_t[]){4, 3}, 81, 0),
                         make(dev, CLT_FLOAT32, 2, (const int64_t[]){4, 4}, 82, 0)};
    enum { N = 9 };
    clt_tensor *o[N] = {NULL}, *k[N] = {NULL};
    CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
    CHECK(clt_lstm_cell(xb, hx, cx, lw[0], lw[1], lw[2], lw[3], &o[0], &o[1]));
    CHECK(clt_lstm_cell(xb, hb, cb, lw[0], lw[1], lw[2], lw[3], &o[2], &o[3]));
    CHECK(clt_lstm_cell(xf, NULL, NULL, lw[0], lw[1], lw[2], lw[3], &o[4], &o[5]));
    CHECK(clt_gru_cell(xb, hx, gw[0], gw[1], gw[2], gw[3], &o[6]));
    CHECK(clt_gru_cell(xb, NULL, gw[0], gw[1], gw[2], gw[3], &o[7]));
    CHECK(clt_rnn_cell(xf, hx, rw[0], rw[1], NULL, NULL, CLT_RNN_TANH, &o[8]));
    CHECK(clt_autocast_exit());
    clt_tensor *zf = NULL, *zb = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, hs, &zf));
    CHECK(clt_zeros(dev, CLT_BFLOAT16, 2, hs, &zb));
    lstm_cell_by_hand(xb, hx, cx, lw, H, &k[0], &k[1]);
    lstm_cell_by_hand(xb, hb, cb, lw, H, &k[2], &k[3]);
    lstm_cell_by_hand(xf, zf, zf, lw, H, &k[4], &k[5]);
    k[6] = gru_cell_by_hand(xb, hx, gw, H);
    k[7] = gru_cell_by_hand(xb, zb, gw, H);
    {
        clt_tensor *xi = gate_product(xf, rw[0], NULL), *hh = gate_product(hx, rw[1], NULL);
        clt_tensor *a = apply2(clt_add, xi, hh);
        k[8] = apply1(clt_tanh, a);
        clt_tensor_free(xi);
        clt_tensor_free(hh);
        clt_tensor_free(a);
    }
    const char *names[N] = {"lstm h (float32 states)", "lstm c (float32 states)",
                            "lstm h (bfloat16 states)", "lstm c (bfloat16 states)",
                            "lstm h (float32 input, no states)", "lstm c (float32 input, no states)",
                            "gru h (float32 state)", "gru h (bfloat16 input, no state)",
                            "rnn h (float32 state)"};
    const clt_dtype want[N] = {CLT_FLOAT32, CLT_FLOAT32, CLT_BFLOAT16, CLT_BFLOAT16, CLT_FLOAT32,
                               CLT_FLOAT32, CLT_FLOAT32, CLT_BFLOAT16, CLT_BFLOAT16};
    for (int i = 0; i < N; i++) {
        cr_assert_eq(clt_tensor_dtype(o[i]), want[i], "%s: %s", names[i],
                     clt_dtype_name(clt_tensor_dtype(o[i])));
        close_to(o[i], k[i], 1e-6, names[i]);
    }
    backward_sum(o[0]);
    for (int i = 0; i < 4; i++) {
        clt_tensor *g = NULL;
        CHECK(clt_grad(lw[i], &g));
        cr_assert_not_null(g, "lstm weight %d", i);
        cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32, "lstm weight %d's gradient", i);
        clt_tensor_free(g);
    }
    for (int i = 0; i < N; i++) {
        clt_tensor_free(o[i]);
        clt_tensor_free(k[i]);
    }
    clt_tensor *all[] = {xb, xf, hx, cx, hb, cb, zf, zb, lw[0], lw[1], lw[2], lw[3],
                         gw[0], gw[1], gw[2], gw[3], rw[0], rw[1]};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
}

/* A GRU layer (2 layers) on the CPU lists: a float32 input without h0
 * gives float32 output and h_n equal to two GRUCell steps by hand per
 * layer; a bfloat16 input without h0 gives bfloat16; its parameters'
 * gradients are float32; a float32 h0 with a bfloat16 input is taken (the
 * dtypes need not agree) and gives float32. */
Test(autocast_cpu, gru_layer_as_cells)
{
    clt_device *dev = get_device("cpu:0");
    clt_rnn_opts ro = CLT_RNN_DEFAULTS(3, 4);
    ro.num_layers = 2;
    clt_module *m = NULL;
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(9, &gen));
    CHECK(clt_gru_layer(dev, &ro, gen, &m));
    const int64_t xs[3] = {2, 2, 3}, hs[3] = {2, 2, 4};
    clt_tensor *x = make(dev, CLT_FLOAT32, 3, xs, 90, 0), *xb = cast(x, CLT_BFLOAT16);
    clt_tensor *h0 = make(dev, CLT_FLOAT32, 3, hs, 91, 0);
    clt_tensor *out = NULL, *hn = NULL, *outb = NULL, *hnb = NULL, *outm = NULL, *hnm = NULL;
    CHECK(clt_autocast_enter_ex(dev, CLT_BFLOAT16, CLT_AUTOCAST_CPU));
    CHECK(clt_gru_forward(m, x, NULL, &out, &hn));
    CHECK(clt_gru_forward(m, xb, NULL, &outb, &hnb));
    CHECK(clt_gru_forward(m, xb, h0, &outm, &hnm));
    CHECK(clt_autocast_exit());
    cr_assert_eq(clt_tensor_dtype(out), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_dtype(hn), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_dtype(outb), CLT_BFLOAT16);
    cr_assert_eq(clt_tensor_dtype(hnb), CLT_BFLOAT16);
    cr_assert_eq(clt_tensor_dtype(outm), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_dtype(hnm), CLT_FLOAT32);
    /* by hand: layer 0 over x's two steps, layer 1 over its outputs */
    clt_tensor **ps = NULL;
    size_t np = 0;
    CHECK(clt_module_parameters(m, &ps, &np));
    cr_assert_eq(np, 8);
    clt_tensor *in[2] = {NULL, NULL}, *h = NULL, *zf = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (const int64_t[]){2, 4}, &zf));
    for (int t = 0; t < 2; t++)
        CHECK(clt_select(x, 0, t, &in[t]));
    for (int l = 0; l < 2; l++) {
        const clt_tensor *prev = zf;
        for (int t = 0; t < 2; t++) {
            h = gru_cell_by_hand(in[t], prev, ps + 4 * l, 4);
            clt_tensor_free(in[t]);
            in[t] = h;
            prev = h;
        }
    }
    clt_tensor *o1 = NULL;
    CHECK(clt_select(out, 0, 1, &o1));
    close_to(o1, in[1], 1e-6, "the GRU's last output");
    backward_sum(out);
    for (size_t i = 0; i < np; i++) {
        clt_tensor *g = NULL;
        CHECK(clt_grad(ps[i], &g));
        cr_assert_not_null(g, "parameter %zu", i);
        cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT32, "parameter %zu's gradient", i);
        clt_tensor_free(g);
    }
    clt_free(ps);
    clt_tensor *all[] = {x, xb, h0, out, hn, outb, hnb, outm, hnm, in[0], in[1], zf, o1};
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
        clt_tensor_free(all[j]);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* The library's test hook (src/core/alloc.c). */
long clt__host_refuse_after(long pass);

/* Casts that fail (out of host memory) fail the op with their status and
 * message, and the op's outputs are NULL, not left as they were; with
 * memory back, the same call succeeds. */
Test(autocast_failure, failed_casts_clear_the_outputs)
{
    clt_device *dev = get_device("cpu");
    const int64_t s[2] = {3, 3};
    clt_tensor *a = make(dev, CLT_FLOAT32, 2, s, 1, 1), *b = make(dev, CLT_FLOAT32, 2, s, 2, 0);
    const clt_tensor *two[2] = {a, b};
    CHECK(clt_autocast_enter(dev, CLT_FLOAT16));
    for (long pass = 0; pass < 3; pass++) {
        clt_tensor *sentinel = (clt_tensor *)&pass, *o1 = sentinel, *o2 = sentinel;
        clt__host_refuse_after(pass);
        clt_status st1 = clt_mm(a, b, &o1);
        clt__host_refuse_after(pass);
        clt_status st2 = clt_einsum("ij,jk->ik", two, 2, &o2);
        clt__host_refuse_after(-1);
        cr_expect_eq(st1, CLT_ERR_OUT_OF_HOST_MEMORY, "mm, %ld allocations: %d", pass, st1);
        cr_expect_eq(st2, CLT_ERR_OUT_OF_HOST_MEMORY, "einsum, %ld allocations: %d", pass, st2);
        cr_expect_null(o1, "mm's out after a failed cast (%ld allocations)", pass);
        cr_expect_null(o2, "einsum's out after a failed cast (%ld allocations)", pass);
    }
    clt_tensor *o = NULL;
    CHECK(clt_mm(a, b, &o));
    cr_expect_eq(clt_tensor_dtype(o), CLT_FLOAT16);
    clt_tensor_free(o);
    CHECK(clt_autocast_exit());
    clt_tensor_free(a);
    clt_tensor_free(b);
}
