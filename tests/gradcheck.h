/* gradcheck.h: compares autograd's gradients with central finite
 * differences computed in float64, as torch.autograd.gradcheck does: the
 * function's output is reduced to L = sum(out * w) with fixed weights w,
 * clt_backward(L) gives the analytic gradient of every input that requires
 * grad, and (L(x + eps) - L(x - eps)) / 2 eps, evaluated with grad mode off
 * on fresh inputs, the numeric one, element by element. */
#ifndef CLT_TEST_GRADCHECK_H
#define CLT_TEST_GRADCHECK_H

#include "helpers.h"

typedef struct gc_in {
    int ndim;
    int64_t shape[4];
    const double *data;
    int grad; /* requires grad */
} gc_in;

/* Computes *out from the inputs (float64 leaves on one device). */
typedef clt_status (*gc_fn)(clt_tensor *const *in, clt_tensor **out, const void *ctx);

/* A unary or binary op of the public API, and the gc_fn that calls the one
 * ctx points at. */
typedef clt_status (*un_fn)(const clt_tensor *, clt_tensor **);
typedef clt_status (*bin_fn)(const clt_tensor *, const clt_tensor *, clt_tensor **);

static inline clt_status call_un(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return (*(const un_fn *)ctx)(in[0], out);
}

static inline clt_status call_bin(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    return (*(const bin_fn *)ctx)(in[0], in[1], out);
}

static inline size_t gc_numel(const gc_in *x)
{
    size_t n = 1;
    for (int d = 0; d < x->ndim; d++)
        n *= (size_t)x->shape[d];
    return n;
}

/* The fixed weight of output element k in L: uneven, both signs, and never
 * 0 (a zero weight would hide a wrong gradient there). */
static inline double gc_weight(size_t k)
{
    return (0.25 + (double)((k * 7 + 3) % 11) / 8.0) * ((k % 3) ? 1 : -1);
}

/* L = sum(f(in) * w), in a scope that keeps only L. */
static inline clt_tensor *gc_loss(clt_device *dev, gc_fn f, const void *ctx, clt_tensor **in)
{
    clt_tensor *out = NULL, *w = NULL, *prod = NULL, *loss = NULL;
    CHECK(clt_scope_begin());
    CHECK(f(in, &out, ctx));
    size_t n = (size_t)clt_tensor_numel(out);
    double *wv = malloc((n ? n : 1) * sizeof *wv);
    for (size_t k = 0; k < n; k++)
        wv[k] = gc_weight(k);
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, clt_tensor_ndim(out), clt_tensor_shape(out), wv,
                               &w));
    free(wv);
    CHECK(clt_mul(out, w, &prod));
    CHECK(clt_sum(prod, &loss));
    CHECK(clt_scope_keep(loss));
    clt_scope_end();
    return loss;
}

static inline void gc_make(clt_device *dev, int nin, const gc_in *ins, double **data,
                           clt_tensor **leaves, int with_grad)
{
    for (int i = 0; i < nin; i++) {
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, ins[i].ndim, ins[i].shape, data[i],
                                   &leaves[i]));
        if (with_grad && ins[i].grad)
            CHECK(clt_set_requires_grad(leaves[i], 1));
    }
}

static inline void gradcheck_tol(clt_device *dev, gc_fn f, const void *ctx, int nin,
                                 const gc_in *ins, double eps, double rtol, double atol)
{
    double *data[8];
    clt_tensor *leaves[8] = {0};
    cr_assert(nin <= 8);
    for (int i = 0; i < nin; i++) {
        size_t n = gc_numel(&ins[i]);
        data[i] = malloc((n ? n : 1) * sizeof(double));
        memcpy(data[i], ins[i].data, n * sizeof(double));
    }
    gc_make(dev, nin, ins, data, leaves, 1);
    clt_tensor *loss = gc_loss(dev, f, ctx, leaves);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    for (int i = 0; i < nin; i++) {
        if (!ins[i].grad)
            continue;
        size_t n = gc_numel(&ins[i]);
        clt_tensor *g = NULL;
        CHECK(clt_grad(leaves[i], &g));
        cr_assert_not_null(g, "input %d has no gradient", i);
        cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT64);
        cr_assert_eq(clt_tensor_numel(g), (int64_t)n);
        double *an = malloc((n ? n : 1) * sizeof *an);
        CHECK(clt_tensor_read(g, an, n * sizeof *an));
        clt_tensor_free(g);
        int was = clt_set_grad_enabled(0);
        for (size_t k = 0; k < n; k++) {
            double orig = data[i][k], lv[2];
            for (int side = 0; side < 2; side++) {
                data[i][k] = orig + (side ? -eps : eps);
                clt_tensor *tmp[8] = {0};
                gc_make(dev, nin, ins, data, tmp, 0);
                clt_tensor *l = gc_loss(dev, f, ctx, tmp);
                CHECK(clt_tensor_item(l, &lv[side]));
                clt_tensor_free(l);
                for (int j = 0; j < nin; j++)
                    clt_tensor_free(tmp[j]);
            }
            data[i][k] = orig;
            double num = (lv[0] - lv[1]) / (2 * eps);
            cr_assert(close_enough(an[k], num, rtol, atol),
                      "input %d element %zu: autograd %.10g, finite differences %.10g", i, k,
                      an[k], num);
        }
        clt_set_grad_enabled(was);
        free(an);
    }
    for (int i = 0; i < nin; i++) {
        clt_tensor_free(leaves[i]);
        free(data[i]);
    }
}

static inline void gradcheck(clt_device *dev, gc_fn f, const void *ctx, int nin,
                             const gc_in *ins)
{
    gradcheck_tol(dev, f, ctx, nin, ins, 1e-6, 1e-5, 1e-6);
}

#endif
