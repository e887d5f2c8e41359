/* checkpoint.c: gradient checkpointing, like torch.utils.checkpoint: one
 * node for the outputs of a function run without recording, whose backward
 * runs the function again with recording on and backpropagates through it. */
#include <stdlib.h>

#include "autograd/autograd.h"

/* What CheckpointBackward keeps: the function, its inputs (handles on
 * their data, with the versions they had), and the generators' state when
 * it first ran.  The node's edges are the inputs, then the tensors the
 * function read besides them (leaves: a layer's parameters). */
typedef struct ckpt {
    clt_checkpoint_fn fn;
    void *user;
    size_t n, nout;
    clt_tensor **saved;
    uint64_t *version;
    clt__rng_state *rng;
    size_t nrng;
} ckpt;

static void ckpt_free(void *p)
{
    ckpt *c = p;
    if (c == NULL)
        return;
    for (size_t k = 0; c->saved && k < c->n; k++)
        clt_tensor_free(c->saved[k]);
    free(c->saved);
    free(c->version);
    free(c->rng);
    free(c);
}

static void free_all(clt_tensor **v, size_t n)
{
    for (size_t k = 0; v && k < n; k++) {
        clt_tensor_free(v[k]);
        v[k] = NULL;
    }
}

/* Runs fn with the generators set to `rng`, then puts them back. */
static clt_status rerun(const ckpt *c, clt_tensor *const *in, clt_tensor **outs, size_t *m)
{
    clt__rng_state *now = NULL;
    size_t nnow = 0;
    clt_status st = clt__rng_state_get(&now, &nnow);
    if (st != CLT_OK)
        return st;
    clt__rng_state_set(c->rng, c->nrng);
    int was = clt_set_grad_enabled(1);
    st = c->fn(c->user, in, c->n, outs, m);
    clt_set_grad_enabled(was);
    clt__rng_state_set(now, nnow);
    free(now);
    return st;
}

static clt_status checkpoint_backward(clt__node *node, const clt_tensor *g, clt_tensor **gin)
{
    (void)g;
    ckpt *c = node->ctx;
    size_t nin = (size_t)node->nin, m = 0, nseed = 0, ntg = 0;
    clt_status st = CLT_OK;
    clt_tensor *outs[CLT_CHECKPOINT_MAX_OUTPUTS] = {0};
    clt_tensor *seed_out[CLT_CHECKPOINT_MAX_OUTPUTS];
    clt_tensor *seed_g[CLT_CHECKPOINT_MAX_OUTPUTS];
    clt_tensor **in = clt__calloc(c->n ? c->n : 1, sizeof *in);
    clt_tensor **tg = clt__calloc(nin ? nin : 1, sizeof *tg);
    clt_tensor **res = clt__calloc(nin ? nin : 1, sizeof *res);
    size_t *at = clt__calloc(nin ? nin : 1, sizeof *at);
    if (in == NULL || tg == NULL || res == NULL || at == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t k = 0; k < c->n; k++) {
        uint64_t now = clt__version(c->saved[k]);
        if (now != c->version[k]) {
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "input %zu of the checkpoint has been modified by an in-place "
                            "operation since the forward pass (version %llu; expected %llu)",
                            k, (unsigned long long)now, (unsigned long long)c->version[k]);
            goto done;
        }
    }
    /* Detached copies of the inputs, requiring grad where the graph needs
     * their gradient; then the tensors fn read besides them. */
    for (size_t k = 0; k < c->n; k++) {
        CLT__TRY(clt_detach(c->saved[k], &in[k]));
        if (CLT__NEED(node, k)) {
            CLT__TRY(clt_set_requires_grad(in[k], 1));
            at[ntg] = k;
            tg[ntg++] = in[k];
        }
    }
    for (size_t k = c->n; k < nin; k++) {
        if (CLT__NEED(node, k)) {
            at[ntg] = k;
            tg[ntg++] = node->in[k].leaf;
        }
    }
    st = rerun(c, in, outs, &m);
    if (st != CLT_OK)
        goto done;
    if (m != c->nout) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "the function gave %zu outputs when run again, %zu the first time "
                        "(it must compute the same thing each time)",
                        m, c->nout);
        goto done;
    }
    for (size_t s = 0; s < m; s++) {
        const clt_tensor *gs = clt__node_grad(node, (int)s);
        if (gs && outs[s] && clt_requires_grad(outs[s])) {
            seed_out[nseed] = outs[s];
            seed_g[nseed++] = (clt_tensor *)gs;
        }
    }
    if (nseed > 0 && ntg > 0) {
        CLT__TRY(clt_autograd_grad(seed_out, nseed, seed_g, tg, ntg, 0, 1, res));
        for (size_t i = 0; i < ntg; i++) {
            gin[at[i]] = res[i];
            res[i] = NULL;
        }
    }
done:
    free_all(outs, CLT_CHECKPOINT_MAX_OUTPUTS);
    free_all(in, c->n);
    free_all(res, nin);
    free(in);
    free(tg);
    free(res);
    free(at);
    return st;
}

clt_status clt__callback_outputs(clt_status st, clt_tensor **outs, size_t *nout, size_t max,
                                 clt_tensor **mine, clt_tensor *const *in, size_t nin)
{
    if (st != CLT_OK) {
        if (clt_last_error()[0] == '\0')
            clt__error(st, "the function returned %s", clt_status_name(st));
        return st;
    }
    if (*nout > max) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "the function gave %zu outputs; at most %zu are allowed", *nout, max);
        *nout = max;
        return st;
    }
    for (size_t s = 0; s < *nout; s++) {
        if (outs[s] == NULL)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "the function's output %zu is NULL", s);
        /* An input returned as an output was retained by fn: its handle
         * is the caller's (perhaps a scope's), which clt_tensor_free would
         * take.  Swap in a handle of our own and drop fn's reference. */
        for (size_t k = 0; k < nin; k++)
            if (outs[s] == in[k]) {
                clt_tensor *own = NULL;
                st = clt__alias_history(outs[s], &own);
                clt__tensor_unref(outs[s]);
                outs[s] = own;
                if (st != CLT_OK) {
                    for (size_t r = s + 1; r < *nout; r++)
                        for (size_t q = 0; q < nin; q++)
                            if (outs[r] == in[q]) {
                                clt__tensor_unref(outs[r]);
                                outs[r] = NULL;
                                break;
                            }
                    return st;
                }
                break;
            }
        /* A fresh handle: fn may have returned an input itself. */
        if (mine && (st = clt__alias(outs[s], &mine[s])) != CLT_OK)
            return st;
    }
    return CLT_OK;
}

/* The node's inputs: the caller's, then each tensor fn read that requires
 * grad and is not one of them.  Those must be leaves: a computed tensor
 * reached through user would tie the recomputation to the rest of the
 * graph. */
static clt_status node_inputs(clt_tensor *const *inputs, size_t n, clt_tensor **obs,
                              size_t nobs, const clt_tensor ***out, size_t *nin)
{
    const clt_tensor **v = clt__calloc(n + nobs + 1, sizeof *v);
    if (v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    size_t k = 0;
    for (; k < n; k++)
        v[k] = inputs[k];
    for (size_t j = 0; j < nobs; j++) {
        bool given = false;
        for (size_t i = 0; i < n && !given; i++)
            given = inputs[i] == obs[j];
        if (given)
            continue;
        if (!clt_is_leaf(obs[j])) {
            char s[160];
            free(v);
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "the function reads a computed tensor (%s %s, made by %s) that "
                              "requires grad without taking it as an input: pass it in inputs",
                              clt_dtype_name(obs[j]->dtype),
                              clt__shape_str(s, sizeof s, obs[j]->ndim, obs[j]->shape),
                              clt_grad_fn_name(obs[j]));
        }
        v[k++] = obs[j];
    }
    *out = v;
    *nin = k;
    return CLT_OK;
}

clt_status clt_checkpoint(clt_checkpoint_fn fn, void *user, clt_tensor *const *inputs,
                          size_t n, clt_tensor ***outputs, size_t *m)
{
    const char *name = "clt_checkpoint";
    CLT__REQUIRE_ARG(outputs, name);
    *outputs = NULL;
    CLT__REQUIRE_ARG(m, name);
    *m = 0;
    CLT__REQUIRE_ARG(fn, name);
    if (n > 0)
        CLT__REQUIRE_ARG(inputs, name);
    for (size_t k = 0; k < n; k++)
        if (inputs[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: input %zu is NULL", name, k);
    clt_status st = CLT_OK;
    clt_tensor *outs[CLT_CHECKPOINT_MAX_OUTPUTS] = {0}, *mine[CLT_CHECKPOINT_MAX_OUTPUTS] = {0};
    clt_tensor **obs = NULL, **arr = NULL;
    size_t nout = 0, nobs = 0, nin = 0;
    const clt_tensor **in = NULL;
    ckpt *c = NULL;
    clt__node *node = NULL;
    bool recording = clt_is_grad_enabled();
    void *interrupted = NULL;
    if (recording) {
        c = clt__calloc(1, sizeof *c);
        if (c == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
            goto done;
        }
        c->fn = fn;
        c->user = user;
        CLT__TRY(clt__rng_state_get(&c->rng, &c->nrng));
        CLT__TRY(clt__observe_begin(&interrupted));
        clt_set_grad_enabled(0);
    }
    st = fn(user, inputs, n, outs, &nout);
    if (recording) {
        clt_set_grad_enabled(1);
        clt_status ost = clt__observe_end(interrupted, &obs, &nobs);
        st = st != CLT_OK ? st : ost;
    }
    CLT__TRY(clt__callback_outputs(st, outs, &nout, CLT_CHECKPOINT_MAX_OUTPUTS, mine, inputs, n));
    if (recording) {
        CLT__TRY(node_inputs(inputs, n, obs, nobs, &in, &nin));
        c->n = n;
        c->nout = nout;
        c->saved = clt__calloc(n ? n : 1, sizeof *c->saved);
        c->version = clt__calloc(n ? n : 1, sizeof *c->version);
        if (c->saved == NULL || c->version == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
            goto done;
        }
        for (size_t k = 0; k < n; k++) {
            CLT__TRY(clt__alias(inputs[k], &c->saved[k]));
            clt__scope_disown(c->saved[k]);
            c->version[k] = clt__version(inputs[k]);
        }
        ckpt *owned = c;
        c = NULL; /* the node's now, failure included */
        CLT__TRY(clt__record_outputs(mine, (int)nout, "CheckpointBackward", checkpoint_backward,
                                     (int)nin, in, owned, ckpt_free, &node));
    }
    arr = clt__calloc(nout ? nout : 1, sizeof *arr);
    if (arr == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (size_t s = 0; s < nout; s++) {
        arr[s] = mine[s];
        mine[s] = NULL;
    }
    *outputs = arr;
    *m = nout;
done:
    free_all(outs, nout);
    free_all(mine, nout);
    for (size_t j = 0; j < nobs; j++)
        clt__tensor_unref(obs[j]);
    free(obs);
    free(in);
    ckpt_free(c);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, name);
}
