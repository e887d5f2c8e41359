/* grad_reduce.c: the public reductions (reduce.h) with their backward
 * formulas.  The gradient of a reduction over dim d is the output's gradient
 * put back along d (unsqueezed when keepdim was off) and broadcast over it;
 * max and min split ties as PyTorch does. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

#define S(k) (n->saved[k])

/* Node integers: i[0] the dim (-1: all dims), i[1] keepdim. */

/* g with the reduced dim back as size 1 (or every dim, for a full
 * reduction), so that it broadcasts against the input: shape of edge 0. */
static clt_status unreduce(clt__node *n, const clt_tensor *g, clt_tensor **out)
{
    const clt__edge *e = &n->in[0];
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++)
        shape[d] = (n->i[0] < 0 || d == n->i[0]) ? 1 : e->shape[d];
    return clt__reshape_rec("clt_backward", g, e->ndim, shape, out);
}

/* g brought back and expanded to the input's shape. */
static clt_status spread(clt__node *n, const clt_tensor *g, clt_tensor **out)
{
    clt_tensor *u = NULL;
    clt_status st = unreduce(n, g, &u);
    if (st == CLT_OK)
        st = clt__expand_rec("clt_backward", u, n->in[0].ndim, n->in[0].shape, out);
    clt_tensor_free(u);
    return st;
}

/* Elements the reduction combined into each output element. */
static double count(const clt__node *n)
{
    const clt__edge *e = &n->in[0];
    double c = 1;
    for (int d = 0; d < e->ndim; d++)
        if (n->i[0] < 0 || d == n->i[0])
            c *= (double)e->shape[d];
    return c;
}

static clt_status bw_sum(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return spread(n, g, &gin[0]);
}

/* g / count: a complex g through the complex division by a real 0-d
 * tensor (both record under create_graph). */
static clt_status over_count(clt__node *n, const clt_tensor *g, clt_tensor **out)
{
    if (!clt__dtype_is_complex(g->dtype))
        return clt__div_scalar_rec("clt_backward", g, count(n), out);
    *out = NULL;
    clt_tensor *c = NULL;
    clt_status st = clt__full(g->dev, clt__complex_part_dtype(g->dtype), 0, NULL, count(n), &c);
    if (st == CLT_OK)
        st = clt__complex_binary_rec(3, g, c, out, "clt_backward");
    clt_tensor_free(c);
    return st;
}

static clt_status bw_mean(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *t = NULL;
    clt_status st = over_count(n, g, &t);
    if (st == CLT_OK)
        st = spread(n, t, &gin[0]);
    clt_tensor_free(t);
    return st;
}

/* x summed (or multiplied, prod 1) over the node's reduced dims, which stay
 * as size 1 so that the result broadcasts against the input. */
static clt_status over_slice(clt__node *n, const clt_tensor *x, int prod, clt_tensor **out)
{
    int dim = (int)n->i[0];
    if (dim >= 0)
        return prod ? clt__prod_dim(x, dim, 1, out, "clt_backward")
                    : clt__sum_dim(x, dim, 1, out, "clt_backward");
    clt_tensor *s = NULL;
    clt_status st = prod ? clt__prod(x, &s, "clt_backward") : clt__sum(x, &s, "clt_backward");
    if (st == CLT_OK)
        st = unreduce(n, s, out);
    clt_tensor_free(s);
    return st;
}

/* Whether some element of a is 0, read back. */
static clt_status has_zero(const clt_tensor *a, bool *out)
{
    static const char fn[] = "clt_backward";
    clt_tensor *z = NULL, *any = NULL;
    unsigned char v = 0;
    clt_status st = clt__eq_scalar_in(fn, a, 0.0, &z);
    if (st == CLT_OK)
        st = clt__any(z, &any, fn);
    if (st == CLT_OK)
        st = clt__tensor_read_at(any, &v, 1, fn, __builtin_return_address(0));
    clt_tensor_free(z);
    clt_tensor_free(any);
    *out = v != 0;
    return st;
}

/* Ones of a's shape with dim's size 1. */
static clt_status ones_but(const clt_tensor *a, int dim, clt_tensor **out)
{
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    shape[dim] = 1;
    return clt__full(a->dev, a->dtype, a->ndim, shape, 1.0, out);
}

/* torch's prod_safe_zeros_backward, recorded: g times the product of the
 * other elements of a's slice along dim, as the exclusive cumulative
 * products from either end (cat of ones and a shifted, cumprod; the same
 * of a flipped), which zeros leave safe.  a's size along dim is at least
 * 2. */
clt_status clt__prod_others(const clt_tensor *g, const clt_tensor *a, int dim, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    int64_t len = a->shape[dim];
    clt_status st = CLT_OK;
    clt_tensor *one = NULL, *lo = NULL, *c0 = NULL, *en = NULL, *hi = NULL, *fh = NULL,
               *c1 = NULL, *er = NULL, *ef = NULL, *p = NULL;
    CLT__TRY(ones_but(a, dim, &one));
    CLT__TRY(clt__narrow_rec(fn, a, dim, 0, len - 1, &lo));
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){one, lo}, 2, dim, &c0));
    CLT__TRY(clt_cumprod(c0, dim, &en));
    CLT__TRY(clt__narrow_rec(fn, a, dim, 1, len - 1, &hi));
    CLT__TRY(clt_flip(hi, &dim, 1, &fh));
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){one, fh}, 2, dim, &c1));
    CLT__TRY(clt_cumprod(c1, dim, &er));
    CLT__TRY(clt_flip(er, &dim, 1, &ef));
    CLT__TRY(clt__mul_rec(fn, en, ef, &p));
    CLT__TRY(clt__mul_rec(fn, g, p, out));
done:;
    clt_tensor *all[] = {one, lo, c0, en, hi, fh, c1, er, ef, p};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

/* prod's gradient in recorded ops, for a pass that creates a graph
 * (clt__twice): torch's prod_backward when grad mode is on, g * (out / a)
 * when a has no zero, else clt__prod_others along the dim (of a flattened, for
 * the full product). */
static clt_status prod_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *a = S(0);
    if (a->ndim == 0)
        return clt__alias_grad(g, &gin[0]);
    clt_status st = CLT_OK;
    bool zero = false;
    int dim = (int)n->i[0];
    clt_tensor *gu = NULL, *ou = NULL, *q = NULL, *flat = NULL, *r = NULL;
    CLT__TRY(has_zero(a, &zero));
    if (!zero) {
        CLT__TRY(unreduce(n, g, &gu));
        CLT__TRY(unreduce(n, S(1), &ou));
        CLT__TRY(clt__div_rec(fn, ou, a, &q));
        CLT__TRY(clt__mul_rec(fn, gu, q, &gin[0]));
    } else if (dim >= 0 && a->shape[dim] == 1) {
        CLT__TRY(unreduce(n, g, &gu));
        CLT__TRY(clt__expand_rec(fn, gu, a->ndim, a->shape, &gin[0]));
    } else if (dim >= 0) {
        CLT__TRY(unreduce(n, g, &gu));
        CLT__TRY(clt__prod_others(gu, a, dim, &gin[0]));
    } else if (a->numel == 1) {
        CLT__TRY(clt__expand_rec(fn, g, a->ndim, a->shape, &gin[0]));
    } else {
        int64_t numel = a->numel;
        CLT__TRY(clt__reshape_rec(fn, a, 1, &numel, &flat));
        CLT__TRY(clt__prod_others(g, flat, 0, &r));
        CLT__TRY(clt__reshape_rec(fn, r, a->ndim, a->shape, &gin[0]));
    }
done:
    clt_tensor_free(gu);
    clt_tensor_free(ou);
    clt_tensor_free(q);
    clt_tensor_free(flat);
    clt_tensor_free(r);
    return st;
}

/* saved: a, out.  PyTorch's prod_backward: g * out / a where the slice has
 * no zero; elsewhere g times the product of the other elements (its
 * prod_safe_zeros_backward): for the only zero of a slice the product of
 * the non-zero ones, for every other element 0, or NaN when the others hold
 * an infinity or a NaN (0 * inf).  The full product of a tensor with two or
 * more zeros has gradient 0 throughout, as in PyTorch.  Recorded in a pass
 * that creates a graph (prod_twice). */
static clt_status bw_prod(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (clt__creating_graph())
        return prod_twice(n, g, gin);
    clt_status st = CLT_OK;
    const clt_tensor *a = S(0);
    clt_tensor *gu = NULL, *ou = NULL, *z = NULL, *zf = NULL, *nz = NULL, *one = NULL,
               *anz = NULL, *pnz = NULL, *t = NULL, *c0 = NULL, *c1 = NULL, *zero = NULL,
               *m0 = NULL, *m1 = NULL, *inner = NULL, *nanv = NULL, *a0 = NULL, *nf = NULL,
               *nff = NULL, *nfc = NULL, *nfo = NULL, *mo = NULL, *zo = NULL, *c2 = NULL,
               *only = NULL, *m2 = NULL, *tmp = NULL;
    CLT__TRY(unreduce(n, g, &gu));
    CLT__TRY(unreduce(n, S(1), &ou));
    CLT__TRY(clt__eq_scalar_in("clt_backward", a, 0.0, &z));
    CLT__TRY(clt__to_dtype(z, a->dtype, &zf, "clt_backward"));
    CLT__TRY(over_slice(n, zf, 0, &nz));
    CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 1.0, &one));
    CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 0.0, &zero));
    CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, NAN, &nanv));
    CLT__TRY(clt__where_in("clt_backward", z, one, a, &anz));
    CLT__TRY(over_slice(n, anz, 1, &pnz));
    /* no zero: g * out / a */
    CLT__TRY(clt__mul_in("clt_backward", gu, ou, &t));
    CLT__TRY(clt__div_in("clt_backward", t, a, &c0));
    /* the only zero: g * product of the others */
    CLT__TRY(clt__mul_in("clt_backward", gu, pnz, &c1));
    /* the rest: g * 0, NaN where one of the others is not finite (x * 0 is
     * NaN just for those) */
    CLT__TRY(clt__mul_scalar_in("clt_backward", a, 0.0, &a0));
    CLT__TRY(clt__ne_in("clt_backward", a0, a0, &nf));
    CLT__TRY(clt__to_dtype(nf, a->dtype, &nff, "clt_backward"));
    CLT__TRY(over_slice(n, nff, 0, &nfc));
    CLT__TRY(clt__sub_in("clt_backward", nfc, nff, &nfo));
    CLT__TRY(clt__gt_scalar_in("clt_backward", nfo, 0.5, &mo));
    CLT__TRY(clt__where_in("clt_backward", mo, nanv, zero, &zo));
    CLT__TRY(clt__mul_in("clt_backward", gu, zo, &c2));
    CLT__TRY(clt__eq_scalar_in("clt_backward", nz, 1.0, &m1));
    CLT__TRY(clt__where_in("clt_backward", m1, c1, c2, &only));
    CLT__TRY(clt__where_in("clt_backward", z, only, c2, &inner));
    if (n->i[0] < 0) {
        CLT__TRY(clt__gt_scalar_in("clt_backward", nz, 1.5, &m2));
        CLT__TRY(clt__where_in("clt_backward", m2, zero, inner, &tmp));
        clt_tensor_free(inner);
        inner = tmp;
        tmp = NULL;
    }
    CLT__TRY(clt__eq_scalar_in("clt_backward", nz, 0.0, &m0));
    CLT__TRY(clt__where_in("clt_backward", m0, c0, inner, &gin[0]));
done:;
    clt_tensor *all[] = {gu,    ou,   z,  zf, nz,  one, anz, pnz, t,  c0, c1,   zero, m0, m1,
                         inner, nanv, a0, nf, nff, nfc, nfo, mo, zo, c2, only, m2, tmp};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

/* saved: a, out.  Full max/min: the gradient is shared evenly by the
 * elements equal to the result (NaN ones when it is NaN), as PyTorch's
 * evenly_distribute_backward. */
static clt_status bw_extreme_all(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *eq = NULL, *nan = NULL, *ef = NULL, *nf = NULL, *mask = NULL, *cnt = NULL,
               *share = NULL;
    CLT__TRY(clt__eq_in("clt_backward", S(0), S(1), &eq));
    CLT__TRY(clt__ne_in("clt_backward", S(0), S(0), &nan));
    CLT__TRY(clt__to_dtype(eq, g->dtype, &ef, "clt_backward"));
    CLT__TRY(clt__to_dtype(nan, g->dtype, &nf, "clt_backward"));
    /* When the result is not NaN no input is, and when it is, no input
     * equals it: the sum is the one mask that applies. */
    CLT__TRY(clt__add_in("clt_backward", ef, nf, &mask));
    CLT__TRY(clt__sum(mask, &cnt, "clt_backward"));
    CLT__TRY(clt__div_rec("clt_backward", g, cnt, &share));
    CLT__TRY(clt__mul_rec("clt_backward", mask, share, &gin[0]));
done:
    clt_tensor_free(eq);
    clt_tensor_free(nan);
    clt_tensor_free(ef);
    clt_tensor_free(nf);
    clt_tensor_free(mask);
    clt_tensor_free(cnt);
    clt_tensor_free(share);
    return st;
}

/* saved: the indices the forward found.  max/min along a dim: the whole
 * gradient goes to the element each index picks (the first of ties, the
 * first NaN), as PyTorch's value_selecting_reduction_backward. */
static clt_status bw_extreme_dim(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[0];
    int dim = (int)n->i[0];
    if (dim < 0)
        return clt__alias_grad(g, &gin[0]); /* a 0-d input is its own max */
    clt_tensor *idx = NULL, *ar = NULL, *arv = NULL, *miss = NULL, *gu = NULL;
    CLT__TRY(unreduce(n, S(0), &idx));
    CLT__TRY(clt__arange(e->dev, CLT_INT64, 0, (double)e->shape[dim], 1, &ar));
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < e->ndim; d++)
        shape[d] = d == dim ? e->shape[d] : 1;
    CLT__TRY(clt__reshape(ar, e->ndim, shape, &arv, "clt_backward"));
    CLT__TRY(clt__ne_in("clt_backward", arv, idx, &miss));
    CLT__TRY(unreduce(n, g, &gu));
    CLT__TRY(clt__zero_where(miss, gu, &gin[0]));
done:
    clt_tensor_free(idx);
    clt_tensor_free(ar);
    clt_tensor_free(arv);
    clt_tensor_free(miss);
    clt_tensor_free(gu);
    return st;
}

/* saved: a (and out for std).  var: g * 2 (a - mean) / (N - correction);
 * std: var's gradient / (2 out).  s[0] is the correction, i[2] 1 for std. */
static clt_status bw_var(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt_tensor *a = S(0);
    clt_tensor *mu = NULL, *dev = NULL, *gu = NULL, *t = NULL, *ou = NULL,
               *t2 = NULL;
    int dim = (int)n->i[0];
    if (dim < 0) { /* the mean of the flattened a, as size-1 dims */
        clt_tensor *flat = NULL, *m = NULL;
        int64_t numel = (int64_t)count(n);
        st = clt__reshape_rec("clt_backward", a, 1, &numel, &flat);
        if (st == CLT_OK)
            st = clt__mean_dim_rec("clt_backward", flat, 0, 0, &m);
        if (st == CLT_OK)
            st = unreduce(n, m, &mu);
        clt_tensor_free(flat);
        clt_tensor_free(m);
        CLT__TRY(st);
    } else {
        CLT__TRY(clt__mean_dim_rec("clt_backward", a, dim, 1, &mu));
    }
    CLT__TRY(clt__sub_rec("clt_backward", a, mu, &dev));
    CLT__TRY(unreduce(n, g, &gu));
    double scale = 2.0 / (count(n) - n->s[0]);
    if (n->i[2]) {
        /* g / (2 std), and 0 where std is 0, as PyTorch's std_backward */
        clt_tensor *q = NULL, *z = NULL;
        CLT__TRY(unreduce(n, S(1), &ou));
        st = clt__div_rec("clt_backward", gu, ou, &q);
        if (st == CLT_OK)
            st = clt__eq_scalar_in("clt_backward", ou, 0.0, &z);
        if (st == CLT_OK)
            st = clt__zero_where(z, q, &t2);
        clt_tensor_free(q);
        clt_tensor_free(z);
        CLT__TRY(st);
        scale /= 2.0;
    } else {
        CLT__TRY(clt__alias_grad(gu, &t2));
    }
    CLT__TRY(clt__mul_rec("clt_backward", dev, t2, &t));
    CLT__TRY(clt__mul_scalar_rec("clt_backward", t, scale, &gin[0]));
done:
    clt_tensor_free(mu);
    clt_tensor_free(dev);
    clt_tensor_free(gu);
    clt_tensor_free(t);
    clt_tensor_free(ou);
    clt_tensor_free(t2);
    return st;
}

/* Wraps dim into [0, ndim) for the node, as the forward accepted it;
 * 0-d inputs reduce over "all" their (no) dims. */
static int64_t node_dim(const clt_tensor *a, int dim)
{
    if (a->ndim == 0)
        return -1;
    return dim < 0 ? dim + a->ndim : dim;
}

static clt_status bw_cumsum(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_logsumexp(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_cumprod(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_logcumsumexp(clt__node *n, const clt_tensor *g, clt_tensor **gin);

/* Records node `name` for a reduction of a over dim (-1 all) after fwd
 * returned st; save: 1 a, 2 (a, out). */
static clt_status record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                         int save, const clt_tensor *a, int64_t dim, int keepdim, int64_t flag,
                         double s)
{
    if (st != CLT_OK)
        return st;
    const clt_tensor *sv[2] = {a, *out};
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, 1, &a, save, sv, &n);
    if (n) {
        n->i[0] = dim;
        n->i[1] = keepdim;
        n->i[2] = flag;
        n->s[0] = s;
    }
    if (bw == bw_sum || bw == bw_mean || bw == bw_cumsum || bw == bw_extreme_all ||
        bw == bw_var || bw == bw_logsumexp || bw == bw_prod || bw == bw_cumprod ||
        bw == bw_logcumsumexp) /* recorded formulas: clt__twice */
        clt__twice(n);
    return st;
}

/* ac: an op of autocast's float32 list (sum, prod): float16 operands on
 * the autocast device are cast to float32 first. */
#define DEF_ALL(fname, nall, bw_all, save_all, flag, ac)                                  \
    clt_status clt_##fname(const clt_tensor *a, clt_tensor **out)                         \
    {                                                                                     \
        if (ac)                                                                           \
            CLT__AUTOCAST("clt_" #fname, CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),           \
                          clt_##fname(CLT__AC(0), out));                                  \
        clt_status st = clt__##fname(a, out, "clt_" #fname);                              \
        return record(st, out, nall, bw_all, save_all, a, -1, 0, flag, 0.0);              \
    }
#define DEF_REDUCTION(fname, nall, ndim, bw_all, bw_dim, save_all, save_dim, flag, ac)      \
    DEF_ALL(fname, nall, bw_all, save_all, flag, ac)                                      \
    clt_status clt__##fname##_dim_rec(const char *fn, const clt_tensor *a, int dim,       \
                                      int keepdim, clt_tensor **out)                      \
    {                                                                                     \
        clt_status st = clt__##fname##_dim(a, dim, keepdim, out, fn);                     \
        return record(st, out, ndim, bw_dim, save_dim, a, st == CLT_OK ? node_dim(a, dim) : 0, \
                      keepdim, flag, 0.0);                                                \
    }                                                                                     \
    clt_status clt_##fname##_dim(const clt_tensor *a, int dim, int keepdim,               \
                                 clt_tensor **out)                                        \
    {                                                                                     \
        if (ac)                                                                           \
            CLT__AUTOCAST("clt_" #fname "_dim", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),    \
                          clt_##fname##_dim(CLT__AC(0), dim, keepdim, out));              \
        return clt__##fname##_dim_rec("clt_" #fname "_dim", a, dim, keepdim, out);        \
    }

DEF_REDUCTION(sum, "SumBackward0", "SumBackward1", bw_sum, bw_sum, 0, 0, 0, 1)
DEF_REDUCTION(mean, "MeanBackward0", "MeanBackward1", bw_mean, bw_mean, 0, 0, 0, 0)

/* prod by hand: a complex operand takes the composed product
 * (grad_complex_reduce.c), whose recorded products carry its gradient. */
clt_status clt_sum_to_size(const clt_tensor *t, int ndim, const int64_t *size,
                           clt_tensor **out)
{
    const char *fn = "clt_sum_to_size";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dimensions (0 to %d)", fn, ndim,
                          CLT_MAX_DIMS);
    if (ndim > 0)
        CLT__REQUIRE_ARG(size, fn);
    int lead = t->ndim - ndim;
    bool ok = lead >= 0, same = lead == 0 && ndim > 0;
    for (int d = 0; ok && d < ndim; d++) {
        ok = size[d] == t->shape[lead + d] || size[d] == 1;
        same = same && size[d] == t->shape[d];
    }
    if (!ok) {
        char a[CLT_MAX_DIMS * 24 + 4], b[CLT_MAX_DIMS * 24 + 4];
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: size {%s} is not expandable to size {%s}.",
                          fn, clt__shape_str(a, sizeof a, ndim, size),
                          clt__shape_str(b, sizeof b, t->ndim, t->shape));
    }
    /* torch returns t itself; a view of it (its gradient passes unchanged).
     * An empty size always sums, a 0-d t too (torch's sum_to). */
    if (same)
        return clt__expand_rec(fn, t, t->ndim, t->shape, out);
    clt_status st = CLT_OK;
    clt_tensor *cur = (clt_tensor *)t, *next = NULL;
    if (lead > 0 || ndim == 0) {
        /* the leading dimensions in one sum over their product, as the
         * engine sums a broadcast gradient */
        int64_t shape[CLT_MAX_DIMS + 1];
        shape[0] = 1;
        for (int d = 0; d < lead; d++)
            shape[0] *= t->shape[d];
        for (int d = 0; d < ndim; d++)
            shape[1 + d] = t->shape[lead + d];
        CLT__TRY(clt__reshape_rec(fn, t, 1 + ndim, shape, &next));
        cur = next;
        next = NULL;
        CLT__TRY(clt__sum_dim_rec(fn, cur, 0, 0, &next));
        clt_tensor_free(cur);
        cur = next;
        next = NULL;
    }
    for (int d = 0; d < ndim; d++) {
        if (size[d] == 1 && cur->shape[d] != 1) {
            CLT__TRY(clt__sum_dim_rec(fn, cur, d, 1, &next));
            if (cur != t)
                clt_tensor_free(cur);
            cur = next;
            next = NULL;
        }
    }
    *out = cur;
    return CLT_OK;
done:
    if (cur != t)
        clt_tensor_free(cur);
    return st;
}

clt_status clt_prod(const clt_tensor *a, clt_tensor **out)
{
    CLT__AUTOCAST("clt_prod", CLT__AC_BOTH(CLT__AC_FLOAT32), 1, (a), clt_prod(CLT__AC(0), out));
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_prod_rec("clt_prod", a, true, 0, 0, out);
    clt_status st = clt__prod(a, out, "clt_prod");
    return record(st, out, "ProdBackward0", bw_prod, 2, a, -1, 0, 0, 0.0);
}

clt_status clt__prod_dim_rec(const char *fn, const clt_tensor *a, int dim, int keepdim,
                             clt_tensor **out)
{
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_prod_rec(fn, a, false, dim, keepdim, out);
    clt_status st = clt__prod_dim(a, dim, keepdim, out, fn);
    return record(st, out, "ProdBackward1", bw_prod, 2, a, st == CLT_OK ? node_dim(a, dim) : 0,
                  keepdim, 0, 0.0);
}

clt_status clt_prod_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_prod_dim", CLT__AC_BOTH(CLT__AC_FLOAT32), 1, (a),
                  clt_prod_dim(CLT__AC(0), dim, keepdim, out));
    return clt__prod_dim_rec("clt_prod_dim", a, dim, keepdim, out);
}
DEF_ALL(max, "MaxBackward1", bw_extreme_all, 2, 1, 0)
DEF_ALL(min, "MinBackward1", bw_extreme_all, 2, 0, 0)

/* max/min along dim: the values record the node, which keeps the indices
 * for the backward; the caller gets them too when it asks. */
static clt_status extreme_dim(const clt_tensor *a, int dim, int keepdim, bool max,
                              clt_tensor **values, clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    clt_tensor *idx = NULL;
    clt_status st = max ? clt__max_dim(a, dim, keepdim, values, &idx, "clt_max_dim")
                        : clt__min_dim(a, dim, keepdim, values, &idx, "clt_min_dim");
    clt__node *n = NULL;
    st = clt__record(st, values, max ? "MaxBackward0" : "MinBackward0", bw_extreme_dim, 1, &a,
                     1, (const clt_tensor *const *)&idx, &n);
    if (n) {
        n->i[0] = node_dim(a, dim);
        n->i[1] = keepdim;
    }
    clt__twice(n); /* a recorded where */
    if (st == CLT_OK && indices)
        *indices = idx;
    else
        clt_tensor_free(idx);
    return st;
}

clt_status clt_max_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                       clt_tensor **indices)
{
    return extreme_dim(a, dim, keepdim, true, values, indices);
}

clt_status clt_min_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **values,
                       clt_tensor **indices)
{
    return extreme_dim(a, dim, keepdim, false, values, indices);
}

clt_status clt_argmax(const clt_tensor *a, clt_tensor **out)
{
    return clt__argmax(a, out, "clt_argmax");
}

clt_status clt_argmax_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return clt__argmax_dim(a, dim, keepdim, out, "clt_argmax_dim");
}

clt_status clt_argmin(const clt_tensor *a, clt_tensor **out)
{
    return clt__argmin(a, out, "clt_argmin");
}

clt_status clt_argmin_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return clt__argmin_dim(a, dim, keepdim, out, "clt_argmin_dim");
}

clt_status clt_var(const clt_tensor *a, double correction, clt_tensor **out)
{
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_var_rec("clt_var", a, true, 0, correction, 0, false, out);
    clt_status st = clt__var(a, correction, out, "clt_var");
    return record(st, out, "VarBackward0", bw_var, 1, a, -1, 0, 0, correction);
}

clt_status clt__var_dim_rec(const char *fn, const clt_tensor *a, int dim, double correction,
                            int keepdim, clt_tensor **out)
{
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_var_rec(fn, a, false, dim, correction, keepdim, false, out);
    clt_status st = clt__var_dim(a, dim, correction, keepdim, out, fn);
    return record(st, out, "VarBackward0", bw_var, 1, a, st == CLT_OK ? node_dim(a, dim) : 0,
                  keepdim, 0, correction);
}

clt_status clt_var_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                       clt_tensor **out)
{
    return clt__var_dim_rec("clt_var_dim", a, dim, correction, keepdim, out);
}

clt_status clt_std(const clt_tensor *a, double correction, clt_tensor **out)
{
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_var_rec("clt_std", a, true, 0, correction, 0, true, out);
    clt_status st = clt__std(a, correction, out, "clt_std");
    return record(st, out, "StdBackward0", bw_var, 2, a, -1, 0, 1, correction);
}

clt_status clt__std_dim_rec(const char *fn, const clt_tensor *a, int dim, double correction,
                            int keepdim, clt_tensor **out)
{
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_var_rec(fn, a, false, dim, correction, keepdim, true, out);
    clt_status st = clt__std_dim(a, dim, correction, keepdim, out, fn);
    return record(st, out, "StdBackward0", bw_var, 2, a, st == CLT_OK ? node_dim(a, dim) : 0,
                  keepdim, 1, correction);
}

clt_status clt_std_dim(const clt_tensor *a, int dim, double correction, int keepdim,
                       clt_tensor **out)
{
    return clt__std_dim_rec("clt_std_dim", a, dim, correction, keepdim, out);
}

/* saved: a, out.  logsumexp: g * exp(a - out), softmax along the reduced
 * dims (NaN at elements equal to an infinite out: inf - inf, as in
 * PyTorch's logsumexp_backward). */
static clt_status bw_logsumexp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *gu = NULL, *ou = NULL, *d = NULL, *e = NULL;
    CLT__TRY(unreduce(n, g, &gu));
    CLT__TRY(unreduce(n, S(1), &ou));
    CLT__TRY(clt__sub_rec("clt_backward", S(0), ou, &d));
    CLT__TRY(clt__exp_rec("clt_backward", d, &e));
    CLT__TRY(clt__mul_rec("clt_backward", gu, e, &gin[0]));
done:
    clt_tensor_free(gu);
    clt_tensor_free(ou);
    clt_tensor_free(d);
    clt_tensor_free(e);
    return st;
}

clt_status clt_logsumexp(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_logsumexp", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_logsumexp(CLT__AC(0), dim, keepdim, out));
    clt_status st = clt__logsumexp(a, dim, keepdim, out, "clt_logsumexp");
    return record(st, out, "LogsumexpBackward0", bw_logsumexp, 2, a,
                  st == CLT_OK ? node_dim(a, dim) : 0, keepdim, 0, 0.0);
}

clt_status clt_logsumexp_all(const clt_tensor *a, clt_tensor **out)
{
    clt_status st = clt__logsumexp_all(a, out, "clt_logsumexp_all");
    return record(st, out, "LogsumexpBackward0", bw_logsumexp, 2, a, -1, 0, 0, 0.0);
}

/* cumsum: the cumulative sum of g from the end, along the same dim (i[0];
 * -1 for a 0-d input, its own cumsum); in a pass that creates a graph
 * flip, cumsum, flip, recorded (clt__twice). */
/* g's cumulative sum from the end along dim, recorded: flip, cumsum,
 * flip. */
static clt_status reversed_cumsum(const clt_tensor *g, int dim, clt_tensor **out)
{
    clt_tensor *f = NULL, *c = NULL;
    clt_status st = clt_flip(g, &dim, 1, &f);
    if (st == CLT_OK)
        st = clt_cumsum(f, dim, &c);
    if (st == CLT_OK)
        st = clt_flip(c, &dim, 1, out);
    clt_tensor_free(f);
    clt_tensor_free(c);
    return st;
}

static clt_status bw_cumsum(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->i[0] < 0)
        return clt__alias_grad(g, &gin[0]);
    int d = (int)n->i[0];
    if (!clt__creating_graph())
        return clt__cumsum(g, d, true, &gin[0], "clt_backward");
    return reversed_cumsum(g, d, &gin[0]);
}

clt_status clt_cumsum(const clt_tensor *a, int dim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_cumsum", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_cumsum(CLT__AC(0), dim, out));
    clt_status st = clt__cumsum(a, dim, false, out, "clt_cumsum");
    return record(st, out, "CumsumBackward0", bw_cumsum, 0, a,
                  st == CLT_OK ? node_dim(a, dim) : 0, 0, 0, 0.0);
}

clt_status clt_any(const clt_tensor *a, clt_tensor **out)
{
    return clt__any(a, out, "clt_any");
}

clt_status clt_all(const clt_tensor *a, clt_tensor **out)
{
    return clt__all(a, out, "clt_all");
}

clt_status clt_any_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return clt__any_dim(a, dim, keepdim, out, "clt_any_dim");
}

clt_status clt_all_dim(const clt_tensor *a, int dim, int keepdim, clt_tensor **out)
{
    return clt__all_dim(a, dim, keepdim, out, "clt_all_dim");
}

/* sort and topk (scatter), cummax and cummin (add: torch's
 * cummaxmin_backward, a scatter_add): saved the indices along i[0]; g goes
 * back to the element each index names, 0 elsewhere.  The scatters record
 * (clt__twice): their gradient in g gathers at the indices again. */
static clt_status put_back(clt__node *n, const clt_tensor *g, bool add, clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    if (e->ndim == 0)
        return clt__alias_grad(g, &gin[0]);
    clt_tensor *z = NULL;
    clt_status st = clt__full(e->dev, g->dtype, e->ndim, e->shape, 0.0, &z);
    if (st == CLT_OK)
        st = add ? clt_scatter_add(z, (int)n->i[0], S(0), g, &gin[0])
                 : clt_scatter(z, (int)n->i[0], S(0), g, &gin[0]);
    clt_tensor_free(z);
    return st;
}

static clt_status bw_sort(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return put_back(n, g, false, gin);
}

static clt_status bw_cummaxmin(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return put_back(n, g, true, gin);
}

/* The values of sort, topk, cummax or cummin record the node (backward bw),
 * which keeps the indices. */
static clt_status sort_record(clt_status st, const clt_tensor *a, int dim, const char *name,
                              clt__backward_fn bw, clt_tensor **values, clt_tensor *idx)
{
    clt__node *n = NULL;
    st = clt__record(st, values, name, bw, 1, &a, 1, (const clt_tensor *const *)&idx, &n);
    clt__twice(n);
    if (n)
        n->i[0] = node_dim(a, dim);
    return st;
}

clt_status clt_sort(const clt_tensor *a, int dim, int descending, clt_tensor **values,
                    clt_tensor **indices)
{
    if (indices)
        *indices = NULL;
    if (values == NULL && indices == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "clt_sort: values and indices are both NULL");
    clt_tensor *idx = NULL;
    clt_status st = clt__sort(a, dim, descending != 0, values, &idx, "clt_sort");
    if (values)
        st = sort_record(st, a, dim, "SortBackward0", bw_sort, values, idx);
    if (st == CLT_OK && indices)
        *indices = idx;
    else
        clt_tensor_free(idx);
    return st;
}

clt_status clt_argsort(const clt_tensor *a, int dim, int descending, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, "clt_argsort");
    return clt__sort(a, dim, descending != 0, NULL, out, "clt_argsort");
}

clt_status clt_topk(const clt_tensor *a, int64_t k, int dim, int largest, int sorted,
                    clt_tensor **values, clt_tensor **indices)
{
    (void)sorted; /* the results are always sorted */
    if (indices)
        *indices = NULL;
    if (values == NULL && indices == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "clt_topk: values and indices are both NULL");
    clt_tensor *idx = NULL;
    clt_status st = clt__topk(a, k, dim, largest != 0, values, &idx, "clt_topk");
    if (values)
        st = sort_record(st, a, dim, "TopkBackward0", bw_sort, values, idx);
    if (st == CLT_OK && indices)
        *indices = idx;
    else
        clt_tensor_free(idx);
    return st;
}

/* cumprod's gradient in recorded ops, for a pass that creates a graph
 * (clt__twice): torch's cumprod_backward when grad mode is on, the
 * reversed cumsum of g * out divided by a when a has no zero, else for
 * each k the sum over j >= k of g_j times the product of a_0 ... a_j but
 * a_k (the products before k, times the cumprod after it), side by side
 * along dim. */
static clt_status cumprod_twice(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *a = S(0);
    int dim = (int)n->i[0];
    int64_t len = a->shape[dim];
    if (a->numel == 0 || len == 1)
        return clt__alias_grad(g, &gin[0]);
    clt_status st = CLT_OK;
    bool zero = false;
    clt_tensor *w = NULL, *rc = NULL, *one = NULL, *pu = NULL, *pf = NULL, *t = NULL, *om = NULL,
               *gs = NULL, *gm = NULL, **col = NULL;
    CLT__TRY(has_zero(a, &zero));
    if (!zero) {
        CLT__TRY(clt__mul_rec(fn, S(1), g, &w));
        CLT__TRY(reversed_cumsum(w, dim, &rc));
        CLT__TRY(clt__div_rec(fn, rc, a, &gin[0]));
        goto done;
    }
    col = calloc((size_t)len, sizeof *col);
    if (col == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    CLT__TRY(ones_but(a, dim, &one));
    for (int64_t k = 0; k < len; k++) {
        if (k > 0) { /* the product of a_0 ... a_(k-1) */
            CLT__TRY(clt__narrow_rec(fn, a, dim, 0, k, &t));
            CLT__TRY(clt__prod_dim_rec(fn, t, dim, 1, &pu));
            clt_tensor_free(t);
            t = NULL;
        }
        if (k < len - 1) { /* the cumprod of a_(k+1) ... */
            CLT__TRY(clt__narrow_rec(fn, a, dim, k + 1, len - k - 1, &t));
            CLT__TRY(clt_cumprod(t, dim, &pf));
            clt_tensor_free(t);
            t = NULL;
            if (pu)
                CLT__TRY(clt__mul_rec(fn, pu, pf, &t));
            CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const[]){pu ? pu : one, t ? t : pf}, 2,
                                  dim, &om));
        } else {
            om = pu;
            pu = NULL;
        }
        CLT__TRY(clt__narrow_rec(fn, g, dim, k, len - k, &gs));
        CLT__TRY(clt__mul_rec(fn, gs, om, &gm));
        CLT__TRY(clt__sum_dim_rec(fn, gm, dim, 1, &col[k]));
        clt_tensor *done_k[] = {pu, pf, t, om, gs, gm};
        for (size_t i = 0; i < sizeof done_k / sizeof done_k[0]; i++)
            clt_tensor_free(done_k[i]);
        pu = pf = t = om = gs = gm = NULL;
    }
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const *)col, (size_t)len, dim, &gin[0]));
done:;
    clt_tensor *all[] = {w, rc, one, pu, pf, t, om, gs, gm};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    if (col)
        for (int64_t k = 0; k < len; k++)
            clt_tensor_free(col[k]);
    free(col);
    return st;
}

/* cumprod: saved a, out.  torch's cumprod_backward, with j the first zero
 * of a line: before j, the reversed cumsum of g * out (0 from j on)
 * divided by a; at j, the product of the elements before it times the sum
 * of g times the running product of the elements after it up to the next
 * zero; after j, 0.  Recorded in a pass that creates a graph
 * (cumprod_twice). */
static clt_status bw_cumprod(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->i[0] < 0)
        return clt__alias_grad(g, &gin[0]);
    if (clt__creating_graph())
        return cumprod_twice(n, g, gin);
    const char *fn = "clt_backward";
    int dim = (int)n->i[0];
    const clt_tensor *a = S(0);
    clt_status st = CLT_OK;
    clt_tensor *z = NULL, *zf = NULL, *nz = NULL, *before = NULL, *run1 = NULL, *zn = NULL,
               *first = NULL, *one = NULL, *zero = NULL, *w = NULL, *wm = NULL, *rw = NULL,
               *c0 = NULL, *az = NULL, *a1 = NULL, *p = NULL, *g1 = NULL, *pg = NULL,
               *s = NULL, *ab = NULL, *pre = NULL, *c1 = NULL, *t = NULL;
    CLT__TRY(clt__eq_scalar_in(fn, a, 0.0, &z));
    CLT__TRY(clt__to_dtype(z, a->dtype, &zf, fn));
    CLT__TRY(clt__cumsum(zf, dim, false, &nz, fn));
    CLT__TRY(clt__eq_scalar_in(fn, nz, 0.0, &before));
    CLT__TRY(clt__eq_scalar_in(fn, nz, 1.0, &run1)); /* the first zero up to the next */
    CLT__TRY(clt__mul_in(fn, nz, zf, &zn));
    CLT__TRY(clt__eq_scalar_in(fn, zn, 1.0, &first));
    CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 1.0, &one));
    CLT__TRY(clt__full(a->dev, a->dtype, 0, NULL, 0.0, &zero));
    /* before the first zero */
    CLT__TRY(clt__mul_in(fn, g, S(1), &w));
    CLT__TRY(clt__where_in(fn, before, w, zero, &wm));
    CLT__TRY(clt__cumsum(wm, dim, true, &rw, fn));
    CLT__TRY(clt__div_in(fn, rw, a, &c0));
    /* at the first zero */
    CLT__TRY(clt__where_in(fn, z, one, a, &az));
    CLT__TRY(clt__where_in(fn, run1, az, one, &a1));
    CLT__TRY(clt__scan(CLT__SCAN_PROD, a1, dim, false, &p, NULL, fn));
    CLT__TRY(clt__where_in(fn, run1, g, zero, &g1));
    CLT__TRY(clt__mul_in(fn, p, g1, &pg));
    CLT__TRY(clt__sum_dim(pg, dim, 1, &s, fn));
    CLT__TRY(clt__where_in(fn, before, a, one, &ab));
    CLT__TRY(clt__prod_dim(ab, dim, 1, &pre, fn));
    CLT__TRY(clt__mul_in(fn, s, pre, &c1));
    CLT__TRY(clt__where_in(fn, first, c1, zero, &t));
    CLT__TRY(clt__where_in(fn, before, c0, t, &gin[0]));
done:;
    clt_tensor *all[] = {z,  zf, nz, before, run1, zn, first, one, zero, w,   wm, rw,
                         c0, az, a1, p,      g1,   pg, s,     ab,  pre,  c1,  t};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        clt_tensor_free(all[k]);
    return st;
}

clt_status clt_cumprod(const clt_tensor *a, int dim, clt_tensor **out)
{
    CLT__AUTOCAST("clt_cumprod", CLT__AC_CUDA(CLT__AC_FLOAT32), 1, (a),
                  clt_cumprod(CLT__AC(0), dim, out));
    if (a && clt__dtype_is_complex(a->dtype))
        return clt__complex_cumprod_rec("clt_cumprod", a, dim, out);
    clt_status st = clt__scan(CLT__SCAN_PROD, a, dim, false, out, NULL, "clt_cumprod");
    return record(st, out, "CumprodBackward0", bw_cumprod, 2, a,
                  st == CLT_OK ? node_dim(a, dim) : 0, 0, 0, 0.0);
}

static clt_status cummaxmin(bool max, const clt_tensor *a, int dim, clt_tensor **values,
                            clt_tensor **indices, const char *fn)
{
    if (indices)
        *indices = NULL;
    if (values == NULL && indices == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: values and indices are both NULL", fn);
    /* torch 1.13's cummax and cummin check no dim of a 0-dim or empty
     * input: any dim gives the input back (and indices 0). */
    if (a && (a->ndim == 0 || a->numel == 0))
        dim = 0;
    clt_tensor *v = NULL, *idx = NULL;
    clt_status st = clt__scan(max ? CLT__SCAN_MAX : CLT__SCAN_MIN, a, dim, false, &v, &idx, fn);
    if (values) {
        *values = v;
        v = NULL;
        st = sort_record(st, a, dim, max ? "CummaxBackward0" : "CumminBackward0",
                         bw_cummaxmin, values, idx);
    }
    if (st == CLT_OK && indices)
        *indices = idx;
    else
        clt_tensor_free(idx);
    clt_tensor_free(v);
    return st;
}

clt_status clt_cummax(const clt_tensor *a, int dim, clt_tensor **values, clt_tensor **indices)
{
    return cummaxmin(true, a, dim, values, indices, "clt_cummax");
}

clt_status clt_cummin(const clt_tensor *a, int dim, clt_tensor **values, clt_tensor **indices)
{
    return cummaxmin(false, a, dim, values, indices, "clt_cummin");
}

/* The largest finite value of a floating dtype, negated (numeric_limits'
 * lowest). */
static double lowest(clt_dtype dt)
{
    return dt == CLT_FLOAT64    ? -DBL_MAX
           : dt == CLT_FLOAT16  ? -65504.0
           : dt == CLT_BFLOAT16 ? -3.3895313892515355e38
                                : -FLT_MAX;
}

/* log(|g|) where g has the sign `sign`, the dtype's lowest value elsewhere;
 * minus out, reversed logcumsumexp, plus a, exp: one sign's part of
 * torch's logcumsumexp_backward; recorded in a pass that creates a graph
 * (the reversed scan as flip, logcumsumexp, flip). */
static clt_status lcse_part(clt__node *n, const clt_tensor *g, const clt_tensor *logabs,
                            const clt_tensor *low, int sign, clt_tensor **out)
{
    const char *fn = "clt_backward";
    int dim = (int)n->i[0];
    clt_status st = CLT_OK;
    clt_tensor *m = NULL, *lg = NULL, *d = NULL, *f = NULL, *c = NULL, *r = NULL, *x = NULL;
    CLT__TRY(sign > 0 ? clt__gt_scalar_in(fn, g, 0.0, &m) : clt__lt_scalar_in(fn, g, 0.0, &m));
    CLT__TRY(clt_where(m, logabs, low, &lg));
    CLT__TRY(clt__sub_rec(fn, lg, S(1), &d));
    if (clt__creating_graph()) {
        CLT__TRY(clt_flip(d, &dim, 1, &f));
        CLT__TRY(clt_logcumsumexp(f, dim, &c));
        CLT__TRY(clt_flip(c, &dim, 1, &r));
    } else {
        CLT__TRY(clt__scan(CLT__SCAN_LOGSUMEXP, d, dim, true, &r, NULL, fn));
    }
    CLT__TRY(clt__add_rec(fn, r, S(0), &x));
    CLT__TRY(clt__exp_rec(fn, x, out));
done:
    clt_tensor_free(m);
    clt_tensor_free(lg);
    clt_tensor_free(d);
    clt_tensor_free(f);
    clt_tensor_free(c);
    clt_tensor_free(r);
    clt_tensor_free(x);
    return st;
}

/* logcumsumexp: saved a, out.  torch's logcumsumexp_backward: the
 * positive and the negative parts of g, each as exp(reversed
 * logcumsumexp(log|g| - out) + a), so that nothing overflows; recorded in
 * a pass that creates a graph (clt__twice). */
static clt_status bw_logcumsumexp(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (n->i[0] < 0 || g->numel == 0)
        return clt__alias_grad(g, &gin[0]);
    const char *fn = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *ab = NULL, *la = NULL, *low = NULL, *pos = NULL, *neg = NULL;
    CLT__TRY(clt__abs_rec(fn, g, &ab));
    CLT__TRY(clt__log_rec(fn, ab, &la));
    CLT__TRY(clt__full(g->dev, g->dtype, 0, NULL, lowest(g->dtype), &low));
    CLT__TRY(lcse_part(n, g, la, low, 1, &pos));
    CLT__TRY(lcse_part(n, g, la, low, -1, &neg));
    CLT__TRY(clt__sub_rec(fn, pos, neg, &gin[0]));
done:
    clt_tensor_free(ab);
    clt_tensor_free(la);
    clt_tensor_free(low);
    clt_tensor_free(pos);
    clt_tensor_free(neg);
    return st;
}

clt_status clt_logcumsumexp(const clt_tensor *a, int dim, clt_tensor **out)
{
    clt_status st =
        clt__scan(CLT__SCAN_LOGSUMEXP, a, dim, false, out, NULL, "clt_logcumsumexp");
    return record(st, out, "LogcumsumexpBackward0", bw_logcumsumexp, 2, a,
                  st == CLT_OK ? node_dim(a, dim) : 0, 0, 0, 0.0);
}
