/* grad_products.c: the matrix products besides matmul (mm, bmm, mv, dot,
 * the add* family, outer, kron, cross, tensordot), all computed by
 * clt__matmul or composed of recorded ops, with their backward formulas. */
#include <string.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* saved: the two factors m1, m2; i[0] 1 when in[0] is the added input (the
 * factors follow it), i[1] 1 for addbmm (the product summed over the
 * batch); s[0] alpha, s[1] beta.  d input = beta g; the factors' are
 * alpha times matmul's, with addbmm's g repeated over the batch; recorded
 * ops, as matmul's (clt__twice). */
static clt_status bw_product(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    int k = (int)n->i[0];
    double alpha = n->s[0], beta = n->s[1];
    clt_tensor *G = NULL, *u = NULL, *ga = NULL, *gb = NULL;
    if (k && CLT__NEED(n, 0))
        CLT__TRY(beta == 1 ? clt__alias_grad(g, &gin[0])
                           : clt__mul_scalar_rec(fn, g, beta, &gin[0]));
    if (n->i[1]) {
        int64_t shape[3] = {S(0)->shape[0], g->shape[0], g->shape[1]};
        CLT__TRY(clt__unsqueeze_rec(fn, g, 0, &u));
        CLT__TRY(clt__expand_rec(fn, u, 3, shape, &G));
    } else {
        CLT__TRY(clt__alias_grad(g, &G));
    }
    CLT__TRY(clt__matmul_grad(S(0), S(1), G, CLT__NEED(n, k), CLT__NEED(n, k + 1), &ga, &gb));
    if (ga)
        CLT__TRY(alpha == 1 ? clt__alias_grad(ga, &gin[k])
                            : clt__mul_scalar_rec(fn, ga, alpha, &gin[k]));
    if (gb)
        CLT__TRY(alpha == 1 ? clt__alias_grad(gb, &gin[k + 1])
                            : clt__mul_scalar_rec(fn, gb, alpha, &gin[k + 1]));
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
    clt__twice(n);
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
    /* complex operands: torch's products without conjugation, so all but
     * vdot (conj(a) b) are clt_matmul's (the complex forms record their
     * parts) */
    bool cx = clt__dtype_is_complex(a->dtype) || clt__dtype_is_complex(b->dtype);
    if (st == CLT_OK && cx) {
        st = strcmp(node, "VdotBackward0") == 0 ? clt__complex_vdot_rec(fn, a, b, out)
                                                : clt__complex_matmul_rec(fn, a, b, out);
        return st == CLT_OK ? clt__ok() : st;
    }
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
    CLT__AUTOCAST("clt_mm", CLT__AC_BOTH(CLT__AC_LOWER), 2, (a, b),
                  clt_mm(CLT__AC(0), CLT__AC(1), out));
    return product("clt_mm", "MmBackward0", check_mm, a, b, out);
}

clt_status clt_bmm(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    CLT__AUTOCAST("clt_bmm", CLT__AC_BOTH(CLT__AC_LOWER), 2, (a, b),
                  clt_bmm(CLT__AC(0), CLT__AC(1), out));
    return product("clt_bmm", "BmmBackward0", check_batches, a, b, out);
}

clt_status clt_mv(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    CLT__AUTOCAST("clt_mv", CLT__AC_CUDA(CLT__AC_LOWER), 2, (a, b),
                  clt_mv(CLT__AC(0), CLT__AC(1), out));
    return product("clt_mv", "MvBackward0", check_mv2, a, b, out);
}

clt_status clt_dot(const clt_tensor *a, const clt_tensor *b, clt_tensor **out)
{
    CLT__AUTOCAST("clt_dot", CLT__AC_CUDA(CLT__AC_PROMOTE), 2, (a, b),
                  clt_dot(CLT__AC(0), CLT__AC(1), out));
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
 * beta 0 nor the product for alpha 0, as torch.  float16 operands are
 * widened and the whole of it computed in float32, rounded to half once
 * (torch's cuBLAS call takes beta and C in its float32 compute type):
 * a product rounded to half before the sum would lose what cancels. */
static clt_status addprod(const char *fn, const char *node, const clt_tensor *input,
                          const clt_tensor *m1, const clt_tensor *m2, double beta, double alpha,
                          bool bsum, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *p = NULL, *e = NULL, *s = NULL, *w[4] = {NULL, NULL, NULL, NULL};
    const clt_tensor *ci = input, *c1 = m1, *c2 = m2;
    clt_tensor **dst = out;
    CLT__TRY(clt__same_device(input, m1, fn));
    if (input->dtype != m1->dtype) {
        st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                        "%s: self and mat1 must have the same dtype, but got %s and %s", fn,
                        clt_dtype_name(input->dtype), clt_dtype_name(m1->dtype));
        goto done;
    }
    if (clt__dtype_is_half(m1->dtype) && m2->dtype == m1->dtype) {
        CLT__TRY(clt__to_dtype(input, CLT_FLOAT32, &w[0], fn));
        CLT__TRY(clt__to_dtype(m1, CLT_FLOAT32, &w[1], fn));
        CLT__TRY(clt__to_dtype(m2, CLT_FLOAT32, &w[2], fn));
        ci = w[0], c1 = w[1], c2 = w[2];
        dst = &w[3];
    }
    CLT__TRY(bsum ? batch_sum_product(c1, c2, &p, fn) : clt__matmul(c1, c2, &p, fn));
    CLT__TRY(clt__expand(ci, p->ndim, p->shape, &e, fn));
    if (alpha == 0 && beta == 0)
        st = clt__error_in(clt__full(p->dev, p->dtype, p->ndim, p->shape, 0.0, dst), fn);
    else if (alpha == 0) /* a new tensor even for beta 1 */
        st = clt__mul_scalar_in(fn, e, beta, dst);
    else if (beta == 0 && alpha == 1)
        *dst = p, p = NULL;
    else if (beta == 0)
        st = clt__mul_scalar_in(fn, p, alpha, dst);
    else if (beta == 1)
        st = clt__axpy_into(NULL, e, p, alpha, dst, fn);
    else if ((st = clt__mul_scalar_in(fn, e, beta, &s)) == CLT_OK)
        st = clt__axpy_into(NULL, s, p, alpha, dst, fn);
    if (st == CLT_OK && dst != out)
        st = clt__to_dtype(*dst, m1->dtype, out, fn);
done:
    clt_tensor_free(p);
    clt_tensor_free(e);
    clt_tensor_free(s);
    for (int i = 0; i < 4; i++)
        clt_tensor_free(w[i]);
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
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_LOWER), 3, (input, m1, m2),
                  clt_addmm(CLT__AC(0), CLT__AC(1), CLT__AC(2), beta, alpha, out));
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
    CLT__AUTOCAST(fn, CLT__AC_CUDA(CLT__AC_LOWER), 3, (input, m1, m2),
                  clt_addmv(CLT__AC(0), CLT__AC(1), CLT__AC(2), beta, alpha, out));
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
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_LOWER), 3, (input, m1, m2),
                  clt_baddbmm(CLT__AC(0), CLT__AC(1), CLT__AC(2), beta, alpha, out));
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
    CLT__AUTOCAST(fn, CLT__AC_BOTH(CLT__AC_LOWER), 3, (input, m1, m2),
                  clt_addbmm(CLT__AC(0), CLT__AC(1), CLT__AC(2), beta, alpha, out));
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

static clt_status cross_rec(const char *fn, const clt_tensor *a, const clt_tensor *b, int dim,
                            clt_tensor **out);

/* saved: a, b; i[0] the dim.  da = b x g, db = g x a, recorded in a pass
 * that creates a graph (clt__twice). */
static clt_status bw_cross(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int dim = (int)n->i[0];
    if (CLT__NEED(n, 0))
        CLT__TRY(cross_rec("clt_backward", S(1), g, dim, &gin[0]));
    if (CLT__NEED(n, 1))
        CLT__TRY(cross_rec("clt_backward", g, S(0), dim, &gin[1]));
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
    clt__twice(n);
    return st;
}

clt_status clt_linalg_cross(const clt_tensor *a, const clt_tensor *b, int dim, clt_tensor **out)
{
    return cross_rec("clt_linalg_cross", a, b, dim, out);
}

clt_status clt_cross(const clt_tensor *a, const clt_tensor *b, int dim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_cross", CLT__AC_CUDA(CLT__AC_PROMOTE), 2, (a, b),
                  clt_cross(CLT__AC(0), CLT__AC(1), dim, out));
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
    CLT__AUTOCAST(fn, CLT__AC_ON(CLT__AC_PROMOTE, CLT__AC_LOWER), 2, (a, b),
                  clt_tensordot(CLT__AC(0), CLT__AC(1), ndims, dims_a, dims_b, out));
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

/* ---- einsum ----------------------------------------------------------------
 * torch's strategy: each operand's repeated subscripts become diagonals and
 * the subscripts only it has (and the output lacks) are summed; every
 * operand is then permuted and reshaped onto one order of all dims (the
 * ellipsis dims first, then the letters in torch's order, A-Z before a-z),
 * size 1 where it lacks one; the operands are multiplied left to right,
 * each pair by one batched matmul that sums the dims no later operand nor
 * the output has; the result is permuted into the output's order and its
 * size-1 dims dropped. */

#define EIN_LETTERS 52

/* A term of the equation: its letters (0..51) and where its ellipsis
 * stands among them (-1: none). */
typedef struct ein_term {
    int n, ell;
    int l[CLT_MAX_DIMS];
} ein_term;

static int ein_letter(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + c - 'a';
    return -1;
}

static char ein_char(int l)
{
    return (char)(l < 26 ? 'A' + l : 'a' + l - 26);
}

/* Parses eq[s, e) into t; k is the operand (-1: the output). */
static clt_status ein_parse(const char *eq, size_t s, size_t e, int k, ein_term *t,
                            const char *fn)
{
    const char *who = k < 0 ? "the output" : "operand";
    t->n = 0;
    t->ell = -1;
    for (size_t i = s; i < e; i++) {
        if (eq[i] == ' ')
            continue;
        if (eq[i] == '.') {
            if (t->ell >= 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: einsum(): found '.' for %s %d for which an ellipsis was "
                                  "already found",
                                  fn, who, k < 0 ? 0 : k);
            if (i + 2 >= e || eq[i + 1] != '.' || eq[i + 2] != '.')
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: einsum(): found '.' for %s %d that is not part of any "
                                  "ellipsis",
                                  fn, who, k < 0 ? 0 : k);
            t->ell = t->n;
            i += 2;
            continue;
        }
        int l = ein_letter(eq[i]);
        if (l < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: einsum(): invalid subscript given at index %zu in the "
                              "equation string, subscripts must be in [a-zA-Z]",
                              fn, i);
        if (t->n >= CLT_MAX_DIMS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: einsum(): more than %d subscripts for %s %d", fn,
                              CLT_MAX_DIMS, who, k < 0 ? 0 : k);
        t->l[t->n++] = l;
    }
    return CLT_OK;
}

/* The einsum plan: the common order (D dims: nell ellipsis dims, then the
 * letters that occur, id[letter]), the output's dims in that order, and
 * the first and last operands that hold each dim. */
typedef struct ein_plan {
    int nell, D, nout;
    int id[EIN_LETTERS];
    int out[CLT_MAX_DIMS];
    bool in_out[CLT_MAX_DIMS];
    int first[CLT_MAX_DIMS], last[CLT_MAX_DIMS];
} ein_plan;

/* The letter of dim d of the common order (not an ellipsis dim). */
static char ein_name(const ein_plan *p, int d)
{
    for (int l = 0; l < EIN_LETTERS; l++)
        if (p->id[l] == d)
            return ein_char(l);
    return '?';
}

/* The dims of operand t (ndim dims) in the common order. */
static int ein_dims(const ein_plan *p, const ein_term *t, int ndim, int *dims)
{
    int m = 0, ne = t->ell < 0 ? 0 : ndim - t->n;
    for (int i = 0; i <= t->n; i++) {
        if (i == t->ell)
            for (int j = 0; j < ne; j++)
                dims[m++] = p->nell - ne + j;
        if (i < t->n)
            dims[m++] = p->id[t->l[i]];
    }
    return m;
}

/* Sums dim d of *t away (keepdim), replacing *t. */
static clt_status ein_sum(clt_tensor **t, int d, int keepdim, const char *fn)
{
    clt_tensor *r = NULL;
    clt_status st = clt__sum_dim_rec(fn, *t, d, keepdim, &r);
    if (st == CLT_OK) {
        clt_tensor_free(*t);
        *t = r;
    }
    return st;
}

/* Operand x (operand k, its dims `dims` in the common order, m of them)
 * made into a new tensor on all D dims: diagonals of repeated dims, the
 * dims only it holds and the output lacks summed, then permuted and
 * reshaped. */
static clt_status ein_align(const ein_plan *p, const clt_tensor *x, int k, int *dims, int m,
                            clt_tensor **out, const char *fn)
{
    /* a handle of our own: a retained x freed with clt_tensor_free would
     * take the reference of x's scope */
    clt_tensor *t = NULL, *r = NULL;
    clt_status st = clt__alias_history(x, &t);
    if (st != CLT_OK)
        return st;
    for (int a = 0; a < m; a++)
        for (int b = a + 1; b < m; b++) {
            if (dims[a] != dims[b])
                continue;
            if (t->shape[a] != t->shape[b]) {
                st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                "%s: einsum(): subscript %c is repeated for operand %d but the "
                                "sizes don't match, %lld != %lld",
                                fn, ein_name(p, dims[a]), k, (long long)t->shape[b],
                                (long long)t->shape[a]);
                goto done;
            }
            /* the diagonal goes last; dims a and b leave */
            int id = dims[a], w = 0;
            CLT__TRY(clt_diagonal(t, 0, a, b, &r));
            clt_tensor_free(t);
            t = r;
            r = NULL;
            for (int c = 0; c < m; c++)
                if (c != a && c != b)
                    dims[w++] = dims[c];
            dims[w++] = id;
            m = w;
            a = -1; /* look again from the start */
            break;
        }
    for (int a = m - 1; a >= 0; a--) {
        int d = dims[a];
        if (p->in_out[d] || p->first[d] != k || p->last[d] != k)
            continue;
        CLT__TRY(ein_sum(&t, a, 0, fn));
        memmove(dims + a, dims + a + 1, sizeof(int) * (size_t)(m - a - 1));
        m--;
    }
    /* the remaining dims are distinct: order them, then insert size 1s */
    int perm[CLT_MAX_DIMS], np = 0;
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < p->D; d++) {
        shape[d] = 1;
        for (int a = 0; a < m; a++)
            if (dims[a] == d)
                perm[np++] = a, shape[d] = t->shape[a];
    }
    CLT__TRY(clt__permute_rec(fn, t, m, perm, &r));
    clt_tensor_free(t);
    t = r;
    r = NULL;
    CLT__TRY(clt__reshape_rec(fn, t, p->D, shape, out));
done:
    clt_tensor_free(t);
    clt_tensor_free(r);
    return st;
}

/* l times r (both on the D dims of the common order), summing the dims
 * marked in sum, by one batched matmul, as torch's sumproduct_pair: the
 * dims both hold are batch dims, those one holds stay its rows or columns,
 * a summed dim only one holds is summed there first.  The result keeps
 * every dim (size 1 where summed). */
static clt_status ein_pair(clt_tensor *l, clt_tensor *r, int D, const bool *sum,
                           clt_tensor **out, const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *L = clt_tensor_retain(l), *R = clt_tensor_retain(r), *a = NULL, *b = NULL,
               *c = NULL, *p = NULL;
    int lro[CLT_MAX_DIMS], lo[CLT_MAX_DIMS], ro[CLT_MAX_DIMS], sm[CLT_MAX_DIMS],
        rest[CLT_MAX_DIMS];
    int nlro = 0, nlo = 0, nro = 0, nsm = 0, nrest = 0;
    int64_t B = 1, LO = 1, RO = 1, S = 1;
    for (int d = 0; d < D; d++) {
        bool sl = L->shape[d] != 1, sr = R->shape[d] != 1;
        if (sum[d] && sl && !sr) {
            CLT__TRY(ein_sum(&L, d, 1, fn));
            sl = false;
        } else if (sum[d] && sr && !sl) {
            CLT__TRY(ein_sum(&R, d, 1, fn));
            sr = false;
        }
        if (sum[d] && sl && sr)
            sm[nsm++] = d, S *= L->shape[d];
        else if (sl && sr)
            lro[nlro++] = d, B *= L->shape[d];
        else if (sl)
            lo[nlo++] = d, LO *= L->shape[d];
        else if (sr)
            ro[nro++] = d, RO *= R->shape[d];
        else
            rest[nrest++] = d;
    }
    int pl[CLT_MAX_DIMS], pr[CLT_MAX_DIMS], po[CLT_MAX_DIMS], inv[CLT_MAX_DIMS], n = 0;
    int64_t so[CLT_MAX_DIMS];
    /* left as [lro, lo, sum, rest], right as [lro, sum, ro, rest] */
#define EIN_CAT(dst, src, cnt)                                               \
    for (int i_ = 0; i_ < (cnt); i_++)                                       \
        (dst)[n++] = (src)[i_]
    EIN_CAT(pl, lro, nlro); EIN_CAT(pl, lo, nlo); EIN_CAT(pl, sm, nsm); EIN_CAT(pl, ro, nro);
    EIN_CAT(pl, rest, nrest);
    n = 0;
    EIN_CAT(pr, lro, nlro); EIN_CAT(pr, sm, nsm); EIN_CAT(pr, ro, nro); EIN_CAT(pr, lo, nlo);
    EIN_CAT(pr, rest, nrest);
    n = 0;
    EIN_CAT(po, lro, nlro); EIN_CAT(po, lo, nlo); EIN_CAT(po, ro, nro); EIN_CAT(po, sm, nsm);
    EIN_CAT(po, rest, nrest);
#undef EIN_CAT
    for (int i = 0; i < D; i++) {
        inv[po[i]] = i;
        so[i] = i < nlro + nlo ? L->shape[po[i]] : i < nlro + nlo + nro ? R->shape[po[i]] : 1;
    }
    CLT__TRY(clt__permute_rec(fn, L, D, pl, &a));
    CLT__TRY(clt__permute_rec(fn, R, D, pr, &b));
    clt_tensor_free(L);
    clt_tensor_free(R);
    L = R = NULL;
    CLT__TRY(clt__reshape_rec(fn, a, 3, (int64_t[]){B, LO, S}, &L));
    CLT__TRY(clt__reshape_rec(fn, b, 3, (int64_t[]){B, S, RO}, &R));
    CLT__TRY(clt__matmul_rec(fn, L, R, &c));
    CLT__TRY(clt__reshape_rec(fn, c, D, so, &p));
    CLT__TRY(clt__permute_rec(fn, p, D, inv, out));
done:
    clt_tensor_free(L);
    clt_tensor_free(R);
    clt_tensor_free(a);
    clt_tensor_free(b);
    clt_tensor_free(c);
    clt_tensor_free(p);
    return st;
}

clt_status clt_einsum(const char *equation, const clt_tensor *const *operands, size_t n,
                      clt_tensor **out)
{
    static const char fn[] = "clt_einsum";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__AUTOCAST_LIST(fn, CLT__AC_BOTH(CLT__AC_LOWER), n, operands,
                       clt_einsum(equation, CLT__ACL, n, out));
    CLT__REQUIRE_ARG(equation, fn);
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: einsum(): must provide at least one operand", fn);
    CLT__REQUIRE_ARG(operands, fn);
    for (size_t k = 0; k < n; k++)
        if (!operands[k])
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: operand %zu is NULL", fn, k);
    if (n > CLT_MAX_DIMS * 4)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: einsum(): at most %d operands", fn,
                          CLT_MAX_DIMS * 4);
    clt_status st = CLT_OK;
    ein_term terms[CLT_MAX_DIMS * 4], ot;
    ein_plan p;
    clt_tensor *al[CLT_MAX_DIMS * 4] = {NULL}, *res = NULL, *r = NULL;
    size_t len = strlen(equation), arrow = len, s = 0, k = 0;
    const char *a = strstr(equation, "->");
    if (a)
        arrow = (size_t)(a - equation);
    for (size_t i = 0; i <= arrow; i++) {
        if (i < arrow && equation[i] == ' ')
            continue;
        if (i < arrow && equation[i] != ',')
            continue;
        if (k >= n) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: einsum(): fewer operands were provided than specified in the "
                            "equation",
                            fn);
            goto done;
        }
        CLT__TRY(ein_parse(equation, s, i, (int)k, &terms[k], fn));
        const clt_tensor *x = operands[k];
        int nl = terms[k].n;
        if (terms[k].ell < 0 && nl != x->ndim) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: einsum(): the number of subscripts in the equation (%d) does "
                            "not match the number of dimensions (%d) for operand %zu and no "
                            "ellipsis was given",
                            fn, nl, x->ndim, k);
            goto done;
        }
        if (nl > x->ndim) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: einsum(): the number of subscripts in the equation (%d) is "
                            "more than the number of dimensions (%d) for operand %zu",
                            fn, nl, x->ndim, k);
            goto done;
        }
        k++;
        s = i + 1;
    }
    if (k < n) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: einsum(): more operands were provided than specified in the "
                        "equation",
                        fn);
        goto done;
    }
    /* the common order */
    memset(&p, 0, sizeof p);
    int count[EIN_LETTERS] = {0};
    for (k = 0; k < n; k++) {
        if (terms[k].ell >= 0 && operands[k]->ndim - terms[k].n > p.nell)
            p.nell = operands[k]->ndim - terms[k].n;
        for (int i = 0; i < terms[k].n; i++)
            count[terms[k].l[i]]++;
    }
    p.D = p.nell;
    for (int l = 0; l < EIN_LETTERS; l++) {
        p.id[l] = -1;
        if (count[l] == 0)
            continue;
        if (p.D >= CLT_MAX_DIMS) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: einsum(): the equation has more than %d distinct dimensions",
                            fn, CLT_MAX_DIMS);
            goto done;
        }
        p.id[l] = p.D++;
    }
    /* the output */
    if (a) {
        CLT__TRY(ein_parse(equation, arrow + 2, len, -1, &ot, fn));
        for (int i = 0; i <= ot.n; i++) {
            if (i == ot.ell)
                for (int j = 0; j < p.nell; j++)
                    p.out[p.nout++] = j;
            if (i == ot.n)
                break;
            int l = ot.l[i], d = p.id[l];
            if (d < 0) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: einsum(): output subscript %c does not appear in the "
                                "equation for any input operand",
                                fn, ein_char(l));
                goto done;
            }
            if (p.in_out[d]) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "%s: einsum(): output subscript %c appears more than once in "
                                "the output",
                                fn, ein_char(l));
                goto done;
            }
            p.in_out[d] = true;
            p.out[p.nout++] = d;
        }
    } else {
        for (int j = 0; j < p.nell; j++)
            p.out[p.nout++] = j;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1)
                p.out[p.nout++] = p.id[l];
    }
    for (int i = 0; i < p.nout; i++)
        p.in_out[p.out[i]] = true;
    int dims[CLT_MAX_DIMS * 4][CLT_MAX_DIMS], nd[CLT_MAX_DIMS * 4];
    for (int d = 0; d < p.D; d++)
        p.first[d] = -1;
    for (k = 0; k < n; k++) {
        nd[k] = ein_dims(&p, &terms[k], operands[k]->ndim, dims[k]);
        for (int i = 0; i < nd[k]; i++) {
            if (p.first[dims[k][i]] < 0)
                p.first[dims[k][i]] = (int)k;
            p.last[dims[k][i]] = (int)k;
        }
    }
    for (k = 0; k < n; k++)
        CLT__TRY(ein_align(&p, operands[k], (int)k, dims[k], nd[k], &al[k], fn));
    /* sizes of one dim agree, or are 1 (broadcast) */
    for (int d = 0; d < p.D; d++) {
        int64_t seen = 1;
        for (k = 0; k < n; k++) {
            int64_t z = al[k]->shape[d];
            if (z != 1 && seen != 1 && z != seen) {
                if (d < p.nell)
                    st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                    "%s: einsum(): operands do not broadcast: an ellipsis "
                                    "dimension has size %lld for operand %zu and %lld before",
                                    fn, (long long)z, k, (long long)seen);
                else
                    st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                    "%s: einsum(): subscript %c has size %lld for operand %zu "
                                    "which does not broadcast with previously seen size %lld",
                                    fn, ein_name(&p, d), (long long)z, k, (long long)seen);
                goto done;
            }
            if (z != 1)
                seen = z;
        }
    }
    res = al[0];
    al[0] = NULL;
    for (k = 1; k < n; k++) {
        bool sum[CLT_MAX_DIMS];
        for (int d = 0; d < p.D; d++)
            sum[d] = !p.in_out[d] && p.last[d] == (int)k;
        CLT__TRY(ein_pair(res, al[k], p.D, sum, &r, fn));
        clt_tensor_free(res);
        res = r;
        r = NULL;
    }
    /* the output's dims first, in its order; the rest are of size 1 */
    int perm[CLT_MAX_DIMS], np = 0;
    int64_t oshape[CLT_MAX_DIMS];
    for (int i = 0; i < p.nout; i++) {
        perm[np++] = p.out[i];
        oshape[i] = res->shape[p.out[i]];
    }
    for (int d = 0; d < p.D; d++)
        if (!p.in_out[d])
            perm[np++] = d;
    bool ident = true;
    for (int i = 0; i < p.D; i++)
        ident = ident && perm[i] == i;
    if (!ident) {
        CLT__TRY(clt__permute_rec(fn, res, p.D, perm, &r));
        clt_tensor_free(res);
        res = r;
        r = NULL;
    }
    if (p.nout != p.D)
        CLT__TRY(clt__reshape_rec(fn, res, p.nout, oshape, out));
    else
        *out = res, res = NULL;
done:
    for (k = 0; k < n && k < CLT_MAX_DIMS * 4; k++)
        clt_tensor_free(al[k]);
    clt_tensor_free(res);
    clt_tensor_free(r);
    return st;
}
