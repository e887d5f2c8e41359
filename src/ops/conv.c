/* conv.c: 2-D and 3-D convolution as im2col + GEMM (cl/conv.cl, then cltensor's CPU
 * GEMM for float32 and float64 on CPU devices, clt__matmul otherwise), its
 * backward pass, and max, average and adaptive average pooling with
 * theirs, and adaptive max pooling's forward (its backward is a
 * scatter_add: src/autograd/grad_conv.c). */
#include <stdio.h>
#include <string.h>

#include "ops/conv.h"

/* Must match clt_conv_geom in cl/conv.cl. */
typedef struct geom {
    int64_t N, C, H, W;
    int64_t O, G, Cg, Og;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t Ho, Wo;
    int64_t K, L;
    int64_t off0, off1, off2;
    int64_t flag;
    int64_t D, kd, sd, pd, dd, Do; /* a convolution's depth: flat_geom() in 2-D */
    int64_t nd;                    /* a convolution's spatial dimensions, 2 or 3 */
} geom;

size_t clt__conv2d_cols_limit = (size_t)256 << 20;

/* a * b * c * d of sizes (>= 0), or INT64_MAX when that passes int64 (a
 * pooling window of 2^31 x 2^31 over C x C "weights", a patch matrix of
 * more bytes than int64 counts). */
static int64_t product4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t p;
    if (__builtin_mul_overflow(a, b, &p) || __builtin_mul_overflow(p, c, &p) ||
        __builtin_mul_overflow(p, d, &p))
        return INT64_MAX;
    return p;
}

/* Images per chunk, so that a chunk's patch matrix stays under
 * clt__conv2d_cols_limit bytes (one image at least). */
static int64_t chunk_images(const geom *g, clt_dtype dtype)
{
    int64_t per = product4(g->G, g->K, g->L, (int64_t)clt_dtype_size(dtype));
    int64_t nb = per > 0 ? (int64_t)clt__conv2d_cols_limit / per : g->N;
    return nb < 1 ? 1 : nb > g->N ? g->N : nb;
}

/* small: every index of the launch fits 32 bits (CONV_I32 in cl/conv.cl). */
static const char *options(clt_dtype dtype, bool small)
{
    static clt__opts_slot slots[2][CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[small][dtype], "T", dtype, NULL, dtype,
                            small ? " -DCONV_I32" : "");
}

/* Whether every element index a kernel computes from g (inputs, outputs,
 * patch matrices, offsets included) stays below 2^31. */
static bool fits32(const geom *g)
{
    const int64_t lim = INT32_MAX / 2;
    /* pooling leaves the depth 0: it has none */
    int64_t D = g->D > 1 ? g->D : 1, kd = g->kd > 1 ? g->kd : 1;
    int64_t big = product4(g->N, g->C, product4(D, g->H, 1, 1), g->W);
    int64_t sizes[4] = {product4(g->N, g->O, g->L, 1), product4(g->G, g->K, g->N, g->L),
                        product4(g->N, g->C, g->L, 1),
                        product4(g->O, g->Cg, g->kh, product4(g->kw, kd, 1, 1))};
    for (int k = 0; k < 4; k++)
        big = sizes[k] > big ? sizes[k] : big;
    int64_t off = g->off0 > g->off1 ? g->off0 : g->off1;
    off = g->off2 > off ? g->off2 : off;
    return big < lim && off < lim && g->H + g->ph < lim && g->W + g->pw < lim &&
           D + g->pd < lim;
}

/* One work-item per `items`, kernel `name` of cl/conv.cl; the last
 * argument is the geometry. */
static clt_status launch(clt_device *dev, clt_dtype dtype, const char *name, int64_t items,
                         size_t nargs, const clt__arg *args, const char *fn)
{
    if (items <= 0)
        return CLT_OK;
    const char *opts = options(dtype, fits32((const geom *)args[nargs - 1].ptr));
    if (opts == NULL)
        return clt_last_status();
    size_t gws = (size_t)items;
    return clt__error_in(clt__launch(dev, "conv", opts, name, 1, &gws, NULL, nargs, args),
                         fn);
}

/* Kernel `name` over `rows` rows of `width` outputs: on CPU devices, when
 * every index fits 32 bits, its variant name_chunk takes whole rows in
 * work-groups of one (the last argument is then the rows per work-item);
 * elsewhere one work-item per row.  args has room for that last one. */
static clt_status launch_rows(clt_device *dev, clt_dtype dtype, const char *name, int64_t rows,
                              int64_t width, size_t nargs, clt__arg *args, const char *fn)
{
    const geom *g = (const geom *)args[nargs - 1].ptr;
    cl_ulong chunk = clt__chunk_size(dev, rows * width);
    if (chunk == 0 || rows <= 0 || !fits32(g))
        return launch(dev, dtype, name, rows, nargs, args, fn);
    const char *opts = options(dtype, true);
    if (opts == NULL)
        return clt_last_status();
    char kname[64];
    snprintf(kname, sizeof kname, "%s_chunk", name);
    /* At least eight work-items per compute unit: these rows cost more
     * than the elementwise work clt__chunk_size is sized for, and a
     * launch of two or three work-items waited for whichever worker thread
     * the machine's other load had delayed. */
    cl_ulong cus = dev->info.compute_units ? dev->info.compute_units : 1;
    cl_ulong per = (chunk + (cl_ulong)width - 1) / (cl_ulong)(width > 0 ? width : 1);
    cl_ulong spread = ((cl_ulong)rows + 8 * cus - 1) / (8 * cus);
    if (spread < per)
        per = spread;
    size_t gws = (size_t)(((cl_ulong)rows + per - 1) / per), lws = 1;
    clt__arg all[8];
    memcpy(all, args, nargs * sizeof *args);
    all[nargs] = CLT__ARG(per);
    return clt__error_in(clt__launch(dev, "conv", opts, kname, 1, &gws, &lws, nargs + 1, all),
                         fn);
}

/* C[g] = op(A[g]) op(B[g]) for g < G, where A[g] is the row-major [ar, ac]
 * matrix at a->offset + g ar ac of the contiguous a (B likewise) and op
 * transposes when t* is set: a new contiguous [G, M, N].  Float32 and float64
 * on CPU devices go to the CPU GEMM kernel directly, the rest to clt__matmul. */
static clt_status gemm(int64_t G, bool ta, const clt_tensor *a, int64_t ar, int64_t ac, bool tb,
                       const clt_tensor *b, int64_t br, int64_t bc, clt_tensor **out,
                       const char *fn)
{
    clt_status st = CLT_OK;
    int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    clt_tensor *av = NULL, *bv = NULL, *at = NULL, *bt = NULL;
    *out = NULL;
    if (clt__gemm_cpu_suitable(a->dev, a->dtype)) {
        int64_t shape[3] = {G, M, N};
        CLT__TRY(clt__temp_new(fn, "a product of patches", a->dev, a->dtype, 3, shape, out));
        CLT__TRY(clt__error_in(
            clt__gemm_cpu_auto(a->dev, a->dtype, ta, tb, (size_t)M, (size_t)N, (size_t)K,
                               clt__mem(a), (size_t)a->offset, (size_t)ac, (size_t)(ar * ac),
                               clt__mem(b), (size_t)b->offset, (size_t)bc, (size_t)(br * bc),
                               clt__mem(*out), 0, (size_t)N, (size_t)(M * N), (size_t)G),
            fn));
        return CLT_OK;
    }
    int64_t as[3] = {G, ar, ac}, ast[3] = {ar * ac, ac, 1};
    int64_t bs[3] = {G, br, bc}, bst[3] = {br * bc, bc, 1};
    CLT__TRY(clt__tensor_view(a, 3, as, ast, a->offset, &av));
    CLT__TRY(clt__tensor_view(b, 3, bs, bst, b->offset, &bv));
    if (ta)
        CLT__TRY(clt__transpose(av, 1, 2, &at, fn));
    if (tb)
        CLT__TRY(clt__transpose(bv, 1, 2, &bt, fn));
    CLT__TRY(clt__matmul(at ? at : av, bt ? bt : bv, out, fn));
done:
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    clt_tensor_free(av);
    clt_tensor_free(bv);
    clt_tensor_free(at);
    clt_tensor_free(bt);
    return st;
}

/* ---- convolution ------------------------------------------------------------------ */

/* A geometry whose depth is the identity (D, kd, sd, dd, Do 1, pd 0): 2-D
 * convolutions and the blocks of unfold and fold. */
static geom flat_geom(void)
{
    geom g = {0};
    g.D = g.kd = g.sd = g.dd = g.Do = 1;
    g.nd = 2;
    return g;
}

/* The nd values v as "{a, b}" or "{a, b, c}" (sep ", ") or "a x b x c"
 * (sep " x ", without braces). */
static const char *list_str(char *buf, size_t len, int nd, const int64_t *v, const char *sep)
{
    bool braces = sep[0] == ',';
    size_t n = (size_t)snprintf(buf, len, "%s", braces ? "{" : "");
    for (int d = 0; d < nd && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", d ? sep : "", (long long)v[d]);
    if (braces && n < len)
        snprintf(buf + n, len - n, "}");
    return buf;
}

/* The padded input and the dilated kernel's extent along one dimension;
 * false when either passes int64 (user-given padding or dilation). */
static bool extents(int64_t in, int64_t k, int64_t pad, int64_t dil, int64_t *padded,
                    int64_t *span)
{
    int64_t p2 = 0, dk = 0;
    return !__builtin_mul_overflow(pad, 2, &p2) && !__builtin_add_overflow(in, p2, padded) &&
           !__builtin_mul_overflow(dil, k - 1, &dk) && !__builtin_add_overflow(dk, 1, span);
}

static clt_status extents_error(const char *fn, const clt_tensor *x, int nd, const int64_t *k,
                                const int64_t *pad, const int64_t *dil)
{
    char s1[160], s2[64], s3[64], s4[64];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: the padded input or the dilated kernel passes the int64 range "
                      "(input %s, kernel %s, padding %s, dilation %s)",
                      fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                      list_str(s2, sizeof s2, nd, k, ", "), list_str(s3, sizeof s3, nd, pad, ", "),
                      list_str(s4, sizeof s4, nd, dil, ", "));
}

/* The devices and dtypes of a convolution's input, weight and bias (or
 * NULL), with PyTorch's message. */
static clt_status operands_check(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                                 const char *fn)
{
    clt_status st;
    if ((st = clt__same_device(x, w, fn)) != CLT_OK ||
        (b && (st = clt__same_device(x, b, fn)) != CLT_OK))
        return st;
    /* float16 and bfloat16 operands reach here only mixed with others
     * (autograd runs all-half convolutions in float32): the mismatch is
     * what is wrong */
    if (!clt__dtype_is_half(x->dtype) && (st = clt__check_floating(x, "input", fn)) != CLT_OK)
        return st;
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Input type (%s), weight type (%s) and bias type (%s) should be "
                          "the same",
                          fn, clt_dtype_name(x->dtype), clt_dtype_name(w->dtype),
                          b ? clt_dtype_name(b->dtype) : "none");
    return clt__check_floating(x, "input", fn);
}

/* A convolution's stride, padding, dilation and groups, with PyTorch's
 * messages. */
static clt_status settings_check(const clt__conv_opts *o, const char *fn)
{
    char s[64];
    const int nd = o->nd;
    for (int d = 0; d < nd; d++) {
        if (o->stride[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: non-positive stride is not supported (stride %s)", fn,
                              list_str(s, sizeof s, nd, o->stride, ", "));
        if (o->padding[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: negative padding is not supported (padding %s)", fn,
                              list_str(s, sizeof s, nd, o->padding, ", "));
        if (o->dilation[d] <= 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: dilation should be greater than zero (dilation %s)", fn,
                              list_str(s, sizeof s, nd, o->dilation, ", "));
    }
    if (o->groups <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: non-positive groups is not supported (groups %lld)", fn,
                          (long long)o->groups);
    return CLT_OK;
}

/* Fills in g's spatial part from the nd sizes of the convolution's input
 * in, its kernel k and its output out, and o's settings: the last two
 * dimensions are H and W, a third before them D. */
static void geom_spatial(geom *g, const int64_t *in, const int64_t *k, const int64_t *out,
                         const clt__conv_opts *o)
{
    const int nd = o->nd, z = nd - 2; /* the index of H */
    g->nd = nd;
    if (nd == 3) {
        g->D = in[0], g->kd = k[0], g->sd = o->stride[0], g->pd = o->padding[0];
        g->dd = o->dilation[0], g->Do = out[0];
    }
    g->H = in[z], g->W = in[z + 1];
    g->kh = k[z], g->kw = k[z + 1];
    g->sh = o->stride[z], g->sw = o->stride[z + 1];
    g->ph = o->padding[z], g->pw = o->padding[z + 1];
    g->dh = o->dilation[z], g->dw = o->dilation[z + 1];
    g->Ho = out[z], g->Wo = out[z + 1];
    g->K = g->Cg * g->kd * g->kh * g->kw;
    g->L = g->Do * g->Ho * g->Wo;
}

/* The shape [N, C, (D,) H, W] of g's input (nd + 2 sizes into s). */
static void input_shape(const geom *g, int64_t *s)
{
    int k = 0;
    s[k++] = g->N, s[k++] = g->C;
    if (g->nd == 3)
        s[k++] = g->D;
    s[k++] = g->H, s[k] = g->W;
}

/* Checks a convolution's operands as PyTorch does and fills in the
 * geometry. */
static clt_status conv_check(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                             const clt__conv_opts *o, geom *g, const char *fn)
{
    char s1[160], s2[160], s3[64], s4[64];
    clt_status st;
    const int nd = o->nd;
    if ((st = operands_check(x, w, b, fn)) != CLT_OK)
        return st;
    if ((st = settings_check(o, fn)) != CLT_OK)
        return st;
    if (w->ndim != nd + 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected weight to be %d-dimensional [out_channels, "
                          "in_channels / groups, %s], but got weight of size %s",
                          fn, nd + 2, nd == 3 ? "kD, kH, kW" : "kH, kW",
                          clt__shape_str(s1, sizeof s1, w->ndim, w->shape));
    if (x->ndim != nd + 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected %dD (unbatched) or %dD (batched) input to conv%dd, but "
                          "got input of size: %s",
                          fn, nd + 1, nd + 2, nd, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    int64_t G = o->groups, O = w->shape[0];
    if (O % G != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given groups=%lld, expected weight to be divisible by %lld at "
                          "dimension 0, but got weight of size %s instead",
                          fn, (long long)G, (long long)G,
                          clt__shape_str(s1, sizeof s1, w->ndim, w->shape));
    if (x->shape[1] != w->shape[1] * G)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given groups=%lld, weight of size %s, expected input%s to have "
                          "%lld channels, but got %lld channels instead",
                          fn, (long long)G, clt__shape_str(s1, sizeof s1, w->ndim, w->shape),
                          clt__shape_str(s2, sizeof s2, x->ndim, x->shape),
                          (long long)(w->shape[1] * G), (long long)x->shape[1]);
    if (b && (b->ndim != 1 || b->shape[0] != O))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given weight of size %s, expected bias to be 1-dimensional with "
                          "%lld elements, but got bias of size %s instead",
                          fn, clt__shape_str(s1, sizeof s1, w->ndim, w->shape), (long long)O,
                          clt__shape_str(s2, sizeof s2, b->ndim, b->shape));
    const int64_t *in = x->shape + 2, *k = w->shape + 2;
    int64_t padded[3], span[3], out[3];
    bool small = false;
    for (int d = 0; d < nd; d++) {
        if (!extents(in[d], k[d], o->padding[d], o->dilation[d], &padded[d], &span[d]))
            return extents_error(fn, x, nd, k, o->padding, o->dilation);
        small = small || padded[d] < span[d];
    }
    if (small)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Calculated padded input size per channel: (%s). Kernel size: "
                          "(%s). Kernel size can't be greater than actual input size (input %s, "
                          "weight %s)",
                          fn, list_str(s3, sizeof s3, nd, padded, " x "),
                          list_str(s4, sizeof s4, nd, span, " x "),
                          clt__shape_str(s1, sizeof s1, x->ndim, x->shape),
                          clt__shape_str(s2, sizeof s2, w->ndim, w->shape));
    /* a kernel of size 0 with a huge dilation spans below zero: the
     * differences can pass the int64 range */
    for (int d = 0; d < nd; d++) {
        int64_t r = 0;
        if (__builtin_sub_overflow(padded[d], span[d], &r))
            return extents_error(fn, x, nd, k, o->padding, o->dilation);
        out[d] = r / o->stride[d] + 1;
    }
    /* the output's size, before anything multiplies its sizes */
    int64_t oshape[5] = {x->shape[0], O};
    memcpy(oshape + 2, out, (size_t)nd * sizeof *out);
    if ((st = clt__check_shape(nd + 2, oshape, fn)) != CLT_OK)
        return st;
    *g = flat_geom();
    g->N = x->shape[0], g->C = x->shape[1];
    g->O = O, g->G = G, g->Cg = w->shape[1], g->Og = O / G;
    geom_spatial(g, in, k, out, o);
    return CLT_OK;
}

/* The patches of g.N images of the contiguous xc from image n0 on, as cols
 * [G][K][g.N][L] (a new 1-D tensor). */
static clt_status im2col(const clt_tensor *xc, geom g, int64_t n0, clt_tensor **cols,
                         const char *fn)
{
    int64_t n = g.G * g.K * g.N * g.L;
    clt_status st = clt__temp_new(fn, "the input's patches", xc->dev, xc->dtype, 1, &n, cols);
    if (st != CLT_OK)
        return st;
    g.off0 = xc->offset + n0 * g.C * g.D * g.H * g.W;
    cl_mem mx = clt__mem(xc), mc = clt__mem(*cols);
    cl_ulong chunk = clt__chunk_size(xc->dev, n);
    if (chunk && n > 0 && fits32(&g) && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
        g.sd == 1 && g.dd == 1) {
        /* CPU devices, stride and dilation 1: whole patch rows of an image */
        clt__arg args[] = {CLT__ARG(mx), CLT__ARG(mc), CLT__ARG(mc), CLT__ARG(g)};
        st = launch_rows(xc->dev, xc->dtype, "im2col_plane", g.G * g.K * g.N, g.L, 4, args, fn);
    } else if (chunk && n > 0 && fits32(&g)) { /* CPU devices: chunks in work-groups of one */
        const char *opts = options(xc->dtype, true);
        size_t gws = (size_t)(((cl_ulong)n + chunk - 1) / chunk), lws = 1;
        clt__arg args[] = {CLT__ARG(mx), CLT__ARG(mc), CLT__ARG(g), CLT__ARG(chunk)};
        st = opts ? clt__error_in(
                        clt__launch(xc->dev, "conv", opts, "im2col_chunk", 1, &gws, &lws, 4, args),
                        fn)
                  : clt_last_status();
    } else {
        clt__arg args[] = {CLT__ARG(mx), CLT__ARG(mc), CLT__ARG(g)};
        st = launch(xc->dev, xc->dtype, "im2col", g.G * g.K * g.N * g.Do * g.Ho, 3, args, fn);
    }
    if (st != CLT_OK) {
        clt_tensor_free(*cols);
        *cols = NULL;
    }
    return st;
}

/* conv2d of the checked x, w and b (or NULL) over the geometry g, whose
 * output size may be below the one x's size gives (conv_transpose2d's
 * input gradient, when its output_padding reaches the stride). */
static clt_status conv_forward(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                               geom g, clt_tensor **out, clt_tensor **cols_keep, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *xc = NULL, *wc = NULL, *bc = NULL, *cols = NULL, *Y = NULL, *r = NULL;
    int64_t shape[5] = {g.N, g.O, g.Do, g.Ho, g.Wo};
    if (g.nd == 2)
        shape[2] = g.Ho, shape[3] = g.Wo;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, g.nd + 2, shape, &r));
    if (r->numel > 0) {
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &xc));
        CLT__TRY(clt__contiguous_as(fn, w, w->dtype, &wc));
        if (b)
            CLT__TRY(clt__contiguous_as(fn, b, b->dtype, &bc));
        g.flag = bc != NULL;
        g.off1 = bc ? bc->offset : 0;
        int64_t nb = chunk_images(&g, x->dtype);
        for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
            geom c = g;
            c.N = g.N - n0 < nb ? g.N - n0 : nb;
            c.off2 = n0 * g.O * g.L;
            CLT__TRY(im2col(xc, c, n0, &cols, fn));
            /* Y[g] = W[g] [Og, K] @ cols[g] [K, N L]: the images in one product */
            CLT__TRY(gemm(g.G, false, wc, g.Og, g.K, false, cols, g.K, c.N * g.L, &Y, fn));
            cl_mem my = clt__mem(Y), mb = bc ? clt__mem(bc) : my, mo = clt__mem(r);
            clt__arg args[] = {CLT__ARG(my), CLT__ARG(mb), CLT__ARG(mo), CLT__ARG(c)};
            CLT__TRY(launch_rows(x->dev, x->dtype, "conv_out", c.N * g.O, g.L, 4, args, fn));
            if (cols_keep && c.N == g.N) { /* one chunk: the backward reuses it */
                *cols_keep = cols;
                cols = NULL;
            }
            clt_tensor_free(cols);
            clt_tensor_free(Y);
            cols = Y = NULL;
        }
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(wc);
    clt_tensor_free(bc);
    clt_tensor_free(cols);
    clt_tensor_free(Y);
    clt_tensor_free(r);
    return st;
}

clt_status clt__conv(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                     const clt__conv_opts *o, clt_tensor **out, clt_tensor **cols_keep,
                     const char *fn)
{
    if (cols_keep)
        *cols_keep = NULL;
    geom g;
    clt_status st = conv_check(x, w, b, o, &g, fn);
    return st == CLT_OK ? conv_forward(x, w, b, g, out, cols_keep, fn) : st;
}

/* db[o], the sum of the contiguous gc [g.N, g.O, g.L] over its first and
 * last dimensions: a new tensor [g.O]. */
static clt_status bias_grad(const clt_tensor *gc, geom g, clt_tensor **out, const char *fn)
{
    clt_status st = clt__result_new(fn, gc->dev, gc->dtype, 1, &g.O, out);
    if (st != CLT_OK)
        return st;
    g.off0 = gc->offset;
    cl_mem mg = clt__mem(gc), mr = clt__mem(*out);
    clt__arg args[] = {CLT__ARG(mg), CLT__ARG(mr), CLT__ARG(g)};
    st = launch(gc->dev, gc->dtype, "conv_bias_grad", g.O, 3, args, fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* The gradients of a convolution over the geometry g from gout: of its
 * input (the transposed product and col2im, adding bias [C] when it is not
 * NULL: conv_transpose2d's forward), of its weight (x, its input, is read
 * only for that) and of its bias; each of gx, gw, gb may be NULL. */
static clt_status conv_backward(const clt_tensor *gout, const clt_tensor *x, const clt_tensor *w,
                                const clt_tensor *bias, geom g, const clt_tensor *cols_saved,
                                clt_tensor **gx, clt_tensor **gw, clt_tensor **gb,
                                const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *gc = NULL, *Gp = NULL, *wc = NULL, *xc = NULL, *cols = NULL;
    clt_tensor *dcols = NULL, *rx = NULL, *rb = NULL, *dw = NULL, *part = NULL, *sum = NULL;
    CLT__TRY(clt__contiguous_as(fn, gout, w->dtype, &gc));
    if (gx) {
        int64_t xs[5];
        input_shape(&g, xs);
        CLT__TRY(clt__result_new(fn, w->dev, w->dtype, g.nd + 2, xs, &rx));
        if (rx->numel > 0 && (g.L == 0 || g.O == 0))
            CLT__TRY(clt__fill_value(rx, 0.0));
    }
    bool want_gx = gx && rx->numel > 0 && g.L > 0 && g.O > 0;
    bool want_gw = gw && w->numel > 0 && g.N * g.L > 0;
    if (want_gx)
        CLT__TRY(clt__contiguous_as(fn, w, w->dtype, &wc));
    if (want_gw)
        CLT__TRY(clt__contiguous_as(fn, x, w->dtype, &xc));
    int64_t nb = chunk_images(&g, w->dtype);
    for (int64_t n0 = 0; (want_gx || want_gw) && n0 < g.N; n0 += nb) {
        geom c = g;
        c.N = g.N - n0 < nb ? g.N - n0 : nb;
        /* this chunk's gout as [G][Og][N][L], the layout of the forward product */
        int64_t n = g.O * c.N * g.L;
        CLT__TRY(clt__temp_new(fn, "the output gradient's patches", w->dev, w->dtype, 1, &n,
                               &Gp));
        c.off0 = gc->offset + n0 * g.O * g.L;
        cl_mem mg = clt__mem(gc), mp = clt__mem(Gp);
        clt__arg pa[] = {CLT__ARG(mg), CLT__ARG(mp), CLT__ARG(mp), CLT__ARG(c)};
        CLT__TRY(launch_rows(w->dev, w->dtype, "conv_gout_perm", g.O * c.N, g.L, 4, pa, fn));
        if (want_gx) {
            /* dcols[g] = W[g]^T [K, Og] @ gout[g] [Og, N L], then summed into dx */
            CLT__TRY(gemm(g.G, true, wc, g.Og, g.K, false, Gp, g.Og, c.N * g.L, &dcols, fn));
            c.off2 = n0 * g.C * g.D * g.H * g.W;
            cl_mem md = clt__mem(dcols), mr = clt__mem(rx), mb = bias ? clt__mem(bias) : mr;
            c.flag = bias != NULL;
            c.off1 = bias ? bias->offset : 0;
            clt__arg ca[] = {CLT__ARG(md), CLT__ARG(mr), CLT__ARG(mb), CLT__ARG(c)};
            CLT__TRY(launch_rows(w->dev, w->dtype, "col2im", c.N * g.C * g.D * g.H, g.W, 4, ca,
                                 fn));
        }
        if (want_gw) {
            /* dW[g] = gout[g] [Og, N L] @ cols[g]^T [N L, K]: the images summed
             * in the product's fixed order, chunks one after another */
            if (cols_saved && c.N == g.N)
                CLT__TRY(clt__tensor_view(cols_saved, cols_saved->ndim, cols_saved->shape,
                                          cols_saved->strides, cols_saved->offset, &cols));
            else
                CLT__TRY(im2col(xc, c, n0, &cols, fn));
            CLT__TRY(gemm(g.G, false, Gp, g.Og, c.N * g.L, true, cols, g.K, c.N * g.L, &part,
                          fn));
            if (dw) {
                CLT__TRY(clt__add_into(NULL, dw, part, &sum, fn));
                clt_tensor_free(dw);
                clt_tensor_free(part);
                dw = sum;
                part = sum = NULL;
            } else {
                dw = part;
                part = NULL;
            }
        }
        if (gb && c.N == g.N) {
            /* one chunk: the bias gradient is the sum of each row of Gp
             * [O, N L], contiguous (the reduction's vector loop) */
            clt_tensor *rows = NULL;
            CLT__TRY(clt__tensor_view(Gp, 2, (int64_t[]){g.O, g.N * g.L},
                                      (int64_t[]){g.N * g.L, 1}, Gp->offset, &rows));
            st = clt__sum_dim(rows, 1, 0, &rb, fn);
            clt_tensor_free(rows);
            CLT__TRY(st);
        }
        clt_tensor_free(Gp);
        clt_tensor_free(dcols);
        clt_tensor_free(cols);
        Gp = dcols = cols = NULL;
    }
    if (gb && rb == NULL)
        CLT__TRY(bias_grad(gc, g, &rb, fn));
    if (gw) {
        if (dw)
            CLT__TRY(clt__view(dw, w->ndim, w->shape, gw, fn));
        else
            CLT__TRY(clt__error_in(clt__full(w->dev, w->dtype, w->ndim, w->shape, 0.0, gw), fn));
    }
    if (gx) {
        *gx = rx;
        rx = NULL;
    }
    if (gb) {
        *gb = rb;
        rb = NULL;
    }
done:
    if (st != CLT_OK) {
        if (gw) {
            clt_tensor_free(*gw);
            *gw = NULL;
        }
    }
    clt_tensor_free(gc);
    clt_tensor_free(Gp);
    clt_tensor_free(wc);
    clt_tensor_free(xc);
    clt_tensor_free(cols);
    clt_tensor_free(dcols);
    clt_tensor_free(rx);
    clt_tensor_free(rb);
    clt_tensor_free(dw);
    clt_tensor_free(part);
    clt_tensor_free(sum);
    return st;
}

clt_status clt__conv_backward(const clt_tensor *gout, const clt_tensor *x, const clt_tensor *w,
                              const clt__conv_opts *o, const clt_tensor *cols_saved,
                              clt_tensor **gx, clt_tensor **gw, clt_tensor **gb)
{
    const char *fn = "clt_backward"; /* a formula's step: the engine names the node */
    geom g;
    clt_status st = conv_check(x, w, NULL, o, &g, fn);
    return st == CLT_OK ? conv_backward(gout, x, w, NULL, g, cols_saved, gx, gw, gb, fn) : st;
}

/* ---- transposed convolution ----------------------------------------------------------- */

/* One output size of conv_transpose, (in - 1) s - 2 p + d (k - 1) + op + 1;
 * false when a step passes int64. */
static bool transposed_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op,
                            int64_t *out)
{
    int64_t a = 0, p2 = 0, dk = 0;
    return !__builtin_mul_overflow(in - 1, s, &a) && !__builtin_mul_overflow(p, 2, &p2) &&
           !__builtin_sub_overflow(a, p2, &a) && !__builtin_mul_overflow(d, k - 1, &dk) &&
           !__builtin_add_overflow(a, dk, &a) && !__builtin_add_overflow(a, op, &a) &&
           !__builtin_add_overflow(a, 1, out);
}

clt_status clt__output_padding_check(const clt__conv_opts *o, const char *fn)
{
    static const char *const names[3][3] = {
        {"width", "", ""}, {"height", "width", ""}, {"depth", "height", "width"}};
    const int nd = o->nd;
    for (int d = 0; d < nd; d++) {
        char s[64];
        if (o->output_padding[d] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: negative output_padding is not supported (output_padding "
                              "%s)",
                              fn, list_str(s, sizeof s, nd, o->output_padding, ", "));
        if (o->output_padding[d] >= o->stride[d] && o->output_padding[d] >= o->dilation[d]) {
            char msg[480];
            size_t n = 0;
            const char *const *nm = names[nd - 1];
            const struct {
                const char *what;
                const int64_t *v;
            } parts[3] = {{"output_padding", o->output_padding},
                          {"stride", o->stride},
                          {"dilation", o->dilation}};
            for (int p = 0; p < 3; p++)
                for (int e = 0; e < nd && n < sizeof msg; e++)
                    n += (size_t)snprintf(msg + n, sizeof msg - n, "%s%s_%s: %lld",
                                          p || e ? " " : "", parts[p].what, nm[e],
                                          (long long)parts[p].v[e]);
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: output padding must be smaller than either stride or "
                              "dilation, but got %s",
                              fn, msg);
        }
    }
    return CLT_OK;
}

/* Checks conv_transpose's operands (x nd + 2 dims) as PyTorch does and
 * fills in the geometry of the convolution whose input gradient it is:
 * that convolution's input is the result [N, Cout, (Do,) Ho, Wo], its
 * output x [N, Cin, (D,) H, W], its weight w [Cin, Cout / G, (kD,) kH,
 * kW]. */
static clt_status transposed_check(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                                   const clt__conv_opts *o, geom *g, const char *fn)
{
    char s1[160], s2[160], s3[64], s4[64];
    clt_status st;
    const int nd = o->nd;
    if ((st = operands_check(x, w, b, fn)) != CLT_OK || (st = settings_check(o, fn)) != CLT_OK)
        return st;
    if ((st = clt__output_padding_check(o, fn)) != CLT_OK)
        return st;
    if (w->ndim != nd + 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected weight to be %d-dimensional [in_channels, "
                          "out_channels / groups, %s], but got weight of size %s",
                          fn, nd + 2, nd == 3 ? "kD, kH, kW" : "kH, kW",
                          clt__shape_str(s1, sizeof s1, w->ndim, w->shape));
    int64_t G = o->groups, Cin = w->shape[0], Cout = w->shape[1] * G;
    if (Cin % G != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given groups=%lld, expected weight to be divisible by %lld at "
                          "dimension 0, but got weight of size %s instead",
                          fn, (long long)G, (long long)G,
                          clt__shape_str(s1, sizeof s1, w->ndim, w->shape));
    if (x->shape[1] != Cin)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given transposed=1, weight of size %s, expected input%s to have "
                          "%lld channels, but got %lld channels instead",
                          fn, clt__shape_str(s1, sizeof s1, w->ndim, w->shape),
                          clt__shape_str(s2, sizeof s2, x->ndim, x->shape), (long long)Cin,
                          (long long)x->shape[1]);
    if (b && (b->ndim != 1 || b->shape[0] != Cout))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given transposed=1, weight of size %s, expected bias to be "
                          "1-dimensional with %lld elements, but got bias of size %s instead",
                          fn, clt__shape_str(s1, sizeof s1, w->ndim, w->shape), (long long)Cout,
                          clt__shape_str(s2, sizeof s2, b->ndim, b->shape));
    bool empty = Cin == 0;
    for (int d = 0; d < nd; d++)
        empty = empty || x->shape[2 + d] == 0;
    if (empty)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected input with channels and non-empty spatial sizes, but "
                          "got input of size %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    const int64_t *in = x->shape + 2, *k = w->shape + 2;
    int64_t out[3];
    bool small = false;
    for (int d = 0; d < nd; d++) {
        if (!transposed_size(in[d], k[d], o->stride[d], o->padding[d], o->dilation[d],
                             o->output_padding[d], &out[d]))
            return extents_error(fn, x, nd, k, o->padding, o->dilation);
        small = small || out[d] <= 0;
    }
    if (small)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given input size per channel: (%s). Calculated output size per "
                          "channel: (%s). Output size is too small",
                          fn, list_str(s3, sizeof s3, nd, in, " x "),
                          list_str(s4, sizeof s4, nd, out, " x "));
    int64_t oshape[5] = {x->shape[0], Cout};
    memcpy(oshape + 2, out, (size_t)nd * sizeof *out);
    if ((st = clt__check_shape(nd + 2, oshape, fn)) != CLT_OK)
        return st;
    /* the convolution's padded input, out + 2 padding, must fit int64 too
     * (it is then at least one dilated kernel wide) */
    for (int d = 0; d < nd; d++) {
        int64_t padded = 0, span = 0;
        if (!extents(out[d], k[d], o->padding[d], o->dilation[d], &padded, &span))
            return extents_error(fn, x, nd, k, o->padding, o->dilation);
    }
    *g = flat_geom();
    g->N = x->shape[0], g->C = Cout;
    g->O = Cin, g->G = G, g->Cg = w->shape[1], g->Og = Cin / G;
    geom_spatial(g, out, k, in, o);
    return CLT_OK;
}

clt_status clt__conv_transpose(const clt_tensor *x, const clt_tensor *w, const clt_tensor *b,
                               const clt__conv_opts *o, clt_tensor **out, const char *fn)
{
    geom g;
    clt_status st = transposed_check(x, w, b, o, &g, fn);
    clt_tensor *bc = NULL;
    if (st == CLT_OK && b)
        st = clt__contiguous_as(fn, b, b->dtype, &bc);
    if (st == CLT_OK)
        st = conv_backward(x, NULL, w, bc, g, NULL, out, NULL, NULL, fn);
    clt_tensor_free(bc);
    return st;
}

clt_status clt__conv_transpose_backward(const clt_tensor *gout, const clt_tensor *x,
                                        const clt_tensor *w, const clt__conv_opts *o,
                                        clt_tensor **gx, clt_tensor **gw, clt_tensor **gb)
{
    const char *fn = "clt_backward"; /* a formula's step: the engine names the node */
    geom g;
    clt_status st = transposed_check(x, w, NULL, o, &g, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *gc = NULL, *rx = NULL, *rw = NULL, *rb = NULL;
    CLT__TRY(clt__contiguous_as(fn, gout, w->dtype, &gc));
    /* the input's gradient is the convolution of gout; the weight's the
     * convolution's weight gradient with x as its output gradient */
    if (gx)
        CLT__TRY(conv_forward(gc, w, NULL, g, &rx, NULL, fn));
    if (gw)
        CLT__TRY(conv_backward(x, gc, w, NULL, g, NULL, NULL, &rw, NULL, fn));
    if (gb) {
        geom planes = {0};
        planes.N = g.N, planes.O = g.C, planes.L = g.D * g.H * g.W;
        CLT__TRY(bias_grad(gc, planes, &rb, fn));
    }
    if (gx)
        *gx = rx;
    if (gw)
        *gw = rw;
    if (gb)
        *gb = rb;
    rx = rw = rb = NULL;
done:
    clt_tensor_free(gc);
    clt_tensor_free(rx);
    clt_tensor_free(rw);
    clt_tensor_free(rb);
    return st;
}

/* ---- pooling ------------------------------------------------------------------------- */

/* PyTorch's pooling_output_shape; clt__pool2d_check has made sure that
 * extents() holds. */
static int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                        bool ceil_mode)
{
    int64_t padded = 0, span = 0;
    extents(in, k, pad, dil, &padded, &span);
    int64_t num = padded - span, q; /* both in [0, INT64_MAX]: no overflow */
    if (ceil_mode && num > INT64_MAX - (stride - 1)) {
        q = num / stride + (num % stride != 0); /* the ceiling, without the sum */
    } else {
        num += ceil_mode ? stride - 1 : 0;
        q = num / stride - (num % stride != 0 && num < 0); /* the floor */
    }
    int64_t outsz = q + 1;
    if (ceil_mode && (outsz - 1) * stride >= in + pad)
        outsz--;
    return outsz;
}

clt_status clt__pool2d_check(const clt_tensor *x, clt__pool2d *p, bool int64_ok, const char *fn)
{
    char s1[160];
    clt_status st;
    if (int64_ok && x->dtype != CLT_FLOAT32 && x->dtype != CLT_FLOAT64 && x->dtype != CLT_INT64)
        st = clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                        "%s: input must be float32, float64 or int64, not %s; convert with "
                        "clt_to_dtype first",
                        fn, clt_dtype_name(x->dtype));
    else if (int64_ok && x->dtype == CLT_INT64)
        st = clt__check_dtype(x->dev, x->dtype, fn);
    else
        st = clt__check_floating(x, "input", fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim != 4)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: non-empty 3D or 4D (batch mode) tensor expected for input, but "
                          "got input of size: %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    if (p->kernel[0] <= 0 || p->kernel[1] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kernel size should be greater than zero, but got kH: %lld kW: "
                          "%lld",
                          fn, (long long)p->kernel[0], (long long)p->kernel[1]);
    if (p->stride[0] == 0 && p->stride[1] == 0) {
        p->stride[0] = p->kernel[0];
        p->stride[1] = p->kernel[1];
    }
    if (p->stride[0] <= 0 || p->stride[1] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: stride should be greater than zero, but got dH: %lld dW: %lld", fn,
                          (long long)p->stride[0], (long long)p->stride[1]);
    if (p->dilation[0] <= 0 || p->dilation[1] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dilation should be greater than zero, but got dilationH: %lld "
                          "dilationW: %lld",
                          fn, (long long)p->dilation[0], (long long)p->dilation[1]);
    if (p->padding[0] < 0 || p->padding[1] < 0 || p->kernel[0] / 2 < p->padding[0] ||
        p->kernel[1] / 2 < p->padding[1])
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: pad should be smaller than or equal to half of kernel size, but "
                          "got padW = %lld, padH = %lld, kW = %lld, kH = %lld",
                          fn, (long long)p->padding[1], (long long)p->padding[0],
                          (long long)p->kernel[1], (long long)p->kernel[0]);
    if (x->shape[1] == 0 || x->shape[2] == 0 || x->shape[3] == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected input's non-batch dimensions to have positive length, "
                          "but input has a shape of %s",
                          fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    int64_t padded = 0, span = 0;
    if (!extents(x->shape[2], p->kernel[0], p->padding[0], p->dilation[0], &padded, &span) ||
        !extents(x->shape[3], p->kernel[1], p->padding[1], p->dilation[1], &padded, &span))
        return extents_error(fn, x, 2, p->kernel, p->padding, p->dilation);
    int64_t ho = pool_out(x->shape[2], p->kernel[0], p->padding[0], p->stride[0],
                          p->dilation[0], p->ceil_mode);
    int64_t wo = pool_out(x->shape[3], p->kernel[1], p->padding[1], p->stride[1],
                          p->dilation[1], p->ceil_mode);
    if (ho < 1 || wo < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given input size: (%lldx%lldx%lld). Calculated output size: "
                          "(%lldx%lldx%lld). Output size is too small",
                          fn, (long long)x->shape[1], (long long)x->shape[2],
                          (long long)x->shape[3], (long long)x->shape[1], (long long)ho,
                          (long long)wo);
    return CLT_OK;
}

/* The geometry of a pooling over the N * C planes of a 4-D shape. */
static geom planes_geom(const int64_t *shape)
{
    geom g = {0};
    g.N = shape[0], g.C = shape[1], g.H = shape[2], g.W = shape[3];
    g.O = g.C, g.G = 1, g.Cg = g.C, g.Og = g.C;
    return g;
}

static geom pool_geom(const int64_t *shape, const clt__pool2d *p)
{
    geom g = planes_geom(shape);
    g.kh = p->kernel[0], g.kw = p->kernel[1];
    g.sh = p->stride[0], g.sw = p->stride[1];
    g.ph = p->padding[0], g.pw = p->padding[1];
    g.dh = p->dilation[0], g.dw = p->dilation[1];
    /* a window of one element never steps: its dilation, which may not
     * fit the kernels' 32-bit indexing, is not passed on */
    if (g.kh == 1)
        g.dh = 1;
    if (g.kw == 1)
        g.dw = 1;
    g.Ho = pool_out(g.H, g.kh, g.ph, g.sh, g.dh, p->ceil_mode);
    g.Wo = pool_out(g.W, g.kw, g.pw, g.sw, g.dw, p->ceil_mode);
    g.L = g.Ho * g.Wo;
    g.flag = p->count_include_pad;
    return g;
}

/* The maxima and their int64 indices, both [N, C, Ho, Wo] of g, from the
 * max pooling kernel `name` over a contiguous copy of x: by rows of Wo
 * (launch_rows) or one work-item per row. */
static clt_status max_launch(const clt_tensor *x, geom g, const char *name, bool rows,
                             clt_tensor **out, clt_tensor **indices, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *xc = NULL, *r = NULL, *ix = NULL;
    int64_t shape[4] = {g.N, g.C, g.Ho, g.Wo};
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, 4, shape, &r));
    CLT__TRY(clt__result_new(fn, x->dev, CLT_INT64, 4, shape, &ix));
    if (r->numel > 0) {
        CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &xc));
        g.off0 = xc->offset;
        cl_mem mx = clt__mem(xc), mr = clt__mem(r), mi = clt__mem(ix);
        clt__arg args[] = {CLT__ARG(mx), CLT__ARG(mr), CLT__ARG(mi), CLT__ARG(g)};
        int64_t n = g.N * g.C * g.Ho;
        CLT__TRY(rows ? launch_rows(x->dev, x->dtype, name, n, g.Wo, 4, args, fn)
                      : launch(x->dev, x->dtype, name, n, 4, args, fn));
    }
    *out = r;
    *indices = ix;
    r = ix = NULL;
done:
    clt_tensor_free(xc);
    clt_tensor_free(r);
    clt_tensor_free(ix);
    return st;
}

clt_status clt__max_pool2d(const clt_tensor *x, const clt__pool2d *p, clt_tensor **out,
                           clt_tensor **indices)
{
    return max_launch(x, pool_geom(x->shape, p), "max_pool_fwd", true, out, indices,
                      "clt_max_pool2d");
}

clt_status clt__max_pool2d_backward(const clt_tensor *gout, const clt_tensor *indices,
                                    const int64_t *in_shape, const clt__pool2d *p,
                                    clt_tensor **out)
{
    static const char fn[] = "clt_backward"; /* the engine names the node */
    geom g = pool_geom(in_shape, p);
    clt_status st = CLT_OK;
    clt_tensor *gc = NULL, *ic = NULL, *r = NULL;
    CLT__TRY(clt__result_new(fn, gout->dev, gout->dtype, 4, in_shape, &r));
    if (r->numel > 0) {
        CLT__TRY(clt__contiguous_as(fn, gout, gout->dtype, &gc));
        CLT__TRY(clt__contiguous_as(fn, indices, CLT_INT64, &ic));
        g.off0 = gc->offset;
        g.off1 = ic->offset;
        cl_mem mg = clt__mem(gc), mi = clt__mem(ic), mr = clt__mem(r);
        clt__arg args[] = {CLT__ARG(mg), CLT__ARG(mi), CLT__ARG(mr), CLT__ARG(g)};
        if (g.sh >= (g.kh - 1) * g.dh + 1 && g.sw >= (g.kw - 1) * g.dw + 1) {
            /* Windows that do not overlap (MaxPool2d(2) and the like): each
             * input pixel is the argmax of at most one window, so zeros and
             * one write per window give the same bits as the gather, in a
             * fraction of its time. */
            CLT__TRY(clt__fill_value(r, 0.0));
            CLT__TRY(launch_rows(gout->dev, gout->dtype, "max_pool_bwd_disjoint", g.N * g.C,
                                 g.L, 4, args, fn));
        } else {
            CLT__TRY(launch(gout->dev, gout->dtype, "max_pool_bwd", g.N * g.C * g.H, 4, args, fn));
        }
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(gc);
    clt_tensor_free(ic);
    clt_tensor_free(r);
    return st;
}

/* A new tensor of `shape` from one pooling kernel over a contiguous copy of
 * `in`, the kernel taking (in, out, g) on `rows` rows of work. */
static clt_status pool_launch(const clt_tensor *in, geom g, const int64_t *shape,
                              const char *kernel, int64_t rows, clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *c = NULL, *r = NULL;
    CLT__TRY(clt__result_new(fn, in->dev, in->dtype, 4, shape, &r));
    if (r->numel > 0) {
        CLT__TRY(clt__contiguous_as(fn, in, in->dtype, &c));
        g.off0 = c->offset;
        cl_mem mi = clt__mem(c), mr = clt__mem(r);
        clt__arg args[] = {CLT__ARG(mi), CLT__ARG(mr), CLT__ARG(g)};
        CLT__TRY(launch(in->dev, in->dtype, kernel, rows, 3, args, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(c);
    clt_tensor_free(r);
    return st;
}

clt_status clt__avg_pool2d(const clt_tensor *x, const clt__pool2d *p, clt_tensor **out)
{
    geom g = pool_geom(x->shape, p);
    int64_t shape[4] = {g.N, g.C, g.Ho, g.Wo};
    return pool_launch(x, g, shape, "avg_pool_fwd", g.N * g.C * g.Ho, out, "clt_avg_pool2d");
}

clt_status clt__avg_pool2d_backward(const clt_tensor *gout, const int64_t *in_shape,
                                    const clt__pool2d *p, clt_tensor **out)
{
    geom g = pool_geom(in_shape, p);
    return pool_launch(gout, g, in_shape, "avg_pool_bwd", g.N * g.C * g.H, out,
                       "clt_backward");
}

/* ---- adaptive average pooling ---------------------------------------------------------- */

clt_status clt__adaptive_size_check(const int64_t *size, const char *fn)
{
    if (size[0] < 0 || size[1] < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: elements of output_size must be greater than or equal to 0 but "
                          "received {%lld, %lld}",
                          fn, (long long)size[0], (long long)size[1]);
    return CLT_OK;
}

clt_status clt__adaptive_pool2d_check(const clt_tensor *x, const int64_t *size, const char *fn)
{
    char s1[160];
    if (x->ndim != 3 && x->ndim != 4)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Expected 3D or 4D tensor, but got %s", fn,
                          clt__shape_str(s1, sizeof s1, x->ndim, x->shape));
    clt_status st = clt__check_floating(x, "input", fn);
    if (st == CLT_OK)
        st = clt__adaptive_size_check(size, fn);
    if (st != CLT_OK)
        return st;
    for (int d = x->ndim - 2; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected input to have non-zero size for non-batch "
                              "dimensions, but input has sizes %s with dimension %d being empty",
                              fn, clt__shape_str(s1, sizeof s1, x->ndim, x->shape), d);
    /* the kernels' window bounds multiply the two sizes of a dimension,
     * (size + 1) * (input size + 1) at most */
    for (int d = 0; d < 2; d++)
        if (size[d] >= INT64_MAX / (x->shape[x->ndim - 2 + d] + 1))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: output size %lld and input size %lld of dimension %d: their "
                              "product passes int64",
                              fn, (long long)size[d], (long long)x->shape[x->ndim - 2 + d],
                              x->ndim - 2 + d);
    return CLT_OK;
}

static geom adaptive_geom(const int64_t *in_shape, const int64_t *size)
{
    geom g = planes_geom(in_shape);
    g.Ho = size[0], g.Wo = size[1];
    g.L = product4(g.Ho, g.Wo, 1, 1); /* clt__result_new refuses what saturates */
    return g;
}

clt_status clt__adaptive_avg_pool2d(const clt_tensor *x, const int64_t *size, clt_tensor **out,
                                    const char *fn)
{
    geom g = adaptive_geom(x->shape, size);
    int64_t shape[4] = {g.N, g.C, g.Ho, g.Wo};
    return pool_launch(x, g, shape, "adaptive_avg_pool_fwd", g.N * g.C * g.Ho, out, fn);
}

clt_status clt__adaptive_avg_pool2d_backward(const clt_tensor *gout, const int64_t *in_shape,
                                             clt_tensor **out)
{
    geom g = adaptive_geom(in_shape, gout->shape + 2);
    return pool_launch(gout, g, in_shape, "adaptive_avg_pool_bwd", g.N * g.C * g.H, out,
                       "clt_backward");
}

clt_status clt__adaptive_max_pool2d(const clt_tensor *x, const int64_t *size, clt_tensor **out,
                                    clt_tensor **indices, const char *fn)
{
    return max_launch(x, adaptive_geom(x->shape, size), "adaptive_max_pool_fwd", false, out,
                      indices, fn);
}

/* ---- unfold and fold (im2col and col2im on their own) ---------------------------------- */

/* The sliding blocks' settings with PyTorch's messages (im2col_shape_check
 * and col2im_shape_check). */
static clt_status blocks_settings_check(const int64_t *k, const clt_fold_opts *o, const char *fn)
{
    if (k[0] <= 0 || k[1] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: kernel size should be greater than zero, but got kernel_height: "
                          "%lld kernel_width: %lld",
                          fn, (long long)k[0], (long long)k[1]);
    if (o->stride[0] <= 0 || o->stride[1] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: stride should be greater than zero, but got stride_height: %lld "
                          "stride_width: %lld",
                          fn, (long long)o->stride[0], (long long)o->stride[1]);
    if (o->dilation[0] <= 0 || o->dilation[1] <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dilation should be greater than zero, but got dilation_height: "
                          "%lld dilation_width: %lld",
                          fn, (long long)o->dilation[0], (long long)o->dilation[1]);
    if (o->padding[0] < 0 || o->padding[1] < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: padding should be non-negative, but got pad_height: %lld "
                          "pad_width: %lld",
                          fn, (long long)o->padding[0], (long long)o->padding[1]);
    return CLT_OK;
}

/* The geometry of the blocks over an [N, C, H, W] image (G 1: one group of
 * all C channels); the number of blocks per dimension may be below 1 (the
 * callers check it), or false when a step passes int64. */
static bool blocks_geom(int64_t N, int64_t C, int64_t H, int64_t W, const int64_t *k,
                        const clt_fold_opts *o, geom *g)
{
    int64_t ph = 0, pw = 0, ekh = 0, ekw = 0, kk = 0;
    if (!extents(H, k[0], o->padding[0], o->dilation[0], &ph, &ekh) ||
        !extents(W, k[1], o->padding[1], o->dilation[1], &pw, &ekw) ||
        __builtin_mul_overflow(k[0], k[1], &kk) || __builtin_mul_overflow(kk, C, &kk))
        return false;
    *g = flat_geom();
    g->N = N, g->C = C, g->H = H, g->W = W;
    g->G = 1, g->Cg = C;
    g->kh = k[0], g->kw = k[1];
    g->sh = o->stride[0], g->sw = o->stride[1];
    g->ph = o->padding[0], g->pw = o->padding[1];
    g->dh = o->dilation[0], g->dw = o->dilation[1];
    g->Ho = (ph - ekh) / g->sh + 1;
    g->Wo = (pw - ekw) / g->sw + 1;
    if (ph < ekh)
        g->Ho = (ph - ekh + 1) / g->sh; /* C's division truncates towards zero */
    if (pw < ekw)
        g->Wo = (pw - ekw + 1) / g->sw;
    g->K = kk;
    g->L = g->Ho > 0 && g->Wo > 0 ? product4(g->Ho, g->Wo, 1, 1) : 0;
    return true;
}

static clt_status blocks_overflow(const char *fn, int ndim, const int64_t *shape,
                                  const int64_t *k)
{
    char s[160];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: the padded input, the dilated kernel or the patch size passes the "
                      "int64 range (input %s, kernel {%lld, %lld})",
                      fn, clt__shape_str(s, sizeof s, ndim, shape), (long long)k[0],
                      (long long)k[1]);
}

clt_status clt__unfold(const clt_tensor *x, const int64_t *k, const clt_fold_opts *o,
                       clt_tensor **out, const char *fn)
{
    char s[160];
    clt_status st = blocks_settings_check(k, o, fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim != 3 && x->ndim != 4)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                          "size for input, but got: %s",
                          fn, clt__shape_str(s, sizeof s, x->ndim, x->shape));
    const int64_t *sp = x->shape + x->ndim - 3; /* C, H, W */
    for (int d = x->ndim - 3; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim "
                              "batch size for input, but got: %s",
                              fn, clt__shape_str(s, sizeof s, x->ndim, x->shape));
    if ((st = clt__check_floating(x, "input", fn)) != CLT_OK)
        return st;
    int64_t N = x->ndim == 4 ? x->shape[0] : 1;
    geom g;
    if (!blocks_geom(N, sp[0], sp[1], sp[2], k, o, &g))
        return blocks_overflow(fn, x->ndim, x->shape, k);
    if (g.Ho < 1 || g.Wo < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given input with spatial size (%lld, %lld), kernel_size=(%lld, "
                          "%lld), dilation=(%lld, %lld), padding=(%lld, %lld), calculated shape "
                          "of the array of sliding blocks as (%lld, %lld), but its components "
                          "must be at least one.",
                          fn, (long long)g.H, (long long)g.W, (long long)g.kh, (long long)g.kw,
                          (long long)g.dh, (long long)g.dw, (long long)g.ph, (long long)g.pw,
                          (long long)g.Ho, (long long)g.Wo);
    int64_t shape[3] = {N, g.K, g.L};
    if ((st = clt__check_shape(3, shape, fn)) != CLT_OK)
        return st;
    const int nd = x->ndim - 1;
    const int64_t *rshape = x->ndim == 4 ? shape : shape + 1;
    clt_tensor *xc = NULL, *cols = NULL, *v = NULL, *p = NULL;
    *out = NULL;
    if (N == 0)
        return clt__result_new(fn, x->dev, x->dtype, nd, rshape, out);
    CLT__TRY(clt__contiguous_as(fn, x, x->dtype, &xc));
    /* cols [K][N][L]; the result is [N][K][L], the same for one image */
    CLT__TRY(im2col(xc, g, 0, &cols, fn));
    if (N == 1) {
        CLT__TRY(clt__view(cols, nd, rshape, out, fn));
    } else {
        int64_t kshape[3] = {g.K, N, g.L};
        CLT__TRY(clt__view(cols, 3, kshape, &v, fn));
        CLT__TRY(clt__permute(v, 3, (const int[]){1, 0, 2}, &p, fn));
        CLT__TRY(clt__copy_as(fn, p, x->dtype, out));
    }
done:
    clt_tensor_free(xc);
    clt_tensor_free(cols);
    clt_tensor_free(v);
    clt_tensor_free(p);
    return st;
}

clt_status clt__fold(const clt_tensor *x, const int64_t *size, const int64_t *k,
                     const clt_fold_opts *o, clt_tensor **out, const char *fn)
{
    char s[160];
    clt_status st = blocks_settings_check(k, o, fn);
    if (st != CLT_OK)
        return st;
    bool bad = x->ndim != 2 && x->ndim != 3;
    for (int d = x->ndim - 2; !bad && d < x->ndim; d++)
        bad = x->shape[d] == 0;
    if (bad)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                          "batch size and non-zero dimensions for input, but got: %s",
                          fn, clt__shape_str(s, sizeof s, x->ndim, x->shape));
    int64_t N = x->ndim == 3 ? x->shape[0] : 1, K = x->shape[x->ndim - 2];
    int64_t L = x->shape[x->ndim - 1];
    if (K % k[0] != 0 || (K / k[0]) % k[1] != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected size of input's dimension %d to be divisible by the "
                          "product of kernel_size, but got input.size(%d)=%lld and "
                          "kernel_size=(%lld, %lld).",
                          fn, x->ndim - 2, x->ndim - 2, (long long)K, (long long)k[0],
                          (long long)k[1]);
    if ((st = clt__check_floating(x, "input", fn)) != CLT_OK)
        return st;
    int64_t C = K / k[0] / k[1];
    if (size[0] < 0 || size[1] < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: output_size should be non-negative, but got (%lld, %lld)", fn,
                          (long long)size[0], (long long)size[1]);
    geom g;
    if (!blocks_geom(N, C, size[0], size[1], k, o, &g))
        return blocks_overflow(fn, x->ndim, x->shape, k);
    int64_t blocks = 0;
    if (__builtin_mul_overflow(g.Ho, g.Wo, &blocks))
        return blocks_overflow(fn, x->ndim, x->shape, k);
    if (blocks != L || g.Ho < 1 || g.Wo < 1) {
        if (blocks != L)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Given output_size=(%lld, %lld), kernel_size=(%lld, %lld), "
                              "dilation=(%lld, %lld), padding=(%lld, %lld), stride=(%lld, "
                              "%lld), expected size of input's dimension %d to match the "
                              "calculated number of sliding blocks %lld * %lld = %lld, but got "
                              "input.size(%d)=%lld.",
                              fn, (long long)size[0], (long long)size[1], (long long)g.kh,
                              (long long)g.kw, (long long)g.dh, (long long)g.dw,
                              (long long)g.ph, (long long)g.pw, (long long)g.sh,
                              (long long)g.sw, x->ndim - 1, (long long)g.Ho, (long long)g.Wo,
                              (long long)blocks, x->ndim - 1, (long long)L);
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Given output_size=(%lld, %lld), kernel_size=(%lld, %lld), "
                          "dilation=(%lld, %lld), padding=(%lld, %lld), stride=(%lld, %lld), "
                          "calculated shape of the array of sliding blocks as (%lld, %lld), "
                          "but its components must be at least one.",
                          fn, (long long)size[0], (long long)size[1], (long long)g.kh,
                          (long long)g.kw, (long long)g.dh, (long long)g.dw, (long long)g.ph,
                          (long long)g.pw, (long long)g.sh, (long long)g.sw, (long long)g.Ho,
                          (long long)g.Wo);
    }
    int64_t shape[4] = {N, C, size[0], size[1]};
    const int nd = x->ndim + 1;
    const int64_t *rshape = x->ndim == 3 ? shape : shape + 1;
    clt_tensor *dcols = NULL, *p = NULL, *r = NULL;
    *out = NULL;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, nd, rshape, &r));
    if (r->numel > 0) {
        /* col2im reads [K][N][L] from the start of its buffer: for one
         * image x itself when it is contiguous at offset 0 */
        if (N == 1 && clt__is_contiguous(x) && x->offset == 0) {
            CLT__TRY(clt__tensor_view(x, x->ndim, x->shape, x->strides, 0, &dcols));
        } else {
            const int64_t *st3 = x->strides + x->ndim - 2;
            int64_t kshape[3] = {K, N, L}, kstrides[3] = {st3[0], x->ndim == 3 ? x->strides[0] : 0,
                                                          st3[1]};
            CLT__TRY(clt__tensor_view(x, 3, kshape, kstrides, x->offset, &p));
            CLT__TRY(clt__copy_as(fn, p, x->dtype, &dcols));
        }
        cl_mem md = clt__mem(dcols), mr = clt__mem(r);
        clt__arg ca[] = {CLT__ARG(md), CLT__ARG(mr), CLT__ARG(mr), CLT__ARG(g)};
        CLT__TRY(launch_rows(x->dev, x->dtype, "col2im", N * C * g.H, g.W, 4, ca, fn));
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(dcols);
    clt_tensor_free(p);
    clt_tensor_free(r);
    return st;
}
