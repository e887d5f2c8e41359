/* grad_index.c: the index ops of index.h with their backward formulas,
 * built from the same deterministic ops (src/ops/index.c): the gradient of a
 * selection is an index_add or scatter_add of the output's gradient into
 * zeros, that of a scatter a gather, so gradients too are the same bits on
 * every run.  The in-place forms are not recorded. */
#include <string.h>

#include "autograd/autograd.h"

/* Zeros of the input's shape in g's dtype. */
static clt_status zeros_of(const clt__edge *e, const clt_tensor *g, clt_tensor **out)
{
    return clt__full(g->dev, g->dtype, e->ndim, e->shape, 0.0, out);
}

/* i[0] dim, saved[0] index: t's gradient is g's slices added back at their
 * indices (repeated indices add up). */
static clt_status bw_index_select(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *z = NULL;
    clt_status st = zeros_of(&n->in[0], g, &z);
    if (st == CLT_OK)
        st = clt__index_add(z, (int)n->i[0], n->saved[0], g, 1, &gin[0], "clt_backward");
    clt_tensor_free(z);
    return st;
}

/* i[0] dim, saved[0] index. */
static clt_status bw_gather(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *z = NULL;
    clt_status st = zeros_of(&n->in[0], g, &z);
    if (st == CLT_OK)
        st = clt__scatter_add(z, (int)n->i[0], n->saved[0], g, &gin[0], "clt_backward");
    clt_tensor_free(z);
    return st;
}

/* src's gradient, g gathered at the scattered places.  PyTorch needs src to
 * have index's shape for it (a larger src has no gradient formula there
 * either). */
static clt_status src_grad(clt__node *n, const clt_tensor *g, clt_tensor **out, const char *name)
{
    const clt__edge *e = &n->in[1];
    const clt_tensor *index = n->saved[0];
    bool same = e->ndim == index->ndim;
    for (int d = 0; same && d < e->ndim; d++)
        same = e->shape[d] == index->shape[d];
    if (!same) {
        char s1[160], s2[160];
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the gradient of src needs src %s to have index's shape %s", name,
                          clt__shape_str(s1, sizeof s1, e->ndim, e->shape),
                          clt__shape_str(s2, sizeof s2, index->ndim, index->shape));
    }
    return clt__gather(g, (int)n->i[0], index, out, "clt_backward");
}

/* i[0] dim, saved[0] index: t's gradient is g with the overwritten places
 * zeroed, src's g gathered there. */
static clt_status bw_scatter(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *z = NULL;
    if (CLT__NEED(n, 0)) {
        const clt_tensor *index = n->saved[0];
        CLT__TRY(clt__full(g->dev, g->dtype, index->ndim, index->shape, 0.0, &z));
        CLT__TRY(clt__scatter(g, (int)n->i[0], index, z, &gin[0], "clt_backward"));
    }
    if (CLT__NEED(n, 1))
        CLT__TRY(src_grad(n, g, &gin[1], n->name));
done:
    clt_tensor_free(z);
    return st;
}

static clt_status bw_scatter_add(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0))
        st = clt__alias(g, &gin[0]);
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = src_grad(n, g, &gin[1], n->name);
    return st;
}

/* i[0] dim, s[0] alpha, saved[0] index: src's gradient is alpha times g's
 * slices at the indices. */
static clt_status bw_index_add(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    clt_tensor *sel = NULL;
    if (CLT__NEED(n, 0))
        CLT__TRY(clt__alias(g, &gin[0]));
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__index_select(g, (int)n->i[0], n->saved[0], &sel, "clt_backward"));
        CLT__TRY(n->s[0] == 1 ? clt__alias(sel, &gin[1])
                              : clt__mul_scalar_in("clt_backward", sel, n->s[0], &gin[1]));
    }
done:
    clt_tensor_free(sel);
    return st;
}

/* saved[0] the indices: the table's gradient is index_add of g's rows. */
static clt_status bw_embedding(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt_tensor *indices = n->saved[0];
    clt_tensor *z = NULL, *flat = NULL, *rows = NULL;
    int64_t count = indices->numel, shape[2] = {count, n->in[0].shape[1]};
    CLT__TRY(zeros_of(&n->in[0], g, &z));
    CLT__TRY(clt__reshape(indices, 1, &count, &flat, "clt_backward"));
    CLT__TRY(clt__reshape(g, 2, shape, &rows, "clt_backward"));
    CLT__TRY(clt__index_add(z, 0, flat, rows, 1, &gin[0], "clt_backward"));
done:
    clt_tensor_free(z);
    clt_tensor_free(flat);
    clt_tensor_free(rows);
    return st;
}

/* saved[0] the mask: g where it is false (the engine sums a broadcast t's
 * gradient back to its shape). */
static clt_status bw_masked_fill(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    return clt__masked_fill(g, n->saved[0], 0.0, &gin[0], "clt_backward");
}

/* ---- public entries ------------------------------------------------------------------ */

static clt_status record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                         int nin, const clt_tensor *const *in, const clt_tensor *saved,
                         int64_t dim, double alpha)
{
    clt__node *n = NULL;
    st = clt__record(st, out, name, bw, nin, in, 1, &saved, &n);
    if (n) {
        int nd = in[0]->ndim > 0 ? in[0]->ndim : 1;
        n->i[0] = dim < 0 ? dim + nd : dim;
        n->s[0] = alpha;
    }
    return st;
}

clt_status clt_index_select(const clt_tensor *t, int dim, const clt_tensor *index,
                            clt_tensor **out)
{
    return clt__index_select_rec("clt_index_select", t, dim, index, out);
}

clt_status clt__index_select_rec(const char *fn, const clt_tensor *t, int dim,
                                 const clt_tensor *index, clt_tensor **out)
{
    clt_status st = clt__index_select(t, dim, index, out, fn);
    return record(st, out, "IndexSelectBackward0", bw_index_select, 1, &t, index, dim, 1);
}

clt_status clt_gather(const clt_tensor *t, int dim, const clt_tensor *index, clt_tensor **out)
{
    clt_status st = clt__gather(t, dim, index, out, "clt_gather");
    return record(st, out, "GatherBackward0", bw_gather, 1, &t, index, dim, 1);
}

clt_status clt_scatter(const clt_tensor *t, int dim, const clt_tensor *index,
                       const clt_tensor *src, clt_tensor **out)
{
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__scatter(t, dim, index, src, out, "clt_scatter");
    return record(st, out, "ScatterBackward0", bw_scatter, 2, in, index, dim, 1);
}

clt_status clt_scatter_add(const clt_tensor *t, int dim, const clt_tensor *index,
                           const clt_tensor *src, clt_tensor **out)
{
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__scatter_add(t, dim, index, src, out, "clt_scatter_add");
    return record(st, out, "ScatterAddBackward0", bw_scatter_add, 2, in, index, dim, 1);
}

clt_status clt_index_add(const clt_tensor *t, int dim, const clt_tensor *index,
                         const clt_tensor *src, double alpha, clt_tensor **out)
{
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__index_add(t, dim, index, src, alpha, out, "clt_index_add");
    return record(st, out, "IndexAddBackward0", bw_index_add, 2, in, index, dim, alpha);
}

clt_status clt__embedding_rec(const char *fn, const clt_tensor *weight,
                              const clt_tensor *indices, clt_tensor **out)
{
    return record(clt__embedding(weight, indices, out, fn), out, "EmbeddingBackward0",
                  bw_embedding, 1, &weight, indices, 0, 1);
}

clt_status clt_embedding(const clt_tensor *weight, const clt_tensor *indices, clt_tensor **out)
{
    return clt__embedding_rec("clt_embedding", weight, indices, out);
}

clt_status clt_masked_fill(const clt_tensor *t, const clt_tensor *mask, double value,
                           clt_tensor **out)
{
    return clt__masked_fill_rec("clt_masked_fill", t, mask, value, out);
}

clt_status clt__masked_fill_rec(const char *fn, const clt_tensor *t, const clt_tensor *mask,
                                double value, clt_tensor **out)
{
    clt_status st = clt__masked_fill(t, mask, value, out, fn);
    return record(st, out, "MaskedFillBackward0", bw_masked_fill, 1, &t, mask, 0, 1);
}

clt_status clt_one_hot(const clt_tensor *indices, int64_t num_classes, clt_tensor **out)
{
    return clt__one_hot(indices, num_classes, out);
}

/* The in-place forms are what backward formulas build on, not recorded
 * themselves: with grad mode on, a destination or source that requires
 * grad is refused rather than left with a gradient that misses the write. */
static clt_status inplace_allowed(const clt_tensor *t, const clt_tensor *src, const char *fn)
{
    if (t == NULL || src == NULL)
        return CLT_OK; /* the op names the NULL argument */
    clt_status st = clt__check_inplace(t, fn);
    if (st != CLT_OK)
        return st;
    const clt_tensor *in[2] = {t, src};
    if (clt__grad_needed(2, in))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: in-place index ops are not recorded by autograd, and an operand "
                          "requires grad; use the out-of-place form, or clt_set_grad_enabled(0) "
                          "around it",
                          fn);
    return CLT_OK;
}

clt_status clt_scatter_add_(clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *src)
{
    clt_status st = inplace_allowed(t, src, "clt_scatter_add_");
    return st != CLT_OK ? st : clt__scatter_add_(t, dim, index, src);
}

clt_status clt_index_add_(clt_tensor *t, int dim, const clt_tensor *index, const clt_tensor *src,
                          double alpha)
{
    clt_status st = inplace_allowed(t, src, "clt_index_add_");
    return st != CLT_OK ? st : clt__index_add_(t, dim, index, src, alpha);
}
