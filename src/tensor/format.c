/* format.c: host-side element conversion and the tolist()-style formatter,
 * which prints floats as Python's repr() does (shortest round-trip digits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static double half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), exp - 25);
    return sign ? -v : v;
}

static uint16_t double_to_half(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    v = fabs(v);
    if (isnan(v))
        return 0x7e00;
    if (v >= 65520.0)
        return sign | 0x7c00;
    if (v < ldexp(1.0, -14)) {
        /* subnormal: round to nearest even multiple of 2^-24 */
        double m = nearbyint(v * ldexp(1.0, 24));
        return sign | (uint16_t)m;
    }
    int e;
    double f = frexp(v, &e); /* v = f * 2^e, f in [0.5, 1) */
    double m = nearbyint(ldexp(f, 11)); /* 11 significant bits */
    if (m >= 2048.0) {
        m /= 2;
        e++;
    }
    return sign | (uint16_t)((e + 14) << 10) | ((uint16_t)m & 0x3ff);
}

/* bfloat16 is float32's upper half. */
static double bf16_to_double(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Through float32, rounded to nearest even with NaN kept (quiet), as
 * c10::BFloat16's constructor (round_to_nearest_even) and STORE_BF16 in
 * cl/prelude.cl. */
static uint16_t double_to_bf16(double v)
{
    float f = (float)v;
    if (isnan(f))
        return 0x7fc0;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

double clt__element_to_double(clt_dtype dtype, const void *p)
{
    switch (dtype) {
    case CLT_FLOAT32: { float v; memcpy(&v, p, 4); return v; }
    case CLT_FLOAT64: { double v; memcpy(&v, p, 8); return v; }
    case CLT_FLOAT16: { uint16_t v; memcpy(&v, p, 2); return half_to_double(v); }
    case CLT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case CLT_INT64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case CLT_UINT8: return *(const uint8_t *)p;
    case CLT_INT8: return *(const int8_t *)p;
    case CLT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case CLT_BOOL: return *(const uint8_t *)p != 0;
    case CLT_COMPLEX64: { float v; memcpy(&v, p, 4); return v; } /* the real part */
    case CLT_COMPLEX128: { double v; memcpy(&v, p, 8); return v; }
    case CLT_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return bf16_to_double(v); }
    case CLT_DTYPE_COUNT: break;
    }
    return 0;
}

void clt__element_from_double(clt_dtype dtype, double v, void *p)
{
    switch (dtype) {
    case CLT_FLOAT32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case CLT_FLOAT64: memcpy(p, &v, 8); break;
    case CLT_FLOAT16: { uint16_t x = double_to_half(v); memcpy(p, &x, 2); break; }
    case CLT_INT32: { uint32_t x = (uint32_t)(uint64_t)clt__trunc_int64(v); memcpy(p, &x, 4); break; }
    case CLT_INT64: { int64_t x = clt__trunc_int64(v); memcpy(p, &x, 8); break; }
    case CLT_UINT8: *(uint8_t *)p = (uint8_t)(uint64_t)clt__trunc_int64(v); break;
    case CLT_INT8: *(uint8_t *)p = (uint8_t)(uint64_t)clt__trunc_int64(v); break;
    case CLT_INT16: { uint16_t x = (uint16_t)(uint64_t)clt__trunc_int64(v); memcpy(p, &x, 2); break; }
    case CLT_BOOL: *(uint8_t *)p = v != 0; break;
    case CLT_COMPLEX64: { float x[2] = {(float)v, 0.0f}; memcpy(p, x, 8); break; }
    case CLT_COMPLEX128: { double x[2] = {v, 0.0}; memcpy(p, x, 16); break; }
    case CLT_BFLOAT16: { uint16_t x = double_to_bf16(v); memcpy(p, &x, 2); break; }
    case CLT_DTYPE_COUNT: break;
    }
}

/* Python's repr(float): the shortest digits that read back to the same
 * double, fixed notation for 1e-4 <= |v| < 1e16, else scientific. */
static void py_float(clt__strbuf *sb, double v)
{
    if (isnan(v)) {
        clt__sb_printf(sb, "nan");
        return;
    }
    if (isinf(v)) {
        clt__sb_printf(sb, v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == 0) {
        clt__sb_printf(sb, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char buf[64];
    for (int prec = 0; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* buf is "-d.ddde+XX": collect the digits and the exponent. */
    const char *s = buf;
    bool neg = *s == '-';
    if (neg)
        s++;
    char digits[32];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            digits[nd++] = *s;
    int exp10 = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int decpt = exp10 + 1;
    if (neg)
        clt__sb_printf(sb, "-");
    if (decpt > 16 || decpt < -3) {
        clt__sb_printf(sb, "%c", digits[0]);
        if (nd > 1)
            clt__sb_printf(sb, ".%s", digits + 1);
        clt__sb_printf(sb, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (decpt <= 0) {
        clt__sb_printf(sb, "0.");
        for (int i = 0; i < -decpt; i++)
            clt__sb_printf(sb, "0");
        clt__sb_printf(sb, "%s", digits);
    } else if (decpt < nd) {
        clt__sb_printf(sb, "%.*s.%s", decpt, digits, digits + decpt);
    } else {
        clt__sb_printf(sb, "%s", digits);
        for (int i = nd; i < decpt; i++)
            clt__sb_printf(sb, "0");
        clt__sb_printf(sb, ".0");
    }
}

/* repr(float) without a final ".0", as in the parts of repr(complex). */
static void py_part(clt__strbuf *sb, double v)
{
    clt__strbuf one = {0};
    py_float(&one, v);
    if (one.failed || one.data == NULL) {
        sb->failed = true;
        clt__sb_free(&one);
        return;
    }
    size_t n = one.len;
    if (n > 2 && strcmp(one.data + n - 2, ".0") == 0)
        n -= 2;
    clt__sb_printf(sb, "%.*s", (int)n, one.data);
    clt__sb_free(&one);
}

static void format_element(clt__strbuf *sb, clt_dtype dtype, const unsigned char *p)
{
    switch (dtype) {
    case CLT_FLOAT32:
    case CLT_FLOAT64:
    case CLT_FLOAT16:
    case CLT_BFLOAT16:
        py_float(sb, clt__element_to_double(dtype, p));
        break;
    case CLT_INT32: { int32_t v; memcpy(&v, p, 4); clt__sb_printf(sb, "%d", v); break; }
    case CLT_INT64: { int64_t v; memcpy(&v, p, 8); clt__sb_printf(sb, "%lld", (long long)v); break; }
    case CLT_UINT8: clt__sb_printf(sb, "%u", (unsigned)*p); break;
    case CLT_INT8:
    case CLT_INT16: clt__sb_printf(sb, "%d", (int)clt__element_to_double(dtype, p)); break;
    case CLT_BOOL: clt__sb_printf(sb, *p ? "True" : "False"); break;
    case CLT_COMPLEX64:
    case CLT_COMPLEX128: {
        /* Python's repr of a complex: "(1+2j)", "(1.5-0j)", "2j" when the
         * real part is +0 (each part as repr(float) without a final ".0") */
        clt_dtype part = clt__complex_part_dtype(dtype);
        size_t half = clt_dtype_size(part);
        double re = clt__element_to_double(part, p), im = clt__element_to_double(part, p + half);
        bool bare = re == 0 && !signbit(re);
        if (!bare) {
            clt__sb_printf(sb, "(");
            py_part(sb, re);
            if (!signbit(im) || isnan(im))
                clt__sb_printf(sb, "+");
        }
        py_part(sb, im);
        clt__sb_printf(sb, bare ? "j" : "j)");
        break;
    }
    case CLT_DTYPE_COUNT: break;
    }
}

static void format_dim(clt__strbuf *sb, const clt_tensor *t, const unsigned char *data, int d,
                       size_t *k)
{
    size_t es = clt_dtype_size(t->dtype);
    if (d == t->ndim) {
        format_element(sb, t->dtype, data + *k * es);
        (*k)++;
        return;
    }
    clt__sb_printf(sb, "[");
    for (int64_t i = 0; i < t->shape[d]; i++) {
        if (i)
            clt__sb_printf(sb, ", ");
        format_dim(sb, t, data, d + 1, k);
    }
    clt__sb_printf(sb, "]");
}

clt_status clt_tensor_format(const clt_tensor *t, char **out)
{
    CLT__REQUIRE_ARG(out, "clt_tensor_format");
    *out = NULL;
    CLT__REQUIRE_ARG(t, "clt_tensor_format");
    clt_status st = clt__check_host_size(t, "clt_tensor_format");
    if (st != CLT_OK)
        return st;
    /* An empty tensor still prints a bracket pair for every index of the
     * dims before its first zero one ([2^40, 0] would be 2^41 characters):
     * the pairs are counted first, and more than 2^28 refused. */
    double pairs = 0, groups = 1;
    for (int d = 0; d < t->ndim && groups > 0; d++) {
        pairs += groups;
        groups *= (double)t->shape[d];
    }
    if (pairs + (double)t->numel > (double)(1 << 28)) {
        char s[160];
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "clt_tensor_format: the text of a tensor of shape %s would hold %.0f "
                          "elements and bracket pairs, more than 2^28",
                          clt__shape_str(s, sizeof s, t->ndim, t->shape),
                          pairs + (double)t->numel);
    }
    size_t bytes = clt_tensor_nbytes(t);
    unsigned char *data = clt__malloc(bytes ? bytes : 1);
    if (data == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                          "clt_tensor_format: no host memory for %zu bytes", bytes);
    st = clt__tensor_read_at(t, data, bytes, "clt_tensor_format", __builtin_return_address(0));
    if (st != CLT_OK) {
        free(data);
        return st;
    }
    clt__strbuf sb = {0};
    size_t k = 0;
    format_dim(&sb, t, data, 0, &k);
    free(data);
    if (sb.failed) {
        clt__sb_free(&sb);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "clt_tensor_format: out of host memory");
    }
    *out = clt__sb_take(&sb);
    return clt__ok();
}
