/* test_inplace.c: in-place ops, out= forms, host writes, *_like, uniform_,
 * normal_ and randperm against host references: broadcasting, views
 * (only their elements change), aliasing, casts and refusals, devices,
 * and the autograd rules (leaf error, recorded history by gradcheck,
 * version counter). */
#include "gradcheck.h"

static clt_tensor *from_f32(clt_device *dev, int ndim, const int64_t *shape, const float *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndim, shape, v, &t));
    return t;
}

static void expect_f32(const clt_tensor *t, const float *want, size_t n)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n);
    float *got = read_f32(t);
    ASSERT_ALLCLOSE_F32(got, want, n, 1e-6, 1e-6);
    free(got);
}

/* ---- arithmetic, broadcasting, views --------------------------------------------- */

Test(inplace, binary_broadcast_and_alpha)
{
    clt_device *dev = get_device("cpu");
    int64_t s23[] = {2, 3}, s3[] = {3};
    clt_tensor *t = iota(dev, 2, s23);
    const float ov[] = {1, 2, 3};
    clt_tensor *o = from_f32(dev, 1, s3, ov);
    CHECK(clt_add_(t, o, 2.0));
    const float w1[] = {2, 5, 8, 5, 8, 11};
    expect_f32(t, w1, 6);
    CHECK(clt_sub_(t, o, 1.0));
    const float w2[] = {1, 3, 5, 4, 6, 8};
    expect_f32(t, w2, 6);
    CHECK(clt_mul_(t, o));
    const float w3[] = {1, 6, 15, 4, 12, 24};
    expect_f32(t, w3, 6);
    CHECK(clt_div_(t, o));
    expect_f32(t, w2, 6);
    CHECK(clt_add_scalar_(t, 1));
    CHECK(clt_mul_scalar_(t, 2));
    CHECK(clt_sub_scalar_(t, 2));
    CHECK(clt_div_scalar_(t, 4));
    const float w4[] = {0.5f, 1.5f, 2.5f, 2, 3, 4};
    expect_f32(t, w4, 6);
    double lo = 1.0, hi = 3.0;
    CHECK(clt_clamp_(t, &lo, &hi));
    const float w5[] = {1, 1.5f, 2.5f, 2, 3, 3};
    expect_f32(t, w5, 6);
    CHECK(clt_fill_(t, 4.5));
    const float w6[] = {4.5f, 4.5f, 4.5f, 4.5f, 4.5f, 4.5f};
    expect_f32(t, w6, 6);
    CHECK(clt_zero_(t));
    const float w7[6] = {0};
    expect_f32(t, w7, 6);
    clt_tensor_free(t);
    clt_tensor_free(o);
}

/* add_ and sub_ with alpha on floating sums: t + alpha * other in the
 * sum's dtype, rounded once, as PyTorch's fused kernel (fma).  A float64 t
 * adding a float32 or int32 other times 0.1 keeps float64's precision (the
 * term was once rounded to float32, 1e-9 relative), an int32 other times 2
 * does not wrap, and 3e38 - 2 * 3e38 is -3e38 in float32, not -inf. */
Test(inplace, alpha_in_the_sum_dtype_rounded_once)
{
    clt_device *dev = get_device("cpu");
    int64_t s3[] = {3};
    const double tv[] = {1.0, 2.0, -3.0};
    const float fv[] = {1.0f, 3.0f, 7.3f};
    const int32_t iv[] = {1, 2000000000, -2000000000};
    clt_tensor *t, *of, *oi;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, s3, fv, &of));
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, s3, iv, &oi));
    for (int k = 0; k < 4; k++) {
        double alpha = k < 2 ? 0.1 : 2.0;
        const clt_tensor *o = k % 2 ? oi : of;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s3, tv, &t));
        CHECK(k < 2 ? clt_add_(t, o, alpha) : clt_sub_(t, o, alpha));
        double got[3];
        CHECK(clt_tensor_read(t, got, sizeof got));
        for (int i = 0; i < 3; i++) {
            double ov = k % 2 ? (double)iv[i] : (double)fv[i];
            double want = fma(k < 2 ? alpha : -alpha, ov, tv[i]);
            cr_assert(got[i] == want, "case %d element %d: %.17g, want %.17g", k, i, got[i],
                      want);
        }
        clt_tensor_free(t);
    }
    /* float32, against fmaf */
    float a[20], b[20], got[20];
    for (int i = 0; i < 20; i++) {
        a[i] = (i % 2 ? -1.0f : 1.0f) * (1.0f + (float)i / 7.0f);
        b[i] = (i % 3 ? 1.0f : -1.0f) * (2.0f + (float)i / 3.0f);
    }
    a[0] = b[0] = 3e38f; /* 2 * b alone overflows */
    int64_t s20[] = {20};
    clt_tensor *ta = from_f32(dev, 1, s20, a), *tb = from_f32(dev, 1, s20, b);
    CHECK(clt_sub_(ta, tb, 2.0));
    CHECK(clt_tensor_read(ta, got, sizeof got));
    for (int i = 0; i < 20; i++)
        cr_assert(got[i] == fmaf(-2.0f, b[i], a[i]), "float32 element %d: %.9g, want %.9g", i,
                  got[i], fmaf(-2.0f, b[i], a[i]));
    cr_assert(got[0] == -3e38f);
    CHECK(clt_add_(ta, tb, 0.1));
    float got2[20];
    CHECK(clt_tensor_read(ta, got2, sizeof got2));
    for (int i = 0; i < 20; i++)
        cr_assert(got2[i] == fmaf(0.1f, b[i], got[i]), "float32 + 0.1 element %d", i);
    /* integers: an int32 other times 3 or 2^33 added to an int64 t, in int64 */
    const int64_t lv[] = {1, 2, -3};
    for (int k = 0; k < 2; k++) {
        double alpha = k ? 8589934592.0 : 3.0;
        clt_tensor *tl;
        CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, s3, lv, &tl));
        CHECK(clt_add_(tl, oi, alpha));
        int64_t gl[3];
        CHECK(clt_tensor_read(tl, gl, sizeof gl));
        for (int i = 0; i < 3; i++) {
            /* int64 arithmetic wrapping (2^33 * 2e9 does), without C's
             * signed overflow */
            int64_t want = (int64_t)((uint64_t)lv[i] + (uint64_t)(int64_t)alpha *
                                                           (uint64_t)(int64_t)iv[i]);
            cr_assert(gl[i] == want, "int64 + %g * int32 [%d]: %lld, want %lld", alpha, i,
                      (long long)gl[i], (long long)want);
        }
        clt_tensor_free(tl);
    }
    /* bool sums take a nonzero alpha as true: t + (-1) * other is t or other */
    const unsigned char bv[] = {0, 1, 0}, bo[] = {1, 1, 0};
    clt_tensor *tbl, *obl;
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, s3, bv, &tbl));
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, s3, bo, &obl));
    CHECK(clt_add_(tbl, obl, -1.0));
    unsigned char gb[3];
    CHECK(clt_tensor_read(tbl, gb, sizeof gb));
    for (int i = 0; i < 3; i++)
        cr_assert(gb[i] == (bv[i] | bo[i]), "bool + (-1) * bool [%d]: %d", i, gb[i]);
    clt_tensor_free(tbl);
    clt_tensor_free(obl);
    /* -0.0 - 0 * 0.0 is +0.0: a zero alpha is the integer 0, and PyTorch
     * adds (-0) * other */
    const float nz = -0.0f, pz = 0.0f;
    clt_tensor *tz = from_f32(dev, 1, s3, (const float[]){nz, nz, nz}),
               *oz = from_f32(dev, 1, s3, (const float[]){pz, pz, pz});
    CHECK(clt_sub_(tz, oz, 0.0));
    CHECK(clt_tensor_read(tz, got, 3 * sizeof *got));
    cr_assert(got[0] == 0.0f && !signbit(got[0]), "-0.0 - 0 * 0.0: %g", got[0]);
    clt_tensor_free(tz);
    clt_tensor_free(oz);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(of);
    clt_tensor_free(oi);
}

Test(inplace, shape_never_changes)
{
    clt_device *dev = get_device("cpu");
    int64_t s23[] = {2, 3}, s3[] = {3};
    clt_tensor *t = iota(dev, 1, s3), *o = iota(dev, 2, s23);
    assert_error(clt_add_(t, o, 1), CLT_ERR_SHAPE_MISMATCH,
                 "output with shape [3] doesn't match the broadcast shape [2, 3]");
    assert_error(clt_copy_(t, o), CLT_ERR_SHAPE_MISMATCH, "doesn't match");
    const float w[] = {0, 1, 2};
    expect_f32(t, w, 3); /* unchanged */
    clt_tensor_free(t);
    clt_tensor_free(o);
}

Test(inplace, views_change_only_their_elements)
{
    clt_device *dev = get_device("cpu");
    int64_t s34[] = {3, 4}, s3[] = {3};
    clt_tensor *base = iota(dev, 2, s34), *v = NULL;
    /* offset view (rows 1..2): contiguous at offset 4 */
    CHECK(clt_narrow(base, 0, 1, 2, &v));
    CHECK(clt_add_scalar_(v, 100));
    clt_tensor_free(v);
    float want[12];
    for (int i = 0; i < 12; i++)
        want[i] = (float)i + (i >= 4 ? 100.0f : 0.0f);
    expect_f32(base, want, 12);
    /* transposed view [4, 3] plus a row [3]: base[i][j] += o[i] */
    const float ov[] = {1, 2, 3};
    clt_tensor *o = from_f32(dev, 1, s3, ov);
    CHECK(clt_transpose(base, 0, 1, &v));
    CHECK(clt_add_(v, o, 1));
    clt_tensor_free(v);
    for (int i = 0; i < 12; i++)
        want[i] += ov[i / 4];
    expect_f32(base, want, 12);
    /* strided columns 0 and 2 */
    CHECK(clt_slice(base, 1, 0, 4, 2, &v));
    CHECK(clt_fill_(v, -1));
    clt_tensor_free(v);
    for (int i = 0; i < 12; i++)
        if (i % 4 == 0 || i % 4 == 2)
            want[i] = -1;
    expect_f32(base, want, 12);
    /* copy_ with broadcast into a transposed view */
    CHECK(clt_transpose(base, 0, 1, &v));
    CHECK(clt_copy_(v, o));
    clt_tensor_free(v);
    for (int i = 0; i < 12; i++)
        want[i] = ov[i / 4];
    expect_f32(base, want, 12);
    clt_tensor_free(o);
    clt_tensor_free(base);
}

/* Through views large enough for several work-items of the CPU copy
 * kernels (runs and tiles), on every device: an add into a transposed
 * view, a scale of every third column, and copy_ of a square tensor into
 * its own transpose (the source is read whole before any write). */
Test(inplace, large_views_on_every_device)
{
    get_device("cpu");
    size_t ndev = 0;
    CHECK(clt_device_count(&ndev));
    enum { R = 300, C = 260, S = 200 };
    int64_t rc[] = {R, C}, r1[] = {R}, ss[] = {S, S};
    float *want = malloc(R * C * sizeof *want), *sq = malloc(S * S * sizeof *sq);
    float ov[R];
    cr_assert(want && sq);
    for (int i = 0; i < R; i++)
        ov[i] = (float)(3 * i + 1);
    for (size_t di = 0; di < ndev; di++) {
        clt_device *dev = NULL;
        CHECK(clt_device_at(di, &dev));
        clt_tensor *base = iota(dev, 2, rc), *o = from_f32(dev, 1, r1, ov), *v = NULL;
        CHECK(clt_transpose(base, 0, 1, &v));
        CHECK(clt_add_(v, o, 1)); /* v[j][i] += o[i]: base[i][j] += o[i] */
        clt_tensor_free(v);
        CHECK(clt_slice(base, 1, 1, C, 3, &v));
        CHECK(clt_mul_scalar_(v, 2));
        clt_tensor_free(v);
        for (int i = 0; i < R * C; i++)
            want[i] = ((float)i + ov[i / C]) * (i % C % 3 == 1 ? 2.0f : 1.0f);
        expect_f32(base, want, R * C);

        clt_tensor *t = iota(dev, 2, ss);
        CHECK(clt_transpose(t, 0, 1, &v));
        CHECK(clt_copy_(v, t));
        clt_tensor_free(v);
        for (int i = 0; i < S * S; i++)
            sq[i] = (float)(i % S * S + i / S);
        expect_f32(t, sq, S * S);
        clt_tensor_free(t);
        clt_tensor_free(o);
        clt_tensor_free(base);
    }
    free(want);
    free(sq);
}

Test(inplace, expanded_destination_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t s13[] = {1, 3}, s23[] = {2, 3};
    clt_tensor *row = iota(dev, 2, s13), *e = NULL;
    CHECK(clt_expand(row, 2, s23, &e));
    assert_error(clt_add_scalar_(e, 1), CLT_ERR_INVALID_ARGUMENT, "single memory location");
    assert_error(clt_fill_(e, 1), CLT_ERR_INVALID_ARGUMENT, "single memory location");
    const float w[] = {0, 1, 2};
    expect_f32(row, w, 3);
    clt_tensor_free(e);
    clt_tensor_free(row);
}

Test(inplace, self_aliasing)
{
    clt_device *dev = get_device("cpu");
    int64_t s6[] = {6};
    clt_tensor *t = iota(dev, 1, s6);
    CHECK(clt_add_(t, t, 1));
    const float w1[] = {0, 2, 4, 6, 8, 10};
    expect_f32(t, w1, 6);
    /* overlapping shifted views read the old values */
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_narrow(t, 0, 0, 5, &a));
    CHECK(clt_narrow(t, 0, 1, 5, &b));
    CHECK(clt_add_(b, a, 1));
    const float w2[] = {0, 2, 6, 10, 14, 18};
    expect_f32(t, w2, 6);
    CHECK(clt_copy_(b, a));
    const float w3[] = {0, 0, 2, 6, 10, 14};
    expect_f32(t, w3, 6);
    CHECK(clt_copy_(t, t));
    expect_f32(t, w3, 6);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(t);
}

Test(inplace, dtype_casts_and_refusals)
{
    clt_device *dev = get_device("cpu");
    int64_t s2[] = {2};
    const int32_t iv[] = {5, -7};
    clt_tensor *ti = NULL, *tf = NULL, *tl = NULL, *tb = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 1, s2, iv, &ti));
    const float fv[] = {1.7f, -2.5f};
    tf = from_f32(dev, 1, s2, fv);
    assert_error(clt_add_(ti, tf, 1), CLT_ERR_DTYPE_MISMATCH,
                 "result type Float can't be cast to the desired output type Int");
    assert_error(clt_add_scalar_(ti, 0.5), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
    assert_error(clt_div_scalar_(ti, 2), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
    assert_error(clt_add_(ti, ti, 0.5), CLT_ERR_INVALID_ARGUMENT, "alpha");
    /* infinite alphas are not integral either (and ti stays as it was: 25 below) */
    assert_error(clt_add_(ti, ti, INFINITY), CLT_ERR_INVALID_ARGUMENT, "alpha");
    assert_error(clt_sub_(ti, ti, -INFINITY), CLT_ERR_INVALID_ARGUMENT, "alpha");
    /* nor one the sum's dtype cannot hold, as PyTorch converts alpha to it */
    assert_error(clt_add_(ti, ti, 8589934592.0), CLT_ERR_INVALID_ARGUMENT, "without overflow");
    double half = 0.5;
    assert_error(clt_clamp_(ti, &half, NULL), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
    /* int64 into int32 is allowed (same category) */
    const int64_t lv[] = {10, 20};
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, s2, lv, &tl));
    CHECK(clt_add_(ti, tl, 2));
    int32_t got[2];
    CHECK(clt_tensor_read(ti, got, sizeof got));
    cr_assert(got[0] == 25 && got[1] == 33);
    /* float tensor takes an int operand */
    CHECK(clt_mul_(tf, ti));
    const float w[] = {1.7f * 25, -2.5f * 33};
    expect_f32(tf, w, 2);
    /* copy_ converts any pair: floats truncate into integers */
    const float f2[] = {1.7f, -2.5f};
    clt_tensor *src = from_f32(dev, 1, s2, f2);
    CHECK(clt_copy_(ti, src));
    CHECK(clt_tensor_read(ti, got, sizeof got));
    cr_assert(got[0] == 1 && got[1] == -2);
    CHECK(clt_zeros(dev, CLT_BOOL, 1, s2, &tb));
    CHECK(clt_copy_(tb, src));
    uint8_t bv[2];
    CHECK(clt_tensor_read(tb, bv, sizeof bv));
    cr_assert(bv[0] == 1 && bv[1] == 1);
    assert_error(clt_sub_(tb, tb, 1), CLT_ERR_DTYPE_MISMATCH, NULL);
    clt_tensor_free(src);
    clt_tensor_free(ti);
    clt_tensor_free(tf);
    clt_tensor_free(tl);
    clt_tensor_free(tb);
}

Test(inplace, copy_across_devices)
{
    clt_device *dev = get_device("cpu");
    clt_device *dev2 = second_device(dev);
    int64_t s23[] = {2, 3}, s3[] = {3};
    clt_tensor *src = iota(dev2, 1, s3), *dst = NULL, *v = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s23, &dst));
    CHECK(clt_copy_(dst, src));
    double got[6];
    CHECK(clt_tensor_read(dst, got, sizeof got));
    for (int i = 0; i < 6; i++)
        cr_assert_eq(got[i], (double)(i % 3));
    /* into a transposed view of a tensor on the other device */
    clt_tensor *big = iota(dev, 2, s23), *src2 = iota(dev2, 2, (int64_t[]){3, 2});
    CHECK(clt_transpose(big, 0, 1, &v));
    CHECK(clt_copy_(v, src2));
    const float w[] = {0, 2, 4, 1, 3, 5};
    expect_f32(big, w, 6);
    clt_tensor_free(v);
    clt_tensor_free(big);
    clt_tensor_free(src2);
    clt_tensor_free(src);
    clt_tensor_free(dst);
}

Test(inplace, zero_size)
{
    clt_device *dev = get_device("cpu");
    int64_t s0[] = {0}, s20[] = {2, 0};
    clt_tensor *t = NULL, *o = NULL, *out = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, s0, &t));
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, s20, &o));
    CHECK(clt_add_scalar_(t, 1));
    CHECK(clt_add_(t, t, 1));
    CHECK(clt_fill_(t, 1));
    CHECK(clt_copy_(t, t));
    CHECK(clt_tensor_write(t, NULL, 0));
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, s20, &out));
    CHECK(clt_add_out(out, o, t));
    clt_tensor_free(t);
    clt_tensor_free(o);
    clt_tensor_free(out);
}

/* ---- out= ------------------------------------------------------------------------- */

Test(inplace, out_variants)
{
    clt_device *dev = get_device("cpu");
    int64_t s23[] = {2, 3}, s3[] = {3}, s32[] = {3, 2}, s22[] = {2, 2};
    clt_tensor *a = iota(dev, 2, s23), *b = iota(dev, 1, s3), *out = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, s23, &out));
    CHECK(clt_add_out(out, a, b));
    const float w1[] = {0, 2, 4, 3, 5, 7};
    expect_f32(out, w1, 6);
    CHECK(clt_sub_out(out, a, b));
    const float w2[] = {0, 0, 0, 3, 3, 3};
    expect_f32(out, w2, 6);
    CHECK(clt_mul_out(out, a, b));
    const float w3[] = {0, 1, 4, 0, 4, 10};
    expect_f32(out, w3, 6);
    CHECK(clt_add_scalar_(b, 1));
    CHECK(clt_div_out(out, a, b));
    const float w4[] = {0, 0.5f, 2.0f / 3, 3, 2, 5.0f / 3};
    expect_f32(out, w4, 6);
    /* out aliasing an input */
    CHECK(clt_mul_out(a, a, b));
    const float w5[] = {0, 2, 6, 3, 8, 15};
    expect_f32(a, w5, 6);
    /* wrong shape, uncastable dtype */
    clt_tensor *small = NULL, *oi = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, s3, &small));
    assert_error(clt_add_out(small, a, b), CLT_ERR_SHAPE_MISMATCH, "doesn't match");
    CHECK(clt_empty(dev, CLT_INT32, 2, s23, &oi));
    assert_error(clt_add_out(oi, a, b), CLT_ERR_DTYPE_MISMATCH, "can't be cast");
    /* matmul into a float64 transposed view */
    clt_tensor *m = iota(dev, 2, s32), *mo = NULL, *mt = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s22, &mo));
    CHECK(clt_transpose(mo, 0, 1, &mt));
    CHECK(clt_matmul_out(mt, a, m));
    /* a = [[0, 2, 6], [3, 8, 15]], m = [[0, 1], [2, 3], [4, 5]]: a m = [[28, 36],
     * [76, 102]], written transposed */
    double got[4];
    CHECK(clt_tensor_read(mo, got, sizeof got));
    cr_assert(got[0] == 28 && got[1] == 76 && got[2] == 36 && got[3] == 102,
              "%g %g %g %g", got[0], got[1], got[2], got[3]);
    assert_error(clt_matmul_out(small, a, m), CLT_ERR_SHAPE_MISMATCH, NULL);
    /* an operand that requires grad */
    clt_tensor *g = NULL;
    CHECK(clt_rand(NULL, dev, CLT_FLOAT32, 1, s3, &g));
    CHECK(clt_set_requires_grad(g, 1));
    assert_error(clt_add_out(out, a, g), CLT_ERR_INVALID_ARGUMENT,
                 "don't support automatic differentiation");
    clt_set_grad_enabled(0);
    CHECK(clt_add_out(out, a, g));
    clt_set_grad_enabled(1);
    clt_tensor_free(g);
    clt_tensor_free(m);
    clt_tensor_free(mo);
    clt_tensor_free(mt);
    clt_tensor_free(small);
    clt_tensor_free(oi);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(out);
}

/* ---- autograd ---------------------------------------------------------------------- */

Test(inplace, leaf_error_and_no_grad)
{
    clt_device *dev = get_device("cpu");
    int64_t s3[] = {3};
    clt_tensor *x = iota(dev, 1, s3);
    CHECK(clt_set_requires_grad(x, 1));
    assert_error(clt_add_scalar_(x, 1), CLT_ERR_INVALID_ARGUMENT, "leaf");
    assert_error(clt_fill_(x, 1), CLT_ERR_INVALID_ARGUMENT, "leaf");
    float v[3] = {7, 8, 9};
    assert_error(clt_tensor_write(x, v, sizeof v), CLT_ERR_INVALID_ARGUMENT, "leaf");
    const float w0[] = {0, 1, 2};
    expect_f32(x, w0, 3);
    clt_set_grad_enabled(0);
    CHECK(clt_add_scalar_(x, 1));
    CHECK(clt_tensor_write(x, v, sizeof v));
    clt_set_grad_enabled(1);
    expect_f32(x, v, 3);
    cr_assert(clt_is_leaf(x));
    clt_tensor_free(x);
}

/* torch has no host write: one into a tensor that requires grad is refused,
 * naming the recorded way (clt_copy_), and leaves the tensor as it was.
 * The in-place ops themselves record (tests/test_inplace_grad.c). */
Test(inplace, host_write_refuses_when_grad_is_needed)
{
    clt_device *dev = get_device("cpu");
    int64_t s3[] = {3};
    clt_tensor *x = iota(dev, 1, s3), *y = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul_scalar(x, 2, &y));
    float v[3] = {7, 8, 9};
    assert_error(clt_tensor_write(y, v, sizeof v), CLT_ERR_INVALID_ARGUMENT, "clt_copy_");
    clt_event *ev = (clt_event *)y;
    assert_error(clt_tensor_write_async(y, v, sizeof v, &ev), CLT_ERR_INVALID_ARGUMENT,
                 "clt_copy_");
    cr_assert_null(ev);
    const float w[] = {0, 2, 4};
    expect_f32(y, w, 3);
    cr_assert_str_eq(clt_grad_fn_name(y), "MulBackward1");
    clt_tensor_free(x);
    clt_tensor_free(y);
}

/* y = 3 x0 (a non-leaf); y += 0.5 x1; y = 2 (y + 1); y -= 2 x1; y /= 4;
 * y += y; then out = y * x0 exercises a history through the in-place ops,
 * and z = zeros_like(x0); z.add_(x1, 1.5) one that starts at a tensor
 * without history. */
static clt_status inplace_chain(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    clt_tensor *y = NULL, *z = NULL;
    clt_status st = clt_mul_scalar(in[0], 3.0, &y);
    if (st == CLT_OK)
        st = clt_add_(y, in[1], 0.5);
    if (st == CLT_OK)
        st = clt_add_scalar_(y, 1.0);
    if (st == CLT_OK)
        st = clt_mul_scalar_(y, 2.0);
    if (st == CLT_OK)
        st = clt_sub_(y, in[1], 2.0);
    if (st == CLT_OK)
        st = clt_sub_scalar_(y, 0.25);
    if (st == CLT_OK)
        st = clt_div_scalar_(y, 4.0);
    if (st == CLT_OK)
        st = clt_add_(y, y, 1.0);
    if (st == CLT_OK)
        st = clt_zeros_like(in[0], &z);
    if (st == CLT_OK)
        st = clt_add_(z, in[1], 1.5);
    if (st == CLT_OK)
        st = clt_add_(y, z, 1.0);
    if (st == CLT_OK)
        st = clt_mul(y, in[0], out);
    clt_tensor_free(y);
    clt_tensor_free(z);
    return st;
}

Test(inplace, recorded_history_gradcheck)
{
    clt_device *dev = get_device("cpu");
    static const double X6[] = {0.7, -1.3, 2.1, -0.4, 1.6, -2.2}, Y3[] = {1.1, -0.6, 1.9};
    gc_in ins[2] = {{2, {2, 3}, X6, 1}, {1, {3}, Y3, 1}};
    gradcheck(dev, inplace_chain, NULL, 2, ins);
    gc_in only1[2] = {{2, {2, 3}, X6, 0}, {1, {3}, Y3, 1}};
    gradcheck(dev, inplace_chain, NULL, 2, only1);

    /* the grad_fn names follow PyTorch's */
    int64_t s3[] = {3};
    clt_tensor *x = iota(dev, 1, s3), *z = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, s3, &z));
    CHECK(clt_add_(z, x, 1));
    cr_assert(!clt_is_leaf(z) && clt_requires_grad(z));
    cr_assert_str_eq(clt_grad_fn_name(z), "AddBackward0");
    CHECK(clt_mul_scalar_(z, 2));
    cr_assert_str_eq(clt_grad_fn_name(z), "MulBackward1");
    clt_tensor_free(x);
    clt_tensor_free(z);
}

Test(inplace, version_counter_catches_modified_saved_tensor)
{
    clt_device *dev = get_device("cpu");
    int64_t s3[] = {3};
    clt_tensor *x = iota(dev, 1, s3), *y = NULL, *s = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_exp(x, &y)); /* saves its output */
    clt_set_grad_enabled(0);
    CHECK(clt_add_scalar_(y, 1));
    clt_set_grad_enabled(1);
    CHECK(clt_sum(y, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "version");
    clt_tensor_free(s);
    clt_tensor_free(y);
    /* recorded in grad mode it fails the same way */
    CHECK(clt_exp(x, &y));
    CHECK(clt_add_scalar_(y, 1));
    CHECK(clt_sum(y, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT, "modified by an in-place");
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* ---- host writes -------------------------------------------------------------------- */

Test(inplace, writes_blocking_and_async)
{
    clt_device *dev = get_device("cpu");
    int64_t s23[] = {2, 3};
    clt_tensor *t = iota(dev, 2, s23), *v = NULL;
    const float w[] = {10, 11, 12, 13, 14, 15};
    CHECK(clt_tensor_write(t, w, sizeof w));
    expect_f32(t, w, 6);
    /* a transposed view: the data is row-major in the view's shape [3, 2] */
    CHECK(clt_transpose(t, 0, 1, &v));
    const float vt[] = {1, 2, 3, 4, 5, 6};
    CHECK(clt_tensor_write(v, vt, sizeof vt));
    const float wt[] = {1, 3, 5, 2, 4, 6};
    expect_f32(t, wt, 6);
    clt_tensor_free(v);
    /* a row: only it changes */
    CHECK(clt_narrow(t, 0, 1, 1, &v));
    float row[3] = {-1, -2, -3};
    clt_event *ev = NULL;
    CHECK(clt_tensor_write_async(v, row, sizeof row, &ev));
    CHECK(clt_event_wait(ev));
    clt_event_free(ev);
    const float wr[] = {1, 3, 5, -1, -2, -3};
    expect_f32(t, wr, 6);
    /* async into a strided view, then query until done */
    clt_tensor *col = NULL;
    CHECK(clt_slice(t, 1, 0, 3, 2, &col));
    float cv[4] = {7, 8, 9, 10};
    CHECK(clt_tensor_write_async(col, cv, sizeof cv, &ev));
    int done = 0;
    while (!done)
        CHECK(clt_event_query(ev, &done));
    clt_event_free(ev);
    const float wc[] = {7, 3, 8, 9, -2, 10};
    expect_f32(t, wc, 6);
    assert_error(clt_tensor_write(t, w, sizeof w - 1), CLT_ERR_BUFFER_TOO_SMALL, "needs 24");
    assert_error(clt_tensor_write_async(t, w, 4, &ev), CLT_ERR_BUFFER_TOO_SMALL, NULL);
    cr_assert_null(ev);
    expect_f32(t, wc, 6);
    clt_tensor_free(col);
    clt_tensor_free(v);
    clt_tensor_free(t);
}

/* ---- *_like and random ---------------------------------------------------------------- */

Test(inplace, like_functions)
{
    clt_device *dev = get_device("cpu");
    int64_t s23[] = {2, 3};
    clt_tensor *t = iota(dev, 2, s23), *v = NULL, *r = NULL;
    CHECK(clt_transpose(t, 0, 1, &v));
    CHECK(clt_zeros_like(v, &r));
    cr_assert_eq(clt_tensor_shape(r)[0], 3);
    cr_assert_eq(clt_tensor_strides(r)[1], 1);
    const float z[6] = {0};
    expect_f32(r, z, 6);
    clt_tensor_free(r);
    CHECK(clt_ones_like(v, &r));
    const float o[] = {1, 1, 1, 1, 1, 1};
    expect_f32(r, o, 6);
    clt_tensor_free(r);
    CHECK(clt_full_like(v, 2.5, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    clt_tensor_free(r);
    CHECK(clt_empty_like(v, &r));
    cr_assert_eq(clt_tensor_numel(r), 6);
    clt_tensor_free(r);
    /* rand_like gives what clt_rand gives */
    clt_generator *g = NULL;
    clt_tensor *a = NULL;
    CHECK(clt_generator_new(42, &g));
    CHECK(clt_rand_like(g, v, &r));
    clt_manual_seed(g, 42);
    CHECK(clt_rand(g, dev, CLT_FLOAT32, 2, (int64_t[]){3, 2}, &a));
    float *x1 = read_f32(r), *x2 = read_f32(a);
    cr_assert(memcmp(x1, x2, 6 * sizeof(float)) == 0);
    free(x1);
    free(x2);
    clt_tensor_free(r);
    clt_tensor_free(a);
    CHECK(clt_randn_like(g, v, &r));
    clt_tensor_free(r);
    clt_generator_free(g);
    clt_tensor_free(v);
    clt_tensor_free(t);
}

static float *uniform_on(clt_device *dev, uint64_t seed, size_t n, double lo, double hi)
{
    clt_generator *g = NULL;
    clt_tensor *t = NULL;
    int64_t s[] = {(int64_t)n};
    CHECK(clt_generator_new(seed, &g));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, s, &t));
    CHECK(clt_uniform_(t, g, lo, hi));
    cr_assert_eq(clt_generator_offset(g), n);
    float *v = read_f32(t);
    clt_tensor_free(t);
    clt_generator_free(g);
    return v;
}

Test(inplace, uniform_and_normal)
{
    clt_device *dev = get_device("cpu");
    const size_t n = 4096;
    float *a = uniform_on(dev, 7, n, -2, 3), *b = uniform_on(dev, 7, n, -2, 3);
    cr_assert(memcmp(a, b, n * sizeof *a) == 0);
    double mean = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(a[i] >= -2 && a[i] <= 3, "%g", a[i]);
        mean += a[i] / (double)n;
    }
    cr_assert(fabs(mean - 0.5) < 0.1, "mean %g", mean);
    /* identical on a second device */
    size_t ndev = 0;
    clt_device_count(&ndev);
    if (ndev > 1) {
        clt_device *dev2 = second_device(dev);
        float *c = uniform_on(dev2, 7, n, -2, 3);
        cr_assert(memcmp(a, c, n * sizeof *a) == 0);
        free(c);
    }
    free(a);
    free(b);
    /* normal_ into a strided view: only its elements change */
    clt_generator *g = NULL;
    clt_tensor *t = NULL, *v = NULL;
    int64_t s[] = {2 * (int64_t)n};
    CHECK(clt_generator_new(3, &g));
    CHECK(clt_full(dev, CLT_FLOAT32, 1, s, -100, &t));
    CHECK(clt_slice(t, 0, 0, 2 * (int64_t)n, 2, &v));
    CHECK(clt_normal_(v, g, 10, 0.5));
    float *x = read_f32(t);
    double m = 0, var = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        if (i % 2) {
            cr_assert_eq(x[i], -100.0f);
            continue;
        }
        m += x[i] / (double)n;
    }
    for (size_t i = 0; i < 2 * n; i += 2)
        var += (x[i] - m) * (x[i] - m) / (double)n;
    cr_assert(fabs(m - 10) < 0.05 && fabs(sqrt(var) - 0.5) < 0.05, "mean %g std %g", m,
              sqrt(var));
    free(x);
    assert_error(clt_uniform_(t, g, 1, 0), CLT_ERR_INVALID_ARGUMENT, NULL);
    assert_error(clt_normal_(t, g, 0, -1), CLT_ERR_INVALID_ARGUMENT, "std");
    clt_tensor *ti = NULL;
    CHECK(clt_zeros(dev, CLT_INT32, 1, s, &ti));
    assert_error(clt_uniform_(ti, g, 0, 1), CLT_ERR_INVALID_ARGUMENT, NULL);
    CHECK(clt_set_requires_grad(t, 1));
    assert_error(clt_normal_(t, g, 0, 1), CLT_ERR_INVALID_ARGUMENT, "leaf");
    clt_tensor_free(ti);
    clt_tensor_free(v);
    clt_tensor_free(t);
    clt_generator_free(g);
}

/* uniform_ bounds that the dtype cannot hold, or whose difference it
 * cannot: refused as PyTorch refuses them (they filled the tensor with inf
 * and NaN), the tensor and the generator left alone; the widest range that
 * fits is drawn from. */
Test(inplace, uniform_ranges_past_the_dtype_are_refused)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    clt_tensor *t = NULL;
    int64_t s[] = {1000};
    CHECK(clt_generator_new(5, &g));
    CHECK(clt_full(dev, CLT_FLOAT32, 1, s, 5, &t));
    const double bad[4][2] = {{-3e38, 3e38}, {-1e300, 1e300}, {-1e39, -0.9e39}, {0, 1e39}};
    for (int k = 0; k < 4; k++) {
        assert_error(clt_uniform_(t, g, bad[k][0], bad[k][1]), CLT_ERR_INVALID_ARGUMENT,
                     "to-from to be finite float32 values");
        cr_assert_eq(clt_generator_offset(g), 0, "a refused call advanced the generator");
    }
    float *x = read_f32(t);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(x[i], 5.0f, "a refused call wrote element %d: %g", i, x[i]);
    free(x);
    CHECK(clt_uniform_(t, g, -1.5e38, 1.5e38));
    x = read_f32(t);
    int neg = 0;
    for (int i = 0; i < 1000; i++) {
        cr_assert(isfinite(x[i]) && x[i] >= -1.5e38f && x[i] <= 1.5e38f, "element %d: %g", i,
                  x[i]);
        neg += x[i] < 0;
    }
    cr_assert(neg > 400 && neg < 600, "%d negative values of 1000", neg);
    free(x);
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        clt_tensor *d64 = NULL;
        CHECK(clt_zeros(dev, CLT_FLOAT64, 1, s, &d64));
        CHECK(clt_uniform_(d64, g, -3e38, 3e38)); /* float64 holds it */
        double y[1000];
        CHECK(clt_tensor_read(d64, y, sizeof y));
        for (int i = 0; i < 1000; i++)
            cr_assert(isfinite(y[i]) && fabs(y[i]) <= 3e38, "element %d: %g", i, y[i]);
        clt_tensor_free(d64);
    }
    clt_tensor_free(t);
    clt_generator_free(g);
}

static int64_t *randperm_on(clt_device *dev, uint64_t seed, int64_t n)
{
    clt_generator *g = NULL;
    clt_tensor *t = NULL;
    CHECK(clt_generator_new(seed, &g));
    CHECK(clt_randperm(g, dev, n, CLT_INT64, &t));
    cr_assert_eq(clt_tensor_numel(t), n);
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    CHECK(clt_tensor_read(t, v, (size_t)n * sizeof *v));
    clt_tensor_free(t);
    clt_generator_free(g);
    return v;
}

Test(inplace, randperm)
{
    clt_device *dev = get_device("cpu");
    const int64_t n = 2000;
    int64_t *a = randperm_on(dev, 11, n), *b = randperm_on(dev, 11, n);
    int64_t *c = randperm_on(dev, 12, n);
    char *seen = calloc((size_t)n, 1);
    int64_t fixed = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(a[i] >= 0 && a[i] < n && !seen[a[i]], "a[%lld] = %lld", (long long)i,
                  (long long)a[i]);
        seen[a[i]] = 1;
        fixed += a[i] == i;
    }
    cr_assert(fixed < 20, "%lld fixed points", (long long)fixed);
    cr_assert(memcmp(a, b, (size_t)n * sizeof *a) == 0);
    cr_assert(memcmp(a, c, (size_t)n * sizeof *a) != 0);
    size_t ndev = 0;
    clt_device_count(&ndev);
    if (ndev > 1) {
        int64_t *d = randperm_on(second_device(dev), 11, n);
        cr_assert(memcmp(a, d, (size_t)n * sizeof *a) == 0);
        free(d);
    }
    free(seen);
    free(a);
    free(b);
    free(c);
    /* other dtypes, empty, too large */
    clt_tensor *t = NULL;
    CHECK(clt_randperm(NULL, dev, 5, CLT_INT32, &t));
    int32_t v[5];
    CHECK(clt_tensor_read(t, v, sizeof v));
    int sum = 0;
    for (int i = 0; i < 5; i++)
        sum += 1 << v[i];
    cr_assert_eq(sum, 31);
    clt_tensor_free(t);
    CHECK(clt_randperm(NULL, dev, 0, CLT_INT64, &t));
    cr_assert_eq(clt_tensor_numel(t), 0);
    clt_tensor_free(t);
    assert_error(clt_randperm(NULL, dev, 300, CLT_UINT8, &t), CLT_ERR_INVALID_ARGUMENT,
                 "too large");
    cr_assert_null(t);
    assert_error(clt_randperm(NULL, dev, -1, CLT_INT64, &t), CLT_ERR_INVALID_ARGUMENT, NULL);
}
