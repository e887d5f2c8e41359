/* test_settings.c: cltensor/settings.h: anomaly detection naming the node
 * whose formula made a NaN (process-wide, as torch's), generator state saved as
 * bytes and restored to replay the same draws, the deterministic switch
 * over the accumulating ops, the default dtype, print options and str(t)
 * against strings torch 1.13 printed, finfo/iinfo against <float.h> and
 * <stdint.h>, can_cast, and the tensor predicates. */
#include "helpers.h"

#include <float.h>
#include <pthread.h>
#include <stdint.h>

static clt_tensor *f32(clt_device *dev, int ndim, const int64_t *shape, const float *v)
{
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndim, shape, v, &t));
    return t;
}

/* ---- anomaly detection ------------------------------------------------------------ */

/* a, b = [1, 0] leaves; (a / b).sum().backward(): DivBackward0 gives b the
 * gradient -a / b^2 = [-1, 0/0]. */
static clt_status div_backward(clt_device *dev, clt_tensor **a, clt_tensor **b)
{
    static const float v[2] = {1, 0};
    const int64_t n = 2;
    *a = f32(dev, 1, &n, v);
    *b = f32(dev, 1, &n, v);
    CHECK(clt_set_requires_grad(*a, 1));
    CHECK(clt_set_requires_grad(*b, 1));
    clt_tensor *q = NULL, *s = NULL;
    CHECK(clt_div(*a, *b, &q));
    cr_assert_str_eq(clt_grad_fn_name(q), "DivBackward0");
    CHECK(clt_sum(q, &s));
    clt_status st = clt_backward(s, NULL, 0);
    clt_tensor_free(s);
    clt_tensor_free(q);
    return st;
}

Test(settings, anomaly_names_the_node)
{
    clt_device *dev = get_device("cpu");
    cr_assert_eq(clt_is_anomaly_enabled(), 0);
    cr_assert_eq(clt_is_anomaly_check_nan_enabled(), 1);

    /* off: the NaN reaches b's gradient silently */
    clt_tensor *a, *b, *g = NULL;
    CHECK(div_backward(dev, &a, &b));
    CHECK(clt_grad(b, &g));
    float h[2];
    CHECK(clt_tensor_read(g, h, sizeof h));
    cr_assert_float_eq(h[0], -1.0f, 0);
    cr_assert(isnan(h[1]));
    clt_tensor_free(g);
    clt_tensor_free(a);
    clt_tensor_free(b);

    /* on: the pass stops at the node, naming it and the input */
    clt_set_detect_anomaly(1, 1);
    cr_assert_eq(clt_is_anomaly_enabled(), 1);
    clt_status st = div_backward(dev, &a, &b);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert(strstr(clt_last_error(),
                     "Function 'DivBackward0' returned nan values in its 1th output.") != NULL,
              "%s", clt_last_error());
    g = (clt_tensor *)1;
    CHECK(clt_grad(a, &g));
    cr_assert_null(g, "a leaf's gradient changed by a failed pass");
    clt_tensor_free(a);
    clt_tensor_free(b);

    /* check_nan off: nothing is checked */
    clt_set_detect_anomaly(1, 0);
    cr_assert_eq(clt_is_anomaly_check_nan_enabled(), 0);
    CHECK(div_backward(dev, &a, &b));
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_set_detect_anomaly(0, 1);
    cr_assert_eq(clt_is_anomaly_enabled(), 0);
}

/* clt_autograd_grad's passes are checked too, and the NaN of sqrt's
 * gradient at a negative input is named as torch names it. */
Test(settings, anomaly_in_autograd_grad)
{
    clt_device *dev = get_device("cpu");
    static const float v[2] = {4, -1};
    const int64_t n = 2;
    clt_tensor *x = f32(dev, 1, &n, v), *r = NULL, *s = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_sqrt(x, &r));
    CHECK(clt_sum(r, &s));
    clt_set_detect_anomaly(1, 1);
    clt_tensor *g[1] = {(clt_tensor *)1};
    clt_status st = clt_autograd_grad(&s, 1, NULL, &x, 1, 1, 0, g);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT, "%s", clt_status_name(st));
    cr_assert_null(g[0]);
    cr_assert(strstr(clt_last_error(), "clt_autograd_grad") != NULL &&
                  strstr(clt_last_error(), "Function 'SqrtBackward0' returned nan values in its "
                                           "0th output.") != NULL,
              "%s", clt_last_error());
    clt_set_detect_anomaly(0, 1);
    CHECK(clt_autograd_grad(&s, 1, NULL, &x, 1, 0, 0, g));
    float h[2];
    CHECK(clt_tensor_read(g[0], h, sizeof h));
    cr_assert_float_eq(h[0], 0.25f, 1e-7);
    cr_assert(isnan(h[1]));
    clt_tensor_free(g[0]);
    clt_tensor_free(s);
    clt_tensor_free(r);
    clt_tensor_free(x);
}

Test(settings, anomaly_passes_clean_graphs)
{
    clt_device *dev = get_device("cpu");
    clt_set_detect_anomaly(1, 1);
    static const float v[3] = {1, 2, 3};
    const int64_t n = 3;
    clt_tensor *x = f32(dev, 1, &n, v), *y = NULL, *s = NULL, *g = NULL;
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_mul(x, x, &y));
    CHECK(clt_sum(y, &s));
    CHECK(clt_backward(s, NULL, 0));
    CHECK(clt_grad(x, &g));
    float h[3];
    CHECK(clt_tensor_read(g, h, sizeof h));
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(h[i], 2 * v[i], 0);
    clt_set_detect_anomaly(0, 1);
    clt_tensor_free(g);
    clt_tensor_free(s);
    clt_tensor_free(y);
    clt_tensor_free(x);
}

static void *other_thread(void *arg)
{
    int *seen = arg;
    seen[0] = clt_is_anomaly_enabled();
    seen[1] = clt_is_anomaly_check_nan_enabled();
    return NULL;
}

/* torch 1.13's anomaly mode is process-wide: a thread started after
 * set_detect_anomaly(True, check_nan=False) sees both flags. */
Test(settings, anomaly_is_global)
{
    clt_set_detect_anomaly(1, 0);
    int seen[2] = {-1, -1};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, other_thread, seen), 0);
    pthread_join(th, NULL);
    cr_assert_eq(seen[0], 1);
    cr_assert_eq(seen[1], 0);
    clt_set_detect_anomaly(0, 1);
}

/* ---- generator state ------------------------------------------------------------------ */

static void draw(clt_generator *gen, clt_device *dev, float *h, int64_t n)
{
    clt_tensor *t = NULL;
    CHECK(clt_rand(gen, dev, CLT_FLOAT32, 1, &n, &t));
    CHECK(clt_tensor_read(t, h, (size_t)n * sizeof *h));
    clt_tensor_free(t);
}

Test(settings, rng_state_replays_draws)
{
    clt_device *dev = get_device("cpu");
    for (int which = 0; which < 2; which++) {
        clt_generator *gen = NULL;
        if (which)
            CHECK(clt_generator_new(1234, &gen));
        else
            clt_manual_seed(NULL, 1234);
        float skip[5], first[40], again[40];
        draw(gen, dev, skip, 5);
        unsigned char state[CLT_RNG_STATE_SIZE + 4];
        memset(state, 0xee, sizeof state);
        CHECK(clt_get_rng_state(gen, state, sizeof state));
        /* the documented layout: seed, then offset, little-endian */
        uint64_t seed = 0, offset = 0;
        for (int i = 7; i >= 0; i--) {
            seed = seed << 8 | state[i];
            offset = offset << 8 | state[8 + i];
        }
        cr_assert_eq(seed, 1234);
        cr_assert_eq(offset, 5);
        cr_assert_eq(state[CLT_RNG_STATE_SIZE], 0xee, "wrote past the state");
        draw(gen, dev, first, 40);
        draw(gen, dev, again, 40); /* moves on */
        cr_assert_neq(memcmp(first, again, sizeof first), 0);
        CHECK(clt_set_rng_state(gen, state, CLT_RNG_STATE_SIZE));
        cr_assert_eq(clt_generator_offset(gen), 5);
        draw(gen, dev, again, 40);
        cr_assert_eq(memcmp(first, again, sizeof first), 0, "restored state drew other numbers");
        clt_generator_free(gen);
    }
    clt_manual_seed(NULL, 67280421310721ULL);
}

Test(settings, rng_state_errors)
{
    unsigned char state[CLT_RNG_STATE_SIZE] = {0};
    cr_assert_eq(clt_get_rng_state(NULL, state, CLT_RNG_STATE_SIZE - 1), CLT_ERR_BUFFER_TOO_SMALL);
    cr_assert_eq(clt_get_rng_state(NULL, NULL, CLT_RNG_STATE_SIZE), CLT_ERR_NULL_ARGUMENT);
    clt_manual_seed(NULL, 77);
    cr_assert_eq(clt_set_rng_state(NULL, state, CLT_RNG_STATE_SIZE + 1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "16 bytes") != NULL, "%s", clt_last_error());
    cr_assert_eq(clt_initial_seed(), 77, "a refused state changed the generator");
    cr_assert_eq(clt_set_rng_state(NULL, NULL, CLT_RNG_STATE_SIZE), CLT_ERR_NULL_ARGUMENT);
    clt_manual_seed(NULL, 67280421310721ULL);
}

Test(settings, seed_and_initial_seed)
{
    cr_assert_eq(clt_initial_seed(), 67280421310721ULL, "torch's default seed");
    clt_manual_seed(NULL, 42);
    cr_assert_eq(clt_initial_seed(), 42);
    clt_generator_set_offset(NULL, 9);
    uint64_t s1 = clt_seed();
    cr_assert_eq(clt_initial_seed(), s1);
    cr_assert_eq(clt_generator_offset(NULL), 0);
    uint64_t s2 = clt_seed();
    cr_assert_neq(s1, s2, "two non-deterministic seeds agree");
    clt_manual_seed(NULL, 67280421310721ULL);
}

/* ---- deterministic algorithms -------------------------------------------------------- */

Test(settings, deterministic_switch_refuses_nothing)
{
    clt_device *dev = get_device("cpu");
    cr_assert_eq(clt_are_deterministic_algorithms_enabled(), 0);
    clt_use_deterministic_algorithms(1, 1);
    cr_assert_eq(clt_are_deterministic_algorithms_enabled(), 1);
    cr_assert_eq(clt_is_deterministic_algorithms_warn_only_enabled(), 1);
    clt_use_deterministic_algorithms(1, 0);
    cr_assert_eq(clt_is_deterministic_algorithms_warn_only_enabled(), 0);

    /* torch refuses index_add and scatter_add on CUDA in this mode; here
     * they run, and give the same bits twice, with the sum of the values
     * sent to each slot (many collisions: 4096 values into 3 slots) */
    enum { N = 4096 };
    float *src = malloc(N * sizeof *src);
    int64_t *idx = malloc(N * sizeof *idx);
    cr_assert(src && idx);
    double want[3] = {0, 0, 0};
    for (int i = 0; i < N; i++) {
        src[i] = (float)((i * 7919) % 1000) / 7.0f;
        idx[i] = (i * 31) % 3;
        want[idx[i]] += src[i];
    }
    const int64_t n = N, three = 3;
    clt_tensor *s = f32(dev, 1, &n, src), *ix = NULL, *z = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &n, idx, &ix));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, &three, &z));
    float r[2][3], q[2][3];
    for (int k = 0; k < 2; k++) {
        clt_tensor *o = NULL, *o2 = NULL;
        CHECK(clt_scatter_add(z, 0, ix, s, &o));
        CHECK(clt_index_add(z, 0, ix, s, 1.0, &o2));
        CHECK(clt_tensor_read(o, r[k], sizeof r[k]));
        CHECK(clt_tensor_read(o2, q[k], sizeof q[k]));
        clt_tensor_free(o);
        clt_tensor_free(o2);
    }
    cr_assert_eq(memcmp(r[0], r[1], sizeof r[0]), 0);
    cr_assert_eq(memcmp(q[0], q[1], sizeof q[0]), 0);
    for (int j = 0; j < 3; j++) {
        cr_assert(fabs(r[0][j] - want[j]) <= 1e-5 * want[j], "%g vs %g", r[0][j], want[j]);
        cr_assert(fabs(q[0][j] - want[j]) <= 1e-5 * want[j], "%g vs %g", q[0][j], want[j]);
    }
    clt_use_deterministic_algorithms(0, 0);
    cr_assert_eq(clt_are_deterministic_algorithms_enabled(), 0);
    clt_tensor_free(z);
    clt_tensor_free(ix);
    clt_tensor_free(s);
    free(src);
    free(idx);
}

/* ---- default dtype ----------------------------------------------------------------------- */

Test(settings, default_dtype)
{
    cr_assert_eq(clt_get_default_dtype(), CLT_FLOAT32);
    CHECK(clt_set_default_dtype(CLT_FLOAT64));
    cr_assert_eq(clt_get_default_dtype(), CLT_FLOAT64);
    cr_assert_eq(clt_set_default_dtype(CLT_INT32), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "only floating-point types") != NULL, "%s",
              clt_last_error());
    cr_assert_eq(clt_set_default_dtype(CLT_BOOL), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_set_default_dtype(CLT_DTYPE_COUNT), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_set_default_dtype((clt_dtype)-1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_get_default_dtype(), CLT_FLOAT64, "a refused dtype replaced the default");
    CHECK(clt_set_default_dtype(CLT_FLOAT16));
    CHECK(clt_set_default_dtype(CLT_FLOAT32));
}

/* ---- str(tensor) ------------------------------------------------------------------------ */

static void expect_repr(const clt_tensor *t, const char *want)
{
    char *s = NULL;
    CHECK(clt_tensor_repr(t, &s));
    cr_assert_str_eq(s, want);
    clt_free(s);
}

/* The expected strings are what torch 1.13 printed for the same tensors. */
Test(settings, repr_as_torch)
{
    clt_device *dev = get_device("cpu");
    clt_reset_printoptions();
    const int64_t two = 2, three = 3, s34[2] = {3, 4}, s2x[2] = {2, 1000}, s20[2] = {2, 0};
    clt_tensor *t = f32(dev, 1, &two, (const float[]){1, 2.5f});
    expect_repr(t, "tensor([1.0000, 2.5000])");
    CHECK(clt_set_printoptions(2, 1000, 3, 80, 1));
    expect_repr(t, "tensor([1.00e+00, 2.50e+00])");
    clt_reset_printoptions();
    clt_tensor_free(t);

    int32_t iv[12];
    for (int i = 0; i < 12; i++)
        iv[i] = i;
    CHECK(clt_tensor_from_host(dev, CLT_INT32, 2, s34, iv, &t));
    expect_repr(t, "tensor([[ 0,  1,  2,  3],\n        [ 4,  5,  6,  7],\n"
                   "        [ 8,  9, 10, 11]], dtype=torch.int32)");
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_FLOAT32, 0, 2000, 1, &t));
    clt_tensor *m = NULL;
    CHECK(clt_reshape(t, 2, s2x, &m));
    expect_repr(m, "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n"
                   "         9.9900e+02],\n"
                   "        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
                   "         1.9990e+03]])");
    clt_tensor_free(m);
    clt_tensor_free(t);

    const double dv[3] = {1e-5, 1.0, NAN};
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &three, dv, &t));
    expect_repr(t, "tensor([1.0000e-05, 1.0000e+00,        nan], dtype=torch.float64)");
    /* with float64 the default, its suffix goes */
    CHECK(clt_set_default_dtype(CLT_FLOAT64));
    expect_repr(t, "tensor([1.0000e-05, 1.0000e+00,        nan])");
    CHECK(clt_set_default_dtype(CLT_FLOAT32));
    clt_tensor_free(t);

    t = f32(dev, 1, &three, (const float[]){1, 2, INFINITY});
    expect_repr(t, "tensor([1., 2., inf])");
    clt_tensor_free(t);

    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, s20, &t));
    expect_repr(t, "tensor([], size=(2, 0))");
    clt_tensor_free(t);

    t = f32(dev, 0, NULL, (const float[]){3.5f});
    expect_repr(t, "tensor(3.5000)");
    clt_tensor_free(t);

    CHECK(clt_tensor_from_host(dev, CLT_BOOL, 1, &two, (const uint8_t[]){1, 0}, &t));
    expect_repr(t, "tensor([ True, False])");
    clt_tensor_free(t);

    /* autograd's suffixes */
    t = f32(dev, 1, &two, (const float[]){1, 2});
    CHECK(clt_set_requires_grad(t, 1));
    expect_repr(t, "tensor([1., 2.], requires_grad=True)");
    CHECK(clt_mul(t, t, &m));
    expect_repr(m, "tensor([1., 4.], grad_fn=<MulBackward0>)");
    clt_tensor_free(m);
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_FLOAT32, 0, 45, 1.5, &t));
    expect_repr(t, "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
                   "        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n"
                   "        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n"
                   "        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000])");
    clt_tensor_free(t);
}

Test(settings, printoptions_checked)
{
    clt_printoptions o;
    clt_reset_printoptions();
    CHECK(clt_get_printoptions(&o));
    cr_assert(o.precision == 4 && o.threshold == 1000 && o.edgeitems == 3 && o.linewidth == 80 &&
              o.sci_mode == CLT_SCI_MODE_AUTO);
    cr_assert_eq(clt_set_printoptions(-1, 1000, 3, 80, -1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_set_printoptions(4, -1, 3, 80, -1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_set_printoptions(4, 1000, 0, 80, -1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_set_printoptions(4, 1000, 3, 0, -1), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_set_printoptions(4, 1000, 3, 80, 2), CLT_ERR_INVALID_ARGUMENT);
    CHECK(clt_get_printoptions(&o));
    cr_assert_eq(o.precision, 4, "a refused option changed the options");
    CHECK(clt_set_printoptions(6, 10, 1, 40, 0));
    CHECK(clt_get_printoptions(&o));
    cr_assert(o.precision == 6 && o.threshold == 10 && o.edgeitems == 1 && o.linewidth == 40 &&
              o.sci_mode == 0);
    clt_reset_printoptions();
    cr_assert_eq(clt_get_printoptions(NULL), CLT_ERR_NULL_ARGUMENT);
}

/* ---- dtype introspection ----------------------------------------------------------------- */

Test(settings, finfo_iinfo)
{
    clt_float_info f;
    CHECK(clt_finfo(CLT_FLOAT32, &f));
    cr_assert(f.bits == 32 && f.eps == FLT_EPSILON && f.max == FLT_MAX && f.min == -FLT_MAX &&
              f.tiny == FLT_MIN && f.smallest_normal == FLT_MIN);
    cr_assert_float_eq(f.resolution, 1e-6, 1e-20);
    CHECK(clt_finfo(CLT_FLOAT64, &f));
    cr_assert(f.bits == 64 && f.eps == DBL_EPSILON && f.max == DBL_MAX && f.tiny == DBL_MIN);
    cr_assert_float_eq(f.resolution, 1e-15, 1e-28);
    CHECK(clt_finfo(CLT_FLOAT16, &f));
    cr_assert(f.bits == 16 && f.eps == 1.0 / 1024 && f.max == 65504 && f.tiny == 1.0 / 16384);
    cr_assert_float_eq(f.resolution, 1e-3, 1e-15);
    cr_assert_eq(clt_finfo(CLT_INT32, &f), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(f.bits == 0 && f.max == 0);
    cr_assert_eq(clt_finfo(CLT_FLOAT32, NULL), CLT_ERR_NULL_ARGUMENT);

    clt_int_info i;
    CHECK(clt_iinfo(CLT_INT64, &i));
    cr_assert(i.bits == 64 && i.max == INT64_MAX && i.min == INT64_MIN);
    CHECK(clt_iinfo(CLT_INT32, &i));
    cr_assert(i.bits == 32 && i.max == INT32_MAX && i.min == INT32_MIN);
    CHECK(clt_iinfo(CLT_UINT8, &i));
    cr_assert(i.bits == 8 && i.max == 255 && i.min == 0);
    cr_assert_eq(clt_iinfo(CLT_BOOL, &i), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "torch.bool is not supported by torch.iinfo") != NULL);
    cr_assert_eq(clt_iinfo(CLT_FLOAT32, &i), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_iinfo(CLT_DTYPE_COUNT, &i), CLT_ERR_INVALID_ARGUMENT);
}

Test(settings, can_cast_table)
{
    /* torch.can_cast: rows from, columns to, in enum order float32,
     * float64, float16, int32, int64, uint8, bool */
    static const int want[7][7] = {
        {1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0},
        {1, 1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 0},
        {1, 1, 1, 1, 1, 1, 1},
    };
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++)
            cr_assert_eq(clt_can_cast((clt_dtype)a, (clt_dtype)b), want[a][b], "%s -> %s",
                         clt_dtype_name(a), clt_dtype_name(b));
    cr_assert_eq(clt_can_cast(CLT_DTYPE_COUNT, CLT_FLOAT32), 0);
}

Test(settings, predicates)
{
    clt_device *dev = get_device("cpu");
    const int64_t one = 1, two = 2, s12[2] = {1, 2};
    clt_tensor *a = f32(dev, 1, &two, (const float[]){1, 2}), *b = NULL, *u = NULL, *z = NULL;
    CHECK(clt_zeros(dev, CLT_INT32, 2, s12, &b));
    CHECK(clt_zeros(dev, CLT_UINT8, 1, &two, &u));
    cr_assert_eq(clt_is_floating_point(a), 1);
    cr_assert_eq(clt_is_floating_point(b), 0);
    cr_assert_eq(clt_is_signed(b), 1);
    cr_assert_eq(clt_is_signed(u), 0);
    cr_assert_eq(clt_is_signed(NULL), 0);
    cr_assert_eq(clt_is_same_size(a, u), 1);
    cr_assert_eq(clt_is_same_size(a, b), 0);

    int nz = -1;
    cr_assert_eq(clt_is_nonzero(a, &nz), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "more than one value is ambiguous") != NULL);
    cr_assert_eq(nz, 0);
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (const int64_t[]){0}, &z));
    cr_assert_eq(clt_is_nonzero(z, &nz), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "with no values is ambiguous") != NULL);
    clt_tensor_free(z);
    z = f32(dev, 1, &one, (const float[]){NAN});
    CHECK(clt_is_nonzero(z, &nz));
    cr_assert_eq(nz, 1);
    clt_tensor_free(z);
    z = f32(dev, 0, NULL, (const float[]){-0.0f});
    CHECK(clt_is_nonzero(z, &nz));
    cr_assert_eq(nz, 0);
    clt_tensor_free(z);

    clt_dtype d;
    CHECK(clt_result_type_scalar(b, 2.5, &d));
    cr_assert_eq(d, CLT_FLOAT32);
    CHECK(clt_result_type_scalar(b, 2, &d));
    cr_assert_eq(d, CLT_INT32);
    CHECK(clt_result_type_scalar(u, 1, &d)); /* bool-free: uint8 stays */
    cr_assert_eq(d, CLT_UINT8);
    clt_tensor_free(u);
    CHECK(clt_zeros(dev, CLT_BOOL, 1, &two, &u));
    CHECK(clt_result_type_scalar(u, 1, &d));
    cr_assert_eq(d, CLT_INT64);
    CHECK(clt_result_type_scalar(a, 7, &d));
    cr_assert_eq(d, CLT_FLOAT32);
    cr_assert_eq(clt_result_type_scalar(NULL, 7, &d), CLT_ERR_NULL_ARGUMENT);
    clt_tensor_free(u);
    clt_tensor_free(b);
    clt_tensor_free(a);
}
