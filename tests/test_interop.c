/* test_interop.c: OpenCL objects behind cltensor handles, and tensors over a
 * caller's own buffer. */
#include "helpers.h"

#include "cltensor/opencl.h"

Test(interop, getters_hand_out_the_device_objects)
{
    clt_device *dev = get_device("cpu");
    cl_context ctx = clt_device_cl_context(dev);
    cl_command_queue q = clt_device_cl_queue(dev);
    cl_device_id id = clt_device_cl_device(dev);
    cr_assert_not_null(ctx);
    cr_assert_not_null(q);
    cr_assert_not_null(id);
    cl_device_id qdev = NULL;
    cr_assert_eq(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL), CL_SUCCESS);
    cr_assert_eq(qdev, id);
    cr_assert_null(clt_device_cl_queue(NULL));

    int64_t n = 8;
    clt_tensor *t = NULL;
    CHECK(clt_arange(dev, CLT_FLOAT32, 0, 8, 1, &t));
    cl_mem mem = NULL;
    size_t off = 99;
    CHECK(clt_tensor_cl_buffer(t, &mem, &off));
    cr_assert_not_null(mem);
    cr_assert_eq(off, 0);
    /* Reading the buffer directly on the same in-order queue sees the op. */
    float h[8];
    cr_assert_eq(clEnqueueReadBuffer(q, mem, CL_TRUE, 0, sizeof h, h, 0, NULL, NULL), CL_SUCCESS);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(h[i], (float)i);
    (void)n;
    clt_tensor_free(t);
}

Test(interop, tensor_over_a_callers_buffer)
{
    clt_device *dev = get_device("cpu");
    cl_int err = CL_SUCCESS;
    float host[10] = {0, 0, 1, 2, 3, 4, 5, 6, 0, 0};
    cl_mem mem = clCreateBuffer(clt_device_cl_context(dev), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                sizeof host, host, &err);
    cr_assert_eq(err, CL_SUCCESS);
    int64_t shape[2] = {2, 3};
    clt_tensor *t = NULL, *r = NULL;
    CHECK(clt_tensor_from_cl_buffer(dev, mem, 2 * sizeof(float), CLT_FLOAT32, 2, shape, &t));
    clReleaseMemObject(mem); /* the tensor holds its own reference */
    CHECK(clt_mul_scalar(t, 10, &r));
    float *g = read_f32(r);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(g[i], (float)(i + 1) * 10);
    free(g);
    g = read_f32(t);
    cr_assert_eq(g[0], 1.0f);
    free(g);

    /* too large for the buffer, misaligned offset, NULL */
    clt_tensor *bad = (clt_tensor *)&bad;
    int64_t big[1] = {11};
    cl_mem m2 = clCreateBuffer(clt_device_cl_context(dev), CL_MEM_READ_WRITE, 40, NULL, &err);
    cr_assert_eq(clt_tensor_from_cl_buffer(dev, m2, 0, CLT_FLOAT32, 1, big, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(bad);
    cr_assert(strstr(clt_last_error(), "[11]"), "%s", clt_last_error());
    cr_assert_eq(clt_tensor_from_cl_buffer(dev, m2, 2, CLT_FLOAT32, 1, shape, &bad),
                 CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_tensor_from_cl_buffer(dev, NULL, 0, CLT_FLOAT32, 1, shape, &bad),
                 CLT_ERR_NULL_ARGUMENT);
    clReleaseMemObject(m2);
    clt_tensor_free(t);
    clt_tensor_free(r);
}

/* A memory object that is no buffer (an image) cannot hold a tensor: the
 * wrapper was made, and buffer commands on it failed later or, on some
 * drivers, did what the driver pleased. */
Test(interop, an_image_is_not_a_buffer)
{
    clt_device *dev = get_device("cpu");
    cl_bool images = CL_FALSE;
    clGetDeviceInfo(clt_device_cl_device(dev), CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images,
                    NULL);
    if (!images)
        cr_skip_test("the device has no images");
    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc = {0};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = 4;
    desc.image_height = 4;
    cl_int err = CL_SUCCESS;
    cl_mem img = clCreateImage(clt_device_cl_context(dev), CL_MEM_READ_WRITE, &fmt, &desc, NULL,
                               &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateImage: %d", err);
    size_t size = 0;
    cr_assert_eq(clGetMemObjectInfo(img, CL_MEM_SIZE, sizeof size, &size, NULL), CL_SUCCESS);
    cr_assert_geq(size, 16 * sizeof(float), "the image is large enough for the shape below");
    int64_t shape[1] = {16};
    clt_tensor *t = (clt_tensor *)&t;
    clt_status st = clt_tensor_from_cl_buffer(dev, img, 0, CLT_FLOAT32, 1, shape, &t);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert_null(t);
    cr_assert(strstr(clt_last_error(), "not a buffer"), "%s", clt_last_error());
    cl_uint refs = 0;
    clGetMemObjectInfo(img, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL);
    cr_assert_eq(refs, 1, "the refused image was retained");
    clReleaseMemObject(img);
}

/* Kernels write through every tensor (an in-place op, an _out destination):
 * over a CL_MEM_READ_ONLY buffer that wrote memory the caller declared
 * read-only, and the driver said nothing.  Buffers kernels may not both
 * read and write are refused when wrapped; buffers the host may not touch
 * are taken, and a host transfer they forbid fails with the driver's code. */
Test(interop, kernel_access_flags_are_checked)
{
    clt_device *dev = get_device("cpu");
    cl_context ctx = clt_device_cl_context(dev);
    const cl_mem_flags refused[] = {CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY,
                                    CL_MEM_READ_ONLY | CL_MEM_HOST_NO_ACCESS};
    const char *names[] = {"CL_MEM_READ_ONLY", "CL_MEM_WRITE_ONLY", "CL_MEM_READ_ONLY"};
    int64_t n = 4;
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        cl_int err = CL_SUCCESS;
        cl_mem mem = clCreateBuffer(ctx, refused[k], 4 * sizeof(float), NULL, &err);
        cr_assert_eq(err, CL_SUCCESS);
        clt_tensor *t = (clt_tensor *)&t;
        clt_status st = clt_tensor_from_cl_buffer(dev, mem, 0, CLT_FLOAT32, 1, &n, &t);
        cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "flags 0x%llx: %s",
                     (unsigned long long)refused[k], clt_status_name(st));
        cr_assert_null(t);
        cr_assert(strstr(clt_last_error(), names[k]), "%s", clt_last_error());
        cl_uint refs = 0;
        clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL);
        cr_assert_eq(refs, 1, "the refused buffer was retained");
        clReleaseMemObject(mem);
    }

    /* A sub-buffer of a read-only buffer, made without flags of its own,
     * inherits them. */
    cl_int err = CL_SUCCESS;
    cl_mem ro = clCreateBuffer(ctx, CL_MEM_READ_ONLY, 64, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    cl_buffer_region region = {0, 4 * sizeof(float)};
    cl_mem sub = clCreateSubBuffer(ro, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    cr_assert_eq(err, CL_SUCCESS, "clCreateSubBuffer: %d", err);
    clt_tensor *sub_t = (clt_tensor *)&sub_t;
    cr_assert_eq(clt_tensor_from_cl_buffer(dev, sub, 0, CLT_FLOAT32, 1, &n, &sub_t),
                 CLT_ERR_INVALID_ARGUMENT, "%s", clt_last_error());
    cr_assert_null(sub_t);
    clReleaseMemObject(sub);
    clReleaseMemObject(ro);

    /* The host may not touch the buffer: kernels work on it, the host
     * transfer is an error (never a silent success). */
    cl_mem mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS,
                                4 * sizeof(float), NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    clt_tensor *t = NULL, *c = NULL;
    CHECK(clt_tensor_from_cl_buffer(dev, mem, 0, CLT_FLOAT32, 1, &n, &t));
    clReleaseMemObject(mem);
    CHECK(clt_fill_(t, 2.5));
    CHECK(clt_add_scalar_(t, 1.0));
    CHECK(clt_clone(t, &c));
    float *g = read_f32(c);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], 3.5f, "[%d] %g", i, g[i]);
    free(g);
    float h[4] = {0};
    cr_assert_eq(clt_tensor_read(t, h, sizeof h), CLT_ERR_OPENCL,
                 "a read the buffer's flags forbid did not fail: %s", clt_last_error());
    cr_assert_eq(clt_last_cl_error(), CL_INVALID_OPERATION, "%d", clt_last_cl_error());
    clt_tensor_free(c);
    clt_tensor_free(t);
}
