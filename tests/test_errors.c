/* test_errors.c: every error path returns a status, leaves a message that
 * names what went wrong, and leaves the operands as they were. */
#include "helpers.h"
#include "internal.h"

Test(errors, unknown_kind_lists_available)
{
    clt_device *dev = (clt_device *)1;
    clt_status st = clt_device_get("cudaa", &dev);
    if (st == CLT_ERR_NO_PLATFORM)
        cr_skip_test("no OpenCL platform");
    cr_assert_eq(st, CLT_ERR_UNKNOWN_KIND);
    cr_assert_null(dev);
    cr_assert(strstr(clt_last_error(), "cudaa") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "cpu:0") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_is_available("cudaa"), 0);
}

Test(errors, absent_device)
{
    get_device("cpu");
    if (clt_is_available("mps"))
        cr_skip_test("this machine has an Apple GPU");
    clt_device *dev = NULL;
    cr_assert_eq(clt_device_get("mps", &dev), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert(strstr(clt_last_error(), "mps") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "cpu:0") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_device_get("cpu:9", &dev), CLT_ERR_DEVICE_NOT_FOUND);
    cr_assert_eq(clt_is_available("cpu:9"), 0);
    cr_assert_eq(clt_is_available("CPU"), 1);
}

Test(errors, device_mismatch_names_both)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    int64_t n = 8;
    clt_tensor *a = NULL, *b = NULL, *c = (clt_tensor *)1;
    CHECK(clt_ones(d0, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(d1, CLT_FLOAT32, 1, &n, &b));
    cr_assert_eq(clt_add(a, b, &c), CLT_ERR_DEVICE_MISMATCH);
    cr_assert_null(c);
    const char *m = clt_last_error();
    cr_assert(strstr(m, "expected all tensors to be on the same device") != NULL, "%s", m);
    cr_assert(strstr(m, clt_device_label(d0)) != NULL, "%s", m);
    cr_assert(strstr(m, clt_device_label(d1)) != NULL, "%s", m);
    cr_assert_eq(clt_mul(b, a, &c), CLT_ERR_DEVICE_MISMATCH);
    /* operands unchanged */
    float *h = read_f32(a);
    cr_assert_eq(h[7], 1.0f);
    free(h);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(errors, shape_mismatch_names_shapes)
{
    clt_device *dev = get_device("cpu");
    int64_t s1[2] = {2, 3}, s2[2] = {3, 2};
    clt_tensor *a = NULL, *b = NULL, *c = (clt_tensor *)1;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, s1, &a));
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, s2, &b));
    cr_assert_eq(clt_sub(a, b, &c), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(c);
    cr_assert(strstr(clt_last_error(), "[2, 3]") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "[3, 2]") != NULL, "%s", clt_last_error());
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(errors, null_arguments)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *a = NULL, *c = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    cr_assert_eq(clt_add(a, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "clt_add") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_add(NULL, a, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_add(a, a, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_mul_scalar(NULL, 1, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_neg(NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_device_get(NULL, &dev), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_ones(NULL, CLT_FLOAT32, 1, &n, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_ones(dev, CLT_FLOAT32, 1, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_to(a, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_tensor_read(a, NULL, 16), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_tensor_format(NULL, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, NULL, &c), CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(a);
}

Test(errors, bad_shapes_and_buffers)
{
    clt_device *dev = get_device("cpu");
    int64_t neg[2] = {2, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    clt_tensor *t = NULL;
    cr_assert_eq(clt_zeros(dev, CLT_FLOAT32, 2, neg, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "-1") != NULL);
    cr_assert_eq(clt_zeros(dev, CLT_FLOAT32, 9, nine, &t), CLT_ERR_TOO_MANY_DIMS);
    cr_assert_eq(clt_arange(dev, CLT_FLOAT32, 0, 10, 0, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_arange(dev, CLT_FLOAT32, 0, 10, -1, &t), CLT_ERR_INVALID_ARGUMENT);
    int64_t n = 10;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &t));
    float small[4] = {9, 9, 9, 9};
    cr_assert_eq(clt_tensor_read(t, small, sizeof small), CLT_ERR_BUFFER_TOO_SMALL);
    cr_assert(strstr(clt_last_error(), "40") != NULL, "%s", clt_last_error());
    cr_assert_eq(small[0], 9.0f, "a failed read wrote into the buffer");
    double v;
    cr_assert_eq(clt_tensor_item(t, &v), CLT_ERR_INVALID_ARGUMENT);
    clt_tensor_free(t);
}

Test(errors, unsupported_dtype_is_named)
{
    clt_device *dev = get_device("cpu");
    if (clt_device_supports_dtype(dev, CLT_FLOAT16))
        cr_skip_test("device supports float16");
    int64_t n = 3;
    clt_tensor *t = NULL;
    cr_assert_eq(clt_zeros(dev, CLT_FLOAT16, 1, &n, &t), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert(strstr(clt_last_error(), "cl_khr_fp16") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), clt_device_label(dev)) != NULL, "%s", clt_last_error());
    cr_assert_null(t);
}

Test(errors, kernel_build_failure_has_log)
{
    clt_device *dev = get_device("cpu");
    /* Options that break the build: the elementwise kernels with a storage
     * type that does not exist. */
    clt_status st = clt__launch(dev, "elementwise", "-DT=no_such_type -DO=float", "add_tt", 1,
                                (size_t[]){1}, NULL, 0, NULL);
    cr_assert_eq(st, CLT_ERR_BUILD_FAILED, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "CL_BUILD_PROGRAM_FAILURE") != NULL, "%s",
              clt_last_error());
    cr_assert(strstr(clt_last_error(), "build log") != NULL, "%s", clt_last_error());
    cr_assert(strstr(clt_last_error(), "no_such_type") != NULL, "%s", clt_last_error());
}

Test(errors, status_strings)
{
    cr_assert_str_eq(clt_status_name(CLT_ERR_DEVICE_MISMATCH), "CLT_ERR_DEVICE_MISMATCH");
    cr_assert_str_eq(clt_status_string(CLT_OK), "success");
    cr_assert_str_eq(clt_cl_error_name(-5), "CL_OUT_OF_RESOURCES");
    cr_assert_str_eq(clt_cl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
    cr_assert_str_eq(clt_cl_error_name(12345), "CL_UNKNOWN_ERROR");
    clt_dtype dt;
    CHECK(clt_dtype_parse("Double", &dt));
    cr_assert_eq(dt, CLT_FLOAT64);
    cr_assert_eq(clt_dtype_parse("float128", &dt), CLT_ERR_INVALID_ARGUMENT);
}
