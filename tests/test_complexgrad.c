/* test_complexgrad.c: gradients through complex tensors and torch.fft.
 * Real float64 leaves through complex chains go through gradcheck (central
 * differences); complex leaves are checked against central differences of
 * their real and imaginary parts (torch's convention: the gradient is
 * dL/dx + i dL/dy = 2 dL/dz*), and the engine's complex cases (seeds,
 * accumulation, broadcasting) against values computed here. */
#include <complex.h>

#include "gradcheck.h"

/* ---- real leaves through complex chains (gradcheck) ----------------------- */

typedef struct cg_op {
    const char *what;
    int kind;           /* see cg_fn */
    int which;          /* the transform: 0 fft ... 5 ihfft, or 0 fftn ... 3 irfftn */
    int64_t n;          /* 1-D length, -1 for the input's */
    int k;              /* N-D: number of dims, s, dims (NULL when k_s / k_dim 0) */
    int64_t s[2];
    int dims[2];
    int has_s, has_dim;
    const char *norm;
    double alpha; /* kinds 11 to 13, 15 */
} cg_op;

typedef clt_status (*fft1_fn)(const clt_tensor *, int64_t, int, const char *, clt_tensor **);
typedef clt_status (*fftn_fn)(const clt_tensor *, int, const int64_t *, const int *, const char *,
                              clt_tensor **);

static const fft1_fn fft1s[6] = {clt_fft_fft,   clt_fft_ifft, clt_fft_rfft,
                                 clt_fft_irfft, clt_fft_hfft, clt_fft_ihfft};
static const fftn_fn fftns[6] = {clt_fft_fftn,   clt_fft_ifftn, clt_fft_rfftn,
                                 clt_fft_irfftn, clt_fft_hfftn, clt_fft_ihfftn};

/* A real result of a complex or real t: its real view for a complex one. */
static clt_status as_real(clt_tensor *t, clt_tensor **out)
{
    if (!clt_is_complex(t))
        return clt_clone(t, out);
    return clt_view_as_real(t, out);
}

/* kind 0..3: add, sub, mul, div of view_as_complex(in[0]) and
 * view_as_complex(in[1]); 4: abs; 5: angle; 6: polar(in[0], in[1]);
 * 7: imag(conj(z) * complex(in[1], in[1] * in[1])); 8: the complex one
 * over the real in[1] (broadcast); 9: a 1-D transform of
 * view_as_complex(in[0]) (or of in[0] for rfft, ihfft); 10: an N-D one
 * (fftn, ifftn, rfftn, irfftn, hfftn, ihfftn); in place on a copy c of
 * view_as_complex(in[0]): 11: c.add_(view_as_complex(in[1]), alpha),
 * 12: c.sub_(that, alpha), 13: c.add_(in[1] (real, broadcast), alpha),
 * 14: the scalar forms c + 0.5, * -1.5, - 2, / 4 in turn, 15: c[1] of a
 * [2, 3] c .add_(the complex in[1] [3], alpha) (a view: CopySlices). */
static clt_status cg_fn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const cg_op *op = ctx;
    clt_tensor *z = NULL, *w = NULL, *r = NULL, *t = NULL, *u = NULL;
    clt_status st = CLT_OK;
    bool real_in = (op->kind == 9 && (op->which == 2 || op->which == 5)) ||
                   (op->kind == 10 && (op->which == 2 || op->which == 5)) || op->kind == 6;
    CHECK(clt_scope_begin());
    if (!real_in)
        CHECK(clt_view_as_complex(in[0], &z));
    switch (op->kind) {
    case 0: CHECK(clt_view_as_complex(in[1], &w)); CHECK(clt_add(z, w, &r)); break;
    case 1: CHECK(clt_view_as_complex(in[1], &w)); CHECK(clt_sub(z, w, &r)); break;
    case 2: CHECK(clt_view_as_complex(in[1], &w)); CHECK(clt_mul(z, w, &r)); break;
    case 3: CHECK(clt_view_as_complex(in[1], &w)); CHECK(clt_div(z, w, &r)); break;
    case 4: CHECK(clt_abs(z, &r)); break;
    case 5: CHECK(clt_angle(z, &r)); break;
    case 6: CHECK(clt_polar(in[0], in[1], &r)); break;
    case 7:
        CHECK(clt_mul(in[1], in[1], &t));
        CHECK(clt_complex(in[1], t, &w));
        CHECK(clt_conj(z, &u));
        CHECK(clt_mul(u, w, &t));
        CHECK(clt_imag(t, &r));
        break;
    case 8: CHECK(clt_div(z, in[1], &r)); break;
    case 11:
    case 12:
    case 13:
        CHECK(clt_clone(z, &r));
        if (op->kind != 13)
            CHECK(clt_view_as_complex(in[1], &w));
        CHECK(op->kind == 12 ? clt_sub_(r, w, op->alpha)
                             : clt_add_(r, op->kind == 13 ? in[1] : w, op->alpha));
        break;
    case 14:
        CHECK(clt_clone(z, &r));
        CHECK(clt_add_scalar_(r, 0.5));
        CHECK(clt_mul_scalar_(r, -1.5));
        CHECK(clt_sub_scalar_(r, 2.0));
        CHECK(clt_div_scalar_(r, 4.0));
        break;
    case 15:
        CHECK(clt_clone(z, &r));
        CHECK(clt_view_as_complex(in[1], &w));
        CHECK(clt_select(r, 0, 1, &t));
        CHECK(clt_add_(t, w, op->alpha));
        break;
    case 9: CHECK(fft1s[op->which](real_in ? in[0] : z, op->n, 0, op->norm, &r)); break;
    default:
        CHECK(fftns[op->which](real_in ? in[0] : z, op->k, op->has_s ? op->s : NULL,
                               op->has_dim ? op->dims : NULL, op->norm, &r));
        break;
    }
    st = as_real(r, out);
    if (st == CLT_OK)
        CHECK(clt_scope_keep(*out));
    clt_scope_end();
    return st;
}

static double *random_data(size_t n, unsigned seed, double lo)
{
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = lo + (double)((seed >> 8) % 2001) / 1000.0;
    }
    return v;
}

Test(complexgrad, elementwise_complex_ops_gradcheck)
{
    clt_device *dev = get_device("cpu");
    double *a = random_data(12, 1, -1.0), *b = random_data(12, 2, -1.0);
    double *r = random_data(3, 3, 0.5);
    /* a zero and a value on the negative real axis for abs and angle */
    a[0] = 0.0;
    a[1] = 0.0;
    gc_in z2[2] = {{2, {6, 2}, a, 1}, {2, {6, 2}, b, 1}};
    for (int kind = 0; kind < 4; kind++) {
        cg_op op = {.kind = kind};
        gradcheck(dev, cg_fn, &op, 2, z2);
    }
    gc_in one[1] = {{2, {5, 2}, a + 2, 1}};
    for (int kind = 4; kind < 6; kind++) {
        cg_op op = {.kind = kind};
        gradcheck(dev, cg_fn, &op, 1, one);
    }
    cg_op polar = {.kind = 6};
    gc_in pin[2] = {{1, {3}, r, 1}, {1, {3}, b, 1}};
    gradcheck(dev, cg_fn, &polar, 2, pin);
    cg_op im = {.kind = 7};
    gc_in iin[2] = {{2, {3, 2}, a + 4, 1}, {1, {3}, b, 1}};
    gradcheck(dev, cg_fn, &im, 2, iin);
    cg_op mixed = {.kind = 8};
    gc_in min_[2] = {{3, {2, 3, 2}, a, 1}, {1, {3}, r, 1}};
    gradcheck(dev, cg_fn, &mixed, 2, min_);
    /* in place, alpha != 1 (torch's add_ and sub_ with alpha), and the
     * scalar forms */
    cg_op add2 = {.kind = 11, .alpha = 2.5}, sub2 = {.kind = 12, .alpha = -0.75};
    gradcheck(dev, cg_fn, &add2, 2, z2);
    gradcheck(dev, cg_fn, &sub2, 2, z2);
    cg_op addr = {.kind = 13, .alpha = 1.5};
    gradcheck(dev, cg_fn, &addr, 2, min_);
    /* alpha 1, where add_'s formula passes g to other as it is */
    cg_op add1 = {.kind = 11, .alpha = 1.0}, sub1 = {.kind = 12, .alpha = 1.0};
    cg_op addr1 = {.kind = 13, .alpha = 1.0};
    gradcheck(dev, cg_fn, &add1, 2, z2);
    gradcheck(dev, cg_fn, &sub1, 2, z2);
    gradcheck(dev, cg_fn, &addr1, 2, min_);
    cg_op sc = {.kind = 14};
    gradcheck(dev, cg_fn, &sc, 1, one);
    cg_op row = {.kind = 15, .alpha = -3.0};
    gc_in rin[2] = {{3, {2, 3, 2}, a, 1}, {2, {3, 2}, b, 1}};
    gradcheck(dev, cg_fn, &row, 2, rin);
    free(a);
    free(b);
    free(r);
}

Test(complexgrad, one_dim_transforms_gradcheck)
{
    clt_device *dev = get_device("cpu");
    double *x = random_data(2 * 6 * 2, 4, -1.0);
    const char *norms[3] = {NULL, "ortho", "forward"};
    const int64_t ns[4] = {-1, 4, 6, 9};
    for (int which = 0; which < 6; which++)
        for (int ni = 0; ni < 3; ni++)
            for (int k = 0; k < 4; k++) {
                cg_op op = {.kind = 9, .which = which, .n = ns[k], .norm = norms[ni]};
                bool real_in = which == 2 || which == 5;
                gc_in in = real_in ? (gc_in){2, {6, 2}, x, 1} : (gc_in){3, {6, 2, 2}, x, 1};
                gradcheck(dev, cg_fn, &op, 1, &in);
            }
    free(x);
}

Test(complexgrad, n_dim_transforms_gradcheck)
{
    clt_device *dev = get_device("cpu");
    double *x = random_data(3 * 4 * 5 * 2, 5, -1.0);
    const char *norms[3] = {NULL, "ortho", "forward"};
    for (int which = 0; which < 6; which++)
        for (int ni = 0; ni < 3; ni++)
            for (int form = 0; form < 3; form++) {
                cg_op op = {.kind = 10, .which = which, .norm = norms[ni]};
                if (form == 1) { /* s pads one dim and cuts another */
                    op.k = 2;
                    op.has_s = op.has_dim = 1;
                    op.s[0] = 6;
                    op.s[1] = 3;
                    op.dims[0] = 2;
                    op.dims[1] = 0;
                } else if (form == 2) {
                    op.k = 2;
                    op.has_dim = 1;
                    op.dims[0] = 0;
                    op.dims[1] = 1;
                }
                bool real_in = which == 2 || which == 5;
                gc_in in = real_in ? (gc_in){3, {3, 4, 5}, x, 1} : (gc_in){4, {3, 4, 5, 2}, x, 1};
                gradcheck(dev, cg_fn, &op, 1, &in);
            }
    free(x);
}

/* ---- complex leaves --------------------------------------------------------- */

/* L(z) as a real scalar: 0: sum(abs(fft(z))^2), 1: sum(real(z * conj(w))),
 * 2: sum(irfft(z, n 7)^2), 3: sum(hfft(z)^3 / 10), 4: sum(abs(z) * angle(z)). */
static clt_tensor *cleaf_loss(int which, clt_tensor *z, clt_tensor *w)
{
    clt_tensor *a = NULL, *b = NULL, *c = NULL, *l = NULL;
    CHECK(clt_scope_begin());
    switch (which) {
    case 0:
        CHECK(clt_fft_fft(z, -1, 0, "ortho", &a));
        CHECK(clt_abs(a, &b));
        CHECK(clt_mul(b, b, &c));
        break;
    case 1:
        CHECK(clt_conj(w, &a));
        CHECK(clt_mul(z, a, &b));
        CHECK(clt_real(b, &c));
        break;
    case 2:
        CHECK(clt_fft_irfft(z, 7, 0, NULL, &a));
        CHECK(clt_mul(a, a, &c));
        break;
    case 3:
        CHECK(clt_fft_hfft(z, -1, 0, "forward", &a));
        CHECK(clt_mul(a, a, &b));
        CHECK(clt_mul(b, a, &c));
        break;
    default:
        CHECK(clt_abs(z, &a));
        CHECK(clt_angle(z, &b));
        CHECK(clt_mul(a, b, &c));
        break;
    }
    CHECK(clt_sum(c, &l));
    CHECK(clt_scope_keep(l));
    clt_scope_end();
    return l;
}

static double cleaf_value(clt_device *dev, int which, const double complex *v, int64_t n,
                          clt_tensor *w)
{
    clt_tensor *z = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, v, &z));
    clt_tensor *l = cleaf_loss(which, z, w);
    double x = 0;
    CHECK(clt_tensor_item(l, &x));
    clt_tensor_free(l);
    clt_tensor_free(z);
    return x;
}

Test(complexgrad, complex_leaves_against_central_differences)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 5;
    double complex v[5] = {1 - 2 * I, 0.5 + 0.25 * I, -1.5 + I, 2, -0.75 - 0.5 * I};
    double complex wv[5] = {0.5 + I, -2, 3 * I, 1 - I, 0.25};
    clt_tensor *w = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, wv, &w));
    for (int which = 0; which < 5; which++) {
        clt_tensor *z = NULL, *g = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, v, &z));
        CHECK(clt_set_requires_grad(z, 1));
        clt_tensor *l = cleaf_loss(which, z, w);
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(z, &g));
        cr_assert_not_null(g);
        cr_assert_eq(clt_tensor_dtype(g), CLT_COMPLEX128, "a complex leaf's grad is complex");
        double complex got[5];
        CHECK(clt_tensor_read(g, got, sizeof got));
        int was = clt_set_grad_enabled(0);
        for (int k = 0; k < 5; k++) {
            double d[2];
            for (int part = 0; part < 2; part++) {
                double complex p[5], m[5], h = part ? 1e-6 * I : 1e-6;
                memcpy(p, v, sizeof p);
                memcpy(m, v, sizeof m);
                p[k] += h;
                m[k] -= h;
                d[part] = (cleaf_value(dev, which, p, n, w) - cleaf_value(dev, which, m, n, w)) /
                          2e-6;
            }
            cr_assert(fabs(creal(got[k]) - d[0]) <= 1e-5 * (1 + fabs(d[0])) &&
                          fabs(cimag(got[k]) - d[1]) <= 1e-5 * (1 + fabs(d[1])),
                      "loss %d element %d: autograd %g%+gi, differences %g%+gi", which, k,
                      creal(got[k]), cimag(got[k]), d[0], d[1]);
            if (which == 1) /* L = sum(real(z conj(w))): the gradient is w */
                cr_assert(cabs(got[k] - wv[k]) < 1e-12);
        }
        clt_set_grad_enabled(was);
        clt_tensor_free(g);
        clt_tensor_free(l);
        clt_tensor_free(z);
    }
    clt_tensor_free(w);
}

/* ---- the engine ------------------------------------------------------------------ */

Test(complexgrad, complex_outputs_seeds_accumulation_and_broadcasting)
{
    clt_device *dev = get_device("cpu");
    int64_t s13[2] = {1, 3}, s23[2] = {2, 3};
    double complex zv[3] = {1 + I, -2, 0.5 * I};
    double complex cv[6] = {2 - I, 1, I, -1 + 3 * I, 0.5, -I};
    double complex gv[6] = {1, I, 2 - I, -1, 0.5 + 0.5 * I, 3};
    clt_tensor *z = NULL, *c = NULL, *gy = NULL, *y = NULL, *g = NULL, *s = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s13, zv, &z));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, cv, &c));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, gv, &gy));
    CHECK(clt_set_requires_grad(z, 1));
    CHECK(clt_mul(z, c, &y)); /* broadcast over dim 0 */
    cr_assert(clt_requires_grad(y));
    cr_assert_str_eq(clt_grad_fn_name(y), "MulBackward0");
    /* a complex scalar output needs its gradient, as torch */
    clt_tensor *one = NULL;
    int64_t s1[1] = {1};
    double complex ov = 1;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, s1, &ov, &one));
    clt_tensor *y1 = NULL;
    CHECK(clt_mul(z, one, &y1));
    clt_tensor *y0 = NULL;
    CHECK(clt_narrow(y1, 1, 0, 1, &y0));
    cr_assert_eq(clt_backward(y0, NULL, 0), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "real scalar outputs"), "%s", clt_last_error());
    /* y.backward(gy) twice: z.grad = 2 sum_rows(gy conj(c)) */
    CHECK(clt_backward(y, gy, 1));
    CHECK(clt_backward(y, gy, 0));
    CHECK(clt_grad(z, &g));
    cr_assert_eq(clt_tensor_dtype(g), CLT_COMPLEX128);
    cr_assert_eq(clt_tensor_shape(g)[0], 1);
    double complex got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int j = 0; j < 3; j++) {
        double complex want = 2 * (gv[j] * conj(cv[j]) + gv[3 + j] * conj(cv[3 + j]));
        cr_assert(cabs(got[j] - want) < 1e-12, "j %d: %g%+gi, want %g%+gi", j, creal(got[j]),
                  cimag(got[j]), creal(want), cimag(want));
    }
    CHECK(clt_zero_grad(z, 0));
    clt_tensor_free(g);
    CHECK(clt_grad(z, &g));
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int j = 0; j < 3; j++)
        cr_assert(got[j] == 0);
    clt_tensor *ts[] = {z, c, gy, y, g, s, one, y1, y0};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* add_ and sub_ with alpha != 1 and the scalar in-place forms on complex
 * tensors: values against C's complex arithmetic (t + alpha * other in the
 * result dtype, as torch's), a transposed t, a real other broadcast, a
 * complex64 t with a complex128 other; a real t refuses a complex other
 * with torch's message, t unchanged. */
Test(complexgrad, inplace_alpha_and_scalar_values)
{
    clt_device *dev = get_device("cpu");
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    double complex tv[6] = {1 + 2 * I, 3 - I, -0.5 * I, 2, -1.25 + 0.75 * I, 0.1 - 4 * I};
    double complex ov[6] = {0.5 + I, -2 + 0.25 * I, 3, -I, 1.5 - 2 * I, -0.3 + 0.7 * I};
    double rv[3] = {0.25, -1.5, 2.0};
    clt_tensor *t = NULL, *o = NULL, *r = NULL, *tt = NULL;
    double complex got[6];
    for (int which = 0; which < 4; which++) {
        const double alpha[4] = {2.5, -0.75, 1.5, 0.5};
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, tv, &t));
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, ov, &o));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s3, rv, &r));
        double complex want[6];
        for (int k = 0; k < 6; k++) {
            double complex other = which == 2 ? rv[k % 3] : ov[k];
            want[k] = which == 1 ? tv[k] - alpha[1] * other : tv[k] + alpha[which] * other;
        }
        if (which == 0)
            CHECK(clt_add_(t, o, alpha[0]));
        else if (which == 1)
            CHECK(clt_sub_(t, o, alpha[1]));
        else if (which == 2)
            CHECK(clt_add_(t, r, alpha[2]));
        else { /* t's transpose, o's likewise: the same elements */
            clt_tensor *ot = NULL;
            CHECK(clt_transpose(t, 0, 1, &tt));
            CHECK(clt_transpose(o, 0, 1, &ot));
            CHECK(clt_add_(tt, ot, alpha[3]));
            clt_tensor_free(ot);
            clt_tensor_free(tt);
        }
        CHECK(clt_tensor_read(t, got, sizeof got));
        for (int k = 0; k < 6; k++)
            cr_assert(cabs(got[k] - want[k]) < 1e-14, "case %d element %d: %g%+gi, want %g%+gi",
                      which, k, creal(got[k]), cimag(got[k]), creal(want[k]), cimag(want[k]));
        clt_tensor_free(t);
        clt_tensor_free(o);
        clt_tensor_free(r);
    }
    /* complex64 t, complex128 other: computed in complex128, rounded once */
    float complex tf[6], gotf[6];
    for (int k = 0; k < 6; k++)
        tf[k] = (float complex)tv[k];
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX64, 2, s23, tf, &t));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, ov, &o));
    CHECK(clt_add_(t, o, 0.3));
    CHECK(clt_tensor_read(t, gotf, sizeof gotf));
    for (int k = 0; k < 6; k++) {
        double complex w = (double complex)tf[k] + 0.3 * ov[k];
        float complex wf = (float)creal(w) + (float)cimag(w) * I;
        cr_assert(gotf[k] == wf, "complex64 element %d: %.9g%+.9gi, want %.9g%+.9gi", k,
                  crealf(gotf[k]), cimagf(gotf[k]), crealf(wf), cimagf(wf));
    }
    clt_tensor_free(t);
    clt_tensor_free(o);
    /* the scalar forms */
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, tv, &t));
    CHECK(clt_add_scalar_(t, 0.5));
    CHECK(clt_sub_scalar_(t, -2.0));
    CHECK(clt_mul_scalar_(t, -1.5));
    CHECK(clt_div_scalar_(t, 4.0));
    CHECK(clt_tensor_read(t, got, sizeof got));
    for (int k = 0; k < 6; k++) {
        double complex want = (tv[k] + 0.5 + 2.0) * -1.5 / 4.0;
        cr_assert(cabs(got[k] - want) < 1e-14, "scalar forms element %d: %g%+gi, want %g%+gi",
                  k, creal(got[k]), cimag(got[k]), creal(want), cimag(want));
    }
    clt_tensor_free(t);
    /* a real t cannot take a complex result */
    double xv[6] = {1, 2, 3, 4, 5, 6}, xgot[6];
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, s23, xv, &t));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, s23, ov, &o));
    assert_error(clt_add_(t, o, 2.0), CLT_ERR_DTYPE_MISMATCH,
                 "clt_add_: result type ComplexDouble can't be cast to the desired output type "
                 "Double");
    CHECK(clt_tensor_read(t, xgot, sizeof xgot));
    cr_assert(memcmp(xgot, xv, sizeof xv) == 0);
    clt_tensor_free(t);
    clt_tensor_free(o);
}

/* A real leaf cast to complex and back: the gradient is the real part of
 * the complex one (torch's), here through to_dtype and a complex mul. */
Test(complexgrad, casts_take_the_real_part)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    double xv[3] = {1, -2, 0.5};
    double complex cv[3] = {2 - I, 3 * I, -1 + 0.5 * I};
    clt_tensor *x = NULL, *c = NULL, *xc = NULL, *p = NULL, *r = NULL, *l = NULL, *g = NULL;
    clt_tensor *im = NULL, *sum = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, xv, &x));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, cv, &c));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_to_dtype(x, CLT_COMPLEX128, &xc));
    CHECK(clt_mul(xc, c, &p));
    CHECK(clt_to_dtype(p, CLT_FLOAT64, &r)); /* real(x c) = x real(c) */
    CHECK(clt_imag(p, &im));                 /* imag(x c) = x imag(c) */
    CHECK(clt_add(r, im, &sum));
    CHECK(clt_sum(sum, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(x, &g));
    cr_assert_eq(clt_tensor_dtype(g), CLT_FLOAT64);
    double got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    for (int j = 0; j < 3; j++)
        cr_assert(fabs(got[j] - (creal(cv[j]) + cimag(cv[j]))) < 1e-12, "j %d: %g", j, got[j]);
    clt_tensor *ts[] = {x, c, xc, p, r, l, g, im, sum};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        clt_tensor_free(ts[i]);
}

/* ihfftn of a real x against the sum that defines it, and hfftn of that
 * giving x back (the last dim even: its default length 2 (m - 1)). */
Test(complexgrad, hermitian_n_dim_transforms_against_their_definition)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {3, 4};
    double x[12];
    for (int i = 0; i < 12; i++)
        x[i] = sin(1.0 + 0.7 * i) * (i % 2 ? 1 : -2);
    clt_tensor *t = NULL, *h = NULL, *back = NULL, *h2 = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, shape, x, &t));
    CHECK(clt_fft_ihfftn(t, 0, NULL, NULL, "ortho", &h));
    cr_assert_eq(clt_tensor_ndim(h), 2);
    cr_assert_eq(clt_tensor_shape(h)[0], 3);
    cr_assert_eq(clt_tensor_shape(h)[1], 3);
    double complex got[9];
    CHECK(clt_tensor_read(h, got, sizeof got));
    for (int k0 = 0; k0 < 3; k0++)
        for (int k1 = 0; k1 < 3; k1++) {
            double complex want = 0;
            for (int j0 = 0; j0 < 3; j0++)
                for (int j1 = 0; j1 < 4; j1++)
                    want += x[j0 * 4 + j1] *
                            cexp(2 * M_PI * I * ((double)(j0 * k0) / 3 + (double)(j1 * k1) / 4));
            want /= sqrt(12.0);
            cr_assert(cabs(got[k0 * 3 + k1] - want) < 1e-12, "k %d %d", k0, k1);
        }
    CHECK(clt_fft_hfftn(h, 0, NULL, NULL, "ortho", &back));
    double r[12];
    CHECK(clt_tensor_read(back, r, sizeof r));
    for (int i = 0; i < 12; i++)
        cr_assert(fabs(r[i] - x[i]) < 1e-12, "i %d: %g, want %g", i, r[i], x[i]);
    /* the 2-D forms are the N-D ones over the last two dims */
    CHECK(clt_fft_ihfft2(t, NULL, NULL, "ortho", &h2));
    double complex got2[9];
    CHECK(clt_tensor_read(h2, got2, sizeof got2));
    for (int i = 0; i < 9; i++)
        cr_assert(cabs(got2[i] - got[i]) < 1e-12);
    clt_tensor *o = (clt_tensor *)&o;
    cr_assert_eq(clt_fft_ihfftn(h, 0, NULL, NULL, NULL, &o), CLT_ERR_DTYPE_UNSUPPORTED);
    cr_assert_null(o);
    clt_tensor_free(t);
    clt_tensor_free(h);
    clt_tensor_free(back);
    clt_tensor_free(h2);
}

/* A pass that creates a graph gives complex formulas' gradients too (with
 * a history: they are differentiable again), the same values as a plain
 * pass. */
Test(complexgrad, create_graph_gives_the_same_gradient)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 6;
    double xv[6] = {0.5, -1, 2, 0.25, -0.75, 1.5};
    double got[2][6];
    for (int pass = 0; pass < 2; pass++) {
        clt_tensor *x = NULL, *y = NULL, *a = NULL, *p = NULL, *l = NULL, *g = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, xv, &x));
        CHECK(clt_set_requires_grad(x, 1));
        CHECK(clt_fft_rfft(x, 8, 0, "ortho", &y));
        CHECK(clt_abs(y, &a));
        CHECK(clt_mul(a, a, &p));
        CHECK(clt_sum(p, &l));
        clt_grad_opts o = {0, pass, 0};
        CHECK(clt_backward_ex(l, NULL, &o));
        CHECK(clt_grad(x, &g));
        CHECK(clt_tensor_read(g, got[pass], sizeof got[pass]));
        clt_tensor *ts[] = {x, y, a, p, l, g};
        for (size_t i = 0; i < 6; i++)
            clt_tensor_free(ts[i]);
    }
    /* L = sum_k<5 |X_k|^2 / 8 with X the DFT of x padded to 8: dL/dx_j =
     * (2 / 8) sum_k real(conj(X_k) exp(-2 pi i j k / 8)) */
    for (int j = 0; j < 6; j++) {
        double want = 0;
        for (int k = 0; k < 5; k++) {
            double complex X = 0;
            for (int m = 0; m < 6; m++)
                X += xv[m] * cexp(-2 * M_PI * I * m * k / 8.0);
            want += 2.0 / 8.0 * creal(conj(X) * cexp(-2 * M_PI * I * j * k / 8.0));
        }
        for (int pass = 0; pass < 2; pass++)
            cr_assert(fabs(got[pass][j] - want) < 1e-12, "pass %d j %d: %g, want %g", pass, j,
                      got[pass][j], want);
    }
}

/* ---- sums, pieces and products of complex tensors, second derivatives ---- */

/* sum and mean of a complex tensor against loops here: over all elements,
 * along each dim with and without keepdim, in both precisions. */
Test(complexgrad, complex_sum_and_mean_values)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[3] = {2, 3, 4};
    double complex z[24];
    float complex zf[24];
    for (int i = 0; i < 24; i++) {
        z[i] = (0.5 * i - 3) + I * (1.25 - 0.3 * i * (i % 3));
        zf[i] = (float complex)z[i];
    }
    clt_tensor *t = NULL, *tf = NULL, *r = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 3, shape, z, &t));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX64, 3, shape, zf, &tf));
    double complex all = 0;
    for (int i = 0; i < 24; i++)
        all += z[i];
    double complex got[24];
    CHECK(clt_sum(t, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_COMPLEX128);
    cr_assert_eq(clt_tensor_ndim(r), 0);
    CHECK(clt_tensor_read(r, got, sizeof(double complex)));
    cr_assert(cabs(got[0] - all) < 1e-12);
    clt_tensor_free(r);
    CHECK(clt_mean(t, &r));
    CHECK(clt_tensor_read(r, got, sizeof(double complex)));
    cr_assert(cabs(got[0] - all / 24) < 1e-12);
    clt_tensor_free(r);
    float complex gf;
    CHECK(clt_mean(tf, &r));
    cr_assert_eq(clt_tensor_dtype(r), CLT_COMPLEX64);
    CHECK(clt_tensor_read(r, &gf, sizeof gf));
    cr_assert(cabs(gf - all / 24) < 1e-5);
    clt_tensor_free(r);
    for (int d = 0; d < 3; d++)
        for (int keep = 0; keep < 2; keep++)
            for (int mean = 0; mean < 2; mean++) {
                CHECK(mean ? clt_mean_dim(t, d, keep, &r) : clt_sum_dim(t, d, keep, &r));
                cr_assert_eq(clt_tensor_ndim(r), keep ? 3 : 2);
                cr_assert_eq(clt_tensor_numel(r), 24 / shape[d]);
                CHECK(clt_tensor_read(r, got, (size_t)(24 / shape[d]) * sizeof(double complex)));
                int k = 0;
                for (int i0 = 0; i0 < (d == 0 ? 1 : 2); i0++)
                    for (int i1 = 0; i1 < (d == 1 ? 1 : 3); i1++)
                        for (int i2 = 0; i2 < (d == 2 ? 1 : 4); i2++, k++) {
                            double complex want = 0;
                            for (int j = 0; j < shape[d]; j++) {
                                int idx[3] = {i0, i1, i2};
                                idx[d] = j;
                                want += z[idx[0] * 12 + idx[1] * 4 + idx[2]];
                            }
                            if (mean)
                                want /= (double)shape[d];
                            cr_assert(cabs(got[k] - want) < 1e-12, "d %d keep %d mean %d k %d", d,
                                      keep, mean, k);
                        }
                clt_tensor_free(r);
            }
    clt_tensor_free(t);
    clt_tensor_free(tf);
}

/* A complex leaf broadcast against a CLT_MAX_DIMS-dim tensor: its gradient
 * sums over the broadcast dims (L = real(sum(a * b)): dL/da* = conj(b)). */
Test(complexgrad, broadcast_gradient_at_max_dims)
{
    clt_device *dev = get_device("cpu");
    int64_t sa[CLT_MAX_DIMS], sb[CLT_MAX_DIMS];
    for (int d = 0; d < CLT_MAX_DIMS; d++) {
        sa[d] = d % 2 ? 2 : 1;
        sb[d] = 2;
    }
    size_t na = 1u << (CLT_MAX_DIMS / 2), nb = 1u << CLT_MAX_DIMS;
    double complex *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    for (size_t i = 0; i < na; i++)
        a[i] = 0.1 * (double)i + 0.5 * I;
    for (size_t i = 0; i < nb; i++)
        b[i] = cos(0.7 * (double)i) + I * sin(1.3 * (double)i);
    clt_tensor *ta = NULL, *tb = NULL, *p = NULL, *s = NULL, *l = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, CLT_MAX_DIMS, sa, a, &ta));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, CLT_MAX_DIMS, sb, b, &tb));
    CHECK(clt_set_requires_grad(ta, 1));
    CHECK(clt_mul(ta, tb, &p));
    CHECK(clt_sum(p, &s));
    CHECK(clt_real(s, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(ta, &g));
    cr_assert_eq(clt_tensor_dtype(g), CLT_COMPLEX128);
    cr_assert_eq(clt_tensor_ndim(g), CLT_MAX_DIMS);
    double complex *got = malloc(na * sizeof *got), *want = calloc(na, sizeof *want);
    CHECK(clt_tensor_read(g, got, na * sizeof *got));
    for (size_t i = 0; i < nb; i++) {
        size_t j = 0; /* the index in a: the odd dims of b's index */
        for (int d = 0; d < CLT_MAX_DIMS; d++)
            if (d % 2)
                j = j * 2 + ((i >> (CLT_MAX_DIMS - 1 - d)) & 1);
        want[j] += conj(b[i]);
    }
    for (size_t j = 0; j < na; j++)
        cr_assert(cabs(got[j] - want[j]) < 1e-12, "j %zu: %g%+gi, want %g%+gi", j, creal(got[j]),
                  cimag(got[j]), creal(want[j]), cimag(want[j]));
    clt_tensor *ts[] = {ta, tb, p, s, l, g};
    for (size_t i = 0; i < 6; i++)
        clt_tensor_free(ts[i]);
    free(a);
    free(b);
    free(got);
    free(want);
}

/* complex matmul against the loops, in both precisions; a real operand
 * beside a complex one is refused, as torch's "expected scalar type". */
Test(complexgrad, complex_matmul_values)
{
    clt_device *dev = get_device("cpu");
    int64_t sa[2] = {3, 4}, sb[2] = {4, 2};
    double complex a[12], b[8], got[6];
    float complex af[12], bf[8], gotf[6];
    for (int i = 0; i < 12; i++)
        af[i] = (float complex)(a[i] = (0.25 * i - 1) + I * (0.5 - 0.125 * i));
    for (int i = 0; i < 8; i++)
        bf[i] = (float complex)(b[i] = (1 - 0.3 * i) + I * (0.2 * i * i - 1));
    clt_tensor *ta = NULL, *tb = NULL, *r = NULL, *taf = NULL, *tbf = NULL, *rf = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, sa, a, &ta));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, sb, b, &tb));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX64, 2, sa, af, &taf));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX64, 2, sb, bf, &tbf));
    CHECK(clt_matmul(ta, tb, &r));
    CHECK(clt_mm(taf, tbf, &rf));
    cr_assert_eq(clt_tensor_dtype(r), CLT_COMPLEX128);
    cr_assert_eq(clt_tensor_dtype(rf), CLT_COMPLEX64);
    CHECK(clt_tensor_read(r, got, sizeof got));
    CHECK(clt_tensor_read(rf, gotf, sizeof gotf));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            double complex want = 0;
            for (int k = 0; k < 4; k++)
                want += a[i * 4 + k] * b[k * 2 + j];
            cr_assert(cabs(got[i * 2 + j] - want) < 1e-12);
            cr_assert(cabs(gotf[i * 2 + j] - want) < 1e-4);
        }
    /* vdot: conj(a) . b, torch's (dot does not conjugate) */
    int64_t s8[1] = {8};
    clt_tensor *va = NULL, *vb = NULL, *vd = NULL, *dd = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, s8, a, &va));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, s8, b, &vb));
    CHECK(clt_vdot(va, vb, &vd));
    CHECK(clt_dot(va, vb, &dd));
    double complex gv, gd, wv = 0, wd = 0;
    for (int k = 0; k < 8; k++) {
        wv += conj(a[k]) * b[k];
        wd += a[k] * b[k];
    }
    CHECK(clt_tensor_read(vd, &gv, sizeof gv));
    CHECK(clt_tensor_read(dd, &gd, sizeof gd));
    cr_assert(cabs(gv - wv) < 1e-12, "vdot %g%+gi, want %g%+gi", creal(gv), cimag(gv), creal(wv),
              cimag(wv));
    cr_assert(cabs(gd - wd) < 1e-12);
    clt_tensor_free(va);
    clt_tensor_free(vb);
    clt_tensor_free(vd);
    clt_tensor_free(dd);
    clt_tensor *o = (clt_tensor *)&o, *real = NULL;
    CHECK(clt_real(tb, &real));
    cr_assert_eq(clt_matmul(ta, real, &o), CLT_ERR_DTYPE_MISMATCH);
    cr_assert_null(o);
    clt_tensor *ts[] = {ta, tb, r, taf, tbf, rf, real};
    for (size_t i = 0; i < 7; i++)
        clt_tensor_free(ts[i]);
}

/* Real float64 leaves through complex sums, pieces and products: kind 0
 * sum_dim(z * w, 1), 1 mean_dim(z, 0, keepdim) * w, 2 split(z, 2, 1)
 * pieces multiplied, 3 unbind(z, 0) pieces divided, 4 matmul(z, w^T),
 * 5 abs(mm(z, conj(w)^T)) + angle(sum(z)), 6 vdot(z, w) flattened (conj(z)
 * w summed). */
static clt_status c2_fn(void *user, clt_tensor *const *in, size_t n, clt_tensor **out, size_t *m)
{
    (void)n;
    int kind = *(const int *)user;
    clt_tensor *z = NULL, *w = NULL, *r = NULL, *t = NULL, *u = NULL, **p = NULL;
    size_t np = 0;
    clt_status st = CLT_OK;
#define C2(call)                \
    do {                        \
        if ((st = (call)) != CLT_OK) \
            goto done;          \
    } while (0)
    C2(clt_view_as_complex(in[0], &z));
    C2(clt_view_as_complex(in[1], &w));
    switch (kind) {
    case 0: C2(clt_mul(z, w, &t)); C2(clt_sum_dim(t, 1, 0, &r)); break;
    case 1: C2(clt_mean_dim(z, 0, 1, &t)); C2(clt_mul(t, w, &r)); break;
    case 2:
        C2(clt_split(z, 2, 1, &p, &np));
        C2(clt_mul(p[0], p[1], &t));
        C2(clt_mul(t, w, &r));
        break;
    case 3:
        C2(clt_unbind(z, 0, &p, &np));
        C2(clt_div(p[2], p[0], &t));
        C2(clt_mul(t, w, &r));
        break;
    case 4: C2(clt_transpose(w, 0, 1, &t)); C2(clt_matmul(z, t, &r)); break;
    case 6:
        C2(clt_reshape(z, 1, (int64_t[]){-1}, &t));
        C2(clt_reshape(w, 1, (int64_t[]){-1}, &u));
        C2(clt_vdot(t, u, &r));
        break;
    default:
        C2(clt_conj(w, &t));
        C2(clt_transpose(t, 0, 1, &u));
        clt_tensor_free(t);
        t = NULL;
        C2(clt_mm(z, u, &t));
        clt_tensor_free(u);
        u = NULL;
        C2(clt_abs(t, &u));
        clt_tensor_free(t);
        t = NULL;
        C2(clt_sum(z, &t));
        C2(clt_angle(t, &r));
        clt_tensor_free(t);
        t = NULL;
        C2(clt_add(u, r, &t));
        clt_tensor_free(r);
        r = t;
        t = NULL;
        break;
    }
    if (clt_is_complex(r))
        C2(clt_view_as_real(r, &out[0]));
    else
        C2(clt_clone(r, &out[0]));
    *m = 1;
done:
#undef C2
    for (size_t k = 0; k < np; k++)
        clt_tensor_free(p[k]);
    clt_free(p);
    clt_tensor_free(z);
    clt_tensor_free(w);
    clt_tensor_free(r);
    clt_tensor_free(t);
    clt_tensor_free(u);
    return st;
}

Test(complexgrad, sums_pieces_products_gradcheck_and_gradgradcheck)
{
    clt_device *dev = get_device("cpu");
    int64_t sz[3] = {3, 4, 2}, sw[7][3] = {{3, 4, 2}, {1, 4, 2}, {3, 2, 2}, {4, 1, 2},
                                           {2, 4, 2}, {2, 4, 2}, {3, 4, 2}};
    double *zv = random_data(24, 5, -1.0), *wv = random_data(24, 6, -1.0);
    for (int kind = 0; kind < 7; kind++) {
        clt_tensor *in[2] = {NULL, NULL};
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, sz, zv, &in[0]));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 3, sw[kind], wv, &in[1]));
        CHECK(clt_set_requires_grad(in[0], 1));
        CHECK(clt_set_requires_grad(in[1], 1));
        clt_status st = clt_gradcheck(c2_fn, &kind, in, 2, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        st = clt_gradgradcheck(c2_fn, &kind, in, 2, NULL, 0, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        clt_tensor_free(in[0]);
        clt_tensor_free(in[1]);
    }
    free(zv);
    free(wv);
}

/* cg_fn's result squared, through the functional signature: a nonlinear
 * function of every transform for gradgradcheck. */
static clt_status cg_squared(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                             size_t *m)
{
    (void)n;
    clt_tensor *r = NULL;
    clt_status st = cg_fn(in, &r, user);
    if (st == CLT_OK)
        st = clt_mul(r, r, &out[0]);
    clt_tensor_free(r);
    *m = st == CLT_OK;
    return st;
}

/* The transforms' and the elementwise complex ops' gradients are
 * differentiable again (torch's gradgradcheck passes for each). */
Test(complexgrad, transforms_and_complex_ops_gradgradcheck)
{
    clt_device *dev = get_device("cpu");
    double *x = random_data(3 * 4 * 2, 8, -1.0), *y = random_data(3 * 4 * 2, 9, -1.0);
    const char *norms[2] = {NULL, "ortho"};
    for (int which = 0; which < 6; which++)
        for (int ni = 0; ni < 2; ni++)
            for (int nd = 0; nd < 2; nd++) {
                cg_op op = {.kind = 9 + nd, .which = which, .n = which == 3 ? 5 : -1,
                            .norm = norms[ni]};
                bool real_in = which == 2 || which == 5;
                int64_t shape[3] = {3, 4, 2};
                clt_tensor *t = NULL;
                CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, real_in ? 2 : 3, shape, x, &t));
                CHECK(clt_set_requires_grad(t, 1));
                clt_status st = clt_gradgradcheck(cg_squared, &op, &t, 1, NULL, 0, NULL);
                cr_assert_eq(st, CLT_OK, "transform %d norm %d nd %d: %s", which, ni, nd,
                             clt_last_error());
                clt_tensor_free(t);
            }
    int64_t shape[2] = {6, 2};
    double *r = random_data(6, 10, 0.5); /* polar's abs: positive, as torch asks */
    for (int kind = 0; kind < 8; kind++) {
        cg_op op = {.kind = kind};
        clt_tensor *in[2] = {NULL, NULL};
        int64_t s1 = 6;
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, kind == 6 ? 1 : 2, kind == 6 ? &s1 : shape,
                                   kind == 6 ? r : x, &in[0]));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, kind == 6 || kind == 7 ? 1 : 2,
                                   kind == 6 || kind == 7 ? &s1 : shape, y, &in[1]));
        CHECK(clt_set_requires_grad(in[0], 1));
        CHECK(clt_set_requires_grad(in[1], 1));
        size_t nin = kind == 4 || kind == 5 ? 1 : 2;
        clt_status st = clt_gradgradcheck(cg_squared, &op, in, nin, NULL, 0, NULL);
        cr_assert_eq(st, CLT_OK, "kind %d: %s", kind, clt_last_error());
        clt_tensor_free(in[0]);
        clt_tensor_free(in[1]);
    }
    free(x);
    free(y);
    free(r);
}

/* z * z and conj(z) of a complex input: two complex results. */
static clt_status square_and_conj(void *user, clt_tensor *const *in, size_t n, clt_tensor **out,
                                  size_t *m)
{
    (void)user;
    (void)n;
    clt_status st = clt_mul(in[0], in[0], &out[0]);
    if (st == CLT_OK && (st = clt_conj(in[0], &out[1])) != CLT_OK)
        clt_tensor_free(out[0]);
    *m = st == CLT_OK ? 2 : 0;
    return st;
}

/* clt_checkpoint of a complex leaf with complex results (recomputed in
 * backward), against the gradient worked out here. */
Test(complexgrad, checkpoint_with_complex_results)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    double complex z[3] = {1 + 2 * I, -0.5 + 0.25 * I, 2 - 1 * I};
    double complex w1[3] = {0.5 - 1 * I, 2, -1 + 0.5 * I};
    clt_tensor *t = NULL, *tw = NULL, *p = NULL, *s = NULL, *r = NULL, *i2 = NULL, *si = NULL,
               *l = NULL, *g = NULL, **outs = NULL;
    size_t m = 0;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, z, &t));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, w1, &tw));
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_checkpoint(square_and_conj, NULL, &t, 1, &outs, &m));
    cr_assert_eq(m, 2);
    cr_assert(clt_requires_grad(outs[0]) && clt_requires_grad(outs[1]));
    CHECK(clt_mul(outs[0], tw, &p));
    CHECK(clt_sum(p, &s));
    CHECK(clt_real(s, &r));
    CHECK(clt_sum(outs[1], &si));
    CHECK(clt_imag(si, &i2));
    CHECK(clt_add(r, i2, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(t, &g));
    double complex got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    /* L = sum re(w1 z^2) - sum im(z) (imag of conj(z)); torch's gradient
     * dL/dx + i dL/dy: re(w1 z^2) gives conj(2 w1 z); -im(z) gives -i. */
    for (int k = 0; k < 3; k++) {
        double complex want = conj(2 * w1[k] * z[k]) - I;
        cr_assert(cabs(got[k] - want) < 1e-12, "k %d: %g%+gi, want %g%+gi", k, creal(got[k]),
                  cimag(got[k]), creal(want), cimag(want));
    }
    clt_tensor *ts[] = {t, tw, p, s, r, i2, si, l, g, outs[0], outs[1]};
    for (size_t k = 0; k < 11; k++)
        clt_tensor_free(ts[k]);
    clt_free(outs);
}

/* A custom function of complex values: (c z, conj(z)) for a complex
 * constant c (user); backward: g0 conj(c) + conj(g1), torch's convention.
 * With user NULL, backward hands a complex gradient to what may be a real
 * input. */
static clt_status cfn_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *in, size_t n,
                              clt_tensor **out, size_t *m)
{
    (void)ctx;
    (void)n;
    clt_tensor *c = user;
    clt_status st = c ? clt_mul(in[0], c, &out[0]) : clt_to_dtype(in[0], CLT_COMPLEX128, &out[0]);
    if (st == CLT_OK && (st = clt_conj(out[0], &out[1])) != CLT_OK)
        clt_tensor_free(out[0]);
    *m = st == CLT_OK ? 2 : 0;
    return st;
}

static clt_status cfn_backward(clt_function_ctx *ctx, void *user, const clt_tensor *const *g,
                               size_t m, clt_tensor **gi, size_t n)
{
    (void)ctx;
    (void)m;
    (void)n;
    clt_tensor *c = user, *cc = NULL, *a = NULL, *b = NULL;
    clt_status st = CLT_OK;
    if (c == NULL)
        return clt_conj(g[1], &gi[0]); /* complex, for a real input: refused */
    if ((st = clt_conj(c, &cc)) == CLT_OK && (st = clt_mul(g[0], cc, &a)) == CLT_OK &&
        (st = clt_conj(g[1], &b)) == CLT_OK)
        st = clt_add(a, b, &gi[0]);
    clt_tensor_free(cc);
    clt_tensor_free(a);
    clt_tensor_free(b);
    return st;
}

static const clt_function cfn = {"CScale", cfn_forward, cfn_backward, NULL, 0};

Test(complexgrad, custom_function_with_complex_outputs)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    double complex z[3] = {1 + 2 * I, -0.5 + 0.25 * I, 2 - 1 * I}, cv = 0.5 - 2 * I;
    double complex w[3] = {0.5 - 1 * I, 2, -1 + 0.5 * I};
    clt_tensor *t = NULL, *c = NULL, *tw = NULL, *p = NULL, *s = NULL, *r = NULL, *s2 = NULL,
               *i2 = NULL, *l = NULL, *g = NULL, **outs = NULL;
    size_t m = 0;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, z, &t));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 0, NULL, &cv, &c));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, w, &tw));
    CHECK(clt_set_requires_grad(t, 1));
    CHECK(clt_function_apply(&cfn, c, &t, 1, &outs, &m));
    cr_assert_eq(m, 2);
    cr_assert_str_eq(clt_grad_fn_name(outs[0]), "CScaleBackward");
    cr_assert_str_eq(clt_grad_fn_name(outs[1]), "CScaleBackward");
    CHECK(clt_mul(outs[0], tw, &p));
    CHECK(clt_sum(p, &s));
    CHECK(clt_real(s, &r));
    CHECK(clt_sum(outs[1], &s2));
    CHECK(clt_imag(s2, &i2));
    CHECK(clt_add(r, i2, &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(t, &g));
    double complex got[3];
    CHECK(clt_tensor_read(g, got, sizeof got));
    /* L = sum re(w c z) + sum im(conj z): dL/dx + i dL/dy = conj(w c) - i */
    for (int k = 0; k < 3; k++) {
        double complex want = conj(w[k] * cv) - I;
        cr_assert(cabs(got[k] - want) < 1e-12, "k %d: %g%+gi, want %g%+gi", k, creal(got[k]),
                  cimag(got[k]), creal(want), cimag(want));
    }
    clt_tensor *ts[] = {t, c, tw, p, s, r, s2, i2, l, g, outs[0], outs[1]};
    for (size_t k = 0; k < 12; k++)
        clt_tensor_free(ts[k]);
    clt_free(outs);
    /* a complex gradient for a real input is refused, as torch refuses it */
    double xv[3] = {1, 2, 3};
    clt_tensor *x = NULL, *a = NULL, *sa = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, &n, xv, &x));
    CHECK(clt_set_requires_grad(x, 1));
    CHECK(clt_function_apply(&cfn, NULL, &x, 1, &outs, &m));
    CHECK(clt_abs(outs[1], &a));
    CHECK(clt_sum(a, &sa));
    cr_assert_eq(clt_backward(sa, NULL, 0), CLT_ERR_DTYPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "invalid gradient at index 0"), "%s", clt_last_error());
    clt_tensor *us[] = {x, a, sa, outs[0], outs[1]};
    for (size_t k = 0; k < 5; k++)
        clt_tensor_free(us[k]);
    clt_free(outs);
}

/* index_select, flip and roll (over the flattened tensor) of a complex leaf
 * against host indexing, and the gradient of L = re(sum(w1 y1)) +
 * re(sum(w2 y2)) + re(sum(w3 y3)): each y's weights, conjugated, sent back
 * to the elements they came from. */
Test(complexgrad, index_select_flip_roll_values_and_gradients)
{
    clt_device *dev = get_device("cpu");
    int64_t shape[2] = {3, 4}, three = 3, ysh[2] = {3, 3};
    double complex z[12], w1[9], w2[12], w3[12];
    for (int i = 0; i < 12; i++) {
        z[i] = (0.5 * i - 2) + I * (1 - 0.25 * i);
        w2[i] = cos(0.9 * i) + I * sin(0.4 * i);
        w3[i] = 0.3 * i - 1 + 0.5 * I;
    }
    for (int i = 0; i < 9; i++)
        w1[i] = 1 - 0.2 * i + I * (0.1 * i);
    int64_t ix[3] = {2, 0, 2};
    clt_tensor *t = NULL, *ti = NULL, *y[3] = {0}, *w[3] = {0}, *p[3] = {0}, *s[3] = {0},
               *r[3] = {0}, *l1 = NULL, *l = NULL, *g = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, shape, z, &t));
    CHECK(clt_tensor_from_host(dev, CLT_INT64, 1, &three, ix, &ti));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, ysh, w1, &w[0]));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, shape, w2, &w[1]));
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 2, shape, w3, &w[2]));
    CHECK(clt_set_requires_grad(t, 1));
    int d0 = 0;
    int64_t five = 5;
    CHECK(clt_index_select(t, -1, ti, &y[0]));
    CHECK(clt_flip(t, &d0, 1, &y[1]));
    CHECK(clt_roll(t, &five, NULL, 0, &y[2]));
    double complex got[12], want[12], gw[12] = {0};
    /* y1[i][j] = z[i][ix[j]]; y2[i][j] = z[2 - i][j]; y3 flat[k] = z flat[(k - 5) mod 12] */
    CHECK(clt_tensor_read(y[0], got, 9 * sizeof got[0]));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            cr_assert(cabs(got[i * 3 + j] - z[i * 4 + ix[j]]) < 1e-15);
            gw[i * 4 + ix[j]] += conj(w1[i * 3 + j]);
        }
    CHECK(clt_tensor_read(y[1], got, sizeof got));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            cr_assert(cabs(got[i * 4 + j] - z[(2 - i) * 4 + j]) < 1e-15);
            gw[(2 - i) * 4 + j] += conj(w2[i * 4 + j]);
        }
    CHECK(clt_tensor_read(y[2], got, sizeof got));
    for (int k = 0; k < 12; k++) {
        cr_assert(cabs(got[k] - z[(k + 7) % 12]) < 1e-15);
        gw[(k + 7) % 12] += conj(w3[k]);
    }
    for (int k = 0; k < 3; k++) {
        CHECK(clt_mul(y[k], w[k], &p[k]));
        CHECK(clt_sum(p[k], &s[k]));
        CHECK(clt_real(s[k], &r[k]));
    }
    CHECK(clt_add(r[0], r[1], &l1));
    CHECK(clt_add(l1, r[2], &l));
    CHECK(clt_backward(l, NULL, 0));
    CHECK(clt_grad(t, &g));
    CHECK(clt_tensor_read(g, want, sizeof want));
    for (int k = 0; k < 12; k++)
        cr_assert(cabs(want[k] - gw[k]) < 1e-12, "k %d: %g%+gi, want %g%+gi", k, creal(want[k]),
                  cimag(want[k]), creal(gw[k]), cimag(gw[k]));
    for (int k = 0; k < 3; k++) {
        clt_tensor_free(y[k]);
        clt_tensor_free(w[k]);
        clt_tensor_free(p[k]);
        clt_tensor_free(s[k]);
        clt_tensor_free(r[k]);
    }
    clt_tensor *ts[] = {t, ti, l1, l, g};
    for (size_t k = 0; k < 5; k++)
        clt_tensor_free(ts[k]);
}

/* ---- in-place ops on complex views ----------------------------------------------- */

/* z = zl * 1 written through its views of another dtype, then
 * L = sum(|z|^2) + sum(view_as_real(z)^3):
 * 0: re = z.real, im = z.imag, r = view_as_real(z) made first; re *= 2,
 *    im += 1; L's real view is r (made before the ops);
 * 1: z.real.clamp_(-0.6, 0.7); z.imag[1:].zero_(); z.real[:2].copy_(z.real[2:]);
 * 2: r = view_as_real(z); r[:, 0] *= 3; r[2:] -= 0.5 c (c constant 2x2);
 *    r[0] *= r2 (constant, 2);
 * 3: views of views: z.real[1:] *= -2, z.real[1:][1:3] += 0.5, and
 *    view_as_complex(view_as_real(z))[0] *= (0.5 - 1.5i) (a complex view
 *    through a real one). */
static clt_tensor *cview_loss(clt_device *dev, int which, clt_tensor *zl)
{
    const int64_t s22[2] = {2, 2}, s2[1] = {2};
    const double cv[4] = {0.3, -1.2, 0.8, 0.4}, r2v[2] = {-1.5, 2.5};
    const double complex k = 0.5 - 1.5 * I;
    const double lo = -0.6, hi = 0.7;
    clt_tensor *z = NULL, *re = NULL, *im = NULL, *r = NULL, *v = NULL, *u = NULL, *c = NULL,
               *a = NULL, *b = NULL, *l1 = NULL, *l2 = NULL, *l = NULL;
    CHECK(clt_scope_begin());
    CHECK(clt_mul_scalar(zl, 1.0, &z));
    switch (which) {
    case 0:
        CHECK(clt_real(z, &re));
        CHECK(clt_imag(z, &im));
        CHECK(clt_view_as_real(z, &r));
        CHECK(clt_mul_scalar_(re, 2.0));
        CHECK(clt_add_scalar_(im, 1.0));
        break;
    case 1:
        CHECK(clt_real(z, &re));
        CHECK(clt_imag(z, &im));
        CHECK(clt_clamp_(re, &lo, &hi));
        CHECK(clt_slice(im, 0, 1, 4, 1, &v));
        CHECK(clt_zero_(v));
        CHECK(clt_slice(re, 0, 0, 2, 1, &u));
        CHECK(clt_slice(re, 0, 2, 4, 1, &a));
        CHECK(clt_copy_(u, a));
        break;
    case 2:
        CHECK(clt_view_as_real(z, &r));
        CHECK(clt_select(r, 1, 0, &v));
        CHECK(clt_mul_scalar_(v, 3.0));
        CHECK(clt_slice(r, 0, 2, 4, 1, &u));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 2, s22, cv, &c));
        CHECK(clt_sub_(u, c, 0.5));
        CHECK(clt_select(r, 0, 0, &a));
        CHECK(clt_tensor_from_host(dev, CLT_FLOAT64, 1, s2, r2v, &b));
        CHECK(clt_mul_(a, b));
        r = NULL;
        break;
    default:
        CHECK(clt_real(z, &re));
        CHECK(clt_slice(re, 0, 1, 4, 1, &v));
        CHECK(clt_mul_scalar_(v, -2.0));
        CHECK(clt_slice(v, 0, 1, 3, 1, &u));
        CHECK(clt_add_scalar_(u, 0.5));
        CHECK(clt_view_as_real(z, &a));
        CHECK(clt_view_as_complex(a, &b));
        CHECK(clt_select(b, 0, 0, &im));
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 0, NULL, &k, &c));
        CHECK(clt_mul_(im, c));
        break;
    }
    if (r == NULL)
        CHECK(clt_view_as_real(z, &r));
    CHECK(clt_abs(z, &a));
    CHECK(clt_mul(a, a, &b));
    CHECK(clt_sum(b, &l1));
    CHECK(clt_mul(r, r, &u));
    CHECK(clt_mul(u, r, &v));
    CHECK(clt_sum(v, &l2));
    CHECK(clt_add(l1, l2, &l));
    CHECK(clt_scope_keep(l));
    clt_scope_end();
    return l;
}

static double cview_value(clt_device *dev, int which, const double complex *v, int64_t n)
{
    clt_tensor *z = NULL;
    CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, v, &z));
    clt_tensor *l = cview_loss(dev, which, z);
    double x = 0;
    CHECK(clt_tensor_item(l, &x));
    clt_tensor_free(l);
    clt_tensor_free(z);
    return x;
}

/* torch 1.13 records these on z's history (CopySlices); the gradient of the
 * complex leaf, dL/dx + i dL/dy, against central differences of its parts
 * (each L evaluated with grad mode off, where the ops run unrecorded). */
Test(complexgrad, inplace_on_complex_views_against_central_differences)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 4;
    double complex v[4] = {0.25 - 0.8 * I, -0.35 + 0.45 * I, 1.1 - 0.3 * I, -0.9 + 1.3 * I};
    for (int which = 0; which < 4; which++) {
        clt_tensor *z = NULL, *g = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, v, &z));
        CHECK(clt_set_requires_grad(z, 1));
        clt_tensor *l = cview_loss(dev, which, z);
        CHECK(clt_backward(l, NULL, 0));
        CHECK(clt_grad(z, &g));
        cr_assert_not_null(g, "scene %d: no gradient", which);
        cr_assert_eq(clt_tensor_dtype(g), CLT_COMPLEX128);
        double complex got[4];
        CHECK(clt_tensor_read(g, got, sizeof got));
        int was = clt_set_grad_enabled(0);
        for (int k = 0; k < 4; k++) {
            double d[2];
            for (int part = 0; part < 2; part++) {
                double complex p[4], m[4], h = part ? 1e-6 * I : 1e-6;
                memcpy(p, v, sizeof p);
                memcpy(m, v, sizeof m);
                p[k] += h;
                m[k] -= h;
                d[part] = (cview_value(dev, which, p, n) - cview_value(dev, which, m, n)) / 2e-6;
            }
            cr_assert(fabs(creal(got[k]) - d[0]) <= 1e-6 * (1 + fabs(d[0])) &&
                          fabs(cimag(got[k]) - d[1]) <= 1e-6 * (1 + fabs(d[1])),
                      "scene %d element %d: autograd %g%+gi, differences %g%+gi", which, k,
                      creal(got[k]), cimag(got[k]), d[0], d[1]);
        }
        clt_set_grad_enabled(was);
        clt_tensor_free(g);
        clt_tensor_free(l);
        clt_tensor_free(z);
    }
}

/* Real leaves x (4x2) and a (4), through gradcheck:
 * kind 0: y = 1.5 x; c = view_as_complex(y); c *= view_as_complex(w)
 *   (constant); c.real *= a; c.imag[:2].copy_(a[2:]); y^3 (the real base);
 * kind 1: z = view_as_complex(x).clone(); z.real += a / 2; z.imag *= a;
 *   view_as_real(z * z). */
static clt_status cview_real_fn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const int kind = *(const int *)ctx;
    const int64_t s42[2] = {4, 2};
    const double wv[8] = {0.5, -1.0, 1.5, 0.25, -0.75, 2.0, 1.0, 0.5};
    clt_tensor *y = NULL, *c = NULL, *w = NULL, *wc = NULL, *re = NULL, *im = NULL, *u = NULL,
               *v = NULL, *t = NULL;
    clt_status st = CLT_OK;
    CHECK(clt_scope_begin());
    if (kind == 0) {
        CHECK(clt_mul_scalar(in[0], 1.5, &y));
        CHECK(clt_view_as_complex(y, &c));
        CHECK(clt_tensor_from_host(get_device("cpu"), CLT_FLOAT64, 2, s42, wv, &w));
        CHECK(clt_view_as_complex(w, &wc));
        CHECK(clt_mul_(c, wc));
        CHECK(clt_real(c, &re));
        CHECK(clt_mul_(re, in[1]));
        CHECK(clt_imag(c, &im));
        CHECK(clt_slice(im, 0, 0, 2, 1, &u));
        CHECK(clt_slice(in[1], 0, 2, 4, 1, &v));
        CHECK(clt_copy_(u, v));
        CHECK(clt_mul(y, y, &t));
        st = clt_mul(t, y, out);
    } else {
        CHECK(clt_view_as_complex(in[0], &c));
        CHECK(clt_clone(c, &y));
        CHECK(clt_real(y, &re));
        CHECK(clt_add_(re, in[1], 0.5));
        CHECK(clt_imag(y, &im));
        CHECK(clt_mul_(im, in[1]));
        CHECK(clt_mul(y, y, &t));
        st = clt_view_as_real(t, out);
    }
    if (st == CLT_OK)
        CHECK(clt_scope_keep(*out));
    clt_scope_end();
    return st;
}

Test(complexgrad, inplace_on_complex_views_of_real_leaves_gradcheck)
{
    clt_device *dev = get_device("cpu");
    const double xv[8] = {0.3, -0.6, 1.2, 0.45, -0.8, 0.9, 0.15, -1.1};
    const double av[4] = {0.7, -1.3, 0.4, 1.6};
    gc_in ins[2] = {{2, {4, 2}, xv, 1}, {1, {4}, av, 1}};
    for (int kind = 0; kind < 2; kind++)
        gradcheck(dev, cview_real_fn, &kind, 2, ins);
}

/* Writing a view of another dtype bumps the storage's version, its base's:
 * a node that saved the base (z * z, abs(z)) then refuses backward, as
 * torch's "modified by an inplace operation". */
Test(complexgrad, inplace_on_a_complex_view_is_seen_by_saved_bases)
{
    clt_device *dev = get_device("cpu");
    int64_t n = 3;
    double complex v[3] = {1 - I, 0.5 + 2 * I, -1.5};
    for (int saver = 0; saver < 2; saver++) {
        clt_tensor *zl = NULL, *z = NULL, *p = NULL, *pa = NULL, *r = NULL, *re = NULL,
                   *s = NULL;
        CHECK(clt_tensor_from_host(dev, CLT_COMPLEX128, 1, &n, v, &zl));
        CHECK(clt_set_requires_grad(zl, 1));
        CHECK(clt_mul_scalar(zl, 1.0, &z));
        if (saver == 0) {
            CHECK(clt_mul(z, z, &p));
            CHECK(clt_abs(p, &pa));
        } else {
            CHECK(clt_abs(z, &pa));
        }
        CHECK(clt_view_as_real(z, &r));
        CHECK(clt_select(r, 1, 1, &re)); /* z.imag through view_as_real */
        CHECK(clt_mul_scalar_(re, 2.0));
        CHECK(clt_sum(pa, &s));
        assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                     "modified by an in-place operation");
        clt_tensor *all[] = {zl, z, p, pa, r, re, s};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++)
            clt_tensor_free(all[k]);
    }
}
