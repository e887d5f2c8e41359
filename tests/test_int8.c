/* test_int8.c: int8 (torch.int8) and int16 (torch.int16): names, iinfo and
 * promotion as torch; every int8 value through casts to and from every
 * dtype and through arithmetic with every other int8 value (wrapping,
 * division and remainder signs, shifts, bitwise ops), int16's boundaries,
 * floats into int8 and int16 through int32 as torch's CPU kernels, sums in
 * int64, fills, arange and randint ranges, printing, moves between
 * devices, files and DLPack, and the refusals (mean, gradients, fills
 * out of range).  References are computed here, in C, with the host's own
 * wrapping conversions. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#include <cltensor/dlpack.h>

/* The 256 int8 values, -128 .. 127, as a [256] int8 tensor. */
static clt_tensor *all_int8(clt_device *dev)
{
    int8_t v[256];
    for (int i = 0; i < 256; i++)
        v[i] = (int8_t)(i - 128);
    int64_t n = 256;
    clt_tensor *t = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 1, &n, v, &t));
    return t;
}

static void *read_raw(const clt_tensor *t)
{
    size_t nb = clt_tensor_nbytes(t);
    void *h = malloc(nb ? nb : 1);
    cr_assert_not_null(h);
    CHECK(clt_tensor_read(t, h, nb));
    return h;
}

/* The low bits of v as int8 and int16, as two's complement keeps them. */
static int8_t w8(int64_t v) { return (int8_t)(uint8_t)(uint64_t)v; }
static int16_t w16(int64_t v) { return (int16_t)(uint16_t)(uint64_t)v; }

/* Python's floor division and modulo of integers. */
static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t floormod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

Test(int8, names_sizes_parse_and_iinfo)
{
    cr_assert_eq((int)CLT_INT8, 10);
    cr_assert_eq((int)CLT_INT16, 11);
    cr_assert_str_eq(clt_dtype_name(CLT_INT8), "int8");
    cr_assert_str_eq(clt_dtype_name(CLT_INT16), "int16");
    cr_assert_eq(clt_dtype_size(CLT_INT8), 1);
    cr_assert_eq(clt_dtype_size(CLT_INT16), 2);
    const struct { const char *name; clt_dtype want; } names[] = {
        {"int8", CLT_INT8}, {"i8", CLT_INT8}, {"int16", CLT_INT16}, {"short", CLT_INT16},
        {"i16", CLT_INT16},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        clt_dtype d = CLT_FLOAT32;
        CHECK(clt_dtype_parse(names[k].name, &d));
        cr_assert_eq(d, names[k].want, "%s", names[k].name);
    }
    clt_int_info ii;
    CHECK(clt_iinfo(CLT_INT8, &ii));
    cr_assert(ii.bits == 8 && ii.max == 127 && ii.min == -128);
    CHECK(clt_iinfo(CLT_INT16, &ii));
    cr_assert(ii.bits == 16 && ii.max == 32767 && ii.min == -32768);
}

/* torch.promote_types for every pair with int8 and int16 (from torch
 * 1.13: int8 with uint8 is int16, the smallest type holding both). */
Test(int8, promotion)
{
    const struct { clt_dtype a, b, want; } t[] = {
        {CLT_INT8, CLT_BOOL, CLT_INT8},         {CLT_INT8, CLT_UINT8, CLT_INT16},
        {CLT_INT8, CLT_INT8, CLT_INT8},         {CLT_INT8, CLT_INT16, CLT_INT16},
        {CLT_INT8, CLT_INT32, CLT_INT32},       {CLT_INT8, CLT_INT64, CLT_INT64},
        {CLT_INT8, CLT_FLOAT16, CLT_FLOAT16},   {CLT_INT8, CLT_BFLOAT16, CLT_BFLOAT16},
        {CLT_INT8, CLT_FLOAT32, CLT_FLOAT32},   {CLT_INT8, CLT_FLOAT64, CLT_FLOAT64},
        {CLT_INT8, CLT_COMPLEX64, CLT_COMPLEX64}, {CLT_INT16, CLT_BOOL, CLT_INT16},
        {CLT_INT16, CLT_UINT8, CLT_INT16},      {CLT_INT16, CLT_INT16, CLT_INT16},
        {CLT_INT16, CLT_INT32, CLT_INT32},      {CLT_INT16, CLT_INT64, CLT_INT64},
        {CLT_INT16, CLT_FLOAT16, CLT_FLOAT16},  {CLT_INT16, CLT_BFLOAT16, CLT_BFLOAT16},
        {CLT_INT16, CLT_FLOAT32, CLT_FLOAT32},  {CLT_INT16, CLT_FLOAT64, CLT_FLOAT64},
        {CLT_INT16, CLT_COMPLEX128, CLT_COMPLEX128},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        cr_assert_eq(clt_promote_types(t[k].a, t[k].b), t[k].want, "%s %s",
                     clt_dtype_name(t[k].a), clt_dtype_name(t[k].b));
        cr_assert_eq(clt_promote_types(t[k].b, t[k].a), t[k].want, "%s %s",
                     clt_dtype_name(t[k].b), clt_dtype_name(t[k].a));
    }
    /* a uint8 tensor plus an int8 one is int16, values unwrapped */
    clt_device *dev = get_device("cpu:0");
    int64_t n = 2;
    const uint8_t u[2] = {255, 200};
    const int8_t s[2] = {127, -128};
    clt_tensor *a, *b, *r;
    CHECK(clt_tensor_from_host(dev, CLT_UINT8, 1, &n, u, &a));
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 1, &n, s, &b));
    CHECK(clt_add(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT16);
    int16_t *h = read_raw(r);
    cr_assert(h[0] == 382 && h[1] == 72, "%d %d", h[0], h[1]);
    free(h);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(r);
}

/* Every int8 value to every dtype, and back: the host's conversion of
 * the same value is the reference (uint8 wraps, bool is "not zero", the
 * floats hold every value exactly). */
Test(int8, every_value_through_every_dtype)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *x = all_int8(dev);
    const clt_dtype to[] = {CLT_FLOAT32, CLT_FLOAT64, CLT_FLOAT16, CLT_BFLOAT16, CLT_INT32,
                            CLT_INT64,   CLT_UINT8,   CLT_BOOL,    CLT_INT16,    CLT_INT8};
    for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
        if (!clt_device_supports_dtype(dev, to[k]))
            continue;
        clt_tensor *y, *back;
        CHECK(clt_to_dtype(x, to[k], &y));
        cr_assert_eq(clt_tensor_dtype(y), to[k]);
        double *v = read_as_f64(y);
        for (int i = 0; i < 256; i++) {
            int64_t s = i - 128;
            double want = to[k] == CLT_UINT8 ? (double)(uint8_t)s
                          : to[k] == CLT_BOOL ? (double)(s != 0)
                                              : (double)s;
            cr_assert_eq(v[i], want, "int8 %lld to %s: %g", (long long)s,
                         clt_dtype_name(to[k]), v[i]);
        }
        free(v);
        CHECK(clt_to_dtype(y, CLT_INT8, &back));
        int8_t *b = read_raw(back);
        for (int i = 0; i < 256; i++) {
            int64_t s = i - 128;
            int8_t want = to[k] == CLT_BOOL ? (int8_t)(s != 0) : (int8_t)s;
            cr_assert_eq(b[i], want, "%s back to int8: %d for %lld", clt_dtype_name(to[k]), b[i],
                         (long long)s);
        }
        free(b);
        clt_tensor_free(y);
        clt_tensor_free(back);
    }
    clt_tensor_free(x);
}

/* Floats become int8 and int16 through int32: truncated toward zero, then
 * the low bits (200.0 is -56 as int8, 40000.0 is -25536 as int16, NaN 0),
 * as torch's CPU kernels; 48 values so that the 16-wide paths run too. */
Test(int8, floats_into_int8_and_int16)
{
    clt_device *dev = get_device("cpu:0");
    const double base[12] = {0.0, -0.0, 0.9, -0.9, 127.9, -128.9, 200.0, -200.0, 255.5,
                             40000.0, -40000.0, 65539.0};
    double v[48];
    for (int i = 0; i < 48; i++)
        v[i] = base[i % 12] + (i >= 24 ? 0.25 : 0.0);
    int64_t n = 48;
    const clt_dtype from[] = {CLT_FLOAT64, CLT_FLOAT32};
    for (size_t f = 0; f < 2; f++) {
        clt_tensor *d = tensor_of(dev, from[f], 1, &n, v), *a, *b;
        CHECK(clt_to_dtype(d, CLT_INT8, &a));
        CHECK(clt_to_dtype(d, CLT_INT16, &b));
        int8_t *h8 = read_raw(a);
        int16_t *h16 = read_raw(b);
        for (int i = 0; i < 48; i++) {
            int32_t t = (int32_t)trunc(from[f] == CLT_FLOAT32 ? (double)(float)v[i] : v[i]);
            cr_assert_eq(h8[i], w8(t), "%s %g: %d", clt_dtype_name(from[f]), v[i], h8[i]);
            cr_assert_eq(h16[i], w16(t), "%s %g: %d", clt_dtype_name(from[f]), v[i], h16[i]);
        }
        free(h8);
        free(h16);
        clt_tensor_free(d);
        clt_tensor_free(a);
        clt_tensor_free(b);
    }
    double nan_v = NAN;
    int64_t one = 1;
    clt_tensor *d = tensor_of(dev, CLT_FLOAT32, 1, &one, &nan_v), *a;
    CHECK(clt_to_dtype(d, CLT_INT8, &a));
    double item = 1;
    CHECK(clt_tensor_item(a, &item));
    cr_assert_eq(item, 0.0);
    clt_tensor_free(d);
    clt_tensor_free(a);
}

typedef clt_status (*binop)(const clt_tensor *, const clt_tensor *, clt_tensor **);

/* Every pair of int8 values (256 x 256) through the arithmetic, each
 * result the host's, wrapped to int8. */
Test(int8, every_pair_wraps_as_torch)
{
    clt_device *dev = get_device("cpu:0");
    int8_t *av = malloc(65536), *bv = malloc(65536), *bnz = malloc(65536), *sh = malloc(65536);
    for (int i = 0; i < 65536; i++) {
        av[i] = (int8_t)((i >> 8) - 128);
        bv[i] = (int8_t)((i & 255) - 128);
        bnz[i] = bv[i] == 0 ? (int8_t)1 : bv[i];
        sh[i] = (int8_t)(i % 12 - 1); /* counts -1 .. 10 */
    }
    int64_t shape[2] = {256, 256};
    clt_tensor *a, *b, *bn, *s;
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 2, shape, av, &a));
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 2, shape, bv, &b));
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 2, shape, bnz, &bn));
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 2, shape, sh, &s));
    enum { ADD, SUB, MUL, FLOORDIV, REM, FMOD, AND, OR, XOR, SHL, SHR, MAX, NOPS };
    const struct { const char *name; binop fn; int divisor; } ops[NOPS] = {
        [ADD] = {"add", clt_add, 0},
        [SUB] = {"sub", clt_sub, 0},
        [MUL] = {"mul", clt_mul, 0},
        [FLOORDIV] = {"floor_divide", clt_floor_divide, 1},
        [REM] = {"remainder", clt_remainder, 1},
        [FMOD] = {"fmod", clt_fmod, 1},
        [AND] = {"bitwise_and", clt_bitwise_and, 0},
        [OR] = {"bitwise_or", clt_bitwise_or, 0},
        [XOR] = {"bitwise_xor", clt_bitwise_xor, 0},
        [SHL] = {"bitwise_left_shift", clt_bitwise_left_shift, 2},
        [SHR] = {"bitwise_right_shift", clt_bitwise_right_shift, 2},
        [MAX] = {"maximum", clt_maximum, 0},
    };
    for (int k = 0; k < NOPS; k++) {
        clt_tensor *r;
        const clt_tensor *rhs = ops[k].divisor == 1 ? bn : ops[k].divisor == 2 ? s : b;
        const int8_t *rv = ops[k].divisor == 1 ? bnz : ops[k].divisor == 2 ? sh : bv;
        CHECK(ops[k].fn(a, rhs, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_INT8, "%s", ops[k].name);
        int8_t *h = read_raw(r);
        for (int i = 0; i < 65536; i++) {
            int64_t x = av[i], y = rv[i], want = 0;
            switch (k) {
            case ADD: want = x + y; break;
            case SUB: want = x - y; break;
            case MUL: want = x * y; break;
            case FLOORDIV: want = floordiv(x, y); break;
            case REM: want = floormod(x, y); break;
            case FMOD: want = x % y; break;
            case AND: want = x & y; break;
            case OR: want = x | y; break;
            case XOR: want = x ^ y; break;
            /* counts outside [0, 8) give 0, outside [0, 7) the sign fill */
            case SHL: want = y < 0 || y >= 8 ? 0 : (int64_t)((uint64_t)x << y); break;
            case SHR: want = y < 0 || y >= 7 ? (x < 0 ? -1 : 0) : x >> y; break;
            case MAX: want = x > y ? x : y; break;
            }
            cr_assert_eq(h[i], w8(want), "%s(%lld, %lld): %d, want %d", ops[k].name,
                         (long long)x, (long long)y, h[i], w8(want));
        }
        free(h);
        clt_tensor_free(r);
    }
    /* neg and abs wrap: -(-128) and |-128| are -128 */
    clt_tensor *r;
    CHECK(clt_neg(a, &r));
    int8_t *h = read_raw(r);
    for (int i = 0; i < 65536; i++)
        cr_assert_eq(h[i], w8(-(int64_t)av[i]));
    free(h);
    clt_tensor_free(r);
    CHECK(clt_abs(a, &r));
    h = read_raw(r);
    for (int i = 0; i < 65536; i++)
        cr_assert_eq(h[i], w8(av[i] < 0 ? -(int64_t)av[i] : av[i]));
    free(h);
    clt_tensor_free(r);
    /* a scalar operand wraps to int8 first: torch takes 300 as 44 */
    CHECK(clt_remainder_scalar(a, 300.0, &r));
    h = read_raw(r);
    for (int i = 0; i < 65536; i += 97)
        cr_assert_eq(h[i], w8(floormod(av[i], 44)), "%d %% 300: %d", av[i], h[i]);
    free(h);
    clt_tensor_free(r);
    r = (clt_tensor *)0x1;
    cr_assert_eq(clt_remainder_scalar(a, 256.0, &r), CLT_ERR_ZERO_DIVISION);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "int8") != NULL, "%s", clt_last_error());
    /* comparisons give bool */
    CHECK(clt_lt(a, b, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_BOOL);
    uint8_t *hb = read_raw(r);
    for (int i = 0; i < 65536; i++)
        cr_assert_eq(hb[i], av[i] < bv[i]);
    free(hb);
    clt_tensor_free(r);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(bn);
    clt_tensor_free(s);
    free(av);
    free(bv);
    free(bnz);
    free(sh);
}

/* int16 at its boundaries: sums, differences and products wrap, the
 * minimum divided by -1 is itself, shifts by 15 and 16. */
Test(int8, int16_boundaries)
{
    clt_device *dev = get_device("cpu:0");
    const int16_t e[] = {-32768, -32767, -257, -256, -129, -128, -1, 0, 1, 127, 128, 255, 256,
                         32766, 32767};
    enum { N = sizeof e / sizeof e[0] };
    int16_t av[N * N], bv[N * N], bnz[N * N];
    for (int i = 0; i < N * N; i++) {
        av[i] = e[i / N];
        bv[i] = e[i % N];
        bnz[i] = bv[i] == 0 ? (int16_t)1 : bv[i];
    }
    int64_t shape[2] = {N, N};
    clt_tensor *a, *b, *bn;
    CHECK(clt_tensor_from_host(dev, CLT_INT16, 2, shape, av, &a));
    CHECK(clt_tensor_from_host(dev, CLT_INT16, 2, shape, bv, &b));
    CHECK(clt_tensor_from_host(dev, CLT_INT16, 2, shape, bnz, &bn));
    const binop fns[] = {clt_add, clt_sub, clt_mul, clt_floor_divide};
    for (int k = 0; k < 4; k++) {
        clt_tensor *r;
        CHECK(fns[k](a, k == 3 ? bn : b, &r));
        cr_assert_eq(clt_tensor_dtype(r), CLT_INT16);
        int16_t *h = read_raw(r);
        for (int i = 0; i < N * N; i++) {
            int64_t x = av[i], y = k == 3 ? bnz[i] : bv[i];
            int64_t want = k == 0 ? x + y : k == 1 ? x - y : k == 2 ? x * y : floordiv(x, y);
            cr_assert_eq(h[i], w16(want), "op %d (%lld, %lld): %d", k, (long long)x,
                         (long long)y, h[i]);
        }
        free(h);
        clt_tensor_free(r);
    }
    clt_tensor *r = (clt_tensor *)0x1;
    /* the divisor 0 is met on the device: reported at the next read */
    clt_status st = clt_floor_divide(a, b, &r);
    if (st == CLT_OK) {
        int16_t *h = malloc(sizeof av);
        st = clt_tensor_read(r, h, sizeof av);
        free(h);
        clt_tensor_free(r);
    }
    cr_assert_eq(st, CLT_ERR_ZERO_DIVISION, "%s", clt_status_name(st));
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(bn);
}

/* Sums, products and cumulative sums of int8 are int64 (as torch), max
 * keeps int8; mean is refused as torch refuses it. */
Test(int8, reductions)
{
    clt_device *dev = get_device("cpu:0");
    clt_tensor *x = all_int8(dev), *r;
    CHECK(clt_sum(x, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    double v;
    CHECK(clt_tensor_item(r, &v));
    cr_assert_eq(v, -128.0); /* -128 + ... + 127 */
    clt_tensor_free(r);
    CHECK(clt_cumsum(x, 0, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT64);
    int64_t *c = read_raw(r), acc = 0;
    for (int i = 0; i < 256; i++) {
        acc += i - 128;
        cr_assert_eq(c[i], acc);
    }
    free(c);
    clt_tensor_free(r);
    CHECK(clt_max(x, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_INT8);
    CHECK(clt_tensor_item(r, &v));
    cr_assert_eq(v, 127.0);
    clt_tensor_free(r);
    r = (clt_tensor *)0x1;
    cr_assert_neq(clt_mean(x, &r), CLT_OK);
    cr_assert_null(r);
    cr_assert(strstr(clt_last_error(), "int8") != NULL, "%s", clt_last_error());
    cr_assert_neq(clt_set_requires_grad(x, 1), CLT_OK);
    cr_assert_eq(clt_requires_grad(x), 0);
    clt_tensor_free(x);
}

/* Fills in the dtype's range (outside it refused as c10's overflow
 * check), arange, randint's bounds, printing. */
Test(int8, fill_arange_randint_format)
{
    clt_device *dev = get_device("cpu:0");
    int64_t n = 37;
    clt_tensor *t = NULL;
    CHECK(clt_full(dev, CLT_INT8, 1, &n, -128.0, &t));
    int8_t *h = read_raw(t);
    for (int i = 0; i < 37; i++)
        cr_assert_eq(h[i], -128);
    free(h);
    clt_tensor_free(t);
    t = (clt_tensor *)0x1;
    cr_assert_eq(clt_full(dev, CLT_INT8, 1, &n, 128.0, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(t);
    cr_assert(strstr(clt_last_error(), "int8 without overflow") != NULL, "%s",
              clt_last_error());
    t = (clt_tensor *)0x1;
    cr_assert_eq(clt_full(dev, CLT_INT16, 1, &n, -32769.0, &t), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(t);
    CHECK(clt_full(dev, CLT_INT16, 1, &n, 32767.0, &t));
    int16_t *h16 = read_raw(t);
    cr_assert_eq(h16[36], 32767);
    free(h16);
    clt_tensor_free(t);

    CHECK(clt_arange(dev, CLT_INT8, 100, -100, -7, &t));
    cr_assert_eq(clt_tensor_numel(t), 29);
    h = read_raw(t);
    for (int i = 0; i < 29; i++)
        cr_assert_eq(h[i], 100 - 7 * i);
    free(h);
    clt_tensor_free(t);

    int64_t big = 4096;
    CHECK(clt_randint(NULL, dev, -128, 128, CLT_INT8, 1, &big, &t));
    h = read_raw(t);
    int seen_lo = 0, seen_hi = 0;
    for (int i = 0; i < 4096; i++) {
        seen_lo |= h[i] == -128;
        seen_hi |= h[i] == 127;
    }
    cr_assert(seen_lo && seen_hi, "4096 draws of 256 values miss an end");
    free(h);
    clt_tensor_free(t);
    t = (clt_tensor *)0x1;
    cr_assert_neq(clt_randint(NULL, dev, -129, 0, CLT_INT8, 1, &big, &t), CLT_OK);
    cr_assert_null(t);

    const int8_t v[3] = {-128, 0, 127};
    int64_t three = 3;
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 1, &three, v, &t));
    char *s = NULL;
    CHECK(clt_tensor_repr(t, &s));
    cr_assert_str_eq(s, "tensor([-128,    0,  127], dtype=torch.int8)");
    clt_free(s);
    CHECK(clt_tensor_format(t, &s));
    cr_assert_str_eq(s, "[-128, 0, 127]");
    clt_free(s);
    clt_tensor_free(t);
}

/* Sorting, indexing and moves between devices keep the values. */
Test(int8, sort_gather_and_moves)
{
    clt_device *dev = get_device("cpu:0");
    int16_t v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (int16_t)((i * 7919) % 65536 - 32768);
    int64_t n = 64;
    clt_tensor *t, *s, *idx;
    CHECK(clt_tensor_from_host(dev, CLT_INT16, 1, &n, v, &t));
    CHECK(clt_sort(t, 0, 0, &s, &idx));
    int16_t *h = read_raw(s);
    int64_t *ix = read_raw(idx);
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(h[i], v[ix[i]]);
        if (i)
            cr_assert(h[i - 1] <= h[i]);
    }
    free(h);
    free(ix);
    clt_tensor_free(s);
    clt_tensor_free(idx);
    clt_device *other = second_device(dev);
    clt_tensor *m;
    CHECK(clt_to(t, other, &m));
    cr_assert_eq(clt_tensor_dtype(m), CLT_INT16);
    h = read_raw(m);
    cr_assert(memcmp(h, v, sizeof v) == 0);
    free(h);
    clt_tensor_free(m);
    clt_tensor_free(t);
}

/* .npy '|i1' and '<i2', safetensors I8 and I16, DLPack kDLInt 8 and 16:
 * both ways, the bytes kept. */
Test(int8, files_and_dlpack)
{
    clt_device *dev = get_device("cpu:0");
    const int8_t v8[5] = {-128, -1, 0, 1, 127};
    const int16_t v16[5] = {-32768, -129, 0, 256, 32767};
    int64_t n = 5;
    clt_tensor *a, *b;
    CHECK(clt_tensor_from_host(dev, CLT_INT8, 1, &n, v8, &a));
    CHECK(clt_tensor_from_host(dev, CLT_INT16, 1, &n, v16, &b));
    char path[] = "/tmp/clt_int8_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    const struct { clt_tensor *t; const void *v; size_t size; const char *descr; } c[2] = {
        {a, v8, sizeof v8, "'|i1'"}, {b, v16, sizeof v16, "'<i2'"}};
    for (int k = 0; k < 2; k++) {
        CHECK(clt_save_npy(path, c[k].t));
        FILE *f = fopen(path, "rb");
        char buf[128] = {0};
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        cr_assert(got > 10 && strstr(buf + 10, c[k].descr) != NULL, "%s", buf + 10);
        clt_tensor *back;
        CHECK(clt_load_npy(path, dev, &back));
        cr_assert_eq(clt_tensor_dtype(back), clt_tensor_dtype(c[k].t));
        void *h = read_raw(back);
        cr_assert(memcmp(h, c[k].v, c[k].size) == 0);
        free(h);
        clt_tensor_free(back);
    }
    clt_named_tensor nt[2] = {{"a", a}, {"b", b}};
    CHECK(clt_save_safetensors(path, nt, 2));
    FILE *f = fopen(path, "rb");
    char buf[256] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    cr_assert(got > 8 && strstr(buf + 8, "\"I8\"") && strstr(buf + 8, "\"I16\""), "%s", buf + 8);
    clt_named_tensor *back = NULL;
    size_t nb = 0;
    CHECK(clt_load_safetensors(path, dev, &back, &nb));
    cr_assert_eq(nb, 2);
    for (size_t k = 0; k < 2; k++) {
        int which = strcmp(back[k].name, "a") == 0 ? 0 : 1;
        cr_assert_eq(clt_tensor_dtype(back[k].tensor), clt_tensor_dtype(c[which].t));
        void *h = read_raw(back[k].tensor);
        cr_assert(memcmp(h, c[which].v, c[which].size) == 0);
        free(h);
    }
    clt_named_tensors_free(back, nb);
    remove(path);

    for (int k = 0; k < 2; k++) {
        DLManagedTensor *dl = NULL;
        CHECK(clt_to_dlpack(c[k].t, &dl));
        cr_assert_eq(dl->dl_tensor.dtype.code, kDLInt);
        cr_assert_eq(dl->dl_tensor.dtype.bits, k == 0 ? 8 : 16);
        cr_assert(memcmp(dl->dl_tensor.data, c[k].v, c[k].size) == 0);
        clt_tensor *t2;
        CHECK(clt_from_dlpack(dev, dl, &t2));
        cr_assert_eq(clt_tensor_dtype(t2), clt_tensor_dtype(c[k].t));
        void *h = read_raw(t2);
        cr_assert(memcmp(h, c[k].v, c[k].size) == 0);
        free(h);
        dl->deleter(dl);
        clt_tensor_free(t2);
    }
    clt_tensor_free(a);
    clt_tensor_free(b);
}
