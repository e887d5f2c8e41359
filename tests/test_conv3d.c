/* test_conv3d.c: conv3d, conv_transpose3d and conv_transpose1d against
 * direct host loops in double (strides, padding, dilation, groups,
 * output_padding, bias, unbatched, non-contiguous input, float32 and
 * float64), conv3d of depth 1 against conv2d bit for bit, the batch in
 * chunks, gradients against finite differences (gradcheck.h), errors with
 * their messages, and the layers (Conv3d, ConvTranspose1d,
 * ConvTranspose3d): PyTorch's layout and initialisation bounds, forward,
 * gradients, save and load. */
#include <stdio.h>
#include <unistd.h>

#include "gradcheck.h"

/* src/ops/conv.h: the most bytes of patches unfolded at once */
extern size_t clt__conv2d_cols_limit;

/* A 3-D case: input [N, C, D, H, W] (N 0: unbatched [C, D, H, W]), O
 * output channels (conv3d) or Cout (transposed), kernel k. */
typedef struct c3case {
    int64_t N, C, D, H, W, O, k[3];
    int64_t stride[3], padding[3], dilation[3], output_padding[3], groups;
    int bias;
} c3case;

static int64_t batch(const c3case *c)
{
    return c->N ? c->N : 1;
}

/* conv3d's output size along dimension d */
static int64_t conv_out(const c3case *c, int d)
{
    const int64_t in[3] = {c->D, c->H, c->W};
    return (in[d] + 2 * c->padding[d] - c->dilation[d] * (c->k[d] - 1) - 1) / c->stride[d] + 1;
}

/* conv_transpose3d's output size along dimension d */
static int64_t tconv_out(const c3case *c, int d)
{
    const int64_t in[3] = {c->D, c->H, c->W};
    return (in[d] - 1) * c->stride[d] - 2 * c->padding[d] + c->dilation[d] * (c->k[d] - 1) +
           c->output_padding[d] + 1;
}

/* y = conv3d(x, w, b) by its definition, every sum in double. */
static void ref_conv3d(const double *x, const double *w, const double *b, const c3case *c,
                       double *y)
{
    int64_t G = c->groups, Cg = c->C / G, Og = c->O / G;
    int64_t Do = conv_out(c, 0), Ho = conv_out(c, 1), Wo = conv_out(c, 2);
    const int64_t *k = c->k, *s = c->stride, *p = c->padding, *dl = c->dilation;
    for (int64_t n = 0; n < batch(c); n++)
        for (int64_t o = 0; o < c->O; o++)
            for (int64_t z = 0; z < Do; z++)
                for (int64_t h = 0; h < Ho; h++)
                    for (int64_t v = 0; v < Wo; v++) {
                        double acc = b ? b[o] : 0.0;
                        for (int64_t ci = 0; ci < Cg; ci++)
                            for (int64_t a = 0; a < k[0]; a++)
                                for (int64_t e = 0; e < k[1]; e++)
                                    for (int64_t f = 0; f < k[2]; f++) {
                                        int64_t iz = z * s[0] - p[0] + a * dl[0];
                                        int64_t ih = h * s[1] - p[1] + e * dl[1];
                                        int64_t iw = v * s[2] - p[2] + f * dl[2];
                                        if (iz < 0 || iz >= c->D || ih < 0 || ih >= c->H ||
                                            iw < 0 || iw >= c->W)
                                            continue;
                                        int64_t cx = o / Og * Cg + ci;
                                        acc += x[(((n * c->C + cx) * c->D + iz) * c->H + ih) *
                                                     c->W +
                                                 iw] *
                                               w[(((o * Cg + ci) * k[0] + a) * k[1] + e) * k[2] +
                                                 f];
                                    }
                        y[(((n * c->O + o) * Do + z) * Ho + h) * Wo + v] = acc;
                    }
}

/* y = conv_transpose3d(x, w, b) as the scatter it is: every input element
 * times every tap added where the tap lands. */
static void ref_tconv3d(const double *x, const double *w, const double *b, const c3case *c,
                        double *y)
{
    int64_t G = c->groups, Cig = c->C / G, Cog = c->O / G;
    int64_t Do = tconv_out(c, 0), Ho = tconv_out(c, 1), Wo = tconv_out(c, 2);
    const int64_t *k = c->k, *s = c->stride, *p = c->padding, *dl = c->dilation;
    size_t ny = (size_t)(batch(c) * c->O * Do * Ho * Wo);
    for (size_t i = 0; i < ny; i++)
        y[i] = b ? b[(i / (size_t)(Do * Ho * Wo)) % (size_t)c->O] : 0.0;
    for (int64_t n = 0; n < batch(c); n++)
        for (int64_t ci = 0; ci < c->C; ci++)
            for (int64_t iz = 0; iz < c->D; iz++)
                for (int64_t ih = 0; ih < c->H; ih++)
                    for (int64_t iw = 0; iw < c->W; iw++) {
                        double xv = x[(((n * c->C + ci) * c->D + iz) * c->H + ih) * c->W + iw];
                        for (int64_t col = 0; col < Cog; col++)
                            for (int64_t a = 0; a < k[0]; a++)
                                for (int64_t e = 0; e < k[1]; e++)
                                    for (int64_t f = 0; f < k[2]; f++) {
                                        int64_t z = iz * s[0] - p[0] + a * dl[0];
                                        int64_t h = ih * s[1] - p[1] + e * dl[1];
                                        int64_t v = iw * s[2] - p[2] + f * dl[2];
                                        if (z < 0 || z >= Do || h < 0 || h >= Ho || v < 0 ||
                                            v >= Wo)
                                            continue;
                                        int64_t co = ci / Cig * Cog + col;
                                        y[(((n * c->O + co) * Do + z) * Ho + h) * Wo + v] +=
                                            xv * w[(((ci * Cog + col) * k[0] + a) * k[1] + e) *
                                                       k[2] +
                                                   f];
                                    }
                    }
}

static clt_conv3d_opts opts3(const c3case *c)
{
    clt_conv3d_opts o = CLT_CONV3D_DEFAULTS;
    for (int d = 0; d < 3; d++) {
        o.stride[d] = c->stride[d];
        o.padding[d] = c->padding[d];
        o.dilation[d] = c->dilation[d];
    }
    o.groups = c->groups;
    return o;
}

static clt_conv_transpose3d_opts topts3(const c3case *c)
{
    clt_conv_transpose3d_opts o = CLT_CONV_TRANSPOSE3D_DEFAULTS;
    for (int d = 0; d < 3; d++) {
        o.stride[d] = c->stride[d];
        o.padding[d] = c->padding[d];
        o.dilation[d] = c->dilation[d];
        o.output_padding[d] = c->output_padding[d];
    }
    o.groups = c->groups;
    return o;
}

/* kind 0: conv3d, 1: conv_transpose3d; checks the result against the
 * reference, input given transposed (non-contiguous) when strided is set. */
static void check_case(clt_device *dev, clt_dtype dt, const c3case *c, int kind, int strided,
                       double tol)
{
    int64_t G = c->groups;
    int64_t xs[5] = {c->N, c->C, c->D, c->H, c->W};
    int64_t ws[5] = {kind ? c->C : c->O, kind ? c->O / G : c->C / G, c->k[0], c->k[1], c->k[2]};
    int nd = c->N ? 5 : 4;
    const int64_t *xsh = c->N ? xs : xs + 1;
    size_t nx = (size_t)host_numel(nd, xsh), nw = (size_t)host_numel(5, ws);
    double *x = spread_doubles(nx, 5), *w = spread_doubles(nw, 6), *b = spread_doubles(c->O, 7);
    int64_t out[3];
    for (int d = 0; d < 3; d++)
        out[d] = kind ? tconv_out(c, d) : conv_out(c, d);
    int64_t ys[5] = {c->N, c->O, out[0], out[1], out[2]};
    size_t ny = (size_t)(batch(c) * c->O * out[0] * out[1] * out[2]);
    double *want = malloc(ny * sizeof *want);
    if (kind)
        ref_tconv3d(x, w, c->bias ? b : NULL, c, want);
    else
        ref_conv3d(x, w, c->bias ? b : NULL, c, want);
    clt_tensor *tx = tensor_of(dev, dt, nd, xsh, x), *tw = tensor_of(dev, dt, 5, ws, w);
    clt_tensor *tb = c->bias ? tensor_of(dev, dt, 1, &c->O, b) : NULL, *y = NULL, *xin = tx;
    clt_tensor *xt = NULL, *xtc = NULL;
    if (strided) {
        /* the same values through a transposed copy transposed back */
        CHECK(clt_transpose(tx, nd - 1, nd - 2, &xt));
        CHECK(clt_contiguous(xt, &xtc));
        clt_tensor_free(xt);
        CHECK(clt_transpose(xtc, nd - 1, nd - 2, &xt));
        xin = xt;
    }
    if (kind) {
        clt_conv_transpose3d_opts o = topts3(c);
        CHECK(clt_conv_transpose3d(xin, tw, tb, &o, &y));
    } else {
        clt_conv3d_opts o = opts3(c);
        CHECK(clt_conv3d(xin, tw, tb, &o, &y));
    }
    assert_shape(y, nd, c->N ? ys : ys + 1);
    cr_assert_eq(clt_tensor_dtype(y), dt);
    assert_tensor_close(y, want, ny, tol, tol, kind ? "conv_transpose3d" : "conv3d");
    free(x);
    free(w);
    free(b);
    free(want);
    clt_tensor *ts[] = {tx, tw, tb, y, xt, xtc};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* N, C, D, H, W, O, k, stride, padding, dilation, output_padding, groups,
 * bias */
static const c3case C3[] = {
    {2, 3, 4, 5, 6, 4, {2, 3, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1, 1},
    {1, 4, 5, 4, 7, 6, {3, 2, 3}, {2, 1, 3}, {1, 0, 2}, {1, 2, 1}, {0, 0, 0}, 2, 1},
    {0, 2, 3, 6, 5, 3, {2, 2, 2}, {1, 2, 1}, {1, 1, 0}, {2, 1, 2}, {0, 0, 0}, 1, 0},
    {3, 6, 2, 3, 3, 6, {1, 3, 1}, {1, 1, 2}, {0, 1, 0}, {1, 1, 1}, {0, 0, 0}, 3, 1},
    {1, 2, 7, 1, 4, 2, {3, 1, 2}, {3, 1, 1}, {2, 0, 1}, {2, 1, 3}, {0, 0, 0}, 2, 0},
};

Test(conv3d, conv3d_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof C3 / sizeof C3[0]; i++) {
        check_case(dev, CLT_FLOAT64, &C3[i], 0, 0, 1e-12);
        check_case(dev, CLT_FLOAT32, &C3[i], 0, 0, 1e-5);
        check_case(dev, CLT_FLOAT64, &C3[i], 0, 1, 1e-12);
    }
}

/* conv_transpose's cases: output_padding below the stride or the
 * dilation */
static const c3case T3[] = {
    {2, 3, 3, 4, 2, 4, {2, 3, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1, 1},
    {1, 4, 2, 3, 4, 6, {3, 2, 3}, {2, 1, 3}, {1, 0, 2}, {1, 2, 1}, {1, 1, 2}, 2, 1},
    {0, 2, 3, 2, 3, 3, {2, 2, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, 2}, {1, 0, 1}, 1, 0},
    {3, 6, 2, 3, 3, 3, {1, 3, 1}, {1, 3, 2}, {0, 1, 0}, {1, 1, 1}, {0, 2, 1}, 3, 1},
};

Test(conv3d, conv_transpose3d_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    for (size_t i = 0; i < sizeof T3 / sizeof T3[0]; i++) {
        check_case(dev, CLT_FLOAT64, &T3[i], 1, 0, 1e-12);
        check_case(dev, CLT_FLOAT32, &T3[i], 1, 0, 1e-5);
        check_case(dev, CLT_FLOAT64, &T3[i], 1, 1, 1e-12);
    }
}

/* conv_transpose1d against the scatter with depth and height 1; N 0:
 * unbatched. */
Test(conv3d, conv_transpose1d_against_host_loop)
{
    clt_device *dev = get_device("cpu");
    /* N, Cin, L, Cout, k, stride, padding, output_padding, groups, dilation, bias */
    static const struct {
        int64_t N, C, L, O, k;
        clt_conv_transpose1d_opts o;
        int bias;
    } cs[] = {{2, 4, 7, 6, 3, {1, 0, 0, 2, 1}, 1},
              {0, 3, 5, 2, 4, {3, 2, 2, 1, 1}, 1},
              {1, 2, 6, 4, 2, {2, 1, 1, 2, 3}, 0}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        c3case c = {cs[i].N, cs[i].C, 1, 1, cs[i].L, cs[i].O, {1, 1, cs[i].k},
                    {1, 1, cs[i].o.stride},
                    {0, 0, cs[i].o.padding}, {1, 1, cs[i].o.dilation},
                    {0, 0, cs[i].o.output_padding}, cs[i].o.groups, cs[i].bias};
        int64_t Lo = tconv_out(&c, 2), Nb = batch(&c);
        int64_t xs[3] = {c.N, c.C, c.W}, ws[3] = {c.C, c.O / c.groups, cs[i].k};
        int nd = c.N ? 3 : 2;
        const int64_t *xsh = c.N ? xs : xs + 1;
        double *x = spread_doubles((size_t)(Nb * c.C * c.W), 11 + (unsigned)i);
        double *w = spread_doubles((size_t)host_numel(3, ws), 12);
        double *b = spread_doubles((size_t)c.O, 13);
        double *want = malloc((size_t)(Nb * c.O * Lo) * sizeof *want);
        ref_tconv3d(x, w, c.bias ? b : NULL, &c, want);
        for (int dt = 0; dt < 2; dt++) {
            clt_dtype t = dt ? CLT_FLOAT32 : CLT_FLOAT64;
            clt_tensor *tx = tensor_of(dev, t, nd, xsh, x), *tw = tensor_of(dev, t, 3, ws, w);
            clt_tensor *tb = c.bias ? tensor_of(dev, t, 1, &c.O, b) : NULL, *y = NULL;
            CHECK(clt_conv_transpose1d(tx, tw, tb, &cs[i].o, &y));
            int64_t ys[3] = {c.N, c.O, Lo};
            assert_shape(y, nd, c.N ? ys : ys + 1);
            assert_tensor_close(y, want, (size_t)(Nb * c.O * Lo), dt ? 1e-5 : 1e-12,
                                dt ? 1e-5 : 1e-12, "conv_transpose1d");
            clt_tensor_free(tx);
            clt_tensor_free(tw);
            clt_tensor_free(tb);
            clt_tensor_free(y);
        }
        free(x);
        free(w);
        free(b);
        free(want);
    }
    /* NULL options are PyTorch's defaults */
    double xv[3] = {1, 2, 3}, wv[2] = {1, 10};
    clt_tensor *tx = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){1, 1, 3}, xv);
    clt_tensor *tw = tensor_of(dev, CLT_FLOAT64, 3, (int64_t[]){1, 1, 2}, wv), *y;
    CHECK(clt_conv_transpose1d(tx, tw, NULL, NULL, &y));
    double want[4] = {1, 12, 23, 30};
    assert_tensor_close(y, want, 4, 0, 0, "by hand");
    clt_tensor_free(tx);
    clt_tensor_free(tw);
    clt_tensor_free(y);
}

/* A depth of 1 with a kernel of depth 1 is conv2d, bit for bit (the same
 * patches, the same products), and conv_transpose3d likewise
 * conv_transpose2d. */
Test(conv3d, depth_one_is_the_2d_op)
{
    clt_device *dev = get_device("cpu");
    double *x = spread_doubles(2 * 4 * 7 * 6, 41), *w = spread_doubles(6 * 2 * 3 * 2, 42);
    double *b = spread_doubles(6, 43);
    clt_tensor *x5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){2, 4, 1, 7, 6}, x);
    clt_tensor *x4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 4, 7, 6}, x);
    clt_tensor *w5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){6, 2, 1, 3, 2}, w);
    clt_tensor *w4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){6, 2, 3, 2}, w);
    clt_tensor *tb = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){6}, b), *y5, *y4;
    clt_conv3d_opts o3 = {{1, 2, 1}, {0, 1, 2}, {1, 1, 2}, 2};
    clt_conv2d_opts o2 = {{2, 1}, {1, 2}, {1, 2}, 2};
    CHECK(clt_conv3d(x5, w5, tb, &o3, &y5));
    CHECK(clt_conv2d(x4, w4, tb, &o2, &y4));
    cr_assert_eq(clt_tensor_numel(y5), clt_tensor_numel(y4));
    float *a = read_f32(y5), *c = read_f32(y4);
    cr_assert(memcmp(a, c, (size_t)clt_tensor_numel(y4) * sizeof(float)) == 0);
    free(a);
    free(c);
    clt_tensor_free(y5);
    clt_tensor_free(y4);
    /* transposed: weight [Cin 4, Cout / groups 3, ...] */
    clt_tensor *v5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){4, 3, 1, 3, 2}, w);
    clt_tensor *v4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){4, 3, 3, 2}, w);
    clt_conv_transpose3d_opts t3 = {{1, 2, 1}, {0, 1, 0}, {0, 1, 1}, 2, {1, 1, 2}};
    clt_conv_transpose2d_opts t2 = {{2, 1}, {1, 0}, {1, 1}, 2, {1, 2}};
    CHECK(clt_conv_transpose3d(x5, v5, tb, &t3, &y5));
    CHECK(clt_conv_transpose2d(x4, v4, tb, &t2, &y4));
    cr_assert_eq(clt_tensor_numel(y5), clt_tensor_numel(y4));
    a = read_f32(y5);
    c = read_f32(y4);
    cr_assert(memcmp(a, c, (size_t)clt_tensor_numel(y4) * sizeof(float)) == 0);
    free(a);
    free(c);
    free(x);
    free(w);
    free(b);
    clt_tensor *ts[] = {x5, x4, w5, w4, tb, y5, y4, v5, v4};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* The forward and backward of conv3d with the batch unfolded one image at
 * a time give the values of one unfolding of the whole batch. */
Test(conv3d, batch_in_chunks)
{
    clt_device *dev = get_device("cpu");
    double *x = spread_doubles(3 * 2 * 4 * 5 * 4, 61), *w = spread_doubles(4 * 2 * 2 * 3 * 2, 62);
    clt_conv3d_opts o = {{1, 2, 1}, {1, 1, 0}, {1, 1, 2}, 1};
    double *got[2][3];
    for (int pass = 0; pass < 2; pass++) {
        size_t saved = clt__conv2d_cols_limit;
        if (pass)
            clt__conv2d_cols_limit = 1;
        clt_tensor *tx = tensor_of(dev, CLT_FLOAT64, 5, (int64_t[]){3, 2, 4, 5, 4}, x);
        clt_tensor *tw = tensor_of(dev, CLT_FLOAT64, 5, (int64_t[]){4, 2, 2, 3, 2}, w);
        clt_tensor *y, *l, *gx, *gw;
        CHECK(clt_set_requires_grad(tx, 1));
        CHECK(clt_set_requires_grad(tw, 1));
        CHECK(clt_conv3d(tx, tw, NULL, &o, &y));
        CHECK(clt_sum(y, &l));
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(tx, &gx));
        CHECK(clt_grad(tw, &gw));
        got[pass][0] = read_as_f64(y);
        got[pass][1] = read_as_f64(gx);
        got[pass][2] = read_as_f64(gw);
        size_t n[3] = {(size_t)clt_tensor_numel(y), (size_t)clt_tensor_numel(gx),
                       (size_t)clt_tensor_numel(gw)};
        if (pass)
            for (int k = 0; k < 3; k++)
                for (size_t i = 0; i < n[k]; i++)
                    cr_assert(close_enough(got[1][k][i], got[0][k][i], 1e-12, 1e-12),
                              "result %d element %zu", k, i);
        clt__conv2d_cols_limit = saved;
        clt_tensor *ts[] = {tx, tw, y, l, gx, gw};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            clt_tensor_free(ts[i]);
    }
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < 3; k++)
            free(got[p][k]);
    free(x);
    free(w);
}

/* ---- gradients ---------------------------------------------------------------------------- */

/* gradcheck's inputs have at most 4 dims: the 5-D ones come as [N C, D,
 * H, W] and [A B, kD, kH, kW] and are viewed here as the case says (a
 * recorded reshape: the gradients flow back through it). */
typedef struct gcase {
    c3case c;
    int kind; /* 0 conv3d, 1 conv_transpose3d */
} gcase;

static clt_status call_3d(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const gcase *g = ctx;
    const c3case *c = &g->c;
    int64_t xs[5] = {c->N, c->C, c->D, c->H, c->W};
    int64_t ws[5] = {g->kind ? c->C : c->O, g->kind ? c->O / c->groups : c->C / c->groups,
                     c->k[0], c->k[1], c->k[2]};
    clt_tensor *x5 = NULL, *w5 = NULL;
    clt_status st = CLT_OK;
    if (c->N)
        st = clt_reshape(in[0], 5, xs, &x5);
    if (st == CLT_OK)
        st = clt_reshape(in[1], 5, ws, &w5);
    if (st == CLT_OK) {
        const clt_tensor *x = c->N ? x5 : in[0], *b = c->bias ? in[2] : NULL;
        if (g->kind) {
            clt_conv_transpose3d_opts o = topts3(c);
            st = clt_conv_transpose3d(x, w5, b, &o, out);
        } else {
            clt_conv3d_opts o = opts3(c);
            st = clt_conv3d(x, w5, b, &o, out);
        }
    }
    clt_tensor_free(x5);
    clt_tensor_free(w5);
    return st;
}

Test(conv3d, gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const gcase gc[] = {
        {{2, 2, 3, 3, 4, 3, {2, 2, 3}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}, {0, 0, 0}, 1, 1}, 0},
        {{1, 4, 4, 3, 3, 2, {2, 1, 2}, {2, 1, 1}, {0, 1, 1}, {1, 2, 1}, {0, 0, 0}, 2, 1}, 0},
        {{0, 2, 3, 2, 3, 2, {2, 2, 1}, {1, 2, 1}, {1, 1, 0}, {2, 1, 1}, {0, 0, 0}, 1, 0}, 0},
        {{2, 2, 2, 3, 2, 3, {2, 2, 2}, {1, 1, 1}, {1, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1, 1}, 1},
        {{1, 4, 2, 2, 3, 2, {2, 1, 2}, {2, 1, 3}, {1, 0, 1}, {1, 2, 1}, {1, 0, 2}, 2, 1}, 1},
        {{0, 2, 2, 2, 2, 2, {1, 2, 2}, {1, 2, 1}, {0, 1, 0}, {1, 2, 2}, {0, 1, 1}, 1, 0}, 1},
    };
    for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++) {
        const c3case *c = &gc[i].c;
        int kind = gc[i].kind;
        int64_t Nb = batch(c), A = kind ? c->C : c->O;
        int64_t B = kind ? c->O / c->groups : c->C / c->groups;
        double *x = spread_doubles((size_t)(Nb * c->C * c->D * c->H * c->W), 71 + (unsigned)i);
        double *w = spread_doubles((size_t)(A * B * c->k[0] * c->k[1] * c->k[2]), 72);
        double *b = spread_doubles((size_t)c->O, 73);
        gc_in ins[3] = {{4, {Nb * c->C, c->D, c->H, c->W}, x, 1},
                        {4, {A * B, c->k[0], c->k[1], c->k[2]}, w, 1},
                        {1, {c->O}, b, 1}};
        if (!c->N)
            ins[0] = (gc_in){4, {c->C, c->D, c->H, c->W}, x, 1};
        gradcheck(dev, call_3d, &gc[i], c->bias ? 3 : 2, ins);
        ins[0].grad = 0; /* the weight and bias alone */
        gradcheck(dev, call_3d, &gc[i], c->bias ? 3 : 2, ins);
        free(x);
        free(w);
        free(b);
    }
}

typedef struct t1case {
    int64_t N, C, L, O, k;
    clt_conv_transpose1d_opts o;
    int bias;
} t1case;

static clt_status call_t1(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const t1case *c = ctx;
    return clt_conv_transpose1d(in[0], in[1], c->bias ? in[2] : NULL, &c->o, out);
}

Test(conv3d, conv_transpose1d_gradients_by_finite_differences)
{
    clt_device *dev = get_device("cpu");
    static const t1case gc[] = {
        {2, 4, 5, 6, 3, {2, 1, 1, 2, 1}, 1},
        {0, 3, 4, 2, 2, {1, 0, 1, 1, 2}, 0},
    };
    for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++) {
        const t1case *c = &gc[i];
        int64_t N = c->N ? c->N : 1, Cog = c->O / c->o.groups;
        double *x = spread_doubles((size_t)(N * c->C * c->L), 81 + (unsigned)i);
        double *w = spread_doubles((size_t)(c->C * Cog * c->k), 82);
        double *b = spread_doubles((size_t)c->O, 83);
        gc_in ins[3] = {{3, {c->N, c->C, c->L}, x, 1}, {3, {c->C, Cog, c->k}, w, 1},
                        {1, {c->O}, b, 1}};
        if (!c->N)
            ins[0] = (gc_in){2, {c->C, c->L}, x, 1};
        gradcheck(dev, call_t1, c, c->bias ? 3 : 2, ins);
        free(x);
        free(w);
        free(b);
    }
}

/* ---- errors --------------------------------------------------------------------------------- */

Test(conv3d, errors_with_their_messages)
{
    clt_device *dev = get_device("cpu");
    double v[4 * 3 * 3 * 3 * 3] = {0};
    clt_tensor *x5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){1, 4, 3, 3, 3}, v);
    clt_tensor *x4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 4, 3, 3}, v);
    clt_tensor *x3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){1, 4, 3}, v);
    clt_tensor *d5 = tensor_of(dev, CLT_FLOAT64, 5, (int64_t[]){1, 4, 3, 3, 3}, v);
    clt_tensor *w5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){2, 4, 2, 2, 2}, v);
    clt_tensor *v5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){4, 1, 2, 2, 2}, v);
    clt_tensor *w4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 4, 2, 2}, v);
    clt_tensor *w3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){4, 2, 2}, v);
    clt_tensor *b5 = tensor_of(dev, CLT_FLOAT32, 1, (int64_t[]){5}, v);
    clt_tensor *out = (clt_tensor *)0x1;
    assert_error(clt_conv3d(x3, w5, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of "
                 "size: [1, 4, 3]");
    cr_assert_null(out);
    assert_error(clt_conv3d(x5, w4, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected weight to be 5-dimensional");
    assert_error(clt_conv3d(x5, w5, b5, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected bias to be 1-dimensional with 2 elements, but got bias of size [5]");
    assert_error(clt_conv3d(d5, w5, NULL, NULL, &out), CLT_ERR_DTYPE_MISMATCH,
                 "Input type (float64), weight type (float32)");
    clt_conv3d_opts o = CLT_CONV3D_DEFAULTS;
    o.stride[2] = 0;
    assert_error(clt_conv3d(x5, w5, NULL, &o, &out), CLT_ERR_INVALID_ARGUMENT,
                 "non-positive stride is not supported (stride {1, 1, 0})");
    o = (clt_conv3d_opts)CLT_CONV3D_DEFAULTS;
    o.dilation[0] = 3;
    assert_error(clt_conv3d(x5, w5, NULL, &o, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Calculated padded input size per channel: (3 x 3 x 3). Kernel size: (4 x 2 x "
                 "2). Kernel size can't be greater than actual input size");
    o = (clt_conv3d_opts)CLT_CONV3D_DEFAULTS;
    o.groups = 3;
    assert_error(clt_conv3d(x5, w5, NULL, &o, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Given groups=3, expected weight to be divisible by 3 at dimension 0");
    o.groups = 2;
    assert_error(clt_conv3d(x5, w5, NULL, &o, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected input[1, 4, 3, 3, 3] to have 8 channels, but got 4 channels instead");
    /* transposed */
    clt_conv_transpose3d_opts t = CLT_CONV_TRANSPOSE3D_DEFAULTS;
    assert_error(clt_conv_transpose3d(x3, w5, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d");
    /* a 4-D input is unbatched: its channels are its first size */
    assert_error(clt_conv3d(x4, w5, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected input[1, 1, 4, 3, 3] to have 4 channels, but got 1 channels");
    t.output_padding[1] = 1;
    assert_error(clt_conv_transpose3d(x5, v5, NULL, &t, &out), CLT_ERR_INVALID_ARGUMENT,
                 "output padding must be smaller than either stride or dilation, but got "
                 "output_padding_depth: 0 output_padding_height: 1 output_padding_width: 0 "
                 "stride_depth: 1 stride_height: 1 stride_width: 1 dilation_depth: 1 "
                 "dilation_height: 1 dilation_width: 1");
    t = (clt_conv_transpose3d_opts)CLT_CONV_TRANSPOSE3D_DEFAULTS;
    t.padding[2] = 3;
    assert_error(clt_conv_transpose3d(x5, v5, NULL, &t, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Given input size per channel: (3 x 3 x 3). Calculated output size per "
                 "channel: (4 x 4 x -2). Output size is too small");
    assert_error(clt_conv_transpose3d(x5, w5, b5, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Given transposed=1, weight of size [2, 4, 2, 2, 2], expected input[1, 4, 3, "
                 "3, 3] to have 2 channels");
    assert_error(clt_conv_transpose1d(x5, w3, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d");
    assert_error(clt_conv_transpose1d(x3, w4, NULL, NULL, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected weight to be 3-dimensional [in_channels, out_channels / groups, k]");
    clt_conv_transpose1d_opts t1 = {2, 0, 2, 1, 1};
    assert_error(clt_conv_transpose1d(x3, w3, NULL, &t1, &out), CLT_ERR_INVALID_ARGUMENT,
                 "output padding must be smaller than either stride or dilation");
    assert_error(clt_conv3d(NULL, w5, NULL, NULL, &out), CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert_null(out);
    cr_assert_eq(clt_conv3d(x5, w5, NULL, NULL, NULL), CLT_ERR_NULL_ARGUMENT);
    clt_tensor *ts[] = {x5, x4, x3, d5, w5, v5, w4, w3, b5};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* ---- layers --------------------------------------------------------------------------------- */

/* The layer's weight (shape ws) and bias (n) bounded by 1 / sqrt(fan_in);
 * its forward is the functional call f gives; gradients reach the
 * parameters; a float64 copy loaded from its state gives the same. */
typedef clt_status (*fwd_fn)(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                             clt_tensor **out);

static void check_layer(clt_module *m, clt_module *fresh, const char *name, int wnd,
                        const int64_t *ws, int64_t nb, double fan_in, const clt_tensor *x,
                        fwd_fn f)
{
    cr_assert_str_eq(clt_module_name(m), name);
    clt_named_tensor *p;
    size_t np;
    CHECK(clt_module_named_parameters(m, &p, &np));
    cr_assert_eq(np, 2);
    cr_assert_str_eq(p[0].name, "weight");
    cr_assert_str_eq(p[1].name, "bias");
    assert_shape(p[0].tensor, wnd, ws);
    assert_shape(p[1].tensor, 1, &nb);
    assert_uniform_within(p[0].tensor, 1.0 / sqrt(fan_in), "weight");
    assert_uniform_within(p[1].tensor, 1.0 / sqrt(fan_in), "bias");
    clt_tensor *y, *y2, *l, *gw, *gb;
    CHECK(clt_module_forward(m, x, &y));
    CHECK(f(x, p[0].tensor, p[1].tensor, &y2));
    size_t n = (size_t)clt_tensor_numel(y);
    cr_assert_eq(n, (size_t)clt_tensor_numel(y2));
    float *a = read_f32(y), *b = read_f32(y2);
    cr_assert(memcmp(a, b, n * sizeof(float)) == 0);
    CHECK(clt_sum(y, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(p[0].tensor, &gw));
    CHECK(clt_grad(p[1].tensor, &gb));
    assert_shape(gw, wnd, ws);
    assert_shape(gb, 1, &nb);
    assert_state_roundtrip(m, fresh);
    free(a);
    free(b);
    clt_free(p);
    clt_tensor_free(y);
    clt_tensor_free(y2);
    clt_tensor_free(l);
    clt_tensor_free(gw);
    clt_tensor_free(gb);
}

static const clt_conv3d_opts L3 = {{1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 2};
static const clt_conv_transpose3d_opts LT3 = {{2, 1, 1}, {1, 0, 0}, {1, 0, 0}, 2, {1, 1, 2}};
static const clt_conv_transpose1d_opts LT1 = {2, 1, 1, 1, 1};

static clt_status f_conv3d(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                           clt_tensor **out)
{
    return clt_conv3d(x, w, b, &L3, out);
}

static clt_status f_tconv3d(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                            clt_tensor **out)
{
    return clt_conv_transpose3d(x, w, b, &LT3, out);
}

static clt_status f_tconv1d(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                            clt_tensor **out)
{
    return clt_conv_transpose1d(x, w, b, &LT1, out);
}

Test(conv3d, layers)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen;
    CHECK(clt_generator_new(9, &gen));
    clt_module *m, *fresh, *bad = (clt_module *)0x1;
    double *xv = spread_doubles(2 * 4 * 4 * 5 * 6, 91);
    clt_tensor *x5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){2, 4, 4, 5, 6}, xv);
    clt_tensor *x3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 4, 7}, xv);
    const int64_t k[3] = {3, 2, 2};

    CHECK(clt_conv3d_layer(dev, 4, 6, k, &L3, 1, gen, &m));
    CHECK(clt_conv3d_layer(dev, 4, 6, k, &L3, 1, gen, &fresh));
    check_layer(m, fresh, "Conv3d", 5, (int64_t[]){6, 2, 3, 2, 2}, 6, 2.0 * 3 * 2 * 2, x5,
                f_conv3d);
    cr_assert_eq(clt_module_num_parameters(m), 6 * 2 * 3 * 2 * 2 + 6);
    clt_module_free(m);
    clt_module_free(fresh);

    /* PyTorch's layout [in, out / groups, k...]; fan_in = out / groups
     * times the kernel */
    CHECK(clt_conv_transpose3d_layer(dev, 4, 6, k, &LT3, 1, gen, &m));
    CHECK(clt_conv_transpose3d_layer(dev, 4, 6, k, &LT3, 1, gen, &fresh));
    check_layer(m, fresh, "ConvTranspose3d", 5, (int64_t[]){4, 3, 3, 2, 2}, 6, 3.0 * 3 * 2 * 2,
                x5, f_tconv3d);
    clt_module_free(m);
    clt_module_free(fresh);

    CHECK(clt_conv_transpose1d_layer(dev, 4, 5, 3, &LT1, 1, gen, &m));
    CHECK(clt_conv_transpose1d_layer(dev, 4, 5, 3, &LT1, 1, gen, &fresh));
    check_layer(m, fresh, "ConvTranspose1d", 3, (int64_t[]){4, 5, 3}, 5, 5.0 * 3, x3,
                f_tconv1d);
    clt_module_free(m);
    clt_module_free(fresh);

    /* settings refused as the layers' constructors refuse them */
    cr_assert_eq(clt_conv3d_layer(dev, 4, 5, k, &L3, 1, gen, &bad), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "out_channels must be divisible by groups"));
    cr_assert_null(bad);
    bad = (clt_module *)0x1;
    cr_assert_eq(clt_conv3d_layer(dev, 4, 6, (int64_t[]){3, 0, 2}, NULL, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "(3 x 0 x 2) must be positive"));
    cr_assert_null(bad);
    clt_conv_transpose3d_opts op = CLT_CONV_TRANSPOSE3D_DEFAULTS;
    op.output_padding[2] = 1;
    cr_assert_eq(clt_conv_transpose3d_layer(dev, 4, 6, k, &op, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "output padding must be smaller than either stride or "
                                       "dilation"));
    clt_conv_transpose1d_opts o1 = {1, 0, 1, 1, 1};
    cr_assert_eq(clt_conv_transpose1d_layer(dev, 4, 6, 3, &o1, 1, gen, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    cr_assert_eq(clt_conv3d_layer(dev, 4, 6, NULL, NULL, 1, gen, &bad), CLT_ERR_NULL_ARGUMENT);
    /* no bias */
    CHECK(clt_conv3d_layer(dev, 4, 6, k, NULL, 0, gen, &m));
    cr_assert_eq(clt_module_num_parameters(m), 6 * 4 * 3 * 2 * 2);
    clt_module_free(m);
    free(xv);
    clt_tensor_free(x5);
    clt_tensor_free(x3);
    clt_generator_free(gen);
}
