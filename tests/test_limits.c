/* test_limits.c: sizes past what size_t, int64, a launch or the device's
 * memory can take are errors, never a crash or a wrong allocation: byte
 * counts that overflow, expanded tensors of 2^62 elements, sizes that add
 * up past int64, wrapped offsets into a caller's buffer, launches split in
 * parts or refused, and the allocator's limit and cap. */
#include "helpers.h"

#include <stdio.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include "cltensor/opencl.h"
#include "cltensor/dlpack.h"

/* Internal hooks (src/device/program.c). */
uint64_t clt__launch_max_set(clt_device *dev, uint64_t items);
typedef struct clt__arg {
    size_t size;
    const void *ptr;
} clt__arg;
clt_status clt__launch(clt_device *dev, const char *family, const char *options,
                       const char *kernel, unsigned work_dim, const size_t *gws,
                       const size_t *lws, size_t nargs, const clt__arg *args);
/* src/ops: softmax variant 2 has a work-group per row, matmul backend 2 is
 * the CPU GEMM kernels (2-D and 3-D ranges). */
clt_status clt__matmul_backend(const clt_tensor *a, const clt_tensor *b, int backend,
                               clt_tensor **out, const char *fn);
clt_status clt__softmax_variant(const clt_tensor *a, int dim, bool logmode, int variant,
                                clt_tensor **out);

/* A refused call: status `want`, *out NULL, a message holding `text`, and
 * no buffer allocated or kept. */
#define ASSERT_REFUSED(call, out, want, text, dev)                                       \
    do {                                                                                 \
        clt_memory_stats s0_ = mem_stats(dev);                                           \
        (out) = (clt_tensor *)&s0_;                                                      \
        clt_status st_ = (call);                                                         \
        cr_assert_eq(st_, (want), "%s: %s: %s", #call, clt_status_name(st_),             \
                     clt_last_error());                                                  \
        cr_assert_null((out), "%s left *out set", #call);                                \
        cr_assert(strstr(clt_last_error(), (text)) != NULL, "%s: message '%s' lacks '%s'", \
                  #call, clt_last_error(), (text));                                      \
        clt_memory_stats s1_ = mem_stats(dev);                                           \
        cr_assert_eq(s1_.allocated, s0_.allocated, "%s kept a buffer", #call);           \
        cr_assert_eq(s1_.requested, s0_.requested, "%s kept a buffer", #call);           \
    } while (0)

/* A layer refused for its size: an error naming it, no module, nothing kept. */
#define CHECK_REFUSED_LAYER(call, m)                                                      \
    do {                                                                                \
        clt_memory_stats s0_ = mem_stats(dev);                                          \
        clt_status st_ = (call);                                                        \
        cr_assert_neq(st_, CLT_OK, "%s succeeded", #call);                              \
        cr_assert_null((m), "%s left *out set", #call);                                 \
        cr_assert(clt_last_error()[0], "%s left no message", #call);                    \
        cr_assert_eq(mem_stats(dev).allocated, s0_.allocated, "%s kept a buffer", #call); \
    } while (0)

/* A float32 tensor of one element, value v, expanded to `shape`. */
static clt_tensor *expanded(clt_device *dev, float v, int ndim, const int64_t *shape,
                            clt_tensor **base)
{
    int64_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    clt_tensor *e = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndim, ones, &v, base));
    CHECK(clt_expand(*base, ndim, shape, &e));
    cr_assert_eq(clt_tensor_numel(e), ndim == 1 ? shape[0] : shape[0] * shape[1]);
    return e;
}

static float first_value(const clt_tensor *t)
{
    float v = 0;
    CHECK(clt_tensor_read(t, &v, sizeof v));
    return v;
}

/* ---- sizes ---------------------------------------------------------------------- */

Test(limits, byte_counts_past_size_t_are_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t n62 = (int64_t)1 << 62, n61 = (int64_t)1 << 61, two[2] = {(int64_t)1 << 61, 2};
    clt_tensor *t = NULL;
    float x[4] = {0};
    ASSERT_REFUSED(clt_empty(dev, CLT_FLOAT32, 1, &n62, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "does not fit in size_t", dev);
    ASSERT_REFUSED(clt_zeros(dev, CLT_FLOAT32, 1, &n62, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "4611686018427387904 elements", dev);
    ASSERT_REFUSED(clt_ones(dev, CLT_FLOAT32, 2, two, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "[2305843009213693952, 2]", dev);
    ASSERT_REFUSED(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n62, x, &t), t,
                   CLT_ERR_OUT_OF_DEVICE_MEMORY, "does not fit in size_t", dev);
    if (clt_device_supports_dtype(dev, CLT_FLOAT64))
        ASSERT_REFUSED(clt_zeros(dev, CLT_FLOAT64, 1, &n61, &t), t,
                       CLT_ERR_OUT_OF_DEVICE_MEMORY, "float64", dev);
    /* fits size_t, not one buffer of the device */
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    ASSERT_REFUSED(clt_empty(dev, CLT_BOOL, 1, &n62, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "exceeds the largest buffer", dev);
    /* past int64 itself */
    int64_t three[3] = {(int64_t)1 << 40, (int64_t)1 << 20, 8};
    ASSERT_REFUSED(clt_empty(dev, CLT_BOOL, 3, three, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "too many elements", dev);
    ASSERT_REFUSED(clt_arange(dev, CLT_UINT8, 0, 9e18, 1, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "exceeds the largest buffer", dev);
    ASSERT_REFUSED(clt_arange(dev, CLT_FLOAT32, 0, 1e300, 1, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "too many", dev);
}

/* An empty tensor whose other sizes multiply past int64: its contiguous
 * strides are those products, and computing them overflowed (undefined
 * behaviour, seen by UBSan; the strides came out wrapped).  Refused
 * wherever a shape is made; one whose other sizes fit still works. */
Test(limits, empty_shapes_whose_other_sizes_overflow_are_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t bad[3][3] = {{0, INT64_MAX, INT64_MAX},
                         {INT64_MAX, 0, 2},
                         {(int64_t)1 << 32, (int64_t)1 << 32, 0}};
    clt_tensor *t = NULL;
    for (int k = 0; k < 3; k++) {
        ASSERT_REFUSED(clt_empty(dev, CLT_FLOAT32, 3, bad[k], &t), t, CLT_ERR_INVALID_ARGUMENT,
                       "its sizes other than 0 multiply past the int64 range", dev);
        ASSERT_REFUSED(clt_zeros(dev, CLT_UINT8, 3, bad[k], &t), t, CLT_ERR_INVALID_ARGUMENT,
                       "has too many elements", dev);
        ASSERT_REFUSED(clt_rand(NULL, dev, CLT_FLOAT32, 3, bad[k], &t), t,
                       CLT_ERR_INVALID_ARGUMENT, "has too many elements", dev);
    }
    /* from an empty tensor that is fine: views, expansions */
    int64_t ok[2] = {0, INT64_MAX};
    clt_tensor *e = NULL, *base = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 2, ok, &e));
    cr_assert_eq(clt_tensor_numel(e), 0);
    cr_assert_eq(clt_tensor_strides(e)[1], 1);
    ASSERT_REFUSED(clt_view(e, 3, bad[0], &t), t, CLT_ERR_INVALID_ARGUMENT, "is invalid", dev);
    ASSERT_REFUSED(clt_reshape(e, 3, bad[2], &t), t, CLT_ERR_INVALID_ARGUMENT, "is invalid",
                   dev);
    CHECK(clt_empty(dev, CLT_FLOAT32, 3, (int64_t[]){0, 1, 1}, &base));
    ASSERT_REFUSED(clt_expand(base, 3, (int64_t[]){0, (int64_t)1 << 32, (int64_t)1 << 32}, &t),
                   t, CLT_ERR_INVALID_ARGUMENT, "has too many elements", dev);
    /* the largest that fit: 2^31 x 0 x 2^31, and a sum over its empty dim */
    int64_t fit[3] = {(int64_t)1 << 31, 0, (int64_t)1 << 31};
    clt_tensor *f = NULL, *r = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 3, fit, &f));
    CHECK(clt_transpose(f, 0, 2, &t));
    CHECK(clt_contiguous(t, &r));
    cr_assert_eq(clt_tensor_numel(r), 0);
    clt_tensor_free(r);
    clt_tensor_free(t);
    clt_tensor_free(f);
    clt_tensor_free(base);
    clt_tensor_free(e);
}

/* Ops on an expanded tensor of 2^62 elements (no memory behind it) are
 * refused before anything is allocated or launched; the input survives. */
Test(limits, ops_on_huge_expanded_tensors_are_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t n62 = (int64_t)1 << 62, sq[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
    clt_tensor *b1 = NULL, *b2 = NULL, *t = NULL;
    clt_tensor *e = expanded(dev, 2.5f, 1, &n62, &b1);
    clt_tensor *f = expanded(dev, 1.5f, 2, sq, &b2);
    ASSERT_REFUSED(clt_add(e, e, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "clt_add: the result tensor of shape [4611686018427387904] (float32) has "
                   "4611686018427387904 elements: its size in bytes does not fit",
                   dev);
    ASSERT_REFUSED(clt_contiguous(e, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "clt_contiguous: the result tensor of shape [4611686018427387904] (float32) "
                   "has 4611686018427387904 elements: its size in bytes does not fit",
                   dev);
    ASSERT_REFUSED(clt_add(f, f, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY, "does not fit", dev);
    ASSERT_REFUSED(clt_contiguous(f, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY, "does not fit", dev);
    ASSERT_REFUSED(clt_mul_scalar(f, 2.0, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY, "does not fit",
                   dev);
    ASSERT_REFUSED(clt_sum(e, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY, "does not fit", dev);
    ASSERT_REFUSED(clt_sum_dim(f, 1, 0, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY, "tensor of shape",
                   dev);
    ASSERT_REFUSED(clt_matmul(f, f, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY, "does not fit", dev);
    /* four of them concatenated: 2^64 elements wrapped int64 to 0 */
    const clt_tensor *four[4] = {e, e, e, e};
    ASSERT_REFUSED(clt_cat(four, 4, 0, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "add up past the int64 range", dev);
    const clt_tensor *two[2] = {e, e};
    ASSERT_REFUSED(clt_stack(two, 2, 0, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "clt_stack: result shape [2, 4611686018427387904] has too many elements",
                   dev);
    cr_assert_eq(first_value(b1), 2.5f);
    cr_assert_eq(first_value(b2), 1.5f);
    clt_tensor_free(e);
    clt_tensor_free(f);
    clt_tensor_free(b1);
    clt_tensor_free(b2);
}

/* Reading back an expanded tensor whose byte count passes size_t: no
 * buffer holds it (the count wrapped to 0 and the read "succeeded"). */
Test(limits, reading_a_tensor_larger_than_size_t_is_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t n62 = (int64_t)1 << 62;
    clt_tensor *b = NULL;
    clt_tensor *e = expanded(dev, 3.0f, 1, &n62, &b);
    cr_assert_eq(clt_tensor_nbytes(e), SIZE_MAX);
    float buf[4] = {7, 7, 7, 7};
    clt_status st = clt_tensor_read(e, buf, sizeof buf);
    cr_assert_eq(st, CLT_ERR_BUFFER_TOO_SMALL, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(), "does not fit in size_t"), "%s", clt_last_error());
    cr_assert_eq(buf[0], 7.0f, "a refused read wrote");
    char *text = (char *)buf;
    st = clt_tensor_format(e, &text);
    cr_assert_eq(st, CLT_ERR_BUFFER_TOO_SMALL, "%s", clt_status_name(st));
    cr_assert_null(text);
    st = clt_save_npy("/nonexistent-dir/never-written.npy", e);
    cr_assert_eq(st, CLT_ERR_BUFFER_TOO_SMALL, "%s: %s", clt_status_name(st), clt_last_error());
    clt_tensor_free(e);
    clt_tensor_free(b);
}

/* Shapes computed from user sizes: convolution and pooling windows,
 * matmul batches, loader batches. */
Test(limits, computed_shapes_that_overflow_are_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t xs[4] = {1, 1, 8, 8}, ws[4] = {1, 1, 3, 3};
    clt_tensor *x = NULL, *w = NULL, *t = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 4, xs, &x));
    CHECK(clt_ones(dev, CLT_FLOAT32, 4, ws, &w));
    clt_conv2d_opts o = CLT_CONV2D_DEFAULTS;
    o.padding[0] = INT64_MAX / 2;
    ASSERT_REFUSED(clt_conv2d(x, w, NULL, &o, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "passes the int64 range", dev);
    o.padding[0] = 0;
    /* an output of 2^82 elements: refused before anything multiplies its
     * sizes (Ho * Wo overflowed first) */
    o.padding[0] = o.padding[1] = (int64_t)1 << 40;
    ASSERT_REFUSED(clt_conv2d(x, w, NULL, &o, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "clt_conv2d: shape [1, 1, 2199023255558, 2199023255558] has too many", dev);
    o.padding[0] = o.padding[1] = 0;
    o.dilation[1] = (int64_t)1 << 62; /* times 2 passes int64 */
    ASSERT_REFUSED(clt_conv2d(x, w, NULL, &o, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "passes the int64 range", dev);
    int64_t k[2] = {INT64_MAX, 2}, pad[2] = {INT64_MAX / 2, 0}, one[2] = {1, 1};
    ASSERT_REFUSED(clt_max_pool2d(x, k, one, pad, one, 0, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "passes the int64 range", dev);
    int64_t k2[2] = {2, INT64_MAX / 4}, dil[2] = {1, 5};
    ASSERT_REFUSED(clt_max_pool2d(x, k2, one, NULL, dil, 1, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "passes the int64 range", dev);
    /* a window of 2^31 x 2^31 over the whole padded input: the geometry's
     * products (C x C x kH x kW, "weights" a pool has not) passed int64
     * (signed overflow, undefined; UBSan saw it) */
    int64_t kbig[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
    int64_t pbig[2] = {(int64_t)1 << 30, (int64_t)1 << 30};
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 2)
            CHECK(clt_max_pool2d(x, kbig, NULL, pbig, NULL, 0, &t));
        else
            CHECK(clt_avg_pool2d(x, kbig, NULL, pbig, 0, pass, &t));
        cr_assert_eq(clt_tensor_numel(t), 1);
        /* with count_include_pad (pass 1) the window counts 8 x 8 ones among
         * (2^31 + 8)^2 padded places */
        double side = ldexp(1, 31) + 8, want = pass == 1 ? 64 / (side * side) : 1;
        cr_assert(close_enough(first_value(t), want, 1e-6, 0), "pass %d: %g, want %g", pass,
                  first_value(t), want);
        clt_tensor_free(t);
    }
    /* a huge stride in ceil mode is a window count, not an overflow */
    int64_t k3[2] = {2, 2}, big[2] = {INT64_MAX, INT64_MAX};
    CHECK(clt_max_pool2d(x, k3, big, NULL, NULL, 1, &t));
    cr_assert_eq(clt_tensor_size(t, 2), 1);
    cr_assert_eq(clt_tensor_size(t, 3), 1);
    clt_tensor_free(t);
    /* matmul batches that broadcast past int64, and one that is empty */
    int64_t as[3] = {(int64_t)1 << 40, 1, 1};
    clt_tensor *ab = NULL, *bb = NULL, *a = NULL, *bm = NULL;
    float v = 1.0f;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 3, (int64_t[]){1, 1, 1}, &v, &ab));
    CHECK(clt_expand(ab, 3, as, &a));
    int64_t bs4[4] = {(int64_t)1 << 30, 1, 1, 1};
    int64_t ones4[4] = {1, 1, 1, 1};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 4, ones4, &v, &bb));
    CHECK(clt_expand(bb, 4, bs4, &bm));
    ASSERT_REFUSED(clt_matmul(bm, a, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "clt_matmul: result shape [1073741824, 1099511627776, 1, 1] has too many "
                   "elements",
                   dev);
    /* a Conv2d layer whose fan-in (in_channels * kernel) passes int64 (found by
     * tests/fuzz.c under UBSan: the product overflowed before the weight was
     * refused) */
    clt_module *m = (clt_module *)&m;
    CHECK_REFUSED_LAYER(clt_conv2d_layer(dev, 6, 1, INT64_MAX, 1, NULL, 1, NULL, &m), m);
    CHECK_REFUSED_LAYER(clt_conv2d_layer(dev, 1 << 20, 1, 1 << 22, 1 << 22, NULL, 0, NULL, &m), m);
    clt_tensor_free(a);
    clt_tensor_free(ab);
    clt_tensor_free(bm);
    clt_tensor_free(bb);
    clt_tensor_free(x);
    clt_tensor_free(w);
}

/* A result shape that an op computes from its operands (broadcast, product,
 * concatenation) and that has too many elements is refused with the op
 * named, not the tensor layer that allocates it. */
Test(limits, oversized_results_name_the_op)
{
    clt_device *dev = get_device("cpu");
    int64_t col[2] = {(int64_t)1 << 40, 1}, row[2] = {1, (int64_t)1 << 40};
    clt_tensor *b1 = NULL, *b2 = NULL, *b3 = NULL, *b4 = NULL, *t = NULL, *mask = NULL;
    clt_tensor *c = NULL, *idx = NULL, *w = NULL;
    clt_tensor *a = expanded(dev, 1.0f, 2, col, &b1), *b = expanded(dev, 2.0f, 2, row, &b2);
#define NAMED(call, name)                                                                \
    ASSERT_REFUSED(call, t, CLT_ERR_INVALID_ARGUMENT,                                    \
                   name ": result shape [1099511627776, 1099511627776] has too many "    \
                        "elements",                                                      \
                   dev)
    NAMED(clt_add(a, b, &t), "clt_add");
    NAMED(clt_mul(a, b, &t), "clt_mul");
    NAMED(clt_lt(a, b, &t), "clt_lt");
    NAMED(clt_matmul(a, b, &t), "clt_matmul");
    bool m = true;
    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 2, (int64_t[]){1, 1}, &m, &b3));
    CHECK(clt_expand(b3, 2, row, &mask));
    NAMED(clt_where(mask, a, a, &t), "clt_where");
    NAMED(clt_masked_fill(a, mask, 0.0, &t), "clt_masked_fill");
#undef NAMED
    /* one_hot and embedding: the indices' shape with one more dimension */
    int64_t zero = 0, sq[2] = {(int64_t)1 << 31, (int64_t)1 << 31};
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 2, (int64_t[]){1, 1}, &zero, &b4));
    CHECK(clt_expand(b4, 2, sq, &idx));
    ASSERT_REFUSED(clt_one_hot(idx, (int64_t)1 << 2, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "clt_one_hot: result shape [2147483648, 2147483648, 4] has too many "
                   "elements",
                   dev);
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, (int64_t[]){1, 4}, &w));
    ASSERT_REFUSED(clt_embedding(w, idx, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "clt_embedding: result shape [2147483648, 2147483648, 4] has too many "
                   "elements",
                   dev);
    /* a size past the largest buffer, from an expansion made contiguous */
    ASSERT_REFUSED(clt_contiguous(a, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "clt_contiguous: the result tensor of shape [1099511627776, 1] (float32, "
                   "4398046511104 bytes) exceeds the largest buffer",
                   dev);
    /* a fitting result is unaffected */
    CHECK(clt_narrow(a, 0, 0, 1, &c));
    CHECK(clt_add(c, c, &t));
    cr_assert_eq(clt_tensor_numel(t), 1);
    cr_assert_eq(first_value(t), 2.0f);
    clt_tensor_free(t);
    clt_tensor_free(c);
    clt_tensor_free(mask);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(b1);
    clt_tensor_free(b2);
    clt_tensor_free(b3);
    clt_tensor_free(b4);
    clt_tensor_free(idx);
    clt_tensor_free(w);
}

long clt__pool_refuse_after(long pass); /* src/memory/pool.c */

/* A device buffer an op asks for inside (a contiguous copy of a strided
 * operand, an operand cast to the computation's dtype, partial sums,
 * patches) and that the allocator refuses was reported as "allocating N
 * bytes ... on cpu:0" or "tensor of shape ...", naming no op.  Refusing
 * each buffer request of each call in turn: every refusal is
 * CLT_ERR_OUT_OF_DEVICE_MEMORY with the public op first in the message,
 * the output NULL, and for each call but reshape (whose copy is its
 * result) one of them was an operand's copy. */
Test(limits, refused_internal_buffers_name_the_op)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *m = NULL, *mt = NULL, *i32 = NULL, *a4 = NULL, *b3 = NULL, *img = NULL;
    clt_tensor *imgp = NULL, *w = NULL, *y = NULL;
    CHECK(clt_rand(NULL, dev, CLT_FLOAT32, 2, (int64_t[]){6, 4}, &m));
    CHECK(clt_transpose(m, 0, 1, &mt)); /* [4, 6], strided */
    CHECK(clt_ones(dev, CLT_INT32, 2, (int64_t[]){4, 6}, &i32));
    /* batch [2, 5] that no single stride walks in either operand */
    CHECK(clt_rand(NULL, dev, CLT_FLOAT32, 4, (int64_t[]){2, 1, 3, 4}, &a4));
    CHECK(clt_rand(NULL, dev, CLT_FLOAT32, 3, (int64_t[]){5, 4, 2}, &b3));
    CHECK(clt_rand(NULL, dev, CLT_FLOAT32, 4, (int64_t[]){1, 5, 5, 2}, &img));
    CHECK(clt_permute(img, 4, (int[]){0, 3, 1, 2}, &imgp)); /* NHWC seen as NCHW */
    CHECK(clt_rand(NULL, dev, CLT_FLOAT32, 4, (int64_t[]){3, 2, 3, 3}, &w));
    int64_t labels[4] = {0, 5, 2, 3};
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, (int64_t[]){4}, labels, &y));
    const int64_t k2[2] = {2, 2};
    float host[24];
    for (int c = 0; c < 10; c++) {
        static const char *const names[] = {
            "clt_softmax", "clt_matmul", "clt_add",           "clt_sum_dim",   "clt_conv2d",
            "clt_cross_entropy", "clt_reshape", "clt_tensor_read", "clt_max_pool2d",
            "clt_mse_loss"};
        bool copied = false;
        long pass = 0;
        for (;; pass++) {
            clt_tensor *t = (clt_tensor *)&t;
            clt__pool_refuse_after(pass);
            clt_status st;
            switch (c) {
            case 0: st = clt_softmax(mt, 1, &t); break;
            case 1: st = clt_matmul(a4, b3, &t); break;
            case 2: st = clt_add(i32, mt, &t); break;
            case 3: st = clt_sum_dim(mt, 1, 0, &t); break;
            case 4: st = clt_conv2d(imgp, w, NULL, NULL, &t); break;
            case 5: st = clt_cross_entropy(mt, y, NULL, &t); break;
            case 6: st = clt_reshape(mt, 1, (int64_t[]){24}, &t); break;
            case 7: t = NULL, st = clt_tensor_read(mt, host, sizeof host); break;
            case 8: st = clt_max_pool2d(imgp, k2, NULL, NULL, NULL, 0, &t); break;
            default: st = clt_mse_loss(mt, mt, CLT_REDUCTION_MEAN, &t); break;
            }
            if (clt__pool_refuse_after(-1) >= 0) { /* every request went through */
                CHECK(st);
                clt_tensor_free(t);
                break;
            }
            const char *msg = clt_last_error();
            cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s, request %ld: %s: %s", names[c],
                         pass, clt_status_name(st), msg);
            cr_assert_null(t, "%s, request %ld: *out set", names[c], pass);
            cr_assert(strncmp(msg, names[c], strlen(names[c])) == 0 &&
                          strstr(msg, "refused by the test hook"),
                      "%s, request %ld: %s", names[c], pass, msg);
            copied |= strstr(msg, "copy") != NULL;
        }
        cr_assert(pass > 0, "%s asked for no buffer", names[c]);
        cr_assert(copied || c == 6, "%s made no copy of its operand", names[c]);
    }
    clt_tensor *all[] = {m, mt, i32, a4, b3, img, imgp, w, y};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
}

/* Layers whose weight shapes pass int64: refused with the layer named,
 * before fan_in (in_channels x kH x kW) is multiplied (signed overflow,
 * undefined; UBSan saw it). */
Test(limits, layers_with_weights_past_int64_are_refused)
{
    clt_device *dev = get_device("cpu");
    const int64_t big[3][3] = {{INT64_MAX, 3, 3}, {4, (int64_t)1 << 32, (int64_t)1 << 32},
                               {(int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 2}};
    for (int k = 0; k < 3; k++) {
        clt_module *m = (clt_module *)&m;
        clt_status st = clt_conv2d_layer(dev, big[k][0], 4, big[k][1], big[k][2], NULL, 1, NULL,
                                         &m);
        cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%d: %s", k, clt_status_name(st));
        cr_assert_null(m);
        cr_assert(strstr(clt_last_error(), "clt_conv2d_layer: shape [4, ") &&
                      strstr(clt_last_error(), "has too many elements"),
                  "%s", clt_last_error());
    }
}

static clt_status never_fill(void *user, const int64_t *idx, int64_t count, void *x, void *y)
{
    (void)user, (void)idx, (void)count, (void)x, (void)y;
    return CLT_OK;
}

Test(limits, loader_batches_past_size_t_are_refused)
{
    clt_device *dev = get_device("cpu");
    int64_t sample[2] = {(int64_t)1 << 30, (int64_t)1 << 30};
    clt_array_spec xs = {NULL, CLT_FLOAT32, 2, sample};
    clt_loader_opts o = CLT_LOADER_DEFAULTS;
    o.batch_size = (int64_t)1 << 20;
    clt_dataloader *dl = (clt_dataloader *)&o;
    clt_status st = clt_dataloader_callback(dev, (int64_t)1 << 40, &xs, NULL, never_fill, NULL,
                                            &o, &dl);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert_null(dl);
    cr_assert(strstr(clt_last_error(), "pass what size_t and int64 hold"), "%s",
              clt_last_error());
    /* as many samples as a permutation of int64 indices cannot be counted */
    int64_t small = 4;
    xs.ndim = 1;
    xs.shape = &small;
    o.batch_size = 1;
    st = clt_dataloader_callback(dev, (int64_t)1 << 62, &xs, NULL, never_fill, NULL, &o, &dl);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", clt_status_name(st), clt_last_error());
    cr_assert_null(dl);
    /* one sample larger than size_t */
    int64_t huge[3] = {(int64_t)1 << 40, (int64_t)1 << 20, 4};
    xs.ndim = 3;
    xs.shape = huge;
    st = clt_dataloader_callback(dev, 4, &xs, NULL, never_fill, NULL, &o, &dl);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", clt_status_name(st), clt_last_error());
    cr_assert(strstr(clt_last_error(), "more bytes than size_t holds"), "%s", clt_last_error());
    cr_assert_null(dl);
}

/* Batch sizes near INT64_MAX: len(loader) counts one batch for the few
 * samples there are ((n + b - 1) / b overflowed int64 and gave 0), and the
 * epoch holds that one batch. */
Test(limits, loader_length_with_huge_batch_sizes)
{
    clt_device *dev = get_device("cpu");
    float data[10];
    for (int i = 0; i < 10; i++)
        data[i] = (float)i;
    int64_t shape[2] = {5, 2};
    clt_array_spec xs = {data, CLT_FLOAT32, 2, shape};
    const int64_t sizes[4] = {INT64_MAX, INT64_MAX - 3, (int64_t)1 << 62, 6};
    for (int k = 0; k < 4; k++)
        for (int drop = 0; drop < 2; drop++) {
            clt_loader_opts o = CLT_LOADER_DEFAULTS;
            o.batch_size = sizes[k];
            o.drop_last = drop;
            clt_dataloader *dl = NULL;
            CHECK(clt_dataloader_arrays(dev, &xs, NULL, &o, &dl));
            cr_assert_eq(clt_dataloader_len(dl), drop ? 0 : 1, "batch_size %lld, drop_last %d",
                         (long long)sizes[k], drop);
            int got = 0, batches = 0;
            clt_tensor *x = NULL;
            for (;;) {
                CHECK(clt_dataloader_next(dl, &x, NULL, &got));
                if (!got)
                    break;
                batches++;
                cr_assert_eq(clt_tensor_size(x, 0), 5);
                float back[10];
                CHECK(clt_tensor_read(x, back, sizeof back));
                cr_assert(memcmp(back, data, sizeof data) == 0);
                clt_tensor_free(x);
            }
            cr_assert_eq(batches, clt_dataloader_len(dl), "batch_size %lld, drop_last %d",
                         (long long)sizes[k], drop);
            clt_dataloader_free(dl);
        }
}

/* File headers that describe more than int64 or size_t count are refused,
 * not allocated. */
static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

Test(limits, file_headers_with_huge_shapes_are_refused)
{
    clt_device *dev = get_device("cpu");
    char path[] = "/tmp/clt_limits_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    /* the last is empty, with no data: its other sizes still multiply past
     * int64, as clt_empty refuses them (the host reader took it once) */
    const char *shapes[4] = {"(4611686018427387904,)", "(3037000500, 3037000500)",
                             "(1099511627776, 1048576, 16)",
                             "(0, 9223372036854775807, 9223372036854775807)"};
    for (int k = 0; k < 4; k++) {
        unsigned char file[128 + 16] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0};
        char dict[119];
        snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                 shapes[k]);
        memset(file + 10, ' ', 118);
        memcpy(file + 10, dict, strlen(dict));
        file[127] = '\n';
        write_bytes(path, file, k == 3 ? 128 : sizeof file);
        clt_tensor *t = NULL;
        ASSERT_REFUSED(clt_load_npy(path, dev, &t), t, CLT_ERR_INVALID_ARGUMENT, "shape", dev);
        clt_array_spec *a = (clt_array_spec *)file;
        clt_status sh = clt_load_npy_host(path, &a);
        cr_assert_eq(sh, CLT_ERR_INVALID_ARGUMENT, "%s: %s: %s", shapes[k], clt_status_name(sh),
                     clt_last_error());
        cr_assert_null(a, "%s: clt_load_npy_host left *out set", shapes[k]);
        cr_assert(strstr(clt_last_error(), "clt_load_npy_host") &&
                  strstr(clt_last_error(), "too large"), "%s", clt_last_error());
    }
    const char *hdr = "{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
                      "\"data_offsets\":[0,16]}}";
    size_t hl = strlen(hdr);
    unsigned char st[256] = {0};
    for (int i = 0; i < 8; i++)
        st[i] = (unsigned char)(hl >> (8 * i));
    memcpy(st + 8, hdr, hl);
    write_bytes(path, st, 8 + hl + 16);
    clt_named_tensor *arr = (clt_named_tensor *)st;
    size_t n = 7;
    clt_status s1 = clt_load_safetensors(path, dev, &arr, &n);
    cr_assert_eq(s1, CLT_ERR_INVALID_ARGUMENT, "%s: %s", clt_status_name(s1), clt_last_error());
    cr_assert(strstr(clt_last_error(), "too large"), "%s", clt_last_error());
    cr_assert_null(arr);
    unlink(path);
}

/* ---- a caller's buffer -------------------------------------------------------------- */

Test(limits, cl_buffer_offsets_and_sizes_that_wrap_are_refused)
{
    clt_device *dev = get_device("cpu");
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(clt_device_cl_context(dev), CL_MEM_READ_WRITE, 64, NULL, &err);
    cr_assert_eq(err, CL_SUCCESS);
    size_t real = 0;
    cr_assert_eq(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof real, &real, NULL), CL_SUCCESS);
    cr_assert_eq(real, 64);
    int64_t four = 4, two = 2, n62 = (int64_t)1 << 62, n16 = 16, n17 = 17;
    clt_tensor *t = NULL;
    ASSERT_REFUSED(clt_tensor_from_cl_buffer(dev, mem, 0, CLT_FLOAT32, 1, &n62, &t), t,
                   CLT_ERR_INVALID_ARGUMENT, "past the largest size_t", dev);
    ASSERT_REFUSED(clt_tensor_from_cl_buffer(dev, mem, SIZE_MAX - 3, CLT_FLOAT32, 1, &four, &t),
                   t, CLT_ERR_INVALID_ARGUMENT, "past the largest size_t", dev);
    ASSERT_REFUSED(clt_tensor_from_cl_buffer(dev, mem, SIZE_MAX - 7, CLT_FLOAT32, 1, &two, &t),
                   t, CLT_ERR_INVALID_ARGUMENT, "past the largest size_t", dev);
    ASSERT_REFUSED(clt_tensor_from_cl_buffer(dev, mem, 4, CLT_FLOAT32, 1, &n16, &t), t,
                   CLT_ERR_INVALID_ARGUMENT, "needs 68 bytes, the buffer has 64", dev);
    ASSERT_REFUSED(clt_tensor_from_cl_buffer(dev, mem, 0, CLT_FLOAT32, 1, &n17, &t), t,
                   CLT_ERR_INVALID_ARGUMENT, "needs 68 bytes", dev);
    /* the buffer is untouched and still usable to its last byte */
    CHECK(clt_tensor_from_cl_buffer(dev, mem, 0, CLT_FLOAT32, 1, &n16, &t));
    cr_assert_eq(clt_tensor_numel(t), 16);
    clt_tensor_free(t);
    CHECK(clt_tensor_from_cl_buffer(dev, mem, 60, CLT_FLOAT32, 1, (int64_t[]){1}, &t));
    clt_tensor_free(t);
    cl_uint refs = 0;
    clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs, NULL);
    cr_assert_eq(refs, 1, "a refused or freed wrapper kept a reference");
    clReleaseMemObject(mem);
}

/* A DLPack tensor whose strides or byte offset put its elements past the
 * int64 range of byte distances, or around the end of the address space:
 * refused before any element is read (they were followed, reading from
 * wrapped addresses: a crash, or another object's bytes). */
Test(limits, dlpack_strides_and_offsets_that_wrap_are_refused)
{
    clt_device *dev = get_device("cpu");
    float host[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t shape[2] = {4, 2}, strides[2] = {2, 1};
    DLManagedTensor src = {0};
    src.dl_tensor.data = host;
    src.dl_tensor.device = (DLDevice){kDLCPU, 0};
    src.dl_tensor.ndim = 2;
    src.dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
    src.dl_tensor.shape = shape;
    src.dl_tensor.strides = strides;
    const int64_t bad_strides[5] = {INT64_MAX, INT64_MIN, (int64_t)1 << 62, (int64_t)1 << 61,
                                    -((int64_t)1 << 61)};
    clt_tensor *t = NULL;
    for (int k = 0; k < 5; k++) {
        strides[0] = bad_strides[k];
        ASSERT_REFUSED(clt_from_dlpack(dev, &src, &t), t, CLT_ERR_INVALID_ARGUMENT,
                       "storage size calculation overflowed", dev);
    }
    /* byte offsets that carry the data pointer around the address space */
    strides[0] = 2;
    const uint64_t bad_offsets[5] = {UINT64_MAX, UINT64_MAX - 3,
                                     (uint64_t)0 - (uint64_t)(uintptr_t)host,
                                     /* byte distances past int64 that wrap nothing on a
                                      * 64-bit machine (they were followed: a crash) */
                                     (uint64_t)1 << 63, ((uint64_t)1 << 63) + 64};
    for (int k = 0; k < 5; k++) {
        src.dl_tensor.byte_offset = bad_offsets[k];
        ASSERT_REFUSED(clt_from_dlpack(dev, &src, &t), t, CLT_ERR_INVALID_ARGUMENT,
                       "outside the address space", dev);
    }
    /* a negative stride whose byte distance fits int64 but reaches below
     * address 0 (user addresses are below 2^47 on x86-64, 2^56 at most) */
    strides[0] = -((int64_t)1 << 57);
    src.dl_tensor.byte_offset = 0;
    ASSERT_REFUSED(clt_from_dlpack(dev, &src, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "outside the address space", dev);
    /* strides that stay inside are followed: a stride-0 row repeated, and
     * the rows read backwards from the last */
    int64_t ok_strides[2] = {0, 1};
    src.dl_tensor.strides = ok_strides;
    CHECK(clt_from_dlpack(dev, &src, &t));
    float got[8];
    CHECK(clt_tensor_read(t, got, sizeof got));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(got[i], host[i % 2], "element %d", i);
    clt_tensor_free(t);
    ok_strides[0] = -2;
    src.dl_tensor.byte_offset = 6 * sizeof(float);
    CHECK(clt_from_dlpack(dev, &src, &t));
    CHECK(clt_tensor_read(t, got, sizeof got));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            cr_assert_eq(got[i * 2 + j], host[(3 - i) * 2 + j], "[%d][%d]", i, j);
    clt_tensor_free(t);
    /* an empty array whose other sizes multiply past int64 (its C-order
     * strides overflowed before the shape was refused; UBSan saw it) */
    int64_t empty[3] = {0, INT64_MAX, INT64_MAX};
    src.dl_tensor.shape = empty;
    src.dl_tensor.strides = NULL;
    src.dl_tensor.ndim = 3;
    ASSERT_REFUSED(clt_from_dlpack(dev, &src, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "has too many elements", dev);
    src.dl_tensor.ndim = 2;
    /* a size the device refuses is refused before the host copy is made */
    int64_t huge[2] = {(int64_t)1 << 20, (int64_t)1 << 20};
    int64_t zero[2] = {0, 0};
    src.dl_tensor.shape = huge;
    src.dl_tensor.strides = zero;
    src.dl_tensor.byte_offset = 0;
    src.dl_tensor.dtype = (DLDataType){kDLUInt, 8, 1};
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    if (info.max_alloc_bytes < ((uint64_t)1 << 40))
        ASSERT_REFUSED(clt_from_dlpack(dev, &src, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                       "exceeds the largest buffer", dev);
}

/* ---- launches ---------------------------------------------------------------------- */

/* A launch range past the device's limit in more than one dimension is
 * refused before any program is built; the driver never sees it. */
Test(limits, multi_dimensional_launch_past_the_limit_is_refused)
{
    clt_device *dev = get_device("cpu");
    clt__launch_max_set(dev, 1000);
    uint64_t before = launches();
    size_t gws[2] = {100, 11};
    clt_status st = clt__launch(dev, "no_such_family", "", "no_such_kernel", 2, gws, NULL, 0,
                                NULL);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s: %s", clt_status_name(st), clt_last_error());
    const char *msg = clt_last_error();
    cr_assert(strstr(msg, "'no_such_kernel'") && strstr(msg, "[100, 11]") &&
                  strstr(msg, "at most 1000 work-items per launch") &&
                  strstr(msg, clt_device_label(dev)),
              "%s", msg);
    cr_assert_eq(launches(), before);
    /* a 1-D range with a work-group larger than the limit cannot be split */
    size_t g1 = 4096, l1 = 2048;
    st = clt__launch(dev, "no_such_family", "", "no_such_kernel", 1, &g1, &l1, 0, NULL);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_last_error());
    /* an op: the CPU GEMM kernels take 2-D and 3-D ranges */
    clt__launch_max_set(dev, 1);
    int64_t shape[2] = {256, 256};
    clt_tensor *a = NULL, *t = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 2, shape, &a));
    ASSERT_REFUSED(clt__matmul_backend(a, a, 2, &t, "clt_matmul"), t, CLT_ERR_INVALID_ARGUMENT,
                   "work-items per launch", dev);
    clt_tensor_free(a);
}

/* With a small per-launch limit, 1-D launches go in parts at increasing
 * offsets and give the values of host references. */
Test(limits, long_launches_are_split_into_parts)
{
    clt_device *dev = get_device("cpu");
    const int64_t n = 10007;
    float *h = malloc(n * sizeof *h);
    fill_random(h, (size_t)n, 7);
    clt_tensor *a = NULL, *r = NULL, *v = NULL, *c = NULL;
    clt__launch_max_set(dev, 1000);
    uint64_t l0 = launches();
    CHECK(clt_arange(dev, CLT_FLOAT32, 0, (double)n, 1, &r));
    cr_assert_geq(launches() - l0, 11, "arange was not split: %llu launches",
                  (unsigned long long)(launches() - l0));
    float *got = read_f32(r);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], (float)i, "arange[%lld] = %g", (long long)i, got[i]);
    free(got);
    /* a strided copy (one work-item per element) */
    int64_t shape[2] = {91, 107};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape, h, &a));
    CHECK(clt_transpose(a, 0, 1, &v));
    CHECK(clt_contiguous(v, &c));
    got = read_f32(c);
    for (int64_t i = 0; i < 107; i++)
        for (int64_t j = 0; j < 91; j++)
            cr_assert_eq(got[i * 91 + j], h[j * 107 + i], "transpose [%lld, %lld]",
                         (long long)i, (long long)j);
    free(got);
    clt_tensor_free(c);
    /* a broadcast add over the transposed view */
    clt_tensor *row = NULL, *sum = NULL;
    int64_t rs[1] = {91};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, rs, h, &row));
    CHECK(clt_add(v, row, &sum));
    got = read_f32(sum);
    for (int64_t i = 0; i < 107; i++)
        for (int64_t j = 0; j < 91; j++)
            cr_assert_eq(got[i * 91 + j], h[j * 107 + i] + h[j], "add [%lld, %lld]",
                         (long long)i, (long long)j);
    free(got);
    clt_tensor_free(row);
    clt_tensor_free(sum);
    clt_tensor_free(v);
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(h);
}

/* The kernels that work in groups (GPU-style reductions, softmax with a
 * work-group per row) find their group from the offset of each part: the
 * split launch gives bit-identical results to one launch. */
Test(limits, split_work_group_kernels_match_one_launch)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {97, 300};
    size_t n = 97 * 300;
    float *h = malloc(n * sizeof *h);
    fill_random(h, n, 11);
    clt_tensor *a = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, shape, h, &a));
    setenv("CLTENSOR_REDUCE_STYLE", "gpu", 1);
    float *want[3], *got[3];
    /* split first: a freed result goes to the cache, and a later result of
     * the same size may reuse its buffer with its values */
    for (int pass = 1; pass >= 0; pass--) {
        clt__launch_max_set(dev, pass ? 512 : 0);
        clt_tensor *s = NULL, *m = NULL, *sm = NULL;
        uint64_t l0 = launches();
        CHECK(clt_sum_dim(a, 1, 0, &s));
        CHECK(clt_max_dim(a, 1, 0, &m, NULL));
        CHECK(clt__softmax_variant(a, 1, false, 2, &sm));
        if (pass)
            cr_assert_gt(launches() - l0, 6, "nothing was split");
        float **out = pass ? got : want;
        out[0] = read_f32(s);
        out[1] = read_f32(m);
        out[2] = read_f32(sm);
        clt_tensor_free(s);
        clt_tensor_free(m);
        clt_tensor_free(sm);
    }
    unsetenv("CLTENSOR_REDUCE_STYLE");
    size_t len[3] = {97, 97, n};
    for (int k = 0; k < 3; k++) {
        cr_assert(memcmp(got[k], want[k], len[k] * sizeof(float)) == 0,
                  "result %d differs when split", k);
        free(got[k]);
        free(want[k]);
    }
    /* and they are the rows' sums and softmax, split once more */
    clt__launch_max_set(dev, 512);
    clt_tensor *s = NULL, *sm = NULL;
    CHECK(clt_sum_dim(a, 1, 0, &s));
    CHECK(clt__softmax_variant(a, 1, false, 2, &sm));
    float *gs = read_f32(s), *gm = read_f32(sm);
    for (int64_t i = 0; i < 97; i++) {
        double acc = 0, mx = -INFINITY, z = 0;
        for (int64_t j = 0; j < 300; j++) {
            acc += h[i * 300 + j];
            mx = fmax(mx, h[i * 300 + j]);
        }
        for (int64_t j = 0; j < 300; j++)
            z += exp(h[i * 300 + j] - mx);
        cr_assert(close_enough(gs[i], acc, 1e-5, 1e-3), "row %lld: %g vs %g", (long long)i,
                  gs[i], acc);
        for (int64_t j = 0; j < 300; j++)
            cr_assert(close_enough(gm[i * 300 + j], exp(h[i * 300 + j] - mx) / z, 1e-4, 1e-7),
                      "softmax [%lld, %lld]", (long long)i, (long long)j);
    }
    free(gs);
    free(gm);
    clt_tensor_free(s);
    clt_tensor_free(sm);
    clt_tensor_free(a);
    free(h);
}

/* Chunked CPU kernels (one work-item per chunk of elements) split down to
 * one work-item per launch. */
Test(limits, chunked_kernels_split_to_single_work_items)
{
    clt_device *dev = get_device("cpu");
    const int64_t n = 50000;
    clt__launch_max_set(dev, 1);
    clt_tensor *a = NULL, *b = NULL, *c = NULL;
    uint64_t l0 = launches();
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 3.0, &a));
    uint64_t fills = launches() - l0;
    CHECK(clt_full(dev, CLT_FLOAT32, 1, &n, 4.0, &b));
    CHECK(clt_mul(a, b, &c));
    float *got = read_f32(c);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(got[i], 12.0f, "element %lld: %g", (long long)i, got[i]);
    free(got);
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    if (info.type == CLT_DEVICE_TYPE_CPU)
        cr_assert_gt(fills, 1, "the chunked fill went in one launch");
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

/* ---- the allocator's limit ---------------------------------------------------------- */

TestSuite(memlimit, .init = pool_defaults);

Test(memlimit, cap_refuses_with_the_sizes_and_changes_nothing)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_memory_empty_cache(dev));
    clt_memory_stats s0 = mem_stats(dev);
    CHECK(clt_memory_set_limit(dev, s0.allocated + (1u << 20))); /* 1 MiB more */
    cr_assert_eq(mem_stats(dev).limit, s0.allocated + (1u << 20));
    int64_t quarter = (1 << 18) / 4 * 3 / 4; /* 192 KiB of float32 */
    clt_tensor *t[8] = {NULL};
    int made = 0;
    clt_status st = CLT_OK;
    while (made < 8 && (st = clt_empty(dev, CLT_FLOAT32, 1, &quarter, &t[made])) == CLT_OK)
        made++;
    cr_assert_eq(made, 5, "%d tensors of 192 KiB fit under 1 MiB", made);
    cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
    cr_assert_null(t[made]);
    char *msg = strdup(clt_last_error());
    char want[160];
    snprintf(want, sizeof want, "allocating %lld bytes", (long long)quarter * 4);
    cr_assert(strstr(msg, want), "%s", msg);
    snprintf(want, sizeof want, "%llu bytes in use, 0 cached, limit %llu bytes",
             (unsigned long long)mem_stats(dev).allocated,
             (unsigned long long)s0.allocated + (1u << 20));
    cr_assert(strstr(msg, want), "%s", msg);
    cr_assert(strstr(msg, clt_device_label(dev)), "%s", msg);
    free(msg);
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_eq(s1.allocated, s0.allocated + 5 * (uint64_t)quarter * 4);
    cr_assert_eq(s1.failures, s0.failures + 1);
    cr_assert_eq(s1.device_allocs, s0.device_allocs + 5, "the refused request reached the device");
    /* released, it fits again */
    clt_tensor_free(t[0]);
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, &quarter, &t[0]));
    for (int i = 0; i < made; i++)
        clt_tensor_free(t[i]);
    /* the cap removed, the device's memory is the limit */
    CHECK(clt_memory_set_limit(dev, 0));
    cr_assert_eq(mem_stats(dev).limit, s0.device_limit);
}

Test(memlimit, cache_is_emptied_when_that_makes_room)
{
    clt_device *dev = get_device("cpu");
    CHECK(clt_memory_empty_cache(dev));
    clt_memory_stats s0 = mem_stats(dev);
    CHECK(clt_memory_set_limit(dev, s0.allocated + (1u << 20)));
    int64_t big = (600 << 10) / 4, other = (500 << 10) / 4;
    clt_tensor *t = NULL;
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, &big, &t));
    clt_tensor_free(t); /* 640 KiB (its size class) cached */
    clt_memory_stats s1 = mem_stats(dev);
    cr_assert_gt(s1.held, 0);
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, &other, &t)); /* another class: needs the room */
    clt_memory_stats s2 = mem_stats(dev);
    cr_assert_eq(s2.held, 0, "the cache was not emptied");
    cr_assert_eq(s2.retries, s1.retries + 1);
    cr_assert_eq(s2.failures, s1.failures);
    clt_tensor_free(t);
}

Test(memlimit, fraction_sets_the_cap)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats s0 = mem_stats(dev);
    CHECK(clt_memory_set_fraction(dev, 0.5));
    cr_assert_eq(mem_stats(dev).limit, (uint64_t)(0.5 * (double)s0.device_limit));
    double bad[4] = {0.0, -0.25, 1.5, NAN};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(clt_memory_set_fraction(dev, bad[i]), CLT_ERR_INVALID_ARGUMENT);
        cr_assert(strstr(clt_last_error(), "is not in (0, 1]"), "%s", clt_last_error());
    }
    cr_assert_eq(mem_stats(dev).limit, (uint64_t)(0.5 * (double)s0.device_limit),
                 "a refused fraction changed the cap");
    cr_assert_eq(clt_memory_set_fraction(NULL, 0.5), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_memory_set_limit(NULL, 1), CLT_ERR_NULL_ARGUMENT);
    CHECK(clt_memory_set_limit(dev, 0));
}

static void tiny_fraction(void)
{
    unsetenv("CLTENSOR_POOL");
    setenv("CLTENSOR_MEMORY_FRACTION", "0.000001", 1);
}

/* CLTENSOR_MEMORY_FRACTION caps the device from its first allocation. */
Test(memlimit, environment_fraction_caps_the_device, .init = tiny_fraction)
{
    clt_device *dev = get_device("cpu");
    clt_memory_stats s0 = mem_stats(dev);
    uint64_t cap = (uint64_t)(0.000001 * (double)s0.device_limit);
    int64_t n = (int64_t)(cap / 4) + 1024;
    clt_tensor *t = NULL;
    ASSERT_REFUSED(clt_empty(dev, CLT_FLOAT32, 1, &n, &t), t, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "it would pass the limit", dev);
    cr_assert_eq(mem_stats(dev).limit, cap);
    n = 16;
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, &n, &t));
    clt_tensor_free(t);
}

static void bad_fraction(void)
{
    setenv("CLTENSOR_MEMORY_FRACTION", "half", 1);
}

Test(memlimit, environment_fraction_that_is_no_fraction_is_an_error, .init = bad_fraction)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *t = NULL;
    ASSERT_REFUSED(clt_empty(dev, CLT_FLOAT32, 1, &n, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "CLTENSOR_MEMORY_FRACTION=half", dev);
    CHECK(clt_memory_set_fraction(dev, 1.0)); /* the call decides over the variable */
    CHECK(clt_empty(dev, CLT_FLOAT32, 1, &n, &t));
    clt_tensor_free(t);
}

static void escaping_fraction(void)
{
    setenv("CLTENSOR_MEMORY_FRACTION", "0.5\n\x1b[31m", 1);
}

/* The variable's value is quoted in the message as a caller's string. */
Test(memlimit, environment_fraction_is_quoted, .init = escaping_fraction)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    clt_tensor *t = NULL;
    ASSERT_REFUSED(clt_empty(dev, CLT_FLOAT32, 1, &n, &t), t, CLT_ERR_INVALID_ARGUMENT,
                   "CLTENSOR_MEMORY_FRACTION=0.5\\x0a\\x1b[31m is not a fraction", dev);
}

/* The device's own global memory is the limit: a loop of buffers ends
 * with CLT_ERR_OUT_OF_DEVICE_MEMORY, not the host's OOM killer.  Only on
 * CPU devices, where untouched buffers cost no memory (PoCL allocates
 * host memory it does not write). */
Test(memlimit, device_memory_is_the_limit)
{
    clt_device *dev = get_device("cpu");
    clt_device_info info;
    CHECK(clt_device_get_info(dev, &info));
    if (info.type != CLT_DEVICE_TYPE_CPU || info.global_mem_bytes == 0 ||
        info.max_alloc_bytes == 0)
        cr_skip_test("not a CPU device with known limits");
    int64_t n = (int64_t)(info.max_alloc_bytes / 2);
    size_t most = (size_t)(info.global_mem_bytes / (uint64_t)n) + 2;
    clt_tensor **t = calloc(most, sizeof *t);
    size_t made = 0;
    clt_status st = CLT_OK;
    while (made < most && (st = clt_empty(dev, CLT_BOOL, 1, &n, &t[made])) == CLT_OK)
        made++;
    cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
    cr_assert_null(t[made]);
    cr_assert_leq((uint64_t)made * (uint64_t)n, info.global_mem_bytes);
    cr_assert(strstr(clt_last_error(), "limit"), "%s", clt_last_error());
    for (size_t i = 0; i < made; i++)
        clt_tensor_free(t[i]);
    free(t);
    /* more than one buffer may hold */
    int64_t over = (int64_t)info.max_alloc_bytes + 1;
    clt_tensor *u = NULL;
    ASSERT_REFUSED(clt_empty(dev, CLT_BOOL, 1, &over, &u), u, CLT_ERR_OUT_OF_DEVICE_MEMORY,
                   "exceeds the largest buffer", dev);
}

/* A refusal inside a call names the call, also where the buffer refused is
 * a helper's: fill_ of a view (its value as a 0-d tensor), zero_, and the
 * loader's batch. */
Test(memlimit, refusals_of_helper_buffers_name_the_call)
{
    clt_device *dev = get_device("cpu");
    const float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t sh[2] = {2, 3};
    clt_tensor *t = NULL, *tt = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 2, sh, v, &t));
    CHECK(clt_transpose(t, 0, 1, &tt));
    float x[8] = {0};
    int64_t xs[2] = {4, 2};
    clt_array_spec spec = {x, CLT_FLOAT32, 2, xs};
    clt_loader_opts opts = {2, 0, 0, 0, 0, 0, NULL, 0, NULL, 0, 1, 0, 0, NULL, NULL, NULL, NULL};
    clt_dataloader *dl = NULL;
    CHECK(clt_dataloader_arrays(dev, &spec, NULL, &opts, &dl));
    CHECK(clt_device_synchronize(dev));
    CHECK(clt_memory_empty_cache(dev));
    CHECK(clt_memory_set_limit(dev, mem_stats(dev).allocated));
    const char *names[2] = {"clt_fill_", "clt_zero_"};
    for (int k = 0; k < 2; k++) {
        clt_status st = k == 0 ? clt_fill_(tt, 9) : clt_zero_(tt);
        cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s: %s", names[k], clt_status_name(st));
        cr_assert(strncmp(clt_last_error(), names[k], strlen(names[k])) == 0 &&
                  strstr(clt_last_error(), "limit"), "%s", clt_last_error());
    }
    clt_tensor *bx = (clt_tensor *)&spec;
    int got = 1;
    clt_status st = clt_dataloader_next(dl, &bx, NULL, &got);
    cr_assert_eq(st, CLT_ERR_OUT_OF_DEVICE_MEMORY, "%s", clt_status_name(st));
    cr_assert(strncmp(clt_last_error(), "clt_dataloader_next:", 20) == 0, "%s", clt_last_error());
    cr_assert_null(bx);
    cr_assert_eq(got, 0);
    CHECK(clt_memory_set_limit(dev, 0));
    float back[6];
    CHECK(clt_tensor_read(t, back, sizeof back));
    cr_assert(memcmp(back, v, sizeof v) == 0, "a refused fill changed the tensor");
    clt_dataloader_free(dl);
    clt_tensor_free(tt);
    clt_tensor_free(t);
}
