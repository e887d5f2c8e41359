/* extra_layers.c: nn.Unflatten, nn.Softmax2d and the two-input
 * nn.CosineSimilarity and nn.PairwiseDistance over the functional ops. */
#include "nn/nn.h"

/* ---- Unflatten: i[0] dim, i[1] the number k of sizes, i[2 ...] the sizes */

static clt_status unflatten_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    int64_t sizes[CLT_MAX_DIMS];
    for (int j = 0; j < (int)m->i[1]; j++)
        sizes[j] = m->i[2 + j];
    return clt__error_as(clt_unflatten(x, (int)m->i[0], sizes, (int)m->i[1], out), "Unflatten");
}

static const clt__module_ops unflatten_ops = {"Unflatten", unflatten_forward, NULL, NULL};

clt_status clt_unflatten_layer(int dim, const int64_t *sizes, int k, clt_module **out)
{
    static const char fn[] = "clt_unflatten_layer";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    if (k <= 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: unflatten: sizes must be non-empty", fn);
    if (k > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_TOO_MANY_DIMS, "%s: %d sizes; at most %d dimensions supported",
                          fn, k, CLT_MAX_DIMS);
    CLT__REQUIRE_ARG(sizes, fn);
    clt_status st = clt__module_new(&unflatten_ops, NULL, out);
    if (st != CLT_OK)
        return st;
    (*out)->i[0] = dim;
    (*out)->i[1] = k;
    for (int j = 0; j < k; j++)
        (*out)->i[2 + j] = sizes[j];
    return clt__ok();
}

/* ---- Softmax2d: softmax over the channels of [C, H, W] or [N, C, H, W] ------ */

static clt_status softmax2d_forward(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    (void)m;
    if (x->ndim != 3 && x->ndim != 4)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "Softmax2d: Softmax2d requires a 3D or 4D tensor as input, not %d-D",
                          x->ndim);
    return clt__softmax_rec("Softmax2d", x, -3, out);
}

static const clt__module_ops softmax2d_ops = {"Softmax2d", softmax2d_forward, NULL, NULL};

clt_status clt_softmax2d_layer(clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_softmax2d_layer");
    clt_status st = clt__module_new(&softmax2d_ops, NULL, out);
    return st == CLT_OK ? clt__ok() : st;
}

/* ---- CosineSimilarity (i[0] dim, f[0] eps) and PairwiseDistance (f[0] p,
 * f[1] eps, i[0] keepdim): forward(x1, x2) --------------------------------- */

static clt_status two_inputs(clt_module *m, const clt_tensor *x, clt_tensor **out)
{
    (void)x;
    *out = NULL;
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "%s: forward takes two inputs: call clt_%s_forward", m->ops->name,
                      m->i[15] ? "pairwise_distance" : "cosine_similarity");
}

static const clt__module_ops cosine_ops = {"CosineSimilarity", two_inputs, NULL, NULL};
static const clt__module_ops pairwise_ops = {"PairwiseDistance", two_inputs, NULL, NULL};

clt_status clt_cosine_similarity_layer(int dim, double eps, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_cosine_similarity_layer");
    clt_status st = clt__module_new(&cosine_ops, NULL, out);
    if (st == CLT_OK) {
        (*out)->i[0] = dim;
        (*out)->f[0] = eps;
    }
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_pairwise_distance_layer(double p, double eps, int keepdim, clt_module **out)
{
    CLT__REQUIRE_ARG(out, "clt_pairwise_distance_layer");
    clt_status st = clt__module_new(&pairwise_ops, NULL, out);
    if (st == CLT_OK) {
        (*out)->f[0] = p;
        (*out)->f[1] = eps;
        (*out)->i[0] = keepdim != 0;
        (*out)->i[15] = 1; /* names the right forward in two_inputs' message */
    }
    return st == CLT_OK ? clt__ok() : st;
}

/* The second input, for the run through the module's hooks (which see x1);
 * x1 given as x2 too is the hooks' input in both places. */
typedef struct pair_ctx {
    const clt_tensor *x1, *x2;
} pair_ctx;

static clt_status pair_multi(clt_module *m, void *ctx, const clt_tensor *x1, clt_tensor **out)
{
    const pair_ctx *k = ctx;
    const clt_tensor *x2 = k->x2 == k->x1 ? x1 : k->x2;
    if (m->ops == &cosine_ops)
        return clt__error_as(clt_cosine_similarity(x1, x2, (int)m->i[0], m->f[0], out),
                             m->ops->name);
    return clt__error_as(clt_pairwise_distance(x1, x2, m->f[0], m->f[1], (int)m->i[0], out),
                         m->ops->name);
}

static clt_status pair_forward(const char *fn, const clt__module_ops *ops, clt_module *m,
                               const clt_tensor *x1, const clt_tensor *x2, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(m, fn);
    if (m->ops != ops)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: the module is a %s, not a %s", fn,
                          m->ops->name, ops->name);
    CLT__REQUIRE_ARG(x1, fn);
    CLT__REQUIRE_ARG(x2, fn);
    pair_ctx k = {x1, x2};
    clt__forward_begin();
    clt_status st = clt__forward_end(clt__module_call_multi(m, x1, pair_multi, &k, out), fn);
    if (st != CLT_OK) {
        clt_tensor_free(*out);
        *out = NULL;
        return clt__error_in(st, fn);
    }
    return clt__ok();
}

clt_status clt_cosine_similarity_forward(clt_module *m, const clt_tensor *x1,
                                         const clt_tensor *x2, clt_tensor **out)
{
    return pair_forward("clt_cosine_similarity_forward", &cosine_ops, m, x1, x2, out);
}

clt_status clt_pairwise_distance_forward(clt_module *m, const clt_tensor *x1,
                                         const clt_tensor *x2, clt_tensor **out)
{
    return pair_forward("clt_pairwise_distance_forward", &pairwise_ops, m, x1, x2, out);
}
