/* utils.c: torch.nn.utils: the weight reparametrizations (weight_norm,
 * spectral_norm, pruning) that recompute a layer's weight before each
 * forward, and parameters_to_vector / vector_to_parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

enum { RP_WEIGHT_NORM, RP_SPECTRAL_NORM, RP_PRUNE, RP_PARAMETRIZE = CLT__RP_PARAMETRIZE };

static const char *const rp_name[] = {"weight_norm", "spectral_norm", "prune",
                                      "parametrization"};

bool clt__reparam_has_slot(const clt_module *m, int k)
{
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        if (r->slot == k)
            return true;
    return false;
}

static void reparam_release(clt__reparam *r)
{
    for (int k = 0; k < r->nparams; k++)
        clt_tensor_free(r->params[k]);
    for (int k = 0; k < r->nbufs; k++)
        clt_tensor_free(r->bufs[k]);
    free(r->chain);
    free(r);
}

void clt__reparam_release(clt__reparam *r)
{
    if (r)
        reparam_release(r);
}

void clt__reparam_free(clt_module *m)
{
    while (m->reparams) {
        clt__reparam *r = m->reparams;
        m->reparams = r->next;
        reparam_release(r);
    }
    for (int k = 0; k < m->nretired; k++)
        clt_tensor_free(m->retired[k]);
    free(m->retired);
    m->retired = NULL;
    m->nretired = 0;
}

/* Room for `more` retired handles, so that retiring cannot fail. */
static clt_status reserve_retired(clt_module *m, int more, const char *fn)
{
    clt_tensor **v = clt__realloc(m->retired, (size_t)(m->nretired + more), sizeof *v);
    if (v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    m->retired = v;
    return CLT_OK;
}

clt_status clt__reparam_retire(clt_module *m, clt_tensor *t, const char *fn)
{
    clt_status st = reserve_retired(m, 1, fn);
    if (st == CLT_OK)
        m->retired[m->nretired++] = t;
    return st;
}

int clt__reparam_slot_of(const clt_module *m, const char *name)
{
    for (int k = 0; k < m->nparams; k++)
        if (strcmp(m->pname[k], name) == 0)
            return k;
    return -1;
}

bool clt__reparam_slot_taken(const clt_module *m, const char *name)
{
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        if (strcmp(m->pname[r->slot], name) == 0)
            return true;
    return false;
}

clt_status clt__reparam_unlink_retire(clt_module *m, clt__reparam *r, bool keep_original,
                                      const char *fn)
{
    int first = keep_original ? 1 : 0;
    int more = r->nparams - first + r->nbufs;
    clt_status st = more > 0 ? reserve_retired(m, more, fn) : CLT_OK;
    if (st != CLT_OK)
        return st;
    for (int k = first; k < r->nparams; k++)
        m->retired[m->nretired++] = r->params[k];
    for (int k = 0; k < r->nbufs; k++)
        m->retired[m->nretired++] = r->bufs[k];
    r->nparams = r->nbufs = 0;
    clt__reparam **p = &m->reparams;
    while (*p && *p != r)
        p = &(*p)->next;
    if (*p)
        *p = r->next;
    r->next = NULL;
    return CLT_OK;
}

/* ---- the computations ------------------------------------------------------------- */

/* torch's norm_except_dim(v, 2, dim), recorded: dim -1 the whole norm (0-d),
 * else the norm over the other dims, of v's rank with 1 there. */
static clt_status norm_except_dim(const clt_tensor *v, int dim, clt_tensor **out, const char *fn)
{
    clt_tensor *t = NULL, *flat = NULL, *n = NULL;
    clt_status st;
    *out = NULL;
    if (dim == -1) {
        CLT__TRY(clt__reshape_rec(fn, v, 1, &v->numel, &flat));
        CLT__TRY(clt__vector_norm_dim_rec(fn, flat, 2.0, 0, 0, out));
        goto done;
    }
    int64_t rows = v->shape[dim], two[2] = {rows, rows ? v->numel / rows : 0};
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < v->ndim; d++)
        shape[d] = d == dim ? rows : 1;
    if (dim != 0)
        CLT__TRY(clt__transpose_rec(fn, v, 0, dim, &t));
    CLT__TRY(clt__reshape_rec(fn, t ? t : v, 2, two, &flat));
    CLT__TRY(clt__vector_norm_dim_rec(fn, flat, 2.0, 1, 1, &n));
    CLT__TRY(clt__reshape_rec(fn, n, v->ndim, shape, out));
done:
    clt_tensor_free(t);
    clt_tensor_free(flat);
    clt_tensor_free(n);
    return st;
}

/* v * (g / norm_except_dim(v, 2, dim)), recorded. */
static clt_status weight_norm_compute(const clt__reparam *r, clt_tensor **out, const char *fn)
{
    clt_tensor *n = NULL, *q = NULL;
    clt_status st = norm_except_dim(r->params[1], r->dim, &n, fn);
    if (st == CLT_OK)
        st = clt__div_rec(fn, r->params[0], n, &q);
    if (st == CLT_OK)
        st = clt__mul_rec(fn, r->params[1], q, out);
    clt_tensor_free(n);
    clt_tensor_free(q);
    return st;
}

/* SpectralNorm.reshape_weight_to_matrix: w with dim first, as [size, rest]. */
static clt_status weight_matrix(const clt_tensor *w, int dim, clt_tensor **out, const char *fn)
{
    clt_tensor *p = NULL;
    int perm[CLT_MAX_DIMS];
    perm[0] = dim;
    for (int d = 0, k = 1; d < w->ndim; d++)
        if (d != dim)
            perm[k++] = d;
    clt_status st = dim == 0 ? CLT_OK : clt__permute_rec(fn, w, w->ndim, perm, &p);
    int64_t rows = w->shape[dim], two[2] = {rows, rows ? w->numel / rows : 0};
    if (st == CLT_OK)
        st = clt__reshape_rec(fn, p ? p : w, 2, two, out);
    clt_tensor_free(p);
    return st;
}

/* F.normalize(x, dim=0, eps): x / max(|x|, eps). */
static clt_status normalize(const clt_tensor *x, double eps, clt_tensor **out, const char *fn)
{
    clt_tensor *n = NULL, *c = NULL;
    clt_status st = clt__vector_norm_dim_rec(fn, x, 2.0, 0, 0, &n);
    if (st == CLT_OK)
        st = clt__clamp_rec(fn, n, &eps, NULL, &c);
    if (st == CLT_OK)
        st = clt__div_rec(fn, x, c, out);
    clt_tensor_free(n);
    clt_tensor_free(c);
    return st;
}

/* SpectralNorm.compute_weight: with power (train mode) the iterations are
 * made without recording and u, v written into the buffers when the
 * forward ends; weight / (u . W v), recorded. */
static clt_status spectral_compute(const clt__reparam *r, bool power, clt_tensor **out,
                                   const char *fn)
{
    const clt_tensor *w = r->params[0];
    clt_tensor *W = NULL, *Wt = NULL, *u = clt_tensor_retain(r->bufs[0]),
               *v = clt_tensor_retain(r->bufs[1]), *t = NULL, *Wv = NULL, *sigma = NULL;
    clt_status st;
    CLT__TRY(weight_matrix(w, r->dim, &W, fn));
    if (power) {
        int was = clt_set_grad_enabled(0);
        st = clt__transpose_rec(fn, W, 0, 1, &Wt);
        for (int i = 0; i < r->iters && st == CLT_OK; i++) {
            st = clt__matmul_rec(fn, Wt, u, &t);
            clt_tensor_free(v);
            v = NULL;
            if (st == CLT_OK)
                st = normalize(t, r->eps, &v, fn);
            clt_tensor_free(t);
            t = NULL;
            if (st == CLT_OK)
                st = clt__matmul_rec(fn, W, v, &t);
            clt_tensor_free(u);
            u = NULL;
            if (st == CLT_OK)
                st = normalize(t, r->eps, &u, fn);
            clt_tensor_free(t);
            t = NULL;
        }
        clt_set_grad_enabled(was);
        CLT__TRY(st);
        CLT__TRY(clt__forward_defer_write(r->bufs[0], u));
        CLT__TRY(clt__forward_defer_write(r->bufs[1], v));
    }
    CLT__TRY(clt__matmul_rec(fn, W, v, &Wv));
    CLT__TRY(clt__matmul_rec(fn, u, Wv, &sigma));
    CLT__TRY(clt__div_rec(fn, w, sigma, out));
done:
    clt_tensor_free(W);
    clt_tensor_free(Wt);
    clt_tensor_free(u);
    clt_tensor_free(v);
    clt_tensor_free(t);
    clt_tensor_free(Wv);
    clt_tensor_free(sigma);
    return st;
}

static clt_status reparam_value(const clt__reparam *r, bool power, clt_tensor **out,
                                const char *fn)
{
    *out = NULL;
    clt_status st = r->kind == RP_WEIGHT_NORM  ? weight_norm_compute(r, out, fn)
                    : r->kind == RP_PRUNE      ? clt__mul_rec(fn, r->params[0], r->bufs[0], out)
                    : r->kind == RP_PARAMETRIZE ? clt__parametrize_value(r, out, fn)
                                               : spectral_compute(r, power, out, fn);
    if (st == CLT_OK)
        clt__scope_disown(*out);
    return st;
}

/* Sets m's slot of r to the weight r gives now. */
static clt_status refresh_slot(clt_module *m, const clt__reparam *r, const char *fn)
{
    clt_tensor *w = NULL;
    if (r->kind == RP_PARAMETRIZE && clt__parametrize_cached(r))
        return CLT_OK; /* computed once in this cached() block */
    clt_status st = reparam_value(r, m->training, &w, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor_free(m->params[r->slot]);
    m->params[r->slot] = w;
    return CLT_OK;
}

clt_status clt__reparam_compute(clt_module *m, const char *fn)
{
    for (clt__reparam *r = m->reparams; r; r = r->next) {
        clt_status st = refresh_slot(m, r, fn);
        if (st != CLT_OK)
            return st;
    }
    return CLT_OK;
}

static void reparam_link(clt_module *m, clt__reparam *r);

clt_status clt__reparam_clone(const clt_module *m, clt_module *copy, clt_device *dev,
                              const char *fn)
{
    clt_status st = CLT_OK;
    for (const clt__reparam *r = m->reparams; r && st == CLT_OK; r = r->next) {
        clt__reparam *c = clt__calloc(1, sizeof *c);
        if (c == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        *c = *r;
        c->next = NULL;
        c->nparams = c->nbufs = 0;
        c->chain = NULL;
        if (r->chain && (c->chain = clt__parametrize_chain_dup(r->chain)) == NULL) {
            free(c);
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        }
        for (int k = 0; k < r->nparams && st == CLT_OK; k++) {
            st = clt__module_copy_tensor(r->params[k], dev, &c->params[k], fn);
            if (st == CLT_OK) {
                c->nparams++;
                st = clt_set_requires_grad(c->params[k], 1);
            }
        }
        for (int k = 0; k < r->nbufs && st == CLT_OK; k++) {
            st = clt__module_copy_tensor(r->bufs[k], dev, &c->bufs[k], fn);
            if (st == CLT_OK)
                c->nbufs++;
        }
        clt_tensor *w = NULL;
        if (st == CLT_OK)
            st = reparam_value(c, false, &w, fn);
        if (st != CLT_OK) {
            reparam_release(c);
            return st;
        }
        clt_tensor_free(copy->params[c->slot]);
        copy->params[c->slot] = w;
        reparam_link(copy, c);
    }
    return st;
}

/* ---- applying and removing --------------------------------------------------------- */

/* The slot of m's own parameter name that no reparametrization holds yet:
 * *k, or an error in torch's words. */
static clt_status find_slot(const clt_module *m, const char *name, int kind, int *k,
                            const char *fn)
{
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        if (strcmp(m->pname[r->slot], name) == 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Cannot register two %s hooks on the same parameter %s (it "
                              "has a %s already)",
                              fn, rp_name[kind], name, rp_name[r->kind]);
    for (*k = 0; *k < m->nparams; (*k)++)
        if (strcmp(m->pname[*k], name) == 0)
            break;
    if (*k == m->nparams)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Module '%s' has no parameter or buffer with name '%s'", fn,
                          m->ops->name, name);
    if (strlen(name) + 6 > CLT__REPARAM_NAME)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the parameter name '%s' is too long",
                          fn, name);
    return CLT_OK;
}

/* A new leaf copy of t (requiring grad: a parameter), in no scope. */
static clt_status new_param(const clt_tensor *t, clt_tensor **out, const char *fn)
{
    clt_status st = clt__clone(t, out, fn);
    if (st == CLT_OK) {
        clt__scope_disown(*out);
        st = clt_set_requires_grad(*out, 1);
    }
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

static clt__reparam *reparam_new(int kind, int slot, int dim, const char *fn, clt_status *st)
{
    clt__reparam *r = clt__calloc(1, sizeof *r);
    *st = r ? CLT_OK : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if (r) {
        r->kind = kind;
        r->slot = slot;
        r->dim = dim;
    }
    return r;
}

static void reparam_link(clt_module *m, clt__reparam *r)
{
    clt__reparam **p = &m->reparams;
    while (*p)
        p = &(*p)->next;
    *p = r;
}

void clt__reparam_link(clt_module *m, clt__reparam *r)
{
    reparam_link(m, r);
}

clt_status clt_weight_norm(clt_module *m, const char *name, int dim)
{
    static const char fn[] = "clt_weight_norm";
    CLT__REQUIRE_ARG(m, fn);
    name = name ? name : "weight";
    int k;
    clt_status st = find_slot(m, name, RP_WEIGHT_NORM, &k, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *w = m->params[k];
    int nd = w->ndim;
    if (dim < -1)
        dim += nd;
    if (dim < -1 || dim >= nd || (nd == 0 && dim != -1))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Dimension out of range (expected to be in range of [%d, %d], "
                          "but got %d)",
                          fn, -nd, nd - 1, dim);
    clt_tensor *g = NULL, *n = NULL, *value = NULL;
    clt__reparam *r = reparam_new(RP_WEIGHT_NORM, k, dim, fn, &st);
    int was = clt_set_grad_enabled(0);
    if (st == CLT_OK)
        st = norm_except_dim(w, dim, &n, fn);
    clt_set_grad_enabled(was);
    CLT__TRY(st);
    CLT__TRY(new_param(n, &g, fn));
    r->params[r->nparams] = g;
    snprintf(r->pname[r->nparams++], CLT__REPARAM_NAME, "%s_g", name);
    CLT__TRY(new_param(w, &g, fn));
    r->params[r->nparams] = g;
    snprintf(r->pname[r->nparams++], CLT__REPARAM_NAME, "%s_v", name);
    CLT__TRY(reparam_value(r, false, &value, fn));
    CLT__TRY(reserve_retired(m, 1, fn));
    m->retired[m->nretired++] = m->params[k];
    m->params[k] = value;
    value = NULL;
    reparam_link(m, r);
    r = NULL;
done:
    clt_tensor_free(n);
    clt_tensor_free(value);
    if (r)
        reparam_release(r);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_spectral_norm(clt_module *m, const char *name, int n_power_iterations,
                             double eps, int dim, clt_generator *gen)
{
    static const char fn[] = "clt_spectral_norm";
    CLT__REQUIRE_ARG(m, fn);
    name = name ? name : "weight";
    int k;
    clt_status st = find_slot(m, name, RP_SPECTRAL_NORM, &k, fn);
    if (st != CLT_OK)
        return st;
    clt_tensor *w = m->params[k];
    if (n_power_iterations <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected n_power_iterations to be positive, but got "
                          "n_power_iterations=%d",
                          fn, n_power_iterations);
    if (!(eps > 0.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: eps must be positive, got %g", fn, eps);
    if (dim == -1)
        dim = strcmp(m->ops->name, "ConvTranspose2d") == 0 ? 1 : 0;
    if (w->ndim == 0 || dim < 0 || dim >= w->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dim %d is out of range for the %d-dim parameter '%s'", fn, dim,
                          w->ndim, name);
    int64_t h = w->shape[dim], wd = h ? w->numel / h : 0;
    clt_tensor *x = NULL, *u = NULL, *v = NULL;
    uint64_t drawn = clt_generator_offset(gen);
    clt__reparam *r = reparam_new(RP_SPECTRAL_NORM, k, dim, fn, &st);
    int was = clt_set_grad_enabled(0);
    if (st == CLT_OK)
        st = clt__randn_in(fn, gen, w->dev, w->dtype, 1, &h, &x);
    if (st == CLT_OK)
        st = normalize(x, eps, &u, fn);
    clt_tensor_free(x);
    x = NULL;
    if (st == CLT_OK)
        st = clt__randn_in(fn, gen, w->dev, w->dtype, 1, &wd, &x);
    if (st == CLT_OK)
        st = normalize(x, eps, &v, fn);
    clt_set_grad_enabled(was);
    CLT__TRY(st);
    clt__scope_disown(u);
    clt__scope_disown(v);
    r->iters = n_power_iterations;
    r->eps = eps;
    r->bufs[0] = u;
    r->bufs[1] = v;
    u = v = NULL;
    r->nbufs = 2;
    snprintf(r->bname[0], CLT__REPARAM_NAME, "%s_u", name);
    snprintf(r->bname[1], CLT__REPARAM_NAME, "%s_v", name);
    snprintf(r->pname[0], CLT__REPARAM_NAME, "%s_orig", name);
    /* the parameter itself becomes name_orig; the slot holds it until the
     * first forward, as torch's module.weight = weight.data */
    r->params[0] = clt_tensor_retain(w);
    r->nparams = 1;
    reparam_link(m, r);
    r = NULL;
done:
    clt_tensor_free(x);
    clt_tensor_free(u);
    clt_tensor_free(v);
    if (r) {
        reparam_release(r);
        clt_generator_set_offset(gen, drawn);
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* Takes m's reparametrization of kind on name out: name becomes a new leaf
 * parameter of the weight it gives (without power iteration), its own
 * tensors retired. */
static clt_status remove_reparam(clt_module *m, const char *name, int kind, const char *fn)
{
    CLT__REQUIRE_ARG(m, fn);
    name = name ? name : "weight";
    clt__reparam **p = &m->reparams;
    while (*p && !((*p)->kind == kind && strcmp(m->pname[(*p)->slot], name) == 0))
        p = &(*p)->next;
    clt__reparam *r = *p;
    if (r == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s of '%s' not found in %s", fn,
                          rp_name[kind], name, m->ops->name);
    clt_tensor *w = NULL, *leaf = NULL;
    int was = clt_set_grad_enabled(0);
    clt_status st = reparam_value(r, false, &w, fn);
    clt_set_grad_enabled(was);
    if (st == CLT_OK)
        st = new_param(w, &leaf, fn);
    if (st == CLT_OK)
        st = reserve_retired(m, r->nparams + r->nbufs, fn);
    clt_tensor_free(w);
    if (st != CLT_OK) {
        clt_tensor_free(leaf);
        return st;
    }
    for (int k = 0; k < r->nparams; k++)
        m->retired[m->nretired++] = r->params[k];
    for (int k = 0; k < r->nbufs; k++)
        m->retired[m->nretired++] = r->bufs[k];
    r->nparams = r->nbufs = 0;
    clt_tensor_free(m->params[r->slot]);
    m->params[r->slot] = leaf;
    *p = r->next;
    reparam_release(r);
    return clt__ok();
}

clt_status clt_remove_weight_norm(clt_module *m, const char *name)
{
    return remove_reparam(m, name, RP_WEIGHT_NORM, "clt_remove_weight_norm");
}

clt_status clt_remove_spectral_norm(clt_module *m, const char *name)
{
    return remove_reparam(m, name, RP_SPECTRAL_NORM, "clt_remove_spectral_norm");
}

/* ---- pruning ----------------------------------------------------------------------- */

/* One parameter being pruned: its reparametrization (r, new when fresh,
 * linked on commit), its values and mask on the host. */
typedef struct ptarget {
    clt_module *m;
    clt__reparam *r;
    bool fresh;
    clt_tensor *orig;
    double *o, *mask;
} ptarget;

static void ptarget_clear(ptarget *t)
{
    if (t->fresh && t->r)
        reparam_release(t->r);
    free(t->o);
    free(t->mask);
    *t = (ptarget){0};
}

/* m's parameter name with its values and mask (ones when not pruned yet). */
static clt_status ptarget_get(clt_module *m, const char *name, ptarget *t, const char *fn)
{
    clt_status st;
    *t = (ptarget){.m = m};
    CLT__REQUIRE_ARG(m, fn);
    name = name ? name : "weight";
    for (clt__reparam *r = m->reparams; r && !t->r; r = r->next) {
        if (strcmp(m->pname[r->slot], name) != 0)
            continue;
        if (r->kind != RP_PRUNE)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: parameter '%s' of %s has a %s: it cannot be pruned", fn,
                              name, m->ops->name, rp_name[r->kind]);
        t->r = r;
        t->orig = r->params[0];
    }
    if (t->r == NULL) {
        int k;
        st = find_slot(m, name, RP_PRUNE, &k, fn);
        if (st != CLT_OK)
            return st;
        t->r = reparam_new(RP_PRUNE, k, 0, fn, &st);
        if (st != CLT_OK)
            return st;
        t->fresh = true;
        t->orig = m->params[k];
        snprintf(t->r->pname[0], CLT__REPARAM_NAME, "%s_orig", name);
        snprintf(t->r->bname[0], CLT__REPARAM_NAME, "%s_mask", name);
    }
    CLT__TRY(clt__read_doubles(fn, t->orig, &t->o));
    if (t->fresh) {
        t->mask = clt__malloc((size_t)(t->orig->numel ? t->orig->numel : 1) * sizeof *t->mask);
        if (t->mask == NULL)
            CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
        for (int64_t i = 0; i < t->orig->numel; i++)
            t->mask[i] = 1.0;
    } else {
        CLT__TRY(clt__read_doubles(fn, t->r->bufs[0], &t->mask));
    }
done:
    if (st != CLT_OK)
        ptarget_clear(t);
    return st;
}

/* Puts t's mask in place: a new buffer (with r linked) or the old one
 * written, then the weight computed again. */
static clt_status ptarget_commit(ptarget *t, const char *fn)
{
    clt_tensor *mask = NULL;
    clt_status st;
    if (t->fresh) {
        CLT__TRY(clt__empty(t->orig->dev, t->orig->dtype, t->orig->ndim, t->orig->shape, &mask));
        clt__scope_disown(mask);
        CLT__TRY(clt__write_doubles(fn, mask, t->mask));
        t->r->bufs[0] = mask;
        t->r->nbufs = 1;
        mask = NULL;
        t->r->params[0] = clt_tensor_retain(t->orig);
        t->r->nparams = 1;
        reparam_link(t->m, t->r);
        t->fresh = false;
    } else {
        CLT__TRY(clt__write_doubles(fn, t->r->bufs[0], t->mask));
    }
    st = refresh_slot(t->m, t->r, fn);
done:
    clt_tensor_free(mask);
    return st;
}

/* torch's _validate_pruning_amount: *k of n. */
static clt_status prune_amount(double amount, int64_t count, int64_t n, int64_t *k,
                               const char *fn)
{
    if (count >= 0) {
        if (count > n)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: amount=%lld should be smaller than the number of parameters "
                              "to prune=%lld",
                              fn, (long long)count, (long long)n);
        *k = count;
        return CLT_OK;
    }
    if (!(amount >= 0.0 && amount <= 1.0))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: amount=%g should either be a float in the range [0, 1] or a "
                          "non-negative integer",
                          fn, amount);
    *k = (int64_t)nearbyint(amount * (double)n); /* Python's round: half to even */
    return CLT_OK;
}

typedef struct keyed {
    double key;
    int64_t at;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Sorts v[0..n) by key, ties by place; descending keys by negating. */
static void sort_keyed(keyed *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof *v, by_key);
}

/* The unpruned entries of t (mask 1) as keyed entries: |o| (abs) or 0. */
static keyed *candidates(const ptarget *t, int64_t *n, const char *fn, clt_status *st)
{
    int64_t numel = t->orig->numel, c = 0;
    keyed *v = clt__malloc((size_t)(numel ? numel : 1) * sizeof *v);
    *st = v ? CLT_OK : clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (int64_t i = 0; v && i < numel; i++)
        if (t->mask[i] == 1.0)
            v[c++] = (keyed){fabs(t->o[i] * t->mask[i]), i};
    *n = c;
    return v;
}

/* l1_unstructured (gen unused) or random_unstructured (rnd). */
static clt_status prune_unstructured(clt_module *m, const char *name, double amount,
                                     int64_t count, bool rnd, clt_generator *gen, const char *fn)
{
    ptarget t;
    int64_t n = 0, k = 0;
    keyed *v = NULL;
    double *u = NULL;
    clt_tensor *draw = NULL;
    uint64_t drawn = clt_generator_offset(gen);
    if (count < 0 && !(amount >= 0.0 && amount <= 1.0))
        return prune_amount(amount, count, 0, &k, fn);
    clt_status st = ptarget_get(m, name, &t, fn);
    if (st != CLT_OK)
        return st;
    v = candidates(&t, &n, fn, &st);
    CLT__TRY(st);
    CLT__TRY(prune_amount(amount, count, n, &k, fn));
    if (rnd && k > 0) {
        /* the k largest of uniform numbers, one per candidate */
        CLT__TRY(clt__rand_in(fn, gen, t.orig->dev, CLT_FLOAT32, 1, &n, &draw));
        CLT__TRY(clt__read_doubles(fn, draw, &u));
        for (int64_t i = 0; i < n; i++)
            v[i].key = -u[i];
    }
    sort_keyed(v, n);
    for (int64_t i = 0; i < k; i++)
        t.mask[v[i].at] = 0.0;
    CLT__TRY(ptarget_commit(&t, fn));
done:
    if (st != CLT_OK)
        clt_generator_set_offset(gen, drawn);
    clt_tensor_free(draw);
    free(u);
    free(v);
    ptarget_clear(&t);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_prune_l1_unstructured(clt_module *m, const char *name, double amount,
                                     int64_t count)
{
    return prune_unstructured(m, name, amount, count, false, NULL, "clt_prune_l1_unstructured");
}

clt_status clt_prune_random_unstructured(clt_module *m, const char *name, double amount,
                                         int64_t count, clt_generator *gen)
{
    return prune_unstructured(m, name, amount, count, true, gen,
                              "clt_prune_random_unstructured");
}

clt_status clt_prune_ln_structured(clt_module *m, const char *name, double amount, int64_t count,
                                   double n, int dim)
{
    static const char fn[] = "clt_prune_ln_structured";
    int64_t k = 0;
    if (count < 0 && !(amount >= 0.0 && amount <= 1.0))
        return prune_amount(amount, count, 0, &k, fn);
    if (!(n >= 0.0) && n != -INFINITY) /* NaN or negative; inf passes */
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: n=%g: the norm's order must be positive, 0, inf or -inf", fn, n);
    ptarget t;
    keyed *v = NULL;
    bool *keep = NULL;
    clt_status st = ptarget_get(m, name, &t, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *w = t.orig;
    int nd = w->ndim;
    if (nd <= 1)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Structured pruning can only be applied to multidimensional "
                            "tensors. Found tensor of %d dims",
                            fn, nd));
    if (dim < -nd || dim >= nd)
        CLT__TRY(clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Dimension out of range (expected to be in range of [%d, %d], "
                            "but got %d)",
                            fn, -nd, nd - 1, dim));
    dim = dim < 0 ? dim + nd : dim;
    int64_t C = w->shape[dim], inner = 1, c = 0;
    for (int d = dim + 1; d < nd; d++)
        inner *= w->shape[d];
    v = clt__calloc((size_t)(C ? C : 1), sizeof *v);
    keep = clt__calloc((size_t)(C ? C : 1), sizeof *keep);
    if (v == NULL || keep == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* the channels the mask keeps anything of, with their norms: the
     * largest norm first, ties by place, for the k smallest at the end */
    double *acc = clt__calloc((size_t)(C ? C : 1), sizeof *acc);
    if (acc == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    for (int64_t i = 0; i < C; i++)
        acc[i] = n == -INFINITY ? INFINITY : 0.0;
    for (int64_t i = 0; i < w->numel; i++) {
        int64_t ch = (i / inner) % C;
        double a = fabs(t.o[i] * t.mask[i]); /* torch's importance: the weight as masked */
        keep[ch] = keep[ch] || t.mask[i] != 0.0;
        if (n == INFINITY)
            acc[ch] = a > acc[ch] ? a : acc[ch];
        else if (n == -INFINITY)
            acc[ch] = a < acc[ch] ? a : acc[ch];
        else if (n == 0.0)
            acc[ch] += a != 0.0;
        else
            acc[ch] += pow(a, n);
    }
    for (int64_t ch = 0; ch < C; ch++) {
        if (!keep[ch])
            continue;
        double norm = n == 0.0 || isinf(n) ? acc[ch] : pow(acc[ch], 1.0 / n);
        v[c++] = (keyed){-norm, ch};
    }
    free(acc);
    CLT__TRY(prune_amount(amount, count, c, &k, fn));
    sort_keyed(v, c);
    for (int64_t j = c - k; j < c; j++)
        keep[v[j].at] = false;
    for (int64_t i = 0; i < w->numel; i++)
        if (!keep[(i / inner) % C])
            t.mask[i] = 0.0;
    CLT__TRY(ptarget_commit(&t, fn));
done:
    free(v);
    free(keep);
    ptarget_clear(&t);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_prune_global_unstructured(clt_module *const *mods, const char *const *names,
                                         size_t count, double amount, int64_t amount_count)
{
    static const char fn[] = "clt_prune_global_unstructured";
    int64_t k = 0, total = 0, at = 0;
    if (count > 0)
        CLT__REQUIRE_ARG(mods, fn);
    if (amount_count < 0 && !(amount >= 0.0 && amount <= 1.0))
        return prune_amount(amount, amount_count, 0, &k, fn);
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < i; j++) {
            const char *a = names && names[i] ? names[i] : "weight",
                       *b = names && names[j] ? names[j] : "weight";
            if (mods[i] == mods[j] && strcmp(a, b) == 0)
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: parameter %zu is parameter %zu again", fn, i, j);
        }
    ptarget *t = clt__calloc(count ? count : 1, sizeof *t);
    keyed *v = NULL;
    if (t == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_status st = CLT_OK;
    for (size_t i = 0; i < count; i++) {
        CLT__TRY(ptarget_get(mods[i], names ? names[i] : NULL, &t[i], fn));
        total += t[i].orig->numel;
    }
    v = clt__malloc((size_t)(total ? total : 1) * sizeof *v);
    if (v == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    /* the unpruned entries of all, numbered through the concatenation */
    int64_t n = 0;
    for (size_t i = 0; i < count; i++) {
        for (int64_t e = 0; e < t[i].orig->numel; e++)
            if (t[i].mask[e] == 1.0)
                v[n++] = (keyed){fabs(t[i].o[e] * t[i].mask[e]), at + e};
        at += t[i].orig->numel;
    }
    CLT__TRY(prune_amount(amount, amount_count, n, &k, fn));
    sort_keyed(v, n);
    for (int64_t j = 0; j < k; j++) {
        int64_t e = v[j].at;
        size_t i = 0;
        while (e >= t[i].orig->numel)
            e -= t[i++].orig->numel;
        t[i].mask[e] = 0.0;
    }
    for (size_t i = 0; i < count; i++)
        CLT__TRY(ptarget_commit(&t[i], fn));
done:
    for (size_t i = 0; i < count; i++)
        ptarget_clear(&t[i]);
    free(t);
    free(v);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_prune_remove(clt_module *m, const char *name)
{
    static const char fn[] = "clt_prune_remove";
    CLT__REQUIRE_ARG(m, fn);
    name = name ? name : "weight";
    clt__reparam **p = &m->reparams;
    while (*p && !((*p)->kind == RP_PRUNE && strcmp(m->pname[(*p)->slot], name) == 0))
        p = &(*p)->next;
    clt__reparam *r = *p;
    if (r == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Parameter '%s' of module %s has to be pruned before pruning can "
                          "be removed",
                          fn, name, m->ops->name);
    clt_tensor *w = NULL;
    int was = clt_set_grad_enabled(0);
    clt_status st = reparam_value(r, false, &w, fn);
    if (st == CLT_OK)
        st = reserve_retired(m, 1, fn);
    if (st == CLT_OK) /* orig.data = weight.data */
        st = clt__copy_strided(r->params[0], w, fn);
    clt_set_grad_enabled(was);
    clt_tensor_free(w);
    if (st != CLT_OK)
        return st;
    clt__version_bump(r->params[0]);
    clt_tensor_free(m->params[r->slot]);
    m->params[r->slot] = r->params[0];
    m->retired[m->nretired++] = r->bufs[0];
    r->nparams = r->nbufs = 0;
    *p = r->next;
    reparam_release(r);
    return clt__ok();
}

int clt_prune_is_pruned(const clt_module *m)
{
    if (m == NULL)
        return 0;
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        if (r->kind == RP_PRUNE)
            return 1;
    for (size_t k = 0; k < m->nchildren; k++)
        if (clt_prune_is_pruned(m->children[k]))
            return 1;
    return 0;
}

/* ---- parameters_to_vector, vector_to_parameters --------------------------------------- */

/* Error unless the n tensors (none NULL) are on one device. */
static clt_status check_params(clt_tensor *const *params, size_t n, const char *fn)
{
    if (n > 0)
        CLT__REQUIRE_ARG(params, fn);
    for (size_t k = 0; k < n; k++) {
        if (params[k] == NULL)
            return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: parameter %zu is NULL", fn, k);
        if (params[k]->dev != params[0]->dev)
            return clt__error(CLT_ERR_DEVICE_MISMATCH,
                              "%s: Found two parameters on different devices, this is "
                              "currently not supported (parameter 0 on %s, parameter %zu on %s)",
                              fn, params[0]->dev->label, k, params[k]->dev->label);
    }
    return CLT_OK;
}

clt_status clt_parameters_to_vector(clt_tensor *const *params, size_t n, clt_tensor **out)
{
    static const char fn[] = "clt_parameters_to_vector";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_params(params, n, fn);
    if (st != CLT_OK)
        return st;
    if (n == 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: torch.cat(): expected a non-empty list of Tensors", fn);
    clt_tensor **flat = clt__calloc(n, sizeof *flat);
    if (flat == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    for (size_t k = 0; k < n && st == CLT_OK; k++)
        st = clt__reshape_rec(fn, params[k], 1, &params[k]->numel, &flat[k]);
    if (st == CLT_OK)
        st = clt__cat_rec(fn, (const clt_tensor *const *)flat, n, 0, out);
    for (size_t k = 0; k < n; k++)
        clt_tensor_free(flat[k]);
    free(flat);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_vector_to_parameters(const clt_tensor *vec, clt_tensor *const *params, size_t n)
{
    static const char fn[] = "clt_vector_to_parameters";
    CLT__REQUIRE_ARG(vec, fn);
    clt_status st = check_params(params, n, fn);
    if (st != CLT_OK)
        return st;
    if (vec->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: expected a 1-D vector, but got %d dims",
                          fn, vec->ndim);
    int64_t total = 0;
    for (size_t k = 0; k < n; k++)
        total += params[k]->numel;
    if (total != vec->numel)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the vector has %lld elements and the parameters %lld together",
                          fn, (long long)vec->numel, (long long)total);
    if (n > 0 && vec->dev != params[0]->dev)
        return clt__same_device(vec, params[0], fn);
    /* the slices first, so that a failure to make one changes nothing */
    clt_tensor **part = clt__calloc(n ? n : 1, sizeof *part);
    if (part == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    int was = clt_set_grad_enabled(0);
    int64_t at = 0;
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        clt_tensor *s = NULL;
        st = clt__narrow_rec(fn, vec, 0, at, params[k]->numel, &s);
        if (st == CLT_OK)
            st = clt__reshape_rec(fn, s, params[k]->ndim, params[k]->shape, &part[k]);
        clt_tensor_free(s);
        at += params[k]->numel;
    }
    for (size_t k = 0; k < n && st == CLT_OK; k++) {
        st = clt__copy_strided(params[k], part[k], fn);
        if (st == CLT_OK)
            clt__version_bump(params[k]);
    }
    clt_set_grad_enabled(was);
    for (size_t k = 0; k < n; k++)
        clt_tensor_free(part[k]);
    free(part);
    return st == CLT_OK ? clt__ok() : st;
}
