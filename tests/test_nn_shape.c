/* test_nn_shape.c: the rearranging and bag ops and their layers against
 * host loops in double computed here: pixel_shuffle, pixel_unshuffle and
 * channel_shuffle (floating and integer dtypes, leading dims, strided
 * inputs), unfold and fold (kernel, dilation, padding, stride, unbatched;
 * fold the adjoint of unfold), embedding_bag (sum, mean, max, offsets or
 * 2-D input, per_sample_weights, padding_idx, include_last_offset, ties
 * and NaN, bad indices and offsets found at the next synchronisation, the
 * same bits on every run), bilinear and pad_sequence; gradients against
 * finite differences in float64 (gradcheck.h) with torch's node names;
 * errors with their messages; and the layers (PixelShuffle ... EmbeddingBag,
 * Bilinear): settings, parameters and their initialisation, forward equal
 * to the ops', save and load. */
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

static clt_tensor *ints_of(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                           const int64_t *v)
{
    clt_tensor *a = NULL, *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, nd, shape, v, &a));
    CHECK(clt_to_dtype(a, dt, &t));
    clt_tensor_free(a);
    return t;
}

/* ---- pixel_shuffle, pixel_unshuffle, channel_shuffle ------------------------------ */

/* out [B, C, H r, W r] from x [B, C r r, H, W]: out(c, h r + i, w r + j) =
 * x(c r r + i r + j, h, w). */
static void host_pixel_shuffle(const double *x, double *out, int64_t B, int64_t C, int64_t H,
                               int64_t W, int64_t r)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = 0; j < r; j++)
                    for (int64_t h = 0; h < H; h++)
                        for (int64_t w = 0; w < W; w++)
                            out[((b * C + c) * H * r + h * r + i) * W * r + w * r + j] =
                                x[((b * C * r * r + c * r * r + i * r + j) * H + h) * W + w];
}

Test(nn_shape, pixel_shuffle_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_INT64, CLT_INT32};
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        /* [2, 3, 8, 2, 3] with r 2: three dims of batch in all */
        int64_t xs[5] = {2, 3, 8, 2, 3}, r = 2, B = 6, C = 2, H = 2, W = 3;
        size_t n = 2 * 3 * 8 * 2 * 3;
        double *v = malloc(n * sizeof *v), *want = malloc(n * sizeof *want);
        for (size_t i = 0; i < n; i++)
            v[i] = (double)((i * 37) % 101) - 50;
        clt_tensor *x = tensor_of(dev, dts[k], 5, xs, v), *y = NULL, *back = NULL;
        CHECK(clt_pixel_shuffle(x, r, &y));
        assert_shape(y, 5, (int64_t[]){2, 3, 2, 4, 6});
        cr_assert_eq(clt_tensor_dtype(y), dts[k]);
        host_pixel_shuffle(v, want, B, C, H, W, r);
        assert_tensor_close(y, want, n, 0, 0, "pixel_shuffle");
        /* pixel_unshuffle undoes it */
        CHECK(clt_pixel_unshuffle(y, r, &back));
        assert_shape(back, 5, xs);
        assert_tensor_close(back, v, n, 0, 0, "pixel_unshuffle");
        clt_tensor_free(x);
        clt_tensor_free(y);
        clt_tensor_free(back);
        free(v);
        free(want);
    }
    /* a transposed (strided) input and r 3 */
    double *v = spread_doubles(9 * 4 * 5, 3), want[180], tv[180];
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){9, 5, 4}, v), *xt = NULL, *y;
    CHECK(clt_transpose(x, 1, 2, &xt));
    for (int c = 0; c < 9; c++)
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 5; w++)
                tv[(c * 4 + h) * 5 + w] = v[(c * 5 + w) * 4 + h];
    CHECK(clt_pixel_shuffle(xt, 3, &y));
    assert_shape(y, 3, (int64_t[]){1, 12, 15});
    host_pixel_shuffle(tv, want, 1, 1, 4, 5, 3);
    assert_tensor_close(y, want, 180, 0, 0, "pixel_shuffle of a transposed input");
    clt_tensor_free(x);
    clt_tensor_free(xt);
    clt_tensor_free(y);
    free(v);
}

Test(nn_shape, channel_shuffle_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    const clt_dtype dts[] = {CLT_FLOAT32, CLT_INT64, CLT_BOOL};
    for (size_t k = 0; k < 3; k++) {
        int64_t xs[4] = {2, 6, 2, 3}, g = 3, C = 6, S = 6;
        double v[72], want[72];
        for (int i = 0; i < 72; i++)
            v[i] = dts[k] == CLT_BOOL ? (i * 7) % 3 == 0 : (double)i;
        clt_tensor *x = tensor_of(dev, dts[k], 4, xs, v), *y = NULL;
        CHECK(clt_channel_shuffle(x, g, &y));
        /* out[:, k] = in[:, (k % g) (C / g) + k / g] */
        for (int64_t b = 0; b < 2; b++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t s = 0; s < S; s++)
                    want[(b * C + c) * S + s] = v[(b * C + (c % g) * (C / g) + c / g) * S + s];
        assert_shape(y, 4, xs);
        assert_tensor_close(y, want, 72, 0, 0, "channel_shuffle");
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
}

typedef struct shuffle_ctx {
    int kind; /* 0 pixel_shuffle, 1 pixel_unshuffle, 2 channel_shuffle */
    int64_t r;
} shuffle_ctx;

static clt_status shuffle_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const shuffle_ctx *c = ctx;
    return c->kind == 0   ? clt_pixel_shuffle(in[0], c->r, out)
           : c->kind == 1 ? clt_pixel_unshuffle(in[0], c->r, out)
                          : clt_channel_shuffle(in[0], c->r, out);
}

Test(nn_shape, shuffle_gradients_and_node_names)
{
    clt_device *dev = get_device("cpu");
    double *v = spread_doubles(2 * 8 * 2 * 4, 5);
    const char *names[] = {"PixelShuffleBackward0", "PixelUnshuffleBackward0",
                           "ChannelShuffleBackward0"};
    for (int kind = 0; kind < 3; kind++) {
        shuffle_ctx c = {kind, kind == 2 ? 4 : 2};
        gc_in x = {4, {2, 8, 2, 4}, v, 1};
        gradcheck(dev, shuffle_f, &c, 1, &x);
        clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 4, x.shape, v), *y = NULL;
        CHECK(clt_set_requires_grad(t, 1));
        CHECK(shuffle_f(&t, &y, &c));
        cr_assert_str_eq(clt_grad_fn_name(y), names[kind]);
        clt_tensor_free(t);
        clt_tensor_free(y);
    }
    free(v);
}

Test(nn_shape, shuffle_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota(dev, 4, (int64_t[]){1, 8, 3, 3}), *y = (clt_tensor *)0x1;
    clt_tensor *x2 = iota(dev, 2, (int64_t[]){8, 3});
    assert_error(clt_pixel_shuffle(x, 3, &y), CLT_ERR_SHAPE_MISMATCH,
                 "input.size(-3)=8 is not divisible by 9");
    cr_assert_null(y);
    assert_error(clt_pixel_shuffle(x, 0, &y), CLT_ERR_INVALID_ARGUMENT,
                 "pixel_shuffle expects a positive upscale_factor, but got 0");
    assert_error(clt_pixel_shuffle(x2, 2, &y), CLT_ERR_SHAPE_MISMATCH,
                 "at least 3 dimensions, but got input with 2 dimension(s)");
    assert_error(clt_pixel_unshuffle(x, 2, &y), CLT_ERR_SHAPE_MISMATCH,
                 "expects height to be divisible by downscale_factor, but input.size(-2)=3");
    assert_error(clt_pixel_shuffle(x, INT64_C(1) << 40, &y), CLT_ERR_SHAPE_MISMATCH,
                 "is not divisible by");
    assert_error(clt_pixel_unshuffle(x, -1, &y), CLT_ERR_INVALID_ARGUMENT,
                 "expects a positive downscale_factor");
    assert_error(clt_channel_shuffle(x, 3, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Number of channels must be divisible by groups. Got 8 channels and 3 groups.");
    assert_error(clt_channel_shuffle(x, 0, &y), CLT_ERR_INVALID_ARGUMENT,
                 "Value of groups:0");
    assert_error(clt_channel_shuffle(x2, 2, &y), CLT_ERR_SHAPE_MISMATCH,
                 "channel_shuffle expects input with > 2 dims, but got input with sizes [8, 3]");
    names_only("clt_channel_shuffle");
    cr_assert_null(y);
    clt_tensor_free(x);
    clt_tensor_free(x2);
}

/* ---- unfold and fold ------------------------------------------------------------------ */

typedef struct blocks {
    int64_t k[2];
    clt_fold_opts o;
} blocks;

static const blocks BL[] = {
    {{2, 2}, {{1, 1}, {0, 0}, {1, 1}}}, {{2, 3}, {{2, 1}, {1, 2}, {2, 1}}},
    {{3, 3}, {{1, 2}, {1, 1}, {2, 3}}}, {{1, 1}, {{1, 1}, {0, 0}, {1, 1}}},
    {{3, 2}, {{1, 1}, {2, 0}, {1, 2}}},
};

static int64_t nblocks(int64_t in, int64_t k, int64_t d, int64_t p, int64_t s)
{
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* cols [N, C kh kw, L] of x [N, C, H, W] (zeros in the padding); with
 * adjoint, x += the columns summed back instead (fold). */
static void host_blocks(double *x, double *cols, int64_t N, int64_t C, int64_t H, int64_t W,
                        const blocks *b, int adjoint)
{
    const int64_t *k = b->k, *d = b->o.dilation, *p = b->o.padding, *s = b->o.stride;
    int64_t Ho = nblocks(H, k[0], d[0], p[0], s[0]), Wo = nblocks(W, k[1], d[1], p[1], s[1]);
    int64_t K = C * k[0] * k[1], L = Ho * Wo;
    for (int64_t n = 0; n < N; n++)
        for (int64_t r = 0; r < K; r++) {
            int64_t c = r / (k[0] * k[1]), ki = (r / k[1]) % k[0], kj = r % k[1];
            for (int64_t l = 0; l < L; l++) {
                int64_t h = (l / Wo) * s[0] - p[0] + ki * d[0];
                int64_t w = (l % Wo) * s[1] - p[1] + kj * d[1];
                int inside = h >= 0 && h < H && w >= 0 && w < W;
                double *xe = inside ? &x[((n * C + c) * H + h) * W + w] : NULL;
                double *ce = &cols[(n * K + r) * L + l];
                if (adjoint && xe)
                    *xe += *ce;
                else if (!adjoint)
                    *ce = xe ? *xe : 0.0;
            }
        }
}

Test(nn_shape, unfold_and_fold_against_host_loops)
{
    clt_device *dev = get_device("cpu");
    const int64_t shapes[][4] = {{2, 3, 5, 6}, {1, 2, 7, 4}, {0, 3, 7, 4}};
    for (size_t si = 0; si < 3; si++)
        for (size_t bi = 0; bi < sizeof BL / sizeof BL[0]; bi++)
            for (int unbatched = 0; unbatched < 2; unbatched++) {
                const int64_t *xs = shapes[si];
                const blocks *b = &BL[bi];
                if (unbatched && xs[0] != 1)
                    continue;
                int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
                int64_t Ho = nblocks(H, b->k[0], b->o.dilation[0], b->o.padding[0],
                                     b->o.stride[0]);
                int64_t Wo = nblocks(W, b->k[1], b->o.dilation[1], b->o.padding[1],
                                     b->o.stride[1]);
                int64_t K = C * b->k[0] * b->k[1], L = Ho * Wo;
                size_t nx = (size_t)(N * C * H * W), nc = (size_t)(N * K * L);
                for (int dt = 0; dt < 2; dt++) {
                    clt_dtype dtype = dt ? CLT_FLOAT64 : CLT_FLOAT32;
                    double *x = spread_doubles(nx, 7 + (unsigned)bi), *cols = calloc(nc + 1, 8);
                    double *c2 = spread_doubles(nc, 11 + (unsigned)bi), *x2 = calloc(nx + 1, 8);
                    host_blocks(x, cols, N, C, H, W, b, 0);
                    host_blocks(x2, c2, N, C, H, W, b, 1);
                    const int64_t *xsh = unbatched ? xs + 1 : xs;
                    int64_t cs[3] = {N, K, L};
                    const int64_t *csh = unbatched ? cs + 1 : cs;
                    int nd = unbatched ? 3 : 4;
                    clt_tensor *tx = tensor_of(dev, dtype, nd, xsh, x), *u = NULL, *f = NULL;
                    clt_tensor *tc = tensor_of(dev, dtype, nd - 1, csh, c2);
                    CHECK(clt_unfold(tx, b->k, &b->o, &u));
                    assert_shape(u, nd - 1, csh);
                    assert_tensor_close(u, cols, nc, dt ? 0 : 1e-7, 0, "unfold");
                    CHECK(clt_fold(tc, (int64_t[]){H, W}, b->k, &b->o, &f));
                    assert_shape(f, nd, xsh);
                    assert_tensor_close(f, x2, nx, dt ? 1e-14 : 1e-6, 1e-6, "fold");
                    clt_tensor_free(tx);
                    clt_tensor_free(tc);
                    clt_tensor_free(u);
                    clt_tensor_free(f);
                    free(x);
                    free(x2);
                    free(cols);
                    free(c2);
                }
            }
}

Test(nn_shape, unfold_defaults_and_strided_input)
{
    clt_device *dev = get_device("cpu");
    double *v = spread_doubles(2 * 3 * 4 * 5, 13), want[2 * 12 * 12], tv[120];
    /* a [2, 3, 4, 5] view of a [2, 3, 5, 4] tensor */
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 5, 4}, v), *xt = NULL, *u;
    CHECK(clt_transpose(x, 2, 3, &xt));
    for (int i = 0; i < 6; i++)
        for (int h = 0; h < 4; h++)
            for (int w = 0; w < 5; w++)
                tv[(i * 4 + h) * 5 + w] = v[(i * 5 + w) * 4 + h];
    blocks b = {{2, 2}, CLT_FOLD_DEFAULTS};
    host_blocks(tv, want, 2, 3, 4, 5, &b, 0);
    CHECK(clt_unfold(xt, b.k, NULL, &u));
    assert_shape(u, 3, (int64_t[]){2, 12, 12});
    assert_tensor_close(u, want, 2 * 12 * 12, 0, 0, "unfold of a strided input");
    clt_tensor_free(x);
    clt_tensor_free(xt);
    clt_tensor_free(u);
    free(v);
}

typedef struct fold_ctx {
    int fold;
    blocks b;
    int64_t size[2];
} fold_ctx;

static clt_status fold_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const fold_ctx *c = ctx;
    return c->fold ? clt_fold(in[0], c->size, c->b.k, &c->b.o, out)
                   : clt_unfold(in[0], c->b.k, &c->b.o, out);
}

Test(nn_shape, unfold_and_fold_gradients)
{
    clt_device *dev = get_device("cpu");
    for (size_t bi = 0; bi < 3; bi++) {
        const blocks *b = &BL[bi];
        int64_t H = 5, W = 6;
        int64_t Ho = nblocks(H, b->k[0], b->o.dilation[0], b->o.padding[0], b->o.stride[0]);
        int64_t Wo = nblocks(W, b->k[1], b->o.dilation[1], b->o.padding[1], b->o.stride[1]);
        double *v = spread_doubles(2 * 2 * H * W, 17);
        fold_ctx c = {0, *b, {H, W}};
        gc_in x = {4, {2, 2, H, W}, v, 1};
        gradcheck(dev, fold_f, &c, 1, &x);
        double *cv = spread_doubles((size_t)(2 * 2 * b->k[0] * b->k[1] * Ho * Wo), 19);
        c.fold = 1;
        gc_in cols = {3, {2, 2 * b->k[0] * b->k[1], Ho * Wo}, cv, 1};
        gradcheck(dev, fold_f, &c, 1, &cols);
        clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, cols.shape, cv), *y = NULL;
        CHECK(clt_set_requires_grad(t, 1));
        CHECK(fold_f(&t, &y, &c));
        cr_assert_str_eq(clt_grad_fn_name(y), "Col2ImBackward0");
        clt_tensor_free(y);
        clt_tensor_free(t);
        t = tensor_of(dev, CLT_FLOAT64, 4, x.shape, v);
        CHECK(clt_set_requires_grad(t, 1));
        c.fold = 0;
        CHECK(fold_f(&t, &y, &c));
        cr_assert_str_eq(clt_grad_fn_name(y), "Im2ColBackward0");
        clt_tensor_free(y);
        clt_tensor_free(t);
        free(v);
        free(cv);
    }
}

Test(nn_shape, unfold_and_fold_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = iota(dev, 4, (int64_t[]){2, 3, 5, 5}), *y = (clt_tensor *)0x1;
    clt_tensor *c = iota(dev, 3, (int64_t[]){2, 12, 9}), *i = NULL;
    CHECK(clt_to_dtype(x, CLT_INT64, &i));
    const int64_t k6[2] = {6, 6}, k2[2] = {2, 2}, k0[2] = {0, 2}, k5[2] = {5, 5};
    assert_error(clt_unfold(x, k6, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Given input with spatial size (5, 5), kernel_size=(6, 6), dilation=(1, 1), "
                 "padding=(0, 0), calculated shape of the array of sliding blocks as (0, 0), "
                 "but its components must be at least one.");
    cr_assert_null(y);
    assert_error(clt_unfold(x, k0, NULL, &y), CLT_ERR_INVALID_ARGUMENT,
                 "kernel size should be greater than zero, but got kernel_height: 0 "
                 "kernel_width: 2");
    clt_fold_opts o = {{1, 1}, {-1, 0}, {1, 1}};
    assert_error(clt_unfold(x, k2, &o, &y), CLT_ERR_INVALID_ARGUMENT,
                 "padding should be non-negative, but got pad_height: -1 pad_width: 0");
    o = (clt_fold_opts){{1, 1}, {0, 0}, {0, 1}};
    assert_error(clt_fold(c, (int64_t[]){4, 4}, k2, &o, &y), CLT_ERR_INVALID_ARGUMENT,
                 "stride should be greater than zero, but got stride_height: 0 stride_width: 1");
    assert_error(clt_unfold(i, k2, NULL, &y), CLT_ERR_DTYPE_UNSUPPORTED, NULL);
    clt_tensor *c2 = iota(dev, 2, (int64_t[]){12, 9});
    assert_error(clt_unfold(c2, k2, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                 "input, but got: [12, 9]");
    clt_tensor_free(c2);
    assert_error(clt_fold(c, (int64_t[]){4, 5}, k2, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Given output_size=(4, 5), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), "
                 "stride=(1, 1), expected size of input's dimension 2 to match the calculated "
                 "number of sliding blocks 3 * 4 = 12, but got input.size(2)=9.");
    assert_error(clt_fold(c, (int64_t[]){4, 4}, k5, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Expected size of input's dimension 1 to be divisible by the product of "
                 "kernel_size, but got input.size(1)=12 and kernel_size=(5, 5).");
    assert_error(clt_fold(x, (int64_t[]){4, 4}, k2, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2D or 3D (batch mode) tensor");
    assert_error(clt_fold(c, (int64_t[]){INT64_MAX, 4}, k2, NULL, &y),
                 CLT_ERR_INVALID_ARGUMENT, "passes the int64 range");
    names_only("clt_fold");
    cr_assert_null(y);
    clt_tensor_free(x);
    clt_tensor_free(c);
    clt_tensor_free(i);
}

/* ---- embedding_bag ------------------------------------------------------------------ */

/* The bags of the 1-D idx with offsets off (noff of them), as torch. */
static void host_bag(const double *w, int64_t D, const int64_t *idx, int64_t n,
                     const int64_t *off, int64_t noff, int mode, const double *psw, int64_t pad,
                     int last, double *out)
{
    int64_t nb = last ? noff - 1 : noff;
    for (int64_t b = 0; b < nb; b++) {
        int64_t s = off[b], e = b + 1 < noff ? off[b + 1] : n, cnt = 0;
        for (int64_t d = 0; d < D; d++)
            out[b * D + d] = 0;
        int first = 1;
        for (int64_t k = s; k < e; k++) {
            if (idx[k] == pad)
                continue;
            for (int64_t d = 0; d < D; d++) {
                double v = w[idx[k] * D + d] * (psw ? psw[k] : 1.0);
                if (mode == 2)
                    out[b * D + d] = first || v > out[b * D + d] ? v : out[b * D + d];
                else
                    out[b * D + d] += v;
            }
            first = 0;
            cnt++;
        }
        for (int64_t d = 0; mode == 1 && cnt && d < D; d++)
            out[b * D + d] /= (double)cnt;
    }
}

static const int64_t bag_idx[10] = {1, 2, 4, 5, 4, 3, 2, 0, 5, 5};

Test(nn_shape, embedding_bag_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    const int64_t offs[][5] = {{0, 2, 2, 5}, {0, 3, 3, 7, 10}, {0}, {0, 10}, {0, 4, 4, 4}};
    const int64_t noffs[] = {4, 5, 1, 2, 4}, lasts[] = {0, 1, 0, 1, 0};
    const int64_t pads[] = {-1, 4, 5};
    double *w = spread_doubles(18, 23), *psw = spread_doubles(10, 29), want[5 * 3];
    for (int dt = 0; dt < 2; dt++) {
        clt_dtype dtype = dt ? CLT_FLOAT64 : CLT_FLOAT32;
        double rtol = dt ? 1e-14 : 1e-6;
        clt_tensor *tw = tensor_of(dev, dtype, 2, (int64_t[]){6, 3}, w);
        clt_tensor *tp = tensor_of(dev, dtype, 1, (int64_t[]){10}, psw);
        for (int it = 0; it < 2; it++) {
            clt_dtype idt = it ? CLT_INT32 : CLT_INT64;
            clt_tensor *ti = ints_of(dev, idt, 1, (int64_t[]){10}, bag_idx);
            for (size_t oi = 0; oi < 5; oi++) {
                clt_tensor *to = ints_of(dev, idt, 1, &noffs[oi], offs[oi]);
                for (int mode = 0; mode < 3; mode++)
                    for (size_t pi = 0; pi < 3; pi++)
                        for (int wp = 0; wp < (mode == 0 ? 2 : 1); wp++) {
                            int64_t pad = pads[pi];
                            clt_tensor *y = NULL;
                            CHECK(clt_embedding_bag(tw, ti, to, (clt_bag_mode)mode,
                                                    wp ? tp : NULL, pad >= 0 ? &pad : NULL,
                                                    (int)lasts[oi], &y));
                            int64_t nb = noffs[oi] - lasts[oi];
                            host_bag(w, 3, bag_idx, 10, offs[oi], noffs[oi], mode,
                                     wp ? psw : NULL, pad, (int)lasts[oi], want);
                            assert_shape(y, 2, (int64_t[]){nb, 3});
                            cr_assert_eq(clt_tensor_dtype(y), dtype);
                            assert_tensor_close(y, want, (size_t)(nb * 3), rtol, 1e-7,
                                         "embedding_bag");
                            clt_tensor_free(y);
                        }
                clt_tensor_free(to);
            }
            clt_tensor_free(ti);
        }
        /* a 2-D input: a bag per row, and padding_idx -1 (the last row) */
        clt_tensor *t2 = ints_of(dev, CLT_INT64, 2, (int64_t[]){2, 5}, bag_idx), *y = NULL;
        int64_t pad = -1, off2[2] = {0, 5};
        for (int mode = 0; mode < 3; mode++) {
            CHECK(clt_embedding_bag(tw, t2, NULL, (clt_bag_mode)mode, NULL, &pad, 0, &y));
            host_bag(w, 3, bag_idx, 10, off2, 2, mode, NULL, 5, 0, want);
            assert_tensor_close(y, want, 6, rtol, 1e-7, "embedding_bag of a 2-D input");
            clt_tensor_free(y);
        }
        clt_tensor_free(t2);
        clt_tensor_free(tw);
        clt_tensor_free(tp);
    }
    free(w);
    free(psw);
}

Test(nn_shape, embedding_bag_max_ties_nan_and_determinism)
{
    clt_device *dev = get_device("cpu");
    /* rows 0 and 1 tie in column 1; a NaN stays only where it comes first */
    double w[9] = {1, 5, NAN, 1, 5, 2, 2, NAN, 0};
    int64_t idx[5] = {1, 0, 2, 0, 2}, off[2] = {0, 3};
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, w), *y = NULL, *g = NULL;
    clt_tensor *ti = ints_of(dev, CLT_INT64, 1, (int64_t[]){5}, idx);
    clt_tensor *to = ints_of(dev, CLT_INT64, 1, (int64_t[]){2}, off);
    CHECK(clt_set_requires_grad(tw, 1));
    CHECK(clt_embedding_bag(tw, ti, to, CLT_BAG_MAX, NULL, NULL, 0, &y));
    /* bag 0 reads rows 1, 0, 2: column 1 ties (row 1 kept), column 2
     * starts at 2, then NaN is not greater; bag 1 reads rows 0, 2: NaN
     * first in column 2 stays */
    double want[6] = {2, 5, 2, 2, 5, NAN};
    assert_tensor_close(y, want, 6, 0, 0, "max");
    clt_tensor *s = NULL;
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(tw, &g));
    /* the gradient goes to the entry that gave each maximum (the first of
     * equal ones): bag 0 column 1 to row 1, not row 0 */
    double gw[9] = {0, 1, 1, 0, 1, 1, 2, 0, 0};
    assert_tensor_close(g, gw, 9, 0, 0, "max's gradient");
    clt_tensor_free(s);
    clt_tensor_free(g);
    clt_tensor_free(y);
    /* sums of many entries give the same bits on every run */
    int64_t n = 4000, nb = 7, D = 5, rows = 50;
    int64_t *big = malloc((size_t)n * sizeof *big), offs[7] = {0, 1, 600, 600, 2100, 3999, 4000};
    for (int64_t k = 0; k < n; k++)
        big[k] = (k * 31) % rows;
    double *wv = spread_doubles((size_t)(rows * D), 31);
    clt_tensor *bw = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){rows, D}, wv);
    clt_tensor *bi = ints_of(dev, CLT_INT64, 1, &n, big);
    clt_tensor *bo = ints_of(dev, CLT_INT64, 1, &nb, offs);
    CHECK(clt_set_requires_grad(bw, 1));
    float *first = NULL, *gfirst = NULL;
    for (int run = 0; run < 3; run++) {
        clt_tensor *r = NULL, *l = NULL, *gr = NULL;
        CHECK(clt_embedding_bag(bw, bi, bo, CLT_BAG_MEAN, NULL, NULL, 0, &r));
        CHECK(clt_sum(r, &l));
        CHECK(clt_zero_grad(bw, 1));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(bw, &gr));
        float *a = read_f32(r), *ga = read_f32(gr);
        if (run == 0) {
            first = a;
            gfirst = ga;
        } else {
            cr_assert(memcmp(a, first, (size_t)(nb * D) * sizeof *a) == 0, "run %d differs", run);
            cr_assert(memcmp(ga, gfirst, (size_t)(rows * D) * sizeof *ga) == 0,
                      "run %d's gradient differs", run);
            free(a);
            free(ga);
        }
        clt_tensor_free(r);
        clt_tensor_free(l);
        clt_tensor_free(gr);
    }
    free(first);
    free(gfirst);
    free(big);
    free(wv);
    clt_tensor_free(bw);
    clt_tensor_free(bi);
    clt_tensor_free(bo);
    clt_tensor_free(tw);
    clt_tensor_free(ti);
    clt_tensor_free(to);
}

typedef struct bag_ctx {
    clt_tensor *idx, *off;
    int mode, psw, last;
    int64_t pad;
} bag_ctx;

static clt_status bag_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const bag_ctx *c = ctx;
    return clt_embedding_bag(in[0], c->idx, c->off, (clt_bag_mode)c->mode,
                             c->psw ? in[1] : NULL, c->pad >= 0 ? &c->pad : NULL, c->last, out);
}

Test(nn_shape, embedding_bag_gradients)
{
    clt_device *dev = get_device("cpu");
    double *w = spread_doubles(18, 37), *psw = spread_doubles(10, 41);
    int64_t off[4] = {0, 2, 2, 5}, off5[5] = {0, 3, 3, 7, 10};
    clt_tensor *ti = ints_of(dev, CLT_INT64, 1, (int64_t[]){10}, bag_idx);
    clt_tensor *to = ints_of(dev, CLT_INT32, 1, (int64_t[]){4}, off);
    clt_tensor *to5 = ints_of(dev, CLT_INT64, 1, (int64_t[]){5}, off5);
    for (int mode = 0; mode < 3; mode++)
        for (int variant = 0; variant < 3; variant++) {
            bag_ctx c = {ti, variant == 2 ? to5 : to, mode, mode == 0 && variant == 1,
                         variant == 2, variant == 1 ? 4 : -1};
            gc_in ins[2] = {{2, {6, 3}, w, 1}, {1, {10}, psw, 1}};
            gradcheck(dev, bag_f, &c, c.psw ? 2 : 1, ins);
        }
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){6, 3}, w), *y = NULL;
    CHECK(clt_set_requires_grad(tw, 1));
    CHECK(clt_embedding_bag(tw, ti, to, CLT_BAG_SUM, NULL, NULL, 0, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "EmbeddingBagBackward0");
    clt_tensor_free(y);
    clt_tensor_free(tw);
    clt_tensor_free(ti);
    clt_tensor_free(to);
    clt_tensor_free(to5);
    free(w);
    free(psw);
}

/* The host's embedding_renorm_ (p 2) of w [rows, D] over idx [n]. */
static void host_bag_renorm(double *w, int64_t D, const int64_t *idx, int64_t n, double mn)
{
    for (int64_t k = 0; k < n; k++) {
        int64_t r = idx[k], seen = 0;
        for (int64_t q = 0; q < k; q++)
            seen |= idx[q] == r;
        if (seen)
            continue;
        double s = 0;
        for (int64_t d = 0; d < D; d++)
            s += w[r * D + d] * w[r * D + d];
        s = sqrt(s);
        for (int64_t d = 0; s > mn && d < D; d++)
            w[r * D + d] *= mn / (s + 1e-7);
    }
}

/* clt_embedding_bag_with_opts: max_norm renormalises every row the input
 * names (padding entries too) in the weight before the bags are reduced
 * (host renorm and bags); scale_grad_by_freq divides each row's gradient
 * by its index's count over the whole input (the host's sum of the bags'
 * gradients, sum with per-sample weights and mean, padding_idx 4); with
 * create_graph the gradient of sum(gw * v) for the loss sum(y * y) is that
 * of an unscaled double backward (host loop); max mode refuses
 * scale_grad_by_freq, and a refusal leaves the weight unchanged. */
Test(nn_shape, embedding_bag_max_norm_and_freq)
{
    clt_device *dev = get_device("cpu");
    double *w = spread_doubles(18, 37), *psw = spread_doubles(10, 41), *gv = spread_doubles(9, 43),
           *vv = spread_doubles(18, 47);
    const int64_t off[3] = {0, 2, 5}, pad = 4;
    const double mn = 0.8;
    int64_t cnt[6] = {0};
    for (int k = 0; k < 10; k++)
        cnt[bag_idx[k]]++;
    clt_tensor *ti = ints_of(dev, CLT_INT64, 1, (int64_t[]){10}, bag_idx);
    clt_tensor *to = ints_of(dev, CLT_INT32, 1, (int64_t[]){3}, off);
    clt_tensor *tg = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){3, 3}, gv);
    clt_tensor *tv = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){6, 3}, vv);
    for (int mode = 0; mode < 2; mode++)
        for (int wp = 0; wp < (mode ? 1 : 2); wp++) {
            clt_tensor *tw = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){6, 3}, w);
            clt_tensor *tp = tensor_of(dev, CLT_FLOAT64, 1, (int64_t[]){10}, psw);
            CHECK(clt_set_requires_grad(tw, 1));
            clt_embedding_bag_opts o = CLT_EMBEDDING_BAG_DEFAULTS;
            o.mode = (clt_bag_mode)mode;
            o.padding_idx = &pad;
            o.max_norm = &mn;
            o.scale_grad_by_freq = 1;
            clt_tensor *y = NULL, *g = NULL;
            CHECK(clt_embedding_bag_with_opts(tw, ti, to, wp ? tp : NULL, &o, &y));
            double rw[18], want[9];
            memcpy(rw, w, sizeof rw);
            host_bag_renorm(rw, 3, bag_idx, 10, mn);
            assert_tensor_close(tw, rw, 18, 1e-14, 1e-15, "the renormalised weight");
            host_bag(rw, 3, bag_idx, 10, off, 3, mode, wp ? psw : NULL, pad, 0, want);
            assert_tensor_close(y, want, 9, 1e-14, 1e-15, "embedding_bag after renorm");
            CHECK(clt_backward(y, tg, 0));
            CHECK(clt_grad(tw, &g));
            /* each entry's share of its bag's gradient, over its row's count */
            double gw[18] = {0};
            for (int b = 0; b < 3; b++) {
                int64_t s = off[b], e = b < 2 ? off[b + 1] : 10, n = 0;
                for (int64_t k = s; k < e; k++)
                    n += bag_idx[k] != pad;
                for (int64_t k = s; k < e; k++)
                    for (int d = 0; bag_idx[k] != pad && d < 3; d++)
                        gw[bag_idx[k] * 3 + d] += gv[b * 3 + d] * (wp ? psw[k] : 1) /
                                                  (mode ? (double)n : 1) /
                                                  (double)cnt[bag_idx[k]];
            }
            assert_tensor_close(g, gw, 18, 1e-14, 1e-15, "the scaled gradient");
            clt_tensor_free(g);
            clt_tensor_free(y);
            if (mode == 0 && !wp) { /* second order, sum mode: y_b = sum of its rows */
                clt_tensor *y2 = NULL, *sq = NULL, *l = NULL, *g1 = NULL, *p = NULL,
                           *sp = NULL, *g2 = NULL;
                CHECK(clt_embedding_bag_with_opts(tw, ti, to, NULL, &o, &y2));
                CHECK(clt_mul(y2, y2, &sq));
                CHECK(clt_sum(sq, &l));
                clt_grad_opts go = {1, 1, 0};
                CHECK(clt_autograd_grad_ex(&l, 1, NULL, &tw, 1, &go, &g1));
                CHECK(clt_mul(g1, tv, &p));
                CHECK(clt_sum(p, &sp));
                CHECK(clt_autograd_grad_ex(&sp, 1, NULL, &tw, 1, NULL, &g2));
                /* v's rows back to the bags unscaled (u_b = sum of v[idx_k]
                 * over the bag), then 2 u_b through the forward's scaled
                 * backward */
                double u[9] = {0}, w2[18] = {0};
                for (int b = 0; b < 3; b++)
                    for (int64_t k = off[b]; k < (b < 2 ? off[b + 1] : 10); k++)
                        for (int d = 0; bag_idx[k] != pad && d < 3; d++)
                            u[b * 3 + d] += vv[bag_idx[k] * 3 + d];
                for (int b = 0; b < 3; b++)
                    for (int64_t k = off[b]; k < (b < 2 ? off[b + 1] : 10); k++)
                        for (int d = 0; bag_idx[k] != pad && d < 3; d++)
                            w2[bag_idx[k] * 3 + d] += 2 * u[b * 3 + d] / (double)cnt[bag_idx[k]];
                assert_tensor_close(g2, w2, 18, 1e-13, 1e-14, "the second-order gradient");
                clt_tensor *xs[] = {y2, sq, l, g1, p, sp, g2};
                for (size_t q = 0; q < sizeof xs / sizeof xs[0]; q++)
                    clt_tensor_free(xs[q]);
            }
            clt_tensor_free(tp);
            clt_tensor_free(tw);
        }
    /* max mode refuses the scaling, before renormalising */
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){6, 3}, w), *y = (clt_tensor *)0x1;
    clt_embedding_bag_opts o = CLT_EMBEDDING_BAG_DEFAULTS;
    o.mode = CLT_BAG_MAX;
    o.max_norm = &mn;
    o.scale_grad_by_freq = 1;
    assert_error(clt_embedding_bag_with_opts(tw, ti, to, NULL, &o, &y), CLT_ERR_INVALID_ARGUMENT,
                 "clt_embedding_bag_with_opts: max mode does not support scaling the gradient "
                 "by the frequency");
    cr_assert_null(y);
    o.mode = CLT_BAG_MEAN;
    int64_t pad9 = 9;
    o.padding_idx = &pad9;
    assert_error(clt_embedding_bag_with_opts(tw, ti, to, NULL, &o, &y), CLT_ERR_INVALID_ARGUMENT,
                 "padding_idx must be within the number of embeddings");
    assert_tensor_close(tw, w, 18, 0, 0, "the weight after refusals");
    /* the layer: its options kept, its forward the op's, its padding_idx */
    clt_module *m = NULL, *bad = (clt_module *)0x1;
    o.mode = CLT_BAG_MAX;
    assert_error(clt_embedding_bag_layer_with_opts(dev, 6, 3, &o, NULL, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "max mode does not support scaling");
    cr_assert_null(bad);
    o.mode = CLT_BAG_SUM;
    o.padding_idx = &pad;
    CHECK(clt_embedding_bag_layer_with_opts(dev, 6, 3, &o, NULL, &m));
    int has = 0;
    int64_t got = 0;
    CHECK(clt_embedding_layer_padding_idx(m, &has, &got));
    cr_assert(has == 1 && got == 4);
    clt_tensor *mw = clt_module_param(m, "weight"), *ym = NULL;
    double *mv = read_as_f64(mw), want[9];
    CHECK(clt_embedding_bag_forward(m, ti, to, NULL, &ym));
    host_bag_renorm(mv, 3, bag_idx, 10, mn);
    assert_tensor_close(mw, mv, 18, 1e-6, 1e-7, "the layer's renormalised weight");
    host_bag(mv, 3, bag_idx, 10, off, 3, 0, NULL, pad, 0, want);
    assert_tensor_close(ym, want, 9, 1e-6, 1e-7, "the layer's forward");
    free(mv);
    clt_tensor_free(ym);
    clt_module_free(m);
    clt_tensor *ts[] = {tw, ti, to, tg, tv};
    for (size_t q = 0; q < sizeof ts / sizeof ts[0]; q++)
        clt_tensor_free(ts[q]);
    free(w);
    free(psw);
    free(gv);
    free(vv);
}

Test(nn_shape, embedding_bag_bad_indices_and_offsets_found_at_sync)
{
    clt_device *dev = get_device("cpu");
    double w[6] = {1, 2, 3, 4, 5, 6};
    float got[4];
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){3, 2}, w), *y = NULL;
    CHECK(clt_set_requires_grad(tw, 1));
    int64_t idx[4] = {0, 7, 2, 1}, off[2] = {0, 2}, bad[2] = {1, 3};
    clt_tensor *ti = ints_of(dev, CLT_INT64, 1, (int64_t[]){4}, idx);
    clt_tensor *to = ints_of(dev, CLT_INT64, 1, (int64_t[]){2}, off);
    clt_tensor *tb = ints_of(dev, CLT_INT64, 1, (int64_t[]){2}, bad);
    CHECK(clt_embedding_bag(tw, ti, to, CLT_BAG_SUM, NULL, NULL, 0, &y));
    assert_error(clt_tensor_read(y, got, sizeof got), CLT_ERR_INDEX_OUT_OF_RANGE,
                 "clt_embedding_bag: index 7 is out of bounds for dimension 0 with size 3");
    /* the bad entry is left out of its bag, and of the gradient, which
     * reports nothing more */
    CHECK(clt_tensor_read(y, got, sizeof got));
    cr_assert(got[0] == 1 && got[1] == 2 && got[2] == 8 && got[3] == 10);
    clt_tensor *l = NULL, *gw = NULL;
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(tw, &gw));
    double want_gw[6] = {1, 1, 1, 1, 1, 1};
    assert_tensor_close(gw, want_gw, 6, 0, 0, "the weight's gradient");
    clt_tensor_free(l);
    clt_tensor_free(gw);
    clt_tensor_free(y);
    CHECK(clt_embedding_bag(tw, ti, tb, CLT_BAG_SUM, NULL, NULL, 0, &y));
    assert_error(clt_device_synchronize(dev), CLT_ERR_INDEX_OUT_OF_RANGE,
                 "offsets must start at 0, never decrease and not pass the input's 4 entries, "
                 "but found offset 1");
    clt_tensor_free(y);
    clt_tensor_free(tw);
    clt_tensor_free(ti);
    clt_tensor_free(to);
    clt_tensor_free(tb);
}

Test(nn_shape, embedding_bag_errors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *w = iota(dev, 2, (int64_t[]){6, 3}), *y = (clt_tensor *)0x1;
    clt_tensor *i = ints_of(dev, CLT_INT64, 1, (int64_t[]){10}, bag_idx);
    clt_tensor *i2 = ints_of(dev, CLT_INT64, 2, (int64_t[]){2, 5}, bag_idx);
    clt_tensor *o = ints_of(dev, CLT_INT64, 1, (int64_t[]){2}, (int64_t[]){0, 4});
    clt_tensor *p9 = iota(dev, 1, (int64_t[]){9}), *p10 = iota(dev, 1, (int64_t[]){10});
    clt_tensor *fi = iota(dev, 1, (int64_t[]){10}), *e = NULL;
    CHECK(clt_empty(dev, CLT_INT64, 1, (int64_t[]){0}, &e));
    int64_t pad6 = 6, padm7 = -7;
    assert_error(clt_embedding_bag(w, i, o, CLT_BAG_MEAN, p10, NULL, 0, &y),
                 CLT_ERR_INVALID_ARGUMENT,
                 "per_sample_weights is only supported for mode='sum' (got mode='mean')");
    cr_assert_null(y);
    assert_error(clt_embedding_bag(w, i, o, CLT_BAG_SUM, p9, NULL, 0, &y),
                 CLT_ERR_SHAPE_MISMATCH,
                 "If per_sample_weights ([9]) is not None, then it must have the same shape as "
                 "the input ([10])");
    assert_error(clt_embedding_bag(w, i, o, CLT_BAG_SUM, NULL, &pad6, 0, &y),
                 CLT_ERR_INVALID_ARGUMENT,
                 "padding_idx must be within the number of embeddings, -6 through 5, but got 6");
    assert_error(clt_embedding_bag(w, i, o, CLT_BAG_SUM, NULL, &padm7, 0, &y),
                 CLT_ERR_INVALID_ARGUMENT, "but got -7");
    assert_error(clt_embedding_bag(w, i2, o, CLT_BAG_SUM, NULL, NULL, 0, &y),
                 CLT_ERR_INVALID_ARGUMENT, "if input is 2D, then offsets has to be None");
    assert_error(clt_embedding_bag(w, i, NULL, CLT_BAG_SUM, NULL, NULL, 0, &y),
                 CLT_ERR_NULL_ARGUMENT, "offsets has to be a 1D Tensor but got None");
    assert_error(clt_embedding_bag(w, fi, o, CLT_BAG_SUM, NULL, NULL, 0, &y),
                 CLT_ERR_DTYPE_MISMATCH,
                 "Expected tensor for argument #1 'indices' to have one of the following scalar "
                 "types: Long, Int; but got float32 instead");
    assert_error(clt_embedding_bag(w, i, e, CLT_BAG_SUM, NULL, NULL, 1, &y),
                 CLT_ERR_SHAPE_MISMATCH, "number of offsets should be at least 1");
    assert_error(clt_embedding_bag(w, i, o, (clt_bag_mode)3, NULL, NULL, 0, &y),
                 CLT_ERR_INVALID_ARGUMENT, "mode has to be one of sum, mean or max");
    assert_error(clt_embedding_bag(i2, i, o, CLT_BAG_SUM, NULL, NULL, 0, &y),
                 CLT_ERR_DTYPE_UNSUPPORTED, NULL);
    assert_error(clt_embedding_bag(p10, i, o, CLT_BAG_SUM, NULL, NULL, 0, &y),
                 CLT_ERR_SHAPE_MISMATCH, "'weight' must be 2-D");
    names_only("clt_embedding_bag");
    cr_assert_null(y);
    clt_tensor *ts[] = {w, i, i2, o, p9, p10, fi, e};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
        clt_tensor_free(ts[k]);
}

/* ---- bilinear and pad_sequence ---------------------------------------------------------- */

static clt_status bilinear_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return clt_bilinear(in[0], in[1], in[2], ctx ? in[3] : NULL, out);
}

Test(nn_shape, bilinear_against_host_loop_and_gradients)
{
    clt_device *dev = get_device("cpu");
    int64_t B = 4, I1 = 3, I2 = 5, O = 2;
    double *a = spread_doubles((size_t)(B * I1), 43), *b = spread_doubles((size_t)(B * I2), 47);
    double *w = spread_doubles((size_t)(O * I1 * I2), 53), *bias = spread_doubles((size_t)O, 59);
    double want[8];
    for (int64_t n = 0; n < B; n++)
        for (int64_t o = 0; o < O; o++) {
            double acc = bias[o];
            for (int64_t i = 0; i < I1; i++)
                for (int64_t j = 0; j < I2; j++)
                    acc += a[n * I1 + i] * w[(o * I1 + i) * I2 + j] * b[n * I2 + j];
            want[n * O + o] = acc;
        }
    for (int dt = 0; dt < 2; dt++) {
        clt_dtype dtype = dt ? CLT_FLOAT64 : CLT_FLOAT32;
        /* [2, 2, in] leading dims */
        clt_tensor *ta = tensor_of(dev, dtype, 3, (int64_t[]){2, 2, I1}, a);
        clt_tensor *tb = tensor_of(dev, dtype, 3, (int64_t[]){2, 2, I2}, b);
        clt_tensor *tw = tensor_of(dev, dtype, 3, (int64_t[]){O, I1, I2}, w);
        clt_tensor *tbias = tensor_of(dev, dtype, 1, &O, bias), *y = NULL;
        CHECK(clt_bilinear(ta, tb, tw, tbias, &y));
        assert_shape(y, 3, (int64_t[]){2, 2, O});
        assert_tensor_close(y, want, 8, dt ? 1e-13 : 1e-5, 1e-6, "bilinear");
        clt_tensor_free(y);
        clt_tensor *ins[] = {ta, tb, tw, tbias};
        for (int k = 0; k < 4; k++)
            clt_tensor_free(ins[k]);
    }
    gc_in ins[4] = {{2, {B, I1}, a, 1}, {2, {B, I2}, b, 1}, {3, {O, I1, I2}, w, 1},
                    {1, {O}, bias, 1}};
    gradcheck(dev, bilinear_f, ins, 4, ins);
    gradcheck(dev, bilinear_f, NULL, 3, ins);
    /* errors, in torch's words */
    clt_tensor *x1 = iota(dev, 2, (int64_t[]){4, 3}), *x2 = iota(dev, 2, (int64_t[]){4, 4});
    clt_tensor *tw = iota(dev, 3, (int64_t[]){2, 3, 5}), *y = (clt_tensor *)0x1, *d = NULL;
    assert_error(clt_bilinear(x1, x2, tw, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "bilinear(): input2 size does not match weight size: got 4 but expected 5");
    assert_error(clt_bilinear(x2, x1, tw, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "bilinear(): input1 size does not match weight size: got 4 but expected 3");
    assert_error(clt_bilinear(x1, tw, tw, NULL, &y), CLT_ERR_SHAPE_MISMATCH,
                 "bilinear(): input dimensions do not match: got 2 and 3");
    assert_error(clt_bilinear(x1, x1, tw, x1, &y), CLT_ERR_SHAPE_MISMATCH, NULL);
    CHECK(clt_to_dtype(x1, CLT_FLOAT64, &d));
    assert_error(clt_bilinear(d, x2, tw, NULL, &y), CLT_ERR_DTYPE_MISMATCH, NULL);
    names_only("clt_bilinear");
    cr_assert_null(y);
    clt_tensor_free(x1);
    clt_tensor_free(x2);
    clt_tensor_free(tw);
    clt_tensor_free(d);
    free(a);
    free(b);
    free(w);
    free(bias);
}

static clt_status pad_sequence_f(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const int *bf = ctx;
    return clt_pad_sequence((const clt_tensor *const *)in, 3, *bf, -1.5, out);
}

Test(nn_shape, pad_sequence_against_host_loop_and_gradients)
{
    clt_device *dev = get_device("cpu");
    const int64_t lens[3] = {2, 4, 0}, D = 3, T = 4;
    double *v[3], want[3 * 4 * 3];
    clt_tensor *t[3];
    for (int k = 0; k < 3; k++) {
        v[k] = spread_doubles((size_t)(lens[k] * D), 61 + (unsigned)k);
        t[k] = tensor_of(dev, k == 1 ? CLT_FLOAT64 : CLT_FLOAT32, 2, (int64_t[]){lens[k], D},
                         v[k]);
    }
    for (int bf = 0; bf < 2; bf++) {
        for (int k = 0; k < 3; k++)
            for (int64_t s = 0; s < T; s++)
                for (int64_t d = 0; d < D; d++) {
                    int64_t at = bf ? (k * T + s) * D + d : (s * 3 + k) * D + d;
                    want[at] = s < lens[k] ? (double)(float)v[k][s * D + d] : -1.5;
                }
        clt_tensor *y = NULL;
        CHECK(clt_pad_sequence((const clt_tensor *const *)t, 3, bf, -1.5, &y));
        assert_shape(y, 3, bf ? (int64_t[]){3, T, D} : (int64_t[]){T, 3, D});
        cr_assert_eq(clt_tensor_dtype(y), CLT_FLOAT32, "the first sequence's dtype");
        assert_tensor_close(y, want, 36, 0, 0, "pad_sequence");
        clt_tensor_free(y);
    }
    for (int bf = 0; bf < 2; bf++) {
        gc_in ins[3] = {{2, {2, D}, v[0], 1}, {2, {4, D}, v[1], 1}, {2, {0, D}, v[2], 1}};
        gradcheck(dev, pad_sequence_f, &bf, 3, ins);
    }
    /* the node and errors */
    clt_tensor *g = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){2, D}, v[0]), *y = NULL;
    CHECK(clt_set_requires_grad(g, 1));
    const clt_tensor *two[2] = {g, t[1]};
    CHECK(clt_pad_sequence(two, 2, 0, 0, &y));
    cr_assert_str_eq(clt_grad_fn_name(y), "torch::autograd::CopySlices");
    clt_tensor_free(y);
    y = (clt_tensor *)0x1;
    clt_tensor *bad = iota(dev, 2, (int64_t[]){2, 4}), *s0 = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 0, NULL, 1.0, &s0));
    const clt_tensor *mixed[2] = {g, bad}, *scalar[1] = {s0}, *nul[2] = {g, NULL};
    assert_error(clt_pad_sequence(mixed, 2, 0, 0, &y), CLT_ERR_SHAPE_MISMATCH,
                 "sequence 1 is [2, 4] and sequence 0 [2, 3]");
    assert_error(clt_pad_sequence(mixed, 0, 0, 0, &y), CLT_ERR_INVALID_ARGUMENT,
                 "received an empty list of sequences");
    assert_error(clt_pad_sequence(scalar, 1, 0, 0, &y), CLT_ERR_DIM_OUT_OF_RANGE, NULL);
    assert_error(clt_pad_sequence(nul, 2, 0, 0, &y), CLT_ERR_NULL_ARGUMENT, "sequence 1");
    names_only("clt_pad_sequence");
    cr_assert_null(y);
    clt_tensor_free(g);
    clt_tensor_free(bad);
    clt_tensor_free(s0);
    for (int k = 0; k < 3; k++) {
        clt_tensor_free(t[k]);
        free(v[k]);
    }
}

/* ---- layers ------------------------------------------------------------------------------ */

/* y (from a layer) equals z (from the op), bit for bit. */
static void assert_same(const clt_tensor *y, const clt_tensor *z)
{
    cr_assert_eq(clt_tensor_numel(y), clt_tensor_numel(z));
    double *a = read_as_f64(y), *b = read_as_f64(z);
    cr_assert(memcmp(a, b, (size_t)clt_tensor_numel(y) * sizeof *a) == 0);
    free(a);
    free(b);
}

Test(nn_shape, rearranging_layers)
{
    clt_device *dev = get_device("cpu");
    clt_module *m[5] = {NULL}, *bad = (clt_module *)0x1;
    const int64_t k[2] = {2, 3}, size[2] = {5, 6};
    clt_fold_opts o = {{1, 2}, {1, 0}, {2, 1}};
    CHECK(clt_pixel_shuffle_layer(2, &m[0]));
    CHECK(clt_pixel_unshuffle_layer(2, &m[1]));
    CHECK(clt_channel_shuffle_layer(4, &m[2]));
    CHECK(clt_unfold_layer(k, &o, &m[3]));
    CHECK(clt_fold_layer(size, k, &o, &m[4]));
    const char *names[] = {"PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Unfold", "Fold"};
    double *v = spread_doubles(2 * 8 * 5 * 6, 67); /* x uses the first 2 * 8 * 4 * 6 */
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 8, 4, 6}, v);
    for (int j = 0; j < 5; j++) {
        cr_assert_str_eq(clt_module_name(m[j]), names[j]);
        cr_assert_eq(clt_module_num_parameters(m[j]), 0);
    }
    clt_tensor *y = NULL, *z = NULL, *f = NULL;
    CHECK(clt_module_forward(m[0], x, &y));
    CHECK(clt_pixel_shuffle(x, 2, &z));
    assert_same(y, z);
    clt_tensor_free(y);
    clt_tensor_free(z);
    CHECK(clt_module_forward(m[1], x, &y));
    CHECK(clt_pixel_unshuffle(x, 2, &z));
    assert_same(y, z);
    clt_tensor_free(y);
    clt_tensor_free(z);
    CHECK(clt_module_forward(m[2], x, &y));
    CHECK(clt_channel_shuffle(x, 4, &z));
    assert_same(y, z);
    clt_tensor_free(y);
    clt_tensor_free(z);
    /* Unfold, then Fold with the same settings: each pixel times the
     * blocks that cover it, as unfold and fold themselves give */
    clt_tensor *x5 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 8, 5, 6}, v);
    CHECK(clt_module_forward(m[3], x5, &y));
    CHECK(clt_unfold(x5, k, &o, &z));
    assert_same(y, z);
    CHECK(clt_module_forward(m[4], y, &f));
    clt_tensor *f2 = NULL;
    CHECK(clt_fold(z, size, k, &o, &f2));
    assert_same(f, f2);
    assert_shape(f, 4, (int64_t[]){2, 8, 5, 6});
    /* a clone keeps the settings */
    clt_module *c = NULL;
    clt_tensor *fc = NULL;
    CHECK(clt_module_clone(m[4], NULL, &c));
    CHECK(clt_module_forward(c, y, &fc));
    assert_same(fc, f2);
    clt_module_free(c);
    clt_tensor *ts[] = {y, z, f, f2, fc, x5};
    for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++)
        clt_tensor_free(ts[j]);
    /* settings refused at construction */
    assert_error(clt_pixel_shuffle_layer(0, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "upscale_factor must be positive, but got 0");
    cr_assert_null(bad);
    assert_error(clt_channel_shuffle_layer(-2, &bad), CLT_ERR_INVALID_ARGUMENT, "groups");
    o.stride[0] = 0;
    assert_error(clt_unfold_layer(k, &o, &bad), CLT_ERR_INVALID_ARGUMENT, "stride=(0, 1)");
    assert_error(clt_fold_layer((int64_t[]){-1, 2}, k, NULL, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "output_size");
    for (int j = 0; j < 5; j++)
        clt_module_free(m[j]);
    clt_tensor_free(x);
    free(v);
}

Test(nn_shape, bilinear_layer)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(5, &gen));
    clt_module *m = NULL, *m2 = NULL, *bad = (clt_module *)0x1;
    CHECK(clt_bilinear_layer(dev, 4, 6, 3, 1, gen, &m));
    cr_assert_str_eq(clt_module_name(m), "Bilinear");
    clt_named_tensor *p;
    size_t np;
    CHECK(clt_module_named_parameters(m, &p, &np));
    cr_assert_eq(np, 2);
    cr_assert_str_eq(p[0].name, "weight");
    cr_assert_str_eq(p[1].name, "bias");
    assert_shape(p[0].tensor, 3, (int64_t[]){3, 4, 6});
    assert_shape(p[1].tensor, 1, (int64_t[]){3});
    assert_uniform_within(p[0].tensor, 0.5, "weight"); /* 1 / sqrt(in1_features) */
    assert_uniform_within(p[1].tensor, 0.5, "bias");
    double *a = spread_doubles(20, 71), *b = spread_doubles(30, 73);
    clt_tensor *x1 = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){5, 4}, a);
    clt_tensor *x2 = tensor_of(dev, CLT_FLOAT32, 2, (int64_t[]){5, 6}, b), *y = NULL, *z = NULL;
    CHECK(clt_bilinear_forward(m, x1, x2, &y));
    CHECK(clt_bilinear(x1, x2, p[0].tensor, p[1].tensor, &z));
    assert_shape(y, 2, (int64_t[]){5, 3});
    assert_same(y, z);
    clt_tensor_free(y);
    y = (clt_tensor *)0x1;
    assert_error(clt_module_forward(m, x1, &y), CLT_ERR_INVALID_ARGUMENT,
                 "forward takes two inputs: call clt_bilinear_forward");
    cr_assert_null(y);
    /* float64 inputs into the float32 layer are refused, as torch */
    clt_tensor *d = NULL;
    CHECK(clt_to_dtype(x1, CLT_FLOAT64, &d));
    assert_error(clt_bilinear_forward(m, d, x2, &y), CLT_ERR_DTYPE_MISMATCH, "float64");
    clt_module *lin = NULL;
    CHECK(clt_linear(dev, 2, 2, 1, gen, &lin));
    assert_error(clt_bilinear_forward(lin, x1, x2, &y), CLT_ERR_INVALID_ARGUMENT,
                 "the module is a Linear, not a Bilinear");
    /* without bias; save and load */
    CHECK(clt_bilinear_layer(dev, 4, 6, 3, 1, gen, &m2));
    assert_state_roundtrip(m, m2);
    clt_module_free(m2);
    CHECK(clt_bilinear_layer(dev, 4, 6, 3, 0, gen, &m2));
    cr_assert_eq(clt_module_num_parameters(m2), 72);
    assert_error(clt_bilinear_layer(dev, 0, 6, 3, 1, gen, &bad), CLT_ERR_INVALID_ARGUMENT,
                 "must be positive");
    cr_assert_null(bad);
    clt_free(p);
    clt_module_free(m);
    clt_module_free(m2);
    clt_module_free(lin);
    clt_tensor_free(x1);
    clt_tensor_free(x2);
    clt_tensor_free(z);
    clt_tensor_free(d);
    clt_generator_free(gen);
    free(a);
    free(b);
}

Test(nn_shape, embedding_bag_layer)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(9, &gen));
    clt_module *m = NULL, *m2 = NULL, *bad = (clt_module *)0x1;
    int64_t pad = -2;
    CHECK(clt_embedding_bag_layer(dev, 6, 3, CLT_BAG_SUM, &pad, 0, gen, &m));
    cr_assert_str_eq(clt_module_name(m), "EmbeddingBag");
    clt_tensor *w = clt_module_param(m, "weight");
    cr_assert_not_null(w);
    assert_shape(w, 2, (int64_t[]){6, 3});
    double *wv = read_as_f64(w);
    /* normal(0, 1), with the padding row (6 - 2 = 4) zeros */
    for (int j = 0; j < 18; j++)
        cr_assert((j / 3 == 4) == (wv[j] == 0), "weight %d = %g", j, wv[j]);
    clt_tensor *i2 = ints_of(dev, CLT_INT64, 2, (int64_t[]){2, 5}, bag_idx), *y = NULL, *z = NULL;
    CHECK(clt_module_forward(m, i2, &y));
    double want[6];
    host_bag(wv, 3, bag_idx, 10, (int64_t[]){0, 5}, 2, 0, NULL, 4, 0, want);
    assert_tensor_close(y, want, 6, 1e-6, 1e-6, "EmbeddingBag");
    clt_tensor_free(y);
    /* with offsets and per-sample weights */
    clt_tensor *i = ints_of(dev, CLT_INT64, 1, (int64_t[]){10}, bag_idx);
    clt_tensor *o = ints_of(dev, CLT_INT64, 1, (int64_t[]){3}, (int64_t[]){0, 2, 9});
    double *pv = spread_doubles(10, 79);
    clt_tensor *ps = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){10}, pv);
    CHECK(clt_embedding_bag_forward(m, i, o, ps, &y));
    CHECK(clt_embedding_bag(w, i, o, CLT_BAG_SUM, ps, &pad, 0, &z));
    assert_same(y, z);
    /* a clone keeps mode and padding; save and load */
    clt_module *c = NULL;
    clt_tensor *yc = NULL;
    CHECK(clt_module_clone(m, NULL, &c));
    CHECK(clt_embedding_bag_forward(c, i, o, ps, &yc));
    assert_same(yc, z);
    CHECK(clt_embedding_bag_layer(dev, 6, 3, CLT_BAG_SUM, NULL, 0, gen, &m2));
    assert_state_roundtrip(m, m2);
    clt_tensor_free(y);
    y = (clt_tensor *)0x1;
    assert_error(clt_embedding_bag_forward(c, i, NULL, NULL, &y), CLT_ERR_NULL_ARGUMENT,
                 "clt_embedding_bag_forward: offsets has to be a 1D Tensor but got None");
    cr_assert_null(y);
    assert_error(clt_embedding_bag_forward(NULL, i, o, NULL, &y), CLT_ERR_NULL_ARGUMENT, NULL);
    pad = 6;
    assert_error(clt_embedding_bag_layer(dev, 6, 3, CLT_BAG_SUM, &pad, 0, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "Padding_idx must be within num_embeddings");
    assert_error(clt_embedding_bag_layer(dev, 6, 3, (clt_bag_mode)5, NULL, 0, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT, "mode has to be one of sum, mean or max");
    cr_assert_null(bad);
    clt_module_free(m);
    clt_module_free(m2);
    clt_module_free(c);
    clt_tensor *ts[] = {i2, z, i, o, ps, yc};
    for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++)
        clt_tensor_free(ts[j]);
    clt_generator_free(gen);
    free(wv);
    free(pv);
}
