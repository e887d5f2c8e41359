/* test_transfer.c: moves between devices (two PoCL devices in one process),
 * same-device moves without copies, and blocking and event read-back. */
#include "helpers.h"

Test(transfer, same_device_shares_storage)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[1] = {16};
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, shape, 2.0, &a));
    clt_stats before, after;
    clt_stats_get(&before);
    CHECK(clt_to(a, dev, &b));
    clt_stats_get(&after);
    cr_assert_eq(after.kernel_launches, before.kernel_launches, "a same-device move copied");
    cr_assert_eq(clt_tensor_device(b), dev);
    clt_tensor_free(a); /* b keeps the storage alive */
    float *h = read_f32(b);
    cr_assert_eq(h[15], 2.0f);
    free(h);
    clt_tensor_free(b);
}

Test(transfer, round_trip_between_two_devices)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    cr_assert_neq(d0, d1);
    cr_assert_str_neq(clt_device_label(d0), clt_device_label(d1));
    enum { N = 100003 };
    float *host = malloc(N * sizeof *host);
    fill_random(host, N, 11);
    int64_t n = N;
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    CHECK(clt_tensor_from_host(d0, CLT_FLOAT32, 1, &n, host, &a));
    CHECK(clt_to(a, d1, &b));
    cr_assert_eq(clt_tensor_device(b), d1);
    CHECK(clt_mul_scalar(b, 3.0, &c)); /* runs on d1 */
    CHECK(clt_to(c, d0, &d));
    cr_assert_eq(clt_tensor_device(d), d0);
    float *got = read_f32(d);
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(got[i], host[i] * 3.0f, "element %zu", i);
    free(got);
    free(host);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(d);
}

Test(transfer, source_overwritten_after_move_does_not_change_copy)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    int64_t n = 4096;
    clt_tensor *a = NULL, *b = NULL, *a2 = NULL;
    CHECK(clt_full(d0, CLT_FLOAT32, 1, &n, 7.0, &a));
    CHECK(clt_to(a, d1, &b));
    clt_tensor_free(a); /* its buffer may be reused at once */
    CHECK(clt_full(d0, CLT_FLOAT32, 1, &n, -1.0, &a2));
    float *h = read_f32(b);
    for (int i = 0; i < 4096; i++)
        cr_assert_eq(h[i], 7.0f);
    free(h);
    clt_tensor_free(a2);
    clt_tensor_free(b);
}

Test(transfer, async_read_back)
{
    clt_device *dev = get_device("cpu");
    enum { N = 1 << 16 };
    float *host = malloc(N * sizeof *host), *back = malloc(N * sizeof *back);
    fill_random(host, N, 3);
    int64_t n = N;
    clt_tensor *t = NULL, *u = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, host, &t));
    CHECK(clt_add(t, t, &u));
    clt_event *ev = NULL;
    CHECK(clt_tensor_read_async(u, back, N * sizeof *back, &ev));
    clt_tensor_free(u); /* the event keeps the data alive */
    clt_tensor_free(t);
    CHECK(clt_event_wait(ev));
    int done = 0;
    CHECK(clt_event_query(ev, &done));
    cr_assert_eq(done, 1);
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(back[i], host[i] + host[i], "element %zu", i);
    clt_event_free(ev);
    free(host);
    free(back);
}

Test(transfer, read_counts_bytes)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 256;
    clt_tensor *t = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, &n, &t));
    clt_stats a, b;
    clt_stats_get(&a);
    float *h = read_f32(t);
    clt_stats_get(&b);
    cr_assert_eq(b.d2h_bytes - a.d2h_bytes, 1024);
    cr_assert_eq(b.blocking_waits - a.blocking_waits, 1);
    free(h);
    clt_tensor_free(t);
}

Test(transfer, lesson_flow_prints_expected)
{
    clt_device *dev = get_device(clt_is_available("cuda") ? "cuda" : "cpu");
    clt_device *cpu = get_device("cpu");
    int64_t shape[2] = {2, 3};
    clt_tensor *ones = NULL, *x = NULL, *y = NULL, *r = NULL;
    CHECK(clt_ones(cpu, CLT_FLOAT32, 2, shape, &ones));
    CHECK(clt_to(ones, dev, &x));
    CHECK(clt_mul_scalar(x, 3, &y));
    CHECK(clt_to(y, cpu, &r));
    char *s = NULL;
    CHECK(clt_tensor_format(r, &s));
    cr_assert_str_eq(s, "[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]");
    cr_assert_str_eq(clt_device_kind(clt_tensor_device(r)), "cpu");
    clt_free(s);
    clt_tensor_free(ones);
    clt_tensor_free(x);
    clt_tensor_free(y);
    clt_tensor_free(r);
}
