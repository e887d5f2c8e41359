/* grad_complex_reduce.c: prod, cumprod, var, std and sgn of complex
 * tensors, composed of recorded complex products, slices, sums and means,
 * so that their gradients are torch's (conjugate Wirtinger calculus, zeros
 * among the factors included) and differentiable again. */
#include <math.h>

#include "autograd/autograd.h"

/* The dim d of a reduction of a over dim (wrapped), and the tensor x it
 * runs on: a itself, or a flattened to [numel] (all dims, or a 0-d a, which
 * reduces to 0-d). *flat receives the new tensor when there is one. */
static clt_status reduced_input(const char *fn, const clt_tensor *a, bool all, int dim, int *d,
                                const clt_tensor **x, clt_tensor **flat)
{
    *flat = NULL;
    *x = a;
    clt_status st = clt__wrap_dim(all ? 0 : dim, a->ndim > 0 ? a->ndim : 1, d, fn);
    if (st != CLT_OK)
        return st;
    if (all || a->ndim == 0) {
        int64_t n = a->numel;
        st = clt__reshape_rec(fn, a, 1, &n, flat);
        *x = *flat;
        *d = 0;
    }
    return st;
}

/* The product of x along d, the dim kept as size 1: the halves multiplied
 * until one element remains (an odd one out carried along by a cat). */
static clt_status prod_along(const char *fn, const clt_tensor *x, int d, clt_tensor **out)
{
    *out = NULL;
    int64_t len = x->shape[d];
    clt_tensor *own = NULL, *lo = NULL, *hi = NULL, *p = NULL, *odd = NULL, *one = NULL,
               *s = NULL;
    clt_status st = CLT_OK;
    if (len == 0) { /* 1, with a history through an (empty) sum */
        CLT__TRY(clt__sum_dim_rec(fn, x, d, 1, &s));
        CLT__TRY(clt__full(x->dev, clt__complex_part_dtype(x->dtype), 0, NULL, 1.0, &one));
        CLT__TRY(clt__complex_binary_rec(0, s, one, out, fn));
        goto done;
    }
    const clt_tensor *cur = x;
    while (len > 1) {
        int64_t h = len / 2;
        CLT__TRY(clt__narrow_rec(fn, cur, d, 0, h, &lo));
        CLT__TRY(clt__narrow_rec(fn, cur, d, h, h, &hi));
        CLT__TRY(clt__complex_binary_rec(2, lo, hi, &p, fn));
        if (len % 2) {
            const clt_tensor *pair[2];
            clt_tensor *c = NULL;
            CLT__TRY(clt__narrow_rec(fn, cur, d, 2 * h, 1, &odd));
            pair[0] = p;
            pair[1] = odd;
            CLT__TRY(clt__cat_rec(fn, pair, 2, d, &c));
            clt_tensor_free(p);
            p = c;
        }
        clt_tensor_free(lo);
        clt_tensor_free(hi);
        clt_tensor_free(odd);
        lo = hi = odd = NULL;
        clt_tensor_free(own);
        own = p;
        p = NULL;
        cur = own;
        len = h + len % 2;
    }
    if (own) {
        *out = own;
        own = NULL;
    } else {
        CLT__TRY(clt_clone(x, out));
    }
done:
    clt_tensor_free(own);
    clt_tensor_free(lo);
    clt_tensor_free(hi);
    clt_tensor_free(p);
    clt_tensor_free(odd);
    clt_tensor_free(one);
    clt_tensor_free(s);
    return st;
}

/* r (reduced along d of x, kept as size 1) without that dim, or as a 0-d
 * tensor when to_scalar. */
static clt_status drop_dim(const char *fn, const clt_tensor *r, const clt_tensor *x, int d,
                           bool to_scalar, clt_tensor **out)
{
    if (to_scalar)
        return clt__reshape_rec(fn, r, 0, NULL, out);
    int64_t shape[CLT_MAX_DIMS];
    int k = 0;
    for (int j = 0; j < x->ndim; j++)
        if (j != d)
            shape[k++] = x->shape[j];
    return clt__reshape_rec(fn, r, k, shape, out);
}

clt_status clt__complex_prod_rec(const char *fn, const clt_tensor *a, bool all, int dim,
                                 int keepdim, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d = 0;
    const clt_tensor *x = NULL;
    clt_tensor *flat = NULL, *r = NULL;
    clt_status st;
    CLT__TRY(clt__check_dtype(a->dev, a->dtype, fn));
    CLT__TRY(reduced_input(fn, a, all, dim, &d, &x, &flat));
    CLT__TRY(prod_along(fn, x, d, &r));
    if (keepdim && !all && a->ndim > 0) {
        *out = r;
        r = NULL;
    } else {
        CLT__TRY(drop_dim(fn, r, x, d, all || a->ndim == 0, out));
    }
done:
    clt_tensor_free(flat);
    clt_tensor_free(r);
    return st == CLT_OK ? clt__ok() : st;
}

/* Hillis and Steele's scan: after the step of stride s, element i holds the
 * product of elements i - 2s + 1 .. i; each step is a recorded product of
 * two slices and a cat of the head it leaves alone. */
clt_status clt__complex_cumprod_rec(const char *fn, const clt_tensor *a, int dim,
                                    clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d = 0;
    clt_status st;
    clt_tensor *own = NULL, *head = NULL, *lo = NULL, *hi = NULL, *p = NULL;
    CLT__TRY(clt__check_dtype(a->dev, a->dtype, fn));
    CLT__TRY(clt__wrap_dim(dim, a->ndim > 0 ? a->ndim : 1, &d, fn));
    int64_t len = a->ndim == 0 ? 1 : a->shape[d];
    const clt_tensor *cur = a;
    for (int64_t s = 1; s < len; s *= 2) {
        const clt_tensor *pair[2];
        clt_tensor *c = NULL;
        CLT__TRY(clt__narrow_rec(fn, cur, d, 0, s, &head));
        CLT__TRY(clt__narrow_rec(fn, cur, d, s, len - s, &hi));
        CLT__TRY(clt__narrow_rec(fn, cur, d, 0, len - s, &lo));
        CLT__TRY(clt__complex_binary_rec(2, hi, lo, &p, fn));
        pair[0] = head;
        pair[1] = p;
        CLT__TRY(clt__cat_rec(fn, pair, 2, d, &c));
        clt_tensor_free(head);
        clt_tensor_free(hi);
        clt_tensor_free(lo);
        clt_tensor_free(p);
        head = hi = lo = p = NULL;
        clt_tensor_free(own);
        own = c;
        cur = own;
    }
    if (own) {
        *out = own;
        own = NULL;
    } else {
        CLT__TRY(clt_clone(a, out));
    }
done:
    clt_tensor_free(own);
    clt_tensor_free(head);
    clt_tensor_free(lo);
    clt_tensor_free(hi);
    clt_tensor_free(p);
    return st == CLT_OK ? clt__ok() : st;
}

/* sqrt(v) with a gradient of 0 where v is 0, as torch's std_backward:
 * where(v == 0, v, sqrt(v with its zeros as 1)). */
static clt_status std_of(const char *fn, const clt_tensor *v, clt_tensor **out)
{
    clt_tensor *z = NULL, *safe = NULL, *q = NULL;
    clt_status st;
    CLT__TRY(clt__eq_scalar_in(fn, v, 0.0, &z));
    CLT__TRY(clt__masked_fill_rec(fn, v, z, 1.0, &safe));
    CLT__TRY(clt__sqrt_rec(fn, safe, &q));
    CLT__TRY(clt_where(z, v, q, out));
done:
    clt_tensor_free(z);
    clt_tensor_free(safe);
    clt_tensor_free(q);
    return st;
}

/* torch's var of a complex tensor: sum |a - mean|^2 / max(0, N -
 * correction), a real result of the parts' dtype (std: its square root). */
clt_status clt__complex_var_rec(const char *fn, const clt_tensor *a, bool all, int dim,
                                double correction, int keepdim, bool std, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    int d = 0;
    const clt_tensor *x = NULL;
    clt_tensor *flat = NULL, *m = NULL, *dv = NULL, *re = NULL, *im = NULL, *r2 = NULL,
               *i2 = NULL, *s = NULL, *ss = NULL, *v = NULL;
    clt_status st;
    CLT__TRY(clt__check_dtype(a->dev, a->dtype, fn));
    CLT__TRY(reduced_input(fn, a, all, dim, &d, &x, &flat));
    bool scalar = all || a->ndim == 0;
    double n = (double)x->shape[d];
    CLT__TRY(clt__mean_dim_rec(fn, x, d, 1, &m));
    CLT__TRY(clt__complex_binary_rec(1, x, m, &dv, fn));
    CLT__TRY(clt_real(dv, &re));
    CLT__TRY(clt_imag(dv, &im));
    CLT__TRY(clt__mul_rec(fn, re, re, &r2));
    CLT__TRY(clt__mul_rec(fn, im, im, &i2));
    CLT__TRY(clt__add_rec(fn, r2, i2, &s));
    CLT__TRY(clt__sum_dim_rec(fn, s, d, scalar ? 0 : keepdim, &ss));
    CLT__TRY(clt__div_scalar_rec(fn, ss, fmax(0.0, n - correction), std ? &v : out));
    if (std)
        CLT__TRY(std_of(fn, v, out));
done:;
    clt_tensor *all_t[] = {flat, m, dv, re, im, r2, i2, s, ss, v};
    for (size_t k = 0; k < sizeof all_t / sizeof all_t[0]; k++)
        clt_tensor_free(all_t[k]);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* torch.sgn of a complex a: a / |a|, 0 where a is 0. */
clt_status clt__complex_sgn_rec(const char *fn, const clt_tensor *a, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(a, fn);
    clt_tensor *m = NULL, *z = NULL, *m1 = NULL;
    clt_status st;
    CLT__TRY(clt__complex_abs_rec(a, &m, fn));
    CLT__TRY(clt__eq_scalar_in(fn, m, 0.0, &z));
    CLT__TRY(clt__masked_fill_rec(fn, m, z, 1.0, &m1));
    CLT__TRY(clt__complex_binary_rec(3, a, m1, out, fn));
done:
    clt_tensor_free(m);
    clt_tensor_free(z);
    clt_tensor_free(m1);
    return st == CLT_OK ? clt__ok() : st;
}
