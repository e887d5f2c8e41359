/* gradcheck.c: torch.autograd.gradcheck and gradgradcheck (slow mode): the
 * Jacobian that backward gives against central finite differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"

#define MAXOUT CLT_FUNCTIONAL_MAX_OUTPUTS

static void free_all(clt_tensor **v, size_t n)
{
    for (size_t k = 0; v && k < n; k++) {
        clt_tensor_free(v[k]);
        v[k] = NULL;
    }
}

/* Runs fn with grad mode on; *m new tensors in outs. */
static clt_status run(clt_functional_fn fn, void *user, clt_tensor *const *in, size_t n,
                      clt_tensor **outs, size_t *m)
{
    *m = 0;
    int was = clt_set_grad_enabled(1);
    clt__ok();
    clt_status st = fn(user, in, n, outs, m);
    st = clt__callback_outputs(st, outs, m, MAXOUT, NULL, in, n);
    clt_set_grad_enabled(was);
    if (st != CLT_OK) {
        free_all(outs, *m);
        *m = 0;
    }
    return st;
}

/* One Jacobian block, output i by input j: numel_out rows of numel_in. */
typedef struct block {
    double *num, *ana;
} block;

typedef struct check {
    clt_functional_fn fn;
    void *user;
    clt_tensor *const *in;
    size_t n, nout;
    int64_t onum[MAXOUT];
    bool diff[MAXOUT];
    block *b; /* nout x n */
    double eps;
} check;

/* The analytical Jacobian: one backward pass per element of each
 * differentiable output, seeded with a one-hot gradient. */
static clt_status analytical(check *c, clt_tensor **outs)
{
    clt_status st = CLT_OK;
    clt_tensor *tg[64], **targets = tg, *seed = NULL, **g = NULL;
    size_t *at = NULL, nt = 0;
    double *hot = NULL, *row = NULL;
    if (c->n > 64 && (targets = clt__calloc(c->n, sizeof *targets)) == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    at = clt__calloc(c->n, sizeof *at);
    g = clt__calloc(c->n, sizeof *g);
    if (at == NULL || g == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t j = 0; j < c->n; j++)
        if (clt__requires_grad(c->in[j])) {
            at[nt] = j;
            targets[nt++] = c->in[j];
        }
    for (size_t i = 0; i < c->nout; i++) {
        if (!c->diff[i])
            continue;
        int64_t rows = c->onum[i];
        free(hot);
        if ((hot = clt__calloc((size_t)(rows ? rows : 1), sizeof *hot)) == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
            goto done;
        }
        for (int64_t r = 0; r < rows; r++) {
            hot[r] = 1.0;
            if (r > 0)
                hot[r - 1] = 0.0;
            CLT__TRY(clt_empty(outs[i]->dev, outs[i]->dtype, outs[i]->ndim, outs[i]->shape,
                               &seed));
            CLT__TRY(clt__write_doubles("clt_gradcheck", seed, hot));
            clt_grad_opts opts = {1, 0, 1};
            CLT__TRY(clt_autograd_grad_ex(&outs[i], 1, &seed, targets, nt, &opts, g));
            clt_tensor_free(seed);
            seed = NULL;
            for (size_t t = 0; t < nt; t++) {
                if (g[t] == NULL)
                    continue;
                size_t j = at[t];
                int64_t cols = c->in[j]->numel;
                CLT__TRY(clt__read_doubles("clt_gradcheck", g[t], &row));
                memcpy(c->b[i * c->n + j].ana + r * cols, row, (size_t)cols * sizeof *row);
                free(row);
                row = NULL;
            }
            free_all(g, nt);
        }
    }
done:
    clt_tensor_free(seed);
    free_all(g, nt);
    free(g);
    free(at);
    free(hot);
    free(row);
    if (targets != tg)
        free(targets);
    return st;
}

/* Runs fn with input j replaced by a float64 copy holding x, and reads
 * every output back into y[i] (new arrays). */
static clt_status evaluate(check *c, size_t j, const double *x, double **y)
{
    clt_status st = CLT_OK;
    const clt_tensor *orig = c->in[j];
    clt_tensor *moved = NULL, *outs[MAXOUT] = {0};
    clt_tensor **in = clt__calloc(c->n, sizeof *in);
    size_t m = 0;
    if (in == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    CLT__TRY(clt_tensor_from_host(orig->dev, CLT_FLOAT64, orig->ndim, orig->shape, x, &moved));
    CLT__TRY(clt_set_requires_grad(moved, 1));
    for (size_t k = 0; k < c->n; k++)
        in[k] = k == j ? moved : c->in[k];
    CLT__TRY(run(c->fn, c->user, in, c->n, outs, &m));
    if (m != c->nout) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "the function gave %zu outputs for moved inputs, %zu at first", m,
                        c->nout);
        goto done;
    }
    for (size_t i = 0; i < m; i++) {
        if (outs[i]->numel != c->onum[i]) {
            st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "output %zu has %lld elements for moved inputs, %lld at first", i,
                            (long long)outs[i]->numel, (long long)c->onum[i]);
            goto done;
        }
        CLT__TRY(clt__read_doubles("clt_gradcheck", outs[i], &y[i]));
    }
done:
    free_all(outs, m);
    clt_tensor_free(moved);
    free(in);
    return st;
}

/* The numerical Jacobian: (f(x + eps) - f(x - eps)) / (2 eps), element by
 * element of each input that requires grad. */
static clt_status numerical(check *c)
{
    clt_status st = CLT_OK;
    double *x = NULL, *ya[MAXOUT] = {0}, *yb[MAXOUT] = {0};
    for (size_t j = 0; j < c->n && st == CLT_OK; j++) {
        if (!clt__requires_grad(c->in[j]))
            continue;
        int64_t cols = c->in[j]->numel;
        CLT__TRY(clt__read_doubles("clt_gradcheck", c->in[j], &x));
        for (int64_t e = 0; e < cols; e++) {
            double orig = x[e];
            x[e] = orig - c->eps;
            CLT__TRY(evaluate(c, j, x, ya));
            x[e] = orig + c->eps;
            CLT__TRY(evaluate(c, j, x, yb));
            x[e] = orig;
            for (size_t i = 0; i < c->nout; i++) {
                double *num = c->b[i * c->n + j].num;
                for (int64_t r = 0; r < c->onum[i]; r++)
                    num[r * cols + e] = (yb[i][r] - ya[i][r]) / (2 * c->eps);
                free(ya[i]);
                free(yb[i]);
                ya[i] = yb[i] = NULL;
            }
        }
        free(x);
        x = NULL;
    }
done:
    free(x);
    for (size_t i = 0; i < MAXOUT; i++) {
        free(ya[i]);
        free(yb[i]);
    }
    return st;
}

/* "(2, 1)": element k of a tensor of shape t, as indices. */
static const char *index_str(char *buf, size_t size, const clt_tensor *t, int64_t k)
{
    int64_t idx[CLT_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? k % t->shape[d] : 0;
        k = t->shape[d] ? k / t->shape[d] : 0;
    }
    size_t at = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < t->ndim && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, d ? ", %lld" : "%lld", (long long)idx[d]);
    if (at < size)
        snprintf(buf + at, size - at, ")");
    return buf;
}

static clt_status compare(const check *c, clt_tensor **outs, double atol, double rtol)
{
    for (size_t i = 0; i < c->nout; i++) {
        for (size_t j = 0; j < c->n; j++) {
            if (!clt__requires_grad(c->in[j]))
                continue;
            const block *b = &c->b[i * c->n + j];
            int64_t cols = c->in[j]->numel;
            for (int64_t r = 0; r < c->onum[i]; r++) {
                for (int64_t e = 0; e < cols; e++) {
                    double a = b->ana[r * cols + e], num = b->num[r * cols + e];
                    if (fabs(a - num) <= atol + rtol * fabs(num))
                        continue;
                    char s1[96], s2[96];
                    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                      "Jacobian mismatch for output %zu with respect to input "
                                      "%zu, at output element %s, input element %s: "
                                      "numerical %.10g, analytical %.10g%s",
                                      i, j, index_str(s1, sizeof s1, outs[i], r),
                                      index_str(s2, sizeof s2, c->in[j], e), num, a,
                                      c->diff[i] ? "" : " (the output does not require grad)");
                }
            }
        }
    }
    return CLT_OK;
}

static clt_status gradcheck(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                            size_t n, const clt_gradcheck_opts *opts)
{
    if (fn == NULL || inputs == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "argument '%s' is NULL",
                          fn == NULL ? "fn" : "inputs");
    bool any = false;
    for (size_t k = 0; k < n; k++) {
        if (inputs[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "input %zu is NULL", k);
        if (!clt__requires_grad(inputs[k]))
            continue;
        any = true;
        if (inputs[k]->dtype != CLT_FLOAT64)
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "Input #%zu requires gradient and is not a double precision "
                              "floating point (it is %s): gradcheck expects float64 inputs",
                              k, clt_dtype_name(inputs[k]->dtype));
    }
    if (!any)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "gradcheck expects at least one input tensor to require gradient, "
                          "but none of the them have requires_grad=True.");
    double eps = opts && opts->eps > 0 ? opts->eps : 1e-6;
    double atol = opts && opts->atol > 0 ? opts->atol : 1e-5;
    double rtol = opts && opts->rtol > 0 ? opts->rtol : 1e-3;
    check c = {.fn = fn, .user = user, .in = inputs, .n = n, .eps = eps};
    clt_tensor *outs[MAXOUT] = {0};
    size_t m = 0;
    clt_status st = run(fn, user, inputs, n, outs, &m);
    if (st != CLT_OK)
        return st;
    c.nout = m;
    if ((c.b = clt__calloc(m > 0 ? m * n : 1, sizeof *c.b)) == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < m; i++) {
        if (!clt__dtype_is_float(outs[i]->dtype)) {
            st = clt__error(CLT_ERR_DTYPE_MISMATCH,
                            "output %zu of the function is %s; gradcheck expects floating "
                            "outputs",
                            i, clt_dtype_name(outs[i]->dtype));
            goto done;
        }
        c.onum[i] = outs[i]->numel;
        c.diff[i] = clt__requires_grad(outs[i]);
        for (size_t j = 0; j < n; j++) {
            size_t cells = (size_t)(c.onum[i] * inputs[j]->numel);
            block *b = &c.b[i * n + j];
            b->num = clt__calloc(cells ? cells : 1, sizeof *b->num);
            b->ana = clt__calloc(cells ? cells : 1, sizeof *b->ana);
            if (b->num == NULL || b->ana == NULL) {
                st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
                goto done;
            }
        }
    }
    CLT__TRY(analytical(&c, outs));
    CLT__TRY(numerical(&c));
    st = compare(&c, outs, atol, rtol);
done:
    for (size_t k = 0; c.b && k < m * n; k++) {
        free(c.b[k].num);
        free(c.b[k].ana);
    }
    free(c.b);
    free_all(outs, m);
    return st;
}

clt_status clt_gradcheck(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                         const clt_gradcheck_opts *opts)
{
    clt_status st = gradcheck(fn, user, inputs, n, opts);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, "clt_gradcheck");
}

/* gradgradcheck's function of (inputs, grad_outputs): the gradients of
 * fn's differentiable outputs with respect to its inputs that require
 * grad, with a graph. */
typedef struct gg {
    clt_functional_fn fn;
    void *user;
    size_t n, ngrad;
} gg;

static clt_status grad_of(void *user, clt_tensor *const *args, size_t nargs, clt_tensor **outs,
                          size_t *m)
{
    (void)nargs;
    const gg *g = user;
    clt_tensor *o[MAXOUT] = {0}, *dout[MAXOUT], *gout[MAXOUT], **in = NULL, **res = NULL;
    size_t k = 0, nd = 0, ni = 0;
    *m = 0;
    clt_status st = run(g->fn, g->user, args, g->n, o, &k);
    if (st != CLT_OK)
        return st;
    if (k != g->ngrad) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "the function gave %zu outputs for %zu grad_outputs", k, g->ngrad);
        goto done;
    }
    for (size_t i = 0; i < k; i++)
        if (clt__requires_grad(o[i])) {
            dout[nd] = o[i];
            gout[nd++] = args[g->n + i];
        }
    in = clt__calloc(g->n, sizeof *in);
    res = clt__calloc(g->n, sizeof *res);
    if (in == NULL || res == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t j = 0; j < g->n; j++)
        if (clt__requires_grad(args[j]))
            in[ni++] = args[j];
    clt_grad_opts opts = {0, 1, 1};
    CLT__TRY(clt_autograd_grad_ex(dout, nd, gout, in, ni, &opts, res));
    for (size_t j = 0; j < ni; j++) {
        if (res[j] == NULL)
            continue;
        if (*m == MAXOUT) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "gradgradcheck of a function of more than %d differentiable inputs",
                            MAXOUT);
            goto done;
        }
        outs[(*m)++] = res[j];
        res[j] = NULL;
    }
done:
    if (st != CLT_OK) {
        free_all(outs, *m);
        *m = 0;
    }
    free_all(res, ni);
    free(res);
    free(in);
    free_all(o, k);
    return st;
}

clt_status clt_gradgradcheck(clt_functional_fn fn, void *user, clt_tensor *const *inputs,
                             size_t n, clt_tensor *const *grad_outputs, size_t ngrad,
                             const clt_gradcheck_opts *opts)
{
    static const char name[] = "clt_gradgradcheck";
    if (fn == NULL || (inputs == NULL && n > 0))
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", name,
                          fn == NULL ? "fn" : "inputs");
    for (size_t k = 0; k < n; k++)
        if (inputs[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: input %zu is NULL", name, k);
    clt_status st = CLT_OK;
    clt_tensor *outs[MAXOUT] = {0}, *made[MAXOUT] = {0}, **args = NULL;
    size_t m = 0;
    if (grad_outputs == NULL) {
        /* torch: randn_like of each output, requiring grad */
        CLT__TRY(run(fn, user, inputs, n, outs, &m));
        for (size_t i = 0; i < m; i++) {
            CLT__TRY(clt_randn_like(NULL, outs[i], &made[i]));
            CLT__TRY(clt_set_requires_grad(made[i], 1));
        }
        ngrad = m;
    } else {
        if (ngrad > MAXOUT) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%zu grad_outputs: at most %d", ngrad,
                            MAXOUT);
            goto done;
        }
        for (size_t i = 0; i < ngrad; i++) {
            if (grad_outputs[i] == NULL) {
                st = clt__error(CLT_ERR_NULL_ARGUMENT, "grad_outputs %zu is NULL", i);
                goto done;
            }
        }
    }
    if ((args = clt__calloc(n + ngrad, sizeof *args)) == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t k = 0; k < n; k++)
        args[k] = inputs[k];
    /* the caller's grad_outputs as they are: a reference taken and freed
     * here would take them out of the caller's scope */
    for (size_t i = 0; i < ngrad; i++)
        args[n + i] = grad_outputs ? grad_outputs[i] : made[i];
    gg g = {fn, user, n, ngrad};
    st = gradcheck(grad_of, &g, args, n + ngrad, opts);
done:
    free(args);
    free_all(outs, m);
    free_all(made, MAXOUT);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
}
