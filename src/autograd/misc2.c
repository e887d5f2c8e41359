/* misc2.c: the small torch functions composed of existing recorded ops
 * (deg2rad, fmax, fliplr, inner, addr, vander, logdet, take_along_dim,
 * renorm, index_reduce, broadcast_*, ...), so that their gradients are
 * those ops'; gradient and histogram are in misc2_calc.c. */
#include "autograd/autograd.h"

#include <math.h>

/* Starts a one-tensor composite: *out cleared, a and out checked. */
#define BEGIN1(a)                                                            \
    CLT__REQUIRE_ARG(out, fn);                                               \
    *out = NULL;                                                             \
    CLT__REQUIRE_ARG(a, fn)

static int64_t numel_of(const clt_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

/* A 0-d tensor of dtype holding v, on t's device (a constant operand). */
static clt_status scalar_like(const clt_tensor *t, clt_dtype dtype, double v, clt_tensor **out)
{
    return clt__full(t->dev, dtype, 0, NULL, v, out);
}

/* ---- pointwise --------------------------------------------------------- */

static clt_status angle_scale(const char *fn, const clt_tensor *a, double k, clt_tensor **out)
{
    BEGIN1(a);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *x = (clt_tensor *)a, *r = NULL;
    /* integer and bool inputs give the default float dtype, as torch */
    if (!clt__dtype_is_float(a->dtype))
        CLT__TRY(clt__to_dtype_rec(fn, a, CLT_FLOAT32, &x));
    CLT__TRY(clt__mul_scalar_rec(fn, x, k, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_deg2rad(const clt_tensor *a, clt_tensor **out)
{
    return angle_scale("clt_deg2rad", a, M_PI / 180.0, out);
}

clt_status clt_rad2deg(const clt_tensor *a, clt_tensor **out)
{
    return angle_scale("clt_rad2deg", a, 180.0 / M_PI, out);
}

clt_status clt_sgn(const clt_tensor *a, clt_tensor **out)
{
    static const char fn[] = "clt_sgn";
    BEGIN1(a);
    if (clt__dtype_is_complex(a->dtype))
        return clt__complex_sgn_rec(fn, a, out);
    return clt__sign_rec(fn, a, out);
}

clt_status clt_fix(const clt_tensor *a, clt_tensor **out)
{
    static const char fn[] = "clt_fix";
    BEGIN1(a);
    if (a->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: \"trunc\" not implemented for 'Bool'", fn);
    return clt__trunc_rec(fn, a, out);
}

static clt_status isinf_side(const char *fn, const clt_tensor *a, double inf, clt_tensor **out)
{
    BEGIN1(a);
    if (!clt__dtype_is_float(a->dtype))
        return clt__full(a->dev, CLT_BOOL, a->ndim, a->shape, 0.0, out);
    return clt__eq_scalar_in(fn, a, inf, out);
}

clt_status clt_isposinf(const clt_tensor *a, clt_tensor **out)
{
    return isinf_side("clt_isposinf", a, INFINITY, out);
}

clt_status clt_isneginf(const clt_tensor *a, clt_tensor **out)
{
    return isinf_side("clt_isneginf", a, -INFINITY, out);
}

clt_status clt_isreal(const clt_tensor *a, clt_tensor **out)
{
    static const char fn[] = "clt_isreal";
    BEGIN1(a);
    return clt__full(a->dev, CLT_BOOL, a->ndim, a->shape, 1.0, out);
}

/* fmax: where(a >= b or isnan(b), a, b); fmin with <=.  The mask is
 * torch's backward mask too (a tie's gradient goes to a). */
static clt_status fminmax(const char *fn, const clt_tensor *a, const clt_tensor *b, bool max,
                          clt_tensor **out)
{
    BEGIN1(a);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *c = NULL, *n = NULL, *m = NULL, *r = NULL;
    CLT__TRY(max ? clt__ge_in(fn, a, b, &c) : clt__le_in(fn, a, b, &c));
    CLT__TRY(clt__isnan_in(fn, b, &n));
    CLT__TRY(clt__logical_or_in(fn, c, n, &m));
    CLT__TRY(clt__error_as(clt_where(m, a, b, &r), fn));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_fmax(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return fminmax("clt_fmax", a, b, true, out);
}

clt_status clt_fmin(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return fminmax("clt_fmin", a, b, false, out);
}

clt_status clt_clamp_min(const clt_tensor *a, double min, clt_tensor **out)
{
    static const char fn[] = "clt_clamp_min";
    BEGIN1(a);
    return clt__clamp_rec(fn, a, &min, NULL, out);
}

clt_status clt_clamp_max(const clt_tensor *a, double max, clt_tensor **out)
{
    static const char fn[] = "clt_clamp_max";
    BEGIN1(a);
    return clt__clamp_rec(fn, a, NULL, &max, out);
}

/* ---- shapes ------------------------------------------------------------ */

clt_status clt_fliplr(const clt_tensor *t, clt_tensor **out)
{
    static const char fn[] = "clt_fliplr";
    BEGIN1(t);
    if (t->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Input must be >= 2-d.", fn);
    return clt__error_as(clt_flip(t, (const int[]){1}, 1, out), fn);
}

clt_status clt_flipud(const clt_tensor *t, clt_tensor **out)
{
    static const char fn[] = "clt_flipud";
    BEGIN1(t);
    if (t->ndim < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: Input must be >= 1-d.", fn);
    return clt__error_as(clt_flip(t, (const int[]){0}, 1, out), fn);
}

clt_status clt_diagflat(const clt_tensor *t, int64_t offset, clt_tensor **out)
{
    static const char fn[] = "clt_diagflat";
    BEGIN1(t);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *v = NULL, *r = NULL;
    CLT__TRY(clt__reshape_rec(fn, t, 1, (int64_t[]){numel_of(t)}, &v));
    CLT__TRY(clt__error_as(clt_diag(v, offset, &r), fn));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_broadcast_to(const clt_tensor *t, int ndim, const int64_t *shape,
                            clt_tensor **out)
{
    static const char fn[] = "clt_broadcast_to";
    BEGIN1(t);
    if (ndim > 0)
        CLT__REQUIRE_ARG(shape, fn);
    return clt__expand_rec(fn, t, ndim, shape, out);
}

static clt_status bshapes(const char *fn, const int *ndims, const int64_t *const *shapes,
                          size_t n, int *nd, int64_t *shape)
{
    *nd = 0;
    for (size_t k = 0; k < n; k++) {
        if (ndims[k] < 0 || ndims[k] > CLT_MAX_DIMS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: shape %zu has %d dimensions (0 to %d supported)", fn, k,
                              ndims[k], CLT_MAX_DIMS);
        if (ndims[k] > 0 && shapes[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: shape %zu is NULL", fn, k);
        for (int i = 0; i < ndims[k]; i++)
            if (shapes[k][i] < 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: Trying to create tensor with negative dimension %lld",
                                  fn, (long long)shapes[k][i]);
        int64_t tmp[CLT_MAX_DIMS];
        int ntmp = 0;
        clt_status st = clt__broadcast_shapes(*nd, shape, ndims[k], shapes[k], &ntmp, tmp, fn);
        if (st != CLT_OK)
            return st;
        *nd = ntmp;
        memcpy(shape, tmp, sizeof(int64_t) * (size_t)ntmp);
    }
    return CLT_OK;
}

clt_status clt_broadcast_shapes(const int *ndims, const int64_t *const *shapes, size_t n,
                                int *out_ndim, int64_t *out_shape)
{
    static const char fn[] = "clt_broadcast_shapes";
    if (out_ndim)
        *out_ndim = 0;
    CLT__REQUIRE_ARG(out_ndim, fn);
    CLT__REQUIRE_ARG(out_shape, fn);
    if (n > 0) {
        CLT__REQUIRE_ARG(ndims, fn);
        CLT__REQUIRE_ARG(shapes, fn);
    }
    int64_t shape[CLT_MAX_DIMS];
    int nd = 0;
    clt_status st = bshapes(fn, ndims, shapes, n, &nd, shape);
    if (st != CLT_OK)
        return st;
    memcpy(out_shape, shape, sizeof(int64_t) * (size_t)nd);
    *out_ndim = nd;
    return CLT_OK;
}

clt_status clt_broadcast_tensors(const clt_tensor *const *ts, size_t n, clt_tensor ***outs,
                                 size_t *nout)
{
    static const char fn[] = "clt_broadcast_tensors";
    if (outs)
        *outs = NULL;
    if (nout)
        *nout = 0;
    CLT__REQUIRE_ARG(outs, fn);
    CLT__REQUIRE_ARG(nout, fn);
    if (n > 0)
        CLT__REQUIRE_ARG(ts, fn);
    for (size_t k = 0; k < n; k++) {
        if (ts[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: tensor %zu is NULL", fn, k);
        clt_status st = clt__same_device(ts[0], ts[k], fn);
        if (st != CLT_OK)
            return st;
    }
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    for (size_t k = 0; k < n; k++) {
        int64_t tmp[CLT_MAX_DIMS];
        int ntmp = 0;
        clt_status st = clt__broadcast_shapes(nd, shape, ts[k]->ndim, ts[k]->shape, &ntmp, tmp, fn);
        if (st != CLT_OK)
            return st;
        nd = ntmp;
        memcpy(shape, tmp, sizeof(int64_t) * (size_t)ntmp);
    }
    clt_tensor **arr = clt__calloc(n ? n : 1, sizeof(clt_tensor *));
    if (arr == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK) {
        free(arr);
        return st;
    }
    for (size_t k = 0; k < n; k++)
        CLT__TRY(clt__expand_rec(fn, ts[k], nd, shape, &arr[k]));
done:
    st = clt__scope_finish_all(st, arr, n);
    if (st != CLT_OK) {
        free(arr);
        return st;
    }
    *outs = arr;
    *nout = n;
    return CLT_OK;
}

/* ---- products and matrix functions -------------------------------------- */

clt_status clt_ger(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_ger";
    return clt__error_as(clt_outer(a, b, out), fn);
}

clt_status clt_inner(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_inner";
    BEGIN1(a);
    CLT__REQUIRE_ARG(b, fn);
    if (a->ndim == 0 || b->ndim == 0)
        return clt__mul_rec(fn, a, b, out);
    if (a->shape[a->ndim - 1] != b->shape[b->ndim - 1]) {
        char sa[256], sb[256];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: inner() the last dimension must match on both input tensors but "
                          "got shapes %s and %s",
                          fn, clt__shape_str(sa, sizeof sa, a->ndim, a->shape),
                          clt__shape_str(sb, sizeof sb, b->ndim, b->shape));
    }
    if (clt__dtype_is_float(a->dtype) || a->dtype != b->dtype)
        return clt__error_as(clt_tensordot(a, b, 1, (const int[]){-1}, (const int[]){-1}, out), fn);
    /* integers (matmul takes floating dtypes only): products summed over
     * the last dim, in a's dtype as torch's tensordot */
    int64_t k = a->shape[a->ndim - 1], na = numel_of(a) / (k ? k : 1),
            nb = numel_of(b) / (k ? k : 1), shape[CLT_MAX_DIMS];
    if (k == 0)
        na = 1, nb = 1;
    for (int i = 0; i < a->ndim - 1; i++)
        shape[i] = a->shape[i], na = k ? na : na * a->shape[i];
    for (int i = 0; i < b->ndim - 1; i++)
        shape[a->ndim - 1 + i] = b->shape[i], nb = k ? nb : nb * b->shape[i];
    int nd = a->ndim + b->ndim - 2;
    if (nd > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the result has %d dimensions, at most %d "
                          "are supported", fn, nd, CLT_MAX_DIMS);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *x = NULL, *y = NULL, *p = NULL, *r = NULL;
    CLT__TRY(clt__reshape_rec(fn, a, 3, (int64_t[]){na, 1, k}, &x));
    CLT__TRY(clt__reshape_rec(fn, b, 3, (int64_t[]){1, nb, k}, &y));
    CLT__TRY(clt__mul_rec(fn, x, y, &p));
    CLT__TRY(clt__sum_dim_rec(fn, p, 2, 0, &p));
    if (p->dtype != a->dtype)
        CLT__TRY(clt__to_dtype_rec(fn, p, a->dtype, &p));
    CLT__TRY(clt__reshape_rec(fn, p, nd, shape, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_addr(const clt_tensor *input, const clt_tensor *vec1, const clt_tensor *vec2,
                    double beta, double alpha, clt_tensor **out)
{
    static const char fn[] = "clt_addr";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_LOWER), 3, (input, vec1, vec2),
                  clt_addr(CLT__AC(0), CLT__AC(1), CLT__AC(2), beta, alpha, out));
    BEGIN1(input);
    CLT__REQUIRE_ARG(vec1, fn);
    CLT__REQUIRE_ARG(vec2, fn);
    if (vec1->ndim != 1 || vec2->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: addr: Expected 1-D argument %s, but got %d-D",
                          fn, vec1->ndim != 1 ? "vec1" : "vec2",
                          vec1->ndim != 1 ? vec1->ndim : vec2->ndim);
    clt_status st = clt__same_device(input, vec1, fn);
    if (st == CLT_OK)
        st = clt__same_device(input, vec2, fn);
    if (st != CLT_OK)
        return st;
    bool fits = input->ndim <= 2;
    for (int i = 0; fits && i < input->ndim; i++) {
        int64_t want = i == input->ndim - 1 ? vec2->shape[0] : vec1->shape[0];
        fits = input->shape[i] == want || input->shape[i] == 1;
    }
    if (!fits) {
        char si[256];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: The expanded size of the tensor must match the existing size: "
                          "input %s cannot expand to [%lld, %lld]",
                          fn, clt__shape_str(si, sizeof si, input->ndim, input->shape),
                          (long long)vec1->shape[0], (long long)vec2->shape[0]);
    }
    bool isbool = input->dtype == CLT_BOOL && vec1->dtype == CLT_BOOL && vec2->dtype == CLT_BOOL;
    if (!isbool && !clt__dtype_is_float(input->dtype) &&
        (beta != floor(beta) || alpha != floor(alpha)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: For integral input tensors, argument %s must not be a floating "
                          "point number.",
                          fn, beta != floor(beta) ? "beta" : "alpha");
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *o = NULL, *p = NULL, *q = NULL, *r = NULL, *z = NULL;
    CLT__TRY(clt__error_as(clt_outer(vec1, vec2, &o), fn));
    if (isbool) {
        /* (beta and input) or (alpha and vec1 vec2^T), as torch's bool addr */
        CLT__TRY(clt__full(input->dev, CLT_BOOL, 0, NULL, alpha != 0, &z));
        CLT__TRY(clt__logical_and_in(fn, o, z, &p));
        CLT__TRY(clt__full(input->dev, CLT_BOOL, 0, NULL, beta != 0, &z));
        CLT__TRY(clt__logical_and_in(fn, input, z, &q));
        CLT__TRY(clt__logical_or_in(fn, q, p, &r));
        goto done;
    }
    if (alpha != 1.0)
        CLT__TRY(clt__mul_scalar_rec(fn, o, alpha, &o));
    if (beta == 0.0) {
        /* input is ignored, its NaNs too (it expands to the outer's shape) */
        r = o;
    } else {
        p = (clt_tensor *)input;
        if (beta != 1.0)
            CLT__TRY(clt__mul_scalar_rec(fn, input, beta, &p));
        CLT__TRY(clt__add_rec(fn, p, o, &r));
    }
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_chain_matmul(const clt_tensor *const *ts, size_t n, clt_tensor **out)
{
    static const char fn[] = "clt_chain_matmul";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__AUTOCAST_LIST(fn, CLT__AC_BOTH(CLT__AC_LOWER), n, ts, clt_chain_matmul(CLT__ACL, n, out));
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: chain_matmul(): Expected one or more matrices", fn);
    CLT__REQUIRE_ARG(ts, fn);
    for (size_t k = 0; k < n; k++) {
        if (ts[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: matrix %zu is NULL", fn, k);
        if (ts[k]->ndim != 2)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Tensor dimension is %d, expected 2 dimensions", fn,
                              ts[k]->ndim);
    }
    if (n == 1)
        return clt__error_as(clt_clone(ts[0], out), fn);
    return clt__error_as(clt_linalg_multi_dot(ts, n, out), fn);
}

clt_status clt_matrix_power(const clt_tensor *a, int64_t n, clt_tensor **out)
{
    static const char fn[] = "clt_matrix_power";
    return clt__error_as(clt_linalg_matrix_power(a, n, out), fn);
}

clt_status clt_logdet(const clt_tensor *a, clt_tensor **out)
{
    static const char fn[] = "clt_logdet";
    BEGIN1(a);
    if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: logdet: A must be batches of square matrices, but they are %s "
                          "matrices",
                          fn, a->ndim < 2 ? "not" : "non-square");
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: logdet: Expected a floating point tensor as input. Got %s", fn,
                          clt_dtype_name(a->dtype));
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *sign = NULL, *lad = NULL, *neg = NULL, *nan = NULL, *r = NULL;
    CLT__TRY(clt__error_as(clt_linalg_slogdet(a, &sign, &lad), fn));
    /* where(sign == -1, nan, logabsdet), torch 1.13's real logdet */
    CLT__TRY(clt__eq_scalar_in(fn, sign, -1.0, &neg));
    CLT__TRY(scalar_like(a, lad->dtype, NAN, &nan));
    CLT__TRY(clt__error_as(clt_where(neg, nan, lad, &r), fn));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_frobenius_norm(const clt_tensor *a, const int *dims, int ndims, int keepdim,
                              clt_tensor **out)
{
    static const char fn[] = "clt_frobenius_norm";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_frobenius_norm(CLT__AC(0), dims, ndims, keepdim, out));
    BEGIN1(a);
    if (ndims < 0 || ndims > 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected at most 2 dimensions, but got %d dimensions instead.", fn,
                          ndims);
    if (ndims > 0)
        CLT__REQUIRE_ARG(dims, fn);
    if (ndims == 2) {
        int d0 = 0, d1 = 0;
        clt_status st = clt__wrap_dim(dims[0], a->ndim, &d0, fn);
        if (st == CLT_OK)
            st = clt__wrap_dim(dims[1], a->ndim, &d1, fn);
        if (st != CLT_OK)
            return st;
        if (d0 == d1)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Expected dims to be different, got (%d, %d) instead", fn,
                              dims[0], dims[1]);
    }
    if (!clt__dtype_is_float(a->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: norm(): input dtype should be either floating point or complex. "
                          "Got %s instead.",
                          fn, clt_dtype_name(a->dtype));
    return clt__error_as(clt_linalg_vector_norm(a, 2.0, dims, ndims, keepdim, out), fn);
}

clt_status clt_nuclear_norm(const clt_tensor *a, const int *dims, int keepdim, clt_tensor **out)
{
    static const char fn[] = "clt_nuclear_norm";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_nuclear_norm(CLT__AC(0), dims, keepdim, out));
    BEGIN1(a);
    if (dims == NULL && a->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: Expected a tensor with 2 dimensions, but got a tensor with %d "
                          "dimension%s instead.",
                          fn, a->ndim, a->ndim == 1 ? "" : "s");
    return clt__error_as(clt_linalg_matrix_norm(a, "nuc", dims, keepdim, out), fn);
}

/* ones [rows..., 1] and the running products of x along a new last dim of
 * n - 1 copies, joined: x^0 .. x^(n-1) (x already in the result dtype). */
static clt_status powers(const char *fn, const clt_tensor *x, int64_t n, clt_tensor **out)
{
    clt_status st = CLT_OK;
    int64_t shape[CLT_MAX_DIMS];
    int nd = x->ndim + 1;
    clt_tensor *u = NULL, *e = NULL, *c = NULL, *ones = NULL;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[nd - 1] = 1;
    CLT__TRY(clt__full(x->dev, x->dtype, nd, shape, 1.0, &ones));
    if (n <= 1) {
        *out = ones;
        return CLT_OK;
    }
    shape[nd - 1] = n - 1;
    CLT__TRY(clt__unsqueeze_rec(fn, x, x->ndim, &u));
    CLT__TRY(clt__expand_rec(fn, u, nd, shape, &e));
    CLT__TRY(clt__error_as(clt_cumprod(e, nd - 1, &c), fn));
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *[]){ones, c}, 2, nd - 1, out));
done:
    return st;
}

clt_status clt_vander(const clt_tensor *x, const int64_t *n, int increasing, clt_tensor **out)
{
    static const char fn[] = "clt_vander";
    BEGIN1(x);
    if (x->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: x must be a one-dimensional tensor.", fn);
    int64_t cols = n ? *n : x->shape[0];
    if (cols < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: N must be non-negative.", fn);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_dtype dt = clt__dtype_is_float(x->dtype) ? x->dtype : CLT_INT64;
    clt_tensor *xs = (clt_tensor *)x, *r = NULL;
    if (cols == 0) {
        CLT__TRY(clt__full(x->dev, dt, 2, (int64_t[]){x->shape[0], 0}, 0.0, &r));
        goto done;
    }
    if (dt != x->dtype)
        CLT__TRY(clt__to_dtype_rec(fn, x, dt, &xs));
    CLT__TRY(powers(fn, xs, cols, &r));
    if (!increasing)
        CLT__TRY(clt__error_as(clt_flip(r, (const int[]){1}, 1, &r), fn));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_linalg_vander(const clt_tensor *x, const int64_t *n, clt_tensor **out)
{
    static const char fn[] = "clt_linalg_vander";
    BEGIN1(x);
    if (x->dtype == CLT_BOOL || clt__dtype_is_half(x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: linalg.vander supports floating point, complex, and integer "
                          "tensors, but got %s",
                          fn, clt_dtype_name(x->dtype));
    int64_t cols = n ? *n : (x->ndim ? x->shape[x->ndim - 1] : 1);
    if (cols <= 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: N must be greater than 1.", fn);
    if (x->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: at most %d dimensions are supported",
                          fn, CLT_MAX_DIMS - 1);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *xs = (clt_tensor *)x, *r = NULL;
    if (x->ndim == 0)
        CLT__TRY(clt__unsqueeze_rec(fn, x, 0, &xs));
    /* cumprod makes integers int64, as torch's */
    if (!clt__dtype_is_float(x->dtype))
        CLT__TRY(clt__to_dtype_rec(fn, xs, CLT_INT64, &xs));
    CLT__TRY(powers(fn, xs, cols, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

/* ---- indexing ------------------------------------------------------------ */

clt_status clt_take_along_dim(const clt_tensor *t, const clt_tensor *indices, const int *dim,
                              clt_tensor **out)
{
    static const char fn[] = "clt_take_along_dim";
    BEGIN1(t);
    CLT__REQUIRE_ARG(indices, fn);
    clt_status st = clt__same_device(t, indices, fn);
    if (st != CLT_OK)
        return st;
    if (indices->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: torch.take_along_dim(): dtype of indices should be Long but got %s",
                          fn, clt_dtype_name(indices->dtype));
    int d = 0;
    if (dim) {
        if (t->ndim != indices->ndim)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: torch.take_along_dim(): input and indices should have the "
                              "same number of dimensions, but got %d dimensions for input, and "
                              "%d dimensions for indices",
                              fn, t->ndim, indices->ndim);
        if ((st = clt__wrap_dim(*dim, t->ndim ? t->ndim : 1, &d, fn)) != CLT_OK)
            return st;
    }
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *a = NULL, *i = NULL, *r = NULL;
    if (!dim || t->ndim == 0) {
        CLT__TRY(clt__reshape_rec(fn, t, 1, (int64_t[]){numel_of(t)}, &a));
        CLT__TRY(clt__reshape_rec(fn, indices, 1, (int64_t[]){numel_of(indices)}, &i));
        CLT__TRY(clt__error_as(clt_gather(a, 0, i, &r), fn));
        if (dim) /* 0-d input and indices: a 0-d result */
            CLT__TRY(clt__reshape_rec(fn, r, 0, NULL, &r));
        goto done;
    }
    /* broadcast both but along d, where each keeps its own size */
    int64_t s1[CLT_MAX_DIMS], s2[CLT_MAX_DIMS], bs[CLT_MAX_DIMS];
    int nb = 0;
    memcpy(s1, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    s1[d] = indices->shape[d];
    CLT__TRY(clt__broadcast_shapes(t->ndim, s1, indices->ndim, indices->shape, &nb, bs, fn));
    CLT__TRY(clt__expand_rec(fn, indices, nb, bs, &i));
    memcpy(s2, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
    s2[d] = t->shape[d];
    CLT__TRY(clt__broadcast_shapes(indices->ndim, s2, t->ndim, t->shape, &nb, bs, fn));
    CLT__TRY(clt__expand_rec(fn, t, nb, bs, &a));
    CLT__TRY(clt__error_as(clt_gather(a, d, i, &r), fn));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_renorm(const clt_tensor *t, double p, int dim, double maxnorm, clt_tensor **out)
{
    static const char fn[] = "clt_renorm";
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (t),
                  clt_renorm(CLT__AC(0), p, dim, maxnorm, out));
    BEGIN1(t);
    if (!(p > 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: renorm: non-positive-norm not supported",
                          fn);
    if (!(maxnorm >= 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: renorm: expected maxnorm to be >= 0 but got %g", fn, maxnorm);
    if (t->ndim <= 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: renorm: input needs at least 2 dimensions, got %d dimensions", fn,
                          t->ndim);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, t->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    if (!clt__dtype_is_float(t->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: linalg.vector_norm: Expected a floating point or complex tensor "
                          "as input. Got %s",
                          fn, clt_dtype_name(t->dtype));
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    int dims[CLT_MAX_DIMS], nd = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != d)
            dims[nd++] = i;
    clt_tensor *norm = NULL, *big = NULL, *f = NULL, *one = NULL, *r = NULL;
    CLT__TRY(clt__error_as(clt_linalg_vector_norm(t, p, dims, nd, 1, &norm), fn));
    /* norm > maxnorm ? maxnorm / (norm + 1e-7) : 1, torch's factor */
    CLT__TRY(clt__gt_scalar_in(fn, norm, maxnorm, &big));
    CLT__TRY(clt__add_scalar_rec(fn, norm, 1e-7, &f));
    CLT__TRY(clt__rdiv_scalar_rec(fn, f, maxnorm, &f));
    CLT__TRY(scalar_like(t, f->dtype, 1.0, &one));
    CLT__TRY(clt__error_as(clt_where(big, f, one, &f), fn));
    CLT__TRY(clt__mul_rec(fn, t, f, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_index_reduce(const clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *source, const char *reduce, int include_self,
                            clt_tensor **out)
{
    static const char fn[] = "clt_index_reduce";
    BEGIN1(t);
    CLT__REQUIRE_ARG(index, fn);
    CLT__REQUIRE_ARG(source, fn);
    CLT__REQUIRE_ARG(reduce, fn);
    if (strcmp(reduce, "prod") && strcmp(reduce, "mean") && strcmp(reduce, "amax") &&
        strcmp(reduce, "amin"))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: index_reduce(): Expected reduce to be one of prod, mean, amax or "
                          "amin but got %s.",
                          fn, reduce);
    clt_status st = clt__same_device(t, index, fn);
    if (st == CLT_OK)
        st = clt__same_device(t, source, fn);
    if (st != CLT_OK)
        return st;
    int d = 0;
    if ((st = clt__wrap_dim(dim, t->ndim ? t->ndim : 1, &d, fn)) != CLT_OK)
        return st;
    if (index->ndim > 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: index_reduce_(): Index is supposed to be a vector", fn);
    if (index->dtype != CLT_INT64 && index->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: index_reduce_(): Expected dtype int32/int64 for index but got %s",
                          fn, clt_dtype_name(index->dtype));
    if (t->dtype != source->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: index_reduce_(): self (%s) and source (%s) must have the same "
                          "scalar type",
                          fn, clt_dtype_name(t->dtype), clt_dtype_name(source->dtype));
    int64_t nidx = numel_of(index);
    int64_t slen = source->ndim ? source->shape[d < source->ndim ? d : 0] : 1;
    if (nidx != slen)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: index_reduce_(): Number of indices (%lld) should be equal to "
                          "source.size(dim) (%lld)",
                          fn, (long long)nidx, (long long)slen);
    bool same = (t->ndim ? t->ndim : 1) == (source->ndim ? source->ndim : 1);
    for (int i = 0; same && i < t->ndim && i < source->ndim; i++)
        if (i != d && t->shape[i] != source->shape[i])
            same = false;
    if (!same)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: index_reduce_(): Source/destination tensor must have same slice "
                          "shapes.",
                          fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    /* the index along d, repeated over source's other dims: scatter_reduce */
    clt_tensor *ts = (clt_tensor *)t, *src = (clt_tensor *)source, *i = NULL, *r = NULL;
    if (t->ndim == 0) {
        CLT__TRY(clt__reshape_rec(fn, t, 1, (int64_t[]){1}, &ts));
        CLT__TRY(clt__reshape_rec(fn, source, 1, (int64_t[]){nidx}, &src));
    } else if (source->ndim == 0) {
        CLT__TRY(clt__reshape_rec(fn, source, 1, (int64_t[]){1}, &src));
    }
    int64_t shape[CLT_MAX_DIMS];
    for (int k = 0; k < ts->ndim; k++)
        shape[k] = k == d ? nidx : 1;
    CLT__TRY(clt__reshape_rec(fn, index, ts->ndim, shape, &i));
    if (i->dtype != CLT_INT64)
        CLT__TRY(clt__to_dtype_rec(fn, i, CLT_INT64, &i));
    CLT__TRY(clt__expand_rec(fn, i, src->ndim, src->shape, &i));
    CLT__TRY(clt__error_as(clt_scatter_reduce(ts, d, i, src, reduce, include_self, &r), fn));
    if (t->ndim == 0)
        CLT__TRY(clt__reshape_rec(fn, r, 0, NULL, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

/* ---- creation ------------------------------------------------------------ */

clt_status clt_empty_strided(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *size,
                             const int64_t *stride, clt_tensor **out)
{
    static const char fn[] = "clt_empty_strided";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dimensions (0 to %d supported)", fn,
                          ndim, CLT_MAX_DIMS);
    if (ndim > 0) {
        CLT__REQUIRE_ARG(size, fn);
        CLT__REQUIRE_ARG(stride, fn);
    }
    int64_t need = 1;
    bool empty = false;
    for (int i = 0; i < ndim; i++) {
        if (size[i] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Trying to create tensor with negative dimension %lld", fn,
                              (long long)size[i]);
        if (stride[i] < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: as_strided: Negative strides are not supported at the "
                              "moment, got strides: %lld",
                              fn, (long long)stride[i]);
        if (size[i] == 0)
            empty = true;
    }
    for (int i = 0; !empty && i < ndim; i++) {
        if (stride[i] && size[i] - 1 > (INT64_MAX - need) / stride[i])
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the storage size overflows int64",
                              fn);
        need += (size[i] - 1) * stride[i];
    }
    if (empty)
        need = 0;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *base = NULL, *r = NULL;
    CLT__TRY(clt__error_as(clt_empty(dev, dtype, 1, &need, &base), fn));
    CLT__TRY(clt__error_as(clt_as_strided(base, ndim, size, stride, NULL, &r), fn));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}
