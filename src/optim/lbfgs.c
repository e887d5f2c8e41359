/* lbfgs.c: torch.optim.LBFGS over all parameters as one flat vector, with
 * its strong-Wolfe line search, and steps that take a closure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltensor/linalg.h"
#include "cltensor/reduce.h"
#include "cltensor/view.h"
#include "optim/optim.h"

static const char step_fn[] = "clt_optimizer_step_closure";

/* The entries of a file, in this order; the counters alone before a step
 * went past its first test. */
enum { F_FUNC_EVALS, F_N_ITER, F_D, F_T, F_OLD_DIRS, F_OLD_STPS, F_RO, F_H_DIAG,
       F_PREV_FLAT_GRAD, F_PREV_LOSS, NFILE, F_COUNTS = F_D };
static const char *const file_names[NFILE] = {
    "state.0.func_evals", "state.0.n_iter",   "state.0.d",  "state.0.t",
    "state.0.old_dirs",   "state.0.old_stps", "state.0.ro", "state.0.H_diag",
    "state.0.prev_flat_grad", "state.0.prev_loss"};

struct clt__lbfgs {
    clt_device *dev;
    clt_dtype dtype;
    int64_t numel;
    /* torch's state: the counters once a step ran (counts), the rest once
     * one went past its first test (full) */
    bool counts, full;
    int64_t func_evals, n_iter;
    clt_tensor *d, *prev_flat_grad; /* [numel] */
    double t, H_diag, prev_loss;
    /* old_dirs (y), old_stps (s) and ro = 1 / y.s, oldest first; m of cap */
    clt_tensor **old_dirs, **old_stps;
    double *ro;
    int64_t m, cap;
    /* the tensors of a file (clt__lbfgs_entries, clt__lbfgs_expect);
     * loading: those of clt__lbfgs_expect, waiting for a file's values */
    clt_tensor *file[NFILE];
    bool loading;
};

/* Python's min and max of two numbers (the first unless the second is
 * smaller or larger), which NaN reaches as it reaches torch's. */
static double pymin(double a, double b)
{
    return b < a ? b : a;
}

static double pymax(double a, double b)
{
    return b > a ? b : a;
}

/* Puts a reference to t (or NULL) in *slot, releasing what was there. */
static void hold(clt_tensor **slot, clt_tensor *t)
{
    clt_tensor *old = *slot;
    *slot = t ? clt_tensor_retain(t) : NULL;
    clt_tensor_free(old);
}

static void files_free(clt__lbfgs *s)
{
    for (int k = 0; k < NFILE; k++)
        hold(&s->file[k], NULL);
}

static void history_clear(clt__lbfgs *s)
{
    for (int64_t i = 0; i < s->m; i++) {
        clt_tensor_free(s->old_dirs[i]);
        clt_tensor_free(s->old_stps[i]);
    }
    s->m = 0;
}

void clt__lbfgs_free(clt__lbfgs *s)
{
    if (s == NULL)
        return;
    history_clear(s);
    clt_tensor_free(s->d);
    clt_tensor_free(s->prev_flat_grad);
    files_free(s);
    free(s->old_dirs);
    free(s->old_stps);
    free(s->ro);
    free(s);
}

clt_status clt__lbfgs_check(const clt_lbfgs_opts *c, const char *fn)
{
    if (!(c->lr >= 0.0) || isinf(c->lr))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid learning rate: %g", fn, c->lr);
    if (c->max_iter < 1 || c->max_eval < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid max_iter or max_eval: %lld, %lld (max_iter >= 1, "
                          "max_eval >= 0)",
                          fn, (long long)c->max_iter, (long long)c->max_eval);
    if (c->history_size < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: invalid history_size: %lld", fn,
                          (long long)c->history_size);
    if (isnan(c->tolerance_grad) || isnan(c->tolerance_change))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: invalid tolerance_grad or tolerance_change: %g, %g", fn,
                          c->tolerance_grad, c->tolerance_change);
    if (c->line_search_fn && strcmp(c->line_search_fn, "strong_wolfe") != 0) {
        char q[CLT__QUOTE_SIZE];
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: only 'strong_wolfe' is supported (line_search_fn %s)", fn,
                          CLT__QUOTE(q, c->line_search_fn));
    }
    return CLT_OK;
}

/* The parameters one flat vector may join: one dtype, one device. */
static clt_status check_params(clt_tensor *const *params, size_t n, const char *fn)
{
    for (size_t i = 1; i < n; i++) {
        if (params[i]->dtype != params[0]->dtype)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "%s: parameter %zu is %s and parameter 0 %s: LBFGS takes all "
                              "parameters as one vector of one dtype",
                              fn, i, clt_dtype_name(params[i]->dtype),
                              clt_dtype_name(params[0]->dtype));
        if (params[i]->dev != params[0]->dev)
            return clt__error(CLT_ERR_DEVICE_MISMATCH,
                              "%s: parameter %zu is on another device than parameter 0: LBFGS "
                              "takes all parameters as one vector on one device",
                              fn, i);
    }
    return CLT_OK;
}

clt_status clt__lbfgs_new(clt_tensor *const *params, size_t n, const char *fn,
                          clt__lbfgs **out)
{
    *out = NULL;
    clt_status st = check_params(params, n, fn);
    if (st != CLT_OK)
        return st;
    int64_t numel = 0;
    for (size_t i = 0; i < n; i++)
        numel += params[i]->numel;
    if (numel == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the parameters hold no element (LBFGS needs max|g|)", fn);
    clt__lbfgs *s = clt__calloc(1, sizeof *s);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    s->dev = params[0]->dev;
    s->dtype = params[0]->dtype;
    s->numel = numel;
    s->H_diag = 1.0;
    *out = s;
    return CLT_OK;
}

/* Room for cap pairs of history (grown as pairs come, up to history_size,
 * so that a large history_size costs nothing until it fills). */
static clt_status history_reserve(clt__lbfgs *s, int64_t cap, const char *fn)
{
    if (cap <= s->cap)
        return CLT_OK;
    clt_tensor **y = clt__realloc(s->old_dirs, (size_t)cap, sizeof *y);
    if (y)
        s->old_dirs = y;
    clt_tensor **st = y ? clt__realloc(s->old_stps, (size_t)cap, sizeof *st) : NULL;
    if (st)
        s->old_stps = st;
    double *ro = st ? clt__realloc(s->ro, (size_t)cap, sizeof *ro) : NULL;
    if (ro == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    s->ro = ro;
    s->cap = cap;
    return CLT_OK;
}

/* ---- the flat vector and the parameters -------------------------------------- */

/* a.b, read back. */
static clt_status dot(const clt_tensor *a, const clt_tensor *b, double *v)
{
    clt_tensor *t = NULL;
    clt_status st = clt_dot(a, b, &t);
    if (st == CLT_OK)
        st = clt_tensor_item(t, v);
    clt_tensor_free(t);
    return st;
}

/* max |a * scale| (torch's abs().max(), of d.mul(t) where scale is t). */
static clt_status abs_max(const clt_tensor *a, double scale, double *v)
{
    clt_tensor *m = NULL, *b = NULL, *t = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt_scope_begin());
    if (scale != 1.0)
        st = clt_mul_scalar(a, scale, &m);
    if (st == CLT_OK)
        st = clt_abs(m ? m : a, &b);
    if (st == CLT_OK)
        st = clt_amax(b, NULL, 0, 0, &t);
    if (st == CLT_OK)
        st = clt_tensor_item(t, v);
    clt_scope_end();
done:
    return st;
}

static clt_status abs_sum(const clt_tensor *a, double *v)
{
    clt_tensor *b = NULL, *t = NULL;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    st = clt_abs(a, &b);
    if (st == CLT_OK)
        st = clt_sum(b, &t);
    if (st == CLT_OK)
        st = clt_tensor_item(t, v);
    clt_scope_end();
    return st;
}

/* Takes *t, made inside the scope now open, out of it for the state, and
 * closes the scope. */
static clt_status scope_own(clt_status st, clt_tensor **t)
{
    st = clt__scope_finish(st, t);
    if (st == CLT_OK)
        clt__scope_disown(*t);
    return st;
}

/* torch's _gather_flat_grad: every parameter's gradient, zeros for one
 * without, in one new vector (owned by the state's code, in no scope). */
static clt_status gather(clt_tensor *const *params, size_t n, const clt__lbfgs *s,
                         clt_tensor **out)
{
    *out = NULL;
    clt_tensor **parts = clt__calloc(n, sizeof *parts);
    if (parts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", step_fn);
    clt_status st = clt_scope_begin();
    for (size_t i = 0; i < n && st == CLT_OK; i++) {
        const clt_tensor *p = params[i], *g = clt__grad_of(p);
        int64_t k = p->numel;
        clt_tensor *dense = NULL;
        if (g == NULL && clt__grad_is_sparse(p)) { /* torch's grad.to_dense() */
            st = clt__sparse_grad_dense(p, &dense);
            if (st == CLT_OK)
                st = clt_reshape(dense, 1, &k, &parts[i]);
            clt_tensor_free(dense);
        } else if (g == NULL) {
            st = clt_zeros(s->dev, s->dtype, 1, &k, &parts[i]);
        } else if (g->dtype != s->dtype || g->numel != k) {
            st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                            "%s: parameter %zu is %s with %lld elements and its gradient %s "
                            "with %lld",
                            step_fn, i, clt_dtype_name(s->dtype), (long long)k,
                            clt_dtype_name(g->dtype), (long long)g->numel);
        } else {
            st = clt_reshape(g, 1, &k, &parts[i]);
        }
    }
    if (st == CLT_OK)
        st = clt_cat((const clt_tensor *const *)parts, n, 0, out);
    free(parts);
    return clt__error_in(scope_own(st, out), step_fn);
}

/* torch's _add_grad: p += step d[the parameter's elements], every
 * parameter in place (through a detached handle: no autograd). */
static clt_status add_grad(clt_tensor *const *params, size_t n, double step,
                           const clt_tensor *d)
{
    clt_status st = clt_scope_begin();
    int64_t off = 0;
    for (size_t i = 0; i < n && st == CLT_OK; i++) {
        clt_tensor *p = NULL, *part = NULL, *v = NULL;
        clt_tensor *const q = params[i];
        int64_t k = q->numel;
        if (k == 0)
            continue;
        st = clt_detach(q, &p);
        if (st == CLT_OK)
            st = clt_narrow(d, 0, off, k, &part);
        if (st == CLT_OK)
            st = clt_reshape(part, q->ndim, q->shape, &v);
        if (st == CLT_OK)
            st = clt_add_(p, v, step);
        off += k;
    }
    clt_scope_end();
    return clt__error_in(st, step_fn);
}

/* torch's _clone_param: x[i] a copy of parameter i (new, in no scope). */
static clt_status clone_params(clt_tensor *const *params, size_t n, clt_tensor **x)
{
    clt_status st = CLT_OK;
    for (size_t i = 0; i < n && st == CLT_OK; i++) {
        clt_tensor *p = NULL;
        st = clt_detach(params[i], &p);
        if (st == CLT_OK)
            st = clt_clone(p, &x[i]);
        clt_tensor_free(p);
        if (st == CLT_OK)
            clt__scope_disown(x[i]);
    }
    return clt__error_in(st, step_fn);
}

/* torch's _set_param: parameter i = x[i]. */
static clt_status set_params(clt_tensor *const *params, size_t n, clt_tensor *const *x)
{
    clt_status st = CLT_OK;
    for (size_t i = 0; i < n && st == CLT_OK; i++) {
        clt_tensor *p = NULL;
        st = clt_detach(params[i], &p);
        if (st == CLT_OK)
            st = clt_copy_(p, x[i]);
        clt_tensor_free(p);
    }
    return clt__error_in(st, step_fn);
}

/* ---- one step ---------------------------------------------------------------- */

/* What a step works with: the parameters, the closure, the settings. */
typedef struct run {
    clt_tensor *const *params;
    size_t n;
    clt__lbfgs *s;
    clt_closure fn;
    void *user;
    const clt_lbfgs_opts *o;
    double lr;
    bool closure_failed; /* the failure is the closure's: its message as it is */
} run;

/* The closure, whose failure (status and message) is returned as it is;
 * a failure that left no message gets one naming the status. */
static clt_status evaluate(run *r, double *loss)
{
    clt__ok(); /* so that a closure failing with no message is seen */
    clt_status st = r->fn(r->user, loss);
    if (st == CLT_OK)
        st = clt__ok();
    else if (clt_last_error()[0] == '\0')
        st = clt__error(st, "%s: the closure failed (%s) without a message", step_fn,
                        clt_status_name(st));
    r->closure_failed = st != CLT_OK;
    return st;
}

/* torch's _directional_evaluate: the loss and flat gradient (new) at x +
 * t d, the parameters put back to x after. */
static clt_status directional(run *r, clt_tensor *const *x, double t, const clt_tensor *d,
                              double *f, clt_tensor **g)
{
    *g = NULL;
    clt_status st = add_grad(r->params, r->n, t, d);
    if (st == CLT_OK)
        st = evaluate(r, f);
    if (st == CLT_OK)
        st = gather(r->params, r->n, r->s, g);
    if (st == CLT_OK)
        st = set_params(r->params, r->n, x);
    return st;
}

/* torch's _cubic_interpolate: the minimiser of the cubic through (x1, f1)
 * and (x2, f2) with slopes g1 and g2, within bounds (NULL: [x1, x2]). */
static double cubic_interpolate(double x1, double f1, double g1, double x2, double f2,
                                double g2, const double *bounds)
{
    double lo = bounds ? bounds[0] : x1 <= x2 ? x1 : x2;
    double hi = bounds ? bounds[1] : x1 <= x2 ? x2 : x1;
    double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
    double d2_square = d1 * d1 - g1 * g2;
    if (d2_square >= 0) {
        double d2 = sqrt(d2_square), min_pos;
        if (x1 <= x2)
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2));
        else
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
        return pymin(pymax(min_pos, lo), hi);
    }
    return (lo + hi) / 2.;
}

/* torch's _strong_wolfe (c1 1e-4, c2 0.9, max_ls 25) from x (the
 * parameters now) along d from step *t, f and g (borrowed) the loss and
 * flat gradient at x, gtd their slope: *t, *f_out and *g_out (new) at the
 * point it takes, *evals the closure's calls. */
static clt_status strong_wolfe(run *r, clt_tensor *const *x, double *t_io,
                               const clt_tensor *d, double f, clt_tensor *g, double gtd,
                               double *f_out, clt_tensor **g_out, int64_t *evals)
{
    const double c1 = 1e-4, c2 = 0.9, tolerance_change = r->o->tolerance_change;
    const int max_ls = 25;
    double t = *t_io, d_norm, f_new, gtd_new = 0;
    double br[2] = {0, 0}, br_f[2] = {0, 0}, br_gtd[2] = {0, 0};
    clt_tensor *g_new = NULL, *g_prev = NULL, *br_g[2] = {NULL, NULL};
    int nb = 0, ls_iter = 0, low = 0, high = 1;
    bool done = false;
    *g_out = NULL;
    *evals = 0;
    clt_status st;
    CLT__TRY(abs_max(d, 1.0, &d_norm));
    CLT__TRY(directional(r, x, t, d, &f_new, &g_new));
    *evals = 1;
    CLT__TRY(dot(g_new, d, &gtd_new));

    /* bracket an interval containing a point satisfying the Wolfe criteria */
    double t_prev = 0, f_prev = f, gtd_prev = gtd;
    hold(&g_prev, g);
    while (ls_iter < max_ls) {
        bool wolfe = false;
        if (f_new > (f + c1 * t * gtd) || (ls_iter > 1 && f_new >= f_prev) ||
            (!(wolfe = fabs(gtd_new) <= -c2 * gtd) && gtd_new >= 0)) {
            br[0] = t_prev, br[1] = t, br_f[0] = f_prev, br_f[1] = f_new;
            br_gtd[0] = gtd_prev, br_gtd[1] = gtd_new, nb = 2;
            hold(&br_g[0], g_prev);
            hold(&br_g[1], g_new);
            break;
        }
        if (wolfe) {
            br[0] = t, br_f[0] = f_new, nb = 1, done = true;
            hold(&br_g[0], g_new);
            break;
        }
        /* interpolate */
        double bounds[2] = {t + 0.01 * (t - t_prev), t * 10}, tmp = t;
        t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds);
        t_prev = tmp, f_prev = f_new, gtd_prev = gtd_new;
        hold(&g_prev, g_new);
        hold(&g_new, NULL);
        CLT__TRY(directional(r, x, t, d, &f_new, &g_new));
        ++*evals;
        CLT__TRY(dot(g_new, d, &gtd_new));
        ls_iter++;
    }
    /* reached max number of iterations? */
    if (ls_iter == max_ls) {
        br[0] = 0, br[1] = t, br_f[0] = f, br_f[1] = f_new, nb = 2;
        hold(&br_g[0], g);
        hold(&br_g[1], g_new);
    }

    /* zoom: refine the bracket until a point satisfies the criteria */
    bool insuf_progress = false;
    low = br_f[0] <= br_f[nb - 1] ? 0 : 1;
    high = 1 - low;
    while (!done && ls_iter < max_ls) {
        if (fabs(br[1] - br[0]) * d_norm < tolerance_change)
            break;
        t = cubic_interpolate(br[0], br_f[0], br_gtd[0], br[1], br_f[1], br_gtd[1], NULL);
        /* too close to a bound: 0.1 of the bracket away from it, when the
         * last trial made too little progress or t is on the bound */
        double bmax = pymax(br[0], br[1]), bmin = pymin(br[0], br[1]);
        double eps = 0.1 * (bmax - bmin);
        if (pymin(bmax - t, t - bmin) < eps) {
            if (insuf_progress || t >= bmax || t <= bmin) {
                t = fabs(t - bmax) < fabs(t - bmin) ? bmax - eps : bmin + eps;
                insuf_progress = false;
            } else {
                insuf_progress = true;
            }
        } else {
            insuf_progress = false;
        }
        hold(&g_new, NULL);
        CLT__TRY(directional(r, x, t, d, &f_new, &g_new));
        ++*evals;
        CLT__TRY(dot(g_new, d, &gtd_new));
        ls_iter++;
        if (f_new > (f + c1 * t * gtd) || f_new >= br_f[low]) {
            /* Armijo not satisfied or not lower than the lowest point */
            br[high] = t, br_f[high] = f_new, br_gtd[high] = gtd_new;
            hold(&br_g[high], g_new);
            low = br_f[0] <= br_f[1] ? 0 : 1;
            high = 1 - low;
        } else {
            if (fabs(gtd_new) <= -c2 * gtd) {
                done = true;
            } else if (gtd_new * (br[high] - br[low]) >= 0) {
                /* old high becomes new low */
                br[high] = br[low], br_f[high] = br_f[low], br_gtd[high] = br_gtd[low];
                hold(&br_g[high], br_g[low]);
            }
            br[low] = t, br_f[low] = f_new, br_gtd[low] = gtd_new;
            hold(&br_g[low], g_new);
        }
    }
    *t_io = br[low];
    *f_out = br_f[low];
    hold(g_out, br_g[low]);
done:
    hold(&g_new, NULL);
    hold(&g_prev, NULL);
    hold(&br_g[0], NULL);
    hold(&br_g[1], NULL);
    return st;
}

/* The L-BFGS direction from flat_grad and the history, torch's two loops
 * (al and be on the device: nothing read back): d = -H g (new, in no
 * scope). */
static clt_status direction(clt__lbfgs *s, const clt_tensor *flat_grad, clt_tensor **out)
{
    int64_t m = s->m;
    clt_tensor *q = NULL, *r = NULL, *next = NULL, *be = NULL, *diff = NULL;
    clt_tensor **al = clt__calloc(m ? (size_t)m : 1, sizeof *al);
    if (al == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", step_fn);
    clt_status st = clt_scope_begin();
    if (st == CLT_OK)
        st = clt_neg(flat_grad, &q);
    for (int64_t i = m - 1; i >= 0 && st == CLT_OK; i--) {
        st = clt_dot(s->old_stps[i], q, &al[i]);
        if (st == CLT_OK)
            st = clt_mul_scalar_(al[i], s->ro[i]);
        if (st == CLT_OK)
            st = clt_addcmul(q, s->old_dirs[i], al[i], -1.0, &next);
        if (st == CLT_OK) {
            clt_tensor_free(q);
            q = next;
        }
    }
    /* multiply by the initial Hessian; r is the direction */
    if (st == CLT_OK)
        st = clt_mul_scalar(q, s->H_diag, &r);
    for (int64_t i = 0; i < m && st == CLT_OK; i++) {
        st = clt_dot(s->old_dirs[i], r, &be);
        if (st == CLT_OK)
            st = clt_mul_scalar_(be, s->ro[i]);
        if (st == CLT_OK)
            st = clt_sub(al[i], be, &diff);
        if (st == CLT_OK)
            st = clt_addcmul(r, s->old_stps[i], diff, 1.0, &next);
        if (st == CLT_OK) {
            clt_tensor_free(r);
            clt_tensor_free(be);
            clt_tensor_free(diff);
            r = next;
        }
    }
    free(al);
    *out = r;
    return clt__error_in(scope_own(st, out), step_fn);
}

/* The history's update with y = flat_grad - prev_flat_grad and s = d t,
 * where y.s > 1e-10 (torch's test); the oldest pair goes at history_size. */
static clt_status remember(run *r, const clt_tensor *flat_grad)
{
    clt__lbfgs *s = r->s;
    clt_tensor *y = NULL, *sv = NULL;
    double ys, yy;
    clt_status st = clt_scope_begin();
    if (st == CLT_OK)
        st = clt_sub(flat_grad, s->prev_flat_grad, &y);
    if (st == CLT_OK)
        st = clt_mul_scalar(s->d, s->t, &sv);
    if (st == CLT_OK)
        st = dot(y, sv, &ys);
    if (st == CLT_OK && ys > 1e-10) {
        st = dot(y, y, &yy);
        if (st == CLT_OK)
            st = history_reserve(s, s->m < r->o->history_size ? s->m + 1 : s->m, step_fn);
        if (st == CLT_OK) {
            if (s->m == r->o->history_size) {
                /* shift the history by one (limited memory) */
                clt_tensor_free(s->old_dirs[0]);
                clt_tensor_free(s->old_stps[0]);
                memmove(s->old_dirs, s->old_dirs + 1, (size_t)(s->m - 1) * sizeof *s->old_dirs);
                memmove(s->old_stps, s->old_stps + 1, (size_t)(s->m - 1) * sizeof *s->old_stps);
                memmove(s->ro, s->ro + 1, (size_t)(s->m - 1) * sizeof *s->ro);
                s->m--;
            }
            clt__scope_disown(y);
            clt__scope_disown(sv);
            s->old_dirs[s->m] = y;
            s->old_stps[s->m] = sv;
            s->ro[s->m++] = 1. / ys;
            s->H_diag = ys / yy;
        }
    }
    clt_scope_end();
    return clt__error_in(st, step_fn);
}

/* torch's LBFGS.step(closure), *orig the first evaluation's loss. */
static clt_status lbfgs_step(run *r, double *orig)
{
    clt__lbfgs *s = r->s;
    const clt_lbfgs_opts *o = r->o;
    clt_tensor *flat_grad = NULL, **x = NULL;
    double loss, gmax;
    clt_status st;
    s->counts = true;
    CLT__TRY(evaluate(r, &loss));
    *orig = loss;
    int64_t current_evals = 1;
    s->func_evals++;
    CLT__TRY(gather(r->params, r->n, s, &flat_grad));
    CLT__TRY(abs_max(flat_grad, 1.0, &gmax));
    if (gmax <= o->tolerance_grad) /* optimal condition */
        goto done;
    if (o->line_search_fn) {
        x = clt__calloc(r->n, sizeof *x);
        if (x == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", step_fn));
    }

    for (int64_t n_iter = 1; n_iter <= o->max_iter; n_iter++) {
        s->n_iter++;
        /* the descent direction */
        clt_tensor *d = NULL;
        if (s->n_iter == 1) {
            CLT__TRY(clt_neg(flat_grad, &d));
            clt__scope_disown(d);
            history_clear(s);
            s->H_diag = 1;
        } else {
            CLT__TRY(remember(r, flat_grad));
            CLT__TRY(direction(s, flat_grad, &d));
        }
        hold(&s->d, d);
        clt_tensor_free(d);
        s->full = true;
        if (s->prev_flat_grad == NULL) {
            CLT__TRY(clt_clone(flat_grad, &s->prev_flat_grad));
            clt__scope_disown(s->prev_flat_grad);
        } else {
            CLT__TRY(clt__error_in(clt_copy_(s->prev_flat_grad, flat_grad), step_fn));
        }
        s->prev_loss = loss;

        /* the step length: min(1, 1 / sum|g|) lr at first, then lr */
        if (s->n_iter == 1) {
            double sum;
            CLT__TRY(abs_sum(flat_grad, &sum));
            s->t = pymin(1., 1. / sum) * r->lr;
        } else {
            s->t = r->lr;
        }
        double gtd;
        CLT__TRY(dot(flat_grad, s->d, &gtd));
        if (gtd > -o->tolerance_change) /* directional derivative below tolerance */
            break;

        int64_t ls_func_evals = 0;
        bool opt_cond = false;
        if (o->line_search_fn) {
            clt_tensor *g_new = NULL;
            CLT__TRY(clone_params(r->params, r->n, x));
            st = strong_wolfe(r, x, &s->t, s->d, loss, flat_grad, gtd, &loss, &g_new,
                              &ls_func_evals);
            for (size_t i = 0; i < r->n; i++)
                hold(&x[i], NULL);
            if (st != CLT_OK)
                goto done;
            hold(&flat_grad, g_new);
            clt_tensor_free(g_new);
            CLT__TRY(add_grad(r->params, r->n, s->t, s->d));
            CLT__TRY(abs_max(flat_grad, 1.0, &gmax));
            opt_cond = gmax <= o->tolerance_grad;
        } else {
            /* no line search: a fixed step, the function evaluated again but
             * after the last iteration */
            CLT__TRY(add_grad(r->params, r->n, s->t, s->d));
            if (n_iter != o->max_iter) {
                CLT__TRY(evaluate(r, &loss));
                hold(&flat_grad, NULL);
                CLT__TRY(gather(r->params, r->n, s, &flat_grad));
                CLT__TRY(abs_max(flat_grad, 1.0, &gmax));
                opt_cond = gmax <= o->tolerance_grad;
                ls_func_evals = 1;
            }
        }
        current_evals += ls_func_evals;
        s->func_evals += ls_func_evals;

        /* the tests, in torch's order */
        if (n_iter == o->max_iter || current_evals >= o->max_eval || opt_cond)
            break;
        double dmax;
        CLT__TRY(abs_max(s->d, s->t, &dmax));
        if (dmax <= o->tolerance_change) /* lack of progress */
            break;
        if (fabs(loss - s->prev_loss) < o->tolerance_change)
            break;
    }
done:
    hold(&flat_grad, NULL);
    for (size_t i = 0; x && i < r->n; i++)
        hold(&x[i], NULL);
    free(x);
    return st;
}

/* Moves the state to the parameters' device and dtype where the model
 * moved or was converted (clt_module_to, clt_module_to_dtype). */
static clt_status rehome(clt__lbfgs *s, clt_tensor *const *params, size_t n)
{
    clt_status st = check_params(params, n, step_fn);
    if (st != CLT_OK)
        return st;
    clt_device *dev = params[0]->dev;
    clt_dtype dt = params[0]->dtype;
    if (dev == s->dev && dt == s->dtype)
        return CLT_OK;
    if (dt != CLT_FLOAT32 && dt != CLT_FLOAT64)
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: the parameters are %s; float32 and float64 are supported",
                          step_fn, clt_dtype_name(dt));
    clt_tensor **all = clt__calloc((size_t)(2 * s->m + 2), sizeof *all);
    if (all == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", step_fn);
    all[0] = s->d;
    all[1] = s->prev_flat_grad;
    for (int64_t i = 0; i < s->m; i++) {
        all[2 + 2 * i] = s->old_dirs[i];
        all[3 + 2 * i] = s->old_stps[i];
    }
    st = clt__tensor_rehome_all(all, (size_t)(2 * s->m + 2), dev, dt, step_fn);
    free(all);
    if (st == CLT_OK) {
        s->dev = dev;
        s->dtype = dt;
    }
    return st;
}

clt_status clt_optimizer_step_closure(clt_optimizer *opt, clt_closure fn, void *user,
                                      double *loss)
{
    if (loss)
        *loss = NAN;
    CLT__REQUIRE_ARG(opt, step_fn);
    CLT__REQUIRE_ARG(fn, step_fn);
    clt__lbfgs *s = clt__optimizer_lbfgs(opt);
    double first = NAN;
    clt_status st;
    if (s == NULL) {
        /* torch's step(closure): the loss, then the step */
        st = evaluate(&(run){.fn = fn, .user = user}, &first);
        if (st != CLT_OK)
            return st;
        st = clt_optimizer_step(opt);
        if (st != CLT_OK)
            return clt__error_in(st, step_fn);
        if (loss)
            *loss = first;
        return CLT_OK;
    }
    size_t n = clt__optimizer_size(opt);
    clt_tensor **params = clt__calloc(n, sizeof *params);
    if (params == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", step_fn);
    for (size_t i = 0; i < n; i++)
        params[i] = clt__optimizer_param(opt, i);
    clt__opt_settings c;
    clt__optimizer_settings(opt, 0, &c);
    files_free(s); /* the copies a save made */
    run r = {params, n, s, fn, user, &c.lbfgs, c.lbfgs.lr, false};
    st = rehome(s, params, n);
    if (st == CLT_OK)
        st = lbfgs_step(&r, &first);
    free(params);
    if (st != CLT_OK)
        return r.closure_failed ? st : clt__error_in(st, step_fn);
    clt__optimizer_counted(opt);
    if (loss)
        *loss = first;
    return clt__ok();
}

/* ---- files -------------------------------------------------------------------- */

/* A 0-d float64 (or int64) tensor on s's device holding v. */
static clt_status scalar_tensor(const clt__lbfgs *s, clt_dtype dt, double v, const char *fn,
                                clt_tensor **out)
{
    int64_t i = (int64_t)v;
    clt_status st = clt__tensor_from_host_in(fn, s->dev, dt, 0, NULL,
                                             dt == CLT_INT64 ? (const void *)&i : &v, out);
    if (st == CLT_OK)
        clt__scope_disown(*out);
    return st;
}

/* The history as a [m, numel] tensor (oldest first) of pairs in h. */
static clt_status stacked(const clt__lbfgs *s, clt_tensor *const *h, const char *fn,
                          clt_tensor **out)
{
    clt_status st;
    if (s->m == 0) {
        int64_t shape[2] = {0, s->numel};
        st = clt_zeros(s->dev, s->dtype, 2, shape, out);
    } else {
        st = clt_stack((const clt_tensor *const *)h, (size_t)s->m, 0, out);
    }
    if (st == CLT_OK)
        clt__scope_disown(*out);
    return clt__error_in(st, fn);
}

clt_status clt__lbfgs_entries(clt__lbfgs *s, const char *const **names,
                              clt_tensor *const **tensors, size_t *n, const char *fn)
{
    clt_status st = CLT_OK;
    *names = file_names;
    *tensors = s->file;
    *n = s->full ? NFILE : s->counts ? F_COUNTS : 0;
    if (s->loading)
        return CLT_OK;
    files_free(s);
    if (*n == 0)
        return CLT_OK;
    CLT__TRY(scalar_tensor(s, CLT_INT64, (double)s->func_evals, fn, &s->file[F_FUNC_EVALS]));
    CLT__TRY(scalar_tensor(s, CLT_INT64, (double)s->n_iter, fn, &s->file[F_N_ITER]));
    if (!s->full)
        return CLT_OK;
    hold(&s->file[F_D], s->d);
    hold(&s->file[F_PREV_FLAT_GRAD], s->prev_flat_grad);
    CLT__TRY(scalar_tensor(s, CLT_FLOAT64, s->t, fn, &s->file[F_T]));
    CLT__TRY(scalar_tensor(s, CLT_FLOAT64, s->H_diag, fn, &s->file[F_H_DIAG]));
    CLT__TRY(scalar_tensor(s, CLT_FLOAT64, s->prev_loss, fn, &s->file[F_PREV_LOSS]));
    CLT__TRY(stacked(s, s->old_dirs, fn, &s->file[F_OLD_DIRS]));
    CLT__TRY(stacked(s, s->old_stps, fn, &s->file[F_OLD_STPS]));
    CLT__TRY(clt__tensor_from_host_in(fn, s->dev, CLT_FLOAT64, 1, &s->m, s->ro,
                                      &s->file[F_RO]));
    clt__scope_disown(s->file[F_RO]);
done:
    if (st != CLT_OK)
        files_free(s);
    return st;
}

clt_status clt__lbfgs_expect(clt__lbfgs *s, bool counts, bool full, int64_t m, const char *fn)
{
    static const double zero = 0;
    int64_t hist[2] = {m, s->numel};
    clt_status st = CLT_OK;
    files_free(s);
    s->loading = true;
    s->counts = counts || full;
    s->full = full;
    if (!s->counts)
        return CLT_OK;
    CLT__TRY(scalar_tensor(s, CLT_INT64, 0, fn, &s->file[F_FUNC_EVALS]));
    CLT__TRY(scalar_tensor(s, CLT_INT64, 0, fn, &s->file[F_N_ITER]));
    if (!full)
        return CLT_OK;
    for (int k = F_D; k < NFILE && st == CLT_OK; k++) {
        if (k == F_T || k == F_H_DIAG || k == F_PREV_LOSS)
            st = scalar_tensor(s, CLT_FLOAT64, zero, fn, &s->file[k]);
        else if (k == F_RO)
            st = clt_zeros(s->dev, CLT_FLOAT64, 1, &m, &s->file[k]);
        else if (k == F_OLD_DIRS || k == F_OLD_STPS)
            st = clt_zeros(s->dev, s->dtype, 2, hist, &s->file[k]);
        else
            st = clt_zeros(s->dev, s->dtype, 1, &s->numel, &s->file[k]);
        if (st == CLT_OK)
            clt__scope_disown(s->file[k]);
    }
done:
    if (st != CLT_OK)
        files_free(s);
    return clt__error_in(st, fn);
}

/* A scalar of the file's tensor k, read back (waits). */
static clt_status file_scalar(const clt__lbfgs *s, int k, double *v, const char *fn,
                              const void *caller)
{
    if (s->file[k]->dtype == CLT_INT64) {
        int64_t i;
        clt_status st = clt__tensor_read_at(s->file[k], &i, sizeof i, fn, caller);
        *v = (double)i;
        return st;
    }
    return clt__tensor_read_at(s->file[k], v, sizeof *v, fn, caller);
}

clt_status clt__lbfgs_loaded(clt__lbfgs *s, int64_t history_size, const char *fn,
                             const void *caller)
{
    clt_status st = CLT_OK;
    s->loading = false;
    if (!s->counts)
        return CLT_OK;
    if (clt__tensor_read_at(s->file[F_FUNC_EVALS], &s->func_evals, sizeof s->func_evals, fn,
                            caller) != CLT_OK ||
        clt__tensor_read_at(s->file[F_N_ITER], &s->n_iter, sizeof s->n_iter, fn, caller) !=
            CLT_OK)
        return clt_last_status();
    if (s->func_evals < 0 || s->n_iter < 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the file's func_evals or n_iter is negative: %lld, %lld", fn,
                          (long long)s->func_evals, (long long)s->n_iter);
    if (!s->full)
        return CLT_OK;
    int64_t m = s->file[F_OLD_DIRS]->shape[0];
    if (m > history_size)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the file holds %lld pairs of history, more than history_size %lld",
                          fn, (long long)m, (long long)history_size);
    CLT__TRY(file_scalar(s, F_T, &s->t, fn, caller));
    CLT__TRY(file_scalar(s, F_H_DIAG, &s->H_diag, fn, caller));
    CLT__TRY(file_scalar(s, F_PREV_LOSS, &s->prev_loss, fn, caller));
    CLT__TRY(history_reserve(s, m, fn));
    if (m > 0)
        CLT__TRY(clt__tensor_read_at(s->file[F_RO], s->ro, (size_t)m * sizeof *s->ro, fn,
                                     caller));
    /* the rows of the history, each its own vector as torch's lists hold */
    CLT__TRY(clt_scope_begin());
    for (int64_t i = 0; i < m && st == CLT_OK; i++) {
        clt_tensor *y = NULL, *sv = NULL;
        st = clt_narrow(s->file[F_OLD_DIRS], 0, i, 1, &y);
        if (st == CLT_OK)
            st = clt_reshape(y, 1, &s->numel, &y);
        if (st == CLT_OK)
            st = clt_clone(y, &s->old_dirs[i]);
        if (st == CLT_OK)
            st = clt_narrow(s->file[F_OLD_STPS], 0, i, 1, &sv);
        if (st == CLT_OK)
            st = clt_reshape(sv, 1, &s->numel, &sv);
        if (st == CLT_OK)
            st = clt_clone(sv, &s->old_stps[i]);
        if (st == CLT_OK) {
            clt__scope_disown(s->old_dirs[i]);
            clt__scope_disown(s->old_stps[i]);
            s->m = i + 1;
        }
    }
    clt_scope_end();
    CLT__TRY(clt__error_in(st, fn));
    hold(&s->d, s->file[F_D]);
    hold(&s->prev_flat_grad, s->file[F_PREV_FLAT_GRAD]);
    files_free(s);
done:
    return st;
}
