/* calculus.c: torch.diff, torch.trapezoid and torch.cumulative_trapezoid
 * (reduce.h), composed of recorded ops as PyTorch composes them, so that
 * their gradients and grad_fn names are those ops'. */
#include "autograd/autograd.h"

/* The n elements of t along dim from start (none for n < 0), a recorded
 * narrow view. */
static clt_status part(const char *fn, const clt_tensor *t, int dim, int64_t start, int64_t n,
                       clt_tensor **out)
{
    return clt__narrow_rec(fn, t, dim, start, n < 0 ? 0 : n, out);
}

clt_status clt_diff(const clt_tensor *x, int64_t n, int dim, const clt_tensor *prepend,
                    const clt_tensor *append, clt_tensor **out)
{
    static const char fn[] = "clt_diff";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    if (x->ndim == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: diff expects input to be at least one-dimensional", fn);
    int d = 0;
    clt_status st = clt__wrap_dim(dim, x->ndim, &d, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *ends[2] = {prepend, append};
    for (int k = 0; k < 2; k++)
        if (ends[k] && ends[k]->ndim != x->ndim)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: diff expects prepend or append to be the same dimension as "
                              "input (%d dims, got %d)",
                              fn, x->ndim, ends[k]->ndim);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *cur = (clt_tensor *)x, *t = NULL, *lo = NULL, *hi = NULL;
    if (prepend || append) {
        const clt_tensor *parts[3];
        size_t k = 0;
        if (prepend)
            parts[k++] = prepend;
        parts[k++] = x;
        if (append)
            parts[k++] = append;
        CLT__TRY(clt__cat_rec(fn, parts, k, d, &cur));
    }
    if (n <= 0) { /* PyTorch 1.13 takes a negative n as 0 */
        CLT__TRY(clt_clone(cur, &t));
        goto done;
    }
    int64_t len = cur->shape[d] - 1;
    if (n > cur->shape[d])
        n = cur->shape[d];
    for (int64_t i = 0; i < n; i++, len--) {
        CLT__TRY(part(fn, cur, d, 1, len, &hi));
        CLT__TRY(part(fn, cur, d, 0, len, &lo));
        /* bool: logical_xor, as PyTorch's diff */
        CLT__TRY(cur->dtype == CLT_BOOL ? clt__logical_xor_in(fn, hi, lo, &t)
                                        : clt__sub_rec(fn, hi, lo, &t));
        cur = t;
    }
    if (t == NULL) /* no elements along dim: nothing to take differences of */
        CLT__TRY(clt_clone(cur, &t));
done:
    if (st == CLT_OK)
        *out = t;
    return clt__scope_finish(st, out);
}

/* x's differences along dim, shaped to broadcast against y's (a 1-d x
 * lies along dim; one of fewer dims gets leading 1s), as PyTorch's
 * trapezoid and cumulative_trapezoid take them. */
static clt_status spacing(const char *fn, const clt_tensor *y, const clt_tensor *x, int d,
                          clt_tensor **dx)
{
    int64_t shape[CLT_MAX_DIMS];
    clt_tensor *xv = (clt_tensor *)x, *hi = NULL, *lo = NULL;
    clt_status st = CLT_OK;
    if (x->ndim == 1) {
        if (x->shape[0] != y->shape[d])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: trapezoid: There must be one `x` value for each sample "
                              "point (%lld x values, %lld samples)",
                              fn, (long long)x->shape[0], (long long)y->shape[d]);
        for (int i = 0; i < y->ndim; i++)
            shape[i] = i == d ? x->shape[0] : 1;
        CLT__TRY(clt__reshape_rec(fn, x, y->ndim, shape, &xv));
    } else if (x->ndim < y->ndim) {
        int pad = y->ndim - x->ndim;
        for (int i = 0; i < y->ndim; i++)
            shape[i] = i < pad ? 1 : x->shape[i - pad];
        CLT__TRY(clt__reshape_rec(fn, x, y->ndim, shape, &xv));
    }
    if (xv->ndim <= d)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE, "%s: x has no dimension %d", fn, d);
    CLT__TRY(part(fn, xv, d, 1, xv->shape[d] - 1, &hi));
    CLT__TRY(part(fn, xv, d, 0, xv->shape[d] - 1, &lo));
    CLT__TRY(clt__sub_rec(fn, hi, lo, dx));
done:
    return st;
}

/* The start both share: *out cleared, y and x not bool, dim in range
 * (*d), then a scope opened for the composition (closed by
 * clt__scope_finish). */
static clt_status trapezoid_begin(const char *fn, const clt_tensor *y, const clt_tensor *x,
                                  int dim, clt_tensor **out, int *d)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(y, fn);
    if (y->dtype == CLT_BOOL || (x && x->dtype == CLT_BOOL))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: trapezoid: received a bool input for `%s`, but bool is not "
                          "supported",
                          fn, y->dtype == CLT_BOOL ? "y" : "x");
    if (y->ndim == 0)
        return clt__error(CLT_ERR_DIM_OUT_OF_RANGE,
                          "%s: dimension specified as %d but tensor has no dimensions", fn, dim);
    clt_status st = clt__wrap_dim(dim, y->ndim, d, fn);
    return st == CLT_OK ? clt_scope_begin() : st;
}

clt_status clt_trapezoid(const clt_tensor *y, const clt_tensor *x, double dx, int dim,
                         clt_tensor **out)
{
    static const char fn[] = "clt_trapezoid";
    int d = 0;
    clt_status st = trapezoid_begin(fn, y, x, dim, out, &d);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL, *t = NULL, *u = NULL, *hi = NULL, *lo = NULL, *sp = NULL;
    int64_t len = y->shape[d];
    if (len == 0) {
        /* no samples: zeros of y's shape without dim, as numpy's 0 */
        int64_t shape[CLT_MAX_DIMS];
        for (int i = 0, j = 0; i < y->ndim; i++)
            if (i != d)
                shape[j++] = y->shape[i];
        CLT__TRY(clt__full(y->dev, y->dtype, y->ndim - 1, shape, 0.0, &r));
        goto done;
    }
    if (x) {
        /* ((dx * (y[1:] + y[:-1])).sum(dim)) / 2 */
        CLT__TRY(spacing(fn, y, x, d, &sp));
        CLT__TRY(part(fn, y, d, 1, len - 1, &hi));
        CLT__TRY(part(fn, y, d, 0, len - 1, &lo));
        CLT__TRY(clt__add_rec(fn, hi, lo, &t));
        CLT__TRY(clt__mul_rec(fn, sp, t, &u));
        CLT__TRY(clt__sum_dim_rec(fn, u, d, 0, &t));
        CLT__TRY(clt__div_scalar_rec(fn, t, 2.0, &r));
    } else {
        /* (y.sum(dim) - (y[0] + y[-1]) * 0.5) * dx */
        CLT__TRY(clt__sum_dim_rec(fn, y, d, 0, &t));
        CLT__TRY(part(fn, y, d, 0, 1, &lo));
        CLT__TRY(part(fn, y, d, len - 1, 1, &hi));
        CLT__TRY(clt__add_rec(fn, lo, hi, &u));
        CLT__TRY(clt__squeeze_rec(fn, u, d, &sp));
        CLT__TRY(clt__mul_scalar_rec(fn, sp, 0.5, &u));
        CLT__TRY(clt__sub_rec(fn, t, u, &sp));
        CLT__TRY(clt__mul_scalar_rec(fn, sp, dx, &r));
    }
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_cumulative_trapezoid(const clt_tensor *y, const clt_tensor *x, double dx,
                                    int dim, clt_tensor **out)
{
    static const char fn[] = "clt_cumulative_trapezoid";
    int d = 0;
    clt_status st = trapezoid_begin(fn, y, x, dim, out, &d);
    if (st != CLT_OK)
        return st;
    clt_tensor *r = NULL, *t = NULL, *u = NULL, *hi = NULL, *lo = NULL, *sp = NULL;
    int64_t len = y->shape[d] > 0 ? y->shape[d] - 1 : 0;
    CLT__TRY(part(fn, y, d, 0, len, &lo));
    CLT__TRY(part(fn, y, d, y->shape[d] > 0, len, &hi));
    if (x) {
        /* ((dx * (left + right)) / 2).cumsum(dim) */
        CLT__TRY(spacing(fn, y, x, d, &sp));
        CLT__TRY(clt__add_rec(fn, lo, hi, &t));
        CLT__TRY(clt__mul_rec(fn, sp, t, &u));
        CLT__TRY(clt__div_scalar_rec(fn, u, 2.0, &t));
    } else {
        /* (dx / 2 * (left + right)).cumsum(dim); dx / 2 is a Python
         * float there, which makes an integer sum float32 */
        CLT__TRY(clt__add_rec(fn, lo, hi, &u));
        if (!clt__dtype_is_float(u->dtype))
            CLT__TRY(clt__to_dtype_rec(fn, u, CLT_FLOAT32, &u));
        CLT__TRY(clt__mul_scalar_rec(fn, u, dx / 2.0, &t));
    }
    CLT__TRY(clt_cumsum(t, d, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}
