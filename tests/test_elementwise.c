/* test_elementwise.c: every elementwise op against host references over many
 * shapes (empty, one element, sizes no multiple of any chunk, broadcast
 * corners, 0-d), special values, integer and bool dtypes, non-contiguous
 * inputs, both launch variants, and bad input. */
#include <stdint.h>
#include <stdio.h>

#include "helpers.h"
#include "internal.h"

/* ---- host side: values as doubles, converted by the test itself ---------------- */

static size_t esize(clt_dtype dt)
{
    switch (dt) {
    case CLT_FLOAT64: case CLT_INT64: return 8;
    case CLT_FLOAT32: case CLT_INT32: return 4;
    case CLT_FLOAT16: return 2;
    default: return 1;
    }
}

static void put(clt_dtype dt, double v, unsigned char *p)
{
    switch (dt) {
    case CLT_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case CLT_FLOAT64: memcpy(p, &v, 8); break;
    case CLT_INT32: { int32_t x = (int32_t)(int64_t)v; memcpy(p, &x, 4); break; }
    case CLT_INT64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case CLT_UINT8: *p = (uint8_t)(int64_t)v; break;
    case CLT_BOOL: *p = v != 0; break;
    default: cr_assert_fail("dtype %d not used here", (int)dt);
    }
}

static double get(clt_dtype dt, const unsigned char *p)
{
    switch (dt) {
    case CLT_FLOAT32: { float x; memcpy(&x, p, 4); return x; }
    case CLT_FLOAT64: { double x; memcpy(&x, p, 8); return x; }
    case CLT_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case CLT_INT64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case CLT_UINT8: return *p;
    case CLT_BOOL: cr_assert(*p <= 1, "bool byte %u", *p); return *p;
    default: cr_assert_fail("dtype %d not used here", (int)dt);
    }
    return 0;
}

static int64_t count(int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= s[d];
    return n;
}

static clt_tensor *make(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape,
                        const double *v)
{
    int64_t n = count(nd, shape);
    unsigned char *buf = malloc((size_t)(n ? n : 1) * esize(dt));
    for (int64_t i = 0; i < n; i++)
        put(dt, v[i], buf + (size_t)i * esize(dt));
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, dt, nd, shape, buf, &t));
    free(buf);
    return t;
}

/* The tensor's values (row-major) as a new array of doubles. */
static double *values(const clt_tensor *t)
{
    size_t n = (size_t)clt_tensor_numel(t), es = esize(clt_tensor_dtype(t));
    unsigned char *buf = malloc((n ? n : 1) * es);
    double *v = malloc((n ? n : 1) * sizeof *v);
    CHECK(clt_tensor_read(t, buf, n * es));
    for (size_t i = 0; i < n; i++)
        v[i] = get(clt_tensor_dtype(t), buf + i * es);
    free(buf);
    return v;
}

/* Random values in [-10, 10] with NaN, infinities and signed zeros first. */
static double *random_values(int64_t n, unsigned seed, bool specials)
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    fill_random(f, (size_t)n, seed);
    for (int64_t i = 0; i < n; i++)
        v[i] = f[i];
    static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -1.0, 0.5};
    if (specials)
        for (int64_t i = 0; i < n && i < 8; i++)
            v[i] = sp[(i + seed) % 8];
    free(f);
    return v;
}

/* Offset in a contiguous input of shape (nin, sin) of output element i of
 * shape (nout, sout) under broadcasting. */
static int64_t bcast_off(int nin, const int64_t *sin, int nout, const int64_t *sout, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int d = nout - 1, di = nin - 1; d >= 0; d--, di--) {
        int64_t coord = i % sout[d];
        i /= sout[d];
        if (di >= 0) {
            if (sin[di] != 1)
                off += coord * stride;
            stride *= sin[di];
        }
    }
    return off;
}

/* ---- binary ops ---------------------------------------------------------------- */

typedef enum { ADD, SUB, MUL, DIV, POW, MAX, MIN, EQ, NE, LT, LE, GT, GE, NBIN } binop;

typedef clt_status (*tt_fn)(const clt_tensor *, const clt_tensor *, clt_tensor **);
typedef clt_status (*ts_fn)(const clt_tensor *, double, clt_tensor **);

static const struct {
    const char *name;
    tt_fn tt;
    ts_fn ts;
} bin[NBIN] = {
    {"add", clt_add, clt_add_scalar},   {"sub", clt_sub, clt_sub_scalar},
    {"mul", clt_mul, clt_mul_scalar},   {"div", clt_div, clt_div_scalar},
    {"pow", clt_pow, clt_pow_scalar},   {"maximum", clt_maximum, NULL},
    {"minimum", clt_minimum, NULL},     {"eq", clt_eq, clt_eq_scalar},
    {"ne", clt_ne, clt_ne_scalar},      {"lt", clt_lt, clt_lt_scalar},
    {"le", clt_le, clt_le_scalar},      {"gt", clt_gt, clt_gt_scalar},
    {"ge", clt_ge, clt_ge_scalar},
};

static bool is_compare(binop op)
{
    return op >= EQ;
}

static double ref_float(binop op, double a, double b, bool f32)
{
    double r;
    switch (op) {
    case ADD: r = a + b; break;
    case SUB: r = a - b; break;
    case MUL: r = a * b; break;
    case DIV: r = a / b; break;
    case POW: r = pow(a, b); break;
    case MAX: r = isnan(a) || isnan(b) ? NAN : fmax(a, b); break;
    case MIN: r = isnan(a) || isnan(b) ? NAN : fmin(a, b); break;
    case EQ: return a == b;
    case NE: return a != b;
    case LT: return a < b;
    case LE: return a <= b;
    case GT: return a > b;
    case GE: return a >= b;
    default: r = 0;
    }
    return f32 ? (double)(float)r : r;
}

/* torch.pow(t, s) of a floating tensor: s = 0.5, -0.5, -1, 2, 3 and -2 go
 * to sqrt, 1 / sqrt, 1 / x, x * x, x * x * x and 1 / (x * x), which differ
 * from pow at the edges (sqrt(-inf) is NaN). */
static double ref_pow_scalar(double a, double s, bool f32)
{
    double r = s == 0.5    ? sqrt(a)
               : s == -0.5 ? 1.0 / sqrt(a)
               : s == -1.0 ? 1.0 / a
               : s == 2.0  ? a * a
               : s == 3.0  ? a * a * a
               : s == -2.0 ? (f32 ? 1.0f / (float)(a * a) : 1.0 / (a * a))
                           : pow(a, s);
    return f32 ? (double)(float)r : r;
}

/* Integer ops wrap modulo 2^bits as PyTorch's do. */
static double wrap(clt_dtype dt, uint64_t v)
{
    switch (dt) {
    case CLT_INT32: return (int32_t)(uint32_t)v;
    case CLT_INT64: return (double)(int64_t)v;
    case CLT_UINT8: return (uint8_t)v;
    case CLT_BOOL: return v != 0;
    default: return 0;
    }
}

static double ref_int(binop op, clt_dtype dt, int64_t a, int64_t b)
{
    switch (op) {
    case ADD: return wrap(dt, (uint64_t)a + (uint64_t)b);
    case SUB: return wrap(dt, (uint64_t)a - (uint64_t)b);
    case MUL: return wrap(dt, (uint64_t)a * (uint64_t)b);
    case DIV: return (float)((float)a / (float)b);
    case POW: {
        if (b < 0)
            return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
        uint64_t r = 1;
        for (int64_t k = 0; k < b; k++)
            r *= (uint64_t)a;
        return wrap(dt, r);
    }
    case MAX: return a > b ? a : b;
    case MIN: return a < b ? a : b;
    case EQ: return a == b;
    case NE: return a != b;
    case LT: return a < b;
    case LE: return a <= b;
    case GT: return a > b;
    case GE: return a >= b;
    default: return 0;
    }
}

static double tolerance(binop op)
{
    return op == POW ? 1e-5 : op == DIV ? 3e-7 : 0;
}

typedef struct {
    int nd;
    int64_t s[4];
} shp;

/* Runs every float32 binary op on a (shape sa) and b (shape sb). */
static void check_float_shapes(clt_device *dev, shp sa, shp sb, const int64_t *want_shape,
                               int want_nd)
{
    int64_t na = count(sa.nd, sa.s), nb = count(sb.nd, sb.s), no = count(want_nd, want_shape);
    double *ha = random_values(na, 1, true), *hb = random_values(nb, 4, true);
    clt_tensor *a = make(dev, CLT_FLOAT32, sa.nd, sa.s, ha);
    clt_tensor *b = make(dev, CLT_FLOAT32, sb.nd, sb.s, hb);
    for (int op = 0; op < NBIN; op++) {
        clt_tensor *r = NULL;
        CHECK(bin[op].tt(a, b, &r));
        assert_shape(r, want_nd, want_shape);
        cr_assert_eq(clt_tensor_dtype(r), is_compare(op) ? CLT_BOOL : CLT_FLOAT32, "%s",
                     bin[op].name);
        double *got = values(r);
        for (int64_t i = 0; i < no; i++) {
            double x = ha[bcast_off(sa.nd, sa.s, want_nd, want_shape, i)];
            double y = hb[bcast_off(sb.nd, sb.s, want_nd, want_shape, i)];
            double want = ref_float(op, x, y, true);
            cr_assert(close_enough(got[i], want, tolerance(op), 0),
                      "%s(%g, %g) element %lld of %lld: got %.9g, want %.9g", bin[op].name, x, y,
                      (long long)i, (long long)no, got[i], want);
        }
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    clt_tensor_free(b);
    free(ha);
    free(hb);
}

static void binary_float_suite(void)
{
    clt_device *dev = get_device("cpu");
    static const struct {
        shp a, b;
        int nd;
        int64_t out[4];
    } cases[] = {
        {{1, {0}}, {1, {0}}, 1, {0}},
        {{0, {0}}, {0, {0}}, 0, {0}},
        {{1, {1}}, {1, {1}}, 1, {1}},
        {{1, {1031}}, {1, {1031}}, 1, {1031}},
        {{1, {100003}}, {1, {100003}}, 1, {100003}},
        {{2, {3, 1}}, {2, {1, 4}}, 2, {3, 4}},
        {{1, {5}}, {2, {2, 5}}, 2, {2, 5}},
        {{0, {0}}, {2, {2, 3}}, 2, {2, 3}},
        {{3, {2, 3, 4}}, {0, {0}}, 3, {2, 3, 4}},
        {{2, {0, 3}}, {2, {1, 3}}, 2, {0, 3}},
        {{3, {4, 1, 7}}, {2, {5, 1}}, 3, {4, 5, 7}},
        {{1, {1}}, {2, {17, 33}}, 2, {17, 33}},
        /* many chunks, most starting in the middle of a row */
        {{3, {67, 1, 129}}, {2, {53, 1}}, 3, {67, 53, 129}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        check_float_shapes(dev, cases[c].a, cases[c].b, cases[c].out, cases[c].nd);
}

Test(elementwise, binary_float32_shapes_and_special_values)
{
    binary_float_suite();
}

/* The same on the one-element-per-work-item path that GPUs take, by letting
 * the CPU device pass for a GPU in this (forked) test process. */
Test(elementwise, binary_float32_gpu_variant)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    binary_float_suite();
}

static void check_int_dtype(clt_dtype dt)
{
    clt_device *dev = get_device("cpu");
    enum { N = 1037 };
    double ha[N], hb[N];
    bool is_signed = dt == CLT_INT32 || dt == CLT_INT64;
    unsigned seed = 7;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        int64_t lo = is_signed ? -300 : 0, span = dt == CLT_BOOL ? 2 : 600;
        ha[i] = (double)(lo + (int64_t)((seed >> 8) % (uint64_t)span));
        seed = seed * 1103515245u + 12345u;
        hb[i] = (double)((int64_t)((seed >> 8) % (uint64_t)span) + (is_signed ? -300 : 0));
        if (dt == CLT_UINT8) {
            ha[i] = (double)((int64_t)ha[i] & 255);
            hb[i] = (double)((int64_t)hb[i] & 255);
        }
    }
    ha[0] = dt == CLT_INT32 ? 2147483647.0 : ha[0];
    hb[0] = dt == CLT_INT32 ? 1.0 : hb[0];
    int64_t n = N;
    clt_tensor *a = make(dev, dt, 1, &n, ha), *b = make(dev, dt, 1, &n, hb);
    for (int op = 0; op < NBIN; op++) {
        if (dt == CLT_BOOL && (op == SUB || op == POW))
            continue; /* refused, as PyTorch does (invalid_dtypes_and_arguments) */
        /* small exponents keep pow meaningful; negative ones take the
         * integer rule */
        double hp[N];
        clt_tensor *e = NULL, *r = NULL;
        if (op == POW) {
            for (int i = 0; i < N; i++)
                hp[i] = is_signed ? (double)((int64_t)hb[i] % 7) : (double)((int64_t)hb[i] % 5);
            e = make(dev, dt, 1, &n, hp);
        }
        CHECK(bin[op].tt(a, e ? e : b, &r));
        clt_dtype want_dt = is_compare(op) ? CLT_BOOL : op == DIV ? CLT_FLOAT32 : dt;
        cr_assert_eq(clt_tensor_dtype(r), want_dt, "%s %s", bin[op].name, clt_dtype_name(dt));
        double *got = values(r);
        for (int i = 0; i < N; i++) {
            double y = e ? hp[i] : hb[i];
            if (op == DIV && y == 0)
                continue;
            double want = ref_int(op, dt, (int64_t)ha[i], (int64_t)y);
            cr_assert(close_enough(got[i], want, op == DIV ? 3e-7 : 0, 0),
                      "%s %s(%g, %g): got %.17g, want %.17g", clt_dtype_name(dt), bin[op].name,
                      ha[i], y, got[i], want);
        }
        free(got);
        clt_tensor_free(r);
        clt_tensor_free(e);
    }
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(elementwise, binary_int32)
{
    check_int_dtype(CLT_INT32);
}

Test(elementwise, binary_int64)
{
    check_int_dtype(CLT_INT64);
}

Test(elementwise, binary_uint8_wraps)
{
    check_int_dtype(CLT_UINT8);
    clt_device *dev = get_device("cpu");
    double ha[4] = {250, 3, 0, 16}, hb[4] = {10, 5, 1, 16};
    int64_t n = 4;
    clt_tensor *a = make(dev, CLT_UINT8, 1, &n, ha), *b = make(dev, CLT_UINT8, 1, &n, hb);
    clt_tensor *s = NULL, *d = NULL, *m = NULL;
    CHECK(clt_add(a, b, &s));
    CHECK(clt_sub(a, b, &d));
    CHECK(clt_mul(a, b, &m));
    double *gs = values(s), *gd = values(d), *gm = values(m);
    cr_assert_eq(gs[0], 4);   /* 260 mod 256 */
    cr_assert_eq(gd[1], 254); /* -2 mod 256 */
    cr_assert_eq(gd[2], 255);
    cr_assert_eq(gm[3], 0);   /* 256 mod 256 */
    cr_assert_eq(gm[0], (2500 % 256));
    free(gs);
    free(gd);
    free(gm);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(s);
    clt_tensor_free(d);
    clt_tensor_free(m);
}

Test(elementwise, binary_bool)
{
    check_int_dtype(CLT_BOOL);
}

Test(elementwise, mixed_dtypes_promote)
{
    clt_device *dev = get_device("cpu");
    double hi[5] = {-3, 0, 7, 100, 5}, hf[5] = {0.5, -1.25, 2, 1e-3, -7.5}, hb[5] = {1, 0, 1, 1, 0};
    int64_t n = 5;
    clt_tensor *i32 = make(dev, CLT_INT32, 1, &n, hi), *f32 = make(dev, CLT_FLOAT32, 1, &n, hf);
    clt_tensor *b = make(dev, CLT_BOOL, 1, &n, hb), *u8 = make(dev, CLT_UINT8, 1, &n, hb);
    clt_tensor *r = NULL;
    CHECK(clt_add(i32, f32, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    double *g = values(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g[i], (double)((float)hi[i] + (float)hf[i]));
    free(g);
    clt_tensor_free(r);
    CHECK(clt_mul(b, i32, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    g = values(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g[i], hb[i] * hi[i]);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_sub(u8, i32, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    g = values(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g[i], hb[i] - hi[i]);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_lt(i32, f32, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
    g = values(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g[i], (double)((float)hi[i] < (float)hf[i]));
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(i32);
    clt_tensor_free(f32);
    clt_tensor_free(b);
    clt_tensor_free(u8);
}

/* ---- remainder, fmod, floor_divide --------------------------------------------- */

typedef enum { REM, FMOD, FDIV, NMOD } modop;

static const struct {
    const char *name;
    tt_fn tt;
    ts_fn ts;
} mod[NMOD] = {
    {"remainder", clt_remainder, clt_remainder_scalar},
    {"fmod", clt_fmod, clt_fmod_scalar},
    {"floor_divide", clt_floor_divide, clt_floor_divide_scalar},
};

/* PyTorch 1.13's CPU results for a op b, written down from
 * torch.remainder, torch.fmod and torch.floor_divide on these float64
 * inputs (float32 gives the same, but for 1e30 % 3: float32's 1e30 is
 * 1000000015047466219876688855040, a multiple of 3, so 0, and 1e30 // 3
 * 3.3333334e29). */
static const double MOD_A[] = {5, -5, 5, -5, 0, -0.0, 5, -5, INFINITY, -INFINITY, NAN, 5, 0,
                               1, 7.5, -7.5, 1e30, 3, 0.5, -0.5, -0.0, 1, -1};
static const double MOD_B[] = {3, 3, -3, -3, 3, 3, 0, 0, 3, 3, 3, NAN, 0,
                               INFINITY, 2, -INFINITY, 3, -INFINITY, -INFINITY, INFINITY, -3,
                               -INFINITY, INFINITY};
static const double MOD_WANT[NMOD][23] = {
    {2, 1, -1, -2, 0, -0.0, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
     1, 1.5, -7.5, 1, -INFINITY, -INFINITY, INFINITY, -0.0, -INFINITY, INFINITY},
    {2, -2, 2, -2, 0, -0.0, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
     1, 1.5, -7.5, 1, 3, 0.5, -0.5, -0.0, 1, -1},
    {1, -2, -2, 1, 0, -0.0, INFINITY, -INFINITY, NAN, NAN, NAN, NAN, NAN,
     0, 3, 0, 3.333333333333333e+29, -1, -1, -1, 0, -1, -1},
};

/* Equal, NaN to NaN, and zeros of the same sign. */
static bool same_value(double got, double want)
{
    if (isnan(want))
        return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

static void check_modulo_int(clt_dtype dt);

static void modulo_edge_cases(clt_device *dev)
{
    int64_t n = sizeof MOD_A / sizeof MOD_A[0];
    for (int f32 = 0; f32 < 2; f32++) {
        clt_dtype dt = f32 ? CLT_FLOAT32 : CLT_FLOAT64;
        clt_tensor *a = make(dev, dt, 1, &n, MOD_A), *b = make(dev, dt, 1, &n, MOD_B);
        for (int op = 0; op < NMOD; op++) {
            clt_tensor *r = NULL;
            CHECK(mod[op].tt(a, b, &r));
            cr_assert_eq(clt_tensor_dtype(r), dt);
            double *got = values(r);
            for (int64_t i = 0; i < n; i++) {
                double want = MOD_WANT[op][i];
                if (f32 && i == 16)
                    want = op == FDIV ? (double)3.3333334e29f : 0;
                else if (f32)
                    want = (float)want;
                cr_assert(same_value(got[i], want), "%s %s(%g, %g): got %.17g, want %.17g",
                          clt_dtype_name(dt), mod[op].name, MOD_A[i], MOD_B[i], got[i], want);
            }
            free(got);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
}

Test(elementwise, modulo_edge_cases_as_torch)
{
    modulo_edge_cases(get_device("cpu"));
}

Test(elementwise, modulo_edge_cases_gpu_variant)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    modulo_edge_cases(dev);
    check_modulo_int(CLT_INT64);
}

/* The reference, in the precision of the dtype (float or double), from the
 * definitions: fmod is exact in either; remainder adds b where the signs of
 * fmod and b differ; floor_divide is PyTorch's div_floor formula. */
#define REF_MOD(T, FLOOR, FMOD_, op, x_, y_)                                      \
    do {                                                                          \
        T a = (T)(x_), b = (T)(y_), m = FMOD_(a, b);                              \
        if (op == FMOD) {                                                         \
            r = m;                                                                \
        } else if (op == REM) {                                                   \
            r = m != 0 && (b < 0) != (m < 0) ? (T)(m + b) : m;                    \
        } else if (b == 0) {                                                      \
            r = (T)(a / b);                                                       \
        } else {                                                                  \
            T d = (T)((T)(a - m) / b);                                            \
            if (m != 0 && (b < 0) != (m < 0))                                     \
                d = (T)(d - 1);                                                   \
            if (d == 0) {                                                         \
                r = copysign(0.0, (T)(a / b));                                    \
            } else {                                                              \
                T fl = FLOOR(d);                                                  \
                r = (T)(d - fl) > (T)0.5 ? (T)(fl + 1) : fl;                      \
            }                                                                     \
        }                                                                         \
    } while (0)

static double ref_mod_float(modop op, double x, double y, bool f32)
{
    double r = 0;
    if (f32)
        REF_MOD(float, floorf, fmodf, op, x, y);
    else
        REF_MOD(double, floor, fmod, op, x, y);
    return r;
}

/* Python's //, % and C's fmod on int64 values (no zero divisor). */
static int64_t ref_mod_int(modop op, int64_t a, int64_t b)
{
    int64_t q = a / b, m = a % b;
    bool adjust = m != 0 && (m < 0) != (b < 0);
    return op == FMOD ? m : op == REM ? (adjust ? m + b : m) : (adjust ? q - 1 : q);
}

Test(elementwise, modulo_float_broadcast_against_reference)
{
    clt_device *dev = get_device("cpu");
    static const struct {
        shp a, b;
        int nd;
        int64_t out[4];
    } cases[] = {
        {{1, {1031}}, {1, {1031}}, 1, {1031}},
        {{2, {37, 1}}, {1, {41}}, 2, {37, 41}},
        {{3, {3, 1, 65}}, {0, {0}}, 3, {3, 1, 65}},
        {{1, {0}}, {1, {1}}, 1, {0}},
    };
    for (int f32 = 0; f32 < 2; f32++) {
        clt_dtype dt = f32 ? CLT_FLOAT32 : CLT_FLOAT64;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            shp sa = cases[c].a, sb = cases[c].b;
            int64_t na = count(sa.nd, sa.s), nb = count(sb.nd, sb.s);
            int64_t no = count(cases[c].nd, cases[c].out);
            double *ha = random_values(na, 31, true), *hb = random_values(nb, 32, true);
            for (int64_t i = 0; i < na; i++)
                ha[i] *= 37; /* quotients up to a few hundred */
            clt_tensor *a = make(dev, dt, sa.nd, sa.s, ha), *b = make(dev, dt, sb.nd, sb.s, hb);
            for (int op = 0; op < NMOD; op++) {
                clt_tensor *r = NULL;
                CHECK(mod[op].tt(a, b, &r));
                assert_shape(r, cases[c].nd, cases[c].out);
                double *got = values(r);
                for (int64_t i = 0; i < no; i++) {
                    double x = ha[bcast_off(sa.nd, sa.s, cases[c].nd, cases[c].out, i)];
                    double y = hb[bcast_off(sb.nd, sb.s, cases[c].nd, cases[c].out, i)];
                    double want = ref_mod_float(op, x, y, f32);
                    cr_assert(same_value(got[i], want), "%s %s(%.9g, %.9g): got %.17g, want %.17g",
                              clt_dtype_name(dt), mod[op].name, x, y, got[i], want);
                    /* floor_divide is floor(a / b) away from rounding, and
                     * a - b * floor_divide(a, b) the remainder */
                    if (op == FDIV && isfinite(want) && y != 0 && fabs(x / y) < 1e6 &&
                        fabs(x / y - nearbyint(x / y)) > 1e-3)
                        cr_assert_eq(got[i], floor(x / y), "%g // %g", x, y);
                }
                free(got);
                clt_tensor_free(r);
            }
            clt_tensor_free(a);
            clt_tensor_free(b);
            free(ha);
            free(hb);
        }
    }
}

/* Quotients from 2^-60 to 2^60 and dividends a ulp away from a multiple
 * of the divisor (where a / b rounds to an integer): the kernels' exact
 * fmod against the C library's, on the vector and the scalar paths. */
Test(elementwise, modulo_float_wide_range)
{
    clt_device *dev = get_device("cpu");
    enum { N = 4099 };
    static double ha[N], hb[N];
    unsigned seed = 5;
    for (int f32 = 0; f32 < 2; f32++) {
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            double ma = 1 + (seed >> 8) / 16777216.0, eb;
            seed = seed * 1103515245u + 12345u;
            double mb = 1 + (seed >> 8) / 16777216.0;
            seed = seed * 1103515245u + 12345u;
            eb = (double)((int)((seed >> 8) % 41u) - 20);
            hb[i] = ldexp(mb, (int)eb) * ((seed >> 4) & 1 ? -1 : 1);
            seed = seed * 1103515245u + 12345u;
            if (i % 3 == 0) { /* k * b, one ulp either side */
                double k = (double)((seed >> 8) % 1000u + 1), p = k * hb[i];
                p = f32 ? (double)(float)p : p;
                ha[i] = f32 ? (double)nextafterf((float)p, (seed >> 4) & 1 ? INFINITY : 0)
                            : nextafter(p, (seed >> 4) & 1 ? INFINITY : 0);
            } else {
                ha[i] = ldexp(ma, (int)eb + (int)((seed >> 8) % 121u) - 60) *
                        ((seed >> 5) & 1 ? -1 : 1);
            }
        }
        clt_dtype dt = f32 ? CLT_FLOAT32 : CLT_FLOAT64;
        int64_t n = N;
        clt_tensor *a = make(dev, dt, 1, &n, ha), *b = make(dev, dt, 1, &n, hb);
        for (int op = 0; op < NMOD; op++) {
            clt_tensor *r = NULL;
            CHECK(mod[op].tt(a, b, &r));
            double *got = values(r);
            for (int i = 0; i < N; i++) {
                double x = f32 ? (double)(float)ha[i] : ha[i], y = f32 ? (double)(float)hb[i] : hb[i];
                double want = ref_mod_float(op, x, y, f32);
                cr_assert(same_value(got[i], want), "%s %s(%a, %a): got %a, want %a",
                          clt_dtype_name(dt), mod[op].name, x, y, got[i], want);
            }
            free(got);
            clt_tensor_free(r);
        }
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
}

static void check_modulo_int(clt_dtype dt)
{
    clt_device *dev = get_device("cpu");
    enum { N = 1037 };
    double ha[N], hb[N];
    bool is_signed = dt != CLT_UINT8;
    unsigned seed = 11;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        ha[i] = (double)((int64_t)((seed >> 8) % 2001u) - (is_signed ? 1000 : 0));
        seed = seed * 1103515245u + 12345u;
        hb[i] = (double)((int64_t)((seed >> 8) % 41u) - (is_signed ? 20 : 0));
        if (!is_signed) {
            ha[i] = (double)((int64_t)ha[i] & 255);
            hb[i] = (double)((int64_t)hb[i] & 255);
        }
        if (hb[i] == 0)
            hb[i] = is_signed ? -1 : 7;
    }
    /* the minimum by -1: the quotient wraps (PyTorch's CPU kernel traps) */
    double lo = dt == CLT_INT32 ? -2147483648.0 : dt == CLT_INT64 ? -9223372036854775808.0 : 0;
    ha[0] = lo;
    hb[0] = is_signed ? -1 : 255;
    ha[1] = lo;
    hb[1] = is_signed ? 7 : 255;
    int64_t n = N;
    clt_tensor *a = make(dev, dt, 1, &n, ha), *b = make(dev, dt, 1, &n, hb);
    for (int op = 0; op < NMOD; op++) {
        clt_tensor *r = NULL;
        CHECK(mod[op].tt(a, b, &r));
        cr_assert_eq(clt_tensor_dtype(r), dt);
        size_t es = esize(dt);
        unsigned char *buf = malloc(N * es);
        CHECK(clt_tensor_read(r, buf, N * es));
        for (int i = 0; i < N; i++) {
            int64_t x = (int64_t)ha[i], y = (int64_t)hb[i], want, got;
            if (dt == CLT_INT64) {
                memcpy(&got, buf + i * es, 8);
                want = y == -1 ? (op == FDIV ? (int64_t)(0 - (uint64_t)x) : 0)
                               : ref_mod_int(op, x, y);
            } else {
                got = dt == CLT_INT32 ? *(int32_t *)(void *)(buf + i * es) : buf[i];
                want = ref_mod_int(op, x, y);
                if (dt == CLT_INT32)
                    want = (int32_t)(uint32_t)(uint64_t)want;
            }
            cr_assert_eq(got, want, "%s %s(%lld, %lld): got %lld, want %lld", clt_dtype_name(dt),
                         mod[op].name, (long long)x, (long long)y, (long long)got,
                         (long long)want);
        }
        free(buf);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    clt_tensor_free(b);
}

Test(elementwise, modulo_int32)
{
    check_modulo_int(CLT_INT32);
}

Test(elementwise, modulo_int64)
{
    check_modulo_int(CLT_INT64);
}

Test(elementwise, modulo_uint8)
{
    check_modulo_int(CLT_UINT8);
}

/* Result dtypes as torch.result_type, values as PyTorch gives them. */
Test(elementwise, modulo_mixed_dtypes_and_scalars)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    double hi[4] = {7, -7, 5, -1}, hf[4] = {2.5, 2.5, -0.5, 4}, hb[4] = {1, 0, 1, 1};
    double hu[4] = {7, 250, 5, 1};
    clt_tensor *i32 = make(dev, CLT_INT32, 1, &n, hi), *f32 = make(dev, CLT_FLOAT32, 1, &n, hf);
    clt_tensor *f64 = make(dev, CLT_FLOAT64, 1, &n, hf), *i64 = make(dev, CLT_INT64, 1, &n, hi);
    clt_tensor *b = make(dev, CLT_BOOL, 1, &n, hb), *u8 = make(dev, CLT_UINT8, 1, &n, hu);
    clt_tensor *ones = NULL, *r = NULL;
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n, &ones));
    static const struct {
        int a, b; /* 0 i32, 1 f32, 2 f64, 3 i64, 4 bool, 5 u8, 6 bool ones */
        modop op;
        clt_dtype dt;
        double want[4];
    } cases[] = {
        /* torch.remainder(int32 [7, -7, 5, -1], float32 [2.5, 2.5, -0.5, 4]) */
        {0, 1, REM, CLT_FLOAT32, {2, 0.5, 0, 3}},
        {0, 1, FMOD, CLT_FLOAT32, {2, -2, 0, -1}},
        {0, 1, FDIV, CLT_FLOAT32, {2, -3, -10, -1}},
        {1, 3, REM, CLT_FLOAT32, {2.5, -4.5, 4.5, 0}},
        {2, 0, FDIV, CLT_FLOAT64, {0, -1, -1, -4}},
        {0, 5, REM, CLT_INT32, {0, 243, 0, 0}},
        {5, 0, FDIV, CLT_INT32, {1, -36, 1, -1}},
        {3, 0, FMOD, CLT_INT64, {0, 0, 0, 0}},
        {4, 0, REM, CLT_INT32, {1, 0, 1, 0}},
        {0, 6, FDIV, CLT_INT32, {7, -7, 5, -1}},
        {5, 6, REM, CLT_UINT8, {0, 0, 0, 0}},
        {4, 1, FMOD, CLT_FLOAT32, {1, 0, 0, 1}},
    };
    clt_tensor *in[7] = {i32, f32, f64, i64, b, u8, ones};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK(mod[cases[c].op].tt(in[cases[c].a], in[cases[c].b], &r));
        cr_assert_eq(clt_tensor_dtype(r), cases[c].dt, "case %zu: %s", c,
                     clt_dtype_name(clt_tensor_dtype(r)));
        double *g = values(r);
        for (int i = 0; i < 4; i++)
            cr_assert(same_value(g[i], cases[c].want[i]), "case %zu element %d: got %g, want %g",
                      c, i, g[i], cases[c].want[i]);
        free(g);
        clt_tensor_free(r);
    }
    /* a 0-d divisor */
    int64_t one = 1;
    clt_tensor *z = make(dev, CLT_INT32, 0, &one, (double[]){-3});
    CHECK(clt_remainder(i32, z, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    double *g = values(r);
    double want0[4] = {-2, -1, -1, -1};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], want0[i]);
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(z);

    /* scalars: torch.remainder(t, s) etc. */
    static const struct {
        int a;
        double s;
        modop op;
        clt_dtype dt;
        double want[4];
    } sc[] = {
        {0, 3, REM, CLT_INT32, {1, 2, 2, 2}},
        {0, -3, FMOD, CLT_INT32, {1, -1, 2, -1}},
        {0, 3, FDIV, CLT_INT32, {2, -3, 1, -1}},
        {0, 2.5, REM, CLT_FLOAT32, {2, 0.5, 0, 1.5}},
        {0, -2.5, FDIV, CLT_FLOAT32, {-3, 2, -2, 0}},
        {0, 4294967299.0, REM, CLT_INT32, {1, 2, 2, 2}}, /* 2^32 + 3 wraps to 3 */
        {5, -1, REM, CLT_UINT8, {7, 250, 5, 1}},          /* -1 is 255 */
        {5, -3, FDIV, CLT_UINT8, {0, 0, 0, 0}},           /* 253 */
        {4, 2, REM, CLT_INT64, {1, 0, 1, 1}},
        {4, 0.5, FMOD, CLT_FLOAT32, {0, 0, 0, 0}},
        {1, 0, REM, CLT_FLOAT32, {NAN, NAN, NAN, NAN}},
        {1, -0.0, FDIV, CLT_FLOAT32, {-INFINITY, -INFINITY, INFINITY, -INFINITY}},
        {2, INFINITY, REM, CLT_FLOAT64, {2.5, 2.5, INFINITY, 4}},
        {2, -INFINITY, FMOD, CLT_FLOAT64, {2.5, 2.5, -0.5, 4}},
    };
    for (size_t c = 0; c < sizeof sc / sizeof sc[0]; c++) {
        CHECK(mod[sc[c].op].ts(in[sc[c].a], sc[c].s, &r));
        cr_assert_eq(clt_tensor_dtype(r), sc[c].dt, "scalar case %zu: %s", c,
                     clt_dtype_name(clt_tensor_dtype(r)));
        g = values(r);
        for (int i = 0; i < 4; i++)
            cr_assert(same_value(g[i], sc[c].want[i]),
                      "scalar case %zu element %d: got %g, want %g", c, i, g[i], sc[c].want[i]);
        free(g);
        clt_tensor_free(r);
    }
    clt_tensor *all[7] = {i32, f32, f64, i64, b, u8, ones};
    for (int k = 0; k < 7; k++)
        clt_tensor_free(all[k]);
}

Test(elementwise, modulo_refusals)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    clt_tensor *b = NULL, *i = NULL, *u = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n, &b));
    CHECK(clt_ones(dev, CLT_INT32, 1, &n, &i));
    CHECK(clt_ones(dev, CLT_UINT8, 1, &n, &u));
    for (int op = 0; op < NMOD; op++) {
        r = (clt_tensor *)&r;
        assert_error(mod[op].tt(b, b, &r), CLT_ERR_DTYPE_MISMATCH, "not implemented for bool");
        cr_assert_null(r);
        cr_assert(strstr(clt_last_error(), mod[op].name), "%s", clt_last_error());
        /* a zero scalar divisor is known at once */
        static const struct {
            int u8;
            double s;
        } zeros[] = {{0, 0}, {0, -0.0}, {0, 4294967296.0}, {1, 256}, {1, 0}};
        for (size_t z = 0; z < sizeof zeros / sizeof zeros[0]; z++) {
            r = (clt_tensor *)&r;
            assert_error(mod[op].ts(zeros[z].u8 ? u : i, zeros[z].s, &r), CLT_ERR_ZERO_DIVISION,
                         "ZeroDivisionError");
            cr_assert_null(r);
        }
        char fn[64];
        snprintf(fn, sizeof fn, "clt_%s_scalar", mod[op].name);
        names_only(fn);
        r = (clt_tensor *)&r;
        cr_assert_eq(mod[op].tt(i, NULL, &r), CLT_ERR_NULL_ARGUMENT);
        cr_assert_null(r);
    }
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(b);
    clt_tensor_free(i);
    clt_tensor_free(u);
}

/* A zero in an integer divisor tensor is found by the kernel: the op
 * returns CLT_OK, and the thread's next wait on the device reports it. */
Test(elementwise, modulo_integer_zero_divisor_reported_at_sync)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 5;
    for (int op = 0; op < NMOD; op++) {
        for (int which = 0; which < 3; which++) {
            clt_dtype dt = which == 0 ? CLT_INT32 : which == 1 ? CLT_INT64 : CLT_BOOL;
            clt_tensor *a = make(dev, CLT_INT32, 1, &n, (double[]){7, -7, 9, 4, 3});
            clt_tensor *b = make(dev, dt, 1, &n, (double[]){2, 0, 1, 1, 0});
            clt_tensor *r = NULL;
            CHECK(mod[op].tt(a, b, &r));
            int64_t got[5];
            clt_dtype rt = dt == CLT_INT64 ? CLT_INT64 : CLT_INT32;
            cr_assert_eq(clt_tensor_dtype(r), rt);
            size_t bytes = (size_t)n * esize(rt);
            char want[64];
            snprintf(want, sizeof want, "clt_%s: ZeroDivisionError", mod[op].name);
            if (which == 2) {
                assert_error(clt_device_synchronize(dev), CLT_ERR_ZERO_DIVISION, want);
                cr_assert(strstr(clt_last_error(), "clt_device_synchronize"), "%s",
                          clt_last_error());
            } else {
                assert_error(clt_tensor_read(r, got, bytes), CLT_ERR_ZERO_DIVISION, want);
                cr_assert(strstr(clt_last_error(), "clt_tensor_read"), "%s", clt_last_error());
            }
            /* reported once; the other elements are computed, the bad one
             * holds 0 */
            double *g = values(r);
            /* 7 by 2 (by true for a bool divisor) */
            double ok1 = which == 2 ? (op == FDIV ? 7 : 0) : op == FDIV ? 3 : 1;
            cr_assert_eq(g[0], ok1, "%s: %g", mod[op].name, g[0]);
            cr_assert_eq(g[1], 0);
            cr_assert_eq(g[2], op == FDIV ? 9 : 0);
            free(g);
            CHECK(clt_device_synchronize(dev));
            clt_tensor_free(a);
            clt_tensor_free(b);
            clt_tensor_free(r);
        }
    }
    /* floats divide by zero as IEEE does: nothing is recorded */
    clt_tensor *a = make(dev, CLT_FLOAT32, 1, &n, (double[]){7, -7, 0, 4, 3});
    clt_tensor *b = make(dev, CLT_INT32, 1, &n, (double[]){0, 0, 0, 1, 2}), *r = NULL;
    CHECK(clt_floor_divide(a, b, &r));
    double *g = values(r);
    cr_assert(g[0] == INFINITY && g[1] == -INFINITY && isnan(g[2]) && g[3] == 4 && g[4] == 1);
    free(g);
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(r);
}

/* ---- division with a rounding mode ------------------------------------------------ */

/* torch.div(a, b, rounding_mode='trunc') on these inputs, float32 then
 * float64, written down from PyTorch 1.13. */
static const double TDIV_A[] = {5, -5, 5, -5, 0, -0.0, 7.5, -7.5, INFINITY, -INFINITY, NAN, 5,
                                0, -0.5, 1e30, 3, 1e-45, -1};
static const double TDIV_B[] = {3, 3, -3, -3, 3, 3, 2, 2, 3, 3, 3, 0, 0, 2, 3, INFINITY, 3,
                                -INFINITY};
static const double TDIV_WANT[2][18] = {
    {1, -1, -1, 1, 0, -0.0, 3, -3, INFINITY, -INFINITY, NAN, INFINITY, NAN, -0.0,
     3.333333383491554e+29, 0, 0, 0},
    {1, -1, -1, 1, 0, -0.0, 3, -3, INFINITY, -INFINITY, NAN, INFINITY, NAN, -0.0,
     3.333333333333333e+29, 0, 0, 0},
};

static clt_status div_trunc(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return clt_div_rounding(a, b, CLT_ROUNDING_TRUNC, out);
}

/* trunc(a / b) with the quotient rounded in the dtype's precision, against
 * torch's literals, random broadcast operands on both kernel paths, and
 * integers (C's division; the minimum by -1 wraps); floor mode gives
 * clt_floor_divide's bits and no mode clt_div's. */
Test(elementwise, div_rounding_against_reference)
{
    clt_device *dev = get_device("cpu");
    int64_t ne = 18;
    for (int f32 = 1; f32 >= 0; f32--) {
        clt_dtype dt = f32 ? CLT_FLOAT32 : CLT_FLOAT64;
        clt_tensor *a = make(dev, dt, 1, &ne, TDIV_A), *b = make(dev, dt, 1, &ne, TDIV_B), *r;
        CHECK(div_trunc(a, b, &r));
        cr_assert_eq(clt_tensor_dtype(r), dt);
        double *g = values(r);
        for (int i = 0; i < 18; i++)
            cr_assert(same_value(g[i], TDIV_WANT[!f32][i]), "%s trunc(%g / %g): got %.17g",
                      clt_dtype_name(dt), TDIV_A[i], TDIV_B[i], g[i]);
        free(g);
        clt_tensor_free(r);
        clt_tensor_free(a);
        clt_tensor_free(b);

        /* broadcast, long enough for the vector loop, random with specials */
        int64_t sa[2] = {37, 1}, sb[1] = {41}, so[2] = {37, 41};
        double *ha = random_values(37, 41, true), *hb = random_values(41, 42, true);
        for (int i = 0; i < 37; i++)
            ha[i] *= 1000;
        a = make(dev, dt, 2, sa, ha);
        b = make(dev, dt, 1, sb, hb);
        clt_tensor *fl, *fd, *no, *dv;
        CHECK(div_trunc(a, b, &r));
        CHECK(clt_div_rounding(a, b, CLT_ROUNDING_FLOOR, &fl));
        CHECK(clt_floor_divide(a, b, &fd));
        CHECK(clt_div_rounding(a, b, CLT_ROUNDING_NONE, &no));
        CHECK(clt_div(a, b, &dv));
        double *gt = values(r), *gf = values(fl), *gfd = values(fd), *gn = values(no),
               *gd = values(dv);
        for (int64_t i = 0; i < 37 * 41; i++) {
            double x = ha[bcast_off(2, sa, 2, so, i)], y = hb[bcast_off(1, sb, 2, so, i)];
            double want = f32 ? (double)truncf((float)x / (float)y) : trunc(x / y);
            cr_assert(same_value(gt[i], want), "%s trunc(%.9g / %.9g): got %.17g, want %.17g",
                      clt_dtype_name(dt), x, y, gt[i], want);
            cr_assert(same_value(gf[i], gfd[i]) && same_value(gn[i], gd[i]), "%lld",
                      (long long)i);
        }
        free(gt), free(gf), free(gfd), free(gn), free(gd), free(ha), free(hb);
        clt_tensor *all[] = {a, b, r, fl, fd, no, dv};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_free(all[k]);
    }

    clt_dtype idt[] = {CLT_INT32, CLT_INT64, CLT_UINT8};
    for (size_t d = 0; d < 3; d++) {
        enum { N = 517 };
        double ha[N], hb[N];
        bool is_signed = idt[d] != CLT_UINT8;
        unsigned seed = 3;
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245u + 12345u;
            ha[i] = is_signed ? (double)((int)((seed >> 8) % 2001u) - 1000) : (seed >> 8) % 256u;
            seed = seed * 1103515245u + 12345u;
            hb[i] = is_signed ? (double)((int)((seed >> 8) % 41u) - 20) : (seed >> 8) % 256u;
            if (hb[i] == 0)
                hb[i] = is_signed ? -1 : 9;
        }
        ha[0] = idt[d] == CLT_INT32 ? -2147483648.0 : idt[d] == CLT_INT64 ? -9223372036854775808.0
                                                                          : 255;
        hb[0] = is_signed ? -1 : 1;
        int64_t n = N;
        clt_tensor *a = make(dev, idt[d], 1, &n, ha), *b = make(dev, idt[d], 1, &n, hb), *r;
        CHECK(div_trunc(a, b, &r));
        cr_assert_eq(clt_tensor_dtype(r), idt[d]);
        double *g = values(r);
        for (int i = 0; i < N; i++) {
            int64_t x = (int64_t)ha[i], y = (int64_t)hb[i];
            double want = i == 0 ? ha[0] : (double)(x / y); /* the minimum by -1 wraps */
            cr_assert_eq(g[i], want, "%s %lld / %lld: got %g", clt_dtype_name(idt[d]),
                         (long long)x, (long long)y, g[i]);
        }
        free(g);
        clt_tensor_free(r);
        clt_tensor_free(a);
        clt_tensor_free(b);
    }

    /* mixed dtypes and scalars, from torch */
    int64_t n4 = 4;
    clt_tensor *i32 = make(dev, CLT_INT32, 1, &n4, (double[]){7, -7, 5, -1});
    clt_tensor *f32 = make(dev, CLT_FLOAT32, 1, &n4, (double[]){2.5, 2.5, -0.5, 4});
    clt_tensor *u8 = make(dev, CLT_UINT8, 1, &n4, (double[]){7, 250, 5, 1});
    clt_tensor *bl = make(dev, CLT_BOOL, 1, &n4, (double[]){1, 0, 1, 1}), *ones, *r;
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n4, &ones));
    static const struct {
        int a, b; /* 0 i32, 1 f32, 2 u8, 3 bool, 4 bool ones; b -1: the scalar s */
        double s;
        clt_dtype dt;
        double want[4];
    } cases[] = {
        {0, 1, 0, CLT_FLOAT32, {2, -2, -10, -0.0}},
        {0, 4, 0, CLT_INT32, {7, -7, 5, -1}},
        {0, -1, 3, CLT_INT32, {2, -2, 1, 0}},
        {2, -1, -3, CLT_UINT8, {0, 0, 0, 0}}, /* -3 is 253 */
        {0, -1, -2.5, CLT_FLOAT32, {-2, 2, -2, 0}},
        {3, -1, 2, CLT_INT64, {0, 0, 0, 0}},
    };
    clt_tensor *in[5] = {i32, f32, u8, bl, ones};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        if (cases[c].b < 0)
            CHECK(clt_div_scalar_rounding(in[cases[c].a], cases[c].s, CLT_ROUNDING_TRUNC, &r));
        else
            CHECK(div_trunc(in[cases[c].a], in[cases[c].b], &r));
        cr_assert_eq(clt_tensor_dtype(r), cases[c].dt, "case %zu: %s", c,
                     clt_dtype_name(clt_tensor_dtype(r)));
        double *g = values(r);
        for (int i = 0; i < 4; i++)
            cr_assert(same_value(g[i], cases[c].want[i]), "case %zu [%d]: got %g, want %g", c, i,
                      g[i], cases[c].want[i]);
        free(g);
        clt_tensor_free(r);
    }
    /* the scalar floor and true forms are clt_floor_divide_scalar's and clt_div_scalar's */
    clt_tensor *x, *y;
    for (int mode = 0; mode < 2; mode++) {
        CHECK(clt_div_scalar_rounding(f32, -0.75, mode ? CLT_ROUNDING_FLOOR : CLT_ROUNDING_NONE,
                                      &x));
        CHECK(mode ? clt_floor_divide_scalar(f32, -0.75, &y) : clt_div_scalar(f32, -0.75, &y));
        double *gx = values(x), *gy = values(y);
        for (int i = 0; i < 4; i++)
            cr_assert(same_value(gx[i], gy[i]));
        free(gx), free(gy);
        clt_tensor_free(x);
        clt_tensor_free(y);
    }
    for (int k = 0; k < 5; k++)
        clt_tensor_free(in[k]);
}

/* Refusals (a mode outside the enum, two bools, a zero integer divisor
 * named after clt_div_rounding at the next wait) and the gradients: zeros
 * for both inputs, DivBackward2 (DivBackward3 with a scalar), as torch. */
Test(elementwise, div_rounding_errors_and_gradients)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    clt_tensor *b = NULL, *i = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n, &b));
    CHECK(clt_ones(dev, CLT_INT32, 1, &n, &i));
    assert_error(clt_div_rounding(i, i, (clt_rounding_mode)3, &r), CLT_ERR_INVALID_ARGUMENT,
                 "clt_div_rounding: div expected rounding_mode to be one of");
    cr_assert_null(r);
    r = (clt_tensor *)&r;
    assert_error(clt_div_scalar_rounding(i, 2, (clt_rounding_mode)-1, &r),
                 CLT_ERR_INVALID_ARGUMENT, "but found -1");
    cr_assert_null(r);
    r = (clt_tensor *)&r;
    assert_error(clt_div_rounding(b, b, CLT_ROUNDING_TRUNC, &r), CLT_ERR_DTYPE_MISMATCH,
                 "clt_div_rounding: division with rounding mode trunc is not implemented "
                 "for bool tensors");
    cr_assert_null(r);
    r = (clt_tensor *)&r;
    assert_error(clt_div_scalar_rounding(i, 0, CLT_ROUNDING_TRUNC, &r), CLT_ERR_ZERO_DIVISION,
                 "ZeroDivisionError");
    cr_assert_null(r);
    names_only("clt_div_scalar_rounding");
    cr_assert_eq(clt_div_rounding(i, i, CLT_ROUNDING_TRUNC, NULL), CLT_ERR_NULL_ARGUMENT);

    clt_tensor *a = make(dev, CLT_INT32, 1, &n, (double[]){7, -7, 9});
    clt_tensor *z = make(dev, CLT_INT32, 1, &n, (double[]){2, 0, 1});
    CHECK(clt_div_rounding(a, z, CLT_ROUNDING_TRUNC, &r));
    int32_t got[3];
    assert_error(clt_tensor_read(r, got, sizeof got), CLT_ERR_ZERO_DIVISION,
                 "clt_div_rounding: ZeroDivisionError");
    CHECK(clt_tensor_read(r, got, sizeof got));
    cr_assert(got[0] == 3 && got[1] == 0 && got[2] == 9);
    clt_tensor_free(r);
    CHECK(clt_div_rounding(a, z, CLT_ROUNDING_FLOOR, &r));
    assert_error(clt_device_synchronize(dev), CLT_ERR_ZERO_DIVISION,
                 "clt_div_rounding: ZeroDivisionError");
    clt_tensor_free(r);

    /* gradients: zeros in each input's shape and dtype */
    int64_t s2[2] = {2, 3}, s1[1] = {3};
    clt_tensor *xa = make(dev, CLT_FLOAT64, 2, s2, (double[]){7.5, -7.5, 3, 1, 2, -4});
    clt_tensor *xb = make(dev, CLT_FLOAT32, 1, s1, (double[]){2, INFINITY, -0.5});
    CHECK(clt_set_requires_grad(xa, 1));
    CHECK(clt_set_requires_grad(xb, 1));
    for (int mode = 1; mode <= 3; mode++) {
        clt_tensor *q, *sum, *ga = NULL, *gb = NULL;
        if (mode == 3)
            CHECK(clt_div_scalar_rounding(xa, 2.5, CLT_ROUNDING_TRUNC, &q));
        else
            CHECK(clt_div_rounding(xa, xb, (clt_rounding_mode)mode, &q));
        cr_assert_str_eq(clt_grad_fn_name(q), mode == 3 ? "DivBackward3" : "DivBackward2");
        CHECK(clt_sum(q, &sum));
        CHECK(clt_backward(sum, NULL, 0));
        CHECK(clt_grad(xa, &ga));
        cr_assert_eq(clt_tensor_dtype(ga), CLT_FLOAT64);
        double *g = values(ga);
        for (int k = 0; k < 6; k++)
            cr_assert(same_value(g[k], 0.0), "mode %d da[%d] %g", mode, k, g[k]);
        free(g);
        if (mode != 3) {
            CHECK(clt_grad(xb, &gb));
            cr_assert_eq(clt_tensor_dtype(gb), CLT_FLOAT32);
            assert_shape(gb, 1, s1);
            g = values(gb);
            for (int k = 0; k < 3; k++)
                cr_assert(same_value(g[k], 0.0), "mode %d db[%d] %g", mode, k, g[k]);
            free(g);
        }
        clt_tensor_free(ga);
        clt_tensor_free(gb);
        CHECK(clt_zero_grad(xa, 1));
        CHECK(clt_zero_grad(xb, 1));
        clt_tensor_free(sum);
        clt_tensor_free(q);
    }
    clt_tensor *all[] = {b, i, a, z, xa, xb};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        clt_tensor_free(all[k]);
}

/* ---- tensor with scalar ------------------------------------------------------------- */

Test(elementwise, scalar_ops)
{
    clt_device *dev = get_device("cpu");
    enum { N = 1031 };
    float h[N];
    fill_random(h, N, 5);
    for (int i = 0; i < N; i++)
        if (h[i] == 0)
            h[i] = 1;
    int64_t n = N;
    clt_tensor *a = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    struct {
        clt_status (*fn)(const clt_tensor *, double, clt_tensor **);
        double s;
        int kind;
    } cases[] = {{clt_add_scalar, 1.5, 0}, {clt_sub_scalar, 2.0, 1}, {clt_rsub_scalar, 2.0, 2},
                 {clt_mul_scalar, 3.0, 3}, {clt_div_scalar, 4.0, 4}, {clt_rdiv_scalar, 4.0, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *r = NULL;
        CHECK(cases[c].fn(a, cases[c].s, &r));
        float *got = read_f32(r);
        float s = (float)cases[c].s;
        for (int i = 0; i < N; i++) {
            float want = cases[c].kind == 0   ? h[i] + s
                         : cases[c].kind == 1 ? h[i] - s
                         : cases[c].kind == 2 ? s - h[i]
                         : cases[c].kind == 3 ? h[i] * s
                         : cases[c].kind == 4 ? h[i] / s
                                              : s / h[i];
            cr_assert_eq(got[i], want, "case %zu element %d", c, i);
        }
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
}

Test(elementwise, scalar_ops_all_and_special)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {0, 1, 23, 4099};
    const double scalars[] = {2.0, -0.5, NAN, INFINITY};
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        int64_t n = sizes[z];
        double *h = random_values(n, 9, true);
        clt_tensor *a = make(dev, CLT_FLOAT32, 1, &n, h);
        for (int op = 0; op < NBIN; op++) {
            if (!bin[op].ts)
                continue;
            for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++) {
                clt_tensor *r = NULL;
                CHECK(bin[op].ts(a, scalars[k], &r));
                double *got = values(r);
                for (int64_t i = 0; i < n; i++) {
                    double want = op == POW ? ref_pow_scalar(h[i], (float)scalars[k], true)
                                            : ref_float(op, h[i], (float)scalars[k], true);
                    cr_assert(close_enough(got[i], want, tolerance(op), 0),
                              "%s(%g, %g): got %.9g want %.9g", bin[op].name, h[i], scalars[k],
                              got[i], want);
                }
                free(got);
                clt_tensor_free(r);
            }
        }
        clt_tensor_free(a);
        free(h);
    }
}

Test(elementwise, scalar_type_rules)
{
    clt_device *dev = get_device("cpu");
    double hi[4] = {-3, 0, 7, 2}, hb[4] = {1, 0, 1, 0}, hu[4] = {250, 3, 0, 9};
    int64_t n = 4;
    clt_tensor *i32 = make(dev, CLT_INT32, 1, &n, hi), *b = make(dev, CLT_BOOL, 1, &n, hb);
    clt_tensor *u8 = make(dev, CLT_UINT8, 1, &n, hu), *r = NULL;
    double *g;

    CHECK(clt_mul_scalar(i32, 2, &r)); /* int stays int */
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    g = values(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], hi[i] * 2);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_mul_scalar(i32, 2.5, &r)); /* a float scalar makes float32 */
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    g = values(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], hi[i] * 2.5);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_add_scalar(b, 1, &r)); /* bool + int -> int64 */
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    g = values(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], hb[i] + 1);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_add_scalar(u8, 10, &r)); /* uint8 stays uint8 and wraps */
    cr_assert_eq(clt_tensor_dtype(r), CLT_UINT8);
    g = values(r);
    cr_assert_eq(g[0], 4);
    cr_assert_eq(g[1], 13);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_lt_scalar(i32, 2.5, &r)); /* compared in float32 */
    cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
    g = values(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], hi[i] < 2.5);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_pow_scalar(i32, 3, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    g = values(r);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(g[i], hi[i] * hi[i] * hi[i]);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_rpow_scalar(i32, 2, &r)); /* 2 ** a with a negative: integer rule */
    g = values(r);
    cr_assert_eq(g[0], 0);
    cr_assert_eq(g[1], 1);
    cr_assert_eq(g[2], 128);
    cr_assert_eq(g[3], 4);
    free(g);
    clt_tensor_free(r);

    CHECK(clt_pow_scalar(i32, 0.5, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    g = values(r);
    cr_assert(isnan(g[0]));
    cr_assert(close_enough(g[2], sqrt(7.0), 1e-6, 0));
    free(g);
    clt_tensor_free(r);

    /* An integer power's scalar must fit the dtype (PyTorch refuses
     * int32 ** 2^31 and uint8 ** 256), where add wraps it; the largest that
     * fit are taken, and the references wrap by repeated multiplication. */
    CHECK(clt_add_scalar(i32, 4294967296.0, &r)); /* wraps to + 0 */
    clt_tensor_free(r);
    r = (clt_tensor *)1;
    assert_error(clt_pow_scalar(i32, 2147483648.0, &r), CLT_ERR_INVALID_ARGUMENT, "int32");
    cr_assert_null(r);
    assert_error(clt_rpow_scalar(i32, -2147483649.0, &r), CLT_ERR_INVALID_ARGUMENT, "int32");
    assert_error(clt_pow_scalar(u8, 256.0, &r), CLT_ERR_INVALID_ARGUMENT, "uint8");
    assert_error(clt_rpow_scalar(u8, -256.0, &r), CLT_ERR_INVALID_ARGUMENT, "uint8");
    CHECK(clt_rpow_scalar(u8, -255.0, &r)); /* -255 fits uint8's check: 1 ** a */
    g = values(r);
    for (int i = 0; i < 4; i++) {
        uint8_t want = 1;
        for (int k = 0; k < (int)hu[i]; k++)
            want = (uint8_t)(want * (uint8_t)-255);
        cr_assert_eq(g[i], want, "(-255) ** %g = %g, want %d", hu[i], g[i], want);
    }
    free(g);
    clt_tensor_free(r);
    CHECK(clt_pow_scalar(u8, 255.0, &r));
    g = values(r);
    for (int i = 0; i < 4; i++) {
        uint8_t want = 1;
        for (int k = 0; k < 255; k++)
            want = (uint8_t)(want * (uint8_t)hu[i]);
        cr_assert_eq(g[i], want, "%g ** 255 = %g, want %d", hu[i], g[i], want);
    }
    free(g);
    clt_tensor_free(r);

    clt_tensor_free(i32);
    clt_tensor_free(b);
    clt_tensor_free(u8);
}

/* ---- unary ops ------------------------------------------------------------------ */

typedef enum { NEG, ABS, RELU, EXP, LOG, SQRT, RSQRT, SIN, COS, TANH, SIGM, GELU, LNOT, NUN } unop;

static const struct {
    const char *name;
    clt_status (*fn)(const clt_tensor *, clt_tensor **);
    double rtol, atol;
} un[NUN] = {
    {"neg", clt_neg, 0, 0},          {"abs", clt_abs, 0, 0},
    {"relu", clt_relu, 0, 0},        {"exp", clt_exp, 4e-7, 0},
    {"log", clt_log, 4e-7, 1e-7},    {"sqrt", clt_sqrt, 4e-7, 0},
    {"rsqrt", clt_rsqrt, 4e-7, 0},   {"sin", clt_sin, 5e-7, 1e-6},
    {"cos", clt_cos, 5e-7, 1e-6},    {"tanh", clt_tanh, 7e-7, 1e-7},
    {"sigmoid", clt_sigmoid, 1e-6, 1e-7}, {"gelu", clt_gelu, 3e-6, 1e-5},
    {"logical_not", clt_logical_not, 0, 0},
};

static double ref_unary(unop op, double x)
{
    switch (op) {
    case NEG: return -x;
    case ABS: return fabs(x);
    case RELU: return x < 0 ? 0 : x;
    case EXP: return exp(x);
    case LOG: return log(x);
    case SQRT: return sqrt(x);
    case RSQRT: return 1 / sqrt(x);
    case SIN: return sin(x);
    case COS: return cos(x);
    case TANH: return tanh(x);
    case SIGM: return 1 / (1 + exp(-x));
    case GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case LNOT: return x == 0;
    default: return 0;
    }
}

static void check_unary_float(clt_device *dev, clt_dtype dt, int nd, const int64_t *shape)
{
    int64_t n = count(nd, shape);
    double *h = random_values(n, 3, true);
    clt_tensor *a = make(dev, dt, nd, shape, h);
    for (int op = 0; op < NUN; op++) {
        clt_tensor *r = NULL;
        CHECK(un[op].fn(a, &r));
        assert_shape(r, nd, shape);
        cr_assert_eq(clt_tensor_dtype(r), op == LNOT ? CLT_BOOL : dt);
        double *got = values(r);
        double rtol = dt == CLT_FLOAT64 ? 1e-13 : un[op].rtol;
        double atol = dt == CLT_FLOAT64 ? 1e-13 : un[op].atol;
        for (int64_t i = 0; i < n; i++) {
            double x = h[i], want = ref_unary(op, x);
            if (dt == CLT_FLOAT32)
                want = (float)want;
            cr_assert(close_enough(got[i], want, rtol, atol), "%s %s(%.9g): got %.17g, want %.17g",
                      clt_dtype_name(dt), un[op].name, x, got[i], want);
            if (want == 0 && (op == NEG || op == ABS))
                cr_assert_eq(signbit(got[i]), signbit(want), "%s(%g) sign of zero", un[op].name, x);
        }
        free(got);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    free(h);
}

Test(elementwise, unary_float32_many_sizes)
{
    clt_device *dev = get_device("cpu");
    const int64_t sizes[] = {0, 1, 15, 17, 4099, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        check_unary_float(dev, CLT_FLOAT32, 1, &sizes[s]);
    check_unary_float(dev, CLT_FLOAT32, 0, NULL);
    int64_t s2[2] = {0, 5};
    check_unary_float(dev, CLT_FLOAT32, 2, s2);
}

Test(elementwise, unary_gpu_variant)
{
    clt_device *dev = get_device("cpu");
    dev->info.type = CLT_DEVICE_TYPE_GPU;
    int64_t n = 1001;
    check_unary_float(dev, CLT_FLOAT32, 1, &n);
}

Test(elementwise, unary_float64)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    int64_t n = 517;
    check_unary_float(dev, CLT_FLOAT64, 1, &n);
}

Test(elementwise, unary_integer_dtypes)
{
    clt_device *dev = get_device("cpu");
    double hi[6] = {-2147483648.0, -5, 0, 3, 2147483647.0, -1};
    double hu[6] = {0, 1, 5, 128, 255, 7};
    int64_t n = 6;
    clt_tensor *i32 = make(dev, CLT_INT32, 1, &n, hi), *u8 = make(dev, CLT_UINT8, 1, &n, hu);
    struct {
        clt_tensor *t;
        const double *h;
        clt_dtype dt;
    } in[2] = {{i32, hi, CLT_INT32}, {u8, hu, CLT_UINT8}};
    for (int k = 0; k < 2; k++) {
        for (int op = 0; op < NUN; op++) {
            clt_tensor *r = NULL;
            if (op == GELU) {
                /* torch's gelu has no integer kernel */
                cr_assert_eq(un[op].fn(in[k].t, &r), CLT_ERR_DTYPE_MISMATCH);
                cr_assert_null(r);
                continue;
            }
            CHECK(un[op].fn(in[k].t, &r));
            clt_dtype want_dt = op <= RELU ? in[k].dt : op == LNOT ? CLT_BOOL : CLT_FLOAT32;
            cr_assert_eq(clt_tensor_dtype(r), want_dt, "%s on %s", un[op].name,
                         clt_dtype_name(in[k].dt));
            double *got = values(r);
            for (int i = 0; i < 6; i++) {
                double x = in[k].h[i], want;
                if (op == NEG)
                    want = wrap(in[k].dt, (uint64_t)0 - (uint64_t)(int64_t)x);
                else if (op == ABS)
                    want = wrap(in[k].dt, (uint64_t)(int64_t)fabs(x));
                else if (op <= RELU || op == LNOT)
                    want = ref_unary(op, x);
                else
                    want = (float)ref_unary(op, (float)x);
                cr_assert(close_enough(got[i], want, un[op].rtol, un[op].atol),
                          "%s %s(%g): got %.17g want %.17g", clt_dtype_name(in[k].dt),
                          un[op].name, x, got[i], want);
            }
            free(got);
            clt_tensor_free(r);
        }
    }
    clt_tensor_free(i32);
    clt_tensor_free(u8);
}

/* ---- where and clamp ----------------------------------------------------------- */

Test(elementwise, where_broadcasts_three_ways)
{
    clt_device *dev = get_device("cpu");
    double hc[3] = {1, 0, 1}, ha[4] = {1, 0, -3, 4}, hb = 2.5;
    int64_t sc[2] = {3, 1}, sa[2] = {1, 4}, want_shape[2] = {3, 4};
    clt_tensor *c = make(dev, CLT_BOOL, 2, sc, hc), *a = make(dev, CLT_INT32, 2, sa, ha);
    clt_tensor *b = make(dev, CLT_FLOAT32, 0, NULL, &hb), *r = NULL;
    CHECK(clt_where(c, a, b, &r));
    assert_shape(r, 2, want_shape);
    /* a 0-d float32 beside an int32 tensor of dims decides the category */
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    double *g = values(r);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(g[i * 4 + j], hc[i] ? (double)(int32_t)ha[j] : hb, "(%d, %d)", i, j);
    free(g);
    clt_tensor_free(r);

    /* float operands, NaN passes through, large contiguous, empty */
    const int64_t sizes[] = {0, 1, 4099};
    for (size_t s = 0; s < 3; s++) {
        int64_t n = sizes[s];
        double *x = random_values(n, 2, true), *y = random_values(n, 6, true);
        double *cc = random_values(n, 8, false);
        for (int64_t i = 0; i < n; i++)
            cc[i] = cc[i] > 0;
        clt_tensor *tc = make(dev, CLT_BOOL, 1, &n, cc), *tx = make(dev, CLT_FLOAT32, 1, &n, x);
        clt_tensor *ty = make(dev, CLT_FLOAT32, 1, &n, y);
        CHECK(clt_where(tc, tx, ty, &r));
        g = values(r);
        for (int64_t i = 0; i < n; i++)
            cr_assert(close_enough(g[i], cc[i] ? (float)x[i] : (float)y[i], 0, 0));
        free(g);
        clt_tensor_free(r);
        clt_tensor_free(tc);
        clt_tensor_free(tx);
        clt_tensor_free(ty);
        free(x);
        free(y);
        free(cc);
    }
    clt_tensor_free(c);
    clt_tensor_free(a);
    clt_tensor_free(b);
}

static double ref_clamp(double x, const double *lo, const double *hi)
{
    if (lo)
        x = isnan(x) || isnan(*lo) ? NAN : fmax(x, *lo);
    if (hi)
        x = isnan(x) || isnan(*hi) ? NAN : fmin(x, *hi);
    return x;
}

Test(elementwise, clamp_float_and_int)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4099;
    double *h = random_values(n, 11, true);
    clt_tensor *a = make(dev, CLT_FLOAT32, 1, &n, h);
    double m1 = -1, p1 = 1, big = 5, small = -5, nan = NAN;
    struct {
        const double *lo, *hi;
    } cases[] = {{&m1, &p1}, {&m1, NULL}, {NULL, &p1}, {&big, &small}, {&nan, &p1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        clt_tensor *r = NULL;
        CHECK(clt_clamp(a, cases[c].lo, cases[c].hi, &r));
        double *g = values(r);
        for (int64_t i = 0; i < n; i++) {
            double want = ref_clamp(h[i], cases[c].lo, cases[c].hi);
            cr_assert(close_enough(g[i], want, 0, 0), "case %zu clamp(%g): got %g want %g", c,
                      h[i], g[i], want);
        }
        free(g);
        clt_tensor_free(r);
    }
    clt_tensor_free(a);
    free(h);

    double hi[5] = {-7, 0, 3, 9, 2};
    int64_t n5 = 5;
    clt_tensor *i32 = make(dev, CLT_INT32, 1, &n5, hi), *r = NULL;
    double lo0 = 0, hi5 = 5, half = 0.5;
    CHECK(clt_clamp(i32, &lo0, &hi5, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT32);
    double *g = values(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g[i], ref_clamp(hi[i], &lo0, &hi5));
    free(g);
    clt_tensor_free(r);
    CHECK(clt_clamp(i32, &half, NULL, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_FLOAT32);
    g = values(r);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(g[i], ref_clamp(hi[i], &half, NULL));
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(i32);
}

/* ---- non-contiguous inputs ---------------------------------------------------------- */

Test(elementwise, non_contiguous_inputs)
{
    clt_device *dev = get_device("cpu");
    int64_t s[2] = {137, 129}; /* several chunks on CPUs */
    int64_t n = 137 * 129;
    double *h = random_values(n, 13, true), *k = random_values(n, 14, true);
    clt_tensor *base = make(dev, CLT_FLOAT32, 2, s, h);
    int64_t ts[2] = {129, 137}, tst[2] = {1, 129};
    clt_tensor *t = NULL; /* base transposed */
    CHECK(clt__tensor_view(base, 2, ts, tst, 0, &t));
    cr_assert(!clt_tensor_is_contiguous(t));
    clt_tensor *other = make(dev, CLT_FLOAT32, 2, ts, k);
    clt_tensor *r = NULL;

    CHECK(clt_sub(t, other, &r));
    double *g = values(r);
    for (int64_t i = 0; i < 129; i++)
        for (int64_t j = 0; j < 137; j++)
            cr_assert(close_enough(g[i * 137 + j], (float)(h[j * 129 + i] - k[i * 137 + j]), 0, 0));
    free(g);
    clt_tensor_free(r);

    CHECK(clt_exp(t, &r));
    g = values(r);
    for (int64_t i = 0; i < 129; i++)
        for (int64_t j = 0; j < 137; j++)
            cr_assert(close_enough(g[i * 137 + j], (float)exp(h[j * 129 + i]), 4e-7, 0));
    free(g);
    clt_tensor_free(r);

    CHECK(clt_gt_scalar(t, 0.25, &r));
    g = values(r);
    for (int64_t i = 0; i < 129; i++)
        for (int64_t j = 0; j < 137; j++)
            cr_assert_eq(g[i * 137 + j], h[j * 129 + i] > 0.25);
    free(g);
    clt_tensor_free(r);

    /* every other element from offset 3, against a broadcast row */
    int64_t vs = 5000, vst = 2, row = 1;
    clt_tensor *v = NULL, *one = make(dev, CLT_FLOAT32, 1, &row, &(double){0.5});
    CHECK(clt__tensor_view(base, 1, &vs, &vst, 3, &v));
    CHECK(clt_mul(v, one, &r));
    g = values(r);
    for (int64_t i = 0; i < 5000; i++)
        cr_assert(close_enough(g[i], (float)(h[3 + 2 * i] * 0.5), 0, 0));
    free(g);
    clt_tensor_free(r);

    double lo = -2, hi = 2;
    CHECK(clt_clamp(v, &lo, &hi, &r));
    g = values(r);
    for (int64_t i = 0; i < 5000; i++)
        cr_assert(close_enough(g[i], ref_clamp((float)h[3 + 2 * i], &lo, &hi), 0, 0));
    free(g);
    clt_tensor_free(r);

    clt_tensor_free(v);
    clt_tensor_free(one);
    clt_tensor_free(t);
    clt_tensor_free(other);
    clt_tensor_free(base);
    free(h);
    free(k);
}

Test(elementwise, results_do_not_alias_inputs)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 64;
    double *h = random_values(n, 21, false);
    clt_tensor *a = make(dev, CLT_FLOAT32, 1, &n, h), *r = NULL;
    CHECK(clt_abs(a, &r));
    clt_tensor_free(r);
    CHECK(clt_neg(a, &r));
    double *g = values(a);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(g[i], (float)h[i], "input changed at %lld", (long long)i);
    free(g);
    clt_tensor_free(r);
    clt_tensor_free(a);
    free(h);
}

/* ---- bad input --------------------------------------------------------------------- */

Test(elementwise, broadcast_error_names_both_shapes)
{
    clt_device *dev = get_device("cpu");
    int64_t s1[2] = {2, 3}, s2[1] = {4};
    clt_tensor *a = NULL, *b = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_zeros(dev, CLT_FLOAT32, 2, s1, &a));
    CHECK(clt_zeros(dev, CLT_FLOAT32, 1, s2, &b));
    const tt_fn fns[] = {clt_add, clt_pow, clt_maximum, clt_eq, clt_ge};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        r = (clt_tensor *)&r;
        cr_assert_eq(fns[i](a, b, &r), CLT_ERR_SHAPE_MISMATCH);
        cr_assert_null(r);
        cr_assert(strstr(clt_last_error(), "[2, 3]") && strstr(clt_last_error(), "[4]"), "%s",
                  clt_last_error());
    }
    clt_tensor *c = NULL;
    int64_t s3[1] = {3};
    CHECK(clt_zeros(dev, CLT_BOOL, 1, s3, &c));
    cr_assert_eq(clt_where(c, a, b, &r), CLT_ERR_SHAPE_MISMATCH);
    cr_assert_null(r);
    CHECK(clt_device_synchronize(dev)); /* no kernel left to compile at exit */
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

Test(elementwise, mixed_devices_refused)
{
    clt_device *d0 = get_device("cpu");
    clt_device *d1 = second_device(d0);
    int64_t n = 3;
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(d0, CLT_FLOAT32, 1, &n, &a));
    CHECK(clt_ones(d1, CLT_FLOAT32, 1, &n, &b));
    CHECK(clt_ones(d0, CLT_BOOL, 1, &n, &c));
    cr_assert_eq(clt_lt(a, b, &r), CLT_ERR_DEVICE_MISMATCH);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), clt_device_label(d0)) &&
              strstr(clt_last_error(), clt_device_label(d1)), "%s", clt_last_error());
    r = (clt_tensor *)&r;
    cr_assert_eq(clt_where(c, a, b, &r), CLT_ERR_DEVICE_MISMATCH);
    cr_assert_null(r);
    CHECK(clt_device_synchronize(d0));
    CHECK(clt_device_synchronize(d1));
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
}

Test(elementwise, invalid_dtypes_and_arguments)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    clt_tensor *f = NULL, *b = NULL, *i = NULL, *r = (clt_tensor *)&r;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &f));
    CHECK(clt_ones(dev, CLT_BOOL, 1, &n, &b));
    CHECK(clt_ones(dev, CLT_INT32, 1, &n, &i));

    cr_assert_eq(clt_where(f, f, f, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "float32"), "%s", clt_last_error());
    r = (clt_tensor *)&r;
    cr_assert_eq(clt_sub(b, b, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    cr_assert_eq(clt_neg(b, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_eq(clt_abs(b, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_eq(clt_pow_scalar(i, -2, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "negative"), "%s", clt_last_error());
    cr_assert_null(r);
    cr_assert_eq(clt_clamp(f, NULL, NULL, &r), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_eq(clt_pow(b, b, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(r);
    cr_assert_eq(clt_sub_scalar(b, 2, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_eq(clt_rsub_scalar(b, 1, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_eq(clt_sub(b, i, &r), CLT_ERR_DTYPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "bool"), "%s", clt_last_error());
    cr_assert_null(r);
    cr_assert_eq(clt_exp(NULL, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_null(r);
    cr_assert_eq(clt_add(f, NULL, &r), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_add(f, f, NULL), CLT_ERR_NULL_ARGUMENT);
    cr_assert_eq(clt_where(NULL, f, f, &r), CLT_ERR_NULL_ARGUMENT);

    /* clamp of a bool tensor with integral bounds gives int64, as torch.clamp;
     * logical_not inverts a mask */
    double one = 1, zero = 0;
    CHECK(clt_clamp(b, &zero, &one, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    double *g = values(r);
    cr_assert_eq(g[0], 1);
    cr_assert_eq(g[2], 1);
    free(g);
    clt_tensor_free(r);
    CHECK(clt_logical_not(b, &r));
    g = values(r);
    cr_assert_eq(g[2], 0);
    free(g);
    clt_tensor_free(r);

    clt_tensor_free(f);
    clt_tensor_free(b);
    clt_tensor_free(i);
}

Test(elementwise, clamp_keeps_values_equal_to_a_bound)
{
    clt_device *dev = get_device("cpu");
    float h[4] = {-0.0f, 0.0f, -1.0f, 2.0f};
    int64_t n = 4;
    clt_tensor *a = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, h, &a));
    double lo = 0.0, hi = 1.0;
    CHECK(clt_clamp(a, &lo, &hi, &r));
    float *g = read_f32(r);
    cr_assert(g[0] == 0 && signbit(g[0]), "-0.0 clamped at 0.0 must stay -0.0");
    cr_assert(g[1] == 0 && !signbit(g[1]));
    cr_assert_eq(g[2], 0.0f);
    cr_assert_eq(g[3], 1.0f);
    free(g);
    clt_tensor_free(a);
    clt_tensor_free(r);
}

Test(elementwise, ops_do_not_wait)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 1 << 16;
    clt_tensor *a = NULL, *b = NULL;
    CHECK(clt_ones(dev, CLT_FLOAT32, 1, &n, &a));
    clt_stats s0, s1;
    clt_stats_get(&s0);
    for (int i = 0; i < 10; i++) {
        CHECK(clt_add(a, a, &b));
        clt_tensor_free(b);
        CHECK(clt_gelu(a, &b));
        clt_tensor_free(b);
    }
    clt_stats_get(&s1);
    cr_assert_eq(s1.blocking_waits, s0.blocking_waits, "an op waited on the host");
    cr_assert_geq(s1.kernel_launches - s0.kernel_launches, 20);
    CHECK(clt_device_synchronize(dev));
    clt_tensor_free(a);
}

/* sin and cos in every lane: an inf (or a value near 3e38, or from about
 * 1e7 up) in one lane of a 16-wide vector once spoiled the tiny values
 * beside it (sin(1e-30) gave 0.0099).  The third vector holds 1e7 and -1e30
 * beside tiny values: a vector goes lane by lane from 1e4 up.  The
 * references are the C library's, in double. */
Test(elementwise, sin_cos_lanes_independent)
{
    clt_device *dev = get_device("cpu");
    float x[48];
    for (int i = 0; i < 48; i++)
        x[i] = 1.0f;
    x[0] = 1e-30f;
    x[1] = 1e-45f;
    x[15] = INFINITY;
    x[16] = 3e38f;
    x[17] = 2e-38f;
    x[31] = -3.3e38f;
    x[32] = 1e7f;
    x[33] = 1e-30f;
    x[40] = -1e30f;
    x[41] = 1e-45f;
    x[47] = -2e-38f;
    int64_t n = 48;
    clt_tensor *t, *s, *c;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT32, 1, &n, x, &t));
    CHECK(clt_sin(t, &s));
    CHECK(clt_cos(t, &c));
    float *sv = read_f32(s), *cv = read_f32(c);
    for (int i = 0; i < 48; i++) {
        double ws = sin((double)x[i]), wc = cos((double)x[i]);
        /* range reduction of a huge argument: a few units in the last place */
        double rtol = fabsf(x[i]) > 1e4f ? 1e-5 : 2e-7;
        cr_assert(isnan(ws) ? isnan(sv[i]) : fabs(sv[i] - ws) <= rtol * fabs(ws) + 1e-45,
                  "sin(%g) = %.9g, want %.9g", x[i], sv[i], ws);
        cr_assert(isnan(wc) ? isnan(cv[i]) : fabs(cv[i] - wc) <= rtol * fabs(wc) + 1e-7,
                  "cos(%g) = %.9g, want %.9g", x[i], cv[i], wc);
    }
    free(sv);
    free(cv);
    clt_tensor_free(s);
    clt_tensor_free(c);
    clt_tensor_free(t);
}

/* pow with the scalar exponents that PyTorch computes with other
 * operations: sqrt for 0.5 (NaN for -inf, -0.0 for -0.0), 1 / (x * x) for
 * -2 (0 once x * x overflows), in the vector loop and in the tail. */
Test(elementwise, pow_scalar_as_torch)
{
    clt_device *dev = get_device("cpu");
    const double edge[6] = {-INFINITY, -0.0, 4.0, -1e20, 1e30, -3.0};
    double x[38];
    for (int i = 0; i < 38; i++)
        x[i] = edge[i % 6];
    int64_t n = 38;
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, &n, x), *r;
    const double exps[2] = {0.5, -2.0};
    for (int e = 0; e < 2; e++) {
        CHECK(clt_pow_scalar(t, exps[e], &r));
        double *v = values(r);
        for (int i = 0; i < 38; i++) {
            float xf = (float)x[i];
            float want = e == 0 ? sqrtf(xf) : 1.0f / (xf * xf);
            cr_assert(isnan(want) ? isnan(v[i]) : v[i] == want && !signbit(v[i]) == !signbit(want),
                      "pow(%g, %g) = %g, want %g", x[i], exps[e], v[i], (double)want);
        }
        free(v);
        clt_tensor_free(r);
    }
    clt_tensor_free(t);
}

/* A float32 tensor to a power too small for float32 (1e-310, 1e-46) or
 * denormal in it (1e-40): the exponent is not 0, so 0 ** s is 0 (inf for a
 * negative s), a negative base gives NaN and inf stays inf, as torch.pow
 * gives with its double exponent; the reference is the C library's pow in
 * double, rounded to float. */
Test(elementwise, pow_scalar_tiny_exponent)
{
    clt_device *dev = get_device("cpu");
    const double x[7] = {0.0, 0.5, 1.0, 2.0, -1.0, INFINITY, NAN};
    int64_t n = 7;
    clt_tensor *t = make(dev, CLT_FLOAT32, 1, &n, x), *r;
    const double exps[6] = {1e-310, 4.9406564584124654e-324, -1e-310, 1e-40, 1e-46, -1e-46};
    for (int e = 0; e < 6; e++) {
        CHECK(clt_pow_scalar(t, exps[e], &r));
        double *v = values(r);
        for (int i = 0; i < 7; i++) {
            double want = (float)pow(x[i], exps[e]);
            cr_assert(isnan(want) ? isnan(v[i]) : v[i] == want, "pow(%g, %g) = %g, want %g",
                      x[i], exps[e], v[i], want);
        }
        free(v);
        clt_tensor_free(r);
    }
    clt_tensor_free(t);
}

/* float64 pow in every lane: a denormal, zero, inf or NaN base in one lane
 * of a 16-wide vector once spoiled another lane's result (2.5^3 gave 0),
 * and a denormal base got a wrong result of its own (5e-324^-0.5 gave 0).
 * Tensor and scalar exponents; the references are the C library's. */
Test(elementwise, pow_float64_lanes_independent)
{
    clt_device *dev = get_device("cpu");
    if (!clt_device_supports_dtype(dev, CLT_FLOAT64))
        cr_skip_test("no cl_khr_fp64 on %s", clt_device_name(dev));
    const double special[4] = {5e-324, -1e-310, 0.0, INFINITY};
    double a[64], b[64];
    for (int i = 0; i < 64; i++) {
        a[i] = 0.5 + 0.0625 * i;
        b[i] = i % 2 ? 3.0 : -0.5;
    }
    for (int k = 0; k < 4; k++)
        a[16 * k + 15 - 4 * k] = special[k];
    a[0] = 5e-324;
    int64_t n = 64;
    clt_tensor *ta = make(dev, CLT_FLOAT64, 1, &n, a), *tb = make(dev, CLT_FLOAT64, 1, &n, b);
    clt_tensor *pt, *ps;
    CHECK(clt_pow(ta, tb, &pt));
    CHECK(clt_pow_scalar(ta, 3.0, &ps));
    double *vt = values(pt), *vs = values(ps);
    for (int i = 0; i < 64; i++) {
        double wt = pow(a[i], b[i]), ws = pow(a[i], 3.0);
        cr_assert(isinf(wt) ? vt[i] == wt : fabs(vt[i] - wt) <= 1e-14 * fabs(wt),
                  "pow(%g, %g) = %.17g, want %.17g", a[i], b[i], vt[i], wt);
        cr_assert(isinf(ws) ? vs[i] == ws : fabs(vs[i] - ws) <= 1e-14 * fabs(ws),
                  "pow(%g, 3) = %.17g, want %.17g", a[i], vs[i], ws);
    }
    free(vt);
    free(vs);
    clt_tensor_free(pt);
    clt_tensor_free(ps);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
}
