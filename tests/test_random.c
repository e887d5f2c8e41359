/* test_random.c: Philox random numbers against a host Philox4x32-10 (checked
 * on Random123's known answers): exact bits for rand and randint, libm
 * Box-Muller within tolerance for randn, the same bits on two devices,
 * seeding, replay and offsets, statistics, and argument errors. */
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

/* Bits of every kind of draw from one seed on one device. */
static void draw_all(clt_device *dev, uint64_t seed, void **bufs, size_t *sizes, int *count)
{
    clt_generator *g = NULL;
    CHECK(clt_generator_new(seed, &g));
    clt_tensor *t[4] = {0};
    int64_t n = 4099;
    CHECK(clt_rand(g, dev, CLT_FLOAT32, 1, &n, &t[0]));
    CHECK(clt_randn(g, dev, CLT_FLOAT32, 1, &n, &t[1]));
    CHECK(clt_randint(g, dev, -1000, 1000, CLT_INT32, 1, &n, &t[2]));
    *count = 3;
    if (clt_device_supports_dtype(dev, CLT_FLOAT64)) {
        CHECK(clt_randn(g, dev, CLT_FLOAT64, 1, &n, &t[3]));
        *count = 4;
    }
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
    void *a[4], *b[4];
    size_t sa[4], sb[4];
    int na, nb;
    draw_all(d0, 42, a, sa, &na);
    draw_all(d1, 42, b, sb, &nb);
    int n = na < nb ? na : nb;
    for (int k = 0; k < n; k++) {
        cr_assert_eq(sa[k], sb[k]);
        cr_assert(memcmp(a[k], b[k], sa[k]) == 0, "draw %d differs between %s and %s", k,
                  clt_device_label(d0), clt_device_label(d1));
    }
    void *c[4];
    size_t sc[4];
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
