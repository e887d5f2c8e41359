/* grad_products.c: the matrix products besides matmul (mm, bmm, mv, dot,
 * the add* family, outer, kron, cross, tensordot), all computed by
 * clt__matmul or composed of recorded ops, with their backward formulas. */
#include <string.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* saved: the two factors m1, m2; i[0] 1 when in[0] is the added input (the
 * factors follow it), i[1] 1 for addbmm (the product summed over the
 * batch); s[0] alpha, s[1] beta.  d input = beta g; the factors' are
 * alpha times matmul's, with addbmm's g repeated over the batch. */
static clt_status bw_product(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    int k = (int)n->i[0];
    double alpha = n->s[0], beta = n->s[1];
    clt_tensor *G = NULL, *u = NULL, *ga = NULL, *gb = NULL;
    if (k && CLT__NEED(n, 0))
        CLT__TRY(beta == 1 ? clt__alias(g, &gin[0]) : clt__mul_scalar_in(fn, g, beta, &gin[0]));
    if (n->i[1]) {
        int64_t shape[3] = {S(0)->shape[0], g->shape[0], g->shape[1]};
        CLT__TRY(clt__unsqueeze(g, 0, &u, fn));
        CLT__TRY(clt__expand(u, 3, shape, &G, fn));
    } else {
        CLT__TRY(clt__alias(g, &G));
    }
    CLT__TRY(clt__matmul_grad(S(0), S(1), G, CLT__NEED(n, k), CLT__NEED(n, k + 1), &ga, &gb));
    if (ga)
        CLT__TRY(alpha == 1 ? clt__alias(ga, &gin[k]) : clt__mul_scalar_in(fn, ga, alpha, &gin[k]));
    if (gb)
        CLT__TRY(alpha == 1 ? clt__alias(gb, &gin[k + 1])
                            : clt__mul_scalar_in(fn, gb, alpha, &gin[k + 1]));
done:
    clt_tensor_free(G);
    clt_tensor_free(u);
    clt_tensor_free(ga);
    clt_tensor_free(gb);
    return st;
}

/* Records the product node `name` on *out (input NULL: a plain product). */
static clt_status record_product(clt_status st, clt_tensor **out, const char *name,
                                 const clt_tensor *input, const clt_tensor *m1,
                                 const clt_tensor *m2, double beta, double alpha, bool bsum)
{
    const clt_tensor *in[3] = {input, m1, m2};
    const clt_tensor *const *ins = input ? in : in + 1;
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw_product, input ? 3 : 2, ins, 2, in + 1, &n);
    if (n) {
        n->i[0] = input != NULL;
        n->i[1] = bsum;
        n->s[0] = alpha;
        n->s[1] = beta;
    }
    return st;
}

static clt_status need_dims(const clt_tensor *t, int nd, const char *what, const char *fn)
{
    if (t->ndim == nd)
        return CLT_OK;
    if (nd == 3)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s must be a 3D tensor", fn, what);
    return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s must be a matrix, got %d-D tensor", fn,
                      what, t->ndim);
}

/* The checks of bmm, baddbmm and addbmm on batch1 [b, n, m], batch2
 * [b, m, p]. */
static clt_status check_batches(const clt_tensor *b1, const clt_tensor *b2, const char *fn)
{
    clt_status st = need_dims(b1, 3, "batch1", fn);
    if (st == CLT_OK)
        st = need_dims(b2, 3, "batch2", fn);
    if (st == CLT_OK && (b2->shape[0] != b1->shape[0] || b2->shape[1] != b1->shape[2]))
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: Expected size for first two dimensions of batch2 tensor to be: "
                        "[%lld, %lld] but got: [%lld, %lld].",
                        fn, (long long)b1->shape[0], (long long)b1->shape[2],
                        (long long)b2->shape[0], (long long)b2->shape[1]);
    return st;
}

/* The checks of mv and addmv: mat [n, m], vec [m], input (NULL for mv)
 * 0-D, [1] or [n]. */
static clt_status check_mv(const clt_tensor *input, const clt_tensor *mat, const clt_tensor *vec,
                           const char *fn)
{
    int ni = input ? input->ndim : 1;
    if (ni > 1 || mat->ndim != 2 || vec->ndim != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: vector + matrix @ vector expected, got %d, %d, %d", fn, ni,
                          mat->ndim, vec->ndim);
    int64_t ns = input ? (ni == 0 ? 1 : input->shape[0]) : mat->shape[0];
    if (mat->shape[1] != vec->shape[0] || (ns != 1 && ns != mat->shape[0]))
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: size mismatch, got %lld, %lldx%lld,%lld",
                          fn, (long long)ns, (long long)mat->shape[0], (long long)mat->shape[1],
                          (long long)vec->shape[0]);
    return CLT_OK;
}

/* The checks of dot and vdot. */
static clt_status check_dot(const clt_tensor *a, const clt_tensor *b, const char *fn)
{
    if (a->ndim != 1 || b->ndim != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: 1D tensors expected, but got %dD and %dD tensors", fn, a->ndim,
                          b->ndim);
    if (a->shape[0] != b->shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: inconsistent tensor size, expected tensor [%lld] and src [%lld] "
                          "to have the same number of elements, but got %lld and %lld elements "
                          "respectively",
                          fn, (long long)a->shape[0], (long long)b->shape[0],
                          (long long)a->shape[0], (long long)b->shape[0]);
    if (a->dtype != b->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected both vectors to have same dtype, but found %s and %s", fn,
                          clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    return CLT_OK;
}

/* A plain product: check (a function of a, b and fn, or NULL), then
 * clt__matmul, recorded as `node`. */
static clt_status product(const char *fn, const char *node,
                          clt_status (*check)(const clt_tensor *, const clt_tensor *,
                                              const char *),
                          const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = check(a, b, fn);
    if (st == CLT_OK)
        st = clt__matmul(a, b, out, fn);
    return record_product(st, out, node, NULL, a, b, 0, 1, false);
}

static clt_status check_mm(const clt_tensor *a, const clt_tensor *b, const char *fn)
{
    if (a->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: self must be a matrix", fn);
    if (b->ndim != 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: mat2 must be a matrix", fn);
    return CLT_OK;
}

static clt_status check_mv2(const clt_tensor *a, const clt_tensor *b, const char *fn)
{
    return check_mv(NULL, a, b, fn);
}

clt_status clt_mm(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return product("clt_mm", "MmBackward0", check_mm, a, b, out);
}

clt_status clt_bmm(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return product("clt_bmm", "BmmBackward0", check_batches, a, b, out);
}

clt_status clt_mv(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return product("clt_mv", "MvBackward0", check_mv2, a, b, out);
}

clt_status clt_dot(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return product("clt_dot", "DotBackward0", check_dot, a, b, out);
}

clt_status clt_vdot(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    return product("clt_vdot", "VdotBackward0", check_dot, a, b, out);
}

/* addbmm's product: the sum over b of batch1[b] @ batch2[b] as one matrix
 * product, [n, b*m] @ [b*m, p]. */
static clt_status batch_sum_product(const clt_tensor *b1, const clt_tensor *b2,
                                    clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *t = NULL, *l = NULL, *r = NULL;
    int64_t B = b1->shape[0], N = b1->shape[1], M = b1->shape[2], P = b2->shape[2];
    CLT__TRY(clt__transpose(b1, 0, 1, &t, fn));
    CLT__TRY(clt__reshape(t, 2, (int64_t[]){N, B * M}, &l, fn));
    CLT__TRY(clt__reshape(b2, 2, (int64_t[]){B * M, P}, &r, fn));
    CLT__TRY(clt__matmul(l, r, out, fn));
done:
    clt_tensor_free(t);
    clt_tensor_free(l);
    clt_tensor_free(r);
    return st;
}

/* beta * input + alpha * (m1 @ m2) (bsum: summed over the batch).  No
 * kernel for a factor of 1, and neither input (its NaN included) for
 * beta 0 nor the product for alpha 0, as torch. */
static clt_status addprod(const char *fn, const char *node, const clt_tensor *input,
                          const clt_tensor *m1, const clt_tensor *m2, double beta, double alpha,
                          bool bsum, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *p = NULL, *e = NULL, *s = NULL;
    CLT__TRY(clt__same_device(input, m1, fn));
    if (input->dtype != m1->dtype) {
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: self and mat1 must have the same dtype, but got %s and %s", fn,
                        clt_dtype_name(input->dtype), clt_dtype_name(m1->dtype));
        goto done;
    }
    CLT__TRY(bsum ? batch_sum_product(m1, m2, &p, fn) : clt__matmul(m1, m2, &p, fn));
    CLT__TRY(clt__expand(input, p->ndim, p->shape, &e, fn));
    if (alpha == 0 && beta == 0)
        st = clt__error_in(clt__full(p->dev, p->dtype, p->ndim, p->shape, 0.0, out), fn);
    else if (alpha == 0) /* a new tensor even for beta 1 */
        st = clt__mul_scalar_in(fn, e, beta, out);
    else if (beta == 0 && alpha == 1)
        *out = p, p = NULL;
    else if (beta == 0)
        st = clt__mul_scalar_in(fn, p, alpha, out);
    else if (beta == 1)
        st = clt__axpy_into(NULL, e, p, alpha, out, fn);
    else if ((st = clt__mul_scalar_in(fn, e, beta, &s)) == CLT_OK)
        st = clt__axpy_into(NULL, s, p, alpha, out, fn);
done:
    clt_tensor_free(p);
    clt_tensor_free(e);
    clt_tensor_free(s);
    return record_product(st, out, node, input, m1, m2, beta, alpha, bsum);
}

/* The NULL checks of the add* family. */
#define ADD_ARGS(fn)                                                         \
    CLT__REQUIRE_ARG(out, fn);                                               \
    *out = NULL;                                                             \
    CLT__REQUIRE_ARG(input, fn);                                             \
    CLT__REQUIRE_ARG(m1, fn);                                                \
    CLT__REQUIRE_ARG(m2, fn)

clt_status clt_addmm(const clt_tensor *input, const clt_tensor *m1, const clt_tensor *m2,
                     double beta, double alpha, clt_tensor **out)
{
    static const char fn[] = "clt_addmm";
    ADD_ARGS(fn);
    clt_status st = need_dims(m1, 2, "mat1", fn);
    if (st == CLT_OK)
        st = need_dims(m2, 2, "mat2", fn);
    if (st != CLT_OK)
        return st;
    return addprod(fn, "AddmmBackward0", input, m1, m2, beta, alpha, false, out);
}

clt_status clt_addmv(const clt_tensor *input, const clt_tensor *m1, const clt_tensor *m2,
                     double beta, double alpha, clt_tensor **out)
{
    static const char fn[] = "clt_addmv";
    ADD_ARGS(fn);
    clt_status st = check_mv(input, m1, m2, fn);
    if (st != CLT_OK)
        return st;
    return addprod(fn, "AddmvBackward0", input, m1, m2, beta, alpha, false, out);
}

clt_status clt_baddbmm(const clt_tensor *input, const clt_tensor *m1, const clt_tensor *m2,
                       double beta, double alpha, clt_tensor **out)
{
    static const char fn[] = "clt_baddbmm";
    ADD_ARGS(fn);
    clt_status st = check_batches(m1, m2, fn);
    if (st != CLT_OK)
        return st;
    return addprod(fn, "BaddbmmBackward0", input, m1, m2, beta, alpha, false, out);
}

clt_status clt_addbmm(const clt_tensor *input, const clt_tensor *m1, const clt_tensor *m2,
                      double beta, double alpha, clt_tensor **out)
{
    static const char fn[] = "clt_addbmm";
    ADD_ARGS(fn);
    clt_status st = need_dims(m1, 3, "batch1", fn);
    if (st == CLT_OK)
        st = need_dims(m2, 3, "batch2", fn);
    if (st == CLT_OK && m1->shape[0] != m2->shape[0])
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: batch1 and batch2 must have same number of batches, got %lld and "
                        "%lld",
                        fn, (long long)m1->shape[0], (long long)m2->shape[0]);
    if (st == CLT_OK && m1->shape[2] != m2->shape[1])
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: Incompatible matrix sizes for bmm (%lldx%lld and %lldx%lld)", fn,
                        (long long)m1->shape[1], (long long)m1->shape[2],
                        (long long)m2->shape[1], (long long)m2->shape[2]);
    if (st != CLT_OK)
        return st;
    return addprod(fn, "AddbmmBackward0", input, m1, m2, beta, alpha, true, out);
}

clt_status clt_outer(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_outer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    if (a->ndim != 1 || b->ndim != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: Expected 1-D argument %s, but got %d-D",
                          fn, a->ndim != 1 ? "self" : "vec2", a->ndim != 1 ? a->ndim : b->ndim);
    clt_tensor *col = NULL;
    clt_status st = clt__reshape_rec(fn, a, 2, (int64_t[]){a->shape[0], 1}, &col);
    if (st == CLT_OK)
        st = clt__mul_rec(fn, col, b, out);
    clt_tensor_free(col);
    return st;
}

clt_status clt_kron(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_kron";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    if (2 * nd > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: operands of %d dimensions need %d for the interleaved product; "
                          "at most %d are supported",
                          fn, nd, 2 * nd, CLT_MAX_DIMS);
    /* a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...], then the
     * pairs merged. */
    int64_t sa[CLT_MAX_DIMS], sb[CLT_MAX_DIMS], so[CLT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int da = d - (nd - a->ndim), db = d - (nd - b->ndim);
        int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        sa[2 * d] = x, sa[2 * d + 1] = 1;
        sb[2 * d] = 1, sb[2 * d + 1] = y;
        so[d] = x * y;
    }
    clt_status st = CLT_OK;
    clt_tensor *ra = NULL, *rb = NULL, *p = NULL;
    CLT__TRY(clt__reshape_rec(fn, a, 2 * nd, sa, &ra));
    CLT__TRY(clt__reshape_rec(fn, b, 2 * nd, sb, &rb));
    CLT__TRY(clt__mul_rec(fn, ra, rb, &p));
    CLT__TRY(clt__reshape_rec(fn, p, nd, so, out));
done:
    clt_tensor_free(ra);
    clt_tensor_free(rb);
    clt_tensor_free(p);
    return st;
}

/* a x b along dim (wrapped, of size 3 in both), not recorded: with a2 and
 * b2 each operand twice along dim, a x b = a2[1:4] b2[2:5] - a2[2:5]
 * b2[1:4], all views but the two joins. */
static clt_status cross(const clt_tensor *a, const clt_tensor *b, int dim, clt_tensor **out,
                        const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *a2 = NULL, *b2 = NULL, *v[4] = {NULL}, *p = NULL, *q = NULL;
    CLT__TRY(clt__cat((const clt_tensor *[]){a, a}, 2, dim, &a2, fn));
    CLT__TRY(clt__cat((const clt_tensor *[]){b, b}, 2, dim, &b2, fn));
    CLT__TRY(clt__narrow(a2, dim, 1, 3, &v[0], fn));
    CLT__TRY(clt__narrow(b2, dim, 2, 3, &v[1], fn));
    CLT__TRY(clt__narrow(a2, dim, 2, 3, &v[2], fn));
    CLT__TRY(clt__narrow(b2, dim, 1, 3, &v[3], fn));
    /* Two rounded products and their difference, torch's formula; its CPU
     * kernel contracts the first product into a fused multiply-add, so
     * float32 results may differ from it in the last bits where the terms
     * cancel. */
    CLT__TRY(clt__mul_in(fn, v[0], v[1], &p));
    CLT__TRY(clt__mul_in(fn, v[2], v[3], &q));
    CLT__TRY(clt__sub_in(fn, p, q, out));
done:
    clt_tensor_free(a2);
    clt_tensor_free(b2);
    for (int i = 0; i < 4; i++)
        clt_tensor_free(v[i]);
    clt_tensor_free(p);
    clt_tensor_free(q);
    return st;
}

/* saved: a, b; i[0] the dim.  da = b x g, db = g x a. */
static clt_status bw_cross(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int dim = (int)n->i[0];
    if (CLT__NEED(n, 0))
        CLT__TRY(cross(S(1), g, dim, &gin[0], "clt_backward"));
    if (CLT__NEED(n, 1))
        CLT__TRY(cross(g, S(0), dim, &gin[1], "clt_backward"));
done:
    return st;
}

static clt_status cross_rec(const char *fn, const clt_tensor *a, const clt_tensor *b, int dim,
                            clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    clt_status st = clt__same_device(a, b, fn);
    if (st != CLT_OK)
        return st;
    if (a->ndim != b->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: linalg.cross: inputs must have the same number of dimensions.",
                          fn);
    if (a->dtype != b->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: expected scalar type %s but found %s", fn,
                          clt_dtype_name(a->dtype), clt_dtype_name(b->dtype));
    int d = 0, nout = 0;
    int64_t shape[CLT_MAX_DIMS];
    st = clt__wrap_dim(dim, a->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    if (a->shape[d] != 3 || b->shape[d] != 3)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: linalg.cross: inputs dimension %d must have length 3. Got %lld "
                          "and %lld",
                          fn, dim, (long long)a->shape[d], (long long)b->shape[d]);
    st = clt__broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nout, shape, fn);
    if (st == CLT_OK)
        st = cross(a, b, d, out, fn);
    const clt_tensor *in[2] = {a, b};
    clt__node *n = NULL;
    st = clt__record(st, out, "LinalgCrossBackward0", bw_cross, 2, in, 2, in, &n);
    if (n)
        n->i[0] = d;
    return st;
}

clt_status clt_linalg_cross(const clt_tensor *a, const clt_tensor *b, int dim, clt_tensor **out)
{
    return cross_rec("clt_linalg_cross", a, b, dim, out);
}

clt_status clt_cross(const clt_tensor *a, const clt_tensor *b, int dim, clt_tensor **out)
{
    return cross_rec("clt_cross", a, b, dim, out);
}

/* The contracted dims of one tensordot operand, wrapped, into da; marks
 * them in used. */
static clt_status contracted(const clt_tensor *t, int nd, const int *dims, int *da, bool *used,
                             const char *fn)
{
    for (int i = 0; i < nd; i++) {
        clt_status st = clt__wrap_dim(dims[i], t->ndim, &da[i], fn);
        if (st != CLT_OK)
            return st;
        if (used[da[i]])
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: dim %d appears multiple times in the list of dims", fn, da[i]);
        used[da[i]] = true;
    }
    return CLT_OK;
}

clt_status clt_tensordot(const clt_tensor *a, const clt_tensor *b, int ndims, const int *dims_a,
                         const int *dims_b, clt_tensor **out)
{
    static const char fn[] = "clt_tensordot";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    CLT__REQUIRE_ARG(b, fn);
    if ((dims_a == NULL) != (dims_b == NULL))
        return clt__error(CLT_ERR_NULL_ARGUMENT,
                          "%s: dims_a and dims_b are given together or not at all", fn);
    if (ndims < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: tensordot expects dims >= 0, but got "
                          "dims=%d", fn, ndims);
    int la[CLT_MAX_DIMS], lb[CLT_MAX_DIMS], da[CLT_MAX_DIMS], db[CLT_MAX_DIMS];
    if (ndims > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: Dimension out of range (%d contracted dims of a %d-D tensor)", fn,
                          ndims, a->ndim);
    if (!dims_a) {
        for (int i = 0; i < ndims; i++)
            la[i] = i - ndims, lb[i] = i;
        dims_a = la, dims_b = lb;
    }
    bool ua[CLT_MAX_DIMS] = {false}, ub[CLT_MAX_DIMS] = {false};
    clt_status st = contracted(a, ndims, dims_a, da, ua, fn);
    if (st == CLT_OK)
        st = contracted(b, ndims, dims_b, db, ub, fn);
    if (st != CLT_OK)
        return st;
    int pa[CLT_MAX_DIMS], pb[CLT_MAX_DIMS], npa = 0, npb = 0, nr = 0;
    int64_t K = 1, Fa = 1, Fb = 1, rs[2 * CLT_MAX_DIMS];
    for (int i = 0; i < ndims; i++) {
        if (a->shape[da[i]] != b->shape[db[i]])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: contracted dimensions need to match, but first has size %lld "
                              "in dim %d and second has size %lld in dim %d",
                              fn, (long long)a->shape[da[i]], dims_a[i],
                              (long long)b->shape[db[i]], dims_b[i]);
        K *= a->shape[da[i]];
    }
    /* a as [free, contracted], b as [contracted, free]: one matrix product. */
    for (int d = 0; d < a->ndim; d++)
        if (!ua[d])
            pa[npa++] = d, Fa *= a->shape[d], rs[nr++] = a->shape[d];
    for (int i = 0; i < ndims; i++)
        pa[npa++] = da[i], pb[npb++] = db[i];
    for (int d = 0; d < b->ndim; d++)
        if (!ub[d])
            pb[npb++] = d, Fb *= b->shape[d], rs[nr++] = b->shape[d];
    clt_tensor *ta = NULL, *tb = NULL, *ma = NULL, *mb = NULL, *p = NULL;
    CLT__TRY(clt__permute_rec(fn, a, a->ndim, pa, &ta));
    CLT__TRY(clt__permute_rec(fn, b, b->ndim, pb, &tb));
    CLT__TRY(clt__reshape_rec(fn, ta, 2, (int64_t[]){Fa, K}, &ma));
    CLT__TRY(clt__reshape_rec(fn, tb, 2, (int64_t[]){K, Fb}, &mb));
    CLT__TRY(clt__matmul_rec(fn, ma, mb, &p));
    CLT__TRY(clt__reshape_rec(fn, p, nr, rs, out));
done:
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(ma);
    clt_tensor_free(mb);
    clt_tensor_free(p);
    return st;
}
