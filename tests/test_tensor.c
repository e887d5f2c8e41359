/* test_tensor.c: tensor life cycle, creation functions, properties and the
 * tolist() formatter. */
#include "helpers.h"

Test(tensor, from_host_round_trip)
{
    clt_device *dev = get_device("cpu");
    float host[24];
    fill_random(host, 24, 7);
    int64_t shape[3] = {2, 3, 4};
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, shape, host, &t));
    cr_assert_eq(clt_tensor_ndim(t), 3);
    cr_assert_eq(clt_tensor_numel(t), 24);
    cr_assert_eq(clt_tensor_nbytes(t), 96);
    cr_assert_eq(clt_tensor_size(t, -1), 4);
    cr_assert_eq(clt_tensor_size(t, 0), 2);
    cr_assert_eq(clt_tensor_strides(t)[0], 12);
    cr_assert_eq(clt_tensor_dtype(t), CLT_FLOAT32);
    cr_assert_eq(clt_tensor_device(t), dev);
    cr_assert(clt_tensor_is_contiguous(t));
    float *back = read_f32(t);
    cr_assert_arr_eq(back, host, sizeof host);
    free(back);
    clt_tensor_free(t);
}

Test(tensor, zeros_ones_full)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {5, 7};
    clt_tensor *z = NULL, *o = NULL, *f = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, shape, &z));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, shape, &o));
    CHECK(clt_full(dev, CLT_FLOAT32, 2, shape, -2.5, &f));
    float *hz = read_f32(z), *ho = read_f32(o), *hf = read_f32(f);
    for (int i = 0; i < 35; i++) {
        cr_assert_eq(hz[i], 0.0f);
        cr_assert_eq(ho[i], 1.0f);
        cr_assert_eq(hf[i], -2.5f);
    }
    free(hz);
    free(ho);
    free(hf);
    clt_tensor_free(z);
    clt_tensor_free(o);
    clt_tensor_free(f);
}

/* Each creation call's message names that call, not the one it is built
 * on (clt_ones used to say clt_full), for argument errors and for a buffer
 * the allocator refuses. */
static void expect_named(clt_status st, clt_tensor *t, const char *fn)
{
    cr_assert_neq(st, CLT_OK, "%s succeeded", fn);
    cr_assert_null(t);
    size_t n = strlen(fn);
    cr_assert(strncmp(clt_last_error(), fn, n) == 0 && clt_last_error()[n] == ':',
              "%s: message: %s", fn, clt_last_error());
}

Test(tensor, creation_errors_name_the_call)
{
    clt_device *dev = get_device("cpu");
    int64_t bad[1] = {-1}, big[1] = {1 << 20};
    clt_tensor *t = NULL;
    expect_named(clt_zeros(dev, CLT_FLOAT32, 1, bad, &t), t, "clt_zeros");
    expect_named(clt_ones(dev, CLT_FLOAT32, 1, bad, &t), t, "clt_ones");
    expect_named(clt_full(dev, CLT_INT32, 1, big, 1e12, &t), t, "clt_full");
    expect_named(clt_zeros_like(NULL, &t), t, "clt_zeros_like");
    expect_named(clt_ones_like(NULL, &t), t, "clt_ones_like");
    expect_named(clt_empty_like(NULL, &t), t, "clt_empty_like");
    clt_tensor *small = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){4}, &small));
    CHECK(clt_memory_set_limit(dev, 1024 * 1024));
    expect_named(clt_ones(dev, CLT_FLOAT32, 1, big, &t), t, "clt_ones");
    expect_named(clt_zeros(dev, CLT_FLOAT32, 1, big, &t), t, "clt_zeros");
    expect_named(clt_empty(dev, CLT_FLOAT32, 1, big, &t), t, "clt_empty");
    expect_named(clt_arange(dev, CLT_FLOAT32, 0, 1 << 20, 1, &t), t, "clt_arange");
    CHECK(clt_memory_set_limit(dev, 0));
    clt_tensor_free(small);
}

Test(tensor, arange_matches_host)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL;
    CHECK(clt_arange(dev, CLT_FLOAT32, 1.0, 2.0, 0.1, &t));
    cr_assert_eq(clt_tensor_numel(t), 10);
    float *h = read_f32(t);
    for (int i = 0; i < 10; i++)
        cr_assert_float_eq(h[i], (float)(1.0 + i * 0.1), 1e-7, "element %d", i);
    free(h);
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_FLOAT32, 10.0, 0.0, -3.0, &t));
    h = read_f32(t);
    cr_assert_eq(clt_tensor_numel(t), 4);
    cr_assert_eq(h[0], 10.0f);
    cr_assert_eq(h[3], 1.0f);
    free(h);
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_FLOAT32, 0.0, 0.0, 1.0, &t));
    cr_assert_eq(clt_tensor_numel(t), 0);
    clt_tensor_free(t);
}

Test(tensor, zero_size_and_scalar)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {0, 3};
    clt_tensor *t = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, shape, &t));
    cr_assert_eq(clt_tensor_numel(t), 0);
    cr_assert_eq(clt_tensor_nbytes(t), 0);
    CHECK(clt_tensor_read(t, NULL, 0));
    char *s = NULL;
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[]");
    clt_free(s);
    clt_tensor_free(t);

    float v = 4.5f;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 0, NULL, &v, &t));
    cr_assert_eq(clt_tensor_numel(t), 1);
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "4.5");
    double item = 0;
    CHECK(clt_tensor_item(t, &item));
    cr_assert_eq(item, 4.5);
    clt_free(s);
    clt_tensor_free(t);
}

/* An empty tensor prints its brackets as tolist() does; one whose brackets
 * alone would make gigabytes of text is refused at once. */
Test(tensor, format_of_empty_tensors)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL;
    char *s = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 3, (int64_t[]){2, 3, 0}, &t));
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[[[], [], []], [[], [], []]]");
    clt_free(s);
    clt_tensor_free(t);
    CHECK(clt_empty(dev, CLT_FLOAT32, 3, (int64_t[]){1LL << 20, 1LL << 20, 0}, &t));
    s = (char *)&t; /* a sentinel the call must clear */
    assert_error(clt_tensor_format(t, &s), CLT_ERR_OUT_OF_HOST_MEMORY, "more than 2^28");
    cr_assert_null(s);
    clt_tensor_free(t);
}

Test(tensor, format_like_python_tolist)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {2, 3};
    clt_tensor *t = NULL;
    char *s = NULL;
    CHECK(clt_full(dev, CLT_FLOAT32, 2, shape, 3.0, &t));
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]");
    clt_free(s);
    clt_tensor_free(t);

    /* float32 values print as the Python floats tolist() makes of them. */
    float vals[8] = {0.1f, -0.0f, 1e-5f, 1e16f, 123456.0f, INFINITY, NAN, 0.5f};
    int64_t n = 8;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, vals, &t));
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[0.10000000149011612, -0.0, 9.999999747378752e-06, 1.0000000272564224e+16, "
                        "123456.0, inf, nan, 0.5]");
    clt_free(s);
    clt_tensor_free(t);

    int64_t shape3[3] = {2, 1, 2};
    float v3[4] = {1, 2, 3, 4};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, shape3, v3, &t));
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[[[1.0, 2.0]], [[3.0, 4.0]]]");
    clt_free(s);
    clt_tensor_free(t);
}

Test(tensor, release_null_is_noop)
{
    clt_tensor_free(NULL);
    clt_event_free(NULL);
    clt_free(NULL);
}

Test(tensor, loop_over_batches_releases_everything)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[1] = {1000};
    for (int batch = 0; batch < 50; batch++) {
        clt_tensor *x = NULL, *y = NULL;
        CHECK(clt_full(dev, CLT_FLOAT32, 1, shape, batch, &x));
        CHECK(clt_mul_scalar(x, 2.0, &y));
        float last = 0;
        if (batch == 49) {
            float *h = read_f32(y);
            last = h[999];
            free(h);
            cr_assert_eq(last, 98.0f);
        }
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
}

/* Integer arange works on truncated start and step as PyTorch's kernel does. */
Test(tensor, arange_integer_dtypes)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = (clt_tensor *)&t;
    cr_assert_eq(clt_arange(dev, CLT_INT32, 1, 2.5, 0.5, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "step must be nonzero"), "%s", clt_last_error());
    cr_assert_null(t);
    cr_assert_eq(clt_arange(dev, CLT_BOOL, 0, 2, 1, &t), CLT_ERR_DTYPE_MISMATCH);

    CHECK(clt_arange(dev, CLT_INT32, 0, 5, 1.5, &t));
    int32_t h32[4];
    cr_assert_eq(clt_tensor_numel(t), 4);
    CHECK(clt_tensor_read(t, h32, sizeof h32));
    for (int i = 0; i < 4; i++)
        cr_assert_eq(h32[i], i);
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_INT64, 0.5, 5.5, 2, &t));
    int64_t h64[3];
    cr_assert_eq(clt_tensor_numel(t), 3);
    CHECK(clt_tensor_read(t, h64, sizeof h64));
    cr_assert(h64[0] == 0 && h64[1] == 2 && h64[2] == 4);
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_INT64, 10, -3, -4, &t));
    cr_assert_eq(clt_tensor_numel(t), 4);
    int64_t h4[4];
    CHECK(clt_tensor_read(t, h4, sizeof h4));
    cr_assert(h4[0] == 10 && h4[1] == 6 && h4[2] == 2 && h4[3] == -2);
    clt_tensor_free(t);
}

/* Every function that hands out a tensor or string sets *out to NULL when
 * it fails, whatever argument was bad; byte counts that overflow are
 * refused. */
Test(tensor, out_is_null_on_every_failure)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *t = NULL, *r;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &t));
#define POISON(p) ((p) = (void *)&(p))
    POISON(r);
    cr_assert_neq(clt_to(NULL, dev, &r), CLT_OK);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_to(t, NULL, &r), CLT_OK);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_to_dtype(NULL, CLT_FLOAT64, &r), CLT_OK);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_clone(NULL, &r), CLT_OK);
    cr_assert_null(r);
    char *text;
    POISON(text);
    cr_assert_neq(clt_tensor_format(NULL, &text), CLT_OK);
    cr_assert_null(text);
    POISON(r);
    cr_assert_neq(clt_full(NULL, CLT_FLOAT32, 1, (int64_t[]){3}, 1.0, &r), CLT_OK);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_zeros(NULL, CLT_FLOAT32, 1, (int64_t[]){3}, &r), CLT_OK);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_tensor_from_host(NULL, CLT_FLOAT32, 0, NULL, NULL, &r), CLT_OK);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_arange(NULL, CLT_FLOAT32, 0, 3, 1, &r), CLT_OK);
    cr_assert_null(r);
    clt_device *d;
    POISON(d);
    cr_assert_neq(clt_device_get(NULL, &d), CLT_OK);
    cr_assert_null(d);
    /* 2^62 float32 elements: 2^64 bytes, which size_t cannot count */
    POISON(r);
    cr_assert_eq(clt_empty(dev, CLT_FLOAT32, 1, (int64_t[]){(int64_t)1 << 62}, &r),
                 CLT_ERR_OUT_OF_DEVICE_MEMORY);
    cr_assert_null(r);
    POISON(r);
    cr_assert_neq(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){(int64_t)1 << 31, (int64_t)1 << 30},
                            &r),
                  CLT_OK);
    cr_assert_null(r);
#undef POISON
    clt_tensor_free(t);
}
