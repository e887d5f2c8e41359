/* test_spatial.c: interpolate's modes in 1 to 3 spatial dimensions,
 * grid_sample and affine_grid against host references in double written
 * from torch's documented formulas, their gradients by finite differences
 * in float64, their errors, and the Upsample layers. */
#include "gradcheck.h"

/* ---- host references ------------------------------------------------------------------ */

/* One output index's taps along a dimension. */
typedef struct taps {
    int n;
    int64_t idx[64];
    double w[64];
} taps;

/* Keys' cubic convolution kernel with a = -0.75, as torch's bicubic. */
static double keys(double x)
{
    const double a = -0.75;
    x = fabs(x);
    if (x <= 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2)
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0;
}

/* torch.nn.functional.interpolate's source of output index j along a
 * dimension (in -> out; scale the user's factor or 0), for each mode. */
static taps ref_taps(int mode, int64_t j, int64_t in, int64_t out, double scale, int align)
{
    taps t = {0};
    double s = scale > 0 ? 1 / scale : (double)in / (double)out;
    if (mode == CLT_INTERP_NEAREST || mode == CLT_INTERP_NEAREST_EXACT) {
        double r = mode == CLT_INTERP_NEAREST ? floor(j * s) : floor((j + 0.5) * s);
        t.n = 1;
        t.idx[0] = (int64_t)fmin(r, (double)(in - 1));
        t.w[0] = 1;
        return t;
    }
    if (mode == CLT_INTERP_AREA) { /* adaptive average pooling */
        int64_t a = (int64_t)floor((double)j * in / out);
        int64_t b = (int64_t)ceil((double)(j + 1) * in / out);
        for (int64_t i = a; i < b; i++) {
            t.idx[t.n] = i;
            t.w[t.n++] = 1.0 / (double)(b - a);
        }
        return t;
    }
    double r = align ? (out > 1 ? (double)j * (in - 1) / (out - 1) : 0) : s * (j + 0.5) - 0.5;
    if (mode == CLT_INTERP_BICUBIC) {
        double f = floor(r);
        for (int k = -1; k <= 2; k++) {
            int64_t i = (int64_t)f + k;
            t.idx[t.n] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
            t.w[t.n++] = keys(r - (f + k));
        }
        return t;
    }
    if (r < 0)
        r = 0;
    double f = floor(r);
    t.n = 2;
    t.idx[0] = (int64_t)f;
    t.idx[1] = (int64_t)f + 1 < in ? (int64_t)f + 1 : in - 1;
    t.w[0] = 1 - (r - f);
    t.w[1] = r - f;
    return t;
}

/* The interpolation of x (shape [N, C, spatial...], nd spatial dims) to
 * the sizes out, every tap combination summed (no separation). */
static double *ref_interp(const double *x, int nd, const int64_t *shape, const int64_t *out,
                          const double *scale, int mode, int align)
{
    int64_t planes = shape[0] * shape[1], pin = 1, pout = 1;
    for (int d = 0; d < nd; d++) {
        pin *= shape[2 + d];
        pout *= out[d];
    }
    double *y = calloc((size_t)(planes * pout), sizeof *y);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o = 0; o < pout; o++) {
            int64_t c[3];
            host_unravel(o, nd, out, c);
            taps t[3];
            for (int d = 0; d < nd; d++)
                t[d] = ref_taps(mode, c[d], shape[2 + d], out[d], scale ? scale[d] : 0, align);
            int k[3] = {0, 0, 0};
            double acc = 0;
            for (;;) {
                double w = 1;
                int64_t src[3];
                for (int d = 0; d < nd; d++) {
                    w *= t[d].w[k[d]];
                    src[d] = t[d].idx[k[d]];
                }
                acc += w * x[p * pin + host_ravel(src, nd, shape + 2)];
                int d = nd - 1;
                while (d >= 0 && ++k[d] == t[d].n)
                    k[d--] = 0;
                if (d < 0)
                    break;
            }
            y[p * pout + o] = acc;
        }
    return y;
}

/* grid_sample's placement of a coordinate in pixels: border clips to
 * [0, size - 1]; reflection folds it into [-0.5, size - 0.5] (or
 * [0, size - 1] with align_corners), then clips. */
static double ref_place(double v, int64_t size, int padding, int align)
{
    if (padding == CLT_GRID_PAD_REFLECTION) {
        double lo = align ? 0 : -0.5, hi = align ? (double)size - 1 : (double)size - 0.5;
        double span = hi - lo;
        if (span <= 0) {
            v = 0;
        } else {
            double d = fabs(v - lo), m = fmod(d, span);
            v = fmod(floor(d / span), 2) == 0 ? lo + m : hi - m;
        }
    }
    if (padding != CLT_GRID_PAD_ZEROS)
        v = fmin(fmax(v, 0), (double)size - 1);
    return v;
}

static double ref_pixel(const double *plane, int64_t H, int64_t W, double y, double x)
{
    if (!(x >= 0 && x < W && y >= 0 && y < H))
        return 0;
    return plane[(int64_t)y * W + (int64_t)x];
}

/* F.grid_sample for x [N, C, H, W] and grid [N, Ho, Wo, 2]. */
static double *ref_grid_sample(const double *x, const int64_t *xs, const double *grid,
                               const int64_t *gs, int mode, int padding, int align)
{
    int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Ho = gs[1], Wo = gs[2];
    double *y = calloc((size_t)(N * C * Ho * Wo), sizeof *y);
    for (int64_t n = 0; n < N; n++)
        for (int64_t q = 0; q < Ho * Wo; q++) {
            double gx = grid[(n * Ho * Wo + q) * 2], gy = grid[(n * Ho * Wo + q) * 2 + 1];
            double ix = align ? (gx + 1) / 2 * (W - 1) : ((gx + 1) * W - 1) / 2;
            double iy = align ? (gy + 1) / 2 * (H - 1) : ((gy + 1) * H - 1) / 2;
            for (int64_t c = 0; c < C; c++) {
                const double *pl = x + (n * C + c) * H * W;
                double v = 0;
                if (mode == CLT_GRID_BICUBIC) {
                    double fx = floor(ix), fy = floor(iy);
                    for (int j = -1; j <= 2; j++)
                        for (int i = -1; i <= 2; i++)
                            v += keys(ix - (fx + i)) * keys(iy - (fy + j)) *
                                 ref_pixel(pl, H, W, ref_place(fy + j, H, padding, align),
                                           ref_place(fx + i, W, padding, align));
                } else {
                    double px = ref_place(ix, W, padding, align);
                    double py = ref_place(iy, H, padding, align);
                    if (mode == CLT_GRID_NEAREST) {
                        v = ref_pixel(pl, H, W, nearbyint(py), nearbyint(px));
                    } else {
                        double fx = floor(px), fy = floor(py), ax = px - fx, ay = py - fy;
                        v = (1 - ax) * (1 - ay) * ref_pixel(pl, H, W, fy, fx) +
                            ax * (1 - ay) * ref_pixel(pl, H, W, fy, fx + 1) +
                            (1 - ax) * ay * ref_pixel(pl, H, W, fy + 1, fx) +
                            ax * ay * ref_pixel(pl, H, W, fy + 1, fx + 1);
                    }
                }
                y[(n * C + c) * Ho * Wo + q] = v;
            }
        }
    return y;
}

/* ---- interpolate -------------------------------------------------------------------- */

typedef struct icase {
    int nd;
    int64_t shape[5];
    int64_t size[3]; /* {0}: use scale */
    double scale[3];
    int mode, align, recompute;
} icase;

static void check_interp(clt_device *dev, clt_dtype dt, const icase *c, double rtol)
{
    int nd = c->nd, rank = nd + 2;
    int64_t n = host_numel(rank, c->shape), out[3];
    bool sized = c->size[0] != 0;
    for (int d = 0; d < nd; d++)
        out[d] = sized ? c->size[d] : (int64_t)floor((double)c->shape[2 + d] * c->scale[d]);
    double *xv = spread_doubles((size_t)n, (unsigned)(n * 7 + c->mode));
    clt_tensor *x = tensor_of(dev, dt, rank, c->shape, xv), *y = NULL;
    CHECK(clt_interpolate_nd(x, sized ? c->size : NULL, sized ? NULL : c->scale, c->mode,
                             c->align, c->recompute, &y));
    int64_t want_shape[5] = {c->shape[0], c->shape[1], out[0], out[1], out[2]};
    assert_shape(y, rank, want_shape);
    /* the kernels take the user's scale unless it is recomputed */
    double *want = ref_interp(xv, nd, c->shape, out, sized || c->recompute ? NULL : c->scale,
                             c->mode, c->align);
    assert_tensor_close(y, want, (size_t)host_numel(rank, want_shape), rtol, rtol, "interp");
    free(want);
    free(xv);
    clt_tensor_free(x);
    clt_tensor_free(y);
}

Test(spatial, interpolate_modes_against_reference)
{
    clt_device *dev = get_device("cpu");
    const icase cases[] = {
        {1, {2, 3, 7}, {11}, {0}, CLT_INTERP_LINEAR, 0, 0},
        {1, {2, 3, 7}, {4}, {0}, CLT_INTERP_LINEAR, 1, 0},
        {1, {1, 2, 1}, {5}, {0}, CLT_INTERP_LINEAR, 0, 0},
        {1, {1, 2, 5}, {0}, {2.5}, CLT_INTERP_LINEAR, 0, 0},
        {1, {1, 2, 5}, {0}, {2.5}, CLT_INTERP_LINEAR, 0, 1},
        {1, {2, 2, 9}, {4}, {0}, CLT_INTERP_NEAREST, 0, 0},
        {1, {2, 2, 4}, {9}, {0}, CLT_INTERP_NEAREST_EXACT, 0, 0},
        {1, {2, 2, 9}, {4}, {0}, CLT_INTERP_AREA, 0, 0},
        {2, {2, 3, 5, 4}, {9, 7}, {0}, CLT_INTERP_BICUBIC, 0, 0},
        {2, {2, 3, 5, 4}, {3, 6}, {0}, CLT_INTERP_BICUBIC, 1, 0},
        {2, {1, 1, 1, 3}, {4, 1}, {0}, CLT_INTERP_BICUBIC, 0, 0},
        {2, {1, 2, 5, 7}, {0}, {1.7, 0.6}, CLT_INTERP_BICUBIC, 0, 0},
        {2, {1, 2, 5, 7}, {3, 11}, {0}, CLT_INTERP_NEAREST_EXACT, 0, 0},
        {2, {1, 2, 7, 5}, {3, 2}, {0}, CLT_INTERP_AREA, 0, 0},
        {2, {1, 2, 4, 6}, {0}, {2.0, 0.5}, CLT_INTERP_BILINEAR, 0, 1},
        {3, {1, 2, 3, 4, 5}, {5, 3, 7}, {0}, CLT_INTERP_TRILINEAR, 0, 0},
        {3, {1, 2, 3, 4, 5}, {5, 3, 7}, {0}, CLT_INTERP_TRILINEAR, 1, 0},
        {3, {2, 1, 2, 3, 2}, {0}, {2.0, 1.5, 0.5}, CLT_INTERP_TRILINEAR, 0, 0},
        {3, {1, 2, 3, 4, 5}, {6, 2, 3}, {0}, CLT_INTERP_NEAREST, 0, 0},
        {3, {1, 2, 3, 4, 5}, {6, 2, 3}, {0}, CLT_INTERP_NEAREST_EXACT, 0, 0},
        {3, {1, 2, 6, 5, 4}, {2, 2, 3}, {0}, CLT_INTERP_AREA, 0, 0},
        {3, {1, 1, 1, 4, 1}, {3, 2, 2}, {0}, CLT_INTERP_AREA, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        check_interp(dev, CLT_FLOAT64, &cases[k], 1e-12);
        check_interp(dev, CLT_FLOAT32, &cases[k], 2e-6);
    }
}

/* The 4-D nearest and bilinear modes are clt_interpolate's, bit for bit. */
Test(spatial, interpolate_nd_matches_interpolate)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[4] = {2, 3, 5, 6};
    double *xv = spread_doubles(180, 3);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, shape, xv), *a = NULL, *b = NULL;
    for (int mode = 0; mode < 2; mode++) {
        CHECK(clt_interpolate(x, (int64_t[]){7, 4}, NULL, mode, mode, &a));
        CHECK(clt_interpolate_nd(x, (int64_t[]){7, 4}, NULL, mode, mode, 0, &b));
        double *va = read_as_f64(a), *vb = read_as_f64(b);
        cr_assert(memcmp(va, vb, 2 * 3 * 7 * 4 * sizeof *va) == 0);
        free(va);
        free(vb);
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
    free(xv);
    clt_tensor_free(x);
}

typedef struct ictx {
    int nd;
    int64_t shape5[5]; /* the input's shape as the op sees it (5-D ones reshaped) */
    int64_t size[3];
    int mode, align;
} ictx;

static clt_status interp_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const ictx *c = p;
    clt_tensor *x = NULL;
    clt_status st = clt_reshape(in[0], c->nd + 2, c->shape5, &x);
    if (st == CLT_OK)
        st = clt_interpolate_nd(x, c->size, NULL, c->mode, c->align, 0, out);
    clt_tensor_free(x);
    return st;
}

Test(spatial, interpolate_gradients)
{
    clt_device *dev = get_device("cpu");
    const ictx cases[] = {
        {1, {2, 2, 5}, {8}, CLT_INTERP_LINEAR, 0},
        {1, {2, 2, 7}, {3}, CLT_INTERP_LINEAR, 1},
        {1, {1, 2, 4}, {9}, CLT_INTERP_NEAREST, 0},
        {1, {1, 2, 9}, {4}, CLT_INTERP_NEAREST_EXACT, 0},
        {1, {1, 2, 7}, {3}, CLT_INTERP_AREA, 0},
        {2, {1, 2, 4, 3}, {7, 5}, CLT_INTERP_BICUBIC, 0},
        {2, {1, 1, 5, 6}, {3, 4}, CLT_INTERP_BICUBIC, 1},
        {2, {1, 2, 5, 4}, {3, 7}, CLT_INTERP_NEAREST_EXACT, 0},
        {2, {1, 2, 5, 7}, {2, 3}, CLT_INTERP_AREA, 0},
        {3, {1, 2, 2, 3, 4}, {3, 4, 3}, CLT_INTERP_TRILINEAR, 0},
        {3, {1, 1, 3, 2, 4}, {2, 3, 5}, CLT_INTERP_TRILINEAR, 1},
        {3, {1, 1, 3, 4, 5}, {2, 3, 2}, CLT_INTERP_AREA, 0},
        {3, {1, 1, 2, 3, 2}, {3, 5, 4}, CLT_INTERP_NEAREST, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const ictx *c = &cases[k];
        int64_t n = host_numel(c->nd + 2, c->shape5);
        double *xv = spread_doubles((size_t)n, (unsigned)k + 11);
        gc_in in = {1, {n}, xv, 1};
        gradcheck(dev, interp_fn, c, 1, &in);
        free(xv);
    }
}

Test(spatial, interpolate_grad_fn_names)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(60, 5);
    struct {
        int nd, mode;
        const char *name;
    } want[] = {{1, CLT_INTERP_LINEAR, "UpsampleLinear1DBackward1"},
                {1, CLT_INTERP_NEAREST, "UpsampleNearest1DBackward1"},
                {2, CLT_INTERP_BICUBIC, "UpsampleBicubic2DBackward1"},
                {2, CLT_INTERP_NEAREST_EXACT, "UpsampleNearestExact2DBackward1"},
                {2, CLT_INTERP_AREA, "AdaptiveAvgPool2DBackward0"},
                {3, CLT_INTERP_TRILINEAR, "UpsampleTrilinear3DBackward1"}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int64_t shape[5] = {1, 3, 4, 5, 1};
        clt_tensor *x = tensor_of(dev, CLT_FLOAT32, want[k].nd + 2, shape, xv), *y = NULL;
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_interpolate_nd(x, (int64_t[]){6, 3, 2}, NULL, want[k].mode, 0, 0, &y));
        cr_assert_str_eq(clt_grad_fn_name(y), want[k].name);
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
    free(xv);
}

Test(spatial, interpolate_errors)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(60, 5);
    clt_tensor *x3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){1, 3, 4}, xv);
    clt_tensor *x4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 3, 4, 5}, xv);
    clt_tensor *i3 = tensor_of(dev, CLT_INT64, 3, (int64_t[]){1, 3, 4}, xv);
    clt_tensor *out = (clt_tensor *)0x1;
    assert_error(clt_interpolate_nd(x3, (int64_t[]){5}, NULL, CLT_INTERP_BILINEAR, 0, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Got 3D input, but bilinear mode needs 4D input");
    cr_assert_null(out);
    names_only("clt_interpolate_nd");
    assert_error(clt_interpolate_nd(x4, (int64_t[]){5, 5}, NULL, CLT_INTERP_TRILINEAR, 0, 0,
                                    &out),
                 CLT_ERR_SHAPE_MISMATCH, "Got 4D input, but trilinear mode needs 5D input");
    assert_error(clt_interpolate_nd(x3, (int64_t[]){5}, NULL, CLT_INTERP_BICUBIC, 0, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Only 3D, 4D and 5D input");
    assert_error(clt_interpolate_nd(x3, (int64_t[]){5}, NULL, CLT_INTERP_AREA, 1, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "align_corners option can only be set");
    assert_error(clt_interpolate_nd(x3, (int64_t[]){5}, NULL, CLT_INTERP_LINEAR, 0, 1, &out),
                 CLT_ERR_INVALID_ARGUMENT, "recompute_scale_factor is not meaningful");
    assert_error(clt_interpolate_nd(x3, NULL, (double[]){0.1}, CLT_INTERP_LINEAR, 0, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "output (W: 0)");
    assert_error(clt_interpolate_nd(i3, (int64_t[]){5}, NULL, CLT_INTERP_LINEAR, 0, 0, &out),
                 CLT_ERR_DTYPE_UNSUPPORTED, NULL);
    assert_error(clt_interpolate_nd(x3, (int64_t[]){5}, NULL, (clt_interp_mode)9, 0, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "unknown mode 9");
    cr_assert_null(out);
    /* clt_interpolate keeps to 4-D input, new modes included */
    assert_error(clt_interpolate(x3, (int64_t[]){5, 5}, NULL, CLT_INTERP_NEAREST, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Got 3D input, but nearest mode needs 4D input");
    CHECK(clt_interpolate(x4, (int64_t[]){5, 5}, NULL, CLT_INTERP_BICUBIC, 0, &out));
    clt_tensor_free(out);
    clt_tensor_free(x3);
    clt_tensor_free(x4);
    clt_tensor_free(i3);
    free(xv);
}

/* ---- grid_sample ---------------------------------------------------------------------- */

/* A grid with points well outside [-1, 1], and the corners exactly. */
static double *test_grid(size_t n, unsigned seed)
{
    double *g = spread_doubles(n, seed);
    for (size_t k = 0; k < n; k++)
        g[k] *= 1.9;
    static const double corners[4] = {-1, 1, 1, -1};
    for (size_t k = 0; k < 4 && k < n; k++)
        g[k] = corners[k];
    return g;
}

Test(spatial, grid_sample_against_reference)
{
    clt_device *dev = get_device("cpu");
    const int64_t shapes[][2][4] = {{{2, 3, 5, 7}, {2, 4, 6, 2}},
                                    {{1, 2, 1, 1}, {1, 3, 3, 2}},
                                    {{1, 1, 4, 1}, {1, 5, 2, 2}}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t *xs = shapes[s][0], *gs = shapes[s][1];
        int64_t nx = host_numel(4, xs), ng = host_numel(4, gs);
        double *xv = spread_doubles((size_t)nx, 9), *gv = test_grid((size_t)ng, 13 + (unsigned)s);
        for (int dti = 0; dti < 2; dti++) {
            clt_dtype dt = dti ? CLT_FLOAT32 : CLT_FLOAT64;
            clt_tensor *x = tensor_of(dev, dt, 4, xs, xv), *g = tensor_of(dev, dt, 4, gs, gv);
            for (int mode = 0; mode < 3; mode++)
                for (int pad = 0; pad < 3; pad++)
                    for (int align = 0; align < 2; align++) {
                        clt_tensor *y = NULL;
                        CHECK(clt_grid_sample(x, g, mode, pad, align, &y));
                        int64_t ys[4] = {xs[0], xs[1], gs[1], gs[2]};
                        assert_shape(y, 4, ys);
                        double *want = ref_grid_sample(xv, xs, gv, gs, mode, pad, align);
                        /* float32: the grid's own rounding moves the points */
                        assert_tensor_close(y, want, (size_t)host_numel(4, ys),
                                            dti ? 2e-5 : 1e-12, dti ? 2e-5 : 1e-12,
                                            "grid_sample");
                        free(want);
                        clt_tensor_free(y);
                    }
            clt_tensor_free(x);
            clt_tensor_free(g);
        }
        free(xv);
        free(gv);
    }
}

/* F.grid_sample for x [N, C, D, H, W] and grid [N, Do, Ho, Wo, 3]:
 * trilinear or nearest (torch's 3-D kernel rounds halves away from 0). */
static double *ref_grid_sample3(const double *x, const int64_t *xs, const double *grid,
                                const int64_t *gs, int mode, int padding, int align)
{
    int64_t N = xs[0], C = xs[1], sz[3] = {xs[4], xs[3], xs[2]}, P = gs[1] * gs[2] * gs[3];
    int64_t plane = sz[0] * sz[1] * sz[2];
    double *y = calloc((size_t)(N * C * P), sizeof *y);
    for (int64_t n = 0; n < N; n++)
        for (int64_t q = 0; q < P; q++) {
            double pos[3]; /* x, y, z in pixels, placed */
            for (int a = 0; a < 3; a++) {
                double g = grid[(n * P + q) * 3 + a];
                double v = align ? (g + 1) / 2 * (sz[a] - 1) : ((g + 1) * sz[a] - 1) / 2;
                pos[a] = ref_place(v, sz[a], padding, align);
            }
            for (int64_t c = 0; c < C; c++) {
                const double *pl = x + (n * C + c) * plane;
                double v = 0;
                for (int corner = 0; corner < 8; corner++) {
                    double w = 1;
                    int64_t at = 0;
                    bool in = true;
                    for (int a = 2; a >= 0; a--) {
                        double f = mode == CLT_GRID_NEAREST ? round(pos[a]) /* half away */
                                                            : floor(pos[a]) + ((corner >> a) & 1);
                        if (mode == CLT_GRID_NEAREST && corner)
                            w = 0;
                        else if (mode != CLT_GRID_NEAREST)
                            w *= 1 - fabs(pos[a] - f);
                        in = in && f >= 0 && f < sz[a];
                        at = at * sz[a] + (in ? (int64_t)f : 0);
                    }
                    if (in && w != 0)
                        v += w * pl[at];
                }
                y[(n * C + c) * P + q] = v;
            }
        }
    return y;
}

Test(spatial, grid_sample_3d)
{
    clt_device *dev = get_device("cpu");
    const int64_t xs[5] = {2, 2, 3, 4, 5}, gs[5] = {2, 2, 3, 2, 3};
    double *xv = spread_doubles(240, 61), *gv = test_grid(72, 67);
    /* with align_corners, pixel positions 0.5, 1.5, 2.5 exactly: halves */
    static const double halves[6] = {-0.75, 0, -0.5, 0.25, 0, 0.5};
    memcpy(gv + 6, halves, sizeof halves);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT64, 5, xs, xv);
    clt_tensor *g = tensor_of(dev, CLT_FLOAT64, 5, gs, gv);
    for (int mode = 0; mode < 2; mode++)
        for (int pad = 0; pad < 3; pad++)
            for (int align = 0; align < 2; align++) {
                clt_tensor *y = NULL;
                CHECK(clt_grid_sample(x, g, mode, pad, align, &y));
                int64_t ys[5] = {2, 2, 2, 3, 2};
                assert_shape(y, 5, ys);
                double *want = ref_grid_sample3(xv, xs, gv, gs, mode, pad, align);
                assert_tensor_close(y, want, 48, 1e-12, 1e-12, "grid_sample 3-d");
                free(want);
                clt_tensor_free(y);
            }
    clt_tensor *out = (clt_tensor *)0x1;
    assert_error(clt_grid_sample(x, g, CLT_GRID_BICUBIC, 0, 0, &out), CLT_ERR_INVALID_ARGUMENT,
                 "bicubic interpolation only supports 4D input");
    cr_assert_null(out);
    clt_tensor_free(x);
    clt_tensor_free(g);
    free(xv);
    free(gv);
}

typedef struct gctx {
    int mode, pad, align;
} gctx;

static clt_status grid_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const gctx *c = p;
    return clt_grid_sample(in[0], in[1], c->mode, c->pad, c->align, out);
}

/* The 5-D case through 4-D leaves: x [2, 2, 3, 20] as [2, 2, 3, 4, 5],
 * grid [2, 2, 3, 6] as [2, 2, 3, 2, 3]. */
static clt_status grid3_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const gctx *c = p;
    clt_tensor *x = NULL, *g = NULL;
    clt_status st = clt_reshape(in[0], 5, (int64_t[]){2, 2, 3, 4, 5}, &x);
    if (st == CLT_OK)
        st = clt_reshape(in[1], 5, (int64_t[]){2, 2, 3, 2, 3}, &g);
    if (st == CLT_OK)
        st = clt_grid_sample(x, g, c->mode, c->pad, c->align, out);
    clt_tensor_free(x);
    clt_tensor_free(g);
    return st;
}

Test(spatial, grid_sample_gradients)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(2 * 2 * 4 * 5, 21);
    double *gv = spread_doubles(2 * 3 * 2 * 2, 23);
    for (size_t k = 0; k < 24; k++)
        gv[k] *= 1.4; /* some points outside, none on a pixel edge */
    for (int mode = 0; mode < 3; mode++)
        for (int pad = 0; pad < 3; pad++)
            for (int align = 0; align < 2; align++) {
                gctx c = {mode, pad, align};
                /* nearest: the grid's gradient is zero (torch's), not a derivative */
                gc_in in[2] = {{4, {2, 2, 4, 5}, xv, 1},
                               {4, {2, 3, 2, 2}, gv, mode != CLT_GRID_NEAREST}};
                gradcheck(dev, grid_fn, &c, 2, in);
            }
    /* many points into few pixels: the input's gradient in runs of
     * points, their parts summed */
    double *gw = spread_doubles(16 * 16 * 2, 29);
    for (int mode = 0; mode < 3; mode++) {
        gctx c = {mode, CLT_GRID_PAD_REFLECTION, 0};
        gc_in in[2] = {{4, {1, 1, 3, 4}, xv, 1}, {4, {1, 16, 16, 2}, gw, 0}};
        gradcheck(dev, grid_fn, &c, 2, in);
    }
    free(gw);
    free(xv);
    free(gv);
    double *x3 = spread_doubles(240, 71), *g3 = spread_doubles(72, 73);
    for (size_t k = 0; k < 72; k++)
        g3[k] *= 1.3;
    for (int mode = 0; mode < 2; mode++)
        for (int pad = 0; pad < 3; pad++) {
            gctx c = {mode, pad, pad == 1};
            gc_in in[2] = {{4, {2, 2, 3, 20}, x3, 1}, {4, {2, 2, 3, 6}, g3, mode == 0}};
            gradcheck(dev, grid3_fn, &c, 2, in);
        }
    free(x3);
    free(g3);
}

/* The input's gradient gathers many points into one pixel: the same bits
 * on every run; nearest gives the grid a zero gradient. */
Test(spatial, grid_sample_backward_repeatable)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(3 * 4 * 4, 31), *gv = spread_doubles(1 * 16 * 16 * 2, 37);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 3, 4, 4}, xv);
    clt_tensor *g = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 16, 16, 2}, gv);
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_set_requires_grad(g, 1));
    double *first = NULL;
    for (int mode = 0; mode < 2; mode++)
        for (int run = 0; run < 2; run++) {
            clt_tensor *y = NULL, *l = NULL, *gx = NULL, *gg = NULL;
            CHECK(clt_grid_sample(x, g, mode, CLT_GRID_PAD_BORDER, 0, &y));
            cr_assert_str_eq(clt_grad_fn_name(y), "GridSampler2DBackward0");
            CHECK(clt_sum(y, &l));
            CHECK(clt_zero_grad(x, 1));
            CHECK(clt_zero_grad(g, 1));
            CHECK(clt_backward(l, NULL, 0));
            CHECK(clt_grad(x, &gx));
            CHECK(clt_grad(g, &gg));
            double *v = read_as_f64(gx);
            if (run == 0) {
                first = v;
            } else {
                cr_assert(memcmp(first, v, 48 * sizeof *v) == 0);
                free(first);
                free(v);
            }
            if (mode == CLT_GRID_NEAREST) {
                double *z = read_as_f64(gg);
                for (int k = 0; k < 512; k++)
                    cr_assert_eq(z[k], 0.0);
                free(z);
            }
            clt_tensor_free(y);
            clt_tensor_free(l);
            clt_tensor_free(gx);
            clt_tensor_free(gg);
        }
    clt_tensor_free(x);
    clt_tensor_free(g);
    free(xv);
    free(gv);
}

Test(spatial, grid_sample_errors)
{
    clt_device *dev = get_device("cpu");
    double *v = spread_doubles(200, 3);
    clt_tensor *x = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, 4, 4}, v);
    clt_tensor *g1 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){1, 3, 3, 2}, v);
    clt_tensor *g3 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, 3, 3}, v);
    clt_tensor *gd = tensor_of(dev, CLT_FLOAT64, 4, (int64_t[]){2, 3, 3, 2}, v);
    clt_tensor *x3 = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 3, 4}, v);
    clt_tensor *out = (clt_tensor *)0x1;
    assert_error(clt_grid_sample(x, g1, 0, 0, 0, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected grid and input to have same batch size");
    cr_assert_null(out);
    names_only("clt_grid_sample");
    assert_error(clt_grid_sample(x, g3, 0, 0, 0, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected grid to have size 2 in last dimension");
    assert_error(clt_grid_sample(x, gd, 0, 0, 0, &out), CLT_ERR_DTYPE_MISMATCH,
                 "expected input and grid to have same dtype");
    assert_error(clt_grid_sample(x3, gd, 0, 0, 0, &out), CLT_ERR_SHAPE_MISMATCH,
                 "expected 4D or 5D input and grid");
    assert_error(clt_grid_sample(x, g1, 3, 0, 0, &out), CLT_ERR_INVALID_ARGUMENT, "mode");
    assert_error(clt_grid_sample(x, g1, 0, 3, 0, &out), CLT_ERR_INVALID_ARGUMENT,
                 "padding_mode");
    cr_assert_null(out);
    clt_tensor *ts[] = {x, g1, g3, gd, x3};
    for (size_t k = 0; k < 5; k++)
        clt_tensor_free(ts[k]);
    free(v);
}

/* ---- affine_grid ---------------------------------------------------------------------- */

static double ref_lin(int64_t i, int64_t n, int align)
{
    if (n <= 1)
        return 0;
    double v = -1 + 2.0 * (double)i / (double)(n - 1);
    return align ? v : v * (double)(n - 1) / (double)n;
}

Test(spatial, affine_grid_against_reference)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[][5] = {{2, 3, 4, 5}, {1, 1, 1, 3}, {2, 1, 3, 4, 5}, {1, 2, 1, 2, 1}};
    const int nds[] = {4, 4, 5, 5};
    double *th = spread_doubles(24, 41);
    for (int s = 0; s < 4; s++)
        for (int align = 0; align < 2; align++) {
            int nd = nds[s], k = nd - 2;
            const int64_t *sz = sizes[s];
            int64_t ts[3] = {sz[0], k, k + 1};
            clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 3, ts, th), *y = NULL;
            CHECK(clt_affine_grid(t, nd, sz, align, &y));
            int64_t D = nd == 5 ? sz[2] : 1, H = sz[nd - 2], W = sz[nd - 1];
            int64_t ys[5] = {sz[0], nd == 5 ? D : H, nd == 5 ? H : W, nd == 5 ? W : k, k};
            assert_shape(y, nd, ys);
            size_t n = (size_t)(sz[0] * D * H * W * k);
            double *want = malloc(n * sizeof *want), *w = want;
            for (int64_t b = 0; b < sz[0]; b++)
                for (int64_t d = 0; d < D; d++)
                    for (int64_t h = 0; h < H; h++)
                        for (int64_t x = 0; x < W; x++) {
                            double p[4] = {ref_lin(x, W, align), ref_lin(h, H, align),
                                           ref_lin(d, D, align), 1};
                            if (k == 2)
                                p[2] = 1;
                            for (int r = 0; r < k; r++) {
                                double acc = 0;
                                for (int c = 0; c <= k; c++)
                                    acc += th[(b * k + r) * (k + 1) + c] * p[c];
                                *w++ = acc;
                            }
                        }
            assert_tensor_close(y, want, n, 1e-12, 1e-12, "affine_grid");
            free(want);
            clt_tensor_free(t);
            clt_tensor_free(y);
        }
    free(th);
}

static clt_status affine_fn(clt_tensor *const *in, clt_tensor **out, const void *p)
{
    const int64_t *size = p;
    return clt_affine_grid(in[0], 4, size, 0, out);
}

Test(spatial, affine_grid_gradient_and_errors)
{
    clt_device *dev = get_device("cpu");
    double *th = spread_doubles(12, 43);
    const int64_t size[4] = {2, 1, 3, 4};
    gc_in in = {3, {2, 2, 3}, th, 1};
    gradcheck(dev, affine_fn, size, 1, &in);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT32, 3, (int64_t[]){2, 2, 3}, th), *out = (void *)1;
    assert_error(clt_affine_grid(t, 3, size, 0, &out), CLT_ERR_INVALID_ARGUMENT,
                 "affine_grid only supports 4D and 5D sizes");
    cr_assert_null(out);
    names_only("clt_affine_grid");
    assert_error(clt_affine_grid(t, 5, (int64_t[]){2, 1, 3, 4, 4}, 0, &out),
                 CLT_ERR_SHAPE_MISMATCH, "Expected a batch of 3D affine matrices of shape Nx3x4");
    assert_error(clt_affine_grid(t, 4, (int64_t[]){2, 1, 0, 4}, 0, &out),
                 CLT_ERR_INVALID_ARGUMENT, "Expected non-zero, positive output size");
    cr_assert_null(out);
    clt_tensor_free(t);
    free(th);
}

/* An identity affine_grid (a spatial transformer's initial transform)
 * puts every point on a pixel's centre, where bilinear sampling has a
 * kink: the grid's gradient is the one-sided slope of the side floor()
 * picks, W / 2 (x[j + 1] - x[j]) or, where the coordinate rounds to just
 * below j, W / 2 (x[j] - x[j - 1]) ((W - 1) / 2 for align_corners; zeros
 * padding reads 0 outside).  Which
 * side is settled by the last bit of the grid (torch's linspace) and of
 * the unnormalised coordinate (its CPU kernel's fused (g + 1) W / 2 - 0.5),
 * and torch 1.13 on this x86-64 machine reads from the left at the
 * columns listed (found by running it on x[j] = j^2, whose slopes all
 * differ).  The reference is built from those columns in float64; the
 * row's gradient, one row of height 1, is H / 2 (0 - x[j]) (0 with
 * align_corners); theta's gradient sums both over the base grid. */
Test(spatial, identity_grid_reads_pixel_centres_as_torch)
{
    clt_device *dev = get_device("cpu");
    static const struct {
        clt_dtype dt;
        int64_t W;
        int align;
        int left[8], nleft;
    } cases[] = {
        {CLT_FLOAT64, 28, 0, {0, 1, 4, 9, 13, 14, 15}, 7}, {CLT_FLOAT64, 28, 1, {0}, 0},
        {CLT_FLOAT64, 16, 0, {0}, 0},                   {CLT_FLOAT64, 16, 1, {1, 2}, 2},
        {CLT_FLOAT32, 28, 0, {0, 2, 6, 15}, 4},         {CLT_FLOAT32, 28, 1, {3, 6, 18}, 3},
        {CLT_FLOAT32, 16, 0, {0}, 0},                   {CLT_FLOAT32, 16, 1, {1, 2, 8, 9, 10, 12}, 6},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t W = cases[c].W;
        int align = cases[c].align;
        double x[28], th[6] = {1, 0, 0, 0, 1, 0}, want[56], wth[6] = {0};
        for (int64_t j = 0; j < W; j++)
            x[j] = (double)(j * j);
        double sx = align ? (double)(W - 1) / 2 : (double)W / 2, sy = align ? 0 : 0.5;
        for (int64_t j = 0; j < W; j++) {
            bool left = false;
            for (int l = 0; l < cases[c].nleft; l++)
                left = left || cases[c].left[l] == j;
            double next = j + 1 < W ? x[j + 1] : 0, prev = j > 0 ? x[j - 1] : 0;
            want[2 * j] = sx * (left ? x[j] - prev : next - x[j]);
            want[2 * j + 1] = sy * (0 - x[j]);
            double base = W == 1 ? 0 : align ? -1 + 2.0 * (double)j / (double)(W - 1)
                                             : (-1 + 2.0 * (double)j / (double)(W - 1)) *
                                                   (double)(W - 1) / (double)W;
            for (int r = 0; r < 2; r++) { /* d/dtheta[r] of theta[r] . (base, 0, 1) */
                wth[r * 3] += want[2 * j + r] * base;
                wth[r * 3 + 2] += want[2 * j + r];
            }
        }
        int64_t xs[4] = {1, 1, 1, W};
        clt_tensor *xt = tensor_of(dev, cases[c].dt, 4, xs, x);
        clt_tensor *t = tensor_of(dev, cases[c].dt, 3, (int64_t[]){1, 2, 3}, th);
        clt_tensor *g = NULL, *y = NULL, *sum = NULL, *dg = NULL, *dt = NULL;
        CHECK(clt_set_requires_grad(t, 1));
        CHECK(clt_affine_grid(t, 4, xs, align, &g));
        CHECK(clt_retain_grad(g));
        CHECK(clt_grid_sample(xt, g, CLT_GRID_BILINEAR, CLT_GRID_PAD_ZEROS, align, &y));
        CHECK(clt_sum(y, &sum));
        CHECK(clt_backward(sum, NULL, 0));
        CHECK(clt_grad(g, &dg));
        CHECK(clt_grad(t, &dt));
        /* float32 rounds the interpolation weights (the row's slope
         * mixes two pixels by them); a slope of the wrong side is off by
         * a whole difference of pixels */
        double tol = cases[c].dt == CLT_FLOAT32 ? 1e-6 : 1e-12, *got = read_as_f64(dg);
        for (int64_t k = 0; k < 2 * W; k++)
            cr_assert(fabs(got[k] - want[k]) <= tol * (1 + fabs(want[k])),
                      "%s W %lld align %d: the grid's gradient %lld (%s) is %.17g, want %.17g",
                      clt_dtype_name(cases[c].dt), (long long)W, align, (long long)(k / 2),
                      k % 2 ? "y" : "x", got[k], want[k]);
        free(got);
        got = read_as_f64(dt);
        for (int k = 0; k < 6; k++)
            cr_assert(fabs(got[k] - wth[k]) <= 1e-4 * (1 + fabs(wth[k])),
                      "%s W %lld align %d: theta's gradient %d is %.17g, want %.17g",
                      clt_dtype_name(cases[c].dt), (long long)W, align, k, got[k], wth[k]);
        free(got);
        clt_tensor *objs[] = {xt, t, g, y, sum, dg, dt};
        for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
            clt_tensor_free(objs[i]);
    }
}

/* ---- layers --------------------------------------------------------------------------- */

static void assert_same(const clt_tensor *a, const clt_tensor *b)
{
    cr_assert_eq(clt_tensor_numel(a), clt_tensor_numel(b));
    double *va = read_as_f64(a), *vb = read_as_f64(b);
    cr_assert(memcmp(va, vb, (size_t)clt_tensor_numel(a) * sizeof *va) == 0);
    free(va);
    free(vb);
}

Test(spatial, upsample_layers)
{
    clt_device *dev = get_device("cpu");
    double *xv = spread_doubles(2 * 3 * 4 * 5 * 2, 51);
    clt_tensor *x5 = tensor_of(dev, CLT_FLOAT32, 5, (int64_t[]){2, 3, 4, 5, 2}, xv);
    clt_tensor *x4 = tensor_of(dev, CLT_FLOAT32, 4, (int64_t[]){2, 3, 4, 5}, xv);
    clt_module *m = NULL;
    clt_tensor *a = NULL, *b = NULL;
    double sf[3] = {1.5, 0.5, 2.5};
    CHECK(clt_upsample_nd_layer(3, NULL, sf, CLT_INTERP_TRILINEAR, 1, 1, &m));
    CHECK(clt_module_forward(m, x5, &a));
    CHECK(clt_interpolate_nd(x5, NULL, sf, CLT_INTERP_TRILINEAR, 1, 1, &b));
    assert_same(a, b);
    clt_tensor_free(a);
    clt_tensor_free(b);
    a = (clt_tensor *)0x1;
    assert_error(clt_module_forward(m, x4, &a), CLT_ERR_SHAPE_MISMATCH,
                 "Upsample: Got 4D input, but trilinear mode needs 5D input");
    cr_assert_null(a);
    clt_module_free(m);
    CHECK(clt_upsample_layer((int64_t[]){7, 3}, NULL, CLT_INTERP_BICUBIC, 0, &m));
    CHECK(clt_module_forward(m, x4, &a));
    CHECK(clt_interpolate_nd(x4, (int64_t[]){7, 3}, NULL, CLT_INTERP_BICUBIC, 0, 0, &b));
    assert_same(a, b);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_module_free(m);
    CHECK(clt_upsampling_bilinear2d_layer(NULL, (double[]){2, 2}, &m));
    CHECK(clt_module_forward(m, x4, &a));
    CHECK(clt_interpolate(x4, NULL, (double[]){2, 2}, CLT_INTERP_BILINEAR, 1, &b));
    assert_same(a, b);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_module_free(m);
    CHECK(clt_upsampling_nearest2d_layer((int64_t[]){8, 10}, NULL, &m));
    CHECK(clt_module_forward(m, x4, &a));
    CHECK(clt_interpolate(x4, (int64_t[]){8, 10}, NULL, CLT_INTERP_NEAREST, 0, &b));
    assert_same(a, b);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_module_free(m);
    m = (clt_module *)0x1;
    assert_error(clt_upsample_nd_layer(1, (int64_t[]){4}, NULL, CLT_INTERP_BILINEAR, 0, 0, &m),
                 CLT_ERR_INVALID_ARGUMENT, "Got 3D input, but bilinear mode needs 4D input");
    cr_assert_null(m);
    assert_error(clt_upsample_nd_layer(4, (int64_t[]){4}, NULL, CLT_INTERP_NEAREST, 0, 0, &m),
                 CLT_ERR_INVALID_ARGUMENT, "1, 2 or 3");
    assert_error(clt_upsample_nd_layer(2, (int64_t[]){4, 0}, NULL, CLT_INTERP_NEAREST, 0, 0, &m),
                 CLT_ERR_INVALID_ARGUMENT, "output sizes should be greater than 0");
    cr_assert_null(m);
    clt_tensor_free(x4);
    clt_tensor_free(x5);
    free(xv);
}

/* An output size no memory holds along one dim, with no elements in the
 * others: refused with a status, not tables built from overflowed counts
 * (the fuzz target found a write past them). */
Test(spatial, interpolate_huge_size_refused)
{
    clt_device *dev = get_device("cpu");
    const int64_t shape[3] = {0, 1, 5}, huge[1] = {((int64_t)1 << 62) + 1};
    const clt_interp_mode modes[3] = {CLT_INTERP_LINEAR, CLT_INTERP_NEAREST, CLT_INTERP_LINEAR};
    for (int k = 0; k < 3; k++) {
        clt_tensor *x = NULL, *y = (clt_tensor *)&k;
        CHECK(clt_zeros(dev, k == 2 ? CLT_FLOAT16 : CLT_FLOAT32, 3, shape, &x));
        clt_status st = clt_interpolate_nd(x, huge, NULL, modes[k], 0, 0, &y);
        cr_expect_neq(st, CLT_OK, "mode %d: a size of 2^62 + 1 accepted", k);
        cr_expect_null(y);
        cr_expect(strlen(clt_last_error()) > 0);
        clt_tensor_free(x);
    }
}
