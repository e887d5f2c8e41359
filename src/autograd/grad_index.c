/* grad_index.c: the index ops of index.h with their backward formulas,
 * built from the same deterministic ops (src/ops/index.c): the gradient of a
 * selection is an index_add or scatter_add of the output's gradient into
 * zeros, that of a scatter a gather, so gradients too are the same bits on
 * every run.  The in-place forms record the same formulas on t's history
 * (clt__inplace_rec). */
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
    if (st == CLT_OK && clt__creating_graph()) /* recorded: clt__twice */
        st = clt_index_add(z, (int)n->i[0], n->saved[0], g, 1, &gin[0]);
    else if (st == CLT_OK)
        st = clt__index_add(z, (int)n->i[0], n->saved[0], g, 1, &gin[0], "clt_backward");
    clt_tensor_free(z);
    return st;
}

/* i[0] dim, saved[0] index. */
static clt_status bw_gather(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_tensor *z = NULL;
    clt_status st = zeros_of(&n->in[0], g, &z);
    if (st == CLT_OK && clt__creating_graph()) /* recorded: clt__twice */
        st = clt_scatter_add(z, (int)n->i[0], n->saved[0], g, &gin[0]);
    else if (st == CLT_OK)
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
    if (clt__creating_graph()) /* recorded: clt__twice */
        return clt_gather(g, (int)n->i[0], index, out);
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
        CLT__TRY(clt__creating_graph() /* recorded: clt__twice */
                     ? clt_scatter(g, (int)n->i[0], index, z, &gin[0])
                     : clt__scatter(g, (int)n->i[0], index, z, &gin[0], "clt_backward"));
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
        st = clt__alias_grad(g, &gin[0]);
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
        CLT__TRY(clt__alias_grad(g, &gin[0]));
    if (CLT__NEED(n, 1)) {
        /* the recording forms: they record only in a pass that creates a
         * graph (clt__twice) */
        CLT__TRY(clt__index_select_rec("clt_backward", g, (int)n->i[0], n->saved[0], &sel));
        CLT__TRY(n->s[0] == 1 ? clt__alias_grad(sel, &gin[1])
                              : clt__mul_scalar_rec("clt_backward", sel, n->s[0], &gin[1]));
    }
done:
    clt_tensor_free(sel);
    return st;
}

/* The formula of freq_scaled's node: the identity, so that a pass that
 * creates a graph differentiates the scaled gradient as torch's
 * embedding_dense_double_backward does, unscaled. */
static clt_status bw_freq_scaled(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    (void)n;
    return clt__alias_grad(g, &gin[0]);
}

/* scale_grad_by_freq: the rows of s (a weight's gradient [rows, D]) each
 * over the number of times its index occurs in idx (int64, any shape; a
 * row no index names keeps its zeros).  In a pass that creates a graph the
 * result records a node whose formula is the identity (bw_freq_scaled). */
static clt_status freq_scaled(const clt_tensor *s, const clt_tensor *idx, clt_tensor **out)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    int64_t n = idx->numel, rows = s->shape[0], col[2] = {rows, 1};
    double lo = 0, hi = (double)(rows - 1), one = 1;
    clt_tensor *flat = NULL, *ic = NULL, *ones = NULL, *z = NULL, *cnt = NULL, *c1 = NULL,
               *c2 = NULL;
    CLT__TRY(clt__reshape(idx, 1, &n, &flat, fn));
    /* an index out of range is reported by the forward already */
    CLT__TRY(clt__clamp(flat, &lo, &hi, &ic, fn));
    CLT__TRY(clt__full(s->dev, s->dtype, 1, &n, 1.0, &ones));
    CLT__TRY(clt__full(s->dev, s->dtype, 1, &rows, 0.0, &z));
    CLT__TRY(clt__index_add(z, 0, ic, ones, 1, &cnt, fn));
    CLT__TRY(clt__clamp(cnt, &one, NULL, &c1, fn));
    CLT__TRY(clt__reshape(c1, 2, col, &c2, fn));
    CLT__TRY(clt__div_in(fn, s, c2, out));
    if (clt__creating_graph()) {
        clt__node *nd = NULL;
        CLT__TRY(clt__record(CLT_OK, out, "EmbeddingDenseBackward0", bw_freq_scaled, 1, &s, 0,
                             NULL, &nd));
        clt__twice(nd);
    }
done:
    clt_tensor_free(flat);
    clt_tensor_free(ic);
    clt_tensor_free(ones);
    clt_tensor_free(z);
    clt_tensor_free(cnt);
    clt_tensor_free(c1);
    clt_tensor_free(c2);
    return st;
}

/* sparse=True, as torch's embedding_sparse_backward: hands the pass the
 * weight's gradient as entries, the rows flat (int64 or int32, [count])
 * and their gradients v ([count, D]), those of the padding row left out
 * (which waits for the device).  gin[0] stays NULL. */
static clt_status put_sparse(const clt__node *n, const clt_tensor *flat, const clt_tensor *v,
                             int64_t pad)
{
    static const char fn[] = "clt_backward";
    clt_status st = CLT_OK;
    clt_tensor *rows = NULL, *vals = NULL, *mask = NULL, *places = NULL, *l = NULL;
    CLT__TRY(clt__to_dtype(flat, CLT_INT64, &l, fn));
    if (pad >= 0) {
        CLT__TRY(clt__ne_scalar_in(fn, l, (double)pad, &mask));
        CLT__TRY(clt__mask_places(mask, 1, &l->numel, &places, fn));
        CLT__TRY(clt__index_select(l, 0, places, &rows, fn));
        CLT__TRY(clt__index_select(v, 0, places, &vals, fn));
    } else {
        rows = l;
        l = NULL;
        CLT__TRY(clt__alias(v, &vals));
    }
    st = clt__sparse_grad_put(n, 0, rows, vals);
    rows = vals = NULL;
done:
    clt_tensor_free(rows);
    clt_tensor_free(vals);
    clt_tensor_free(mask);
    clt_tensor_free(places);
    clt_tensor_free(l);
    return st;
}

/* torch's refusal of scale_grad_by_freq with sparse gradients, at the
 * backward as torch's. */
static clt_status sparse_freq_refused(void)
{
    return clt__error(CLT_ERR_INVALID_ARGUMENT,
                      "clt_backward: embedding_backward: scale_grad_by_freq not supported with "
                      "sparse gradients");
}

/* saved[0] the indices: the table's gradient is index_add of g's rows
 * (i[3] sparse: put_sparse when the pass can carry it). */
static clt_status bw_embedding(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    const clt_tensor *indices = n->saved[0];
    const int64_t pad = n->i[1];
    if (n->i[3] && n->i[2])
        return sparse_freq_refused();
    if (n->i[3] && clt__sparse_grad_wanted(n, 0)) {
        int64_t cnt = indices->numel, sh[2] = {cnt, n->in[0].shape[1]};
        clt_tensor *f = NULL, *v = NULL;
        st = clt__reshape(indices, 1, &cnt, &f, "clt_backward");
        if (st == CLT_OK)
            st = clt__reshape(g, 2, sh, &v, "clt_backward");
        if (st == CLT_OK)
            st = put_sparse(n, f, v, pad);
        clt_tensor_free(f);
        clt_tensor_free(v);
        return st;
    }
    clt_tensor *z = NULL, *flat = NULL, *rows = NULL, *sum = NULL, *mask = NULL, *row = NULL;
    int64_t count = indices->numel, shape[2] = {count, n->in[0].shape[1]};
    int64_t mshape[2] = {n->in[0].shape[0], 1};
    bool rec = clt__creating_graph(); /* recorded: clt__twice */
    CLT__TRY(zeros_of(&n->in[0], g, &z));
    CLT__TRY(clt__reshape(indices, 1, &count, &flat, "clt_backward"));
    if (rec) {
        CLT__TRY(clt__reshape_rec("clt_backward", g, 2, shape, &rows));
        CLT__TRY(clt_index_add(z, 0, flat, rows, 1, pad >= 0 ? &sum : &gin[0]));
    } else {
        CLT__TRY(clt__reshape(g, 2, shape, &rows, "clt_backward"));
        CLT__TRY(clt__index_add(z, 0, flat, rows, 1, pad >= 0 ? &sum : &gin[0], "clt_backward"));
    }
    if (pad >= 0) { /* torch's embedding_backward skips the padding row's entries */
        CLT__TRY(clt__full(g->dev, CLT_BOOL, 2, mshape, 0.0, &mask));
        CLT__TRY(clt__narrow(mask, 0, pad, 1, &row, "clt_backward"));
        CLT__TRY(clt__fill_(row, 1.0, "clt_backward"));
        CLT__TRY(rec ? clt__masked_fill_rec("clt_backward", sum, mask, 0.0, &gin[0])
                     : clt__masked_fill(sum, mask, 0.0, &gin[0], "clt_backward"));
    }
    if (n->i[2]) { /* scale_grad_by_freq */
        clt_tensor_free(sum);
        sum = gin[0];
        gin[0] = NULL;
        CLT__TRY(freq_scaled(sum, flat, &gin[0]));
    }
done:
    clt_tensor_free(z);
    clt_tensor_free(flat);
    clt_tensor_free(rows);
    clt_tensor_free(sum);
    clt_tensor_free(mask);
    clt_tensor_free(row);
    return st;
}

/* saved[0] the mask: g where it is false (the engine sums a broadcast t's
 * gradient back to its shape). */
static clt_status bw_masked_fill(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (clt__creating_graph()) /* recorded: clt__twice */
        return clt__masked_fill_rec("clt_backward", g, n->saved[0], 0.0, &gin[0]);
    return clt__masked_fill(g, n->saved[0], 0.0, &gin[0], "clt_backward");
}

/* ---- public entries ------------------------------------------------------------------ */

static clt_status bw_take(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_index_fill(clt__node *n, const clt_tensor *g, clt_tensor **gin);
static clt_status bw_index_copy(clt__node *n, const clt_tensor *g, clt_tensor **gin);

static clt_status record(clt_status st, clt_tensor **out, const char *name, clt__backward_fn bw,
                         int nin, const clt_tensor *const *in, const clt_tensor *saved,
                         int64_t dim, double alpha)
{
    clt__node *n = NULL;
    /* index_copy saves its source too where the source requires grad, as
     * torch's formula for the source's gradient reads it: a later change
     * of the source fails backward there, and only there. */
    const clt_tensor *sv[2] = {saved, nin > 1 ? in[1] : NULL};
    int ns = bw == bw_index_copy && clt__requires_grad(sv[1]) ? 2 : 1;
    st = clt__record(st, out, name, bw, nin, in, ns, sv, &n);
    if (n) {
        int nd = in[0]->ndim > 0 ? in[0]->ndim : 1;
        n->i[0] = dim < 0 ? dim + nd : dim;
        n->s[0] = alpha;
    }
    if (bw == bw_index_select || bw == bw_masked_fill || bw == bw_gather ||
        bw == bw_scatter || bw == bw_scatter_add || bw == bw_index_add || bw == bw_take ||
        bw == bw_index_fill || bw == bw_index_copy)
        clt__twice(n);
    return st;
}

clt_status clt_index_select(const clt_tensor *t, int dim, const clt_tensor *index,
                            clt_tensor **out)
{
    return clt__index_select_rec("clt_index_select", t, dim, index, out);
}

/* index_select and gather of a complex tensor: on its real view (the
 * index of gather given a last dim of 2, the same index for both parts). */
typedef struct via_index {
    const char *fn;
    int dim;
    const clt_tensor *index;
} via_index;

static clt_status real_index_select(const clt_tensor *r, const void *ctx, clt_tensor **out)
{
    const via_index *v = ctx;
    return clt__index_select_rec(v->fn, r, v->dim, v->index, out);
}

static clt_status real_gather(const clt_tensor *r, const void *ctx, clt_tensor **out)
{
    const via_index *v = ctx;
    const clt_tensor *ix = v->index;
    int64_t shape[CLT_MAX_DIMS];
    for (int d = 0; d < ix->ndim; d++)
        shape[d] = ix->shape[d];
    shape[ix->ndim] = 2;
    clt_tensor *u = NULL, *e = NULL;
    clt_status st = clt__unsqueeze(ix, ix->ndim, &u, v->fn);
    if (st == CLT_OK)
        st = clt__expand(u, ix->ndim + 1, shape, &e, v->fn);
    if (st == CLT_OK)
        st = clt_gather(r, v->dim, e, out);
    clt_tensor_free(u);
    clt_tensor_free(e);
    return st;
}

/* Whether t is complex with a dim that index ops can take through its real
 * view: *d is dim wrapped (a bad dim leaves it to the plain op's message). */
static bool complex_dim(const clt_tensor *t, const clt_tensor *index, int dim, int *d)
{
    if (t == NULL || index == NULL || !clt__dtype_is_complex(t->dtype) || t->ndim == 0 ||
        t->ndim >= CLT_MAX_DIMS || index->ndim >= CLT_MAX_DIMS)
        return false;
    *d = dim < 0 ? dim + t->ndim : dim;
    return *d >= 0 && *d < t->ndim;
}

clt_status clt__index_select_rec(const char *fn, const clt_tensor *t, int dim,
                                 const clt_tensor *index, clt_tensor **out)
{
    int d = 0;
    if (out && complex_dim(t, index, dim, &d)) {
        via_index v = {fn, d, index};
        clt_status st = clt__complex_via_real(fn, t, real_index_select, &v, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt_status st = clt__index_select(t, dim, index, out, fn);
    return record(st, out, "IndexSelectBackward0", bw_index_select, 1, &t, index, dim, 1);
}

clt_status clt_gather(const clt_tensor *t, int dim, const clt_tensor *index, clt_tensor **out)
{
    int d = 0;
    if (out && complex_dim(t, index, dim, &d) && index->ndim == t->ndim) {
        via_index v = {"clt_gather", d, index};
        clt_status st = clt__complex_via_real("clt_gather", t, real_gather, &v, out);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt_status st = clt__gather(t, dim, index, out, "clt_gather");
    return record(st, out, "GatherBackward0", bw_gather, 1, &t, index, dim, 1);
}

/* scatter, scatter_add, index_add and index_copy of two complex tensors of
 * one dtype: the op on their recorded real views (scatter's index given a
 * last dim of 2, the same index for both parts), viewed as complex again. */
typedef enum pair_kind { P_SCATTER, P_SCATTER_ADD, P_INDEX_ADD, P_INDEX_COPY } pair_kind;

static bool complex_pair(const clt_tensor *t, const clt_tensor *index, const clt_tensor *src,
                         int dim, int *d)
{
    return src && complex_dim(t, index, dim, d) && src->dtype == t->dtype &&
           src->ndim < CLT_MAX_DIMS;
}

static clt_status pair_via_real(pair_kind k, const char *fn, const clt_tensor *t, int dim,
                                const clt_tensor *index, const clt_tensor *src, double alpha,
                                clt_tensor **out)
{
    *out = NULL;
    clt_tensor *rt = NULL, *rs = NULL, *u = NULL, *e = NULL, *y = NULL, *c = NULL;
    clt_status st;
    CLT__TRY(clt_view_as_real(t, &rt));
    CLT__TRY(clt_view_as_real(src, &rs));
    if (k == P_SCATTER || k == P_SCATTER_ADD) {
        int64_t shape[CLT_MAX_DIMS];
        for (int j = 0; j < index->ndim; j++)
            shape[j] = index->shape[j];
        shape[index->ndim] = 2;
        CLT__TRY(clt__unsqueeze(index, index->ndim, &u, fn));
        CLT__TRY(clt__expand(u, index->ndim + 1, shape, &e, fn));
        CLT__TRY(k == P_SCATTER ? clt_scatter(rt, dim, e, rs, &y)
                                : clt_scatter_add(rt, dim, e, rs, &y));
    } else if (k == P_INDEX_ADD) {
        CLT__TRY(clt_index_add(rt, dim, index, rs, alpha, &y));
    } else {
        CLT__TRY(clt_index_copy(rt, dim, index, rs, &y));
    }
    CLT__TRY(clt_contiguous(y, &c));
    CLT__TRY(clt_view_as_complex(c, out));
done:
    clt_tensor_free(rt);
    clt_tensor_free(rs);
    clt_tensor_free(u);
    clt_tensor_free(e);
    clt_tensor_free(y);
    clt_tensor_free(c);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_scatter(const clt_tensor *t, int dim, const clt_tensor *index,
                       const clt_tensor *src, clt_tensor **out)
{
    int d = 0;
    if (out && complex_pair(t, index, src, dim, &d) && index->ndim == t->ndim)
        return pair_via_real(P_SCATTER, "clt_scatter", t, d, index, src, 1, out);
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__scatter(t, dim, index, src, out, "clt_scatter");
    return record(st, out, "ScatterBackward0", bw_scatter, 2, in, index, dim, 1);
}

clt_status clt_scatter_add(const clt_tensor *t, int dim, const clt_tensor *index,
                           const clt_tensor *src, clt_tensor **out)
{
    CLT__AUTOCAST("clt_scatter_add", CLT__AC_CUDA(CLT__AC_PROMOTE), 2, (t, src),
                  clt_scatter_add(CLT__AC(0), dim, index, CLT__AC(1), out));
    int d = 0;
    if (out && complex_pair(t, index, src, dim, &d) && index->ndim == t->ndim)
        return pair_via_real(P_SCATTER_ADD, "clt_scatter_add", t, d, index, src, 1, out);
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__scatter_add(t, dim, index, src, out, "clt_scatter_add");
    return record(st, out, "ScatterAddBackward0", bw_scatter_add, 2, in, index, dim, 1);
}

clt_status clt_index_add(const clt_tensor *t, int dim, const clt_tensor *index,
                         const clt_tensor *src, double alpha, clt_tensor **out)
{
    int d = 0;
    if (out && complex_pair(t, index, src, dim, &d) && src->ndim == t->ndim)
        return pair_via_real(P_INDEX_ADD, "clt_index_add", t, d, index, src, alpha, out);
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__index_add(t, dim, index, src, alpha, out, "clt_index_add");
    return record(st, out, "IndexAddBackward0", bw_index_add, 2, in, index, dim, alpha);
}

/* i[0] 0 (record's dim), i[1] the padding row or -1, i[2] scale_grad_by_freq,
 * i[3] sparse. */
clt_status clt__embedding_rec(const char *fn, const clt_tensor *weight,
                              const clt_tensor *indices, int64_t pad, int freq, clt_tensor **out)
{
    return clt__embedding_sparse_rec(fn, weight, indices, pad, freq, 0, out);
}

clt_status clt__embedding_sparse_rec(const char *fn, const clt_tensor *weight,
                                     const clt_tensor *indices, int64_t pad, int freq,
                                     int sparse, clt_tensor **out)
{
    clt__node *n = NULL;
    clt_status st = clt__record(clt__embedding(weight, indices, out, fn), out,
                                "EmbeddingBackward0", bw_embedding, 1, &weight, 1, &indices, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = 0;
        n->i[1] = pad;
        n->i[2] = freq != 0;
        n->i[3] = sparse != 0;
    }
    return st;
}

clt_status clt_embedding(const clt_tensor *weight, const clt_tensor *indices, clt_tensor **out)
{
    return clt__embedding_rec("clt_embedding", weight, indices, -1, 0, out);
}

clt_status clt__embedding_renorm_(const char *fn, clt_tensor *weight, const clt_tensor *indices,
                                  double max_norm, double norm_type)
{
    CLT__REQUIRE_ARG(weight, fn);
    CLT__REQUIRE_ARG(indices, fn);
    char s1[160];
    clt_status st = clt__same_device(weight, indices, fn);
    if (st != CLT_OK)
        return st;
    if (weight->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: 'weight' must be 2-D, but has shape %s",
                          fn, clt__shape_str(s1, sizeof s1, weight->ndim, weight->shape));
    if ((st = clt__check_floating(weight, "weight", fn)) != CLT_OK)
        return st;
    if (indices->dtype != CLT_INT64 && indices->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: Expected tensor for argument #2 'indices' to have one of the "
                          "following scalar types: Long, Int; but got %s instead (while "
                          "checking arguments for embedding_renorm_)",
                          fn, clt_dtype_name(indices->dtype));
    int64_t n = indices->numel;
    if (n == 0 || weight->numel == 0)
        return clt__ok();
    clt_tensor *idx = NULL, *rows = NULL, *nrm = NULL, *n64 = NULL, *big = NULL, *keep = NULL,
               *den = NULL, *sc = NULL, *sc1 = NULL, *scw = NULL, *upd = NULL;
    int was = clt_set_grad_enabled(0); /* torch's no_grad: nothing is recorded */
    CLT__TRY(clt__contiguous_as(fn, indices, CLT_INT64, &idx));
    clt_tensor *flat = NULL;
    CLT__TRY(clt__reshape(idx, 1, &n, &flat, fn));
    clt_tensor_free(idx);
    idx = flat;
    CLT__TRY(clt__index_select(weight, 0, idx, &rows, fn));
    CLT__TRY(clt__vector_norm_dim_rec(fn, rows, norm_type, 1, 1, &nrm));
    CLT__TRY(clt__to_dtype(nrm, CLT_FLOAT64, &n64, fn));
    CLT__TRY(clt__gt_scalar_in(fn, n64, max_norm, &big));
    CLT__TRY(clt__logical_not_in(fn, big, &keep));
    CLT__TRY(clt__add_scalar_in(fn, n64, 1e-7, &den));
    CLT__TRY(clt__rdiv_scalar_in(fn, den, max_norm, &sc));
    CLT__TRY(clt__masked_fill(sc, keep, 1.0, &sc1, fn));
    CLT__TRY(clt__to_dtype(sc1, weight->dtype, &scw, fn));
    CLT__TRY(clt__mul_in(fn, rows, scw, &upd));
    /* a row named twice gets the same new value from each of its entries */
    CLT__TRY(clt_index_copy_(weight, 0, idx, upd)); /* moves its version */
done:
    clt_set_grad_enabled(was);
    clt_tensor_free(idx);
    clt_tensor_free(rows);
    clt_tensor_free(nrm);
    clt_tensor_free(n64);
    clt_tensor_free(big);
    clt_tensor_free(keep);
    clt_tensor_free(den);
    clt_tensor_free(sc);
    clt_tensor_free(sc1);
    clt_tensor_free(scw);
    clt_tensor_free(upd);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}

clt_status clt_embedding_renorm_(clt_tensor *weight, const clt_tensor *indices, double max_norm,
                                 double norm_type)
{
    return clt__embedding_renorm_("clt_embedding_renorm_", weight, indices, max_norm,
                                  norm_type);
}

clt_status clt__embedding_opts_rec(const char *fn, clt_tensor *weight, const clt_tensor *indices,
                                   const clt_embedding_opts *opts, clt_tensor **out)
{
    static const clt_embedding_opts defaults = CLT_EMBEDDING_DEFAULTS;
    const clt_embedding_opts *o = opts ? opts : &defaults;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(weight, fn);
    CLT__REQUIRE_ARG(indices, fn);
    int64_t pad = -1;
    if (weight->ndim == 2) {
        clt_status st = clt__padding_idx(o->padding_idx, weight->shape[0], &pad, fn);
        if (st != CLT_OK)
            return st;
    }
    if (o->max_norm) {
        clt_status st = clt__embedding_renorm_(fn, weight, indices, *o->max_norm, o->norm_type);
        if (st != CLT_OK)
            return st;
    }
    return clt__embedding_sparse_rec(fn, weight, indices, pad, o->scale_grad_by_freq, o->sparse,
                                     out);
}

clt_status clt_embedding_with_opts(clt_tensor *weight, const clt_tensor *indices,
                                   const clt_embedding_opts *opts, clt_tensor **out)
{
    return clt__embedding_opts_rec("clt_embedding_with_opts", weight, indices, opts, out);
}

clt_status clt_embedding_ex(const clt_tensor *weight, const clt_tensor *indices,
                            const int64_t *padding_idx, clt_tensor **out)
{
    static const char fn[] = "clt_embedding_ex";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(weight, fn);
    int64_t pad = -1;
    if (weight->ndim == 2) {
        clt_status st = clt__padding_idx(padding_idx, weight->shape[0], &pad, fn);
        if (st != CLT_OK)
            return st;
    }
    return clt__embedding_rec(fn, weight, indices, pad, 0, out);
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

/* The in-place index ops, recorded on t's history with their out-of-place
 * forms' formulas (saved[0] the index or the places written, i[0] the dim
 * wrapped, s[0] alpha). */
typedef struct index_ctx {
    int kind;
    int dim;
    const clt_tensor *index, *src;
    double value;
    const clt_tensor *const *indices;
    int n;
    bool accumulate;
} index_ctx;

enum { I_SCATTER_ADD, I_INDEX_ADD, I_INDEX_FILL, I_INDEX_COPY, I_INDEX_PUT, I_MASKED_SCATTER };

static clt_status index_put_rec(clt_tensor *t, const index_ctx *c, clt__node *node);
static clt_status masked_scatter_rec(clt_tensor *t, const index_ctx *c, clt__node *node);

static clt_status run_index(clt_tensor *t, const void *ctx, clt__node *n)
{
    const index_ctx *c = ctx;
    switch (c->kind) {
    case I_SCATTER_ADD:
        return clt__scatter_add_(t, c->dim, c->index, c->src);
    case I_INDEX_ADD:
        return clt__index_add_(t, c->dim, c->index, c->src, c->value);
    case I_INDEX_FILL:
        return clt__index_fill_(t, c->dim, c->index, c->value);
    case I_INDEX_COPY:
        return clt__index_copy_(t, c->dim, c->index, c->src, "clt_index_copy_");
    case I_INDEX_PUT:
        return n ? index_put_rec(t, c, n)
                 : clt__index_put_(t, c->indices, c->n, c->src, c->accumulate);
    default:
        return masked_scatter_rec(t, c, n);
    }
}

static clt_status index_inplace(clt_tensor *t, const index_ctx *c, const char *name,
                                clt__backward_fn bw, const char *fn)
{
    CLT__REQUIRE_ARG(t, fn);
    int nd = t->ndim > 0 ? t->ndim : 1;
    bool with_src = c->kind != I_INDEX_FILL;
    bool with_index = c->kind != I_INDEX_PUT && c->kind != I_MASKED_SCATTER;
    clt__inplace r = {name, bw, with_src ? 2 : 1, {t, c->src}, false, with_index ? 1 : 0,
                      {c->index, c->src}, {c->value}, {c->dim < 0 ? c->dim + nd : c->dim},
                      run_index, c};
    if (bw == bw_index_copy && clt__requires_grad(c->src))
        r.nsaved = 2; /* as clt_index_copy (record) */
    return clt__inplace_rec(t, &r, fn);
}

clt_status clt_scatter_add_(clt_tensor *t, int dim, const clt_tensor *index,
                            const clt_tensor *src)
{
    index_ctx c = {I_SCATTER_ADD, dim, index, src, 1.0, NULL, 0, false};
    CLT__REQUIRE_ARG(src, "clt_scatter_add_");
    return index_inplace(t, &c, "ScatterAddBackward0", bw_scatter_add, "clt_scatter_add_");
}

clt_status clt_index_add_(clt_tensor *t, int dim, const clt_tensor *index, const clt_tensor *src,
                          double alpha)
{
    index_ctx c = {I_INDEX_ADD, dim, index, src, alpha, NULL, 0, false};
    CLT__REQUIRE_ARG(src, "clt_index_add_");
    return index_inplace(t, &c, "IndexAddBackward0", bw_index_add, "clt_index_add_");
}

/* ---- take, index_fill, index_copy, index_put, masked_select, masked_scatter ------ */

/* g (any shape) seen as [rows, cols] with rows from the saved flat places
 * zeroed (zero true) or picked out (zero false: [count, cols]), recorded in
 * a pass that creates a graph (clt__twice). */
static clt_status rows_of(const clt_tensor *g, int64_t rows, int64_t cols,
                          const clt_tensor *places, bool zero, clt_tensor **out)
{
    const char *fn = "clt_backward";
    int64_t shape[2] = {rows, cols};
    clt_tensor *g2 = NULL;
    clt_status st = CLT_OK;
    if (clt__creating_graph()) {
        st = clt__reshape_rec(fn, g, 2, shape, &g2);
        if (st == CLT_OK)
            st = zero ? clt_index_fill(g2, 0, places, 0.0, out)
                      : clt__index_select_rec(fn, g2, 0, places, out);
        clt_tensor_free(g2);
        return st;
    }
    st = clt__reshape(g, 2, shape, &g2, fn);
    if (st == CLT_OK)
        st = zero ? clt__index_fill(g2, 0, places, 0.0, out, fn)
                  : clt__index_select(g2, 0, places, out, fn);
    clt_tensor_free(g2);
    return st;
}

/* The 1-D int64 places into [rows] that src (any shape) receives, added
 * (index_add) into zeros: the gradient of a selection of flat places. */
static clt_status add_rows(const clt_tensor *g, int64_t rows, int64_t cols,
                           const clt_tensor *places, int ndim, const int64_t *shape,
                           clt_tensor **out)
{
    const char *fn = "clt_backward";
    int64_t s2[2] = {rows, cols}, gs[2] = {places->numel, cols};
    clt_tensor *z = NULL, *g2 = NULL, *sum = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__full(g->dev, g->dtype, 2, s2, 0.0, &z));
    if (clt__creating_graph()) { /* recorded: clt__twice */
        CLT__TRY(clt__reshape_rec(fn, g, 2, gs, &g2));
        CLT__TRY(clt_index_add(z, 0, places, g2, 1, &sum));
        CLT__TRY(clt__reshape_rec(fn, sum, ndim, shape, out));
        goto done;
    }
    CLT__TRY(clt__reshape(g, 2, gs, &g2, fn));
    CLT__TRY(clt__index_add(z, 0, places, g2, 1, &sum, fn));
    CLT__TRY(clt__reshape(sum, ndim, shape, out, fn));
done:
    clt_tensor_free(z);
    clt_tensor_free(g2);
    clt_tensor_free(sum);
    return st;
}

/* saved[0] the index: g's elements added back at the places taken, the
 * negative indices wrapped (bad ones were reported by the forward). */
static clt_status bw_take(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt__edge *e = &n->in[0];
    int64_t numel = 1, count = n->saved[0]->numel;
    for (int d = 0; d < e->ndim; d++)
        numel *= e->shape[d];
    clt_tensor *w = NULL, *flat = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape(n->saved[0], 1, &count, &flat, "clt_backward"));
    CLT__TRY(clt__remainder_scalar_in("clt_backward", flat, (double)numel, &w));
    CLT__TRY(add_rows(g, numel, 1, w, e->ndim, e->shape, &gin[0]));
done:
    clt_tensor_free(w);
    clt_tensor_free(flat);
    return st;
}

/* take of complex pairs r [N, 2] (a real view) at the flat index ctx [M]:
 * the real take at 2 i and 2 i + 1 (a negative i wraps as it should:
 * 2 i + 2N and 2 i + 1 + 2N), [M, 2]. */
static clt_status real_take(const clt_tensor *r, const void *ctx, clt_tensor **out)
{
    const clt_tensor *ix = ctx;
    int64_t n2 = r->numel;
    clt_tensor *flat = NULL, *i0 = NULL, *i1 = NULL, *ii = NULL;
    clt_status st;
    CLT__TRY(clt__reshape_rec("clt_take", r, 1, &n2, &flat));
    CLT__TRY(clt__mul_scalar_in("clt_take", ix, 2.0, &i0));
    CLT__TRY(clt__add_scalar_in("clt_take", i0, 1.0, &i1));
    {
        const clt_tensor *pair[2] = {i0, i1};
        CLT__TRY(clt__stack(pair, 2, 1, &ii, "clt_take"));
    }
    CLT__TRY(clt_take(flat, ii, out));
done:
    clt_tensor_free(flat);
    clt_tensor_free(i0);
    clt_tensor_free(i1);
    clt_tensor_free(ii);
    return st;
}

/* take of a complex t: the index checked (and its messages given) by a
 * take of t's real part, then t and the index flattened and the pairs
 * taken through the recorded real view. */
static clt_status complex_take(const clt_tensor *t, const clt_tensor *index, clt_tensor **out)
{
    const char *fn = "clt_take";
    *out = NULL;
    clt_tensor *re = NULL, *chk = NULL, *zf = NULL, *xf = NULL, *w = NULL;
    int64_t n = t->numel, m = index->numel;
    clt_status st;
    CLT__TRY(clt__real_imag(t, 0, &re, fn));
    CLT__TRY(clt__take(re, index, &chk, fn));
    CLT__TRY(clt__reshape_rec(fn, t, 1, &n, &zf));
    CLT__TRY(clt__reshape(index, 1, &m, &xf, fn));
    CLT__TRY(clt__complex_via_real(fn, zf, real_take, xf, &w));
    CLT__TRY(clt__reshape_rec(fn, w, index->ndim, index->shape, out));
done:
    clt_tensor_free(re);
    clt_tensor_free(chk);
    clt_tensor_free(zf);
    clt_tensor_free(xf);
    clt_tensor_free(w);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_take(const clt_tensor *t, const clt_tensor *index, clt_tensor **out)
{
    if (t && index && out && clt__dtype_is_complex(t->dtype))
        return complex_take(t, index, out);
    clt_status st = clt__take(t, index, out, "clt_take");
    return record(st, out, "TakeBackward0", bw_take, 1, &t, index, 0, 1);
}

/* i[0] dim, saved[0] index: the filled slices get no gradient. */
static clt_status bw_index_fill(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    if (clt__creating_graph()) /* recorded: clt__twice */
        return clt_index_fill(g, (int)n->i[0], n->saved[0], 0.0, &gin[0]);
    return clt__index_fill(g, (int)n->i[0], n->saved[0], 0.0, &gin[0], "clt_backward");
}

/* index_fill of a complex t: its recorded real part filled with value, its
 * imaginary part with 0, made complex again. */
static clt_status complex_index_fill(const clt_tensor *t, int dim, const clt_tensor *index,
                                     double value, clt_tensor **out)
{
    *out = NULL;
    clt_tensor *re = NULL, *im = NULL, *re2 = NULL, *im2 = NULL;
    clt_status st;
    CLT__TRY(clt_real(t, &re));
    CLT__TRY(clt_imag(t, &im));
    CLT__TRY(clt_index_fill(re, dim, index, value, &re2));
    CLT__TRY(clt_index_fill(im, dim, index, 0.0, &im2));
    CLT__TRY(clt_complex(re2, im2, out));
done:
    clt_tensor_free(re);
    clt_tensor_free(im);
    clt_tensor_free(re2);
    clt_tensor_free(im2);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_index_fill(const clt_tensor *t, int dim, const clt_tensor *index, double value,
                          clt_tensor **out)
{
    if (t && index && out && clt__dtype_is_complex(t->dtype))
        return complex_index_fill(t, dim, index, value, out);
    clt_status st = clt__index_fill(t, dim, index, value, out, "clt_index_fill");
    return record(st, out, "IndexFillBackward0", bw_index_fill, 1, &t, index, dim, 1);
}

/* i[0] dim, saved[0] index (saved[1], where src requires grad, is src,
 * kept for its version only): t's gradient is g without the copied slices,
 * src's the copied slices of g. */
static clt_status bw_index_copy(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    clt_status st = CLT_OK;
    int dim = (int)n->i[0];
    bool rec = clt__creating_graph(); /* recorded: clt__twice */
    if (CLT__NEED(n, 0))
        st = rec ? clt_index_fill(g, dim, n->saved[0], 0.0, &gin[0])
                 : clt__index_fill(g, dim, n->saved[0], 0.0, &gin[0], "clt_backward");
    if (st == CLT_OK && CLT__NEED(n, 1))
        st = clt__index_select_rec("clt_backward", g, dim, n->saved[0], &gin[1]);
    return st;
}

clt_status clt_index_copy(const clt_tensor *t, int dim, const clt_tensor *index,
                          const clt_tensor *src, clt_tensor **out)
{
    CLT__AUTOCAST("clt_index_copy", CLT__AC_ON(CLT__AC_NONE, CLT__AC_PROMOTE), 2, (t, src),
                  clt_index_copy(CLT__AC(0), dim, index, CLT__AC(1), out));
    int d = 0;
    if (out && complex_pair(t, index, src, dim, &d) && src->ndim == t->ndim)
        return pair_via_real(P_INDEX_COPY, "clt_index_copy", t, d, index, src, 1, out);
    const clt_tensor *in[2] = {t, src};
    clt_status st = clt__index_copy(t, dim, index, src, out, "clt_index_copy");
    return record(st, out, "IndexCopyBackward0", bw_index_copy, 2, in, index, dim, 1);
}

/* The working order of an index_put with full slices (clt__put_info's
 * perm), packed four bits a dimension into i[2 * CLT_MAX_DIMS]. */
#define PUT_PERM (2 * CLT_MAX_DIMS)
#define PUT_LEAD (2 * CLT_MAX_DIMS + 1)
#define PUT_BND (2 * CLT_MAX_DIMS - 1)

/* saved[0] the rows each position of the indexing result took; i[0] rows,
 * i[1] cols, i[2] the result's dims and i[3..] its shape, in the working
 * order; s[0] accumulate, s[1] whether that order is not t's (i[PUT_PERM],
 * i[PUT_LEAD] as clt__put_info's perm and lead, i[PUT_BND] the broadcast
 * index shape's dims).  g is taken to the
 * working order, and the gradients back to t's and to torch's shape of
 * the indexing result, with recording ops (clt__twice). */
static clt_status bw_index_put(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    clt_status st = CLT_OK;
    const clt__edge *e = &n->in[0];
    bool permuted = n->s[1] != 0;
    int nd = (int)n->i[2], lead = (int)n->i[PUT_LEAD], perm[CLT_MAX_DIMS], inv[CLT_MAX_DIMS];
    int q[CLT_MAX_DIMS], bnd = (int)n->i[PUT_BND];
    int64_t ps[CLT_MAX_DIMS];
    clt_tensor *r = NULL, *gp = NULL, *rp = NULL;
    for (int j = 0; j < e->ndim; j++) {
        perm[j] = permuted ? (int)((n->i[PUT_PERM] >> (4 * j)) & 15) : j;
        inv[perm[j]] = j;
        ps[j] = e->shape[perm[j]];
    }
    CLT__TRY(permuted ? clt__permute_rec(fn, g, e->ndim, perm, &gp)
                      : clt__alias_grad(g, &gp));
    if (CLT__NEED(n, 0)) {
        if (n->s[0] != 0)
            CLT__TRY(clt__alias_grad(g, &gin[0]));
        else {
            CLT__TRY(rows_of(gp, n->i[0], n->i[1], n->saved[0], true, &r));
            CLT__TRY(clt__reshape_rec(fn, r, e->ndim, ps, &rp));
            CLT__TRY(permuted ? clt__permute_rec(fn, rp, e->ndim, inv, &gin[0])
                              : clt__alias_grad(rp, &gin[0]));
        }
    }
    if (CLT__NEED(n, 1)) {
        clt_tensor_free(r);
        clt_tensor_free(rp);
        r = rp = NULL;
        CLT__TRY(rows_of(gp, n->i[0], n->i[1], n->saved[0], false, &r));
        CLT__TRY(clt__reshape_rec(fn, r, nd, &n->i[3], &rp));
        for (int j = 0; j < nd; j++)
            q[j < bnd ? lead + j : j < bnd + lead ? j - bnd : j] = j;
        CLT__TRY(lead > 0 ? clt__permute_rec(fn, rp, nd, q, &gin[1])
                          : clt__alias_grad(rp, &gin[1]));
    }
done:
    clt_tensor_free(r);
    clt_tensor_free(gp);
    clt_tensor_free(rp);
    return st;
}

/* What bw_index_put reads besides the places, from the forward's info
 * (t of ndim dims). */
static void put_node(clt__node *node, const clt__put_info *info, int ndim, bool accumulate)
{
    node->i[0] = info->rows;
    node->i[1] = info->cols;
    node->i[2] = info->ndim;
    memcpy(&node->i[3], info->shape, sizeof(int64_t) * (size_t)info->ndim);
    node->s[0] = accumulate;
    node->s[1] = info->permuted;
    node->i[PUT_PERM] = 0;
    for (int j = 0; info->permuted && j < ndim; j++)
        node->i[PUT_PERM] |= (int64_t)info->perm[j] << (4 * j);
    node->i[PUT_LEAD] = info->lead;
    node->i[PUT_BND] = info->ndim - (ndim - info->k);
}

/* index_put of a complex t: on the recorded real views of t and values
 * (the indices address the leading dims; the pairs' last dim comes
 * along). */
static clt_status complex_index_put(const clt_tensor *t, const clt_tensor *const *indices, int n,
                                    const clt_tensor *values, int accumulate, clt_tensor **out)
{
    *out = NULL;
    if (values->dtype != t->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "clt_index_put: Index put requires the source and destination dtypes "
                          "match, got %s for the destination and %s for the source",
                          clt_dtype_name(t->dtype), clt_dtype_name(values->dtype));
    clt_tensor *r = NULL, *rv = NULL, *y = NULL;
    clt_status st;
    CLT__TRY(clt_view_as_real(t, &r));
    CLT__TRY(clt_view_as_real(values, &rv));
    CLT__TRY(clt_index_put(r, indices, n, rv, accumulate, &y));
    CLT__TRY(clt_view_as_complex(y, out));
done:
    clt_tensor_free(r);
    clt_tensor_free(rv);
    clt_tensor_free(y);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_index_put(const clt_tensor *t, const clt_tensor *const *indices, int n,
                         const clt_tensor *values, int accumulate, clt_tensor **out)
{
    if (t && values && out && (indices || n == 0) && clt__dtype_is_complex(t->dtype) && n >= 0 &&
        n <= t->ndim && t->ndim < CLT_MAX_DIMS && values->ndim < CLT_MAX_DIMS)
        return complex_index_put(t, indices, n, values, accumulate, out);
    CLT__AUTOCAST("clt_index_put", CLT__AC_CUDA(CLT__AC_PROMOTE), 2, (t, values),
                  clt_index_put(CLT__AC(0), indices, n, CLT__AC(1), accumulate, out));
    const clt_tensor *in[2] = {t, values};
    clt__put_info info = {0};
    clt__node *node = NULL;
    clt_status st = clt__index_put(t, indices, n, values, accumulate != 0, out, &info,
                                   "clt_index_put");
    const clt_tensor *saved = info.lin;
    st = clt__record(st, out, "IndexPutBackward0", bw_index_put, 2, in, saved ? 1 : 0, &saved,
                     &node);
    clt__twice(node);
    if (node)
        put_node(node, &info, t->ndim, accumulate != 0);
    clt_tensor_free(info.lin);
    return st;
}

/* saved[0] the flat places in the broadcast shape (i[0] dims, i[1..] the
 * shape): g's elements go back to them. */
static clt_status bw_masked_select(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    int nd = (int)n->i[0];
    int64_t numel = 1;
    for (int d = 0; d < nd; d++)
        numel *= n->i[1 + d];
    return add_rows(g, numel, 1, n->saved[0], nd, &n->i[1], &gin[0]);
}

/* masked_select of a complex t: of its real view with the mask given a
 * last dim of 1, the selected pairs then rows of 2. */
static clt_status real_masked_select(const clt_tensor *r, const void *ctx, clt_tensor **out)
{
    const clt_tensor *mask = ctx;
    clt_tensor *mu = NULL, *s = NULL;
    int64_t shape[2] = {-1, 2};
    clt_status st = clt__unsqueeze(mask, mask->ndim, &mu, "clt_masked_select");
    if (st == CLT_OK)
        st = clt_masked_select(r, mu, &s);
    if (st == CLT_OK)
        st = clt__reshape_rec("clt_masked_select", s, 2, shape, out);
    clt_tensor_free(mu);
    clt_tensor_free(s);
    return st;
}

clt_status clt_masked_select(const clt_tensor *t, const clt_tensor *mask, clt_tensor **out)
{
    if (out && t && mask && clt__dtype_is_complex(t->dtype) && t->ndim < CLT_MAX_DIMS &&
        mask->ndim < CLT_MAX_DIMS && mask->dtype == CLT_BOOL) {
        clt_status st = clt__complex_via_real("clt_masked_select", t, real_masked_select, mask,
                                              out);
        return st == CLT_OK ? clt__ok() : st;
    }
    clt_tensor *places = NULL;
    clt__node *node = NULL;
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st = clt__masked_select(t, mask, out, &places, &nd, shape, "clt_masked_select");
    const clt_tensor *saved = places;
    st = clt__record(st, out, "MaskedSelectBackward0", bw_masked_select, 1, &t, saved ? 1 : 0,
                     &saved, &node);
    if (node) {
        node->i[0] = nd;
        memcpy(&node->i[1], shape, sizeof(int64_t) * (size_t)nd);
        clt__twice(node); /* add_rows records under create_graph */
    }
    clt_tensor_free(places);
    return st;
}

/* saved[0] the flat places written: t's gradient is g without them,
 * source's g's values there, in order, and zeros for the elements of
 * source left unused, with recording ops (clt__twice). */
static clt_status bw_masked_scatter(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    const clt_tensor *places = n->saved[0];
    const clt__edge *e = &n->in[1];
    clt_status st = CLT_OK;
    clt_tensor *r = NULL, *z = NULL, *both = NULL;
    int64_t numel = g->numel, sn = 1;
    for (int d = 0; d < e->ndim; d++)
        sn *= e->shape[d];
    if (CLT__NEED(n, 0)) {
        CLT__TRY(rows_of(g, numel, 1, places, true, &r));
        CLT__TRY(clt__reshape_rec(fn, r, g->ndim, g->shape, &gin[0]));
    }
    if (CLT__NEED(n, 1)) {
        clt_tensor_free(r);
        r = NULL;
        int64_t rest = sn - places->numel, cnt = places->numel;
        CLT__TRY(rows_of(g, numel, 1, places, false, &r));
        CLT__TRY(clt__full(g->dev, g->dtype, 1, &rest, 0.0, &z));
        clt_tensor *flat = NULL;
        CLT__TRY(clt__reshape_rec(fn, r, 1, &cnt, &flat));
        const clt_tensor *parts[2] = {flat, z};
        st = clt__cat_rec(fn, parts, 2, 0, &both);
        clt_tensor_free(flat);
        if (st != CLT_OK)
            goto done;
        CLT__TRY(clt__reshape_rec(fn, both, e->ndim, e->shape, &gin[1]));
    }
done:
    clt_tensor_free(r);
    clt_tensor_free(z);
    clt_tensor_free(both);
    return st;
}

clt_status clt_masked_scatter(const clt_tensor *t, const clt_tensor *mask,
                              const clt_tensor *source, clt_tensor **out)
{
    const clt_tensor *in[2] = {t, source};
    clt_tensor *places = NULL;
    clt_status st = clt__masked_scatter(t, mask, source, out, &places, "clt_masked_scatter");
    const clt_tensor *saved = places;
    clt__node *node = NULL;
    st = clt__record(st, out, "MaskedScatterBackward0", bw_masked_scatter, 2, in,
                     saved ? 1 : 0, &saved, &node);
    clt__twice(node);
    clt_tensor_free(places);
    return st;
}

/* ---- scatter_reduce -------------------------------------------------------------- */

/* The part of src that index covers (its leading region). */
static clt_status index_region(const clt_tensor *src, const clt_tensor *index, clt_tensor **out)
{
    if (src->ndim != index->ndim)
        return clt__reshape(src, index->ndim, index->shape, out, "clt_backward");
    return clt__tensor_view(src, index->ndim, index->shape, src->strides, src->offset, out);
}

/* scatter_reduce's "prod" gradient, torch 1.13's formula: each value's
 * gradient is g times the product of the others at its place, found by
 * dividing the result by the value where that is not 0, and by reducing
 * again with the zero replaced by 1 where a single zero made the place 0
 * (two or more zeros give 0).  i[0] dim, i[2] include_self; saved[0]
 * index, [1] self, [2] src, [3] the result.  The steps on g, self, src
 * and the result record (clt__twice); the masks are constants. */
static clt_status bw_scatter_prod(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    int dim = (int)n->i[0];
    bool self = n->i[2] != 0;
    const clt_tensor *index = n->saved[0], *t = n->saved[1], *src = n->saved[2];
    const clt_tensor *res = n->saved[3];
    enum { ZT, MT, MTR, GM, SZ, SZF, Z0, NZ, NZG, ONE, SINGLE, MS, MSR, GA, A, GR, GRG, SF, B,
           NT };
    clt_tensor *x[NT] = {NULL};
    clt_status st = CLT_OK;
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__eq_scalar_in(fn, t, 0.0, &x[ZT]));
        CLT__TRY(clt__masked_fill_rec(fn, t, x[ZT], 1.0, &x[MT]));
        CLT__TRY(clt_scatter_reduce(x[MT], dim, index, src, "prod", self, &x[MTR]));
        CLT__TRY(clt__mul_rec(fn, g, x[MTR], &x[GM]));
        if (self)
            CLT__TRY(clt__div_rec(fn, x[GM], x[MT], &gin[0]));
        else {
            CLT__TRY(clt__div_rec(fn, x[GM], x[MT], &x[A]));
            CLT__TRY(clt__full(g->dev, g->dtype, index->ndim, index->shape, 0.0, &x[Z0]));
            CLT__TRY(clt_scatter(x[A], dim, index, x[Z0], &gin[0]));
            clt_tensor_free(x[A]);
            clt_tensor_free(x[Z0]);
            x[A] = x[Z0] = NULL;
        }
    }
    if (CLT__NEED(n, 1)) { /* src has index's shape (checked when recorded) */
        CLT__TRY(clt__eq_scalar_in(fn, src, 0.0, &x[SZ]));
        CLT__TRY(clt__to_dtype(x[SZ], g->dtype, &x[SZF], fn));
        CLT__TRY(clt__full(g->dev, g->dtype, t->ndim, t->shape, 0.0, &x[Z0]));
        CLT__TRY(clt__scatter_add(x[Z0], dim, index, x[SZF], &x[NZ], fn));
        CLT__TRY(clt__gather(x[NZ], dim, index, &x[NZG], fn));
        CLT__TRY(clt__eq_scalar_in(fn, x[NZG], 1.0, &x[ONE]));
        CLT__TRY(clt__logical_and_in(fn, x[SZ], x[ONE], &x[SINGLE]));
        CLT__TRY(clt__masked_fill_rec(fn, src, x[SINGLE], 1.0, &x[MS]));
        CLT__TRY(clt_scatter_reduce(t, dim, index, x[MS], "prod", self, &x[MSR]));
        CLT__TRY(clt__mul_rec(fn, g, x[MSR], &x[GA]));
        CLT__TRY(clt_gather(x[GA], dim, index, &x[A]));
        CLT__TRY(clt__mul_rec(fn, g, res, &x[GR]));
        CLT__TRY(clt_gather(x[GR], dim, index, &x[GRG]));
        CLT__TRY(clt__masked_fill_rec(fn, src, x[SZ], 1.0, &x[SF]));
        CLT__TRY(clt__div_rec(fn, x[GRG], x[SF], &x[B]));
        CLT__TRY(clt_where(x[SINGLE], x[A], x[B], &gin[1]));
    }
done:
    for (int k = 0; k < NT; k++)
        clt_tensor_free(x[k]);
    return st;
}

/* torch 1.13's scatter_reduce_backward for sum, mean, amax and amin
 * (prod: bw_scatter_prod).
 * i[0] dim, i[1] the mode, i[2] include_self; saved[0] index, [1] self,
 * [2] src, [3] the result.  The counts and masks are constants; the steps
 * on g record (clt__twice). */
static clt_status bw_scatter_reduce(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const char *fn = "clt_backward";
    int dim = (int)n->i[0], mode = (int)n->i[1];
    bool self = n->i[2] != 0;
    const clt_tensor *index = n->saved[0], *t = n->saved[1], *src = n->saved[2];
    const clt_tensor *res = n->saved[3];
    clt_status st = CLT_OK;
    clt_tensor *gs = NULL, *gsrc = NULL, *cnt = NULL, *ones = NULL, *a = NULL, *b = NULL;
    clt_tensor *z = NULL, *val = NULL, *ti = NULL, *si = NULL, *gd = NULL, *gg = NULL;
    if (mode == 1)
        return bw_scatter_prod(n, g, gin);
    if (mode == 0) {
        CLT__TRY(clt__alias_grad(g, &gs));
        CLT__TRY(clt_gather(g, dim, index, &gsrc));
    } else if (mode == 2) {
        /* N: how many values each place averaged (1 where none). */
        CLT__TRY(clt__full(g->dev, g->dtype, t->ndim, t->shape, self ? 1.0 : 0.0, &a));
        CLT__TRY(clt__full(g->dev, g->dtype, index->ndim, index->shape, 1.0, &ones));
        CLT__TRY(clt__scatter_add(a, dim, index, ones, &b, fn));
        CLT__TRY(clt__eq_scalar_in(fn, b, 0.0, &z));
        CLT__TRY(clt__masked_fill(b, z, 1.0, &cnt, fn));
        CLT__TRY(clt__div_rec(fn, g, cnt, &gs));
        CLT__TRY(clt_gather(g, dim, index, &gg));
        CLT__TRY(clt__gather(cnt, dim, index, &val, fn));
        CLT__TRY(clt__div_rec(fn, gg, val, &gsrc));
    } else {
        /* The gradient is shared evenly by the values equal to the
         * result. */
        CLT__TRY(clt__gather(res, dim, index, &val, fn));
        CLT__TRY(clt__eq_in(fn, t, res, &a));
        CLT__TRY(clt__to_dtype(a, g->dtype, &ti, fn));
        clt_tensor_free(a);
        a = NULL;
        CLT__TRY(index_region(src, index, &b));
        CLT__TRY(clt__eq_in(fn, b, val, &a));
        CLT__TRY(clt__to_dtype(a, g->dtype, &si, fn));
        CLT__TRY(clt__scatter_add(ti, dim, index, si, &cnt, fn));
        CLT__TRY(clt__div_rec(fn, g, cnt, &gd));
        CLT__TRY(clt__mul_rec(fn, ti, gd, &gs));
        CLT__TRY(clt_gather(gd, dim, index, &gg));
        CLT__TRY(clt__mul_rec(fn, si, gg, &gsrc));
    }
    if (CLT__NEED(n, 0)) {
        if (self) {
            gin[0] = gs;
            gs = NULL;
        } else {
            clt_tensor_free(z);
            z = NULL;
            CLT__TRY(clt__full(g->dev, g->dtype, index->ndim, index->shape, 0.0, &z));
            CLT__TRY(clt_scatter(gs, dim, index, z, &gin[0]));
        }
    }
    if (CLT__NEED(n, 1)) {
        gin[1] = gsrc;
        gsrc = NULL;
    }
done:;
    clt_tensor *tmp[] = {gs, gsrc, cnt, ones, a, b, z, val, ti, si, gd, gg};
    for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
        clt_tensor_free(tmp[k]);
    return st;
}

clt_status clt_scatter_reduce(const clt_tensor *t, int dim, const clt_tensor *index,
                              const clt_tensor *src, const char *reduce, int include_self,
                              clt_tensor **out)
{
    const char *fn = "clt_scatter_reduce";
    const clt_tensor *in[2] = {t, src};
    clt__node *node = NULL;
    clt_status st = clt__scatter_reduce(t, dim, index, src, reduce, include_self != 0, out, fn);
    if (st != CLT_OK || !clt__grad_needed(2, in))
        return st;
    int mode = clt__scatter_reduce_mode(reduce);
    bool same = src->ndim == index->ndim;
    for (int d = 0; same && d < src->ndim; d++)
        same = src->shape[d] == index->shape[d];
    if (!same && clt__requires_grad(src)) {
        char s1[160], s2[160];
        clt_tensor_free(*out);
        *out = NULL;
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: the gradient of src needs src %s to have index's shape %s", fn,
                          clt__shape_str(s1, sizeof s1, src->ndim, src->shape),
                          clt__shape_str(s2, sizeof s2, index->ndim, index->shape));
    }
    const clt_tensor *saved[4] = {index, t, src, *out};
    st = clt__record(st, out, "ScatterReduceBackward0", bw_scatter_reduce, 2, in, 4, saved,
                     &node);
    clt__twice(node);
    if (node) {
        int nd = t->ndim > 0 ? t->ndim : 1;
        node->i[0] = dim < 0 ? dim + nd : dim;
        node->i[1] = mode;
        node->i[2] = include_self != 0;
    }
    return st;
}

/* ---- in-place forms and ops without gradients ----------------------------------- */

clt_status clt_index_fill_(clt_tensor *t, int dim, const clt_tensor *index, double value)
{
    index_ctx c = {I_INDEX_FILL, dim, index, NULL, value, NULL, 0, false};
    return index_inplace(t, &c, "IndexFillBackward0", bw_index_fill, "clt_index_fill_");
}

clt_status clt_index_copy_(clt_tensor *t, int dim, const clt_tensor *index,
                           const clt_tensor *src)
{
    index_ctx c = {I_INDEX_COPY, dim, index, src, 1.0, NULL, 0, false};
    CLT__REQUIRE_ARG(src, "clt_index_copy_");
    return index_inplace(t, &c, "IndexCopyBackward0", bw_index_copy, "clt_index_copy_");
}

/* index_put_ recorded: the out-of-place op, whose places the formula
 * needs, then its result written into t. */
static clt_status index_put_rec(clt_tensor *t, const index_ctx *c, clt__node *node)
{
    const char *fn = "clt_index_put_";
    clt__put_info info = {0};
    clt_tensor *r = NULL;
    clt_status st;
    CLT__TRY(clt__index_put(t, c->indices, c->n, c->src, c->accumulate, &r, &info, fn));
    CLT__TRY(clt__check_dest(t, fn));
    if (info.lin) {
        const clt_tensor *sv = info.lin;
        CLT__TRY(clt__node_save(node, 1, &sv));
    }
    put_node(node, &info, t->ndim, c->accumulate);
    CLT__TRY(clt__copy_strided(t, r, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(r);
    clt_tensor_free(info.lin);
    return st;
}

clt_status clt_index_put_(clt_tensor *t, const clt_tensor *const *indices, int n,
                          const clt_tensor *values, int accumulate)
{
    index_ctx c = {I_INDEX_PUT, 0, NULL, values, 1.0, indices, n, accumulate != 0};
    CLT__REQUIRE_ARG(values, "clt_index_put_");
    return index_inplace(t, &c, "IndexPutBackward0", bw_index_put, "clt_index_put_");
}

/* masked_scatter_: the out-of-place op into t (saving its places for the
 * formula when recorded). */
static clt_status masked_scatter_rec(clt_tensor *t, const index_ctx *c, clt__node *node)
{
    const char *fn = "clt_masked_scatter_";
    const clt_tensor *mask = c->index;
    CLT__REQUIRE_ARG(mask, fn);
    clt_tensor *r = NULL, *places = NULL;
    int nd = 0;
    int64_t shape[CLT_MAX_DIMS];
    clt_status st;
    CLT__TRY(clt__check_dest(t, fn));
    CLT__TRY(clt__broadcast_shapes(t->ndim, t->shape, mask->ndim, mask->shape, &nd, shape, fn));
    if (nd != t->ndim || memcmp(shape, t->shape, sizeof(int64_t) * (size_t)nd)) {
        char s1[160], s2[160];
        CLT__TRY(clt__error(CLT_ERR_SHAPE_MISMATCH,
                            "%s: the mask %s must broadcast to self's shape %s", fn,
                            clt__shape_str(s1, sizeof s1, mask->ndim, mask->shape),
                            clt__shape_str(s2, sizeof s2, t->ndim, t->shape)));
    }
    CLT__TRY(clt__masked_scatter(t, mask, c->src, &r, node ? &places : NULL, fn));
    if (places) {
        const clt_tensor *sv = places;
        CLT__TRY(clt__node_save(node, 1, &sv));
    }
    CLT__TRY(clt__copy_strided(t, r, fn));
    clt__version_bump(t);
done:
    clt_tensor_free(r);
    clt_tensor_free(places);
    return st;
}

clt_status clt_masked_scatter_(clt_tensor *t, const clt_tensor *mask, const clt_tensor *source)
{
    index_ctx c = {I_MASKED_SCATTER, 0, mask, source, 1.0, NULL, 0, false};
    CLT__REQUIRE_ARG(t, "clt_masked_scatter_");
    CLT__REQUIRE_ARG(mask, "clt_masked_scatter_");
    CLT__REQUIRE_ARG(source, "clt_masked_scatter_");
    return index_inplace(t, &c, "MaskedScatterBackward0", bw_masked_scatter,
                         "clt_masked_scatter_");
}

clt_status clt_nonzero(const clt_tensor *t, clt_tensor **out)
{
    return clt__nonzero(t, out, "clt_nonzero");
}

clt_status clt_argwhere(const clt_tensor *t, clt_tensor **out)
{
    return clt__nonzero(t, out, "clt_argwhere");
}

clt_status clt_searchsorted(const clt_tensor *sorted_sequence, const clt_tensor *values,
                            int right, clt_tensor **out)
{
    return clt__searchsorted(sorted_sequence, values, right != 0, out, "clt_searchsorted");
}

clt_status clt_searchsorted_ex(const clt_tensor *sorted_sequence, const clt_tensor *values,
                               int out_int32, int right, const char *side,
                               const clt_tensor *sorter, clt_tensor **out)
{
    return clt__searchsorted_ex(sorted_sequence, values, out_int32 != 0, right != 0, side, sorter,
                                out, "clt_searchsorted_ex");
}

clt_status clt_bucketize(const clt_tensor *t, const clt_tensor *boundaries, int right,
                         clt_tensor **out)
{
    const char *fn = "clt_bucketize";
    if (out)
        *out = NULL;
    if (boundaries && boundaries->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: boundaries tensor must be 1 dimension, but got dim(%d)", fn,
                          boundaries->ndim);
    return clt__searchsorted(boundaries, t, right != 0, out, fn);
}

clt_status clt_bincount(const clt_tensor *t, const clt_tensor *weights, int64_t minlength,
                        clt_tensor **out)
{
    return clt__bincount(t, weights, minlength, out, "clt_bincount");
}

clt_status clt_unique(const clt_tensor *t, clt_tensor **values, clt_tensor **inverse,
                      clt_tensor **counts)
{
    return clt__unique(t, false, values, inverse, counts, "clt_unique");
}

clt_status clt_unique_consecutive(const clt_tensor *t, clt_tensor **values, clt_tensor **inverse,
                                  clt_tensor **counts)
{
    return clt__unique(t, true, values, inverse, counts, "clt_unique_consecutive");
}

clt_status clt_unique_dim(const clt_tensor *t, int dim, int sorted, clt_tensor **values,
                          clt_tensor **inverse, clt_tensor **counts)
{
    (void)sorted; /* torch 1.13 sorts the slices either way */
    return clt__unique_dim(t, dim, values, inverse, counts, "clt_unique_dim");
}

/* ---- embedding_bag ---------------------------------------------------------------- */

/* Both EmbeddingBag backwards' rows of g, by entry: *sel each entry's row
 * of g (of zeros for padding and entries in no bag); when rows is not NULL
 * (mode sum or mean), *rows those over the bag's size (mean) or times the
 * entry's per-sample weight.  As recorded ops when rec (a pass that creates
 * a graph); the bags and their sizes are constants.  New tensors: *sel and
 * *rows (clt_tensor_free), left to the caller on error too. */
static clt_status bag_entry_rows(const clt_tensor *w, const clt_tensor *g,
                                 const clt__bag_saved *sv, const clt_tensor *psw, int mode,
                                 bool rec, clt_tensor **sel, clt_tensor **rows)
{
    const char *fn = "clt_backward";
    int64_t nb = g->shape[0], D = g->shape[1], ne = sv->idx->numel, one = 1;
    int64_t zs[2] = {1, D}, col[2] = {ne, 1};
    enum { BAGS, ZROW, GEXT, C1, C2, C3, C4, C5, NT };
    clt_tensor *x[NT] = {NULL};
    clt_status st = CLT_OK;
    CLT__TRY(clt__embedding_bag_entries(w, sv, nb, &x[BAGS]));
    CLT__TRY(clt__full(g->dev, g->dtype, 2, zs, 0.0, &x[ZROW]));
    const clt_tensor *parts[2] = {g, x[ZROW]};
    CLT__TRY(rec ? clt__cat_rec(fn, parts, 2, 0, &x[GEXT]) : clt__cat(parts, 2, 0, &x[GEXT], fn));
    CLT__TRY(rec ? clt__index_select_rec(fn, x[GEXT], 0, x[BAGS], sel)
                 : clt__index_select(x[GEXT], 0, x[BAGS], sel, fn));
    if (rows == NULL)
        goto done;
    if (mode == 1) { /* over the bag's size (1 for the zero rows) */
        CLT__TRY(clt__to_dtype(sv->aux, g->dtype, &x[C1], fn));
        CLT__TRY(clt__full(g->dev, g->dtype, 1, &one, 1.0, &x[C2]));
        const clt_tensor *cs[2] = {x[C1], x[C2]};
        CLT__TRY(clt__cat(cs, 2, 0, &x[C3], fn));
        CLT__TRY(clt__index_select(x[C3], 0, x[BAGS], &x[C4], fn));
        CLT__TRY(clt__reshape(x[C4], 2, col, &x[C5], fn));
        CLT__TRY(rec ? clt__div_rec(fn, *sel, x[C5], rows) : clt__div_in(fn, *sel, x[C5], rows));
    } else if (psw) {
        CLT__TRY(rec ? clt__reshape_rec(fn, psw, 2, col, &x[C1])
                     : clt__reshape(psw, 2, col, &x[C1], fn));
        CLT__TRY(rec ? clt__mul_rec(fn, *sel, x[C1], rows) : clt__mul_in(fn, *sel, x[C1], rows));
    } else {
        CLT__TRY(clt__alias_grad(*sel, rows));
    }
done:
    for (int k = 0; k < NT; k++)
        clt_tensor_free(x[k]);
    return st;
}

/* The formula of bw_embedding_bag as recorded ops, for a pass that creates
 * a graph: each entry's row of g (bag_entry_rows; for max, where it gave
 * the maximum) added into the weight's rows; the per-sample weights'
 * gradient those rows of g times the weight's rows, summed.  The entries'
 * bags, sizes and maxima are constants. */
static clt_status embedding_bag_twice(clt__node *n, const clt_tensor *g,
                                      const clt__bag_saved *sv, const clt_tensor *psw,
                                      clt_tensor **gin)
{
    const char *fn = "clt_backward";
    const clt_tensor *w = n->saved[0];
    int mode = (int)n->i[0];
    int64_t D = g->shape[1], ne = sv->idx->numel;
    int64_t zs[2] = {1, D}, col[2] = {ne, 1};
    double lo = 0, hi = (double)(w->shape[0] - 1);
    enum { BAGS, SEL, IC, C1, C2, C3, C4, C5, ROWS, Z, WSEL, P, S, GW, NT };
    clt_tensor *x[NT] = {NULL};
    clt_status st = CLT_OK;
    bool need_w = CLT__NEED(n, 0);
    CLT__TRY(bag_entry_rows(w, g, sv, psw, mode, true, &x[SEL],
                            need_w && mode != 2 ? &x[ROWS] : NULL));
    CLT__TRY(clt__clamp(sv->idx, &lo, &hi, &x[IC], fn));
    if (need_w) {
        if (mode == 2) { /* where aux, the maxima's entries, is not k */
            CLT__TRY(clt__embedding_bag_entries(w, sv, g->shape[0], &x[BAGS]));
            CLT__TRY(clt__full(g->dev, CLT_INT64, 2, zs, -1.0, &x[C1]));
            const clt_tensor *cs[2] = {sv->aux, x[C1]};
            CLT__TRY(clt__cat(cs, 2, 0, &x[C2], fn));
            CLT__TRY(clt__index_select(x[C2], 0, x[BAGS], &x[C3], fn));
            CLT__TRY(clt__arange(g->dev, CLT_INT64, 0.0, (double)ne, 1.0, &x[C4]));
            CLT__TRY(clt__reshape(x[C4], 2, col, &x[C5], fn));
            clt_tensor_free(x[C1]);
            x[C1] = NULL;
            CLT__TRY(clt__ne_in(fn, x[C3], x[C5], &x[C1]));
            CLT__TRY(clt__zero_where(x[C1], x[SEL], &x[ROWS]));
        }
        CLT__TRY(clt__full(g->dev, g->dtype, 2, w->shape, 0.0, &x[Z]));
        if (n->i[4]) { /* scale_grad_by_freq */
            CLT__TRY(clt_index_add(x[Z], 0, x[IC], x[ROWS], 1, &x[GW]));
            CLT__TRY(freq_scaled(x[GW], sv->idx, &gin[0]));
        } else {
            CLT__TRY(clt_index_add(x[Z], 0, x[IC], x[ROWS], 1, &gin[0]));
        }
    }
    if (psw && n->nin > 1 && CLT__NEED(n, 1)) {
        CLT__TRY(clt__index_select_rec(fn, w, 0, x[IC], &x[WSEL]));
        CLT__TRY(clt__mul_rec(fn, x[SEL], x[WSEL], &x[P]));
        CLT__TRY(clt__sum_dim_rec(fn, x[P], 1, 0, &x[S]));
        CLT__TRY(clt__reshape_rec(fn, x[S], psw->ndim, psw->shape, &gin[1]));
    }
done:
    for (int k = 0; k < NT; k++)
        clt_tensor_free(x[k]);
    return st;
}

/* sparse=True (not max): each entry's row of g (bag_entry_rows) as the
 * entries of the weight's sparse gradient (put_sparse, padding entries left
 * out), as torch's _embedding_bag_sparse_backward. */
static clt_status embedding_bag_sparse(clt__node *n, const clt_tensor *g,
                                       const clt__bag_saved *sv, const clt_tensor *psw)
{
    int64_t ne = sv->idx->numel;
    clt_tensor *sel = NULL, *rows = NULL, *flat = NULL;
    clt_status st = CLT_OK;
    CLT__TRY(bag_entry_rows(n->saved[0], g, sv, psw, (int)n->i[0], false, &sel, &rows));
    CLT__TRY(clt__reshape(sv->idx, 1, &ne, &flat, "clt_backward"));
    st = put_sparse(n, flat, rows, sv->pad);
done:
    clt_tensor_free(sel);
    clt_tensor_free(rows);
    clt_tensor_free(flat);
    return st;
}

/* i[0] the mode, i[1] padding_idx (or -1), i[2] whether per-sample weights
 * were given, i[3] whether an aux tensor was saved, i[4]
 * scale_grad_by_freq, i[5] sparse.  saved: weight, the
 * int64 indices and offsets, then the per-sample weights and aux (the
 * maxima's entries or the bags' sizes) when there are.  In a pass that
 * creates a graph, the same as recorded ops (clt__twice). */
static clt_status bw_embedding_bag(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    const clt_tensor *psw = n->i[2] ? n->saved[3] : NULL;
    clt__bag_saved sv = {n->saved[1], n->saved[2], n->i[3] ? n->saved[3 + n->i[2]] : NULL,
                         n->i[1]};
    if (n->i[5] && n->i[4])
        return sparse_freq_refused();
    if (n->i[5] && CLT__NEED(n, 0) && clt__sparse_grad_wanted(n, 0)) {
        clt_status st = embedding_bag_sparse(n, g, &sv, psw);
        if (st == CLT_OK && n->nin > 1 && CLT__NEED(n, 1))
            st = clt__embedding_bag_backward(g, n->saved[0], psw, &sv, (int)n->i[0], NULL,
                                             &gin[1]);
        return st;
    }
    if (clt__creating_graph())
        return embedding_bag_twice(n, g, &sv, psw, gin);
    clt_tensor *gw = NULL;
    clt_status st = clt__embedding_bag_backward(g, n->saved[0], psw, &sv, (int)n->i[0],
                                                CLT__NEED(n, 0) ? &gw : NULL,
                                                n->nin > 1 && CLT__NEED(n, 1) ? &gin[1] : NULL);
    if (st == CLT_OK && gw && n->i[4]) {
        st = freq_scaled(gw, sv.idx, &gin[0]);
    } else {
        gin[0] = gw;
        gw = NULL;
    }
    clt_tensor_free(gw);
    return st;
}

clt_status clt__embedding_bag_rec(const char *fn, clt_tensor *weight, const clt_tensor *input,
                                  const clt_tensor *offsets,
                                  const clt_tensor *per_sample_weights,
                                  const clt_embedding_bag_opts *opts, clt_tensor **out)
{
    static const clt_embedding_bag_opts defaults = CLT_EMBEDDING_BAG_DEFAULTS;
    const clt_embedding_bag_opts *o = opts ? opts : &defaults;
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(weight, fn);
    CLT__REQUIRE_ARG(input, fn);
    clt__bag_saved sv;
    const clt_tensor *psw = per_sample_weights;
    const clt_bag_mode mode = o->mode;
    clt_status st;
    if (o->scale_grad_by_freq || o->max_norm) { /* checked before weight changes */
        if ((st = clt__embedding_bag_check(weight, input, offsets, (int)mode, psw,
                                           o->padding_idx, o->include_last_offset, fn)) != CLT_OK)
            return st;
        if (o->scale_grad_by_freq && mode == CLT_BAG_MAX)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: max mode does not support scaling the gradient by the "
                              "frequency", fn);
    }
    if (o->sparse && mode == CLT_BAG_MAX)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: max mode does not support sparse weights", fn);
    if (o->max_norm &&
        (st = clt__embedding_renorm_(fn, weight, input, *o->max_norm, o->norm_type)) != CLT_OK)
        return st;
    st = clt__embedding_bag(weight, input, offsets, (int)mode, psw, o->padding_idx,
                            o->include_last_offset, out, &sv, fn);
    const clt_tensor *in[2] = {weight, psw};
    const clt_tensor *saved[5] = {weight, sv.idx, sv.off, psw ? psw : sv.aux, sv.aux};
    int nsaved = 3 + (psw != NULL) + (sv.aux != NULL);
    clt__node *n = NULL;
    st = clt__record(st, out, "EmbeddingBagBackward0", bw_embedding_bag, psw ? 2 : 1, in,
                     nsaved, saved, &n);
    clt__twice(n);
    if (n) {
        n->i[0] = mode;
        n->i[1] = sv.pad;
        n->i[2] = psw != NULL;
        n->i[3] = sv.aux != NULL;
        n->i[4] = o->scale_grad_by_freq != 0;
        n->i[5] = o->sparse != 0;
    }
    clt_tensor_free(sv.idx);
    clt_tensor_free(sv.off);
    clt_tensor_free(sv.aux);
    return st == CLT_OK ? clt__ok() : st;
}

clt_status clt_embedding_bag(const clt_tensor *weight, const clt_tensor *input,
                             const clt_tensor *offsets, clt_bag_mode mode,
                             const clt_tensor *per_sample_weights, const int64_t *padding_idx,
                             int include_last_offset, clt_tensor **out)
{
    clt_embedding_bag_opts o = CLT_EMBEDDING_BAG_DEFAULTS;
    o.mode = mode;
    o.padding_idx = padding_idx;
    o.include_last_offset = include_last_offset;
    /* without max_norm the weight is only read */
    return clt__embedding_bag_rec("clt_embedding_bag", (clt_tensor *)weight, input, offsets,
                                  per_sample_weights, &o, out);
}

clt_status clt_embedding_bag_with_opts(clt_tensor *weight, const clt_tensor *input,
                                       const clt_tensor *offsets,
                                       const clt_tensor *per_sample_weights,
                                       const clt_embedding_bag_opts *opts, clt_tensor **out)
{
    return clt__embedding_bag_rec("clt_embedding_bag_with_opts", weight, input, offsets,
                                  per_sample_weights, opts, out);
}
