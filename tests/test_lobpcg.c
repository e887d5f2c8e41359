/* test_lobpcg.c: clt_lobpcg on symmetric matrices with known spectra
 * (host Jacobi eigenvalues): the k largest and smallest values, A X = B X
 * diag(E) and X^T B X = I for both methods, batched, with B, iK and drawn
 * X; the refusals; the gradient against finite differences in float64. */
#include "gradcheck.h"
#include "host_linalg.h"

static double urand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (double)((*seed >> 8) & 0xffff) / 32768.0 - 1.0;
}

/* batch symmetric m x m matrices Q^T Q / m + diag(0, 1, .., m - 1):
 * well-separated eigenvalues. */
static double *sym_matrices(int batch, int m, unsigned seed)
{
    double *a = malloc(sizeof(double) * (size_t)(batch * m * m)), q[400];
    for (int b = 0; b < batch; b++) {
        for (int i = 0; i < m * m; i++)
            q[i] = urand(&seed);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < m; j++) {
                double s = 0;
                for (int l = 0; l < m; l++)
                    s += q[l * m + i] * q[l * m + j];
                a[(b * m + i) * m + j] = s / m + (i == j ? i : 0);
            }
    }
    return a;
}

/* The eigenvalues of each batch matrix of a (B^-1/2 A B^-1/2 for the
 * diagonal bd when given), ascending, into w [batch * m]. */
static void ref_values(const double *a, const double *bd, int batch, int m, double *w)
{
    double c[400];
    for (int b = 0; b < batch; b++) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < m; j++)
                c[i * m + j] = a[(b * m + i) * m + j] /
                               (bd ? sqrt(bd[i] * bd[j]) : 1.0);
        host_eigvals(c, m, w + b * m);
    }
}

/* E against the k largest or smallest reference values, A X = B X diag(E)
 * and X^T B X = I (bd: B's diagonal, or NULL for I). */
static void check_pairs(const clt_tensor *e, const clt_tensor *x, const double *a,
                        const double *bd, int batch, int m, int k, int largest, double tol)
{
    double *ge = read_as_f64(e), *gx = read_as_f64(x), w[400];
    ref_values(a, bd, batch, m, w);
    for (int b = 0; b < batch; b++) {
        double scale = fabs(w[b * m]) > fabs(w[b * m + m - 1]) ? fabs(w[b * m])
                                                               : fabs(w[b * m + m - 1]);
        for (int j = 0; j < k; j++) {
            double want = largest ? w[b * m + m - 1 - j] : w[b * m + j];
            cr_assert(fabs(ge[b * k + j] - want) <= tol * scale, "E[%d, %d] = %.10g, want %.10g",
                      b, j, ge[b * k + j], want);
        }
        const double *xb = gx + b * m * k, *ab = a + b * m * m;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < k; j++) {
                double ax = 0;
                for (int l = 0; l < m; l++)
                    ax += ab[i * m + l] * xb[l * k + j];
                double bx = (bd ? bd[i] : 1.0) * xb[i * k + j] * ge[b * k + j];
                cr_assert(fabs(ax - bx) <= sqrt(tol) * scale, "(AX - BXE)[%d, %d, %d] = %g", b,
                          i, j, ax - bx);
            }
        for (int p = 0; p < k; p++)
            for (int q = 0; q < k; q++) {
                double s = 0;
                for (int l = 0; l < m; l++)
                    s += xb[l * k + p] * (bd ? bd[l] : 1.0) * xb[l * k + q];
                cr_assert(fabs(s - (p == q)) <= sqrt(tol), "(X^T B X)[%d, %d, %d] = %g", b, p, q,
                          s);
            }
    }
    free(ge);
    free(gx);
}

Test(lobpcg, values_and_vectors)
{
    clt_device *dev = get_device("cpu");
    const char *methods[2] = {NULL, "basic"};
    for (int dt = 0; dt < 2; dt++)
        for (int me = 0; me < 2; me++)
            for (int largest = 0; largest < 2; largest++) {
                int batch = 2, m = 20, k = 2, n = 3;
                unsigned seed = 11u + (unsigned)(dt * 4 + me * 2 + largest);
                double *a = sym_matrices(batch, m, seed), *x0 = malloc(sizeof(double) * (size_t)(batch * m * n));
                for (int i = 0; i < batch * m * n; i++)
                    x0[i] = urand(&seed);
                clt_dtype t = dt ? CLT_FLOAT32 : CLT_FLOAT64;
                /* "basic" breaks down (a Cholesky failure, torch's too) near tight
                 * tolerances: it runs with the default tol */
                double tol = dt ? 1e-3 : 1e-10, small = 1e-13;
                const double *tl = dt || me ? NULL : &small;
                clt_tensor *ta = tensor_of(dev, t, 3, (int64_t[]){batch, m, m}, a);
                clt_tensor *tx = tensor_of(dev, t, 3, (int64_t[]){batch, m, n}, x0);
                clt_tensor *e = NULL, *v = NULL;
                /* k of the n columns of X; tol tight in float64 */
                CHECK(clt_lobpcg(ta, k, NULL, tx, 0, NULL, -1, tl, largest,
                                 methods[me], NULL, NULL, &e, &v));
                assert_shape(e, 2, (int64_t[]){batch, k});
                assert_shape(v, 3, (int64_t[]){batch, m, k});
                check_pairs(e, v, a, NULL, batch, m, k, largest, tl ? tol : (dt ? 1e-3 : 1e-6));
                clt_tensor_free(e);
                clt_tensor_free(v);
                clt_tensor_free(ta);
                clt_tensor_free(tx);
                free(a);
                free(x0);
            }
}

Test(lobpcg, generalized_preconditioned_and_drawn)
{
    clt_device *dev = get_device("cpu");
    clt_generator *gen = NULL;
    CHECK(clt_generator_new(5, &gen));
    int m = 9, k = 3;
    double *a = sym_matrices(1, m, 77u), bd[9], b[81], ik[81], small = 1e-12;
    for (int i = 0; i < m; i++)
        bd[i] = 1.0 + 0.25 * i;
    for (int i = 0; i < m * m; i++)
        b[i] = ik[i] = 0;
    for (int i = 0; i < m; i++) {
        b[i * m + i] = bd[i];
        ik[i * m + i] = 1.0 / (1.0 + a[i * m + i]);
    }
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, m}, a);
    clt_tensor *tb = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, m}, b);
    clt_tensor *tk = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, m}, ik);
    for (int me = 0; me < 2; me++)
        for (int largest = 0; largest < 2; largest++) {
            clt_tensor *e = NULL, *v = NULL;
            /* X drawn from gen, n = k; B; iK for "basic" */
            CHECK(clt_lobpcg(ta, k, tb, NULL, 0, me ? tk : NULL, -1, &small, largest,
                             me ? "basic" : "ortho", NULL, gen, &e, &v));
            assert_shape(e, 1, (int64_t[]){k});
            assert_shape(v, 2, (int64_t[]){m, k});
            check_pairs(e, v, a, bd, 1, m, k, largest, 1e-9);
            clt_tensor_free(e);
            clt_tensor_free(v);
        }
    /* the ortho parameters: dropping columns still converges */
    clt_lobpcg_ortho op = {.i_max = 4, .j_max = 2, .use_drop = 1};
    clt_tensor *e = NULL, *v = NULL;
    CHECK(clt_lobpcg(ta, 2, NULL, NULL, 3, NULL, -1, &small, 1, "ortho", &op, gen, &e, &v));
    check_pairs(e, v, a, NULL, 1, m, 2, 1, 1e-9);
    clt_tensor_free(e);
    clt_tensor_free(v);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tk);
    clt_generator_free(gen);
    free(a);
}

Test(lobpcg, refusals)
{
    clt_device *dev = get_device("cpu");
    clt_tensor *a = NULL, *ai = NULL, *a32 = NULL, *ns = NULL, *x = NULL, *e = NULL, *v = NULL;
    CHECK(clt_eye(dev, CLT_FLOAT64, 8, 8, &a));
    CHECK(clt_eye(dev, CLT_FLOAT32, 8, 8, &a32));
    CHECK(clt_zeros(dev, CLT_INT64, 2, (int64_t[]){8, 8}, &ai));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){8, 7}, &ns));
    CHECK(clt_zeros(dev, CLT_FLOAT64, 2, (int64_t[]){7, 2}, &x));
    e = v = (clt_tensor *)1;
    assert_error(clt_lobpcg(a, 3, NULL, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_INVALID_ARGUMENT,
                 "LPBPCG algorithm is not applicable when the number of A rows (=8) is smaller "
                 "than 3 x the number of requested eigenpairs (=3)");
    cr_assert(e == NULL && v == NULL);
    names_only("clt_lobpcg");
    assert_error(clt_lobpcg(ai, 1, NULL, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_DTYPE_UNSUPPORTED, "int64");
    assert_error(clt_lobpcg(a, 1, a32, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_DTYPE_MISMATCH, "B is float32");
    assert_error(clt_lobpcg(ns, 1, NULL, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_SHAPE_MISMATCH, "square");
    assert_error(clt_lobpcg(a, 1, NULL, x, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_SHAPE_MISMATCH, "X must be");
    assert_error(clt_lobpcg(a, 3, NULL, NULL, 2, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_INVALID_ARGUMENT, "k(=3)");
    assert_error(clt_lobpcg(a, 1, NULL, NULL, 0, NULL, 10, NULL, 1, "lanczos", NULL, NULL, &e,
                            &v),
                 CLT_ERR_INVALID_ARGUMENT, "\"lanczos\"");
    cr_assert(e == NULL && v == NULL);
    assert_error(clt_lobpcg(a, 1, NULL, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, NULL, &v),
                 CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert(v == NULL);
    /* linearly dependent columns of X: the Rayleigh-Ritz Cholesky fails,
     * named as this call's */
    double dep[16];
    for (int i = 0; i < 8; i++)
        dep[2 * i] = dep[2 * i + 1] = 1.0 + i;
    clt_tensor *xd = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){8, 2}, dep);
    assert_error(clt_lobpcg(a, 2, NULL, xd, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_INVALID_ARGUMENT, "not positive-definite");
    cr_assert(e == NULL && v == NULL);
    names_only("clt_lobpcg");
    clt_tensor_free(xd);
    /* inf in A: no endless iteration */
    clt_tensor *inf = NULL;
    CHECK(clt_full(dev, CLT_FLOAT64, 2, (int64_t[]){8, 8}, INFINITY, &inf));
    assert_error(clt_lobpcg(inf, 1, NULL, NULL, 0, NULL, -1, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_INVALID_ARGUMENT, NULL);
    cr_assert(e == NULL && v == NULL);
    clt_device *other = second_device(dev);
    clt_tensor *b2 = NULL;
    CHECK(clt_eye(other, CLT_FLOAT64, 8, 8, &b2));
    assert_error(clt_lobpcg(a, 1, b2, NULL, 0, NULL, 10, NULL, 1, NULL, NULL, NULL, &e, &v),
                 CLT_ERR_DEVICE_MISMATCH, NULL);
    cr_assert(e == NULL && v == NULL);
    clt_tensor_free(b2);
    clt_tensor_free(inf);
    clt_tensor_free(a);
    clt_tensor_free(a32);
    clt_tensor_free(ai);
    clt_tensor_free(ns);
    clt_tensor_free(x);
}

/* ---- gradients ---------------------------------------------------------------------- */

typedef struct lob_ctx {
    int largest;
    const char *method;
    const double *x0;
} lob_ctx;

/* E and X * X (whose sign does not matter) of lobpcg(A, k = 2) from a fixed
 * X, side by side: [m + 1, 2]. */
static clt_status lob_fn(clt_tensor *const *in, clt_tensor **out, const void *ctx)
{
    const lob_ctx *c = ctx;
    double tol = 1e-10;
    clt_tensor *x = NULL, *e = NULL, *v = NULL, *vv = NULL, *e2 = NULL, *at = NULL, *s = NULL,
               *a = NULL;
    clt_status st = clt_tensor_from_host(clt_tensor_device(in[0]), CLT_FLOAT64, 2,
                                         (int64_t[]){6, 2}, c->x0, &x);
    /* (A + A^T) / 2: the finite differences move one element, which leaves
     * A symmetric only through this */
    if (st == CLT_OK)
        st = clt_transpose(in[0], 0, 1, &at);
    if (st == CLT_OK)
        st = clt_add(in[0], at, &s);
    if (st == CLT_OK)
        st = clt_mul_scalar(s, 0.5, &a);
    if (st == CLT_OK)
        st = clt_lobpcg(a, 2, NULL, x, 0, NULL, -1, &tol, c->largest, c->method, NULL,
                        NULL, &e, &v);
    if (st == CLT_OK)
        st = clt_mul(v, v, &vv);
    if (st == CLT_OK)
        st = clt_unsqueeze(e, 0, &e2);
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *const[]){e2, vv}, 2, 0, out);
    clt_tensor_free(x);
    clt_tensor_free(e);
    clt_tensor_free(v);
    clt_tensor_free(vv);
    clt_tensor_free(e2);
    clt_tensor_free(at);
    clt_tensor_free(s);
    clt_tensor_free(a);
    return st;
}

Test(lobpcg, gradient_against_finite_differences)
{
    clt_device *dev = get_device("cpu");
    double *a = sym_matrices(1, 6, 3u), x0[12];
    unsigned seed = 4u;
    for (int i = 0; i < 12; i++)
        x0[i] = urand(&seed);
    gc_in in = {2, {6, 6}, a, 1};
    for (int largest = 0; largest < 2; largest++) {
        lob_ctx c = {largest, NULL, x0};
        gradcheck_tol(dev, lob_fn, &c, 1, &in, 1e-4, 1e-4, 1e-5);
    }
    /* the grad_fn, and B's refusal at backward time */
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){6, 6}, a), *tb = NULL, *e = NULL,
               *v = NULL, *s = NULL;
    CHECK(clt_eye(dev, CLT_FLOAT64, 6, 6, &tb));
    CHECK(clt_set_requires_grad(ta, 1));
    CHECK(clt_lobpcg(ta, 1, NULL, NULL, 0, NULL, 50, NULL, 1, NULL, NULL, NULL, &e, &v));
    cr_assert_str_eq(clt_grad_fn_name(e), "LOBPCGAutogradFunctionBackward");
    clt_tensor_free(e);
    clt_tensor_free(v);
    CHECK(clt_lobpcg(ta, 1, tb, NULL, 0, NULL, 50, NULL, 1, NULL, NULL, NULL, &e, &v));
    CHECK(clt_sum(e, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "lobpcg.backward does not support backward with B != I yet.");
    clt_tensor_free(s);
    clt_tensor_free(e);
    clt_tensor_free(v);
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    free(a);
}

/* ---- a sparse A (and B) ------------------------------------------------------------- */

/* s (released here) of a dense t in the layout lay (blocks of 3 x 3). */
static clt_sparse *sparse_of(const clt_tensor *t, int lay)
{
    clt_sparse *s = NULL;
    const int64_t bs[2] = {3, 3};
    switch (lay) {
    case 0: CHECK(clt_tensor_to_sparse(t, 2, &s)); break;
    case 1: CHECK(clt_tensor_to_sparse_csr(t, &s)); break;
    case 2: CHECK(clt_tensor_to_sparse_csc(t, &s)); break;
    case 3: CHECK(clt_tensor_to_sparse_bsr(t, bs, &s)); break;
    default: CHECK(clt_tensor_to_sparse_bsc(t, bs, &s)); break;
    }
    return s;
}

/* got and want elementwise within rtol of want's largest magnitude; for
 * vectors (sq) their squares, whose signs do not matter. */
static void assert_near(const clt_tensor *got, const clt_tensor *want, int sq, double rtol,
                        const char *what)
{
    int64_t n = clt_tensor_numel(want);
    cr_assert_eq(clt_tensor_numel(got), n, "%s: %lld values, want %lld", what,
                 (long long)clt_tensor_numel(got), (long long)n);
    double *g = read_as_f64(got), *w = read_as_f64(want), big = 0;
    for (int64_t i = 0; i < n; i++)
        big = fabs(w[i]) > big ? fabs(w[i]) : big;
    for (int64_t i = 0; i < n; i++) {
        double a = sq ? g[i] * g[i] : g[i], b = sq ? w[i] * w[i] : w[i];
        cr_assert(fabs(a - b) <= rtol * (big > 1 ? big : 1), "%s [%lld]: %.12g, want %.12g",
                  what, (long long)i, a, b);
    }
    free(g);
    free(w);
}

/* every layout, both methods, B: the steps of the dense A's, to rounding
 * (a fixed X and niter), and converged pairs against the host's values */
Test(lobpcg, sparse_a_and_b_as_dense)
{
    clt_device *dev = get_device("cpu");
    int m = 12, k = 2, n = 3;
    double *a = sym_matrices(1, m, 21u), x0[36], bd[144] = {0}, small = 1e-12;
    /* a sparse pattern, symmetric: entries with (i + 2 j + 2 i j) % 3 zeroed
     * off the diagonal */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            if (i != j && (i + j + 2 * i * j) % 3 == 0)
                a[i * m + j] = 0;
    double bdiag[12];
    for (int i = 0; i < m; i++)
        bd[i * m + i] = bdiag[i] = 1.0 + 0.125 * i;
    unsigned seed = 9u;
    for (int i = 0; i < m * n; i++)
        x0[i] = urand(&seed);
    clt_tensor *ta = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, m}, a),
               *tb = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, m}, bd),
               *tx = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, n}, x0);
    const char *methods[2] = {"ortho", "basic"};
    for (int lay = 0; lay < 5; lay++) {
        clt_sparse *sa = sparse_of(ta, lay), *sb = sparse_of(tb, lay);
        for (int me = 0; me < 2; me++)
            for (int withb = 0; withb < 2; withb++) {
                clt_tensor *e = NULL, *v = NULL, *de = NULL, *dv = NULL;
                CHECK(clt_lobpcg_sparse(sa, k, withb ? sb : NULL, tx, 0, NULL, 4, NULL, 1,
                                        methods[me], NULL, NULL, &e, &v));
                CHECK(clt_lobpcg(ta, k, withb ? tb : NULL, tx, 0, NULL, 4, NULL, 1, methods[me],
                                 NULL, NULL, &de, &dv));
                assert_shape(e, 1, (int64_t[]){k});
                assert_shape(v, 2, (int64_t[]){m, k});
                assert_near(e, de, 0, 1e-10, "sparse E");
                assert_near(v, dv, 1, 1e-8, "sparse X");
                clt_tensor_free(e);
                clt_tensor_free(v);
                clt_tensor_free(de);
                clt_tensor_free(dv);
            }
        /* to convergence: the host's values */
        clt_tensor *e = NULL, *v = NULL;
        CHECK(clt_lobpcg_sparse(sa, k, sb, tx, 0, NULL, -1, &small, lay % 2, NULL, NULL, NULL,
                                &e, &v));
        check_pairs(e, v, a, bdiag, 1, m, k, lay % 2, 1e-9);
        clt_tensor_free(e);
        clt_tensor_free(v);
        clt_sparse_free(sa);
        clt_sparse_free(sb);
    }
    clt_tensor_free(ta);
    clt_tensor_free(tb);
    clt_tensor_free(tx);
    free(a);
}

/* a sparse A that requires grad: torch's symmetrised iteration, the
 * grad_fn, and the backward refused as torch's ("does not support sparse
 * input yet"); the refusals of the sparse form */
Test(lobpcg, sparse_gradient_refused_and_refusals)
{
    clt_device *dev = get_device("cpu");
    int m = 9;
    double *a = sym_matrices(1, m, 5u), ns[81], x0[18];
    unsigned seed = 3u;
    for (int i = 0; i < m * m; i++)
        ns[i] = a[i] + (i % m > i / m ? 0.25 : 0); /* above the diagonal: not symmetric */
    for (int i = 0; i < 18; i++)
        x0[i] = urand(&seed);
    clt_tensor *tn = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, m}, ns),
               *tx = tensor_of(dev, CLT_FLOAT64, 2, (int64_t[]){m, 2}, x0), *tt = NULL,
               *sum = NULL, *half = NULL, *sym = NULL, *e = NULL, *v = NULL, *de = NULL,
               *dv = NULL, *s = NULL;
    CHECK(clt_transpose(tn, 0, 1, &tt));
    CHECK(clt_add(tn, tt, &sum));
    CHECK(clt_mul_scalar(sum, 0.5, &sym));
    /* without grad: A as given, as the dense A's */
    clt_sparse *sn = sparse_of(tn, 0);
    CHECK(clt_lobpcg_sparse(sn, 2, NULL, tx, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e, &v));
    CHECK(clt_lobpcg(tn, 2, NULL, tx, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &de, &dv));
    assert_near(e, de, 0, 1e-10, "sparse E, no grad");
    cr_assert_null(clt_grad_fn_name(e));
    clt_tensor *objs0[] = {e, v, de, dv};
    for (size_t i = 0; i < 4; i++)
        clt_tensor_free(objs0[i]);
    clt_sparse_free(sn);
    /* values that require grad: (A + A^T) / 2 */
    CHECK(clt_set_requires_grad(tn, 1));
    sn = sparse_of(tn, 1);
    CHECK(clt_lobpcg_sparse(sn, 2, NULL, tx, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e, &v));
    CHECK(clt_lobpcg(sym, 2, NULL, tx, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &de, &dv));
    assert_near(e, de, 0, 1e-10, "sparse E, symmetrised");
    assert_near(v, dv, 1, 1e-8, "sparse X, symmetrised");
    cr_assert_str_eq(clt_grad_fn_name(e), "LOBPCGAutogradFunctionBackward");
    CHECK(clt_sum(e, &s));
    assert_error(clt_backward(s, NULL, 0), CLT_ERR_INVALID_ARGUMENT,
                 "lobpcg.backward does not support sparse input yet");
    clt_tensor *g = NULL;
    CHECK(clt_grad(tn, &g));
    cr_assert_null(g);
    clt_sparse_free(sn);
    /* refusals: a hybrid or batched A, B of another shape, X of another
     * dtype, A of another device's B */
    clt_sparse *hy = NULL, *b3 = NULL, *small = NULL, *other = NULL;
    clt_tensor *t3 = NULL, *x32 = NULL, *eye4 = NULL, *eo = NULL;
    CHECK(clt_tensor_to_sparse(sym, 1, &hy));
    clt_tensor *e1 = (clt_tensor *)1, *v1 = (clt_tensor *)1;
    assert_error(clt_lobpcg_sparse(hy, 1, NULL, NULL, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e1,
                                   &v1),
                 CLT_ERR_SHAPE_MISMATCH, "2 sparse dimensions");
    cr_assert(e1 == NULL && v1 == NULL);
    names_only("clt_lobpcg_sparse");
    CHECK(clt_stack((const clt_tensor *const[]){sym, sym}, 2, 0, &t3));
    CHECK(clt_tensor_to_sparse_csr(t3, &b3));
    assert_error(clt_lobpcg_sparse(b3, 1, NULL, NULL, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e1,
                                   &v1),
                 CLT_ERR_SHAPE_MISMATCH, "no batch");
    CHECK(clt_eye(dev, CLT_FLOAT64, 4, 4, &eye4));
    CHECK(clt_tensor_to_sparse(eye4, 2, &small));
    sn = sparse_of(sym, 0);
    assert_error(clt_lobpcg_sparse(sn, 1, small, NULL, 0, NULL, 3, NULL, 1, NULL, NULL, NULL,
                                   &e1, &v1),
                 CLT_ERR_SHAPE_MISMATCH, "A and B must have the same shapes");
    CHECK(clt_to_dtype(tx, CLT_FLOAT32, &x32));
    assert_error(clt_lobpcg_sparse(sn, 1, NULL, x32, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e1,
                                   &v1),
                 CLT_ERR_DTYPE_MISMATCH, "X is float32");
    assert_error(clt_lobpcg_sparse(sn, 4, NULL, NULL, 0, NULL, 3, NULL, 1, NULL, NULL, NULL, &e1,
                                   &v1),
                 CLT_ERR_INVALID_ARGUMENT, "LPBPCG algorithm is not applicable");
    CHECK(clt_eye(second_device(dev), CLT_FLOAT64, m, m, &eo));
    CHECK(clt_tensor_to_sparse(eo, 2, &other));
    assert_error(clt_lobpcg_sparse(sn, 1, other, NULL, 0, NULL, 3, NULL, 1, NULL, NULL, NULL,
                                   &e1, &v1),
                 CLT_ERR_DEVICE_MISMATCH, NULL);
    assert_error(clt_lobpcg_sparse(NULL, 1, NULL, NULL, 0, NULL, 3, NULL, 1, NULL, NULL, NULL,
                                   &e1, &v1),
                 CLT_ERR_NULL_ARGUMENT, NULL);
    cr_assert(e1 == NULL && v1 == NULL);
    clt_sparse *sps[] = {sn, hy, b3, small, other};
    for (size_t i = 0; i < 5; i++)
        clt_sparse_free(sps[i]);
    clt_tensor *objs[] = {tn, tx, tt, sum, half, sym, e, v, de, dv, s, t3, x32, eye4, eo};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++)
        clt_tensor_free(objs[i]);
    free(a);
}
