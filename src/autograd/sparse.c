/* sparse.c: sparse COO, CSR and CSC tensors (cltensor/sparse.h): a handle
 * over an int64 indices tensor and a values tensor (and, for CSR and CSC,
 * the compressed indices), and torch.sparse's ops composed of recorded
 * dense ops, so that gradients reach the values and dense operands. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "autograd/autograd.h"

/* A CSR or CSC handle keeps its entries' coordinates in idx as a COO one
 * does (rows, then columns; in the compressed order), so that the ops
 * that only read coordinates serve every layout; cmp holds the compressed
 * indices beside them.  Batch dimensions come first in idx (sd = ndim):
 * a batched handle is, to those ops, a COO tensor whose entries are
 * batch-major, and a 2-D one is a batch of one. */
struct clt_sparse {
    clt_tensor *idx; /* int64 [sd, nnz]; the handle's own reference */
    clt_tensor *val; /* [nnz, *dense]; the handle's own reference */
    clt_tensor *cmp; /* CSR / CSC: int64 [*batch, nrows + 1] / [*batch, ncols + 1]; NULL for COO */
    /* BSR / BSC: the block coordinates [2, nnzb] (block row, block column)
     * and the values [*batch, nnzb, R, C] the caller gave (the batch
     * coordinates first in bidx: [nbatch + 2, B nnzb]); idx and val then hold
     * every element of every block (val a recorded view of bval), so that
     * the ops that read coordinates serve blocks as elements. */
    clt_tensor *bidx, *bval;
    int64_t block[2];
    clt_layout layout;
    int nbatch;  /* compressed layouts: ndim - 2 */
    int64_t nnz; /* compressed layouts: entries (blocks) per batch */
    int ndim, sd;
    int64_t shape[CLT_MAX_DIMS];
    bool coalesced;
};

/* Linear indices are computed in int64 with scalar products, which are
 * doubles: products of the sparse sizes past 2^53 are refused. */
#define SPARSE_MAX_LINEAR 9007199254740992.0

/* A new handle over idx and val (each retained: the handle's references
 * are its own, apart from any scope's). */
static clt_status make(const char *fn, clt_tensor *idx, clt_tensor *val, int ndim, int sd,
                       const int64_t *shape, bool coalesced, clt_sparse **out)
{
    clt_sparse *s = clt__calloc(1, sizeof *s);
    if (s == NULL)
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory for a sparse tensor",
                          fn);
    s->idx = clt_tensor_retain(idx);
    s->val = clt_tensor_retain(val);
    s->ndim = ndim;
    s->sd = sd;
    memcpy(s->shape, shape, (size_t)ndim * sizeof *shape);
    s->coalesced = coalesced;
    *out = s;
    return CLT_OK;
}

void clt_sparse_free(clt_sparse *s)
{
    if (s == NULL)
        return;
    clt__tensor_unref(s->idx);
    clt__tensor_unref(s->val);
    if (s->cmp)
        clt__tensor_unref(s->cmp);
    if (s->bidx)
        clt__tensor_unref(s->bidx);
    if (s->bval)
        clt__tensor_unref(s->bval);
    free(s);
}

/* A new CSR or CSC handle of ndim dimensions (ndim - 2 batch ones) over
 * cmp, the coordinates idx [ndim, B nnz] and val [B nnz] (each retained),
 * nnz entries per batch. */
static clt_status make_compressed(const char *fn, clt_layout layout, clt_tensor *cmp,
                                  clt_tensor *idx, clt_tensor *val, const int64_t *shape,
                                  int ndim, int64_t nnz, clt_sparse **out)
{
    clt_status st = make(fn, idx, val, ndim, ndim, shape, layout == CLT_SPARSE_CSR, out);
    if (st == CLT_OK && layout != CLT_SPARSE_COO) {
        (*out)->layout = layout;
        (*out)->cmp = clt_tensor_retain(cmp);
        (*out)->nbatch = ndim - 2;
        (*out)->nnz = nnz;
    }
    return st;
}

/* A new handle of s's layout, sizes and coalescedness over other tensors
 * (cmp ignored for COO). */
static clt_status remake(const char *fn, const clt_sparse *s, clt_tensor *cmp, clt_tensor *idx,
                         clt_tensor *val, clt_sparse **out)
{
    if (s->layout != CLT_SPARSE_COO)
        return make_compressed(fn, s->layout, cmp, idx, val, s->shape, s->ndim, s->nnz, out);
    return make(fn, idx, val, s->ndim, s->sd, s->shape, s->coalesced, out);
}

static const char *layout_name(clt_layout layout)
{
    static const char *const names[] = {"Sparse", "SparseCsr", "SparseCsc", "SparseBsr",
                                        "SparseBsc"};
    return names[layout];
}

static bool blocked(const clt_sparse *s)
{
    return s->layout == CLT_SPARSE_BSR || s->layout == CLT_SPARSE_BSC;
}

/* Closes the scope opened by the caller: on success *out already holds the
 * new handle (whose references outlive the scope). */
static clt_status finish(clt_status st, clt_sparse **out, clt_sparse *made)
{
    clt_scope_end();
    if (st == CLT_OK)
        *out = made;
    else
        clt_sparse_free(made);
    return st;
}

static clt_status need(const clt_sparse *s, const char *what, const char *fn)
{
    if (s == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, what);
    return CLT_OK;
}

/* Refuses compressed layouts in the ops that torch has for COO only. */
static clt_status need_coo(const clt_sparse *s, const char *fn)
{
    if (s->layout != CLT_SPARSE_COO)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: expected a sparse COO tensor (layout Sparse), but got layout %s; "
                          "convert it with clt_sparse_to_sparse_coo",
                          fn, layout_name(s->layout));
    return CLT_OK;
}

/* Refuses batched compressed handles where torch 1.13 does: its
 * multiplications and masks go through sparse_mask_sparse_csr, which
 * takes matrices only. */
static clt_status refuse_batched(const clt_sparse *s, const char *what, const char *fn)
{
    if (s->layout != CLT_SPARSE_COO && s->nbatch > 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sparse_mask_sparse_csr expects %s to be 2D, but got a batched %s "
                          "tensor of %d dimensions (as torch 1.13)",
                          fn, what, layout_name(s->layout), s->ndim);
    return CLT_OK;
}

/* Row-major strides of the first sd sizes (0 sizes counted as 1, so that
 * no stride is 0 and unravelling never divides by 0). */
static void sparse_strides(int sd, const int64_t *shape, int64_t *stride)
{
    int64_t acc = 1;
    for (int k = sd - 1; k >= 0; k--) {
        stride[k] = acc;
        acc *= shape[k] > 0 ? shape[k] : 1;
    }
}

/* Row k of idx [sd, nnz] as a 1-D [nnz] tensor. */
static clt_status index_row(const char *fn, const clt_tensor *idx, int k, clt_tensor **out)
{
    clt_tensor *r;
    clt_status st = clt__narrow_rec(fn, idx, 0, k, 1, &r);
    return st != CLT_OK ? st : clt__reshape_rec(fn, r, 1, (int64_t[]){idx->shape[1]}, out);
}

/* The coordinate [nnzb, R, C] along one dimension of every element of the
 * blocks whose block coordinate along it is b [nnzb] (blocks of `size`
 * there; axis 1 rows, 2 columns, 0 a batch dimension, where a block is
 * one wide), in the calling scope. */
static clt_status block_coord(const char *fn, const clt_tensor *b, int64_t R, int64_t C, int axis,
                              clt_tensor **out)
{
    int64_t nb = b->shape[0], size = axis == 1 ? R : axis == 2 ? C : 1;
    int64_t ashape[3] = {1, axis == 1 ? R : 1, axis == 2 ? C : 1};
    clt_tensor *s, *s3, *ar, *a3, *sum;
    clt_status st = CLT_OK;
    CLT__TRY(clt__mul_scalar_rec(fn, b, (double)size, &s));
    CLT__TRY(clt__reshape_rec(fn, s, 3, (int64_t[]){nb, 1, 1}, &s3));
    CLT__TRY(clt_arange(b->dev, CLT_INT64, 0, (double)size, 1, &ar));
    CLT__TRY(clt__reshape_rec(fn, ar, 3, ashape, &a3));
    CLT__TRY(clt__add_rec(fn, s3, a3, &sum));
    CLT__TRY(clt__expand_rec(fn, sum, 3, (int64_t[]){nb, R, C}, &sum));
    CLT__TRY(clt__reshape_rec(fn, sum, 1, (int64_t[]){nb * R * C}, out));
done:
    return clt__error_as(st, fn);
}

/* The number of batches: the product of the first nbatch sizes. */
static int64_t batch_count(int nbatch, const int64_t *shape)
{
    int64_t b = 1;
    for (int k = 0; k < nbatch; k++)
        b *= shape[k];
    return b;
}

/* A new BSR or BSC handle of ndim dimensions over cmp, the block
 * coordinates bidx [ndim, B nnzb] (batch ones first) and the blocks bval
 * [*batch, nnzb, R, C] (each retained), its element coordinates and values
 * made here (in the calling scope). */
static clt_status make_blocked(const char *fn, clt_layout layout, clt_tensor *cmp,
                               clt_tensor *bidx, clt_tensor *bval, const int64_t *shape, int ndim,
                               clt_sparse **out)
{
    int nb = ndim - 2;
    int64_t nnzb = bval->shape[nb], R = bval->shape[nb + 1], C = bval->shape[nb + 2];
    int64_t total = bidx->shape[1];
    clt_tensor *r, *idx, *val;
    const clt_tensor *rows[CLT_MAX_DIMS];
    clt_status st = CLT_OK;
    for (int k = 0; k < ndim; k++) {
        CLT__TRY(index_row(fn, bidx, k, &r));
        CLT__TRY(block_coord(fn, r, R, C, k < nb ? 0 : k - nb + 1, &r));
        rows[k] = r;
    }
    CLT__TRY(clt__stack_rec(fn, rows, (size_t)ndim, 0, &idx));
    CLT__TRY(clt__reshape_rec(fn, bval, 1, (int64_t[]){total * R * C}, &val));
    CLT__TRY(make_compressed(fn, layout, cmp, idx, val, shape, ndim, nnzb, out));
    (*out)->bidx = clt_tensor_retain(bidx);
    (*out)->bval = clt_tensor_retain(bval);
    (*out)->block[0] = R;
    (*out)->block[1] = C;
done:
    return clt__error_as(st, fn);
}

/* A new handle on s's own tensors (any layout). */
static clt_status same_handle(const char *fn, const clt_sparse *s, clt_sparse **out)
{
    if (blocked(s))
        return make_blocked(fn, s->layout, s->cmp, s->bidx, s->bval, s->shape, s->ndim, out);
    return remake(fn, s, s->cmp, s->idx, s->val, out);
}

/* The int64 [nnz] row-major linear index of each entry over the sparse
 * dims of shape (in the calling scope). */
static clt_status linear_index(const char *fn, const clt_tensor *idx, int sd,
                               const int64_t *shape, clt_tensor **out)
{
    int64_t stride[CLT_MAX_DIMS];
    sparse_strides(sd, shape, stride);
    clt_tensor *lin = NULL, *r, *m;
    clt_status st = CLT_OK;
    for (int k = 0; k < sd; k++) {
        CLT__TRY(index_row(fn, idx, k, &r));
        if (stride[k] != 1)
            CLT__TRY(clt__mul_scalar_rec(fn, r, (double)stride[k], &r));
        if (lin == NULL) {
            lin = r;
        } else {
            CLT__TRY(clt__add_rec(fn, lin, r, &m));
            lin = m;
        }
    }
    *out = lin;
done:
    return st;
}

/* The int64 [sd, n] indices of the linear indices lin [n] (in the calling
 * scope). */
static clt_status unravel(const char *fn, const clt_tensor *lin, int sd, const int64_t *shape,
                          clt_tensor **out)
{
    int64_t stride[CLT_MAX_DIMS];
    sparse_strides(sd, shape, stride);
    const clt_tensor *rows[CLT_MAX_DIMS];
    clt_status st = CLT_OK;
    for (int k = 0; k < sd; k++) {
        clt_tensor *r = (clt_tensor *)lin;
        if (stride[k] != 1)
            CLT__TRY(clt_floor_divide_scalar(r, (double)stride[k], &r));
        if (k > 0 && shape[k] > 0)
            CLT__TRY(clt_remainder_scalar(r, (double)shape[k], &r));
        rows[k] = r;
    }
    CLT__TRY(clt__stack_rec(fn, rows, (size_t)sd, 0, out));
done:
    return clt__error_as(st, fn);
}

/* The dense shape of s (values' trailing sizes). */
static int dense_dim(const clt_sparse *s)
{
    return s->ndim - s->sd;
}

static clt_status check_linear_range(int sd, const int64_t *shape, const char *fn)
{
    double p = 1;
    for (int k = 0; k < sd; k++)
        p *= (double)shape[k];
    if (p > SPARSE_MAX_LINEAR)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the product of the sparse sizes (%.0f) passes 2^53, which "
                          "cltensor's sparse tensors do not support",
                          fn, p);
    return CLT_OK;
}

/* ---- construction and properties --------------------------------------------- */

clt_status clt_sparse_coo_tensor(const clt_tensor *indices, const clt_tensor *values,
                                 const int64_t *size, int ndim, int check_invariants,
                                 clt_sparse **out)
{
    static const char fn[] = "clt_sparse_coo_tensor";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(indices, fn);
    CLT__REQUIRE_ARG(values, fn);
    char b1[96], b2[96];
    if (indices->dtype != CLT_INT64 && indices->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: indices must be an int64 tensor, not %s", fn,
                          clt_dtype_name(indices->dtype));
    clt_status st = clt__same_device(indices, values, fn);
    if (st != CLT_OK)
        return st;
    if (indices->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: indices must be sparse_dim x nnz, but got: %s", fn,
                          clt__shape_str(b1, sizeof b1, indices->ndim, indices->shape));
    int sd = (int)indices->shape[0];
    int64_t nnz = indices->shape[1];
    if (sd < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: indices must have at least one sparse dimension, but got: %s", fn,
                          clt__shape_str(b1, sizeof b1, indices->ndim, indices->shape));
    if (values->ndim < 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: values must have at least one dimension (nnz), but got: []", fn);
    if (values->shape[0] != nnz)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: indices and values must have same nnz, but got nnz from indices: "
                          "%lld, nnz from values: %lld",
                          fn, (long long)nnz, (long long)values->shape[0]);
    int dd = values->ndim - 1;
    if (size != NULL) {
        if (ndim < 0 || ndim > CLT_MAX_DIMS)
            return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: ndim %d is out of [0, %d]", fn, ndim,
                              CLT_MAX_DIMS);
        if ((st = clt__check_shape(ndim, size, fn)) != CLT_OK)
            return st;
        if (ndim != sd + dd)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: number of dimensions must be sparse_dim (%d) + dense_dim (%d), "
                              "but got %d",
                              fn, sd, dd, ndim);
        for (int k = 0; k < dd; k++)
            if (size[sd + k] != values->shape[1 + k]) {
                int64_t want[CLT_MAX_DIMS];
                want[0] = nnz;
                memcpy(want + 1, size + sd, (size_t)dd * sizeof *want);
                return clt__error(CLT_ERR_SHAPE_MISMATCH,
                                  "%s: values has incorrect size, expected %s, got %s", fn,
                                  clt__shape_str(b1, sizeof b1, dd + 1, want),
                                  clt__shape_str(b2, sizeof b2, values->ndim, values->shape));
            }
    } else if (sd + dd > CLT_MAX_DIMS) {
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %d dimensions are more than %d", fn,
                          sd + dd, CLT_MAX_DIMS);
    }
    int64_t shape[CLT_MAX_DIMS];
    if (size)
        memcpy(shape, size, (size_t)ndim * sizeof *shape);
    else
        memcpy(shape + sd, values->shape + 1, (size_t)dd * sizeof *shape);

    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    clt_tensor *idx = (clt_tensor *)indices;
    int64_t *host = NULL;
    if (indices->dtype != CLT_INT64)
        CLT__TRY(clt_to_dtype(indices, CLT_INT64, &idx));
    if (check_invariants || size == NULL) {
        size_t count = (size_t)sd * (size_t)nnz;
        host = clt__malloc(count ? count * sizeof *host : 1);
        if (host == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory for the indices",
                            fn);
            goto done;
        }
        CLT__TRY(clt_tensor_read(idx, host, count * sizeof *host));
        for (int k = 0; k < sd; k++) {
            int64_t most = -1;
            for (int64_t i = 0; i < nnz; i++) {
                int64_t v = host[(size_t)k * (size_t)nnz + (size_t)i];
                if (v < 0) {
                    st = clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                                    "%s: found negative index %lld for dim %d", fn, (long long)v,
                                    k);
                    goto done;
                }
                if (v > most)
                    most = v;
            }
            if (size == NULL) {
                shape[k] = most + 1;
            } else if (most >= shape[k]) {
                st = clt__error(CLT_ERR_INDEX_OUT_OF_RANGE,
                                "%s: size is inconsistent with indices: for dim %d, size is %lld "
                                "but found index %lld",
                                fn, k, (long long)shape[k], (long long)most);
                goto done;
            }
        }
        if (size == NULL)
            CLT__TRY(clt__check_shape(sd + dd, shape, fn));
    }
    CLT__TRY(check_linear_range(sd, shape, fn));
    CLT__TRY(make(fn, idx, (clt_tensor *)values, sd + dd, sd, shape, nnz <= 1, &made));
done:
    free(host);
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_sparse_indices(const clt_sparse *s, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_indices";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st == CLT_OK)
        st = need_coo(s, fn);
    return st != CLT_OK ? st : clt__view_rec(fn, s->idx, s->idx->ndim, s->idx->shape, out);
}

clt_status clt_sparse_values(const clt_sparse *s, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_values";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    if (blocked(s))
        return clt__view_rec(fn, s->bval, s->bval->ndim, s->bval->shape, out);
    /* a batched handle's values [*batch, nnz] (val is their flat view) */
    int64_t shape[CLT_MAX_DIMS];
    int nd = s->layout == CLT_SPARSE_COO ? s->val->ndim : s->nbatch + 1;
    if (s->layout == CLT_SPARSE_COO)
        memcpy(shape, s->val->shape, (size_t)nd * sizeof *shape);
    else {
        memcpy(shape, s->shape, (size_t)s->nbatch * sizeof *shape);
        shape[s->nbatch] = s->nnz;
    }
    return clt__view_rec(fn, s->val, nd, shape, out);
}

int64_t clt_sparse_nnz(const clt_sparse *s)
{
    return s ? (s->layout != CLT_SPARSE_COO ? s->nnz : s->idx->shape[1]) : 0;
}

int clt_sparse_sparse_dim(const clt_sparse *s)
{
    return s ? (s->layout != CLT_SPARSE_COO ? 2 : s->sd) : 0;
}

int clt_sparse_dense_dim(const clt_sparse *s)
{
    return s ? dense_dim(s) : 0;
}

int clt_sparse_ndim(const clt_sparse *s)
{
    return s ? s->ndim : 0;
}

const int64_t *clt_sparse_shape(const clt_sparse *s)
{
    return s ? s->shape : NULL;
}

int clt_sparse_is_coalesced(const clt_sparse *s)
{
    return s && s->layout == CLT_SPARSE_COO ? s->coalesced : 0;
}

clt_layout clt_sparse_layout(const clt_sparse *s)
{
    return s ? s->layout : CLT_SPARSE_COO;
}

clt_dtype clt_sparse_dtype(const clt_sparse *s)
{
    return s ? s->val->dtype : CLT_DTYPE_COUNT;
}

clt_device *clt_sparse_device(const clt_sparse *s)
{
    return s ? s->val->dev : NULL;
}

/* ---- coalescing and conversions ------------------------------------------- */

/* coalesce inside the caller's scope; *out a new handle. */
static clt_status coalesce_in(const char *fn, const clt_sparse *s, clt_sparse **out)
{
    int64_t nnz = s->idx->shape[1];
    if (s->coalesced || nnz == 0)
        return make(fn, s->idx, s->val, s->ndim, s->sd, s->shape, true, out);
    clt_tensor *lin, *u = NULL, *inv = NULL, *z, *vals, *idx;
    clt_status st = linear_index(fn, s->idx, s->sd, s->shape, &lin);
    if (st != CLT_OK)
        return st;
    if ((st = clt_unique(lin, &u, &inv, NULL)) != CLT_OK)
        return clt__error_as(st, fn);
    int64_t vshape[CLT_MAX_DIMS];
    memcpy(vshape, s->val->shape, (size_t)s->val->ndim * sizeof *vshape);
    vshape[0] = u->shape[0];
    if ((st = clt__full(s->val->dev, s->val->dtype, s->val->ndim, vshape, 0.0, &z)) != CLT_OK)
        return clt__error_in(st, fn);
    if ((st = clt_index_add(z, 0, inv, s->val, 1.0, &vals)) != CLT_OK)
        return clt__error_as(st, fn);
    if ((st = unravel(fn, u, s->sd, s->shape, &idx)) != CLT_OK)
        return st;
    return make(fn, idx, vals, s->ndim, s->sd, s->shape, true, out);
}

clt_status clt_sparse_coalesce(const clt_sparse *s, clt_sparse **out)
{
    static const char fn[] = "clt_sparse_coalesce";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st == CLT_OK)
        st = need_coo(s, fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    st = coalesce_in(fn, s, &made);
    return finish(st, out, made);
}

/* to_dense inside the caller's scope. */
static clt_status to_dense_in(const char *fn, const clt_sparse *s, clt_tensor **out)
{
    int dd = dense_dim(s);
    int64_t p = 1, zshape[CLT_MAX_DIMS];
    for (int k = 0; k < s->sd; k++)
        p *= s->shape[k];
    zshape[0] = p;
    memcpy(zshape + 1, s->shape + s->sd, (size_t)dd * sizeof *zshape);
    clt_tensor *z, *lin, *sum;
    clt_status st = clt__full(s->val->dev, s->val->dtype, dd + 1, zshape, 0.0, &z);
    if (st != CLT_OK)
        return clt__error_in(st, fn);
    if ((st = linear_index(fn, s->idx, s->sd, s->shape, &lin)) != CLT_OK)
        return st;
    if ((st = clt_index_add(z, 0, lin, s->val, 1.0, &sum)) != CLT_OK)
        return clt__error_as(st, fn);
    return clt__reshape_rec(fn, sum, s->ndim, s->shape, out);
}

clt_status clt_sparse_to_dense(const clt_sparse *s, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_to_dense";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    st = to_dense_in(fn, s, out);
    return clt__scope_finish(st, out);
}

clt_status clt_tensor_to_sparse(const clt_tensor *t, int sparse_dim, clt_sparse **out)
{
    static const char fn[] = "clt_tensor_to_sparse";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (sparse_dim < 1 || sparse_dim > t->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: sparse_dim must be at least 1 and less than or equal to self.dim() "
                          "(%d), but got %d",
                          fn, t->ndim, sparse_dim);
    clt_status st = check_linear_range(sparse_dim, t->shape, fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    int dd = t->ndim - sparse_dim;
    int64_t p = 1, fshape[CLT_MAX_DIMS], dn = 1;
    for (int k = 0; k < sparse_dim; k++)
        p *= t->shape[k];
    fshape[0] = p;
    for (int k = 0; k < dd; k++)
        dn *= (fshape[1 + k] = t->shape[sparse_dim + k]);
    clt_tensor *flat, *mask, *m2, *nz, *lin, *vals, *idx;
    CLT__TRY(clt__reshape_rec(fn, t, dd + 1, fshape, &flat));
    CLT__TRY(clt_ne_scalar(flat, 0.0, &mask));
    if (dd > 0) {
        CLT__TRY(clt__reshape_rec(fn, mask, 2, (int64_t[]){p, dn}, &m2));
        CLT__TRY(clt_any_dim(m2, 1, 0, &mask));
    }
    CLT__TRY(clt_nonzero(mask, &nz));
    CLT__TRY(clt__reshape_rec(fn, nz, 1, (int64_t[]){nz->shape[0]}, &lin));
    CLT__TRY(clt__index_select_rec(fn, flat, 0, lin, &vals));
    CLT__TRY(unravel(fn, lin, sparse_dim, t->shape, &idx));
    CLT__TRY(make(fn, idx, vals, t->ndim, sparse_dim, t->shape, true, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_sparse_to(const clt_sparse *s, clt_device *dev, clt_sparse **out)
{
    static const char fn[] = "clt_sparse_to";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(dev, fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    clt_tensor *idx, *val, *cmp = NULL;
    if (blocked(s)) {
        clt_tensor *bidx, *bval;
        CLT__TRY(clt_to(s->cmp, dev, &cmp));
        CLT__TRY(clt_to(s->bidx, dev, &bidx));
        CLT__TRY(clt_to(s->bval, dev, &bval));
        CLT__TRY(make_blocked(fn, s->layout, cmp, bidx, bval, s->shape, s->ndim, &made));
        goto done;
    }
    CLT__TRY(clt_to(s->idx, dev, &idx));
    CLT__TRY(clt_to(s->val, dev, &val));
    if (s->cmp)
        CLT__TRY(clt_to(s->cmp, dev, &cmp));
    CLT__TRY(remake(fn, s, cmp, idx, val, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

/* ---- products and sums --------------------------------------------------------- */

/* a @ b inside the caller's scope. */
static clt_status compress(const char *fn, const clt_tensor *major, int64_t B, int64_t n,
                           clt_tensor **out);

/* saved: major, plain, val, x of spmm_rec.  out = A x with A[major[k],
 * plain[k]] = val[k]: x's gradient A^T g is g's rows major scaled by val
 * and added up at plain (index_add, a scatter-add), val's the sampled
 * product g x^T at the entries; for complex values val and x conjugated
 * there, as torch's (conjugate Wirtinger calculus: A^H g and g x^H); all
 * recorded, so that a pass that creates a graph differentiates them again
 * (clt__twice). */
static clt_status bw_spmm(clt__node *n, const clt_tensor *g, clt_tensor **gin)
{
    static const char fn[] = "clt_backward";
    const clt_tensor *major = n->saved[0], *plain = n->saved[1], *val = n->saved[2],
                     *x = n->saved[3];
    clt_status st = clt_scope_begin();
    if (st != CLT_OK)
        return st;
    clt_tensor *gr, *xr, *p, *v, *sc, *z, *keep[2];
    size_t nk = 0;
    bool cx = clt__dtype_is_complex(val->dtype);
    CLT__TRY(clt__index_select_rec(fn, g, 0, major, &gr));
    if (CLT__NEED(n, 0)) {
        CLT__TRY(clt__index_select_rec(fn, x, 0, plain, &xr));
        if (cx)
            CLT__TRY(clt_conj(xr, &xr));
        CLT__TRY(clt__mul_rec(fn, gr, xr, &p));
        CLT__TRY(clt__sum_dim_rec(fn, p, 1, 0, &gin[0]));
        keep[nk++] = gin[0];
    }
    if (CLT__NEED(n, 1)) {
        CLT__TRY(clt__reshape_rec(fn, val, 2, (int64_t[]){val->shape[0], 1}, &v));
        if (cx)
            CLT__TRY(clt_conj(v, &v));
        CLT__TRY(clt__mul_rec(fn, gr, v, &sc));
        CLT__TRY(clt__error_in(clt__full(x->dev, g->dtype, 2, x->shape, 0.0, &z), fn));
        CLT__TRY(clt_index_add(z, 0, plain, sc, 1.0, &gin[1]));
        keep[nk++] = gin[1];
    }
done:
    st = clt__scope_finish_all(st, keep, nk);
    if (st != CLT_OK)
        gin[0] = gin[1] = NULL;
    return st;
}

/* The product of the matrix with entries (major[k], plain[k], val[k]),
 * grouped by major index as the compressed indices cmp say, and x, by the
 * kernel of cl/spmm.cl; recorded (SparseAddmmBackward0, torch's name) with
 * gradients to val and x. */
static clt_status spmm_rec(const char *fn, const clt_tensor *cmp, const clt_tensor *major,
                           const clt_tensor *plain, const clt_tensor *val, const clt_tensor *x,
                           clt_tensor **out)
{
    clt_status st = clt__spmm_rows(cmp, plain, val, x, out, fn);
    const clt_tensor *in[2] = {val, x}, *sv[4] = {major, plain, val, x};
    clt__node *n = NULL;
    st = clt__record(st, out, "SparseAddmmBackward0", bw_spmm, 2, in, 4, sv, &n);
    clt__twice(n);
    return st;
}

/* a @ b for a compressed a of a floating or complex dtype, by the kernel,
 * given the entries' rows and columns in the batch's block-diagonal matrix
 * (batch k's rows and columns offset by k n and k m: to the kernel a batch
 * is one matrix of B n rows, b its B m rows) and b as [B m, p]: a 2-D CSR
 * matrix's own arrays; otherwise the entries put in row order first (a
 * stable sort of the row indices keeps each row's columns ascending; a
 * batched CSR matrix's are in order already), the compressed rows from a
 * search: it enqueues only. */
static clt_status mm_compressed(const char *fn, const clt_sparse *a, clt_tensor *rows,
                                clt_tensor *cols, int64_t nrows, const clt_tensor *b,
                                clt_tensor **out)
{
    clt_tensor *perm, *val = a->val, *cmp;
    clt_status st = CLT_OK;
    if (a->layout == CLT_SPARSE_CSR && a->nbatch == 0)
        return spmm_rec(fn, a->cmp, rows, cols, a->val, b, out);
    if (a->layout != CLT_SPARSE_CSR) {
        CLT__TRY(clt_argsort(rows, 0, 0, &perm));
        CLT__TRY(clt__index_select_rec(fn, rows, 0, perm, &rows));
        CLT__TRY(clt__index_select_rec(fn, cols, 0, perm, &cols));
        CLT__TRY(clt__index_select_rec(fn, a->val, 0, perm, &val));
    }
    CLT__TRY(compress(fn, rows, 1, nrows, &cmp));
    CLT__TRY(clt__reshape_rec(fn, cmp, 1, (int64_t[]){nrows + 1}, &cmp));
    CLT__TRY(spmm_rec(fn, cmp, rows, cols, val, b, out));
done:
    return clt__error_as(st, fn);
}

static clt_status mm_in(const char *fn, const clt_sparse *a, const clt_tensor *b, clt_tensor **out)
{
    char b1[96], b2[96];
    int nb = a->layout != CLT_SPARSE_COO ? a->nbatch : 0;
    if (a->ndim != nb + 2 || a->sd != a->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sparse.mm: expected a 2-D sparse tensor with 2 sparse dimensions, "
                          "but got %d dimensions with %d sparse ones",
                          fn, a->ndim, a->sd);
    if (b->ndim != nb + 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sparse.mm: expected %d-D dense%s, but got %s", fn, nb + 2,
                          nb ? " (the sparse operand's batch dimensions first)" : "",
                          clt__shape_str(b1, sizeof b1, b->ndim, b->shape));
    if (memcmp(a->shape, b->shape, (size_t)nb * sizeof *b->shape) != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sparse.mm: expected the batch sizes of both operands to match, but "
                          "got %s and %s",
                          fn, clt__shape_str(b1, sizeof b1, nb, a->shape),
                          clt__shape_str(b2, sizeof b2, nb, b->shape));
    clt_status st = clt__same_device(b, a->val, fn);
    if (st != CLT_OK)
        return st;
    if (b->shape[nb] != a->shape[nb + 1])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: addmm: Argument #3 (dense): Expected dim %d size %lld, got %lld", fn,
                          nb, (long long)a->shape[nb + 1], (long long)b->shape[nb]);
    if (b->dtype != a->val->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: expected scalar type %s but found %s", fn,
                          clt_dtype_name(a->val->dtype), clt_dtype_name(b->dtype));
    /* a batch is one block-diagonal matrix [B n, B m] times b [B m, p] */
    int64_t B = batch_count(nb, a->shape), n = a->shape[nb], m = a->shape[nb + 1],
            p = b->shape[nb + 1];
    int64_t nnz = a->idx->shape[1], oshape[CLT_MAX_DIMS];
    memcpy(oshape, a->shape, (size_t)nb * sizeof *oshape);
    oshape[nb] = n;
    oshape[nb + 1] = p;
    clt_tensor *rows, *cols, *lin, *off, *bm, *o, *g, *v, *sc, *z;
    CLT__TRY(index_row(fn, a->idx, nb, &rows));
    CLT__TRY(index_row(fn, a->idx, nb + 1, &cols));
    if (nb > 0) {
        CLT__TRY(linear_index(fn, a->idx, nb, a->shape, &lin));
        CLT__TRY(clt__mul_scalar_rec(fn, lin, (double)n, &off));
        CLT__TRY(clt__add_rec(fn, rows, off, &rows));
        CLT__TRY(clt__mul_scalar_rec(fn, lin, (double)m, &off));
        CLT__TRY(clt__add_rec(fn, cols, off, &cols));
    }
    CLT__TRY(clt__reshape_rec(fn, b, 2, (int64_t[]){B * m, p}, &bm));
    if (a->layout != CLT_SPARSE_COO && clt__spmm_supports(b->dtype)) {
        CLT__TRY(mm_compressed(fn, a, rows, cols, B * n, bm, &o));
    } else {
        /* COO (entries in any order, duplicates) and the other dtypes: each
         * entry's row of b scaled, added up at its row */
        CLT__TRY(clt__index_select_rec(fn, bm, 0, cols, &g));
        CLT__TRY(clt__reshape_rec(fn, a->val, 2, (int64_t[]){nnz, 1}, &v));
        CLT__TRY(clt__mul_rec(fn, g, v, &sc));
        CLT__TRY(clt__full(b->dev, b->dtype, 2, (int64_t[]){B * n, p}, 0.0, &z));
        CLT__TRY(clt_index_add(z, 0, rows, sc, 1.0, &o));
    }
    if (nb > 0)
        CLT__TRY(clt__reshape_rec(fn, o, nb + 2, oshape, &o));
    *out = o;
done:
    return clt__error_as(st, fn);
}

clt_status clt_sparse_mm(const clt_sparse *a, const clt_tensor *b, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_mm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(a, "a", fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(b, fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    st = mm_in(fn, a, b, out);
    return clt__scope_finish(st, out);
}

clt_status clt_sparse_addmm(const clt_tensor *input, const clt_sparse *a, const clt_tensor *b,
                            double beta, double alpha, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_addmm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(input, fn);
    clt_status st = need(a, "a", fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(b, fn);
    if ((st = clt__same_device(input, a->val, fn)) != CLT_OK)
        return st;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *p, *e, *bi, *r = NULL;
    CLT__TRY(mm_in(fn, a, b, &p));
    CLT__TRY(clt__expand_rec(fn, input, p->ndim, p->shape, &e));
    if (alpha != 1)
        CLT__TRY(clt__mul_scalar_rec(fn, p, alpha, &p));
    if (beta == 0) {
        r = p;
    } else {
        bi = e;
        if (beta != 1)
            CLT__TRY(clt__mul_scalar_rec(fn, e, beta, &bi));
        CLT__TRY(clt__add_rec(fn, bi, p, &r));
    }
done:
    if (st == CLT_OK)
        *out = r;
    return clt__scope_finish(st, out);
}

clt_status clt_sparse_sum(const clt_sparse *s, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_sum";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    return clt__error_as(clt_sum(s->val, out), fn);
}

clt_status clt_sparse_sum_dims(const clt_sparse *s, const int *dims, int ndims, clt_tensor **dense,
                               clt_sparse **sparse)
{
    static const char fn[] = "clt_sparse_sum_dims";
    CLT__REQUIRE_ARG(dense, fn);
    *dense = NULL;
    CLT__REQUIRE_ARG(sparse, fn);
    *sparse = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    if ((st = need_coo(s, fn)) != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(dims, fn);
    if (ndims < 1 || ndims > s->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: expected 1 to %d dims, but got %d", fn,
                          s->ndim, ndims);
    bool red[CLT_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++) {
        int d;
        if ((st = clt__wrap_dim(dims[i], s->ndim, &d, fn)) != CLT_OK)
            return st;
        if (red[d])
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: dim %d appears multiple times in the list of dims", fn, d);
        red[d] = true;
    }
    int nsparse = 0;
    for (int k = 0; k < s->sd; k++)
        nsparse += red[k];
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL, *tmp = NULL;
    clt_tensor *v = s->val, *t, *keep = NULL, *idx;
    for (int k = s->ndim - 1; k >= s->sd; k--)
        if (red[k])
            CLT__TRY(clt__sum_dim_rec(fn, v, k - s->sd + 1, 0, &v));
    int64_t shape[CLT_MAX_DIMS];
    int n = 0;
    for (int k = 0; k < s->ndim; k++)
        if (!red[k])
            shape[n++] = s->shape[k];
    if (nsparse == s->sd) {
        CLT__TRY(clt__sum_dim_rec(fn, v, 0, 0, &t));
        *dense = t;
        st = clt_scope_keep(t);
        clt_scope_end();
        if (st != CLT_OK)
            *dense = NULL;
        return st;
    }
    if (nsparse == 0) {
        CLT__TRY(make(fn, s->idx, v, n, s->sd, shape, s->coalesced, &made));
        goto done;
    }
    int64_t rows[CLT_MAX_DIMS];
    int nr = 0;
    for (int k = 0; k < s->sd; k++)
        if (!red[k])
            rows[nr++] = k;
    CLT__TRY(clt__tensor_from_host_in(fn, s->val->dev, CLT_INT64, 1, (int64_t[]){nr}, rows, &keep));
    CLT__TRY(clt__index_select_rec(fn, s->idx, 0, keep, &idx));
    CLT__TRY(make(fn, idx, v, n, nr, shape, false, &tmp));
    CLT__TRY(coalesce_in(fn, tmp, &made));
done:
    clt_sparse_free(tmp);
    return finish(clt__error_as(st, fn), sparse, made);
}

/* ---- sums of two, scalar products, transposes --------------------------------- */

static clt_status to_compressed_in(const char *fn, const clt_sparse *s, clt_layout layout,
                                   clt_sparse **out);
static clt_status compressed_part(const char *fn, const clt_sparse *s, clt_layout want,
                                  const char *name, bool compressed, clt_tensor **out);
static clt_status assemble(const char *fn, clt_layout layout, clt_tensor *cmp,
                           const clt_tensor *plain, const clt_tensor *values,
                           const int64_t *shape, int ndim, clt_sparse **out);

clt_status clt_sparse_add(const clt_sparse *a, const clt_sparse *b, clt_sparse **out)
{
    static const char fn[] = "clt_sparse_add";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(a, "a", fn);
    if (st != CLT_OK || (st = need(b, "b", fn)) != CLT_OK)
        return st;
    if ((st = clt__same_device(a->val, b->val, fn)) != CLT_OK)
        return st;
    char b1[96], b2[96];
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: add: expected sizes of 'self' and 'other' to match, but %s != %s",
                          fn,
                          clt__shape_str(b1, sizeof b1, a->ndim, a->shape),
                          clt__shape_str(b2, sizeof b2, b->ndim, b->shape));
    if (a->sd != b->sd)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: add: expected 'self' and 'other' to have same density, but 'self' "
                          "has %d sparse dimensions while 'other' has %d sparse dimensions",
                          fn, a->sd, b->sd);
    if (a->val->dtype != b->val->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: expected both operands of one dtype, but got %s and %s", fn,
                          clt_dtype_name(a->val->dtype), clt_dtype_name(b->val->dtype));
    if (a->layout != b->layout)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: add: expected both operands of one layout, but got %s and %s", fn,
                          layout_name(a->layout), layout_name(b->layout));
    if (blocked(a))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: add: expected sparse compressed (non-block) tensor layout but got "
                          "%s, as torch",
                          fn, layout_name(a->layout));
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL, *cat = NULL;
    clt_tensor *idx, *val;
    const clt_tensor *ii[2] = {a->idx, b->idx}, *vv[2] = {a->val, b->val};
    CLT__TRY(clt__cat_rec(fn, ii, 2, 1, &idx));
    CLT__TRY(clt__cat_rec(fn, vv, 2, 0, &val));
    CLT__TRY(make(fn, idx, val, a->ndim, a->sd, a->shape, false, &cat));
    if (a->layout == CLT_SPARSE_COO)
        CLT__TRY(coalesce_in(fn, cat, &made));
    else
        CLT__TRY(to_compressed_in(fn, cat, a->layout, &made));
done:
    clt_sparse_free(cat);
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_sparse_add_dense(const clt_tensor *dense, const clt_sparse *s, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_add_dense";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(dense, fn);
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    if ((st = clt__same_device(dense, s->val, fn)) != CLT_OK)
        return st;
    char b1[96], b2[96];
    if (dense->ndim != s->ndim ||
        memcmp(dense->shape, s->shape, (size_t)s->ndim * sizeof *s->shape) != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: add: expected 'self' and 'other' to have same size, but self has "
                          "size %s while other has size %s",
                          fn, clt__shape_str(b1, sizeof b1, dense->ndim, dense->shape),
                          clt__shape_str(b2, sizeof b2, s->ndim, s->shape));
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *d;
    CLT__TRY(to_dense_in(fn, s, &d));
    CLT__TRY(clt__add_rec(fn, dense, d, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_sparse_mul_scalar(const clt_sparse *s, double v, clt_sparse **out)
{
    static const char fn[] = "clt_sparse_mul_scalar";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st == CLT_OK)
        st = refuse_batched(s, "self", fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    clt_tensor *val;
    if (blocked(s)) {
        CLT__TRY(clt__mul_scalar_rec(fn, s->bval, v, &val));
        CLT__TRY(make_blocked(fn, s->layout, s->cmp, s->bidx, val, s->shape, s->ndim, &made));
        goto done;
    }
    CLT__TRY(clt__mul_scalar_rec(fn, s->val, v, &val));
    CLT__TRY(remake(fn, s, s->cmp, s->idx, val, &made));
done:
    return finish(st, out, made);
}

clt_status clt_sparse_transpose(const clt_sparse *s, int d0, int d1, clt_sparse **out)
{
    static const char fn[] = "clt_sparse_transpose";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    int a, b;
    if ((st = clt__wrap_dim(d0, s->ndim, &a, fn)) != CLT_OK ||
        (st = clt__wrap_dim(d1, s->ndim, &b, fn)) != CLT_OK)
        return st;
    if (a >= s->sd || b >= s->sd)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: transpose of a sparse tensor's dense dimensions is not supported "
                          "(dims %d and %d of %d sparse ones)",
                          fn, a, b, s->sd);
    int nb = s->layout != CLT_SPARSE_COO ? s->nbatch : 0;
    if ((a < nb) != (b < nb))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: transpose(): can only transpose dimensions of the same type (Batch, "
                          "Sparse, Dense), got %d(%s) and %d(%s)",
                          fn, a, a < nb ? "Batch" : "Sparse", b, b < nb ? "Batch" : "Sparse");
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    int64_t perm[CLT_MAX_DIMS], shape[CLT_MAX_DIMS];
    for (int k = 0; k < s->sd; k++)
        perm[k] = k;
    perm[a] = b;
    perm[b] = a;
    memcpy(shape, s->shape, (size_t)s->ndim * sizeof *shape);
    shape[a] = s->shape[b];
    shape[b] = s->shape[a];
    clt_tensor *p, *idx, *bidx, *bval;
    if (a < nb && a != b) { /* two batch dimensions: the arrays transposed */
        clt_tensor *cmp, *plain, *vals;
        CLT__TRY(compressed_part(fn, s, s->layout, "", true, &cmp));
        CLT__TRY(compressed_part(fn, s, s->layout, "", false, &plain));
        CLT__TRY(clt_sparse_values(s, &vals));
        CLT__TRY(clt__transpose_rec(fn, cmp, a, b, &cmp));
        CLT__TRY(clt__transpose_rec(fn, plain, a, b, &plain));
        CLT__TRY(clt__transpose_rec(fn, vals, a, b, &vals));
        CLT__TRY(assemble(fn, s->layout, cmp, plain, vals, shape, s->ndim, &made));
        goto done;
    }
    CLT__TRY(clt__tensor_from_host_in(fn, s->val->dev, CLT_INT64, 1, (int64_t[]){s->sd}, perm, &p));
    if (blocked(s)) { /* BSR.t() is BSC on the same arrays, each block transposed */
        if (a == b) {
            CLT__TRY(same_handle(fn, s, &made));
        } else {
            CLT__TRY(clt__index_select_rec(fn, s->bidx, 0, p, &bidx));
            CLT__TRY(clt__transpose_rec(fn, s->bval, nb + 1, nb + 2, &bval));
            CLT__TRY(make_blocked(fn, s->layout == CLT_SPARSE_BSR ? CLT_SPARSE_BSC
                                                                 : CLT_SPARSE_BSR,
                                  s->cmp, bidx, bval, shape, s->ndim, &made));
        }
        goto done;
    }
    CLT__TRY(clt__index_select_rec(fn, s->idx, 0, p, &idx));
    if (s->layout == CLT_SPARSE_COO)
        CLT__TRY(make(fn, idx, s->val, s->ndim, s->sd, shape, a == b && s->coalesced, &made));
    else if (a == b)
        CLT__TRY(remake(fn, s, s->cmp, idx, s->val, &made));
    else
        CLT__TRY(make_compressed(fn, s->layout == CLT_SPARSE_CSR ? CLT_SPARSE_CSC : CLT_SPARSE_CSR,
                                 s->cmp, idx, s->val, shape, s->ndim, s->nnz, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

/* ---- softmax over the specified entries -------------------------------------------------- */

/* torch.sparse.softmax / log_softmax (log) of s along dim, inside the
 * caller's scope: over a dense dim the values' own softmax; over a sparse
 * dim the entries that share every other sparse index form a group, and
 * the unspecified places count as -inf (they take no share). */
static clt_status softmax_in(const char *fn, const clt_sparse *s, int dim, bool log,
                             clt_sparse **out)
{
    clt_sparse *cs = NULL;
    clt_status st = coalesce_in(fn, s, &cs);
    if (st != CLT_OK)
        return st;
    clt_tensor *v = NULL, *grp = NULL, *u = NULL, *inv = NULL, *lo, *mx, *det, *mxg, *sh, *e, *z,
               *den, *deng, *lg;
    int64_t nnz = cs->idx->shape[1];
    if (dim >= cs->sd) {
        int vd = dim - cs->sd + 1;
        CLT__TRY(log ? clt__log_softmax_rec(fn, cs->val, vd, &v)
                     : clt__softmax_rec(fn, cs->val, vd, &v));
        goto made;
    }
    if (nnz == 0) {
        v = cs->val;
        goto made;
    }
    if (cs->sd == 1) {
        CLT__TRY(clt__full(cs->val->dev, CLT_INT64, 1, &nnz, 0.0, &inv));
        u = inv;
    } else {
        int64_t rows[CLT_MAX_DIMS], shape[CLT_MAX_DIMS];
        int nr = 0;
        for (int k = 0; k < cs->sd; k++)
            if (k != dim) {
                shape[nr] = cs->shape[k];
                rows[nr++] = k;
            }
        clt_tensor *keep, *idx;
        CLT__TRY(clt__tensor_from_host_in(fn, cs->val->dev, CLT_INT64, 1, (int64_t[]){nr}, rows,
                                          &keep));
        CLT__TRY(clt__index_select_rec(fn, cs->idx, 0, keep, &idx));
        CLT__TRY(linear_index(fn, idx, nr, shape, &grp));
        CLT__TRY(clt_unique(grp, &u, &inv, NULL));
    }
    int64_t gshape[CLT_MAX_DIMS];
    memcpy(gshape, cs->val->shape, (size_t)cs->val->ndim * sizeof *gshape);
    gshape[0] = cs->sd == 1 ? 1 : u->shape[0];
    /* each group's largest value, a constant (softmax does not depend on
     * it: it only keeps exp in range) */
    CLT__TRY(clt_detach(cs->val, &det));
    CLT__TRY(clt__full(cs->val->dev, cs->val->dtype, cs->val->ndim, gshape, -INFINITY, &lo));
    CLT__TRY(clt_index_reduce(lo, 0, inv, det, "amax", 1, &mx));
    CLT__TRY(clt__index_select_rec(fn, mx, 0, inv, &mxg));
    CLT__TRY(clt__sub_rec(fn, cs->val, mxg, &sh));
    CLT__TRY(clt__exp_rec(fn, sh, &e));
    CLT__TRY(clt__full(cs->val->dev, cs->val->dtype, cs->val->ndim, gshape, 0.0, &z));
    CLT__TRY(clt_index_add(z, 0, inv, e, 1.0, &den));
    CLT__TRY(clt__index_select_rec(fn, den, 0, inv, &deng));
    if (log) {
        CLT__TRY(clt__log_rec(fn, deng, &lg));
        CLT__TRY(clt__sub_rec(fn, sh, lg, &v));
    } else {
        CLT__TRY(clt__div_rec(fn, e, deng, &v));
    }
made:
    CLT__TRY(make(fn, cs->idx, v, cs->ndim, cs->sd, cs->shape, true, out));
done:
    clt_sparse_free(cs);
    return clt__error_as(st, fn);
}

static clt_status sparse_softmax(const char *fn, const clt_sparse *s, int dim, bool log,
                                 clt_sparse **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    if ((st = need_coo(s, fn)) != CLT_OK)
        return st;
    if (dim < 0 || dim >= s->ndim)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: dim must be non-negative and less than input dimensions (%d), but "
                          "got %d",
                          fn, s->ndim, dim);
    if ((st = clt__check_floating(s->val, "the values", fn)) != CLT_OK)
        return st;
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    st = softmax_in(fn, s, dim, log, &made);
    return finish(st, out, made);
}

clt_status clt_sparse_softmax(const clt_sparse *s, int dim, clt_sparse **out)
{
    return sparse_softmax("clt_sparse_softmax", s, dim, false, out);
}

clt_status clt_sparse_log_softmax(const clt_sparse *s, int dim, clt_sparse **out)
{
    return sparse_softmax("clt_sparse_log_softmax", s, dim, true, out);
}

/* ---- compressed layouts (CSR, CSC) ------------------------------------------------------- */

/* The major index [B nnz] (row for CSR) of each entry of the compressed
 * indices cmp [*batch, n + 1] (B batches of nnz entries), as torch's
 * _convert_indices_from_csr_to_coo: the number of cmp[..., 1:] entries of
 * its batch not above the entry's position. */
static clt_status expand_compressed(const char *fn, const clt_tensor *cmp, int64_t B, int64_t n,
                                    int64_t nnz, clt_tensor **out)
{
    int64_t total = B * nnz;
    if (total == 0 || n == 0)
        return clt__error_in(clt__full(cmp->dev, CLT_INT64, 1, &total, 0.0, out), fn);
    clt_tensor *c2, *tail, *pos, *r;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape_rec(fn, cmp, 2, (int64_t[]){B, n + 1}, &c2));
    CLT__TRY(clt__narrow_rec(fn, c2, 1, 1, n, &tail));
    CLT__TRY(clt_arange(cmp->dev, CLT_INT64, 0, (double)nnz, 1, &pos));
    CLT__TRY(clt__expand_rec(fn, pos, 2, (int64_t[]){B, nnz}, &pos));
    CLT__TRY(clt_searchsorted(tail, pos, 1, &r));
    CLT__TRY(clt__reshape_rec(fn, r, 1, &total, out));
done:
    return clt__error_as(st, fn);
}

/* The compressed indices [B, n + 1] of the major indices major [B nnz],
 * sorted within each of B batches of nnz: for each k, the number of the
 * batch's entries whose major index is below k. */
static clt_status compress(const char *fn, const clt_tensor *major, int64_t B, int64_t n,
                           clt_tensor **out)
{
    int64_t shape[2] = {B, n + 1}, nnz = B > 0 ? major->shape[0] / B : 0;
    if (nnz == 0)
        return clt__error_in(clt__full(major->dev, CLT_INT64, 2, shape, 0.0, out), fn);
    clt_tensor *m2, *pos;
    clt_status st = CLT_OK;
    CLT__TRY(clt__reshape_rec(fn, major, 2, (int64_t[]){B, nnz}, &m2));
    CLT__TRY(clt_arange(major->dev, CLT_INT64, 0, (double)(n + 1), 1, &pos));
    CLT__TRY(clt__expand_rec(fn, pos, 2, shape, &pos));
    CLT__TRY(clt_searchsorted(m2, pos, 0, out));
done:
    return clt__error_as(st, fn);
}

/* idx [sd, nnz] with its last two rows exchanged. */
static clt_status swap_rows(const char *fn, const clt_tensor *idx, clt_tensor **out)
{
    int sd = (int)idx->shape[0];
    int64_t perm[CLT_MAX_DIMS];
    for (int k = 0; k < sd; k++)
        perm[k] = k;
    perm[sd - 2] = sd - 1;
    perm[sd - 1] = sd - 2;
    clt_tensor *p;
    clt_status st = clt__tensor_from_host_in(fn, idx->dev, CLT_INT64, 1, (int64_t[]){sd}, perm, &p);
    return st != CLT_OK ? st : clt__index_select_rec(fn, idx, 0, p, out);
}

/* torch's rule for batches: the entries [total] of B batches, whose batch
 * (linear) index blin [total] is sorted, are the same number in every
 * batch, *nnz.  Reads the counts back (it synchronises). */
static clt_status equal_batches(const char *fn, const clt_tensor *blin, int64_t B, int64_t *nnz)
{
    int64_t total = blin->shape[0], *host = NULL;
    *nnz = B > 0 ? total / B : 0;
    if (B <= 1)
        return CLT_OK;
    clt_tensor *c;
    clt_status st = CLT_OK;
    if (total % B == 0) {
        host = clt__malloc((size_t)(B + 1) * sizeof *host);
        if (host == NULL)
            return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY,
                              "%s: out of host memory for the batches' counts", fn);
        CLT__TRY(compress(fn, blin, 1, B, &c));
        CLT__TRY(clt_tensor_read(c, host, (size_t)(B + 1) * sizeof *host));
        for (int64_t b = 0; b <= B; b++)
            if (host[b] != b * *nnz)
                break;
            else if (b == B)
                goto done;
    }
    st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                    "%s: Expect the same number of specified elements per batch.", fn);
done:
    free(host);
    return clt__error_as(st, fn);
}

/* s's entries (its coordinates and values; any layout without dense
 * dimensions, those past the last two batch ones) as a CSR or CSC handle,
 * duplicates summed, each batch holding as many (torch's rule), inside the
 * caller's scope.  Synchronises. */
static clt_status to_compressed_in(const char *fn, const clt_sparse *s, clt_layout layout,
                                   clt_sparse **out)
{
    if (s->ndim < 2 || s->sd != s->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a sparse tensor of at least 2 dimensions, all sparse "
                          "(dense dimensions are not supported), but got %d dimensions with %d "
                          "sparse ones",
                          fn, s->ndim, s->sd);
    int nb = s->ndim - 2;
    int64_t B = batch_count(nb, s->shape), nnz;
    /* CSC sorts the transposed coordinates (column-major order) */
    bool csc = layout == CLT_SPARSE_CSC;
    int64_t tshape[CLT_MAX_DIMS];
    memcpy(tshape, s->shape, (size_t)s->ndim * sizeof *tshape);
    tshape[nb] = s->shape[nb + csc];
    tshape[nb + 1] = s->shape[nb + !csc];
    clt_sparse *t = NULL, *c = NULL;
    clt_tensor *idx = s->idx, *major, *lin, *cmp;
    clt_status st = CLT_OK;
    if (csc)
        CLT__TRY(swap_rows(fn, s->idx, &idx));
    CLT__TRY(make(fn, idx, s->val, s->ndim, s->ndim, tshape,
                  csc ? s->layout == CLT_SPARSE_CSC : s->coalesced, &t));
    CLT__TRY(coalesce_in(fn, t, &c));
    if (nb > 0 && B > 0) {
        CLT__TRY(linear_index(fn, c->idx, nb, tshape, &lin));
        CLT__TRY(equal_batches(fn, lin, B, &nnz));
    } else {
        nnz = B > 0 ? c->idx->shape[1] : s->layout != CLT_SPARSE_COO ? s->nnz : 0;
    }
    CLT__TRY(index_row(fn, c->idx, nb, &major));
    CLT__TRY(compress(fn, major, B, tshape[nb], &cmp));
    tshape[nb] += 1; /* cmp [*batch, n + 1] */
    CLT__TRY(clt__reshape_rec(fn, cmp, nb + 1, tshape, &cmp));
    idx = c->idx;
    if (csc)
        CLT__TRY(swap_rows(fn, c->idx, &idx));
    CLT__TRY(make_compressed(fn, layout, cmp, idx, c->val, s->shape, s->ndim, nnz, out));
done:
    clt_sparse_free(t);
    clt_sparse_free(c);
    return clt__error_as(st, fn);
}

/* Checks torch's invariants of the compressed indices c [n + 1] and plain
 * ones p [nnz] of one batch on the host (nminor: the other dimension's
 * size). */
static clt_status check_compressed(const char *fn, bool csc, const int64_t *c, int64_t n,
                                   const int64_t *p, int64_t nnz, int64_t nminor)
{
    const char *cn = csc ? "ccol_indices" : "crow_indices", *pn = csc ? "row_indices" : "col_indices",
               *mn = csc ? "nrows" : "ncols";
    if (c[0] != 0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: `%s[..., 0] == 0` is not satisfied.", fn,
                          cn);
    if (c[n] != nnz)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: `%s[..., -1] == nnz` is not satisfied.",
                          fn, cn);
    for (int64_t i = 0; i < n; i++)
        if (c[i + 1] < c[i] || c[i + 1] - c[i] > nminor)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: `0 <= %s[..., 1:] - %s[..., :-1] <= %s` is not satisfied.", fn,
                              cn, cn, mn);
    for (int64_t i = 0; i < nnz; i++)
        if (p[i] < 0 || p[i] >= nminor)
            return clt__error(CLT_ERR_INDEX_OUT_OF_RANGE, "%s: `0 <= %s < %s` is not satisfied.",
                              fn, pn, mn);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = c[i] + 1; j < c[i + 1]; j++)
            if (p[j] <= p[j - 1])
                return clt__error(CLT_ERR_INVALID_ARGUMENT,
                                  "%s: `%s[..., %s[..., i - 1]:%s[..., i]] for all i = 1, ..., %s "
                                  "are sorted and distinct along the last dimension values` is "
                                  "not satisfied.",
                                  fn, pn, cn, cn, csc ? "ncols" : "nrows");
    return CLT_OK;
}

/* A new handle of a compressed layout and ndim dimensions (ndim - 2 batch
 * ones) over the int64 compressed indices cmp [*batch, n + 1], plain ones
 * [*batch, nnz] and values [*batch, nnz] ([*batch, nnz, R, C] blocked),
 * each retained or viewed (gradients reach values), their coordinates made
 * here (in the calling scope).  shape in elements. */
static clt_status assemble(const char *fn, clt_layout layout, clt_tensor *cmp,
                           const clt_tensor *plain, const clt_tensor *values,
                           const int64_t *shape, int ndim, clt_sparse **out)
{
    bool csc = layout == CLT_SPARSE_CSC || layout == CLT_SPARSE_BSC;
    int nb = ndim - 2;
    int64_t B = batch_count(nb, shape), n = cmp->shape[nb] - 1, nnz = plain->shape[nb];
    int64_t total = B * nnz;
    clt_tensor *maj, *pl, *rows, *idx, *blin, *bidx, *val;
    clt_status st = CLT_OK;
    CLT__TRY(expand_compressed(fn, cmp, B, n, nnz, &maj));
    CLT__TRY(clt__reshape_rec(fn, plain, 1, &total, &pl));
    const clt_tensor *two[2] = {csc ? pl : maj, csc ? maj : pl};
    CLT__TRY(clt__stack_rec(fn, two, 2, 0, &idx));
    if (nb > 0) { /* the batch coordinates of each entry, first */
        CLT__TRY(clt_arange(cmp->dev, CLT_INT64, 0, (double)B, 1, &blin));
        CLT__TRY(clt__reshape_rec(fn, blin, 2, (int64_t[]){B, 1}, &blin));
        CLT__TRY(clt__expand_rec(fn, blin, 2, (int64_t[]){B, nnz}, &blin));
        CLT__TRY(clt__reshape_rec(fn, blin, 1, &total, &blin));
        CLT__TRY(unravel(fn, blin, nb, shape, &rows));
        const clt_tensor *both[2] = {rows, idx};
        CLT__TRY(clt__cat_rec(fn, both, 2, 0, &idx));
    }
    if (layout == CLT_SPARSE_BSR || layout == CLT_SPARSE_BSC) {
        bidx = idx;
        CLT__TRY(make_blocked(fn, layout, cmp, bidx, (clt_tensor *)values, shape, ndim, out));
    } else {
        CLT__TRY(clt__reshape_rec(fn, values, 1, &total, &val));
        CLT__TRY(make_compressed(fn, layout, cmp, idx, val, shape, ndim, nnz, out));
    }
done:
    return clt__error_as(st, fn);
}

/* torch.sparse_csr_tensor / sparse_csc_tensor / sparse_bsr_tensor /
 * sparse_bsc_tensor: the checks and the invariants on the blocks (an
 * element of a CSR or CSC matrix being a 1 x 1 block), batch by batch. */
static clt_status compressed_tensor(const char *fn, clt_layout layout,
                                    const clt_tensor *compressed_indices,
                                    const clt_tensor *plain_indices, const clt_tensor *values,
                                    const int64_t *size, int check_invariants, clt_sparse **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(compressed_indices, fn);
    CLT__REQUIRE_ARG(plain_indices, fn);
    CLT__REQUIRE_ARG(values, fn);
    const clt_tensor *ci = compressed_indices, *pi = plain_indices;
    bool csc = layout == CLT_SPARSE_CSC || layout == CLT_SPARSE_BSC;
    bool blk = layout == CLT_SPARSE_BSR || layout == CLT_SPARSE_BSC;
    int major = csc, minor = !csc;
    const char *cn = csc ? "ccol_indices" : "crow_indices", *pn = csc ? "row_indices" : "col_indices";
    char b1[96], b2[96], b3[96], b4[96];
    if (ci->ndim != pi->ndim)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s and %s dimensionalities must be equal but got %d and %d, "
                          "respectively",
                          fn, cn, pn, ci->ndim, pi->ndim);
    if (ci->ndim < 1 || ci->ndim + 1 > CLT_MAX_DIMS)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s must have 1 to %d dimensions (its batch dimensions first), but "
                          "got %s",
                          fn, cn, CLT_MAX_DIMS - 1,
                          clt__shape_str(b1, sizeof b1, ci->ndim, ci->shape));
    int nb = ci->ndim - 1, ndim = nb + 2;
    if (ci->dtype != pi->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: %s and %s must have the same dtype, but got %s and %s, "
                          "respectively",
                          fn, cn, pn, clt_dtype_name(ci->dtype), clt_dtype_name(pi->dtype));
    if (ci->dtype != CLT_INT64 && ci->dtype != CLT_INT32)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: %s and %s dtype must be Int or Long, but got %s", fn, cn, pn,
                          clt_dtype_name(ci->dtype));
    clt_status st = clt__same_device(ci, pi, fn);
    if (st != CLT_OK || (st = clt__same_device(ci, values, fn)) != CLT_OK)
        return st;
    if (values->ndim < nb + (blk ? 3 : 1))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: values must have dimensionality > sum of batch and block "
                          "dimensionalities (=%d + %d) but got %d",
                          fn, nb, blk ? 2 : 0, values->ndim);
    if (values->ndim != nb + (blk ? 3 : 1))
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: values must be %s (hybrid dense dimensions are not supported), "
                          "but got %s",
                          fn, blk ? "[*batch, nnz, blocksize[0], blocksize[1]]" : "[*batch, nnz]",
                          clt__shape_str(b1, sizeof b1, values->ndim, values->shape));
    const int64_t *want = size != NULL ? size : ci->shape;
    if (memcmp(ci->shape, want, (size_t)nb * sizeof *want) != 0 ||
        memcmp(pi->shape, want, (size_t)nb * sizeof *want) != 0 ||
        memcmp(values->shape, want, (size_t)nb * sizeof *want) != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: all batch dimensions of %s (=%s), %s (=%s), and values (=%s) must "
                          "be equal to tensor batch dimensions (=%s)",
                          fn, cn, clt__shape_str(b1, sizeof b1, nb, ci->shape), pn,
                          clt__shape_str(b2, sizeof b2, nb, pi->shape),
                          clt__shape_str(b3, sizeof b3, nb, values->shape),
                          clt__shape_str(b4, sizeof b4, nb, want));
    /* shape: in blocks until the end */
    int64_t nnz = values->shape[nb], shape[CLT_MAX_DIMS], block[2] = {1, 1};
    int64_t B = batch_count(nb, want);
    memcpy(shape, want, (size_t)nb * sizeof *shape);
    int64_t *sh = shape + nb;
    if (blk) {
        block[0] = values->shape[nb + 1];
        block[1] = values->shape[nb + 2];
        if (block[0] < 1 || block[1] < 1)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: blocksize (values.shape[-2:] = [%lld, %lld]) must be positive",
                              fn, (long long)block[0], (long long)block[1]);
    }
    if (pi->shape[nb] != nnz)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s.shape[-1] must be equal to nnz (=%lld) as defined by "
                          "values.shape[%d], but got %lld",
                          fn, pn, (long long)nnz, nb, (long long)pi->shape[nb]);
    if (size != NULL) {
        if ((st = clt__check_shape(ndim, size, fn)) != CLT_OK)
            return st;
        for (int k = 0; k < 2; k++)
            if (size[nb + k] % block[k] != 0)
                return clt__error(CLT_ERR_SHAPE_MISMATCH,
                                  "%s: tensor shape[%d] (=%lld) must be divisible with "
                                  "blocksize[%d] (=%lld) as defined by values shape",
                                  fn, nb + k, (long long)size[nb + k], k, (long long)block[k]);
        sh[0] = size[nb] / block[0];
        sh[1] = size[nb + 1] / block[1];
    } else {
        sh[major] = ci->shape[nb] > 0 ? ci->shape[nb] - 1 : 0;
        sh[minor] = 0;
    }
    if (ci->shape[nb] - 1 != sh[major]) /* not shape + 1: a size of INT64_MAX */
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s.shape[-1] must be equal to the number of %s + 1 (=%llu), but got "
                          "%lld",
                          fn, cn, csc ? "columns" : "rows", (unsigned long long)sh[major] + 1,
                          (long long)ci->shape[nb]);

    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    clt_tensor *cmp = (clt_tensor *)ci, *plain = (clt_tensor *)pi;
    int64_t *host = NULL, n = sh[major];
    if (ci->dtype != CLT_INT64) {
        CLT__TRY(clt_to_dtype(ci, CLT_INT64, &cmp));
        CLT__TRY(clt_to_dtype(pi, CLT_INT64, &plain));
    }
    if (check_invariants || size == NULL) {
        size_t nc = (size_t)B * (size_t)(n + 1), count = nc + (size_t)B * (size_t)nnz;
        host = clt__malloc(count ? count * sizeof *host : 1);
        if (host == NULL) {
            st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory for the indices",
                            fn);
            goto done;
        }
        CLT__TRY(clt_tensor_read(cmp, host, nc * sizeof *host));
        if (count > nc)
            CLT__TRY(clt_tensor_read(plain, host + nc, (count - nc) * sizeof *host));
        if (size == NULL)
            for (size_t i = nc; i < count; i++)
                if (host[i] + 1 > sh[minor])
                    sh[minor] = host[i] + 1;
        for (int64_t b = 0; b < B; b++)
            CLT__TRY(check_compressed(fn, csc, host + (size_t)b * (size_t)(n + 1), n,
                                      host + nc + (size_t)b * (size_t)nnz, nnz, sh[minor]));
    }
    if (blk) {
        if ((double)sh[0] * (double)block[0] > (double)INT64_MAX ||
            (double)sh[1] * (double)block[1] > (double)INT64_MAX) {
            st = clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: the size in elements passes int64", fn);
            goto done;
        }
        sh[0] *= block[0];
        sh[1] *= block[1];
    }
    CLT__TRY(check_linear_range(ndim, shape, fn));
    CLT__TRY(assemble(fn, layout, cmp, plain, values, shape, ndim, &made));
done:
    free(host);
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_sparse_csr_tensor(const clt_tensor *crow_indices, const clt_tensor *col_indices,
                                 const clt_tensor *values, const int64_t *size,
                                 int check_invariants, clt_sparse **out)
{
    return compressed_tensor("clt_sparse_csr_tensor", CLT_SPARSE_CSR, crow_indices, col_indices,
                             values, size, check_invariants, out);
}

clt_status clt_sparse_csc_tensor(const clt_tensor *ccol_indices, const clt_tensor *row_indices,
                                 const clt_tensor *values, const int64_t *size,
                                 int check_invariants, clt_sparse **out)
{
    return compressed_tensor("clt_sparse_csc_tensor", CLT_SPARSE_CSC, ccol_indices, row_indices,
                             values, size, check_invariants, out);
}

clt_status clt_sparse_bsr_tensor(const clt_tensor *crow_indices, const clt_tensor *col_indices,
                                 const clt_tensor *values, const int64_t *size,
                                 int check_invariants, clt_sparse **out)
{
    return compressed_tensor("clt_sparse_bsr_tensor", CLT_SPARSE_BSR, crow_indices, col_indices,
                             values, size, check_invariants, out);
}

clt_status clt_sparse_bsc_tensor(const clt_tensor *ccol_indices, const clt_tensor *row_indices,
                                 const clt_tensor *values, const int64_t *size,
                                 int check_invariants, clt_sparse **out)
{
    return compressed_tensor("clt_sparse_bsc_tensor", CLT_SPARSE_BSC, ccol_indices, row_indices,
                             values, size, check_invariants, out);
}

/* The compressed indices (plain false: the plain ones) of a handle of
 * layout want, named name. */
static clt_status compressed_part(const char *fn, const clt_sparse *s, clt_layout want,
                                  const char *name, bool compressed, clt_tensor **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    /* BSR's indices are CSR's, BSC's CSC's */
    bool rowwise = want == CLT_SPARSE_CSR || want == CLT_SPARSE_BSR;
    clt_layout also = rowwise ? CLT_SPARSE_BSR : CLT_SPARSE_BSC;
    if (s->layout != want && s->layout != also)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: \"%s\" expected sparse %s compressed tensor layout but got %s", fn,
                          name, rowwise ? "row" : "column", layout_name(s->layout));
    if (compressed)
        return clt__view_rec(fn, s->cmp, s->cmp->ndim, s->cmp->shape, out);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t shape[CLT_MAX_DIMS];
    memcpy(shape, s->shape, (size_t)s->nbatch * sizeof *shape);
    shape[s->nbatch] = s->nnz;
    clt_tensor *r;
    CLT__TRY(index_row(fn, blocked(s) ? s->bidx : s->idx,
                       s->nbatch + (rowwise ? 1 : 0), &r));
    CLT__TRY(clt__reshape_rec(fn, r, s->nbatch + 1, shape, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_sparse_crow_indices(const clt_sparse *s, clt_tensor **out)
{
    return compressed_part("clt_sparse_crow_indices", s, CLT_SPARSE_CSR, "crow_indices", true, out);
}

clt_status clt_sparse_col_indices(const clt_sparse *s, clt_tensor **out)
{
    return compressed_part("clt_sparse_col_indices", s, CLT_SPARSE_CSR, "col_indices", false, out);
}

clt_status clt_sparse_ccol_indices(const clt_sparse *s, clt_tensor **out)
{
    return compressed_part("clt_sparse_ccol_indices", s, CLT_SPARSE_CSC, "ccol_indices", true, out);
}

clt_status clt_sparse_row_indices(const clt_sparse *s, clt_tensor **out)
{
    return compressed_part("clt_sparse_row_indices", s, CLT_SPARSE_CSC, "row_indices", false, out);
}

/* The dense tensor that the conversions to the compressed and blocked
 * layouts take: a matrix or a batch of them, the batch not empty (torch's
 * rule). */
static clt_status need_matrix(const clt_tensor *t, const char *what, const char *fn)
{
    if (t->ndim < 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: expected a tensor of at least 2 dimensions (batch dimensions "
                          "first; dense dimensions are not supported), but got %d dimensions",
                          fn, t->ndim);
    if (batch_count(t->ndim - 2, t->shape) == 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: %s: Expected product of batch dimensions to be non-zero.", fn, what);
    return CLT_OK;
}

static clt_status tensor_to_compressed(const char *fn, const clt_tensor *t, clt_layout layout,
                                       clt_sparse **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = need_matrix(t, layout == CLT_SPARSE_CSR ? "to_sparse_csr" : "to_sparse_csc",
                                fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *coo = NULL, *made = NULL;
    CLT__TRY(clt_tensor_to_sparse(t, t->ndim, &coo));
    CLT__TRY(to_compressed_in(fn, coo, layout, &made));
done:
    clt_sparse_free(coo);
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_tensor_to_sparse_csr(const clt_tensor *t, clt_sparse **out)
{
    return tensor_to_compressed("clt_tensor_to_sparse_csr", t, CLT_SPARSE_CSR, out);
}

clt_status clt_tensor_to_sparse_csc(const clt_tensor *t, clt_sparse **out)
{
    return tensor_to_compressed("clt_tensor_to_sparse_csc", t, CLT_SPARSE_CSC, out);
}

/* t.to_sparse_bsr(blocksize) / to_sparse_bsc(blocksize) of a dense t
 * [*batch, H, W]: the blocks holding a nonzero, in row-major (BSR) or
 * column-major (BSC) block order, batch by batch, as many in each. */
static clt_status tensor_to_blocked(const char *fn, const clt_tensor *t, const int64_t *blocksize,
                                    clt_layout layout, clt_sparse **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    CLT__REQUIRE_ARG(blocksize, fn);
    bool csc = layout == CLT_SPARSE_BSC;
    clt_status st = need_matrix(t, csc ? "to_sparse_bsc" : "to_sparse_bsr", fn);
    if (st != CLT_OK)
        return st;
    int nb = t->ndim - 2;
    int64_t R = blocksize[0], C = blocksize[1], H = t->shape[nb], W = t->shape[nb + 1];
    if (R < 1 || C < 1)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: blocksize must be positive, but got [%lld, %lld]", fn, (long long)R,
                          (long long)C);
    if (H % R != 0 || W % C != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: tensor shape [%lld, %lld] must be divisible by blocksize [%lld, "
                          "%lld]",
                          fn, (long long)H, (long long)W, (long long)R, (long long)C);
    if ((st = check_linear_range(t->ndim, t->shape, fn)) != CLT_OK ||
        (st = clt_scope_begin()) != CLT_OK)
        return st;
    int64_t B = batch_count(nb, t->shape), nbr = H / R, nbc = W / C;
    int64_t nmaj = csc ? nbc : nbr, nmin = csc ? nbr : nbc, per = nmaj * nmin, nnzb;
    clt_sparse *made = NULL;
    clt_tensor *t5, *pm, *flat, *f2, *mask, *any, *nz, *lin, *bval, *bat, *rest, *maj, *mnr, *cmp,
        *bidx, *brows;
    int64_t vshape[CLT_MAX_DIMS];
    CLT__TRY(clt__reshape_rec(fn, t, 5, (int64_t[]){B, nbr, R, nbc, C}, &t5));
    CLT__TRY(clt__permute_rec(fn, t5, 5, csc ? (int[]){0, 3, 1, 2, 4} : (int[]){0, 1, 3, 2, 4},
                              &pm));
    CLT__TRY(clt__reshape_rec(fn, pm, 3, (int64_t[]){B * per, R, C}, &flat));
    CLT__TRY(clt__reshape_rec(fn, flat, 2, (int64_t[]){B * per, R * C}, &f2));
    CLT__TRY(clt_ne_scalar(f2, 0.0, &mask));
    CLT__TRY(clt_any_dim(mask, 1, 0, &any));
    CLT__TRY(clt_nonzero(any, &nz));
    CLT__TRY(clt__reshape_rec(fn, nz, 1, (int64_t[]){nz->shape[0]}, &lin));
    CLT__TRY(clt_floor_divide_scalar(lin, (double)(per > 0 ? per : 1), &bat));
    CLT__TRY(clt_remainder_scalar(lin, (double)(per > 0 ? per : 1), &rest));
    CLT__TRY(equal_batches(fn, bat, B, &nnzb));
    CLT__TRY(clt__index_select_rec(fn, flat, 0, lin, &bval));
    memcpy(vshape, t->shape, (size_t)nb * sizeof *vshape);
    vshape[nb] = nnzb;
    vshape[nb + 1] = R;
    vshape[nb + 2] = C;
    CLT__TRY(clt__reshape_rec(fn, bval, nb + 3, vshape, &bval));
    CLT__TRY(clt_floor_divide_scalar(rest, (double)(nmin > 0 ? nmin : 1), &maj));
    CLT__TRY(clt_remainder_scalar(rest, (double)(nmin > 0 ? nmin : 1), &mnr));
    CLT__TRY(compress(fn, maj, B, nmaj, &cmp));
    vshape[nb] = nmaj + 1;
    CLT__TRY(clt__reshape_rec(fn, cmp, nb + 1, vshape, &cmp));
    const clt_tensor *rows[2] = {csc ? mnr : maj, csc ? maj : mnr};
    CLT__TRY(clt__stack_rec(fn, rows, 2, 0, &bidx));
    if (nb > 0) {
        CLT__TRY(unravel(fn, bat, nb, t->shape, &brows));
        const clt_tensor *both[2] = {brows, bidx};
        CLT__TRY(clt__cat_rec(fn, both, 2, 0, &bidx));
    }
    CLT__TRY(make_blocked(fn, layout, cmp, bidx, bval, t->shape, t->ndim, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_tensor_to_sparse_bsr(const clt_tensor *t, const int64_t *blocksize,
                                    clt_sparse **out)
{
    return tensor_to_blocked("clt_tensor_to_sparse_bsr", t, blocksize, CLT_SPARSE_BSR, out);
}

clt_status clt_tensor_to_sparse_bsc(const clt_tensor *t, const int64_t *blocksize,
                                    clt_sparse **out)
{
    return tensor_to_blocked("clt_tensor_to_sparse_bsc", t, blocksize, CLT_SPARSE_BSC, out);
}

static clt_status sparse_to_layout(const char *fn, const clt_sparse *s, clt_layout layout,
                                   clt_sparse **out)
{
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK || (st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    char b1[96];
    if (s->layout == layout)
        st = same_handle(fn, s, &made);
    else if (s->layout == CLT_SPARSE_COO && s->ndim != 2)
        st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                        "%s: Only 2D tensors can be converted to the %s layout but got shape: %s",
                        fn, layout_name(layout), clt__shape_str(b1, sizeof b1, s->ndim, s->shape));
    else if (layout == CLT_SPARSE_COO && s->nbatch > 0)
        st = clt__error(CLT_ERR_INVALID_ARGUMENT,
                        "%s: a batched %s tensor cannot be converted to the Sparse layout (torch "
                        "1.13: \"%s is supposed to be a vector\")",
                        fn, layout_name(s->layout),
                        s->layout == CLT_SPARSE_CSR || s->layout == CLT_SPARSE_BSR
                            ? "crow_indices"
                            : "ccol_indices");
    else if (layout == CLT_SPARSE_COO) /* the compressed order: sorted for CSR only */
        st = make(fn, s->idx, s->val, 2, 2, s->shape, s->layout == CLT_SPARSE_CSR, &made);
    else
        st = to_compressed_in(fn, s, layout, &made);
    return finish(st, out, made);
}

clt_status clt_sparse_to_sparse_csr(const clt_sparse *s, clt_sparse **out)
{
    return sparse_to_layout("clt_sparse_to_sparse_csr", s, CLT_SPARSE_CSR, out);
}

clt_status clt_sparse_to_sparse_csc(const clt_sparse *s, clt_sparse **out)
{
    return sparse_to_layout("clt_sparse_to_sparse_csc", s, CLT_SPARSE_CSC, out);
}

clt_status clt_sparse_to_sparse_coo(const clt_sparse *s, clt_sparse **out)
{
    return sparse_to_layout("clt_sparse_to_sparse_coo", s, CLT_SPARSE_COO, out);
}

/* ---- products on compressed and COO matrices, masks --------------------------------------- */

clt_status clt_sparse_mv(const clt_sparse *s, const clt_tensor *v, clt_tensor **out)
{
    static const char fn[] = "clt_sparse_mv";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(s, "s", fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(v, fn);
    if (s->ndim != 2 || v->ndim != 1)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: mv: two tensor dim should be 2 and 1, but got %d and %d", fn,
                          s->ndim, v->ndim);
    if (v->shape[0] != s->shape[1])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: mv: expected self.size(-1) == vec.size(-1), but got %lld and %lld",
                          fn, (long long)s->shape[1], (long long)v->shape[0]);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_tensor *col, *p;
    CLT__TRY(clt__reshape_rec(fn, v, 2, (int64_t[]){v->shape[0], 1}, &col));
    CLT__TRY(mm_in(fn, s, col, &p));
    CLT__TRY(clt__reshape_rec(fn, p, 1, (int64_t[]){s->shape[0]}, out));
done:
    return clt__scope_finish(st, out);
}

clt_status clt_sparse_sampled_addmm(const clt_sparse *input, const clt_tensor *mat1,
                                    const clt_tensor *mat2, double beta, double alpha,
                                    clt_sparse **out)
{
    static const char fn[] = "clt_sparse_sampled_addmm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(input, "input", fn);
    if (st != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(mat1, fn);
    CLT__REQUIRE_ARG(mat2, fn);
    if (input->layout != CLT_SPARSE_CSR)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: sampled_addmm: Expected result to have sparse csr layout, but got "
                          "%s",
                          fn, layout_name(input->layout));
    if ((st = refuse_batched(input, "self", fn)) != CLT_OK)
        return st;
    const clt_tensor *m[2] = {mat1, mat2};
    for (int k = 0; k < 2; k++)
        if (m[k]->ndim != 2)
            return clt__error(CLT_ERR_SHAPE_MISMATCH,
                              "%s: sampled_addmm: Expected mat%d to be a matrix, got %d-D tensor",
                              fn, k + 1, m[k]->ndim);
    if ((st = clt__same_device(mat1, input->val, fn)) != CLT_OK ||
        (st = clt__same_device(mat2, input->val, fn)) != CLT_OK)
        return st;
    if (mat1->dtype != mat2->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: sampled_addmm: Expected mat1 and mat2 to have the same dtype, but "
                          "got %s and %s",
                          fn, clt_dtype_name(mat1->dtype), clt_dtype_name(mat2->dtype));
    if (mat1->dtype != input->val->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH,
                          "%s: sampled_addmm: Expected mat1 and self to have the same dtype, but "
                          "got %s and %s",
                          fn, clt_dtype_name(mat1->dtype), clt_dtype_name(input->val->dtype));
    if ((st = clt__check_floating(input->val, "sampled_addmm: self", fn)) != CLT_OK)
        return st;
    if (mat1->shape[1] != mat2->shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sampled_addmm: mat1 and mat2 shapes cannot be multiplied (%lldx%lld "
                          "and %lldx%lld)",
                          fn, (long long)mat1->shape[0], (long long)mat1->shape[1],
                          (long long)mat2->shape[0], (long long)mat2->shape[1]);
    if (input->shape[0] != mat1->shape[0])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sampled_addmm: self.shape[-2] must match mat1.shape[-2]", fn);
    if (input->shape[1] != mat2->shape[1])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sampled_addmm: self.shape[-1] must match mat2.shape[-1]", fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    clt_tensor *rows, *cols, *a, *bt, *b, *p, *d, *bv, *v;
    /* only the sampled dot products: row r of mat1 with column c of mat2 */
    CLT__TRY(index_row(fn, input->idx, 0, &rows));
    CLT__TRY(index_row(fn, input->idx, 1, &cols));
    CLT__TRY(clt__index_select_rec(fn, mat1, 0, rows, &a));
    CLT__TRY(clt__transpose_rec(fn, mat2, 0, 1, &bt));
    CLT__TRY(clt__index_select_rec(fn, bt, 0, cols, &b));
    CLT__TRY(clt__mul_rec(fn, a, b, &p));
    CLT__TRY(clt__sum_dim_rec(fn, p, 1, 0, &d));
    if (alpha != 1)
        CLT__TRY(clt__mul_scalar_rec(fn, d, alpha, &d));
    bv = input->val;
    if (beta != 1)
        CLT__TRY(clt__mul_scalar_rec(fn, input->val, beta, &bv));
    CLT__TRY(clt__add_rec(fn, bv, d, &v));
    CLT__TRY(remake(fn, input, input->cmp, input->idx, v, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_sparse_hspmm(const clt_sparse *a, const clt_tensor *b, clt_sparse **out)
{
    static const char fn[] = "clt_sparse_hspmm";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    clt_status st = need(a, "a", fn);
    if (st != CLT_OK || (st = need_coo(a, fn)) != CLT_OK)
        return st;
    CLT__REQUIRE_ARG(b, fn);
    if (a->ndim != 2 || a->sd != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: hspmm: Argument #2: matrices expected, got %dD tensor", fn,
                          a->ndim != 2 ? a->ndim : a->sd);
    if (b->ndim != 2)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: hspmm: Argument #3: matrices expected, got %dD tensor", fn, b->ndim);
    if ((st = clt__same_device(b, a->val, fn)) != CLT_OK)
        return st;
    if (b->dtype != a->val->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: expected scalar type %s but found %s", fn,
                          clt_dtype_name(a->val->dtype), clt_dtype_name(b->dtype));
    if (b->shape[0] != a->shape[1])
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: hspmm: Argument #3: Expected dim 0 size %lld, got %lld", fn,
                          (long long)a->shape[1], (long long)b->shape[0]);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    clt_tensor *p, *rows, *u = NULL, *vals, *idx;
    int64_t zero = 0;
    CLT__TRY(mm_in(fn, a, b, &p));
    if (a->idx->shape[1] == 0) {
        CLT__TRY(clt__error_in(clt__full(a->val->dev, CLT_INT64, 1, &zero, 0.0, &u), fn));
    } else {
        CLT__TRY(index_row(fn, a->idx, 0, &rows));
        CLT__TRY(clt_unique(rows, &u, NULL, NULL));
    }
    CLT__TRY(clt__index_select_rec(fn, p, 0, u, &vals));
    CLT__TRY(clt__reshape_rec(fn, u, 2, (int64_t[]){1, u->shape[0]}, &idx));
    CLT__TRY(make(fn, idx, vals, 2, 1, (int64_t[]){a->shape[0], b->shape[1]}, false, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

clt_status clt_tensor_sparse_mask(const clt_tensor *t, const clt_sparse *mask, clt_sparse **out)
{
    static const char fn[] = "clt_tensor_sparse_mask";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    clt_status st = need(mask, "mask", fn);
    if (st != CLT_OK || (st = clt__same_device(t, mask->val, fn)) != CLT_OK)
        return st;
    char b1[96], b2[96];
    if (t->ndim != mask->ndim ||
        memcmp(t->shape, mask->shape, (size_t)mask->ndim * sizeof *mask->shape) != 0)
        return clt__error(CLT_ERR_SHAPE_MISMATCH,
                          "%s: sparse_mask: operands have incompatible sizes; self has size %s "
                          "but mask has size %s",
                          fn, clt__shape_str(b1, sizeof b1, t->ndim, t->shape),
                          clt__shape_str(b2, sizeof b2, mask->ndim, mask->shape));
    if (mask->layout != CLT_SPARSE_COO && mask->layout != CLT_SPARSE_CSR)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: sparse_mask_sparse_csr expects mask to be sparse csr, not %s", fn,
                          layout_name(mask->layout));
    if ((st = refuse_batched(mask, "self", fn)) != CLT_OK)
        return st;
    if (mask->layout == CLT_SPARSE_COO && !mask->coalesced)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: sparse_mask: mask is uncoalesced", fn);
    if ((st = clt_scope_begin()) != CLT_OK)
        return st;
    clt_sparse *made = NULL;
    int dd = dense_dim(mask);
    int64_t fshape[CLT_MAX_DIMS];
    fshape[0] = 1;
    for (int k = 0; k < mask->sd; k++)
        fshape[0] *= mask->shape[k];
    memcpy(fshape + 1, mask->shape + mask->sd, (size_t)dd * sizeof *fshape);
    clt_tensor *flat, *lin, *vals;
    CLT__TRY(clt__reshape_rec(fn, t, dd + 1, fshape, &flat));
    CLT__TRY(linear_index(fn, mask->idx, mask->sd, mask->shape, &lin));
    CLT__TRY(clt__index_select_rec(fn, flat, 0, lin, &vals));
    CLT__TRY(remake(fn, mask, mask->cmp, mask->idx, vals, &made));
done:
    return finish(clt__error_as(st, fn), out, made);
}

/* ---- sparse gradients ------------------------------------------------------------ */

clt_status clt_grad_sparse(const clt_tensor *t, clt_sparse **out)
{
    static const char fn[] = "clt_grad_sparse";
    CLT__REQUIRE_ARG(out, fn);
    *out = NULL;
    CLT__REQUIRE_ARG(t, fn);
    if (!clt__grad_is_sparse(t))
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: the tensor's gradient is %s, not sparse (read it with clt_grad)",
                          fn, clt__grad_of(t) ? "dense" : "not defined");
    const clt_tensor *rows, *values;
    clt__sparse_grad_of(t, &rows, &values);
    clt_status st = clt_sparse_coo_tensor(rows, values, t->shape, t->ndim, 0, out);
    return st == CLT_OK ? clt__ok() : clt__error_in(st, fn);
}
