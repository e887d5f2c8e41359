/* special2.c: the forwards of the rest of torch.special (incomplete gamma,
 * erfcx, zeta, the Bessel family, the orthogonal polynomials): dtype and
 * shape checks, then one launch of cl/special2.cl over contiguous
 * operands broadcast to the result's shape.  Public entry points, with
 * their autograd, are in src/autograd/grad_special2.c. */
#include <string.h>

#include "internal.h"

static const char *special2_options(clt_dtype dt, const char *fn)
{
    static clt__opts_slot slots[CLT_DTYPE_COUNT];
    const char *opts = clt__opts_cached(&slots[dt], "T", dt, NULL, dt, "");
    if (opts == NULL)
        clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    return opts;
}

/* The dtype computed in: float tensors keep theirs; integer and bool give
 * float32 (torch.special.bessel_j0 of an int64 tensor is float32), or are
 * refused when `float_only` (torch.igamma's "igamma_cpu" not implemented
 * for 'Long'). */
static clt_status compute_dtype(clt_dtype promoted, bool float_only, const char *fn,
                                clt_dtype *out)
{
    if (clt__dtype_is_complex(promoted))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: not implemented for %s tensors (real floating dtypes only)", fn,
                          clt_dtype_name(promoted));
    if (!clt__dtype_is_float(promoted)) {
        if (float_only)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: not implemented for %s tensors, as PyTorch's igamma; it "
                              "needs a floating-point dtype (convert with clt_to_dtype)",
                              fn, clt_dtype_name(promoted));
        promoted = CLT_FLOAT32;
    }
    *out = promoted;
    return CLT_OK;
}

/* A contiguous copy of t in dtype ct broadcast to (n, shape), or t itself
 * (in *use) when it already is one. */
static clt_status operand(const char *fn, const clt_tensor *t, clt_dtype ct, int n,
                          const int64_t *shape, clt_tensor **tmp, const clt_tensor **use)
{
    clt_tensor *e = NULL;
    clt_status st = CLT_OK;
    *use = t;
    bool same = t->ndim == n && (n == 0 || memcmp(t->shape, shape, sizeof(int64_t) * n) == 0);
    if (same && t->dtype == ct && t->offset == 0 && clt__is_contiguous(t))
        return CLT_OK;
    if (!same)
        st = clt__expand(t, n, shape, &e, fn);
    if (st == CLT_OK)
        st = clt__contiguous_as(fn, e ? e : t, ct, tmp);
    if (st == CLT_OK)
        *use = *tmp;
    clt_tensor_free(e);
    return st;
}

clt_status clt__special2_in(const char *fn, int op, bool float_only, const clt_tensor *a,
                            const clt_tensor *b, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_status st = CLT_OK;
    int n = a->ndim;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    clt_dtype promoted = a->dtype, ct = CLT_FLOAT32;
    if (b) {
        st = clt__same_device(a, b, fn);
        if (st == CLT_OK)
            st = clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &n, shape, fn);
        if (st != CLT_OK)
            return st;
        st = clt_result_type(a, b, &promoted);
        if (st != CLT_OK)
            return st;
    }
    st = compute_dtype(promoted, float_only, fn, &ct);
    if (st == CLT_OK)
        st = clt__check_dtype(a->dev, ct, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *ta = NULL, *tb = NULL, *r = NULL;
    const clt_tensor *ua = NULL, *ub = NULL;
    CLT__TRY(clt__result_new(fn, a->dev, ct, n, shape, &r));
    if (r->numel > 0) {
        const char *opts = special2_options(ct, fn);
        if (opts == NULL) {
            st = CLT_ERR_OUT_OF_HOST_MEMORY;
            goto done;
        }
        CLT__TRY(operand(fn, a, ct, n, shape, &ta, &ua));
        if (b)
            CLT__TRY(operand(fn, b, ct, n, shape, &tb, &ub));
        cl_mem mo = clt__mem(r), ma = clt__mem(ua), mb = b ? clt__mem(ub) : NULL;
        cl_int cop = op;
        cl_ulong cnt = (cl_ulong)r->numel;
        size_t gws = (size_t)r->numel;
        if (b) {
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(mb), CLT__ARG(cop),
                               CLT__ARG(cnt)};
            CLT__TRY(clt__error_in(
                clt__launch(a->dev, "special2", opts, "special2_bin", 1, &gws, NULL, 5, args),
                fn));
        } else {
            clt__arg args[] = {CLT__ARG(mo), CLT__ARG(ma), CLT__ARG(cop), CLT__ARG(cnt)};
            CLT__TRY(clt__error_in(
                clt__launch(a->dev, "special2", opts, "special2_un", 1, &gws, NULL, 4, args),
                fn));
        }
    }
    *out = r;
    r = NULL;
done:
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}
