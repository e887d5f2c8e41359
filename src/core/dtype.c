/* dtype.c: everything the library knows about its dtypes: names, sizes,
 * parsing, PyTorch's promotion, the -D definitions that specialise kernels,
 * and the conversion and range checks of scalar arguments. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- names and sizes -------------------------------------------------------- */

const char *clt_dtype_name(clt_dtype dtype)
{
    switch (dtype) {
#define CLT_DTYPE_NAME_(up, low, size) case CLT_##up: return #low;
        CLT_DTYPE_MAP(CLT_DTYPE_NAME_)
#undef CLT_DTYPE_NAME_
    case CLT_DTYPE_COUNT: break;
    }
    return "invalid";
}

size_t clt_dtype_size(clt_dtype dtype)
{
    switch (dtype) {
#define CLT_DTYPE_SIZE_(up, low, size) case CLT_##up: return size;
        CLT_DTYPE_MAP(CLT_DTYPE_SIZE_)
#undef CLT_DTYPE_SIZE_
    case CLT_DTYPE_COUNT: break;
    }
    return 0;
}

clt_status clt_dtype_parse(const char *name, clt_dtype *out)
{
    static const struct { const char *name; clt_dtype dtype; } names[] = {
        {"float32", CLT_FLOAT32}, {"float", CLT_FLOAT32}, {"f32", CLT_FLOAT32},
        {"float64", CLT_FLOAT64}, {"double", CLT_FLOAT64}, {"f64", CLT_FLOAT64},
        {"float16", CLT_FLOAT16}, {"half", CLT_FLOAT16}, {"f16", CLT_FLOAT16},
        {"int32", CLT_INT32}, {"int", CLT_INT32}, {"i32", CLT_INT32},
        {"int64", CLT_INT64}, {"long", CLT_INT64}, {"i64", CLT_INT64},
        {"uint8", CLT_UINT8}, {"u8", CLT_UINT8}, {"bool", CLT_BOOL},
        {"complex64", CLT_COMPLEX64}, {"cfloat", CLT_COMPLEX64}, {"c64", CLT_COMPLEX64},
        {"complex128", CLT_COMPLEX128}, {"cdouble", CLT_COMPLEX128}, {"c128", CLT_COMPLEX128},
        {"bfloat16", CLT_BFLOAT16}, {"bf16", CLT_BFLOAT16},
        {"int8", CLT_INT8}, {"i8", CLT_INT8},
        {"int16", CLT_INT16}, {"short", CLT_INT16}, {"i16", CLT_INT16},
    };
    CLT__REQUIRE_ARG(name, "clt_dtype_parse");
    CLT__REQUIRE_ARG(out, "clt_dtype_parse");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (clt__strcaseeq(name, names[i].name)) {
            *out = names[i].dtype;
            return clt__ok();
        }
    char q[CLT__QUOTE_SIZE];
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "clt_dtype_parse: unknown dtype '%s': expected float32, float64, float16, "
                      "int32, int64, uint8, bool, complex64, complex128, bfloat16, int8 or int16",
                      CLT__QUOTE(q, name));
}

/* ---- promotion ------------------------------------------------------------------ */

/* bool < integer < floating < complex */
int clt__dtype_category(clt_dtype dt)
{
    return dt == CLT_BOOL ? 0 : clt__dtype_is_complex(dt) ? 3 : clt__dtype_is_float(dt) ? 2 : 1;
}

clt_dtype clt_promote_types(clt_dtype a, clt_dtype b)
{
    if (!clt__dtype_valid(a) || !clt__dtype_valid(b))
        return CLT_DTYPE_COUNT;
    if (a == b)
        return a;
    if (clt__dtype_is_complex(a) || clt__dtype_is_complex(b)) {
        /* complex64 with float64 is complex128, as in torch */
        if (a == CLT_COMPLEX128 || b == CLT_COMPLEX128 || a == CLT_FLOAT64 || b == CLT_FLOAT64)
            return CLT_COMPLEX128;
        return CLT_COMPLEX64;
    }
    int ca = clt__dtype_category(a), cb = clt__dtype_category(b);
    if (ca != cb)
        return ca > cb ? a : b;
    if (ca == 2) {
        if (a == CLT_FLOAT64 || b == CLT_FLOAT64)
            return CLT_FLOAT64;
        return CLT_FLOAT32; /* float16 with float32 or bfloat16, as torch */
    }
    /* integers: uint8, int8 < int16 < int32 < int64; uint8 with int8 is
     * int16, the smallest type holding both, as torch */
    if ((a == CLT_UINT8 && b == CLT_INT8) || (a == CLT_INT8 && b == CLT_UINT8))
        return CLT_INT16;
    static const int rank[CLT_DTYPE_COUNT] = {[CLT_UINT8] = 1, [CLT_INT8] = 1, [CLT_INT16] = 2,
                                              [CLT_INT32] = 3, [CLT_INT64] = 4};
    return rank[a] > rank[b] ? a : b;
}

/* ---- kernels and scalars ------------------------------------------------------ */

bool clt__dtype_valid(clt_dtype dt)
{
    return (int)dt >= 0 && dt < CLT_DTYPE_COUNT;
}

bool clt__dtype_is_float(clt_dtype dt)
{
    return dt == CLT_FLOAT32 || dt == CLT_FLOAT64 || dt == CLT_FLOAT16 || dt == CLT_BFLOAT16;
}

bool clt__dtype_is_half(clt_dtype dt)
{
    return dt == CLT_FLOAT16 || dt == CLT_BFLOAT16;
}

bool clt__dtype_is_complex(clt_dtype dt)
{
    return dt == CLT_COMPLEX64 || dt == CLT_COMPLEX128;
}

clt_dtype clt__complex_part_dtype(clt_dtype dt)
{
    return dt == CLT_COMPLEX128 ? CLT_FLOAT64 : CLT_FLOAT32;
}

clt_dtype clt__complex_of(clt_dtype dt)
{
    return dt == CLT_FLOAT64 || dt == CLT_COMPLEX128 ? CLT_COMPLEX128 : CLT_COMPLEX64;
}

int clt_is_complex(const clt_tensor *t)
{
    return t != NULL && clt__dtype_is_complex(t->dtype);
}

void clt__dtype_defs(clt__strbuf *sb, const char *p, clt_dtype dt)
{
    static const struct {
        const char *storage, *compute, *load, *store;
        int is_float, is_int, is_bool, is_unsigned;
    } cl[CLT_DTYPE_COUNT] = {
        [CLT_FLOAT32] = {"float", "float", "LOAD_PLAIN", "STORE_PLAIN", 1, 0, 0, 0},
        [CLT_FLOAT64] = {"double", "double", "LOAD_PLAIN", "STORE_PLAIN", 1, 0, 0, 0},
        [CLT_FLOAT16] = {"half", "float", "LOAD_HALF", "STORE_HALF", 1, 0, 0, 0},
        [CLT_INT32] = {"int", "int", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 0},
        [CLT_INT64] = {"long", "long", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 0},
        [CLT_UINT8] = {"uchar", "uint", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 1},
        [CLT_BOOL] = {"uchar", "uint", "LOAD_PLAIN", "STORE_BOOL", 0, 0, 1, 1},
        [CLT_COMPLEX64] = {"float2", "float2", "LOAD_PLAIN", "STORE_PLAIN", 0, 0, 0, 0},
        [CLT_COMPLEX128] = {"double2", "double2", "LOAD_PLAIN", "STORE_PLAIN", 0, 0, 0, 0},
        [CLT_BFLOAT16] = {"clt_bf16", "float", "LOAD_BF16", "STORE_BF16", 1, 0, 0, 0},
        [CLT_INT8] = {"char", "int", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 0},
        [CLT_INT16] = {"short", "int", "LOAD_PLAIN", "STORE_PLAIN", 0, 1, 0, 0},
    };
    if (!clt__dtype_valid(dt))
        return;
    /* The kernels written for real dtypes would compute garbage on pairs:
     * the marker makes clt__launch refuse any of them given a complex
     * operand (src/device/program.c), including kernels added later. */
    if (clt__dtype_is_complex(dt) && !(sb->data && strstr(sb->data, CLT__COMPLEX_MARK)))
        clt__sb_printf(sb, " %s", CLT__COMPLEX_MARK);
    clt__sb_printf(sb,
                   " -D%s=%s -D%s_C=%s -D%s_LOAD=%s -D%s_STORE=%s -D%s_IS_FLOAT=%d"
                   " -D%s_IS_INT=%d -D%s_IS_BOOL=%d -D%s_IS_UNSIGNED=%d -D%s_ID=%d",
                   p, cl[dt].storage, p, cl[dt].compute, p, cl[dt].load, p, cl[dt].store, p,
                   cl[dt].is_float, p, cl[dt].is_int, p, cl[dt].is_bool, p, cl[dt].is_unsigned, p,
                   (int)dt);
    if ((dt == CLT_FLOAT64 || dt == CLT_COMPLEX128) && !(sb->data && strstr(sb->data, "-DCLT_FP64")))
        clt__sb_printf(sb, " -DCLT_FP64");
    if (dt == CLT_FLOAT16 && !(sb->data && strstr(sb->data, "-DCLT_FP16")))
        clt__sb_printf(sb, " -DCLT_FP16");
}

const char *clt__opts_cached(clt__opts_slot *slot, const char *p0, clt_dtype t0, const char *p1,
                             clt_dtype t1, const char *extra)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    if (__atomic_load_n(&slot->ready, __ATOMIC_ACQUIRE))
        return slot->text;
    const char *res = slot->text;
    pthread_mutex_lock(&lock);
    if (!slot->ready) {
        clt__strbuf sb = {0};
        clt__dtype_defs(&sb, p0, t0);
        if (p1)
            clt__dtype_defs(&sb, p1, t1);
        clt__sb_printf(&sb, "%s", extra ? extra : "");
        if (sb.failed || sb.data == NULL || sb.len >= sizeof slot->text) {
            res = NULL;
        } else {
            memcpy(slot->text, sb.data, sb.len + 1);
            __atomic_store_n(&slot->ready, 1, __ATOMIC_RELEASE);
        }
        clt__sb_free(&sb);
    }
    pthread_mutex_unlock(&lock);
    if (res == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "kernel build options: out of host memory");
    return res;
}

#define TWO63 9223372036854775808.0 /* 2^63 */

/* No double lies strictly between -2^63 - 1 and -2^63, so v >= -2^63 is
 * the exact lower bound; NaN fails both comparisons. */
int64_t clt__trunc_int64(double v)
{
    return v >= -TWO63 && v < TWO63 ? (int64_t)v : 0;
}

size_t clt__scalar_arg(clt_dtype dtype, double v, void *buf)
{
    switch (dtype) {
    case CLT_FLOAT64: {
        cl_double x = v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_FLOAT32:
    case CLT_FLOAT16:
    case CLT_BFLOAT16: {
        cl_float x = (cl_float)v;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_INT32: {
        uint32_t x = (uint32_t)(uint64_t)clt__trunc_int64(v); /* wraps modulo 2^32 */
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_INT8:
    case CLT_INT16: {
        /* computed in int: the value wrapped to the dtype first (torch
         * takes 300 as 44 for an int8 operand), then sign-extended */
        uint64_t w = (uint64_t)clt__trunc_int64(v);
        cl_int x = dtype == CLT_INT8 ? (int8_t)(uint8_t)w : (int16_t)(uint16_t)w;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_INT64: {
        cl_long x = clt__trunc_int64(v);
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_UINT8: {
        cl_uint x = (uint8_t)(uint64_t)clt__trunc_int64(v); /* wraps modulo 256 */
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_BOOL: {
        cl_uint x = v != 0;
        memcpy(buf, &x, sizeof x);
        return sizeof x;
    }
    case CLT_COMPLEX64:
    case CLT_COMPLEX128: /* no real kernel takes a complex scalar */
    case CLT_DTYPE_COUNT:
        break;
    }
    return 0;
}

clt_status clt__scalar_check(clt_dtype dtype, double v, clt__scalar_rule rule, const char *fn)
{
    double lo = 0, hi = 0; /* v must lie in [lo, hi] */
    switch (dtype) {
    case CLT_FLOAT32:
    case CLT_FLOAT16:
    case CLT_BFLOAT16:
        if (rule == CLT__SCALAR_WRAP || !isfinite(v))
            return CLT_OK;
        hi = dtype == CLT_FLOAT16 ? 65504.0 : dtype == CLT_BFLOAT16 ? 3.3895313892515355e38 : FLT_MAX;
        lo = -hi;
        break;
    case CLT_INT32:
    case CLT_INT64:
    case CLT_UINT8:
    case CLT_INT8:
    case CLT_INT16:
        if (rule == CLT__SCALAR_WRAP || dtype == CLT_INT64) {
            if (v >= -TWO63 && v < TWO63)
                return CLT_OK;
            lo = -TWO63;
            hi = TWO63 - 1024.0; /* the largest double below 2^63 */
            if (dtype != CLT_INT64)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: value %.17g cannot be converted to type int64 without "
                                  "overflow (an integer scalar for a %s operand must lie in "
                                  "int64's range [%.17g, %.17g]; inside it, it wraps to %s)",
                                  fn, v, clt_dtype_name(dtype), lo, hi, clt_dtype_name(dtype));
        } else if (isfinite(v) && v != trunc(v)) {
            /* a fractional value is c10's floating Scalar, checked against
             * the dtype's own range without the slack of truncation (127.5
             * does not fit int8, nor -0.5 uint8) */
            hi = dtype == CLT_INT8    ? 127.0
                 : dtype == CLT_INT16 ? 32767.0
                 : dtype == CLT_INT32 ? 2147483647.0
                                      : 255.0;
            lo = dtype == CLT_UINT8 ? 0.0 : -hi - 1;
            if (v >= lo && v <= hi)
                return CLT_OK;
        } else if (dtype == CLT_INT32) {
            if (v > -2147483649.0 && v < 2147483648.0)
                return CLT_OK;
            lo = -2147483648.0;
            hi = 2147483647.0;
        } else if (dtype == CLT_INT8 || dtype == CLT_INT16) {
            /* c10's overflow check: the dtype's own range (uint8's below
             * lets negative values wrap, as c10 does) */
            hi = dtype == CLT_INT8 ? 127.0 : 32767.0;
            lo = -hi - 1;
            if (v > lo - 1 && v < hi + 1)
                return CLT_OK;
        } else {
            if (v > -256.0 && v < 256.0)
                return CLT_OK;
            lo = -255;
            hi = 255;
        }
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: value %.17g cannot be converted to type %s without overflow "
                          "(it must lie in [%.17g, %.17g])",
                          fn, v, clt_dtype_name(dtype), lo, hi);
    default:
        return CLT_OK;
    }
    if (v >= lo && v <= hi)
        return CLT_OK;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: value %.17g cannot be converted to type %s without overflow (its "
                      "largest finite value is %.9g)",
                      fn, v, clt_dtype_name(dtype), hi);
}
