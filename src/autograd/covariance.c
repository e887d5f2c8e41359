/* covariance.c: torch.cov and torch.corrcoef (reduce.h), composed of
 * recorded ops as PyTorch 1.13 composes them (Correlation.cpp), and
 * torch.histc, of unrecorded ones (it has no gradient). */
#include <math.h>

#include "autograd/autograd.h"

/* Whether every element of the 1-d weights w is >= 0 (read back). */
static clt_status weights_check(const char *fn, const clt_tensor *w, const char *what,
                                int64_t nobs, bool integral)
{
    if (w->ndim > 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: cov(): expected %s to have one or fewer dimensions but got %s "
                          "with %d dimensions",
                          fn, what, what, w->ndim);
    if (integral ? (clt__dtype_is_float(w->dtype) || w->dtype == CLT_BOOL)
                 : !clt__dtype_is_float(w->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: cov(): expected %s to have %s dtype but got %s with %s dtype", fn,
                          what, integral ? "integral" : "floating point", what,
                          clt_dtype_name(w->dtype));
    if (w->numel != nobs)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: cov(): expected %s to have the same numel as there are "
                          "observations in the input but got %lld != %lld",
                          fn, what, (long long)w->numel, (long long)nobs);
    if (nobs == 0)
        return CLT_OK;
    clt_tensor *m = NULL;
    double v = 0;
    clt_status st = clt__min(w, &m, fn);
    if (st == CLT_OK)
        st = clt_tensor_item(m, &v);
    clt_tensor_free(m);
    if (st == CLT_OK && !(v >= 0))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: cov(): %s cannot be negative", fn, what);
    return st;
}

static clt_status cov_in(const char *fn, const clt_tensor *x, int64_t correction,
                         const clt_tensor *fweights, const clt_tensor *aweights,
                         clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    if (x->ndim > 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: cov(): expected input to have two or fewer dimensions but got "
                          "an input with %d dimensions",
                          fn, x->ndim);
    if (x->dtype == CLT_BOOL)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: cov(): bool dtype is not supported for input",
                          fn);
    int64_t nobs = x->ndim < 2 ? x->numel : x->shape[1];
    clt_status st = CLT_OK;
    if (fweights && (st = weights_check(fn, fweights, "fweights", nobs, true)) != CLT_OK)
        return st;
    if (aweights && (st = weights_check(fn, aweights, "aweights", nobs, false)) != CLT_OK)
        return st;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *in = (clt_tensor *)x, *w = NULL, *wsum = NULL, *t = NULL, *avg = NULL;
    clt_tensor *nf = NULL, *u = NULL, *wt = NULL, *c = NULL, *r = NULL;
    if (x->ndim < 2)
        CLT__TRY(clt__reshape_rec(fn, x, 2, (int64_t[]){1, nobs}, &in));
    if (fweights)
        w = (clt_tensor *)fweights;
    if (aweights) {
        if (w)
            CLT__TRY(clt__mul_rec(fn, w, aweights, &w));
        else
            w = (clt_tensor *)aweights;
    }
    if (w) {
        double s = 0;
        CLT__TRY(clt__sum_dim_rec(fn, w, 0, 0, &wsum));
        CLT__TRY(clt_tensor_item(wsum, &s));
        if (s == 0) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: cov(): weights sum to zero, can't be normalized", fn);
            goto done;
        }
        CLT__TRY(clt__mul_rec(fn, in, w, &t));
    } else {
        CLT__TRY(clt__full(x->dev, CLT_INT64, 0, NULL, (double)nobs, &wsum));
        t = in;
    }
    CLT__TRY(clt__sum_dim_rec(fn, t, 1, 0, &u));
    CLT__TRY(clt__div_rec(fn, u, wsum, &avg));
    /* the normalisation w_sum - correction (* sum(w aw) / w_sum) */
    if (w && correction != 0 && aweights) {
        CLT__TRY(clt__mul_rec(fn, w, aweights, &t));
        CLT__TRY(clt__sum_dim_rec(fn, t, 0, 0, &u));
        CLT__TRY(clt__div_rec(fn, u, wsum, &t));
        CLT__TRY(clt__mul_scalar_rec(fn, t, (double)correction, &u));
        CLT__TRY(clt__sub_rec(fn, wsum, u, &nf));
    } else {
        CLT__TRY(clt__sub_scalar_rec(fn, wsum, (double)correction, &nf));
    }
    double nfv = 0;
    CLT__TRY(clt_tensor_item(nf, &nfv));
    if (nfv <= 0) /* "degrees of freedom is <= 0": PyTorch warns and divides by 0 */
        CLT__TRY(clt__full(x->dev, nf->dtype, 0, NULL, 0.0, &nf));
    CLT__TRY(clt__unsqueeze_rec(fn, avg, 1, &t));
    CLT__TRY(clt__sub_rec(fn, in, t, &u));
    if (w)
        CLT__TRY(clt__mul_rec(fn, u, w, &t));
    else
        t = u;
    CLT__TRY(clt__transpose_rec(fn, t, 0, 1, &wt));
    CLT__TRY(clt__matmul_rec(fn, u, wt, &c));
    CLT__TRY(clt__div_rec(fn, c, nf, &t));
    CLT__TRY(clt_squeeze_all(t, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_cov(const clt_tensor *x, int64_t correction, const clt_tensor *fweights,
                   const clt_tensor *aweights, clt_tensor **out)
{
    return cov_in("clt_cov", x, correction, fweights, aweights, out);
}

clt_status clt_corrcoef(const clt_tensor *x, clt_tensor **out)
{
    static const char fn[] = "clt_corrcoef";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (x && x->ndim > 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: corrcoef(): expected input to have two or fewer dimensions but "
                          "got an input with %d dimensions",
                          fn, x->ndim);
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *c = NULL, *d = NULL, *s = NULL, *v = NULL, *t = NULL, *r = NULL;
    CLT__TRY(cov_in(fn, x, 1, NULL, NULL, &c));
    if (c->ndim == 0) { /* c / c: NaN for 0, inf and NaN, else 1 */
        CLT__TRY(clt__div_rec(fn, c, c, &r));
        goto done;
    }
    int64_t n = c->shape[0];
    const double lo = -1, hi = 1;
    CLT__TRY(clt_diag(c, 0, &d));
    CLT__TRY(clt__sqrt_rec(fn, d, &s));
    CLT__TRY(clt__reshape_rec(fn, s, 2, (int64_t[]){n, 1}, &v));
    CLT__TRY(clt__div_rec(fn, c, v, &t));
    CLT__TRY(clt__reshape_rec(fn, s, 2, (int64_t[]){1, n}, &v));
    CLT__TRY(clt__div_rec(fn, t, v, &c));
    CLT__TRY(clt__clamp_rec(fn, c, &lo, &hi, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

/* The value of the one-element tensor made by reduce(x) (x's min or max). */
static clt_status extreme(const char *fn, const clt_tensor *x, bool max, double *v)
{
    clt_tensor *m = NULL;
    clt_status st = max ? clt__max(x, &m, fn) : clt__min(x, &m, fn);
    if (st == CLT_OK)
        st = clt_tensor_item(m, v);
    clt_tensor_free(m);
    return st;
}

/* Runs of 2 V values (V = 8 floats or 4 doubles, AVX2's vectors) as two
 * vectors, each its first value b plus k step (k < V, rounded twice), the
 * rest one at a time; b and those single values are start + step i below
 * n / 2 and end - step (n - 1 - i) from there, each rounded once (GCC's
 * fma).  One value is start.  (Past 32768 values torch splits the runs
 * between threads; not followed.) */
#define LINSPACE_AT(NAME, R, FMA)                                                              \
    static R NAME(R start, R end, int64_t n, int64_t i)                                        \
    {                                                                                          \
        if (n <= 1)                                                                            \
            return start;                                                                      \
        const int64_t V = 32 / (int64_t)sizeof(R);                                             \
        R step = (end - start) / (R)(n - 1);                                                   \
        int64_t j = i, k = 0;                                                                  \
        if (i < n / (2 * V) * (2 * V)) {                                                       \
            k = i % V;                                                                         \
            j = i - k;                                                                         \
        }                                                                                      \
        R b = j < n / 2 ? FMA(step, (R)j, start) : FMA(-step, (R)(n - j - 1), end);            \
        volatile R kstep = (R)k * step; /* not fused with the sum */                           \
        return k ? b + kstep : b;                                                              \
    }

LINSPACE_AT(linspace_at_f32, float, fmaf)
LINSPACE_AT(linspace_at_f64, double, fma)

double clt__linspace_at(bool f32, double start, double end, int64_t n, int64_t i)
{
    return f32 ? linspace_at_f32((float)start, (float)end, n, i)
               : linspace_at_f64(start, end, n, i);
}

double clt__histc_last_edge(bool f32, double lo, double hi, int64_t bins)
{
    if ((bins + 1) % (f32 ? 16 : 8) != 0) /* the scalar tail: hi itself */
        return hi;
    return clt__linspace_at(f32, lo, hi, bins + 1, bins);
}

clt_status clt_histc(const clt_tensor *x, int64_t bins, double min, double max, clt_tensor **out)
{
    static const char fn[] = "clt_histc";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(x, fn);
    if (!clt__dtype_is_float(x->dtype))
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: \"histogram_cpu\" not implemented for %s tensors, as in PyTorch",
                          fn, clt_dtype_name(x->dtype));
    if (bins <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.histogram(): bins must be > 0, but got %lld", fn,
                          (long long)bins);
    clt_status st = CLT_OK;
    /* the bounds in x's dtype; equal ones take the data's range (and
     * widen it by 1 each way when that is one value), as PyTorch's */
    bool f32 = x->dtype != CLT_FLOAT64;
    double lo = f32 ? (float)min : min, hi = f32 ? (float)max : max;
    if (lo == hi && x->numel > 0) {
        if ((st = extreme(fn, x, false, &lo)) != CLT_OK || (st = extreme(fn, x, true, &hi)) != CLT_OK)
            return st;
    }
    if (lo == hi) {
        lo -= 1;
        hi += 1;
    }
    if (!(isfinite(lo) && isfinite(hi)))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: torch.histc: range of [%g, %g] is not finite",
                          fn, lo, hi);
    if (lo > hi)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: torch.histc: max must be larger than min",
                          fn);
    if (x->dtype == CLT_FLOAT32 || x->dtype == CLT_FLOAT64)
        hi = clt__histc_last_edge(f32, lo, hi, bins);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    /* pos = (int64)((x - lo) / (hi - lo) * bins) in x's dtype, bins - 1 at
     * hi; elements outside [lo, hi] go to an extra bin that is dropped.
     * NaN, neither below nor above, counts in bin 0, as in PyTorch 1.13
     * (its CPU kernel casts NaN's position to 0 there). */
    double width = f32 ? (float)((float)hi - (float)lo) : hi - lo;
    clt_tensor *t = NULL, *u = NULL, *out_of = NULL, *below = NULL, *above = NULL, *pos = NULL;
    clt_tensor *dump = NULL;
    clt_tensor *cnt = NULL, *r = NULL;
    CLT__TRY(clt__sub_scalar_in(fn, x, lo, &t));
    CLT__TRY(clt__div_scalar_in(fn, t, width, &u));
    CLT__TRY(clt__mul_scalar_in(fn, u, (double)bins, &t));
    CLT__TRY(clt__nan_to_num_in(fn, t, 0.0, NULL, NULL, &u));
    CLT__TRY(clt__contiguous_as(fn, u, CLT_INT64, &pos));
    double top = (double)(bins - 1);
    CLT__TRY(clt__clamp(pos, NULL, &top, &t, fn));
    CLT__TRY(clt__lt_scalar_in(fn, x, lo, &below));
    CLT__TRY(clt__gt_scalar_in(fn, x, hi, &above));
    CLT__TRY(clt__logical_or_in(fn, below, above, &out_of));
    CLT__TRY(clt__full(x->dev, CLT_INT64, 0, NULL, (double)bins, &dump));
    CLT__TRY(clt__where_in(fn, out_of, dump, t, &u));
    CLT__TRY(clt__reshape_rec(fn, u, 1, &x->numel, &pos));
    CLT__TRY(clt__bincount(pos, NULL, bins + 1, &cnt, fn));
    CLT__TRY(clt__narrow(cnt, 0, 0, bins, &t, fn));
    CLT__TRY(clt__contiguous_as(fn, t, x->dtype, &r));
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}
