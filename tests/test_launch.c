/* test_launch.c: kernel arguments kept between launches.  A launch sets
 * only the arguments whose values changed since the kernel's last launch;
 * these tests change one argument at a time (the output buffer, an input
 * buffer, an offset, a size) and check every result against the host, and
 * check that a repeated launch really skips clSetKernelArg. */
#include "helpers.h"

/* Test hook in src/device/program.c. */
uint64_t clt__set_arg_calls(void);

static clt_tensor *from_f32(clt_device *dev, const float *h, int64_t n)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &t));
    return t;
}

static void check_sum(const clt_tensor *c, const float *a, const float *b, int64_t n)
{
    float *got = read_f32(c);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], a[i] + b[i], "element %lld: got %g, want %g", (long long)i,
                     (double)got[i], (double)(a[i] + b[i]));
    free(got);
}

Test(launch, repeated_launch_sets_no_arguments)
{
    clt_device *dev = get_device("cpu");
    enum { N = 1000 };
    float ha[N], hb[N];
    fill_random(ha, N, 1);
    fill_random(hb, N, 2);
    clt_tensor *a = from_f32(dev, ha, N), *b = from_f32(dev, hb, N), *c = NULL;
    CHECK(clt_add(a, b, &c));
    check_sum(c, ha, hb, N);
    clt_tensor_free(c);
    /* The freed output's buffer comes back from the cache for the next
     * output, so the second launch repeats every argument. */
    uint64_t before = clt__set_arg_calls();
    CHECK(clt_add(a, b, &c));
    cr_assert_eq(clt__set_arg_calls(), before, "a repeated launch set %llu arguments",
                 (unsigned long long)(clt__set_arg_calls() - before));
    check_sum(c, ha, hb, N);
    clt_tensor_free(c);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(launch, changed_buffers_are_set)
{
    clt_device *dev = get_device("cpu");
    enum { N = 777 };
    float ha[N], hb[N], hx[N];
    fill_random(ha, N, 3);
    fill_random(hb, N, 4);
    fill_random(hx, N, 5);
    clt_tensor *a = from_f32(dev, ha, N), *b = from_f32(dev, hb, N), *x = from_f32(dev, hx, N);
    clt_tensor *c1 = NULL, *c2 = NULL, *c3 = NULL;
    CHECK(clt_add(a, b, &c1)); /* c1 stays alive: c2 gets another buffer */
    uint64_t before = clt__set_arg_calls();
    CHECK(clt_add(a, b, &c2));
    cr_assert_eq(clt__set_arg_calls() - before, 1, "only the output buffer changed");
    CHECK(clt_add(a, x, &c3));
    check_sum(c1, ha, hb, N);
    check_sum(c2, ha, hb, N);
    check_sum(c3, ha, hx, N);
    clt_tensor_free(c1);
    clt_tensor_free(c2);
    clt_tensor_free(c3);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(x);
}

/* Views of one buffer differ only in their offsets, sizes only in the
 * element count: the values, not the buffers, must be compared. */
Test(launch, changed_offsets_and_sizes_are_set)
{
    clt_device *dev = get_device("cpu");
    enum { N = 64, W = 16 };
    float hx[N], hb[N];
    fill_random(hx, N, 6);
    fill_random(hb, N, 7);
    clt_tensor *x = from_f32(dev, hx, N), *b = from_f32(dev, hb, N);
    for (int64_t start = 0; start + W <= N; start += 5) {
        clt_tensor *v = NULL, *bw = NULL, *c = NULL;
        CHECK(clt_narrow(x, 0, start, W, &v));
        CHECK(clt_narrow(b, 0, 0, W, &bw));
        CHECK(clt_add(v, bw, &c));
        check_sum(c, hx + start, hb, W);
        clt_tensor_free(c);
        clt_tensor_free(v);
        clt_tensor_free(bw);
    }
    for (int64_t len = 1; len <= N; len += 9) {
        clt_tensor *v = NULL, *bw = NULL, *c = NULL;
        CHECK(clt_narrow(x, 0, 0, len, &v));
        CHECK(clt_narrow(b, 0, N - len, len, &bw));
        CHECK(clt_add(v, bw, &c));
        check_sum(c, hx, hb + (N - len), len);
        clt_tensor_free(c);
        clt_tensor_free(v);
        clt_tensor_free(bw);
    }
    clt_tensor_free(x);
    clt_tensor_free(b);
}

/* After the cache gives its buffers back to the driver, a new buffer may
 * get a released buffer's handle value: kept arguments are set again. */
Test(launch, arguments_are_set_again_after_buffers_are_released)
{
    clt_device *dev = get_device("cpu");
    enum { N = 300 };
    float ha[N], hb[N];
    for (int round = 0; round < 3; round++) {
        fill_random(ha, N, 10 + (unsigned)round);
        fill_random(hb, N, 20 + (unsigned)round);
        clt_tensor *a = from_f32(dev, ha, N), *b = from_f32(dev, hb, N), *c = NULL;
        uint64_t before = clt__set_arg_calls();
        CHECK(clt_add(a, b, &c));
        if (round > 0)
            cr_assert_geq(clt__set_arg_calls() - before, 3, "round %d reused stale buffers",
                          round);
        check_sum(c, ha, hb, N);
        clt_tensor_free(c);
        clt_tensor_free(a);
        clt_tensor_free(b);
        CHECK(clt_memory_empty_cache(dev));
    }
}
