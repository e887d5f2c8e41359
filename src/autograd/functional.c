/* functional.c: torch.autograd.functional: jacobian, hessian, vjp, jvp,
 * vhp and hvp of a user's function, built on clt_autograd_grad_ex as
 * torch builds them on torch.autograd.grad (forward-mode products by the
 * double-backward trick). */
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

static void free_array(clt_tensor **v, size_t n)
{
    free_all(v, n);
    free(v);
}

static clt_tensor **new_array(size_t n)
{
    return clt__calloc(n ? n : 1, sizeof(clt_tensor *));
}

static clt_status oom(void)
{
    return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
}

static clt_status check_inputs(clt_functional_fn fn, clt_tensor *const *inputs, size_t n)
{
    if (fn == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "argument 'fn' is NULL");
    if (inputs == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "argument 'inputs' is NULL");
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "the function needs at least one input");
    for (size_t k = 0; k < n; k++) {
        if (inputs[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "input %zu is NULL", k);
        if (!clt__dtype_is_float(inputs[k]->dtype))
            return clt__error(CLT_ERR_DTYPE_MISMATCH,
                              "input %zu is %s: only tensors of floating point dtype can be "
                              "differentiated with respect to",
                              k, clt_dtype_name(inputs[k]->dtype));
    }
    return CLT_OK;
}

/* torch's _grad_preprocess: what fn runs on.  With create_graph an input
 * that requires grad becomes a view that keeps its history (view_as);
 * otherwise a detached handle that requires grad. */
static clt_status preprocess(clt_tensor *const *in, size_t n, bool create_graph, clt_tensor **out)
{
    clt_status st = CLT_OK;
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        if (create_graph && clt__requires_grad(in[k])) {
            st = clt_reshape(in[k], in[k]->ndim, in[k]->shape, &out[k]);
        } else {
            st = clt_detach(in[k], &out[k]);
            if (st == CLT_OK)
                st = clt_set_requires_grad(out[k], 1);
        }
    }
    return st;
}

/* Runs fn on in; *m new tensors in outs (an array of MAXOUT). */
static clt_status call(clt_functional_fn fn, void *user, clt_tensor *const *in, size_t n,
                       clt_tensor **outs, size_t *m)
{
    *m = 0;
    clt__ok();
    clt_status st = fn(user, in, n, outs, m);
    st = clt__callback_outputs(st, outs, m, MAXOUT, NULL, in, n);
    if (st != CLT_OK)
        free_all(outs, *m);
    if (st != CLT_OK)
        *m = 0;
    return st;
}

/* torch's _check_requires_grad, for strict mode.  what: "outputs",
 * "jacobian", "hessian" or "grad_inputs". */
static clt_status check_requires_grad(clt_tensor *const *t, size_t n, const char *what,
                                      bool strict)
{
    for (size_t i = 0; strict && i < n; i++) {
        if (t[i] == NULL)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "The output of the user-provided function is independent of "
                              "input %zu. This is not allowed in strict mode.",
                              i);
        if (clt__requires_grad(t[i]))
            continue;
        if (strcmp(what, "hessian") == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "The hessian of the user-provided function with respect to input "
                              "%zu is independent of the input. This is not allowed in strict "
                              "mode. You should ensure that your function is thrice "
                              "differentiable and that the hessian depends on the inputs.",
                              i);
        if (strcmp(what, "jacobian") == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "While computing the hessian, found that the jacobian of the "
                              "user-provided function with respect to input %zu is independent "
                              "of the input. This is not allowed in strict mode. You should "
                              "ensure that your function is twice differentiable and that the "
                              "jacobian depends on the inputs (this would be violated by a "
                              "linear function for example).",
                              i);
        if (strcmp(what, "grad_inputs") == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "The gradient with respect to input %zu is independent of the "
                              "inputs of the user-provided function. This is not allowed in "
                              "strict mode.",
                              i);
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "Output %zu of the user-provided function does not require "
                          "gradients. The outputs must be computed in a differentiable manner "
                          "from the input when running in strict mode.",
                          i);
    }
    return CLT_OK;
}

/* torch's _validate_v: v (nv entries) against `other`. */
static clt_status validate_v(clt_tensor *const *v, size_t nv, clt_tensor *const *other,
                             size_t n)
{
    if (nv != n)
        return n > 1 ? clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "v is a tuple of invalid length: should be %zu but got %zu.",
                                  n, nv)
                     : clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "The given v should contain a single Tensor.");
    for (size_t k = 0; k < n; k++) {
        char s1[160], s2[160];
        if (v[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "entry %zu of v is NULL", k);
        bool same = v[k]->ndim == other[k]->ndim;
        for (int d = 0; same && d < v[k]->ndim; d++)
            same = v[k]->shape[d] == other[k]->shape[d];
        if (!same) {
            char pre[48] = "";
            if (n > 1)
                snprintf(pre, sizeof pre, "Entry %zu in ", k);
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%sv has invalid size: should be %s but got %s.",
                              pre, clt__shape_str(s1, sizeof s1, other[k]->ndim, other[k]->shape),
                              clt__shape_str(s2, sizeof s2, v[k]->ndim, v[k]->shape));
        }
    }
    return CLT_OK;
}

/* v NULL: `what` (the inputs, the outputs) must be one one-element tensor. */
static clt_status v_may_be_null(clt_tensor *const *t, size_t n, const char *what)
{
    if (n != 1 || t[0]->numel != 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "The vector v can only be None if the %s a single Tensor with a "
                          "single element.",
                          what);
    return CLT_OK;
}

/* torch's _autograd_grad: the gradients of the outputs that require grad
 * (gouts their grad_outputs, or NULL) with respect to the n inputs, NULL
 * for those they do not reach, in grads (n slots). */
static clt_status autograd_grad(clt_tensor *const *outs, size_t nout, clt_tensor *const *gouts,
                                clt_tensor *const *in, size_t n, bool create_graph,
                                bool retain, clt_tensor **grads)
{
    clt_tensor **o = new_array(nout), **g = new_array(nout);
    size_t k = 0;
    bool any_g = false;
    clt_status st = CLT_OK;
    for (size_t j = 0; j < n; j++)
        grads[j] = NULL;
    if (o == NULL || g == NULL) {
        st = oom();
        goto done;
    }
    for (size_t i = 0; i < nout; i++) {
        if (outs[i] && clt__requires_grad(outs[i])) {
            o[k] = outs[i];
            g[k] = gouts ? gouts[i] : NULL;
            any_g = any_g || g[k];
            k++;
        }
    }
    if (k > 0) {
        clt_grad_opts opts = {retain ? 1 : 0, create_graph, 1};
        st = clt_autograd_grad_ex(o, k, any_g ? g : NULL, in, n, &opts, grads);
    }
done:
    free(o);
    free(g);
    return st;
}

/* torch's _fill_in_zeros: zeros (of refs' shapes) where no gradient came,
 * or strict mode's error for the stage. */
static clt_status fill_in_zeros(clt_tensor **grads, clt_tensor *const *refs, size_t n,
                                bool strict, bool create_graph, const char *stage)
{
    bool dbl = strstr(stage, "double") != NULL;
    for (size_t i = 0; i < n; i++) {
        if (grads[i] == NULL) {
            if (!strict) {
                clt_status st = clt_zeros_like(refs[i], &grads[i]);
                if (st != CLT_OK)
                    return st;
                continue;
            }
            if (strcmp(stage, "back") == 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "The output of the user-provided function is independent of "
                                  "input %zu. This is not allowed in strict mode.",
                                  i);
            if (strcmp(stage, "back_trick") == 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "The gradient with respect to the input is independent of "
                                  "entry %zu in the grad_outputs when using the double backward "
                                  "trick to compute forward mode gradients. This is not allowed "
                                  "in strict mode.",
                                  i);
            if (strcmp(stage, "double_back") == 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "The jacobian of the user-provided function is independent of "
                                  "input %zu. This is not allowed in strict mode.",
                                  i);
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "The hessian of the user-provided function is independent of "
                              "entry %zu in the grad_jacobian. This is not allowed in strict "
                              "mode as it prevents from using the double backward trick to "
                              "replace forward mode AD.",
                              i);
        }
        if (strict && create_graph && !clt__requires_grad(grads[i]))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "The %s of the user-provided function is independent of input "
                              "%zu. This is not allowed in strict mode when create_graph=True.",
                              dbl ? "hessian" : "jacobian", i);
    }
    return CLT_OK;
}

/* torch's _grad_postprocess: without create_graph the results are
 * detached. */
static clt_status postprocess(clt_tensor **t, size_t n, bool create_graph)
{
    for (size_t k = 0; k < n && !create_graph; k++) {
        clt_tensor *d = NULL;
        if (t[k] == NULL || !clt__requires_grad(t[k]))
            continue;
        clt_status st = clt_detach(t[k], &d);
        if (st != CLT_OK)
            return st;
        clt_tensor_free(t[k]);
        t[k] = d;
    }
    return CLT_OK;
}

/* Zeros like each of t that require grad themselves (the double-backward
 * trick's placeholders). */
static clt_status zeros_requiring_grad(clt_tensor *const *t, size_t n, clt_tensor **out)
{
    clt_status st = CLT_OK;
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        st = clt_zeros_like(t[k], &out[k]);
        if (st == CLT_OK)
            st = clt_set_requires_grad(out[k], 1);
    }
    return st;
}

/* Copies the m tensors of v into a new array in *out (taking them). */
static clt_status hand_out(clt_tensor **v, size_t m, clt_tensor ***out)
{
    clt_tensor **a = new_array(m);
    if (a == NULL)
        return oom();
    for (size_t k = 0; k < m; k++) {
        a[k] = v[k];
        v[k] = NULL;
    }
    *out = a;
    return CLT_OK;
}

static const clt_functional_opts no_opts = {0, 0};

/* ---- jacobian and hessian -------------------------------------------------------- */

/* The Jacobian of out with respect to the n inputs, row by row: one
 * backward pass per element of out, seeded with a one-hot gradient, the
 * rows stacked and viewed as out.shape + in.shape (torch's reverse mode). */
static clt_status jacobian_of(const clt_tensor *out, size_t i, clt_tensor *const *in, size_t n,
                              bool create_graph, bool strict, clt_tensor **jac)
{
    clt_status st = CLT_OK;
    int64_t rows = out->numel;
    clt_tensor **part = clt__calloc((size_t)(rows ? rows : 1) * n, sizeof *part);
    double *hot = clt__calloc((size_t)(rows ? rows : 1), sizeof *hot);
    clt_tensor *seed = NULL, *stacked = NULL;
    bool diff = clt__requires_grad(out);
    if (part == NULL || hot == NULL) {
        st = oom();
        goto done;
    }
    for (int64_t r = 0; r < rows; r++) {
        clt_tensor **vj = part + (size_t)r * n;
        if (diff) {
            hot[r] = 1.0;
            if (r > 0)
                hot[r - 1] = 0.0;
            CLT__TRY(clt_empty(out->dev, out->dtype, out->ndim, out->shape, &seed));
            CLT__TRY(clt__write_doubles("clt_jacobian", seed, hot));
            clt_tensor *o = (clt_tensor *)out;
            clt_grad_opts opts = {1, create_graph, 1};
            CLT__TRY(clt_autograd_grad_ex(&o, 1, &seed, in, n, &opts, vj));
            clt_tensor_free(seed);
            seed = NULL;
        }
        for (size_t j = 0; j < n; j++) {
            if (vj[j] != NULL) {
                if (strict && create_graph && !clt__requires_grad(vj[j])) {
                    st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                    "The jacobian of the user-provided function is independent "
                                    "of input %zu. This is not allowed in strict mode when "
                                    "create_graph=True.",
                                    i);
                    goto done;
                }
                continue;
            }
            if (strict) {
                st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                                "Output %zu of the user-provided function is independent of "
                                "input %zu. This is not allowed in strict mode.",
                                i, j);
                goto done;
            }
            CLT__TRY(clt_zeros_like(in[j], &vj[j]));
        }
    }
    for (size_t j = 0; j < n; j++) {
        int64_t shape[2 * CLT_MAX_DIMS];
        int nd = out->ndim + in[j]->ndim;
        if (nd > CLT_MAX_DIMS) {
            st = clt__error(CLT_ERR_TOO_MANY_DIMS,
                            "the Jacobian of output %zu with respect to input %zu would have %d "
                            "dimensions; at most %d are supported",
                            i, j, nd, CLT_MAX_DIMS);
            goto done;
        }
        memcpy(shape, out->shape, (size_t)out->ndim * sizeof *shape);
        memcpy(shape + out->ndim, in[j]->shape, (size_t)in[j]->ndim * sizeof *shape);
        if (rows == 0) {
            CLT__TRY(clt_zeros(in[j]->dev, in[j]->dtype, nd, shape, &jac[j]));
            continue;
        }
        const clt_tensor **col = clt__calloc((size_t)rows, sizeof *col);
        if (col == NULL) {
            st = oom();
            goto done;
        }
        for (int64_t r = 0; r < rows; r++)
            col[r] = part[(size_t)r * n + j];
        st = clt_stack(col, (size_t)rows, 0, &stacked);
        free(col);
        if (st != CLT_OK)
            goto done;
        CLT__TRY(clt_reshape(stacked, nd, shape, &jac[j]));
        clt_tensor_free(stacked);
        stacked = NULL;
    }
done:
    clt_tensor_free(seed);
    clt_tensor_free(stacked);
    if (part)
        free_all(part, (size_t)rows * n);
    free(part);
    free(hot);
    if (st != CLT_OK)
        free_all(jac, n);
    return st;
}

/* clt_jacobian without the name in its messages (clt_hessian runs it). */
static clt_status jacobian(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                           const clt_functional_opts *o, clt_tensor ***jac, size_t *m)
{
    clt_status st = CLT_OK;
    clt_tensor *outs[MAXOUT] = {0}, **prep = new_array(n), **res = NULL;
    size_t nout = 0;
    bool cg = o->create_graph != 0;
    if (prep == NULL)
        return oom();
    CLT__TRY(preprocess(inputs, n, cg, prep));
    CLT__TRY(call(fn, user, prep, n, outs, &nout));
    CLT__TRY(check_requires_grad(outs, nout, "outputs", o->strict));
    if ((res = new_array(nout * n)) == NULL) {
        st = oom();
        goto done;
    }
    for (size_t i = 0; i < nout; i++)
        CLT__TRY(jacobian_of(outs[i], i, prep, n, cg, o->strict, res + i * n));
    CLT__TRY(postprocess(res, nout * n, cg));
    *jac = res;
    res = NULL;
    *m = nout;
done:
    free_array(res, nout * n);
    free_all(outs, nout);
    free_array(prep, n);
    return st;
}

clt_status clt_jacobian(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                        const clt_functional_opts *opts, clt_tensor ***jac, size_t *m)
{
    static const char name[] = "clt_jacobian";
    CLT__REQUIRE_ARG(jac, name);
    *jac = NULL;
    CLT__REQUIRE_ARG(m, name);
    *m = 0;
    clt_status st = check_inputs(fn, inputs, n);
    if (st == CLT_OK) {
        int was = clt_set_grad_enabled(1);
        st = jacobian(fn, user, inputs, n, opts ? opts : &no_opts, jac, m);
        clt_set_grad_enabled(was);
    }
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
}

/* What clt_hessian's inner functions read. */
typedef struct hess {
    clt_functional_fn fn;
    void *user;
    bool strict;
} hess;

/* torch's ensure_single_output_function: fn's one one-element output,
 * squeezed to a scalar. */
static clt_status single_output(void *user, clt_tensor *const *in, size_t n, clt_tensor **outs,
                                size_t *m)
{
    const hess *h = user;
    clt_tensor *o[MAXOUT] = {0};
    size_t k = 0;
    clt_status st = call(h->fn, h->user, in, n, o, &k);
    if (st == CLT_OK)
        st = check_requires_grad(o, k, "outputs", h->strict);
    if (st == CLT_OK && k != 1)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "The function given to hessian should return a single Tensor (it gave "
                        "%zu)",
                        k);
    if (st == CLT_OK && o[0]->numel != 1)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "The Tensor returned by the function given to hessian should contain "
                        "a single element");
    if (st == CLT_OK)
        st = clt_reshape(o[0], 0, NULL, &outs[0]);
    free_all(o, k);
    *m = st == CLT_OK;
    return st;
}

/* torch's jac_func: the Jacobian of the single output, with a graph. */
static clt_status jac_func(void *user, clt_tensor *const *in, size_t n, clt_tensor **outs,
                           size_t *m)
{
    static const clt_functional_opts inner = {1, 0};
    const hess *h = user;
    clt_tensor **jac = NULL;
    size_t one = 0;
    *m = 0;
    if (n > MAXOUT)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "the Hessian of a function of %zu inputs: at most %d are supported",
                          n, MAXOUT);
    clt_status st = jacobian(single_output, user, in, n, &inner, &jac, &one);
    if (st == CLT_OK)
        st = check_requires_grad(jac, n, "jacobian", h->strict);
    if (st != CLT_OK) {
        free_array(jac, one * n);
        return st;
    }
    for (size_t j = 0; j < n; j++)
        outs[j] = jac[j];
    free(jac);
    *m = n;
    return CLT_OK;
}

clt_status clt_hessian(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                       const clt_functional_opts *opts, clt_tensor ***out)
{
    static const char name[] = "clt_hessian";
    CLT__REQUIRE_ARG(out, name);
    *out = NULL;
    const clt_functional_opts *o = opts ? opts : &no_opts;
    clt_status st = check_inputs(fn, inputs, n);
    size_t m = 0;
    if (st == CLT_OK) {
        hess h = {fn, user, o->strict != 0};
        int was = clt_set_grad_enabled(1);
        st = jacobian(jac_func, &h, inputs, n, o, out, &m);
        clt_set_grad_enabled(was);
    }
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
}

/* ---- vector products -------------------------------------------------------------- */

/* vjp (forward 0) and jvp (forward 1): fn's outputs in *outputs (*m of
 * them) and the product in *result (n tensors for vjp, *m for jvp). */
static clt_status vector_product(const char *name, bool forward, clt_functional_fn fn,
                                 void *user, clt_tensor *const *inputs, size_t n,
                                 clt_tensor *const *v, size_t nv, const clt_functional_opts *opts,
                                 clt_tensor ***outputs, size_t *m, clt_tensor ***result)
{
    CLT__REQUIRE_ARG(outputs, name);
    *outputs = NULL;
    CLT__REQUIRE_ARG(m, name);
    *m = 0;
    CLT__REQUIRE_ARG(result, name);
    *result = NULL;
    const clt_functional_opts *o = opts ? opts : &no_opts;
    bool cg = o->create_graph != 0;
    clt_status st = check_inputs(fn, inputs, n);
    if (st != CLT_OK)
        return clt__error_in(st, name);
    clt_tensor *outs[MAXOUT] = {0}, *gouts[MAXOUT] = {0}, *res[MAXOUT] = {0};
    clt_tensor **prep = new_array(n), **gin = new_array(n);
    size_t nout = 0;
    int was = clt_set_grad_enabled(1);
    if (prep == NULL || gin == NULL) {
        st = oom();
        goto done;
    }
    CLT__TRY(preprocess(inputs, n, cg, prep));
    if (forward)
        CLT__TRY(v ? validate_v(v, nv, prep, n)
                   : v_may_be_null(prep, n, "input to the user-provided function is"));
    CLT__TRY(call(fn, user, prep, n, outs, &nout));
    CLT__TRY(check_requires_grad(outs, nout, "outputs", o->strict));
    if (!forward) {
        CLT__TRY(v ? validate_v(v, nv, outs, nout)
                   : v_may_be_null(outs, nout, "user-provided function returns"));
        CLT__TRY(autograd_grad(outs, nout, v, prep, n, cg, cg, gin));
        CLT__TRY(fill_in_zeros(gin, prep, n, o->strict, cg, "back"));
        CLT__TRY(postprocess(gin, n, cg));
    } else {
        /* The backward is linear in gouts: their values (zeros) do not
         * matter, only that the gradients depend on them. */
        CLT__TRY(zeros_requiring_grad(outs, nout, gouts));
        CLT__TRY(autograd_grad(outs, nout, gouts, prep, n, true, true, gin));
        CLT__TRY(check_requires_grad(gin, n, "grad_inputs", o->strict));
        CLT__TRY(autograd_grad(gin, n, v, gouts, nout, cg, cg, res));
        CLT__TRY(fill_in_zeros(res, outs, nout, o->strict, cg, "back_trick"));
        CLT__TRY(postprocess(res, nout, cg));
    }
    CLT__TRY(postprocess(outs, nout, cg));
    CLT__TRY(forward ? hand_out(res, nout, result) : hand_out(gin, n, result));
    st = hand_out(outs, nout, outputs);
    if (st == CLT_OK)
        *m = nout;
done:
    clt_set_grad_enabled(was);
    free_all(outs, nout);
    free_all(gouts, nout);
    free_all(res, nout);
    free_array(prep, n);
    free_array(gin, n);
    if (st != CLT_OK && *result) {
        free_array(*result, forward ? nout : n);
        *result = NULL;
    }
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
}

clt_status clt_vjp(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                   clt_tensor *const *v, size_t nv, const clt_functional_opts *opts,
                   clt_tensor ***outputs, size_t *m, clt_tensor ***vjp)
{
    return vector_product("clt_vjp", false, fn, user, inputs, n, v, nv, opts, outputs, m, vjp);
}

clt_status clt_jvp(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                   clt_tensor *const *v, const clt_functional_opts *opts, clt_tensor ***outputs,
                   size_t *m, clt_tensor ***jvp)
{
    return vector_product("clt_jvp", true, fn, user, inputs, n, v, n, opts, outputs, m, jvp);
}

/* vhp (hvp 0) and hvp (hvp 1). */
static clt_status hessian_product(const char *name, bool hvp, clt_functional_fn fn, void *user,
                                  clt_tensor *const *inputs, size_t n, clt_tensor *const *v,
                                  const clt_functional_opts *opts, clt_tensor **output,
                                  clt_tensor ***result)
{
    CLT__REQUIRE_ARG(output, name);
    *output = NULL;
    CLT__REQUIRE_ARG(result, name);
    *result = NULL;
    const clt_functional_opts *o = opts ? opts : &no_opts;
    const char *what = hvp ? "hvp" : "vhp";
    bool cg = o->create_graph != 0;
    clt_status st = check_inputs(fn, inputs, n);
    if (st != CLT_OK)
        return clt__error_in(st, name);
    clt_tensor *outs[MAXOUT] = {0};
    clt_tensor **prep = new_array(n), **jac = new_array(n), **gjac = new_array(n);
    clt_tensor **dbl = new_array(n), **res = new_array(n);
    size_t nout = 0;
    int was = clt_set_grad_enabled(1);
    if (prep == NULL || jac == NULL || gjac == NULL || dbl == NULL || res == NULL) {
        st = oom();
        goto done;
    }
    CLT__TRY(preprocess(inputs, n, cg, prep));
    CLT__TRY(v ? validate_v(v, n, prep, n) : v_may_be_null(prep, n, "input to the user-provided function is"));
    CLT__TRY(call(fn, user, prep, n, outs, &nout));
    CLT__TRY(check_requires_grad(outs, nout, "outputs", o->strict));
    if (nout != 1) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "The function given to %s should return a single Tensor (it gave %zu)",
                        what, nout);
        goto done;
    }
    if (outs[0]->numel != 1) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "The Tensor returned by the function given to %s should contain a "
                        "single element",
                        what);
        goto done;
    }
    CLT__TRY(autograd_grad(outs, 1, NULL, prep, n, true, true, jac));
    CLT__TRY(check_requires_grad(jac, n, "jacobian", o->strict));
    if (hvp) {
        CLT__TRY(zeros_requiring_grad(prep, n, gjac));
        CLT__TRY(autograd_grad(jac, n, gjac, prep, n, true, true, dbl));
        CLT__TRY(check_requires_grad(jac, n, "hessian", o->strict)); /* torch checks jac */
        CLT__TRY(autograd_grad(dbl, n, v, gjac, n, cg, cg, res));
        CLT__TRY(fill_in_zeros(res, prep, n, o->strict, cg, "double_back_trick"));
    } else {
        CLT__TRY(autograd_grad(jac, n, v, prep, n, cg, cg, res));
        CLT__TRY(fill_in_zeros(res, prep, n, o->strict, cg, "double_back"));
    }
    CLT__TRY(postprocess(outs, 1, cg));
    CLT__TRY(postprocess(res, n, cg));
    *output = outs[0];
    outs[0] = NULL;
    *result = res;
    res = NULL;
done:
    clt_set_grad_enabled(was);
    free_all(outs, nout);
    free_array(prep, n);
    free_array(jac, n);
    free_array(gjac, n);
    free_array(dbl, n);
    free_array(res, n);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
}

clt_status clt_vhp(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                   clt_tensor *const *v, const clt_functional_opts *opts, clt_tensor **output,
                   clt_tensor ***res)
{
    return hessian_product("clt_vhp", false, fn, user, inputs, n, v, opts, output, res);
}

clt_status clt_hvp(clt_functional_fn fn, void *user, clt_tensor *const *inputs, size_t n,
                   clt_tensor *const *v, const clt_functional_opts *opts, clt_tensor **output,
                   clt_tensor ***res)
{
    return hessian_product("clt_hvp", true, fn, user, inputs, n, v, opts, output, res);
}
