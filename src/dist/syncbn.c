/* syncbn.c: SyncBatchNorm: BatchNorm layers converted to take their batch
 * statistics over every rank, through an all-reduce that autograd records
 * (its backward all-reduces the gradient, as torch's SyncBatchNorm
 * function does). */
#include <stdlib.h>

#include "dist/dist.h"
#include "nn/nn.h"

/* ---- all_reduce(SUM) that autograd records ------------------------------------------ */

static clt_status ar_forward(clt_function_ctx *ctx, void *user, clt_tensor *const *inputs,
                             size_t n, clt_tensor **outputs, size_t *m)
{
    (void)ctx;
    (void)n;
    clt_tensor *t = NULL;
    clt_status st = clt_clone(inputs[0], &t);
    if (st == CLT_OK)
        st = clt_all_reduce(user, t, CLT_REDUCE_SUM);
    if (st != CLT_OK) {
        clt_tensor_free(t);
        return st;
    }
    outputs[0] = t;
    *m = 1;
    return CLT_OK;
}

static clt_status ar_backward(clt_function_ctx *ctx, void *user,
                              const clt_tensor *const *grad_outputs, size_t m,
                              clt_tensor **grad_inputs, size_t n)
{
    (void)ctx;
    (void)m;
    (void)n;
    clt_tensor *g = NULL;
    clt_status st = clt_clone(grad_outputs[0], &g);
    if (st == CLT_OK)
        st = clt_all_reduce(user, g, CLT_REDUCE_SUM);
    if (st != CLT_OK) {
        clt_tensor_free(g);
        return st;
    }
    grad_inputs[0] = g;
    return CLT_OK;
}

/* *out = the sum of t over the ranks, recorded. */
static clt_status all_reduce_rec(clt_process_group *pg, const clt_tensor *t, clt_tensor **out)
{
    static const clt_function fn = {"SyncBatchNormAllReduce", ar_forward, ar_backward, NULL, 0};
    clt_tensor **outs = NULL;
    size_t m = 0;
    clt_tensor *in = (clt_tensor *)t; /* clt_function_apply only reads its inputs */
    clt_status st = clt_function_apply(&fn, pg, &in, 1, &outs, &m);
    *out = st == CLT_OK ? outs[0] : NULL;
    clt_free(outs);
    return st;
}

/* ---- the layer ----------------------------------------------------------------------- */

typedef struct sync_extra {
    clt_process_group *pg;          /* borrowed */
    const clt__module_ops *bn_ops;  /* the BatchNorm's own, for the unsynced forward */
} sync_extra;

/* *total = v summed over the ranks, on the host (as clt_all_reduce of a
 * float64 [1]). */
static clt_status host_sum(clt_process_group *pg, double v, double *total, const char *fn)
{
    clt__dist_hdr h = {CLT__DIST_ALL_REDUCE, CLT_FLOAT64, 1, CLT_REDUCE_SUM, 0, {1}, 0};
    unsigned char tmp[2 * sizeof(double)];
    clt_status st = clt__dist_usable(pg, fn);
    if (st == CLT_OK)
        st = clt__dist_agree(pg, &h, CLT_OK, NULL, fn);
    if (st == CLT_OK)
        st = clt__dist_ring_all_reduce(pg, (unsigned char *)&v, 1, CLT_FLOAT64,
                                       CLT_REDUCE_SUM, tmp, fn);
    *total = v;
    return st;
}

/* x summed over every dim but 1, kept: [1, C, 1, ...]. */
static clt_status sum_but_1(const clt_tensor *x, clt_tensor **out)
{
    clt_tensor *cur = (clt_tensor *)x, *nx = NULL;
    clt_status st = CLT_OK;
    *out = NULL;
    for (int d = 0; st == CLT_OK && d < clt_tensor_ndim(x); d++) {
        if (d == 1)
            continue;
        st = clt_sum_dim(cur, d, 1, &nx);
        if (cur != x)
            clt_tensor_free(cur);
        cur = st == CLT_OK ? nx : NULL;
    }
    if (st == CLT_OK)
        *out = cur;
    return st;
}

static clt_status sync_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    static const char name[] = "SyncBatchNorm";
    sync_extra *e = m->extra;
    clt_status st = clt__module_check_device(m, x, name);
    if (st != CLT_OK)
        return st;
    if (x->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: expected at least 2D input (got %dD "
                          "input)",
                          name, x->ndim);
    /* torch's need_sync: batch statistics in train mode over several ranks */
    bool use_batch = m->training || !m->i[2];
    if (!(use_batch && m->training && e->pg->size > 1)) {
        if (x->ndim > 5)
            return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: expected at most 5D input (got %dD "
                              "input)", name, x->ndim);
        int keep = (int)m->i[1];
        m->i[1] = x->ndim == 2 || x->ndim == 3 ? 2 : x->ndim; /* BatchNorm's check, any rank */
        st = e->bn_ops->forward(m, x, out);
        m->i[1] = keep;
        return st;
    }
    if (x->shape[1] != m->i[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: running_mean should contain %lld elements not %lld", name,
                          (long long)x->shape[1], (long long)m->i[0]);
    if (m->nparams == 2)
        st = clt__module_check_dtype(x, m->params[0], "weight", NULL, name);
    else if (m->nbufs > 0)
        st = clt__module_check_dtype(x, m->bufs[0], "running_mean", NULL, name);
    if (st == CLT_OK && !clt__dtype_is_float(x->dtype))
        st = clt__error(CLT_ERR_DTYPE_UNSUPPORTED, "%s: takes floating input, not %s", name,
                        clt_dtype_name(x->dtype));
    if (st != CLT_OK)
        return st;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *s = NULL, *sum = NULL, *mu = NULL, *xc = NULL, *sq = NULL;
    clt_tensor *q = NULL, *qsum = NULL, *var = NULL, *ve = NULL, *inv = NULL, *y = NULL;
    clt_tensor *w = NULL, *b = NULL, *t = NULL, *res = NULL;
    clt_tensor *next[3] = {NULL, NULL, NULL};
    int64_t bshape[CLT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        bshape[d] = d == 1 ? x->shape[1] : 1;
    /* the element count over every rank, then the mean, then the biased
     * variance from the deviations (two passes, as exact as BatchNorm's) */
    double local = (double)(x->numel / (x->shape[1] ? x->shape[1] : 1)), total = 0;
    CLT__TRY(host_sum(e->pg, local, &total, name));
    if (total <= 1) {
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: expected more than 1 value per channel when training, got %g over "
                        "the ranks",
                        name, total);
        goto done;
    }
    CLT__TRY(sum_but_1(x, &s));
    CLT__TRY(all_reduce_rec(e->pg, s, &sum));
    CLT__TRY(clt_div_scalar(sum, total, &mu));
    CLT__TRY(clt_sub(x, mu, &xc));
    CLT__TRY(clt_mul(xc, xc, &sq));
    CLT__TRY(sum_but_1(sq, &q));
    CLT__TRY(all_reduce_rec(e->pg, q, &qsum));
    CLT__TRY(clt_div_scalar(qsum, total, &var));
    if (m->i[2]) {
        int was = clt_set_grad_enabled(0);
        clt_tensor *unb = NULL, *mub = NULL, *unbb = NULL;
        double factor = 0;
        st = clt__bn_factor(m, name, &factor);
        if (st == CLT_OK)
            st = clt_mul_scalar(var, total / (total - 1), &unb);
        if (st == CLT_OK)
            st = clt_to_dtype(mu, m->bufs[0]->dtype, &mub);
        if (st == CLT_OK)
            st = clt_to_dtype(unb, m->bufs[1]->dtype, &unbb);
        if (st == CLT_OK)
            st = clt__running_next(m->bufs[0], mub, factor, &next[0], name);
        if (st == CLT_OK)
            st = clt__running_next(m->bufs[1], unbb, factor, &next[1], name);
        if (st == CLT_OK)
            st = clt_add_scalar(m->bufs[2], 1.0, &next[2]);
        clt_tensor_free(mub);
        clt_tensor_free(unbb);
        clt_tensor_free(unb);
        clt_set_grad_enabled(was);
        CLT__TRY(st);
    }
    CLT__TRY(clt_add_scalar(var, m->f[0], &ve));
    CLT__TRY(clt_rsqrt(ve, &inv));
    CLT__TRY(clt_mul(xc, inv, &y));
    if (m->nparams == 2) {
        CLT__TRY(clt_reshape(m->params[0], x->ndim, bshape, &w));
        CLT__TRY(clt_reshape(m->params[1], x->ndim, bshape, &b));
        CLT__TRY(clt_mul(y, w, &t));
        CLT__TRY(clt_add(t, b, &res));
    } else {
        res = y;
    }
    *out = res;
    for (int k = 0; k < 3 && next[k]; k++)
        CLT__TRY(clt__forward_defer_write(m->bufs[k], next[k]));
done:
    return clt__scope_finish(st == CLT_OK ? st : clt__error_in(st, name), out);
}

static void sync_free_extra(clt_module *m)
{
    free(m->extra);
    m->extra = NULL;
}

static clt_status sync_clone_extra(const clt_module *m, clt_module *copy, clt_device *dev,
                                   const char *fn)
{
    (void)dev;
    sync_extra *e = clt__malloc(sizeof *e);
    if (e == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    *e = *(const sync_extra *)m->extra;
    copy->extra = e;
    return CLT_OK;
}

static const clt__module_ops sync_batch_norm_ops = {"SyncBatchNorm", sync_forward,
                                                    sync_free_extra, sync_clone_extra};

/* The BatchNorm m (a lazy one's first forward or load has just made it one)
 * becomes a SyncBatchNorm on the group pg. */
static clt_status become_sync(clt_module *m, void *pg)
{
    sync_extra *e = clt__malloc(sizeof *e);
    if (e == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "SyncBatchNorm: out of host memory");
    e->pg = pg;
    e->bn_ops = m->ops;
    m->extra = e;
    m->ops = &sync_batch_norm_ops;
    return CLT_OK;
}

/* m and its descendants' BatchNorm layers, counted into *n (and converted
 * when `convert`, with extras from es); a lazy one that has not run is
 * told to convert itself once it has (it needs no extra until then). */
static void walk(clt_module *m, bool convert, clt_process_group *pg, sync_extra **es, size_t *n)
{
    const char *nm = m->ops->name;
    if (strcmp(nm, "BatchNorm1d") == 0 || strcmp(nm, "BatchNorm2d") == 0 ||
        strcmp(nm, "BatchNorm3d") == 0) {
        if (convert) {
            sync_extra *e = es[*n];
            e->pg = pg;
            e->bn_ops = m->ops;
            m->extra = e;
            m->ops = &sync_batch_norm_ops;
        }
        (*n)++;
    } else {
        clt__lazy_convert_batch_norm(m, become_sync, pg, convert);
    }
    for (size_t k = 0; k < m->nchildren; k++)
        walk(m->children[k], convert, pg, es, n);
}

clt_status clt_convert_sync_batchnorm(clt_module *m, clt_process_group *pg)
{
    static const char fn[] = "clt_convert_sync_batchnorm";
    CLT__REQUIRE_ARG(m, fn);
    CLT__REQUIRE_ARG(pg, fn);
    size_t n = 0, k = 0;
    walk(m, false, pg, NULL, &n);
    sync_extra **es = clt__calloc(n ? n : 1, sizeof *es);
    for (size_t i = 0; es && i < n; i++)
        if ((es[i] = clt__malloc(sizeof **es)) == NULL)
            break;
    if (es == NULL || (n && es[n - 1] == NULL)) {
        for (size_t i = 0; es && i < n; i++)
            free(es[i]);
        free(es);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    walk(m, true, pg, es, &k);
    free(es);
    return clt__ok();
}
