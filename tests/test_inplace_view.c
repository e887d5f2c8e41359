/* test_inplace_view.c: in-place ops on views reach their base's history
 * (torch's CopySlices) and views made before an in-place op on their base
 * follow its new history (AsStridedBackward0): gradients against central
 * finite differences in float64, grad_fn names as torch 1.13 gives them,
 * torch's three refusals (nothing changed), detach views and second
 * derivatives. */
#include "gradcheck.h"

static const int64_t s4[] = {4}, s23[] = {2, 3}, s33[] = {3, 3}, s44[] = {4, 4};

/* The elements of a 1-D or flattened t, as one 1-D tensor. */
static clt_status flat(const clt_tensor *t, clt_tensor **out)
{
    return clt_flatten(t, 0, -1, out);
}

/* a and b flattened, one after the other. */
static clt_status join2(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    clt_tensor *fa = NULL, *fb = NULL;
    clt_status st = flat(a, &fa);
    if (st == CLT_OK)
        st = flat(b, &fb);
    const clt_tensor *both[2] = {fa, fb};
    if (st == CLT_OK)
        st = clt_cat(both, 2, 0, out);
    clt_tensor_free(fa);
    clt_tensor_free(fb);
    return st;
}

/* t.select(dim, i), as a narrow and a squeeze (a chain of two views). */
static clt_status select_view(const clt_tensor *t, int dim, int64_t i, clt_tensor **out)
{
    clt_tensor *n = NULL;
    clt_status st = clt_narrow(t, dim, i, 1, &n);
    if (st == CLT_OK)
        st = clt_squeeze(n, dim, out);
    clt_tensor_free(n);
    return st;
}

static void expect_name(const clt_tensor *t, const char *want)
{
    const char *got = clt_grad_fn_name(t);
    if (want == NULL)
        cr_assert_null(got, "grad_fn is %s, expected none", got);
    else
        cr_assert(got && strcmp(got, want) == 0, "grad_fn is %s, expected %s",
                  got ? got : "(none)", want);
}

/* ---- scenes: each returns a tensor whose weighted sum is differentiated ---- */

/* y = x * 2; y[1:3] *= 3 (a slice of a non-leaf); the base y. */
static clt_status slice_mul(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *v = NULL;
    CHECK(clt_mul_scalar(in[0], 2.0, &y));
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    CHECK(clt_mul_scalar_(v, 3.0));
    *out = y;
    return CLT_OK;
}

/* y = x * x (2x3); y[1] += 2 w (a select, an operand that requires grad);
 * the base y squared. */
static clt_status select_add(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *v = NULL;
    CHECK(clt_mul(in[0], in[0], &y));
    CHECK(select_view(y, 0, 1, &v));
    CHECK(clt_add_(v, in[1], 2.0));
    return clt_mul(y, y, out);
}

/* y = x * 1.5 (2x3); y.T -= w / 2 (a transpose, w 3x2); exp(y). */
static clt_status transpose_sub(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *v = NULL;
    CHECK(clt_mul_scalar(in[0], 1.5, &y));
    CHECK(clt_transpose(y, 0, 1, &v));
    CHECK(clt_sub_(v, in[1], 0.5));
    return clt_exp(y, out);
}

/* y = x * 2 (3x3); diagonal(y) clamped to [lo, hi] with tensor bounds (a
 * recorded formula that saves tensors); y * y. */
static clt_status diagonal_clamp(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *d = NULL;
    CHECK(clt_mul_scalar(in[0], 2.0, &y));
    CHECK(clt_diagonal(y, 0, 0, 1, &d));
    CHECK(clt_clamp_tensor_(d, in[1], in[2]));
    return clt_mul(y, y, out);
}

/* a chain of views: y = x * 1 (4x4); a = y[1:3]; b = a[:, 2]; b += w; then
 * the base, and a used after. */
static clt_status chain(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *a = NULL, *b = NULL, *aa = NULL;
    CHECK(clt_mul_scalar(in[0], 1.0, &y));
    CHECK(clt_narrow(y, 0, 1, 2, &a));
    CHECK(select_view(a, 1, 2, &b));
    CHECK(clt_add_(b, in[1], 1.0));
    if (clt_is_grad_enabled()) {
        expect_name(b, "AsStridedBackward0");
        expect_name(a, "AsStridedBackward0");
        expect_name(y, "CopySlices");
    }
    CHECK(clt_mul(a, a, &aa));
    return join2(y, aa, out);
}

/* the base used before and after: y = x * 2; p = y + y (which saves
 * nothing: torch refuses a saved y changed since); y[1:3] *= 3; p and
 * y * y. */
static clt_status before_after(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *p = NULL, *v = NULL;
    CHECK(clt_mul_scalar(in[0], 2.0, &y));
    clt_tensor *yy = NULL;
    CHECK(clt_add(y, y, &p));
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    CHECK(clt_mul_scalar_(v, 3.0));
    CHECK(clt_mul(y, y, &yy));
    return join2(p, yy, out);
}

/* the base modified after the view was made: y = x * 2; v = y[0:2];
 * y *= 5; v * v. */
static clt_status base_after_view(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *v = NULL;
    CHECK(clt_mul_scalar(in[0], 2.0, &y));
    CHECK(clt_slice(y, 0, 0, 2, 1, &v));
    CHECK(clt_mul_scalar_(y, 5.0));
    return clt_mul(v, v, out);
}

/* the view used after: y = x * 2; v = y[1:3]; v *= 3; v * v and y. */
static clt_status view_after(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    clt_tensor *y = NULL, *v = NULL, *vv = NULL;
    CHECK(clt_mul_scalar(in[0], 2.0, &y));
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    CHECK(clt_mul_scalar_(v, 3.0));
    CHECK(clt_mul(v, v, &vv));
    return join2(vv, y, out);
}

/* a base that needs no grad and an operand that does: b = zeros (2x2),
 * c = b[1] made before; b[0] += x; then b[1] += w through c; b * b. */
static clt_status plain_base(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    const int64_t s22[] = {2, 2};
    clt_tensor *b = NULL, *r = NULL, *c = NULL;
    CHECK(clt_zeros(clt_tensor_device(in[0]), CLT_FLOAT64, 2, s22, &b));
    CHECK(select_view(b, 0, 1, &c));
    CHECK(select_view(b, 0, 0, &r));
    CHECK(clt_add_(r, in[0], 1.0));
    if (clt_is_grad_enabled()) {
        cr_assert(clt_requires_grad(b));
        expect_name(b, "CopySlices");
        expect_name(r, "AsStridedBackward0");
        cr_assert(clt_requires_grad(c), "a view made before its base required grad");
        expect_name(c, "AsStridedBackward0");
    }
    CHECK(clt_add_(c, in[1], 1.0));
    return clt_mul(b, b, out);
}

/* a base of any strides: b = detach(zeros(3, 2).T) (2x3, strides 1, 2);
 * b[1] += x; b * b. */
static clt_status strided_base(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    (void)ctx;
    const int64_t s32[] = {3, 2};
    clt_tensor *z = NULL, *zt = NULL, *b = NULL, *r = NULL;
    CHECK(clt_zeros(clt_tensor_device(in[0]), CLT_FLOAT64, 2, s32, &z));
    CHECK(clt_transpose(z, 0, 1, &zt));
    CHECK(clt_detach(zt, &b));
    CHECK(select_view(b, 0, 1, &r));
    CHECK(clt_add_(r, in[0], 1.0));
    return clt_mul(b, b, out);
}

static const double xv4[] = {1.0, 2.0, 3.0, 4.0};
static const double xv6[] = {0.3, -0.7, 1.1, 0.5, -1.3, 0.9};
static const double wv6[] = {0.2, -0.4, 0.6, 0.1, 0.8, -0.5};
static const double xv9[] = {0.5, -1.2, 0.3, 0.8, 1.5, -0.4, 0.1, -0.9, 0.7};
static const double xv16[] = {0.1, 0.2,  -0.3, 0.4,  0.5, -0.6, 0.7,  0.8,
                              0.9, -1.0, 1.1,  -1.2, 1.3, 1.4,  -1.5, 1.6};

static const double w2a[] = {0.3, -0.8}, w2b[] = {-0.6, 1.7}, x3[] = {0.4, -1.1, 2.3};
static const double lo3[] = {-1.0, 0.0, -0.5}, hi3[] = {0.5, 2.0, 1.0};

/* Every scene's gradients against central finite differences. */
Test(inplace_view, scenes_by_finite_differences)
{
    static const struct {
        const char *name;
        gc_fn f;
        int nin;
        gc_in in[3];
    } scenes[] = {
        {"slice of a non-leaf", slice_mul, 1, {{1, {4}, xv4, 1}}},
        {"select, an operand that requires grad", select_add, 2,
         {{2, {2, 3}, xv6, 1}, {1, {3}, wv6, 1}}},
        {"transpose", transpose_sub, 2, {{2, {2, 3}, xv6, 1}, {2, {3, 2}, wv6, 1}}},
        {"diagonal, a formula that saves", diagonal_clamp, 3,
         {{2, {3, 3}, xv9, 1}, {1, {3}, lo3, 1}, {1, {3}, hi3, 1}}},
        {"chain of views", chain, 2, {{2, {4, 4}, xv16, 1}, {1, {2}, w2a, 1}}},
        {"base used before and after", before_after, 1, {{1, {4}, xv4, 1}}},
        {"base modified after the view was made", base_after_view, 1, {{1, {4}, xv4, 1}}},
        {"view used after", view_after, 1, {{1, {4}, xv4, 1}}},
        {"base without grad, an operand with", plain_base, 2,
         {{1, {2}, xv4, 1}, {1, {2}, w2b, 1}}},
        {"base of any strides", strided_base, 1, {{1, {3}, x3, 1}}},
    };
    clt_device *dev = get_device("cpu");
    for (size_t k = 0; k < sizeof scenes / sizeof *scenes; k++) {
        cr_log_info("scene: %s", scenes[k].name);
        gradcheck(dev, scenes[k].f, NULL, scenes[k].nin, scenes[k].in);
    }
}

Test(inplace_view, slice_of_a_non_leaf)
{
    clt_device *dev = get_device("cpu");
    /* torch's x.grad for y.sum(): [2, 6, 6, 2]; the names */
    clt_tensor *x = NULL, *y = NULL, *loss = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(slice_mul(&x, &y, NULL));
    expect_name(y, "CopySlices");
    CHECK(clt_sum(y, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(x, &g));
    const double want[] = {2, 6, 6, 2};
    assert_tensor_close(g, want, 4, 0, 0, "gradient");
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

Test(inplace_view, base_modified_after_the_view_was_made)
{
    clt_device *dev = get_device("cpu");
    /* torch: v.sum().backward() gives [10, 10, 0, 0]; v follows y */
    clt_tensor *x = NULL, *y = NULL, *v = NULL, *loss = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul_scalar(x, 2.0, &y));
    CHECK(clt_slice(y, 0, 0, 2, 1, &v));
    expect_name(v, "SliceBackward0");
    CHECK(clt_mul_scalar_(y, 5.0));
    expect_name(y, "MulBackward1");
    expect_name(v, "AsStridedBackward0");
    CHECK(clt_sum(v, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(x, &g));
    const double want[] = {10, 10, 0, 0};
    assert_tensor_close(g, want, 4, 0, 0, "gradient");
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(v);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* x (4, a leaf) and y = x * 2 with its data read back. */
static void leaf_and_double(clt_device *dev, clt_tensor **x, clt_tensor **y)
{
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, x));
    CHECK(clt_set_requires_grad(*x, 1));
    CHECK(clt_mul_scalar(*x, 2.0, y));
}

static void expect_values(const clt_tensor *t, const double *want, size_t n)
{
    assert_tensor_close(t, want, n, 0, 0, "gradient");
}

Test(inplace_view, view_of_a_leaf_is_refused)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *v = NULL;
    leaf_and_double(dev, &x, &y);
    CHECK(clt_slice(x, 0, 1, 3, 1, &v));
    assert_error(clt_add_scalar_(v, 1.0), CLT_ERR_INVALID_ARGUMENT,
                 "a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation");
    expect_values(x, xv4, 4);
    expect_name(v, "SliceBackward0");
    cr_assert(clt_is_leaf(x));
    /* with grad mode off it is allowed, and v follows x afterwards */
    int was = clt_set_grad_enabled(0);
    CHECK(clt_add_scalar_(v, 1.0));
    clt_set_grad_enabled(was);
    const double want[] = {1, 3, 4, 4};
    expect_values(x, want, 4);
    expect_name(v, "AsStridedBackward0");
    clt_tensor_free(v);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* torch refuses whenever the view requires grad and its base is a leaf:
 * here y, a view of x (no grad), made a leaf that requires grad, and v a
 * view of y.  Recording it gave x a CopySlices holding y, which holds x: a
 * cycle that leaked both (found by the fuzz target). */
Test(inplace_view, view_of_a_leaf_view_that_requires_grad_is_refused)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *v = NULL, *c = NULL;
    clt_memory_stats before, after;
    CHECK(clt_memory_stats_get(dev, &before));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_slice(x, 0, 0, 4, 1, &y));
    CHECK(clt_set_requires_grad(y, 1));
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (const int64_t[]){2}, xv4, &c));
    CHECK(clt_set_requires_grad(c, 1));
    assert_error(clt_clamp_tensor_(v, NULL, c), CLT_ERR_INVALID_ARGUMENT,
                 "a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation");
    expect_values(x, xv4, 4);
    expect_name(v, "SliceBackward0");
    clt_tensor_free(c);
    clt_tensor_free(v);
    clt_tensor_free(y);
    clt_tensor_free(x);
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.allocated, before.allocated, "%llu bytes left allocated",
                 (unsigned long long)(after.allocated - before.allocated));
}

Test(inplace_view, output_of_several_views_is_refused)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, **parts = NULL;
    size_t n = 0;
    leaf_and_double(dev, &x, &y);
    CHECK(clt_split(y, 2, 0, &parts, &n));
    cr_assert_eq(n, 2);
    assert_error(clt_mul_scalar_(parts[1], 3.0), CLT_ERR_INVALID_ARGUMENT,
                 "output 1 of SplitBackward0 is a view and is being modified in place");
    const double twice[] = {2, 4, 6, 8};
    expect_values(y, twice, 4);
    expect_name(y, "MulBackward1");
    expect_name(parts[1], "SplitBackward0");
    /* a base that needs no grad, an operand that does */
    clt_tensor *b = NULL, **rows = NULL, *w = NULL;
    size_t nr = 0;
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s23, &b));
    CHECK(clt_unbind(b, 0, &rows, &nr));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4 + 0, xv4, &w));
    clt_tensor *w3 = NULL;
    CHECK(clt_narrow(x, 0, 0, 3, &w3));
    assert_error(clt_add_(rows[0], w3, 1.0), CLT_ERR_INVALID_ARGUMENT,
                 "output 0 of UnbindBackward0 is a view and is being modified in place (it is "
                 "recorded because operand 1 of the op requires grad)");
    names_only("clt_add_");
    cr_assert(!clt_requires_grad(b));
    const double zeros[6] = {0};
    expect_values(b, zeros, 6);
    /* without grad anywhere the pieces are written, as in torch */
    CHECK(clt_add_scalar_(rows[1], 1.0));
    const double ones[] = {0, 0, 0, 1, 1, 1};
    expect_values(b, ones, 6);
    for (size_t k = 0; k < n; k++)
        clt_tensor_free(parts[k]);
    for (size_t k = 0; k < nr; k++)
        clt_tensor_free(rows[k]);
    clt_free(parts);
    clt_free(rows);
    clt_tensor_free(w3);
    clt_tensor_free(w);
    clt_tensor_free(b);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

Test(inplace_view, view_made_in_no_grad_mode_is_refused)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *v = NULL;
    leaf_and_double(dev, &x, &y);
    int was = clt_set_grad_enabled(0);
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    clt_set_grad_enabled(was);
    assert_error(clt_mul_scalar_(v, 3.0), CLT_ERR_INVALID_ARGUMENT,
                 "a view was created in no_grad mode and is being modified in place with grad "
                 "mode enabled");
    const double twice[] = {2, 4, 6, 8};
    expect_values(y, twice, 4);
    expect_name(y, "MulBackward1");
    /* both in no-grad mode: allowed, not recorded */
    was = clt_set_grad_enabled(0);
    CHECK(clt_mul_scalar_(v, 3.0));
    clt_set_grad_enabled(was);
    const double after[] = {2, 12, 18, 8};
    expect_values(y, after, 4);
    expect_name(y, "MulBackward1");
    clt_tensor_free(v);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

static const char no_grad_msg[] =
    "a view was created in no_grad mode and is being modified in place with grad mode enabled";

/* A view made in no-grad mode of a tensor that does not require grad is
 * still a view (torch's CreationMeta::NO_GRAD_MODE): in grad mode an
 * in-place op on it, or on a view of it, that an operand makes need a
 * gradient is refused, nothing changed; one that needs none is done.
 * torch 1.13 gives each of these outcomes. */
Test(inplace_view, no_grad_view_of_a_tensor_without_grad)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *b = NULL, *v = NULL, *u = NULL, *w = NULL, *w1 = NULL, *c = NULL;
    clt_memory_stats before, after;
    CHECK(clt_memory_stats_get(dev, &before));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 1, s4, &b));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (const int64_t[]){2}, w2a, &w));
    CHECK(clt_set_requires_grad(w, 1));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (const int64_t[]){2}, w2b, &c));
    int was = clt_set_grad_enabled(0);
    CHECK(clt_slice(b, 0, 1, 3, 1, &v));
    clt_set_grad_enabled(was);
    assert_error(clt_add_(v, w, 1.0), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    cr_assert(strstr(clt_last_error(), "(it is recorded because operand 1 of the op requires "
                                       "grad)") != NULL,
              "%s", clt_last_error());
    assert_error(clt_copy_(v, w), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    /* a view of it made in grad mode is one too */
    CHECK(clt_narrow(v, 0, 0, 1, &u));
    CHECK(clt_narrow(w, 0, 1, 1, &w1));
    assert_error(clt_mul_(u, w1), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    const double zeros[4] = {0};
    expect_values(b, zeros, 4);
    cr_assert(!clt_requires_grad(b) && !clt_requires_grad(v) && !clt_requires_grad(u));
    expect_name(b, NULL);
    expect_name(v, NULL);
    /* nothing needs a gradient: done */
    CHECK(clt_add_(v, c, 2.0));
    const double added[] = {0, 2 * w2b[0], 2 * w2b[1], 0};
    expect_values(b, added, 4);
    expect_name(v, NULL);
    /* both in no-grad mode: done, not recorded */
    was = clt_set_grad_enabled(0);
    CHECK(clt_add_(v, w, 1.0));
    clt_set_grad_enabled(was);
    const double both[] = {0, 2 * w2b[0] + w2a[0], 2 * w2b[1] + w2a[1], 0};
    expect_values(b, both, 4);
    expect_name(v, NULL);
    cr_assert(!clt_requires_grad(v));
    /* the view made a leaf that requires grad: the same refusal (not the
     * leaf's), as torch */
    CHECK(clt_set_requires_grad(v, 1));
    assert_error(clt_mul_scalar_(v, 3.0), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    expect_values(b, both, 4);
    clt_tensor_free(u);
    clt_tensor_free(v);
    /* the base made to require grad after the view: the view does too
     * (torch), so an in-place op on it is refused without an operand that
     * does; one made in grad mode is a view of a leaf */
    was = clt_set_grad_enabled(0);
    CHECK(clt_slice(b, 0, 0, 2, 1, &v));
    clt_set_grad_enabled(was);
    CHECK(clt_slice(b, 0, 2, 4, 1, &u));
    CHECK(clt_set_requires_grad(b, 1));
    assert_error(clt_add_(v, c, 1.0), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    assert_error(clt_add_(u, c, 1.0), CLT_ERR_INVALID_ARGUMENT,
                 "a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation");
    expect_values(b, both, 4);
    expect_name(u, NULL);
    clt_tensor_free(u);
    clt_tensor_free(v);
    clt_tensor_free(w1);
    clt_tensor_free(c);
    clt_tensor_free(w);
    clt_tensor_free(b);
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_stats_get(dev, &after));
    cr_assert_eq(after.allocated, before.allocated, "%llu bytes left allocated",
                 (unsigned long long)(after.allocated - before.allocated));
}

/* Which refusal: a view's creation in no-grad mode outranks its being a
 * piece of split/unbind when it is made (torch's propagate_creation_meta):
 * a piece made in no-grad mode, and a view made in no-grad mode of a
 * piece, give the no-grad message; a piece made in grad mode of a view
 * made in no-grad mode gives the pieces' message (torch 1.13's begins
 * with the no-grad sentence there, its wording for any view without a
 * grad_fn, and ends with the pieces' reason). */
Test(inplace_view, no_grad_mode_and_pieces)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, **rows = NULL, *r0 = NULL, *b = NULL, *bv = NULL, *w = NULL;
    size_t nr = 0;
    leaf_and_double(dev, &x, &y);
    int was = clt_set_grad_enabled(0);
    CHECK(clt_unbind(y, 0, &rows, &nr));
    clt_set_grad_enabled(was);
    assert_error(clt_mul_scalar_(rows[1], 3.0), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    for (size_t k = 0; k < nr; k++)
        clt_tensor_free(rows[k]);
    clt_free(rows);
    CHECK(clt_unbind(y, 0, &rows, &nr));
    was = clt_set_grad_enabled(0);
    CHECK(clt_reshape(rows[2], 1, (const int64_t[]){1}, &r0));
    clt_set_grad_enabled(was);
    assert_error(clt_mul_scalar_(r0, 3.0), CLT_ERR_INVALID_ARGUMENT, no_grad_msg);
    const double twice[] = {2, 4, 6, 8};
    expect_values(y, twice, 4);
    expect_name(y, "MulBackward1");
    for (size_t k = 0; k < nr; k++)
        clt_tensor_free(rows[k]);
    clt_free(rows);
    /* grad mode: pieces of a view made in no-grad mode */
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, s23, &b));
    was = clt_set_grad_enabled(0);
    CHECK(clt_slice(b, 0, 0, 2, 1, &bv));
    clt_set_grad_enabled(was);
    CHECK(clt_unbind(bv, 0, &rows, &nr));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, (const int64_t[]){3}, x3, &w));
    CHECK(clt_set_requires_grad(w, 1));
    assert_error(clt_add_(rows[0], w, 1.0), CLT_ERR_INVALID_ARGUMENT,
                 "output 0 of UnbindBackward0 is a view and is being modified in place");
    const double zeros[6] = {0};
    expect_values(b, zeros, 6);
    for (size_t k = 0; k < nr; k++)
        clt_tensor_free(rows[k]);
    clt_free(rows);
    clt_tensor_free(w);
    clt_tensor_free(bv);
    clt_tensor_free(b);
    clt_tensor_free(r0);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* clt_detach's result is no differentiable view: in-place on it (or on a
 * view of it) bumps the version, which backward checks, and never touches
 * the history. */
Test(inplace_view, detach_views)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *z = NULL, *d = NULL, *dv = NULL, *loss = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_exp(x, &z));
    CHECK(clt_detach(z, &d));
    CHECK(clt_slice(d, 0, 1, 3, 1, &dv));
    CHECK(clt_add_scalar_(dv, 1.0));
    expect_name(z, "ExpBackward0");
    expect_name(d, NULL);
    expect_name(dv, NULL);
    cr_assert(!clt_requires_grad(dv));
    CHECK(clt_sum(z, &loss));
    assert_error(clt_backward(loss, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "modified by an in-place operation");
    clt_tensor_free(loss);
    clt_tensor_free(dv);
    clt_tensor_free(d);
    clt_tensor_free(z);
    clt_tensor_free(x);
}

/* Second derivatives through CopySlices and AsStridedBackward0: y = x * x,
 * y[1:3] *= 3, L = sum(y * y) = sum(c x^4) with c = 9 on the slice, 1
 * elsewhere; dL/dx = 4 c x^3, and the gradient of sum(dL/dx) is 12 c x^2. */
Test(inplace_view, second_derivative)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *v = NULL, *yy = NULL, *loss = NULL, *g = NULL, *gs = NULL,
               *gg = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul(x, x, &y));
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    CHECK(clt_mul_scalar_(v, 3.0));
    CHECK(clt_mul(y, y, &yy));
    CHECK(clt_sum(yy, &loss));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&loss, 1, NULL, &x, 1, &o, &g));
    double want1[4], want2[4];
    for (int k = 0; k < 4; k++) {
        double c = k == 1 || k == 2 ? 9 : 1, a = xv4[k];
        want1[k] = 4 * c * a * a * a;
        want2[k] = 12 * c * a * a;
    }
    assert_tensor_close(g, want1, 4, 1e-12, 0, "first");
    CHECK(clt_sum(g, &gs));
    CHECK(clt_autograd_grad(&gs, 1, NULL, &x, 1, 0, 0, &gg));
    assert_tensor_close(gg, want2, 4, 1e-12, 0, "second");
    clt_tensor_free(gg);
    clt_tensor_free(gs);
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(yy);
    clt_tensor_free(v);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* A view of a tensor that needs no grad, made and used without any: no
 * autograd state changes, and the base stays a leaf. */
Test(inplace_view, nothing_requires_grad)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *b = NULL, *v = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, s33, &b));
    CHECK(clt_diagonal(b, 0, 0, 1, &v));
    CHECK(clt_add_scalar_(v, 2.0));
    cr_assert(!clt_requires_grad(b));
    cr_assert(!clt_requires_grad(v));
    cr_assert(clt_is_leaf(v));
    expect_name(b, NULL);
    expect_name(v, NULL);
    clt_tensor_free(v);
    clt_tensor_free(b);
    (void)s44;
}

/* Retained gradients move to the new nodes, as for an in-place op on a
 * non-view: y = x * 2 and v = y[1:3] retained, v *= 3, L = sum(y * y):
 * y.grad = 2 y (its new values), x.grad = 2 * 2 y * (3 on the slice), and
 * v, which L does not use after the op, gets none (as in torch).  torch
 * 1.13 leaves y's on y's old history (y.grad [4, 72, 108, 16], the
 * gradient of y's old value). */
Test(inplace_view, base_retains_its_gradient)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *v = NULL, *yy = NULL, *loss = NULL, *gy = NULL, *gx = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul_scalar(x, 2.0, &y));
    CHECK(clt_retain_grad(y));
    CHECK(clt_slice(y, 0, 1, 3, 1, &v));
    CHECK(clt_retain_grad(v));
    CHECK(clt_mul_scalar_(v, 3.0));
    CHECK(clt_mul(y, y, &yy));
    CHECK(clt_sum(yy, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor *gv = NULL;
    CHECK(clt_grad(y, &gy));
    CHECK(clt_grad(v, &gv));
    CHECK(clt_grad(x, &gx));
    cr_assert_not_null(gy, "y's retained gradient is gone");
    cr_assert_null(gv, "v, unused after the op, has a gradient");
    const double wy[] = {4, 24, 36, 16}, wx[] = {8, 144, 216, 32};
    assert_tensor_close(gy, wy, 4, 0, 0, "y.grad");
    assert_tensor_close(gx, wx, 4, 0, 0, "x.grad");
    clt_tensor_free(gv);
    clt_tensor_free(gx);
    clt_tensor_free(gy);
    clt_tensor_free(loss);
    clt_tensor_free(yy);
    clt_tensor_free(v);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* An in-place op on an empty view changes no element, yet, as torch, it
 * moves the base's version: the base takes CopySlices and the base's other
 * views (here a permutation of it) follow it, their gradients unchanged. */
Test(inplace_view, empty_view_moves_the_other_views_along)
{
    clt_device *dev = get_device("cpu");
    const double xv[6] = {1, 2, 3, 4, 5, 6};
    clt_tensor *x = NULL, *y = NULL, *t = NULL, *v = NULL, *loss = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, s23, xv, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul_scalar(x, 2.0, &y));
    CHECK(clt_permute(y, 2, (const int[]){1, 0}, &t));
    CHECK(clt_narrow(t, 0, 1, 0, &v));
    cr_assert_eq(clt_tensor_numel(v), 0);
    CHECK(clt_add_scalar_(v, 1.0));
    expect_name(y, "CopySlices");
    expect_name(v, "AsStridedBackward0");
    expect_name(t, "AsStridedBackward0");
    CHECK(clt_sum(t, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(x, &g));
    const double want[6] = {2, 2, 2, 2, 2, 2};
    assert_tensor_close(g, want, 6, 0, 0, "gradient");
    clt_tensor_free(g);
    clt_tensor_free(loss);
    clt_tensor_free(v);
    clt_tensor_free(t);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

/* The getters only read: a view whose base changed in place reports the
 * history it will take (AsStridedBackward0) without taking it, so asking
 * changes nothing that follows.  x (a leaf) changed in no-grad mode
 * through itself, then x stops requiring grad: v's answers are the same
 * whether its name was asked for in between or not (a getter that stored
 * the new history kept v requiring grad). */
Test(inplace_view, getters_change_nothing)
{
    clt_device *dev = get_device("cpu");
    int answers[2][3];
    for (int ask = 0; ask < 2; ask++) {
        clt_tensor *x = NULL, *v = NULL;
        char *r = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_slice(x, 0, 1, 3, 1, &v));
        int was = clt_set_grad_enabled(0);
        CHECK(clt_mul_scalar_(x, 2.0));
        clt_set_grad_enabled(was);
        if (ask) {
            expect_name(v, "AsStridedBackward0");
            CHECK(clt_tensor_repr(v, &r));
            cr_assert(strstr(r, "grad_fn=<AsStridedBackward0>") != NULL, "repr %s", r);
            clt_free(r);
            cr_assert(clt_requires_grad(v));
            cr_assert(!clt_is_leaf(v));
        }
        CHECK(clt_set_requires_grad(x, 0));
        answers[ask][0] = clt_requires_grad(v);
        answers[ask][1] = clt_is_leaf(v);
        answers[ask][2] = clt_grad_fn_name(v) != NULL;
        clt_tensor_free(v);
        clt_tensor_free(x);
    }
    for (int k = 0; k < 3; k++)
        cr_assert_eq(answers[1][k], answers[0][k], "answer %d: %d after the getters, %d without",
                     k, answers[1][k], answers[0][k]);
}

/* A view saved by an op after its base changed is saved with its new
 * history: y = x * 2; v = y[0:2]; y *= 5; L = sum(v * v) = 100 sum(x[0:2]^2),
 * dL/dx = 200 x there, and the gradient of its sum 200 (0 when v was saved
 * with its old SliceBackward0, which y's change left behind). */
Test(inplace_view, view_saved_after_its_base_changed)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *x = NULL, *y = NULL, *v = NULL, *vv = NULL, *loss = NULL, *g = NULL, *gs = NULL,
               *gg = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s4, xv4, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul_scalar(x, 2.0, &y));
    CHECK(clt_slice(y, 0, 0, 2, 1, &v));
    CHECK(clt_mul_scalar_(y, 5.0));
    CHECK(clt_mul(v, v, &vv));
    CHECK(clt_sum(vv, &loss));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&loss, 1, NULL, &x, 1, &o, &g));
    const double want1[4] = {200 * xv4[0], 200 * xv4[1], 0, 0}, want2[4] = {200, 200, 0, 0};
    assert_tensor_close(g, want1, 4, 1e-12, 0, "first");
    CHECK(clt_sum(g, &gs));
    CHECK(clt_autograd_grad(&gs, 1, NULL, &x, 1, 0, 0, &gg));
    assert_tensor_close(gg, want2, 4, 1e-12, 0, "second");
    clt_tensor *all[] = {x, y, v, vv, loss, g, gs, gg};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* z's values (complex128, n elements) as 2n doubles. */
static void expect_complex(const clt_tensor *z, const double *want, size_t n)
{
    double got[8];
    cr_assert(n <= 4);
    CHECK(clt_tensor_read(z, got, 2 * n * sizeof *got));
    for (size_t k = 0; k < 2 * n; k++)
        cr_assert(got[k] == want[k], "element %zu: %g, expected %g", k / 2, got[k], want[k]);
}

/* An in-place op on z.real, z.imag, view_as_real(z) or view_as_complex(x)
 * (views of another dtype than their base) is recorded on the base's
 * history, as torch 1.13's CopySlices: z = zl * 1; z.real *= 2;
 * L = sum(|z|^2) = sum(4 re^2 + im^2) gives zl 8 re + 2i im (before the
 * view was tracked, cltensor gave 2 z).  A view of a leaf that requires
 * grad is still refused; an operand that requires grad gives a base
 * without grad its history. */
Test(inplace_view, view_of_another_dtype_takes_the_op_on_its_base)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[] = {3};
    const double zv[6] = {0.5, -1.0, 2.0, 0.25, -1.5, 3.0};
    clt_tensor *zl = NULL, *z = NULL, *re = NULL, *im = NULL, *a = NULL, *w = NULL, *wi = NULL,
               *c = NULL, *lre = NULL, *abs = NULL, *sq = NULL, *loss = NULL, *g = NULL,
               *wi2 = NULL, *sq2 = NULL, *loss2 = NULL, *ga = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, s3, zv, &zl));
    CHECK(clt_set_requires_grad(zl, 1));
    CHECK(clt_real(zl, &lre));
    assert_error(clt_mul_scalar_(lre, 2.0), CLT_ERR_INVALID_ARGUMENT,
                 "a view of a leaf Variable that requires grad");
    expect_complex(zl, zv, 3);
    CHECK(clt_mul_scalar(zl, 1.0, &z));
    CHECK(clt_real(z, &re));
    CHECK(clt_imag(z, &im));
    CHECK(clt_mul_scalar_(re, 2.0));
    const double twice[6] = {1.0, -1.0, 4.0, 0.25, -3.0, 3.0};
    expect_complex(z, twice, 3);
    expect_name(z, "CopySlices");
    expect_name(re, "AsStridedBackward0");
    CHECK(clt_abs(z, &abs));
    CHECK(clt_mul(abs, abs, &sq));
    CHECK(clt_sum(sq, &loss));
    CHECK(clt_backward(loss, NULL, 0));
    CHECK(clt_grad(zl, &g));
    const double want[6] = {4.0, -2.0, 16.0, 0.5, -12.0, 6.0};
    expect_complex(g, want, 3);
    /* with grad mode off it runs, unrecorded */
    int was = clt_set_grad_enabled(0);
    CHECK(clt_mul_scalar_(im, 2.0));
    clt_set_grad_enabled(was);
    const double both[6] = {1.0, -2.0, 4.0, 0.5, -3.0, 6.0};
    expect_complex(z, both, 3);
    /* w requires no grad, the operand a does: w takes a's history */
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, s3, zv, &w));
    CHECK(clt_imag(w, &wi));
    const double av[3] = {1, 2, 3};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s3, av, &a));
    CHECK(clt_set_requires_grad(a, 1));
    CHECK(clt_add_(wi, a, 1.0));
    const double plus[6] = {0.5, 0.0, 2.0, 2.25, -1.5, 6.0};
    expect_complex(w, plus, 3);
    cr_assert(clt_requires_grad(w));
    expect_name(w, "CopySlices");
    CHECK(clt_imag(w, &wi2)); /* L = sum(imag(w)^2): a gets 2 (im + a) */
    CHECK(clt_mul(wi2, wi2, &sq2));
    CHECK(clt_sum(sq2, &loss2));
    CHECK(clt_backward(loss2, NULL, 0));
    CHECK(clt_grad(a, &ga));
    const double wa[3] = {0.0, 4.5, 12.0};
    assert_tensor_close(ga, wa, 3, 1e-12, 0, "a's gradient");
    /* view_as_complex of a leaf that requires grad: refused, unchanged */
    const int64_t s32[] = {3, 2};
    clt_tensor *xl = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, s32, zv, &xl));
    CHECK(clt_set_requires_grad(xl, 1));
    CHECK(clt_view_as_complex(xl, &c));
    assert_error(clt_mul_scalar_(c, 2.0), CLT_ERR_INVALID_ARGUMENT,
                 "a view of a leaf Variable that requires grad");
    assert_tensor_close(xl, zv, 6, 0, 0, "the leaf");
    clt_tensor *all[] = {zl, z, re, im, a, w, wi, c, lre, abs, sq, loss, g, wi2, sq2, loss2, ga,
                         xl};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* A gradient made with create_graph, changed in place through a view of
 * it, as torch 1.13: g = d(sum x^3)/dx = 3 x^2, g[1:] *= 5 makes g's
 * grad_fn CopySlices, and d(sum g)/dx = 6 x * (1, 5, 5) (torch: 6, 60, 90
 * at x = 1, 2, 3). */
Test(inplace_view, create_graph_gradient_modified_through_a_view)
{
    clt_device *dev = get_device("cpu");
    const int64_t s3[] = {3};
    const double xv[3] = {1, 2, 3};
    clt_tensor *x = NULL, *c = NULL, *l = NULL, *g = NULL, *v = NULL, *gs = NULL, *h = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s3, xv, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_pow_scalar(x, 3.0, &c));
    CHECK(clt_sum(c, &l));
    clt_grad_opts o = {0, 1, 0};
    CHECK(clt_autograd_grad_ex(&l, 1, NULL, &x, 1, &o, &g));
    CHECK(clt_slice(g, 0, 1, 3, 1, &v));
    CHECK(clt_mul_scalar_(v, 5.0));
    expect_name(g, "CopySlices");
    const double wg[3] = {3, 60, 135}, wh[3] = {6, 60, 90};
    assert_tensor_close(g, wg, 3, 1e-12, 0, "g");
    CHECK(clt_sum(g, &gs));
    CHECK(clt_autograd_grad(&gs, 1, NULL, &x, 1, 0, 0, &h));
    assert_tensor_close(h, wh, 3, 1e-12, 0, "d(sum g)/dx");
    clt_tensor *all[] = {x, c, l, g, v, gs, h};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}
