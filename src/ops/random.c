/* random.c: Philox generators and the launch of cl/random.cl for rand, randn
 * and randint. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct clt_generator {
    uint64_t seed;
    uint64_t offset; /* atomic */
    uint64_t id;     /* 0 for the default one */
    clt_generator *prev, *next; /* the live generators (registry_lock) */
};

static clt_generator default_generator = {67280421310721ULL, 0, 0, NULL, NULL};

/* Every live generator, for clt__rng_state_get (clt_checkpoint). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static clt_generator *registry = &default_generator;
static uint64_t last_id;

static clt_generator *resolve(const clt_generator *gen)
{
    return gen ? (clt_generator *)gen : &default_generator;
}

clt_status clt_generator_new(uint64_t seed, clt_generator **out)
{
    CLT__REQUIRE_ARG(out, "clt_generator_new");
    *out = NULL;
    clt_generator *g = clt__calloc(1, sizeof *g);
    if (g == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_generator_new: out of host memory");
    g->seed = seed;
    pthread_mutex_lock(&registry_lock);
    g->id = ++last_id;
    g->next = registry;
    registry->prev = g;
    registry = g;
    pthread_mutex_unlock(&registry_lock);
    *out = g;
    return clt__ok();
}

void clt_generator_free(clt_generator *gen)
{
    if (gen == NULL || gen == &default_generator)
        return;
    pthread_mutex_lock(&registry_lock);
    if (gen->prev)
        gen->prev->next = gen->next;
    else
        registry = gen->next;
    if (gen->next)
        gen->next->prev = gen->prev;
    pthread_mutex_unlock(&registry_lock);
    free(gen);
}

clt_status clt__rng_state_get(clt__rng_state **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&registry_lock);
    size_t count = 0;
    for (clt_generator *g = registry; g; g = g->next)
        count++;
    clt__rng_state *v = clt__calloc(count, sizeof *v);
    if (v != NULL) {
        size_t k = 0;
        for (clt_generator *g = registry; g; g = g->next, k++)
            v[k] = (clt__rng_state){g->id, __atomic_load_n(&g->seed, __ATOMIC_RELAXED),
                                    __atomic_load_n(&g->offset, __ATOMIC_RELAXED)};
    }
    pthread_mutex_unlock(&registry_lock);
    if (v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    *out = v;
    *n = count;
    return CLT_OK;
}

void clt__rng_state_set(const clt__rng_state *v, size_t n)
{
    pthread_mutex_lock(&registry_lock);
    for (clt_generator *g = registry; g; g = g->next) {
        for (size_t k = 0; k < n; k++) {
            if (v[k].id == g->id) {
                __atomic_store_n(&g->seed, v[k].seed, __ATOMIC_RELAXED);
                __atomic_store_n(&g->offset, v[k].offset, __ATOMIC_RELAXED);
                break;
            }
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

void clt_manual_seed(clt_generator *gen, uint64_t seed)
{
    clt_generator *g = resolve(gen);
    __atomic_store_n(&g->seed, seed, __ATOMIC_RELAXED);
    __atomic_store_n(&g->offset, 0, __ATOMIC_RELAXED);
}

uint64_t clt_generator_seed(const clt_generator *gen)
{
    return __atomic_load_n(&resolve(gen)->seed, __ATOMIC_RELAXED);
}

uint64_t clt_generator_offset(const clt_generator *gen)
{
    return __atomic_load_n(&resolve(gen)->offset, __ATOMIC_RELAXED);
}

void clt_generator_set_offset(clt_generator *gen, uint64_t offset)
{
    __atomic_store_n(&resolve(gen)->offset, offset, __ATOMIC_RELAXED);
}

/* ---- state as bytes (settings.h) ------------------------------------------ */

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

clt_status clt_get_rng_state(const clt_generator *gen, void *state, size_t size)
{
    CLT__REQUIRE_ARG(state, "clt_get_rng_state");
    if (size < CLT_RNG_STATE_SIZE)
        return clt__error(CLT_ERR_BUFFER_TOO_SMALL,
                          "clt_get_rng_state: the state takes %d bytes, the buffer holds %zu",
                          CLT_RNG_STATE_SIZE, size);
    const clt_generator *g = resolve(gen);
    put_le64(state, __atomic_load_n(&g->seed, __ATOMIC_RELAXED));
    put_le64((unsigned char *)state + 8, __atomic_load_n(&g->offset, __ATOMIC_RELAXED));
    return clt__ok();
}

clt_status clt_set_rng_state(clt_generator *gen, const void *state, size_t size)
{
    CLT__REQUIRE_ARG(state, "clt_set_rng_state");
    if (size != CLT_RNG_STATE_SIZE)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "clt_set_rng_state: expected a state of %d bytes (the seed and the "
                          "offset, little-endian), got %zu",
                          CLT_RNG_STATE_SIZE, size);
    clt_generator *g = resolve(gen);
    __atomic_store_n(&g->seed, get_le64(state), __ATOMIC_RELAXED);
    __atomic_store_n(&g->offset, get_le64((const unsigned char *)state + 8), __ATOMIC_RELAXED);
    return clt__ok();
}

uint64_t clt_initial_seed(void)
{
    return clt_generator_seed(NULL);
}

uint64_t clt_seed(void)
{
    static uint64_t counter; /* atomic: two calls in one clock tick differ */
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, &s, sizeof s) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof s) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        s ^= (uint64_t)getpid() << 32;
        s += 0x9e3779b97f4a7c15ULL * (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
        /* splitmix64's finaliser spreads the clock's low bits over all 64 */
        s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ULL;
        s = (s ^ (s >> 27)) * 0x94d049bb133111ebULL;
        s ^= s >> 31;
    }
    clt_manual_seed(NULL, s);
    return s;
}

typedef enum kind { UNIFORM, NORMAL, INTEGER } kind;

/* Whether v is a value of dtype (exactly, for floats). */
static bool fits(clt_dtype dt, int64_t v)
{
    switch (dt) {
    case CLT_BOOL: return v >= 0 && v <= 1;
    case CLT_UINT8: return v >= 0 && v <= 255;
    case CLT_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case CLT_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case CLT_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case CLT_FLOAT16: return v >= -2048 && v <= 2048;
    case CLT_BFLOAT16: return v >= -256 && v <= 256;
    case CLT_FLOAT32: return v >= -(INT64_C(1) << 24) && v <= (INT64_C(1) << 24);
    case CLT_FLOAT64: return v >= -(INT64_C(1) << 53) && v <= (INT64_C(1) << 53);
    default: return true;
    }
}

static clt_status check_args(kind k, clt_device *dev, int64_t low, int64_t high, clt_dtype dtype,
                             int ndim, const int64_t *shape, const char *fn)
{
    CLT__REQUIRE_ARG(dev, fn);
    clt_status st = clt__check_shape(ndim, shape, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_valid(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid dtype value %d", fn, (int)dtype);
    if (k != INTEGER && !clt__dtype_is_float(dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dtype %s is not a floating-point dtype; use float32, float64, "
                          "float16 or bfloat16 (or clt_randint for integers)",
                          fn, clt_dtype_name(dtype));
    if (k == INTEGER) {
        if (low >= high)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: random_ expects 'from' to be less than 'to', but got "
                              "from=%lld >= to=%lld",
                              fn, (long long)low, (long long)high);
        if (!fits(dtype, low))
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: from=%lld is out of bounds for %s",
                              fn, (long long)low, clt_dtype_name(dtype));
        if (!fits(dtype, high - 1))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: to - 1 = %lld is out of bounds for %s", fn,
                              (long long)(high - 1), clt_dtype_name(dtype));
    }
    return clt__check_dtype(dev, dtype, fn);
}

static const char *random_options(clt_dtype dtype)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    return clt__opts_cached(&slots[dtype], "T", dtype, NULL, dtype,
                            dtype == CLT_FLOAT64   ? " -DRAND_FP64"
                            : dtype == CLT_FLOAT16  ? " -DRAND_HALF"
                            : dtype == CLT_BFLOAT16 ? " -DRAND_BF16"
                                                    : "");
}

/* Gives n numbers back to gen after they were drawn for a call that then
 * failed, so that the failure does not shift the sequence (exact only
 * without concurrent callers). */
static void give_back(clt_generator *gen, int64_t n)
{
    __atomic_fetch_sub(&resolve(gen)->offset, (uint64_t)n, __ATOMIC_RELAXED);
}

static clt_status generate(kind k, clt_generator *gen, clt_device *dev, int64_t low,
                           int64_t high, clt_dtype dtype, int ndim, const int64_t *shape,
                           clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_args(k, dev, low, high, dtype, ndim, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *t = NULL;
    const char *opts = NULL;
    CLT__TRY(clt__result_new(fn, dev, dtype, ndim, shape, &t));
    if (t->numel > 0) {
        opts = random_options(dtype);
        if (opts == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        clt_generator *g = resolve(gen);
        uint64_t seed = __atomic_load_n(&g->seed, __ATOMIC_RELAXED);
        cl_ulong offset =
            __atomic_fetch_add(&g->offset, (uint64_t)t->numel, __ATOMIC_RELAXED);
        cl_uint key0 = (cl_uint)seed, key1 = (cl_uint)(seed >> 32);
        cl_mem mem = clt__mem(t);
        cl_ulong n = (cl_ulong)t->numel;
        cl_long lo = low;
        cl_ulong range = (cl_ulong)((uint64_t)high - (uint64_t)low);
        size_t gws = (size_t)n;
        clt__arg args[] = {CLT__ARG(mem),    CLT__ARG(n),  CLT__ARG(key0), CLT__ARG(key1),
                           CLT__ARG(offset), CLT__ARG(lo), CLT__ARG(range)};
        static const char *const names[] = {"rand", "randn", "randint"};
        st = clt__error_in(clt__launch(dev, "random", opts, names[k], 1, &gws, NULL,
                                       k == INTEGER ? 7 : 5, args),
                           fn);
        if (st != CLT_OK) {
            give_back(gen, t->numel);
            goto done;
        }
    }
    *out = t;
    t = NULL;
done:
    clt_tensor_free(t);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__rand_in(const char *fn, clt_generator *gen, clt_device *dev, clt_dtype dtype,
                        int ndim, const int64_t *shape, clt_tensor **out)
{
    return generate(UNIFORM, gen, dev, 0, 1, dtype, ndim, shape, out, fn);
}

clt_status clt_rand(clt_generator *gen, clt_device *dev, clt_dtype dtype, int ndim,
                    const int64_t *shape, clt_tensor **out)
{
    return clt__rand_in("clt_rand", gen, dev, dtype, ndim, shape, out);
}

clt_status clt__randn_in(const char *fn, clt_generator *gen, clt_device *dev, clt_dtype dtype,
                         int ndim, const int64_t *shape, clt_tensor **out)
{
    return generate(NORMAL, gen, dev, 0, 1, dtype, ndim, shape, out, fn);
}

clt_status clt_randn(clt_generator *gen, clt_device *dev, clt_dtype dtype, int ndim,
                     const int64_t *shape, clt_tensor **out)
{
    return clt__randn_in("clt_randn", gen, dev, dtype, ndim, shape, out);
}

clt_status clt_randint(clt_generator *gen, clt_device *dev, int64_t low, int64_t high,
                       clt_dtype dtype, int ndim, const int64_t *shape, clt_tensor **out)
{
    return generate(INTEGER, gen, dev, low, high, dtype, ndim, shape, out, "clt_randint");
}

clt_status clt_rand_like(clt_generator *gen, const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_rand_like");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_rand_like");
    return generate(UNIFORM, gen, t->dev, 0, 1, t->dtype, t->ndim, t->shape, out,
                    "clt_rand_like");
}

clt_status clt_randn_like(clt_generator *gen, const clt_tensor *t, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_randn_like");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_randn_like");
    return generate(NORMAL, gen, t->dev, 0, 1, t->dtype, t->ndim, t->shape, out,
                    "clt_randn_like");
}

/* t = a + b * (rand or randn of t's shape): the same draws as clt_rand or
 * clt_randn (so the same values on every device), scaled by two kernels
 * whose IEEE operations round the same everywhere. */
static clt_status fill_random(kind k, clt_tensor *t, clt_generator *gen, double scale,
                              double shift, const char *fn)
{
    clt_status st = clt__check_dest(t, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL, *m = NULL, *a = NULL;
    CLT__TRY(generate(k, gen, t->dev, 0, 1, t->dtype, t->ndim, t->shape, &r, fn));
    if (t->numel > 0) {
        CLT__TRY(clt__mul_scalar_into(NULL, r, scale, &m, fn));
        CLT__TRY(clt__add_scalar_into(NULL, m, shift, &a, fn));
        CLT__TRY(clt__copy_strided(t, a, fn));
        clt__version_bump(t);
    }
done:
    if (st != CLT_OK && r)
        give_back(gen, r->numel);
    clt_tensor_free(r);
    clt_tensor_free(m);
    clt_tensor_free(a);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt__uniform_(clt_tensor *t, clt_generator *gen, double low, double high)
{
    const char *fn = "clt_uniform_";
    CLT__REQUIRE_ARG(t, fn);
    if (!(low <= high) || !isfinite(high - low))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: uniform_ expects to return a [from, to) range, but found "
                          "from=%g > to=%g (or a range that is not finite)",
                          fn, low, high);
    /* low + (high - low) u is computed in t's dtype: each of low, high and
     * high - low must be one of its finite values, or the values come out
     * inf and NaN (PyTorch: "from is out of bounds for float", "uniform_
     * expects to-from <= std::numeric_limits<Float>::max()"). */
    if (clt__dtype_is_float(t->dtype) &&
        (clt__scalar_check(t->dtype, low, CLT__SCALAR_EXACT, fn) != CLT_OK ||
         clt__scalar_check(t->dtype, high, CLT__SCALAR_EXACT, fn) != CLT_OK ||
         clt__scalar_check(t->dtype, high - low, CLT__SCALAR_EXACT, fn) != CLT_OK))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: uniform_ expects from, to and to-from to be finite %s values, "
                          "but found from=%g, to=%g, to-from=%g",
                          fn, clt_dtype_name(t->dtype), low, high, high - low);
    return fill_random(UNIFORM, t, gen, high - low, low, fn);
}

clt_status clt__normal_(clt_tensor *t, clt_generator *gen, double mean, double std)
{
    const char *fn = "clt_normal_";
    CLT__REQUIRE_ARG(t, fn);
    if (!(std >= 0.0) || !isfinite(std) || !isfinite(mean))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: normal expects std >= 0.0 and finite values, but found "
                          "mean %g, std %g",
                          fn, mean, std);
    return fill_random(NORMAL, t, gen, std, mean, fn);
}

clt_status clt_randperm(clt_generator *gen, clt_device *dev, int64_t n, clt_dtype dtype,
                        clt_tensor **out)
{
    const char *fn = "clt_randperm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (n < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: n must be non-negative, got %lld", fn,
                          (long long)n);
    if (!clt__dtype_valid(dtype) || dtype == CLT_BOOL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: not implemented for dtype %s", fn,
                          clt__dtype_valid(dtype) ? clt_dtype_name(dtype) : "?");
    if (n > 0 && !fits(dtype, n - 1))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: n is too large for result tensor type %s (n = %lld)", fn,
                          clt_dtype_name(dtype), (long long)n);
    clt_status st = clt__check_dtype(dev, dtype, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *keys = NULL, *t = NULL;
    CLT__TRY(clt__result_new(fn, dev, dtype, 1, &n, &t));
    if (n > 0) {
        CLT__TRY(generate(INTEGER, gen, dev, 0, INT64_MAX, CLT_INT64, 1, &n, &keys, fn));
        const char *opts = random_options(dtype);
        if (opts == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        cl_mem mo = clt__mem(t), mk = clt__mem(keys);
        cl_ulong un = (cl_ulong)n;
        size_t gws = (size_t)n;
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mk), CLT__ARG(un)};
        CLT__TRY(clt__error_in(
            clt__launch(dev, "random", opts, "randperm_rank", 1, &gws, NULL, 3, args), fn));
    }
    *out = t;
    t = NULL;
done:
    if (st != CLT_OK && keys)
        give_back(gen, keys->numel);
    clt_tensor_free(keys);
    clt_tensor_free(t);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- the other distributions of torch's Tensor: in place, bernoulli,
 * poisson, multinomial ------------------------------------------------------ */

/* n numbers reserved from gen: the key (its seed) and the offset they start
 * at. */
typedef struct reserved {
    cl_uint key0, key1;
    cl_ulong offset;
} reserved;

static reserved reserve(clt_generator *gen, int64_t n)
{
    clt_generator *g = resolve(gen);
    uint64_t seed = __atomic_load_n(&g->seed, __ATOMIC_RELAXED);
    reserved r = {(cl_uint)seed, (cl_uint)(seed >> 32),
                  __atomic_fetch_add(&g->offset, (uint64_t)n, __ATOMIC_RELAXED)};
    return r;
}

/* Scalars of the kernels' computation type R: float, double for float64. */
typedef struct rpair {
    cl_float f[2];
    cl_double d[2];
} rpair;

static clt__arg r_arg(clt_dtype dtype, rpair *p, int k)
{
    return dtype == CLT_FLOAT64 ? CLT__ARG(p->d[k]) : CLT__ARG(p->f[k]);
}

static clt_status check_sample_args(clt__sampler kind, const clt_tensor *t, double a, double b,
                                    const char *fn)
{
    static const char *const names[] = {"exponential_", "geometric_", "log_normal_", "cauchy_",
                                        "bernoulli_"};
    bool floating = clt__dtype_is_float(t->dtype);
    if (!floating && kind != CLT__SAMPLE_GEOMETRIC && kind != CLT__SAMPLE_BERNOULLI)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: \"%s\" not implemented for %s", fn,
                          names[kind], clt_dtype_name(t->dtype));
    switch (kind) {
    case CLT__SAMPLE_EXPONENTIAL:
        if (!(a >= 0.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: exponential_ expects lambda >= 0.0, but found lambda=%g", fn,
                              a);
        break;
    case CLT__SAMPLE_GEOMETRIC:
        if (!(a > 0.0 && a < 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: geometric_ expects p to be in (0, 1), but got p=%g", fn, a);
        break;
    case CLT__SAMPLE_LOG_NORMAL:
        if (!(b > 0.0) || !isfinite(a) || !isfinite(b))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: log_normal_ expects std > 0.0, but found std=%g (mean %g)",
                              fn, b, a);
        break;
    case CLT__SAMPLE_CAUCHY:
        if (!isfinite(a) || !isfinite(b))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: cauchy_ expects a finite median and sigma, but found "
                              "median=%g, sigma=%g",
                              fn, a, b);
        break;
    case CLT__SAMPLE_BERNOULLI:
        if (!(a >= 0.0 && a <= 1.0))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: bernoulli_ expects p to be in [0, 1], but got p=%g", fn, a);
        break;
    }
    return CLT_OK;
}

clt_status clt__sample_(clt__sampler kind, clt_tensor *t, clt_generator *gen, double a, double b,
                        const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = clt__check_dest(t, fn);
    if (st == CLT_OK)
        st = check_sample_args(kind, t, a, b, fn);
    if (st != CLT_OK || t->numel == 0)
        return st == CLT_OK ? clt__ok() : st;
    /* the parameters as the kernel takes them (torch's formulas) */
    double pa = a, pb = b;
    if (kind == CLT__SAMPLE_EXPONENTIAL)
        pa = 1.0 / a;
    else if (kind == CLT__SAMPLE_GEOMETRIC)
        pa = 1.0 / log1p(-a);
    rpair rp = {{(cl_float)pa, (cl_float)pb}, {pa, pb}};
    clt_tensor *r = NULL;
    bool drawn = false;
    const char *opts = random_options(t->dtype);
    if (opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    CLT__TRY(clt__temp_new(fn, "the samples", t->dev, t->dtype, t->ndim, t->shape, &r));
    reserved rs = reserve(gen, t->numel);
    drawn = true;
    cl_mem mem = clt__mem(r);
    cl_ulong n = (cl_ulong)t->numel;
    cl_int ck = (cl_int)kind;
    size_t gws = (size_t)n;
    if (kind == CLT__SAMPLE_BERNOULLI) {
        clt__arg args[] = {CLT__ARG(mem),       CLT__ARG(n),         CLT__ARG(rs.key0),
                           CLT__ARG(rs.key1),   CLT__ARG(rs.offset), r_arg(t->dtype, &rp, 0)};
        CLT__TRY(clt__error_in(
            clt__launch(t->dev, "random", opts, "bernoulli_scalar", 1, &gws, NULL, 6, args), fn));
    } else {
        clt__arg args[] = {CLT__ARG(mem),     CLT__ARG(n),         CLT__ARG(rs.key0),
                           CLT__ARG(rs.key1), CLT__ARG(rs.offset), CLT__ARG(ck),
                           r_arg(t->dtype, &rp, 0), r_arg(t->dtype, &rp, 1)};
        CLT__TRY(clt__error_in(
            clt__launch(t->dev, "random", opts, "distribution", 1, &gws, NULL, 8, args), fn));
    }
    CLT__TRY(clt__copy_strided(t, r, fn));
    clt__version_bump(t);
done:
    if (st != CLT_OK && drawn)
        give_back(gen, t->numel);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* Checks a floating tensor of parameters on the host (torch's CPU checks;
 * it reads them back, so it waits): every value v must pass ok(v). */
static clt_status check_params(const clt_tensor *p, bool (*ok)(double), const char *msg,
                               const char *fn)
{
    double *v = NULL;
    clt_status st = clt__read_doubles(fn, p, &v);
    if (st != CLT_OK)
        return st;
    for (int64_t i = 0; i < p->numel && st == CLT_OK; i++)
        if (!ok(v[i]))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s", fn, msg);
    free(v);
    return st;
}

static bool is_probability(double v)
{
    return v >= 0.0 && v <= 1.0;
}

static bool is_rate(double v)
{
    return v >= 0.0;
}

/* p's values contiguous from its buffer's start, where the kernels read
 * their operand: p itself (a new handle) or a copy. */
static clt_status operand(const char *fn, const clt_tensor *p, clt_tensor **out)
{
    if (p->offset == 0)
        return clt__contiguous_as(fn, p, p->dtype, out);
    return clt__copy_as(fn, p, p->dtype, out);
}

static clt_status draw_from(const char *kernel, clt_generator *gen, const clt_tensor *p,
                            clt_tensor **out, const char *fn);

/* bernoulli(p) and poisson(rates): one new tensor of p's dtype and shape,
 * element i from p's element i. */
static clt_status sample_from(const char *kernel, clt_generator *gen, const clt_tensor *p,
                              clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(p, fn);
    bool poisson = kernel[0] == 'p';
    if (!clt__dtype_is_float(p->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: \"%s\" not implemented for %s", fn,
                          poisson ? "poisson" : "bernoulli", clt_dtype_name(p->dtype));
    clt_status st = poisson ? check_params(p, is_rate,
                                           "invalid Poisson rate, expected rate to be "
                                           "non-negative",
                                           fn)
                            : check_params(p, is_probability,
                                           "Expected p_in >= 0 && p_in <= 1 to be true, but "
                                           "got false (bernoulli's probabilities must be in "
                                           "[0, 1])",
                                           fn);
    if (st != CLT_OK)
        return st;
    return draw_from(kernel, gen, p, out, fn);
}

/* One new tensor of p's dtype and shape, element i drawn by `kernel` (of
 * cl/random.cl) from p's element i; the generator's draws given back on
 * failure. */
static clt_status draw_from(const char *kernel, clt_generator *gen, const clt_tensor *p,
                            clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *c = NULL, *t = NULL;
    bool drawn = false;
    CLT__TRY(clt__result_new(fn, p->dev, p->dtype, p->ndim, p->shape, &t));
    if (t->numel > 0) {
        const char *opts = random_options(p->dtype);
        if (opts == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        CLT__TRY(operand(fn, p, &c));
        reserved rs = reserve(gen, t->numel);
        drawn = true;
        cl_mem mo = clt__mem(t), mp = clt__mem(c);
        cl_ulong n = (cl_ulong)t->numel;
        size_t gws = (size_t)n;
        clt__arg args[] = {CLT__ARG(mo),      CLT__ARG(mp),      CLT__ARG(n),
                           CLT__ARG(rs.key0), CLT__ARG(rs.key1), CLT__ARG(rs.offset)};
        CLT__TRY(clt__error_in(
            clt__launch(p->dev, "random", opts, kernel, 1, &gws, NULL, 6, args), fn));
    }
    *out = t;
    t = NULL;
done:
    if (st != CLT_OK && drawn)
        give_back(gen, p->numel);
    clt_tensor_free(c);
    clt_tensor_free(t);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_bernoulli(clt_generator *gen, const clt_tensor *p, clt_tensor **out)
{
    return sample_from("bernoulli_tensor", gen, p, out, "clt_bernoulli");
}

clt_status clt_poisson(clt_generator *gen, const clt_tensor *rates, clt_tensor **out)
{
    return sample_from("poisson", gen, rates, out, "clt_poisson");
}

static bool is_count(double v)
{
    return v >= 0.0;
}

clt_status clt_binomial(clt_generator *gen, const clt_tensor *count, const clt_tensor *prob,
                        clt_tensor **out)
{
    const char *fn = "clt_binomial";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(count, fn);
    CLT__REQUIRE_ARG(prob, fn);
    clt_status st;
    if ((st = clt__check_floating(count, "count", fn)) != CLT_OK ||
        (st = clt__check_floating(prob, "prob", fn)) != CLT_OK)
        return st;
    if ((st = clt__same_device(count, prob, fn)) != CLT_OK)
        return st;
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    if ((st = clt__broadcast_shapes(count->ndim, count->shape, prob->ndim, prob->shape, &nd,
                                    shape, fn)) != CLT_OK)
        return st;
    clt_dtype dt = clt_promote_types(count->dtype, prob->dtype);
    clt_tensor *ce = NULL, *pe = NULL, *cc = NULL, *pc = NULL, *t = NULL;
    bool drawn = false;
    reserved rs = {0, 0, 0};
    CLT__TRY(clt__error_as(clt_expand(count, nd, shape, &ce), fn));
    CLT__TRY(clt__error_as(clt_expand(prob, nd, shape, &pe), fn));
    CLT__TRY(clt__copy_as(fn, ce, dt, &cc));
    CLT__TRY(clt__copy_as(fn, pe, dt, &pc));
    CLT__TRY(check_params(cc, is_count,
                          "binomial's count must be non-negative (found a negative or NaN "
                          "count)",
                          fn));
    CLT__TRY(check_params(pc, is_probability,
                          "binomial's prob must be in [0, 1] (found a value outside or NaN)",
                          fn));
    CLT__TRY(clt__result_new(fn, count->dev, dt, nd, shape, &t));
    if (t->numel > 0) {
        const char *opts = random_options(dt);
        if (opts == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        rs = reserve(gen, t->numel);
        drawn = true;
        cl_mem mo = clt__mem(t), mc = clt__mem(cc), mp = clt__mem(pc);
        cl_ulong n = (cl_ulong)t->numel;
        size_t gws = (size_t)n;
        clt__arg args[] = {CLT__ARG(mo),      CLT__ARG(mc),      CLT__ARG(mp),
                           CLT__ARG(n),       CLT__ARG(rs.key0), CLT__ARG(rs.key1),
                           CLT__ARG(rs.offset)};
        CLT__TRY(clt__error_in(
            clt__launch(count->dev, "random", opts, "binomial", 1, &gws, NULL, 7, args), fn));
    }
    *out = t;
    t = NULL;
done:
    if (st != CLT_OK && drawn)
        give_back(gen, t ? t->numel : 0);
    clt_tensor_free(ce);
    clt_tensor_free(pe);
    clt_tensor_free(cc);
    clt_tensor_free(pc);
    clt_tensor_free(t);
    return st == CLT_OK ? clt__ok() : st;
}

/* torch's checks of one row of multinomial's probabilities, on the host. */
clt_status clt__multinomial_check_row(const double *p, int64_t k, bool replacement,
                                      const char *fn)
{
    double sum = 0.0;
    for (int64_t j = 0; j < k; j++) {
        double x = p[j];
        /* torch's words differ between its two paths */
        if (!(x >= 0.0) || isinf(x)) {
            if (!replacement)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: probability tensor contains either `inf`, `nan` or "
                                  "element < 0",
                                  fn);
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: invalid multinomial distribution (encountering "
                              "probability entry %s)",
                              fn, !(x >= 0.0) ? "< 0" : "= infinity or NaN");
        }
        sum += x;
    }
    if (!(sum > 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid multinomial distribution (sum of probabilities <= 0)",
                          fn);
    return CLT_OK;
}

/* The same checks, row by row, of a tensor of probabilities (read back). */
static clt_status check_multinomial(const clt_tensor *probs, int64_t rows, int64_t k,
                                    bool replacement, const char *fn)
{
    double *v = NULL;
    clt_status st = clt__read_doubles(fn, probs, &v);
    for (int64_t r = 0; r < rows && st == CLT_OK; r++)
        st = clt__multinomial_check_row(v + r * k, k, replacement, fn);
    free(v);
    return st;
}

clt_status clt_multinomial(clt_generator *gen, const clt_tensor *probs, int64_t num_samples,
                           int replacement, clt_tensor **out)
{
    const char *fn = "clt_multinomial";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(probs, fn);
    if (!clt__dtype_is_float(probs->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: multinomial only supports floating-point dtypes for input, got: "
                          "%s",
                          fn, clt_dtype_name(probs->dtype));
    if (probs->ndim != 1 && probs->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: prob_dist must be 1 or 2 dim", fn);
    if (num_samples <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: cannot sample n_sample <= 0 samples",
                          fn);
    int64_t k = probs->shape[probs->ndim - 1];
    int64_t rows = probs->ndim == 2 ? probs->shape[0] : 1;
    if (!replacement && num_samples > k)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cannot sample n_sample > prob_dist.size(-1) samples without "
                          "replacement",
                          fn);
    if (k > (INT64_C(1) << 24))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: number of categories cannot exceed 2^24", fn);
    clt_status st = check_multinomial(probs, rows, k, replacement != 0, fn);
    if (st != CLT_OK)
        return st;
    int64_t shape[2] = {rows, num_samples};
    int ndim = probs->ndim;
    const int64_t *oshape = ndim == 2 ? shape : shape + 1;
    clt_tensor *t = NULL, *c = NULL, *keys = NULL;
    int64_t drawn = 0;
    CLT__TRY(clt__result_new(fn, probs->dev, CLT_INT64, ndim, oshape, &t));
    if (rows > 0) {
        const char *opts = random_options(probs->dtype);
        if (opts == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        CLT__TRY(operand(fn, probs, &c));
        cl_mem mo = clt__mem(t), mp = clt__mem(c);
        cl_ulong ur = (cl_ulong)rows, uk = (cl_ulong)k, uns = (cl_ulong)num_samples;
        if (replacement) {
            drawn = rows * num_samples;
            reserved rs = reserve(gen, drawn);
            size_t gws = (size_t)drawn;
            clt__arg args[] = {CLT__ARG(mo),      CLT__ARG(mp),      CLT__ARG(ur),
                               CLT__ARG(uk),      CLT__ARG(uns),     CLT__ARG(rs.key0),
                               CLT__ARG(rs.key1), CLT__ARG(rs.offset)};
            CLT__TRY(clt__error_in(clt__launch(probs->dev, "random", opts,
                                               "multinomial_replacement", 1, &gws, NULL, 8,
                                               args),
                                   fn));
        } else {
            int64_t kshape[2] = {rows, k};
            clt_dtype kd = probs->dtype == CLT_FLOAT64 ? CLT_FLOAT64 : CLT_FLOAT32;
            CLT__TRY(clt__temp_new(fn, "the keys", probs->dev, kd, 2, kshape, &keys));
            drawn = rows * k;
            reserved rs = reserve(gen, drawn);
            cl_mem mk = clt__mem(keys);
            cl_ulong n = (cl_ulong)drawn;
            size_t gws = (size_t)drawn;
            clt__arg args[] = {CLT__ARG(mk),      CLT__ARG(mp),      CLT__ARG(n),
                               CLT__ARG(rs.key0), CLT__ARG(rs.key1), CLT__ARG(rs.offset)};
            CLT__TRY(clt__error_in(clt__launch(probs->dev, "random", opts, "multinomial_keys",
                                               1, &gws, NULL, 6, args),
                                   fn));
            clt__arg rargs[] = {CLT__ARG(mo), CLT__ARG(mk), CLT__ARG(ur), CLT__ARG(uk),
                                CLT__ARG(uns)};
            CLT__TRY(clt__error_in(clt__launch(probs->dev, "random", opts, "multinomial_rank",
                                               1, &gws, NULL, 5, rargs),
                                   fn));
        }
    }
    *out = t;
    t = NULL;
done:
    if (st != CLT_OK && drawn)
        give_back(gen, drawn);
    clt_tensor_free(keys);
    clt_tensor_free(c);
    clt_tensor_free(t);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_randint_like(clt_generator *gen, const clt_tensor *t, int64_t low, int64_t high,
                            clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_randint_like");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_randint_like");
    return generate(INTEGER, gen, t->dev, low, high, t->dtype, t->ndim, t->shape, out,
                    "clt_randint_like");
}

/* ---- torch._standard_gamma and its gradient, for the Gamma family of
 * src/distributions ---------------------------------------------------------- */

clt_status clt__standard_gamma(const char *fn, clt_generator *gen, const clt_tensor *alpha,
                               clt_tensor **out)
{
    *out = NULL;
    if (!clt__dtype_is_float(alpha->dtype))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: \"_standard_gamma\" not implemented for %s",
                          fn, clt_dtype_name(alpha->dtype));
    return draw_from("standard_gamma", gen, alpha, out, fn);
}

clt_status clt__standard_gamma_grad(const char *fn, const clt_tensor *g, const clt_tensor *alpha,
                                    const clt_tensor *x, clt_tensor **out)
{
    *out = NULL;
    clt_status st = CLT_OK;
    clt_tensor *cg = NULL, *ca = NULL, *cx = NULL, *t = NULL;
    CLT__TRY(clt__result_new(fn, x->dev, x->dtype, x->ndim, x->shape, &t));
    if (t->numel > 0) {
        const char *opts = random_options(x->dtype);
        if (opts == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
            goto done;
        }
        CLT__TRY(operand(fn, g, &cg));
        CLT__TRY(operand(fn, alpha, &ca));
        CLT__TRY(operand(fn, x, &cx));
        cl_mem mo = clt__mem(t), mg = clt__mem(cg), ma = clt__mem(ca), mx = clt__mem(cx);
        cl_ulong n = (cl_ulong)t->numel;
        size_t gws = (size_t)n;
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(mg), CLT__ARG(ma), CLT__ARG(mx), CLT__ARG(n)};
        CLT__TRY(clt__error_in(clt__launch(x->dev, "random", opts, "standard_gamma_grad", 1,
                                           &gws, NULL, 5, args),
                               fn));
    }
    *out = t;
    t = NULL;
done:
    clt_tensor_free(cg);
    clt_tensor_free(ca);
    clt_tensor_free(cx);
    clt_tensor_free(t);
    return st == CLT_OK ? clt__ok() : st;
}
