/* test_lbfgs.c: LBFGS against a float64 host implementation of torch
 * 1.13's LBFGS.step and _strong_wolfe written here, on a quadratic and on
 * Rosenbrock's function (several steps, both line searches, a history
 * shorter than the iterations, tolerance exits), steps through a closure
 * on other optimizers, errors, and files resumed bit for bit. */
#include <stdio.h>

#include "helpers.h"
#include "scratch.h"

TestSuite(lbfgs, .init = scratch_make, .fini = scratch_remove);

enum { DIM = 6, HMAX = 64 };

/* ---- the functions (float64, host) --------------------------------------- */

typedef double (*host_fn)(const double *x, double *g);

/* 0.5 sum c x^2 + b x: minimum at -b / c. */
static const double QC[DIM] = {1.0, 3.0, 0.5, 2.0, 1.5, 4.0};
static const double QB[DIM] = {0.5, -1.0, 0.25, 1.0, -0.5, 0.2};
static double quadratic(const double *x, double *g)
{
    double f = 0;
    for (int i = 0; i < DIM; i++) {
        f += 0.5 * QC[i] * x[i] * x[i] + QB[i] * x[i];
        g[i] = QC[i] * x[i] + QB[i];
    }
    return f;
}

/* sum (1 - x_i)^2 + 100 (x_{i+1} - x_i^2)^2. */
static double rosenbrock(const double *x, double *g)
{
    double f = 0;
    for (int i = 0; i < DIM; i++)
        g[i] = 0;
    for (int i = 0; i + 1 < DIM; i++) {
        double a = 1 - x[i], b = x[i + 1] - x[i] * x[i];
        f += a * a + 100 * b * b;
        g[i] += -2 * a - 400 * b * x[i];
        g[i + 1] += 200 * b;
    }
    return f;
}

/* ---- the reference: torch 1.13's lbfgs.py in double ------------------------ */

typedef struct ref_opts {
    double lr;
    int max_iter, max_eval;
    double tolerance_grad, tolerance_change;
    int history_size, wolfe;
} ref_opts;

typedef struct ref {
    long func_evals, n_iter;
    double d[DIM], prev_g[DIM], t, H_diag, prev_loss;
    double dirs[HMAX][DIM], stps[HMAX][DIM], ro[HMAX];
    int m;
    host_fn f;
} ref;

static double vdot(const double *a, const double *b)
{
    double s = 0;
    for (int i = 0; i < DIM; i++)
        s += a[i] * b[i];
    return s;
}

static double vabsmax(const double *a, double scale)
{
    double m = 0;
    for (int i = 0; i < DIM; i++)
        m = fabs(a[i] * scale) > m ? fabs(a[i] * scale) : m;
    return m;
}

static double lesser(double a, double b)
{
    return b < a ? b : a;
}

static double greater(double a, double b)
{
    return b > a ? b : a;
}

/* f and g at x + t d (x unchanged). */
static double ref_eval(const ref *r, const double *x, double t, const double *d, double *g)
{
    double y[DIM];
    for (int i = 0; i < DIM; i++)
        y[i] = x[i] + t * d[i];
    return r->f(y, g);
}

static double ref_cubic(double x1, double f1, double g1, double x2, double f2, double g2,
                        const double *bounds)
{
    double lo = bounds ? bounds[0] : fmin(x1, x2), hi = bounds ? bounds[1] : fmax(x1, x2);
    double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2), d2s = d1 * d1 - g1 * g2;
    if (d2s < 0)
        return (lo + hi) / 2;
    double d2 = sqrt(d2s);
    double mp = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                         : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return lesser(greater(mp, lo), hi);
}

/* _strong_wolfe from x along d: returns the loss, g and *t at its point. */
static double ref_wolfe(ref *r, const double *x, double *t_io, const double *d, double f,
                        double *g, double gtd, double tol_change, int *evals)
{
    double t = *t_io, g_new[DIM], g_prev[DIM], bg[2][DIM], b[2], bf[2], bgtd[2] = {0, 0};
    double d_norm = vabsmax(d, 1);
    double f_new = ref_eval(r, x, t, d, g_new), gtd_new = vdot(g_new, d);
    int ls = 0, done = 0, nb = 0;
    *evals = 1;
    double t_prev = 0, f_prev = f, gtd_prev = gtd;
    memcpy(g_prev, g, sizeof g_prev);
    while (ls < 25) {
        if (f_new > f + 1e-4 * t * gtd || (ls > 1 && f_new >= f_prev)) {
            nb = 2;
            break;
        }
        if (fabs(gtd_new) <= -0.9 * gtd) {
            nb = 1, done = 1;
            break;
        }
        if (gtd_new >= 0) {
            nb = 2;
            break;
        }
        double bounds[2] = {t + 0.01 * (t - t_prev), t * 10}, tmp = t;
        t = ref_cubic(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds);
        t_prev = tmp, f_prev = f_new, gtd_prev = gtd_new;
        memcpy(g_prev, g_new, sizeof g_prev);
        f_new = ref_eval(r, x, t, d, g_new);
        ++*evals;
        gtd_new = vdot(g_new, d);
        ls++;
    }
    if (nb == 2) {
        b[0] = t_prev, b[1] = t, bf[0] = f_prev, bf[1] = f_new, bgtd[0] = gtd_prev;
        bgtd[1] = gtd_new;
        memcpy(bg[0], g_prev, sizeof bg[0]);
        memcpy(bg[1], g_new, sizeof bg[1]);
    } else if (nb == 1) {
        b[0] = b[1] = t, bf[0] = bf[1] = f_new;
        memcpy(bg[0], g_new, sizeof bg[0]);
    }
    if (ls == 25) {
        b[0] = 0, b[1] = t, bf[0] = f, bf[1] = f_new;
        memcpy(bg[0], g, sizeof bg[0]);
        memcpy(bg[1], g_new, sizeof bg[1]);
    }
    int low = bf[0] <= bf[1] ? 0 : 1, high = 1 - low, insuf = 0;
    while (!done && ls < 25) {
        if (fabs(b[1] - b[0]) * d_norm < tol_change)
            break;
        t = ref_cubic(b[0], bf[0], bgtd[0], b[1], bf[1], bgtd[1], NULL);
        double bmax = greater(b[0], b[1]), bmin = lesser(b[0], b[1]), eps = 0.1 * (bmax - bmin);
        if (lesser(bmax - t, t - bmin) < eps) {
            if (insuf || t >= bmax || t <= bmin) {
                t = fabs(t - bmax) < fabs(t - bmin) ? bmax - eps : bmin + eps;
                insuf = 0;
            } else {
                insuf = 1;
            }
        } else {
            insuf = 0;
        }
        f_new = ref_eval(r, x, t, d, g_new);
        ++*evals;
        gtd_new = vdot(g_new, d);
        ls++;
        if (f_new > f + 1e-4 * t * gtd || f_new >= bf[low]) {
            b[high] = t, bf[high] = f_new, bgtd[high] = gtd_new;
            memcpy(bg[high], g_new, sizeof bg[high]);
            low = bf[0] <= bf[1] ? 0 : 1, high = 1 - low;
        } else {
            if (fabs(gtd_new) <= -0.9 * gtd)
                done = 1;
            else if (gtd_new * (b[high] - b[low]) >= 0) {
                b[high] = b[low], bf[high] = bf[low], bgtd[high] = bgtd[low];
                memcpy(bg[high], bg[low], sizeof bg[high]);
            }
            b[low] = t, bf[low] = f_new, bgtd[low] = gtd_new;
            memcpy(bg[low], g_new, sizeof bg[low]);
        }
    }
    *t_io = b[low];
    memcpy(g, bg[low], sizeof bg[low]);
    return bf[low];
}

/* LBFGS.step(closure) on x; returns the first loss. */
static double ref_step(ref *r, const ref_opts *o, double *x)
{
    double g[DIM];
    double loss = r->f(x, g), orig = loss;
    int evals = 1;
    r->func_evals++;
    if (vabsmax(g, 1) <= o->tolerance_grad)
        return orig;
    for (int n_iter = 1; n_iter <= o->max_iter; n_iter++) {
        r->n_iter++;
        if (r->n_iter == 1) {
            for (int i = 0; i < DIM; i++)
                r->d[i] = -g[i];
            r->m = 0;
            r->H_diag = 1;
        } else {
            double y[DIM], s[DIM], q[DIM], al[HMAX];
            for (int i = 0; i < DIM; i++)
                y[i] = g[i] - r->prev_g[i], s[i] = r->d[i] * r->t;
            double ys = vdot(y, s);
            if (ys > 1e-10) {
                if (r->m == o->history_size) {
                    memmove(r->dirs, r->dirs[1], (size_t)(r->m - 1) * sizeof r->dirs[0]);
                    memmove(r->stps, r->stps[1], (size_t)(r->m - 1) * sizeof r->stps[0]);
                    memmove(r->ro, r->ro + 1, (size_t)(r->m - 1) * sizeof r->ro[0]);
                    r->m--;
                }
                cr_assert(r->m < HMAX, "the reference's history is full");
                memcpy(r->dirs[r->m], y, sizeof y);
                memcpy(r->stps[r->m], s, sizeof s);
                r->ro[r->m++] = 1 / ys;
                r->H_diag = ys / vdot(y, y);
            }
            for (int i = 0; i < DIM; i++)
                q[i] = -g[i];
            for (int k = r->m - 1; k >= 0; k--) {
                al[k] = vdot(r->stps[k], q) * r->ro[k];
                for (int i = 0; i < DIM; i++)
                    q[i] -= al[k] * r->dirs[k][i];
            }
            for (int i = 0; i < DIM; i++)
                r->d[i] = q[i] * r->H_diag;
            for (int k = 0; k < r->m; k++) {
                double be = vdot(r->dirs[k], r->d) * r->ro[k];
                for (int i = 0; i < DIM; i++)
                    r->d[i] += (al[k] - be) * r->stps[k][i];
            }
        }
        memcpy(r->prev_g, g, sizeof g);
        r->prev_loss = loss;
        if (r->n_iter == 1) {
            double sum = 0;
            for (int i = 0; i < DIM; i++)
                sum += fabs(g[i]);
            r->t = lesser(1., 1. / sum) * o->lr;
        } else {
            r->t = o->lr;
        }
        double gtd = vdot(g, r->d);
        if (gtd > -o->tolerance_change)
            break;
        int ls = 0, opt_cond = 0;
        if (o->wolfe) {
            loss = ref_wolfe(r, x, &r->t, r->d, loss, g, gtd, o->tolerance_change, &ls);
            for (int i = 0; i < DIM; i++)
                x[i] += r->t * r->d[i];
            opt_cond = vabsmax(g, 1) <= o->tolerance_grad;
        } else {
            for (int i = 0; i < DIM; i++)
                x[i] += r->t * r->d[i];
            if (n_iter != o->max_iter) {
                loss = r->f(x, g);
                opt_cond = vabsmax(g, 1) <= o->tolerance_grad;
                ls = 1;
            }
        }
        evals += ls;
        r->func_evals += ls;
        if (n_iter == o->max_iter || evals >= o->max_eval || opt_cond)
            break;
        if (vabsmax(r->d, r->t) <= o->tolerance_change)
            break;
        if (fabs(loss - r->prev_loss) < o->tolerance_change)
            break;
    }
    return orig;
}

/* ---- cltensor's side ------------------------------------------------------- */

/* The parameters: a [2] and a [2, 2] (one flat vector of DIM), on the
 * device, float64 unless dt says otherwise. */
typedef struct model {
    clt_device *dev;
    clt_dtype dt;
    clt_tensor *p[2];
    host_fn f;
    int calls;
    int fail_at; /* the call that fails (from 1), 0: none */
} model;

static const int64_t SHAPE0[1] = {2}, SHAPE1[2] = {2, 2};

static void model_make(model *m, clt_dtype dt, host_fn f, const double *x)
{
    float xf[DIM];
    for (int i = 0; i < DIM; i++)
        xf[i] = (float)x[i];
    memset(m, 0, sizeof *m);
    m->dev = get_device("cpu");
    m->dt = dt;
    m->f = f;
    const void *src = dt == CLT_FLOAT64 ? (const void *)x : (const void *)xf;
    size_t es = dt == CLT_FLOAT64 ? 8 : 4;
    CHECK(clt_tensor_from_host(m->dev, dt, 1, SHAPE0, src, &m->p[0]));
    CHECK(clt_tensor_from_host(m->dev, dt, 2, SHAPE1, (const char *)src + 2 * es, &m->p[1]));
    for (int k = 0; k < 2; k++)
        CHECK(clt_set_requires_grad(m->p[k], 1));
}

static void model_free(model *m)
{
    clt_tensor_free(m->p[0]);
    clt_tensor_free(m->p[1]);
}

static void model_read(const model *m, double *x)
{
    if (m->dt == CLT_FLOAT64) {
        CHECK(clt_tensor_read(m->p[0], x, 2 * sizeof *x));
        CHECK(clt_tensor_read(m->p[1], x + 2, 4 * sizeof *x));
        return;
    }
    float xf[DIM];
    CHECK(clt_tensor_read(m->p[0], xf, 2 * sizeof *xf));
    CHECK(clt_tensor_read(m->p[1], xf + 2, 4 * sizeof *xf));
    for (int i = 0; i < DIM; i++)
        x[i] = xf[i];
}

/* The closure: the host function's loss, and its gradient put into the
 * parameters' gradients by backward through sum(p G) (G the gradient as
 * a constant). */
static clt_status closure(void *user, double *loss)
{
    model *m = user;
    double x[DIM], g[DIM];
    float gf[DIM];
    if (++m->calls == m->fail_at) {
        clt_tensor *bad = NULL;
        return clt_reshape(m->p[0], 1, (const int64_t[]){5}, &bad); /* a real failure */
    }
    model_read(m, x);
    *loss = m->f(x, g);
    for (int i = 0; i < DIM; i++)
        gf[i] = (float)g[i];
    const void *src = m->dt == CLT_FLOAT64 ? (const void *)g : (const void *)gf;
    size_t es = m->dt == CLT_FLOAT64 ? 8 : 4;
    clt_status st = CLT_OK;
    CHECK(clt_scope_begin());
    for (int k = 0; k < 2 && st == CLT_OK; k++) {
        clt_tensor *G = NULL, *pg = NULL, *s = NULL;
        CHECK(clt_zero_grad(m->p[k], 1));
        CHECK(clt_tensor_from_host(m->dev, m->dt, k ? 2 : 1, k ? SHAPE1 : SHAPE0,
                                   (const char *)src + (k ? 2 * es : 0), &G));
        CHECK(clt_mul(m->p[k], G, &pg));
        CHECK(clt_sum(pg, &s));
        st = clt_backward(s, NULL, 0);
    }
    clt_scope_end();
    return st;
}

static void make_lbfgs(model *m, const ref_opts *o, clt_optimizer **opt)
{
    clt_lbfgs_opts lo = {o->lr,           o->max_iter,         o->max_eval,
                         o->tolerance_grad, o->tolerance_change, o->history_size,
                         o->wolfe ? "strong_wolfe" : NULL};
    CHECK(clt_lbfgs(m->p, 2, &lo, opt));
}

/* The counters a saved file holds. */
static void saved_counts(clt_optimizer *opt, clt_device *dev, long *func_evals, long *n_iter)
{
    clt_named_tensor *nt = NULL;
    size_t n = 0;
    CHECK(clt_optimizer_save(opt, tpath("counts.safetensors")));
    CHECK(clt_load_safetensors(tpath("counts.safetensors"), dev, &nt, &n));
    *func_evals = *n_iter = -1;
    for (size_t k = 0; k < n; k++) {
        int64_t v;
        if (strcmp(nt[k].name, "state.0.func_evals") == 0) {
            CHECK(clt_tensor_read(nt[k].tensor, &v, sizeof v));
            *func_evals = (long)v;
        } else if (strcmp(nt[k].name, "state.0.n_iter") == 0) {
            CHECK(clt_tensor_read(nt[k].tensor, &v, sizeof v));
            *n_iter = (long)v;
        }
    }
    clt_named_tensors_free(nt, n);
}

/* steps steps of ours and of the reference from x0; the parameters, the
 * losses and the counters compared after each, to rel_tol. */
static void against_reference(host_fn f, const double *x0, const ref_opts *o, int steps,
                              clt_dtype dt, double rel_tol, long *evals_out)
{
    model m;
    clt_optimizer *opt = NULL;
    ref r = {.f = f};
    double x[DIM], got[DIM];
    memcpy(x, x0, sizeof x);
    model_make(&m, dt, f, x0);
    make_lbfgs(&m, o, &opt);
    for (int s = 0; s < steps; s++) {
        double loss = NAN;
        double want = ref_step(&r, o, x);
        CHECK(clt_optimizer_step_closure(opt, closure, &m, &loss));
        cr_assert(fabs(loss - want) <= rel_tol * (1 + fabs(want)), "step %d: loss %.17g, want %.17g",
                  s, loss, want);
        model_read(&m, got);
        for (int i = 0; i < DIM; i++)
            cr_assert(fabs(got[i] - x[i]) <= rel_tol * (1 + fabs(x[i])),
                      "step %d: x[%d] = %.17g, want %.17g", s, i, got[i], x[i]);
        long fe, ni;
        saved_counts(opt, m.dev, &fe, &ni);
        cr_assert(fe == r.func_evals && ni == r.n_iter && m.calls == r.func_evals,
                  "step %d: func_evals %ld, n_iter %ld, closure calls %d; want %ld, %ld", s, fe,
                  ni, m.calls, r.func_evals, r.n_iter);
    }
    cr_assert_eq(clt_optimizer_steps(opt), steps);
    if (evals_out)
        *evals_out = r.func_evals;
    clt_optimizer_free(opt);
    model_free(&m);
}

static const double X_QUAD[DIM] = {1.0, -2.0, 0.5, 1.5, -1.0, 0.75};
static const double X_ROSEN[DIM] = {-1.2, 1.0, -0.5, 0.8, 1.3, -0.3};

Test(lbfgs, quadratic_fixed_steps)
{
    ref_opts o = {0.5, 5, 6, 1e-7, 1e-9, 3, 0};
    against_reference(quadratic, X_QUAD, &o, 4, CLT_FLOAT64, 1e-10, NULL);
}

Test(lbfgs, quadratic_strong_wolfe_to_the_tolerances)
{
    /* the defaults: converges within the first step's 20 iterations; then
     * a step stops at the gradient's tolerance after one evaluation */
    ref_opts o = {1, 20, 25, 1e-7, 1e-9, 100, 1};
    long evals = 0;
    against_reference(quadratic, X_QUAD, &o, 3, CLT_FLOAT64, 1e-9, &evals);
    cr_assert(evals > 3, "the run stopped at once (%ld evaluations)", evals);
}

Test(lbfgs, rosenbrock_strong_wolfe_short_history)
{
    ref_opts o = {1, 12, 15, 1e-7, 1e-9, 3, 1};
    against_reference(rosenbrock, X_ROSEN, &o, 4, CLT_FLOAT64, 1e-8, NULL);
}

Test(lbfgs, rosenbrock_fixed_steps_short_history)
{
    ref_opts o = {2e-3, 7, 9, 1e-7, 1e-9, 2, 0};
    against_reference(rosenbrock, X_ROSEN, &o, 3, CLT_FLOAT64, 1e-9, NULL);
}

Test(lbfgs, rosenbrock_float32)
{
    ref_opts o = {1, 6, 8, 1e-7, 1e-9, 4, 1};
    against_reference(rosenbrock, X_ROSEN, &o, 2, CLT_FLOAT32, 2e-3, NULL);
}

/* The two safetensors files hold the same entries, byte for byte. */
static void same_files(clt_device *dev, const char *p1, const char *p2)
{
    clt_named_tensor *e1 = NULL, *e2 = NULL;
    size_t n1 = 0, n2 = 0;
    CHECK(clt_load_safetensors(p1, dev, &e1, &n1));
    CHECK(clt_load_safetensors(p2, dev, &e2, &n2));
    cr_assert(n1 == n2 && n1 == 13, "%zu and %zu entries", n1, n2);
    for (size_t k = 0; k < n1; k++) {
        size_t b = clt_tensor_nbytes(e1[k].tensor);
        cr_assert_str_eq(e1[k].name, e2[k].name);
        cr_assert_eq(b, clt_tensor_nbytes(e2[k].tensor), "%s", e1[k].name);
        char *h1 = malloc(b + 1), *h2 = malloc(b + 1);
        CHECK(clt_tensor_read(e1[k].tensor, h1, b));
        CHECK(clt_tensor_read(e2[k].tensor, h2, b));
        cr_assert(memcmp(h1, h2, b) == 0, "%s differs", e1[k].name);
        free(h1);
        free(h2);
    }
    clt_named_tensors_free(e1, n1);
    clt_named_tensors_free(e2, n2);
}

/* The uninterrupted run (a, oa) and the resumed one (b, ob) go on three
 * steps together: the same losses, parameters and counters, bit for bit. */
static void continue_together(const ref_opts *o, model *a, clt_optimizer *oa, model *b,
                              clt_optimizer *ob)
{
    double xa[DIM], xb[DIM], la = 0, lb = 0;
    for (int s = 0; s < 3; s++) {
        CHECK(clt_optimizer_step_closure(oa, closure, a, &la));
        CHECK(clt_optimizer_step_closure(ob, closure, b, &lb));
        cr_assert(memcmp(&la, &lb, sizeof la) == 0, "step %d: loss %.17g resumed, %.17g", s, lb,
                  la);
    }
    model_read(a, xa);
    model_read(b, xb);
    cr_assert(memcmp(xa, xb, sizeof xa) == 0, "the resumed run is not the uninterrupted one");
    long fa, na, fb, nb;
    saved_counts(oa, a->dev, &fa, &na);
    saved_counts(ob, b->dev, &fb, &nb);
    cr_assert(fa == fb && na == nb && na > 2 * o->history_size, "counters %ld %ld, %ld %ld", fa,
              na, fb, nb);
}

/* A file saved mid-run and loaded into a new optimizer over parameters put
 * back to that point gives the bits of the uninterrupted run: the history
 * (shifted: history_size below the pairs made), d, t, H_diag, prev_loss
 * and the counters come back. */
static void resume_bit_for_bit(const ref_opts *o, host_fn f, const double *x0)
{
    model a, b;
    clt_optimizer *oa = NULL, *ob = NULL;
    double xb[DIM], la = 0;
    model_make(&a, CLT_FLOAT64, f, x0);
    make_lbfgs(&a, o, &oa);
    for (int s = 0; s < 2; s++)
        CHECK(clt_optimizer_step_closure(oa, closure, &a, &la));
    CHECK(clt_optimizer_save(oa, tpath("mid.safetensors")));
    model_read(&a, xb);
    /* another optimizer with other settings, which the file's replace */
    model_make(&b, CLT_FLOAT64, f, xb);
    clt_lbfgs_opts other = CLT_LBFGS_DEFAULTS;
    CHECK(clt_lbfgs(b.p, 2, &other, &ob));
    CHECK(clt_optimizer_load(ob, tpath("mid.safetensors")));
    CHECK(clt_optimizer_save(ob, tpath("again.safetensors")));
    same_files(a.dev, tpath("mid.safetensors"), tpath("again.safetensors"));
    continue_together(o, &a, oa, &b, ob);
    cr_assert_eq(clt_optimizer_steps(ob), 5);
    clt_optimizer_free(oa);
    clt_optimizer_free(ob);
    model_free(&a);
    model_free(&b);
}

Test(lbfgs, file_resumes_bit_for_bit)
{
    ref_opts wolfe = {1, 4, 6, 1e-7, 1e-9, 2, 1}, fixed = {2e-3, 4, 6, 1e-7, 1e-9, 2, 0};
    resume_bit_for_bit(&wolfe, rosenbrock, X_ROSEN);
    resume_bit_for_bit(&fixed, rosenbrock, X_ROSEN);
}

/* The state saved in a general checkpoint (torch.save's {'optimizer':
 * opt.state_dict()}) mid-run and loaded into an LBFGS made with the
 * defaults over parameters put back to that point gives the bits of the
 * uninterrupted run, in float64 and float32 (ro and H_diag, which the
 * file holds in the parameters' dtype as torch's, are used in it); a
 * checkpoint of an LBFGS over parameters of another length is refused,
 * naming the tensor, and the optimizer then goes on as a fresh one. */
static void general_resume(const ref_opts *o, host_fn f, const double *x0, clt_dtype dt)
{
    model a, b, c;
    clt_optimizer *oa = NULL, *ob = NULL;
    double xa[DIM], xb[DIM], xm[DIM], la = 0, lb = 0;
    model_make(&a, dt, f, x0);
    make_lbfgs(&a, o, &oa);
    for (int s = 0; s < 2; s++)
        CHECK(clt_optimizer_step_closure(oa, closure, &a, &la));
    clt_checkpoint_dict *ck = NULL;
    CHECK(clt_checkpoint_dict_new(&ck));
    CHECK(clt_checkpoint_dict_add_optimizer(ck, "optimizer", oa));
    CHECK(clt_checkpoint_dict_save_torch(ck, tpath("mid.pt")));
    clt_checkpoint_dict_free(ck);
    model_read(&a, xm);
    model_make(&b, dt, f, xm);
    clt_lbfgs_opts other = CLT_LBFGS_DEFAULTS;
    CHECK(clt_lbfgs(b.p, 2, &other, &ob));
    CHECK(clt_checkpoint_dict_load_torch(tpath("mid.pt"), &ck));
    CHECK(clt_checkpoint_dict_load_optimizer(ck, "optimizer", ob));
    cr_assert_eq(clt_optimizer_steps(ob), 1); /* torch keeps no count of the steps */
    /* the same state into parameters of another length: refused */
    clt_tensor *p3[2] = {NULL, NULL};
    clt_optimizer *oc = NULL;
    double x3[3] = {0.5, -0.5, 1.0};
    for (int k = 0; k < 2; k++) {
        CHECK(clt_tensor_from_host(a.dev, CLT_FLOAT64, 1, (const int64_t[]){2 + k}, x3, &p3[k]));
        CHECK(clt_set_requires_grad(p3[k], 1));
    }
    CHECK(clt_lbfgs(p3, 2, NULL, &oc));
    assert_error(clt_checkpoint_dict_load_optimizer(ck, "optimizer", oc),
                 CLT_ERR_INVALID_ARGUMENT, "state.0.d");
    cr_assert_eq(clt_optimizer_steps(oc), 0);
    clt_checkpoint_dict_free(ck);
    continue_together(o, &a, oa, &b, ob);
    model_read(&a, xa);
    /* without the state, the run from that point differs */
    clt_optimizer *od = NULL;
    model_make(&c, dt, f, xm);
    make_lbfgs(&c, o, &od);
    for (int s = 0; s < 3; s++)
        CHECK(clt_optimizer_step_closure(od, closure, &c, &lb));
    model_read(&c, xb);
    cr_assert(memcmp(xa, xb, sizeof xa) != 0, "the state made no difference");
    clt_optimizer_free(od);
    clt_optimizer_free(oa);
    clt_optimizer_free(ob);
    clt_optimizer_free(oc);
    clt_tensor_free(p3[0]);
    clt_tensor_free(p3[1]);
    model_free(&a);
    model_free(&b);
    model_free(&c);
}

Test(lbfgs, general_checkpoint_resumes_bit_for_bit)
{
    ref_opts wolfe = {1, 4, 6, 1e-7, 1e-9, 2, 1}, fixed = {2e-3, 4, 6, 1e-7, 1e-9, 2, 0};
    general_resume(&wolfe, rosenbrock, X_ROSEN, CLT_FLOAT64);
    general_resume(&fixed, rosenbrock, X_ROSEN, CLT_FLOAT64);
    general_resume(&wolfe, rosenbrock, X_ROSEN, CLT_FLOAT32);
}

Test(lbfgs, file_of_a_fresh_optimizer_and_of_one_at_its_optimum)
{
    model m;
    clt_optimizer *opt = NULL, *other = NULL;
    double xmin[DIM];
    for (int i = 0; i < DIM; i++)
        xmin[i] = -QB[i] / QC[i];
    model_make(&m, CLT_FLOAT64, quadratic, xmin);
    ref_opts o = {1, 20, 25, 1e-7, 1e-9, 100, 1};
    make_lbfgs(&m, &o, &opt);
    CHECK(clt_lbfgs(m.p, 2, NULL, &other));
    /* nothing before a step; the counters alone after one that stops at
     * its first test (torch's state then) */
    CHECK(clt_optimizer_save(opt, tpath("fresh.safetensors")));
    CHECK(clt_optimizer_load(other, tpath("fresh.safetensors")));
    double loss = NAN;
    CHECK(clt_optimizer_step_closure(opt, closure, &m, &loss));
    cr_assert_eq(m.calls, 1);
    long fe, ni;
    saved_counts(opt, m.dev, &fe, &ni);
    cr_assert(fe == 1 && ni == 0, "func_evals %ld, n_iter %ld", fe, ni);
    CHECK(clt_optimizer_load(other, tpath("counts.safetensors")));
    saved_counts(other, m.dev, &fe, &ni);
    cr_assert(fe == 1 && ni == 0, "loaded: func_evals %ld, n_iter %ld", fe, ni);
    clt_optimizer_free(opt);
    clt_optimizer_free(other);
    model_free(&m);
}

Test(lbfgs, errors)
{
    model m, m32;
    clt_optimizer *opt = NULL;
    model_make(&m, CLT_FLOAT64, quadratic, X_QUAD);
    model_make(&m32, CLT_FLOAT32, quadratic, X_QUAD);
    clt_lbfgs_opts o = CLT_LBFGS_DEFAULTS;
    o.line_search_fn = "armijo";
    cr_assert_eq(clt_lbfgs(m.p, 2, &o, &opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert_null(opt);
    cr_assert(strstr(clt_last_error(), "only 'strong_wolfe' is supported"), "%s",
              clt_last_error());
    const clt_lbfgs_opts bad[] = {{-1, 20, -1, 1e-7, 1e-9, 100, NULL},
                                  {NAN, 20, -1, 1e-7, 1e-9, 100, NULL},
                                  {1, 0, -1, 1e-7, 1e-9, 100, NULL},
                                  {1, 20, -1, NAN, 1e-9, 100, NULL},
                                  {1, 20, -1, 1e-7, 1e-9, 0, NULL}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(clt_lbfgs(m.p, 2, &bad[k], &opt), CLT_ERR_INVALID_ARGUMENT, "case %zu", k);
        cr_assert_null(opt);
    }
    clt_tensor *mixed[2] = {m.p[0], m32.p[1]};
    cr_assert_eq(clt_lbfgs(mixed, 2, NULL, &opt), CLT_ERR_DTYPE_MISMATCH);
    cr_assert(strstr(clt_last_error(), "one vector of one dtype"), "%s", clt_last_error());

    CHECK(clt_lbfgs(m.p, 2, NULL, &opt));
    cr_assert_eq(clt_optimizer_step(opt), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "LBFGS requires a closure"), "%s", clt_last_error());
    double loss = 0;
    cr_assert_eq(clt_optimizer_step_closure(opt, NULL, &m, &loss), CLT_ERR_NULL_ARGUMENT);
    cr_assert(isnan(loss));
    cr_assert_eq(clt_optimizer_momentum(opt), 0.0);
    /* torch: "LBFGS doesn't support per-parameter options (parameter groups)" */
    cr_assert_eq(clt_optimizer_add_param_group(opt, m.p, 1, NULL), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(clt_last_error(), "doesn't support per-parameter options"), "%s",
              clt_last_error());
    cr_assert_eq(clt_optimizer_num_groups(opt), 1);

    /* a closure failing in the middle of the step: its status and message,
     * the parameters moved by the first iteration's fixed step */
    m.fail_at = 2;
    cr_assert_eq(clt_optimizer_step_closure(opt, closure, &m, &loss), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(strncmp(clt_last_error(), "clt_reshape", 11) == 0, "%s", clt_last_error());
    cr_assert(isnan(loss));
    cr_assert_eq(clt_optimizer_steps(opt), 0);
    double x[DIM], g[DIM], sum = 0;
    model_read(&m, x);
    quadratic(X_QUAD, g);
    for (int i = 0; i < DIM; i++)
        sum += fabs(g[i]);
    for (int i = 0; i < DIM; i++) {
        double want = X_QUAD[i] - fmin(1.0, 1.0 / sum) * g[i];
        cr_assert(fabs(x[i] - want) < 1e-12, "x[%d] = %.17g, want %.17g", i, x[i], want);
    }
    long fe, ni;
    saved_counts(opt, m.dev, &fe, &ni);
    cr_assert(fe == 1 && ni == 1, "func_evals %ld, n_iter %ld", fe, ni);
    clt_optimizer_free(opt);
    model_free(&m);
    model_free(&m32);
}

/* Every other kind: the closure once, then one step; its loss back. */
Test(lbfgs, closure_step_on_other_optimizers)
{
    model m;
    clt_optimizer *opt = NULL;
    model_make(&m, CLT_FLOAT64, quadratic, X_QUAD);
    clt_sgd_opts so = {0.1, 0, 0, 0, 0};
    CHECK(clt_sgd(m.p, 2, &so, &opt));
    double loss = NAN, g[DIM], x[DIM];
    double want = quadratic(X_QUAD, g);
    CHECK(clt_optimizer_step_closure(opt, closure, &m, &loss));
    cr_assert_eq(m.calls, 1);
    cr_assert_eq(loss, want);
    cr_assert_eq(clt_optimizer_steps(opt), 1);
    model_read(&m, x);
    for (int i = 0; i < DIM; i++)
        cr_assert(fabs(x[i] - (X_QUAD[i] - 0.1 * g[i])) < 1e-15, "x[%d] = %.17g", i, x[i]);
    /* a failing closure: no step */
    m.fail_at = 2;
    cr_assert_eq(clt_optimizer_step_closure(opt, closure, &m, &loss), CLT_ERR_INVALID_ARGUMENT);
    cr_assert(isnan(loss));
    cr_assert_eq(clt_optimizer_steps(opt), 1);
    double after[DIM];
    model_read(&m, after);
    cr_assert(memcmp(after, x, sizeof x) == 0);
    clt_optimizer_free(opt);
    model_free(&m);
}

/* A closure that fails with a bare status, leaving no message. */
static clt_status bare_closure(void *user, double *loss)
{
    (void)user;
    (void)loss;
    return CLT_ERR_DTYPE_UNSUPPORTED;
}

/* Its status comes back with a message that names it, on LBFGS and on
 * the other kinds, and no step is taken. */
Test(lbfgs, closure_failing_without_a_message)
{
    model m;
    model_make(&m, CLT_FLOAT64, quadratic, X_QUAD);
    clt_optimizer *lb = NULL, *sgd = NULL;
    CHECK(clt_lbfgs(m.p, 2, NULL, &lb));
    CHECK(clt_sgd(m.p, 2, NULL, &sgd));
    clt_optimizer *opts[2] = {lb, sgd};
    for (int k = 0; k < 2; k++) {
        double loss = 0;
        cr_assert_eq(clt_optimizer_step_closure(opts[k], bare_closure, NULL, &loss),
                     CLT_ERR_DTYPE_UNSUPPORTED);
        cr_assert(strstr(clt_last_error(), "clt_optimizer_step_closure: the closure failed "
                                           "(CLT_ERR_DTYPE_UNSUPPORTED) without a message"),
                  "%s", clt_last_error());
        cr_assert(isnan(loss));
        cr_assert_eq(clt_optimizer_steps(opts[k]), 0);
    }
    double x[DIM];
    model_read(&m, x);
    cr_assert(memcmp(x, X_QUAD, sizeof x) == 0);
    clt_optimizer_free(lb);
    clt_optimizer_free(sgd);
    model_free(&m);
}

/* The rate is read at each step, as torch reads group['lr']: a schedule's
 * (or one set by hand) takes effect at the next step. */
Test(lbfgs, rate_set_between_steps)
{
    model m;
    clt_optimizer *opt = NULL;
    ref r = {.f = rosenbrock};
    ref_opts o = {1, 5, 7, 1e-7, 1e-9, 3, 1};
    double x[DIM], got[DIM], loss;
    memcpy(x, X_ROSEN, sizeof x);
    model_make(&m, CLT_FLOAT64, rosenbrock, X_ROSEN);
    make_lbfgs(&m, &o, &opt);
    for (int s = 0; s < 3; s++) {
        ref_step(&r, &o, x);
        CHECK(clt_optimizer_step_closure(opt, closure, &m, &loss));
        o.lr *= 0.5;
        CHECK(clt_optimizer_set_lr(opt, o.lr));
    }
    model_read(&m, got);
    for (int i = 0; i < DIM; i++)
        cr_assert(fabs(got[i] - x[i]) <= 1e-8 * (1 + fabs(x[i])), "x[%d] = %.17g, want %.17g", i,
                  got[i], x[i]);
    clt_optimizer_free(opt);
    model_free(&m);
}
