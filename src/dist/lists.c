/* lists.c: the collectives over lists of tensors and chunks of one: reduce,
 * gather, scatter, reduce_scatter (of a list or a tensor),
 * all_gather_into_tensor, all_to_all and all_to_all_single, on the ring. */
#include <stdio.h>
#include <stdlib.h>

#include "dist/dist.h"

/* ---- local checks ------------------------------------------------------------------ */

static void shape_str(char *s, size_t cap, int nd, const int64_t *shape)
{
    size_t k = (size_t)snprintf(s, cap, "[");
    for (int d = 0; d < nd && k < cap; d++)
        k += (size_t)snprintf(s + k, cap - k, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (k < cap)
        snprintf(s + k, cap - k, "]");
}

/* x, entry k of the list called what, has h's dtype and shape (and may be
 * written, when writable). */
static clt_status check_like(const clt_tensor *x, const clt__dist_hdr *h, bool writable,
                             const char *what, size_t k, const char *fn)
{
    if (x == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s[%zu] is NULL", fn, what, k);
    if (clt_tensor_dtype(x) != (clt_dtype)h->dtype)
        return clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: %s[%zu] is %s, the tensor %s", fn, what,
                          k, clt_dtype_name(clt_tensor_dtype(x)),
                          clt_dtype_name((clt_dtype)h->dtype));
    if (clt_tensor_ndim(x) != h->ndim ||
        memcmp(clt_tensor_shape(x), h->shape, sizeof(int64_t) * (size_t)h->ndim) != 0) {
        char a[256], b[256];
        shape_str(a, sizeof a, clt_tensor_ndim(x), clt_tensor_shape(x));
        shape_str(b, sizeof b, (int)h->ndim, h->shape);
        return clt__error(CLT_ERR_SHAPE_MISMATCH, "%s: %s[%zu] has shape %s, the tensor %s", fn,
                          what, k, a, b);
    }
    return writable ? clt__dist_check_writable(x, fn) : CLT_OK;
}

/* A list of n tensors where the world size is wanted. */
static clt_status check_list(const clt_process_group *pg, const void *list, size_t n,
                             const char *what, const char *fn)
{
    if (list == NULL)
        return clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn, what);
    if (n != (size_t)pg->size)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s holds %zu tensors; it must hold world_size (%d)", fn, what,
                          n, pg->size);
    return CLT_OK;
}

static clt_status check_rank(const clt_process_group *pg, int r, const char *what,
                             const char *fn)
{
    if (r < 0 || r >= pg->size)
        return clt__error(CLT_ERR_INVALID_ARGUMENT, "%s: %s %d outside [0, %d)", fn, what, r,
                          pg->size);
    return CLT_OK;
}

/* big is small's shape with dim 0 times w (concatenated) or [w, ...small]
 * (stacked). */
static bool concat_or_stack(const clt_tensor *big, const clt__dist_hdr *small, int w)
{
    int nd = clt_tensor_ndim(big);
    const int64_t *s = clt_tensor_shape(big);
    if (nd == small->ndim + 1 && s[0] == w &&
        memcmp(s + 1, small->shape, sizeof(int64_t) * (size_t)small->ndim) == 0)
        return true;
    return nd == small->ndim && nd >= 1 && s[0] == small->shape[0] * w &&
           memcmp(s + 1, small->shape + 1, sizeof(int64_t) * (size_t)(nd - 1)) == 0;
}

static clt_status not_concat_or_stack(const clt_tensor *big, const char *big_name,
                                      const clt__dist_hdr *small, const char *small_name, int w,
                                      const char *fn)
{
    char a[256], b[256];
    shape_str(a, sizeof a, clt_tensor_ndim(big), clt_tensor_shape(big));
    shape_str(b, sizeof b, (int)small->ndim, small->shape);
    return clt__error(CLT_ERR_SHAPE_MISMATCH,
                      "%s: %s has shape %s; with %s of shape %s and world_size %d it must be "
                      "their concatenation or stack along dim 0",
                      fn, big_name, a, small_name, b, w);
}

/* ---- reduce, gather, scatter ------------------------------------------------------------ */

clt_status clt_reduce(clt_process_group *pg, clt_tensor *t, int dst, clt_reduce_op op)
{
    static const char fn[] = "clt_reduce";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_REDUCE, 0, 0, dst, 0, {0}, (int64_t)op};
    unsigned char *buf = NULL, *tmp = NULL;
    size_t n = 0;
    clt_status local = check_rank(pg, dst, "dst", fn);
    if (local == CLT_OK)
        local = clt__dist_check_op(t, op, fn);
    if (local == CLT_OK)
        local = clt__dist_stage_in(t, pg->rank == dst, 1, 0, 0, &h, &buf, fn);
    if (local == CLT_OK) {
        n = (size_t)clt_tensor_numel(t);
        tmp = clt__malloc(clt__dist_reduce_tmp_bytes(pg, n, clt_dtype_size(clt_tensor_dtype(t))));
        if (tmp == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    if (pg->size > 1) {
        CLT__TRY(clt__dist_ring_all_reduce(pg, buf, n, (clt_dtype)h.dtype, op, tmp, fn));
        if (pg->rank == dst)
            CLT__TRY(clt__dist_stage_out(t, buf, clt_tensor_nbytes(t), fn));
    }
    st = clt__ok();
done:
    free(buf);
    free(tmp);
    return st;
}

clt_status clt_dist_gather(clt_process_group *pg, const clt_tensor *t, int dst,
                           clt_tensor *const *gather_list, size_t n)
{
    static const char fn[] = "clt_dist_gather";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_GATHER, 0, 0, dst, 0, {0}, 0};
    unsigned char *buf = NULL;
    size_t w = (size_t)pg->size;
    clt_status local = check_rank(pg, dst, "dst", fn);
    if (local == CLT_OK && pg->rank == dst)
        local = check_list(pg, gather_list, n, "gather_list", fn);
    else if (local == CLT_OK && (gather_list != NULL || n != 0))
        local = clt__error(CLT_ERR_INVALID_ARGUMENT,
                           "%s: gather_list must not be given on rank %d, which is not the "
                           "destination (rank %d)",
                           fn, pg->rank, dst);
    if (local == CLT_OK)
        local = clt__dist_stage_in(t, false, w, pg->rank, 0, &h, &buf, fn);
    for (size_t k = 0; local == CLT_OK && pg->rank == dst && k < w; k++)
        local = check_like(gather_list[k], &h, true, "gather_list", k, fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    size_t nb = clt_tensor_nbytes(t);
    CLT__TRY(clt__dist_ring_gather(pg, buf, (size_t)clt_tensor_numel(t) * w,
                                   clt_dtype_size((clt_dtype)h.dtype), pg->rank, fn));
    for (size_t k = 0; pg->rank == dst && k < w; k++)
        CLT__TRY(clt__dist_stage_out(gather_list[k], buf + k * nb, nb, fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

clt_status clt_dist_scatter(clt_process_group *pg, clt_tensor *out,
                            const clt_tensor *const *scatter_list, size_t n, int src)
{
    static const char fn[] = "clt_dist_scatter";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_SCATTER, 0, 0, src, 0, {0}, 0};
    unsigned char *buf = NULL;
    size_t w = (size_t)pg->size, nb = 0;
    clt_status local = check_rank(pg, src, "src", fn);
    if (local == CLT_OK && pg->rank == src)
        local = check_list(pg, scatter_list, n, "scatter_list", fn);
    else if (local == CLT_OK && (scatter_list != NULL || n != 0))
        local = clt__error(CLT_ERR_INVALID_ARGUMENT,
                           "%s: scatter_list must not be given on rank %d, which is not the "
                           "source (rank %d)",
                           fn, pg->rank, src);
    if (local == CLT_OK)
        local = clt__dist_stage_in(out, true, w, -1, 0, &h, &buf, fn);
    if (local == CLT_OK)
        nb = clt_tensor_nbytes(out);
    for (size_t k = 0; local == CLT_OK && pg->rank == src && k < w; k++) {
        local = check_like(scatter_list[k], &h, false, "scatter_list", k, fn);
        if (local == CLT_OK)
            local = clt__error_in(clt_tensor_read(scatter_list[k], buf + k * nb, nb), fn);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(clt__dist_ring_broadcast(pg, buf, nb * w, src, fn));
    CLT__TRY(clt__dist_stage_out(out, buf + (size_t)pg->rank * nb, nb, fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

/* ---- reduce_scatter --------------------------------------------------------------------- */

/* buf holds world-size chunks of out's elements: each rank's chunk k
 * reduced onto rank k, then written to out. */
static clt_status reduce_scatter_buf(clt_process_group *pg, clt_tensor *out, unsigned char *buf,
                                     const clt__dist_hdr *h, clt_reduce_op op, const char *fn)
{
    size_t w = (size_t)pg->size, n = (size_t)clt_tensor_numel(out), nb = clt_tensor_nbytes(out);
    clt_dtype dt = (clt_dtype)h->dtype;
    unsigned char *tmp = clt__malloc(clt__dist_reduce_tmp_bytes(pg, n * w, clt_dtype_size(dt)));
    if (tmp == NULL) {
        pg->broken = true; /* the others go on into the ring */
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    clt_status st = clt__dist_ring_reduce_scatter(pg, buf, n * w, dt, op, tmp, 0, fn);
    free(tmp);
    if (st == CLT_OK)
        st = clt__dist_stage_out(out, buf + (size_t)pg->rank * nb, nb, fn);
    return st;
}

clt_status clt_reduce_scatter(clt_process_group *pg, clt_tensor *out,
                              const clt_tensor *const *input_list, size_t n, clt_reduce_op op)
{
    static const char fn[] = "clt_reduce_scatter";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_REDUCE_SCATTER, 0, 0, 0, 0, {0}, (int64_t)op};
    unsigned char *buf = NULL;
    size_t w = (size_t)pg->size;
    clt_status local = clt__dist_check_op(out, op, fn);
    if (local == CLT_OK)
        local = check_list(pg, input_list, n, "input_list", fn);
    if (local == CLT_OK)
        local = clt__dist_stage_in(out, true, w, -1, 0, &h, &buf, fn);
    for (size_t k = 0; local == CLT_OK && k < w; k++) {
        size_t nb = clt_tensor_nbytes(out);
        local = check_like(input_list[k], &h, false, "input_list", k, fn);
        if (local == CLT_OK)
            local = clt__error_in(clt_tensor_read(input_list[k], buf + k * nb, nb), fn);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(reduce_scatter_buf(pg, out, buf, &h, op, fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

clt_status clt_reduce_scatter_tensor(clt_process_group *pg, clt_tensor *out,
                                     const clt_tensor *input, clt_reduce_op op)
{
    static const char fn[] = "clt_reduce_scatter_tensor";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_REDUCE_SCATTER_TENSOR, 0, 0, 0, 0, {0}, (int64_t)op};
    unsigned char *buf = NULL;
    size_t w = (size_t)pg->size;
    clt_status local = clt__dist_check_op(out, op, fn);
    if (local == CLT_OK && input == NULL)
        local = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'input' is NULL", fn);
    if (local == CLT_OK)
        local = clt__dist_stage_in(out, true, w, -1, 0, &h, &buf, fn);
    if (local == CLT_OK && clt_tensor_dtype(input) != (clt_dtype)h.dtype)
        local = clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: input is %s, out %s", fn,
                           clt_dtype_name(clt_tensor_dtype(input)),
                           clt_dtype_name((clt_dtype)h.dtype));
    if (local == CLT_OK && !concat_or_stack(input, &h, pg->size))
        local = not_concat_or_stack(input, "input", &h, "out", pg->size, fn);
    if (local == CLT_OK)
        local = clt__error_in(clt_tensor_read(input, buf, clt_tensor_nbytes(input)), fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(reduce_scatter_buf(pg, out, buf, &h, op, fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

/* ---- all_gather_into_tensor ----------------------------------------------------------------- */

clt_status clt_all_gather_into_tensor(clt_process_group *pg, clt_tensor *out,
                                      const clt_tensor *t)
{
    static const char fn[] = "clt_all_gather_into_tensor";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_ALL_GATHER_INTO_TENSOR, 0, 0, 0, 0, {0}, 0};
    unsigned char *buf = NULL;
    size_t w = (size_t)pg->size;
    clt_status local = CLT_OK;
    if (out == NULL)
        local = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument 'out' is NULL", fn);
    if (local == CLT_OK)
        local = clt__dist_stage_in(t, false, w, pg->rank, 0, &h, &buf, fn);
    if (local == CLT_OK && clt_tensor_dtype(out) != (clt_dtype)h.dtype)
        local = clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: out is %s, the tensor %s", fn,
                           clt_dtype_name(clt_tensor_dtype(out)),
                           clt_dtype_name((clt_dtype)h.dtype));
    if (local == CLT_OK && !concat_or_stack(out, &h, pg->size))
        local = not_concat_or_stack(out, "out", &h, "the tensor", pg->size, fn);
    if (local == CLT_OK)
        local = clt__dist_check_writable(out, fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(clt__dist_ring_gather(pg, buf, (size_t)clt_tensor_numel(t) * w,
                                   clt_dtype_size((clt_dtype)h.dtype), pg->rank, fn));
    CLT__TRY(clt__dist_stage_out(out, buf, clt_tensor_nbytes(out), fn));
    st = clt__ok();
done:
    free(buf);
    return st;
}

/* ---- all_to_all ------------------------------------------------------------------------------ */

/* Every rank's block for every rank: sizes[k * w + j] bytes from rank k to
 * rank j, the same table on every rank; row holds this rank's blocks in
 * order.  On return *all (release with free) holds every rank's row, rank
 * k's block for rank j at (*offs)[k * w + j]. */
static clt_status exchange_blocks(clt_process_group *pg, const size_t *sizes,
                                  const unsigned char *row, unsigned char **all, size_t **offs,
                                  const char *fn)
{
    size_t w = (size_t)pg->size, total = 0;
    *all = NULL;
    *offs = clt__malloc(sizeof(size_t) * (w * w + 1));
    size_t *rows = clt__malloc(sizeof(size_t) * (w + 1));
    if (*offs == NULL || rows == NULL) {
        free(rows);
        free(*offs);
        *offs = NULL;
        pg->broken = true; /* the others go on into the ring */
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (size_t k = 0; k < w; k++) {
        rows[k] = total;
        for (size_t j = 0; j < w; j++) {
            (*offs)[k * w + j] = total;
            total += sizes[k * w + j];
        }
    }
    rows[w] = total;
    (*offs)[w * w] = total;
    *all = clt__malloc(total ? total : 1);
    if (*all == NULL) {
        free(rows);
        free(*offs);
        *offs = NULL;
        pg->broken = true;
        return clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory (%zu bytes)", fn,
                          total);
    }
    size_t me = (size_t)pg->rank;
    memcpy(*all + rows[me], row, rows[me + 1] - rows[me]);
    clt_status st = clt__dist_ring_gatherv(pg, *all, rows, pg->rank, fn);
    free(rows);
    return st;
}

/* One tensor's description in the table of every rank's lists. */
typedef struct shape_rec {
    int64_t ndim, shape[CLT_MAX_DIMS];
} shape_rec;

static void rec_of(const clt_tensor *t, shape_rec *r)
{
    memset(r, 0, sizeof *r);
    r->ndim = clt_tensor_ndim(t);
    memcpy(r->shape, clt_tensor_shape(t), sizeof(int64_t) * (size_t)r->ndim);
}

static size_t rec_numel(const shape_rec *r)
{
    size_t n = 1;
    for (int64_t d = 0; d < r->ndim; d++)
        n *= (size_t)r->shape[d];
    return n;
}

clt_status clt_all_to_all(clt_process_group *pg, clt_tensor *const *output_list, size_t n_out,
                          const clt_tensor *const *input_list, size_t n_in)
{
    static const char fn[] = "clt_all_to_all";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_ALL_TO_ALL, 0, 0, 0, 0, {0}, 0};
    size_t w = (size_t)pg->size, me = (size_t)pg->rank, rowb = 0;
    shape_rec *recs = NULL; /* [rank][in 0..w-1, out 0..w-1] */
    size_t *sizes = NULL, *offs = NULL;
    unsigned char *row = NULL, *all = NULL;
    clt_status local = check_list(pg, output_list, n_out, "output_list", fn);
    if (local == CLT_OK)
        local = check_list(pg, input_list, n_in, "input_list", fn);
    for (size_t k = 0; local == CLT_OK && k < w; k++) {
        if (input_list[k] == NULL || output_list[k] == NULL)
            local = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: %s[%zu] is NULL", fn,
                               input_list[k] == NULL ? "input_list" : "output_list", k);
        else if (k == 0)
            h.dtype = clt_tensor_dtype(input_list[0]);
        for (int o = 0; local == CLT_OK && o < 2; o++) {
            const clt_tensor *x = o ? output_list[k] : input_list[k];
            if (clt_tensor_dtype(x) != (clt_dtype)h.dtype)
                local = clt__error(CLT_ERR_DTYPE_MISMATCH,
                                   "%s: %s[%zu] is %s, input_list[0] %s: every tensor must "
                                   "have one dtype",
                                   fn, o ? "output_list" : "input_list", k,
                                   clt_dtype_name(clt_tensor_dtype(x)),
                                   clt_dtype_name((clt_dtype)h.dtype));
            else if (o)
                local = clt__dist_check_writable(x, fn);
            else
                rowb += clt_tensor_nbytes(x);
        }
    }
    if (local == CLT_OK) {
        recs = clt__calloc(w * w * 2, sizeof *recs);
        sizes = clt__malloc(sizeof *sizes * w * w);
        row = clt__malloc(rowb ? rowb : 1);
        if (recs == NULL || sizes == NULL || row == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    for (size_t k = 0, off = 0; local == CLT_OK && k < w; k++) {
        size_t nb = clt_tensor_nbytes(input_list[k]);
        local = clt__error_in(clt_tensor_read(input_list[k], row + off, nb), fn);
        off += nb;
        rec_of(input_list[k], &recs[me * 2 * w + k]);
        rec_of(output_list[k], &recs[me * 2 * w + w + k]);
    }
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    /* Every rank's shapes, so that every rank checks every pair alike. */
    CLT__TRY(clt__dist_ring_gather(pg, (unsigned char *)recs, w * 2 * w, sizeof *recs,
                                   pg->rank, fn));
    for (size_t k = 0; k < w; k++)
        for (size_t j = 0; j < w; j++) {
            const shape_rec *in = &recs[k * 2 * w + j], *out = &recs[j * 2 * w + w + k];
            if (memcmp(in, out, sizeof *in) != 0) {
                char a[256], b[256];
                shape_str(a, sizeof a, (int)in->ndim, in->shape);
                shape_str(b, sizeof b, (int)out->ndim, out->shape);
                st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                "%s: rank %zu's input_list[%zu] has shape %s, but rank %zu's "
                                "output_list[%zu] %s",
                                fn, k, j, a, j, k, b);
                goto done;
            }
            sizes[k * w + j] = rec_numel(in) * clt_dtype_size((clt_dtype)h.dtype);
        }
    CLT__TRY(exchange_blocks(pg, sizes, row, &all, &offs, fn));
    for (size_t k = 0; k < w; k++)
        CLT__TRY(clt__dist_stage_out(output_list[k], all + offs[k * w + me], sizes[k * w + me],
                                     fn));
    st = clt__ok();
done:
    free(recs);
    free(sizes);
    free(offs);
    free(row);
    free(all);
    return st;
}

/* Split sizes of a tensor's dim 0 into w chunks (NULL: equal). */
static clt_status check_splits(const clt_tensor *t, const int64_t *splits, int w,
                               const char *what, int64_t *into, const char *fn)
{
    int64_t d0 = clt_tensor_shape(t)[0], sum = 0;
    if (splits == NULL) {
        if (d0 % w != 0)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: without %s, dim 0 (%lld) must divide by world_size (%d)", fn,
                              what, (long long)d0, w);
        for (int k = 0; k < w; k++)
            into[k] = d0 / w;
        return CLT_OK;
    }
    for (int k = 0; k < w; k++) {
        if (splits[k] < 0 || splits[k] > d0 - sum)
            return clt__error(CLT_ERR_INVALID_ARGUMENT,
                              "%s: %s[%d] = %lld: the split sizes must be >= 0 and sum to dim 0 "
                              "(%lld)",
                              fn, what, k, (long long)splits[k], (long long)d0);
        sum += splits[k];
        into[k] = splits[k];
    }
    if (sum != d0)
        return clt__error(CLT_ERR_INVALID_ARGUMENT,
                          "%s: %s sum to %lld, dim 0 is %lld", fn, what, (long long)sum,
                          (long long)d0);
    return CLT_OK;
}

clt_status clt_all_to_all_single(clt_process_group *pg, clt_tensor *out, const clt_tensor *in,
                                 const int64_t *output_split_sizes,
                                 const int64_t *input_split_sizes)
{
    static const char fn[] = "clt_all_to_all_single";
    clt_status st = clt__dist_usable(pg, fn);
    if (st != CLT_OK)
        return st;
    clt__dist_hdr h = {CLT__DIST_ALL_TO_ALL_SINGLE, 0, 0, 0, 0, {0}, 0};
    size_t w = (size_t)pg->size, me = (size_t)pg->rank, rowbytes = 0;
    int64_t *splits = NULL; /* [rank][in 0..w-1, out 0..w-1] */
    size_t *sizes = NULL, *offs = NULL;
    unsigned char *row = NULL, *all = NULL;
    clt_status local = CLT_OK;
    if (out == NULL || in == NULL)
        local = clt__error(CLT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL", fn,
                           out == NULL ? "out" : "in");
    else if (clt_tensor_ndim(in) < 1 || clt_tensor_ndim(out) < 1)
        local = clt__error(CLT_ERR_INVALID_ARGUMENT,
                           "%s: in and out need at least one dimension", fn);
    else if (clt_tensor_dtype(in) != clt_tensor_dtype(out))
        local = clt__error(CLT_ERR_DTYPE_MISMATCH, "%s: in is %s, out %s", fn,
                           clt_dtype_name(clt_tensor_dtype(in)),
                           clt_dtype_name(clt_tensor_dtype(out)));
    else if (clt_tensor_ndim(in) != clt_tensor_ndim(out) ||
             memcmp(clt_tensor_shape(in) + 1, clt_tensor_shape(out) + 1,
                    sizeof(int64_t) * (size_t)(clt_tensor_ndim(in) - 1)) != 0) {
        char a[256], b[256];
        shape_str(a, sizeof a, clt_tensor_ndim(in), clt_tensor_shape(in));
        shape_str(b, sizeof b, clt_tensor_ndim(out), clt_tensor_shape(out));
        local = clt__error(CLT_ERR_SHAPE_MISMATCH,
                           "%s: in %s and out %s differ in the dims after the first", fn, a, b);
    }
    if (local == CLT_OK)
        local = clt__dist_check_writable(out, fn);
    if (local == CLT_OK) {
        splits = clt__calloc(w * 2 * w, sizeof *splits);
        sizes = clt__malloc(sizeof *sizes * w * w);
        if (splits == NULL || sizes == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (local == CLT_OK)
        local = check_splits(in, input_split_sizes, pg->size, "input_split_sizes",
                             splits + me * 2 * w, fn);
    if (local == CLT_OK)
        local = check_splits(out, output_split_sizes, pg->size, "output_split_sizes",
                             splits + me * 2 * w + w, fn);
    if (local == CLT_OK) {
        /* The header: the dtype and the dims after the first. */
        h.dtype = clt_tensor_dtype(in);
        h.ndim = clt_tensor_ndim(in) - 1;
        memcpy(h.shape, clt_tensor_shape(in) + 1, sizeof(int64_t) * (size_t)h.ndim);
        rowbytes = clt_tensor_nbytes(in);
        row = clt__malloc(rowbytes ? rowbytes : 1);
        if (row == NULL)
            local = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
    }
    if (local == CLT_OK)
        local = clt__error_in(clt_tensor_read(in, row, rowbytes), fn);
    CLT__TRY(clt__dist_agree(pg, &h, local, NULL, fn));
    CLT__TRY(clt__dist_ring_gather(pg, (unsigned char *)splits, w * 2 * w, sizeof *splits,
                                   pg->rank, fn));
    size_t rb = clt_dtype_size((clt_dtype)h.dtype); /* bytes of one row along dim 0 */
    for (int64_t d = 0; d < h.ndim; d++)
        rb *= (size_t)h.shape[d];
    for (size_t k = 0; k < w; k++)
        for (size_t j = 0; j < w; j++) {
            int64_t sent = splits[k * 2 * w + j], got = splits[j * 2 * w + w + k];
            if (sent != got) {
                st = clt__error(CLT_ERR_SHAPE_MISMATCH,
                                "%s: rank %zu sends %lld rows to rank %zu (input_split_sizes[%zu]), "
                                "which expects %lld (its output_split_sizes[%zu])",
                                fn, k, (long long)sent, j, j, (long long)got, k);
                goto done;
            }
            sizes[k * w + j] = (size_t)sent * rb;
        }
    CLT__TRY(exchange_blocks(pg, sizes, row, &all, &offs, fn));
    /* out's rows: rank 0's block for this rank, then rank 1's, ... */
    free(row);
    row = clt__malloc(clt_tensor_nbytes(out) ? clt_tensor_nbytes(out) : 1);
    if (row == NULL) {
        st = clt__error(CLT_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", fn);
        goto done;
    }
    for (size_t k = 0, off = 0; k < w; k++) {
        memcpy(row + off, all + offs[k * w + me], sizes[k * w + me]);
        off += sizes[k * w + me];
    }
    CLT__TRY(clt__dist_stage_out(out, row, clt_tensor_nbytes(out), fn));
    st = clt__ok();
done:
    free(splits);
    free(sizes);
    free(offs);
    free(row);
    free(all);
    return st;
}
