/* adaptive.c: torch.nn.AdaptiveLogSoftmaxWithLoss (Grave et al.'s adaptive
 * softmax): a head Linear over the shortlist and one entry per cluster,
 * and a tail of Sequential(Linear, Linear) per cluster, composed of
 * recorded ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* i[0] in_features, i[1] n_classes, i[2] n_clusters; extra: the cutoffs
 * with n_classes last (n_clusters + 1 entries). */
static const char *const als_children[] = {"head", "tail"};

static clt_status als_single(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    (void)x;
    (void)out;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: forward takes an input and a target: run it with "
                      "clt_adaptive_log_softmax_forward (or clt_adaptive_log_softmax_log_prob)",
                      m->ops->name);
}

static void als_free(clt_module *m)
{
    free(m->extra);
    m->extra = NULL;
}

static clt_status als_clone(const clt_module *m, clt_module *copy, clt_device *dev,
                            const char *fn)
{
    (void)dev;
    size_t bytes = (size_t)(m->i[2] + 1) * sizeof(int64_t);
    int64_t *c = clt__malloc(bytes);
    if (c == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(c, m->extra, bytes);
    copy->extra = c;
    return CLT_OK;
}

static const clt__module_ops als_ops = {"AdaptiveLogSoftmaxWithLoss", als_single, als_free,
                                        als_clone};

clt_status clt_adaptive_log_softmax_with_loss(clt_device *dev, int64_t in_features,
                                              int64_t n_classes, const int64_t *cutoffs,
                                              size_t n_cutoffs, double div_value, int head_bias,
                                              clt_generator *gen, clt_module **out)
{
    static const char fn[] = "clt_adaptive_log_softmax_with_loss";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dev, fn);
    CLT__REQUIRE_ARG(cutoffs, fn);
    if (in_features <= 0 || n_classes <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: in_features %lld and n_classes %lld must be positive", fn,
                          (long long)in_features, (long long)n_classes);
    bool bad = n_cutoffs == 0 || n_cutoffs > 64;
    for (size_t k = 0; k < n_cutoffs && !bad; k++)
        bad = cutoffs[k] <= 0 || cutoffs[k] > n_classes - 1 ||
              (k > 0 && cutoffs[k] <= cutoffs[k - 1]);
    if (bad)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: cutoffs should be a sequence of unique, positive integers sorted "
                          "in an increasing order, where each value is between 1 and "
                          "n_classes-1 (%lld)%s",
                          fn, (long long)(n_classes - 1),
                          n_cutoffs > 64 ? "; at most 64 of them" : "");
    if (!(div_value > 0) || !isfinite(div_value))
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: div_value %g: expected a positive number",
                          fn, div_value);
    size_t nc = n_cutoffs;
    int64_t hsz[64];
    for (size_t k = 0; k < nc; k++) {
        double h = floor((double)in_features / pow(div_value, (double)(k + 1)));
        if (h < 1 || h > (double)INT64_MAX / 2)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: cluster %zu's hidden size in_features // div_value^%zu is "
                              "%g: layers of no features are not supported (a smaller "
                              "div_value or fewer cutoffs)",
                              fn, k, k + 1, h);
        hsz[k] = (int64_t)h;
    }
    int64_t *cut = clt__malloc((nc + 1) * sizeof *cut);
    if (cut == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    memcpy(cut, cutoffs, nc * sizeof *cut);
    cut[nc] = n_classes;
    uint64_t drawn = clt_generator_offset(gen);
    clt_module *m = NULL, *head = NULL, *tail = NULL, **seqs = NULL;
    size_t nseq = 0;
    clt_status st = clt__module_new(&als_ops, dev, &m);
    if (st == CLT_OK) {
        m->extra = cut;
        cut = NULL;
        m->i[0] = in_features;
        m->i[1] = n_classes;
        m->i[2] = (int64_t)nc;
        m->i[3] = head_bias != 0;
        m->f[0] = div_value;
        st = clt_linear(dev, in_features, cutoffs[0] + (int64_t)nc, head_bias, gen, &head);
    }
    if (st == CLT_OK) {
        seqs = clt__calloc(nc, sizeof *seqs);
        if (seqs == NULL)
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (size_t k = 0; k < nc && st == CLT_OK; k++) {
        clt_module *pair[2] = {NULL, NULL};
        st = clt_linear(dev, in_features, hsz[k], 0, gen, &pair[0]);
        if (st == CLT_OK)
            st = clt_linear(dev, hsz[k], ((int64_t *)m->extra)[k + 1] - ((int64_t *)m->extra)[k],
                            0, gen, &pair[1]);
        if (st == CLT_OK)
            st = clt_sequential(pair, 2, &seqs[k]);
        if (st != CLT_OK) {
            clt_module_free(pair[0]);
            clt_module_free(pair[1]);
        } else {
            nseq++;
        }
    }
    if (st == CLT_OK)
        st = clt_module_list(seqs, nseq, &tail);
    if (st == CLT_OK) {
        nseq = 0; /* the list owns them */
        clt_module *kids[2] = {head, tail};
        st = clt__module_adopt(m, kids, 2, als_children);
        if (st == CLT_OK)
            head = tail = NULL;
    }
    for (size_t k = 0; k < nseq; k++)
        clt_module_free(seqs[k]);
    free(seqs);
    free(cut);
    clt_module_free(head);
    clt_module_free(tail);
    if (st != CLT_OK) {
        clt_module_free(m);
        clt_generator_set_offset(gen, drawn); /* a failed constructor takes no numbers */
        return clt__error_in(st, fn);
    }
    *out = m;
    return clt__ok();
}

/* t's int64 values on the host (a new array to free), for the public call fn. */
static clt_status host_i64(const char *fn, const clt_tensor *t, int64_t **out)
{
    *out = NULL;
    size_t n = (size_t)t->numel;
    int64_t *v = clt__malloc((n ? n : 1) * sizeof *v);
    if (v == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    clt_tensor *c = NULL;
    clt_status st = clt__clone(t, &c, fn);
    if (st == CLT_OK && n > 0)
        st = clt__error_as(clt_tensor_read(c, v, n * sizeof *v), fn);
    clt_tensor_free(c);
    if (st != CLT_OK) {
        free(v);
        return st;
    }
    *out = v;
    return CLT_OK;
}

/* An int64 tensor of shape on dev from the host values v. */
static clt_status index_tensor(const char *fn, clt_device *dev, int nd, const int64_t *shape,
                               const int64_t *v, clt_tensor **out)
{
    static const int64_t none = 0;
    return clt__tensor_from_host_in(fn, dev, CLT_INT64, nd, shape, v ? (const void *)v : &none,
                                    out);
}

typedef struct als_ctx {
    const clt_tensor *target;
    clt_tensor *loss; /* the second result, for the caller */
} als_ctx;

/* torch's AdaptiveLogSoftmaxWithLoss.forward: output[r] = log p(target[r]
 * | input[r]), the head's log-probability of the target (shortlist) or of
 * its cluster plus the cluster's log-probability of it; loss = mean(-output).
 * Each cluster's rows go through its tail alone (index_select), and the
 * pieces come back in the rows' order through one index_select. */
static clt_status als_multi(clt_module *m, void *ctx, const clt_tensor *x, clt_tensor **out)
{
    const char *name = m->ops->name;
    als_ctx *k = ctx;
    const clt_tensor *tg = k->target;
    const int64_t *cut = m->extra;
    int64_t nc = m->i[2], shortlist = cut[0], ncls = m->i[1];
    clt_module *head = m->children[0], *tail = m->children[1];
    clt_status st = clt__module_check_device(m, x, name);
    if (st == CLT_OK)
        st = clt__module_check_device(m, tg, name);
    if (st != CLT_OK)
        return st;
    if (tg->dtype != CLT_INT64)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected a target of dtype int64 (torch's long), got %s", name,
                          clt_dtype_name(tg->dtype));
    if (tg->ndim == 1) {
        if (x->ndim != 2)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: 1D target tensor expects 2D input tensors, but found inputs "
                              "with %d dimensions",
                              name, x->ndim);
        if (x->shape[0] != tg->shape[0])
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: Input and target should have the same size in the batch "
                              "dimension (%lld and %lld)",
                              name, (long long)x->shape[0], (long long)tg->shape[0]);
    } else if (tg->ndim == 0) {
        if (x->ndim != 1)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: 0D target tensor expects 1D input tensors, but found inputs "
                              "with %d dimensions",
                              name, x->ndim);
    } else {
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: 0D or 1D target tensor expected, multi-target not supported", name);
    }
    int64_t N = tg->ndim ? tg->shape[0] : 1;
    int64_t *t = NULL;
    if ((st = host_i64(name, tg, &t)) != CLT_OK)
        return st;
    int64_t lo = 0, hi = 0;
    for (int64_t r = 0; r < N; r++) {
        lo = r == 0 || t[r] < lo ? t[r] : lo;
        hi = r == 0 || t[r] > hi ? t[r] : hi;
    }
    if (N > 0 && (lo < 0 || hi >= ncls)) {
        free(t);
        return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                          "%s: Target values should be in [0, %lld], but values in range "
                          "[%lld, %lld] were found",
                          name, (long long)(ncls - 1), (long long)lo, (long long)hi);
    }
    /* per row: its cluster (0: the shortlist), the head's column, the
     * place in the cluster; rows ordered cluster by cluster, shortlist last */
    int64_t *cl = clt__malloc((size_t)(3 * N + 1) * sizeof *cl);
    clt_tensor **pieces = clt__calloc((size_t)nc + 1, sizeof *pieces);
    if (cl == NULL || pieces == NULL) {
        free(t);
        free(cl);
        free(pieces);
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", name);
    }
    int64_t *gcol = cl + N, *order = cl + 2 * N;
    for (int64_t r = 0; r < N; r++) {
        int64_t c = 0;
        while (t[r] >= cut[c])
            c++;
        cl[r] = c;
        gcol[r] = c == 0 ? t[r] : shortlist + c - 1;
    }
    if ((st = clt_scope_begin()) != CLT_OK) {
        free(t);
        free(cl);
        free(pieces);
        return st;
    }
    clt_tensor *x2 = (clt_tensor *)x, *ho, *hlp, *gi, *hsel, *sum = NULL, *flat, *mean;
    clt_tensor *res[2] = {NULL, NULL};
    int64_t gshape[2] = {N, 1}, placed = 0;
    size_t np = 0;
    if (x->ndim == 1)
        CLT__TRY(clt__unsqueeze_rec(name, x, 0, &x2));
    CLT__TRY(clt__error_as(clt_module_forward(head, x2, &ho), name));
    CLT__TRY(clt__log_softmax_rec(name, ho, 1, &hlp));
    CLT__TRY(index_tensor(name, m->dev, 2, gshape, gcol, &gi));
    CLT__TRY(clt__error_as(clt_gather(hlp, 1, gi, &hsel), name));
    for (int64_t c = 1; c <= nc; c++) {
        int64_t n = 0;
        for (int64_t r = 0; r < N; r++)
            if (cl[r] == c) {
                order[placed + n] = r;
                gcol[n++] = t[r] - cut[c - 1]; /* gcol is free again: the place */
            }
        if (n == 0)
            continue;
        clt_tensor *idx, *rel, *sub, *co, *clp;
        int64_t rshape[2] = {n, 1};
        CLT__TRY(index_tensor(name, m->dev, 1, &n, order + placed, &idx));
        CLT__TRY(index_tensor(name, m->dev, 2, rshape, gcol, &rel));
        CLT__TRY(clt__index_select_rec(name, x2, 0, idx, &sub));
        CLT__TRY(clt__error_as(clt_module_forward(clt_module_list_get(tail, c - 1), sub, &co),
                               name));
        CLT__TRY(clt__log_softmax_rec(name, co, 1, &clp));
        CLT__TRY(clt__error_as(clt_gather(clp, 1, rel, &pieces[np++]), name));
        placed += n;
    }
    if (placed == 0) {
        sum = hsel;
    } else {
        clt_tensor *all, *inv, *back;
        if (placed < N) {
            int64_t zshape[2] = {N - placed, 1};
            CLT__TRY(clt__error_as(clt_zeros(m->dev, x->dtype, 2, zshape, &pieces[np++]), name));
            for (int64_t r = 0, j = placed; r < N; r++)
                if (cl[r] == 0)
                    order[j++] = r;
        }
        /* inverse of order: the place of row r in the pieces */
        for (int64_t j = 0; j < N; j++)
            gcol[order[j]] = j;
        CLT__TRY(clt__cat_rec(name, (const clt_tensor *const *)pieces, np, 0, &all));
        CLT__TRY(index_tensor(name, m->dev, 1, &N, gcol, &inv));
        CLT__TRY(clt__index_select_rec(name, all, 0, inv, &back));
        CLT__TRY(clt__add_rec(name, hsel, back, &sum));
    }
    CLT__TRY(clt__reshape_rec(name, sum, 1, &N, &flat));
    CLT__TRY(clt__mean_dim_rec(name, flat, 0, 0, &mean));
    CLT__TRY(clt__neg_rec(name, mean, &res[1]));
    if (tg->ndim == 0)
        CLT__TRY(clt__reshape_rec(name, flat, 0, NULL, &res[0]));
    else
        res[0] = flat;
done:
    free(t);
    free(cl);
    free(pieces);
    st = clt__scope_finish_all(st, res, 2);
    if (st != CLT_OK)
        return st;
    *out = res[0];
    k->loss = res[1];
    return CLT_OK;
}

static clt_status check_als(const char *fn, const clt_module *m)
{
    CLT__REQUIRE_ARG(m, fn);
    if (m->ops != &als_ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not an %s", fn,
                          m->ops->name, als_ops.name);
    return CLT_OK;
}

clt_status clt_adaptive_log_softmax_forward(clt_module *m, const clt_tensor *input,
                                            const clt_tensor *target, clt_tensor **output,
                                            clt_tensor **loss)
{
    static const char fn[] = "clt_adaptive_log_softmax_forward";
    if (output)
        *output = NULL;
    if (loss)
        *loss = NULL;
    CLT__REQUIRE_ARG(output, fn);
    CLT__REQUIRE_ARG(loss, fn);
    clt_status st = check_als(fn, m);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(input, fn);
    CLT__REQUIRE_ARG(target, fn);
    als_ctx k = {target, NULL};
    clt__forward_begin();
    st = clt__forward_end(clt__module_call_multi(m, input, als_multi, &k, output), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*output);
        *output = NULL;
        clt_tensor_free(k.loss);
        return clt__error_in(st, fn);
    }
    *loss = k.loss;
    return clt__ok();
}

/* _get_full_log_prob: [N, n_classes], the shortlist's columns of the
 * head's log_softmax, then each cluster's log_softmax plus the head's
 * column of the cluster. */
static clt_status full_log_prob(const char *fn, clt_module *m, const clt_tensor *x,
                                clt_tensor **out)
{
    clt_status st = clt__module_check_device(m, x, fn);
    if (st != CLT_OK)
        return st;
    if (x->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a 2D input [N, in_features], got %d dimensions", fn,
                          x->ndim);
    const int64_t *cut = m->extra;
    int64_t nc = m->i[2];
    clt_module *head = m->children[0], *tail = m->children[1];
    clt_tensor **parts = clt__calloc((size_t)nc + 1, sizeof *parts);
    if (parts == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    if ((st = clt_scope_begin()) != CLT_OK) {
        free(parts);
        return st;
    }
    clt_tensor *ho, *hlp;
    CLT__TRY(clt__error_as(clt_module_forward(head, x, &ho), fn));
    CLT__TRY(clt__log_softmax_rec(fn, ho, 1, &hlp));
    CLT__TRY(clt__narrow_rec(fn, hlp, 1, 0, cut[0], &parts[0]));
    for (int64_t c = 0; c < nc; c++) {
        clt_tensor *co, *clp, *col;
        CLT__TRY(clt__error_as(clt_module_forward(clt_module_list_get(tail, c), x, &co), fn));
        CLT__TRY(clt__log_softmax_rec(fn, co, 1, &clp));
        CLT__TRY(clt__narrow_rec(fn, hlp, 1, cut[0] + c, 1, &col));
        CLT__TRY(clt__add_rec(fn, clp, col, &parts[c + 1]));
    }
    CLT__TRY(clt__cat_rec(fn, (const clt_tensor *const *)parts, (size_t)nc + 1, 1, out));
done:
    free(parts);
    return clt__scope_finish(st, out);
}

clt_status clt_adaptive_log_softmax_log_prob(clt_module *m, const clt_tensor *input,
                                             clt_tensor **out)
{
    static const char fn[] = "clt_adaptive_log_softmax_log_prob";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_als(fn, m);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(input, fn);
    st = full_log_prob(fn, m, input, out);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

/* torch's predict: the head's argmax where it is a shortlist class, else
 * the argmax of the full log-probabilities; the two agree everywhere (a
 * class of a cluster never scores above the cluster's head column), so
 * the argmax of log_prob is computed for every row. */
clt_status clt_adaptive_log_softmax_predict(clt_module *m, const clt_tensor *input,
                                            clt_tensor **out)
{
    static const char fn[] = "clt_adaptive_log_softmax_predict";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = check_als(fn, m);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(input, fn);
    int was = clt_set_grad_enabled(0);
    clt_tensor *lp = NULL;
    st = full_log_prob(fn, m, input, &lp);
    if (st == CLT_OK)
        st = clt__argmax_dim(lp, 1, 0, out, fn);
    clt_tensor_free(lp);
    clt_set_grad_enabled(was);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}
