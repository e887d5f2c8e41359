/* test_parametrize.c: torch.nn.utils.parametrize with the caller's
 * functions (values, state names, right_inverse, chains, cached(),
 * removal) and parametrizations.orthogonal's maps against host
 * references in float64 (Gram-Schmidt, a Taylor series of exp), with
 * gradients against finite differences of the loss. */
#include "helpers.h"

#include <stdio.h>

enum { N = 2 };

static clt_device *dev;

static void setup(void)
{
    dev = get_device("cpu");
}

TestSuite(parametrize, .init = setup);

static void put(clt_tensor *t, const double *v, size_t bytes)
{
    int was = clt_set_grad_enabled(0);
    CHECK(clt_tensor_write(t, v, bytes));
    clt_set_grad_enabled(was);
}

/* A float64 Linear(in, out) with weight w[k] = f(k) and bias b[k]. */
static clt_module *linear64(int64_t in, int64_t out, double *w, double *b)
{
    clt_module *m = NULL;
    CHECK(clt_linear(dev, in, out, 1, NULL, &m));
    CHECK(clt_module_to_dtype(m, CLT_FLOAT64));
    for (int k = 0; k < out * in; k++)
        w[k] = 0.4 * sin(1.3 * k + 0.7) + (k % (in + 1) == 0 ? 0.9 : 0.0);
    for (int k = 0; k < out; k++)
        b[k] = 0.1 * k - 0.2;
    put(clt_module_param(m, "weight"), w, sizeof(double) * (size_t)(out * in));
    put(clt_module_param(m, "bias"), b, sizeof(double) * (size_t)out);
    return m;
}

static void assert_values_at(int line, const clt_tensor *t, const double *want, size_t n,
                             double tol)
{
    cr_assert_eq((size_t)clt_tensor_numel(t), n, "line %d: numel %lld, want %zu", line,
                 (long long)clt_tensor_numel(t), n);
    double *got = read_as_f64(t);
    for (size_t k = 0; k < n; k++)
        cr_assert(fabs(got[k] - want[k]) <= tol * (1.0 + fabs(want[k])),
                  "line %d: element %zu: %.12g, want %.12g", line, k, got[k], want[k]);
    free(got);
}
#define assert_values(...) assert_values_at(__LINE__, __VA_ARGS__)

static void assert_names(const clt_module *m, const char *const *want, size_t n)
{
    clt_named_tensor *st = NULL;
    size_t got = 0;
    CHECK(clt_module_state(m, &st, &got));
    cr_assert_eq(got, n, "%zu state entries, want %zu", got, n);
    for (size_t k = 0; k < n; k++)
        cr_assert_str_eq(st[k].name, want[k]);
    clt_free(st);
}

/* sum(y * G), G fixed, of m(x). */
static clt_tensor *weighted_loss(const clt_tensor *y)
{
    int64_t n = clt_tensor_numel(y);
    double *g = malloc((size_t)n * sizeof *g);
    for (int64_t k = 0; k < n; k++)
        g[k] = 0.3 + 0.17 * (double)k - 0.05 * (double)(k * k % 7);
    clt_tensor *gt = tensor_of(dev, CLT_FLOAT64, clt_tensor_ndim(y), clt_tensor_shape(y), g);
    free(g);
    clt_tensor *p = NULL, *l = NULL;
    CHECK(clt_mul(y, gt, &p));
    CHECK(clt_sum(p, &l));
    clt_tensor_free(p);
    clt_tensor_free(gt);
    return l;
}

static double loss_value(clt_module *m, const clt_tensor *x)
{
    int was = clt_set_grad_enabled(0);
    clt_tensor *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor *l = weighted_loss(y);
    double v;
    CHECK(clt_tensor_read(l, &v, sizeof v));
    clt_tensor_free(l);
    clt_tensor_free(y);
    clt_set_grad_enabled(was);
    return v;
}

/* The gradient of the loss in p (after one backward) against central
 * differences. */
static void check_grad_fd(clt_module *m, const clt_tensor *x, clt_tensor *p, double tol)
{
    clt_tensor *y = NULL, *g = NULL;
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor *loss = weighted_loss(y);
    CHECK(clt_backward(loss, NULL, 0));
    clt_tensor_free(loss);
    clt_tensor_free(y);
    size_t n = (size_t)clt_tensor_numel(p);
    CHECK(clt_grad(p, &g));
    cr_assert_not_null(g, "original has no gradient");
    double *an = read_as_f64(g), *v = read_as_f64(p);
    clt_tensor_free(g);
    const double eps = 1e-6;
    for (size_t k = 0; k < n; k++) {
        double keep = v[k];
        v[k] = keep + eps;
        put(p, v, n * sizeof *v);
        double lp = loss_value(m, x);
        v[k] = keep - eps;
        put(p, v, n * sizeof *v);
        double lm = loss_value(m, x);
        v[k] = keep;
        put(p, v, n * sizeof *v);
        double num = (lp - lm) / (2 * eps);
        cr_assert(fabs(num - an[k]) <= tol * (1 + fabs(num)), "element %zu: %.10g, fd %.10g",
                  k, an[k], num);
    }
    free(an);
    free(v);
    CHECK(clt_zero_grad(p, 1));
}

static clt_tensor *input64(int64_t in, unsigned seed)
{
    double *v = spread_doubles((size_t)(N * in), seed);
    clt_tensor *t = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){N, in}, v);
    free(v);
    return t;
}

/* ---- the caller's parametrizations ---------------------------------------------- */

typedef struct counter {
    int calls;
    double scale;
} counter;

/* X.triu() + X.triu(1)^T: a symmetric matrix. */
static clt_status symmetric(const clt_tensor *x, clt_tensor **out, void *user)
{
    counter *c = user;
    if (c)
        c->calls++;
    clt_tensor *u = NULL, *u1 = NULL, *t = NULL;
    clt_status st = clt_triu(x, 0, &u);
    if (st == CLT_OK)
        st = clt_triu(x, 1, &u1);
    if (st == CLT_OK)
        st = clt_transpose(u1, 0, 1, &t);
    if (st == CLT_OK)
        st = clt_add(u, t, out);
    clt_tensor_free(u);
    clt_tensor_free(u1);
    clt_tensor_free(t);
    return st;
}

static clt_status scale_fwd(const clt_tensor *x, clt_tensor **out, void *user)
{
    return clt_mul_scalar(x, ((counter *)user)->scale, out);
}

static clt_status scale_inv(const clt_tensor *x, clt_tensor **out, void *user)
{
    return clt_mul_scalar(x, 1.0 / ((counter *)user)->scale, out);
}

static clt_status bad_shape(const clt_tensor *x, clt_tensor **out, void *user)
{
    (void)user;
    return clt_sum_dim(x, 0, 0, out);
}

static void host_symmetric(const double *w, int64_t n, double *s)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            s[i * n + j] = j >= i ? w[i * n + j] : w[j * n + i];
}

Test(parametrize, a_symmetric_weight_values_names_gradients_and_removal)
{
    double w[9], b[3], s[9];
    clt_module *m = linear64(3, 3, w, b);
    clt_tensor *orig = clt_module_param(m, "weight");
    counter c = {0, 1.0};
    clt_parametrization p = {symmetric, NULL, &c};
    cr_assert_eq(clt_is_parametrized(m, NULL), 0);
    CHECK(clt_register_parametrization(m, "weight", &p, 0));
    cr_assert_eq(clt_is_parametrized(m, "weight"), 1);
    cr_assert_eq(clt_is_parametrized(m, NULL), 1);
    cr_assert_eq(clt_is_parametrized(m, "bias"), 0);
    const char *names[] = {"bias", "parametrizations.weight.original"};
    assert_names(m, names, 2);
    cr_assert_eq(clt_module_param(m, "parametrizations.weight.original"), orig,
                 "original is the parameter's own handle");
    host_symmetric(w, 3, s);
    assert_values(clt_module_param(m, "weight"), s, 9, 1e-14);
    assert_values(orig, w, 9, 0);
    cr_assert_eq(clt_module_num_parameters(m), 12);
    /* the forward uses the symmetric weight; gradients reach original */
    clt_tensor *x = input64(3, 5), *y = NULL;
    CHECK(clt_module_forward(m, x, &y));
    double *xv = read_as_f64(x), ref[N * 3];
    for (int n = 0; n < N; n++)
        for (int o = 0; o < 3; o++) {
            ref[n * 3 + o] = b[o];
            for (int i = 0; i < 3; i++)
                ref[n * 3 + o] += xv[n * 3 + i] * s[o * 3 + i];
        }
    assert_values(y, ref, N * 3, 1e-13);
    free(xv);
    clt_tensor_free(y);
    check_grad_fd(m, x, orig, 1e-6);
    /* removed, leaving the symmetric values in the same handle */
    double w2[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    put(orig, w2, sizeof w2);
    CHECK(clt_remove_parametrizations(m, "weight", 1));
    cr_assert_eq(clt_is_parametrized(m, NULL), 0);
    cr_assert_eq(clt_module_param(m, "weight"), orig);
    host_symmetric(w2, 3, s);
    assert_values(orig, s, 9, 0);
    cr_assert(clt_requires_grad(orig));
    const char *back[] = {"weight", "bias"};
    assert_names(m, back, 2);
    assert_error(clt_remove_parametrizations(m, "weight", 1), CLT_ERR_INVALID_ARGUMENT,
                 "does not have a parametrization on weight");
    /* leave_parametrized 0 gives original's own values back */
    CHECK(clt_register_parametrization(m, "weight", &p, 0));
    put(orig, w2, sizeof w2);
    CHECK(clt_remove_parametrizations(m, "weight", 0));
    assert_values(clt_module_param(m, "weight"), w2, 9, 0);
    clt_tensor_free(x);
    clt_module_free(m);
}

Test(parametrize, right_inverse_chains_and_cached)
{
    double w[12], b[4];
    clt_module *m = linear64(3, 4, w, b);
    counter two = {0, 2.0}, sym = {0, 1.0};
    clt_parametrization p = {scale_fwd, scale_inv, &two};
    CHECK(clt_register_parametrization(m, "weight", &p, 0));
    /* original = right_inverse(weight) = w / 2; the weight is w again */
    double half[12];
    for (int k = 0; k < 12; k++)
        half[k] = w[k] / 2;
    assert_values(clt_module_param(m, "parametrizations.weight.original"), half, 12, 1e-15);
    assert_values(clt_module_param(m, "weight"), w, 12, 1e-15);
    /* a second one is appended: 2 * original, then * 2 again */
    clt_parametrization q = {scale_fwd, NULL, &two};
    CHECK(clt_register_parametrization(m, "weight", &q, 0));
    double dbl[12];
    for (int k = 0; k < 12; k++)
        dbl[k] = 2 * w[k];
    assert_values(clt_module_param(m, "weight"), dbl, 12, 1e-15);
    clt_tensor *x = input64(3, 9), *y = NULL;
    check_grad_fd(m, x, clt_module_param(m, "parametrizations.weight.original"), 1e-6);
    clt_module_free(m);
    /* cached(): computed once for two forwards, each time outside */
    double w3[9], b3[3];
    m = linear64(3, 3, w3, b3);
    clt_parametrization ps = {symmetric, NULL, &sym};
    CHECK(clt_register_parametrization(m, "weight", &ps, 0));
    sym.calls = 0;
    clt_parametrize_cached_begin();
    clt_parametrize_cached_begin();
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor_free(y);
    clt_parametrize_cached_end();
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor_free(y);
    clt_parametrize_cached_end();
    cr_assert_eq(sym.calls, 1, "%d calls in a cached block", sym.calls);
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor_free(y);
    CHECK(clt_module_forward(m, x, &y));
    clt_tensor_free(y);
    cr_assert_eq(sym.calls, 3, "%d calls", sym.calls);
    clt_parametrize_cached_end(); /* unbalanced: nothing */
    /* a clone carries the parametrization */
    clt_module *copy = NULL;
    CHECK(clt_module_clone(m, NULL, &copy));
    cr_assert_eq(clt_is_parametrized(copy, "weight"), 1);
    double s3[9];
    host_symmetric(w3, 3, s3);
    assert_values(clt_module_param(copy, "weight"), s3, 9, 1e-15);
    clt_module_free(copy);
    clt_tensor_free(x);
    clt_module_free(m);
}

Test(parametrize, refusals)
{
    double w[12], b[4];
    clt_module *m = linear64(3, 4, w, b);
    counter c = {0, 1.0};
    clt_parametrization p = {bad_shape, NULL, &c}, none = {NULL, NULL, NULL};
    assert_error(clt_register_parametrization(m, "weight", &p, 0), CLT_ERR_INVALID_ARGUMENT,
                 "may not change the dtype or the shape");
    cr_assert_eq(clt_is_parametrized(m, NULL), 0);
    const char *names[] = {"weight", "bias"};
    assert_names(m, names, 2);
    assert_error(clt_register_parametrization(m, "w", &p, 0), CLT_ERR_INVALID_ARGUMENT,
                 "no parameter or buffer with name 'w'");
    assert_error(clt_register_parametrization(m, "weight", &none, 0), CLT_ERR_NULL_ARGUMENT,
                 NULL);
    assert_error(clt_remove_parametrizations(m, "bias", 1), CLT_ERR_INVALID_ARGUMENT,
                 "does not have a parametrization on bias");
    CHECK(clt_weight_norm(m, NULL, 0));
    clt_parametrization sym = {symmetric, NULL, NULL};
    assert_error(clt_register_parametrization(m, "weight", &sym, 0), CLT_ERR_INVALID_ARGUMENT,
                 "reparametrized already");
    assert_error(clt_orthogonal(m, "bias", NULL, 1, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "Expected a matrix or batch of matrices");
    CHECK(clt_remove_weight_norm(m, NULL));
    assert_error(clt_orthogonal(m, NULL, "foo", 1, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "orthogonal_map has to be one of");
    assert_error(clt_orthogonal(m, "nope", NULL, 1, NULL), CLT_ERR_INVALID_ARGUMENT,
                 "has no parameter ot buffer");
    cr_assert_eq(clt_is_parametrized(m, NULL), 0);
    clt_module_free(m);
}

/* ---- orthogonal --------------------------------------------------------------- */

/* The Q of a tall A [n, k] (n >= k) with diag(R) > 0: Gram-Schmidt. */
static void host_q(const double *a, int64_t n, int64_t k, double *q)
{
    for (int64_t j = 0; j < k; j++) {
        for (int64_t i = 0; i < n; i++)
            q[i * k + j] = a[i * k + j];
        for (int pass = 0; pass < 2; pass++)
            for (int64_t l = 0; l < j; l++) {
                double d = 0;
                for (int64_t i = 0; i < n; i++)
                    d += q[i * k + l] * q[i * k + j];
                for (int64_t i = 0; i < n; i++)
                    q[i * k + j] -= d * q[i * k + l];
            }
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += q[i * k + j] * q[i * k + j];
        s = sqrt(s);
        for (int64_t i = 0; i < n; i++)
            q[i * k + j] /= s;
    }
}

/* exp of the n x n A by a Taylor series after scaling by 2^-8. */
static void host_expm(const double *a, int64_t n, double *e)
{
    double *s = malloc((size_t)(n * n) * sizeof *s), *t = malloc((size_t)(n * n) * sizeof *t);
    double *r = malloc((size_t)(n * n) * sizeof *r);
    for (int64_t i = 0; i < n * n; i++) {
        s[i] = a[i] / 256.0;
        e[i] = (i / n == i % n) ? 1.0 : 0.0;
        t[i] = e[i];
    }
    for (int term = 1; term < 30; term++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = 0;
                for (int64_t l = 0; l < n; l++)
                    v += t[i * n + l] * s[l * n + j];
                r[i * n + j] = v / term;
            }
        for (int64_t i = 0; i < n * n; i++) {
            t[i] = r[i];
            e[i] += r[i];
        }
    }
    for (int sq = 0; sq < 8; sq++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = 0;
                for (int64_t l = 0; l < n; l++)
                    v += e[i * n + l] * e[l * n + j];
                r[i * n + j] = v;
            }
        memcpy(e, r, (size_t)(n * n) * sizeof *e);
    }
    free(s);
    free(t);
    free(r);
}

/* householder's map reads sign(int(diag)): a diagonal of +-1 sits on the
 * step, so the finite differences are taken at 1.5 times it. */
static void push_diagonal(clt_tensor *p, int64_t rows, int64_t cols)
{
    double *v = read_as_f64(p);
    for (int64_t i = 0; i < rows && i < cols; i++)
        v[i * cols + i] *= 1.5;
    put(p, v, (size_t)(rows * cols) * sizeof *v);
    free(v);
}

/* Q^T Q = I for the weight [out, in] seen tall. */
static void assert_orthogonal(const clt_tensor *wt, int64_t out, int64_t in)
{
    double *w = read_as_f64(wt);
    int64_t n = out >= in ? out : in, k = out >= in ? in : out;
    for (int64_t a = 0; a < k; a++)
        for (int64_t c = 0; c < k; c++) {
            double d = 0;
            for (int64_t i = 0; i < n; i++)
                d += out >= in ? w[i * in + a] * w[i * in + c] : w[a * in + i] * w[c * in + i];
            cr_assert(fabs(d - (a == c ? 1.0 : 0.0)) < 1e-12, "Q^T Q [%lld, %lld] = %.15g",
                      (long long)a, (long long)c, d);
        }
    free(w);
}

Test(parametrize, orthogonal_with_trivialization)
{
    const char *maps[4] = {NULL, "matrix_exp", "cayley", "householder"};
    const int64_t shapes[3][2] = {{4, 4}, {5, 3}, {2, 4}};
    for (int s = 0; s < 3; s++)
        for (int mi = 0; mi < 4; mi++) {
            int64_t out = shapes[s][0], in = shapes[s][1];
            double w[20], b[5];
            clt_module *m = linear64(in, out, w, b);
            clt_generator *gen = NULL;
            CHECK(clt_generator_new(3, &gen));
            CHECK(clt_orthogonal(m, NULL, maps[mi], 1, gen));
            cr_assert_eq(clt_generator_offset(gen) != 0, out != in,
                         "a square weight needs no draws");
            const char *names[] = {"bias", "parametrizations.weight.original",
                                   "parametrizations.weight.0.base"};
            assert_names(m, names, 3);
            clt_tensor *weight = clt_module_param(m, "weight");
            assert_orthogonal(weight, out, in);
            /* original is -Id */
            double negid[20];
            for (int64_t i = 0; i < out; i++)
                for (int64_t j = 0; j < in; j++)
                    negid[i * in + j] = i == j ? -1.0 : 0.0;
            assert_values(clt_module_param(m, "parametrizations.weight.original"), negid,
                          (size_t)(out * in), 0);
            if (out == in) {
                /* the weight is W's Q (diag(R) > 0) */
                double q[16];
                host_q(w, out, in, q);
                assert_values(weight, q, 16, 1e-12);
            } else if (out > in) {
                /* its first columns span W's: the weight is W's Q up to base's completion */
                double q[15];
                host_q(w, out, in, q);
                assert_values(weight, q, 15, 1e-12);
            }
            clt_tensor *x = input64(in, 11);
            clt_tensor *o = clt_module_param(m, "parametrizations.weight.original");
            push_diagonal(o, out, in);
            check_grad_fd(m, x, o, 1e-5);
            clt_tensor_free(x);
            clt_generator_free(gen);
            clt_module_free(m);
        }
}

Test(parametrize, orthogonal_without_trivialization)
{
    /* matrix_exp: exp(tril(W) - tril(W)^T), original W itself */
    double w[16], b[4], a[16], e[16];
    clt_module *m = linear64(4, 4, w, b);
    clt_tensor *orig = clt_module_param(m, "weight");
    CHECK(clt_orthogonal(m, NULL, "matrix_exp", 0, NULL));
    const char *names[] = {"bias", "parametrizations.weight.original"};
    assert_names(m, names, 2);
    cr_assert_eq(clt_module_param(m, "parametrizations.weight.original"), orig);
    assert_values(orig, w, 16, 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            a[i * 4 + j] = (j <= i ? w[i * 4 + j] : 0.0) - (i <= j ? w[j * 4 + i] : 0.0);
    host_expm(a, 4, e);
    assert_values(clt_module_param(m, "weight"), e, 16, 1e-11);
    clt_tensor *x = input64(4, 13);
    check_grad_fd(m, x, orig, 1e-5);
    clt_module_free(m);
    /* cayley: (I - A/2)^-1 (I + A/2), orthogonal */
    m = linear64(4, 4, w, b);
    CHECK(clt_orthogonal(m, NULL, "cayley", 0, NULL));
    assert_orthogonal(clt_module_param(m, "weight"), 4, 4);
    check_grad_fd(m, x, clt_module_param(m, "parametrizations.weight.original"), 1e-5);
    clt_module_free(m);
    clt_tensor_free(x);
    /* householder: original the geqrf of W, the weight W's Q */
    for (int t = 0; t < 2; t++) {
        int64_t out = t ? 3 : 5, in = t ? 5 : 3;
        double w2[15], b2[5], q[15], wt[15];
        m = linear64(in, out, w2, b2);
        CHECK(clt_orthogonal(m, NULL, "householder", 0, NULL));
        assert_names(m, names, 2);
        if (out > in) {
            host_q(w2, out, in, q);
        } else {
            for (int64_t i = 0; i < out; i++)
                for (int64_t j = 0; j < in; j++)
                    wt[j * out + i] = w2[i * in + j];
            double qt[15];
            host_q(wt, in, out, qt);
            for (int64_t i = 0; i < out; i++)
                for (int64_t j = 0; j < in; j++)
                    q[i * in + j] = qt[j * out + i];
        }
        assert_values(clt_module_param(m, "weight"), q, 15, 1e-12);
        x = input64(in, 17);
        clt_tensor *o = clt_module_param(m, "parametrizations.weight.original");
        push_diagonal(o, out, in);
        check_grad_fd(m, x, o, 1e-5);
        clt_tensor_free(x);
        clt_module_free(m);
    }
}
