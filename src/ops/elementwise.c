/* elementwise.c: binary and unary elementwise ops: broadcasting, type
 * promotion, device checks, and the launch of cl/elementwise.cl. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- type promotion --------------------------------------------------------- */

static int category(clt_dtype dt)
{
    return dt == CLT_BOOL ? 0 : clt__dtype_is_float(dt) ? 2 : 1;
}

clt_dtype clt_promote_types(clt_dtype a, clt_dtype b)
{
    if (a == b)
        return a;
    int ca = category(a), cb = category(b);
    if (ca != cb)
        return ca > cb ? a : b;
    if (ca == 2) {
        if (a == CLT_FLOAT64 || b == CLT_FLOAT64)
            return CLT_FLOAT64;
        return CLT_FLOAT32; /* float16 with float32 */
    }
    /* integers: uint8 < int32 < int64 */
    static const int rank[CLT_DTYPE_COUNT] = {[CLT_UINT8] = 1, [CLT_INT32] = 2, [CLT_INT64] = 3};
    return rank[a] > rank[b] ? a : b;
}

/* Result dtype of a binary op; 0-dimensional tensors weigh less, as in
 * PyTorch: they only decide when their category is higher. */
static clt_dtype result_type(const clt_tensor *a, const clt_tensor *b)
{
    bool za = a->ndim == 0, zb = b->ndim == 0;
    if (za == zb)
        return clt_promote_types(a->dtype, b->dtype);
    const clt_tensor *dim = za ? b : a, *zero = za ? a : b;
    if (category(zero->dtype) > category(dim->dtype))
        return zero->dtype;
    return dim->dtype;
}

clt_status clt_result_type(const clt_tensor *a, const clt_tensor *b, clt_dtype *out)
{
    CLT__REQUIRE_ARG(a, "clt_result_type");
    CLT__REQUIRE_ARG(b, "clt_result_type");
    CLT__REQUIRE_ARG(out, "clt_result_type");
    *out = result_type(a, b);
    return clt__ok();
}

/* A Python number's dtype against a tensor: integral values act as ints. */
static clt_dtype scalar_result_type(clt_dtype t, double s)
{
    bool integral = isfinite(s) && s == floor(s);
    int cs = integral ? 1 : 2;
    if (cs <= category(t))
        return t;
    return cs == 2 ? CLT_FLOAT32 : CLT_INT64;
}

/* ---- broadcasting ------------------------------------------------------------ */

clt_status clt__broadcast_shapes(int na, const int64_t *sa, int nb, const int64_t *sb, int *nout,
                                 int64_t *out, const char *fn)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char s1[160], s2[160];
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: the size of tensor a (%lld) must match the size of tensor b "
                              "(%lld) at non-singleton dimension %d: shapes %s and %s do not "
                              "broadcast",
                              fn, (long long)da, (long long)db, i,
                              clt__shape_str(s1, sizeof s1, na, sa),
                              clt__shape_str(s2, sizeof s2, nb, sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return CLT_OK;
}

/* Strides of t seen through the broadcast shape (0 on broadcast dims). */
void clt__broadcast_strides(const clt_tensor *t, int n, const int64_t *shape, int64_t *strides)
{
    for (int i = 0; i < n; i++) {
        int it = t->ndim - n + i;
        strides[i] = (it >= 0 && t->shape[it] == shape[i] && shape[i] != 1) ? t->strides[it] : 0;
    }
}

static bool same_shape(const clt_tensor *t, int n, const int64_t *shape)
{
    if (t->ndim != n)
        return false;
    for (int i = 0; i < n; i++)
        if (t->shape[i] != shape[i])
            return false;
    return true;
}

/* ---- launching ---------------------------------------------------------------- */

static clt_status options(clt_dtype compute, clt_dtype outdt, char **opts)
{
    clt__strbuf sb = {0};
    clt__dtype_defs(&sb, "T", compute);
    clt__dtype_defs(&sb, "O", outdt);
    *opts = clt__sb_take(&sb);
    if (*opts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "elementwise: out of host memory");
    return CLT_OK;
}

/* Operands converted to the compute dtype; new handles. */
static clt_status cast_operand(const clt_tensor *t, clt_dtype dt, clt_tensor **out)
{
    if (t->dtype == dt)
        return clt__tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out);
    return clt__contiguous_as(t, dt, out);
}

typedef enum op_kind { ARITH, TRUE_DIV } op_kind;

static clt_dtype compute_dtype(op_kind kind, clt_dtype promoted)
{
    if (kind == TRUE_DIV && !clt__dtype_is_float(promoted))
        return CLT_FLOAT32;
    return promoted;
}

static clt_status binary_tt(const char *op, op_kind kind, const clt_tensor *a,
                            const clt_tensor *b, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    int n = 0;
    int64_t shape[CLT_MAX_DIMS];
    st = clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n, shape, fn);
    if (st != CLT_OK)
        return st;
    clt_dtype ct = compute_dtype(kind, result_type(a, b));
    st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;

    clt_tensor *ca = NULL, *cb = NULL, *r = NULL;
    char *opts = NULL;
    CLT__TRY(cast_operand(a, ct, &ca));
    CLT__TRY(cast_operand(b, ct, &cb));
    CLT__TRY(clt__tensor_new(a->dev, ct, n, shape, &r));
    CLT__TRY(options(ct, ct, &opts));
    {
        clt__layout L;
        memset(&L, 0, sizeof L);
        L.ndim = n;
        L.off0 = ca->offset;
        L.off1 = cb->offset;
        cl_int contig = same_shape(ca, n, shape) && same_shape(cb, n, shape) &&
                        clt__is_contiguous(ca) && clt__is_contiguous(cb);
        memcpy(L.shape, shape, sizeof(int64_t) * (size_t)n);
        clt__broadcast_strides(ca, n, shape, L.s0);
        clt__broadcast_strides(cb, n, shape, L.s1);
        cl_mem mo = clt__mem(r), ma = clt__mem(ca), mb = clt__mem(cb);
        cl_ulong cnt = (cl_ulong)r->numel;
        size_t gws = (size_t)cnt;
        char kname[64];
        snprintf(kname, sizeof kname, "%s_tt", op);
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(mb), CLT__ARG(cnt),
                           CLT__ARG(contig), CLT__ARG(L)};
        CLT__TRY(clt__launch(a->dev, "elementwise", opts, kname, 1, &gws, NULL, 6, args));
    }
    *out = r;
    r = NULL;
done:
    free(opts);
    clt_tensor_free(ca);
    clt_tensor_free(cb);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

static clt_status binary_ts(const char *op, op_kind kind, const clt_tensor *a, double s,
                            int reversed, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_dtype ct = compute_dtype(kind, scalar_result_type(a->dtype, s));
    clt_status st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ca = NULL, *r = NULL;
    char *opts = NULL;
    CLT__TRY(cast_operand(a, ct, &ca));
    CLT__TRY(clt__tensor_new(a->dev, ct, a->ndim, a->shape, &r));
    CLT__TRY(options(ct, ct, &opts));
    {
        clt__layout L;
        memset(&L, 0, sizeof L);
        L.ndim = ca->ndim;
        L.off0 = ca->offset;
        memcpy(L.shape, ca->shape, sizeof L.shape);
        memcpy(L.s0, ca->strides, sizeof L.s0);
        cl_int contig = clt__is_contiguous(ca);
        cl_int rev = reversed;
        cl_mem mo = clt__mem(r), ma = clt__mem(ca);
        cl_ulong cnt = (cl_ulong)r->numel;
        unsigned char sv[8];
        size_t ssize = clt__scalar_arg(ct, s, sv);
        size_t gws = (size_t)cnt;
        char kname[64];
        snprintf(kname, sizeof kname, "%s_ts", op);
        clt__arg args[] = {CLT__ARG(mo),  CLT__ARG(ma),     {ssize, sv}, CLT__ARG(rev),
                           CLT__ARG(cnt), CLT__ARG(contig), CLT__ARG(L)};
        CLT__TRY(clt__launch(a->dev, "elementwise", opts, kname, 1, &gws, NULL, 7, args));
    }
    *out = r;
    r = NULL;
done:
    free(opts);
    clt_tensor_free(ca);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

static clt_status unary(const char *op, const clt_tensor *a, clt_tensor **out, const char *fn)
{
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_tensor *r = NULL;
    char *opts = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__tensor_new(a->dev, a->dtype, a->ndim, a->shape, &r));
    CLT__TRY(options(a->dtype, a->dtype, &opts));
    {
        clt__layout L;
        memset(&L, 0, sizeof L);
        L.ndim = a->ndim;
        L.off0 = a->offset;
        memcpy(L.shape, a->shape, sizeof L.shape);
        memcpy(L.s0, a->strides, sizeof L.s0);
        cl_int contig = clt__is_contiguous(a);
        cl_mem mo = clt__mem(r), ma = clt__mem(a);
        cl_ulong cnt = (cl_ulong)r->numel;
        size_t gws = (size_t)cnt;
        clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(cnt), CLT__ARG(contig),
                           CLT__ARG(L)};
        CLT__TRY(clt__launch(a->dev, "elementwise", opts, op, 1, &gws, NULL, 5, args));
    }
    *out = r;
    r = NULL;
done:
    free(opts);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- public entry points -------------------------------------------------------- */

clt_status clt_add(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return binary_tt("add", ARITH, a, b, out, "clt_add");
}

clt_status clt_sub(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return binary_tt("sub", ARITH, a, b, out, "clt_sub");
}

clt_status clt_mul(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return binary_tt("mul", ARITH, a, b, out, "clt_mul");
}

clt_status clt_div(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return binary_tt("div", TRUE_DIV, a, b, out, "clt_div");
}

clt_status clt_add_scalar(const clt_tensor *a, double s, clt_tensor **out)
{
    return binary_ts("add", ARITH, a, s, 0, out, "clt_add_scalar");
}

clt_status clt_sub_scalar(const clt_tensor *a, double s, clt_tensor **out)
{
    return binary_ts("sub", ARITH, a, s, 0, out, "clt_sub_scalar");
}

clt_status clt_rsub_scalar(const clt_tensor *a, double s, clt_tensor **out)
{
    return binary_ts("sub", ARITH, a, s, 1, out, "clt_rsub_scalar");
}

clt_status clt_mul_scalar(const clt_tensor *a, double s, clt_tensor **out)
{
    return binary_ts("mul", ARITH, a, s, 0, out, "clt_mul_scalar");
}

clt_status clt_div_scalar(const clt_tensor *a, double s, clt_tensor **out)
{
    return binary_ts("div", TRUE_DIV, a, s, 0, out, "clt_div_scalar");
}

clt_status clt_rdiv_scalar(const clt_tensor *a, double s, clt_tensor **out)
{
    return binary_ts("div", TRUE_DIV, a, s, 1, out, "clt_rdiv_scalar");
}

clt_status clt_neg(const clt_tensor *a, clt_tensor **out)
{
    if (a && a->dtype == CLT_BOOL) {
        if (out)
            *out = NULL;
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "clt_neg: negation, the '-' operator, on a bool tensor is not "
                          "supported; use a logical not instead");
    }
    return unary("neg", a, out, "clt_neg");
}
