/* test_random.c: Philox random numbers against a host Philox4x32-10 (checked
 * on Random123's known answers): exact bits for rand and randint, libm
 * Box-Muller within tolerance for randn, the same bits on two devices,
 * seeding, replay and offsets, statistics, and argument errors; torch's
 * other distributions (exponential_, geometric_, log_normal_, cauchy_,
 * bernoulli, poisson, multinomial, normal with tensors) against libm on
 * the same uniforms or their moments, and their refusals. */
#include "helpers.h"

#include <stdint.h>

static void philox(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4])
{
    uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]};
    uint32_t k0 = key_in[0], k1 = key_in[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1, n3 = (uint32_t)p0;
        c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    memcpy(out, c, sizeof c);
}

/* The block behind element g = offset + i of a generator seeded with seed. */
static void block(uint64_t seed, uint64_t g, uint32_t w[4])
{
    uint32_t ctr[4] = {(uint32_t)g, (uint32_t)(g >> 32), 0, 0};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    philox(ctr, key, w);
}

static clt_tensor *make(clt_status (*fn)(clt_generator *, clt_device *, clt_dtype, int,
                                         const int64_t *, clt_tensor **),
                        clt_generator *g, clt_device *dev, clt_dtype dt, int64_t n)
{
    clt_tensor *t = NULL;
    CHECK(fn(g, dev, dt, 1, &n, &t));
    return t;
}

static void *read_all(const clt_tensor *t)
{
    size_t bytes = clt_tensor_nbytes(t);
    void *h = malloc(bytes ? bytes : 1);
    cr_assert_not_null(h);
    CHECK(clt_tensor_read(t, h, bytes));
    return h;
}

Test(random, philox_known_answers)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        philox(kat[v], kat[v] + 4, out);
        for (int j = 0; j < 4; j++)
            cr_assert_eq(out[j], kat[v][6 + j], "vector %d word %d: %08x", v, j, out[j]);
    }
}

Test(random, rand_bits_match_host_philox_and_offsets_advance)
{
    clt_device *dev = get_device("cpu");
    const uint64_t seed = 0x0123456789abcdefULL;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    cr_assert_eq(clt_generator_seed(g), seed);
    enum { N = 1003 };
    for (int call = 0; call < 2; call++) {
        cr_assert_eq(clt_generator_offset(g), (uint64_t)call * N);
        clt_tensor *t = make(clt_rand, g, dev, CLT_FLOAT32, N);
        float *got = read_all(t);
        for (int i = 0; i < N; i++) {
            uint32_t w[4];
            block(seed, (uint64_t)call * N + (uint64_t)i, w);
            float want = (float)(w[0] >> 8) * 0x1p-24f;
            cr_assert_eq(got[i], want, "call %d element %d: %.9g vs %.9g", call, i, got[i], want);
        }
        free(got);
        clt_tensor_free(t);
    }
    /* An empty tensor takes no numbers. */
    clt_tensor *e = make(clt_rand, g, dev, CLT_FLOAT32, 0);
    cr_assert_eq(clt_generator_offset(g), 2 * N);
    clt_tensor_free(e);
    clt_generator_free(g);
}

Test(random, randint_bits_bounds_and_uniformity)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(7, &g));
    int64_t n = 100000;
    clt_tensor *t = NULL;
    CHECK(clt_randint(g, dev, -3, 7, CLT_INT64, 1, &n, &t));
    int64_t *v = read_all(t);
    long counts[10] = {0};
    for (int64_t i = 0; i < n; i++) {
        cr_assert(v[i] >= -3 && v[i] < 7, "element %lld = %lld", (long long)i, (long long)v[i]);
        counts[v[i] + 3]++;
        uint32_t w[4];
        block(7, (uint64_t)i, w);
        uint64_t x = ((uint64_t)w[0] << 32) | w[1];
        int64_t want = -3 + (int64_t)(((unsigned __int128)x * 10u) >> 64);
        cr_assert_eq(v[i], want);
    }
    for (int b = 0; b < 10; b++)
        cr_assert(labs(counts[b] - 10000) < 600, "value %d drawn %ld times of 100000", b - 3,
                  counts[b]);
    free(v);
    clt_tensor_free(t);

    /* The full int64 range exposes (nearly) all 64 bits. */
    int64_t m = 257;
    CHECK(clt_randint(g, dev, INT64_MIN, INT64_MAX, CLT_INT64, 1, &m, &t));
    v = read_all(t);
    for (int64_t i = 0; i < m; i++) {
        uint32_t w[4];
        block(7, (uint64_t)(n + i), w);
        uint64_t x = ((uint64_t)w[0] << 32) | w[1];
        uint64_t q = (uint64_t)(((unsigned __int128)x * UINT64_MAX) >> 64);
        cr_assert_eq((uint64_t)v[i], (uint64_t)INT64_MIN + q);
    }
    free(v);
    clt_tensor_free(t);

    /* uint8 over its whole range. */
    CHECK(clt_randint(g, dev, 0, 256, CLT_UINT8, 1, &n, &t));
    uint8_t *u = read_all(t);
    long seen[256] = {0};
    for (int64_t i = 0; i < n; i++)
        seen[u[i]]++;
    for (int b = 0; b < 256; b++)
        cr_assert(seen[b] > 250 && seen[b] < 550, "byte %d drawn %ld times", b, seen[b]);
    free(u);
    clt_tensor_free(t);
    clt_generator_free(g);
}

static void moments(const float *x, size_t n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    *mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        s2 += (x[i] - *mean) * (x[i] - *mean);
    *var = s2 / (double)n;
}

Test(random, rand_and_randn_statistics)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(2024, &g));
    const int64_t n = 1 << 20;
    clt_tensor *t = make(clt_rand, g, dev, CLT_FLOAT32, n);
    float *u = read_all(t);
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = u[i] < lo ? u[i] : lo;
        hi = u[i] > hi ? u[i] : hi;
    }
    cr_assert(lo >= 0.0f && hi < 1.0f, "rand outside [0, 1): min %g max %g", lo, hi);
    double mean, var;
    moments(u, (size_t)n, &mean, &var);
    cr_assert(fabs(mean - 0.5) < 0.002 && fabs(var - 1.0 / 12) < 0.001, "rand mean %g var %g",
              mean, var);
    free(u);
    clt_tensor_free(t);

    uint64_t off = clt_generator_offset(g);
    t = make(clt_randn, g, dev, CLT_FLOAT32, n);
    float *z = read_all(t);
    moments(z, (size_t)n, &mean, &var);
    /* Standard errors: 0.001 for the mean, 0.0014 for the variance. */
    cr_assert(fabs(mean) < 0.006 && fabs(var - 1) < 0.008, "randn mean %g var %g", mean, var);
    long tail = 0;
    for (int64_t i = 0; i < n; i++)
        tail += fabsf(z[i]) > 3.0f;
    /* P(|z| > 3) = 0.0027: about 2831 of 2^20. */
    cr_assert(tail > 2500 && tail < 3200, "%ld values beyond 3 sigma", tail);
    /* Each value against libm's Box-Muller on the same uniforms. */
    for (int64_t i = 0; i < 20000; i++) {
        uint32_t w[4];
        block(2024, off + (uint64_t)i, w);
        double u1 = (double)((w[0] >> 8) + 1) * 0x1p-24, u2 = (double)(w[1] >> 8) * 0x1p-24;
        double want = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        cr_assert(fabs(z[i] - want) < 3e-6 * (1 + fabs(want)), "element %lld: %.9g vs %.9g",
                  (long long)i, z[i], want);
    }
    free(z);
    clt_tensor_free(t);
    clt_generator_free(g);
}

Test(random, float64_rand_and_randn)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no fp64 on %s", clt_device_label(dev));
    clt_generator *g = NULL;
    CHECK(clt_generator_new(99, &g));
    enum { N = 50000 };
    clt_tensor *t = make(clt_rand, g, dev, CLT_FLOAT64, N);
    double *u = read_all(t);
    for (int i = 0; i < N; i++) {
        uint32_t w[4];
        block(99, (uint64_t)i, w);
        double want = (double)((((uint64_t)w[0]) << 21) | (w[1] >> 11)) * 0x1p-53;
        cr_assert_eq(u[i], want, "element %d", i);
    }
    free(u);
    clt_tensor_free(t);
    t = make(clt_randn, g, dev, CLT_FLOAT64, N);
    double *z = read_all(t);
    double s = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        uint32_t w[4];
        block(99, (uint64_t)(N + i), w);
        double u1 = (double)(((((uint64_t)w[0]) << 21) | (w[1] >> 11)) + 1) * 0x1p-53;
        double u2 = (double)((((uint64_t)w[2]) << 21) | (w[3] >> 11)) * 0x1p-53;
        double want = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        cr_assert(fabs(z[i] - want) < 1e-13 * (1 + fabs(want)), "element %d: %.17g vs %.17g",
                  i, z[i], want);
        s += z[i];
        s2 += z[i] * z[i];
    }
    cr_assert(fabs(s / N) < 0.03 && fabs(s2 / N - 1) < 0.04, "mean %g var %g", s / N, s2 / N);
    free(z);
    clt_tensor_free(t);
    clt_generator_free(g);
}

/* Bits of every kind of draw from one seed on one device: the float64
 * ones last (a device without fp64 makes fewer). */
enum { MAX_DRAWS = 20 };

/* t (zeros of dt, n elements) after an in-place sampler k. */
static clt_tensor *sampled(clt_device *dev, clt_generator *g, clt_dtype dt, int64_t n, int k)
{
    clt_tensor *t = NULL;
    CHECK(clt_zeros(dev, dt, 1, &n, &t));
    switch (k) {
    case 0: CHECK(clt_exponential_(t, g, 0.7)); break;
    case 1: CHECK(clt_geometric_(t, g, 0.05)); break;
    case 2: CHECK(clt_log_normal_(t, g, 0.5, 1.5)); break;
    case 3: CHECK(clt_cauchy_(t, g, -1, 3)); break;
    default: CHECK(clt_bernoulli_(t, g, 0.4)); break;
    }
    return t;
}

/* Rates from 0 to 60 (both poisson methods), or weights for multinomial. */
static clt_tensor *ramp(clt_device *dev, clt_dtype dt, int64_t n)
{
    double *r = malloc((size_t)n * sizeof *r);
    for (int64_t i = 0; i < n; i++)
        r[i] = (double)(i % 61);
    clt_tensor *t = tensor_of(dev, dt, 1, &n, r);
    free(r);
    return t;
}

static void draw_all(clt_device *dev, uint64_t seed, void **bufs, size_t *sizes, int *count)
{
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    clt_tensor *t[MAX_DRAWS] = {0};
    int64_t n = 4099;
    int c = 0;
    CHECK(clt_rand(g, dev, CLT_FLOAT32, 1, &n, &t[c++]));
    CHECK(clt_randn(g, dev, CLT_FLOAT32, 1, &n, &t[c++]));
    CHECK(clt_randint(g, dev, -1000, 1000, CLT_INT32, 1, &n, &t[c++]));
    for (int k = 0; k < 5; k++)
        t[c++] = sampled(dev, g, k == 1 ? CLT_INT64 : CLT_FLOAT32, n, k);
    clt_tensor *rates = ramp(dev, CLT_FLOAT32, n);
    CHECK(clt_poisson(g, rates, &t[c++]));
    CHECK(clt_multinomial(g, rates, 500, 1, &t[c++]));
    CHECK(clt_multinomial(g, rates, 500, 0, &t[c++]));
    clt_tensor_free(rates);
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_randn(g, dev, CLT_FLOAT64, 1, &n, &t[c++]));
        for (int k = 0; k < 4; k++)
            t[c++] = sampled(dev, g, CLT_FLOAT64, n, k);
        rates = ramp(dev, CLT_FLOAT64, n);
        CHECK(clt_poisson(g, rates, &t[c++]));
        clt_tensor_free(rates);
    }
    *count = c;
    for (int k = 0; k < *count; k++) {
        bufs[k] = read_all(t[k]);
        sizes[k] = clt_tensor_nbytes(t[k]);
        clt_tensor_free(t[k]);
    }
    clt_generator_free(g);
}

Test(random, same_seed_same_bits_on_two_devices)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    void *a[MAX_DRAWS], *b[MAX_DRAWS];
    size_t sa[MAX_DRAWS], sb[MAX_DRAWS];
    int na, nb;
    draw_all(d0, 42, a, sa, &na);
    draw_all(d1, 42, b, sb, &nb);
    int n = na < nb ? na : nb;
    for (int k = 0; k < n; k++) {
        cr_assert_eq(sa[k], sb[k], "draw %d: %zu bytes and %zu", k, sa[k], sb[k]);
        cr_assert(memcmp(a[k], b[k], sa[k]) == 0, "draw %d differs between %s and %s", k,
                  clt_device_label(d0), clt_device_label(d1));
    }
    void *c[MAX_DRAWS];
    size_t sc[MAX_DRAWS];
    int nc;
    draw_all(d0, 43, c, sc, &nc);
    for (int k = 0; k < n; k++)
        cr_assert(memcmp(a[k], c[k], sa[k]) != 0, "seeds 42 and 43 gave draw %d alike", k);
    for (int k = 0; k < na; k++)
        free(a[k]);
    for (int k = 0; k < nb; k++)
        free(b[k]);
    for (int k = 0; k < nc; k++)
        free(c[k]);
}

Test(random, replay_seed_offset_and_shape_independence)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(5, &g));
    clt_tensor *a = make(clt_randn, g, dev, CLT_FLOAT32, 1000);
    clt_tensor *b = make(clt_randn, g, dev, CLT_FLOAT32, 1000);
    float *ha = read_all(a), *hb = read_all(b);
    cr_assert(memcmp(ha, hb, 1000 * sizeof(float)) != 0, "consecutive calls gave equal values");

    clt_manual_seed(g, 5);
    cr_assert_eq(clt_generator_offset(g), 0);
    int64_t shape[] = {10, 100};
    clt_tensor *c = NULL;
    CHECK(clt_randn(g, dev, CLT_FLOAT32, 2, shape, &c));
    float *hc = read_all(c);
    cr_assert(memcmp(ha, hc, 1000 * sizeof(float)) == 0, "replay after manual_seed differs");

    clt_generator_set_offset(g, 1100);
    clt_tensor *d = make(clt_randn, g, dev, CLT_FLOAT32, 900);
    float *hd = read_all(d);
    cr_assert(memcmp(hb + 100, hd, 900 * sizeof(float)) == 0, "offset replay differs");

    /* The default generator (NULL) replays the same way. */
    clt_manual_seed(NULL, 5);
    clt_tensor *e = make(clt_randn, NULL, dev, CLT_FLOAT32, 1000);
    float *he = read_all(e);
    cr_assert(memcmp(ha, he, 1000 * sizeof(float)) == 0, "default generator differs");
    cr_assert_eq(clt_generator_seed(NULL), 5);
    cr_assert_eq(clt_generator_offset(NULL), 1000);

    free(ha), free(hb), free(hc), free(hd), free(he);
    clt_tensor_free(a), clt_tensor_free(b), clt_tensor_free(c), clt_tensor_free(d);
    clt_tensor_free(e);
    clt_generator_free(g);
}

Test(random, argument_errors)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(1, &g));
    int64_t n = 4;
    clt_tensor *t = (clt_tensor *)&n; /* must come back NULL */
    clt_status st = clt_randint(g, dev, 5, 5, CLT_INT64, 1, &n, &t);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "from=5 >= to=5"), "%s", clt_last_error());
    cr_assert_null(t);
    st = clt_randint(g, dev, -1, 10, CLT_UINT8, 1, &n, &t);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "out of bounds for uint8"), "%s", clt_last_error());
    st = clt_randint(g, dev, 0, 300, CLT_UINT8, 1, &n, &t);
    cr_assert(strstr(clt_last_error(), "to - 1 = 299 is out of bounds"), "%s", clt_last_error());
    st = clt_rand(g, dev, CLT_INT32, 1, &n, &t);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "int32 is not a floating-point dtype"), "%s",
              clt_last_error());
    int64_t neg = -2;
    st = clt_randn(g, dev, CLT_FLOAT32, 1, &neg, &t);
    cr_assert_eq(st, CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "[-2]"), "%s", clt_last_error());
    st = clt_rand(g, NULL, CLT_FLOAT32, 1, &n, &t);
    cr_assert_eq(st, CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_rand(g, dev, CLT_FLOAT32, 1, &n, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_generator_new(1, NULL), CLT_ERR_NULL_ARGUMENT);
    if (!clt_device_supports_dtype(dev, CLT_FLOAT16)) {
        st = clt_rand(g, dev, CLT_FLOAT16, 1, &n, &t);
        cr_assert_eq(st, CLT_ERR_DTYPE_UNSUPPORTED, "%s", clt_last_error());
    }
    cr_assert_null(t);
    cr_assert_eq(clt_generator_offset(g), 0, "failed calls consumed numbers");
    clt_generator_free(g);
    clt_generator_free(NULL);
}

/* ---- the other distributions ---------------------------------------------- */

/* Element g's uniform in (0, 1) of the float32 samplers. */
static double open_u(uint64_t seed, uint64_t g)
{
    uint32_t w[4];
    block(seed, g, w);
    return (double)(((w[0] >> 9) << 1) | 1u) * 0x1p-24;
}

static clt_tensor *zeros_of(clt_device *dev, clt_dtype dt, int64_t n)
{
    clt_tensor *t = NULL;
    CHECK(clt_zeros(dev, dt, 1, &n, &t));
    return t;
}

Test(random, exponential_geometric_cauchy_log_normal_against_host)
{
    clt_device *dev = get_device("cpu");
    const uint64_t seed = 77;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    enum { N = 200000 };
    clt_tensor *t = zeros_of(dev, CLT_FLOAT32, N);

    CHECK(clt_exponential_(t, g, 2.5));
    float *v = read_all(t);
    double s = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        double want = -log(open_u(seed, (uint64_t)i)) / 2.5;
        cr_assert(fabs(v[i] - want) <= 2e-6 * (1 + want), "exponential %d: %.9g vs %.9g", i,
                  v[i], want);
        s += v[i];
        s2 += v[i] * (double)v[i];
    }
    cr_assert(fabs(s / N - 0.4) < 4 * 0.4 / sqrt(N), "exponential mean %g", s / N);
    free(v);

    CHECK(clt_geometric_(t, g, 0.3));
    v = read_all(t);
    int off = 0;
    s = 0;
    for (int i = 0; i < N; i++) {
        double want = ceil(log(open_u(seed, (uint64_t)(N + i))) / log1p(-0.3));
        cr_assert(v[i] >= 1 && v[i] == floorf(v[i]), "geometric %d: %g", i, v[i]);
        cr_assert(fabs(v[i] - want) <= 1, "geometric %d: %g vs %g", i, v[i], want);
        off += v[i] != want;
        s += v[i];
    }
    cr_assert(off < 20, "%d geometric values off by one at a boundary", off);
    /* mean 1 / p, variance (1 - p) / p^2 */
    cr_assert(fabs(s / N - 1 / 0.3) < 4 * sqrt(0.7 / 0.09 / N), "geometric mean %g", s / N);
    free(v);

    CHECK(clt_cauchy_(t, g, 1.0, 0.5));
    v = read_all(t);
    int inside = 0;
    for (int i = 0; i < N; i++) {
        double u = open_u(seed, (uint64_t)(2 * N + i));
        double want = 1.0 + 0.5 * tan(M_PI * (u - 0.5));
        cr_assert(fabs(v[i] - want) <= 2e-6 * (1 + fabs(want)), "cauchy %d: %.9g vs %.9g", i,
                  v[i], want);
        inside += fabs(v[i] - 1.0) < 0.5;
    }
    /* half the mass lies within one sigma of the median */
    cr_assert(fabs(inside / (double)N - 0.5) < 4 * 0.5 / sqrt(N), "%d within sigma", inside);
    free(v);

    /* log_normal_: exp of mean + std * (clt_randn's value) */
    uint64_t before = clt_generator_offset(g);
    CHECK(clt_log_normal_(t, g, 0.25, 0.5));
    v = read_all(t);
    clt_generator_set_offset(g, before);
    clt_tensor *z = make(clt_randn, g, dev, CLT_FLOAT32, N);
    float *zv = read_all(z);
    s = 0;
    for (int i = 0; i < N; i++) {
        double want = exp(0.25 + 0.5 * (double)zv[i]);
        cr_assert(fabs(v[i] - want) <= 2e-6 * want, "log_normal %d: %.9g vs %.9g", i, v[i],
                  want);
        s += v[i];
    }
    /* mean exp(mu + sigma^2 / 2), variance (exp(sigma^2) - 1) exp(2 mu + sigma^2) */
    double wm = exp(0.25 + 0.125), wv = (exp(0.25) - 1) * exp(0.5 + 0.25);
    cr_assert(fabs(s / N - wm) < 4 * sqrt(wv / N), "log_normal mean %g, want %g", s / N, wm);
    free(v);
    free(zv);
    clt_tensor_free(z);

    /* float64: exponential against libm within 1e-13 */
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        clt_tensor *d = zeros_of(dev, CLT_FLOAT64, 5000);
        before = clt_generator_offset(g);
        CHECK(clt_exponential_(d, g, 1.0));
        double *dv = read_all(d);
        for (int i = 0; i < 5000; i++) {
            uint32_t w[4];
            block(seed, before + (uint64_t)i, w);
            uint64_t bits = ((((uint64_t)w[0]) << 21) | (w[1] >> 11));
            double u = (double)((bits & ~UINT64_C(1)) | 1u) * 0x1p-53;
            cr_assert(fabs(dv[i] + log(u)) <= 1e-13 * (1 - log(u)), "float64 %d: %.17g", i,
                      dv[i]);
        }
        free(dv);
        clt_tensor_free(d);
    }
    clt_tensor_free(t);
    clt_generator_free(g);
}

Test(random, bernoulli_exact_bits)
{
    clt_device *dev = get_device("cpu");
    const uint64_t seed = 12;
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    enum { N = 10000 };
    double *p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++)
        p[i] = (i % 11) / 10.0 > 1 ? 1.0 : (i % 11) / 10.0;
    int64_t n = N;
    clt_tensor *pt = tensor_of(dev, CLT_FLOAT32, 1, &n, p), *b = NULL;
    CHECK(clt_bernoulli(g, pt, &b));
    float *pv = read_all(pt), *bv = read_all(b);
    for (int i = 0; i < N; i++) {
        uint32_t w[4];
        block(seed, (uint64_t)i, w);
        float u = (float)(w[0] >> 8) * 0x1p-24f;
        cr_assert_eq(bv[i], u < pv[i] ? 1.0f : 0.0f, "element %d: p %g u %g got %g", i, pv[i],
                     u, bv[i]);
    }
    free(pv);
    free(bv);
    clt_tensor_free(b);

    clt_tensor *it = zeros_of(dev, CLT_INT64, N);
    CHECK(clt_bernoulli_(it, g, 0.3));
    int64_t *iv = read_all(it);
    long ones = 0;
    for (int i = 0; i < N; i++) {
        uint32_t w[4];
        block(seed, (uint64_t)(N + i), w);
        float u = (float)(w[0] >> 8) * 0x1p-24f;
        cr_assert_eq(iv[i], u < 0.3f ? 1 : 0, "bernoulli_ %d", i);
        ones += iv[i];
    }
    cr_assert(labs(ones - 3000) < 4 * 46, "%ld ones of 10000 at p 0.3", ones);
    free(iv);

    uint64_t before = clt_generator_offset(g);
    p[7] = 1.5;
    clt_tensor *bad = tensor_of(dev, CLT_FLOAT32, 1, &n, p);
    b = (clt_tensor *)&n;
    assert_error(clt_bernoulli(g, bad, &b), CLT_ERR_INVALID_ARGUMENT, "p_in >= 0 && p_in <= 1");
    cr_assert_null(b);
    assert_error(clt_bernoulli_(it, g, -0.1), CLT_ERR_INVALID_ARGUMENT,
                 "bernoulli_ expects p to be in [0, 1], but got p=-0.1");
    assert_error(clt_bernoulli(g, it, &b), CLT_ERR_INVALID_ARGUMENT, "not implemented for int64");
    cr_assert_eq(clt_generator_offset(g), before);
    free(p);
    clt_tensor_free(bad);
    clt_tensor_free(it);
    clt_tensor_free(pt);
    clt_generator_free(g);
}

Test(random, poisson_moments)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(31, &g));
    static const double rates[] = {0, 0.3, 4, 9.5, 10, 37.5, 1000};
    enum { R = 7, M = 40000 };
    double *r = malloc(R * M * sizeof *r);
    for (int k = 0; k < R; k++)
        for (int i = 0; i < M; i++)
            r[k * M + i] = rates[k];
    int64_t shape[2] = {R, M};
    clt_tensor *rt = tensor_of(dev, CLT_FLOAT32, 2, shape, r), *p = NULL;
    CHECK(clt_poisson(g, rt, &p));
    cr_assert_eq(clt_generator_offset(g), (uint64_t)R * M);
    float *v = read_all(p);
    for (int k = 0; k < R; k++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < M; i++) {
            float x = v[k * M + i];
            cr_assert(x >= 0 && x == floorf(x), "rate %g: %g", rates[k], x);
            s += x;
            s2 += (double)x * x;
        }
        double mean = s / M, var = s2 / M - mean * mean, lam = rates[k];
        if (lam == 0) {
            cr_assert_eq(s, 0.0);
            continue;
        }
        /* se of the mean sqrt(lam / M); of the variance about lam sqrt(2 / M) */
        cr_assert(fabs(mean - lam) < 4.5 * sqrt(lam / M), "rate %g: mean %g", lam, mean);
        cr_assert(fabs(var - lam) < 5 * lam * sqrt((2 + 1 / lam) / M), "rate %g: variance %g",
                  lam, var);
    }
    free(v);
    clt_tensor_free(p);
    /* an infinite rate gives infinity, as the limit */
    double edge[2] = {INFINITY, 0};
    int64_t two = 2;
    clt_tensor *et = tensor_of(dev, CLT_FLOAT32, 1, &two, edge);
    CHECK(clt_poisson(g, et, &p));
    v = read_all(p);
    cr_assert(isinf(v[0]) && v[0] > 0 && v[1] == 0, "poisson of inf, 0: %g, %g", v[0], v[1]);
    free(v);
    clt_tensor_free(p);
    clt_tensor_free(et);
    r[3] = -1;
    clt_tensor *bad = tensor_of(dev, CLT_FLOAT32, 2, shape, r);
    assert_error(clt_poisson(g, bad, &p), CLT_ERR_INVALID_ARGUMENT,
                 "invalid Poisson rate, expected rate to be non-negative");
    cr_assert_null(p);
    free(r);
    clt_tensor_free(bad);
    clt_tensor_free(rt);
    clt_generator_free(g);
}

Test(random, multinomial_with_and_without_replacement)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(4, &g));
    /* two rows of weights (not summing to 1), a zero in the second */
    double w[2][6] = {{1, 2, 3, 4, 5, 5}, {0, 1, 1, 0, 2, 4}};
    int64_t shape[2] = {2, 6};
    clt_tensor *pt = tensor_of(dev, CLT_FLOAT32, 2, shape, &w[0][0]), *s = NULL;
    enum { NS = 60000 };
    CHECK(clt_multinomial(g, pt, NS, 1, &s));
    int64_t want_shape[2] = {2, NS};
    assert_shape(s, 2, want_shape);
    int64_t *v = read_all(s);
    for (int r = 0; r < 2; r++) {
        double total = 0;
        long count[6] = {0};
        for (int j = 0; j < 6; j++)
            total += w[r][j];
        for (int i = 0; i < NS; i++) {
            int64_t c = v[r * NS + i];
            cr_assert(c >= 0 && c < 6, "row %d sample %d: %lld", r, i, (long long)c);
            count[c]++;
        }
        for (int j = 0; j < 6; j++) {
            double p = w[r][j] / total, se = sqrt(p * (1 - p) / NS);
            cr_assert(fabs(count[j] / (double)NS - p) <= 4.5 * se, "row %d category %d: %ld",
                      r, j, count[j]);
        }
    }
    free(v);
    clt_tensor_free(s);

    /* without replacement: never a category twice; the positive ones first */
    enum { TRIALS = 4000 };
    long first[6] = {0};
    for (int k = 0; k < TRIALS; k++) {
        CHECK(clt_multinomial(g, pt, 6, 0, &s));
        v = read_all(s);
        for (int r = 0; r < 2; r++) {
            int seen[6] = {0};
            for (int i = 0; i < 6; i++) {
                int64_t c = v[r * 6 + i];
                cr_assert(c >= 0 && c < 6 && !seen[c], "trial %d row %d repeats %lld", k, r,
                          (long long)c);
                seen[c] = 1;
                if (r == 1 && i >= 4)
                    cr_assert(w[1][c] == 0, "row 1 place %d: category %lld of weight %g", i,
                              (long long)c, w[1][c]);
            }
            if (r == 0)
                first[v[0]]++;
        }
        free(v);
        clt_tensor_free(s);
    }
    /* the first sample is drawn by weight */
    for (int j = 0; j < 6; j++) {
        double p = w[0][j] / 20, se = sqrt(p * (1 - p) / TRIALS);
        cr_assert(fabs(first[j] / (double)TRIALS - p) <= 4.5 * se, "first sample %d: %ld", j,
                  first[j]);
    }
    /* 1-D */
    clt_tensor *row = NULL, *r2 = NULL;
    CHECK(clt_narrow(pt, 0, 1, 1, &r2));
    CHECK(clt_squeeze(r2, 0, &row));
    clt_tensor_free(r2);
    CHECK(clt_multinomial(g, row, 3, 0, &s));
    int64_t three = 3;
    assert_shape(s, 1, &three);
    v = read_all(s);
    for (int i = 0; i < 3; i++)
        cr_assert(w[1][v[i]] > 0, "the row view (at an offset) drew category %lld of weight 0",
                  (long long)v[i]);
    free(v);
    clt_tensor_free(s);
    /* bernoulli of a view at an offset, too */
    clt_tensor *tail = NULL, *bt = NULL;
    CHECK(clt_narrow(row, 0, 0, 2, &tail));
    CHECK(clt_bernoulli(g, tail, &bt));
    double *bv = read_as_f64(bt);
    cr_assert(bv[0] == 0 && bv[1] == 1, "bernoulli of a view of p 0, 1 at an offset: %g %g",
              bv[0], bv[1]);
    free(bv);
    clt_tensor_free(bt);
    clt_tensor_free(tail);

    uint64_t before = clt_generator_offset(g);
    s = (clt_tensor *)&three;
    assert_error(clt_multinomial(g, pt, 7, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    cr_assert_null(s);
    assert_error(clt_multinomial(g, pt, 0, 1, &s), CLT_ERR_INVALID_ARGUMENT,
                 "cannot sample n_sample <= 0 samples");
    w[1][2] = NAN;
    clt_tensor *bad = tensor_of(dev, CLT_FLOAT32, 2, shape, &w[0][0]);
    assert_error(clt_multinomial(g, bad, 1, 0, &s), CLT_ERR_INVALID_ARGUMENT,
                 "probability tensor contains either `inf`, `nan` or element < 0");
    assert_error(clt_multinomial(g, bad, 1, 1, &s), CLT_ERR_INVALID_ARGUMENT,
                 "invalid multinomial distribution (encountering probability entry < 0)");
    double z[6] = {0};
    clt_tensor *zero = tensor_of(dev, CLT_FLOAT32, 1, shape + 1, z);
    assert_error(clt_multinomial(g, zero, 1, 1, &s), CLT_ERR_INVALID_ARGUMENT,
                 "invalid multinomial distribution (sum of probabilities <= 0)");
    cr_assert_eq(clt_generator_offset(g), before);
    clt_tensor_free(zero);
    clt_tensor_free(bad);
    clt_tensor_free(row);
    clt_tensor_free(pt);
    clt_generator_free(g);
}

Test(random, normal_tensor_and_randint_like)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(9, &g));
    double m[3] = {-1, 0, 10}, sd[2] = {0.5, 2};
    int64_t sm[1] = {3}, ss[2] = {2, 1};
    clt_tensor *mt = tensor_of(dev, CLT_FLOAT32, 1, sm, m);
    clt_tensor *st = tensor_of(dev, CLT_FLOAT32, 2, ss, sd), *out = NULL;
    CHECK(clt_normal_tensor(g, mt, st, &out));
    int64_t want[2] = {2, 3};
    assert_shape(out, 2, want);
    clt_manual_seed(g, 9);
    clt_tensor *z = NULL;
    CHECK(clt_randn(g, dev, CLT_FLOAT32, 2, want, &z));
    float *ov = read_all(out), *zv = read_all(z);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            float e = (float)m[j] + (float)sd[i] * zv[i * 3 + j];
            cr_assert_eq(ov[i * 3 + j], e, "[%d, %d]: %.9g vs %.9g", i, j, ov[i * 3 + j], e);
        }
    free(ov);
    free(zv);
    clt_tensor_free(out);
    clt_tensor_free(z);
    sd[1] = -1;
    clt_tensor *bad = tensor_of(dev, CLT_FLOAT32, 2, ss, sd);
    uint64_t before = clt_generator_offset(g);
    out = (clt_tensor *)&before;
    assert_error(clt_normal_tensor(g, mt, bad, &out), CLT_ERR_INVALID_ARGUMENT,
                 "normal expects all elements of std >= 0.0");
    cr_assert_null(out);
    cr_assert_eq(clt_generator_offset(g), before);

    clt_tensor *i32 = zeros_of(dev, CLT_INT32, 500), *a = NULL, *b = NULL;
    clt_manual_seed(g, 9);
    CHECK(clt_randint_like(g, i32, -5, 5, &a));
    clt_manual_seed(g, 9);
    int64_t n = 500;
    CHECK(clt_randint(g, dev, -5, 5, CLT_INT32, 1, &n, &b));
    int32_t *av = read_all(a), *bv = read_all(b);
    cr_assert(memcmp(av, bv, 500 * sizeof *av) == 0);
    cr_assert_eq(clt_tensor_dtype(a), CLT_INT32);
    free(av);
    free(bv);
    assert_error(clt_randint_like(g, i32, 5, 5, &out), CLT_ERR_INVALID_ARGUMENT, "from=5 >= to=5");
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(i32);
    clt_tensor_free(bad);
    clt_tensor_free(mt);
    clt_tensor_free(st);
    clt_generator_free(g);
}

Test(random, sampler_errors_leave_the_tensor)
{
    clt_device *dev = get_device("cpu");
    clt_generator *g = NULL;
    CHECK(clt_generator_new(1, &g));
    clt_tensor *t = zeros_of(dev, CLT_FLOAT32, 8), *it = zeros_of(dev, CLT_INT64, 8);
    assert_error(clt_exponential_(t, g, -1), CLT_ERR_INVALID_ARGUMENT,
                 "exponential_ expects lambda >= 0.0, but found lambda=-1");
    assert_error(clt_geometric_(t, g, 1), CLT_ERR_INVALID_ARGUMENT,
                 "geometric_ expects p to be in (0, 1), but got p=1");
    assert_error(clt_log_normal_(t, g, 0, 0), CLT_ERR_INVALID_ARGUMENT,
                 "log_normal_ expects std > 0.0, but found std=0");
    assert_error(clt_cauchy_(it, g, 0, 1), CLT_ERR_INVALID_ARGUMENT, "not implemented for int64");
    assert_error(clt_exponential_(NULL, g, 1), CLT_ERR_NULL_ARGUMENT, NULL);
    CHECK(clt_set_requires_grad(t, 1));
    assert_error(clt_exponential_(t, g, 1), CLT_ERR_INVALID_ARGUMENT, "leaf");
    cr_assert_eq(clt_generator_offset(g), 0);
    float *v = read_all(t);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(v[i], 0.0f);
    free(v);
    /* geometric_ on integers, as torch */
    CHECK(clt_geometric_(it, g, 0.5));
    int64_t *iv = read_all(it);
    for (int i = 0; i < 8; i++)
        cr_assert(iv[i] >= 1);
    free(iv);
    clt_tensor_free(t);
    clt_tensor_free(it);
    clt_generator_free(g);
}
