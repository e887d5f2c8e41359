/* test_sdpa.c: clt_scaled_dot_product_attention against a float64 host
 * reference of softmax(q k^T * scale + mask) v written out here: batch
 * dims shared and broadcast, L != S and E != Ev, rows and widths past the
 * kernels' blocks, bool (true attends) and additive masks broadcast,
 * causal, a given scale, fully masked rows (NaN), empty sizes, float16
 * (composed) where the device has it; gradients by finite differences;
 * dropout against the generator's draws; MultiheadAttention without
 * weights through the fused op; errors.  Each case runs on both routes
 * (CLTENSOR_SDPA=fused and =composed), and the routing's own choice is
 * checked against the device's cache. */
#include <stdio.h>

#include "cltensor/opencl.h"
#include "gradcheck.h"

/* setenv (unsetenv for NULL) of the routing variable with every device
 * idle first: PoCL's worker threads call getenv while they run kernels,
 * and a setenv beside them can move environ under them (ASan caught a
 * SEGV in getenv on a worker thread). */
static void route(const char *value)
{
    size_t n = 0;
    CHECK(clt_device_count(&n));
    for (size_t i = 0; i < n; i++) {
        clt_device *d = NULL;
        CHECK(clt_device_at(i, &d));
        CHECK(clt_device_synchronize(d));
    }
    if (value)
        setenv("CLTENSOR_SDPA", value, 1);
    else
        unsetenv("CLTENSOR_SDPA");
}

/* ---- the host reference ------------------------------------------------------------ */

/* One case: q [B, L, E]; k [B or 1, S, E] and v [B or 1, S, Ev] (kb, vb:
 * one entry per batch entry, or one shared); mask [B or 1, L or 1, S]
 * (mb, mrows) read as bool (kind 1, true attends) or added (kind 3). */
typedef struct sd {
    int64_t B, L, S, E, Ev;
    int kb, vb;
    const double *mask;
    int kind, mb, mrows;
    int causal;
    double scale;
} sd;

/* out [B, L, Ev]; with u ([B, L, S] uniforms) each weight is kept where
 * u >= p and scaled by 1 / (1 - p), as dropout. */
static void sdpa_ref(const sd *c, const double *q, const double *k, const double *v,
                     const double *u, double p, double *out)
{
    double *s = malloc((size_t)(c->S ? c->S : 1) * sizeof *s);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t i = 0; i < c->L; i++) {
            const double *qi = q + (b * c->L + i) * c->E;
            const double *kb = k + (c->kb ? b : 0) * c->S * c->E;
            const double *vb = v + (c->vb ? b : 0) * c->S * c->Ev;
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < c->S; j++) {
                double d = 0;
                for (int64_t e = 0; e < c->E; e++)
                    d += qi[e] * kb[j * c->E + e];
                d *= c->scale;
                if (c->mask) {
                    double mv = c->mask[((c->mb ? b : 0) * (c->mrows ? c->L : 1) +
                                         (c->mrows ? i : 0)) * c->S + j];
                    d = c->kind == 1 ? (mv != 0 ? d : -INFINITY) : d + mv;
                }
                if (c->causal && j > i)
                    d = -INFINITY;
                s[j] = d;
                mx = fmax(mx, d);
            }
            for (int64_t j = 0; j < c->S; j++) {
                s[j] = exp(s[j] - mx); /* all -inf: NaN, as the composed softmax */
                sum += s[j];
            }
            double *o = out + (b * c->L + i) * c->Ev;
            for (int64_t e = 0; e < c->Ev; e++)
                o[e] = 0;
            for (int64_t j = 0; j < c->S; j++) {
                double w = s[j] / sum;
                if (u)
                    w = u[(b * c->L + i) * c->S + j] >= p ? w / (1 - p) : 0;
                for (int64_t e = 0; e < c->Ev; e++)
                    o[e] += w * vb[j * c->Ev + e];
            }
        }
    free(s);
}

static double *rand_f64(size_t n, unsigned seed, double lo, double hi)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * (double)rand() / RAND_MAX;
    return v;
}

/* The two routes, as CLTENSOR_SDPA names them. */
static const char *const routes[2] = {"fused", "composed"};

static void assert_close(const clt_tensor *t, const double *want, size_t n, double tol,
                         const char *what)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld elements, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], tol, tol), "%s element %zu: %.10g, want %.10g",
                  what, i, got[i], want[i]);
    free(got);
}

/* Runs case c in dtype dt with q, k, v and the mask shaped as given (qs of
 * nq dims, and so on: the batch dims as the test wants them broadcast; the
 * mask's values md, or the reference's) and compares with the reference. */
static void run_case(clt_device *dev, clt_dtype dt, const sd *c, int nq, const int64_t *qs,
                     int nk, const int64_t *ks, int nv, const int64_t *vs, int nm,
                     const int64_t *ms, const double *md, const double *scale, const char *what)
{
    size_t nqe = (size_t)(c->B * c->L * c->E), nke = (size_t)((c->kb ? c->B : 1) * c->S * c->E);
    size_t nve = (size_t)((c->vb ? c->B : 1) * c->S * c->Ev);
    double *q = rand_f64(nqe, 1, -2, 2), *k = rand_f64(nke, 2, -2, 2);
    double *v = rand_f64(nve, 3, -1, 1), *want = malloc((nqe / (size_t)(c->E ? c->E : 1) + 1) *
                                                        (size_t)(c->Ev + 1) * sizeof *want);
    sdpa_ref(c, q, k, v, NULL, 0, want);
    clt_tensor *tq = tensor_of(dev, dt, nq, qs, q), *tk = tensor_of(dev, dt, nk, ks, k);
    clt_tensor *tv = tensor_of(dev, dt, nv, vs, v), *tm = NULL, *o = NULL;
    if (c->mask)
        tm = tensor_of(dev, c->kind == 1 ? CLT_BOOL : dt, nm, ms, md ? md : c->mask);
    for (int r = 0; r < 2; r++) {
        route(routes[r]);
        CHECK(clt_scaled_dot_product_attention(tq, tk, tv, tm, 0.0, c->causal, scale, NULL, &o));
        char msg[160];
        snprintf(msg, sizeof msg, "%s (%s, %s)", what, clt_dtype_name(dt), routes[r]);
        assert_close(o, want, (size_t)(c->B * c->L * c->Ev), dt == CLT_FLOAT32 ? 2e-5 : 1e-12,
                     msg);
        clt_tensor_free(o);
    }
    route(NULL);
    clt_tensor_free(tq);
    clt_tensor_free(tk);
    clt_tensor_free(tv);
    clt_tensor_free(tm);
    free(q);
    free(k);
    free(v);
    free(want);
}

static const clt_dtype dts[2] = {CLT_FLOAT32, CLT_FLOAT64};

Test(sdpa, shapes_and_batch_broadcasting)
{
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++) {
        /* [2, 3] batch dims, L 5, S 7, E 8, Ev 6 */
        sd c = {6, 5, 7, 8, 6, 1, 1, NULL, 0, 0, 0, 0, 1 / sqrt(8.0)};
        run_case(dev, dts[d], &c, 4, (int64_t[]){2, 3, 5, 8}, 4, (int64_t[]){2, 3, 7, 8}, 4,
                 (int64_t[]){2, 3, 7, 6}, 0, NULL, NULL, NULL, "batched");
        /* one key matrix for every entry, a value broadcast from [1, 1, ...] */
        c.kb = c.vb = 0;
        run_case(dev, dts[d], &c, 4, (int64_t[]){2, 3, 5, 8}, 2, (int64_t[]){7, 8}, 4,
                 (int64_t[]){1, 1, 7, 6}, 0, NULL, NULL, NULL, "shared key and value");
        /* unbatched */
        sd u = {1, 4, 3, 2, 5, 1, 1, NULL, 0, 0, 0, 0, 1 / sqrt(2.0)};
        run_case(dev, dts[d], &u, 2, (int64_t[]){4, 2}, 2, (int64_t[]){3, 2}, 2,
                 (int64_t[]){3, 5}, 0, NULL, NULL, NULL, "unbatched");
    }
}

Test(sdpa, float16_composed)
{
    /* float16 is not fused: the composed path, against the reference */
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("the device has no float16");
    sd c = {2, 5, 7, 8, 6, 1, 1, NULL, 0, 0, 0, 1, 1 / sqrt(8.0)};
    size_t nq = 2 * 5 * 8, nk = 2 * 7 * 8, nv = 2 * 7 * 6;
    double *q = rand_f64(nq, 1, -1, 1), *k = rand_f64(nk, 2, -1, 1), *v = rand_f64(nv, 3, -1, 1);
    double want[2 * 5 * 6];
    clt_tensor *tq = tensor_of(dev, CLT_FLOAT16, 3, (int64_t[]){2, 5, 8}, q);
    clt_tensor *tk = tensor_of(dev, CLT_FLOAT16, 3, (int64_t[]){2, 7, 8}, k);
    clt_tensor *tv = tensor_of(dev, CLT_FLOAT16, 3, (int64_t[]){2, 7, 6}, v), *o;
    /* the reference on the float16-rounded inputs */
    double *rq = read_as_f64(tq), *rk = read_as_f64(tk), *rv = read_as_f64(tv);
    sdpa_ref(&c, rq, rk, rv, NULL, 0, want);
    CHECK(clt_scaled_dot_product_attention(tq, tk, tv, NULL, 0.0, 1, NULL, NULL, &o));
    cr_assert_eq(clt_tensor_dtype(o), CLT_FLOAT16);
    assert_close(o, want, 2 * 5 * 6, 5e-3, "float16 causal");
    clt_tensor_free(o);
    clt_tensor_free(tq);
    clt_tensor_free(tk);
    clt_tensor_free(tv);
    free(q);
    free(k);
    free(v);
    free(rq);
    free(rk);
    free(rv);
}

Test(sdpa, rows_and_widths_past_the_blocks)
{
    /* 67 queries and 45 keys: partial row groups and key blocks; E 13 and
     * Ev 9: widths that are no multiple of the kernels' vectors */
    clt_device *dev = get_device("cpu");
    for (int d = 0; d < 2; d++)
        for (int causal = 0; causal < 2; causal++) {
            sd c = {3, 67, 45, 13, 9, 1, 1, NULL, 0, 0, 0, causal, 1 / sqrt(13.0)};
            run_case(dev, dts[d], &c, 3, (int64_t[]){3, 67, 13}, 3, (int64_t[]){3, 45, 13}, 3,
                     (int64_t[]){3, 45, 9}, 0, NULL, NULL, NULL, causal ? "long causal" : "long");
        }
}

Test(sdpa, masks_causal_and_scale)
{
    clt_device *dev = get_device("cpu");
    enum { B = 4, L = 5, S = 7, E = 8, Ev = 6 };
    double *bm = rand_f64(L * S, 9, 0, 1), *fm = rand_f64(2 * L * S, 10, -3, 0);
    for (int i = 0; i < L * S; i++)
        bm[i] = bm[i] > 0.4 || i % S == 0;
    int64_t qs[4] = {2, 2, L, E}, ks[4] = {2, 2, S, E}, vs[4] = {2, 2, S, Ev};
    for (int d = 0; d < 2; d++) {
        sd c = {B, L, S, E, Ev, 1, 1, bm, 1, 0, 1, 0, 1 / sqrt((double)E)};
        run_case(dev, dts[d], &c, 4, qs, 4, ks, 4, vs, 2, (int64_t[]){L, S}, NULL, NULL,
                 "bool mask [L, S]");
        c.mrows = 0; /* its first row for every query: a key padding mask */
        run_case(dev, dts[d], &c, 4, qs, 4, ks, 4, vs, 2, (int64_t[]){1, S}, NULL, NULL,
                 "bool mask [1, S]");
        /* an additive mask per batch entry, the same for both heads: [2, 1, L, S]
         * read as entries b / 2 */
        double *fm4 = malloc(B * L * S * sizeof *fm4);
        for (int b = 0; b < B; b++)
            memcpy(fm4 + b * L * S, fm + (b / 2) * L * S, L * S * sizeof *fm4);
        sd f = {B, L, S, E, Ev, 1, 1, fm4, 3, 1, 1, 0, 1 / sqrt((double)E)};
        run_case(dev, dts[d], &f, 4, qs, 4, ks, 4, vs, 4, (int64_t[]){2, 1, L, S}, fm, NULL,
                 "additive mask [2, 1, L, S]");
        free(fm4);
        /* a given scale */
        double sc = 0.3;
        sd g = {B, L, S, E, Ev, 1, 1, NULL, 0, 0, 0, 0, sc};
        run_case(dev, dts[d], &g, 4, qs, 4, ks, 4, vs, 0, NULL, NULL, &sc, "scale 0.3");
        /* causal, top-left aligned, with more queries than keys and fewer */
        sd h = {2, 9, 4, E, Ev, 1, 1, NULL, 0, 0, 0, 1, 1 / sqrt((double)E)};
        run_case(dev, dts[d], &h, 3, (int64_t[]){2, 9, E}, 3, (int64_t[]){2, 4, E}, 3,
                 (int64_t[]){2, 4, Ev}, 0, NULL, NULL, NULL, "causal L 9 S 4");
        h.L = 4;
        h.S = 9;
        run_case(dev, dts[d], &h, 3, (int64_t[]){2, 4, E}, 3, (int64_t[]){2, 9, E}, 3,
                 (int64_t[]){2, 9, Ev}, 0, NULL, NULL, NULL, "causal L 4 S 9");
    }
    free(bm);
    free(fm);
}

Test(sdpa, fully_masked_rows_and_empty_sizes)
{
    clt_device *dev = get_device("cpu");
    enum { L = 3, S = 4, E = 2 };
    double bm[L * S] = {1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    for (int d = 0; d < 2; d++) {
        /* row 1 attends to nothing: NaN, as softmax over -inf gives */
        sd c = {1, L, S, E, E, 1, 1, bm, 1, 0, 1, 0, 1 / sqrt((double)E)};
        run_case(dev, dts[d], &c, 2, (int64_t[]){L, E}, 2, (int64_t[]){S, E}, 2,
                 (int64_t[]){S, E}, 2, (int64_t[]){L, S}, NULL, NULL, "fully masked row");
        /* no keys: q k^T is [L, 0], its product with v zeros; no queries: empty */
        clt_tensor *q = tensor_of(dev, dts[d], 2, (int64_t[]){L, E}, bm), *k, *v, *o;
        CHECK(clt_zeros(dev, dts[d], 2, (int64_t[]){0, E}, &k));
        CHECK(clt_zeros(dev, dts[d], 2, (int64_t[]){0, 5}, &v));
        CHECK(clt_scaled_dot_product_attention(q, k, v, NULL, 0.0, 0, NULL, NULL, &o));
        assert_shape(o, 2, (int64_t[]){L, 5});
        double z[L * 5] = {0};
        assert_close(o, z, L * 5, 0, "no keys");
        clt_tensor_free(o);
        clt_tensor_free(q);
        CHECK(clt_zeros(dev, dts[d], 3, (int64_t[]){2, 0, E}, &q));
        CHECK(clt_scaled_dot_product_attention(q, k, v, NULL, 0.0, 1, NULL, NULL, &o));
        assert_shape(o, 3, (int64_t[]){2, 0, 5});
        clt_tensor_free(o);
        clt_tensor_free(q);
        clt_tensor_free(k);
        clt_tensor_free(v);
    }
}

/* A success on empty sizes clears the message an earlier failure left,
 * as every call's success does (the fuzz target found the fused path's
 * empty query and empty key cases keeping it). */
Test(sdpa, empty_sizes_clear_an_earlier_error)
{
    clt_device *dev = get_device("cpu");
    int64_t shapes[2][3][2] = {{{0, 2}, {3, 2}, {3, 4}}, {{2, 2}, {0, 2}, {0, 4}}};
    for (int c = 0; c < 2; c++) {
        clt_tensor *t[3], *o = NULL, *bad = (clt_tensor *)1;
        for (int i = 0; i < 3; i++)
            CHECK(clt_zeros(dev, CLT_FLOAT32, 2, shapes[c][i], &t[i]));
        cr_assert_neq(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){2, -1}, &bad), CLT_OK);
        cr_assert(clt_last_error()[0]);
        CHECK(clt_scaled_dot_product_attention(t[0], t[1], t[2], NULL, 0.0, 0, NULL, NULL, &o));
        cr_assert_str_empty(clt_last_error(), "case %d: the message of the failed call stays", c);
        cr_assert_eq(clt_last_status(), CLT_OK);
        clt_tensor_free(o);
        for (int i = 0; i < 3; i++)
            clt_tensor_free(t[i]);
    }
}

/* ---- gradients ------------------------------------------------------------------------- */

typedef struct gctx {
    int causal;
    clt_tensor *bool_mask; /* or NULL */
    int float_mask;        /* in[3] is an additive mask */
} gctx;

static clt_status sdpa_gc(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gctx *g = ctx;
    return clt_scaled_dot_product_attention(in[0], in[1], in[2],
                                            g->float_mask ? in[3] : g->bool_mask, 0.0,
                                            g->causal, NULL, NULL, out);
}

Test(sdpa, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    enum { B = 2, L = 5, S = 6, E = 3, Ev = 4 };
    double *q = rand_f64(B * L * E, 4, -1, 1), *k = rand_f64(S * E, 5, -1, 1);
    double *v = rand_f64(B * S * Ev, 6, -1, 1), *fm = rand_f64(L * S, 7, -2, 0);
    double bm[L * S];
    for (int i = 0; i < L * S; i++)
        bm[i] = (i * 7) % 3 != 0 || i % S == 1;
    /* the key shared by both batch entries: its gradient sums theirs */
    gc_in ins[4] = {{3, {B, L, E}, q, 1}, {2, {S, E}, k, 1}, {3, {B, S, Ev}, v, 1},
                    {2, {L, S}, fm, 0}};
    for (int r = 0; r < 2; r++) {
        route(routes[r]);
        gctx g = {0, NULL, 0};
        gradcheck(dev, sdpa_gc, &g, 3, ins);
        g.causal = 1;
        gradcheck(dev, sdpa_gc, &g, 3, ins);
        g.causal = 0;
        g.bool_mask = tensor_of(dev, CLT_BOOL, 2, (int64_t[]){L, S}, bm);
        gradcheck(dev, sdpa_gc, &g, 3, ins);
        clt_tensor_free(g.bool_mask);
        g.bool_mask = NULL;
        g.float_mask = 1; /* fused on its route: the mask without grad */
        ins[3].grad = 0;
        gradcheck(dev, sdpa_gc, &g, 4, ins);
        ins[3].grad = 1; /* composed on either: the mask's gradient too */
        gradcheck(dev, sdpa_gc, &g, 4, ins);
    }
    free(q);
    free(k);
    free(v);
    free(fm);
}

Test(sdpa, one_node_with_a_named_backward)
{
    clt_device *dev = get_device("cpu");
    double d[12] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2};
    clt_tensor *q = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 4}, d), *o;
    CHECK(clt_set_requires_grad(q, 1));
    route("fused");
    uint64_t before = launches();
    CHECK(clt_scaled_dot_product_attention(q, q, q, NULL, 0.0, 1, NULL, NULL, &o));
    /* the kernel, and the keys in panels: zeros, padded rows, panels */
    cr_assert_leq(launches() - before, 4, "the forward took %llu launches",
                  (unsigned long long)(launches() - before));
    const char *name = clt_grad_fn_name(o);
    cr_assert(name && strcmp(name, "ScaledDotProductFlashAttentionBackward0") == 0, "grad_fn %s",
              name ? name : "(none)");
    route(NULL);
    clt_tensor_free(o);
    clt_tensor_free(q);
}

/* ---- routing --------------------------------------------------------------------------- */

/* The route clt_scaled_dot_product_attention takes for q [B, L, E] and
 * k, v [B, S, E] (float32, requires grad), seen in its grad_fn: 1 fused,
 * 0 composed. */
static int route_of(clt_device *dev, int64_t B, int64_t L, int64_t S, int64_t E)
{
    clt_tensor *q, *k, *o;
    CHECK(clt_full(dev, CLT_FLOAT32, 3, (int64_t[]){B, L, E}, 0.5, &q));
    CHECK(clt_full(dev, CLT_FLOAT32, 3, (int64_t[]){B, S, E}, 0.25, &k));
    CHECK(clt_set_requires_grad(q, 1));
    CHECK(clt_scaled_dot_product_attention(q, k, k, NULL, 0.0, 0, NULL, NULL, &o));
    const char *name = clt_grad_fn_name(o);
    cr_assert_not_null(name);
    int fused = strcmp(name, "ScaledDotProductFlashAttentionBackward0") == 0;
    clt_tensor_free(o);
    clt_tensor_free(q);
    clt_tensor_free(k);
    return fused;
}

Test(sdpa, routes_by_the_scores_against_the_device_cache)
{
    /* fused once the [B, L, S] scores take more than a quarter of the
     * device's global memory cache times E / 64 (always where it reports
     * none), composed below; CLTENSOR_SDPA forces either */
    clt_device *dev = get_device("cpu");
    cl_ulong cache = 0;
    cr_assert_eq(clGetDeviceInfo(clt_device_cl_device(dev), CL_DEVICE_GLOBAL_MEM_CACHE_SIZE,
                                 sizeof cache, &cache, NULL),
                 CL_SUCCESS);
    int64_t S = 256, at = (int64_t)(cache / 4 / sizeof(float)) / S; /* rows at the share */
    route(NULL);
    cr_assert_eq(route_of(dev, 1, 4, 4, 64), cache == 0, "4 x 4 scores, cache %llu",
                 (unsigned long long)cache);
    if (cache > 0) {
        cr_assert_eq(route_of(dev, 1, at, S, 64), 0, "[1, %lld, %lld] scores: at the share",
                     (long long)at, (long long)S);
        cr_assert_eq(route_of(dev, 1, at + 1, S, 64), 1, "[1, %lld, %lld] scores: past it",
                     (long long)at + 1, (long long)S);
        /* the batch counts: 4 entries of a quarter as many rows each */
        cr_assert_eq(route_of(dev, 4, at / 4 + 1, S, 64), 1, "[4, %lld, %lld] scores",
                     (long long)at / 4 + 1, (long long)S);
        /* twice as wide heads take twice the share */
        cr_assert_eq(route_of(dev, 1, at + 1, S, 128), 0, "E 128: composed");
        cr_assert_eq(route_of(dev, 1, 2 * at + 1, S, 128), 1, "E 128: fused");
    }
    route("fused");
    cr_assert_eq(route_of(dev, 1, 4, 4, 64), 1, "forced fused");
    route("composed");
    cr_assert_eq(route_of(dev, 1, at + 1, S, 64), 0, "forced composed");
    route(NULL);
}

/* ---- dropout --------------------------------------------------------------------------- */

Test(sdpa, dropout_draws_from_the_generator)
{
    clt_device *dev = get_device("cpu");
    enum { B = 2, L = 6, S = 5, E = 4, Ev = 3 };
    double p = 0.4;
    double *q = rand_f64(B * L * E, 11, -1, 1), *k = rand_f64(B * S * E, 12, -1, 1);
    double *v = rand_f64(B * S * Ev, 13, -1, 1), want[B * L * Ev];
    clt_tensor *tq = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){B, L, E}, q);
    clt_tensor *tk = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){B, S, E}, k);
    clt_tensor *tv = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){B, S, Ev}, v), *o, *u;
    clt_generator *gen, *twin;
    CHECK(clt_generator_new(3, &gen));
    CHECK(clt_generator_new(3, &twin));
    /* the weights' mask: uniforms of their shape from the same stream */
    CHECK(clt_rand(twin, dev, CLT_FLOAT64, 3, (int64_t[]){B, L, S}, &u));
    double *uv = read_as_f64(u);
    CHECK(clt_scaled_dot_product_attention(tq, tk, tv, NULL, p, 0, NULL, gen, &o));
    cr_assert_eq(clt_generator_offset(gen), clt_generator_offset(twin));
    sd c = {B, L, S, E, Ev, 1, 1, NULL, 0, 0, 0, 0, 0.5};
    sdpa_ref(&c, q, k, v, uv, p, want);
    assert_close(o, want, B * L * Ev, 1e-12, "dropout 0.4");
    clt_tensor_free(o);
    /* p 1 drops everything: zeros */
    CHECK(clt_scaled_dot_product_attention(tq, tk, tv, NULL, 1.0, 0, NULL, gen, &o));
    double z[B * L * Ev] = {0};
    assert_close(o, z, B * L * Ev, 0, "dropout 1");
    clt_tensor_free(o);
    /* a failed call draws nothing */
    uint64_t at = clt_generator_offset(gen);
    assert_error(clt_scaled_dot_product_attention(tq, tk, tq, NULL, p, 0, NULL, gen, &o),
                 CLT_ERR_SHAPE_MISMATCH, NULL);
    cr_assert_eq(clt_generator_offset(gen), at);
    free(uv);
    free(q);
    free(k);
    free(v);
    clt_tensor_free(u);
    clt_tensor_free(tq);
    clt_tensor_free(tk);
    clt_tensor_free(tv);
    clt_generator_free(gen);
    clt_generator_free(twin);
}

/* ---- MultiheadAttention ---------------------------------------------------------------- */

Test(sdpa, multihead_attention_without_weights_fuses)
{
    /* without weights the heads go through the fused op: the same output
     * as the composed path that computes the weights, in fewer launches */
    clt_device *dev = get_device("cpu");
    enum { E = 8, H = 2, N = 3, L = 5 };
    clt_generator *gen;
    CHECK(clt_generator_new(4, &gen));
    clt_module *m;
    CHECK(clt_multihead_attention_layer(dev, E, H, 0.0, 1, 1, gen, &m));
    double *xv = rand_f64(N * L * E, 14, -1, 1), kp[N * L] = {0};
    kp[3] = kp[L + 1] = 1;
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){N, L, E}, xv);
    clt_tensor *kpm = tensor_of(dev, CLT_BOOL, 2, (int64_t[]){N, L}, kp), *o1, *o2, *w;
    route("fused");
    for (int masked = 0; masked < 2; masked++) {
        clt_tensor *mk = masked ? kpm : NULL;
        uint64_t a = launches();
        CHECK(clt_multihead_attention(m, x, x, x, mk, NULL, 0, 0, &o1, NULL));
        uint64_t b = launches();
        CHECK(clt_multihead_attention(m, x, x, x, mk, NULL, 1, 0, &o2, &w));
        uint64_t c = launches();
        cr_assert_lt(b - a, c - b, "without weights %llu launches, with %llu",
                     (unsigned long long)(b - a), (unsigned long long)(c - b));
        double *want = read_as_f64(o2);
        assert_close(o1, want, N * L * E, 2e-5, masked ? "fused, masked" : "fused");
        free(want);
        clt_tensor_free(o1);
        clt_tensor_free(o2);
        clt_tensor_free(w);
    }
    route(NULL);
    free(xv);
    clt_tensor_free(x);
    clt_tensor_free(kpm);
    clt_module_free(m);
    clt_generator_free(gen);
}

/* ---- errors ---------------------------------------------------------------------------- */

Test(sdpa, errors)
{
    static const char fn[] = "clt_scaled_dot_product_attention";
    clt_device *dev = get_device("cpu");
    clt_tensor *q, *k, *v, *k7, *v3, *i32, *bm, *bad, *f64, *o = (clt_tensor *)&o, *e0;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 5, 8}, &q));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 6, 8}, &k));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 6, 4}, &v));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 6, 7}, &k7));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){3, 6, 4}, &v3));
    CHECK(clt_zeros(dev, CLT_INT32, 3, (int64_t[]){2, 5, 8}, &i32));
    CHECK(clt_zeros(dev, CLT_BOOL, 2, (int64_t[]){5, 6}, &bm));
    CHECK(clt_zeros(dev, CLT_BOOL, 2, (int64_t[]){4, 6}, &bad));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){5, 6}, &f64));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, (int64_t[]){5, 0}, &e0));
    struct {
        clt_status st;
        const clt_tensor *q, *k, *v, *m;
        double p;
        int causal;
        const char *needle;
    } cases[] = {
        {CLT_ERR_NULL_ARGUMENT, NULL, k, v, NULL, 0, 0, NULL},
        {CLT_ERR_SHAPE_MISMATCH, q, k7, v, NULL, 0, 0, "do not fit"},
        {CLT_ERR_SHAPE_MISMATCH, q, k, q, NULL, 0, 0, "do not fit"},
        {CLT_ERR_SHAPE_MISMATCH, q, k, v3, NULL, 0, 0, NULL},
        {CLT_ERR_DTYPE_MISMATCH, q, k, i32, NULL, 0, 0, "same dtype"},
        {CLT_ERR_DTYPE_UNSUPPORTED, i32, i32, i32, NULL, 0, 0, "floating point"},
        {CLT_ERR_SHAPE_MISMATCH, q, k, v, bad, 0, 0, "does not broadcast"},
        {CLT_ERR_DTYPE_MISMATCH, q, k, v, f64, 0, 0, "attn_mask dtype"},
        {CLT_ERR_INVALID_ARGUMENT, q, k, v, bm, 0, 1, "is_causal"},
        {CLT_ERR_INVALID_ARGUMENT, q, k, v, NULL, 1.5, 0, "between 0 and 1"},
        {CLT_ERR_INVALID_ARGUMENT, q, k, v, NULL, NAN, 0, "between 0 and 1"},
        {CLT_ERR_SHAPE_MISMATCH, e0, e0, e0, NULL, 0, 0, "default scale"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        o = (clt_tensor *)&o;
        clt_status st = clt_scaled_dot_product_attention(cases[c].q, cases[c].k, cases[c].v,
                                                         cases[c].m, cases[c].p, cases[c].causal,
                                                         NULL, NULL, &o);
        cr_assert_eq(st, cases[c].st, "case %zu: %s, want %s (%s)", c, clt_status_name(st),
                     clt_status_name(cases[c].st), clt_last_error());
        cr_assert_null(o, "case %zu: *out not NULL", c);
        if (cases[c].needle)
            assert_error(st, cases[c].st, cases[c].needle);
        names_only(fn);
    }
    assert_error(clt_scaled_dot_product_attention(q, k, v, NULL, 0, 0, NULL, NULL, NULL),
                 CLT_ERR_NULL_ARGUMENT, NULL);
    clt_tensor *ts[] = {q, k, v, k7, v3, i32, bm, bad, f64, e0};
    for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++)
        clt_tensor_free(ts[j]);
}

Test(sdpa, operands_on_two_devices)
{
    clt_device *dev = get_device("cpu"), *dev2 = second_device(dev);
    clt_tensor *q, *k, *o = (clt_tensor *)&o;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 3, (int64_t[]){2, 5, 8}, &q));
    CHECK(clt_zeros(dev2, CLT_FLOAT32, 3, (int64_t[]){2, 6, 8}, &k));
    assert_error(clt_scaled_dot_product_attention(q, k, k, NULL, 0, 0, NULL, NULL, &o),
                 CLT_ERR_DEVICE_MISMATCH, NULL);
    cr_assert_null(o);
    clt_tensor_free(q);
    clt_tensor_free(k);
}
