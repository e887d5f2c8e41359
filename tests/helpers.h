/* helpers.h: what the Criterion suites share: getting a device (or skipping
 * the test when OpenCL has none), reading tensors back, and comparisons
 * against host references computed in the test. */
#ifndef CLT_TEST_HELPERS_H
#define CLT_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cltensor.h"

#define CHECK(call)                                                                \
    do {                                                                           \
        clt_status st_ = (call);                                                   \
        cr_assert_eq(st_, CLT_OK, "%s failed: %s: %s", #call, clt_status_name(st_), \
                     clt_last_error());                                            \
    } while (0)

/* The device for `kind`, or skip the test when OpenCL has no platform. */
static inline clt_device *get_device(const char *kind)
{
    clt_device *dev = NULL;
    clt_status st = clt_device_get(kind, &dev);
    if (st == CLT_ERR_NO_PLATFORM)
        cr_skip_test("no OpenCL platform: %s", clt_last_error());
    cr_assert_eq(st, CLT_OK, "clt_device_get(%s): %s", kind, clt_last_error());
    return dev;
}

/* A schedule test's parameter: a float32 leaf of 3 zeros that requires
 * grad; when opt is not NULL, *opt an SGD optimizer over it at rate lr. */
static inline clt_tensor *schedule_param(clt_device *dev, double lr, clt_optimizer **opt)
{
    clt_tensor *p = NULL;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, (int64_t[]){3}, &p));
    CHECK(clt_set_requires_grad(p, 1));
    if (opt) {
        clt_sgd_opts so = CLT_SGD_DEFAULTS;
        so.lr = lr;
        CHECK(clt_sgd(&p, 1, &so, opt));
    }
    return p;
}

/* A custom module's user data in the tests (clt_module_custom's user,
 * free_user and clone_user): *frees counts the frees; mode picks a
 * test's behaviour. */
typedef struct counted_user {
    int *frees;
    int mode;
} counted_user;

static inline void counted_user_free(void *p)
{
    counted_user *u = p;
    (*u->frees)++;
    free(u);
}

static inline void *counted_user_clone(const void *p)
{
    counted_user *u = malloc(sizeof *u);
    if (u)
        *u = *(const counted_user *)p;
    return u;
}

/* A second device, or skip when there is only one (POCL_DEVICES="pthread
 * basic" gives two). */
static inline clt_device *second_device(clt_device *first)
{
    size_t n = 0;
    if (clt_device_count(&n) != CLT_OK || n < 2)
        cr_skip_test("only one OpenCL device; set POCL_DEVICES=\"pthread basic\"");
    for (size_t i = 0; i < n; i++) {
        clt_device *d = NULL;
        CHECK(clt_device_at(i, &d));
        if (d != first)
            return d;
    }
    return NULL;
}

/* Reads a float32 tensor into a new malloc'd array. */
static inline float *read_f32(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    float *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    CHECK(clt_tensor_read(t, h, n * sizeof *h));
    return h;
}

static inline void fill_random(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) % 20001) / 1000.0f - 10.0f;
    }
}

/* The gradient of a float32 tensor (clt_grad), read into a new malloc'd
 * array. */
static inline float *read_grad_f32(const clt_tensor *t)
{
    clt_tensor *g = NULL;
    CHECK(clt_grad(t, &g));
    cr_assert_not_null(g, "no gradient");
    float *h = read_f32(g);
    clt_tensor_free(g);
    return h;
}

static inline clt_memory_stats mem_stats(clt_device *dev)
{
    clt_memory_stats s;
    CHECK(clt_memory_stats_get(dev, &s));
    return s;
}

/* A suite's .init for tests of the caching allocator and its limits: the
 * allocator reads CLTENSOR_POOL and CLTENSOR_MEMORY_FRACTION once per
 * process, at its first use, and each test runs in a process of its own. */
static inline void pool_defaults(void)
{
    unsetenv("CLTENSOR_POOL");
    unsetenv("CLTENSOR_MEMORY_FRACTION");
}

/* A float32 tensor of the given shape holding 0, 1, 2, ... */
static inline clt_tensor *iota(clt_device *dev, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    float *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = (float)i;
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, ndim, shape, h, &t));
    free(h);
    return t;
}

/* Kernel launches so far in this process. */
static inline uint64_t launches(void)
{
    clt_stats s;
    clt_stats_get(&s);
    return s.kernel_launches;
}

/* A tensor of dtype dt holding v, converted from float64 on the device
 * (values that dt holds exactly stay exact). */
static inline clt_tensor *tensor_of(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                                    const double *v)
{
    clt_tensor *d = NULL, *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, nd, shape, v, &d));
    CHECK(clt_to_dtype(d, dt, &t));
    clt_tensor_free(d);
    return t;
}

/* t's values as doubles (exact for every dtype but int64 beyond 2^53); a
 * new array to free. */
static inline double *read_as_f64(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *h = malloc((n ? n : 1) * sizeof *h);
    clt_tensor *d = NULL;
    cr_assert_not_null(h);
    CHECK(clt_to_dtype(t, CLT_FLOAT64, &d));
    CHECK(clt_tensor_read(d, h, n * sizeof *h));
    clt_tensor_free(d);
    return h;
}

static inline void assert_shape(const clt_tensor *t, int nd, const int64_t *shape)
{
    cr_assert_eq(clt_tensor_ndim(t), nd, "ndim %d, want %d", clt_tensor_ndim(t), nd);
    for (int d = 0; d < nd; d++)
        cr_assert_eq(clt_tensor_shape(t)[d], shape[d], "dim %d: %lld, want %lld", d,
                     (long long)clt_tensor_shape(t)[d], (long long)shape[d]);
}

/* A status and, unless needle is NULL, a message that contains needle. */
static inline void assert_error(clt_status st, clt_status want, const char *needle)
{
    cr_assert_eq(st, want, "status %s, want %s (%s)", clt_status_name(st), clt_status_name(want),
                 clt_last_error());
    if (needle)
        cr_assert(strstr(clt_last_error(), needle) != NULL, "message '%s' lacks '%s'",
                  clt_last_error(), needle);
}

/* The message starts with "fn: " and names no other public function: a
 * failure inside a call names the call the user made, not a helper it ran
 * (another op's implementation, a copy, a product, an upload). */
static inline void names_only(const char *fn)
{
    const char *m = clt_last_error();
    size_t n = strlen(fn);
    cr_assert(strncmp(m, fn, n) == 0 && m[n] == ':', "the message does not start with %s: %s",
              fn, m);
    for (const char *p = strstr(m, "clt_"); p; p = strstr(p + 1, "clt_")) {
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
        cr_assert(len == n && strncmp(p, fn, n) == 0, "%s: the message names %.*s: %s", fn,
                  (int)len, p, m);
    }
}

/* Host-side shapes: the element count of a shape, a flat row-major index
 * to coordinates (0 for a dim of size 0) and back. */
static inline int64_t host_numel(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    return n;
}

static inline void host_unravel(int64_t i, int nd, const int64_t *shape, int64_t *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

static inline int64_t host_ravel(const int64_t *c, int nd, const int64_t *shape)
{
    int64_t i = 0;
    for (int d = 0; d < nd; d++)
        i = i * shape[d] + c[d];
    return i;
}


/* Equal within a relative and absolute tolerance; NaN equals NaN. */
static inline int close_enough(double got, double want, double rtol, double atol)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

#define ASSERT_ALLCLOSE_F32(got, want, n, rtol, atol)                              \
    do {                                                                           \
        for (size_t i_ = 0; i_ < (size_t)(n); i_++)                                \
            cr_assert(close_enough((got)[i_], (want)[i_], rtol, atol),             \
                      "element %zu: got %.9g, want %.9g", i_, (double)(got)[i_],   \
                      (double)(want)[i_]);                                         \
    } while (0)

/* Shared by the layer suites (test_conv_more, test_nn_shape): n values
 * spread over [-1, 1] from seed (a new array to free); a tensor (any
 * dtype) against doubles within tolerances; a parameter uniform within
 * +-bound and spread over most of it; and a module's state saved and
 * loaded into a fresh one of the same make, which then holds the same
 * parameters. */
static inline double *spread_doubles(size_t n, unsigned seed)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (double)((seed >> 8) % 20001) / 10000.0 - 1.0;
    }
    return v;
}

static inline void assert_tensor_close(const clt_tensor *t, const double *want, size_t n,
                                       double rtol, double atol, const char *what)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "%s: %lld elements, want %zu", what,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_enough(got[i], want[i], rtol, atol),
                  "%s: element %zu: got %.12g, want %.12g", what, i, got[i], want[i]);
    free(got);
}

static inline void assert_uniform_within(const clt_tensor *t, double bound, const char *what)
{
    size_t n = (size_t)clt_tensor_numel(t);
    double *v = read_as_f64(t), lo = 1, hi = -1;
    for (size_t i = 0; i < n; i++) {
        cr_assert(fabs(v[i]) <= bound, "%s %zu = %g beyond %g", what, i, v[i], bound);
        lo = fmin(lo, v[i]);
        hi = fmax(hi, v[i]);
    }
    cr_assert(n < 8 || hi - lo > bound, "%s not spread: %g..%g (bound %g)", what, lo, hi, bound);
    free(v);
}

static inline void assert_state_roundtrip(clt_module *m, clt_module *fresh)
{
    char path[] = "/tmp/cltensor-state-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    CHECK(clt_module_save(m, path));
    CHECK(clt_module_load(fresh, path));
    unlink(path);
    clt_named_tensor *a, *b;
    size_t na, nb;
    CHECK(clt_module_named_parameters(m, &a, &na));
    CHECK(clt_module_named_parameters(fresh, &b, &nb));
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_assert_str_eq(a[i].name, b[i].name);
        size_t n = (size_t)clt_tensor_numel(a[i].tensor);
        double *x = read_as_f64(a[i].tensor), *y = read_as_f64(b[i].tensor);
        cr_assert(memcmp(x, y, n * sizeof *x) == 0, "%s differs after load", a[i].name);
        free(x);
        free(y);
    }
    clt_free(a);
    clt_free(b);
}

#endif
