/* test_elementwise.c: add, sub, mul, div, neg and their scalar forms against
 * host references, on sizes that are no multiple of any work-group size. */
#include "helpers.h"

typedef enum { ADD, SUB, MUL, DIV } binop;

static float host_op(binop op, float a, float b)
{
    switch (op) {
    case ADD: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    case DIV: return a / b;
    }
    return 0;
}

static clt_status dev_op(binop op, clt_tensor *a, clt_tensor *b, clt_tensor **out)
{
    switch (op) {
    case ADD: return clt_add(a, b, out);
    case SUB: return clt_sub(a, b, out);
    case MUL: return clt_mul(a, b, out);
    case DIV: return clt_div(a, b, out);
    }
    return CLT_ERR_INTERNAL;
}

static void check_binary(binop op, int64_t n)
{
    clt_device *dev = get_device("cpu");
    float *ha = malloc((size_t)(n ? n : 1) * sizeof(float));
    float *hb = malloc((size_t)(n ? n : 1) * sizeof(float));
    fill_random(ha, (size_t)n, 1);
    fill_random(hb, (size_t)n, 2);
    for (int64_t i = 0; i < n; i++)
        if (hb[i] == 0)
            hb[i] = 0.5f;
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, ha, &a));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, hb, &b));
    CHECK(dev_op(op, a, b, &c));
    cr_assert_eq(clt_tensor_numel(c), n);
    float *got = read_f32(c);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], host_op(op, ha[i], hb[i]), "op %d n %lld element %lld: %g vs %g",
                     op, (long long)n, (long long)i, got[i], host_op(op, ha[i], hb[i]));
    free(got);
    free(ha);
    free(hb);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

Test(elementwise, binary_ops_many_sizes)
{
    const int64_t sizes[] = {0, 1, 7, 63, 64, 65, 1000, 4099, 100003};
    for (int op = ADD; op <= DIV; op++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            check_binary((binop)op, sizes[s]);
}

Test(elementwise, scalar_ops)
{
    clt_device *dev = get_device("cpu");
    enum { N = 1031 };
    float h[N];
    fill_random(h, N, 5);
    for (int i = 0; i < N; i++)
        if (h[i] == 0)
            h[i] = 1;
    int64_t n = N;
    clt_tensor *a = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    struct {
        clt_status (*fn)(const clt_tensor *, double, clt_tensor **);
        double s;
        int kind;
    } cases[] = {{clt_add_scalar, 1.5, 0}, {clt_sub_scalar, 2.0, 1}, {clt_rsub_scalar, 2.0, 2},
                 {clt_mul_scalar, 3.0, 3}, {clt_div_scalar, 4.0, 4}, {clt_rdiv_scalar, 4.0, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *r = NULL;
        CHECK(cases[c].fn(a, cases[c].s, &r));
        float *got = read_f32(r);
        float s = (float)cases[c].s;
        for (int i = 0; i < N; i++) {
            float want = cases[c].kind == 0   ? h[i] + s
                         : cases[c].kind == 1 ? h[i] - s
                         : cases[c].kind == 2 ? s - h[i]
                         : cases[c].kind == 3 ? h[i] * s
                         : cases[c].kind == 4 ? h[i] / s
                                              : s / h[i];
            cr_assert_eq(got[i], want, "case %zu element %d", c, i);
        }
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
}

Test(elementwise, neg_and_special_values)
{
    clt_device *dev = get_device("cpu");
    float h[6] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 3.25f};
    int64_t n = 6;
    clt_tensor *a = NULL, *r = NULL, *q = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    CHECK(clt_neg(a, &r));
    float *got = read_f32(r);
    cr_assert(signbit(got[0]) && got[0] == 0);
    cr_assert(!signbit(got[1]) && got[1] == 0);
    cr_assert_eq(got[2], -INFINITY);
    cr_assert_eq(got[3], INFINITY);
    cr_assert(isnan(got[4]));
    cr_assert_eq(got[5], -3.25f);
    free(got);
    /* 1/0 = inf, 0/0 = nan, as IEEE and PyTorch say */
    CHECK(clt_rdiv_scalar(a, 1.0, &q));
    got = read_f32(q);
    cr_assert_eq(got[0], INFINITY);
    cr_assert_eq(got[1], -INFINITY);
    cr_assert_eq(got[2], 0.0f);
    cr_assert(isnan(got[4]));
    free(got);
    clt_tensor_free(a);
    clt_tensor_free(r);
    clt_tensor_free(q);
}

Test(elementwise, broadcast_row_and_column)
{
    clt_device *dev = get_device("cpu");
    float hr[3] = {1, 2, 3}, hc[2] = {10, 20};
    int64_t sr[2] = {1, 3}, sc[2] = {2, 1};
    clt_tensor *r = NULL, *c = NULL, *s = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sr, hr, &r));
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sc, hc, &c));
    CHECK(clt_add(r, c, &s));
    cr_assert_eq(clt_tensor_ndim(s), 2);
    cr_assert_eq(clt_tensor_size(s, 0), 2);
    cr_assert_eq(clt_tensor_size(s, 1), 3);
    float *got = read_f32(s);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(got[i * 3 + j], hr[j] + hc[i]);
    free(got);
    clt_tensor_free(r);
    clt_tensor_free(c);
    clt_tensor_free(s);
}

Test(elementwise, ops_do_not_wait)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 1 << 16;
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    clt_stats s0, s1;
    clt_stats_get(&s0);
    for (int i = 0; i < 10; i++) {
        CHECK(clt_add(a, a, &b));
        clt_tensor_free(b);
    }
    clt_stats_get(&s1);
    cr_assert_eq(s1.blocking_waits, s0.blocking_waits, "an op waited on the host");
    cr_assert_geq(s1.kernel_launches - s0.kernel_launches, 10);
    clt_tensor_free(a);
}
