/* parametrize.c: torch.nn.utils.parametrize (register_parametrization,
 * remove_parametrizations, is_parametrized, cached) over the layers'
 * reparametrizations (utils.c), and torch.nn.utils.parametrizations.orthogonal
 * with its matrix_exp, cayley and householder maps. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

enum { CHAIN_MAX = 8, ORTH_NONE = 0, ORTH_EXP, ORTH_CAYLEY, ORTH_HOUSEHOLDER };

static const char *const orth_names[] = {"", "matrix_exp", "cayley", "householder"};

/* One parametrization of a chain: the caller's functions, or orthogonal's
 * map (its base, with use_trivialization, in bufs[base]). */
typedef struct pentry {
    clt_parametrization p;
    int orth;
    int base; /* index in the reparametrization's bufs, or -1 */
} pentry;

struct clt__pchain {
    int n;
    pentry e[CHAIN_MAX];
    uint64_t epoch; /* the cached() block its value was computed in, or 0 */
};

/* clt_parametrize_cached_begin/end: the depth of cached() blocks on this
 * thread and the number of the outermost one. */
static _Thread_local int cache_depth;
static _Thread_local uint64_t cache_epoch;

void clt_parametrize_cached_begin(void)
{
    if (cache_depth++ == 0)
        cache_epoch++;
}

void clt_parametrize_cached_end(void)
{
    if (cache_depth > 0)
        cache_depth--;
}

bool clt__parametrize_cached(const clt__reparam *r)
{
    return cache_depth > 0 && r->chain && r->chain->epoch == cache_epoch;
}

struct clt__pchain *clt__parametrize_chain_dup(const struct clt__pchain *c)
{
    struct clt__pchain *d = clt__malloc(sizeof *d);
    if (d) {
        *d = *c;
        d->epoch = 0;
    }
    return d;
}

/* ---- orthogonal's map ------------------------------------------------------------- */

static double dtype_eps(clt_dtype dt)
{
    return dt == CLT_FLOAT64 ? 2.220446049250313e-16 : 1.1920929e-07;
}

/* X^T over the last two dims. */
static clt_status mT(const clt_tensor *x, clt_tensor **out)
{
    return clt_transpose(x, x->ndim - 2, x->ndim - 1, out);
}

/* _Orthogonal.forward of X (real, [..., n, k]), recorded; base NULL
 * without use_trivialization.  Inside the caller's scope. */
static clt_status orth_forward(int map, const clt_tensor *X, const clt_tensor *base,
                               clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *x = (clt_tensor *)X, *Q = NULL;
    int nd = X->ndim;
    int64_t n = X->shape[nd - 2], k = X->shape[nd - 1];
    bool transposed = n < k;
    if (transposed) {
        CLT__TRY(mT(X, &x));
        int64_t t = n;
        n = k;
        k = t;
    }
    if (map == ORTH_EXP || map == ORTH_CAYLEY) {
        clt_tensor *xl = NULL, *xt = NULL, *A = NULL;
        CLT__TRY(clt_tril(x, 0, &xl));
        if (n != k) {
            int64_t zs[8];
            for (int d = 0; d < nd; d++)
                zs[d] = x->shape[d];
            zs[nd - 1] = n - k;
            clt_tensor *z = NULL;
            CLT__TRY(clt_zeros(x->dev, x->dtype, nd, zs, &z));
            const clt_tensor *parts[2] = {xl, z};
            CLT__TRY(clt_cat(parts, 2, nd - 1, &xl));
        }
        CLT__TRY(mT(xl, &xt));
        CLT__TRY(clt_sub(xl, xt, &A));
        if (map == ORTH_EXP) {
            CLT__TRY(clt_linalg_matrix_exp(A, &Q));
        } else {
            clt_tensor *id = NULL, *h = NULL, *lhs = NULL, *rhs = NULL;
            CLT__TRY(clt_eye(x->dev, x->dtype, n, n, &id));
            CLT__TRY(clt_mul_scalar(A, 0.5, &h));
            CLT__TRY(clt_sub(id, h, &lhs));
            CLT__TRY(clt_add(id, h, &rhs));
            CLT__TRY(clt_linalg_solve(lhs, rhs, &Q));
        }
        if (n != k)
            CLT__TRY(clt_narrow(Q, nd - 1, 0, k, &Q));
    } else {
        clt_tensor *A = NULL, *sq = NULL, *s = NULL, *tau = NULL, *d = NULL, *di = NULL;
        CLT__TRY(clt_tril(x, -1, &A));
        CLT__TRY(clt_mul(A, A, &sq));
        CLT__TRY(clt_sum_dim(sq, nd - 2, 0, &s));
        CLT__TRY(clt_add_scalar(s, 1.0, &s));
        CLT__TRY(clt_reciprocal(s, &tau));
        CLT__TRY(clt_mul_scalar(tau, 2.0, &tau));
        CLT__TRY(clt_linalg_householder_product(A, tau, &Q));
        /* the diagonal's signs, truncated as .int(), not differentiated */
        CLT__TRY(clt_diagonal(x, 0, nd - 2, nd - 1, &d));
        CLT__TRY(clt_detach(d, &d));
        CLT__TRY(clt_to_dtype(d, CLT_INT32, &di));
        CLT__TRY(clt_to_dtype(di, x->dtype, &di));
        CLT__TRY(clt_unsqueeze(di, nd - 2, &di));
        CLT__TRY(clt_mul(Q, di, &Q));
    }
    if (base)
        CLT__TRY(clt_matmul(base, Q, &Q));
    if (transposed)
        CLT__TRY(mT(Q, &Q));
    *out = Q;
done:
    return st;
}

/* _make_orthogonal(A) of a tall A: the Q of A = QR with diag(R) >= 0. */
static clt_status make_orthogonal(const clt_tensor *A, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *X = NULL, *tau = NULL, *Q = NULL, *d = NULL;
    int nd = A->ndim;
    CLT__TRY(clt_geqrf(A, &X, &tau));
    CLT__TRY(clt_linalg_householder_product(X, tau, &Q));
    CLT__TRY(clt_diagonal(X, 0, nd - 2, nd - 1, &d));
    CLT__TRY(clt_sgn(d, &d));
    CLT__TRY(clt_unsqueeze(d, nd - 2, &d));
    CLT__TRY(clt_mul(Q, d, out));
done:
    return st;
}

/* _Orthogonal.right_inverse with use_trivialization: *base the weight made
 * orthogonal (completed with normal columns from gen when not square),
 * *out -Id of the weight's shape.  Recording nothing. */
static clt_status orth_right_inverse_triv(const clt_tensor *W, clt_generator *gen,
                                          clt_tensor **base, clt_tensor **out)
{
    clt_status st = CLT_OK;
    clt_tensor *q = (clt_tensor *)W, *B = NULL, *id = NULL;
    int nd = W->ndim;
    int64_t n = W->shape[nd - 2], k = W->shape[nd - 1];
    if (n < k) {
        CLT__TRY(mT(W, &q));
        int64_t t = n;
        n = k;
        k = t;
    }
    if (n == k) {
        clt_tensor *qt = NULL, *g = NULL, *eye = NULL;
        int close = 0;
        CLT__TRY(mT(q, &qt));
        CLT__TRY(clt_matmul(qt, q, &g));
        CLT__TRY(clt_eye(W->dev, W->dtype, k, k, &eye));
        CLT__TRY(clt_expand(eye, nd, g->shape, &eye));
        CLT__TRY(clt_allclose(g, eye, 1e-5, 10.0 * (double)n * dtype_eps(W->dtype), 0, &close));
        if (close)
            CLT__TRY(clt_clone(q, &B));
        else
            CLT__TRY(make_orthogonal(q, &B));
    } else {
        int64_t ns[8];
        for (int d = 0; d < nd; d++)
            ns[d] = q->shape[d];
        ns[nd - 1] = n - k;
        clt_tensor *N = NULL, *cat = NULL;
        CLT__TRY(clt_randn(gen, W->dev, W->dtype, nd, ns, &N));
        const clt_tensor *parts[2] = {q, N};
        CLT__TRY(clt_cat(parts, 2, nd - 1, &cat));
        CLT__TRY(make_orthogonal(cat, &B));
    }
    CLT__TRY(clt_contiguous(B, base));
    CLT__TRY(clt_eye(W->dev, W->dtype, W->shape[nd - 2], W->shape[nd - 1], &id));
    CLT__TRY(clt_mul_scalar(id, -1.0, &id));
    CLT__TRY(clt_expand(id, nd, W->shape, &id));
    CLT__TRY(clt_contiguous(id, out));
done:
    return st;
}

/* _Orthogonal.right_inverse without use_trivialization, householder: the
 * geqrf of the (tall) weight with its diagonal made the signs of R's
 * (negated where tau is 0), on the host. */
static clt_status orth_right_inverse_householder(const clt_tensor *W, clt_tensor **out,
                                                 const char *fn)
{
    clt_status st = CLT_OK;
    clt_tensor *q = (clt_tensor *)W, *A = NULL, *tau = NULL, *a64 = NULL, *t64 = NULL;
    double *av = NULL, *tv = NULL;
    int nd = W->ndim;
    int64_t n = W->shape[nd - 2], k = W->shape[nd - 1];
    bool transposed = n < k;
    if (transposed) {
        CLT__TRY(mT(W, &q));
        int64_t t = n;
        n = k;
        k = t;
    }
    CLT__TRY(clt_geqrf(q, &A, &tau));
    CLT__TRY(clt_to_dtype(A, CLT_FLOAT64, &a64));
    CLT__TRY(clt_contiguous(a64, &a64));
    CLT__TRY(clt_to_dtype(tau, CLT_FLOAT64, &t64));
    CLT__TRY(clt_contiguous(t64, &t64));
    size_t na = (size_t)a64->numel, nt = (size_t)t64->numel;
    av = clt__malloc((na ? na : 1) * sizeof *av);
    tv = clt__malloc((nt ? nt : 1) * sizeof *tv);
    if (av == NULL || tv == NULL)
        CLT__TRY(clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn));
    CLT__TRY(clt_tensor_read(a64, av, na * sizeof *av));
    CLT__TRY(clt_tensor_read(t64, tv, nt * sizeof *tv));
    int64_t batches = n * k != 0 ? (int64_t)na / (n * k) : 0;
    for (int64_t b = 0; b < batches; b++)
        for (int64_t i = 0; i < k; i++) {
            double *d = &av[b * n * k + i * k + i];
            double s = *d > 0 ? 1.0 : *d < 0 ? -1.0 : 0.0;
            if (tv[b * k + i] == 0.0)
                s = -s;
            *d = s;
        }
    CLT__TRY(clt_tensor_from_host(W->dev, CLT_FLOAT64, nd, a64->shape, av, &A));
    CLT__TRY(clt_to_dtype(A, W->dtype, &A));
    if (transposed)
        CLT__TRY(mT(A, &A));
    CLT__TRY(clt_contiguous(A, out));
done:
    free(av);
    free(tv);
    return st;
}

/* ---- the chain's value ------------------------------------------------------------ */

clt_status clt__parametrize_value(const clt__reparam *r, clt_tensor **out, const char *fn)
{
    const struct clt__pchain *c = r->chain;
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *x = r->params[0];
    for (int i = 0; i < c->n && st == CLT_OK; i++) {
        const pentry *e = &c->e[i];
        clt_tensor *y = NULL;
        if (e->orth)
            st = orth_forward(e->orth, x, e->base >= 0 ? r->bufs[e->base] : NULL, &y);
        else
            st = e->p.forward(x, &y, e->p.user);
        if (st != CLT_OK)
            st = clt__error_prefix(st, "%s: parametrization %d of '%s'", fn, i, r->pname[0]);
        else if (y == NULL)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: parametrization %d of '%s' gave no tensor", fn, i, r->pname[0]);
        x = y;
    }
    if (st == CLT_OK) {
        *out = x;
        if (cache_depth > 0)
            r->chain->epoch = cache_epoch;
    }
    return clt__scope_finish(st, out);
}

/* ---- registering and removing ----------------------------------------------------- */

static clt__reparam *find_param(const clt_module *m, const char *name)
{
    for (clt__reparam *r = m->reparams; r; r = r->next)
        if (r->kind == CLT__RP_PARAMETRIZE && strcmp(m->pname[r->slot], name) == 0)
            return r;
    return NULL;
}

int clt_is_parametrized(const clt_module *m, const char *name)
{
    if (m == NULL)
        return 0;
    for (const clt__reparam *r = m->reparams; r; r = r->next)
        if (r->kind == CLT__RP_PARAMETRIZE && (name == NULL || strcmp(m->pname[r->slot], name) == 0))
            return 1;
    return 0;
}

static bool same_shape(const clt_tensor *a, const clt_tensor *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return false;
    return true;
}

/* Registers entry e (its base, if any, in *base: taken) on m's name: the
 * first one makes the reparametrization, whose original is right_inverse
 * of the weight (ri, new; NULL: the weight itself). */
static clt_status add_entry(clt_module *m, const char *name, pentry e, clt_tensor *ri,
                            clt_tensor **base, int unsafe, const char *fn)
{
    clt_status st = CLT_OK;
    clt__reparam *r = find_param(m, name);
    clt_tensor *value = NULL;
    if (r == NULL) {
        if (clt__reparam_slot_of(m, name) >= 0 && clt__reparam_slot_taken(m, name))
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: '%s' of %s is reparametrized already (weight_norm, "
                              "spectral_norm or pruning): remove that first",
                              fn, name, m->ops->name);
        int k = clt__reparam_slot_of(m, name);
        if (k < 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: Module '%s' has no parameter or buffer with name '%s'", fn,
                              m->ops->name, name);
        if (strlen(name) + 26 >= CLT__REPARAM_NAME) /* "parametrizations.NAME.original" */
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the parameter name '%s' is too long",
                              fn, name);
        clt_tensor *w = m->params[k];
        if (ri && ri->dtype != w->dtype)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: When `right_inverse` outputs one tensor, it may not change "
                              "the dtype (%s to %s)",
                              fn, clt_dtype_name(w->dtype), clt_dtype_name(ri->dtype));
        struct clt__pchain *c = clt__calloc(1, sizeof *c);
        r = c ? clt__calloc(1, sizeof *r) : NULL;
        if (r == NULL) {
            free(c);
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        }
        r->kind = CLT__RP_PARAMETRIZE;
        r->slot = k;
        r->chain = c;
        c->e[c->n++] = e;
        if (base && *base) {
            c->e[0].base = 0;
            r->bufs[0] = *base;
            r->nbufs = 1;
            snprintf(r->bname[0], CLT__REPARAM_NAME, "parametrizations.%s.0.base", name);
        }
        snprintf(r->pname[0], CLT__REPARAM_NAME, "parametrizations.%s.original", name);
        r->params[0] = w; /* the parameter becomes original: the same handle */
        r->nparams = 1;
        if (ri && same_shape(ri, w)) {
            int was = clt_set_grad_enabled(0);
            st = clt__copy_into(w, ri, fn);
            clt_set_grad_enabled(was);
            clt__version_bump(w);
        } else if (ri) {
            /* another shape: original is a new leaf, the parameter retired */
            clt_tensor *leaf = NULL;
            st = clt__clone(ri, &leaf, fn);
            if (st == CLT_OK) {
                clt__scope_disown(leaf);
                r->params[0] = leaf;
                st = clt_set_requires_grad(leaf, 1);
            }
        }
        if (st == CLT_OK)
            st = clt__parametrize_value(r, &value, fn);
        if (st == CLT_OK && !unsafe &&
            (value->dtype != m->params[k]->dtype || !same_shape(value, m->params[k])))
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Registering a parametrization may not change the dtype or the "
                            "shape of the tensor, unless the `unsafe` flag is enabled",
                            fn);
        if (st == CLT_OK && r->params[0] != w)
            st = clt__reparam_retire(m, w, fn);
        if (st != CLT_OK) {
            clt_tensor_free(value);
            if (r->params[0] == w)
                r->nparams = 0; /* the slot keeps its parameter */
            r->nbufs = 0;       /* the caller keeps its base */
            clt__reparam_release(r);
            return st;
        }
        clt__scope_disown(value);
        m->params[k] = value;
        clt__reparam_link(m, r);
        return CLT_OK;
    }
    struct clt__pchain *c = r->chain;
    if (c->n == CHAIN_MAX || (base && *base && r->nbufs == 2))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: '%s' has %d parametrizations already (at most %d here)", fn, name,
                          c->n, CHAIN_MAX);
    const clt_tensor *cur = m->params[r->slot];
    c->e[c->n++] = e;
    if (base && *base) {
        c->e[c->n - 1].base = r->nbufs;
        r->bufs[r->nbufs] = *base;
        snprintf(r->bname[r->nbufs], CLT__REPARAM_NAME, "parametrizations.%s.%d.base", name,
                 c->n - 1);
        r->nbufs++;
    }
    st = clt__parametrize_value(r, &value, fn);
    if (st == CLT_OK && !unsafe && (value->dtype != cur->dtype || !same_shape(value, cur)))
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: Registering a parametrization may not change the dtype or the "
                        "shape of the tensor, unless the `unsafe` flag is enabled",
                        fn);
    if (st != CLT_OK) {
        clt_tensor_free(value);
        c->n--;
        if (base && *base && c->e[c->n].base >= 0) {
            r->nbufs--;
            r->bufs[r->nbufs] = NULL;
        }
        return st;
    }
    clt__scope_disown(value);
    clt_tensor_free(m->params[r->slot]);
    m->params[r->slot] = value;
    return CLT_OK;
}

clt_status clt_register_parametrization(clt_module *m, const char *name,
                                        const clt_parametrization *p, int unsafe)
{
    static const char fn[] = "clt_register_parametrization";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(name, fn);
    CLT__REQUIRE_ARG(p, fn);
    if (p->forward == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: the parametrization has no forward", fn);
    pentry e = {*p, ORTH_NONE, -1};
    clt_tensor *ri = NULL;
    clt_status st = CLT_OK;
    /* right_inverse of the weight makes original, for the first one only
     * (torch appends later ones assuming it is the identity) */
    if (p->right_inverse && !clt_is_parametrized(m, name)) {
        int k = clt__reparam_slot_of(m, name);
        if (k >= 0 && !clt__reparam_slot_taken(m, name)) {
            if ((st = clt_scope_begin()) != CLT_OK)
                return st;
            int was = clt_set_grad_enabled(0);
            st = p->right_inverse(m->params[k], &ri, p->user);
            clt_set_grad_enabled(was);
            if (st == CLT_OK && ri == NULL)
                st = clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: right_inverse gave no tensor",
                                fn);
            if (st != CLT_OK)
                st = clt__error_prefix(st, "%s: right_inverse of '%s'", fn, name);
            st = clt__scope_finish(st, &ri);
            if (st != CLT_OK)
                return st;
            if (!unsafe && !same_shape(ri, m->params[k])) {
                clt_tensor_free(ri);
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: right_inverse may not change the shape of '%s' unless "
                                  "the `unsafe` flag is enabled",
                                  fn, name);
            }
        }
    }
    st = add_entry(m, name, e, ri, NULL, unsafe, fn);
    clt_tensor_free(ri);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_orthogonal(clt_module *m, const char *name, const char *orthogonal_map,
                          int use_trivialization, clt_generator *gen)
{
    static const char fn[] = "clt_orthogonal";
    CLT__REQUIRE_ARG(m, fn);
    name = name ? name : "weight";
    int k = clt__reparam_slot_of(m, name);
    clt__reparam *r = find_param(m, name);
    const clt_tensor *w = r ? m->params[r->slot] : k >= 0 ? m->params[k] : NULL;
    if (w == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Module '%s' has no parameter ot buffer with name '%s'", fn,
                          m->ops->name, name);
    if (w->ndim < 2)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Expected a matrix or batch of matrices. Got a tensor of %d "
                          "dimensions.",
                          fn, w->ndim);
    if (w->ndim > 8)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: at most 8 dimensions, got %d", fn,
                          w->ndim);
    if (clt__dtype_is_complex(w->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: a complex weight is not supported here (torch's orthogonal takes "
                          "one: unitary matrices)",
                          fn);
    if (!clt__dtype_is_float(w->dtype) || clt__dtype_is_half(w->dtype))
        return clt__error(CLT_ERR_DTYPE_UNSUPPORTED,
                          "%s: expected a float32 or float64 weight, got %s", fn,
                          clt_dtype_name(w->dtype));
    int map = ORTH_NONE;
    if (orthogonal_map == NULL)
        map = w->shape[w->ndim - 2] == w->shape[w->ndim - 1] ? ORTH_EXP : ORTH_HOUSEHOLDER;
    else
        for (int i = ORTH_EXP; i <= ORTH_HOUSEHOLDER; i++)
            if (strcmp(orthogonal_map, orth_names[i]) == 0)
                map = i;
    if (map == ORTH_NONE)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: orthogonal_map has to be one of \"matrix_exp\", \"cayley\", "
                          "\"householder\". Got: %s",
                          fn, orthogonal_map);
    pentry e = {{NULL, NULL, NULL}, map, -1};
    clt_tensor *ri = NULL, *base = NULL;
    clt_status st = CLT_OK;
    uint64_t drawn = clt_generator_offset(gen);
    if (r == NULL && (k < 0 || !clt__reparam_slot_taken(m, name))) {
        /* the first parametrization: right_inverse makes original */
        if ((st = clt_scope_begin()) != CLT_OK)
            return st;
        int was = clt_set_grad_enabled(0);
        if (use_trivialization)
            st = orth_right_inverse_triv(w, gen, &base, &ri);
        else if (map == ORTH_HOUSEHOLDER)
            st = orth_right_inverse_householder(w, &ri, fn);
        /* matrix_exp and cayley without it: NotImplementedError, which
         * torch takes as the identity */
        clt_set_grad_enabled(was);
        clt_tensor *keep[2] = {NULL, NULL};
        size_t nk = 0;
        if (base)
            keep[nk++] = base;
        if (ri)
            keep[nk++] = ri;
        st = clt__scope_finish_all(st, keep, nk);
        if (st != CLT_OK) {
            clt_generator_set_offset(gen, drawn);
            return st;
        }
    }
    /* appended to a chain, torch assumes right_inverse is the identity and
     * leaves base unset: the map alone */
    if (base)
        clt__scope_disown(base);
    st = add_entry(m, name, e, ri, &base, 1, fn);
    clt_tensor_free(ri);
    if (st != CLT_OK) {
        clt_tensor_free(base);
        clt_generator_set_offset(gen, drawn);
        return st;
    }
    return clt__ok();
}

clt_status clt_remove_parametrizations(clt_module *m, const char *name, int leave_parametrized)
{
    static const char fn[] = "clt_remove_parametrizations";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(name, fn);
    clt__reparam *r = find_param(m, name);
    if (r == NULL)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: Module %s does not have a parametrization on %s", fn,
                          m->ops->name, name);
    clt_tensor *orig = r->params[0], *t = NULL, *back = orig;
    clt_status st = CLT_OK;
    if (leave_parametrized) {
        int was = clt_set_grad_enabled(0);
        st = clt__parametrize_value(r, &t, fn);
        clt_set_grad_enabled(was);
        if (st != CLT_OK)
            return st;
        if (t->dtype != orig->dtype)
            st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                            "%s: Calling remove_parametrizations() with leave_parametrized=True "
                            "for a parameter that changes its dtype is not supported",
                            fn);
        else if (same_shape(t, orig)) {
            st = clt__copy_into(orig, t, fn);
            clt__version_bump(orig);
        } else {
            st = clt__clone(t, &back, fn);
            if (st == CLT_OK) {
                clt__scope_disown(back);
                st = clt_set_requires_grad(back, 1);
                if (st != CLT_OK)
                    clt_tensor_free(back);
            }
        }
        clt_tensor_free(t);
        if (st != CLT_OK)
            return st;
    }
    /* the bases, and original when a new leaf replaces it, are retired:
     * their handles stay valid as long as m */
    st = clt__reparam_unlink_retire(m, r, back == orig, fn);
    if (st != CLT_OK) {
        if (back != orig)
            clt_tensor_free(back);
        return st;
    }
    clt_tensor_free(m->params[r->slot]);
    m->params[r->slot] = back;
    clt__reparam_release(r);
    return clt__ok();
}
